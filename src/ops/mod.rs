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
    let locked = Locked::take(board, region, id, if_rev)?;
    match decide(&locked.doc)? {
        None => Ok(locked.unchanged()),
        Some(change) => locked.write(board, change),
    }
}

/// One document under its lock, re-read there: what a caller decides from before it
/// writes (or drops it, unchanged). For a change with effects of its own between the two
/// (a remote's confirmation), where [`mutate`]'s closure would hide their results.
#[derive(Debug)]
pub struct Locked {
    held: store::Held,
    pub doc: Document,
}

impl Locked {
    /// Takes the document's lock, re-reads it and checks `if_rev`.
    pub fn take(board: &Board, region: Region, id: &str, if_rev: Option<u64>) -> Result<Locked> {
        let lock = crate::layout::doc_lock(region, id);
        let held = store::hold(board, &[lock])?;
        let doc = store::read_doc(board, region, id)?;
        store::check_rev(&doc.rel_path(), doc.rev(), if_rev)?;
        Ok(Locked { held, doc })
    }

    /// Nothing to change: the document as it is.
    pub fn unchanged(self) -> Outcome {
        Outcome {
            doc: self.doc,
            entry: None,
        }
    }

    /// Writes `change` (with a new `updated_at` and `rev`) and logs it.
    pub fn write(self, board: &Board, change: Change) -> Result<Outcome> {
        self.write_then(board, change, |_| Ok(()))
    }

    /// Writes `change` as [`Locked::write`] does, then runs `after` while the lock is still
    /// held (state that must follow the document under its lock: what a connected board's
    /// copy of the task took into account).
    pub fn write_then(
        self,
        board: &Board,
        change: Change,
        after_write: impl FnOnce(&Outcome) -> Result<()>,
    ) -> Result<Outcome> {
        self.write_checked(board, change, after_write)
            .map_err(|failed| failed.error)
    }

    /// Writes `change` as [`Locked::write_then`] does, and when that fails says whether the
    /// document was written all the same (its new content is in place: a failure after
    /// that, in the log's append or in `after`, leaves a change that stands, whose log
    /// entry the next command that takes the document's lock appends). For a change whose
    /// effects elsewhere (a remote's record) must be given back only if it was not.
    pub fn write_checked(
        self,
        board: &Board,
        mut change: Change,
        after_write: impl FnOnce(&Outcome) -> Result<()>,
    ) -> std::result::Result<Outcome, WriteFailed> {
        let unwritten = |error| WriteFailed {
            error,
            written: None,
        };
        let before = self.doc;
        let now = crate::time::now();
        let rev = before.rev() + 1;
        change.edits.push(FieldEdit::Set(
            "updated_at".into(),
            crate::time::stamp_millis(now).into(),
        ));
        change.edits.push(FieldEdit::Set("rev".into(), rev.into()));
        let after = before
            .with_edits(
                &change.edits,
                change.body.as_deref(),
                board.config.yaml_limits(),
            )
            .map_err(|e| {
                unwritten(Error::input(format!(
                    "{}: the edit would make the document unreadable: {e}",
                    before.rel_path()
                )))
            })?;
        check_size(board, &after).map_err(unwritten)?;
        let mut entry = change.entry;
        entry.doc = after.rel_path();
        entry.rev = Some(rev);
        entry.diff = Some(log::diff(&before.raw, &after.raw));
        let step = Step::put(
            after.rel_path(),
            Some(before.raw.as_bytes()),
            after.raw.as_bytes().to_vec(),
        );
        let intended = entry.clone();
        let entry = match self.held.write(
            board,
            Write {
                steps: vec![step],
                entry,
            },
        ) {
            Ok(entry) => entry,
            Err(error) => {
                // Under the lock still: nobody else wrote it since.
                let path = board.root.join(after.rel_path());
                let written = std::fs::read(&path).is_ok_and(|b| b == after.raw.as_bytes());
                return Err(WriteFailed {
                    error,
                    written: written.then(|| {
                        Box::new(Outcome {
                            doc: after,
                            entry: Some(intended),
                        })
                    }),
                });
            }
        };
        let outcome = Outcome {
            doc: after,
            entry: Some(entry),
        };
        if let Err(error) = after_write(&outcome) {
            return Err(WriteFailed {
                error,
                written: Some(Box::new(outcome)),
            });
        }
        drop(self.held);
        Ok(outcome)
    }
}

/// Why [`Locked::write_checked`] failed, and whether the document was written all the same.
#[derive(Debug)]
pub struct WriteFailed {
    pub error: Error,
    /// The document as written, when its new content is in place (its entry's `seq` is 0
    /// when the log's append is what failed: the next command appends it).
    pub written: Option<Box<Outcome>>,
}

/// Writes a change whose record the remote took (`pushed`), under the task's lock, and
/// notes what this clone's copy took into account ([`claims::settle`]). A write that fails
/// before the task file holds the change gives the remote's record back (else every other
/// agent is told someone won, and nobody did); if that fails too, the error says the remote
/// holds it (exit 8: the same command again finishes it). Once the task file holds the
/// change, it stands, as on the remote: a failure after that (the log's append, noting
/// what was taken into account) is reported as a notice, with what finishes it.
pub(crate) fn write_confirmed(
    board: &Board,
    locked: Locked,
    change: Change,
    pushed: &crate::sync::claims::Pushed,
) -> Result<Outcome> {
    let id = locked.doc.id().to_string();
    let path = locked.doc.rel_path();
    match locked.write_checked(board, change, |_| crate::sync::claims::settle(board, &id)) {
        Ok(outcome) => Ok(outcome),
        Err(WriteFailed {
            error,
            written: Some(outcome),
        }) => {
            let logged = outcome.entry.as_ref().is_some_and(|e| e.seq > 0);
            let next = if logged {
                format!(
                    "noting which record of the remote's this clone's copy took into account failed ({error}); the next sync or move of {id} notes it again"
                )
            } else {
                format!(
                    "its log entry was not appended ({error}); the next command that touches the board appends it"
                )
            };
            crate::notice::report(crate::notice::Notice::ChangeUnfinished {
                path,
                problem: next,
            });
            Ok(*outcome)
        }
        Err(WriteFailed {
            error,
            written: None,
        }) => Err(match crate::sync::claims::undo(board, pushed) {
            Ok(()) => Error::request(
                error.kind(),
                crate::msg!(format!(
                    "{error}; the remote's record of {id} was given back: nothing was changed"
                )),
            ),
            Err(why) => Error::request(
                crate::error::Kind::Unknown,
                crate::msg!(format!(
                    "{error}; the remote '{}' holds the record of this change ({why}), and this clone's copy is as it was: the same command run again finishes it",
                    pushed.remote
                )),
            ),
        }),
    }
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
