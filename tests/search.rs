//! `tavern search`: ranking, phrases, filters, typos, snippets, solutions and the archive;
//! and its index (`.state/search/`), which is never wrong: files are changed behind its
//! back in every way a user can (in place at the same size within one second, with the
//! old mtime put back, by an editor's rename, created, deleted, made odd, `git checkout`,
//! `git pull`, a tavern killed while it wrote the index, torn and garbage index files),
//! and every search must then print what it prints after the index is deleted.

#![cfg(unix)]

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, SystemTime};

use crate::concurrency::Rng;
use crate::util::git::{self, git};
use crate::util::{BIN, Out, TestBoard, output};

fn tavern(dir: &Path, args: &[&str]) -> Out {
    let mut c = Command::new(BIN);
    c.args(args)
        .current_dir(dir)
        .env_remove("TAVERN_BOARD")
        .env("TAVERN_AGENT", "tester")
        .env("USER", "tester")
        .stdin(Stdio::null());
    git::env(&mut c);
    output(c)
}

/// The words the boards below are made of, and the searches run over them.
const WORDS: [&str; 8] = [
    "lock", "timeout", "parser", "crash", "deadlock", "cache", "network", "widget",
];

fn searches(dir: &Path) -> Vec<String> {
    let asks: Vec<Vec<&str>> = vec![
        vec!["search", "lock", "--json", "--limit", "1000"],
        vec!["search", "timeout", "parser", "--limit", "1000"],
        vec!["search", "\"lock timeout\"", "--json", "--limit", "1000"],
        vec!["search", "deadlok", "--json", "--limit", "1000"],
        vec![
            "search",
            "cache",
            "status=pending",
            "--json",
            "--limit",
            "1000",
        ],
        vec!["search", "network", "region:tasks", "archive", "--json"],
        vec!["search", "widget", "--json", "--limit", "5"],
        vec!["search", "needle", "--json"],
    ];
    asks.iter()
        .map(|args| tavern(dir, args).transcript(args))
        .collect()
}

fn search_dir(board: &Path) -> PathBuf {
    board.join(".state/search")
}

/// Searches through the index as it is, then again with the index deleted: they must
/// agree, and the second run must have rebuilt it.
fn same_as_fresh(dir: &Path, board: &Path, what: &str) {
    let indexed = searches(dir);
    std::fs::remove_dir_all(search_dir(board)).unwrap();
    let fresh = searches(dir);
    for (a, b) in indexed.iter().zip(&fresh) {
        assert_eq!(
            a, b,
            "{what}: the index answered differently from the files"
        );
    }
    assert!(
        search_dir(board).join("tasks/manifest").exists(),
        "{what}: the searches rebuilt no index"
    );
}

/// A task file as tavern writes them, its title and body made of some of WORDS.
fn task_text(id: &str, status: &str, seed: usize) -> String {
    let w = |k: usize| WORDS[(seed * 7 + k * 3) % WORDS.len()];
    format!(
        "---\nid: {id}\ntitle: {} {} in {id}\nstatus: {status}\npriority: 1\ntags: []\ndepends_on: []\ncreated_at: 2026-11-01T10:00:00Z\ncreated_by: planner\nupdated_at: 2026-11-01T10:00:00Z\nrev: 1\n---\n\nThe {} {} again.\nNothing here.\n{} {} {}\n",
        w(0),
        w(1),
        w(2),
        w(3),
        w(seed % 3),
        w(4),
        w(0)
    )
}

fn board_with_tasks(n: usize) -> TestBoard {
    let b = TestBoard::new();
    for i in 0..n {
        b.write(
            &format!("tasks/t-{i:04}.md"),
            task_text(&format!("t-{i:04}"), "pending", i),
        );
    }
    b
}

/// Posts the finding "Lock timeout in sync" with `body`; its id.
fn post_lock_timeout(b: &TestBoard, body: &str) -> String {
    b.run(&[
        "post",
        "Lock timeout in sync",
        "--topic",
        "sync",
        "--severity",
        "high",
        "--body",
        body,
    ])
    .text()
}

fn ids(v: &serde_json::Value) -> Vec<String> {
    v["hits"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["id"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn ranks_every_region_the_archive_and_solutions_with_snippets() {
    let b = TestBoard::new();
    let obs = post_lock_timeout(
        &b,
        "The lock timed out after 30s.\nUnrelated line.\nAnother lock timeout here.",
    );
    let task = b.task("Fix the lock timeouts", &["--body", "see the finding"]);
    let other = b.task("Parser crash on empty input", &[]);
    let q = b.run(&["ask", "Is a lock timeout of 30s enough?"]).text();
    b.write(
        "solutions/t/notes.md",
        "# Notes on locking\n\nthe lock timeout is 30s\n",
    );
    b.write("solutions/t/picture.png", b"\x89PNG\0\0binary lock timeout");
    let old = b.task("An old lock timeout", &[]);
    b.run(&["cancel", &old, "--force"]).ok();
    b.run(&["archive", "status=cancelled"]).ok();

    let out = b.run(&["search", "lock", "timeout", "--json"]);
    out.ok();
    let found = out.json();
    let hits = ids(&found);
    for want in [&obs, &task, &q, &old, &"solutions/t/notes.md".to_string()] {
        assert!(hits.contains(want), "{want} missing from {hits:?}");
    }
    assert!(!hits.contains(&other), "{hits:?}");
    assert!(
        !hits.iter().any(|h| h.contains("picture")),
        "binary files are not text"
    );
    // Scores go down; the archived one says so; snippets name lines of the file.
    let scores: Vec<f64> = found["hits"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["score"].as_f64().unwrap())
        .collect();
    assert!(scores.windows(2).all(|w| w[0] >= w[1]), "{scores:?}");
    let hit = |id: &str| {
        found["hits"]
            .as_array()
            .unwrap()
            .iter()
            .find(|h| h["id"] == id)
            .unwrap()
            .clone()
    };
    assert_eq!(hit(&old)["archived"], true);
    assert_eq!(hit(&old)["path"], format!("archive/tasks/{old}.md"));
    assert_eq!(hit(&obs)["region"], "observations");
    assert_eq!(hit(&obs)["status"], "open");
    let snippet = &hit(&obs)["snippets"][0];
    let line = snippet["line"].as_u64().unwrap() as usize;
    let file = b.read(&format!("observations/{obs}.md"));
    assert_eq!(
        file.lines().nth(line - 1).unwrap(),
        "The lock timed out after 30s."
    );
    assert_eq!(snippet["text"], "The lock timed out after 30s.");
    assert_eq!(hit("solutions/t/notes.md")["title"], "Notes on locking");

    // The text form: id, score, status, title, then the lines.
    let text = b.run(&["search", "lock", "timeout"]);
    text.ok();
    assert!(
        text.stdout
            .lines()
            .any(|l| l.starts_with(&obs) && l.ends_with("open  Lock timeout in sync")),
        "{}",
        text.stdout
    );
    assert!(
        text.stdout
            .contains(&format!("    {line}: The lock timed out after 30s."))
    );

    // --limit
    let one = b
        .run(&["search", "lock", "timeout", "--json", "--limit", "1"])
        .json();
    assert_eq!(ids(&one).len(), 1);
    assert_eq!(ids(&one)[0], hits[0]);
}

#[test]
fn phrases_filters_and_typos() {
    let b = TestBoard::new();
    let a = b.task("The lock timed out", &["--body", "a timeout of the lock"]);
    let c = b.task("Timeout while taking the lock", &["--body", "lock timeout"]);
    let obs = b
        .run(&[
            "post",
            "Lock timeout seen",
            "--topic",
            "t",
            "--severity",
            "low",
            "--body",
            "lock timeout",
        ])
        .text();
    b.run(&["ack", &obs]).ok();
    // A phrase: its words in this order (stemmed: "lock timeouts" is the same phrase).
    let p = b.run(&["search", "\"lock timeout\"", "--json"]).json();
    let mut got = ids(&p);
    got.sort();
    let mut want = vec![c.clone(), obs.clone()];
    want.sort();
    assert_eq!(got, want, "{p}");
    assert!(!ids(&p).contains(&a));
    // Filters from the query language: a region, a status.
    let tasks = b.run(&["search", "lock", "region:tasks", "--json"]).json();
    assert!(
        ids(&tasks).iter().all(|id| id.starts_with("task-")),
        "{tasks}"
    );
    assert_eq!(ids(&tasks).len(), 2);
    let open = b
        .run(&["search", "lock", "observations", "status=open", "--json"])
        .json();
    assert!(ids(&open).is_empty(), "{open}");
    let acked = b
        .run(&[
            "search",
            "lock",
            "observations",
            "status=acknowledged",
            "--json",
        ])
        .json();
    assert_eq!(ids(&acked), std::slice::from_ref(&obs));
    // A typo in a single word of five letters or more: one edit away still finds it.
    let typo = b.run(&["search", "timout", "--json"]).json();
    assert_eq!(ids(&typo).len(), 3, "{typo}");
    let swapped = b.run(&["search", "tiemout", "--json"]).json();
    assert_eq!(ids(&swapped).len(), 3, "{swapped}");
    // An exact match outranks a near miss; short words get no typo tolerance.
    let short = b.run(&["search", "lokc", "--json"]).json();
    assert!(ids(&short).is_empty(), "{short}");
    // Nothing found: exit 0, an empty list, a note on stderr in text mode.
    let none = b.run(&["search", "zebra"]);
    none.ok().stdout_is("").stderr_is("nothing matches\n");
    assert_eq!(
        b.run(&["search", "zebra", "--json"]).json()["hits"],
        serde_json::json!([])
    );
}

#[test]
fn bad_queries_are_usage_errors() {
    let b = TestBoard::new();
    b.task("a task", &[]);
    b.run(&["search", "status=open"])
        .code(2)
        .stderr_has("search needs words");
    b.run(&["search", "lock", "priority<high"])
        .code(2)
        .stderr_has("malformed query term 'priority<high'");
    b.run(&["search", "\"unclosed"]).code(2);
    b.run(&["search"]).code(2);
    let json = b.run(&["search", "status=open", "--json"]);
    json.code(2);
    let error: serde_json::Value = serde_json::from_str(&json.stderr).unwrap();
    assert!(error.to_string().contains("search needs words"), "{error}");
    b.run(&["search", "lock", "--limit", "x"]).code(2);
}

#[test]
fn a_broken_document_is_skipped_with_a_warning_as_list_skips_it() {
    let b = TestBoard::new();
    b.task("lock one", &[]);
    b.write("tasks/t-bad.md", "---\nid: t-bad\ntitle: [lock\n---\n");
    let out = b.run(&["search", "lock", "--json"]);
    out.ok().stderr_has("warning: skipped tasks/t-bad.md");
    assert_eq!(out.json()["skipped"][0]["path"], "tasks/t-bad.md");
    assert_eq!(ids(&out.json()).len(), 1);
}

#[test]
fn agent_written_text_reaches_the_terminal_without_control_characters() {
    let b = TestBoard::new();
    b.write(
        "tasks/t-evil.md",
        "---\nid: t-evil\ntitle: \"lock \\e[31mred\"\nstatus: pending\n---\n\nlock \u{1b}]0;owned\u{7} here\n",
    );
    let out = b.run(&["search", "lock"]);
    out.ok();
    assert!(!out.stdout.contains('\u{1b}'), "{:?}", out.stdout);
    assert!(!out.stdout.contains('\u{7}'), "{:?}", out.stdout);
    assert!(out.stdout.contains("t-evil"));
}

#[test]
fn same_size_edits_in_place_within_one_second_are_seen() {
    same_size_edits_in_place(&board_with_tasks(30));
}

fn same_size_edits_in_place(b: &TestBoard) {
    let path = b.board().join("tasks/t-0007.md");
    searches(b.root());
    for (round, seed) in [1, 2, 3, 4, 5].iter().enumerate() {
        let before = std::fs::metadata(&path).unwrap();
        let text = task_text("t-0007", "pending", *seed);
        std::fs::write(&path, &text).unwrap();
        let after = std::fs::metadata(&path).unwrap();
        assert_eq!(before.ino(), after.ino(), "written in place");
        let title = text.lines().nth(2).unwrap().trim_start_matches("title: ");
        let first = title.split(' ').next().unwrap();
        let found = tavern(b.root(), &["search", first, "--json", "--limit", "1000"]).json();
        assert!(
            ids(&found).contains(&"t-0007".to_string()),
            "round {round}: {first} not found in t-0007"
        );
        same_as_fresh(b.root(), &b.board(), &format!("in-place edit {round}"));
    }
}

#[test]
fn an_edit_that_puts_back_the_old_mtime_is_seen() {
    let b = board_with_tasks(20);
    let path = b.board().join("tasks/t-0003.md");
    let old = SystemTime::now() - Duration::from_secs(3600);
    let set_old = || {
        std::fs::File::options()
            .write(true)
            .open(&path)
            .unwrap()
            .set_modified(old)
            .unwrap()
    };
    set_old();
    // Old enough to be trusted, so the index keeps it.
    std::thread::sleep(Duration::from_millis(3100));
    searches(b.root());
    searches(b.root());
    let text = std::fs::read_to_string(&path).unwrap();
    let edited = text.replacen("Nothing here.", "Zappers here.", 1);
    assert_eq!(text.len(), edited.len());
    std::fs::write(&path, edited).unwrap();
    set_old();
    let found = tavern(b.root(), &["search", "zapper", "--json"]).json();
    assert_eq!(ids(&found), ["t-0003"], "{found}");
    same_as_fresh(b.root(), &b.board(), "an edit with its mtime put back");
}

#[test]
fn editors_renames_creations_deletions_odd_files_and_solutions_are_seen() {
    editors_renames_creations_deletions(&board_with_tasks(40));
}

fn editors_renames_creations_deletions(b: &TestBoard) {
    b.write(
        "solutions/t-0001/notes.md",
        "# lock notes\n\ncache network\n",
    );
    searches(b.root());
    let tasks = b.board().join("tasks");
    std::fs::write(tasks.join(".t-0001.md.swp"), task_text("t-0001", "done", 9)).unwrap();
    std::fs::rename(tasks.join(".t-0001.md.swp"), tasks.join("t-0001.md")).unwrap();
    same_as_fresh(b.root(), &b.board(), "an editor's rename");
    b.write(
        "tasks/t-new.md",
        task_text("t-new", "pending", 3).replace("Nothing", "needle"),
    );
    std::fs::remove_file(tasks.join("t-0002.md")).unwrap();
    b.write(
        "tasks/t-0003.md",
        "---\nid: t-0003\ntitle: [unclosed lock\n---\n",
    );
    b.write(
        "tasks/t-0004.md",
        b"---\nid: t-0004\ntitle: \xff lock\n---\n",
    );
    std::os::unix::fs::symlink(tasks.join("t-0005.md"), tasks.join("t-link.md")).unwrap();
    std::fs::create_dir(tasks.join("t-dir.md")).unwrap();
    b.write("tasks/Not An Id.md", task_text("x", "pending", 1));
    b.write("solutions/t-0001/more/deep.md", "lock lock needle\n");
    b.write("solutions/t-0001/notes.md", "# lock notes\n\nwidget now\n");
    std::os::unix::fs::symlink(b.board().join("tasks"), b.board().join("solutions/linked"))
        .unwrap();
    same_as_fresh(b.root(), &b.board(), "created, deleted and odd files");
    let needle = tavern(b.root(), &["search", "needle", "--json"]).json();
    let mut got = ids(&needle);
    got.sort();
    assert_eq!(got, ["solutions/t-0001/more/deep.md", "t-new"], "{needle}");
    std::fs::remove_dir(tasks.join("t-dir.md")).unwrap();
    std::fs::remove_file(tasks.join("t-link.md")).unwrap();
    b.write("tasks/t-0003.md", task_text("t-0003", "pending", 2));
    b.write("tasks/t-0004.md", task_text("t-0004", "pending", 2));
    std::fs::remove_dir_all(b.board().join("solutions/t-0001/more")).unwrap();
    same_as_fresh(b.root(), &b.board(), "odd files fixed");
}

/// The inode of each bucket file of the tasks' search index (a bucket is rewritten by a
/// rename over it, so a new inode is a rewrite), by file name.
fn task_buckets(board: &Path) -> Vec<(String, u64)> {
    let mut out: Vec<(String, u64)> = std::fs::read_dir(search_dir(board).join("tasks"))
        .unwrap()
        .map(|e| e.unwrap())
        .map(|e| (e.file_name().to_string_lossy().into_owned(), e))
        .filter(|(n, _)| !n.starts_with('.') && n != "manifest" && n != "stamp")
        .map(|(n, e)| (n, e.metadata().unwrap().ino()))
        .collect();
    out.sort();
    out
}

#[test]
fn a_file_created_in_the_directory_rewrites_only_the_bucket_holding_it() {
    // Two buckets (more than PER_BUCKET tasks).
    let b = board_with_tasks(1100);
    let ask = ["search", "lock", "--json", "--limit", "2000"];
    // Searched until no bucket is rewritten any more (files read in the tick of their
    // last change are read again by a later search).
    let mut before = Vec::new();
    let mut settled = false;
    for _ in 0..50 {
        tavern(b.root(), &ask).ok();
        let now = task_buckets(&b.board());
        settled = now == before;
        if settled {
            break;
        }
        before = now;
    }
    assert!(settled, "the buckets never settled: {before:?}");
    assert_eq!(before.len(), 2, "{before:?}");
    // A file that is no document: the directory's stat data change, so it is listed
    // again, and no bucket holds anything else.
    b.write("tasks/notes.txt", "lock\n");
    let listed = tavern(b.root(), &ask);
    listed.ok();
    assert_eq!(
        task_buckets(&b.board()),
        before,
        "a listing that found the same names rewrote a bucket"
    );
    // A new task: the bucket that holds it is rewritten, the other is not.
    b.write("tasks/t-new.md", task_text("t-new", "pending", 0));
    let added = tavern(b.root(), &ask);
    let after = task_buckets(&b.board());
    let rewritten = before.iter().filter(|x| !after.contains(x)).count();
    assert_eq!(rewritten, 1, "before {before:?}, after {after:?}");
    assert!(ids(&added.json()).contains(&"t-new".to_string()));
    // And both answer as the files do.
    let indexed = [listed.stdout, added.stdout];
    std::fs::remove_file(b.board().join("tasks/t-new.md")).unwrap();
    std::fs::remove_dir_all(search_dir(&b.board())).unwrap();
    assert_eq!(tavern(b.root(), &ask).stdout, indexed[0]);
    b.write("tasks/t-new.md", task_text("t-new", "pending", 0));
    std::fs::remove_dir_all(search_dir(&b.board())).unwrap();
    assert_eq!(tavern(b.root(), &ask).stdout, indexed[1]);
    same_as_fresh(
        b.root(),
        &b.board(),
        "files created in a directory of two buckets",
    );
}

#[test]
fn a_torn_or_garbage_index_is_rebuilt_from_the_files() {
    let b = board_with_tasks(50);
    searches(b.root());
    let tasks_index = search_dir(&b.board()).join("tasks");
    let files: Vec<PathBuf> = std::fs::read_dir(&tasks_index)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| !p.ends_with("manifest") && !p.ends_with("stamp"))
        .collect();
    assert!(!files.is_empty());
    b.write("tasks/t-0010.md", task_text("t-0010", "done", 4));
    let bytes = std::fs::read(&files[0]).unwrap();
    std::fs::write(&files[0], &bytes[..bytes.len() / 2]).unwrap();
    same_as_fresh(b.root(), &b.board(), "a bucket cut in half");
    searches(b.root());
    b.write("tasks/t-0011.md", task_text("t-0011", "done", 5));
    std::fs::write(tasks_index.join("manifest"), b"not an index").unwrap();
    same_as_fresh(b.root(), &b.board(), "a garbage manifest");
    searches(b.root());
    b.write("tasks/t-0012.md", task_text("t-0012", "done", 6));
    for p in std::fs::read_dir(&tasks_index).unwrap() {
        let p = p.unwrap().path();
        let len = std::fs::metadata(&p).unwrap().len() as usize;
        std::fs::write(&p, vec![0u8; len]).unwrap();
    }
    same_as_fresh(b.root(), &b.board(), "zeroed index files");
    // Postings damaged where a search reads them only when it looks for their term (the
    // tail of each bucket): the file opens, the postings fail their check. The files are
    // first left old enough to be trusted, so that their entries are not read again.
    std::thread::sleep(Duration::from_millis(3100));
    searches(b.root());
    searches(b.root());
    for p in std::fs::read_dir(&tasks_index).unwrap() {
        let p = p.unwrap().path();
        if p.ends_with("manifest") || p.ends_with("stamp") {
            continue;
        }
        let mut bytes = std::fs::read(&p).unwrap();
        // The last postings' term frequencies (each posting is an entry and a frequency,
        // four bytes each, little-endian): each one more, which only a check can tell.
        let n = bytes.len();
        for k in 0..8 {
            bytes[n - 4 - 8 * k] ^= 1;
        }
        std::fs::write(&p, &bytes).unwrap();
    }
    same_as_fresh(b.root(), &b.board(), "damaged postings");
    // The sections read only when asked for, damaged: the terms' references (where each
    // term's postings are) and the files' stat data. The bucket opens; a search looking
    // for a damaged reference, or checking the files' stat data, must not trust them.
    for (section, what) in [(2, "damaged references"), (3, "damaged stat data")] {
        std::thread::sleep(Duration::from_millis(3100));
        searches(b.root());
        searches(b.root());
        for p in std::fs::read_dir(&tasks_index).unwrap() {
            let p = p.unwrap().path();
            if p.ends_with("manifest") || p.ends_with("stamp") {
                continue;
            }
            let mut bytes = std::fs::read(&p).unwrap();
            // The header: magic, id, fingerprint, then the lengths of the entries, the
            // directory, the references and the stat data (u32 each, little-endian).
            let len = |k: usize| {
                u32::from_le_bytes(bytes[24 + 4 * k..28 + 4 * k].try_into().unwrap()) as usize
            };
            let at = 68 + (0..section).map(len).sum::<usize>();
            assert!(len(section) > 0, "{what}: {}", p.display());
            for k in (0..len(section)).step_by(7) {
                bytes[at + k] ^= 0x10;
            }
            std::fs::write(&p, &bytes).unwrap();
        }
        same_as_fresh(b.root(), &b.board(), what);
    }
    // The index's directory replaced by a file: searches still work from the files.
    std::fs::remove_dir_all(search_dir(&b.board())).unwrap();
    std::fs::write(search_dir(&b.board()), b"in the way").unwrap();
    let found = tavern(b.root(), &["search", "lock", "--json", "--limit", "1000"]);
    found.ok();
    assert!(!ids(&found.json()).is_empty());
    std::fs::remove_file(search_dir(&b.board())).unwrap();
}

#[test]
fn a_tavern_killed_while_it_writes_the_index_leaves_nothing_wrong() {
    let b = board_with_tasks(1500);
    searches(b.root());
    b.write("tasks/t-0000.md", task_text("t-0000", "done", 1));
    let started = std::time::Instant::now();
    tavern(b.root(), &["search", "lock", "--json"]).ok();
    let span = started.elapsed().as_micros().max(1000) as u64;
    let mut rng = Rng::new(23);
    for round in 0..6 {
        for _ in 0..20 {
            let i = rng.below(1500) as usize;
            let status = ["pending", "claimed", "done"][rng.below(3) as usize];
            b.write(
                &format!("tasks/t-{i:04}.md"),
                task_text(&format!("t-{i:04}"), status, i + round + 1),
            );
        }
        if round % 3 == 0 {
            // A new bucket count now and then: the directory grows past what it was.
            for j in 0..300 {
                let id = format!("t-r{round}-{j}");
                b.write(&format!("tasks/{id}.md"), task_text(&id, "pending", j));
            }
        }
        let mut child = Command::new(BIN)
            .args(["search", "lock", "--json"])
            .current_dir(b.root())
            .env_remove("TAVERN_BOARD")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(Duration::from_micros(rng.below(span)));
        let _ = child.kill();
        let _ = child.wait();
        let indexed = searches(b.root());
        let copy = tempfile::tempdir().unwrap();
        copy_tree(&b.board(), &copy.path().join(".tavern"));
        std::fs::remove_dir_all(copy.path().join(".tavern/.state")).ok();
        let fresh = searches(copy.path());
        assert_eq!(indexed, fresh, "round {round}");
    }
}

fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let ty = entry.file_type().unwrap();
        let dest = to.join(entry.file_name());
        if ty.is_dir() {
            copy_tree(&entry.path(), &dest);
        } else if ty.is_file() {
            std::fs::copy(entry.path(), dest).unwrap();
        }
    }
}

#[test]
fn git_checkout_of_an_old_board_and_git_pull_are_seen() {
    let tmp = tempfile::tempdir().unwrap();
    let main = tmp.path().join("main");
    git::init_repo(&main);
    tavern(&main, &["init"]).ok();
    let mut ids = Vec::new();
    for i in 0..8 {
        let out = tavern(
            &main,
            &[
                "new",
                "task",
                &format!("{} {} {i}", WORDS[i % 8], WORDS[(i + 3) % 8]),
            ],
        );
        out.ok();
        ids.push(out.text());
    }
    git(&main, &["add", "-A"]);
    git(&main, &["commit", "-q", "-m", "old board"]);
    let board = main.join(".tavern");
    searches(&main);
    tavern(&main, &["new", "task", "lock after the commit"]).ok();
    edit(&board, &ids[1], "title: timeout", "title: needle");
    searches(&main);
    git(&main, &["checkout", "-q", "HEAD", "--", ".tavern/tasks"]);
    same_as_fresh(&main, &board, "git checkout of the old board");

    let remote = git::bare(&tmp.path().join("remote.git"));
    git(
        &main,
        &["remote", "add", "origin", remote.to_str().unwrap()],
    );
    git(&main, &["add", "-A"]);
    git(&main, &["commit", "-q", "-m", "now"]);
    git(&main, &["push", "-q", "origin", "HEAD:main"]);
    let other = tmp.path().join("other");
    git(
        tmp.path(),
        &[
            "clone",
            "-q",
            "-b",
            "main",
            remote.to_str().unwrap(),
            "other",
        ],
    );
    edit(
        &other.join(".tavern"),
        &ids[2],
        "status: pending",
        "status: done",
    );
    edit(
        &other.join(".tavern"),
        &ids[4],
        "title: deadlock",
        "title: needle",
    );
    std::fs::remove_file(other.join(format!(".tavern/tasks/{}.md", ids[3]))).unwrap();
    std::fs::create_dir_all(other.join(".tavern/solutions/x")).unwrap();
    std::fs::write(other.join(".tavern/solutions/x/n.md"), "needle lock\n").unwrap();
    git(&other, &["add", "-A"]);
    git(&other, &["commit", "-q", "-m", "elsewhere"]);
    git(&other, &["push", "-q", "origin", "HEAD:main"]);
    searches(&main);
    git(&main, &["pull", "-q", "--ff-only", "origin", "main"]);
    let needle = tavern(&main, &["search", "needle", "--json"]).json();
    assert_eq!(needle["hits"].as_array().unwrap().len(), 2, "{needle}");
    same_as_fresh(&main, &board, "git pull");
}

/// Edits a task file in place, as an editor that writes in place would.
fn edit(board: &Path, id: &str, from: &str, to: &str) {
    let path = board.join(format!("tasks/{id}.md"));
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(text.contains(from), "{id} holds no '{from}'");
    std::fs::write(&path, text.replacen(from, to, 1)).unwrap();
}

/// `post TITLE --json` (topic `t`, severity low).
fn post_json(b: &TestBoard, title: &str) -> Out {
    b.run(&["post", title, "--topic", "t", "--severity", "low", "--json"])
}

#[test]
fn a_new_finding_like_an_open_one_is_named_as_a_likely_duplicate() {
    let b = TestBoard::new();
    let post = |title: &str| post_json(&b, title);
    let first = post("Parser crash on empty input").json()["id"]
        .as_str()
        .unwrap()
        .to_string();
    let other = post("Widget colours are off").json();
    assert!(other.get("similar").is_none(), "{other}");
    let dup = post("parser crash");
    dup.ok()
        .stderr_has(&format!("looks like open finding {first} (similarity"));
    let similar = &dup.json()["similar"];
    assert_eq!(similar[0]["id"], first.as_str(), "{similar}");
    assert_eq!(similar[0]["title"], "Parser crash on empty input");
    assert!(similar[0]["similarity"].as_f64().unwrap() >= 0.5);
    // `new observation` says the same; a resolved finding is no longer named.
    let again = b.run(&[
        "new",
        "observation",
        "Parser crash",
        "--set",
        "topic=t",
        "--set",
        "severity=low",
    ]);
    again.ok().stderr_has(&first);
    b.run(&["resolve", &first, "--resolution", "fixed"]).ok();
    let late = post("Empty input parser crash").json();
    let named: Vec<&str> = late["similar"]
        .as_array()
        .map(|a| a.iter().map(|s| s["id"].as_str().unwrap()).collect())
        .unwrap_or_default();
    assert!(!named.contains(&first.as_str()), "{late}");
}

#[test]
fn a_new_finding_sharing_only_a_word_or_two_with_an_open_one_is_not_named() {
    let b = TestBoard::new();
    let post = |title: &str| post_json(&b, title);
    for title in [
        "Login page is slow to load",
        "Flaky test in the sync module",
        "Parser crash on empty input",
        "Disk fills up with logs",
        "Lock timeout in sync",
        "Test suite is slow",
        "Test names are unclear",
        "Test fixtures leak temp files",
    ] {
        let v = post(title).json();
        assert!(v.get("similar").is_none(), "{title}: {v}");
    }
    // One distinctive word in common, and words every title holds: not a duplicate.
    for title in [
        "Login button is misaligned on mobile",
        "Crash reporter uploads are too big",
        "The sync of a big board is slow",
        "Test timeout",
    ] {
        let out = post(title);
        let v = out.ok().json();
        assert!(v.get("similar").is_none(), "{title}: {v}");
        assert!(
            !out.stderr.contains("looks like"),
            "{title}: {}",
            out.stderr
        );
    }
    // The same finding in other words still is.
    let dup = post("Crash in the parser when the input is empty").json();
    assert_eq!(
        dup["similar"][0]["title"], "Parser crash on empty input",
        "{dup}"
    );
}

/// A task file whose title and body are given.
fn task_with(id: &str, status: &str, title: &str, body: &str) -> String {
    format!(
        "---\nid: {id}\ntitle: {title}\nstatus: {status}\npriority: 1\ntags: []\ndepends_on: []\ncreated_at: 2026-11-01T10:00:00Z\ncreated_by: planner\nupdated_at: 2026-11-01T10:00:00Z\nrev: 1\n---\n\n{body}\n"
    )
}

#[test]
fn a_limit_cuts_the_whole_ranking_and_a_filter_reads_past_the_best_hits() {
    let b = TestBoard::new();
    // Forty pending tasks say "parser" often (equal scores: ties go by path), and rank
    // above the one done task that says it once.
    for i in 0..40 {
        b.write(
            &format!("tasks/t-{i:02}.md"),
            task_with(
                &format!("t-{i:02}"),
                "pending",
                "parser parser",
                "parser parser parser",
            ),
        );
    }
    b.write(
        "tasks/t-done.md",
        task_with(
            "t-done",
            "done",
            "Once",
            "the parser, once, among many other words",
        ),
    );
    let all = b
        .run(&["search", "parser", "--json", "--limit", "100"])
        .json();
    let order = ids(&all);
    let mut want: Vec<String> = (0..40).map(|i| format!("t-{i:02}")).collect();
    want.push("t-done".into());
    assert_eq!(order, want, "{all}");
    // A limit takes the first hits of the whole ranking, whatever it is.
    for limit in [1, 3, 17, 18, 19, 40] {
        let some = b
            .run(&["search", "parser", "--json", "--limit", &limit.to_string()])
            .json();
        assert_eq!(ids(&some), order[..limit], "--limit {limit}");
    }
    // A filter that turns down the forty best: the search reads on to the one it keeps.
    let done = b
        .run(&["search", "parser", "status=done", "--json", "--limit", "1"])
        .json();
    assert_eq!(ids(&done), ["t-done"], "{done}");
}

#[test]
fn a_near_miss_weighs_half_even_when_it_is_another_word_searched_for() {
    let b = TestBoard::new();
    b.write(
        "tasks/t-a.md",
        task_with("t-a", "pending", "Alpha", "the format"),
    );
    b.write(
        "tasks/t-b.md",
        task_with("t-b", "pending", "Bravo", "the formal"),
    );
    b.write(
        "tasks/t-c.md",
        task_with("t-c", "pending", "Charlie", "nothing"),
    );
    let score = |args: &[&str]| -> f64 {
        let mut all = vec!["search"];
        all.extend_from_slice(args);
        all.push("--json");
        let v = b.run(&all).json();
        let hit = v["hits"]
            .as_array()
            .unwrap()
            .iter()
            .find(|h| h["id"] == "t-b")
            .unwrap_or_else(|| panic!("{v}"))
            .clone();
        hit["score"].as_f64().unwrap()
    };
    // "format" finds t-b's "formal" one edit away, at half the weight; "formal" finds it
    // exactly: one and a half times what "formal" alone gives (the same document
    // frequency: one document holds each word).
    let alone = score(&["formal"]);
    let both = score(&["format", "formal"]);
    assert!(
        (both / alone - 1.5).abs() < 0.01,
        "format formal: {both}, formal: {alone}"
    );
    assert!((score(&["format"]) / alone - 0.5).abs() < 0.01);
}

// With `tavern watch` running, searches go by its change journal (README, "The read
// index"): the same changes must find the same, and an unchanged board no stat call.

#[test]
fn with_a_watcher_running_same_size_edits_in_place_are_found() {
    crate::util::watcher::with_a_watcher(&board_with_tasks(30), same_size_edits_in_place);
}

#[test]
fn with_a_watcher_running_renames_creations_deletions_and_odd_files_are_found() {
    crate::util::watcher::with_a_watcher(
        &board_with_tasks(40),
        editors_renames_creations_deletions,
    );
}

#[test]
fn with_a_watcher_running_edits_in_every_region_are_found_by_one_look_at_the_journal() {
    // One search takes where the journal stands once, for every region it covers: edits
    // in place in observations and questions (not only tasks) must be seen.
    crate::util::watcher::with_a_watcher(&board_with_tasks(5), |b| {
        let obs = post_lock_timeout(b, "a timeout again");
        let q = b.run(&["ask", "Is the timeout of the lock enough?"]).text();
        searches(b.root());
        for (round, file) in [
            format!("observations/{obs}.md"),
            format!("questions/{q}.md"),
        ]
        .iter()
        .enumerate()
        {
            let path = b.board().join(file);
            let before = std::fs::metadata(&path).unwrap();
            let text = std::fs::read_to_string(&path).unwrap();
            assert!(text.contains("timeout"), "{text}");
            std::fs::write(&path, text.replace("timeout", "network")).unwrap();
            assert_eq!(std::fs::metadata(&path).unwrap().ino(), before.ino());
            let found = tavern(b.root(), &["search", "network", "--json"]).json();
            let id = if round == 0 { &obs } else { &q };
            assert!(ids(&found).contains(id), "round {round}: {found}");
            same_as_fresh(b.root(), &b.board(), &format!("an edit in {file}"));
        }
    });
}

#[test]
fn with_a_watcher_running_a_search_of_an_unchanged_board_looks_at_no_task_file() {
    crate::crash_points::require_strace();
    crate::util::watcher::with_a_watcher(&board_with_tasks(40), |b| {
        searches(b.root());
        searches(b.root());
        let statted = |b: &TestBoard| {
            let (names, out) = crate::util::watcher::task_files_statted(b, &["search", "lock"]);
            out.ok();
            names.len()
        };
        // A watcher too slow to answer makes a search look at every file (right too):
        // asked a few times, one must go by the journal.
        let counts: Vec<usize> = (0..5).map(|_| statted(b)).collect();
        assert!(
            counts.contains(&0),
            "task files looked at per search: {counts:?}"
        );
    });
}

/// Each region's search manifest: (inode, mtime), by region.
fn manifests(board: &Path) -> Vec<(u64, i64, i64)> {
    ["tasks", "observations", "questions"]
        .iter()
        .map(|r| {
            let m = std::fs::metadata(search_dir(board).join(r).join("manifest")).unwrap();
            (m.ino(), m.mtime(), m.mtime_nsec())
        })
        .collect()
}

#[test]
fn with_a_watcher_running_a_search_of_an_unchanged_board_writes_no_manifest() {
    crate::util::watcher::with_a_watcher(&board_with_tasks(40), |b| {
        post_lock_timeout(b, "a lock");
        b.run(&["ask", "Is the lock enough?"]).ok();
        let ask = ["search", "lock", "--json", "--limit", "100"];
        let first = tavern(b.root(), &ask);
        first.ok();
        // A search that goes by the journal and finds nothing changed leaves every
        // manifest as it was (a watcher too slow to answer, or files read in the tick of
        // their last change, make a search write them: asked a few times, two searches
        // in a row must leave them).
        let mut before = manifests(&b.board());
        let mut kept = false;
        for _ in 0..20 {
            let out = tavern(b.root(), &ask);
            assert_eq!(out.stdout, first.stdout);
            let now = manifests(&b.board());
            if now == before {
                kept = true;
                break;
            }
            before = now;
        }
        assert!(kept, "every search wrote a manifest");
        // Changes after the position the manifests kept are still seen.
        let path = b.board().join("tasks/t-0001.md");
        let text = std::fs::read_to_string(&path).unwrap();
        std::fs::write(&path, text.replace("Nothing here.", "Needles here.")).unwrap();
        let found = tavern(b.root(), &["search", "needle", "--json"]).json();
        assert_eq!(ids(&found), ["t-0001"], "{found}");
        same_as_fresh(b.root(), &b.board(), "an edit after manifests were kept");
    });
}
