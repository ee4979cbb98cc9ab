//! Read models for a human watching the board: the board in columns by workflow state (with
//! what blocks each task), what waits on a human, agents, findings and a page of the log.
//! Typed results for front-ends to render; nothing here prints or writes.

use std::collections::HashMap;

use chrono::Utc;
use serde::Serialize;
use serde_json::{Map, Value};

use crate::board::Board;
use crate::doc::decision::Decision;
use crate::doc::{Document, Region};
use crate::error::Result;
use crate::log::Entry;
use crate::query::Query;
use crate::scan::{self, Skipped};

/// A file a reader skipped, as data.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct SkippedFile {
    pub path: String,
    pub problem: String,
}

fn skipped(s: &[Skipped]) -> Vec<SkippedFile> {
    s.iter()
        .map(|s| SkippedFile {
            path: s.path.clone(),
            problem: s.problem.clone(),
        })
        .collect()
}

/// Something a task waits for: a dependency not in a success state, or an open question
/// that lists the task under `blocks`.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Blocker {
    pub id: String,
    /// `task` or `question`.
    pub kind: &'static str,
    /// The dependency's status (`missing` if it is not on the board), or the question's
    /// title.
    pub what: String,
}

/// A task as a card on the board.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Card {
    pub id: String,
    pub title: String,
    pub status: String,
    pub priority: Option<i64>,
    pub claimed_by: Option<String>,
    pub created_at: String,
    pub updated_at: Option<String>,
    pub tags: Vec<String>,
    pub depends_on: Vec<String>,
    pub blockers: Vec<Blocker>,
    pub rev: u64,
}

/// One column: a workflow state, how many tasks are in it (matching the filter), and one
/// page of them, best first.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Column {
    pub state: String,
    pub total: usize,
    pub offset: usize,
    pub cards: Vec<Card>,
}

#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct BoardView {
    /// The workflow's states in order, then a column for tasks in a state it does not
    /// name (if any).
    pub columns: Vec<Column>,
    /// Tasks on the board (matching or not).
    pub tasks: usize,
    pub skipped: Vec<SkippedFile>,
}

/// Which page of each column to show: `per_column` cards from `offsets[state]` (default 0).
#[derive(Clone, Debug, Default)]
pub struct Paging {
    pub per_column: usize,
    pub offsets: HashMap<String, usize>,
    /// Only these columns (all when empty).
    pub only: Vec<String>,
}

/// The column of tasks whose state the workflow does not name.
pub const OTHER_STATE: &str = "(other)";

/// The board: tasks matching `query`, in columns by state, best first in each.
pub fn board(board: &Board, query: &Query, paging: &Paging) -> Result<BoardView> {
    let now = crate::time::now();
    let scan = scan::scan(board, &[Region::Tasks])?;
    let questions = scan::scan_matching(board, &[Region::Questions], |d| {
        d.status() == Some("open") && !d.list("blocks").is_empty()
    })?;
    let status_of: HashMap<&str, &str> = scan
        .docs
        .iter()
        .map(|d| (d.id(), d.status().unwrap_or("")))
        .collect();
    let mut blocked_by: HashMap<String, Vec<Blocker>> = HashMap::new();
    for q in &questions.docs {
        for t in q.list("blocks") {
            blocked_by.entry(t).or_default().push(Blocker {
                id: q.id().to_string(),
                kind: "question",
                what: q.title().to_string(),
            });
        }
    }
    let workflow = &board.config.workflow;
    let mut matching: Vec<&Document> = scan
        .docs
        .iter()
        .filter(|d| query.matches_in(d, Some(Region::Tasks), now))
        .collect();
    matching.sort_by(|a, b| {
        a.priority()
            .cmp(&b.priority())
            .then_with(|| a.created_at().cmp(b.created_at()))
            .then_with(|| a.id().cmp(b.id()))
    });
    let mut by_state: HashMap<String, Vec<&Document>> = HashMap::new();
    for d in matching {
        let s = d.status().unwrap_or("");
        let key = if workflow.is_state(s) {
            s.to_string()
        } else {
            OTHER_STATE.to_string()
        };
        by_state.entry(key).or_default().push(d);
    }
    let mut states: Vec<String> = workflow.states.clone();
    if by_state.contains_key(OTHER_STATE) {
        states.push(OTHER_STATE.to_string());
    }
    let per = paging.per_column.max(1);
    let mut columns = Vec::new();
    for state in states {
        if !paging.only.is_empty() && !paging.only.contains(&state) {
            continue;
        }
        let docs = by_state.remove(&state).unwrap_or_default();
        let offset = paging
            .offsets
            .get(&state)
            .copied()
            .unwrap_or(0)
            .min(docs.len());
        let cards = docs[offset..]
            .iter()
            .take(per)
            .map(|d| card(board, d, &status_of, &blocked_by))
            .collect();
        columns.push(Column {
            state,
            total: docs.len(),
            offset,
            cards,
        });
    }
    Ok(BoardView {
        columns,
        tasks: scan.docs.len(),
        skipped: skipped(&scan.skipped),
    })
}

fn card(
    board: &Board,
    d: &Document,
    status_of: &HashMap<&str, &str>,
    blocked_by: &HashMap<String, Vec<Blocker>>,
) -> Card {
    let depends_on = d.list("depends_on");
    let mut blockers: Vec<Blocker> = depends_on
        .iter()
        .filter_map(|dep| match status_of.get(dep.as_str()) {
            Some(s) if board.config.workflow.is_success(s) => None,
            Some(s) => Some(Blocker {
                id: dep.clone(),
                kind: "task",
                what: if s.is_empty() { "no status" } else { s }.to_string(),
            }),
            None => Some(Blocker {
                id: dep.clone(),
                kind: "task",
                what: "missing".into(),
            }),
        })
        .collect();
    if let Some(qs) = blocked_by.get(d.id()) {
        blockers.extend(qs.iter().cloned());
    }
    Card {
        id: d.id().to_string(),
        title: d.title().to_string(),
        status: d.status().unwrap_or("").to_string(),
        priority: d.get("priority").and_then(Value::as_i64),
        claimed_by: d.text("claimed_by"),
        created_at: d.created_at().to_string(),
        updated_at: d.text("updated_at"),
        tags: d.list("tags"),
        depends_on,
        blockers,
        rev: d.rev(),
    }
}

/// An open question for a human.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct OpenQuestion {
    pub id: String,
    pub title: String,
    pub asked_by: Option<String>,
    pub created_at: String,
    pub options: Vec<String>,
    pub blocks: Vec<String>,
    pub body: String,
    pub rev: u64,
    /// Set when the file claims a decision the log does not hold (forged).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub decision: Option<Decision>,
}

/// An open permission request: who wants to use what on which resource, and why. The body
/// is its preview (what would be done).
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct PermissionRequest {
    pub id: String,
    pub asked_by: Option<String>,
    pub created_at: String,
    pub capability: String,
    pub resource: String,
    pub reason: String,
    pub body: String,
    pub rev: u64,
    /// As the log says it: open, or forged (the file claims a decision no human made).
    pub decision: Option<Decision>,
}

/// What waits on a human: open questions, open permission requests, tasks in review.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Waiting {
    pub questions: Vec<OpenQuestion>,
    pub permissions: Vec<PermissionRequest>,
    pub review: Vec<Card>,
    pub skipped: Vec<SkippedFile>,
}

/// The states a reviewer decides on: those the workflow's `approve` transition leaves from.
fn review_states(board: &Board) -> Vec<String> {
    let wf = &board.config.workflow;
    match wf.transition("approve") {
        Some(t) => wf
            .states
            .iter()
            .filter(|s| wf.allows_from(t, s))
            .cloned()
            .collect(),
        None => Vec::new(),
    }
}

/// What waits on a human, oldest first.
pub fn waiting(board: &Board) -> Result<Waiting> {
    let open = crate::ops::questions::open_questions(board)?;
    let mut questions = Vec::new();
    let mut permissions = Vec::new();
    for d in &open.docs {
        let asked_by = d.text("asked_by").or_else(|| d.text("created_by"));
        if d.str("kind") == Some("permission") {
            permissions.push(PermissionRequest {
                id: d.id().to_string(),
                asked_by,
                created_at: d.created_at().to_string(),
                capability: d.text("capability").unwrap_or_default(),
                resource: d.text("resource").unwrap_or_default(),
                reason: d.text("reason").unwrap_or_default(),
                body: d.body().to_string(),
                rev: d.rev(),
                decision: d.decision.clone(),
            });
        } else {
            questions.push(OpenQuestion {
                id: d.id().to_string(),
                title: d.title().to_string(),
                asked_by,
                created_at: d.created_at().to_string(),
                options: d.list("options"),
                blocks: d.list("blocks"),
                body: d.body().to_string(),
                rev: d.rev(),
                decision: d.decision.clone(),
            });
        }
    }
    let states = review_states(board);
    let mut in_review = Vec::new();
    let mut skipped_files = skipped(&open.skipped);
    if !states.is_empty() {
        let paging = Paging {
            per_column: usize::MAX,
            only: states,
            ..Paging::default()
        };
        let view = self::board(board, &Query::default(), &paging)?;
        for c in view.columns {
            in_review.extend(c.cards);
        }
        in_review.sort_by(|a, b| a.updated_at.cmp(&b.updated_at));
        skipped_files.extend(view.skipped);
    }
    Ok(Waiting {
        questions,
        permissions,
        review: in_review,
        skipped: skipped_files,
    })
}

/// An agent as a human sees it.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct AgentRow {
    pub id: String,
    /// `active` (holds a task), `idle`, `stale` (lease expired) or `gone` (deregistered).
    pub status: &'static str,
    pub holds: Vec<String>,
    pub last_seen: String,
    pub capabilities: Vec<String>,
}

/// Every registered agent with its status and what it holds. Reads only: stale claims are
/// shown as stale, not released (a sweep is a write).
pub fn agents(board: &Board) -> Result<Vec<AgentRow>> {
    let list = crate::agents::all(board)?;
    let wf = &board.config.workflow;
    let held = scan::scan_matching(board, &[Region::Tasks], |d| {
        d.str("claimed_by").is_some() && !d.status().is_some_and(|s| wf.is_terminal(s))
    })?;
    let now = Utc::now();
    let mut rows = Vec::new();
    for a in &list {
        let holds: Vec<String> = held
            .docs
            .iter()
            .filter(|d| d.str("claimed_by") == Some(a.id()))
            .map(|d| d.id().to_string())
            .collect();
        let status = if a.gone() {
            "gone"
        } else if a.stale(board, now) {
            "stale"
        } else if holds.is_empty() {
            "idle"
        } else {
            "active"
        };
        rows.push(AgentRow {
            id: a.id().to_string(),
            status,
            holds,
            last_seen: crate::time::stamp(a.last_seen),
            capabilities: a.capabilities(),
        });
    }
    Ok(rows)
}

/// An observation as a finding.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Finding {
    pub id: String,
    pub title: String,
    pub severity: String,
    pub status: String,
    pub topic: Option<String>,
    pub about: Vec<String>,
    pub created_by: Option<String>,
    pub created_at: String,
    pub rev: u64,
}

#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Findings {
    pub findings: Vec<Finding>,
    pub skipped: Vec<SkippedFile>,
}

/// Observations matching `query`, most severe first, then open before acknowledged before
/// the rest, then newest first.
pub fn findings(board: &Board, query: &Query) -> Result<Findings> {
    let now = crate::time::now();
    let scan = scan::scan_matching(board, &[Region::Observations], |d| {
        query.matches_in(d, Some(Region::Observations), now)
    })?;
    let status_rank = |s: &str| match s {
        "open" => 0,
        "acknowledged" => 1,
        _ => 2,
    };
    let mut docs = scan.docs;
    docs.sort_by(|a, b| {
        a.priority()
            .cmp(&b.priority())
            .then_with(|| {
                status_rank(a.status().unwrap_or("")).cmp(&status_rank(b.status().unwrap_or("")))
            })
            .then_with(|| b.created_at().cmp(a.created_at()))
            .then_with(|| a.id().cmp(b.id()))
    });
    Ok(Findings {
        findings: docs
            .iter()
            .map(|d| Finding {
                id: d.id().to_string(),
                title: d.title().to_string(),
                severity: d.text("severity").unwrap_or_default(),
                status: d.status().unwrap_or("").to_string(),
                topic: d.text("topic"),
                about: d.list("about"),
                created_by: d.text("created_by"),
                created_at: d.created_at().to_string(),
                rev: d.rev(),
            })
            .collect(),
        skipped: skipped(&scan.skipped),
    })
}

/// Which log entries a page of the timeline shows.
#[derive(Clone, Debug, Default)]
pub struct LogFilter {
    pub actor: Option<String>,
    /// A document: its path (`tasks/task-7k2m.md`) or its id.
    pub doc: Option<String>,
    pub op: Option<String>,
    /// Only entries with a seq below this one (the next page).
    pub before: Option<u64>,
    pub limit: usize,
}

impl LogFilter {
    fn accepts(&self, e: &Entry) -> bool {
        self.actor.as_ref().is_none_or(|a| &e.actor == a)
            && self.op.as_ref().is_none_or(|o| &e.op == o)
            && self.before.is_none_or(|b| e.seq < b)
            && self.doc.as_ref().is_none_or(|d| {
                e.doc == *d
                    || e.doc.rsplit('/').next().and_then(|f| f.strip_suffix(".md"))
                        == Some(d.as_str())
            })
    }
}

#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct LogPage {
    /// Newest first.
    pub entries: Vec<Entry>,
    /// The highest seq in the log.
    pub last_seq: u64,
    /// Whether older matching entries may exist (ask again with `before`).
    pub more: bool,
    /// Entries that could not be read (line numbers in log.yaml).
    pub unreadable: Vec<usize>,
}

/// The newest entries of the log that pass `filter`, newest first. Reads from the end: a
/// window of seqs that doubles until the page is full or the whole log was read.
pub fn log_page(board: &Board, filter: &LogFilter) -> Result<LogPage> {
    let (_, last_seq) = crate::log::end(board)?;
    let limit = filter.limit.max(1);
    let top = filter
        .before
        .map_or(last_seq, |b| b.saturating_sub(1).min(last_seq));
    let needle = filter
        .doc
        .as_deref()
        .or(filter.actor.as_deref())
        .map(str::to_string);
    let mut window = (limit as u64).max(64);
    loop {
        let after = top.saturating_sub(window);
        let from = if after == 0 {
            0
        } else {
            crate::log::offset_after_seq(board, after)?
        };
        let (entries, _, bad) = crate::log::read_matching(board, from, needle.as_deref())?;
        let mut hits: Vec<Entry> = entries
            .into_iter()
            .filter(|e| e.seq > after || after == 0)
            .filter(|e| filter.accepts(e))
            .collect();
        if hits.len() > limit || after == 0 {
            hits.sort_by_key(|e| std::cmp::Reverse(e.seq));
            let more = hits.len() > limit;
            hits.truncate(limit);
            return Ok(LogPage {
                entries: hits,
                last_seq,
                more: more || (after > 0),
                unreadable: bad.iter().map(|u| u.line).collect(),
            });
        }
        window = window.saturating_mul(4);
    }
}

/// One document with everything a reader of it needs.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct DocView {
    pub id: String,
    pub region: &'static str,
    pub path: String,
    pub archived: bool,
    pub rev: u64,
    /// The frontmatter, in file order.
    pub fields: Map<String, Value>,
    /// The body, as on disk (markdown; untrusted).
    pub body: String,
    /// For a task: the transitions the workflow allows from its state.
    pub transitions: Vec<String>,
    /// For a question: its decision as the log says it (a forged one says so).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub decision: Option<Decision>,
}

/// A document by id (or unique prefix), in any region or the archive.
pub fn document(board: &Board, reference: &str) -> Result<DocView> {
    let mut doc = match crate::ops::resolve::resolve(board, reference, &Region::ALL) {
        Ok((region, id)) => crate::store::read_doc(board, region, &id)?,
        Err(e) => match crate::ops::archive::resolve_archived(board, reference)? {
            Some((region, id)) => crate::ops::archive::read_archived(board, region, &id)?,
            None => return Err(e),
        },
    };
    crate::ops::decisions::annotate_one(board, &mut doc)?;
    let transitions = if doc.region == Region::Tasks && !doc.archived {
        board
            .config
            .workflow
            .allowed_from(doc.status().unwrap_or(""))
            .into_iter()
            .map(str::to_string)
            .collect()
    } else {
        Vec::new()
    };
    Ok(DocView {
        id: doc.id().to_string(),
        region: doc.region.dir(),
        path: doc.rel_path(),
        archived: doc.archived,
        rev: doc.rev(),
        fields: doc.fields.clone(),
        body: doc.body().to_string(),
        transitions,
        decision: doc.decision.clone(),
    })
}

/// Where the board stands: whether it is paused and why, and the last seq of the log.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Status {
    pub paused: Option<String>,
    pub last_seq: u64,
    pub states: Vec<String>,
    pub humans: Vec<String>,
}

pub fn status(board: &Board) -> Result<Status> {
    let (_, last_seq) = crate::log::end(board)?;
    Ok(Status {
        paused: board.paused(),
        last_seq,
        states: board.config.workflow.states.clone(),
        humans: board.config.humans.clone(),
    })
}
