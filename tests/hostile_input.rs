//! Hostile input, beyond the single bad files of bad_input.rs: a board full of them at once
//! under every command, special files that would hang a reader, writes that would exceed
//! the size limit, and hostile values in flags. Nothing panics, every refusal has its exit
//! code, and nothing but the documents a command was meant to change changes.

use std::process::Stdio;
use std::time::{Duration, Instant};

use crate::util::{Out, TestBoard, fixtures, snapshot};

/// Runs tavern, killing it (and failing) if it does not finish within `secs`: a reader
/// that blocks on a hostile file must fail this test, not hang the suite.
fn run_bounded(b: &TestBoard, args: &[&str], secs: u64) -> Out {
    let mut child = b
        .cmd(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let start = Instant::now();
    loop {
        if child.try_wait().unwrap().is_some() {
            let o = child.wait_with_output().unwrap();
            return Out {
                code: o.status.code().unwrap_or(-1),
                stdout: String::from_utf8_lossy(&o.stdout).into(),
                stderr: String::from_utf8_lossy(&o.stderr).into(),
            };
        }
        if start.elapsed() > Duration::from_secs(secs) {
            let _ = child.kill();
            let _ = child.wait();
            panic!("tavern {args:?} did not finish within {secs}s");
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

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
    run_bounded(&b, &["edit", "t-fine", "--set", "x=1"], 20).ok();
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
fn a_write_over_the_size_limit_is_refused() {
    let b = TestBoard::new();
    b.task("Small", &["--id", "t-small"]);
    let big = "y".repeat(1024 * 1024);
    std::fs::write(b.root().join("big.md"), &big).unwrap();
    let before = snapshot(&b);
    let suffix =
        " bytes, over the limit of 1048576 (limits.max_doc_bytes in board.yaml); nothing written\n";
    for (args, rel) in [
        (
            &[
                "new",
                "task",
                "--title",
                "Huge",
                "--id",
                "t-huge",
                "--body-file",
                "big.md",
            ][..],
            "tasks/t-huge.md",
        ),
        (
            &["edit", "t-small", "--body-file", "big.md"],
            "tasks/t-small.md",
        ),
    ] {
        let out = b.run(args);
        out.code(6).stdout_is("");
        let size = out
            .stderr
            .strip_prefix(&format!("error: {rel}: the document would be "))
            .and_then(|s| s.strip_suffix(suffix))
            .unwrap_or_else(|| panic!("{args:?}: {}", out.stderr));
        assert!(size.parse::<u64>().unwrap() > 1024 * 1024);
    }
    assert_eq!(snapshot(&b), before);

    // With a small limit, an edit that grows a document past it is refused too, and one
    // that stays within it is fine.
    let yaml = b
        .read("board.yaml")
        .replace("max_doc_bytes: 1048576", "max_doc_bytes: 1024");
    b.write("board.yaml", yaml);
    let size = b.read("tasks/t-small.md").len();
    let fits = "z".repeat(1024 - size - 40);
    b.run(&["edit", "t-small", "--set", &format!("pad={fits}")])
        .ok();
    assert!(b.read("tasks/t-small.md").len() <= 1024);
    let before = snapshot(&b);
    b.run(&[
        "edit",
        "t-small",
        "--set",
        &format!("more={}", "z".repeat(200)),
    ])
    .code(6)
    .stderr_has("over the limit of 1024");
    assert_eq!(snapshot(&b), before);
    b.run(&["show", "t-small"]).ok();
    b.run(&["check"]).ok();
}

#[test]
fn hostile_flag_values_stay_data() {
    let b = TestBoard::new();
    // A note and an actor that try to inject log entries or YAML.
    b.task("Target", &["--id", "t-t"]);
    b.run(&[
        "cancel",
        "t-t",
        "--as",
        "evil: actor",
        "--note",
        "x\n- seq: 99\n  op: delete\n  doc: tasks/t-good.md",
    ])
    .ok();
    let log = b.log();
    assert_eq!(log.len(), 2, "the note injected a log entry");
    assert_eq!(log[1]["actor"], "evil: actor");
    assert_eq!(
        log[1]["note"],
        "x\n- seq: 99\n  op: delete\n  doc: tasks/t-good.md"
    );
    assert_eq!(
        b.run(&["log", "--actor", "evil: actor"])
            .ok()
            .stdout
            .lines()
            .count(),
        1
    );
    for actor in ["a\nb", "tab\there", ""] {
        b.run(&["new", "task", "--title", "x", "--as", actor])
            .code(2)
            .stderr_has("invalid actor name");
    }

    // A title and a body that try to end the frontmatter or add fields.
    b.task(
        "x\n---\nid: evil\nstatus: done",
        &[
            "--id",
            "t-inj",
            "--body=---\nid: evil\n---\n",
            "--set",
            "note=a # not a comment",
            "--set",
            "anchor=&a [1]",
            "--set",
            "alias=*a",
            "--set",
            "tag=!!binary aGk=",
        ],
    );
    let v = b.run(&["show", "t-inj", "--json"]).ok().json();
    let f = &v["fields"];
    assert_eq!(f["id"], "t-inj");
    assert_eq!(f["status"], "pending");
    assert_eq!(f["title"], "x\n---\nid: evil\nstatus: done");
    assert_eq!(f["note"], "a # not a comment");
    assert_eq!(f["anchor"], "&a [1]");
    assert_eq!(f["alias"], "*a");
    assert_eq!(f["tag"], "!!binary aGk=");
    assert_eq!(v["body"], "\n---\nid: evil\n---\n");

    // YAML on the command line is bounded like YAML in files: a bomb or a deep nest is
    // kept as the literal text, never expanded.
    let mut levels = vec!["&l0 [x,x,x,x,x,x,x,x,x,x]".to_string()];
    for i in 1..5 {
        levels.push(format!(
            "&l{i} [{}]",
            vec![format!("*l{}", i - 1); 10].join(",")
        ));
    }
    let bomb = format!("[{}]", levels.join(", "));
    let deep = format!("{}{}", "[".repeat(10_000), "]".repeat(10_000));
    for value in [&bomb, &deep] {
        let out = run_bounded(&b, &["edit", "t-inj", "--set", &format!("v={value}")], 10);
        no_panic(&out);
        out.ok();
        let v = b.run(&["show", "t-inj", "--json"]).ok().json();
        assert_eq!(v["fields"]["v"], **value);
    }
    b.run(&["check"]).ok();
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
fn times_too_far_away_to_represent_are_not_times() {
    let b = TestBoard::new();
    let far = b.task("Far", &["--id", "t-far", "--set", "deadline=-100000000d"]);
    b.task("Near", &["--id", "t-near", "--set", "deadline=2020-01-01"]);
    // In a document: not a time, so a comparison with it does not hold.
    let ids = |out: &Out| -> Vec<String> {
        out.stdout
            .lines()
            .skip(1)
            .map(|l| l.split(' ').next().unwrap().to_string())
            .collect()
    };
    assert_eq!(ids(b.run(&["list", "deadline<-2h"]).ok()), ["t-near"]);
    assert_eq!(ids(b.run(&["ready", "deadline<-2h"]).ok()), ["t-near"]);
    // In a query: malformed, exit 2, wherever a query is taken.
    for args in [
        vec!["list", "updated_at<-100000000d"],
        vec!["ready", "updated_at>+100000000d"],
        vec!["claim", "--next", "updated_at<-9223372036854775807ms"],
        vec!["log", "--since", "-100000000d"],
        vec!["events", "--since", "-100000000d"],
    ] {
        let out = b.run(&args);
        no_panic(&out);
        out.code(2).stdout_is("").stderr_has("-");
    }
    // In a source's `when:`: reported by `sources check`; a source comparing with a
    // document's far-away time runs the watcher as usual.
    b.write(
        "control/sources/bad.md",
        "---\nwatch: [tasks]\nwhen: updated_at<-100000000d\nrun: echo bad\n---\n",
    );
    b.run(&["sources", "check"])
        .code(6)
        .stderr_has("control/sources/bad.md: when: malformed query term 'updated_at<-100000000d'");
    std::fs::remove_file(b.board().join("control/sources/bad.md")).unwrap();
    b.write(
        "control/sources/late.md",
        "---\nwatch: [tasks]\nwhen: deadline<-2h\nrun: echo \"$TAVERN_ID\" >> late.txt\n---\n",
    );
    b.run(&["watch", "--once"]).ok();
    b.run(&["edit", &far, "--set", "x=1"]).ok();
    b.run(&["edit", "t-near", "--set", "x=1"]).ok();
    let out = b.run(&["watch", "--once"]);
    no_panic(&out);
    out.ok();
    assert_eq!(
        std::fs::read_to_string(b.root().join("late.txt")).unwrap(),
        "t-near\n"
    );
}
