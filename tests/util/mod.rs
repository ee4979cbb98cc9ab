//! The harness every integration test uses: a board in a temp dir and real `tavern`
//! processes run against it, the way agents use it.

#![allow(dead_code)]

pub mod git;
pub mod procs;
pub mod skip;
pub mod watcher;

#[path = "../../fixtures/fixtures.rs"]
pub mod fixtures;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

pub const BIN: &str = env!("CARGO_BIN_EXE_tavern");

/// What a finished command left: its exit code and its output.
#[derive(Debug, Clone)]
pub struct Out {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl Out {
    /// The run as a transcript, `$ tavern ARGS`, its exit code, stdout and stderr: what
    /// tests that compare two ways of answering the same commands compare.
    pub fn transcript(&self, args: &[&str]) -> String {
        format!(
            "$ tavern {}\nexit {}\n{}\n{}",
            args.join(" "),
            self.code,
            self.stdout,
            self.stderr
        )
    }

    /// Asserts the exit code, printing the whole output when it is not the expected one.
    #[track_caller]
    pub fn code(&self, expected: i32) -> &Self {
        assert_eq!(
            self.code, expected,
            "exit code\nstdout:\n{}\nstderr:\n{}",
            self.stdout, self.stderr
        );
        self
    }

    #[track_caller]
    pub fn ok(&self) -> &Self {
        self.code(0)
    }

    #[track_caller]
    pub fn stdout_is(&self, expected: &str) -> &Self {
        assert_eq!(
            self.stdout, expected,
            "stdout (stderr was: {})",
            self.stderr
        );
        self
    }

    #[track_caller]
    pub fn stderr_is(&self, expected: &str) -> &Self {
        assert_eq!(
            self.stderr, expected,
            "stderr (stdout was: {})",
            self.stdout
        );
        self
    }

    #[track_caller]
    pub fn stderr_has(&self, needle: &str) -> &Self {
        assert!(
            self.stderr.contains(needle),
            "stderr lacks {needle:?}:\n{}",
            self.stderr
        );
        self
    }

    #[track_caller]
    pub fn stdout_has(&self, needle: &str) -> &Self {
        assert!(
            self.stdout.contains(needle),
            "stdout lacks {needle:?}:\n{}",
            self.stdout
        );
        self
    }

    /// The trimmed stdout, e.g. the id printed by `tavern new`.
    pub fn text(&self) -> String {
        self.stdout.trim().to_string()
    }

    /// stdout parsed as one JSON value.
    #[track_caller]
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.stdout)
            .unwrap_or_else(|e| panic!("stdout is not JSON ({e}):\n{}", self.stdout))
    }
}

/// A project directory in a temp dir, usually with a board in it.
pub struct TestBoard {
    dir: tempfile::TempDir,
}

impl TestBoard {
    /// A project with a fresh board (`tavern init` already run).
    pub fn new() -> TestBoard {
        let b = TestBoard::empty();
        b.run(&["init"]).ok();
        b
    }

    /// A project without a board.
    pub fn empty() -> TestBoard {
        TestBoard {
            dir: tempfile::tempdir().expect("temp dir"),
        }
    }

    /// The project directory (the one holding `.tavern`).
    pub fn root(&self) -> &Path {
        self.dir.path()
    }

    /// The `.tavern` directory.
    pub fn board(&self) -> PathBuf {
        self.dir.path().join(".tavern")
    }

    /// A `tavern` command run in the project, with a clean, fixed environment.
    pub fn cmd(&self, args: &[&str]) -> Command {
        let mut c = Command::new(BIN);
        c.args(args)
            .current_dir(self.root())
            .env_remove("TAVERN_BOARD")
            .env_remove("TAVERN_AGENT")
            .env_remove("TAVERN_KEEPER")
            .env("USER", "tester")
            .stdin(Stdio::null());
        c
    }

    /// Runs `tavern ARGS` and waits for it.
    pub fn run(&self, args: &[&str]) -> Out {
        output(self.cmd(args))
    }

    /// Runs `tavern ARGS` with `input` on standard input.
    pub fn run_stdin(&self, args: &[&str], input: &str) -> Out {
        use std::io::Write;
        let mut c = self.cmd(args);
        c.stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = c.spawn().expect("spawn tavern");
        child
            .stdin
            .take()
            .unwrap()
            .write_all(input.as_bytes())
            .unwrap();
        let o = child.wait_with_output().unwrap();
        Out {
            code: o.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&o.stdout).into(),
            stderr: String::from_utf8_lossy(&o.stderr).into(),
        }
    }

    /// Creates a task and returns its id.
    pub fn task(&self, title: &str, extra: &[&str]) -> String {
        let mut args = vec!["new", "task", "--title", title];
        args.extend_from_slice(extra);
        let out = self.run(&args);
        out.ok();
        out.text()
    }

    /// Declares fields of the board's own under `fields:` in board.yaml, as a user would,
    /// for `region` (tasks, observations, questions): writes and queries take them.
    pub fn declare_fields(&self, region: &str, fields: &[&str]) {
        let yaml = self.read("board.yaml");
        let line = format!("  {region}: []\n");
        assert!(yaml.contains(&line), "board.yaml has no `{line}`");
        let yaml = yaml.replace(&line, &format!("  {region}: [{}]\n", fields.join(", ")));
        self.write("board.yaml", yaml);
    }

    /// A file under `.tavern/`, as text.
    pub fn read(&self, rel: &str) -> String {
        std::fs::read_to_string(self.board().join(rel))
            .unwrap_or_else(|e| panic!("read {rel}: {e}"))
    }

    /// Writes a file under `.tavern/` directly, as an agent or editor would.
    pub fn write(&self, rel: &str, content: impl AsRef<[u8]>) {
        let path = self.board().join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, content).unwrap();
    }

    /// Every entry of log.yaml, parsed independently of tavern's own reader: the file must
    /// be one valid YAML sequence.
    pub fn log(&self) -> Vec<serde_json::Value> {
        let text = self.read("log.yaml");
        if text.trim().is_empty() {
            return Vec::new();
        }
        match serde_saphyr::from_str::<serde_json::Value>(&text) {
            Ok(serde_json::Value::Array(items)) => items,
            other => panic!("log.yaml is not a YAML sequence: {other:?}\n{text}"),
        }
    }
}

pub fn output(mut c: Command) -> Out {
    let o = c.output().expect("run tavern");
    Out {
        code: o.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&o.stdout).into(),
        stderr: String::from_utf8_lossy(&o.stderr).into(),
    }
}

/// Replaces every RFC 3339 UTC timestamp (`2026-11-22T10:04:05Z`, with optional millis)
/// by `<TIME>`, so outputs with real times can be compared exactly.
pub fn redact_times(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = String::with_capacity(s.len());
    let mut i = 0;
    let digits =
        |r: std::ops::Range<usize>| r.clone().all(|k| k < b.len() && b[k].is_ascii_digit());
    while i < b.len() {
        if i + 20 <= b.len()
            && digits(i..i + 4)
            && b[i + 4] == b'-'
            && digits(i + 5..i + 7)
            && b[i + 7] == b'-'
            && digits(i + 8..i + 10)
            && b[i + 10] == b'T'
            && digits(i + 11..i + 13)
            && b[i + 13] == b':'
            && digits(i + 14..i + 16)
            && b[i + 16] == b':'
            && digits(i + 17..i + 19)
        {
            let mut j = i + 19;
            if j < b.len() && b[j] == b'.' {
                j += 1;
                while j < b.len() && b[j].is_ascii_digit() {
                    j += 1;
                }
            }
            if j < b.len() && b[j] == b'Z' {
                out.push_str("<TIME>");
                i = j + 1;
                continue;
            }
        }
        let ch = s[i..].chars().next().unwrap();
        out.push(ch);
        i += ch.len_utf8();
    }
    out
}

/// Every file under `.tavern/` except runtime state, with its bytes: to prove that a
/// refused command touched nothing.
pub fn snapshot(b: &TestBoard) -> std::collections::BTreeMap<String, Vec<u8>> {
    fn walk(dir: &Path, root: &Path, out: &mut std::collections::BTreeMap<String, Vec<u8>>) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for e in entries.flatten() {
            let p = e.path();
            let rel = p.strip_prefix(root).unwrap().to_string_lossy().into_owned();
            if rel == ".state" {
                continue;
            }
            let t = e.file_type().unwrap();
            if t.is_dir() {
                walk(&p, root, out);
            } else if t.is_symlink() {
                out.insert(
                    rel,
                    std::fs::read_link(&p)
                        .unwrap()
                        .to_string_lossy()
                        .into_owned()
                        .into_bytes(),
                );
            } else {
                out.insert(rel, std::fs::read(&p).unwrap());
            }
        }
    }
    let mut out = std::collections::BTreeMap::new();
    walk(&b.board(), &b.board(), &mut out);
    out
}

/// What `check` (or `sources check`) prints on stderr for these problems, found in `dir`:
/// a line per problem, then the count.
pub fn problems_report<P: std::fmt::Display, Q: std::fmt::Display>(
    problems: &[(P, Q)],
    dir: &Path,
) -> String {
    let mut out: String = problems
        .iter()
        .map(|(path, problem)| format!("{path}: {problem}\n"))
        .collect();
    out.push_str(&format!(
        "{} problems in {}\n",
        problems.len(),
        dir.display()
    ));
    out
}

/// Whether `script` (util-linux), which gives a command a terminal, is here; when it is
/// not, the test is skipped through [`skip::missing`] (a failure under CI).
pub fn has_script() -> bool {
    let here = Command::new("script")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !here {
        skip::missing(
            "`script` (util-linux)",
            "apt-get install util-linux; the terminal path is not tested without it",
        );
    }
    here
}

/// Runs `tavern ARGS` (one shell-quoted string) under `script`, so its standard input and
/// output are a terminal, with `env` set. None (the test skipped, see [`has_script`]) when
/// `script` is missing: the caller returns.
pub fn at_terminal(b: &TestBoard, args: &str, env: &[(&str, &str)]) -> Option<Out> {
    if !has_script() {
        return None;
    }
    let mut c = Command::new("script");
    c.args(["-qec", &format!("'{BIN}' {args}"), "/dev/null"])
        .current_dir(b.root())
        .env_remove("TAVERN_BOARD")
        .env_remove("TAVERN_AGENT")
        .env_remove("TAVERN_KEEPER")
        .env_remove("NO_COLOR")
        .env_remove("PAGER")
        .env("TERM", "xterm")
        .env("USER", "tester")
        .stdin(Stdio::null());
    for (k, v) in env {
        c.env(k, v);
    }
    Some(output(c))
}

/// Runs tavern, killing it (and failing) if it does not finish within `secs`: a reader
/// that blocks on a hostile file must fail this test, not hang the suite.
pub fn run_bounded(b: &TestBoard, args: &[&str], secs: u64) -> Out {
    let mut child = b
        .cmd(args)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let start = std::time::Instant::now();
    loop {
        if child.try_wait().unwrap().is_some() {
            let o = child.wait_with_output().unwrap();
            return Out {
                code: o.status.code().unwrap_or(-1),
                stdout: String::from_utf8_lossy(&o.stdout).into(),
                stderr: String::from_utf8_lossy(&o.stderr).into(),
            };
        }
        if start.elapsed() > std::time::Duration::from_secs(secs) {
            let _ = child.kill();
            let _ = child.wait();
            panic!("tavern {args:?} did not finish within {secs}s");
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
}

/// Waits (up to a generous bound: shared machines) until `done` holds; never a fixed
/// sleep standing in for the condition.
#[track_caller]
pub fn eventually(what: &str, done: impl Fn() -> bool) {
    let end = std::time::Instant::now() + std::time::Duration::from_secs(120);
    while !done() {
        assert!(
            std::time::Instant::now() < end,
            "gave up waiting for {what}"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

/// Sets `c` to run as the tests run tavern: in `dir`, no board or agent of the caller's
/// (`TAVERN_BOARD`, `TAVERN_AGENT`), `USER=tester`, stdin closed.
pub fn as_tester<'a>(c: &'a mut Command, dir: &Path) -> &'a mut Command {
    c.current_dir(dir)
        .env_remove("TAVERN_BOARD")
        .env_remove("TAVERN_AGENT")
        .env_remove("TAVERN_KEEPER")
        .env("USER", "tester")
        .stdin(Stdio::null())
}
