//! One watcher per board: two would log every hand edit twice and run every activation
//! twice. The watcher holds an flock on `.state/locks/watch.lock` and writes its pid next
//! to the snapshot for the message a second watcher prints.
//!
//! `.state/` is git-ignored, so `git clean -fdX` (or a plain `rm -rf .state`) removes the
//! lock file while the watcher runs; a second watcher would then lock a new file of the
//! same name. So the watcher checks every second that the file at the lock's path is still
//! the one it holds, and locks the new one, or stops when another watcher got it first.
//!
//! A watcher killed while it starts a knowledge source can leave the lock held for a moment
//! after it is gone: the child shares the lock's open file until it has replaced itself with
//! the source's program (the descriptor is closed on exec, not at fork). So a watcher that
//! finds the lock held by a pid that no longer runs waits a little for it before refusing.

use std::fs::File;
use std::path::{Path, PathBuf};

use super::snapshot;
use crate::board::Board;
use crate::error::{Error, Result};

pub struct WatchLock {
    file: File,
    path: PathBuf,
    pid_path: PathBuf,
}

impl WatchLock {
    /// Locks the board for this watcher, or says which watcher holds it (exit 3).
    pub fn acquire(board: &Board) -> Result<WatchLock> {
        let path = crate::layout::watch_lock(&board.root);
        let pid_path = snapshot::dir(board).join("pid");
        let file = try_lock(board, &path, &pid_path)?;
        Ok(WatchLock {
            file,
            path,
            pid_path,
        })
    }

    /// Is the file at the lock's path still the one held? If it was removed or replaced,
    /// locks the new one: Ok(true) when it had to, an error when another watcher holds it.
    pub fn verify(&mut self, board: &Board) -> Result<bool> {
        if same_file(&self.file, &self.path) {
            return Ok(false);
        }
        self.file = try_lock(board, &self.path, &self.pid_path)?;
        Ok(true)
    }
}

fn try_lock(board: &Board, path: &Path, pid_path: &Path) -> Result<File> {
    let dir = path.parent().unwrap_or(path);
    std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, "create directory", e))?;
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .read(true)
        .write(true)
        .open(path)
        .map_err(|e| Error::io(path, "open lock file", e))?;
    let mut result = file.try_lock();
    if matches!(result, Err(std::fs::TryLockError::WouldBlock))
        && holder_is_gone(&snapshot::read_state(pid_path).unwrap_or_default())
    {
        let end = std::time::Instant::now() + HOLDER_GONE_GRACE;
        while matches!(result, Err(std::fs::TryLockError::WouldBlock))
            && std::time::Instant::now() < end
        {
            std::thread::sleep(std::time::Duration::from_millis(10));
            result = file.try_lock();
        }
    }
    match result {
        Ok(()) => {
            let pid = format!("{}\n", std::process::id());
            // Only for the message of a second watcher; the lock itself is what counts.
            let _ = snapshot::write_state(pid_path, pid.as_bytes());
            Ok(file)
        }
        Err(std::fs::TryLockError::WouldBlock) => {
            let pid = snapshot::read_state(pid_path).unwrap_or_default();
            Err(Error::conflict(
                board.rel(path),
                format!(
                    "another `tavern watch` is running on this board (pid {}); one watcher per board",
                    pid.trim()
                ),
            ))
        }
        Err(std::fs::TryLockError::Error(e)) => Err(Error::io(path, "lock", e)),
    }
}

/// How long a watcher waits for a lock whose recorded holder no longer runs: a child of
/// the dead watcher between fork and exec holds it for microseconds, or for a few scheduling
/// slices on a loaded machine.
const HOLDER_GONE_GRACE: std::time::Duration = std::time::Duration::from_secs(3);

/// Is the process with this recorded pid known to have ended? Only where `/proc` tells:
/// elsewhere (or for a pid file that is missing or garbled) the holder is taken as alive,
/// and the lock is refused at once as before.
fn holder_is_gone(pid: &str) -> bool {
    let Ok(pid) = pid.trim().parse::<u32>() else {
        return false;
    };
    let proc = Path::new("/proc");
    proc.join("self").exists() && !proc.join(pid.to_string()).exists()
}

fn same_file(file: &File, path: &Path) -> bool {
    match (file.metadata(), std::fs::metadata(path)) {
        (Ok(a), Ok(b)) => identity(&a) == identity(&b),
        _ => false,
    }
}

/// A file's device and inode: which file a path names now (None where that is not known,
/// and then two files compare as the same).
pub fn identity(meta: &std::fs::Metadata) -> Option<(u64, u64)> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        Some((meta.dev(), meta.ino()))
    }
    #[cfg(not(unix))]
    {
        let _ = meta;
        None
    }
}
