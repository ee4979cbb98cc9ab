//! Where a directory sits in git, read from the files git writes (`.git`, `gitdir:`,
//! `commondir`) rather than by running git: every tavern command finds its board, and a
//! process start of git would cost more than the command itself.
//!
//! All worktrees of a repository share its common directory; the main worktree is the
//! directory holding it (`<common>/..` when the common directory is a `.git`). That is
//! where the one board of the repository lives, whichever worktree a command runs in.

use std::path::{Component, Path, PathBuf};

use serde::Serialize;

/// A git working tree found by walking up from a directory.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Repo {
    /// The top of the working tree the directory is in (the directory holding `.git`).
    pub worktree: PathBuf,
    /// This working tree's own git directory (`.git`, or `<common>/worktrees/NAME`).
    pub git_dir: PathBuf,
    /// The directory all worktrees share: objects, refs, config.
    pub common_dir: PathBuf,
    /// The main worktree (None when the common directory is a bare repository's).
    pub main: Option<PathBuf>,
    /// This is a linked worktree (`git worktree add`), not the main one.
    pub linked: bool,
}

impl Repo {
    /// The working tree holding `dir`, if `dir` is inside one: the nearest directory
    /// (`dir` itself or a parent) with a `.git`. A `.git` file is followed; it names a
    /// linked worktree's git directory when that holds a `commondir` file (a submodule's
    /// does not, and is a repository of its own).
    pub fn find(dir: &Path) -> Option<Repo> {
        dir.ancestors().find_map(Repo::at)
    }

    /// The repository whose worktree top is exactly `top`, if `top/.git` exists.
    pub fn at(top: &Path) -> Option<Repo> {
        let dot_git = top.join(".git");
        let meta = std::fs::metadata(&dot_git).ok()?;
        if meta.is_dir() {
            return Some(Repo::from_git_dir(top, dot_git));
        }
        let text = std::fs::read_to_string(&dot_git).ok()?;
        let target = text.lines().next()?.strip_prefix("gitdir:")?.trim();
        if target.is_empty() {
            return None;
        }
        let git_dir = normalize(&top.join(target));
        Some(Repo::from_git_dir(top, git_dir))
    }

    fn from_git_dir(top: &Path, git_dir: PathBuf) -> Repo {
        let common = std::fs::read_to_string(git_dir.join("commondir"))
            .ok()
            .map(|s| s.trim_end_matches(['\n', '\r']).to_string())
            .filter(|s| !s.is_empty());
        let (common_dir, linked) = match common {
            Some(c) => (normalize(&git_dir.join(c)), true),
            None => (git_dir.clone(), false),
        };
        let main = if linked {
            (common_dir.file_name().is_some_and(|n| n == ".git"))
                .then(|| common_dir.parent().map(Path::to_path_buf))
                .flatten()
        } else {
            Some(top.to_path_buf())
        };
        Repo {
            worktree: top.to_path_buf(),
            git_dir,
            common_dir,
            main,
            linked,
        }
    }

    /// `dir` (inside this worktree) as the same relative place in the main worktree.
    pub fn in_main(&self, dir: &Path) -> Option<PathBuf> {
        let main = self.main.as_ref()?;
        let rel = dir.strip_prefix(&self.worktree).ok()?;
        Some(main.join(rel))
    }

    /// Where tavern keeps what belongs to the repository and not to any worktree (the
    /// private index of the board branch, the sync lock): `<common>/tavern/`.
    pub fn tavern_dir(&self) -> PathBuf {
        self.common_dir.join("tavern")
    }
}

/// `a/b/../c` as `a/c`, without asking the file system (the paths git writes are plain).
fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                if !out.pop() {
                    out.push("..");
                }
            }
            c => out.push(c),
        }
    }
    out
}

/// How the board in use was found, for `tavern status` and messages.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum How {
    /// Named on the command line.
    Flag,
    /// `TAVERN_BOARD`.
    Env,
    /// The nearest `.tavern` walking up from the working directory.
    #[default]
    Cwd,
    /// The working directory is in a linked worktree: the main worktree's board.
    Worktree,
}

impl How {
    pub fn describe(self) -> &'static str {
        match self {
            How::Flag => "named on the command line",
            How::Env => "given by TAVERN_BOARD",
            How::Cwd => "the nearest .tavern above the working directory",
            How::Worktree => {
                "this is a linked git worktree; every worktree of a repository uses its main worktree's board"
            }
        }
    }
}

/// How a board was found and where it sits in git.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Found {
    pub how: How,
    /// The git working tree of the working directory, when in one.
    pub repo: Option<Repo>,
    /// A linked worktree's own checked-out `.tavern/`, which tavern never writes.
    pub ignored_copy: Option<PathBuf>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normalize_folds_parents() {
        assert_eq!(
            normalize(Path::new("/r/.git/worktrees/w/../..")),
            PathBuf::from("/r/.git")
        );
        assert_eq!(normalize(Path::new("/a/./b")), PathBuf::from("/a/b"));
    }

    #[test]
    fn linked_worktree_resolves_to_main() {
        let tmp = tempfile::tempdir().unwrap();
        let main = tmp.path().join("main");
        let wt = tmp.path().join("wt");
        let gd = main.join(".git/worktrees/wt");
        std::fs::create_dir_all(&gd).unwrap();
        std::fs::create_dir_all(wt.join("sub")).unwrap();
        std::fs::write(wt.join(".git"), format!("gitdir: {}\n", gd.display())).unwrap();
        std::fs::write(gd.join("commondir"), "../..\n").unwrap();
        let r = Repo::find(&wt.join("sub")).unwrap();
        assert!(r.linked);
        assert_eq!(r.worktree, wt);
        assert_eq!(r.common_dir, main.join(".git"));
        assert_eq!(r.main.as_deref(), Some(main.as_path()));
        assert_eq!(r.in_main(&wt.join("sub")), Some(main.join("sub")));
        let m = Repo::find(&main).unwrap();
        assert!(!m.linked);
        assert_eq!(m.common_dir, main.join(".git"));
    }
}
