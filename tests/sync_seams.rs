//! Trust at the seams of the board branch: several writers in one clone, what a record or
//! a merge may delete, what arrives from another clone, locks left by killed processes.
//! Real git, real processes, a local bare repository as the remote.

#![cfg(unix)]

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::sync_branch::two_clones;
use crate::util::BIN;
use crate::util::git::{self, git};
use crate::worktrees::tavern;

/// A `tavern` process started in `dir`, not waited for.
fn spawn(dir: &Path, args: &[&str]) -> std::process::Child {
    let mut c = Command::new(BIN);
    c.args(args)
        .current_dir(dir)
        .env_remove("TAVERN_BOARD")
        .env_remove("TAVERN_AGENT")
        .env("USER", "tester")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    git::env(&mut c);
    c.spawn().expect("start tavern")
}

/// Waits (up to a generous bound: shared machines) until `done` holds.
#[track_caller]
fn eventually(what: &str, done: impl Fn() -> bool) {
    let end = std::time::Instant::now() + std::time::Duration::from_secs(120);
    while !done() {
        assert!(
            std::time::Instant::now() < end,
            "gave up waiting for {what}"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

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
        let syncs = [spawn(&a, &["sync"]), spawn(&a, &["sync"])];
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
    let sync = spawn(&a, &["sync", "--json"]);
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
