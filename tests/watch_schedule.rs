//! The order activations start in, and what `watch --once` says about how it went.

#![cfg(unix)]

use serde_json::Value;

use crate::util::watcher::{Watcher, finished, lines_of, once, ops, recorder, source};
use crate::util::{BIN, TestBoard};

#[test]
fn changes_of_one_batch_start_in_the_order_they_were_made() {
    let b = TestBoard::new();
    b.write(
        "control/sources/rec.md",
        "---\nname: rec\nwatch: [tasks]\non: [created]\nrun: echo \"$TAVERN_SEQ $TAVERN_ID\" >> ran.txt\n---\n",
    );
    once(&b, &[]).0.ok();
    // Made in an order that is not the order of their paths; handled in one batch.
    for id in ["task-c", "task-a", "task-b"] {
        b.task(id, &["--id", id]);
    }
    once(&b, &["--jobs", "1"]).0.ok();
    let seq = |id: &str| {
        ops(&b.log(), "create")
            .iter()
            .find(|e| e["doc"] == format!("tasks/{id}.md"))
            .unwrap()["seq"]
            .clone()
    };
    assert_eq!(
        lines_of(&b, "ran.txt"),
        ["task-c", "task-a", "task-b"]
            .iter()
            .map(|id| format!("{} {id}", seq(id)))
            .collect::<Vec<_>>()
    );
}

/// The `at` of a log entry, in milliseconds since the epoch.
fn at_ms(e: &Value) -> i64 {
    chrono::DateTime::parse_from_rfc3339(e["at"].as_str().unwrap())
        .unwrap()
        .timestamp_millis()
}

#[test]
fn a_source_is_not_triggered_by_its_own_writes() {
    let b = TestBoard::new();
    source(
        &b,
        "toucher",
        &format!(
            "watch: [tasks]\non: [created, changed]\nrun: echo \"$TAVERN_ID\" >> ran.txt && {BIN} edit \"$TAVERN_ID\" --set touched=done --extra-field touched\n"
        ),
        "",
    );
    let (out, _) = once(&b, &[]);
    out.ok();
    let id = b.task("Touch me", &[]);
    let (out, lines) = once(&b, &[]);
    out.ok();
    assert_eq!(lines_of(&b, "ran.txt"), vec![id.clone()]);
    assert!(
        b.read(&format!("tasks/{id}.md"))
            .contains("touched: done\n")
    );
    let edit = ops(&b.log(), "edit");
    assert_eq!(edit.len(), 1);
    assert_eq!(edit[0]["actor"], "toucher");
    let skipped: Vec<&Value> = lines.iter().filter(|v| v["event"] == "skipped").collect();
    assert_eq!(skipped.len(), 1);
    assert_eq!(skipped[0]["source"], "toucher");
    assert_eq!(skipped[0]["why"], "own write");
    let metrics = b.read("control/metrics.md");
    assert!(
        metrics.contains("| toucher | 1 | 1 | 0 | 0 | 0 | 0 | 1 |"),
        "{metrics}"
    );
}

#[test]
fn a_ping_pong_between_two_sources_is_stopped_by_the_loop_guard() {
    let b = TestBoard::new();
    let config = b.read("board.yaml").replace("max_chain: 8", "max_chain: 4");
    b.write("board.yaml", config);
    // Whose turn it is: a field of this board's own, which the sources' `when:` reads.
    b.declare_fields("tasks", &["turn"]);
    for (me, other) in [("ping", "pong"), ("pong", "ping")] {
        source(
            &b,
            me,
            &format!(
                "watch: [tasks]\non: [created, changed]\nwhen: turn={me}\nrun: echo \"{me} $TAVERN_CHAIN\" >> ran.txt && {BIN} edit \"$TAVERN_ID\" --set turn={other}\n"
            ),
            "",
        );
    }
    once(&b, &[]).0.ok();
    let id = b.task("Ball", &["--set", "turn=ping"]);
    let (out, _) = once(&b, &[]);
    // Something did not run: --once says so.
    out.code(1);
    assert_eq!(
        lines_of(&b, "ran.txt"),
        vec!["ping 1", "pong 2", "ping 3", "pong 4"]
    );
    let log = b.log();
    let alerts = ops(&log, "alert");
    assert_eq!(alerts.len(), 1, "{alerts:#?}");
    assert_eq!(alerts[0]["doc"], format!("tasks/{id}.md"));
    assert_eq!(
        alerts[0]["note"],
        format!(
            "loop guard: ping not started for tasks/{id}.md: it would be activation 5 of a chain that activations started (limit 4: watch.max_chain in board.yaml)"
        )
    );
    // The alert names the change that would have started it: pong's last edit.
    let last_edit = ops(&log, "edit").last().cloned().unwrap();
    assert_eq!(last_edit["actor"], "pong");
    assert_eq!(alerts[0]["cause"], last_edit["seq"]);
    assert!(b.read(&format!("tasks/{id}.md")).contains("turn: ping\n"));
}

#[test]
fn a_document_triggering_too_often_raises_one_alert() {
    let b = TestBoard::new();
    let config = b
        .read("board.yaml")
        .replace("max_per_doc: 20", "max_per_doc: 3");
    b.write("board.yaml", config);
    recorder(&b, "rec", "changed");
    let id = b.task("Hot", &[]);
    let mut w = Watcher::start(&b, &[]);
    let rel = format!("tasks/{id}.md");
    for i in 0..5 {
        b.run(&[
            "edit",
            &id,
            "--set",
            &format!("n={i}"),
            "--extra-field",
            "n",
        ])
        .ok();
        // Each edit is seen (and, for the first three, run) before the next one.
        w.wait_until("the edit to be handled", |seen| {
            let changes = seen
                .iter()
                .filter(|v| v["event"] == "change" && v["doc"] == rel.as_str())
                .count();
            let finished = seen.iter().filter(|v| v["event"] == "finished").count();
            changes > i && finished >= (i + 1).min(3)
        });
    }
    let (_, seen) = w.stop();
    assert_eq!(lines_of(&b, "ran.txt").len(), 3);
    let alerts = ops(&b.log(), "alert");
    assert_eq!(alerts.len(), 1, "{}", serde_json::to_string(&seen).unwrap());
    assert!(
        alerts[0]["note"]
            .as_str()
            .unwrap()
            .starts_with(&format!("loop guard: rec not started for tasks/{id}.md: the document started 3 activations within 10m")),
        "{}",
        alerts[0]["note"]
    );
}

#[test]
fn a_changed_source_takes_effect_without_a_restart() {
    let b = TestBoard::new();
    recorder(&b, "rec", "created");
    let mut w = Watcher::start(&b, &[]);
    let first = b.task("Before", &[]);
    w.wait_finished(1);
    // Now it listens for changes only, and only to urgent tasks.
    source(
        &b,
        "rec",
        "watch: [tasks]\non: [changed]\nwhen: priority<=1\nrun: echo \"$TAVERN_EVENT $TAVERN_ID\" >> ran.txt\n",
        "",
    );
    w.wait_for("the new source", |v| {
        v["event"] == "change" && v["doc"] == "control/sources/rec.md"
    });
    b.task("Not urgent, created", &[]);
    b.run(&["edit", &first, "--set", "priority=0"]).ok();
    w.wait_finished(2);
    // A broken source file is an alert; the last good version is gone with it.
    b.write("control/sources/rec.md", "---\nname: rec\nrun: [\n---\n");
    w.wait_for("the alert", |v| v["event"] == "alert");
    let (_, _) = w.stop();
    assert_eq!(
        lines_of(&b, "ran.txt"),
        vec![format!("created {first}"), format!("changed {first}")]
    );
    let alerts = ops(&b.log(), "alert");
    assert_eq!(alerts.len(), 1);
    assert!(
        alerts[0]["note"]
            .as_str()
            .unwrap()
            .starts_with("control/sources/rec.md: "),
        "{}",
        alerts[0]["note"]
    );
}

#[test]
fn once_exits_1_when_an_activation_fails_and_bad_flags_are_usage_errors() {
    let b = TestBoard::new();
    source(
        &b,
        "fails",
        "watch: [tasks]\nrun: echo oops >&2; exit 7\n",
        "",
    );
    once(&b, &[]).0.ok();
    let id = b.task("Fails", &[]);
    let (out, lines) = once(&b, &[]);
    out.code(1);
    let end = lines.iter().find(|v| v["event"] == "finished").unwrap();
    assert_eq!(end["result"], "failed");
    assert_eq!(end["exit"], 7);
    let output = end["note"]
        .as_str()
        .unwrap()
        .rsplit("output in ")
        .next()
        .unwrap()
        .to_string();
    assert_eq!(b.read(&output), "oops\n");
    assert!(
        b.read("control/metrics.md")
            .contains("| fails | 1 | 0 | 1 |")
    );
    assert_eq!(ops(&b.log(), "activation").len(), 2);
    assert_eq!(finished(&b.log())[0]["doc"], format!("tasks/{id}.md"));
    for bad in [
        &["watch", "--poll", "soon"][..],
        &["watch", "--jobs", "0"],
        &["watch", "--grace", "-1s"],
    ] {
        b.run(bad).code(2);
    }
}

#[test]
fn the_queue_runs_higher_priority_first_then_older() {
    let b = TestBoard::new();
    for (name, priority) in [("low", 0), ("high", 5)] {
        source(
            &b,
            name,
            &format!(
                "watch: [tasks]\non: [created]\npriority: {priority}\nrun: echo \"{name} $TAVERN_ID\" >> ran.txt\n"
            ),
            "",
        );
    }
    once(&b, &[]).0.ok();
    b.task("A", &["--id", "task-a"]);
    b.task("B", &["--id", "task-b"]);
    once(&b, &["--jobs", "1"]).0.ok();
    assert_eq!(
        lines_of(&b, "ran.txt"),
        vec!["high task-a", "high task-b", "low task-a", "low task-b"]
    );
}

#[test]
fn max_parallel_bounds_the_activations_of_a_source() {
    let b = TestBoard::new();
    source(
        &b,
        "par",
        "watch: [tasks]\non: [created]\nmax_parallel: 2\nrun: sleep 0.5\n",
        "",
    );
    once(&b, &[]).0.ok();
    for i in 0..4 {
        b.task(&format!("T{i}"), &[]);
    }
    once(&b, &["--jobs", "8"]).0.ok();
    // The most activations running at once, as the watcher logged their starts and ends.
    let mut edges: Vec<(i64, i32)> = ops(&b.log(), "activation")
        .iter()
        .map(|e| (at_ms(e), if e["to"] == "started" { 1 } else { -1 }))
        .collect();
    assert_eq!(edges.len(), 8);
    edges.sort_by_key(|&(t, d)| (t, d));
    let (mut now, mut most) = (0, 0);
    for (_, d) in edges {
        now += d;
        most = most.max(now);
    }
    assert_eq!(most, 2);
}

#[test]
fn a_cooldown_spaces_the_starts_of_a_source() {
    let b = TestBoard::new();
    source(
        &b,
        "cool",
        "watch: [tasks]\non: [created]\ncooldown: 1s\nrun: echo \"$TAVERN_ID\" >> ran.txt\n",
        "",
    );
    once(&b, &[]).0.ok();
    b.task("First", &[]);
    b.task("Second", &[]);
    once(&b, &[]).0.ok();
    assert_eq!(lines_of(&b, "ran.txt").len(), 2);
    let starts: Vec<i64> = ops(&b.log(), "activation")
        .iter()
        .filter(|e| e["to"] == "started")
        .map(at_ms)
        .collect();
    assert_eq!(starts.len(), 2);
    assert!(starts[1] - starts[0] >= 1000, "{starts:?}");
}
