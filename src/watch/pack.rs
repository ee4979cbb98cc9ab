//! The watcher's memory of every tracked file, in two files under `.state/watch/` instead
//! of a copy of the board:
//!
//! - `shadows-<gen>`: an append-only pack of frames, each a batch of records compressed
//!   together (LZ4) and checked by a CRC-32. A record is one file's new state: its last
//!   handled content (the "before" of the next hand edit's diff), its stat key and content
//!   hash without a change of content, its deletion, or that it has no content to keep (a
//!   symlink, a misnamed file). A batch the watcher handles is one frame appended, so the
//!   pack is also the journal of what was handled.
//! - `files`: every file's stat key, hash and where its content is in the pack, as of a
//!   length of the pack. Written whole (temp file and rename) only now and then; a start
//!   reads it and replays the frames written after that length, so it costs what changed
//!   since, not a read of the shadows.
//!
//! A pack whose dead records outweigh the live ones is rewritten into the next generation.
//! A frame torn by a kill ends the journal there: its batch was not recorded as handled,
//! and is handled again (never lost). Nothing here is fsynced: it is runtime state, as the
//! shadows were.

use std::collections::HashMap;
use std::io::{Read, Seek, SeekFrom, Write};
use std::num::NonZeroU32;
use std::path::{Path, PathBuf};

use super::files_index::{self, Covers, Sorted};
use super::snapshot::{Files, Known, StatKey};
use crate::error::{Error, Result};

const FRAME_MAGIC: &[u8; 4] = b"TWS1";
const FRAME_HEADER: usize = 16;
const INDEX_MAGIC: &[u8] = b"tavern-watch-files 1\n";
/// A frame of the first start (or a compaction) holds about this much before it is
/// compressed: big enough to compress well, small enough to decompress for one read.
pub const FRAME_TARGET: usize = 128 * 1024;

/// Where a file's last handled content is: the frame's offset in the pack, and the record's
/// offset and length in the frame once decompressed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Loc {
    pub frame: u64,
    pub rec: u32,
    /// Never 0 (a record has a header), so that an `Option<Loc>` takes no more room.
    pub len: NonZeroU32,
}

/// What a record says of its file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// Its content (kept as the shadow), stat key and hash.
    Content = 0,
    /// It is gone: forgotten.
    Gone = 1,
    /// Its stat key and hash; its content is what the shadow already holds.
    Known = 2,
    /// Its stat key and hash, and no content kept (a symlink, a misnamed file).
    NoShadow = 3,
}

impl Kind {
    fn of(b: u8) -> Option<Kind> {
        Some(match b {
            0 => Kind::Content,
            1 => Kind::Gone,
            2 => Kind::Known,
            3 => Kind::NoShadow,
            _ => return None,
        })
    }
}

/// One record being written.
pub struct Rec<'a> {
    pub kind: Kind,
    pub rel: &'a str,
    pub stat: StatKey,
    /// The stat key was taken in the tick of the file's last change (see
    /// [`super::snapshot::racy`]).
    pub racy: bool,
    pub hash: u64,
    pub content: &'a [u8],
}

/// One record read back from a frame (`at`, `len`: where it is in the frame).
pub struct Parsed<'a> {
    pub kind: Kind,
    pub rel: &'a str,
    pub stat: StatKey,
    pub racy: bool,
    pub hash: u64,
    pub content: &'a [u8],
    pub at: u32,
    pub len: u32,
}

/// A batch of records, before it is compressed into a frame.
#[derive(Debug, Default)]
pub struct Batch {
    raw: Vec<u8>,
    /// (path, record offset, record length) of the content records.
    contents: Vec<(String, u32, u32)>,
}

impl Batch {
    pub fn push(&mut self, r: &Rec<'_>) {
        let at = self.raw.len();
        let path = r.rel.as_bytes();
        let path_len = path.len().min(u16::MAX as usize);
        self.raw.push(r.kind as u8);
        self.raw.extend_from_slice(&(path_len as u16).to_le_bytes());
        self.raw.extend_from_slice(&path[..path_len]);
        put_stat(&mut self.raw, &r.stat, r.racy);
        self.raw.extend_from_slice(&r.hash.to_le_bytes());
        self.raw
            .extend_from_slice(&(r.content.len() as u32).to_le_bytes());
        self.raw.extend_from_slice(r.content);
        if r.kind == Kind::Content {
            let len = (self.raw.len() - at) as u32;
            self.contents.push((r.rel.to_string(), at as u32, len));
        }
    }

    /// The batch compressed into a frame, with its raw length.
    pub fn encode(&self) -> (Vec<u8>, usize) {
        (encode(self), self.raw.len())
    }

    pub fn raw_len(&self) -> usize {
        self.raw.len()
    }

    pub fn is_empty(&self) -> bool {
        self.raw.is_empty()
    }
}

/// A stat key, then a byte of flags: 1 special, 2 racy. (Older versions wrote 0 or 1 there
/// and read anything else as special: a racy key is then one that differs, and its file is
/// read again, which is what racy asks for.)
fn put_stat(out: &mut Vec<u8>, s: &StatKey, racy: bool) {
    out.extend_from_slice(&s.size.to_le_bytes());
    out.extend_from_slice(&s.mtime_ns.to_le_bytes());
    out.extend_from_slice(&s.ctime_ns.to_le_bytes());
    out.extend_from_slice(&s.ino.to_le_bytes());
    out.push(u8::from(s.special) | (u8::from(racy) << 1));
}

/// A little reader over a byte slice: None at its end.
struct Cur<'a> {
    b: &'a [u8],
    at: usize,
}

impl<'a> Cur<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        let s = self.b.get(self.at..self.at.checked_add(n)?)?;
        self.at += n;
        Some(s)
    }
    fn u8(&mut self) -> Option<u8> {
        Some(self.take(1)?[0])
    }
    fn u16(&mut self) -> Option<u16> {
        Some(u16::from_le_bytes(self.take(2)?.try_into().ok()?))
    }
    fn u32(&mut self) -> Option<u32> {
        Some(u32::from_le_bytes(self.take(4)?.try_into().ok()?))
    }
    fn u64(&mut self) -> Option<u64> {
        Some(u64::from_le_bytes(self.take(8)?.try_into().ok()?))
    }
    fn i64(&mut self) -> Option<i64> {
        Some(i64::from_le_bytes(self.take(8)?.try_into().ok()?))
    }
    /// A stat key and whether it is racy.
    fn stat(&mut self) -> Option<(StatKey, bool)> {
        let (size, mtime_ns, ctime_ns, ino) = (self.u64()?, self.i64()?, self.i64()?, self.u64()?);
        let flags = self.u8()?;
        let stat = StatKey {
            size,
            mtime_ns,
            ctime_ns,
            ino,
            special: flags & 1 != 0,
        };
        Some((stat, flags & 2 != 0))
    }
    fn str(&mut self, n: usize) -> Option<&'a str> {
        std::str::from_utf8(self.take(n)?).ok()
    }
}

/// The record at `at` of a decompressed frame.
fn record(raw: &[u8], at: usize) -> Option<Parsed<'_>> {
    let mut c = Cur { b: raw, at };
    let kind = Kind::of(c.u8()?)?;
    let path_len = c.u16()? as usize;
    let rel = c.str(path_len)?;
    let (stat, racy) = c.stat()?;
    let hash = c.u64()?;
    let len = c.u32()? as usize;
    let content = c.take(len)?;
    Some(Parsed {
        kind,
        rel,
        stat,
        racy,
        hash,
        content,
        at: at as u32,
        len: (c.at - at) as u32,
    })
}

/// Every record of a decompressed frame, in order (None if one is malformed).
pub fn records(raw: &[u8]) -> Option<Vec<Parsed<'_>>> {
    let mut out = Vec::new();
    let mut at = 0;
    while at < raw.len() {
        let r = record(raw, at)?;
        at += r.len as usize;
        out.push(r);
    }
    Some(out)
}

/// The pack file of a generation.
pub fn pack_path(dir: &Path, generation: u64) -> PathBuf {
    dir.join(format!("shadows-{generation}"))
}

pub fn index_path(dir: &Path) -> PathBuf {
    dir.join("files")
}

/// Compresses a batch into a frame.
fn encode(batch: &Batch) -> Vec<u8> {
    let comp = lz4_flex::block::compress(&batch.raw);
    let mut out = Vec::with_capacity(FRAME_HEADER + comp.len());
    out.extend_from_slice(FRAME_MAGIC);
    out.extend_from_slice(&(batch.raw.len() as u32).to_le_bytes());
    out.extend_from_slice(&(comp.len() as u32).to_le_bytes());
    let mut crc = crc32fast::Hasher::new();
    crc.update(&out[4..12]);
    crc.update(&comp);
    out.extend_from_slice(&crc.finalize().to_le_bytes());
    out.extend_from_slice(&comp);
    out
}

/// Reads and checks the frame at `offset`: its decompressed records and its length on
/// disk. None if there is no whole, intact frame there.
fn read_frame(file: &mut std::fs::File, offset: u64) -> Option<(Vec<u8>, u64)> {
    file.seek(SeekFrom::Start(offset)).ok()?;
    let mut head = [0u8; FRAME_HEADER];
    file.read_exact(&mut head).ok()?;
    if &head[..4] != FRAME_MAGIC {
        return None;
    }
    let raw_len = u32::from_le_bytes(head[4..8].try_into().ok()?) as usize;
    let comp_len = u32::from_le_bytes(head[8..12].try_into().ok()?) as usize;
    let crc = u32::from_le_bytes(head[12..16].try_into().ok()?);
    let mut comp = vec![0u8; comp_len];
    file.read_exact(&mut comp).ok()?;
    let mut h = crc32fast::Hasher::new();
    h.update(&head[4..12]);
    h.update(&comp);
    if h.finalize() != crc {
        return None;
    }
    let raw = lz4_flex::block::decompress(&comp, raw_len).ok()?;
    (raw.len() == raw_len).then_some((raw, (FRAME_HEADER + comp_len) as u64))
}

/// A decompressed frame: its pack's generation, its offset, its records.
type CachedFrame = (u64, u64, std::sync::Arc<Vec<u8>>);

/// The pack being written: its generation, its length, and how much of it the index
/// file covers.
#[derive(Debug, Default)]
pub struct Pack {
    pub generation: u64,
    /// The length of the intact frames: where the next one goes.
    pub len: u64,
    /// The length up to which the index file holds the pack's records.
    pub covered: u64,
    /// Decompressed bytes of every frame in the pack (live records and dead ones).
    pub raw_total: u64,
    /// The pack is missing or not what the index says (removed under the watcher, or
    /// never written): no shadow can be read, and the next write starts a new generation.
    pub lost: bool,
    /// The last frame read, decompressed: a burst of reads from one frame decompresses it
    /// once.
    cache: std::cell::RefCell<Option<CachedFrame>>,
}

impl Pack {
    /// An empty pack of a generation.
    pub fn new(generation: u64) -> Pack {
        Pack {
            generation,
            ..Pack::default()
        }
    }

    /// Reads the content record at `loc`, if it is the record of `rel`.
    pub fn read(&self, dir: &Path, loc: Loc, rel: &str) -> Option<Vec<u8>> {
        if self.lost {
            return None;
        }
        let raw = self.frame(dir, loc.frame)?;
        let r = record(&raw, loc.rec as usize)?;
        (r.kind == Kind::Content && r.rel == rel && r.len == loc.len.get())
            .then(|| r.content.to_vec())
    }

    fn frame(&self, dir: &Path, offset: u64) -> Option<std::sync::Arc<Vec<u8>>> {
        if let Some((generation, at, raw)) = &*self.cache.borrow()
            && *generation == self.generation
            && *at == offset
        {
            return Some(raw.clone());
        }
        let mut file = open_regular(&pack_path(dir, self.generation))?;
        let (raw, _) = read_frame(&mut file, offset)?;
        let raw = std::sync::Arc::new(raw);
        *self.cache.borrow_mut() = Some((self.generation, offset, raw.clone()));
        Some(raw)
    }

    /// Appends a batch as one frame. Returns the frame's offset.
    pub fn append(&mut self, dir: &Path, batch: &Batch) -> std::io::Result<u64> {
        self.append_encoded(dir, &encode(batch), batch.raw.len())
    }

    /// Appends a frame compressed already (by [`Batch::encode`], on another thread) from
    /// `raw_len` bytes of records. Returns its offset.
    pub fn append_encoded(
        &mut self,
        dir: &Path,
        frame: &[u8],
        raw_len: usize,
    ) -> std::io::Result<u64> {
        let path = pack_path(dir, self.generation);
        let mut file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(self.len == 0)
            .truncate(false)
            .open(&path)?;
        let on_disk = file.metadata()?.len();
        if on_disk < self.len {
            return Err(std::io::Error::other(format!(
                "{} is shorter than the watcher wrote it",
                path.display()
            )));
        }
        if on_disk > self.len {
            // A frame torn by a kill, or frames of a first start that did not end.
            file.set_len(self.len)?;
        }
        file.seek(SeekFrom::Start(self.len))?;
        file.write_all(frame)?;
        let at = self.len;
        self.len += frame.len() as u64;
        self.raw_total += raw_len as u64;
        Ok(at)
    }

    /// Is the pack on disk still the one this process writes (present and at least as
    /// long)? No when `.state/` was cleaned under the watcher.
    pub fn present(&self, dir: &Path) -> bool {
        std::fs::symlink_metadata(pack_path(dir, self.generation))
            .is_ok_and(|m| m.is_file() && m.len() >= self.len)
    }
}

fn open_regular(path: &Path) -> Option<std::fs::File> {
    if !std::fs::symlink_metadata(path).is_ok_and(|m| m.is_file()) {
        return None;
    }
    std::fs::File::open(path).ok()
}

/// Sets the locations of a batch's content records, once it is at `frame`.
pub fn placed(batch: &Batch, frame: u64) -> impl Iterator<Item = (&str, Loc)> {
    batch.contents.iter().filter_map(move |(rel, rec, len)| {
        Some((
            rel.as_str(),
            Loc {
                frame,
                rec: *rec,
                len: NonZeroU32::new(*len)?,
            },
        ))
    })
}

/// What a record read back from the pack is applied to: every file's entry.
pub trait Entries {
    fn known(&self, rel: &str) -> Option<Known>;
    fn put(&mut self, rel: &str, known: Known);
    fn forget(&mut self, rel: &str);
}

impl Entries for Files {
    fn known(&self, rel: &str) -> Option<Known> {
        self.get(rel).copied()
    }
    fn put(&mut self, rel: &str, known: Known) {
        self.insert(rel.into(), known);
    }
    fn forget(&mut self, rel: &str) {
        self.swap_remove(rel);
    }
}

/// Applies a record read back from the pack to the files.
pub fn apply(files: &mut impl Entries, r: &Parsed<'_>, frame: u64) {
    match r.kind {
        Kind::Gone => files.forget(r.rel),
        Kind::Content | Kind::NoShadow => {
            let shadow = NonZeroU32::new(r.len)
                .filter(|_| r.kind == Kind::Content)
                .map(|len| Loc {
                    frame,
                    rec: r.at,
                    len,
                });
            files.put(
                r.rel,
                Known {
                    stat: r.stat,
                    hash: r.hash,
                    shadow,
                    racy: r.racy,
                },
            );
        }
        Kind::Known => {
            let shadow = files.known(r.rel).and_then(|k| k.shadow);
            files.put(
                r.rel,
                Known {
                    stat: r.stat,
                    hash: r.hash,
                    shadow,
                    racy: r.racy,
                },
            );
        }
    }
}

/// Replays the frames written after the index's length; the pack's intact length is
/// where the first frame that is not whole (torn by a kill) began.
pub fn replay(dir: &Path, pack: &mut Pack, mut each: impl FnMut(&Parsed<'_>, u64)) {
    let Some(mut file) = open_regular(&pack_path(dir, pack.generation)) else {
        pack.lost = true;
        return;
    };
    let on_disk = file.metadata().map_or(0, |m| m.len());
    if on_disk < pack.covered {
        pack.lost = true;
        return;
    }
    let mut at = pack.covered;
    while at < on_disk {
        let Some((raw, len)) = read_frame(&mut file, at) else {
            break;
        };
        let Some(recs) = records(&raw) else { break };
        for r in &recs {
            each(r, at);
        }
        pack.raw_total += raw.len() as u64;
        at += len;
    }
    pack.len = at;
}

/// The index file: the pack's generation and covered length, and every file, sorted
/// (see [`super::files_index`]).
pub fn write_index(
    dir: &Path,
    pack: &Pack,
    files: &Files,
    write: impl Fn(&Path, &[u8]) -> Result<()>,
) -> Result<()> {
    let covers = Covers {
        generation: pack.generation,
        covered: pack.len,
        raw_total: pack.raw_total,
    };
    write(&index_path(dir), &files_index::encode(covers, files))
}

/// The index file's entries: looked up where they are (the sorted format), or read whole
/// (the previous format).
#[derive(Debug)]
pub enum Index {
    Sorted(Sorted),
    Whole(Files),
}

#[cfg(test)]
impl Index {
    /// Every entry.
    pub fn into_files(self) -> Files {
        match self {
            Index::Sorted(s) => s.all(),
            Index::Whole(files) => files,
        }
    }
}

/// Reads the index file: the pack as it covers it, and its entries. None if it is
/// missing, torn or of another format.
pub fn read_index(dir: &Path) -> Option<(Pack, Index)> {
    let mut file = open_regular(&index_path(dir))?;
    let mut magic = [0u8; INDEX_MAGIC.len()];
    file.read_exact(&mut magic).ok()?;
    if magic == INDEX_MAGIC {
        let (pack, files) = read_whole_index(dir)?;
        return Some((pack, Index::Whole(files)));
    }
    let mut bytes = magic.to_vec();
    file.read_to_end(&mut bytes).ok()?;
    let (covers, sorted) = Sorted::decode(bytes)?;
    let pack = Pack {
        generation: covers.generation,
        len: covers.covered,
        covered: covers.covered,
        raw_total: covers.raw_total,
        ..Pack::default()
    };
    Some((pack, Index::Sorted(sorted)))
}

/// Reads an index file of the previous format (entries in any order, no table), whole.
/// None if it is torn. Read as a stream (its checksum is checked at the end), so that the
/// file's bytes are not held beside the files they describe.
fn read_whole_index(dir: &Path) -> Option<(Pack, Files)> {
    let file = open_regular(&index_path(dir))?;
    let len = file.metadata().ok()?.len();
    let mut s = Stream {
        r: std::io::BufReader::with_capacity(256 * 1024, file),
        crc: crc32fast::Hasher::new(),
        left: len.checked_sub(4)?,
    };
    let mut magic = [0u8; INDEX_MAGIC.len()];
    s.read(&mut magic)?;
    if magic != INDEX_MAGIC {
        return None;
    }
    let generation = s.u64()?;
    let covered = s.u64()?;
    let raw_total = s.u64()?;
    let count = s.u64()?;
    let mut files = Files::with_capacity(count.min(len / 40) as usize);
    let mut path = Vec::new();
    for _ in 0..count {
        let path_len = usize::from(u16::from_le_bytes(s.array()?));
        path.resize(path_len, 0);
        s.read(&mut path)?;
        let rel: Box<str> = std::str::from_utf8(&path).ok()?.into();
        let fixed: [u8; STAT_LEN + 9] = s.array()?;
        let (stat, racy) = Cur { b: &fixed, at: 0 }.stat()?;
        let hash = u64::from_le_bytes(fixed[STAT_LEN..STAT_LEN + 8].try_into().ok()?);
        let shadow = match fixed[STAT_LEN + 8] {
            0 => None,
            _ => {
                let loc: [u8; 16] = s.array()?;
                Some(Loc {
                    frame: u64::from_le_bytes(loc[..8].try_into().ok()?),
                    rec: u32::from_le_bytes(loc[8..12].try_into().ok()?),
                    len: NonZeroU32::new(u32::from_le_bytes(loc[12..].try_into().ok()?))?,
                })
            }
        };
        files.insert(
            rel,
            Known {
                stat,
                hash,
                shadow,
                racy,
            },
        );
    }
    // The whole body was read, and it is what was written.
    if s.left != 0 {
        return None;
    }
    let mut crc = [0u8; 4];
    s.r.read_exact(&mut crc).ok()?;
    if s.crc.finalize() != u32::from_le_bytes(crc) {
        return None;
    }
    let pack = Pack {
        generation,
        len: covered,
        covered,
        raw_total,
        ..Pack::default()
    };
    Some((pack, files))
}

/// The bytes of a stat key in a record or the index file.
const STAT_LEN: usize = 33;

/// The index file's body being read: at most `left` more bytes, each added to the checksum.
struct Stream {
    r: std::io::BufReader<std::fs::File>,
    crc: crc32fast::Hasher,
    left: u64,
}

impl Stream {
    fn read(&mut self, buf: &mut [u8]) -> Option<()> {
        self.left = self.left.checked_sub(buf.len() as u64)?;
        self.r.read_exact(buf).ok()?;
        self.crc.update(buf);
        Some(())
    }
    fn array<const N: usize>(&mut self) -> Option<[u8; N]> {
        let mut b = [0u8; N];
        self.read(&mut b)?;
        Some(b)
    }
    fn u64(&mut self) -> Option<u64> {
        Some(u64::from_le_bytes(self.array()?))
    }
}

/// Removes the pack files of every generation but `keep` (None: all).
pub fn remove_other_packs(dir: &Path, keep: Option<u64>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let name = e.file_name();
        let Some(generation) = name
            .to_str()
            .and_then(|n| n.strip_prefix("shadows-"))
            .and_then(|g| g.parse::<u64>().ok())
        else {
            continue;
        };
        if Some(generation) != keep {
            let _ = std::fs::remove_file(e.path());
        }
    }
}

/// Writes every live shadow of `files` into a new generation of the pack, frame by frame,
/// and points the files at it. Returns the new pack (the caller writes the index, then
/// removes the old generation).
pub fn compact(dir: &Path, old: &Pack, files: &mut Files) -> Result<Pack> {
    let mut next = Pack {
        generation: old.generation + 1,
        ..Pack::default()
    };
    let path = pack_path(dir, next.generation);
    let _ = std::fs::remove_file(&path);
    // The live records, in the order they are in the old pack: each frame read once.
    let mut live: Vec<(u64, u32, String)> = files
        .iter()
        .filter_map(|(rel, k)| k.shadow.map(|l| (l.frame, l.rec, rel.to_string())))
        .collect();
    live.sort_unstable();
    let mut batch = Batch::default();
    let mut moved: Vec<(String, Option<Loc>)> = Vec::with_capacity(live.len());
    let mut pending: Vec<String> = Vec::new();
    let flush = |batch: &mut Batch,
                 next: &mut Pack,
                 pending: &mut Vec<String>,
                 moved: &mut Vec<(String, Option<Loc>)>|
     -> Result<()> {
        if batch.is_empty() {
            return Ok(());
        }
        let frame = next
            .append(dir, batch)
            .map_err(|e| Error::io(&path, "write", e))?;
        let placed: HashMap<&str, Loc> = placed(batch, frame).collect();
        for rel in pending.drain(..) {
            let loc = placed.get(rel.as_str()).copied();
            moved.push((rel, loc));
        }
        *batch = Batch::default();
        Ok(())
    };
    for (frame, rec, rel) in live {
        let Some(k) = files.get(rel.as_str()).copied() else {
            continue;
        };
        let Some(raw) = old.frame(dir, frame) else {
            // Unreadable: that shadow is lost, as if `.state/` had been cleaned.
            moved.push((rel, None));
            continue;
        };
        match record(&raw, rec as usize) {
            Some(r) if r.kind == Kind::Content && r.rel == rel => {
                batch.push(&Rec {
                    kind: Kind::Content,
                    rel: &rel,
                    stat: k.stat,
                    racy: k.racy,
                    hash: k.hash,
                    content: r.content,
                });
                pending.push(rel);
            }
            _ => moved.push((rel, None)),
        }
        if batch.raw_len() >= FRAME_TARGET {
            flush(&mut batch, &mut next, &mut pending, &mut moved)?;
        }
    }
    flush(&mut batch, &mut next, &mut pending, &mut moved)?;
    if next.len == 0 {
        // Nothing to keep: an empty pack all the same, so that it exists.
        std::fs::File::create(&path).map_err(|e| Error::io(&path, "create", e))?;
    }
    for (rel, loc) in moved {
        if let Some(k) = files.get_mut(rel.as_str()) {
            k.shadow = loc;
        }
    }
    Ok(next)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stat(n: u64) -> StatKey {
        StatKey {
            size: n,
            mtime_ns: 1,
            ctime_ns: 2,
            ino: 3,
            special: false,
        }
    }

    #[test]
    fn frames_round_trip_and_a_torn_one_ends_the_journal() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let mut pack = Pack {
            generation: 1,
            ..Pack::default()
        };
        let mut files = Files::default();
        let mut batch = Batch::default();
        batch.push(&Rec {
            kind: Kind::Content,
            rel: "tasks/a.md",
            stat: stat(1),
            racy: true,
            hash: 7,
            content: b"a\n",
        });
        batch.push(&Rec {
            kind: Kind::NoShadow,
            rel: "tasks/b.md",
            stat: stat(2),
            racy: true,
            hash: 8,
            content: b"",
        });
        let at = pack.append(d, &batch).unwrap();
        for (rel, loc) in placed(&batch, at) {
            files.insert(
                rel.into(),
                Known {
                    stat: stat(1),
                    hash: 7,
                    shadow: Some(loc),
                    racy: false,
                },
            );
        }
        let loc = files["tasks/a.md"].shadow.unwrap();
        assert_eq!(pack.read(d, loc, "tasks/a.md").unwrap(), b"a\n");
        assert_eq!(pack.read(d, loc, "tasks/b.md"), None);
        // An index covering nothing: the start replays the frame.
        write_index(
            d,
            &Pack {
                len: 0,
                ..Pack::default()
            }
            .with_gen(1),
            &Files::default(),
            |p, b| std::fs::write(p, b).map_err(|e| Error::io(p, "write", e)),
        )
        .unwrap();
        let mut batch2 = Batch::default();
        batch2.push(&Rec {
            kind: Kind::Gone,
            rel: "tasks/b.md",
            stat: StatKey::default(),
            racy: false,
            hash: 0,
            content: b"",
        });
        pack.append(d, &batch2).unwrap();
        // A torn third frame.
        let mut f = std::fs::OpenOptions::new()
            .append(true)
            .open(pack_path(d, 1))
            .unwrap();
        f.write_all(b"TWS1\x05\x00").unwrap();
        let (mut again, index) = read_index(d).unwrap();
        let mut seen = index.into_files();
        replay(d, &mut again, |r, at| apply(&mut seen, r, at));
        assert!(!again.lost);
        assert_eq!(again.len, pack.len);
        assert_eq!(seen.len(), 1);
        assert_eq!(seen["tasks/a.md"].stat, stat(1));
        assert!(
            seen["tasks/a.md"].racy,
            "the racy flag is kept with the stat key"
        );
        assert!(!seen["tasks/a.md"].stat.special);
        let loc = seen["tasks/a.md"].shadow.unwrap();
        assert_eq!(again.read(d, loc, "tasks/a.md").unwrap(), b"a\n");
        // Compacted: the live content moves to the next generation.
        let next = compact(d, &again, &mut seen).unwrap();
        assert_eq!(next.generation, 2);
        // The index file keeps it too.
        write_index(d, &next, &seen, |p, b| {
            std::fs::write(p, b).map_err(|e| Error::io(p, "write", e))
        })
        .unwrap();
        let (_, indexed) = read_index(d).unwrap();
        let indexed = indexed.into_files();
        assert!(indexed["tasks/a.md"].racy);
        assert_eq!(indexed["tasks/a.md"].shadow, seen["tasks/a.md"].shadow);
        let loc = seen["tasks/a.md"].shadow.unwrap();
        assert_eq!(next.read(d, loc, "tasks/a.md").unwrap(), b"a\n");
        // A missing pack is a lost one.
        let mut gone = Pack {
            generation: 9,
            ..Pack::default()
        };
        replay(d, &mut gone, |r, at| apply(&mut seen, r, at));
        assert!(gone.lost);
    }

    impl Pack {
        fn with_gen(mut self, generation: u64) -> Pack {
            self.generation = generation;
            self
        }
    }
}
