//! `tavern status`: which board a command uses and why, how it is laid out, and whether
//! it is connected to a remote and in step with it.

use std::path::PathBuf;

use serde::Serialize;

use crate::board::Board;
use crate::error::Result;
use crate::sync::git::Git;
use crate::sync::repo::{How, Repo};

/// Where the board's history is kept.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Layout {
    /// Not in a git repository: plain files, nothing is shared but the directory.
    NoGit,
    /// `.tavern/` is tracked on the code branches (the layout of boards made before the
    /// board branch): it travels with `git pull`, safe to merge but mixed with code.
    CodeBranch,
    /// `.tavern/` is not tracked by the code branches; its history is the board branch.
    BoardBranch,
}

/// What `tavern status` reports.
#[derive(Debug, Serialize)]
pub struct Status {
    /// The `.tavern` directory in use.
    pub board: PathBuf,
    pub how: How,
    /// Why this board: a sentence.
    pub why: String,
    pub repo: Option<Repo>,
    /// How many worktrees the repository has (they all use this board).
    pub worktrees: usize,
    /// A linked worktree's own checked-out `.tavern/`, never written.
    pub ignored_copy: Option<PathBuf>,
    pub layout: Layout,
    /// The git remote the board is connected to (`tavern sync init`), if any.
    pub remote: Option<String>,
}

/// Reads the status of a board (this runs git, unlike every other command's discovery).
pub fn status(board: &Board) -> Result<Status> {
    let repo = board
        .found
        .repo
        .clone()
        .or_else(|| Repo::find(board.project()));
    let worktrees = repo.as_ref().map_or(0, |r| {
        1 + std::fs::read_dir(r.common_dir.join("worktrees"))
            .map(|d| d.filter(|e| e.is_ok()).count())
            .unwrap_or(0)
    });
    let layout = match &repo {
        None => Layout::NoGit,
        Some(_) => {
            // Asked where the file is: a board above the worktree is nobody's branch.
            let tracked = Git::new(&board.root)
                .output(&["ls-files", "--error-unmatch", "--", "board.yaml"], None)?;
            if tracked.success {
                Layout::CodeBranch
            } else {
                Layout::BoardBranch
            }
        }
    };
    Ok(Status {
        board: board.root.clone(),
        how: board.found.how,
        why: board.found.how.describe().to_string(),
        repo,
        worktrees,
        ignored_copy: board.found.ignored_copy.clone(),
        layout,
        remote: if layout == Layout::NoGit {
            None
        } else {
            super::remote(board)?
        },
    })
}
