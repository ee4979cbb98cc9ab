//! One board everywhere (DESIGN §12): git is the engine between worktrees, clones and
//! machines. [`git`] runs the `git` executable (its push is the compare-and-swap); this
//! module says whether a board is connected to a remote.

pub mod claims;
pub mod git;
pub mod repo;
pub mod status;

use crate::board::Board;
use crate::error::Result;

/// The git config key naming the remote a board is connected to (`tavern sync init`).
/// Kept in the repository's common config, so every worktree of a clone shares it.
pub const REMOTE_KEY: &str = "tavern.remote";

/// The remote this board is connected to, if any.
///
/// Every claim and transition asks, and most boards are not connected: a look at the
/// repository's own config file settles that without starting git (a process start costs
/// more than a claim). Only a config that mentions tavern, or includes other files, is
/// read through `git config`. A board outside git is never connected.
pub fn remote(board: &Board) -> Result<Option<String>> {
    let Some(repo) = repo::Repo::find(board.project()) else {
        return Ok(None);
    };
    if let Ok(text) = std::fs::read_to_string(repo.common_dir.join("config")) {
        let text = text.to_ascii_lowercase();
        if !text.contains("tavern") && !text.contains("[include") {
            return Ok(None);
        }
    }
    git::Git::new(board.project()).config(REMOTE_KEY)
}
