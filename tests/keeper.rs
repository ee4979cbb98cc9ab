//! The index keeper: a read of a big board that finds no watcher's change journal starts
//! `tavern watch --keeper` in the background, which keeps only that journal; later reads
//! then stat only the files it names. It must never make a read wrong (killed, stopped,
//! taken over by a watcher), never run twice or beside a watcher, and go away by itself.

#![cfg(target_os = "linux")]

use std::path::Path;
use std::time::{Duration, Instant};

use crate::util::watcher::{self, PATIENCE, Watcher};
use crate::util::{TestBoard, procs};

fn task_text(id: &str, title: &str) -> String {
    format!(
        "---\nid: {id}\ntitle: {title}\nstatus: pending\npriority: 1\ntags: []\ndepends_on: []\ncreated_at: 2026-11-01T10:00:00Z\ncreated_by: planner\nupdated_at: 2026-11-01T10:00:00Z\nrev: 1\n---\n\nbody\n"
    )
}

/// A board of `n` tasks whose board.yaml says `keeper: MODE` and `keeper_idle: IDLE`.
fn board(n: usize, mode: &str, idle: &str) -> TestBoard {
    let b = TestBoard::new();
    let yaml = b.board().join("board.yaml");
    let text = std::fs::read_to_string(&yaml).unwrap();
    assert!(
        text.contains("  # keeper: auto\n  # keeper_idle: 10m\n"),
        "{text}"
    );
    let text = text
        .replace("  # keeper: auto\n", &format!("  keeper: {mode}\n"))
        .replace(
            "  # keeper_idle: 10m\n",
            &format!("  keeper_idle: {idle}\n"),
        );
    std::fs::write(&yaml, text).unwrap();
    for i in 0..n {
        b.write(
            &format!("tasks/t-{i:04}.md"),
            task_text(&format!("t-{i:04}"), "a task"),
        );
    }
    b
}

/// The pids of the keepers running on this board (from their command lines).
fn keepers(b: &TestBoard) -> Vec<u32> {
    let board = b.board().to_string_lossy().into_owned();
    procs::matching(|args| {
        let has = |a: &str| args.iter().any(|x| x == a);
        has("--keeper") && has(&board) && has("watch")
    })
}

/// Who `tavern status --json` says keeps the journal.
fn journal_status(b: &TestBoard) -> serde_json::Value {
    b.run(&["--json", "status"]).json()["journal"].clone()
}

/// Waits until `done` holds, or fails with `what`.
fn wait_until(what: &str, mut done: impl FnMut() -> bool) {
    let end = Instant::now() + PATIENCE;
    while !done() {
        assert!(Instant::now() < end, "timed out waiting: {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Is a live writer keeping the journal (its file there, locked)?
fn journal_is_live(board: &Path) -> bool {
    let Ok(file) = std::fs::File::open(board.join(".state/journal")) else {
        return false;
    };
    matches!(
        file.try_lock_shared(),
        Err(std::fs::TryLockError::WouldBlock)
    )
}

/// The one keeper of the board, once it keeps the journal.
fn the_keeper(b: &TestBoard) -> u32 {
    wait_until("a keeper keeps the journal", || {
        keepers(b).len() == 1 && journal_is_live(&b.board())
    });
    keepers(b)[0]
}

/// `list tasks` (whose output shows every title) with the task files it stat'ed, retried
/// a few times while it stats every file (a keeper slow to answer on a loaded machine).
fn statted_listing(b: &TestBoard, expect: usize) -> (Vec<String>, String) {
    let mut tries = 0;
    loop {
        tries += 1;
        let (mut names, out) =
            watcher::task_files_statted_with(b, &["list", "tasks"], &[("TAVERN_KEEPER", "never")]);
        out.ok();
        names.sort();
        names.dedup();
        if names.len() <= expect || tries == 5 {
            return (names, out.stdout);
        }
    }
}

/// Every read through the index agrees with a read of the files alone.
fn same_as_full_scan(b: &TestBoard, what: &str) {
    let asks: [&[&str]; 4] = [
        &["list", "--json"],
        &["list", "tasks", "status=pending"],
        &["ready"],
        &["summary"],
    ];
    let run = |args: &[&str]| {
        let out = b.run(args);
        let mut text = out.stdout.clone();
        if args[0] == "summary" {
            text = text.lines().filter(|l| !l.contains("generated")).collect();
        }
        (out.code, text, out.stderr)
    };
    let indexed: Vec<_> = asks.iter().map(|a| run(a)).collect();
    std::fs::remove_dir_all(b.board().join(".state/index")).unwrap();
    let full: Vec<_> = asks.iter().map(|a| run(a)).collect();
    assert_eq!(indexed, full, "{what}: the index answered differently");
}

#[test]
fn a_read_starts_the_keeper_and_later_reads_stat_only_what_its_journal_names() {
    crate::crash_points::require_strace();
    let b = board(40, "always", "10m");
    assert!(keepers(&b).is_empty());
    assert_eq!(journal_status(&b), serde_json::Value::Null);
    b.run(&["list"]).ok();
    let pid = the_keeper(&b);
    assert_eq!(
        journal_status(&b),
        serde_json::json!({"by": "keeper", "pid": pid})
    );
    assert!(b.run(&["status"]).stdout.contains(&format!(
        "reads: by the change journal the index keeper keeps (pid {pid};"
    )));

    // Once a read has gone by the journal (and recorded where it stood), an unchanged
    // board costs no stat of a task file, and an edit in place costs one.
    b.run(&["list"]).ok();
    let (statted, _) = statted_listing(&b, 0);
    assert!(statted.is_empty(), "unchanged: {statted:?}");
    b.write("tasks/t-0007.md", task_text("t-0007", "edited in place"));
    let (statted, listed) = statted_listing(&b, 1);
    assert_eq!(statted, ["t-0007.md"], "{listed}");
    assert!(listed.contains("edited in place"), "{listed}");
    same_as_full_scan(&b, "an edit with a keeper running");
    assert_eq!(
        keepers(&b),
        [pid],
        "reads with a live keeper start no other"
    );

    // Killed with SIGKILL: its journal stays, unanswered; an edit then (nobody records
    // it) is seen, because every file is looked at again.
    watcher::signal(pid, "KILL");
    wait_until("the killed keeper is gone", || keepers(&b).is_empty());
    assert!(b.board().join(".state/journal").exists());
    b.write("tasks/t-0011.md", task_text("t-0011", "edited unkept"));
    let (statted, listed) = statted_listing(&b, 40);
    assert_eq!(statted.len(), 40, "every file: {statted:?}");
    assert!(listed.contains("edited unkept"), "{listed}");
    same_as_full_scan(&b, "an edit after the keeper was killed");

    // And the next read starts a new keeper, in a new epoch of the journal.
    b.run(&["list"]).ok();
    let second = the_keeper(&b);
    assert_ne!(second, pid);
    b.write("tasks/t-0012.md", task_text("t-0012", "edited kept again"));
    same_as_full_scan(&b, "an edit with the second keeper");
    watcher::signal(second, "TERM");
    wait_until("the keeper stops at SIGTERM", || keepers(&b).is_empty());
    assert!(
        !b.board().join(".state/journal").exists(),
        "a keeper that stops takes its journal with it"
    );
}

#[test]
fn the_keeper_stops_by_itself_when_no_read_asks_and_when_the_board_is_gone() {
    let b = board(10, "always", "1s");
    b.run(&["list"]).ok();
    let pid = the_keeper(&b);
    // Reads keep it alive: three seconds of reads, each well within its idle time.
    let until = Instant::now() + Duration::from_secs(3);
    while Instant::now() < until {
        b.run(&["list"]).ok();
        std::thread::sleep(Duration::from_millis(200));
    }
    assert_eq!(keepers(&b), [pid], "a keeper that reads ask stays");
    wait_until("the idle keeper stops", || keepers(&b).is_empty());
    assert!(!b.board().join(".state/journal").exists());
    assert!(
        !journal_is_live(&b.board()),
        "no journal left to trust after it"
    );

    // A board removed under it: it stops.
    let b = board(10, "always", "10m");
    b.run(&["list"]).ok();
    the_keeper(&b);
    std::fs::remove_dir_all(b.board()).unwrap();
    wait_until("the keeper of a removed board stops", || {
        keepers(&b).is_empty()
    });
}

#[test]
fn a_watcher_takes_the_journal_over_from_the_keeper_and_no_keeper_runs_beside_it() {
    let b = board(30, "always", "10m");
    b.run(&["list"]).ok();
    let pid = the_keeper(&b);

    let w = Watcher::start(&b, &[]);
    wait_until("the keeper gives the journal up", || keepers(&b).is_empty());
    wait_until("the watcher keeps the journal", || {
        journal_is_live(&b.board())
    });
    assert_eq!(
        journal_status(&b),
        serde_json::json!({"by": "watch", "pid": w.pid()})
    );
    // A keeper started by hand while the watcher runs ends at once, touching nothing.
    let journal = std::fs::read(b.board().join(".state/journal")).unwrap();
    let out = b.run(&["watch", "--keeper"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(journal_is_live(&b.board()));
    let now = std::fs::read(b.board().join(".state/journal")).unwrap();
    assert!(
        now.starts_with(&journal),
        "the watcher's journal, appended to"
    );
    // Reads with the watcher running start no keeper, and see edits.
    b.write("tasks/t-0003.md", task_text("t-0003", "edited watched"));
    b.run(&["list"]).ok();
    same_as_full_scan(&b, "an edit with the watcher that took over");
    assert!(keepers(&b).is_empty());
    // At its stop, the watcher hands the journal over to a keeper it starts.
    let (code, _) = w.stop();
    assert_eq!(code, 0);
    let again = the_keeper(&b);
    assert_ne!(again, pid);
    b.write("tasks/t-0004.md", task_text("t-0004", "edited unwatched"));
    assert!(b.run(&["list"]).stdout.contains("edited unwatched"));
    same_as_full_scan(&b, "an edit with the keeper the watcher handed over to");
    watcher::signal(again, "TERM");
    wait_until("the keeper stops", || keepers(&b).is_empty());

    // `never` on this machine: a watcher that stops hands nothing over, and takes its
    // journal with it.
    let yaml = b.board().join("board.yaml");
    let text = std::fs::read_to_string(&yaml).unwrap();
    std::fs::write(&yaml, text.replace("keeper: always", "keeper: never")).unwrap();
    let w = Watcher::start(&b, &[]);
    wait_until("the watcher keeps the journal", || {
        journal_is_live(&b.board())
    });
    let (code, _) = w.stop();
    assert_eq!(code, 0);
    assert!(!b.board().join(".state/journal").exists());
    assert!(keepers(&b).is_empty());
}

/// `watch --once` traced: the task files it looked at (stat'ed or opened; sorted, each
/// once), and the documents of the external edits it logged.
fn once_traced(b: &TestBoard) -> (Vec<String>, Vec<String>) {
    let before = b.log().len();
    let out = std::process::Command::new("strace")
        .args([
            "-f",
            "-qq",
            "-e",
            "trace=stat,lstat,newfstatat,statx,open,openat",
        ])
        .args(["-o", "/dev/stderr"])
        .arg(crate::util::BIN)
        .args(["watch", "--once", "--json"])
        .current_dir(b.root())
        .env("TAVERN_AGENT", "tester")
        .env("TAVERN_KEEPER", "never")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    let trace = String::from_utf8_lossy(&out.stderr);
    let mut statted: Vec<String> = trace
        .lines()
        .filter_map(|line| {
            // A name relative to the directory, or a whole path.
            let at = line
                .find("\"t-")
                .or_else(|| line.find("/tasks/t-").map(|i| i + 6))?;
            let name = &line[at + 1..];
            Some(name[..name.find('"').unwrap_or(name.len())].to_string())
        })
        .collect();
    statted.sort();
    statted.dedup();
    let mut edited: Vec<String> = b.log()[before..]
        .iter()
        .filter(|e| e["op"] == "external-edit")
        .map(|e| e["doc"].as_str().unwrap_or_default().to_string())
        .collect();
    edited.sort();
    (statted, edited)
}

fn journal_epoch(board: &Path) -> String {
    let text = std::fs::read_to_string(board.join(".state/journal")).unwrap();
    let header = text.lines().next().unwrap().to_string();
    header.rsplit(' ').next().unwrap().to_string()
}

#[test]
fn with_a_keeper_keeping_the_journal_a_watcher_start_looks_only_at_what_changed() {
    crate::crash_points::require_strace();
    let b = board(40, "always", "10m");
    b.run(&["list"]).ok();
    let first = the_keeper(&b);
    // No mark yet: the first pass looks at every file, and marks where the journal stood.
    let (statted, _) = once_traced(&b);
    assert_eq!(statted.len(), 40, "{statted:?}");
    let mark = std::fs::read_to_string(b.board().join(".state/watch/mark")).unwrap();
    assert!(mark.starts_with(&journal_epoch(&b.board())), "{mark}");

    // Changed while no watcher ran: one in place at the same size within a second of
    // the pass, one created, one removed. Only they are looked at, each logged once.
    b.write("tasks/t-0005.md", task_text("t-0005", "a tasX"));
    b.write("tasks/t-0040.md", task_text("t-0040", "new one"));
    std::fs::remove_file(b.board().join("tasks/t-0009.md")).unwrap();
    let (statted, edited) = once_traced(&b);
    assert_eq!(statted, ["t-0005.md", "t-0009.md", "t-0040.md"]);
    assert_eq!(
        edited,
        ["tasks/t-0005.md", "tasks/t-0009.md", "tasks/t-0040.md"]
    );
    let (statted, edited) = once_traced(&b);
    assert!(
        statted.is_empty() && edited.is_empty(),
        "{statted:?} {edited:?}"
    );

    // A watcher takes the journal over from the keeper, starting from the mark: it logs
    // the edit made before it started, once. At its stop it hands the journal over to a
    // keeper it starts, and marks its state with that keeper's epoch.
    b.write("tasks/t-0006.md", task_text("t-0006", "a tasY"));
    let mut w = Watcher::start(&b, &[]);
    w.wait_for("the edit made before it started", |v| {
        v["event"] == "external-edit" && v.to_string().contains("t-0006")
    });
    wait_until("the first keeper gave the journal up", || {
        !keepers(&b).contains(&first)
    });
    let (code, _) = w.stop();
    assert_eq!(code, 0);
    let second = the_keeper(&b);
    let mark = std::fs::read_to_string(b.board().join(".state/watch/mark")).unwrap();
    assert_eq!(mark, format!("{} 0\n", journal_epoch(&b.board())));
    b.write("tasks/t-0007.md", task_text("t-0007", "a tasZ"));
    let (statted, edited) = once_traced(&b);
    assert_eq!(statted, ["t-0007.md"]);
    assert_eq!(edited, ["tasks/t-0007.md"]);

    // Killed: nothing vouches for what came after, so every file is looked at again, and
    // the edit made meanwhile is logged once.
    watcher::signal(second, "KILL");
    wait_until("the killed keeper is gone", || keepers(&b).is_empty());
    b.write("tasks/t-0008.md", task_text("t-0008", "a tasW"));
    let (statted, edited) = once_traced(&b);
    assert_eq!(statted.len(), 40, "{statted:?}");
    assert_eq!(edited, ["tasks/t-0008.md"]);
    assert!(!b.board().join(".state/watch/mark").exists());
    let edits: Vec<_> = b
        .log()
        .iter()
        .filter(|e| e["op"] == "external-edit")
        .map(|e| e["doc"].as_str().unwrap_or_default().to_string())
        .collect();
    assert_eq!(
        edits,
        [5, 9, 40, 6, 7, 8].map(|n| format!("tasks/t-{n:04}.md")),
        "each change logged once"
    );
}

/// `watch --once` looks again at the board each time an activation's command ends (what
/// the command wrote decides whether `once` is done): with a keeper keeping the journal,
/// at the files changed since it last looked, not at every file.
#[test]
fn with_a_keeper_keeping_the_journal_watch_once_looks_again_only_at_what_an_activation_changed() {
    crate::crash_points::require_strace();
    let b = board(40, "always", "10m");
    b.write(
        "control/sources/bump.md",
        format!(
            "---\nname: bump\nwatch: [tasks]\non: [changed]\nwhen: title=go\nrun: {} edit t-0031 --set priority=0\n---\n",
            crate::util::BIN
        ),
    );
    b.run(&["list"]).ok();
    the_keeper(&b);
    let (statted, _) = once_traced(&b);
    assert_eq!(statted.len(), 40, "{statted:?}");

    b.write("tasks/t-0003.md", task_text("t-0003", "go"));
    let (statted, edited) = once_traced(&b);
    assert_eq!(statted, ["t-0003.md", "t-0031.md"]);
    assert_eq!(edited, ["tasks/t-0003.md"]);
    assert!(b.read("tasks/t-0031.md").contains("priority: 0\n"));
    let activations: Vec<_> = b
        .log()
        .iter()
        .filter(|e| e["op"] == "activation")
        .map(|e| (e["doc"].clone(), e["to"].clone()))
        .collect();
    assert_eq!(
        activations,
        [
            (
                serde_json::json!("tasks/t-0003.md"),
                serde_json::json!("started")
            ),
            (
                serde_json::json!("tasks/t-0003.md"),
                serde_json::json!("ok")
            )
        ]
    );
    // What the command changed was seen by that pass: the next looks at nothing.
    let (statted, edited) = once_traced(&b);
    assert!(
        statted.is_empty() && edited.is_empty(),
        "{statted:?} {edited:?}"
    );
}

#[test]
fn many_reads_at_once_leave_one_keeper() {
    let b = board(20, "always", "10m");
    let reads: Vec<_> = (0..8)
        .map(|_| {
            b.cmd(&["list", "tasks"])
                .stdout(std::process::Stdio::null())
                .spawn()
                .unwrap()
        })
        .collect();
    for mut r in reads {
        assert!(r.wait().unwrap().success());
    }
    let pid = the_keeper(&b);
    // Any other keeper started found the journal taken and ended at once.
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(keepers(&b), [pid]);
    watcher::signal(pid, "TERM");
    wait_until("the keeper stops", || keepers(&b).is_empty());
}

#[test]
fn no_keeper_where_the_board_or_the_machine_says_never_or_the_board_is_small() {
    // `never` in board.yaml; `always` in board.yaml but TAVERN_KEEPER=never; `auto` on a
    // board well below its threshold.
    for (mode, env) in [("never", None), ("always", Some("never")), ("auto", None)] {
        let b = board(50, mode, "10m");
        for _ in 0..3 {
            let mut c = b.cmd(&["list"]);
            if let Some(v) = env {
                c.env("TAVERN_KEEPER", v);
            }
            assert!(c.status().unwrap().success());
        }
        std::thread::sleep(Duration::from_millis(300));
        assert!(keepers(&b).is_empty(), "{mode} {env:?}");
        assert!(!b.board().join(".state/journal").exists(), "{mode} {env:?}");
    }
}

#[test]
fn auto_starts_a_keeper_on_a_board_of_many_thousands_of_tasks() {
    let b = board(0, "auto", "10m");
    let tasks = b.board().join("tasks");
    for i in 0..8200 {
        std::fs::write(
            tasks.join(format!("t-{i:05}.md")),
            task_text(&format!("t-{i:05}"), "a task"),
        )
        .unwrap();
    }
    // The first read builds the index from nothing (no journal to find); the one after it
    // finds a directory of more than 8,000 documents and no journal.
    let first = b.run(&["list", "tasks", "status=done"]);
    assert_eq!(first.code, 0, "{}", first.stderr);
    b.run(&["list", "tasks", "status=done"]).ok();
    let pid = the_keeper(&b);
    b.write("tasks/t-00042.md", task_text("t-00042", "edited big"));
    let out = b.run(&["list", "tasks", "edited"]);
    assert!(out.stdout.contains("t-00042"), "{}", out.stdout);
    watcher::signal(pid, "TERM");
    wait_until("the keeper stops", || keepers(&b).is_empty());
}
