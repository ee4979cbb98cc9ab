//! A watcher killed with SIGKILL at any moment, then restarted: each change is logged
//! exactly once and each matching activation starts exactly once, deletions included.
//! Real processes: `tavern watch`, `tavern edit`, `rm`, `cat >`, and `kill -9`.

#![cfg(unix)]

use std::collections::BTreeMap;
use std::process::Command;
use std::time::{Duration, Instant};

use crate::util::TestBoard;
use crate::util::watcher::{Watcher, lines_of, once, ops, recorder, signal, sorted, source};

fn task_text(id: &str, title: &str) -> String {
    format!("---\nid: {id}\ntitle: {title}\nstatus: pending\npriority: 2\n---\n")
}

#[test]
fn a_watcher_killed_at_any_moment_logs_each_change_once_and_runs_each_activation_once() {
    let b = TestBoard::new();
    b.write(
        "control/sources/rec.md",
        "---\nname: rec\nwatch: [tasks]\non: [created, changed, deleted]\nmax_parallel: 4\nrun: echo \"$TAVERN_EVENT $TAVERN_SEQ $TAVERN_ID\" >> ran.txt\n---\n",
    );
    let ids: Vec<String> = (0..24).map(|i| b.task(&format!("T{i}"), &[])).collect();
    // The first start takes the board as it is.
    once(&b, &[]).0.ok();
    let baseline = b.log().len();

    for round in 0..12 {
        let mut w = Watcher::start(&b, &["--jobs", "4"]);
        // A deletion by hand, a creation by hand, an edit through tavern.
        std::fs::remove_file(b.board().join(format!("tasks/{}.md", ids[round]))).unwrap();
        let hand = format!("t-hand-{round}");
        // Whole at once (a dot file renamed into place): one change, however loaded the
        // machine is.
        b.write(&format!("tasks/.{hand}.tmp"), task_text(&hand, "by hand"));
        std::fs::rename(
            b.board().join(format!("tasks/.{hand}.tmp")),
            b.board().join(format!("tasks/{hand}.md")),
        )
        .unwrap();
        b.run(&[
            "edit",
            &ids[12 + round],
            "--set",
            &format!("n={round}"),
            "--extra-field",
            "n",
        ])
        .ok();
        // Killed at different moments: as the first activation starts, as the first
        // change is logged, or after a while.
        match round % 4 {
            0 => {
                w.wait_for("an activation to start", |v| v["event"] == "started");
            }
            1 => {
                w.wait_for("a change", |v| {
                    v["event"] == "external-edit" || v["event"] == "change"
                });
            }
            2 => std::thread::sleep(Duration::from_millis(20 * round as u64)),
            _ => {
                w.wait_for("an activation to queue", |v| v["event"] == "queued");
            }
        }
        signal(w.pid(), "KILL");
        w.wait_exit();
    }
    let (out, _) = once(&b, &[]);
    out.ok();

    let log = b.log();
    let new = &log[baseline..];
    // Each change logged once: per document, the external edits the hand made.
    let mut edits: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for e in ops(new, "external-edit") {
        let what = e["note"]
            .as_str()
            .unwrap()
            .split(' ')
            .next()
            .unwrap()
            .to_string();
        edits
            .entry(e["doc"].as_str().unwrap().into())
            .or_default()
            .push(what);
    }
    let mut expected: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for (round, id) in ids.iter().take(12).enumerate() {
        expected.insert(format!("tasks/{id}.md"), vec!["deleted".into()]);
        expected.insert(format!("tasks/t-hand-{round}.md"), vec!["created".into()]);
    }
    assert_eq!(edits, expected);

    // Each change ran the source exactly once: one line per change's seq.
    let mut changes: Vec<(String, u64)> = ops(new, "external-edit")
        .iter()
        .map(|e| {
            let what = e["note"].as_str().unwrap().split(' ').next().unwrap();
            (what.to_string(), e["seq"].as_u64().unwrap())
        })
        .collect();
    changes.extend(
        ops(new, "edit")
            .iter()
            .map(|e| ("changed".to_string(), e["seq"].as_u64().unwrap())),
    );
    let mut want: Vec<String> = changes
        .iter()
        .map(|(what, seq)| {
            let doc = new
                .iter()
                .find(|e| e["seq"].as_u64() == Some(*seq))
                .unwrap()["doc"]
                .as_str()
                .unwrap()
                .trim_start_matches("tasks/")
                .trim_end_matches(".md")
                .to_string();
            format!("{what} {seq} {doc}")
        })
        .collect();
    want.sort();
    // A watcher killed with SIGKILL leaves its running activations' shells behind; one
    // started just before the kill may append its line after the last watcher ended.
    crate::util::eventually("every activation's line in ran.txt", || {
        lines_of(&b, "ran.txt").len() >= want.len()
    });
    let mut ran = lines_of(&b, "ran.txt");
    ran.sort();
    let acts: Vec<String> = ops(new, "activation")
        .iter()
        .map(|e| {
            format!(
                "{} {} cause {} {} {}",
                e["seq"], e["to"], e["cause"], e["doc"], e["note"]
            )
        })
        .collect();
    assert_eq!(ran, want, "{acts:#?}");
    // And the log never says one started twice.
    let mut started: BTreeMap<u64, usize> = BTreeMap::new();
    for e in ops(new, "activation") {
        if e["to"] == "started" {
            *started.entry(e["cause"].as_u64().unwrap()).or_default() += 1;
        }
    }
    assert!(started.values().all(|n| *n == 1), "{started:?}");
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
fn an_activation_left_running_by_a_killed_watcher_is_logged_as_lost_at_the_next_start() {
    let b = TestBoard::new();
    source(&b, "slow", "watch: [tasks]\nrun: sleep 30\n", "");
    let mut w = Watcher::start(&b, &[]);
    let id = b.task("Starts a sleeper", &[]);
    let started = w.wait_for("the sleeper", |v| v["event"] == "started");
    let pid = started["pid"].as_u64().unwrap();
    // Killed once it has saved what it handled (the task's shadow, saved with the queue
    // within 100 ms): waited for, since a loaded machine may take longer than any sleep.
    let task = b.board().join(format!("tasks/{id}.md"));
    let board = tavern::api::Board::open(&b.board()).unwrap();
    let rel = format!("tasks/{id}.md");
    let deadline = Instant::now() + Duration::from_secs(30);
    while tavern::testing::watch_shadow(&board, &rel) != std::fs::read(&task).ok() {
        assert!(
            Instant::now() < deadline,
            "the handled change was never saved"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
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
        // `SEQ ORIGIN` lines.
        own.lines()
            .any(|l| l.split_whitespace().next() == Some(&seq.to_string()))
            || read_up_to >= seq
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

/// The ids and titles `tavern list tasks` prints, from the read index.
fn listed_titles(b: &TestBoard) -> BTreeMap<String, String> {
    let out = b.run(&["list", "tasks", "--json"]);
    out.ok();
    out.json()["documents"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| {
            (
                d["id"].as_str().unwrap().to_string(),
                d["fields"]["title"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

#[test]
fn every_change_made_while_the_watcher_was_stopped_is_seen_at_its_restart_and_by_every_read() {
    use crate::util::git::{self, git};
    let b = TestBoard::new();
    recorder(&b, "rec", "created, changed, deleted");
    let titles = ["In place", "By rename", "Deleted", "Checked out"];
    let ids: Vec<String> = titles.iter().map(|t| b.task(t, &[])).collect();
    let rel = |id: &str| format!("tasks/{id}.md");
    git::init_repo(b.root());
    // Edited after the commit, so that `git checkout` puts the committed text back.
    b.run(&["edit", &ids[3], "--set", "title=Checked out, edited"])
        .ok();
    // Older than the racy window (3 s) when the first start records them: what changes
    // next is then found by the stat keys alone, not because a file is read again anyway.
    std::thread::sleep(Duration::from_millis(3_200));
    // The first start takes the board as it is; a read builds its index.
    once(&b, &[]).0.ok();
    assert!(lines_of(&b, "ran.txt").is_empty());
    listed_titles(&b);

    // While no watcher runs:
    // in place, at the same size, with the old mtime put back (only the ctime moves);
    let path = b.board().join(rel(&ids[0]));
    let before = b.read(&rel(&ids[0]));
    let mtime = std::fs::metadata(&path).unwrap().modified().unwrap();
    let after = before.replace("title: In place", "title: In-place");
    assert_eq!(after.len(), before.len());
    {
        use std::io::Write;
        let mut f = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
        f.write_all(after.as_bytes()).unwrap();
        f.set_modified(mtime).unwrap();
    }
    assert_eq!(std::fs::metadata(&path).unwrap().modified().unwrap(), mtime);
    // by an editor's rename over the file;
    let renamed = b
        .read(&rel(&ids[1]))
        .replace("title: By rename", "title: Renamed over");
    b.write(&format!("tasks/.{}.md.swp", ids[1]), &renamed);
    std::fs::rename(
        b.board().join(format!("tasks/.{}.md.swp", ids[1])),
        b.board().join(rel(&ids[1])),
    )
    .unwrap();
    // deleted;
    std::fs::remove_file(b.board().join(rel(&ids[2]))).unwrap();
    // created by hand;
    b.write("tasks/t-hand.md", task_text("t-hand", "Made by hand"));
    // put back by git.
    git(
        b.root(),
        &[
            "checkout",
            "-q",
            "HEAD",
            "--",
            &format!(".tavern/{}", rel(&ids[3])),
        ],
    );

    let (out, lines) = once(&b, &[]);
    out.ok();
    assert_eq!(
        sorted(lines_of(&b, "ran.txt")),
        sorted(vec![
            format!("changed {}", ids[0]),
            format!("changed {}", ids[1]),
            format!("deleted {}", ids[2]),
            "created t-hand".to_string(),
            format!("changed {}", ids[3]),
        ]),
        "{lines:#?}"
    );
    let edits: BTreeMap<String, serde_json::Value> = ops(&b.log(), "external-edit")
        .into_iter()
        .map(|e| (e["doc"].as_str().unwrap().to_string(), e))
        .collect();
    assert_eq!(edits.len(), 5, "{edits:#?}");
    for e in edits.values() {
        assert!(
            e["note"]
                .as_str()
                .unwrap()
                .ends_with("(noticed when tavern watch started)"),
            "{e}"
        );
    }
    let diff = |id: &str| edits[&rel(id)]["diff"].as_str().unwrap().to_string();
    assert!(diff(&ids[0]).contains("-title: In place\n+title: In-place\n"));
    assert!(diff(&ids[1]).contains("+title: Renamed over\n"));
    assert!(
        diff(&ids[3]).contains("+title: Checked out\n"),
        "{}",
        diff(&ids[3])
    );
    assert!(
        diff(&ids[3]).contains("-title: \"Checked out, edited\"\n"),
        "{}",
        diff(&ids[3])
    );

    // Every read sees the files as they are.
    assert_eq!(
        listed_titles(&b),
        BTreeMap::from([
            (ids[0].clone(), "In-place".to_string()),
            (ids[1].clone(), "Renamed over".to_string()),
            (ids[3].clone(), "Checked out".to_string()),
            ("t-hand".to_string(), "Made by hand".to_string()),
        ])
    );
    b.run(&["show", &ids[0]]).ok().stdout_has("title: In-place");

    // And a restart after that handles nothing again.
    let (out, lines) = once(&b, &[]);
    out.ok();
    assert!(
        !lines
            .iter()
            .any(|l| l["event"] == "change" || l["event"] == "external-edit"),
        "{lines:#?}"
    );
    assert_eq!(lines_of(&b, "ran.txt").len(), 5);
    assert_eq!(ops(&b.log(), "external-edit").len(), 5);
}
