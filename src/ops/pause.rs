//! `pause` and `resume`: `control/PAUSE` stops new claims and new activations; its text is
//! the reason. Both are logged like any change (ops `pause` and `resume`).

use crate::board::Board;
use crate::board::PauseFile;
use crate::error::{Error, Result};
use crate::layout::PAUSE_LOCK;
use crate::log::{self, Entry};
use crate::store;

const DOC: &str = crate::layout::PAUSE;

/// Pauses the board (or changes the reason of a pause). None if it was already paused for
/// exactly this reason.
pub fn pause(board: &Board, actor: &str, reason: &str) -> Result<Option<Entry>> {
    let reason = reason.trim();
    let reason = if reason.is_empty() {
        format!("paused by {actor}")
    } else {
        reason.to_string()
    };
    if reason
        .chars()
        .any(|c| c.is_control() && c != '\n' && c != '\t')
    {
        return Err(Error::usage("the reason must be printable text"));
    }
    let path = board.pause_path();
    let _lock = store::lock(board, PAUSE_LOCK)?;
    let before = match board.pause_text() {
        PauseFile::Text(text) => Some(text),
        PauseFile::Missing | PauseFile::NotAFile => None,
    };
    let after = format!("{reason}\n");
    if before.as_deref() == Some(after.as_str()) {
        return Ok(None);
    }
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, "create directory", e))?;
    }
    // A file cannot be renamed over a directory: an empty one makes way for the reason.
    if std::fs::symlink_metadata(&path).is_ok_and(|m| m.is_dir()) {
        remove_pause(board, &path, "pause")?;
    }
    store::write_atomic(&path, after.as_bytes())?;
    let diff = log::diff(before.as_deref().unwrap_or(""), &after);
    logged(board, actor, "pause", reason, diff)
}

/// Lifts the pause. None if the board was not paused.
pub fn resume(board: &Board, actor: &str) -> Result<Option<Entry>> {
    let path = board.pause_path();
    let _lock = store::lock(board, PAUSE_LOCK)?;
    let before = match board.pause_text() {
        PauseFile::Text(text) => text,
        PauseFile::Missing => return Ok(None),
        // A symlink is removed itself, never read (its target could be any file).
        PauseFile::NotAFile => String::new(),
    };
    remove_pause(board, &path, "resume")?;
    let note = format!("was paused: {}", before.trim());
    logged(board, actor, "resume", note, log::diff(&before, ""))
}

/// Removes control/PAUSE, whatever it is. An empty directory (`mkdir control/PAUSE`
/// pauses too) goes like a file; one with files in it is refused, since removing it
/// would delete what someone put there.
fn remove_pause(board: &Board, path: &std::path::Path, command: &str) -> Result<()> {
    let is_dir = std::fs::symlink_metadata(path).is_ok_and(|m| m.is_dir());
    if !is_dir {
        return std::fs::remove_file(path).map_err(|e| Error::io(path, "remove", e));
    }
    match std::fs::remove_dir(path) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::DirectoryNotEmpty => Err(Error::conflict(
            board.rel(path),
            format!(
                "cannot {command}: control/PAUSE is a directory with files in it; move them \
                 elsewhere and remove the directory, which is what pauses the board"
            ),
        )),
        Err(e) => Err(Error::io(path, "remove", e)),
    }
}

/// Appends the entry of a pause or resume.
fn logged(
    board: &Board,
    actor: &str,
    op: &str,
    note: String,
    diff: String,
) -> Result<Option<Entry>> {
    let entry = Entry {
        at: crate::time::stamp_millis(crate::time::now()),
        actor: actor.into(),
        op: op.into(),
        doc: DOC.into(),
        note: Some(note),
        diff: Some(diff),
        ..Entry::default()
    };
    log::append(board, entry).map(Some)
}
