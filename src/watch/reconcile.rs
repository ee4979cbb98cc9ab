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

use std::collections::{BTreeSet, HashMap, HashSet};
use std::time::{Duration, SystemTime};

use chrono::{DateTime, Utc};

use super::areas::{self, Area, Tracked};
use super::patch;
use super::snapshot::{self, Cursor, Known, Snapshot, StatKey};
use super::sources::On;
use crate::board::Board;
use crate::doc::{Document, Region};
use crate::error::{Error, Result};
use crate::log::{self, Entry};
use crate::store;

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

/// The file as it is on disk now.
enum Current {
    Missing,
    /// A symlink, FIFO, socket, device or directory where a file should be (never opened),
    /// or a file that cannot be read: why.
    Special(StatKey, String),
    /// Over the size limit: tracked by its stat alone, never read.
    Big(StatKey),
    File(StatKey, Vec<u8>),
}

pub struct Reconciler {
    pub board: Board,
    pub snapshot: Snapshot,
    pub cursor: Cursor,
    /// Log entries read but not yet matched with their file, by document path.
    pending: HashMap<String, Vec<Entry>>,
    /// The entries this process appended, by (seq, origin), skipped when read back.
    own: snapshot::Own,
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

/// After log.yaml was replaced, entries written up to this long before the last one read
/// are read again: times are taken before the log lock, so they are nearly in order only.
const REPLACED_SLACK_MS: i64 = 5_000;

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
        let own = snapshot::load_own(&board, cursor.seq);
        let mut r = Reconciler {
            board,
            snapshot,
            cursor,
            pending: HashMap::new(),
            own,
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

    /// Records every tracked file as it is, without reporting anything.
    fn baseline(&mut self) -> Result<()> {
        for t in areas::walk(&self.board) {
            let path = areas::abs(&self.board, &t.rel);
            match read_current(&path, self.max_bytes()) {
                Current::File(stat, bytes) => {
                    snapshot::write_baseline_shadow(&self.board, &t.rel, &bytes)?;
                    self.remember(&t.rel, stat, &bytes);
                }
                Current::Big(stat) => {
                    let stand_in = big_stand_in(stat);
                    snapshot::write_baseline_shadow(&self.board, &t.rel, &stand_in)?;
                    self.remember(&t.rel, stat, &stand_in);
                }
                Current::Special(stat, _) => self.remember(&t.rel, stat, b""),
                Current::Missing => {}
            }
        }
        self.snapshot.existed = true;
        self.save()
    }

    fn remember(&mut self, rel: &str, stat: StatKey, bytes: &[u8]) {
        let known = Known {
            stat,
            hash: snapshot::hash(bytes),
        };
        self.snapshot.files.insert(rel.to_string(), known);
    }

    fn max_bytes(&self) -> u64 {
        self.board.config.limits.max_doc_bytes
    }

    /// Saves the snapshot and the log cursor.
    pub fn save(&self) -> Result<()> {
        self.snapshot.save(&self.board)?;
        // Saved only when nothing is staged: every handled deletion is out of it now.
        snapshot::clear_deletions(&self.board);
        self.cursor.save(&self.board)
    }

    /// Marks everything hinted now as changed while no watcher ran, for the log's notes.
    pub fn mark_catching_up(&mut self) {
        self.starting = false;
        self.catching_up = self.hints.iter().cloned().collect();
    }

    /// Hints every file whose stat differs from the snapshot, and every file that is gone.
    pub fn rescan(&mut self) {
        let now: Vec<Tracked> = areas::walk(&self.board);
        let present: HashSet<&str> = now.iter().map(|t| t.rel.as_str()).collect();
        for t in &now {
            let stat = StatKey::read(&areas::abs(&self.board, &t.rel));
            if self.snapshot.files.get(&t.rel).map(|k| k.stat) != stat {
                self.hints.insert(t.rel.clone());
            }
        }
        let gone: Vec<String> = self
            .snapshot
            .files
            .keys()
            .filter(|rel| !present.contains(rel.as_str()))
            .cloned()
            .collect();
        self.hints.extend(gone);
    }

    /// Hints every tracked file under a directory (one that appeared, or was moved in).
    pub fn rescan_dir(&mut self, rel_dir: &str) {
        let dir = areas::abs(&self.board, rel_dir);
        for t in areas::walk_dir(&self.board, &dir, true) {
            self.hints.insert(t.rel);
        }
        self.forget_dir(rel_dir);
    }

    /// Hints every tracked file under a directory that is gone.
    pub fn forget_dir(&mut self, rel_dir: &str) {
        let prefix = format!("{rel_dir}/");
        let gone: Vec<String> = self
            .snapshot
            .files
            .keys()
            .filter(|rel| rel.starts_with(&prefix))
            .cloned()
            .collect();
        self.hints.extend(gone);
    }

    /// Reads the entries appended to log.yaml since the cursor; each one about a tracked
    /// file becomes a hint for it.
    pub fn catch_up(&mut self) -> Result<()> {
        let path = self.board.log_path();
        let len = std::fs::metadata(&path).map_or(0, |m| m.len());
        if len == self.cursor.offset {
            // Nothing appended. (A log replaced by one of the very same length is noticed
            // at the next append.)
            return Ok(());
        }
        // log.yaml replaced (a checkout, a stash, a merge): the offset means nothing there.
        // What was appended since is what was written after the cursor's last entry; a
        // few seconds more are read again, which is harmless: an entry about a file the
        // watcher already saw as it is explains nothing new.
        let mut replaced_after = None;
        if !self.cursor.fits(&self.board, len) {
            let after = self.cursor.last_at_ms - REPLACED_SLACK_MS;
            let from = DateTime::from_timestamp_millis(after)
                .map(|t| log::offset_near_time(&self.board, t))
                .transpose()?;
            self.cursor.offset = from.unwrap_or(0);
            self.cursor.seq = 0;
            // Seqs of the old log's entries, now reused by others.
            self.own.clear();
            self.started_before.clear();
            replaced_after = Some(after);
        }
        let (entries, next, _) = log::read_from(&self.board, self.cursor.offset)?;
        if next != self.cursor.offset {
            self.cursor.advance(&self.board, next);
        }
        for e in entries {
            self.cursor.seq = self.cursor.seq.max(e.seq);
            let at_ms = crate::time::parse_time(&e.at, Utc::now()).map(|t| t.timestamp_millis());
            if let Some(at) = at_ms {
                self.cursor.last_at_ms = self.cursor.last_at_ms.max(at);
            }
            if let Some(after) = replaced_after
                && at_ms.is_none_or(|at| at < after)
            {
                continue;
            }
            // (An entry saved before origins existed has none.)
            let own = self.own.remove(&(e.seq, e.origin.clone()))
                || self.own.remove(&(e.seq, String::new()));
            if !own
                && self.starting
                && e.op == "activation"
                // `lost`: a start the log did not see, whose command ran all the same.
                && matches!(e.to.as_deref(), Some("started" | "lost"))
                && let Some(cause) = e.cause
            {
                self.started_before
                    .entry(cause)
                    .or_default()
                    .push((e.actor.clone(), e.doc.clone()));
            }
            if own || matches!(e.op.as_str(), "activation" | "alert") {
                continue;
            }
            if areas::classify(&e.doc).is_none() {
                continue;
            }
            self.hints.insert(e.doc.clone());
            self.pending.entry(e.doc.clone()).or_default().push(e);
        }
        Ok(())
    }

    fn shadow(&self, rel: &str) -> Option<Vec<u8>> {
        match self.staged.get(rel) {
            Some(staged) => staged.clone(),
            None => snapshot::read_shadow(&self.board, rel),
        }
    }

    fn stage(&mut self, rel: &str, content: Option<&[u8]>) {
        self.staged
            .insert(rel.to_string(), content.map(<[u8]>::to_vec));
    }

    /// Writes the shadows of the changes handled since the last commit.
    /// Returns what could not be recorded, for warnings.
    pub fn commit(&mut self) -> Vec<String> {
        let mut problems = Vec::new();
        for (rel, content) in std::mem::take(&mut self.staged) {
            if let Err(e) = snapshot::write_shadow(&self.board, &rel, content.as_deref()) {
                problems.push(format!("{rel}: cannot record it as handled: {e}"));
            }
        }
        // Only once every shadow is written: an unwritten one's change is handled again,
        // and its external edit must then be recognised as already logged, not as own.
        if problems.is_empty()
            && let Err(e) = snapshot::save_own(&self.board, &self.own)
        {
            problems.push(format!("cannot record which log entries are its own: {e}"));
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
        if before.is_none()
            && !self.staged.contains_key(rel)
            && snapshot::deletion_handled(&self.board, rel)
        {
            // Its deletion was handled; the snapshot, saved before, still lists it.
            self.snapshot.files.remove(rel);
        }
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
                .files
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
            if t.area == Area::Source {
                self.sources_changed = true;
            }
        }
        Ok(outcome)
    }

    /// The file is gone.
    fn deleted(
        &mut self,
        t: &Tracked,
        before: Option<Vec<u8>>,
        entries: Vec<Entry>,
    ) -> Result<Outcome> {
        let known = self.snapshot.files.remove(&t.rel).is_some();
        let by_tavern = entries
            .iter()
            .rev()
            .find(|e| matches!(e.op.as_str(), "move" | "delete" | "resume"));
        if let Some(e) = by_tavern {
            let doc = before.as_deref().and_then(|b| self.parse(t, b));
            let change = self.change_from_entry(t, e, vec![On::Deleted], doc);
            self.stage(&t.rel, None);
            return Ok(Outcome::Handled(vec![change]));
        }
        // Deleted by someone else, perhaps after tavern wrote it since the watcher last
        // looked: those writes are changes too, and the last content is what they made.
        let writes = tavern_writes(t, before.as_deref(), &entries);
        let base = before
            .as_deref()
            .map(String::from_utf8_lossy)
            .unwrap_or_default();
        let last: Option<Vec<u8>> = match replay(&base, &writes) {
            Replay::Exact(text) if !writes.is_empty() => Some(text.into_bytes()),
            _ => before.clone(),
        };
        if last.is_none() && !known {
            // Appeared and vanished between two looks: nothing to report.
            self.stage(&t.rel, None);
            return Ok(Outcome::Handled(Vec::new()));
        }
        let doc = last.as_deref().and_then(|b| self.parse(t, b));
        let mut changes = Vec::new();
        for (i, e) in writes.iter().enumerate() {
            let mut events = events_of(e);
            if i == 0 && before.is_none() && !known && events[0] == On::Changed {
                events[0] = On::Created;
            } else if events[0] == On::Created && (before.is_some() || known) {
                events[0] = On::Changed;
            }
            changes.push(self.change_from_entry(t, e, events, doc.clone()));
        }
        let diff = last.as_deref().and_then(|b| text_diff(b, b""));
        let what = match &last {
            Some(_) if diff.is_none() => "deleted outside tavern (binary: no diff)",
            Some(_) => "deleted outside tavern",
            None => "deleted outside tavern (its last content was not kept: no diff)",
        };
        let note = self.note(&t.rel, what);
        let entry = self.log_external(t, &entries, diff, note, None)?;
        changes.push(Change {
            tracked: t.clone(),
            events: vec![On::Deleted],
            actor: None,
            seq: entry.seq,
            at: Utc::now(),
            doc,
        });
        self.stage(&t.rel, None);
        Ok(Outcome::Handled(changes))
    }

    /// A file whose name (or, under `solutions/`, whose task directory's name) is not a
    /// valid id: no document can be named so, and its name must never reach a command
    /// (`-rf`, `a;touch x`). An alert each time it appears or changes; never a change for
    /// the sources, never an external edit.
    fn bad_name(&mut self, t: &Tracked) -> Result<Outcome> {
        let path = areas::abs(&self.board, &t.rel);
        let stat = std::fs::symlink_metadata(&path)
            .ok()
            .filter(|m| !m.is_dir())
            .map(|m| StatKey::of(&m));
        if self.shadow(&t.rel).is_some() {
            // Taken as it was at the first start: never tracked from now on.
            self.stage(&t.rel, None);
        }
        let Some(stat) = stat else {
            self.snapshot.files.remove(&t.rel);
            return Ok(Outcome::Handled(Vec::new()));
        };
        if self.snapshot.files.get(&t.rel).map(|k| k.stat) != Some(stat) {
            let what = match t.area {
                Area::Solution => format!(
                    "'{}' is not a valid task id ([a-z0-9][a-z0-9._-]{{0,63}})",
                    t.id
                ),
                _ => "file name is not a valid id ([a-z0-9][a-z0-9._-]{0,63}.md)".to_string(),
            };
            self.alert(
                &t.rel,
                WATCHER,
                format!(
                    "{}: {what}; not tracked and no source started (rename it)",
                    t.rel
                ),
            )?;
        }
        self.snapshot.files.insert(
            t.rel.clone(),
            Known {
                stat,
                hash: snapshot::hash(b""),
            },
        );
        Ok(Outcome::Handled(Vec::new()))
    }

    /// A symlink or other special file where a document should be: reported once.
    fn special(
        &mut self,
        t: &Tracked,
        stat: StatKey,
        before: Option<Vec<u8>>,
        why: &str,
    ) -> Result<Outcome> {
        if self.snapshot.files.get(&t.rel).map(|k| k.stat) != Some(stat) {
            self.alert(&t.rel, WATCHER, format!("{}: {why}", t.rel))?;
        }
        if before.is_some() {
            self.stage(&t.rel, None);
        }
        self.snapshot.files.insert(
            t.rel.clone(),
            Known {
                stat,
                hash: snapshot::hash(b""),
            },
        );
        Ok(Outcome::Handled(Vec::new()))
    }

    /// The file was written: by tavern, by someone else, or both.
    fn written(
        &mut self,
        t: &Tracked,
        before: Option<Vec<u8>>,
        entries: Vec<Entry>,
        now: Written<'_>,
    ) -> Result<Outcome> {
        let Written { bytes, stat, big } = now;
        let tavern = tavern_writes(t, before.as_deref(), &entries);
        let doc = if big { None } else { self.parse(t, bytes) };

        // What is left to explain after tavern's own writes, if anything.
        let before_text = before.as_deref().map(String::from_utf8_lossy);
        let base = before_text.as_deref().unwrap_or("");
        // Known to the snapshot but without a shadow (`.state/` was cleaned): what the
        // watcher last saw is not known, so neither is what changed.
        let lost = before.is_none() && self.snapshot.files.contains_key(&t.rel);
        // `tavern sync` merged both sides' changes: its entry explains the document at the
        // rev it names, whatever its diff (made on the merging clone) gives here.
        let merged = !big
            && t.has_rev()
            && tavern
                .iter()
                .any(|e| e.op == "sync-merge" && e.rev == Some(rev_of(bytes)));
        let extra = if merged || (lost && !tavern.is_empty()) {
            // Trust the log.
            Extra::Nothing
        } else if tavern.is_empty() {
            Extra::After(base.to_string())
        } else {
            match replay(base, &tavern) {
                Replay::Exact(expected) if expected.as_bytes() == bytes => Extra::Nothing,
                Replay::Exact(expected) => Extra::After(expected),
                // A truncated diff cannot be replayed: trust the log.
                Replay::Truncated => Extra::Nothing,
                // Someone wrote the file before tavern's writes (a file made by hand, then
                // edited with tavern before the watcher looked): taking tavern's diffs back
                // from the file gives what they left.
                Replay::Mismatch => match std::str::from_utf8(bytes)
                    .ok()
                    .and_then(|now| unreplay(now, &tavern))
                {
                    Some(left) => Extra::Before(left),
                    None => Extra::Around,
                },
            }
        };

        let mut changes: Vec<Change> = Vec::new();
        if let Extra::Before(left) = &extra {
            // Logged (and offered) first: it happened first.
            let created = before.is_none();
            let diff = text_diff(base.as_bytes(), left.as_bytes());
            let what = if created {
                "created outside tavern"
            } else {
                "changed outside tavern"
            };
            let note = self.note(
                &t.rel,
                &format!("{what} before tavern's write (seq {})", tavern[0].seq),
            );
            let left_doc = self.parse(t, left.as_bytes());
            let rev = logged_rev(t, left_doc.as_ref());
            let entry = self.log_external(t, &entries, diff, note, rev)?;
            let valid = self.validate(t, left.as_bytes());
            let events = external_events(created, Some(base.as_bytes()), left_doc.as_ref());
            if let Some(c) = self.external_change(t, valid, events, entry.seq, left_doc)? {
                changes.push(c);
            }
        }
        // Whether the file existed before tavern's first write.
        let existed = before.is_some() || lost || matches!(extra, Extra::Before(_));
        for (i, e) in tavern.iter().enumerate() {
            let mut events = events_of(e);
            // A file tavern made counts as created only if the watcher did not know it.
            if events[0] == On::Created && existed {
                events[0] = On::Changed;
            } else if i == 0 && !existed && events[0] == On::Changed {
                events[0] = On::Created;
            }
            changes.push(self.change_from_entry(t, e, events, doc.clone()));
        }

        let (external_from, around) = match extra {
            Extra::After(from) => (Some(from), false),
            Extra::Around => (Some(base.to_string()), true),
            Extra::Nothing | Extra::Before(_) => (None, false),
        };
        if let Some(from) = external_from {
            let valid = if big {
                match t.area {
                    Area::Solution => Ok(()),
                    _ => Err(format!(
                        "is over the size limit of {} bytes (limits.max_doc_bytes in board.yaml)",
                        self.max_bytes()
                    )),
                }
            } else {
                self.validate(t, bytes)
            };
            // Invalid, or empty (`cat >`, `echo >` create or truncate the file before they
            // write it), just now: looked at again in a moment, once, before it is logged.
            let unsettled = valid.is_err() || (bytes.is_empty() && !big);
            if unsettled && !self.deferred.contains(&t.rel) && recently_written(stat) {
                self.deferred.insert(t.rel.clone());
                return Ok(Outcome::Deferred(SETTLE));
            }
            let created = before.is_none() && !lost && tavern.is_empty();
            let what = match (created, around) {
                (true, _) => "created outside tavern",
                (false, false) => "changed outside tavern",
                (false, true) => {
                    "changed outside tavern around tavern's own writes (the diff holds both)"
                }
            };
            let diff = if big || lost {
                None
            } else {
                text_diff(from.as_bytes(), bytes)
            };
            let what = if big {
                format!("{what} (over the size limit: no diff)")
            } else if lost {
                format!("{what} (its last content was not kept: no diff)")
            } else if diff.is_none() {
                format!("{what} (binary: no diff)")
            } else {
                what.to_string()
            };
            let note = self.note(&t.rel, &what);
            let rev = logged_rev(t, doc.as_ref());
            let entry = self.log_external(t, &entries, diff, note, rev)?;
            let from = (!lost).then_some(from.as_bytes());
            let events = external_events(created, from, doc.as_ref());
            if let Some(c) = self.external_change(t, valid, events, entry.seq, doc.clone())? {
                changes.push(c);
            }
        }
        self.stage(&t.rel, Some(bytes));
        self.remember(&t.rel, stat, bytes);
        Ok(Outcome::Handled(changes))
    }

    /// The change a logged external edit is, for the sources; or, when the file is not
    /// valid, an alert and nothing for them.
    fn external_change(
        &mut self,
        t: &Tracked,
        valid: std::result::Result<(), String>,
        events: Vec<On>,
        seq: u64,
        doc: Option<Document>,
    ) -> Result<Option<Change>> {
        if let Err(problem) = valid {
            self.alert(
                &t.rel,
                WATCHER,
                format!(
                    "{}: {problem} (edited outside tavern; not reverted, no source started)",
                    t.rel
                ),
            )?;
            return Ok(None);
        }
        Ok(Some(Change {
            tracked: t.clone(),
            events,
            actor: None,
            seq,
            at: Utc::now(),
            doc,
        }))
    }

    /// "changed outside tavern", and when it was noticed at start, say so.
    fn note(&mut self, rel: &str, what: &str) -> String {
        if self.catching_up.remove(rel) {
            format!("{what} (noticed when tavern watch started)")
        } else {
            what.to_string()
        }
    }

    /// Logs an external edit, unless a previous run already logged this very change (it
    /// stopped before recording it as handled).
    fn log_external(
        &mut self,
        t: &Tracked,
        entries: &[Entry],
        diff: Option<String>,
        note: String,
        rev: Option<u64>,
    ) -> Result<Entry> {
        if let Some(e) = entries
            .iter()
            .rev()
            .find(|e| e.op == "external-edit" && e.diff == diff && e.rev == rev)
        {
            return Ok(e.clone());
        }
        let entry = self.append(Entry {
            at: crate::time::stamp_millis(crate::time::now()),
            actor: WATCHER.into(),
            op: "external-edit".into(),
            doc: t.rel.clone(),
            rev,
            note: Some(note),
            diff,
            ..Entry::default()
        })?;
        self.notices.push(Notice {
            entry: entry.clone(),
        });
        Ok(entry)
    }

    fn change_from_entry(
        &self,
        t: &Tracked,
        e: &Entry,
        events: Vec<On>,
        doc: Option<Document>,
    ) -> Change {
        Change {
            tracked: t.clone(),
            events,
            actor: Some(e.actor.clone()),
            seq: e.seq,
            at: crate::time::parse_time(&e.at, Utc::now()).unwrap_or_else(Utc::now),
            doc,
        }
    }

    /// The file as a document for `when:` queries (None if it is not readable as one).
    fn parse(&self, t: &Tracked, bytes: &[u8]) -> Option<Document> {
        let text = std::str::from_utf8(bytes).ok()?.to_string();
        let limits = self.board.config.yaml_limits();
        match t.area {
            Area::Doc(region) => Document::parse(region, &t.id, text, limits).ok(),
            Area::Pause => None,
            _ => Some(Document::loose(Region::Tasks, &t.id, text, limits)),
        }
    }

    /// Why the file is not a valid one of its kind, if it is not.
    fn validate(&self, t: &Tracked, bytes: &[u8]) -> std::result::Result<(), String> {
        let limit = self.board.config.limits.max_doc_bytes;
        if matches!(t.area, Area::Solution | Area::Pause) {
            return Ok(());
        }
        if bytes.len() as u64 > limit {
            return Err(format!(
                "is {} bytes, over the limit of {limit} (limits.max_doc_bytes in board.yaml)",
                bytes.len()
            ));
        }
        let text = std::str::from_utf8(bytes).map_err(|e| {
            format!(
                "is not valid UTF-8 (invalid byte at offset {})",
                e.valid_up_to()
            )
        })?;
        crate::id::validate(&t.id).map_err(|_| {
            "file name is not a valid id ([a-z0-9][a-z0-9._-]{0,63}.md)".to_string()
        })?;
        let path = areas::abs(&self.board, &t.rel);
        let problem = |e: Error| match e {
            Error::InvalidDoc { problem, .. } => problem,
            other => other.to_string(),
        };
        match t.area {
            Area::Doc(region) => {
                let doc = store::parse_doc(&self.board, region, &t.id, text.to_string(), &path)
                    .map_err(problem)?;
                if region == Region::Tasks {
                    let workflow = &self.board.config.workflow;
                    match doc.status() {
                        Some(s) if workflow.is_state(s) => {}
                        Some(s) => {
                            return Err(format!(
                                "status '{s}' is not a state of the workflow ({})",
                                workflow.states.join(", ")
                            ));
                        }
                        None => return Err("has no status".into()),
                    }
                }
                Ok(())
            }
            Area::Agent => Document::parse(
                Region::Tasks,
                &t.id,
                text.to_string(),
                self.board.config.yaml_limits(),
            )
            .map(|_| ())
            .map_err(|e| e.to_string()),
            Area::Source => super::sources::parse(&self.board, &t.id, text)
                .map(|_| ())
                .map_err(|problems| problems.join("; ")),
            Area::Solution | Area::Pause => Ok(()),
        }
    }
}

/// The events a tavern log entry stands for.
fn events_of(e: &Entry) -> Vec<On> {
    let mut events = vec![match e.op.as_str() {
        "create" | "pause" => On::Created,
        "move" | "delete" | "resume" => On::Deleted,
        _ => On::Changed,
    }];
    if let Some(to) = &e.to
        && !matches!(
            e.op.as_str(),
            "external-edit" | "create" | "pause" | "resume" | "sync-merge" | "sync-conflict"
        )
    {
        events.push(On::Transition(to.clone()));
    }
    events
}

/// tavern's writes of a file since the watcher last saw it (`before`): its log entries,
/// without external edits and without those the watcher's copy already holds.
fn tavern_writes<'a>(t: &Tracked, before: Option<&[u8]>, entries: &'a [Entry]) -> Vec<&'a Entry> {
    let before_rev = before.map_or(0, rev_of);
    entries
        .iter()
        .filter(|e| e.op != "external-edit")
        .filter(|e| !t.has_rev() || e.rev.is_none_or(|r| r > before_rev))
        .collect()
}

/// The rev an external edit's entry records: the document's own, for files that have one.
fn logged_rev(t: &Tracked, doc: Option<&Document>) -> Option<u64> {
    doc.filter(|_| t.has_rev())
        .map(Document::rev)
        .filter(|r| *r > 0)
}

/// What a file holds beyond what tavern's logged writes explain.
enum Extra {
    Nothing,
    /// Someone wrote it after tavern's writes (or with no tavern write at all): the content
    /// tavern's writes made, which that edit started from.
    After(String),
    /// Someone wrote it before tavern's writes: what they left, which tavern's first write
    /// started from.
    Before(String),
    /// Edits before and after that cannot be told apart: one edit from the last content
    /// the watcher saw.
    Around,
}

/// The events of a change made outside tavern: created, or changed (and a transition when
/// the status moved).
/// `from` is None when what the file held before is not known: then no transition.
fn external_events(created: bool, from: Option<&[u8]>, doc: Option<&Document>) -> Vec<On> {
    if created {
        return vec![On::Created];
    }
    let mut events = vec![On::Changed];
    if let Some(from) = from
        && let Some(status) = doc.and_then(Document::status)
        && Some(status) != status_of(from).as_deref()
    {
        events.push(On::Transition(status.to_string()));
    }
    events
}

enum Replay {
    Exact(String),
    /// A diff does not apply to what the watcher last saw: something else changed it.
    Mismatch,
    /// A diff was cut to its size limit and cannot be replayed.
    Truncated,
}

/// What the file was before tavern's logged writes made `now` of it; None if `now` is not
/// what they made (or a diff was truncated).
fn unreplay(now: &str, entries: &[&Entry]) -> Option<String> {
    let mut text = now.to_string();
    for e in entries.iter().rev() {
        let Some(diff) = &e.diff else { continue };
        if diff.contains("… diff truncated:") {
            return None;
        }
        text = patch::revert(&text, diff)?;
    }
    Some(text)
}

/// What tavern's logged writes make of `base`.
fn replay(base: &str, entries: &[&Entry]) -> Replay {
    let mut text = base.to_string();
    for e in entries {
        let Some(diff) = &e.diff else { continue };
        if diff.contains("… diff truncated:") {
            return Replay::Truncated;
        }
        match patch::apply(&text, diff) {
            Some(next) => text = next,
            None => return Replay::Mismatch,
        }
    }
    Replay::Exact(text)
}

/// What `written` looks at: the file's content (or stand-in) and stat.
struct Written<'a> {
    bytes: &'a [u8],
    stat: StatKey,
    big: bool,
}

/// Reads a tracked file without following symlinks or opening anything but a regular file.
fn read_current(path: &std::path::Path, max_bytes: u64) -> Current {
    let Ok(meta) = std::fs::symlink_metadata(path) else {
        return Current::Missing;
    };
    if meta.is_dir() {
        // A directory is not a document, only a place for files (solutions/<task>/src),
        // which are looked at one by one.
        return Current::Missing;
    }
    let stat = StatKey::of(&meta);
    if meta.file_type().is_symlink() {
        let why =
            "is a symbolic link; documents must be regular files inside the board (not followed)";
        return Current::Special(stat, why.into());
    }
    if stat.special {
        return Current::Special(stat, "is not a regular file".into());
    }
    if meta.len() > max_bytes {
        return Current::Big(stat);
    }
    match std::fs::read(path) {
        Ok(bytes) => Current::File(stat, bytes),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Current::Missing,
        Err(e) => Current::Special(stat, format!("cannot be read: {e}")),
    }
}

/// What the shadow holds for a file over the size limit: its stat, so that any change of
/// the file is a change of the stand-in.
fn big_stand_in(stat: StatKey) -> Vec<u8> {
    format!(
        "over the size limit: {} bytes, mtime {}, ctime {}, inode {}\n",
        stat.size, stat.mtime_ns, stat.ctime_ns, stat.ino
    )
    .into_bytes()
}

fn recently_written(stat: StatKey) -> bool {
    let now = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as i64);
    now - stat.mtime_ns < SETTLE.as_nanos() as i64
}

/// A unified diff when both sides are text.
fn text_diff(before: &[u8], after: &[u8]) -> Option<String> {
    let (Ok(a), Ok(b)) = (std::str::from_utf8(before), std::str::from_utf8(after)) else {
        return None;
    };
    Some(log::diff(a, b))
}

fn frontmatter_field(bytes: &[u8], key: &str) -> Option<serde_json::Value> {
    let text = std::str::from_utf8(bytes).ok()?;
    let parts = crate::doc::split::split(text).ok()?;
    let fields = crate::doc::fast::parse(parts.frontmatter).or_else(|| {
        crate::yaml::parse_mapping(parts.frontmatter, crate::yaml::YamlLimits::default()).ok()
    })?;
    fields.get(key).cloned()
}

/// The `rev` in a file's frontmatter (0 if none).
fn rev_of(bytes: &[u8]) -> u64 {
    frontmatter_field(bytes, "rev")
        .and_then(|v| v.as_u64())
        .unwrap_or(0)
}

fn status_of(bytes: &[u8]) -> Option<String> {
    frontmatter_field(bytes, "status").and_then(|v| v.as_str().map(str::to_string))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::docs::NewDoc;

    struct Fixture {
        _dir: tempfile::TempDir,
        board: Board,
        rec: Reconciler,
    }

    /// A board with task-1 (made by alice), and a reconciler that took it as it was.
    fn fixture() -> Fixture {
        let dir = tempfile::tempdir().unwrap();
        crate::board::init(dir.path()).unwrap();
        let board = Board::open(&dir.path().join(".tavern")).unwrap();
        create(&board, "task-1");
        let rec = Reconciler::open(board.clone()).unwrap();
        Fixture {
            _dir: dir,
            board,
            rec,
        }
    }

    fn create(board: &Board, id: &str) {
        let spec = NewDoc {
            id: Some(id.into()),
            title: "T".into(),
            ..NewDoc::default()
        };
        crate::api::docs::create(board, "alice", Region::Tasks, &spec).unwrap();
    }

    impl Fixture {
        fn path(&self, rel: &str) -> std::path::PathBuf {
            areas::abs(&self.board, rel)
        }

        /// Catches up with the log, then looks at every hinted path and at `also`.
        fn look(&mut self, also: &[&str]) -> Vec<Change> {
            self.rec.catch_up().unwrap();
            self.rec.hints.extend(also.iter().map(|s| s.to_string()));
            let mut out = Vec::new();
            while let Some(rel) = self.rec.hints.pop_first() {
                match self.rec.reconcile(&rel).unwrap() {
                    Outcome::Handled(changes) => out.extend(changes),
                    Outcome::Deferred(_) => panic!("{rel} deferred"),
                }
            }
            out
        }

        fn log(&self) -> Vec<Entry> {
            log::read_from(&self.board, 0).unwrap().0
        }

        fn ops(&self) -> Vec<String> {
            self.log()
                .iter()
                .map(|e| format!("{} {}", e.op, e.doc))
                .collect()
        }
    }

    fn summary(changes: &[Change]) -> Vec<(String, Vec<String>, Option<String>)> {
        changes
            .iter()
            .map(|c| {
                (
                    c.tracked.rel.clone(),
                    c.events.iter().map(On::name).collect(),
                    c.actor.clone(),
                )
            })
            .collect()
    }

    #[test]
    fn the_first_start_takes_the_board_as_it_is() {
        let mut f = fixture();
        assert!(f.look(&["tasks/task-1.md"]).is_empty());
        assert_eq!(f.ops(), ["create tasks/task-1.md"]);
    }

    #[test]
    fn tavern_writes_are_changes_by_their_actor_with_their_transition() {
        let mut f = fixture();
        create(&f.board, "task-2");
        let opts = crate::ops::transition::Options::default();
        crate::api::tasks::claim(&f.board, "bob", "task-1", &opts).unwrap();
        let changes = f.look(&[]);
        assert_eq!(
            summary(&changes),
            [
                (
                    "tasks/task-1.md".into(),
                    vec!["changed".into(), "transition:claimed".into()],
                    Some("bob".into())
                ),
                (
                    "tasks/task-2.md".into(),
                    vec!["created".into()],
                    Some("alice".into())
                ),
            ]
        );
        // Explained by the log: nothing logged on the watcher's account.
        assert_eq!(f.log().len(), 3);
        // Looked at again: handled already.
        assert!(f.look(&["tasks/task-1.md", "tasks/task-2.md"]).is_empty());
    }

    #[test]
    fn an_edit_outside_tavern_is_logged_once_with_its_diff() {
        let mut f = fixture();
        let path = f.path("tasks/task-1.md");
        let text = std::fs::read_to_string(&path).unwrap();
        let edited = text.replace("status: pending", "status: review");
        assert_ne!(text, edited);
        std::fs::write(&path, &edited).unwrap();
        let changes = f.look(&["tasks/task-1.md"]);
        assert_eq!(
            summary(&changes),
            [(
                "tasks/task-1.md".into(),
                vec!["changed".into(), "transition:review".into()],
                None
            )]
        );
        let last = f.log().pop().unwrap();
        assert_eq!(
            (last.op.as_str(), last.actor.as_str(), last.note.as_deref()),
            ("external-edit", WATCHER, Some("changed outside tavern"))
        );
        assert_eq!(
            last.diff.as_deref(),
            Some(log::diff(&text, &edited).as_str())
        );
        assert_eq!(changes[0].seq, last.seq);
        let notices: Vec<u64> = f.rec.notices.iter().map(|n| n.entry.seq).collect();
        assert_eq!(notices, [last.seq]);
        // Once: the entry is the watcher's own, and the file is as it was handled.
        assert!(f.look(&["tasks/task-1.md"]).is_empty());
        assert_eq!(f.log().len(), 2);
    }

    #[test]
    fn an_invalid_edit_is_an_alert_and_no_change() {
        let mut f = fixture();
        std::fs::write(f.path("tasks/task-1.md"), "---\nstatus: nowhere\n---\n").unwrap();
        // Old enough not to be taken for a write in progress.
        let old = std::time::SystemTime::now() - Duration::from_secs(5);
        std::fs::File::options()
            .write(true)
            .open(f.path("tasks/task-1.md"))
            .unwrap()
            .set_modified(old)
            .unwrap();
        assert!(f.look(&["tasks/task-1.md"]).is_empty());
        let ops = f.ops();
        assert_eq!(
            ops[1..],
            ["external-edit tasks/task-1.md", "alert tasks/task-1.md"]
        );
        let alert = f.log().pop().unwrap();
        assert!(
            alert
                .note
                .as_deref()
                .unwrap()
                .contains("not reverted, no source started"),
            "{alert:?}"
        );
    }

    #[test]
    fn a_file_whose_name_is_no_id_is_an_alert_once_never_a_change() {
        let mut f = fixture();
        std::fs::write(f.path("tasks/-rf.md"), "x").unwrap();
        assert!(f.look(&["tasks/-rf.md"]).is_empty());
        assert!(f.look(&["tasks/-rf.md"]).is_empty());
        assert_eq!(f.ops()[1..], ["alert tasks/-rf.md"]);
        let note = f.log().pop().unwrap().note.unwrap();
        assert_eq!(
            note,
            "tasks/-rf.md: file name is not a valid id ([a-z0-9][a-z0-9._-]{0,63}.md); not tracked and no source started (rename it)"
        );
    }

    #[test]
    fn a_deletion_outside_tavern_is_logged_once_even_after_a_commit() {
        let mut f = fixture();
        let text = std::fs::read_to_string(f.path("tasks/task-1.md")).unwrap();
        std::fs::remove_file(f.path("tasks/task-1.md")).unwrap();
        let changes = f.look(&["tasks/task-1.md"]);
        assert_eq!(
            summary(&changes),
            [("tasks/task-1.md".into(), vec!["deleted".into()], None)]
        );
        let last = f.log().pop().unwrap();
        assert_eq!(last.note.as_deref(), Some("deleted outside tavern"));
        assert_eq!(last.diff.as_deref(), Some(log::diff(&text, "").as_str()));
        assert!(f.rec.commit().is_empty());
        // The snapshot (saved seldom) still lists the file: the handled deletion's mark
        // keeps it from being logged again, here and by a restarted watcher.
        assert!(f.look(&["tasks/task-1.md"]).is_empty());
        let mut again = Reconciler::open(f.board.clone()).unwrap();
        again.hints.insert("tasks/task-1.md".into());
        assert!(
            matches!(again.reconcile("tasks/task-1.md").unwrap(), Outcome::Handled(c) if c.is_empty())
        );
        assert_eq!(f.ops().len(), 2);
    }

    #[test]
    fn a_file_replaced_by_a_directory_in_one_batch_is_deleted_with_its_diff() {
        let mut f = fixture();
        std::fs::create_dir_all(f.path("solutions/task-1")).unwrap();
        std::fs::write(f.path("solutions/task-1/h"), "again\n").unwrap();
        assert_eq!(f.look(&["solutions/task-1/h"]).len(), 1);
        assert!(f.rec.commit().is_empty());
        std::fs::remove_file(f.path("solutions/task-1/h")).unwrap();
        std::fs::create_dir(f.path("solutions/task-1/h")).unwrap();
        std::fs::write(f.path("solutions/task-1/h/a"), "a\n").unwrap();
        let changes = f.look(&["solutions/task-1/h", "solutions/task-1/h/a"]);
        assert_eq!(
            summary(&changes),
            [
                ("solutions/task-1/h".into(), vec!["deleted".into()], None),
                ("solutions/task-1/h/a".into(), vec!["created".into()], None),
            ]
        );
        assert!(f.rec.commit().is_empty());
        assert!(
            f.look(&["solutions/task-1/h", "solutions/task-1/h/a"])
                .is_empty()
        );
        let diffs: Vec<(String, Option<String>)> = f.log()[1..]
            .iter()
            .map(|e| (e.doc.clone(), e.diff.clone()))
            .collect();
        assert_eq!(
            diffs,
            [
                ("solutions/task-1/h".into(), Some(log::diff("", "again\n"))),
                ("solutions/task-1/h".into(), Some(log::diff("again\n", ""))),
                ("solutions/task-1/h/a".into(), Some(log::diff("", "a\n"))),
            ]
        );
    }

    #[test]
    fn an_empty_file_just_written_is_looked_at_again_before_it_is_logged() {
        let mut f = fixture();
        std::fs::create_dir_all(f.path("solutions/task-1")).unwrap();
        // `echo again > h`, seen between its truncation and its write.
        std::fs::write(f.path("solutions/task-1/h"), "").unwrap();
        f.rec.catch_up().unwrap();
        assert!(matches!(
            f.rec.reconcile("solutions/task-1/h").unwrap(),
            Outcome::Deferred(SETTLE)
        ));
        assert_eq!(f.log().len(), 1, "nothing logged yet");
        std::fs::write(f.path("solutions/task-1/h"), "again\n").unwrap();
        let changes = f.look(&["solutions/task-1/h"]);
        assert_eq!(
            summary(&changes),
            [("solutions/task-1/h".into(), vec!["created".into()], None)]
        );
        let last = f.log().pop().unwrap();
        assert_eq!(last.diff, Some(log::diff("", "again\n")));
        // Empty for good (deferred once already): logged as it is.
        std::fs::write(f.path("solutions/task-1/e"), "").unwrap();
        assert!(matches!(
            f.rec.reconcile("solutions/task-1/e").unwrap(),
            Outcome::Deferred(_)
        ));
        let changes = f.look(&["solutions/task-1/e"]);
        assert_eq!(changes.len(), 1);
        assert_eq!(
            f.log().pop().unwrap().note.as_deref(),
            Some("created outside tavern")
        );
    }

    #[test]
    fn a_sync_merge_explains_the_document_at_its_rev_whatever_its_diff() {
        let mut f = fixture();
        let path = f.path("tasks/task-1.md");
        let text = std::fs::read_to_string(&path).unwrap();
        let merged = text.replace("rev: 1", "rev: 3") + "merged from both sides\n";
        let entry = |rev: u64| Entry {
            at: crate::time::stamp_millis(crate::time::now()),
            actor: "tavern-sync".into(),
            op: "sync-merge".into(),
            doc: "tasks/task-1.md".into(),
            rev: Some(rev),
            // Made on the other clone, from its own copy: it does not apply here.
            diff: Some("@@ -1 +1 @@\n-elsewhere\n+merged\n".into()),
            ..Entry::default()
        };
        std::fs::write(&path, &merged).unwrap();
        log::append(&f.board, entry(3)).unwrap();
        let changes = f.look(&[]);
        assert_eq!(
            summary(&changes),
            [(
                "tasks/task-1.md".into(),
                vec!["changed".into()],
                Some("tavern-sync".into())
            )]
        );
        assert_eq!(
            f.ops(),
            ["create tasks/task-1.md", "sync-merge tasks/task-1.md"]
        );
        // At another rev than the entry names, the file is not what the merge made.
        std::fs::write(&path, merged.replace("rev: 3", "rev: 5")).unwrap();
        log::append(&f.board, entry(4)).unwrap();
        let changes = f.look(&[]);
        assert_eq!(changes.len(), 2, "{:?}", summary(&changes));
        assert_eq!(f.log().pop().unwrap().op, "external-edit");
    }

    #[test]
    fn another_clones_entry_with_the_seq_of_an_own_one_is_not_taken_for_it() {
        let mut f = fixture();
        // The watcher's own entry: seq 2 of this clone.
        let own = f
            .rec
            .alert("tasks/task-1.md", WATCHER, "an alert".into())
            .unwrap();
        assert_eq!(own.seq, 2);
        // Another clone's create, arrived by sync: seq 2 of its own clock (read first:
        // entries of one seq are read in the order of their origins).
        create(&f.board, "task-2");
        let path = f.board.log_path();
        let log_text = std::fs::read_to_string(&path).unwrap();
        let (before, last) = log_text.trim_end().rsplit_once('\n').unwrap();
        let theirs = last.replacen("{seq: 3, ", "{seq: 2, ", 1).replacen(
            &format!("origin: \"{}\"", own.origin),
            "origin: \"0other\"",
            1,
        );
        assert_ne!(theirs, last);
        std::fs::write(&path, format!("{before}\n{theirs}\n")).unwrap();
        let changes = f.look(&[]);
        assert_eq!(
            summary(&changes),
            [(
                "tasks/task-2.md".into(),
                vec!["created".into()],
                Some("alice".into())
            )]
        );
        assert!(
            !f.ops()
                .contains(&"external-edit tasks/task-2.md".to_string())
        );
        // Its own entry, read back, is still skipped.
        assert!(f.look(&["tasks/task-1.md"]).is_empty());
    }

    #[test]
    fn events_of_log_entries() {
        let e = |op: &str, to: Option<&str>| Entry {
            op: op.into(),
            to: to.map(str::to_string),
            ..Entry::default()
        };
        let names = |e: &Entry| events_of(e).iter().map(On::name).collect::<Vec<_>>();
        assert_eq!(names(&e("create", Some("pending"))), ["created"]);
        assert_eq!(
            names(&e("transition", Some("review"))),
            ["changed", "transition:review"]
        );
        assert_eq!(names(&e("edit", None)), ["changed"]);
        assert_eq!(
            names(&e("move", Some("archive"))),
            ["deleted", "transition:archive"]
        );
        assert_eq!(names(&e("pause", None)), ["created"]);
        assert_eq!(names(&e("resume", None)), ["deleted"]);
        assert_eq!(names(&e("external-edit", Some("x"))), ["changed"]);
        assert_eq!(names(&e("sync-merge", Some("done"))), ["changed"]);
        assert_eq!(names(&e("sync-conflict", None)), ["changed"]);
    }

    #[test]
    fn replaying_logged_diffs() {
        let d1 = log::diff("a\n", "a\nb\n");
        let d2 = log::diff("a\nb\n", "a\nc\n");
        let entries = [
            Entry {
                diff: Some(d1.clone()),
                ..Entry::default()
            },
            Entry {
                diff: Some(d2),
                ..Entry::default()
            },
        ];
        let refs: Vec<&Entry> = entries.iter().collect();
        assert!(matches!(replay("a\n", &refs), Replay::Exact(t) if t == "a\nc\n"));
        assert!(matches!(replay("z\n", &refs), Replay::Mismatch));
        // Taken back from what they made, they give what was there before them.
        assert_eq!(unreplay("a\nc\n", &refs).as_deref(), Some("a\n"));
        assert_eq!(unreplay("q\n", &refs), None);
        let cut = Entry {
            diff: Some(format!("{d1}… diff truncated: 1 more lines\n")),
            ..Entry::default()
        };
        assert!(matches!(replay("a\n", &[&cut]), Replay::Truncated));
        assert_eq!(unreplay("a\nb\n", &[&cut]), None);
    }
}
