//! From changes to commands and back: offers each change to the sources (through the
//! [`Scheduler`]), starts what may start (through the [`runner`](super::runner)), and logs
//! how each activation ended. The reconciler is passed in for the log; what happens is
//! reported as [`Event`]s.

use std::collections::HashSet;
use std::sync::mpsc::Sender;
use std::time::{Duration, Instant};

use super::events::{ActivationInfo, Event, Skip, Warning, human_duration};
use super::fsevents::Msg;
use super::reconcile::{Change, Reconciler, WATCHER};
use super::scheduler::{self, Activation, Guard, Offer, Running, Scheduler};
use super::sources::{self, Source};
use super::{Summary, report, runner, starting};
use crate::board::Board;
use crate::error::Result;
use crate::log::Entry;

pub struct Activations {
    pub sched: Scheduler,
    pub sources: Vec<Source>,
    pub metrics: report::Metrics,
    pub summary: Summary,
    guard: Guard,
    /// Where a command's end is sent.
    tx: Sender<Msg>,
    /// Activations running at once, in all.
    jobs: usize,
}

impl Activations {
    /// The queue and metrics a previous run left, and the sources as they are.
    pub fn load(board: &Board, jobs: usize, tx: Sender<Msg>, emit: &mut dyn FnMut(Event)) -> Self {
        let guard = Guard {
            max_chain: board.config.watch.max_chain,
            max_per_doc: board.config.watch.max_per_doc,
            rate_window: crate::time::parse_duration(&board.config.watch.rate_window)
                .and_then(|d| d.to_std().ok())
                .unwrap_or(Duration::from_secs(600)),
        };
        let mut a = Activations {
            sched: Scheduler::load(board),
            sources: Vec::new(),
            metrics: report::Metrics::load(board),
            summary: Summary::default(),
            guard,
            tx,
            jobs,
        };
        a.load_sources(board, true, emit);
        a
    }

    /// Reads the sources again; problems are reported at start only (each change of the
    /// set of valid sources is reported).
    pub fn load_sources(&mut self, board: &Board, at_start: bool, emit: &mut dyn FnMut(Event)) {
        let (sources, problems) = sources::load_all(board);
        if at_start {
            for p in problems {
                emit(Event::Warning(Warning::SourceSkipped(p)));
            }
        }
        let before: HashSet<&str> = self.sources.iter().map(|s| s.name.as_str()).collect();
        let after: HashSet<&str> = sources.iter().map(|s| s.name.as_str()).collect();
        if !at_start && before != after {
            let mut names: Vec<String> = after.iter().map(|s| s.to_string()).collect();
            names.sort();
            emit(Event::Sources { sources: names });
        }
        self.sources = sources;
    }

    pub fn names(&self) -> Vec<String> {
        self.sources.iter().map(|s| s.name.clone()).collect()
    }

    /// Offers one change to the sources.
    pub fn offer(
        &mut self,
        rec: &mut Reconciler,
        c: Change,
        emit: &mut dyn FnMut(Event),
    ) -> Result<()> {
        emit(Event::Change {
            doc: c.tracked.rel.clone(),
            events: c.events.iter().map(|e| e.name()).collect(),
            actor: c.actor.clone(),
            seq: c.seq,
        });
        let offers = self
            .sched
            .offer(&c, &self.sources, &self.guard, Instant::now());
        for offer in offers {
            match offer {
                Offer::Queued(a) => emit(Event::Queued((&a).into())),
                Offer::Merged(a) => emit(Event::Merged((&a).into())),
                Offer::OwnWrite { source } => {
                    self.metrics.source(&source).own_writes += 1;
                    emit(Event::Skipped {
                        source,
                        doc: c.tracked.rel.clone(),
                        why: Skip::OwnWrite,
                        seq: c.seq,
                    });
                }
                Offer::Guarded { source, why } => {
                    self.metrics.source(&source).alerts += 1;
                    self.summary.guarded += 1;
                    let entry = rec.log_own(Entry {
                        at: crate::time::stamp_millis(crate::time::now()),
                        actor: WATCHER.into(),
                        op: "alert".into(),
                        doc: c.tracked.rel.clone(),
                        event: c.events.first().map(|e| e.name()),
                        cause: Some(c.seq),
                        note: Some(why),
                        ..Entry::default()
                    })?;
                    emit(shown(&entry));
                }
            }
        }
        Ok(())
    }

    /// Takes what may start at `now` and starts it. Returns whether the queue changed.
    pub fn start_ready(
        &mut self,
        board: &Board,
        rec: &mut Reconciler,
        now: Instant,
        emit: &mut dyn FnMut(Event),
    ) -> Result<bool> {
        let (start, dropped) = self.sched.pick(&self.sources, self.jobs, now);
        for a in &dropped {
            emit(Event::Warning(Warning::Dropped {
                source: a.source.clone(),
                doc: a.doc.clone(),
            }));
        }
        let any = !start.is_empty() || !dropped.is_empty();
        for a in start {
            self.start(board, rec, a, emit)?;
        }
        Ok(any)
    }

    /// Drops the waiting activations that a previous watcher already started for the same
    /// change (its log says so): it was killed before it saved that the change was handled,
    /// so this one saw the change again, or loaded it from the saved queue. Returns whether
    /// any was dropped.
    pub fn drop_started_before(&mut self, rec: &Reconciler, emit: &mut dyn FnMut(Event)) -> bool {
        if rec.started_before.is_empty() {
            return false;
        }
        let (again, waiting): (Vec<Activation>, Vec<Activation>) =
            std::mem::take(&mut self.sched.queue)
                .into_iter()
                .partition(|a| {
                    rec.started_before.get(&a.seq).is_some_and(|pairs| {
                        pairs.iter().any(|(s, d)| *s == a.source && *d == a.doc)
                    })
                });
        self.sched.queue = waiting;
        for a in &again {
            emit(Event::Skipped {
                source: a.source.clone(),
                doc: a.doc.clone(),
                why: Skip::AlreadyStarted,
                seq: a.seq,
            });
        }
        !again.is_empty()
    }

    fn start(
        &mut self,
        board: &Board,
        rec: &mut Reconciler,
        act: Activation,
        emit: &mut dyn FnMut(Event),
    ) -> Result<()> {
        let Some(source) = self.sources.iter().find(|s| s.name == act.source).cloned() else {
            return Ok(());
        };
        let tx = self.tx.clone();
        let id = act.id;
        starting::begin(board, &act)?;
        let spawned = runner::spawn(board, &source, &act, move |status| {
            let _ = tx.send(Msg::Exited { id, status });
        });
        let now = Instant::now();
        match spawned {
            Ok(sp) => {
                let entry = rec.log_own(Entry {
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
                starting::end(board);
                emit(Event::Started {
                    activation: (&act).into(),
                    pid: sp.pid,
                    output: sp.output.clone(),
                    seq: entry.seq,
                });
                self.sched.started(
                    Running {
                        pid: sp.pid,
                        started: now,
                        started_at: chrono::Utc::now(),
                        deadline: now + source.timeout,
                        output: sp.output,
                        timed_out: false,
                        killed: false,
                        act,
                    },
                    Instant::now(),
                );
                self.save_running(board, emit);
            }
            Err(e) => {
                starting::end(board);
                let note = format!("cannot start `{}`: {e}", source.run);
                self.record_end(rec, &act, "failed", None, 0, note, emit)?;
            }
        }
        Ok(())
    }

    /// An activation's command ended.
    pub fn finished(
        &mut self,
        board: &Board,
        rec: &mut Reconciler,
        id: u64,
        status: std::io::Result<std::process::ExitStatus>,
        emit: &mut dyn FnMut(Event),
    ) -> Result<()> {
        let Some(r) = self.sched.finished(id) else {
            return Ok(());
        };
        self.save_running(board, emit);
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
        self.record_end(rec, &r.act, result, code, ms, note, emit)
    }

    /// Records what runs (nothing when the board is gone: the next check says why the
    /// watcher stops).
    fn save_running(&self, board: &Board, emit: &mut dyn FnMut(Event)) {
        if !crate::layout::board_yaml(&board.root).is_file() {
            return;
        }
        if let Err(e) = self.sched.save_running(board) {
            emit(Warning::trouble(format!("cannot record what runs: {e}")));
        }
    }

    /// Ends, in the log, the activations a previous watcher left running: it was killed
    /// (or crashed) before it saw them end. They are not killed here: the pid may belong
    /// to another process by now.
    pub fn log_lost(
        &mut self,
        board: &Board,
        rec: &mut Reconciler,
        emit: &mut dyn FnMut(Event),
    ) -> Result<()> {
        let lost = scheduler::take_lost(board);
        match starting::take(board) {
            starting::Left::Nothing => {}
            // Its command ran: never again for this change, and its end was not seen.
            starting::Left::Spawned(act) => {
                rec.started_before
                    .entry(act.seq)
                    .or_default()
                    .push((act.source.clone(), act.doc.clone()));
                if !lost.iter().any(|l| l.act == act) {
                    let ms = (chrono::Utc::now() - act.queued_at)
                        .num_milliseconds()
                        .max(0) as u64;
                    let note = "its start and end were not seen: the watcher that started it was killed as it did (it may still run)".to_string();
                    self.record_end(rec, &act, "lost", None, ms, note, emit)?;
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
            self.record_end(rec, &lost.act, "lost", None, ms, note, emit)?;
        }
        Ok(())
    }

    #[allow(clippy::too_many_arguments)]
    fn record_end(
        &mut self,
        rec: &mut Reconciler,
        act: &Activation,
        result: &str,
        exit: Option<i32>,
        ms: u64,
        note: String,
        emit: &mut dyn FnMut(Event),
    ) -> Result<()> {
        let entry = rec.log_own(Entry {
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
            let last = format!("{} {result} {}", entry.at, act.doc);
            self.metrics.finished(&act.source, result, ms, last);
        }
        emit(Event::Finished {
            activation: ActivationInfo::from(act),
            result: result.into(),
            exit,
            duration_ms: ms,
            seq: entry.seq,
            note,
        });
        Ok(())
    }

    /// Kills the process groups of the activations past their timeout.
    pub fn time_out(&mut self, now: Instant, emit: &mut dyn FnMut(Event)) {
        for r in self.sched.running.values_mut() {
            if now >= r.deadline && !r.timed_out && !r.killed {
                r.timed_out = true;
                crate::process::kill_group(r.pid);
                emit(Event::Timeout {
                    source: r.act.source.clone(),
                    doc: r.act.doc.clone(),
                    pid: r.pid,
                });
            }
        }
    }

    /// Kills every running activation (`killed`: at the end of the grace period, counted
    /// as killed unless it timed out already).
    pub fn kill_all(&mut self, killed: bool) {
        for r in self.sched.running.values_mut() {
            if killed && !r.timed_out {
                r.killed = true;
            }
            crate::process::kill_group(r.pid);
        }
    }

    /// The next time an activation may start or must be killed.
    pub fn next_wake(&self, now: Instant) -> Option<Instant> {
        let deadline = self.sched.next_deadline();
        let cooldown = self.sched.next_cooldown_end(&self.sources, now);
        deadline.into_iter().chain(cooldown).min()
    }
}

/// An entry the watcher logged on its own account, as an event.
pub fn shown(e: &Entry) -> Event {
    let (doc, seq) = (e.doc.clone(), e.seq);
    let note = e.note.clone().unwrap_or_default();
    if e.op == "alert" {
        Event::Alert { doc, seq, note }
    } else {
        Event::ExternalEdit { doc, seq, note }
    }
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
