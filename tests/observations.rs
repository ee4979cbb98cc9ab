//! Observations: `post`, `ack`, `resolve`, `reject` (which also rejects tasks in review),
//! the files and log entries they write, and every refusal.

use crate::util::{TestBoard, redact_times, snapshot};

/// A board with a task `t-a` and an open observation `obs-x` posted by `finder`.
fn board_with_observation() -> TestBoard {
    let b = TestBoard::new();
    b.task("Parser", &["--id", "t-a"]);
    b.run(&[
        "post",
        "Tabs in keys",
        "--topic",
        "parser",
        "--severity",
        "high",
        "--id",
        "obs-x",
        "--as",
        "finder",
    ])
    .ok()
    .stdout_is("obs-x\n");
    b
}

const POSTED: &str = "---\nid: obs-x\ntitle: Tabs in keys\nstatus: open\ntopic: parser\nseverity: high\ntags: []\ncreated_at: <TIME>\ncreated_by: finder\nupdated_at: <TIME>\nrev: 1\nscope: persistent\n---\n";

#[test]
fn post_writes_an_open_observation_with_every_field() {
    let b = TestBoard::new();
    b.task("Parser", &["--id", "t-a"]);
    b.task("Lexer", &["--id", "t-b"]);
    b.run(&[
        "post",
        "Parser accepts tabs",
        "--topic",
        "parser",
        "--severity",
        "medium",
        "--confidence",
        "0.8",
        "--about",
        "t-a",
        "--about",
        "t-b",
        "--parent",
        "t-a",
        "--scope",
        "session",
        "--ttl",
        "1h",
        "--context",
        "ci run 12",
        "--body",
        "Seen in CI.",
        "--id",
        "obs-tabs",
        "--as",
        "coder-1",
    ])
    .ok()
    .stdout_is("obs-tabs\n")
    .stderr_is("");
    let text = b.read("observations/obs-tabs.md");
    assert_eq!(
        redact_times(&text),
        "---\nid: obs-tabs\ntitle: Parser accepts tabs\nstatus: open\ntopic: parser\nseverity: medium\ntags: []\ncreated_at: <TIME>\ncreated_by: coder-1\nupdated_at: <TIME>\nrev: 1\nconfidence: 0.8\nabout: [t-a, t-b]\nparent: t-a\nscope: session\nexpires_at: <TIME>\ncontext: ci run 12\n---\n\nSeen in CI.\n"
    );
    // expires_at is created_at plus the ttl.
    let v = b.run(&["show", "obs-tabs", "--json"]).ok().json();
    let f = &v["fields"];
    let at = |k: &str| chrono::DateTime::parse_from_rfc3339(f[k].as_str().unwrap()).unwrap();
    assert_eq!(
        (at("expires_at") - at("created_at")).num_milliseconds(),
        3_600_000
    );
    let e = b.log().last().unwrap().clone();
    assert_eq!(e["op"], "create");
    assert_eq!(e["doc"], "observations/obs-tabs.md");
    assert_eq!(e["actor"], "coder-1");
    assert_eq!(e["rev"], 1);
}

#[test]
fn post_defaults_to_persistent_and_prints_json_like_new() {
    let b = board_with_observation();
    assert_eq!(redact_times(&b.read("observations/obs-x.md")), POSTED);
    let v = b
        .run(&[
            "post",
            "Second",
            "--topic",
            "io",
            "--severity",
            "info",
            "--about",
            "obs-x",
            "--json",
        ])
        .ok()
        .json();
    let id = v["id"].as_str().unwrap();
    assert!(id.starts_with("obs-"), "{id}");
    assert_eq!(v["path"], format!("observations/{id}.md"));
    assert_eq!(v["fields"]["status"], "open");
    assert_eq!(v["seq"], b.log().last().unwrap()["seq"]);
}

#[test]
fn post_refuses_bad_input_and_touches_nothing() {
    let b = board_with_observation();
    let before = snapshot(&b);
    let base = ["post", "T", "--topic", "parser"];
    let cases: [(&[&str], i32, &str); 7] = [
        (
            &["--severity", "urgent"],
            2,
            "error: invalid severity 'urgent': use one of info, low, medium, high, critical\n",
        ),
        (
            &["--severity", "low", "--confidence", "1.5"],
            2,
            "error: invalid confidence '1.5': use a number from 0 to 1, like 0.8\n",
        ),
        (
            &["--severity", "low", "--confidence", "sure"],
            2,
            "error: invalid confidence 'sure': use a number from 0 to 1, like 0.8\n",
        ),
        (
            &["--severity", "low", "--ttl", "1h"],
            2,
            "error: --ttl needs --scope session: persistent observations do not expire\n",
        ),
        (
            &["--severity", "low", "--scope", "forever"],
            2,
            "error: invalid scope 'forever': use session or persistent\n",
        ),
        (
            &["--severity", "low", "--scope", "session", "--ttl", "soon"],
            2,
            "error: invalid --ttl 'soon': use a number and a unit (s, m, h, d, w), like 1h\n",
        ),
        (
            &["--severity", "low", "--about", "t-a,t-missing"],
            4,
            "error: document 't-missing' (named in --about) not found\nhint: `tavern list` shows the documents on the board\n",
        ),
    ];
    for (extra, code, err) in cases {
        let mut args = base.to_vec();
        args.extend_from_slice(extra);
        b.run(&args).code(code).stdout_is("").stderr_is(err);
    }
    b.run(&[
        "post",
        "T",
        "--topic",
        "parser",
        "--severity",
        "low",
        "--parent",
        "nope",
    ])
    .code(4)
    .stderr_has("document 'nope' (named in --parent) not found");
    b.run(&["post", "T", "--severity", "low"])
        .code(2)
        .stderr_has("--topic");
    assert_eq!(snapshot(&b), before);
}

#[test]
fn ack_then_resolve_records_who_and_when() {
    let b = board_with_observation();
    b.run(&["ack", "obs-x", "--as", "lead"])
        .ok()
        .stdout_is("acknowledged obs-x (rev 2, acknowledged)\n")
        .stderr_is("");
    let acked = POSTED
        .replace("status: open", "status: acknowledged")
        .replace("rev: 1\n", "rev: 2\n")
        .replace(
            "scope: persistent\n",
            "scope: persistent\nacked_by: lead\nacked_at: <TIME>\n",
        );
    assert_eq!(redact_times(&b.read("observations/obs-x.md")), acked);
    let e = b.log().last().unwrap().clone();
    assert_eq!(e["op"], "edit");
    assert_eq!(e["note"], "ack");
    assert_eq!(e["actor"], "lead");
    assert_eq!(e["rev"], 2);
    assert_eq!(e["doc"], "observations/obs-x.md");

    b.run(&[
        "resolve",
        "obs-x",
        "--resolution",
        "fixed in t-a",
        "--as",
        "coder-1",
    ])
    .ok()
    .stdout_is("resolved obs-x (rev 3, resolved)\n");
    let resolved = acked
        .replace("status: acknowledged", "status: resolved")
        .replace("rev: 2\n", "rev: 3\n")
        .replace(
            "acked_at: <TIME>\n",
            "acked_at: <TIME>\nresolution: fixed in t-a\nresolved_by: coder-1\nresolved_at: <TIME>\n",
        );
    assert_eq!(redact_times(&b.read("observations/obs-x.md")), resolved);
    let e = b.log().last().unwrap().clone();
    assert_eq!(e["op"], "edit");
    assert_eq!(e["note"], "resolve");
    assert_eq!(e["actor"], "coder-1");
    assert_eq!(e["rev"], 3);
}

#[test]
fn resolve_works_from_open_and_reports_json() {
    let b = board_with_observation();
    let v = b
        .run(&["resolve", "obs-x", "--resolution", "not a bug", "--json"])
        .ok()
        .json();
    assert_eq!(v["status"], "resolved");
    assert_eq!(v["rev"], 2);
    assert_eq!(v["changed"], true);
    assert_eq!(v["seq"], b.log().last().unwrap()["seq"]);
    let text = b.read("observations/obs-x.md");
    assert!(text.contains("\nresolution: not a bug\nresolved_by: tester\nresolved_at: "));
}

#[test]
fn reject_rejects_an_observation_with_a_note() {
    let b = board_with_observation();
    b.run(&[
        "reject",
        "obs-x",
        "--note",
        "cannot reproduce",
        "--as",
        "lead",
    ])
    .ok()
    .stdout_is("rejected obs-x (rev 2, rejected)\n");
    let rejected = POSTED
        .replace("status: open", "status: rejected")
        .replace("rev: 1\n", "rev: 2\n")
        .replace(
            "scope: persistent\n",
            "scope: persistent\nrejected_by: lead\nrejected_at: <TIME>\n",
        );
    assert_eq!(redact_times(&b.read("observations/obs-x.md")), rejected);
    let e = b.log().last().unwrap().clone();
    assert_eq!(e["op"], "edit");
    assert_eq!(e["note"], "reject: cannot reproduce");
    assert_eq!(e["actor"], "lead");

    // Without a note the log says just "reject".
    b.run(&[
        "post",
        "Other",
        "--topic",
        "t",
        "--severity",
        "low",
        "--id",
        "obs-y",
    ])
    .ok();
    b.run(&["ack", "obs-y"]).ok();
    b.run(&["reject", "obs-y"])
        .ok()
        .stdout_is("rejected obs-y (rev 3, rejected)\n");
    assert_eq!(b.log().last().unwrap()["note"], "reject");
}

#[test]
fn reject_still_sends_a_task_in_review_back_to_work() {
    let b = board_with_observation();
    b.run(&["claim", "t-a", "--as", "coder-1"]).ok();
    b.run(&["start", "t-a", "--as", "coder-1"]).ok();
    b.run(&["submit", "t-a", "--as", "coder-1"]).ok();
    b.run(&["reject", "t-a", "--as", "reviewer", "--note", "add tests"])
        .ok()
        .stdout_is("rejected t-a (rev 5, working)\n");
    let e = b.log().last().unwrap().clone();
    assert_eq!(e["op"], "transition");
    assert_eq!(e["transition"], "reject");
    assert_eq!(e["from"], "review");
    assert_eq!(e["to"], "working");
    assert_eq!(e["note"], "add tests");
    // The observation was not touched.
    assert_eq!(redact_times(&b.read("observations/obs-x.md")), POSTED);
    b.run(&["reject", "nothing-here"])
        .code(4)
        .stderr_is("error: document 'nothing-here' not found\nhint: `tavern list` shows the documents on the board\n");
}

#[test]
fn changes_from_the_wrong_state_are_conflicts_that_name_the_status() {
    let b = board_with_observation();
    b.run(&["ack", "obs-x"]).ok();
    let before = snapshot(&b);
    b.run(&["ack", "obs-x"]).code(3).stdout_is("").stderr_is(
        "error: observations/obs-x.md: cannot ack observation obs-x: it is acknowledged; ack works only on open observations\n",
    );
    b.run(&["resolve", "obs-x", "--resolution", "done"]).ok();
    let before_resolved = snapshot(&b);
    assert_ne!(before, before_resolved);
    b.run(&["resolve", "obs-x", "--resolution", "again"])
        .code(3)
        .stderr_is(
            "error: observations/obs-x.md: cannot resolve observation obs-x: it is resolved; resolve works only on open or acknowledged observations\n",
        );
    b.run(&["reject", "obs-x"]).code(3).stderr_is(
        "error: observations/obs-x.md: cannot reject observation obs-x: it is resolved; reject works only on open or acknowledged observations\n",
    );
    b.run(&["ack", "obs-x"])
        .code(3)
        .stderr_has("it is resolved; ack works only on open observations");
    assert_eq!(snapshot(&b), before_resolved);
}

#[test]
fn observation_commands_refuse_missing_ids_tasks_and_stale_revs() {
    let b = board_with_observation();
    let before = snapshot(&b);
    b.run(&["ack", "obs-missing"])
        .code(4)
        .stderr_is("error: document 'obs-missing' not found\nhint: `tavern list` shows the documents on the board\n");
    // ack and resolve work only on observations, and say what else it is.
    b.run(&["ack", "t-a"]).code(2);
    b.run(&["resolve", "obs-x", "--resolution", " "])
        .code(2)
        .stderr_is("error: a resolution is required: --resolution \"what was done\"\n");
    b.run(&["resolve", "obs-x"])
        .code(2)
        .stderr_has("--resolution");
    b.run(&["ack", "obs-x", "--if-rev", "7"]).code(3).stderr_is(
        "error: observations/obs-x.md: rev is 1, not 7: it changed since you read it; re-read and retry\n",
    );
    assert_eq!(snapshot(&b), before);
    b.run(&["ack", "obs-x", "--if-rev", "1"]).ok();
}

#[test]
fn ack_on_a_task_says_it_is_a_task() {
    let b = TestBoard::new();
    b.task("A task", &["--id", "task-x7d2"]);
    b.run(&[
        "post",
        "Seen",
        "--topic",
        "t",
        "--severity",
        "low",
        "--id",
        "obs-1",
    ])
    .ok();
    let before = crate::util::snapshot(&b);
    b.run(&["ack", "task-x7d2"])
        .code(2)
        .stderr_is("error: task-x7d2 is a task, not an observation: ack works on observations\n");
    b.run(&["resolve", "task-x7", "--resolution", "x"])
        .code(2)
        .stderr_is(
            "error: task-x7d2 is a task, not an observation: resolve works on observations\n",
        );
    b.run(&["answer", "obs-1", "yes"])
        .code(2)
        .stderr_is("error: obs-1 is an observation, not a question: answer works on questions\n");
    b.run(&["start", "obs-1"]).code(2).stderr_is(
        "error: obs-1 is an observation, not a task: claims and transitions work on tasks\n",
    );
    b.run(&["ack", "obs-nope"]).code(4);
    assert_eq!(crate::util::snapshot(&b), before);
}
