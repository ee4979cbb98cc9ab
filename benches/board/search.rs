//! `tavern search` (`TAVERN_BENCH_ONLY=search`: only these rows, at each size of
//! `TAVERN_BENCH_SIZES`): searches on the benchmark board, warm (the first round builds the
//! index), each interleaved round by round with its baselines:
//! - reading every task file raw in this process (what a full scan costs at least);
//! - `statat` of every task file relative to the open directory, the names already in
//!   memory, on as many threads as the machine has cores and on one: what checking each
//!   file's stat data (the index's validity check, one `statat` per file) costs at least.
//!
//! Besides the wall time of each (median), the CPU time it took (user + system, from
//! /proc/self/stat: of this process for the baselines, of the waited-for children for
//! the searches; summed over the timed rounds, then divided by their number), and the
//! machine's load (/proc/loadavg) before and after: on a shared machine the CPU time is
//! the steadier figure.

use std::ffi::CString;
use std::fmt::Write as _;
use std::path::Path;
use std::time::{Duration, Instant};

use super::{Bench, build_board, median, ms, read_raw};

pub struct Row {
    op: String,
    size: usize,
    median: Duration,
    /// CPU time per run.
    cpu: Duration,
    target_ms: Option<f64>,
}

/// The load averages, as /proc/loadavg gives them (the first three fields).
pub fn loadavg() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "unknown".into())
}

/// (this process's CPU time, its waited-for children's), from /proc/self/stat (in clock
/// ticks of 10 ms, as Linux reports them to user space).
pub fn cpu_times() -> (Duration, Duration) {
    let Ok(stat) = std::fs::read_to_string("/proc/self/stat") else {
        return Default::default();
    };
    let Some(after) = stat.rfind(')').map(|i| &stat[i + 1..]) else {
        return Default::default();
    };
    // After the command's name: state (field 3), ..., utime (14), stime (15), cutime
    // (16), cstime (17).
    let f: Vec<u64> = after
        .split_whitespace()
        .skip(11)
        .take(4)
        .map(|s| s.parse().unwrap_or(0))
        .collect();
    if f.len() < 4 {
        return Default::default();
    }
    let tick = |t: u64| Duration::from_millis(t * 10);
    (tick(f[0] + f[1]), tick(f[2] + f[3]))
}

/// `statat` of each name in `dir` on `threads` threads; how many were found.
fn stat_all(dir: &Path, names: &[CString], threads: usize) -> usize {
    let fd = rustix::fs::open(
        dir,
        rustix::fs::OFlags::RDONLY | rustix::fs::OFlags::DIRECTORY | rustix::fs::OFlags::CLOEXEC,
        rustix::fs::Mode::empty(),
    )
    .expect("open the tasks directory");
    let chunk = names.len().div_ceil(threads.max(1)).max(1);
    std::thread::scope(|s| {
        let handles: Vec<_> = names
            .chunks(chunk)
            .map(|part| {
                let fd = &fd;
                s.spawn(move || {
                    part.iter()
                        .filter(|n| {
                            rustix::fs::statat(
                                fd,
                                n.as_c_str(),
                                rustix::fs::AtFlags::SYMLINK_NOFOLLOW,
                            )
                            .is_ok()
                        })
                        .count()
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).sum()
    })
}

/// Builds a board of `n` tasks and times the searches beside their baselines.
pub fn run(bin: &Path, n: usize, runs: usize) -> Vec<Row> {
    let dir = tempfile::tempdir().unwrap();
    let t = Instant::now();
    let built = build_board(bin, dir.path(), n);
    eprintln!(
        "{n} tasks: board built in {:.1} s",
        t.elapsed().as_secs_f64()
    );
    let b = Bench {
        bin: bin.to_path_buf(),
        board: built.board.clone(),
    };
    let tasks = built.board.join("tasks");
    let names: Vec<CString> = std::fs::read_dir(&tasks)
        .unwrap()
        .map(|e| CString::new(e.unwrap().file_name().into_encoded_bytes()).unwrap())
        .collect();
    let cores = std::thread::available_parallelism().map_or(1, |c| c.get());
    let searches: [&[&str]; 3] = [
        &["search", "parser", "input"],
        &["search", "timeout"],
        &["search", "\"parser input\"", "tasks", "status=pending"],
    ];
    let runs = if n >= 100_000 { runs.min(9) } else { runs };
    // Per row: wall times, CPU time summed.
    let mut wall: Vec<Vec<Duration>> = vec![Vec::new(); 3 + searches.len()];
    let mut cpu = vec![Duration::ZERO; 3 + searches.len()];
    let t = Instant::now();
    for round in 0..=runs {
        let mut one = |i: usize, f: &mut dyn FnMut()| {
            let (s0, c0) = cpu_times();
            let start = Instant::now();
            f();
            let took = start.elapsed();
            let (s1, c1) = cpu_times();
            if round > 0 {
                wall[i].push(took);
                cpu[i] += (s1 - s0) + (c1 - c0);
            }
        };
        one(0, &mut || {
            std::hint::black_box(read_raw(&built.board));
        });
        one(1, &mut || {
            assert_eq!(stat_all(&tasks, &names, cores), names.len());
        });
        one(2, &mut || {
            assert_eq!(stat_all(&tasks, &names, 1), names.len());
        });
        for (i, args) in searches.iter().enumerate() {
            one(3 + i, &mut || {
                b.time(args);
            });
        }
    }
    eprintln!(
        "{n} tasks: searches timed in {:.1} s",
        t.elapsed().as_secs_f64()
    );
    let ops = [
        "read every task file raw (in-process)".to_string(),
        format!("statat of every task file, {cores} threads (in-process)"),
        "statat of every task file, 1 thread (in-process)".to_string(),
    ]
    .into_iter()
    .chain(searches.iter().map(|a| format!("`tavern {}`", a.join(" "))));
    ops.zip(wall)
        .zip(cpu)
        .enumerate()
        .map(|(i, ((op, w), c))| Row {
            op,
            size: n,
            median: median(w),
            cpu: c / runs as u32,
            target_ms: (i == 3 && n == 100_000).then_some(50.0),
        })
        .collect()
}

pub fn render(rows: &[Row], load_before: &str, out: &mut String) {
    if rows.is_empty() {
        return;
    }
    writeln!(
        out,
        "\n## search\n\nWarm; medians; CPU time (user + system) per run; ratios to the first row of the same size. Load (1, 5, 15 min) before: {load_before}; after: {}.\n",
        loadavg()
    )
    .unwrap();
    out.push_str("| operation | tasks | median ms | CPU ms | wall / read raw | CPU / read raw | target | result |\n");
    out.push_str("|---|---:|---:|---:|---:|---:|---:|---|\n");
    for r in rows {
        let base = rows
            .iter()
            .find(|b| b.size == r.size)
            .expect("a baseline row");
        let (target, verdict) = match r.target_ms {
            Some(t) => (
                format!("≤ {t} ms"),
                if ms(r.median) <= t { "PASS" } else { "MISS" },
            ),
            None => (String::new(), ""),
        };
        writeln!(
            out,
            "| {} | {} | {:.2} | {:.1} | {:.2}x | {:.2}x | {} | {} |",
            r.op,
            r.size,
            ms(r.median),
            ms(r.cpu),
            r.median.as_secs_f64() / base.median.as_secs_f64(),
            r.cpu.as_secs_f64() / base.cpu.as_secs_f64().max(1e-9),
            target,
            verdict
        )
        .unwrap();
    }
}
