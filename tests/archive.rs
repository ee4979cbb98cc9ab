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
        ["t-done", "t-gone", "t-open"]
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
