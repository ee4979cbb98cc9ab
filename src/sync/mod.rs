//! One board everywhere (DESIGN §12): git is the engine between worktrees, clones and
//! machines. [`git`] runs the `git` executable (its push is the compare-and-swap); this
//! module says whether a board is connected to a remote, connects one (`sync init`), and
//! fetches the remote's board branch.

pub mod alert;
pub mod branch;
pub mod claims;
pub mod exchange;
pub mod git;
pub mod guard;
pub mod health;
pub mod keep;
pub mod lines;
pub mod locks;
pub mod merge;
pub mod rejoin;
pub mod repo;
pub mod status;
pub mod vet;

pub use exchange::{Exchange, Options, exchange};
pub use keep::{KeepOptions, keep_exchanging};

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

use crate::error::Error;
use branch::{BoardGit, REF, REMOTE_REF};

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
    let _exchange = bg.exchange_lock()?;
    locks::heal_exchange(&bg.repo);
    bg.git.run(&["config", REMOTE_KEY, remote])?;
    let fetched = fetch(&bg, remote)?;
    if let Some(theirs) = &fetched
        && bg.rev(REF)?.is_none()
        && !root.join(crate::layout::BOARD_YAML).is_file()
    {
        take_first(&bg, remote, theirs)?;
    }
    exclude_board(repo, root)?;
    Ok(fetched.is_some())
}

/// A fresh clone takes the remote's board: vetted as any change from a clone, the board
/// written into the empty board directory, and what was not taken logged as an alert
/// (the next sync sends the repaired branch).
fn take_first(bg: &BoardGit, remote: &str, theirs: &str) -> Result<()> {
    let changes = vet::changes_between(&bg.git, None, theirs)?;
    let vetted = vet::vet(vet::DEFAULT_DOC_LIMIT, &bg.git, changes, || {
        exchange::blob_at(bg, theirs, crate::layout::LOG)
    })?;
    let target = if vetted.refused.is_empty() {
        theirs.to_string()
    } else {
        exchange::build_commit(
            bg,
            None,
            &vetted.taken,
            &[theirs],
            &format!("tavern sync: take the board of '{remote}' without what it may not bring"),
        )?
    };
    let _ = std::fs::remove_file(&bg.index);
    bg.materialize(None, &target)?;
    bg.git.run(&["update-ref", REF, &target])?;
    if !vetted.refused.is_empty()
        && let Ok(board) = Board::open(&bg.root)
    {
        exchange::alert_refused(&board, remote, theirs, &vetted.refused)?;
    }
    Ok(())
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
///
/// The fetch updates this clone's copy with the value it read first as the expected old
/// one; another git process of this clone that updates the copy meanwhile (a fetch left
/// running by a tavern process killed during its exchange: the exchange lock went with
/// the process, its git did not) makes it fail with `cannot lock ref …: is at X but
/// expected Y`. That is a race lost here, not the remote failing: the fetch is made again
/// (it reads the copy again, and takes whatever the remote's branch is then), up to
/// [`LOCAL_RACE_ATTEMPTS`] times, then exit 3 saying so. The copy is never forced.
fn fetch(bg: &BoardGit, remote: &str) -> Result<Option<String>> {
    let spec = format!("+{REF}:{REMOTE_REF}");
    let args = [
        "fetch",
        "-q",
        "--no-tags",
        "--no-write-fetch-head",
        remote,
        &spec,
    ];
    let mut attempt = 0;
    let out = loop {
        let out = bg.remote_git().output(&args, None)?;
        if out.success || !git::local_race(&out.stderr) {
            break out;
        }
        attempt += 1;
        if attempt >= LOCAL_RACE_ATTEMPTS {
            return Err(local_race_lost(
                bg,
                &format!("its copy of the remote's board branch, {REMOTE_REF}"),
                attempt,
                &out.why(),
            ));
        }
        local_pause(attempt);
    };
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

/// How many times a git command of an exchange that lost a race in this clone (see
/// [`git::local_race`]) is made again before the exchange says so.
pub const LOCAL_RACE_ATTEMPTS: usize = 8;

/// The wait before the `n`th attempt (1, 2, ...) after a race lost in this clone: 10 ms
/// doubled each time, at most 500 ms (a git holds a ref's lock for milliseconds; one left
/// running by a killed process ends within a fetch's time).
pub(crate) fn local_pause(n: usize) {
    let ms = (10u64 << n.saturating_sub(1).min(6)).min(500);
    std::thread::sleep(std::time::Duration::from_millis(ms));
}

/// Exit 3: a ref (or the index) of this clone's board was updated or locked by another
/// git process of this clone at each of `attempts` attempts. Not the remote: it was not
/// asked to take anything yet.
pub(crate) fn local_race_lost(bg: &BoardGit, what: &str, attempts: usize, why: &str) -> Error {
    Error::Request {
        kind: crate::error::Kind::Conflict,
        path: Some(bg.root.clone()),
        message: crate::msg!(
            format!(
                "lost {attempts} race(s) in a row in this clone for {what} ({why}): another git process of this clone updated it or held its lock each time (another exchange's git left running by a killed tavern process, or a git command of your own); the remote is not at fault and nothing more was sent. The board here is intact (its changes are recorded on the branch {}); run `",
                branch::BRANCH,
            ),
            crate::error::Command::Sync,
            format!(
                "` again (if no git process runs in {} and a `.lock` file named above stays, remove it)",
                bg.repo.common_dir.display()
            )
        ),
    }
}

fn unreachable(bg: &BoardGit, remote: &str, what: &str, stderr: &str) -> Error {
    let why = stderr
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or("git failed");
    // Where the remote is (its URL), so that no path in the message reads as the remote's.
    let at = bg
        .git
        .output(&["remote", "get-url", remote], None)
        .ok()
        .filter(|o| o.success && !o.stdout.trim().is_empty())
        .map_or_else(String::new, |o| format!(" at {}", o.stdout.trim()));
    Error::Request {
        kind: crate::error::Kind::Unconfirmed,
        path: Some(bg.root.clone()),
        message: crate::msg!(
            format!(
                "cannot {what} the remote '{remote}'{at} ({why}): nothing more was sent, and the board here is intact (its changes are recorded on the branch {}); run `",
                branch::BRANCH,
            ),
            crate::error::Command::Sync,
            format!("` again when the remote is reachable (`git ls-remote {remote}` tells)")
        ),
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
