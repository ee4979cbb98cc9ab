//! `completion_requires`: document queries and commands checked before a task is done.

use crate::util::{TestBoard, snapshot};

/// A task claimed and started by coder-1, with the given requirements.
fn task_with(b: &TestBoard, requirements: &str) {
    b.write("tasks/t-req.md", format!("---\nid: t-req\ntitle: Checked\nstatus: pending\ncompletion_requires:\n{requirements}---\n"));
    for step in ["claim", "start"] {
        b.run(&[step, "t-req", "--as", "coder-1"]).ok();
    }
}

#[test]
fn a_document_requirement_blocks_done_until_it_holds() {
    let b = TestBoard::new();
    task_with(
        &b,
        "  - doc: solutions/{id}/design.md\n    where: status=approved\n",
    );
    let before = snapshot(&b);
    b.run(&["done", "t-req", "--as", "coder-1"]).code(3).stderr_is(
        "error: tasks/t-req.md: transition 'done' refused: completion requirement 1 of 1 failed: solutions/t-req/design.md does not exist\n",
    );
    b.write(
        "solutions/t-req/design.md",
        "---\nstatus: draft\n---\n# Design\n",
    );
    b.run(&["done", "t-req", "--as", "coder-1"])
        .code(3)
        .stderr_has("solutions/t-req/design.md does not match 'status=approved'");
    assert_eq!(
        snapshot(&b).get("tasks/t-req.md"),
        before.get("tasks/t-req.md"),
        "a refused transition writes nothing"
    );
    b.write(
        "solutions/t-req/design.md",
        "---\nstatus: approved\n---\n# Design\n",
    );
    b.run(&["done", "t-req", "--as", "coder-1"])
        .ok()
        .stdout_is("done t-req (rev 3, done)\n");
}

#[test]
fn a_region_count_requirement() {
    let b = TestBoard::new();
    task_with(
        &b,
        "  - region: observations\n    where: about={id} severity=high,critical status!=resolved\n    count: 0\n",
    );
    b.run(&[
        "new",
        "observation",
        "--title",
        "Broken",
        "--id",
        "obs-bad",
        "--set",
        "severity=high",
        "--set",
        "about=[t-req]",
    ])
    .ok();
    b.task("Other", &["--id", "t-other"]);
    b.run(&[
        "new",
        "observation",
        "--title",
        "Elsewhere",
        "--set",
        "severity=high",
        "--set",
        "about=[t-other]",
    ])
    .ok();
    b.run(&["submit", "t-req", "--as", "coder-1"]).ok();
    b.run(&["approve", "t-req", "--as", "reviewer"]).code(3).stderr_is(
        "error: tasks/t-req.md: transition 'approve' refused: completion requirement 1 of 1 failed: 1 observations match 'about=t-req severity=high,critical status!=resolved' (obs-bad), expected 0\n",
    );
    b.run(&["edit", "obs-bad", "--set", "status=resolved"]).ok();
    b.run(&["approve", "t-req", "--as", "reviewer"]).ok();
}

#[cfg(unix)]
#[test]
fn a_command_requirement_runs_in_the_project_with_a_timeout() {
    let b = TestBoard::new();
    task_with(
        &b,
        "  - run: test -f ready.txt && echo checked\n  - run: sleep 5\n    timeout: 1s\n",
    );
    b.run(&["done", "t-req", "--as", "coder-1"]).code(3).stderr_has("completion requirement 1 of 2 failed: `test -f ready.txt && echo checked` exited with 1 (output in .state/runs/check-t-req-1-");
    std::fs::write(b.root().join("ready.txt"), "").unwrap();
    let started = std::time::Instant::now();
    b.run(&["done", "t-req", "--as", "coder-1"])
        .code(3)
        .stderr_has("completion requirement 2 of 2 failed: `sleep 5` did not finish within 1s");
    assert!(
        started.elapsed() < std::time::Duration::from_secs(4),
        "the timeout killed the command"
    );
    let runs: Vec<String> = std::fs::read_dir(b.board().join(".state/runs"))
        .unwrap()
        .map(|e| std::fs::read_to_string(e.unwrap().path()).unwrap())
        .collect();
    assert!(runs.iter().any(|r| r == "checked\n"), "{runs:?}");
    assert!(b.read("tasks/t-req.md").contains("status: working"));
}

#[test]
fn malformed_requirements_are_invalid_and_paths_stay_inside() {
    let b = TestBoard::new();
    task_with(&b, "  - doc: ../../etc/passwd\n");
    b.run(&["done", "t-req", "--as", "coder-1"]).code(6).stderr_is("error: tasks/t-req.md: completion_requires item 1: doc '../../etc/passwd' must be a relative path inside the board\n");
    let b = TestBoard::new();
    task_with(&b, "  - nothing: here\n");
    b.run(&["done", "t-req", "--as", "coder-1"])
        .code(6)
        .stderr_has("completion_requires item 1: needs one of doc:, region: or run:");
}
