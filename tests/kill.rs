//! Crash safety: streams of mutations killed with SIGKILL at random points. Afterwards
//! every document parses and is its old or its new version, `check` passes, and the log
//! parses.

#![cfg(unix)]

use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};
use std::time::Duration;

use crate::util::{BIN, TestBoard};

fn field(doc: &str, key: &str) -> Option<String> {
    doc.lines()
        .find_map(|l| l.strip_prefix(&format!("{key}: ")).map(str::to_string))
}

/// A shell loop of mutations on the board, as agents would run them.
fn mutation_stream(b: &TestBoard, worker: usize) -> std::process::Child {
    let script = format!(
        r#"i=0
while true; do
  i=$((i+1))
  "$T" edit t00{w} --add "tags=k$i" --as w{w}
  "$T" edit t00{w} --set "note=round $i" --body "body of round $i" --as w{w}
  "$T" claim t01{w} --as w{w}; "$T" start t01{w} --as w{w}; "$T" release t01{w} --as w{w}
  "$T" new observation --title "seen $i by {w}" --as w{w}
done"#,
        w = worker
    );
    Command::new("sh")
        .arg("-c")
        .arg(script)
        .env("T", BIN)
        .env("TAVERN_BOARD", b.board())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .stdin(Stdio::null())
        .process_group(0)
        .spawn()
        .expect("spawn mutation stream")
}

fn kill_group(child: &mut std::process::Child) {
    let pgid = child.id();
    let _ = Command::new("kill")
        .args(["-KILL", "--", &format!("-{pgid}")])
        .status();
    let _ = child.wait();
}

#[test]
fn sigkill_at_random_points_leaves_every_document_whole() {
    let b = TestBoard::new();
    for w in 0..3 {
        b.task("Edited over and over", &["--id", &format!("t00{w}")]);
        b.task("Claimed and released", &["--id", &format!("t01{w}")]);
    }
    let mut x: u64 = 0x2545_F491_4F6C_DD1D;
    for _round in 0..15 {
        let mut children: Vec<_> = (0..3).map(|w| mutation_stream(&b, w)).collect();
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        std::thread::sleep(Duration::from_millis(40 + x % 200));
        for c in &mut children {
            kill_group(c);
        }
        // After every crash, the board is whole.
        let check = b.run(&["check"]);
        assert_eq!(
            check.code, 0,
            "check after a crash:\n{}{}",
            check.stdout, check.stderr
        );
    }
    let log = b.log();
    assert!(
        log.len() > 20,
        "the streams made progress ({} entries)",
        log.len()
    );
    let mut seqs: Vec<u64> = log.iter().map(|e| e["seq"].as_u64().unwrap()).collect();
    let n = seqs.len();
    seqs.dedup();
    assert_eq!(seqs.len(), n, "seqs are unique");
    assert!(seqs.windows(2).all(|w| w[0] < w[1]), "seqs increase");

    // Old-or-new: a document's rev is that of its last log entry (the change and its entry
    // both landed) or one more (killed between the rename and the log append).
    for w in 0..3 {
        for id in [format!("t00{w}"), format!("t01{w}")] {
            let doc = b.read(&format!("tasks/{id}.md"));
            let rev: u64 = field(&doc, "rev").unwrap().parse().unwrap();
            let logged = log
                .iter()
                .filter(|e| e["doc"] == format!("tasks/{id}.md"))
                .filter_map(|e| e["rev"].as_u64())
                .max()
                .unwrap();
            assert!(
                rev == logged || rev == logged + 1,
                "{id}: file rev {rev}, last logged rev {logged}"
            );
            b.run(&["show", &id]).ok().stdout_is(&doc);
        }
    }
    // Readers ignore the temp files a kill may leave behind.
    b.run(&["list"]).ok();
}

/// Regression: a process killed between renaming a document into place and appending its
/// log entry left a change that never reached the log. The write-ahead intent it leaves
/// is logged by the next write of that document.
#[test]
fn a_change_whose_log_entry_was_lost_is_logged_by_the_next_write() {
    let b = TestBoard::new();
    b.task("Interrupted", &["--id", "t-int"]);
    // What a killed `tavern start` leaves: the new file, its intent, no log entry.
    let doc = b
        .read("tasks/t-int.md")
        .replace("rev: 1\n", "rev: 2\n")
        .replace("status: pending", "status: claimed\nclaimed_by: ghost");
    b.write("tasks/t-int.md", &doc);
    b.write(
        ".state/intents/tasks.t-int.yaml",
        "- seq: 0\n  at: 2026-11-22T10:00:00.000Z\n  actor: ghost\n  op: claim\n  doc: tasks/t-int.md\n  from: pending\n  to: claimed\n  rev: 2\n",
    );
    b.run(&["edit", "t-int", "--set", "x=1", "--as", "ghost"])
        .ok();
    let log = b.log();
    assert_eq!(log.len(), 3, "{log:?}");
    assert_eq!(log[1]["op"], "claim");
    assert_eq!(log[1]["rev"], 2);
    assert_eq!(
        log[1]["note"],
        "logged late: the write that made this change was interrupted before logging it"
    );
    assert_eq!(log[2]["op"], "edit");
    assert_eq!(log[2]["rev"], 3);
    assert!(!b.board().join(".state/intents/tasks.t-int.yaml").exists());
    // An intent whose rename never happened is dropped, not logged.
    b.write(".state/intents/tasks.t-int.yaml", "- seq: 0\n  at: 2026-11-22T10:00:00.000Z\n  actor: ghost\n  op: edit\n  doc: tasks/t-int.md\n  rev: 9\n");
    b.run(&["edit", "t-int", "--set", "x=2", "--as", "ghost"])
        .ok();
    assert_eq!(b.log().len(), 4);
}
