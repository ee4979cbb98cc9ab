//! Documents: `show` (one, archived ones included), `list` (a query over regions,
//! optionally the archive too), `create` and `edit`.

use serde::Serialize;

use super::change::{Changed, Created};
use super::view::{self, Listing};
use crate::board::Board;
use crate::doc::{Document, Region};
use crate::error::{Error, Result};
use crate::ops;
use crate::query::Query;
use crate::scan;

/// One document, with its body in JSON (`doc.raw` is its text byte for byte), or a file
/// under solutions/.
#[derive(Debug, Serialize)]
#[serde(untagged)]
pub enum Shown {
    Doc(#[serde(serialize_with = "view::doc_with_body")] Document),
    Solution {
        /// Its path under the board.
        path: String,
        region: &'static str,
        /// Its text.
        body: String,
    },
}

/// A document by id, unique id prefix or REGION/ID, or a file under solutions/ by its
/// path. Archived documents stay readable: the archive is looked at when the board has
/// no such document. A question carries its decision as the log says it.
pub fn show(board: &Board, reference: &str) -> Result<Shown> {
    if let Some(rel) = ops::resolve::solution_path(reference) {
        let rel = rel?;
        let body = ops::resolve::read_solution(board, &rel)?;
        return Ok(Shown::Solution {
            path: rel,
            region: "solutions",
            body,
        });
    }
    let doc = match ops::resolve::resolve(board, reference, &Region::ALL) {
        Ok((region, id)) => crate::store::read_doc(board, region, &id)?,
        Err(e @ Error::NotFound { .. }) => {
            match ops::archive::resolve_archived(board, reference)? {
                Some((region, id)) => ops::archive::read_archived(board, region, &id)?,
                None => return Err(e),
            }
        }
        Err(e) => return Err(e),
    };
    let mut doc = doc;
    ops::decisions::annotate_one(board, &mut doc)?;
    Ok(Shown::Doc(doc))
}

/// What `list` reads: query terms, region words (`tasks`, `archive`, …) among them.
#[derive(Clone, Debug, Default)]
pub struct ListRequest {
    pub terms: Vec<String>,
    /// Archived documents too.
    pub archived: bool,
}

/// The documents matching the request, open ones first, best first. Region words narrow
/// the regions (none: every region); `archive` lists only the archive, `archived` adds it.
pub fn list(board: &Board, req: &ListRequest) -> Result<Listing> {
    let rows = list_rows(board, req, |d| d)?;
    Ok(Listing {
        docs: rows.rows,
        skipped: rows.skipped,
    })
}

/// What [`list_rows`] gives: a row per matching document, in `list`'s order.
#[derive(Debug)]
pub struct Rows<R> {
    pub rows: Vec<R>,
    pub skipped: Vec<view::Skipped>,
}

/// [`list`], where each matching document becomes `row(document)` as soon as it is read
/// (on the reading threads): a front-end that prints a line or a JSON object per document
/// holds those, never the documents, so what a big listing holds is its rows. Questions
/// carry their decisions when `row` sees them.
pub fn list_rows<R: Send>(
    board: &Board,
    req: &ListRequest,
    row: impl Fn(Document) -> R + Sync,
) -> Result<Rows<R>> {
    let query = Query::parse(&req.terms)?;
    let mut regions = query.regions();
    if regions.is_empty() {
        regions = Region::ALL.to_vec();
    }
    regions.sort();
    regions.dedup();
    crate::schema::check_query(board, &query, &regions)?;
    let now = crate::time::now();
    // Filter while reading: a big board is never held in memory whole, and the matches
    // only as rows.
    let needles = query.needles();
    let plain = |fm: &str| query.may_match_plain(fm, now);
    let decisions = ops::decisions::Annotator::new(board);
    let found = std::sync::Mutex::new(Vec::new());
    let each = |mut d: Document| {
        if query.matches(&d, now) {
            decisions.annotate(&mut d);
            let key = scan::OrderKey::open_first(board, &d);
            let row = row(d);
            found
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .push((key, row));
        }
    };
    let status = |s: Option<&str>| query.may_match_status(s, now);
    let read = |archived| {
        scan::each_prefiltered(board, &regions, archived, &needles, &plain, &status, &each)
    };
    let mut skipped = if query.archived() {
        Vec::new()
    } else {
        read(false)?
    };
    if req.archived || query.archived() {
        skipped.extend(read(true)?);
    }
    decisions.finish()?;
    let mut found = found.into_inner().unwrap_or_else(|p| p.into_inner());
    found.sort_unstable_by(|a, b| a.0.cmp(&b.0));
    Ok(Rows {
        rows: found.into_iter().map(|(_, row)| row).collect(),
        skipped,
    })
}

pub use super::view::brief_json;
pub use crate::ops::edit::EditSpec;
pub use crate::ops::new::NewDoc;

/// Creates a task, observation or question from the board's template. Fields that only
/// a command writes are refused, as `edit` refuses them.
pub fn create(board: &Board, actor: &str, region: Region, spec: &NewDoc) -> Result<Created> {
    let (doc, entry) = ops::new::new_document(board, actor, region, spec)?;
    let created = Created::new(doc, entry);
    Ok(if region == Region::Observations {
        created.with_similar(board)
    } else {
        created
    })
}

/// Changes fields or the body of a document given by id, prefix or REGION/ID.
pub fn edit(board: &Board, actor: &str, reference: &str, spec: &EditSpec) -> Result<Changed> {
    let (region, id) = ops::resolve::resolve(board, reference, &Region::ALL)?;
    Ok(Changed::new(ops::edit::edit(
        board, actor, region, &id, spec,
    )?))
}

/// `edit` for a front-end that edits only the documents of `regions` (the MCP server:
/// tasks and observations). A reference to another region is refused as the wrong kind,
/// except an attempt at a human's decision on a question, which is refused as `edit`
/// refuses it everywhere: exit 3, and an alert in the log.
pub fn edit_in(
    board: &Board,
    actor: &str,
    reference: &str,
    spec: &EditSpec,
    regions: &[Region],
) -> Result<Changed> {
    match ops::resolve::resolve(board, reference, regions) {
        Ok((region, id)) => Ok(Changed::new(ops::edit::edit(
            board, actor, region, &id, spec,
        )?)),
        Err(e) => {
            if !regions.contains(&Region::Questions)
                && let Ok((_, id)) = ops::resolve::resolve(board, reference, &[Region::Questions])
            {
                ops::edit::refuse_decision(board, actor, &id, spec)?;
            }
            Err(e)
        }
    }
}

/// The documents on the board, by region and id (archived ones left out).
pub fn ids(board: &Board) -> Vec<(Region, String)> {
    let mut all = Vec::new();
    for region in Region::ALL {
        for f in scan::region_files(board, region).unwrap_or_default() {
            all.push((region, f.id));
        }
    }
    all
}

/// The region and id of the document `reference` names (id, unique prefix, REGION/ID),
/// looked for in `regions` only.
pub fn resolve(board: &Board, reference: &str, regions: &[Region]) -> Result<(Region, String)> {
    ops::resolve::resolve(board, reference, regions)
}

/// Whether `key` can name a field (letters, digits, `_`, `-`, `.`).
pub use crate::query::is_field_name;

/// A value typed on a command line (`--set key=VALUE`) as YAML reads it, within the board's
/// limits: `3` a number, `[a, b]` a list, anything unreadable plain text.
pub fn parse_value(board: &Board, raw: &str) -> serde_json::Value {
    crate::yaml::parse_cli_value(raw, board.config.yaml_limits())
}
