//! The search index's bucket files: for up to about a thousand files of one directory,
//! each file's stat data and what it gave (indexed, skipped, not text), and the bucket's
//! inverted index: its terms, sorted, each with the files holding it and how often.
//!
//! A file is a fixed header, then the entries (names, stat data, lengths), then the term
//! directory (each term with where its postings are, how many, and their CRC-32), then the
//! postings. A search reads the header, the entries and the directory, and then only the
//! postings of the terms it looks for: the bulk of the file, the postings of every other
//! term, is never read. The header, the entries and the directory each carry a CRC-32,
//! and so does each term's postings; the file is written whole to a temp file and renamed
//! over, so a torn, zeroed or foreign file reads as missing, and postings that fail their
//! check make the search build the index again.

use std::collections::BTreeMap;
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::Path;

use crate::index::files::{Reader, put_key, put_str, put_u32};
use crate::index::stat::StatKey;

const MAGIC: &[u8; 8] = b"TVSRBKT2";

/// The header's length: magic, id, fingerprint, the three parts' lengths, their CRCs and
/// the header's own.
const HEADER: usize = 8 + 8 + 8 + 4 + 4 + 8 + 4 + 4 + 4;

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

/// Where a bucket's postings are read from.
#[derive(Debug, Default)]
enum Source {
    #[default]
    None,
    /// The bucket file, open, and where its postings start.
    File(File, u64),
    /// The postings' bytes (a bucket just written).
    Memory(Vec<u8>),
}

/// A bucket as read: its entries, sorted by name, and its term directory.
#[derive(Debug, Default)]
pub struct Bucket {
    pub id: u64,
    pub fingerprint: u64,
    pub entries: Vec<Entry>,
    /// The directory's bytes (after its first 4, the count): records of a term, its
    /// postings' offset, count and CRC-32, sorted by term.
    dir: Vec<u8>,
    /// Where each record starts in the directory (less its first 4 bytes).
    offsets: Vec<u32>,
    source: Source,
}

/// One term's postings: (entry index, term frequency).
pub type Postings = Vec<(u32, u32)>;

impl Bucket {
    pub fn terms(&self) -> usize {
        self.offsets.len()
    }

    fn dict(&self) -> &[u8] {
        self.dir.get(4..).unwrap_or_default()
    }

    /// Where the `i`th term's postings are: (offset, count, CRC-32).
    fn record(&self, i: usize) -> (u64, usize, u32) {
        let dict = self.dict();
        let at = self.offsets[i] as usize;
        let u32_at =
            |at: usize| u32::from_le_bytes(dict[at..at + 4].try_into().unwrap_or_default());
        let at = at + 4 + u32_at(at) as usize;
        (
            u64::from_le_bytes(dict[at..at + 8].try_into().unwrap_or_default()),
            u32_at(at + 8) as usize,
            u32_at(at + 12),
        )
    }

    /// The `i`th term's bytes (UTF-8, checked when the bucket was read).
    pub fn term_bytes(&self, i: usize) -> &[u8] {
        let dict = self.dict();
        let at = self.offsets[i] as usize;
        let n = u32::from_le_bytes(dict[at..at + 4].try_into().unwrap_or_default()) as usize;
        &dict[at + 4..at + 4 + n]
    }

    pub fn term(&self, i: usize) -> &str {
        std::str::from_utf8(self.term_bytes(i)).unwrap_or("")
    }

    /// The `i`th term's postings; None when they cannot be read or fail their check (the
    /// index must then be built again).
    pub fn postings(&self, i: usize) -> Option<Postings> {
        let (off, count, crc) = self.record(i);
        let len = count.checked_mul(8)?;
        let owned;
        let bytes: &[u8] = match &self.source {
            Source::None => return None,
            Source::Memory(m) => m.get(off as usize..(off as usize).checked_add(len)?)?,
            Source::File(f, base) => {
                let mut buf = vec![0; len];
                f.read_exact_at(&mut buf, base.checked_add(off)?).ok()?;
                owned = buf;
                &owned
            }
        };
        if crc32fast::hash(bytes) != crc {
            return None;
        }
        let n = self.entries.len() as u32;
        let mut out = Vec::with_capacity(count);
        for p in bytes.chunks_exact(8) {
            let e = u32::from_le_bytes(p[..4].try_into().ok()?);
            if e >= n {
                return None;
            }
            out.push((e, u32::from_le_bytes(p[4..].try_into().ok()?)));
        }
        Some(out)
    }

    /// The index of `term` in the dictionary.
    pub fn find(&self, term: &str) -> Option<usize> {
        // Byte order is the order of UTF-8 strings.
        let term = term.as_bytes();
        let (mut lo, mut hi) = (0, self.offsets.len());
        while lo < hi {
            let mid = (lo + hi) / 2;
            match self.term_bytes(mid).cmp(term) {
                std::cmp::Ordering::Less => lo = mid + 1,
                std::cmp::Ordering::Greater => hi = mid,
                std::cmp::Ordering::Equal => return Some(mid),
            }
        }
        None
    }

    /// Each entry's terms with their frequencies (the dictionary turned back around), to
    /// build the bucket again with some entries changed; None when a term's postings
    /// cannot be read.
    pub fn per_entry(&self) -> Option<Vec<Vec<(String, u32)>>> {
        let mut out = vec![Vec::new(); self.entries.len()];
        for i in 0..self.terms() {
            let term = self.term(i);
            for (e, tf) in self.postings(i)? {
                if let Some(list) = out.get_mut(e as usize) {
                    list.push((term.to_string(), tf));
                }
            }
        }
        Some(out)
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
    let mut head = Vec::with_capacity(entries.len() * 80);
    put_u32(&mut head, entries.len() as u32);
    for (e, _) in entries {
        put_str(&mut head, &e.name);
        put_key(&mut head, &e.key);
        head.push(e.racy as u8);
        match &e.kind {
            Kind::Indexed => head.push(0),
            Kind::Skipped(problem) => {
                head.push(1);
                put_str(&mut head, problem);
            }
            Kind::Ignored => head.push(2),
        }
        put_u32(&mut head, e.len);
    }
    let mut dir = Vec::with_capacity(dict.len() * 28);
    let mut post = Vec::new();
    put_u32(&mut dir, dict.len() as u32);
    for (term, postings) in &dict {
        let at = post.len() as u64;
        for (e, tf) in postings {
            put_u32(&mut post, *e);
            put_u32(&mut post, *tf);
        }
        put_str(&mut dir, term);
        dir.extend_from_slice(&at.to_le_bytes());
        put_u32(&mut dir, postings.len() as u32);
        put_u32(&mut dir, crc32fast::hash(&post[at as usize..]));
    }
    let mut out = Vec::with_capacity(HEADER + head.len() + dir.len() + post.len());
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&id.to_le_bytes());
    out.extend_from_slice(&fingerprint.to_le_bytes());
    put_u32(&mut out, head.len() as u32);
    put_u32(&mut out, dir.len() as u32);
    out.extend_from_slice(&(post.len() as u64).to_le_bytes());
    put_u32(&mut out, crc32fast::hash(&head));
    put_u32(&mut out, crc32fast::hash(&dir));
    let crc = crc32fast::hash(&out);
    put_u32(&mut out, crc);
    out.extend_from_slice(&head);
    out.extend_from_slice(&dir);
    out.extend_from_slice(&post);
    out
}

/// The header's fields: id, fingerprint, the lengths of the entries, the directory and
/// the postings, and the first two's CRCs.
struct Header {
    id: u64,
    fingerprint: u64,
    head_len: usize,
    dir_len: usize,
    post_len: u64,
    head_crc: u32,
    dir_crc: u32,
}

fn header(bytes: &[u8]) -> Option<Header> {
    let bytes = bytes.get(..HEADER)?;
    let (body, crc) = bytes.split_at(HEADER - 4);
    if crc32fast::hash(body) != u32::from_le_bytes(crc.try_into().ok()?) {
        return None;
    }
    let mut r = Reader(body);
    if r.take(8)? != MAGIC {
        return None;
    }
    Some(Header {
        id: r.u64()?,
        fingerprint: r.u64()?,
        head_len: r.u32()? as usize,
        dir_len: r.u32()? as usize,
        post_len: r.u64()?,
        head_crc: r.u32()?,
        dir_crc: r.u32()?,
    })
}

/// A bucket from its entries' and directory's bytes, checked.
fn front(h: &Header, head: &[u8], dir: Vec<u8>, source: Source) -> Option<Bucket> {
    if crc32fast::hash(head) != h.head_crc || crc32fast::hash(&dir) != h.dir_crc {
        return None;
    }
    let mut r = Reader(head);
    let n = r.u32()? as usize;
    let mut entries = Vec::with_capacity(n.min(head.len() / 60));
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
    if !r.0.is_empty() {
        return None;
    }
    let mut d = Reader(&dir);
    let terms = d.u32()? as usize;
    let dict = d.0;
    let mut offsets = Vec::with_capacity(terms.min(dict.len() / 20));
    let mut previous: Option<&[u8]> = None;
    for _ in 0..terms {
        offsets.push((dict.len() - d.0.len()) as u32);
        let n = d.u32()? as usize;
        let term = d.take(n)?;
        if !term.is_ascii() && std::str::from_utf8(term).is_err() {
            return None;
        }
        // Sorted and unique (as bytes, which is as UTF-8 strings), or binary search
        // would lie.
        if previous.is_some_and(|p| p >= term) {
            return None;
        }
        previous = Some(term);
        let at = d.u64()?;
        let count = d.u32()? as u64;
        d.u32()?;
        if at.checked_add(count.checked_mul(8)?)? > h.post_len {
            return None;
        }
    }
    if !d.0.is_empty() {
        return None;
    }
    Some(Bucket {
        id: h.id,
        fingerprint: h.fingerprint,
        entries,
        dir,
        offsets,
        source,
    })
}

/// A bucket from its bytes; None when torn, of another format, or not one.
pub fn decode(bytes: &[u8]) -> Option<Bucket> {
    let h = header(bytes)?;
    let rest = &bytes[HEADER..];
    let dir_end = h.head_len.checked_add(h.dir_len)?;
    if rest.len() as u64 != (dir_end as u64).checked_add(h.post_len)? {
        return None;
    }
    let post = rest[dir_end..].to_vec();
    front(
        &h,
        &rest[..h.head_len],
        rest[h.head_len..dir_end].to_vec(),
        Source::Memory(post),
    )
}

/// A bucket from its file, reading its entries and directory only (the postings are read
/// when asked for); None when missing, torn, of another format, or not one.
pub fn open(path: &Path) -> Option<Bucket> {
    let file = File::open(path).ok()?;
    let size = file.metadata().ok()?.len();
    let mut head = [0u8; HEADER];
    file.read_exact_at(&mut head, 0).ok()?;
    let h = header(&head)?;
    let dir_end = h.head_len.checked_add(h.dir_len)?;
    if size != (HEADER as u64 + dir_end as u64).checked_add(h.post_len)? {
        return None;
    }
    // The entries are read into a buffer each thread keeps (they are decoded from it);
    // the directory into the bucket's own.
    thread_local! {
        static HEAD: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
    }
    HEAD.with_borrow_mut(|head| {
        head.clear();
        head.resize(h.head_len, 0);
        file.read_exact_at(head, HEADER as u64).ok()?;
        let mut dir = vec![0; h.dir_len];
        file.read_exact_at(&mut dir, (HEADER + h.head_len) as u64)
            .ok()?;
        let base = (HEADER + dir_end) as u64;
        front(&h, head, dir, Source::File(file, base))
    })
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
        assert_eq!(b.postings(lock).unwrap(), [(0, 2), (2, 1)]);
        assert_eq!(b.find("lo"), None);
        assert_eq!(b.per_entry().unwrap()[0].len(), 2);
        for cut in [0, 1, 8, bytes.len() / 2, bytes.len() - 1] {
            assert!(decode(&bytes[..cut]).is_none(), "cut at {cut}");
        }
        let mut flipped = bytes.clone();
        flipped[20] ^= 1;
        assert!(decode(&flipped).is_none());
        assert!(decode(&vec![0; bytes.len()]).is_none());

        // From its file: the same, the postings read when asked for.
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("b");
        std::fs::write(&path, &bytes).unwrap();
        let f = open(&path).unwrap();
        assert_eq!(f.entries, b.entries);
        assert_eq!(f.postings(f.find("timeout").unwrap()).unwrap(), [(0, 1)]);
        // A flipped bit in the postings: the bucket opens, its postings fail their check.
        let mut bad = bytes.clone();
        let last = bad.len() - 1;
        bad[last] ^= 1;
        std::fs::write(&path, &bad).unwrap();
        let f = open(&path).unwrap();
        let broken = (0..f.terms()).filter(|&i| f.postings(i).is_none()).count();
        assert_eq!(broken, 1);
        assert!(f.per_entry().is_none());
        std::fs::write(&path, &bytes[..bytes.len() - 1]).unwrap();
        assert!(open(&path).is_none());
        assert!(open(&dir.path().join("missing")).is_none());
    }
}
