//! Typos are refused: a field the board does not know is refused by the writes that name
//! one (`new --set`, `edit --set/--unset/--add/--remove`) with a suggestion, unless the
//! board declares it (board.yaml `fields:`, or the region's template) or the write names it
//! with `--extra-field`; a query term on a field no document may carry, and none carries,
//! is a usage error naming the term (`list`, `ready`, `claim --next`, `archive`).

use crate::util::{TestBoard, snapshot};

const KNOWN_TASK_FIELDS: &str = "id, rev, title, status, created_at, created_by, updated_at, tags, context, refs, priority, type, claimed_by, claimed_at, depends_on, parent, needs, completion_requires";

fn write_hint() -> &'static str {
    "hint: a field of your own is declared under fields: in board.yaml (or in the region's template); --extra-field NAME writes it this once\n"
}

const QUERY_HINT: &str = "hint: a query names the fields documents carry: the schema's, those declared under fields: in board.yaml or in a region's template, and any a document has\n";

#[test]
fn a_misspelt_field_is_refused_with_a_suggestion_and_nothing_is_written() {
    let b = TestBoard::new();
    b.task("Fix it", &["--id", "t-1"]);
    let before = snapshot(&b);
    let log = b.read("log.yaml");
    b.run(&["edit", "t-1", "--set", "priorty=0"])
        .code(2)
        .stdout_is("")
        .stderr_is(&format!(
            "error: tasks/t-1.md: unknown field 'priorty' for tasks; did you mean 'priority'? (nothing written)\n{}",
            write_hint()
        ));
    // Every kind of field write, the same.
    for args in [
        ["--unset", "priorty"],
        ["--add", "tgas=x"],
        ["--remove", "dependson=t-0"],
    ] {
        b.run(&[&["edit", "t-1"][..], &args].concat())
            .code(2)
            .stderr_has("unknown field '");
    }
    // No close field: the known ones are listed.
    b.run(&["edit", "t-1", "--set", "frobnicate=1"])
        .code(2)
        .stderr_is(&format!(
            "error: tasks/t-1.md: unknown field 'frobnicate' for tasks; known fields: {KNOWN_TASK_FIELDS} (nothing written)\n{}",
            write_hint()
        ));
    b.run(&["new", "task", "Another", "--set", "priorty=0"])
        .code(2)
        .stdout_is("")
        .stderr_is(&format!(
            "error: the new task: unknown field 'priorty' for tasks; did you mean 'priority'? (nothing written)\n{}",
            write_hint()
        ));
    b.run(&["new", "observation", "Seen", "--set", "severty=high"])
        .code(2)
        .stderr_has("unknown field 'severty' for observations; did you mean 'severity'?");
    // --json: one error object, the same exit code.
    let out = b.run(&["edit", "t-1", "--set", "priorty=0", "--json"]);
    out.code(2).stdout_is("");
    let err: serde_json::Value = serde_json::from_str(&out.stderr).unwrap();
    assert_eq!(err["error"]["kind"], "usage");
    assert_eq!(err["error"]["code"], 2);
    assert!(
        err["error"]["message"]
            .as_str()
            .unwrap()
            .contains("did you mean 'priority'?")
    );
    assert_eq!(snapshot(&b), before, "a refused write changed the board");
    assert_eq!(b.read("log.yaml"), log, "a refused write was logged");
}

#[test]
fn fields_of_the_boards_own_are_declared_or_named_explicitly() {
    let b = TestBoard::new();
    b.task("Fix it", &["--id", "t-1"]);
    // Named for this one write: written, then the document carries it, so later writes
    // (and its removal) need no flag.
    b.run(&[
        "edit",
        "t-1",
        "--set",
        "estimate=3",
        "--extra-field",
        "estimate",
    ])
    .ok()
    .stdout_is("edited t-1 (rev 2, pending)\n");
    assert!(b.read("tasks/t-1.md").contains("estimate: 3\n"));
    b.run(&["edit", "t-1", "--set", "estimate=5"]).ok();
    b.run(&["new", "task", "Other", "--id", "t-2", "--set", "estimate=1"])
        .code(2)
        .stderr_has("unknown field 'estimate' for tasks");
    b.run(&[
        "new",
        "task",
        "Other",
        "--id",
        "t-2",
        "--set",
        "estimate=1",
        "--set",
        "owner_team=core",
        "--extra-field",
        "estimate,owner_team",
    ])
    .ok();
    let log = b.log();
    assert_eq!(log.last().unwrap()["op"], "create");
    assert_eq!(log[1]["op"], "edit");
    // Declared in board.yaml: any write takes it.
    b.declare_fields("tasks", &["component"]);
    b.run(&["edit", "t-1", "--set", "component=parser"]).ok();
    b.run(&["new", "task", "Third", "--set", "component=cli"])
        .ok();
    // Declared per region: observations do not take a task's field.
    b.run(&["new", "observation", "Seen", "--set", "component=x"])
        .code(2)
        .stderr_has("unknown field 'component' for observations");
    // A field of the region's template counts as declared.
    let template = b.read("templates/observation.md");
    b.write(
        "templates/observation.md",
        template.replace("topic: general\n", "topic: general\nsprint: none\n"),
    );
    b.run(&["new", "observation", "Seen", "--set", "sprint=12"])
        .ok();
    // "*": any field goes in that region.
    b.declare_fields("questions", &["\"*\""]);
    b.run(&["new", "question", "Which?", "--set", "whatever=1"])
        .ok();
    b.run(&["check"]).ok();
}

#[test]
fn a_query_on_an_unknown_field_is_a_usage_error_naming_the_term() {
    let b = TestBoard::new();
    b.task("Fix it", &["--id", "t-1"]);
    let before = snapshot(&b);
    for cmd in [&["list"][..], &["ready"], &["claim", "--next"]] {
        b.run(&[cmd, &["stauts=pending"]].concat())
            .code(2)
            .stdout_is("")
            .stderr_is(&format!(
                "error: unknown field 'stauts' in query term 'stauts=pending'; did you mean 'status'?\n{QUERY_HINT}"
            ));
    }
    b.run(&["list", "tasks", "has:prority"])
        .code(2)
        .stderr_is(&format!(
            "error: unknown field 'prority' in query term 'has:prority'; did you mean 'priority'?\n{QUERY_HINT}"
        ));
    b.run(&["list", "frob>2"]).code(2).stderr_is(&format!(
        "error: unknown field 'frob' in query term 'frob>2'; no document has it\n{QUERY_HINT}"
    ));
    b.run(&["ready", "no:frob"]).code(2).stderr_is(&format!(
        "error: unknown field 'frob' in query term 'no:frob'; no task has it\n{QUERY_HINT}"
    ));
    b.run(&["archive", "stauts=done"])
        .code(2)
        .stderr_has("unknown field 'stauts' in query term 'stauts=done'");
    // Nothing was claimed, nothing written.
    assert_eq!(snapshot(&b), before);
    assert!(b.read("tasks/t-1.md").contains("status: pending\n"));
    // A field that a document carries (written by hand) is queryable undeclared, archived
    // ones included; so is a declared one that no document has yet.
    let t = b.read("tasks/t-1.md");
    b.write(
        "tasks/t-1.md",
        t.replace("rev: 1\n", "rev: 1\nlegacy: yes\n"),
    );
    b.run(&["list", "legacy=yes"]).ok().stdout_has("t-1");
    b.task("Old", &["--id", "t-old"]);
    let old = b.read("tasks/t-old.md");
    std::fs::remove_file(b.board().join("tasks/t-old.md")).unwrap();
    b.write(
        "archive/tasks/t-old.md",
        old.replace("status: pending\n", "status: done\nvintage: 1999\n"),
    );
    b.run(&["list", "--archived", "vintage=1999"])
        .ok()
        .stdout_has("t-old");
    b.declare_fields("tasks", &["design"]);
    b.run(&["list", "no:design"]).ok().stdout_has("t-1");
}
