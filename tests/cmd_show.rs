//! `tavern show`: the file byte for byte, found by id, unique prefix or REGION/ID.

use crate::util::{TestBoard, snapshot};

const HAND: &str = "---\r\n# by hand\r\nid: t-hand\r\ntitle: 'Hand: made'\r\nstatus: pending\r\nextra: {a: [1, 2]}\r\n---\r\n\r\n\r\nbody\r\n---\r\nno final newline";

#[test]
fn show_prints_the_file_byte_exactly() {
    let b = TestBoard::new();
    b.write("tasks/t-hand.md", HAND);
    let id = b.task("Made by tavern", &[]);
    let before = snapshot(&b);
    b.run(&["show", "t-hand"])
        .ok()
        .stdout_is(HAND)
        .stderr_is("");
    b.run(&["show", &id])
        .ok()
        .stdout_is(&b.read(&format!("tasks/{id}.md")));
    assert_eq!(snapshot(&b), before, "show wrote something");
}

#[test]
fn references_exact_prefix_and_region() {
    let b = TestBoard::new();
    b.task("A", &["--id", "t-a"]);
    b.task("AB", &["--id", "t-ab"]);
    b.task("Unique", &["--id", "t-unique"]);
    b.run(&["new", "observation", "--title", "O", "--id", "t-obs"])
        .ok();
    let a = b.read("tasks/t-a.md");
    let unique = b.read("tasks/t-unique.md");
    // An exact id wins over the longer ids it is a prefix of.
    b.run(&["show", "t-a"]).ok().stdout_is(&a);
    b.run(&["show", "t-u"]).ok().stdout_is(&unique);
    b.run(&["show", "t-unique.md"]).ok().stdout_is(&unique);
    for r in ["tasks/t-a", "tasks/t-a.md", "task/t-a"] {
        b.run(&["show", r]).ok().stdout_is(&a);
    }
    b.run(&["show", "observations/t-o"])
        .ok()
        .stdout_is(&b.read("observations/t-obs.md"));
    b.run(&["show", "obs/t-obs"]).ok();
    // The region narrows the search.
    b.run(&["show", "questions/t-a"]).code(4);
}

#[test]
fn ambiguous_prefixes_list_the_candidates() {
    let b = TestBoard::new();
    b.task("A", &["--id", "t-ab"]);
    b.task("B", &["--id", "t-ac"]);
    b.run(&["new", "observation", "--title", "O", "--id", "t-ad"])
        .ok();
    b.run(&["show", "t-a"]).code(2).stdout_is("").stderr_is(
        "error: id prefix 't-a' is ambiguous; it matches:\n  tasks/t-ab.md\n  tasks/t-ac.md\n  observations/t-ad.md\n",
    );
    b.run(&["show", "tasks/t-a"]).code(2).stderr_is(
        "error: id prefix 't-a' is ambiguous; it matches:\n  tasks/t-ab.md\n  tasks/t-ac.md\n",
    );
    let out = b.run(&["show", "t-a", "--json"]);
    out.code(2).stdout_is("");
    let v: serde_json::Value = serde_json::from_str(&out.stderr).unwrap();
    assert_eq!(v["error"]["kind"], "usage");
    assert_eq!(v["error"]["code"], 2);
}

#[test]
fn unknown_and_invalid_references() {
    let b = TestBoard::new();
    b.task("A", &["--id", "t-a"]);
    b.run(&["show", "t-zzz"]).code(4).stdout_is("").stderr_is(
        "error: document 't-zzz' not found\nhint: `tavern list` shows the documents on the board\n",
    );
    b.run(&["show", "../../etc/passwd"]).code(6).stderr_is(
        "error: invalid id '../../etc/passwd': it contains a path separator\nhint: ids match [a-z0-9][a-z0-9._-]{0,63}\n",
    );
    b.run(&["show", "tasks/../../x"])
        .code(6)
        .stderr_has("invalid id");
    b.run(&["show", "T-A"])
        .code(6)
        .stderr_has("it must start with a lowercase letter or a digit");
    b.run(&["show"]).code(2).stderr_has("<ID>");
}

#[test]
fn show_json_has_fields_in_file_order_and_the_body() {
    let b = TestBoard::new();
    b.write("tasks/t-hand.md", HAND);
    let out = b.run(&["show", "t-hand", "--json"]);
    out.ok().stderr_is("");
    assert_eq!(out.stdout.lines().count(), 1);
    assert_eq!(
        out.json(),
        serde_json::json!({
            "id": "t-hand",
            "region": "tasks",
            "path": "tasks/t-hand.md",
            "rev": 0,
            "fields": {"id": "t-hand", "title": "Hand: made", "status": "pending", "extra": {"a": [1, 2]}},
            "body": "\r\n\r\nbody\r\n---\r\nno final newline",
        })
    );
    let keys: Vec<String> = out.json()["fields"]
        .as_object()
        .unwrap()
        .keys()
        .cloned()
        .collect();
    assert_eq!(keys, ["id", "title", "status", "extra"]);
    // --json is a global flag: before the command it means the same.
    b.run(&["--json", "show", "t-hand"])
        .ok()
        .stdout_is(&out.stdout);
}

#[test]
fn broken_documents_are_reported_not_shown() {
    let b = TestBoard::new();
    b.write("tasks/t-nofm.md", "just text\n");
    b.write("tasks/t-open.md", "---\nid: t-open\n");
    b.write("tasks/t-noid.md", "---\ntitle: x\n---\n");
    b.write("tasks/t-list.md", "---\n- a\n- b\n---\n");
    for (id, problem) in [
        (
            "t-nofm",
            "line 1: no frontmatter: the first line must be exactly `---`",
        ),
        (
            "t-open",
            "line 1: frontmatter is not closed: no line is exactly `---` after the first",
        ),
        ("t-noid", "has no id field"),
        (
            "t-list",
            "line 2: frontmatter must be a mapping of fields, found a list",
        ),
    ] {
        b.run(&["show", id])
            .code(6)
            .stdout_is("")
            .stderr_is(&format!("error: tasks/{id}.md: {problem}\n"));
    }
}

#[test]
fn files_under_solutions_are_named_by_their_path() {
    let b = TestBoard::new();
    b.task("Designed", &["--id", "t-d"]);
    b.write("solutions/t-d/design.md", "# Design\r\n\r\nSplit first.\n");
    b.run(&["show", "solutions/t-d/design.md"])
        .ok()
        .stdout_is("# Design\r\n\r\nSplit first.\n");
    let v = b
        .run(&["show", "solutions/t-d/design.md", "--json"])
        .ok()
        .json();
    assert_eq!(v["path"], "solutions/t-d/design.md");
    assert_eq!(v["body"], "# Design\r\n\r\nSplit first.\n");
    b.run(&["show", "solutions/t-d/missing.md"])
        .code(4)
        .stderr_has("error: file solutions/t-d/missing.md not found\n");
    b.run(&["show", "solutions/t-d/../../board.yaml"])
        .code(6)
        .stderr_is("error: 'solutions/t-d/../../board.yaml' is not a path under solutions/: empty, `.` and `..` components are not allowed\n");
    std::os::unix::fs::symlink("/etc", b.board().join("solutions/t-e")).unwrap();
    b.run(&["show", "solutions/t-e/passwd"])
        .code(6)
        .stderr_has("is a symbolic link");
}
