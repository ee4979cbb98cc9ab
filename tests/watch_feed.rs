//! The change feed front-ends use (`tavern::api::changes`): real file changes, made by real
//! `tavern` processes and by hand, reported as typed batches; and a feed never writes,
//! so a real `tavern watch` runs beside it as if it were alone.

use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tavern::api::changes::{Batch, BoardEvent, Feed};

use crate::util::TestBoard;
use crate::util::watcher::Watcher;

fn open(b: &TestBoard) -> Feed {
    let board = tavern::api::Board::open(&b.board()).unwrap();
    Feed::open(&board, Default::default()).unwrap()
}

/// Batches until `done` holds for all of them together (at most 30 s: a safety net, not
/// an assertion about time).
fn until(feed: &mut Feed, done: impl Fn(&[Batch]) -> bool) -> Vec<Batch> {
    let end = Instant::now() + Duration::from_secs(30);
    let mut got = Vec::new();
    while !done(&got) {
        assert!(Instant::now() < end, "the feed did not report it: {got:#?}");
        if let Some(b) = feed.next(Duration::from_millis(200)) {
            got.push(b);
        }
    }
    got
}

fn changes(batches: &[Batch]) -> Vec<Value> {
    batches
        .iter()
        .flat_map(|b| &b.changes)
        .map(|c| serde_json::to_value(c).unwrap())
        .collect()
}

fn board_events(batches: &[Batch]) -> Vec<BoardEvent> {
    batches.iter().flat_map(|b| b.board.clone()).collect()
}

fn has(batches: &[Batch], want: &Value) -> bool {
    changes(batches).contains(want)
}

#[test]
fn created_changed_moved_and_deleted_documents_are_reported_with_region_id_and_path() {
    let b = TestBoard::new();
    let id = b.task("first", &[]);
    let mut feed = open(&b);

    let fresh = b.task("second", &[]);
    let got = until(&mut feed, |got| {
        has(
            got,
            &json!({"region": "tasks", "id": fresh, "path": format!("tasks/{fresh}.md"), "kind": "created"}),
        )
    });
    // The create's log entry comes with it (or in an earlier batch).
    let appended: Vec<Value> = board_events(&got)
        .into_iter()
        .filter_map(|e| match e {
            BoardEvent::LogAppended { entries } => Some(entries),
            _ => None,
        })
        .flatten()
        .map(|e| json!([e.op, e.doc]))
        .collect();
    assert!(
        appended.contains(&json!(["create", format!("tasks/{fresh}.md")])),
        "{appended:?}"
    );

    // By hand: an agent's `cat >`, a rename into another region, an `rm`.
    let text = b.read(&format!("tasks/{id}.md"));
    b.write(
        &format!("tasks/{id}.md"),
        text.replace("first", "first, edited"),
    );
    let got = until(&mut feed, |got| {
        has(
            got,
            &json!({"region": "tasks", "id": id, "path": format!("tasks/{id}.md"), "kind": "changed"}),
        )
    });
    assert_eq!(
        changes(&got),
        vec![
            json!({"region": "tasks", "id": id, "path": format!("tasks/{id}.md"), "kind": "changed"})
        ]
    );

    std::fs::rename(
        b.board().join(format!("tasks/{fresh}.md")),
        b.board().join(format!("observations/{fresh}.md")),
    )
    .unwrap();
    let moved = json!({"region": "observations", "id": fresh, "path": format!("observations/{fresh}.md"), "kind": "moved", "from": format!("tasks/{fresh}.md")});
    let got = until(&mut feed, |got| has(got, &moved));
    assert_eq!(changes(&got), vec![moved]);

    std::fs::remove_file(b.board().join(format!("observations/{fresh}.md"))).unwrap();
    let gone = json!({"region": "observations", "id": fresh, "path": format!("observations/{fresh}.md"), "kind": "deleted"});
    let got = until(&mut feed, |got| has(got, &gone));
    assert_eq!(changes(&got), vec![gone]);

    // A solution file names its task; a file whose name is no id is nobody's document.
    b.write(&format!("solutions/{id}/design.md"), "# Design\n");
    b.write("tasks/-rf.md", "---\nstatus: pending\n---\n");
    let design = json!({"region": "solutions", "id": id, "path": format!("solutions/{id}/design.md"), "kind": "created"});
    let got = until(&mut feed, |got| has(got, &design));
    assert_eq!(changes(&got), vec![design]);
}

#[test]
fn pause_resume_and_a_board_that_goes_and_comes_back_are_board_events() {
    let b = TestBoard::new();
    let id = b.task("kept", &[]);
    let mut feed = open(&b);

    b.run(&["pause", "release freeze"]).ok();
    let paused = BoardEvent::Paused {
        reason: "release freeze".into(),
    };
    until(&mut feed, |got| board_events(got).contains(&paused));
    b.run(&["resume"]).ok();
    until(&mut feed, |got| {
        board_events(got).contains(&BoardEvent::Resumed)
    });

    // Moved away (as `mv .tavern elsewhere` does), then back, with one task changed
    // while it was away.
    let away = b.root().join("away");
    std::fs::rename(b.board(), &away).unwrap();
    until(&mut feed, |got| {
        board_events(got).contains(&BoardEvent::Gone)
    });
    let path = away.join(format!("tasks/{id}.md"));
    let text = std::fs::read_to_string(&path).unwrap();
    std::fs::write(&path, text.replace("kept", "kept, edited away")).unwrap();
    std::fs::rename(&away, b.board()).unwrap();
    let changed =
        json!({"region": "tasks", "id": id, "path": format!("tasks/{id}.md"), "kind": "changed"});
    let got = until(&mut feed, |got| {
        board_events(got).contains(&BoardEvent::Back) && has(got, &changed)
    });
    assert_eq!(changes(&got), vec![changed]);

    // Watched again after it came back.
    let later = b.task("after the return", &[]);
    until(&mut feed, |got| {
        has(
            got,
            &json!({"region": "tasks", "id": later, "path": format!("tasks/{later}.md"), "kind": "created"}),
        )
    });
}

#[test]
fn a_feed_writes_nothing_and_a_watcher_beside_it_logs_each_change_once() {
    let b = TestBoard::new();
    let id = b.task("watched", &[]);
    let mut w = Watcher::start(&b, &[]);
    let mut feed = open(&b);

    let text = b.read(&format!("tasks/{id}.md"));
    b.write(
        &format!("tasks/{id}.md"),
        text.replace("watched", "watched, edited"),
    );
    until(&mut feed, |got| !changes(got).is_empty());
    w.wait_for("external-edit", |e| e["event"] == "external-edit");
    let (code, _) = w.stop();
    assert_eq!(code, 0);
    let edits: Vec<Value> = b
        .log()
        .into_iter()
        .filter(|e| e["op"] == "external-edit")
        .collect();
    assert_eq!(edits.len(), 1, "{edits:#?}");

    // Without a watcher: the feed sees a hand edit, and the board is byte for byte what
    // the edit left (no log entry, no state file, no shadow).
    let text = b.read(&format!("tasks/{id}.md"));
    b.write(
        &format!("tasks/{id}.md"),
        text.replace("edited", "edited twice"),
    );
    let before = every_file(&b);
    let got = until(&mut feed, |got| !changes(got).is_empty());
    assert_eq!(
        changes(&got),
        vec![
            json!({"region": "tasks", "id": id, "path": format!("tasks/{id}.md"), "kind": "changed"})
        ]
    );
    assert_eq!(every_file(&b), before);
}

/// Every file under the board, runtime state included, with its bytes and mtime.
fn every_file(b: &TestBoard) -> Vec<(String, Vec<u8>, std::time::SystemTime)> {
    let mut out: Vec<_> = walkdir(&b.board())
        .into_iter()
        .map(|p| {
            let meta = std::fs::symlink_metadata(&p).unwrap();
            let bytes = if meta.is_file() {
                std::fs::read(&p).unwrap()
            } else {
                Vec::new()
            };
            (p.display().to_string(), bytes, meta.modified().unwrap())
        })
        .collect();
    out.sort();
    out
}

fn walkdir(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        out.push(e.path());
        if e.file_type().unwrap().is_dir() {
            out.extend(walkdir(&e.path()));
        }
    }
    out
}
