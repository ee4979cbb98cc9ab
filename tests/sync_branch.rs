//! The board branch and `tavern sync`: real git, a local bare repository as the remote.

#![cfg(unix)]

use std::path::Path;

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
    tavern(&b, &["edit", &id, "--set", "labels=[ui]"]).ok();
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
