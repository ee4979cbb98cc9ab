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

    /// Records a started activation at `now`, after its start was logged: a cooldown counts
    /// from then, so the log's times show at least the cooldown between two starts.
    pub fn started(&mut self, running: Running, now: Instant) {
        self.last_start.insert(running.act.source.clone(), now);
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::watch::areas;
    use crate::watch::sources::{self, On};

    fn board() -> Board {
        Board {
            root: std::path::PathBuf::from("/nonexistent/.tavern"),
            config: crate::board::parse_config(crate::board::DEFAULT_BOARD_YAML).unwrap(),
            found: Default::default(),
        }
    }

    fn source(name: &str, fields: &str) -> Source {
        let text = format!("---\nrun: ./x.sh {{id}}\n{fields}---\n");
        sources::parse(&board(), name, &text).unwrap_or_else(|p| panic!("{p:?}"))
    }

    fn change(rel: &str, events: Vec<On>, actor: Option<&str>, seq: u64) -> Change {
        Change {
            tracked: areas::classify(rel).unwrap(),
            events,
            actor: actor.map(str::to_string),
            seq,
            at: Utc::now(),
            doc: None,
        }
    }

    fn guard() -> Guard {
        Guard {
            max_chain: 3,
            max_per_doc: 100,
            rate_window: Duration::from_secs(600),
        }
    }

    fn queued(offers: &[Offer]) -> Vec<(String, String, String)> {
        offers
            .iter()
            .filter_map(|o| match o {
                Offer::Queued(a) => Some((a.source.clone(), a.doc.clone(), a.event.clone())),
                _ => None,
            })
            .collect()
    }

    fn run(s: &mut Scheduler, act: Activation, at: DateTime<Utc>, now: Instant) {
        s.started(
            Running {
                act,
                pid: 1,
                started: now,
                started_at: at,
                deadline: now + Duration::from_secs(60),
                output: String::new(),
                timed_out: false,
                killed: false,
            },
            now,
        );
    }

    fn names(acts: &[Activation]) -> Vec<&str> {
        acts.iter().map(|a| a.source.as_str()).collect()
    }

    #[test]
    fn a_change_queues_the_sources_that_watch_and_listen_for_it() {
        let srcs = [
            source("all", ""),
            source("deletes", "on: deleted\n"),
            source("designs", "watch: solutions/*/design.md\n"),
            source("review", "on: transition:review\n"),
        ];
        let mut s = Scheduler::default();
        let now = Instant::now();
        let c = change(
            "tasks/task-1.md",
            vec![On::Changed, On::Transition("review".into())],
            Some("coder"),
            7,
        );
        let offers = s.offer(&c, &srcs, &guard(), now);
        assert_eq!(
            queued(&offers),
            [
                ("all".into(), "tasks/task-1.md".into(), "changed".into()),
                (
                    "review".into(),
                    "tasks/task-1.md".into(),
                    "transition:review".into()
                ),
            ]
        );
        let Offer::Queued(a) = &offers[0] else {
            unreachable!()
        };
        assert_eq!(
            (a.doc_id.as_str(), a.region.as_str(), a.seq, a.depth),
            ("task-1", "tasks", 7, 1)
        );
        let d = change("solutions/task-1/design.md", vec![On::Created], None, 8);
        assert_eq!(
            queued(&s.offer(&d, &srcs, &guard(), now)),
            [(
                "designs".into(),
                "solutions/task-1/design.md".into(),
                "created".into()
            )]
        );
        assert_eq!(s.queue.len(), 3);
    }

    #[test]
    fn a_name_that_is_no_id_never_reaches_a_source() {
        let srcs = [source("all", "")];
        let mut s = Scheduler::default();
        let c = change("tasks/-rf.md", vec![On::Created], None, 1);
        assert_eq!(s.offer(&c, &srcs, &guard(), Instant::now()), []);
        assert!(s.queue.is_empty());
    }

    #[test]
    fn a_sources_own_write_does_not_start_it_and_a_waiting_one_is_merged() {
        let srcs = [source("a", ""), source("b", "")];
        let mut s = Scheduler::default();
        let now = Instant::now();
        let mine = change("tasks/t.md", vec![On::Changed], Some("a"), 1);
        let offers = s.offer(&mine, &srcs, &guard(), now);
        assert_eq!(offers[0], Offer::OwnWrite { source: "a".into() });
        assert_eq!(
            queued(&offers),
            [("b".into(), "tasks/t.md".into(), "changed".into())]
        );
        // While b waits, a second change of the file is merged into it: one run, for the
        // latest change.
        let again = change("tasks/t.md", vec![On::Deleted, On::Changed], Some("x"), 2);
        let offers = s.offer(&again, &srcs, &guard(), now);
        let Offer::Merged(m) = &offers[1] else {
            panic!("{offers:?}")
        };
        assert_eq!(
            (m.source.as_str(), m.seq, m.event.as_str()),
            ("b", 2, "changed")
        );
        assert_eq!(s.queue.len(), 2);
        assert_eq!(s.queue[1].seq, 2);
    }

    #[test]
    fn the_loop_guard_stops_a_chain_deeper_than_max_chain() {
        let srcs = [source("a", ""), source("b", "")];
        let mut s = Scheduler::default();
        let now = Instant::now();
        let g = Guard {
            max_chain: 2,
            ..guard()
        };
        // A person's change: depth 1.
        let c = change("tasks/t.md", vec![On::Changed], Some("human"), 1);
        s.offer(&c, &srcs[..1], &g, now);
        let (start, _) = s.pick(&srcs, 4, now);
        assert_eq!(start[0].depth, 1);
        let t0 = Utc::now();
        run(&mut s, start[0].clone(), t0, now);
        // a's write while it runs: b at depth 2, within the limit.
        let mut c = change("tasks/u.md", vec![On::Changed], Some("a"), 2);
        c.at = t0 + chrono::Duration::milliseconds(20);
        let offers = s.offer(&c, &srcs, &g, now);
        assert_eq!(
            queued(&offers),
            [("b".into(), "tasks/u.md".into(), "changed".into())]
        );
        assert_eq!(s.queue[0].depth, 2);
        let (start, _) = s.pick(&srcs, 4, now);
        run(&mut s, start[0].clone(), t0, now);
        // b's write: a would be activation 3 of the chain.
        let mut c = change("tasks/v.md", vec![On::Changed], Some("b"), 3);
        c.at = t0 + chrono::Duration::milliseconds(40);
        let offers = s.offer(&c, &srcs, &g, now);
        assert!(
            matches!(&offers[0], Offer::Guarded { source, why } if source == "a" && why.contains("activation 3 of a chain") && why.contains("limit 2")),
            "{offers:?}"
        );
        assert!(s.queue.is_empty());
        // A write by b long after its run ended is a new chain.
        let id = *s.running.keys().max().unwrap();
        s.finished(id);
        let mut c = change("tasks/v.md", vec![On::Changed], Some("b"), 4);
        c.at = Utc::now() + chrono::Duration::seconds(30);
        assert_eq!(queued(&s.offer(&c, &srcs, &g, now)).len(), 1);
        assert_eq!(s.queue[0].depth, 1);
    }

    #[test]
    fn the_rate_guard_alerts_once_per_window_then_lets_the_document_go() {
        let srcs = [source("a", "")];
        let g = Guard {
            max_per_doc: 2,
            rate_window: Duration::from_secs(60),
            ..guard()
        };
        let mut s = Scheduler::default();
        let t = Instant::now();
        let offer = |s: &mut Scheduler, seq: u64, now: Instant| {
            let c = change("tasks/t.md", vec![On::Changed], Some("h"), seq);
            let offers = s.offer(&c, &srcs, &g, now);
            // Taken from the queue each time, so that nothing merges.
            s.queue.clear();
            offers
        };
        assert_eq!(queued(&offer(&mut s, 1, t)).len(), 1);
        assert_eq!(
            queued(&offer(&mut s, 2, t + Duration::from_secs(1))).len(),
            1
        );
        let third = offer(&mut s, 3, t + Duration::from_secs(2));
        assert!(
            matches!(&third[..], [Offer::Guarded { why, .. }] if why.contains("started 2 activations within 1m")),
            "{third:?}"
        );
        // Dropped without a second alert within the window.
        assert_eq!(offer(&mut s, 4, t + Duration::from_secs(30)), []);
        // Once the first two are out of the window, it starts again.
        assert_eq!(
            queued(&offer(&mut s, 5, t + Duration::from_secs(62))).len(),
            1
        );
    }

    #[test]
    fn pick_honours_priority_jobs_max_parallel_and_cooldown() {
        let srcs = [
            source("low", ""),
            source("high", "priority: 5\nmax_parallel: 2\n"),
            source("slow", "cooldown: 10s\n"),
        ];
        let mut s = Scheduler::default();
        let now = Instant::now();
        for (i, doc) in ["a", "b", "c"].iter().enumerate() {
            let c = change(
                &format!("tasks/{doc}.md"),
                vec![On::Changed],
                None,
                i as u64,
            );
            s.offer(&c, &srcs, &guard(), now);
        }
        assert_eq!(s.queue.len(), 9);
        // Four jobs: high twice (its max_parallel), then the oldest of the rest; slow only
        // once (its cooldown starts with the first).
        let (start, dropped) = s.pick(&srcs, 4, now);
        assert!(dropped.is_empty());
        assert_eq!(names(&start), ["high", "high", "low", "slow"]);
        assert_eq!(
            start.iter().map(|a| a.doc.as_str()).collect::<Vec<_>>(),
            ["tasks/a.md", "tasks/b.md", "tasks/a.md", "tasks/a.md"]
        );
        for a in &start {
            run(&mut s, a.clone(), Utc::now(), now);
        }
        // All jobs busy: nothing more.
        assert_eq!(s.pick(&srcs, 4, now).0, []);
        // One of high ends: its third may start, the others wait for jobs.
        let high = s
            .running
            .values()
            .find(|r| r.act.source == "high")
            .unwrap()
            .act
            .id;
        s.finished(high);
        assert_eq!(names(&s.pick(&srcs, 4, now).0), ["high"]);
        // The cooldown: slow's next start waits 10s from its last, whatever the jobs.
        let slow = s
            .running
            .values()
            .find(|r| r.act.source == "slow")
            .unwrap()
            .act
            .id;
        s.finished(slow);
        assert_eq!(
            s.pick(&srcs, 10, now + Duration::from_secs(9))
                .0
                .iter()
                .filter(|a| a.source == "slow")
                .count(),
            0
        );
        assert_eq!(
            s.next_cooldown_end(&srcs, now + Duration::from_secs(9)),
            Some(now + Duration::from_secs(10))
        );
        let (later, _) = s.pick(&srcs, 10, now + Duration::from_secs(10));
        assert_eq!(later.iter().filter(|a| a.source == "slow").count(), 1);
    }

    #[test]
    fn an_activation_of_a_source_that_is_gone_is_dropped() {
        let srcs = [source("a", ""), source("b", "")];
        let mut s = Scheduler::default();
        let now = Instant::now();
        s.offer(
            &change("tasks/t.md", vec![On::Created], None, 1),
            &srcs,
            &guard(),
            now,
        );
        let (start, dropped) = s.pick(&srcs[1..], 4, now);
        assert_eq!((names(&start), names(&dropped)), (vec!["b"], vec!["a"]));
        assert!(s.queue.is_empty());
    }

    #[test]
    fn the_queue_order_is_priority_then_age_then_log_order() {
        let t = Utc::now();
        let a = |id: u64, priority: i64, age_ms: i64, seq: u64| Activation {
            id,
            source: format!("s{id}"),
            doc: "tasks/t.md".into(),
            doc_id: "t".into(),
            region: "tasks".into(),
            event: "changed".into(),
            seq,
            depth: 1,
            priority,
            queued_at: t - chrono::Duration::milliseconds(age_ms),
        };
        let mut q = [
            a(1, 0, 0, 9),
            a(2, 0, 50, 9),
            a(3, 1, 0, 9),
            a(4, 0, 50, 3),
            a(5, 0, 50, 3),
        ];
        q.sort_by(queue_order);
        assert_eq!(q.iter().map(|a| a.id).collect::<Vec<_>>(), [3, 4, 5, 2, 1]);
    }

    #[test]
    fn requeue_gives_a_new_id_and_never_duplicates() {
        let srcs = [source("a", "")];
        let mut s = Scheduler::default();
        let now = Instant::now();
        s.offer(
            &change("tasks/t.md", vec![On::Created], None, 1),
            &srcs,
            &guard(),
            now,
        );
        let first = s.queue[0].clone();
        s.requeue(first.clone());
        assert_eq!(s.queue.len(), 1);
        let (start, _) = s.pick(&srcs, 4, now);
        s.requeue(start[0].clone());
        assert_eq!(s.queue.len(), 1);
        assert_ne!(s.queue[0].id, first.id);
        assert_eq!(s.queue[0].seq, first.seq);
    }

    #[test]
    fn the_queue_and_what_runs_survive_a_restart() {
        let dir = tempfile::tempdir().unwrap();
        crate::board::init(dir.path()).unwrap();
        let b = Board::open(&dir.path().join(".tavern")).unwrap();
        let srcs = [source("a", ""), source("b", "")];
        let mut s = Scheduler::default();
        let now = Instant::now();
        s.offer(
            &change("tasks/t.md", vec![On::Created], None, 1),
            &srcs,
            &guard(),
            now,
        );
        let (start, _) = s.pick(&srcs, 1, now);
        run(&mut s, start[0].clone(), Utc::now(), now);
        s.save(&b).unwrap();
        s.save_running(&b).unwrap();
        let loaded = Scheduler::load(&b);
        assert_eq!(loaded.queue, s.queue);
        assert_eq!(names(&loaded.queue), ["b"]);
        let lost = take_lost(&b);
        assert_eq!(lost.len(), 1);
        assert_eq!(lost[0].act, start[0]);
        assert!(take_lost(&b).is_empty(), "taken once");
    }
}
