//! What watch mode refuses to act on: files whose names are not valid ids. Each is an
//! alert in the log, never an activation, so a name like `-rf` or `a;touch x` never
//! reaches a source's command line.

#![cfg(unix)]

use std::collections::BTreeSet;

use crate::util::TestBoard;
use crate::util::watcher::{Watcher, lines_of, once, ops, recorder, sh};

#[test]
fn files_named_by_no_valid_id_are_alerts_and_never_start_a_source() {
    let b = TestBoard::new();
    b.write(
        "control/sources/rec.md",
        "---\nname: rec\nwatch: [tasks, solutions]\non: [created, changed, deleted]\nrun: echo \"$TAVERN_EVENT\" {id} >> ran.txt\n---\n",
    );
    once(&b, &[]).0.ok();
    let mut w = Watcher::start(&b, &[]);
    let task = "---\nid: x\nstatus: pending\n---\n";
    b.write("tasks/-rf.md", task);
    b.write("tasks/a;touch x.md", task);
    b.write("solutions/$(touch y)/design.md", "# design\n");
    w.wait_until("three alerts", |seen| {
        seen.iter().filter(|v| v["event"] == "alert").count() >= 3
    });
    // Deleted again: nothing to start either.
    std::fs::remove_file(b.board().join("tasks/-rf.md")).unwrap();
    // Still working: a good file after them is handled.
    b.write("tasks/t-good.md", "---\nid: t-good\nstatus: pending\n---\n");
    w.wait_finished(1);
    let (code, _) = w.stop();
    assert_eq!(code, 0);

    let log = b.log();
    let notes: BTreeSet<String> = ops(&log, "alert")
        .iter()
        .map(|e| e["note"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(
        notes,
        BTreeSet::from([
            "tasks/-rf.md: file name is not a valid id ([a-z0-9][a-z0-9._-]{0,63}.md); not tracked and no source started (rename it)".to_string(),
            "tasks/a;touch x.md: file name is not a valid id ([a-z0-9][a-z0-9._-]{0,63}.md); not tracked and no source started (rename it)".to_string(),
            "solutions/$(touch y)/design.md: '$(touch y)' is not a valid task id ([a-z0-9][a-z0-9._-]{0,63}); not tracked and no source started (rename it)".to_string(),
        ])
    );
    // One external edit (the good file), no activation but its one.
    let edits: Vec<String> = ops(&log, "external-edit")
        .iter()
        .map(|e| e["doc"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(edits, vec!["tasks/t-good.md"]);
    assert_eq!(lines_of(&b, "ran.txt"), vec!["created t-good"]);
    assert!(!b.root().join("x").exists() && !b.root().join("y").exists());
    // A restart does not alert again about files that did not change.
    let (out, lines) = once(&b, &[]);
    out.ok();
    assert!(!lines.iter().any(|l| l["event"] == "alert"), "{lines:#?}");
}

#[test]
fn an_invalid_hand_edit_raises_an_alert_and_nothing_else_stops() {
    let b = TestBoard::new();
    recorder(&b, "rec", "created, changed");
    let good = b.task("Good", &[]);
    let bad = b.task("Soon broken", &[]);
    once(&b, &[]).0.ok();
    let good_text = b.read(&format!("tasks/{good}.md"));
    b.write(
        &format!("tasks/{bad}.md"),
        format!("---\nid: {bad}\ntitle: [unclosed\n---\n"),
    );
    let (out, lines) = once(&b, &[]);
    out.ok();
    let log = b.log();
    let alerts = ops(&log, "alert");
    assert_eq!(alerts.len(), 1);
    let note = alerts[0]["note"].as_str().unwrap();
    assert!(
        note.starts_with(&format!("tasks/{bad}.md: line 3: ")),
        "{note}"
    );
    assert!(
        note.ends_with("(edited outside tavern; not reverted, no source started)"),
        "{note}"
    );
    assert!(lines.iter().any(|v| v["event"] == "alert"));
    assert_eq!(ops(&log, "external-edit").len(), 1);
    // Not reverted; the other document untouched; no source ran for the broken one.
    assert!(b.read(&format!("tasks/{bad}.md")).contains("[unclosed"));
    assert_eq!(b.read(&format!("tasks/{good}.md")), good_text);
    assert_eq!(lines_of(&b, "ran.txt"), Vec::<String>::new());
    // The watcher goes on: the next change is handled.
    b.run(&["edit", &good, "--set", "priority=1"]).ok();
    once(&b, &[]).0.ok();
    assert_eq!(lines_of(&b, "ran.txt"), vec![format!("changed {good}")]);
}

#[test]
fn symlinks_fifos_and_bad_names_are_alerts_never_read_or_followed() {
    let b = TestBoard::new();
    recorder(&b, "rec", "created, changed");
    let good = b.task("Good", &[]);
    let mut w = Watcher::start(&b, &[]);
    let outside = b.root().join("secret.md");
    std::fs::write(&outside, "---\nid: evil\nstatus: pending\n---\nsecret\n").unwrap();
    std::os::unix::fs::symlink(&outside, b.board().join("tasks/evil.md")).unwrap();
    std::os::unix::fs::symlink("/", b.board().join("solutions/root")).unwrap();
    sh(&b, "mkfifo .tavern/tasks/pipe.md");
    b.write(
        "tasks/Bad Name.md",
        "---\nid: Bad Name\nstatus: pending\n---\n",
    );
    // A name that is not UTF-8 cannot be logged as it is: an alert, once.
    let latin1 = {
        use std::os::unix::ffi::OsStrExt;
        b.board()
            .join("tasks")
            .join(std::ffi::OsStr::from_bytes(b"caf\xe9.md"))
    };
    std::fs::write(&latin1, "---\nid: cafe\n---\n").unwrap();
    std::fs::write(&latin1, "---\nid: cafe\nstatus: pending\n---\n").unwrap();
    w.wait_until("four alerts", |seen| {
        seen.iter().filter(|v| v["event"] == "alert").count() >= 4
    });
    // Still working: the next change is handled.
    b.run(&["edit", &good, "--set", "priority=0"]).ok();
    w.wait_finished(1);
    let (code, _) = w.stop();
    assert_eq!(code, 0);
    let log = b.log();
    let notes: BTreeSet<String> = ops(&log, "alert")
        .iter()
        .map(|e| e["note"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(
        notes,
        BTreeSet::from([
            "tasks/evil.md: is a symbolic link; documents must be regular files inside the board (not followed)".to_string(),
            "tasks/pipe.md: is not a regular file".to_string(),
            "tasks/Bad Name.md: file name is not a valid id ([a-z0-9][a-z0-9._-]{0,63}.md); not tracked and no source started (rename it)".to_string(),
            "tasks/caf\u{fffd}.md: file name is not valid UTF-8; tavern cannot track it (rename it)".to_string(),
        ])
    );
    assert_eq!(ops(&log, "alert").len(), 4);
    // `check` names it too; `list` warns and lists the rest.
    b.run(&["check"])
        .code(6)
        .stderr_has("tasks/caf\u{fffd}.md: file name is not a valid id");
    b.run(&["list", "tasks"])
        .ok()
        .stderr_has("tasks/caf\u{fffd}.md: file name is not a valid id");
    // Nothing behind the link was read into the log.
    let text = b.read("log.yaml");
    assert!(!text.contains("secret"), "{text}");
    assert_eq!(lines_of(&b, "ran.txt"), vec![format!("changed {good}")]);
}
