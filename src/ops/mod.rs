//! The operations behind the commands: each one a library call the CLI (and later the
//! watcher and other front ends) share.

pub mod edit;
pub mod new;
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
    let _lock = store::lock(board, &store::doc_lock_name(region, id))?;
    let before = store::read_doc(board, region, id)?;
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
    let path = board.doc_path(region, id);
    store::write_atomic(&path, after.raw.as_bytes())?;
    let mut entry = change.entry;
    entry.at = crate::time::stamp_millis(now);
    entry.doc = after.rel_path();
    entry.rev = Some(rev);
    entry.diff = Some(log::diff(&before.raw, &after.raw));
    let entry = log::append(board, entry)?;
    Ok(Outcome {
        doc: after,
        entry: Some(entry),
    })
}

/// Checks the actor name given by `--as`, `TAVERN_AGENT` or the user.
pub fn validate_actor(actor: &str) -> Result<()> {
    if actor.is_empty() || actor.len() > 64 || actor.chars().any(|c| c.is_control()) {
        return Err(Error::usage(format!(
            "invalid actor name '{}': use 1-64 printable characters (--as NAME or TAVERN_AGENT)",
            actor.escape_debug()
        )));
    }
    Ok(())
}
