//! A `tavern watch --json` process running on a test board, and what it printed.

use std::io::BufRead;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::Value;

use super::{BIN, Out, TestBoard};

/// How long a test waits for something the watcher should do (generous: shared machines).
pub const PATIENCE: Duration = Duration::from_secs(60);

pub struct Watcher {
    child: Child,
    lines: Receiver<String>,
    /// Everything printed on stderr so far.
    stderr: Arc<Mutex<String>>,
    /// The thread copying stderr; it ends when every holder of the pipe has exited.
    stderr_reader: std::thread::JoinHandle<()>,
    /// Every JSON line printed so far.
    pub seen: Vec<Value>,
}

impl Watcher {
    /// Starts `tavern watch --json ARGS` and waits until it watches.
    pub fn start(b: &TestBoard, args: &[&str]) -> Watcher {
        let mut all = vec!["watch", "--json"];
        all.extend_from_slice(args);
        let mut cmd = b.cmd(&all);
        cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
        let mut child = cmd.spawn().expect("spawn tavern watch");
        let stderr = Arc::new(Mutex::new(String::new()));
        let err_pipe = child.stderr.take().unwrap();
        let err_text = Arc::clone(&stderr);
        let stderr_reader = std::thread::spawn(move || {
            for line in std::io::BufReader::new(err_pipe).lines() {
                let Ok(line) = line else { break };
                // Still shown with a failing test's output.
                eprintln!("{line}");
                err_text.lock().unwrap().push_str(&format!("{line}\n"));
            }
        });
        let stdout = child.stdout.take().unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in std::io::BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let mut w = Watcher {
            child,
            lines: rx,
            stderr,
            stderr_reader,
            seen: Vec::new(),
        };
        w.wait_for("the watcher to start", |v| v["event"] == "watching");
        w
    }

    /// Reads output until a line matches `pred`; panics with everything seen when the
    /// watcher printed nothing for PATIENCE (a loaded machine is slow; a hang is a hang).
    #[track_caller]
    pub fn wait_for(&mut self, what: &str, pred: impl Fn(&Value) -> bool) -> Value {
        if let Some(v) = self.seen.iter().find(|v| pred(v)) {
            return v.clone();
        }
        loop {
            match self.lines.recv_timeout(PATIENCE) {
                Ok(line) => {
                    let v: Value = serde_json::from_str(&line)
                        .unwrap_or_else(|e| panic!("not JSON ({e}): {line}"));
                    self.seen.push(v.clone());
                    if pred(&v) {
                        return v;
                    }
                }
                Err(RecvTimeoutError::Timeout) | Err(RecvTimeoutError::Disconnected) => {
                    panic!("waited for {what}; the watcher printed:\n{}", self.dump());
                }
            }
        }
    }

    /// Reads output until `done` holds for everything seen so far; panics when the
    /// watcher printed nothing for PATIENCE.
    #[track_caller]
    pub fn wait_until(&mut self, what: &str, done: impl Fn(&[Value]) -> bool) {
        while !done(&self.seen) {
            match self.lines.recv_timeout(PATIENCE) {
                Ok(line) => self.seen.push(
                    serde_json::from_str(&line)
                        .unwrap_or_else(|e| panic!("not JSON ({e}): {line}")),
                ),
                Err(_) => panic!("waited for {what}; the watcher printed:\n{}", self.dump()),
            }
        }
    }

    /// Waits until `n` activations have finished in all.
    #[track_caller]
    pub fn wait_finished(&mut self, n: usize) {
        self.wait_until(&format!("{n} finished activations"), |seen| {
            seen.iter().filter(|v| v["event"] == "finished").count() >= n
        });
    }

    /// How many lines of this event were printed so far.
    pub fn count(&self, event: &str) -> usize {
        self.seen.iter().filter(|v| v["event"] == event).count()
    }

    pub fn dump(&self) -> String {
        self.seen
            .iter()
            .map(|v| v.to_string())
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// What the watcher printed on stderr so far.
    pub fn stderr(&self) -> String {
        self.stderr.lock().unwrap().clone()
    }

    /// Waits (up to PATIENCE) for the watcher to exit on its own; returns its exit code.
    #[track_caller]
    pub fn wait_exit(&mut self) -> i32 {
        let end = Instant::now() + PATIENCE;
        loop {
            if let Some(status) = self.child.try_wait().expect("wait for tavern watch") {
                // The last of stderr: the reader ends at the pipe's end of file (a
                // fixed pause was too short on a loaded machine). An activation that
                // outlives the watcher may hold the pipe open, so don't wait forever.
                let end = Instant::now() + PATIENCE;
                while !self.stderr_reader.is_finished() && Instant::now() < end {
                    std::thread::sleep(Duration::from_millis(20));
                }
                return status.code().unwrap_or(-1);
            }
            assert!(
                Instant::now() < end,
                "the watcher did not exit; it printed:\n{}",
                self.dump()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Sends SIGTERM and waits for the watcher to exit; returns its exit code.
    pub fn stop(self) -> (i32, Vec<Value>) {
        signal(self.child.id(), "TERM");
        self.stop_after_exit()
    }

    /// Waits for the watcher to exit (it was told to); returns its exit code.
    pub fn stop_after_exit(mut self) -> (i32, Vec<Value>) {
        let status = self.child.wait().expect("wait for tavern watch");
        while let Ok(line) = self.lines.recv_timeout(Duration::from_secs(5)) {
            if let Ok(v) = serde_json::from_str(&line) {
                self.seen.push(v);
            }
        }
        (status.code().unwrap_or(-1), std::mem::take(&mut self.seen))
    }
}

impl Drop for Watcher {
    fn drop(&mut self) {
        // A failed test must not leave a watcher running.
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Sends a signal by name to a process.
pub fn signal(pid: u32, name: &str) {
    let ok = std::process::Command::new("sh")
        .args(["-c", &format!("kill -s {name} {pid}")])
        .status()
        .expect("run kill");
    assert!(ok.success(), "kill -{name} {pid}");
}

/// Runs `tavern watch --once --json ARGS` to the end.
pub fn once(b: &TestBoard, args: &[&str]) -> (Out, Vec<Value>) {
    let mut all = vec!["watch", "--once", "--json"];
    all.extend_from_slice(args);
    let out = b.run(&all);
    let lines = out
        .stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}")))
        .collect();
    (out, lines)
}

/// The lines of a file in the project directory (outside the board), empty if missing.
pub fn lines_of(b: &TestBoard, name: &str) -> Vec<String> {
    std::fs::read_to_string(b.root().join(name))
        .unwrap_or_default()
        .lines()
        .map(str::to_string)
        .collect()
}

/// The log entries with this op.
pub fn ops(log: &[Value], op: &str) -> Vec<Value> {
    log.iter().filter(|e| e["op"] == op).cloned().collect()
}

/// Writes a knowledge source.
pub fn source(b: &TestBoard, name: &str, front: &str, prompt: &str) {
    b.write(
        &format!("control/sources/{name}.md"),
        format!("---\nname: {name}\n{front}---\n{prompt}"),
    );
}

/// Runs a shell command in the project directory, as an agent's shell would.
pub fn sh(b: &TestBoard, script: &str) {
    let ok = Command::new("sh")
        .arg("-c")
        .arg(script)
        .current_dir(b.root())
        .env("T", BIN)
        .status()
        .expect("run sh");
    assert!(ok.success(), "sh -c {script}");
}

/// A source that appends `$TAVERN_EVENT $TAVERN_ID` to ran.txt in the project.
pub fn recorder(b: &TestBoard, name: &str, on: &str) {
    source(
        b,
        name,
        &format!("watch: [tasks]\non: [{on}]\nrun: echo \"$TAVERN_EVENT $TAVERN_ID\" >> ran.txt\n"),
        "",
    );
}

pub fn sorted(mut v: Vec<String>) -> Vec<String> {
    v.sort();
    v
}

pub fn finished(log: &[Value]) -> Vec<Value> {
    ops(log, "activation")
        .into_iter()
        .filter(|e| e["to"] != "started")
        .collect()
}

pub fn find_all(dir: &std::path::Path) -> Vec<String> {
    let out = Command::new("find").arg(dir).output().unwrap();
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(str::to_string)
        .collect()
}

/// The task files (`t-…` names) that `tavern ARGS`, run in `b`, looked at with a stat
/// call, each as often as it did (traced with strace, which the test needs).
pub fn task_files_statted(b: &TestBoard, args: &[&str]) -> (Vec<String>, Out) {
    task_files_statted_with(b, args, &[])
}

/// [`task_files_statted`] with more environment. A read that would start the index keeper
/// must be given `TAVERN_KEEPER=never` here: strace follows it, and waits for it.
pub fn task_files_statted_with(
    b: &TestBoard,
    args: &[&str],
    envs: &[(&str, &str)],
) -> (Vec<String>, Out) {
    let out = Command::new("strace")
        .args(["-f", "-qq", "-e", "trace=stat,lstat,newfstatat,statx"])
        .args(["-o", "/dev/stderr"])
        .arg(BIN)
        .args(args)
        .current_dir(b.root())
        .env("TAVERN_AGENT", "tester")
        .env_remove("TAVERN_KEEPER")
        .envs(envs.iter().copied())
        .output()
        .expect("strace is needed by this test (apt install strace)");
    let trace = String::from_utf8_lossy(&out.stderr).into_owned();
    let names: Vec<String> = trace
        .lines()
        .filter_map(|line| {
            let name = &line[line.find("\"t-")? + 1..];
            Some(name[..name.find('"').unwrap_or(name.len())].to_string())
        })
        .collect();
    let out = Out {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into(),
        stderr: trace,
    };
    (names, out)
}

/// Waits until the running watcher keeps its change journal (`.state/journal`).
pub fn wait_for_journal(b: &TestBoard) {
    let end = Instant::now() + PATIENCE;
    while !b.board().join(".state/journal").exists() {
        assert!(Instant::now() < end, "the watcher keeps no journal");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Runs `body` on board `b` with `tavern watch` running and keeping its journal, then
/// stops the watcher.
pub fn with_a_watcher(b: &TestBoard, body: impl FnOnce(&TestBoard)) {
    let w = Watcher::start(b, &[]);
    wait_for_journal(b);
    body(b);
    w.stop();
}
