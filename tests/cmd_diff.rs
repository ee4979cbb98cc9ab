//! `tavern diff ID`: a document's history from the log, each entry with its unified diff.

use crate::util::{TestBoard, redact_times, snapshot};

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
fn diff_prints_each_entry_with_its_patch() {
    let b = TestBoard::new();
    b.task(
        "Diffed",
        &[
            "--id",
            "t-d",
            "--as",
            "planner",
            "--set",
            "updated_at=2020-01-01T00:00:00Z",
        ],
    );
    let created = b.read("tasks/t-d.md");
    b.task("Noise", &["--id", "t-noise"]);
    b.run(&["claim", "t-d", "--as", "coder-1"]).ok();
    b.run(&["claim", "t-noise", "--as", "coder-2"]).ok();
    let out = b.run(&["diff", "t-d"]);
    out.ok().stderr_is("");
    let indent = |d: &str| -> String { d.lines().map(|l| format!("    {l}\n")).collect() };
    // Entries are separated by a blank line; diffs are indented as in `log --patch`.
    assert_eq!(
        redact_times(&out.stdout),
        redact_times(&format!(
            "1 <TIME> planner create tasks/t-d.md rev 1\n{}\n3 <TIME> coder-1 claim tasks/t-d.md pending -> claimed rev 2\n{}",
            indent(&creation_diff(&created)),
            indent(
                "@@ -3,3 +3,3 @@\n title: Diffed\n-status: pending\n+status: claimed\n priority: 2\n@@ -9,4 +9,6 @@\n created_by: planner\n-updated_at: <TIME>\n-rev: 1\n+updated_at: <TIME>\n+rev: 2\n+claimed_by: coder-1\n+claimed_at: <TIME>\n ---\n"
            ),
        ))
    );
    // Same output by prefix and by path.
    for r in ["t-d", "tasks/t-d", "tasks/t-d.md"] {
        assert_eq!(b.run(&["diff", r]).ok().stdout, out.stdout, "{r}");
    }
}

#[test]
fn diff_json_holds_the_documents_entries() {
    let b = TestBoard::new();
    b.task("A", &["--id", "t-a"]);
    b.task("B", &["--id", "t-b"]);
    b.run(&["edit", "t-a", "--set", "x=1", "--extra-field", "x"])
        .ok();
    b.run(&["start", "t-b"]).code(3);
    let out = b.run(&["diff", "t-a", "--json"]);
    out.ok().stderr_is("");
    assert_eq!(out.stdout.lines().count(), 1);
    let mine: Vec<serde_json::Value> = b
        .log()
        .into_iter()
        .filter(|e| e["doc"] == "tasks/t-a.md")
        .collect();
    assert_eq!(mine.len(), 2);
    assert_eq!(
        out.json(),
        serde_json::json!({"doc": "tasks/t-a.md", "entries": mine})
    );
}

#[test]
fn a_deleted_document_keeps_its_history() {
    let b = TestBoard::new();
    b.task("Gone", &["--id", "t-gone"]);
    let before = b.run(&["diff", "t-gone"]).ok().stdout.clone();
    std::fs::remove_file(b.board().join("tasks/t-gone.md")).unwrap();
    b.run(&["diff", "t-gone"]).ok().stdout_is(&before);
    b.run(&["diff", "tasks/t-gone.md"]).ok().stdout_is(&before);
}

#[test]
fn a_document_the_log_never_saw_has_an_empty_history() {
    let b = TestBoard::new();
    b.write("tasks/t-hand.md", "---\nid: t-hand\ntitle: by hand\n---\n");
    b.run(&["diff", "t-hand"]).ok().stdout_is("").stderr_is("");
    assert_eq!(
        b.run(&["diff", "t-hand", "--json"]).ok().json(),
        serde_json::json!({"doc": "tasks/t-hand.md", "entries": []})
    );
}

#[test]
fn diff_errors() {
    let b = TestBoard::new();
    b.task("A", &["--id", "t-ab"]);
    b.task("B", &["--id", "t-ac"]);
    let before = snapshot(&b);
    b.run(&["diff", "t-none"]).code(4).stdout_is("").stderr_is(
        "error: document 't-none' not found\nhint: the log has no entry about it either\n",
    );
    b.run(&["diff", "t-a"]).code(2).stderr_is(
        "error: id prefix 't-a' is ambiguous; it matches:\n  tasks/t-ab.md\n  tasks/t-ac.md\n",
    );
    b.run(&["diff", "../../etc/passwd"])
        .code(6)
        .stderr_has("invalid id '../../etc/passwd'");
    b.run(&["diff"]).code(2).stderr_has("<ID>");
    assert_eq!(snapshot(&b), before);
}

#[test]
fn diff_and_log_name_a_solution_file_by_its_path() {
    let b = TestBoard::new();
    b.task("Designed", &["--id", "t-d"]);
    b.write("solutions/t-d/design.md", "one\n");
    // The first watch takes the board as it is; the second logs the hand edit.
    b.run(&["watch", "--once"]).ok();
    b.write("solutions/t-d/design.md", "one\ntwo\n");
    b.run(&["watch", "--once"]).ok();
    let out = b.run(&["diff", "solutions/t-d/design.md"]);
    out.ok();
    let text = redact_times(&out.stdout);
    assert!(
        text.contains(" tavern-watch external-edit solutions/t-d/design.md")
            && text.ends_with("     one\n    +two\n"),
        "{text}"
    );
    let log = b.run(&["log", "--doc", "solutions/t-d/design.md"]);
    assert_eq!(log.ok().stdout.lines().count(), 1, "{}", log.stdout);
    b.run(&["log", "--doc", "solutions/../board.yaml"]).code(6);
}
