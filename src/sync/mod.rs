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
pub fn remote(board: &Board) -> Result<Option<String>> {
    git::Git::new(board.project()).config(REMOTE_KEY)
}
