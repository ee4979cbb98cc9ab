//! One board everywhere (DESIGN §12): git is the engine between worktrees, clones and
//! machines. [`git`] runs the `git` executable (its push is the compare-and-swap); this
//! module says whether a board is connected to a remote.

pub mod claims;
pub mod git;
pub mod repo;
pub mod status;

use crate::board::Board;
use crate::error::Result;

/// The git config key naming the remote a board is connected to (`tavern sync init`).
/// Kept in the repository's common config, so every worktree of a clone shares it.
pub const REMOTE_KEY: &str = "tavern.remote";

/// The remote this board is connected to, if any.
///
/// Every claim and transition asks, and most boards are not connected: a look at the
/// repository's own config file settles that without starting git (a process start costs
/// more than a claim). Only a config that mentions tavern, or includes other files, is
/// read through `git config`. A board outside git is never connected.
pub fn remote(board: &Board) -> Result<Option<String>> {
    let Some(repo) = repo::Repo::find(board.project()) else {
        return Ok(None);
    };
    if let Ok(text) = std::fs::read_to_string(repo.common_dir.join("config")) {
        let text = text.to_ascii_lowercase();
        if !text.contains("tavern") && !text.contains("[include") {
            return Ok(None);
        }
    }
    git::Git::new(board.project()).config(REMOTE_KEY)
}

pub mod branch;
pub mod merge;

use serde::Serialize;

use crate::error::Error;
use branch::{BoardGit, REF, REMOTE_REF};

/// What `tavern sync` did.
#[derive(Debug, Serialize)]
pub struct Exchange {
    pub remote: String,
    /// The board had changes since the last record, now a commit on the board branch.
    pub recorded: bool,
    /// up-to-date | pushed | fast-forwarded | merged (merged, then pushed)
    pub outcome: &'static str,
    /// The board branch's commit after the exchange.
    pub commit: String,
    /// Files of the board the exchange changed on disk (relative to the board).
    pub changed: Vec<String>,
    /// Documents both sides changed, merged field by field.
    pub merged: Vec<String>,
    /// Fields both sides changed, decided by the rule (each logged as sync-conflict).
    pub conflicts: Vec<merge::Conflict>,
    /// Tasks made to follow the remote's claim records.
    pub claims_followed: Vec<String>,
    /// Pushes lost to another clone's and tried again.
    pub retries: usize,
}

/// How many times `tavern sync` fetches, merges and pushes again after another clone's
/// push got in first (or a local write landed while it merged) before it gives up.
pub const MAX_ATTEMPTS: usize = 5;

/// Connects the repository's board to `remote` (git config `tavern.remote`, shared by
/// every worktree), and fetches the remote's board branch if it has one. Returns whether
/// the remote had one.
pub fn init(repo: &repo::Repo, root: &std::path::Path, remote: &str) -> Result<bool> {
    let bg = BoardGit::at(repo.clone(), root)?;
    let url = bg.git.output(&["remote", "get-url", remote], None)?;
    if !url.success {
        return Err(Error::input(format!(
            "git knows no remote '{remote}' in {}: add it with `git remote add {remote} URL` first",
            repo.common_dir.display()
        )));
    }
    refuse_code_branch(&bg)?;
    bg.git.run(&["config", REMOTE_KEY, remote])?;
    let fetched = fetch(&bg, remote)?;
    if let Some(theirs) = &fetched
        && bg.rev(REF)?.is_none()
        && !root.join(crate::layout::BOARD_YAML).is_file()
    {
        let _ = std::fs::remove_file(&bg.index);
        bg.materialize(None, theirs)?;
        bg.git.run(&["update-ref", REF, theirs])?;
    }
    exclude_board(repo, root)?;
    Ok(fetched.is_some())
}

/// Keeps a board that the code branches do not track out of `git status`: its history is
/// the board branch (`.git/info/exclude`, never the user's .gitignore).
fn exclude_board(repo: &repo::Repo, root: &std::path::Path) -> Result<()> {
    let Some(main) = &repo.main else {
        return Ok(());
    };
    let Ok(rel) = root.strip_prefix(main) else {
        return Ok(());
    };
    let tracked = git::Git::new(root).output(
        &[
            "ls-files",
            "--error-unmatch",
            "--",
            crate::layout::BOARD_YAML,
        ],
        None,
    )?;
    if tracked.success {
        return Ok(());
    }
    let path = repo.common_dir.join("info").join("exclude");
    let line = format!("/{}/", rel.to_string_lossy());
    let text = std::fs::read_to_string(&path).unwrap_or_default();
    if text.lines().any(|l| l == line) {
        return Ok(());
    }
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, "create directory", e))?;
    }
    let mut new = text;
    if !new.is_empty() && !new.ends_with('\n') {
        new.push('\n');
    }
    new.push_str(&format!(
        "# the tavern board: its history is the branch tavern\n{line}\n"
    ));
    // The user's file: whole, and still there after a power loss once we said we wrote it.
    crate::file::write(&path, new.as_bytes(), crate::file::Durability::Durable)
}

/// Fetches the remote's board branch into REMOTE_REF; None when it has none. A remote
/// that cannot be reached is exit 7 (unconfirmed), with nothing changed here.
fn fetch(bg: &BoardGit, remote: &str) -> Result<Option<String>> {
    let spec = format!("+{REF}:{REMOTE_REF}");
    let out = bg.git.output(
        &[
            "fetch",
            "-q",
            "--no-tags",
            "--no-write-fetch-head",
            remote,
            &spec,
        ],
        None,
    )?;
    if !out.success {
        if out.stderr.contains("couldn't find remote ref") {
            let _ = bg.git.output(&["update-ref", "-d", REMOTE_REF], None);
            return Ok(None);
        }
        return Err(unreachable(
            bg,
            remote,
            "fetch the board branch from",
            &out.stderr,
        ));
    }
    bg.rev(REMOTE_REF)
}

fn unreachable(bg: &BoardGit, remote: &str, what: &str, stderr: &str) -> Error {
    let why = stderr
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or("git failed");
    Error::Request {
        kind: crate::error::Kind::Unconfirmed,
        path: Some(bg.root.clone()),
        message: crate::msg!(format!(
            "cannot {what} the remote '{remote}' ({why}): nothing more was sent, and the board here is intact (its changes are recorded on the branch {}); run `tavern sync` again when the remote is reachable (`git ls-remote {remote}` tells)",
            branch::BRANCH,
        )),
    }
}

/// Refuses a board that the code branches track (today's layout): recording it on the
/// board branch too would keep it in two histories.
pub fn refuse_code_branch(bg: &BoardGit) -> Result<()> {
    let tracked = git::Git::new(&bg.root).output(
        &[
            "ls-files",
            "--error-unmatch",
            "--",
            crate::layout::BOARD_YAML,
        ],
        None,
    )?;
    if tracked.success {
        return Err(Error::Request {
            kind: crate::error::Kind::Usage,
            path: Some(bg.root.clone()),
            message: crate::msg!(format!(
                "the board {} is tracked on the code branch, which carries it with git pull and push; the board branch would keep it in a second history. To move it to the board branch: `git rm -r -q --cached {}` and commit, then connect it again",
                bg.root.display(),
                bg.root.display()
            )),
        });
    }
    Ok(())
}

/// `tavern sync`: makes the tasks follow the remote's claim records, records the board on
/// its branch, fetches the remote's, then fast-forwards, merges (field by field, see
/// [`merge`]) or pushes with a lease on what was fetched, so a concurrent push is never
/// overwritten. A lost push race fetches and merges again, up to [`MAX_ATTEMPTS`] times
/// (then exit 3). The board on disk follows the branch through `git read-tree -m -u`,
/// which writes only the files that differ and refuses before writing anything when one
/// of them was written meanwhile (then the loop records and tries again).
pub fn exchange(board: &Board) -> Result<Exchange> {
    let remote = remote(board)?.ok_or_else(|| {
        Error::input(format!(
            "the board {} is not connected to a remote: `tavern sync init [REMOTE]` connects it",
            board.root.display()
        ))
    })?;
    let bg = BoardGit::open(board)?;
    refuse_code_branch(&bg)?;
    let mut x = Exchange {
        remote: remote.clone(),
        recorded: false,
        outcome: "up-to-date",
        commit: String::new(),
        changed: Vec::new(),
        merged: Vec::new(),
        conflicts: Vec::new(),
        claims_followed: Vec::new(),
        retries: 0,
    };
    let mut merged_once = false;
    let mut claims_fetched = false;
    for attempt in 0..MAX_ATTEMPTS {
        x.retries = attempt;
        follow_claims(board, &mut x.claims_followed)?;
        let (mut ours, recorded) = bg.commit("tavern sync: the board as it is")?;
        x.recorded |= recorded;
        let theirs = fetch(&bg, &remote)?;
        if !claims_fetched {
            claims_fetched = true;
            match claims::fetch_all(board) {
                Ok(_) => {}
                Err(Error::Git { message, .. }) => {
                    return Err(unreachable(
                        &bg,
                        &remote,
                        "fetch the claim records from",
                        &message,
                    ));
                }
                Err(e) => return Err(e),
            }
            let before = x.claims_followed.len();
            follow_claims(board, &mut x.claims_followed)?;
            if x.claims_followed.len() > before {
                let (o, recorded) =
                    bg.commit("tavern sync: the tasks follow the remote's claim records")?;
                x.recorded |= recorded;
                ours = o;
            }
        }
        match &theirs {
            Some(t) if *t == ours => {
                x.outcome = if merged_once { "merged" } else { "up-to-date" };
                x.commit = ours;
                return Ok(x);
            }
            Some(t) if is_ancestor(&bg, &ours, t)? => {
                let files = changed_files(&bg, &ours, t)?;
                if !materialize_locked(board, &bg, &ours, t, &files)? {
                    continue; // written meanwhile: record it and try again
                }
                x.changed.extend(files);
                bg.git.run(&["update-ref", REF, t, &ours])?;
                follow_claims(board, &mut x.claims_followed)?;
                x.outcome = if merged_once {
                    "merged"
                } else {
                    "fast-forwarded"
                };
                x.commit = t.clone();
                return Ok(x);
            }
            Some(t) if !is_ancestor(&bg, t, &ours)? => {
                let base = bg
                    .git
                    .output(&["merge-base", &ours, t], None)?
                    .stdout
                    .trim()
                    .to_string();
                let base = (!base.is_empty()).then_some(base);
                let m = merge::merge(
                    board,
                    &bg.git,
                    &bg.repo.tavern_dir(),
                    base.as_deref(),
                    &ours,
                    t,
                )?;
                let commit = merge_commit(&bg, &ours, t, &m, &remote)?;
                let files = changed_files(&bg, &ours, &commit)?;
                if !materialize_locked(board, &bg, &ours, &commit, &files)? {
                    continue;
                }
                bg.git.run(&["update-ref", REF, &commit, &ours])?;
                x.changed.extend(files);
                x.merged.extend(m.merged_docs);
                x.conflicts.extend(m.conflicts);
                merged_once = true;
                // The merge is pushed by the next round, which also makes the tasks
                // follow the claim records again.
                continue;
            }
            _ => {
                let lease = format!(
                    "--force-with-lease={REF}:{}",
                    theirs.as_deref().unwrap_or("")
                );
                let out = bg.git.output(
                    &[
                        "push",
                        "-q",
                        "--no-verify",
                        &lease,
                        &remote,
                        &format!("{REF}:{REF}"),
                    ],
                    None,
                )?;
                if !out.success {
                    // Only a lost race is tried again; a remote that refuses (a hook,
                    // permissions) or is gone is exit 7.
                    if out.stderr.contains("stale info")
                        || out.stderr.contains("fetch first")
                        || out.stderr.contains("non-fast-forward")
                        || out.stderr.contains("cannot lock ref")
                    {
                        continue; // another clone pushed first: fetch and merge again
                    }
                    return Err(unreachable(
                        &bg,
                        &remote,
                        "push the board branch to",
                        &out.stderr,
                    ));
                }
                bg.git.run(&["update-ref", REMOTE_REF, &ours])?;
                x.outcome = if merged_once { "merged" } else { "pushed" };
                x.commit = ours;
                return Ok(x);
            }
        }
    }
    Err(Error::conflict(
        &board.root,
        format!(
            "the board branch on '{remote}' kept changing: {MAX_ATTEMPTS} pushes in a row lost to other clones' (or the board was written during each merge); this clone's changes are kept on the branch {}; run `tavern sync` again",
            branch::BRANCH
        ),
    ))
}

/// Writes `new` over the board (which holds `old`) holding the locks tavern's own writes
/// of those files take, sorted, then the log lock, as the write protocol takes them: no
/// write is half done under it, and a watcher that reconciles a changed document under
/// its lock finds the entries that explain it already in log.yaml.
/// The most document locks a sync holds while it writes the board (see
/// [`materialize_locked`]).
const MAX_DOC_LOCKS: usize = 512;

fn materialize_locked(
    board: &Board,
    bg: &BoardGit,
    old: &str,
    new: &str,
    files: &[String],
) -> Result<bool> {
    let names: std::collections::BTreeSet<String> = files
        .iter()
        .filter_map(|f| crate::watch::areas::classify(f)?.lock_name())
        .collect();
    // One open file per lock: past MAX_DOC_LOCKS (a first sync of a large board) only the
    // log lock is held, so that a common limit of open files (1024) is never reached;
    // read-tree still refuses a file written since it was recorded.
    let mut held = Vec::with_capacity(names.len().min(MAX_DOC_LOCKS) + 1);
    if names.len() <= MAX_DOC_LOCKS {
        for name in &names {
            held.push(crate::store::lock(board, name)?);
        }
    }
    held.push(crate::store::lock(board, crate::layout::LOG_LOCK)?);
    bg.materialize(Some(old), new)
}

fn follow_claims(board: &Board, out: &mut Vec<String>) -> Result<()> {
    for id in claims::reconcile(board)? {
        if !out.contains(&id) {
            out.push(id);
        }
    }
    Ok(())
}

/// The files that differ between two commits of the board branch.
fn changed_files(bg: &BoardGit, a: &str, b: &str) -> Result<Vec<String>> {
    Ok(bg
        .git
        .run(&["diff", "--name-only", "--no-renames", a, b])?
        .lines()
        .map(str::to_string)
        .collect())
}

/// The commit of a merge: ours with the merge's changes, both as parents.
fn merge_commit(
    bg: &BoardGit,
    ours: &str,
    theirs: &str,
    m: &merge::Merged,
    remote: &str,
) -> Result<String> {
    let index = bg.repo.tavern_dir().join("merge-index");
    let _ = std::fs::remove_file(&index);
    let g = git::Git::new(&bg.root)
        .with_env("GIT_DIR", &bg.repo.common_dir)
        .with_env("GIT_INDEX_FILE", &index);
    g.run(&["read-tree", ours])?;
    let zero = "0".repeat(40);
    let mut info = String::new();
    for (path, change) in &m.changes {
        match change {
            merge::Change::Blob { mode, sha } => info.push_str(&format!("{mode} {sha}\t{path}\n")),
            merge::Change::Removed => info.push_str(&format!("0 {zero}\t{path}\n")),
            merge::Change::Bytes(bytes) => {
                let out = g.output(&["hash-object", "-w", "--stdin"], Some(bytes))?;
                if !out.success {
                    return Err(Error::Git {
                        command: "git hash-object -w --stdin".into(),
                        dir: bg.root.clone(),
                        message: out.stderr.trim().to_string(),
                    });
                }
                info.push_str(&format!("100644 {}\t{path}\n", out.stdout.trim()));
            }
        }
    }
    let out = g.output(&["update-index", "--index-info"], Some(info.as_bytes()))?;
    if !out.success {
        return Err(Error::Git {
            command: "git update-index --index-info".into(),
            dir: bg.root.clone(),
            message: out.stderr.trim().to_string(),
        });
    }
    let tree = g.run(&["write-tree"])?;
    let _ = std::fs::remove_file(&index);
    g.run(&[
        "commit-tree",
        &tree,
        "-p",
        ours,
        "-p",
        theirs,
        "-m",
        &format!("tavern sync: merge the board of '{remote}'"),
    ])
}

fn is_ancestor(bg: &BoardGit, a: &str, b: &str) -> Result<bool> {
    Ok(bg
        .git
        .output(&["merge-base", "--is-ancestor", a, b], None)?
        .success)
}

/// How `tavern sync --watch` (and a connected `tavern watch`) keeps exchanging.
#[derive(Clone, Debug)]
pub struct KeepOptions {
    /// Exchange at least this often (to hear of other machines' changes).
    pub interval: std::time::Duration,
    /// After a local change, wait this long for more before exchanging.
    pub settle: std::time::Duration,
    /// Look at the board by polling every DUR instead of file events.
    pub poll: Option<std::time::Duration>,
}

impl Default for KeepOptions {
    fn default() -> KeepOptions {
        KeepOptions {
            interval: std::time::Duration::from_secs(30),
            settle: std::time::Duration::from_millis(300),
            poll: None,
        }
    }
}

/// Exchanges now, then every `interval` and soon after every local change (seen through
/// [`crate::watch::feed::Feed`]; the files an exchange itself wrote are not a local
/// change), until `stop` is set. Each exchange's result goes to `report`; a failed one
/// (offline) is retried at the next turn, and what changed meanwhile is sent then.
pub fn keep_exchanging(
    board: &Board,
    opts: &KeepOptions,
    stop: &std::sync::atomic::AtomicBool,
    mut report: impl FnMut(&Result<Exchange>),
) -> Result<()> {
    use crate::watch::feed::{self, BoardEvent, Feed};
    use std::sync::atomic::Ordering;
    use std::time::{Duration, Instant};
    let mut feed = Feed::open(board, feed::Options { poll: opts.poll })?;
    let mut next = Instant::now();
    let mut own: std::collections::HashSet<String> = std::collections::HashSet::new();
    while !stop.load(Ordering::Relaxed) {
        let now = Instant::now();
        if now >= next {
            let r = exchange(board);
            own = match &r {
                Ok(x) => x.changed.iter().cloned().collect(),
                Err(_) => Default::default(),
            };
            report(&r);
            next = Instant::now() + opts.interval;
            continue;
        }
        let wait = (next - now).min(Duration::from_millis(500));
        let Some(batch) = feed.next(wait) else {
            continue;
        };
        // Each file an exchange wrote is its own change once; anything else is local.
        let mut local = false;
        for c in &batch.changes {
            local |= !own.remove(&c.path);
        }
        for e in &batch.board {
            local |= match e {
                BoardEvent::LogAppended { .. } | BoardEvent::LogReplaced { .. } => {
                    !own.remove(crate::layout::LOG)
                }
                BoardEvent::Paused { .. } | BoardEvent::Resumed => !own.remove("control/PAUSE"),
                _ => false,
            };
        }
        if local {
            own.clear();
            next = next.min(Instant::now() + opts.settle);
        }
    }
    Ok(())
}
