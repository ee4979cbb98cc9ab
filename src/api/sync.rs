//! One board everywhere: connecting a board to a git remote, exchanging with it once or
//! for as long as the caller wants, and how the board stands with it.

use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;

use serde::Serialize;

use crate::board::Board;
use crate::error::{Error, Result};
use crate::sync::repo::Repo;

pub use crate::index::journal::Keeper as JournalKeeper;
pub use crate::sync::status::{Layout, Status, SyncState, UnconfirmedClaim};
pub use crate::sync::{Exchange, KeepOptions, Options};

/// A board connected to a remote (`sync init`).
#[derive(Clone, Debug, Serialize)]
pub struct Connected {
    pub remote: String,
    pub board: PathBuf,
    /// Whether the remote had a board branch (then it was fetched).
    pub remote_had_board: bool,
}

/// Connects the board of the repository around `cwd` to `remote`, and fetches the remote's
/// board branch if it has one. The board is `board` when there is one; else the one this
/// repository would have: the main worktree's when `cwd` is in it, else this worktree's.
pub fn init(cwd: &Path, board: Option<&Board>, remote: &str) -> Result<Connected> {
    let repo = Repo::find(cwd).ok_or_else(|| {
        Error::input(format!(
            "{} is not in a git repository: sync needs one",
            cwd.display()
        ))
    })?;
    let root = match board {
        Some(b) => b.root.clone(),
        None => repo
            .in_main(cwd)
            .and(repo.main.clone())
            .unwrap_or_else(|| repo.worktree.clone())
            .join(crate::layout::BOARD_DIR),
    };
    let had = crate::sync::init(&repo, &root, remote)?;
    // The holds made here before: pushed, or refused (exit 3) naming who holds them there.
    // The hold records are fetched first: the hooks' copy of other clones' holds starts here.
    if let Ok(board) = Board::open(&root) {
        if let Some(why) = crate::sync::claims::holds::elsewhere(&board, Some(remote))?.1 {
            return Err(Error::Unconfirmed {
                task: "holds".into(),
                remote: remote.to_string(),
                message: format!(
                    "connected, but the holds made here before could not be pushed: {why}; connecting again tries again"
                ),
            });
        }
        crate::holds::publish(&board, remote)?;
    }
    Ok(Connected {
        remote: remote.to_string(),
        board: root,
        remote_had_board: had,
    })
}

/// Which board is used and why, and how it is shared.
pub fn status(board: &Board) -> Result<Status> {
    crate::sync::status::status(board)
}

/// Exchanges with the remote once: records this clone's changes on the board branch,
/// merges the remote's, pushes, and follows the remote's claim records.
pub fn exchange(board: &Board, opts: &Options) -> Result<Exchange> {
    // The first exchange of hold records (a board connected by setting `tavern.remote`):
    // the holds made here before are pushed after it, as `sync init` pushes them.
    let first = !board
        .root
        .join(crate::sync::claims::holds::ELSEWHERE)
        .exists();
    let x = crate::sync::exchange(board, opts)?;
    if first && let Some(remote) = crate::sync::remote(board)? {
        crate::holds::publish(board, &remote)?;
    }
    Ok(x)
}

/// The remote this board is connected to, if any.
pub fn remote(board: &Board) -> Result<Option<String>> {
    crate::sync::remote(board)
}

/// Exchanges now, then every interval and soon after every local change, until `stop` is
/// set, handing each exchange's result to `report` (a failed one is tried again at the next
/// turn). A board connected to no remote is refused at once, as each turn would refuse it.
pub fn keep_exchanging(
    board: &Board,
    opts: &KeepOptions,
    stop: &AtomicBool,
    report: impl FnMut(&Result<Exchange>),
) -> Result<()> {
    if remote(board)?.is_none() {
        crate::sync::exchange(board, &opts.exchange)?;
    }
    crate::sync::keep_exchanging(board, opts, stop, report)
}
