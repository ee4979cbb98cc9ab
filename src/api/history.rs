//! The audit log as front-ends read it: `log` with its filters (and following it as it
//! grows), `events` (what changed since an agent last looked, with its cursor), `diff`
//! (one document's history).

use serde::Serialize;

use crate::board::Board;
use crate::doc::Region;
use crate::error::{Error, Result};
use crate::log::{Entry, Marks, Unreadable};

/// Where a read of the log starts: a seq, per-origin marks (`ORIGIN:SEQ,…`), or a time.
pub use crate::log::Since;

/// A unified diff of two texts, as the log records a change.
pub use crate::log::diff as text_diff;
/// An entry's id as shown: `ORIGIN:SEQ`.
pub use crate::log::entry_id;
/// An entry's name as this clone shows it (its own entries by seq alone).
pub use crate::log::entry_name;
/// This clone's origin, once it has written to its log.
pub use crate::log::own_origin;
/// One entry as the log file holds it.
pub use crate::log::render as render_entry;

/// Which entries a reader wants.
#[derive(Clone, Debug, Default)]
pub struct LogFilter {
    pub since: Since,
    /// A document: id, unique prefix or REGION/ID, or the log path of a deleted one.
    pub doc: Option<String>,
    pub actor: Option<String>,
    /// Only entries of this op (`claim`, `edit`, …).
    pub op: Option<String>,
}

/// The filter with its document resolved to the log path entries carry.
#[derive(Clone, Debug)]
struct Resolved {
    since: Since,
    doc: Option<String>,
    actor: Option<String>,
    op: Option<String>,
}

impl Resolved {
    fn new(board: &Board, filter: &LogFilter) -> Result<Resolved> {
        Ok(Resolved {
            since: filter.since.clone(),
            doc: filter
                .doc
                .as_deref()
                .map(|d| doc_path(board, d))
                .transpose()?,
            actor: filter.actor.clone(),
            op: filter.op.clone(),
        })
    }

    fn keep(&self, e: &Entry) -> bool {
        let since = self.since.keep(e);
        since
            && self.doc.as_ref().is_none_or(|d| &e.doc == d)
            && self.actor.as_ref().is_none_or(|a| &e.actor == a)
            && self.op.as_ref().is_none_or(|o| &e.op == o)
    }

    /// Reads the part of the log that can hold entries `keep` accepts: from where `since`
    /// says, parsing only entries that mention the doc or actor asked for.
    fn read(&self, board: &Board) -> Result<(Vec<Entry>, u64, Vec<Unreadable>)> {
        let from = self.since.offset(board)?;
        let (entries, next, unreadable) = crate::log::read_matching(board, from, self.needle())?;
        let entries = entries.into_iter().filter(|e| self.keep(e)).collect();
        Ok((entries, next, unreadable))
    }

    fn needle(&self) -> Option<&str> {
        self.doc.as_deref().or(self.actor.as_deref())
    }
}

/// What `log` read, and where to go on reading as the log grows.
#[derive(Debug, Serialize)]
pub struct LogRead {
    pub entries: Vec<Entry>,
    /// Log lines that could not be parsed (entries added by hand), for a warning.
    #[serde(skip)]
    pub unreadable: Vec<Unreadable>,
    #[serde(skip)]
    pub follow: Follow,
}

/// Reads on from where the last read stopped: `next` returns the entries appended since,
/// that the same filter accepts.
#[derive(Debug)]
pub struct Follow {
    filter: Resolved,
    offset: u64,
}

impl Follow {
    pub fn next(&mut self, board: &Board) -> Result<Vec<Entry>> {
        let (entries, next, _) =
            crate::log::read_matching(board, self.offset, self.filter.needle())?;
        self.offset = next;
        Ok(entries
            .into_iter()
            .filter(|e| self.filter.keep(e))
            .collect())
    }
}

/// The log entries the filter accepts, oldest first.
pub fn log(board: &Board, filter: &LogFilter) -> Result<LogRead> {
    let resolved = Resolved::new(board, filter)?;
    let (entries, offset, unreadable) = resolved.read(board)?;
    Ok(LogRead {
        entries,
        unreadable,
        follow: Follow {
            filter: resolved,
            offset,
        },
    })
}

/// The log path (`tasks/x.md`) of a document reference, even for a deleted document.
fn doc_path(board: &Board, reference: &str) -> Result<String> {
    if let Some(rel) = crate::ops::resolve::solution_path(reference) {
        return rel;
    }
    // A hold is no file; its entries carry `holds/h-N` (README, "Holds on resources").
    if let Some(id) = reference.strip_prefix("holds/") {
        crate::id::validate(id)?;
        return Ok(reference.to_string());
    }
    match crate::ops::resolve::resolve(board, reference, &Region::ALL) {
        Ok((region, id)) => Ok(format!("{}/{id}.md", region.dir())),
        Err(Error::NotFound { .. }) => {
            crate::id::validate(reference.rsplit('/').next().unwrap_or(reference))?;
            let stem = reference.trim_end_matches(".md");
            let (entries, _, _) = crate::log::read_matching(board, 0, Some(stem))?;
            let wanted = format!("/{stem}.md");
            entries
                .iter()
                .find(|e| e.doc.ends_with(&wanted) || e.doc == reference)
                .map(|e| e.doc.clone())
                .ok_or_else(|| Error::NotFound {
                    what: format!("document '{reference}'"),
                    hint: "the log has no entry about it either".into(),
                })
        }
        Err(e) => Err(e),
    }
}

/// What changed since an agent last looked.
#[derive(Debug, Serialize)]
pub struct Events {
    /// The entries, oldest first (at most the limit asked for).
    pub entries: Vec<Entry>,
    /// How many more new entries there were past the limit.
    #[serde(skip_serializing_if = "is_zero")]
    pub more: usize,
    /// Where the read started: what the caller asked for, or the cursor's marks.
    #[serde(skip)]
    pub since: Since,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

fn cursor_actor(actor: &str) -> Result<()> {
    crate::id::validate(actor).map_err(|_| {
        Error::usage(format!(
            "events keeps a cursor per agent, so the actor must be a valid id; '{actor}' is not"
        ))
    })
}

/// The entries new to `actor`'s cursor (or after `since` when given), oldest first, at
/// most `limit`. The cursor is a high-water mark per origin ([`crate::log::Marks`]), so
/// it stays right after a merge of several clones' logs. It does not move here: call
/// [`seen`] with what was shown, so an agent whose output was lost sees them again.
pub fn events(
    board: &Board,
    actor: &str,
    since: Option<Since>,
    limit: Option<usize>,
) -> Result<Events> {
    cursor_actor(actor)?;
    let (mut entries, since) = match since {
        None => {
            let marks = Marks::load(&crate::layout::events_cursor(&board.root, actor));
            (marks.read_new(board)?, Since::Marks(marks))
        }
        Some(since) => {
            let filter = Resolved {
                since: since.clone(),
                doc: None,
                actor: None,
                op: None,
            };
            (filter.read(board)?.0, since)
        }
    };
    let mut more = 0;
    if let Some(n) = limit
        && entries.len() > n
    {
        more = entries.len() - n;
        entries.truncate(n);
    }
    Ok(Events {
        entries,
        more,
        since,
    })
}

/// Moves `actor`'s cursor past `shown` (entries [`events`] returned): the next
/// [`events`] starts after them. It never moves back.
pub fn seen(board: &Board, actor: &str, shown: &[Entry]) -> Result<()> {
    cursor_actor(actor)?;
    if shown.is_empty() {
        return Ok(());
    }
    let cursor = crate::layout::events_cursor(&board.root, actor);
    let mut marks = Marks::load(&cursor);
    for e in shown {
        marks.advance(e);
    }
    marks.save(&cursor)
}

/// One document's log entries, oldest first.
#[derive(Debug, Serialize)]
pub struct DocHistory {
    pub doc: String,
    pub entries: Vec<Entry>,
}

/// The history of a document, deleted ones included.
pub fn diff(board: &Board, reference: &str) -> Result<DocHistory> {
    let path = doc_path(board, reference)?;
    let (entries, _, _) = crate::log::read_matching(board, 0, Some(&path))?;
    let entries = entries.into_iter().filter(|e| e.doc == path).collect();
    Ok(DocHistory { doc: path, entries })
}

/// One page of the log, newest first: what a timeline shows.
#[derive(Clone, Debug, Serialize)]
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

/// The newest `limit` entries the filter accepts (its `since` aside), below seq `before`
/// when given, newest first. Reads from the end: a window of seqs that grows until the
/// page is full or the whole log was read.
pub fn page(
    board: &Board,
    filter: &LogFilter,
    before: Option<u64>,
    limit: usize,
) -> Result<LogPage> {
    let resolved = Resolved::new(board, filter)?;
    let (_, last_seq) = crate::log::end(board)?;
    let limit = limit.max(1);
    let top = before.map_or(last_seq, |b| b.saturating_sub(1).min(last_seq));
    let mut window = (limit as u64).max(64);
    loop {
        let after = top.saturating_sub(window);
        let from = if after == 0 {
            0
        } else {
            crate::log::offset_after_seq(board, after)?
        };
        let (entries, _, bad) = crate::log::read_matching(board, from, resolved.needle())?;
        let mut hits: Vec<Entry> = entries
            .into_iter()
            .filter(|e| (e.seq > after || after == 0) && e.seq <= top)
            .filter(|e| resolved.keep(e))
            .collect();
        if hits.len() > limit || after == 0 {
            hits.sort_by_key(|e| std::cmp::Reverse(e.seq));
            let more = hits.len() > limit;
            hits.truncate(limit);
            return Ok(LogPage {
                entries: hits,
                last_seq,
                more: more || after > 0,
                unreadable: bad.iter().map(|u| u.line).collect(),
            });
        }
        window = window.saturating_mul(4);
    }
}
