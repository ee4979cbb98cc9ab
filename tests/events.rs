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
