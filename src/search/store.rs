//! The search index's bucket files: for up to about a thousand files of one directory,
//! each file's stat data and what it gave (indexed, skipped, not text), and the bucket's
//! inverted index: its terms, sorted, each with the files holding it and how often.
//! Written whole to a temp file and renamed over, ending in a CRC-32 (as the read index's
//! files are): a torn or zeroed file reads as missing.

use std::collections::BTreeMap;

use crate::index::stat::StatKey;

const MAGIC: &[u8; 8] = b"TVSRBKT1";

/// What one file gave when it was last read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Kind {
    /// Its terms are in the bucket's dictionary.
    Indexed,
    /// A document file a reader skips (as `list` does), and why.
    Skipped(String),
    /// Not searched: a file under `solutions/` that is not text, a symlink, too big.
    Ignored,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    /// The file's name in its directory (under `solutions/`, its path there).
    pub name: String,
    pub key: StatKey,
    /// Read too close to its last change to be trusted next time.
    pub racy: bool,
    pub kind: Kind,
    /// How many terms it holds (the document length BM25 weighs by).
    pub len: u32,
}

/// A bucket as read: its entries, sorted by name, and its dictionary.
#[derive(Debug, Default)]
pub struct Bucket {
    pub id: u64,
    pub fingerprint: u64,
    pub entries: Vec<Entry>,
    /// The dictionary's bytes: records of a term and its postings, sorted by term.
    dict: Vec<u8>,
    /// Where each record starts in `dict`.
    offsets: Vec<u32>,
}

/// One term's postings: (entry index, term frequency).
pub type Postings = Vec<(u32, u32)>;

impl Bucket {
    pub fn terms(&self) -> usize {
        self.offsets.len()
    }

    /// The `i`th term, and where its postings start.
    fn record(&self, i: usize) -> (&str, usize) {
        let at = self.offsets[i] as usize;
        let n = u32::from_le_bytes(self.dict[at..at + 4].try_into().unwrap_or_default()) as usize;
        let term = std::str::from_utf8(&self.dict[at + 4..at + 4 + n]).unwrap_or("");
        (term, at + 4 + n)
    }

    pub fn term(&self, i: usize) -> &str {
        self.record(i).0
    }

    pub fn postings(&self, i: usize) -> Postings {
        let (_, mut at) = self.record(i);
        let u32_at =
            |at: usize| u32::from_le_bytes(self.dict[at..at + 4].try_into().unwrap_or_default());
        let n = u32_at(at) as usize;
        at += 4;
        (0..n)
            .map(|k| (u32_at(at + k * 8), u32_at(at + k * 8 + 4)))
            .collect()
    }

    /// The index of `term` in the dictionary.
    pub fn find(&self, term: &str) -> Option<usize> {
        let (mut lo, mut hi) = (0, self.offsets.len());
        while lo < hi {
            let mid = (lo + hi) / 2;
            match self.term(mid).cmp(term) {
                std::cmp::Ordering::Less => lo = mid + 1,
                std::cmp::Ordering::Greater => hi = mid,
                std::cmp::Ordering::Equal => return Some(mid),
            }
        }
        None
    }

    /// Each entry's terms with their frequencies (the dictionary turned back around), to
    /// build the bucket again with some entries changed.
    pub fn per_entry(&self) -> Vec<Vec<(String, u32)>> {
        let mut out = vec![Vec::new(); self.entries.len()];
        for i in 0..self.terms() {
            let term = self.term(i);
            for (e, tf) in self.postings(i) {
                if let Some(list) = out.get_mut(e as usize) {
                    list.push((term.to_string(), tf));
                }
            }
        }
        out
    }
}

/// A bucket's bytes: `entries` (sorted by name) with each one's terms.
pub fn encode(id: u64, fingerprint: u64, entries: &[(Entry, Vec<(String, u32)>)]) -> Vec<u8> {
    let mut dict: BTreeMap<&str, Postings> = BTreeMap::new();
    for (i, (_, terms)) in entries.iter().enumerate() {
        for (t, tf) in terms {
            dict.entry(t.as_str()).or_default().push((i as u32, *tf));
        }
    }
    let mut out = Vec::with_capacity(64 + entries.len() * 80 + dict.len() * 24);
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&id.to_le_bytes());
    out.extend_from_slice(&fingerprint.to_le_bytes());
    put_u32(&mut out, entries.len() as u32);
    for (e, _) in entries {
        put_str(&mut out, &e.name);
        put_key(&mut out, &e.key);
        out.push(e.racy as u8);
        match &e.kind {
            Kind::Indexed => out.push(0),
            Kind::Skipped(problem) => {
                out.push(1);
                put_str(&mut out, problem);
            }
            Kind::Ignored => out.push(2),
        }
        put_u32(&mut out, e.len);
    }
    put_u32(&mut out, dict.len() as u32);
    for (term, postings) in &dict {
        put_str(&mut out, term);
        put_u32(&mut out, postings.len() as u32);
        for (e, tf) in postings {
            put_u32(&mut out, *e);
            put_u32(&mut out, *tf);
        }
    }
    let crc = crc32fast::hash(&out);
    put_u32(&mut out, crc);
    out
}

/// A bucket from its bytes; None when torn, of another format, or not one.
pub fn decode(bytes: &[u8]) -> Option<Bucket> {
    let body_len = bytes.len().checked_sub(4)?;
    let (body, crc) = bytes.split_at(body_len);
    if crc32fast::hash(body) != u32::from_le_bytes(crc.try_into().ok()?) {
        return None;
    }
    let mut r = Reader(body);
    if r.take(8)? != MAGIC {
        return None;
    }
    let id = r.u64()?;
    let fingerprint = r.u64()?;
    let n = r.u32()? as usize;
    let mut entries = Vec::with_capacity(n.min(body.len() / 60));
    for _ in 0..n {
        let name = r.str()?.to_string();
        let key = r.key()?;
        let racy = r.u8()? != 0;
        let kind = match r.u8()? {
            0 => Kind::Indexed,
            1 => Kind::Skipped(r.str()?.to_string()),
            2 => Kind::Ignored,
            _ => return None,
        };
        let len = r.u32()?;
        entries.push(Entry {
            name,
            key,
            racy,
            kind,
            len,
        });
    }
    let terms = r.u32()? as usize;
    let dict = r.0.to_vec();
    let mut offsets = Vec::with_capacity(terms.min(dict.len() / 12));
    let mut d = Reader(&dict);
    let mut previous: Option<&str> = None;
    for _ in 0..terms {
        offsets.push((dict.len() - d.0.len()) as u32);
        let term = d.str()?;
        // Sorted and unique, or binary search would lie.
        if previous.is_some_and(|p| p >= term) {
            return None;
        }
        previous = Some(term);
        let postings = d.u32()? as usize;
        let bytes = d.take(postings.checked_mul(8)?)?;
        if bytes
            .chunks_exact(8)
            .any(|p| u32::from_le_bytes(p[..4].try_into().unwrap_or_default()) as usize >= n)
        {
            return None;
        }
    }
    d.0.is_empty().then_some(Bucket {
        id,
        fingerprint,
        entries,
        dict,
        offsets,
    })
}

fn put_u32(out: &mut Vec<u8>, v: u32) {
    out.extend_from_slice(&v.to_le_bytes());
}

fn put_str(out: &mut Vec<u8>, s: &str) {
    put_u32(out, s.len() as u32);
    out.extend_from_slice(s.as_bytes());
}

fn put_key(out: &mut Vec<u8>, k: &StatKey) {
    out.extend_from_slice(&k.dev.to_le_bytes());
    out.extend_from_slice(&k.ino.to_le_bytes());
    out.extend_from_slice(&k.size.to_le_bytes());
    out.extend_from_slice(&k.mode.to_le_bytes());
    out.extend_from_slice(&k.mtime.to_le_bytes());
    out.extend_from_slice(&k.ctime.to_le_bytes());
}

struct Reader<'a>(&'a [u8]);

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        if self.0.len() < n {
            return None;
        }
        let (head, rest) = self.0.split_at(n);
        self.0 = rest;
        Some(head)
    }
    fn u8(&mut self) -> Option<u8> {
        self.take(1).map(|b| b[0])
    }
    fn u32(&mut self) -> Option<u32> {
        Some(u32::from_le_bytes(self.take(4)?.try_into().ok()?))
    }
    fn u64(&mut self) -> Option<u64> {
        Some(u64::from_le_bytes(self.take(8)?.try_into().ok()?))
    }
    fn i128(&mut self) -> Option<i128> {
        Some(i128::from_le_bytes(self.take(16)?.try_into().ok()?))
    }
    fn str(&mut self) -> Option<&'a str> {
        let n = self.u32()? as usize;
        std::str::from_utf8(self.take(n)?).ok()
    }
    fn key(&mut self) -> Option<StatKey> {
        Some(StatKey {
            dev: self.u64()?,
            ino: self.u64()?,
            size: self.u64()?,
            mode: self.u32()?,
            mtime: self.i128()?,
            ctime: self.i128()?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(name: &str) -> Entry {
        Entry {
            name: name.into(),
            key: StatKey {
                ino: 7,
                ..StatKey::default()
            },
            racy: false,
            kind: Kind::Indexed,
            len: 3,
        }
    }

    #[test]
    fn a_bucket_reads_back_and_a_torn_one_does_not() {
        let entries = vec![
            (entry("a"), vec![("lock".into(), 2), ("timeout".into(), 1)]),
            (
                Entry {
                    kind: Kind::Skipped("bad yaml".into()),
                    ..entry("b")
                },
                vec![],
            ),
            (entry("c"), vec![("lock".into(), 1)]),
        ];
        let bytes = encode(9, 4, &entries);
        let b = decode(&bytes).unwrap();
        assert_eq!((b.id, b.fingerprint, b.terms()), (9, 4, 2));
        assert_eq!(b.entries[1].kind, Kind::Skipped("bad yaml".into()));
        let lock = b.find("lock").unwrap();
        assert_eq!(b.postings(lock), [(0, 2), (2, 1)]);
        assert_eq!(b.find("lo"), None);
        assert_eq!(b.per_entry()[0].len(), 2);
        for cut in [0, 1, 8, bytes.len() / 2, bytes.len() - 1] {
            assert!(decode(&bytes[..cut]).is_none(), "cut at {cut}");
        }
        let mut flipped = bytes.clone();
        flipped[20] ^= 1;
        assert!(decode(&flipped).is_none());
        assert!(decode(&vec![0; bytes.len()]).is_none());
    }
}
