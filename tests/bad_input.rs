//! Hostile and broken input: each is refused or reported with its exit code, names the
//! file, never panics, and leaves every other document and the log untouched.

use crate::util::{Out, TestBoard, fixtures, snapshot};

fn no_panic(out: &Out) {
    assert!(!out.stderr.contains("panicked"), "{}", out.stderr);
}

/// A board with one good task and one bad file; `check` names the file, `list` skips it,
/// the good task still works, and nothing changes on disk.
fn refused(rel: &str, content: &[u8], expected_problem: &str) {
    let b = TestBoard::new();
    b.task("Good", &["--id", "t-good"]);
    b.write(rel, content);
    let before = snapshot(&b);
    let id = rel.rsplit('/').next().unwrap().trim_end_matches(".md");

    let out = b.run(&["check"]);
    no_panic(&out);
    out.code(6);
    assert!(
        out.stderr.contains(&format!("{rel}: {expected_problem}")),
        "check:\n{}",
        out.stderr
    );

    let out = b.run(&["list"]);
    no_panic(&out);
    out.ok();
    assert!(
        out.stderr
            .starts_with(&format!("warning: skipped {rel}: {expected_problem}")),
        "list:\n{}",
        out.stderr
    );
    assert!(out.stdout.contains("t-good"));

    for args in [
        vec!["show", id],
        vec!["edit", id, "--set", "x=1"],
        vec!["claim", id],
    ] {
        let out = b.run(&args);
        no_panic(&out);
        assert_eq!(out.code, 6, "{args:?}: {}", out.stderr);
        assert!(
            out.stderr.contains(rel) && out.stderr.contains(expected_problem),
            "{args:?}: {}",
            out.stderr
        );
    }
    b.run(&["show", "t-good"]).ok();
    assert_eq!(snapshot(&b), before, "a refused command changed the board");
}

#[test]
fn malformed_yaml_names_file_and_line() {
    refused(
        "tasks/t-bad.md",
        &fixtures::read("unclosed-bracket.md"),
        "line 4: unclosed bracket '['",
    );
}

#[test]
fn alias_bomb_is_refused() {
    refused("tasks/t-bomb.md", &fixtures::read("alias-bomb.md"), "line ");
}

#[test]
fn huge_document_is_skipped_not_read() {
    refused(
        "tasks/t-big.md",
        &fixtures::big_document(),
        "is 52428800 bytes, over the limit of 1048576",
    );
}

#[test]
fn non_utf8_is_refused() {
    refused(
        "tasks/t-bin.md",
        &fixtures::read("not-utf8.md"),
        "is not valid UTF-8 (invalid byte at offset 21)",
    );
}

#[test]
fn id_that_disagrees_with_the_file_name() {
    refused(
        "tasks/t-name.md",
        b"---\nid: t-other\ntitle: x\nstatus: pending\n---\n",
        "its id t-other does not match its file name (expected 't-name')",
    );
}

#[test]
fn missing_frontmatter() {
    refused("tasks/t-plain.md", b"just text\n", "line 1: no frontmatter");
}

#[cfg(unix)]
#[test]
fn symlink_out_of_the_board_is_never_followed() {
    let b = TestBoard::new();
    let outside = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(
        outside.path(),
        "---\nid: t-link\ntitle: secret outside\nstatus: pending\n---\nsecret\n",
    )
    .unwrap();
    std::os::unix::fs::symlink(outside.path(), b.board().join("tasks/t-link.md")).unwrap();
    let before = snapshot(&b);
    for args in [
        vec!["show", "t-link"],
        vec!["claim", "t-link"],
        vec!["edit", "t-link", "--set", "x=1"],
    ] {
        let out = b.run(&args);
        no_panic(&out);
        out.code(6)
            .stderr_has("tasks/t-link.md: is a symbolic link");
        assert!(!out.stdout.contains("secret"));
    }
    let out = b.run(&["list"]);
    out.ok()
        .stderr_has("warning: skipped tasks/t-link.md: is a symbolic link");
    assert!(!out.stdout.contains("secret"));
    b.run(&["check"])
        .code(6)
        .stderr_has("tasks/t-link.md: is a symbolic link");
    assert_eq!(snapshot(&b), before);
    assert_eq!(
        std::fs::read_to_string(outside.path()).unwrap(),
        "---\nid: t-link\ntitle: secret outside\nstatus: pending\n---\nsecret\n"
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

#[test]
fn a_torn_log_entry_is_cut_and_reported() {
    let b = TestBoard::new();
    b.task("One", &["--id", "t-1"]);
    let mut log = b.read("log.yaml");
    log.push_str("- seq: 2\n  at: 2026-11-22T10:00:00.000Z\n  actor: \"half");
    b.write("log.yaml", &log);
    b.run(&["log"]).ok();
    b.run(&["check"]).code(6).stderr_is(&format!(
        "log.yaml: line {}: the end of the log cannot be read (a torn entry, or lines added by hand); the next tavern write cuts it\n1 problem in {}\n",
        log.lines().count() - 2,
        b.board().display()
    ));
    let out = b.run(&["claim", "t-1", "--as", "a"]);
    out.ok().stderr_is(CUT);
    let entries = b.log();
    assert_eq!(entries.len(), 2);
    assert_eq!(entries[1]["seq"], 2);
    assert_eq!(entries[1]["op"], "claim");
    b.run(&["check"]).ok();
}

#[test]
fn bytes_in_the_log_that_are_not_utf8_do_not_move_where_it_is_cut_or_read() {
    let b = TestBoard::new();
    b.task("One", &["--id", "t-1"]);
    b.run(&["edit", "t-1", "--set", "priority=1", "--as", "b"])
        .ok();
    let path = b.board().join("log.yaml");
    let text = b.read("log.yaml");
    // A hand edit left Latin-1 bytes in a comment of the first entry (each is one byte
    // on disk but three once read as U+FFFD), and a crash left a torn last entry.
    let first_line = text.find('\n').unwrap() + 1;
    let mut kept = text.as_bytes()[..first_line].to_vec();
    kept.extend_from_slice(b"  # caf\xe9 \xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\n");
    kept.extend_from_slice(&text.as_bytes()[first_line..]);
    let mut torn = kept.clone();
    torn.extend_from_slice(b"- seq: 3\n  at: 2026-11-22T10:00:00.000Z\n  actor: \"half");
    std::fs::write(&path, &torn).unwrap();

    b.run(&["claim", "t-1", "--as", "a"]).ok().stderr_is(CUT);
    let after = std::fs::read(&path).unwrap();
    assert_eq!(
        &after[..kept.len()],
        &kept[..],
        "only the torn entry was cut"
    );
    let appended = String::from_utf8(after[kept.len()..].to_vec()).unwrap();
    assert!(appended.starts_with("- seq: 3\n"), "{appended}");
    assert!(appended.contains("  op: claim\n"), "{appended}");
    b.run(&["check"]).ok();
    let seqs = |args: &[&str]| -> Vec<u64> {
        b.run(args)
            .ok()
            .stderr_is("")
            .stdout
            .lines()
            .map(|l| {
                serde_json::from_str::<serde_json::Value>(l).unwrap()["seq"]
                    .as_u64()
                    .unwrap()
            })
            .collect()
    };
    assert_eq!(seqs(&["log", "--json"]), [1, 2, 3]);
    assert_eq!(seqs(&["log", "--json", "--since", "1"]), [2, 3]);
    assert_eq!(seqs(&["log", "--json", "--doc", "t-1"]), [1, 2, 3]);
}

const CUT: &str = "warning: log.yaml: cut an unreadable end (a torn entry left by an interrupted write, or lines added by hand)\n";

#[test]
fn lines_added_to_the_log_by_hand_are_cut_but_the_entry_before_them_stays() {
    let b = TestBoard::new();
    b.task("One", &["--id", "t-1"]);
    b.run(&["edit", "t-1", "--set", "priority=1", "--as", "b"])
        .ok();
    let before = b.read("log.yaml");
    b.write("log.yaml", format!("{before}junk line : [\n"));
    // Until the next write, the last entry and the junk are one unreadable end.
    let last_entry_line = before
        .lines()
        .enumerate()
        .filter(|(_, l)| l.starts_with("- seq:"))
        .last()
        .unwrap()
        .0
        + 1;
    b.run(&["check"]).code(6).stderr_has(&format!(
        "log.yaml: line {last_entry_line}: the end of the log cannot be read"
    ));
    b.run(&["edit", "t-1", "--set", "priority=3", "--as", "c"])
        .ok()
        .stderr_is(CUT);
    let log = b.log();
    let who: Vec<(u64, &str, u64)> = log
        .iter()
        .map(|e| {
            (
                e["seq"].as_u64().unwrap(),
                e["actor"].as_str().unwrap(),
                e["rev"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(who, vec![(1, "tester", 1), (2, "b", 2), (3, "c", 3)]);
    assert!(b.read("log.yaml").starts_with(&before));
    assert!(!b.read("log.yaml").contains("junk"));
    b.run(&["check"]).ok();

    // Lines that look like a list item of their own are not tavern's either: everything
    // after the last entry tavern wrote goes, and that entry stays whole.
    let before = b.read("log.yaml");
    b.write(
        "log.yaml",
        format!("{before}notes by hand\n- todo: x\n- another: [\n"),
    );
    b.run(&["edit", "t-1", "--set", "priority=4", "--as", "d"])
        .ok()
        .stderr_is(CUT);
    let after = b.read("log.yaml");
    assert!(after.starts_with(&before), "{after}");
    assert!(after[before.len()..].starts_with("- seq: 4\n"), "{after}");
    let seqs: Vec<u64> = b.log().iter().map(|e| e["seq"].as_u64().unwrap()).collect();
    assert_eq!(seqs, [1, 2, 3, 4]);
    b.run(&["check"]).ok();
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
