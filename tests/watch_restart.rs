//! A watcher killed with SIGKILL at any moment, then restarted: each change is logged
//! exactly once and each matching activation starts exactly once, deletions included.
//! Real processes: `tavern watch`, `tavern edit`, `rm`, `cat >`, and `kill -9`.

#![cfg(unix)]

use std::collections::BTreeMap;
use std::time::Duration;

use crate::util::TestBoard;
use crate::util::watcher::{Watcher, lines_of, once, ops, signal};

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
        b.run(&["edit", &ids[12 + round], "--set", &format!("n={round}")])
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
