//! `.state/runs/`: one file per command tavern runs for the board (a knowledge source's
//! activation, a completion check), holding its stdout and stderr.
//!
//! The files are how a person finds out why an activation failed, so they outlive the
//! command, but not forever: a busy watcher starts thousands of commands a day. Files older
//! than `watch.keep_runs` (board.yaml, default 7d) are removed by the watcher (at start and
//! then hourly) and by `tavern sweep`. A file's age is its mtime, which moves while its
//! command still writes; the watcher and `sweep` also spare the files of what the watcher
//! has on record as running now.

use std::collections::HashSet;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, SystemTime};

use crate::board::Board;
use crate::error::{Error, Result};

fn dir(board: &Board) -> PathBuf {
    crate::layout::runs_dir(&board.root)
}

/// Refuses a `.state/runs` that is a symlink (or not a directory): its target's files
/// would be written, and removed by the pruning, wherever it points.
fn refuse_unless_real_dir(board: &Board, dir: &Path) -> Result<()> {
    match std::fs::symlink_metadata(dir) {
        Ok(meta) if !meta.is_dir() => Err(Error::conflict(
            board.rel(dir),
            "is a symbolic link or not a directory: run outputs are written and removed only in a real directory; remove it and tavern makes one",
        )),
        _ => Ok(()),
    }
}

/// Creates the output file `name` for a command; returns it open for writing.
pub fn create(board: &Board, name: &str) -> Result<(File, PathBuf)> {
    let dir = dir(board);
    refuse_unless_real_dir(board, &dir)?;
    std::fs::create_dir_all(&dir).map_err(|e| Error::io(&dir, "create directory", e))?;
    let path = dir.join(name);
    // Streamed into as the command runs (not a whole-file write, so not `file::write`).
    let file = File::create(&path).map_err(|e| Error::io(&path, "create", e))?;
    Ok((file, path))
}

/// `sh -c CMD` in the project directory, in its own process group (so a timeout ends what
/// it started too), with stdout and stderr going to a new output file `name`. The caller
/// adds stdin and the environment, and starts it.
pub fn shell(board: &Board, name: &str, cmd: &str) -> Result<(Command, PathBuf)> {
    let (out, path) = create(board, name)?;
    let err = out.try_clone().map_err(|e| Error::io(&path, "create", e))?;
    let mut command = Command::new("sh");
    command
        .arg("-c")
        .arg(cmd)
        .current_dir(board.project())
        .stdout(out)
        .stderr(err);
    crate::process::own_group(&mut command);
    Ok((command, path))
}

/// A file-name-safe form of a value: ASCII letters, digits, `.`, `_` and `-` stay, the rest
/// becomes `_`.
pub fn file_safe(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// How long output files are kept, from board.yaml.
pub fn keep(board: &Board) -> Duration {
    crate::time::parse_duration(&board.config.watch.keep_runs)
        .and_then(|d| d.to_std().ok())
        .unwrap_or(Duration::from_secs(7 * 24 * 3600))
}

/// Removes the output files last written more than `keep` ago, except those in `spare`
/// (absolute paths). Returns how many it removed. Only regular files directly in the
/// directory are considered: a symlink or a directory someone put there is left alone.
pub fn prune(board: &Board, keep: Duration, spare: &HashSet<PathBuf>) -> Result<usize> {
    let dir = dir(board);
    refuse_unless_real_dir(board, &dir)?;
    let entries = match std::fs::read_dir(&dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(0),
        Err(e) => return Err(Error::io(&dir, "read directory", e)),
    };
    let Some(cutoff) = SystemTime::now().checked_sub(keep) else {
        return Ok(0);
    };
    let mut removed = 0;
    for entry in entries.flatten() {
        let path = entry.path();
        if spare.contains(&path) || !is_old_file(&path, cutoff) {
            continue;
        }
        match std::fs::remove_file(&path) {
            Ok(()) => removed += 1,
            // Another sweep took it first.
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(Error::io(&path, "remove", e)),
        }
    }
    Ok(removed)
}

fn is_old_file(path: &Path, cutoff: SystemTime) -> bool {
    std::fs::symlink_metadata(path)
        .is_ok_and(|m| m.file_type().is_file() && m.modified().is_ok_and(|mtime| mtime < cutoff))
}
