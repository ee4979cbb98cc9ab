//! A tracked file that is gone: deleted by tavern (its log entry says so) or by someone
//! else (an external edit, after whatever tavern wrote since the watcher last looked).

use chrono::Utc;

use super::explain::{Replay, events_of, replay, tavern_writes, text_diff};
use super::{Change, Outcome, Reconciler};
use crate::error::Result;
use crate::log::Entry;
use crate::watch::areas::Tracked;
use crate::watch::sources::On;

impl Reconciler {
    /// The file is gone.
    pub(super) fn deleted(
        &mut self,
        t: &Tracked,
        before: Option<Vec<u8>>,
        entries: Vec<Entry>,
    ) -> Result<Outcome> {
        let known = self.snapshot.remove(&t.rel);
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
}
