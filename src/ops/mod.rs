//! The operations behind the commands: each one a library call the CLI (and later the
//! watcher and other front ends) share.

pub mod archive;
pub mod completion;
pub mod decisions;
pub mod edit;
pub mod graph;
pub mod new;
pub mod observations;
pub mod owned;
pub mod pause;
pub mod questions;
pub mod resolve;
pub mod sweep;
pub mod transition;

use crate::board::Board;
use crate::doc::edit::FieldEdit;
use crate::doc::{Document, Region};
use crate::error::{Error, Result};
use crate::log::{self, Entry};
use crate::store::{self, Step, Write};

/// What a mutation did: the document as it is now, and the log entry if it changed.
#[derive(Debug)]
pub struct Outcome {
    pub doc: Document,
    pub entry: Option<Entry>,
}

impl Outcome {
    pub fn changed(&self) -> bool {
        self.entry.is_some()
    }
}

/// What a mutation wants to change, decided under the lock from the current document.
pub struct Change {
    pub edits: Vec<FieldEdit>,
    pub body: Option<String>,
    pub entry: Entry,
}

/// A change to one existing document by the write protocol ([`store::change`]): under its
/// lock, re-read it, check `if_rev`, let `decide` check the rest and say what to change
/// (`None`: nothing to do), then write and log it.
pub fn mutate(
    board: &Board,
    region: Region,
    id: &str,
    if_rev: Option<u64>,
    decide: impl FnOnce(&Document) -> Result<Option<Change>>,
) -> Result<Outcome> {
    let lock = crate::layout::doc_lock(region, id);
    let (doc, entry) = store::change(board, &[lock], || {
        let before = store::read_doc(board, region, id)?;
        store::check_rev(&before.rel_path(), before.rev(), if_rev)?;
        let Some(mut change) = decide(&before)? else {
            return Ok((before, None));
        };
        let now = crate::time::now();
        let rev = before.rev() + 1;
        change.edits.push(FieldEdit::Set(
            "updated_at".into(),
            crate::time::stamp(now).into(),
        ));
        change.edits.push(FieldEdit::Set("rev".into(), rev.into()));
        let after = before
            .with_edits(
                &change.edits,
                change.body.as_deref(),
                board.config.yaml_limits(),
            )
            .map_err(|e| {
                Error::input(format!(
                    "{}: the edit would make the document unreadable: {e}",
                    before.rel_path()
                ))
            })?;
        check_size(board, &after)?;
        let mut entry = change.entry;
        entry.doc = after.rel_path();
        entry.rev = Some(rev);
        entry.diff = Some(log::diff(&before.raw, &after.raw));
        let step = Step::put(
            after.rel_path(),
            Some(before.raw.as_bytes()),
            after.raw.as_bytes().to_vec(),
        );
        Ok((
            after,
            Some(Write {
                steps: vec![step],
                entry,
            }),
        ))
    })?;
    Ok(Outcome { doc, entry })
}

/// Refuses to write a document that every reader would skip as over the size limit.
pub fn check_size(board: &Board, doc: &Document) -> Result<()> {
    let max = board.config.limits.max_doc_bytes;
    if doc.raw.len() as u64 > max {
        return Err(Error::input(format!(
            "{}: the document would be {} bytes, over the limit of {max} (limits.max_doc_bytes in board.yaml); nothing written",
            doc.rel_path(),
            doc.raw.len()
        )));
    }
    Ok(())
}

/// Checks the acting agent's name: 1-64 printable characters.
pub fn validate_actor(actor: &str) -> Result<()> {
    if actor.is_empty() || actor.len() > 64 || actor.chars().any(|c| c.is_control()) {
        return Err(Error::request(
            crate::error::Kind::Usage,
            crate::msg!(
                format!(
                    "invalid actor name '{}': use 1-64 printable characters (",
                    actor.escape_debug()
                ),
                crate::error::Input::Actor,
                ")"
            ),
        ));
    }
    Ok(())
}
