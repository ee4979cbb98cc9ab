//! `tavern edit`: fields, lists, bodies, compare-and-swap, workflow-owned fields, no-op
//! edits, and byte-exact surgical rewrites of hand-written documents.

use crate::util::{TestBoard, redact_times, snapshot};

/// A task whose updated_at is old, so every edit visibly changes it.
fn old_task(b: &TestBoard, id: &str, extra: &[&str]) {
    let mut args = vec![
        "--id",
        id,
        "--set",
        "updated_at=2020-01-01T00:00:00Z",
        "--set",
        "created_at=2020-01-01T00:00:00Z",
    ];
    args.extend_from_slice(extra);
    b.task("Edit me", &args);
}

#[test]
fn set_unset_add_remove_and_what_the_log_records() {
    let b = TestBoard::new();
    b.declare_fields("tasks", &["gone", "new_field", "reviewers"]);
    old_task(&b, "t-e", &["--tag", "a", "--set", "gone=soon"]);
    b.run(&[
        "edit",
        "t-e",
        "--set",
        "priority=0",
        "--set",
        "title=Fix: the parser",
        "--set",
        "new_field=[x, 2]",
        "--unset",
        "gone",
        "--add",
        "tags=b",
        "--add",
        "tags=a",
        "--remove",
        "tags=a",
        "--add",
        "reviewers=ann",
        "--as",
        "ed",
    ])
    .ok()
    .stdout_is("edited t-e (rev 2, pending)\n")
    .stderr_is("");
    let after = b.read("tasks/t-e.md");
    assert_eq!(
        redact_times(&after),
        "---\nid: t-e\ntitle: \"Fix: the parser\"\nstatus: pending\npriority: 0\ntags: [b]\ndepends_on: []\ncreated_at: <TIME>\ncreated_by: tester\nupdated_at: <TIME>\nrev: 2\nnew_field: [x, 2]\nreviewers: [ann]\n---\n"
    );
    assert!(after.contains("\ncreated_at: 2020-01-01T00:00:00Z\n"));
    assert!(!after.contains("updated_at: 2020"), "updated_at not bumped");

    let log = b.log();
    assert_eq!(log.len(), 2);
    let e = &log[1];
    let keys: Vec<&str> = e.as_object().unwrap().keys().map(String::as_str).collect();
    assert_eq!(
        keys,
        ["seq", "origin", "at", "actor", "op", "doc", "rev", "diff"]
    );
    assert_eq!(e["seq"], 2);
    assert_eq!(e["actor"], "ed");
    assert_eq!(e["op"], "edit");
    assert_eq!(e["doc"], "tasks/t-e.md");
    assert_eq!(e["rev"], 2);
    assert_eq!(
        redact_times(e["diff"].as_str().unwrap()),
        "@@ -2,6 +2,6 @@\n id: t-e\n-title: Edit me\n+title: \"Fix: the parser\"\n status: pending\n-priority: 2\n-tags: [a]\n+priority: 0\n+tags: [b]\n depends_on: []\n@@ -9,5 +9,6 @@\n created_by: tester\n-updated_at: <TIME>\n-rev: 1\n-gone: soon\n+updated_at: <TIME>\n+rev: 2\n+new_field: [x, 2]\n+reviewers: [ann]\n ---\n"
    );
}

#[test]
fn each_edit_bumps_rev_by_one() {
    let b = TestBoard::new();
    b.declare_fields("tasks", &["round"]);
    old_task(&b, "t-r", &[]);
    for rev in 2..5 {
        b.run(&["edit", "t-r", "--set", &format!("round={rev}")])
            .ok()
            .stdout_is(&format!("edited t-r (rev {rev}, pending)\n"));
        assert!(b.read("tasks/t-r.md").contains(&format!("\nrev: {rev}\n")));
        assert_eq!(b.log().last().unwrap()["rev"], rev);
    }
    assert_eq!(b.log().len(), 4);
}

#[test]
fn a_no_op_edit_writes_and_logs_nothing() {
    let b = TestBoard::new();
    b.declare_fields("tasks", &["x"]);
    old_task(
        &b,
        "t-n",
        &["--tag", "a", "--set", "x=1", "--body", "Some text."],
    );
    let before = snapshot(&b);
    for args in [
        &["--set", "x=1"][..],
        &["--set", "priority=2", "--set", "x=1"],
        &["--add", "tags=a"],
        &["--remove", "tags=zzz"],
        // A field the board knows that the document lacks (an unknown one is a typo).
        &["--unset", "parent"],
        &["--body", "Some text."],
    ] {
        b.run(&[&["edit", "t-n"], args].concat())
            .ok()
            .stdout_is("unchanged t-n (rev 1, pending)\n")
            .stderr_is("");
    }
    let v = b
        .run(&["edit", "t-n", "--set", "x=1", "--json"])
        .ok()
        .json();
    assert_eq!(
        v,
        serde_json::json!({"ok": true, "changed": false, "id": "t-n", "path": "tasks/t-n.md", "rev": 1, "status": "pending", "claimed_by": null, "title": "Edit me"})
    );
    assert_eq!(snapshot(&b), before, "a no-op edit changed the board");
}

#[test]
fn edit_json_output() {
    let b = TestBoard::new();
    b.declare_fields("tasks", &["x"]);
    old_task(&b, "t-j", &[]);
    let out = b.run(&["edit", "t-j", "--set", "x=1", "--json"]);
    out.ok().stderr_is("");
    assert_eq!(
        out.json(),
        serde_json::json!({"ok": true, "changed": true, "id": "t-j", "path": "tasks/t-j.md", "rev": 2, "status": "pending", "claimed_by": null, "title": "Edit me", "seq": 2})
    );
}

#[test]
fn bodies_from_flag_file_and_stdin() {
    let b = TestBoard::new();
    old_task(&b, "t-b", &[]);
    let fm_before = b.read("tasks/t-b.md");
    let fm_before = fm_before.split_once("\n---\n").unwrap().0.to_string();
    let body = || {
        b.read("tasks/t-b.md")
            .split_once("\n---\n")
            .unwrap()
            .1
            .to_string()
    };
    b.run(&["edit", "t-b", "--body", "Plain"]).ok();
    assert_eq!(body(), "\nPlain\n");
    std::fs::write(b.root().join("new.md"), "\n\nFrom file\n---\nrule\n").unwrap();
    b.run(&["edit", "t-b", "--body-file", "new.md"]).ok();
    assert_eq!(body(), "\n\nFrom file\n---\nrule\n");
    b.run_stdin(&["edit", "t-b", "--body-file", "-"], "from stdin")
        .ok()
        .stdout_is("edited t-b (rev 4, pending)\n");
    assert_eq!(body(), "\nfrom stdin\n");
    b.run_stdin(&["edit", "t-b", "--body", "-"], "dash").ok();
    assert_eq!(body(), "\ndash\n");
    // Only rev and updated_at changed in the frontmatter.
    let fm_after = b.read("tasks/t-b.md");
    let fm_after = fm_after.split_once("\n---\n").unwrap().0;
    let changed: Vec<(&str, &str)> = fm_before
        .lines()
        .zip(fm_after.lines())
        .filter(|(a, b)| a != b)
        .collect();
    assert_eq!(changed.len(), 2, "{changed:?}");
    assert!(changed[0].0.starts_with("updated_at: ") && changed[1].1 == "rev: 5");
    let log = b.log();
    assert_eq!(log.len(), 5);
    assert!(
        log[2]["diff"]
            .as_str()
            .unwrap()
            .contains("\n-Plain\n+\n+From file\n+---\n+rule\n"),
        "{}",
        log[2]["diff"]
    );
    b.run(&["edit", "t-b", "--body-file", "missing.md"])
        .code(1)
        .stderr_has("cannot read missing.md");
}

#[test]
fn if_rev_is_compare_and_swap() {
    let b = TestBoard::new();
    b.declare_fields("tasks", &["x"]);
    old_task(&b, "t-c", &[]);
    b.run(&["edit", "t-c", "--set", "x=1", "--if-rev", "1"])
        .ok()
        .stdout_is("edited t-c (rev 2, pending)\n");
    let before = snapshot(&b);
    b.run(&["edit", "t-c", "--set", "x=2", "--if-rev", "1"])
        .code(3)
        .stdout_is("")
        .stderr_is("error: tasks/t-c.md: rev is 2, not 1: it changed since you read it; re-read and retry\n");
    let out = b.run(&["edit", "t-c", "--set", "x=2", "--if-rev", "1", "--json"]);
    out.code(3).stdout_is("");
    let v: serde_json::Value = serde_json::from_str(&out.stderr).unwrap();
    assert_eq!(
        v,
        serde_json::json!({"error": {"kind": "conflict", "code": 3, "message": "tasks/t-c.md: rev is 2, not 1: it changed since you read it; re-read and retry", "path": "tasks/t-c.md"}})
    );
    b.run(&["edit", "t-c", "--set", "x=2", "--if-rev", "x"])
        .code(2);
    assert_eq!(snapshot(&b), before);
    b.run(&["edit", "t-c", "--set", "x=2", "--if-rev", "2"])
        .ok();
}

#[test]
fn workflow_and_managed_fields_are_guarded() {
    let b = TestBoard::new();
    old_task(&b, "t-g", &[]);
    let before = snapshot(&b);
    let hint = "of a task changes through its workflow: use `tavern move ID STATE`, `tavern claim` or `tavern release` (or --force to override, which is logged)";
    for (args, key) in [
        (&["--set", "status=done"][..], "status"),
        (&["--set", "claimed_by=me"], "claimed_by"),
        (&["--set", "claimed_at=2026-01-01T00:00:00Z"], "claimed_at"),
        (&["--unset", "status"], "status"),
        (&["--add", "claimed_by=x"], "claimed_by"),
    ] {
        b.run(&[&["edit", "t-g"], args].concat())
            .code(2)
            .stdout_is("")
            .stderr_is(&format!("error: '{key}' {hint}\n"));
    }
    for (args, key) in [
        (&["--set", "id=t-other"][..], "id"),
        (&["--unset", "id"], "id"),
        (&["--set", "rev=9", "--force"], "rev"),
        (&["--unset", "rev", "--force"], "rev"),
    ] {
        b.run(&[&["edit", "t-g"], args].concat())
            .code(2)
            .stderr_is(&format!(
                "error: '{key}' is managed by tavern and cannot be edited\n"
            ));
    }
    b.run(&["edit", "t-g"]).code(2).stderr_is(
        "error: nothing to edit: give --set, --unset, --add, --remove, --body or --body-file\n",
    );
    b.run(&["edit", "t-g", "--unset", "bad key"])
        .code(2)
        .stderr_is("error: --unset: 'bad key' is not a field name (letters, digits, _ - .)\n");
    b.run(&["edit", "t-g", "--add", "novalue"])
        .code(2)
        .stderr_is("error: --add expects KEY=VALUE, got 'novalue'\n");
    b.run(&["edit", "t-g", "--add", "title=x"])
        .code(6)
        .stderr_is("error: --add/--remove need 'title' to be a list, but it is a string\n");
    b.run(&["edit", "t-nope", "--set", "a=1"])
        .code(4)
        .stderr_is("error: document 't-nope' not found\nhint: `tavern list` shows the documents on the board\n");
    assert_eq!(snapshot(&b), before, "a refused edit changed the board");

    // --force lets a human do it, and the log says so.
    b.run(&[
        "edit",
        "t-g",
        "--set",
        "status=done",
        "--force",
        "--as",
        "lead",
    ])
    .ok()
    .stdout_is("edited t-g (rev 2, done)\n");
    let e = b.log().last().unwrap().clone();
    assert_eq!(e["op"], "edit");
    assert_eq!(e["force"], true);
    assert_eq!(e["actor"], "lead");
    // Other regions have no workflow: their status is an ordinary field.
    b.run(&["new", "observation", "--title", "o", "--id", "o-1"])
        .ok();
    b.run(&["edit", "o-1", "--set", "status=resolved"])
        .ok()
        .stdout_is("edited o-1 (rev 2, resolved)\n");
    assert!(b.log().last().unwrap().get("force").is_none());
}

/// Written by hand: comments, odd key order, quoting, unknown keys, CRLF line endings, a
/// block list, a `---` rule in the body, leading blank lines, no final newline.
fn hand() -> String {
    crate::util::fixtures::text("comments-unknown-keys-crlf.md")
}

fn body(text: &str) -> &str {
    text.split_once("\r\n---\r\n").unwrap().1
}

/// The lines of `after` that are not in `before`, and the lines of `before` gone from it,
/// compared line by line in order (both texts have the same unchanged lines).
fn changed_lines<'a>(before: &'a str, after: &'a str) -> (Vec<&'a str>, Vec<&'a str>) {
    let old: Vec<&str> = before.split_inclusive('\n').collect();
    let new: Vec<&str> = after.split_inclusive('\n').collect();
    let removed: Vec<&str> = old.iter().filter(|l| !new.contains(l)).copied().collect();
    let added: Vec<&str> = new.iter().filter(|l| !old.contains(l)).copied().collect();
    // The kept lines stay in their order.
    let kept_old: Vec<&str> = old.iter().filter(|l| new.contains(l)).copied().collect();
    let kept_new: Vec<&str> = new.iter().filter(|l| old.contains(l)).copied().collect();
    assert_eq!(kept_old, kept_new);
    (removed, added)
}

#[test]
fn claim_and_edit_of_a_hand_written_document_touch_only_their_lines() {
    let b = TestBoard::new();
    b.write("tasks/t-hand.md", hand());
    b.run(&["show", "t-hand"]).ok().stdout_is(&hand());

    b.run(&["claim", "t-hand", "--as", "coder-1"])
        .ok()
        .stdout_is("claimed t-hand (rev 8, claimed)\n");
    let claimed = b.read("tasks/t-hand.md");
    assert_eq!(body(&claimed), body(&hand()), "the body changed");
    let hand_written = hand();
    let (removed, added) = changed_lines(&hand_written, &claimed);
    assert_eq!(
        removed,
        [
            "status: pending    # where it stands\r\n",
            "updated_at: 2020-01-01T00:00:00Z\r\n",
            "rev: 7\r\n"
        ]
    );
    assert_eq!(
        added.iter().map(|l| redact_times(l)).collect::<Vec<_>>(),
        [
            "status: claimed    # where it stands\r\n",
            "updated_at: <TIME>\r\n",
            "rev: 8\r\n",
            "claimed_by: coder-1\r\n",
            "claimed_at: <TIME>\r\n"
        ]
    );
    // Changed lines stay where they were; new fields go last in the frontmatter.
    assert_eq!(
        redact_times(&claimed),
        redact_times(&hand())
            .replace("status: pending ", "status: claimed ")
            .replace(
                "rev: 7\r\n",
                "rev: 8\r\nclaimed_by: coder-1\r\nclaimed_at: <TIME>\r\n"
            )
    );

    b.run(&[
        "edit",
        "t-hand",
        "--set",
        "priority=0",
        "--set",
        "quoted-key=new value",
        "--set",
        "title=Still: quoted",
        "--as",
        "coder-1",
    ])
    .ok()
    .stdout_is("edited t-hand (rev 9, claimed)\n");
    let edited = b.read("tasks/t-hand.md");
    assert_eq!(body(&edited), body(&hand()), "the body changed");
    let (removed, added) = changed_lines(&claimed, &edited);
    // updated_at shows only when the second changed between the two commands.
    let no_time = |lines: Vec<&str>| -> Vec<String> {
        lines
            .into_iter()
            .filter(|l| !l.starts_with("updated_at: "))
            .map(redact_times)
            .collect()
    };
    assert_eq!(
        no_time(removed),
        [
            "title: 'Hand: made, \"quoted\"'   # trailing comment\r\n",
            "priority: 2\r\n",
            "\"quoted-key\": value\r\n",
            "rev: 8\r\n"
        ]
    );
    assert_eq!(
        no_time(added),
        [
            "title: \"Still: quoted\"   # trailing comment\r\n",
            "priority: 0\r\n",
            "\"quoted-key\": new value\r\n",
            "rev: 9\r\n"
        ]
    );

    // The log's diffs are of the CRLF text, and still a valid YAML log.
    let log = b.log();
    assert_eq!(log.len(), 2);
    assert_eq!(log[0]["op"], "claim");
    assert!(
        log[0]["diff"].as_str().unwrap().contains(
            "-status: pending    # where it stands\r\n+status: claimed    # where it stands\r\n"
        ),
        "{}",
        log[0]["diff"]
    );
    let v = b.run(&["show", "t-hand", "--json"]).ok().json();
    assert_eq!(
        v["fields"]["unknown_key"],
        serde_json::json!({"nested": [1, 2], "q": "x"})
    );
    assert_eq!(v["fields"]["notes"], serde_json::json!(["one", "two"]));
    assert_eq!(v["body"], body(&hand()));
}

#[test]
fn a_block_list_becomes_a_flow_list_and_nothing_else_moves() {
    let b = TestBoard::new();
    b.write("tasks/t-hand.md", hand());
    b.run(&[
        "edit",
        "t-hand",
        "--add",
        "notes=three",
        "--unset",
        "unknown_key",
    ])
    .ok();
    let after = b.read("tasks/t-hand.md");
    assert_eq!(
        redact_times(&after),
        redact_times(&hand())
            .replace("unknown_key: {nested: [1, 2], \"q\": 'x'}\r\n", "")
            .replace(
                "notes:\r\n  - one   # first\r\n  - two\r\n",
                "notes: [one, two, three]\r\n"
            )
            .replace(
                "updated_at: <TIME>\r\nrev: 7",
                "updated_at: <TIME>\r\nrev: 8"
            )
    );
}

#[test]
fn release_and_transitions_keep_the_hand_written_bytes() {
    let b = TestBoard::new();
    b.write("tasks/t-hand.md", hand());
    for step in ["claim", "start", "release"] {
        b.run(&[step, "t-hand", "--as", "c"]).ok();
    }
    let after = b.read("tasks/t-hand.md");
    // Back to pending: the claim lines are gone again, and only rev/updated_at differ.
    assert_eq!(
        redact_times(&after),
        redact_times(&hand()).replace("rev: 7", "rev: 10")
    );
}

#[test]
fn set_then_unset_gives_back_every_byte_but_rev_and_updated_at() {
    let b = TestBoard::new();
    let docs = [
        ("r1", "---\nid: r1\n# c\ntitle: a\n---\nbody"),
        (
            "r2",
            "---\r\nid: r2\r\ndesc: |\r\n  line one\r\n\r\n  line two\r\ntags:\r\n- a\r\n- b\r\n---\r\n",
        ),
        (
            "r3",
            "---\nid: r3\n'k y': {a: 1}\n# trailing comment\n---\n\n\n---\n",
        ),
        ("r4", "---\nid: r4\n---\n"),
        (
            "r5",
            "---\nid: r5   # id comment\nrev: 3\nupdated_at: 2020-01-01T00:00:00Z\nstatus: \"open\"\n---\nno newline",
        ),
    ];
    let strip = |t: &str| -> String {
        t.split_inclusive('\n')
            .filter(|l| !l.starts_with("rev: ") && !l.starts_with("updated_at: "))
            .collect()
    };
    for (id, text) in docs {
        let rel = format!("observations/{id}.md");
        b.write(&rel, text);
        // A field of its own, named as such; the unset needs no flag: the document has it.
        b.run(&["edit", id, "--set", "x=1", "--extra-field", "x"])
            .ok();
        let set = b.read(&rel);
        assert!(set.contains("x: 1"), "{set:?}");
        b.run(&["edit", id, "--unset", "x"]).ok();
        let back = b.read(&rel);
        assert_eq!(strip(&back), strip(text), "{id}");
        let rev = text
            .lines()
            .find_map(|l| l.strip_prefix("rev: "))
            .map_or(0, |r| r.trim().parse::<u64>().unwrap());
        assert!(back.contains(&format!("rev: {}", rev + 2)), "{back:?}");
    }
    b.run(&["check"]).ok();
}

/// Every write checks the fields it writes against the schema; --force skips only the
/// workflow.
#[test]
fn edits_are_validated_against_the_schema() {
    let b = TestBoard::new();
    b.task("Valid", &["--id", "t-v"]);
    b.run(&[
        "post",
        "Seen",
        "--topic",
        "t",
        "--severity",
        "low",
        "--id",
        "obs-v",
    ])
    .ok();
    let before = snapshot(&b);
    for (args, code, message) in [
        (
            &["--set", "priority=-5"][..],
            6,
            "tasks/t-v.md: priority must be a whole number from 0 (critical) to 4 (backlog), not -5; nothing written",
        ),
        (
            &["--set", "priority=9"],
            6,
            "tasks/t-v.md: priority must be a whole number from 0 (critical) to 4 (backlog), not 9; nothing written",
        ),
        (
            &["--set", "priority=high"],
            6,
            "tasks/t-v.md: priority must be a whole number from 0 (critical) to 4 (backlog), not high; nothing written",
        ),
        (
            &["--set", "priority=1.5"],
            6,
            "tasks/t-v.md: priority must be a whole number from 0 (critical) to 4 (backlog), not 1.5; nothing written",
        ),
        (
            &["--set", "title="],
            6,
            "tasks/t-v.md: title must be text that is not empty, not \"\"; nothing written",
        ),
        (
            &["--set", "title=  "],
            6,
            "tasks/t-v.md: title must be text that is not empty, not \"\"; nothing written",
        ),
        (
            &["--unset", "title"],
            6,
            "tasks/t-v.md: title cannot be removed: every task has one; nothing written",
        ),
        (
            &["--set", "tags=notalist"],
            6,
            "tasks/t-v.md: tags must be a list of text, like [a, b], not notalist; nothing written",
        ),
        (
            &["--set", "created_at=yesterday"],
            6,
            "tasks/t-v.md: created_at must be a time like 2026-11-22T10:04:05Z or a date like 2026-11-22, not yesterday; nothing written",
        ),
        (
            &["--set", "parent=task-nope"],
            4,
            "task 'task-nope' (named in parent of tasks/t-v.md) not found\nhint: `tavern list tasks` shows the tasks on the board",
        ),
        (
            &["--force", "--set", "status=bogus"],
            6,
            "tasks/t-v.md: status must be a state of the workflow (pending, claimed, working, review, blocked, done, failed, cancelled), not bogus; nothing written",
        ),
        (
            &["--force", "--unset", "status"],
            6,
            "tasks/t-v.md: status cannot be removed: every task has one; nothing written",
        ),
    ] {
        b.run(&[&["edit", "t-v"], args].concat())
            .code(code)
            .stdout_is("")
            .stderr_is(&format!("error: {message}\n"));
    }
    for (args, message) in [
        (
            &["--set", "severity=urgent"][..],
            "observations/obs-v.md: severity must be one of info, low, medium, high, critical, not urgent; nothing written",
        ),
        (
            &["--set", "confidence=2"],
            "observations/obs-v.md: confidence must be a number from 0 to 1, not 2; nothing written",
        ),
        (
            &["--set", "scope=forever"],
            "observations/obs-v.md: scope must be one of session, persistent, not forever; nothing written",
        ),
    ] {
        b.run(&[&["edit", "obs-v"], args].concat())
            .code(6)
            .stderr_is(&format!("error: {message}\n"));
    }
    assert_eq!(snapshot(&b), before, "a refused edit changed the board");
    // Valid values still go through; --force still moves the workflow's fields.
    b.task("Parent", &["--id", "t-p"]);
    b.run(&[
        "edit",
        "t-v",
        "--set",
        "priority=4",
        "--set",
        "parent=t-p",
        "--set",
        "tags=[a, b]",
    ])
    .ok();
    b.run(&["edit", "t-v", "--force", "--set", "status=done"])
        .ok();
    b.run(&["edit", "t-v", "--set", "priority=null"]).ok();
    b.run(&["check"]).ok();
}
