//! `tavern sync` (a fifth table): two clones of a project connected to a local bare
//! repository, the board on its own branch. At each size of `TAVERN_BENCH_SYNC_SIZES`
//! (default 1000,10000; empty: none), N new task files are written in clone A, then
//!
//! - "send": `tavern sync` in A (records the board on its branch, fetches, pushes);
//! - "receive": `tavern sync` in B (records nothing new, fetches, fast-forwards, writes
//!   the files);
//!
//! and the same again after every one of those N documents was edited in A; each in
//! `TAVERN_BENCH_SYNC_RUNS` rounds (default 3; medians), a new set of N documents per "new"
//! round (the board grows by N each time). Baseline, in the same round: the
//! same files written in a plain clone of another remote and synced the way a user syncs
//! with git: sending `git add -A`, `git commit`, `git fetch`, `git merge origin/main`,
//! `git push`; receiving in a second plain clone `git add -A` (nothing to commit), `git
//! fetch`, `git merge origin/main`. Tavern and git take turns going first. B must end
//! with every file, or the bench fails. Automatic housekeeping (`gc.auto`,
//! `maintenance.auto`) is off in every repository of the bench: git would start it in the
//! background once loose objects pile up, during whichever measurement came next.
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
    let ticks = |i: usize| {
        fields
            .get(i)
            .and_then(|f| f.parse::<u64>().ok())
            .unwrap_or(0)
    };
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
        .env("TAVERN_KEEPER", crate::KEEPER)
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

/// Writes the tasks of set `set`, `s{set}x00000…` (`n` of them), under `tasks`, at
/// revision `rev`.
fn write_tasks(tasks: &Path, n: usize, set: usize, rev: u32) {
    std::fs::create_dir_all(tasks).unwrap();
    for i in 0..n {
        let id = format!("s{set}x{i:05}");
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

/// Asserts that `tasks` holds the `n` tasks of set `set`, the last at revision `rev`.
fn assert_has(tasks: &Path, n: usize, set: usize, rev: u32, who: &str) {
    let prefix = format!("s{set}x");
    let count = std::fs::read_dir(tasks)
        .map(|d| {
            d.filter_map(|e| e.ok())
                .filter(|e| e.file_name().to_string_lossy().starts_with(&prefix))
                .count()
        })
        .unwrap_or(0);
    assert_eq!(count, n, "{who} has every task of set {set}");
    let last = tasks.join(format!("{prefix}{:05}.md", n - 1));
    let text = std::fs::read_to_string(&last).unwrap_or_default();
    assert!(
        text.contains(&format!("\nrev: {rev}\n")),
        "{who}: {} is not at rev {rev}",
        last.display()
    );
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
    // No automatic housekeeping (`git gc --auto`, `git maintenance run --auto`) on either
    // side: git starts it in the background after a commit, fetch or push once loose
    // objects pile up, where it would run during the next measurement, tavern's or git's,
    // and be counted in neither.
    for repo in [a.clone(), b.clone(), dir.join(&remote)] {
        git(&repo, &["config", "gc.auto", "0"]);
        git(&repo, &["config", "maintenance.auto", "false"]);
    }
    (a, b)
}

/// `TAVERN_BENCH_SYNC_RUNS`: rounds of edits per size (default 3; the rows give their
/// medians).
fn runs() -> usize {
    std::env::var("TAVERN_BENCH_SYNC_RUNS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(3)
        .clamp(1, 7)
}

/// Runs `f` and returns its wall time and the CPU time of the processes it ran.
fn measured(f: impl FnOnce()) -> (Duration, Duration) {
    let cpu = children_cpu();
    let start = Instant::now();
    f();
    (start.elapsed(), children_cpu().saturating_sub(cpu))
}

/// A user's sync of a plain clone, as they would type it: `git add -A`, then (when
/// sending) `git commit`, then `git fetch` and `git merge` of the remote's branch, then
/// (when sending) `git push`.
fn git_sync(dir: &Path, sending: bool) {
    git(dir, &["add", "-A"]);
    if sending {
        git(dir, &["commit", "-q", "-m", "change"]);
    }
    git(dir, &["fetch", "-q", "origin"]);
    git(dir, &["merge", "-q", "origin/main"]);
    if sending {
        git(dir, &["push", "-q", "origin", "main"]);
    }
}

/// The median of each column.
fn medians(mut v: Vec<(Duration, Duration)>) -> (Duration, Duration) {
    let k = v.len() / 2;
    v.sort_by_key(|s| s.0);
    let wall = v[k].0;
    v.sort_by_key(|s| s.1);
    (wall, v[k].1)
}

pub fn run(bin: &Path) -> Vec<Row> {
    let mut rows = Vec::new();
    let runs = runs();
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

        // The "new" rounds each write N new documents (a set of their own), the "edited"
        // rounds each edit every document of the first set; tavern and git take turns
        // going first, so a drift of the machine's load falls on both.
        let new: Vec<(usize, u32)> = (0..runs).map(|set| (set, 1)).collect();
        let edited: Vec<(usize, u32)> = (0..runs).map(|k| (0, 2 + k as u32)).collect();
        let mut round = 0;
        for (what, changes) in [("new", new), ("edited", edited)] {
            let mut samples: [Vec<(Duration, Duration)>; 4] = Default::default();
            for (set, rev) in changes {
                round += 1;
                let ours = || {
                    write_tasks(&a.join(".tavern/tasks"), n, set, rev);
                    let send = measured(|| {
                        tavern(bin, &a, &["sync"]);
                    });
                    let receive = measured(|| {
                        tavern(bin, &b, &["sync"]);
                    });
                    assert_has(&b.join(".tavern/tasks"), n, set, rev, "B");
                    (send, receive)
                };
                let theirs = || {
                    write_tasks(&pa.join("tasks"), n, set, rev);
                    let send = measured(|| git_sync(&pa, true));
                    let receive = measured(|| git_sync(&pb, false));
                    assert_has(&pb.join("tasks"), n, set, rev, "the plain B");
                    (send, receive)
                };
                let ((send, receive), (base_send, base_receive)) = if round % 2 == 1 {
                    (ours(), theirs())
                } else {
                    let base = theirs();
                    (ours(), base)
                };
                for (s, v) in samples
                    .iter_mut()
                    .zip([send, receive, base_send, base_receive])
                {
                    s.push(v);
                }
            }
            let [send, receive, base_send, base_receive] = samples.map(medians);
            rows.push(Row {
                op: format!("`tavern sync` sending {n} {what} documents"),
                value: send.0,
                base_value: base_send.0,
                cpu: send.1,
                base_cpu: base_send.1,
            });
            rows.push(Row {
                op: format!("`tavern sync` receiving {n} {what} documents"),
                value: receive.0,
                base_value: base_receive.0,
                cpu: receive.1,
                base_cpu: base_receive.1,
            });
            let ms = |d: Duration| d.as_secs_f64() * 1000.0;
            eprintln!(
                "sync {n} {what}: send {:.0} ms, CPU {:.0} ms (git {:.0} ms, CPU {:.0} ms); receive {:.0} ms, CPU {:.0} ms (git {:.0} ms, CPU {:.0} ms)",
                ms(send.0),
                ms(send.1),
                ms(base_send.0),
                ms(base_send.1),
                ms(receive.0),
                ms(receive.1),
                ms(base_receive.0),
                ms(base_receive.1)
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
            "`git add -A`, `commit`, `fetch`, `merge`, `push`"
        } else {
            "`git add -A`, `fetch`, `merge`"
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
