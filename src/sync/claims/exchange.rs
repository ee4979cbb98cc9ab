//! The exchange with the remote, through the `git` executable: this clone's copies of the
//! records (`refs/tavern/claims/*`, read without starting git when the refs are plain
//! files), record commits, the push under a lease that is the compare-and-swap, and one
//! fetch for one record or all of them.

use crate::board::Board;
use crate::error::{Error, Result};
use crate::sync::git::{self, Git, Output};
use crate::sync::locks::STALE_REF_LOCK;

use super::record::Record;
use super::refname::{REF_PREFIX, ref_name};
use super::wording::{Asked, Failure};

pub(super) fn git(board: &Board) -> Git {
    Git::new(board.project())
}

/// The repository's common directory (where refs and config live), if the board is in one.
pub(super) fn common_dir(board: &Board) -> Option<std::path::PathBuf> {
    crate::sync::repo::Repo::find(board.project()).map(|r| r.common_dir)
}

/// Points this clone's copy of a task's record at `sha` (no git started when the refs are
/// plain files). Another tavern process of this clone updating the same ref (a fetch) holds
/// its lock for a moment: that is waited out, not reported.
pub(super) fn set_local(board: &Board, g: &Git, name: &str, sha: &str) -> Result<()> {
    let common = common_dir(board);
    let mut out = None;
    for attempt in 0..LOCAL_RACE_ATTEMPTS {
        if common
            .as_deref()
            .is_some_and(|c| git::write_ref_file(c, name, sha))
        {
            return Ok(());
        }
        let o = g.output(&["update-ref", name, sha], None)?;
        if o.success {
            return Ok(());
        }
        if !local_race(&o.stderr) {
            return Err(git_error(g, "update-ref", &o));
        }
        out = Some(o);
        pause(attempt);
    }
    let o = out.expect("at least one attempt");
    Err(git_error(g, "update-ref", &o))
}

/// Points this clone's copy of a task's record at `sha` only if it is still `old`: for a
/// writer that does not hold the task's lock (a renewal), so a newer record another process
/// confirmed meanwhile is never replaced by an older one.
pub(super) fn set_local_if(g: &Git, name: &str, sha: &str, old: &str) -> Result<bool> {
    Ok(g.output(&["update-ref", name, sha, old], None)?.success)
}

/// The commit this clone's copy of a task's record points at, if any.
pub(super) fn local_sha(board: &Board, task: &str) -> Result<Option<String>> {
    let name = ref_name(task);
    if let Some(c) = common_dir(board) {
        match git::read_ref_file(&c, &name) {
            git::RefLookup::Found(sha) => return Ok(Some(sha)),
            git::RefLookup::Absent => return Ok(None),
            git::RefLookup::Unsure => {}
        }
    }
    let g = git(board);
    let out = g.output(&["rev-parse", "--verify", "--quiet", &name], None)?;
    if out.code.is_none() {
        // Killed: it said nothing about the ref.
        return Err(git_error(&g, "rev-parse", &out));
    }
    Ok(out
        .success
        .then(|| out.stdout.trim().to_string())
        .filter(|s| !s.is_empty()))
}

/// Whether record `a` is an ancestor of record `b` (or the same): every record's parent is
/// the one it replaced, so this is "`a` is not newer than `b`" in the task's history.
pub(super) fn is_ancestor(board: &Board, a: &str, b: &str) -> Result<bool> {
    Ok(git(board)
        .output(&["merge-base", "--is-ancestor", a, b], None)?
        .success)
}

/// This clone, as records name it.
pub(super) fn origin(board: &Board) -> String {
    format!(
        "{}:{}",
        crate::agents::host_name(),
        board.project().display()
    )
}

/// The record this clone last saw for `task`, from its local copy of the ref.
pub fn known(board: &Board, task: &str) -> Result<Option<Record>> {
    let name = ref_name(task);
    // Most claims are of a task with no record yet: the refs' files say so, no git needed.
    if let Some(c) = common_dir(board)
        && git::read_ref_file(&c, &name) == git::RefLookup::Absent
    {
        return Ok(None);
    }
    Ok(list(&git(board), &name)?.into_iter().next())
}

/// The records of this clone's refs under `pattern` (one ref, or the prefix of all).
fn list(g: &Git, pattern: &str) -> Result<Vec<Record>> {
    let out = g.output(
        &[
            "for-each-ref",
            "--format=%(objectname)%00%(contents)%00",
            pattern,
        ],
        None,
    )?;
    if !out.success {
        return Err(git_error(g, "for-each-ref", &out));
    }
    Ok(Record::parse_all(&out.stdout))
}

/// Every record this clone knows.
pub fn all_known(board: &Board) -> Result<Vec<Record>> {
    list(&git(board), REF_PREFIX)
}

/// A git command of this clone that failed: its command, and why (git's message, or the
/// signal that killed it).
pub(super) fn git_error(g: &Git, what: &str, out: &Output) -> Error {
    Error::Git {
        command: format!("git {what}"),
        dir: g.dir().to_path_buf(),
        message: match out.stderr.trim() {
            "" => out.why(),
            said => said.to_string(),
        },
    }
}

/// How often a git command that lost a race for a local ref's lock to another tavern
/// process of this clone is tried.
const LOCAL_RACE_ATTEMPTS: u32 = 6;

/// Git lost a race for the lock of a ref of this clone: another process (another tavern
/// command, a sync) updated it at the same moment. Tried again, never reported as the
/// remote being unreachable.
pub(super) fn local_race(stderr: &str) -> bool {
    git::local_race(stderr)
}

/// The `….lock` files a failed git command says it found in its way, with their paths.
fn lock_files(stderr: &str) -> Vec<std::path::PathBuf> {
    stderr
        .split("Unable to create '")
        .skip(1)
        .filter_map(|rest| rest.split_once("': File exists").map(|(p, _)| p.into()))
        .filter(|p: &std::path::PathBuf| p.extension().is_some_and(|e| e == "lock"))
        .collect()
}

/// Removes the locks of this clone's claim refs that `stderr` names and that are stale
/// (older than [`STALE_REF_LOCK`]): a git killed while it updated one leaves it, and every
/// later update of that ref fails until it goes. Only whoever holds what guards the ref,
/// the task's lock, removes one: `held` says the caller does; otherwise it is taken here
/// if free. True if one went.
pub(super) fn remove_stale_ref_locks(board: &Board, stderr: &str, held: bool) -> bool {
    let Some(common) = common_dir(board) else {
        return false;
    };
    let ours = common.join(REF_PREFIX);
    let mut removed = false;
    for path in lock_files(stderr) {
        let path = if path.is_absolute() {
            path
        } else {
            board.project().join(path)
        };
        let Some(task) = path
            .strip_prefix(&ours)
            .ok()
            .and_then(|rel| rel.to_str())
            .and_then(|rel| rel.strip_suffix(".lock"))
            .and_then(super::refname::task_of)
        else {
            continue;
        };
        if !crate::sync::locks::older_than(&path, STALE_REF_LOCK) {
            continue;
        }
        let guard = if held {
            None
        } else {
            let name = crate::layout::doc_lock(crate::doc::Region::Tasks, &task);
            match crate::store::try_lock(board, &name) {
                Ok(Some(lock)) => Some(lock),
                _ => continue,
            }
        };
        removed |= std::fs::remove_file(&path).is_ok();
        drop(guard);
    }
    removed
}

/// A short wait before trying again after a race, longer each time.
fn pause(attempt: u32) {
    std::thread::sleep(std::time::Duration::from_millis(5 << attempt.min(6)));
}

/// What every fetch of records asks for: `spec` only, no tags, no FETCH_HEAD, no
/// submodules; `prune` removes the copies of records the remote no longer has. A race for
/// a local ref's lock with another tavern process is tried again, and a stale lock in the
/// way is removed (`guarded`: the caller holds the task's lock that guards the ref).
pub(super) fn fetch(
    g: &Git,
    board: &Board,
    remote: &str,
    spec: &str,
    prune: bool,
    guarded: bool,
) -> Result<Output> {
    fetch_specs(g, board, remote, &[spec], prune, guarded)
}

/// [`fetch`] of several refspecs in one exchange.
fn fetch_specs(
    g: &Git,
    board: &Board,
    remote: &str,
    specs: &[&str],
    prune: bool,
    guarded: bool,
) -> Result<Output> {
    let mut args = vec![
        "fetch",
        "--quiet",
        "--no-tags",
        "--no-write-fetch-head",
        "--no-recurse-submodules",
    ];
    if prune {
        args.push("--prune");
    }
    args.push(remote);
    args.extend(specs);
    let mut attempt = 0;
    loop {
        let out = g.output(&args, None)?;
        if out.success || !local_race(&out.stderr) || attempt + 1 >= LOCAL_RACE_ATTEMPTS {
            return Ok(out);
        }
        remove_stale_ref_locks(board, &out.stderr, guarded);
        pause(attempt);
        attempt += 1;
    }
}

/// Fetches every record of the remote into this clone's copies: the claim records, and in
/// the same exchange the hold records (which refreshes the hooks' copy of other clones'
/// holds).
fn fetch_every_record(g: &Git, board: &Board, remote: &str) -> Result<Output> {
    let holds = super::holds::REF_PREFIX;
    let out = fetch_specs(
        g,
        board,
        remote,
        &[
            &format!("+{REF_PREFIX}*:{REF_PREFIX}*"),
            &format!("+{holds}*:{holds}*"),
        ],
        true,
        false,
    )?;
    if out.success {
        let _ = super::holds::remember(board, g);
    }
    Ok(out)
}

/// Fetches the remote's record of `task` into this clone's copy (removing the copy when
/// the remote has none) and returns it. Called under the task's lock, for `asked`, which
/// the errors name.
pub(super) fn refresh(
    board: &Board,
    task: &str,
    remote: &str,
    asked: &Asked,
) -> Result<Option<Record>> {
    let g = git(board);
    let name = ref_name(task);
    let out = fetch(&g, board, remote, &format!("+{name}:{name}"), false, true)?;
    if !out.success {
        if out.stderr.contains("couldn't find remote ref") {
            let _ = g.output(&["update-ref", "-d", &name], None)?;
            return Ok(None);
        }
        if local_race(&out.stderr) {
            return Err(Failure::LocalLock {
                asked: asked.clone(),
                locks: lock_files(&out.stderr),
                why: out.why(),
            }
            .into());
        }
        return Err(Failure::Unconfirmed {
            asked: asked.clone(),
            remote: remote.to_string(),
            project: board.project().to_path_buf(),
            why: super::wording::fetch_failed(&out.why()),
        }
        .into());
    }
    Ok(list(&g, &name)?.into_iter().next())
}

/// The empty tree every record commit has: an object git knows without storing it.
fn empty_tree(board: &Board) -> &'static str {
    let sha256 = common_dir(board)
        .and_then(|c| std::fs::read_to_string(c.join("config")).ok())
        .is_some_and(|t| {
            git::config_lookup(&t, "extensions.objectformat") == git::Lookup::Set("sha256".into())
        });
    if sha256 {
        "6ef19b41225c5369f1c104d45d8d85efa9b057b53b14b4b9b939dd74decc5321"
    } else {
        "4b825dc642cb6eb9a060e54bf8d69288fbee4904"
    }
}

/// Writes a record's commit object locally and returns its sha: one `git commit-tree`,
/// the message on its standard input.
pub(super) fn commit(board: &Board, record: &Record, parent: Option<&str>) -> Result<String> {
    commit_message(board, &record.message(), parent)
}

/// Writes a commit of the empty tree with `message` (and `parent`) and returns its sha.
pub(super) fn commit_message(board: &Board, message: &str, parent: Option<&str>) -> Result<String> {
    let g = git(board);
    let tree = empty_tree(board);
    let mut args = vec![
        "-c",
        "user.name=tavern",
        "-c",
        "user.email=tavern@localhost",
        "commit-tree",
        "--no-gpg-sign",
        tree,
    ];
    if let Some(p) = parent {
        args.push("-p");
        args.push(p);
    }
    let out = g.output(&args, Some(message.as_bytes()))?;
    if !out.success {
        return Err(git_error(&g, "commit-tree", &out));
    }
    Ok(out.stdout.trim().to_string())
}

/// How a push of one ref ended.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum PushResult {
    Done,
    /// The lease did not hold: the remote's ref is not what we expected.
    Stale,
    /// The remote could not update the ref: another push held its lock, or one left it
    /// (the remote's lock file, when its message names one). Retried after a fetch; said
    /// as unconfirmed, naming the lock, if it persists.
    Busy {
        why: String,
        lock: Option<String>,
    },
    /// The remote refused it (a hook, permissions), or could not be reached at all:
    /// nothing was sent, nothing changed.
    Failed(String),
    /// The push may have reached the remote and its answer was lost (the process died,
    /// the connection dropped, or its per-ref status and its exit code disagree): only
    /// the remote can say what happened ([`remote_sha`]).
    Unknown(String),
}

/// Pushes `sha` to the ref of `task` only if the remote's ref is `expected` (absent when
/// None); `sha` None deletes the ref under the same lease.
pub(super) fn push(
    g: &Git,
    remote: &str,
    task: &str,
    sha: Option<&str>,
    expected: Option<&str>,
) -> Result<PushResult> {
    let name = ref_name(task);
    let out = push_many(
        g,
        remote,
        false,
        &[(
            name.clone(),
            sha.map(str::to_string),
            expected.map(str::to_string),
        )],
    )?;
    Ok(push_result(&out, &name))
}

/// One `git push` of several refs, each under its own lease: `(ref, new sha or None to
/// delete, expected sha or None for absent)`; `atomic`: all of them or none (`--atomic`).
/// Read each ref's result with [`push_result`].
pub(super) fn push_many(
    g: &Git,
    remote: &str,
    atomic: bool,
    refs: &[(String, Option<String>, Option<String>)],
) -> Result<Output> {
    let mut args: Vec<String> = [
        "push",
        "--porcelain",
        "--no-verify",
        "--no-recurse-submodules",
    ]
    .map(String::from)
    .to_vec();
    if atomic {
        args.push("--atomic".into());
    }
    for (name, _, expected) in refs {
        args.push(format!(
            "--force-with-lease={name}:{}",
            expected.as_deref().unwrap_or("")
        ));
    }
    args.push(remote.to_string());
    for (name, sha, _) in refs {
        args.push(format!("{}:{name}", sha.as_deref().unwrap_or("")));
    }
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    g.output(&args, None)
}

/// How the push of ref `name` ended, from the push's output.
pub(super) fn push_result(out: &Output, name: &str) -> PushResult {
    // Porcelain: one line per ref, `FLAG\tFROM:TO\tSUMMARY`; `!` is a rejection.
    let line = out.stdout.lines().find(|l| {
        l.split('\t')
            .nth(1)
            .is_some_and(|s| s.ends_with(&format!(":{name}")))
    });
    let summary = |l: &str| l.split('\t').nth(2).unwrap_or(l).trim().to_string();
    match line {
        Some(l) if !l.starts_with('!') => {
            if out.success {
                PushResult::Done
            } else {
                // The remote said it took the ref, and git failed all the same.
                PushResult::Unknown(format!(
                    "the push reported {} but failed: {}",
                    summary(l),
                    out.why()
                ))
            }
        }
        Some(l) if l.contains("(stale info)") => PushResult::Stale,
        Some(l) if l.contains("(failed to update ref)") || l.contains("(failed to lock)") => {
            PushResult::Busy {
                why: summary(l),
                lock: remote_lock(&out.stderr),
            }
        }
        Some(l) => PushResult::Failed(summary(l)),
        None if out.success => PushResult::Done,
        None if out.code.is_some() && never_sent(&out.stderr) => PushResult::Failed(out.why()),
        None => PushResult::Unknown(match out.code {
            Some(_) => out.why(),
            None => format!("git push was {} before the remote's answer", out.why()),
        }),
    }
}

/// git's words for a remote it could not reach or was refused by before anything was
/// sent: nothing can have changed there.
fn never_sent(stderr: &str) -> bool {
    let lost_midway = [
        "hung up unexpectedly",
        "Connection reset",
        "Broken pipe",
        "early EOF",
    ];
    if lost_midway.iter().any(|m| stderr.contains(m)) {
        return false;
    }
    [
        "does not appear to be a git repository",
        "Could not read from remote repository",
        "Could not resolve host",
        "Connection refused",
        "Connection timed out",
        "No route to host",
        "Permission denied",
        "Repository not found",
        "unable to access",
        "No such file or directory",
    ]
    .iter()
    .any(|m| stderr.contains(m))
}

/// The lock file a remote names when it could not lock a ref (`Unable to create
/// '…/refs/tavern/claims/t1.lock': File exists`).
fn remote_lock(stderr: &str) -> Option<String> {
    stderr
        .lines()
        .filter(|l| l.starts_with("remote:") || l.contains("Unable to create"))
        .find_map(|l| {
            let rest = l.split("Unable to create '").nth(1)?;
            let (path, _) = rest.split_once("': File exists")?;
            Some(path.to_string())
        })
}

/// What the remote's ref of `task` points at now, asked with one `git ls-remote`: the
/// sha (None: no such ref), or, when the remote cannot be asked, why not.
pub(super) fn remote_sha(
    g: &Git,
    remote: &str,
    task: &str,
) -> Result<std::result::Result<Option<String>, String>> {
    let name = ref_name(task);
    // A killed `git ls-remote` (a local accident, not the remote's answer) is asked again.
    let mut out = g.output(&["ls-remote", "--refs", remote, &name], None)?;
    for _ in 0..2 {
        if out.success || out.signal.is_none() {
            break;
        }
        out = g.output(&["ls-remote", "--refs", remote, &name], None)?;
    }
    if !out.success {
        return Ok(Err(format!("git ls-remote: {}", out.why())));
    }
    Ok(Ok(out.stdout.lines().find_map(|l| {
        let (sha, n) = l.split_once('\t')?;
        (n.trim() == name).then(|| sha.trim().to_string())
    })))
}

/// Before `claim --next` tries candidates on a connected board: every record on the
/// remote, fetched in one exchange, so that tasks other clones hold or finished are skipped
/// instead of each being learnt by losing a push to it. Unreachable: exit 7.
pub fn fetch_for_next(
    board: &Board,
    remote: &str,
) -> Result<std::collections::HashMap<String, Record>> {
    let g = git(board);
    let out = fetch_every_record(&g, board, remote)?;
    if !out.success && local_race(&out.stderr) {
        return Err(local_copies_raced(&out));
    }
    if !out.success {
        return Err(Failure::Unsurveyed {
            remote: remote.to_string(),
            project: board.project().to_path_buf(),
            why: out.why(),
        }
        .into());
    }
    Ok(all_known(board)
        .map_err(|e| unsurveyed_here(board, remote, e))?
        .into_iter()
        .map(|r| (r.task.clone(), r))
        .collect())
}

/// `claim --next` lost every attempt to update this clone's copies of the records to
/// another git process of this clone (exit 1, as a lock that stays in the way of one
/// record's copy is): the remote is not at fault, and nothing was claimed.
fn local_copies_raced(out: &Output) -> Error {
    let locks = lock_files(&out.stderr);
    Error::Request {
        kind: crate::error::Kind::Other,
        path: locks.first().cloned(),
        message: crate::msg!(format!(
            "cannot update this clone's copies of the claim records ({}): another git process of this clone updated them or held {} at each of {LOCAL_RACE_ATTEMPTS} attempts (another tavern command's git, one left running by a killed tavern process, or your own); the remote is not at fault. Nothing was claimed: run the same command again (if no git process runs and the lock stays, remove it)",
            out.why(),
            super::wording::paths_or(&locks, "a ref's lock")
        )),
    }
}

/// `claim --next` could not read this clone's copies of the records (its git was killed,
/// or refused): nothing was claimed, exit 7 naming the command, as when the remote cannot
/// be surveyed; never exit 1.
fn unsurveyed_here(board: &Board, remote: &str, e: Error) -> Error {
    match e {
        Error::Git {
            command, message, ..
        } => Failure::Unsurveyed {
            remote: remote.to_string(),
            project: board.project().to_path_buf(),
            why: format!("this clone's `{command}` failed before anything was sent ({message})"),
        }
        .into(),
        e => e,
    }
}

/// Every record on the remote, fetched into this clone's copies (copies of records the
/// remote no longer has are removed). Not connected: none. Unreachable: git's error.
pub fn fetch_all(board: &Board) -> Result<Vec<Record>> {
    let Some(remote) = super::remote(board)? else {
        return Ok(Vec::new());
    };
    let g = git(board);
    let out = fetch_every_record(&g, board, &remote)?;
    if !out.success {
        return Err(Error::Git {
            command: format!("git fetch {remote} {REF_PREFIX}*"),
            dir: g.dir().to_path_buf(),
            message: out.stderr.trim().to_string(),
        });
    }
    all_known(board)
}

/// What `claim --next` knows of the remote's records before it tries candidates, from one
/// `git ls-remote` (no objects sent): the records whose copy in this clone is the remote's
/// (`known`), and the refs that differ (`changed`: another clone claimed, moved or released
/// that task since this clone last looked). Unreachable: exit 7.
#[derive(Debug, Default)]
pub struct Survey {
    pub known: std::collections::HashMap<String, Record>,
    changed: std::collections::HashSet<String>,
}

impl Survey {
    /// The remote's record of `task` is not the one this clone has.
    pub fn changed(&self, task: &str) -> bool {
        self.changed.contains(&ref_name(task))
    }
}

/// See [`Survey`].
pub fn survey(board: &Board, remote: &str) -> Result<Survey> {
    let g = git(board);
    let pattern = format!("{REF_PREFIX}*");
    let out = g.output(&["ls-remote", "--refs", remote, &pattern], None)?;
    if !out.success {
        return Err(Failure::Unsurveyed {
            remote: remote.to_string(),
            project: board.project().to_path_buf(),
            why: out.why(),
        }
        .into());
    }
    let mut theirs: std::collections::HashMap<&str, &str> = out
        .stdout
        .lines()
        .filter_map(|l| {
            let (sha, name) = l.split_once('\t')?;
            Some((name.trim(), sha.trim()))
        })
        .collect();
    let mut survey = Survey::default();
    for r in all_known(board).map_err(|e| unsurveyed_here(board, remote, e))? {
        let name = ref_name(&r.task);
        if theirs.remove(name.as_str()) == Some(r.sha.as_str()) {
            survey.known.insert(r.task.clone(), r);
        } else {
            survey.changed.insert(name);
        }
    }
    survey
        .changed
        .extend(theirs.into_keys().map(str::to_string));
    Ok(survey)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn out(success: bool, stdout: &str, stderr: &str) -> Output {
        Output {
            success,
            code: Some(if success { 0 } else { 1 }),
            signal: None,
            stdout: stdout.into(),
            stderr: stderr.into(),
        }
    }

    #[test]
    fn a_push_is_read_from_its_porcelain_line_for_the_ref() {
        let name = "refs/tavern/claims/t1";
        assert_eq!(push_result(&out(true, "", ""), name), PushResult::Done);
        assert_eq!(
            push_result(
                &out(
                    true,
                    "To ../r.git\n*\tabc:refs/tavern/claims/t1\t[new reference]\nDone\n",
                    ""
                ),
                name
            ),
            PushResult::Done
        );
        assert_eq!(
            push_result(
                &out(
                    false,
                    "!\tabc:refs/tavern/claims/t1\t[rejected] (stale info)\nDone\n",
                    ""
                ),
                name
            ),
            PushResult::Stale
        );
        assert_eq!(
            push_result(
                &out(
                    false,
                    "!\tabc:refs/tavern/claims/t1\t[remote rejected] (failed to update ref)\n",
                    ""
                ),
                name
            ),
            PushResult::Busy {
                why: "[remote rejected] (failed to update ref)".into(),
                lock: None
            }
        );
        assert_eq!(
            push_result(
                &out(
                    false,
                    "!\tabc:refs/tavern/claims/t1\t[remote rejected] (hook declined)\n",
                    ""
                ),
                name
            ),
            PushResult::Failed("[remote rejected] (hook declined)".into())
        );
        // Another ref's line is not this one's; no line at all: git's first word.
        assert_eq!(
            push_result(
                &out(
                    false,
                    "!\tabc:refs/tavern/claims/t10\t[rejected] (stale info)\n",
                    "\nfatal: '../gone.git' does not appear to be a git repository\nfatal: Could not read from remote repository.\n"
                ),
                name
            ),
            PushResult::Failed(
                "fatal: '../gone.git' does not appear to be a git repository".into()
            )
        );
    }

    #[test]
    fn a_push_whose_answer_was_lost_is_unknown_not_failed() {
        let name = "refs/tavern/claims/t1";
        // Accepted per ref, failed as a whole: the two disagree.
        assert_eq!(
            push_result(
                &out(
                    false,
                    "*\tabc:refs/tavern/claims/t1\t[new reference]\n",
                    "error: boom\n"
                ),
                name
            ),
            PushResult::Unknown("the push reported [new reference] but failed: error: boom".into())
        );
        // The connection dropped after the pack went out.
        assert_eq!(
            push_result(
                &out(
                    false,
                    "",
                    "fatal: the remote end hung up unexpectedly\nfatal: Could not read from remote repository.\n"
                ),
                name
            ),
            PushResult::Unknown("fatal: the remote end hung up unexpectedly".into())
        );
        // Killed: no exit code at all.
        let mut killed = out(false, "", "");
        killed.code = None;
        killed.signal = Some(9);
        assert!(matches!(push_result(&killed, name), PushResult::Unknown(_)));
    }

    #[test]
    fn a_remote_that_cannot_lock_a_ref_names_its_lock_file() {
        let stderr = "remote: error: cannot lock ref 'refs/tavern/claims/t1': Unable to create '/srv/r.git/refs/tavern/claims/t1.lock': File exists.\n";
        assert_eq!(
            push_result(
                &out(
                    false,
                    "!\tabc:refs/tavern/claims/t1\t[remote rejected] (failed to lock)\n",
                    stderr
                ),
                "refs/tavern/claims/t1"
            ),
            PushResult::Busy {
                why: "[remote rejected] (failed to lock)".into(),
                lock: Some("/srv/r.git/refs/tavern/claims/t1.lock".into())
            }
        );
    }

    #[test]
    fn a_local_ref_race_is_told_from_an_unreachable_remote() {
        assert!(local_race(
            "error: cannot lock ref 'refs/tavern/claims/t1': is at 1111 but expected 2222\n"
        ));
        assert!(local_race(
            "error: Unable to create '/p/.git/refs/tavern/claims/t1.lock': File exists.\n"
        ));
        assert!(!local_race(
            "fatal: Could not read from remote repository.\n"
        ));
        assert_eq!(
            lock_files(
                "error: Unable to create '/p/.git/refs/tavern/claims/t1.lock': File exists.\n\nAnother git process"
            ),
            vec![std::path::PathBuf::from(
                "/p/.git/refs/tavern/claims/t1.lock"
            )]
        );
    }
}
