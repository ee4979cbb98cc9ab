//! Every change reaches the log exactly once, at every crash point. Each mutating command
//! is killed (strace's fault injection: SIGKILL on entering the Nth call of a syscall) at
//! each write, pwrite, fsync, fdatasync, rename, link and unlink it makes, in turn; then any
//! command runs, and replaying the log from the start must give every file of the board:
//! each document, card, archived document and control/PAUSE is what its log entries say,
//! none is unexplained, no temp file and no intent is left, and `check` passes.
//!
//! Also: a SIGKILL storm over concurrent agents, `check` on an interrupted write, the
//! .gitignore of temp files, and the log's order under concurrent changes.

#![cfg(unix)]

use std::collections::BTreeMap;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::time::Duration;

use serde_json::Value;

use crate::util::{BIN, as_tester};

/// The syscalls a change is killed at (each counted on its own, as strace counts them).
const SYSCALLS: [&str; 7] = [
    "write",
    // The log clock is written in place, at its start.
    "pwrite64",
    "fsync",
    "fdatasync",
    "rename,renameat,renameat2",
    "link,linkat",
    "unlink,unlinkat,rmdir",
];

fn strace_available() -> bool {
    Command::new("strace")
        .arg("-V")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

pub fn require_strace() {
    assert!(
        strace_available(),
        "these tests need strace (apt-get install strace; .ci/run installs it)"
    );
}

/// Runs tavern in project `dir` with `args`; returns (exit code, stdout, stderr).
fn tavern(dir: &Path, args: &[&str]) -> (i32, String, String) {
    let out = as_tester(Command::new(BIN).args(args), dir)
        .output()
        .expect("run tavern");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[track_caller]
fn ok(dir: &Path, args: &[&str]) -> String {
    let (code, out, err) = tavern(dir, args);
    assert_eq!(code, 0, "tavern {args:?}:\n{out}{err}");
    out
}

/// Runs tavern under strace, killed on entering the `n`th call of `syscalls`. True if it
/// was killed, false if it ended before that call.
fn killed_at(dir: &Path, args: &[&str], syscalls: &str, n: usize) -> bool {
    let mut c = Command::new("strace");
    c.args(["-f", "-o", "/dev/null", "-e"])
        .arg(format!("inject={syscalls}:signal=KILL:when={n}"))
        .arg(BIN)
        .args(args);
    let status = as_tester(&mut c, dir)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .expect("run strace");
    // strace ends the way its tracee did: killed by the signal.
    status.signal() == Some(9) || status.code() == Some(128 + 9)
}

/// Runs a change under strace, killed once it is visible on disk but not logged: on
/// entering its first open of log.yaml (the append's; strace's `-P` counts only the calls
/// on that path). True if it was killed.
fn killed_before_logging(dir: &Path, args: &[&str]) -> bool {
    let log = dir.join(".tavern/log.yaml");
    let status = Command::new("strace")
        .args(["-f", "-o", "/dev/null", "-P"])
        .arg(&log)
        .args(["-e", "trace=open,openat", "-e"])
        .arg("inject=open,openat:signal=KILL:when=1")
        .arg(BIN)
        .args(args)
        .current_dir(dir)
        .env_remove("TAVERN_BOARD")
        .env_remove("TAVERN_AGENT")
        .env("USER", "tester")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .expect("run strace");
    status.signal() == Some(9) || status.code() == Some(128 + 9)
}

/// Every fsync, fdatasync and sync_file_range a command makes, in order, each with the
/// file it syncs (relative to `dir`).
fn syncs(dir: &Path, args: &[&str]) -> Vec<String> {
    let dir = std::fs::canonicalize(dir).unwrap();
    let trace = dir.join("trace");
    let status = Command::new("strace")
        .args(["-f", "-qq", "-y", "-o"])
        .arg(&trace)
        .args([
            "-e",
            "trace=fsync,fdatasync,sync_file_range,syncfs,sync,msync",
        ])
        .arg(BIN)
        .args(args)
        .current_dir(&dir)
        .env_remove("TAVERN_BOARD")
        .env_remove("TAVERN_AGENT")
        .env("USER", "tester")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .expect("run strace");
    assert!(status.success(), "tavern {args:?} under strace: {status}");
    let text = std::fs::read_to_string(&trace).unwrap();
    std::fs::remove_file(&trace).unwrap();
    let prefix = format!("{}/", dir.display());
    text.lines()
        .filter_map(|l| {
            // `PID fsync(4</abs/path>) = 0`, or without the pid when nothing forked.
            let call = l.split_once(' ').map_or(l, |(a, b)| {
                if a.bytes().all(|c| c.is_ascii_digit()) {
                    b.trim_start()
                } else {
                    l
                }
            });
            let (name, rest) = call.split_once('(')?;
            let path = rest.split_once('<')?.1.split_once('>')?.0;
            let path = path.strip_prefix(&prefix).unwrap_or(path);
            Some(format!("{name} {path}"))
        })
        .collect()
}

/// Whether the filesystem holding `dir` is one tavern trusts to commit metadata in order
/// (ext4 with a journal, XFS), as `stat -f` names its type and, for ext4, as the kernel's
/// journal statistics (`/proc/fs/jbd2/DEVICE-8`) say: there the log's synced append also
/// makes the rename before it durable, and the directory is not synced on its own.
fn orders_metadata(dir: &Path) -> bool {
    let out = Command::new("stat")
        .args(["-f", "-c", "%t"])
        .arg(dir)
        .output()
        .expect("run stat -f");
    assert!(out.status.success(), "stat -f {}", dir.display());
    match String::from_utf8_lossy(&out.stdout).trim() {
        "58465342" => true,
        "ef53" => {
            use std::os::unix::fs::MetadataExt;
            let dev = std::fs::metadata(dir).unwrap().dev();
            let major = ((dev >> 32) & 0xffff_f000) | ((dev >> 8) & 0xfff);
            let minor = ((dev >> 12) & 0xffff_ff00) | (dev & 0xff);
            let device = std::fs::read_link(format!("/sys/dev/block/{major}:{minor}"))
                .unwrap_or_else(|e| panic!("the device of {}: {e}", dir.display()));
            let name = device.file_name().unwrap().to_string_lossy().into_owned();
            Path::new(&format!("/proc/fs/jbd2/{name}-8")).is_dir()
        }
        _ => false,
    }
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap().flatten() {
        let t = e.file_type().unwrap();
        let dest = to.join(e.file_name());
        if t.is_dir() {
            copy_dir(&e.path(), &dest);
        } else if t.is_file() {
            std::fs::copy(e.path(), &dest).unwrap();
        }
    }
}

/// Applies a unified diff (as the log holds them: similar's, context 1) to `old`; None if
/// it does not apply (its context or removed lines are not what `old` holds).
fn apply(old: &str, diff: &str) -> Option<String> {
    let old_lines: Vec<&str> = old.split_inclusive('\n').collect();
    let mut out = String::new();
    let mut at = 0; // next old line to copy
    let mut lines = diff.split_inclusive('\n').peekable();
    while let Some(header) = lines.next() {
        let range = header.strip_prefix("@@ -")?.split(' ').next()?;
        let (start, count) = match range.split_once(',') {
            Some((s, c)) => (s.parse::<usize>().ok()?, c.parse::<usize>().ok()?),
            None => (range.parse::<usize>().ok()?, 1),
        };
        // Lines are 1-based; an empty range names the line after which it inserts.
        let first = if count == 0 { start } else { start - 1 };
        while at < first {
            out.push_str(old_lines.get(at)?);
            at += 1;
        }
        while let Some(line) = lines.peek() {
            if line.starts_with("@@") {
                break;
            }
            let line = lines.next()?;
            let (tag, text) = line.split_at(1);
            match tag {
                " " => {
                    if *old_lines.get(at)? != text {
                        return None;
                    }
                    out.push_str(text);
                    at += 1;
                }
                "-" => {
                    if *old_lines.get(at)? != text {
                        return None;
                    }
                    at += 1;
                }
                "+" => out.push_str(text),
                "\\" => {}
                _ => return None,
            }
        }
    }
    while at < old_lines.len() {
        out.push_str(old_lines[at]);
        at += 1;
    }
    Some(out)
}

fn log_entries(board: &Path) -> Vec<Value> {
    let text = std::fs::read_to_string(board.join("log.yaml")).unwrap();
    if text.trim().is_empty() {
        return Vec::new();
    }
    match serde_saphyr::from_str::<Value>(&text) {
        Ok(Value::Array(items)) => items,
        other => panic!("log.yaml does not parse: {other:?}\n{text}"),
    }
}

/// Every file the log must explain: documents, archived documents, agent cards, PAUSE.
fn tracked_files(board: &Path) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let mut dirs: Vec<String> = ["tasks", "observations", "questions", "control/agents"]
        .map(String::from)
        .to_vec();
    for r in ["tasks", "observations", "questions"] {
        dirs.push(format!("archive/{r}"));
    }
    for dir in dirs {
        let Ok(entries) = std::fs::read_dir(board.join(&dir)) else {
            continue;
        };
        for e in entries.flatten() {
            let name = e.file_name().into_string().unwrap();
            if !name.starts_with('.') {
                let text = std::fs::read_to_string(e.path()).unwrap();
                out.insert(format!("{dir}/{name}"), text);
            }
        }
    }
    if let Ok(text) = std::fs::read_to_string(board.join("control/PAUSE")) {
        out.insert("control/PAUSE".into(), text);
    }
    out
}

/// Every temp file anywhere on the board but `.state/`.
fn temp_files(board: &Path) -> Vec<String> {
    fn walk(dir: &Path, board: &Path, out: &mut Vec<String>) {
        for e in std::fs::read_dir(dir).unwrap().flatten() {
            let name = e.file_name().into_string().unwrap();
            let rel = e.path().strip_prefix(board).unwrap().display().to_string();
            if rel == ".state" {
                continue;
            }
            if e.file_type().unwrap().is_dir() {
                walk(&e.path(), board, out);
            } else if name.ends_with(".tmp") {
                out.push(rel);
            }
        }
    }
    let mut out = Vec::new();
    walk(board, board, &mut out);
    out
}

/// Replays the log from the start and compares with the board: every tracked file is what
/// its entries made it, none is missing, none unexplained; seqs rise by one and `at` never
/// goes back. Returns a description of the first difference.
fn unexplained(board: &Path) -> Option<String> {
    let log = log_entries(board);
    let mut files: BTreeMap<String, String> = BTreeMap::new();
    let mut last_at = String::new();
    for (i, e) in log.iter().enumerate() {
        let seq = e["seq"].as_u64().unwrap();
        if seq != i as u64 + 1 {
            return Some(format!("entry {i} has seq {seq}"));
        }
        let at = e["at"].as_str().unwrap().to_string();
        if at < last_at {
            return Some(format!("seq {seq}: at {at} is before {last_at}"));
        }
        last_at = at;
        let doc = e["doc"].as_str().unwrap().to_string();
        match e["op"].as_str().unwrap() {
            "move" => {
                let note = e["note"].as_str().unwrap();
                // `archived: moved to PATH`, maybe followed by ` (logged late: …)`.
                let to = note.split_once("moved to ").unwrap().1;
                let to = to.split(' ').next().unwrap().to_string();
                let Some(text) = files.remove(&doc) else {
                    return Some(format!("seq {seq} moves {doc}, which the log never made"));
                };
                files.insert(to, text);
            }
            "resume" => {
                files.remove(&doc);
            }
            "activation" | "alert" => {}
            op => {
                let Some(diff) = e["diff"].as_str() else {
                    return Some(format!("seq {seq} ({op} {doc}) has no diff"));
                };
                let old = files.get(&doc).cloned().unwrap_or_default();
                let Some(new) = apply(&old, diff) else {
                    return Some(format!(
                        "seq {seq} ({op} {doc}): its diff does not apply to what the log made of it (logged twice?)\n{old}\n{diff}"
                    ));
                };
                files.insert(doc, new);
            }
        }
    }
    let disk = tracked_files(board);
    for (path, text) in &disk {
        match files.get(path) {
            None => return Some(format!("{path} is not explained by the log")),
            Some(t) if t != text => {
                return Some(format!(
                    "{path} is not what the log says:\non disk:\n{text}\nreplayed:\n{t}"
                ));
            }
            Some(_) => {}
        }
    }
    for path in files.keys() {
        if !disk.contains_key(path) {
            return Some(format!("the log made {path}, which is not on the board"));
        }
    }
    None
}

/// What must hold after a kill and one more command.
#[track_caller]
fn assert_explained(board: &Path, what: &str) {
    if let Some(problem) = unexplained(board) {
        panic!("{what}: {problem}");
    }
    let temps = temp_files(board);
    assert!(temps.is_empty(), "{what}: temp files left: {temps:?}");
    let intents: Vec<_> = std::fs::read_dir(board.join(".state/intents"))
        .map(|d| d.flatten().map(|e| e.file_name()).collect())
        .unwrap_or_default();
    assert!(intents.is_empty(), "{what}: intents left: {intents:?}");
}

/// One mutating command and how to get the board ready for it.
struct Case {
    name: &'static str,
    setup: &'static [&'static [&'static str]],
    args: &'static [&'static str],
    /// Run last before the command, on the board directory.
    prepare: Option<fn(&Path)>,
}

/// A board with a task in each state, an observation, a question and a registered agent,
/// made by tavern (so its log explains it). Made once; each run gets a copy.
fn template() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap().keep();
        ok(&dir, &["init"]);
        for id in [
            "t-pending",
            "t-claimed",
            "t-working",
            "t-review",
            "t-blocked",
            "t-done",
            "t-next",
        ] {
            ok(&dir, &["new", "task", "--id", id, "--title", id]);
        }
        for (id, steps) in [
            ("t-claimed", &["claim"][..]),
            ("t-working", &["claim", "start"]),
            ("t-review", &["claim", "start", "submit"]),
            ("t-blocked", &["claim", "start", "block"]),
            ("t-done", &["claim", "start", "done"]),
        ] {
            for s in steps {
                ok(&dir, &[s, id, "--as", "a"]);
            }
        }
        ok(&dir, &["agent", "register", "--name", "a", "--as", "a"]);
        ok(
            &dir,
            &[
                "post",
                "seen",
                "--topic",
                "t",
                "--severity",
                "low",
                "--as",
                "a",
            ],
        );
        ok(&dir, &["ask", "Which one?", "--as", "a"]);
        assert_explained(&dir.join(".tavern"), "the template");
        dir
    })
}

/// How many times the command calls each syscall of each set, traced once.
fn count_calls(dir: &Path, args: &[&str]) -> Vec<(&'static str, usize)> {
    let trace = dir.join("trace");
    let all = SYSCALLS.join(",");
    let status = Command::new("strace")
        .args(["-f", "-o"])
        .arg(&trace)
        .arg("-e")
        .arg(format!("trace={all}"))
        .arg(BIN)
        .args(args)
        .current_dir(dir)
        .env_remove("TAVERN_BOARD")
        .env_remove("TAVERN_AGENT")
        .env("USER", "tester")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .expect("run strace");
    assert!(status.success(), "tavern {args:?} under strace: {status}");
    let text = std::fs::read_to_string(&trace).unwrap();
    SYSCALLS
        .iter()
        .map(|set| {
            let n = text
                .lines()
                .filter(|l| {
                    let call = l.split_once(' ').map_or("", |(_, c)| c.trim_start());
                    let name = call.split('(').next().unwrap_or("");
                    set.split(',').any(|s| s == name)
                })
                .count();
            (*set, n)
        })
        .collect()
}

/// Kills `case` at every crash point of every syscall in turn; after each kill, one more
/// command (`list`) and the board must be explained by its log. Returns the kill count.
fn crash_every_point(case: &Case) -> usize {
    // The template's observation and question, by id.
    let only = |region: &str| {
        let e = std::fs::read_dir(template().join(".tavern").join(region))
            .unwrap()
            .flatten()
            .next()
            .unwrap();
        e.file_name()
            .to_string_lossy()
            .trim_end_matches(".md")
            .to_string()
    };
    let (o, q) = (only("observations"), only("questions"));
    let args: Vec<String> = case
        .args
        .iter()
        .map(|a| a.replace("{o}", &o).replace("{q}", &q))
        .collect();
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let ready = |tmp: &tempfile::TempDir| {
        let dir = tmp.path();
        copy_dir(template(), dir);
        for s in case.setup {
            ok(dir, s);
        }
        if let Some(prepare) = case.prepare {
            prepare(&dir.join(".tavern"));
        }
    };
    let counts = {
        let tmp = tempfile::tempdir().unwrap();
        ready(&tmp);
        count_calls(tmp.path(), &args)
    };
    let mut kills = 0;
    for (syscalls, count) in counts {
        for n in 1..=count {
            let tmp = tempfile::tempdir().unwrap();
            ready(&tmp);
            let dir = tmp.path();
            let what = format!("{} killed at {syscalls} #{n} of {count}", case.name);
            assert!(killed_at(dir, &args, syscalls, n), "{what}: not killed");
            kills += 1;
            ok(dir, &["list", "--json"]);
            assert_explained(&dir.join(".tavern"), &what);
            let (code, out, err) = tavern(dir, &["check"]);
            assert_eq!(code, 0, "{what}: check\n{out}{err}");
        }
    }
    kills
}

fn run_cases(cases: &[Case]) {
    require_strace();
    for case in cases {
        let kills = crash_every_point(case);
        // A heartbeat touches a runtime file's time and writes nothing to kill it at.
        assert!(
            kills > 0 || case.name == "agent heartbeat",
            "{}: never killed",
            case.name
        );
    }
}

#[test]
fn documents_survive_a_kill_at_every_crash_point() {
    run_cases(&[
        Case {
            name: "new",
            setup: &[],
            args: &["new", "task", "--id", "t-new", "--title", "New"],
            prepare: None,
        },
        Case {
            name: "edit",
            setup: &[],
            args: &[
                "edit",
                "t-pending",
                "--set",
                "x=1",
                "--extra-field",
                "x",
                "--body",
                "b",
            ],
            prepare: None,
        },
        Case {
            name: "post",
            setup: &[],
            args: &[
                "post",
                "more",
                "--topic",
                "t",
                "--severity",
                "low",
                "--as",
                "a",
            ],
            prepare: None,
        },
        Case {
            name: "ack",
            setup: &[],
            args: &["ack", "{o}", "--as", "b"],
            prepare: None,
        },
        Case {
            name: "resolve",
            setup: &[],
            args: &["resolve", "{o}", "--resolution", "fixed", "--as", "b"],
            prepare: None,
        },
        Case {
            name: "ask",
            setup: &[],
            args: &["ask", "Why?", "--as", "a"],
            prepare: None,
        },
        Case {
            name: "answer",
            setup: &[],
            args: &["answer", "{q}", "this one", "--as", "b"],
            prepare: None,
        },
    ]);
}

#[test]
fn transitions_survive_a_kill_at_every_crash_point() {
    run_cases(&[
        Case {
            name: "claim",
            setup: &[],
            args: &["claim", "t-pending", "--as", "a"],
            prepare: None,
        },
        Case {
            name: "claim --next",
            setup: &[],
            args: &["claim", "--next", "--as", "b"],
            prepare: None,
        },
        Case {
            name: "release",
            setup: &[],
            args: &["release", "t-claimed", "--as", "a"],
            prepare: None,
        },
        Case {
            name: "start",
            setup: &[],
            args: &["start", "t-claimed", "--as", "a"],
            prepare: None,
        },
        Case {
            name: "submit",
            setup: &[],
            args: &["submit", "t-working", "--as", "a"],
            prepare: None,
        },
        Case {
            name: "block",
            setup: &[],
            args: &["block", "t-working", "--as", "a"],
            prepare: None,
        },
        Case {
            name: "unblock",
            setup: &[],
            args: &["unblock", "t-blocked", "--as", "a"],
            prepare: None,
        },
        Case {
            name: "done",
            setup: &[],
            args: &["done", "t-working", "--as", "a"],
            prepare: None,
        },
        Case {
            name: "move (approve)",
            setup: &[],
            args: &["move", "t-review", "done", "--as", "b"],
            prepare: None,
        },
        Case {
            name: "fail",
            setup: &[],
            args: &["fail", "t-pending", "--as", "a"],
            prepare: None,
        },
        Case {
            name: "cancel",
            setup: &[],
            args: &["cancel", "t-pending", "--as", "a"],
            prepare: None,
        },
    ]);
}

#[test]
fn agents_pause_and_archive_survive_a_kill_at_every_crash_point() {
    run_cases(&[
        Case {
            name: "agent register",
            setup: &[],
            args: &["agent", "register", "--name", "b", "--as", "b"],
            prepare: None,
        },
        Case {
            name: "agent register again",
            setup: &[],
            args: &["agent", "register", "--name", "a", "--as", "a"],
            prepare: None,
        },
        Case {
            name: "agent heartbeat",
            setup: &[],
            args: &["agent", "heartbeat", "--as", "a"],
            prepare: None,
        },
        Case {
            name: "agent deregister",
            setup: &[],
            args: &["agent", "deregister", "--as", "a"],
            prepare: None,
        },
        Case {
            name: "pause",
            setup: &[],
            args: &["pause", "release", "freeze"],
            prepare: None,
        },
        Case {
            name: "pause again",
            setup: &[&["pause", "first"]],
            args: &["pause", "second"],
            prepare: None,
        },
        Case {
            name: "resume",
            setup: &[&["pause", "for a while"]],
            args: &["resume"],
            prepare: None,
        },
        Case {
            name: "archive",
            setup: &[],
            args: &["archive"],
            prepare: None,
        },
        Case {
            name: "sweep",
            setup: &[
                &[
                    "agent",
                    "register",
                    "--name",
                    "ghost",
                    "--pid",
                    "999999999",
                    "--as",
                    "ghost",
                ],
                &["claim", "t-pending", "--as", "ghost"],
                &["claim", "t-next", "--as", "ghost"],
            ],
            args: &["sweep"],
            prepare: Some(expire_leases),
        },
    ]);
}

/// A lease of 1ms, then 10ms without a sign of life: every agent whose process is gone is
/// stale (the ghost's pid is no process).
fn expire_leases(board: &Path) {
    let yaml = std::fs::read_to_string(board.join("board.yaml")).unwrap();
    let yaml = yaml.replace("lease: 5m", "lease: 1ms");
    assert!(yaml.contains("lease: 1ms"));
    std::fs::write(board.join("board.yaml"), yaml).unwrap();
    std::thread::sleep(Duration::from_millis(10));
}

/// A fresh copy of the template board.
fn fresh() -> tempfile::TempDir {
    let tmp = tempfile::tempdir().unwrap();
    copy_dir(template(), tmp.path());
    tmp
}

/// Regression: `check` passed (exit 0) while an intent held a change the log lacked.
#[test]
fn check_reports_an_interrupted_write_and_the_next_command_completes_it() {
    require_strace();
    let tmp = fresh();
    let dir = tmp.path();
    // Claimed on disk, not logged.
    assert!(killed_before_logging(
        dir,
        &["claim", "t-pending", "--as", "a"]
    ));
    let (code, out, err) = tavern(dir, &["check"]);
    assert_eq!((code, out.as_str()), (6, ""), "{err}");
    assert!(
        err.starts_with(".state/intents/tasks.t-pending.json: an interrupted write of tasks/t-pending.md is on disk but may be missing from the log; the next tavern command completes and logs it\n"),
        "{err}"
    );
    let (_, json, _) = tavern(dir, &["check", "--json"]);
    let json: Value = serde_json::from_str(&json).unwrap();
    assert_eq!(json["ok"], false);
    assert_eq!(
        json["problems"][0]["path"],
        ".state/intents/tasks.t-pending.json"
    );
    // Any command completes it: the claim is logged, late, once.
    ok(dir, &["show", "t-pending"]);
    let log = log_entries(&dir.join(".tavern"));
    let last = log.last().unwrap();
    assert_eq!(last["op"], "claim");
    assert_eq!(last["doc"], "tasks/t-pending.md");
    assert_eq!(
        last["note"],
        "logged late: the write that made this change was interrupted before logging it"
    );
    assert_explained(&dir.join(".tavern"), "after the next command");
    assert_eq!(tavern(dir, &["check"]).0, 0);
    // Killed before anything was visible: check says it never reached the board, and the
    // next command drops it without a word in the log.
    let before = log_entries(&dir.join(".tavern")).len();
    assert!(killed_at(
        dir,
        &["claim", "t-next", "--as", "a"],
        "rename",
        1
    ));
    let (code, _, err) = tavern(dir, &["check"]);
    assert_eq!(code, 6);
    assert!(err.contains(".state/intents/tasks.t-next.json: an interrupted write of tasks/t-next.md never reached the board; the next tavern command drops it\n"), "{err}");
    ok(dir, &["list"]);
    assert_eq!(log_entries(&dir.join(".tavern")).len(), before);
    assert_explained(&dir.join(".tavern"), "after a dropped write");
}

/// An agent client's session hook opens the board as every writing command does: an
/// interrupted change is completed and logged before the session's agent is registered.
#[test]
fn a_session_hook_completes_an_interrupted_write_before_registering() {
    require_strace();
    let tmp = fresh();
    let dir = tmp.path();
    assert!(killed_before_logging(
        dir,
        &["claim", "t-pending", "--as", "a"]
    ));
    let pid = std::process::id().to_string();
    let (code, _, err) = tavern(
        dir,
        &[
            "--as",
            "rev",
            "hook",
            "claude",
            "session-start",
            "--pid",
            &pid,
        ],
    );
    assert_eq!(code, 0, "{err}");
    let log = log_entries(&dir.join(".tavern"));
    let tail: Vec<(&str, &str)> = log[log.len() - 2..]
        .iter()
        .map(|e| (e["op"].as_str().unwrap(), e["doc"].as_str().unwrap()))
        .collect();
    assert_eq!(
        tail,
        [
            ("claim", "tasks/t-pending.md"),
            ("agent", "control/agents/rev.md")
        ]
    );
    assert_explained(&dir.join(".tavern"), "after the hook");
    assert_eq!(tavern(dir, &["check"]).0, 0);
}

/// What a change syncs, and why each (README, "Safety under concurrency and crashes"):
/// the new content's temp before it becomes visible (so a power loss never leaves the
/// document empty or torn), the log's append (the entry survives once the command says it
/// is done), and the document's directory only where the filesystem does not commit
/// metadata in order (on ext4 with a journal and XFS the log's sync commits the rename
/// before it; ext4 without one syncs the directory). Any
/// other sync, or one more, fails here: the count cannot grow unnoticed.
#[test]
fn a_claim_and_a_new_task_sync_the_document_and_the_log_and_nothing_else() {
    require_strace();
    let tmp = fresh();
    let dir = tmp.path();
    let ordered = orders_metadata(dir);
    let want = |temp: &str| {
        let mut want = vec![format!("fsync .tavern/tasks/{temp}")];
        if !ordered {
            want.push("fsync .tavern/tasks".to_string());
        }
        want.push("fdatasync .tavern/log.yaml".to_string());
        want
    };
    assert_eq!(
        syncs(dir, &["claim", "t-pending", "--as", "a"]),
        want(".t-pending.md.tmp")
    );
    assert_eq!(
        syncs(dir, &["new", "task", "--id", "t-more", "--title", "More"]),
        want(".t-more.md.tmp")
    );
    // A read syncs nothing.
    assert_eq!(syncs(dir, &["show", "t-more"]), Vec::<String>::new());
    assert_explained(&dir.join(".tavern"), "after the traced changes");
}

/// Temp files are git-ignored on new boards; `check` says so of a board made before; one
/// that no intent names (an older tavern's) is reported by `check` and removed by `sweep`.
#[test]
fn temp_files_are_ignored_by_git_reported_and_swept() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let git = |args: &[&str]| {
        let out = Command::new("git")
            .args(args)
            .current_dir(dir)
            .output()
            .expect("run git");
        assert!(out.status.success(), "git {args:?}");
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    git(&["init", "-q"]);
    ok(dir, &["init"]);
    ok(dir, &["new", "task", "--id", "t-1", "--title", "one"]);
    std::fs::write(dir.join(".tavern/tasks/.t-1.md.tmp"), "half").unwrap();
    std::fs::write(dir.join(".tavern/tasks/.t-1.md.4242.7.tmp"), "half").unwrap();
    std::fs::write(dir.join(".tavern/control/agents/.a.md.tmp"), "half").unwrap();
    let status = git(&["status", "--porcelain", "--untracked-files=all"]);
    assert!(!status.contains(".tmp"), "{status}");
    assert!(status.contains(".tavern/tasks/t-1.md"), "{status}");
    let (code, _, err) = tavern(dir, &["check"]);
    assert_eq!(code, 6);
    assert_eq!(
        err.lines().take(3).collect::<Vec<_>>(),
        [
            "control/agents/.a.md.tmp: a temp file left by an interrupted write; nothing refers to it: remove it (`tavern sweep` does)",
            "tasks/.t-1.md.4242.7.tmp: a temp file left by an interrupted write; nothing refers to it: remove it (`tavern sweep` does)",
            "tasks/.t-1.md.tmp: a temp file left by an interrupted write; nothing refers to it: remove it (`tavern sweep` does)",
        ]
    );
    let out = ok(dir, &["sweep"]);
    assert_eq!(
        out,
        "removed tasks/.t-1.md.4242.7.tmp: a temp file left by an interrupted write\n\
         removed tasks/.t-1.md.tmp: a temp file left by an interrupted write\n\
         removed control/agents/.a.md.tmp: a temp file left by an interrupted write\n"
    );
    assert!(temp_files(&dir.join(".tavern")).is_empty());
    assert_eq!(tavern(dir, &["check"]).0, 0);
    // A board whose .gitignore predates the pattern.
    std::fs::write(dir.join(".tavern/.gitignore"), ".state/\n").unwrap();
    let (code, _, err) = tavern(dir, &["check"]);
    assert_eq!(code, 6);
    assert!(err.starts_with(".gitignore: does not ignore temp files: add the line `.*.tmp` so that git never commits what an interrupted write leaves\n"), "{err}");
}

/// Regression: entries were stamped before the log lock was taken, so a claim could be
/// logged before the `done` of the task it depends on. The `done` here is held (strace
/// delays its directory fsync by a second) just after its rename, so the claim sees the
/// dependency done and goes ahead meanwhile; its entry must still come after the `done`.
#[test]
fn the_log_is_in_the_order_of_the_changes() {
    require_strace();
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    ok(dir, &["init"]);
    ok(dir, &["new", "task", "--id", "t-dep", "--title", "dep"]);
    ok(
        dir,
        &[
            "new",
            "task",
            "--id",
            "t-top",
            "--title",
            "top",
            "--depends-on",
            "t-dep",
        ],
    );
    ok(dir, &["claim", "t-dep", "--as", "a"]);
    ok(dir, &["start", "t-dep", "--as", "a"]);
    let mut done = Command::new("strace")
        .args([
            "-f",
            "-o",
            "/dev/null",
            "-e",
            "inject=fsync:delay_exit=1s:when=2",
        ])
        .arg(BIN)
        .args(["done", "t-dep", "--as", "a"])
        .current_dir(dir)
        .env_remove("TAVERN_BOARD")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let dep = dir.join(".tavern/tasks/t-dep.md");
    let mut waited = 0;
    while !std::fs::read_to_string(&dep)
        .unwrap()
        .contains("status: done")
    {
        waited += 1;
        assert!(waited < 2000, "done never landed");
        std::thread::sleep(Duration::from_millis(5));
    }
    ok(dir, &["claim", "t-top", "--as", "b"]);
    assert!(done.wait().unwrap().success());
    let log = log_entries(&dir.join(".tavern"));
    let ops: Vec<(&str, &str)> = log
        .iter()
        .map(|e| (e["op"].as_str().unwrap(), e["doc"].as_str().unwrap()))
        .collect();
    assert_eq!(
        ops[4..],
        [
            ("transition", "tasks/t-dep.md"),
            ("claim", "tasks/t-top.md")
        ],
        "{log:#?}"
    );
    assert_explained(&dir.join(".tavern"), "after the race");
}

/// A SIGKILL storm over concurrent agents registering, claiming, posting and finishing:
/// after each round of kills and one more command, every file is explained by the log and
/// no temp file or intent is left. (Regression: 3-5 agent cards per storm were on disk
/// and not in the log, and dozens of temp files stayed.)
#[test]
fn a_sigkill_storm_leaves_every_file_explained() {
    use std::os::unix::process::CommandExt;
    const AGENTS: usize = 4;
    const ROUNDS: usize = 10;
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    ok(dir, &["init"]);
    for i in 0..60 {
        ok(
            dir,
            &["new", "task", "--id", &format!("t-{i}"), "--title", "work"],
        );
    }
    let mut rng = crate::concurrency::Rng::new(0x57_0E3);
    for round in 0..ROUNDS {
        let mut agents: Vec<_> = (0..AGENTS)
            .map(|w| {
                let script = format!(
                    r#"i=0
while :; do
  i=$((i+1))
  "$T" agent register --name a{w} --as a{w}
  id=$("$T" claim --next --as a{w} --json | sed -n 's/.*"id":"\([^"]*\)".*/\1/p')
  "$T" post "round {round} try $i" --topic storm --severity low --as a{w}
  "$T" agent heartbeat --as a{w}
  [ -n "$id" ] && "$T" start "$id" --as a{w} && "$T" done "$id" --as a{w}
  [ $((i % 3)) = 0 ] && "$T" agent deregister --as a{w}
done"#
                );
                Command::new("sh")
                    .arg("-c")
                    .arg(script)
                    .current_dir(dir)
                    .env_remove("TAVERN_BOARD")
                    .env_remove("TAVERN_AGENT")
                    .env("T", BIN)
                    .stdin(Stdio::null())
                    .stdout(Stdio::null())
                    .stderr(Stdio::null())
                    .process_group(0)
                    .spawn()
                    .unwrap()
            })
            .collect();
        std::thread::sleep(Duration::from_millis(30 + rng.below(300)));
        for a in &mut agents {
            crate::crash::kill_group(a);
        }
        ok(dir, &["list"]);
        assert_explained(&dir.join(".tavern"), &format!("round {round}"));
        let (code, out, err) = tavern(dir, &["check"]);
        assert_eq!(code, 0, "round {round}: check\n{out}{err}");
    }
    let log = log_entries(&dir.join(".tavern"));
    assert!(
        log.iter().filter(|e| e["op"] == "agent").count() >= AGENTS,
        "the agents made progress"
    );
}
