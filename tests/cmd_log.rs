//! `tavern log`: the compact line format, its filters, --patch, --json and --follow.

use std::io::{BufRead, BufReader};
use std::process::Stdio;
use std::time::Duration;

use crate::util::{TestBoard, redact_times};

/// create, create, claim, edit, forced start with a note, create an observation.
fn story() -> TestBoard {
    let b = TestBoard::new();
    b.task("Logged", &["--id", "t-log", "--as", "planner"]);
    b.task("Other", &["--id", "t-other", "--as", "planner"]);
    b.run(&["claim", "t-log", "--as", "coder-1"]).ok();
    b.run(&["edit", "t-other", "--set", "priority=0", "--as", "planner"])
        .ok();
    b.run(&[
        "start",
        "t-log",
        "--as",
        "lead",
        "--force",
        "--note",
        "line\nbreak",
    ])
    .ok();
    b.run(&[
        "new",
        "observation",
        "--title",
        "Seen",
        "--id",
        "o-1",
        "--as",
        "coder-1",
    ])
    .ok();
    b
}

const ALL: [&str; 6] = [
    "1 <TIME> planner create tasks/t-log.md rev 1",
    "2 <TIME> planner create tasks/t-other.md rev 1",
    "3 <TIME> coder-1 claim tasks/t-log.md pending -> claimed rev 2",
    "4 <TIME> planner edit tasks/t-other.md rev 2",
    "5 <TIME> lead transition tasks/t-log.md start claimed -> working rev 3 (forced) — forced over coder-1: line break",
    "6 <TIME> coder-1 create observations/o-1.md rev 1",
];

fn lines(b: &TestBoard, args: &[&str]) -> Vec<String> {
    let out = b.run(&[&["log"], args].concat());
    out.ok().stderr_is("");
    redact_times(&out.stdout)
        .lines()
        .map(str::to_string)
        .collect()
}

fn pick(seqs: &[usize]) -> Vec<String> {
    seqs.iter().map(|s| ALL[s - 1].to_string()).collect()
}

#[test]
fn one_compact_line_per_entry() {
    let b = story();
    assert_eq!(lines(&b, &[]), ALL);
    let empty = TestBoard::new();
    empty.run(&["log"]).ok().stdout_is("").stderr_is("");
}

#[test]
fn since_a_seq_or_a_time() {
    let b = story();
    assert_eq!(lines(&b, &["--since", "0"]), ALL);
    assert_eq!(lines(&b, &["--since", "4"]), pick(&[5, 6]));
    assert_eq!(lines(&b, &["--since", "6"]), pick(&[]));
    assert_eq!(lines(&b, &["--since", "99"]), pick(&[]));
    assert_eq!(lines(&b, &["--since", "-1h"]), ALL);
    assert_eq!(lines(&b, &["--since", "2000-01-01"]), ALL);
    assert_eq!(lines(&b, &["--since", "2999-01-01"]), pick(&[]));
    assert_eq!(lines(&b, &["--since", "+1h"]), pick(&[]));
    // An RFC 3339 time: entries at or after it.
    let at = b.log()[3]["at"].as_str().unwrap().to_string();
    assert_eq!(lines(&b, &["--since", &at]), pick(&[4, 5, 6]));
    for bad in ["yesterday", "-5", "4x", "2026-13-01"] {
        b.run(&["log", "--since", bad])
            .code(2)
            .stdout_is("")
            .stderr_is(&format!("error: --since '{bad}': expected a seq number, an RFC 3339 time, a date, or a relative time like -2h\n"));
    }
}

#[test]
fn filters_by_document_and_actor() {
    let b = story();
    for r in ["t-log", "t-l", "tasks/t-log", "tasks/t-log.md"] {
        assert_eq!(lines(&b, &["--doc", r]), pick(&[1, 3, 5]), "--doc {r}");
    }
    assert_eq!(lines(&b, &["--doc", "o-1"]), pick(&[6]));
    assert_eq!(lines(&b, &["--actor", "planner"]), pick(&[1, 2, 4]));
    assert_eq!(lines(&b, &["--actor", "nobody"]), pick(&[]));
    assert_eq!(
        lines(
            &b,
            &["--actor", "planner", "--doc", "t-other", "--since", "2"]
        ),
        pick(&[4])
    );
    b.run(&["log", "--doc", "t-"]).code(2).stderr_is(
        "error: id prefix 't-' is ambiguous; it matches:\n  tasks/t-log.md\n  tasks/t-other.md\n",
    );
    // A deleted document keeps its history.
    std::fs::remove_file(b.board().join("tasks/t-other.md")).unwrap();
    assert_eq!(lines(&b, &["--doc", "t-other"]), pick(&[2, 4]));
    b.run(&["log", "--doc", "t-none"]).code(4).stderr_is(
        "error: document 't-none' not found\nhint: the log has no entry about it either\n",
    );
    b.run(&["log", "--doc", "../etc/passwd"])
        .code(6)
        .stderr_has("invalid id");
}

#[test]
fn patch_shows_each_diff_indented() {
    let b = story();
    let out = b.run(&["log", "--since", "2", "--doc", "t-log", "--patch"]);
    out.ok();
    let log = b.log();
    let indent = |seq: usize| -> String {
        log[seq - 1]["diff"]
            .as_str()
            .unwrap()
            .lines()
            .map(|l| format!("    {l}\n"))
            .collect()
    };
    assert_eq!(
        redact_times(&out.stdout),
        redact_times(&format!(
            "{}\n{}{}\n{}",
            ALL[2],
            indent(3),
            ALL[4],
            indent(5)
        ))
    );
    assert!(
        out.stdout
            .contains("\n    -status: pending\n    +status: claimed\n"),
        "{}",
        out.stdout
    );
}

#[test]
fn json_is_one_object_per_line_matching_the_file() {
    let b = story();
    let out = b.run(&["log", "--json"]);
    out.ok().stderr_is("");
    let parsed: Vec<serde_json::Value> = out
        .stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(parsed, b.log(), "--json differs from log.yaml");
    assert_eq!(parsed[4]["force"], true);
    assert_eq!(parsed[4]["note"], "forced over coder-1: line\nbreak");
    let out = b.run(&["log", "--json", "--since", "5"]);
    assert_eq!(out.ok().stdout.lines().count(), 1);
    assert_eq!(out.json()["seq"], 6);
}

#[test]
fn unreadable_entries_are_skipped_with_a_warning() {
    let b = story();
    let text = b.read("log.yaml");
    let at = text.find("- seq: 3\n").unwrap();
    let line = text[..at].matches('\n').count() + 1;
    b.write(
        "log.yaml",
        format!("{}- seq: [oops\n  at: x\n{}", &text[..at], &text[at..]),
    );
    let out = b.run(&["log"]);
    out.ok().stderr_is(&format!(
        "warning: skipped log.yaml line {line}: entry cannot be parsed\n"
    ));
    assert_eq!(redact_times(&out.stdout).lines().collect::<Vec<_>>(), ALL);
    b.run(&["check"])
        .code(6)
        .stderr_has(&format!("log.yaml: line {line}: entry cannot be parsed\n"));
    // New entries still get the next seq.
    b.run(&["edit", "t-log", "--set", "x=1", "--as", "coder-1"])
        .ok();
    assert_eq!(
        b.run(&["log", "--since", "6", "--json"]).ok().json()["seq"],
        7
    );
}

#[test]
fn follow_prints_entries_appended_by_others() {
    let b = story();
    let mut child = b
        .cmd(&["log", "--follow", "--since", "5"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut reader = BufReader::new(stdout);
        loop {
            let mut line = String::new();
            if reader.read_line(&mut line).unwrap_or(0) == 0 {
                break;
            }
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    // What is already there and matches comes first.
    let first = rx.recv_timeout(Duration::from_secs(10));
    let first = first.expect("no output from log --follow");
    assert_eq!(redact_times(&first), format!("{}\n", ALL[5]));
    b.run(&["edit", "t-other", "--set", "x=1", "--as", "coder-2"])
        .ok();
    let next = rx.recv_timeout(Duration::from_secs(10));
    child.kill().unwrap();
    child.wait().unwrap();
    assert_eq!(
        redact_times(&next.expect("log --follow did not print the new entry")),
        "7 <TIME> coder-2 edit tasks/t-other.md rev 3\n"
    );
}

#[test]
fn follow_applies_the_filters_to_new_entries() {
    let b = story();
    let mut child = b
        .cmd(&[
            "log", "--follow", "--since", "6", "--actor", "coder-2", "--json",
        ])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut reader = BufReader::new(stdout);
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) > 0 {
            let _ = tx.send(line);
        }
    });
    b.run(&["edit", "t-other", "--set", "x=1", "--as", "coder-1"])
        .ok();
    b.run(&["edit", "t-other", "--set", "x=2", "--as", "coder-2"])
        .ok();
    let line = rx.recv_timeout(Duration::from_secs(10));
    child.kill().unwrap();
    child.wait().unwrap();
    let v: serde_json::Value = serde_json::from_str(&line.expect("nothing followed")).unwrap();
    assert_eq!(v["seq"], 8);
    assert_eq!(v["actor"], "coder-2");
}
