//! The dashboard rows of the board benchmark: `tavern serve` on a built board.
//!
//! - First load: what a browser fetches to show the board — the page, the assets it names,
//!   `/api/state`, `/api/board` (50 cards per column) and `/api/waiting` — one request
//!   after another, as a fresh page does; median of `TAVERN_BENCH_WEB_RUNS` loads.
//!   Baseline: reading every task file raw (the board view reads them all).
//! - Change to page: a task changed as an editor saves it (dot file renamed over it), from
//!   just before the rename to the moment a client of the event stream has the board read
//!   again after the `change` event that names the file — what an open page does before
//!   it shows the change. p50 and p99 over the changes; target ≤ 1000 ms (the issue's
//!   "within a second"). Also the event alone (rename to event), p50.
//! - Memory: the server's peak resident set (VmHWM) after the loads and changes.
//!
//! The server must exit 0 on SIGTERM, or the bench fails.

use std::fmt::Write as _;
use std::io::{BufRead, BufReader, Read, Write as _};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use super::{Bench, median, ms, read_raw};

/// A guard against a hung server, not a measure.
const WAIT: Duration = Duration::from_secs(30);

pub struct Row {
    measure: String,
    size: usize,
    value: f64,
    unit: &'static str,
    baseline: String,
    base: Option<f64>,
    target: Option<f64>,
}

/// `TAVERN_BENCH_WEB_SIZES` (default 1000,10000; empty: no dashboard rows).
pub fn sizes() -> Vec<usize> {
    let Ok(s) = std::env::var("TAVERN_BENCH_WEB_SIZES") else {
        return vec![1_000, 10_000];
    };
    s.split(',')
        .filter(|n| !n.trim().is_empty())
        .map(|n| {
            n.trim().parse().unwrap_or_else(|_| {
                eprintln!("error: TAVERN_BENCH_WEB_SIZES={s}: '{n}' is not a number");
                std::process::exit(2)
            })
        })
        .collect()
}

/// `TAVERN_BENCH_WEB_RUNS`: changes timed per size (default 100); first loads: a fifth.
pub fn runs() -> usize {
    std::env::var("TAVERN_BENCH_WEB_RUNS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(100)
        .max(5)
}

struct Server {
    child: Child,
    port: u16,
    token: String,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Server {
    fn start(b: &Bench) -> Server {
        let mut child = b
            .tavern(&["serve", "--port", "0"])
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("spawn tavern serve");
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let url = line
            .trim()
            .strip_prefix("tavern serve: http://127.0.0.1:")
            .unwrap_or_else(|| panic!("tavern serve printed {line:?}"));
        let (port, token) = url.split_once("/?token=").unwrap();
        Server {
            child,
            port: port.parse().unwrap(),
            token: token.to_string(),
        }
    }

    fn connect(&self, path: &str) -> TcpStream {
        let mut s = TcpStream::connect(("127.0.0.1", self.port)).unwrap();
        s.set_read_timeout(Some(WAIT)).unwrap();
        write!(
            s,
            "GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nCookie: tavern-{}={}\r\nx-tavern-token: {}\r\nConnection: close\r\n\r\n",
            self.port, self.port, self.token, self.token
        )
        .unwrap();
        s
    }

    /// GETs `path` and returns the size of the whole response; panics unless 200.
    fn get(&self, path: &str) -> usize {
        self.fetch(path).len()
    }

    /// GETs `path` and returns the whole response; panics unless 200.
    fn fetch(&self, path: &str) -> Vec<u8> {
        let mut raw = Vec::new();
        self.connect(path).read_to_end(&mut raw).unwrap();
        assert!(
            raw.starts_with(b"HTTP/1.1 200"),
            "GET {path}: {}",
            String::from_utf8_lossy(&raw[..raw.len().min(300)])
        );
        raw
    }

    /// A first load as a fresh page makes it: the page, then the assets it names (whatever
    /// this version of the page is made of), then the reads of the board view and the
    /// waiting queue. Returns the bytes received.
    fn first_load(&self) -> usize {
        let page = self.fetch("/");
        let text = String::from_utf8_lossy(&page);
        let mut bytes = page.len();
        for asset in text
            .split(['"', '\''])
            .filter(|s| s.starts_with("/assets/"))
        {
            bytes += self.get(asset);
        }
        bytes + READS.iter().map(|p| self.get(p)).sum::<usize>()
    }

    fn peak_rss_mib(&self) -> f64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id()))
            .unwrap_or_default();
        status
            .lines()
            .find_map(|l| l.strip_prefix("VmHWM:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
            .map_or(f64::NAN, |kib| kib / 1024.0)
    }
}

/// The reads of a first load, after the page and its assets.
const READS: [&str; 3] = ["/api/state", "/api/board?per=50&q=", "/api/waiting"];

fn percentile(mut v: Vec<Duration>, p: f64) -> Duration {
    v.sort();
    let i = ((v.len() as f64 - 1.0) * p).round() as usize;
    v[i]
}

/// Runs the dashboard measurements on the board of `n` tasks.
pub fn run(b: &Bench, n: usize, raw: Option<Duration>) -> Vec<Row> {
    let runs = runs();
    let raw = raw.unwrap_or_else(|| median((0..5).map(|_| timed_raw(&b.board)).collect()));
    let s = Server::start(b);

    // First loads (the first one warms the page cache and the server).
    let mut loads = Vec::new();
    let mut bytes = 0;
    for i in 0..=(runs / 5).max(3) {
        let t = Instant::now();
        bytes = s.first_load();
        if i > 0 {
            loads.push(t.elapsed());
        }
    }
    let load = median(loads);
    eprintln!(
        "{n} tasks: dashboard first load {:.1} ms ({} KiB)",
        ms(load),
        bytes / 1024
    );

    // Changes, one at a time, each followed through the event stream to a board read.
    let mut events = BufReader::new(s.connect("/api/events"));
    wait_event(&mut events, "back", None);
    let tasks = b.board.join("tasks");
    let mut names: Vec<String> = std::fs::read_dir(&tasks)
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| n.ends_with(".md") && !n.starts_with('.'))
        .collect();
    names.sort();
    let mut to_page = Vec::new();
    let mut to_event = Vec::new();
    for i in 0..runs {
        let name = &names[(i * 7919) % names.len()];
        let path = tasks.join(name);
        let text = std::fs::read_to_string(&path).unwrap();
        let changed = format!("{text}\nChanged by the bench, round {i}.\n");
        let tmp = tasks.join(format!(".{name}.bench"));
        std::fs::write(&tmp, changed).unwrap();
        let t = Instant::now();
        std::fs::rename(&tmp, &path).unwrap();
        wait_event(&mut events, "change", Some(&format!("tasks/{name}")));
        to_event.push(t.elapsed());
        s.get("/api/board?per=50&q=");
        to_page.push(t.elapsed());
    }
    let rss = s.peak_rss_mib();
    stop(s);
    let p50 = percentile(to_page.clone(), 0.5);
    let p99 = percentile(to_page, 0.99);
    let event = percentile(to_event, 0.5);
    eprintln!(
        "{n} tasks: change to page p50 {:.1} ms, p99 {:.1} ms (event alone {:.1} ms); peak RSS {rss:.1} MiB",
        ms(p50),
        ms(p99),
        ms(event)
    );
    let read_all = "read all task files raw".to_string();
    vec![
        Row {
            measure: "first load (page, assets, state, board, waiting)".into(),
            size: n,
            value: ms(load),
            unit: "ms",
            baseline: read_all.clone(),
            base: Some(ms(raw)),
            target: None,
        },
        Row {
            measure: "change on disk to board read again, p50".into(),
            size: n,
            value: ms(p50),
            unit: "ms",
            baseline: read_all.clone(),
            base: Some(ms(raw)),
            target: Some(1000.0),
        },
        Row {
            measure: "change on disk to board read again, p99".into(),
            size: n,
            value: ms(p99),
            unit: "ms",
            baseline: read_all,
            base: Some(ms(raw)),
            target: Some(1000.0),
        },
        Row {
            measure: "change on disk to event, p50".into(),
            size: n,
            value: ms(event),
            unit: "ms",
            baseline: String::new(),
            base: None,
            target: None,
        },
        Row {
            measure: "peak RSS of the server".into(),
            size: n,
            value: rss,
            unit: "MiB",
            baseline: String::new(),
            base: None,
            target: None,
        },
    ]
}

fn timed_raw(board: &Path) -> Duration {
    let t = Instant::now();
    read_raw(board);
    t.elapsed()
}

/// Reads the event stream until an event `name` arrives (whose data holds `needle`).
fn wait_event(events: &mut BufReader<TcpStream>, name: &str, needle: Option<&str>) {
    let mut current = String::new();
    loop {
        let mut line = String::new();
        let got = events.read_line(&mut line).expect("read the event stream");
        assert!(got > 0, "the event stream ended");
        let line = line.trim_end();
        if let Some(e) = line.strip_prefix("event: ") {
            current = e.to_string();
        } else if let Some(d) = line.strip_prefix("data: ")
            && current == name
            && needle.is_none_or(|n| d.contains(n))
        {
            return;
        }
    }
}

fn stop(mut s: Server) {
    let _ = std::process::Command::new("kill")
        .args(["-TERM", &s.child.id().to_string()])
        .status();
    let status = s.child.wait().unwrap();
    assert_eq!(
        status.code(),
        Some(0),
        "tavern serve did not exit 0 on SIGTERM"
    );
}

/// The dashboard table, appended to the report.
pub fn render(rows: &[Row], out: &mut String) {
    if rows.is_empty() {
        return;
    }
    write!(
        out,
        "\n## Dashboard (tavern serve)\n\nOne server per size; {} changes per size, each saved as an editor does, one at a time, followed through the event stream to the board read that an open page makes to show it. First load: the page, its assets, state, board (50 cards per column) and the waiting queue, fetched in turn.\n\n",
        runs()
    )
    .unwrap();
    out.push_str("| measure | tasks | value | baseline | baseline value | target | result |\n");
    out.push_str("|---|---:|---:|---|---:|---:|---|\n");
    for r in rows {
        let (target, verdict) = match r.target {
            Some(t) => (
                format!("≤ {t} {}", r.unit),
                if r.value <= t { "PASS" } else { "MISS" },
            ),
            None => (String::new(), ""),
        };
        let base = r
            .base
            .map_or(String::new(), |b| format!("{b:.2} {}", r.unit));
        writeln!(
            out,
            "| {} | {} | {:.2} {} | {} | {} | {} | {} |",
            r.measure, r.size, r.value, r.unit, r.baseline, base, target, verdict
        )
        .unwrap();
    }
}
