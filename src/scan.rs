//! Reading every document of some regions, in parallel, without taking locks. A file that
//! cannot be read is skipped and reported; the rest of the board stays usable.

use std::path::PathBuf;

use crate::board::Board;
use crate::doc::{Document, Region};
use crate::error::{Error, Result};
use crate::store;

/// A file a reader skipped, and why.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Skipped {
    pub path: String,
    pub problem: String,
}

#[derive(Debug, Default)]
pub struct Scan {
    pub docs: Vec<Document>,
    pub skipped: Vec<Skipped>,
}

/// A document file found in a region directory.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct DocFile {
    pub id: String,
    pub path: PathBuf,
    /// From the directory entry, so no extra stat is needed to refuse it.
    pub is_symlink: bool,
    /// A FIFO, socket, device or directory (from the directory entry): never opened, since
    /// opening a FIFO waits for a writer forever.
    pub is_special: bool,
}

/// The document files of a region: `*.md`, not dot files (temp files and editors' swap
/// files are dot files or do not end in `.md`).
pub fn region_files(board: &Board, region: Region) -> Result<Vec<DocFile>> {
    files_in(board.region_dir(region))
}

/// The archived document files of a region (`archive/<region>/`).
pub fn archive_files(board: &Board, region: Region) -> Result<Vec<DocFile>> {
    files_in(board.archive_dir(region))
}

fn files_in(dir: PathBuf) -> Result<Vec<DocFile>> {
    let entries = match std::fs::read_dir(&dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(Error::io(&dir, "list", e)),
    };
    let mut out = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|e| Error::io(&dir, "list", e))?;
        // A name that is not UTF-8 is kept (lossily): it fails the id check, so `list`
        // warns about it and `check` reports it, instead of it being invisible.
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if name.starts_with('.') {
            continue;
        }
        if let Some(stem) = name.strip_suffix(".md") {
            let file_type = entry.file_type().ok();
            let is_symlink = file_type.is_some_and(|t| t.is_symlink());
            let is_special = file_type.is_some_and(|t| !t.is_file() && !t.is_symlink());
            out.push(DocFile {
                id: stem.to_string(),
                path: entry.path(),
                is_symlink,
                is_special,
            });
        }
    }
    out.sort();
    Ok(out)
}

pub(crate) fn read_one(
    board: &Board,
    region: Region,
    file: &DocFile,
) -> std::result::Result<Document, Skipped> {
    let path = &file.path;
    let skipped = |e: Error| Skipped {
        path: board.rel(path),
        problem: problem_text(board, &e),
    };
    crate::id::validate(&file.id).map_err(|_| Skipped {
        path: board.rel(path),
        problem: "file name is not a valid id ([a-z0-9][a-z0-9._-]{0,63}.md)".into(),
    })?;
    if file.is_symlink {
        return Err(skipped(store::symlink_refused(path)));
    }
    if file.is_special {
        return Err(skipped(store::not_regular(path)));
    }
    let text = store::read_regular(path, board.config.limits.max_doc_bytes).map_err(skipped)?;
    store::parse_doc(board, region, &file.id, text, path).map_err(skipped)
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
    scan_matching(board, regions, |_| true)
}

/// Reads every document of `regions` and keeps those `keep` accepts. Filtering while
/// reading keeps memory small on big boards; the reading is spread over the cores.
pub fn scan_matching(
    board: &Board,
    regions: &[Region],
    keep: impl Fn(&Document) -> bool + Sync,
) -> Result<Scan> {
    scan_where(board, regions, false, keep)
}

fn scan_where(
    board: &Board,
    regions: &[Region],
    archived: bool,
    keep: impl Fn(&Document) -> bool + Sync,
) -> Result<Scan> {
    scan_with_needles(board, regions, archived, &[], keep)
}

/// Like [`scan_matching`] (over the archive when `archived`) for a `keep` that accepts only documents
/// whose text holds one word of each list of `needles` (see [`crate::query::Query::needles`]):
/// the documents that cannot match are passed over without being parsed.
pub fn scan_with_needles(
    board: &Board,
    regions: &[Region],
    archived: bool,
    needles: &[Vec<String>],
    keep: impl Fn(&Document) -> bool + Sync,
) -> Result<Scan> {
    scan_prefiltered(board, regions, archived, needles, &|_| true, keep)
}

/// Like [`scan_with_needles`], and `plain` says whether a document whose frontmatter is
/// in the fast parser's plain subset may be kept, from its frontmatter's text (see
/// [`crate::query::Query::may_match_plain`]): those it rules out are passed over unparsed.
pub fn scan_prefiltered(
    board: &Board,
    regions: &[Region],
    archived: bool,
    needles: &[Vec<String>],
    plain: &(dyn Fn(&str) -> bool + Sync),
    keep: impl Fn(&Document) -> bool + Sync,
) -> Result<Scan> {
    let mut scan = Scan::default();
    let pre = crate::index::Prefilter {
        needles,
        plain,
        status: &|_| true,
        head: None,
    };
    for &region in regions {
        let part = crate::index::read_dir(board, region, archived, &pre, &keep)?;
        scan.docs.extend(part.docs);
        scan.skipped.extend(part.skipped);
    }
    Ok(scan)
}

/// Like [`scan_prefiltered`], but each document that passes the prefilter goes to `each`
/// as it is read (on the reading threads, in no order) instead of being gathered: what the
/// read holds is what `each` keeps. `status` says whether a document whose `status` is
/// that string (None: not a string, or none) may match (see
/// [`crate::query::Query::may_match_status`]). The files skipped are returned.
pub fn each_prefiltered(
    board: &Board,
    regions: &[Region],
    archived: bool,
    needles: &[Vec<String>],
    plain: &(dyn Fn(&str) -> bool + Sync),
    status: &(dyn Fn(Option<&str>) -> bool + Sync),
    each: &(dyn Fn(Document) + Sync),
) -> Result<Vec<Skipped>> {
    let pre = crate::index::Prefilter {
        needles,
        plain,
        status,
        head: None,
    };
    let mut skipped = Vec::new();
    for &region in regions {
        skipped.extend(crate::index::each_in_dir(
            board, region, archived, &pre, each,
        )?);
    }
    Ok(skipped)
}

/// Every document of `regions` (not their archives) to `each`, as [`each_prefiltered`]
/// gives them with nothing ruled out, except the cached documents `head` answers false
/// for, given their region and head: those are passed over unparsed, `head` having taken
/// account of them. `head` is asked at most once per document, and only of documents the
/// read index holds unchanged; the others are parsed and go to `each`. The files skipped
/// are returned.
pub fn each_by_head(
    board: &Board,
    regions: &[Region],
    head: &(dyn Fn(Region, &crate::index::files::Head<'_>) -> bool + Sync),
    each: &(dyn Fn(Document) + Sync),
) -> Result<Vec<Skipped>> {
    let mut skipped = Vec::new();
    for &region in regions {
        let pre = crate::index::Prefilter {
            head: Some(&|_, h| head(region, h)),
            ..crate::index::Prefilter::NONE
        };
        skipped.extend(crate::index::each_in_dir(board, region, false, &pre, each)?);
    }
    Ok(skipped)
}

/// A document's place in `list`'s order: what is still open before what is finished
/// (terminal tasks, resolved or rejected findings, decided questions), each part best
/// first (priority, then oldest, then id), then the archive after the regions, region by
/// region, by file name. Owned, so that a read can keep a row of each document instead of
/// the document.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct OrderKey {
    finished: bool,
    priority: i64,
    /// [`crate::time::stamp_key`] of its creation time, owned.
    created: (bool, Option<chrono::DateTime<chrono::Utc>>, String),
    id: String,
    archived: bool,
    region: Region,
    file_id: String,
}

impl OrderKey {
    pub fn open_first(board: &Board, d: &Document) -> OrderKey {
        OrderKey {
            finished: finished(board, d),
            ..OrderKey::best_first(d)
        }
    }

    /// Best first: priority (0 = critical), then oldest, then id; then region by region,
    /// each by file name. Each key is computed once: comparing two documents field by
    /// field parsed both timestamps on every comparison.
    pub fn best_first(d: &Document) -> OrderKey {
        let (parsed, at, text) = crate::time::stamp_key(d.created_at());
        OrderKey {
            finished: false,
            priority: d.priority(),
            created: (parsed, at, text.to_string()),
            id: d.id().to_string(),
            archived: d.archived,
            region: d.region,
            file_id: d.file_id.clone(),
        }
    }
}

impl OrderKey {
    /// Does every document whose priority and creation time are these (as the read
    /// index's head keeps them) come after this key, whatever its id and file? Only then
    /// may a read that keeps the first few pass such a document over unparsed.
    pub(crate) fn before_every(
        &self,
        priority: i64,
        created: &crate::index::files::Created<'_>,
    ) -> bool {
        use crate::index::files::Created;
        let created = match created {
            Created::At(secs, nanos) => (true, chrono::DateTime::from_timestamp(*secs, *nanos), ""),
            Created::Text(text) => (false, None, text.as_ref()),
        };
        let mine = (self.created.0, self.created.1, self.created.2.as_str());
        !self.finished && (self.priority, mine) < (priority, created)
    }
}

/// Is a document finished, so that archiving it loses nothing in progress (and `list`
/// shows it after what is open)? A question whose decision was derived and is only forged
/// still waits for a human: not finished.
pub fn finished(board: &Board, doc: &Document) -> bool {
    let status = doc.status().unwrap_or("");
    match doc.region {
        Region::Tasks => board.config.workflow.is_terminal(status),
        Region::Observations => matches!(status, "resolved" | "rejected" | "expired"),
        Region::Questions => {
            !matches!(status, "open" | "")
                && !doc.decision.as_ref().is_some_and(|d| d.is_undecided())
        }
    }
}
