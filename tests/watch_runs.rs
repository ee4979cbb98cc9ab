//! The commands sources run: their environment and prompt, hostile values kept out of the
//! shell, timeouts and shutdown, and their output files in .state/runs/.

#![cfg(unix)]

use std::collections::BTreeSet;
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::util::TestBoard;
use crate::util::watcher::{Watcher, finished, lines_of, once, ops, signal, sorted, source};

/// Is process `pid` gone (or a zombie nobody reaped yet)?
fn gone(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat
            .rsplit(')')
            .next()
            .is_some_and(|rest| rest.trim_start().starts_with('Z')),
    }
}

/// Sets a file's (or directory's) modification time to `age` ago.
fn age(path: &std::path::Path, age: Duration) {
    let when = std::time::SystemTime::now() - age;
    std::fs::File::open(path)
        .and_then(|f| f.set_modified(when))
        .unwrap_or_else(|e| panic!("set the mtime of {}: {e}", path.display()));
}

/// A board whose run outputs are removed after an hour (board.yaml `watch.keep_runs`).
fn board_keeping_runs_for_an_hour() -> TestBoard {
    let b = TestBoard::new();
    let config = b
        .read("board.yaml")
        .replace("keep_runs: 7d", "keep_runs: 1h");
    b.write("board.yaml", config);
    b
}

#[test]
fn a_timeout_kills_the_whole_process_group() {
    let b = TestBoard::new();
    source(
        &b,
        "hang",
        "watch: [tasks]\ntimeout: 1s\nrun: sleep 120 & echo $! > bg.pid; wait\n",
        "",
    );
    once(&b, &[]).0.ok();
    let id = b.task("Hangs", &[]);
    let started = Instant::now();
    let (out, lines) = once(&b, &[]);
    out.code(1);
    assert!(started.elapsed() < Duration::from_secs(60));
    let bg: u32 = lines_of(&b, "bg.pid")[0].parse().unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    while !gone(bg) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(gone(bg), "the command's background child {bg} survived");
    assert_eq!(lines.iter().filter(|v| v["event"] == "timeout").count(), 1);
    let ends = finished(&b.log());
    assert_eq!(ends.len(), 1);
    assert_eq!(ends[0]["to"], "timed-out");
    assert_eq!(ends[0]["doc"], format!("tasks/{id}.md"));
    assert!(ends[0].get("exit").is_none());
    assert!(
        ends[0]["note"].as_str().unwrap().starts_with(
            "did not finish within its timeout of 1s: its process group was killed after"
        ),
        "{}",
        ends[0]["note"]
    );
}

#[test]
fn sigterm_lets_running_activations_finish_within_the_grace_period() {
    let b = TestBoard::new();
    source(
        &b,
        "slow",
        "watch: [tasks]\nrun: sleep 1; echo \"$TAVERN_ID\" >> ran.txt\n",
        "",
    );
    let mut w = Watcher::start(&b, &["--grace", "30s"]);
    let id = b.task("Slow", &[]);
    w.wait_for("the activation to start", |v| v["event"] == "started");
    signal(w.pid(), "TERM");
    w.wait_for("the watcher to stop", |v| v["event"] == "stopped");
    let (code, _) = w.stop_after_exit();
    assert_eq!(code, 0);
    assert_eq!(lines_of(&b, "ran.txt"), vec![id]);
    assert_eq!(finished(&b.log())[0]["to"], "ok");
}

#[test]
fn sigterm_kills_what_outlives_the_grace_period() {
    let b = TestBoard::new();
    source(&b, "stuck", "watch: [tasks]\nrun: sleep 120\n", "");
    let mut w = Watcher::start(&b, &["--grace", "200ms"]);
    let id = b.task("Stuck", &[]);
    w.wait_for("the activation to start", |v| v["event"] == "started");
    let asked = Instant::now();
    let (code, seen) = w.stop();
    assert_eq!(code, 0);
    assert!(asked.elapsed() < Duration::from_secs(30));
    let end = seen.iter().find(|v| v["event"] == "finished").unwrap();
    assert_eq!(end["result"], "killed");
    let ends = finished(&b.log());
    assert_eq!(ends.len(), 1);
    assert_eq!(ends[0]["to"], "killed");
    assert_eq!(ends[0]["doc"], format!("tasks/{id}.md"));
    // The stopped watcher says so in schedule.md.
    assert!(
        b.read("control/schedule.md")
            .contains("`tavern watch` is not running")
    );
}

#[test]
fn a_hostile_title_or_file_name_never_reaches_a_shell() {
    let b = TestBoard::new();
    source(
        &b,
        "echo",
        "watch: [tasks, solutions]\nrun: printf '%s|%s|%s\\n' {id} {path} \"$TAVERN_DOC\" >> ran.txt\n",
        "",
    );
    once(&b, &[]).0.ok();
    let id = b.task(
        "$(touch pwned1)\"; touch pwned2; echo \"`touch pwned3`",
        &[],
    );
    std::fs::create_dir_all(b.board().join(format!("solutions/{id}"))).unwrap();
    let nasty = "a b'; touch pwned4; echo '$(touch pwned5).md";
    b.write(&format!("solutions/{id}/{nasty}"), "notes\n");
    let (out, _) = once(&b, &[]);
    out.ok();
    for p in ["pwned1", "pwned2", "pwned3", "pwned4", "pwned5"] {
        assert!(!b.root().join(p).exists(), "{p} was created");
    }
    let board = b.board().display().to_string();
    let ran = sorted(lines_of(&b, "ran.txt"));
    assert_eq!(
        ran,
        sorted(vec![
            format!("{id}|{board}/tasks/{id}.md|{board}/tasks/{id}.md"),
            format!("{id}|{board}/solutions/{id}/{nasty}|{board}/solutions/{id}/{nasty}"),
        ])
    );
}

#[test]
fn children_get_the_environment_and_the_prompt() {
    let b = TestBoard::new();
    source(
        &b,
        "env",
        "watch: [tasks]\non: [transition:review]\nrun: env | grep '^TAVERN_' | sort > env.txt; cat > prompt.txt\n",
        "Review $TAVERN_ID.\nBe kind.\n",
    );
    let id = b.task("Review me", &[]);
    for t in ["claim", "start"] {
        b.run(&[t, &id]).ok();
    }
    once(&b, &[]).0.ok();
    b.run(&["submit", &id]).ok();
    once(&b, &[]).0.ok();
    let submit = ops(&b.log(), "transition")
        .into_iter()
        .find(|e| e["to"] == "review")
        .unwrap();
    let board = b.board().display().to_string();
    assert_eq!(
        lines_of(&b, "env.txt"),
        vec![
            format!("TAVERN_AGENT=env"),
            format!("TAVERN_BOARD={board}"),
            "TAVERN_CHAIN=1".to_string(),
            format!("TAVERN_DOC={board}/tasks/{id}.md"),
            "TAVERN_EVENT=transition:review".to_string(),
            format!("TAVERN_ID={id}"),
            "TAVERN_REGION=tasks".to_string(),
            format!("TAVERN_SEQ={}", submit["seq"]),
        ]
    );
    assert_eq!(
        std::fs::read_to_string(b.root().join("prompt.txt")).unwrap(),
        "Review $TAVERN_ID.\nBe kind.\n"
    );
}

#[test]
fn run_outputs_older_than_keep_runs_are_removed_by_the_watcher_and_by_sweep() {
    let b = board_keeping_runs_for_an_hour();
    source(&b, "say", "watch: [tasks]\nrun: echo said {id}\n", "");
    once(&b, &[]).0.ok();

    let runs = b.board().join(".state/runs");
    std::fs::create_dir_all(runs.join("kept-dir")).unwrap();
    for name in ["old-activation.log", "check-t-1-1-old.log", "recent.log"] {
        std::fs::write(runs.join(name), "output\n").unwrap();
    }
    age(
        &runs.join("old-activation.log"),
        Duration::from_secs(2 * 3600),
    );
    age(
        &runs.join("check-t-1-1-old.log"),
        Duration::from_secs(25 * 3600),
    );
    age(&runs.join("recent.log"), Duration::from_secs(50 * 60));
    // Only regular files are removed: a directory someone put there stays.
    age(&runs.join("kept-dir"), Duration::from_secs(9 * 3600));

    let id = b.task("Say it", &[]);
    let (out, lines) = once(&b, &[]);
    out.ok();
    let started: Vec<&Value> = lines.iter().filter(|l| l["event"] == "started").collect();
    assert_eq!(started.len(), 1, "{lines:?}");
    let output = started[0]["output"].as_str().unwrap().to_string();
    assert_eq!(b.read(&output), format!("said {id}\n"));

    let names = |b: &TestBoard| -> BTreeSet<String> {
        std::fs::read_dir(b.board().join(".state/runs"))
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect()
    };
    let activation = output.trim_start_matches(".state/runs/").to_string();
    assert_eq!(
        names(&b),
        BTreeSet::from([activation.clone(), "kept-dir".into(), "recent.log".into()])
    );

    // `sweep` does the same for boards no watcher runs on; it says what it removed.
    age(&runs.join("recent.log"), Duration::from_secs(61 * 60));
    b.run(&["sweep"])
        .ok()
        .stdout_is("removed 1 run output older than 1h from .state/runs/\n");
    assert_eq!(names(&b), BTreeSet::from([activation, "kept-dir".into()]));
    let json = b.run(&["sweep", "--json"]).ok().json();
    assert_eq!(json["runs_removed"], 0);
}

#[test]
fn sweep_spares_the_output_of_a_quiet_activation_that_still_runs() {
    let b = board_keeping_runs_for_an_hour();
    source(&b, "quiet", "watch: [tasks]\nrun: sleep 30\n", "");
    let mut w = Watcher::start(&b, &["--grace", "200ms"]);
    b.task("Think long", &[]);
    let started = w.wait_for("the activation to start", |v| v["event"] == "started");
    let output = b.board().join(started["output"].as_str().unwrap());
    // Silent for longer than keep_runs, as a long think without output is.
    age(&output, Duration::from_secs(2 * 3600));
    let stale = b.board().join(".state/runs/finished-long-ago.log");
    std::fs::write(&stale, "output\n").unwrap();
    age(&stale, Duration::from_secs(2 * 3600));

    let json = b.run(&["sweep", "--json"]).ok().json();
    assert_eq!(json["runs_removed"], 1);
    assert!(
        output.exists(),
        "the running activation's output was removed"
    );
    assert!(!stale.exists());
    let (code, _) = w.stop();
    assert_eq!(code, 0);
}

#[test]
fn sweep_never_follows_a_symlinked_runs_directory_nor_blocks_on_a_fifo() {
    let b = board_keeping_runs_for_an_hour();
    let elsewhere = b.root().join("elsewhere");
    std::fs::create_dir_all(&elsewhere).unwrap();
    std::fs::write(elsewhere.join("notes.txt"), "keep me\n").unwrap();
    age(&elsewhere.join("notes.txt"), Duration::from_secs(3 * 3600));
    let state = b.board().join(".state");
    std::fs::create_dir_all(state.join("watch")).unwrap();
    std::os::unix::fs::symlink(&elsewhere, state.join("runs")).unwrap();
    // A FIFO where the record of running activations is: read, it would never end.
    let fifo = state.join("watch/running");
    assert!(
        Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap()
            .success()
    );
    let mut child = b
        .cmd(&["sweep"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("sweep blocked on the FIFO");
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(3));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "error: .state/runs: is a symbolic link or not a directory: run outputs are written and removed only in a real directory; remove it and tavern makes one\n"
    );
    assert_eq!(
        std::fs::read_to_string(elsewhere.join("notes.txt")).unwrap(),
        "keep me\n"
    );
}
