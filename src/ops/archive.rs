//! Archiving: finished documents move to `archive/<region>/<id>.md`, where `show` and
//! `list --archived` still find them, and the log records each move.

use crate::board::Board;
use crate::doc::{Document, Region};
use crate::error::{Error, Result};
use crate::layout;
use crate::log::Entry;
use crate::ops::decisions;
use crate::query::Query;
use crate::scan::{self, finished};
use crate::store::{self, Step, Write};

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
            // In two places (an older merge of an archive on one clone with a change on
            // another): the document goes to one.
            return one_place_locked(board, actor, region, id, &doc).map(|w| ((), w));
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

/// A document both in its region and in the archive is put in one place, under its lock:
/// the copy with the higher `rev` stays (on a tie, the later `updated_at`, then the
/// archived one). A live copy that stays and is finished replaces the archived one (a
/// `move`); one that is not finished stays live and the archived copy is removed; an
/// archived copy that stays makes the live one go. Each removal is logged as a `delete`
/// (or the `move`) naming the copy kept. Run by `sweep` and by `archive` of such a
/// document. None when the document is in one place.
pub fn one_place(board: &Board, actor: &str, region: Region, id: &str) -> Result<Option<Entry>> {
    let (_, entry) = store::change(board, &[layout::doc_lock(region, id)], || {
        let to = layout::archived_doc(&board.root, region, id);
        if std::fs::symlink_metadata(&to).is_err() {
            return Ok(((), None));
        }
        let doc = match store::read_doc(board, region, id) {
            Ok(doc) => doc,
            Err(Error::NotFound { .. }) => return Ok(((), None)),
            Err(e) => return Err(e),
        };
        one_place_locked(board, actor, region, id, &doc).map(|w| ((), w))
    })?;
    Ok(entry)
}

/// [`one_place`]'s decision, under the document's lock, `live` read already.
fn one_place_locked(
    board: &Board,
    actor: &str,
    region: Region,
    id: &str,
    live: &Document,
) -> Result<Option<Write>> {
    let from = board.rel(&board.doc_path(region, id));
    let to_path = layout::archived_doc(&board.root, region, id);
    let to = board.rel(&to_path);
    let archived = read_archived(board, region, id)?;
    let updated = |d: &Document| d.str("updated_at").unwrap_or("").to_string();
    let live_stays = live
        .rev()
        .cmp(&archived.rev())
        .then_with(|| crate::time::cmp_stamps(&updated(live), &updated(&archived)))
        == std::cmp::Ordering::Greater;
    let note = |kept: &str, gone: &str| {
        format!(
            "a document is in one place: it was both in its region and in the archive; kept {kept} (rev {}), removed {gone} (rev {})",
            if kept == from {
                live.rev()
            } else {
                archived.rev()
            },
            if gone == from {
                live.rev()
            } else {
                archived.rev()
            },
        )
    };
    let (steps, op, doc, text) = if !live_stays {
        (
            vec![Step::remove(from.clone())],
            "delete",
            from.clone(),
            note(&to, &from),
        )
    } else if finished(board, live) {
        let bytes = std::fs::read(board.doc_path(region, id))
            .map_err(|e| Error::io(board.doc_path(region, id), "read", e))?;
        let before = std::fs::read(&to_path).map_err(|e| Error::io(&to_path, "read", e))?;
        (
            vec![
                Step::put(to.clone(), Some(&before), bytes),
                Step::remove(from.clone()),
            ],
            "move",
            from.clone(),
            format!(
                "{}: moved to {to} over the older archived copy",
                note(&from, &to)
            ),
        )
    } else {
        (
            vec![Step::remove(to.clone())],
            "delete",
            to.clone(),
            note(&from, &to),
        )
    };
    Ok(Some(Write {
        steps,
        entry: Entry {
            actor: actor.into(),
            op: op.into(),
            doc,
            note: Some(text),
            ..Entry::default()
        },
    }))
}

/// Every document in two places, put in one ([`one_place`]).
pub fn one_place_all(board: &Board, actor: &str) -> Result<Vec<Entry>> {
    let mut out = Vec::new();
    for region in Region::ALL {
        for f in scan::archive_files(board, region)? {
            if std::fs::symlink_metadata(board.doc_path(region, &f.id)).is_ok()
                && let Some(e) = one_place(board, actor, region, &f.id)?
            {
                out.push(e);
            }
        }
    }
    Ok(out)
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
