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

/// A lock file stamped further ahead of this machine's clock than this was written before
/// the clock was set back, and its stamp cannot tell how long it has been there. (Less is
/// a file system's rounded stamp or another machine's clock on a shared disk.)
pub const AHEAD_TOLERANCE: std::time::Duration = std::time::Duration::from_secs(2);

/// Is the lock file at `path` there, and has it been for more than `age` as far as this
/// machine can tell ([`lock_age`])?
pub fn older_than(path: &Path, age: std::time::Duration) -> bool {
    lock_age(path).is_some_and(|a| a > age)
}

/// How long the lock file at `path` has been there as far as this machine can tell (None:
/// it is not there): the age of its last write. One stamped more than [`AHEAD_TOLERANCE`]
/// ahead of now (the clock was set back since) tells nothing, and would otherwise stay
/// young until the clock caught up: it is stamped now, so that its age counts from the
/// first time a tavern saw it, and it is judged by the usual bound from then. A git lock
/// records no owner whose process could be asked instead. Stamping changes no content,
/// and a git still at work on the file stamps it again when it writes.
pub fn lock_age(path: &Path) -> Option<std::time::Duration> {
    let written = std::fs::symlink_metadata(path).ok()?.modified().ok()?;
    match std::time::SystemTime::now().duration_since(written) {
        Ok(age) => Some(age),
        Err(ahead) => {
            if ahead.duration() > AHEAD_TOLERANCE {
                stamp_now(path);
            }
            Some(std::time::Duration::ZERO)
        }
    }
}

/// Sets the time `path` (not a symlink's target) was last written to now, its last read
/// left alone. Best effort: a stamp that cannot be set leaves the file as young as before.
fn stamp_now(path: &Path) {
    use rustix::fs::{AtFlags, CWD, Timestamps, UTIME_NOW, UTIME_OMIT};
    use rustix::time::Timespec;
    let times = Timestamps {
        last_access: Timespec {
            tv_sec: 0,
            tv_nsec: UTIME_OMIT,
        },
        last_modification: Timespec {
            tv_sec: 0,
            tv_nsec: UTIME_NOW,
        },
    };
    let _ = rustix::fs::utimensat(CWD, path, &times, AtFlags::SYMLINK_NOFOLLOW);
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
        // Read only: `check` changes nothing, so a lock stamped ahead is named, not stamped.
        let Ok(written) = std::fs::symlink_metadata(&path).and_then(|m| m.modified()) else {
            continue;
        };
        let problem = match now.duration_since(written) {
            Ok(age) if age >= GIT_LOCK_AGE => {
                "a git lock file left for over a minute (a git killed while it wrote): if no git command is running in this repository, remove it"
            }
            Err(ahead) if ahead.duration() > AHEAD_TOLERANCE => {
                "a git lock file stamped ahead of this machine's clock (written before the clock was set back), so how long it has been there cannot be told: if no git command is running in this repository, remove it"
            }
            _ => continue,
        };
        out.push(Stale {
            shown: path.display().to_string(),
            problem: problem.into(),
        });
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, SystemTime};

    fn written(path: &Path, at: SystemTime) {
        let f = std::fs::File::options().write(true).open(path).unwrap();
        f.set_modified(at).unwrap();
    }

    fn modified(path: &Path) -> SystemTime {
        std::fs::metadata(path).unwrap().modified().unwrap()
    }

    /// The clock set back: a lock stamped an hour ahead is not young for an hour. Its age
    /// counts from the first look, which stamps it now; one barely ahead (a coarse stamp)
    /// is young and left as it is; one in the past is as old as its stamp says.
    #[test]
    fn a_lock_stamped_ahead_counts_from_when_it_was_first_seen() {
        let dir = tempfile::tempdir().unwrap();
        let lock = dir.path().join("x.lock");
        std::fs::write(&lock, "a sha\n").unwrap();
        let hour = Duration::from_secs(3600);
        written(&lock, SystemTime::now() + hour);
        assert!(!older_than(&lock, Duration::from_secs(10)));
        let after = SystemTime::now();
        assert!(
            modified(&lock) <= after + AHEAD_TOLERANCE,
            "stamped now, not left an hour ahead"
        );
        assert_eq!(std::fs::read_to_string(&lock).unwrap(), "a sha\n");
        // From then on its stamp tells its age as any lock's: 11 seconds on, it is stale.
        written(&lock, modified(&lock) - Duration::from_secs(11));
        assert!(older_than(&lock, STALE_REF_LOCK));

        let barely = SystemTime::now() + Duration::from_secs(1);
        written(&lock, barely);
        assert!(lock_age(&lock).is_some());
        assert_eq!(modified(&lock), barely, "within the tolerance: not stamped");

        written(&lock, SystemTime::now() - Duration::from_secs(61));
        assert!(older_than(&lock, GIT_LOCK_AGE));
        assert!(lock_age(&dir.path().join("missing.lock")).is_none());
    }
}
