//! A read-only change feed for front-ends (`tavern mcp`, `tavern serve`): the change
//! detection watch mode uses (native file events as hints, a rescan when they are lost,
//! a comparison with what was last seen), reporting typed batches of what changed.
//!
//! One feed per server, however many clients it serves. A feed never writes: not the
//! watcher's state under `.state/watch/`, not the log (it logs no external edit, raises no
//! alert, starts nothing), so a `tavern watch` may run beside it. What it last saw lives
//! in memory: it starts from the board as it is when opened.
//!
//! The API is blocking: [`Feed::next`] waits up to a timeout for the next batch; async
//! front-ends run it on a blocking thread and fan its batches out.
//!
//! ```no_run
//! # fn main() -> tavern::api::Result<()> {
//! let board = tavern::api::Board::open(std::path::Path::new(".tavern"))?;
//! let mut feed = tavern::api::changes::Feed::open(&board, Default::default())?;
//! loop {
//!     if let Some(batch) = feed.next(std::time::Duration::from_secs(1)) {
//!         for c in &batch.changes {
//!             let _ = (&c.region, &c.id, &c.path, &c.kind);
//!         }
//!     }
//! }
//! # }
//! ```

use std::collections::{BTreeSet, HashMap};
use std::sync::mpsc::{Receiver, RecvTimeoutError, Sender};
use std::time::{Duration, Instant};

use serde::Serialize;

use super::areas::{self, Area};
use super::fsevents::{self, Backlog, Extra, Look, Msg, Native};
use super::snapshot::{Cursor, StatKey};
use crate::board::Board;
use crate::error::Result;
use crate::log::{self, Entry};

/// How often the feed checks that the board is still there (and, without native events,
/// how often it looks at the log).
const CHECK_EVERY: Duration = Duration::from_secs(1);
/// When the native watcher cannot start or fails: polling every this long.
const FALLBACK_POLL: Duration = Duration::from_secs(2);

/// How a feed watches.
#[derive(Clone, Debug, Default)]
pub struct Options {
    /// Rescan every DUR instead of using native file events.
    pub poll: Option<Duration>,
}

/// What happened to one document (or file under `solutions/<task>/`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case", tag = "kind")]
pub enum Kind {
    Created,
    Changed,
    Deleted,
    /// Moved here from `from` (a board-relative path), as a rename does.
    Moved {
        from: String,
    },
}

/// One change of one tracked file.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct DocChange {
    /// `tasks`, `observations`, `questions`, `solutions` or `control`.
    pub region: String,
    /// The document id; for a file under `solutions/<task>/`, the task's id; for
    /// `control/sources/<name>.md` and `control/agents/<name>.md`, the name.
    pub id: String,
    /// The board-relative path (`/` separators).
    pub path: String,
    #[serde(flatten)]
    pub kind: Kind,
}

/// Something that happened to the board as a whole.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "kebab-case", tag = "event")]
pub enum BoardEvent {
    /// The board directory (or its board.yaml) is gone: nothing is reported until it is
    /// back.
    Gone,
    /// The board is there again; the changes since it went follow in the same batch.
    Back,
    /// `control/PAUSE` appeared (`reason`: its text).
    Paused { reason: String },
    /// `control/PAUSE` is gone.
    Resumed,
    /// Entries were appended to log.yaml: those complete now, in order.
    LogAppended { entries: Vec<Entry> },
    /// log.yaml was replaced (a checkout, a merge) or cut: it is followed from its end.
    LogReplaced { last_seq: u64 },
    /// The native watcher failed (`reason`); the feed rescans every 2s from now on.
    Polling { reason: String },
}

/// What changed since the last batch.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Batch {
    /// In path order; a move is one change, at its new path.
    pub changes: Vec<DocChange>,
    pub board: Vec<BoardEvent>,
}

impl Batch {
    pub fn is_empty(&self) -> bool {
        self.changes.is_empty() && self.board.is_empty()
    }
}

/// What the feed last saw of a file: its stat, and its content hash once read.
#[derive(Clone, Copy, Debug)]
struct Seen {
    stat: StatKey,
    hash: Option<u64>,
}

pub struct Feed {
    board: Board,
    rx: Receiver<Msg>,
    tx: Sender<Msg>,
    backlog: Backlog,
    native: Option<Native>,
    /// Polling: the interval and the next rescan.
    poll: Option<(Duration, Instant)>,
    seen: HashMap<String, Seen>,
    hints: BTreeSet<String>,
    paused: Option<String>,
    /// The board directory's identity, None while it is gone.
    root_id: Option<(u64, u64)>,
    log: Cursor,
    /// Native events were asked for (not `poll`).
    native_wanted: bool,
    last_check: Instant,
    /// Board events waiting for the next batch.
    events: Vec<BoardEvent>,
}

impl Feed {
    /// Starts watching `board` as it is now (nothing is reported about what it holds).
    pub fn open(board: &Board, opts: Options) -> Result<Feed> {
        let (tx, rx) = std::sync::mpsc::channel();
        let mut feed = Feed {
            board: board.clone(),
            rx,
            tx,
            backlog: Backlog::default(),
            native: None,
            poll: None,
            seen: HashMap::new(),
            hints: BTreeSet::new(),
            paused: board.paused(),
            root_id: dir_id(board),
            log: Cursor::default(),
            native_wanted: opts.poll.is_none(),
            last_check: Instant::now(),
            events: Vec::new(),
        };
        match opts.poll {
            Some(every) => feed.poll = Some((every, Instant::now() + every)),
            None => feed.start_native(),
        }
        // Started before the first look, so nothing written meanwhile is missed.
        for t in areas::walk(&feed.board) {
            if let Some(stat) = StatKey::read(&areas::abs(&feed.board, &t.rel)) {
                feed.seen.insert(t.rel, Seen { stat, hash: None });
            }
        }
        let (offset, seq) = log::end(&feed.board)?;
        feed.log.seq = seq;
        feed.log.advance(&feed.board, offset);
        Ok(feed)
    }

    fn start_native(&mut self) {
        let extra = Extra {
            log_and_board: true,
            journal: None,
            journal_only: false,
        };
        match Native::start(&self.board, self.tx.clone(), self.backlog.clone(), extra) {
            Ok(n) => self.native = Some(n),
            Err(e) => self.fall_back(&e),
        }
    }

    fn fall_back(&mut self, e: &notify::Error) {
        self.native = None;
        self.poll = Some((FALLBACK_POLL, Instant::now() + FALLBACK_POLL));
        self.events.push(BoardEvent::Polling {
            reason: fsevents::NativeFailure::of(e).to_string(),
        });
    }

    /// Waits up to `timeout` for something to change; returns what did, or None if
    /// nothing did in that time.
    pub fn next(&mut self, timeout: Duration) -> Option<Batch> {
        let end = Instant::now() + timeout;
        loop {
            let now = Instant::now();
            let mut wake = end.min(self.last_check + CHECK_EVERY);
            if let Some((_, at)) = self.poll {
                wake = wake.min(at);
            }
            if self.events.is_empty() && self.hints.is_empty() {
                match self.rx.recv_timeout(wake.saturating_duration_since(now)) {
                    Ok(msg) => {
                        let mut msgs = vec![msg];
                        super::event_loop::collect_burst(&self.rx, &mut msgs);
                        for m in msgs {
                            self.handle(m);
                        }
                    }
                    Err(RecvTimeoutError::Timeout) => {}
                    // The feed holds a sender itself: never disconnected.
                    Err(RecvTimeoutError::Disconnected) => {}
                }
            }
            let batch = self.look();
            if !batch.is_empty() {
                return Some(batch);
            }
            if Instant::now() >= end {
                return None;
            }
        }
    }

    fn handle(&mut self, msg: Msg) {
        match msg {
            Msg::Paths(paths) => {
                self.backlog.taken();
                for p in paths {
                    self.hint(&p);
                }
            }
            Msg::Rescan => self.rescan(),
            Msg::Failed(e) => self.fall_back(&e),
            // Not the feed's: it starts nothing and takes no signals.
            Msg::Exited { .. } | Msg::Signal => {}
        }
    }

    fn hint(&mut self, path: &std::path::Path) {
        // log.yaml and board.yaml are looked at on every batch.
        if path.parent() == Some(self.board.root.as_path())
            && path
                .file_name()
                .is_some_and(|n| n == "log.yaml" || n == "board.yaml")
        {
            return;
        }
        for look in fsevents::looks(&self.board, path) {
            match look {
                Look::File(rel) => {
                    self.hints.insert(rel);
                }
                Look::Under(rel) => {
                    let dir = areas::abs(&self.board, &rel);
                    for t in areas::walk_dir(&self.board, &dir, true) {
                        self.hints.insert(t.rel);
                    }
                    self.forget_under(&rel);
                }
                Look::GoneUnder(rel) => self.forget_under(&rel),
                Look::Rewatch(dir) => {
                    if let Some(n) = &mut self.native {
                        n.rewatch(&self.board, &dir);
                    }
                }
                // Not a document anyone can name: the watcher raises the alert.
                Look::Undecodable(_) => {}
            }
        }
    }

    /// Hints every known file under `rel` (a directory that may be gone).
    fn forget_under(&mut self, rel: &str) {
        let prefix = format!("{rel}/");
        let gone: Vec<String> = self
            .seen
            .keys()
            .filter(|k| k.starts_with(&prefix))
            .cloned()
            .collect();
        self.hints.extend(gone);
    }

    /// Hints every file whose stat differs from what was seen, and every file gone.
    fn rescan(&mut self) {
        let now = areas::walk(&self.board);
        let present: std::collections::HashSet<&str> = now.iter().map(|t| t.rel.as_str()).collect();
        for t in &now {
            let stat = StatKey::read(&areas::abs(&self.board, &t.rel));
            if self.seen.get(&t.rel).map(|s| s.stat) != stat {
                self.hints.insert(t.rel.clone());
            }
        }
        let gone: Vec<String> = self
            .seen
            .keys()
            .filter(|k| !present.contains(k.as_str()))
            .cloned()
            .collect();
        self.hints.extend(gone);
    }

    /// The board's presence, the pause, the log, then every hinted file.
    fn look(&mut self) -> Batch {
        let now = Instant::now();
        let mut check_all = false;
        if now >= self.last_check + CHECK_EVERY {
            self.last_check = now;
            check_all = true;
        }
        self.check_board();
        if self.root_id.is_none() {
            // Gone: nothing to compare with until it is back.
            self.hints.clear();
            return self.take(Vec::new());
        }
        if let Some((every, at)) = self.poll
            && now >= at
        {
            self.rescan();
            self.poll = Some((every, now + every));
        }
        if self.backlog.take_overflow() {
            self.rescan();
        }
        if check_all || self.hints.contains("control/PAUSE") || self.native.is_none() {
            self.check_pause();
        }
        self.check_log();
        let mut created: Vec<(String, Seen)> = Vec::new();
        let mut changed: Vec<String> = Vec::new();
        let mut deleted: Vec<(String, Seen)> = Vec::new();
        for rel in std::mem::take(&mut self.hints) {
            let Some(t) = areas::classify(&rel) else {
                continue;
            };
            if t.area == Area::Pause {
                continue;
            }
            let path = areas::abs(&self.board, &rel);
            let before = self.seen.get(&rel).copied();
            let meta = std::fs::symlink_metadata(&path)
                .ok()
                .filter(|m| !m.is_dir());
            match (before, meta) {
                (None, None) => {}
                (Some(old), None) => {
                    self.seen.remove(&rel);
                    deleted.push((rel, old));
                }
                (before, Some(meta)) => {
                    let stat = StatKey::of(&meta);
                    if before.is_some_and(|b| b.stat == stat) {
                        continue;
                    }
                    let hash = (!stat.special)
                        .then(|| std::fs::read(&path).ok())
                        .flatten()
                        .map(|b| super::snapshot::hash(&b));
                    let seen = Seen { stat, hash };
                    self.seen.insert(rel.clone(), seen);
                    match before {
                        None => created.push((rel, seen)),
                        // Rewritten with the same content (`touch`, a save without change).
                        Some(b) if b.hash.is_some() && b.hash == hash => {}
                        Some(_) => changed.push(rel),
                    }
                }
            }
        }
        let mut changes = Vec::new();
        for (rel, seen) in created {
            // A rename keeps the inode: the file that went with it moved here.
            let from = deleted
                .iter()
                .position(|(_, old)| old.stat.ino == seen.stat.ino && old.stat.ino != 0)
                .map(|i| deleted.remove(i).0);
            let kind = match from {
                Some(from) => Kind::Moved { from },
                None => Kind::Created,
            };
            changes.extend(doc_change(&rel, kind));
        }
        for rel in changed {
            changes.extend(doc_change(&rel, Kind::Changed));
        }
        for (rel, _) in deleted {
            changes.extend(doc_change(&rel, Kind::Deleted));
        }
        changes.sort_by(|a, b| a.path.cmp(&b.path));
        self.take(changes)
    }

    fn take(&mut self, changes: Vec<DocChange>) -> Batch {
        Batch {
            changes,
            board: std::mem::take(&mut self.events),
        }
    }

    /// Gone or back: board.yaml and the directory's identity.
    fn check_board(&mut self) {
        let there = self.board.root.join("board.yaml").is_file();
        let id = if there { dir_id(&self.board) } else { None };
        match (self.root_id, id) {
            (Some(_), None) => {
                self.root_id = None;
                self.native = None;
                self.events.push(BoardEvent::Gone);
            }
            (None, Some(_)) => {
                self.root_id = id;
                self.events.push(BoardEvent::Back);
                self.back();
            }
            (Some(old), Some(new)) if old != new => {
                // Moved away and another made in its place: gone and back at once.
                self.root_id = id;
                self.events.push(BoardEvent::Gone);
                self.events.push(BoardEvent::Back);
                self.back();
            }
            _ => {}
        }
    }

    /// The board is there again: new native watches (the old ones went with the old
    /// directories), and every file compared with what was seen before it went.
    fn back(&mut self) {
        if self.native_wanted {
            self.start_native();
        }
        self.rescan();
        self.check_pause();
        // Another log, perhaps: followed from its end (a replaced log is reported by
        // check_log when the bytes before the offset differ).
    }

    fn check_pause(&mut self) {
        let now = self.board.paused();
        if now != self.paused {
            self.events.push(match &now {
                Some(reason) => BoardEvent::Paused {
                    reason: reason.clone(),
                },
                None => BoardEvent::Resumed,
            });
            self.paused = now;
        }
    }

    fn check_log(&mut self) {
        let len = std::fs::metadata(self.board.log_path()).map_or(0, |m| m.len());
        if len == self.log.offset {
            return;
        }
        if !self.log.fits(&self.board, len) {
            let (offset, seq) = log::end(&self.board).unwrap_or((len, 0));
            self.log.seq = seq;
            self.log.advance(&self.board, offset);
            self.events.push(BoardEvent::LogReplaced { last_seq: seq });
            return;
        }
        let Ok((entries, next, _)) = log::read_from(&self.board, self.log.offset) else {
            return;
        };
        if next != self.log.offset {
            self.log.advance(&self.board, next);
        }
        if let Some(last) = entries.last() {
            self.log.seq = last.seq;
            self.events.push(BoardEvent::LogAppended { entries });
        }
    }
}

/// The change of `rel`, unless its name is not a valid id (no document can be named so:
/// such a file is the watcher's alert, not a change for front-ends).
fn doc_change(rel: &str, kind: Kind) -> Option<DocChange> {
    let t = areas::classify(rel)?;
    crate::id::validate(&t.id).ok()?;
    Some(DocChange {
        region: t.region().to_string(),
        id: t.id,
        path: rel.to_string(),
        kind,
    })
}

fn dir_id(board: &Board) -> Option<(u64, u64)> {
    if !board.root.join("board.yaml").is_file() {
        return None;
    }
    std::fs::metadata(&board.root)
        .ok()
        .and_then(|m| super::lock::identity(&m))
}
