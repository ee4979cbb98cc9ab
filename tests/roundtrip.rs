//! Byte-exact round trips: a hand-written document keeps every byte but the changed
//! fields' lines through claims and edits.

use crate::util::{TestBoard, fixtures};

#[test]
fn claim_and_edit_change_only_their_lines() {
    let b = TestBoard::new();
    let hand_written = fixtures::text("crlf-hand-written.md");
    b.write("tasks/t-hand.md", &hand_written);
    b.run(&["show", "t-hand"]).ok().stdout_is(&hand_written);
    b.run(&["claim", "t-hand", "--as", "coder-1"]).ok();
    b.run(&[
        "edit",
        "t-hand",
        "--set",
        "priority=0",
        "--add",
        "notes=three",
        "--as",
        "coder-1",
    ])
    .ok();
    let after = b.read("tasks/t-hand.md");
    let old: Vec<&str> = hand_written.split_inclusive('\n').collect();
    let new: Vec<&str> = after.split_inclusive('\n').collect();
    let changed = ["status:", "priority:", "notes:", "  - "];
    let added = ["updated_at:", "rev:", "claimed_by:", "claimed_at:"];
    let kept_old: Vec<&&str> = old
        .iter()
        .filter(|l| !changed.iter().any(|c| l.starts_with(c)))
        .collect();
    let kept_new: Vec<&&str> = new
        .iter()
        .filter(|l| !changed.iter().chain(&added).any(|c| l.starts_with(c)))
        .collect();
    assert_eq!(
        kept_old, kept_new,
        "unchanged lines must stay byte-identical\n{after}"
    );
    assert!(
        after.contains("status: claimed   # where it stands\r\n"),
        "{after}"
    );
    assert!(
        after.contains("priority: 0\r\n") && after.contains("notes: [one, two, three]\r\n"),
        "{after}"
    );
    assert!(
        after.ends_with("---\r\n\r\n\r\nBody line\r\n---\r\na rule above, and no final newline")
    );
    // The log's diff of the claim is just the changed lines.
    let claim = b.log().into_iter().find(|e| e["op"] == "claim").unwrap();
    let diff = claim["diff"].as_str().unwrap();
    let changes: Vec<&str> = diff.lines().filter(|l| l.starts_with(['+', '-'])).collect();
    // status out and in; claimed_by, claimed_at, updated_at and rev (absent before) added.
    assert_eq!(changes.len(), 6, "{diff}");
    assert!(
        changes.contains(&"-status: pending   # where it stands")
            && changes.contains(&"+status: claimed   # where it stands"),
        "{diff:?}"
    );
}

#[test]
fn a_new_body_in_a_crlf_document_stays_crlf() {
    let b = TestBoard::new();
    b.write(
        "tasks/t-crlf.md",
        "---\r\nid: t-crlf\r\ntitle: CRLF\r\nstatus: pending\r\n---\r\nold\r\n",
    );
    b.run(&["edit", "t-crlf", "--body", "line one\nline two\n"])
        .ok();
    let text = b.read("tasks/t-crlf.md");
    assert!(
        text.ends_with("---\r\n\r\nline one\r\nline two\r\n"),
        "{text:?}"
    );
    assert!(
        !text.replace("\r\n", "").contains('\n'),
        "every line ends with CRLF: {text:?}"
    );
}
