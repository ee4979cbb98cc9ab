//! Running `git`: every user has it, and its push with a pinned lease is an atomic
//! compare-and-swap on the remote. Arguments are passed as a vector, never through a shell.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::error::{Error, Result};

/// What a git command printed and how it ended.
#[derive(Debug)]
pub struct Output {
    pub success: bool,
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
}

/// A git repository (or a directory inside one) to run commands in.
#[derive(Clone, Debug)]
pub struct Git {
    dir: PathBuf,
    env: Vec<(String, PathBuf)>,
}

impl Git {
    pub fn new(dir: impl Into<PathBuf>) -> Git {
        Git {
            dir: dir.into(),
            env: Vec::new(),
        }
    }

    /// The same repository with an environment variable set for every command (for a
    /// private index: `GIT_INDEX_FILE`).
    pub fn with_env(mut self, key: &str, value: impl Into<PathBuf>) -> Git {
        self.env.push((key.to_string(), value.into()));
        self
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Runs git and returns its output whatever the exit status.
    pub fn output(&self, args: &[&str], stdin: Option<&[u8]>) -> Result<Output> {
        let mut cmd = Command::new("git");
        cmd.arg("-C").arg(&self.dir).args(args);
        // Never wait for a password or an editor: tavern runs unattended.
        cmd.env("GIT_TERMINAL_PROMPT", "0")
            .env("GIT_EDITOR", "true");
        for (k, v) in &self.env {
            cmd.env(k, v);
        }
        cmd.stdin(if stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
        let mut child = cmd
            .spawn()
            .map_err(|e| Error::io(&self.dir, "run git in", e))?;
        if let Some(bytes) = stdin {
            use std::io::Write as _;
            if let Some(mut pipe) = child.stdin.take() {
                pipe.write_all(bytes)
                    .map_err(|e| Error::io(&self.dir, "write to git in", e))?;
            }
        }
        let out = child
            .wait_with_output()
            .map_err(|e| Error::io(&self.dir, "run git in", e))?;
        Ok(Output {
            success: out.status.success(),
            code: out.status.code(),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        })
    }

    /// Runs git and returns its standard output, trimmed; a non-zero exit is an error that
    /// quotes git's own message.
    pub fn run(&self, args: &[&str]) -> Result<String> {
        let out = self.output(args, None)?;
        if !out.success {
            return Err(Error::Git {
                command: format!("git {}", args.join(" ")),
                dir: self.dir.clone(),
                message: out.stderr.trim().to_string(),
            });
        }
        Ok(out.stdout.trim_end().to_string())
    }

    /// A config value, or `None` when it is not set (or this is not a git repository).
    pub fn config(&self, key: &str) -> Result<Option<String>> {
        let out = self.output(&["config", "--get", key], None)?;
        Ok(out
            .success
            .then(|| out.stdout.trim().to_string())
            .filter(|v| !v.is_empty()))
    }
}
