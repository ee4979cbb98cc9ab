//! Where the watcher's saved state stands in the change journal: `.state/watch/mark`, an
//! epoch and an offset. Every change after that offset of that epoch's journal is in the
//! journal, and every change before it was handled and saved. So a start that finds the
//! journal of that epoch kept (by the index keeper, while no watcher ran) looks at the
//! paths the journal names after the mark instead of a stat of every file: a restart costs
//! what changed.
//!
//! A mark is written only when it is true: by `watch --once` at its end (the position of
//! the journal it asked before its pass), and by a watcher that stops and hands the
//! journal over to a keeper it started (the keeper's epoch, from its start: see
//! `event_loop`'s hand-over), each once everything handled is saved. A start removes it
//! before anything else, so that a watcher killed later never leaves one behind.

use crate::board::Board;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Mark {
    pub epoch: u64,
    /// An offset in that epoch's journal (0: its start).
    pub at: u64,
}

fn path(board: &Board) -> std::path::PathBuf {
    super::snapshot::dir(board).join("mark")
}

/// The mark, if there is one and it reads.
pub fn load(board: &Board) -> Option<Mark> {
    let text = super::snapshot::read_state(&path(board))?;
    let (epoch, at) = text.trim().split_once(' ')?;
    Some(Mark {
        epoch: epoch.parse().ok()?,
        at: at.parse().ok()?,
    })
}

pub fn save(board: &Board, mark: Mark) -> crate::error::Result<()> {
    let text = format!("{} {}\n", mark.epoch, mark.at);
    super::snapshot::write_state(&path(board), text.as_bytes())
}

pub fn remove(board: &Board) {
    let _ = std::fs::remove_file(path(board));
}
