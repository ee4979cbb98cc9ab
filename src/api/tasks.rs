//! Tasks: what is ready to claim, claims, and the workflow's transitions.

use serde::Serialize;

use super::change::Changed;
use super::view::{Listing, Skipped};
use crate::board::Board;
use crate::doc::{Document, Region};
use crate::error::{Command, Error, Result};
use crate::ops::transition;
pub use crate::ops::transition::Options;
use crate::query::Query;
use crate::workflow::CLAIM;

/// What `ready` found: the tasks (as `list` gives them) and how many more are ready but
/// need capabilities the agent lacks.
#[derive(Debug, Serialize)]
pub struct Ready {
    #[serde(flatten)]
    pub listing: Listing,
    /// Ready tasks left out because their `needs` are not among the agent's capabilities.
    pub lacking: usize,
}

/// Tasks claimable now (claimable state, no live claim, dependencies done) matching the
/// query terms, best first: with `for_actor`, only those that actor may claim (a
/// registered agent: the tasks whose `needs` its capabilities cover, as `claim` and
/// `claim --next` require; an actor that never registered is not held to capabilities);
/// None: every ready task. Expired leases are swept first, so their tasks count.
pub fn ready(board: &Board, terms: &[String], for_actor: Option<&str>) -> Result<Ready> {
    let query = Query::parse(terms)?;
    crate::schema::check_query(board, &query, &[Region::Tasks])?;
    let r = transition::ready(board, &query, for_actor)?;
    Ok(Ready {
        listing: Listing {
            docs: r.docs,
            skipped: r.skipped,
        },
        lacking: r.lacking,
    })
}

/// [`ready`], each ready task made into `row(task)` as it is read (see
/// [`super::docs::list_rows`]): the rows best first, the files skipped, and how many
/// ready tasks need capabilities the agent lacks.
pub fn ready_rows<R: Send>(
    board: &Board,
    terms: &[String],
    for_actor: Option<&str>,
    row: impl Fn(Document) -> R + Sync,
) -> Result<ReadyRows<R>> {
    let query = Query::parse(terms)?;
    crate::schema::check_query(board, &query, &[Region::Tasks])?;
    let r = transition::ready_rows(board, &query, for_actor, row)?;
    Ok(ReadyRows {
        rows: r.docs,
        skipped: r.skipped,
        lacking: r.lacking,
    })
}

/// [`ready`], each ready task as a [`ReadyRow`] made from the read index's heads: the same
/// tasks in the same order, and a task parsed only where a query term needs its text.
pub fn ready_heads(
    board: &Board,
    terms: &[String],
    for_actor: Option<&str>,
) -> Result<ReadyRows<ReadyRow>> {
    let query = Query::parse(terms)?;
    crate::schema::check_query(board, &query, &[Region::Tasks])?;
    let r = transition::ready_heads(board, &query, for_actor)?;
    Ok(ReadyRows {
        rows: r.docs,
        skipped: r.skipped,
        lacking: r.lacking,
    })
}

/// One page of [`ready_rows`]: the ready tasks from the `start`th (of its order), at most
/// `len`, each as `row(task)`; only those are parsed for their rows.
pub fn ready_page<R: Send>(
    board: &Board,
    terms: &[String],
    for_actor: Option<&str>,
    start: usize,
    len: usize,
    row: impl Fn(Document) -> R + Sync,
) -> Result<ReadyPage<R>> {
    let query = Query::parse(terms)?;
    crate::schema::check_query(board, &query, &[Region::Tasks])?;
    let (total, r) = transition::ready_page(board, &query, for_actor, start, len, row)?;
    Ok(ReadyPage {
        total,
        page: ReadyRows {
            rows: r.docs,
            skipped: r.skipped,
            lacking: r.lacking,
        },
    })
}

/// What [`ready_page`] found: how many tasks are ready in all, and the page's.
#[derive(Debug)]
pub struct ReadyPage<R> {
    pub total: usize,
    pub page: ReadyRows<R>,
}

pub use crate::ops::transition::Row as ReadyRow;

/// What [`ready_rows`] found.
#[derive(Debug)]
pub struct ReadyRows<R> {
    pub rows: Vec<R>,
    pub skipped: Vec<Skipped>,
    /// As [`Ready::lacking`].
    pub lacking: usize,
}

fn task_id(board: &Board, reference: &str) -> Result<String> {
    crate::ops::resolve::resolve_kind(
        board,
        reference,
        Region::Tasks,
        "claims and transitions work on tasks",
    )
}

/// Runs transition `name` (one the board's workflow defines) on a task given by id or
/// unique prefix.
pub fn transition(
    board: &Board,
    actor: &str,
    reference: &str,
    name: &str,
    opts: &Options,
) -> Result<Changed> {
    let verb = match name {
        "approve" => Some(true),
        "reject" => Some(false),
        _ => None,
    };
    let id = task_id(board, reference)
        .map_err(|e| decision_attempt(board, actor, reference, verb, e))?;
    let changed = Changed::new(transition::transition(board, actor, &id, name, opts)?)
        .local(board, opts.local)?;
    release_holds_if_let_go(board, actor, &changed);
    Ok(changed)
}

/// A task command (a transition, a move) given a permission request: approving (`Some(true)`)
/// or rejecting (`Some(false)`) one is an attempt at a human's decision, refused as `approve`
/// and `deny` refuse it without a terminal (exit 3, an alert in the log). Anything else
/// keeps `err`, the task command's own refusal.
fn decision_attempt(
    board: &Board,
    actor: &str,
    reference: &str,
    approve: Option<bool>,
    err: crate::error::Error,
) -> crate::error::Error {
    let Some(approve) = approve else {
        return err;
    };
    let Ok((_, id)) = crate::ops::resolve::resolve(board, reference, &[Region::Questions]) else {
        return err;
    };
    match crate::store::read_doc(board, Region::Questions, &id) {
        Ok(doc) if crate::ops::decisions::is_permission(&doc) => {
            match crate::ops::questions::decide(board, actor, &id, approve, None, None) {
                Err(refused) => refused,
                Ok(_) => err,
            }
        }
        _ => err,
    }
}

/// A task released or finished lets go of the holds made for it (README, "Holds").
fn release_holds_if_let_go(board: &Board, actor: &str, changed: &Changed) {
    let doc = &changed.outcome.doc;
    if !changed.outcome.changed() {
        return;
    }
    let Some(status) = doc.status() else { return };
    let wf = &board.config.workflow;
    if wf.is_terminal(status) || wf.is_claimable(status) {
        let why = format!("task {} is {status}", doc.id());
        let _ = super::holds::release_task(board, actor, doc.id(), &why);
    }
}

/// Moves a task to `state` by whichever transition leads there.
pub fn move_to(
    board: &Board,
    actor: &str,
    reference: &str,
    state: &str,
    opts: &Options,
) -> Result<Changed> {
    let verb = match state {
        "approved" => Some(true),
        "denied" => Some(false),
        _ => None,
    };
    let id = task_id(board, reference)
        .map_err(|e| decision_attempt(board, actor, reference, verb, e))?;
    let changed = Changed::new(transition::move_to(board, actor, &id, state, opts)?)
        .local(board, opts.local)?;
    release_holds_if_let_go(board, actor, &changed);
    Ok(changed)
}

/// Claims a task; claiming one already yours changes nothing.
pub fn claim(board: &Board, actor: &str, reference: &str, opts: &Options) -> Result<Changed> {
    transition(board, actor, reference, CLAIM, opts)
}

/// What `claim_next` claimed (None: nothing is claimable), and the task files it could
/// not read on the way.
#[derive(Debug, Serialize)]
#[serde(transparent)]
pub struct ClaimedNext {
    pub claimed: Option<Changed>,
    #[serde(skip)]
    pub skipped: Vec<Skipped>,
}

/// Claims the best claimable task matching the query terms (priority, then age), one
/// whose `needs` the agent's capabilities cover, moving on when another agent wins one.
pub fn claim_next(
    board: &Board,
    actor: &str,
    terms: &[String],
    opts: &Options,
) -> Result<ClaimedNext> {
    let query = Query::parse(terms)?;
    crate::schema::check_query(board, &query, &[Region::Tasks])?;
    let (outcome, skipped) = transition::claim_next_with(board, actor, &query, opts)?;
    let claimed = outcome
        .map(|o| Changed::new(o).local(board, opts.local))
        .transpose()?;
    Ok(ClaimedNext { claimed, skipped })
}

/// What `claim_next` says when nothing matching `terms` is claimable (exit 4).
pub fn nothing_claimable(terms: &[String]) -> Error {
    Error::Nothing {
        what: if terms.is_empty() {
            "claimable task".into()
        } else {
            format!("claimable task matches '{}'", terms.join(" "))
        },
        hint: crate::msg!(
            "every task is claimed, done, or waiting for its dependencies; `",
            Command::List(Some(Region::Tasks)),
            "` shows them"
        ),
    }
}

/// A transition someone may take on a task now.
#[derive(Clone, Debug, Serialize, PartialEq, Eq)]
pub struct Move {
    pub name: String,
    /// Only as an override: the task is held by someone else and the transition is the
    /// claimant's (a human may force it; the log says so).
    pub force: bool,
}

/// The transitions the workflow allows from the task's state, as `actor` may take them:
/// its own (or anyone's) without force, the claimant's of a task held by another with it.
/// None for an archived document or one that is not a task.
pub fn moves(board: &Board, actor: &str, doc: &Document) -> Vec<Move> {
    if doc.region != Region::Tasks || doc.archived {
        return Vec::new();
    }
    let wf = &board.config.workflow;
    let owner = doc.str("claimed_by");
    wf.allowed_from(doc.status().unwrap_or(""))
        .into_iter()
        .map(|name| {
            let theirs = name != CLAIM
                && wf
                    .transition(name)
                    .is_some_and(|t| t.by == crate::workflow::By::Claimant)
                && owner.is_some_and(|o| o != actor);
            Move {
                name: name.to_string(),
                force: theirs,
            }
        })
        .collect()
}

/// Whether these words are a query with a field term (`status:pending`, `tag:ui`), not
/// plain words: `claim` takes one id, and a query only with `next`.
pub fn is_query(args: &[String]) -> bool {
    crate::query::Query::parse(args).is_ok_and(|q| {
        q.terms
            .iter()
            .any(|t| !matches!(t, crate::query::Term::Text(_)))
    })
}
