//! Locks heal (DESIGN §13). git guards a file it rewrites with a `NAME.lock` created
//! beside it; a git killed halfway leaves that file, and every later git that needs the
//! same file fails ("Another git process seems to be running"). tavern removes such a
//! leftover of its own whenever it holds the lock that guards it: the private index's
//! (`index.lock`) under the index lock, the board branch's and the remote branch copy's
//! ref locks and the scratch indexes of merges under the exchange lock; nothing of
//! tavern's can be writing them then. But a git can outlive the tavern that started it
//! (tavern killed, its git still at work): so only a lock old enough that no live git
//! holds it is removed ([`STALE_REF_LOCK`] for a ref's, [`GIT_LOCK_AGE`] for an index's);
//! a fresh one stays, and the git that needs it loses a race in this clone, which the
//! exchange tries again and then reports. `check` names every stale lock it finds,
//! tavern's and git's, with what to do.

use std::path::{Path, PathBuf};

use crate::board::Board;
use crate::sync::branch::{REF, REMOTE_REF};
use crate::sync::repo::Repo;

/// A git lock file older than this, that no lock of tavern's guards, is named by `check`
/// as probably stale: git holds one for the time of one command. An index's lock of
/// tavern's (the private index's, a merge's scratch index's) is removed only once this
/// old: git holds it for a whole `add -A` or `read-tree`, seconds on a large board.
pub const GIT_LOCK_AGE: std::time::Duration = std::time::Duration::from_secs(60);

/// A ref's lock older than this is a git's that is gone (killed while it updated the
/// ref): a live update holds it for milliseconds. The claims' and holds' record refs and
/// the board branch's refs take the same bound.
pub const STALE_REF_LOCK: std::time::Duration = std::time::Duration::from_secs(10);

/// Is the file at `path` there and last written more than `age` ago?
pub fn older_than(path: &Path, age: std::time::Duration) -> bool {
    std::fs::metadata(path)
        .and_then(|m| m.modified())
        .is_ok_and(|t| t.elapsed().is_ok_and(|a| a > age))
}

/// Removes `path` if it is older than `age`.
fn remove_if_older(path: &Path, age: std::time::Duration) {
    if older_than(path, age) {
        let _ = std::fs::remove_file(path);
    }
}

/// Removes the private index's `index.lock` once it is older than [`GIT_LOCK_AGE`]. Call
/// holding the index lock.
pub fn heal_index(index: &Path) {
    remove_if_older(&lock_of(index), GIT_LOCK_AGE);
}

/// Removes what killed exchanges left: the ref locks of the board branch and of the
/// remote's copy (older than [`STALE_REF_LOCK`]), and scratch indexes of merges with
/// their locks (older than [`GIT_LOCK_AGE`]). Call holding the exchange lock.
pub fn heal_exchange(repo: &Repo) {
    for r in [REF, REMOTE_REF] {
        remove_if_older(&lock_of(&repo.common_dir.join(r)), STALE_REF_LOCK);
    }
    if let Ok(dir) = std::fs::read_dir(repo.tavern_dir()) {
        for e in dir.flatten() {
            if e.file_name().to_string_lossy().starts_with("merge-index.") {
                remove_if_older(&e.path(), GIT_LOCK_AGE);
            }
        }
    }
}

/// `PATH.lock`.
pub fn lock_of(path: &Path) -> PathBuf {
    let mut s = path.as_os_str().to_os_string();
    s.push(".lock");
    PathBuf::from(s)
}

/// A lock file `check` names.
pub struct Stale {
    /// As shown: relative to the board when it is under it, else the full path.
    pub shown: String,
    pub problem: String,
}

/// Every stale lock of the board's repository: tavern's (the guarding lock is free, so
/// nothing of tavern's is writing them) and git's (older than [`GIT_LOCK_AGE`]).
pub fn stale(board: &Board) -> Vec<Stale> {
    let Some(repo) = Repo::find(board.project()) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    let tavern = repo.tavern_dir();
    let free = |name: &str| {
        std::fs::OpenOptions::new()
            .write(true)
            .open(tavern.join(name))
            .is_ok_and(|f| f.try_lock().is_ok())
    };
    let mut own: Vec<PathBuf> = Vec::new();
    if free("branch.lock") {
        own.push(lock_of(&tavern.join("index")));
    }
    if free("sync.lock") {
        for r in [REF, REMOTE_REF] {
            own.push(lock_of(&repo.common_dir.join(r)));
        }
        if let Ok(dir) = std::fs::read_dir(&tavern) {
            for e in dir.flatten() {
                if e.file_name().to_string_lossy().starts_with("merge-index.") {
                    own.push(e.path());
                }
            }
        }
    }
    for path in own.into_iter().filter(|p| p.exists()) {
        out.push(Stale {
            shown: path.display().to_string(),
            problem: "a lock of tavern's sync left by a killed git: the next sync removes it once it is old enough that no git is at work on it (10 seconds for a ref's, a minute for an index's), or remove it now".into(),
        });
    }
    let mut found = Vec::new();
    git_locks(&repo.common_dir, &mut found, 0);
    if repo.git_dir != repo.common_dir {
        git_locks(&repo.git_dir, &mut found, 0);
    }
    let now = std::time::SystemTime::now();
    for path in found {
        if path.starts_with(&tavern)
            || [REF, REMOTE_REF]
                .iter()
                .any(|r| path == lock_of(&repo.common_dir.join(r)))
        {
            continue;
        }
        let old = std::fs::metadata(&path)
            .and_then(|m| m.modified())
            .ok()
            .and_then(|t| now.duration_since(t).ok())
            .is_some_and(|age| age >= GIT_LOCK_AGE);
        if old {
            out.push(Stale {
                shown: path.display().to_string(),
                problem: "a git lock file left for over a minute (a git killed while it wrote): if no git command is running in this repository, remove it".into(),
            });
        }
    }
    out
}

/// The `*.lock` files git may leave in a git directory: its own files' (index, HEAD,
/// config, packed-refs, shallow) and the refs'.
fn git_locks(dir: &Path, out: &mut Vec<PathBuf>, depth: usize) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let name = e.file_name();
        let name = name.to_string_lossy();
        let Ok(kind) = e.file_type() else {
            continue;
        };
        if kind.is_dir() {
            // The refs (and a linked worktree's own files); never objects.
            let into = if depth == 0 {
                name == "refs" || name == "worktrees"
            } else {
                true
            };
            if into && depth < 12 {
                git_locks(&e.path(), out, depth + 1);
            }
        } else if name.ends_with(".lock") {
            out.push(e.path());
        }
    }
}
