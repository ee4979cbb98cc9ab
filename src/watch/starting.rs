//! The intent record of an activation being started, so that a watcher killed between
//! starting a command and logging its `started` entry neither runs it twice nor loses it.
//!
//! Before the command is spawned, the activation is written to `.state/watch/starting`.
//! The command line begins by creating `.state/watch/started` (`: > MARK; RUN`), so the
//! command itself says that it was spawned. Once `started` is logged, both go. A watcher
//! that finds the record at its next start knows which it was: the mark is there (it ran:
//! not started again, logged as lost) or not (it never ran: it waits to start).

use std::path::PathBuf;

use super::scheduler::Activation;
use crate::board::Board;
use crate::error::Result;

fn intent_path(board: &Board) -> PathBuf {
    super::snapshot::dir(board).join("starting")
}

/// The file the command creates first.
pub fn mark_path(board: &Board) -> PathBuf {
    super::snapshot::dir(board).join("started")
}

/// Records that `act` is about to start (and that it has not yet).
pub fn begin(board: &Board, act: &Activation) -> Result<()> {
    let _ = std::fs::remove_file(mark_path(board));
    let text = serde_json::to_string(act).unwrap_or_default();
    // Not synced (a state file): it is for a watcher that was killed; after a power loss
    // the command it started was killed too.
    super::snapshot::write_state(&intent_path(board), text.as_bytes())
}

/// The start is logged: the record goes (the mark first: a record without a mark is a
/// start that did not happen, which the log's `started` entry then corrects).
pub fn end(board: &Board) {
    let _ = std::fs::remove_file(mark_path(board));
    let _ = std::fs::remove_file(intent_path(board));
}

/// What a killed watcher left of a start.
#[derive(Debug, PartialEq)]
pub enum Left {
    Nothing,
    /// Its command ran (or runs): it must not start again.
    Spawned(Activation),
    /// It was killed before the command was spawned: it still waits to start.
    NotSpawned(Activation),
}

/// Takes the record a previous watcher left, if any.
pub fn take(board: &Board) -> Left {
    let Some(text) = super::snapshot::read_state(&intent_path(board)) else {
        return Left::Nothing;
    };
    let spawned = mark_path(board).is_file();
    end(board);
    match serde_json::from_str::<Activation>(&text) {
        Ok(act) if spawned => Left::Spawned(act),
        Ok(act) => Left::NotSpawned(act),
        Err(_) => Left::Nothing,
    }
}
