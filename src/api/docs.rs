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

/// One document, with its body in JSON; `doc.raw` is its text byte for byte.
#[derive(Debug, Serialize)]
#[serde(transparent)]
pub struct Shown {
    #[serde(serialize_with = "view::doc_with_body")]
    pub doc: Document,
}

/// A document by id, unique id prefix or REGION/ID. Archived documents stay readable:
/// the archive is looked at when the board has no such document.
pub fn show(board: &Board, reference: &str) -> Result<Shown> {
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
    Ok(Shown { doc })
}

/// What `list` reads: a region word first (`tasks`, …) and query terms, as typed.
#[derive(Clone, Debug, Default)]
pub struct ListRequest {
    pub terms: Vec<String>,
    /// Archived documents too.
    pub archived: bool,
}

/// The documents matching the request, best first. A leading region word and the
/// query's own `region:` terms narrow the regions; none means every region.
pub fn list(board: &Board, req: &ListRequest) -> Result<Listing> {
    let mut terms = req.terms.clone();
    let mut regions: Vec<Region> = Vec::new();
    if let Some(r) = terms.first().and_then(|t| Region::parse(t)) {
        regions.push(r);
        terms.remove(0);
    }
    let query = Query::parse(&terms)?;
    regions.extend(query.regions());
    if regions.is_empty() {
        regions = Region::ALL.to_vec();
    }
    regions.sort();
    regions.dedup();
    let now = crate::time::now();
    // Filter while reading: a big board is never held in memory whole.
    let mut scanned = scan::scan_matching(board, &regions, |d| query.matches(d, now))?;
    if req.archived {
        let old = scan::scan_archive(board, &regions, |d| query.matches(d, now))?;
        scanned.docs.extend(old.docs);
        scanned.skipped.extend(old.skipped);
    }
    let mut docs = scanned.docs;
    scan::sort_best_first(&mut docs);
    Ok(Listing {
        docs,
        skipped: scanned.skipped,
    })
}

pub use crate::ops::edit::EditSpec;
pub use crate::ops::new::NewDoc;

/// Creates a task, observation or question from the board's template.
pub fn create(board: &Board, actor: &str, region: Region, spec: &NewDoc) -> Result<Created> {
    let (doc, entry) = ops::new::create(board, actor, region, spec)?;
    Ok(Created { doc, entry })
}

/// Changes fields or the body of a document given by id, prefix or REGION/ID.
pub fn edit(board: &Board, actor: &str, reference: &str, spec: &EditSpec) -> Result<Changed> {
    let (region, id) = ops::resolve::resolve(board, reference, &Region::ALL)?;
    Ok(Changed::new(ops::edit::edit(
        board, actor, region, &id, spec,
    )?))
}
