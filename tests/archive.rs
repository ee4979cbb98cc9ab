//! `archive`: finished documents move to archive/, stay readable, and the log says so.

use crate::util::TestBoard;

#[test]
fn finished_documents_move_to_the_archive_and_stay_readable() {
    let b = TestBoard::new();
    // One creation time for all three, so `list` orders them by id whatever second
    // each was made in.
    let same_age = ["--set", "created_at=2026-01-01T00:00:00Z"];
    b.task("Done one", &[&["--id", "t-done"][..], &same_age].concat());
    b.task("Open one", &[&["--id", "t-open"][..], &same_age].concat());
    b.task("Cancelled", &[&["--id", "t-gone"][..], &same_age].concat());
    for step in ["claim", "start", "done"] {
        b.run(&[step, "t-done", "--as", "a"]).ok();
    }
    b.run(&["cancel", "t-gone", "--as", "a"]).ok();
    let raw = b.read("tasks/t-done.md");
    b.run(&["archive", "t-gone", "--older-than", "30d"])
        .ok()
        .stdout_is("");
    b.run(&["archive", "region:tasks", "--as", "keeper"]).ok().stdout_is(
        "tasks/t-done.md: archived: moved to archive/tasks/t-done.md\ntasks/t-gone.md: archived: moved to archive/tasks/t-gone.md\n",
    );
    assert!(!b.board().join("tasks/t-done.md").exists());
    assert_eq!(
        b.read("archive/tasks/t-done.md"),
        raw,
        "moved byte for byte"
    );
    assert!(b.board().join("tasks/t-open.md").exists());
    b.run(&["show", "t-done"]).ok().stdout_is(&raw);
    assert_eq!(
        b.run(&["show", "t-done", "--json"]).ok().json()["path"],
        "archive/tasks/t-done.md"
    );
    let ids = |out: &crate::util::Out| {
        out.stdout
            .lines()
            .skip(1)
            .map(|l| l.split(' ').next().unwrap().to_string())
            .collect::<Vec<_>>()
    };
    assert_eq!(ids(b.run(&["list", "tasks"]).ok()), ["t-open"]);
    assert_eq!(
        ids(b.run(&["list", "tasks", "--archived"]).ok()),
        ["t-open", "t-done", "t-gone"],
        "finished documents after the open ones"
    );
    let moves: Vec<_> = b.log().into_iter().filter(|e| e["op"] == "move").collect();
    assert_eq!(moves.len(), 2);
    assert_eq!(moves[0]["actor"], "keeper");
    assert_eq!(moves[0]["doc"], "tasks/t-done.md");
    b.run(&["diff", "t-done"])
        .ok()
        .stdout_has("archived: moved to archive/tasks/t-done.md");
    b.run(&["check"]).ok();
}

#[test]
fn sweep_archives_expired_session_findings() {
    let b = TestBoard::new();
    b.run(&[
        "new",
        "observation",
        "--title",
        "Flaky run",
        "--id",
        "obs-old",
        "--set",
        "scope=session",
        "--set",
        "expires_at=2026-01-01T00:00:00Z",
    ])
    .ok();
    b.run(&[
        "new",
        "observation",
        "--title",
        "Still fresh",
        "--id",
        "obs-new",
        "--set",
        "scope=session",
        "--set",
        "expires_at=2999-01-01T00:00:00Z",
    ])
    .ok();
    b.run(&[
        "new",
        "observation",
        "--title",
        "Kept",
        "--id",
        "obs-keep",
        "--set",
        "expires_at=2026-01-01T00:00:00Z",
    ])
    .ok();
    b.run(&["sweep"])
        .ok()
        .stdout_is("observations/obs-old.md: expired: moved to archive/observations/obs-old.md\n");
    assert!(
        b.board().join("observations/obs-new.md").exists()
            && b.board().join("observations/obs-keep.md").exists()
    );
    assert_eq!(b.log().last().unwrap()["actor"], "tavern-sweep");
}

/// A done task that was archived is still done: what depends on it stays claimable.
#[test]
fn an_archived_done_task_counts_as_done_for_its_dependents() {
    let b = TestBoard::new();
    b.task("First", &["--id", "t-first"]);
    b.task("Second", &["--id", "t-second", "--depends-on", "t-first"]);
    for step in ["claim", "start", "done"] {
        b.run(&[step, "t-first", "--as", "a"]).ok();
    }
    b.run(&["archive", "t-first"]).ok();
    assert!(b.board().join("archive/tasks/t-first.md").exists());
    b.run(&["ready"]).ok().stdout_has("t-second");
    b.run(&["deps", "t-second"])
        .ok()
        .stdout_is(
            "t-second [pending] Second\nwaits for:\n  t-first [done] First (archived)\nwaited on by: nothing\n",
        );
    b.run(&["check"]).ok();
    b.task("Third", &["--id", "t-third", "--depends-on", "t-first"]);
    b.run(&["edit", "t-second", "--add", "depends_on=t-first"])
        .ok();
    b.run(&["claim", "t-second", "--as", "b"]).ok();
    b.run(&["claim", "--next", "--as", "c"])
        .ok()
        .stdout_has("claimed t-third");
}

#[test]
fn archive_dry_run_moves_nothing_and_list_archived_marks_the_archived_rows() {
    let b = TestBoard::new();
    let same_age = ["--set", "created_at=2026-01-01T00:00:00Z"];
    b.task("Done one", &[&["--id", "t-done"][..], &same_age].concat());
    b.task("Open one", &[&["--id", "t-open"][..], &same_age].concat());
    b.run(&["cancel", "t-done", "--as", "a"]).ok();
    let before = crate::util::snapshot(&b);
    b.run(&["archive", "--dry-run"])
        .ok()
        .stdout_is("tasks/t-done.md: would move to archive/tasks/t-done.md\n");
    assert_eq!(
        b.run(&["archive", "--dry-run", "--json"]).ok().json(),
        serde_json::json!({"dry_run": true, "would_move": ["tasks/t-done.md"]})
    );
    assert_eq!(
        crate::util::snapshot(&b),
        before,
        "a dry run changes nothing"
    );
    b.run(&["archive"]).ok();
    let out = b.run(&["list", "tasks", "--archived"]);
    out.ok().stdout_is(
        "ID      STATUS                PRI  OWNER  TITLE\n\
         t-open  pending               2    -      Open one\n\
         t-done  cancelled (archived)  2    -      Done one\n",
    );
    let json = b
        .run(&["list", "tasks", "--archived", "--json"])
        .ok()
        .json();
    assert_eq!(json["documents"][1]["archived"], true);
    assert_eq!(json["documents"][0].get("archived"), None);
}

#[test]
fn archive_and_ready_with_nothing_to_do_say_so() {
    let b = TestBoard::new();
    b.task("Open", &["--id", "t-open"]);
    b.run(&["archive"])
        .ok()
        .stdout_is("")
        .stderr_is("nothing to archive: no finished document matches\n");
    b.run(&["archive", "--dry-run"])
        .ok()
        .stderr_is("nothing to archive: no finished document matches\n");
    b.run(&["archive", "--json"]).ok().stderr_is("");
    b.run(&["claim", "t-open", "--as", "a"]).ok();
    b.run(&["ready"]).ok().stdout_is("").stderr_is(
        "no claimable task matches (every task is claimed, finished, or waiting for its dependencies)\n",
    );
    assert_eq!(
        b.run(&["ready", "--json"]).ok().stderr_is("").json()["documents"],
        serde_json::json!([])
    );
}
