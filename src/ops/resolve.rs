//! Turning what a user typed (`task-7k2m`, `task-7k`, `tasks/task-7k2m.md`) into one
//! document: exact ids first, then unique prefixes; ambiguous prefixes are listed.

use crate::board::Board;
use crate::doc::Region;
use crate::error::{Error, Result};
use crate::scan::region_files;

/// Resolves a document reference to its region and id, looking in `regions`.
pub fn resolve(board: &Board, reference: &str, regions: &[Region]) -> Result<(Region, String)> {
    let (regions, wanted): (Vec<Region>, &str) = match reference.split_once('/') {
        Some((dir, rest)) => {
            let region = Region::parse(dir).ok_or_else(|| Error::InvalidId {
                id: reference.to_string(),
                reason: "it contains a path separator",
            })?;
            (vec![region], rest.strip_suffix(".md").unwrap_or(rest))
        }
        None => (
            regions.to_vec(),
            reference.strip_suffix(".md").unwrap_or(reference),
        ),
    };
    crate::id::validate(wanted)?;
    let exact: Vec<Region> = regions
        .iter()
        .copied()
        .filter(|r| std::fs::symlink_metadata(board.doc_path(*r, wanted)).is_ok())
        .collect();
    if exact.len() == 1 {
        return Ok((exact[0], wanted.to_string()));
    }
    let mut candidates: Vec<(Region, String)> = Vec::new();
    if exact.len() > 1 {
        candidates = exact.into_iter().map(|r| (r, wanted.to_string())).collect();
    } else {
        for &r in &regions {
            for file in region_files(board, r)? {
                if file.id.starts_with(wanted) {
                    candidates.push((r, file.id));
                }
            }
        }
    }
    match candidates.len() {
        0 => Err(Error::NotFound {
            what: format!("document '{wanted}'"),
            hint: "`tavern list` shows the documents on the board".into(),
        }),
        1 => Ok(candidates.remove(0)),
        _ => Err(Error::Ambiguous {
            prefix: wanted.to_string(),
            candidates: candidates
                .into_iter()
                .map(|(r, id)| format!("{}/{id}.md", r.dir()))
                .collect(),
        }),
    }
}

/// Resolves a reference that must name a document of `want` for `what` (a command): a
/// document found in another region is not "not found", it is the wrong kind, and the
/// error says which kind it is.
pub fn resolve_kind(board: &Board, reference: &str, want: Region, what: &str) -> Result<String> {
    match resolve(board, reference, &[want]) {
        Ok((_, id)) => Ok(id),
        Err(e @ Error::NotFound { .. }) => {
            let others: Vec<Region> = Region::ALL.into_iter().filter(|r| *r != want).collect();
            match resolve(board, reference, &others) {
                Ok((region, id)) => Err(Error::usage(format!(
                    "{id} is {} {}, not {} {}: {what}",
                    article(region.kind()),
                    region.kind(),
                    article(want.kind()),
                    want.kind()
                ))),
                Err(_) => Err(e),
            }
        }
        Err(e) => Err(e),
    }
}

fn article(word: &str) -> &'static str {
    if word.starts_with(['a', 'e', 'i', 'o', 'u']) {
        "an"
    } else {
        "a"
    }
}
