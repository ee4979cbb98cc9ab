//! `tavern pause` and `tavern resume` as watch mode sees them: activations held and
//! released, control/PAUSE as a symlink or a directory.

#![cfg(unix)]

use std::time::Duration;

use serde_json::Value;

use crate::util::TestBoard;
use crate::util::watcher::{Watcher, lines_of, once, ops, recorder};

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
