//! Hostile and broken files on the board: documents that are malformed, bombs, too big,
//! not UTF-8, misnamed, without frontmatter, symlinks in and out of the board, directories
//! and FIFOs named like documents, a broken board.yaml or template, invalid states and
//! dependencies. Every reader skips them with a warning naming the file, `check` lists
//! every problem at once, commands aimed at one are refused with exit 6, nothing hangs or
//! panics, and nothing but the documents a command was meant to change changes.
//! (Bad values on the command line are bad_input.rs's; a damaged log is damaged_log.rs's.)

use crate::util::{Out, TestBoard, fixtures, run_bounded, snapshot};

#[track_caller]
fn no_panic(out: &Out) {
    assert!(
        !out.stderr.contains("panicked") && out.code >= 0,
        "crashed (code {}):\n{}",
        out.code,
        out.stderr
    );
}

/// (file, id, the problem readers report) for every hostile file of the board.
fn hostile_files() -> Vec<(&'static str, &'static str, String)> {
    let symlink =
        "is a symbolic link; documents must be regular files inside the board (not followed)";
    vec![
        (
            "tasks/t-big.md",
            "t-big",
            format!(
                "is {} bytes, over the limit of 1048576 (limits.max_doc_bytes in board.yaml); skipped",
                fixtures::BIG_BYTES
            ),
        ),
        (
            "tasks/t-bin.md",
            "t-bin",
            "is not valid UTF-8 (invalid byte at offset 21)".into(),
        ),
        (
            "tasks/t-bomb.md",
            "t-bomb",
            "line 7: budget breached".into(),
        ),
        (
            "tasks/t-deep.md",
            "t-deep",
            "line 3: recursion limit exceeded".into(),
        ),
        ("tasks/t-dir.md", "t-dir", "is not a regular file".into()),
        ("tasks/t-escape.md", "t-escape", symlink.into()),
        ("tasks/t-inside.md", "t-inside", symlink.into()),
        (
            "tasks/t-mis.md",
            "t-mis",
            "its id ../../etc/passwd does not match its file name (expected 't-mis')".into(),
        ),
        (
            "tasks/t-plain.md",
            "t-plain",
            "line 1: no frontmatter".into(),
        ),
        (
            "tasks/t-yaml.md",
            "t-yaml",
            "line 4: unclosed bracket '['".into(),
        ),
    ]
}

/// A board with two good tasks and every kind of hostile file; the TempDir holds the
/// outside file the escaping symlink points at.
#[cfg(unix)]
fn hostile_board() -> (TestBoard, tempfile::TempDir) {
    let b = TestBoard::new();
    b.task("Good", &["--id", "t-good"]);
    b.task("Also good", &["--id", "t-fine"]);
    b.write("tasks/t-bomb.md", fixtures::read("alias-bomb.md"));
    b.write("tasks/t-big.md", fixtures::big_document());
    b.write("tasks/t-bin.md", fixtures::read("not-utf8.md"));
    b.write("tasks/t-deep.md", fixtures::deep_nesting());
    std::fs::create_dir(b.board().join("tasks/t-dir.md")).unwrap();
    let outside = tempfile::tempdir().unwrap();
    let secret = outside.path().join("secret.md");
    std::fs::write(
        &secret,
        "---\nid: t-escape\ntitle: SECRET\nstatus: pending\n---\nSECRET\n",
    )
    .unwrap();
    std::os::unix::fs::symlink(&secret, b.board().join("tasks/t-escape.md")).unwrap();
    std::os::unix::fs::symlink("t-good.md", b.board().join("tasks/t-inside.md")).unwrap();
    b.write(
        "tasks/t-mis.md",
        "---\nid: ../../etc/passwd\ntitle: x\nstatus: pending\n---\n",
    );
    b.write("tasks/t-plain.md", "just text\n");
    b.write(
        "tasks/t-yaml.md",
        "---\nid: t-yaml\nstatus: pending\ntitle: [unclosed\n---\n",
    );
    (b, outside)
}

#[cfg(unix)]
#[test]
fn every_command_on_a_board_full_of_hostile_files() {
    let (b, outside) = hostile_board();
    let secret_before = std::fs::read(outside.path().join("secret.md")).unwrap();
    let before = snapshot(&b);
    let files = hostile_files();

    // Readers skip each bad file with a warning and still list the good ones.
    let out = run_bounded(&b, &["list"], 20);
    no_panic(&out);
    out.ok();
    let warnings: Vec<&str> = out.stderr.lines().collect();
    assert_eq!(warnings.len(), files.len(), "{}", out.stderr);
    for ((rel, _, problem), w) in files.iter().zip(&warnings) {
        assert!(
            w.starts_with(&format!("warning: skipped {rel}: {problem}")),
            "{w}"
        );
    }
    let mut ids: Vec<&str> = out
        .stdout
        .lines()
        .skip(1)
        .map(|l| l.split_whitespace().next().unwrap())
        .collect();
    ids.sort();
    assert_eq!(ids, ["t-fine", "t-good"]);
    assert!(!out.stdout.contains("SECRET"));
    let v = run_bounded(&b, &["list", "--json"], 20).json();
    assert_eq!(v["skipped"].as_array().unwrap().len(), files.len());

    let out = run_bounded(&b, &["check"], 20);
    no_panic(&out);
    out.code(6).stdout_is("");
    for (rel, _, problem) in &files {
        // check's own symlink message has no "(not followed)".
        let problem = problem.trim_end_matches(" (not followed)");
        assert!(
            out.stderr.contains(&format!("{rel}: {problem}")),
            "check lacks {rel}:\n{}",
            out.stderr
        );
    }
    assert!(out.stderr.ends_with(&format!(
        "{} problems in {}\n",
        files.len(),
        b.board().display()
    )));

    // Commands aimed at a bad file are refused with exit 6 and name the file.
    for (rel, id, problem) in &files {
        for args in [
            vec!["show", id],
            vec!["show", id, "--json"],
            vec!["edit", id, "--set", "x=1"],
            vec!["edit", id, "--body", "replaced"],
            vec!["claim", id, "--as", "a"],
            vec!["start", id, "--as", "a"],
            vec!["cancel", id, "--as", "a", "--force"],
            vec!["move", id, "done", "--as", "a"],
        ] {
            let out = run_bounded(&b, &args, 20);
            no_panic(&out);
            assert_eq!(out.code, 6, "{args:?}:\n{}", out.stderr);
            assert!(!out.stdout.contains("SECRET"), "{args:?}");
            if args.contains(&"--json") {
                let e: serde_json::Value = serde_json::from_str(&out.stderr).unwrap();
                assert_eq!(e["error"]["kind"], "invalid");
                assert_eq!(e["error"]["path"], *rel);
            } else {
                assert!(
                    out.stderr.starts_with(&format!("error: {rel}: {problem}")),
                    "{args:?}:\n{}",
                    out.stderr
                );
            }
        }
        // Nothing about them is in the log.
        let out = run_bounded(&b, &["diff", id], 20);
        no_panic(&out);
        out.ok().stdout_is("");
    }
    // Commands that read the whole board get through it.
    for args in [
        vec!["claim", "--next", "--as", "a", "priority<0"],
        vec!["log"],
    ] {
        let out = run_bounded(&b, &args, 20);
        no_panic(&out);
        assert!(out.code == 0 || out.code == 4, "{args:?}: {}", out.stderr);
    }
    assert_eq!(snapshot(&b), before, "a hostile file led to a change");
    assert_eq!(
        std::fs::read(outside.path().join("secret.md")).unwrap(),
        secret_before
    );

    // The good documents still work, and only they change.
    run_bounded(&b, &["claim", "--next", "--as", "a", "title=Good"], 20)
        .ok()
        .stdout_is("claimed t-good (rev 2, claimed)\n");
    run_bounded(
        &b,
        &["edit", "t-fine", "--set", "x=1", "--extra-field", "x"],
        20,
    )
    .ok();
    let after = snapshot(&b);
    let changed: Vec<&String> = before
        .keys()
        .filter(|k| before.get(*k) != after.get(*k))
        .collect();
    assert_eq!(changed, ["log.yaml", "tasks/t-fine.md", "tasks/t-good.md"]);
    assert_eq!(b.log().len(), 4);
}

#[cfg(unix)]
#[test]
fn a_fifo_named_like_a_document_never_blocks_a_reader() {
    let b = TestBoard::new();
    b.task("Good", &["--id", "t-good"]);
    let status = std::process::Command::new("mkfifo")
        .arg(b.board().join("tasks/t-fifo.md"))
        .status()
        .expect("mkfifo");
    assert!(status.success());
    let out = run_bounded(&b, &["list"], 10);
    out.ok()
        .stderr_is("warning: skipped tasks/t-fifo.md: is not a regular file\n");
    assert!(out.stdout.contains("t-good"));
    for args in [
        &["show", "t-fifo"][..],
        &["edit", "t-fifo", "--set", "x=1"],
        &["claim", "t-fifo"],
    ] {
        run_bounded(&b, args, 10)
            .code(6)
            .stderr_is("error: tasks/t-fifo.md: is not a regular file\n");
    }
    run_bounded(&b, &["check"], 10)
        .code(6)
        .stderr_has("tasks/t-fifo.md: is not a regular file\n");
    run_bounded(&b, &["claim", "--next", "--as", "a"], 10).ok();
    // A task may not be created over it either.
    run_bounded(&b, &["new", "task", "--title", "x", "--id", "t-fifo"], 10)
        .code(3)
        .stderr_has("already exists");
}

#[test]
fn a_hostile_board_yaml_or_template_is_refused() {
    let b = TestBoard::new();
    b.task("Good", &["--id", "t-good"]);
    let good_yaml = b.read("board.yaml");
    let bombed = format!(
        "{good_yaml}x: &a [y,y,y,y,y,y,y,y,y,y]\nx2: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a,*a]\nx3: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b,*b]\nx4: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c,*c]\nx5: [*d,*d,*d,*d,*d,*d,*d,*d,*d,*d]\n"
    );
    b.write("board.yaml", &bombed);
    let before = snapshot(&b);
    let out = run_bounded(&b, &["list"], 10);
    no_panic(&out);
    out.code(6).stderr_has("board.yaml: line ");
    assert_eq!(snapshot(&b), before);

    b.write("board.yaml", &good_yaml);
    b.write(
        "templates/task.md",
        fixtures::text("alias-bomb.md").replace("id: t-bomb", "id: template"),
    );
    let before = snapshot(&b);
    let out = run_bounded(&b, &["new", "task", "--title", "x"], 10);
    no_panic(&out);
    out.code(6)
        .stderr_has("error: templates/task.md: template is broken: line 7: budget breached");
    assert_eq!(snapshot(&b), before);
}

#[test]
fn unknown_state_is_refused_by_transitions_and_reported_by_check() {
    let b = TestBoard::new();
    b.write(
        "tasks/t-odd.md",
        "---\nid: t-odd\ntitle: odd\nstatus: limbo\n---\n",
    );
    let before = snapshot(&b);
    b.run(&["start", "t-odd"]).code(6).stderr_is("error: tasks/t-odd.md: status 'limbo' is not a state of the workflow (pending, claimed, working, review, blocked, done, failed, cancelled)\n");
    b.run(&["claim", "t-odd"]).code(6);
    b.run(&["check"])
        .code(6)
        .stderr_has("tasks/t-odd.md: status 'limbo' is not a state of the workflow");
    assert_eq!(snapshot(&b), before);
}

#[test]
fn check_lists_every_problem_at_once() {
    let b = TestBoard::new();
    b.task("Fine", &["--id", "t-fine"]);
    b.write(
        "tasks/t-a.md",
        "---\nid: t-a\ntitle: a\nstatus: pending\ndepends_on: [t-b]\n---\n",
    );
    b.write(
        "tasks/t-b.md",
        "---\nid: t-b\ntitle: b\nstatus: pending\ndepends_on: [t-a, t-ghost]\n---\n",
    );
    b.write("tasks/t-c.md", "---\nid: t-c\ntitle: c\n---\n");
    b.write("tasks/Bad Name.md", "---\nid: x\n---\n");
    let out = b.run(&["check"]);
    out.code(6);
    assert_eq!(
        out.stderr,
        format!(
            "tasks/Bad Name.md: file name is not a valid id ([a-z0-9][a-z0-9._-]{{0,63}}.md)\ntasks/t-a.md: dependency cycle: t-a -> t-b -> t-a\ntasks/t-b.md: depends_on names 't-ghost', which is not a task on this board\ntasks/t-c.md: has no status\n4 problems in {}\n",
            b.board().display()
        )
    );
    let v = b.run(&["check", "--json"]).json();
    assert_eq!(v["ok"], false);
    assert_eq!(v["problems"].as_array().unwrap().len(), 4);
}
