//! What watch mode refuses to act on: files whose names are not valid ids. Each is an
//! alert in the log, never an activation, so a name like `-rf` or `a;touch x` never
//! reaches a source's command line.

#![cfg(unix)]

use std::collections::BTreeSet;

use crate::util::TestBoard;
use crate::util::watcher::{Watcher, lines_of, once, ops};

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
