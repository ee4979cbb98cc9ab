//! The index's files: per directory a manifest and buckets, each written whole to a temp
//! file and renamed over (readers see old or new), each ending in a CRC-32 so a file torn
//! by a crash reads as missing, never as wrong. Nothing here is fsynced: it is derived
//! data, and a lost file only costs reading the documents again.

use std::borrow::Cow;
use std::path::{Path, PathBuf};

use super::stat::{Clocks, StatKey};

const MANIFEST_MAGIC: &[u8; 8] = b"TVIXMAN2";
const BUCKET_MAGIC: &[u8; 8] = b"TVIXBKT5";
/// A bucket's fixed header after its magic: id, fingerprint, entry count, the picks'
/// length and CRC-32, the heads' length and CRC-32 (see [`encode_bucket`]).
const BUCKET_HEADER: usize = 8 + 8 + 4 + 4 + 4 + 4 + 4;
/// The part of the header each section's CRC covers: all but the two CRCs.
const HEADER_CHECKED: usize = 8 + 8 + 4 + 4 + 4;

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
    /// The core of the document's head, as [`Head`] has it: what `list`, `claim --next`
    /// and the picks judge a document by.
    pub core: Core<'a>,
    /// The rest of its head (title, depends_on, parent, claimed_by, updated_at, id,
    /// priority text, needs) as the bucket holds it, encoded: decoded only by a read that
    /// wants it ([`Entry::head`]), and written back as it is. Kept encoded, an entry is
    /// small: a read moves every entry of a bucket several times.
    pub rest: Cow<'a, [u8]>,
    pub outcome: Outcome<'a>,
}

/// The core of a [`Head`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Core<'a> {
    pub status: Option<Cow<'a, str>>,
    pub priority: i64,
    pub created: Created<'a>,
}

impl<'a> Entry<'a> {
    /// An entry of a document with this head.
    pub fn new(
        name: Cow<'a, str>,
        key: StatKey,
        racy: bool,
        plain: bool,
        head: Head<'a>,
        outcome: Outcome<'a>,
    ) -> Entry<'a> {
        let mut rest = Out(Vec::new());
        put_rest(&mut rest, &head);
        Entry {
            name,
            key,
            racy,
            plain,
            core: Core {
                status: head.status,
                priority: head.priority,
                created: head.created,
            },
            rest: Cow::Owned(rest.0),
            outcome,
        }
    }

    /// The whole head; None when the rest's bytes are not what [`Entry::new`] encodes
    /// (then nothing of the entry is to be trusted).
    pub fn head(&self) -> Option<Head<'_>> {
        let mut head = Head {
            status: self.core.status.as_deref().map(Cow::Borrowed),
            priority: self.core.priority,
            created: match &self.core.created {
                Created::Text(t) => Created::Text(Cow::Borrowed(t)),
                Created::At(s, n) => Created::At(*s, *n),
            },
            ..Head::default()
        };
        decode_rest(&self.rest, &mut head)?;
        Some(head)
    }
}

/// How much of each head [`decode_heads`] reads: its core (status, priority, created:
/// what `claim --next` needs), or all of it. The rest of a head follows its core behind
/// its length, so that a read of the core alone steps over it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum More {
    Skip,
    Decode,
}

/// The fields `claim --next` orders and picks tasks by, as the parsed document gave them
/// (so they hold for any document, plain or not): a bucket's heads are read without its
/// texts, so that a choice among every task parses none of them (see `index::read_heads`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Head<'a> {
    /// `status` when it is a string.
    pub status: Option<Cow<'a, str>>,
    /// [`crate::doc::Document::priority`].
    pub priority: i64,
    /// `created_at` as [`crate::time::stamp_key`] orders it: the instant (seconds and
    /// nanoseconds since the epoch) when it reads as RFC 3339, else its text.
    pub created: Created<'a>,
    /// A task's `title` (empty when it has none, or is no task), `depends_on` and
    /// `parent`: what `deps`, `tree` and `ready` decide the task graph by without parsing
    /// every task.
    pub title: Cow<'a, str>,
    pub depends_on: Vec<Cow<'a, str>>,
    pub parent: Option<Cow<'a, str>>,
    /// A task's `claimed_by` and `updated_at` when they are strings: who holds it and
    /// since when it stands still, what `summary` decides its lists by without parsing
    /// every open task.
    pub claimed_by: Option<Cow<'a, str>>,
    pub updated_at: Option<Cow<'a, str>>,
    /// A task's `id`, the text of its `priority` (else `severity`) and its `needs`: with
    /// the above, its row as `ready` shows it and what else decides whether it is ready for
    /// an agent, so that `ready` need not parse every claimable task.
    pub id: Cow<'a, str>,
    pub pri: Option<Cow<'a, str>>,
    pub needs: Vec<Cow<'a, str>>,
}

#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Created<'a> {
    /// Not a time: sorts before every time, by its text (as `stamp_key` does).
    Text(Cow<'a, str>),
    At(i64, u32),
}

impl Created<'_> {
    /// A document's `created_at` as a head keeps it.
    pub fn of(created_at: &str) -> Created<'static> {
        match crate::time::stamp_key(created_at) {
            (true, Some(t), _) => Created::At(t.timestamp(), t.timestamp_subsec_nanos()),
            (_, _, text) => Created::Text(Cow::Owned(text.to_string())),
        }
    }

    pub fn into_owned(self) -> Created<'static> {
        match self {
            Created::Text(t) => Created::Text(Cow::Owned(t.into_owned())),
            Created::At(s, n) => Created::At(s, n),
        }
    }
}

impl Default for Created<'_> {
    fn default() -> Self {
        Created::Text(Cow::Borrowed(""))
    }
}

impl Head<'_> {
    /// The head of a parsed document.
    pub fn of(doc: &crate::doc::Document) -> Head<'static> {
        let created = Created::of(doc.created_at());
        let task = doc.region == crate::doc::Region::Tasks;
        Head {
            status: doc.status().map(|s| Cow::Owned(s.to_string())),
            priority: doc.priority(),
            created,
            title: Cow::Owned(if task {
                doc.title().to_string()
            } else {
                String::new()
            }),
            depends_on: if task {
                doc.list("depends_on").into_iter().map(Cow::Owned).collect()
            } else {
                Vec::new()
            },
            parent: doc
                .str("parent")
                .filter(|_| task)
                .map(|p| Cow::Owned(p.to_string())),
            claimed_by: doc
                .str("claimed_by")
                .filter(|_| task)
                .map(|c| Cow::Owned(c.to_string())),
            updated_at: doc
                .str("updated_at")
                .filter(|_| task)
                .map(|u| Cow::Owned(u.to_string())),
            id: Cow::Owned(if task {
                doc.id().to_string()
            } else {
                String::new()
            }),
            pri: doc
                .text("priority")
                .or_else(|| doc.text("severity"))
                .filter(|_| task)
                .map(Cow::Owned),
            needs: if task {
                doc.list("needs").into_iter().map(Cow::Owned).collect()
            } else {
                Vec::new()
            },
        }
    }
}

/// One entry of a bucket read without its text ([`decode_heads`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HeadEntry<'a> {
    pub name: Cow<'a, str>,
    pub key: StatKey,
    pub racy: bool,
    /// Why the file was skipped; None for a document.
    pub skipped: Option<Cow<'a, str>>,
    /// With [`More::Skip`], only its core: the other fields are left empty.
    pub head: Head<'a>,
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

/// A bucket: its magic and fixed header, then its picks (see [`Picks`]), then every
/// entry's head (name, stat data, flags, the length of its text, its head's core, and the
/// rest of its head behind its length: see [`More`]), then the texts one after the other, then a CRC-32 of it all. The picks and the
/// heads come first, each with a CRC of its own, so that [`load_picks`] reads the picks
/// alone and [`load_heads`] the heads without the texts. `pick`: which documents' heads
/// are picks (the claimable ones: the board's settings are in the fingerprint).
pub fn encode_bucket(b: &Bucket, pick: &dyn Fn(&Core<'_>) -> bool) -> Vec<u8> {
    let mut heads = Out(Vec::with_capacity(b.entries.len() * 128));
    let mut texts = Vec::with_capacity(
        b.entries
            .iter()
            .map(|e| match &e.outcome {
                Outcome::Doc(t) => t.len(),
                Outcome::Skipped(_) => 0,
            })
            .sum::<usize>(),
    );
    for e in &b.entries {
        heads.str(&e.name);
        heads.key(&e.key);
        heads.u8(e.racy as u8 | (e.plain as u8) << 1);
        match &e.outcome {
            Outcome::Doc(text) => {
                heads.u8(0);
                heads.u32(text.len() as u32);
                texts.extend_from_slice(text.as_bytes());
            }
            Outcome::Skipped(problem) => {
                heads.u8(1);
                heads.str(problem);
            }
        }
        match &e.core.status {
            Some(s) => {
                heads.u8(1);
                heads.str(s);
            }
            None => heads.u8(0),
        }
        put_order(&mut heads, e.core.priority, &e.core.created);
        heads.u32(e.rest.len() as u32);
        heads.0.extend_from_slice(&e.rest);
    }
    let heads = heads.0;
    let picks = encode_picks(b, pick);
    let mut out = Out(Vec::with_capacity(
        8 + BUCKET_HEADER + picks.len() + heads.len() + texts.len() + 4,
    ));
    out.0.extend_from_slice(BUCKET_MAGIC);
    out.u64(b.id);
    out.u64(b.fingerprint);
    out.u32(b.entries.len() as u32);
    out.u32(picks.len() as u32);
    out.u32(heads.len() as u32);
    let checked = out.0[8..].to_vec();
    out.u32(section_crc(&checked, &picks));
    out.u32(section_crc(&checked, &heads));
    out.0.extend_from_slice(&picks);
    out.0.extend_from_slice(&heads);
    out.0.extend_from_slice(&texts);
    out.seal()
}

/// What orders a head among the picks: its priority, then its creation time.
fn put_order(out: &mut Out, priority: i64, created: &Created<'_>) {
    out.u64(priority as u64);
    match created {
        Created::Text(t) => {
            out.u8(0);
            out.str(t);
        }
        Created::At(secs, nanos) => {
            out.u8(1);
            out.u64(*secs as u64);
            out.u32(*nanos);
        }
    }
}

/// The rest of a head, past its core (see [`Entry::rest`]).
fn put_rest(out: &mut Out, head: &Head<'_>) {
    put_graph(out, head);
    put_holder(out, head);
    put_row(out, head);
}

/// What the task graph needs of a head: title, depends_on, parent.
fn put_graph(out: &mut Out, head: &Head<'_>) {
    out.str(&head.title);
    out.u32(head.depends_on.len() as u32);
    for dep in &head.depends_on {
        out.str(dep);
    }
    put_maybe(out, head.parent.as_deref());
}

/// What `summary` needs of a task's head: claimed_by, updated_at.
fn put_holder(out: &mut Out, head: &Head<'_>) {
    put_maybe(out, head.claimed_by.as_deref());
    put_maybe(out, head.updated_at.as_deref());
}

/// What `ready` needs of a task's head besides the above: id, priority's text, needs.
fn put_row(out: &mut Out, head: &Head<'_>) {
    out.str(&head.id);
    put_maybe(out, head.pri.as_deref());
    out.u32(head.needs.len() as u32);
    for need in &head.needs {
        out.str(need);
    }
}

fn put_maybe(out: &mut Out, text: Option<&str>) {
    match text {
        Some(t) => {
            out.u8(1);
            out.str(t);
        }
        None => out.u8(0),
    }
}

type Graph<'a> = (Cow<'a, str>, Vec<Cow<'a, str>>, Option<Cow<'a, str>>);

fn graph<'a>(input: &mut Reader<'a>) -> Option<Graph<'a>> {
    let title = Cow::Borrowed(input.str()?);
    let n = input.u32()? as usize;
    let mut depends_on = Vec::with_capacity(n.min(input.0.len() / 4));
    for _ in 0..n {
        depends_on.push(Cow::Borrowed(input.str()?));
    }
    Some((title, depends_on, maybe(input)?))
}

type Holder<'a> = (Option<Cow<'a, str>>, Option<Cow<'a, str>>);

fn holder<'a>(input: &mut Reader<'a>) -> Option<Holder<'a>> {
    Some((maybe(input)?, maybe(input)?))
}

/// What [`put_row`] wrote into `head`.
fn row<'a>(input: &mut Reader<'a>, head: &mut Head<'a>) -> Option<()> {
    head.id = Cow::Borrowed(input.str()?);
    head.pri = maybe(input)?;
    let n = input.u32()? as usize;
    let mut needs = Vec::with_capacity(n.min(input.0.len() / 4));
    for _ in 0..n {
        needs.push(Cow::Borrowed(input.str()?));
    }
    head.needs = needs;
    Some(())
}

/// A text that may be absent, as [`put_maybe`] wrote it; None when the bytes are not that.
fn maybe<'a>(input: &mut Reader<'a>) -> Option<Option<Cow<'a, str>>> {
    match input.u8()? {
        0 => Some(None),
        1 => Some(Some(Cow::Borrowed(input.str()?))),
        _ => None,
    }
}

fn order<'a>(input: &mut Reader<'a>) -> Option<(i64, Created<'a>)> {
    let priority = input.u64()? as i64;
    let created = match input.u8()? {
        0 => Created::Text(Cow::Borrowed(input.str()?)),
        1 => Created::At(input.u64()? as i64, input.u32()?),
        _ => return None,
    };
    Some((priority, created))
}

/// A bucket's picks section (see [`Picks`]).
fn encode_picks(b: &Bucket, pick: &dyn Fn(&Core<'_>) -> bool) -> Vec<u8> {
    let mut odd = Vec::new();
    let mut skipped = Vec::new();
    let mut picks = Vec::new();
    let mut trusted = true;
    for e in &b.entries {
        if crate::id::validate(&e.name).is_err() {
            odd.push(&*e.name);
            continue;
        }
        trusted &= !e.racy && e.key != StatKey::default();
        match &e.outcome {
            Outcome::Skipped(problem) => skipped.push((&*e.name, &**problem)),
            Outcome::Doc(_) if pick(&e.core) => picks.push((&e.core, &*e.name)),
            Outcome::Doc(_) => {}
        }
    }
    picks.sort_unstable_by(|a, b| {
        (a.0.priority, &a.0.created, a.1).cmp(&(b.0.priority, &b.0.created, b.1))
    });
    let mut out = Out(Vec::with_capacity(16 + picks.len() * 40));
    out.u8(trusted as u8);
    out.u32(odd.len() as u32);
    for name in odd {
        out.str(name);
    }
    out.u32(skipped.len() as u32);
    for (name, problem) in skipped {
        out.str(name);
        out.str(problem);
    }
    out.u32(picks.len() as u32);
    for (core, name) in picks {
        put_order(&mut out, core.priority, &core.created);
        out.str(name);
    }
    out.0
}

/// The CRC-32 of the checked part of a bucket's header and one of its sections.
fn section_crc(header: &[u8], section: &[u8]) -> u32 {
    let mut crc = crc32fast::Hasher::new();
    crc.update(header);
    crc.update(section);
    crc.finalize()
}

/// A bucket's fixed header.
struct BucketHeader {
    id: u64,
    fingerprint: u64,
    entries: usize,
    picks_len: usize,
    heads_len: usize,
    picks_crc: u32,
    heads_crc: u32,
}

fn bucket_header(input: &mut Reader<'_>) -> Option<BucketHeader> {
    Some(BucketHeader {
        id: input.u64()?,
        fingerprint: input.u64()?,
        entries: input.u32()? as usize,
        picks_len: input.u32()? as usize,
        heads_len: input.u32()? as usize,
        picks_crc: input.u32()?,
        heads_crc: input.u32()?,
    })
}

/// One entry's head as [`encode_bucket`] wrote it: the entry less its text (its head's
/// rest decoded if `more` says so), the rest's bytes, whether it is plain, and the text's
/// length (None: skipped).
#[allow(clippy::type_complexity)]
fn head_entry<'a>(
    input: &mut Reader<'a>,
    more: More,
) -> Option<(HeadEntry<'a>, &'a [u8], bool, Option<usize>)> {
    let name = Cow::Borrowed(input.str()?);
    let key = input.key()?;
    let flags = input.u8()?;
    let (skipped, len) = match input.u8()? {
        0 => (None, Some(input.u32()? as usize)),
        1 => (Some(Cow::Borrowed(input.str()?)), None),
        _ => return None,
    };
    let status = match input.u8()? {
        0 => None,
        1 => Some(Cow::Borrowed(input.str()?)),
        _ => return None,
    };
    let (priority, created) = order(input)?;
    let n = input.u32()? as usize;
    let rest = input.take(n)?;
    let mut head = Head {
        status,
        priority,
        created,
        ..Head::default()
    };
    if more == More::Decode {
        decode_rest(rest, &mut head)?;
    }
    let entry = HeadEntry {
        name,
        key,
        racy: flags & 1 != 0,
        skipped,
        head,
    };
    Some((entry, rest, flags & 2 != 0, len))
}

/// The rest of a head, as [`put_rest`] wrote it, into `head`; None when the bytes are not
/// exactly that.
fn decode_rest<'a>(bytes: &'a [u8], head: &mut Head<'a>) -> Option<()> {
    let mut input = Reader(bytes);
    (head.title, head.depends_on, head.parent) = graph(&mut input)?;
    (head.claimed_by, head.updated_at) = holder(&mut input)?;
    row(&mut input, head)?;
    input.0.is_empty().then_some(())
}

/// A bucket whole: every entry with its text, the rest of each head left encoded.
pub fn decode_bucket(bytes: &[u8]) -> Option<Bucket<'_>> {
    let mut input = unseal(bytes, BUCKET_MAGIC)?;
    let header = bucket_header(&mut input)?;
    input.take(header.picks_len)?;
    let mut heads = Reader(input.take(header.heads_len)?);
    let mut texts = input;
    let n = header.entries;
    let mut entries = Vec::with_capacity(n.min(bytes.len() / 64));
    for _ in 0..n {
        let (e, rest, plain, len) = head_entry(&mut heads, More::Skip)?;
        let outcome = match (len, e.skipped) {
            (Some(len), None) => {
                Outcome::Doc(Cow::Borrowed(std::str::from_utf8(texts.take(len)?).ok()?))
            }
            (None, Some(problem)) => Outcome::Skipped(problem),
            _ => return None,
        };
        entries.push(Entry {
            name: e.name,
            key: e.key,
            racy: e.racy,
            plain,
            core: Core {
                status: e.head.status,
                priority: e.head.priority,
                created: e.head.created,
            },
            rest: Cow::Borrowed(rest),
            outcome,
        });
    }
    (heads.0.is_empty() && texts.0.is_empty()).then_some(Bucket {
        id: header.id,
        fingerprint: header.fingerprint,
        entries,
    })
}

/// A bucket's heads without its texts: (id, fingerprint, entries).
pub struct Heads<'a> {
    pub id: u64,
    pub fingerprint: u64,
    pub entries: Vec<HeadEntry<'a>>,
}

/// Decodes what [`load_heads`] read: the magic, the header and the heads (as far as `more`
/// says), checked against the heads' own CRC.
pub fn decode_heads(bytes: &[u8], more: More) -> Option<Heads<'_>> {
    let (header, heads) = section(bytes, |h| (h.heads_len, h.heads_crc))?;
    let mut heads = Reader(heads);
    let n = header.entries;
    let mut entries = Vec::with_capacity(n.min(bytes.len() / 64));
    for _ in 0..n {
        entries.push(head_entry(&mut heads, more)?.0);
    }
    heads.0.is_empty().then_some(Heads {
        id: header.id,
        fingerprint: header.fingerprint,
        entries,
    })
}

/// The header of what [`load_section`] read, and the section after it, when the section's
/// CRC agrees.
fn section(
    bytes: &[u8],
    which: impl Fn(&BucketHeader) -> (usize, u32),
) -> Option<(BucketHeader, &[u8])> {
    let mut input = Reader(bytes);
    if input.take(8)? != BUCKET_MAGIC {
        return None;
    }
    let header = bucket_header(&mut input)?;
    let (len, crc) = which(&header);
    let body = input.take(len)?;
    (input.0.is_empty() && section_crc(&bytes[8..8 + HEADER_CHECKED], body) == crc)
        .then_some((header, body))
}

/// Reads a bucket file's magic and header, then one of its sections (`which` of the
/// header: its offset after the header, and its length), not the rest; None when it is
/// missing or shorter than its header says.
fn load_section(path: &Path, which: impl Fn(&BucketHeader) -> (usize, usize)) -> Option<Vec<u8>> {
    use std::os::unix::fs::FileExt;
    let file = std::fs::File::open(path).ok()?;
    let mut bytes = vec![0; 8 + BUCKET_HEADER];
    file.read_exact_at(&mut bytes, 0).ok()?;
    let header = bucket_header(&mut Reader(&bytes[8..]))?;
    let (offset, len) = which(&header);
    let start = bytes.len();
    bytes.resize(start + len, 0);
    file.read_exact_at(&mut bytes[start..], (start + offset) as u64)
        .ok()?;
    Some(bytes)
}

/// Reads the start of a bucket file and its heads (what [`decode_heads`] decodes), not
/// its picks or texts; None when it is missing or shorter than its header says.
pub fn load_heads(path: &Path) -> Option<Vec<u8>> {
    load_section(path, |h| (h.picks_len, h.heads_len))
}

/// Reads the start of a bucket file and its picks (what [`decode_picks`] decodes) alone.
pub fn load_picks(path: &Path) -> Option<Vec<u8>> {
    load_section(path, |h| (0, h.picks_len))
}

/// What `claim --next` needs of a bucket whose files are all as cached (see
/// `index::read_claimable`), kept apart so that it reads neither the other heads nor the
/// texts: whether every entry may be trusted as cached, what a read must report (the names
/// that are no ids, the files skipped), and the picks, the claimable documents' heads,
/// best first.
#[derive(Debug, PartialEq, Eq)]
pub struct Picks<'a> {
    pub id: u64,
    pub fingerprint: u64,
    /// How many files the bucket holds.
    pub entries: usize,
    /// No entry whose name is an id is racy or without stat data: a read the journal
    /// vouches for may take the bucket as cached.
    pub trusted: bool,
    /// The names that are not ids (skipped whatever the file holds, naming the file).
    pub odd: Vec<&'a str>,
    /// (name, problem) of the files skipped.
    pub skipped: Vec<(&'a str, &'a str)>,
    /// How many picks there are, and where in the bytes the first begins: [`next_pick`]
    /// reads them one at a time (each was read once by [`decode_picks`]).
    pub count: usize,
    pub at: usize,
}

/// One pick: (priority, created, name), in the order `claim --next` takes them.
pub type Pick<'a> = (i64, Created<'a>, &'a str);

/// Decodes what [`load_picks`] read, checked against the picks' own CRC and read through
/// once (so that [`next_pick`] reads each again without fail).
pub fn decode_picks(bytes: &[u8]) -> Option<Picks<'_>> {
    let (header, body) = section(bytes, |h| (h.picks_len, h.picks_crc))?;
    let mut input = Reader(body);
    let trusted = match input.u8()? {
        0 => false,
        1 => true,
        _ => return None,
    };
    let n = input.u32()? as usize;
    let mut odd = Vec::with_capacity(n.min(body.len()));
    for _ in 0..n {
        odd.push(input.str()?);
    }
    let n = input.u32()? as usize;
    let mut skipped = Vec::with_capacity(n.min(body.len()));
    for _ in 0..n {
        skipped.push((input.str()?, input.str()?));
    }
    let count = input.u32()? as usize;
    let at = bytes.len() - input.0.len();
    let mut pos = at;
    let mut last: Option<Pick<'_>> = None;
    for _ in 0..count {
        let pick = next_pick(bytes, &mut pos)?;
        // Best first, as written: a list out of order is no list of ours.
        if last.as_ref().is_some_and(|l| *l > pick) {
            return None;
        }
        last = Some(pick);
    }
    (pos == bytes.len()).then_some(Picks {
        id: header.id,
        fingerprint: header.fingerprint,
        entries: header.entries,
        trusted,
        odd,
        skipped,
        count,
        at,
    })
}

/// The pick at `at` in what [`load_picks`] read, moving `at` past it.
pub fn next_pick<'a>(bytes: &'a [u8], at: &mut usize) -> Option<Pick<'a>> {
    let mut input = Reader(bytes.get(*at..)?);
    let (priority, created) = order(&mut input)?;
    let name = input.str()?;
    *at = bytes.len() - input.0.len();
    Some((priority, created, name))
}

/// Reads a file of the index; None when it is missing.
pub fn load(path: &Path) -> Option<Vec<u8>> {
    std::fs::read(path).ok()
}

/// Reads a file of the index into `buf`, in place of what it held; empty when the file is
/// missing or cannot be read whole.
pub fn load_into(path: &Path, buf: &mut Vec<u8>) {
    use std::io::Read;
    buf.clear();
    if let Ok(mut file) = std::fs::File::open(path)
        && file.read_to_end(buf).is_err()
    {
        buf.clear();
    }
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
                Entry::new(
                    "task-1".into(),
                    StatKey {
                        dev: 1,
                        ino: 2,
                        size: 3,
                        mode: 0o100644,
                        mtime: -5,
                        ctime: 1_700_000_000_123_456_789,
                    },
                    true,
                    true,
                    Head {
                        status: Some("pending".into()),
                        priority: 2,
                        created: Created::At(1_700_000_000, 5),
                        title: "first ✓".into(),
                        depends_on: vec!["task-0".into(), "task-9".into()],
                        parent: Some("epic-1".into()),
                        claimed_by: Some("ann".into()),
                        updated_at: Some("2026-11-28T09:00:00Z".into()),
                        id: "task-1".into(),
                        pri: Some("high ✓".into()),
                        needs: vec!["rust".into(), "gpu".into()],
                    },
                    Outcome::Doc(Cow::Owned("---\nid: task-1\n---\nbody ✓\n".into())),
                ),
                Entry::new(
                    "bad".into(),
                    StatKey::default(),
                    false,
                    false,
                    Head {
                        status: None,
                        priority: -3,
                        created: Created::Text("soon".into()),
                        ..Head::default()
                    },
                    Outcome::Skipped(Cow::Borrowed("line 2: broken")),
                ),
            ],
        }
    }

    #[test]
    fn bucket_round_trips_and_any_torn_copy_is_refused() {
        let b = bucket();
        let bytes = encode_bucket(&b, &pending);
        let decoded = decode_bucket(&bytes).unwrap();
        assert_eq!(decoded, b);
        assert_eq!(decoded.entries[0].head(), b.entries[0].head());
        assert_eq!(b.entries[0].head().unwrap().needs, ["rust", "gpu"]);
        for cut in 0..bytes.len() {
            assert_eq!(decode_bucket(&bytes[..cut]), None, "cut at {cut}");
        }
        let mut flipped = bytes.clone();
        flipped[20] ^= 1;
        assert_eq!(decode_bucket(&flipped), None);
        assert_eq!(decode_manifest(&bytes), None, "a bucket is not a manifest");
    }

    #[test]
    fn heads_are_read_without_the_texts_and_checked_on_their_own() {
        let b = bucket();
        let bytes = encode_bucket(&b, &pending);
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("0-0");
        std::fs::write(&path, &bytes).unwrap();
        let prefix = load_heads(&path).unwrap();
        assert!(prefix.len() < bytes.len(), "the texts are not read");
        let heads = decode_heads(&prefix, More::Decode).unwrap();
        assert_eq!((heads.id, heads.fingerprint), (42, 7));
        let want: Vec<HeadEntry> = b
            .entries
            .iter()
            .map(|e| HeadEntry {
                name: e.name.clone(),
                key: e.key,
                racy: e.racy,
                skipped: match &e.outcome {
                    Outcome::Doc(_) => None,
                    Outcome::Skipped(p) => Some(p.clone()),
                },
                head: e.head().unwrap(),
            })
            .collect();
        assert_eq!(heads.entries, want);
        // The core alone: the rest of each head is stepped over, and left empty.
        let core = decode_heads(&prefix, More::Skip).unwrap();
        for (got, want) in core.entries.iter().zip(&want) {
            let want_core = Head {
                status: want.head.status.clone(),
                priority: want.head.priority,
                created: want.head.created.clone(),
                ..Head::default()
            };
            assert_eq!(got.head, want_core);
            assert_eq!(
                (&got.name, got.key, &got.skipped),
                (&want.name, want.key, &want.skipped)
            );
        }
        for cut in 0..prefix.len() {
            assert!(
                decode_heads(&prefix[..cut], More::Decode).is_none(),
                "cut at {cut}"
            );
            assert!(
                decode_heads(&prefix[..cut], More::Skip).is_none(),
                "cut at {cut}"
            );
        }
        // Any byte read but the picks' CRC (which checks what is not read here).
        for at in (8..prefix.len()).filter(|at| !(36..40).contains(at)) {
            let mut flipped = prefix.clone();
            flipped[at] ^= 1;
            assert!(
                decode_heads(&flipped, More::Decode).is_none(),
                "flipped at {at}"
            );
            assert!(
                decode_heads(&flipped, More::Skip).is_none(),
                "flipped at {at}"
            );
        }
        std::fs::write(&path, &bytes[..prefix.len() - 1]).unwrap();
        assert_eq!(load_heads(&path), None, "shorter than its header says");
        // The order `claim --next` sorts by: any text before any time, then by time.
        assert!(Created::Text("zzz".into()) < Created::At(i64::MIN, 0));
        assert!(Created::At(5, 1) < Created::At(5, 2));
    }

    #[test]
    fn a_heads_rest_is_kept_as_written_and_refused_when_it_is_not_a_heads() {
        let b = bucket();
        let bytes = encode_bucket(&b, &pending);
        let decoded = decode_bucket(&bytes).unwrap();
        // Written back undecoded, a bucket is what it was.
        assert_eq!(encode_bucket(&decoded, &pending), bytes);
        assert!(matches!(decoded.entries[0].rest, Cow::Borrowed(_)));
        // Bytes of the rest that are not a head's rest are refused, not misread: cut
        // short, one byte too many, a flag that is neither 0 nor 1, a length past the end.
        let rest = decoded.entries[0].rest.to_vec();
        let refused = |bytes: &[u8]| {
            let mut e = entry("t-x", "pending", 1, Created::At(1, 0));
            e.rest = Cow::Owned(bytes.to_vec());
            e.head().is_none()
        };
        assert!(!refused(&rest));
        for cut in 0..rest.len() {
            assert!(refused(&rest[..cut]), "cut at {cut}");
        }
        let mut longer = rest.clone();
        longer.push(0);
        assert!(refused(&longer));
        // After the title and the two of depends_on comes the parent's flag.
        let title = b.entries[0].head().unwrap().title.len();
        let at = 4 + title + 4 + (4 + "task-0".len()) + (4 + "task-9".len());
        assert_eq!(rest[at], 1, "the parent's flag");
        let mut flag = rest.clone();
        flag[at] = 2;
        assert!(refused(&flag));
        let mut long = rest.clone();
        long[0] = 0xff;
        assert!(refused(&long), "a title longer than the bytes");
    }

    fn pending(h: &Core<'_>) -> bool {
        h.status.as_deref() == Some("pending")
    }

    fn entry(name: &str, status: &str, priority: i64, created: Created<'static>) -> Entry<'static> {
        Entry::new(
            Cow::Owned(name.to_string()),
            StatKey {
                ino: 1,
                ..StatKey::default()
            },
            false,
            true,
            Head {
                status: Some(Cow::Owned(status.to_string())),
                priority,
                created,
                ..Head::default()
            },
            Outcome::Doc(Cow::Owned(format!("---\nid: {name}\n---\n"))),
        )
    }

    /// Every pick of a bucket, in the order `next_pick` reads them.
    fn all_picks<'a>(bytes: &'a [u8], picks: &Picks<'a>) -> Vec<Pick<'a>> {
        let mut at = picks.at;
        let all = (0..picks.count)
            .map(|_| next_pick(bytes, &mut at).unwrap())
            .collect();
        assert_eq!(at, bytes.len(), "the picks end the section");
        all
    }

    #[test]
    fn picks_are_the_claimable_best_first_and_read_alone_checked_on_their_own() {
        let at = |s| Created::At(s, 0);
        let mut b = Bucket {
            id: 5,
            fingerprint: 6,
            entries: vec![
                entry("t-a", "pending", 1, at(20)),
                entry("t-b", "pending", 1, at(10)),
                entry("t-c", "done", -5, at(1)),
                entry("t-d", "pending", 1, Created::Text("soon".into())),
                entry("t-e", "pending", 0, at(30)),
                entry("t-f", "pending", 1, at(10)),
                entry("Odd-Name", "pending", -9, at(0)),
            ],
        };
        b.entries[2].outcome = Outcome::Skipped(Cow::Borrowed("line 1: broken"));
        let bytes = encode_bucket(&b, &pending);
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("0-0");
        std::fs::write(&path, &bytes).unwrap();
        let loaded = load_picks(&path).unwrap();
        assert!(loaded.len() < load_heads(&path).unwrap().len());
        let picks = decode_picks(&loaded).unwrap();
        assert_eq!((picks.id, picks.fingerprint, picks.entries), (5, 6, 7));
        assert!(picks.trusted);
        assert_eq!(picks.odd, ["Odd-Name"], "no id: never a pick");
        assert_eq!(picks.skipped, [("t-c", "line 1: broken")]);
        let names: Vec<&str> = all_picks(&loaded, &picks).iter().map(|p| p.2).collect();
        // Priority, then not-a-time before times, then by time, ties by name; `done` is
        // no pick, nor is a skipped file.
        assert_eq!(names, ["t-e", "t-d", "t-b", "t-f", "t-a"]);
        for cut in 0..loaded.len() {
            assert!(decode_picks(&loaded[..cut]).is_none(), "cut at {cut}");
        }
        // Any byte read but the heads' CRC (which checks what is not read here).
        for at in (0..loaded.len()).filter(|at| !(40..44).contains(at)) {
            let mut flipped = loaded.clone();
            flipped[at] ^= 1;
            assert!(decode_picks(&flipped).is_none(), "flipped at {at}");
        }
        std::fs::write(&path, &bytes[..loaded.len() - 1]).unwrap();
        assert_eq!(load_picks(&path), None, "shorter than its header says");
        let trusted = |b: &Bucket| {
            std::fs::write(&path, encode_bucket(b, &pending)).unwrap();
            decode_picks(&load_picks(&path).unwrap()).unwrap().trusted
        };
        // One entry racy (or without stat data): the picks do not vouch for the bucket.
        b.entries[4].racy = true;
        assert!(!trusted(&b));
        b.entries[4].racy = false;
        b.entries[0].key = StatKey::default();
        assert!(!trusted(&b));
        // A name that is no id is never trusted or not: it is read whatever it holds.
        b.entries[0].key.ino = 1;
        b.entries[6].racy = true;
        assert!(trusted(&b));
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
