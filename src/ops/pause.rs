//! `pause` and `resume`: `control/PAUSE` stops new claims and new activations; its text is
//! the reason. Both are logged like any change (ops `pause` and `resume`).

use crate::board::Board;
use crate::board::PauseFile;
use crate::error::{Error, Result};
use crate::layout::PAUSE_LOCK;
use crate::log::{self, Entry};
use crate::store::{self, Step, Write};

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
    let (_, entry) = store::change(board, &[PAUSE_LOCK.to_string()], || {
        let before = match board.pause_text() {
            PauseFile::Text(text) => Some(text),
            PauseFile::Missing | PauseFile::NotAFile => None,
        };
        let after = format!("{reason}\n");
        if before.as_deref() == Some(after.as_str()) {
            return Ok(((), None));
        }
        let mut steps = Vec::new();
        // A file cannot be renamed over a directory: an empty one makes way for the reason.
        if std::fs::symlink_metadata(&path).is_ok_and(|m| m.is_dir()) {
            refuse_full_dir(board, &path, "pause")?;
            steps.push(Step::remove(DOC));
        }
        steps.push(Step::put(
            DOC,
            before.as_deref().map(str::as_bytes),
            after.clone().into_bytes(),
        ));
        let diff = log::diff(before.as_deref().unwrap_or(""), &after);
        Ok((
            (),
            Some(logged(actor, "pause", reason.clone(), diff, steps)),
        ))
    })?;
    Ok(entry)
}

/// Lifts the pause. None if the board was not paused.
pub fn resume(board: &Board, actor: &str) -> Result<Option<Entry>> {
    let path = board.pause_path();
    let (_, entry) = store::change(board, &[PAUSE_LOCK.to_string()], || {
        let before = match board.pause_text() {
            PauseFile::Text(text) => text,
            PauseFile::Missing => return Ok(((), None)),
            // A symlink is removed itself, never read (its target could be any file).
            PauseFile::NotAFile => String::new(),
        };
        refuse_full_dir(board, &path, "resume")?;
        let note = format!("was paused: {}", before.trim());
        let diff = log::diff(&before, "");
        Ok((
            (),
            Some(logged(actor, "resume", note, diff, vec![Step::remove(DOC)])),
        ))
    })?;
    Ok(entry)
}

/// control/PAUSE goes whatever it is. An empty directory (`mkdir control/PAUSE` pauses
/// too) goes like a file; one with files in it is refused, since removing it would delete
/// what someone put there.
fn refuse_full_dir(board: &Board, path: &std::path::Path, command: &str) -> Result<()> {
    let full = std::fs::symlink_metadata(path).is_ok_and(|m| m.is_dir())
        && std::fs::read_dir(path).is_ok_and(|mut d| d.next().is_some());
    if full {
        return Err(Error::conflict(
            board.rel(path),
            format!(
                "cannot {command}: control/PAUSE is a directory with files in it; move them \
                 elsewhere and remove the directory, which is what pauses the board"
            ),
        ));
    }
    Ok(())
}

/// The change of a pause or resume.
fn logged(actor: &str, op: &str, note: String, diff: String, steps: Vec<Step>) -> Write {
    let entry = Entry {
        actor: actor.into(),
        op: op.into(),
        doc: DOC.into(),
        note: Some(note),
        diff: Some(diff),
        ..Entry::default()
    };
    Write { steps, entry }
}
