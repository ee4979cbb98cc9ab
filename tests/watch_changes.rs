//! Watch mode notices every change once: each kind of write (tavern, `cat >`, a rename over
//! the old file, `rm`, `mv`), bursts, solutions' trees, binary and oversized files, a
//! replaced log, and changes made while no watcher ran.

#![cfg(unix)]

use std::collections::BTreeMap;
use std::collections::BTreeSet;
use std::process::Command;
use std::time::Duration;

use serde_json::Value;

use crate::util::watcher::{Watcher, finished, lines_of, once, ops, recorder, sh, sorted, source};
use crate::util::{BIN, TestBoard};

/// Replaces a document the way editors save: a new file renamed over the old one.
fn save_by_rename(b: &TestBoard, rel: &str, text: &str) {
    let tmp = b.board().join(format!("{rel}.new~"));
    std::fs::write(&tmp, text).unwrap();
    std::fs::rename(&tmp, b.board().join(rel)).unwrap();
}

#[test]
fn each_kind_of_write_is_handled_exactly_once() {
    let b = TestBoard::new();
    recorder(&b, "rec", "created, changed");
    let old = b.task("Written before the first watch", &[]);

    // The first run takes the board as it is: nothing fires for what already exists.
    let (out, _) = once(&b, &[]);
    out.ok();
    assert_eq!(lines_of(&b, "ran.txt"), Vec::<String>::new());
    let logged_before = b.log().len();

    let by_cli = b.task("Created by tavern new", &[]);
    sh(
        &b,
        "cat > .tavern/tasks/task-cat.md <<'EOF'\n---\nid: task-cat\ntitle: Written by cat\nstatus: pending\n---\nbody\nEOF",
    );
    let edited = b.read(&format!("tasks/{old}.md")).replace(
        "title: Written before the first watch",
        "title: Saved by an editor",
    );
    save_by_rename(&b, &format!("tasks/{old}.md"), &edited);

    let (out, _) = once(&b, &[]);
    out.ok();
    assert_eq!(
        sorted(lines_of(&b, "ran.txt")),
        sorted(vec![
            format!("changed {old}"),
            "created task-cat".to_string(),
            format!("created {by_cli}"),
        ])
    );
    let log = b.log();
    let new: Vec<Value> = log[logged_before..].to_vec();
    let external = ops(&new, "external-edit");
    assert_eq!(external.len(), 2, "{external:#?}");
    let cat = external
        .iter()
        .find(|e| e["doc"] == "tasks/task-cat.md")
        .unwrap();
    assert_eq!(
        cat["note"],
        "created outside tavern (noticed when tavern watch started)"
    );
    assert_eq!(cat["actor"], "tavern-watch");
    assert!(
        cat["diff"]
            .as_str()
            .unwrap()
            .contains("+title: Written by cat\n")
    );
    let saved = external
        .iter()
        .find(|e| e["doc"] == format!("tasks/{old}.md"))
        .unwrap();
    assert_eq!(
        saved["diff"],
        "@@ -2,3 +2,3 @@\n id: ".to_string()
            + &old
            + "\n-title: Written before the first watch\n+title: Saved by an editor\n status: pending\n"
    );
    assert_eq!(saved["rev"], 1);
    let ends = finished(&new);
    assert_eq!(ends.len(), 3);
    assert!(ends.iter().all(|e| e["to"] == "ok" && e["exit"] == 0));

    // A second run finds nothing new: nothing runs, nothing is logged.
    let (out, _) = once(&b, &[]);
    out.ok();
    assert_eq!(lines_of(&b, "ran.txt").len(), 3);
    assert_eq!(b.log().len(), log.len());
}

#[test]
fn a_live_watcher_handles_cli_cat_and_rename_writes_once() {
    let b = TestBoard::new();
    recorder(&b, "rec", "created, changed, transition:claimed");
    let mut w = Watcher::start(&b, &[]);

    let id = b.task("Made by tavern new", &[]);
    w.wait_finished(1);
    sh(
        &b,
        "cat > .tavern/tasks/task-cat.md <<'EOF'\n---\nid: task-cat\ntitle: Written by cat\nstatus: pending\n---\nbody\nEOF",
    );
    w.wait_finished(2);
    let text = b.read("tasks/task-cat.md").replace("body", "saved body");
    save_by_rename(&b, "tasks/task-cat.md", &text);
    w.wait_finished(3);
    b.run(&["claim", &id, "--as", "coder-1"]).ok();
    w.wait_finished(4);
    // A last change: once its activation is done, anything the earlier ones would have
    // caused twice would have shown up before it.
    b.task("Sentinel", &[]);
    w.wait_finished(5);
    let (code, seen) = w.stop();
    assert_eq!(code, 0);

    let ran = lines_of(&b, "ran.txt");
    assert_eq!(ran.len(), 5, "{ran:?}");
    assert_eq!(ran[0], format!("created {id}"));
    assert_eq!(ran[1], "created task-cat");
    assert_eq!(ran[2], "changed task-cat");
    // The claim matched `changed` first in the change's events; one activation for it.
    assert_eq!(ran[3], format!("changed {id}"));
    let claim = seen
        .iter()
        .find(|v| v["event"] == "change" && v["actor"] == "coder-1")
        .unwrap();
    assert_eq!(
        claim["events"],
        serde_json::json!(["changed", "transition:claimed"])
    );
    let log = b.log();
    let external = ops(&log, "external-edit");
    assert_eq!(external.len(), 2);
    assert_eq!(external[0]["note"], "created outside tavern");
    assert_eq!(external[1]["note"], "changed outside tavern");
    assert_eq!(
        external[1]["diff"],
        "@@ -5,2 +5,2 @@\n ---\n-body\n+saved body\n"
    );
    assert_eq!(ops(&log, "create").len(), 2);
    assert_eq!(finished(&log).len(), 5);
}

#[test]
fn changes_made_while_the_watcher_was_down_are_handled_once_at_restart() {
    let b = TestBoard::new();
    recorder(&b, "rec", "created, changed");
    let id = b.task("Exists before the watcher", &[]);
    let (code, _) = Watcher::start(&b, &[]).stop();
    assert_eq!(code, 0);

    // While no watcher runs: a hand edit and a tavern write of two documents.
    let text = b.read(&format!("tasks/{id}.md")) + "\nHand-written goal.\n";
    b.write(&format!("tasks/{id}.md"), text);
    let other = b.task("Created while down", &[]);

    let mut w = Watcher::start(&b, &[]);
    w.wait_finished(2);
    let (code, _) = w.stop();
    assert_eq!(code, 0);
    assert_eq!(
        sorted(lines_of(&b, "ran.txt")),
        sorted(vec![format!("changed {id}"), format!("created {other}")])
    );
    let log = b.log();
    let external = ops(&log, "external-edit");
    assert_eq!(external.len(), 1);
    assert_eq!(
        external[0]["note"],
        "changed outside tavern (noticed when tavern watch started)"
    );
    assert!(
        external[0]["diff"]
            .as_str()
            .unwrap()
            .contains("+Hand-written goal.\n")
    );

    // Restarting again fires nothing and logs nothing.
    let mut w = Watcher::start(&b, &[]);
    b.task("Sentinel", &[]);
    w.wait_finished(1);
    let (_, seen) = w.stop();
    assert_eq!(seen.iter().filter(|v| v["event"] == "started").count(), 1);
    assert_eq!(lines_of(&b, "ran.txt").len(), 3);
    assert_eq!(ops(&b.log(), "external-edit").len(), 1);
}

#[test]
fn deletions_and_moves_between_regions_are_reported_once() {
    let b = TestBoard::new();
    source(
        &b,
        "rec",
        "watch: [tasks, observations]\non: [created, deleted]\nrun: echo \"$TAVERN_EVENT $TAVERN_REGION $TAVERN_ID\" >> ran.txt\n",
        "",
    );
    let doomed = b.task("Deleted by hand", &[]);
    let done = b.task("Archived", &[]);
    let moved = b.task("Moved to observations", &[]);
    let obs = b
        .run(&[
            "post",
            "Moved to tasks",
            "--topic",
            "x",
            "--severity",
            "low",
        ])
        .text();
    assert!(obs.starts_with("obs-"), "{obs}");
    b.run(&["cancel", &done]).ok();
    once(&b, &[]).0.ok();

    std::fs::remove_file(b.board().join(format!("tasks/{doomed}.md"))).unwrap();
    b.run(&["archive", "region:tasks"]).ok();
    sh(
        &b,
        &format!(
            "mv .tavern/tasks/{moved}.md .tavern/observations/ && mv .tavern/observations/{obs}.md .tavern/tasks/"
        ),
    );
    let (out, _) = once(&b, &[]);
    out.ok();
    // An observation is no task (its status is not a workflow state): it is an alert, and
    // no source starts for it as a task.
    assert_eq!(
        sorted(lines_of(&b, "ran.txt")),
        sorted(vec![
            format!("deleted tasks {doomed}"),
            format!("deleted tasks {done}"),
            format!("deleted tasks {moved}"),
            format!("created observations {moved}"),
            format!("deleted observations {obs}"),
        ])
    );
    let log = b.log();
    let notes: BTreeMap<String, String> = ops(&log, "external-edit")
        .iter()
        .map(|e| {
            (
                e["doc"].as_str().unwrap().to_string(),
                e["note"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    let s = " (noticed when tavern watch started)";
    assert_eq!(
        notes,
        BTreeMap::from([
            (
                format!("tasks/{doomed}.md"),
                format!("deleted outside tavern{s}")
            ),
            (
                format!("tasks/{moved}.md"),
                format!("deleted outside tavern{s}")
            ),
            (
                format!("observations/{moved}.md"),
                format!("created outside tavern{s}")
            ),
            (
                format!("observations/{obs}.md"),
                format!("deleted outside tavern{s}")
            ),
            (
                format!("tasks/{obs}.md"),
                format!("created outside tavern{s}")
            ),
        ])
    );
    let alerts = ops(&log, "alert");
    assert_eq!(alerts.len(), 1);
    assert_eq!(
        alerts[0]["note"],
        format!(
            "tasks/{obs}.md: status 'open' is not a state of the workflow (pending, claimed, working, review, blocked, done, failed, cancelled) (edited outside tavern; not reverted, no source started)"
        )
    );
    // The deleted document's last content is in the log.
    let deleted = ops(&log, "external-edit")
        .into_iter()
        .find(|e| e["doc"] == format!("tasks/{doomed}.md"))
        .unwrap();
    assert!(
        deleted["diff"]
            .as_str()
            .unwrap()
            .contains("-title: Deleted by hand\n")
    );
    // The archive move was tavern's own: logged once, as its move.
    assert_eq!(ops(&log, "move").len(), 1);
    once(&b, &[]).0.ok();
    assert_eq!(lines_of(&b, "ran.txt").len(), 5);
    assert_eq!(b.log().len(), log.len());
}

#[test]
fn poll_mode_notices_changes() {
    let b = TestBoard::new();
    recorder(&b, "rec", "created, changed");
    let mut w = Watcher::start(&b, &["--poll", "100ms"]);
    assert_eq!(w.seen[0]["mode"], "polling every 100ms");
    let id = b.task("Polled", &[]);
    w.wait_finished(1);
    sh(&b, &format!("echo 'more' >> .tavern/tasks/{id}.md"));
    w.wait_finished(2);
    w.stop();
    assert_eq!(
        lines_of(&b, "ran.txt"),
        vec![format!("created {id}"), format!("changed {id}")]
    );
}

#[test]
fn a_burst_of_2000_documents_from_4_processes_is_seen_once_each() {
    let b = TestBoard::new();
    source(
        &b,
        "rec",
        "watch: [tasks]\non: [created]\nmax_parallel: 8\nrun: echo {id} >> ran.txt\n",
        "",
    );
    let mut w = Watcher::start(&b, &["--jobs", "8"]);
    let per = 500;
    let writers: Vec<std::process::Child> = (0..4)
        .map(|p| {
            let script = if p < 2 {
                // Through tavern, as agents do.
                format!(
                    "i=0; while [ $i -lt {per} ]; do \"$T\" new task --id burst-{p}-$i --title \"burst {p} $i\" >/dev/null || exit 1; i=$((i+1)); done"
                )
            } else {
                // Straight into the files, as an agent's editor or `cat >` does.
                format!(
                    "i=0; while [ $i -lt {per} ]; do printf -- '---\\nid: burst-{p}-%s\\ntitle: burst {p} %s\\nstatus: pending\\n---\\n' $i $i > .tavern/tasks/burst-{p}-$i.md || exit 1; i=$((i+1)); done"
                )
            };
            Command::new("sh")
                .arg("-c")
                .arg(script)
                .current_dir(b.root())
                .env("T", BIN)
                .env("USER", "tester")
                .spawn()
                .unwrap()
        })
        .collect();
    for mut c in writers {
        assert!(c.wait().unwrap().success());
    }
    let total = 4 * per;
    w.wait_finished(total);
    let (code, _) = w.stop();
    assert_eq!(code, 0);

    let expected: BTreeSet<String> = (0..4)
        .flat_map(|p| (0..per).map(move |i| format!("burst-{p}-{i}")))
        .collect();
    let ran = lines_of(&b, "ran.txt");
    assert_eq!(ran.len(), total, "every document once");
    assert_eq!(ran.iter().cloned().collect::<BTreeSet<_>>(), expected);

    let log = b.log();
    let mut per_doc: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for e in &log {
        per_doc
            .entry(e["doc"].as_str().unwrap().to_string())
            .or_default()
            .push(format!(
                "{}:{}",
                e["op"].as_str().unwrap(),
                e["to"].as_str().unwrap_or("")
            ));
    }
    for id in &expected {
        let p: usize = id[6..7].parse().unwrap();
        let made = if p < 2 { "create:" } else { "external-edit:" };
        assert_eq!(
            per_doc[&format!("tasks/{id}.md")],
            vec![
                made.to_string(),
                "activation:started".to_string(),
                "activation:ok".to_string()
            ],
            "{id}"
        );
    }
    let seqs: BTreeSet<u64> = log.iter().map(|e| e["seq"].as_u64().unwrap()).collect();
    assert_eq!(seqs.len(), log.len(), "no seq twice");
}

#[test]
fn solution_files_binary_and_oversized_ones_included_are_logged_once() {
    let b = TestBoard::new();
    let config = b
        .read("board.yaml")
        .replace("max_doc_bytes: 1048576", "max_doc_bytes: 1000");
    b.write("board.yaml", config);
    source(
        &b,
        "rec",
        "watch: [solutions/*/design.md, solutions/**/*.bin, solutions/*/big.txt]\non: [created, changed]\nrun: echo \"$TAVERN_EVENT $TAVERN_REGION $TAVERN_ID\" {path} >> ran.txt\n",
        "",
    );
    once(&b, &[]).0.ok();
    b.write("solutions/task-x/design.md", "# Design\n\nUse a trie.\n");
    b.write("solutions/task-x/notes.md", "not watched by rec\n");
    b.write("solutions/task-x/img/logo.bin", [0xff, 0xfe, 0x00, 0x81]);
    b.write("solutions/task-x/big.txt", "x".repeat(5000));
    once(&b, &[]).0.ok();
    let board = b.board().display().to_string();
    assert_eq!(
        sorted(lines_of(&b, "ran.txt")),
        sorted(vec![
            format!("created solutions task-x {board}/solutions/task-x/design.md"),
            format!("created solutions task-x {board}/solutions/task-x/img/logo.bin"),
            format!("created solutions task-x {board}/solutions/task-x/big.txt"),
        ])
    );
    let log = b.log();
    let by_doc: BTreeMap<String, Value> = ops(&log, "external-edit")
        .into_iter()
        .map(|e| (e["doc"].as_str().unwrap().to_string(), e))
        .collect();
    assert_eq!(by_doc.len(), 4, "notes.md is logged too: {by_doc:#?}");
    let s = " (noticed when tavern watch started)";
    let design = &by_doc["solutions/task-x/design.md"];
    assert_eq!(design["note"], format!("created outside tavern{s}"));
    assert_eq!(
        design["diff"],
        "@@ -0,0 +1,3 @@\n+# Design\n+\n+Use a trie.\n"
    );
    let bin = &by_doc["solutions/task-x/img/logo.bin"];
    assert_eq!(
        bin["note"],
        format!("created outside tavern (binary: no diff){s}")
    );
    assert!(bin.get("diff").is_none());
    let big = &by_doc["solutions/task-x/big.txt"];
    assert_eq!(
        big["note"],
        format!("created outside tavern (over the size limit: no diff){s}")
    );
    assert!(big.get("diff").is_none());

    // A change to the oversized file is seen by its stat alone.
    sh(&b, "echo more >> .tavern/solutions/task-x/big.txt");
    once(&b, &[]).0.ok();
    assert_eq!(lines_of(&b, "ran.txt").len(), 4);
    let last = ops(&b.log(), "external-edit").pop().unwrap();
    assert_eq!(last["doc"], "solutions/task-x/big.txt");
    assert_eq!(
        last["note"],
        format!("changed outside tavern (over the size limit: no diff){s}")
    );
    // Removing the task's whole folder is each file's deletion, once.
    std::fs::remove_dir_all(b.board().join("solutions/task-x")).unwrap();
    once(&b, &[]).0.ok();
    let deleted: Vec<Value> = ops(&b.log(), "external-edit")
        .into_iter()
        .filter(|e| e["note"].as_str().unwrap().starts_with("deleted"))
        .collect();
    assert_eq!(deleted.len(), 4);
}

#[test]
fn a_wiped_shadow_does_not_replay_the_board() {
    let b = TestBoard::new();
    recorder(&b, "rec", "created, changed");
    for i in 0..3 {
        b.task(&format!("Task {i}"), &[]);
    }
    once(&b, &[]).0.ok();
    let logged = b.log().len();
    // The pack of shadows is removed; the index of what the watcher saw stays.
    for e in std::fs::read_dir(b.board().join(".state/watch")).unwrap() {
        let e = e.unwrap();
        if e.file_name().to_string_lossy().starts_with("shadows-") {
            std::fs::remove_file(e.path()).unwrap();
        }
    }
    let (out, lines) = once(&b, &[]);
    out.ok();
    assert_eq!(b.log().len(), logged);
    assert_eq!(lines.iter().filter(|v| v["event"] == "change").count(), 0);
    // The shadows are back: a hand edit now has its diff again.
    let id = b.task("After", &[]);
    once(&b, &[]).0.ok();
    let text = b
        .read(&format!("tasks/{id}.md"))
        .replace("title: After", "title: Later");
    b.write(&format!("tasks/{id}.md"), text);
    once(&b, &[]).0.ok();
    let edit = ops(&b.log(), "external-edit").pop().unwrap();
    assert!(
        edit["diff"]
            .as_str()
            .unwrap()
            .contains("-title: After\n+title: Later\n")
    );
}

#[test]
fn directories_under_solutions_made_moved_and_removed_are_their_files() {
    let b = TestBoard::new();
    source(
        &b,
        "rec",
        // Parallel enough that no change waits, so none merges into a waiting one.
        "watch: [solutions]\non: [created, deleted]\nmax_parallel: 10\nrun: echo \"$TAVERN_EVENT\" {path} >> ran.txt\n",
        "",
    );
    b.write("solutions/task-1/README.md", "notes\n");
    once(&b, &[]).0.ok();
    let mut w = Watcher::start(&b, &["--jobs", "10"]);
    let logged = b.log().len();
    let external = |b: &TestBoard| -> Vec<(String, String)> {
        ops(&b.log()[logged..], "external-edit")
            .iter()
            .map(|e| {
                let note = e["note"].as_str().unwrap();
                let what = note.split(' ').next().unwrap().to_string();
                (what, e["doc"].as_str().unwrap().to_string())
            })
            .collect()
    };
    sh(
        &b,
        "mkdir -p .tavern/solutions/task-1/src/deep && echo a > .tavern/solutions/task-1/src/a.rs && echo b > .tavern/solutions/task-1/src/deep/b.rs",
    );
    w.wait_until("both files created", |_| external(&b).len() == 2);
    sh(
        &b,
        "mv .tavern/solutions/task-1/src .tavern/solutions/task-1/lib",
    );
    w.wait_until("the move seen", |_| external(&b).len() == 6);
    sh(&b, "rm -r .tavern/solutions/task-1/lib");
    w.wait_until("the removal seen", |_| external(&b).len() == 8);
    w.wait_finished(8);
    let (code, lines) = w.stop();
    assert_eq!(code, 0, "{lines:#?}");
    let s = |what: &str, doc: &str| (what.to_string(), format!("solutions/task-1/{doc}"));
    // In the order of the three steps; within a step, in whatever batches the events
    // came (a busy machine splits a move's events in two).
    let mut seen = external(&b);
    seen[2..6].sort();
    seen[6..8].sort();
    assert_eq!(
        seen,
        vec![
            s("created", "src/a.rs"),
            s("created", "src/deep/b.rs"),
            s("created", "lib/a.rs"),
            s("created", "lib/deep/b.rs"),
            s("deleted", "src/a.rs"),
            s("deleted", "src/deep/b.rs"),
            s("deleted", "lib/a.rs"),
            s("deleted", "lib/deep/b.rs"),
        ]
    );
    // A directory is never a document: no alert, and nothing about `src` or `lib` itself.
    assert_eq!(ops(&b.log()[logged..], "alert"), Vec::<Value>::new());
    let board = b.board().display().to_string();
    let ran = sorted(lines_of(&b, "ran.txt"));
    let expected: Vec<String> = external(&b)
        .into_iter()
        .map(|(what, doc)| format!("{what} {board}/{doc}"))
        .collect();
    assert_eq!(ran, sorted(expected));
}

#[test]
fn a_hand_made_file_edited_with_tavern_before_the_watcher_looks_is_two_changes_in_order() {
    let b = TestBoard::new();
    // One source per event: a source's second change merges into its waiting first one.
    recorder(&b, "made", "created");
    recorder(&b, "edited", "changed");
    recorder(&b, "reviewer", "transition:review");
    once(&b, &[]).0.ok();
    let hand = "---\nid: task-1\ntitle: Made by hand\nstatus: review\n---\nBody.\n";
    // Whether a live watcher looks between the two writes is up to timing; one that was
    // not running looks after both, always.
    let id = "task-1";
    let logged = b.log().len();
    // Both before the watcher looks: one shell command.
    sh(
        &b,
        &format!(
            "printf -- '{}' > .tavern/tasks/{id}.md && \"$T\" edit {id} --set priority=1 --as agent-1 >/dev/null",
            hand.replace("task-1", id).replace('\n', "\\n")
        ),
    );
    once(&b, &[]).0.ok();
    let log = b.log()[logged..].to_vec();
    let edit = &ops(&log, "edit")[0];
    let external = ops(&log, "external-edit");
    assert_eq!(external.len(), 1, "{log:#?}");
    let note = format!(
        "created outside tavern before tavern's write (seq {}) (noticed when tavern watch started)",
        edit["seq"],
    );
    assert_eq!(external[0]["note"], note);
    let hand = hand.replace("task-1", id);
    let expected_diff: String = std::iter::once("@@ -0,0 +1,6 @@\n".to_string())
        .chain(hand.lines().map(|l| format!("+{l}\n")))
        .collect();
    assert_eq!(external[0]["diff"], expected_diff);
    assert_eq!(edit["actor"], "agent-1");
    // The hand creation is a creation (no transition: nothing moved the status), and
    // agent-1's edit a change.
    let ran: Vec<String> = lines_of(&b, "ran.txt")
        .into_iter()
        .filter(|l| l.ends_with(id))
        .collect();
    assert_eq!(
        sorted(ran),
        vec![format!("changed {id}"), format!("created {id}")]
    );
    let by: BTreeMap<String, (String, Value)> = finished(&log)
        .iter()
        .map(|e| {
            let source = e["actor"].as_str().unwrap().to_string();
            (
                source,
                (e["event"].as_str().unwrap().to_string(), e["cause"].clone()),
            )
        })
        .collect();
    assert_eq!(
        by,
        BTreeMap::from([
            (
                "edited".to_string(),
                ("changed".to_string(), edit["seq"].clone())
            ),
            (
                "made".to_string(),
                ("created".to_string(), external[0]["seq"].clone())
            ),
        ])
    );
}

#[test]
fn a_log_replaced_by_a_checkout_is_followed_again_without_miscrediting_anyone() {
    let b = TestBoard::new();
    recorder(&b, "rec", "changed");
    b.run(&[
        "new", "task", "--title", "A", "--id", "task-a", "--as", "alice",
    ])
    .ok();
    let mut w = Watcher::start(&b, &[]);
    let log_path = b.board().join("log.yaml");
    let short = std::fs::read(&log_path).unwrap();
    let edit = |who: &str, n: u32| {
        b.run(&[
            "edit",
            "task-a",
            "--set",
            &format!("n={n}"),
            "--extra-field",
            "n",
            "--as",
            who,
        ])
        .ok();
    };
    edit("alice", 1);
    w.wait_finished(1);
    w.wait_until("alice's edits logged", |_| {
        ops(&b.log(), "activation").len() >= 2
    });
    // Let the watcher settle on its place in the long log before the checkouts.
    std::thread::sleep(Duration::from_millis(300));
    let long = std::fs::read(&log_path).unwrap();

    // `git checkout` back to the short log: bob's edit reuses seq 2.
    std::fs::write(&log_path, &short).unwrap();
    std::thread::sleep(Duration::from_millis(300));
    edit("bob", 3);
    w.wait_until("bob's edit handled", |seen| {
        seen.iter()
            .any(|v| v["event"] == "change" && v["actor"] == "bob")
    });
    // And to a longer log than the one the watcher read: its place lands mid-entry.
    std::thread::sleep(Duration::from_millis(300));
    std::fs::write(&log_path, &long).unwrap();
    std::thread::sleep(Duration::from_millis(300));
    edit("carol", 4);
    w.wait_until("carol's edit handled", |seen| {
        seen.iter()
            .any(|v| v["event"] == "change" && v["actor"] == "carol")
    });
    let (code, lines) = w.stop();
    assert_eq!(code, 0);
    let changes: Vec<(String, String)> = lines
        .iter()
        .filter(|v| v["event"] == "change" || v["event"] == "external-edit")
        .map(|v| {
            (
                v["event"].as_str().unwrap().to_string(),
                v["actor"].as_str().unwrap_or("").to_string(),
            )
        })
        .collect();
    let change = |who: &str| ("change".to_string(), who.to_string());
    assert_eq!(
        changes,
        vec![change("alice"), change("bob"), change("carol")],
        "{lines:#?}"
    );
    assert_eq!(ops(&b.log(), "external-edit"), Vec::<Value>::new());
    assert_eq!(
        lines_of(&b, "ran.txt"),
        vec!["changed task-a", "changed task-a", "changed task-a"]
    );
}

#[test]
fn a_document_tavern_wrote_and_someone_deleted_before_the_watcher_looked_is_logged_deleted_with_its_last_content()
 {
    let b = TestBoard::new();
    recorder(&b, "made", "created");
    recorder(&b, "gone", "deleted");
    let old = b.task("Seen by the watcher", &[]);
    once(&b, &[]).0.ok();

    // Made by tavern and removed by hand; changed by tavern and removed by hand.
    let new = b.task("Never seen", &[]);
    b.run(&["edit", &old, "--set", "priority=3"]).ok();
    let last_of_new = b.read(&format!("tasks/{new}.md"));
    let last_of_old = b.read(&format!("tasks/{old}.md"));
    std::fs::remove_file(b.board().join(format!("tasks/{new}.md"))).unwrap();
    std::fs::remove_file(b.board().join(format!("tasks/{old}.md"))).unwrap();
    once(&b, &[]).0.ok();

    let deleted: BTreeMap<String, Value> = ops(&b.log(), "external-edit")
        .into_iter()
        .map(|e| (e["doc"].as_str().unwrap().to_string(), e))
        .collect();
    assert_eq!(deleted.len(), 2, "{deleted:#?}");
    for (id, last) in [(&new, &last_of_new), (&old, &last_of_old)] {
        let e = &deleted[&format!("tasks/{id}.md")];
        assert_eq!(
            e["note"],
            "deleted outside tavern (noticed when tavern watch started)"
        );
        let removed: String = e["diff"]
            .as_str()
            .unwrap()
            .lines()
            .skip(1)
            .map(|l| format!("{}\n", l.strip_prefix('-').unwrap()))
            .collect();
        assert_eq!(&removed, last, "the diff removes what tavern wrote last");
    }
    assert_eq!(
        sorted(lines_of(&b, "ran.txt")),
        sorted(vec![
            format!("created {new}"),
            format!("deleted {new}"),
            format!("deleted {old}"),
        ])
    );
}

#[test]
fn a_directory_replaced_by_a_file_of_its_name_and_back_is_followed_file_by_file() {
    let b = TestBoard::new();
    b.write("solutions/task-1/README.md", "notes\n");
    once(&b, &[]).0.ok();
    let mut w = Watcher::start(&b, &[]);
    let logged = b.log().len();
    let s = ".tavern/solutions/task-1";
    let external = |b: &TestBoard| -> Vec<(String, String, String)> {
        ops(&b.log()[logged..], "external-edit")
            .iter()
            .map(|e| {
                (
                    e["doc"]
                        .as_str()
                        .unwrap()
                        .trim_start_matches("solutions/task-1/")
                        .to_string(),
                    e["note"].as_str().unwrap().to_string(),
                    e["diff"].as_str().unwrap_or("").to_string(),
                )
            })
            .collect()
    };
    let steps = [
        format!("mkdir {s}/g && echo 1 > {s}/g/1"),
        format!("rm -r {s}/g"),
        format!("echo a > {s}/g"),
        format!("echo b > {s}/g"),
        format!("rm {s}/g"),
        format!("mkdir {s}/g && echo in > {s}/g/in"),
        format!("echo more >> {s}/g/in"),
        format!("echo again > {s}/h"),
        // In one go: the file's deletion must not be lost in the directory's creation.
        format!("rm {s}/h && mkdir {s}/h && echo a > {s}/h/a"),
    ];
    for (step, n) in steps.iter().zip([1, 2, 3, 4, 5, 6, 7, 8, 10]) {
        sh(&b, step);
        w.wait_until(step, |_| external(&b).len() >= n);
    }
    let (code, _) = w.stop();
    assert_eq!(code, 0);
    let e =
        |doc: &str, note: &str, diff: &str| (doc.to_string(), note.to_string(), diff.to_string());
    let mut seen = external(&b);
    // Which of the last two is looked at first is up to the events' order.
    let last_two: BTreeSet<_> = seen.split_off(8).into_iter().collect();
    assert_eq!(
        last_two,
        BTreeSet::from([
            e("h", "deleted outside tavern", "@@ -1 +0,0 @@\n-again\n"),
            e("h/a", "created outside tavern", "@@ -0,0 +1 @@\n+a\n"),
        ])
    );
    assert_eq!(
        seen,
        vec![
            e("g/1", "created outside tavern", "@@ -0,0 +1 @@\n+1\n"),
            e("g/1", "deleted outside tavern", "@@ -1 +0,0 @@\n-1\n"),
            e("g", "created outside tavern", "@@ -0,0 +1 @@\n+a\n"),
            e("g", "changed outside tavern", "@@ -1 +1 @@\n-a\n+b\n"),
            e("g", "deleted outside tavern", "@@ -1 +0,0 @@\n-b\n"),
            e("g/in", "created outside tavern", "@@ -0,0 +1 @@\n+in\n"),
            e(
                "g/in",
                "changed outside tavern",
                "@@ -1 +1,2 @@\n in\n+more\n"
            ),
            e("h", "created outside tavern", "@@ -0,0 +1 @@\n+again\n"),
        ]
    );
    // What is there has its shadow; what is gone has none.
    let board = tavern::api::Board::open(&b.board()).unwrap();
    let shadow =
        |rel: &str| tavern::testing::watch_shadow(&board, &format!("solutions/task-1/{rel}"));
    assert_eq!(shadow("README.md").as_deref(), Some(&b"notes\n"[..]));
    assert_eq!(shadow("g/in").as_deref(), Some(&b"in\nmore\n"[..]));
    assert_eq!(shadow("h/a").as_deref(), Some(&b"a\n"[..]));
    for gone in ["g/1", "g", "h"] {
        assert_eq!(shadow(gone), None, "{gone}");
    }
    // Nothing but the watcher's state files is left in its directory (no temp file).
    let state = b.board().join(".state/watch");
    let mut names: Vec<String> = std::fs::read_dir(&state)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with('.') || n.starts_with("shadow"))
        .collect();
    names.sort();
    assert_eq!(names.len(), 1, "{names:?}");
    assert!(names[0].starts_with("shadows-"), "{names:?}");
}
