//! A board kept on the code branches (the layout before the board branch), merged by a
//! plain `git pull` with no tavern merge driver: only the union attribute that the board's
//! committed .gitattributes names. Real git, two clones of one bare remote.

#![cfg(unix)]

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use crate::util::git::{self, git};
use crate::worktrees::tavern;

/// A bare remote with a committed board holding tasks t1..t4, and two clones of it.
fn two_clones(tmp: &Path) -> (PathBuf, PathBuf) {
    let seed = tmp.join("seed");
    git::init_repo(&seed);
    tavern(&seed, &["init"]).ok();
    for t in ["t1", "t2", "t3", "t4"] {
        tavern(&seed, &["new", "task", "--title", t, "--id", t]).ok();
    }
    git(&seed, &["add", "-A"]);
    git(&seed, &["commit", "-q", "-m", "board"]);
    let remote = git::bare(&tmp.join("remote.git"));
    git(&seed, &["push", "-q", remote.to_str().unwrap(), "main"]);
    let clone = |name: &str| {
        let dir = tmp.join(name);
        git(
            tmp,
            &[
                "clone",
                "-q",
                remote.to_str().unwrap(),
                dir.to_str().unwrap(),
            ],
        );
        dir
    };
    (clone("a"), clone("b"))
}

/// The log's entries parsed by an independent YAML reader: (origin, seq) of each.
fn entries(dir: &Path) -> Vec<(String, u64, String)> {
    let text = std::fs::read_to_string(dir.join(".tavern/log.yaml")).unwrap();
    let v: serde_json::Value = serde_saphyr::from_str(&text)
        .unwrap_or_else(|e| panic!("log.yaml does not parse: {e}\n{text}"));
    v.as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (
                e["origin"].as_str().unwrap_or("").to_string(),
                e["seq"].as_u64().unwrap(),
                format!(
                    "{} {}",
                    e["op"].as_str().unwrap(),
                    e["doc"].as_str().unwrap()
                ),
            )
        })
        .collect()
}

fn work(dir: &Path, task: &str, agent: &str) {
    tavern(dir, &["claim", task, "--as", agent]).ok();
    tavern(dir, &["edit", task, "--set", "priority=1", "--as", agent]).ok();
    tavern(dir, &["start", task, "--as", agent]).ok();
    tavern(
        dir,
        &[
            "post",
            &format!("note by {agent}"),
            "--topic",
            "x",
            "--severity",
            "low",
            "--as",
            agent,
        ],
    )
    .ok();
}

fn pull_merges_every_entry_once(rebase: bool) {
    let tmp = tempfile::tempdir().unwrap();
    let (a, b) = two_clones(tmp.path());
    // Each clone's reader has seen everything before the pull.
    work(&a, "t1", "ann");
    work(&b, "t2", "bob");
    tavern(&a, &["events", "--as", "reader"]).ok();
    let base = entries(&a).len() - 4;
    let (mine, theirs) = (entries(&a), entries(&b));
    assert_ne!(
        mine[base].0, theirs[base].0,
        "each clone has its own origin"
    );
    for d in [&a, &b] {
        git(d, &["add", "-A"]);
        git(d, &["commit", "-q", "-m", "work"]);
    }
    git(&b, &["push", "-q", "origin", "main"]);
    let mode = if rebase { "--rebase" } else { "--no-rebase" };
    git(&a, &["pull", "-q", mode, "origin", "main"]);

    let merged = entries(&a);
    let want: BTreeSet<_> = mine.iter().chain(&theirs).cloned().collect();
    let got: BTreeSet<_> = merged.iter().cloned().collect();
    assert_eq!(merged.len(), got.len(), "no entry twice:\n{merged:#?}");
    assert_eq!(got, want, "every entry of both sides");
    assert_eq!(merged.len(), base + 8);
    tavern(&a, &["check"]).ok();
    // Readers see them in seq order, and the reader's cursor shows bob's entries, once.
    let log = tavern(&a, &["log", "--json"]).ok().stdout.clone();
    let seqs: Vec<u64> = log
        .lines()
        .map(|l| {
            serde_json::from_str::<serde_json::Value>(l).unwrap()["seq"]
                .as_u64()
                .unwrap()
        })
        .collect();
    assert!(seqs.windows(2).all(|w| w[0] <= w[1]), "{seqs:?}");
    let new = tavern(&a, &["events", "--as", "reader", "--json"])
        .ok()
        .stdout
        .clone();
    let actors: Vec<String> = new
        .lines()
        .map(|l| {
            serde_json::from_str::<serde_json::Value>(l).unwrap()["actor"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect();
    assert_eq!(actors, ["bob"; 4]);
    tavern(&a, &["events", "--as", "reader"]).ok().stdout_is("");
    // `log --since` a seq both sides reached shows both sides' later entries.
    let since = (base as u64).to_string();
    let shown = tavern(&a, &["log", "--json", "--since", &since])
        .ok()
        .stdout
        .lines()
        .count();
    assert_eq!(shown, 8);
    // A reader that pages through the merged log, three entries a call, sees every
    // entry of both clones once, in the order `log` gives them.
    let mut paged = Vec::new();
    loop {
        let out = tavern(&a, &["events", "--as", "pager", "--limit", "3", "--json"]);
        let page: Vec<(String, u64)> = out
            .ok()
            .stdout
            .lines()
            .map(|l| {
                let e: serde_json::Value = serde_json::from_str(l).unwrap();
                assert!(e.get("diff").is_none(), "no diff without --patch: {e}");
                (
                    e["origin"].as_str().unwrap_or("").to_string(),
                    e["seq"].as_u64().unwrap(),
                )
            })
            .collect();
        if page.is_empty() {
            break;
        }
        assert!(page.len() <= 3);
        paged.extend(page);
    }
    let logged: Vec<(String, u64)> = log
        .lines()
        .map(|l| {
            let e: serde_json::Value = serde_json::from_str(l).unwrap();
            (
                e["origin"].as_str().unwrap_or("").to_string(),
                e["seq"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(paged, logged);
    // And the next append goes on after every seq either side used.
    tavern(&a, &["release", "t1", "--as", "ann"]).ok();
    let last = entries(&a).last().unwrap().clone();
    assert_eq!(last.1, merged.iter().map(|e| e.1).max().unwrap() + 1);
    tavern(&a, &["check"]).ok();
}

#[test]
fn git_pull_with_merge_keeps_every_log_entry_once() {
    pull_merges_every_entry_once(false);
}

#[test]
fn git_pull_with_rebase_keeps_every_log_entry_once() {
    pull_merges_every_entry_once(true);
}
