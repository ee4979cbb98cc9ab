//! The board's health as `tavern check` sees it where the board meets git: documents
//! the log says were created that are nowhere, machine-local state on a branch, a missing
//! `.gitignore`, a document in two places, and stale locks (see [`super::locks`]).

use std::collections::{HashMap, HashSet};

use crate::board::Board;
use crate::doc::Region;
use crate::log::Entry;
use crate::watch::sources::Problem;

/// Every problem of this kind on the board; `lost` has seen the whole log.
pub fn problems(board: &Board, lost: Lost<'_>) -> Vec<Problem> {
    let mut out = lost.problems(board);
    two_places(board, &mut out);
    gitignore(board, &mut out);
    tracked_state(board, &mut out);
    for lock in super::locks::stale(board) {
        out.push(Problem {
            path: lock.shown,
            problem: lock.problem,
        });
    }
    out
}

/// Is this log entry one that removes its document from the board? A `move` (archive)
/// or a `delete`; for `check` also an `external-edit` by which a watcher saw it deleted
/// by hand (the log explains the absence, though a sync would not take it as meant).
fn removes(e: &Entry) -> bool {
    matches!(e.op.as_str(), "move" | "delete")
        || (e.op == "external-edit"
            && e.note
                .as_deref()
                .is_some_and(|n| n.starts_with("deleted outside tavern")))
}

/// Documents with a `create` entry whose file is neither on the board nor in the archive,
/// and whose latest entry (by seq, then origin) does not remove it: found from the log's
/// entries handed over one at a time, in the file's order. What it keeps is about the
/// documents whose file a read of the board did not list (`listed`), so a board whose
/// documents are all there costs a lookup per entry, not a copy of the log.
pub struct Lost<'a> {
    listed: &'a dyn Fn(&str) -> bool,
    docs: HashMap<String, Trail>,
}

/// What the log says of one document not listed.
struct Trail {
    /// The (seq, origin) of its latest entry, and whether that entry removes it.
    latest: (u64, String),
    removed: bool,
    /// Its first `create` (seq, origin) and who made it.
    created: Option<((u64, String), String)>,
}

impl<'a> Lost<'a> {
    /// `listed` says whether a document's file (as the log names it: `tasks/x.md`) was
    /// found on the board or in the archive; those not listed are looked at again at the
    /// end.
    pub fn new(listed: &'a dyn Fn(&str) -> bool) -> Self {
        Lost {
            listed,
            docs: HashMap::new(),
        }
    }

    /// One entry of the log, in the file's order: ties in (seq, origin) go as a sorted
    /// read of the whole log orders them (the file's order).
    pub fn see(&mut self, e: &Entry) {
        if !is_document(&e.doc) || (self.listed)(&e.doc) {
            return;
        }
        let key = (e.seq, e.origin.clone());
        let trail = self.docs.entry(e.doc.clone()).or_insert_with(|| Trail {
            latest: key.clone(),
            removed: removes(e),
            created: None,
        });
        if key >= trail.latest {
            trail.removed = removes(e);
            trail.latest = key.clone();
        }
        if e.op == "create" && trail.created.as_ref().is_none_or(|(first, _)| key < *first) {
            trail.created = Some((key, e.actor.clone()));
        }
    }

    fn problems(self, board: &Board) -> Vec<Problem> {
        let mut out = Vec::new();
        for (doc, trail) in self.docs {
            let Some(((seq, _), actor)) = trail.created else {
                continue;
            };
            let here = board.root.join(&doc);
            let archived = board.root.join(crate::layout::ARCHIVE_DIR).join(&doc);
            if std::fs::symlink_metadata(&here).is_ok()
                || std::fs::symlink_metadata(&archived).is_ok()
                || trail.removed
            {
                continue;
            }
            out.push(Problem {
                problem: format!(
                    "lost: created by {actor} (log seq {seq}) but neither on the board nor in the archive, and no log entry removed it; the board branch keeps its last version (`git log -1 tavern -- {doc}`), or the code branch's history does"
                ),
                path: doc,
            });
        }
        out
    }
}

/// `tasks/x.md`, `observations/x.md`, `questions/x.md`.
fn is_document(doc: &str) -> bool {
    let Some((region, name)) = doc.split_once('/') else {
        return false;
    };
    Region::parse(region).is_some_and(|r| r.dir() == region)
        && !name.contains('/')
        && name.ends_with(".md")
}

/// A document both in its region and in the archive.
fn two_places(board: &Board, out: &mut Vec<Problem>) {
    for region in Region::ALL {
        let archived: HashSet<String> = crate::scan::archive_files(board, region)
            .unwrap_or_default()
            .into_iter()
            .map(|f| f.id)
            .collect();
        if archived.is_empty() {
            continue;
        }
        let Ok(dir) = std::fs::read_dir(board.region_dir(region)) else {
            continue;
        };
        let mut ids: Vec<String> = dir
            .flatten()
            .filter_map(|e| {
                let name = e.file_name().into_string().ok()?;
                Some(name.strip_suffix(".md")?.to_string())
            })
            .filter(|id| archived.contains(id))
            .collect();
        ids.sort();
        for id in ids {
            out.push(Problem {
                path: format!("{}/{id}.md", region.dir()),
                problem: format!(
                    "also in the archive (archive/{}/{id}.md): a document is in one place; a sweep (or archiving it) keeps the newer copy and logs the other's removal",
                    region.dir()
                ),
            });
        }
    }
}

/// The board's .gitignore keeps machine-local state out of git.
fn gitignore(board: &Board, out: &mut Vec<Problem>) {
    let path = crate::layout::gitignore(&board.root);
    match std::fs::read_to_string(&path) {
        Err(_) => out.push(Problem {
            path: crate::layout::GITIGNORE.into(),
            problem: format!(
                "missing: git would track .state/ (locks, the clock, cursors) with the board; write it back with these lines:\n{}",
                crate::layout::GITIGNORE_TEXT.trim_end()
            ),
        }),
        Ok(text) => {
            let state = format!("{}/", crate::layout::STATE_DIR);
            if !text
                .lines()
                .any(|l| l.trim() == state || l.trim() == format!("/{state}"))
            {
                out.push(Problem {
                    path: crate::layout::GITIGNORE.into(),
                    problem: format!(
                        "does not ignore .state/: add the line `{state}` (a sync never records it, but git on the code branch would)"
                    ),
                });
            }
        }
    }
}

/// `.state/` recorded in git: on the board branch (a sync takes it out at its next
/// record), or on the code branch.
fn tracked_state(board: &Board, out: &mut Vec<Problem>) {
    let Some(repo) = crate::sync::repo::Repo::find(board.project()) else {
        return;
    };
    let git = crate::sync::git::Git::new(&board.root);
    let on_branch = crate::sync::git::read_ref_file(&repo.common_dir, super::branch::REF);
    if !matches!(on_branch, crate::sync::git::RefLookup::Absent)
        && let Ok(o) = git.clone().with_env("GIT_DIR", &repo.common_dir).output(
            &[
                "ls-tree",
                "--name-only",
                super::branch::REF,
                "--",
                crate::layout::STATE_DIR,
            ],
            None,
        )
        && o.success
        && !o.stdout.trim().is_empty()
    {
        out.push(Problem {
            path: format!("{}/", crate::layout::STATE_DIR),
            problem: "recorded on the board branch (machine-local state: the next sync takes it out of the branch)".into(),
        });
    }
    if let Ok(o) = git.output(&["ls-files", "--", crate::layout::STATE_DIR], None)
        && o.success
        && !o.stdout.trim().is_empty()
    {
        out.push(Problem {
            path: format!("{}/", crate::layout::STATE_DIR),
            problem: format!(
                "tracked on the code branch (machine-local state): `git rm -r --cached {}` and commit",
                board.root.join(crate::layout::STATE_DIR).display()
            ),
        });
    }
}
