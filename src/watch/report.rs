//! What watch mode shows humans who `cat` the board: `control/schedule.md` (what runs now
//! and what waits, in order) and `control/metrics.md` (per source: how many activations,
//! how they ended, how long they took). Both are rewritten as things change, are
//! git-ignored, and are never read back; the counts behind metrics.md are kept in
//! `.state/watch/metrics`.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::time::Instant;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use super::scheduler::Scheduler;
use super::sources::Source;
use crate::board::Board;
use crate::error::Result;

/// How many recent durations per source the median is taken over.
const DURATIONS: usize = 100;

/// Counts for one source.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct SourceMetrics {
    pub activations: u64,
    pub ok: u64,
    pub failed: u64,
    pub timed_out: u64,
    pub killed: u64,
    /// Activations the loop guard stopped.
    pub alerts: u64,
    /// Changes the source made itself, which did not trigger it again.
    pub own_writes: u64,
    pub total_ms: u64,
    pub max_ms: u64,
    pub recent_ms: Vec<u64>,
    pub last: Option<String>,
}

#[derive(Debug, Default, Serialize, Deserialize)]
pub struct Metrics {
    pub since: Option<DateTime<Utc>>,
    pub sources: BTreeMap<String, SourceMetrics>,
}

fn metrics_path(board: &Board) -> std::path::PathBuf {
    super::snapshot::dir(board).join("metrics")
}

impl Metrics {
    pub fn load(board: &Board) -> Metrics {
        let mut m: Metrics = super::snapshot::read_state(&metrics_path(board))
            .and_then(|t| serde_json::from_str(&t).ok())
            .unwrap_or_default();
        m.since.get_or_insert_with(Utc::now);
        m
    }

    pub fn save(&self, board: &Board) -> Result<()> {
        let text = serde_json::to_string(self).unwrap_or_default();
        super::snapshot::write_state(&metrics_path(board), text.as_bytes())
    }

    pub fn source(&mut self, name: &str) -> &mut SourceMetrics {
        self.sources.entry(name.to_string()).or_default()
    }

    /// Records how an activation ended (`ok`, `failed`, `timed-out`, `killed`).
    pub fn finished(&mut self, name: &str, result: &str, ms: u64, last: String) {
        let m = self.source(name);
        m.activations += 1;
        match result {
            "ok" => m.ok += 1,
            "timed-out" => m.timed_out += 1,
            "killed" => m.killed += 1,
            _ => m.failed += 1,
        }
        m.total_ms += ms;
        m.max_ms = m.max_ms.max(ms);
        m.recent_ms.push(ms);
        if m.recent_ms.len() > DURATIONS {
            m.recent_ms.remove(0);
        }
        m.last = Some(last);
    }
}

/// Table cells never break the table: no pipes, no line breaks.
fn cell(s: &str) -> String {
    s.chars()
        .map(|c| match c {
            '|' => '/',
            c if c.is_control() => ' ',
            c => c,
        })
        .collect()
}

pub fn render_metrics(m: &Metrics, sources: &[Source]) -> String {
    let mut out = String::from("# tavern watch: metrics\n\n");
    let since = m.since.map(crate::time::stamp).unwrap_or_default();
    let _ = writeln!(
        out,
        "Per knowledge source, since {since}. Rewritten by `tavern watch`; do not edit.\n"
    );
    out.push_str("| source | activations | ok | failed | timed out | killed | loop alerts | own writes skipped | mean | median | max | last |\n");
    out.push_str("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|\n");
    let mut names: Vec<&str> = sources.iter().map(|s| s.name.as_str()).collect();
    for name in m.sources.keys() {
        if !names.contains(&name.as_str()) {
            names.push(name);
        }
    }
    names.sort();
    let empty = SourceMetrics::default();
    for name in names {
        let s = m.sources.get(name).unwrap_or(&empty);
        let mean = s
            .total_ms
            .checked_div(s.activations)
            .map_or_else(|| "-".to_string(), crate::time::format_millis);
        let median = if s.recent_ms.is_empty() {
            "-".into()
        } else {
            let mut v = s.recent_ms.clone();
            v.sort_unstable();
            crate::time::format_millis(v[v.len() / 2])
        };
        let max = if s.activations > 0 {
            crate::time::format_millis(s.max_ms)
        } else {
            "-".into()
        };
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} | {} | {} | {} | {mean} | {median} | {max} | {} |",
            cell(name),
            s.activations,
            s.ok,
            s.failed,
            s.timed_out,
            s.killed,
            s.alerts,
            s.own_writes,
            cell(s.last.as_deref().unwrap_or("-"))
        );
    }
    out
}

/// What the watcher is doing, for schedule.md.
pub struct State<'a> {
    pub running: bool,
    pub paused: Option<String>,
    pub jobs: usize,
    pub mode: &'a str,
}

pub fn render_schedule(
    state: &State<'_>,
    sched: &Scheduler,
    sources: &[Source],
    now: Instant,
) -> String {
    let mut out = String::from("# tavern watch: schedule\n\n");
    let stamp = crate::time::stamp(Utc::now());
    if state.running {
        let _ = writeln!(
            out,
            "Updated {stamp} by `tavern watch` (pid {}, {}). Rewritten as things change; do not edit.\n",
            std::process::id(),
            state.mode
        );
    } else {
        let _ = writeln!(
            out,
            "`tavern watch` is not running (stopped at {stamp}). What waits below starts when it runs again.\n"
        );
    }
    if let Some(reason) = &state.paused {
        let _ = writeln!(
            out,
            "**Paused**: {} — no activation starts until `tavern resume`.\n",
            cell(reason)
        );
    }
    let mut running: Vec<_> = sched.running.values().collect();
    running.sort_by_key(|r| r.act.id);
    let _ = writeln!(
        out,
        "## Running ({} of {} jobs)\n",
        running.len(),
        state.jobs
    );
    if running.is_empty() {
        out.push_str("Nothing.\n\n");
    } else {
        out.push_str("| source | document | event | started | for | pid | output |\n");
        out.push_str("|---|---|---|---|---:|---:|---|\n");
        for r in running {
            let _ = writeln!(
                out,
                "| {} | {} | {} | {} | {} | {} | {} |",
                cell(&r.act.source),
                cell(&r.act.doc),
                cell(&r.act.event),
                crate::time::stamp(r.started_at),
                crate::time::format_millis(now.duration_since(r.started).as_millis() as u64),
                r.pid,
                cell(&r.output)
            );
        }
        out.push('\n');
    }
    let mut queue: Vec<_> = sched.queue.iter().collect();
    queue.sort_by(|a, b| super::scheduler::queue_order(a, b));
    let _ = writeln!(out, "## Waiting ({})\n", queue.len());
    if queue.is_empty() {
        out.push_str("Nothing.\n");
        return out;
    }
    out.push_str("| # | source | priority | document | event | since | waits for |\n");
    out.push_str("|---:|---|---:|---|---|---|---|\n");
    for (i, a) in queue.iter().enumerate() {
        let busy = sched
            .running
            .values()
            .filter(|r| r.act.source == a.source)
            .count();
        let why = match sources.iter().find(|s| s.name == a.source) {
            None => "its source (gone or invalid)".to_string(),
            Some(_) if state.paused.is_some() => "resume".to_string(),
            Some(s) if busy >= s.max_parallel => format!("max_parallel {}", s.max_parallel),
            Some(_) if sched.running.len() >= state.jobs => "a free job".to_string(),
            Some(s) if !s.cooldown.is_zero() => "cooldown".to_string(),
            Some(_) => "its turn".to_string(),
        };
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} | {} | {why} |",
            i + 1,
            cell(&a.source),
            a.priority,
            cell(&a.doc),
            cell(&a.event),
            crate::time::stamp(a.queued_at)
        );
    }
    out
}

/// Writes control/schedule.md and control/metrics.md.
pub fn write(board: &Board, schedule: &str, metrics: &str) -> Result<()> {
    // Whole or not at all, but without fsync: they are rewritten often and lose nothing.
    use crate::layout;
    // Never where the board was: a board removed as they are written stays removed.
    let (root, write) = (&board.root, super::snapshot::write_in_board);
    write(root, &layout::schedule(root), schedule.as_bytes())?;
    write(root, &layout::metrics(root), metrics.as_bytes())
}
