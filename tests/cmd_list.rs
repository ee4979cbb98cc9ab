//! `tavern list`: regions, the query language (DESIGN §7), ordering, the table, JSON,
//! malformed queries and broken files.

use crate::util::{Out, TestBoard, snapshot};

/// A board whose times are fixed (except t-new's, which is "now"), so every query has one
/// right answer.
fn board() -> TestBoard {
    let b = TestBoard::new();
    // `missing`: a field of the board's own that no document has (yet).
    b.declare_fields("tasks", &["estimate", "missing"]);
    let at = |t: &str| [format!("created_at={t}"), format!("updated_at={t}")];
    let mk = |kind: &str, title: &str, id: &str, extra: &[&str], time: Option<&str>| {
        let mut args: Vec<String> = ["new", kind, "--title", title, "--id", id]
            .iter()
            .map(|s| s.to_string())
            .collect();
        args.extend(extra.iter().map(|s| s.to_string()));
        if let Some(t) = time {
            for s in at(t) {
                args.push("--set".into());
                args.push(s);
            }
        }
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        b.run(&args).ok();
    };
    mk(
        "task",
        "Fix the crash",
        "t-crit",
        &["-p", "0", "--tag", "bug", "--set", "estimate=8"],
        Some("2026-01-03T10:00:00Z"),
    );
    // Claimed as if long ago: `new` starts a task where the workflow starts, so the claim
    // is written by hand (a claim now would make its times now).
    let crit = b.read("tasks/t-crit.md");
    b.write(
        "tasks/t-crit.md",
        crit.replacen("status: pending\n", "status: claimed\n", 1)
            .replacen("rev: 1\n", "rev: 1\nclaimed_by: coder-1\n", 1),
    );
    mk(
        "task",
        "Old parser work",
        "t-old",
        &[
            "-p",
            "1",
            "--tag",
            "parser",
            "--tag",
            "cli",
            "--set",
            "estimate=2",
        ],
        Some("2026-01-01T00:00:00Z"),
    );
    mk(
        "task",
        "Same age, later id",
        "t-zed",
        &["-p", "1"],
        Some("2026-01-01T00:00:00Z"),
    );
    mk(
        "task",
        "New work",
        "t-new",
        &[
            "-p",
            "1",
            "--tag",
            "parser",
            "--body",
            "Mentions the Frontmatter Splitter.",
        ],
        None,
    );
    mk(
        "task",
        "No priority",
        "t-nopri",
        &["--set", "priority=null"],
        Some("2026-02-01T00:00:00Z"),
    );
    mk(
        "observation",
        "Scan is slow",
        "obs-1",
        &["--set", "severity=high"],
        Some("2026-01-15T00:00:00Z"),
    );
    mk(
        "question",
        "Which format?",
        "q-1",
        &[],
        Some("2026-01-20T00:00:00Z"),
    );
    b
}

/// The ids of a table, in order.
fn ids(out: &Out) -> Vec<String> {
    out.code(0);
    let mut lines = out.stdout.lines();
    if let Some(header) = lines.next() {
        assert!(header.starts_with("ID "), "{header}");
    }
    lines
        .map(|l| l.split_whitespace().next().unwrap().to_string())
        .collect()
}

fn list(b: &TestBoard, args: &[&str]) -> Vec<String> {
    ids(&b.run(&[&["list"], args].concat()))
}

#[test]
fn the_table_sorts_by_priority_then_age_then_id() {
    // An observation's severity ranks like a priority (high = 1).
    let b = board();
    b.run(&["list"]).ok().stderr_is("").stdout_is(
        "ID       STATUS   PRI   OWNER    TITLE\n\
         t-crit   claimed  0     coder-1  Fix the crash\n\
         t-old    pending  1     -        Old parser work\n\
         t-zed    pending  1     -        Same age, later id\n\
         obs-1    open     high  -        Scan is slow\n\
         t-new    pending  1     -        New work\n\
         q-1      open     -     -        Which format?\n\
         t-nopri  pending  -     -        No priority\n",
    );
    // Columns are as wide as the rows shown need: without the observation, PRI narrows.
    b.run(&["list", "tasks"]).ok().stderr_is("").stdout_is(
        "ID       STATUS   PRI  OWNER    TITLE\n\
         t-crit   claimed  0    coder-1  Fix the crash\n\
         t-old    pending  1    -        Old parser work\n\
         t-zed    pending  1    -        Same age, later id\n\
         t-new    pending  1    -        New work\n\
         t-nopri  pending  -    -        No priority\n",
    );
    // `ls` is the same command.
    assert_eq!(b.run(&["ls"]).ok().stdout, b.run(&["list"]).ok().stdout);
}

#[test]
fn regions_by_name_alias_and_term() {
    let b = board();
    let tasks = ["t-crit", "t-old", "t-zed", "t-new", "t-nopri"];
    assert_eq!(list(&b, &["tasks"]), tasks);
    assert_eq!(list(&b, &["task"]), tasks);
    assert_eq!(list(&b, &["region:tasks"]), tasks);
    assert_eq!(list(&b, &["observations"]), ["obs-1"]);
    assert_eq!(list(&b, &["obs"]), ["obs-1"]);
    assert_eq!(list(&b, &["q"]), ["q-1"]);
    assert_eq!(list(&b, &["region:questions"]), ["q-1"]);
    // Several regions are alternatives, wherever they stand among the terms.
    assert_eq!(
        list(&b, &["region:observations", "region:questions"]),
        ["obs-1", "q-1"]
    );
    assert_eq!(list(&b, &["observations", "questions"]), ["obs-1", "q-1"]);
    assert_eq!(
        list(&b, &["priority<=1", "tasks"]),
        ["t-crit", "t-old", "t-zed", "t-new"]
    );
    assert_eq!(
        list(&b, &["tag:parser", "tasks", "observations"]),
        ["t-old", "t-new"]
    );
    assert_eq!(list(&b, &["questions", "region=questions"]), ["q-1"]);
    // A region word as text needs quotes.
    assert_eq!(list(&b, &["\"work\"", "tasks"]), ["t-old", "t-new"]);
}

#[test]
fn a_phrase_matches_words_in_order_and_a_quoted_value_keeps_its_spaces() {
    let b = board();
    assert_eq!(list(&b, &["\"parser work\""]), ["t-old"]);
    assert_eq!(list(&b, &["\"work parser\""]), Vec::<String>::new());
    assert_eq!(list(&b, &["\"the frontmatter splitter\""]), ["t-new"]);
    assert_eq!(list(&b, &["title=\"Same age, later id\""]), ["t-zed"]);
    assert_eq!(list(&b, &["title=Same"]), Vec::<String>::new());
    // A bare word that is a document's id matches that document.
    assert_eq!(list(&b, &["t-zed"]), ["t-zed"]);
}

#[test]
fn list_archive_lists_the_archive_only() {
    let b = board();
    b.run(&["cancel", "t-zed", "--as", "x"]).ok();
    b.run(&["archive", "t-zed"]).ok();
    assert_eq!(list(&b, &["archive"]), ["t-zed"]);
    assert_eq!(list(&b, &["tasks", "archive"]), ["t-zed"]);
    assert_eq!(list(&b, &["observations", "archive"]), Vec::<String>::new());
    assert_eq!(list(&b, &["region:archive", "Same"]), ["t-zed"]);
}

#[test]
fn every_kind_of_term() {
    let b = board();
    let none: [&str; 0] = [];
    for (query, expected) in [
        (
            "status=pending",
            &["t-old", "t-zed", "t-new", "t-nopri"][..],
        ),
        ("status!=pending", &["t-crit", "obs-1", "q-1"]),
        ("status=claimed,open", &["t-crit", "obs-1", "q-1"]),
        (
            "status!=claimed,open",
            &["t-old", "t-zed", "t-new", "t-nopri"],
        ),
        ("priority<1", &["t-crit"]),
        ("priority<=1", &["t-crit", "t-old", "t-zed", "t-new"]),
        ("priority>0", &["t-old", "t-zed", "t-new"]),
        ("priority>=1 priority<=1", &["t-old", "t-zed", "t-new"]),
        ("priority=1", &["t-old", "t-zed", "t-new"]),
        ("estimate>2", &["t-crit"]),
        ("estimate>=2", &["t-crit", "t-old"]),
        ("estimate<2.5", &["t-old"]),
        ("created_at<2026-01-02", &["t-old", "t-zed"]),
        (
            "created_at>=2026-01-03T10:00:00Z",
            &["t-crit", "obs-1", "t-new", "q-1", "t-nopri"],
        ),
        (
            "created_at>2026-01-03T10:00:00Z region:tasks",
            &["t-new", "t-nopri"],
        ),
        (
            "created_at<=2026-01-03T11:00:00+01:00",
            &["t-crit", "t-old", "t-zed"],
        ),
        ("updated_at>-2h", &["t-new"]),
        (
            "updated_at<-2h",
            &["t-crit", "t-old", "t-zed", "obs-1", "q-1", "t-nopri"],
        ),
        (
            "updated_at<+1d updated_at>2026-01-31",
            &["t-new", "t-nopri"],
        ),
        ("has:claimed_by", &["t-crit"]),
        ("has:estimate", &["t-crit", "t-old"]),
        ("has:tags", &["t-crit", "t-old", "t-new"]),
        (
            "has:priority region:tasks",
            &["t-crit", "t-old", "t-zed", "t-new"],
        ),
        (
            "no:claimed_by region:tasks",
            &["t-old", "t-zed", "t-new", "t-nopri"],
        ),
        ("no:priority", &["obs-1", "q-1", "t-nopri"]),
        ("tag:parser", &["t-old", "t-new"]),
        ("tag:pars", &none),
        ("tags=cli", &["t-old"]),
        ("tags=cli,bug", &["t-crit", "t-old"]),
        ("tags!=parser region:tasks", &["t-crit", "t-zed", "t-nopri"]),
        ("severity=high", &["obs-1"]),
        ("frontmatter", &["t-new"]),
        ("FRONTMATTER splitter", &["t-new"]),
        ("crash", &["t-crit"]),
        ("CrAsH", &["t-crit"]),
        ("parser work", &["t-old"]),
        ("missing=x", &none),
        (
            "missing!=x",
            &[
                "t-crit", "t-old", "t-zed", "obs-1", "t-new", "q-1", "t-nopri",
            ],
        ),
        ("status<3", &none),
        ("title>5", &none),
        ("status=pending priority=1", &["t-old", "t-zed", "t-new"]),
    ] {
        assert_eq!(list(&b, &[query]), expected, "query {query:?}");
        // Terms may also come as separate arguments.
        let split: Vec<&str> = query.split(' ').collect();
        assert_eq!(list(&b, &split), expected, "query {split:?}");
    }
}

#[test]
fn an_empty_result_prints_no_table_and_says_so_on_stderr() {
    let b = board();
    b.run(&["list", "status=done"])
        .ok()
        .stdout_is("")
        .stderr_is("no documents match\n");
    let empty = TestBoard::new();
    empty
        .run(&["list"])
        .ok()
        .stdout_is("")
        .stderr_is("no documents match\n");
    // JSON stays a value, and says nothing else.
    assert_eq!(
        empty.run(&["list", "--json"]).ok().json(),
        serde_json::json!({"documents": [], "skipped": []})
    );
    empty.run(&["list", "--json"]).ok().stderr_is("");
}

#[test]
fn list_json_shape() {
    let b = board();
    let out = b.run(&["list", "tag:parser", "--json"]);
    out.ok().stderr_is("");
    assert_eq!(out.stdout.lines().count(), 1);
    let v = out.json();
    let top: Vec<&str> = v.as_object().unwrap().keys().map(String::as_str).collect();
    assert_eq!(top, ["documents", "skipped"]);
    let docs = v["documents"].as_array().unwrap();
    assert_eq!(docs.len(), 2);
    assert_eq!(
        docs[0],
        serde_json::json!({
            "id": "t-old",
            "region": "tasks",
            "path": "tasks/t-old.md",
            "rev": 1,
            "fields": {
                "id": "t-old",
                "title": "Old parser work",
                "status": "pending",
                "priority": 1,
                "tags": ["parser", "cli"],
                "depends_on": [],
                "created_at": "2026-01-01T00:00:00Z",
                "created_by": "tester",
                "updated_at": "2026-01-01T00:00:00Z",
                "rev": 1,
                "estimate": 2,
            },
        })
    );
    assert_eq!(docs[1]["id"], "t-new");
    assert!(docs[1].get("body").is_none());
}

#[test]
fn malformed_queries_name_the_term() {
    let b = board();
    let before = snapshot(&b);
    let hint = "hint: terms look like status=pending, priority<=1, updated_at<-2h, has:claimed_by, tag:parser, tasks, \"a phrase\", or a bare word\n";
    for (term, why) in [
        ("status=", "expected a value after the operator"),
        ("=x", "expected a field name before the operator"),
        ("9x=1", "expected a field name before the operator"),
        ("a=b,,c", "empty value in a comma-separated list"),
        ("priority<1,2", "a comparison takes one value"),
        (
            "priority<abc",
            "a comparison takes a number, a time (2026-01-02, 2026-01-02T10:00:00Z) or an age (-2h)",
        ),
        (
            "status!x",
            "expected one of = != < <= > >= after the field name",
        ),
        (
            "what:ever",
            "unknown filter; known ones are has:, no:, tag:, region:",
        ),
        ("has:", "expected a field name after the colon"),
        ("no:9", "expected a field name after the colon"),
        ("tag:", "expected a tag after the colon"),
        (
            "region:nowhere",
            "regions are tasks, observations, questions, archive",
        ),
        (
            "status==pending",
            "one operator per term: = != < <= > >= (status=pending, not status==pending)",
        ),
    ] {
        // The bad term is named even when good terms surround it.
        b.run(&["list", "tasks", "status=pending", term, "crash"])
            .code(2)
            .stdout_is("")
            .stderr_is(&format!(
                "error: malformed query term '{term}': {why}\n{hint}"
            ));
    }
    assert_eq!(snapshot(&b), before);
}

#[test]
fn broken_files_are_skipped_with_a_warning() {
    let b = board();
    b.write(
        "tasks/t-broken.md",
        "---\nid: t-broken\ntitle: [unclosed\n---\n",
    );
    b.write("tasks/t-wrong.md", "---\nid: t-other\ntitle: x\n---\n");
    b.write("tasks/Bad Name.md", "---\nid: x\n---\n");
    b.write(
        "observations/o-bin.md",
        b"---\nid: o-bin\ntitle: \xff\n---\n",
    );
    // Not documents at all: ignored without a word.
    b.write("tasks/.t-new.md.123.tmp", "half written");
    b.write("tasks/notes.txt", "not markdown");
    b.write("tasks/.swp.md", "editor swap");
    let before = snapshot(&b);
    let out = b.run(&["list", "status=pending"]);
    out.ok().stderr_is(
        "warning: skipped tasks/Bad Name.md: file name is not a valid id ([a-z0-9][a-z0-9._-]{0,63}.md)\n\
         warning: skipped tasks/t-broken.md: line 3: unclosed bracket '[' (a value starting with [ { * & ! | > ' \" % @ or ` is read as YAML syntax: quote it, as in title: \"[unclosed\")\n\
         warning: skipped tasks/t-wrong.md: its id t-other does not match its file name (expected 't-wrong')\n\
         warning: skipped observations/o-bin.md: is not valid UTF-8 (invalid byte at offset 21)\n",
    );
    assert_eq!(ids(&out), ["t-old", "t-zed", "t-new", "t-nopri"]);
    // Only the regions listed are read.
    b.run(&["list", "questions"]).ok().stderr_is("");

    let out = b.run(&["list", "tasks", "--json"]);
    let v = out.ok().json();
    assert_eq!(v["documents"].as_array().unwrap().len(), 5);
    assert_eq!(
        v["skipped"],
        serde_json::json!([
            {"path": "tasks/Bad Name.md", "problem": "file name is not a valid id ([a-z0-9][a-z0-9._-]{0,63}.md)"},
            {"path": "tasks/t-broken.md", "problem": "line 3: unclosed bracket '[' (a value starting with [ { * & ! | > ' \" % @ or ` is read as YAML syntax: quote it, as in title: \"[unclosed\")"},
            {"path": "tasks/t-wrong.md", "problem": "its id t-other does not match its file name (expected 't-wrong')"},
        ])
    );
    assert!(out.stderr.contains("warning: skipped tasks/t-broken.md"));
    assert_eq!(snapshot(&b), before, "list wrote something");
}

#[test]
fn finished_documents_come_after_the_open_ones() {
    let b = board();
    // t-crit (priority 0) is cancelled and t-old (priority 1, oldest) done: both go last.
    b.run(&["edit", "t-crit", "--force", "--set", "status=cancelled"])
        .ok();
    for step in ["claim", "start", "done"] {
        b.run(&[step, "t-old", "--as", "x"]).ok();
    }
    assert_eq!(
        list(&b, &["tasks"]),
        ["t-zed", "t-new", "t-nopri", "t-crit", "t-old"]
    );
    b.run(&["answer", "q-1", "yaml"]).ok();
    assert_eq!(
        list(&b, &[]),
        [
            "t-zed", "obs-1", "t-new", "t-nopri", "t-crit", "t-old", "q-1"
        ]
    );
}

/// Six tasks made in a loop, most within one second: `list`, `ready` and `claim --next`
/// give them in the order they were made. New documents' times carry milliseconds.
#[test]
fn tasks_made_in_a_loop_keep_their_creation_order() {
    let b = TestBoard::new();
    let made: Vec<String> = (1..=6)
        .map(|i| b.task(&format!("Step {i}"), &[]).trim().to_string())
        .collect();
    assert_eq!(list(&b, &["tasks"]), made);
    assert_eq!(ids(&b.run(&["ready"])), made);
    let doc = b.read(&format!("tasks/{}.md", made[0]));
    let stamp = |key: &str, text: &str| -> String {
        let line = text
            .lines()
            .find(|l| l.starts_with(&format!("{key}: ")))
            .unwrap_or_else(|| panic!("no {key} in {text}"));
        line[key.len() + 2..].to_string()
    };
    for key in ["created_at", "updated_at"] {
        let t = stamp(key, &doc);
        // 2026-11-27T10:00:05.120Z: milliseconds, UTC.
        assert_eq!(t.len(), 24, "{key}: {t}");
        assert_eq!((&t[19..20], &t[23..]), (".", "Z"), "{key}: {t}");
    }
    let mut claimed = Vec::new();
    for _ in 0..6 {
        let out = b.run(&["claim", "--next", "--quiet", "--as", "coder-1"]);
        claimed.push(out.ok().stdout.trim().to_string());
    }
    assert_eq!(claimed, made);
    let doc = b.read(&format!("tasks/{}.md", made[5]));
    assert_eq!(stamp("claimed_at", &doc).len(), 24, "{doc}");
    let log_order: Vec<String> = b
        .log()
        .iter()
        .filter(|e| e["op"] == "claim")
        .map(|e| e["doc"].as_str().unwrap().to_string())
        .collect();
    let expected: Vec<String> = made.iter().map(|id| format!("tasks/{id}.md")).collect();
    assert_eq!(log_order, expected);
}

/// A board's older documents hold seconds, its newer ones milliseconds: they order as the
/// times they name (as text, `…:05.500Z` would sort before `…:05Z`), ties by id.
#[test]
fn second_and_millisecond_times_order_as_times() {
    let b = TestBoard::new();
    let task = |id: &str, created: &str| {
        b.write(
            &format!("tasks/{id}.md"),
            format!(
                "---\nid: {id}\ntitle: Made at {created}\nstatus: pending\npriority: 1\ncreated_at: {created}\nupdated_at: {created}\nrev: 1\n---\n"
            ),
        );
    };
    task("a-late", "2026-01-01T00:00:05.500Z");
    task("b-sec", "2026-01-01T00:00:05Z");
    task("c-early", "2026-01-01T00:00:04.900Z");
    task("d-tie", "2026-01-01T00:00:05.000Z");
    task("e-zone", "2026-01-01T01:00:04.950+01:00");
    let order = ["c-early", "e-zone", "b-sec", "d-tie", "a-late"];
    assert_eq!(list(&b, &["tasks"]), order);
    assert_eq!(ids(&b.run(&["ready"])), order);
    b.run(&["check"]).ok();
    b.run(&["claim", "--next", "--quiet"])
        .ok()
        .stdout_is("c-early\n");
}
