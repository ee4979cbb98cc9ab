//! Archiving: finished documents move to `archive/<region>/<id>.md`, where `show` and
//! `list --archived` still find them, and the log records each move.

use crate::board::Board;
use crate::doc::{Document, Region};
use crate::error::{Error, Result};
use crate::layout;
use crate::log::Entry;
use crate::ops::decisions;
use crate::query::Query;
use crate::scan;
use crate::store::{self, Step, Write};

/// Is a document finished, so that archiving it loses nothing in progress? A question
/// whose decision was derived and is only forged still waits for a human: not finished.
pub fn finished(board: &Board, doc: &Document) -> bool {
    let status = doc.status().unwrap_or("");
    match doc.region {
        Region::Tasks => board.config.workflow.is_terminal(status),
        Region::Observations => matches!(status, "resolved" | "rejected" | "expired"),
        Region::Questions => {
            !matches!(status, "open" | "")
                && !doc.decision.as_ref().is_some_and(|d| d.is_undecided())
        }
    }
}

/// Moves one document to the archive under its lock and logs the move.
pub fn archive_one(
    board: &Board,
    actor: &str,
    region: Region,
    id: &str,
    why: &str,
    must_be_finished: bool,
) -> Result<Option<Entry>> {
    let from = board.doc_path(region, id);
    let to = layout::archived_doc(&board.root, region, id);
    let (_, entry) = store::change(board, &[layout::doc_lock(region, id)], || {
        let mut doc = store::read_doc(board, region, id)?;
        if must_be_finished {
            decisions::annotate_one(board, &mut doc)?;
        }
        if must_be_finished && !finished(board, &doc) {
            return Ok(((), None)); // It moved on since the scan.
        }
        if std::fs::symlink_metadata(&to).is_ok() {
            return Err(Error::conflict(
                board.rel(&to),
                format!(
                    "cannot archive {}: the archive already holds this id",
                    board.rel(&from)
                ),
            ));
        }
        let entry = Entry {
            actor: actor.into(),
            op: "move".into(),
            doc: board.rel(&from),
            rev: Some(doc.rev()),
            note: Some(format!("{why}: moved to {}", board.rel(&to))),
            ..Entry::default()
        };
        let step = Step::moved(board.rel(&from), board.rel(&to));
        Ok((
            (),
            Some(Write {
                steps: vec![step],
                entry,
            }),
        ))
    })?;
    Ok(entry)
}

/// `archive [QUERY…] [--older-than D]`: every finished document matching the query.
pub fn archive(
    board: &Board,
    actor: &str,
    query: &Query,
    older_than: Option<chrono::Duration>,
) -> Result<Vec<Entry>> {
    let mut moved = Vec::new();
    for doc in candidates(board, query, older_than)? {
        if let Some(e) = archive_one(board, actor, doc.region, &doc.file_id, "archived", true)? {
            moved.push(e);
        }
    }
    Ok(moved)
}

/// What `archive` would move now (`archive --dry-run`), best first by path. A question
/// that says it was decided, when the log holds no human's decision of it, is not
/// finished: archived, it would leave the waiting list while still waiting.
pub fn candidates(
    board: &Board,
    query: &Query,
    older_than: Option<chrono::Duration>,
) -> Result<Vec<Document>> {
    let now = chrono::Utc::now();
    let mut regions = query.regions();
    if regions.is_empty() {
        regions = Region::ALL.to_vec();
    }
    let old_enough = |d: &Document| match older_than {
        None => true,
        Some(age) => d
            .str("updated_at")
            .and_then(|t| crate::time::parse_time(t, now))
            .is_some_and(|t| now - t > age),
    };
    let mut found = scan::scan_matching(board, &regions, |d| {
        finished(board, d) && old_enough(d) && query.matches(d, now)
    })?;
    decisions::annotate(board, &mut found.docs)?;
    found.docs.retain(|d| finished(board, d));
    Ok(found.docs)
}

/// Session-scoped observations past their `expires_at` go to the archive (run by `sweep`).
pub fn expire_observations(board: &Board, actor: &str) -> Result<Vec<Entry>> {
    let now = chrono::Utc::now();
    let expired = scan::scan_matching(board, &[Region::Observations], |d| {
        d.str("scope") == Some("session")
            && d.str("expires_at")
                .and_then(|t| crate::time::parse_time(t, now))
                .is_some_and(|t| t <= now)
    })?;
    let mut moved = Vec::new();
    for doc in expired.docs {
        if let Some(e) = archive_one(
            board,
            actor,
            Region::Observations,
            &doc.file_id,
            "expired",
            false,
        )? {
            moved.push(e);
        }
    }
    Ok(moved)
}

/// Reads an archived document.
pub fn read_archived(board: &Board, region: Region, id: &str) -> Result<Document> {
    let path = layout::archived_doc(&board.root, region, id);
    let text = store::read_text(&path, board.config.limits.max_doc_bytes)?;
    let mut doc = store::parse_doc(board, region, id, text, &path)?;
    doc.archived = true;
    Ok(doc)
}

/// Finds an archived document by id or unique prefix.
pub fn resolve_archived(board: &Board, reference: &str) -> Result<Option<(Region, String)>> {
    let wanted = reference
        .rsplit('/')
        .next()
        .unwrap_or(reference)
        .trim_end_matches(".md");
    crate::id::validate(wanted)?;
    let mut found = Vec::new();
    for region in Region::ALL {
        for f in scan::archive_files(board, region)? {
            if f.id == wanted {
                return Ok(Some((region, f.id)));
            }
            if f.id.starts_with(wanted) {
                found.push((region, f.id));
            }
        }
    }
    match found.len() {
        0 => Ok(None),
        1 => Ok(found.pop()),
        _ => Err(Error::Ambiguous {
            prefix: wanted.to_string(),
            candidates: found
                .into_iter()
                .map(|(r, id)| format!("archive/{}/{id}.md", r.dir()))
                .collect(),
        }),
    }
}
