//! What is where a document should be but is none: a file whose name is not a valid id,
//! a symlink or another special file. Alerts, never changes for the sources.

use super::{Outcome, Reconciler, WATCHER};
use crate::error::Result;
use crate::watch::areas::{self, Area, Tracked};
use crate::watch::snapshot::{self, StatKey};

impl Reconciler {
    /// A file whose name (or, under `solutions/`, whose task directory's name) is not a
    /// valid id: no document can be named so, and its name must never reach a command
    /// (`-rf`, `a;touch x`). An alert each time it appears or changes; never a change for
    /// the sources, never an external edit.
    pub(super) fn bad_name(&mut self, t: &Tracked) -> Result<Outcome> {
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
            self.snapshot.remove(&t.rel);
            return Ok(Outcome::Handled(Vec::new()));
        };
        if self.snapshot.get(&t.rel).map(|k| k.stat) != Some(stat) {
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
        self.snapshot.set(&t.rel, stat, snapshot::hash(b""));
        Ok(Outcome::Handled(Vec::new()))
    }

    /// A symlink or other special file where a document should be: reported once.
    pub(super) fn special(
        &mut self,
        t: &Tracked,
        stat: StatKey,
        before: Option<Vec<u8>>,
        why: &str,
    ) -> Result<Outcome> {
        if self.snapshot.get(&t.rel).map(|k| k.stat) != Some(stat) {
            self.alert(&t.rel, WATCHER, format!("{}: {why}", t.rel))?;
        }
        if before.is_some() {
            self.stage(&t.rel, None);
        }
        self.snapshot.set(&t.rel, stat, snapshot::hash(b""));
        Ok(Outcome::Handled(Vec::new()))
    }
}
