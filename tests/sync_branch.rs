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

    // Both changed since they last met: not merged yet, said so with exit 3, nothing lost.
    tavern(&a, &["new", "task", "--title", "a again"]).ok();
    tavern(&b, &["new", "task", "--title", "b again"]).ok();
    assert_eq!(
        tavern(&a, &["sync", "--json"]).ok().json()["outcome"],
        "pushed"
    );
    tavern(&b, &["sync"])
        .code(3)
        .stderr_has("merging them is not done yet");
    tavern(&b, &["list", "tasks"]).ok().stdout_has("b again");
}
