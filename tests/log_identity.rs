//! An entry is named by its origin and its seq: two clones that work at the same time give
//! the same seqs to different entries, and after a plain `git pull` (merge=union) the log
//! holds both. `log` shows `ORIGIN:SEQ`, `log --since ORIGIN:SEQ,…` (a reader's marks)
//! and `events` show every entry the reader had not seen, exactly once. Real git, two
//! clones of one bare remote.

#![cfg(unix)]

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use crate::util::git::{self, git};
use crate::worktrees::tavern;

fn json_lines(out: &str) -> Vec<serde_json::Value> {
    out.lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect()
}

/// (origin, seq) of each entry.
fn ids(entries: &[serde_json::Value]) -> Vec<(String, u64)> {
    entries
        .iter()
        .map(|e| {
            (
                e["origin"].as_str().unwrap_or("").to_string(),
                e["seq"].as_u64().unwrap(),
            )
        })
        .collect()
}

fn log_json(dir: &Path, args: &[&str]) -> Vec<(String, u64)> {
    let mut all = vec!["log", "--json"];
    all.extend_from_slice(args);
    ids(&json_lines(&tavern(dir, &all).ok().stdout))
}

fn events(dir: &Path, reader: &str) -> Vec<(String, u64)> {
    ids(&json_lines(
        &tavern(dir, &["events", "--as", reader, "--json"])
            .ok()
            .stdout,
    ))
}

fn work(dir: &Path, task: &str, agent: &str) {
    tavern(dir, &["claim", task, "--as", agent]).ok();
    tavern(dir, &["start", task, "--as", agent]).ok();
    tavern(dir, &["edit", task, "--set", "priority=1", "--as", agent]).ok();
}

#[test]
fn entries_with_the_same_seq_from_two_clones_are_each_shown_once_after_a_pull() {
    let tmp = tempfile::tempdir().unwrap();
    let seed = tmp.path().join("seed");
    git::init_repo(&seed);
    tavern(&seed, &["init"]).ok();
    for t in ["t1", "t2"] {
        tavern(&seed, &["new", "task", "--title", t, "--id", t]).ok();
    }
    git(&seed, &["add", "-A"]);
    git(&seed, &["commit", "-q", "-m", "board"]);
    let remote = git::bare(&tmp.path().join("remote.git"));
    git(&seed, &["push", "-q", remote.to_str().unwrap(), "main"]);
    let clone = |name: &str| {
        let dir = tmp.path().join(name);
        let (r, d) = (remote.to_str().unwrap(), dir.to_str().unwrap());
        git(tmp.path(), &["clone", "-q", r, d]);
        dir
    };
    let (a, b) = (clone("a"), clone("b"));

    // A reader in clone a has seen everything a wrote: by events, and by its marks.
    work(&a, "t1", "ann");
    work(&b, "t2", "bob");
    let seen_a = events(&a, "reader");
    let before = log_json(&a, &[]);
    assert_eq!(seen_a, before);
    let mut marks = BTreeMap::new();
    for (o, n) in &before {
        let m = marks.entry(o.clone()).or_insert(0);
        *m = (*m).max(*n);
    }
    let cursor = marks
        .iter()
        .map(|(o, n)| format!("{}:{n}", if o.is_empty() { "-" } else { o }))
        .collect::<Vec<_>>()
        .join(",");
    let theirs: Vec<(String, u64)> = log_json(&b, &[])
        .into_iter()
        .filter(|e| !before.contains(e))
        .collect();
    assert_eq!(theirs.len(), 3);
    // The two clones gave the same seqs to different entries.
    let mine_new: BTreeSet<u64> = before.iter().rev().take(3).map(|e| e.1).collect();
    let theirs_seqs: BTreeSet<u64> = theirs.iter().map(|e| e.1).collect();
    assert_eq!(mine_new, theirs_seqs, "{before:?} / {theirs:?}");

    for d in [&a, &b] {
        git(d, &["add", "-A"]);
        git(d, &["commit", "-q", "-m", "work"]);
    }
    git(&b, &["push", "-q", "origin", "main"]);
    git(&a, &["pull", "-q", "--no-rebase", "origin", "main"]);

    // Every entry once, in (seq, origin) order; the text names the other clone's entries
    // ORIGIN:SEQ, this clone's own by their seq.
    let all = log_json(&a, &[]);
    let set: BTreeSet<_> = all.iter().cloned().collect();
    assert_eq!(set.len(), all.len(), "no entry twice: {all:?}");
    assert_eq!(set.len(), before.len() + 3);
    let text = tavern(&a, &["log"]).ok().stdout.clone();
    for (o, n) in &theirs {
        assert_eq!(
            text.lines()
                .filter(|l| l.starts_with(&format!("{o}:{n} ")))
                .count(),
            1,
            "{o}:{n} in\n{text}"
        );
    }
    let own: Vec<&(String, u64)> = before.iter().rev().take(3).collect();
    for (_, n) in own {
        assert_eq!(
            text.lines()
                .filter(|l| l.starts_with(&format!("{n} ")))
                .count(),
            1,
            "{n} in\n{text}"
        );
    }
    // The reader's marks show exactly bob's entries, once; a bare seq (the highest the
    // reader saw) misses them, since they have the same seqs as ann's.
    let since = log_json(&a, &["--since", &cursor]);
    let mut want = theirs.clone();
    want.sort_by(|x, y| (x.1, &x.0).cmp(&(y.1, &y.0)));
    assert_eq!(since, want);
    let top = marks.values().max().unwrap().to_string();
    assert_eq!(log_json(&a, &["--since", &top]), vec![]);
    // events: the same, then nothing.
    assert_eq!(events(&a, "reader"), want);
    assert_eq!(events(&a, "reader"), vec![]);
    // Where the reader stands is said as the marks `--since` takes.
    let mut now = BTreeMap::new();
    for (o, n) in &all {
        let m = now.entry(o.clone()).or_insert(0);
        *m = (*m).max(*n);
    }
    let cursor_now = now
        .iter()
        .map(|(o, n)| format!("{}:{n}", if o.is_empty() { "-" } else { o }))
        .collect::<Vec<_>>()
        .join(",");
    tavern(&a, &["events", "--as", "reader"])
        .ok()
        .stderr_has(&format!("no new events since {cursor_now}"));
    assert_eq!(log_json(&a, &["--since", &cursor_now]), vec![]);
    // A damaged cursor is a usage error naming the forms.
    tavern(&a, &["log", "--since", "abcd:x"])
        .code(2)
        .stderr_has("ORIGIN:SEQ");
}
