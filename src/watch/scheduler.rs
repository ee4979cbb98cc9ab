//! The control component: which activations wait, in what order, and which may start now.
//!
//! Activations wait in a queue ordered by the source's priority (higher first), then age.
//! One may start when the board is not paused, fewer than `--jobs` run in all, fewer than
//! the source's `max_parallel` run for it, and its `cooldown` since its last start is over.
//!
//! The loop guard decides what is never queued: a source's own writes (its command runs as
//! `TAVERN_AGENT=<name>`, so the log names it) do not trigger it; an activation caused by a
//! change that an activation made, caused by … deeper than `max_chain`, and a document
//! triggering more than `max_per_doc` activations within `rate_window`, become alerts.

use std::collections::{HashMap, VecDeque};
use std::time::{Duration, Instant};

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use super::reconcile::Change;
use super::sources::Source;
use crate::board::Board;
use crate::error::Result;

/// The loop guard's limits (board.yaml `watch:`).
#[derive(Clone, Debug)]
pub struct Guard {
    pub max_chain: u32,
    pub max_per_doc: usize,
    pub rate_window: Duration,
}

/// One start of one source for one change.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Activation {
    pub id: u64,
    pub source: String,
    /// The changed file, board-relative.
    pub doc: String,
    /// The document id (for a solution file, its task's id).
    pub doc_id: String,
    pub region: String,
    /// The event that matched the source's `on:`.
    pub event: String,
    /// The log entry of the change.
    pub seq: u64,
    /// 1 for a change made by a person or agent; one more for each activation in between.
    pub depth: u32,
    pub priority: i64,
    pub queued_at: DateTime<Utc>,
}

/// A running activation.
#[derive(Debug)]
pub struct Running {
    pub act: Activation,
    pub pid: u32,
    pub started: Instant,
    pub started_at: DateTime<Utc>,
    pub deadline: Instant,
    /// The run's output file, board-relative.
    pub output: String,
    /// Killed because it ran past its timeout.
    pub timed_out: bool,
    /// Killed because the watcher is stopping.
    pub killed: bool,
}

/// What offering a change to the sources came to, per source that matched.
#[derive(Debug, PartialEq)]
pub enum Offer {
    Queued(Activation),
    /// An activation of the same source for the same file was already waiting.
    Merged(Activation),
    /// The source's own write: not run.
    OwnWrite {
        source: String,
    },
    /// Stopped by the loop guard: log an alert.
    Guarded {
        source: String,
        why: String,
    },
}

/// A past or present activation, for attributing a source's writes to a chain.
#[derive(Clone, Copy, Debug)]
struct Span {
    start: DateTime<Utc>,
    end: Option<DateTime<Utc>>,
    depth: u32,
}

/// How many spans per source to remember for chain attribution.
const HISTORY: usize = 64;

/// Slack around a span when matching a write's log time to it (log times are in ms).
fn slack() -> chrono::Duration {
    chrono::Duration::seconds(1)
}

#[derive(Default)]
pub struct Scheduler {
    pub queue: Vec<Activation>,
    pub running: HashMap<u64, Running>,
    last_start: HashMap<String, Instant>,
    history: HashMap<String, VecDeque<Span>>,
    /// When activations were queued for each document, within the rate window.
    rate: HashMap<String, VecDeque<Instant>>,
    /// When the rate guard last alerted about a document (once per window).
    rate_alerted: HashMap<String, Instant>,
    next_id: u64,
}

/// The order activations wait in: higher priority first, then older (the change that
/// queued it was made earlier; changes handled in one batch are handled in path order,
/// not in the order they were made), then by the log's order, then queued first.
pub fn queue_order(a: &Activation, b: &Activation) -> std::cmp::Ordering {
    b.priority
        .cmp(&a.priority)
        .then(a.queued_at.cmp(&b.queued_at))
        .then(a.seq.cmp(&b.seq))
        .then(a.id.cmp(&b.id))
}

fn queue_path(board: &Board) -> std::path::PathBuf {
    super::snapshot::dir(board).join("queue")
}

fn running_path(board: &Board) -> std::path::PathBuf {
    super::snapshot::dir(board).join("running")
}

/// What the watcher keeps on disk of a running activation, so that the next start can say
/// in the log how it ended when the watcher was killed while it ran.
#[derive(Debug, Serialize, Deserialize, PartialEq)]
pub struct RunRecord {
    pub act: Activation,
    pub pid: u32,
    pub started_at: DateTime<Utc>,
    pub output: String,
}

/// The activations a previous watcher left running (it was killed or crashed), emptying
/// the record.
pub fn take_lost(board: &Board) -> Vec<RunRecord> {
    let lost = read_running(board);
    let _ = std::fs::remove_file(running_path(board));
    lost
}

/// The record of what runs, one JSON line per activation (unreadable lines skipped).
fn read_running(board: &Board) -> Vec<RunRecord> {
    let text = super::snapshot::read_state(&running_path(board)).unwrap_or_default();
    text.lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

/// The output files of the activations a watcher has on record as running now (absolute
/// paths), read without taking the record: `sweep` spares them, since a quiet activation
/// may not have written to its output for longer than `watch.keep_runs`. A record a killed
/// watcher left is spared too, until the next watcher takes it as lost.
pub fn running_outputs(board: &Board) -> std::collections::HashSet<std::path::PathBuf> {
    read_running(board)
        .into_iter()
        .map(|r| board.root.join(r.output))
        .collect()
}

impl Scheduler {
    /// Saves what runs now (after a start or an end).
    pub fn save_running(&self, board: &Board) -> Result<()> {
        let mut text = String::new();
        for r in self.running.values() {
            let record = RunRecord {
                act: r.act.clone(),
                pid: r.pid,
                started_at: r.started_at,
                output: r.output.clone(),
            };
            if let Ok(line) = serde_json::to_string(&record) {
                text.push_str(&line);
                text.push('\n');
            }
        }
        super::snapshot::write_state(&running_path(board), text.as_bytes())
    }

    /// The scheduler with the queue a previous run left (activations held by a pause, or
    /// waiting when it stopped).
    pub fn load(board: &Board) -> Scheduler {
        let mut s = Scheduler::default();
        if let Some(text) = super::snapshot::read_state(&queue_path(board)) {
            s.queue = text
                .lines()
                .filter_map(|l| serde_json::from_str::<Activation>(l).ok())
                .collect();
        }
        s.next_id = s.queue.iter().map(|a| a.id).max().unwrap_or(0) + 1;
        s
    }

    /// Puts back an activation that did not start after all, under a new id.
    pub fn requeue(&mut self, mut act: Activation) {
        if self
            .queue
            .iter()
            .any(|a| a.source == act.source && a.doc == act.doc)
        {
            return;
        }
        act.id = self.next_id;
        self.next_id += 1;
        self.queue.push(act);
    }

    /// Saves the queue, so that a restart keeps what waits.
    pub fn save(&self, board: &Board) -> Result<()> {
        let mut text = String::new();
        for a in &self.queue {
            if let Ok(line) = serde_json::to_string(a) {
                text.push_str(&line);
                text.push('\n');
            }
        }
        super::snapshot::write_state(&queue_path(board), text.as_bytes())
    }

    /// The chain depth of a change: 0 when a person or agent made it, else the depth of
    /// the activation of the source whose write it was.
    fn chain_of(&self, actor: Option<&str>, at: DateTime<Utc>) -> u32 {
        let Some(spans) = actor.and_then(|a| self.history.get(a)) else {
            return 0;
        };
        spans
            .iter()
            .filter(|s| s.start - slack() <= at && s.end.is_none_or(|e| at <= e + slack()))
            .map(|s| s.depth)
            .max()
            .unwrap_or(0)
    }

    /// Offers a change to every source; returns what each matching source came to.
    pub fn offer(
        &mut self,
        change: &Change,
        sources: &[Source],
        guard: &Guard,
        now: Instant,
    ) -> Vec<Offer> {
        let mut out = Vec::new();
        if !change.tracked.named_by_id() {
            // Its name would reach the command line ({id}): the reconciler alerts instead.
            return out;
        }
        let wall = Utc::now();
        for s in sources {
            if !s.watches(&change.tracked.rel) {
                continue;
            }
            let Some(event) = s.listens(&change.events) else {
                continue;
            };
            if !s.when.is_empty() {
                let region = change.tracked.doc_region();
                match &change.doc {
                    Some(doc) if s.when.matches_in(doc, region, wall) => {}
                    _ => continue,
                }
            }
            if change.actor.as_deref() == Some(s.name.as_str()) {
                out.push(Offer::OwnWrite {
                    source: s.name.clone(),
                });
                continue;
            }
            let depth = self.chain_of(change.actor.as_deref(), change.at) + 1;
            let rel = &change.tracked.rel;
            if depth > guard.max_chain {
                out.push(Offer::Guarded {
                    source: s.name.clone(),
                    why: format!(
                        "loop guard: {} not started for {rel}: it would be activation {depth} of a chain that activations started (limit {}: watch.max_chain in board.yaml)",
                        s.name, guard.max_chain
                    ),
                });
                continue;
            }
            if let Some(waiting) = self
                .queue
                .iter_mut()
                .find(|a| a.source == s.name && &a.doc == rel)
            {
                waiting.event = event.name();
                waiting.seq = change.seq;
                waiting.depth = waiting.depth.max(depth);
                out.push(Offer::Merged(waiting.clone()));
                continue;
            }
            let times = self.rate.entry(rel.clone()).or_default();
            while times
                .front()
                .is_some_and(|t| now.duration_since(*t) > guard.rate_window)
            {
                times.pop_front();
            }
            if times.len() >= guard.max_per_doc {
                let alerted_lately = self
                    .rate_alerted
                    .get(rel)
                    .is_some_and(|t| now.duration_since(*t) <= guard.rate_window);
                if !alerted_lately {
                    self.rate_alerted.insert(rel.clone(), now);
                    out.push(Offer::Guarded {
                        source: s.name.clone(),
                        why: format!(
                            "loop guard: {} not started for {rel}: the document started {} activations within {} (limit: watch.max_per_doc and watch.rate_window in board.yaml); further ones are dropped until it calms down",
                            s.name,
                            times.len(),
                            crate::time::format_duration(
                                chrono::Duration::from_std(guard.rate_window).unwrap_or_default()
                            )
                        ),
                    });
                }
                continue;
            }
            times.push_back(now);
            let act = Activation {
                id: self.next_id,
                source: s.name.clone(),
                doc: rel.clone(),
                doc_id: change.tracked.id.clone(),
                region: change.tracked.region().to_string(),
                event: event.name(),
                seq: change.seq,
                depth,
                priority: s.priority,
                // The change's age: when the log says it was made.
                queued_at: change.at.min(wall),
            };
            self.next_id += 1;
            self.queue.push(act.clone());
            out.push(Offer::Queued(act));
        }
        out
    }

    /// Takes the activations that may start now, best first. Those whose source no longer
    /// exists are dropped and returned second.
    pub fn pick(
        &mut self,
        sources: &[Source],
        jobs: usize,
        now: Instant,
    ) -> (Vec<Activation>, Vec<Activation>) {
        self.queue.sort_by(queue_order);
        let mut start = Vec::new();
        let mut dropped = Vec::new();
        let mut running_per: HashMap<String, usize> = HashMap::new();
        for r in self.running.values() {
            *running_per.entry(r.act.source.clone()).or_default() += 1;
        }
        let mut total = self.running.len();
        let mut picked_now: std::collections::HashSet<String> = Default::default();
        let mut keep = Vec::with_capacity(self.queue.len());
        for act in std::mem::take(&mut self.queue) {
            let Some(s) = sources.iter().find(|s| s.name == act.source) else {
                dropped.push(act);
                continue;
            };
            let busy = running_per.get(&act.source).copied().unwrap_or(0);
            let cooling = self
                .last_start
                .get(&act.source)
                .is_some_and(|t| now.duration_since(*t) < s.cooldown)
                || (!s.cooldown.is_zero() && picked_now.contains(&act.source));
            if total >= jobs || busy >= s.max_parallel || cooling {
                keep.push(act);
                continue;
            }
            total += 1;
            *running_per.entry(act.source.clone()).or_default() += 1;
            picked_now.insert(act.source.clone());
            start.push(act);
        }
        self.queue = keep;
        (start, dropped)
    }

    /// When the next queued activation leaves its cooldown (if one waits only for that).
    pub fn next_cooldown_end(&self, sources: &[Source], now: Instant) -> Option<Instant> {
        self.queue
            .iter()
            .filter_map(|a| {
                let s = sources.iter().find(|s| s.name == a.source)?;
                let t = *self.last_start.get(&a.source)?;
                let end = t + s.cooldown;
                (end > now).then_some(end)
            })
            .min()
    }

    /// Records a started activation (after its start was logged: a cooldown counts from
    /// then, so the log's times show at least the cooldown between two starts).
    pub fn started(&mut self, running: Running) {
        self.last_start
            .insert(running.act.source.clone(), Instant::now());
        let spans = self.history.entry(running.act.source.clone()).or_default();
        spans.push_back(Span {
            start: running.started_at,
            end: None,
            depth: running.act.depth,
        });
        if spans.len() > HISTORY {
            spans.pop_front();
        }
        self.running.insert(running.act.id, running);
    }

    /// Records a finished activation and returns it.
    pub fn finished(&mut self, id: u64) -> Option<Running> {
        let r = self.running.remove(&id)?;
        if let Some(span) = self
            .history
            .get_mut(&r.act.source)
            .and_then(|spans| spans.iter_mut().rev().find(|s| s.start == r.started_at))
        {
            span.end = Some(Utc::now());
        }
        Some(r)
    }

    /// The earliest timeout among the running activations.
    pub fn next_deadline(&self) -> Option<Instant> {
        self.running.values().map(|r| r.deadline).min()
    }
}
