//! `log` and `diff`.

use std::io::{BufRead, BufReader};
use std::process::Stdio;

use crate::util::{TestBoard, redact_times};

fn story() -> TestBoard {
    let b = TestBoard::new();
    b.task("Logged", &["--id", "t-log", "--as", "planner"]);
    b.task("Other", &["--id", "t-other", "--as", "planner"]);
    b.run(&["claim", "t-log", "--as", "coder-1"]).ok();
    b.run(&["edit", "t-other", "--set", "priority=0", "--as", "planner"])
        .ok();
    b
}

#[test]
fn log_lines_and_filters() {
    let b = story();
    assert_eq!(
        redact_times(&b.run(&["log"]).ok().stdout),
        "1 <TIME> planner create tasks/t-log.md rev 1\n2 <TIME> planner create tasks/t-other.md rev 1\n3 <TIME> coder-1 claim tasks/t-log.md pending -> claimed rev 2\n4 <TIME> planner edit tasks/t-other.md rev 2\n"
    );
    assert_eq!(
        redact_times(&b.run(&["log", "--since", "2"]).ok().stdout),
        "3 <TIME> coder-1 claim tasks/t-log.md pending -> claimed rev 2\n4 <TIME> planner edit tasks/t-other.md rev 2\n"
    );
    assert_eq!(
        b.run(&["log", "--since", "-1h"])
            .ok()
            .stdout
            .lines()
            .count(),
        4
    );
    assert_eq!(b.run(&["log", "--since", "2999-01-01"]).ok().stdout, "");
    assert_eq!(
        b.run(&["log", "--doc", "t-log"])
            .ok()
            .stdout
            .lines()
            .count(),
        2
    );
    assert_eq!(
        b.run(&["log", "--actor", "coder-1"])
            .ok()
            .stdout
            .lines()
            .count(),
        1
    );
    b.run(&["log", "--since", "yesterday"])
        .code(2)
        .stderr_has("--since 'yesterday'");
    let patch = b
        .run(&["log", "--since", "2", "--patch"])
        .ok()
        .stdout
        .clone();
    assert!(
        patch.contains("\n    -status: pending\n    +status: claimed\n"),
        "{patch}"
    );
    let lines: Vec<serde_json::Value> = b
        .run(&["log", "--json"])
        .ok()
        .stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 4);
    assert_eq!(lines[2]["op"], "claim");
    assert_eq!(lines[2]["seq"], 3);
}

#[test]
fn diff_shows_one_documents_history() {
    let b = story();
    let out = redact_times(&b.run(&["diff", "t-log"]).ok().stdout);
    assert!(
        out.starts_with(
            "1 <TIME> planner create tasks/t-log.md rev 1\n    @@ -0,0 +1,17 @@\n    +---\n    +id: t-log\n"
        ),
        "{out}"
    );
    assert!(out.contains("    +\n\n3 <TIME> coder-1 claim tasks/t-log.md pending -> claimed rev 2\n    @@ -3,3 +3,3 @@\n     title: Logged\n    -status: pending\n    +status: claimed\n"), "{out}");
    assert!(!out.contains("t-other"));
    let v = b.run(&["diff", "t-log", "--json"]).ok().json();
    assert_eq!(v["entries"].as_array().unwrap().len(), 2);
    b.run(&["diff", "t-none"]).code(4);
}

#[test]
fn log_follow_prints_what_others_append() {
    let b = story();
    let mut child = b
        .cmd(&["log", "--follow", "--since", "4"])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut reader = BufReader::new(child.stdout.take().unwrap());
    b.run(&["start", "t-log", "--as", "coder-1"]).ok();
    let mut line = String::new();
    reader.read_line(&mut line).unwrap();
    child.kill().unwrap();
    child.wait().unwrap();
    assert_eq!(
        redact_times(&line),
        "5 <TIME> coder-1 transition tasks/t-log.md start claimed -> working rev 3\n"
    );
}
