//! The index's files: per directory a manifest and buckets, each written whole to a temp
//! file and renamed over (readers see old or new), each ending in a CRC-32 so a file torn
//! by a crash reads as missing, never as wrong. Nothing here is fsynced: it is derived
//! data, and a lost file only costs reading the documents again.

use std::borrow::Cow;
use std::path::{Path, PathBuf};

use super::stat::{Clocks, StatKey};

const MANIFEST_MAGIC: &[u8; 8] = b"TVIXMAN2";
const BUCKET_MAGIC: &[u8; 8] = b"TVIXBKT1";

/// What a directory's index holds besides its buckets.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Manifest {
    /// Of the board's settings and this program: a different one invalidates everything.
    pub fingerprint: u64,
    /// Names the bucket files (a new bucket count makes a new generation).
    pub generation: u64,
    /// The directory's stat data when its names were last listed; None when they must be
    /// listed again (it was racy).
    pub dir: Option<StatKey>,
    /// The clocks when it was written.
    pub clocks: Clocks,
    /// The id of each bucket as written with this manifest: a bucket file with another id
    /// was written by someone else since, and its names must be checked against a listing.
    pub buckets: Vec<u64>,
    /// The watcher's journal (epoch, offset) as of which the buckets written with this
    /// manifest were up to date (see `journal`); None when no watcher kept one.
    pub feed: Option<(u64, u64)>,
}

/// What one document file held when it was last read.
/// Decoded in place: the texts borrow the bucket file's bytes until a document needs one.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry<'a> {
    /// The file's name less `.md` (the id it claims).
    pub name: Cow<'a, str>,
    pub key: StatKey,
    /// Read too close to its last change to be trusted next time.
    pub racy: bool,
    /// A document whose frontmatter the fast parser reads (every scalar written as it
    /// reads) and whose text is ASCII: a query's needles may rule it out unparsed.
    pub plain: bool,
    pub outcome: Outcome<'a>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome<'a> {
    /// Its text (it parsed as a document).
    Doc(Cow<'a, str>),
    /// Why it was skipped.
    Skipped(Cow<'a, str>),
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Bucket<'a> {
    pub id: u64,
    /// The manifest's fingerprint when it was written.
    pub fingerprint: u64,
    /// Sorted by name.
    pub entries: Vec<Entry<'a>>,
}

pub fn manifest_path(dir: &Path) -> PathBuf {
    dir.join("manifest")
}

pub fn bucket_path(dir: &Path, generation: u64, bucket: usize) -> PathBuf {
    dir.join(format!("{generation}-{bucket}"))
}

/// Little-endian writes of the index files' fields (the search index's too).
pub fn put_u32(out: &mut Vec<u8>, v: u32) {
    out.extend_from_slice(&v.to_le_bytes());
}

pub fn put_u64(out: &mut Vec<u8>, v: u64) {
    out.extend_from_slice(&v.to_le_bytes());
}

pub fn put_i128(out: &mut Vec<u8>, v: i128) {
    out.extend_from_slice(&v.to_le_bytes());
}

/// A string: its length (u32), then its bytes.
pub fn put_str(out: &mut Vec<u8>, s: &str) {
    put_u32(out, s.len() as u32);
    out.extend_from_slice(s.as_bytes());
}

pub fn put_key(out: &mut Vec<u8>, k: &StatKey) {
    put_u64(out, k.dev);
    put_u64(out, k.ino);
    put_u64(out, k.size);
    put_u32(out, k.mode);
    put_i128(out, k.mtime);
    put_i128(out, k.ctime);
}

struct Out(Vec<u8>);

impl Out {
    fn u8(&mut self, v: u8) {
        self.0.push(v);
    }
    fn u32(&mut self, v: u32) {
        put_u32(&mut self.0, v);
    }
    fn u64(&mut self, v: u64) {
        put_u64(&mut self.0, v);
    }
    fn str(&mut self, s: &str) {
        put_str(&mut self.0, s);
    }
    fn key(&mut self, k: &StatKey) {
        put_key(&mut self.0, k);
    }
    fn clocks(&mut self, c: &Clocks) {
        put_i128(&mut self.0, c.wall);
        put_i128(&mut self.0, c.boot);
        self.0.extend_from_slice(&c.boot_id.to_le_bytes());
    }
    fn seal(mut self) -> Vec<u8> {
        let crc = crc32fast::hash(&self.0);
        self.u32(crc);
        self.0
    }
}

/// Reads the fields [`put_u32`] and the others wrote, in order; None past the end.
pub struct Reader<'a>(pub &'a [u8]);

impl<'a> Reader<'a> {
    pub fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        if self.0.len() < n {
            return None;
        }
        let (head, rest) = self.0.split_at(n);
        self.0 = rest;
        Some(head)
    }
    pub fn u8(&mut self) -> Option<u8> {
        self.take(1).map(|b| b[0])
    }
    pub fn u32(&mut self) -> Option<u32> {
        Some(u32::from_le_bytes(self.take(4)?.try_into().ok()?))
    }
    pub fn u64(&mut self) -> Option<u64> {
        Some(u64::from_le_bytes(self.take(8)?.try_into().ok()?))
    }
    pub fn i128(&mut self) -> Option<i128> {
        Some(i128::from_le_bytes(self.take(16)?.try_into().ok()?))
    }
    fn u128(&mut self) -> Option<u128> {
        Some(u128::from_le_bytes(self.take(16)?.try_into().ok()?))
    }
    pub fn str(&mut self) -> Option<&'a str> {
        let n = self.u32()? as usize;
        std::str::from_utf8(self.take(n)?).ok()
    }
    pub fn key(&mut self) -> Option<StatKey> {
        Some(StatKey {
            dev: self.u64()?,
            ino: self.u64()?,
            size: self.u64()?,
            mode: self.u32()?,
            mtime: self.i128()?,
            ctime: self.i128()?,
        })
    }
    fn clocks(&mut self) -> Option<Clocks> {
        Some(Clocks {
            wall: self.i128()?,
            boot: self.i128()?,
            boot_id: self.u128()?,
        })
    }
}

/// The bytes before the checksum, when the checksum and the magic agree.
fn unseal<'a>(bytes: &'a [u8], magic: &[u8; 8]) -> Option<Reader<'a>> {
    let body_len = bytes.len().checked_sub(4)?;
    let (body, crc) = bytes.split_at(body_len);
    let crc = u32::from_le_bytes(crc.try_into().ok()?);
    if crc32fast::hash(body) != crc {
        return None;
    }
    let mut input = Reader(body);
    (input.take(8)? == magic).then_some(input)
}

pub fn encode_manifest(m: &Manifest) -> Vec<u8> {
    let mut out = Out(Vec::with_capacity(128 + m.buckets.len() * 8));
    out.0.extend_from_slice(MANIFEST_MAGIC);
    out.u64(m.fingerprint);
    out.u64(m.generation);
    match &m.dir {
        Some(k) => {
            out.u8(1);
            out.key(k);
        }
        None => out.u8(0),
    }
    out.clocks(&m.clocks);
    out.u32(m.buckets.len() as u32);
    for id in &m.buckets {
        out.u64(*id);
    }
    match m.feed {
        Some((epoch, at)) => {
            out.u8(1);
            out.u64(epoch);
            out.u64(at);
        }
        None => out.u8(0),
    }
    out.seal()
}

pub fn decode_manifest(bytes: &[u8]) -> Option<Manifest> {
    let mut input = unseal(bytes, MANIFEST_MAGIC)?;
    let fingerprint = input.u64()?;
    let generation = input.u64()?;
    let dir = match input.u8()? {
        0 => None,
        1 => Some(input.key()?),
        _ => return None,
    };
    let clocks = input.clocks()?;
    let n = input.u32()? as usize;
    if n > 1 << 20 {
        return None;
    }
    let mut buckets = Vec::with_capacity(n);
    for _ in 0..n {
        buckets.push(input.u64()?);
    }
    let feed = match input.u8()? {
        0 => None,
        1 => Some((input.u64()?, input.u64()?)),
        _ => return None,
    };
    input.0.is_empty().then_some(Manifest {
        fingerprint,
        generation,
        dir,
        clocks,
        buckets,
        feed,
    })
}

pub fn encode_bucket(b: &Bucket) -> Vec<u8> {
    let size: usize = b.entries.iter().map(|e| e.name.len() + 96).sum::<usize>()
        + b.entries
            .iter()
            .map(|e| match &e.outcome {
                Outcome::Doc(t) | Outcome::Skipped(t) => t.len(),
            })
            .sum::<usize>();
    let mut out = Out(Vec::with_capacity(size + 32));
    out.0.extend_from_slice(BUCKET_MAGIC);
    out.u64(b.id);
    out.u64(b.fingerprint);
    out.u32(b.entries.len() as u32);
    for e in &b.entries {
        out.str(&e.name);
        out.key(&e.key);
        out.u8(e.racy as u8 | (e.plain as u8) << 1);
        match &e.outcome {
            Outcome::Doc(text) => {
                out.u8(0);
                out.str(text);
            }
            Outcome::Skipped(problem) => {
                out.u8(1);
                out.str(problem);
            }
        }
    }
    out.seal()
}

pub fn decode_bucket(bytes: &[u8]) -> Option<Bucket<'_>> {
    let mut input = unseal(bytes, BUCKET_MAGIC)?;
    let id = input.u64()?;
    let fingerprint = input.u64()?;
    let n = input.u32()? as usize;
    let mut entries = Vec::with_capacity(n.min(bytes.len() / 64));
    for _ in 0..n {
        let name = Cow::Borrowed(input.str()?);
        let key = input.key()?;
        let flags = input.u8()?;
        let outcome = match input.u8()? {
            0 => Outcome::Doc(Cow::Borrowed(input.str()?)),
            1 => Outcome::Skipped(Cow::Borrowed(input.str()?)),
            _ => return None,
        };
        entries.push(Entry {
            name,
            key,
            racy: flags & 1 != 0,
            plain: flags & 2 != 0,
            outcome,
        });
    }
    input.0.is_empty().then_some(Bucket {
        id,
        fingerprint,
        entries,
    })
}

/// Reads a file of the index; None when it is missing.
pub fn load(path: &Path) -> Option<Vec<u8>> {
    std::fs::read(path).ok()
}

/// Writes a file of the index whole, through the one file helper, without sync (derived
/// data). A failure is ignored: the index is a cache, and the next read reads the documents.
pub fn save(path: &Path, bytes: &[u8]) {
    let _ = crate::file::write(path, bytes, crate::file::Durability::Cache);
}

/// A number no other write of this process uses, and unlikely any other's: bucket ids and
/// generations.
pub fn unique() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let t = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64);
    // splitmix64 of time, pid and counter: distinct across processes and calls.
    let mut z = t ^ ((std::process::id() as u64) << 32) ^ n.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// A stable 64-bit hash (FNV-1a): bucket numbers and fingerprints, the same in every
/// process and version.
pub fn fnv(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in bytes {
        h ^= b as u64;
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bucket() -> Bucket<'static> {
        Bucket {
            id: 42,
            fingerprint: 7,
            entries: vec![
                Entry {
                    name: "task-1".into(),
                    key: StatKey {
                        dev: 1,
                        ino: 2,
                        size: 3,
                        mode: 0o100644,
                        mtime: -5,
                        ctime: 1_700_000_000_123_456_789,
                    },
                    racy: true,
                    plain: true,
                    outcome: Outcome::Doc(Cow::Owned("---\nid: task-1\n---\nbody ✓\n".into())),
                },
                Entry {
                    name: "bad".into(),
                    key: StatKey::default(),
                    racy: false,
                    plain: false,
                    outcome: Outcome::Skipped(Cow::Borrowed("line 2: broken")),
                },
            ],
        }
    }

    #[test]
    fn bucket_round_trips_and_any_torn_copy_is_refused() {
        let b = bucket();
        let bytes = encode_bucket(&b);
        assert_eq!(decode_bucket(&bytes), Some(b));
        for cut in 0..bytes.len() {
            assert_eq!(decode_bucket(&bytes[..cut]), None, "cut at {cut}");
        }
        let mut flipped = bytes.clone();
        flipped[20] ^= 1;
        assert_eq!(decode_bucket(&flipped), None);
        assert_eq!(decode_manifest(&bytes), None, "a bucket is not a manifest");
    }

    #[test]
    fn manifest_round_trips() {
        let m = Manifest {
            fingerprint: 9,
            generation: 3,
            dir: Some(StatKey {
                ino: 77,
                ..StatKey::default()
            }),
            clocks: Clocks {
                wall: 1,
                boot: 2,
                boot_id: 3,
            },
            buckets: vec![5, 6, 7],
            feed: Some((11, 12)),
        };
        let bytes = encode_manifest(&m);
        assert_eq!(decode_manifest(&bytes), Some(m.clone()));
        let none = Manifest {
            dir: None,
            feed: None,
            ..m
        };
        assert_eq!(decode_manifest(&encode_manifest(&none)), Some(none));
        assert_eq!(decode_manifest(&bytes[..bytes.len() - 1]), None);
    }
}
