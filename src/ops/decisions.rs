//! Human decisions are derived from the log, not read from the file. A permission request
//! counts as approved or denied only when the log holds that decision: an `approve` or
//! `deny` (at a terminal, or from the dashboard) by an actor listed under `humans:` in
//! board.yaml. A file that claims a decision the log does not hold (a hand edit, a file
//! that arrived by sync) is forged: it counts as undecided, `check` reports it, and every
//! reader shows it as forged. Every other way to write those fields through tavern is
//! refused ([`refuse`], with an alert in the log).
//!
//! Cost: a request that claims no decision is open without reading the log. One document
//! reads the log's entries about it (`log::read_matching` with its path); a list reads the
//! log once for all of its questions, parsing only the entries that mention a permission.

use std::collections::HashMap;

use crate::board::Board;
use crate::doc::decision::Decision;
use crate::doc::{Document, Region};
use crate::error::{Command, Error, Kind, Result};
use crate::log::{self, Entry};
use crate::msg;

/// The statuses that say a human decided.
const DECIDED: [&str; 2] = ["approved", "denied"];

/// The fields only a decision writes.
pub const DECISION_FIELDS: [&str; 2] = ["decided_by", "decided_at"];

/// What every decision entry's note holds, so a list's one read of the log parses only
/// the entries that can matter (decisions, and the creation of permission requests).
const NEEDLE: &str = "permission";

/// Front-ends a human decides through: the terminal (no `via`) and the dashboard.
const HUMAN_VIAS: [&str; 1] = ["dashboard"];

pub fn is_permission(doc: &Document) -> bool {
    doc.region == Region::Questions && doc.str("kind") == Some("permission")
}

/// Whether the file says someone decided: a decided status, or a decider or its time.
pub fn claims_decision(doc: &Document) -> bool {
    doc.region == Region::Questions
        && (doc.status().is_some_and(|s| DECIDED.contains(&s))
            || DECISION_FIELDS.iter().any(|k| doc.get(k).is_some()))
}

/// Whether a question still waits (for an answer, or a human's decision): open, or a
/// decision that is only forged. Its decision must have been derived ([`annotate`]).
pub fn is_open(doc: &Document) -> bool {
    match &doc.decision {
        Some(d) => d.is_undecided(),
        None => doc.region == Region::Questions && doc.status() == Some("open"),
    }
}

/// Whether a decision is derived for this document: a permission request, or a question
/// that claims a decision.
fn concerns(doc: &Document) -> bool {
    is_permission(doc) || claims_decision(doc)
}

/// The path log entries give the question, archived or not.
pub fn log_path(doc: &Document) -> String {
    format!("{}/{}.md", doc.region.dir(), doc.file_id)
}

/// The note of a decision's log entry: what was decided on, so that a request changed
/// afterwards (another capability or resource under the same id) no longer counts as
/// decided.
pub fn note(doc: &Document, approve: bool) -> String {
    format!(
        "permission {}: {} on {}",
        if approve { "approved" } else { "denied" },
        doc.str("capability").unwrap_or("-"),
        doc.str("resource").unwrap_or("-")
    )
}

/// A log entry that records a decision (`approve`/`deny` wrote it): the status it set.
/// Whether its actor may decide is [`by_human`]'s to say.
fn decision_of(e: &Entry) -> Option<&str> {
    let to = e.to.as_deref().filter(|t| DECIDED.contains(t))?;
    let note = e.note.as_deref()?;
    let head = format!("permission {to}");
    // Entries written before decisions named what they decided on say only the head.
    (e.op == "edit" && (note == head || note.starts_with(&format!("{head}: ")))).then_some(to)
}

/// Whether a decision entry was made by a human: an actor listed under `humans:`, at the
/// command line or the dashboard (never through the MCP server).
fn by_human(board: &Board, e: &Entry) -> bool {
    board.config.humans.iter().any(|h| h == &e.actor)
        && e.via.as_deref().is_none_or(|v| HUMAN_VIAS.contains(&v))
}

/// Agent-written text in a message, cut to a name's length.
fn short(s: &str) -> String {
    const MAX: usize = 64;
    match s.char_indices().nth(MAX) {
        Some((at, _)) => format!("{}…", &s[..at]),
        None => s.to_string(),
    }
}

/// What the file claims, for messages: `approved by alice`, `status approved`.
fn says(doc: &Document) -> String {
    let status = doc.status().filter(|s| DECIDED.contains(s));
    match (status, doc.str("decided_by").map(short).as_deref()) {
        (Some(s), Some(by)) => format!("{s} by {by}"),
        (Some(s), None) => s.to_string(),
        (None, Some(by)) => format!("decided_by {by}"),
        (None, None) => "decided_at".to_string(),
    }
}

/// The decision of `doc` given the log entries about it (in log order; entries about
/// other documents are ignored). None for a question that is no permission request and
/// claims no decision.
pub fn derive(board: &Board, doc: &Document, entries: &[&Entry]) -> Option<Decision> {
    if !concerns(doc) {
        return None;
    }
    if !claims_decision(doc) {
        return Some(Decision::Open);
    }
    let forged = |why: String| {
        Some(Decision::Forged {
            says: says(doc),
            why,
        })
    };
    if !is_permission(doc) {
        return forged(
            "it is not a permission request, and only those are decided (by a human)".into(),
        );
    }
    let path = log_path(doc);
    // The last decision on this document; a `create` starts a new document under the id,
    // which earlier decisions were not about.
    let mut last: Option<&Entry> = None;
    for e in entries.iter().filter(|e| e.doc == path) {
        if e.op == "create" {
            last = None;
        } else if decision_of(e).is_some() {
            last = Some(e);
        }
    }
    let Some(e) = last else {
        return forged("the log holds no approve or deny of it by a human".into());
    };
    let to = decision_of(e).unwrap_or_default();
    if !by_human(board, e) {
        let how = match e.via.as_deref() {
            Some(v) if !HUMAN_VIAS.contains(&v) => format!("through {v}"),
            _ => "and is not listed under humans: in board.yaml".into(),
        };
        return forged(format!("the log's {to} is by {} {how}", short(&e.actor)));
    }
    if doc.status() != Some(to) || doc.str("decided_by") != Some(e.actor.as_str()) {
        return forged(format!("the log says {to} by {}", short(&e.actor)));
    }
    let note = e.note.as_deref().unwrap_or_default();
    if note != format!("permission {to}") && note != self::note(doc, to == "approved") {
        let decided_on = note.split_once(": ").map_or(note, |(_, on)| on);
        return forged(format!(
            "{} decided on {}, and the request has changed since",
            short(&e.actor),
            short(decided_on)
        ));
    }
    let (by, at) = (e.actor.clone(), e.at.clone());
    Some(if to == "approved" {
        Decision::Approved { by, at }
    } else {
        Decision::Denied { by, at }
    })
}

/// The decision of one document, reading only the log entries that mention it (and none
/// when it claims no decision).
pub fn of(board: &Board, doc: &Document) -> Result<Option<Decision>> {
    if !claims_decision(doc) {
        return Ok(derive(board, doc, &[]));
    }
    let (entries, _, _) = log::read_matching(board, 0, Some(&log_path(doc)))?;
    let entries: Vec<&Entry> = entries.iter().collect();
    Ok(derive(board, doc, &entries))
}

/// Sets the decision of every question among `docs` that has one, reading the log at
/// most once (and not at all when none of them claims a decision).
pub fn annotate(board: &Board, docs: &mut [Document]) -> Result<()> {
    let entries = if docs.iter().any(claims_decision) {
        log::read_matching(board, 0, Some(NEEDLE))?.0
    } else {
        Vec::new()
    };
    let mut by_doc: HashMap<&str, Vec<&Entry>> = HashMap::new();
    for e in &entries {
        by_doc.entry(e.doc.as_str()).or_default().push(e);
    }
    for doc in docs.iter_mut().filter(|d| concerns(d)) {
        let about = by_doc.get(log_path(doc).as_str());
        doc.decision = derive(board, doc, about.map_or(&[][..], Vec::as_slice));
    }
    Ok(())
}

/// [`annotate`] for documents handed over one at a time as a read finds them, on several
/// threads: the log is read once, when the first document that claims a decision comes.
pub struct Annotator<'b> {
    board: &'b Board,
    /// The log's entries that mention a permission, by the path of the document.
    by_doc: std::sync::OnceLock<HashMap<String, Vec<Entry>>>,
    /// Why the log could not be read, if it could not.
    failed: std::sync::Mutex<Option<Error>>,
}

impl<'b> Annotator<'b> {
    pub fn new(board: &'b Board) -> Self {
        Annotator {
            board,
            by_doc: Default::default(),
            failed: Default::default(),
        }
    }

    /// Sets `doc`'s decision, as [`annotate`] would among any other documents.
    pub fn annotate(&self, doc: &mut Document) {
        if !concerns(doc) {
            return;
        }
        if !claims_decision(doc) {
            doc.decision = derive(self.board, doc, &[]);
            return;
        }
        let by_doc = self.by_doc.get_or_init(|| {
            let mut by_doc: HashMap<String, Vec<Entry>> = HashMap::new();
            match log::read_matching(self.board, 0, Some(NEEDLE)) {
                Ok((entries, ..)) => {
                    for e in entries {
                        by_doc.entry(e.doc.clone()).or_default().push(e);
                    }
                }
                Err(e) => *self.failed.lock().unwrap_or_else(|p| p.into_inner()) = Some(e),
            }
            by_doc
        });
        let about: Vec<&Entry> = by_doc
            .get(log_path(doc).as_str())
            .map_or_else(Vec::new, |v| v.iter().collect());
        doc.decision = derive(self.board, doc, &about);
    }

    /// Whether every document was annotated: the error reading the log, if there was one.
    pub fn finish(self) -> Result<()> {
        match self.failed.into_inner().unwrap_or_else(|p| p.into_inner()) {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }
}

/// Sets the decision of one document (see [`of`]).
pub fn annotate_one(board: &Board, doc: &mut Document) -> Result<()> {
    doc.decision = of(board, doc)?;
    Ok(())
}

/// Refuses an attempt to write a human's decision any other way than by `approve` or
/// `deny`: logs an `alert` naming the actor and what it tried, and returns the conflict
/// (exit 3). `what` says what was tried (`set status=approved`); `path` is the question's.
pub fn refuse(board: &Board, actor: &str, path: &str, id: &str, what: &str) -> Error {
    let entry = Entry {
        actor: actor.to_string(),
        op: "alert".into(),
        at: crate::time::stamp_millis(crate::time::now()),
        doc: path.to_string(),
        note: Some(format!(
            "refused: {actor} may not {what} ({path}): a permission request is decided only by a human, with approve or deny"
        )),
        ..Entry::default()
    };
    if let Err(e) = log::append(board, entry) {
        return e;
    }
    Error::request_at(
        Kind::Conflict,
        path,
        msg!(
            format!(
                "{actor} may not {what}: a permission request is decided only by a human listed under humans: in board.yaml, with `"
            ),
            Command::Approve(id.to_string()),
            "` or `",
            Command::Deny(id.to_string()),
            "` (logged)"
        ),
    )
}
