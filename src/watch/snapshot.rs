//! What watch mode last saw of every tracked file, kept across restarts under
//! `.state/watch/`:
//!
//! - `snapshot`: per file its stat key (size, mtime, ctime, inode) and a content hash. A
//!   file whose stat key is unchanged is not read again (as git's index does); ctime is in
//!   the key because no tool can set it back, so `touch -m` cannot hide a change.
//! - `shadow/<path>`: the last content seen, the "before" of the next change. A hand edit
//!   is logged with its diff against it, also when it happened while the watcher was down.
//! - `cursor`: how far into log.yaml the watcher has read.
//!
//! The shadow is the truth about what has been handled: a change is handled once its new
//! content is in the shadow. The snapshot file only saves reading unchanged files.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use crate::board::Board;
use crate::error::{Error, Result};

/// The parts of a file's metadata that change whenever its content does.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct StatKey {
    pub size: u64,
    pub mtime_ns: i64,
    pub ctime_ns: i64,
    pub ino: u64,
    /// A symlink, FIFO, socket or device: never opened.
    pub special: bool,
}

impl StatKey {
    pub fn of(meta: &std::fs::Metadata) -> StatKey {
        #[cfg(unix)]
        {
            use std::os::unix::fs::MetadataExt;
            StatKey {
                size: meta.size(),
                mtime_ns: meta.mtime() * 1_000_000_000 + meta.mtime_nsec(),
                ctime_ns: meta.ctime() * 1_000_000_000 + meta.ctime_nsec(),
                ino: meta.ino(),
                special: !meta.file_type().is_file(),
            }
        }
        #[cfg(not(unix))]
        {
            let mtime_ns = meta
                .modified()
                .ok()
                .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
                .map_or(0, |d| d.as_nanos() as i64);
            StatKey {
                size: meta.len(),
                mtime_ns,
                ctime_ns: 0,
                ino: 0,
                special: !meta.file_type().is_file(),
            }
        }
    }

    /// The stat key of `path` itself (a symlink is not followed), or None if it is gone.
    pub fn read(path: &Path) -> Option<StatKey> {
        std::fs::symlink_metadata(path)
            .ok()
            .map(|m| StatKey::of(&m))
    }
}

/// A stable 64-bit content hash (FNV-1a): the same on every build, since it is stored.
pub fn hash(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in bytes {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

/// What the watcher knows of one file.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Known {
    pub stat: StatKey,
    pub hash: u64,
}

/// The in-memory index of every tracked file, by board-relative path.
#[derive(Debug, Default)]
pub struct Snapshot {
    pub files: HashMap<String, Known>,
    /// False until a snapshot exists on disk: the first start takes the board as it is.
    pub existed: bool,
}

/// Where watch mode keeps its state.
pub fn dir(board: &Board) -> PathBuf {
    crate::layout::watch_dir(&board.root)
}

fn snapshot_path(board: &Board) -> PathBuf {
    dir(board).join("snapshot")
}

fn cursor_path(board: &Board) -> PathBuf {
    dir(board).join("cursor")
}

fn own_path(board: &Board) -> PathBuf {
    dir(board).join("own")
}

/// The log entries the watcher wrote and has not read back yet, by (seq, origin): a seq is
/// a clock per clone, so another clone's entry (arriving by sync) may have the same seq.
pub type Own = std::collections::HashSet<(u64, String)>;

/// Saves the entries the watcher wrote and has not read back yet (one `SEQ ORIGIN` a line),
/// with the shadows of what it handled: at the next start those entries are known as its
/// own, and not taken for news about changes the shadows already hold (the cursor is saved
/// less often, and the watcher's own appends do not wake it to read past them).
pub fn save_own(board: &Board, own: &Own) -> Result<()> {
    let mut ids: Vec<&(u64, String)> = own.iter().collect();
    ids.sort_unstable();
    let text: String = ids
        .iter()
        .map(|(seq, origin)| format!("{seq} {origin}\n"))
        .collect();
    write_state(&own_path(board), text.as_bytes())
}

/// The entries [`save_own`] saved, above `read_up_to` (those at or below it were read
/// back). A line with a seq alone (saved before origins) has an empty origin.
pub fn load_own(board: &Board, read_up_to: u64) -> Own {
    let Some(text) = read_state(&own_path(board)) else {
        return Default::default();
    };
    text.lines()
        .filter_map(|line| {
            let mut words = line.split_whitespace();
            let seq: u64 = words.next()?.parse().ok()?;
            Some((seq, words.next().unwrap_or("").to_string()))
        })
        .filter(|(seq, _)| *seq > read_up_to)
        .collect()
}

/// Reads a state file as text, if it is a regular file: anything else (a FIFO would
/// block) is taken as missing.
pub fn read_state(path: &Path) -> Option<String> {
    read_if_regular(path).map(|bytes| String::from_utf8_lossy(&bytes).into_owned())
}

/// A file's bytes, if it is a regular file (never opened otherwise).
fn read_if_regular(path: &Path) -> Option<Vec<u8>> {
    if !std::fs::symlink_metadata(path).is_ok_and(|m| m.is_file()) {
        return None;
    }
    std::fs::read(path).ok()
}

pub fn shadow_path(board: &Board, rel: &str) -> PathBuf {
    dir(board).join("shadow").join(rel)
}

/// The mark that a file's deletion was handled: its shadow is gone, and the snapshot
/// (saved seldom) may still list the file. Without the mark, a watcher killed in between
/// could not tell a handled deletion from a shadow lost with a cleaned `.state/`, and
/// would log the deletion again.
fn gone_path(board: &Board, rel: &str) -> PathBuf {
    dir(board).join("gone").join(rel)
}

/// Was the deletion of `rel` handled since the snapshot was last saved?
pub fn deletion_handled(board: &Board, rel: &str) -> bool {
    std::fs::symlink_metadata(gone_path(board, rel)).is_ok_and(|m| m.is_file())
}

/// Forgets the marks of handled deletions: the snapshot just saved no longer lists those
/// files.
pub fn clear_deletions(board: &Board) {
    let _ = std::fs::remove_dir_all(dir(board).join("gone"));
}

/// Writes a state file whole or not at all (temp file and rename; no fsync: this is a
/// cache whose loss costs a re-read, never a wrong answer).
pub fn write_state(path: &Path, bytes: &[u8]) -> Result<()> {
    // The board is the directory holding `.state/`.
    let board = path
        .ancestors()
        .find(|a| a.file_name().is_some_and(|n| n == ".state"))
        .and_then(Path::parent);
    write_whole(board, path, bytes)
}

/// Writes a file of the board (a report under `control/`) whole or not at all, making
/// its directory if it is missing, never the board itself.
pub fn write_in_board(board: &Path, path: &Path, bytes: &[u8]) -> Result<()> {
    write_whole(Some(board), path, bytes)
}

fn write_whole(board: Option<&Path>, path: &Path, bytes: &[u8]) -> Result<()> {
    in_its_directory(board, path, || {
        crate::file::write(path, bytes, crate::file::Durability::Cache)
    })
}

/// Runs a write of `path`; if it fails, makes its directory and tries once more (state
/// directories appear on first use: a fresh clone has no .state/). Directories are made
/// one by one below `board`, never `board` itself: a board removed under the watcher
/// stays removed, even when it goes between a check and the write.
fn in_its_directory(
    board: Option<&Path>,
    path: &Path,
    write: impl Fn() -> Result<()>,
) -> Result<()> {
    if write().is_err() {
        let parent = path.parent().unwrap_or(Path::new("."));
        make_dirs_below(board, parent).map_err(|e| Error::io(parent, "create directory", e))?;
        write()?;
    }
    Ok(())
}

fn make_dirs_below(board: Option<&Path>, dir: &Path) -> std::io::Result<()> {
    let Some(rel) = board.and_then(|b| dir.strip_prefix(b).ok()) else {
        return std::fs::create_dir_all(dir);
    };
    let mut at = board.unwrap_or(Path::new(".")).to_path_buf();
    for part in rel.components() {
        at.push(part);
        match std::fs::create_dir(&at) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists && at.is_dir() => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

impl Snapshot {
    /// Loads the snapshot written by the last run (an unreadable one is an empty one:
    /// every file is then compared with its shadow).
    pub fn load(board: &Board) -> Snapshot {
        let Some(text) = read_state(&snapshot_path(board)) else {
            return Snapshot::default();
        };
        let mut files = HashMap::new();
        for line in text.lines() {
            if let Ok((rel, known)) = serde_json::from_str::<(String, Known)>(line) {
                files.insert(rel, known);
            }
        }
        Snapshot {
            files,
            existed: true,
        }
    }

    pub fn save(&self, board: &Board) -> Result<()> {
        let mut rels: Vec<&String> = self.files.keys().collect();
        rels.sort();
        let mut out = String::with_capacity(rels.len() * 96);
        for rel in rels {
            if let Ok(line) = serde_json::to_string(&(rel, &self.files[rel])) {
                out.push_str(&line);
                out.push('\n');
            }
        }
        write_state(&snapshot_path(board), out.as_bytes())
    }
}

/// The last content the watcher handled of `rel`, or None if it had none.
pub fn read_shadow(board: &Board, rel: &str) -> Option<Vec<u8>> {
    read_if_regular(&shadow_path(board, rel))
}

/// A shadow of the first start, written in place: until the snapshot is saved at its end,
/// an interrupted first start is a first start again, so no reader relies on it yet (and a
/// rename per file is what the first start of a big board spends its time on).
pub fn write_baseline_shadow(board: &Board, rel: &str, bytes: &[u8]) -> Result<()> {
    let path = shadow_path(board, rel);
    let root = board.root.as_path();
    in_its_directory(Some(root), &path, || {
        crate::file::write_in_place(&path, bytes)
    })
}

/// Records `content` as handled (None: the file is gone).
pub fn write_shadow(board: &Board, rel: &str, content: Option<&[u8]>) -> Result<()> {
    let path = shadow_path(board, rel);
    let gone = gone_path(board, rel);
    match content {
        Some(bytes) => {
            write_state(&path, bytes).or_else(|_| {
                // A directory became a file of the same name, or a file a directory: the
                // shadows of what was there before are in the way.
                make_way(board, &path);
                write_state(&path, bytes)
            })?;
            // Back again: no longer a handled deletion (a directory there holds the marks
            // of files that were under a directory of this name).
            let _ = std::fs::remove_file(&gone);
            Ok(())
        }
        None => {
            remove_shadow(board, &path)?;
            write_state(&gone, b"").or_else(|_| {
                make_way(board, &gone);
                write_state(&gone, b"")
            })
        }
    }
}

fn remove_shadow(board: &Board, path: &Path) -> Result<()> {
    match std::fs::remove_file(path) {
        Ok(()) => {
            // The shadow directories of a directory that is gone go too.
            let root = dir(board).join("shadow");
            for parent in path.ancestors().skip(1).take_while(|p| *p != root) {
                if std::fs::remove_dir(parent).is_err() {
                    break;
                }
            }
            Ok(())
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        // The shadows of the files under a directory of that name: theirs to go.
        Err(_) if path.is_dir() => Ok(()),
        Err(e) => Err(Error::io(path, "remove", e)),
    }
}

/// Removes what stands where the shadow `path` must go: a directory at its place, or a
/// file where one of its directories must be.
fn make_way(board: &Board, path: &Path) {
    if path.is_dir() {
        let _ = std::fs::remove_dir_all(path);
    }
    let root = dir(board);
    for parent in path.ancestors().skip(1).take_while(|p| *p != root) {
        if std::fs::symlink_metadata(parent).is_ok_and(|m| !m.is_dir()) {
            let _ = std::fs::remove_file(parent);
        }
    }
}

/// How far into log.yaml the watcher has read: a byte offset and the last seq there, and
/// enough to tell a log that only grew from one that was replaced (`git checkout`, `git
/// stash`, a merge), where the offset means nothing any more.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Cursor {
    pub offset: u64,
    pub seq: u64,
    /// A hash of the log's last bytes before `offset` (0: not known, from an older cursor).
    pub tail: u64,
    /// When the last entry read was written, in ms since the epoch (0: not known).
    pub last_at_ms: i64,
}

/// How many bytes before the offset the tail hash covers: the end of the last entry read,
/// with its seq, time and doc.
const TAIL: u64 = 256;

impl Cursor {
    pub fn load(board: &Board) -> Option<Cursor> {
        let text = read_state(&cursor_path(board))?;
        let mut parts = text.split_whitespace();
        let offset = parts.next()?.parse().ok()?;
        let seq = parts.next()?.parse().ok()?;
        let tail = parts.next().and_then(|p| p.parse().ok()).unwrap_or(0);
        let last_at_ms = parts.next().and_then(|p| p.parse().ok()).unwrap_or(0);
        Some(Cursor {
            offset,
            seq,
            tail,
            last_at_ms,
        })
    }

    pub fn save(&self, board: &Board) -> Result<()> {
        write_state(
            &cursor_path(board),
            format!(
                "{} {} {} {}\n",
                self.offset, self.seq, self.tail, self.last_at_ms
            )
            .as_bytes(),
        )
    }

    /// Moves the cursor to `offset` of the log as it is now.
    pub fn advance(&mut self, board: &Board, offset: u64) {
        self.offset = offset;
        self.tail = tail_hash(board, offset).unwrap_or(0);
    }

    /// Does the log still hold, just before the offset, what it held when the cursor was
    /// put there? No when log.yaml was cut or replaced.
    pub fn fits(&self, board: &Board, len: u64) -> bool {
        if len < self.offset {
            return false;
        }
        self.tail == 0 || tail_hash(board, self.offset) == Some(self.tail)
    }
}

fn tail_hash(board: &Board, offset: u64) -> Option<u64> {
    use std::io::{Read, Seek, SeekFrom};
    if offset == 0 {
        return Some(hash(b""));
    }
    let start = offset.saturating_sub(TAIL);
    let mut file = std::fs::File::open(board.log_path()).ok()?;
    file.seek(SeekFrom::Start(start)).ok()?;
    let mut buf = Vec::new();
    file.take(offset - start).read_to_end(&mut buf).ok()?;
    (buf.len() as u64 == offset - start).then(|| hash(&buf))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hash_is_fnv1a() {
        // Reference values of 64-bit FNV-1a.
        assert_eq!(hash(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(hash(b"a"), 0xaf63_dc4c_8601_ec8c);
        assert_ne!(hash(b"status: done\n"), hash(b"status: dona\n"));
    }
}

#[cfg(test)]
mod write_tests {
    use super::*;

    #[test]
    fn a_write_makes_missing_directories_below_the_board_never_the_board() {
        let dir = tempfile::tempdir().unwrap();
        let board = dir.path().join(".tavern");
        std::fs::create_dir(&board).unwrap();
        let report = board.join("control/schedule.md");
        write_in_board(&board, &report, b"x").unwrap();
        assert_eq!(std::fs::read(&report).unwrap(), b"x");
        let state = board.join(".state/watch/cursor");
        write_state(&state, b"1").unwrap();
        assert_eq!(std::fs::read(&state).unwrap(), b"1");
        // Gone: nothing is made where it was.
        std::fs::remove_dir_all(&board).unwrap();
        assert!(write_in_board(&board, &report, b"y").is_err());
        assert!(write_state(&state, b"2").is_err());
        assert!(!board.exists());
    }
}
