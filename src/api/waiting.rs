//! What waits on a human: open questions, open permission requests, and tasks in review.

use serde::Serialize;

use super::columns::{Card, Paging};
use super::view::Skipped;
use crate::board::Board;
use crate::doc::Document;
use crate::doc::decision::Decision;
use crate::error::Result;
use crate::query::Query;

/// An open question: what it asks, who asked, the answers offered, the tasks waiting on it.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct OpenQuestion {
    pub id: String,
    pub title: String,
    pub status: Option<String>,
    pub asked_by: Option<String>,
    pub created_at: String,
    pub updated_at: Option<String>,
    pub options: Vec<String>,
    pub blocks: Vec<String>,
    pub rev: u64,
    /// Its body (markdown, untrusted), for a reader that shows it; a digest leaves it out.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub body: Option<String>,
    /// Set when the file claims a decision the log does not hold (forged): it still waits.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub decision: Option<Decision>,
}

impl OpenQuestion {
    pub fn of(d: &Document, with_body: bool) -> OpenQuestion {
        OpenQuestion {
            id: d.id().to_string(),
            title: d.title().to_string(),
            status: d.status().map(str::to_string),
            asked_by: d.text("asked_by").or_else(|| d.text("created_by")),
            created_at: d.created_at().to_string(),
            updated_at: d.text("updated_at"),
            options: d.list("options"),
            blocks: d.list("blocks"),
            rev: d.rev(),
            body: with_body.then(|| d.body().to_string()),
            decision: d.decision.clone(),
        }
    }
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
#[derive(Clone, Debug, Serialize)]
pub struct Waiting {
    pub questions: Vec<OpenQuestion>,
    pub permissions: Vec<PermissionRequest>,
    pub review: Vec<Card>,
    pub skipped: Vec<Skipped>,
}

impl Waiting {
    /// How many things wait.
    pub fn count(&self) -> usize {
        self.questions.len() + self.permissions.len() + self.review.len()
    }
}

/// The states a reviewer decides on: those the workflow's `approve` transition leaves from.
pub(crate) fn review_states(board: &Board) -> Vec<String> {
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
    waiting_from(board, open, |states| {
        let paging = Paging {
            per_column: usize::MAX,
            only: states,
            ..Paging::default()
        };
        super::columns::columns_of(board, &Query::default(), &paging)
    })
}

/// [`waiting`] of the open questions read, with the board view `review` gives of the
/// review states it is asked for (all their cards).
pub(crate) fn waiting_from(
    board: &Board,
    open: crate::scan::Scan,
    review: impl FnOnce(Vec<String>) -> Result<super::columns::BoardView>,
) -> Result<Waiting> {
    let mut questions = Vec::new();
    let mut permissions = Vec::new();
    for d in &open.docs {
        if d.str("kind") == Some("permission") {
            permissions.push(PermissionRequest {
                id: d.id().to_string(),
                asked_by: d.text("asked_by").or_else(|| d.text("created_by")),
                created_at: d.created_at().to_string(),
                capability: d.text("capability").unwrap_or_default(),
                resource: d.text("resource").unwrap_or_default(),
                reason: d.text("reason").unwrap_or_default(),
                body: d.body().to_string(),
                rev: d.rev(),
                decision: d.decision.clone(),
            });
        } else {
            questions.push(OpenQuestion::of(d, true));
        }
    }
    let states = review_states(board);
    let mut in_review = Vec::new();
    let mut skipped = open.skipped;
    if !states.is_empty() {
        let view = review(states)?;
        for c in view.columns {
            in_review.extend(c.cards);
        }
        in_review.sort_by(|a, b| {
            crate::time::cmp_stamps(
                a.updated_at.as_deref().unwrap_or(""),
                b.updated_at.as_deref().unwrap_or(""),
            )
        });
        skipped.extend(view.skipped);
    }
    Ok(Waiting {
        questions,
        permissions,
        review: in_review,
        skipped,
    })
}
