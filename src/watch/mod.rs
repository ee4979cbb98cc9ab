//! Watch mode (DESIGN §9): notice every change to the board, hand edits included, log what
//! did not come through tavern, and start the knowledge sources that registered for it.
//!
//! The pieces, in the order a change goes through them:
//! [`fsevents`] (where to look) → [`reconcile`] (what changed, by whom; external edits
//! logged) → [`scheduler`] (which sources, loop guard, queue) → [`runner`] (the commands)
//! → [`report`] (schedule.md, metrics.md). [`areas`] says what is tracked, [`snapshot`]
//! what was last seen, [`patch`] replays logged diffs, [`sources`] reads the sources.

pub mod areas;
pub mod feed;
pub mod fsevents;
pub mod lock;
pub mod patch;
pub mod reconcile;
pub mod report;
pub mod runner;
pub mod scheduler;
pub mod snapshot;
pub mod sources;
pub mod starting;

use std::collections::HashSet;
use std::io::Write as _;
use std::path::PathBuf;
use std::sync::mpsc::{Receiver, RecvTimeoutError, Sender};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::board::Board;
use crate::error::{Error, Result};
use crate::log::Entry;
use fsevents::{Backlog, Look, Msg, Native};
use lock::WatchLock;
use reconcile::{Change, Outcome, Reconciler, WATCHER};
use scheduler::{Activation, Guard, Offer, Running, Scheduler};
use sources::Source;

/// How long a burst of events may keep arriving before the watcher looks (the first
/// event of a quiet board is handled after at most this long).
const DEBOUNCE: Duration = Duration::from_millis(10);
/// The longest a continuing burst delays handling.
const DEBOUNCE_MAX: Duration = Duration::from_millis(50);
/// How often schedule.md and metrics.md may be rewritten.
const REPORT_EVERY: Duration = Duration::from_millis(250);
/// How often the queue and the handled changes' shadows are saved while changes come in.
const PERSIST_EVERY: Duration = Duration::from_millis(100);
/// How often the log cursor and metrics are saved while changes come in.
const SAVE_EVERY: Duration = Duration::from_secs(1);
/// How often the snapshot is: it only saves reading unchanged files at the next start (the
/// shadows are what says a change was handled), and on a big board it is megabytes.
const SNAPSHOT_EVERY: Duration = Duration::from_secs(30);
/// The poll interval when the native watcher fails and no --poll was given.
const FALLBACK_POLL: Duration = Duration::from_secs(2);
/// When looking at a file failed (a lock, a read), how long before looking again.
const RETRY_AFTER: Duration = Duration::from_secs(1);
const RETRIES: u32 = 3;
/// At the end, how many times to read the log and handle what it names before stopping.
const DRAIN_ROUNDS: usize = 5;
/// How often old run outputs are removed (also once at start).
const PRUNE_EVERY: Duration = Duration::from_secs(3600);
/// How often the watcher checks that its board and its lock are still there.
const CHECK_EVERY: Duration = Duration::from_secs(1);
/// After killing the activations at shutdown, how long to wait for them to be reaped.
const REAP_WAIT: Duration = Duration::from_secs(5);

#[derive(Clone, Debug)]
pub struct Options {
    /// Handle what is pending, wait for the activations, and return.
    pub once: bool,
    /// Activations running at once, in all.
    pub jobs: usize,
    /// Poll every DUR instead of using the native watcher.
    pub poll: Option<Duration>,
    /// At SIGINT/SIGTERM, how long running activations may finish before they are killed.
    pub grace: Duration,
    /// JSON lines instead of text.
    pub json: bool,
}

/// How a run of the watcher ended.
#[derive(Debug, Default)]
pub struct Summary {
    /// Activations that failed, timed out or were killed.
    pub failed: usize,
    /// Activations that ran.
    pub ran: usize,
    /// Activations left waiting because the board is paused.
    pub held: usize,
    /// Activations the loop guard stopped (each logged as an alert): they did not run.
    pub guarded: usize,
}

/// Runs the watcher until SIGINT/SIGTERM (or, with `once`, until nothing is pending).
pub fn run(board: Board, opts: Options) -> Result<Summary> {
    let lock = WatchLock::acquire(&board)?;
    let (tx, rx) = std::sync::mpsc::channel();
    listen_for_signals(tx.clone());
    let mut w = Watch::open(board, opts, tx, lock)?;
    w.run(rx)?;
    Ok(w.summary)
}

fn listen_for_signals(tx: Sender<Msg>) {
    use signal_hook::consts::{SIGINT, SIGTERM};
    let Ok(mut signals) = signal_hook::iterator::Signals::new([SIGINT, SIGTERM]) else {
        return;
    };
    std::thread::spawn(move || {
        for sig in signals.forever() {
            if tx.send(Msg::Signal(sig)).is_err() {
                break;
            }
        }
    });
}

struct Watch {
    board: Board,
    opts: Options,
    rec: Reconciler,
    sched: Scheduler,
    sources: Vec<Source>,
    metrics: report::Metrics,
    guard: Guard,
    tx: Sender<Msg>,
    backlog: Backlog,
    native: Option<Native>,
    /// Poll mode: the interval and the next rescan.
    poll: Option<(Duration, Instant)>,
    /// Paths to look at again later (written half a moment ago and invalid, or a look
    /// that failed).
    deferred: Vec<(String, Instant)>,
    /// Failed looks per path.
    retries: std::collections::HashMap<String, u32>,
    paused: Option<String>,
    /// When stopping: the end of the grace period, and whether the rest was killed.
    stopping: Option<(Instant, bool)>,
    report_dirty: bool,
    last_report: Instant,
    /// When the queue and the shadows of what was handled must be saved.
    persist_due: Option<Instant>,
    state_dirty: bool,
    last_save: Instant,
    last_snapshot: Instant,
    /// When old run outputs were last removed; `None` until the first time, at start.
    last_prune: Option<Instant>,
    lock: WatchLock,
    /// The board directory's identity when the watcher started.
    root_id: Option<(u64, u64)>,
    /// Files with names that are not UTF-8, already reported.
    undecodable: HashSet<PathBuf>,
    /// When the board and the lock were last checked to be still there.
    last_check: Instant,
    summary: Summary,
}

impl Watch {
    fn open(board: Board, opts: Options, tx: Sender<Msg>, lock: WatchLock) -> Result<Watch> {
        fsevents::ensure_dirs(&board);
        let guard = Guard {
            max_chain: board.config.watch.max_chain,
            max_per_doc: board.config.watch.max_per_doc,
            rate_window: crate::time::parse_duration(&board.config.watch.rate_window)
                .and_then(|d| d.to_std().ok())
                .unwrap_or(Duration::from_secs(600)),
        };
        let backlog = Backlog::default();
        let mut w = Watch {
            rec: Reconciler::open(board.clone())?,
            sched: Scheduler::load(&board),
            sources: Vec::new(),
            metrics: report::Metrics::load(&board),
            guard,
            tx: tx.clone(),
            backlog: backlog.clone(),
            native: None,
            poll: None,
            deferred: Vec::new(),
            retries: Default::default(),
            paused: board.paused(),
            stopping: None,
            report_dirty: true,
            last_report: Instant::now() - REPORT_EVERY,
            state_dirty: false,
            persist_due: None,
            last_save: Instant::now(),
            last_snapshot: Instant::now(),
            last_prune: None,
            lock,
            root_id: dir_id(&board.root),
            undecodable: HashSet::new(),
            last_check: Instant::now(),
            summary: Summary::default(),
            board,
            opts,
        };
        w.load_sources(true);
        // The watcher starts before the first scan, so nothing written meanwhile is missed.
        let mode = if w.opts.once {
            "once".to_string()
        } else if let Some(every) = w.opts.poll {
            w.poll = Some((every, Instant::now() + every));
            format!("polling every {}", human_duration(every))
        } else {
            match Native::start(&w.board, tx, backlog, fsevents::Extra::default()) {
                Ok(n) => {
                    w.native = Some(n);
                    "native file events".to_string()
                }
                Err(e) => {
                    w.warn(format!(
                        "the native file watcher failed: {}\npolling every {} instead",
                        fsevents::explain(&e),
                        human_duration(FALLBACK_POLL)
                    ));
                    w.poll = Some((FALLBACK_POLL, Instant::now() + FALLBACK_POLL));
                    format!("polling every {}", human_duration(FALLBACK_POLL))
                }
            }
        };
        let names: Vec<&str> = w.sources.iter().map(|s| s.name.as_str()).collect();
        w.say(
            "watching",
            json!({"board": w.board.root, "mode": mode, "sources": names, "waiting": w.sched.queue.len()}),
            format!(
                "watching {} ({mode}; {} source{}{})",
                w.board.root.display(),
                names.len(),
                if names.len() == 1 { "" } else { "s" },
                if names.is_empty() {
                    String::new()
                } else {
                    format!(": {}", names.join(", "))
                }
            ),
        );
        Ok(w)
    }

    fn run(&mut self, rx: Receiver<Msg>) -> Result<()> {
        self.log_lost()?;
        // What changed while no watcher ran: handled now, once.
        self.rec.rescan();
        self.rec.catch_up()?;
        self.rec.mark_catching_up();
        self.process()?;
        loop {
            self.tick()?;
            // One instant for deciding what starts and how long to sleep: a cooldown that
            // ends in between would otherwise be seen by neither.
            let now = Instant::now();
            self.start_ready(now)?;
            if self.done() {
                break;
            }
            let wait = self
                .next_wake(now)
                .saturating_duration_since(Instant::now());
            match rx.recv_timeout(wait) {
                Ok(msg) => {
                    let mut msgs = vec![msg];
                    if matches!(msgs[0], Msg::Paths(_)) {
                        collect_burst(&rx, &mut msgs);
                    }
                    for msg in msgs {
                        self.handle(msg)?;
                    }
                }
                Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => break,
            }
            self.tick()?;
            if !self.rec.hints.is_empty() {
                self.process()?;
            }
        }
        self.shutdown()
    }

    /// Nothing left to do: stopping and nothing runs, or (`--once`) nothing pending.
    fn done(&self) -> bool {
        let idle = self.sched.running.is_empty();
        match self.stopping {
            Some((grace_end, _)) => idle || Instant::now() > grace_end + REAP_WAIT,
            None => {
                self.opts.once
                    && idle
                    && self.rec.hints.is_empty()
                    && self.deferred.is_empty()
                    && (self.sched.queue.is_empty() || self.paused.is_some())
            }
        }
    }

    fn next_wake(&self, now: Instant) -> Instant {
        let mut wake = now + Duration::from_secs(3600);
        let mut at = |t: Option<Instant>| {
            if let Some(t) = t {
                wake = wake.min(t);
            }
        };
        at(self.sched.next_deadline());
        at(self.sched.next_cooldown_end(&self.sources, now));
        at(self.deferred.iter().map(|(_, t)| *t).min());
        at(self.poll.map(|(_, t)| t));
        at(self
            .stopping
            .map(|(t, killed)| if killed { t + REAP_WAIT } else { t }));
        if self.report_dirty {
            at(Some(self.last_report + REPORT_EVERY));
        }
        if self.state_dirty {
            at(Some(self.last_save + SAVE_EVERY));
        }
        at(self.persist_due);
        at(Some(self.last_check + CHECK_EVERY));
        wake
    }

    fn handle(&mut self, msg: Msg) -> Result<()> {
        if self.board_gone() {
            self.still_there()?;
        }
        match msg {
            Msg::Paths(paths) => {
                self.backlog.taken();
                for p in paths {
                    self.hint(p);
                }
            }
            Msg::Rescan => self.rec.rescan(),
            Msg::Failed(e) => {
                self.warn(format!(
                    "the native file watcher failed: {}\npolling every {} from now on",
                    fsevents::explain(&e),
                    human_duration(FALLBACK_POLL)
                ));
                self.native = None;
                self.poll = Some((FALLBACK_POLL, Instant::now()));
            }
            Msg::Exited { id, status } => self.finished(id, status)?,
            Msg::Signal(_) => match self.stopping {
                None => {
                    let n = self.sched.running.len();
                    self.say(
                        "stopping",
                        json!({"running": n, "grace_ms": self.opts.grace.as_millis() as u64}),
                        format!(
                            "stopping: no new activations; {n} running may finish within {}",
                            human_duration(self.opts.grace)
                        ),
                    );
                    self.stopping = Some((Instant::now() + self.opts.grace, false));
                }
                // A second signal: do not wait for the grace period.
                Some(_) => self.stopping = Some((Instant::now(), false)),
            },
        }
        Ok(())
    }

    /// A path the native watcher named: the file, or everything under a directory.
    fn hint(&mut self, path: PathBuf) {
        for look in fsevents::looks(&self.board, &path) {
            match look {
                Look::File(rel) => {
                    self.rec.hints.insert(rel);
                }
                Look::Under(rel) => self.rec.rescan_dir(&rel),
                Look::GoneUnder(rel) => self.rec.forget_dir(&rel),
                Look::Rewatch(dir) => {
                    if let Some(n) = &mut self.native {
                        n.rewatch(&self.board, &dir);
                    }
                }
                Look::Undecodable(path) => self.undecodable(&path),
            }
        }
    }

    /// A file whose name is not UTF-8 where documents live cannot be tracked (its path is
    /// not text for the log): an alert, once per path, rather than silence.
    fn undecodable(&mut self, path: &std::path::Path) {
        let Ok(rel) = path.strip_prefix(&self.board.root) else {
            return;
        };
        let lossy = rel.to_string_lossy().into_owned();
        if lossy.split('/').any(areas::is_noise)
            || areas::classify(&lossy).is_none()
            || std::fs::symlink_metadata(path).is_err()
            || !self.undecodable.insert(path.to_path_buf())
        {
            return;
        }
        let note =
            format!("{lossy}: file name is not valid UTF-8; tavern cannot track it (rename it)");
        if let Err(e) = self.rec.alert(&lossy, WATCHER, note) {
            self.warn(format!("cannot log an alert: {e}"));
        }
        self.show_notices();
    }

    /// Handles every hinted path: logs what was changed outside tavern, offers each change
    /// to the sources, then records the batch as handled.
    fn process(&mut self) -> Result<()> {
        // A removed board shows up as a burst of deletions: not to be logged into a new
        // log.yaml where the board was.
        if self.board_gone() {
            self.still_there()?;
        }
        if let Err(e) = self.rec.catch_up() {
            self.warn(format!("cannot read the log: {e}"));
        }
        while let Some(rel) = self.rec.hints.pop_first() {
            let outcome = self.rec.reconcile(&rel);
            self.show_notices();
            if self.rec.sources_changed {
                self.rec.sources_changed = false;
                self.load_sources(false);
            }
            match outcome {
                Ok(Outcome::Handled(changes)) => {
                    self.retries.remove(&rel);
                    for c in changes {
                        self.offer(c)?;
                    }
                }
                Ok(Outcome::Deferred(after)) => {
                    self.deferred.push((rel, Instant::now() + after));
                }
                Err(e) => {
                    // A lock or a read failed: look again in a moment rather than lose it,
                    // a few times.
                    let tries = self.retries.entry(rel.clone()).or_default();
                    *tries += 1;
                    if *tries <= RETRIES {
                        self.warn(format!("{rel}: {e} (will look again)"));
                        self.deferred.push((rel, Instant::now() + RETRY_AFTER));
                    } else {
                        self.warn(format!("{rel}: {e} (gave up until it changes again)"));
                        self.retries.remove(&rel);
                        self.summary.failed += 1;
                    }
                }
            }
        }
        self.persist_due
            .get_or_insert(Instant::now() + PERSIST_EVERY);
        self.state_dirty = true;
        self.report_dirty = true;
        Ok(())
    }

    /// Reads the log to its end before the cursor is saved for the last time: the entries
    /// the watcher appended itself are then behind it, and a next start does not read them
    /// as left over from a run that stopped half-way. Changes other writers logged in the
    /// meantime are handled first (a few rounds at most, while they keep writing).
    fn drain_log(&mut self) -> Result<()> {
        for _ in 0..DRAIN_ROUNDS {
            self.rec.catch_up()?;
            if self.rec.hints.is_empty() {
                return Ok(());
            }
            self.process()?;
        }
        Ok(())
    }

    /// Saves the queue, then writes the shadows of the changes handled since: a crash in
    /// between handles those changes again at the next start, and never loses them. Done
    /// at most every PERSIST_EVERY while changes pour in (the queue file holds every
    /// waiting activation; writing it per batch of a burst would cost its square).
    fn persist(&mut self) -> Result<()> {
        self.sched.save(&self.board)?;
        for problem in self.rec.commit() {
            // Such a change is handled again at the next start: a repeat, not a loss.
            self.warn(problem);
        }
        self.persist_due = None;
        Ok(())
    }

    fn offer(&mut self, c: Change) -> Result<()> {
        let events: Vec<String> = c.events.iter().map(|e| e.name()).collect();
        let by = match &c.actor {
            Some(actor) => format!("by {actor}"),
            None => "outside tavern".to_string(),
        };
        // In text, a change made outside tavern already has its external-edit line; only
        // a transition is news.
        let shown: Vec<&String> = events
            .iter()
            .filter(|e| self.opts.json || c.actor.is_some() || e.starts_with("transition:"))
            .collect();
        if !shown.is_empty() {
            let shown: Vec<&str> = shown.iter().map(|e| e.as_str()).collect();
            self.say(
                "change",
                json!({"doc": c.tracked.rel, "events": events, "actor": c.actor, "seq": c.seq}),
                format!(
                    "{}: {} {by} (seq {})",
                    c.tracked.rel,
                    shown.join(", "),
                    c.seq
                ),
            );
        }
        let offers = self
            .sched
            .offer(&c, &self.sources, &self.guard, Instant::now());
        for offer in offers {
            match offer {
                Offer::Queued(a) => self.say(
                    "queued",
                    activation_json(&a),
                    format!("{}: queued for {} ({})", a.source, a.doc, a.event),
                ),
                Offer::Merged(a) => self.say(
                    "merged",
                    activation_json(&a),
                    format!("{}: already waiting for {}", a.source, a.doc),
                ),
                Offer::OwnWrite { source } => {
                    self.metrics.source(&source).own_writes += 1;
                    self.say(
                        "skipped",
                        json!({"source": source, "doc": c.tracked.rel, "why": "own write", "seq": c.seq}),
                        format!(
                            "{source}: not started for {}: the change is its own",
                            c.tracked.rel
                        ),
                    );
                }
                Offer::Guarded { source, why } => {
                    self.metrics.source(&source).alerts += 1;
                    self.summary.guarded += 1;
                    let entry = self.rec.log_own(Entry {
                        at: crate::time::stamp_millis(crate::time::now()),
                        actor: WATCHER.into(),
                        op: "alert".into(),
                        doc: c.tracked.rel.clone(),
                        event: c.events.first().map(|e| e.name()),
                        cause: Some(c.seq),
                        note: Some(why),
                        ..Entry::default()
                    })?;
                    self.show_entry(&entry);
                }
            }
        }
        Ok(())
    }

    /// Starts what may start now.
    fn start_ready(&mut self, now: Instant) -> Result<()> {
        self.drop_started_before();
        self.paused = self.board.paused();
        if self.stopping.is_some() || self.paused.is_some() {
            return Ok(());
        }
        let (start, dropped) = self.sched.pick(&self.sources, self.opts.jobs, now);
        for a in &dropped {
            self.warn(format!(
                "dropped the activation of {} for {}: the source is gone or invalid",
                a.source, a.doc
            ));
        }
        let any = !start.is_empty() || !dropped.is_empty();
        for a in start {
            self.start(a)?;
        }
        if any {
            self.persist_due
                .get_or_insert(Instant::now() + PERSIST_EVERY);
            self.report_dirty = true;
        }
        Ok(())
    }

    /// Drops the waiting activations that a previous watcher already started for the same
    /// change (its log says so): it was killed before it saved that the change was handled,
    /// so this one saw the change again, or loaded it from the saved queue.
    fn drop_started_before(&mut self) {
        if self.rec.started_before.is_empty() {
            return;
        }
        let (again, waiting): (Vec<Activation>, Vec<Activation>) =
            std::mem::take(&mut self.sched.queue)
                .into_iter()
                .partition(|a| {
                    self.rec.started_before.get(&a.seq).is_some_and(|pairs| {
                        pairs.iter().any(|(s, d)| *s == a.source && *d == a.doc)
                    })
                });
        self.sched.queue = waiting;
        if again.is_empty() {
            return;
        }
        for a in again {
            self.say(
                "skipped",
                json!({"source": a.source, "doc": a.doc, "why": "already started", "seq": a.seq}),
                format!(
                    "{}: not started again for {}: the previous watcher started it for this change (seq {})",
                    a.source, a.doc, a.seq
                ),
            );
        }
        self.persist_due
            .get_or_insert(Instant::now() + PERSIST_EVERY);
        self.report_dirty = true;
    }

    fn start(&mut self, act: Activation) -> Result<()> {
        let Some(source) = self.sources.iter().find(|s| s.name == act.source).cloned() else {
            return Ok(());
        };
        if self.board_gone() {
            // Nothing is started for a board that is gone, and nothing written where it was.
            return self.still_there();
        }
        let tx = self.tx.clone();
        let id = act.id;
        starting::begin(&self.board, &act)?;
        let spawned = runner::spawn(&self.board, &source, &act, move |status| {
            let _ = tx.send(Msg::Exited { id, status });
        });
        let now = Instant::now();
        match spawned {
            Ok(sp) => {
                let entry = self.rec.log_own(Entry {
                    at: crate::time::stamp_millis(crate::time::now()),
                    actor: act.source.clone(),
                    op: "activation".into(),
                    doc: act.doc.clone(),
                    to: Some("started".into()),
                    event: Some(act.event.clone()),
                    cause: Some(act.seq),
                    note: Some(format!(
                        "pid {}, chain {}, output in {}",
                        sp.pid, act.depth, sp.output
                    )),
                    ..Entry::default()
                })?;
                starting::end(&self.board);
                let mut j = activation_json(&act);
                j["pid"] = sp.pid.into();
                j["output"] = sp.output.clone().into();
                j["seq"] = entry.seq.into();
                self.say(
                    "started",
                    j,
                    format!(
                        "{}: started for {} (pid {}, output {})",
                        act.source, act.doc, sp.pid, sp.output
                    ),
                );
                self.sched.started(Running {
                    pid: sp.pid,
                    started: now,
                    started_at: chrono::Utc::now(),
                    deadline: now + source.timeout,
                    output: sp.output,
                    timed_out: false,
                    killed: false,
                    act,
                });
                self.save_running();
            }
            Err(e) => {
                starting::end(&self.board);
                let note = format!("cannot start `{}`: {e}", source.run);
                self.record_end(&act, "failed", None, 0, note)?;
            }
        }
        self.report_dirty = true;
        Ok(())
    }

    /// An activation's command ended.
    fn finished(
        &mut self,
        id: u64,
        status: std::io::Result<std::process::ExitStatus>,
    ) -> Result<()> {
        let Some(r) = self.sched.finished(id) else {
            return Ok(());
        };
        self.save_running();
        let ms = r.started.elapsed().as_millis() as u64;
        let code = status.as_ref().ok().and_then(|s| s.code());
        let signal = status.as_ref().ok().and_then(signal_of);
        let took = crate::time::format_millis(ms);
        let (result, note) = if r.timed_out {
            let limit = self
                .sources
                .iter()
                .find(|s| s.name == r.act.source)
                .map_or_else(String::new, |s| {
                    format!(" within its timeout of {}", human_duration(s.timeout))
                });
            (
                "timed-out",
                format!("did not finish{limit}: its process group was killed after {took}"),
            )
        } else if r.killed {
            (
                "killed",
                format!(
                    "killed after {took}: tavern watch was stopping and it did not end in time"
                ),
            )
        } else {
            match (&status, code, signal) {
                (Ok(s), _, _) if s.success() => ("ok", format!("exit 0 after {took}")),
                (_, Some(c), _) => ("failed", format!("exit {c} after {took}")),
                (_, None, Some(sig)) => ("failed", format!("ended by signal {sig} after {took}")),
                (Err(e), _, _) => ("failed", format!("cannot wait for it: {e}")),
                _ => ("failed", format!("ended after {took}")),
            }
        };
        let note = format!("{note}; output in {}", r.output);
        self.record_end(&r.act, result, code, ms, note)?;
        if self.opts.once {
            // What the command wrote is looked at before --once decides it is done.
            self.rec.rescan();
        }
        Ok(())
    }

    fn save_running(&self) {
        if self.board_gone() {
            // Nothing to keep it for; the next tick says why the watcher stops.
            return;
        }
        if let Err(e) = self.sched.save_running(&self.board) {
            self.warn(format!("cannot record what runs: {e}"));
        }
    }

    /// Ends, in the log, the activations a previous watcher left running: it was killed
    /// (or crashed) before it saw them end. They are not killed here: the pid may belong
    /// to another process by now.
    fn log_lost(&mut self) -> Result<()> {
        let lost = scheduler::take_lost(&self.board);
        match starting::take(&self.board) {
            starting::Left::Nothing => {}
            // Its command ran: never again for this change, and its end was not seen.
            starting::Left::Spawned(act) => {
                self.rec
                    .started_before
                    .entry(act.seq)
                    .or_default()
                    .push((act.source.clone(), act.doc.clone()));
                if !lost.iter().any(|l| l.act == act) {
                    let ms = (chrono::Utc::now() - act.queued_at)
                        .num_milliseconds()
                        .max(0) as u64;
                    let note = "its start and end were not seen: the watcher that started it was killed as it did (it may still run)".to_string();
                    self.record_end(&act, "lost", None, ms, note)?;
                }
            }
            // Killed before its command was spawned: it waits again.
            starting::Left::NotSpawned(act) => self.sched.requeue(act),
        }
        for lost in lost {
            let ms = (chrono::Utc::now() - lost.started_at)
                .num_milliseconds()
                .max(0) as u64;
            let note = format!(
                "its end was not seen: the watcher that started it stopped without waiting (killed?); pid {} may still run; output in {}",
                lost.pid, lost.output
            );
            self.record_end(&lost.act, "lost", None, ms, note)?;
        }
        Ok(())
    }

    fn record_end(
        &mut self,
        act: &Activation,
        result: &str,
        exit: Option<i32>,
        ms: u64,
        note: String,
    ) -> Result<()> {
        let entry = self.rec.log_own(Entry {
            at: crate::time::stamp_millis(crate::time::now()),
            actor: act.source.clone(),
            op: "activation".into(),
            doc: act.doc.clone(),
            to: Some(result.into()),
            event: Some(act.event.clone()),
            cause: Some(act.seq),
            exit,
            duration_ms: Some(ms),
            note: Some(note.clone()),
            ..Entry::default()
        })?;
        // A lost activation was a previous watcher's: not in this run's counts, and its
        // duration is not known.
        if result != "lost" {
            self.summary.ran += 1;
            if result != "ok" {
                self.summary.failed += 1;
            }
        }
        if result != "lost" {
            let last = format!("{} {result} {}", entry.at, act.doc);
            self.metrics.finished(&act.source, result, ms, last);
        }
        let mut j = activation_json(act);
        j["result"] = result.into();
        j["exit"] = exit.into();
        j["duration_ms"] = ms.into();
        j["seq"] = entry.seq.into();
        j["note"] = note.clone().into();
        self.say(
            "finished",
            j,
            format!("{}: {result} for {}: {note}", act.source, act.doc),
        );
        self.report_dirty = true;
        Ok(())
    }

    /// Timers: timeouts, the end of the grace period, deferred paths, polling, overflow,
    /// and the throttled writes of state and reports.
    fn tick(&mut self) -> Result<()> {
        let now = Instant::now();
        // Before anything below writes: a stat per wake-up.
        if self.board_gone() || now >= self.last_check + CHECK_EVERY {
            self.last_check = now;
            self.still_there()?;
        }
        let mut timed_out = Vec::new();
        for r in self.sched.running.values_mut() {
            if now >= r.deadline && !r.timed_out && !r.killed {
                r.timed_out = true;
                crate::process::kill_group(r.pid);
                timed_out.push((r.act.source.clone(), r.act.doc.clone(), r.pid));
            }
        }
        for (source, doc, pid) in timed_out {
            self.say(
                "timeout",
                json!({"source": source, "doc": doc, "pid": pid}),
                format!("{source}: timed out for {doc}: killing its process group {pid}"),
            );
        }
        if let Some((grace_end, false)) = self.stopping
            && now >= grace_end
        {
            for r in self.sched.running.values_mut() {
                if !r.timed_out {
                    r.killed = true;
                }
                crate::process::kill_group(r.pid);
            }
            self.stopping = Some((now, true));
        }
        let (due, later): (Vec<_>, Vec<_>) = std::mem::take(&mut self.deferred)
            .into_iter()
            .partition(|(_, t)| *t <= now);
        self.deferred = later;
        self.rec.hints.extend(due.into_iter().map(|(rel, _)| rel));
        if let Some((every, next)) = self.poll
            && now >= next
        {
            self.rec.rescan();
            self.poll = Some((every, now + every));
        }
        if self.backlog.take_overflow() {
            self.rec.rescan();
        }
        if !self.rec.hints.is_empty() {
            self.process()?;
        }
        if self.persist_due.is_some_and(|due| now >= due) {
            self.persist()?;
        }
        // The cursor only after the shadows: entries past it are handled for good.
        if self.state_dirty && self.persist_due.is_none() && now >= self.last_save + SAVE_EVERY {
            self.save_state(false)?;
        }
        if self.report_dirty && now >= self.last_report + REPORT_EVERY {
            self.write_reports(true);
        }
        if self.last_prune.is_none_or(|last| now >= last + PRUNE_EVERY) {
            self.prune_runs(now);
        }
        Ok(())
    }

    fn board_gone(&self) -> bool {
        !crate::layout::board_yaml(&self.board.root).is_file()
    }

    /// Stops the watcher when its board is gone (removed, moved away: writing on would make
    /// a half board of log and state files where it was), and keeps the one-watcher lock
    /// when `.state/` was cleaned under it.
    fn still_there(&mut self) -> Result<()> {
        // A board moved away and another made in its place is gone too: the native
        // watches followed the old directory.
        if self.board_gone() || dir_id(&self.board.root) != self.root_id {
            let n = self.sched.running.len();
            for r in self.sched.running.values() {
                crate::process::kill_group(r.pid);
            }
            return Err(Error::NotFound {
                what: format!("board {}", self.board.root.display()),
                hint: format!(
                    "it was removed or moved away while `tavern watch` ran (a board made in its place since is another board: start a watcher for it); the watcher stopped without writing anything more{}",
                    if n == 0 {
                        String::new()
                    } else {
                        format!(
                            " and killed the {n} activation{} that ran",
                            if n == 1 { "" } else { "s" }
                        )
                    }
                ).into(),
            });
        }
        if self.lock.verify(&self.board)? {
            self.warn(
                ".state/ was removed under the watcher (git clean?): locked the board again".into(),
            );
        }
        Ok(())
    }

    /// Removes run outputs older than `watch.keep_runs`, except those of running commands.
    fn prune_runs(&mut self, now: Instant) {
        self.last_prune = Some(now);
        let spare = self
            .sched
            .running
            .values()
            .map(|r| self.board.root.join(&r.output))
            .collect();
        if let Err(e) = crate::runs::prune(&self.board, crate::runs::keep(&self.board), &spare) {
            self.warn(format!("cannot remove old run outputs: {e}"));
        }
    }

    /// Saves the cursor and metrics, and the snapshot when it is due (or `all`).
    fn save_state(&mut self, all: bool) -> Result<()> {
        let now = Instant::now();
        if all || now >= self.last_snapshot + SNAPSHOT_EVERY {
            self.rec.save()?;
            self.last_snapshot = now;
        } else {
            self.rec.cursor.save(&self.board)?;
        }
        self.metrics.save(&self.board)?;
        self.state_dirty = false;
        self.last_save = now;
        Ok(())
    }

    fn write_reports(&mut self, running: bool) {
        let mode = if self.native.is_some() {
            "native file events".to_string()
        } else if let Some((every, _)) = self.poll {
            format!("polling every {}", human_duration(every))
        } else {
            "once".to_string()
        };
        let state = report::State {
            running,
            paused: self.paused.clone(),
            jobs: self.opts.jobs,
            mode: &mode,
        };
        let schedule = report::render_schedule(&state, &self.sched, &self.sources, Instant::now());
        let metrics = report::render_metrics(&self.metrics, &self.sources);
        if let Err(e) = report::write(&self.board, &schedule, &metrics) {
            self.warn(format!("cannot write control/schedule.md: {e}"));
        }
        self.report_dirty = false;
        self.last_report = Instant::now();
    }

    fn shutdown(&mut self) -> Result<()> {
        self.drain_log()?;
        self.persist()?;
        self.save_state(true)?;
        self.write_reports(false);
        if self.paused.is_some() {
            self.summary.held = self.sched.queue.len();
        }
        self.say(
            "stopped",
            json!({"ran": self.summary.ran, "failed": self.summary.failed, "waiting": self.sched.queue.len(), "paused": self.paused}),
            format!(
                "stopped: {} activation{} ran, {} failed, {} waiting{}",
                self.summary.ran,
                if self.summary.ran == 1 { "" } else { "s" },
                self.summary.failed,
                self.sched.queue.len(),
                if self.paused.is_some() {
                    " (the board is paused)"
                } else {
                    ""
                }
            ),
        );
        Ok(())
    }

    /// Reads the sources again; problems are reported once per change of the files.
    fn load_sources(&mut self, at_start: bool) {
        let (sources, problems) = sources::load_all(&self.board);
        if at_start {
            for p in &problems {
                self.warn(format!(
                    "skipped {}: {} (`tavern sources check` lists every problem)",
                    p.path, p.problem
                ));
            }
        }
        let before: HashSet<String> = self.sources.iter().map(|s| s.name.clone()).collect();
        let after: HashSet<String> = sources.iter().map(|s| s.name.clone()).collect();
        if !at_start && before != after {
            let mut names: Vec<&String> = after.iter().collect();
            names.sort();
            self.say(
                "sources",
                json!({"sources": names}),
                format!(
                    "sources now: {}",
                    names
                        .iter()
                        .map(|s| s.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            );
        }
        self.sources = sources;
    }

    fn show_notices(&mut self) {
        for n in std::mem::take(&mut self.rec.notices) {
            self.show_entry(&n.entry);
        }
    }

    /// An external edit or alert the watcher logged.
    fn show_entry(&self, e: &Entry) {
        let note = e.note.as_deref().unwrap_or("");
        let j = json!({"doc": e.doc, "seq": e.seq, "note": note});
        if e.op == "alert" {
            if self.opts.json {
                // For the person watching a watcher whose stdout goes to a tool.
                let _ = writeln!(std::io::stderr(), "alert: {note} (log seq {})", e.seq);
            }
            self.say("alert", j, format!("alert: {note} (seq {})", e.seq));
        } else {
            self.say(
                "external-edit",
                j,
                format!("{}: {note}; logged as external-edit (seq {})", e.doc, e.seq),
            );
        }
    }

    fn say(&self, event: &str, mut j: Value, text: String) {
        let now = chrono::Utc::now();
        let line = if self.opts.json {
            j["event"] = event.into();
            j["at"] = crate::time::stamp_millis(now).into();
            format!("{j}\n")
        } else {
            let text: String = text
                .chars()
                .map(|c| if c.is_control() && c != '\n' { ' ' } else { c })
                .collect();
            format!("{} {text}\n", now.format("%H:%M:%S%.3f"))
        };
        // The watcher keeps going when its output is closed (`tavern watch | head`).
        let _ = std::io::stdout().lock().write_all(line.as_bytes());
    }

    fn warn(&self, text: String) {
        let _ = writeln!(std::io::stderr(), "warning: {text}");
    }
}

/// A directory's identity (device and inode), None if it is gone.
fn dir_id(path: &std::path::Path) -> Option<(u64, u64)> {
    std::fs::metadata(path)
        .ok()
        .and_then(|m| lock::identity(&m))
}

/// Gathers the rest of a burst of events: until it is quiet for DEBOUNCE, at most
/// DEBOUNCE_MAX. Anything else (an activation's end, a signal) ends the burst at once, so
/// that it is not kept waiting behind it.
fn collect_burst(rx: &Receiver<Msg>, msgs: &mut Vec<Msg>) {
    let end = Instant::now() + DEBOUNCE_MAX;
    loop {
        let wait = DEBOUNCE.min(end.saturating_duration_since(Instant::now()));
        match rx.recv_timeout(wait) {
            Ok(m) => {
                let other = !matches!(m, Msg::Paths(_));
                msgs.push(m);
                if other {
                    return;
                }
            }
            Err(_) => return,
        }
        if Instant::now() >= end {
            return;
        }
    }
}

fn activation_json(a: &Activation) -> Value {
    json!({"source": a.source, "doc": a.doc, "id": a.doc_id, "region": a.region, "trigger": a.event, "cause": a.seq, "chain": a.depth})
}

fn signal_of(s: &std::process::ExitStatus) -> Option<i32> {
    #[cfg(unix)]
    {
        std::os::unix::process::ExitStatusExt::signal(s)
    }
    #[cfg(not(unix))]
    {
        let _ = s;
        None
    }
}

fn human_duration(d: Duration) -> String {
    crate::time::format_duration(chrono::Duration::from_std(d).unwrap_or_default())
}
