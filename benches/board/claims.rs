//! Claims across machines (a third table): clones of one project connected to a local bare
//! repository as their remote, the real `tavern` binary run as a process.
//!
//! - "connected claim" median and p99: `tavern claim ID` on a connected clone (one push of
//!   the task's claim ref under a lease, plus the local write), `TAVERN_BENCH_CLAIM_RUNS`
//!   claims (default 100), each of a different task. Baselines, interleaved round by round
//!   so both see the same load: a plain `tavern claim ID` on an unconnected copy of the same
//!   board, and a bare `git push` of one commit to the same remote (a new ref; the floor any
//!   remote confirmation pays).
//! - "claims/s, 16 agents over 4 clones": four connected clones, four agents in each
//!   running `tavern claim --next` until nothing is left, over `TAVERN_BENCH_CLAIM_TASKS`
//!   tasks (default 400); wall time from the first start to the last exit. Baseline: the
//!   same 16 agents on one unconnected board. Every task must be claimed exactly once, or
//!   the bench fails.
//!
//! `TAVERN_BENCH_CLAIMS=0` leaves the table out.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

pub struct Row {
    pub op: String,
    pub value: String,
    pub baseline: String,
    pub base_value: String,
    pub ratio: f64,
}

fn enabled() -> bool {
    std::env::var("TAVERN_BENCH_CLAIMS").map_or(true, |v| v != "0")
}

fn env_usize(key: &str, default: usize) -> usize {
    std::env::var(key)
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(default)
        .max(1)
}

fn git(dir: &Path, args: &[&str]) -> String {
    let o = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("run git");
    assert!(
        o.status.success(),
        "git {args:?} in {}: {}",
        dir.display(),
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8_lossy(&o.stdout).trim().to_string()
}

fn tavern(bin: &Path, project: &Path, args: &[&str]) -> Command {
    let mut c = Command::new(bin);
    c.args(args)
        .current_dir(project)
        .env_remove("TAVERN_BOARD")
        .env("TAVERN_AGENT", "bench")
        .env("TAVERN_KEEPER", crate::KEEPER)
        .stdin(Stdio::null());
    c
}

fn run_ok(mut c: Command) -> Duration {
    c.stdout(Stdio::null()).stderr(Stdio::piped());
    let start = Instant::now();
    let out = c.output().expect("spawn");
    let took = start.elapsed();
    assert!(
        out.status.success(),
        "{c:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    took
}

/// A project with `n` tasks `t0000…` committed and pushed to a bare remote at
/// `dir/remote.git`; returns the seed project.
fn seed(bin: &Path, dir: &Path, n: usize) -> PathBuf {
    let seed = dir.join("seed");
    std::fs::create_dir_all(&seed).unwrap();
    git(&seed, &["init", "-q", "-b", "main"]);
    run_ok(tavern(bin, &seed, &["init"]));
    // Tasks written as files (what `tavern new` writes), committed once.
    let tasks = seed.join(".tavern/tasks");
    for i in 0..n {
        let id = format!("t{i:04}");
        std::fs::write(
            tasks.join(format!("{id}.md")),
            format!(
                "---\nid: {id}\ntitle: task {i}\nstatus: pending\npriority: 2\ntags: []\ndepends_on: []\ncreated_at: 2026-01-01T00:00:00Z\ncreated_by: bench\nupdated_at: 2026-01-01T00:00:00Z\nrev: 1\n---\n"
            ),
        )
        .unwrap();
    }
    git(&seed, &["add", "-A"]);
    git(
        &seed,
        &[
            "-c",
            "user.name=b",
            "-c",
            "user.email=b@x",
            "commit",
            "-q",
            "-m",
            "board",
        ],
    );
    git(dir, &["init", "-q", "--bare", "-b", "main", "remote.git"]);
    git(&seed, &["remote", "add", "origin", "../remote.git"]);
    git(&seed, &["push", "-q", "origin", "main"]);
    seed
}

fn clone(dir: &Path, name: &str, connect: bool) -> PathBuf {
    git(dir, &["clone", "-q", "remote.git", name]);
    let c = dir.join(name);
    if connect {
        git(&c, &["config", "tavern.remote", "origin"]);
    }
    for d in ["observations", "questions", "solutions"] {
        let _ = std::fs::create_dir_all(c.join(".tavern").join(d));
    }
    c
}

fn pct(mut v: Vec<Duration>, p: f64) -> Duration {
    v.sort();
    let i = ((v.len() as f64 - 1.0) * p).round() as usize;
    v[i.min(v.len() - 1)]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// 16 agents, `claim --next` until exit 4, over the given clones (agents spread evenly);
/// returns the wall time and asserts every task went to exactly one agent.
fn swarm(bin: &Path, clones: &[PathBuf], agents: usize, tasks: usize) -> Duration {
    let barrier = Arc::new(Barrier::new(agents + 1));
    let mut handles = Vec::new();
    for a in 0..agents {
        let project = clones[a % clones.len()].clone();
        let bin = bin.to_path_buf();
        let barrier = Arc::clone(&barrier);
        handles.push(std::thread::spawn(move || {
            let agent = format!("agent-{a}");
            barrier.wait();
            let mut got = Vec::new();
            loop {
                let out = tavern(&bin, &project, &["claim", "--next", "--as", &agent])
                    .stderr(Stdio::piped())
                    .output()
                    .expect("spawn");
                match out.status.code() {
                    Some(0) => got.push(String::from_utf8_lossy(&out.stdout).to_string()),
                    Some(4) => break,
                    _ => panic!(
                        "claim --next as {agent}: {}",
                        String::from_utf8_lossy(&out.stderr)
                    ),
                }
            }
            got
        }));
    }
    barrier.wait();
    let start = Instant::now();
    let mut claimed = std::collections::BTreeSet::new();
    for h in handles {
        for line in h.join().unwrap() {
            let id = line
                .split_whitespace()
                .nth(1)
                .unwrap_or_default()
                .to_string();
            assert!(claimed.insert(id.clone()), "{id} claimed twice");
        }
    }
    let took = start.elapsed();
    assert_eq!(claimed.len(), tasks, "every task claimed once");
    took
}

pub fn run(bin: &Path) -> Vec<Row> {
    if !enabled() {
        return Vec::new();
    }
    let runs = env_usize("TAVERN_BENCH_CLAIM_RUNS", 100);
    let tasks = env_usize("TAVERN_BENCH_CLAIM_TASKS", 400).max(runs + 1);
    let dir = tempfile::tempdir().unwrap();
    let t = Instant::now();
    let seed = seed(bin, dir.path(), tasks);
    let connected = clone(dir.path(), "connected", true);
    let plain = clone(dir.path(), "plain", false);
    eprintln!(
        "claims: {tasks} tasks, remote and clones in {:.1} s",
        t.elapsed().as_secs_f64()
    );
    // Commits for the bare pushes, made beforehand: only the push is timed.
    let tree = git(&seed, &["write-tree"]);
    let mut conn = Vec::new();
    let mut local = Vec::new();
    let mut push = Vec::new();
    // Round 0 warms up.
    for i in 0..=runs {
        let id = format!("t{i:04}");
        let c = run_ok(tavern(bin, &connected, &["claim", &id]));
        let l = run_ok(tavern(bin, &plain, &["claim", &id]));
        let sha = git(
            &seed,
            &[
                "-c",
                "user.name=b",
                "-c",
                "user.email=b@x",
                "commit-tree",
                &tree,
                "-m",
                &format!("bench {i}"),
            ],
        );
        let mut p = Command::new("git");
        p.arg("-C").arg(&seed).args([
            "push",
            "--quiet",
            "origin",
            &format!("{sha}:refs/bench/{i}"),
        ]);
        let g = run_ok(p);
        if i > 0 {
            conn.push(c);
            local.push(l);
            push.push(g);
        }
    }
    let mut rows = Vec::new();
    for (name, p) in [("median", 0.5), ("p99", 0.99)] {
        let c = pct(conn.clone(), p);
        let l = pct(local.clone(), p);
        let g = pct(push.clone(), p);
        rows.push(Row {
            op: format!("connected claim, {name} ({runs} runs)"),
            value: format!("{:.2} ms", ms(c)),
            baseline: format!("plain local claim, {name}"),
            base_value: format!("{:.2} ms", ms(l)),
            ratio: c.as_secs_f64() / l.as_secs_f64(),
        });
        rows.push(Row {
            op: format!("connected claim, {name} ({runs} runs)"),
            value: format!("{:.2} ms", ms(c)),
            baseline: format!("bare `git push` of one commit, {name}"),
            base_value: format!("{:.2} ms", ms(g)),
            ratio: c.as_secs_f64() / g.as_secs_f64(),
        });
    }

    // Throughput: fresh clones (nothing claimed yet).
    let swarm_tasks = tasks;
    let clones: Vec<PathBuf> = (0..4)
        .map(|k| clone(dir.path(), &format!("swarm{k}"), true))
        .collect();
    // The bench's own claims above are on the remote: release them there by starting
    // from a remote without claim refs.
    for r in git(
        &dir.path().join("remote.git"),
        &["for-each-ref", "--format=%(refname)", "refs/tavern/claims/"],
    )
    .lines()
    {
        git(&dir.path().join("remote.git"), &["update-ref", "-d", r]);
    }
    let wall = swarm(bin, &clones, 16, swarm_tasks);
    let one = clone(dir.path(), "swarm-local", false);
    let base = swarm(bin, std::slice::from_ref(&one), 16, swarm_tasks);
    let rate = swarm_tasks as f64 / wall.as_secs_f64();
    let base_rate = swarm_tasks as f64 / base.as_secs_f64();
    rows.push(Row {
        op: format!("claims/s, 16 agents over 4 connected clones ({swarm_tasks} tasks)"),
        value: format!("{rate:.1}/s"),
        baseline: "16 agents on one unconnected board".into(),
        base_value: format!("{base_rate:.1}/s"),
        ratio: rate / base_rate,
    });
    if std::env::var_os("TAVERN_BENCH_KEEP").is_some() {
        eprintln!("claims: kept in {}", dir.keep().display());
    }
    rows
}

pub fn render(rows: &[Row], out: &mut String) {
    if rows.is_empty() {
        return;
    }
    out.push_str("\n## Claims across machines (local bare remote)\n\n");
    out.push_str("| operation | value | baseline | baseline value | ratio |\n");
    out.push_str("|---|---:|---|---:|---:|\n");
    for r in rows {
        out.push_str(&format!(
            "| {} | {} | {} | {} | {:.2}x |\n",
            r.op, r.value, r.baseline, r.base_value, r.ratio
        ));
    }
}
