//! Every worktree of a repository uses one board: the main worktree's. Real git, real
//! processes.

#![cfg(unix)]

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::concurrency::Rng;
use crate::util::git::{self, git};
use crate::util::{BIN, Out, output};

/// `tavern ARGS` run in `dir`, with a clean environment.
pub fn tavern(dir: &Path, args: &[&str]) -> Out {
    output(git::tavern_cmd(dir, args, None))
}

/// A repository at `tmp/main` with a committed board, and a linked worktree at `tmp/wt`
/// on its own branch (so it has its own checked-out copy of `.tavern/`).
fn repo_with_worktree(tmp: &Path) -> (PathBuf, PathBuf) {
    let main = tmp.join("main");
    git::init_repo(&main);
    tavern(&main, &["init"]).ok();
    git(&main, &["add", "-A"]);
    git(&main, &["commit", "-q", "-m", "board"]);
    let wt = tmp.join("wt");
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
    (main, wt)
}

#[test]
fn a_worktree_uses_the_main_worktrees_board_and_says_so() {
    let tmp = tempfile::tempdir().unwrap();
    let (main, wt) = repo_with_worktree(tmp.path());
    std::fs::create_dir_all(wt.join("src/deep")).unwrap();
    let id = tavern(
        &wt.join("src/deep"),
        &["new", "task", "--title", "From the worktree"],
    )
    .ok()
    .text();
    // Found from the main worktree; the worktree's own copy was not written.
    tavern(&main, &["show", &id])
        .ok()
        .stdout_has("From the worktree");
    assert!(main.join(format!(".tavern/tasks/{id}.md")).is_file());
    assert!(!wt.join(format!(".tavern/tasks/{id}.md")).exists());
    assert_eq!(git(&wt, &["status", "--porcelain"]), "");
    // And the other way round.
    let id2 = tavern(&main, &["new", "task", "--title", "From main"])
        .ok()
        .text();
    tavern(&wt, &["claim", &id2, "--as", "w"]).ok();
    assert!(
        std::fs::read_to_string(main.join(format!(".tavern/tasks/{id2}.md")))
            .unwrap()
            .contains("claimed_by: w\n")
    );

    let s = tavern(&wt, &["status", "--json"]).ok().json();
    let board = std::fs::canonicalize(main.join(".tavern")).unwrap();
    assert_eq!(
        std::fs::canonicalize(s["board"].as_str().unwrap()).unwrap(),
        board
    );
    assert_eq!(s["how"], "worktree");
    assert_eq!(s["repo"]["linked"], true);
    assert_eq!(s["worktrees"], 2);
    assert_eq!(s["layout"], "code-branch");
    assert_eq!(s["remote"], serde_json::Value::Null);
    assert_eq!(
        std::fs::canonicalize(s["ignored_copy"].as_str().unwrap()).unwrap(),
        std::fs::canonicalize(wt.join(".tavern")).unwrap()
    );
    let text = tavern(&wt, &["status"]).ok().stdout.clone();
    assert!(text.contains("why: this is a linked git worktree; every worktree of a repository uses its main worktree's board\n"), "{text}");
    assert!(
        text.contains("(this worktree's checked-out copy)\n"),
        "{text}"
    );
    // --board still overrides.
    let own = tavern(&wt, &["--board", ".tavern", "status", "--json"])
        .ok()
        .json();
    assert_eq!(own["how"], "flag");
    assert!(
        own["board"]
            .as_str()
            .unwrap()
            .starts_with(wt.to_str().unwrap())
    );
    let mut c = Command::new(BIN);
    c.args(["status", "--json"])
        .current_dir(&wt)
        .env("TAVERN_BOARD", wt.join(".tavern"));
    git::env(&mut c);
    assert_eq!(output(c).ok().json()["how"], "env");
}

#[test]
fn init_in_a_worktree_makes_the_main_worktrees_board() {
    let tmp = tempfile::tempdir().unwrap();
    let main = tmp.path().join("main");
    git::init_repo(&main);
    let wt = tmp.path().join("wt");
    git(
        &main,
        &["worktree", "add", "-q", "-b", "f", wt.to_str().unwrap()],
    );
    tavern(&wt, &["status"])
        .code(4)
        .stderr_has("tavern board in the main worktree")
        .stderr_has("hint: create it with `tavern init");
    tavern(&wt, &["init"]).ok();
    assert!(main.join(".tavern/board.yaml").is_file());
    assert!(!wt.join(".tavern").exists());
    tavern(&wt, &["new", "task", "--title", "x"]).ok();
}

/// Eight processes, four in each worktree, each trying to claim all 50 tasks in its own
/// order: every task is claimed exactly once, the losers get exit 3.
#[test]
fn eight_processes_in_two_worktrees_claim_each_of_fifty_tasks_once() {
    let tmp = tempfile::tempdir().unwrap();
    let (main, wt) = repo_with_worktree(tmp.path());
    let ids: Vec<String> = (0..50).map(|i| format!("t{i:02}")).collect();
    for (i, id) in ids.iter().enumerate() {
        let dir = if i % 2 == 0 { &main } else { &wt };
        tavern(dir, &["new", "task", "--title", id, "--id", id]).ok();
    }
    let mut rng = Rng::new(10);
    let mut children = Vec::new();
    let mut dirs = Vec::new();
    for w in 0..8 {
        let mut order = ids.clone();
        rng.shuffle(&mut order);
        let results = tmp.path().join(format!("results-{w}"));
        let script = format!(
            "read go || exit 99\nfor id in {}; do \"$T\" claim \"$id\" --as w{w} >/dev/null 2>>\"$R.err\"; echo \"$id $?\" >>\"$R\"; done",
            order.join(" ")
        );
        let mut c = Command::new("sh");
        c.arg("-c")
            .arg(script)
            .current_dir(if w % 2 == 0 { &main } else { &wt })
            .env_remove("TAVERN_BOARD")
            .env_remove("TAVERN_AGENT")
            .env("T", BIN)
            .env("R", &results)
            .stdin(Stdio::piped());
        git::env(&mut c);
        children.push(c.spawn().unwrap());
        dirs.push(results);
    }
    for c in &mut children {
        c.stdin.take().unwrap().write_all(b"go\n").unwrap();
    }
    for mut c in children {
        assert!(c.wait().unwrap().success());
    }
    let mut winners: BTreeMap<String, Vec<usize>> = BTreeMap::new();
    for (w, r) in dirs.iter().enumerate() {
        let text = std::fs::read_to_string(r).unwrap();
        assert_eq!(text.lines().count(), 50);
        for l in text.lines() {
            let (id, code) = l.split_once(' ').unwrap();
            match code {
                "0" => winners.entry(id.to_string()).or_default().push(w),
                "3" => {}
                other => panic!("w{w} {id}: exit {other}"),
            }
        }
    }
    assert_eq!(winners.len(), 50, "every task claimed");
    for (id, ws) in &winners {
        assert_eq!(ws.len(), 1, "{id} claimed by {ws:?}");
        let text = std::fs::read_to_string(main.join(format!(".tavern/tasks/{id}.md"))).unwrap();
        assert!(
            text.contains(&format!("claimed_by: w{}\n", ws[0])),
            "{text}"
        );
    }
    tavern(&wt, &["check"]).ok();
    // The worktree's copy of the board was never written.
    assert_eq!(git(&wt, &["status", "--porcelain"]), "");
}
