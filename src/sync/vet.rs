//! What arrives from another clone is data, checked like any input (DESIGN §13). Every
//! change between the board branch as this clone has it and what it is about to hold (a
//! record of the board here, the remote's branch, a merge of both) is vetted path by path
//! before it is written or sent:
//!
//! - the path must be one the board's layout has (a document named by a valid id in its
//!   region or the archive, a file under `solutions/<id>/`, a template, a source, a card,
//!   `control/PAUSE`, board.yaml, log.yaml, .gitignore, .gitattributes), spelled in UTF-8;
//! - never `.state/` (locks, the clock, the origin, cursors) nor another machine-local
//!   file (`control/schedule.md`, `control/metrics.md`, temp files), whatever a
//!   `.gitignore` says;
//! - a regular file: never a symbolic link or a submodule;
//! - bounded: a document, card, source or template at most the board's `max_doc_bytes`, a
//!   file under `solutions/` at most [`SOLUTION_FACTOR`] times that (log.yaml is bounded
//!   by what its entries may hold);
//! - a deletion only as [`super::guard`] allows it.
//!
//! A refused change is not taken (the path keeps the version this clone had) and is
//! named, with why, so that the caller can alert.

use std::collections::HashMap;

use serde::Serialize;

use crate::error::Result;
use crate::sync::git::Git;
use crate::sync::guard;
use crate::sync::merge::Change;

/// A file under `solutions/` may be this many times a document's limit.
pub const SOLUTION_FACTOR: u64 = 16;

/// A change that was not taken, and why.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Refusal {
    pub path: String,
    pub why: String,
    /// A deletion (the change would have removed the file).
    #[serde(skip)]
    pub gone: bool,
}

/// The changes that passed, and those refused.
#[derive(Debug, Default)]
pub struct Vetted {
    pub taken: Vec<(String, Change)>,
    pub refused: Vec<Refusal>,
}

/// Why a board-relative path may not hold a file on the board branch, if it may not.
pub fn place_problem(path: &str) -> Option<String> {
    if path.contains('\u{FFFD}') {
        return Some("its name is not UTF-8".into());
    }
    let parts: Vec<&str> = path.split('/').collect();
    if parts
        .iter()
        .any(|p| p.is_empty() || *p == "." || *p == ".." || p.contains('\0'))
    {
        return Some("not a plain relative path".into());
    }
    if parts[0] == crate::layout::STATE_DIR {
        return Some(
            "machine-local runtime state (.state/: locks, the clock and origin, cursors) is never taken from the branch"
                .into(),
        );
    }
    if path == crate::layout::SCHEDULE || path == crate::layout::METRICS {
        return Some("machine-local (watch mode writes it on each machine)".into());
    }
    let name = parts[parts.len() - 1];
    if name.starts_with('.') && name.ends_with(".tmp") {
        return Some("a temp file of a write in progress".into());
    }
    let id_ok = |id: &str| crate::id::validate(id).is_ok();
    let doc_ok = |name: &str| name.strip_suffix(".md").is_some_and(id_ok);
    let region = |dir: &str| crate::doc::Region::ALL.iter().any(|r| r.dir() == dir);
    let fits = match parts.as_slice() {
        [f] => [
            crate::layout::BOARD_YAML,
            crate::layout::LOG,
            crate::layout::GITIGNORE,
            crate::layout::GITATTRIBUTES,
        ]
        .contains(f),
        [r, name] if region(r) => doc_ok(name),
        [crate::layout::ARCHIVE_DIR, r, name] if region(r) => doc_ok(name),
        [crate::layout::SOLUTIONS_DIR, task, _, ..] => id_ok(task),
        [crate::layout::TEMPLATES_DIR, name] => name.ends_with(".md"),
        ["control", "sources", name] => name.ends_with(".md"),
        ["control", "agents", name] => doc_ok(name),
        ["control", "PAUSE"] => true,
        _ => false,
    };
    if fits {
        None
    } else {
        Some(
            "not a place of the board's layout (a document named by a valid id in its region or the archive, solutions/<id>/…, a template, a source, a card, control/PAUSE, or one of the board's own files)"
                .into(),
        )
    }
}

/// A document's limit when the board's own is not known yet (a fresh clone taking the
/// remote's board before it has a board.yaml): board.yaml's default.
pub const DEFAULT_DOC_LIMIT: u64 = 1 << 20;

/// The most bytes a file at `path` may have on the branch (None: no bound), for a board
/// whose documents may have `doc` bytes.
fn size_limit(doc: u64, path: &str) -> Option<u64> {
    if path == crate::layout::LOG {
        None
    } else if path.starts_with("solutions/") {
        Some(doc.saturating_mul(SOLUTION_FACTOR))
    } else {
        Some(doc)
    }
}

/// Vets `changes` to the tree this clone holds, on a board whose documents may have
/// `doc_limit` bytes. `log_text` gives the log of the side that made them (read only
/// when a kept file is deleted), which must explain every deletion of a kept file.
pub fn vet(
    doc_limit: u64,
    git: &Git,
    changes: Vec<(String, Change)>,
    log_text: impl FnOnce() -> Result<Vec<u8>>,
) -> Result<Vetted> {
    let mut out = Vetted::default();
    let mut deleted: Vec<String> = Vec::new();
    let mut sized: Vec<(String, Change)> = Vec::new();
    for (path, change) in changes {
        let refuse = |why: String| Refusal {
            path: path.clone(),
            why,
            gone: false,
        };
        match &change {
            Change::Removed => {
                deleted.push(path);
                continue;
            }
            _ if place_problem(&path).is_some() => {
                let why = place_problem(&path).unwrap_or_default();
                out.refused.push(refuse(why));
                continue;
            }
            Change::Blob { mode, .. } if mode == "120000" => {
                out.refused.push(refuse(
                    "a symbolic link: sync never creates one (it could point outside the board)"
                        .into(),
                ));
                continue;
            }
            Change::Blob { mode, .. } if mode != "100644" && mode != "100755" => {
                out.refused
                    .push(refuse(format!("not a regular file (git mode {mode})")));
                continue;
            }
            Change::Bytes(bytes) => {
                if let Some(limit) = size_limit(doc_limit, &path)
                    && bytes.len() as u64 > limit
                {
                    out.refused.push(refuse(too_big(bytes.len() as u64, limit)));
                    continue;
                }
                out.taken.push((path, change));
            }
            Change::Blob { .. } => sized.push((path, change)),
        }
    }
    let sizes = blob_sizes(
        git,
        sized.iter().filter_map(|(_, c)| match c {
            Change::Blob { sha, .. } => Some(sha.as_str()),
            _ => None,
        }),
    )?;
    for (path, change) in sized {
        let Change::Blob { sha, .. } = &change else {
            continue;
        };
        if let (Some(limit), Some(size)) = (size_limit(doc_limit, &path), sizes.get(sha))
            && *size > limit
        {
            out.refused.push(Refusal {
                why: too_big(*size, limit),
                path,
                gone: false,
            });
            continue;
        }
        out.taken.push((path, change));
    }
    if !deleted.is_empty() {
        let held = if deleted.iter().any(|p| guard::kept(p) != guard::Kept::Free) {
            guard::unexplained(&log_text()?, &deleted)
        } else {
            Vec::new()
        };
        for path in deleted {
            if held.contains(&path) {
                out.refused.push(Refusal {
                    why: "deleted, and no log entry says a tavern command removed it (an archive or a logged deletion)".into(),
                    path,
                    gone: true,
                });
            } else {
                out.taken.push((path, Change::Removed));
            }
        }
    }
    Ok(out)
}

fn too_big(size: u64, limit: u64) -> String {
    format!("{size} bytes, over the {limit} a file there may have")
}

/// The size of each blob, asked of git in one process.
fn blob_sizes<'a>(git: &Git, shas: impl Iterator<Item = &'a str>) -> Result<HashMap<String, u64>> {
    let mut input = String::new();
    for sha in shas {
        input.push_str(sha);
        input.push('\n');
    }
    if input.is_empty() {
        return Ok(HashMap::new());
    }
    let out = git.output(
        &["cat-file", "--batch-check=%(objectname) %(objectsize)"],
        Some(input.as_bytes()),
    )?;
    Ok(out
        .stdout
        .lines()
        .filter_map(|l| {
            let (sha, size) = l.split_once(' ')?;
            Some((sha.to_string(), size.parse().ok()?))
        })
        .collect())
}

/// The changes from commit `from` (None: an empty tree) to commit `to`, as a merge
/// reports them: each path's new blob, or its removal.
pub fn changes_between(git: &Git, from: Option<&str>, to: &str) -> Result<Vec<(String, Change)>> {
    let out = match from {
        Some(from) => git.output(&["diff-tree", "-r", "-z", "--no-renames", from, to], None)?,
        None => git.output(&["ls-tree", "-r", "-z", "--full-tree", to], None)?,
    };
    if !out.success {
        return Err(crate::error::Error::Git {
            command: format!("git diff-tree -r {} {to}", from.unwrap_or("")),
            dir: git.dir().to_path_buf(),
            message: out.stderr.trim().to_string(),
        });
    }
    let mut changes = Vec::new();
    let mut fields = out.stdout.split('\0');
    if from.is_none() {
        // `MODE TYPE SHA\tPATH`
        for rec in fields.filter(|r| !r.is_empty()) {
            let Some((meta, path)) = rec.split_once('\t') else {
                continue;
            };
            let m: Vec<&str> = meta.split(' ').collect();
            if let [mode, _, sha] = m.as_slice() {
                changes.push((
                    path.to_string(),
                    Change::Blob {
                        mode: mode.to_string(),
                        sha: sha.to_string(),
                    },
                ));
            }
        }
        return Ok(changes);
    }
    // `:OLDMODE NEWMODE OLDSHA NEWSHA STATUS` then the path, each ended by NUL.
    while let Some(meta) = fields.next() {
        let Some(meta) = meta.strip_prefix(':') else {
            continue;
        };
        let Some(path) = fields.next() else {
            break;
        };
        let m: Vec<&str> = meta.split(' ').collect();
        let [_, new_mode, _, new_sha, status] = m.as_slice() else {
            continue;
        };
        let change = if status.starts_with('D') {
            Change::Removed
        } else {
            Change::Blob {
                mode: new_mode.to_string(),
                sha: new_sha.to_string(),
            }
        };
        changes.push((path.to_string(), change));
    }
    Ok(changes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn places_of_the_layout() {
        for ok in [
            "board.yaml",
            "log.yaml",
            ".gitignore",
            "tasks/task-1.md",
            "archive/observations/obs-2.md",
            "solutions/task-1/design.md",
            "solutions/task-1/src/deep/x.rs",
            "templates/task.md",
            "control/sources/reviewer.md",
            "control/agents/coder-1.md",
            "control/PAUSE",
        ] {
            assert_eq!(place_problem(ok), None, "{ok}");
        }
        for bad in [
            ".state/clock",
            ".state/locks/log.lock",
            "control/schedule.md",
            "tasks/.task-1.md.tmp",
            "tasks/Bad Id.md",
            "tasks/notes.txt",
            "evil.sh",
            "archive/tasks",
            "archive/tasks/x/y.md",
            "solutions/../x",
            "solutions/task-1",
            "tasks/caf\u{FFFD}.md",
        ] {
            assert!(place_problem(bad).is_some(), "{bad}");
        }
    }
}
