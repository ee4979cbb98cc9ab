//! One watcher per board, and a board (or its .state/) removed, moved or swapped under a
//! running watcher.

#![cfg(unix)]

use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::util::TestBoard;
use crate::util::watcher::{Watcher, find_all, lines_of, ops, recorder, sh, source};

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

/// The lock held by another process while the pid on record has ended: what a child of a
/// watcher killed between fork and exec leaves for a moment. The next watcher waits for the
/// lock instead of refusing; with the recorded holder alive, it refuses at once.
#[test]
fn a_lock_left_by_a_dead_watcher_s_child_is_waited_for_and_a_live_one_refused() {
    use std::io::BufRead;
    let b = TestBoard::new();
    b.run(&["watch", "--once"]).ok();
    let lock = b.board().join(".state/locks/watch.lock");
    let pid_file = b.board().join(".state/watch/pid");
    // Holds the lock until told to let go (a line on its stdin), after saying it holds it.
    let hold = |secs: u32| {
        let mut child = Command::new("flock")
            .arg(&lock)
            .args([
                "sh",
                "-c",
                &format!("echo locked; read _ || true; sleep {secs}"),
            ])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .expect("flock (util-linux) is needed by this test");
        let mut line = String::new();
        std::io::BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        assert_eq!(line, "locked\n");
        child
    };

    // The recorded holder is alive (this test): refused at once, naming it.
    let mut holder = hold(0);
    std::fs::write(&pid_file, format!("{}\n", std::process::id())).unwrap();
    b.run(&["watch", "--once"]).code(3).stderr_is(&format!(
        "error: .state/locks/watch.lock: another `tavern watch` is running on this board (pid {}); one watcher per board\n",
        std::process::id()
    ));
    drop(holder.stdin.take());
    assert!(holder.wait().unwrap().success());

    // The recorded holder has ended and been reaped; the lock is let go a moment later.
    let mut dead = Command::new("true").spawn().unwrap();
    let dead_pid = dead.id();
    dead.wait().unwrap();
    std::fs::write(&pid_file, format!("{dead_pid}\n")).unwrap();
    let mut holder = hold(1);
    let waiting = std::thread::spawn({
        let cmd = b.cmd(&["watch", "--once"]);
        move || {
            let mut cmd = cmd;
            cmd.output().unwrap()
        }
    });
    drop(holder.stdin.take());
    let out = waiting.join().unwrap();
    assert!(holder.wait().unwrap().success());
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(String::from_utf8_lossy(&out.stderr), "");
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
    // Without its shadow the edit is logged without a diff; with it (the frame was still
    // in memory: the watcher had read it at start to check a file changed within the
    // last seconds), with one.
    let note = hand[0]["note"].as_str().unwrap();
    if note == "changed outside tavern" {
        assert!(
            hand[0]["diff"].as_str().unwrap().contains("+more\n"),
            "{hand:#?}"
        );
    } else {
        assert_eq!(
            note,
            "changed outside tavern (its last content was not kept: no diff)"
        );
    }
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
