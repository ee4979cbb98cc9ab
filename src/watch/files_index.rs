//! The index file of the watcher's files (`.state/watch/files`), sorted by path with a
//! table of where each entry starts, so that a start that looks at a few files (the ones
//! an index keeper's journal names) finds their entries by a binary search in the bytes
//! as read, without building a map of every file: at a million files, building that map
//! was most of such a start. A start that looks at every file builds the map all the same.
//!
//! Layout: `tavern-watch-files 2\n`, the pack's generation, covered length and raw total,
//! the number of entries (u64 each, little-endian); the entries in path order (the
//! previous format's encoding: path length u16, path, stat key, racy flag, hash, and a
//! shadow's place when its flag is 1); then each entry's offset from the file's start
//! (u64); then a CRC-32 of everything before it. The previous format (`... 1\n`, entries
//! in any order, no table) is still read, whole.

use std::num::NonZeroU32;

use super::pack::Loc;
use super::snapshot::{Files, Known, StatKey};

pub const MAGIC: &[u8] = b"tavern-watch-files 2\n";
/// Magic, generation, covered, raw total, count.
const HEADER: usize = MAGIC.len() + 4 * 8;
/// The stat key's bytes, and the racy flag in its last.
const STAT_LEN: usize = 33;

/// What the header says of the pack.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Covers {
    pub generation: u64,
    pub covered: u64,
    pub raw_total: u64,
}

/// Encodes `files` (with what the pack is) as the index file's bytes.
pub fn encode(covers: Covers, files: &Files) -> Vec<u8> {
    let mut sorted: Vec<(&str, &Known)> = files
        .iter()
        .map(|(rel, k)| (&**rel, k))
        .filter(|(rel, _)| rel.len() <= usize::from(u16::MAX))
        .collect();
    sorted.sort_unstable_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
    let mut out = Vec::with_capacity(HEADER + sorted.len() * 104 + 4);
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&covers.generation.to_le_bytes());
    out.extend_from_slice(&covers.covered.to_le_bytes());
    out.extend_from_slice(&covers.raw_total.to_le_bytes());
    out.extend_from_slice(&(sorted.len() as u64).to_le_bytes());
    let mut offsets = Vec::with_capacity(sorted.len());
    for (rel, k) in &sorted {
        offsets.push(out.len() as u64);
        put_entry(&mut out, rel, k);
    }
    for at in offsets {
        out.extend_from_slice(&at.to_le_bytes());
    }
    let crc = crc32fast::hash(&out);
    out.extend_from_slice(&crc.to_le_bytes());
    out
}

fn put_entry(out: &mut Vec<u8>, rel: &str, k: &Known) {
    out.extend_from_slice(&(rel.len() as u16).to_le_bytes());
    out.extend_from_slice(rel.as_bytes());
    let s = &k.stat;
    out.extend_from_slice(&s.size.to_le_bytes());
    out.extend_from_slice(&s.mtime_ns.to_le_bytes());
    out.extend_from_slice(&s.ctime_ns.to_le_bytes());
    out.extend_from_slice(&s.ino.to_le_bytes());
    out.push(u8::from(s.special) | (u8::from(k.racy) << 1));
    out.extend_from_slice(&k.hash.to_le_bytes());
    match k.shadow {
        Some(loc) => {
            out.push(1);
            out.extend_from_slice(&loc.frame.to_le_bytes());
            out.extend_from_slice(&loc.rec.to_le_bytes());
            out.extend_from_slice(&loc.len.get().to_le_bytes());
        }
        None => out.push(0),
    }
}

/// The index file as read: its entries looked up in its bytes.
#[derive(Debug)]
pub struct Sorted {
    bytes: Vec<u8>,
    count: usize,
    /// Where the table of offsets starts.
    table: usize,
}

impl Sorted {
    /// The index file's bytes, if they are whole and of this format: what the header says
    /// of the pack, and the entries. None if torn, altered or of another format.
    pub fn decode(bytes: Vec<u8>) -> Option<(Covers, Sorted)> {
        let body = bytes.len().checked_sub(4)?;
        if body < HEADER || !bytes.starts_with(MAGIC) {
            return None;
        }
        let crc = u32::from_le_bytes(bytes[body..].try_into().ok()?);
        if crc32fast::hash(&bytes[..body]) != crc {
            return None;
        }
        let u64_at = |at: usize| -> Option<u64> {
            Some(u64::from_le_bytes(bytes.get(at..at + 8)?.try_into().ok()?))
        };
        let m = MAGIC.len();
        let covers = Covers {
            generation: u64_at(m)?,
            covered: u64_at(m + 8)?,
            raw_total: u64_at(m + 16)?,
        };
        let count = usize::try_from(u64_at(m + 24)?).ok()?;
        let table = body.checked_sub(count.checked_mul(8)?)?;
        if table < HEADER {
            return None;
        }
        let sorted = Sorted {
            bytes,
            count,
            table,
        };
        // Each offset within the entries, in order: what a search relies on.
        let mut last = HEADER;
        for i in 0..count {
            let at = sorted.offset(i)?;
            if at < last || at >= table {
                return None;
            }
            last = at;
        }
        Some((covers, sorted))
    }

    pub fn len(&self) -> usize {
        self.count
    }

    fn offset(&self, i: usize) -> Option<usize> {
        let at = self.table + i * 8;
        let b = self.bytes.get(at..at + 8)?;
        usize::try_from(u64::from_le_bytes(b.try_into().ok()?)).ok()
    }

    fn path(&self, i: usize) -> Option<&[u8]> {
        let at = self.offset(i)?;
        let len = usize::from(u16::from_le_bytes(
            self.bytes.get(at..at + 2)?.try_into().ok()?,
        ));
        self.bytes.get(at + 2..at + 2 + len)
    }

    /// The entry `i` (in path order).
    fn entry(&self, i: usize) -> Option<(&str, Known)> {
        let at = self.offset(i)?;
        let end = if i + 1 < self.count {
            self.offset(i + 1)?
        } else {
            self.table
        };
        let b = self.bytes.get(at..end)?;
        let len = usize::from(u16::from_le_bytes(b.get(..2)?.try_into().ok()?));
        let rel = std::str::from_utf8(b.get(2..2 + len)?).ok()?;
        let f = b.get(2 + len..)?;
        let u64_at = |at: usize| -> Option<u64> {
            Some(u64::from_le_bytes(f.get(at..at + 8)?.try_into().ok()?))
        };
        let flags = *f.get(STAT_LEN - 1)?;
        let stat = StatKey {
            size: u64_at(0)?,
            mtime_ns: u64_at(8)? as i64,
            ctime_ns: u64_at(16)? as i64,
            ino: u64_at(24)?,
            special: flags & 1 != 0,
        };
        let hash = u64_at(STAT_LEN)?;
        let shadow = match *f.get(STAT_LEN + 8)? {
            0 => None,
            _ => {
                let l = f.get(STAT_LEN + 9..STAT_LEN + 25)?;
                Some(Loc {
                    frame: u64::from_le_bytes(l[..8].try_into().ok()?),
                    rec: u32::from_le_bytes(l[8..12].try_into().ok()?),
                    len: NonZeroU32::new(u32::from_le_bytes(l[12..].try_into().ok()?))?,
                })
            }
        };
        let known = Known {
            stat,
            hash,
            shadow,
            racy: flags & 2 != 0,
        };
        Some((rel, known))
    }

    /// The entry of `rel`, if the file has one.
    pub fn get(&self, rel: &str) -> Option<Known> {
        let (mut lo, mut hi) = (0, self.count);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            match self.path(mid)?.cmp(rel.as_bytes()) {
                std::cmp::Ordering::Less => lo = mid + 1,
                std::cmp::Ordering::Greater => hi = mid,
                std::cmp::Ordering::Equal => return self.entry(mid).map(|(_, k)| k),
            }
        }
        None
    }

    /// Every entry, in path order. One that does not decode (which its checksum makes
    /// all but impossible) is left out, as [`Sorted::get`] does not find it: its file is
    /// then read and compared again, as a file the watcher does not know.
    pub fn all(&self) -> Files {
        let mut files = Files::with_capacity(self.count);
        for i in 0..self.count {
            if let Some((rel, k)) = self.entry(i) {
                files.insert(rel.into(), k);
            }
        }
        files
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn known(n: u64, shadow: bool) -> Known {
        Known {
            stat: StatKey {
                size: n,
                mtime_ns: -(n as i64),
                ctime_ns: n as i64 * 3,
                ino: n + 7,
                special: n.is_multiple_of(5),
            },
            hash: n * 31,
            shadow: shadow.then(|| Loc {
                frame: n * 100,
                rec: n as u32,
                len: NonZeroU32::new(n as u32 + 1).unwrap(),
            }),
            racy: n.is_multiple_of(3),
        }
    }

    const COVERS: Covers = Covers {
        generation: 3,
        covered: 4096,
        raw_total: 9000,
    };

    fn files(n: u64) -> Files {
        // Inserted out of path order, with paths that share prefixes and differ in length.
        (0..n)
            .rev()
            .map(|i| {
                let rel: Box<str> = format!("tasks/t-{}.md", i * 7919 % 1000).into();
                (rel, known(i, i.is_multiple_of(2)))
            })
            .collect()
    }

    #[test]
    fn every_entry_is_found_by_its_path_and_none_other_is() {
        let files = files(500);
        let (covers, sorted) = Sorted::decode(encode(COVERS, &files)).unwrap();
        assert_eq!(covers, COVERS);
        assert_eq!(sorted.len(), files.len());
        for (rel, k) in &files {
            assert_eq!(sorted.get(rel), Some(*k), "{rel}");
        }
        for missing in [
            "",
            "tasks",
            "tasks/t-1.m",
            "tasks/t-1.mdx",
            "zz",
            "tasks/t-9999.md",
        ] {
            assert_eq!(sorted.get(missing), None, "{missing}");
        }
        let all = sorted.all();
        assert_eq!(all.len(), files.len());
        for (rel, k) in &files {
            assert_eq!(all.get(rel), Some(k));
        }
        let empty = Sorted::decode(encode(COVERS, &Files::default())).unwrap().1;
        assert_eq!((empty.len(), empty.get("a")), (0, None));
    }

    #[test]
    fn a_torn_altered_or_other_index_is_refused() {
        let bytes = encode(COVERS, &files(50));
        for cut in [0, 10, HEADER, bytes.len() / 2, bytes.len() - 1] {
            assert!(
                Sorted::decode(bytes[..cut].to_vec()).is_none(),
                "cut at {cut}"
            );
        }
        for at in [0, HEADER - 1, HEADER + 5, bytes.len() - 20, bytes.len() - 2] {
            let mut altered = bytes.clone();
            altered[at] ^= 0x40;
            assert!(Sorted::decode(altered).is_none(), "byte {at} altered");
        }
        let mut old = bytes.clone();
        old[MAGIC.len() - 2] = b'1';
        assert!(Sorted::decode(old).is_none());
    }
}
