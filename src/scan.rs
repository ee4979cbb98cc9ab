//! Reading every document of some regions, in parallel, without taking locks. A file that
//! cannot be read is skipped and reported; the rest of the board stays usable.

use std::path::PathBuf;

use crate::board::Board;
use crate::doc::{Document, Region};
use crate::error::{Error, Result};
use crate::store;

/// A file a reader skipped, and why.
#[derive(Clone, Debug)]
pub struct Skipped {
    pub path: String,
    pub problem: String,
}

#[derive(Debug, Default)]
pub struct Scan {
    pub docs: Vec<Document>,
    pub skipped: Vec<Skipped>,
}

/// The document files of a region: `*.md`, not dot files (temp files and editors' swap
/// files are dot files or do not end in `.md`).
pub fn region_files(board: &Board, region: Region) -> Result<Vec<(String, PathBuf)>> {
    let dir = board.region_dir(region);
    let entries = match std::fs::read_dir(&dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(Error::io(&dir, "list", e)),
    };
    let mut out = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|e| Error::io(&dir, "list", e))?;
        let name = entry.file_name();
        let Some(name) = name.to_str() else { continue };
        if name.starts_with('.') {
            continue;
        }
        if let Some(stem) = name.strip_suffix(".md") {
            out.push((stem.to_string(), entry.path()));
        }
    }
    out.sort();
    Ok(out)
}

fn read_one(
    board: &Board,
    region: Region,
    id: &str,
    path: &std::path::Path,
) -> std::result::Result<Document, Skipped> {
    let skipped = |e: Error| Skipped {
        path: board.rel(path),
        problem: problem_text(board, &e),
    };
    crate::id::validate(id).map_err(|_| Skipped {
        path: board.rel(path),
        problem: "file name is not a valid id ([a-z0-9][a-z0-9._-]{0,63}.md)".into(),
    })?;
    let text = store::read_text(path, board.config.limits.max_doc_bytes).map_err(skipped)?;
    store::parse_doc(board, region, id, text, path).map_err(skipped)
}

/// The problem part of an error about a file (its message without the path prefix).
fn problem_text(board: &Board, e: &Error) -> String {
    match e {
        Error::InvalidDoc { problem, .. } => problem.clone(),
        other => {
            let s = other.to_string();
            let prefix = format!("{}: ", board.root.display());
            s.strip_prefix(&prefix).unwrap_or(&s).to_string()
        }
    }
}

/// Reads every document of `regions`.
pub fn scan(board: &Board, regions: &[Region]) -> Result<Scan> {
    let mut files = Vec::new();
    for &region in regions {
        for (id, path) in region_files(board, region)? {
            files.push((region, id, path));
        }
    }
    let threads = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(8);
    let results: Vec<std::result::Result<Document, Skipped>> = if threads <= 1 || files.len() < 256
    {
        files
            .iter()
            .map(|(r, id, p)| read_one(board, *r, id, p))
            .collect()
    } else {
        let chunk = files.len().div_ceil(threads);
        std::thread::scope(|s| {
            let handles: Vec<_> = files
                .chunks(chunk)
                .map(|part| {
                    s.spawn(move || {
                        part.iter()
                            .map(|(r, id, p)| read_one(board, *r, id, p))
                            .collect::<Vec<_>>()
                    })
                })
                .collect();
            handles
                .into_iter()
                .flat_map(|h| h.join().unwrap_or_default())
                .collect()
        })
    };
    let mut scan = Scan::default();
    for r in results {
        match r {
            Ok(d) => scan.docs.push(d),
            Err(s) => scan.skipped.push(s),
        }
    }
    Ok(scan)
}

/// Best first: priority (0 = critical), then oldest, then id.
pub fn sort_best_first(docs: &mut [Document]) {
    docs.sort_by(|a, b| {
        a.priority()
            .cmp(&b.priority())
            .then_with(|| a.created_at().cmp(b.created_at()))
            .then_with(|| a.id().cmp(b.id()))
    });
}
