//! The board branch and `tavern sync`: real git, a local bare repository as the remote.

#![cfg(unix)]

use std::path::Path;

use crate::util::eventually;
use crate::util::git::{self, git};
use crate::worktrees::tavern;

/// What the user's side of a repository looks like: HEAD, the index, the working tree.
fn user_state(dir: &Path) -> (String, String, String, String) {
    (
        git(dir, &["rev-parse", "HEAD"]),
        git(dir, &["status", "--porcelain", "--untracked-files=all"]),
        git(dir, &["diff", "--cached"]),
        // Every branch but the board's own (and its remote-tracking copy, which git
        // updates on every fetch and push of it), and where it points.
        git(
            dir,
            &[
                "for-each-ref",
                "--exclude=refs/heads/tavern",
                "--exclude=refs/remotes/origin/tavern",
                "refs/heads",
                "refs/remotes",
            ],
        ),
    )
}

#[test]
fn sync_records_the_board_on_its_branch_and_a_fresh_clone_gets_it() {
    let tmp = tempfile::tempdir().unwrap();
    let seed = tmp.path().join("seed");
    git::init_repo(&seed);
    let remote = git::bare(&tmp.path().join("remote.git"));
    git(&seed, &["push", "-q", remote.to_str().unwrap(), "main"]);
    let a = tmp.path().join("a");
    git(
        tmp.path(),
        &["clone", "-q", remote.to_str().unwrap(), a.to_str().unwrap()],
    );

    tavern(&a, &["init"]).ok();
    tavern(&a, &["sync"])
        .code(6)
        .stderr_has("is not connected to a remote: `tavern sync init [REMOTE]` connects it");
    tavern(&a, &["sync", "init", "nowhere"])
        .code(6)
        .stderr_has("git knows no remote 'nowhere'");
    tavern(&a, &["sync", "init"]).ok().stdout_has("connected ");
    assert_eq!(git(&a, &["config", "tavern.remote"]), "origin");
    // The board is not the code's: kept out of git status by .git/info/exclude.
    assert_eq!(
        git(&a, &["status", "--porcelain", "--untracked-files=all"]),
        ""
    );
    assert_eq!(
        tavern(&a, &["status", "--json"]).ok().json()["layout"],
        "board-branch"
    );

    // The user has work in progress: staged and unstaged.
    std::fs::write(a.join("staged.txt"), "staged\n").unwrap();
    git(&a, &["add", "staged.txt"]);
    std::fs::write(a.join("README"), "edited, not staged\n").unwrap();
    let before = user_state(&a);
    let id = tavern(&a, &["new", "task", "--title", "Shared"])
        .ok()
        .text();
    let x = tavern(&a, &["sync", "--json"]).ok().json();
    assert_eq!(
        (x["outcome"].as_str(), x["recorded"].as_bool()),
        (Some("pushed"), Some(true))
    );
    assert_eq!(
        user_state(&a),
        before,
        "HEAD, index and working tree untouched"
    );
    // The board's own history.
    let history = git(
        &a,
        &["log", "-p", "tavern", "--", &format!("tasks/{id}.md")],
    );
    assert!(history.contains("+title: Shared"), "{history}");
    assert_eq!(
        git(&remote, &["rev-parse", "refs/heads/tavern"]),
        git(&a, &["rev-parse", "refs/heads/tavern"])
    );
    // Nothing new: nothing recorded, nothing sent.
    let x = tavern(&a, &["sync", "--json"]).ok().json();
    assert_eq!(
        (x["outcome"].as_str(), x["recorded"].as_bool()),
        (Some("up-to-date"), Some(false))
    );
    assert!(
        !git(&a, &["ls-files"]).contains(".tavern"),
        "no board file on the code branch"
    );

    // A fresh clone: `sync init` brings the board; no `tavern init`.
    let b = tmp.path().join("b");
    git(
        tmp.path(),
        &["clone", "-q", remote.to_str().unwrap(), b.to_str().unwrap()],
    );
    tavern(&b, &["sync", "init"])
        .ok()
        .stdout_has("(fetched its board branch)");
    tavern(&b, &["show", &id]).ok().stdout_has("title: Shared");
    assert_eq!(
        git(&b, &["status", "--porcelain", "--untracked-files=all"]),
        ""
    );
    // Changes made in b, by tavern and by hand, reach a.
    let id2 = tavern(&b, &["new", "task", "--title", "From b"])
        .ok()
        .text();
    let edited = std::fs::read_to_string(b.join(format!(".tavern/tasks/{id}.md")))
        .unwrap()
        .replace("title: Shared", "title: Shared, edited by hand");
    std::fs::write(b.join(format!(".tavern/tasks/{id}.md")), edited).unwrap();
    assert_eq!(
        tavern(&b, &["sync", "--json"]).ok().json()["outcome"],
        "pushed"
    );
    assert_eq!(
        tavern(&a, &["sync", "--json"]).ok().json()["outcome"],
        "fast-forwarded"
    );
    tavern(&a, &["show", &id2]).ok().stdout_has("title: From b");
    tavern(&a, &["show", &id])
        .ok()
        .stdout_has("title: Shared, edited by hand");
    assert_eq!(user_state(&a), before);
    tavern(&a, &["check"]).ok();

    // Both changed since they last met: merged, nothing lost, each log entry once.
    let a_new = tavern(&a, &["new", "task", "--title", "a again"])
        .ok()
        .text();
    let b_new = tavern(&b, &["new", "task", "--title", "b again"])
        .ok()
        .text();
    assert_eq!(
        tavern(&a, &["sync", "--json"]).ok().json()["outcome"],
        "pushed"
    );
    let x = tavern(&b, &["sync", "--json"]).ok().json();
    assert_eq!(x["outcome"], "merged", "{x}");
    assert_eq!(x["conflicts"], serde_json::json!([]));
    assert_eq!(
        tavern(&a, &["sync", "--json"]).ok().json()["outcome"],
        "fast-forwarded"
    );
    for dir in [&a, &b] {
        for t in [&a_new, &b_new] {
            tavern(dir, &["show", t]).ok();
        }
        tavern(dir, &["check"]).ok();
        let log = std::fs::read_to_string(dir.join(".tavern/log.yaml")).unwrap();
        for t in [&a_new, &b_new] {
            let doc = format!("doc: \"tasks/{t}.md\"");
            assert_eq!(
                log.lines()
                    .filter(|l| l.contains(&doc) && l.contains("op: \"create\""))
                    .count(),
                1,
                "{log}"
            );
        }
    }
    assert_eq!(
        std::fs::read(a.join(".tavern/log.yaml")).unwrap(),
        std::fs::read(b.join(".tavern/log.yaml")).unwrap()
    );
    assert_eq!(user_state(&a), before);
}

/// Two clones of one project, both connected to a bare remote, the board on its branch.
pub fn two_clones(tmp: &Path) -> (std::path::PathBuf, std::path::PathBuf, std::path::PathBuf) {
    let seed = tmp.join("seed");
    git::init_repo(&seed);
    let remote = git::bare(&tmp.join("remote.git"));
    git(&seed, &["push", "-q", remote.to_str().unwrap(), "main"]);
    let a = tmp.join("a");
    let b = tmp.join("b");
    for dir in [&a, &b] {
        git(
            tmp,
            &[
                "clone",
                "-q",
                remote.to_str().unwrap(),
                dir.to_str().unwrap(),
            ],
        );
    }
    tavern(&a, &["init"]).ok();
    tavern(&a, &["sync", "init"]).ok();
    tavern(&a, &["sync"]).ok();
    tavern(&b, &["sync", "init"]).ok();
    (a, b, remote)
}

fn field(dir: &Path, id: &str, key: &str) -> String {
    let text = std::fs::read_to_string(dir.join(format!(".tavern/tasks/{id}.md"))).unwrap();
    text.lines()
        .find_map(|l| l.strip_prefix(&format!("{key}: ")))
        .unwrap_or("")
        .to_string()
}

#[test]
fn two_clones_changing_the_same_field_converge_by_the_rule_and_log_the_conflict() {
    let tmp = tempfile::tempdir().unwrap();
    let (a, b, _remote) = two_clones(tmp.path());
    let id = tavern(&a, &["new", "task", "--title", "Shared", "--id", "shared"])
        .ok()
        .text();
    tavern(&a, &["sync"]).ok();
    tavern(&b, &["sync"]).ok();
    // Different fields on each side, the same field on both, and the body on each side at
    // different lines.
    tavern(&a, &["edit", &id, "--set", "priority=3"]).ok();
    tavern(&a, &["edit", &id, "--set", "title=Title from a"]).ok();
    tavern(
        &b,
        &[
            "edit",
            &id,
            "--set",
            "labels=[ui]",
            "--extra-field",
            "labels",
        ],
    )
    .ok();
    // b's edit comes later in the log's order (higher Lamport seq): b wins the title.
    tavern(&b, &["edit", &id, "--set", "title=Title from b"]).ok();
    tavern(&b, &["edit", &id, "--set", "title=Title from b, again"]).ok();
    assert_eq!(
        tavern(&a, &["sync", "--json"]).ok().json()["outcome"],
        "pushed"
    );
    let x = tavern(&b, &["sync", "--json"]).ok().json();
    assert_eq!(x["outcome"], "merged", "{x}");
    assert_eq!(
        x["conflicts"],
        serde_json::json!([{
            "doc": "tasks/shared.md",
            "field": "title",
            "kept": "\"Title from b, again\"",
            "dropped": "Title from a",
        }])
    );
    tavern(&a, &["sync"]).ok();
    for dir in [&a, &b] {
        assert_eq!(field(dir, &id, "title"), "\"Title from b, again\"");
        assert_eq!(field(dir, &id, "priority"), "3");
        let text = std::fs::read_to_string(dir.join(".tavern/tasks/shared.md")).unwrap();
        assert!(
            !text.contains("<<<<<<<") && !text.contains(">>>>>>>"),
            "{text}"
        );
        assert!(text.contains("labels:"), "{text}");
        tavern(dir, &["check"]).ok();
    }
    // One conflict entry, naming both values, the same on both clones.
    let log = std::fs::read_to_string(a.join(".tavern/log.yaml")).unwrap();
    let conflicts: Vec<&str> = log
        .lines()
        .filter(|l| l.contains("op: \"sync-conflict\""))
        .collect();
    assert_eq!(conflicts.len(), 1, "{log}");
    assert!(
        conflicts[0].contains(
            r#"note: "title changed on both sides: kept \"Title from b, again\", dropped Title from a""#
        ),
        "{}",
        conflicts[0]
    );
    assert_eq!(
        log,
        std::fs::read_to_string(b.join(".tavern/log.yaml")).unwrap()
    );
    // The merged rev is above both sides' revs.
    let rev: u64 = field(&a, &id, "rev").parse().unwrap();
    assert_eq!(
        rev, 5,
        "created at 1; a edited to 3, b to 4: one more than the higher"
    );
}

/// A long-running tavern process in `dir` (killed when dropped), its stdout collected.
struct Running {
    child: std::process::Child,
}

impl Running {
    fn start(dir: &Path, args: &[&str]) -> Running {
        let mut c = std::process::Command::new(crate::util::BIN);
        c.args(args)
            .current_dir(dir)
            .env_remove("TAVERN_BOARD")
            .env_remove("TAVERN_AGENT")
            .env("USER", "tester")
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null());
        git::env(&mut c);
        Running {
            child: c.spawn().expect("spawn tavern"),
        }
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn on_remote(remote: &Path, path: &str) -> bool {
    git(remote, &["ls-tree", "-r", "--name-only", "tavern"])
        .lines()
        .any(|l| l == path)
}

#[test]
fn sync_watch_keeps_exchanging_both_ways() {
    let tmp = tempfile::tempdir().unwrap();
    let (a, b, remote) = two_clones(tmp.path());
    tavern(&b, &["sync", "--watch", "--interval", "nope"])
        .code(2)
        .stderr_has("--interval 'nope'");
    let _w = Running::start(&b, &["sync", "--watch", "--interval", "1s"]);
    // Changed elsewhere: arrives here without a command.
    tavern(&a, &["new", "task", "--title", "From a", "--id", "from-a"]).ok();
    tavern(&a, &["sync"]).ok();
    eventually("the task from a in b", || {
        b.join(".tavern/tasks/from-a.md").is_file()
    });
    // Changed here, by tavern and by hand: sent without a command.
    tavern(&b, &["new", "task", "--title", "From b", "--id", "from-b"]).ok();
    eventually("b's task on the remote", || {
        on_remote(&remote, "tasks/from-b.md")
    });
    std::fs::write(
        b.join(".tavern/observations/by-hand.md"),
        "---\nid: by-hand\ntitle: Written by hand\n---\n",
    )
    .unwrap();
    eventually("b's hand-written file on the remote", || {
        on_remote(&remote, "observations/by-hand.md")
    });
    tavern(&a, &["sync"]).ok();
    tavern(&a, &["show", "from-b"])
        .ok()
        .stdout_has("title: From b");
    assert!(a.join(".tavern/observations/by-hand.md").is_file());
}

#[test]
fn a_connected_watch_reacts_once_to_changes_made_on_another_machine() {
    let tmp = tempfile::tempdir().unwrap();
    let (a, b, remote) = two_clones(tmp.path());
    std::fs::write(
        a.join(".tavern/control/sources/rec.md"),
        "---\nname: rec\nwatch: [tasks]\non: [created]\nrun: echo \"$TAVERN_EVENT $TAVERN_ID\" >> ran.txt\n---\n",
    )
    .unwrap();
    tavern(&a, &["sync"]).ok();
    tavern(&b, &["sync"]).ok();
    let _w = Running::start(&b, &["watch", "--sync-interval", "1s"]);
    let ran = || std::fs::read_to_string(b.join("ran.txt")).unwrap_or_default();
    for id in ["one", "two"] {
        tavern(&a, &["new", "task", "--title", id, "--id", id]).ok();
        tavern(&a, &["sync"]).ok();
        eventually(&format!("b's source to react to {id}"), || {
            ran().contains(&format!("created {id}"))
        });
        // Its activation, logged on b, reaches the remote: the next change from a is
        // then merged on a, and b's log only grows.
        eventually(&format!("the activation for {id} on the remote"), || {
            git(&remote, &["show", "tavern:log.yaml"]).lines().any(|l| {
                l.contains("op: \"activation\"")
                    && l.contains(&format!("doc: \"tasks/{id}.md\", to: \"ok\""))
            })
        });
    }
    // Once each, and not as hand edits.
    eventually("the second activation to be logged", || {
        std::fs::read_to_string(b.join(".tavern/log.yaml"))
            .unwrap()
            .matches("op: \"activation\"")
            .count()
            >= 4
    });
    assert_eq!(ran(), "created one\ncreated two\n");
    let log = std::fs::read_to_string(b.join(".tavern/log.yaml")).unwrap();
    assert!(!log.contains("external-edit"), "{log}");
}

#[test]
fn offline_everything_but_claims_works_and_is_sent_at_the_next_sync() {
    let tmp = tempfile::tempdir().unwrap();
    let (a, b, remote) = two_clones(tmp.path());
    let gone = tmp.path().join("gone.git");
    std::fs::rename(&remote, &gone).unwrap();
    // Offline: new documents and edits work; the sync says what it could not do.
    tavern(
        &a,
        &["new", "task", "--title", "Offline", "--id", "offline"],
    )
    .ok();
    let status = git(&a, &["status", "--porcelain", "--untracked-files=all"]);
    let out = tavern(&a, &["--json", "sync"]);
    let err = stderr_json(out.code(7));
    assert_eq!(err["error"]["kind"], "unconfirmed", "{err}");
    let msg = err["error"]["message"].as_str().unwrap();
    assert!(
        // The remote is named by its URL (the clone's own path only as the board's).
        msg.contains(&format!(
            "cannot fetch the board branch from the remote 'origin' at {} (",
            remote.display()
        )) && msg.contains("the board here is intact"),
        "{msg}"
    );
    assert_eq!(
        git(&a, &["status", "--porcelain", "--untracked-files=all"]),
        status
    );
    tavern(&a, &["show", "offline"]).ok();
    // Recorded, not sent: check and status say so.
    let s = tavern(&a, &["status", "--json"]).ok().json();
    assert_eq!(
        (s["sync"]["ahead"].as_u64(), s["sync"]["behind"].as_u64()),
        (Some(1), Some(0)),
        "{s}"
    );
    let c = tavern(&a, &["check", "--json"]).ok().json();
    assert_eq!(c["sync"]["ahead"], 1, "{c}");
    tavern(&a, &["check"])
        .ok()
        .stdout_has("sync with 'origin': 1 board commit to send, 0 to receive");
    // Back online: sent.
    std::fs::rename(&gone, &remote).unwrap();
    assert_eq!(
        tavern(&a, &["sync", "--json"]).ok().json()["outcome"],
        "pushed"
    );
    assert_eq!(
        tavern(&a, &["status", "--json"]).ok().json()["sync"]["ahead"],
        0
    );
    tavern(&b, &["sync"]).ok();
    tavern(&b, &["show", "offline"]).ok();
}

#[test]
fn a_remote_that_goes_away_during_sync_leaves_nothing_half_written() {
    let tmp = tempfile::tempdir().unwrap();
    let (a, _b, remote) = two_clones(tmp.path());
    let before_remote = git(&remote, &["rev-parse", "tavern"]);
    // The remote disappears while it receives the push (after the fetch went through).
    let hook = remote.join("hooks/pre-receive");
    std::fs::write(
        &hook,
        format!("#!/bin/sh\nmv '{0}' '{0}.gone'\nexit 1\n", remote.display()),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::set_permissions(&hook, std::fs::Permissions::from_mode(0o755)).unwrap();
    tavern(&a, &["new", "task", "--title", "Unsent", "--id", "unsent"]).ok();
    let board_before = std::fs::read(a.join(".tavern/tasks/unsent.md")).unwrap();
    tavern(&a, &["sync"])
        .code(7)
        .stderr_has("cannot push the board branch to the remote 'origin'");
    // Here: the board as it was, its change recorded on the branch, nothing else moved.
    assert_eq!(
        std::fs::read(a.join(".tavern/tasks/unsent.md")).unwrap(),
        board_before
    );
    let here = git(&a, &["rev-parse", "tavern"]);
    assert_ne!(here, before_remote);
    assert_eq!(
        git(&a, &["rev-parse", "refs/tavern/remote/tavern"]),
        before_remote
    );
    tavern(&a, &["check"]).ok();
    // There: nothing arrived.
    let moved = tmp.path().join("remote.git.gone");
    std::fs::remove_file(moved.join("hooks/pre-receive")).unwrap();
    assert_eq!(git(&moved, &["rev-parse", "tavern"]), before_remote);
    std::fs::rename(&moved, &remote).unwrap();
    assert_eq!(
        tavern(&a, &["sync", "--json"]).ok().json()["outcome"],
        "pushed"
    );
    assert_eq!(git(&remote, &["rev-parse", "tavern"]), here);
}

#[test]
fn a_board_tracked_on_the_code_branch_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let seed = tmp.path().join("seed");
    git::init_repo(&seed);
    let remote = git::bare(&tmp.path().join("remote.git"));
    git(
        &seed,
        &["remote", "add", "origin", remote.to_str().unwrap()],
    );
    tavern(&seed, &["init"]).ok();
    git(&seed, &["add", ".tavern"]);
    git(&seed, &["commit", "-q", "-m", "board"]);
    let head = git(&seed, &["rev-parse", "HEAD"]);
    for args in [&["sync", "init"][..], &["sync"][..]] {
        if args == ["sync"] {
            // Connected before the board was committed with the code.
            git(&seed, &["config", "tavern.remote", "origin"]);
        }
        let mut v = vec!["--json"];
        v.extend_from_slice(args);
        let out = tavern(&seed, &v);
        let err = stderr_json(out.code(2));
        assert!(
            err["error"]["message"]
                .as_str()
                .unwrap()
                .contains("is tracked on the code branch"),
            "{err}"
        );
    }
    assert_eq!(git(&seed, &["rev-parse", "HEAD"]), head);
    assert_eq!(git(&seed, &["for-each-ref", "refs/heads/tavern"]), "");
    // Moved off the code branch as the message says: then it connects.
    git(&seed, &["rm", "-r", "-q", "--cached", ".tavern"]);
    git(
        &seed,
        &["commit", "-q", "-m", "the board moves to its own branch"],
    );
    tavern(&seed, &["sync", "init"]).ok();
    assert_eq!(
        tavern(&seed, &["sync", "--json"]).ok().json()["outcome"],
        "pushed"
    );
    assert_eq!(
        git(&seed, &["status", "--porcelain", "--untracked-files=all"]),
        ""
    );
}

#[test]
fn three_clones_syncing_at_once_converge_with_every_entry_once() {
    let tmp = tempfile::tempdir().unwrap();
    let (a, b, remote) = two_clones(tmp.path());
    let c = tmp.path().join("c");
    git(
        tmp.path(),
        &["clone", "-q", remote.to_str().unwrap(), c.to_str().unwrap()],
    );
    tavern(&c, &["sync", "init"]).ok();
    let clones = [a, b, c];
    for (n, dir) in clones.iter().enumerate() {
        for i in 0..4 {
            tavern(
                dir,
                &["new", "task", "--title", "t", "--id", &format!("c{n}-t{i}")],
            )
            .ok();
        }
    }
    // All at once: pushes race; the losers fetch, merge and push again.
    let handles: Vec<_> = clones
        .iter()
        .cloned()
        .map(|dir| std::thread::spawn(move || tavern(&dir, &["sync", "--json"]).ok().json()))
        .collect();
    for h in handles {
        let x = h.join().unwrap();
        assert!(
            ["pushed", "merged", "fast-forwarded"].contains(&x["outcome"].as_str().unwrap()),
            "{x}"
        );
    }
    for dir in &clones {
        tavern(dir, &["sync"]).ok();
    }
    let log = std::fs::read(clones[0].join(".tavern/log.yaml")).unwrap();
    for dir in &clones {
        assert_eq!(std::fs::read(dir.join(".tavern/log.yaml")).unwrap(), log);
        let tasks = std::fs::read_dir(dir.join(".tavern/tasks"))
            .unwrap()
            .count();
        assert_eq!(tasks, 12);
        tavern(dir, &["check"]).ok();
    }
    let text = String::from_utf8(log).unwrap();
    for n in 0..3 {
        for i in 0..4 {
            let doc = format!("doc: \"tasks/c{n}-t{i}.md\"");
            assert_eq!(
                text.lines().filter(|l| l.contains(&doc)).count(),
                1,
                "{text}"
            );
        }
    }
}

fn stderr_json(out: &crate::util::Out) -> serde_json::Value {
    serde_json::from_str(&out.stderr)
        .unwrap_or_else(|e| panic!("stderr is not JSON ({e}):\n{}", out.stderr))
}

#[test]
fn check_and_status_report_a_claim_the_remote_does_not_confirm() {
    let tmp = tempfile::tempdir().unwrap();
    let (a, _b, _remote) = two_clones(tmp.path());
    tavern(&a, &["new", "task", "--title", "T", "--id", "t1"]).ok();
    tavern(&a, &["check"]).ok();
    tavern(&a, &["--as", "coder-1", "claim", "t1", "--local"]).ok();
    let s = tavern(&a, &["status", "--json"]).ok().json();
    assert_eq!(
        s["sync"]["unconfirmed"],
        serde_json::json!([{"task": "t1", "holder": "coder-1"}]),
        "{s}"
    );
    let out = tavern(&a, &["check", "--json"]);
    let c: serde_json::Value = serde_json::from_str(&out.code(6).stdout).unwrap();
    let problems = c["problems"].as_array().unwrap();
    assert_eq!(problems.len(), 1, "{c}");
    assert_eq!(problems[0]["path"], "tasks/t1.md");
    assert!(
        problems[0]["problem"].as_str().unwrap().contains(
            "claimed by coder-1 here, but the remote 'origin' has no record confirming it"
        ),
        "{c}"
    );
    // Its next move, confirmed, settles it.
    tavern(&a, &["--as", "coder-1", "start", "t1"]).ok();
    tavern(&a, &["check"]).ok();
}

/// The issue's race across machines, on the board branch: three clones with two agents
/// each race over every task; each task has one winner, every loser is told exit 3, and
/// after `tavern sync` everywhere all clones hold the same board and one log in which each
/// task was claimed exactly once.
#[test]
fn clones_racing_for_claims_agree_on_every_task_after_sync() {
    use std::collections::BTreeMap;
    use std::sync::{Arc, Barrier};
    const TASKS: usize = 12;
    let tmp = tempfile::tempdir().unwrap();
    let (a, b, remote) = two_clones(tmp.path());
    let c = tmp.path().join("c");
    git(
        tmp.path(),
        &["clone", "-q", remote.to_str().unwrap(), c.to_str().unwrap()],
    );
    for i in 0..TASKS {
        tavern(
            &a,
            &["new", "task", "--title", "t", "--id", &format!("t{i:02}")],
        )
        .ok();
    }
    tavern(&a, &["sync"]).ok();
    tavern(&b, &["sync"]).ok();
    tavern(&c, &["sync", "init"]).ok();
    let clones = [a, b, c];
    for dir in &clones {
        assert_eq!(
            std::fs::read_dir(dir.join(".tavern/tasks"))
                .unwrap()
                .count(),
            TASKS
        );
    }

    let barrier = Arc::new(Barrier::new(6));
    let mut workers = Vec::new();
    for (n, dir) in clones.iter().enumerate() {
        for agent in 0..2 {
            let (dir, barrier) = (dir.clone(), Arc::clone(&barrier));
            workers.push(std::thread::spawn(move || {
                let name = format!("c{n}-a{agent}");
                let mut order: Vec<usize> = (0..TASKS).collect();
                crate::concurrency::Rng::new(11 + (n * 2 + agent) as u64).shuffle(&mut order);
                barrier.wait();
                order
                    .into_iter()
                    .map(|i| {
                        let id = format!("t{i:02}");
                        let out = tavern(&dir, &["claim", &id, "--as", &name]);
                        (id, name.clone(), out.code, out.stderr.clone())
                    })
                    .collect::<Vec<_>>()
            }));
        }
    }
    let attempts: Vec<_> = workers
        .into_iter()
        .flat_map(|w| w.join().unwrap())
        .collect();
    let mut winners: BTreeMap<String, String> = BTreeMap::new();
    for (id, name, code, _) in &attempts {
        if *code == 0
            && let Some(other) = winners.insert(id.clone(), name.clone())
        {
            panic!("{id} claimed twice: by {other} and {name}");
        }
    }
    assert_eq!(winners.len(), TASKS, "every task has one winner");
    for (id, name, code, stderr) in &attempts {
        if &winners[id] != name {
            assert_eq!(*code, 3, "{name} on {id}: {stderr}");
            assert!(
                stderr.contains(&format!("already claimed by {}", winners[id])),
                "{stderr}"
            );
        }
    }

    // Two rounds: the first brings every clone's changes to the remote, the second back.
    for _ in 0..2 {
        for dir in &clones {
            tavern(dir, &["sync"]).ok();
        }
    }
    let log = std::fs::read(clones[0].join(".tavern/log.yaml")).unwrap();
    for dir in &clones {
        assert_eq!(
            std::fs::read(dir.join(".tavern/log.yaml")).unwrap(),
            log,
            "{} holds the same log",
            dir.display()
        );
        for (id, winner) in &winners {
            assert_eq!(
                field(dir, id, "status"),
                "claimed",
                "{} {id}",
                dir.display()
            );
            assert_eq!(
                &field(dir, id, "claimed_by"),
                winner,
                "{} {id}",
                dir.display()
            );
        }
        tavern(dir, &["check"]).ok();
    }
    let text = String::from_utf8(log).unwrap();
    for id in winners.keys() {
        let doc = format!("doc: \"tasks/{id}.md\"");
        let claims = text
            .lines()
            .filter(|l| l.contains(&doc) && l.contains("op: \"claim\""))
            .count();
        assert_eq!(claims, 1, "{id} is claimed once in the log:\n{text}");
    }
}
