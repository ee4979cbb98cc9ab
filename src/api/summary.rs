//! `summary`: what an agent needs after a context reset, in one read: who is active and
//! what they hold, open findings by severity, tasks by state, open questions, and what
//! looks stuck.

use chrono::Utc;
use indexmap::IndexMap;
use serde::Serialize;

use super::agents::Status;
use super::view::Skipped;
use crate::agents;
use crate::board::Board;
use crate::doc::{Document, Region};
use crate::error::{Command, Names, Result};
use crate::scan;

const SEVERITIES: [&str; 5] = ["critical", "high", "medium", "low", "info"];

/// A document in one line: what it is, where it stands, who holds it.
#[derive(Clone, Debug, Serialize)]
pub struct Brief {
    pub id: String,
    pub title: String,
    pub status: Option<String>,
    pub claimed_by: Option<String>,
    pub updated_at: Option<String>,
}

impl Brief {
    fn of(doc: &Document) -> Brief {
        Brief {
            id: doc.id().to_string(),
            title: doc.title().to_string(),
            status: doc.status().map(str::to_string),
            claimed_by: doc.str("claimed_by").map(str::to_string),
            updated_at: doc.str("updated_at").map(str::to_string),
        }
    }
}

#[derive(Clone, Debug, Serialize)]
pub struct AgentBrief {
    pub id: String,
    pub status: Status,
    pub last_seen: String,
    pub holds: Vec<Brief>,
}

pub use super::observations::Finding;
pub use super::waiting::OpenQuestion;

/// Something that looks stuck, and why.
#[derive(Clone, Debug, Serialize)]
pub struct Stuck {
    pub id: String,
    pub why: String,
}

/// What an agent needs after a context reset, in one read.
///
/// Each list holds at most the summary's limit of items (the best, or the oldest for
/// questions), and [`Totals`] says how many there are in all: a digest of a board of 100k
/// tasks is not 100k lines, and what it holds while it reads does not grow with the board.
#[derive(Clone, Debug, Serialize)]
pub struct Summary {
    pub context: Option<String>,
    pub generated_at: String,
    /// The pause's reason when the board is paused: the first thing to know after a
    /// context reset, since nothing can be claimed.
    pub paused: Option<String>,
    /// How many items each list shows at most (`null`: every one).
    pub limit: Option<usize>,
    /// Registered agents that are not gone.
    pub agents: Vec<AgentBrief>,
    /// Open or acknowledged findings by severity, most severe first; empty ones left out.
    pub findings: IndexMap<String, Vec<Finding>>,
    /// Tasks by state, in the workflow's order, best first; empty states left out.
    pub tasks: IndexMap<String, Vec<Brief>>,
    /// Open questions, oldest first: those waiting for an answer or a human's decision
    /// (forged decisions included).
    pub questions: Vec<OpenQuestion>,
    pub stuck: Vec<Stuck>,
    /// How many items each list has in all, shown or not.
    pub totals: Totals,
    pub skipped: Vec<Skipped>,
}

/// How many items each list of a [`Summary`] has in all.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Totals {
    /// Tasks a registered agent holds, by agent.
    pub holds: IndexMap<String, usize>,
    /// Open findings by severity.
    pub findings: IndexMap<String, usize>,
    /// Tasks by state.
    pub tasks: IndexMap<String, usize>,
    pub questions: usize,
    pub stuck: usize,
}

/// How many items each list of the summary shows unless asked for more: enough to act on
/// after a context reset, and what a model's context can take of every list at once.
pub const LIMIT: usize = 20;

/// The summary of the board, or of one context. Expired leases are swept first;
/// `stuck_after` is how long without change before a claimed task or an unacknowledged
/// finding looks stuck; `limit` is how many items each list shows at most (`None`: all).
pub fn summary(
    board: &Board,
    context: Option<&str>,
    stuck_after: chrono::Duration,
    limit: Option<usize>,
) -> Result<Summary> {
    crate::ops::sweep::sweep(board)?;
    let now = Utc::now();
    let workflow = &board.config.workflow;
    let agents: Vec<agents::Agent> = agents::all(board)?
        .into_iter()
        .filter(|a| !a.gone())
        .collect();
    let in_context =
        |d: &Document| context.is_none_or(|c| d.list("context").iter().any(|x| x == c));
    let old = |t: Option<&str>| {
        t.and_then(|t| crate::time::parse_time(t, now))
            .is_some_and(|t| now - t > stuck_after)
    };
    // Each document becomes the little the summary shows of it on the thread that read
    // it, and only if it is among the first `limit` of its list so far: neither the board
    // nor every task's line is held.
    let decisions = crate::ops::decisions::Annotator::new(board);
    let kept = std::sync::Mutex::new(Kept::new(limit, &agents));
    let each = |mut d: Document| {
        if !in_context(&d) {
            return;
        }
        let key = scan::OrderKey::best_first(&d);
        match d.region {
            Region::Tasks => {
                let status = d.status().unwrap_or("");
                let claimed_by = d.str("claimed_by");
                let updated = d.str("updated_at");
                let held = claimed_by.filter(|_| !workflow.is_terminal(status));
                let why = if status == "blocked" {
                    Some(format!("blocked since {}", updated.unwrap_or("?")))
                } else if held.is_some() && !workflow.is_claimable(status) && old(updated) {
                    Some(format!(
                        "{status} by {} with no change since {}",
                        claimed_by.unwrap_or("?"),
                        updated.unwrap_or("?")
                    ))
                } else {
                    None
                };
                let mut k = lock(&kept);
                k.tasks
                    .entry(status.to_string())
                    .or_insert_with(|| First::new(limit))
                    .offer(&key, || Brief::of(&d));
                if let Some(holds) = held.and_then(|a| k.holds.get_mut(a)) {
                    holds.offer(&key, || Brief::of(&d));
                }
                if let Some(why) = why {
                    let stuck = Stuck {
                        id: d.id().to_string(),
                        why,
                    };
                    k.stuck.offer(&(true, key), || stuck);
                }
            }
            Region::Observations => {
                let status = d.status();
                if !matches!(status, Some("open") | Some("acknowledged")) {
                    return;
                }
                let why = (status == Some("open") && old(Some(d.created_at())))
                    .then(|| format!("finding not acknowledged since {}", d.created_at()));
                let severity = d.text("severity").unwrap_or_default();
                let mut k = lock(&kept);
                if let Some(why) = why {
                    let stuck = Stuck {
                        id: d.id().to_string(),
                        why,
                    };
                    k.stuck.offer(&(false, key.clone()), || stuck);
                }
                if let Some(list) = k.findings.get_mut(severity.as_str()) {
                    list.offer(&key, || Finding::of(&d));
                }
            }
            Region::Questions => {
                decisions.annotate(&mut d);
                if !crate::ops::decisions::is_open(&d) {
                    return;
                }
                let (parsed, at, text) = crate::time::stamp_key(d.created_at());
                let key = ((parsed, at, text.to_string()), d.id().to_string(), key);
                lock(&kept)
                    .questions
                    .offer(&key, || OpenQuestion::of(&d, false));
            }
        }
    };
    // A task needs parsing only while it may still be among the first of a list it
    // belongs in: its state's, its holder's, the stuck. Its head tells which lists those
    // are (status, claimed_by, updated_at) and where it would stand in them (priority and
    // age); one that none of them can take counts in each, unparsed. On a board that has
    // worked a while, most tasks are finished, or far down their lists.
    let by_head = |region: Region, h: &crate::index::files::Head<'_>| {
        if region != Region::Tasks || context.is_some() {
            return true;
        }
        let status = h.status.as_deref().unwrap_or("");
        let claimed_by = h.claimed_by.as_deref();
        let held = claimed_by.filter(|_| !workflow.is_terminal(status));
        let stuck = status == "blocked"
            || (held.is_some() && !workflow.is_claimable(status) && old(h.updated_at.as_deref()));
        let passed = |list: &First<scan::OrderKey, Brief>| {
            limit == Some(0)
                || list
                    .bound
                    .as_ref()
                    .is_some_and(|b| b.before_every(h.priority, &h.created))
        };
        let mut k = lock(&kept);
        let registered = held.is_some_and(|a| k.holds.contains_key(a));
        // Looked up by the borrowed status first: a name is made once per state, not once
        // per task asked about.
        if !k.tasks.contains_key(status) {
            k.tasks.insert(status.to_string(), First::new(limit));
        }
        if !passed(&k.tasks[status]) {
            return true;
        }
        if registered
            && held
                .and_then(|a| k.holds.get(a))
                .is_some_and(|l| !passed(l))
        {
            return true;
        }
        // The stuck list holds findings (`false`) before tasks (`true`).
        let stuck_passed = limit == Some(0)
            || k.stuck
                .bound
                .as_ref()
                .is_some_and(|(task, b)| !task || b.before_every(h.priority, &h.created));
        if stuck && !stuck_passed {
            return true;
        }
        // No list can take it: it counts in each it belongs in.
        if let Some(state) = k.tasks.get_mut(status) {
            state.seen += 1;
        }
        if let Some(holds) = held.filter(|_| registered).and_then(|a| k.holds.get_mut(a)) {
            holds.seen += 1;
        }
        if stuck {
            k.stuck.seen += 1;
        }
        false
    };
    let skipped = scan::each_by_head(board, &Region::ALL, &by_head, &each)?;
    decisions.finish()?;
    let mut kept = kept.into_inner().unwrap_or_else(|p| p.into_inner());
    let mut totals = Totals::default();

    let mut agents_out = Vec::new();
    for a in &agents {
        let holds = kept
            .holds
            .swap_remove(a.id())
            .unwrap_or_else(|| First::new(limit));
        totals.holds.insert(a.id().to_string(), holds.seen);
        agents_out.push(AgentBrief {
            id: a.id().to_string(),
            status: Status::of(a, board, now, holds.seen > 0),
            last_seen: crate::time::stamp_millis(a.last_seen),
            holds: holds.into_sorted(),
        });
    }

    let mut findings = IndexMap::new();
    for (sev, list) in kept.findings {
        if list.seen > 0 {
            totals.findings.insert(sev.to_string(), list.seen);
            findings.insert(sev.to_string(), list.into_sorted());
        }
    }

    let mut by_state = IndexMap::new();
    for state in &workflow.states {
        if let Some(list) = kept.tasks.swap_remove(state.as_str()) {
            totals.tasks.insert(state.clone(), list.seen);
            by_state.insert(state.clone(), list.into_sorted());
        }
    }

    totals.questions = kept.questions.seen;
    totals.stuck = kept.stuck.seen;
    Ok(Summary {
        context: context.map(str::to_string),
        generated_at: crate::time::stamp(now),
        paused: board.paused(),
        limit,
        agents: agents_out,
        findings,
        tasks: by_state,
        questions: kept.questions.into_sorted(),
        stuck: kept.stuck.into_sorted(),
        totals,
        skipped,
    })
}

/// The key questions are listed by: oldest first (as [`crate::time::cmp_stamps`] orders
/// their creation times), then by id, then in the documents' order.
type QuestionKey = (
    (bool, Option<chrono::DateTime<Utc>>, String),
    String,
    scan::OrderKey,
);

/// What a summary keeps of the documents it reads: the first items of each list so far.
struct Kept {
    /// By status, whether the workflow knows it or not (only its states are shown).
    tasks: IndexMap<String, First<scan::OrderKey, Brief>>,
    /// By registered agent: the tasks it holds.
    holds: IndexMap<String, First<scan::OrderKey, Brief>>,
    /// By severity, most severe first.
    findings: IndexMap<&'static str, First<scan::OrderKey, Finding>>,
    questions: First<QuestionKey, OpenQuestion>,
    /// Findings (`false`) before tasks (`true`), each in the documents' order.
    stuck: First<(bool, scan::OrderKey), Stuck>,
}

impl Kept {
    fn new(limit: Option<usize>, agents: &[agents::Agent]) -> Kept {
        Kept {
            tasks: IndexMap::new(),
            holds: agents
                .iter()
                .map(|a| (a.id().to_string(), First::new(limit)))
                .collect(),
            findings: SEVERITIES
                .iter()
                .map(|&sev| (sev, First::new(limit)))
                .collect(),
            questions: First::new(limit),
            stuck: First::new(limit),
        }
    }
}

/// The first `limit` items by key of all those offered (every one without a limit),
/// holding at most twice that many at once, and how many were offered in all. An item is
/// built only when its key may still be among the first.
struct First<K, T> {
    limit: Option<usize>,
    items: Vec<(K, T)>,
    /// The last key kept at the latest trim: nothing after it can be among the first.
    bound: Option<K>,
    seen: usize,
}

impl<K: Ord + Clone, T> First<K, T> {
    fn new(limit: Option<usize>) -> Self {
        First {
            limit,
            items: Vec::new(),
            bound: None,
            seen: 0,
        }
    }

    fn offer(&mut self, key: &K, item: impl FnOnce() -> T) {
        self.seen += 1;
        if self.limit == Some(0) || self.bound.as_ref().is_some_and(|b| key > b) {
            return;
        }
        self.items.push((key.clone(), item()));
        if let Some(limit) = self.limit
            && self.items.len() >= 2 * limit
        {
            self.trim(limit);
        }
    }

    /// Keeps the first `limit` items, and remembers the last of them as the bound.
    fn trim(&mut self, limit: usize) {
        self.items
            .select_nth_unstable_by(limit - 1, |a, b| a.0.cmp(&b.0));
        self.items.truncate(limit);
        self.bound = self.items.iter().map(|(k, _)| k).max().cloned();
    }

    fn into_sorted(mut self) -> Vec<T> {
        self.items.sort_unstable_by(|a, b| a.0.cmp(&b.0));
        if let Some(limit) = self.limit {
            self.items.truncate(limit);
        }
        self.items.into_iter().map(|(_, item)| item).collect()
    }
}

fn lock<T>(m: &std::sync::Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// Text for one line of markdown: control characters (a hostile title) become spaces.
fn blank_controls(s: &str) -> String {
    s.chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect()
}

/// One item of the summary's markdown: `- ID title (owner)`, control characters blanked.
fn item(id: &str, title: &str, owner: Option<&str>, extra: &str) -> String {
    let mut s = format!("- {id} {title}");
    if let Some(owner) = owner {
        s.push_str(&format!(" ({owner})"));
    }
    blank_controls(&s) + extra + "\n"
}

impl Summary {
    /// The summary as markdown, for people and for a model's context alike; the commands
    /// that list what a list leaves out are named by the front-end's `names`.
    pub fn markdown(&self, names: &dyn Names) -> String {
        let mut o = match &self.context {
            Some(c) => format!("# Board summary: context {}\n", blank_controls(c)),
            None => "# Board summary\n".to_string(),
        };
        if let Some(reason) = &self.paused {
            o.push_str(&format!(
                "\n**The board is paused**: {}. No task can be claimed and no knowledge source starts until it is resumed.\n",
                blank_controls(reason)
            ));
        }
        o.push_str("\n## Agents\n\n");
        if self.agents.is_empty() {
            o.push_str("No registered agents.\n");
        }
        for a in &self.agents {
            let holds: Vec<String> = a
                .holds
                .iter()
                .map(|t| format!("{} [{}]", t.id, t.status.as_deref().unwrap_or("")))
                .collect();
            let total = self.totals.holds.get(&a.id).copied().unwrap_or(holds.len());
            let mut holds = if holds.is_empty() {
                "nothing".to_string()
            } else {
                holds.join(", ")
            };
            if total > a.holds.len() {
                let list = Command::ListWhere(Region::Tasks, format!("claimed_by={}", a.id));
                holds.push_str(&format!(
                    " and {} more: `{}`",
                    total - a.holds.len(),
                    names.command(&list)
                ));
            }
            o.push_str(&format!(
                "- {} ({}): holds {}\n",
                a.id,
                a.status.name(),
                blank_controls(&holds)
            ));
        }
        o.push_str("\n## Open findings\n\n");
        if self.findings.is_empty() {
            o.push_str("None.\n");
        }
        for (sev, list) in &self.findings {
            let total = self.totals.findings.get(sev).copied().unwrap_or(list.len());
            if total > list.len() {
                o.push_str(&format!("{sev} ({total}):\n"));
            } else {
                o.push_str(&format!("{sev}:\n"));
            }
            for f in list {
                let about = if f.about.is_empty() {
                    String::new()
                } else {
                    format!(" — about {}", f.about.join(", "))
                };
                o.push_str(&item(&f.id, &f.title, None, &about));
            }
            let query = format!("severity={sev} status=open,acknowledged");
            o.push_str(&self.more(names, list.len(), total, Region::Observations, &query));
        }
        o.push_str("\n## Tasks\n\n");
        if self.tasks.is_empty() {
            o.push_str("None.\n");
        }
        for (state, list) in &self.tasks {
            let total = self.totals.tasks.get(state).copied().unwrap_or(list.len());
            o.push_str(&format!("{state} ({total}):\n"));
            for t in list {
                o.push_str(&item(&t.id, &t.title, t.claimed_by.as_deref(), ""));
            }
            let query = format!("status={state}");
            o.push_str(&self.more(names, list.len(), total, Region::Tasks, &query));
        }
        o.push_str("\n## Open questions\n\n");
        if self.questions.is_empty() {
            o.push_str("None.\n");
        }
        for q in &self.questions {
            let mut extra = format!(" — asked by {}", q.asked_by.as_deref().unwrap_or("?"));
            if !q.blocks.is_empty() {
                extra.push_str(&format!(", blocks {}", q.blocks.join(", ")));
            }
            if let Some(d) = q.decision.as_ref().filter(|d| d.is_forged()) {
                extra.push_str(&format!(" — {}", blank_controls(&d.describe())));
            }
            o.push_str(&item(&q.id, &q.title, None, &extra));
        }
        if self.totals.questions > self.questions.len() {
            o.push_str(&format!(
                "- … and {} more: `{}`\n",
                self.totals.questions - self.questions.len(),
                names.command(&Command::Questions)
            ));
        }
        o.push_str("\n## Looks stuck\n\n");
        if self.stuck.is_empty() {
            o.push_str("Nothing.\n");
        }
        for s in &self.stuck {
            o.push_str(&blank_controls(&format!("- {}: {}", s.id, s.why)));
            o.push('\n');
        }
        if self.totals.stuck > self.stuck.len() {
            o.push_str(&format!(
                "- … and {} more\n",
                self.totals.stuck - self.stuck.len()
            ));
        }
        o
    }

    /// The line after a list cut at the limit: how many more, and the listing of `region`
    /// by `query` that shows them (of this summary's context when it can be written as a
    /// query value).
    fn more(
        &self,
        names: &dyn Names,
        shown: usize,
        total: usize,
        region: Region,
        query: &str,
    ) -> String {
        if total <= shown {
            return String::new();
        }
        let context = self
            .context
            .as_deref()
            .filter(|c| {
                !c.is_empty()
                    && c.bytes()
                        .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
            })
            .map(|c| format!(" context={c}"))
            .unwrap_or_default();
        let list = Command::ListWhere(region, format!("{query}{context}"));
        blank_controls(&format!(
            "- … and {} more: `{}`",
            total - shown,
            names.command(&list)
        )) + "\n"
    }
}

/// What an agent reads after a context reset or between steps: the summary, and the log
/// entries new to it (at most `limit`; its cursor moves past them).
#[derive(Debug)]
pub struct CatchUp {
    pub summary: Summary,
    pub changes: super::history::Events,
}

/// The summary of the board and what changed since `actor` last looked, moving its
/// cursor past what is returned (the `events` cursor: the CLI's `tavern events` and this
/// share it).
pub fn catch_up(board: &Board, actor: &str, limit: usize) -> Result<CatchUp> {
    let summary = summary(board, None, chrono::Duration::hours(1), Some(LIMIT))?;
    let changes = super::history::events(board, actor, None, Some(limit))?;
    super::history::seen(board, actor, &changes.entries)?;
    Ok(CatchUp { summary, changes })
}

#[cfg(test)]
mod tests {
    use super::First;
    use proptest::prelude::*;

    proptest! {
        /// Offered in any order, [`First`] keeps exactly the first `limit` keys of a full
        /// sort (all of them without a limit) and counts every offer.
        #[test]
        fn first_keeps_what_a_sort_and_cut_keeps(
            keys in proptest::collection::vec(0u16..500, 0..200),
            limit in proptest::option::of(0usize..12),
        ) {
            let mut first = First::new(limit);
            let mut built = 0;
            for (i, k) in keys.iter().enumerate() {
                first.offer(&(*k, i), || {
                    built += 1;
                    (*k, i)
                });
            }
            let mut want: Vec<(u16, usize)> =
                keys.iter().enumerate().map(|(i, k)| (*k, i)).collect();
            want.sort();
            if let Some(limit) = limit {
                want.truncate(limit);
                // An item is built only while it may be among the first: at most the
                // first `2 * limit` offers and those better than the bound after them.
                prop_assert!(limit > 0 || built == 0);
            }
            prop_assert_eq!(first.seen, keys.len());
            prop_assert_eq!(first.into_sorted(), want);
        }
    }
}
