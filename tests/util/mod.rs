//! The harness every integration test uses: a board in a temp dir and real `tavern`
//! processes run against it, the way agents use it.

#![allow(dead_code)]

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
