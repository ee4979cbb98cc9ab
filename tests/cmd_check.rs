//! `tavern check`: exit 0 with one summary line on a clean board, exit 6 listing every
//! problem (each with its file) on a broken one, and never a change to the board.

use crate::util::{TestBoard, problems_report, snapshot};

#[test]
fn a_clean_board_passes() {
    let b = TestBoard::new();
    b.task("Base", &["--id", "t-base"]);
    b.task("Top", &["--id", "t-top", "--depends-on", "t-base"]);
    b.run(&["claim", "t-base", "--as", "a"]).ok();
    b.run(&["new", "observation", "--title", "o", "--id", "o-1"])
        .ok();
    b.run(&["new", "question", "--title", "q", "--id", "q-1"])
        .ok();
    // Unknown fields and hand-written documents are fine.
    b.write(
        "tasks/t-hand.md",
        "---\r\nid: t-hand\r\nstatus: pending\r\ncustom: {a: 1}\r\n---\r\nbody",
    );
    // Files that are not documents are not checked (temp files are: see crash_points).
    b.write("tasks/README.txt", "notes");
    let before = snapshot(&b);
    b.run(&["check"])
        .ok()
        .stdout_is("ok: 5 documents and 5 log entries checked, no problems\n")
        .stderr_is("");
    assert_eq!(
        b.run(&["check", "--json"]).ok().json(),
        serde_json::json!({"ok": true, "documents": 5, "log_entries": 5, "problems": []})
    );
    assert_eq!(snapshot(&b), before, "check wrote something");
}

/// Every kind of problem `check` knows, each in its own file, next to good documents.
#[cfg(unix)]
fn broken_board() -> (TestBoard, tempfile::TempDir) {
    let b = TestBoard::new();
    b.task("Good", &["--id", "t-good"]);
    b.write(
        "tasks/t-yaml.md",
        "---\nid: t-yaml\nstatus: pending\ntitle: [unclosed\n---\n",
    );
    b.write(
        "tasks/t-mis.md",
        "---\nid: t-other\ntitle: x\nstatus: pending\n---\n",
    );
    b.write(
        "tasks/t-limbo.md",
        "---\nid: t-limbo\ntitle: x\nstatus: limbo\n---\n",
    );
    b.write(
        "tasks/t-nostatus.md",
        "---\nid: t-nostatus\ntitle: x\n---\n",
    );
    b.write(
        "tasks/t-dangle.md",
        "---\nid: t-dangle\nstatus: pending\ndepends_on: [t-good, t-ghost]\n---\n",
    );
    b.write(
        "tasks/t-cyc-b.md",
        "---\nid: t-cyc-b\nstatus: pending\ndepends_on: [t-cyc-a]\n---\n",
    );
    b.write(
        "tasks/t-cyc-a.md",
        "---\nid: t-cyc-a\nstatus: pending\ndepends_on: [t-good, t-cyc-b]\n---\n",
    );
    b.write(
        "tasks/t-self.md",
        "---\nid: t-self\nstatus: pending\ndepends_on: t-self\n---\n",
    );
    let mut big = String::from("---\nid: t-big\nstatus: pending\n---\n");
    big.push_str(&"x".repeat(1024 * 1024));
    b.write("tasks/t-big.md", &big);
    b.write("tasks/t-nofm.md", "no frontmatter here\n");
    b.write("tasks/Bad_Name.md", "---\nid: bad\n---\n");
    b.write(
        "observations/o-bin.md",
        b"---\nid: o-bin\ntitle: caf\xe9\n---\n".as_slice(),
    );
    b.write("observations/dup.md", "---\nid: dup\n---\n");
    b.write("questions/dup.md", "---\nid: dup\n---\n");
    let outside = tempfile::tempdir().unwrap();
    let secret = outside.path().join("secret.md");
    std::fs::write(&secret, "---\nid: q-link\n---\nsecret\n").unwrap();
    std::os::unix::fs::symlink(&secret, b.board().join("questions/q-link.md")).unwrap();
    let log = b.read("log.yaml");
    b.write("log.yaml", format!("- seq: [torn\n  at: x\n{log}"));
    (b, outside)
}

const STATES: &str = "pending, claimed, working, review, blocked, done, failed, cancelled";

#[cfg(unix)]
#[test]
fn a_broken_board_lists_every_problem_and_exits_6() {
    let (b, _outside) = broken_board();
    let before = snapshot(&b);
    let big = 1024 * 1024 + "---\nid: t-big\nstatus: pending\n---\n".len();
    let problems = [
        ("log.yaml", "line 1: entry cannot be parsed".to_string()),
        (
            "observations/o-bin.md",
            "is not valid UTF-8 (invalid byte at offset 24)".into(),
        ),
        (
            "questions/dup.md",
            "id 'dup' is also used by observations/dup.md".into(),
        ),
        (
            "questions/q-link.md",
            "is a symbolic link; documents must be regular files inside the board".into(),
        ),
        (
            "tasks/Bad_Name.md",
            "file name is not a valid id ([a-z0-9][a-z0-9._-]{0,63}.md)".into(),
        ),
        (
            "tasks/t-big.md",
            format!(
                "is {big} bytes, over the limit of 1048576 (limits.max_doc_bytes in board.yaml); skipped"
            ),
        ),
        (
            "tasks/t-cyc-a.md",
            "dependency cycle: t-cyc-a -> t-cyc-b -> t-cyc-a".into(),
        ),
        (
            "tasks/t-dangle.md",
            "depends_on names 't-ghost', which is not a task on this board".into(),
        ),
        (
            "tasks/t-limbo.md",
            format!("status 'limbo' is not a state of the workflow ({STATES})"),
        ),
        (
            "tasks/t-mis.md",
            "its id t-other does not match its file name (expected 't-mis')".into(),
        ),
        (
            "tasks/t-nofm.md",
            "line 1: no frontmatter: the first line must be exactly `---`".into(),
        ),
        ("tasks/t-nostatus.md", "has no status".into()),
        (
            "tasks/t-self.md",
            "dependency cycle: t-self -> t-self".into(),
        ),
        (
            "tasks/t-yaml.md",
            "line 4: unclosed bracket '[' (a value starting with [ { * & ! | > ' \" % @ or ` is read as YAML syntax: quote it, as in title: \"[unclosed\")".into(),
        ),
    ];
    let expected = problems_report(&problems, &b.board());
    b.run(&["check"]).code(6).stdout_is("").stderr_is(&expected);

    let v = b.run(&["check", "--json"]).code(6).json();
    assert_eq!(v["ok"], false);
    // Parsed: t-good, t-limbo, t-nostatus, t-dangle, t-cyc-a, t-cyc-b, t-self, both dups.
    assert_eq!(v["documents"], 9);
    assert_eq!(v["log_entries"], 1);
    let listed: Vec<(String, String)> = v["problems"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            (
                p["path"].as_str().unwrap().to_string(),
                p["problem"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    let want: Vec<(String, String)> = problems
        .iter()
        .map(|(a, b)| (a.to_string(), b.clone()))
        .collect();
    assert_eq!(listed, want);
    assert_eq!(snapshot(&b), before, "check changed the board");
}

#[test]
fn fixing_the_problems_makes_the_board_clean_again() {
    let b = TestBoard::new();
    b.task("A", &["--id", "t-a"]);
    b.write(
        "tasks/t-b.md",
        "---\nid: t-b\nstatus: pending\ndepends_on: [t-a, t-gone]\n---\n",
    );
    b.run(&["check"]).code(6).stderr_is(&format!(
        "tasks/t-b.md: depends_on names 't-gone', which is not a task on this board\n1 problem in {}\n",
        b.board().display()
    ));
    b.run(&["edit", "t-b", "--remove", "depends_on=t-gone"])
        .ok();
    b.run(&["check"])
        .ok()
        .stdout_is("ok: 2 documents and 2 log entries checked, no problems\n");
}

/// Documents edited by hand (or arriving by sync) are checked against the schema as every
/// write is: a wrong value, a wrong type, a state nobody knows, a reference to nothing,
/// archived documents too; each named with its file, its field and what is allowed.
#[test]
fn hand_edited_values_the_schema_refuses_fail_check() {
    let b = TestBoard::new();
    b.task("Good", &["--id", "t-good"]);
    b.write(
        "tasks/t-pri.md",
        "---\nid: t-pri\ntitle: Hand edited\nstatus: pending\npriority: high\n---\n",
    );
    b.write(
        "tasks/t-types.md",
        "---\nid: t-types\ntitle: Types\nstatus: pending\ntags: parser\nneeds: [rust, 3]\nparent: t-nobody\ncreated_at: yesterday\n---\n",
    );
    b.write(
        "observations/o-1.md",
        "---\nid: o-1\ntitle: Seen\nstatus: pending\nseverity: urgent\nconfidence: 2\n---\n",
    );
    b.write(
        "questions/q-1.md",
        "---\nid: q-1\ntitle: \"\"\nstatus: open\nkind: survey\n---\n",
    );
    b.write(
        "archive/tasks/t-old.md",
        "---\nid: t-old\ntitle: Old\nstatus: done\npriority: 9\n---\n",
    );
    let before = snapshot(&b);
    let problems = [
        (
            "archive/tasks/t-old.md",
            "priority must be a whole number from 0 (critical) to 4 (backlog), not 9",
        ),
        (
            "observations/o-1.md",
            "confidence must be a number from 0 to 1, not 2",
        ),
        (
            "observations/o-1.md",
            "severity must be one of info, low, medium, high, critical, not urgent",
        ),
        (
            "observations/o-1.md",
            "status must be one of open, acknowledged, resolved, rejected, expired, not pending",
        ),
        (
            "questions/q-1.md",
            "kind must be one of question, permission, not survey",
        ),
        (
            "questions/q-1.md",
            "title must be text that is not empty, not \"\"",
        ),
        (
            "tasks/t-pri.md",
            "priority must be a whole number from 0 (critical) to 4 (backlog), not high",
        ),
        (
            "tasks/t-types.md",
            "created_at must be a time like 2026-11-22T10:04:05Z or a date like 2026-11-22, not yesterday",
        ),
        (
            "tasks/t-types.md",
            "needs must be a list of text, like [a, b], not [rust, 3]",
        ),
        (
            "tasks/t-types.md",
            "parent names 't-nobody', which is not a task on this board",
        ),
        (
            "tasks/t-types.md",
            "tags must be a list of text, like [a, b], not parser",
        ),
    ];
    b.run(&["check"])
        .code(6)
        .stdout_is("")
        .stderr_is(&problems_report(&problems, &b.board()));
    let v = b.run(&["check", "--json"]).code(6).json();
    assert_eq!(v["problems"].as_array().unwrap().len(), problems.len());
    assert_eq!(snapshot(&b), before, "check changed the board");
    // A problem fixed through tavern is gone; the others stay.
    b.run(&["edit", "t-pri", "--set", "priority=1"]).ok();
    let out = b.run(&["check"]);
    out.code(6).stderr_has("10 problems in");
    assert!(!out.stderr.contains("tasks/t-pri.md"), "{}", out.stderr);
}

/// A YAML error is reported on the line of the value that causes it, with a hint to quote
/// a value that starts with a character YAML reads as syntax, by `check` and by readers.
#[test]
fn a_yaml_error_names_the_line_of_the_unquoted_value_and_says_to_quote_it() {
    let b = TestBoard::new();
    let hint = |key: &str, value: &str| {
        format!(
            "(a value starting with [ {{ * & ! | > ' \" % @ or ` is read as YAML syntax: quote it, as in {key}: \"{value}\")"
        )
    };
    // The title is on line 3; the flow list it opens swallows the lines after it.
    b.write(
        "tasks/t-flow.md",
        "---\nid: t-flow\ntitle: [unclosed\nstatus: pending\npriority: 1\n---\nbody\n",
    );
    b.write(
        "tasks/t-at.md",
        "---\nid: t-at\nstatus: pending\ntitle: @mention the team\n---\n",
    );
    // A valid flow list above an error is not blamed for it.
    b.write(
        "tasks/t-dup.md",
        "---\nid: t-dup\ntags: [a, b]\nstatus: pending\nstatus: done\n---\n",
    );
    let out = b.run(&["check"]);
    out.code(6).stdout_is("");
    let lines: Vec<&str> = out.stderr.lines().collect();
    assert_eq!(
        lines[2],
        format!(
            "tasks/t-flow.md: line 3: illegal placement of ':' indicator {}",
            hint("title", "[unclosed")
        )
    );
    assert!(
        lines[0].starts_with("tasks/t-at.md: line 4: ")
            && lines[0].ends_with(&hint("title", "@mention the team")),
        "{}",
        lines[0]
    );
    assert!(
        lines[1].starts_with("tasks/t-dup.md: line 5: ") && !lines[1].contains("quote it"),
        "{}",
        lines[1]
    );
    // A reader skips it with the same words.
    b.run(&["list"]).ok().stderr_has(&format!(
        "warning: skipped tasks/t-flow.md: line 3: illegal placement of ':' indicator {}",
        hint("title", "[unclosed")
    ));
}

/// What `check` weighs across the whole board and the whole log: an id used in all three
/// regions (each names the one before it), dependencies on archived tasks (read or not)
/// and on an archived finding, an archived file that cannot be read, and documents lost
/// or not as their entries say in seq order, whatever the file's order (a merge of two
/// clones' logs leaves one side's entries after the other's).
#[test]
fn check_weighs_the_whole_board_and_the_log_in_seq_order() {
    let b = TestBoard::new();
    b.write(
        "tasks/same.md",
        "---\nid: same\ntitle: x\nstatus: pending\n---\n",
    );
    b.write("observations/same.md", "---\nid: same\ntitle: x\n---\n");
    b.write("questions/same.md", "---\nid: same\ntitle: x\n---\n");
    b.write(
        "archive/tasks/t-old.md",
        "---\nid: t-old\ntitle: Old\nstatus: done\n---\n",
    );
    b.write(
        "archive/tasks/t-bin.md",
        b"---\nid: t-bin\ntitle: caf\xe9\n---\n".as_slice(),
    );
    b.write(
        "archive/observations/o-old.md",
        "---\nid: o-old\ntitle: x\n---\n",
    );
    b.write(
        "tasks/t-needs.md",
        "---\nid: t-needs\ntitle: x\nstatus: pending\ndepends_on: [same, t-old, t-bin, o-old]\n---\n",
    );
    // A dot file is no document, but it is a file: a create of it is not lost.
    b.write("tasks/.t-dot.md", "not read");
    let entry = |seq: u64, actor: &str, op: &str, doc: &str| {
        format!(
            "- {{seq: {seq}, at: \"2026-11-01T10:00:00.000Z\", actor: \"{actor}\", op: \"{op}\", doc: \"{doc}\"}}\n"
        )
    };
    let log = [
        // Created after it was deleted, by seq: lost.
        entry(101, "bob", "create", "tasks/t-gone.md"),
        entry(100, "bob", "delete", "tasks/t-gone.md"),
        // Deleted after it was created: not lost.
        entry(103, "carol", "delete", "tasks/t-away.md"),
        entry(102, "carol", "create", "tasks/t-away.md"),
        // Created twice: the first by seq is named.
        entry(105, "dave", "create", "tasks/t-twice.md"),
        entry(104, "erin", "create", "tasks/t-twice.md"),
        // There, though not as documents read: not lost.
        entry(106, "fay", "create", "tasks/.t-dot.md"),
        entry(107, "fay", "create", "tasks/t-bin.md"),
        entry(108, "fay", "create", "observations/same.md"),
    ]
    .concat();
    b.write("log.yaml", &log);
    let before = snapshot(&b);
    let problems = [
        (
            "archive/tasks/t-bin.md",
            "is not valid UTF-8 (invalid byte at offset 24)",
        ),
        (
            "observations/same.md",
            "id 'same' is also used by tasks/same.md",
        ),
        (
            "questions/same.md",
            "id 'same' is also used by observations/same.md",
        ),
        (
            "tasks/t-gone.md",
            "lost: created by bob (log seq 101) but neither on the board nor in the archive, and no log entry removed it; the board branch keeps its last version (`git log -1 tavern -- tasks/t-gone.md`), or the code branch's history does",
        ),
        (
            "tasks/t-needs.md",
            "depends_on names 'o-old', which is not a task on this board",
        ),
        (
            "tasks/t-twice.md",
            "lost: created by erin (log seq 104) but neither on the board nor in the archive, and no log entry removed it; the board branch keeps its last version (`git log -1 tavern -- tasks/t-twice.md`), or the code branch's history does",
        ),
    ];
    b.run(&["check"])
        .code(6)
        .stdout_is("")
        .stderr_is(&problems_report(&problems, &b.board()));
    let v = b.run(&["check", "--json"]).code(6).json();
    assert_eq!(v["documents"], 4);
    assert_eq!(v["log_entries"], 9);
    assert_eq!(v["problems"].as_array().unwrap().len(), problems.len());
    assert_eq!(snapshot(&b), before, "check changed the board");
}

/// What a reference names (`parent`, an observation's `about`, a question's `blocks`) is
/// looked for wherever a document may be: on the board, archived, a file that cannot be
/// read as a document, a directory by its name; only a name with nothing behind it is a
/// problem, the first such of a list, before a later value that is wrong in itself.
#[test]
fn references_are_judged_against_every_place_a_document_may_be() {
    let b = TestBoard::new();
    b.task("Base", &["--id", "t-base"]);
    b.write(
        "archive/tasks/t-old.md",
        "---\nid: t-old\ntitle: Old\nstatus: done\n---\n",
    );
    b.write("tasks/t-torn.md", "---\nid: t-torn\ntitle: [torn\n---\n");
    std::fs::create_dir_all(b.board().join("tasks/t-dir.md")).unwrap();
    b.write(
        "observations/o-1.md",
        "---\nid: o-1\ntitle: Seen\nabout: [t-base, t-old, q-1]\n---\n",
    );
    b.write(
        "observations/o-2.md",
        "---\nid: o-2\ntitle: Seen\nabout: [o-1, o-gone, \"Not An Id\"]\n---\n",
    );
    b.write(
        "questions/q-1.md",
        "---\nid: q-1\ntitle: Which?\nblocks: [t-base, t-old, o-1]\n---\n",
    );
    for (id, parent) in [
        ("t-a", "t-base"),
        ("t-b", "t-old"),
        ("t-c", "t-torn"),
        ("t-d", "t-dir"),
        ("t-e", "o-1"),
        ("t-f", "t-nobody"),
    ] {
        b.write(
            &format!("tasks/{id}.md"),
            format!("---\nid: {id}\ntitle: Part\nstatus: pending\nparent: {parent}\n---\n"),
        );
    }
    let before = snapshot(&b);
    let problems = [
        (
            "observations/o-2.md",
            "about names 'o-gone', which is not a document on this board",
        ),
        (
            "questions/q-1.md",
            "blocks names 'o-1', which is not a task on this board",
        ),
        ("tasks/t-dir.md", "is not a regular file"),
        (
            "tasks/t-e.md",
            "parent names 'o-1', which is not a task on this board",
        ),
        (
            "tasks/t-f.md",
            "parent names 't-nobody', which is not a task on this board",
        ),
        (
            "tasks/t-torn.md",
            "line 3: unclosed bracket '[' (a value starting with [ { * & ! | > ' \" % @ or ` is read as YAML syntax: quote it, as in title: \"[torn\")",
        ),
    ];
    b.run(&["check"])
        .code(6)
        .stdout_is("")
        .stderr_is(&problems_report(&problems, &b.board()));
    assert_eq!(snapshot(&b), before, "check changed the board");
}

/// A reference to a document that `check` listed is answered from the listing: the target
/// is not looked up on the disk again, however many documents name it (traced with strace,
/// which the test needs).
#[cfg(target_os = "linux")]
#[test]
fn a_reference_to_a_listed_document_costs_no_look_at_the_disk() {
    let b = TestBoard::new();
    b.task("Base", &["--id", "t-base"]);
    for i in 0..5 {
        b.write(
            &format!("tasks/t-part{i}.md"),
            format!("---\nid: t-part{i}\ntitle: Part\nstatus: pending\nparent: t-base\n---\n"),
        );
    }
    b.write(
        "observations/o-1.md",
        "---\nid: o-1\ntitle: Seen\nabout: [t-base, t-part1]\n---\n",
    );
    let (_, out) = crate::util::watcher::task_files_statted(&b, &["check"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    // A lookup names the file by its path in its region or the archive; the listing's
    // own stat of each file (by its name in the directory) is not one.
    let lookups: Vec<&str> = out
        .stderr
        .lines()
        .filter(|l| l.contains("/t-base.md\"") || l.contains("/t-part1.md\""))
        .collect();
    assert!(lookups.is_empty(), "{lookups:#?}");
    assert!(
        out.stderr.contains("t-base.md\""),
        "the trace shows no stat of the board's files at all:\n{}",
        out.stderr
    );
}

/// A setting this tavern does not know (a newer tavern's, or misspelled) is ignored, so
/// every command still works on a board a newer tavern configured; `check` names each.
#[test]
fn settings_this_tavern_does_not_know_are_ignored_and_named_by_check() {
    let b = TestBoard::new();
    b.task("One", &["--id", "t-1"]);
    let yaml = b.read("board.yaml");
    let yaml = yaml.replace("watch:\n", "watch:\n  keepr: always\n") + "colour: red\n";
    b.write("board.yaml", &yaml);
    b.run(&["show", "t-1"]).ok().stderr_is("");
    b.run(&["claim", "t-1", "--as", "a"]).ok();
    let version = env!("CARGO_PKG_VERSION");
    let said = |s: &str| {
        format!(
            "unknown setting '{s}', ignored: misspelled, or for a newer tavern than this one ({version})"
        )
    };
    let v = b.run(&["check", "--json"]).code(6).json();
    assert_eq!(
        v["problems"],
        serde_json::json!([
            {"path": "board.yaml", "problem": said("colour")},
            {"path": "board.yaml", "problem": said("watch.keepr")},
        ])
    );
    // A required setting misspelled is still refused by every command.
    b.write("board.yaml", yaml.replace("lease:", "leese:"));
    b.run(&["list"]).code(6).stderr_has("lease");
}
