//! `events`: a cursor per agent over the log.

use crate::util::{TestBoard, redact_times};

#[test]
fn events_show_what_is_new_for_each_agent() {
    let b = TestBoard::new();
    b.task("One", &["--id", "t1", "--as", "planner"]);
    let first = b.run(&["events", "--as", "coder-1"]);
    assert_eq!(
        redact_times(&first.ok().stdout),
        "1 <TIME> planner create tasks/t1.md rev 1\n"
    );
    b.run(&["events", "--as", "coder-1"])
        .ok()
        .stdout_is("")
        .stderr_is("no new events since seq 1\n");
    b.run(&["events", "--as", "coder-1", "--json"])
        .ok()
        .stdout_is("")
        .stderr_is("");
    b.run(&["claim", "t1", "--as", "coder-2"]).ok();
    assert_eq!(
        redact_times(&b.run(&["events", "--as", "coder-1"]).ok().stdout),
        "2 <TIME> coder-2 claim tasks/t1.md pending -> claimed rev 2\n"
    );
    // Another agent has its own cursor.
    assert_eq!(
        b.run(&["events", "--as", "coder-2"])
            .ok()
            .stdout
            .lines()
            .count(),
        2
    );
    // --since overrides the cursor (and moves it).
    assert_eq!(
        b.run(&["events", "--as", "coder-1", "--since", "0"])
            .ok()
            .stdout
            .lines()
            .count(),
        2
    );
    let v: Vec<serde_json::Value> = b
        .run(&["events", "--as", "coder-3", "--json"])
        .ok()
        .stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(v.len(), 2);
    assert_eq!(v[1]["op"], "claim");
    b.run(&["events", "--as", "Not An Id"])
        .code(2)
        .stderr_has("the actor must be a valid id");
}

/// What a new agent reads after a context reset is bounded: 50 entries by default, the
/// oldest new ones, without diffs unless `--patch`, with a note on stderr saying how many
/// remain; calling again gives the next ones, each entry once.
#[test]
fn events_come_fifty_at_a_time_and_each_once() {
    let b = TestBoard::new();
    for i in 1..=54 {
        b.task(
            &format!("Task {i}"),
            &["--id", &format!("t{i}"), "--as", "planner"],
        );
    }
    let seqs = |out: &crate::util::Out| -> Vec<u64> {
        out.stdout
            .lines()
            .map(|l| {
                let e: serde_json::Value = serde_json::from_str(l).unwrap();
                e["seq"].as_u64().unwrap()
            })
            .collect()
    };
    let first = b.run(&["events", "--as", "coder-1", "--json"]);
    first.ok().stderr_is(
        "4 more new entries: `tavern events` again shows the next 4 (`--all`: every one)\n",
    );
    assert_eq!(seqs(&first), (1..=50).collect::<Vec<u64>>());
    assert!(
        !first.stdout.contains("\"diff\""),
        "no diffs without --patch"
    );
    let rest = b.run(&["events", "--as", "coder-1", "--json"]);
    rest.ok().stderr_is("");
    assert_eq!(seqs(&rest), [51, 52, 53, 54]);
    b.run(&["events", "--as", "coder-1"])
        .ok()
        .stdout_is("")
        .stderr_is("no new events since seq 54\n");
    // --limit pages in smaller steps; text says what is left the same way.
    let two = b.run(&["events", "--as", "coder-2", "--limit", "2"]);
    assert_eq!(
        redact_times(&two.ok().stdout),
        "1 <TIME> planner create tasks/t1.md rev 1\n2 <TIME> planner create tasks/t2.md rev 1\n"
    );
    two.stderr_is(
        "52 more new entries: `tavern events` again shows the next 2 (`--all`: every one)\n",
    );
    // --patch gives the diffs, in JSON as in text.
    let patched = b.run(&[
        "events", "--as", "coder-2", "--limit", "1", "--patch", "--json",
    ]);
    let e: serde_json::Value = serde_json::from_str(patched.ok().stdout.trim()).unwrap();
    assert_eq!(e["seq"], 3);
    assert!(
        e["diff"].as_str().unwrap().contains("+title: Task 3"),
        "{e}"
    );
    let text = b.run(&["events", "--as", "coder-2", "--limit", "1", "--patch"]);
    assert!(
        text.ok().stdout.contains("+title: Task 4\n"),
        "{}",
        text.stdout
    );
    // --all: every remaining one, no note.
    let all = b.run(&["events", "--as", "coder-2", "--all", "--json"]);
    all.ok().stderr_is("");
    assert_eq!(seqs(&all), (5..=54).collect::<Vec<u64>>());
    // Nothing is lost or repeated between the pages: the cursor moved past each.
    b.run(&["events", "--as", "coder-2"]).ok().stdout_is("");
    b.run(&["events", "--as", "coder-3", "--limit", "0"])
        .code(2)
        .stderr_is("error: --limit 0 would show nothing: give at least 1, or --all\n");
    b.run(&["events", "--as", "coder-3", "--limit", "5", "--all"])
        .code(2)
        .stderr_has("cannot be used with");
    // Refused calls moved no cursor: coder-3 still starts at the beginning.
    assert_eq!(
        seqs(&b.run(&["events", "--as", "coder-3", "--json", "--limit", "1"])),
        [1]
    );
}
