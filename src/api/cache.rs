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

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, SystemTime};

use super::columns::{BoardView, Paging};
use super::waiting::Waiting;
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

/// The documents of the board's tasks and questions, in memory.
pub struct BoardCache {
    /// board.yaml as it was read for it: another configuration reads documents differently.
    config: String,
    files: [Files; 2],
    /// Bumped by every change to what it holds.
    generation: u64,
    /// Documents read one by one since it was built (for tests and the benchmark).
    reads: u64,
}

/// The regions listed again by [`BoardCache::list_changed`]: slot, directory stat data
/// taken before the listing, names.
#[derive(Default)]
pub struct Listings(Vec<(usize, Option<DirKey>, BTreeSet<String>)>);

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
        Ok(BoardCache {
            config: config_of(board),
            files,
            generation: 0,
            reads: 0,
        })
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
                    self.files[i].by_name.insert(name.to_string(), read);
                    applied.read += 1;
                    applied.paths.push(format!("{}/{name}.md", region.dir()));
                    self.reads += 1;
                }
                None => {
                    if self.files[i].by_name.remove(name).is_some() {
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

    /// Lists each region whose directory changed since it was last listed (files created,
    /// removed or renamed there): two `stat`s when nothing changed. Takes no more than a
    /// shared borrow, so that reads go on meanwhile; [`BoardCache::check_names`] applies it.
    pub fn list_changed(&self, board: &Board) -> Listings {
        let mut out = Vec::new();
        for (i, region) in REGIONS.into_iter().enumerate() {
            let key = DirKey::of(&board.region_dir(region));
            if key.is_some() && key == self.files[i].dir {
                continue;
            }
            if let Ok(files) = scan::region_files(board, region) {
                out.push((i, key, files.into_iter().map(|f| f.id).collect()));
            }
        }
        Listings(out)
    }

    /// Reads the names listed that it did not hold, and drops those it held that are no
    /// longer there (each checked again: a listing may be older than a change applied
    /// since). The change feed reports every document it can name; this finds what it does
    /// not (a file whose name is not an id).
    pub fn check_names(&mut self, board: &Board, listings: Listings) -> Applied {
        let mut applied = Applied::default();
        for (i, key, listed) in listings.0 {
            let region = REGIONS[i];
            let f = &mut self.files[i];
            let gone: Vec<String> = f
                .by_name
                .keys()
                .filter(|n| !listed.contains(*n))
                .cloned()
                .collect();
            for name in gone {
                match read_file(board, region, &name) {
                    // Listed before it was created: kept, as read now.
                    Some(read) => {
                        f.by_name.insert(name, read);
                    }
                    None => {
                        f.by_name.remove(&name);
                        applied.dropped += 1;
                        applied.paths.push(format!("{}/{name}.md", region.dir()));
                    }
                }
            }
            for name in listed {
                if !f.by_name.contains_key(&name)
                    && let Some(read) = read_file(board, region, &name)
                {
                    applied.paths.push(format!("{}/{name}.md", region.dir()));
                    f.by_name.insert(name, read);
                    applied.read += 1;
                    self.reads += 1;
                }
            }
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
        let tasks = self.tasks_in_id_order();
        let questions: Vec<&Document> = self
            .docs(Region::Questions)
            .filter(|d| super::columns::blocks_tasks(d))
            .collect();
        super::columns::columns_in(
            board,
            &tasks,
            &questions,
            self.skipped(Region::Tasks),
            query,
            paging,
        )
    }

    /// The tasks in the order a scan returns them (by file name).
    fn tasks_in_id_order(&self) -> Vec<&Document> {
        self.docs(Region::Tasks).collect()
    }

    /// [`crate::api::waiting::waiting`], from memory (a question's decision is still read
    /// from the log, as it is in every read).
    pub fn waiting(&self, board: &Board) -> Result<Waiting> {
        let questions: Vec<Document> = self
            .docs(Region::Questions)
            .filter(|d| crate::ops::questions::may_be_open(d))
            .cloned()
            .collect();
        let open = crate::ops::questions::open_of(
            board,
            crate::scan::Scan {
                docs: questions,
                skipped: self.skipped(Region::Questions),
            },
            false,
        )?;
        super::waiting::waiting_from(board, open, |states| {
            let paging = Paging {
                per_column: usize::MAX,
                only: states,
                ..Paging::default()
            };
            Ok(self.columns_of(board, &Query::default(), &paging))
        })
    }
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
        let paging = Paging {
            per_column: 2,
            ..Paging::default()
        };
        for terms in [vec![], vec!["priority<=1".to_string()]] {
            let want =
                serde_json::to_value(crate::api::columns::columns(board, &terms, &paging).unwrap())
                    .unwrap();
            let got = serde_json::to_value(cache.columns(board, &terms, &paging).unwrap()).unwrap();
            assert_eq!(got, want, "board view, terms {terms:?}");
        }
        let want = serde_json::to_value(crate::api::waiting::waiting(board).unwrap()).unwrap();
        let got = serde_json::to_value(cache.waiting(board).unwrap()).unwrap();
        assert_eq!(got, want, "waiting queue");
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
                "questions/q-1.md",
                "log.yaml",
                "archive/tasks/t-9.md",
                "tasks/t-1.md",
            ],
        );
        assert_eq!((applied.read, applied.dropped), (4, 1), "each path once");
        assert_eq!(
            applied.paths,
            [
                "tasks/t-1.md",
                "tasks/t-3.md",
                "tasks/t-4.md",
                "tasks/t-5.md",
                "questions/q-1.md"
            ]
        );
        assert_eq!(cache.reads(), 4);
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
