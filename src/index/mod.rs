//! The read index (`.state/index/`): what every document file held when it was last read,
//! beside its stat data, so that a read of the board reads only the files that changed.
//!
//! It is derived and local: never synced or committed, rebuilt from the files whenever it
//! is missing, torn, written by another version or for other settings; deleting it only
//! costs time. It is never trusted over the files: every read compares each file's stat
//! data with the cached ones (see [`stat`] for when equal stat data mean an unchanged
//! file) and reads again what differs, so a hand edit, a `git checkout`, a pull, a sync or
//! another worktree's write is seen by the next read, whoever made it and whether or not
//! tavern was running. A directory's own stat data tell whether files were created,
//! removed or renamed in it: while they are unchanged its names are taken from the index
//! instead of listing it.
//!
//! Per directory (a region, or a region of the archive) the index is a manifest and
//! buckets (files hashed by name), each file written whole and renamed over, so that
//! readers never lock and a read that changed one document rewrites one bucket. Writers
//! do not lock either: two racing writers each write a bucket that was true when they read
//! the files; the manifest lists the id of each bucket it was written with, and a bucket
//! with another id is checked against a listing of the directory.

pub(crate) mod dir;
pub(crate) mod files;
pub(crate) mod journal;
pub(crate) mod keeper;
pub(crate) mod stat;

use std::borrow::Cow;
use std::os::fd::OwnedFd;

use files::{Bucket, Entry, Head, Outcome};
use rustix::fs::FileType;
use stat::StatKey;

use crate::board::Board;
use crate::doc::{Document, Region};
use crate::error::{Error, Result};
use crate::scan::{DocFile, Scan, Skipped};

/// Where the progress of a long build goes: (which index, the directory, files read, files
/// in it).
type ProgressSink = fn(&str, &std::path::Path, usize, usize);

static PROGRESS: std::sync::OnceLock<ProgressSink> = std::sync::OnceLock::new();

/// Sets where the progress of an index built from nothing goes (see [`Progress`]): the
/// front-end installs one, once; without one it is not reported.
pub fn on_progress(sink: ProgressSink) {
    let _ = PROGRESS.set(sink);
}

/// The progress of one directory's index being built from nothing: reported once the
/// build has taken a second, then at most four times a second, and once at its end. The
/// search index reports through the same sink.
pub(crate) struct Progress {
    sink: ProgressSink,
    /// Which index: "read index" or "search index".
    what: &'static str,
    total: usize,
    started: std::time::Instant,
    done: std::sync::atomic::AtomicUsize,
    /// Milliseconds since `started` of the last report (0: none yet).
    last: std::sync::atomic::AtomicU64,
}

impl Progress {
    /// The progress of a build from nothing (`fresh`) of `total()` files, when a sink is
    /// installed; None otherwise (and `total` is not asked).
    pub(crate) fn of_build(
        what: &'static str,
        fresh: bool,
        total: impl FnOnce() -> Result<usize>,
    ) -> Result<Option<Progress>> {
        Ok(match PROGRESS.get() {
            Some(&sink) if fresh => Some(Progress {
                sink,
                what,
                total: total()?,
                started: std::time::Instant::now(),
                done: Default::default(),
                last: Default::default(),
            }),
            _ => None,
        })
    }

    pub(crate) fn add(&self, dir: &std::path::Path, n: usize) {
        use std::sync::atomic::Ordering::Relaxed;
        let done = self.done.fetch_add(n, Relaxed) + n;
        let now = self.started.elapsed().as_millis() as u64;
        let last = self.last.load(Relaxed);
        if now >= 1000
            && (last == 0 || now >= last + 250)
            && self
                .last
                .compare_exchange(last, now, Relaxed, Relaxed)
                .is_ok()
        {
            (self.sink)(self.what, dir, done.min(self.total), self.total);
        }
    }

    pub(crate) fn end(&self, dir: &std::path::Path) {
        if self.last.load(std::sync::atomic::Ordering::Relaxed) != 0 {
            (self.sink)(self.what, dir, self.total, self.total);
        }
    }
}

/// Bumped whenever what the index stores, or how a file's outcome is decided, changes.
const FORMAT: u32 = 8;

/// What a read may pass over unparsed among the cached documents in the fast parser's
/// plain subset (and ASCII): those whose text lacks one word of each list of `needles`,
/// and those whose frontmatter `plain` rules out.
pub(crate) struct Prefilter<'a> {
    pub needles: &'a [Vec<String>],
    pub plain: &'a (dyn Fn(&str) -> bool + Sync),
    /// Whether a document whose `status` is this string (None: not a string, or none) may
    /// be wanted: judged from the head the index keeps of every cached document, plain
    /// or not, before its text is looked at.
    pub status: &'a (dyn Fn(Option<&str>) -> bool + Sync),
    /// Asked last, of a cached document nothing above ruled out, before it is parsed, with
    /// its file's name (less `.md`): false passes it over unparsed, the caller having taken
    /// account of it by its head. Asked at most once per document in a read, and never of
    /// a document read afresh. None: nothing is ruled out by its head (and the rest of a
    /// head past its core is not decoded).
    pub head: Option<&'a ByHead<'a>>,
}

/// What a [`Prefilter`] asks of a cached document's head: (file name, head).
pub(crate) type ByHead<'a> = dyn Fn(&str, &Head<'_>) -> bool + Sync + 'a;

impl Prefilter<'_> {
    /// Rules nothing out.
    pub(crate) const NONE: Prefilter<'static> = Prefilter {
        needles: &[],
        plain: &|_| true,
        status: &|_| true,
        head: None,
    };
}

/// Reads every document file of one directory (a region, or its archive) through the
/// index: the documents `keep` accepts, sorted by file name, and the files skipped.
pub(crate) fn read_dir(
    board: &Board,
    region: Region,
    archived: bool,
    pre: &Prefilter<'_>,
    keep: &(dyn Fn(&Document) -> bool + Sync),
) -> Result<Scan> {
    let take = |d: Document| keep(&d).then_some(d);
    Ok(read_area(board, region, archived, pre, Want::Docs(&take))?.scan)
}

/// Reads every document file of one directory as [`read_dir`] does, but hands each
/// document that passes the prefilter to `each` as it is read (on the reading threads, in
/// no order) instead of gathering them: what a read keeps is then whatever `each` keeps.
/// The files skipped are returned, sorted by path.
pub(crate) fn each_in_dir(
    board: &Board,
    region: Region,
    archived: bool,
    pre: &Prefilter<'_>,
    each: &(dyn Fn(Document) + Sync),
) -> Result<Vec<Skipped>> {
    let take = |d: Document| {
        each(d);
        None
    };
    Ok(read_area(board, region, archived, pre, Want::Docs(&take))?
        .scan
        .skipped)
}

/// What a read of one directory gave.
#[derive(Default)]
struct Found {
    /// The documents kept (none when the claimable were asked for), and the files skipped.
    scan: Scan,
    /// The claimable documents, when they were asked for.
    claimable: Vec<Stream>,
}

/// The claimable documents of one directory (a region, not its archive) by their heads,
/// without parsing or even reading their texts where the index holds them, best first (as
/// [`crate::scan::OrderKey::best_first`] orders them: priority, creation time, id); and
/// the files skipped. What `claim --next` chooses among: the names come one at a time, so
/// that a choice of the first reads little more than each bucket's best.
pub(crate) fn read_claimable(board: &Board, region: Region) -> Result<(Claimable, Vec<Skipped>)> {
    let read = read_area(board, region, false, &Prefilter::NONE, Want::Claimable)?;
    Ok((Claimable::merge(read.claimable), read.scan.skipped))
}

/// Every document of one directory (a region, or its archive) by its head: `each(name,
/// head)` for each file that holds a document, on the reading threads, in no order,
/// without parsing (or even reading the texts of) the documents the index holds
/// unchanged; the files skipped, sorted by path. A head is trusted exactly where a cached
/// document would be (the journal's word, or equal stat data, and never racy): any other
/// file is read again, and its head is the one it holds now.
pub(crate) fn each_head(
    board: &Board,
    region: Region,
    archived: bool,
    each: &(dyn Fn(&str, &Head<'_>) + Sync),
) -> Result<Vec<Skipped>> {
    let read = read_area(board, region, archived, &Prefilter::NONE, Want::Heads(each))?;
    Ok(read.scan.skipped)
}

/// What [`each_head`] hands each document's head to: (name, head).
type EachHead<'a> = dyn Fn(&str, &Head<'_>) + Sync + 'a;

/// (priority, created, name): the order of the claimable, best (least) first.
type Ranked = (i64, files::Created<'static>, String);

/// One bucket's claimable documents, best first.
enum Stream {
    /// Gathered by a read of the bucket's entries (and sorted).
    Read(std::vec::IntoIter<Ranked>),
    /// The bucket's picks as loaded ([`files::load_picks`]), read one at a time from `at`.
    Picks {
        bytes: Vec<u8>,
        at: usize,
        left: usize,
    },
}

impl Stream {
    fn read(mut ranked: Vec<Ranked>) -> Stream {
        ranked.sort_unstable();
        Stream::Read(ranked.into_iter())
    }

    fn next(&mut self) -> Option<Ranked> {
        match self {
            Stream::Read(it) => it.next(),
            Stream::Picks { bytes, at, left } => {
                *left = left.checked_sub(1)?;
                // Each pick was read once when the bucket was loaded: this cannot fail.
                let (priority, created, name) = files::next_pick(bytes, at)?;
                Some((priority, created.into_owned(), name.to_string()))
            }
        }
    }
}

/// The claimable documents of every bucket, merged best first: the names, one at a time.
pub(crate) struct Claimable {
    streams: Vec<Stream>,
    /// Each stream's best not yet taken, and which stream it is.
    heap: std::collections::BinaryHeap<std::cmp::Reverse<(Ranked, usize)>>,
}

impl Claimable {
    fn merge(mut streams: Vec<Stream>) -> Claimable {
        let heap = streams
            .iter_mut()
            .enumerate()
            .filter_map(|(i, s)| Some(std::cmp::Reverse((s.next()?, i))))
            .collect();
        Claimable { streams, heap }
    }
}

impl Iterator for Claimable {
    type Item = String;

    fn next(&mut self) -> Option<String> {
        let std::cmp::Reverse(((_, _, name), i)) = self.heap.pop()?;
        if let Some(next) = self.streams[i].next() {
            self.heap.push(std::cmp::Reverse((next, i)));
        }
        Some(name)
    }
}

/// What a read of a directory gives.
#[derive(Clone, Copy)]
enum Want<'a> {
    /// The documents this gives back (it may keep or drop the others itself).
    Docs(&'a (dyn Fn(Document) -> Option<Document> + Sync)),
    /// The claimable documents, by their heads.
    Claimable,
    /// Each document's head, to this (name, head).
    Heads(&'a EachHead<'a>),
}

/// Reads one directory through the index.
fn read_area(
    board: &Board,
    region: Region,
    archived: bool,
    pre: &Prefilter<'_>,
    want: Want<'_>,
) -> Result<Found> {
    let dir = if archived {
        board.archive_dir(region)
    } else {
        board.region_dir(region)
    };
    let Some(dir_fd) = dir::open(&dir, false)? else {
        return Ok(Found::default());
    };
    // Taken before the listing: a change during it makes the next read list again.
    let dir_key = stat::fstat(&dir_fd).map_err(|e| Error::io(&dir, "list", e))?;
    let index_dir = crate::layout::index_dir(&board.root).join(if archived {
        format!("archive-{}", region.dir())
    } else {
        region.dir().to_string()
    });
    let area = Area {
        board,
        region,
        archived,
        dir_fd,
        area: dir::Area::new(
            &board.root,
            dir,
            index_dir,
            stat::Clocks::now(),
            fingerprint(board),
            dir::list_docs,
        )
        .with_keeper(keeper::mode(board)),
        pre,
        claimable: matches!(want, Want::Claimable),
        heads: match want {
            Want::Heads(each) => Some(each),
            _ => None,
        },
        needles: pre
            .needles
            .iter()
            .map(|any| {
                aho_corasick::AhoCorasick::builder()
                    .ascii_case_insensitive(true)
                    .build(any)
            })
            .collect::<std::result::Result<_, _>>()
            .ok(),
    };
    let keep = match want {
        Want::Docs(keep) => keep,
        Want::Claimable | Want::Heads(_) => &|_: Document| None,
    };
    area.read(dir_key, keep)
}

thread_local! {
    /// The buffer a reading thread reads whole buckets into (see `Area::read_bucket`).
    static BUFFER: std::cell::Cell<Vec<u8>> = const { std::cell::Cell::new(Vec::new()) };
}

/// One directory being read.
struct Area<'a> {
    board: &'a Board,
    region: Region,
    archived: bool,
    dir_fd: OwnedFd,
    area: dir::Area,
    /// What the documents wanted must hold.
    pre: &'a Prefilter<'a>,
    /// The claimable are wanted, not documents: no cached document is parsed, and a
    /// bucket whose every entry is trusted is read by its picks, or its heads, without
    /// its texts.
    claimable: bool,
    /// Each document's head is wanted, to this: as for the claimable, no cached document
    /// is parsed, and a bucket whose every entry is trusted is read by its heads.
    heads: Option<&'a EachHead<'a>>,
    /// The needles, one matcher per list (ASCII case ignored); None when they could not
    /// be built (then nothing is passed over for its words).
    needles: Option<Vec<aho_corasick::AhoCorasick>>,
}

/// What reading one bucket gave.
#[derive(Default)]
struct Part {
    scan: Scan,
    /// The bucket's id now (a new one when it was written).
    id: u64,
    /// A listing had to be used, or the bucket was written.
    changed: bool,
    error: Option<Error>,
    /// How many files it holds.
    entries: usize,
    /// Its claimable documents (when they are wanted).
    claimable: Option<Stream>,
}

impl Area<'_> {
    fn read(
        &self,
        dir_key: StatKey,
        keep: &(dyn Fn(Document) -> Option<Document> + Sync),
    ) -> Result<Found> {
        let start = self.area.start(Some(dir_key))?;
        let count = start.manifest.buckets.len();
        let progress =
            Progress::of_build("read index", start.fresh, || Ok(self.area.listing()?.len()))?;
        let parts = dir::each_bucket(count, |b| {
            let part = self.read_bucket(&start, b, keep);
            if let Some(p) = &progress {
                p.add(&self.area.dir, part.entries);
            }
            part
        });
        if let Some(p) = &progress {
            p.end(&self.area.dir);
        }
        let mut read = Found::default();
        let mut ids = Vec::with_capacity(count);
        let mut changed = false;
        for part in parts {
            if let Some(e) = part.error {
                return Err(e);
            }
            changed |= part.changed;
            ids.push(part.id);
            read.scan.docs.extend(part.scan.docs);
            read.scan.skipped.extend(part.scan.skipped);
            read.claimable.extend(part.claimable);
        }
        read.scan.docs.sort_by(|a, b| a.file_id.cmp(&b.file_id));
        read.scan.skipped.sort_by(|a, b| a.path.cmp(&b.path));
        self.area.finish(start, Some(dir_key), ids, changed);
        Ok(read)
    }

    /// Bucket `b`'s heads read without its texts, when every entry of it may be trusted
    /// as cached (vouched for by the journal, or equal stat data, and none racy) and it
    /// holds the names it should; None when anything needs the full read (which also
    /// rewrites the bucket).
    fn heads_only(&self, start: &dir::Start, b: usize) -> Option<Part> {
        let manifest = &start.manifest;
        let count = manifest.buckets.len();
        let path = files::bucket_path(&self.area.index_dir, manifest.generation, b);
        let bytes = files::load_heads(&path)?;
        // The claimable need only the heads' core; `each` is handed whole heads.
        let more = if self.heads.is_some() {
            files::More::Decode
        } else {
            files::More::Skip
        };
        let heads =
            files::decode_heads(&bytes, more).filter(|h| h.fingerprint == self.area.fingerprint)?;
        let vouched = start.vouched(b, heads.id);
        if vouched && !start.changed_in_bucket(b, count).is_empty() {
            return None;
        }
        // Files were made, removed or renamed in the directory since (or another read
        // wrote this bucket): its share of a listing must hold exactly the bucket's names.
        let listed =
            !(vouched || (start.names_known && manifest.buckets.get(b) == Some(&heads.id)));
        if listed {
            let names = self.area.share(b, count).ok()?;
            if names.len() != heads.entries.len()
                || names.iter().zip(&heads.entries).any(|(n, e)| *n != e.name)
            {
                return None;
            }
        }
        let mut part = Part {
            id: heads.id,
            entries: heads.entries.len(),
            // The manifest is written again with the directory as listed.
            changed: listed,
            ..Part::default()
        };
        let file_name = |name: &str| format!("{name}.md");
        // Every entry is vouched for before any head is handed on: a bucket given up half
        // way is read in full, and its heads must not reach `each` twice.
        for e in &heads.entries {
            if crate::id::validate(&e.name).is_err() {
                continue;
            }
            if e.racy || e.key == StatKey::default() {
                return None;
            }
            if !vouched && dir::stat_doc(&self.dir_fd, &e.name) != Some(e.key) {
                return None;
            }
        }
        let mut ranked = Vec::new();
        for e in heads.entries {
            // A name that is not an id is skipped whatever the file holds, as a full read
            // skips it, without a look at the file.
            if crate::id::validate(&e.name).is_err() {
                let file = DocFile {
                    id: e.name.to_string(),
                    path: self.area.dir.join(file_name(&e.name)),
                    is_symlink: false,
                    is_special: false,
                };
                if let Err(s) = crate::scan::read_one(self.board, self.region, &file) {
                    part.scan.skipped.push(s);
                }
                continue;
            }
            match e.skipped {
                Some(problem) => part.scan.skipped.push(Skipped {
                    path: self.board.rel(&self.area.dir.join(file_name(&e.name))),
                    problem: problem.into_owned(),
                }),
                None => {
                    if let Some(each) = self.heads {
                        each(&e.name, &e.head);
                    }
                    if self.claimable && self.is_claimable(e.head.status.as_deref()) {
                        ranked.push((
                            e.head.priority,
                            e.head.created.into_owned(),
                            e.name.into_owned(),
                        ));
                    }
                }
            }
        }
        part.claimable = Some(Stream::read(ranked));
        Some(part)
    }

    /// Is a document with this status claimable (a pick)?
    fn is_claimable(&self, status: Option<&str>) -> bool {
        status.is_some_and(|s| self.board.config.workflow.is_claimable(s))
    }

    /// Bucket `b`'s picks alone (its claimable documents, best first, and the files it
    /// skips), when the watcher's journal vouches for the bucket as cached, no file of it
    /// changed since, and every entry of it may be trusted (none racy); None otherwise.
    /// Its other heads and its texts are not read.
    fn picks_only(&self, start: &dir::Start, b: usize) -> Option<Part> {
        // Without the journal's word, every file is looked at: the heads hold their keys.
        start.trusted.as_ref()?;
        let manifest = &start.manifest;
        let path = files::bucket_path(&self.area.index_dir, manifest.generation, b);
        let bytes = files::load_picks(&path)?;
        let picks =
            files::decode_picks(&bytes).filter(|p| p.fingerprint == self.area.fingerprint)?;
        if !picks.trusted
            || !start.vouched(b, picks.id)
            || !start
                .changed_in_bucket(b, manifest.buckets.len())
                .is_empty()
        {
            return None;
        }
        let mut part = Part {
            id: picks.id,
            entries: picks.entries,
            ..Part::default()
        };
        let path_of = |name: &str| self.area.dir.join(format!("{name}.md"));
        // A name that is not an id is skipped whatever the file holds, as a full read
        // skips it, without a look at the file.
        for name in picks.odd {
            let file = DocFile {
                id: name.to_string(),
                path: path_of(name),
                is_symlink: false,
                is_special: false,
            };
            if let Err(s) = crate::scan::read_one(self.board, self.region, &file) {
                part.scan.skipped.push(s);
            }
        }
        for (name, problem) in picks.skipped {
            part.scan.skipped.push(Skipped {
                path: self.board.rel(&path_of(name)),
                problem: problem.to_string(),
            });
        }
        let (at, left) = (picks.at, picks.count);
        part.claimable = Some(Stream::Picks { bytes, at, left });
        Some(part)
    }

    fn read_bucket(
        &self,
        start: &dir::Start,
        b: usize,
        keep: &(dyn Fn(Document) -> Option<Document> + Sync),
    ) -> Part {
        if self.heads.is_some()
            && let Some(part) = self.heads_only(start, b)
        {
            return part;
        }
        if self.claimable
            && let Some(part) = self
                .picks_only(start, b)
                .or_else(|| self.heads_only(start, b))
        {
            return part;
        }
        let path = files::bucket_path(&self.area.index_dir, start.manifest.generation, b);
        // Each reading thread reads its buckets into one buffer: a bucket's bytes are
        // not needed past its read, and fresh pages for each cost more than the copy.
        // Taken, not borrowed: a document handed on may start a read of its own.
        let mut bytes = BUFFER.take();
        files::load_into(&path, &mut bytes);
        let part = self.read_loaded(start, b, keep, &path, &bytes);
        BUFFER.set(bytes);
        part
    }

    /// Bucket `b` read whole, from its file's `bytes` (none: nothing cached), each of its
    /// files looked at; the bucket is rewritten when anything in it changed.
    fn read_loaded(
        &self,
        start: &dir::Start,
        b: usize,
        keep: &(dyn Fn(Document) -> Option<Document> + Sync),
        path: &std::path::Path,
        bytes: &[u8],
    ) -> Part {
        let manifest = &start.manifest;
        let names_known = start.names_known;
        let count = manifest.buckets.len();
        let cached = files::decode_bucket(bytes)
            .filter(|bk| bk.fingerprint == self.area.fingerprint)
            .unwrap_or_default();
        let mut part = Part {
            id: cached.id,
            ..Part::default()
        };
        // Its names: the cached ones while the directory is unchanged and this bucket is
        // the one the manifest was written with; with the watcher's journal vouching for
        // it, the cached ones and those the journal named; else this bucket's share of a
        // listing.
        let vouched = start.vouched(b, cached.id);
        let listed: Option<Vec<&str>> =
            if vouched || (names_known && cached.id == manifest.buckets[b]) {
                None
            } else {
                part.changed = true;
                match self.area.share(b, count) {
                    Ok(names) => Some(names),
                    Err(e) => {
                        part.error = Some(e);
                        return part;
                    }
                }
            };
        // Both are sorted by name: walk them side by side.
        let cached_len = cached.entries.len();
        let mut old = cached.entries.into_iter().peekable();
        let mut rewrite = false;
        let pairs: Vec<(Cow<'_, str>, Option<Entry<'_>>)> = match listed {
            // The cached names, and those the journal named that the bucket lacks.
            None if vouched => {
                let mut pairs = Vec::with_capacity(cached_len);
                for name in start.changed_in_bucket(b, count) {
                    while let Some(e) = old.next_if(|e| *e.name < *name) {
                        pairs.push((e.name.clone(), Some(e)));
                    }
                    if old.peek().is_none_or(|e| e.name != name) {
                        pairs.push((Cow::Owned(name.to_string()), None));
                    }
                }
                pairs.extend(old.map(|e| (e.name.clone(), Some(e))));
                pairs
            }
            None => old.map(|e| (e.name.clone(), Some(e))).collect(),
            Some(names) => {
                let mut pairs = Vec::with_capacity(names.len());
                for name in names {
                    while old.next_if(|e| *e.name < *name).is_some() {
                        rewrite = true; // a name no longer listed
                    }
                    pairs.push((Cow::Borrowed(name), old.next_if(|e| e.name == name)));
                }
                rewrite |= old.next().is_some();
                pairs
            }
        };
        let mut entries = Vec::with_capacity(pairs.len());
        let mut ranked = Vec::new();
        for (name, old) in pairs {
            let had = old.is_some();
            let trust = vouched && !start.changed(&name);
            let (entry, outcome) = match self.read_entry(&name, old, trust) {
                Read::Gone => {
                    rewrite |= had;
                    continue;
                }
                Read::Cached(entry, outcome) => {
                    rewrite |= !had; // a name the bucket did not hold (not an id)
                    (entry, outcome)
                }
                Read::Fresh(entry, outcome, same) => {
                    rewrite |= !same || entry.racy;
                    (entry, outcome)
                }
            };
            match outcome {
                Some(Err(s)) => part.scan.skipped.push(s),
                _ if self.heads.is_some() => {
                    // Vouched for by `read_entry`: a cached head that is none is read again.
                    if let (Outcome::Doc(_), Some(each), Some(head)) =
                        (&entry.outcome, self.heads, entry.head())
                    {
                        each(&entry.name, &head);
                    }
                }
                _ if self.claimable => {
                    if let Outcome::Doc(_) = entry.outcome
                        && self.is_claimable(entry.core.status.as_deref())
                    {
                        ranked.push((
                            entry.core.priority,
                            entry.core.created.clone().into_owned(),
                            entry.name.to_string(),
                        ));
                    }
                }
                Some(Ok(doc)) => part.scan.docs.extend(keep(doc)),
                None => {}
            }
            entries.push(entry);
        }
        part.entries = entries.len();
        if self.claimable {
            part.claimable = Some(Stream::read(ranked));
        }
        if rewrite {
            let bucket = Bucket {
                id: files::unique(),
                fingerprint: self.area.fingerprint,
                entries,
            };
            let bytes = files::encode_bucket(&bucket, &|c| self.is_claimable(c.status.as_deref()));
            files::save(path, &bytes);
            part.id = bucket.id;
            part.changed = true;
        }
        part
    }

    /// One file: its cached outcome when its stat data are unchanged (or `trust`: the
    /// watcher's journal says it did not change), else read again.
    fn read_entry<'e>(&self, name: &str, old: Option<Entry<'e>>, trust: bool) -> Read<'e> {
        // Made only when needed: most entries of a big read are cached and ruled out.
        let path = || self.area.dir.join(format!("{name}.md"));
        let file = |key: Option<StatKey>| DocFile {
            id: name.to_string(),
            path: path(),
            is_symlink: key.is_some_and(|k| k.file_type() == FileType::Symlink),
            is_special: key.is_some_and(|k| {
                !matches!(k.file_type(), FileType::RegularFile | FileType::Symlink)
            }),
        };
        // A name that is not an id is skipped whatever the file holds: no need to look.
        if crate::id::validate(name).is_err() {
            let outcome = crate::scan::read_one(self.board, self.region, &file(None));
            let entry = Entry::new(
                Cow::Owned(name.to_string()),
                StatKey::default(),
                false,
                false,
                Head::default(),
                Outcome::Skipped(Cow::Borrowed("")),
            );
            return Read::Cached(entry, Some(outcome));
        }
        let key = match &old {
            Some(old) if trust && !old.racy && old.key != StatKey::default() => old.key,
            _ => match dir::stat_doc(&self.dir_fd, name) {
                Some(key) => key,
                None => return Read::Gone,
            },
        };
        // `each` is handed whole heads: no entry whose head's rest is not one is trusted
        // (a bucket's CRC makes that all but impossible), the file is read again.
        let old = old.filter(|o| self.heads.is_none() || o.head().is_some());
        let old = match old {
            Some(mut old) if !old.racy && old.key == key && key != StatKey::default() => {
                if (self.claimable || self.heads.is_some())
                    && matches!(old.outcome, Outcome::Doc(_))
                {
                    return Read::Cached(old, None);
                }
                if let Outcome::Doc(text) = &old.outcome
                    && (!(self.pre.status)(old.core.status.as_deref())
                        || (old.plain && !self.may_match(text)))
                {
                    return Read::Cached(old, None);
                }
                // The prefilter's `head` is handed the whole head, decoded once; a rest that
                // is not one leaves nothing cached (as above).
                let by_head = match (&old.outcome, self.pre.head) {
                    (Outcome::Doc(_), Some(head)) => old.head().map(|h| head(name, &h)),
                    _ => Some(true),
                };
                match by_head {
                    Some(false) => return Read::Cached(old, None),
                    Some(true) => {}
                    None => return self.read_entry(name, None, false),
                }
                let outcome = match &mut old.outcome {
                    // The text moves into the document; the entry keeps a copy only when
                    // the bucket is rewritten (it borrows the file's bytes until then).
                    Outcome::Doc(text) => crate::store::parse_doc(
                        self.board,
                        self.region,
                        name,
                        text.to_string(),
                        &path(),
                    )
                    .map(|mut d| {
                        d.archived = self.archived;
                        Ok(d)
                    })
                    .ok(),
                    Outcome::Skipped(problem) => Some(Err(Skipped {
                        path: self.board.rel(&path()),
                        problem: problem.to_string(),
                    })),
                };
                match outcome {
                    Some(outcome) => return Read::Cached(old, Some(outcome)),
                    None => Some(old),
                }
            }
            old => old,
        };
        // Read it as a full scan does, between two looks at its stat data: a change while
        // it was read shows in them, and the read is not trusted next time. The stamp it
        // is judged by is taken before.
        let stamp = self.area.stamp(key.dev);
        let outcome =
            crate::scan::read_one(self.board, self.region, &file(Some(key))).map(|mut d| {
                d.archived = self.archived;
                d
            });
        let after = dir::stat_doc(&self.dir_fd, name);
        let entry = Entry::new(
            Cow::Owned(name.to_string()),
            key,
            stamp.racy_read(&key, after),
            outcome.as_ref().is_ok_and(|d| {
                d.raw.is_ascii() && crate::doc::fast::parse(d.frontmatter()).is_some()
            }),
            outcome.as_ref().map(Head::of).unwrap_or_default(),
            match &outcome {
                Ok(doc) => Outcome::Doc(Cow::Owned(doc.raw.clone())),
                Err(s) => Outcome::Skipped(Cow::Owned(s.problem.clone())),
            },
        );
        let same = old.is_some_and(|o| o == entry);
        Read::Fresh(entry, Some(outcome), same)
    }
}

enum Read<'e> {
    /// The file is no longer there.
    Gone,
    /// From the index (None: a document the needles rule out, not parsed).
    Cached(Entry<'e>, Option<std::result::Result<Document, Skipped>>),
    /// Read from the file just now; whether the index held the same.
    Fresh(
        Entry<'e>,
        Option<std::result::Result<Document, Skipped>>,
        bool,
    ),
}

impl Area<'_> {
    /// May a cached plain document match? (Its text holds the needles, and its
    /// frontmatter passes the plain test.)
    fn may_match(&self, text: &str) -> bool {
        self.needles
            .as_ref()
            .is_none_or(|all| all.iter().all(|any| any.is_match(text)))
            && crate::doc::split::split(text).is_ok_and(|parts| (self.pre.plain)(parts.frontmatter))
    }
}

/// What the cached outcomes depend on besides the files: this program, the board's
/// settings (size and YAML limits), and where the board is (skip messages name paths).
fn fingerprint(board: &Board) -> u64 {
    let text = format!(
        "{FORMAT}\0{}\0{}\0{:?}",
        env!("CARGO_PKG_VERSION"),
        board.root.display(),
        board.config
    );
    files::fnv(text.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn board() -> (tempfile::TempDir, Board) {
        let dir = tempfile::tempdir().unwrap();
        crate::board::init(dir.path()).unwrap();
        let board = Board::open(&dir.path().join(".tavern")).unwrap();
        (dir, board)
    }

    fn everything() -> Prefilter<'static> {
        Prefilter::NONE
    }

    fn doc(id: &str, title: &str) -> String {
        format!("---\nid: {id}\ntitle: {title}\nstatus: pending\n---\n")
    }

    fn titles(board: &Board) -> Vec<String> {
        read_dir(board, Region::Tasks, false, &everything(), &|_| true)
            .unwrap()
            .docs
            .iter()
            .map(|d| d.title().to_string())
            .collect()
    }

    /// The one bucket of the tasks' index (a small board has one), decoded.
    fn with_bucket(board: &Board, f: impl FnOnce(&mut Bucket<'static>)) {
        let dir = crate::layout::index_dir(&board.root).join("tasks");
        let bytes = std::fs::read(files::manifest_path(&dir)).unwrap();
        let manifest = files::decode_manifest(&bytes).unwrap();
        assert_eq!(manifest.buckets.len(), 1);
        let path = files::bucket_path(&dir, manifest.generation, 0);
        let bytes: &'static [u8] = std::fs::read(&path).unwrap().leak();
        let mut bucket = files::decode_bucket(bytes).unwrap();
        f(&mut bucket);
        let workflow = &board.config.workflow;
        let claimable = |c: &files::Core<'_>| {
            c.status
                .as_deref()
                .is_some_and(|s| workflow.is_claimable(s))
        };
        files::save(&path, &files::encode_bucket(&bucket, &claimable));
    }

    /// The stat data of a file (following no symlink).
    fn key_of(path: &std::path::Path) -> StatKey {
        StatKey::of(&rustix::fs::lstat(path).unwrap())
    }

    /// The stamp the last read of the tasks took: its file's ctime.
    fn stamp_of(board: &Board) -> i128 {
        key_of(&crate::layout::index_dir(&board.root).join("tasks/stamp")).ctime
    }

    /// Waits until the file system's clock has moved past `time` (a file touched now gets
    /// a later ctime): no sleep is trusted to be long enough.
    fn wait_past(board: &Board, time: i128) {
        let probe = board.root.join(".state/clock-probe");
        loop {
            std::fs::write(&probe, b"").unwrap();
            if key_of(&probe).ctime > time {
                return;
            }
            std::thread::yield_now();
        }
    }

    #[test]
    fn a_file_is_racy_exactly_when_its_change_is_not_older_than_the_stamp() {
        let (_dir, board) = board();
        let path = board.root.join("tasks/t-1.md");
        std::fs::write(&path, doc("t-1", "first")).unwrap();
        assert_eq!(titles(&board), ["first"]);
        let key = key_of(&path);
        let stamp = stamp_of(&board);
        with_bucket(&board, |b| {
            assert_eq!(b.entries[0].racy, key.ctime.max(key.mtime) >= stamp);
        });
        // Once the file system's clock has moved past the change, the next read that
        // reads the file trusts it: no fixed window of seconds.
        wait_past(&board, key.ctime.max(key.mtime));
        with_bucket(&board, |b| b.entries[0].racy = true);
        assert_eq!(titles(&board), ["first"]);
        assert!(stamp_of(&board) > key.ctime.max(key.mtime));
        with_bucket(&board, |b| {
            assert!(!b.entries[0].racy, "read after its tick: trusted")
        });
        // An mtime set into the future stays racy whatever the stamp.
        let later = std::time::SystemTime::now() + std::time::Duration::from_secs(3600);
        std::fs::File::options()
            .write(true)
            .open(&path)
            .unwrap()
            .set_modified(later)
            .unwrap();
        assert_eq!(titles(&board), ["first"]);
        with_bucket(&board, |b| assert!(b.entries[0].racy, "an mtime ahead"));
    }

    #[test]
    fn a_file_read_within_a_tick_of_its_change_is_read_again_next_time() {
        let (_dir, board) = board();
        std::fs::write(board.root.join("tasks/t-1.md"), doc("t-1", "first")).unwrap();
        assert_eq!(titles(&board), ["first"]);
        // Racy (as a read in the tick of its change leaves it): a same-tick change could
        // hide behind equal stat data.
        let mut cached_key = StatKey::default();
        with_bucket(&board, |b| {
            b.entries[0].racy = true;
            cached_key = b.entries[0].key;
            // What a same-tick change would leave: other text under the same stat data.
            b.entries[0].outcome = Outcome::Doc(Cow::Owned(doc("t-1", "stale")));
        });
        assert_eq!(titles(&board), ["first"], "a racy entry is read again");
        // Once trusted (not racy) with equal stat data, the cache is what is read: the
        // stale text shows, which is why racy entries must never be trusted.
        with_bucket(&board, |b| {
            assert_eq!(b.entries[0].key, cached_key);
            b.entries[0].racy = false;
            b.entries[0].outcome = Outcome::Doc(Cow::Owned(doc("t-1", "stale")));
        });
        assert_eq!(titles(&board), ["stale"]);
        // Any other stat data (here: a different ctime) and it is read again.
        with_bucket(&board, |b| b.entries[0].key.ctime -= 1);
        assert_eq!(titles(&board), ["first"]);
    }

    #[test]
    fn needles_pass_over_only_plain_cached_documents() {
        let (_dir, board) = board();
        let path = board.root.join("tasks/t-1.md");
        // A value YAML reads as `pending` though its text does not hold the word.
        std::fs::write(
            &path,
            "---\nid: t-1\ntitle: escaped\nstatus: \"pend\\u0069ng\"\n---\n",
        )
        .unwrap();
        let pending = |board: &Board| {
            let needles = [vec!["pending".to_string()]];
            let pre = Prefilter {
                needles: &needles,
                plain: &|_| true,
                status: &|_| true,
                head: None,
            };
            read_dir(board, Region::Tasks, false, &pre, &|d| {
                d.status() == Some("pending")
            })
            .unwrap()
            .docs
            .len()
        };
        assert_eq!(pending(&board), 1, "read from the file");
        with_bucket(&board, |b| {
            assert!(
                !b.entries[0].plain,
                "a quoted scalar is not in the plain subset"
            );
            b.entries[0].racy = false;
        });
        assert_eq!(
            pending(&board),
            1,
            "a cached document that is not plain is parsed"
        );
        // Were it marked plain, the needle would pass over it: why `plain` must be exact.
        with_bucket(&board, |b| b.entries[0].plain = true);
        assert_eq!(pending(&board), 0);
        // A plain document that holds the needle in any case is parsed, and then matched.
        std::fs::write(&path, doc("t-1", "plain")).unwrap();
        assert_eq!(pending(&board), 1);
        with_bucket(&board, |b| {
            assert!(b.entries[0].plain, "what tavern writes is plain");
            b.entries[0].racy = false;
        });
        assert_eq!(pending(&board), 1, "parsed from the index");
    }

    static REPORTS: std::sync::Mutex<Vec<(String, usize, usize)>> =
        std::sync::Mutex::new(Vec::new());

    fn record(what: &str, _dir: &std::path::Path, done: usize, total: usize) {
        REPORTS
            .lock()
            .unwrap()
            .push((what.to_string(), done, total));
    }

    #[test]
    fn a_build_reports_which_index_and_how_far_only_once_it_has_taken_a_second() {
        let dir = std::path::Path::new("tasks");
        let progress = |started| Progress {
            sink: record,
            what: "search index",
            total: 10,
            started,
            done: Default::default(),
            last: Default::default(),
        };
        let quick = progress(std::time::Instant::now());
        quick.add(dir, 4);
        quick.end(dir);
        assert!(REPORTS.lock().unwrap().is_empty(), "under a second: silent");
        let Some(long_ago) =
            std::time::Instant::now().checked_sub(std::time::Duration::from_secs(2))
        else {
            return; // a clock too young to go back two seconds
        };
        let slow = progress(long_ago);
        slow.add(dir, 4);
        slow.end(dir);
        assert_eq!(
            *REPORTS.lock().unwrap(),
            [
                ("search index".to_string(), 4, 10),
                ("search index".to_string(), 10, 10)
            ]
        );
    }

    #[test]
    fn a_wall_clock_jump_distrusts_the_whole_index() {
        let (_dir, board) = board();
        std::fs::write(board.root.join("tasks/t-1.md"), doc("t-1", "first")).unwrap();
        titles(&board);
        with_bucket(&board, |b| {
            b.entries[0].racy = false;
            b.entries[0].outcome = Outcome::Doc(Cow::Owned(doc("t-1", "stale")));
        });
        assert_eq!(titles(&board), ["stale"]);
        let dir = crate::layout::index_dir(&board.root).join("tasks");
        let mut manifest =
            files::decode_manifest(&std::fs::read(files::manifest_path(&dir)).unwrap()).unwrap();
        manifest.clocks.wall += 3_600_000_000_000; // written an hour "later" by the wall
        files::save(
            &files::manifest_path(&dir),
            &files::encode_manifest(&manifest),
        );
        assert_eq!(titles(&board), ["first"]);
    }
}
