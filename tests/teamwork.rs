//! Six agent processes work a board of 60 dependent tasks to completion through
//! `claim --next` / `start` / `submit` / `approve`, and two of them are killed on the way.
//! Every task ends done exactly once, no task is started before its dependencies are
//! done, and the log tells the whole story.

#![cfg(unix)]

use std::collections::{BTreeMap, BTreeSet};
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::util::{BIN, TestBoard};

/// One agent: registers with its own shell's pid, then loops until nothing is left.
/// Tasks left in review by a killed agent are approved by whoever sees them. With `STALL`
/// set it stops once it has started a task, holding it, to be killed there: otherwise
/// whether a kill finds it holding one is a race with its next command.
const AGENT: &str = r#"
"$T" agent register --name "$A" --pid $$ >/dev/null
while true; do
  for r in $("$T" list tasks status=review --as "$A" | awk 'NR>1 {print $1}'); do
    "$T" approve "$r" --as "$A" >/dev/null 2>&1
  done
  out=$("$T" claim --next --json --as "$A" 2>/dev/null); rc=$?
  if [ $rc -eq 4 ]; then
    left=$("$T" list tasks status!=done --as "$A" | wc -l)
    [ "$left" -eq 0 ] && exit 0
    sleep 0.05; continue
  fi
  [ $rc -ne 0 ] && { sleep 0.05; continue; }
  id=$(printf '%s' "$out" | sed 's/.*"id":"\([^"]*\)".*/\1/')
  "$T" start "$id" --as "$A" >/dev/null 2>&1 || continue
  # An agent meant to die does so in the middle of its work: it stops here until killed.
  [ -n "$STALL" ] && sleep 3600
  "$T" submit "$id" --as "$A" >/dev/null 2>&1 || continue
  "$T" approve "$id" --as "$A" >/dev/null 2>&1
done
"#;

fn agent(b: &TestBoard, name: &str, stall: bool) -> Child {
    let mut c = Command::new("sh");
    if stall {
        c.env("STALL", "1");
    }
    c.arg("-c")
        .arg(AGENT)
        .env("T", BIN)
        .env("A", name)
        .env("TAVERN_BOARD", b.board())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .process_group(0)
        .spawn()
        .unwrap()
}

fn kill_group(child: &mut Child) {
    let _ = Command::new("kill")
        .args(["-KILL", "--", &format!("-{}", child.id())])
        .status();
    let _ = child.wait();
}

#[test]
fn six_agents_finish_sixty_dependent_tasks_despite_two_dying() {
    let b = TestBoard::new();
    b.write(
        "board.yaml",
        b.read("board.yaml").replace("lease: 5m", "lease: 1s"),
    );
    // A layered graph: task i depends on up to two tasks of the layer before it.
    let mut deps: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for i in 0..60usize {
        let id = format!("t{i:02}");
        let layer = i / 10;
        let mut d = Vec::new();
        if layer > 0 {
            d.push(format!("t{:02}", (layer - 1) * 10 + i % 10));
            d.push(format!("t{:02}", (layer - 1) * 10 + (i * 7 + 3) % 10));
            d.dedup();
        }
        let mut args = vec![
            "--id".to_string(),
            id.clone(),
            "-p".to_string(),
            (i % 3).to_string(),
            "--as".into(),
            "planner".into(),
        ];
        for dep in &d {
            args.push("--depends-on".into());
            args.push(dep.clone());
        }
        b.task(
            &format!("Task {i}"),
            &args.iter().map(String::as_str).collect::<Vec<_>>(),
        );
        deps.insert(id, d);
    }

    let names: Vec<String> = (1..=6).map(|n| format!("agent-{n}")).collect();
    // The first two stall once they have started a task, and are killed there: they die
    // in the middle of their work.
    let mut agents: Vec<(String, Child)> = names
        .iter()
        .enumerate()
        .map(|(i, n)| (n.clone(), agent(&b, n, i < 2)))
        .collect();
    let mut died_holding = Vec::new();
    for (name, child) in agents.iter_mut().take(2) {
        // Generous: on a loaded machine an agent's first claim can take a while.
        let until = Instant::now() + Duration::from_secs(120);
        while Instant::now() < until
            && b.run(&[
                "list",
                "tasks",
                &format!("claimed_by={name}"),
                "status=claimed,working",
            ])
            .stdout
            .is_empty()
        {
            std::thread::sleep(Duration::from_millis(5));
        }
        kill_group(child);
        let held = b
            .run(&[
                "list",
                "tasks",
                &format!("claimed_by={name}"),
                "status=claimed,working",
                "--json",
            ])
            .json();
        if let Some(d) = held["documents"].as_array().and_then(|d| d.first()) {
            died_holding.push((name.clone(), d["id"].as_str().unwrap().to_string()));
        }
    }
    assert_eq!(
        died_holding.len(),
        2,
        "both agents died holding a task: {died_holding:?}"
    );
    // The agents must finish; on a loaded machine that can take long, so the test fails
    // only when no task reaches done for two minutes.
    let done = || {
        let v = b.run(&["list", "tasks", "status=done", "--json"]).json();
        v["documents"].as_array().map_or(0, Vec::len)
    };
    let (mut seen, mut quiet_since) = (done(), Instant::now());
    for (name, child) in agents.iter_mut().skip(2) {
        loop {
            if let Some(status) = child.try_wait().unwrap() {
                assert!(status.success(), "{name} exited with {status}");
                break;
            }
            let now = done();
            if now != seen {
                (seen, quiet_since) = (now, Instant::now());
            } else if quiet_since.elapsed() > Duration::from_secs(120) {
                kill_group(child);
                panic!(
                    "{name} made no progress for two minutes:\n{}",
                    b.run(&["list", "tasks"]).stdout
                );
            }
            std::thread::sleep(Duration::from_millis(500));
        }
    }

    // Every task is done, exactly once.
    let v = b.run(&["list", "tasks", "--json"]).json();
    let docs = v["documents"].as_array().unwrap();
    assert_eq!(docs.len(), 60);
    for d in docs {
        assert_eq!(d["fields"]["status"], "done", "{}", d["id"]);
    }
    let log = b.log();
    let mut done_at: BTreeMap<String, u64> = BTreeMap::new();
    let mut started_at: BTreeMap<String, Vec<u64>> = BTreeMap::new();
    for e in &log {
        let doc = e["doc"].as_str().unwrap();
        let Some(id) = doc
            .strip_prefix("tasks/")
            .and_then(|d| d.strip_suffix(".md"))
        else {
            continue;
        };
        let seq = e["seq"].as_u64().unwrap();
        if e["to"] == "done" {
            assert!(
                done_at.insert(id.to_string(), seq).is_none(),
                "{id} was done twice"
            );
        }
        if e["transition"] == "start" {
            started_at.entry(id.to_string()).or_default().push(seq);
        }
    }
    assert_eq!(done_at.len(), 60);
    // No task was worked before its dependencies were done.
    for (id, starts) in &started_at {
        for dep in &deps[id] {
            for s in starts {
                assert!(
                    done_at[dep] < *s,
                    "{id} started (seq {s}) before {dep} was done (seq {})",
                    done_at[dep]
                );
            }
        }
    }
    // The log tells the story: releases of the dead agents' work name them.
    let released: BTreeSet<String> = log
        .iter()
        .filter(|e| e["op"] == "release" && e["actor"] == "tavern-sweep")
        .map(|e| {
            e["note"]
                .as_str()
                .unwrap()
                .split_whitespace()
                .nth(2)
                .unwrap_or("")
                .to_string()
        })
        .collect();
    assert!(
        released.iter().all(|a| a == "agent-1" || a == "agent-2"),
        "only dead agents were swept: {released:?}"
    );
    for (name, task) in &died_holding {
        let swept = log.iter().any(|e| {
            e["op"] == "release"
                && e["actor"] == "tavern-sweep"
                && e["doc"] == format!("tasks/{task}.md")
                && e["note"].as_str().unwrap().contains(name.as_str())
        });
        assert!(swept, "{name} died holding {task}, which no sweep released");
    }
    let seqs: Vec<u64> = log.iter().map(|e| e["seq"].as_u64().unwrap()).collect();
    assert!(seqs.windows(2).all(|w| w[0] < w[1]));
    b.run(&["check"]).ok();
}
