//! `tavern sync` (a fifth table): two clones of a project connected to a local bare
//! repository, the board on its own branch. At each size of `TAVERN_BENCH_SYNC_SIZES`
//! (default 1000,10000; empty: none), N new task files are written in clone A, then
//!
//! - "send": `tavern sync` in A (records the board on its branch, fetches, pushes);
//! - "receive": `tavern sync` in B (fetches, fast-forwards, writes the files);
//!
//! and the same again after every one of those N documents was edited in A. Baseline: the
//! same files written, committed and pushed (`git add -A && git commit && git push`) in a
//! plain clone, and `git pull` in another: what git itself takes for that change. Each is
//! run once per size (a sync of 10k documents is seconds); B must end with every file, or
//! the bench fails.
//!
//! Beside each wall time, the CPU time (user + system) of the processes it ran (tavern or
//! git and every process they started and waited for: the push's `receive-pack` on the
//! local remote too), read from this process's children's times in `/proc/self/stat`: on
//! a shared machine the wall times vary with the load, the CPU times much less.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

pub struct Row {
    pub op: String,
    pub value: Duration,
    pub base_value: Duration,
    /// CPU time (user + system) of the processes each ran.
    pub cpu: Duration,
    pub base_cpu: Duration,
}

/// The CPU time (user + system) of this process's children that have ended and were
/// waited for, and of their own such children (`/proc/self/stat`, in clock ticks of
/// 1/100 s); zero where there is no /proc.
fn children_cpu() -> Duration {
    let Ok(stat) = std::fs::read_to_string("/proc/self/stat") else {
        return Duration::ZERO;
    };
    let Some((_, rest)) = stat.rsplit_once(')') else {
        return Duration::ZERO;
    };
    // After the command's name: field 3 (state) is the first; cutime and cstime are
    // fields 16 and 17.
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks = |i: usize| fields.get(i).and_then(|f| f.parse::<u64>().ok()).unwrap_or(0);
    Duration::from_millis((ticks(13) + ticks(14)) * 10)
}

pub fn sizes() -> Vec<usize> {
    match std::env::var("TAVERN_BENCH_SYNC_SIZES") {
        Ok(s) => s
            .split(',')
            .filter(|p| !p.trim().is_empty())
            .map(|p| p.trim().parse().expect("TAVERN_BENCH_SYNC_SIZES: numbers"))
            .collect(),
        Err(_) => vec![1000, 10000],
    }
}

fn git(dir: &Path, args: &[&str]) -> String {
    let o = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(["-c", "user.name=b", "-c", "user.email=b@x"])
        .args(args)
        .env("GIT_TERMINAL_PROMPT", "0")
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

fn tavern(bin: &Path, project: &Path, args: &[&str]) -> Duration {
    let start = Instant::now();
    let out = Command::new(bin)
        .args(args)
        .current_dir(project)
        .env_remove("TAVERN_BOARD")
        .env("TAVERN_AGENT", "bench")
        .env("GIT_TERMINAL_PROMPT", "0")
        .stdin(Stdio::null())
        .output()
        .expect("spawn tavern");
    let took = start.elapsed();
    assert!(
        out.status.success(),
        "tavern {args:?} in {}: {}{}",
        project.display(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    took
}

fn timed_git(dir: &Path, args: &[&str]) -> Duration {
    let start = Instant::now();
    git(dir, args);
    start.elapsed()
}

/// Writes tasks `s00000…` (`n` of them) under `tasks`, at revision `rev`.
fn write_tasks(tasks: &Path, n: usize, rev: u32) {
    std::fs::create_dir_all(tasks).unwrap();
    for i in 0..n {
        let id = format!("s{i:05}");
        std::fs::write(
            tasks.join(format!("{id}.md")),
            format!(
                "---\nid: {id}\ntitle: synced task {i}\nstatus: pending\npriority: {}\ntags: []\ndepends_on: []\ncreated_at: 2026-01-01T00:00:00Z\ncreated_by: bench\nupdated_at: 2026-01-01T00:00:0{rev}Z\nrev: {rev}\n---\n",
                rev % 4
            ),
        )
        .unwrap();
    }
}

fn count_tasks(tasks: &Path) -> usize {
    std::fs::read_dir(tasks)
        .map(|d| {
            d.filter_map(|e| e.ok())
                .filter(|e| e.file_name().to_string_lossy().starts_with('s'))
                .count()
        })
        .unwrap_or(0)
}

/// A project pushed to `dir/NAME.git`, and two clones of it; returns (a, b).
fn pair(dir: &Path, name: &str) -> (PathBuf, PathBuf) {
    let seed = dir.join(format!("{name}-seed"));
    std::fs::create_dir_all(&seed).unwrap();
    git(&seed, &["init", "-q", "-b", "main"]);
    std::fs::write(seed.join("README"), "project\n").unwrap();
    git(&seed, &["add", "-A"]);
    git(&seed, &["commit", "-q", "-m", "code"]);
    let remote = format!("{name}.git");
    git(dir, &["init", "-q", "--bare", "-b", "main", &remote]);
    git(&seed, &["push", "-q", &format!("../{remote}"), "main"]);
    let a = dir.join(format!("{name}-a"));
    let b = dir.join(format!("{name}-b"));
    for c in [&a, &b] {
        git(dir, &["clone", "-q", &remote, c.to_str().unwrap()]);
    }
    (a, b)
}

pub fn run(bin: &Path) -> Vec<Row> {
    let mut rows = Vec::new();
    for n in sizes() {
        let dir = tempfile::tempdir().unwrap();
        let t = Instant::now();
        // The board, connected in both clones, on its own branch.
        let (a, b) = pair(dir.path(), "board");
        tavern(bin, &a, &["init"]);
        tavern(bin, &a, &["sync", "init", "origin"]);
        tavern(bin, &a, &["sync"]);
        tavern(bin, &b, &["sync", "init", "origin"]);
        tavern(bin, &b, &["sync"]);
        // The same change through plain git.
        let (pa, pb) = pair(dir.path(), "plain");
        eprintln!(
            "sync {n}: clones ready in {:.1} s",
            t.elapsed().as_secs_f64()
        );

        for (what, rev) in [("new", 1), ("edited", 2)] {
            write_tasks(&a.join(".tavern/tasks"), n, rev);
            let cpu = children_cpu();
            let send = tavern(bin, &a, &["sync"]);
            let send_cpu = children_cpu().saturating_sub(cpu);
            let receive = tavern(bin, &b, &["sync"]);
            let receive_cpu = children_cpu().saturating_sub(cpu + send_cpu);
            assert_eq!(count_tasks(&b.join(".tavern/tasks")), n, "B has every task");
            write_tasks(&pa.join("tasks"), n, rev);
            let cpu = children_cpu();
            let start = Instant::now();
            git(&pa, &["add", "-A"]);
            git(&pa, &["commit", "-q", "-m", "change"]);
            git(&pa, &["push", "-q", "origin", "main"]);
            let base_send = start.elapsed();
            let base_send_cpu = children_cpu().saturating_sub(cpu);
            let base_receive = timed_git(&pb, &["pull", "-q", "--ff-only", "origin", "main"]);
            let base_receive_cpu = children_cpu().saturating_sub(cpu + base_send_cpu);
            rows.push(Row {
                op: format!("`tavern sync` sending {n} {what} documents"),
                value: send,
                base_value: base_send,
                cpu: send_cpu,
                base_cpu: base_send_cpu,
            });
            rows.push(Row {
                op: format!("`tavern sync` receiving {n} {what} documents"),
                value: receive,
                base_value: base_receive,
                cpu: receive_cpu,
                base_cpu: base_receive_cpu,
            });
            let ms = |d: Duration| d.as_secs_f64() * 1000.0;
            eprintln!(
                "sync {n} {what}: send {:.0} ms, CPU {:.0} ms (git {:.0} ms, CPU {:.0} ms); receive {:.0} ms, CPU {:.0} ms (git {:.0} ms, CPU {:.0} ms)",
                ms(send),
                ms(send_cpu),
                ms(base_send),
                ms(base_send_cpu),
                ms(receive),
                ms(receive_cpu),
                ms(base_receive),
                ms(base_receive_cpu)
            );
        }
        if std::env::var_os("TAVERN_BENCH_KEEP").is_some() {
            eprintln!("sync {n}: kept in {}", dir.keep().display());
        }
    }
    rows
}

pub fn render(rows: &[Row], out: &mut String) {
    if rows.is_empty() {
        return;
    }
    out.push_str("\n## tavern sync (local bare remote, board on its own branch)\n\n");
    out.push_str(
        "| operation | time | plain git of the same change | git time | ratio | CPU | git CPU | CPU ratio |\n",
    );
    out.push_str("|---|---:|---|---:|---:|---:|---:|---:|\n");
    for r in rows {
        let baseline = if r.op.contains("sending") {
            "`git add -A && git commit && git push`"
        } else {
            "`git pull --ff-only`"
        };
        out.push_str(&format!(
            "| {} | {:.0} ms | {baseline} | {:.0} ms | {:.2}x | {:.0} ms | {:.0} ms | {:.2}x |\n",
            r.op,
            r.value.as_secs_f64() * 1000.0,
            r.base_value.as_secs_f64() * 1000.0,
            r.value.as_secs_f64() / r.base_value.as_secs_f64(),
            r.cpu.as_secs_f64() * 1000.0,
            r.base_cpu.as_secs_f64() * 1000.0,
            r.cpu.as_secs_f64() / r.base_cpu.as_secs_f64().max(0.001)
        ));
    }
}
