//! Real processes racing on a real board: the claim race, lost updates, `claim --next`.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use crate::util::{Out, TestBoard, output};

/// A tiny deterministic PRNG (xorshift) so each worker has its own, reproducible order.
pub fn shuffle<T>(items: &mut [T], seed: u64) {
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    for i in (1..items.len()).rev() {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        items.swap(i, (x % (i as u64 + 1)) as usize);
    }
}

/// Creates `n` tasks with readable ids `t000`… and returns the ids.
fn tasks(b: &TestBoard, n: usize) -> Vec<String> {
    (0..n)
        .map(|i| {
            b.task(
                &format!("Task {i}"),
                &["--id", &format!("t{i:03}"), "--as", "planner"],
            )
        })
        .collect()
}

/// The value of a top-level `key: value` line of a document.
fn field(doc: &str, key: &str) -> Option<String> {
    doc.lines()
        .find_map(|l| l.strip_prefix(&format!("{key}: ")).map(str::to_string))
}

#[test]
fn eight_processes_claim_the_same_hundred_tasks() {
    let b = Arc::new(TestBoard::new());
    let ids = tasks(&b, 100);
    let workers: Vec<_> = (0..8)
        .map(|w| {
            let b = Arc::clone(&b);
            let mut order = ids.clone();
            shuffle(&mut order, w as u64 + 1);
            std::thread::spawn(move || {
                let me = format!("worker-{w}");
                order
                    .into_iter()
                    .map(|id| (id.clone(), output(b.cmd(&["claim", &id, "--as", &me]))))
                    .collect::<Vec<(String, Out)>>()
            })
        })
        .collect();
    let results: Vec<(String, Vec<(String, Out)>)> = workers
        .into_iter()
        .enumerate()
        .map(|(w, h)| (format!("worker-{w}"), h.join().unwrap()))
        .collect();

    let mut winners: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for (worker, outs) in &results {
        for (id, out) in outs {
            match out.code {
                0 => {
                    assert_eq!(out.stdout, format!("claimed {id} (rev 2, claimed)\n"));
                    winners.entry(id.clone()).or_default().push(worker.clone());
                }
                3 => assert!(
                    out.stderr.contains("already claimed by worker-"),
                    "{worker} {id}: {}",
                    out.stderr
                ),
                other => panic!("{worker} claiming {id}: exit {other}: {}", out.stderr),
            }
        }
    }
    assert_eq!(winners.len(), 100, "every task has a winner");
    for (id, ws) in &winners {
        assert_eq!(ws.len(), 1, "{id} was won by {ws:?}");
        let doc = b.read(&format!("tasks/{id}.md"));
        assert_eq!(field(&doc, "status").as_deref(), Some("claimed"));
        assert_eq!(
            field(&doc, "claimed_by").as_ref(),
            Some(&ws[0]),
            "{id}: file names another owner"
        );
        assert_eq!(field(&doc, "rev").as_deref(), Some("2"));
        // Every loser was told who won.
        for (worker, outs) in &results {
            let (_, out) = outs.iter().find(|(i, _)| i == id).unwrap();
            if worker != &ws[0] {
                assert_eq!(
                    out.stderr,
                    format!(
                        "error: tasks/{id}.md: already claimed by {} (status claimed)\n",
                        ws[0]
                    )
                );
            }
        }
    }
    let log = b.log();
    let claims: Vec<_> = log.iter().filter(|e| e["op"] == "claim").collect();
    assert_eq!(claims.len(), 100);
    assert_eq!(log.len(), 200, "100 creates and 100 claims");
    let seqs: Vec<u64> = log.iter().map(|e| e["seq"].as_u64().unwrap()).collect();
    assert_eq!(
        seqs,
        (1..=200).collect::<Vec<_>>(),
        "seqs are unique and in order"
    );
    for c in claims {
        let id = c["doc"]
            .as_str()
            .unwrap()
            .trim_start_matches("tasks/")
            .trim_end_matches(".md");
        assert_eq!(c["actor"].as_str(), Some(winners[id][0].as_str()));
    }
    b.run(&["check"]).ok();
}

#[test]
fn eight_processes_adding_tags_lose_nothing() {
    let b = Arc::new(TestBoard::new());
    let id = b.task("Collect tags", &["--id", "tags", "--as", "planner"]);
    let workers: Vec<_> = (0..8)
        .map(|w| {
            let b = Arc::clone(&b);
            let id = id.clone();
            std::thread::spawn(move || {
                for k in 1..=25 {
                    output(b.cmd(&[
                        "edit",
                        &id,
                        "--add",
                        &format!("tags=w{w}-{k}"),
                        "--as",
                        &format!("w{w}"),
                    ]))
                    .ok();
                }
            })
        })
        .collect();
    for w in workers {
        w.join().unwrap();
    }
    let out = b.run(&["show", &id, "--json"]);
    let v = out.ok().json();
    let tags: BTreeSet<String> = v["fields"]["tags"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t.as_str().unwrap().to_string())
        .collect();
    let expected: BTreeSet<String> = (0..8)
        .flat_map(|w| (1..=25).map(move |k| format!("w{w}-{k}")))
        .collect();
    assert_eq!(tags, expected);
    assert_eq!(v["rev"], 201);
    let edits = b.log().iter().filter(|e| e["op"] == "edit").count();
    assert_eq!(edits, 200);
}

#[test]
fn claim_next_races_hand_out_each_task_once() {
    let b = Arc::new(TestBoard::new());
    tasks(&b, 30);
    let workers: Vec<_> = (0..6)
        .map(|w| {
            let b = Arc::clone(&b);
            std::thread::spawn(move || {
                let mut got = Vec::new();
                loop {
                    let out =
                        output(b.cmd(&["claim", "--next", "--json", "--as", &format!("w{w}")]));
                    match out.code {
                        0 => got.push(out.json()["id"].as_str().unwrap().to_string()),
                        4 => return got,
                        other => panic!("claim --next exit {other}: {}", out.stderr),
                    }
                }
            })
        })
        .collect();
    let mut all: Vec<String> = workers
        .into_iter()
        .flat_map(|w| w.join().unwrap())
        .collect();
    all.sort();
    let expected: Vec<String> = (0..30).map(|i| format!("t{i:03}")).collect();
    assert_eq!(all, expected, "each task handed out exactly once");
    assert_eq!(b.log().iter().filter(|e| e["op"] == "claim").count(), 30);
}
