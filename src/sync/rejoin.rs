//! A document is never in two places, on this clone either. The merge puts a document
//! archived on one side and changed on the other in one place ([`super::merge`]); but a
//! copy can come back after the archive reached this clone: a human's editor, open on the
//! task all along, writes it again after `tavern sync` moved it to the archive (or after
//! `tavern archive` here). Before each record, `tavern sync` finds every document both in
//! its region and in the archive on disk and puts it in one place by the merge's rule: the
//! one copy holds the field-by-field merge of both versions against the version that was
//! archived (a field both changed goes to the archived copy, whose `move` is logged; the
//! hand's write is not), and that merged document says where it goes (in the archive
//! unless it moved back to a state that is not finished). The copy that goes is logged as
//! a `delete` by `tavern-sync`.

use crate::board::Board;
use crate::doc::Region;
use crate::error::{Error, Result};
use crate::layout;
use crate::log::Entry;
use crate::store::{self, Step, Write};
use crate::sync::branch::{BoardGit, REF};
use crate::sync::merge;

/// Puts every document found both in its region and in the archive in one place; returns
/// the paths of the copies kept (relative to the board).
pub fn rejoin(board: &Board, bg: &BoardGit) -> Result<Vec<String>> {
    let mut kept = Vec::new();
    for region in Region::ALL {
        let dir = layout::archive_dir(&board.root, region);
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue; // no archive of that region
        };
        let mut ids: Vec<String> = entries
            .filter_map(|e| e.ok())
            .filter_map(|e| {
                let name = e.file_name().into_string().ok()?;
                name.strip_suffix(".md").map(str::to_string)
            })
            .filter(|id| std::fs::symlink_metadata(board.doc_path(region, id)).is_ok())
            .collect();
        ids.sort();
        for id in ids {
            if let Some(path) = rejoin_one(board, bg, region, &id)? {
                kept.push(path);
            }
        }
    }
    Ok(kept)
}

/// [`rejoin`] of one document, under its lock. None when it is in one place (or either
/// copy is not a regular file: the record leaves such a file out, and `check` names it).
fn rejoin_one(board: &Board, bg: &BoardGit, region: Region, id: &str) -> Result<Option<String>> {
    let live = board.rel(&board.doc_path(region, id));
    let archived = board.rel(&layout::archived_doc(&board.root, region, id));
    let max = board.config.limits.max_doc_bytes;
    let (kept, _) = store::change(board, &[layout::doc_lock(region, id)], || {
        let read = |rel: &str| match store::read_text(&board.root.join(rel), max) {
            Ok(text) => Ok(Some(text.into_bytes())),
            Err(Error::NotFound { .. } | Error::InvalidDoc { .. }) => Ok(None),
            Err(e) => Err(e),
        };
        let (Some(l_text), Some(a_text)) = (read(&live)?, read(&archived)?) else {
            return Ok((None, None));
        };
        let base = archived_version(bg, &live, &archived)?;
        let one = merge::one_copy(
            board,
            &bg.git,
            &bg.repo.tavern_dir(),
            &live,
            &base,
            &l_text,
            &a_text,
        )?;
        let (keep, drop, before) = if one.archived {
            (&archived, &live, &a_text)
        } else {
            (&live, &archived, &l_text)
        };
        let mut steps = Vec::new();
        if one.text != *before {
            steps.push(Step::put(keep.clone(), Some(before), one.text.clone()));
        }
        steps.push(Step::remove(drop.clone()));
        let mut note = format!(
            "a document is in one place: it was both in {live} (written again after it was archived) and in {archived}; kept one copy in {keep}, with both versions' changes"
        );
        if !one.conflicts.is_empty() {
            let fields: Vec<String> = one
                .conflicts
                .iter()
                .map(|c| format!("{}: kept {}, dropped {}", c.field, c.kept, c.dropped))
                .collect();
            note.push_str(&format!(
                " (changed in both, the archived copy's kept: {})",
                fields.join("; ")
            ));
        }
        Ok((
            Some(keep.clone()),
            Some(Write {
                steps,
                entry: Entry {
                    actor: merge::ACTOR.into(),
                    op: "delete".into(),
                    doc: drop.clone(),
                    note: Some(note),
                    ..Entry::default()
                },
            }),
        ))
    })?;
    Ok(kept)
}

/// The version the document had when it was archived, as the board branch holds it: the
/// archived copy as the commit that added it recorded it (archiving moves a document
/// unchanged); failing that, the live copy on the branch (archived here, not recorded
/// yet); empty when the branch has neither.
fn archived_version(bg: &BoardGit, live: &str, archived: &str) -> Result<Vec<u8>> {
    let added = bg.git.output(
        &[
            "log",
            "-1",
            "--diff-filter=A",
            "--format=%H",
            REF,
            "--",
            archived,
        ],
        None,
    )?;
    let commit = added.stdout.trim();
    let at = if added.success && !commit.is_empty() {
        format!("{commit}:{archived}")
    } else {
        format!("{REF}:{live}")
    };
    let out = bg.git.output(&["cat-file", "blob", &at], None)?;
    Ok(if out.success {
        out.stdout.into_bytes()
    } else {
        Vec::new()
    })
}
