//! Claims and transitions: the workflow of board.yaml, ownership, dependencies, PAUSE.

use crate::util::TestBoard;

#[test]
fn a_task_goes_through_the_default_workflow() {
    let b = TestBoard::new();
    b.task("Flow", &["--id", "t-flow"]);
    let steps: [(&[&str], &str); 6] = [
        (&["claim", "t-flow"], "claimed t-flow (rev 2, claimed)\n"),
        (&["start", "t-flow"], "started t-flow (rev 3, working)\n"),
        (&["submit", "t-flow"], "submitted t-flow (rev 4, review)\n"),
        (
            &["reject", "t-flow", "--note", "needs tests"],
            "rejected t-flow (rev 5, working)\n",
        ),
        (&["submit", "t-flow"], "submitted t-flow (rev 6, review)\n"),
        (&["approve", "t-flow"], "approved t-flow (rev 7, done)\n"),
    ];
    for (args, out) in steps {
        b.run(&[args, &["--as", "coder-1"]].concat())
            .ok()
            .stdout_is(out);
    }
    let log = b.log();
    let ops: Vec<(String, String, String)> = log[1..]
        .iter()
        .map(|e| {
            (
                e["op"].as_str().unwrap().into(),
                e["from"].as_str().unwrap().into(),
                e["to"].as_str().unwrap().into(),
            )
        })
        .collect();
    let expected = [
        ("claim", "pending", "claimed"),
        ("transition", "claimed", "working"),
        ("transition", "working", "review"),
        ("transition", "review", "working"),
        ("transition", "working", "review"),
        ("transition", "review", "done"),
    ];
    assert_eq!(
        ops,
        expected.map(|(a, b, c)| (a.to_string(), b.to_string(), c.to_string()))
    );
    assert_eq!(log[4]["transition"], "reject");
    assert_eq!(log[4]["note"], "needs tests");
    // Done is final.
    b.run(&["start", "t-flow", "--as", "coder-1"]).code(3).stderr_is("error: tasks/t-flow.md: cannot start: the task is done; allowed from done: none (it is final)\n");
}

#[test]
fn transitions_not_allowed_now_list_the_allowed_ones() {
    let b = TestBoard::new();
    b.task("T", &["--id", "t1"]);
    b.run(&["submit", "t1"]).code(3).stderr_is("error: tasks/t1.md: cannot submit: the task is pending; allowed from pending: claim, fail, cancel\n");
    b.run(&["move", "t1", "review"]).code(3).stderr_is(
        "error: tasks/t1.md: no transition leads from pending to review; from pending it can go to: claimed (claim), failed (fail), cancelled (cancel)\n",
    );
    b.run(&["move", "t1", "nowhere"])
        .code(2)
        .stderr_has("unknown state 'nowhere'");
    b.run(&["move", "t1", "claimed", "--as", "a"])
        .ok()
        .stdout_is("moved t1 (rev 2, claimed)\n");
    assert_eq!(b.log().last().unwrap()["op"], "claim");
}

#[test]
fn only_the_claimant_moves_a_claimed_task_unless_forced() {
    let b = TestBoard::new();
    b.task("Owned", &["--id", "t-own"]);
    b.run(&["claim", "t-own", "--as", "coder-1"]).ok();
    b.run(&["claim", "t-own", "--as", "coder-1"])
        .ok()
        .stdout_is("already yours: t-own (rev 2, claimed)\n");
    assert_eq!(b.log().len(), 2, "a re-claim logs nothing");
    b.run(&["start", "t-own", "--as", "coder-2"]).code(3).stderr_is(
        "error: tasks/t-own.md: claimed by coder-1; only the claimant may move it (you are coder-2; a human may override with --force)\n",
    );
    b.run(&["release", "t-own", "--as", "lead", "--force"])
        .ok()
        .stdout_is("released t-own (rev 3, pending)\n");
    let text = b.read("tasks/t-own.md");
    assert!(
        text.contains("\nstatus: pending\n")
            && !text.contains("claimed_by")
            && !text.contains("claimed_at"),
        "{text}"
    );
    let e = b.log().last().unwrap().clone();
    assert_eq!(e["op"], "release");
    assert_eq!(e["actor"], "lead");
    assert_eq!(e["force"], true);
    assert_eq!(e["note"], "forced over coder-1");
    // Fencing: the old claimant's late transition is refused.
    b.run(&["claim", "t-own", "--as", "coder-2"]).ok();
    b.run(&["start", "t-own", "--as", "coder-1"])
        .code(3)
        .stderr_has("claimed by coder-2");
}

#[test]
fn dependencies_gate_claims() {
    let b = TestBoard::new();
    b.task("Base", &["--id", "t-base"]);
    b.task("Top", &["--id", "t-top", "--depends-on", "t-base"]);
    b.run(&["claim", "t-top", "--as", "a"])
        .code(3)
        .stderr_is("error: tasks/t-top.md: not claimable yet: waits for t-base (pending)\n");
    b.run(&["claim", "--next", "--as", "a"])
        .ok()
        .stdout_is("claimed t-base (rev 2, claimed)\n");
    b.run(&["claim", "--next", "--as", "b"])
        .code(4)
        .stderr_has("claimable task not found");
    for step in ["start", "done"] {
        b.run(&[step, "t-base", "--as", "a"]).ok();
    }
    b.run(&["claim", "--next", "--as", "b", "--json"]).ok();
    assert!(b.read("tasks/t-top.md").contains("claimed_by: b\n"));
}

#[test]
fn claim_next_picks_priority_then_age_and_filters() {
    let b = TestBoard::new();
    b.task("Low", &["--id", "t-low", "-p", "3"]);
    b.task(
        "Old high",
        &[
            "--id",
            "t-old",
            "-p",
            "1",
            "--set",
            "created_at=2026-01-01T00:00:00Z",
            "--tag",
            "ui",
        ],
    );
    b.task("New high", &["--id", "t-new", "-p", "1"]);
    b.run(&["claim", "--next", "tag:ui", "--as", "x"])
        .ok()
        .stdout_is("claimed t-old (rev 2, claimed)\n");
    b.run(&["claim", "--next", "--as", "x"])
        .ok()
        .stdout_is("claimed t-new (rev 2, claimed)\n");
    b.run(&["claim", "--next", "priority<3", "--as", "x"])
        .code(4);
    let v = b
        .run(&["claim", "--next", "--as", "x", "--json"])
        .ok()
        .json();
    assert_eq!(v["id"], "t-low");
    assert_eq!(v["claimed_by"], "x");
    assert_eq!(v["status"], "claimed");
    b.run(&["claim", "--next", "bad="]).code(2);
}

#[test]
fn pause_stops_claims_with_the_reason() {
    let b = TestBoard::new();
    b.task("P", &["--id", "t-p"]);
    b.write("control/PAUSE", "release freeze until the demo\n");
    b.run(&["claim", "t-p", "--as", "a"]).code(5).stderr_is("error: the board is paused: release freeze until the demo\nhint: `tavern resume` lifts the pause\n");
    b.run(&["claim", "--next", "--as", "a"]).code(5);
    assert!(b.read("tasks/t-p.md").contains("status: pending"));
    std::fs::remove_file(b.board().join("control/PAUSE")).unwrap();
    b.run(&["claim", "t-p", "--as", "a"]).ok();
}

#[test]
fn a_boards_own_workflow_and_transition_names() {
    let b = TestBoard::new();
    let yaml = b.read("board.yaml").replace(
        "    cancel:  { from: \"*\", to: cancelled }\n",
        "    cancel:  { from: \"*\", to: cancelled }\n    shelve:  { from: [pending], to: shelved }\n",
    );
    let yaml = yaml.replace("states: [pending,", "states: [shelved, pending,");
    b.write("board.yaml", yaml);
    b.task("Shelve me", &["--id", "t-s"]);
    b.run(&["shelve", "t-s"])
        .ok()
        .stdout_is("shelve: t-s (rev 2, shelved)\n");
    assert_eq!(b.log().last().unwrap()["transition"], "shelve");
    b.run(&["frobnicate", "t-s"])
        .code(2)
        .stderr_has("unrecognized command 'frobnicate'");
    b.write(
        "board.yaml",
        b.read("board.yaml").replace("to: shelved", "to: nowhere"),
    );
    b.run(&["list"]).code(6).stderr_has(
        "board.yaml: transition 'shelve' leads to 'nowhere', which is not in workflow.states",
    );
}

#[test]
fn if_rev_makes_transitions_compare_and_swap() {
    let b = TestBoard::new();
    b.task("CAS", &["--id", "t-cas"]);
    b.run(&["claim", "t-cas", "--if-rev", "2", "--as", "a"])
        .code(3)
        .stderr_has("rev is 1, not 2");
    b.run(&["claim", "t-cas", "--if-rev", "1", "--as", "a"])
        .ok();
    b.run(&["start", "t-cas", "--if-rev", "1", "--as", "a"])
        .code(3);
    b.run(&["start", "t-cas", "--if-rev", "2", "--as", "a"])
        .ok();
}

#[test]
fn a_reviewer_approves_and_rejects_without_force() {
    let b = TestBoard::new();
    b.task("Reviewed", &["--id", "t-rev"]);
    for step in ["claim", "start", "submit"] {
        b.run(&[step, "t-rev", "--as", "coder-1"]).ok();
    }
    b.run(&["reject", "t-rev", "--as", "reviewer", "--note", "add tests"])
        .ok()
        .stdout_is("rejected t-rev (rev 5, working)\n");
    let e = b.log().last().unwrap().clone();
    assert_eq!(e["actor"], "reviewer");
    assert!(e.get("force").is_none(), "{e}");
    assert_eq!(e["note"], "add tests");
    // The claim stays with the coder, who resubmits; the reviewer approves.
    b.run(&["submit", "t-rev", "--as", "coder-1"]).ok();
    b.run(&["approve", "t-rev", "--as", "reviewer"])
        .ok()
        .stdout_is("approved t-rev (rev 7, done)\n");
    // A transition that is the claimant's stays the claimant's.
    b.task("Other", &["--id", "t-o"]);
    b.run(&["claim", "t-o", "--as", "coder-1"]).ok();
    b.run(&["start", "t-o", "--as", "reviewer"]).code(3);
}
