//! The operations behind the commands: each one a library call the CLI (and later the
//! watcher and other front ends) share.

pub mod archive;
pub mod completion;
pub mod edit;
pub mod graph;
pub mod intent;
pub mod new;
pub mod observations;
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
use crate::store;

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

/// The mutation protocol (DESIGN §5) for one existing document: lock, re-read, decide,
/// write atomically, log, unlock. `decide` returns `None` for "nothing to do".
pub fn mutate(
    board: &Board,
    region: Region,
    id: &str,
    decide: impl FnOnce(&Document) -> Result<Option<Change>>,
) -> Result<Outcome> {
    let lock_name = store::doc_lock_name(region, id);
    let _lock = store::lock(board, &lock_name)?;
    let before = store::read_doc(board, region, id)?;
    intent::recover(board, &lock_name, before.rev())?;
    let Some(mut change) = decide(&before)? else {
        return Ok(Outcome {
            doc: before,
            entry: None,
        });
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
    let path = board.doc_path(region, id);
    let mut entry = change.entry;
    entry.at = crate::time::stamp_millis(now);
    entry.doc = after.rel_path();
    entry.rev = Some(rev);
    entry.diff = Some(log::diff(&before.raw, &after.raw));
    intent::write(board, &lock_name, &entry)?;
    if let Err(e) = store::write_atomic(&path, after.raw.as_bytes()) {
        intent::clear(board, &lock_name);
        return Err(e);
    }
    let entry = log::append(board, entry)?;
    intent::clear(board, &lock_name);
    Ok(Outcome {
        doc: after,
        entry: Some(entry),
    })
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
