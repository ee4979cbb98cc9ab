//! A board committed to git and cloned: what git does not keep (empty directories,
//! runtime state) is recreated by whichever command runs first.

#![cfg(unix)]

use crate::util::git::{self, git};
use crate::worktrees::tavern;

#[test]
fn a_fresh_clone_works_with_no_init() {
    let tmp = tempfile::tempdir().unwrap();
    let origin = tmp.path().join("origin");
    git::init_repo(&origin);
    tavern(&origin, &["init"]).ok();
    git(&origin, &["add", "-A"]);
    git(&origin, &["commit", "-q", "-m", "board"]);
    let clone = tmp.path().join("clone");
    git(
        tmp.path(),
        &[
            "clone",
            "-q",
            origin.to_str().unwrap(),
            clone.to_str().unwrap(),
        ],
    );
    assert!(
        !clone.join(".tavern/tasks").exists(),
        "git kept no empty dir"
    );
    let t = tavern(&clone, &["new", "task", "--title", "first"])
        .ok()
        .text();
    tavern(&clone, &["ask", "why?"]).ok();
    tavern(
        &clone,
        &["post", "found it", "--topic", "x", "--severity", "low"],
    )
    .ok();
    tavern(&clone, &["agent", "register", "--name", "a1"]).ok();
    tavern(&clone, &["claim", &t, "--as", "a1"]).ok();
    tavern(&clone, &["check"]).ok();
    for d in [
        "tasks",
        "questions",
        "observations",
        "control/agents",
        "archive",
    ] {
        assert!(clone.join(".tavern").join(d).is_dir(), "{d}");
    }
}
