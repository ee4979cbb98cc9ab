//! The search index's bucket files: for up to about a thousand files of one directory,
//! each file's stat data and what it gave (indexed, skipped, not text), and the bucket's
//! inverted index: its terms, sorted, each with the files holding it and how often.
//!
//! A file is a fixed header, then its sections: the entries, the term directory, the
//! terms' references, the entries' stat data, the postings. Every section but the last
//! is made of fixed-width columns (then, for the entries and the terms, the text they
//! point into), so that the `i`th name, length or term is found without decoding the
//! ones before it. A search reads the header, the entries and the directory in one read;
//! each term it looks for, its reference (where its postings are, how many, their
//! CRC-32) and its postings; nothing else. The stat data are read only when a file of
//! the bucket must be checked (no watcher vouches for it), and the bulk of the file, the
//! postings of every other term, never. Each section carries a CRC-32 (the postings one
//! per term) and so does the header; the file is written whole to a temp file and
//! renamed over, so a torn, zeroed or foreign file reads as missing, and a section or
//! postings that fail their check make the search build the index again.

use std::borrow::Cow;
use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::os::unix::fs::FileExt;
use std::path::Path;

use crate::index::files::{Reader, put_key, put_u32, put_u64};
use crate::index::stat::StatKey;

const MAGIC: &[u8; 8] = b"TVSRBKT3";

/// The header's length: magic, id, fingerprint, the lengths of the entries, the
/// directory, the references and the stat data (u32 each) and of the postings (u64),
/// the CRCs of the first four, and the header's own.
const HEADER: usize = 8 + 8 + 8 + 4 * 4 + 8 + 4 * 4 + 4;

/// One file's stat data in the stat data section.
const KEY: usize = 60;

/// One term's reference: its postings' offset (u64), count and CRC-32 (u32 each).
const REF: usize = 16;

/// The entries section: the count, then per entry its length (u32), its flags (u8:
/// racy, then the kind), where its name ends and where its problem ends in the text that
/// follows (u32 each; a problem follows its name), then that text.
const ENTRY: usize = 4 + 1 + 4 + 4;

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

/// Where a bucket's sections past the directory are read from.
#[derive(Debug, Default)]
enum Source {
    #[default]
    None,
    /// The bucket file, open.
    File(File),
    /// The bucket file's bytes (a bucket just written).
    Memory(Vec<u8>),
}

/// A bucket as read: its entries (sorted by name) and its term directory, each as the
/// file holds them, read in one piece; the rest is read when asked for.
#[derive(Debug, Default)]
pub struct Bucket {
    pub id: u64,
    pub fingerprint: u64,
    /// The entries section, then the directory section.
    front: Vec<u8>,
    head_len: usize,
    /// How many entries, and how many terms.
    n: usize,
    t: usize,
    /// Of the entries indexed: how many, and their lengths summed (BM25's statistics).
    pub indexed: u64,
    pub total_len: u64,
    /// Where the references, the stat data and the postings are in the file, and their
    /// lengths and CRCs.
    refs_at: u64,
    keys_at: u64,
    post_at: u64,
    post_len: u64,
    refs_crc: u32,
    keys_crc: u32,
    source: Source,
}

/// A file's entry with its terms and their frequencies.
pub type Analysed = (Entry, Vec<(String, u32)>);

/// An entry of a bucket being rewritten: read again (`Ok`), or the old bucket's `i`th
/// entry kept with its terms (`Err(i)`).
pub type Slot = std::result::Result<Analysed, usize>;

/// One term's postings: (entry index, term frequency).
pub type Postings = Vec<(u32, u32)>;

fn u32_at(bytes: &[u8], at: usize) -> u32 {
    bytes
        .get(at..at + 4)
        .and_then(|b| b.try_into().ok())
        .map_or(0, u32::from_le_bytes)
}

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
    /// How many entries it holds.
    pub fn count(&self) -> usize {
        self.n
    }

    #[cfg(test)]
    pub fn terms(&self) -> usize {
        self.t
    }

    fn head(&self) -> &[u8] {
        &self.front[..self.head_len.min(self.front.len())]
    }

    /// The `i`th entry's name (checked UTF-8 when the bucket was read).
    pub fn name(&self, i: usize) -> &str {
        let (start, end, _) = self.text(i);
        let head = self.head();
        std::str::from_utf8(&head[4 + ENTRY * self.n + start..4 + ENTRY * self.n + end])
            .unwrap_or("")
    }

    /// Where the `i`th entry's name starts and ends, and its problem ends, in the text.
    fn text(&self, i: usize) -> (usize, usize, usize) {
        let head = self.head();
        let n = self.n;
        let start = if i == 0 {
            0
        } else {
            u32_at(head, 4 + 9 * n + 4 * (i - 1)) as usize
        };
        (
            start,
            u32_at(head, 4 + 5 * n + 4 * i) as usize,
            u32_at(head, 4 + 9 * n + 4 * i) as usize,
        )
    }

    /// The `i`th entry's length in terms.
    pub fn doc_len(&self, i: usize) -> u32 {
        u32_at(self.head(), 4 + 4 * i)
    }

    fn flags(&self, i: usize) -> u8 {
        self.head()[4 + 4 * self.n + i]
    }

    pub fn racy(&self, i: usize) -> bool {
        self.flags(i) & 1 != 0
    }

    /// Whether any entry was read too close to its last change.
    pub fn any_racy(&self) -> bool {
        (0..self.n).any(|i| self.racy(i))
    }

    /// Why the `i`th entry is skipped, if it is.
    pub fn problem(&self, i: usize) -> Option<&str> {
        if self.flags(i) >> 1 != 1 {
            return None;
        }
        let (_, name_end, end) = self.text(i);
        let at = 4 + ENTRY * self.n;
        std::str::from_utf8(&self.head()[at + name_end..at + end]).ok()
    }

    pub fn kind(&self, i: usize) -> Kind {
        match self.flags(i) >> 1 {
            0 => Kind::Indexed,
            1 => Kind::Skipped(self.problem(i).unwrap_or_default().to_string()),
            _ => Kind::Ignored,
        }
    }

    /// `len` bytes of the file from `at`; None when they cannot be read.
    fn read(&self, at: u64, len: usize) -> Option<Cow<'_, [u8]>> {
        if len == 0 {
            return Some(Cow::Borrowed(&[]));
        }
        match &self.source {
            Source::None => None,
            Source::Memory(m) => {
                let at = usize::try_from(at).ok()?;
                m.get(at..at.checked_add(len)?).map(Cow::Borrowed)
            }
            Source::File(f) => {
                let mut buf = vec![0; len];
                f.read_exact_at(&mut buf, at).ok()?;
                Some(Cow::Owned(buf))
            }
        }
    }

    /// Every entry's stat data, in order; None when they cannot be read or fail their
    /// check.
    pub fn keys(&self) -> Option<Vec<StatKey>> {
        let bytes = self.read(self.keys_at, self.n.checked_mul(KEY)?)?;
        if crc32fast::hash(&bytes) != self.keys_crc {
            return None;
        }
        let mut r = Reader(&bytes);
        (0..self.n).map(|_| r.key()).collect()
    }

    /// Every entry, decoded; None when their stat data cannot be read.
    pub fn entries(&self) -> Option<Vec<Entry>> {
        let keys = self.keys()?;
        Some(
            keys.into_iter()
                .enumerate()
                .map(|(i, key)| Entry {
                    name: self.name(i).to_string(),
                    key,
                    racy: self.racy(i),
                    kind: self.kind(i),
                    len: self.doc_len(i),
                })
                .collect(),
        )
    }

    fn dir(&self) -> &[u8] {
        self.front.get(self.head_len..).unwrap_or_default()
    }

    /// The `i`th term's bytes (UTF-8 when the bucket was written).
    pub fn term_bytes(&self, i: usize) -> &[u8] {
        let dir = self.dir();
        let start = if i == 0 {
            0
        } else {
            u32_at(dir, 4 * i) as usize
        };
        let end = u32_at(dir, 4 + 4 * i) as usize;
        let at = 4 + 4 * self.t;
        dir.get(at + start..at + end).unwrap_or_default()
    }

    /// Gives `f` each term whose length in bytes is within `lo..=hi`, with its index, in
    /// order; the lengths are told by the terms' ends, the other terms' bytes are not read.
    pub fn terms_within(&self, lo: usize, hi: usize, mut f: impl FnMut(usize, &[u8])) {
        let dir = self.dir();
        let at = 4 + 4 * self.t;
        let (Some(ends), Some(text)) = (dir.get(4..at), dir.get(at..)) else {
            return;
        };
        let mut start = 0usize;
        for (i, end) in ends.chunks_exact(4).enumerate() {
            let end = u32::from_le_bytes([end[0], end[1], end[2], end[3]]) as usize;
            if (lo..=hi).contains(&end.wrapping_sub(start))
                && let Some(t) = text.get(start..end)
            {
                f(i, t);
            }
            start = end;
        }
    }

    pub fn term(&self, i: usize) -> &str {
        std::str::from_utf8(self.term_bytes(i)).unwrap_or("")
    }

    /// A reference's fields: (offset, count, CRC-32) of the postings, checked to lie in
    /// the postings.
    fn reference(&self, bytes: &[u8]) -> Option<(u64, usize, u32)> {
        let mut r = Reader(bytes);
        let (off, count, crc) = (r.u64()?, r.u32()? as usize, r.u32()?);
        if off.checked_add((count as u64).checked_mul(8)?)? > self.post_len {
            return None;
        }
        Some((off, count, crc))
    }

    /// The `i`th term's postings; None when they cannot be read or fail their check (the
    /// index must then be built again).
    pub fn postings(&self, i: usize) -> Option<Postings> {
        if i >= self.t {
            return None;
        }
        let r = self.read(self.refs_at + (i * REF) as u64, REF)?;
        let (off, count, crc) = self.reference(&r)?;
        let bytes = self.read(self.post_at.checked_add(off)?, count.checked_mul(8)?)?;
        if crc32fast::hash(&bytes) != crc {
            return None;
        }
        let n = self.n as u32;
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
        let (mut lo, mut hi) = (0, self.t);
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

    /// This bucket with its entries replaced by `entries` (sorted by name): each either
    /// one of its own, kept with its terms (`Err(i)`: its `i`th entry, in the order they
    /// are here), or a file read again with its terms (`Ok`). The bytes are those
    /// [`encode`] makes of the same entries and terms, made by merging the new terms into
    /// the term directory as it is (its postings renumbered), without turning it back
    /// around into each entry's terms. None when a section or a term's postings cannot
    /// be read or fail their check (the bucket must then be built from the files).
    pub fn rewrite(&self, id: u64, fingerprint: u64, entries: &[Slot]) -> Option<Vec<u8>> {
        let old = self.entries()?;
        // Each old entry's place in the new bucket (kept ones keep their order: both are
        // sorted by name).
        let mut place = vec![u32::MAX; self.n];
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
        let refs = self.read(self.refs_at, self.t.checked_mul(REF)?)?;
        if crc32fast::hash(&refs) != self.refs_crc {
            return None;
        }
        let post_all = self.read(self.post_at, usize::try_from(self.post_len).ok()?)?;
        let mut dict = Dict::default();
        let mut merged: Vec<(u32, u32)> = Vec::new();
        let mut emit = |term: &[u8], merged: &[(u32, u32)]| dict.push(term, merged);
        let mut f = 0;
        for i in 0..self.t {
            let term = self.term_bytes(i);
            // The new terms that sort before this one.
            emit_fresh(&fresh, &mut f, Some(term), &mut merged, &mut emit);
            let (off, count, crc) = self.reference(refs.get(i * REF..(i + 1) * REF)?)?;
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
        let kept: Vec<&Entry> = entries
            .iter()
            .map(|e| match e {
                Ok((entry, _)) => Some(entry),
                Err(i) => old.get(*i),
            })
            .collect::<Option<_>>()?;
        Some(assemble(id, fingerprint, &kept, &dict))
    }
}

/// A term directory being written: its terms' ends, their text, their references, and
/// the postings.
#[derive(Default)]
struct Dict {
    ends: Vec<u8>,
    text: Vec<u8>,
    refs: Vec<u8>,
    post: Vec<u8>,
    terms: u32,
}

impl Dict {
    /// Adds a term (sorting after every one before it) and its postings; a term in no
    /// file is left out.
    fn push(&mut self, term: &[u8], postings: &[(u32, u32)]) {
        if postings.is_empty() {
            return;
        }
        let at = self.post.len();
        for (e, tf) in postings {
            put_u32(&mut self.post, *e);
            put_u32(&mut self.post, *tf);
        }
        self.text.extend_from_slice(term);
        put_u32(&mut self.ends, self.text.len() as u32);
        put_u64(&mut self.refs, at as u64);
        put_u32(&mut self.refs, postings.len() as u32);
        put_u32(&mut self.refs, crc32fast::hash(&self.post[at..]));
        self.terms += 1;
    }
}

/// A bucket's bytes: `entries` (sorted by name) with each one's terms, encoded whole (what
/// [`Bucket::rewrite`] is held to).
#[cfg(test)]
pub fn encode(id: u64, fingerprint: u64, entries: &[(Entry, Vec<(String, u32)>)]) -> Vec<u8> {
    use std::collections::BTreeMap;
    let mut terms: BTreeMap<&str, Postings> = BTreeMap::new();
    for (i, (_, t)) in entries.iter().enumerate() {
        for (t, tf) in t {
            terms.entry(t.as_str()).or_default().push((i as u32, *tf));
        }
    }
    let mut dict = Dict::default();
    for (term, postings) in &terms {
        dict.push(term.as_bytes(), postings);
    }
    let kept: Vec<&Entry> = entries.iter().map(|(e, _)| e).collect();
    assemble(id, fingerprint, &kept, &dict)
}

/// A bucket file of its parts: the header, then the entries, the directory, the
/// references, the stat data, the postings.
fn assemble(id: u64, fingerprint: u64, entries: &[&Entry], dict: &Dict) -> Vec<u8> {
    let n = entries.len();
    let mut head = Vec::with_capacity(4 + n * (ENTRY + 16));
    let mut keys = Vec::with_capacity(n * KEY);
    let mut text = Vec::new();
    let mut name_ends = Vec::with_capacity(4 * n);
    let mut ends = Vec::with_capacity(4 * n);
    put_u32(&mut head, n as u32);
    for e in entries {
        put_u32(&mut head, e.len);
    }
    for e in entries {
        let kind = match &e.kind {
            Kind::Indexed => 0,
            Kind::Skipped(_) => 1,
            Kind::Ignored => 2,
        };
        head.push(e.racy as u8 | kind << 1);
        put_key(&mut keys, &e.key);
        text.extend_from_slice(e.name.as_bytes());
        put_u32(&mut name_ends, text.len() as u32);
        if let Kind::Skipped(problem) = &e.kind {
            text.extend_from_slice(problem.as_bytes());
        }
        put_u32(&mut ends, text.len() as u32);
    }
    head.extend_from_slice(&name_ends);
    head.extend_from_slice(&ends);
    head.extend_from_slice(&text);
    let mut dir = Vec::with_capacity(4 + dict.ends.len() + dict.text.len());
    put_u32(&mut dir, dict.terms);
    dir.extend_from_slice(&dict.ends);
    dir.extend_from_slice(&dict.text);
    let sections = [&head[..], &dir, &dict.refs, &keys];
    let mut out = Vec::with_capacity(
        HEADER + sections.iter().map(|s| s.len()).sum::<usize>() + dict.post.len(),
    );
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&id.to_le_bytes());
    out.extend_from_slice(&fingerprint.to_le_bytes());
    for s in sections {
        put_u32(&mut out, s.len() as u32);
    }
    put_u64(&mut out, dict.post.len() as u64);
    for s in sections {
        put_u32(&mut out, crc32fast::hash(s));
    }
    let crc = crc32fast::hash(&out);
    put_u32(&mut out, crc);
    for s in sections {
        out.extend_from_slice(s);
    }
    out.extend_from_slice(&dict.post);
    out
}

/// The header's fields.
struct Header {
    id: u64,
    fingerprint: u64,
    head_len: usize,
    dir_len: usize,
    refs_len: usize,
    keys_len: usize,
    post_len: u64,
    head_crc: u32,
    dir_crc: u32,
    refs_crc: u32,
    keys_crc: u32,
}

impl Header {
    /// The file's whole length.
    fn size(&self) -> Option<u64> {
        (HEADER as u64)
            .checked_add(self.front_len()? as u64)?
            .checked_add(self.refs_len as u64)?
            .checked_add(self.keys_len as u64)?
            .checked_add(self.post_len)
    }

    fn front_len(&self) -> Option<usize> {
        self.head_len.checked_add(self.dir_len)
    }
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
        refs_len: r.u32()? as usize,
        keys_len: r.u32()? as usize,
        post_len: r.u64()?,
        head_crc: r.u32()?,
        dir_crc: r.u32()?,
        refs_crc: r.u32()?,
        keys_crc: r.u32()?,
    })
}

/// A bucket from its entries' and directory's bytes (`front`), checked: their CRCs, and
/// every column's values in range, so that no access can fall outside them.
fn front(h: &Header, front: Vec<u8>, source: Source) -> Option<Bucket> {
    let head = front.get(..h.head_len)?;
    let dir = front.get(h.head_len..)?;
    if crc32fast::hash(head) != h.head_crc || crc32fast::hash(dir) != h.dir_crc {
        return None;
    }
    let n = u32_at(head, 0) as usize;
    let text_at = n.checked_mul(ENTRY)?.checked_add(4)?;
    let text = head.get(text_at..)?;
    let (mut indexed, mut total_len) = (0u64, 0u64);
    let mut previous = 0usize;
    for i in 0..n {
        let len = u32_at(head, 4 + 4 * i);
        let flags = head[4 + 4 * n + i];
        let name_end = u32_at(head, 4 + 5 * n + 4 * i) as usize;
        let end = u32_at(head, 4 + 9 * n + 4 * i) as usize;
        if flags >> 1 > 2
            || flags & !7 != 0
            || name_end < previous
            || end < name_end
            || (flags >> 1 != 1 && end != name_end)
            || end > text.len()
            || !text.is_char_boundary_at(name_end)
            || !text.is_char_boundary_at(end)
        {
            return None;
        }
        if flags >> 1 == 0 {
            indexed += 1;
            total_len += len as u64;
        }
        previous = end;
    }
    // Names and problems: text, cut at character boundaries (checked above).
    if previous != text.len() || std::str::from_utf8(text).is_err() {
        return None;
    }
    let t = u32_at(dir, 0) as usize;
    let terms_at = t.checked_mul(4)?.checked_add(4)?;
    let terms = dir.get(terms_at..)?;
    let mut previous = 0u32;
    for i in 0..t {
        let end = u32_at(dir, 4 + 4 * i);
        if end < previous {
            return None;
        }
        previous = end;
    }
    // The terms' order and text are the writer's, vouched for by the CRC; a term is
    // checked to be UTF-8 when it is taken as text.
    if previous as usize != terms.len()
        || h.refs_len != t.checked_mul(REF)?
        || h.keys_len != n.checked_mul(KEY)?
    {
        return None;
    }
    let refs_at = (HEADER + h.front_len()?) as u64;
    let keys_at = refs_at + h.refs_len as u64;
    Some(Bucket {
        id: h.id,
        fingerprint: h.fingerprint,
        head_len: h.head_len,
        front,
        n,
        t,
        indexed,
        total_len,
        refs_at,
        keys_at,
        post_at: keys_at + h.keys_len as u64,
        post_len: h.post_len,
        refs_crc: h.refs_crc,
        keys_crc: h.keys_crc,
        source,
    })
}

/// Whether a byte offset is a character boundary of UTF-8 text (the text is checked to
/// be UTF-8 as a whole besides).
trait Boundary {
    fn is_char_boundary_at(&self, at: usize) -> bool;
}

impl Boundary for [u8] {
    fn is_char_boundary_at(&self, at: usize) -> bool {
        // A continuation byte is 0b10xxxxxx.
        self.get(at).is_none_or(|b| (*b as i8) >= -0x40)
    }
}

/// A bucket from its bytes; None when torn, of another format, or not one.
pub fn decode(bytes: Vec<u8>) -> Option<Bucket> {
    let h = header(&bytes)?;
    if bytes.len() as u64 != h.size()? {
        return None;
    }
    let f = bytes.get(HEADER..HEADER + h.front_len()?)?.to_vec();
    front(&h, f, Source::Memory(bytes))
}

/// A bucket from its file, reading its entries and directory only (the rest is read
/// when asked for); None when missing, torn, of another format, or not one.
pub fn open(path: &Path) -> Option<Bucket> {
    let mut file = File::open(path).ok()?;
    let size = file.metadata().ok()?.len();
    let mut head = [0u8; HEADER];
    file.read_exact_at(&mut head, 0).ok()?;
    let h = header(&head)?;
    if size != h.size()? {
        return None;
    }
    // Read into a buffer of the right capacity, not zeroed first.
    let len = h.front_len()?;
    let mut buf = Vec::with_capacity(len);
    file.seek(SeekFrom::Start(HEADER as u64)).ok()?;
    (&mut file).take(len as u64).read_to_end(&mut buf).ok()?;
    if buf.len() != len {
        return None;
    }
    front(&h, buf, Source::File(file))
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
        let b = decode(bytes.clone()).unwrap();
        assert_eq!((b.id, b.fingerprint, b.terms()), (9, 4, 2));
        assert_eq!(b.kind(1), Kind::Skipped("bad yaml".into()));
        assert_eq!(b.problem(1), Some("bad yaml"));
        assert_eq!(
            (b.name(1), b.count(), b.indexed, b.total_len),
            ("b", 3, 2, 6)
        );
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
            assert!(decode(bytes[..cut].to_vec()).is_none(), "cut at {cut}");
        }
        let mut flipped = bytes.clone();
        flipped[20] ^= 1;
        assert!(decode(flipped).is_none());
        assert!(decode(vec![0; bytes.len()]).is_none());

        // From its file: the same, the postings read when asked for.
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("b");
        std::fs::write(&path, &bytes).unwrap();
        let f = open(&path).unwrap();
        assert_eq!(f.entries(), b.entries());
        assert_eq!(
            f.entries().unwrap(),
            entries.iter().map(|(e, _)| e.clone()).collect::<Vec<_>>()
        );
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

        // A damaged reference or stat data: the bucket opens (they are read when asked
        // for), and what reads them fails.
        let h = header(&bytes).unwrap();
        let refs_at = HEADER + h.head_len + h.dir_len;
        let mut bad = bytes.clone();
        bad[refs_at + REF * lock] ^= 8;
        let f = decode(bad).unwrap();
        assert!(f.postings(lock).is_none());
        assert!(f.rewrite(5, 4, &[Err(0), Err(2)]).is_none());
        let mut bad = bytes.clone();
        bad[refs_at + h.refs_len + 3] ^= 1;
        let f = decode(bad).unwrap();
        assert_eq!(f.postings(lock).unwrap(), [(0, 2), (2, 1)]);
        assert!(f.keys().is_none() && f.entries().is_none());
        assert!(f.rewrite(5, 4, &[Err(0), Err(2)]).is_none());

        // The previous format's file (its magic, its header sealed again) is not read.
        let mut old = bytes.clone();
        old[..8].copy_from_slice(b"TVSRBKT2");
        let crc = crc32fast::hash(&old[..HEADER - 4]);
        old[HEADER - 4..HEADER].copy_from_slice(&crc.to_le_bytes());
        assert!(decode(old).is_none());
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
            proptest::prop_assert_eq!(&decode(bytes.clone()).unwrap().rewrite(7, 2, &merged).unwrap(), &want);
            proptest::prop_assert_eq!(&open(&path).unwrap().rewrite(7, 2, &merged).unwrap(), &want);
        }
    }
}
