//! A tracked file that was written: by tavern (explained by its log entries), by someone
//! else (logged as an external edit with its diff, or an alert when invalid), or both.

use chrono::Utc;

use super::current::recently_written;
use super::explain::{
    Replay, events_of, external_events, logged_rev, replay, rev_of, tavern_writes, text_diff,
    unreplay,
};
use super::{Change, Notice, Outcome, Reconciler, SETTLE, WATCHER};
use crate::doc::Document;
use crate::error::Result;
use crate::log::Entry;
use crate::watch::areas::{Area, Tracked};
use crate::watch::snapshot::StatKey;
use crate::watch::sources::On;

impl Reconciler {
    /// The file was written: by tavern, by someone else, or both.
    pub(super) fn written(
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
        let lost = before.is_none() && self.snapshot.contains(&t.rel);
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
    pub(super) fn external_change(
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
    pub(super) fn note(&mut self, rel: &str, what: &str) -> String {
        if self.catching_up.remove(rel) {
            format!("{what} (noticed when tavern watch started)")
        } else {
            what.to_string()
        }
    }

    /// Logs an external edit, unless a previous run already logged this very change (it
    /// stopped before recording it as handled).
    pub(super) fn log_external(
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

    pub(super) fn change_from_entry(
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
}

/// What a file holds beyond what tavern's logged writes explain.
pub(super) enum Extra {
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

/// What `written` looks at: the file's content (or stand-in) and stat.
pub(super) struct Written<'a> {
    pub(super) bytes: &'a [u8],
    pub(super) stat: StatKey,
    pub(super) big: bool,
}
