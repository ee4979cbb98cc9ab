//! Starting the index keeper (`watch::keeper`) from a read: a read of a big board that
//! finds no live change journal checks every file's stat data, which is most of what it
//! costs; with a journal the next reads check only what it names. So such a read starts a
//! keeper in the background, as git starts its file-system monitor daemon, unless the board
//! (`watch.keeper` in board.yaml) or the machine (`TAVERN_KEEPER`) says never.
//!
//! The library starts no program of its own choosing: the front-end names the program that
//! runs a keeper ([`set_program`]); without one (a test, another front-end) nothing starts.

use std::path::Path;
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

use crate::board::{Board, KeeperMode};

/// A directory whose index holds this many buckets (about 8,000 documents or more: a bucket
/// holds about a thousand, in a power of two) is big enough for `auto` to start a keeper.
const AUTO_BUCKETS: usize = 16;

/// A board of more documents than this (in all, as the watcher counts them) is big enough
/// for `auto` to have a stopping watcher hand its journal over to a keeper.
const AUTO_FILES: usize = 8_000;

/// Does `mode` want a keeper on a board of `files` documents?
pub(crate) fn wanted_for(mode: KeeperMode, files: usize) -> bool {
    match mode {
        KeeperMode::Never => false,
        KeeperMode::Always => true,
        KeeperMode::Auto => files > AUTO_FILES,
    }
}

/// A process starts a keeper at most this often (a long-lived server whose keeper stopped
/// when idle may start another).
const RESPAWN_AFTER: Duration = Duration::from_secs(60);

/// The command that runs a keeper for the board at a root (made only when one is to start).
type CommandFor = fn(&Path) -> Option<std::process::Command>;

static PROGRAM: OnceLock<CommandFor> = OnceLock::new();

/// Names the command that runs a keeper: the front-end sets it, once.
pub fn set_program(command: CommandFor) {
    let _ = PROGRAM.set(command);
}

/// The board's mode, unless this machine's `TAVERN_KEEPER` says otherwise.
pub fn mode(board: &Board) -> KeeperMode {
    KeeperMode::from_env().unwrap_or(board.config.watch.keeper)
}

/// A read found no live journal where it read a directory whose index has `buckets`
/// buckets: starts a keeper if `mode` asks for one and none is running or starting.
pub(crate) fn wanted(root: &Path, mode: KeeperMode, buckets: usize) {
    let big_enough = match mode {
        KeeperMode::Never => false,
        KeeperMode::Always => true,
        KeeperMode::Auto => buckets >= AUTO_BUCKETS,
    };
    if !big_enough {
        return;
    }
    if PROGRAM.get().is_none() {
        return;
    }
    static LAST: Mutex<Option<Instant>> = Mutex::new(None);
    let mut last = LAST.lock().unwrap_or_else(|e| e.into_inner());
    if last.is_some_and(|t| t.elapsed() < RESPAWN_AFTER)
        || super::journal::is_kept(root)
        || failed_lately(root)
    {
        return;
    }
    *last = Some(Instant::now());
    spawn(root, None);
}

/// Starts a keeper for the board at `root`, invited (`invitation`: the text of a stopping
/// watcher's invitation) or not: false when no front-end named the command, or it could
/// not start.
pub(crate) fn spawn(root: &Path, invitation: Option<&str>) -> bool {
    let Some(mut command) = PROGRAM.get().and_then(|program| program(root)) else {
        return false;
    };
    command.env_remove("TAVERN_KEEPER_INVITATION");
    if let Some(text) = invitation {
        command.env("TAVERN_KEEPER_INVITATION", text);
    }
    command
        .current_dir(root)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    // Its own process group: a Ctrl-C at the terminal that ran the read is not for it.
    #[cfg(unix)]
    std::os::unix::process::CommandExt::process_group(&mut command, 0);
    match command.spawn() {
        Ok(mut child) => {
            // Reaped when it ends, if this process still runs then (a server); a command
            // that ends first leaves it to init.
            std::thread::spawn(move || child.wait());
            true
        }
        Err(_) => false,
    }
}

/// After a keeper could not watch the board, how long reads start none.
const AFTER_FAILURE: Duration = Duration::from_secs(600);

fn failure_path(root: &Path) -> std::path::PathBuf {
    crate::layout::state_dir(root).join("keeper-failed")
}

/// A keeper could not watch the board (why): reads start none for [`AFTER_FAILURE`].
pub(crate) fn failed(root: &Path, why: &str) {
    let _ = std::fs::write(failure_path(root), format!("{why}\n"));
}

fn failed_lately(root: &Path) -> bool {
    std::fs::metadata(failure_path(root))
        .and_then(|m| m.modified())
        .is_ok_and(|t| t.elapsed().is_ok_and(|e| e < AFTER_FAILURE))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_keeper_that_could_not_watch_holds_reads_back_for_a_while() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join(".tavern");
        std::fs::create_dir_all(root.join(".state")).unwrap();
        assert!(!failed_lately(&root));
        failed(&root, "the inotify watch limit was reached");
        assert!(failed_lately(&root));
        // Long ago: reads start one again.
        let file = std::fs::File::options()
            .write(true)
            .open(failure_path(&root))
            .unwrap();
        let old = std::time::SystemTime::now() - AFTER_FAILURE - Duration::from_secs(1);
        file.set_modified(old).unwrap();
        assert!(!failed_lately(&root));
    }

    #[test]
    fn auto_wants_a_keeper_only_on_a_big_board() {
        assert!(!wanted_for(KeeperMode::Auto, AUTO_FILES));
        assert!(wanted_for(KeeperMode::Auto, AUTO_FILES + 1));
        assert!(wanted_for(KeeperMode::Always, 0));
        assert!(!wanted_for(KeeperMode::Never, 10_000_000));
    }
}
