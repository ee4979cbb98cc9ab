use super::*;
use crate::api::docs::NewDoc;
use crate::doc::Region;

struct Fixture {
    _dir: tempfile::TempDir,
    board: Board,
    rec: Reconciler,
}

/// A board with task-1 (made by alice), and a reconciler that took it as it was.
fn fixture() -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    crate::board::init(dir.path()).unwrap();
    let board = Board::open(&dir.path().join(".tavern")).unwrap();
    create(&board, "task-1");
    let rec = Reconciler::open(board.clone()).unwrap();
    Fixture {
        _dir: dir,
        board,
        rec,
    }
}

fn create(board: &Board, id: &str) {
    let spec = NewDoc {
        id: Some(id.into()),
        title: "T".into(),
        ..NewDoc::default()
    };
    crate::api::docs::create(board, "alice", Region::Tasks, &spec).unwrap();
}

impl Fixture {
    fn path(&self, rel: &str) -> std::path::PathBuf {
        areas::abs(&self.board, rel)
    }

    /// Catches up with the log, then looks at every hinted path and at `also`.
    fn look(&mut self, also: &[&str]) -> Vec<Change> {
        self.rec.catch_up().unwrap();
        self.rec.hints.extend(also.iter().map(|s| s.to_string()));
        let mut out = Vec::new();
        while let Some(rel) = self.rec.hints.pop_first() {
            match self.rec.reconcile(&rel).unwrap() {
                Outcome::Handled(changes) => out.extend(changes),
                Outcome::Deferred(_) => panic!("{rel} deferred"),
            }
        }
        out
    }

    fn log(&self) -> Vec<Entry> {
        log::read_from(&self.board, 0).unwrap().0
    }

    fn ops(&self) -> Vec<String> {
        self.log()
            .iter()
            .map(|e| format!("{} {}", e.op, e.doc))
            .collect()
    }
}

fn summary(changes: &[Change]) -> Vec<(String, Vec<String>, Option<String>)> {
    changes
        .iter()
        .map(|c| {
            (
                c.tracked.rel.clone(),
                c.events.iter().map(On::name).collect(),
                c.actor.clone(),
            )
        })
        .collect()
}

#[test]
fn the_first_start_takes_the_board_as_it_is() {
    let mut f = fixture();
    assert!(f.look(&["tasks/task-1.md"]).is_empty());
    assert_eq!(f.ops(), ["create tasks/task-1.md"]);
}

#[test]
fn tavern_writes_are_changes_by_their_actor_with_their_transition() {
    let mut f = fixture();
    create(&f.board, "task-2");
    let opts = crate::ops::transition::Options::default();
    crate::api::tasks::claim(&f.board, "bob", "task-1", &opts).unwrap();
    let changes = f.look(&[]);
    assert_eq!(
        summary(&changes),
        [
            (
                "tasks/task-1.md".into(),
                vec!["changed".into(), "transition:claimed".into()],
                Some("bob".into())
            ),
            (
                "tasks/task-2.md".into(),
                vec!["created".into()],
                Some("alice".into())
            ),
        ]
    );
    // Explained by the log: nothing logged on the watcher's account.
    assert_eq!(f.log().len(), 3);
    // Looked at again: handled already.
    assert!(f.look(&["tasks/task-1.md", "tasks/task-2.md"]).is_empty());
}

#[test]
fn an_edit_outside_tavern_is_logged_once_with_its_diff() {
    let mut f = fixture();
    let path = f.path("tasks/task-1.md");
    let text = std::fs::read_to_string(&path).unwrap();
    let edited = text.replace("status: pending", "status: review");
    assert_ne!(text, edited);
    std::fs::write(&path, &edited).unwrap();
    let changes = f.look(&["tasks/task-1.md"]);
    assert_eq!(
        summary(&changes),
        [(
            "tasks/task-1.md".into(),
            vec!["changed".into(), "transition:review".into()],
            None
        )]
    );
    let last = f.log().pop().unwrap();
    assert_eq!(
        (last.op.as_str(), last.actor.as_str(), last.note.as_deref()),
        ("external-edit", WATCHER, Some("changed outside tavern"))
    );
    assert_eq!(
        last.diff.as_deref(),
        Some(log::diff(&text, &edited).as_str())
    );
    assert_eq!(changes[0].seq, last.seq);
    let notices: Vec<u64> = f.rec.notices.iter().map(|n| n.entry.seq).collect();
    assert_eq!(notices, [last.seq]);
    // Once: the entry is the watcher's own, and the file is as it was handled.
    assert!(f.look(&["tasks/task-1.md"]).is_empty());
    assert_eq!(f.log().len(), 2);
}

#[test]
fn an_invalid_edit_is_an_alert_and_no_change() {
    let mut f = fixture();
    std::fs::write(f.path("tasks/task-1.md"), "---\nstatus: nowhere\n---\n").unwrap();
    // Old enough not to be taken for a write in progress.
    let old = std::time::SystemTime::now() - Duration::from_secs(5);
    std::fs::File::options()
        .write(true)
        .open(f.path("tasks/task-1.md"))
        .unwrap()
        .set_modified(old)
        .unwrap();
    assert!(f.look(&["tasks/task-1.md"]).is_empty());
    let ops = f.ops();
    assert_eq!(
        ops[1..],
        ["external-edit tasks/task-1.md", "alert tasks/task-1.md"]
    );
    let alert = f.log().pop().unwrap();
    assert!(
        alert
            .note
            .as_deref()
            .unwrap()
            .contains("not reverted, no source started"),
        "{alert:?}"
    );
}

#[test]
fn a_file_whose_name_is_no_id_is_an_alert_once_never_a_change() {
    let mut f = fixture();
    std::fs::write(f.path("tasks/-rf.md"), "x").unwrap();
    assert!(f.look(&["tasks/-rf.md"]).is_empty());
    assert!(f.look(&["tasks/-rf.md"]).is_empty());
    assert_eq!(f.ops()[1..], ["alert tasks/-rf.md"]);
    let note = f.log().pop().unwrap().note.unwrap();
    assert_eq!(
        note,
        "tasks/-rf.md: file name is not a valid id ([a-z0-9][a-z0-9._-]{0,63}.md); not tracked and no source started (rename it)"
    );
}

#[test]
fn a_deletion_outside_tavern_is_logged_once_even_after_a_commit() {
    let mut f = fixture();
    let text = std::fs::read_to_string(f.path("tasks/task-1.md")).unwrap();
    std::fs::remove_file(f.path("tasks/task-1.md")).unwrap();
    let changes = f.look(&["tasks/task-1.md"]);
    assert_eq!(
        summary(&changes),
        [("tasks/task-1.md".into(), vec!["deleted".into()], None)]
    );
    let last = f.log().pop().unwrap();
    assert_eq!(last.note.as_deref(), Some("deleted outside tavern"));
    assert_eq!(last.diff.as_deref(), Some(log::diff(&text, "").as_str()));
    assert!(f.rec.commit().is_empty());
    // The snapshot (saved seldom) still lists the file: the handled deletion's mark
    // keeps it from being logged again, here and by a restarted watcher.
    assert!(f.look(&["tasks/task-1.md"]).is_empty());
    let mut again = Reconciler::open(f.board.clone()).unwrap();
    again.hints.insert("tasks/task-1.md".into());
    assert!(
        matches!(again.reconcile("tasks/task-1.md").unwrap(), Outcome::Handled(c) if c.is_empty())
    );
    assert_eq!(f.ops().len(), 2);
}

#[test]
fn a_file_replaced_by_a_directory_in_one_batch_is_deleted_with_its_diff() {
    let mut f = fixture();
    std::fs::create_dir_all(f.path("solutions/task-1")).unwrap();
    std::fs::write(f.path("solutions/task-1/h"), "again\n").unwrap();
    assert_eq!(f.look(&["solutions/task-1/h"]).len(), 1);
    assert!(f.rec.commit().is_empty());
    std::fs::remove_file(f.path("solutions/task-1/h")).unwrap();
    std::fs::create_dir(f.path("solutions/task-1/h")).unwrap();
    std::fs::write(f.path("solutions/task-1/h/a"), "a\n").unwrap();
    let changes = f.look(&["solutions/task-1/h", "solutions/task-1/h/a"]);
    assert_eq!(
        summary(&changes),
        [
            ("solutions/task-1/h".into(), vec!["deleted".into()], None),
            ("solutions/task-1/h/a".into(), vec!["created".into()], None),
        ]
    );
    assert!(f.rec.commit().is_empty());
    assert!(
        f.look(&["solutions/task-1/h", "solutions/task-1/h/a"])
            .is_empty()
    );
    let diffs: Vec<(String, Option<String>)> = f.log()[1..]
        .iter()
        .map(|e| (e.doc.clone(), e.diff.clone()))
        .collect();
    assert_eq!(
        diffs,
        [
            ("solutions/task-1/h".into(), Some(log::diff("", "again\n"))),
            ("solutions/task-1/h".into(), Some(log::diff("again\n", ""))),
            ("solutions/task-1/h/a".into(), Some(log::diff("", "a\n"))),
        ]
    );
}

#[test]
fn an_empty_file_just_written_is_looked_at_again_before_it_is_logged() {
    let mut f = fixture();
    std::fs::create_dir_all(f.path("solutions/task-1")).unwrap();
    // `echo again > h`, seen between its truncation and its write.
    std::fs::write(f.path("solutions/task-1/h"), "").unwrap();
    f.rec.catch_up().unwrap();
    assert!(matches!(
        f.rec.reconcile("solutions/task-1/h").unwrap(),
        Outcome::Deferred(SETTLE)
    ));
    assert_eq!(f.log().len(), 1, "nothing logged yet");
    std::fs::write(f.path("solutions/task-1/h"), "again\n").unwrap();
    let changes = f.look(&["solutions/task-1/h"]);
    assert_eq!(
        summary(&changes),
        [("solutions/task-1/h".into(), vec!["created".into()], None)]
    );
    let last = f.log().pop().unwrap();
    assert_eq!(last.diff, Some(log::diff("", "again\n")));
    // Empty for good (deferred once already): logged as it is.
    std::fs::write(f.path("solutions/task-1/e"), "").unwrap();
    assert!(matches!(
        f.rec.reconcile("solutions/task-1/e").unwrap(),
        Outcome::Deferred(_)
    ));
    let changes = f.look(&["solutions/task-1/e"]);
    assert_eq!(changes.len(), 1);
    assert_eq!(
        f.log().pop().unwrap().note.as_deref(),
        Some("created outside tavern")
    );
}

#[test]
fn a_sync_merge_explains_the_document_at_its_rev_whatever_its_diff() {
    let mut f = fixture();
    let path = f.path("tasks/task-1.md");
    let text = std::fs::read_to_string(&path).unwrap();
    let merged = text.replace("rev: 1", "rev: 3") + "merged from both sides\n";
    let entry = |rev: u64| Entry {
        at: crate::time::stamp_millis(crate::time::now()),
        actor: "tavern-sync".into(),
        op: "sync-merge".into(),
        doc: "tasks/task-1.md".into(),
        rev: Some(rev),
        // Made on the other clone, from its own copy: it does not apply here.
        diff: Some("@@ -1 +1 @@\n-elsewhere\n+merged\n".into()),
        ..Entry::default()
    };
    std::fs::write(&path, &merged).unwrap();
    log::append(&f.board, entry(3)).unwrap();
    let changes = f.look(&[]);
    assert_eq!(
        summary(&changes),
        [(
            "tasks/task-1.md".into(),
            vec!["changed".into()],
            Some("tavern-sync".into())
        )]
    );
    assert_eq!(
        f.ops(),
        ["create tasks/task-1.md", "sync-merge tasks/task-1.md"]
    );
    // At another rev than the entry names, the file is not what the merge made.
    std::fs::write(&path, merged.replace("rev: 3", "rev: 5")).unwrap();
    log::append(&f.board, entry(4)).unwrap();
    let changes = f.look(&[]);
    assert_eq!(changes.len(), 2, "{:?}", summary(&changes));
    assert_eq!(f.log().pop().unwrap().op, "external-edit");
}

#[test]
fn another_clones_entry_with_the_seq_of_an_own_one_is_not_taken_for_it() {
    let mut f = fixture();
    // The watcher's own entry: seq 2 of this clone.
    let own = f
        .rec
        .alert("tasks/task-1.md", WATCHER, "an alert".into())
        .unwrap();
    assert_eq!(own.seq, 2);
    // Another clone's create, arrived by sync: seq 2 of its own clock (read first:
    // entries of one seq are read in the order of their origins).
    create(&f.board, "task-2");
    let path = f.board.log_path();
    let log_text = std::fs::read_to_string(&path).unwrap();
    let (before, last) = log_text.trim_end().rsplit_once('\n').unwrap();
    let theirs = last.replacen("{seq: 3, ", "{seq: 2, ", 1).replacen(
        &format!("origin: \"{}\"", own.origin),
        "origin: \"0other\"",
        1,
    );
    assert_ne!(theirs, last);
    std::fs::write(&path, format!("{before}\n{theirs}\n")).unwrap();
    let changes = f.look(&[]);
    assert_eq!(
        summary(&changes),
        [(
            "tasks/task-2.md".into(),
            vec!["created".into()],
            Some("alice".into())
        )]
    );
    assert!(
        !f.ops()
            .contains(&"external-edit tasks/task-2.md".to_string())
    );
    // Its own entry, read back, is still skipped.
    assert!(f.look(&["tasks/task-1.md"]).is_empty());
}

#[test]
fn the_previous_format_a_shadow_file_per_file_is_migrated_once_and_its_diffs_kept() {
    let dir = tempfile::tempdir().unwrap();
    crate::board::init(dir.path()).unwrap();
    let board = Board::open(&dir.path().join(".tavern")).unwrap();
    create(&board, "task-1");
    create(&board, "task-2");
    // What a watcher of the previous format left: a JSON line per file, a shadow file per
    // file (task-2's written after the snapshot was last saved), a handled deletion.
    let watch = snapshot::dir(&board);
    let stat = |rel: &str| StatKey::read(&areas::abs(&board, rel)).unwrap();
    let text = |rel: &str| std::fs::read(areas::abs(&board, rel)).unwrap();
    let line = |rel: &str, stat: StatKey, hash: u64| {
        serde_json::to_string(&(rel, serde_json::json!({ "stat": stat, "hash": hash }))).unwrap()
    };
    std::fs::create_dir_all(watch.join("shadow/tasks")).unwrap();
    std::fs::create_dir_all(watch.join("gone/tasks")).unwrap();
    let t1 = "tasks/task-1.md";
    std::fs::write(
        watch.join("snapshot"),
        format!(
            "{}\n{}\n",
            line(t1, stat(t1), snapshot::hash(&text(t1))),
            line("tasks/task-3.md", StatKey::default(), 1)
        ),
    )
    .unwrap();
    for rel in [t1, "tasks/task-2.md"] {
        std::fs::write(watch.join("shadow").join(rel), text(rel)).unwrap();
    }
    std::fs::write(watch.join("gone/tasks/task-3.md"), "").unwrap();
    let (offset, seq) = log::end(&board).unwrap();
    let mut cursor = Cursor {
        seq,
        ..Cursor::default()
    };
    cursor.advance(&board, offset);
    cursor.save(&board).unwrap();
    // Edited by hand while no watcher ran.
    let before = String::from_utf8(text(t1)).unwrap();
    let after = format!("{before}more\n");
    std::fs::write(areas::abs(&board, t1), &after).unwrap();

    let mut rec = Reconciler::open(board.clone()).unwrap();
    for gone in ["snapshot", "shadow", "gone"] {
        assert!(!watch.join(gone).exists(), "{gone} is left");
    }
    rec.rescan();
    rec.catch_up().unwrap();
    let mut changes = Vec::new();
    while let Some(rel) = rec.hints.pop_first() {
        match rec.reconcile(&rel).unwrap() {
            Outcome::Handled(c) => changes.extend(c),
            Outcome::Deferred(_) => panic!("{rel} deferred"),
        }
    }
    assert_eq!(
        summary(&changes),
        [(t1.into(), vec!["changed".into()], None)]
    );
    let entries = log::read_from(&board, 0).unwrap().0;
    let edits: Vec<&Entry> = entries.iter().filter(|e| e.op == "external-edit").collect();
    assert_eq!(edits.len(), 1, "{edits:#?}");
    assert_eq!(
        edits[0].diff.as_deref(),
        Some(log::diff(&before, &after).as_str())
    );
    assert!(rec.commit().is_empty());
    rec.save().unwrap();
    // A restart finds the pack: the edit is not logged again, and the shadow is the edit.
    let mut again = Reconciler::open(board.clone()).unwrap();
    again.rescan();
    again.catch_up().unwrap();
    while let Some(rel) = again.hints.pop_first() {
        assert!(matches!(again.reconcile(&rel).unwrap(), Outcome::Handled(c) if c.is_empty()));
    }
    assert_eq!(
        again.shadow(t1).as_deref(),
        Some(after.as_bytes()),
        "the shadow holds the edit"
    );
    let entries = log::read_from(&board, 0).unwrap().0;
    assert_eq!(
        entries.iter().filter(|e| e.op == "external-edit").count(),
        1
    );
}

#[test]
fn a_kill_after_a_commit_replays_the_pack_and_a_torn_frame_is_handled_again() {
    let mut f = fixture();
    let t1 = "tasks/task-1.md";
    let path = f.path(t1);
    let text = std::fs::read_to_string(&path).unwrap();
    let edited = text.replace("title: T", "title: U");
    std::fs::write(&path, &edited).unwrap();
    assert_eq!(f.look(&[t1]).len(), 1);
    assert!(f.rec.commit().is_empty());
    // Killed before any index was written again: the frame is replayed.
    let mut again = Reconciler::open(f.board.clone()).unwrap();
    assert_eq!(again.shadow(t1).as_deref(), Some(edited.as_bytes()));
    again.rescan();
    // Written just now, so racy: read again, and found to be what the shadow holds.
    while let Some(rel) = again.hints.pop_first() {
        assert!(matches!(again.reconcile(&rel).unwrap(), Outcome::Handled(c) if c.is_empty()));
    }
    // A second edit whose frame is torn by a kill: not recorded, so handled again.
    let third = edited.replace("title: U", "title: V");
    std::fs::write(&path, &third).unwrap();
    f.look(&[t1]);
    assert!(f.rec.commit().is_empty());
    let pack = std::fs::read_dir(snapshot::dir(&f.board))
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| {
            p.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with("shadows-")
        })
        .unwrap();
    let len = std::fs::metadata(&pack).unwrap().len();
    std::fs::OpenOptions::new()
        .write(true)
        .open(&pack)
        .unwrap()
        .set_len(len - 3)
        .unwrap();
    let mut again = Reconciler::open(f.board.clone()).unwrap();
    assert_eq!(again.shadow(t1).as_deref(), Some(edited.as_bytes()));
    again.rescan();
    assert_eq!(again.hints.iter().collect::<Vec<_>>(), [t1]);
}

#[test]
fn a_change_in_the_tick_of_the_recorded_stat_is_seen_at_the_next_start() {
    let mut f = fixture();
    let t1 = "tasks/task-1.md";
    let path = f.path(t1);
    let before = std::fs::read_to_string(&path).unwrap();
    // Edited in place at the same size, and recorded with the stat key the file has now
    // but the content it had: what a watcher records when the edit lands in the same tick
    // of the file system's clock as its stat, after its read.
    let after = before.replace("title: T", "title: X");
    assert_eq!(after.len(), before.len());
    std::fs::write(&path, &after).unwrap();
    let stat = StatKey::read(&path).unwrap();
    f.rec
        .snapshot
        .set(t1, stat, snapshot::hash(before.as_bytes()));
    assert!(f.rec.snapshot.get(t1).unwrap().racy, "just changed: racy");
    assert!(f.rec.commit().is_empty());
    f.rec.save().unwrap();

    let mut again = Reconciler::open(f.board.clone()).unwrap();
    assert_eq!(again.snapshot.get(t1).unwrap().stat, stat);
    again.rescan();
    assert_eq!(again.hints.iter().collect::<Vec<_>>(), [t1]);
    let changes = match again.reconcile(t1).unwrap() {
        Outcome::Handled(c) => c,
        Outcome::Deferred(_) => panic!("deferred"),
    };
    assert_eq!(
        summary(&changes),
        [(t1.into(), vec!["changed".into()], None)]
    );
    let edits: Vec<Entry> = log::read_from(&f.board, 0)
        .unwrap()
        .0
        .into_iter()
        .filter(|e| e.op == "external-edit")
        .collect();
    assert_eq!(edits.len(), 1);
    assert_eq!(
        edits[0].diff.as_deref(),
        Some(log::diff(&before, &after).as_str())
    );
}

#[test]
fn a_batch_that_changes_nothing_leaves_the_own_state_file_alone() {
    use std::os::unix::fs::MetadataExt;
    let mut f = fixture();
    let own = snapshot::dir(&f.board).join("own");
    let stamp = |own: &std::path::Path| {
        let m = std::fs::metadata(own).unwrap();
        (m.ino(), m.mtime(), m.mtime_nsec())
    };
    // The watcher logs a deletion: its own entry, saved until it reads it back.
    std::fs::remove_file(f.path("tasks/task-1.md")).unwrap();
    assert_eq!(f.look(&["tasks/task-1.md"]).len(), 1);
    assert!(f.rec.commit().is_empty());
    let seq = f.log().pop().unwrap().seq;
    let saved = std::fs::read_to_string(&own).unwrap();
    assert!(saved.starts_with(&format!("{seq} ")), "{saved:?}");
    // Read back: the entry is no longer pending, and the file says so.
    assert!(f.look(&[]).is_empty());
    assert!(f.rec.commit().is_empty());
    assert_eq!(std::fs::read_to_string(&own).unwrap(), "");
    // A batch with nothing new: the file is not written again.
    let before = stamp(&own);
    assert!(f.look(&["tasks/task-1.md"]).is_empty());
    assert!(f.rec.commit().is_empty());
    assert_eq!(stamp(&own), before);
    // Nor by a restarted watcher, whose state file held exactly what it loaded.
    let mut again = Reconciler::open(f.board.clone()).unwrap();
    again.catch_up().unwrap();
    assert!(again.commit().is_empty());
    assert_eq!(stamp(&own), before);
}
