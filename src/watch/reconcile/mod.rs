//! Turning "something happened to this file" into what happened, exactly once.
//!
//! The watcher treats file-system events as hints. For each hinted path it takes the lock
//! tavern's own writes of that file take (DESIGN §5), so that no tavern write is half done,
//! reads the new entries of log.yaml, and compares the file with its shadow (what the
//! watcher last handled):
//!
//! - changes tavern made are explained by their log entries: replaying their diffs on the
//!   shadow must give the file on disk, and the sources see the entries' events
//!   (`transition:review` by coder-1, …);
//! - whatever the log does not explain was changed outside tavern (an agent's `cat >`, an
//!   editor, `git checkout`): it is validated and logged as an `external-edit` with its
//!   diff, and an invalid one raises an `alert` (the file is never reverted).
//!
//! A change is handled once its content is in the shadow, so a restart handles what changed
//! while the watcher was down, and nothing twice.
//!
//! Each module here has one job: [`hints`] finds what to look at (stats against the
//! snapshot, new log entries), [`current`] reads a file as it is and says whether it is a
//! valid one of its kind, [`explain`] replays tavern's logged writes on the shadow,
//! [`written`], [`deleted`] and [`misplaced`] turn one file's change into changes and log
//! entries.

mod current;
mod deleted;
mod explain;
mod hints;
mod misplaced;
#[cfg(test)]
mod tests;
mod written;

use std::collections::{BTreeSet, HashMap, HashSet};
use std::time::Duration;

use chrono::{DateTime, Utc};

use super::areas::{self, Area, Tracked};
use super::snapshot::{self, Cursor, Snapshot, StatKey};
use super::sources::On;
use crate::board::Board;
use crate::doc::Document;
use crate::error::Result;
use crate::log::{self, Entry};
use crate::store;
use current::{Current, big_stand_in, read_current};
use written::Written;

/// The actor of the entries watch mode writes itself.
pub const WATCHER: &str = "tavern-watch";

/// A file that fails validation (or is empty) this soon after it was written may still be in
/// the middle of a write (`cat > file` truncates first): it is looked at again before it is
/// reported.
const SETTLE: Duration = Duration::from_millis(300);

/// One noticed change of one file, as the sources see it.
#[derive(Clone, Debug)]
pub struct Change {
    pub tracked: Tracked,
    pub events: Vec<On>,
    /// Who made it: the actor of tavern's log entry; None when made outside tavern.
    pub actor: Option<String>,
    /// The log entry that records it.
    pub seq: u64,
    /// When it was made, as the log says.
    pub at: DateTime<Utc>,
    /// The file now (or, once deleted, as it last was), for `when:`.
    pub doc: Option<Document>,
}

/// Something the watcher logged on its own account, for its output.
#[derive(Clone, Debug)]
pub struct Notice {
    pub entry: Entry,
}

/// What looking at one path came to.
#[derive(Debug)]
pub enum Outcome {
    Handled(Vec<Change>),
    /// Invalid and just written: look again after this long.
    Deferred(Duration),
}

pub struct Reconciler {
    pub board: Board,
    pub snapshot: Snapshot,
    pub cursor: Cursor,
    /// Log entries read but not yet matched with their file, by document path.
    pending: HashMap<String, Vec<Entry>>,
    /// The entries this process appended, by (seq, origin), skipped when read back.
    own: snapshot::Own,
    /// What the `own` state file holds, if known: it is rewritten only when `own` differs.
    own_saved: Option<snapshot::Own>,
    /// Paths to look at: from file-system events, rescans and new log entries.
    pub hints: BTreeSet<String>,
    /// Paths deferred once already (not deferred again).
    deferred: HashSet<String>,
    /// Shadows of this batch, written by [`Reconciler::commit`] once the activations the
    /// batch queued are saved: a crash in between handles the batch again, never loses it.
    staged: HashMap<String, Option<Vec<u8>>>,
    /// What the watcher logged itself since the caller last took them.
    pub notices: Vec<Notice>,
    /// A source file changed: the caller reloads the sources.
    pub sources_changed: bool,
    /// Paths that changed while no watcher ran (hinted at start), until handled.
    catching_up: HashSet<String>,
    /// The activations a previous watcher logged as started, by cause seq: (source,
    /// document) pairs. Read at start: one killed after starting an activation but before saving
    /// that its change was handled left the change to be seen again, and it must not start
    /// twice. Entries read later are this process's own (or, after log.yaml was replaced,
    /// about a log whose seqs mean something else).
    pub started_before: HashMap<u64, Vec<(String, String)>>,
    /// Until the first catch-up with the log is done.
    starting: bool,
}

impl Reconciler {
    /// Opens the watcher's state. On the very first start the board is taken as it is:
    /// every file becomes the baseline and the log is read from its end.
    pub fn open(board: Board) -> Result<Reconciler> {
        let snapshot = Snapshot::load(&board);
        let first = !snapshot.existed;
        let cursor = match Cursor::load(&board) {
            Some(c) if !first => c,
            // A first start follows the log from its end.
            _ if first => {
                let (offset, seq) = log::end(&board)?;
                let mut cursor = Cursor {
                    seq,
                    ..Cursor::default()
                };
                cursor.advance(&board, offset);
                cursor
            }
            // A snapshot without a cursor: read the whole log; the entries already
            // handled are known by their revs.
            _ => Cursor::default(),
        };
        let (own, exact) = snapshot::load_own(&board, cursor.seq);
        let own_saved = exact.then(|| own.clone());
        let mut r = Reconciler {
            board,
            snapshot,
            cursor,
            pending: HashMap::new(),
            own,
            own_saved,
            hints: BTreeSet::new(),
            deferred: HashSet::new(),
            staged: HashMap::new(),
            notices: Vec::new(),
            sources_changed: false,
            catching_up: HashSet::new(),
            started_before: HashMap::new(),
            starting: true,
        };
        if first {
            r.baseline()?;
        }
        Ok(r)
    }

    /// Records every tracked file as it is, without reporting anything: each file read
    /// once, on several threads.
    fn baseline(&mut self) -> Result<()> {
        self.snapshot.begin_baseline(&self.board);
        let max = self.max_bytes();
        let mut files = Vec::new();
        areas::each(&self.board, &mut |t, path| {
            files.push((t.rel, path.to_path_buf()))
        });
        let read = |path: &std::path::Path| match read_current(path, max) {
            Current::File(stat, bytes) => Some((stat, Some(bytes))),
            Current::Big(stat) => Some((stat, Some(big_stand_in(stat)))),
            Current::Special(stat, _) => Some((stat, None)),
            Current::Missing => None,
        };
        self.snapshot.add_baseline_all(&self.board, &files, &read)?;
        self.snapshot.end_baseline(&self.board)?;
        self.cursor.save(&self.board)
    }

    fn remember(&mut self, rel: &str, stat: StatKey, bytes: &[u8]) {
        self.snapshot.set(rel, stat, snapshot::hash(bytes));
    }

    fn max_bytes(&self) -> u64 {
        self.board.config.limits.max_doc_bytes
    }

    /// Saves the snapshot and the log cursor, once every handled change is recorded
    /// (otherwise the cursor alone waits: entries past it must stay to be read again).
    pub fn save(&mut self) -> Result<()> {
        if !self.staged.is_empty() {
            return Ok(());
        }
        self.snapshot.save(&self.board)?;
        self.cursor.save(&self.board)
    }

    /// Is every handled change in the saved state (none staged, waiting for its save)?
    pub fn all_saved(&self) -> bool {
        self.staged.is_empty()
    }

    /// Marks everything hinted now as changed while no watcher ran, for the log's notes.
    pub fn mark_catching_up(&mut self) {
        self.starting = false;
        self.catching_up = self.hints.iter().cloned().collect();
    }

    fn shadow(&self, rel: &str) -> Option<Vec<u8>> {
        match self.staged.get(rel) {
            Some(staged) => staged.clone(),
            None => self.snapshot.read_shadow(&self.board, rel),
        }
    }

    fn stage(&mut self, rel: &str, content: Option<&[u8]>) {
        self.staged
            .insert(rel.to_string(), content.map(<[u8]>::to_vec));
    }

    /// Records the changes handled since the last commit (their shadows, in one frame).
    /// Returns what could not be recorded, for warnings: it is tried again at the next
    /// commit, and handled again after a restart, never lost.
    pub fn commit(&mut self) -> Vec<String> {
        let mut problems = Vec::new();
        if let Err(e) = self.snapshot.commit(&self.board, &self.staged) {
            problems.push(format!(
                "cannot record {} handled change{}: {e}",
                self.staged.len(),
                if self.staged.len() == 1 { "" } else { "s" }
            ));
            return problems;
        }
        self.staged.clear();
        // Only once the shadows are written: an unwritten one's change is handled again,
        // and its external edit must then be recognised as already logged, not as own.
        // Only when they changed: most batches neither append nor read back an own entry.
        if self.own_saved.as_ref() != Some(&self.own) {
            match snapshot::save_own(&self.board, &self.own) {
                Ok(()) => self.own_saved = Some(self.own.clone()),
                Err(e) => {
                    problems.push(format!("cannot record which log entries are its own: {e}"))
                }
            }
        }
        problems
    }

    /// Appends an entry watch mode writes on its own account (activations, alerts).
    pub fn log_own(&mut self, entry: Entry) -> Result<Entry> {
        self.append(entry)
    }

    fn append(&mut self, entry: Entry) -> Result<Entry> {
        let entry = log::append(&self.board, entry)?;
        self.own.insert((entry.seq, entry.origin.clone()));
        Ok(entry)
    }

    /// Logs an alert about `rel` and keeps it for the watcher's output.
    pub fn alert(&mut self, rel: &str, actor: &str, note: String) -> Result<Entry> {
        let entry = self.append(Entry {
            at: crate::time::stamp_millis(crate::time::now()),
            actor: actor.to_string(),
            op: "alert".into(),
            doc: rel.to_string(),
            note: Some(note),
            ..Entry::default()
        })?;
        self.notices.push(Notice {
            entry: entry.clone(),
        });
        Ok(entry)
    }

    /// Looks at one path and reports what changed.
    pub fn reconcile(&mut self, rel: &str) -> Result<Outcome> {
        let Some(t) = areas::classify(rel) else {
            self.pending.remove(rel);
            return Ok(Outcome::Handled(Vec::new()));
        };
        if !t.named_by_id() {
            self.pending.remove(rel);
            return self.bad_name(&t);
        }
        let _lock = match t.lock_name() {
            Some(name) => Some(store::lock(&self.board, &name)?),
            None => None,
        };
        // Under the lock the file is what tavern's last write left (or what someone else
        // made of it): read once.
        let mut current = read_current(&areas::abs(&self.board, rel), self.max_bytes());
        if let Some(name) = t.lock_name() {
            // A write killed before its log entry: finish and log it now, then read again.
            if store::write::recover_held(&self.board, &[name])? {
                current = read_current(&areas::abs(&self.board, rel), self.max_bytes());
            }
        }
        if _lock.is_some() {
            // Entries of tavern writes that ended while this path waited for its lock.
            // (Files tavern never writes are explained by no entry: the batch's read of
            // the log is enough for them.)
            self.catch_up()?;
        }
        let before = self.shadow(rel);
        let entries = self.pending.remove(rel).unwrap_or_default();
        let (stat, bytes, big) = match current {
            Current::Missing => {
                let outcome = self.deleted(&t, before, entries)?;
                return self.settled(&t, outcome);
            }
            Current::Special(stat, why) => {
                let outcome = self.special(&t, stat, before, &why)?;
                return self.settled(&t, outcome);
            }
            Current::Big(stat) => (stat, big_stand_in(stat), true),
            Current::File(stat, bytes) => (stat, bytes, false),
        };
        // The shadow may be gone (a cleaned .state/) while the snapshot still knows the
        // content by its hash: then nothing changed either.
        let unchanged = match &before {
            Some(b) => b == &bytes,
            None => self
                .snapshot
                .get(rel)
                .is_some_and(|k| k.hash == snapshot::hash(&bytes)),
        };
        let outcome = if unchanged {
            if before.is_none() {
                self.stage(rel, Some(&bytes));
            }
            self.remember(rel, stat, &bytes);
            Outcome::Handled(Vec::new())
        } else {
            let written = Written {
                bytes: &bytes,
                stat,
                big,
            };
            match self.written(&t, before, entries.clone(), written)? {
                Outcome::Deferred(d) => {
                    self.pending.insert(rel.to_string(), entries);
                    Outcome::Deferred(d)
                }
                handled => handled,
            }
        };
        self.settled(&t, outcome)
    }

    fn settled(&mut self, t: &Tracked, outcome: Outcome) -> Result<Outcome> {
        if matches!(outcome, Outcome::Handled(_)) {
            self.deferred.remove(&t.rel);
            // Looked at: a later change is one made while the watcher runs (a file hinted
            // at start and found unchanged, as a racy one is, must not keep the mark).
            self.catching_up.remove(&t.rel);
            if t.area == Area::Source {
                self.sources_changed = true;
            }
        }
        Ok(outcome)
    }
}
