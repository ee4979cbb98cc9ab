//! Turning what a user typed (`task-7k2m`, `task-7k`, `tasks/task-7k2m.md`) into one
//! document: exact ids first, then unique prefixes; ambiguous prefixes are listed.

use crate::board::Board;
use crate::doc::Region;
use crate::error::{Error, Result};
use crate::scan::region_files;

/// Resolves a document reference to its region and id, looking in `regions` only: a
/// reference that names another region (`questions/q-1` where tasks are wanted) is the
/// wrong kind of document, never a way around what the caller allows.
pub fn resolve(board: &Board, reference: &str, regions: &[Region]) -> Result<(Region, String)> {
    let found = resolve_now(board, reference, regions);
    if !matches!(found, Err(Error::NotFound { .. })) {
        return found;
    }
    // Not there, or not there this instant: `tavern sync` writing the board replaces a
    // changed document the way git does (it removes the file, then writes the new one), and
    // holds the log's lock while it does. Once that is over, look again.
    match crate::store::lock(board, crate::layout::LOG_LOCK) {
        Ok(_settled) => resolve_now(board, reference, regions),
        Err(_) => found,
    }
}

fn resolve_now(board: &Board, reference: &str, regions: &[Region]) -> Result<(Region, String)> {
    let in_board = in_board(board, reference);
    let reference = in_board.as_deref().unwrap_or(reference);
    let (regions, wanted): (Vec<Region>, &str) = match reference.split_once('/') {
        Some((dir, rest)) => {
            let region = Region::parse(dir).ok_or_else(|| Error::InvalidId {
                id: reference.to_string(),
                reason: "it contains a path separator",
            })?;
            if !regions.contains(&region) {
                let wanted: Vec<&str> = regions.iter().map(|r| r.kind()).collect();
                return Err(Error::usage(format!(
                    "{} names {} {}, and only {} {} can be given here",
                    reference.escape_debug(),
                    article(region.kind()),
                    region.kind(),
                    if wanted.len() == 1 {
                        article(wanted[0])
                    } else {
                        "a"
                    },
                    wanted.join(" or ")
                )));
            }
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
            hint: crate::msg!(
                "`",
                crate::error::Command::List(None),
                "` shows the documents on the board"
            ),
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

/// A document's file named by its path (`.tavern/questions/q-1.md`, relative to the
/// working directory or absolute) as `REGION/ID.md`, when the directory above its region's
/// is this board's; None for anything else.
fn in_board(board: &Board, reference: &str) -> Option<String> {
    let mut parts = reference.rsplitn(3, '/');
    let (file, dir, root) = (parts.next()?, parts.next()?, parts.next()?);
    Region::parse(dir).filter(|r| r.dir() == dir)?;
    let root = if root.is_empty() { "/" } else { root };
    let same = std::fs::canonicalize(root).ok()? == std::fs::canonicalize(&board.root).ok()?;
    same.then(|| format!("{dir}/{file}"))
}

/// Resolves a reference that must name a document of `want` for `what` (a command): a
/// document found in another region is not "not found", it is the wrong kind, and the
/// error says which kind it is.
pub fn resolve_kind(board: &Board, reference: &str, want: Region, what: &str) -> Result<String> {
    resolve_kinds(board, reference, &[want], what).map(|(_, id)| id)
}

/// [`resolve_kind`] for a command that takes documents of any of `wants`.
pub fn resolve_kinds(
    board: &Board,
    reference: &str,
    wants: &[Region],
    what: &str,
) -> Result<(Region, String)> {
    match resolve(board, reference, wants) {
        Err(e @ Error::NotFound { .. }) => {
            let others: Vec<Region> = Region::ALL
                .into_iter()
                .filter(|r| !wants.contains(r))
                .collect();
            let wanted: Vec<String> = wants
                .iter()
                .map(|w| format!("{} {}", article(w.kind()), w.kind()))
                .collect();
            match resolve(board, reference, &others) {
                Ok((region, id)) => Err(Error::usage(format!(
                    "{id} is {} {}, not {}: {what}",
                    article(region.kind()),
                    region.kind(),
                    wanted.join(" or ")
                ))),
                Err(_) => Err(e),
            }
        }
        found => found,
    }
}

fn article(word: &str) -> &'static str {
    if word.starts_with(['a', 'e', 'i', 'o', 'u']) {
        "an"
    } else {
        "a"
    }
}

/// A file under `solutions/` named by its path under the board
/// (`solutions/task-7k2m/design.md`), for `show`, `diff` and `log --doc`: None when the
/// reference is not such a path, else the path, refused when it could leave `solutions/`
/// (`..`, an absolute path, an empty or hidden component).
pub fn solution_path(reference: &str) -> Option<Result<String>> {
    let rest = reference.strip_prefix("solutions/")?;
    let bad = |why: &str| {
        Some(Err(Error::input(format!(
            "'{}' is not a path under solutions/: {why}",
            reference.escape_debug()
        ))))
    };
    if rest.is_empty() {
        return bad("it names no file");
    }
    for part in rest.split('/') {
        if part.is_empty() || part == "." || part == ".." {
            return bad("empty, `.` and `..` components are not allowed");
        }
        if part.starts_with('.') {
            return bad("hidden files are tavern's temp files");
        }
        if part.contains(['\\', '\0']) {
            return bad("it contains a backslash or NUL");
        }
    }
    Some(Ok(reference.to_string()))
}

/// Reads a file under `solutions/` (a path from [`solution_path`]): a regular file, not
/// reached through a symbolic link at any level (it could lead outside the board), within
/// the document size limit, UTF-8.
pub fn read_solution(board: &Board, rel: &str) -> Result<String> {
    let mut at = board.root.clone();
    let parts: Vec<&str> = rel.split('/').collect();
    for (i, part) in parts.iter().enumerate() {
        at.push(part);
        match std::fs::symlink_metadata(&at) {
            Ok(m) if m.file_type().is_symlink() => {
                return Err(crate::store::symlink_refused(std::path::Path::new(rel)));
            }
            Ok(m) if i + 1 < parts.len() && !m.is_dir() => break,
            Ok(_) => {}
            Err(_) => {
                return Err(Error::NotFound {
                    what: format!("file {rel}"),
                    hint: "files under solutions/<task>/ are written directly; the log keeps the history of one that existed".into(),
                });
            }
        }
    }
    crate::store::read_text(&at, board.config.limits.max_doc_bytes).map_err(|e| match e {
        Error::InvalidDoc { problem, .. } => Error::invalid_doc(rel, problem),
        e => e,
    })
}
