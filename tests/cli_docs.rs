//! `new`, `show`, `list`, `edit`.

use crate::util::{TestBoard, redact_times};

#[test]
fn new_task_fills_the_template() {
    let b = TestBoard::new();
    let dep = b.task("First", &["--id", "task-first"]);
    let id = b.task(
        "Parse frontmatter",
        &[
            "--as",
            "planner",
            "-p",
            "1",
            "--tag",
            "parser",
            "--tag",
            "cli",
            "--depends-on",
            &dep,
            "--set",
            "estimate=3",
            "--set",
            "links=[a, b]",
            "--set",
            "note=Fix: the parser",
            "--set",
            "quoted=\"42\"",
            "--body",
            "Do it.",
        ],
    );
    assert!(id.starts_with("task-") && id.len() == 9, "{id}");
    assert_eq!(
        redact_times(&b.read(&format!("tasks/{id}.md"))),
        format!(
            "---\nid: {id}\ntitle: Parse frontmatter\nstatus: pending\npriority: 1\ntags: [parser, cli]\ndepends_on: [task-first]\ncreated_at: <TIME>\ncreated_by: planner\nupdated_at: <TIME>\nrev: 1\nestimate: 3\nlinks: [a, b]\nnote: \"Fix: the parser\"\nquoted: \"42\"\n---\n\nDo it.\n"
        )
    );
    let log = b.log();
    assert_eq!(log.len(), 2);
    assert_eq!(log[1]["op"], "create");
    assert_eq!(log[1]["actor"], "planner");
    assert_eq!(log[1]["doc"], format!("tasks/{id}.md"));
    assert_eq!(log[1]["rev"], 1);
    assert!(
        log[1]["diff"]
            .as_str()
            .unwrap()
            .contains("+title: Parse frontmatter\n")
    );
}

#[test]
fn new_observation_and_question_and_body_sources() {
    let b = TestBoard::new();
    let obs = b.run_stdin(
        &[
            "new",
            "observation",
            "--title",
            "Slow scan",
            "--body-file",
            "-",
            "--as",
            "coder-1",
        ],
        "It is slow.\n",
    );
    obs.ok();
    let obs = obs.text();
    assert!(obs.starts_with("obs-"), "{obs}");
    let text = b.read(&format!("observations/{obs}.md"));
    assert!(
        text.contains("\nstatus: open\ntopic: general\nseverity: info\n")
            && text.ends_with("---\n\nIt is slow.\n"),
        "{text}"
    );
    std::fs::write(b.root().join("q.md"), "Which format?").unwrap();
    let q = b
        .run(&[
            "new",
            "question",
            "--title",
            "CSV or TSV?",
            "--body-file",
            "q.md",
            "--as",
            "coder-2",
        ])
        .ok()
        .text();
    let text = b.read(&format!("questions/{q}.md"));
    assert!(
        q.starts_with("q-")
            && text.contains("\nasked_by: coder-2\n")
            && text.ends_with("\nWhich format?\n"),
        "{text}"
    );
}

#[test]
fn new_follows_the_boards_own_template() {
    let b = TestBoard::new();
    b.write("templates/task.md", "---\n# our own\nid: x\ntitle: t\nstatus: pending\nteam: core\nrev: 1\n---\nChecklist:\n- [ ] tests\n");
    let id = b.task("Templated", &[]);
    assert_eq!(
        redact_times(&b.read(&format!("tasks/{id}.md"))),
        format!(
            "---\n# our own\nid: {id}\ntitle: Templated\nstatus: pending\nteam: core\nrev: 1\ncreated_at: <TIME>\ncreated_by: tester\nupdated_at: <TIME>\n---\nChecklist:\n- [ ] tests\n"
        )
    );
}

#[test]
fn new_refuses_bad_ids_taken_ids_missing_deps_and_reserved_fields() {
    let b = TestBoard::new();
    b.task("Mine", &["--id", "task-mine"]);
    b.run(&["new", "task", "--title", "Again", "--id", "task-mine"])
        .code(3)
        .stderr_is("error: tasks/task-mine.md: a task with id 'task-mine' already exists\n");
    b.run(&["new", "task", "--title", "Escape", "--id", "../../etc/passwd"])
        .code(6)
        .stderr_is("error: invalid id '../../etc/passwd': it must start with a lowercase letter or a digit\nhint: ids match [a-z0-9][a-z0-9._-]{0,63}\n");
    b.run(&["new", "task", "--title", "Upper", "--id", "Task-1"])
        .code(6)
        .stderr_has("it must start with a lowercase letter or a digit");
    b.run(&["new", "task", "--title", "Sep", "--id", "a/b"])
        .code(6)
        .stderr_has("it contains a path separator");
    b.run(&["new", "task", "--title", "Dep", "--depends-on", "task-nope"])
        .code(4)
        .stderr_has("task 'task-nope' (named in --depends-on) not found");
    b.run(&["new", "task", "--title", "Rev", "--set", "rev=9"])
        .code(2)
        .stderr_has("tavern manages 'rev'");
    b.run(&["new", "task", "--title", "  "])
        .code(2)
        .stderr_has("a title is required");
    b.run(&["new", "task", "--title", "x", "--set", "novalue"])
        .code(2)
        .stderr_has("--set expects KEY=VALUE");
    assert_eq!(
        std::fs::read_dir(b.board().join("tasks")).unwrap().count(),
        1
    );
    assert_eq!(b.log().len(), 1);
}

#[test]
fn new_json_prints_the_document() {
    let b = TestBoard::new();
    let v = b
        .run(&["new", "task", "--title", "J", "--json", "--id", "task-j"])
        .ok()
        .json();
    assert_eq!(v["id"], "task-j");
    assert_eq!(v["path"], "tasks/task-j.md");
    assert_eq!(v["rev"], 1);
    assert_eq!(v["seq"], 1);
    assert_eq!(v["fields"]["status"], "pending");
}

#[test]
fn show_by_id_prefix_and_path() {
    let b = TestBoard::new();
    b.task("Alpha", &["--id", "task-alpha"]);
    b.task("Alpine", &["--id", "task-alpine"]);
    let raw = b.read("tasks/task-alpha.md");
    b.run(&["show", "task-alpha"]).ok().stdout_is(&raw);
    b.run(&["show", "tasks/task-alpha.md"]).ok().stdout_is(&raw);
    b.run(&["show", "task-alpi"])
        .ok()
        .stdout_is(&b.read("tasks/task-alpine.md"));
    b.run(&["show", "task-al"]).code(2).stderr_is("error: id prefix 'task-al' is ambiguous; it matches:\n  tasks/task-alpha.md\n  tasks/task-alpine.md\n");
    b.run(&["show", "task-zzz"]).code(4).stderr_is("error: document 'task-zzz' not found\nhint: `tavern list` shows the documents on the board\n");
    let v = b.run(&["show", "task-alpha", "--json"]).ok().json();
    assert_eq!(v["id"], "task-alpha");
    assert_eq!(v["region"], "tasks");
    assert_eq!(v["fields"]["title"], "Alpha");
    assert_eq!(v["body"], "\n## Goal\n\n## Done when\n\n");
}

fn listing_board() -> TestBoard {
    let b = TestBoard::new();
    // Older than t-later, which sorts before it by id: age must win over the id.
    b.task(
        "Write the parser",
        &[
            "--id",
            "t-parse",
            "-p",
            "1",
            "--tag",
            "parser",
            "--set",
            "created_at=2026-01-01T00:00:00Z",
        ],
    );
    b.task(
        "Document the CLI",
        &[
            "--id",
            "t-docs",
            "-p",
            "3",
            "--tag",
            "docs",
            "--body",
            "Mention the PARSER too.",
        ],
    );
    b.task(
        "Fix the crash",
        &["--id", "t-crash", "-p", "0", "--set", "estimate=5"],
    );
    b.task(
        "Later parser work",
        &["--id", "t-later", "-p", "1", "--tag", "parser"],
    );
    b.run(&["claim", "t-crash", "--as", "coder-1"]).ok();
    b.run(&[
        "new",
        "observation",
        "--title",
        "Parser is slow",
        "--id",
        "obs-slow",
        "--set",
        "severity=high",
        // High severity ranks with priority 1; a later time puts it after t-later.
        "--set",
        "created_at=2099-01-01T00:00:00Z",
    ])
    .ok();
    b
}

fn ids(out: &crate::util::Out) -> Vec<String> {
    out.stdout
        .lines()
        .skip(1)
        .map(|l| l.split_whitespace().next().unwrap().to_string())
        .collect()
}

#[test]
fn list_sorts_by_priority_then_age_and_prints_a_table() {
    let b = listing_board();
    b.run(&["list", "tasks"]).ok().stdout_is(
        "ID       STATUS   PRI  OWNER    TITLE\nt-crash  claimed  0    coder-1  Fix the crash\nt-parse  pending  1    -        Write the parser\nt-later  pending  1    -        Later parser work\nt-docs   pending  3    -        Document the CLI\n",
    );
    assert_eq!(
        ids(&b.run(&["list"])),
        ["t-crash", "t-parse", "t-later", "obs-slow", "t-docs"]
    );
    b.run(&["list", "tasks", "status=done"]).ok().stdout_is("");
}

#[test]
fn list_queries() {
    let b = listing_board();
    for (query, expected) in [
        (
            vec!["tasks", "status=pending"],
            vec!["t-parse", "t-later", "t-docs"],
        ),
        (vec!["tasks", "status!=pending"], vec!["t-crash"]),
        (vec!["tasks", "status=claimed,done"], vec!["t-crash"]),
        (
            vec!["tasks", "priority<=1", "priority>0"],
            vec!["t-parse", "t-later"],
        ),
        (vec!["tasks", "estimate>=5"], vec!["t-crash"]),
        (vec!["tasks", "tags=parser"], vec!["t-parse", "t-later"]),
        (vec!["tag:docs"], vec!["t-docs"]),
        (vec!["has:claimed_by"], vec!["t-crash"]),
        (
            vec!["tasks", "no:claimed_by", "priority<2"],
            vec!["t-parse", "t-later"],
        ),
        (
            vec!["parser"],
            vec!["t-parse", "t-later", "obs-slow", "t-docs"],
        ),
        (vec!["region:observations"], vec!["obs-slow"]),
        (
            vec!["tasks", "created_at>-1h"],
            vec!["t-crash", "t-later", "t-docs"],
        ),
        (vec!["tasks", "created_at<-1h"], vec!["t-parse"]),
        (vec!["tasks", "created_at<2026-01-02"], vec!["t-parse"]),
        (
            vec!["tasks", "status=pending priority=1"],
            vec!["t-parse", "t-later"],
        ),
    ] {
        let out = b.run(&[vec!["list"], query.clone()].concat());
        out.ok();
        assert_eq!(ids(&out), expected, "query {query:?}");
    }
}

#[test]
fn list_json_and_malformed_queries() {
    let b = listing_board();
    let v = b
        .run(&["list", "tasks", "priority=0", "--json"])
        .ok()
        .json();
    assert_eq!(v["documents"].as_array().unwrap().len(), 1);
    assert_eq!(v["documents"][0]["id"], "t-crash");
    assert_eq!(v["documents"][0]["fields"]["claimed_by"], "coder-1");
    assert_eq!(v["skipped"], serde_json::json!([]));
    for bad in ["status=", "=x", "prio<1,2", "what:ever"] {
        let out = b.run(&["list", bad]);
        out.code(2);
        assert!(
            out.stderr
                .starts_with(&format!("error: malformed query term '{bad}': ")),
            "{}",
            out.stderr
        );
    }
}

#[test]
fn list_skips_a_broken_file_and_says_so() {
    let b = listing_board();
    b.write(
        "tasks/t-broken.md",
        "---\nid: t-broken\ntitle: [unclosed\n---\n",
    );
    let out = b.run(&["list", "tasks", "status=pending"]);
    out.ok()
        .stderr_is("warning: skipped tasks/t-broken.md: line 3: unclosed bracket '['\n");
    assert_eq!(ids(&out), ["t-parse", "t-later", "t-docs"]);
    let v = b.run(&["list", "--json"]).ok().json();
    assert_eq!(v["skipped"][0]["path"], "tasks/t-broken.md");
    b.run(&["show", "t-parse"]).ok();
    b.run(&["show", "t-broken"])
        .code(6)
        .stderr_is("error: tasks/t-broken.md: line 3: unclosed bracket '['\n");
}

#[test]
fn edit_fields_lists_and_body() {
    let b = TestBoard::new();
    b.task("Edit me", &["--id", "t-e", "--tag", "a"]);
    b.run(&[
        "edit",
        "t-e",
        "--set",
        "priority=0",
        "--add",
        "tags=b",
        "--add",
        "tags=c",
        "--remove",
        "tags=a",
        "--set",
        "owner_note=hi",
        "--as",
        "ed",
    ])
    .ok()
    .stdout_is("edited t-e (rev 2, pending)\n");
    let text = redact_times(&b.read("tasks/t-e.md"));
    assert_eq!(
        text,
        "---\nid: t-e\ntitle: Edit me\nstatus: pending\npriority: 0\ntags: [b, c]\ndepends_on: []\ncreated_at: <TIME>\ncreated_by: tester\nupdated_at: <TIME>\nrev: 2\nowner_note: hi\n---\n\n## Goal\n\n## Done when\n\n"
    );
    b.run(&["edit", "t-e", "--unset", "owner_note", "--body", "New body"])
        .ok()
        .stdout_is("edited t-e (rev 3, pending)\n");
    let text = b.read("tasks/t-e.md");
    assert!(
        !text.contains("owner_note") && text.ends_with("---\n\nNew body\n"),
        "{text}"
    );
    // Changing nothing writes and logs nothing.
    let entries = b.log().len();
    b.run(&["edit", "t-e", "--add", "tags=b"])
        .ok()
        .stdout_is("unchanged t-e (rev 3, pending)\n");
    assert_eq!(b.log().len(), entries);
    let last = &b.log()[entries - 1];
    assert_eq!(last["op"], "edit");
    assert_eq!(last["rev"], 3);
}

#[test]
fn edit_refusals() {
    let b = TestBoard::new();
    b.task("Guarded", &["--id", "t-g"]);
    b.run(&["edit", "t-g", "--set", "x=1", "--if-rev", "7"]).code(3).stderr_is(
        "error: tasks/t-g.md: rev is 1, not 7 (--if-rev): it changed since you read it; re-read and retry\n",
    );
    b.run(&["edit", "t-g", "--set", "x=1", "--if-rev", "1"])
        .ok();
    b.run(&["edit", "t-g", "--set", "status=done"])
        .code(2)
        .stderr_has("'status' of a task changes through its workflow");
    b.run(&["edit", "t-g", "--set", "id=other"])
        .code(2)
        .stderr_has("'id' is managed by tavern");
    b.run(&["edit", "t-g"])
        .code(2)
        .stderr_has("nothing to edit");
    b.run(&["edit", "t-g", "--add", "title=x"])
        .code(6)
        .stderr_has("need 'title' to be a list, but it is a string");
    b.run(&["edit", "t-g", "--set", "status=done", "--force"])
        .ok();
    assert_eq!(b.log().last().unwrap()["force"], true);
}
