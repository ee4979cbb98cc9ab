//! The read index (`.state/index/`) is never wrong: files are changed behind its back in
//! every way a user can (in place at the same size within one second, by an editor's
//! rename, by `git checkout` and `git pull`, from another worktree, by a tavern killed
//! while it wrote the index, with a torn index file), and every read must then print what
//! a full scan prints: the same reads run again after the index is deleted, which rebuilds
//! it from the files alone.

#![cfg(unix)]

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, SystemTime};

use crate::concurrency::Rng;
use crate::util::git::{self, git};
use crate::util::{BIN, Out, TestBoard, output};

/// `tavern ARGS` in `dir` (a project), with a clean environment.
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

/// The reads the index answers, as printed (exit code, stdout, stderr), with the one
/// field that tells when a read ran (`summary`'s `generated_at`) taken out.
fn reads(dir: &Path) -> Vec<String> {
    let mut asks: Vec<Vec<&str>> = vec![
        vec!["list"],
        vec!["list", "--json", "--archived"],
        vec!["list", "tasks", "status=pending", "--json"],
        vec!["list", "status!=done", "priority<=2"],
        vec!["list", "status=claimed,pending", "--json", "--archived"],
        vec!["list", "observations", "archive", "--json"],
        vec!["list", "needle", "--json"],
        vec!["ready", "--json"],
        vec!["ready"],
        vec!["ready", "--all"],
        vec!["questions", "--all", "--json"],
        vec!["summary", "--json"],
    ];
    let first = tavern(dir, &["list", "tasks", "--json"]).json();
    let first_task = first["documents"]
        .as_array()
        .and_then(|d| d.first())
        .and_then(|d| d["id"].as_str())
        .map(str::to_string);
    if let Some(id) = &first_task {
        asks.push(vec!["deps", id, "--json"]);
    }
    asks.iter()
        .map(|args| {
            let out = tavern(dir, args);
            let mut stdout = out.stdout.clone();
            if args[0] == "summary"
                && let Ok(mut v) = serde_json::from_str::<serde_json::Value>(&stdout)
            {
                v.as_object_mut().unwrap().remove("generated_at");
                stdout = v.to_string();
            }
            Out { stdout, ..out }.transcript(args)
        })
        .collect()
}

fn index_dir(board: &Path) -> PathBuf {
    board.join(".state/index")
}

/// Reads through the index as it is, then again from the files alone: they must agree.
fn same_as_full_scan(dir: &Path, board: &Path, what: &str) {
    let indexed = reads(dir);
    std::fs::remove_dir_all(index_dir(board)).unwrap();
    let full = reads(dir);
    for (a, b) in indexed.iter().zip(&full) {
        assert_eq!(
            a, b,
            "{what}: the index answered differently from the files"
        );
    }
    assert!(
        index_dir(board).join("tasks/manifest").exists(),
        "{what}: the reads rebuilt no index"
    );
}

/// A task file as tavern writes them.
fn task_text(id: &str, status: &str, priority: u32, title: &str) -> String {
    format!(
        "---\nid: {id}\ntitle: {title}\nstatus: {status}\npriority: {priority}\ntags: []\ndepends_on: []\ncreated_at: 2026-11-01T10:00:00Z\ncreated_by: planner\nupdated_at: 2026-11-01T10:00:00Z\nrev: 1\n---\n\nbody\n"
    )
}

fn board_with_tasks(n: usize) -> TestBoard {
    let b = TestBoard::new();
    for i in 0..n {
        b.write(
            &format!("tasks/t-{i:04}.md"),
            task_text(&format!("t-{i:04}"), "pending", (i % 5) as u32, "a task"),
        );
    }
    b
}

#[test]
fn same_size_edits_in_place_within_one_second_are_seen() {
    same_size_edits_in_place(&board_with_tasks(30));
}

fn same_size_edits_in_place(b: &TestBoard) {
    let path = b.board().join("tasks/t-0007.md");
    reads(b.root());
    // Statuses of one length: every write keeps the file's size and inode, and several
    // land within one tick of the file system's clock.
    for (round, status) in ["claimed", "working", "pending", "blocked", "working"]
        .iter()
        .enumerate()
    {
        let before = std::fs::metadata(&path).unwrap();
        let text = task_text("t-0007", status, 0, "a task");
        std::fs::write(&path, &text).unwrap(); // truncates and writes the same inode
        let after = std::fs::metadata(&path).unwrap();
        assert_eq!(before.len(), after.len());
        let listed = tavern(b.root(), &["list", "tasks", "status=pending", "--json"]).json();
        let ids: Vec<&str> = listed["documents"]
            .as_array()
            .unwrap()
            .iter()
            .map(|d| d["id"].as_str().unwrap())
            .collect();
        assert_eq!(
            ids.contains(&"t-0007"),
            *status == "pending",
            "round {round}: wrote status {status}, list says {ids:?}"
        );
        same_as_full_scan(b.root(), &b.board(), &format!("in-place edit {round}"));
    }
}

#[test]
fn an_edit_that_puts_back_the_old_mtime_is_seen() {
    let b = board_with_tasks(20);
    let path = b.board().join("tasks/t-0003.md");
    let old = SystemTime::now() - Duration::from_secs(3600);
    std::fs::File::options()
        .write(true)
        .open(&path)
        .unwrap()
        .set_modified(old)
        .unwrap();
    // Wait until the file's change is old enough to be trusted, so the index keeps it.
    std::thread::sleep(Duration::from_millis(3100));
    reads(b.root());
    reads(b.root());
    // Same size, same mtime as cached: only the ctime (which nobody can set) differs.
    std::fs::write(&path, task_text("t-0003", "claimed", 3, "a task")).unwrap();
    std::fs::File::options()
        .write(true)
        .open(&path)
        .unwrap()
        .set_modified(old)
        .unwrap();
    let shown = tavern(b.root(), &["list", "tasks", "status=claimed", "--json"]).json();
    assert_eq!(shown["documents"][0]["id"], "t-0003", "{shown}");
    same_as_full_scan(b.root(), &b.board(), "an edit with its mtime put back");
}

#[test]
fn editors_writing_by_rename_creations_deletions_and_odd_files_are_seen() {
    editors_creations_deletions_and_odd_files(&board_with_tasks(40));
}

fn editors_creations_deletions_and_odd_files(b: &TestBoard) {
    reads(b.root());
    let tasks = b.board().join("tasks");
    // An editor's save: a temp file renamed over the document.
    std::fs::write(
        tasks.join(".t-0001.md.swp"),
        task_text("t-0001", "done", 1, "saved by an editor"),
    )
    .unwrap();
    std::fs::rename(tasks.join(".t-0001.md.swp"), tasks.join("t-0001.md")).unwrap();
    same_as_full_scan(b.root(), &b.board(), "an editor's rename");
    // Created, deleted, broken, not UTF-8, a symlink, a directory named like a document.
    b.write("tasks/t-new.md", task_text("t-new", "pending", 0, "needle"));
    std::fs::remove_file(tasks.join("t-0002.md")).unwrap();
    b.write(
        "tasks/t-0003.md",
        "---\nid: t-0003\ntitle: [unclosed\n---\n",
    );
    b.write("tasks/t-0004.md", b"---\nid: t-0004\ntitle: \xff\n---\n");
    std::os::unix::fs::symlink(tasks.join("t-0005.md"), tasks.join("t-link.md")).unwrap();
    std::fs::create_dir(tasks.join("t-dir.md")).unwrap();
    b.write(
        "tasks/Not An Id.md",
        task_text("x", "pending", 0, "bad name"),
    );
    b.write(
        "tasks/t-0006.md",
        task_text("t-other", "pending", 0, "id differs"),
    );
    same_as_full_scan(b.root(), &b.board(), "created, deleted and odd files");
    // And back: each odd file fixed, in place and by rename.
    std::fs::remove_dir(tasks.join("t-dir.md")).unwrap();
    std::fs::remove_file(tasks.join("t-link.md")).unwrap();
    b.write(
        "tasks/t-0003.md",
        task_text("t-0003", "pending", 2, "fixed"),
    );
    b.write(
        "tasks/t-0004.md",
        task_text("t-0004", "pending", 2, "fixed"),
    );
    same_as_full_scan(b.root(), &b.board(), "odd files fixed");
}

#[test]
fn settings_that_change_what_is_skipped_are_seen() {
    let b = board_with_tasks(10);
    b.write(
        "tasks/t-big.md",
        task_text("t-big", "pending", 1, &"long ".repeat(400)),
    );
    reads(b.root());
    let yaml = b.read("board.yaml");
    let limited = yaml.replace("max_doc_bytes: ", "max_doc_bytes: 1000 #");
    assert_ne!(yaml, limited);
    b.write("board.yaml", limited);
    let listed = tavern(b.root(), &["list", "--json"]).json();
    assert!(
        listed["skipped"].to_string().contains("t-big"),
        "a document over the new limit is skipped: {listed}"
    );
    same_as_full_scan(b.root(), &b.board(), "a lower max_doc_bytes");
}

#[test]
fn a_torn_or_foreign_index_is_rebuilt_from_the_files() {
    let b = board_with_tasks(50);
    reads(b.root());
    let tasks_index = index_dir(&b.board()).join("tasks");
    let mut buckets: Vec<PathBuf> = std::fs::read_dir(&tasks_index)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| !p.ends_with("manifest"))
        .collect();
    buckets.sort();
    assert!(!buckets.is_empty());
    // A change the index has not seen, then its files torn as by a crash or a full disk.
    b.write("tasks/t-0010.md", task_text("t-0010", "done", 4, "changed"));
    let bytes = std::fs::read(&buckets[0]).unwrap();
    std::fs::write(&buckets[0], &bytes[..bytes.len() / 2]).unwrap();
    same_as_full_scan(b.root(), &b.board(), "a bucket cut in half");
    reads(b.root());
    b.write("tasks/t-0011.md", task_text("t-0011", "done", 4, "changed"));
    std::fs::write(tasks_index.join("manifest"), b"not an index").unwrap();
    same_as_full_scan(b.root(), &b.board(), "a garbage manifest");
    reads(b.root());
    // Zeros where the data was (a power loss after the rename, before the data).
    b.write("tasks/t-0012.md", task_text("t-0012", "done", 4, "changed"));
    for p in std::fs::read_dir(&tasks_index).unwrap() {
        let p = p.unwrap().path();
        let len = std::fs::metadata(&p).unwrap().len() as usize;
        std::fs::write(&p, vec![0u8; len]).unwrap();
    }
    same_as_full_scan(b.root(), &b.board(), "zeroed index files");
    // The index directory replaced by a file: reads still work from the files.
    std::fs::remove_dir_all(index_dir(&b.board())).unwrap();
    std::fs::write(index_dir(&b.board()), b"in the way").unwrap();
    let listed = tavern(b.root(), &["list", "--json"]);
    listed.ok();
    assert_eq!(listed.json()["documents"].as_array().unwrap().len(), 50);
    std::fs::remove_file(index_dir(&b.board())).unwrap();
}

#[test]
fn a_tavern_killed_while_it_writes_the_index_leaves_nothing_wrong() {
    let b = board_with_tasks(1500);
    reads(b.root());
    // How long a read that rewrites the index takes here, to kill the next ones at any
    // moment of theirs (a random one; nothing is asserted about the time).
    b.write("tasks/t-0000.md", task_text("t-0000", "done", 0, "a task"));
    let started = std::time::Instant::now();
    tavern(b.root(), &["list", "--json"]).ok();
    let span = started.elapsed().as_micros().max(1000) as u64;
    let mut rng = Rng::new(21);
    for round in 0..8 {
        // Change some files, then start a read and kill it at some moment of its work.
        for _ in 0..20 {
            let i = rng.below(1500);
            let status = ["pending", "claimed", "done"][rng.below(3) as usize];
            b.write(
                &format!("tasks/t-{i:04}.md"),
                task_text(&format!("t-{i:04}"), status, (i % 5) as u32, "a task"),
            );
        }
        if round % 3 == 0 {
            // Now and then a new bucket count: the directory grows past what it was.
            for j in 0..300 {
                let id = format!("t-r{round}-{j}");
                b.write(
                    &format!("tasks/{id}.md"),
                    task_text(&id, "pending", 1, "grown"),
                );
            }
        }
        let mut child = Command::new(BIN)
            .args(["list", "--json"])
            .current_dir(b.root())
            .env_remove("TAVERN_BOARD")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(Duration::from_micros(rng.below(span)));
        let _ = child.kill();
        let _ = child.wait();
        let indexed = reads(b.root());
        let copy = tempfile::tempdir().unwrap();
        // The full scan runs on a copy of the board without its index, so that the index
        // the killed read left is the one this board's next read meets.
        copy_tree(&b.board(), &copy.path().join(".tavern"));
        let full = reads(copy.path());
        let strip = |v: &[String]| -> Vec<String> {
            v.iter()
                .map(|s| s.replace(&copy.path().display().to_string(), "ROOT"))
                .map(|s| s.replace(&b.root().display().to_string(), "ROOT"))
                .collect()
        };
        assert_eq!(strip(&indexed), strip(&full), "round {round}");
    }
}

/// Copies a board's files, without its derived state (`.state/`, which a running watcher
/// writes to while the copy is made: its files may come and go under the copy).
fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let ty = entry.file_type().unwrap();
        let dest = to.join(entry.file_name());
        if ty.is_dir() && entry.file_name() != ".state" {
            copy_tree(&entry.path(), &dest);
        } else if ty.is_file() {
            match std::fs::copy(entry.path(), &dest) {
                Ok(_) => {}
                // A running watcher's state file replaced meanwhile (temp file and rename).
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => panic!("{}: {e}", entry.path().display()),
            }
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
        let out = tavern(&main, &["new", "task", "--title", &format!("task {i}")]);
        out.ok();
        ids.push(out.text());
    }
    git(&main, &["add", "-A"]);
    git(&main, &["commit", "-q", "-m", "old board"]);
    let board = main.join(".tavern");
    reads(&main);
    tavern(&main, &["claim", &ids[0], "--as", "coder-1"]).ok();
    tavern(&main, &["new", "task", "--title", "after the commit"]).ok();
    b_edit(&board, &ids[1], "title: task 1", "title: task one");
    reads(&main);
    // Back to the old board: git rewrites the files it tracks (the new task stays, as an
    // untracked file).
    git(&main, &["checkout", "-q", "HEAD", "--", ".tavern/tasks"]);
    same_as_full_scan(&main, &board, "git checkout of the old board");

    // A clone changes the board and pushes; the pull brings it here.
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
    b_edit(
        &other.join(".tavern"),
        &ids[2],
        "status: pending",
        "status: done",
    );
    std::fs::remove_file(other.join(format!(".tavern/tasks/{}.md", ids[3]))).unwrap();
    git(&other, &["commit", "-q", "-am", "elsewhere"]);
    git(&other, &["push", "-q", "origin", "HEAD:main"]);
    reads(&main);
    git(&main, &["pull", "-q", "--ff-only", "origin", "main"]);
    same_as_full_scan(&main, &board, "git pull");
}

/// Edits a task file in place, as a person in an editor that writes in place would.
fn b_edit(board: &Path, id: &str, from: &str, to: &str) {
    let path = board.join(format!("tasks/{id}.md"));
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(text.contains(from), "{id} holds no '{from}'");
    std::fs::write(&path, text.replacen(from, to, 1)).unwrap();
}

#[test]
fn a_hand_edit_in_the_main_worktree_is_seen_from_another_worktree() {
    let tmp = tempfile::tempdir().unwrap();
    let main = tmp.path().join("main");
    git::init_repo(&main);
    tavern(&main, &["init"]).ok();
    let id = tavern(&main, &["new", "task", "--title", "shared"]).text();
    git(&main, &["add", "-A"]);
    git(&main, &["commit", "-q", "-m", "board"]);
    let wt = tmp.path().join("wt");
    git(
        &main,
        &[
            "worktree",
            "add",
            "-q",
            "-b",
            "feature",
            wt.to_str().unwrap(),
        ],
    );
    let board = main.join(".tavern");
    reads(&wt);
    b_edit(&board, &id, "title: shared", "title: edited in main");
    let shown = tavern(&wt, &["list", "--json"]).json();
    assert_eq!(shown["documents"][0]["fields"]["title"], "edited in main");
    tavern(&wt, &["claim", &id, "--as", "coder-2"]).ok();
    same_as_full_scan(&main, &board, "a claim from the worktree");
    same_as_full_scan(&wt, &board, "read from the worktree");
}

#[test]
fn queries_over_cached_documents_match_what_a_full_scan_matches() {
    let b = board_with_tasks(5);
    // Values whose text is not what they read as (a YAML escape, quotes, `True`), a
    // Kelvin sign that lowercases to `k`, a list, a tag, a word in the body only.
    let docs = [
        ("t-esc", "status: \"pend\\u0069ng\"\nflag: True\n", "body"),
        ("t-quoted", "status: 'pending'\nflag: true\n", "body"),
        (
            "t-kelvin",
            "status: pending\nflag: false\n",
            "\u{212A}ettle in the body",
        ),
        (
            "t-list",
            "status: done\ntags: [Parser, cli]\nowner: [ann, bob]\n",
            "NEEDLE here",
        ),
        ("t-plain", "status: pending\npriority: 1\n", "kettle"),
        // Plain lines the prefilter reads by field: numbers in a list, a tag as a
        // string, an empty value, a status that is a number.
        (
            "t-num",
            "status: pending\npriority: -1\ntags: [1, solo]\n",
            "b",
        ),
        ("t-str", "status: pending\npriority:\ntags: solo\n", "b"),
        ("t-seven", "status: 7\npriority: 0\n", "b"),
    ];
    for (id, fields, body) in docs {
        b.write(
            &format!("tasks/{id}.md"),
            format!("---\nid: {id}\ntitle: {id} title\n{fields}---\n{body}\n"),
        );
    }
    // Old enough to be trusted, so the second round of reads takes them from the index.
    std::thread::sleep(Duration::from_millis(3100));
    let queries: &[&[&str]] = &[
        &["status=pending"],
        &["flag=true"],
        &["flag=True"],
        &["kettle"],
        &["KETTLE"],
        &["needle"],
        &["tag:Parser"],
        &["tag:parser"],
        &["owner=bob"],
        &["has:owner"],
        &["no:owner", "status=pending"],
        &["status=pending,done", "priority<=1"],
        &["\"t-esc title\""],
        &["t-list"],
        &["tag:1"],
        &["tag:solo"],
        &["priority<1"],
        &["priority!=1"],
        &["has:priority"],
        &["no:priority", "status=pending"],
        &["status!=done"],
        &["status=7"],
    ];
    let run = |q: &[&str]| {
        let mut args = vec!["list", "--json"];
        args.extend_from_slice(q);
        let out = tavern(b.root(), &args);
        format!("{} {}{}", out.code, out.stdout, out.stderr)
    };
    let full: Vec<String> = queries.iter().map(|q| run(q)).collect();
    let ready_full = tavern(b.root(), &["ready", "--json"]).stdout;
    let cached: Vec<String> = queries.iter().map(|q| run(q)).collect();
    for ((q, f), c) in queries.iter().zip(&full).zip(&cached) {
        assert_eq!(f, c, "list {q:?}: from the index, not as from the files");
    }
    assert_eq!(tavern(b.root(), &["ready", "--json"]).stdout, ready_full);
    assert!(
        full[0].contains("t-esc") && full[0].contains("t-kelvin"),
        "{}",
        full[0]
    );
    assert!(
        full[3].contains("t-kelvin"),
        "the Kelvin sign matches k: {}",
        full[3]
    );
    same_as_full_scan(b.root(), &b.board(), "awkward values");
    // `claim --next` through the index claims what it claims on a copy without one.
    let copy = tempfile::tempdir().unwrap();
    copy_tree(b.root(), copy.path());
    assert!(!index_dir(&copy.path().join(".tavern")).exists());
    for round in 0..4 {
        let here = tavern(b.root(), &["claim", "--next", "--json"]);
        let there = tavern(copy.path(), &["claim", "--next", "--json"]);
        assert_eq!(here.code, there.code, "round {round}: {}", here.stderr);
        assert_eq!(
            here.json()["id"],
            there.json()["id"],
            "round {round}: {} / {}",
            here.stdout,
            there.stdout
        );
    }
}

// With `tavern watch` running, reads go by its change journal (`.state/journal`) instead of
// a `statat` of every file. The same changes behind the index's back must read the same.

#[test]
fn with_a_watcher_running_same_size_edits_in_place_are_seen() {
    crate::util::watcher::with_a_watcher(&board_with_tasks(30), same_size_edits_in_place);
}

#[test]
fn with_a_watcher_running_editors_creations_deletions_and_odd_files_are_seen() {
    crate::util::watcher::with_a_watcher(
        &board_with_tasks(40),
        editors_creations_deletions_and_odd_files,
    );
}

/// The task files `tavern list tasks` looked at with a stat call, by name, counted;
/// and what it listed.
fn files_statted(b: &TestBoard) -> (std::collections::BTreeMap<String, usize>, String) {
    let (names, out) = crate::util::watcher::task_files_statted(b, &["list", "tasks"]);
    out.ok();
    let mut seen = std::collections::BTreeMap::new();
    for name in names {
        *seen.entry(name).or_insert(0) += 1;
    }
    (seen, out.stdout)
}

#[test]
fn with_a_watcher_running_a_read_stats_only_what_its_journal_names_and_without_one_every_file() {
    crate::crash_points::require_strace();
    let b = board_with_tasks(40);
    let mut w = crate::util::watcher::Watcher::start(&b, &[]);
    crate::util::watcher::wait_for_journal(&b);
    // The first read through the journal records where it stood; the next goes by it.
    reads(b.root());
    reads(b.root());
    // A watcher too slow to answer (a loaded machine) makes a read look at every file,
    // which is right too: asked again a few times, one read must go by the journal.
    let mut tries = 0;
    let statted = loop {
        let (statted, _) = files_statted(&b);
        tries += 1;
        if statted.len() < 40 || tries == 5 {
            break statted;
        }
    };
    assert!(
        statted.is_empty(),
        "an unchanged board: no file looked at, {statted:?}"
    );

    // An edit in place: that file only is looked at, and read.
    let mut tries = 0;
    let (statted, listed) = loop {
        tries += 1;
        let title = format!("edited in place {tries}");
        b.write("tasks/t-0007.md", task_text("t-0007", "pending", 1, &title));
        let (statted, listed) = files_statted(&b);
        assert!(listed.contains(&title), "{listed}");
        if statted.len() < 40 || tries == 5 {
            break (statted, listed);
        }
    };
    assert_eq!(
        statted.keys().collect::<Vec<_>>(),
        ["t-0007.md"],
        "{statted:?} {listed}"
    );
    same_as_full_scan(b.root(), &b.board(), "an edit in place with a watcher");

    // A watcher killed with SIGKILL leaves its journal, unanswered: a change made then
    // (no one records it) is still seen, because every file is looked at again.
    crate::util::watcher::wait_for_journal(&b);
    reads(b.root());
    reads(b.root());
    crate::util::watcher::signal(w.pid(), "KILL");
    w.wait_exit();
    assert!(
        b.board().join(".state/journal").exists(),
        "a killed watcher removes nothing"
    );
    b.write(
        "tasks/t-0011.md",
        task_text("t-0011", "pending", 1, "edited unwatched"),
    );
    let (statted, listed) = files_statted(&b);
    assert_eq!(statted.len(), 40, "every file looked at: {statted:?}");
    assert!(listed.contains("edited unwatched"), "{listed}");
    same_as_full_scan(b.root(), &b.board(), "an edit after the watcher was killed");

    // A watcher stopped as usual takes its journal with it.
    let w = crate::util::watcher::Watcher::start(&b, &[]);
    crate::util::watcher::wait_for_journal(&b);
    w.stop();
    assert!(!b.board().join(".state/journal").exists());
}

// `claim --next` without a query chooses by the heads the index keeps beside each cached
// text (status, priority, creation time), without parsing every task. Its choice must be
// `ready`'s first for the claiming agent, every time, whatever changed behind the index.

/// Tasks that put every part of `ready`'s order and checks to the test: priorities and
/// severities, creation times that are not times, missing, or in other offsets, ties on
/// both broken by id, frontmatters only the full YAML parser reads, a dependency not done
/// and one done, needs the agent lacks, and files that are skipped.
fn awkward_ready_board() -> TestBoard {
    let b = TestBoard::new();
    let task = |id: &str, fields: &str| {
        b.write(
            &format!("tasks/{id}.md"),
            format!("---\nid: {id}\ntitle: {id}\n{fields}---\nbody\n"),
        );
    };
    task("t-done", "status: done\npriority: 0\n");
    task("t-open-dep", "status: working\npriority: 0\n");
    task(
        "t-a",
        "status: pending\npriority: 1\ncreated_at: 2026-11-02T10:00:00Z\n",
    );
    task(
        "t-b",
        "status: pending\npriority: 1\ncreated_at: 2026-11-02T11:00:00+02:00\n",
    );
    task(
        "t-c",
        "status: pending\npriority: 1\ncreated_at: 2026-11-02T10:00:00Z\n",
    );
    task("t-d", "status: pending\npriority: 1\ncreated_at: soon\n");
    task("t-e", "status: pending\npriority: 1\n");
    task(
        "t-f",
        "status: 'pending'\npriority: 0\ncreated_at: \"2026-11-03T10:00:00Z\"\n",
    );
    task("t-g", "status: pending\nseverity: high\n");
    task(
        "t-h",
        "status: pending\npriority: 0\ndepends_on: [t-open-dep]\n",
    );
    task(
        "t-i",
        "status: pending\npriority: 0\ndepends_on: [t-done]\n",
    );
    task("t-j", "status: pending\npriority: 0\nneeds: [cobol]\n");
    task("t-k", "status: pending\n");
    task("t-l", "status: [pending]\npriority: 0\n");
    task(
        "t-m",
        "status: pending\npriority: -1\ncreated_at: 2026-11-09T10:00:00.5Z\n",
    );
    b.write("tasks/t-broken.md", "---\nid: t-broken\nstatus: [\n---\n");
    b.write("tasks/Not-An-Id.md", "---\nid: x\n---\n");
    b.run(&[
        "agent",
        "register",
        "--name",
        "tester",
        "--capabilities",
        "rust",
        "--pid",
        &std::process::id().to_string(),
    ])
    .ok();
    b
}

/// Claims with `claim --next` until nothing is left, each time checking that it took what
/// `ready` lists first from the files alone (on a copy without the index), and warned of
/// the same skipped files; before each claim `between` changes files behind the index's
/// back. The claimed ids, in order.
fn claims_follow_ready(b: &TestBoard, mut between: impl FnMut(usize)) -> Vec<String> {
    let mut claimed = Vec::new();
    for round in 0..30 {
        between(round);
        let copy = tempfile::tempdir().unwrap();
        copy_tree(b.root(), copy.path());
        let ready = tavern(copy.path(), &["ready", "--json"]);
        let first = ready.json()["documents"][0]["id"]
            .as_str()
            .map(str::to_string);
        let next = tavern(b.root(), &["claim", "--next", "--json"]);
        let warned = |s: &str| {
            let mut w: Vec<String> = s
                .lines()
                .filter(|l| l.starts_with("warning"))
                .map(str::to_string)
                .collect();
            w.sort();
            w
        };
        assert_eq!(
            warned(&next.stderr),
            warned(&ready.stderr),
            "round {round}: the skipped files"
        );
        let Some(first) = first else {
            assert_eq!(
                next.code, 4,
                "round {round}: nothing ready: {}",
                next.stderr
            );
            return claimed;
        };
        assert_eq!(next.code, 0, "round {round}: {}", next.stderr);
        assert_eq!(
            next.json()["id"].as_str(),
            Some(first.as_str()),
            "round {round}: claim --next took another task than ready's first ({})",
            ready.stdout
        );
        claimed.push(first);
    }
    panic!("claims never ran out: {claimed:?}");
}

#[test]
fn claim_next_takes_readys_first_task_whatever_changed_behind_the_index() {
    let b = awkward_ready_board();
    let path = |id: &str| b.board().join(format!("tasks/{id}.md"));
    // Reads that leave the index trusting every file and the directory's names (the last
    // claim renamed a file into it): so the next `claim --next` reads only heads, and an
    // edit in place after them is seen by its stat data alone.
    let settle = || {
        for _ in 0..2 {
            std::thread::sleep(Duration::from_millis(50));
            tavern(b.root(), &["list", "tasks"]).ok();
        }
    };
    let claimed = claims_follow_ready(&b, |round| match round {
        // In place: t-k becomes the best.
        1 => {
            settle();
            let text = b.read("tasks/t-k.md");
            std::fs::write(
                path("t-k"),
                text.replace("status: pending\n", "status: pending\npriority: -9\n"),
            )
            .unwrap();
        }
        // The open dependency is done: t-h becomes ready.
        2 => {
            let text = b.read("tasks/t-open-dep.md");
            std::fs::write(
                path("t-open-dep"),
                text.replace("status: working", "status: done"),
            )
            .unwrap();
        }
        // An editor's rename puts a new best task in (after reads that trust the rest).
        3 => {
            settle();
            let tmp = b.board().join("tasks/.t-new.md.swp");
            std::fs::write(&tmp, "---\nid: t-new\nstatus: pending\npriority: -5\n---\n").unwrap();
            std::fs::rename(&tmp, path("t-new")).unwrap();
        }
        // A task the index holds goes away.
        5 => std::fs::remove_file(path("t-e")).unwrap(),
        // Same size, in place: t-g no longer claimable.
        4 => {
            settle();
            let text = b.read("tasks/t-g.md");
            std::fs::write(
                path("t-g"),
                text.replace("status: pending", "status: blocked"),
            )
            .unwrap();
        }
        _ => {}
    });
    // Every part of the order and every check was exercised.
    assert_eq!(claimed[0], "t-m", "priority -1 first");
    for id in ["t-k", "t-h", "t-new", "t-f", "t-i", "t-a", "t-d"] {
        assert!(
            claimed.contains(&id.to_string()),
            "{id} never claimed: {claimed:?}"
        );
    }
    for id in ["t-e", "t-g", "t-j", "t-l"] {
        assert!(
            !claimed.contains(&id.to_string()),
            "{id} claimed: {claimed:?}"
        );
    }
    let pos = |id: &str| claimed.iter().position(|c| c == id).unwrap();
    // Among priority 1: not-a-time first, then by instant, ties by id.
    assert!(
        pos("t-d") < pos("t-b") && pos("t-b") < pos("t-a") && pos("t-a") < pos("t-c"),
        "{claimed:?}"
    );
}

#[test]
fn with_a_watcher_running_claim_next_takes_readys_first_task() {
    crate::util::watcher::with_a_watcher(&awkward_ready_board(), |b| {
        let path = |id: &str| b.board().join(format!("tasks/{id}.md"));
        let claimed = claims_follow_ready(b, |round| {
            // Reads that bring the index up to date (the last claim's file, racy when
            // first read, is read again), so that the journal vouches for the bucket and
            // `claim --next` goes by its picks alone; whichever way it reads, it must take
            // `ready`'s first.
            if round % 2 == 0 {
                for _ in 0..2 {
                    std::thread::sleep(Duration::from_millis(50));
                    tavern(b.root(), &["list", "tasks"]).ok();
                }
            }
            if round == 2 {
                let text = b.read("tasks/t-k.md");
                std::fs::write(
                    path("t-k"),
                    text.replace("status: pending\n", "status: pending\npriority: -9\n"),
                )
                .unwrap();
            }
        });
        assert_eq!(claimed[0], "t-m");
        assert!(claimed.contains(&"t-k".to_string()), "{claimed:?}");
    });
}

// `deps`, `tree` and `ready` decide the task graph from the heads the index keeps
// (`depends_on`, `parent`, title, status): an edit of those fields behind its back, in
// place at the same size within one second, by an editor's rename, or by `git checkout`,
// must show in them as in a full scan.

/// A task that waits for `dep` and is a subtask of `parent` (ids of one length, so that
/// an edit that swaps one for another keeps the file's size).
fn graph_task(id: &str, status: &str, dep: &str, parent: &str) -> String {
    format!(
        "---\nid: {id}\ntitle: task {id}\nstatus: {status}\npriority: 1\ntags: []\ndepends_on: [{dep}]\nparent: {parent}\ncreated_at: 2026-11-01T10:00:00Z\ncreated_by: planner\nupdated_at: 2026-11-01T10:00:00Z\nrev: 1\n---\n\nbody\n"
    )
}

/// t-0000 is the root; t-0001 is done, the others pending; each of t-0002..t-0005 waits
/// for the one before it, and all are subtasks of t-0000.
fn graph_board() -> TestBoard {
    let b = TestBoard::new();
    b.write(
        "tasks/t-0000.md",
        task_text("t-0000", "pending", 1, "the root"),
    );
    for i in 1..6 {
        let status = if i == 1 { "done" } else { "pending" };
        b.write(
            &format!("tasks/t-{i:04}.md"),
            graph_task(
                &format!("t-{i:04}"),
                status,
                &format!("t-{:04}", i - 1),
                "t-0000",
            ),
        );
    }
    b
}

/// What the graph reads print, each as (args, exit, stdout, stderr).
fn graph_reads(dir: &Path) -> Vec<String> {
    let mut asks: Vec<Vec<String>> =
        vec![vec!["ready".into()], vec!["ready".into(), "--json".into()]];
    for i in 0..6 {
        let id = format!("t-{i:04}");
        asks.push(vec!["deps".into(), id.clone()]);
        asks.push(vec!["deps".into(), id.clone(), "--json".into()]);
        asks.push(vec!["tree".into(), id.clone()]);
        asks.push(vec!["tree".into(), id, "--json".into()]);
    }
    asks.iter()
        .map(|args| {
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            tavern(dir, &args).transcript(&args)
        })
        .collect()
}

/// The graph reads through the index as it is, then from the files alone: they must agree.
fn graph_same_as_full_scan(dir: &Path, board: &Path, what: &str) -> Vec<String> {
    let indexed = graph_reads(dir);
    std::fs::remove_dir_all(index_dir(board)).unwrap();
    let full = graph_reads(dir);
    assert_eq!(indexed.len(), full.len());
    for (a, b) in indexed.iter().zip(&full) {
        assert_eq!(
            a, b,
            "{what}: the index answered differently from the files"
        );
    }
    full
}

/// What `deps ID --json` says the task waits for directly, and `tree ROOT --json` its
/// direct subtasks.
fn waits_for(dir: &Path, id: &str) -> Vec<String> {
    let v = tavern(dir, &["deps", id, "--json"]).json();
    v["waits_for"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["id"].as_str().unwrap().to_string())
        .collect()
}

fn subtasks(dir: &Path, id: &str) -> Vec<String> {
    let v = tavern(dir, &["tree", id, "--json"]).json();
    v["children"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["id"].as_str().unwrap().to_string())
        .collect()
}

fn ready_ids(dir: &Path) -> Vec<String> {
    let v = tavern(dir, &["ready", "--json"]).json();
    v["documents"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["id"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn same_size_edits_of_depends_on_and_parent_within_one_second_are_seen_by_deps_tree_and_ready() {
    graph_edits_in_place(&graph_board());
}

fn graph_edits_in_place(b: &TestBoard) {
    let dir = b.root();
    let path = b.board().join("tasks/t-0003.md");
    graph_reads(dir);
    assert_eq!(waits_for(dir, "t-0003"), ["t-0002"]);
    // Each round rewrites the same inode at the same size, several within one tick.
    for (round, (dep, parent)) in [
        ("t-0001", "t-0002"),
        ("t-0002", "t-0000"),
        ("t-0001", "t-0001"),
        ("t-0004", "t-0000"),
    ]
    .iter()
    .enumerate()
    {
        let before = std::fs::metadata(&path).unwrap();
        std::fs::write(&path, graph_task("t-0003", "pending", dep, parent)).unwrap();
        assert_eq!(before.len(), std::fs::metadata(&path).unwrap().len());
        assert_eq!(waits_for(dir, "t-0003"), [*dep], "round {round}");
        assert!(
            subtasks(dir, parent).contains(&"t-0003".to_string()),
            "round {round}: t-0003 is a subtask of {parent}"
        );
        // t-0003 is ready exactly when what it waits for is done (t-0001).
        assert_eq!(
            ready_ids(dir).contains(&"t-0003".to_string()),
            *dep == "t-0001",
            "round {round}"
        );
        graph_same_as_full_scan(dir, &b.board(), &format!("in-place graph edit {round}"));
    }
}

#[test]
fn depends_on_and_parent_changed_by_an_editors_rename_are_seen_by_deps_tree_and_ready() {
    graph_edits_by_rename(&graph_board());
}

fn graph_edits_by_rename(b: &TestBoard) {
    let dir = b.root();
    let tasks = b.board().join("tasks");
    graph_reads(dir);
    for (round, (dep, parent)) in [("t-0001", "t-0004"), ("t-0005", "t-0002")]
        .iter()
        .enumerate()
    {
        let tmp = tasks.join(".t-0003.md.swp");
        std::fs::write(&tmp, graph_task("t-0003", "pending", dep, parent)).unwrap();
        std::fs::rename(&tmp, tasks.join("t-0003.md")).unwrap();
        assert_eq!(waits_for(dir, "t-0003"), [*dep], "round {round}");
        assert_eq!(subtasks(dir, parent), ["t-0003"], "round {round}");
        graph_same_as_full_scan(dir, &b.board(), &format!("graph edit by rename {round}"));
    }
    // A task made and one removed behind the index's back.
    std::fs::write(
        tasks.join("t-0006.md"),
        graph_task("t-0006", "pending", "t-0001", "t-0005"),
    )
    .unwrap();
    std::fs::remove_file(tasks.join("t-0004.md")).unwrap();
    assert_eq!(subtasks(dir, "t-0005"), ["t-0006"]);
    let deps5 = tavern(dir, &["deps", "t-0005", "--json"]).json();
    assert_eq!(deps5["waits_for"][0]["id"], "t-0004");
    assert_eq!(deps5["waits_for"][0]["missing"], true, "{deps5}");
    graph_same_as_full_scan(dir, &b.board(), "a task made and one removed");
}

#[test]
fn with_a_watcher_running_graph_edits_in_place_and_by_rename_are_seen() {
    crate::util::watcher::with_a_watcher(&graph_board(), |b| {
        graph_edits_in_place(b);
        graph_edits_by_rename(b);
    });
}

#[test]
fn git_checkout_of_an_old_graph_is_seen_by_deps_tree_and_ready() {
    let tmp = tempfile::tempdir().unwrap();
    let main = tmp.path().join("main");
    git::init_repo(&main);
    tavern(&main, &["init"]).ok();
    let board = main.join(".tavern");
    std::fs::write(
        board.join("tasks/t-0000.md"),
        task_text("t-0000", "pending", 1, "the root"),
    )
    .unwrap();
    for i in 1..6 {
        let status = if i == 1 { "done" } else { "pending" };
        std::fs::write(
            board.join(format!("tasks/t-{i:04}.md")),
            graph_task(
                &format!("t-{i:04}"),
                status,
                &format!("t-{:04}", i - 1),
                "t-0000",
            ),
        )
        .unwrap();
    }
    git(&main, &["add", "-A"]);
    git(&main, &["commit", "-q", "-m", "old graph"]);
    let old = graph_same_as_full_scan(&main, &board, "the old graph");
    b_edit(
        &board,
        "t-0004",
        "depends_on: [t-0003]",
        "depends_on: [t-0001]",
    );
    b_edit(&board, "t-0002", "parent: t-0000", "parent: t-0005");
    assert_eq!(waits_for(&main, "t-0004"), ["t-0001"]);
    assert_eq!(subtasks(&main, "t-0005"), ["t-0002"]);
    assert!(ready_ids(&main).contains(&"t-0004".to_string()));
    git(&main, &["checkout", "-q", "HEAD", "--", ".tavern/tasks"]);
    assert_eq!(waits_for(&main, "t-0004"), ["t-0003"]);
    assert!(subtasks(&main, "t-0005").is_empty());
    let now = graph_same_as_full_scan(&main, &board, "git checkout of the old graph");
    assert_eq!(now, old, "the old graph reads as it did");
}

// `ready` with a query, `ready --json` and the MCP `ready` tool decide from the heads too:
// a head answers the terms it can (status, priority, title, region, claimant, id and
// title words), a task it rules out is passed over unparsed, and a task is parsed only
// where a term needs its text, or for the JSON it is printed as. Each must print what a
// full scan prints, and what the parsed tasks give, whatever changed behind the index.

/// A term every task matches that no head answers (a head keeps no tags): a query with it
/// is judged from the parsed tasks.
const NO_HEAD: &str = "tags!=no-such-tag";

/// Queries the heads decide for every task, for some, and for none.
const READY_QUERIES: [&str; 8] = [
    "status=pending priority<=1",
    "priority>=1 region=tasks",
    "mine",
    "body",
    "tag:x",
    "no:claimed_by",
    "\"too\"",
    "title=words",
];

/// Every form of `ready` (each query and none; table and `--json`; with `--all` and
/// without) as (args, exit, stdout, stderr); each with a query printed as the parsed tasks
/// print it (the query and [`NO_HEAD`]).
fn ready_forms(dir: &Path) -> Vec<String> {
    let run = |args: &[&str]| {
        let out = tavern(dir, args);
        assert_eq!(out.code, 0, "{args:?}: {}", out.stderr);
        out
    };
    let mut forms = Vec::new();
    for query in READY_QUERIES.iter().map(Some).chain([None]) {
        for json in [false, true] {
            for all in [false, true] {
                let mut args = vec!["ready"];
                args.extend(json.then_some("--json"));
                args.extend(all.then_some("--all"));
                args.extend(query);
                let out = run(&args);
                if query.is_some() {
                    let parsed = run(&[&args[..], &[NO_HEAD]].concat());
                    assert_eq!(
                        (&out.stdout, &out.stderr),
                        (&parsed.stdout, &parsed.stderr),
                        "{args:?} printed otherwise than from the parsed tasks"
                    );
                }
                forms.push(out.transcript(&args));
            }
        }
    }
    forms
}

/// The forms through the index as it is, then from the files alone: they agree.
fn ready_forms_same_as_full_scan(dir: &Path, board: &Path, what: &str) -> Vec<String> {
    let indexed = ready_forms(dir);
    std::fs::remove_dir_all(index_dir(board)).unwrap();
    let full = ready_forms(dir);
    assert_eq!(indexed.len(), full.len());
    for (a, b) in indexed.iter().zip(&full) {
        assert_eq!(
            a, b,
            "{what}: the index answered differently from the files"
        );
    }
    full
}

/// The form `ready ARGS` printed in `forms`.
fn form<'a>(forms: &'a [String], args: &str) -> &'a str {
    let head = format!("$ tavern {args}\n");
    forms
        .iter()
        .find(|f| f.starts_with(&head))
        .unwrap_or_else(|| panic!("no form {args}"))
}

/// [`ready_rows_board`], a task with a tag, and one whose priority is a string that reads
/// as a number (its head cannot say how it compares: it is read whole).
fn ready_forms_board() -> TestBoard {
    let b = ready_rows_board();
    b.write(
        "tasks/t-t.md",
        "---\nid: t-t\ntitle: quoted\nstatus: pending\npriority: \"1\"\n---\nbody\n",
    );
    b.write(
        "tasks/t-r.md",
        "---\nid: t-r\ntitle: tagged\nstatus: pending\npriority: 2\ntags: [y]\n---\nbody\n",
    );
    b
}

/// Replaces `from` with `to` (of the same length) in the file at `path`, in place: its
/// size and inode stay as they were.
fn edit_in_place(path: &std::path::Path, from: &str, to: &str, round: usize) {
    use std::os::unix::fs::MetadataExt;
    let before = std::fs::metadata(path).unwrap();
    let text = std::fs::read_to_string(path).unwrap();
    assert!(text.contains(from), "round {round}: {text}");
    std::fs::write(path, text.replace(from, to)).unwrap();
    let after = std::fs::metadata(path).unwrap();
    assert_eq!((before.len(), before.ino()), (after.len(), after.ino()));
}

/// Edits in place at the same size, several within one tick of the clock, after reads
/// that left the index trusting every file, each of a field a query term asks of a head,
/// or of the text no head holds; after each, every form agrees with a full scan.
fn ready_forms_edited_in_place(b: &TestBoard) {
    let dir = b.root();
    let path = |id: &str| b.board().join(format!("tasks/{id}.md"));
    let first = ready_forms_same_as_full_scan(dir, &b.board(), "at first");
    assert!(form(&first, "ready status=pending priority<=1").contains("\nt-a "));
    assert!(form(&first, "ready --json tag:x").contains("\"documents\":[]"));
    assert!(form(&first, "ready title=words").contains("\nt-n "));
    assert!(form(&first, "ready --all status=pending priority<=1").contains("\nt-t "));
    let edits: [(&str, &str, &str); 8] = [
        ("t-a", "priority: 1", "priority: 3"),
        ("t-r", "tags: [y]", "tags: [x]"),
        ("t-c", "body", "mine"),
        ("t-n", "claimed_by: coder-9", "claimed_by: coder-8"),
        ("t-b", "status: pending", "status: blocked"),
        ("t-open-dep", "status: working", "status: done   "),
        ("t-j", "needs: [cobol]", "needs: [rust] "),
        ("t-n", "title: words", "title: sword"),
    ];
    for (round, (id, from, to)) in edits.iter().enumerate() {
        ready_forms(dir);
        edit_in_place(&path(id), from, to, round);
        let what = format!("round {round}: {id} {to}");
        let now = ready_forms_same_as_full_scan(dir, &b.board(), &what);
        let shows = |args: &str, id: &str| {
            let f = form(&now, args);
            f.contains(&format!("\n{id} ")) || f.contains(&format!("\"id\":\"{id}\""))
        };
        match round {
            0 => assert!(!shows("ready status=pending priority<=1", "t-a"), "{what}"),
            1 => assert!(shows("ready --json tag:x", "t-r"), "{what}"),
            2 => assert!(shows("ready mine", "t-c") && shows("ready --json mine", "t-c")),
            3 => assert!(form(&now, "ready no:claimed_by").contains("t-a")),
            4 => assert!(!shows("ready priority>=1 region=tasks", "t-b"), "{what}"),
            5 => assert!(shows("ready --json", "t-h"), "{what}"),
            6 => assert!(shows("ready --json body", "t-j"), "{what}"),
            7 => assert!(!shows("ready title=words", "t-n"), "{what}"),
            _ => {}
        }
    }
}

/// An editor's rename puts a new text in, and a task made and one removed behind the
/// index's back.
fn ready_forms_edited_by_rename(b: &TestBoard) {
    let dir = b.root();
    let tasks = b.board().join("tasks");
    ready_forms(dir);
    let tmp = tasks.join(".t-k.md.swp");
    std::fs::write(
        &tmp,
        "---\nid: t-k\ntitle: mine too\nstatus: pending\npriority: 0\ntags: [x]\n---\nbody\n",
    )
    .unwrap();
    std::fs::rename(&tmp, tasks.join("t-k.md")).unwrap();
    let now = ready_forms_same_as_full_scan(dir, &b.board(), "an editor's rename");
    assert!(form(&now, "ready --json tag:x").contains("\"id\":\"t-k\""));
    assert!(form(&now, "ready \"too\"").contains("\nt-k "));
    std::fs::write(
        tasks.join("t-s.md"),
        "---\nid: t-s\ntitle: new\nstatus: pending\npriority: 0\n---\nmine\n",
    )
    .unwrap();
    std::fs::remove_file(tasks.join("t-m.md")).unwrap();
    let now = ready_forms_same_as_full_scan(dir, &b.board(), "a task made and one removed");
    assert!(form(&now, "ready mine").contains("\nt-s "));
    assert!(!form(&now, "ready --json").contains("\"id\":\"t-m\""));
}

#[test]
fn ready_with_a_query_and_as_json_print_what_a_full_scan_prints_whatever_changed_in_place() {
    ready_forms_edited_in_place(&ready_forms_board());
}

#[test]
fn ready_with_a_query_and_as_json_see_an_editors_rename() {
    ready_forms_edited_by_rename(&ready_forms_board());
}

#[test]
fn with_a_watcher_running_ready_with_a_query_and_as_json_see_every_change() {
    crate::util::watcher::with_a_watcher(&ready_forms_board(), |b| {
        ready_forms_edited_in_place(b);
        ready_forms_edited_by_rename(b);
    });
}

#[test]
fn git_checkout_of_old_tasks_is_seen_by_ready_with_a_query_and_as_json() {
    let b = ready_forms_board();
    let dir = b.root();
    git(dir, &["init", "-q"]);
    git(dir, &["add", "-A"]);
    git(dir, &["commit", "-q", "-m", "old tasks"]);
    let old = ready_forms_same_as_full_scan(dir, &b.board(), "the old tasks");
    b_edit(&b.board(), "t-a", "priority: 1", "priority: 4");
    b_edit(&b.board(), "t-r", "tags: [y]", "tags: [x]");
    b_edit(&b.board(), "t-c", "status: pending", "status: done");
    let edited = ready_forms(dir);
    assert_ne!(edited, old);
    git(dir, &["checkout", "-q", "HEAD", "--", ".tavern/tasks"]);
    let now = ready_forms_same_as_full_scan(dir, &b.board(), "git checkout of the old tasks");
    assert_eq!(now, old, "the old tasks read as they did");
}

// `summary` passes over the open tasks no list can take by their heads (status,
// claimed_by, updated_at, priority, age): what it shows and counts must be what a read of
// every file gives, whatever changed behind the index's back.

/// A task with what `summary` decides by: whose it is, and since when it stands still.
fn summary_task(n: usize, status: &str, holder: &str, updated: &str, priority: usize) -> String {
    format!(
        "---\nid: t-{n:04}\ntitle: Task {n}\nstatus: {status}\npriority: {priority}\n\
         claimed_by: {holder}\ncreated_at: 2026-01-01T00:{:02}:{:02}Z\n\
         updated_at: {updated}\nrev: 2\n---\n\nbody\n",
        n / 60,
        n % 60
    )
}

const LONG_AGO: &str = "2020-01-01T00:00:00Z";
const LATER: &str = "2099-01-01T00:00:00Z";

/// 180 tasks in six states, each held by one of two registered agents or one that is not,
/// a quarter of them unchanged for years (stuck, when held).
fn summary_board() -> TestBoard {
    let b = TestBoard::new();
    let pid = std::process::id().to_string();
    for agent in ["a1", "a2"] {
        b.run(&["agent", "register", "--name", agent, "--pid", &pid])
            .ok();
    }
    let states = ["pending", "claimed", "working", "review", "blocked", "done"];
    for n in 0..180 {
        let status = states[n % 6];
        let holder = ["a1", "a2", "zz"][(n / 6) % 3];
        let updated = if n % 4 == 0 { LONG_AGO } else { LATER };
        b.write(
            &format!("tasks/t-{n:04}.md"),
            summary_task(n, status, holder, updated, n % 5),
        );
    }
    b
}

/// `summary` as the index answers it, then from the files alone: the same, save when it
/// ran and how lively each agent looks (which moves with the clock).
fn summary_same_as_full_scan(b: &TestBoard, what: &str) -> Vec<String> {
    let asks: [&[&str]; 3] = [
        &["summary", "--limit", "3", "--json"],
        &["summary", "--limit", "0", "--json"],
        &["summary", "--json"],
    ];
    let read = || -> Vec<String> {
        asks.iter()
            .map(|args| {
                let mut v = tavern(b.root(), args).json();
                v.as_object_mut().unwrap().remove("generated_at");
                for a in v["agents"].as_array_mut().unwrap() {
                    a.as_object_mut().unwrap().remove("status");
                    a.as_object_mut().unwrap().remove("last_seen");
                }
                v.to_string()
            })
            .collect()
    };
    let indexed = read();
    std::fs::remove_dir_all(index_dir(&b.board())).unwrap();
    let full = read();
    assert_eq!(
        indexed, full,
        "{what}: the index answered differently from the files"
    );
    full
}

fn summary_edits_in_place(b: &TestBoard) {
    let first = summary_same_as_full_scan(b, "as written");
    let v: serde_json::Value = serde_json::from_str(&first[0]).unwrap();
    assert_eq!(v["totals"]["tasks"]["working"], 30, "{v}");
    // a1 holds every sixth block of six: ten tasks of each of the five open states.
    assert_eq!(v["totals"]["holds"]["a1"], 50, "{v}");
    assert!(v["totals"]["stuck"].as_u64().unwrap() > 3, "{v}");
    // Each edit keeps the file's size, in place, several within one second: a task far
    // down every list changes holder, comes unstuck or stuck, changes state, jumps ahead.
    let path = |n: usize| b.board().join(format!("tasks/t-{n:04}.md"));
    let edits = [
        (
            170,
            "working",
            "a1",
            LONG_AGO,
            0,
            "a held task passes to another agent",
        ),
        (170, "working", "a1", LATER, 0, "a stuck task moves"),
        (166, "working", "a1", LONG_AGO, 1, "a task goes stuck"),
        (172, "claimed", "a2", LATER, 2, "a task changes state"),
        (175, "pending", "zz", LATER, 0, "a task jumps ahead"),
    ];
    for (n, status, holder, updated, priority, what) in edits {
        let before = std::fs::metadata(path(n)).unwrap();
        std::fs::write(path(n), summary_task(n, status, holder, updated, priority)).unwrap();
        assert_eq!(
            std::fs::metadata(path(n)).unwrap().len(),
            before.len(),
            "{what}"
        );
        summary_same_as_full_scan(b, what);
    }
    let v: serde_json::Value =
        serde_json::from_str(&summary_same_as_full_scan(b, "at the end")[0]).unwrap();
    // t-0175 was claimed, t-0166 and t-0172 blocked: all three moved.
    assert_eq!(v["totals"]["tasks"]["pending"], 31, "{v}");
    assert_eq!(v["totals"]["tasks"]["blocked"], 28, "{v}");
}

#[test]
fn summary_passes_over_open_tasks_by_their_heads_as_a_read_of_every_file_shows_them() {
    summary_edits_in_place(&summary_board());
}

#[test]
fn with_a_watcher_running_summary_passes_over_open_tasks_by_their_heads() {
    crate::util::watcher::with_a_watcher(&summary_board(), summary_edits_in_place);
}

// `ready` without a query decides and prints its rows from the heads the index keeps
// (status, priority and its text, creation time, id, title, claimant, depends_on, needs)
// without parsing the tasks: its table must be the one the parsed tasks give (`ready`
// with a query that keeps every claimable task is read that way), and an edit of any of
// those fields behind the index's back, in place at the same size within one second, must
// show in it as in a full scan.

/// `ready` and `ready --all` from the heads, and the same from the parsed tasks (a query
/// every claimable task matches), each as (args, exit, stdout, stderr).
fn ready_both_ways(dir: &Path) -> (Vec<String>, Vec<String>) {
    let run = |args: &[&str]| {
        let out = tavern(dir, args);
        assert_eq!(out.code, 0, "{args:?}: {}", out.stderr);
        out
    };
    let heads = ["ready"].as_slice();
    let heads_all = ["ready", "--all"].as_slice();
    let parsed = ["ready", NO_HEAD].as_slice();
    let parsed_all = ["ready", NO_HEAD, "--all"].as_slice();
    // The transcripts name the command line: compare the outputs, keep the transcripts.
    let mut by_heads = Vec::new();
    let mut by_parsing = Vec::new();
    for (h, p) in [(heads, parsed), (heads_all, parsed_all)] {
        let (a, b) = (run(h), run(p));
        assert_eq!(
            (a.code, &a.stdout, &a.stderr),
            (b.code, &b.stdout, &b.stderr),
            "{h:?} from the heads printed otherwise than from the parsed tasks"
        );
        by_heads.push(a.transcript(h));
        by_parsing.push(b.transcript(p));
    }
    (by_heads, by_parsing)
}

/// The heads' reads through the index as it is, then from the files alone: they agree.
fn ready_same_as_full_scan(dir: &Path, board: &Path, what: &str) -> Vec<String> {
    let (indexed, _) = ready_both_ways(dir);
    std::fs::remove_dir_all(index_dir(board)).unwrap();
    let (full, _) = ready_both_ways(dir);
    assert_eq!(
        indexed, full,
        "{what}: the index answered differently from the files"
    );
    full
}

/// [`awkward_ready_board`] and tasks whose rows show what only the heads' new fields hold:
/// a priority that is text, a claimant on a claimable task, a title of control characters
/// and wide letters, and needs the agent has.
fn ready_rows_board() -> TestBoard {
    let b = awkward_ready_board();
    let task = |id: &str, fields: &str| {
        b.write(
            &format!("tasks/{id}.md"),
            format!("---\nid: {id}\n{fields}---\nbody\n"),
        );
    };
    task(
        "t-n",
        "title: words\nstatus: pending\npriority: high\nclaimed_by: coder-9\n",
    );
    task(
        "t-o",
        "title: \"bell \\a tab \\t \\e[31m red ✓ 漢字\"\nstatus: pending\npriority: 2\n",
    );
    task(
        "t-p",
        "title: mine\nstatus: pending\npriority: 0\nneeds: [rust]\ndepends_on: [t-done, t-i]\n",
    );
    task("t-q", "title: mine too\nstatus: pending\nneeds: [rust]\n");
    let pid = std::process::id().to_string();
    let args = [
        "agent",
        "register",
        "--name",
        "tester",
        "--capabilities",
        "rust",
    ];
    let registered = tavern(b.root(), &[&args[..], &["--pid", &pid]].concat());
    assert_eq!(registered.code, 0, "{}", registered.stderr);
    b
}

#[test]
fn ready_from_heads_prints_what_the_parsed_tasks_give_whatever_changed_in_place() {
    let b = ready_rows_board();
    let dir = b.root();
    let first = ready_same_as_full_scan(dir, &b.board(), "at first");
    assert!(
        first[0].contains("t-n ") && first[0].contains("coder-9"),
        "{}",
        first[0]
    );
    assert!(first[0].contains(" high "), "{}", first[0]);
    assert!(!first[0].contains("t-j "), "needs cobol: {}", first[0]);
    assert!(first[1].contains("t-j "), "--all lists it: {}", first[1]);
    assert!(
        !first[0].contains("t-h "),
        "its dependency is open: {}",
        first[0]
    );
    let path = |id: &str| b.board().join(format!("tasks/{id}.md"));
    // Each edit keeps the file's size and inode, several within one tick of the clock,
    // after reads that left the index trusting every file.
    let edits: [(&str, &str, &str); 7] = [
        ("t-j", "needs: [cobol]", "needs: [rust] "),
        ("t-n", "claimed_by: coder-9", "claimed_by: coder-8"),
        ("t-n", "priority: high", "priority: 1234"),
        ("t-open-dep", "status: working", "status: done   "),
        ("t-q", "needs: [rust]", "needs: [gpu] "),
        ("t-o", "priority: 2", "priority: 7"),
        ("t-done", "status: done", "status: open"),
    ];
    for (round, (id, from, to)) in edits.iter().enumerate() {
        ready_both_ways(dir);
        edit_in_place(&path(id), from, to, round);
        let what = format!("round {round}: {id} {to}");
        let now = ready_same_as_full_scan(dir, &b.board(), &what);
        let shown = |id: &str| now[0].contains(&format!("\n{id} "));
        match round {
            0 => assert!(shown("t-j"), "{what}: {}", now[0]),
            1 => assert!(now[0].contains("coder-8"), "{what}: {}", now[0]),
            2 => assert!(now[0].contains(" 1234 "), "{what}: {}", now[0]),
            3 => assert!(shown("t-h"), "{what}: {}", now[0]),
            4 => assert!(!shown("t-q") && now[1].contains("t-q "), "{what}: {now:?}"),
            6 => assert!(!shown("t-i") && !shown("t-p"), "{what}: {}", now[0]),
            _ => {}
        }
    }
}
