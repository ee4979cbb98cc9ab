//! Bad and hostile values on the command line: ids that are paths or not ids, flag values
//! that try to inject YAML or log entries, bombs in --set, writes past the size limit,
//! times too far away to represent, arguments clap refuses or that are not UTF-8. Each is
//! refused with its documented exit code (and --json error), or kept as plain data; nothing
//! panics and nothing else changes. (Hostile files on the board are hostile_input.rs's.)

use crate::util::{Out, TestBoard, run_bounded, snapshot};

#[track_caller]
fn no_panic(out: &Out) {
    assert!(
        !out.stderr.contains("panicked") && out.code >= 0,
        "crashed (code {}):\n{}",
        out.code,
        out.stderr
    );
}

#[test]
fn hostile_ids_on_every_command() {
    let b = TestBoard::new();
    b.task("Good", &["--id", "t-good"]);
    let before = snapshot(&b);
    for bad in [
        "../../etc/passwd",
        "/etc/passwd",
        "UPPER",
        "a b",
        "",
        "tasks/../../x",
    ] {
        for cmd in [
            vec!["show", bad],
            vec!["claim", bad],
            vec!["edit", bad, "--set", "x=1"],
            vec!["start", bad],
            vec!["diff", bad],
        ] {
            let out = b.run(&cmd);
            no_panic(&out);
            assert_eq!(out.code, 6, "{cmd:?}: {}", out.stderr);
            assert!(out.stderr.contains("invalid id"), "{cmd:?}: {}", out.stderr);
        }
    }
    assert_eq!(snapshot(&b), before);
}

/// Errors clap finds while parsing the arguments honour --json like every other error:
/// one JSON object on stderr, the documented exit code, nothing on stdout.
#[test]
fn argument_errors_honour_json_and_the_exit_codes() {
    let b = TestBoard::new();
    let json_error = |args: &[&str], code: i32| {
        let out = b.run(args);
        out.code(code).stdout_is("");
        let v: serde_json::Value = serde_json::from_str(&out.stderr).unwrap_or_else(|e| {
            panic!(
                "{args:?}: stderr is not one JSON object ({e}): {}",
                out.stderr
            )
        });
        assert_eq!(out.stderr.lines().count(), 1, "{}", out.stderr);
        assert_eq!(v["error"]["code"], code);
        v["error"]["message"].as_str().unwrap().to_string()
    };
    let m = json_error(&["--json", "claim", "--bogus"], 2);
    assert!(m.starts_with("unexpected argument '--bogus' found"), "{m}");
    let m = json_error(&["--json", "new", "bug"], 2);
    assert!(m.starts_with("invalid value 'bug' for '<KIND>'"), "{m}");
    let m = json_error(&["claim", "--json", "--bogus"], 2);
    assert!(m.starts_with("unexpected argument '--bogus'"), "{m}");
    json_error(&["--json"], 2);
    // Text mode keeps clap's message and usage line, with the same codes.
    b.run(&["claim", "--bogus"])
        .code(2)
        .stderr_has("error: unexpected argument '--bogus' found\n");
    let out = b.run(&[]);
    out.code(2)
        .stdout_is("")
        .stderr_has("Usage: tavern [OPTIONS] <COMMAND>");
    b.run(&["--help"])
        .ok()
        .stdout_has("Usage: tavern [OPTIONS] <COMMAND>");
    b.run(&["--version"]).ok().stdout_has("tavern ");
}

/// An argument that is not UTF-8 is invalid input: exit 6, as the README's table says.
#[test]
fn an_argument_that_is_not_utf8_exits_6() {
    use std::os::unix::ffi::OsStrExt;
    let b = TestBoard::new();
    let bad = std::ffi::OsStr::from_bytes(b"t-\xff");
    let mut c = b.cmd(&["show"]);
    c.arg(bad);
    let out = crate::util::output(c);
    out.code(6)
        .stdout_is("")
        .stderr_has("error: invalid UTF-8 was detected in one or more arguments");
    let mut c = b.cmd(&["--json", "new", "task", "--title"]);
    c.arg(bad);
    let out = crate::util::output(c);
    out.code(6).stdout_is("");
    let v: serde_json::Value = serde_json::from_str(&out.stderr).unwrap();
    assert_eq!(v["error"]["kind"], "invalid");
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
    b.declare_fields("tasks", &["pad", "more"]);
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
    b.declare_fields("tasks", &["note", "anchor", "alias", "tag", "v"]);
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
fn times_too_far_away_to_represent_are_not_times() {
    let b = TestBoard::new();
    b.declare_fields("tasks", &["deadline", "x"]);
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
