//! The released agent clients (Claude Code, Codex, OpenCode) driven end to end against a
//! scripted stand-in for the model's API (tests/clients/standin.py). The clients are the
//! versions pinned in tests/clients/package-lock.json, installed by .ci/run; each test sets
//! tavern up as a user would, lets the client run its hooks, MCP client, shell tool and
//! compaction against the stand-in, and checks what reached the model and what the board's
//! log says. A failure names the client, its version and what broke.

mod claude;
mod codex;
mod opencode;

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use serde_json::Value;

use crate::util::{BIN, TestBoard};

/// Where .ci/run installs the clients.
fn clients_dir() -> PathBuf {
    std::env::var_os("TAVERN_CLIENTS")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/clients"))
}

/// One pinned client: its package, the command it installs and the version pinned.
pub struct Client {
    /// What a failure calls it, with its version: "Claude Code 2.1.328".
    pub label: String,
    pub bin: PathBuf,
}

/// The client `command` of npm package `package`, or None when it is not installed: the
/// test is skipped (visibly, and a failure under CI; see util::skip).
pub fn client(package: &str, command: &str, name: &str) -> Option<Client> {
    let dir = clients_dir();
    let manifest: Value = serde_json::from_str(
        &std::fs::read_to_string(dir.join("package.json")).expect("tests/clients/package.json"),
    )
    .expect("tests/clients/package.json is JSON");
    let version = manifest["dependencies"][package]
        .as_str()
        .unwrap_or_else(|| panic!("tests/clients/package.json pins no {package}"))
        .to_string();
    let label = format!("{name} {version}");
    let bin = dir.join("node_modules/.bin").join(command);
    let how = "cd tests/clients && npm ci --ignore-scripts, then the clients' own install steps (what .ci/run does)";
    let runs = Command::new(&bin)
        .arg("--version")
        .env("HOME", std::env::temp_dir())
        .stdin(Stdio::null())
        .output()
        .ok()
        .filter(|o| o.status.success());
    let Some(out) = runs else {
        crate::util::skip::missing(&format!("{label} (at {})", bin.display()), how);
        return None;
    };
    let said = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(
        said.contains(&version),
        "{label}: `{command} --version` says {said:?}: the installed client is not the pinned one ({how})"
    );
    Some(Client { label, bin })
}

/// The stand-in for the model's API, serving `turns` until dropped.
pub struct StandIn {
    child: Child,
    pub port: u16,
    record: PathBuf,
    _dir: tempfile::TempDir,
}

impl StandIn {
    pub fn start(turns: Value) -> StandIn {
        let dir = tempfile::tempdir().unwrap();
        let script = dir.path().join("script.json");
        std::fs::write(&script, serde_json::json!({ "turns": turns }).to_string()).unwrap();
        let record = dir.path().join("requests.jsonl");
        let mut child = Command::new("python3")
            .arg(concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/tests/clients/standin.py"
            ))
            .arg(&script)
            .arg(&record)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("start python3 tests/clients/standin.py");
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let port = line
            .trim()
            .parse()
            .unwrap_or_else(|_| panic!("the stand-in did not say its port: {line:?}"));
        StandIn {
            child,
            port,
            record,
            _dir: dir,
        }
    }

    /// Every request it got, in order: {"path", "body", "turn"}.
    pub fn requests(&self) -> Vec<Value> {
        std::fs::read_to_string(&self.record)
            .unwrap_or_default()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }

    /// The requests that carried a model's turn (not the stand-in's "ok").
    pub fn scripted(&self) -> Vec<Value> {
        self.requests()
            .into_iter()
            .filter(|r| r["turn"] != serde_json::json!({"text": "ok"}))
            .collect()
    }
}

impl Drop for StandIn {
    fn drop(&mut self) {
        // Closing its stdin ends it; the kill is for one stuck in a request.
        drop(self.child.stdin.take());
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A project with a board, and a home directory of its own for the client's configuration.
pub struct Project {
    pub board: TestBoard,
    pub home: tempfile::TempDir,
}

impl Project {
    pub fn new() -> Project {
        let board = TestBoard::new();
        // A repository, as projects are: clients look for its root.
        Command::new("git")
            .args(["init", "-q"])
            .current_dir(board.root())
            .status()
            .unwrap();
        let home = tempfile::tempdir().unwrap();
        // tavern on PATH for login shells too (Codex runs commands with `bash -lc`), as
        // `cargo install` leaves it: ~/.profile puts its directory on PATH.
        std::fs::write(
            home.path().join(".profile"),
            format!("export PATH=\"{}:$PATH\"\n", path_with_tavern()),
        )
        .unwrap();
        Project { board, home }
    }

    pub fn root(&self) -> &Path {
        self.board.root()
    }

    /// A command run in the project with this home, tavern first on PATH, and nothing of
    /// the environment that runs the tests that could reach a client (its own keys, its
    /// own configuration).
    pub fn cmd(&self, program: &Path) -> Command {
        let mut c = Command::new(program);
        self.environment(&mut c);
        c
    }

    /// A client run in the project as [`Project::cmd`], stopped if it is still running
    /// after ten minutes (a hung client fails its test instead of holding up CI).
    pub fn client_cmd(&self, program: &Path) -> Command {
        let mut c = Command::new("timeout");
        c.args(["--kill-after=10", "600"]).arg(program);
        self.environment(&mut c);
        c
    }

    fn environment(&self, c: &mut Command) {
        c.current_dir(self.root())
            .env_clear()
            .env("HOME", self.home.path())
            .env("PATH", path_with_tavern())
            .env("USER", "tester")
            .env("LANG", "C.UTF-8")
            .env("TERM", "xterm-256color")
            .stdin(Stdio::null());
    }

    /// `tavern ARGS` as the user runs it, with this home.
    pub fn tavern(&self, args: &[&str]) -> crate::util::Out {
        let mut c = self.cmd(Path::new(BIN));
        c.args(args);
        crate::util::output(c)
    }

    /// Every entry of the board's log.
    pub fn log(&self) -> Vec<Value> {
        self.board.log()
    }
}

fn tavern_dir() -> PathBuf {
    Path::new(BIN).parent().unwrap().to_path_buf()
}

/// With `TAVERN_HOOK_TIMES=FILE`, a directory to put first on the clients' PATH, whose
/// `tavern` (tests/clients/hook_times.py) times every `tavern hook …` the clients run and
/// appends it to FILE; `TAVERN_HOOK_TIMES_BIN` names the tavern it runs (default: the
/// tests' build). For the README's figures: nothing is asserted on them.
fn hook_times_dir() -> Option<&'static Path> {
    static DIR: std::sync::OnceLock<Option<PathBuf>> = std::sync::OnceLock::new();
    DIR.get_or_init(|| {
        let file = std::env::var_os("TAVERN_HOOK_TIMES")?;
        let real = std::env::var_os("TAVERN_HOOK_TIMES_BIN").unwrap_or_else(|| BIN.into());
        let script =
            Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/clients/hook_times.py");
        let dir = tempfile::tempdir().unwrap().keep();
        let quote = |p: &std::ffi::OsStr| format!("'{}'", p.to_string_lossy().replace('\'', r"'\''"));
        std::fs::write(
            dir.join("tavern"),
            format!(
                "#!/bin/sh\nTAVERN_HOOK_TIMES={} TAVERN_HOOK_TIMES_REAL={} exec python3 {} \"$@\"\n",
                quote(&file),
                quote(&real),
                quote(script.as_os_str())
            ),
        )
        .unwrap();
        let mode = std::os::unix::fs::PermissionsExt::from_mode(0o755);
        std::fs::set_permissions(dir.join("tavern"), mode).unwrap();
        Some(dir)
    })
    .as_deref()
}

fn path_with_tavern() -> String {
    let timed = hook_times_dir()
        .map(|d| format!("{}:", d.display()))
        .unwrap_or_default();
    format!(
        "{timed}{}:/usr/local/bin:/usr/bin:/bin",
        tavern_dir().display()
    )
}

/// The names of the agents `client` registered, in the order of the log.
pub fn registered(log: &[Value], client: &str) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    for e in log {
        let actor = e["actor"].as_str().unwrap_or("");
        if e["op"] == "agent"
            && actor.starts_with(&format!("{client}-"))
            && !names.iter().any(|n| n == actor)
        {
            names.push(actor.to_string());
        }
    }
    names
}

/// One client start is one `registered` in the log, however many of the client's hooks,
/// plugin and MCP server register the agent.
pub fn registered_once(log: &[Value], agent: &str, label: &str) {
    let registrations: Vec<&Value> = log
        .iter()
        .filter(|e| e["op"] == "agent" && e["actor"] == agent)
        .filter(|e| {
            e["note"]
                .as_str()
                .is_some_and(|n| n.starts_with("registered"))
        })
        .collect();
    assert!(
        registrations.len() == 1,
        "{label}: one session start is not one `registered` in the log for `{agent}` (its hooks and its MCP server each registered it):\n{}",
        show(log)
    );
}

/// The log entries of `op` (or of the transition `op`, such as start) on task `task`.
pub fn entries<'a>(log: &'a [Value], op: &str, task: &str) -> Vec<&'a Value> {
    log.iter()
        .filter(|e| e["op"] == op || (e["op"] == "transition" && e["transition"] == op))
        .filter(|e| e["doc"].as_str().is_some_and(|p| p.contains(task)))
        .collect()
}

/// Runs a client command to its end; a client stopped by the time limit fails the test.
pub fn finish(cmd: Command, label: &str) -> crate::util::Out {
    let out = crate::util::output(cmd);
    assert!(
        out.code != 124,
        "{label}: did not finish within ten minutes:\n{}\n{}",
        out.stdout,
        out.stderr
    );
    out
}

/// The last agent name the request mentions ("agent `NAME`"), as the model would take it.
pub fn last_agent(request: &Value) -> Option<String> {
    let text = text(request);
    let at = text.rfind("agent `")? + "agent `".len();
    let name: String = text[at..].chars().take_while(|c| *c != '`').collect();
    Some(name)
}

/// The request as the model saw it, as text.
pub fn text(request: &Value) -> String {
    request["body"].to_string()
}

/// The files in the project outside the board's own (git's untracked, not ignored), with
/// what setup puts under `.tavern/clients/`: what `setup --remove` must give back.
pub fn project_files(p: &Project) -> Vec<String> {
    let out = Command::new("git")
        .args(["ls-files", "--others", "--exclude-standard"])
        .current_dir(p.root())
        .output()
        .expect("git ls-files");
    let mut files: Vec<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|f| !f.starts_with(".tavern/") || f.starts_with(".tavern/clients/"))
        .map(str::to_string)
        .collect();
    files.sort();
    files
}

/// `tavern setup CLIENT --remove` after the client has run: the project is left as it was
/// before setup, and setup's check no longer finds the client set up.
pub fn removed(p: &Project, client: &str, before: &[String], label: &str) {
    p.tavern(&["setup", client, "--remove"]).ok();
    let after = project_files(p);
    assert!(
        after == before,
        "{label}: `tavern setup {client} --remove` after a session did not leave the project as it was before setup:\nbefore: {before:?}\nafter:  {after:?}"
    );
    p.tavern(&["setup", "--check"])
        .ok()
        .stdout_has(&format!("{client}: not set up\n"));
}

/// The log, one entry a line, for failure messages.
pub fn show(log: &[Value]) -> String {
    log.iter()
        .map(|e| e.to_string())
        .collect::<Vec<_>>()
        .join("\n")
}
