//! Reading documents and agents for the tools.

use serde_json::{Value, json};

use tavern::board::Board;
use tavern::doc::{Document, Region};
use tavern::error::{Error, Result};
use tavern::ops;
use tavern::query::Query;
use tavern::scan::{self, Skipped};

/// A document by id, prefix or REGION/ID; archived documents too.
pub fn read(board: &Board, reference: &str) -> Result<Document> {
    match ops::resolve::resolve(board, reference, &Region::ALL) {
        Ok((region, id)) => tavern::store::read_doc(board, region, &id),
        Err(e @ Error::NotFound { .. }) => {
            match ops::archive::resolve_archived(board, reference)? {
                Some((region, id)) => ops::archive::read_archived(board, region, &id),
                None => Err(e),
            }
        }
        Err(e) => Err(e),
    }
}

/// Documents matching `query`, best first.
pub fn list(board: &Board, query: &Query, archived: bool) -> Result<(Vec<Document>, Vec<Skipped>)> {
    let mut regions = query.regions();
    if regions.is_empty() {
        regions = Region::ALL.to_vec();
    }
    let now = tavern::time::now();
    let mut scanned = scan::scan_matching(board, &regions, |d| query.matches(d, now))?;
    if archived {
        let old = scan::scan_archive(board, &regions, |d| query.matches(d, now))?;
        scanned.docs.extend(old.docs);
        scanned.skipped.extend(old.skipped);
    }
    scan::sort_best_first(&mut scanned.docs);
    Ok((scanned.docs, scanned.skipped))
}

/// The registered agents, their status and what they hold.
pub fn agents(board: &Board) -> Result<Value> {
    ops::sweep::sweep(board)?;
    let list = tavern::agents::all(board)?;
    let held = scan::scan_matching(board, &[Region::Tasks], |d| {
        d.str("claimed_by").is_some()
            && !d
                .status()
                .is_some_and(|s| board.config.workflow.is_terminal(s))
    })?;
    let now = chrono::Utc::now();
    let items: Vec<Value> = list
        .iter()
        .take(super::bound::MAX_PAGE)
        .map(|a| {
            let holds: Vec<&str> = held
                .docs
                .iter()
                .filter(|d| d.str("claimed_by") == Some(a.id()))
                .map(|d| d.id())
                .collect();
            let status = if a.gone() {
                "gone"
            } else if a.stale(board, now) {
                "stale"
            } else if holds.is_empty() {
                "idle"
            } else {
                "active"
            };
            json!({"id": a.id(), "status": status, "holds": holds, "last_seen": tavern::time::stamp(a.last_seen), "capabilities": a.capabilities()})
        })
        .collect();
    Ok(json!({"total": list.len(), "agents": items}))
}

/// A field name an edit may name.
pub fn check_key(k: &str) -> Result<()> {
    let ok = k
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && k.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'));
    if ok {
        Ok(())
    } else {
        Err(Error::usage(format!(
            "edit: '{k}' is not a field name (letters, digits, _ - .)"
        )))
    }
}
