//! Review means someone else: in the default workflow the claimant of a task, and whoever
//! submitted it, cannot approve or reject it; another agent or a human can; a human's
//! `--force` overrides (logged); a board opts in to self-review with `by: any`.

use crate::util::{TestBoard, snapshot};

/// A task `t-r` claimed, started and submitted by `coder`.
fn in_review(b: &TestBoard) {
    b.task("Parser", &["--id", "t-r"]);
    for step in ["claim", "start", "submit"] {
        b.run(&[step, "t-r", "--as", "coder"]).ok();
    }
}

fn refusal(actor: &str, name: &str, why: &str) -> String {
    format!(
        "error: tasks/t-r.md: {actor} cannot {name} its own task ({why}): review means someone else (`{name}` is by: reviewer in board.yaml); another agent or a human may {name} it, a human listed under humans: may override with --force, and a board may allow self-review with by: any\n"
    )
}

#[test]
fn the_claimant_cannot_approve_or_reject_its_own_task_and_nothing_changes() {
    let b = TestBoard::new();
    in_review(&b);
    let before = snapshot(&b);
    let why = "coder claimed it and submitted it";
    b.run(&["approve", "t-r", "--as", "coder"])
        .code(3)
        .stdout_is("")
        .stderr_is(&refusal("coder", "approve", why));
    b.run(&["reject", "t-r", "--as", "coder", "--note", "meh"])
        .code(3)
        .stderr_is(&refusal("coder", "reject", why));
    // `move ID done` finds approve, and the same rule; `done` no longer leaves review.
    b.run(&["move", "t-r", "done", "--as", "coder"])
        .code(3)
        .stderr_is(&refusal("coder", "approve", why));
    b.run(&["done", "t-r", "--as", "coder"])
        .code(3)
        .stderr_is("error: tasks/t-r.md: transition 'done' is not allowed: the task's status is review; allowed from review: approve, reject, block, fail, cancel\n");
    // An agent's --force is no override: only a human's is.
    b.run(&["approve", "t-r", "--as", "coder", "--force"])
        .code(3)
        .stderr_is(&refusal("coder", "approve", why));
    let out = b.run(&["approve", "t-r", "--as", "coder", "--json"]);
    out.code(3);
    let json: serde_json::Value = serde_json::from_str(&out.stderr).unwrap();
    assert_eq!(json["error"]["kind"], "conflict", "{json}");
    assert_eq!(
        snapshot(&b),
        before,
        "a refused self-review changed the board"
    );

    // Another agent may.
    b.run(&["reject", "t-r", "--as", "reviewer", "--note", "no tests"])
        .ok()
        .stdout_is("rejected t-r (rev 5, working)\n");
    b.run(&["submit", "t-r", "--as", "coder"]).ok();
    b.run(&["approve", "t-r", "--as", "reviewer"])
        .ok()
        .stdout_is("approved t-r (rev 7, done)\n");
    let e = b.log().last().unwrap().clone();
    assert_eq!(
        (&e["actor"], &e["transition"], e.get("force")),
        (&"reviewer".into(), &"approve".into(), None)
    );
    assert!(b.read("tasks/t-r.md").contains("\nstatus: done\n"));
}

#[test]
fn whoever_submitted_a_task_for_its_claimant_cannot_review_it_either() {
    let b = TestBoard::new();
    b.task("Parser", &["--id", "t-r"]);
    b.run(&["claim", "t-r", "--as", "coder"]).ok();
    b.run(&["start", "t-r", "--as", "coder"]).ok();
    // Another agent pushes it into review over the claimant (logged as forced)...
    b.run(&["submit", "t-r", "--as", "helper", "--force"]).ok();
    assert_eq!(b.log().last().unwrap()["note"], "forced over coder");
    // ... and cannot then approve what it submitted.
    b.run(&["approve", "t-r", "--as", "helper"])
        .code(3)
        .stderr_is(&refusal("helper", "approve", "helper submitted it"));
    b.run(&["approve", "t-r", "--as", "coder"])
        .code(3)
        .stderr_is(&refusal("coder", "approve", "coder claimed it"));
    b.run(&["approve", "t-r", "--as", "third"]).ok();
}

#[test]
fn a_humans_force_overrides_the_review_rule_and_the_log_says_so() {
    let b = TestBoard::new();
    let yaml = b
        .read("board.yaml")
        .replace("humans: []", "humans: [alice]");
    b.write("board.yaml", yaml);
    b.task("Hotfix", &["--id", "t-r"]);
    for step in ["claim", "start", "submit"] {
        b.run(&[step, "t-r", "--as", "alice"]).ok();
    }
    b.run(&["approve", "t-r", "--as", "alice"])
        .code(3)
        .stderr_is(&refusal(
            "alice",
            "approve",
            "alice claimed it and submitted it",
        ));
    b.run(&[
        "approve", "t-r", "--as", "alice", "--force", "--note", "urgent",
    ])
    .ok()
    .stdout_is("approved t-r (rev 5, done)\n");
    let e = b.log().last().unwrap().clone();
    assert_eq!(e["actor"], "alice");
    assert_eq!(e["force"], true);
    assert_eq!(
        e["note"],
        "forced over the review rule: alice reviews its own task; urgent"
    );
}

#[test]
fn a_board_opts_in_to_self_review_with_by_any() {
    let b = TestBoard::new();
    let yaml = b
        .read("board.yaml")
        .replace("to: done, by: reviewer", "to: done, by: any");
    assert!(yaml.contains("approve: { from: [review], to: done, by: any }"));
    b.write("board.yaml", yaml);
    in_review(&b);
    // reject stays by: reviewer on this board; approve does not.
    b.run(&["reject", "t-r", "--as", "coder"]).code(3);
    b.run(&["approve", "t-r", "--as", "coder"])
        .ok()
        .stdout_is("approved t-r (rev 5, done)\n");
    assert!(b.log().last().unwrap().get("force").is_none());
}
