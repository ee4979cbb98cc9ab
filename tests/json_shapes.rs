//! docs/json.md and the commands agree: each command of its table, run on a board where it
//! has something to say, prints exactly the keys the table names for it.

use std::collections::BTreeSet;

use serde_json::Value;

use crate::util::TestBoard;

/// The quoted keys of the table row whose first cell is `name` (in backticks).
fn documented(name: &str) -> BTreeSet<String> {
    let doc =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/json.md")).unwrap();
    let row = doc
        .lines()
        .find(|l| l.starts_with(&format!("| `{name}` |")))
        .unwrap_or_else(|| panic!("docs/json.md has no row for `{name}`"));
    let cell = row.splitn(3, '|').nth(2).unwrap();
    cell.split('"')
        .skip(1)
        .step_by(2)
        .map(str::to_string)
        .collect()
}

/// The keys of a value: its own, and (`nested`) those of the first object in each of its
/// arrays.
fn keys(v: &Value, nested: bool) -> BTreeSet<String> {
    let o = v
        .as_object()
        .unwrap_or_else(|| panic!("not an object: {v}"));
    let mut out: BTreeSet<String> = o.keys().cloned().collect();
    if nested {
        for x in o.values() {
            if let Some(first) = x
                .as_array()
                .and_then(|a| a.first())
                .and_then(|f| f.as_object())
            {
                out.extend(first.keys().cloned());
            }
        }
    }
    out
}

#[track_caller]
fn agrees(b: &TestBoard, name: &str, args: &[&str], nested: bool) {
    let mut all = vec!["--json"];
    all.extend_from_slice(args);
    let out = b.run(&all);
    let v: Value = serde_json::from_str(out.stdout.trim())
        .unwrap_or_else(|e| panic!("{args:?}: {e}\n{}\n{}", out.stdout, out.stderr));
    assert_eq!(keys(&v, nested), documented(name), "`{name}`: {v}");
}

#[test]
fn every_documented_shape_is_what_the_command_prints() {
    let b = TestBoard::new();
    let pid = std::process::id().to_string();
    b.task("Parse tabs", &["--id", "t1"]);
    b.task("Later", &["--id", "t2", "--depends-on", "t1"]);
    b.run(&["agent", "register", "--as", "coder-1", "--pid", &pid])
        .ok();
    b.run(&["claim", "t1", "--as", "coder-1"]).ok();
    let asked = b.run(&[
        "--json",
        "ask",
        "Tabs or spaces?",
        "--options",
        "tabs,spaces",
    ]);
    let q = asked.ok().json()["id"].as_str().unwrap().to_string();
    agrees(&b, "answer", &["answer", &q, "--choice", "tabs"], false);
    agrees(&b, "check", &["check"], false);
    agrees(&b, "status", &["status"], false);
    agrees(&b, "summary", &["summary"], false);
    agrees(&b, "deps ID", &["deps", "t2"], false);
    agrees(&b, "tree ID", &["tree", "t1"], false);
    agrees(&b, "diff ID", &["diff", "t1"], false);
    agrees(
        &b,
        "agent heartbeat",
        &["agent", "heartbeat", "--as", "coder-1"],
        false,
    );
    agrees(&b, "agent list", &["agent", "list"], true);
    agrees(&b, "sweep", &["sweep"], false);
    agrees(
        &b,
        "agent deregister",
        &["agent", "deregister", "--as", "coder-1"],
        false,
    );
    agrees(&b, "init", &["init"], false);
    let shape = |args: &[&str]| -> BTreeSet<String> {
        let mut all = vec!["--json"];
        all.extend_from_slice(args);
        let out = b.run(&all);
        out.ok();
        keys(&serde_json::from_str(out.stdout.trim()).unwrap(), false)
    };
    let set = |ks: &[&str]| -> BTreeSet<String> { ks.iter().map(|k| k.to_string()).collect() };
    // The shared shapes.
    let change = set(&[
        "ok",
        "changed",
        "id",
        "path",
        "rev",
        "status",
        "claimed_by",
        "title",
        "seq",
    ]);
    assert_eq!(shape(&["claim", "t1", "--as", "coder-2"]), change);
    assert_eq!(shape(&["edit", "t2", "--set", "priority=1"]), change);
    let document = set(&["id", "region", "path", "rev", "fields"]);
    let mut created = document.clone();
    created.insert("seq".into());
    assert_eq!(shape(&["new", "task", "Third"]), created);
    let mut shown = document.clone();
    shown.insert("body".into());
    assert_eq!(shape(&["show", "t2"]), shown);
    assert_eq!(shape(&["list"]), set(&["documents", "skipped"]));
    assert_eq!(shape(&["ready"]), set(&["documents", "skipped", "lacking"]));
    let entry = b
        .run(&["--json", "log"])
        .ok()
        .stdout
        .lines()
        .last()
        .unwrap()
        .to_string();
    let entry: Value = serde_json::from_str(&entry).unwrap();
    for k in ["seq", "origin", "at", "actor", "op", "doc"] {
        assert!(entry.get(k).is_some(), "a log entry has {k}: {entry}");
    }
    assert!(
        entry.get("diff").is_none(),
        "no diff without --patch: {entry}"
    );
}

/// Every command `tavern --help` lists has a row in the README's command table, and every
/// transition of the default workflow is a command `--help` lists.
#[test]
fn every_command_in_help_is_in_the_readme_table() {
    let b = TestBoard::new();
    let help = b.run(&["--help"]);
    let names: Vec<String> = help
        .ok()
        .stdout
        .lines()
        .skip_while(|l| !l.starts_with("Commands:"))
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        .filter(|l| l.starts_with("  ") && !l.starts_with("   "))
        .map(|l| l.split_whitespace().next().unwrap().to_string())
        .filter(|n| n != "help")
        .collect();
    for t in ["reopen", "post", "ack", "resolve", "ready", "events"] {
        assert!(names.iter().any(|n| n == t), "--help lacks {t}: {names:?}");
    }
    let readme =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md")).unwrap();
    let table: Vec<&str> = readme
        .lines()
        .skip_while(|l| *l != "## Commands")
        .take_while(|l| !l.starts_with("### Queries"))
        .filter(|l| l.starts_with("| "))
        .map(|l| l.split(" | ").next().unwrap())
        .collect();
    for n in &names {
        assert!(
            table.iter().any(|cell| cell.contains(&format!("`{n}"))),
            "the README's command table has no row for `{n}`"
        );
    }
}
