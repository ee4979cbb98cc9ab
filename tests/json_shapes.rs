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

/// The quoted keys of the table row whose first cell starts with `start`.
fn documented_row(start: &str) -> BTreeSet<String> {
    let doc =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/json.md")).unwrap();
    let row = doc
        .lines()
        .find(|l| l.starts_with(&format!("| {start}")))
        .unwrap_or_else(|| panic!("docs/json.md has no row starting {start}"));
    let cell = row.splitn(3, '|').nth(2).unwrap();
    cell.split('"')
        .skip(1)
        .step_by(2)
        .map(str::to_string)
        .collect()
}

/// A refused hold names each hold in the way as docs/json.md says, the same object from
/// `hold --json` and from the pre-edit hook run with `--json`: holder, resource, reason,
/// expiry and task, as `holds --json` lists that hold.
#[test]
fn a_refused_hold_names_each_conflict_as_documented() {
    let b = TestBoard::new();
    let t = b.task("Refactor", &[]);
    b.run(&[
        "hold",
        "--as",
        "a",
        "src/**",
        "--reason",
        "<b>refactor</b>",
        "--task",
        &t,
        "--for",
        "1h",
    ])
    .ok();
    b.run(&["hold", "--as", "c", "--resource", "db:test", "--shared"])
        .ok();
    let listed = b.run(&["holds", "--json"]).ok().json();
    let hold_of = |agent: &str| {
        listed["holds"]
            .as_array()
            .unwrap()
            .iter()
            .find(|h| h["agent"] == agent)
            .unwrap()
            .clone()
    };
    let before = b.read(".state/holds.json");
    let out = b.run(&[
        "--json",
        "hold",
        "--as",
        "b",
        "src/a.rs",
        "--resource",
        "db:test",
    ]);
    out.code(3);
    assert_eq!(out.stdout, "", "nothing on stdout");
    let e: Value = serde_json::from_str(out.stderr.trim())
        .unwrap_or_else(|x| panic!("not one JSON object ({x}): {}", out.stderr));
    let err = &e["error"];
    assert_eq!(err["kind"], "conflict");
    assert_eq!(err["code"], 3);
    assert_eq!(err["path"], ".state/holds.json");
    let conflicts = err["conflicts"].as_array().unwrap();
    assert_eq!(conflicts.len(), 2, "{e}");
    assert_eq!(
        conflicts[0]["wanted"],
        serde_json::json!({"kind": "path", "name": "src/a.rs"})
    );
    assert_eq!(conflicts[0]["hold"], hold_of("a"));
    assert_eq!(conflicts[0]["hold"]["agent"], "a");
    assert_eq!(conflicts[0]["hold"]["reason"], "<b>refactor</b>");
    assert_eq!(conflicts[0]["hold"]["task"], t.as_str());
    assert!(conflicts[0]["hold"]["until"].is_string());
    assert_eq!(
        conflicts[1]["wanted"],
        serde_json::json!({"kind": "named", "name": "db:test"})
    );
    assert_eq!(conflicts[1]["hold"], hold_of("c"));
    assert_eq!(conflicts[1]["hold"]["shared"], true);
    // The keys are the documented ones, no more and no fewer (`queued` and
    // `more_conflicts` only when there are such).
    let doc = documented_row("refused `hold`");
    let mut seen = keys(err, false);
    seen.extend(keys(&conflicts[0], false));
    seen.extend(keys(&conflicts[0]["wanted"], false));
    for base in ["kind", "code", "message", "path"] {
        assert!(seen.remove(base), "the error object has {base}: {e}");
    }
    let mut doc_seen = doc.clone();
    doc_seen.remove("queued");
    doc_seen.remove("more_conflicts");
    doc_seen.remove("kind");
    doc_seen.remove("name");
    seen.remove("kind");
    seen.remove("name");
    assert_eq!(seen, doc_seen, "{e}");
    let hold_doc = documented("hold` / `release-hold");
    for k in keys(&conflicts[0]["hold"], false) {
        assert!(
            hold_doc.contains(&k),
            "a hold's {k} is documented: {hold_doc:?}"
        );
    }
    // The refusal changed no hold.
    assert_eq!(
        b.read(".state/holds.json"),
        before,
        "a refusal leaves the registry as it was"
    );

    // The pre-edit hook, run with --json: the same object for the file.
    let event = serde_json::json!({"cwd": b.root().to_str().unwrap(), "hook_event_name": "PreToolUse",
        "tool_name": "Edit", "tool_input": {"file_path": "src/a.rs"}});
    let hook = b.run_stdin(
        &["--json", "hook", "claude", "pre-edit", "--as", "b"],
        &event.to_string(),
    );
    hook.code(3);
    assert_eq!(hook.stdout, "");
    let h: Value = serde_json::from_str(hook.stderr.trim()).unwrap();
    assert_eq!(h["error"]["kind"], "conflict");
    assert_eq!(h["error"]["conflicts"][0]["hold"], hold_of("a"));
    assert_eq!(h["error"]["conflicts"][0]["wanted"]["name"], "src/a.rs");
    assert_eq!(h["error"]["conflicts"].as_array().unwrap().len(), 1);
    // A free file: nothing at all, exit 0.
    let free = serde_json::json!({"cwd": b.root().to_str().unwrap(), "hook_event_name": "PreToolUse",
        "tool_name": "Edit", "tool_input": {"file_path": "docs/x.md"}});
    b.run_stdin(
        &["--json", "hook", "claude", "pre-edit", "--as", "b"],
        &free.to_string(),
    )
    .ok()
    .stdout_is("");
}
