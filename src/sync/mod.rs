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

pub mod branch;

use serde::Serialize;

use crate::error::Error;
use branch::{BoardGit, REF, REMOTE_REF};

/// What `tavern sync` did.
#[derive(Debug, Serialize)]
pub struct Exchange {
    pub remote: String,
    /// The board had changes since the last record, now a commit on the board branch.
    pub recorded: bool,
    /// up-to-date | pushed | fast-forwarded | diverged
    pub outcome: &'static str,
    pub commit: String,
}

/// Connects the repository's board to `remote` (git config `tavern.remote`, shared by
/// every worktree), and fetches the remote's board branch if it has one. Returns whether
/// the remote had one.
pub fn init(repo: &repo::Repo, root: &std::path::Path, remote: &str) -> Result<bool> {
    let bg = BoardGit::at(repo.clone(), root)?;
    let url = bg.git.output(&["remote", "get-url", remote], None)?;
    if !url.success {
        return Err(Error::input(format!(
            "git knows no remote '{remote}' in {}: add it with `git remote add {remote} URL` first",
            repo.common_dir.display()
        )));
    }
    bg.git.run(&["config", REMOTE_KEY, remote])?;
    let fetched = fetch(&bg, remote)?;
    if let Some(theirs) = &fetched
        && bg.rev(REF)?.is_none()
        && !root.join(crate::layout::BOARD_YAML).is_file()
    {
        bg.git.run(&["update-ref", REF, theirs])?;
        bg.materialize(theirs)?;
    }
    exclude_board(repo, root)?;
    Ok(fetched.is_some())
}

/// Keeps a board that the code branches do not track out of `git status`: its history is
/// the board branch (`.git/info/exclude`, never the user's .gitignore).
fn exclude_board(repo: &repo::Repo, root: &std::path::Path) -> Result<()> {
    let Some(main) = &repo.main else {
        return Ok(());
    };
    let Ok(rel) = root.strip_prefix(main) else {
        return Ok(());
    };
    let tracked = git::Git::new(root).output(
        &[
            "ls-files",
            "--error-unmatch",
            "--",
            crate::layout::BOARD_YAML,
        ],
        None,
    )?;
    if tracked.success {
        return Ok(());
    }
    let path = repo.common_dir.join("info").join("exclude");
    let line = format!("/{}/", rel.to_string_lossy());
    let text = std::fs::read_to_string(&path).unwrap_or_default();
    if text.lines().any(|l| l == line) {
        return Ok(());
    }
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, "create directory", e))?;
    }
    let mut new = text;
    if !new.is_empty() && !new.ends_with('\n') {
        new.push('\n');
    }
    new.push_str(&format!(
        "# the tavern board: its history is the branch tavern\n{line}\n"
    ));
    std::fs::write(&path, new).map_err(|e| Error::io(&path, "write", e))
}

/// Fetches the remote's board branch into REMOTE_REF; None when it has none.
fn fetch(bg: &BoardGit, remote: &str) -> Result<Option<String>> {
    let spec = format!("+{REF}:{REMOTE_REF}");
    let out = bg.git.output(&["fetch", "-q", remote, &spec], None)?;
    if !out.success {
        if out.stderr.contains("couldn't find remote ref") {
            return Ok(None);
        }
        return Err(Error::Git {
            command: format!("git fetch {remote} {spec}"),
            dir: bg.repo.common_dir.clone(),
            message: out.stderr.trim().to_string(),
        });
    }
    bg.rev(REMOTE_REF)
}

/// `tavern sync`: records the board on its branch, fetches the remote's, fast-forwards
/// whichever side is behind (the board on disk follows), and pushes with a lease on what
/// was fetched, so a concurrent push is never overwritten.
pub fn exchange(board: &Board) -> Result<Exchange> {
    let remote = remote(board)?.ok_or_else(|| {
        Error::input(format!(
            "the board {} is not connected to a remote: `tavern sync init [REMOTE]` connects it",
            board.root.display()
        ))
    })?;
    let bg = BoardGit::open(board)?;
    let (ours, recorded) = bg.commit("tavern sync: the board as it is")?;
    let theirs = fetch(&bg, &remote)?;
    let outcome = match &theirs {
        Some(t) if *t == ours => "up-to-date",
        Some(t) if is_ancestor(&bg, &ours, t)? => {
            bg.git.run(&["update-ref", REF, t, &ours])?;
            bg.materialize(t)?;
            "fast-forwarded"
        }
        Some(t) if !is_ancestor(&bg, t, &ours)? => "diverged",
        _ => {
            let lease = format!(
                "--force-with-lease={REF}:{}",
                theirs.as_deref().unwrap_or("")
            );
            bg.git
                .run(&["push", "-q", &lease, &remote, &format!("{REF}:{REF}")])?;
            bg.git.run(&["update-ref", REMOTE_REF, &ours])?;
            "pushed"
        }
    };
    if outcome == "diverged" {
        return Err(Error::conflict(
            &board.root,
            format!(
                "the board branch on '{remote}' and this clone's both changed since they last met; merging them is not done yet (this clone's changes are kept on the branch tavern, nothing was sent)"
            ),
        ));
    }
    Ok(Exchange {
        remote,
        recorded,
        outcome,
        commit: bg.rev(REF)?.unwrap_or_default(),
    })
}

fn is_ancestor(bg: &BoardGit, a: &str, b: &str) -> Result<bool> {
    Ok(bg
        .git
        .output(&["merge-base", "--is-ancestor", a, b], None)?
        .success)
}
