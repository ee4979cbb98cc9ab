//! The board's own history: the branch `tavern`, written with plumbing through a private
//! index under the common git directory (`git add -A` with `GIT_INDEX_FILE`, `write-tree`,
//! `commit-tree`, `update-ref` with the expected old value), so recording the board never
//! touches the user's HEAD, index, branches or working tree, and `git log -p tavern` is
//! the board's history.

use std::path::PathBuf;

use crate::board::Board;
use crate::error::{Error, Result};
use crate::sync::git::Git;
use crate::sync::repo::Repo;

/// The board branch.
pub const BRANCH: &str = "tavern";
pub const REF: &str = "refs/heads/tavern";
/// Where the last fetch left the remote's board branch.
pub const REMOTE_REF: &str = "refs/tavern/remote/tavern";

/// The board's repository, and git set up to see the board directory as its work tree.
pub struct BoardGit {
    pub repo: Repo,
    /// git with the common directory as GIT_DIR, the board as work tree, a private index.
    pub git: Git,
    pub index: PathBuf,
    /// The board directory.
    pub root: PathBuf,
}

impl BoardGit {
    pub fn open(board: &Board) -> Result<BoardGit> {
        let repo = board
            .found
            .repo
            .clone()
            .or_else(|| Repo::find(board.project()))
            .ok_or_else(|| {
                Error::input(format!(
                    "{} is not in a git repository: the board branch and sync need one",
                    board.root.display()
                ))
            })?;
        BoardGit::at(repo, &board.root)
    }

    /// The board directory `root` of `repo` (which may not exist yet).
    pub fn at(repo: Repo, root: &std::path::Path) -> Result<BoardGit> {
        let dir = repo.tavern_dir();
        std::fs::create_dir_all(&dir).map_err(|e| Error::io(&dir, "create directory", e))?;
        std::fs::create_dir_all(root).map_err(|e| Error::io(root, "create directory", e))?;
        let index = dir.join("index");
        let git = Git::new(root)
            .with_env("GIT_DIR", &repo.common_dir)
            .with_env("GIT_WORK_TREE", root)
            .with_env("GIT_INDEX_FILE", &index);
        Ok(BoardGit {
            repo,
            git,
            index,
            root: root.to_path_buf(),
        })
    }

    /// The commit a ref points at, if it exists.
    pub fn rev(&self, name: &str) -> Result<Option<String>> {
        let out = self.git.output(
            &["rev-parse", "-q", "--verify", &format!("{name}^{{commit}}")],
            None,
        )?;
        Ok(out.success.then(|| out.stdout.trim().to_string()))
    }

    /// Records the board as it is on disk (what its .gitignore does not exclude) as a
    /// commit on the board branch; returns the branch's commit and whether it moved.
    pub fn commit(&self, message: &str) -> Result<(String, bool)> {
        let _lock = self.lock()?;
        let old = self.rev(REF)?;
        if !self.index.exists()
            && let Some(old) = &old
        {
            // Start from the branch: `add -A` then only hashes what changed.
            self.git.run(&["read-tree", old])?;
        }
        self.git.run(&["add", "-A", "--", "."])?;
        let tree = self.git.run(&["write-tree"])?;
        if let Some(old) = &old
            && self.git.run(&["rev-parse", &format!("{old}^{{tree}}")])? == tree
        {
            return Ok((old.clone(), false));
        }
        let mut args = vec!["commit-tree", tree.as_str(), "-m", message];
        if let Some(old) = &old {
            args.extend(["-p", old.as_str()]);
        }
        let commit = self.git.run(&args)?;
        let zero = "0".repeat(40);
        self.git.run(&[
            "update-ref",
            "-m",
            "tavern: record the board",
            REF,
            &commit,
            old.as_deref().unwrap_or(&zero),
        ])?;
        Ok((commit, true))
    }

    /// Writes the tree of `new` into the board directory, which holds `old` (what the
    /// private index records): the files that differ between them are replaced, added or
    /// removed, nothing else. A file written since `old` was recorded that `new` would
    /// replace makes git refuse before it writes anything: `Ok(false)`, record and try
    /// again. Without `old` (a board fetched into an empty directory) the whole tree is
    /// written.
    pub fn materialize(&self, old: Option<&str>, new: &str) -> Result<bool> {
        let _lock = self.lock()?;
        let out = match old {
            Some(old) => self
                .git
                .output(&["read-tree", "-m", "-u", old, new], None)?,
            None => self
                .git
                .output(&["read-tree", "--reset", "-u", new], None)?,
        };
        if out.success {
            return Ok(true);
        }
        if out.stderr.contains("would be overwritten") || out.stderr.contains("not uptodate") {
            return Ok(false);
        }
        Err(Error::Git {
            command: format!("git read-tree -m -u {} {new}", old.unwrap_or("")),
            dir: self.repo.common_dir.clone(),
            message: out.stderr.trim().to_string(),
        })
    }

    fn lock(&self) -> Result<std::fs::File> {
        let path = self.repo.tavern_dir().join("branch.lock");
        let f = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)
            .map_err(|e| Error::io(&path, "open lock file", e))?;
        f.lock().map_err(|e| Error::io(&path, "lock", e))?;
        Ok(f)
    }
}
