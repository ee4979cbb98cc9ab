//! The named transitions, `move ID STATE`, ownership and --force, and transitions that
//! only a board's own workflow defines.

use crate::util::{TestBoard, redact_times, snapshot};

/// (op, transition, from, to, rev, actor) of each log entry after the first `skip`.
fn steps(b: &TestBoard, skip: usize) -> Vec<String> {
    b.log()[skip..]
        .iter()
        .map(|e| {
            format!(
                "{} {} {}->{} rev {} by {}",
                e["op"].as_str().unwrap(),
                e["transition"].as_str().unwrap_or("-"),
                e["from"].as_str().unwrap_or("-"),
                e["to"].as_str().unwrap_or("-"),
                e["rev"],
                e["actor"].as_str().unwrap(),
            )
        })
        .collect()
}

#[test]
fn a_task_goes_through_every_default_transition() {
    let b = TestBoard::new();
    b.task("Flow", &["--id", "t-f"]);
    // Review means someone else: reject and approve are the reviewer's.
    for (cmd, out, actor) in [
        ("claim", "claimed t-f (rev 2, claimed)\n", "coder-1"),
        ("start", "started t-f (rev 3, working)\n", "coder-1"),
        ("block", "blocked t-f (rev 4, blocked)\n", "coder-1"),
        ("unblock", "unblocked t-f (rev 5, working)\n", "coder-1"),
        ("submit", "submitted t-f (rev 6, review)\n", "coder-1"),
        ("reject", "rejected t-f (rev 7, working)\n", "reviewer-1"),
        ("submit", "submitted t-f (rev 8, review)\n", "coder-1"),
        ("approve", "approved t-f (rev 9, done)\n", "reviewer-1"),
    ] {
        b.run(&[cmd, "t-f", "--as", actor])
            .ok()
            .stdout_is(out)
            .stderr_is("");
    }
    assert_eq!(
        steps(&b, 1),
        [
            "claim - pending->claimed rev 2 by coder-1",
            "transition start claimed->working rev 3 by coder-1",
            "transition block working->blocked rev 4 by coder-1",
            "transition unblock blocked->working rev 5 by coder-1",
            "transition submit working->review rev 6 by coder-1",
            "transition reject review->working rev 7 by reviewer-1",
            "transition submit working->review rev 8 by coder-1",
            "transition approve review->done rev 9 by reviewer-1",
        ]
    );
    // The claim stays on record on a finished task.
    let text = b.read("tasks/t-f.md");
    assert!(text.contains("\nstatus: done\n") && text.contains("\nclaimed_by: coder-1\n"));

    b.task("Other paths", &["--id", "t-o"]);
    for (cmd, out) in [
        ("claim", "claimed t-o (rev 2, claimed)\n"),
        ("start", "started t-o (rev 3, working)\n"),
        ("done", "done t-o (rev 4, done)\n"),
    ] {
        b.run(&[cmd, "t-o", "--as", "c"]).ok().stdout_is(out);
    }
    b.task("Failing", &["--id", "t-x"]);
    b.run(&["claim", "t-x", "--as", "c"]).ok();
    b.run(&["fail", "t-x", "--as", "c", "--note", "cannot reproduce"])
        .ok()
        .stdout_is("failed t-x (rev 3, failed)\n");
    let e = b.log().last().unwrap().clone();
    assert_eq!(e["note"], "cannot reproduce");
    assert!(e.get("force").is_none());
    // Anyone may fail or cancel a task nobody holds.
    b.task("Unwanted", &["--id", "t-u"]);
    b.run(&["cancel", "t-u", "--as", "lead"])
        .ok()
        .stdout_is("cancelled t-u (rev 2, cancelled)\n");
}

#[test]
fn release_gives_the_task_back_and_clears_the_claim() {
    let b = TestBoard::new();
    b.task(
        "Release me",
        &["--id", "t-r", "--set", "updated_at=2020-01-01T00:00:00Z"],
    );
    let pending = b.read("tasks/t-r.md");
    b.run(&["claim", "t-r", "--as", "coder-1"]).ok();
    b.run(&["start", "t-r", "--as", "coder-1"]).ok();
    b.run(&["release", "t-r", "--as", "coder-1"])
        .ok()
        .stdout_is("released t-r (rev 4, pending)\n");
    let released = b.read("tasks/t-r.md");
    assert_eq!(
        redact_times(&released),
        redact_times(&pending).replace("rev: 1\n", "rev: 4\n")
    );
    let e = b.log().last().unwrap().clone();
    assert_eq!(e["op"], "release");
    assert!(e.get("transition").is_none());
    assert_eq!(e["from"], "working");
    assert_eq!(e["to"], "pending");
    assert!(
        e["diff"]
            .as_str()
            .unwrap()
            .contains("\n-claimed_by: coder-1\n-claimed_at: "),
        "{}",
        e["diff"]
    );
    // Someone else may claim it now.
    b.run(&["claim", "t-r", "--as", "coder-2"]).ok();
}

#[test]
fn a_transition_not_allowed_now_lists_the_allowed_ones() {
    let b = TestBoard::new();
    let reach = |id: &str, path: &[&str]| {
        b.task(id, &["--id", id]);
        for step in path {
            b.run(&[step, id, "--as", "o"]).ok();
        }
    };
    reach("t-pending", &[]);
    reach("t-claimed", &["claim"]);
    reach("t-working", &["claim", "start"]);
    reach("t-review", &["claim", "start", "submit"]);
    reach("t-blocked", &["claim", "start", "block"]);
    reach("t-done", &["claim", "start", "done"]);
    reach("t-failed", &["fail"]);
    reach("t-cancelled", &["cancel"]);
    let before = snapshot(&b);
    for (id, cmd, state, allowed) in [
        ("t-pending", "submit", "pending", "claim, fail, cancel"),
        ("t-pending", "start", "pending", "claim, fail, cancel"),
        (
            "t-claimed",
            "submit",
            "claimed",
            "release, start, fail, cancel",
        ),
        (
            "t-working",
            "approve",
            "working",
            "release, submit, block, done, fail, cancel",
        ),
        (
            "t-review",
            "start",
            "review",
            "approve, reject, block, fail, cancel",
        ),
        (
            "t-blocked",
            "submit",
            "blocked",
            "release, unblock, fail, cancel",
        ),
        ("t-done", "start", "done", "reopen"),
        ("t-done", "cancel", "done", "reopen"),
        ("t-failed", "release", "failed", "reopen"),
        ("t-cancelled", "fail", "cancelled", "reopen"),
    ] {
        b.run(&[cmd, id, "--as", "o"])
            .code(3)
            .stdout_is("")
            .stderr_is(&format!(
                "error: tasks/{id}.md: transition '{cmd}' is not allowed: the task's status is {state}; allowed from {state}: {allowed}\n"
            ));
    }
    assert_eq!(
        snapshot(&b),
        before,
        "a refused transition changed the board"
    );
}

#[test]
fn only_the_claimant_moves_a_claimed_task() {
    let b = TestBoard::new();
    b.task("Owned", &["--id", "t-own"]);
    b.run(&["claim", "t-own", "--as", "coder-1"]).ok();
    let before = snapshot(&b);
    for cmd in ["start", "release", "fail", "cancel"] {
        b.run(&[cmd, "t-own", "--as", "coder-2"])
            .code(3)
            .stdout_is("")
            .stderr_is("error: tasks/t-own.md: claimed by coder-1; only the claimant may move it (you are coder-2; a human may override with --force)\n");
    }
    b.run(&["move", "t-own", "working", "--as", "coder-2"])
        .code(3)
        .stderr_has("claimed by coder-1; only the claimant may move it");
    assert_eq!(snapshot(&b), before);

    // --force by someone else works, and the log says over whom.
    b.run(&["start", "t-own", "--as", "lead", "--force"])
        .ok()
        .stdout_is("started t-own (rev 3, working)\n");
    let e = b.log().last().unwrap().clone();
    assert_eq!(e["actor"], "lead");
    assert_eq!(e["transition"], "start");
    assert_eq!(e["force"], true);
    assert_eq!(e["note"], "forced over coder-1");
    // A forced move does not take the claim.
    assert!(b.read("tasks/t-own.md").contains("\nclaimed_by: coder-1\n"));

    b.run(&[
        "release",
        "t-own",
        "--as",
        "lead",
        "--force",
        "--note",
        "agent is stuck",
    ])
    .ok()
    .stdout_is("released t-own (rev 4, pending)\n");
    let e = b.log().last().unwrap().clone();
    assert_eq!(e["op"], "release");
    assert_eq!(e["force"], true);
    assert_eq!(e["note"], "forced over coder-1: agent is stuck");
    let text = b.read("tasks/t-own.md");
    assert!(
        !text.contains("claimed_by") && !text.contains("claimed_at"),
        "{text}"
    );
    // The summary line of `log` shows it too.
    let line = b.run(&["log", "--since", "3"]).ok().stdout.clone();
    assert_eq!(
        redact_times(&line),
        "4 <TIME> lead release tasks/t-own.md working -> pending rev 4 (forced) — forced over coder-1: agent is stuck\n"
    );

    // --force on your own task is not a forced move.
    b.run(&["claim", "t-own", "--as", "coder-2"]).ok();
    b.run(&["start", "t-own", "--as", "coder-2", "--force"])
        .ok();
    assert!(b.log().last().unwrap().get("force").is_none());
    // The former claimant is fenced off and told who holds it now.
    b.run(&["submit", "t-own", "--as", "coder-1"])
        .code(3)
        .stderr_is("error: tasks/t-own.md: claimed by coder-2; only the claimant may move it (you are coder-1; a human may override with --force)\n");
    b.run(&["start", "t-own", "--as", "coder-1"])
        .code(3)
        .stderr_is("error: tasks/t-own.md: transition 'start' is not allowed: the task's status is working; allowed from working: release, submit, block, done, fail, cancel; it is held by coder-2, not you\n");
}

#[test]
fn reviewers_approve_and_reject_without_force() {
    let b = TestBoard::new();
    b.task("Review me", &["--id", "t-rv"]);
    for step in ["claim", "start", "submit"] {
        b.run(&[step, "t-rv", "--as", "coder-1"]).ok();
    }
    b.run(&["reject", "t-rv", "--as", "reviewer", "--note", "add tests"])
        .ok()
        .stdout_is("rejected t-rv (rev 5, working)\n");
    let e = b.log().last().unwrap().clone();
    assert_eq!(e["actor"], "reviewer");
    assert_eq!(e["note"], "add tests");
    assert!(e.get("force").is_none());
    b.run(&["submit", "t-rv", "--as", "reviewer"]).code(3);
    b.run(&["submit", "t-rv", "--as", "coder-1"]).ok();
    b.run(&["approve", "t-rv", "--as", "reviewer"])
        .ok()
        .stdout_is("approved t-rv (rev 7, done)\n");
}

#[test]
fn move_runs_whichever_transition_leads_there() {
    let b = TestBoard::new();
    b.task("Moved", &["--id", "t-mv"]);
    for (state, out, transition) in [
        ("claimed", "moved t-mv (rev 2, claimed)\n", None),
        ("working", "moved t-mv (rev 3, working)\n", Some("start")),
        ("review", "moved t-mv (rev 4, review)\n", Some("submit")),
        ("done", "moved t-mv (rev 5, done)\n", Some("approve")),
    ] {
        // The claimant does not approve its own task: a reviewer does.
        let actor = if state == "done" { "r" } else { "m" };
        b.run(&["move", "t-mv", state, "--as", actor])
            .ok()
            .stdout_is(out);
        let e = b.log().last().unwrap().clone();
        assert_eq!(e["to"], state);
        assert_eq!(e["transition"].as_str(), transition);
    }
    assert_eq!(b.log()[1]["op"], "claim");

    b.task("Direct", &["--id", "t-d"]);
    b.run(&["claim", "t-d", "--as", "m"]).ok();
    b.run(&["start", "t-d", "--as", "m"]).ok();
    b.run(&["move", "t-d", "done", "--as", "m", "--json"]).ok();
    assert_eq!(b.log().last().unwrap()["transition"], "done");
    b.run(&["move", "t-d", "done", "--as", "m"])
        .code(3)
        .stderr_is("error: tasks/t-d.md: no transition leads from done to done; from done it can go to: pending (reopen)\n");

    b.task("Stuck", &["--id", "t-s"]);
    let before = snapshot(&b);
    b.run(&["move", "t-s", "review"])
        .code(3)
        .stdout_is("")
        .stderr_is("error: tasks/t-s.md: no transition leads from pending to review; from pending it can go to: claimed (claim), failed (fail), cancelled (cancel)\n");
    b.run(&["move", "t-s", "nowhere"])
        .code(2)
        .stderr_is("error: unknown state 'nowhere'; this board's states are: pending, claimed, working, review, blocked, done, failed, cancelled\n");
    b.run(&["move", "t-s"]).code(2).stderr_has("<STATE>");
    b.run(&["move", "t-nope", "done"]).code(4);
    assert_eq!(snapshot(&b), before);
}

#[test]
fn transitions_report_in_json_and_honour_if_rev() {
    let b = TestBoard::new();
    b.task("CAS", &["--id", "t-cas"]);
    b.run(&["claim", "t-cas", "--as", "a"]).ok();
    let before = snapshot(&b);
    b.run(&["start", "t-cas", "--as", "a", "--if-rev", "1"])
        .code(3)
        .stderr_is("error: tasks/t-cas.md: rev is 2, not 1: it changed since you read it; re-read and retry\n");
    assert_eq!(snapshot(&b), before);
    let v = b
        .run(&["start", "t-cas", "--as", "a", "--if-rev", "2", "--json"])
        .ok()
        .json();
    assert_eq!(
        v,
        serde_json::json!({"ok": true, "changed": true, "id": "t-cas", "path": "tasks/t-cas.md", "rev": 3, "status": "working", "claimed_by": "a", "title": "CAS", "seq": 3})
    );
}

#[test]
fn transitions_apply_to_tasks_only() {
    let b = TestBoard::new();
    b.run(&["new", "observation", "--title", "o", "--id", "o-1"])
        .ok();
    b.task("A", &["--id", "t-ab"]);
    b.task("B", &["--id", "t-ac"]);
    let before = snapshot(&b);
    b.run(&["start", "o-1"]).code(2).stderr_is(
        "error: o-1 is an observation, not a task: claims and transitions work on tasks\n",
    );
    b.run(&["start", "t-nope"]).code(4).stderr_is(
        "error: document 't-nope' not found\nhint: `tavern list` shows the documents on the board\n",
    );
    b.run(&["cancel", "t-a"]).code(2).stderr_is(
        "error: id prefix 't-a' is ambiguous; it matches:\n  tasks/t-ab.md\n  tasks/t-ac.md\n",
    );
    b.run(&["cancel", "../t-ab"])
        .code(6)
        .stderr_has("invalid id");
    b.run(&["start"]).code(2).stderr_has("<ID>");
    assert_eq!(snapshot(&b), before);
    b.run(&["cancel", "t-ab"]).ok();
}

fn custom_board() -> TestBoard {
    let b = TestBoard::new();
    let yaml = b
        .read("board.yaml")
        .replace(
            "    cancel:  { from: \"*\", to: cancelled }\n",
            "    cancel:  { from: \"*\", to: cancelled }\n    shelve:  { from: [pending, claimed], to: shelved }\n    unshelve: { from: [shelved], to: pending }\n    triage:  { from: [working], to: review, by: any }\n",
        )
        .replace("states: [pending,", "states: [shelved, pending,");
    assert!(yaml.contains("unshelve"));
    b.write("board.yaml", yaml);
    b
}

#[test]
fn a_boards_own_transition_runs_as_tavern_name_id() {
    let b = custom_board();
    b.task("Later", &["--id", "t-later"]);
    b.run(&["shelve", "t-later"])
        .ok()
        .stdout_is("shelve: t-later (rev 2, shelved)\n")
        .stderr_is("");
    let e = b.log().last().unwrap().clone();
    assert_eq!(e["op"], "transition");
    assert_eq!(e["transition"], "shelve");
    assert_eq!(e["from"], "pending");
    assert_eq!(e["to"], "shelved");
    // Global flags work after the name, as for the built-in commands.
    let v = b
        .run(&["unshelve", "t-later", "--as", "planner", "--json"])
        .ok()
        .json();
    assert_eq!(v["status"], "pending");
    assert_eq!(v["rev"], 3);
    assert_eq!(b.log().last().unwrap()["actor"], "planner");
    b.run(&[
        "--as",
        "planner",
        "shelve",
        "t-later",
        "--note",
        "next quarter",
    ])
    .ok();
    assert_eq!(b.log().last().unwrap()["note"], "next quarter");
    // `move` finds custom transitions too.
    b.run(&["move", "t-later", "pending", "--as", "planner"])
        .ok()
        .stdout_is("moved t-later (rev 5, pending)\n");
    assert_eq!(b.log().last().unwrap()["transition"], "unshelve");

    // Ownership rules hold for custom transitions.
    b.run(&["claim", "t-later", "--as", "coder-1"]).ok();
    b.run(&["shelve", "t-later", "--as", "coder-2"])
        .code(3)
        .stderr_has("claimed by coder-1; only the claimant may move it");
    b.run(&["shelve", "t-later", "--as", "lead", "--force"])
        .ok();
    assert_eq!(b.log().last().unwrap()["note"], "forced over coder-1");
    // ... unless the transition is open to anyone.
    b.task("Triage", &["--id", "t-tri"]);
    b.run(&["claim", "t-tri", "--as", "coder-1"]).ok();
    b.run(&["start", "t-tri", "--as", "coder-1"]).ok();
    b.run(&["triage", "t-tri", "--as", "triager"])
        .ok()
        .stdout_is("triage: t-tri (rev 4, review)\n");

    // And the workflow's from-states.
    b.run(&["shelve", "t-tri", "--as", "coder-1"])
        .code(3)
        .stderr_is("error: tasks/t-tri.md: transition 'shelve' is not allowed: the task's status is review; allowed from review: approve, reject, block, fail, cancel\n");
}

#[test]
fn unknown_commands_and_bad_custom_usage_are_usage_errors() {
    let b = custom_board();
    b.task("X", &["--id", "t-x"]);
    let before = snapshot(&b);
    b.run(&["frobnicate", "t-x"]).code(2).stdout_is("").stderr_is(
        "error: unrecognized command 'frobnicate'\nhint: `tavern --help` lists the commands; this board's transitions are: claim, release, start, submit, approve, reject, block, unblock, done, fail, cancel, shelve, unshelve, triage, reopen\n",
    );
    let out = b.run(&["shelve"]);
    out.code(2).stdout_is("");
    assert!(
        out.stderr
            .starts_with("error: the following required arguments were not provided:\n  <ID>\n\nUsage: tavern shelve "),
        "{}",
        out.stderr
    );
    let out = b.run(&["shelve", "t-x", "--bogus"]);
    out.code(2);
    assert!(
        out.stderr
            .starts_with("error: unexpected argument '--bogus' found"),
        "{}",
        out.stderr
    );
    // On a board without the transition, it is an unknown command.
    let plain = TestBoard::new();
    plain.task("X", &["--id", "t-x"]);
    plain
        .run(&["shelve", "t-x"])
        .code(2)
        .stderr_has("unrecognized command 'shelve'");
    assert_eq!(snapshot(&b), before);
}

#[test]
fn reopen_brings_a_finished_task_back_to_pending() {
    let b = TestBoard::new();
    b.task("Again", &["--id", "t-re"]);
    for step in ["claim", "start", "done"] {
        b.run(&[step, "t-re", "--as", "coder"]).ok();
    }
    // Anyone may reopen (a human who found it was not done after all); the claim is gone.
    b.run(&[
        "reopen",
        "t-re",
        "--as",
        "alice",
        "--note",
        "the fix regressed",
    ])
    .ok()
    .stdout_is("reopened t-re (rev 5, pending)\n");
    let text = b.read("tasks/t-re.md");
    assert!(
        text.contains("status: pending\n") && !text.contains("claimed_by"),
        "{text}"
    );
    let last = b.log().pop().unwrap();
    assert_eq!(last["transition"], "reopen");
    assert_eq!(last["from"], "done");
    assert_eq!(last.get("force"), None);
    b.run(&["claim", "t-re", "--as", "coder-2"]).ok();
    b.run(&["reopen", "t-re"]).code(3).stderr_is(
        "error: tasks/t-re.md: transition 'reopen' is not allowed: the task's status is claimed; allowed from claimed: release, start, fail, cancel; it is held by coder-2, not you\n",
    );
    b.run(&["cancel", "t-re", "--as", "coder-2"]).ok();
    b.run(&["move", "t-re", "pending", "--as", "bob"]).ok();
}
