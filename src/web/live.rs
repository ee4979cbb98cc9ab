//! One watcher of the board per server, fanned out to every open page: the library's
//! change feed (`tavern::api::changes`, the change detection watch mode uses) runs on a
//! thread of its own, and each batch it reports becomes one `Update` on a broadcast
//! channel, which each page's event stream forwards. Pages then re-read what they show
//! (only when a path they show changed), so an update only has to say where.
//!
//! The same thread keeps the board's tasks and questions in memory (`api::cache`): built
//! once when the feed starts, then each changed document read again, once, before the
//! pages hear of the change, so that what they read then already holds it. Whatever the
//! feed may have missed makes it read the whole board again (through the read index): the
//! board gone and back, the log replaced (a checkout, a pull, a merge), a batch of more
//! than `REBUILD_AT` changes; names the feed does not report (not ids) are found by a
//! listing of a directory whose stat data changed, looked at once a second on a thread of
//! its own (so that a listing of a big directory never delays the feed's changes).
//!
//! The board directory disappearing is reported by the feed (and its coming back); a
//! board that is not there when the server starts is waited for.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, RwLock, RwLockReadGuard, RwLockWriteGuard};
use std::time::Duration;

use serde::Serialize;
use tavern::api::cache::BoardCache;
use tavern::api::changes::{Batch, BoardEvent, Feed, Kind};
use tavern::api::{Board, Result};
use tokio::sync::broadcast;

/// How often the thread looks for a board that is not there (yet).
const CHECK_ROOT: Duration = Duration::from_millis(250);

/// A batch of more changes than this is followed by reading the whole board again (in
/// parallel, through the read index) rather than file by file.
const REBUILD_AT: usize = 512;

/// How often the regions' directories are looked at for names the feed does not report.
const CHECK_NAMES: Duration = Duration::from_secs(1);

#[derive(Clone, Debug, Serialize, PartialEq)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum Update {
    /// Files changed (paths relative to the board, `/`-separated).
    Changed { paths: Vec<String> },
    /// The board directory is gone.
    Gone,
    /// The board directory is back.
    Back,
}

pub struct Live {
    tx: broadcast::Sender<Update>,
    gone: Arc<AtomicBool>,
    cache: Cache,
}

/// The board in memory, shared by the feed's thread (which writes) and the requests.
/// None until built (the board was not there when the server started).
#[derive(Clone, Default)]
pub struct Cache(Arc<RwLock<Option<BoardCache>>>);

impl Cache {
    fn write(&self) -> RwLockWriteGuard<'_, Option<BoardCache>> {
        self.0.write().unwrap_or_else(|e| e.into_inner())
    }

    fn read(&self) -> RwLockReadGuard<'_, Option<BoardCache>> {
        self.0.read().unwrap_or_else(|e| e.into_inner())
    }

    /// Builds it again from the files (through the read index).
    fn rebuild(&self, board: &Board) {
        let mut slot = self.write();
        *slot = BoardCache::build(board).ok();
    }

    /// Runs `f` on the cache of `board` as it is now: built first if there is none, or
    /// built again if board.yaml changed since.
    pub fn with<T>(&self, board: &Board, f: impl FnOnce(&BoardCache) -> Result<T>) -> Result<T> {
        {
            let slot = self.read();
            if let Some(c) = slot.as_ref().filter(|c| c.fits(board)) {
                return f(c);
            }
        }
        let mut slot = self.write();
        let cache = match slot.take() {
            Some(c) if c.fits(board) => c,
            _ => BoardCache::build(board)?,
        };
        let out = f(&cache);
        *slot = Some(cache);
        out
    }

    /// Reads these board-relative paths again (what a write made by this server changed),
    /// so that the page's next read after it holds it.
    pub fn touch<'a>(&self, board: &Board, paths: impl IntoIterator<Item = &'a str>) {
        if let Some(c) = self.write().as_mut() {
            c.apply(board, paths);
        }
    }
}

impl Live {
    /// Starts the feed's thread for the board at `root`, and returns once the feed
    /// watches (or the board is found missing): a page that connects after the server
    /// says where it is misses nothing.
    pub fn start(root: PathBuf) -> Live {
        let names_root = root.clone();
        let (tx, _) = broadcast::channel(256);
        let gone = Arc::new(AtomicBool::new(!root.is_dir()));
        let cache = Cache::default();
        let (thread_tx, thread_gone, thread_cache) = (tx.clone(), gone.clone(), cache.clone());
        let (ready_tx, ready_rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            follow(&root, &thread_tx, &thread_gone, &thread_cache, ready_tx)
        });
        let _ = ready_rx.recv();
        let (names_tx, names_cache) = (tx.clone(), cache.clone());
        std::thread::spawn(move || check_names(&names_root, &names_tx, &names_cache));
        Live { tx, gone, cache }
    }

    /// The board in memory.
    pub fn cache(&self) -> &Cache {
        &self.cache
    }

    pub fn subscribe(&self) -> broadcast::Receiver<Update> {
        self.tx.subscribe()
    }

    /// Is the board directory gone (as last reported)?
    pub fn gone(&self) -> bool {
        self.gone.load(Ordering::Relaxed)
    }
}

/// What pages are told about one batch of the feed, in order.
pub fn updates(batch: &Batch) -> Vec<Update> {
    let mut out = Vec::new();
    let mut paths: Vec<String> = Vec::new();
    let mut add = |p: &str| {
        if !paths.iter().any(|q| q == p) {
            paths.push(p.to_string());
        }
    };
    for event in &batch.board {
        match event {
            BoardEvent::Gone => out.push(Update::Gone),
            BoardEvent::Back => out.push(Update::Back),
            BoardEvent::Paused { .. } | BoardEvent::Resumed => add("control/PAUSE"),
            BoardEvent::LogAppended { .. } | BoardEvent::LogReplaced { .. } => add("log.yaml"),
            // Still live, only slower; nothing for a page to re-read.
            BoardEvent::Polling { .. } => {}
        }
    }
    for c in &batch.changes {
        if let Kind::Moved { from } = &c.kind {
            add(from);
        }
        add(&c.path);
    }
    if !paths.is_empty() {
        paths.sort();
        out.push(Update::Changed { paths });
    }
    out
}

fn follow(
    root: &Path,
    tx: &broadcast::Sender<Update>,
    gone: &AtomicBool,
    cache: &Cache,
    ready: std::sync::mpsc::Sender<()>,
) {
    let mut feed = loop {
        let opened = tavern::api::board::reopen(root)
            .and_then(|b| Feed::open(&b, Default::default()).map(|f| (b, f)));
        match opened {
            Ok((board, feed)) => {
                // After the feed started: whatever is written from now on, it reports.
                cache.rebuild(&board);
                let _ = ready.send(());
                break feed;
            }
            Err(_) => {
                let _ = ready.send(());
                if !gone.swap(true, Ordering::Relaxed) {
                    let _ = tx.send(Update::Gone);
                }
                std::thread::sleep(CHECK_ROOT);
            }
        }
    };
    // Said once the feed is in place, so that nothing a page re-reads after hearing it
    // can change unseen.
    if gone.swap(false, Ordering::Relaxed) {
        let _ = tx.send(Update::Back);
    }
    loop {
        let batch = feed.next(CHECK_NAMES);
        // board.yaml is read again each time: a request finds a cache built for another
        // configuration and builds it anew.
        let board = tavern::api::board::reopen(root).ok();
        if let (Some(board), Some(batch)) = (&board, &batch) {
            follow_batch(board, cache, batch);
        }
        for update in batch.as_ref().map(updates).unwrap_or_default() {
            match update {
                Update::Gone => gone.store(true, Ordering::Relaxed),
                Update::Back => gone.store(false, Ordering::Relaxed),
                Update::Changed { .. } => {}
            }
            let _ = tx.send(update);
        }
    }
}

/// Once a second, on a thread of its own (so that the feed's changes never wait for a
/// listing): a listing of a directory whose stat data changed finds the files the feed
/// does not name. The directory is listed outside the lock, compared under a shared lock,
/// and only the names that differ are read under the write lock.
fn check_names(root: &Path, tx: &broadcast::Sender<Update>, cache: &Cache) {
    loop {
        std::thread::sleep(CHECK_NAMES);
        let Ok(board) = tavern::api::board::reopen(root) else {
            continue;
        };
        let changed = cache.read().as_ref().map(|c| c.dirs_changed(&board));
        let Some(changed) = changed.filter(|c| !c.is_empty()) else {
            continue;
        };
        let listed = changed.list(&board);
        let listings = cache.read().as_ref().map(|c| c.compare(listed));
        let Some(listings) = listings else {
            continue;
        };
        let found = match cache.write().as_mut() {
            Some(c) => c.check_names(&board, listings),
            None => continue,
        };
        if !found.is_empty() {
            let _ = tx.send(Update::Changed { paths: found.paths });
        }
    }
}

/// Brings the cache up to date with a batch of the feed: each changed document read once,
/// or the whole board read again when the feed may have missed something.
fn follow_batch(board: &Board, cache: &Cache, batch: &Batch) {
    let rebuild = batch.changes.len() > REBUILD_AT
        || batch
            .board
            .iter()
            .any(|e| matches!(e, BoardEvent::Back | BoardEvent::LogReplaced { .. }));
    if rebuild {
        cache.rebuild(board);
        return;
    }
    let mut paths: Vec<&str> = Vec::new();
    for change in &batch.changes {
        if let Kind::Moved { from } = &change.kind {
            paths.push(from);
        }
        paths.push(&change.path);
    }
    if let Some(c) = cache.write().as_mut() {
        c.apply(board, paths);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tavern::api::changes::DocChange;

    #[test]
    fn a_batch_becomes_board_events_then_one_change_with_every_path() {
        let batch = Batch {
            changes: vec![
                DocChange {
                    region: "tasks".into(),
                    id: "t-2".into(),
                    path: "tasks/t-2.md".into(),
                    kind: Kind::Moved {
                        from: "observations/t-2.md".into(),
                    },
                },
                DocChange {
                    region: "tasks".into(),
                    id: "t-1".into(),
                    path: "tasks/t-1.md".into(),
                    kind: Kind::Changed,
                },
            ],
            board: vec![
                BoardEvent::Back,
                BoardEvent::LogAppended { entries: vec![] },
                BoardEvent::Resumed,
            ],
        };
        assert_eq!(
            updates(&batch),
            vec![
                Update::Back,
                Update::Changed {
                    paths: vec![
                        "control/PAUSE".into(),
                        "log.yaml".into(),
                        "observations/t-2.md".into(),
                        "tasks/t-1.md".into(),
                        "tasks/t-2.md".into(),
                    ]
                }
            ]
        );
        assert_eq!(updates(&Batch::default()), vec![]);
    }
}
