//! What the million-document questions need beside the command rows (issue 21):
//!
//! - [`measured`]: a command's wall time with its CPU time (user + system) and peak
//!   resident set, from GNU time (`/usr/bin/time -f '%U %S %M'`, which reads them from the
//!   child's `wait4`), when it is installed; the wall time is measured here around it, so it
//!   includes starting `time` itself (well under a millisecond).
//! - [`from_nothing`]: the read index and the search index built from nothing (their
//!   directories under `.state/` removed), the first `list` and the first `search`, with
//!   their peak memory, what they left on disk, and how many times the index said how far
//!   it was (it does on a terminal's stderr once reading the files has taken a second:
//!   the `list` runs under util-linux `script` for a terminal, when installed).
//! - [`watch_once`]: `tavern watch --once` with no state of its own (`.state/watch/`
//!   removed), then again with nothing changed, with `.state/watch/` on disk after.
//! - [`load_board`]: `TAVERN_BENCH_BOARD=DIR` times a board kept by an earlier run
//!   (`TAVERN_BENCH_KEEP=1`) instead of building one.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use super::{Bench, Built, Row, read_raw, search::cpu_times, watch::disk_bytes};

/// One run of a command.
pub struct Run {
    pub wall: Duration,
    /// User + system time (GNU time's, 10 ms resolution).
    pub cpu: Option<Duration>,
    /// Peak resident set, KiB.
    pub rss_kib: Option<u64>,
    pub stderr: String,
}

const TIME: &str = "/usr/bin/time";

const SCRIPT: &str = "/usr/bin/script";

/// Runs `cmd` once (through GNU time when it is installed), output discarded, stderr
/// kept; panics if it fails.
pub fn measured(cmd: &Command) -> Run {
    measure(cmd, false, false)
}

/// [`measured`], for `check`: exit 6 (problems found: the bench's boards hold broken
/// fixtures) is a run like exit 0.
pub fn measured_check(cmd: &Command) -> Run {
    measure(cmd, false, true)
}

/// A word for `sh -c`, quoted.
fn quote(s: &std::ffi::OsStr) -> String {
    format!("'{}'", s.to_string_lossy().replace('\'', r"'\''"))
}

/// Runs `cmd` once as [`measured`] does; with `tty`, its stderr on a terminal (util-linux
/// `script`, when installed, whose own start is then in the wall time), as a person
/// running it sees it: what `Run::stderr` then holds.
fn measure(cmd: &Command, tty: bool, problems_ok: bool) -> Run {
    let report = tempfile::NamedTempFile::new().expect("a temp file for time's report");
    let mut line: Vec<std::ffi::OsString> = Vec::new();
    if Path::new(TIME).exists() {
        line.extend(["-f".into(), "%U %S %M".into(), "-o".into()]);
        line.push(report.path().into());
        line.push(cmd.get_program().into());
    }
    line.extend(cmd.get_args().map(Into::into));
    let program: std::ffi::OsString = if Path::new(TIME).exists() {
        TIME.into()
    } else {
        cmd.get_program().into()
    };
    let tty = tty && Path::new(SCRIPT).exists();
    let mut run = if tty {
        let mut sh = quote(&program);
        for w in &line {
            sh.push(' ');
            sh.push_str(&quote(w));
        }
        sh.push_str(" >/dev/null");
        let mut c = Command::new(SCRIPT);
        c.args(["-qec", &sh, "/dev/null"]);
        c
    } else {
        let mut c = Command::new(program);
        c.args(line);
        c
    };
    for (k, v) in cmd.get_envs() {
        match v {
            Some(v) => run.env(k, v),
            None => run.env_remove(k),
        };
    }
    if let Some(d) = cmd.get_current_dir() {
        run.current_dir(d);
    }
    if tty {
        // What the terminal showed is script's stdout.
        run.stdout(Stdio::piped()).stderr(Stdio::inherit());
    } else {
        run.stdout(Stdio::null()).stderr(Stdio::piped());
    }
    run.stdin(Stdio::null());
    let start = Instant::now();
    let out = run.output().expect("spawn");
    let wall = start.elapsed();
    let stderr = String::from_utf8_lossy(if tty { &out.stdout } else { &out.stderr }).into_owned();
    assert!(
        out.status.success() || (problems_ok && out.status.code() == Some(6)),
        "{cmd:?} failed: {stderr}"
    );
    // GNU time's last line (a first line says so when the command failed).
    let text = std::fs::read_to_string(report.path()).unwrap_or_default();
    let f: Vec<f64> = text
        .lines()
        .last()
        .unwrap_or("")
        .split_whitespace()
        .filter_map(|s| s.parse().ok())
        .collect();
    let (cpu, rss_kib) = match f[..] {
        [u, s, m] => (Some(Duration::from_secs_f64(u + s)), Some(m as u64)),
        _ => (None, None),
    };
    Run {
        wall,
        cpu,
        rss_kib,
        stderr,
    }
}

/// Reads every task file raw in this process: its wall and CPU time.
pub fn raw_read(board: &Path) -> (Duration, Duration) {
    let (c0, _) = cpu_times();
    let start = Instant::now();
    std::hint::black_box(read_raw(board));
    let wall = start.elapsed();
    let (c1, _) = cpu_times();
    (wall, c1 - c0)
}

fn mib(bytes: u64) -> f64 {
    bytes as f64 / (1024.0 * 1024.0)
}

#[allow(clippy::too_many_arguments)]
fn row(
    rows: &mut Vec<Row>,
    op: &str,
    n: usize,
    run: &Run,
    baseline: &'static str,
    base: Duration,
    base_cpu: Duration,
    note: String,
) {
    rows.push(Row {
        op: op.into(),
        size: n,
        median: run.wall,
        cpu: run.cpu,
        rss_kib: run.rss_kib,
        baseline,
        base,
        base_cpu: Some(base_cpu),
        target: None,
        note,
    });
}

/// The read index and the search index built from nothing: the first `list` and the
/// first `search` once `.state/index/` and `.state/search/` are gone, beside one raw read
/// of every task file just before (which also puts the files in the page cache, as on a
/// board in use).
pub fn from_nothing(b: &Bench, n: usize, rows: &mut Vec<Row>) {
    let state = b.board.join(".state");
    let (raw, raw_cpu) = raw_read(&b.board);
    for d in ["index", "search"] {
        match std::fs::remove_dir_all(state.join(d)) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => panic!("cannot remove {}: {e}", state.join(d).display()),
        }
    }
    // On a terminal: the index says how far it is only there.
    let list = measure(
        &b.tavern(&["list", "tasks", "status=pending", "priority<=1"]),
        true,
        false,
    );
    let (progress, last) = progress_lines(&list.stderr, "building the read index");
    // The build says how far it is once it has taken a second (of reading the files).
    if list.wall > Duration::from_secs(2) && progress == 0 {
        eprintln!(
            "warning: {n} tasks: the read index took {:.1} s to build and said nothing on stderr",
            list.wall.as_secs_f64()
        );
    }
    let index = disk_bytes(&state.join("index"));
    eprintln!(
        "{n} tasks: read index from nothing in {:.1} s, {progress} progress lines, last: {last}",
        list.wall.as_secs_f64()
    );
    row(
        rows,
        "list (read index built from nothing)",
        n,
        &list,
        "read all raw",
        raw,
        raw_cpu,
        format!(
            "`.state/index/` {:.0} MiB; {progress} progress lines on stderr",
            mib(index)
        ),
    );
    let search = measure(&b.tavern(&["search", "parser", "input"]), true, false);
    let (search_progress, search_last) =
        progress_lines(&search.stderr, "building the search index");
    let search_disk = disk_bytes(&state.join("search"));
    eprintln!(
        "{n} tasks: search index from nothing in {:.1} s, {search_progress} progress lines, last: {search_last}",
        search.wall.as_secs_f64()
    );
    row(
        rows,
        "search parser input (search index built from nothing)",
        n,
        &search,
        "read all raw",
        raw,
        raw_cpu,
        format!(
            "`.state/search/` {:.0} MiB; {search_progress} progress lines on stderr",
            mib(search_disk)
        ),
    );
}

/// How many progress lines starting with `prefix` a build wrote on the terminal, and the
/// last one.
fn progress_lines(stderr: &str, prefix: &str) -> (usize, String) {
    let lines: Vec<&str> = stderr
        .split(['\r', '\n'])
        .filter(|l| l.starts_with(prefix))
        .collect();
    (
        lines.len(),
        lines.last().copied().unwrap_or("none").to_string(),
    )
}

/// `tavern watch --once` with no state of its own, then again with nothing changed,
/// each beside one raw read of every task file just before it.
pub fn watch_once(b: &Bench, n: usize, rows: &mut Vec<Row>) {
    let state = b.board.join(".state");
    match std::fs::remove_dir_all(state.join("watch")) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => panic!("cannot remove {}: {e}", state.join("watch").display()),
    }
    let tasks = disk_bytes(&b.board.join("tasks"));
    for (op, first) in [
        ("watch --once, first start (no .state/watch/)", true),
        ("watch --once, restart, nothing changed", false),
    ] {
        let (raw, raw_cpu) = raw_read(&b.board);
        let run = measured(&b.tavern(&["watch", "--once"]));
        let watch = disk_bytes(&state.join("watch"));
        eprintln!("{n} tasks: {op} in {:.1} s", run.wall.as_secs_f64());
        let note = if first {
            format!(
                "`.state/watch/` {:.0} MiB after (`tasks/` {:.0} MiB on disk)",
                mib(watch),
                mib(tasks)
            )
        } else {
            format!("`.state/watch/` {:.0} MiB after", mib(watch))
        };
        row(rows, op, n, &run, "read all raw", raw, raw_cpu, note);
    }

    // The same restart with the index keeper running (README, "What the watcher keeps"):
    // a first pass marks where its journal stands, then each restart reads the journal
    // after the mark, not a stat of every file. Files rewritten with their own bytes are
    // named by the journal and read, but change nothing on the board.
    let mut keeper = b
        .tavern(&["watch", "--keeper"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("start the index keeper");
    if !crate::wait_for_keeper(&mut keeper, &b.board) {
        return;
    }
    let marked = b.tavern(&["watch", "--once"]).status();
    assert!(marked.is_ok_and(|s| s.success()), "watch --once failed");
    for (op, rewritten) in [
        ("watch --once, restart, keeper running, nothing changed", 0),
        (
            "watch --once, restart, keeper running, 100 files rewritten",
            100,
        ),
    ] {
        for i in 0..rewritten {
            let path = b
                .board
                .join(format!("tasks/task-{:06}.md", i * (n / 100).max(1)));
            if let Ok(bytes) = std::fs::read(&path) {
                std::fs::write(&path, bytes).expect("rewrite a task file");
            }
        }
        let (raw, raw_cpu) = raw_read(&b.board);
        let run = measured(&b.tavern(&["watch", "--once"]));
        eprintln!("{n} tasks: {op} in {:.3} s", run.wall.as_secs_f64());
        row(
            rows,
            op,
            n,
            &run,
            "read all raw",
            raw,
            raw_cpu,
            String::new(),
        );
    }
    let _ = keeper.kill();
    let _ = keeper.wait();
}

/// A board kept by an earlier run (`TAVERN_BENCH_BOARD=DIR`, DIR holding `.tavern`): its
/// size (the bench's `task-NNNNNN` files) and the tasks still claimable by id (pending,
/// no dependencies), read from the files.
pub fn load_board(dir: &Path) -> (Built, usize) {
    let board: PathBuf = dir.join(".tavern");
    let tasks = board.join("tasks");
    let entries = std::fs::read_dir(&tasks).unwrap_or_else(|e| {
        eprintln!(
            "error: TAVERN_BENCH_BOARD={}: cannot read {}: {e}",
            dir.display(),
            tasks.display()
        );
        std::process::exit(2)
    });
    let mut n = 0;
    let mut claimable = Vec::new();
    for e in entries {
        let name = e.unwrap().file_name().to_string_lossy().into_owned();
        let Some(id) = name.strip_suffix(".md") else {
            continue;
        };
        let Some(num) = id.strip_prefix("task-") else {
            continue;
        };
        if num.len() != 6 || !num.bytes().all(|c| c.is_ascii_digit()) {
            continue;
        }
        n += 1;
        let text = std::fs::read_to_string(tasks.join(&name)).unwrap_or_default();
        if text.contains("\nstatus: pending\n") && text.contains("\ndepends_on: []\n") {
            claimable.push(id.to_string());
        }
    }
    claimable.sort();
    (Built { board, claimable }, n)
}
