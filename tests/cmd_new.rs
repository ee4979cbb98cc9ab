//! `tavern new task|observation|question`: the file it writes, the log entry, the output,
//! and every refusal (which must leave the board as it was).

use crate::util::{TestBoard, redact_times, snapshot};

/// The unified diff of creating a file with `text`, as the log records it.
fn creation_diff(text: &str) -> String {
    let lines: Vec<&str> = text.split_inclusive('\n').collect();
    let mut d = format!("@@ -0,0 +1,{} @@\n", lines.len());
    for l in lines {
        d.push('+');
        d.push_str(l);
    }
    d
}

#[test]
fn new_task_writes_the_template_with_the_given_fields() {
    let b = TestBoard::new();
    b.declare_fields(
        "tasks",
        &[
            "list", "count", "ratio", "quoted", "fix", "flag", "answer", "map", "empty",
        ],
    );
    b.task("Base", &["--id", "t-base"]);
    b.task("Other", &["--id", "t-other"]);
    b.run(&[
        "new",
        "task",
        "--title",
        "Parse: frontmatter",
        "--id",
        "t-main",
        "--as",
        "planner",
        "--priority",
        "0",
        "--tag",
        "parser",
        "--tag",
        "yaml",
        "--depends-on",
        "t-base,t-other",
        "--set",
        "list=[a, b]",
        "--set",
        "count=3",
        "--set",
        "ratio=0.5",
        "--set",
        "quoted=\"007\"",
        "--set",
        "fix=Fix: x",
        "--set",
        "flag=true",
        "--set",
        "answer=yes",
        "--set",
        "map={k: v}",
        "--set",
        "empty=",
        "--body",
        "Do it.",
    ])
    .ok()
    .stdout_is("t-main\n")
    .stderr_is("");
    let text = b.read("tasks/t-main.md");
    assert_eq!(
        redact_times(&text),
        "---\nid: t-main\ntitle: \"Parse: frontmatter\"\nstatus: pending\npriority: 0\ntags: [parser, yaml]\ndepends_on: [t-base, t-other]\ncreated_at: <TIME>\ncreated_by: planner\nupdated_at: <TIME>\nrev: 1\nlist: [a, b]\ncount: 3\nratio: 0.5\nquoted: \"007\"\nfix: \"Fix: x\"\nflag: true\nanswer: \"yes\"\nmap: {k: v}\nempty: \"\"\n---\n\nDo it.\n"
    );
    let v = b.run(&["show", "t-main", "--json"]).ok().json();
    let f = &v["fields"];
    assert_eq!(f["title"], "Parse: frontmatter");
    assert_eq!(f["list"], serde_json::json!(["a", "b"]));
    assert_eq!(f["count"], 3);
    assert_eq!(f["ratio"], 0.5);
    assert_eq!(f["quoted"], "007");
    assert_eq!(f["fix"], "Fix: x");
    assert_eq!(f["flag"], true);
    assert_eq!(f["answer"], "yes");
    assert_eq!(f["map"], serde_json::json!({"k": "v"}));
    assert_eq!(f["empty"], "");
    assert_eq!(f["created_at"], f["updated_at"]);

    let log = b.log();
    assert_eq!(log.len(), 3);
    let e = &log[2];
    let keys: Vec<&str> = e.as_object().unwrap().keys().map(String::as_str).collect();
    assert_eq!(
        keys,
        ["seq", "origin", "at", "actor", "op", "doc", "rev", "diff"]
    );
    assert_eq!(e["seq"], 3);
    assert_eq!(e["actor"], "planner");
    assert_eq!(e["op"], "create");
    assert_eq!(e["doc"], "tasks/t-main.md");
    assert_eq!(e["rev"], 1);
    assert_eq!(redact_times(e["at"].as_str().unwrap()), "<TIME>");
    assert_eq!(e["diff"], creation_diff(&text));
}

#[test]
fn set_is_applied_last_and_repeated_flags_accumulate() {
    let b = TestBoard::new();
    b.task("A", &["--id", "t-a"]);
    b.task("B", &["--id", "t-b"]);
    b.task(
        "C",
        &[
            "--id",
            "t-c",
            "-p",
            "1",
            "--set",
            "priority=3",
            "--depends-on",
            "t-a",
            "--depends-on",
            "t-b",
            "--set",
            "title=Renamed",
        ],
    );
    let v = b.run(&["show", "t-c", "--json"]).ok().json();
    assert_eq!(v["fields"]["priority"], 3);
    assert_eq!(v["fields"]["title"], "Renamed");
    assert_eq!(v["fields"]["depends_on"], serde_json::json!(["t-a", "t-b"]));
}

#[test]
fn generated_ids_use_the_boards_prefixes() {
    let b = TestBoard::new();
    let alphabet = "0123456789abcdefghjkmnpqrstvwxyz";
    for (kind, prefix, dir) in [
        ("task", "task-", "tasks"),
        ("observation", "obs-", "observations"),
        ("question", "q-", "questions"),
    ] {
        let id = b.run(&["new", kind, "--title", "x"]).ok().text();
        let random = id.strip_prefix(prefix).unwrap_or_else(|| panic!("{id}"));
        assert_eq!(random.len(), 4, "{id}");
        assert!(random.chars().all(|c| alphabet.contains(c)), "{id}");
        assert!(b.board().join(format!("{dir}/{id}.md")).is_file());
    }
    let yaml = b
        .read("board.yaml")
        .replace("  task: task\n", "  task: job\n");
    b.write("board.yaml", yaml);
    let id = b.task("Job", &[]);
    assert!(id.starts_with("job-") && id.len() == 8, "{id}");
}

#[test]
fn observations_and_questions_follow_their_templates() {
    let b = TestBoard::new();
    // What it is about must exist (the schema checks references).
    b.task("X", &["--id", "t-x"]);
    b.run(&[
        "new",
        "observation",
        "--title",
        "Scan is slow",
        "--id",
        "obs-slow",
        "--as",
        "coder-1",
        "--set",
        "severity=high",
        "--set",
        "confidence=0.8",
        "--set",
        "about=t-x",
    ])
    .ok()
    .stdout_is("obs-slow\n");
    assert_eq!(
        redact_times(&b.read("observations/obs-slow.md")),
        "---\nid: obs-slow\ntitle: Scan is slow\nstatus: open\ntopic: general\nseverity: high\ntags: []\ncreated_at: <TIME>\ncreated_by: coder-1\nupdated_at: <TIME>\nrev: 1\nconfidence: 0.8\nabout: t-x\nscope: persistent\n---\n"
    );
    b.run(&[
        "new",
        "question",
        "--title",
        "May I push?",
        "--id",
        "q-push",
        "--as",
        "coder-2",
        "--set",
        "kind=permission",
    ])
    .ok()
    .stdout_is("q-push\n");
    assert_eq!(
        redact_times(&b.read("questions/q-push.md")),
        "---\nid: q-push\ntitle: May I push?\nstatus: open\nkind: permission\nasked_by: coder-2\ntags: []\ncreated_at: <TIME>\ncreated_by: coder-2\nupdated_at: <TIME>\nrev: 1\n---\n"
    );
    let docs: Vec<String> = b
        .log()
        .iter()
        .map(|e| e["doc"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(
        docs,
        [
            "tasks/t-x.md",
            "observations/obs-slow.md",
            "questions/q-push.md"
        ]
    );
}

#[test]
fn body_from_flag_file_and_stdin() {
    let b = TestBoard::new();
    let body_of = |id: &str| {
        let text = b.read(&format!("tasks/{id}.md"));
        text.split_once("\n---\n").unwrap().1.to_string()
    };
    b.task("Flag", &["--id", "t-flag", "--body", "one line"]);
    assert_eq!(body_of("t-flag"), "\none line\n");
    // A body that starts with a blank line and ends with a newline is kept as it is.
    b.task(
        "Kept",
        &["--id", "t-kept", "--body", "\n# Heading\n\ntext\n"],
    );
    assert_eq!(body_of("t-kept"), "\n# Heading\n\ntext\n");

    std::fs::write(b.root().join("body.md"), "From a file\n---\nwith a rule\n").unwrap();
    b.task("File", &["--id", "t-file", "--body-file", "body.md"]);
    assert_eq!(body_of("t-file"), "\nFrom a file\n---\nwith a rule\n");

    for flag in [["--body-file", "-"], ["--body", "-"]] {
        let id = format!("t-stdin{}", flag[0].len());
        b.run_stdin(
            &[
                "new", "task", "--title", "Stdin", "--id", &id, flag[0], flag[1],
            ],
            "piped\nbody",
        )
        .ok()
        .stdout_is(&format!("{id}\n"));
        assert_eq!(body_of(&id), "\npiped\nbody\n");
    }
    let v = b.run(&["show", "t-file", "--json"]).ok().json();
    assert_eq!(v["body"], "\nFrom a file\n---\nwith a rule\n");
    assert_eq!(v["fields"]["title"], "File");

    // Observations and questions take their bodies the same ways.
    let obs = b
        .run_stdin(
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
        )
        .ok()
        .text();
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
            && text.ends_with("---\n\nWhich format?\n"),
        "{text}"
    );
}

#[test]
fn new_json_output() {
    let b = TestBoard::new();
    let out = b.run(&[
        "new", "task", "--title", "J", "--id", "t-j", "--tag", "x", "--json", "--as", "bot",
    ]);
    out.ok().stderr_is("");
    assert_eq!(out.stdout.lines().count(), 1);
    let mut v = out.json();
    let fields = v["fields"].take();
    assert_eq!(
        v,
        serde_json::json!({"id": "t-j", "region": "tasks", "path": "tasks/t-j.md", "rev": 1, "fields": null, "seq": 1})
    );
    let keys: Vec<&str> = fields
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(
        keys,
        [
            "id",
            "title",
            "status",
            "priority",
            "tags",
            "depends_on",
            "created_at",
            "created_by",
            "updated_at",
            "rev"
        ]
    );
    assert_eq!(fields["status"], "pending");
    assert_eq!(fields["tags"], serde_json::json!(["x"]));
    assert_eq!(fields["created_by"], "bot");
}

#[test]
fn the_actor_comes_from_as_then_env_then_user() {
    let b = TestBoard::new();
    b.task("User", &["--id", "t-user"]);
    let mut c = b.cmd(&["new", "task", "--title", "Env", "--id", "t-env"]);
    c.env("TAVERN_AGENT", "agent-7");
    crate::util::output(c).ok();
    let mut c = b.cmd(&[
        "new", "task", "--title", "Flag", "--id", "t-flag", "--as", "lead",
    ]);
    c.env("TAVERN_AGENT", "agent-7");
    crate::util::output(c).ok();
    let actors: Vec<String> = b
        .log()
        .iter()
        .map(|e| e["actor"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(actors, ["tester", "agent-7", "lead"]);
    assert!(b.read("tasks/t-env.md").contains("\ncreated_by: agent-7\n"));
    let before = snapshot(&b);
    b.run(&["new", "task", "--title", "x", "--as", ""])
        .code(2)
        .stderr_is("error: invalid actor name '': use 1-64 printable characters (--as NAME or TAVERN_AGENT)\n");
    b.run(&["new", "task", "--title", "x", "--as", &"a".repeat(65)])
        .code(2)
        .stderr_has("invalid actor name");
    assert_eq!(snapshot(&b), before);
}

#[test]
fn new_follows_an_edited_template() {
    let b = TestBoard::new();
    b.write(
        "templates/task.md",
        "---\n# Team template\nid: placeholder\ntitle: placeholder\nstatus: pending\nteam: core   # who owns it\nestimate: ~\nrev: 1\n---\n\n## Checklist\n\n- [ ] tests\n- [ ] docs\n",
    );
    b.task("Templated", &["--id", "t-tpl", "--set", "estimate=2"]);
    assert_eq!(
        redact_times(&b.read("tasks/t-tpl.md")),
        "---\n# Team template\nid: t-tpl\ntitle: Templated\nstatus: pending\nteam: core   # who owns it\nestimate: 2\nrev: 1\ncreated_at: <TIME>\ncreated_by: tester\nupdated_at: <TIME>\n---\n\n## Checklist\n\n- [ ] tests\n- [ ] docs\n"
    );
    // A generated id fills the template too, and a body right after the closing `---`
    // stays there.
    b.write(
        "templates/task.md",
        "---\n# our own\nid: x\ntitle: t\nstatus: pending\nteam: core\nrev: 1\n---\nChecklist:\n- [ ] tests\n",
    );
    let id = b.task("Unspaced", &[]);
    assert_eq!(
        redact_times(&b.read(&format!("tasks/{id}.md"))),
        format!(
            "---\n# our own\nid: {id}\ntitle: Unspaced\nstatus: pending\nteam: core\nrev: 1\ncreated_at: <TIME>\ncreated_by: tester\nupdated_at: <TIME>\n---\nChecklist:\n- [ ] tests\n"
        )
    );
    // Other kinds still use their own templates.
    b.run(&["new", "observation", "--title", "o", "--id", "o-1"])
        .ok();
    assert!(b.read("observations/o-1.md").contains("\nseverity: info\n"));
    // Without a template file, the built-in one is used; without a body, its headings
    // would stay empty, so they are left out.
    std::fs::remove_file(b.board().join("templates/task.md")).unwrap();
    b.task("Builtin", &["--id", "t-builtin"]);
    assert!(b.read("tasks/t-builtin.md").ends_with("\nrev: 1\n---\n"));
    b.task("Given", &["--id", "t-given", "--body", "## Goal\n\nShip."]);
    assert!(
        b.read("tasks/t-given.md")
            .ends_with("\nrev: 1\n---\n\n## Goal\n\nShip.\n")
    );
    // A template section with text stays; only the empty ones go.
    b.write(
        "templates/task.md",
        "---\nid: x\ntitle: t\nstatus: pending\nrev: 1\n---\n\n## Goal\n\n## Checklist\n\n- [ ] tests\n\n## Notes\n",
    );
    b.task("Partly", &["--id", "t-partly"]);
    assert!(
        b.read("tasks/t-partly.md")
            .ends_with("---\n\n## Checklist\n\n- [ ] tests\n")
    );
}

#[test]
fn a_broken_template_is_refused() {
    let b = TestBoard::new();
    b.write("templates/task.md", "---\ntitle: [broken\n---\n");
    let before = snapshot(&b);
    b.run(&["new", "task", "--title", "x"])
        .code(6)
        .stdout_is("")
        .stderr_is(
            "error: templates/task.md: template is broken: line 2: unclosed bracket '[' (a value starting with [ { * & ! | > ' \" % @ or ` is read as YAML syntax: quote it, as in title: \"[broken\")\n",
        );
    b.write("templates/task.md", "no frontmatter\n");
    b.run(&["new", "task", "--title", "x"])
        .code(6)
        .stderr_is("error: templates/task.md: template is broken: line 1: no frontmatter: the first line must be exactly `---`\n");
    b.write("templates/task.md", "---\ntitle: [broken\n---\n");
    assert_eq!(snapshot(&b), before);
}

#[test]
fn chosen_ids_and_their_refusals() {
    let b = TestBoard::new();
    b.run(&["new", "task", "--title", "Chosen", "--id", "0.a_b-c"])
        .ok()
        .stdout_is("0.a_b-c\n");
    let max = "a".repeat(64);
    b.run(&["new", "observation", "--title", "Long", "--id", &max])
        .ok();
    let before = snapshot(&b);
    b.run(&["new", "task", "--title", "Again", "--id", "0.a_b-c"])
        .code(3)
        .stderr_is("error: tasks/0.a_b-c.md: a task with id '0.a_b-c' already exists\n");
    let hint = "\nhint: ids match [a-z0-9][a-z0-9._-]{0,63}\n";
    for (id, reason) in [
        (
            "../../etc/passwd",
            "it must start with a lowercase letter or a digit",
        ),
        ("a/../../x", "it contains a path separator"),
        ("a\\b", "it contains a path separator"),
        ("Upper", "it must start with a lowercase letter or a digit"),
        ("upPer", "it contains an uppercase letter"),
        ("", "it is empty"),
        (
            ".hidden",
            "it must start with a lowercase letter or a digit",
        ),
        ("-x", "it must start with a lowercase letter or a digit"),
        ("a b", "it contains a character other than a-z 0-9 . _ -"),
        ("é", "it must start with a lowercase letter or a digit"),
        (&"a".repeat(65), "it is longer than 64 characters"),
    ] {
        b.run(&["new", "task", "--title", "Bad", &format!("--id={id}")])
            .code(6)
            .stdout_is("")
            .stderr_is(&format!(
                "error: invalid id '{}': {reason}{hint}",
                id.escape_debug()
            ));
    }
    b.run(&["new", "task", "--title", "x", "--set", "id=t-sneaky"])
        .code(2)
        .stderr_is(
            "error: --set id=… is not allowed: tavern manages 'id' (use --id to choose an id)\n",
        );
    b.run(&["new", "task", "--title", "x", "--set", "rev=7"])
        .code(2)
        .stderr_is(
            "error: --set rev=… is not allowed: tavern manages 'rev' (use --id to choose an id)\n",
        );
    b.run(&["new", "task", "--title", "x", "--set", "bad key=1"])
        .code(2)
        .stderr_is("error: --set: 'bad key' is not a field name (letters, digits, _ - .)\n");
    b.run(&["new", "task", "--title", "x", "--set", "novalue"])
        .code(2)
        .stderr_is("error: --set expects KEY=VALUE, got 'novalue'\n");
    b.run(&["new", "task", "--title", "   "])
        .code(2)
        .stderr_is("error: a title is required: --title \"…\"\n");
    b.run(&["new", "task"]).code(2).stderr_has("<TITLE>");
    b.run(&["new", "bogus", "--title", "x"])
        .code(2)
        .stderr_has("invalid value 'bogus'");
    b.run(&[
        "new",
        "task",
        "--title",
        "x",
        "--body",
        "a",
        "--body-file",
        "f",
    ])
    .code(2)
    .stderr_has("cannot be used with");
    assert_eq!(snapshot(&b), before, "a refused `new` changed the board");
}

#[test]
fn dependencies_must_exist_and_not_be_the_task_itself() {
    let b = TestBoard::new();
    b.task("Base", &["--id", "t-base"]);
    let before = snapshot(&b);
    b.run(&["new", "task", "--title", "x", "--depends-on", "t-base,t-nope"])
        .code(4)
        .stdout_is("")
        .stderr_is("error: task 't-nope' (named in --depends-on) not found\nhint: `tavern list tasks` shows the tasks on the board\n");
    b.run(&["new", "task", "--title", "x", "--depends-on", "../t-base"])
        .code(6)
        .stderr_has("invalid id '../t-base'");
    b.run(&[
        "new",
        "task",
        "--title",
        "x",
        "--id",
        "t-self",
        "--depends-on",
        "t-self",
    ])
    .code(6)
    .stderr_is("error: task t-self cannot depend on itself\n");
    assert_eq!(snapshot(&b), before);
    b.task("Top", &["--id", "t-top", "--depends-on", "t-base"]);
}

#[test]
fn body_file_problems() {
    let b = TestBoard::new();
    let before = snapshot(&b);
    let missing = b.root().join("missing.md");
    b.run(&["new", "task", "--title", "x", "--body-file", "missing.md"])
        .code(1)
        .stderr_has(&format!("error: cannot read {}", "missing.md"));
    assert!(!missing.exists());
    std::fs::write(b.root().join("bin.md"), b"ok \xff\xfe").unwrap();
    b.run(&["new", "task", "--title", "x", "--body-file", "bin.md"])
        .code(6)
        .stderr_is("error: bin.md: the body is not valid UTF-8\n");
    assert_eq!(snapshot(&b), before);
}

#[test]
fn hostile_titles_stay_one_quoted_field() {
    let b = TestBoard::new();
    b.task("line\nbreak: yes\n---", &["--id", "t-hostile"]);
    let text = b.read("tasks/t-hostile.md");
    assert!(
        text.contains("\ntitle: \"line\\nbreak: yes\\n---\"\n"),
        "{text}"
    );
    let v = b.run(&["show", "t-hostile", "--json"]).ok().json();
    assert_eq!(v["fields"]["title"], "line\nbreak: yes\n---");
    assert!(v["fields"].get("break").is_none());
    // The table never prints the control characters.
    b.run(&["list", "tasks"])
        .ok()
        .stdout_has("line break: yes ---\n");
}

#[test]
fn new_documents_are_validated_against_the_schema() {
    let b = TestBoard::new();
    let before = snapshot(&b);
    for (args, code, message) in [
        (
            &["task", "--priority", "9"][..],
            6,
            "the new task: priority must be a whole number from 0 (critical) to 4 (backlog), not 9; nothing written",
        ),
        (
            &["task", "--set", "priority=high", "--id", "t-x"],
            6,
            "tasks/t-x.md: priority must be a whole number from 0 (critical) to 4 (backlog), not high; nothing written",
        ),
        (
            &["task", "--set", "tags=notalist"],
            6,
            "the new task: tags must be a list of text, like [a, b], not notalist; nothing written",
        ),
        (
            &["task", "--set", "parent=task-nope"],
            4,
            "task 'task-nope' (named in parent of the new task) not found\nhint: `tavern list tasks` shows the tasks on the board",
        ),
        (
            &["task", "--set", "status=bogus"],
            6,
            "the new task: status must be a state of the workflow (pending, claimed, working, review, blocked, done, failed, cancelled), not bogus; nothing written",
        ),
        (
            &["observation", "--set", "severity=urgent"],
            6,
            "the new observation: severity must be one of info, low, medium, high, critical, not urgent; nothing written",
        ),
        (
            &["question", "--set", "kind=poll"],
            6,
            "the new question: kind must be one of question, permission, not poll; nothing written",
        ),
    ] {
        b.run(&[&["new"], args, &["--title", "x"]].concat())
            .code(code)
            .stdout_is("")
            .stderr_is(&format!("error: {message}\n"));
    }
    assert_eq!(snapshot(&b), before);
}

/// One spelling for one thing: the title is an argument, as for `post` and `ask`
/// (`--title` still works); a task takes --parent and --needs like any other field.
#[test]
fn the_title_is_an_argument_and_tasks_take_parent_and_needs() {
    let b = TestBoard::new();
    b.run(&["new", "task", "Epic", "--id", "t-epic"]).ok();
    b.run(&[
        "new", "task", "Part", "--id", "t-part", "--parent", "t-epic", "--needs", "rust,sql",
    ])
    .ok();
    let part = b.read("tasks/t-part.md");
    assert!(
        part.contains("\ntitle: Part\n") && part.contains("\nparent: t-epic\nneeds: [rust, sql]\n"),
        "{part}"
    );
    b.run(&["tree", "t-epic"])
        .ok()
        .stdout_has("  t-part [pending] Part\n");
    b.run(&["new", "task", "--title", "Old spelling", "--id", "t-old"])
        .ok();
    b.run(&["new", "task", "A", "--title", "B"])
        .code(2)
        .stderr_has("cannot be used with");
    b.run(&["new", "task"]).code(2).stderr_has("<TITLE>");
    b.run(&["new", "task", "Orphan", "--parent", "t-nope"])
        .code(4);
    // post takes --title as well as its argument; new observation sets scope as post does.
    b.run(&[
        "post",
        "--title",
        "Seen",
        "--topic",
        "t",
        "--severity",
        "low",
        "--id",
        "obs-1",
    ])
    .ok();
    b.run(&["new", "observation", "Noted", "--id", "obs-2"])
        .ok();
    for id in ["obs-1", "obs-2"] {
        assert!(
            b.read(&format!("observations/{id}.md"))
                .contains("\nscope: persistent\n")
        );
    }
}
