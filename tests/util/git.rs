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

/// `tavern ARGS` in `dir` as the tests of clones run it: no board or agent of the
/// caller's, `USER=tester`, git's test environment, stdin closed. `git_first` (if any)
/// goes first on PATH, so that the `git` tavern starts is the one found there (an
/// injected fault: [`fake_git`]).
pub fn tavern_cmd(dir: &Path, args: &[&str], git_first: Option<&Path>) -> Command {
    let mut c = Command::new(super::BIN);
    super::as_tester(c.args(args), dir);
    env(&mut c);
    if let Some(first) = git_first {
        let old = std::env::var_os("PATH").unwrap_or_default();
        let mut paths = vec![first.to_path_buf()];
        paths.extend(std::env::split_paths(&old));
        c.env("PATH", std::env::join_paths(paths).unwrap());
    }
    c
}

/// [`tavern_cmd`] started with its output piped, not waited for.
pub fn spawn(dir: &Path, args: &[&str], git_first: Option<&Path>) -> std::process::Child {
    tavern_cmd(dir, args, git_first)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("start tavern")
}

/// What a started tavern left once it ended.
pub fn finish(child: std::process::Child) -> super::Out {
    let o = child.wait_with_output().expect("wait for tavern");
    super::Out {
        code: o.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&o.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&o.stderr).into_owned(),
    }
}

/// The real git, found on PATH as tavern finds it.
pub fn real_git() -> PathBuf {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .map(|d| d.join("git"))
        .find(|p| p.is_file())
        .expect("git on PATH")
}

/// The directory `dir` (created), holding a `git` that runs `script` (sh; `$real` is the
/// real git, `$dir` the directory, for the files a fault leaves or waits for), then the
/// real git with the same arguments unless the script exits first. For `git_first`.
#[cfg(unix)]
pub fn fake_git(dir: &Path, script: &str) -> PathBuf {
    std::fs::create_dir_all(dir).unwrap();
    let text = format!(
        "#!/bin/sh\nreal='{}'\ndir='{}'\n{script}\nexec \"$real\" \"$@\"\n",
        real_git().display(),
        dir.display()
    );
    let path = dir.join("git");
    std::fs::write(&path, text).unwrap();
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    dir.to_path_buf()
}
