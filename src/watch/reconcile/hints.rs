//! What the reconciler looks at: files whose stat differs from the snapshot, directories
//! that appeared or went, and the files named by new log entries.

use std::collections::HashSet;

use chrono::{DateTime, Utc};

use super::Reconciler;
use crate::error::Result;
use crate::log;
use crate::watch::areas::{self, Tracked};

impl Reconciler {
    /// Hints every file whose stat differs from the snapshot, and every file that is gone.
    /// (A stat per file: no file whose stat is unchanged is read.)
    pub fn rescan(&mut self) {
        let pass = areas::stat_pass(&self.board, self.snapshot.files());
        let known = pass.known;
        self.hints.extend(pass.changed);
        if known == self.snapshot.count() {
            // Every file it knows is still there.
            return;
        }
        let now: Vec<Tracked> = areas::walk(&self.board);
        let present: HashSet<&str> = now.iter().map(|t| t.rel.as_str()).collect();
        let gone: Vec<String> = self
            .snapshot
            .paths()
            .filter(|rel| !present.contains(rel))
            .map(str::to_string)
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
            .paths()
            .filter(|rel| rel.starts_with(&prefix))
            .map(str::to_string)
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
}

/// After log.yaml was replaced, entries written up to this long before the last one read
/// are read again: times are taken before the log lock, so they are nearly in order only.
const REPLACED_SLACK_MS: i64 = 5_000;
