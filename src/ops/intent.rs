//! Write-ahead intents: the guarantee that every change tavern makes reaches the log, even
//! when the process dies between renaming the document into place and appending its log
//! entry (or in the middle of that append, whose torn text the next append cuts off).
//!
//! Before the rename, the entry about to be logged is written to
//! `.state/intents/<lock>.yaml`; after the append it is removed. The next locked write of
//! the same document finds a leftover intent and, if the document carries the intent's
//! rev (the rename happened) and the log lacks it, appends it then.

use std::path::PathBuf;

use crate::board::Board;
use crate::error::{Error, Result};
use crate::log::{self, Entry};

fn path(board: &Board, lock_name: &str) -> PathBuf {
    crate::layout::intents_dir(&board.root).join(format!("{lock_name}.yaml"))
}

/// Records the entry a write is about to log. Called under the document's lock.
pub fn write(board: &Board, lock_name: &str, entry: &Entry) -> Result<()> {
    let p = path(board, lock_name);
    let text = log::render(entry);
    if std::fs::write(&p, &text).is_err() {
        let dir = p.parent().unwrap_or(&p).to_path_buf();
        std::fs::create_dir_all(&dir).map_err(|e| Error::io(&dir, "create directory", e))?;
        std::fs::write(&p, &text).map_err(|e| Error::io(&p, "write", e))?;
    }
    Ok(())
}

/// The entry was logged (or the write abandoned): forget the intent.
pub fn clear(board: &Board, lock_name: &str) {
    let _ = std::fs::remove_file(path(board, lock_name));
}

/// Called under the document's lock before a new write: logs an interrupted write's entry
/// if its change is on disk but not in the log.
pub fn recover(board: &Board, lock_name: &str, current_rev: u64) -> Result<()> {
    let p = path(board, lock_name);
    let Ok(text) = std::fs::read_to_string(&p) else {
        return Ok(());
    };
    let entry = log::parse_entry(&text);
    if let Some(mut entry) = entry
        && entry.rev == Some(current_rev)
        && !log::contains(board, &entry.doc, current_rev)?
    {
        let note = format!(
            "{}: the write that made this change was interrupted before logging it",
            log::LOGGED_LATE
        );
        entry.note = Some(match entry.note.take() {
            Some(n) => format!("{n} ({note})"),
            None => note,
        });
        log::append(board, entry)?;
    }
    clear(board, lock_name);
    Ok(())
}
