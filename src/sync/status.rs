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
    /// How the board stands with that remote (connected boards on the board branch).
    pub sync: Option<SyncState>,
    /// Who keeps the change journal reads go by (`tavern watch`, or the index keeper a
    /// read started), if anyone: without one, reads check every file.
    pub journal: Option<crate::index::journal::Keeper>,
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
        journal: crate::index::journal::keeper(&board.root),
        layout,
        remote: if layout == Layout::NoGit {
            None
        } else {
            super::remote(board)?
        },
        sync: if layout == Layout::BoardBranch {
            sync_state(board)?
        } else {
            None
        },
    })
}

/// How a connected board stands with its remote, as of the last fetch (no network).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct SyncState {
    pub remote: String,
    /// The board branch's commit here (None before the first `tavern sync`).
    pub commit: Option<String>,
    /// The remote's board branch as last fetched (None: it had none, or never fetched).
    pub remote_commit: Option<String>,
    /// Board commits here the remote has not got (sent at the next sync).
    pub ahead: usize,
    /// Board commits on the remote not here yet (as of the last fetch).
    pub behind: usize,
    /// Files of the board changed since the last record (recorded and sent at the next
    /// sync).
    pub unrecorded: usize,
    /// Claims held here that the remote's records do not confirm: (task, holder).
    pub unconfirmed: Vec<UnconfirmedClaim>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct UnconfirmedClaim {
    pub task: String,
    pub holder: String,
}

/// The sync state of a board connected to a remote; None when it is not connected (or
/// is kept on the code branch, which `tavern sync` does not record).
pub fn sync_state(board: &Board) -> Result<Option<SyncState>> {
    let Some(remote) = super::remote(board)? else {
        return Ok(None);
    };
    let bg = super::branch::BoardGit::open(board)?;
    if super::refuse_code_branch(&bg).is_err() {
        return Ok(None);
    }
    let commit = bg.rev(super::branch::REF)?;
    let remote_commit = bg.rev(super::branch::REMOTE_REF)?;
    let count = |range: String| -> Result<usize> {
        let out = bg.git.output(&["rev-list", "--count", &range], None)?;
        Ok(out.stdout.trim().parse().unwrap_or(0))
    };
    let (ahead, behind) = match (&commit, &remote_commit) {
        (Some(c), Some(r)) => (count(format!("{r}..{c}"))?, count(format!("{c}..{r}"))?),
        (Some(c), None) => (count(c.clone())?, 0),
        (None, Some(r)) => (0, count(r.clone())?),
        (None, None) => (0, 0),
    };
    // What the next record would change: the board on disk against the board branch
    // (not against HEAD, which is the code's).
    let unrecorded = match &commit {
        Some(c) => bg.unrecorded(c)?.len(),
        None => 0,
    };
    let unconfirmed = super::claims::unconfirmed(board)?
        .into_iter()
        .map(|(task, holder)| UnconfirmedClaim { task, holder })
        .collect();
    Ok(Some(SyncState {
        remote,
        commit,
        remote_commit,
        ahead,
        behind,
        unrecorded,
        unconfirmed,
    }))
}
