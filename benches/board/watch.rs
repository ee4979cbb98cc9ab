//! The watch rows of the board benchmark: `tavern watch` on a built board, with one
//! knowledge source whose command writes the changed task's id into a named pipe.
//!
//! - Start to ready: from spawning the watcher to the pipe line of a first change written
//!   once it says "watching" (it says so before its startup scan), on the fresh board
//!   (the first start copies every tracked file into its shadow) and again after a
//!   SIGTERM (a restart only compares the files' stat with its snapshot).
//! - Latency: a task changed as an editor saves it (the new content written to a dot file
//!   beside it, renamed over it), from just before the rename to the moment the source's
//!   command writes its line into the pipe. One change at a time: the next change waits
//!   until the watcher reported the previous activation finished.
//! - Peak resident set of the watcher (VmHWM) after the latency run.
//!
//! The watcher must exit 0 on SIGTERM and must have logged every change as an
//! `external-edit`; otherwise the bench fails, printing the watcher's stderr.

use std::collections::VecDeque;
use std::fmt::Write as _;
use std::io::{BufRead, BufReader, Write as _};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError, Sender};
use std::time::{Duration, Instant};

use serde_json::Value;

use super::{Bench, median, ms, read_raw};

/// The longest any single wait for the watcher may take before the bench gives up.
const WAIT: Duration = Duration::from_secs(30);
/// Stdout lines of the watcher kept to show when it fails.
const TAIL: usize = 20;
/// The line the bench writes into the pipe itself to end the reader thread.
const END: &str = "bench-end";

/// One watch row: an absolute value beside a baseline, with an absolute target.
pub struct Row {
    measure: String,
    size: usize,
    value: f64,
    unit: &'static str,
    baseline: &'static str,
    base: f64,
    /// At most this much (in `unit`), when the row has a target.
    target: Option<f64>,
}

/// `TAVERN_BENCH_WATCH_SIZES` (default 1000,10000; empty: no watch rows).
pub fn sizes() -> Vec<usize> {
    let Ok(s) = std::env::var("TAVERN_BENCH_WATCH_SIZES") else {
        return vec![1_000, 10_000];
    };
    s.split(',')
        .filter(|n| !n.trim().is_empty())
        .map(|n| {
            n.trim().parse().unwrap_or_else(|_| {
                eprintln!("error: TAVERN_BENCH_WATCH_SIZES={s}: '{n}' is not a number");
                std::process::exit(2)
            })
        })
        .collect()
}

/// `TAVERN_BENCH_WATCH_RUNS`: changes timed per size (default 200).
pub fn runs() -> usize {
    std::env::var("TAVERN_BENCH_WATCH_RUNS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(200)
        .max(1)
}

/// What the reader threads send: pipe lines, watcher output, the watcher's end.
enum Ev {
    /// A line read from the pipe, and when it arrived.
    Fifo(String, Instant),
    /// A line of the watcher's stdout (one JSON object).
    Out(String),
    /// The watcher's stdout closed: it exited.
    Exited,
}

/// What one timed change went through, for the phase breakdown.
struct Timed {
    id: String,
    /// Wall-clock time just before the rename, to compare with the watcher's `at` stamps.
    wall: chrono::DateTime<chrono::Utc>,
    latency: Duration,
}

/// The board, the pipe, the running watcher and everything it printed.
struct Session<'a> {
    b: &'a Bench,
    /// The directory holding the board and the pipe (left in place when the bench fails).
    dir: &'a Path,
    fifo: PathBuf,
    tx: Sender<Ev>,
    rx: Receiver<Ev>,
    child: Option<Child>,
    spawned: Instant,
    stderr: PathBuf,
    tail: VecDeque<String>,
    /// Every JSON object the watcher printed.
    events: Vec<Value>,
    /// Pipe lines nobody has waited for yet, and when each arrived: a line read while the
    /// bench waited for something else is taken from here by the [`Session::line`] that
    /// wants it.
    strays: Vec<(String, Instant)>,
}

impl Session<'_> {
    /// Prints what went wrong and what the watcher said, kills it and exits non-zero.
    fn fail(&mut self, msg: &str) -> ! {
        eprintln!("error: watch bench: {msg}");
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
        match std::fs::read_to_string(&self.stderr) {
            Ok(s) if !s.trim().is_empty() => eprintln!("the watcher's stderr:\n{}", s.trim_end()),
            Ok(_) => eprintln!("the watcher's stderr was empty"),
            Err(_) => {}
        }
        if !self.tail.is_empty() {
            eprintln!("the watcher's last output lines:");
            for line in &self.tail {
                eprintln!("  {line}");
            }
        }
        eprintln!("the board is left in {}", self.dir.display());
        std::process::exit(1);
    }

    fn pid(&self) -> u32 {
        self.child.as_ref().map_or(0, Child::id)
    }

    /// Starts `tavern watch --json --jobs 8` and waits until it says "watching".
    fn start(&mut self, name: &str) {
        let stderr = std::fs::File::create(&self.stderr).unwrap_or_else(|e| {
            let msg = format!("cannot create {}: {e}", self.stderr.display());
            self.fail(&msg)
        });
        let mut cmd = self.b.tavern(&["watch", "--json", "--jobs", "8"]);
        cmd.stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(stderr);
        self.spawned = Instant::now();
        let mut child = cmd.spawn().unwrap_or_else(|e| {
            let msg = format!("cannot start {}: {e}", self.b.bin.display());
            self.fail(&msg)
        });
        let stdout = child.stdout.take().expect("piped stdout");
        self.child = Some(child);
        let tx = self.tx.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send(Ev::Out(line)).is_err() {
                    return;
                }
            }
            let _ = tx.send(Ev::Exited);
        });
        let watching = self.wait(&format!("the {name} watcher to say \"watching\""), |ev| {
            ev["event"] == "watching"
        });
        let sources = &watching["sources"];
        if !sources
            .as_array()
            .is_some_and(|a| a.iter().any(|s| s == "bench"))
        {
            self.fail(&format!(
                "the watcher did not load the bench source (sources: {sources})"
            ));
        }
    }

    /// Waits for a line of the watcher's output that `want` accepts, and returns it.
    fn wait(&mut self, what: &str, mut want: impl FnMut(&Value) -> bool) -> Value {
        let deadline = Instant::now() + WAIT;
        loop {
            match self.next(deadline, what) {
                Ev::Out(line) => {
                    if let Some(v) = self.keep(line)
                        && want(&v)
                    {
                        return v;
                    }
                }
                Ev::Fifo(line, at) => self.strays.push((line, at)),
                Ev::Exited => self.exited(what),
            }
        }
    }

    /// Waits for the pipe line `want` and returns when it arrived: one already read while
    /// the bench waited for something else counts (under load the watcher's output and
    /// the pipe arrive in either order).
    fn line(&mut self, want: &str, what: &str) -> Instant {
        if let Some(i) = self.strays.iter().position(|(line, _)| line == want) {
            return self.strays.remove(i).1;
        }
        let deadline = Instant::now() + WAIT;
        loop {
            match self.next(deadline, what) {
                Ev::Fifo(line, at) if line == want => return at,
                Ev::Fifo(line, at) => self.strays.push((line, at)),
                Ev::Out(line) => {
                    self.keep(line);
                }
                Ev::Exited => self.exited(what),
            }
        }
    }

    fn next(&mut self, deadline: Instant, what: &str) -> Ev {
        let left = deadline.saturating_duration_since(Instant::now());
        match self.rx.recv_timeout(left) {
            Ok(ev) => ev,
            Err(RecvTimeoutError::Timeout) => {
                self.fail(&format!("waited {} s for {what}", WAIT.as_secs()))
            }
            Err(RecvTimeoutError::Disconnected) => self.fail(&format!(
                "the reader threads ended while waiting for {what}"
            )),
        }
    }

    fn exited(&mut self, what: &str) -> ! {
        let status = self.child.as_mut().and_then(|c| c.wait().ok());
        self.child = None;
        let how = status.map_or_else(String::new, |s| format!(" ({s})"));
        self.fail(&format!("the watcher ended{how} while waiting for {what}"))
    }

    /// Keeps a line of the watcher's output; returns it parsed, when it is JSON.
    fn keep(&mut self, line: String) -> Option<Value> {
        let v = serde_json::from_str::<Value>(&line).ok();
        if self.tail.len() == TAIL {
            self.tail.pop_front();
        }
        self.tail.push_back(line);
        if let Some(v) = &v {
            self.events.push(v.clone());
        }
        v
    }

    /// Peak resident set of the running watcher, in KiB (VmHWM).
    fn peak_rss_kib(&mut self) -> u64 {
        let path = format!("/proc/{}/status", self.pid());
        let status = std::fs::read_to_string(&path).unwrap_or_else(|e| {
            self.fail(&format!("cannot read {path} for the watcher's memory: {e}"))
        });
        let kib = status
            .lines()
            .find_map(|l| l.strip_prefix("VmHWM:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok());
        kib.unwrap_or_else(|| self.fail(&format!("no VmHWM line in {path}")))
    }

    /// SIGTERM, then waits for the watcher to exit, which it must do with 0.
    fn stop(&mut self) {
        let pid = self.pid().to_string();
        match Command::new("kill").args(["-TERM", &pid]).status() {
            Ok(s) if s.success() => {}
            Ok(s) => self.fail(&format!("kill -TERM {pid}: {s}")),
            Err(e) => self.fail(&format!("cannot run kill: {e}")),
        }
        // Its output ends when it exits; a watcher that does not stop fails the bench.
        let deadline = Instant::now() + WAIT;
        loop {
            match self.next(deadline, "the watcher to stop after SIGTERM") {
                Ev::Out(line) => {
                    self.keep(line);
                }
                Ev::Fifo(line, at) => self.strays.push((line, at)),
                Ev::Exited => break,
            }
        }
        let mut child = self.child.take().expect("a running watcher");
        let status = child
            .wait()
            .unwrap_or_else(|e| self.fail(&format!("cannot wait for the watcher: {e}")));
        if !status.success() {
            self.fail(&format!(
                "the watcher {status} after SIGTERM; expected exit 0"
            ));
        }
    }

    /// Starts the watcher, changes `id` once it is watching, and returns how long it took
    /// from the spawn to the pipe line of that change, and to "watching".
    fn start_to_ready(&mut self, name: &str, id: &str, tag: usize) -> (Duration, Duration) {
        self.start(name);
        let watching = self.spawned.elapsed();
        let mark = self.events.len();
        let (t0, _) = edit(&self.b.board, id, tag);
        let at = self.line(id, &format!("the {name} watcher's activation for {id}"));
        self.finished(id, mark);
        eprintln!(
            "  {name}: \"watching\" after {:.1} ms, ready after {:.1} ms (its first change: {:.1} ms)",
            ms(watching),
            ms(at - self.spawned),
            ms(at - t0)
        );
        (at - self.spawned, watching)
    }

    /// Waits until the watcher says the activation for `id` finished; it must have worked.
    /// `mark` is how many of the watcher's lines had been read before the change: a
    /// "finished" read since (while the bench waited for the pipe's line) counts.
    fn finished(&mut self, id: &str, mark: usize) {
        let what = format!("the activation for {id} to finish");
        let done = |v: &Value| v["event"] == "finished" && v["id"] == id;
        let read = self.events.get(mark..).unwrap_or_default();
        let v = match read.iter().find(|v| done(v)).cloned() {
            Some(v) => v,
            None => self.wait(&what, done),
        };
        if v["result"] != "ok" {
            self.fail(&format!("the activation for {id} did not succeed: {v}"));
        }
    }
}

/// Changes task `id` as an editor saves it: the whole new content (a `note:` line added
/// after the title) into a dot file in the same directory, renamed over the task.
/// Returns the time just before the rename, monotonic and wall-clock.
fn edit(board: &Path, id: &str, tag: usize) -> (Instant, chrono::DateTime<chrono::Utc>) {
    let tasks = board.join("tasks");
    let path = tasks.join(format!("{id}.md"));
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    let title = text.find("\ntitle:").expect("a title line") + 1;
    let end = title + text[title..].find('\n').expect("a line end") + 1;
    let new = format!("{}note: bench change {tag}\n{}", &text[..end], &text[end..]);
    let tmp = tasks.join(format!(".{id}.md.new"));
    std::fs::write(&tmp, new).unwrap_or_else(|e| panic!("cannot write {}: {e}", tmp.display()));
    let t0 = Instant::now();
    let wall = chrono::Utc::now();
    std::fs::rename(&tmp, &path).unwrap_or_else(|e| panic!("cannot rename over {id}: {e}"));
    (t0, wall)
}

/// A path `sh` reads as one plain word, as a source's `run:` may hold it bare.
fn plain_path(p: &Path) -> Option<&str> {
    let s = p.to_str()?;
    s.bytes()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'.' | b'_' | b'/' | b'-'))
        .then_some(s)
}

const MIB: f64 = 1024.0 * 1024.0;

/// What a directory takes on disk, in bytes: its blocks and those of everything under it
/// (a file of a few hundred bytes takes a whole block).
pub fn disk_bytes(dir: &Path) -> u64 {
    use std::os::unix::fs::MetadataExt;
    let Ok(meta) = std::fs::symlink_metadata(dir) else {
        return 0;
    };
    let mut total = meta.blocks() * 512;
    if meta.is_dir()
        && let Ok(entries) = std::fs::read_dir(dir)
    {
        for e in entries.flatten() {
            total += disk_bytes(&e.path());
        }
    }
    total
}

/// The sum of the task files' sizes, in bytes.
fn task_bytes(board: &Path) -> u64 {
    std::fs::read_dir(board.join("tasks"))
        .unwrap()
        .map(|e| e.unwrap().metadata().unwrap())
        .filter(|m| m.is_file())
        .map(|m| m.len())
        .sum()
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let rank = ((sorted.len() as f64) * p).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

/// Milliseconds from `from` to a watcher event's `at` stamp.
fn since(from: chrono::DateTime<chrono::Utc>, ev: &Value) -> Option<f64> {
    let at = chrono::DateTime::parse_from_rfc3339(ev["at"].as_str()?).ok()?;
    Some((at.with_timezone(&chrono::Utc) - from).num_microseconds()? as f64 / 1000.0)
}

fn median_f(mut v: Vec<f64>) -> Option<f64> {
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    Some(v[v.len() / 2])
}

/// Runs the watch measurements on the board of `n` tasks built in `dir`. `raw` is the
/// median of reading every task file raw, when the command rows measured it already.
pub fn run(b: &Bench, dir: &Path, n: usize, raw: Option<Duration>) -> Vec<Row> {
    let runs = runs();
    // Two warm-up changes (first start, restart) and the timed ones, each on its own task.
    assert!(
        runs + 2 <= n,
        "TAVERN_BENCH_WATCH_RUNS={runs} needs a board of at least {} tasks, not {n}",
        runs + 2
    );
    let t = Instant::now();
    let raw = raw.unwrap_or_else(|| {
        let mut v = Vec::new();
        for i in 0..=9 {
            let t = Instant::now();
            std::hint::black_box(read_raw(&b.board));
            if i > 0 {
                v.push(t.elapsed());
            }
        }
        median(v)
    });

    let fifo = dir.join("watch.fifo");
    let Some(fifo_word) = plain_path(&fifo).map(str::to_string) else {
        eprintln!(
            "error: watch bench: the pipe's path {} has characters a shell would need quoted, and a source's `run:` holds it bare\nhint: set TMPDIR to a plain path such as /tmp",
            fifo.display()
        );
        std::process::exit(1);
    };
    match Command::new("mkfifo")
        .arg(&fifo)
        .stderr(Stdio::piped())
        .output()
    {
        Ok(out) if out.status.success() => {}
        Ok(out) => {
            eprintln!(
                "error: watch bench: mkfifo {} failed: {}",
                fifo.display(),
                String::from_utf8_lossy(&out.stderr).trim()
            );
            std::process::exit(1);
        }
        Err(e) => {
            eprintln!(
                "error: watch bench: cannot run mkfifo ({e}); the watch rows need it\nhint: install coreutils, or set TAVERN_BENCH_WATCH_SIZES= to skip them"
            );
            std::process::exit(1);
        }
    }
    let sources = b.board.join("control/sources");
    std::fs::create_dir_all(&sources).unwrap();
    std::fs::write(
        sources.join("bench.md"),
        format!(
            "---\nname: bench\nwatch: [tasks]\non: [changed]\nmax_parallel: 8\nrun: echo {{id}} > {fifo_word}\n---\n\nThe benchmark's source: writes the id of each changed task into a pipe.\n"
        ),
    )
    .unwrap();

    // Read and write: opening does not wait for a writer, and the pipe never reports an
    // end while the bench holds it.
    let pipe = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(&fifo)
        .unwrap_or_else(|e| panic!("cannot open {}: {e}", fifo.display()));
    let mut pipe_end = pipe.try_clone().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    let fifo_tx = tx.clone();
    let reader = std::thread::spawn(move || {
        let mut r = BufReader::new(pipe);
        let mut line = String::new();
        loop {
            line.clear();
            match r.read_line(&mut line) {
                Ok(0) | Err(_) => return,
                Ok(_) => {
                    let at = Instant::now();
                    let line = line.trim_end().to_string();
                    if line == END || fifo_tx.send(Ev::Fifo(line, at)).is_err() {
                        return;
                    }
                }
            }
        }
    });

    let mut s = Session {
        b,
        dir,
        fifo: fifo.clone(),
        tx,
        rx,
        child: None,
        spawned: Instant::now(),
        stderr: dir.join("watch.stderr"),
        tail: VecDeque::new(),
        events: Vec::new(),
        strays: Vec::new(),
    };
    // Distinct tasks spread over the board: 7919 is prime, so coprime with the sizes.
    let pick = |k: usize| format!("task-{:06}", (k * 7919 + n / 3) % n);

    eprintln!("{n} tasks: watch");
    let (first, _) = s.start_to_ready("first", &pick(0), 0);
    let first_rss = s.peak_rss_kib();
    s.stop();
    let state = b.board.join(".state");
    let (state_disk, watch_disk) = (disk_bytes(&state), disk_bytes(&state.join("watch")));
    let tasks_disk = disk_bytes(&b.board.join("tasks"));
    eprintln!(
        "  on disk after the first start: .state/ {:.1} MiB, .state/watch/ {:.1} MiB; tasks/ {:.1} MiB",
        state_disk as f64 / MIB,
        watch_disk as f64 / MIB,
        tasks_disk as f64 / MIB
    );
    let (restart, _) = s.start_to_ready("restart", &pick(1), 1);

    // Changes one at a time, interleaved with the baseline: the bench itself starting
    // `sh -c 'echo base > FIFO'` and waiting for its line.
    let base_cmd = format!("echo base > {}", s.fifo.display());
    let mut base = Vec::with_capacity(runs);
    let mut timed: Vec<Timed> = Vec::with_capacity(runs);
    for k in 2..runs + 2 {
        let t0 = Instant::now();
        let mut sh = Command::new("sh")
            .args(["-c", &base_cmd])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| s.fail(&format!("cannot start sh: {e}")));
        let at = s.line("base", "the baseline's line");
        base.push(at - t0);
        let _ = sh.wait();

        let id = pick(k);
        let mark = s.events.len();
        let (t0, wall) = edit(&b.board, &id, k);
        let at = s.line(&id, &format!("the activation for {id}"));
        timed.push(Timed {
            id: id.clone(),
            wall,
            latency: at - t0,
        });
        s.finished(&id, mark);
    }
    let rss = s.peak_rss_kib();
    s.stop();
    pipe_end.write_all(format!("{END}\n").as_bytes()).unwrap();
    reader.join().unwrap();

    // The watcher must have seen every change as what it was: an edit outside tavern (an
    // entry is one line, `- {seq: N, …, op: "external-edit", …}`; older logs spread an
    // entry over lines, one `op: external-edit`).
    let log = std::fs::read_to_string(b.board.join("log.yaml")).unwrap();
    let edits = log
        .lines()
        .filter(|l| {
            l.contains(", op: \"external-edit\"")
                || l.trim_start().trim_start_matches("- ") == "op: external-edit"
        })
        .count();
    if edits < runs + 2 {
        s.fail(&format!(
            "log.yaml holds {edits} external-edit entries; the bench made {} changes",
            runs + 2
        ));
    }
    if !s.strays.is_empty() {
        eprintln!(
            "  note: {} unexpected pipe lines: {:?}",
            s.strays.len(),
            s.strays.iter().take(10).map(|(l, _)| l).collect::<Vec<_>>()
        );
    }

    // Where the time goes, from the watcher's own stamps (millisecond resolution).
    let mut noticed = Vec::new();
    let mut started = Vec::new();
    for c in &timed {
        let doc = format!("tasks/{}.md", c.id);
        let find = |event: &str| {
            s.events.iter().find(|v| {
                v["event"] == event && (v["doc"] == doc.as_str() || v["id"] == c.id.as_str())
            })
        };
        if let Some(ms) = find("change").and_then(|v| since(c.wall, v)) {
            noticed.push(ms);
        }
        if let Some(ms) = find("started").and_then(|v| since(c.wall, v)) {
            started.push(ms);
        }
    }

    let mut lat: Vec<Duration> = timed.iter().map(|c| c.latency).collect();
    lat.sort();
    let (p50, p99, max) = (
        percentile(&lat, 0.5),
        percentile(&lat, 0.99),
        lat[lat.len() - 1],
    );
    let base = median(base);
    eprintln!(
        "  {runs} changes: p50 {:.1} ms, p99 {:.1} ms, max {:.1} ms (baseline {:.1} ms); rename → \"change\" {} ms, → \"started\" {} ms (medians, watcher's stamps)",
        ms(p50),
        ms(p99),
        ms(max),
        ms(base),
        median_f(noticed).map_or("?".into(), |m| format!("{m:.0}")),
        median_f(started).map_or("?".into(), |m| format!("{m:.0}")),
    );
    eprintln!(
        "  peak RSS {:.1} MiB (first start {:.1} MiB); {edits} external-edit entries; {:.1} s",
        rss as f64 / 1024.0,
        first_rss as f64 / 1024.0,
        t.elapsed().as_secs_f64()
    );

    let mib = |kib: u64| kib as f64 / 1024.0;
    let files = task_bytes(&b.board) as f64 / (1024.0 * 1024.0);
    let at = |size: usize, v: f64| (n == size).then_some(v);
    let row = |measure: &str, value: f64, unit, baseline, base: f64, target| Row {
        measure: measure.into(),
        size: n,
        value,
        unit,
        baseline,
        base,
        target,
    };
    let sh = "sh -c 'echo > FIFO'";
    vec![
        row(
            "first start to ready",
            ms(first),
            "ms",
            "read all raw",
            ms(raw),
            None,
        ),
        row(
            "restart to ready",
            ms(restart),
            "ms",
            "read all raw",
            ms(raw),
            None,
        ),
        row(
            "change to command, p50",
            ms(p50),
            "ms",
            sh,
            ms(base),
            Some(50.0),
        ),
        row(
            "change to command, p99",
            ms(p99),
            "ms",
            sh,
            ms(base),
            Some(250.0),
        ),
        row("change to command, max", ms(max), "ms", sh, ms(base), None),
        row(
            "peak RSS, first start",
            mib(first_rss),
            "MiB",
            "task files",
            files,
            None,
        ),
        row(
            "peak RSS after the changes",
            mib(rss),
            "MiB",
            "task files",
            files,
            at(10_000, 50.0),
        ),
        row(
            ".state/ on disk after the first start",
            state_disk as f64 / MIB,
            "MiB",
            "tasks/ on disk",
            tasks_disk as f64 / MIB,
            None,
        ),
        row(
            ".state/watch/ on disk after the first start",
            watch_disk as f64 / MIB,
            "MiB",
            "tasks/ on disk",
            tasks_disk as f64 / MIB,
            None,
        ),
    ]
}

/// The watch table, appended to the report.
pub fn render(rows: &[Row], out: &mut String) {
    if rows.is_empty() {
        return;
    }
    write!(
        out,
        "\n## Watch mode\n\n`tavern watch --jobs 8` with one source (`run: echo {{id}} > FIFO`); {} task changes per size, each saved as an editor does (dot file, rename), one at a time. \"change to command\": from the rename to the source's line in the pipe; its baseline is the bench starting that command itself (spawn to line, median). \"to ready\": from spawning the watcher to the line of its first change.\n\n",
        runs()
    )
    .unwrap();
    out.push_str(
        "| measure | tasks | value | baseline | baseline value | ratio | target | result |\n",
    );
    out.push_str("|---|---:|---:|---|---:|---:|---:|---|\n");
    for r in rows {
        let (target, verdict) = match r.target {
            Some(t) => (
                format!("≤ {t} {}", r.unit),
                if r.value <= t { "PASS" } else { "MISS" },
            ),
            None => (String::new(), ""),
        };
        writeln!(
            out,
            "| {} | {} | {:.2} {} | {} | {:.2} {} | {:.2}x | {} | {} |",
            r.measure,
            r.size,
            r.value,
            r.unit,
            r.baseline,
            r.base,
            r.unit,
            r.value / r.base,
            target,
            verdict
        )
        .unwrap();
    }
}
