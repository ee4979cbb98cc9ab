//! What watch mode last saw of every tracked file, kept across restarts under
//! `.state/watch/`:
//!
//! - per file its stat key (size, mtime, ctime, inode), a content hash, and the last
//!   content handled (its shadow: the "before" of the next change, so a hand edit is logged
//!   with its diff, also when it happened while the watcher was down), all in a compressed
//!   pack and an index of it ([`super::pack`]), not a copy of each file. A file whose stat
//!   key is unchanged is not read again (as git's index does); ctime is in the key because
//!   no tool can set it back, so `touch -m` cannot hide a change.
//! - `cursor`: how far into log.yaml the watcher has read.
//!
//! The pack is the truth about what has been handled: a change is handled once its record
//! is in the pack.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

use super::files_index::Sorted;
use super::pack::{self, Batch, Entries, Index, Kind, Loc, Pack, Rec};
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

    /// The stat key of what `statat` (or `fstat`) gave: the same as [`StatKey::of`].
    // The stat fields' types differ between platforms (u32, i64, …): cast each.
    #[allow(clippy::unnecessary_cast)]
    pub fn of_stat(st: &rustix::fs::Stat) -> StatKey {
        StatKey {
            size: st.st_size as u64,
            mtime_ns: st.st_mtime as i64 * 1_000_000_000 + st.st_mtime_nsec as i64,
            ctime_ns: st.st_ctime as i64 * 1_000_000_000 + st.st_ctime_nsec as i64,
            ino: st.st_ino as u64,
            special: rustix::fs::FileType::from_raw_mode(st.st_mode)
                != rustix::fs::FileType::RegularFile,
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
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Known {
    pub stat: StatKey,
    pub hash: u64,
    /// Where its last handled content is kept (None: none is, or it was lost).
    pub shadow: Option<Loc>,
    /// Its stat key was taken within [`RACY_NS`] of the file's last change: a change in the
    /// same tick of the file system's clock could follow unseen, so a start reads it again
    /// whatever its stat key says.
    pub racy: bool,
}

/// How close to its last change (ctime or mtime) a file's stat key may be taken for it to
/// be trusted at the next start: git's racy-timestamp rule, with room for the coarsest
/// file-system clocks (FAT's two seconds).
pub const RACY_NS: i64 = 3_000_000_000;

/// Could the file change again without its stat key changing? Yes when its last change
/// is within [`RACY_NS`] of now (or ahead of it: a clock set back, `touch -d` into the
/// future). Called right after the stat key is taken: a later change in the same tick
/// as its ctime falls within the window.
pub fn racy(stat: &StatKey) -> bool {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(i64::MAX, |d| d.as_nanos() as i64);
    stat.ctime_ns.max(stat.mtime_ns) > now.saturating_sub(RACY_NS)
}

/// Every tracked file by board-relative path. An index map: its entries in one vector and
/// a table of 8-byte indices, not a table of entries half empty (at a million files it
/// takes less than half the memory of a hash map).
pub type Files = indexmap::IndexMap<Box<str>, Known>;

/// A file's entry in the previous format's snapshot (JSON lines), read once to migrate it.
#[derive(serde::Deserialize)]
struct LegacyKnown {
    stat: StatKey,
    hash: u64,
}

/// The in-memory index of every tracked file, by board-relative path, and the pack that
/// keeps their shadows.
#[derive(Debug, Default)]
pub struct Snapshot {
    /// Every file's entry; while `base` is there, only those changed, or looked up, since
    /// it was read.
    files: Files,
    /// The index file as read, its entries looked up in place: a start that looks at a
    /// few files (those an index keeper's journal names) does not build the map of every
    /// file. Built into `files` (see [`Snapshot::whole`]) once something needs them all.
    base: Option<Sorted>,
    /// Entries of `base` forgotten since it was read.
    forgotten: HashSet<Box<str>>,
    /// The index file is of the previous format: written again at the next save.
    old_index: bool,
    /// False until a snapshot exists on disk: the first start takes the board as it is.
    pub existed: bool,
    /// Files whose entry changed since it was last recorded in the pack.
    dirty: HashSet<String>,
    pack: Pack,
    /// The first start's frame being filled.
    baseline: Batch,
}

/// How the first start reads a file: its stat key and the content to keep (None: nothing
/// to keep, as for a symlink), or None if it is gone.
pub type ReadBaseline<'a> = dyn Fn(&Path) -> Option<(StatKey, Option<Vec<u8>>)> + Sync + 'a;

/// A file of the first start: its entry, with its content (if any: None for a symlink)
/// added to `batch` as a content record. The serial and the threaded first start share it.
fn baseline_entry(batch: &mut Batch, rel: &str, stat: StatKey, content: Option<&[u8]>) -> Known {
    let known = Known {
        stat,
        hash: hash(content.unwrap_or(b"")),
        shadow: None,
        racy: racy(&stat),
    };
    if let Some(content) = content {
        push_content(batch, rel, &known, content);
    }
    known
}

/// Adds `content` to `batch` as the shadow of `rel`, whose entry is `known`.
fn push_content(batch: &mut Batch, rel: &str, known: &Known, content: &[u8]) {
    batch.push(&Rec {
        kind: Kind::Content,
        rel,
        stat: known.stat,
        racy: known.racy,
        hash: known.hash,
        content,
    });
}

/// Where watch mode keeps its state.
pub fn dir(board: &Board) -> PathBuf {
    crate::layout::watch_dir(&board.root)
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
/// back). A line with a seq alone (saved before origins) has an empty origin. The flag
/// says whether the file holds exactly those entries (or is missing and they are none):
/// if not, the next save must rewrite it even when the entries did not change.
pub fn load_own(board: &Board, read_up_to: u64) -> (Own, bool) {
    let Some(text) = read_state(&own_path(board)) else {
        return (Own::default(), true);
    };
    let mut lines = 0;
    let own: Own = text
        .lines()
        .inspect(|_| lines += 1)
        .filter_map(|line| {
            let mut words = line.split_whitespace();
            let seq: u64 = words.next()?.parse().ok()?;
            Some((seq, words.next().unwrap_or("").to_string()))
        })
        .filter(|(seq, _)| *seq > read_up_to)
        .collect();
    let exact = own.len() == lines;
    (own, exact)
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

/// The previous format's mark that a file's deletion was handled.
fn legacy_gone_path(board: &Board, rel: &str) -> PathBuf {
    dir(board).join("gone").join(rel)
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

/// Past this many bytes of frames after what the index file covers (or a quarter of the
/// pack, if more), the index is written again: a start replays the frames after it.
const JOURNAL_MAX: u64 = 1 << 20;
/// A pack is rewritten once its dead records outweigh the live ones by this much.
const COMPACT_SLACK: u64 = 8 << 20;

impl Snapshot {
    pub fn get(&self, rel: &str) -> Option<Known> {
        if let Some(k) = self.files.get(rel) {
            return Some(*k);
        }
        match &self.base {
            Some(base) if !self.forgotten.contains(rel) => base.get(rel),
            _ => None,
        }
    }

    pub fn contains(&self, rel: &str) -> bool {
        self.get(rel).is_some()
    }

    /// How many files it knows.
    pub fn count(&self) -> usize {
        let Some(base) = &self.base else {
            return self.files.len();
        };
        // Forgotten entries are of the base and not in `files`; entries in `files` are
        // counted there unless the base has them too.
        let added = self
            .files
            .keys()
            .filter(|rel| base.get(rel).is_none())
            .count();
        base.len() - self.forgotten.len() + added
    }

    /// Every file it knows, with its entry, for a stat pass.
    pub fn files(&mut self) -> &Files {
        self.whole()
    }

    /// Every file it knows.
    pub fn paths(&mut self) -> impl Iterator<Item = &str> {
        self.whole().keys().map(|k| &**k)
    }

    /// Every entry in `files`: the base's read into it, once.
    fn whole(&mut self) -> &mut Files {
        if let Some(base) = self.base.take() {
            let mut all = base.all();
            for rel in self.forgotten.drain() {
                all.swap_remove(&rel);
            }
            for (rel, k) in self.files.drain(..) {
                all.insert(rel, k);
            }
            self.files = all;
        }
        &mut self.files
    }

    /// A file's entry, to change in place.
    fn entry_mut(&mut self, rel: &str) -> Option<&mut Known> {
        if !self.files.contains_key(rel) {
            let k = self.get(rel)?;
            self.files.insert(rel.into(), k);
        }
        self.files.get_mut(rel)
    }

    /// Records a file's stat key and content hash (its shadow is what [`Snapshot::commit`]
    /// writes).
    pub fn set(&mut self, rel: &str, stat: StatKey, hash: u64) {
        let shadow = self.get(rel).and_then(|k| k.shadow);
        let known = Known {
            stat,
            hash,
            shadow,
            racy: racy(&stat),
        };
        if self.get(rel) != Some(known) {
            self.put(rel, known);
            self.dirty.insert(rel.to_string());
        }
    }

    /// Forgets a file. True if it was known.
    pub fn remove(&mut self, rel: &str) -> bool {
        let known = self.contains(rel);
        if known {
            self.forget(rel);
            self.dirty.insert(rel.to_string());
        }
        known
    }

    /// Loads what the last run wrote: the index file and the frames appended after it. A
    /// snapshot of the previous format (a shadow file per file) is migrated once.
    pub fn load(board: &Board) -> Snapshot {
        let dir = dir(board);
        if let Some((mut pack, index)) = pack::read_index(&dir) {
            let mut s = Snapshot {
                existed: true,
                ..Snapshot::default()
            };
            match index {
                Index::Sorted(base) => s.base = Some(base),
                Index::Whole(files) => {
                    s.files = files;
                    s.old_index = true;
                }
            }
            pack::replay(&dir, &mut pack, |r, frame| pack::apply(&mut s, r, frame));
            if pack.lost {
                for k in s.whole().values_mut() {
                    k.shadow = None;
                }
            }
            s.pack = pack;
            return s;
        }
        Snapshot::migrate(board).unwrap_or_default()
    }

    /// The last content the watcher handled of `rel`, or None if it has none.
    pub fn read_shadow(&self, board: &Board, rel: &str) -> Option<Vec<u8>> {
        let loc = self.get(rel)?.shadow?;
        self.pack.read(&dir(board), loc, rel)
    }

    /// Starts over: the first start records every file as it is.
    pub fn begin_baseline(&mut self, board: &Board) {
        pack::remove_other_packs(&dir(board), None);
        self.files.clear();
        self.base = None;
        self.forgotten.clear();
        self.dirty.clear();
        self.pack = Pack::new(1);
        self.baseline = Batch::default();
    }

    /// A file of the first start: its stat and content (None: nothing to keep, as for a
    /// symlink).
    pub fn add_baseline(
        &mut self,
        board: &Board,
        rel: &str,
        stat: StatKey,
        content: Option<&[u8]>,
    ) -> Result<()> {
        let known = baseline_entry(&mut self.baseline, rel, stat, content);
        self.files.insert(rel.into(), known);
        if content.is_some() && self.baseline.raw_len() >= pack::FRAME_TARGET {
            self.flush_baseline(board)?;
        }
        Ok(())
    }

    /// Every file of the first start, read, hashed and compressed on several threads
    /// (frames appended in the order they are done): `read` gives a file's stat key and
    /// the content to keep (None: nothing to keep, as for a symlink), or None if it is
    /// gone.
    pub fn add_baseline_all(
        &mut self,
        board: &Board,
        files: &[(String, PathBuf)],
        read: &ReadBaseline<'_>,
    ) -> Result<()> {
        /// What a thread made of some files: a frame (if any content), the contents'
        /// places in it, and every file's entry.
        struct Part {
            frame: Option<(Vec<u8>, usize)>,
            batch: Batch,
            entries: Vec<(String, Known)>,
        }
        let threads = std::thread::available_parallelism()
            .map_or(1, |n| n.get())
            .clamp(1, 8);
        let per = files.len().div_ceil(threads).max(1);
        let (tx, rx) = std::sync::mpsc::sync_channel::<Part>(2 * threads);
        std::thread::scope(|s| {
            for chunk in files.chunks(per) {
                let tx = tx.clone();
                s.spawn(move || {
                    let mut part = Part {
                        frame: None,
                        batch: Batch::default(),
                        entries: Vec::new(),
                    };
                    let send = |part: &mut Part| {
                        let full = std::mem::replace(
                            part,
                            Part {
                                frame: None,
                                batch: Batch::default(),
                                entries: Vec::new(),
                            },
                        );
                        let frame = (!full.batch.is_empty()).then(|| full.batch.encode());
                        tx.send(Part { frame, ..full }).is_ok()
                    };
                    for (rel, path) in chunk {
                        let Some((stat, content)) = read(path) else {
                            continue;
                        };
                        let known = baseline_entry(&mut part.batch, rel, stat, content.as_deref());
                        part.entries.push((rel.clone(), known));
                        if part.batch.raw_len() >= pack::FRAME_TARGET && !send(&mut part) {
                            return;
                        }
                    }
                    send(&mut part);
                });
            }
            drop(tx);
            let dir = dir(board);
            // By value: an error below drops the receiver, so that no thread waits to send.
            for part in rx {
                let frame = match &part.frame {
                    Some((bytes, raw_len)) => {
                        Some(self.append_frame(board, &dir, bytes, *raw_len)?)
                    }
                    None => None,
                };
                for (rel, known) in part.entries {
                    self.files.insert(rel.into(), known);
                }
                if let Some(frame) = frame {
                    for (rel, loc) in pack::placed(&part.batch, frame) {
                        if let Some(k) = self.files.get_mut(rel) {
                            k.shadow = Some(loc);
                        }
                    }
                }
            }
            Ok(())
        })
    }

    /// Appends a frame compressed already, making `.state/watch/` if it is missing.
    fn append_frame(
        &mut self,
        board: &Board,
        dir: &Path,
        frame: &[u8],
        raw_len: usize,
    ) -> Result<u64> {
        match self.pack.append_encoded(dir, frame, raw_len) {
            Ok(at) => Ok(at),
            Err(_) => {
                make_dirs_below(Some(&board.root), dir)
                    .map_err(|e| Error::io(dir, "create directory", e))?;
                let path = pack::pack_path(dir, self.pack.generation);
                self.pack
                    .append_encoded(dir, frame, raw_len)
                    .map_err(|e| Error::io(&path, "write", e))
            }
        }
    }

    fn flush_baseline(&mut self, board: &Board) -> Result<()> {
        let batch = std::mem::take(&mut self.baseline);
        self.append(board, &batch)?;
        Ok(())
    }

    /// Ends the first start: from now on the board is known.
    pub fn end_baseline(&mut self, board: &Board) -> Result<()> {
        self.flush_baseline(board)?;
        self.dirty.clear();
        self.write_index(board)?;
        self.existed = true;
        Ok(())
    }

    /// Appends a batch and points its files at their records.
    fn append(&mut self, board: &Board, batch: &Batch) -> Result<()> {
        if batch.is_empty() {
            return Ok(());
        }
        let dir = dir(board);
        let path = pack::pack_path(&dir, self.pack.generation);
        let frame = match self.pack.append(&dir, batch) {
            Ok(frame) => frame,
            Err(_) => {
                make_dirs_below(Some(&board.root), &dir)
                    .map_err(|e| Error::io(&dir, "create directory", e))?;
                self.pack
                    .append(&dir, batch)
                    .map_err(|e| Error::io(&path, "write", e))?
            }
        };
        for (rel, loc) in pack::placed(batch, frame) {
            if let Some(k) = self.entry_mut(rel) {
                k.shadow = Some(loc);
            }
        }
        Ok(())
    }

    /// The pack was removed or cut under the watcher (`.state/` cleaned): what it held is
    /// lost; a new generation starts, and the index says so at once.
    fn renew_pack_if_lost(&mut self, board: &Board) -> Result<()> {
        let dir = dir(board);
        if !self.pack.lost && (self.pack.len == 0 || self.pack.present(&dir)) {
            return Ok(());
        }
        for k in self.whole().values_mut() {
            k.shadow = None;
        }
        self.pack = Pack::new(self.pack.generation + 1);
        pack::remove_other_packs(&dir, None);
        self.write_index(board)
    }

    /// Records a handled batch in one frame: the shadows staged (None: the file is gone,
    /// or has no content to keep) and every entry changed since the last frame. Nothing is
    /// recorded if it fails: the batch is then handled again.
    pub fn commit(
        &mut self,
        board: &Board,
        staged: &HashMap<String, Option<Vec<u8>>>,
    ) -> Result<()> {
        if staged.is_empty() && self.dirty.is_empty() {
            return Ok(());
        }
        self.renew_pack_if_lost(board)?;
        let mut batch = Batch::default();
        for (rel, content) in staged {
            let known = self.get(rel);
            match (content, known) {
                (Some(bytes), known) => {
                    let k = known.unwrap_or(Known {
                        stat: StatKey::default(),
                        hash: hash(bytes),
                        shadow: None,
                        racy: false,
                    });
                    if known.is_none() {
                        self.put(rel, k);
                    }
                    push_content(&mut batch, rel, &k, bytes);
                }
                (None, Some(k)) => batch.push(&Rec {
                    kind: Kind::NoShadow,
                    rel,
                    stat: k.stat,
                    racy: k.racy,
                    hash: k.hash,
                    content: b"",
                }),
                (None, None) => batch.push(&Rec {
                    kind: Kind::Gone,
                    rel,
                    stat: StatKey::default(),
                    racy: false,
                    hash: 0,
                    content: b"",
                }),
            }
        }
        for rel in &self.dirty {
            if staged.contains_key(rel) {
                continue;
            }
            let rec = match self.get(rel) {
                Some(k) => Rec {
                    kind: Kind::Known,
                    rel,
                    stat: k.stat,
                    racy: k.racy,
                    hash: k.hash,
                    content: b"",
                },
                None => Rec {
                    kind: Kind::Gone,
                    rel,
                    stat: StatKey::default(),
                    racy: false,
                    hash: 0,
                    content: b"",
                },
            };
            batch.push(&rec);
        }
        self.append(board, &batch)?;
        for (rel, content) in staged {
            if content.is_none()
                && let Some(k) = self.entry_mut(rel)
            {
                k.shadow = None;
            }
        }
        self.dirty.clear();
        Ok(())
    }

    /// Records the entries changed since the last frame (nothing may be staged), then
    /// writes the index file when the frames after it have grown, or rewrites the pack
    /// when it is mostly dead records.
    pub fn save(&mut self, board: &Board) -> Result<()> {
        self.commit(board, &HashMap::new())?;
        let dir = dir(board);
        let journal_grown =
            self.pack.len - self.pack.covered > JOURNAL_MAX.max(self.pack.covered / 4);
        if self.base.is_some() && !journal_grown {
            // Read in place and little recorded since: nothing to write yet. (A pack
            // worth compacting has grown past the index by far more than this first.)
            return Ok(());
        }
        let live: u64 = self
            .whole()
            .values()
            .filter_map(|k| k.shadow)
            .map(|l| u64::from(l.len.get()))
            .sum();
        if self.pack.raw_total > 2 * live + COMPACT_SLACK {
            self.whole();
            let next = pack::compact(&dir, &self.pack, &mut self.files)?;
            self.pack = next;
            self.write_index(board)?;
            pack::remove_other_packs(&dir, Some(self.pack.generation));
        } else if journal_grown || self.old_index {
            self.write_index(board)?;
        }
        Ok(())
    }

    fn write_index(&mut self, board: &Board) -> Result<()> {
        let dir = dir(board);
        self.whole();
        pack::write_index(&dir, &self.pack, &self.files, write_state)?;
        self.pack.covered = self.pack.len;
        self.old_index = false;
        Ok(())
    }

    /// The previous format: a JSON line per file in `snapshot`, a copy of each file's last
    /// handled content under `shadow/`, and marks of handled deletions under `gone/`.
    /// Moved into the pack once, then removed.
    fn migrate(board: &Board) -> Option<Snapshot> {
        let legacy_path = dir(board).join("snapshot");
        let text = read_state(&legacy_path)?;
        let mut legacy: HashMap<String, LegacyKnown> = text
            .lines()
            .filter_map(|line| serde_json::from_str::<(String, LegacyKnown)>(line).ok())
            .collect();
        let mut s = Snapshot::default();
        s.begin_baseline(board);
        // Every shadow, also those of files handled after the snapshot was last saved.
        let root = dir(board).join("shadow");
        let walker = walkdir::WalkDir::new(&root)
            .follow_links(false)
            .sort_by_file_name();
        for entry in walker.into_iter().flatten() {
            if !entry.file_type().is_file() {
                continue;
            }
            let Some(rel) = entry
                .path()
                .strip_prefix(&root)
                .ok()
                .and_then(|r| r.to_str())
                .map(|r| r.replace(std::path::MAIN_SEPARATOR, "/"))
            else {
                continue;
            };
            let Some(bytes) = read_if_regular(entry.path()) else {
                continue;
            };
            // A stat that no longer matches makes the file looked at again: compared with
            // this content, not taken as unchanged.
            let stat = legacy.remove(&rel).map_or(StatKey::default(), |k| k.stat);
            s.add_baseline(board, &rel, stat, Some(&bytes)).ok()?;
        }
        for (rel, k) in legacy {
            if std::fs::symlink_metadata(legacy_gone_path(board, &rel)).is_ok_and(|m| m.is_file()) {
                // Its deletion was handled.
                continue;
            }
            s.files.insert(
                rel.into(),
                Known {
                    stat: k.stat,
                    hash: k.hash,
                    shadow: None,
                    racy: false,
                },
            );
        }
        s.end_baseline(board).ok()?;
        let _ = std::fs::remove_file(&legacy_path);
        let _ = std::fs::remove_dir_all(&root);
        let _ = std::fs::remove_dir_all(dir(board).join("gone"));
        Some(s)
    }
}

impl Snapshot {
    fn put(&mut self, rel: &str, known: Known) {
        if self.base.is_some() {
            self.forgotten.remove(rel);
        }
        self.files.insert(rel.into(), known);
    }

    fn forget(&mut self, rel: &str) {
        self.files.swap_remove(rel);
        if let Some(base) = &self.base
            && base.get(rel).is_some()
        {
            self.forgotten.insert(rel.into());
        }
    }
}

/// Records replayed from the pack at a start change the entries as they are looked up.
impl Entries for Snapshot {
    fn known(&self, rel: &str) -> Option<Known> {
        self.get(rel)
    }
    fn put(&mut self, rel: &str, known: Known) {
        Snapshot::put(self, rel, known);
    }
    fn forget(&mut self, rel: &str) {
        Snapshot::forget(self, rel);
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

#[cfg(test)]
mod in_place_tests {
    use super::*;

    fn stat(n: u64) -> StatKey {
        StatKey {
            size: n,
            mtime_ns: 1_000 + n as i64,
            ctime_ns: 2_000 + n as i64,
            ino: n,
            special: false,
        }
    }

    fn rel(i: u64) -> String {
        format!("tasks/t-{i}.md")
    }

    /// What an entry says, and its shadow's content (the place of a shadow depends on the
    /// order of records in a frame).
    fn said(s: &Snapshot, board: &Board, r: &str) -> Option<(StatKey, u64, bool, Option<Vec<u8>>)> {
        let k = s.get(r)?;
        Some((k.stat, k.hash, k.racy, s.read_shadow(board, r)))
    }

    fn same(lazy: &Snapshot, lb: &Board, full: &Snapshot, fb: &Board, what: &str) {
        for i in 0..260 {
            assert_eq!(
                said(lazy, lb, &rel(i)),
                said(full, fb, &rel(i)),
                "{what}: {}",
                rel(i)
            );
        }
        assert_eq!(lazy.count(), full.count(), "{what}: count");
    }

    /// Every path a stat pass would be given, sorted.
    fn paths(s: &mut Snapshot) -> Vec<String> {
        let mut all: Vec<String> = s.files().keys().map(|r| r.to_string()).collect();
        all.sort();
        all
    }

    /// A new board, in a directory that lives as long as the first value.
    fn new_board() -> (tempfile::TempDir, Board) {
        let dir = tempfile::tempdir().unwrap();
        crate::board::init(dir.path()).unwrap();
        let board = Board::open(&dir.path().join(".tavern")).unwrap();
        (dir, board)
    }

    /// A first start's snapshot of `n` files, `content(i)` each, saved on `board`.
    fn first_start(board: &Board, n: u64, content: impl Fn(u64) -> Vec<u8>) -> Snapshot {
        let mut first = Snapshot::default();
        first.begin_baseline(board);
        for i in 0..n {
            first
                .add_baseline(board, &rel(i), stat(i), Some(&content(i)))
                .unwrap();
        }
        first.end_baseline(board).unwrap();
        first
    }

    fn board_with_state_of(from: &Board) -> (tempfile::TempDir, Board) {
        let (dir, board) = new_board();
        std::fs::create_dir_all(super::dir(&board)).unwrap();
        for e in std::fs::read_dir(super::dir(from)).unwrap().flatten() {
            std::fs::copy(e.path(), super::dir(&board).join(e.file_name())).unwrap();
        }
        (dir, board)
    }

    /// Through a previous run's frames, then this run's changes, an index read in place
    /// answers every lookup as the map of every entry does, counts the same, and becomes
    /// that map when something needs every entry.
    #[test]
    fn an_index_read_in_place_answers_as_the_whole_map_does() {
        let (_dir, board) = new_board();
        let mut first = first_start(&board, 200, |i| format!("content {i}\n").into_bytes());
        // A previous run's frames after the index: an edit, a deletion, a new file.
        first.set(&rel(3), stat(1003), 33);
        assert!(first.remove(&rel(4)));
        let staged: HashMap<String, Option<Vec<u8>>> = [
            (rel(210), Some(b"new\n".to_vec())),
            (rel(5), Some(b"edited\n".to_vec())),
        ]
        .into();
        first.set(&rel(210), stat(210), hash(b"new\n"));
        first.commit(&board, &staged).unwrap();

        // Two copies of that state: one read in place, one built whole at once.
        let (_other, fb) = board_with_state_of(&board);
        let mut lazy = Snapshot::load(&board);
        let mut full = Snapshot::load(&fb);
        full.whole();
        assert!(lazy.base.is_some() && full.base.is_none());
        same(&lazy, &board, &full, &fb, "after the replay");
        assert_eq!(lazy.get(&rel(3)).unwrap().stat, stat(1003));
        assert_eq!(lazy.get(&rel(4)), None);
        assert_eq!(
            lazy.read_shadow(&board, &rel(5)).unwrap(),
            b"edited\n".to_vec()
        );
        assert_eq!(lazy.read_shadow(&board, &rel(7)).unwrap(), b"content 7\n");

        // This run: the same changes to both.
        for (s, board) in [(&mut lazy, &board), (&mut full, &fb)] {
            s.set(&rel(8), stat(1008), 88);
            assert!(s.remove(&rel(9)));
            assert!(!s.remove(&rel(9)));
            assert!(s.remove(&rel(10)));
            s.set(&rel(10), stat(1010), 1010);
            assert!(s.remove(&rel(210)));
            s.set(&rel(220), stat(220), 220);
            let staged: HashMap<String, Option<Vec<u8>>> =
                [(rel(11), Some(b"eleven\n".to_vec())), (rel(12), None)].into();
            s.commit(board, &staged).unwrap();
        }
        same(&lazy, &board, &full, &fb, "after this run's changes");
        assert_eq!(
            lazy.read_shadow(&board, &rel(11)).unwrap(),
            b"eleven\n".to_vec()
        );
        assert_eq!(lazy.read_shadow(&board, &rel(12)), None);

        // Saved (in place: nothing rewritten), then each read again: still the same.
        lazy.save(&board).unwrap();
        full.save(&fb).unwrap();
        let mut again = Snapshot::load(&board);
        let mut again_full = Snapshot::load(&fb);
        again_full.whole();
        assert!(again.base.is_some());
        same(&again, &board, &again_full, &fb, "read again");
        assert_eq!(paths(&mut again), paths(&mut again_full));
        assert!(again.base.is_none(), "built into the map");
        same(&again, &board, &again_full, &fb, "built whole");
        assert_eq!(paths(&mut lazy), paths(&mut full));
        assert!(lazy.base.is_none());
        same(&lazy, &board, &full, &fb, "built whole");
    }

    /// The previous format of the index file (entries in any order, no table), as the
    /// tavern before wrote it.
    fn old_index(pack: &Pack, files: &Files) -> Vec<u8> {
        let mut out = b"tavern-watch-files 1\n".to_vec();
        for n in [
            pack.generation,
            pack.len,
            pack.raw_total,
            files.len() as u64,
        ] {
            out.extend_from_slice(&n.to_le_bytes());
        }
        let sorted = crate::watch::files_index::encode(
            crate::watch::files_index::Covers {
                generation: 0,
                covered: 0,
                raw_total: 0,
            },
            files,
        );
        // The same entry encoding: the sorted file's entries, between header and table.
        let header = crate::watch::files_index::MAGIC.len() + 32;
        let table = sorted.len() - 4 - 8 * files.len();
        out.extend_from_slice(&sorted[header..table]);
        let crc = crc32fast::hash(&out);
        out.extend_from_slice(&crc.to_le_bytes());
        out
    }

    /// An index file of the previous format is read whole, once, and written in the
    /// sorted format at the next save; then it is read in place.
    #[test]
    fn an_index_of_the_previous_format_is_read_whole_and_written_sorted() {
        let (_dir, board) = new_board();
        let first = first_start(&board, 50, |_| b"x\n".to_vec());
        let index = pack::index_path(&super::dir(&board));
        std::fs::write(&index, old_index(&first.pack, &first.files)).unwrap();

        let mut old = Snapshot::load(&board);
        assert!(old.base.is_none() && old.old_index);
        assert_eq!(old.count(), 50);
        assert_eq!(old.get(&rel(7)), first.get(&rel(7)));
        old.save(&board).unwrap();
        assert!(
            std::fs::read(&index)
                .unwrap()
                .starts_with(crate::watch::files_index::MAGIC)
        );
        let new = Snapshot::load(&board);
        assert!(new.base.is_some() && !new.old_index);
        assert_eq!(new.count(), 50);
        for i in 0..50 {
            assert_eq!(new.get(&rel(i)), first.get(&rel(i)));
            assert_eq!(new.read_shadow(&board, &rel(i)).unwrap(), b"x\n");
        }
    }
}
