//! A tracked file as it is on disk now (read without following symlinks), and whether it
//! is a valid one of its kind.

use std::time::SystemTime;

use super::{Reconciler, SETTLE};
use crate::doc::{Document, Region};
use crate::error::Error;
use crate::store;
use crate::watch::areas::{self, Area, Tracked};
use crate::watch::snapshot::StatKey;

impl Reconciler {
    /// The file as a document for `when:` queries (None if it is not readable as one).
    pub(super) fn parse(&self, t: &Tracked, bytes: &[u8]) -> Option<Document> {
        let text = std::str::from_utf8(bytes).ok()?.to_string();
        let limits = self.board.config.yaml_limits();
        match t.area {
            Area::Doc(region) => Document::parse(region, &t.id, text, limits).ok(),
            Area::Pause => None,
            _ => Some(Document::loose(Region::Tasks, &t.id, text, limits)),
        }
    }

    /// Why the file is not a valid one of its kind, if it is not.
    pub(super) fn validate(&self, t: &Tracked, bytes: &[u8]) -> std::result::Result<(), String> {
        let limit = self.board.config.limits.max_doc_bytes;
        if matches!(t.area, Area::Solution | Area::Pause) {
            return Ok(());
        }
        if bytes.len() as u64 > limit {
            return Err(format!(
                "is {} bytes, over the limit of {limit} (limits.max_doc_bytes in board.yaml)",
                bytes.len()
            ));
        }
        let text = std::str::from_utf8(bytes).map_err(|e| {
            format!(
                "is not valid UTF-8 (invalid byte at offset {})",
                e.valid_up_to()
            )
        })?;
        crate::id::validate(&t.id).map_err(|_| {
            "file name is not a valid id ([a-z0-9][a-z0-9._-]{0,63}.md)".to_string()
        })?;
        let path = areas::abs(&self.board, &t.rel);
        let problem = |e: Error| match e {
            Error::InvalidDoc { problem, .. } => problem,
            other => other.to_string(),
        };
        match t.area {
            Area::Doc(region) => {
                let doc = store::parse_doc(&self.board, region, &t.id, text.to_string(), &path)
                    .map_err(problem)?;
                if region == Region::Tasks {
                    let workflow = &self.board.config.workflow;
                    match doc.status() {
                        Some(s) if workflow.is_state(s) => {}
                        Some(s) => {
                            return Err(format!(
                                "status '{s}' is not a state of the workflow ({})",
                                workflow.states.join(", ")
                            ));
                        }
                        None => return Err("has no status".into()),
                    }
                }
                Ok(())
            }
            Area::Agent => Document::parse(
                Region::Tasks,
                &t.id,
                text.to_string(),
                self.board.config.yaml_limits(),
            )
            .map(|_| ())
            .map_err(|e| e.to_string()),
            Area::Source => crate::watch::sources::parse(&self.board, &t.id, text)
                .map(|_| ())
                .map_err(|problems| problems.join("; ")),
            Area::Solution | Area::Pause => Ok(()),
        }
    }
}

/// The file as it is on disk now.
pub(super) enum Current {
    Missing,
    /// A symlink, FIFO, socket, device or directory where a file should be (never opened),
    /// or a file that cannot be read: why.
    Special(StatKey, String),
    /// Over the size limit: tracked by its stat alone, never read.
    Big(StatKey),
    File(StatKey, Vec<u8>),
}

/// Reads a tracked file without following symlinks or opening anything but a regular file.
pub(super) fn read_current(path: &std::path::Path, max_bytes: u64) -> Current {
    let Ok(meta) = std::fs::symlink_metadata(path) else {
        return Current::Missing;
    };
    if meta.is_dir() {
        // A directory is not a document, only a place for files (solutions/<task>/src),
        // which are looked at one by one.
        return Current::Missing;
    }
    let stat = StatKey::of(&meta);
    if meta.file_type().is_symlink() {
        let why =
            "is a symbolic link; documents must be regular files inside the board (not followed)";
        return Current::Special(stat, why.into());
    }
    if stat.special {
        return Current::Special(stat, "is not a regular file".into());
    }
    if meta.len() > max_bytes {
        return Current::Big(stat);
    }
    match std::fs::read(path) {
        Ok(bytes) => Current::File(stat, bytes),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Current::Missing,
        Err(e) => Current::Special(stat, format!("cannot be read: {e}")),
    }
}

/// What the shadow holds for a file over the size limit: its stat, so that any change of
/// the file is a change of the stand-in.
pub(super) fn big_stand_in(stat: StatKey) -> Vec<u8> {
    format!(
        "over the size limit: {} bytes, mtime {}, ctime {}, inode {}\n",
        stat.size, stat.mtime_ns, stat.ctime_ns, stat.ino
    )
    .into_bytes()
}

pub(super) fn recently_written(stat: StatKey) -> bool {
    let now = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as i64);
    now - stat.mtime_ns < SETTLE.as_nanos() as i64
}
