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
    /// The postings' length in bytes.
    post_len: u64,
    source: Source,
}

/// A file's entry with its terms and their frequencies.
pub type Analysed = (Entry, Vec<(String, u32)>);

/// An entry of a bucket being rewritten: read again (`Ok`), or the old bucket's `i`th
/// entry kept with its terms (`Err(i)`).
pub type Slot = std::result::Result<Analysed, usize>;

/// One term's postings: (entry index, term frequency).
pub type Postings = Vec<(u32, u32)>;

/// Gives `emit` each new term from `fresh[*f]` on that sorts before `until` (every one
/// left when None), with its postings, and moves `*f` past them. `fresh` is sorted by term.
fn emit_fresh(
    fresh: &[(&str, u32, u32)],
    f: &mut usize,
    until: Option<&[u8]>,
    merged: &mut Vec<(u32, u32)>,
    emit: &mut impl FnMut(&[u8], &[(u32, u32)]),
) {
    while *f < fresh.len() && until.is_none_or(|u| fresh[*f].0.as_bytes() < u) {
        let t = fresh[*f].0.as_bytes();
        merged.clear();
        while *f < fresh.len() && fresh[*f].0.as_bytes() == t {
            merged.push((fresh[*f].1, fresh[*f].2));
            *f += 1;
        }
        emit(t, merged);
    }
}

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

    /// Every term's postings' bytes, read at once (one read of the file, not one per
    /// term); None when they cannot be read.
    fn all_postings(&self) -> Option<std::borrow::Cow<'_, [u8]>> {
        let len = usize::try_from(self.post_len).ok()?;
        match &self.source {
            Source::None => (self.offsets.is_empty()).then_some(std::borrow::Cow::Borrowed(&[])),
            Source::Memory(m) => (m.len() == len).then_some(std::borrow::Cow::Borrowed(m)),
            Source::File(f, base) => {
                let mut buf = vec![0; len];
                f.read_exact_at(&mut buf, *base).ok()?;
                Some(std::borrow::Cow::Owned(buf))
            }
        }
    }

    /// This bucket with its entries replaced by `entries` (sorted by name): each either
    /// one of its own, kept with its terms (`Err(i)`: its `i`th entry, in the order they
    /// are here), or a file read again with its terms (`Ok`). The bytes are those
    /// [`encode`] makes of the same entries and terms, made by merging the new terms into
    /// the term directory as it is (its postings renumbered), without turning it back
    /// around into each entry's terms. None when a term's postings cannot be read or fail
    /// their check (the bucket must then be built from the files).
    pub fn rewrite(&self, id: u64, fingerprint: u64, entries: &[Slot]) -> Option<Vec<u8>> {
        // Each old entry's place in the new bucket (kept ones keep their order: both are
        // sorted by name).
        let mut place = vec![u32::MAX; self.entries.len()];
        let mut fresh: Vec<(&str, u32, u32)> = Vec::new();
        for (at, e) in entries.iter().enumerate() {
            match e {
                Err(i) => *place.get_mut(*i)? = at as u32,
                Ok((_, terms)) => {
                    fresh.extend(terms.iter().map(|(t, tf)| (t.as_str(), at as u32, *tf)))
                }
            }
        }
        fresh.sort_unstable_by(|x, y| x.0.as_bytes().cmp(y.0.as_bytes()).then(x.1.cmp(&y.1)));
        let post_all = self.all_postings()?;
        let mut dir = Vec::with_capacity(self.dir.len() + fresh.len() * 28);
        let mut post = Vec::with_capacity(post_all.len() + fresh.len() * 8);
        put_u32(&mut dir, 0);
        let mut terms = 0u32;
        let mut merged: Vec<(u32, u32)> = Vec::new();
        let mut emit = |term: &[u8], merged: &[(u32, u32)]| {
            if merged.is_empty() {
                return;
            }
            let at = post.len();
            for (e, tf) in merged {
                put_u32(&mut post, *e);
                put_u32(&mut post, *tf);
            }
            put_u32(&mut dir, term.len() as u32);
            dir.extend_from_slice(term);
            dir.extend_from_slice(&(at as u64).to_le_bytes());
            put_u32(&mut dir, merged.len() as u32);
            put_u32(&mut dir, crc32fast::hash(&post[at..]));
            terms += 1;
        };
        let mut f = 0;
        for i in 0..self.terms() {
            let term = self.term_bytes(i);
            // The new terms that sort before this one.
            emit_fresh(&fresh, &mut f, Some(term), &mut merged, &mut emit);
            let (off, count, crc) = self.record(i);
            let start = usize::try_from(off).ok()?;
            let bytes = post_all.get(start..start.checked_add(count.checked_mul(8)?)?)?;
            if crc32fast::hash(bytes) != crc {
                return None;
            }
            merged.clear();
            let mut new = fresh[f..]
                .iter()
                .take_while(|x| x.0.as_bytes() == term)
                .map(|x| (x.1, x.2))
                .peekable();
            for p in bytes.chunks_exact(8) {
                let e = u32::from_le_bytes(p[..4].try_into().ok()?) as usize;
                let to = *place.get(e)?;
                if to == u32::MAX {
                    continue;
                }
                while let Some(n) = new.next_if(|n| n.0 < to) {
                    merged.push(n);
                }
                merged.push((to, u32::from_le_bytes(p[4..].try_into().ok()?)));
            }
            merged.extend(new);
            while f < fresh.len() && fresh[f].0.as_bytes() == term {
                f += 1;
            }
            emit(term, &merged);
        }
        emit_fresh(&fresh, &mut f, None, &mut merged, &mut emit);
        dir[..4].copy_from_slice(&terms.to_le_bytes());
        let head = head_bytes(entries.iter().map(|e| match e {
            Ok((entry, _)) => entry,
            Err(i) => &self.entries[*i],
        }));
        Some(assemble(id, fingerprint, &head, &dir, &post))
    }
}

/// A bucket's bytes: `entries` (sorted by name) with each one's terms, encoded whole (what
/// [`Bucket::rewrite`] is held to).
#[cfg(test)]
pub fn encode(id: u64, fingerprint: u64, entries: &[(Entry, Vec<(String, u32)>)]) -> Vec<u8> {
    use std::collections::BTreeMap;
    let mut dict: BTreeMap<&str, Postings> = BTreeMap::new();
    for (i, (_, terms)) in entries.iter().enumerate() {
        for (t, tf) in terms {
            dict.entry(t.as_str()).or_default().push((i as u32, *tf));
        }
    }
    let head = head_bytes(entries.iter().map(|(e, _)| e));
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
    assemble(id, fingerprint, &head, &dir, &post)
}

/// The entries' part of a bucket file.
fn head_bytes<'e>(entries: impl ExactSizeIterator<Item = &'e Entry>) -> Vec<u8> {
    let mut head = Vec::with_capacity(entries.len() * 80);
    put_u32(&mut head, entries.len() as u32);
    for e in entries {
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
    head
}

/// A bucket file of its parts: the header, then the entries, the directory, the postings.
fn assemble(id: u64, fingerprint: u64, head: &[u8], dir: &[u8], post: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(HEADER + head.len() + dir.len() + post.len());
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&id.to_le_bytes());
    out.extend_from_slice(&fingerprint.to_le_bytes());
    put_u32(&mut out, head.len() as u32);
    put_u32(&mut out, dir.len() as u32);
    out.extend_from_slice(&(post.len() as u64).to_le_bytes());
    put_u32(&mut out, crc32fast::hash(head));
    put_u32(&mut out, crc32fast::hash(dir));
    let crc = crc32fast::hash(&out);
    put_u32(&mut out, crc);
    out.extend_from_slice(head);
    out.extend_from_slice(dir);
    out.extend_from_slice(post);
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
        post_len: h.post_len,
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
        // Entry "b" dropped, "a" kept, "c" read again with other terms, "d" added.
        let changed = [
            Err(0),
            Ok((entry("c"), vec![("cache".into(), 1), ("lock".into(), 3)])),
            Ok((entry("d"), vec![("timeout".into(), 4)])),
        ];
        let whole = vec![
            entries[0].clone(),
            (entry("c"), vec![("cache".into(), 1), ("lock".into(), 3)]),
            (entry("d"), vec![("timeout".into(), 4)]),
        ];
        assert_eq!(b.rewrite(5, 4, &changed).unwrap(), encode(5, 4, &whole));
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
        assert!(f.rewrite(5, 4, &[Err(0), Err(2)]).is_none());
        std::fs::write(&path, &bytes[..bytes.len() - 1]).unwrap();
        assert!(open(&path).is_none());
        assert!(open(&dir.path().join("missing")).is_none());
    }

    /// Terms drawn from a few, some shared: (term, frequency) sorted and unique.
    fn terms() -> impl proptest::strategy::Strategy<Value = Vec<(String, u32)>> {
        proptest::collection::btree_map("[a-d\u{e9}]{1,3}", 1u32..4, 0..6)
            .prop_map(|m| m.into_iter().collect())
    }

    use proptest::strategy::Strategy;

    proptest::proptest! {
        /// A bucket rewritten by merging (entries kept, dropped, read again, added) holds
        /// the very bytes a bucket encoded whole from the same entries holds, read from
        /// its file or from memory.
        #[test]
        fn a_rewrite_is_the_same_bucket_as_one_encoded_whole(
            files in proptest::collection::btree_map(
                "[a-h]{1,2}",
                (proptest::option::of(terms()), 0u8..3, terms()),
                0..10,
            )
        ) {
            let old: Vec<(Entry, Vec<(String, u32)>)> = files
                .iter()
                .filter_map(|(n, (old, _, _))| Some((entry(n), old.clone()?)))
                .collect();
            let bytes = encode(1, 2, &old);
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("b");
            std::fs::write(&path, &bytes).unwrap();
            let mut merged = Vec::new();
            let mut whole = Vec::new();
            for (name, (_, action, new)) in &files {
                let at = old.iter().position(|(e, _)| &e.name == name);
                match (at, action) {
                    // Kept.
                    (Some(i), 0) => {
                        merged.push(Err(i));
                        whole.push(old[i].clone());
                    }
                    // Gone (or never there).
                    (_, 1) => {}
                    // Read again, or new.
                    _ => {
                        let e = Entry { len: new.len() as u32, ..entry(name) };
                        merged.push(Ok((e.clone(), new.clone())));
                        whole.push((e, new.clone()));
                    }
                }
            }
            let want = encode(7, 2, &whole);
            proptest::prop_assert_eq!(&decode(&bytes).unwrap().rewrite(7, 2, &merged).unwrap(), &want);
            proptest::prop_assert_eq!(&open(&path).unwrap().rewrite(7, 2, &merged).unwrap(), &want);
        }
    }
}
