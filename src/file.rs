//! How tavern writes a file: the one place that knows about temp files, fsync, rename and
//! the directory's fsync. Every whole file tavern writes goes through here and says what
//! it must survive ([`Durability`]); the write protocol of `store::write` uses the steps
//! ([`fill_temp`], [`rename_into_place`], [`link_into_place`], [`sync_dir`]) because it
//! makes its temps visible later, under the log lock.
//!
//! Not whole-file writes, and so not here: the log's appends (`log::Appender`, synced on
//! every entry), a command's output streamed into its file (`runs`), lock files (opened,
//! never written) and heartbeats (a touched modification time).

use std::fs::{self, File, OpenOptions};
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use crate::error::{Error, Result};

/// What a whole-file write must survive. Each caller names its choice and says why.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Durability {
    /// Once the write returns, the new file survives a power loss: the content is synced
    /// before the rename and the directory after it. For what tavern cannot rebuild and
    /// has told someone it wrote (the board's files, a user's configuration).
    Durable,
    /// Old or new after a power loss, never torn or empty: the content is synced before
    /// the rename, the directory is not (so the rename itself may be undone). For state
    /// whose going back one step is harmless but whose loss is not (read cursors).
    Whole,
    /// Old or new after a kill, but no sync: after a power loss it may be old, new, missing
    /// or empty. Only for caches and derived state, whose readers take an unreadable one
    /// as none and whose loss costs a re-read, never a wrong answer.
    Cache,
}

static TEMP_COUNTER: AtomicU64 = AtomicU64::new(0);

/// A temp file beside `path` that no other write uses (this process's id and a counter):
/// writers that hold no lock may replace the same file at once, and the last rename wins.
/// Dot-prefixed and ending `.tmp`, so readers, watchers and git skip it.
fn unique_temp(path: &Path) -> PathBuf {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let n = TEMP_COUNTER.fetch_add(1, Ordering::Relaxed);
    path.with_file_name(format!(".{name}.{}.{n}.tmp", std::process::id()))
}

fn parent(path: &Path) -> &Path {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    }
}

/// A file's modification time in nanoseconds since the epoch (None: the system keeps none,
/// or it is before 1970).
pub fn mtime_nanos(meta: &std::fs::Metadata) -> Option<u128> {
    let t = meta.modified().ok()?;
    Some(t.duration_since(std::time::UNIX_EPOCH).ok()?.as_nanos())
}

/// Replaces (or creates) `path` with `bytes`, whole or not at all: a temp file beside it,
/// synced as `durability` says, renamed over. The directory must exist.
pub fn write(path: &Path, bytes: &[u8], durability: Durability) -> Result<()> {
    replace_through(&unique_temp(path), path, bytes, durability)
        .map_err(|e| Error::io(path, "write", e))
}

/// Like [`write`], through a temp file named by the caller, which is created only if it
/// does not exist (git's `NAME.lock` is both the temp and git's lock on the ref): an
/// `AlreadyExists` error means someone else holds it, and it is left alone.
pub fn write_through(tmp: &Path, path: &Path, bytes: &[u8], durability: Durability) -> Result<()> {
    replace_through(tmp, path, bytes, durability).map_err(|e| Error::io(path, "write", e))
}

fn replace_through(
    tmp: &Path,
    path: &Path,
    bytes: &[u8],
    durability: Durability,
) -> std::io::Result<()> {
    let mut f = OpenOptions::new().write(true).create_new(true).open(tmp)?;
    let result = (|| {
        f.write_all(bytes)?;
        if durability != Durability::Cache {
            f.sync_all()?;
        }
        drop(f);
        fs::rename(tmp, path)
    })();
    if result.is_err() {
        let _ = fs::remove_file(tmp);
    }
    result?;
    if durability == Durability::Durable {
        sync_dir(parent(path));
    }
    Ok(())
}

/// Creates `path` with `bytes`, never over an existing file, whole or not at all: a temp
/// file, synced as `durability` says, linked to its name. False if `path` existed (it is
/// left as it was). The directory must exist.
pub fn create(path: &Path, bytes: &[u8], durability: Durability) -> Result<bool> {
    let tmp = unique_temp(path);
    let result = (|| {
        let mut f = OpenOptions::new().write(true).create_new(true).open(&tmp)?;
        f.write_all(bytes)?;
        if durability != Durability::Cache {
            f.sync_all()?;
        }
        drop(f);
        fs::hard_link(&tmp, path)
    })();
    let _ = fs::remove_file(&tmp);
    match result {
        Ok(()) => {
            if durability == Durability::Durable {
                sync_dir(parent(path));
            }
            Ok(true)
        }
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(false),
        Err(e) => Err(Error::io(path, "create", e)),
    }
}

/// Writes `path` in place, not atomically and without sync: a kill can leave it torn.
/// Only for files where a torn one means the write never happened and its reader knows
/// it, or scratch files read at once and removed; each caller says which.
pub fn write_in_place(path: &Path, bytes: &[u8]) -> Result<()> {
    fs::write(path, bytes).map_err(|e| Error::io(path, "write", e))
}

/// Fills the temp file `tmp` with the complete new content of a file and syncs it: the
/// first half of a durable replace, whose second half ([`rename_into_place`] or
/// [`link_into_place`]) the caller makes later. A leftover temp of the same name (a
/// kill) is replaced; only the holder of the target's lock writes it.
pub fn fill_temp(tmp: &Path, bytes: &[u8]) -> Result<()> {
    let result = (|| {
        let mut f = match OpenOptions::new().write(true).create_new(true).open(tmp) {
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                fs::remove_file(tmp)?;
                OpenOptions::new().write(true).create_new(true).open(tmp)?
            }
            r => r?,
        };
        f.write_all(bytes)?;
        f.sync_all()
    })();
    result.map_err(|e| {
        let _ = fs::remove_file(tmp);
        Error::io(tmp, "write", e)
    })
}

/// Makes a filled temp the file `target`, replacing what was there, and (if `sync`)
/// syncs the directory: once this returns, the new content survives a power loss.
pub fn rename_into_place(tmp: &Path, target: &Path, sync: bool) -> std::io::Result<()> {
    fs::rename(tmp, target)?;
    if sync {
        sync_dir(parent(target));
    }
    Ok(())
}

/// Makes a filled temp the file `target`, never over an existing one (`AlreadyExists`
/// then, and nothing changed), and (if `sync`) syncs the directory; the temp goes.
pub fn link_into_place(tmp: &Path, target: &Path, sync: bool) -> std::io::Result<()> {
    fs::hard_link(tmp, target)?;
    let _ = fs::remove_file(tmp);
    if sync {
        sync_dir(parent(target));
    }
    Ok(())
}

/// Whether the filesystem holding `dir` commits its metadata changes in order, so that
/// syncing any file there also makes every earlier rename, link and unlink on it durable:
/// ext4 with its journal (and ext3, whose driver it is) and XFS, whose `fsync`/`fdatasync`
/// of a file whose size changed commits the journal up to that change, and with it
/// everything journaled before. Elsewhere (ext4 made or mounted without a journal, whose
/// metadata reaches the disk in no order; btrfs, whose fsync logs only the file synced;
/// tmpfs, NFS, other systems) false: a directory's names are made durable by syncing the
/// directory.
///
/// The write protocol asks this once per change: its last step is the log's append,
/// synced, after the renames; where this is true that sync is also the directories'.
pub fn journal_orders_metadata(dir: &Path) -> bool {
    #[cfg(target_os = "linux")]
    {
        const EXT4: i128 = 0xEF53;
        const XFS: i128 = 0x5846_5342;
        match rustix::fs::statfs(dir).map(|s| i128::from(s.f_type)) {
            Ok(XFS) => true,
            Ok(EXT4) => ext4_has_journal(dir),
            _ => false,
        }
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = dir;
        false
    }
}

/// Whether the ext4 filesystem holding `dir` keeps a journal. ext4 says so of each mounted
/// filesystem in `/sys/fs/ext4/DEVICE/journal_task` (the journal thread's pid, or
/// `<none>`), and, where that file is missing (older kernels), by the journal's own
/// `/proc/fs/jbd2/DEVICE-8`; DEVICE is the name `/sys/dev/block/MAJOR:MINOR` gives the
/// device `dir` is on. Anything that cannot be read says no: the directories are synced.
#[cfg(target_os = "linux")]
fn ext4_has_journal(dir: &Path) -> bool {
    let Ok(st) = rustix::fs::stat(dir) else {
        return false;
    };
    let (major, minor) = (rustix::fs::major(st.st_dev), rustix::fs::minor(st.st_dev));
    let Some(device) = fs::read_link(format!("/sys/dev/block/{major}:{minor}"))
        .ok()
        .and_then(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
    else {
        return false;
    };
    match fs::read_to_string(format!("/sys/fs/ext4/{device}/journal_task")) {
        Ok(task) => journal_task_names_one(&task),
        Err(_) => Path::new(&format!("/proc/fs/jbd2/{device}-8")).is_dir(),
    }
}

/// What `/sys/fs/ext4/DEVICE/journal_task` holds when there is a journal: its thread's
/// pid (`<none>` without one).
#[cfg(any(target_os = "linux", test))]
fn journal_task_names_one(text: &str) -> bool {
    let t = text.trim();
    !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit())
}

/// Syncs a directory, so that the names made or removed in it survive a power loss.
/// Directories cannot be opened for sync on every platform; where they can, they are.
pub fn sync_dir(dir: &Path) {
    if let Ok(d) = File::open(dir) {
        let _ = d.sync_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_journal_task_is_a_pid_and_none_is_no_journal() {
        assert!(journal_task_names_one("1234\n"));
        assert!(!journal_task_names_one("<none>\n"));
        assert!(!journal_task_names_one(""));
        assert!(!journal_task_names_one("12ab\n"));
    }

    fn names(dir: &Path) -> Vec<String> {
        let mut v: Vec<String> = fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        v.sort();
        v
    }

    #[test]
    fn write_replaces_whole_and_leaves_no_temp_at_every_durability() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("f");
        for (i, durability) in [Durability::Durable, Durability::Whole, Durability::Cache]
            .into_iter()
            .enumerate()
        {
            write(&p, format!("v{i}").as_bytes(), durability).unwrap();
            assert_eq!(fs::read_to_string(&p).unwrap(), format!("v{i}"));
            assert_eq!(names(d.path()), ["f"]);
        }
    }

    #[test]
    fn a_failed_write_names_the_file_and_leaves_nothing() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("missing").join("f");
        let e = write(&p, b"x", Durability::Durable).unwrap_err();
        assert!(e.to_string().contains("missing/f"), "{e}");
        // A directory in the way of the rename: the temp is removed again.
        let dir = d.path().join("dir");
        fs::create_dir(&dir).unwrap();
        fs::write(dir.join("inside"), "x").unwrap();
        assert!(write(&dir, b"x", Durability::Cache).is_err());
        assert_eq!(names(d.path()), ["dir"]);
    }

    #[test]
    fn write_through_leaves_a_temp_it_did_not_make() {
        let d = tempfile::tempdir().unwrap();
        let (lock, p) = (d.path().join("r.lock"), d.path().join("r"));
        fs::write(&lock, "someone else's").unwrap();
        let e = write_through(&lock, &p, b"x", Durability::Cache).unwrap_err();
        assert!(
            matches!(&e, Error::Io { source, .. } if source.kind() == std::io::ErrorKind::AlreadyExists)
        );
        assert_eq!(fs::read_to_string(&lock).unwrap(), "someone else's");
        assert!(!p.exists());
        fs::remove_file(&lock).unwrap();
        write_through(&lock, &p, b"sha\n", Durability::Cache).unwrap();
        assert_eq!(fs::read_to_string(&p).unwrap(), "sha\n");
        assert_eq!(names(d.path()), ["r"]);
    }

    #[test]
    fn create_never_replaces() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("board.yaml");
        assert!(create(&p, b"first", Durability::Durable).unwrap());
        assert!(!create(&p, b"second", Durability::Durable).unwrap());
        assert_eq!(fs::read_to_string(&p).unwrap(), "first");
        assert_eq!(names(d.path()), ["board.yaml"]);
    }

    #[test]
    fn a_filled_temp_becomes_the_file_by_rename_or_link() {
        let d = tempfile::tempdir().unwrap();
        let (tmp, p) = (d.path().join(".a.tmp"), d.path().join("a"));
        fs::write(&tmp, "a leftover from a kill, longer than the new content").unwrap();
        fill_temp(&tmp, b"new").unwrap();
        assert_eq!(fs::read_to_string(&tmp).unwrap(), "new");
        rename_into_place(&tmp, &p, true).unwrap();
        assert_eq!(fs::read_to_string(&p).unwrap(), "new");
        fill_temp(&tmp, b"other").unwrap();
        let e = link_into_place(&tmp, &p, false).unwrap_err();
        assert_eq!(e.kind(), std::io::ErrorKind::AlreadyExists);
        assert_eq!(fs::read_to_string(&p).unwrap(), "new");
        let q = d.path().join("b");
        link_into_place(&tmp, &q, true).unwrap();
        assert_eq!(fs::read_to_string(&q).unwrap(), "other");
        assert_eq!(names(d.path()), ["a", "b"]);
    }
}
