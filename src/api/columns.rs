//! The board as a human watches it: tasks in columns by workflow state, one page of each
//! column, each card with what blocks it (a dependency not finished, an open question).

use std::collections::HashMap;

use serde::Serialize;
use serde_json::Value;

use super::view::Skipped;
use crate::board::Board;
use crate::doc::{Document, Region};
use crate::error::Result;
use crate::query::Query;
use crate::scan;

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

#[derive(Clone, Debug, Serialize)]
pub struct BoardView {
    /// The workflow's states in order, then a column for tasks in a state it does not
    /// name (if any).
    pub columns: Vec<Column>,
    /// Tasks on the board (matching or not).
    pub tasks: usize,
    pub skipped: Vec<Skipped>,
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

/// The board: tasks matching the query terms, in columns by state, best first in each.
pub fn columns(board: &Board, terms: &[String], paging: &Paging) -> Result<BoardView> {
    let query = Query::parse(terms)?;
    columns_of(board, &query, paging)
}

pub(crate) fn columns_of(board: &Board, query: &Query, paging: &Paging) -> Result<BoardView> {
    let scan = scan::scan(board, &[Region::Tasks])?;
    let questions = scan::scan_matching(board, &[Region::Questions], blocks_tasks)?;
    let tasks: Vec<&Document> = scan.docs.iter().collect();
    let questions: Vec<&Document> = questions.docs.iter().collect();
    Ok(columns_in(
        board,
        &tasks,
        &questions,
        scan.skipped,
        query,
        paging,
    ))
}

/// An open question that lists tasks it blocks.
pub(crate) fn blocks_tasks(d: &Document) -> bool {
    d.status() == Some("open") && !d.list("blocks").is_empty()
}

/// The board view of `tasks` (every task on the board, in file order), with the open
/// `questions` that block some ([`blocks_tasks`]), and the task files a read skipped.
pub(crate) fn columns_in(
    board: &Board,
    tasks: &[&Document],
    questions: &[&Document],
    skipped: Vec<Skipped>,
    query: &Query,
    paging: &Paging,
) -> BoardView {
    let now = crate::time::now();
    let status_of: HashMap<&str, &str> = tasks
        .iter()
        .map(|d| (d.id(), d.status().unwrap_or("")))
        .collect();
    let workflow = &board.config.workflow;
    let mut matching: Vec<&Document> = tasks
        .iter()
        .copied()
        .filter(|d| query.matches_in(d, Some(Region::Tasks), now))
        .collect();
    // Best first: priority, then oldest, then id (each time stamp parsed once).
    matching.sort_by_cached_key(|d| {
        (
            d.priority(),
            crate::time::stamp_key(d.created_at()),
            d.id().to_string(),
        )
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
    let has_other = by_state.contains_key(OTHER_STATE);
    assemble(
        board,
        Sorted {
            has_other,
            tasks: tasks.len(),
            skipped,
            questions,
            status_of: &|id| status_of.get(id).copied(),
        },
        paging,
        |state, offset, per| {
            let docs = by_state.remove(state).unwrap_or_default();
            let offset = offset.min(docs.len());
            let page = docs[offset..].iter().take(per).copied().collect();
            (docs.len(), offset, page)
        },
    )
}

/// What [`assemble`] needs besides the columns' pages.
pub(crate) struct Sorted<'a, 'q> {
    /// Some matching task is in a state the workflow does not name.
    pub has_other: bool,
    /// Tasks on the board (matching or not).
    pub tasks: usize,
    pub skipped: Vec<Skipped>,
    /// The open questions that block tasks ([`blocks_tasks`]).
    pub questions: &'q [&'q Document],
    /// The status of the task with this id on the board (the last by file name).
    pub status_of: &'q dyn Fn(&str) -> Option<&'a str>,
}

/// The board view, given for each column (`page(state, offset, per)`) how many tasks
/// match in it, the offset shown (at most that many) and that page of them, best first.
pub(crate) fn assemble<'a>(
    board: &Board,
    sorted: Sorted<'_, '_>,
    paging: &Paging,
    mut page: impl FnMut(&str, usize, usize) -> (usize, usize, Vec<&'a Document>),
) -> BoardView {
    let blocked_by = blocked_by_questions(sorted.questions);
    let mut states: Vec<String> = board.config.workflow.states.clone();
    if sorted.has_other {
        states.push(OTHER_STATE.to_string());
    }
    let per = paging.per_column.max(1);
    let mut columns = Vec::new();
    for state in states {
        if !paging.only.is_empty() && !paging.only.contains(&state) {
            continue;
        }
        let offset = paging.offsets.get(&state).copied().unwrap_or(0);
        let (total, offset, docs) = page(&state, offset, per);
        let cards = docs
            .iter()
            .map(|d| card(board, d, sorted.status_of, &blocked_by))
            .collect();
        columns.push(Column {
            state,
            total,
            offset,
            cards,
        });
    }
    BoardView {
        columns,
        tasks: sorted.tasks,
        skipped: sorted.skipped,
    }
}

/// The tasks each of the open `questions` blocks, and the blocker it is for them.
fn blocked_by_questions(questions: &[&Document]) -> HashMap<String, Vec<Blocker>> {
    let mut blocked_by: HashMap<String, Vec<Blocker>> = HashMap::new();
    for q in questions {
        for t in q.list("blocks") {
            blocked_by.entry(t).or_default().push(Blocker {
                id: q.id().to_string(),
                kind: "question",
                what: q.title().to_string(),
            });
        }
    }
    blocked_by
}

/// The cards of `docs` as the board shows them, with the open `questions` that block
/// tasks ([`blocks_tasks`]) and the status of each task on the board (`status_of`).
pub(crate) fn cards_of<'a>(
    board: &Board,
    docs: &[&Document],
    questions: &[&Document],
    status_of: &dyn Fn(&str) -> Option<&'a str>,
) -> Vec<Card> {
    let blocked_by = blocked_by_questions(questions);
    docs.iter()
        .map(|d| card(board, d, status_of, &blocked_by))
        .collect()
}

/// What one task waits for: its dependencies not finished, the open questions that list
/// it under `blocks` (for a task's own page).
pub fn blockers(board: &Board, task: &Document) -> Result<Vec<Blocker>> {
    let deps: Vec<Document> = task
        .list("depends_on")
        .iter()
        .filter_map(|d| crate::ops::graph::read_task(board, d))
        .filter(|d| !d.archived)
        .collect();
    let status_of: HashMap<&str, &str> = deps
        .iter()
        .map(|d| (d.id(), d.status().unwrap_or("")))
        .collect();
    let questions = scan::scan_matching(board, &[Region::Questions], |d| {
        d.status() == Some("open") && d.list("blocks").iter().any(|t| t == task.id())
    })?;
    let asked = questions
        .docs
        .iter()
        .map(|q| Blocker {
            id: q.id().to_string(),
            kind: "question",
            what: q.title().to_string(),
        })
        .collect();
    let blocked_by = HashMap::from([(task.id().to_string(), asked)]);
    Ok(dependency_blockers(
        board,
        task,
        &|id| status_of.get(id).copied(),
        &blocked_by,
    ))
}

fn card<'a>(
    board: &Board,
    d: &Document,
    status_of: &dyn Fn(&str) -> Option<&'a str>,
    blocked_by: &HashMap<String, Vec<Blocker>>,
) -> Card {
    let blockers = dependency_blockers(board, d, status_of, blocked_by);
    Card {
        id: d.id().to_string(),
        title: d.title().to_string(),
        status: d.status().unwrap_or("").to_string(),
        priority: d.get("priority").and_then(Value::as_i64),
        claimed_by: d.text("claimed_by"),
        created_at: d.created_at().to_string(),
        updated_at: d.text("updated_at"),
        tags: d.list("tags"),
        depends_on: d.list("depends_on"),
        blockers,
        rev: d.rev(),
    }
}

/// The dependencies of `d` that are not finished (`status_of`: the tasks on the board;
/// others are looked for in the archive), then the questions in `blocked_by` for it.
fn dependency_blockers<'a>(
    board: &Board,
    d: &Document,
    status_of: &dyn Fn(&str) -> Option<&'a str>,
    blocked_by: &HashMap<String, Vec<Blocker>>,
) -> Vec<Blocker> {
    let depends_on = d.list("depends_on");
    let mut blockers: Vec<Blocker> = depends_on
        .iter()
        .filter_map(|dep| match status_of(dep.as_str()) {
            Some(s) if board.config.workflow.is_success(s) => None,
            Some(s) => Some(Blocker {
                id: dep.clone(),
                kind: "task",
                what: if s.is_empty() { "no status" } else { s }.to_string(),
            }),
            // Not on the board: finished and archived (an archived done task is done),
            // or named but nowhere, as `deps` finds it.
            None => match crate::ops::graph::read_task(board, dep) {
                Some(t)
                    if t.status()
                        .is_some_and(|s| board.config.workflow.is_success(s)) =>
                {
                    None
                }
                Some(t) => Some(Blocker {
                    id: dep.clone(),
                    kind: "task",
                    what: format!("{}, archived", t.status().unwrap_or("no status")),
                }),
                None => Some(Blocker {
                    id: dep.clone(),
                    kind: "task",
                    what: "missing".into(),
                }),
            },
        })
        .collect();
    if let Some(qs) = blocked_by.get(d.id()) {
        blockers.extend(qs.iter().cloned());
    }
    blockers
}
