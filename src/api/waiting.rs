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
    /// One page of the tasks in review, oldest update first ([`ReviewPage`]).
    pub review: Vec<Card>,
    /// How many tasks are in review (all of them, not only the page's).
    pub review_total: usize,
    /// Where the page starts in that order (at most `review_total`).
    pub review_offset: usize,
    pub skipped: Vec<Skipped>,
}

impl Waiting {
    /// How many things wait (every task in review, the page or not).
    pub fn count(&self) -> usize {
        self.questions.len() + self.permissions.len() + self.review_total
    }
}

/// Which of the tasks in review to list: `limit` of them from `offset`, in the order of
/// the queue (oldest update first). The questions and permission requests are always
/// listed whole.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReviewPage {
    pub offset: usize,
    pub limit: usize,
}

impl ReviewPage {
    /// Every task in review.
    pub const ALL: ReviewPage = ReviewPage {
        offset: 0,
        limit: usize::MAX,
    };

    /// `(offset, the part of items on the page)`, the offset at most `len`.
    pub(crate) fn range(&self, len: usize) -> std::ops::Range<usize> {
        let start = self.offset.min(len);
        start..start.saturating_add(self.limit).min(len)
    }
}

/// The order of the waiting queue's tasks in review: oldest update first, ties in the
/// board's order (`items` come in it).
/// Each stamp is parsed once ([`crate::time::stamp_key`] orders as `cmp_stamps` does).
pub(crate) fn oldest_update_first<T>(items: &mut [T], updated_at: impl Fn(&T) -> Option<String>) {
    items.sort_by_cached_key(|item| {
        let at = updated_at(item).unwrap_or_default();
        let (parsed, time, raw) = crate::time::stamp_key(&at);
        (parsed, time, raw.to_string())
    });
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

/// What waits on a human, oldest first: every task in review.
pub fn waiting(board: &Board) -> Result<Waiting> {
    waiting_page(board, ReviewPage::ALL)
}

/// [`waiting`], with one page of the tasks in review.
pub fn waiting_page(board: &Board, page: ReviewPage) -> Result<Waiting> {
    let open = crate::ops::questions::open_questions(board)?;
    waiting_from(board, open, |states| {
        let paging = Paging {
            per_column: usize::MAX,
            only: states,
            ..Paging::default()
        };
        let view = super::columns::columns_of(board, &Query::default(), &paging)?;
        let mut cards: Vec<Card> = view.columns.into_iter().flat_map(|c| c.cards).collect();
        oldest_update_first(&mut cards, |c| c.updated_at.clone());
        let range = page.range(cards.len());
        let total = cards.len();
        let offset = range.start;
        let cards = cards.drain(range).collect();
        Ok(InReview {
            total,
            offset,
            cards,
            skipped: view.skipped,
        })
    })
}

/// One page of the tasks in review, as [`waiting_from`] is given it.
pub(crate) struct InReview {
    pub total: usize,
    pub offset: usize,
    pub cards: Vec<Card>,
    pub skipped: Vec<Skipped>,
}

/// [`waiting`] of the open questions read, with the page `review` gives of the tasks in
/// the review states it is asked for (oldest update first: [`oldest_update_first`]).
pub(crate) fn waiting_from(
    board: &Board,
    open: crate::scan::Scan,
    review: impl FnOnce(Vec<String>) -> Result<InReview>,
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
    let mut skipped = open.skipped;
    let mut in_review = InReview {
        total: 0,
        offset: 0,
        cards: Vec::new(),
        skipped: Vec::new(),
    };
    if !states.is_empty() {
        in_review = review(states)?;
        skipped.append(&mut in_review.skipped);
    }
    Ok(Waiting {
        questions,
        permissions,
        review: in_review.cards,
        review_total: in_review.total,
        review_offset: in_review.offset,
        skipped,
    })
}
