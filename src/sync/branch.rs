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
    /// The name board commits are made by.
    identity: String,
}

/// What [`BoardGit::record`] did.
pub struct Recorded {
    /// The board branch's commit.
    pub commit: String,
    /// A new commit was made.
    pub moved: bool,
    /// Files on disk left out of the record (the branch may not hold them).
    pub not_recorded: Vec<super::vet::Refusal>,
}

/// Machine-local files, never recorded whatever the board's .gitignore says: as git
/// ignore patterns (given to `add` as its excludes file), and as pathspecs (to take them
/// out of the index if an older record took them).
const MACHINE_LOCAL_IGNORED: &str = "/.state/\n/control/schedule.md\n/control/metrics.md\n.*.tmp\n";
const MACHINE_LOCAL: [&str; 4] = [
    crate::layout::STATE_DIR,
    crate::layout::SCHEDULE,
    crate::layout::METRICS,
    ":(glob)**/.*.tmp",
];

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
            identity: "tavern".into(),
        })
    }

    /// The commit a ref points at, if it exists: read from git's ref files (no process)
    /// when they say, else asked of git.
    pub fn rev(&self, name: &str) -> Result<Option<String>> {
        if name.starts_with("refs/") {
            match super::git::read_ref_file(&self.repo.common_dir, name) {
                super::git::RefLookup::Found(sha) => return Ok(Some(sha)),
                super::git::RefLookup::Absent => return Ok(None),
                super::git::RefLookup::Unsure => {}
            }
        }
        let out = self.git.output(
            &["rev-parse", "-q", "--verify", &format!("{name}^{{commit}}")],
            None,
        )?;
        Ok(out.success.then(|| out.stdout.trim().to_string()))
    }

    /// Records the board as it is on disk as a commit on the board branch; returns the
    /// branch's commit, whether it moved, and what was left out.
    ///
    /// Held: the log lock (so every change recorded comes with its log entry, and no
    /// entry is recorded half written), then the lock of the private index. Never
    /// recorded, whatever the board's .gitignore says: `.state/` and the other
    /// machine-local files. Then the change is vetted as one from another clone would be
    /// ([`super::vet`]): a file the branch may not hold (a symbolic link, a file outside
    /// the layout, one over its limit) stays out of the record; a document or board file
    /// gone from disk with no log entry that says a tavern command removed it refuses the
    /// whole record (exit 6, logged as an alert once, nothing sent), unless
    /// `opts.allow_deletions` logs each such deletion first.
    pub fn record(
        &self,
        board: &Board,
        message: &str,
        opts: &super::exchange::Options,
    ) -> Result<Recorded> {
        let appender = crate::log::Appender::lock(board)?;
        let _lock = self.lock()?;
        super::locks::heal_index(&self.index);
        let old = self.rev(REF)?;
        if !self.index.exists()
            && let Some(old) = &old
        {
            // Start from the branch: `add -A` then only hashes what changed.
            self.git.run(&["read-tree", old])?;
        }
        let excludes = self.machine_local_excludes()?;
        self.git.run(&[
            "-c",
            &format!("core.excludesFile={}", excludes.display()),
            "add",
            "-A",
            "--",
            ".",
        ])?;
        // Recorded once by an older tavern, or by a .gitignore without them: out again.
        let mut rm = vec!["rm", "-r", "-q", "--cached", "--ignore-unmatch", "--"];
        rm.extend(MACHINE_LOCAL);
        self.git.run(&rm)?;
        let mut tree = self.git.run(&["write-tree"])?;
        let old_tree = match &old {
            Some(old) => Some(self.git.run(&["rev-parse", &format!("{old}^{{tree}}")])?),
            None => None,
        };
        let mut not_recorded = Vec::new();
        if old_tree.as_deref() != Some(tree.as_str()) {
            let changes = super::vet::changes_between(&self.git, old_tree.as_deref(), &tree)?;
            let log_of = |tree: &str| self.blob(&format!("{tree}:{}", crate::layout::LOG));
            let vetted = super::vet::vet(
                board.config.limits.max_doc_bytes,
                &self.git,
                changes,
                || log_of(&tree),
            )?;
            let (gone, left_out): (Vec<_>, Vec<_>) =
                vetted.refused.into_iter().partition(|r| r.gone);
            if !gone.is_empty() {
                if !opts.allow_deletions {
                    return Err(self.refuse_deletions(&appender, board, &gone));
                }
                for r in &gone {
                    appender.append(crate::log::Entry {
                        actor: opts.actor.clone(),
                        op: "delete".into(),
                        doc: r.path.clone(),
                        note: Some(
                            "deleted outside tavern; recorded as deleted by a sync that allows deletions"
                                .into(),
                        ),
                        ..crate::log::Entry::default()
                    })?;
                }
                self.git.run(&["add", "--", crate::layout::LOG])?;
            }
            if !left_out.is_empty() {
                self.leave_out(old_tree.as_deref(), &left_out)?;
                super::alert::once_locked(
                    &appender,
                    board,
                    &format!("not recorded {}", super::alert::list(&left_out)),
                    &left_out[0].path,
                    format!(
                        "sync did not record files the board branch may not hold (they stay on disk here): {}",
                        super::alert::list(&left_out)
                    ),
                )?;
                not_recorded = left_out;
            }
            if !gone.is_empty() || !not_recorded.is_empty() {
                tree = self.git.run(&["write-tree"])?;
            }
        }
        if let Some(old) = &old
            && old_tree.as_deref() == Some(tree.as_str())
        {
            return Ok(Recorded {
                commit: old.clone(),
                moved: false,
                not_recorded,
            });
        }
        let parents: Vec<&str> = old.iter().map(String::as_str).collect();
        let commit = self.commit_tree(&tree, &parents, message)?;
        let zero = "0".repeat(40);
        self.git.run(&[
            "update-ref",
            "-m",
            "tavern: record the board",
            REF,
            &commit,
            old.as_deref().unwrap_or(&zero),
        ])?;
        Ok(Recorded {
            commit,
            moved: true,
            not_recorded,
        })
    }

    /// The files on disk the next record would change against commit `rev` of the
    /// branch: changed, deleted or new (what the record leaves out anyway, machine-local
    /// files, is not counted). Read-only: git takes no lock for it.
    pub fn unrecorded(&self, rev: &str) -> Result<std::collections::BTreeSet<String>> {
        let excludes = self.machine_local_excludes()?;
        let changed = self.git.run(&[
            "--no-optional-locks",
            "diff",
            "--name-only",
            "--no-renames",
            rev,
            "--",
            ".",
        ])?;
        let new = self.git.run(&[
            "--no-optional-locks",
            "-c",
            &format!("core.excludesFile={}", excludes.display()),
            "ls-files",
            "--others",
            "--exclude-standard",
        ])?;
        Ok(changed
            .lines()
            .chain(new.lines())
            .filter(|l| !l.is_empty())
            .map(str::to_string)
            .collect())
    }

    /// The excludes file of the record's `git add`: the machine-local files.
    fn machine_local_excludes(&self) -> Result<PathBuf> {
        let path = self.repo.tavern_dir().join("exclude");
        if std::fs::read_to_string(&path).ok().as_deref() != Some(MACHINE_LOCAL_IGNORED) {
            // Written again whenever it differs: a lost one costs a rewrite.
            crate::file::write(
                &path,
                MACHINE_LOCAL_IGNORED.as_bytes(),
                crate::file::Durability::Cache,
            )?;
        }
        Ok(path)
    }

    /// The refusal of a record that would delete what nobody deleted: logged once as an
    /// alert, and the error that says how to put the files back or record the deletion.
    fn refuse_deletions(
        &self,
        appender: &crate::log::Appender<'_>,
        board: &Board,
        gone: &[super::vet::Refusal],
    ) -> Error {
        let names: Vec<&str> = gone.iter().map(|r| r.path.as_str()).collect();
        let shown = super::alert::list(gone);
        if let Err(e) = super::alert::once_locked(
            appender,
            board,
            &format!("refused record {}", names.join(" ")),
            names[0],
            format!(
                "sync refused to record the board: {} file(s) gone from it that no tavern command removed: {shown}",
                gone.len()
            ),
        ) {
            return e;
        }
        let board_dir = board.root.display();
        let mut shown: String = names
            .iter()
            .take(20)
            .copied()
            .collect::<Vec<_>>()
            .join(", ");
        if names.len() > 20 {
            shown.push_str(", …");
        }
        Error::Request {
            kind: crate::error::Kind::Invalid,
            path: Some(board.root.clone()),
            message: crate::msg!(
                format!(
                    "refused to record the board: {} file(s) are gone from it, and no log entry says a tavern command removed them (an archive, a logged deletion): {shown}. Nothing was recorded or sent (logged as an alert). If they went by accident, put them back from the board branch: `git archive {BRANCH} -- PATH | tar -x -C {board_dir}`; if they were deleted on purpose, `",
                    gone.len()
                ),
                crate::error::Command::SyncAllowingDeletions,
                "` logs each deletion and records it"
            ),
        }
    }

    /// Puts the private index's entries of `paths` back as they are in `old_tree` (or
    /// out of it when it has none).
    fn leave_out(&self, old_tree: Option<&str>, refused: &[super::vet::Refusal]) -> Result<()> {
        let old: std::collections::HashMap<String, (String, String)> = match old_tree {
            Some(t) => super::merge::ls_tree(&self.git, t)?,
            None => Default::default(),
        }
        .into_iter()
        .collect();
        let zero = "0".repeat(40);
        let mut info = String::new();
        for r in refused {
            match old.get(&r.path) {
                Some((mode, sha)) => info.push_str(&format!("{mode} {sha}\t{}\n", r.path)),
                None => info.push_str(&format!("0 {zero}\t{}\n", r.path)),
            }
        }
        let out = self
            .git
            .output(&["update-index", "--index-info"], Some(info.as_bytes()))?;
        if !out.success {
            return Err(Error::Git {
                command: "git update-index --index-info".into(),
                dir: self.root.clone(),
                message: out.stderr.trim().to_string(),
            });
        }
        Ok(())
    }

    /// The bytes of an object (`REV:PATH`), empty when there is none.
    fn blob(&self, spec: &str) -> Result<Vec<u8>> {
        let out = self.git.output(&["cat-file", "blob", spec], None)?;
        Ok(if out.success {
            out.stdout.into_bytes()
        } else {
            Vec::new()
        })
    }

    /// A commit of `tree` with `parents`, by the acting agent: board commits carry
    /// tavern's own identity (the actor's name), so a clone with no git identity
    /// configured records as well as any (the user's git config is never read for it,
    /// nor written; GIT_AUTHOR_* and GIT_COMMITTER_* in the environment still win).
    pub fn commit_tree(&self, tree: &str, parents: &[&str], message: &str) -> Result<String> {
        let name = format!("user.name={}", self.identity);
        let mut args = vec![
            "-c",
            name.as_str(),
            "-c",
            "user.email=tavern@localhost",
            "commit-tree",
            "--no-gpg-sign",
            tree,
            "-m",
            message,
        ];
        for p in parents {
            args.extend(["-p", p]);
        }
        self.git.run(&args)
    }

    /// The same repository, its board commits made by `actor`.
    pub fn acting_as(mut self, actor: &str) -> BoardGit {
        let clean: String = actor
            .chars()
            .filter(|c| !c.is_control() && !matches!(c, '<' | '>' | '\n'))
            .collect();
        if !clean.trim().is_empty() {
            self.identity = clean.trim().to_string();
        }
        self
    }

    /// git for talking to the remote: run where the repository's own commands run (its
    /// work tree's top), so that a relative remote URL (`../remote.git`) means what it
    /// means to `git fetch` there, not something relative to the board directory.
    pub fn remote_git(&self) -> Git {
        let top = self
            .repo
            .main
            .clone()
            .unwrap_or_else(|| self.repo.worktree.clone());
        Git::new(top).with_env("GIT_DIR", &self.repo.common_dir)
    }

    /// Writes the tree of `new` into the board directory, which holds `old` (what the
    /// private index records): the files that differ between them are replaced, added or
    /// removed, nothing else. A file written since `old` was recorded that `new` would
    /// replace makes git refuse before it writes anything: `Ok(false)`, record and try
    /// again. Without `old` (a board fetched into an empty directory) the whole tree is
    /// written.
    pub fn materialize(&self, old: Option<&str>, new: &str) -> Result<bool> {
        let _lock = self.lock()?;
        super::locks::heal_index(&self.index);
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

    /// The lock of the private index: held while git reads or writes it.
    fn lock(&self) -> Result<std::fs::File> {
        lock_file(&self.repo.tavern_dir().join("branch.lock"))
    }

    /// The lock of a whole exchange with the remote, held by `tavern sync` (and each turn
    /// of `sync --watch` and a connected `tavern watch`) from its first record to its
    /// last ref update. One clone may run several of them (a `sync --watch` beside a
    /// connected `watch`, a `tavern sync` typed meanwhile): each reads the branch, the
    /// remote's branch and the board, then writes all three, so two at once would each
    /// act on what the other is changing. They take turns; the second usually finds
    /// nothing left to do.
    pub fn exchange_lock(&self) -> Result<std::fs::File> {
        lock_file(&self.repo.tavern_dir().join("sync.lock"))
    }

    /// A fresh index file of this process alone, removed when dropped: a merge builds its
    /// tree in one, so that nothing else can empty or rewrite it halfway.
    pub fn scratch_index(&self) -> ScratchIndex {
        static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let path = self
            .repo
            .tavern_dir()
            .join(format!("merge-index.{}.{n}", std::process::id()));
        let _ = std::fs::remove_file(&path);
        ScratchIndex(path)
    }
}

impl BoardGit {
    /// A fresh directory of this process alone for scratch files, removed with what it
    /// holds when dropped.
    pub fn scratch_dir(&self) -> Result<ScratchDir> {
        static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let path = self
            .repo
            .tavern_dir()
            .join(format!("scratch.{}.{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&path);
        std::fs::create_dir_all(&path).map_err(|e| Error::io(&path, "create directory", e))?;
        Ok(ScratchDir(path))
    }
}

/// A scratch directory that is removed with its files when dropped.
pub struct ScratchDir(pub PathBuf);

impl Drop for ScratchDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// An index file that is removed (with git's lock beside it) when dropped.
pub struct ScratchIndex(pub PathBuf);

impl Drop for ScratchIndex {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
        let mut lock = self.0.clone().into_os_string();
        lock.push(".lock");
        let _ = std::fs::remove_file(lock);
    }
}

fn lock_file(path: &std::path::Path) -> Result<std::fs::File> {
    let f = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(path)
        .map_err(|e| Error::io(path, "open lock file", e))?;
    f.lock().map_err(|e| Error::io(path, "lock", e))?;
    Ok(f)
}
