//! The board benchmark: boards of 1k, 10k and 100k tasks, real `tavern` processes, and
//! baselines measured in the same run, reported as ratios.
//!
//!     cargo bench --bench board                       # 1k, 10k, 100k
//!     TAVERN_BENCH_SIZES=1000,10000 cargo bench --bench board
//!
//! Baselines: starting a trivial process (`true`), which bounds what any CLI call can cost,
//! and reading every task file raw in this process (read_dir + read), which bounds what any
//! full scan can cost. Targets (from the project's issue): `claim` and `show` on 10k
//! within 3x of starting a trivial process; `list` with a query on 100k within 2x of
//! reading every file raw. The report is printed and written to target/bench-report.md.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_tavern");

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// Runs a command once and returns how long it took; panics if it fails.
fn timed(cmd: &mut Command) -> Duration {
    cmd.stdout(Stdio::null())
        .stderr(Stdio::piped())
        .stdin(Stdio::null());
    let start = Instant::now();
    let out = cmd.output().expect("spawn");
    let took = start.elapsed();
    assert!(
        out.status.success(),
        "{cmd:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    took
}

fn tavern(board: &Path, args: &[&str]) -> Command {
    let mut c = Command::new(BIN);
    c.args(args)
        .env("TAVERN_BOARD", board)
        .env("TAVERN_AGENT", "bench");
    c
}

const STATUSES: [&str; 5] = ["pending", "pending", "claimed", "working", "done"];

/// Writes `n` task files directly (building a 100k board through the CLI would take
/// minutes and measure nothing we report).
fn build_board(dir: &Path, n: usize) -> PathBuf {
    let out = Command::new(BIN)
        .arg("init")
        .arg(dir)
        .stdout(Stdio::null())
        .status()
        .unwrap();
    assert!(out.success());
    let board = dir.join(".tavern");
    let tasks = board.join("tasks");
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    for i in 0..n {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let status = STATUSES[(x % 5) as usize];
        let priority = (x >> 8) % 5;
        let claim = if status == "claimed" || status == "working" {
            "claimed_by: coder-1\nclaimed_at: 2026-11-20T10:00:00Z\n"
        } else {
            ""
        };
        let text = format!(
            "---\nid: task-{i:06}\ntitle: Task {i} of the benchmark board\nstatus: {status}\npriority: {priority}\ntags: [bench, t{}]\ndepends_on: []\ncreated_at: 2026-11-{:02}T10:00:00Z\ncreated_by: planner\nupdated_at: 2026-11-20T10:00:00Z\nrev: 1\n{claim}---\n\n## Goal\n\nMake task {i} pass. This body is about as long as a short real one.\n",
            i % 17,
            1 + i % 20
        );
        std::fs::write(tasks.join(format!("task-{i:06}.md")), text).unwrap();
    }
    board
}

/// The baseline for full scans: read every task file raw, in this process.
fn read_raw(board: &Path) -> usize {
    let mut bytes = 0;
    for entry in std::fs::read_dir(board.join("tasks")).unwrap() {
        bytes += std::fs::read(entry.unwrap().path()).unwrap().len();
    }
    bytes
}

struct Row {
    op: String,
    size: usize,
    median: Duration,
    baseline: &'static str,
    base: Duration,
    target: Option<f64>,
}

fn main() {
    // `cargo bench` passes --bench; ignore arguments.
    let sizes: Vec<usize> = std::env::var("TAVERN_BENCH_SIZES")
        .ok()
        .map(|s| s.split(',').filter_map(|n| n.trim().parse().ok()).collect())
        .unwrap_or_else(|| vec![1_000, 10_000, 100_000]);
    let mut rows = Vec::new();
    let runs = 15;

    let spawn = median((0..30).map(|_| timed(&mut Command::new("true"))).collect());
    eprintln!("baseline: starting `true` takes {:.2} ms", ms(spawn));

    for &n in &sizes {
        let dir = tempfile::tempdir().unwrap();
        let build = Instant::now();
        let board = build_board(dir.path(), n);
        eprintln!(
            "board of {n} tasks built in {:.1} s",
            build.elapsed().as_secs_f64()
        );
        let scan_runs = if n >= 100_000 { 3 } else { 7 };
        read_raw(&board); // warm the page cache, as any real board in use is
        let raw = median(
            (0..scan_runs)
                .map(|_| {
                    let t = Instant::now();
                    std::hint::black_box(read_raw(&board));
                    t.elapsed()
                })
                .collect(),
        );

        let pending: Vec<String> = (0..n)
            .filter(|i| {
                std::fs::read_to_string(board.join(format!("tasks/task-{i:06}.md")))
                    .unwrap()
                    .contains("status: pending")
            })
            .take(runs)
            .map(|i| format!("task-{i:06}"))
            .collect();
        let show = median(
            (0..runs)
                .map(|i| {
                    timed(&mut tavern(
                        &board,
                        &["show", &format!("task-{:06}", i * 7 % n)],
                    ))
                })
                .collect(),
        );
        let claim = median(
            pending
                .iter()
                .map(|id| timed(&mut tavern(&board, &["claim", id])))
                .collect(),
        );
        let new = median(
            (0..runs)
                .map(|i| {
                    timed(&mut tavern(
                        &board,
                        &["new", "task", "--title", &format!("New {i}")],
                    ))
                })
                .collect(),
        );
        let list = median(
            (0..scan_runs)
                .map(|_| {
                    timed(&mut tavern(
                        &board,
                        &["list", "tasks", "status=pending", "priority<=1"],
                    ))
                })
                .collect(),
        );
        let next = median(
            (0..scan_runs)
                .map(|_| timed(&mut tavern(&board, &["claim", "--next"])))
                .collect(),
        );

        let small = |op: &str, d: Duration, target: Option<f64>| Row {
            op: op.into(),
            size: n,
            median: d,
            baseline: "start `true`",
            base: spawn,
            target,
        };
        let three_x = if n == 10_000 { Some(3.0) } else { None };
        rows.push(small("show ID", show, three_x));
        rows.push(small("claim ID", claim, three_x));
        rows.push(small("new task", new, None));
        rows.push(Row {
            op: "list tasks status=pending priority<=1".into(),
            size: n,
            median: list,
            baseline: "read all raw",
            base: raw,
            target: if n == 100_000 { Some(2.0) } else { None },
        });
        rows.push(Row {
            op: "claim --next".into(),
            size: n,
            median: next,
            baseline: "read all raw",
            base: raw,
            target: None,
        });
    }

    let mut report = String::from(
        "| operation | tasks | median ms | baseline | baseline ms | ratio | target | |\n|---|---:|---:|---|---:|---:|---:|---|\n",
    );
    for r in &rows {
        let ratio = r.median.as_secs_f64() / r.base.as_secs_f64();
        let (target, verdict) = match r.target {
            Some(t) => (format!("≤ {t}x"), if ratio <= t { "PASS" } else { "MISS" }),
            None => (String::new(), ""),
        };
        report.push_str(&format!(
            "| {} | {} | {:.2} | {} | {:.2} | {:.2}x | {} | {} |\n",
            r.op,
            r.size,
            ms(r.median),
            r.baseline,
            ms(r.base),
            ratio,
            target,
            verdict
        ));
    }
    println!("{report}");
    let target_dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("target");
    let _ = std::fs::create_dir_all(&target_dir);
    let _ = std::fs::write(target_dir.join("bench-report.md"), &report);
}
