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
    /// The signal that killed it, if one did.
    pub signal: Option<i32>,
    pub stdout: String,
    pub stderr: String,
}

impl Output {
    /// Why it failed, in a few words: the first line of git's message that says something,
    /// or the signal that killed it, or its exit code when it said nothing.
    pub fn why(&self) -> String {
        if let Some(line) = self.stderr.lines().map(str::trim).find(|l| !l.is_empty()) {
            return line.to_string();
        }
        match (self.signal, self.code) {
            (Some(n), _) => format!("killed by signal {n}{}", signal_name(n)),
            (None, Some(c)) => format!("exit code {c}, no message"),
            (None, None) => "ended without an exit code".to_string(),
        }
    }
}

/// ` (SIGKILL)` for 9, and so on for the signals a process is usually ended by.
fn signal_name(n: i32) -> &'static str {
    match n {
        1 => " (SIGHUP)",
        2 => " (SIGINT)",
        6 => " (SIGABRT)",
        9 => " (SIGKILL)",
        11 => " (SIGSEGV)",
        13 => " (SIGPIPE)",
        15 => " (SIGTERM)",
        _ => "",
    }
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
        let (out, stdout) = self.output_bytes(args, stdin)?;
        Ok(Output {
            stdout: String::from_utf8_lossy(&stdout).into_owned(),
            ..out
        })
    }

    /// Runs git and returns its output whatever the exit status, its standard output as
    /// bytes (the returned [`Output`]'s `stdout` is empty): for the contents of blobs.
    /// Standard input is written by a thread of its own while the output is read, so a
    /// git that answers as it reads (`cat-file --batch`) never waits on a full pipe.
    pub fn output_bytes(&self, args: &[&str], stdin: Option<&[u8]>) -> Result<(Output, Vec<u8>)> {
        let mut cmd = Command::new(program());
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
        let pipe = child.stdin.take();
        let (waited, written) = std::thread::scope(|s| {
            let writer = match (pipe, stdin) {
                (Some(mut pipe), Some(bytes)) => Some(s.spawn(move || {
                    use std::io::Write as _;
                    pipe.write_all(bytes)
                })),
                _ => None,
            };
            let waited = child.wait_with_output();
            let written = writer.map_or(Ok(()), |w| {
                w.join().unwrap_or_else(|_| {
                    Err(std::io::Error::other("the thread writing to git panicked"))
                })
            });
            (waited, written)
        });
        let out = waited.map_err(|e| Error::io(&self.dir, "run git in", e))?;
        // A git that died before reading all of its input (killed) closed the pipe: not an
        // error of ours, and not one to report as such (a broken pipe is what a closed
        // standard output says, which the CLI takes for success). Its exit status, below,
        // says what happened.
        if let Err(e) = written
            && e.kind() != std::io::ErrorKind::BrokenPipe
        {
            return Err(Error::io(&self.dir, "write to git in", e));
        }
        #[cfg(unix)]
        let signal = std::os::unix::process::ExitStatusExt::signal(&out.status);
        #[cfg(not(unix))]
        let signal = None;
        Ok((
            Output {
                success: out.status.success(),
                code: out.status.code(),
                signal,
                stdout: String::new(),
                stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
            },
            out.stdout,
        ))
    }

    /// Runs git as [`Git::output`] does (no standard input), for at most `limit`: None when
    /// it had not finished by then (it is killed).
    pub fn output_within(
        &self,
        args: &[&str],
        limit: std::time::Duration,
    ) -> Result<Option<Output>> {
        let mut cmd = Command::new(program());
        cmd.arg("-C").arg(&self.dir).args(args);
        cmd.env("GIT_TERMINAL_PROMPT", "0")
            .env("GIT_EDITOR", "true");
        for (k, v) in &self.env {
            cmd.env(k, v);
        }
        cmd.stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        let mut child = cmd
            .spawn()
            .map_err(|e| Error::io(&self.dir, "run git in", e))?;
        let started = std::time::Instant::now();
        loop {
            match child.try_wait() {
                Ok(Some(_)) => break,
                Ok(None) if started.elapsed() >= limit => {
                    let _ = child.kill();
                    let _ = child.wait();
                    return Ok(None);
                }
                Ok(None) => std::thread::sleep(std::time::Duration::from_millis(5)),
                Err(e) => return Err(Error::io(&self.dir, "run git in", e)),
            }
        }
        let out = child
            .wait_with_output()
            .map_err(|e| Error::io(&self.dir, "run git in", e))?;
        #[cfg(unix)]
        let signal = std::os::unix::process::ExitStatusExt::signal(&out.status);
        #[cfg(not(unix))]
        let signal = None;
        Ok(Some(Output {
            success: out.status.success(),
            code: out.status.code(),
            signal,
            stdout: String::new(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        }))
    }

    /// Runs git and returns its standard output, trimmed; a non-zero exit is an error that
    /// quotes git's own message.
    pub fn run(&self, args: &[&str]) -> Result<String> {
        let out = self.output(args, None)?;
        if !out.success {
            let message = match out.stderr.trim() {
                "" => out.why(),
                said => said.to_string(),
            };
            return Err(Error::Git {
                command: format!("git {}", args.join(" ")),
                dir: self.dir.clone(),
                message,
            });
        }
        Ok(out.stdout.trim_end().to_string())
    }

    /// A config value, or `None` when it is not set (or this is not a git repository).
    /// A value the repository's own config file sets is read from that file (no git
    /// started; it overrides the user's and the system's); otherwise git is asked.
    pub fn config(&self, key: &str) -> Result<Option<String>> {
        let overridden = [
            "GIT_CONFIG_COUNT",
            "GIT_CONFIG_PARAMETERS",
            "GIT_DIR",
            "GIT_COMMON_DIR",
            "GIT_CONFIG",
        ]
        .iter()
        .any(|v| std::env::var_os(v).is_some());
        if !overridden
            && let Some(repo) = super::repo::Repo::find(&self.dir)
            && let Ok(text) = std::fs::read_to_string(repo.common_dir.join("config"))
            && let Lookup::Set(v) = config_lookup(&text, key)
        {
            return Ok(Some(v).filter(|v| !v.is_empty()));
        }
        let out = self.output(&["config", "--get", key], None)?;
        Ok(out
            .success
            .then(|| out.stdout.trim().to_string())
            .filter(|v| !v.is_empty()))
    }
}

/// The lock file a remote's git said it could not create (`cannot lock ref …: Unable to
/// create '…/refs/heads/x.lock': File exists`), if a push failed on one: another push
/// holding the ref at that moment, or a git on the remote killed while it updated the ref
/// (then the file stays and every push of that ref fails until someone removes it).
pub fn remote_lock(stderr: &str) -> Option<String> {
    stderr.lines().find_map(|l| {
        let l = l.trim_start().strip_prefix("remote:")?.trim();
        if !l.contains("cannot lock ref") || !l.contains("File exists") {
            return None;
        }
        let start = l.find("Unable to create '")? + "Unable to create '".len();
        let len = l[start..].find("': File exists")?;
        Some(l[start..start + len].replace("/./", "/"))
    })
}

/// Git lost a race in this clone: another git process updated one of its refs (or held
/// the ref's lock, or the index's) at the same moment: `cannot lock ref 'R': is at X but
/// expected Y`, or `Unable to create '….lock': File exists`. Not a word about the remote:
/// the remote's own lock refusing a push says so on a `remote:` line, which is not counted.
/// Another tavern command of this clone, a git left running by a killed tavern process,
/// or the user's own git: tried again, never reported as the remote being unreachable.
pub fn local_race(stderr: &str) -> bool {
    stderr
        .lines()
        .map(str::trim_start)
        .filter(|l| !l.starts_with("remote:"))
        .any(|l| {
            l.contains("cannot lock ref")
                || (l.contains("Unable to create '") && l.contains(".lock': File exists"))
        })
}

/// The `git` executable, found on `PATH` once per process (a spawn by bare name would
/// search `PATH` again, one failed `exec` per directory before git's).
fn program() -> &'static std::ffi::OsStr {
    static PROGRAM: std::sync::OnceLock<std::ffi::OsString> = std::sync::OnceLock::new();
    PROGRAM.get_or_init(|| {
        use std::os::unix::fs::PermissionsExt as _;
        std::env::var_os("PATH")
            .and_then(|path| {
                std::env::split_paths(&path)
                    .filter(|d| d.is_absolute())
                    .map(|d| d.join("git"))
                    .find(|p| {
                        std::fs::metadata(p)
                            .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
                    })
            })
            .map(PathBuf::into_os_string)
            .unwrap_or_else(|| "git".into())
    })
}

/// What one git config file says of a key, read without starting git.
#[derive(Debug, PartialEq, Eq)]
pub enum Lookup {
    /// The file sets it (the last setting wins, as in git).
    Set(String),
    /// The file does not set it.
    Unset,
    /// The file could say more than this reader sees (it includes other files, uses
    /// per-worktree config, continues lines, or does not parse): ask git.
    Unsure,
}

/// Looks `key` (`section.name`, no subsection) up in the text of a git config file.
pub fn config_lookup(text: &str, key: &str) -> Lookup {
    let Some((want_section, want_name)) = key.rsplit_once('.') else {
        return Lookup::Unsure;
    };
    let lower = text.to_ascii_lowercase();
    if lower.contains("[include") || lower.contains("worktreeconfig") {
        return Lookup::Unsure;
    }
    let mut section = String::new();
    let mut found = Lookup::Unset;
    for raw in text.lines() {
        let line = raw.trim();
        if line.is_empty() || line.starts_with('#') || line.starts_with(';') {
            continue;
        }
        if let Some(rest) = line.strip_prefix('[') {
            let Some(end) = rest.find(']') else {
                return Lookup::Unsure;
            };
            let header = &rest[..end];
            // `[section]` (case-insensitive); `[section "sub"]` or `[section.sub]` is
            // another section than the one asked for.
            section = if header.contains(['"', '.', ' ', '\t']) {
                "\0".into()
            } else {
                header.to_ascii_lowercase()
            };
            let after = rest[end + 1..].trim_start();
            if !(after.is_empty() || after.starts_with('#') || after.starts_with(';')) {
                return Lookup::Unsure; // `[s] key = value` on one line
            }
            continue;
        }
        if section != want_section.to_ascii_lowercase() {
            if line.ends_with('\\') {
                return Lookup::Unsure;
            }
            continue;
        }
        let (name, value) = match line.split_once('=') {
            Some((n, v)) => (n.trim(), Some(v.trim())),
            None => (line, None),
        };
        if !name.eq_ignore_ascii_case(want_name) {
            continue;
        }
        let Some(value) = value else {
            found = Lookup::Set("true".into());
            continue;
        };
        match config_value(value) {
            Some(v) => found = Lookup::Set(v),
            None => return Lookup::Unsure,
        }
    }
    found
}

/// A config value: quotes removed, escapes read, a comment outside quotes cut off. None
/// for what this reader does not handle (a line continued on the next).
fn config_value(raw: &str) -> Option<String> {
    let mut out = String::new();
    let mut quoted = false;
    let mut chars = raw.chars();
    let mut pending_space = String::new();
    while let Some(c) = chars.next() {
        match c {
            '"' => quoted = !quoted,
            '\\' => {
                let e = chars.next()?;
                out.push_str(&pending_space);
                pending_space.clear();
                out.push(match e {
                    'n' => '\n',
                    't' => '\t',
                    'b' => '\u{8}',
                    '"' | '\\' => e,
                    _ => return None,
                });
            }
            '#' | ';' if !quoted => break,
            c if c.is_whitespace() && !quoted => pending_space.push(c),
            c => {
                out.push_str(&pending_space);
                pending_space.clear();
                out.push(c);
            }
        }
    }
    (!quoted).then_some(out)
}

/// What a repository's refs say of one ref, read without starting git.
#[derive(Debug, PartialEq, Eq)]
pub enum RefLookup {
    Found(String),
    Absent,
    /// Refs this reader does not know how to read (reftable, a symbolic ref): ask git.
    Unsure,
}

fn is_object_id(s: &str) -> bool {
    (s.len() == 40 || s.len() == 64) && s.bytes().all(|b| b.is_ascii_hexdigit())
}

/// The object a ref names, from the files git keeps them in (a loose ref, then
/// `packed-refs`). `common_dir` is the repository's common directory; `name` a full ref
/// name of the shared namespace (`refs/…`).
pub fn read_ref_file(common_dir: &Path, name: &str) -> RefLookup {
    if common_dir.join("reftable").exists() {
        return RefLookup::Unsure;
    }
    match std::fs::read_to_string(common_dir.join(name)) {
        Ok(text) => {
            let sha = text.trim_end();
            return if is_object_id(sha) {
                RefLookup::Found(sha.to_string())
            } else {
                RefLookup::Unsure
            };
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(_) => return RefLookup::Unsure,
    }
    match std::fs::read_to_string(common_dir.join("packed-refs")) {
        Ok(text) => text
            .lines()
            .filter(|l| !l.starts_with('#') && !l.starts_with('^'))
            .find_map(|l| {
                let (sha, n) = l.split_once(' ')?;
                (n == name && is_object_id(sha)).then(|| RefLookup::Found(sha.to_string()))
            })
            .unwrap_or(RefLookup::Absent),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => RefLookup::Absent,
        Err(_) => RefLookup::Unsure,
    }
}

/// Sets a ref of the shared namespace to `sha` the way git does for a loose ref (a
/// `NAME.lock` created exclusively, written, renamed over), without starting git. False
/// when it could not (reftable, the lock held by a git process, a path in the way): the
/// caller then asks `git update-ref`, which waits for the lock.
pub fn write_ref_file(common_dir: &Path, name: &str, sha: &str) -> bool {
    if common_dir.join("reftable").exists() || !is_object_id(sha) {
        return false;
    }
    let path = common_dir.join(name);
    let Some(dir) = path.parent() else {
        return false;
    };
    if std::fs::create_dir_all(dir).is_err() {
        return false;
    }
    let lock = path.with_file_name(format!(
        "{}.lock",
        path.file_name().unwrap_or_default().to_string_lossy()
    ));
    // Not synced, as git does not sync a loose ref unless core.fsync asks it to: this is
    // this clone's copy of a record the remote holds, and a fetch brings it back.
    let sha = format!("{sha}\n");
    crate::file::write_through(&lock, &path, sha.as_bytes(), crate::file::Durability::Cache).is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_remote_lock_is_named_from_pushs_message() {
        let stderr = "To ../r.git\n ! [remote rejected] HEAD -> tavern (failed to update ref)\nremote: error: cannot lock ref 'refs/heads/tavern': Unable to create '/srv/r.git/./refs/heads/tavern.lock': File exists.        \nremote: Another git process seems to be running\n";
        assert_eq!(
            remote_lock(stderr).as_deref(),
            Some("/srv/r.git/refs/heads/tavern.lock")
        );
        assert_eq!(
            remote_lock(
                "error: cannot lock ref 'refs/tavern/remote/tavern': is at a but expected b"
            ),
            None
        );
    }

    #[test]
    fn a_local_race_is_told_from_the_remotes_lock() {
        assert!(local_race(
            "error: cannot lock ref 'refs/tavern/remote/tavern': is at 1111 but expected 2222\n"
        ));
        assert!(local_race(
            "error: Unable to create '/p/.git/refs/heads/tavern.lock': File exists.\n"
        ));
        assert!(!local_race(
            "remote: error: cannot lock ref 'refs/heads/tavern': Unable to create '/srv/r.git/refs/heads/tavern.lock': File exists.\n"
        ));
        assert!(!local_race(
            "fatal: '/gone.git' does not appear to be a git repository\n"
        ));
    }

    #[test]
    fn config_values_are_read_as_git_reads_them() {
        let text = "[core]\n\tbare = false\n[Tavern]\n\tRemote = first\n[tavern \"x\"]\n\tremote = no\n[remote \"origin\"]\n\turl = ../r.git\n[tavern]\n\tremote = \"my remote\" # comment\n";
        assert_eq!(
            config_lookup(text, "tavern.remote"),
            Lookup::Set("my remote".into())
        );
        assert_eq!(
            config_lookup("[core]\n\tbare = false\n", "tavern.remote"),
            Lookup::Unset
        );
        assert_eq!(
            config_lookup("[tavern]\n\tremote = a\\\n b\n", "tavern.remote"),
            Lookup::Unsure
        );
        assert_eq!(
            config_lookup(
                "[include]\n\tpath = x\n[tavern]\nremote = a\n",
                "tavern.remote"
            ),
            Lookup::Unsure
        );
        assert_eq!(
            config_lookup("[tavern]\nremote = up ; c\n", "tavern.remote"),
            Lookup::Set("up".into())
        );
    }
}
