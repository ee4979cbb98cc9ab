//! The board as a long-running front-end shows it (the dashboard's board and waiting
//! queue), held in memory: built once through the read index, then kept up to date one
//! changed document at a time, each read once, from what the change feed
//! ([`crate::api::changes`]) reports. Every read of the board then costs what it shows,
//! not a look at every file.
//!
//! Never trusted over the files: the front-end rebuilds it (through the read index, which
//! checks every file) whenever the feed may have missed something (the board gone and
//! back, the log replaced by a checkout or a merge, a batch too big to follow file by
//! file), and it rebuilds itself when board.yaml changed. Names the feed does not report
//! (files whose names are not ids) are found by [`BoardCache::check_names`], which lists a
//! region again when its directory changed.
//!
//! The views it answers are computed by the same code as the calls that read the files
//! ([`crate::api::columns::columns`], [`crate::api::waiting::waiting`]): the answers are
//! identical.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::time::{Duration, SystemTime};

use chrono::{DateTime, Utc};

use super::columns::{BoardView, Paging};
use super::waiting::{ReviewPage, Waiting};
use crate::board::Board;
use crate::doc::{Document, Region};
use crate::error::Result;
use crate::query::Query;
use crate::scan::{self, DocFile, Skipped};

/// The regions held: what the board view and the waiting queue read.
const REGIONS: [Region; 2] = [Region::Tasks, Region::Questions];

/// A directory changed this recently may change again within the same tick of the file
/// system's clock without its stat data changing: it is listed again until it is older.
const RACY: Duration = Duration::from_secs(3);

/// One document file as last read: the document, or why it was skipped.
type Read = std::result::Result<Document, Skipped>;

/// What a directory's stat data were when it was last listed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct DirKey {
    ino: u64,
    mtime: Option<SystemTime>,
    ctime: (i64, i64),
}

impl DirKey {
    fn of(dir: &std::path::Path) -> Option<DirKey> {
        use std::os::unix::fs::MetadataExt;
        let m = std::fs::metadata(dir).ok()?;
        Some(DirKey {
            ino: m.ino(),
            mtime: m.modified().ok(),
            ctime: (m.ctime(), m.ctime_nsec()),
        })
    }

    /// Changed within the racy window of now.
    fn racy(&self) -> bool {
        self.mtime.is_none_or(|t| {
            SystemTime::now()
                .duration_since(t)
                .map_or(true, |age| age < RACY)
        })
    }
}

/// One region's files by name (the file name less `.md`), and its directory when listed.
#[derive(Default)]
struct Files {
    by_name: BTreeMap<String, Read>,
    dir: Option<DirKey>,
}

/// A task's place in the board view's order, best first: priority, then oldest (as
/// [`crate::time::stamp_key`] orders time stamps), then id, then file name (a read's
/// order among tasks that share an id).
type Rank = (i64, bool, Option<DateTime<Utc>>, String, String, String);

fn rank(d: &Document) -> Rank {
    let (parsed, at, raw) = crate::time::stamp_key(d.created_at());
    (
        d.priority(),
        parsed,
        at,
        raw.to_string(),
        d.id().to_string(),
        d.file_id.clone(),
    )
}

/// The tasks in the board view's order, kept up to date one document at a time, so that
/// the unfiltered view (what a page shows first, and reads again after every change) costs
/// the cards it shows, not a sort of the board.
#[derive(Default)]
struct Order {
    /// By status as written (`""` for none): the tasks, best first.
    by_status: HashMap<String, BTreeSet<Rank>>,
    /// Each task's status and rank, by file name (to move or drop it).
    of_file: HashMap<String, (String, Rank)>,
    /// The file names of the tasks with each id (a read gives an id the last one's status).
    files_of_id: HashMap<String, BTreeSet<String>>,
}

impl Order {
    fn remove(&mut self, name: &str) {
        let Some((status, rank)) = self.of_file.remove(name) else {
            return;
        };
        if let Some(set) = self.by_status.get_mut(&status) {
            set.remove(&rank);
            if set.is_empty() {
                self.by_status.remove(&status);
            }
        }
        let id = &rank.4;
        if let Some(files) = self.files_of_id.get_mut(id) {
            files.remove(name);
            if files.is_empty() {
                self.files_of_id.remove(id);
            }
        }
    }

    fn insert(&mut self, name: &str, d: &Document) {
        let status = d.status().unwrap_or("").to_string();
        let rank = rank(d);
        self.files_of_id
            .entry(rank.4.clone())
            .or_default()
            .insert(name.to_string());
        self.by_status
            .entry(status.clone())
            .or_default()
            .insert(rank.clone());
        self.of_file.insert(name.to_string(), (status, rank));
    }
}

/// The documents of the board's tasks and questions, in memory.
pub struct BoardCache {
    /// board.yaml as it was read for it: another configuration reads documents differently.
    config: String,
    files: [Files; 2],
    /// The tasks' order (of `files[0]`).
    order: Order,
    /// Bumped by every change to what it holds.
    generation: u64,
    /// Documents read one by one since it was built (for tests and the benchmark).
    reads: u64,
}

/// The regions whose directories changed since they were last listed
/// ([`BoardCache::dirs_changed`]): slot, and the directory's stat data now.
pub struct Changed(Vec<(usize, Option<DirKey>)>);

impl Changed {
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Lists those directories (no lock needed: it reads only the file system); the stat
    /// data were taken before, so that a change made meanwhile is listed again next time.
    pub fn list(self, board: &Board) -> Listed {
        Listed(
            self.0
                .into_iter()
                .filter_map(|(i, key)| {
                    let files = scan::region_files(board, REGIONS[i]).ok()?;
                    Some((i, key, files.into_iter().map(|f| f.id).collect()))
                })
                .collect(),
        )
    }
}

/// The names found by [`Changed::list`], by region slot, sorted.
pub struct Listed(Vec<(usize, Option<DirKey>, Vec<String>)>);

/// What a listing says against what the cache held when it was compared
/// ([`BoardCache::compare`]): slot, directory stat data, names it held that were not
/// listed, names listed that it did not hold.
#[derive(Default)]
pub struct Listings(Vec<Difference>);

/// One region's part of [`Listings`].
type Difference = (usize, Option<DirKey>, Vec<String>, Vec<String>);

impl Listings {
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// What applying a batch of changes did.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Applied {
    /// Documents read again (one read each).
    pub read: usize,
    /// Documents dropped (deleted or moved away).
    pub dropped: usize,
    /// The board-relative paths of both, in order.
    pub paths: Vec<String>,
}

impl Applied {
    /// Nothing it holds changed.
    pub fn is_empty(&self) -> bool {
        self.paths.is_empty()
    }
}

fn slot(region: Region) -> Option<usize> {
    REGIONS.iter().position(|r| *r == region)
}

/// The region and file name of a board-relative path, when it is a document the cache
/// holds (`tasks/ID.md`, `questions/ID.md`; not the archive).
fn held(rel: &str) -> Option<(Region, &str)> {
    let (dir, file) = rel.split_once('/')?;
    let region = REGIONS.into_iter().find(|r| r.dir() == dir)?;
    let name = file.strip_suffix(".md")?;
    if name.is_empty() || name.contains('/') || name.starts_with('.') {
        return None;
    }
    Some((region, name))
}

fn config_of(board: &Board) -> String {
    format!("{:?}", board.config)
}

impl BoardCache {
    /// Reads the board's tasks and questions through the read index. A front-end that
    /// follows changes opens its feed first, so that nothing written meanwhile is missed.
    pub fn build(board: &Board) -> Result<BoardCache> {
        let mut files: [Files; 2] = Default::default();
        for (i, region) in REGIONS.into_iter().enumerate() {
            let dir = DirKey::of(&board.region_dir(region));
            let part = scan::scan(board, &[region])?;
            let f = &mut files[i];
            f.dir = dir.filter(|d| !d.racy());
            for d in part.docs {
                f.by_name.insert(d.file_id.clone(), Ok(d));
            }
            for s in part.skipped {
                let name = s
                    .path
                    .rsplit('/')
                    .next()
                    .and_then(|f| f.strip_suffix(".md"))
                    .unwrap_or(&s.path)
                    .to_string();
                f.by_name.insert(name, Err(s));
            }
        }
        let mut order = Order::default();
        for (name, read) in &files[0].by_name {
            if let Ok(d) = read {
                order.insert(name, d);
            }
        }
        Ok(BoardCache {
            config: config_of(board),
            files,
            order,
            generation: 0,
            reads: 0,
        })
    }

    /// Holds `read` as the file `name` of region slot `i`.
    fn put(&mut self, i: usize, name: &str, read: Read) {
        if i == 0 {
            self.order.remove(name);
            if let Ok(d) = &read {
                self.order.insert(name, d);
            }
        }
        self.files[i].by_name.insert(name.to_string(), read);
    }

    /// Drops the file `name` of region slot `i`; whether it held it.
    fn take(&mut self, i: usize, name: &str) -> bool {
        if i == 0 {
            self.order.remove(name);
        }
        self.files[i].by_name.remove(name).is_some()
    }

    /// Was it built with this board's configuration? If not, build it again.
    pub fn fits(&self, board: &Board) -> bool {
        self.config == config_of(board)
    }

    /// Bumped by every change to what it holds.
    pub fn generation(&self) -> u64 {
        self.generation
    }

    /// Documents read one at a time since it was built.
    pub fn reads(&self) -> u64 {
        self.reads
    }

    /// How many document files it holds.
    pub fn len(&self) -> usize {
        self.files.iter().map(|f| f.by_name.len()).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Reads again each of these board-relative paths it holds (`tasks/ID.md`,
    /// `questions/ID.md`), once each: a path whose file is gone is dropped. Other paths
    /// are not its (the archive, solutions, control, the log).
    pub fn apply<'a>(
        &mut self,
        board: &Board,
        paths: impl IntoIterator<Item = &'a str>,
    ) -> Applied {
        let wanted: BTreeSet<(Region, &str)> = paths.into_iter().filter_map(held).collect();
        let mut applied = Applied::default();
        for (region, name) in wanted {
            let Some(i) = slot(region) else { continue };
            match read_file(board, region, name) {
                Some(read) => {
                    self.put(i, name, read);
                    applied.read += 1;
                    applied.paths.push(format!("{}/{name}.md", region.dir()));
                    self.reads += 1;
                }
                None => {
                    if self.take(i, name) {
                        applied.dropped += 1;
                        applied.paths.push(format!("{}/{name}.md", region.dir()));
                    }
                }
            }
        }
        if !applied.is_empty() {
            self.generation += 1;
        }
        applied
    }

    /// The regions whose directory changed since it was last listed (files created,
    /// removed or renamed there): two `stat`s.
    pub fn dirs_changed(&self, board: &Board) -> Changed {
        Changed(
            REGIONS
                .into_iter()
                .enumerate()
                .filter_map(|(i, region)| {
                    let key = DirKey::of(&board.region_dir(region));
                    (key.is_none() || key != self.files[i].dir).then_some((i, key))
                })
                .collect(),
        )
    }

    /// The names a listing and this cache disagree on (one walk of both, in order). Takes
    /// a shared borrow only, so that reads go on meanwhile.
    pub fn compare(&self, listed: Listed) -> Listings {
        let mut out = Vec::new();
        for (i, key, mut names) in listed.0 {
            names.sort();
            names.dedup();
            let held = &self.files[i].by_name;
            let (mut gone, mut new) = (Vec::new(), Vec::new());
            let mut listed = names.iter().peekable();
            for name in held.keys() {
                while let Some(l) = listed.next_if(|l| *l < name) {
                    new.push(l.clone());
                }
                if listed.next_if(|l| *l == name).is_none() {
                    gone.push(name.clone());
                }
            }
            new.extend(listed.cloned());
            out.push((i, key, gone, new));
        }
        Listings(out)
    }

    /// Lists each region whose directory changed since it was last listed, and compares
    /// (what [`BoardCache::check_names`] applies): two `stat`s when nothing changed.
    pub fn list_changed(&self, board: &Board) -> Listings {
        self.compare(self.dirs_changed(board).list(board))
    }

    /// Reads the names listed that it did not hold, and drops those it held that are no
    /// longer there (each checked again: a listing may be older than a change applied
    /// since). The change feed reports every document it can name; this finds what it does
    /// not (a file whose name is not an id).
    pub fn check_names(&mut self, board: &Board, listings: Listings) -> Applied {
        let mut applied = Applied::default();
        for (i, key, gone, new) in listings.0 {
            let region = REGIONS[i];
            for name in gone {
                match read_file(board, region, &name) {
                    // Listed before it was created: kept, as read now.
                    Some(read) => self.put(i, &name, read),
                    None => {
                        if self.take(i, &name) {
                            applied.dropped += 1;
                            applied.paths.push(format!("{}/{name}.md", region.dir()));
                        }
                    }
                }
            }
            for name in new {
                if !self.files[i].by_name.contains_key(&name)
                    && let Some(read) = read_file(board, region, &name)
                {
                    applied.paths.push(format!("{}/{name}.md", region.dir()));
                    self.put(i, &name, read);
                    applied.read += 1;
                    self.reads += 1;
                }
            }
            let f = &mut self.files[i];
            f.dir = key.filter(|d| !d.racy());
        }
        if !applied.is_empty() {
            self.generation += 1;
        }
        applied
    }

    fn docs(&self, region: Region) -> impl Iterator<Item = &Document> {
        slot(region)
            .map(|i| &self.files[i].by_name)
            .into_iter()
            .flat_map(|m| m.values())
            .filter_map(|r| r.as_ref().ok())
    }

    /// The files of `region` it skipped, in path order (as a scan reports them).
    fn skipped(&self, region: Region) -> Vec<Skipped> {
        let mut out: Vec<Skipped> = slot(region)
            .map(|i| &self.files[i].by_name)
            .into_iter()
            .flat_map(|m| m.values())
            .filter_map(|r| r.as_ref().err().cloned())
            .collect();
        out.sort_by(|a, b| a.path.cmp(&b.path));
        out
    }

    /// [`crate::api::columns::columns`], from memory.
    pub fn columns(&self, board: &Board, terms: &[String], paging: &Paging) -> Result<BoardView> {
        let query = Query::parse(terms)?;
        Ok(self.columns_of(board, &query, paging))
    }

    pub(crate) fn columns_of(&self, board: &Board, query: &Query, paging: &Paging) -> BoardView {
        let questions: Vec<&Document> = self
            .docs(Region::Questions)
            .filter(|d| super::columns::blocks_tasks(d))
            .collect();
        if query.is_empty() {
            return self.unfiltered(board, &questions, paging);
        }
        let tasks = self.tasks_in_id_order();
        super::columns::columns_in(
            board,
            &tasks,
            &questions,
            self.skipped(Region::Tasks),
            query,
            paging,
        )
    }

    /// The board view of every task, from the order kept: each column's page taken from
    /// its sorted tasks, and only the cards shown looked at.
    fn unfiltered(&self, board: &Board, questions: &[&Document], paging: &Paging) -> BoardView {
        let workflow = &board.config.workflow;
        let tasks = &self.files[0].by_name;
        let doc = |rank: &Rank| tasks.get(&rank.5).and_then(|r| r.as_ref().ok());
        let status_of = |id: &str| -> Option<&str> {
            let name = self.order.files_of_id.get(id)?.last()?;
            Some(doc_status(tasks.get(name)?.as_ref().ok()?))
        };
        let others: Vec<&BTreeSet<Rank>> = self
            .order
            .by_status
            .iter()
            .filter(|(s, set)| !workflow.is_state(s) && !set.is_empty())
            .map(|(_, set)| set)
            .collect();
        let sorted = super::columns::Sorted {
            has_other: !others.is_empty(),
            tasks: self.docs(Region::Tasks).count(),
            skipped: self.skipped(Region::Tasks),
            questions,
            status_of: &status_of,
        };
        super::columns::assemble(board, sorted, paging, |state, offset, per| {
            if state == super::columns::OTHER_STATE && !workflow.is_state(state) {
                let mut all: Vec<&Rank> = others.iter().flat_map(|s| s.iter()).collect();
                all.sort();
                let offset = offset.min(all.len());
                let page = all[offset..]
                    .iter()
                    .take(per)
                    .filter_map(|r| doc(r))
                    .collect();
                return (all.len(), offset, page);
            }
            let Some(set) = self.order.by_status.get(state) else {
                return (0, 0, Vec::new());
            };
            let offset = offset.min(set.len());
            let page = set.iter().skip(offset).take(per).filter_map(doc).collect();
            (set.len(), offset, page)
        })
    }

    /// The tasks in the order a scan returns them (by file name).
    fn tasks_in_id_order(&self) -> Vec<&Document> {
        self.docs(Region::Tasks).collect()
    }

    /// How many things [`BoardCache::waiting`] lists, without building them: the open
    /// questions and permission requests, and the tasks in the review states.
    pub fn waiting_count(&self, board: &Board) -> Result<usize> {
        let in_review: usize = super::waiting::review_states(board)
            .iter()
            .filter_map(|s| self.order.by_status.get(s))
            .map(BTreeSet::len)
            .sum();
        Ok(self.open_questions(board)?.docs.len() + in_review)
    }

    /// The questions that still wait, each with its decision as the log says it.
    fn open_questions(&self, board: &Board) -> Result<crate::scan::Scan> {
        let questions: Vec<Document> = self
            .docs(Region::Questions)
            .filter(|d| crate::ops::questions::may_be_open(d))
            .cloned()
            .collect();
        crate::ops::questions::open_of(
            board,
            crate::scan::Scan {
                docs: questions,
                skipped: self.skipped(Region::Questions),
            },
            false,
        )
    }

    /// [`crate::api::waiting::waiting_page`], from memory (a question's decision is still
    /// read from the log, as it is in every read). The tasks in review come from the order
    /// kept per status; only the page's are made cards.
    pub fn waiting(&self, board: &Board, page: ReviewPage) -> Result<Waiting> {
        let open = self.open_questions(board)?;
        super::waiting::waiting_from(board, open, |states| {
            let tasks = &self.files[0].by_name;
            // The board's order (the review states in the workflow's order, each best
            // first), then oldest update first.
            let mut docs: Vec<&Document> = states
                .iter()
                .filter_map(|s| self.order.by_status.get(s))
                .flat_map(|set| set.iter())
                .filter_map(|rank| tasks.get(&rank.5).and_then(|r| r.as_ref().ok()))
                .collect();
            super::waiting::oldest_update_first(&mut docs, |d| d.text("updated_at"));
            let range = page.range(docs.len());
            let offset = range.start;
            let questions: Vec<&Document> = self
                .docs(Region::Questions)
                .filter(|d| super::columns::blocks_tasks(d))
                .collect();
            let status_of = |id: &str| -> Option<&str> {
                let name = self.order.files_of_id.get(id)?.last()?;
                Some(doc_status(tasks.get(name)?.as_ref().ok()?))
            };
            Ok(super::waiting::InReview {
                total: docs.len(),
                offset,
                cards: super::columns::cards_of(board, &docs[range], &questions, &status_of),
                skipped: self.skipped(Region::Tasks),
            })
        })
    }
}

fn doc_status(d: &Document) -> &str {
    d.status().unwrap_or("")
}

/// One document file read as a scan reads it; None when there is no file by that name.
fn read_file(board: &Board, region: Region, name: &str) -> Option<Read> {
    let path = board.region_dir(region).join(format!("{name}.md"));
    let file_type = match std::fs::symlink_metadata(&path) {
        Ok(m) => Some(m.file_type()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return None,
        Err(_) => None,
    };
    let file = DocFile {
        id: name.to_string(),
        path,
        is_symlink: file_type.is_some_and(|t| t.is_symlink()),
        is_special: file_type.is_some_and(|t| !t.is_file() && !t.is_symlink()),
    };
    Some(scan::read_one(board, region, &file))
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

    fn task(id: &str, status: &str, priority: u8, extra: &str) -> String {
        format!(
            "---\nid: {id}\ntitle: Task {id}\nstatus: {status}\npriority: {priority}\n{extra}created_at: 2026-11-20T10:00:0{priority}Z\ncreated_by: planner\nrev: 1\n---\n\nBody.\n"
        )
    }

    fn write(board: &Board, rel: &str, text: &str) {
        std::fs::write(board.root.join(rel), text).unwrap();
    }

    /// The cache's views beside the same views read from the files.
    fn same(board: &Board, cache: &BoardCache) {
        let mut pagings = vec![Paging {
            per_column: 2,
            ..Paging::default()
        }];
        // Every column paged one card at a time, past its end.
        let mut states = board.config.workflow.states.clone();
        states.push(crate::api::columns::OTHER_STATE.to_string());
        for state in states {
            for offset in 0..4 {
                pagings.push(Paging {
                    per_column: 1,
                    offsets: [(state.clone(), offset)].into(),
                    only: vec![state.clone()],
                });
            }
        }
        for paging in &pagings {
            for terms in [vec![], vec!["priority<=1".to_string()]] {
                let want = serde_json::to_value(
                    crate::api::columns::columns(board, &terms, paging).unwrap(),
                )
                .unwrap();
                let got =
                    serde_json::to_value(cache.columns(board, &terms, paging).unwrap()).unwrap();
                assert_eq!(got, want, "board view, terms {terms:?}, {paging:?}");
            }
        }
        let all = crate::api::waiting::waiting(board).unwrap();
        let total = all.review_total;
        assert_eq!(all.review.len(), total);
        let mut pages = vec![ReviewPage::ALL];
        for offset in 0..=total + 1 {
            for limit in [1, 2] {
                pages.push(ReviewPage { offset, limit });
            }
        }
        for page in pages {
            let want =
                serde_json::to_value(crate::api::waiting::waiting_page(board, page).unwrap())
                    .unwrap();
            let got = serde_json::to_value(cache.waiting(board, page).unwrap()).unwrap();
            assert_eq!(got, want, "waiting queue, {page:?}");
            // A page is a part of the whole list, in its order; the count is the whole's.
            let range = page.range(total);
            assert_eq!(
                want["review"],
                serde_json::to_value(&all.review[range.clone()]).unwrap()
            );
            assert_eq!(want["review_total"], total);
            assert_eq!(want["review_offset"], range.start);
        }
        assert_eq!(
            cache.waiting_count(board).unwrap(),
            crate::api::waiting::waiting(board).unwrap().count(),
            "waiting count"
        );
    }

    #[test]
    fn the_tasks_in_review_are_paged_oldest_update_first() {
        let (_dir, board) = board();
        // Updates at seconds and milliseconds, a tie, one never updated, other states.
        let updated = [
            ("r-1", "2026-11-21T10:00:05.120Z"),
            ("r-2", "2026-11-21T10:00:05Z"),
            ("r-3", ""),
            ("r-4", "2026-11-21T09:00:00Z"),
            ("r-5", "2026-11-21T10:00:05Z"),
            ("r-6", "2026-11-21T11:00:00+02:00"),
        ];
        for (i, (id, at)) in updated.iter().enumerate() {
            let extra = if at.is_empty() {
                String::new()
            } else {
                format!("updated_at: {at}\n")
            };
            write(
                &board,
                &format!("tasks/{id}.md"),
                &task(id, "review", (i % 3) as u8, &extra),
            );
        }
        write(&board, "tasks/p-1.md", &task("p-1", "pending", 0, ""));
        let cache = BoardCache::build(&board).unwrap();
        same(&board, &cache);
        let ids = |w: &Waiting| -> Vec<String> { w.review.iter().map(|c| c.id.clone()).collect() };
        let all = cache.waiting(&board, ReviewPage::ALL).unwrap();
        assert_eq!(ids(&all), ["r-3", "r-4", "r-6", "r-2", "r-5", "r-1"]);
        let second = cache
            .waiting(
                &board,
                ReviewPage {
                    offset: 2,
                    limit: 2,
                },
            )
            .unwrap();
        assert_eq!(ids(&second), ["r-6", "r-2"]);
        assert_eq!((second.review_total, second.review_offset), (6, 2));
        assert_eq!(second.count(), 6);
        assert_eq!(cache.waiting_count(&board).unwrap(), 6);
    }

    #[test]
    fn changes_applied_one_by_one_give_what_a_full_read_gives() {
        let (_dir, board) = board();
        write(&board, "tasks/t-1.md", &task("t-1", "pending", 1, ""));
        write(
            &board,
            "tasks/t-2.md",
            &task("t-2", "review", 0, "depends_on: [t-1]\n"),
        );
        write(
            &board,
            "tasks/t-3.md",
            &task("t-3", "pending", 2, "depends_on: [t-9]\n"),
        );
        write(&board, "tasks/Bad Name.md", "not a document");
        // States the workflow does not name, the same id in two files, ties in priority.
        write(&board, "tasks/t-7.md", &task("t-7", "limbo", 1, ""));
        write(&board, "tasks/t-8.md", &task("t-8", "parked", 1, ""));
        write(&board, "tasks/t-9.md", &task("t-8", "limbo", 0, ""));
        write(
            &board,
            "tasks/t-10.md",
            &task("t-10", "pending", 1, "depends_on: [t-8, t-1]\n"),
        );
        write(
            &board,
            "questions/q-1.md",
            "---\nid: q-1\ntitle: Which one?\nstatus: open\nblocks: [t-3]\noptions: [a, b]\ncreated_at: 2026-11-20T10:00:00Z\nrev: 1\n---\n",
        );
        let mut cache = BoardCache::build(&board).unwrap();
        same(&board, &cache);

        // An edit, a new task, a broken one, a deletion, a question answered by hand.
        write(&board, "tasks/t-1.md", &task("t-1", "done", 1, ""));
        write(
            &board,
            "tasks/t-4.md",
            &task("t-4", "claimed", 0, "claimed_by: coder\n"),
        );
        write(&board, "tasks/t-5.md", "---\nid: [unclosed\n---\n");
        write(&board, "tasks/t-9.md", &task("t-8", "done", 1, ""));
        write(&board, "tasks/t-7.md", &task("t-7", "pending", 1, ""));
        std::fs::remove_file(board.root.join("tasks/t-3.md")).unwrap();
        write(
            &board,
            "questions/q-1.md",
            "---\nid: q-1\ntitle: Which one?\nstatus: answered\nanswer: a\nblocks: [t-3]\ncreated_at: 2026-11-20T10:00:00Z\nrev: 2\n---\n",
        );
        let before = cache.generation();
        let applied = cache.apply(
            &board,
            [
                "tasks/t-1.md",
                "tasks/t-4.md",
                "tasks/t-5.md",
                "tasks/t-3.md",
                "tasks/t-9.md",
                "tasks/t-7.md",
                "questions/q-1.md",
                "log.yaml",
                "archive/tasks/t-9.md",
                "tasks/t-1.md",
            ],
        );
        assert_eq!((applied.read, applied.dropped), (6, 1), "each path once");
        assert_eq!(
            applied.paths,
            [
                "tasks/t-1.md",
                "tasks/t-3.md",
                "tasks/t-4.md",
                "tasks/t-5.md",
                "tasks/t-7.md",
                "tasks/t-9.md",
                "questions/q-1.md"
            ]
        );
        assert_eq!(cache.reads(), 6);
        assert!(cache.generation() > before);
        same(&board, &cache);

        // A name the feed would not report: found when the directory changed.
        write(&board, "tasks/Another Bad.md", "x");
        let listed = cache.list_changed(&board);
        assert_eq!(
            cache.check_names(&board, listed).paths,
            ["tasks/Another Bad.md"]
        );
        same(&board, &cache);
        // Listed again only while the directory's last change is recent; never read again.
        let listed = cache.list_changed(&board);
        assert!(cache.check_names(&board, listed).is_empty());
        // A listing older than a change: what is there now counts.
        let listed = cache.list_changed(&board);
        write(&board, "tasks/t-6.md", &task("t-6", "pending", 3, ""));
        cache.apply(&board, ["tasks/t-6.md"]);
        assert!(cache.check_names(&board, listed).is_empty());
        same(&board, &cache);
        // A name the feed would not report, deleted; listed between two others.
        std::fs::remove_file(board.root.join("tasks/Another Bad.md")).unwrap();
        write(&board, "tasks/A First.md", "y");
        write(&board, "tasks/zzz last.md", "z");
        let listed = cache.list_changed(&board);
        assert_eq!(
            cache.check_names(&board, listed).paths,
            [
                "tasks/Another Bad.md",
                "tasks/A First.md",
                "tasks/zzz last.md"
            ]
        );
        same(&board, &cache);
    }

    #[test]
    fn another_configuration_needs_a_new_cache() {
        let (_dir, board) = board();
        let cache = BoardCache::build(&board).unwrap();
        assert!(cache.fits(&board));
        let mut other = board.clone();
        other.config.limits.max_doc_bytes = 10;
        assert!(!cache.fits(&other));
    }
}
