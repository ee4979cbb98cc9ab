//! Observations (findings): post, acknowledge, resolve, reject, and the findings as a
//! human reviews them.

use serde::Serialize;

use super::change::{Changed, Created};
use super::view::Skipped;
use crate::board::Board;
use crate::doc::{Document, Region};
use crate::error::Result;
use crate::ops::observations;
pub use crate::ops::observations::{Action, Post};
use crate::query::Query;

/// Posts an observation.
pub fn post(board: &Board, actor: &str, spec: &Post) -> Result<Created> {
    let (doc, entry) = observations::post(board, actor, spec)?;
    Ok(Created::new(doc, entry).with_similar(board))
}

/// Acknowledges, resolves or rejects an observation given by id or unique prefix.
pub fn act(
    board: &Board,
    actor: &str,
    reference: &str,
    action: &Action,
    if_rev: Option<u64>,
) -> Result<Changed> {
    let name = match action {
        Action::Ack => "ack",
        Action::Resolve { .. } => "resolve",
        Action::Reject { .. } => "reject",
    };
    let id = crate::ops::resolve::resolve_kind(
        board,
        reference,
        Region::Observations,
        &format!("{name} works on observations"),
    )?;
    Ok(Changed::new(observations::act(
        board, actor, &id, action, if_rev,
    )?))
}

/// Rejects what `reference` names: an observation is rejected, a task takes its `reject`
/// transition.
pub fn reject(
    board: &Board,
    actor: &str,
    reference: &str,
    opts: &crate::ops::transition::Options,
) -> Result<Changed> {
    let (region, _) = crate::ops::resolve::resolve_kinds(
        board,
        reference,
        &[Region::Tasks, Region::Observations],
        "reject works on tasks in review and on observations",
    )?;
    if region == Region::Tasks {
        return super::tasks::transition(board, actor, reference, "reject", opts);
    }
    let action = Action::Reject {
        note: opts.note.clone(),
    };
    act(board, actor, reference, &action, opts.if_rev)
}

/// An observation as a finding: what, how severe, where it stands, what it is about.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Finding {
    pub id: String,
    pub title: String,
    pub severity: String,
    pub status: Option<String>,
    pub topic: Option<String>,
    pub about: Vec<String>,
    pub created_by: Option<String>,
    pub created_at: String,
    pub updated_at: Option<String>,
    pub rev: u64,
}

impl Finding {
    pub fn of(d: &Document) -> Finding {
        Finding {
            id: d.id().to_string(),
            title: d.title().to_string(),
            severity: d.text("severity").unwrap_or_default(),
            status: d.status().map(str::to_string),
            topic: d.text("topic"),
            about: d.list("about"),
            created_by: d.text("created_by"),
            created_at: d.created_at().to_string(),
            updated_at: d.text("updated_at"),
            rev: d.rev(),
        }
    }
}

#[derive(Clone, Debug, Serialize)]
pub struct Findings {
    pub findings: Vec<Finding>,
    pub skipped: Vec<Skipped>,
}

/// Observations matching the query terms, most severe first, then open before
/// acknowledged before the rest, then newest first.
pub fn findings(board: &Board, terms: &[String]) -> Result<Findings> {
    let query = Query::parse(terms)?;
    crate::schema::check_query(board, &query, &[Region::Observations])?;
    let now = crate::time::now();
    let scan = crate::scan::scan_matching(board, &[Region::Observations], |d| {
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
            .then_with(|| crate::time::cmp_stamps(b.created_at(), a.created_at()))
            .then_with(|| a.id().cmp(b.id()))
    });
    Ok(Findings {
        findings: docs.iter().map(Finding::of).collect(),
        skipped: scan.skipped,
    })
}
