//! The alerts of the board branch's guards (a record refused, a change from the remote
//! not taken), logged by `tavern-sync`, each once: a `sync --watch` meets the same refusal
//! at every turn until someone acts, and the log says it once.

use crate::board::Board;
use crate::error::Result;
use crate::log::{self, Entry};
use crate::sync::vet::Refusal;

/// How many alerts are remembered as already logged.
const REMEMBERED: usize = 256;

/// Logs an alert about `doc`, unless one with the same `key` was logged already.
pub fn once(board: &Board, key: &str, doc: &str, note: String) -> Result<()> {
    once_locked(&log::Appender::lock(board)?, board, key, doc, note)
}

/// [`once`] for a caller that holds the log lock already.
pub fn once_locked(
    appender: &log::Appender<'_>,
    board: &Board,
    key: &str,
    doc: &str,
    note: String,
) -> Result<()> {
    let path = board.state_dir().join("sync-alerts");
    let digest = format!("{:016x}", crate::sync::merge::fnv(key.as_bytes()));
    let text = std::fs::read_to_string(&path).unwrap_or_default();
    if text.lines().any(|l| l == digest) {
        return Ok(());
    }
    appender.append(Entry {
        actor: crate::sync::merge::ACTOR.into(),
        op: "alert".into(),
        doc: doc.to_string(),
        note: Some(note),
        ..Entry::default()
    })?;
    let mut lines: Vec<&str> = text.lines().collect();
    lines.push(&digest);
    let keep = &lines[lines.len().saturating_sub(REMEMBERED)..];
    // Losing this file only means an alert is logged once more.
    let _ = std::fs::write(&path, format!("{}\n", keep.join("\n")));
    Ok(())
}

/// Refusals as one line of a note: the first few, with why, and how many more.
pub fn list(refused: &[Refusal]) -> String {
    const SHOWN: usize = 8;
    let mut parts: Vec<String> = refused
        .iter()
        .take(SHOWN)
        .map(|r| format!("{}: {}", r.path, r.why))
        .collect();
    if refused.len() > SHOWN {
        parts.push(format!("and {} more", refused.len() - SHOWN));
    }
    parts.join("; ")
}
