//! `tavern claim ID` and `claim --next`: who wins, what the loser hears, dependencies,
//! the choice of the best task, and PAUSE.

use crate::util::{TestBoard, redact_times, snapshot};

#[test]
fn the_winner_gets_the_task_and_one_log_entry() {
    let b = TestBoard::new();
    b.task(
        "Claim me",
        &["--id", "t-c", "--set", "updated_at=2020-01-01T00:00:00Z"],
    );
    b.run(&["claim", "t-c", "--as", "coder-1"])
        .ok()
        .stdout_is("claimed t-c (rev 2, claimed)\n")
        .stderr_is("");
    let text = b.read("tasks/t-c.md");
    let redacted = redact_times(&text);
    assert!(
        redacted.contains("\nstatus: claimed\n")
            && redacted.contains(
                "\nupdated_at: <TIME>\nrev: 2\nclaimed_by: coder-1\nclaimed_at: <TIME>\n---\n"
            ),
        "{text}"
    );
    let log = b.log();
    assert_eq!(log.len(), 2);
    let e = &log[1];
    let keys: Vec<&str> = e.as_object().unwrap().keys().map(String::as_str).collect();
    assert_eq!(
        keys,
        [
            "seq", "origin", "at", "actor", "op", "doc", "from", "to", "rev", "diff"
        ]
    );
    assert_eq!(e["seq"], 2);
    assert_eq!(e["actor"], "coder-1");
    assert_eq!(e["op"], "claim");
    assert_eq!(e["doc"], "tasks/t-c.md");
    assert_eq!(e["from"], "pending");
    assert_eq!(e["to"], "claimed");
    assert_eq!(e["rev"], 2);
    assert_eq!(
        redact_times(e["diff"].as_str().unwrap()),
        "@@ -3,3 +3,3 @@\n title: Claim me\n-status: pending\n+status: claimed\n priority: 2\n@@ -9,4 +9,6 @@\n created_by: tester\n-updated_at: <TIME>\n-rev: 1\n+updated_at: <TIME>\n+rev: 2\n+claimed_by: coder-1\n+claimed_at: <TIME>\n ---\n"
    );
}

#[test]
fn the_loser_exits_3_naming_the_owner_and_changes_nothing() {
    let b = TestBoard::new();
    b.task("Contested", &["--id", "t-x"]);
    b.run(&["claim", "t-x", "--as", "coder-1"]).ok();
    let before = snapshot(&b);
    b.run(&["claim", "t-x", "--as", "coder-2"])
        .code(3)
        .stdout_is("")
        .stderr_is("error: tasks/t-x.md: already claimed by coder-1 (status claimed)\n");
    let out = b.run(&["claim", "t-x", "--as", "coder-2", "--json"]);
    out.code(3).stdout_is("");
    assert_eq!(
        serde_json::from_str::<serde_json::Value>(&out.stderr).unwrap(),
        serde_json::json!({"error": {"kind": "conflict", "code": 3, "message": "tasks/t-x.md: already claimed by coder-1 (status claimed)", "path": "tasks/t-x.md"}})
    );
    b.run(&["start", "t-x", "--as", "coder-1"]).ok();
    b.run(&["claim", "t-x", "--as", "coder-2"])
        .code(3)
        .stderr_is("error: tasks/t-x.md: already claimed by coder-1 (status working)\n");
    let after = snapshot(&b);
    assert_eq!(after.len(), before.len());
}

#[test]
fn reclaiming_your_own_task_is_a_quiet_success() {
    let b = TestBoard::new();
    b.task("Mine", &["--id", "t-m"]);
    b.run(&["claim", "t-m", "--as", "coder-1"]).ok();
    let before = snapshot(&b);
    b.run(&["claim", "t-m", "--as", "coder-1"])
        .ok()
        .stdout_is("already yours: t-m (rev 2, claimed)\n")
        .stderr_is("");
    let v = b
        .run(&["claim", "t-m", "--as", "coder-1", "--json"])
        .ok()
        .json();
    assert_eq!(
        v,
        serde_json::json!({"ok": true, "changed": false, "id": "t-m", "path": "tasks/t-m.md", "rev": 2, "status": "claimed", "claimed_by": "coder-1", "title": "Mine"})
    );
    assert_eq!(snapshot(&b), before);
    b.run(&["start", "t-m", "--as", "coder-1"]).ok();
    b.run(&["claim", "t-m", "--as", "coder-1"])
        .ok()
        .stdout_is("already yours: t-m (rev 3, working)\n");
    assert_eq!(b.log().len(), 3);
}

#[test]
fn finished_tasks_cannot_be_claimed() {
    let b = TestBoard::new();
    b.task("Done", &["--id", "t-d"]);
    for step in ["claim", "start", "done"] {
        b.run(&[step, "t-d", "--as", "coder-1"]).ok();
    }
    b.task("Cancelled", &["--id", "t-k"]);
    b.run(&["cancel", "t-k"]).ok();
    let before = snapshot(&b);
    // Neither the former holder nor anyone else: the task is final.
    for who in ["coder-1", "coder-2"] {
        b.run(&["claim", "t-d", "--as", who]).code(3).stderr_is(
            "error: tasks/t-d.md: transition 'claim' is not allowed: the task's status is done; allowed from done: reopen\n",
        );
    }
    b.run(&["claim", "t-k"]).code(3).stderr_is(
        "error: tasks/t-k.md: transition 'claim' is not allowed: the task's status is cancelled; allowed from cancelled: reopen\n",
    );
    assert_eq!(snapshot(&b), before);
}

#[test]
fn dependencies_must_be_done_first() {
    let b = TestBoard::new();
    b.task("Base", &["--id", "t-base"]);
    b.task("Other", &["--id", "t-other"]);
    b.task("Top", &["--id", "t-top", "--depends-on", "t-base,t-other"]);
    // A dependency that vanished later.
    b.task("Gone", &["--id", "t-gone"]);
    b.task("Orphan", &["--id", "t-orphan", "--depends-on", "t-gone"]);
    std::fs::remove_file(b.board().join("tasks/t-gone.md")).unwrap();
    b.run(&["claim", "t-other", "--as", "a"]).ok();

    let before = snapshot(&b);
    b.run(&["claim", "t-top", "--as", "b"])
        .code(3)
        .stdout_is("")
        .stderr_is("error: tasks/t-top.md: not claimable yet: waits for t-base (pending), t-other (claimed)\n");
    b.run(&["claim", "t-orphan", "--as", "b"])
        .code(3)
        .stderr_is("error: tasks/t-orphan.md: not claimable yet: waits for t-gone (missing)\n");
    assert_eq!(snapshot(&b), before);

    for step in ["start", "done"] {
        b.run(&[step, "t-other", "--as", "a"]).ok();
    }
    b.run(&["claim", "t-top", "--as", "b"])
        .code(3)
        .stderr_is("error: tasks/t-top.md: not claimable yet: waits for t-base (pending)\n");
    // A failed dependency is not a done one.
    b.run(&["fail", "t-base"]).ok();
    b.run(&["claim", "t-top", "--as", "b"])
        .code(3)
        .stderr_is("error: tasks/t-top.md: not claimable yet: waits for t-base (failed)\n");
    b.write(
        "tasks/t-base.md",
        b.read("tasks/t-base.md")
            .replace("status: failed", "status: done"),
    );
    b.run(&["claim", "t-top", "--as", "b"])
        .ok()
        .stdout_is("claimed t-top (rev 2, claimed)\n");
}

#[test]
fn claim_next_takes_the_best_claimable_task() {
    let b = TestBoard::new();
    let old = ["--set", "created_at=2026-01-01T00:00:00Z"];
    b.task("Backlog", &["--id", "t-backlog", "-p", "4"]);
    b.task("Old", &[&["--id", "t-old", "-p", "1"][..], &old].concat());
    b.task("New", &["--id", "t-new", "-p", "1", "--tag", "ui"]);
    b.task(
        "Blocked by dep",
        &["--id", "t-dep", "-p", "0", "--depends-on", "t-new"],
    );
    b.task("Taken", &["--id", "t-taken", "-p", "0"]);
    b.run(&["claim", "t-taken", "--as", "someone"]).ok();

    // Priority first (t-dep is 0 but waits), then age.
    b.run(&["claim", "--next", "--as", "a"])
        .ok()
        .stdout_is("claimed t-old (rev 2, claimed)\n");
    // Query terms narrow the choice.
    b.run(&["claim", "--next", "tag:ui", "--as", "b"])
        .ok()
        .stdout_is("claimed t-new (rev 2, claimed)\n");
    b.run(&["claim", "--next", "priority<4", "--as", "c"])
        .code(4)
        .stdout_is("")
        .stderr_is("error: no claimable task matches 'priority<4'\nhint: every task is claimed, done, or waiting for its dependencies; `tavern list tasks` shows them\n");
    let v = b
        .run(&["claim", "--next", "--as", "c", "--json"])
        .ok()
        .json();
    assert_eq!(v["id"], "t-backlog");
    assert_eq!(v["changed"], true);
    assert_eq!(v["claimed_by"], "c");
    assert_eq!(v["status"], "claimed");
    assert_eq!(v["rev"], 2);
    assert_eq!(v["seq"], b.log().len());

    let before = snapshot(&b);
    b.run(&["claim", "--next", "--as", "d"]).code(4);
    b.run(&["claim", "--next", "status=", "--as", "d"])
        .code(2)
        .stderr_has("malformed query term 'status='");
    assert_eq!(snapshot(&b), before);

    // Once its dependency is done, t-dep is next.
    for step in ["start", "done"] {
        b.run(&[step, "t-new", "--as", "b"]).ok();
    }
    b.run(&["claim", "--next", "--as", "d"])
        .ok()
        .stdout_is("claimed t-dep (rev 2, claimed)\n");
    let claims: Vec<(String, String)> = b
        .log()
        .iter()
        .filter(|e| e["op"] == "claim")
        .map(|e| {
            (
                e["doc"].as_str().unwrap().to_string(),
                e["actor"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    assert_eq!(
        claims,
        [
            ("tasks/t-taken.md", "someone"),
            ("tasks/t-old.md", "a"),
            ("tasks/t-new.md", "b"),
            ("tasks/t-backlog.md", "c"),
            ("tasks/t-dep.md", "d"),
        ]
        .map(|(a, b)| (a.to_string(), b.to_string()))
    );
}

#[test]
fn claim_next_skips_broken_files_with_a_warning() {
    let b = TestBoard::new();
    b.task("Good", &["--id", "t-good"]);
    b.write("tasks/t-bad.md", "---\nid: t-bad\nstatus: [\n---\n");
    b.run(&["claim", "--next", "--as", "a"])
        .ok()
        .stdout_is("claimed t-good (rev 2, claimed)\n")
        .stderr_is(
            "warning: skipped tasks/t-bad.md: line 3: unclosed bracket '[' (a value starting with [ { * & ! | > ' \" % @ or ` is read as YAML syntax: quote it, as in status: \"[\")\n",
        );
}

#[test]
fn pause_refuses_claims_with_the_reason() {
    let b = TestBoard::new();
    b.task("Wait", &["--id", "t-w"]);
    b.task("Running", &["--id", "t-r"]);
    b.run(&["claim", "t-r", "--as", "a"]).ok();
    b.write("control/PAUSE", "release freeze until the demo\n");
    let before = snapshot(&b);
    let msg = "error: the board is paused: release freeze until the demo\nhint: `tavern resume` lifts the pause\n";
    b.run(&["claim", "t-w", "--as", "a"])
        .code(5)
        .stdout_is("")
        .stderr_is(msg);
    b.run(&["claim", "--next", "--as", "a"])
        .code(5)
        .stderr_is(msg);
    b.run(&["move", "t-w", "claimed", "--as", "a"])
        .code(5)
        .stderr_is(msg);
    let out = b.run(&["claim", "t-w", "--as", "a", "--json"]);
    out.code(5);
    let v: serde_json::Value = serde_json::from_str(&out.stderr).unwrap();
    assert_eq!(v["error"]["kind"], "paused");
    assert_eq!(v["error"]["code"], 5);
    assert_eq!(snapshot(&b), before, "a paused claim changed the board");

    // Work already claimed goes on.
    b.run(&["start", "t-r", "--as", "a"]).ok();
    // An empty PAUSE still pauses.
    b.write("control/PAUSE", "");
    b.run(&["claim", "t-w", "--as", "a"])
        .code(5)
        .stderr_is("error: the board is paused: no reason given in control/PAUSE\nhint: `tavern resume` lifts the pause\n");
    std::fs::remove_file(b.board().join("control/PAUSE")).unwrap();
    b.run(&["claim", "t-w", "--as", "a"]).ok();
}

#[test]
fn claim_usage_and_lookup_errors() {
    let b = TestBoard::new();
    b.task("One", &["--id", "t-one"]);
    b.task("Two", &["--id", "t-two"]);
    b.run(&["new", "observation", "--title", "o", "--id", "o-1"])
        .ok();
    let before = snapshot(&b);
    b.run(&["claim"])
        .code(2)
        .stderr_is("error: claim takes one task id, or --next [QUERY…]\n");
    b.run(&["claim", "t-one", "t-two"])
        .code(2)
        .stderr_is("error: claim takes one task id, or --next [QUERY…]\n");
    b.run(&["claim", "--next", "--if-rev", "1"])
        .code(2)
        .stderr_has("cannot be used with");
    b.run(&["claim", "t-"]).code(2).stderr_is(
        "error: id prefix 't-' is ambiguous; it matches:\n  tasks/t-one.md\n  tasks/t-two.md\n",
    );
    // Only tasks are claimed.
    b.run(&["claim", "o-1"]).code(2).stderr_is(
        "error: o-1 is an observation, not a task: claims and transitions work on tasks\n",
    );
    b.run(&["claim", "t-nope"]).code(4);
    b.run(&["claim", "t-one", "--if-rev", "2"])
        .code(3)
        .stderr_is("error: tasks/t-one.md: rev is 1, not 2: it changed since you read it; re-read and retry\n");
    assert_eq!(snapshot(&b), before);
    // By unique prefix, and compare-and-swap.
    b.run(&["claim", "t-o", "--if-rev", "1", "--as", "x"])
        .ok()
        .stdout_is("claimed t-one (rev 2, claimed)\n");
}

#[test]
fn a_task_in_an_unknown_state_is_invalid() {
    let b = TestBoard::new();
    b.write(
        "tasks/t-odd.md",
        "---\nid: t-odd\ntitle: Odd\nstatus: limbo\n---\n",
    );
    let before = snapshot(&b);
    b.run(&["claim", "t-odd"]).code(6).stderr_is(
        "error: tasks/t-odd.md: status 'limbo' is not a state of the workflow (pending, claimed, working, review, blocked, done, failed, cancelled)\n",
    );
    b.run(&["claim", "--next"]).code(4);
    assert_eq!(snapshot(&b), before);
}

#[test]
fn claim_next_with_an_id_claims_that_task() {
    let b = TestBoard::new();
    b.task("Urgent", &["--id", "task-aaaa", "-p", "0"]);
    b.task("Later", &["--id", "task-n9gn", "-p", "3"]);
    b.run(&["claim", "--next", "task-n9gn", "--as", "coder-1"])
        .ok()
        .stdout_is("claimed task-n9gn (rev 2, claimed)\n");
}

#[test]
fn query_terms_without_next_suggest_next() {
    let b = TestBoard::new();
    b.task("Tagged", &["--id", "t-1", "--tag", "x"]);
    for args in [&["tag:x"][..], &["status=pending"], &["tag:x", "parser"]] {
        b.run(&[&["claim"], args].concat())
            .code(2)
            .stderr_is(&format!(
                "error: claim takes one task id; to claim the best task matching a query, use --next: tavern claim --next {}\n",
                args.join(" ")
            ));
    }
    // An id that is not on the board is still "not found".
    b.run(&["claim", "t-nope"]).code(4);
}

#[test]
fn an_explicit_claim_honours_the_tasks_needs() {
    let b = TestBoard::new();
    b.task(
        "Rust work",
        &["--id", "t-rust", "--set", "needs=[rust, unsafe]"],
    );
    b.run(&[
        "agent",
        "register",
        "--name",
        "pythonista",
        "--capabilities",
        "python,rust",
        "--pid",
        &std::process::id().to_string(),
    ])
    .ok();
    let before = snapshot(&b);
    b.run(&["claim", "t-rust", "--as", "pythonista"])
        .code(3)
        .stderr_is("error: tasks/t-rust.md: needs unsafe, which pythonista does not have (its capabilities: python, rust)\n");
    assert_eq!(snapshot(&b), before);
    // An actor that never registered (a human) is not held to capabilities.
    b.run(&["claim", "t-rust", "--as", "alice"]).ok();
}
