//! Real git repositories for the tests of worktrees, clones and sync: a fixed identity,
//! no user or system configuration, and a local bare repository as the remote.

use std::path::{Path, PathBuf};
use std::process::Command;

/// A git command in `dir` with a clean, fixed environment.
pub fn cmd(dir: &Path, args: &[&str]) -> Command {
    let mut c = Command::new("git");
    c.arg("-C").arg(dir).args(args);
    env(&mut c);
    c
}

/// The environment every git (and every tavern that runs git) gets in tests.
pub fn env(c: &mut Command) {
    c.env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_AUTHOR_NAME", "Test")
        .env("GIT_AUTHOR_EMAIL", "test@example.com")
        .env("GIT_COMMITTER_NAME", "Test")
        .env("GIT_COMMITTER_EMAIL", "test@example.com")
        .env("GIT_TERMINAL_PROMPT", "0");
}

/// Runs git and returns its trimmed stdout; panics with its stderr if it fails.
#[track_caller]
pub fn git(dir: &Path, args: &[&str]) -> String {
    let o = cmd(dir, args).output().expect("run git");
    assert!(
        o.status.success(),
        "git {args:?} in {}: {}",
        dir.display(),
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8_lossy(&o.stdout).trim_end().to_string()
}

/// `git init` with branch `main` and one commit of whatever `dir` holds.
pub fn init_repo(dir: &Path) {
    std::fs::create_dir_all(dir).unwrap();
    git(dir, &["init", "-q", "-b", "main"]);
    std::fs::write(dir.join("README"), "a project\n").unwrap();
    git(dir, &["add", "-A"]);
    git(dir, &["commit", "-q", "-m", "start"]);
}

/// A bare repository at `dir`, to serve as the remote.
pub fn bare(dir: &Path) -> PathBuf {
    git(
        dir.parent().unwrap(),
        &["init", "-q", "--bare", "-b", "main", dir.to_str().unwrap()],
    );
    dir.to_path_buf()
}
