//! Trust at the seams of the board branch: several writers in one clone, what a record or
//! a merge may delete, what arrives from another clone, locks left by killed processes.
//! Real git, real processes, a local bare repository as the remote.

#![cfg(unix)]

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::sync_branch::two_clones;
use crate::util::git::{self, fake_git, git, spawn, tavern_cmd};
use crate::util::{BIN, eventually, procs};
use crate::worktrees::tavern;

/// The files of the board branch at `rev`.
fn branch_files(dir: &Path, rev: &str) -> Vec<String> {
    git(dir, &["ls-tree", "-r", "--name-only", rev])
        .lines()
        .map(str::to_string)
        .collect()
}

fn board_file(dir: &Path, rel: &str) -> PathBuf {
    dir.join(".tavern").join(rel)
}

/// The lost board: two exchanges at once in one clone (a `sync --watch` beside a
/// connected `watch`) each merged through one shared scratch index; one emptied it under
/// the other, whose merge commit then held only the files the merge changed, and the
/// board on disk followed it: board.yaml, .gitignore, the templates, the cards and most
/// documents deleted, and the next record took .state/ as well.
#[test]
fn two_syncs_at_once_in_one_clone_never_lose_the_board() {
    let tmp = tempfile::tempdir().unwrap();
    let (a, b, _remote) = two_clones(tmp.path());
    for i in 0..12 {
        tavern(&a, &["new", "task", "--title", &format!("seed {i}")]).ok();
    }
    tavern(&a, &["sync"]).ok();
    tavern(&b, &["sync"]).ok();
    for round in 0..8 {
        // Both sides changed: each sync in a has a merge to make.
        tavern(&b, &["new", "task", "--title", &format!("b {round}")]).ok();
        tavern(&b, &["sync"]).ok();
        tavern(&a, &["new", "task", "--title", &format!("a {round}")]).ok();
        let syncs = [spawn(&a, &["sync"], None), spawn(&a, &["sync"], None)];
        for s in syncs {
            let out = s.wait_with_output().unwrap();
            assert!(
                out.status.success(),
                "round {round}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        for f in ["board.yaml", ".gitignore", "templates/task.md"] {
            assert!(board_file(&a, f).is_file(), "round {round}: {f} lost");
        }
        let files = branch_files(&a, "tavern");
        assert!(
            !files.iter().any(|f| f.starts_with(".state/")),
            "round {round}: .state/ recorded"
        );
        assert_eq!(
            files.iter().filter(|f| f.starts_with("tasks/")).count(),
            12 + 2 * (round + 1),
            "round {round}: every task on the branch"
        );
    }
    tavern(&b, &["sync"]).ok();
    tavern(&a, &["check"]).ok();
    tavern(&b, &["check"]).ok();
}

/// Every exchange of a clone takes its turn: one that finds another running waits for
/// it before it records, fetches or writes anything.
#[test]
fn an_exchange_waits_for_the_one_running_in_the_same_clone() {
    let tmp = tempfile::tempdir().unwrap();
    let (a, _b, remote) = two_clones(tmp.path());
    let lock_path = a.join(".git/tavern/sync.lock");
    let lock = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&lock_path)
        .unwrap();
    lock.lock().unwrap();
    let id = tavern(&a, &["new", "task", "--title", "waits"]).ok().text();
    let before = git(&a, &["rev-parse", "tavern"]);
    let sync = spawn(&a, &["sync", "--json"], None);
    // The sync has opened the lock file: it is waiting for it now.
    let fds = PathBuf::from(format!("/proc/{}/fd", sync.id()));
    eventually("the sync to wait for the exchange lock", || {
        std::fs::read_dir(&fds).is_ok_and(|d| {
            d.flatten()
                .any(|e| std::fs::read_link(e.path()).is_ok_and(|t| t == lock_path))
        })
    });
    assert_eq!(
        git(&a, &["rev-parse", "tavern"]),
        before,
        "nothing recorded while another exchange runs"
    );
    drop(lock);
    let out = sync.wait_with_output().unwrap();
    assert!(out.status.success());
    let x: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(x["outcome"], "pushed");
    assert!(
        branch_files(&remote, "tavern").contains(&format!("tasks/{id}.md")),
        "sent once the lock was free"
    );
}

/// Every entry of a clone's log, as `tavern log --json` prints them.
fn log_of(dir: &Path) -> Vec<serde_json::Value> {
    tavern(dir, &["log", "--json"])
        .ok()
        .stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn alerts(dir: &Path) -> Vec<String> {
    log_of(dir)
        .iter()
        .filter(|e| e["op"] == "alert" && e["actor"] == "tavern-sync")
        .map(|e| e["note"].as_str().unwrap_or("").to_string())
        .collect()
}

/// Runs a shell command line in `dir` (for a pipe the user would type).
fn sh(dir: &Path, line: &str) {
    let mut c = Command::new("sh");
    c.arg("-c").arg(line).current_dir(dir);
    git::env(&mut c);
    let out = c.output().unwrap();
    assert!(
        out.status.success(),
        "{line}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn a_record_that_would_delete_what_nobody_deleted_is_refused_and_alerted() {
    let tmp = tempfile::tempdir().unwrap();
    let (a, b, remote) = two_clones(tmp.path());
    let kept = tavern(&a, &["new", "task", "--title", "kept"]).ok().text();
    let done = tavern(&a, &["new", "task", "--title", "finished"])
        .ok()
        .text();
    tavern(&a, &["sync"]).ok();
    let sent = git(&remote, &["rev-parse", "tavern"]);

    // Gone from disk, by nobody's command: refused, nothing recorded or sent.
    std::fs::remove_file(board_file(&a, &format!("tasks/{kept}.md"))).unwrap();
    std::fs::remove_file(board_file(&a, "templates/task.md")).unwrap();
    let out = tavern(&a, &["sync"]);
    out.code(6)
        .stderr_has("refused to record the board: 2 file(s) are gone from it")
        .stderr_has(&format!("tasks/{kept}.md"))
        .stderr_has("templates/task.md")
        .stderr_has("git archive tavern -- PATH | tar -x -C ")
        .stderr_has("tavern sync --allow-deletions");
    assert_eq!(git(&remote, &["rev-parse", "tavern"]), sent, "nothing sent");
    assert!(branch_files(&a, "tavern").contains(&format!("tasks/{kept}.md")));
    // Once alerted, however often the sync is tried again.
    tavern(&a, &["sync"]).code(6);
    let said = alerts(&a);
    assert_eq!(said.len(), 1, "{said:?}");
    assert!(
        said[0].contains("sync refused to record the board: 2 file(s)"),
        "{}",
        said[0]
    );

    // Put back as the message says: recorded and sent as if nothing happened.
    sh(
        &a,
        &format!("git archive tavern -- tasks/{kept}.md templates/task.md | tar -x -C .tavern"),
    );
    tavern(&a, &["sync"]).ok();

    // An archive is a logged removal: recorded, and it reaches the other clone.
    tavern(&a, &["claim", &done]).ok();
    tavern(&a, &["start", &done]).ok();
    tavern(&a, &["done", &done]).ok();
    tavern(&a, &["archive"]).ok();
    tavern(&a, &["sync"]).ok();
    tavern(&b, &["sync"]).ok();
    assert!(board_file(&b, &format!("archive/tasks/{done}.md")).is_file());
    assert!(!board_file(&b, &format!("tasks/{done}.md")).exists());

    // Deleted on purpose: --allow-deletions logs each deletion, by the actor, and records.
    std::fs::remove_file(board_file(&a, &format!("tasks/{kept}.md"))).unwrap();
    tavern(&a, &["sync", "--allow-deletions", "--as", "alice"]).ok();
    let deletes: Vec<_> = log_of(&a)
        .into_iter()
        .filter(|e| e["op"] == "delete")
        .collect();
    assert_eq!(deletes.len(), 1, "{deletes:?}");
    assert_eq!(deletes[0]["doc"], format!("tasks/{kept}.md"));
    assert_eq!(deletes[0]["actor"], "alice");
    // The other clone takes a logged deletion.
    tavern(&b, &["sync"]).ok();
    assert!(!board_file(&b, &format!("tasks/{kept}.md")).exists());
    tavern(&a, &["check"]).ok();
    tavern(&b, &["check"]).ok();
}

/// A clone whose branch lost files that nobody deleted (here: plain git, as a damaged
/// clone or a script would push it): the other clones keep theirs, alert naming its
/// commit, and push the repaired branch, so the remote holds them again.
#[test]
fn a_merge_never_spreads_one_clones_accident() {
    let tmp = tempfile::tempdir().unwrap();
    let (a, b, remote) = two_clones(tmp.path());
    let ids: Vec<String> = (0..3)
        .map(|i| {
            tavern(&a, &["new", "task", "--title", &format!("t{i}")])
                .ok()
                .text()
        })
        .collect();
    tavern(&a, &["sync"]).ok();
    tavern(&b, &["sync"]).ok();

    let accident = tmp.path().join("accident");
    git(
        tmp.path(),
        &[
            "clone",
            "-q",
            "-b",
            "tavern",
            remote.to_str().unwrap(),
            accident.to_str().unwrap(),
        ],
    );
    git(
        &accident,
        &[
            "rm",
            "-q",
            "board.yaml",
            ".gitignore",
            "templates/task.md",
            &format!("tasks/{}.md", ids[0]),
        ],
    );
    git(&accident, &["commit", "-q", "-m", "lost"]);
    git(&accident, &["push", "-q", "origin", "tavern"]);
    let bad = git(&remote, &["rev-parse", "tavern"]);

    // a has nothing new: a fast-forward, vetted.
    let x = tavern(&a, &["sync", "--json"]).ok().json();
    let refused: Vec<&str> = x["refused"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["path"].as_str().unwrap())
        .collect();
    assert_eq!(
        refused,
        [
            ".gitignore",
            "board.yaml",
            &format!("tasks/{}.md", ids[0]),
            "templates/task.md"
        ],
    );
    for f in ["board.yaml", ".gitignore", "templates/task.md"] {
        assert!(board_file(&a, f).is_file(), "{f} kept");
    }
    let said = alerts(&a);
    assert_eq!(said.len(), 1, "{said:?}");
    assert!(
        said[0].contains(&bad[..12]),
        "names the commit: {}",
        said[0]
    );
    // The repair reached the remote.
    let on_remote = branch_files(&remote, "tavern");
    assert!(on_remote.contains(&"board.yaml".to_string()));
    assert!(on_remote.contains(&format!("tasks/{}.md", ids[0])));

    // b changed meanwhile: a merge, and nothing lost there either.
    tavern(&b, &["new", "task", "--title", "b's"]).ok();
    tavern(&b, &["sync"]).ok();
    for f in ["board.yaml", ".gitignore", "templates/task.md"] {
        assert!(board_file(&b, f).is_file(), "{f} kept in b");
    }
    for id in &ids {
        assert!(board_file(&b, &format!("tasks/{id}.md")).is_file());
    }
    tavern(&a, &["sync"]).ok();
    tavern(&a, &["check"]).ok();
    tavern(&b, &["check"]).ok();
}

/// `sync` works where claims work: a remote named by a relative URL (git resolves it
/// from the repository's top, as `git fetch` there does).
#[test]
fn sync_works_with_a_relative_remote_url() {
    let tmp = tempfile::tempdir().unwrap();
    let (a, b, _remote) = two_clones(tmp.path());
    for dir in [&a, &b] {
        git(dir, &["remote", "set-url", "origin", "../remote.git"]);
    }
    let id = tavern(&a, &["new", "task", "--title", "relative"])
        .ok()
        .text();
    assert_eq!(
        tavern(&a, &["sync", "--json"]).ok().json()["outcome"],
        "pushed"
    );
    tavern(&b, &["sync"]).ok();
    tavern(&b, &["claim", &id, "--as", "coder"]).ok();
    tavern(&b, &["show", &id])
        .ok()
        .stdout_has("title: relative");
}

/// Without any git identity (and git told never to guess one), board commits are made
/// by tavern's own identity: the acting agent's name. The user's config is not touched.
#[test]
fn sync_works_without_a_git_identity() {
    let tmp = tempfile::tempdir().unwrap();
    let (a, _b, remote) = two_clones(tmp.path());
    let global = tmp.path().join("gitconfig");
    std::fs::write(&global, "[user]\n\tuseConfigOnly = true\n").unwrap();
    tavern(&a, &["new", "task", "--title", "no identity"]).ok();
    let mut c = Command::new(BIN);
    c.args(["sync", "--as", "coder-7"]).current_dir(&a);
    git::env(&mut c);
    for v in [
        "GIT_AUTHOR_NAME",
        "GIT_AUTHOR_EMAIL",
        "GIT_COMMITTER_NAME",
        "GIT_COMMITTER_EMAIL",
        "EMAIL",
    ] {
        c.env_remove(v);
    }
    c.env("GIT_CONFIG_GLOBAL", &global);
    let out = c.output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        git(
            &remote,
            &["log", "-1", "--format=%an <%ae> / %cn", "tavern"]
        ),
        "coder-7 <tavern@localhost> / coder-7"
    );
    assert_eq!(
        std::fs::read_to_string(&global).unwrap(),
        "[user]\n\tuseConfigOnly = true\n"
    );
    assert!(!git(&a, &["config", "--list", "--local"]).contains("user."));
}

/// `status` and `check` count what the next sync would record against the board's own
/// branch: nothing right after a clean sync, then each file changed, added or removed.
#[test]
fn unrecorded_files_are_counted_against_the_board_branch() {
    let tmp = tempfile::tempdir().unwrap();
    let (a, b, _remote) = two_clones(tmp.path());
    let id = tavern(&a, &["new", "task", "--title", "counted"])
        .ok()
        .text();
    tavern(&a, &["sync"]).ok();
    tavern(&b, &["sync"]).ok();
    for dir in [&a, &b] {
        let s = tavern(dir, &["status", "--json"]).ok().json();
        assert_eq!(s["sync"]["unrecorded"], 0, "{s}");
        tavern(dir, &["status"]).ok();
        assert!(!tavern(dir, &["check"]).ok().stdout.contains("not recorded"));
    }
    tavern(&a, &["edit", &id, "--set", "title=changed"]).ok();
    tavern(&a, &["new", "task", "--title", "new"]).ok();
    let s = tavern(&a, &["status", "--json"]).ok().json();
    // The task, the new one and log.yaml.
    assert_eq!(s["sync"]["unrecorded"], 3, "{s}");
    tavern(&a, &["status"])
        .ok()
        .stdout_has("3 changed files not recorded yet");
}

/// The board as its branch should hold it, pushed with plain git from a clone that is no
/// tavern's: what a hostile or broken clone can send.
fn push_from_plain_clone(
    tmp: &Path,
    remote: &Path,
    name: &str,
    edit: impl FnOnce(&Path),
) -> String {
    let dir = tmp.join(name);
    git(
        tmp,
        &[
            "clone",
            "-q",
            "-b",
            "tavern",
            remote.to_str().unwrap(),
            dir.to_str().unwrap(),
        ],
    );
    edit(&dir);
    git(&dir, &["add", "-A", "-f", "."]);
    git(&dir, &["commit", "-q", "-m", name]);
    git(&dir, &["push", "-q", "origin", "tavern"]);
    git(&dir, &["rev-parse", "HEAD"])
}

#[test]
fn what_a_hostile_clone_pushes_is_refused_and_alerted_with_its_commit() {
    use std::os::unix::ffi::OsStrExt as _;
    let tmp = tempfile::tempdir().unwrap();
    let (a, _b, remote) = two_clones(tmp.path());
    let id = tavern(&a, &["new", "task", "--title", "mine"]).ok().text();
    tavern(&a, &["sync"]).ok();
    let outside = tmp.path().join("outside");
    std::fs::create_dir(&outside).unwrap();
    let bad = push_from_plain_clone(tmp.path(), &remote, "hostile", |d| {
        std::fs::create_dir_all(d.join("archive")).unwrap();
        std::os::unix::fs::symlink(&outside, d.join("archive/tasks")).unwrap();
        std::os::unix::fs::symlink("/etc/passwd", d.join("tasks/link.md")).unwrap();
        std::fs::create_dir_all(d.join(".state")).unwrap();
        std::fs::write(d.join(".state/clock"), "stolenorigin 99999\n").unwrap();
        std::fs::write(d.join(".gitignore"), "# nothing ignored\n").unwrap();
        std::fs::write(d.join("evil.sh"), "#!/bin/sh\nrm -rf /\n").unwrap();
        std::fs::write(d.join("tasks/notes.txt"), "not a document\n").unwrap();
        std::fs::create_dir_all(d.join("control")).unwrap();
        std::fs::write(d.join("control/schedule.md"), "not yours\n").unwrap();
        let huge = format!(
            "---\nid: huge\ntitle: h\nstatus: pending\n---\n{}",
            "x".repeat(2 << 20)
        );
        std::fs::write(d.join("tasks/huge.md"), huge).unwrap();
        let latin1 = std::ffi::OsStr::from_bytes(b"tasks/caf\xe9.md");
        std::fs::write(d.join(latin1), "---\nid: x\n---\n").unwrap();
    });
    let x = tavern(&a, &["sync", "--json"]).ok().json();
    let refused: Vec<String> = x["refused"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["path"].as_str().unwrap().to_string())
        .collect();
    for p in [
        ".state/clock",
        "archive/tasks",
        "control/schedule.md",
        "evil.sh",
        "tasks/huge.md",
        "tasks/link.md",
        "tasks/notes.txt",
    ] {
        assert!(refused.iter().any(|r| r == p), "{p} refused: {refused:?}");
    }
    assert!(
        refused.iter().any(|r| r.starts_with("tasks/caf")),
        "{refused:?}"
    );
    // The .gitignore is a change of the board's own file: taken, and harmless now.
    assert_eq!(
        std::fs::read_to_string(board_file(&a, ".gitignore")).unwrap(),
        "# nothing ignored\n"
    );
    // Nothing of it on disk: no symlink, no state, nothing outside the layout.
    let board = a.join(".tavern");
    assert!(
        !matches!(std::fs::symlink_metadata(board.join("archive/tasks")), Ok(m) if m.file_type().is_symlink())
    );
    assert!(std::fs::symlink_metadata(board.join("tasks/link.md")).is_err());
    assert!(!board.join("evil.sh").exists());
    assert!(!board.join("tasks/huge.md").exists());
    assert_ne!(
        std::fs::read_to_string(board.join(".state/clock")).unwrap(),
        "stolenorigin 99999\n"
    );
    let said = alerts(&a);
    assert_eq!(said.len(), 1, "{said:?}");
    assert!(
        said[0].contains(&bad[..12]) && said[0].contains("a symbolic link"),
        "{}",
        said[0]
    );
    // The repair went back to the remote: none of it there any more.
    let on_remote = branch_files(&remote, "tavern");
    for p in [".state/clock", "evil.sh", "tasks/link.md", "tasks/huge.md"] {
        assert!(!on_remote.iter().any(|f| f == p), "{p} still on the remote");
    }
    assert!(on_remote.contains(&format!("tasks/{id}.md")));
    // Archiving writes inside the board.
    tavern(&a, &["claim", &id]).ok();
    tavern(&a, &["start", &id]).ok();
    tavern(&a, &["done", &id]).ok();
    tavern(&a, &["archive"]).ok();
    assert!(board.join(format!("archive/tasks/{id}.md")).is_file());
    assert_eq!(std::fs::read_dir(&outside).unwrap().count(), 0);
    // .gitignore no longer ignores .state/: check says so; sync still never records it.
    tavern(&a, &["check"])
        .code(6)
        .stderr_has(".gitignore: does not ignore .state/");
    tavern(&a, &["sync"]).ok();
    assert!(
        !branch_files(&a, "tavern")
            .iter()
            .any(|f| f.starts_with(".state"))
    );
}

/// A fresh clone of a remote that holds hostile content takes the board without it.
#[test]
fn a_fresh_clone_takes_the_board_without_what_it_may_not_hold() {
    let tmp = tempfile::tempdir().unwrap();
    let (_a, _b, remote) = two_clones(tmp.path());
    let outside = tmp.path().join("outside");
    std::fs::create_dir(&outside).unwrap();
    push_from_plain_clone(tmp.path(), &remote, "hostile", |d| {
        std::fs::create_dir_all(d.join("archive")).unwrap();
        std::os::unix::fs::symlink(&outside, d.join("archive/tasks")).unwrap();
        std::fs::create_dir_all(d.join(".state")).unwrap();
        std::fs::write(d.join(".state/clock"), "stolenorigin 5\n").unwrap();
    });
    let c = tmp.path().join("c");
    git(
        tmp.path(),
        &["clone", "-q", remote.to_str().unwrap(), c.to_str().unwrap()],
    );
    tavern(&c, &["sync", "init"]).ok();
    assert!(
        !matches!(std::fs::symlink_metadata(c.join(".tavern/archive/tasks")), Ok(m) if m.file_type().is_symlink()),
        "no symlink written"
    );
    assert!(
        !std::fs::read_to_string(c.join(".tavern/.state/clock"))
            .unwrap_or_default()
            .contains("stolenorigin"),
        "the clone keeps its own origin"
    );
    assert_eq!(alerts(&c).len(), 1);
    tavern(&c, &["sync"]).ok();
    assert!(
        !branch_files(&remote, "tavern")
            .iter()
            .any(|f| f.starts_with(".state") || f == "archive/tasks")
    );
}

/// Two clones that share an origin (a copied .state/) write entries with the same seq and
/// origin: the merge keeps every one of them.
#[test]
fn clones_sharing_an_origin_lose_no_log_entry() {
    let tmp = tempfile::tempdir().unwrap();
    let (a, b, _remote) = two_clones(tmp.path());
    tavern(&a, &["new", "task", "--title", "first"]).ok();
    tavern(&a, &["sync"]).ok();
    tavern(&b, &["sync"]).ok();
    std::fs::copy(
        a.join(".tavern/.state/clock"),
        b.join(".tavern/.state/clock"),
    )
    .unwrap();
    for i in 0..5 {
        tavern(&a, &["new", "task", "--title", &format!("a{i}")]).ok();
        tavern(&b, &["new", "task", "--title", &format!("b{i}")]).ok();
    }
    tavern(&a, &["sync"]).ok();
    tavern(&b, &["sync"]).ok();
    tavern(&a, &["sync"]).ok();
    for dir in [&a, &b] {
        let creates = log_of(dir).iter().filter(|e| e["op"] == "create").count();
        assert_eq!(creates, 11, "every create entry in {}", dir.display());
        tavern(dir, &["check"]).ok();
    }
    assert_eq!(
        std::fs::read(a.join(".tavern/log.yaml")).unwrap().len(),
        std::fs::read(b.join(".tavern/log.yaml")).unwrap().len()
    );
}

/// Archived on one clone, changed on the other: one copy after the sync, in the archive
/// (the change did not move it back to a live state), with both sides' changes, whichever
/// came later in log order.
#[test]
fn archive_on_one_clone_and_edit_on_another_leave_one_copy() {
    let tmp = tempfile::tempdir().unwrap();
    let (a, b, _remote) = two_clones(tmp.path());
    let finished = |title: &str| {
        let id = tavern(&a, &["new", "task", "--title", title]).ok().text();
        tavern(&a, &["claim", &id]).ok();
        tavern(&a, &["start", &id]).ok();
        tavern(&a, &["done", &id]).ok();
        id
    };
    let (x, y) = (finished("archive later"), finished("edit later"));
    let converge = || {
        tavern(&a, &["sync"]).ok();
        tavern(&b, &["sync"]).ok();
        tavern(&a, &["sync"]).ok();
    };
    converge();
    // x: b edits, a writes once more then archives: a's move comes later (higher seq).
    tavern(
        &b,
        &[
            "edit",
            &x,
            "--set",
            "note=edited on b",
            "--extra-field",
            "note",
        ],
    )
    .ok();
    tavern(&a, &["new", "task", "--title", "filler"]).ok();
    tavern(&a, &["archive", &format!("id={x}")]).ok();
    // y: a archives, b writes twice more then edits: b's change comes later.
    tavern(&a, &["archive", &format!("id={y}")]).ok();
    tavern(&b, &["new", "task", "--title", "filler 1"]).ok();
    tavern(&b, &["new", "task", "--title", "filler 2"]).ok();
    tavern(
        &b,
        &[
            "edit",
            &y,
            "--set",
            "note=edited on b after",
            "--extra-field",
            "note",
        ],
    )
    .ok();
    converge();
    for dir in [&a, &b] {
        for (id, note) in [(&x, "edited on b"), (&y, "edited on b after")] {
            assert!(
                !board_file(dir, &format!("tasks/{id}.md")).exists(),
                "one copy in {}",
                dir.display()
            );
            let text = std::fs::read_to_string(board_file(dir, &format!("archive/tasks/{id}.md")))
                .unwrap();
            assert!(text.contains(&format!("note: {note}")), "{text}");
        }
        tavern(dir, &["check"]).ok();
    }
    let log = log_of(&a);
    let placed = log
        .iter()
        .filter(|e| {
            e["op"] == "sync-conflict" && e["note"].as_str().unwrap_or("").starts_with("place")
        })
        .count();
    assert_eq!(placed, 2);
    let mut deleted: Vec<&str> = log
        .iter()
        .filter(|e| e["op"] == "delete" && e["actor"] == "tavern-sync")
        .map(|e| e["doc"].as_str().unwrap())
        .collect();
    deleted.sort();
    let mut expected = [format!("tasks/{x}.md"), format!("tasks/{y}.md")];
    expected.sort();
    assert_eq!(deleted, expected);
}

/// A board that an older merge left with a document in two places: check says so, and
/// sweep (or archive) puts it in one, logged.
#[test]
fn check_reports_a_document_in_two_places_and_sweep_repairs_it() {
    let b = crate::util::TestBoard::new();
    let id = b.task("twice", &[]);
    b.run(&["claim", &id, "--as", "a"]).ok();
    b.run(&["start", &id, "--as", "a"]).ok();
    b.run(&["done", &id, "--as", "a"]).ok();
    b.run(&["archive"]).ok();
    // The older copy back in tasks/ (rev lower than the archived one's).
    let archived = b.read(&format!("archive/tasks/{id}.md"));
    let older = archived.replace("status: done", "status: working");
    let older = older.replace(&format!("rev: {}", rev(&archived)), "rev: 1");
    b.write(&format!("tasks/{id}.md"), older);
    b.run(&["check"]).code(6).stderr_has(&format!(
        "tasks/{id}.md: also in the archive (archive/tasks/{id}.md)"
    ));
    b.run(&["sweep"])
        .ok()
        .stdout_has(&format!("tasks/{id}.md: a document is in one place"));
    assert!(!b.board().join(format!("tasks/{id}.md")).exists());
    b.run(&["check"]).ok();
    let last = b.log().pop().unwrap();
    assert_eq!(
        (last["op"].as_str(), last["doc"].as_str()),
        (Some("delete"), Some(format!("tasks/{id}.md").as_str()))
    );
}

fn rev(text: &str) -> u64 {
    text.lines()
        .find_map(|l| l.strip_prefix("rev: "))
        .unwrap()
        .trim()
        .parse()
        .unwrap()
}

/// `.state/` on the board branch (recorded by an older tavern): check says so, and the
/// next sync takes it out of the branch.
#[test]
fn check_reports_state_recorded_on_the_board_branch() {
    let tmp = tempfile::tempdir().unwrap();
    let (a, _b, remote) = two_clones(tmp.path());
    let old = push_from_plain_clone(tmp.path(), &remote, "older", |d| {
        std::fs::create_dir_all(d.join(".state")).unwrap();
        std::fs::write(d.join(".state/clock"), "someorigin 3\n").unwrap();
    });
    git(&a, &["fetch", "-q", "origin", "tavern"]);
    git(&a, &["update-ref", "refs/heads/tavern", &old]);
    tavern(&a, &["check"])
        .code(6)
        .stderr_has(".state/: recorded on the board branch");
    tavern(&a, &["sync"]).ok();
    assert!(
        !branch_files(&a, "tavern")
            .iter()
            .any(|f| f.starts_with(".state"))
    );
    tavern(&a, &["check"]).ok();
}

#[test]
fn check_reports_lost_documents_and_a_missing_gitignore() {
    let b = crate::util::TestBoard::new();
    let kept = b.task("kept", &[]);
    let gone = b.task("gone", &[]);
    b.run(&["check"]).ok();
    std::fs::remove_file(b.board().join(format!("tasks/{gone}.md"))).unwrap();
    std::fs::remove_file(b.board().join(".gitignore")).unwrap();
    let out = b.run(&["check"]);
    out.code(6)
        .stderr_has(&format!("tasks/{gone}.md: lost: created by"))
        .stderr_has(".gitignore: missing: git would track .state/");
    assert!(!out.stderr.contains(&format!("tasks/{kept}.md")));
}

/// Sets the time `path` was last written to `secs` seconds from now (negative: ago).
fn written_at(path: &Path, secs: i64) {
    let now = std::time::SystemTime::now();
    let d = std::time::Duration::from_secs(secs.unsigned_abs());
    let t = if secs < 0 { now - d } else { now + d };
    let f = std::fs::File::options().write(true).open(path).unwrap();
    f.set_modified(t).unwrap();
}

/// What a git killed inside `tavern sync` leaves: the private index's lock and the board
/// branch's ref lock. check names them; the next sync, holding the lock that guards them,
/// removes them once they are old enough that no git can be at work on them (a minute for
/// an index's, 10 seconds for a ref's). A fresh one may be a git that outlived the tavern
/// that started it: it stays, and the sync tries again, then says so (exit 3, naming it,
/// not the remote), leaving the remote as it was.
#[test]
fn a_stale_lock_of_the_private_index_heals() {
    let tmp = tempfile::tempdir().unwrap();
    let (a, _b, remote) = two_clones(tmp.path());
    tavern(&a, &["new", "task", "--title", "after the kill"]).ok();
    let lock = a.join(".git/tavern/index.lock");
    std::fs::write(&lock, "").unwrap();
    let ref_lock = a.join(".git/refs/heads/tavern.lock");
    std::fs::write(&ref_lock, "").unwrap();
    tavern(&a, &["check"])
        .code(6)
        .stderr_has(&format!(
            "{}: a lock of tavern's sync left by a killed git: the next sync removes it",
            lock.display()
        ))
        .stderr_has(&format!("{}: a lock of tavern's sync", ref_lock.display()));
    let at_remote = || git(&remote, &["for-each-ref", "refs/heads/tavern"]);
    let before = at_remote();
    // Stamped an hour ahead (written before the clock was set back): how long they have
    // been there cannot be told, so each counts from when a sync first finds it (stamped
    // now), and is fresh to that sync.
    written_at(&lock, 3600);
    written_at(&ref_lock, 3600);
    let refused = |lock: &Path| {
        tavern(&a, &["sync"])
            .code(3)
            .stderr_has("this clone's refs of the board could not be updated")
            .stderr_has(&format!(
                "Unable to create '{}': File exists",
                lock.display()
            ))
            .stderr_has("not the remote");
        assert!(lock.exists());
        assert_eq!(at_remote(), before);
    };
    refused(&lock);
    assert!(ref_lock.exists());
    let ahead = |p: &Path| {
        let written = std::fs::metadata(p).unwrap().modified().unwrap();
        written > std::time::SystemTime::now() + std::time::Duration::from_secs(2)
    };
    assert!(!ahead(&lock), "the sync that found it stamped it now");
    // The index's lock old enough, the ref's fresh (an hour ahead again, so that no slow
    // machine ages it past the bound before the sync looks): the first goes, the second
    // stays.
    written_at(&lock, -61);
    written_at(&ref_lock, 3600);
    refused(&ref_lock);
    assert!(!ahead(&ref_lock));
    assert!(!lock.exists());
    // A ref's lock 10 seconds old is a git's that is gone.
    written_at(&ref_lock, -11);
    tavern(&a, &["sync"]).ok();
    assert!(!lock.exists() && !ref_lock.exists());
    assert_ne!(at_remote(), before);
    tavern(&a, &["sync"]).ok();
    tavern(&a, &["check"]).ok();
}

/// git's own lock files left for a while, or stamped ahead of the clock (set back since
/// they were written), are named with what to do; a fresh one (a git at work) is not.
#[test]
fn check_names_stale_git_locks() {
    let tmp = tempfile::tempdir().unwrap();
    let (a, _b, _remote) = two_clones(tmp.path());
    let old = a.join(".git/index.lock");
    std::fs::write(&old, "").unwrap();
    let f = std::fs::File::options().write(true).open(&old).unwrap();
    f.set_modified(std::time::SystemTime::now() - std::time::Duration::from_secs(600))
        .unwrap();
    let fresh = a.join(".git/refs/heads/main.lock");
    std::fs::write(&fresh, "").unwrap();
    // Stamped an hour ahead: written before the clock was set back, age unknown.
    let ahead = a.join(".git/HEAD.lock");
    std::fs::write(&ahead, "").unwrap();
    written_at(&ahead, 3600);
    let stamp = std::fs::metadata(&ahead).unwrap().modified().unwrap();
    let out = tavern(&a, &["check"]);
    out.code(6)
        .stderr_has(&format!(
            "{}: a git lock file left for over a minute (a git killed while it wrote): if no git command is running in this repository, remove it",
            old.display()
        ))
        .stderr_has(&format!(
            "{}: a git lock file stamped ahead of this machine's clock (written before the clock was set back), so how long it has been there cannot be told: if no git command is running in this repository, remove it",
            ahead.display()
        ));
    assert!(!out.stderr.contains("main.lock"), "{}", out.stderr);
    // check changes nothing, not even a stamp.
    assert_eq!(
        std::fs::metadata(&ahead).unwrap().modified().unwrap(),
        stamp
    );
    std::fs::remove_file(&old).unwrap();
    std::fs::remove_file(&fresh).unwrap();
    std::fs::remove_file(&ahead).unwrap();
    tavern(&a, &["check"]).ok();
}

/// A stale lock of the branch on the remote, nobody else pushing: sync says what it is
/// (exit 7), not that it lost to other clones; once removed, the sync goes through.
#[test]
fn a_stale_lock_on_the_remote_is_named_as_such() {
    let tmp = tempfile::tempdir().unwrap();
    let (a, _b, remote) = two_clones(tmp.path());
    tavern(&a, &["new", "task", "--title", "blocked"]).ok();
    let lock = remote.join("refs/heads/tavern.lock");
    std::fs::write(&lock, "").unwrap();
    let out = tavern(&a, &["sync"]);
    out.code(7)
        .stderr_has(&format!(
            "its lock of the branch, {}, exists",
            lock.display()
        ))
        .stderr_has("if nobody is pushing to the remote, remove that file there");
    assert!(!out.stderr.contains("lost to other clones"));
    std::fs::remove_file(&lock).unwrap();
    assert_eq!(
        tavern(&a, &["sync", "--json"]).ok().json()["outcome"],
        "pushed"
    );
}

/// `tavern ARGS` in `dir` with the `git` of `bin` first on PATH (an injected fault).
fn tavern_with_git(dir: &Path, bin: &Path, args: &[&str]) -> crate::util::Out {
    crate::util::output(tavern_cmd(dir, args, Some(bin)))
}

/// A directory holding a `git` that runs the real one (`$real`), except as `faults`
/// (shell `case` arms on the git subcommand) say.
fn faulty_git(dir: &Path, faults: &str) -> PathBuf {
    // `git -C DIR SUBCOMMAND …`: the subcommand is the first word after the options.
    let script = format!(
        "sub=''\nskip=0\nfor a in \"$@\"; do\n  if [ $skip = 1 ]; then skip=0; continue; fi\n  case \"$a\" in -C|-c) skip=1 ;; -*) ;; *) sub=\"$a\"; break ;; esac\ndone\ncase \"$sub\" in\n{faults}\nesac"
    );
    fake_git(&dir.join("faulty-bin"), &script)
}

/// The push of the board branch reaches the remote, and its answer is lost (the push is
/// killed while the remote's post-receive hook runs): sync asks the remote, finds its own
/// commit there, and says pushed.
#[test]
fn a_lost_answer_to_the_push_of_the_board_branch_is_found_out() {
    let tmp = tempfile::tempdir().unwrap();
    let (a, _b, remote) = two_clones(tmp.path());
    tavern(&a, &["new", "task", "--title", "Sent", "--id", "sent"]).ok();
    let marker = tmp.path().join("taken");
    let hook = remote.join("hooks/post-receive");
    std::fs::write(
        &hook,
        format!(
            "#!/bin/sh\ncat >/dev/null\nexec >/dev/null 2>&1\ntouch '{}'\nsleep 60\n",
            marker.display()
        ),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&hook, std::fs::Permissions::from_mode(0o755)).unwrap();
    let child = spawn(&a, &["sync", "--json"], None);
    eventually("the remote to take the branch", || marker.exists());
    std::fs::remove_file(&hook).unwrap();
    // The connection drops: the client's push and the remote's receive-pack die.
    let mut killed = 0;
    for pid in procs::pushes(&remote, "--force-with-lease=refs/heads/tavern:") {
        let _ = Command::new("kill")
            .args(["-KILL", &pid.to_string()])
            .status();
        killed += 1;
    }
    assert!(killed > 0, "no git push to kill");
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let x: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(x["outcome"], "pushed");
    let here = git(&a, &["rev-parse", "tavern"]);
    assert_eq!(git(&remote, &["rev-parse", "tavern"]), here);
    assert_eq!(git(&a, &["rev-parse", "refs/tavern/remote/tavern"]), here);
    assert_eq!(
        tavern(&a, &["sync", "--json"]).ok().json()["outcome"],
        "up-to-date"
    );
}

/// A push that took the branch but exits non-zero (its per-ref status said accepted): sync
/// asks the remote and says pushed, not "cannot push".
#[test]
fn a_push_that_took_the_branch_but_failed_as_a_whole_is_checked_with_the_remote() {
    let tmp = tempfile::tempdir().unwrap();
    let (a, _b, remote) = two_clones(tmp.path());
    tavern(&a, &["new", "task", "--title", "Sent"]).ok();
    let bin = faulty_git(
        tmp.path(),
        "push) \"$real\" \"$@\"; echo 'fatal: the remote end hung up unexpectedly' >&2; exit 128 ;;",
    );
    let out = tavern_with_git(&a, &bin, &["sync", "--json"]);
    assert_eq!(out.ok().json()["outcome"], "pushed");
    assert_eq!(
        git(&remote, &["rev-parse", "tavern"]),
        git(&a, &["rev-parse", "tavern"])
    );
}

/// The push failed and the remote cannot be asked afterwards: exit 7 saying the outcome
/// is unknown (never "nothing was sent"); the next sync finds out, both when the remote
/// had taken the branch and when it had not.
#[test]
fn a_push_whose_outcome_cannot_be_known_says_so_and_the_next_sync_finds_out() {
    let tmp = tempfile::tempdir().unwrap();
    let (a, _b, remote) = two_clones(tmp.path());
    let ask_fails = "ls-remote) echo 'fatal: unable to access the remote' >&2; exit 128 ;;";
    for (taken, push) in [
        (
            true,
            "push) \"$real\" \"$@\"; echo 'fatal: the remote end hung up unexpectedly' >&2; exit 128 ;;",
        ),
        (
            false,
            "push) echo 'fatal: the remote end hung up unexpectedly' >&2; exit 128 ;;",
        ),
    ] {
        let before = git(&remote, &["rev-parse", "tavern"]);
        tavern(&a, &["new", "task", "--title", &format!("taken {taken}")]).ok();
        let bin = faulty_git(tmp.path(), &format!("{push}\n{ask_fails}"));
        let out = tavern_with_git(&a, &bin, &["sync"]);
        out.code(7)
            .stderr_has("the push of the board branch to the remote 'origin' failed (fatal: the remote end hung up unexpectedly) and the remote could not be asked since (fatal: unable to access the remote): it may or may not have taken the branch")
            .stderr_has("run `tavern sync` again when the remote is reachable: it finds out");
        assert!(
            !out.stderr.contains("nothing more was sent"),
            "{}",
            out.stderr
        );
        let here = git(&a, &["rev-parse", "tavern"]);
        assert_eq!(
            git(&remote, &["rev-parse", "tavern"]),
            if taken { here.clone() } else { before },
            "taken: {taken}"
        );
        let next = tavern(&a, &["sync", "--json"]).ok().json();
        assert_eq!(
            next["outcome"],
            if taken { "up-to-date" } else { "pushed" },
            "taken: {taken}"
        );
        assert_eq!(git(&remote, &["rev-parse", "tavern"]), here);
        tavern(&a, &["check"]).ok();
    }
}

/// A document is never in two places: archived on one clone while another changes it
/// (an edit, a hand edit, a move back to a live state, a claim record followed, the same
/// archive), in every interleaving with the exchanges, every clone ends with one copy,
/// where the merged document says, with both sides' changes; the clones identical, `check`
/// passing, and the log saying what happened.
mod one_place {
    use std::path::Path;

    use super::{board_file, faulty_git, log_of, tavern_with_git};
    use crate::sync_branch::two_clones;
    use crate::util::BIN;
    use crate::util::git::git;
    use crate::worktrees::tavern;

    /// Every clone syncs, in this order, round after round, until a whole round changes
    /// nothing anywhere.
    fn settle(clones: &[&Path]) {
        for _ in 0..8 {
            let mut quiet = true;
            for c in clones {
                let x = tavern(c, &["sync", "--json"]).ok().json();
                quiet &= x["outcome"] == "up-to-date"
                    && x["recorded"] == false
                    && x["claims_followed"].as_array().is_none_or(|a| a.is_empty());
            }
            if quiet {
                return;
            }
        }
        panic!("the clones never stopped changing");
    }

    /// The task `id` is in one place on every clone (archived or live), the same there,
    /// on the same board commit as the remote, nothing unrecorded, and `check` passes.
    /// Returns the one copy's text.
    #[track_caller]
    fn one_copy(clones: &[&Path], remote: &Path, id: &str, archived: bool) -> String {
        let (live, arch) = (format!("tasks/{id}.md"), format!("archive/tasks/{id}.md"));
        let head = git(remote, &["rev-parse", "tavern"]);
        let mut texts = Vec::new();
        for c in clones {
            assert_eq!(git(c, &["rev-parse", "tavern"]), head, "{}", c.display());
            let here = (board_file(c, &live).exists(), board_file(c, &arch).exists());
            assert_eq!(
                here,
                (!archived, archived),
                "{id} in {}: (live, archived)",
                c.display()
            );
            let on_branch: Vec<String> = git(c, &["ls-tree", "-r", "--name-only", "tavern"])
                .lines()
                .filter(|p| *p == live || *p == arch)
                .map(str::to_string)
                .collect();
            assert_eq!(on_branch.len(), 1, "{on_branch:?}");
            let x = tavern(c, &["status", "--json"]).ok().json();
            assert_eq!(x["sync"]["unrecorded"], 0, "{x}");
            tavern(c, &["check"]).ok();
            let path = if archived { &arch } else { &live };
            texts.push(std::fs::read_to_string(board_file(c, path)).unwrap());
        }
        assert!(texts.windows(2).all(|w| w[0] == w[1]), "{texts:?}");
        texts.pop().unwrap()
    }

    /// The log says where the document went, and why: a `place` conflict, and the copy
    /// dropped as a `delete` by tavern-sync.
    #[track_caller]
    fn logged_one_place(dir: &Path, id: &str, archived: bool) {
        let (live, arch) = (format!("tasks/{id}.md"), format!("archive/tasks/{id}.md"));
        let log = log_of(dir);
        assert!(
            log.iter().any(|e| e["op"] == "sync-conflict"
                && e["doc"] == live.as_str()
                && e["note"]
                    .as_str()
                    .unwrap_or("")
                    .starts_with("place changed on both sides")),
            "no place conflict for {id}"
        );
        let dropped = if archived { &live } else { &arch };
        let deletes: Vec<_> = log
            .iter()
            .filter(|e| {
                e["op"] == "delete" && e["actor"] == "tavern-sync" && e["doc"] == dropped.as_str()
            })
            .collect();
        assert_eq!(deletes.len(), 1, "the dropped copy {dropped}, logged once");
    }

    /// A task done on `a` (claimed, started and finished by `coder`), on every clone.
    fn done_task(a: &Path, b: &Path, title: &str) -> String {
        let id = tavern(a, &["new", "task", "--title", title]).ok().text();
        tavern(a, &["claim", &id, "--as", "coder"]).ok();
        tavern(a, &["start", &id, "--as", "coder"]).ok();
        tavern(a, &["done", &id, "--as", "coder"]).ok();
        settle(&[a, b]);
        id
    }

    fn field<'t>(text: &'t str, key: &str) -> &'t str {
        text.lines()
            .find_map(|l| l.strip_prefix(&format!("{key}: ")))
            .unwrap_or("")
    }

    /// Archive on one clone, an edit on the other: the archive stays, the edit applied to
    /// the archived copy; whichever clone syncs first, whichever came later.
    #[test]
    fn archive_against_an_edit_keeps_the_archive_with_the_edit() {
        let tmp = tempfile::tempdir().unwrap();
        let (a, b, remote) = two_clones(tmp.path());
        for (n, first) in [(0, &a), (1, &b)] {
            let id = done_task(&a, &b, &format!("edited {n}"));
            // Archived first on a, edited later on b (b's entry comes later in log order).
            tavern(&a, &["archive", &format!("id={id}")]).ok();
            tavern(&b, &["new", "task", "--title", "filler"]).ok();
            tavern(
                &b,
                &[
                    "edit",
                    &id,
                    "--set",
                    "note=edited on b",
                    "--extra-field",
                    "note",
                ],
            )
            .ok();
            let second = if *first == a { &b } else { &a };
            settle(&[first, second]);
            let text = one_copy(&[&a, &b], &remote, &id, true);
            assert_eq!(field(&text, "note"), "edited on b", "{text}");
            assert_eq!(field(&text, "status"), "done");
            logged_one_place(&a, &id, true);
        }
    }

    /// Archive on one clone, a hand edit (no log entry) of the body on the other: the
    /// archived copy holds the hand's line.
    #[test]
    fn archive_against_a_hand_edit_keeps_the_hand_edit_in_the_archive() {
        let tmp = tempfile::tempdir().unwrap();
        let (a, b, remote) = two_clones(tmp.path());
        let id = done_task(&a, &b, "hand edited");
        let path = board_file(&b, &format!("tasks/{id}.md"));
        let text = std::fs::read_to_string(&path).unwrap();
        std::fs::write(&path, format!("{text}\nA line the human wrote.\n")).unwrap();
        tavern(&a, &["archive", &format!("id={id}")]).ok();
        settle(&[&b, &a]);
        let text = one_copy(&[&a, &b], &remote, &id, true);
        assert!(text.contains("A line the human wrote."), "{text}");
        logged_one_place(&b, &id, true);
    }

    /// Archive on one clone; the other's sync takes it (the task file goes from there),
    /// and then a human's editor, open on the task all along, writes it back with a line
    /// of theirs: the next sync finds the document both in its region and in the archive
    /// on this clone alone. It is put in one place by the same rule as a merge: the
    /// archived copy, holding the hand's line; every clone the same, `check` passing.
    #[test]
    fn a_hand_edit_written_back_after_sync_archived_the_task_leaves_one_copy() {
        let tmp = tempfile::tempdir().unwrap();
        let (a, b, remote) = two_clones(tmp.path());
        let id = done_task(&a, &b, "written back");
        let path = board_file(&b, &format!("tasks/{id}.md"));
        let open_in_editor = std::fs::read_to_string(&path).unwrap();
        tavern(&a, &["archive", &format!("id={id}")]).ok();
        settle(&[&a, &b]);
        assert!(!path.exists(), "b's sync took the archive");
        std::fs::write(
            &path,
            format!("{open_in_editor}\nA line the human wrote.\n"),
        )
        .unwrap();
        settle(&[&b, &a]);
        let text = one_copy(&[&a, &b], &remote, &id, true);
        assert!(text.contains("A line the human wrote."), "{text}");
        assert_eq!(field(&text, "status"), "done", "{text}");
    }

    /// Archive on one clone, `reopen` on the other: the document moved back to a live
    /// state, so the archive is undone (and logged), whichever came later.
    #[test]
    fn archive_against_a_reopen_undoes_the_archive() {
        let tmp = tempfile::tempdir().unwrap();
        let (a, b, remote) = two_clones(tmp.path());
        for n in 0..2 {
            let id = done_task(&a, &b, &format!("reopened {n}"));
            if n == 0 {
                tavern(&a, &["archive", &format!("id={id}")]).ok();
                tavern(&b, &["reopen", &id]).ok();
            } else {
                tavern(&b, &["reopen", &id]).ok();
                tavern(&b, &["new", "task", "--title", "filler"]).ok();
                tavern(&a, &["new", "task", "--title", "filler"]).ok();
                tavern(&a, &["new", "task", "--title", "filler"]).ok();
                tavern(&a, &["archive", &format!("id={id}")]).ok();
            }
            settle(&[&a, &b]);
            let text = one_copy(&[&a, &b], &remote, &id, false);
            assert_eq!(field(&text, "status"), "pending", "{text}");
            logged_one_place(&b, &id, false);
            // And it can be claimed again, from either clone.
            tavern(&b, &["claim", &id, "--as", "other"]).ok();
        }
    }

    /// A reviewer's approval on one clone (confirmed by the remote's claim record) and the
    /// archive right after; the other clone follows the record before it hears of the
    /// archive: one copy, archived, done.
    #[test]
    fn archive_against_a_claim_record_followed_elsewhere_keeps_one_copy() {
        let tmp = tempfile::tempdir().unwrap();
        let (a, b, remote) = two_clones(tmp.path());
        let id = tavern(&a, &["new", "task", "--title", "reviewed"])
            .ok()
            .text();
        tavern(&a, &["claim", &id, "--as", "coder"]).ok();
        tavern(&a, &["start", &id, "--as", "coder"]).ok();
        tavern(&a, &["submit", &id, "--as", "coder"]).ok();
        settle(&[&a, &b]);
        tavern(&a, &["approve", &id, "--as", "reviewer"]).ok();
        tavern(&a, &["archive", &format!("id={id}")]).ok();
        // b follows the record (its copy goes to done), and pushes that first.
        let x = tavern(&b, &["sync", "--json"]).ok().json();
        assert_eq!(x["claims_followed"][0], id.as_str(), "{x}");
        settle(&[&a, &b]);
        let text = one_copy(&[&a, &b], &remote, &id, true);
        assert_eq!(field(&text, "status"), "done", "{text}");
    }

    /// Both clones archive the same document: one copy, and no conflict to speak of.
    #[test]
    fn archive_on_both_clones_keeps_one_copy() {
        let tmp = tempfile::tempdir().unwrap();
        let (a, b, remote) = two_clones(tmp.path());
        let id = done_task(&a, &b, "archived twice");
        tavern(&a, &["archive", &format!("id={id}")]).ok();
        tavern(&b, &["archive", &format!("id={id}")]).ok();
        settle(&[&a, &b]);
        one_copy(&[&a, &b], &remote, &id, true);
        let moves = log_of(&a)
            .iter()
            .filter(|e| e["op"] == "move" && e["doc"] == format!("tasks/{id}.md").as_str())
            .count();
        assert_eq!(moves, 2, "both archives logged");
    }

    /// The document is archived on this clone while its sync runs (after the record,
    /// while it fetches the remote's branch), and that branch brings another clone's edit
    /// of it: the board takes nothing over a file written since the record, so it records
    /// the archive and merges, one copy.
    #[test]
    fn an_archive_during_a_sync_that_brings_an_edit_leaves_one_copy() {
        let tmp = tempfile::tempdir().unwrap();
        let (a, b, remote) = two_clones(tmp.path());
        let id = done_task(&a, &b, "archived mid-sync");
        tavern(
            &b,
            &[
                "edit",
                &id,
                "--set",
                "note=edited on b",
                "--extra-field",
                "note",
            ],
        )
        .ok();
        tavern(&b, &["sync"]).ok();
        let marker = tmp.path().join("archived");
        let hook = faulty_git(
            tmp.path(),
            &format!(
                "fetch) case \"$*\" in *refs/heads/tavern:*) if [ ! -e '{m}' ]; then : > '{m}'; (cd '{a}' && '{BIN}' archive 'id={id}' >/dev/null 2>&1); fi ;; esac ;;",
                m = marker.display(),
                a = a.display(),
            ),
        );
        tavern_with_git(&a, &hook, &["sync"]).ok();
        assert!(marker.exists(), "the archive ran inside the sync");
        settle(&[&a, &b]);
        let text = one_copy(&[&a, &b], &remote, &id, true);
        assert_eq!(field(&text, "note"), "edited on b", "{text}");
        logged_one_place(&a, &id, true);
    }

    /// The other way round: the remote's branch brings another clone's archive while this
    /// clone edits the document during its sync.
    #[test]
    fn an_edit_during_a_sync_that_brings_an_archive_leaves_one_copy() {
        let tmp = tempfile::tempdir().unwrap();
        let (a, b, remote) = two_clones(tmp.path());
        let id = done_task(&a, &b, "edited mid-sync");
        tavern(&b, &["archive", &format!("id={id}")]).ok();
        tavern(&b, &["sync"]).ok();
        let marker = tmp.path().join("edited");
        let hook = faulty_git(
            tmp.path(),
            &format!(
                "fetch) case \"$*\" in *refs/heads/tavern:*) if [ ! -e '{m}' ]; then : > '{m}'; (cd '{a}' && '{BIN}' edit '{id}' --set 'note=edited on a' --extra-field note >/dev/null 2>&1); fi ;; esac ;;",
                m = marker.display(),
                a = a.display(),
            ),
        );
        tavern_with_git(&a, &hook, &["sync"]).ok();
        assert!(marker.exists(), "the edit ran inside the sync");
        settle(&[&a, &b]);
        let text = one_copy(&[&a, &b], &remote, &id, true);
        assert_eq!(field(&text, "note"), "edited on a", "{text}");
        logged_one_place(&a, &id, true);
    }
}

mod one_place_watched {
    use super::{board_file, log_of};
    use crate::sync_branch::two_clones;
    use crate::worktrees::tavern;

    /// A connected watcher logs an `external-edit` of a hand edit that arrived by sync;
    /// in log order that entry can come after another clone's archive of the document,
    /// though it happened before the watcher's clone heard of the archive. The merge took
    /// the archived copy and refused the removal of the live one ("no log entry says a
    /// tavern command removed it"): the document was in two places on every clone. A move
    /// explains the removal until something brings the document back (a create, an archive
    /// undone), whatever else is logged about it meanwhile.
    #[test]
    fn an_archive_against_a_watchers_later_entry_leaves_one_copy() {
        let tmp = tempfile::tempdir().unwrap();
        let (a, b, remote) = two_clones(tmp.path());
        let id = tavern(&a, &["new", "task", "--title", "hand edited, watched"])
            .ok()
            .text();
        tavern(&a, &["claim", &id, "--as", "coder"]).ok();
        tavern(&a, &["start", &id, "--as", "coder"]).ok();
        tavern(&a, &["done", &id, "--as", "coder"]).ok();
        tavern(&a, &["sync"]).ok();
        tavern(&a, &["watch", "--once"]).ok();
        tavern(&b, &["sync"]).ok();
        // A hand edit on b reaches a, whose watcher logs it, later than b's archive in
        // log order (a has written more).
        let path = board_file(&b, &format!("tasks/{id}.md"));
        let text = std::fs::read_to_string(&path).unwrap();
        std::fs::write(&path, format!("{text}\nA line the human wrote.\n")).unwrap();
        tavern(&b, &["sync"]).ok();
        for i in 0..5 {
            tavern(&a, &["new", "task", "--title", &format!("filler {i}")]).ok();
        }
        tavern(&a, &["sync"]).ok();
        tavern(&a, &["watch", "--once"]).ok();
        let seq_of = |dir: &std::path::Path, op: &str| {
            log_of(dir)
                .iter()
                .filter(|e| e["op"] == op && e["doc"] == format!("tasks/{id}.md").as_str())
                .map(|e| e["seq"].as_u64().unwrap())
                .max()
        };
        let watched = seq_of(&a, "external-edit").expect("the watcher logged the hand edit");
        tavern(&b, &["archive", &format!("id={id}")]).ok();
        let moved = seq_of(&b, "move").unwrap();
        assert!(
            watched > moved,
            "the watcher's entry comes later in log order"
        );
        let x = tavern(&a, &["sync", "--json"]).ok().json();
        assert!(x.get("refused").is_none(), "{x}");
        for _ in 0..3 {
            tavern(&b, &["sync"]).ok();
            tavern(&a, &["sync"]).ok();
        }
        let head = crate::util::git::git(&remote, &["rev-parse", "tavern"]);
        for dir in [&a, &b] {
            assert_eq!(crate::util::git::git(dir, &["rev-parse", "tavern"]), head);
            assert!(!board_file(dir, &format!("tasks/{id}.md")).exists());
            let text = std::fs::read_to_string(board_file(dir, &format!("archive/tasks/{id}.md")))
                .unwrap();
            assert!(text.contains("A line the human wrote."), "{text}");
            tavern(dir, &["check"]).ok();
            assert!(
                !log_of(dir).iter().any(|e| e["op"] == "alert"),
                "nothing refused"
            );
        }
    }
}
