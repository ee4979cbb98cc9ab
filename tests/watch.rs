//! Watch mode end to end: a real `tavern watch` on a real board, real child processes, and
//! writes made the ways agents and editors make them (`tavern new`, `cat >`, rename over
//! the old file, `rm`, `mv`). What is asserted is what a user relies on: each change is
//! logged once, each matching activation runs once, and the log says what happened.

#![cfg(unix)]

use std::collections::{BTreeMap, BTreeSet};
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::util::watcher::{Watcher, lines_of, once, ops, signal};
use crate::util::{BIN, TestBoard};

/// Writes a knowledge source.
fn source(b: &TestBoard, name: &str, front: &str, prompt: &str) {
    b.write(
        &format!("control/sources/{name}.md"),
        format!("---\nname: {name}\n{front}---\n{prompt}"),
    );
}

/// Runs a shell command in the project directory, as an agent's shell would.
fn sh(b: &TestBoard, script: &str) {
    let ok = Command::new("sh")
        .arg("-c")
        .arg(script)
        .current_dir(b.root())
        .env("T", BIN)
        .status()
        .expect("run sh");
    assert!(ok.success(), "sh -c {script}");
}

/// Replaces a document the way editors save: a new file renamed over the old one.
fn save_by_rename(b: &TestBoard, rel: &str, text: &str) {
    let tmp = b.board().join(format!("{rel}.new~"));
    std::fs::write(&tmp, text).unwrap();
    std::fs::rename(&tmp, b.board().join(rel)).unwrap();
}

/// A source that appends `$TAVERN_EVENT $TAVERN_ID` to ran.txt in the project.
fn recorder(b: &TestBoard, name: &str, on: &str) {
    source(
        b,
        name,
        &format!("watch: [tasks]\non: [{on}]\nrun: echo \"$TAVERN_EVENT $TAVERN_ID\" >> ran.txt\n"),
        "",
    );
}

fn sorted(mut v: Vec<String>) -> Vec<String> {
    v.sort();
    v
}

fn finished(log: &[Value]) -> Vec<Value> {
    ops(log, "activation")
        .into_iter()
        .filter(|e| e["to"] != "started")
        .collect()
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
fn a_source_is_not_triggered_by_its_own_writes() {
    let b = TestBoard::new();
    source(
        &b,
        "toucher",
        &format!(
            "watch: [tasks]\non: [created, changed]\nrun: echo \"$TAVERN_ID\" >> ran.txt && {BIN} edit \"$TAVERN_ID\" --set touched=done\n"
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
        b.run(&["edit", &id, "--set", &format!("n={i}")]).ok();
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
fn pause_holds_activations_and_resume_releases_them() {
    let b = TestBoard::new();
    recorder(&b, "rec", "created");
    once(&b, &[]).0.ok();
    let out = b.run(&["pause", "deploy", "in", "progress"]);
    out.ok().stdout_is("paused: deploy in progress\n");
    assert_eq!(b.read("control/PAUSE"), "deploy in progress\n");
    b.run(&["pause", "deploy", "in", "progress"])
        .ok()
        .stdout_is("already paused: deploy in progress\n");
    let id = b.task("Waits for the pause", &[]);

    let (out, lines) = once(&b, &[]);
    out.code(5);
    assert_eq!(lines_of(&b, "ran.txt"), Vec::<String>::new());
    let queued: Vec<&Value> = lines.iter().filter(|v| v["event"] == "queued").collect();
    assert_eq!(queued.len(), 1);
    let schedule = b.read("control/schedule.md");
    assert!(
        schedule.contains("**Paused**: deploy in progress"),
        "{schedule}"
    );
    assert!(
        schedule.contains(&format!("| 1 | rec | 0 | tasks/{id}.md | created |")),
        "{schedule}"
    );
    assert!(schedule.contains("| resume |"), "{schedule}");

    b.run(&["resume"])
        .ok()
        .stdout_is("resumed: claims and activations start again\n");
    b.run(&["resume"])
        .ok()
        .stdout_is("not paused; nothing changed\n");
    let (out, _) = once(&b, &[]);
    out.ok();
    assert_eq!(lines_of(&b, "ran.txt"), vec![format!("created {id}")]);
    let log = b.log();
    let pause = ops(&log, "pause");
    assert_eq!(pause.len(), 1);
    assert_eq!(pause[0]["doc"], "control/PAUSE");
    assert_eq!(pause[0]["note"], "deploy in progress");
    assert_eq!(pause[0]["actor"], "tester");
    let resume = ops(&log, "resume");
    assert_eq!(resume.len(), 1);
    assert_eq!(resume[0]["note"], "was paused: deploy in progress");
}

#[test]
fn a_live_watcher_starts_nothing_while_paused() {
    let b = TestBoard::new();
    recorder(&b, "rec", "created");
    let mut w = Watcher::start(&b, &[]);
    b.run(&["pause"]).ok();
    let id = b.task("Held", &[]);
    w.wait_for("the activation to be queued", |v| v["event"] == "queued");
    // Paused: the queued activation waits (a resume is what releases it, below).
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(w.count("started"), 0);
    b.run(&["resume"]).ok();
    w.wait_finished(1);
    w.stop();
    assert_eq!(lines_of(&b, "ran.txt"), vec![format!("created {id}")]);
}

/// Is process `pid` gone (or a zombie nobody reaped yet)?
fn gone(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat
            .rsplit(')')
            .next()
            .is_some_and(|rest| rest.trim_start().starts_with('Z')),
    }
}

#[test]
fn a_timeout_kills_the_whole_process_group() {
    let b = TestBoard::new();
    source(
        &b,
        "hang",
        "watch: [tasks]\ntimeout: 1s\nrun: sleep 120 & echo $! > bg.pid; wait\n",
        "",
    );
    once(&b, &[]).0.ok();
    let id = b.task("Hangs", &[]);
    let started = Instant::now();
    let (out, lines) = once(&b, &[]);
    out.code(1);
    assert!(started.elapsed() < Duration::from_secs(60));
    let bg: u32 = lines_of(&b, "bg.pid")[0].parse().unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    while !gone(bg) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(gone(bg), "the command's background child {bg} survived");
    assert_eq!(lines.iter().filter(|v| v["event"] == "timeout").count(), 1);
    let ends = finished(&b.log());
    assert_eq!(ends.len(), 1);
    assert_eq!(ends[0]["to"], "timed-out");
    assert_eq!(ends[0]["doc"], format!("tasks/{id}.md"));
    assert!(ends[0].get("exit").is_none());
    assert!(
        ends[0]["note"].as_str().unwrap().starts_with(
            "did not finish within its timeout of 1s: its process group was killed after"
        ),
        "{}",
        ends[0]["note"]
    );
}

#[test]
fn sigterm_lets_running_activations_finish_within_the_grace_period() {
    let b = TestBoard::new();
    source(
        &b,
        "slow",
        "watch: [tasks]\nrun: sleep 1; echo \"$TAVERN_ID\" >> ran.txt\n",
        "",
    );
    let mut w = Watcher::start(&b, &["--grace", "30s"]);
    let id = b.task("Slow", &[]);
    w.wait_for("the activation to start", |v| v["event"] == "started");
    signal(w.pid(), "TERM");
    w.wait_for("the watcher to stop", |v| v["event"] == "stopped");
    let (code, _) = w.stop_after_exit();
    assert_eq!(code, 0);
    assert_eq!(lines_of(&b, "ran.txt"), vec![id]);
    assert_eq!(finished(&b.log())[0]["to"], "ok");
}

#[test]
fn sigterm_kills_what_outlives_the_grace_period() {
    let b = TestBoard::new();
    source(&b, "stuck", "watch: [tasks]\nrun: sleep 120\n", "");
    let mut w = Watcher::start(&b, &["--grace", "200ms"]);
    let id = b.task("Stuck", &[]);
    w.wait_for("the activation to start", |v| v["event"] == "started");
    let asked = Instant::now();
    let (code, seen) = w.stop();
    assert_eq!(code, 0);
    assert!(asked.elapsed() < Duration::from_secs(30));
    let end = seen.iter().find(|v| v["event"] == "finished").unwrap();
    assert_eq!(end["result"], "killed");
    let ends = finished(&b.log());
    assert_eq!(ends.len(), 1);
    assert_eq!(ends[0]["to"], "killed");
    assert_eq!(ends[0]["doc"], format!("tasks/{id}.md"));
    // The stopped watcher says so in schedule.md.
    assert!(
        b.read("control/schedule.md")
            .contains("`tavern watch` is not running")
    );
}

#[test]
fn a_hostile_title_or_file_name_never_reaches_a_shell() {
    let b = TestBoard::new();
    source(
        &b,
        "echo",
        "watch: [tasks, solutions]\nrun: printf '%s|%s|%s\\n' {id} {path} \"$TAVERN_DOC\" >> ran.txt\n",
        "",
    );
    once(&b, &[]).0.ok();
    let id = b.task(
        "$(touch pwned1)\"; touch pwned2; echo \"`touch pwned3`",
        &[],
    );
    std::fs::create_dir_all(b.board().join(format!("solutions/{id}"))).unwrap();
    let nasty = "a b'; touch pwned4; echo '$(touch pwned5).md";
    b.write(&format!("solutions/{id}/{nasty}"), "notes\n");
    let (out, _) = once(&b, &[]);
    out.ok();
    for p in ["pwned1", "pwned2", "pwned3", "pwned4", "pwned5"] {
        assert!(!b.root().join(p).exists(), "{p} was created");
    }
    let board = b.board().display().to_string();
    let ran = sorted(lines_of(&b, "ran.txt"));
    assert_eq!(
        ran,
        sorted(vec![
            format!("{id}|{board}/tasks/{id}.md|{board}/tasks/{id}.md"),
            format!("{id}|{board}/solutions/{id}/{nasty}|{board}/solutions/{id}/{nasty}"),
        ])
    );
}

#[test]
fn children_get_the_environment_and_the_prompt() {
    let b = TestBoard::new();
    source(
        &b,
        "env",
        "watch: [tasks]\non: [transition:review]\nrun: env | grep '^TAVERN_' | sort > env.txt; cat > prompt.txt\n",
        "Review $TAVERN_ID.\nBe kind.\n",
    );
    let id = b.task("Review me", &[]);
    for t in ["claim", "start"] {
        b.run(&[t, &id]).ok();
    }
    once(&b, &[]).0.ok();
    b.run(&["submit", &id]).ok();
    once(&b, &[]).0.ok();
    let submit = ops(&b.log(), "transition")
        .into_iter()
        .find(|e| e["to"] == "review")
        .unwrap();
    let board = b.board().display().to_string();
    assert_eq!(
        lines_of(&b, "env.txt"),
        vec![
            format!("TAVERN_AGENT=env"),
            format!("TAVERN_BOARD={board}"),
            "TAVERN_CHAIN=1".to_string(),
            format!("TAVERN_DOC={board}/tasks/{id}.md"),
            "TAVERN_EVENT=transition:review".to_string(),
            format!("TAVERN_ID={id}"),
            "TAVERN_REGION=tasks".to_string(),
            format!("TAVERN_SEQ={}", submit["seq"]),
        ]
    );
    assert_eq!(
        std::fs::read_to_string(b.root().join("prompt.txt")).unwrap(),
        "Review $TAVERN_ID.\nBe kind.\n"
    );
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
fn one_watcher_per_board() {
    let b = TestBoard::new();
    let w = Watcher::start(&b, &[]);
    let out = b.run(&["watch"]);
    out.code(3).stderr_has(&format!(
        "another `tavern watch` is running on this board (pid {})",
        w.pid()
    ));
    w.stop();
    b.run(&["watch", "--once"]).ok();
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
    std::fs::remove_dir_all(b.board().join(".state/watch/shadow")).unwrap();
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

/// The `at` of a log entry, in milliseconds since the epoch.
fn at_ms(e: &Value) -> i64 {
    chrono::DateTime::parse_from_rfc3339(e["at"].as_str().unwrap())
        .unwrap()
        .timestamp_millis()
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

#[test]
fn pause_and_resume_speak_json_and_refuse_unprintable_reasons() {
    let b = TestBoard::new();
    let v = b.run(&["pause", "--json", "release", "freeze"]).ok().json();
    assert_eq!(v["paused"], true);
    assert_eq!(v["reason"], "release freeze");
    let first = v["seq"].as_u64().unwrap();
    // A new reason replaces the old one, and is logged.
    let v = b.run(&["pause", "--json", "hotfix"]).ok().json();
    assert_eq!(v["reason"], "hotfix");
    assert_eq!(v["seq"].as_u64(), Some(first + 1));
    assert_eq!(b.read("control/PAUSE"), "hotfix\n");
    b.run(&["claim", "--next"])
        .code(5)
        .stderr_has("the board is paused: hotfix");
    b.run(&["pause", "bad\u{7}bell"])
        .code(2)
        .stderr_is("error: the reason must be printable text\n");
    assert_eq!(b.read("control/PAUSE"), "hotfix\n");
    let v = b.run(&["resume", "--json"]).ok().json();
    assert_eq!(v, serde_json::json!({"paused": false, "seq": first + 2}));
    let v = b.run(&["resume", "--json"]).ok().json();
    assert_eq!(v, serde_json::json!({"paused": false, "seq": null}));
    let v = b.run(&["pause", "--json", "--as", "ops"]).ok().json();
    assert_eq!(v["reason"], "paused by ops");
    let log = b.log();
    assert_eq!(
        log.iter()
            .map(|e| e["op"].as_str().unwrap())
            .collect::<Vec<_>>(),
        vec!["pause", "pause", "resume", "pause"]
    );
}

/// Sets a file's (or directory's) modification time to `age` ago.
fn age(path: &std::path::Path, age: Duration) {
    let when = std::time::SystemTime::now() - age;
    std::fs::File::open(path)
        .and_then(|f| f.set_modified(when))
        .unwrap_or_else(|e| panic!("set the mtime of {}: {e}", path.display()));
}

/// A board whose run outputs are removed after an hour (board.yaml `watch.keep_runs`).
fn board_keeping_runs_for_an_hour() -> TestBoard {
    let b = TestBoard::new();
    let config = b
        .read("board.yaml")
        .replace("keep_runs: 7d", "keep_runs: 1h");
    b.write("board.yaml", config);
    b
}

#[test]
fn run_outputs_older_than_keep_runs_are_removed_by_the_watcher_and_by_sweep() {
    let b = board_keeping_runs_for_an_hour();
    source(&b, "say", "watch: [tasks]\nrun: echo said {id}\n", "");
    once(&b, &[]).0.ok();

    let runs = b.board().join(".state/runs");
    std::fs::create_dir_all(runs.join("kept-dir")).unwrap();
    for name in ["old-activation.log", "check-t-1-1-old.log", "recent.log"] {
        std::fs::write(runs.join(name), "output\n").unwrap();
    }
    age(
        &runs.join("old-activation.log"),
        Duration::from_secs(2 * 3600),
    );
    age(
        &runs.join("check-t-1-1-old.log"),
        Duration::from_secs(25 * 3600),
    );
    age(&runs.join("recent.log"), Duration::from_secs(50 * 60));
    // Only regular files are removed: a directory someone put there stays.
    age(&runs.join("kept-dir"), Duration::from_secs(9 * 3600));

    let id = b.task("Say it", &[]);
    let (out, lines) = once(&b, &[]);
    out.ok();
    let started: Vec<&Value> = lines.iter().filter(|l| l["event"] == "started").collect();
    assert_eq!(started.len(), 1, "{lines:?}");
    let output = started[0]["output"].as_str().unwrap().to_string();
    assert_eq!(b.read(&output), format!("said {id}\n"));

    let names = |b: &TestBoard| -> BTreeSet<String> {
        std::fs::read_dir(b.board().join(".state/runs"))
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect()
    };
    let activation = output.trim_start_matches(".state/runs/").to_string();
    assert_eq!(
        names(&b),
        BTreeSet::from([activation.clone(), "kept-dir".into(), "recent.log".into()])
    );

    // `sweep` does the same for boards no watcher runs on; it says what it removed.
    age(&runs.join("recent.log"), Duration::from_secs(61 * 60));
    b.run(&["sweep"])
        .ok()
        .stdout_is("removed 1 run output older than 1h from .state/runs/\n");
    assert_eq!(names(&b), BTreeSet::from([activation, "kept-dir".into()]));
    let json = b.run(&["sweep", "--json"]).ok().json();
    assert_eq!(json["runs_removed"], 0);
}

#[test]
fn sweep_spares_the_output_of_a_quiet_activation_that_still_runs() {
    let b = board_keeping_runs_for_an_hour();
    source(&b, "quiet", "watch: [tasks]\nrun: sleep 30\n", "");
    let mut w = Watcher::start(&b, &["--grace", "200ms"]);
    b.task("Think long", &[]);
    let started = w.wait_for("the activation to start", |v| v["event"] == "started");
    let output = b.board().join(started["output"].as_str().unwrap());
    // Silent for longer than keep_runs, as a long think without output is.
    age(&output, Duration::from_secs(2 * 3600));
    let stale = b.board().join(".state/runs/finished-long-ago.log");
    std::fs::write(&stale, "output\n").unwrap();
    age(&stale, Duration::from_secs(2 * 3600));

    let json = b.run(&["sweep", "--json"]).ok().json();
    assert_eq!(json["runs_removed"], 1);
    assert!(
        output.exists(),
        "the running activation's output was removed"
    );
    assert!(!stale.exists());
    let (code, _) = w.stop();
    assert_eq!(code, 0);
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
fn a_board_removed_under_the_watcher_stops_it_and_nothing_is_made_in_its_place() {
    let b = TestBoard::new();
    source(&b, "slow", "watch: [tasks]\nrun: sleep 30\n", "");
    b.task("Before", &[]);
    let mut w = Watcher::start(&b, &[]);
    b.task("Starts a sleeper", &[]);
    let started = w.wait_for("the sleeper", |v| v["event"] == "started");
    let pid = started["pid"].as_u64().unwrap();
    std::fs::rename(b.board(), b.root().join("moved-away")).unwrap();
    assert_eq!(w.wait_exit(), 4, "{}", w.dump());
    // (A write racing the removal may warn first.)
    let stderr = w.stderr();
    let (last, before) = stderr
        .trim_end()
        .lines()
        .collect::<Vec<_>>()
        .split_last()
        .map(|(l, b)| (l.to_string(), b.to_vec()))
        .unwrap();
    assert!(
        before.iter().all(|l| l.starts_with("warning: ")),
        "{stderr}"
    );
    let error: Value = serde_json::from_str(&last).unwrap();
    assert_eq!(
        error["error"]["message"],
        format!(
            "board {} not found\nhint: it was removed or moved away while `tavern watch` ran (a board made in its place since is another board: start a watcher for it); the watcher stopped without writing anything more and killed the 1 activation that ran",
            b.board().display()
        )
    );
    assert_eq!(error["error"]["code"], 4);
    assert!(
        !b.board().exists(),
        "the watcher made a new board directory: {:?}",
        find_all(&b.board())
    );
    // The activation's process group is gone (once init has reaped what was the
    // watcher's child).
    let end = Instant::now() + Duration::from_secs(10);
    loop {
        let alive = Command::new("sh")
            .arg("-c")
            .arg(format!("kill -0 -- -{pid} 2>/dev/null"))
            .status()
            .unwrap();
        if !alive.success() {
            break;
        }
        assert!(Instant::now() < end, "the activation {pid} still runs");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn a_cleaned_state_directory_does_not_let_a_second_watcher_in() {
    let b = TestBoard::new();
    recorder(&b, "rec", "created");
    let by_hand = b.task("Edited by hand after the clean", &[]);
    let by_tavern = b.task("Edited with tavern after the clean", &[]);
    let w = Watcher::start(&b, &[]);
    std::fs::remove_dir_all(b.board().join(".state")).unwrap();
    // The first watcher notices within a second and locks the board again.
    let end = Instant::now() + Duration::from_secs(60);
    while !w.stderr().contains("locked the board again") {
        assert!(Instant::now() < end, "no warning: {}", w.stderr());
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(
        w.stderr(),
        "warning: .state/ was removed under the watcher (git clean?): locked the board again\n"
    );
    b.run(&["watch", "--once"])
        .code(3)
        .stderr_is(&format!(
            "error: .state/locks/watch.lock: another `tavern watch` is running on this board (pid {}); one watcher per board\n",
            w.pid()
        ));
    let mut w = w;
    // The shadows went with .state/: existing documents are still not new ones.
    sh(&b, &format!("echo more >> .tavern/tasks/{by_hand}.md"));
    b.run(&["edit", &by_tavern, "--set", "priority=0"]).ok();
    w.wait_until("both edits seen", |seen| {
        seen.iter().filter(|v| v["event"] == "change").count() >= 2
    });
    let id = b.task("Seen once", &[]);
    w.wait_finished(1);
    let (code, _) = w.stop();
    assert_eq!(code, 0);
    assert_eq!(lines_of(&b, "ran.txt"), vec![format!("created {id}")]);
    let hand = ops(&b.log(), "external-edit");
    assert_eq!(hand.len(), 1, "{hand:#?}");
    assert_eq!(hand[0]["doc"], format!("tasks/{by_hand}.md"));
    assert_eq!(
        hand[0]["note"],
        "changed outside tavern (its last content was not kept: no diff)"
    );
}

fn find_all(dir: &std::path::Path) -> Vec<String> {
    let out = Command::new("find").arg(dir).output().unwrap();
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(str::to_string)
        .collect()
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
        b.run(&["edit", "task-a", "--set", &format!("n={n}"), "--as", who])
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
fn a_symlinked_pause_file_pauses_but_is_never_read() {
    let b = TestBoard::new();
    let secret = b.root().join("secret.txt");
    std::fs::write(&secret, "password=hunter2\n").unwrap();
    std::os::unix::fs::symlink(&secret, b.board().join("control/PAUSE")).unwrap();
    let why = "control/PAUSE is not a regular file (a symbolic link?): it pauses the board, but tavern does not read it";
    b.run(&["claim", "--next"]).code(5).stderr_is(&format!(
        "error: the board is paused: {why}\nhint: `tavern resume` lifts the pause\n"
    ));
    let v = b.run(&["resume", "--json"]).ok().json();
    assert!(v["seq"].is_u64(), "{v}");
    let resume = ops(&b.log(), "resume").pop().unwrap();
    assert_eq!(resume["note"], "was paused: ");
    assert!(!b.board().join("control/PAUSE").exists());
    // The link went, not its target.
    assert_eq!(
        std::fs::read_to_string(&secret).unwrap(),
        "password=hunter2\n"
    );
    let log = std::fs::read_to_string(b.board().join("log.yaml")).unwrap();
    assert!(!log.contains("hunter2"), "{log}");
}

#[test]
fn an_activation_left_running_by_a_killed_watcher_is_logged_as_lost_at_the_next_start() {
    let b = TestBoard::new();
    source(&b, "slow", "watch: [tasks]\nrun: sleep 30\n", "");
    let mut w = Watcher::start(&b, &[]);
    let id = b.task("Starts a sleeper", &[]);
    let started = w.wait_for("the sleeper", |v| v["event"] == "started");
    let pid = started["pid"].as_u64().unwrap();
    // Past the watcher's 100 ms save of what it handled.
    std::thread::sleep(Duration::from_millis(500));
    signal(w.pid(), "KILL");
    let _ = w.stop_after_exit();

    let (out, lines) = once(&b, &[]);
    out.ok();
    let lost = ops(&b.log(), "activation")
        .into_iter()
        .filter(|e| e["to"] == "lost")
        .collect::<Vec<_>>();
    assert_eq!(lost.len(), 1, "{:#?}", b.log());
    assert_eq!(lost[0]["actor"], "slow");
    assert_eq!(lost[0]["doc"], format!("tasks/{id}.md"));
    assert_eq!(lost[0]["cause"], started["cause"]);
    let note = lost[0]["note"].as_str().unwrap();
    assert!(
        note.starts_with(&format!(
            "its end was not seen: the watcher that started it stopped without waiting (killed?); pid {pid} may still run; output in .state/runs/"
        )),
        "{note}"
    );
    // Not this run's activation: it ran nothing and failed nothing.
    let stopped = lines.iter().find(|l| l["event"] == "stopped").unwrap();
    assert_eq!(
        (stopped["ran"].as_u64(), stopped["failed"].as_u64()),
        (Some(0), Some(0))
    );
    // Logged once: the next start has nothing left to say.
    once(&b, &[]).0.ok();
    let again = ops(&b.log(), "activation")
        .into_iter()
        .filter(|e| e["to"] == "lost")
        .count();
    assert_eq!(again, 1);
    let _ = Command::new("sh")
        .arg("-c")
        .arg(format!("kill -s KILL -- -{pid}"))
        .status();
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
fn a_board_swapped_for_a_new_one_stops_the_watcher_of_the_old_one() {
    let b = TestBoard::new();
    let mut w = Watcher::start(&b, &[]);
    std::fs::rename(b.board(), b.root().join("old-board")).unwrap();
    b.run(&["init"]).ok();
    assert_eq!(w.wait_exit(), 4, "{}", w.dump());
    let stderr = w.stderr();
    assert!(
        stderr.contains(&format!("board {} not found", b.board().display())),
        "{stderr}"
    );
    // A watcher for the new board starts: nothing holds its lock.
    let w = Watcher::start(&b, &[]);
    assert_eq!(w.stop().0, 0);
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
    // No shadow of what is gone is left behind, nor a temp file.
    let shadow = b.board().join(".state/watch/shadow/solutions/task-1");
    let left: BTreeSet<String> = find_all(&shadow)
        .into_iter()
        .map(|p| {
            p.trim_start_matches(&shadow.display().to_string())
                .to_string()
        })
        .collect();
    assert_eq!(
        left,
        BTreeSet::from([
            "".to_string(),
            "/README.md".into(),
            "/g".into(),
            "/g/in".into(),
            "/h".into(),
            "/h/a".into()
        ])
    );
}

#[test]
fn a_pause_directory_pauses_and_resume_removes_it_only_when_empty() {
    let b = TestBoard::new();
    let pause = b.board().join("control/PAUSE");
    std::fs::create_dir(&pause).unwrap();
    std::fs::write(pause.join("notes.txt"), "why we stopped\n").unwrap();
    b.run(&["claim", "--next"])
        .code(5)
        .stderr_has("control/PAUSE is not a regular file");
    let before = b.log().len();
    b.run(&["resume"]).code(3).stderr_is(
        "error: control/PAUSE: cannot resume: control/PAUSE is a directory with files in it; \
         move them elsewhere and remove the directory, which is what pauses the board\n",
    );
    assert_eq!(
        std::fs::read_to_string(pause.join("notes.txt")).unwrap(),
        "why we stopped\n",
        "nothing inside was removed"
    );
    assert_eq!(b.log().len(), before, "a refused resume logs nothing");

    // `pause` cannot write its reason over it either.
    b.run(&["pause", "deploy"])
        .code(3)
        .stderr_has("cannot pause: control/PAUSE is a directory with files in it");
    assert_eq!(b.log().len(), before);

    std::fs::remove_file(pause.join("notes.txt")).unwrap();
    b.run(&["resume"]).ok();
    assert!(!pause.exists());
    assert_eq!(ops(&b.log(), "resume").len(), 1);
    b.run(&["claim", "--next"]).code(4);
    // An empty one makes way for the reason.
    std::fs::create_dir(&pause).unwrap();
    b.run(&["pause", "deploy"]).ok();
    assert_eq!(b.read("control/PAUSE"), "deploy\n");
}

#[test]
fn sweep_never_follows_a_symlinked_runs_directory_nor_blocks_on_a_fifo() {
    let b = board_keeping_runs_for_an_hour();
    let elsewhere = b.root().join("elsewhere");
    std::fs::create_dir_all(&elsewhere).unwrap();
    std::fs::write(elsewhere.join("notes.txt"), "keep me\n").unwrap();
    age(&elsewhere.join("notes.txt"), Duration::from_secs(3 * 3600));
    let state = b.board().join(".state");
    std::fs::create_dir_all(state.join("watch")).unwrap();
    std::os::unix::fs::symlink(&elsewhere, state.join("runs")).unwrap();
    // A FIFO where the record of running activations is: read, it would never end.
    let fifo = state.join("watch/running");
    assert!(
        Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap()
            .success()
    );
    let mut child = b
        .cmd(&["sweep"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("sweep blocked on the FIFO");
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(3));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "error: .state/runs: is a symbolic link or not a directory: run outputs are written and removed only in a real directory; remove it and tavern makes one\n"
    );
    assert_eq!(
        std::fs::read_to_string(elsewhere.join("notes.txt")).unwrap(),
        "keep me\n"
    );
}

/// Copies a directory tree (files and directories only), for putting watch state back.
fn copy_tree(from: &std::path::Path, to: &std::path::Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_tree(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).unwrap();
        }
    }
}

#[test]
fn a_watcher_killed_before_saving_a_handled_change_does_not_start_its_activation_twice() {
    let b = TestBoard::new();
    recorder(&b, "rec", "created");
    once(&b, &[]).0.ok();
    let made = b.task("Made with tavern", &[]);
    b.write(
        "tasks/t-by-hand.md",
        "---\nid: t-by-hand\ntitle: Written by hand\nstatus: pending\n---\n",
    );
    // The watcher's state before it handled the two changes: what a watcher killed right
    // after starting their activations, before it saved anything, leaves behind.
    let state = b.board().join(".state/watch");
    let before = b.root().join("state-before");
    copy_tree(&state, &before);
    once(&b, &[]).0.ok();
    assert_eq!(
        sorted(lines_of(&b, "ran.txt")),
        sorted(vec![format!("created {made}"), "created t-by-hand".into()])
    );
    std::fs::remove_dir_all(&state).unwrap();
    copy_tree(&before, &state);

    let (out, lines) = once(&b, &[]);
    out.ok();
    let skipped: Vec<(String, String)> = lines
        .iter()
        .filter(|l| l["event"] == "skipped")
        .map(|l| {
            assert_eq!(l["why"], "already started", "{l}");
            (
                l["source"].as_str().unwrap().into(),
                l["doc"].as_str().unwrap().into(),
            )
        })
        .collect();
    assert_eq!(
        sorted(skipped.iter().map(|(s, d)| format!("{s} {d}")).collect()),
        sorted(vec![
            format!("rec tasks/{made}.md"),
            "rec tasks/t-by-hand.md".into()
        ]),
        "{lines:#?}"
    );
    assert!(!lines.iter().any(|l| l["event"] == "started"), "{lines:#?}");
    assert_eq!(lines_of(&b, "ran.txt").len(), 2, "each ran once");
    let started = ops(&b.log(), "activation")
        .into_iter()
        .filter(|e| e["to"] == "started")
        .count();
    assert_eq!(started, 2);
    // The hand edit was logged once, not again by the second watcher.
    assert_eq!(ops(&b.log(), "external-edit").len(), 1);
    // Handled now: a further start has nothing to skip or run.
    let (_, lines) = once(&b, &[]);
    assert!(
        !lines
            .iter()
            .any(|l| l["event"] == "skipped" || l["event"] == "started"),
        "{lines:#?}"
    );
}

#[test]
fn a_change_after_a_kill_is_not_taken_for_one_the_killed_watcher_had_handled() {
    let b = TestBoard::new();
    source(
        &b,
        "rec",
        "watch: [solutions]\nrun: echo \"$TAVERN_EVENT\" {path} >> ran.txt\n",
        "",
    );
    once(&b, &[]).0.ok();
    let mut w = Watcher::start(&b, &[]);
    // Binary: its external edits are logged without a diff, so no diff tells them apart.
    b.write("solutions/t-1/blob.bin", b"v1\xff\xfe");
    let seen = w.wait_for("the external edit", |v| {
        v["event"] == "external-edit" && v["doc"] == "solutions/t-1/blob.bin"
    });
    let seq = seen["seq"].as_u64().unwrap().to_string();
    w.wait_for("the activation to end", |v| v["event"] == "finished");
    // Killed once it has recorded the change as handled, but with its log cursor still
    // before its own entries (its appends do not wake it).
    // Either it knows the entry as its own, or its saved cursor is past it.
    let seq: u64 = seq.parse().unwrap();
    let own = b.board().join(".state/watch/own");
    let cursor = b.board().join(".state/watch/cursor");
    let recorded = || {
        let own = std::fs::read_to_string(&own).unwrap_or_default();
        let read_up_to: u64 = std::fs::read_to_string(&cursor)
            .ok()
            .and_then(|t| t.split_whitespace().nth(1)?.parse().ok())
            .unwrap_or(0);
        own.lines().any(|l| l == seq.to_string()) || read_up_to >= seq
    };
    let deadline = Instant::now() + Duration::from_secs(20);
    while !recorded() {
        assert!(
            Instant::now() < deadline,
            "the handled change was never recorded"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    signal(w.pid(), "KILL");
    w.wait_exit();

    b.write("solutions/t-1/blob.bin", b"v2\xff\xfd\xfd");
    let (out, lines) = once(&b, &[]);
    out.ok();
    assert!(
        lines.iter().any(|l| l["event"] == "external-edit"),
        "the second edit was not logged: {lines:#?}"
    );
    let edits = ops(&b.log(), "external-edit");
    assert_eq!(edits.len(), 2, "{edits:#?}");
    let blob = b.board().join("solutions/t-1/blob.bin");
    assert_eq!(
        lines_of(&b, "ran.txt"),
        [
            format!("created {}", blob.display()),
            format!("changed {}", blob.display())
        ]
    );
}
