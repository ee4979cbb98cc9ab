//! Search (`.state/search/`): every document (each region, the archive) and every text
//! file under `solutions/`, ranked by BM25 over English stems, with typo tolerance for
//! single words, phrases, and the query language's filters.
//!
//! The index is derived state, as the read index is, and kept true the same way: per
//! directory a manifest and buckets of about a thousand files hashed by name, each file's
//! stat data beside what it gave, checked on every search (one `statat` per file) under
//! git's racy-timestamp rule, the directory's own stat data telling whether it must be
//! listed again, and the wall clock checked against the boot clock. A file whose stat data
//! changed is read and analysed again; a bucket holding one is rewritten whole (temp file,
//! rename, CRC-32s), so a search killed mid-update leaves old or new files, never a wrong
//! one. Each bucket holds its own inverted index (a term directory, then the postings: see
//! [`store`]): a search reads the stat data and the directories, then only the postings
//! of its words; BM25's statistics (document count, average length, document
//! frequencies) are summed over the buckets at search time.
//!
//! The hits are then read from their files (the text of a hit is never taken from the
//! index): filters are matched against the document as it is, phrases are checked word
//! by word, and the snippets are its lines holding a word searched for.

mod store;
pub mod text;

use std::collections::{HashMap, HashSet};
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};

use chrono::{DateTime, Utc};
use rustix::fs::FileType;
use serde::Serialize;

use crate::board::Board;
use crate::doc::{Document, Region};
use crate::error::{Error, Result};
use crate::index::dir as ixdir;
use crate::index::files::{self as ixfiles};
use crate::index::stat::{self, Clocks, StatKey};
use crate::query::{Query, Term};
use crate::scan::{DocFile, Skipped};
use store::{Analysed, Bucket, Entry, Kind, Slot};
pub use text::Snippet;

/// Bumped whenever what the index stores, or how a file is analysed, changes.
const FORMAT: u32 = 3;

/// BM25's parameters (the usual ones).
const K1: f64 = 1.2;
const B: f64 = 0.75;

/// A word of at least this many characters also matches the words one edit away (a
/// letter added, removed, changed, or two swapped), at this fraction of the weight.
pub const FUZZY_MIN_CHARS: usize = 5;
pub const FUZZY_WEIGHT: f64 = 0.5;

/// What to search for: query arguments (words, `"phrases"`, and filters).
#[derive(Clone, Debug)]
pub struct Request {
    pub terms: Vec<String>,
    pub limit: usize,
}

/// One hit: a document, or a file under `solutions/`.
#[derive(Clone, Debug, Serialize)]
pub struct Hit {
    /// The document's id; for a file under `solutions/`, its path.
    pub id: String,
    /// The file's path under the board.
    pub path: String,
    /// `tasks`, `observations`, `questions`, or `solutions`.
    pub region: &'static str,
    pub archived: bool,
    pub title: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
    /// BM25, rounded to three decimals: comparable within one search.
    pub score: f64,
    pub snippets: Vec<Snippet>,
    /// How many of the words searched for it holds.
    #[serde(skip)]
    pub words: usize,
}

/// What a search found, best first.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Found {
    pub hits: Vec<Hit>,
    /// Document files the search skipped (as `list` skips them), with why.
    pub skipped: Vec<Skipped>,
}

/// A word of the query, as searched.
#[derive(Debug)]
struct Want {
    /// Its term (stem).
    term: String,
    /// It may match terms one edit away.
    fuzzy: bool,
}

/// The query taken apart: what is ranked, what must hold.
struct Parsed {
    wants: Vec<Want>,
    /// Each phrase's terms, in order: a hit holds every one as consecutive words.
    phrases: Vec<Vec<String>>,
    /// Every other term: matched against each hit.
    filter: Query,
}

fn parse(terms: &[String]) -> Result<Parsed> {
    let query = Query::parse(terms)?;
    let mut wants: Vec<Want> = Vec::new();
    let mut phrases = Vec::new();
    let mut filter = Query::default();
    let mut want = |term: String, fuzzy: bool| {
        if let Some(w) = wants.iter_mut().find(|w| w.term == term) {
            w.fuzzy &= fuzzy;
        } else {
            wants.push(Want { term, fuzzy });
        }
    };
    for t in query.terms {
        match t {
            Term::Text(w) => {
                let words = text::words(&w);
                let single = words.len() == 1;
                for (word, term) in words {
                    want(term, single && word.chars().count() >= FUZZY_MIN_CHARS);
                }
            }
            Term::Phrase(p) => {
                let terms = text::terms(&p);
                for t in &terms {
                    want(t.clone(), false);
                }
                if !terms.is_empty() {
                    phrases.push(terms);
                }
            }
            other => filter.terms.push(other),
        }
    }
    if wants.is_empty() {
        return Err(Error::usage(
            "search needs words to look for: filters alone select documents (as list does), they rank nothing",
        ));
    }
    Ok(Parsed {
        wants,
        phrases,
        filter,
    })
}

/// Searches the board.
pub fn search(board: &Board, req: &Request) -> Result<Found> {
    run(board, &parse(&req.terms)?, req.limit)
}

/// An open finding that looks like another one: its id, title, and how close (its score
/// for the other's title words over the other's own score: 1 is as close as it gets).
#[derive(Clone, Debug, Serialize)]
pub struct Similar {
    pub id: String,
    pub title: String,
    pub similarity: f64,
}

/// From this similarity on, an open finding is named as a likely duplicate.
pub const SIMILAR_MIN: f64 = 0.5;

/// The open (or acknowledged) findings that look like `doc` (just posted): ranked by the
/// words of its title (less the words any English text holds: `the`, `is`, `on`), each
/// scored against `doc`'s own score for them; one that holds fewer than two of those
/// words (or, for a title of one word, that one) is not named, however rare the word it
/// shares; at most three.
pub fn similar(board: &Board, doc: &Document) -> Result<Vec<Similar>> {
    let mut wants: Vec<Want> = Vec::new();
    for (_, term) in text::words(doc.title()) {
        if !text::is_stopword(&term) && !wants.iter().any(|w| w.term == term) {
            wants.push(Want { term, fuzzy: false });
        }
    }
    let min_words = wants.len().min(2);
    if wants.is_empty() {
        return Ok(Vec::new());
    }
    let parsed = Parsed {
        wants,
        phrases: Vec::new(),
        filter: Query::parse(&["observations", "status=open,acknowledged"])?,
    };
    let found = run(board, &parsed, 50)?;
    let Some(own) = found
        .hits
        .iter()
        .find(|h| h.id == doc.id())
        .map(|h| h.score)
        .filter(|s| *s > 0.0)
    else {
        return Ok(Vec::new());
    };
    Ok(found
        .hits
        .iter()
        .filter(|h| h.id != doc.id() && h.words >= min_words)
        .map(|h| Similar {
            id: h.id.clone(),
            title: h.title.clone(),
            similarity: (h.score / own * 100.0).round() / 100.0,
        })
        .filter(|s| s.similarity >= SIMILAR_MIN)
        .take(3)
        .collect())
}

fn run(board: &Board, parsed: &Parsed, limit: usize) -> Result<Found> {
    if let Some(found) = run_once(board, parsed, limit)? {
        return Ok(found);
    }
    // A term's postings failed their check: the areas' manifests go, so that the index
    // is built again from the files (it is read fresh, and cannot fail so again).
    let search_dir = crate::layout::search_dir(&board.root);
    for entry in std::fs::read_dir(&search_dir)
        .into_iter()
        .flatten()
        .flatten()
    {
        let manifest = ixfiles::manifest_path(&entry.path());
        if let Err(e) = std::fs::remove_file(&manifest)
            && e.kind() != std::io::ErrorKind::NotFound
        {
            return Err(Error::io(&manifest, "remove", e));
        }
    }
    run_once(board, parsed, limit)?.ok_or_else(|| {
        Error::io(
            &search_dir,
            "read",
            std::io::Error::other("the search index fails its checks after it was built again"),
        )
    })
}

/// A search; None when postings failed their check.
fn run_once(board: &Board, parsed: &Parsed, limit: usize) -> Result<Option<Found>> {
    let regions = {
        let mut r = parsed.filter.regions();
        if r.is_empty() {
            r = Region::ALL.to_vec();
        }
        r
    };
    let mut areas = Vec::new();
    if !parsed.filter.archived() {
        areas.extend(regions.iter().map(|&r| Place::Region(r, false)));
    }
    areas.extend(regions.iter().map(|&r| Place::Region(r, true)));
    if parsed.filter.regions().is_empty() && !parsed.filter.archived() {
        areas.push(Place::Solutions);
    }
    let ctx = Ctx::new(board);
    let mut found = Found::default();
    let mut loaded = Vec::new();
    for place in areas {
        let buckets = Area::open(&ctx, place)?.refresh()?;
        for b in &buckets {
            for i in 0..b.count() {
                if let Some(problem) = b.problem(i) {
                    found.skipped.push(Skipped {
                        path: place.rel(b.name(i)),
                        problem: problem.to_string(),
                    });
                }
            }
        }
        loaded.push((place, buckets));
    }
    let Some(mut ranked) = rank(&loaded, parsed) else {
        return Ok(None);
    };
    let now = crate::time::now();
    // Only the best are sorted at first: a hit the filters turn down makes the search
    // sort (and read) further.
    let mut docs = std::mem::take(&mut ranked.docs);
    let docs = &mut docs;
    let ord = |x: &Scored, y: &Scored| {
        y.score
            .total_cmp(&x.score)
            .then_with(|| ranked.rel_cmp(x, y))
    };
    let mut sorted = ranked.first(docs, limit.saturating_mul(2) + 16, ord);
    let mut i = 0;
    while found.hits.len() < limit && i < docs.len() {
        if i == sorted {
            ranked.keys(&mut docs[sorted..]);
            docs[sorted..].sort_unstable_by(ord);
            sorted = docs.len();
        }
        let d = docs[i];
        i += 1;
        let (place, buckets) = &loaded[d.area as usize];
        let name = buckets[d.bucket as usize].name(d.entry as usize);
        if let Some(hit) = verify(
            board,
            *place,
            name,
            d.score,
            parsed,
            &ranked.matched_terms,
            now,
        ) {
            found.hits.push(Hit {
                words: d.words as usize,
                ..hit
            });
        }
    }
    Ok(Some(found))
}

/// A document holding a word searched for: its score, where it is, how many of the words
/// it holds.
#[derive(Clone, Copy, Debug)]
struct Scored {
    score: f64,
    /// [`path_key`] of its name (set once it is among the best: see [`Ranked::first`]):
    /// ties of score are broken by it. Two halves, so that the struct is 40 bytes.
    key: [u64; 2],
    area: u32,
    bucket: u32,
    entry: u32,
    words: u32,
}

/// The documents holding a word searched for (unsorted), and how to order them.
struct Ranked<'a> {
    docs: Vec<Scored>,
    /// Every term that matched somewhere (the words and their near misses), for snippets.
    matched_terms: HashSet<String>,
    loaded: &'a [(Place, Vec<Bucket>)],
    /// Per area, what comes before and after a name in its path under the board.
    rel: Vec<(String, &'static str)>,
}

impl Ranked<'_> {
    /// Puts the first `k` (at least 1) documents of the order `ord` (score, then path) at
    /// the front, sorted, every other one after them (in no order). Returns how many are
    /// sorted (`k`, or every document when there are fewer). Only the names of those that
    /// score at least as the `k`th are read (their paths' keys are set).
    fn first(
        &self,
        docs: &mut [Scored],
        k: usize,
        ord: impl Fn(&Scored, &Scored) -> std::cmp::Ordering,
    ) -> usize {
        let mut m = docs.len();
        if k > 0 && k < docs.len() {
            docs.select_nth_unstable_by(k - 1, |x, y| y.score.total_cmp(&x.score));
            let t = docs[k - 1].score;
            m = k;
            for j in k..docs.len() {
                if docs[j].score.total_cmp(&t).is_ge() {
                    docs.swap(m, j);
                    m += 1;
                }
            }
        }
        self.keys(&mut docs[..m]);
        // Many may tie with the `k`th (documents alike score alike): of those only the
        // first `k` are sorted, the others are left after them.
        if k > 0 && m > k {
            docs[..m].select_nth_unstable_by(k - 1, &ord);
            m = k;
        }
        docs[..m].sort_unstable_by(ord);
        m
    }

    /// Sets each document's [`path_key`].
    fn keys(&self, docs: &mut [Scored]) {
        for d in docs {
            let area = d.area as usize;
            d.key = path_key(
                self.loaded[area].1[d.bucket as usize].name(d.entry as usize),
                self.rel[area].1,
            );
        }
    }

    /// Two documents in the order of their paths under the board (ties of score are
    /// broken so), without building the paths.
    fn rel_cmp(&self, x: &Scored, y: &Scored) -> std::cmp::Ordering {
        // Most ties are of one directory: the same text before the names, so what
        // follows decides, and their keys tell unless they start with the same 16 bytes.
        if x.area == y.area && x.key != y.key {
            return x.key.cmp(&y.key);
        }
        let path = |d: &Scored| {
            let area = d.area as usize;
            let (before, after) = &self.rel[area];
            let name = self.loaded[area].1[d.bucket as usize].name(d.entry as usize);
            before.bytes().chain(name.bytes()).chain(after.bytes())
        };
        path(x).cmp(path(y)).then(x.area.cmp(&y.area))
    }
}

/// The first 16 bytes of a file's name and what follows it in its path (`.md`), as a
/// number (in two halves, the first the higher) that orders as those texts do (shorter
/// ones padded with zeros, which no name holds): equal only when they start with the same
/// 16 bytes.
fn path_key(name: &str, after: &str) -> [u64; 2] {
    let mut k = [0u8; 16];
    for (slot, b) in k.iter_mut().zip(name.bytes().chain(after.bytes())) {
        *slot = b;
    }
    let k = u128::from_be_bytes(k);
    [(k >> 64) as u64, k as u64]
}

/// In one bucket, the terms each word matches (its own, and for a fuzzy word those one
/// edit away), and the postings of each of them; None when postings fail their check.
#[allow(clippy::type_complexity)]
fn look_up(b: &Bucket, wants: &[Want]) -> Option<(Vec<Vec<usize>>, Vec<(usize, store::Postings)>)> {
    let mut all: Vec<Vec<usize>> = wants
        .iter()
        .map(|w| b.find(&w.term).into_iter().collect())
        .collect();
    // The fuzzy words: (which, bytes, ASCII, characters).
    let fuzzy: Vec<(usize, &[u8], bool, usize)> = wants
        .iter()
        .enumerate()
        .filter(|(_, w)| w.fuzzy)
        .map(|(k, w)| {
            (
                k,
                w.term.as_bytes(),
                w.term.is_ascii(),
                w.term.chars().count(),
            )
        })
        .collect();
    if !fuzzy.is_empty() {
        // One edit changes a word by at most one character: four bytes. The terms'
        // lengths are told by the directory's ends, before their bytes are looked at; one
        // pass for every fuzzy word.
        let lo = fuzzy.iter().map(|f| f.1.len()).min().unwrap_or(0);
        let hi = fuzzy.iter().map(|f| f.1.len()).max().unwrap_or(0);
        b.terms_within(lo.saturating_sub(4), hi + 4, |i, t| {
            for &(k, w, ascii, chars) in &fuzzy {
                // One edit of a word of three characters or more leaves its first or its
                // last character as it was (so its first or its last byte).
                if t.len().abs_diff(w.len()) > 4
                    || (chars >= 3 && t.first() != w.first() && t.last() != w.last())
                {
                    continue;
                }
                // Two ASCII words (most): compared as bytes, without decoding.
                let near = if ascii && t.is_ascii() {
                    t.len().abs_diff(w.len()) <= 1 && one_edit(t, w)
                } else {
                    let t = b.term(i);
                    let w = std::str::from_utf8(w).unwrap_or_default();
                    t.chars().count().abs_diff(chars) <= 1 && one_edit_apart(t, w)
                };
                if near {
                    all[k].push(i);
                }
            }
        });
    }
    let mut read: Vec<(usize, store::Postings)> = Vec::new();
    for &i in all.iter().flatten() {
        if !read.iter().any(|(j, _)| *j == i) {
            read.push((i, b.postings(i)?));
        }
    }
    Some((all, read))
}

/// None when a term's postings fail their check.
fn rank<'a>(loaded: &'a [(Place, Vec<Bucket>)], parsed: &Parsed) -> Option<Ranked<'a>> {
    // Every document searched gets a number: its bucket's first, plus its place there.
    let mut first: Vec<Vec<usize>> = Vec::with_capacity(loaded.len());
    let mut count = 0usize;
    // The collection's statistics, summed over every bucket searched.
    let mut n_docs = 0u64;
    let mut total_len = 0u64;
    for (_, buckets) in loaded {
        let mut starts = Vec::with_capacity(buckets.len());
        for b in buckets {
            starts.push(count);
            count += b.count();
            n_docs += b.indexed;
            total_len += b.total_len;
        }
        first.push(starts);
    }
    let avg_len = (total_len as f64 / n_docs.max(1) as f64).max(1.0);
    // Each term matched (a word searched for, or a near miss of one), once, with its
    // postings in each bucket holding it.
    let mut term_ids: HashMap<String, usize> = HashMap::new();
    let mut postings: Vec<Vec<(usize, usize, store::Postings)>> = Vec::new();
    // Per word, the terms it matched.
    let mut want_terms: Vec<Vec<usize>> = vec![Vec::new(); parsed.wants.len()];
    // Each bucket's terms for the words (and their postings), looked up on every core.
    let all: Vec<(usize, usize)> = loaded
        .iter()
        .enumerate()
        .flat_map(|(a, (_, buckets))| (0..buckets.len()).map(move |bi| (a, bi)))
        .collect();
    let looked = ixdir::each_bucket(all.len(), |k| {
        let (a, bi) = all[k];
        look_up(&loaded[a].1[bi], &parsed.wants)
    });
    for (&(a, bi), looked) in all.iter().zip(looked) {
        let b = &loaded[a].1[bi];
        let (hits, mut read) = looked?;
        let mut here: Vec<usize> = Vec::new();
        for (wi, hits) in hits.into_iter().enumerate() {
            for i in hits {
                let term = b.term(i);
                let id = match term_ids.get(term) {
                    Some(&id) => id,
                    None => {
                        term_ids.insert(term.to_string(), postings.len());
                        postings.push(Vec::new());
                        postings.len() - 1
                    }
                };
                if !want_terms[wi].contains(&id) {
                    want_terms[wi].push(id);
                }
                if !here.contains(&id) {
                    here.push(id);
                    let at = read.iter().position(|(j, _)| *j == i)?;
                    postings[id].push((a, bi, std::mem::take(&mut read[at].1)));
                }
            }
        }
    }
    let mut names: Vec<&str> = vec![""; postings.len()];
    for (t, &id) in &term_ids {
        names[id] = t;
    }
    let matched_terms: HashSet<String> = term_ids.keys().cloned().collect();
    // Each term's weight in each document holding it (BM25).
    let idf: Vec<f64> = postings
        .iter()
        .map(|lists| {
            let df = lists.iter().map(|(_, _, p)| p.len()).sum::<usize>() as f64;
            (1.0 + (n_docs as f64 - df + 0.5) / (df + 0.5)).ln()
        })
        .collect();
    // Per document: its score, the phrase words it holds, the words it holds.
    let mut score = vec![0.0f64; count];
    let mut words = vec![0u32; count];
    let mut best = vec![0.0f64; count];
    let mut touched: Vec<usize> = Vec::new();
    for (wi, terms) in want_terms.iter().enumerate() {
        // Per document, the best of the word's terms (an exact match over a near miss).
        for &id in terms {
            let weight = if names[id] == parsed.wants[wi].term {
                1.0
            } else {
                FUZZY_WEIGHT
            };
            for (a, b, list) in &postings[id] {
                let bucket = &loaded[*a].1[*b];
                let base = first[*a][*b];
                for &(e, tf) in list {
                    let len = bucket.doc_len(e as usize) as f64;
                    let tf = tf as f64;
                    let s = weight * idf[id] * tf * (K1 + 1.0)
                        / (tf + K1 * (1.0 - B + B * len / avg_len));
                    let g = base + e as usize;
                    if best[g] == 0.0 {
                        touched.push(g);
                    }
                    best[g] = best[g].max(s);
                }
            }
        }
        for g in touched.drain(..) {
            score[g] += best[g];
            words[g] += 1;
            best[g] = 0.0;
        }
    }
    // A phrase's words are required, exactly.
    let mut required = vec![0u32; count];
    let mut needed = 0u32;
    for term in parsed
        .phrases
        .iter()
        .flatten()
        .map(String::as_str)
        .collect::<HashSet<_>>()
    {
        needed += 1;
        let Some(&id) = term_ids.get(term) else {
            required.clear();
            break;
        };
        for (a, b, list) in &postings[id] {
            for &(e, _) in list {
                required[first[*a][*b] + e as usize] += 1;
            }
        }
    }
    let rel: Vec<(String, &'static str)> =
        loaded.iter().map(|(place, _)| place.rel_parts()).collect();
    let mut docs = Vec::new();
    if needed == 0 || !required.is_empty() {
        for (a, (_, buckets)) in loaded.iter().enumerate() {
            for (bi, b) in buckets.iter().enumerate() {
                let base = first[a][bi];
                for e in 0..b.count() {
                    let g = base + e;
                    if words[g] > 0 && (needed == 0 || required[g] == needed) {
                        docs.push(Scored {
                            score: score[g],
                            key: [0; 2],
                            area: a as u32,
                            bucket: bi as u32,
                            entry: e as u32,
                            words: words[g],
                        });
                    }
                }
            }
        }
    }
    Some(Ranked {
        docs,
        matched_terms,
        loaded,
        rel,
    })
}

/// Reads a ranked file as it is now: it must still match the filters and phrases; its
/// snippets are its lines holding a word searched for.
fn verify(
    board: &Board,
    place: Place,
    name: &str,
    score: f64,
    parsed: &Parsed,
    wanted: &HashSet<String>,
    now: DateTime<Utc>,
) -> Option<Hit> {
    let (doc, region) = match place {
        Place::Region(region, archived) => {
            let dir = place.dir(board);
            let path = dir.join(format!("{name}.md"));
            let meta = std::fs::symlink_metadata(&path).ok()?;
            let file = DocFile {
                id: name.to_string(),
                path,
                is_symlink: meta.file_type().is_symlink(),
                is_special: !meta.file_type().is_symlink() && !meta.is_file(),
            };
            let mut doc = crate::scan::read_one(board, region, &file).ok()?;
            doc.archived = archived;
            (doc, Some(region))
        }
        Place::Solutions => {
            let rel = format!("{}/{name}", crate::layout::SOLUTIONS_DIR);
            let text = crate::ops::resolve::read_solution(board, &rel).ok()?;
            let doc = Document::loose(Region::Tasks, name, text, board.config.yaml_limits());
            (doc, None)
        }
    };
    if !parsed.filter.matches_in(&doc, region, now) {
        return None;
    }
    let (title, body) = match place {
        Place::Region(..) => (doc.title().to_string(), doc.body()),
        Place::Solutions => (solution_title(name, &doc.raw), doc.raw.as_str()),
    };
    if !parsed.phrases.is_empty() {
        let mut seq = text::terms(&title);
        seq.push(String::new()); // no phrase spans the title and the body
        seq.extend(text::terms(body));
        if !parsed.phrases.iter().all(|p| text::holds_phrase(&seq, p)) {
            return None;
        }
    }
    let first_line = doc.raw[..doc.raw.len() - body.len()].lines().count() + 1;
    let snippets = text::snippets(body, first_line, wanted);
    Some(match place {
        Place::Region(region, archived) => Hit {
            id: doc.id().to_string(),
            path: doc.rel_path(),
            region: region.dir(),
            archived,
            title,
            status: doc.status().map(str::to_string),
            score: (score * 1000.0).round() / 1000.0,
            snippets,
            words: 0,
        },
        Place::Solutions => {
            let path = place.rel(name);
            Hit {
                id: path.clone(),
                path,
                region: "solutions",
                archived: false,
                title,
                status: None,
                score: (score * 1000.0).round() / 1000.0,
                snippets,
                words: 0,
            }
        }
    })
}

/// A solution file's title: its first markdown heading, else its file name.
fn solution_title(name: &str, text: &str) -> String {
    text.lines()
        .find_map(|l| {
            let h = l.trim_start_matches('#');
            (h.len() < l.len() && h.starts_with(' ')).then(|| h.trim().to_string())
        })
        .filter(|t| !t.is_empty())
        .unwrap_or_else(|| name.rsplit('/').next().unwrap_or(name).to_string())
}

/// The text a document is found by: its id, its title (twice: a word there weighs more),
/// its body.
fn doc_terms(doc: &Document) -> Vec<String> {
    let mut t = text::terms(doc.id());
    let title = text::terms(doc.title());
    t.extend(title.iter().cloned());
    t.extend(title);
    t.extend(text::terms(doc.body()));
    t
}

/// A solution file's: its path under `solutions/` and its text.
fn solution_terms(name: &str, text: &str) -> Vec<String> {
    let mut t = text::terms(name);
    t.extend(text::terms(text));
    t
}

/// Terms with their frequencies, sorted.
fn counted(terms: Vec<String>) -> (Vec<(String, u32)>, u32) {
    let len = terms.len() as u32;
    let mut counts: HashMap<String, u32> = HashMap::new();
    for t in terms {
        *counts.entry(t).or_default() += 1;
    }
    let mut v: Vec<(String, u32)> = counts.into_iter().collect();
    v.sort();
    (v, len)
}

/// A directory searched: a region's, its archive's, or the tree under `solutions/`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Place {
    Region(Region, bool),
    Solutions,
}

impl Place {
    fn dir(self, board: &Board) -> PathBuf {
        match self {
            Place::Region(r, false) => board.region_dir(r),
            Place::Region(r, true) => board.archive_dir(r),
            Place::Solutions => board.root.join(crate::layout::SOLUTIONS_DIR),
        }
    }

    fn index_name(self) -> String {
        match self {
            Place::Region(r, false) => r.dir().to_string(),
            Place::Region(r, true) => format!("archive-{}", r.dir()),
            Place::Solutions => "solutions".into(),
        }
    }

    /// What comes before and after a file's name in its path under the board.
    fn rel_parts(self) -> (String, &'static str) {
        match self {
            Place::Region(r, false) => (format!("{}/", r.dir()), ".md"),
            Place::Region(r, true) => (format!("archive/{}/", r.dir()), ".md"),
            Place::Solutions => (format!("{}/", crate::layout::SOLUTIONS_DIR), ""),
        }
    }

    /// A file's path under the board.
    fn rel(self, name: &str) -> String {
        match self {
            Place::Region(r, false) => format!("{}/{name}.md", r.dir()),
            Place::Region(r, true) => format!("archive/{}/{name}.md", r.dir()),
            Place::Solutions => format!("{}/{name}", crate::layout::SOLUTIONS_DIR),
        }
    }
}

/// What every area of one search shares.
struct Ctx<'a> {
    board: &'a Board,
    now: Clocks,
    fingerprint: u64,
    /// Where the watcher's journal stood, taken once for the search (one cookie).
    view: std::sync::Arc<std::sync::OnceLock<Option<crate::index::journal::View>>>,
}

impl<'a> Ctx<'a> {
    fn new(board: &'a Board) -> Self {
        let text = format!(
            "search {FORMAT}\0{}\0{}\0{:?}",
            env!("CARGO_PKG_VERSION"),
            board.root.display(),
            board.config
        );
        Ctx {
            board,
            now: Clocks::now(),
            fingerprint: ixfiles::fnv(text.as_bytes()),
            view: Default::default(),
        }
    }
}

/// One directory being brought up to date.
struct Area<'a> {
    ctx: &'a Ctx<'a>,
    place: Place,
    dir_fd: Option<OwnedFd>,
    area: ixdir::Area,
}

impl<'a> Area<'a> {
    fn open(ctx: &'a Ctx<'a>, place: Place) -> Result<Area<'a>> {
        let dir = place.dir(ctx.board);
        let dir_fd = ixdir::open(&dir, true)?;
        let lister: ixdir::Lister = match place {
            Place::Solutions => walk,
            _ => ixdir::list_docs,
        };
        Ok(Area {
            ctx,
            place,
            dir_fd,
            area: ixdir::Area::new(
                &ctx.board.root,
                dir,
                crate::layout::search_dir(&ctx.board.root).join(place.index_name()),
                ctx.now,
                ctx.fingerprint,
                lister,
            )
            .with_view(ctx.view.clone())
            .with_keeper(crate::index::keeper::mode(ctx.board)),
        })
    }

    /// The area's buckets, each brought up to date with the files.
    fn refresh(&self) -> Result<Vec<Bucket>> {
        let Some(dir_fd) = &self.dir_fd else {
            return Ok(Vec::new());
        };
        // Taken before the listing: a change during it makes the next search list again.
        // The tree under solutions/ is walked every time (its subdirectories change
        // without the top one's stat data changing).
        let dir_key = match self.place {
            Place::Solutions => None,
            _ => Some(stat::fstat(dir_fd).map_err(|e| Error::io(&self.area.dir, "list", e))?),
        };
        let start = self.area.start(dir_key)?;
        let count = start.manifest.buckets.len();
        // Built from nothing, it reports its progress as the read index does.
        let progress = crate::index::Progress::of_build("search index", start.fresh, || {
            Ok(self.area.listing()?.len())
        })?;
        let parts = ixdir::each_bucket(count, |b| {
            let part = self.refresh_bucket(dir_fd, &start, b);
            if let (Some(p), Ok((bucket, _))) = (&progress, &part) {
                p.add(&self.area.dir, bucket.count());
            }
            part
        });
        if let Some(p) = &progress {
            p.end(&self.area.dir);
        }
        let mut buckets = Vec::with_capacity(count);
        let mut changed = false;
        for part in parts {
            let (bucket, rewritten) = part?;
            changed |= rewritten;
            buckets.push(bucket);
        }
        let ids: Vec<u64> = buckets.iter().map(|b| b.id).collect();
        self.area.finish(start, dir_key, ids, changed);
        Ok(buckets)
    }

    /// One bucket brought up to date; whether it was rewritten.
    fn refresh_bucket(
        &self,
        dir_fd: &OwnedFd,
        start: &ixdir::Start,
        b: usize,
    ) -> Result<(Bucket, bool)> {
        let manifest = &start.manifest;
        let path = ixfiles::bucket_path(&self.area.index_dir, manifest.generation, b);
        let cached = store::open(&path)
            .filter(|bk| bk.fingerprint == self.ctx.fingerprint)
            .unwrap_or_default();
        self.refresh_from(dir_fd, start, b, cached)
    }

    /// One bucket brought up to date from what its file held.
    fn refresh_from(
        &self,
        dir_fd: &OwnedFd,
        start: &ixdir::Start,
        b: usize,
        cached: Bucket,
    ) -> Result<(Bucket, bool)> {
        let manifest = &start.manifest;
        let count = manifest.buckets.len();
        let path = ixfiles::bucket_path(&self.area.index_dir, manifest.generation, b);
        // The watcher's journal vouches for the bucket but the names it lists since.
        let vouched = start.vouched(b, cached.id);
        let changed = start.changed_in_bucket(b, count);
        if vouched && changed.is_empty() && !cached.any_racy() {
            return Ok((cached, false));
        }
        let names_cached = (start.names_known || vouched) && cached.id == manifest.buckets[b];
        // The common case, allocating only the stat data: every file's as cached.
        if names_cached && !vouched && self.unchanged(dir_fd, &cached) {
            return Ok((cached, false));
        }
        // Every entry, with its stat data: the bucket is built from the files when they
        // fail their check.
        let Some(had) = cached.entries() else {
            return self.refresh_from(dir_fd, start, b, Bucket::default());
        };
        // A listing (the directory changed, or the bucket is not the manifest's) rewrites
        // the bucket only when what it finds differs from what the bucket holds: a file
        // created or removed elsewhere in the directory leaves this bucket as it was. Its
        // names are the listing's, each file checked below as for any other read.
        let mut rewrite = false;
        let names: Vec<String> = if names_cached {
            let mut names: Vec<String> = had.iter().map(|e| e.name.clone()).collect();
            if vouched {
                names.extend(changed.iter().map(|n| n.to_string()));
                names.sort_unstable();
                names.dedup();
            }
            names
        } else {
            self.area
                .share(b, count)?
                .into_iter()
                .map(str::to_string)
                .collect()
        };
        let by_name: HashMap<&str, usize> = had
            .iter()
            .enumerate()
            .map(|(i, e)| (e.name.as_str(), i))
            .collect();
        let mut fresh: Vec<(usize, Option<Analysed>)> = Vec::new();
        let mut kept = vec![false; had.len()];
        for name in &names {
            let old = by_name.get(name.as_str()).copied();
            let key = match old {
                Some(i) if vouched && !start.changed(name) && !had[i].racy => Some(had[i].key),
                _ => self.stat(dir_fd, name),
            };
            match (old, key) {
                (_, None) => {
                    // Gone since it was listed (or never a file): not in the bucket.
                    rewrite |= old.is_some();
                }
                (Some(i), Some(key))
                    if !had[i].racy && had[i].key == key && key != StatKey::default() =>
                {
                    kept[i] = true;
                    fresh.push((i, None));
                }
                (_, Some(key)) => {
                    let read = self.read(dir_fd, name, key);
                    let same = old.is_some_and(|i| {
                        let e = &had[i];
                        *e == read.0 && !read.0.racy
                    });
                    rewrite |= !same;
                    if let Some(i) = old {
                        kept[i] = same;
                    }
                    fresh.push((usize::MAX, Some(read)));
                }
            }
        }
        rewrite |= kept.iter().filter(|k| **k).count() != had.len();
        if !rewrite {
            return Ok((cached, false));
        }
        let entries: Vec<Slot> = {
            let mut v: Vec<_> = fresh.into_iter().map(|(i, read)| read.ok_or(i)).collect();
            fn name<'a>(e: &'a std::result::Result<Analysed, usize>, had: &'a [Entry]) -> &'a str {
                match e {
                    Ok((entry, _)) => &entry.name,
                    Err(i) => &had[*i].name,
                }
            }
            v.sort_by(|x, y| name(x, &had).cmp(name(y, &had)));
            v
        };
        // The bucket's term directory with the files read again merged in (not every
        // entry's terms decoded and encoded again).
        let Some(bytes) = cached.rewrite(ixfiles::unique(), self.ctx.fingerprint, &entries) else {
            // Postings that fail their check: every file of the bucket is read again.
            return self.refresh_from(dir_fd, start, b, Bucket::default());
        };
        ixfiles::save(&path, &bytes);
        let bucket = store::decode(bytes).unwrap_or_default();
        Ok((bucket, true))
    }

    /// Whether every file of `bucket` has the stat data cached for it, none of them racy
    /// (what the loop of [`Self::refresh_from`] finds when it keeps every entry).
    fn unchanged(&self, dir_fd: &OwnedFd, bucket: &Bucket) -> bool {
        let Some(keys) = bucket.keys() else {
            return false;
        };
        let suffix: &[u8] = match self.place {
            Place::Solutions => b"",
            Place::Region(..) => b".md",
        };
        let mut file = Vec::with_capacity(128);
        keys.iter().enumerate().all(|(i, key)| {
            if bucket.racy(i) || *key == StatKey::default() {
                return false;
            }
            file.clear();
            file.extend_from_slice(bucket.name(i).as_bytes());
            file.extend_from_slice(suffix);
            file.push(0);
            std::ffi::CStr::from_bytes_with_nul(&file)
                .is_ok_and(|c| stat::stat_at(dir_fd, c).is_ok_and(|k| k == *key))
        })
    }

    /// A file's stat data; None when it is gone.
    fn stat(&self, dir_fd: &OwnedFd, name: &str) -> Option<StatKey> {
        let file = match self.place {
            Place::Solutions => name.to_string(),
            _ => format!("{name}.md"),
        };
        ixdir::stat_name(dir_fd, &file)
    }

    /// Reads and analyses one file, between two looks at its stat data.
    fn read(&self, dir_fd: &OwnedFd, name: &str, key: StatKey) -> Analysed {
        let board = self.ctx.board;
        let stamp = self.area.stamp(key.dev);
        let (kind, terms) = match self.place {
            Place::Region(region, _) => {
                let file = DocFile {
                    id: name.to_string(),
                    path: self.area.dir.join(format!("{name}.md")),
                    is_symlink: key.file_type() == FileType::Symlink,
                    is_special: !matches!(
                        key.file_type(),
                        FileType::RegularFile | FileType::Symlink
                    ),
                };
                match crate::scan::read_one(board, region, &file) {
                    Ok(doc) => (Kind::Indexed, doc_terms(&doc)),
                    Err(s) => (Kind::Skipped(s.problem), Vec::new()),
                }
            }
            Place::Solutions => {
                let path = self.area.dir.join(name);
                let text = (key.file_type() == FileType::RegularFile)
                    .then(|| {
                        crate::store::read_regular(&path, board.config.limits.max_doc_bytes).ok()
                    })
                    .flatten()
                    .filter(|t| !t.contains('\0'));
                match text {
                    Some(t) => (Kind::Indexed, solution_terms(name, &t)),
                    None => (Kind::Ignored, Vec::new()),
                }
            }
        };
        let after = self.stat(dir_fd, name);
        let (terms, len) = counted(terms);
        let entry = Entry {
            name: name.to_string(),
            key,
            racy: stamp.racy_read(&key, after),
            kind,
            len,
        };
        (entry, terms)
    }
}

/// The files under `solutions/` (paths relative to it), without dot files or anything
/// under a dot directory, not following symlinks; names that are not UTF-8 are left out
/// (`show` could not name them).
fn walk(dir: &Path) -> std::result::Result<Vec<String>, String> {
    let mut names = Vec::new();
    let walker = walkdir::WalkDir::new(dir)
        .follow_links(false)
        .min_depth(1)
        .into_iter()
        .filter_entry(|e| !e.file_name().to_string_lossy().starts_with('.'));
    for entry in walker {
        let entry = match entry {
            Ok(e) => e,
            Err(e)
                if e.io_error()
                    .is_some_and(|io| io.kind() == std::io::ErrorKind::NotFound) =>
            {
                continue;
            }
            Err(e) => return Err(e.to_string()),
        };
        if entry.file_type().is_dir() {
            continue;
        }
        let Ok(rel) = entry.path().strip_prefix(dir) else {
            continue;
        };
        if let Some(rel) = rel.to_str() {
            names.push(rel.to_string());
        }
    }
    names.sort();
    Ok(names)
}

/// Are two different words one edit apart (a character replaced, added or removed, or two
/// next to each other swapped): their optimal string alignment distance is 1? Checked in
/// one pass without the distance's table, which was a third of a warm search at 100k
/// documents (every term of a near length in every bucket's dictionary is compared).
fn one_edit_apart(a: &str, b: &str) -> bool {
    if a.is_ascii() && b.is_ascii() {
        one_edit(a.as_bytes(), b.as_bytes())
    } else {
        let a: Vec<char> = a.chars().collect();
        let b: Vec<char> = b.chars().collect();
        one_edit(&a, &b)
    }
}

/// Two equal words are not one edit apart. The tails are compared element by element
/// (words are short: a call to `memcmp` per pair cost more than the comparison).
fn one_edit<T: PartialEq>(a: &[T], b: &[T]) -> bool {
    let (long, short) = if a.len() >= b.len() { (a, b) } else { (b, a) };
    let i = long.iter().zip(short).take_while(|(x, y)| x == y).count();
    let same = |x: &[T], y: &[T]| x.len() == y.len() && x.iter().zip(y).all(|(p, q)| p == q);
    match long.len() - short.len() {
        // Replaced at i, or i and i + 1 swapped.
        0 => {
            i < long.len()
                && (same(&long[i + 1..], &short[i + 1..])
                    || (i + 1 < long.len()
                        && long[i] == short[i + 1]
                        && long[i + 1] == short[i]
                        && same(&long[i + 2..], &short[i + 2..])))
        }
        // One more character at i in the longer.
        1 => same(&long[i + 1..], &short[i..]),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    proptest::proptest! {
        /// Ties of score are broken by the paths under the board, whatever the names
        /// (one the start of another included) and wherever they are.
        #[test]
        fn ties_are_in_the_order_of_the_paths(
            names in proptest::collection::vec(("[ab.]{0,3}|a{13,17}[ab.]{0,2}", 0usize..3), 1..12)
        ) {
            let places = [
                Place::Region(Region::Tasks, false),
                Place::Region(Region::Tasks, true),
                Place::Solutions,
            ];
            let loaded: Vec<(Place, Vec<Bucket>)> = places
                .iter()
                .enumerate()
                .map(|(a, &place)| {
                    let entries: Vec<_> = names
                        .iter()
                        .filter(|(_, at)| *at == a)
                        .map(|(name, _)| (Entry {
                            name: name.clone(),
                            key: StatKey::default(),
                            racy: false,
                            kind: Kind::Indexed,
                            len: 1,
                        }, Vec::new()))
                        .collect();
                    (place, vec![store::decode(store::encode(1, 1, &entries)).unwrap()])
                })
                .collect();
            let ranked = Ranked {
                docs: Vec::new(),
                matched_terms: HashSet::new(),
                loaded: &loaded,
                rel: places.iter().map(|p| p.rel_parts()).collect(),
            };
            let docs: Vec<Scored> = loaded
                .iter()
                .enumerate()
                .flat_map(|(area, (_, b))| {
                    (0..b[0].count()).map(move |entry| Scored {
                        score: 1.0,
                        key: path_key(b[0].name(entry), places[area].rel_parts().1),
                        area: area as u32,
                        bucket: 0,
                        entry: entry as u32,
                        words: 1,
                    })
                })
                .collect();
            let path = |d: &Scored| {
                places[d.area as usize].rel(loaded[d.area as usize].1[0].name(d.entry as usize))
            };
            for x in &docs {
                for y in &docs {
                    proptest::prop_assert_eq!(
                        ranked.rel_cmp(x, y),
                        path(x).cmp(&path(y)).then(x.area.cmp(&y.area)),
                        "{:?} {:?}", path(x), path(y)
                    );
                }
            }
        }

        /// The best `k` of documents scored alike (many ties), put first, are the first
        /// `k` of them all sorted; the rest follow, every one of them.
        #[test]
        fn the_first_k_are_those_of_the_whole_order(
            docs in proptest::collection::vec(("[ab]{1,18}", 0u8..4), 0..40),
            k in 1usize..45,
        ) {
            let place = Place::Region(Region::Tasks, false);
            let entries: Vec<_> = docs
                .iter()
                .map(|(name, _)| name.clone())
                .collect::<std::collections::BTreeSet<_>>()
                .into_iter()
                .map(|name| (Entry {
                    name,
                    key: StatKey::default(),
                    racy: false,
                    kind: Kind::Indexed,
                    len: 1,
                }, Vec::new()))
                .collect();
            let scores: HashMap<&str, u8> = docs.iter().map(|(n, s)| (n.as_str(), *s)).collect();
            let loaded = vec![(place, vec![store::decode(store::encode(1, 1, &entries)).unwrap()])];
            let ranked = Ranked {
                docs: Vec::new(),
                matched_terms: HashSet::new(),
                loaded: &loaded,
                rel: vec![place.rel_parts()],
            };
            let mut all: Vec<Scored> = (0..entries.len())
                .map(|e| Scored {
                    score: scores[entries[e].0.name.as_str()] as f64 / 2.0,
                    key: [0; 2],
                    area: 0,
                    bucket: 0,
                    entry: e as u32,
                    words: 1,
                })
                .collect();
            let ord = |x: &Scored, y: &Scored| {
                y.score.total_cmp(&x.score).then_with(|| ranked.rel_cmp(x, y))
            };
            let mut whole = all.clone();
            ranked.keys(&mut whole);
            whole.sort_by(ord);
            let n = ranked.first(&mut all, k, ord);
            proptest::prop_assert_eq!(n, k.min(all.len()));
            let entry = |d: &[Scored]| d.iter().map(|d| d.entry).collect::<Vec<_>>();
            proptest::prop_assert_eq!(entry(&all[..n]), entry(&whole[..n]));
            let mut rest = entry(&all[n..]);
            rest.sort();
            let mut want = entry(&whole[n..]);
            want.sort();
            proptest::prop_assert_eq!(rest, want);
        }

        /// The one-pass check says what the distance says, for any two different words.
        #[test]
        fn one_edit_apart_is_an_osa_distance_of_one(a in "[ab\u{e9}]{0,6}", b in "[ab\u{e9}]{0,6}") {
            if a != b {
                proptest::prop_assert_eq!(
                    super::one_edit_apart(&a, &b),
                    strsim::osa_distance(&a, &b) == 1,
                    "{:?} {:?}", a, b
                );
            }
            // What the typo pass skips on: one edit of a word of three characters or more
            // leaves its first or its last byte.
            if a.chars().count() >= 3 && strsim::osa_distance(&a, &b) == 1 {
                proptest::prop_assert!(
                    a.as_bytes().first() == b.as_bytes().first()
                        || a.as_bytes().last() == b.as_bytes().last(),
                    "{:?} {:?}", a, b
                );
            }
        }
    }
}
