//! Reading documents safely, the locks, and (in [`write`]) the one protocol by which every
//! change to the board is made and logged (DESIGN §5). Readers take no lock: a rename
//! makes every read see the old or the new file, never half of one.

pub mod write;

pub use write::{Held, Step, Write, change, check_rev, hold, recover};

use std::fs::{self, File, OpenOptions};
use std::io::Read;
use std::path::{Path, PathBuf};

use crate::board::Board;
use crate::doc::{Document, Region};
use crate::error::{Error, Result};

/// An exclusive advisory lock (flock); released when dropped.
#[derive(Debug)]
pub struct Lock {
    _file: File,
}

/// Takes the lock named `name` under `.state/locks/`, waiting for it if another process
/// holds it. The lock file is never the document itself, because documents are replaced
/// by rename and a lock on a replaced inode protects nothing.
pub fn lock(board: &Board, name: &str) -> Result<Lock> {
    let (file, path) = open_lock(board, name)?;
    file.lock().map_err(|e| Error::io(&path, "lock", e))?;
    Ok(Lock { _file: file })
}

/// Takes the lock named `name` if nobody holds it (this process included, through
/// another handle); None if someone does.
pub fn try_lock(board: &Board, name: &str) -> Result<Option<Lock>> {
    let (file, path) = open_lock(board, name)?;
    match file.try_lock() {
        Ok(()) => Ok(Some(Lock { _file: file })),
        Err(std::fs::TryLockError::WouldBlock) => Ok(None),
        Err(std::fs::TryLockError::Error(e)) => Err(Error::io(&path, "lock", e)),
    }
}

fn open_lock(board: &Board, name: &str) -> Result<(File, PathBuf)> {
    let dir = crate::layout::locks_dir(&board.root);
    let path = crate::layout::lock_file(&board.root, name);
    let open = || {
        OpenOptions::new()
            .create(true)
            .truncate(false)
            .read(true)
            .write(true)
            .open(&path)
    };
    let file = match open() {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            // A fresh clone has no .state/ (it is git-ignored): make it on first use.
            fs::create_dir_all(&dir).map_err(|e| Error::io(&dir, "create directory", e))?;
            open().map_err(|e| Error::io(&path, "open lock file", e))?
        }
        Err(e) => return Err(Error::io(&path, "open lock file", e)),
    };
    Ok((file, path))
}

/// Reads a file that must be a regular file inside the board, within the size limit and
/// valid UTF-8. Symlinks are refused: a document is never read through one, since it could
/// point anywhere outside the board.
pub fn read_text(path: &Path, max_bytes: u64) -> Result<String> {
    let meta = fs::symlink_metadata(path).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => Error::NotFound {
            what: path.display().to_string(),
            hint: Default::default(),
        },
        _ => Error::io(path, "read", e),
    })?;
    if meta.file_type().is_symlink() {
        return Err(symlink_refused(path));
    }
    if !meta.is_file() {
        // Never opened: opening a FIFO would wait for a writer forever.
        return Err(not_regular(path));
    }
    read_regular(path, max_bytes)
}

pub fn symlink_refused(path: &Path) -> Error {
    Error::invalid_doc(
        path,
        "is a symbolic link; documents must be regular files inside the board (not followed)",
    )
}

pub fn not_regular(path: &Path) -> Error {
    Error::invalid_doc(path, "is not a regular file")
}

/// Like [`read_text`] for a path already known not to be a symlink (a directory listing
/// said so): one open and one fstat, which matters when a listing reads 100k files.
pub fn read_regular(path: &Path, max_bytes: u64) -> Result<String> {
    let file = File::open(path).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => Error::NotFound {
            what: path.display().to_string(),
            hint: Default::default(),
        },
        _ => Error::io(path, "read", e),
    })?;
    let meta = file.metadata().map_err(|e| Error::io(path, "read", e))?;
    if !meta.is_file() {
        return Err(not_regular(path));
    }
    if meta.len() > max_bytes {
        return Err(Error::invalid_doc(
            path,
            format!(
                "is {} bytes, over the limit of {max_bytes} (limits.max_doc_bytes in board.yaml); skipped",
                meta.len()
            ),
        ));
    }
    let mut bytes = Vec::with_capacity(meta.len() as usize + 1);
    // Read at most one byte past the limit in case the file grew since the fstat.
    file.take(max_bytes + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| Error::io(path, "read", e))?;
    if bytes.len() as u64 > max_bytes {
        return Err(Error::invalid_doc(
            path,
            format!(
                "is over the limit of {max_bytes} bytes (limits.max_doc_bytes in board.yaml); skipped"
            ),
        ));
    }
    String::from_utf8(bytes).map_err(|e| {
        Error::invalid_doc(
            path,
            format!(
                "is not valid UTF-8 (invalid byte at offset {})",
                e.utf8_error().valid_up_to()
            ),
        )
    })
}

/// Reads and parses a document, checking that its `id` agrees with its file name.
pub fn read_doc(board: &Board, region: Region, id: &str) -> Result<Document> {
    let path = board.doc_path(region, id);
    let text = read_text(&path, board.config.limits.max_doc_bytes).map_err(|e| match e {
        Error::NotFound { .. } => Error::NotFound {
            what: format!("{} '{id}' ({})", region.kind(), board.rel(&path)),
            hint: crate::msg!(
                "`",
                crate::error::Command::List(Some(region)),
                "` shows what exists"
            ),
        },
        // Name the file as every other message does: relative to the board.
        Error::InvalidDoc { problem, .. } => Error::invalid_doc(board.rel(&path), problem),
        e => e,
    })?;
    parse_doc(board, region, id, text, &path)
}

pub fn parse_doc(
    board: &Board,
    region: Region,
    id: &str,
    text: String,
    path: &Path,
) -> Result<Document> {
    let doc = Document::parse(region, id, text, board.config.yaml_limits())
        .map_err(|e| Error::invalid_doc(board.rel(path), e.to_string()))?;
    match doc.get("id") {
        Some(serde_json::Value::String(s)) if s == id => Ok(doc),
        Some(v) => Err(Error::invalid_doc(
            board.rel(path),
            format!(
                "its id {} does not match its file name (expected '{id}')",
                crate::yaml::render_inline(v)
            ),
        )),
        None => Err(Error::invalid_doc(board.rel(path), "has no id field")),
    }
}
