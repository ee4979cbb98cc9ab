//! The board benchmark: boards of 1k, 10k and 100k tasks, the real `tavern` binary run as
//! a process (as agents run it), and baselines measured in the same run, reported as ratios.
//!
//!     cargo build --release && cargo bench --bench board
//!     TAVERN_BENCH_SIZES=1000,10000 cargo bench --bench board
//!     TAVERN_BENCH_SIZES= TAVERN_BENCH_WATCH_SIZES=10000 cargo bench --bench board
//!     TAVERN_BENCH_SIZES= TAVERN_BENCH_WATCH_SIZES= TAVERN_BENCH_WEB_SIZES=10000 cargo bench --bench board
//!
//! `cargo bench` builds the tavern binary with the bench profile (= release) before this
//! runs, and tells us its path (CARGO_BIN_EXE_tavern), so what is timed is always the
//! current code. `TAVERN_BENCH_BIN=PATH` times another binary. `TAVERN_BENCH_RUNS=N` sets
//! the number of timed runs of the per-document commands (default 15).
//! `TAVERN_BENCH_KEEP=1` keeps the boards (in the temp dir) and prints where they are.
//! An empty `TAVERN_BENCH_SIZES` leaves out the command rows (the third line: watch only).
//!
//! Baselines:
//! - `/bin/true` as a process: what any CLI call costs at least. Target: `claim ID` and
//!   `show ID` on 10k tasks within 3x of it.
//! - `cat` of one task file as a process: the cheapest way to read a document.
//! - reading every task file raw in this process (read_dir + read each file): what a full
//!   scan costs at least. Target: `list` with a query on 100k within 0.25x of it (it reads
//!   through the read index, which reads only the files that changed).
//!   `ready`, `deps ID`, `summary` and `check` are timed beside it too, with and without
//!   a watcher (`check` exits 6 on these boards: they hold broken fixtures).
//!   `TAVERN_BENCH_ONLY=check` times `check` alone beside it (no watcher), at each size or
//!   on the board of TAVERN_BENCH_BOARD, which it changes no document of.
//! - reading log.yaml raw in this process (the board's log holds one `create` per task):
//!   what reading the whole log costs at least. `log --since` (the last 10 entries) should
//!   cost what it shows, not what the log holds; `log --doc` finds one task's entries.
//!
//! Each command is timed in rounds interleaved with its baselines, so that on a shared
//! machine whose load drifts both see the same conditions; the first round is a warm-up.
//!
//! Watch mode (a second table; board/watch.rs), on the boards of the sizes in
//! `TAVERN_BENCH_WATCH_SIZES` (default 1000,10000; a size not in TAVERN_BENCH_SIZES gets a
//! board of its own, without the command rows; empty: no watch rows). The real
//! `tavern watch --jobs 8` runs with one knowledge source, `run: echo {id} > FIFO`, FIFO a
//! named pipe the bench reads, stamping each line as it arrives:
//! - "first start to ready" / "restart to ready": from spawning the watcher to the pipe
//!   line of a change written once it says "watching", on the fresh board (the first start
//!   copies every file into its shadow) and after a SIGTERM (a restart only stats the
//!   files). Baseline: reading every task file raw, as above.
//! - "change to command" p50, p99, max: `TAVERN_BENCH_WATCH_RUNS` (default 200) tasks
//!   changed as an editor saves (a dot file renamed over the task), one at a time (each
//!   once the previous activation finished), from just before the rename to the line in
//!   the pipe. Baseline, interleaved: the bench itself starting `sh -c 'echo base >
//!   FIFO'`, spawn to line, median: the floor any watcher pays to start a command.
//!   Targets: p50 ≤ 50 ms, p99 ≤ 250 ms.
//! - "peak RSS": the watcher's VmHWM after its first start and after the changes, beside
//!   the size of all task files. Target: ≤ 50 MiB at 10k tasks.
//!
//! `tavern mcp` (a third table; board/mcp.rs), at every size of TAVERN_BENCH_SIZES: `show`,
//! `list` and `claim` as tool calls over one open session, each beside the same command
//! run as a process, and the size of `tools/list` per profile. `TAVERN_BENCH_ONLY=mcp`
//! times only these rows.
//!
//! The dashboard (a fourth table; board/web.rs), on the boards of `TAVERN_BENCH_WEB_SIZES`
//! (default 1000,10000; empty: none): `tavern serve` on the board; its first load (page,
//! assets, state, board, waiting queue), the time from a task changed on disk to a client
//! of its event stream having read the board again (p50, p99; target ≤ 1 s), the event
//! alone, and the server's peak RSS. `TAVERN_BENCH_WEB_RUNS` changes (default 100).
//!
//! The watcher must exit 0 on SIGTERM and log an `external-edit` for every change, or the
//! bench fails (as it does when a wait exceeds 30 s), printing the watcher's stderr.
//! Claims across machines (a third table; board/claims.rs): a connected claim's median and
//! p99 beside a plain local claim and a bare `git push`, and claims per second with 16
//! agents over 4 clones of a local bare remote. `TAVERN_BENCH_CLAIMS=0` leaves it out.
//!
//! `tavern sync` (board/sync.rs), at each size of `TAVERN_BENCH_SYNC_SIZES` (default
//! 1000,10000; empty: none): sending and receiving N new, then N edited documents between
//! two clones of a local bare remote, beside plain git doing the same change.
//!
//! Search alone (`TAVERN_BENCH_ONLY=search`, board/search.rs): warm searches at each size
//! of TAVERN_BENCH_SIZES beside reading every task file raw and a bare `statat` of every
//! task file (the floor of the index's validity check), with CPU times and the load.
//!
//! A million documents (issue 21; board/scale.rs): the reads (`list`, `claim --next`,
//! `search`) report their CPU time and peak memory beside their wall time (through GNU
//! `/usr/bin/time` when installed: its start is in their wall time, well under a
//! millisecond), and every size of TAVERN_BENCH_SIZES also times, once each:
//! - the read index and the search index built from nothing (`.state/index/` and
//!   `.state/search/` removed; the first `list`, then the first `search`), with what each
//!   leaves on disk and the index's progress lines on stderr (counted; a build of more
//!   than 2 s that says nothing is warned about);
//! - `tavern watch --once` with no `.state/watch/`, then again with nothing changed, with
//!   `.state/watch/` on disk after.
//!
//! `TAVERN_BENCH_BOARD=DIR` times the board a run kept in DIR (`TAVERN_BENCH_KEEP=1`
//! prints it) instead of building one: its size is its count of `task-NNNNNN` files, its
//! claimable tasks read from them; TAVERN_BENCH_SIZES is then ignored, and no watch, web,
//! claims or sync rows run unless asked for by their own variables. The commands change
//! the board (claims, new tasks), so a rerun sees a few more tasks claimed. For a 1M run:
//!
//!     TAVERN_BENCH_SIZES=1000000 TAVERN_BENCH_RUNS=3 TAVERN_BENCH_KEEP=1 TAVERN_BENCH_MCP=0 \
//!       TAVERN_BENCH_CLAIMS=0 TAVERN_BENCH_WATCH_SIZES= TAVERN_BENCH_WEB_SIZES= \
//!       TAVERN_BENCH_SYNC_SIZES= cargo bench --bench board
//!     TAVERN_BENCH_BOARD=/tmp/.tmpXXXX TAVERN_BENCH_RUNS=3 TAVERN_BENCH_MCP=0 ... (the same)
//!
//! The report is printed and written to target/bench-report.md.
//!
//! Every board also holds four of the hand-written documents of `fixtures/` (shared with
//! the tests): one tavern reads through its full YAML parser, three it skips with a warning.

#[path = "board/claims.rs"]
mod claims;
#[path = "board/mcp.rs"]
mod mcp;
#[path = "board/scale.rs"]
mod scale;
#[path = "board/search.rs"]
mod search;
#[path = "board/sync.rs"]
mod sync;
#[path = "board/watch.rs"]
mod watch;
#[path = "board/web.rs"]
mod web;

#[path = "../fixtures/fixtures.rs"]
mod fixtures;

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn median(mut v: Vec<Duration>) -> Duration {
    assert!(!v.is_empty());
    v.sort();
    v[v.len() / 2]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// Runs a command once, output discarded, and returns how long it took; panics if it fails.
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

/// The tavern binary to time.
fn tavern_bin() -> PathBuf {
    if let Some(p) = std::env::var_os("TAVERN_BENCH_BIN") {
        // Absolute: the watcher rows start it in the board's directory.
        return std::fs::canonicalize(&p).unwrap_or_else(|_| PathBuf::from(p));
    }
    let built = PathBuf::from(env!("CARGO_BIN_EXE_tavern"));
    if built.exists() {
        return built;
    }
    let release = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/release/tavern");
    if release.exists() {
        return release;
    }
    eprintln!(
        "error: no tavern binary at {} nor {}\nhint: run `cargo build --release && cargo bench --bench board`, or set TAVERN_BENCH_BIN",
        built.display(),
        release.display()
    );
    std::process::exit(1);
}

/// Every tavern run here is told not to start the index keeper: the rows without a
/// watcher are what a read costs with none running, and a keeper one read started would
/// serve the next. The keeper's own rows start one themselves.
pub const KEEPER: &str = "never";

struct Bench {
    bin: PathBuf,
    board: PathBuf,
}

impl Bench {
    fn tavern(&self, args: &[&str]) -> Command {
        let mut c = Command::new(&self.bin);
        c.args(args)
            .env("TAVERN_BOARD", &self.board)
            .env("TAVERN_AGENT", "bench")
            .env("TAVERN_KEEPER", KEEPER);
        c
    }

    fn time(&self, args: &[&str]) -> Duration {
        timed(&mut self.tavern(args))
    }
}

/// What the board builder knows about each task, to pick ids for the timed commands.
struct Built {
    board: PathBuf,
    /// Pending tasks without dependencies: claimable by id.
    claimable: Vec<String>,
}

/// A small deterministic PRNG (xorshift64*).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

const STATUSES: [&str; 8] = [
    "pending", "pending", "pending", "claimed", "working", "review", "done", "done",
];
const TAGS: [&str; 10] = [
    "parser", "cli", "docs", "perf", "bug", "log", "query", "store", "ci", "ux",
];
const AGENTS: [&str; 4] = ["coder-1", "coder-2", "reviewer", "claude-7"];

/// `tavern init`, then `n` task files written directly (building a 100k board through the
/// CLI would take minutes and measure nothing we report). The files look like the ones
/// tavern writes from templates/task.md: same keys and order, varied values, a short body.
fn build_board(bin: &Path, dir: &Path, n: usize) -> Built {
    let ok = Command::new(bin)
        .arg("init")
        .arg(dir)
        .stdout(Stdio::null())
        .status()
        .expect("run tavern init");
    assert!(ok.success(), "tavern init failed");
    let board = dir.join(".tavern");
    let tasks = board.join("tasks");
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let mut claimable = Vec::new();
    let mut text = String::with_capacity(1024);
    let mut log = String::new();
    for i in 0..n {
        let id = format!("task-{i:06}");
        let status = STATUSES[rng.below(STATUSES.len() as u64) as usize];
        let priority = rng.below(5);
        let tags: Vec<&str> = (0..rng.below(4))
            .map(|_| TAGS[rng.below(TAGS.len() as u64) as usize])
            .collect();
        // One task in ten waits for an earlier one.
        let depends_on = if i > 0 && rng.below(10) == 0 {
            format!("[task-{:06}]", rng.below(i as u64))
        } else {
            "[]".to_string()
        };
        let day = 1 + i * 20 / n.max(1);
        text.clear();
        write!(
            text,
            "---\nid: {id}\ntitle: Make part {i} of the pipeline handle {} input\nstatus: {status}\npriority: {priority}\ntags: [{}]\ndepends_on: {depends_on}\n",
            TAGS[i % TAGS.len()],
            tags.join(", "),
        )
        .unwrap();
        if matches!(status, "claimed" | "working" | "review") {
            let agent = AGENTS[rng.below(AGENTS.len() as u64) as usize];
            write!(
                text,
                "claimed_by: {agent}\nclaimed_at: 2026-11-{day:02}T11:00:00Z\n"
            )
            .unwrap();
        }
        let rev = if status == "pending" {
            1
        } else {
            2 + rng.below(6)
        };
        write!(
            text,
            "created_at: 2026-11-{day:02}T10:{:02}:00Z\ncreated_by: planner\nupdated_at: 2026-11-{day:02}T12:00:00Z\nrev: {rev}\n---\n\n## Goal\n\nPart {i} drops records with an empty key; it must keep them and say so in the log.\n\n## Done when\n\n- the failing case from the report passes\n- `cargo test` is green\n",
            i % 60
        )
        .unwrap();
        std::fs::write(tasks.join(format!("{id}.md")), &text).unwrap();
        // The log a board of that size has at least: one `create` per task, with its diff,
        // rendered by tavern itself.
        let entry = tavern::api::Entry {
            seq: i as u64 + 1,
            at: format!(
                "2026-11-{day:02}T10:{:02}:{:02}.000Z",
                i % 60,
                (i / 60) % 60
            ),
            actor: "planner".into(),
            op: "create".into(),
            doc: format!("tasks/{id}.md"),
            rev: Some(1),
            diff: Some(tavern::api::history::text_diff("", &text)),
            ..Default::default()
        };
        log.push_str(&tavern::api::history::render_entry(&entry));
        if status == "pending" && depends_on == "[]" {
            claimable.push(id);
        }
    }
    // The awkward documents boards collect, shared with the tests (fixtures/): every scan
    // meets a hand-written CRLF document with comments (the full YAML parser's path) and
    // three it must skip with a warning (an alias bomb, bytes that are not UTF-8, broken
    // YAML).
    for (name, id) in [
        ("crlf-hand-written.md", "t-hand"),
        ("alias-bomb.md", "t-bomb"),
        ("not-utf8.md", "t-bin"),
        ("unclosed-bracket.md", "t-bad"),
    ] {
        std::fs::write(tasks.join(format!("{id}.md")), fixtures::read(name)).unwrap();
    }
    std::fs::write(board.join("log.yaml"), &log).unwrap();
    Built { board, claimable }
}

/// The baseline for reading the log: read log.yaml raw, in this process.
fn read_log_raw(board: &Path) -> usize {
    std::fs::read(board.join("log.yaml")).unwrap().len()
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
    /// CPU time (user + system) of the command and of its baseline, when measured.
    cpu: Option<Duration>,
    base_cpu: Option<Duration>,
    /// Peak resident set of the command, KiB, when measured.
    rss_kib: Option<u64>,
    /// The target ratio, when this row has one.
    target: Option<f64>,
    /// What else the row measured (sizes on disk, progress lines).
    note: String,
}

fn sizes() -> Vec<usize> {
    let Ok(s) = std::env::var("TAVERN_BENCH_SIZES") else {
        return vec![1_000, 10_000, 100_000];
    };
    s.split(',')
        .filter(|n| !n.trim().is_empty())
        .map(|n| {
            n.trim().parse().unwrap_or_else(|_| {
                eprintln!("error: TAVERN_BENCH_SIZES={s}: '{n}' is not a number");
                std::process::exit(2)
            })
        })
        .collect()
}

fn main() {
    // `cargo bench` passes --bench (and maybe a filter); there is nothing to filter.
    let bin = tavern_bin();
    // `TAVERN_BENCH_BOARD=DIR`: a kept board, timed instead of a built one.
    let reuse = std::env::var_os("TAVERN_BENCH_BOARD")
        .filter(|d| !d.is_empty())
        .map(|d| scale::load_board(Path::new(&d)));
    let sizes = match &reuse {
        Some((_, n)) => vec![*n],
        None => sizes(),
    };
    let runs: usize = std::env::var("TAVERN_BENCH_RUNS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(15)
        .max(1);
    eprintln!("timing {}", bin.display());

    // `TAVERN_BENCH_ONLY=search`: the search rows alone (board/search.rs).
    if std::env::var("TAVERN_BENCH_ONLY").is_ok_and(|v| v == "search") {
        let load = search::loadavg();
        let rows: Vec<_> = sizes
            .iter()
            .flat_map(|&n| search::run(&bin, n, runs))
            .collect();
        let mut report = format!("# tavern benchmark\n\nBinary: `{}`.\n", bin.display());
        search::render(&rows, &load, &mut report);
        println!("{report}");
        return;
    }

    // `TAVERN_BENCH_ONLY=check`: the check rows alone.
    if std::env::var("TAVERN_BENCH_ONLY").is_ok_and(|v| v == "check") {
        let load = search::loadavg();
        let rows = time_check_only(&bin, &sizes, reuse, runs);
        let mut report = render(&rows, &[], &bin);
        writeln!(
            report,
            "\nLoad before: {load}; after: {}.",
            search::loadavg()
        )
        .unwrap();
        println!("{report}");
        return;
    }

    let true_bin = if Path::new("/bin/true").exists() {
        "/bin/true"
    } else {
        "true"
    };

    // The watch sizes not among the command sizes get a board of their own.
    let reused = reuse.is_some();
    let only_if_asked = |name: &str, sizes: Vec<usize>| {
        if reused && std::env::var_os(name).is_none() {
            Vec::new()
        } else {
            sizes
        }
    };
    let watch_sizes = only_if_asked("TAVERN_BENCH_WATCH_SIZES", watch::sizes());
    let web_sizes = only_if_asked("TAVERN_BENCH_WEB_SIZES", web::sizes());
    let mut all = sizes.clone();
    all.extend(watch_sizes.iter().filter(|n| !sizes.contains(n)));
    let known = all.clone();
    all.extend(web_sizes.iter().filter(|n| !known.contains(n)));

    let only_mcp = std::env::var("TAVERN_BENCH_ONLY").is_ok_and(|v| v == "mcp");
    let watch_sizes = if only_mcp { Vec::new() } else { watch_sizes };
    let web_sizes = if only_mcp { Vec::new() } else { web_sizes };
    all.retain(|n| sizes.contains(n) || watch_sizes.contains(n) || web_sizes.contains(n));
    let mut rows = Vec::new();
    let mut watch_rows = Vec::new();
    let mut mcp_rows = Vec::new();
    let mut mcp_sizes = Vec::new();
    let mut web_rows = Vec::new();
    let mut reuse = reuse;
    for &n in &all {
        let keep = std::env::var_os("TAVERN_BENCH_KEEP").is_some();
        let (dir, built) = match reuse.take() {
            Some((built, n)) => {
                eprintln!(
                    "{n} tasks: the board in {} (TAVERN_BENCH_BOARD), {} claimable",
                    built.board.display(),
                    built.claimable.len()
                );
                (None, built)
            }
            None => {
                let dir = tempfile::tempdir().unwrap();
                let t = Instant::now();
                let built = build_board(&bin, dir.path(), n);
                eprintln!(
                    "{n} tasks: board built in {:.1} s",
                    t.elapsed().as_secs_f64()
                );
                (Some(dir), built)
            }
        };
        let dir_path = built.board.parent().unwrap().to_path_buf();
        let b = Bench {
            bin: bin.clone(),
            board: built.board.clone(),
        };
        let raw = (sizes.contains(&n) && !only_mcp)
            .then(|| time_commands(&b, &built, n, runs, true_bin, &mut rows));
        // `TAVERN_BENCH_MCP=0` leaves the MCP table out.
        let mcp_on = std::env::var("TAVERN_BENCH_MCP").map_or(true, |v| v != "0");
        if sizes.contains(&n) && mcp_on {
            if mcp_sizes.is_empty() {
                mcp_sizes = mcp::tools_list_sizes(&b);
            }
            mcp_rows.extend(mcp::time(&b, &built, n, runs, runs + 1));
        }
        if watch_sizes.contains(&n) {
            watch_rows.extend(watch::run(&b, &dir_path, n, raw));
        }
        if web_sizes.contains(&n) {
            web_rows.extend(web::run(&b, n, raw));
        }
        if keep && let Some(dir) = dir {
            eprintln!("{n} tasks: board kept in {}", dir.keep().display());
        }
    }

    let claim_rows = if reused && std::env::var_os("TAVERN_BENCH_CLAIMS").is_none() {
        Vec::new()
    } else {
        claims::run(&bin)
    };
    let sync_rows = if reused && std::env::var_os("TAVERN_BENCH_SYNC_SIZES").is_none() {
        Vec::new()
    } else {
        sync::run(&bin)
    };
    let mut report = render(&rows, &watch_rows, &bin);
    mcp::render(&mcp_rows, &mcp_sizes, &mut report);
    claims::render(&claim_rows, &mut report);
    sync::render(&sync_rows, &mut report);
    web::render(&web_rows, &mut report);
    println!("{report}");
    let target_dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("target");
    let _ = std::fs::create_dir_all(&target_dir);
    let path = target_dir.join("bench-report.md");
    match std::fs::write(&path, &report) {
        Ok(()) => eprintln!("report written to {}", path.display()),
        Err(e) => eprintln!("warning: cannot write {}: {e}", path.display()),
    }
}

/// Times the commands at one size, each beside its baselines, and adds their rows; returns
/// the median of reading every task file raw (the watch rows compare against it too).
fn time_commands(
    b: &Bench,
    built: &Built,
    n: usize,
    runs: usize,
    true_bin: &str,
    rows: &mut Vec<Row>,
) -> Duration {
    assert!(
        built.claimable.len() > runs + 1,
        "board of {n} has too few claimable tasks"
    );
    let t = Instant::now();

    // Commands that touch one document, interleaved with their baselines so that all
    // see the same machine (a shared machine's load drifts); round 0 warms up.
    let mut samples: [Vec<Duration>; 5] = Default::default();
    for i in 0..=runs {
        let doc = format!("task-{:06}", i * 7919 % n);
        let round = [
            timed(&mut Command::new(true_bin)),
            timed(Command::new("cat").arg(built.board.join(format!("tasks/{doc}.md")))),
            b.time(&["show", &doc]),
            b.time(&["claim", &built.claimable[i]]),
            b.time(&["new", "task", "--title", &format!("New task {i}")]),
        ];
        if i > 0 {
            for (s, d) in samples.iter_mut().zip(round) {
                s.push(d);
            }
        }
    }
    let [spawn, cat, show, claim, new] = samples.map(median);

    // Commands that read the whole board, interleaved with reading it raw in-process
    // (the first read warms the page cache, as on a board in use).
    let scan_runs = if n >= 1_000_000 {
        runs.min(5)
    } else if n >= 100_000 {
        5
    } else {
        9
    };
    // The read index and the search index built from nothing (board/scale.rs): first, so
    // that on a fresh board no index is built twice.
    scale::from_nothing(b, n, rows);
    // `deps` of a task no claim row takes.
    let deps_id = built.claimable.last().expect("a claimable task");
    let [raw, list, next, search, ready, deps, summary, check] =
        time_reads(b, &built.board, deps_id, scan_runs);

    // The watcher's own state: a first start, then a restart with nothing changed.
    scale::watch_once(b, n, rows);

    // The same reads with `tavern watch` running: they go by its change journal instead
    // of a statat per file (README, "The read index"). Timed once it watches (its first
    // look at the board done).
    let mut watcher = Command::new(&b.bin)
        .args(["watch", "--json"])
        .current_dir(built.board.parent().unwrap())
        .env("TAVERN_AGENT", "bench")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("start tavern watch");
    let lines = std::io::BufReader::new(watcher.stdout.take().unwrap());
    let watching = std::io::BufRead::lines(lines)
        .map_while(|l| l.ok())
        .any(|l| l.contains("\"event\":\"watching\""));
    assert!(watching, "tavern watch ended before it watched");
    assert!(
        built.board.join(".state/journal").exists(),
        "tavern watch kept no journal"
    );
    let [
        w_raw,
        w_list,
        w_next,
        w_search,
        w_ready,
        w_deps,
        w_summary,
        w_check,
    ] = time_reads(b, &built.board, deps_id, scan_runs);
    let _ = watcher.kill();
    let _ = watcher.wait();

    // The same reads with the index keeper running (what a read of a big board starts
    // when no watcher runs: README, "The read index"), started here as a read would.
    let mut keeper = Command::new(&b.bin)
        .args(["watch", "--keeper"])
        .env("TAVERN_BOARD", &built.board)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start the index keeper");
    let kept = wait_for_keeper(&mut keeper, &built.board);
    let [
        k_raw,
        k_list,
        k_next,
        k_search,
        k_ready,
        k_deps,
        k_summary,
        _k_check,
    ] = if kept {
        time_reads(b, &built.board, deps_id, scan_runs)
    } else {
        [w_raw; 8]
    };
    let _ = keeper.kill();
    let _ = keeper.wait();

    // Reading the log: what an agent's `events` or a human's `log --since` costs, beside
    // reading log.yaml raw in-process.
    let mut samples: [Vec<Duration>; 3] = Default::default();
    let since = (n - 10).to_string();
    let doc = format!("task-{:06}", n / 2);
    for i in 0..=scan_runs {
        let raw = Instant::now();
        std::hint::black_box(read_log_raw(&built.board));
        let round = [
            raw.elapsed(),
            b.time(&["log", "--since", &since]),
            b.time(&["log", "--doc", &doc]),
        ];
        if i > 0 {
            for (s, d) in samples.iter_mut().zip(round) {
                s.push(d);
            }
        }
    }
    let [log_raw, log_since, log_doc] = samples.map(median);
    eprintln!("{n} tasks: timed in {:.1} s", t.elapsed().as_secs_f64());

    let at = |size: usize, ratio: f64| (n == size).then_some(ratio);
    let mut row = |op: &str, m: Sample, baseline, base: Sample, target| {
        rows.push(Row {
            op: op.into(),
            size: n,
            median: m.wall,
            cpu: m.cpu,
            rss_kib: m.rss_kib,
            baseline,
            base: base.wall,
            base_cpu: base.cpu,
            target,
            note: String::new(),
        })
    };
    let [spawn, cat, show, claim, new, log_raw, log_since, log_doc] =
        [spawn, cat, show, claim, new, log_raw, log_since, log_doc].map(Sample::wall);
    row("show ID", show, "/bin/true", spawn, at(10_000, 3.0));
    row("claim ID", claim, "/bin/true", spawn, at(10_000, 3.0));
    row("new task", new, "/bin/true", spawn, None);
    row("cat FILE", cat, "/bin/true", spawn, None);
    row("show ID", show, "cat FILE", cat, None);
    row(
        "list tasks status=pending priority<=1",
        list,
        "read all raw",
        raw,
        at(100_000, 0.25),
    );
    row("claim --next", next, "read all raw", raw, None);
    row("search parser input", search, "read all raw", raw, None);
    row(
        "list tasks status=pending priority<=1 (watcher running)",
        w_list,
        "read all raw",
        w_raw,
        at(100_000, 0.25),
    );
    row(
        "claim --next (watcher running)",
        w_next,
        "read all raw",
        w_raw,
        None,
    );
    row(
        "search parser input (watcher running)",
        w_search,
        "read all raw",
        w_raw,
        None,
    );
    row("ready", ready, "read all raw", raw, None);
    row("deps ID", deps, "read all raw", raw, None);
    row("summary", summary, "read all raw", raw, None);
    row("check", check, "read all raw", raw, None);
    row(
        "ready (watcher running)",
        w_ready,
        "read all raw",
        w_raw,
        None,
    );
    row(
        "deps ID (watcher running)",
        w_deps,
        "read all raw",
        w_raw,
        None,
    );
    row(
        "summary (watcher running)",
        w_summary,
        "read all raw",
        w_raw,
        None,
    );
    row(
        "check (watcher running)",
        w_check,
        "read all raw",
        w_raw,
        None,
    );
    for (op, m) in [
        ("list tasks status=pending priority<=1", k_list),
        ("claim --next", k_next),
        ("search parser input", k_search),
        ("ready", k_ready),
        ("deps ID", k_deps),
        ("summary", k_summary),
    ] {
        if kept {
            let target = (op.starts_with("list") && n == 100_000).then_some(0.25);
            row(
                &format!("{op} (keeper running)"),
                m,
                "read all raw",
                k_raw,
                target,
            );
        }
    }
    row("read all raw (in-process)", raw, "/bin/true", spawn, None);
    row(
        "log --since (last 10 entries)",
        log_since,
        "/bin/true",
        spawn,
        None,
    );
    row("log --doc ID", log_doc, "read log raw", log_raw, None);
    row(
        "read log raw (in-process)",
        log_raw,
        "/bin/true",
        spawn,
        None,
    );
    raw.wall
}

/// Waits until the index keeper just started keeps the board's journal: false when it
/// ended first (a tavern older than the keeper refuses `--keeper`), and its rows are left out.
pub fn wait_for_keeper(keeper: &mut std::process::Child, board: &Path) -> bool {
    let started = Instant::now();
    while !journal_is_live(board) {
        if keeper.try_wait().is_ok_and(|s| s.is_some()) {
            eprintln!("the index keeper ended at once (a tavern without one?): no keeper rows");
            return false;
        }
        assert!(
            started.elapsed() < Duration::from_secs(600),
            "the index keeper kept no journal"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    true
}

/// Does a writer (a watcher or the index keeper) keep the board's change journal: its file
/// there, and locked?
pub fn journal_is_live(board: &Path) -> bool {
    std::fs::File::open(board.join(".state/journal"))
        .is_ok_and(|f| matches!(f.try_lock_shared(), Err(std::fs::TryLockError::WouldBlock)))
}

/// A row's measure: the median wall time, and when measured the median CPU time and the
/// highest peak resident set (KiB) over the runs.
#[derive(Clone, Copy)]
struct Sample {
    wall: Duration,
    cpu: Option<Duration>,
    rss_kib: Option<u64>,
}

impl Sample {
    fn wall(wall: Duration) -> Sample {
        Sample {
            wall,
            cpu: None,
            rss_kib: None,
        }
    }
}

/// `list` with a query, `claim --next`, `search`, `ready`, `deps ID`, `summary` and
/// `check`, each round beside reading every task file raw in-process; round 0 warms up.
/// [raw, list, next, search, ready, deps, summary, check].
fn time_reads(b: &Bench, board: &Path, deps_id: &str, runs: usize) -> [Sample; 8] {
    let mut samples: [Vec<scale::Run>; 8] = Default::default();
    for i in 0..=runs {
        let (wall, cpu) = scale::raw_read(board);
        let round = [
            scale::Run {
                wall,
                cpu: Some(cpu),
                rss_kib: None,
                stderr: String::new(),
            },
            scale::measured(&b.tavern(&["list", "tasks", "status=pending", "priority<=1"])),
            scale::measured(&b.tavern(&["claim", "--next"])),
            scale::measured(&b.tavern(&["search", "parser", "input"])),
            scale::measured(&b.tavern(&["ready"])),
            scale::measured(&b.tavern(&["deps", deps_id])),
            scale::measured(&b.tavern(&["summary"])),
            scale::measured_check(&b.tavern(&["check"])),
        ];
        if i > 0 {
            for (s, d) in samples.iter_mut().zip(round) {
                s.push(d);
            }
        }
    }
    samples.map(sample)
}

/// The median wall and CPU time of runs, and their highest peak.
fn sample(runs: Vec<scale::Run>) -> Sample {
    Sample {
        wall: median(runs.iter().map(|r| r.wall).collect()),
        cpu: runs
            .iter()
            .map(|r| r.cpu)
            .collect::<Option<Vec<_>>>()
            .map(median),
        rss_kib: runs.iter().filter_map(|r| r.rss_kib).max(),
    }
}

/// `TAVERN_BENCH_ONLY=check`: `check` alone at each size (a board built, or the one of
/// TAVERN_BENCH_BOARD), each round beside reading every task file raw in-process, no
/// watcher; round 0 warms up. `check` changes no document, so a kept board can be timed
/// as it is.
fn time_check_only(
    bin: &Path,
    sizes: &[usize],
    mut reuse: Option<(Built, usize)>,
    runs: usize,
) -> Vec<Row> {
    let mut rows = Vec::new();
    for &n in sizes {
        let mut dir = None;
        let built = match reuse.take() {
            Some((built, _)) => built,
            None => {
                let d = tempfile::tempdir().unwrap();
                let built = build_board(bin, d.path(), n);
                dir = Some(d);
                built
            }
        };
        let b = Bench {
            bin: bin.to_path_buf(),
            board: built.board.clone(),
        };
        let mut raw_runs = Vec::new();
        let mut check_runs = Vec::new();
        for i in 0..=runs {
            let (wall, cpu) = scale::raw_read(&built.board);
            let check = scale::measured_check(&b.tavern(&["check"]));
            if i > 0 {
                raw_runs.push(scale::Run {
                    wall,
                    cpu: Some(cpu),
                    rss_kib: None,
                    stderr: String::new(),
                });
                check_runs.push(check);
            }
        }
        let (raw, check) = (sample(raw_runs), sample(check_runs));
        rows.push(Row {
            op: "check".into(),
            size: n,
            median: check.wall,
            cpu: check.cpu,
            rss_kib: check.rss_kib,
            baseline: "read all raw",
            base: raw.wall,
            base_cpu: raw.cpu,
            target: None,
            note: String::new(),
        });
        drop(dir);
    }
    rows
}

fn render(rows: &[Row], watch_rows: &[watch::Row], bin: &Path) -> String {
    let mut out = format!(
        "# tavern benchmark\n\nBinary: `{}`; {} cores; medians of real process runs, baselines measured in the same run.\n\n",
        bin.display(),
        std::thread::available_parallelism().map_or(1, |n| n.get())
    );
    out.push_str(
        "CPU is user + system (10 ms resolution; of this process for the in-process baselines); peak is the highest resident set over the runs.\n\n",
    );
    out.push_str(
        "| operation | tasks | median ms | CPU ms | peak MiB | baseline | baseline ms | ratio | CPU ratio | target | result | notes |\n",
    );
    out.push_str("|---|---:|---:|---:|---:|---|---:|---:|---:|---:|---|---|\n");
    let opt = |v: Option<f64>, f: &dyn Fn(f64) -> String| v.map_or_else(String::new, f);
    for r in rows {
        let ratio = r.median.as_secs_f64() / r.base.as_secs_f64();
        let (target, verdict) = match r.target {
            Some(t) => (format!("≤ {t}x"), if ratio <= t { "PASS" } else { "MISS" }),
            None => (String::new(), ""),
        };
        let cpu_ratio = r
            .cpu
            .zip(r.base_cpu)
            .filter(|(_, b)| !b.is_zero())
            .map(|(c, b)| c.as_secs_f64() / b.as_secs_f64());
        writeln!(
            out,
            "| {} | {} | {:.2} | {} | {} | {} | {:.2} | {:.2}x | {} | {} | {} | {} |",
            r.op,
            r.size,
            ms(r.median),
            opt(r.cpu.map(ms), &|v| format!("{v:.0}")),
            opt(r.rss_kib.map(|k| k as f64 / 1024.0), &|v| format!("{v:.1}")),
            r.baseline,
            ms(r.base),
            ratio,
            opt(cpu_ratio, &|v| format!("{v:.2}x")),
            target,
            verdict,
            r.note
        )
        .unwrap();
    }
    watch::render(watch_rows, &mut out);
    out
}
