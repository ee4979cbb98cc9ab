//! Merging two diverged board branches, three ways, field by field (README, "When two
//! machines changed the same thing").
//!
//! The merge base is the last commit both branches share. For every file of the board:
//!
//! - changed on one side only: that side's version;
//! - `log.yaml`: the union of the entries of both sides, each exactly once (an entry is
//!   its `(seq, origin)`; an entry from before origins existed is its text), ordered by
//!   `(seq, origin)`;
//! - a document (frontmatter and body) changed on both sides: each top-level frontmatter
//!   field and the body are merged on their own. A field changed on one side takes that
//!   side's value; a field both sides changed to different values is a conflict decided by
//!   the rule below, and the body is merged line by line (`git merge-file`) unless both
//!   sides changed the same lines, which is a conflict too. `rev` becomes one more than the
//!   higher of the two, `updated_at` the later;
//! - a file changed on one side and deleted on the other: the changed file is kept;
//! - any other file both sides changed (board.yaml, a source): the whole file by the rule.
//!
//! The rule: the side whose latest log entry about the document comes later in the log's
//! order wins (higher Lamport `seq`, ties broken by the greater `origin`); a side without
//! such an entry (a hand edit) loses to one that has it; without entries on either side,
//! the later `updated_at`, then the greater value as text. Both clones compute the same
//! result from the same two commits. Every conflict is logged (`op: sync-conflict`, actor
//! `tavern-sync`), naming the field, the value kept and the value dropped; every document
//! merged from both sides gets one `sync-merge` entry at its new rev. No file ever holds
//! conflict markers.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::path::Path;

use serde::Serialize;

use crate::board::Board;
use crate::error::{Error, Result};
use crate::log::{self, Entry};
use crate::sync::git::Git;

/// The actor of the entries a sync writes.
pub const ACTOR: &str = "tavern-sync";

/// One field that both sides changed to different values.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Conflict {
    /// The file, relative to the board.
    pub doc: String,
    /// The frontmatter key, `body`, or `file` (the whole file).
    pub field: String,
    pub kept: String,
    pub dropped: String,
}

/// What a merge made.
#[derive(Debug, Default)]
pub struct Merged {
    /// The files of the merged tree that differ from ours, with their new content (None:
    /// removed) or the blob they take from theirs.
    pub changes: Vec<(String, Change)>,
    pub conflicts: Vec<Conflict>,
    /// Documents both sides changed, merged field by field.
    pub merged_docs: Vec<String>,
    /// Copies of documents the merge removed so that each is in one place: (the copy
    /// removed, the one kept). Each is logged as a `delete` by tavern-sync.
    pub dropped_copies: Vec<(String, String)>,
}

#[derive(Clone, Debug)]
pub enum Change {
    Blob { mode: String, sha: String },
    Bytes(Vec<u8>),
    Removed,
}

type Tree = BTreeMap<String, (String, String)>;

/// The files of a commit: path → (mode, blob).
pub fn ls_tree(git: &Git, commit: &str) -> Result<Tree> {
    let out = git.output(&["ls-tree", "-r", "-z", commit], None)?;
    if !out.success {
        return Err(git_error(git, &format!("ls-tree -r {commit}"), &out.stderr));
    }
    let mut tree = Tree::new();
    for rec in out.stdout.split('\0').filter(|r| !r.is_empty()) {
        let Some((meta, path)) = rec.split_once('\t') else {
            continue;
        };
        let mut parts = meta.split(' ');
        let (Some(mode), Some(_kind), Some(sha)) = (parts.next(), parts.next(), parts.next())
        else {
            continue;
        };
        tree.insert(path.to_string(), (mode.to_string(), sha.to_string()));
    }
    Ok(tree)
}

fn git_error(git: &Git, command: &str, stderr: &str) -> Error {
    Error::Git {
        command: format!("git {command}"),
        dir: git.dir().to_path_buf(),
        message: stderr.trim().to_string(),
    }
}

/// The contents of blobs, read from git in batches: each [`Blobs::load`] is one `git
/// cat-file --batch` for every blob it is given, so that a merge of thousands of
/// documents starts a bounded number of processes, not one per document.
pub(crate) struct Blobs<'g> {
    git: &'g Git,
    cache: HashMap<String, Vec<u8>>,
}

impl<'g> Blobs<'g> {
    pub(crate) fn new(git: &'g Git) -> Blobs<'g> {
        Blobs {
            git,
            cache: HashMap::new(),
        }
    }

    /// Reads every blob of `shas` not read yet, in one process.
    pub(crate) fn load<'a>(&mut self, shas: impl IntoIterator<Item = &'a str>) -> Result<()> {
        let mut input = String::new();
        let mut asked = HashSet::new();
        for sha in shas {
            if !self.cache.contains_key(sha) && asked.insert(sha) {
                input.push_str(sha);
                input.push('\n');
            }
        }
        if input.is_empty() {
            return Ok(());
        }
        let (out, bytes) = self
            .git
            .output_bytes(&["cat-file", "--batch"], Some(input.as_bytes()))?;
        if !out.success {
            return Err(git_error(self.git, "cat-file --batch", &out.stderr));
        }
        // `SHA TYPE SIZE\n` then SIZE bytes and `\n`, per object; `NAME missing\n` for one
        // that is not there.
        let mut at = 0;
        while at < bytes.len() {
            let Some(nl) = bytes[at..].iter().position(|&b| b == b'\n') else {
                break;
            };
            let header = String::from_utf8_lossy(&bytes[at..at + nl]).into_owned();
            at += nl + 1;
            let parts: Vec<&str> = header.split(' ').collect();
            let [sha, _kind, size] = parts.as_slice() else {
                return Err(git_error(
                    self.git,
                    "cat-file --batch",
                    &format!("no such object: {header}"),
                ));
            };
            let size: usize = size.parse().map_err(|_| {
                git_error(
                    self.git,
                    "cat-file --batch",
                    &format!("unexpected answer: {header}"),
                )
            })?;
            let end = (at + size).min(bytes.len());
            self.cache.insert(sha.to_string(), bytes[at..end].to_vec());
            at = end + 1;
        }
        Ok(())
    }

    /// The bytes of blob `sha` (empty for None), read now if no [`Blobs::load`] read it.
    pub(crate) fn get(&mut self, sha: Option<&str>) -> Result<Vec<u8>> {
        let Some(sha) = sha else {
            return Ok(Vec::new());
        };
        if !self.cache.contains_key(sha) {
            self.load([sha])?;
        }
        self.cache.get(sha).cloned().ok_or_else(|| {
            git_error(
                self.git,
                &format!("cat-file --batch {sha}"),
                "no such object",
            )
        })
    }
}

/// Merges `ours` and `theirs` (commits) over their merge base `base` (None: no common
/// history, every file is new on both sides).
pub fn merge(
    board: &Board,
    git: &Git,
    tmp: &Path,
    base: Option<&str>,
    ours: &str,
    theirs: &str,
) -> Result<Merged> {
    let b = match base {
        Some(c) => ls_tree(git, c)?,
        None => Tree::new(),
    };
    let o = ls_tree(git, ours)?;
    let t = ls_tree(git, theirs)?;
    let paths: BTreeSet<&String> = b.keys().chain(o.keys()).chain(t.keys()).collect();
    let sha = |tree: &Tree, p: &str| tree.get(p).map(|(_, s)| s.clone());

    let log_path = crate::layout::LOG;
    // Every blob the merge reads, in one process: the logs, and the three versions of
    // each file both sides changed.
    let mut blobs = Blobs::new(git);
    let mut wanted: Vec<&str> = Vec::new();
    for p in &paths {
        let (bs, os, ts) = (b.get(*p), o.get(*p), t.get(*p));
        let both_changed = os != ts && ts != bs && os != bs;
        if p.as_str() == log_path || (both_changed && os.is_some() && ts.is_some()) {
            wanted.extend([bs, os, ts].into_iter().flatten().map(|(_, s)| s.as_str()));
        }
    }
    blobs.load(wanted)?;
    // The logs first: they decide who wins a conflict.
    let logs = [
        blobs.get(sha(&b, log_path).as_deref())?,
        blobs.get(sha(&o, log_path).as_deref())?,
        blobs.get(sha(&t, log_path).as_deref())?,
    ];
    let base_ids: HashSet<Vec<u8>> = chunks(&logs[0]).into_iter().map(identity).collect();
    let stamps_o = stamps(&logs[1], &base_ids);
    let stamps_t = stamps(&logs[2], &base_ids);

    let mut merged = Merged::default();
    let mut log_changed = false;
    for p in paths {
        let (bs, os, ts) = (sha(&b, p), sha(&o, p), sha(&t, p));
        if os == ts || ts == bs {
            continue; // ours already
        }
        if os == bs {
            merged.changes.push((
                p.clone(),
                match t.get(p) {
                    Some((mode, sha)) => Change::Blob {
                        mode: mode.clone(),
                        sha: sha.clone(),
                    },
                    None => Change::Removed,
                },
            ));
            continue;
        }
        if p == log_path {
            log_changed = true;
            continue;
        }
        // Both changed.
        let side_o = Side {
            stamp: stamps_o.get(p.as_str()).cloned(),
        };
        let side_t = Side {
            stamp: stamps_t.get(p.as_str()).cloned(),
        };
        let (Some(_), Some((mode, tsha))) = (&os, t.get(p)) else {
            if os.is_none() {
                // Deleted here, changed there: the change is kept.
                let (mode, tsha) = t.get(p).cloned().unwrap_or_default();
                merged.changes.push((
                    p.clone(),
                    Change::Blob {
                        mode,
                        sha: tsha.clone(),
                    },
                ));
                merged.conflicts.push(Conflict {
                    doc: p.clone(),
                    field: "file".into(),
                    kept: "the changed file".into(),
                    dropped: "its deletion".into(),
                });
            } else {
                merged.conflicts.push(Conflict {
                    doc: p.clone(),
                    field: "file".into(),
                    kept: "the changed file".into(),
                    dropped: "its deletion".into(),
                });
            }
            continue;
        };
        let texts = [
            blobs.get(bs.as_deref())?,
            blobs.get(os.as_deref())?,
            blobs.get(Some(tsha))?,
        ];
        let is_doc = p.ends_with(".md");
        let result = if is_doc {
            merge_doc(tmp, git, p, &texts, &side_o, &side_t, &mut merged.conflicts)?
        } else {
            None
        };
        let bytes = match result {
            Some(bytes) => {
                merged.merged_docs.push(p.clone());
                bytes
            }
            None => {
                // The whole file by the rule.
                let (win_o, kept, dropped) = decide(&side_o, &side_t, &texts[1], &texts[2]);
                merged.conflicts.push(Conflict {
                    doc: p.clone(),
                    field: "file".into(),
                    kept: short(kept),
                    dropped: short(dropped),
                });
                if win_o {
                    continue;
                }
                texts[2].clone()
            }
        };
        if bytes != texts[1] {
            merged.changes.push((p.clone(), Change::Bytes(bytes)));
        }
        let _ = mode;
    }

    one_place(
        board,
        git,
        &mut blobs,
        tmp,
        &b,
        &o,
        &t,
        &stamps_o,
        &stamps_t,
        &mut merged,
    )?;

    if log_changed || !merged.conflicts.is_empty() || !merged.merged_docs.is_empty() {
        let mut log = union(&logs[0], &logs[1], &logs[2]);
        let last = chunks(&log)
            .iter()
            .filter_map(|c| log::head(c).map(|h| h.seq))
            .max()
            .unwrap_or(0);
        let origin = log::Clock::read(board).origin;
        let at = crate::time::stamp_millis(crate::time::now());
        let mut seq = last;
        let mut entry =
            |op: &str, doc: &str, note: String, rev: Option<u64>, diff: Option<String>| {
                seq += 1;
                log::render(&Entry {
                    seq,
                    origin: origin.clone(),
                    at: at.clone(),
                    actor: ACTOR.into(),
                    op: op.into(),
                    doc: doc.into(),
                    rev,
                    note: Some(note),
                    diff,
                    ..Entry::default()
                })
            };
        let mut extra = String::new();
        for c in &merged.conflicts {
            extra.push_str(&entry(
                "sync-conflict",
                &c.doc,
                format!(
                    "{} changed on both sides: kept {}, dropped {}",
                    c.field, c.kept, c.dropped
                ),
                None,
                None,
            ));
        }
        for (drop, keep) in &merged.dropped_copies {
            extra.push_str(&entry(
                "delete",
                drop,
                format!("a document is in one place: archived on one side and changed on the other, it is kept in {keep}"),
                None,
                None,
            ));
        }
        for d in &merged.merged_docs {
            let new = merged
                .changes
                .iter()
                .find(|(p, _)| p == d)
                .and_then(|(_, c)| match c {
                    Change::Bytes(b) => Some(String::from_utf8_lossy(b).into_owned()),
                    _ => None,
                });
            let old = String::from_utf8_lossy(&blobs.get(sha(&o, d).as_deref())?).into_owned();
            let new = new.unwrap_or_else(|| old.clone());
            let rev = rev_of(&new);
            extra.push_str(&entry(
                "sync-merge",
                d,
                "changed on both sides, merged field by field".into(),
                rev,
                Some(log::diff(&old, &new)),
            ));
        }
        if !log.is_empty() && !log.ends_with(b"\n") {
            log.push(b'\n');
        }
        log.extend_from_slice(extra.as_bytes());
        if log != logs[1] {
            merged
                .changes
                .push((log_path.to_string(), Change::Bytes(log)));
        }
    }
    Ok(merged)
}

/// A document is never in two places: archived on one side (moved to
/// `archive/<region>/<id>.md`) and changed on the other, the merge would hold it both in
/// its region and in the archive. Its content is the field-by-field merge of both
/// versions (conflicts by the rule), and that merged document decides where the one copy
/// goes ([`stays_archived`]): in the archive, with the other side's change applied to it,
/// unless the other side moved it back to a live state; the other copy goes.
#[allow(clippy::too_many_arguments)]
fn one_place(
    board: &Board,
    git: &Git,
    blobs: &mut Blobs<'_>,
    tmp: &Path,
    b: &Tree,
    o: &Tree,
    t: &Tree,
    stamps_o: &HashMap<String, (u64, String)>,
    stamps_t: &HashMap<String, (u64, String)>,
    merged: &mut Merged,
) -> Result<()> {
    // The changes as they are before this pass (each double touches only its own two
    // paths).
    let changed: HashMap<String, Change> = merged.changes.iter().cloned().collect();
    let present = |p: &str| match changed.get(p) {
        Some(c) => !matches!(c, Change::Removed),
        None => o.contains_key(p),
    };
    let mut doubles = Vec::new();
    for p in o.keys().chain(t.keys()) {
        let Some((region, name)) = p.split_once('/') else {
            continue;
        };
        let is_region = crate::doc::Region::ALL.iter().any(|r| r.dir() == region);
        if !is_region || name.contains('/') || !name.ends_with(".md") {
            continue;
        }
        let archived = format!("{}/{p}", crate::layout::ARCHIVE_DIR);
        if present(p) && present(&archived) && !doubles.iter().any(|(d, _)| d == p) {
            doubles.push((p.clone(), archived));
        }
    }
    // Every version the pass reads, in one process.
    let mut wanted: Vec<&str> = Vec::new();
    for (live, archived) in &doubles {
        for p in [live, archived] {
            if let Some(Change::Blob { sha, .. }) = changed.get(p.as_str()) {
                wanted.push(sha);
            }
            wanted.extend(o.get(p.as_str()).map(|(_, s)| s.as_str()));
        }
        wanted.extend(b.get(live.as_str()).map(|(_, s)| s.as_str()));
    }
    blobs.load(wanted)?;
    for (live, archived) in doubles {
        let mut content = |path: &str| -> Result<Vec<u8>> {
            match changed.get(path) {
                Some(Change::Bytes(bytes)) => Ok(bytes.clone()),
                Some(Change::Blob { sha, .. }) => blobs.get(Some(sha)),
                _ => blobs.get(o.get(path).map(|(_, s)| s.as_str())),
            }
        };
        // The side that archived it holds the archived copy and not the live one.
        let ours_archived = o.contains_key(&archived) && !o.contains_key(&live);
        let side_o = Side {
            stamp: stamps_o.get(&live).cloned(),
        };
        let side_t = Side {
            stamp: stamps_t.get(&live).cloned(),
        };
        let (a_text, l_text) = (content(&archived)?, content(&live)?);
        let base = blobs.get(b.get(&live).map(|(_, s)| s.as_str()))?;
        // ours/theirs as merge_doc and the rule see them.
        let (ov, tv) = if ours_archived {
            (a_text.clone(), l_text.clone())
        } else {
            (l_text.clone(), a_text.clone())
        };
        let (ours_win, _, _) = decide(&side_o, &side_t, &ov, &tv);
        let mut field_conflicts = Vec::new();
        let text = merge_doc(
            tmp,
            git,
            &live,
            &[base, ov.clone(), tv.clone()],
            &side_o,
            &side_t,
            &mut field_conflicts,
        )?
        .unwrap_or(if ours_win { ov } else { tv });
        let archive_wins = stays_archived(board, &live, &text, &a_text);
        let (keep, drop) = if archive_wins {
            (&archived, &live)
        } else {
            (&live, &archived)
        };
        merged
            .conflicts
            .retain(|c| !(c.doc == live && c.field == "file"));
        merged.conflicts.extend(field_conflicts);
        merged.conflicts.push(Conflict {
            doc: live.clone(),
            field: "place".into(),
            kept: format!("one copy, in {keep}, with both sides' changes"),
            dropped: format!("the copy in {drop} (archived on one side, changed on the other)"),
        });
        let ours_keep = blobs.get(o.get(keep).map(|(_, s)| s.as_str()))?;
        merged.changes.retain(|(p, _)| p != keep && p != drop);
        if !o.contains_key(keep) || text != ours_keep {
            merged.changes.push((keep.clone(), Change::Bytes(text)));
            merged.merged_docs.push(keep.clone());
        }
        if o.contains_key(drop) {
            merged.changes.push((drop.clone(), Change::Removed));
        }
        merged.dropped_copies.push((drop.clone(), keep.clone()));
    }
    Ok(())
}

/// One copy of a document found both in its region (`live`, written there again after
/// it was archived: no log entry of its own) and in the archive (`archived`): the
/// field-by-field merge of both against `base` (the version that was archived), a field
/// both changed going to the archived copy (its move is logged), and where it goes.
pub(crate) struct OneCopy {
    pub text: Vec<u8>,
    /// It stays in the archive (else in its region: the archive is undone).
    pub archived: bool,
    pub conflicts: Vec<Conflict>,
}

/// See [`OneCopy`]; `path` is the live copy's path (relative to the board).
pub(crate) fn one_copy(
    board: &Board,
    git: &Git,
    tmp: &Path,
    path: &str,
    base: &[u8],
    live: &[u8],
    archived: &[u8],
) -> Result<OneCopy> {
    let hand = Side { stamp: None };
    let logged = Side {
        stamp: Some((0, String::new())),
    };
    let mut conflicts = Vec::new();
    let text = merge_doc(
        tmp,
        git,
        path,
        &[base.to_vec(), archived.to_vec(), live.to_vec()],
        &logged,
        &hand,
        &mut conflicts,
    )?
    .unwrap_or_else(|| archived.to_vec());
    let archived = stays_archived(board, path, &text, archived);
    Ok(OneCopy {
        text,
        archived,
        conflicts,
    })
}

/// Where a document archived on one side and changed on the other stays, decided by its
/// merged version alone (so every clone decides the same, whichever side it is on): in
/// the archive when the merged document is finished (an edit, a hand edit, a review's
/// approval or a claim record followed on the other side: the change is applied to the
/// archived copy), or when its status is still the one it was archived with (a session
/// finding that expired); in its region when the other side moved it back to a state that
/// is not finished (`reopen`, `reject`): the archive is undone. A version that cannot be
/// read as a document stays archived (the archive is a logged move).
fn stays_archived(board: &Board, live: &str, merged: &[u8], archived: &[u8]) -> bool {
    let Some((region, name)) = live.split_once('/') else {
        return true;
    };
    let (Some(region), Some(id)) = (crate::doc::Region::parse(region), name.strip_suffix(".md"))
    else {
        return true;
    };
    let parse = |bytes: &[u8]| {
        crate::doc::Document::parse(
            region,
            id,
            String::from_utf8_lossy(bytes).into_owned(),
            board.config.yaml_limits(),
        )
        .ok()
    };
    match (parse(merged), parse(archived)) {
        (Some(m), Some(a)) => crate::scan::finished(board, &m) || m.status() == a.status(),
        _ => true,
    }
}

/// Keeps a value short enough for a log note.
fn short(bytes: &[u8]) -> String {
    let s = String::from_utf8_lossy(bytes);
    let s = s.trim();
    if s.chars().count() > 200 {
        format!("{}…", s.chars().take(200).collect::<String>())
    } else {
        s.to_string()
    }
}

/// How one side of the merge stands for the rule.
struct Side {
    /// The latest log entry about the document on this side since the base: (seq, origin).
    stamp: Option<(u64, String)>,
}

/// The rule: is ours the winner? Returns (ours wins, kept, dropped).
fn decide<'a>(o: &Side, t: &Side, ov: &'a [u8], tv: &'a [u8]) -> (bool, &'a [u8], &'a [u8]) {
    decide_with(o, t, None, None, ov, tv)
}

fn decide_with<'a>(
    o: &Side,
    t: &Side,
    o_updated: Option<&str>,
    t_updated: Option<&str>,
    ov: &'a [u8],
    tv: &'a [u8],
) -> (bool, &'a [u8], &'a [u8]) {
    // `updated_at` as times, not text: `…:05Z` (seconds, an older document) is before
    // `…:05.120Z`, which text comparison would put first.
    let updated = match (o_updated, t_updated) {
        (Some(a), Some(b)) => crate::time::cmp_stamps(a, b),
        (a, b) => a.is_some().cmp(&b.is_some()),
    };
    let order = o.stamp.cmp(&t.stamp).then(updated).then_with(|| ov.cmp(tv));
    if order.is_ge() {
        (true, ov, tv)
    } else {
        (false, tv, ov)
    }
}

/// The latest entry about each document among the entries of `log` not in the base.
fn stamps(log: &[u8], base: &HashSet<Vec<u8>>) -> HashMap<String, (u64, String)> {
    let mut out: HashMap<String, (u64, String)> = HashMap::new();
    for c in chunks(log) {
        if base.contains(&identity(c)) {
            continue;
        }
        let Some(e) = log::parse_entry(&String::from_utf8_lossy(c)) else {
            continue;
        };
        let key = (e.seq, e.origin.clone());
        let slot = out.entry(e.doc.clone()).or_default();
        if key > *slot {
            *slot = key;
        }
    }
    out
}

/// log.yaml's bytes cut into entry chunks (each starts at a line beginning with `- `); a
/// leading part that is no entry (a comment) is a chunk of its own.
fn chunks(text: &[u8]) -> Vec<&[u8]> {
    let mut starts = vec![0];
    let mut offset = 0;
    for line in text.split_inclusive(|&b| b == b'\n') {
        if offset > 0 && (line.starts_with(b"- ") || line == b"-\n") {
            starts.push(offset);
        }
        offset += line.len();
    }
    let mut out = Vec::new();
    for (i, &s) in starts.iter().enumerate() {
        let end = starts.get(i + 1).copied().unwrap_or(text.len());
        if end > s {
            out.push(&text[s..end]);
        }
    }
    out
}

/// What makes an entry the same entry on two clones: its (seq, origin) and its text.
/// The text too, because two clones can share an origin (a copied `.state/`, a clone
/// made with `cp -r`): their entries then share (seq, origin) and differ, and neither may
/// be dropped. An entry is never rewritten, so one entry has one text everywhere. An
/// entry from before origins existed is its text.
fn identity(chunk: &[u8]) -> Vec<u8> {
    let mut text = chunk.to_vec();
    if !text.ends_with(b"\n") {
        text.push(b'\n');
    }
    match log::head(chunk) {
        Some(h) if !h.origin.is_empty() => {
            format!("{}\0{}\0{:016x}", h.seq, h.origin, fnv(&text)).into_bytes()
        }
        _ => text,
    }
}

/// FNV-1a: a stable digest to tell texts apart (entries, alert keys), not a defence.
pub(crate) fn fnv(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in bytes {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

/// The entries of both logs, each once: the remote's log as it is, then the entries only
/// this clone has, in (seq, origin) order. Every clone that already holds the remote's
/// log sees it grow at its end (a follower reads on from where it was); readers order
/// entries by (seq, origin) whatever their place in the file. Entries of the base that
/// one side dropped stay dropped.
pub fn union(base: &[u8], ours: &[u8], theirs: &[u8]) -> Vec<u8> {
    let base_ids: HashSet<Vec<u8>> = chunks(base).into_iter().map(identity).collect();
    let ours_ids: HashSet<Vec<u8>> = chunks(ours).into_iter().map(identity).collect();
    let mut seen = HashSet::new();
    let mut out: Vec<u8> = Vec::new();
    let push = |out: &mut Vec<u8>, c: &[u8]| {
        out.extend_from_slice(c);
        if !c.ends_with(b"\n") {
            out.push(b'\n');
        }
    };
    for c in chunks(theirs) {
        let id = identity(c);
        if base_ids.contains(&id) && !ours_ids.contains(&id) {
            continue; // dropped here
        }
        if seen.insert(id) {
            push(&mut out, c);
        }
    }
    let theirs_ids = seen;
    let mut only_ours: Vec<(u64, String, usize, &[u8])> = Vec::new();
    let mut last_seq = 0;
    for c in chunks(ours) {
        let id = identity(c);
        if theirs_ids.contains(&id) || base_ids.contains(&id) {
            continue; // theirs has it, or theirs dropped it
        }
        let (seq, origin) = match log::head(c) {
            Some(h) => (h.seq, h.origin.to_string()),
            None => (last_seq, String::new()),
        };
        last_seq = seq;
        let n = only_ours.len();
        only_ours.push((seq, origin, n, c));
    }
    only_ours.sort_by(|a, b| (a.0, &a.1, a.2).cmp(&(b.0, &b.1, b.2)));
    for (_, _, _, c) in only_ours {
        push(&mut out, c);
    }
    out
}

fn rev_of(text: &str) -> Option<u64> {
    let split = crate::doc::split::split(text).ok()?;
    split
        .frontmatter
        .lines()
        .find_map(|l| l.strip_prefix("rev:"))
        .and_then(|v| v.trim().parse().ok())
}

/// A frontmatter cut into its top-level fields: (key, the field's lines), plus the lines
/// before the first key.
fn fields(fm: &str) -> (String, Vec<(String, String)>) {
    let mut prelude = String::new();
    let mut out: Vec<(String, String)> = Vec::new();
    for line in fm.split_inclusive('\n') {
        let starts_field =
            !line.starts_with([' ', '\t', '-', '#', '\r', '\n']) && line.contains(':');
        if starts_field {
            let key = line.split(':').next().unwrap_or("").trim().to_string();
            out.push((key, line.to_string()));
        } else if let Some(last) = out.last_mut() {
            last.1.push_str(line);
        } else {
            prelude.push_str(line);
        }
    }
    (prelude, out)
}

/// A timestamp field's value: its line without the key, the spaces and any quotes.
fn stamp_text(chunk: &str) -> &str {
    chunk
        .split_once(':')
        .map_or(chunk, |(_, v)| v)
        .trim()
        .trim_matches(|c| c == '"' || c == '\'')
}

/// Is timestamp `a` at or after `b`, as times (whatever the precision of either)?
fn later(a: &str, b: &str) -> bool {
    crate::time::cmp_stamps(a, b).is_ge()
}

/// A field's value as the log names it: its lines without the key.
fn value_of(chunk: Option<&str>) -> String {
    match chunk {
        None => "(no value)".into(),
        Some(c) => {
            let v = c.split_once(':').map_or(c, |(_, v)| v).trim();
            if v.is_empty() {
                "(empty)".into()
            } else {
                short(v.as_bytes())
            }
        }
    }
}

/// Merges a document both sides changed. None when a version has no frontmatter (the
/// whole file is then decided by the rule).
fn merge_doc(
    tmp: &Path,
    git: &Git,
    path: &str,
    texts: &[Vec<u8>; 3],
    o: &Side,
    t: &Side,
    conflicts: &mut Vec<Conflict>,
) -> Result<Option<Vec<u8>>> {
    let strs: Vec<String> = texts
        .iter()
        .map(|b| String::from_utf8_lossy(b).into_owned())
        .collect();
    let base_split = if texts[0].is_empty() {
        None
    } else {
        match crate::doc::split::split(&strs[0]) {
            Ok(s) => Some(s),
            Err(_) => return Ok(None),
        }
    };
    let (Ok(so), Ok(st)) = (
        crate::doc::split::split(&strs[1]),
        crate::doc::split::split(&strs[2]),
    ) else {
        return Ok(None);
    };
    let (_, fb) = fields(base_split.map_or("", |s| s.frontmatter));
    let (prelude, fo) = fields(so.frontmatter);
    let (_, ft) = fields(st.frontmatter);
    let get = |fs: &[(String, String)], k: &str| {
        fs.iter().find(|(key, _)| key == k).map(|(_, v)| v.clone())
    };
    let upd_o = get(&fo, "updated_at").map(|c| stamp_text(&c).to_string());
    let upd_t = get(&ft, "updated_at").map(|c| stamp_text(&c).to_string());
    let mut keys: Vec<String> = fo.iter().map(|(k, _)| k.clone()).collect();
    for (k, _) in &ft {
        if !keys.contains(k) {
            keys.push(k.clone());
        }
    }
    let mut fm = prelude;
    for k in &keys {
        let (b, ov, tv) = (get(&fb, k), get(&fo, k), get(&ft, k));
        let value = if ov == tv || tv == b {
            ov
        } else if ov == b {
            tv
        } else if k == "rev" {
            None // set below
        } else if k == "updated_at" {
            // As times: a second-precision stamp and a millisecond one compare right.
            match (&ov, &tv) {
                (Some(a), Some(b)) if later(stamp_text(a), stamp_text(b)) => ov,
                (Some(_), Some(_)) => tv,
                _ => ov.or(tv),
            }
        } else {
            let ob = ov.clone().unwrap_or_default();
            let tb = tv.clone().unwrap_or_default();
            let (win_o, _, _) = decide_with(
                o,
                t,
                upd_o.as_deref(),
                upd_t.as_deref(),
                ob.as_bytes(),
                tb.as_bytes(),
            );
            let (kept, dropped) = if win_o { (&ov, &tv) } else { (&tv, &ov) };
            conflicts.push(Conflict {
                doc: path.to_string(),
                field: k.clone(),
                kept: value_of(kept.as_deref()),
                dropped: value_of(dropped.as_deref()),
            });
            kept.clone()
        };
        if k == "rev" {
            let r = |v: &Option<String>| {
                v.as_deref()
                    .map_or(0, |c| value_of(Some(c)).parse().unwrap_or(0))
            };
            let rev = r(&get(&fo, k)).max(r(&get(&ft, k))) + 1;
            fm.push_str(&format!("rev: {rev}\n"));
            continue;
        }
        if let Some(v) = value {
            fm.push_str(&v);
            if !v.ends_with('\n') {
                fm.push('\n');
            }
        }
    }
    let body_b = base_split.map_or("", |s| s.body);
    let body = if so.body == st.body || st.body == body_b {
        so.body.to_string()
    } else if so.body == body_b {
        st.body.to_string()
    } else {
        match merge_text(tmp, git, body_b, so.body, st.body)? {
            Some(m) => m,
            None => {
                let (win_o, _, _) = decide_with(
                    o,
                    t,
                    upd_o.as_deref(),
                    upd_t.as_deref(),
                    so.body.as_bytes(),
                    st.body.as_bytes(),
                );
                let (kept, dropped) = if win_o {
                    (so.body, st.body)
                } else {
                    (st.body, so.body)
                };
                conflicts.push(Conflict {
                    doc: path.to_string(),
                    field: "body".into(),
                    kept: short(kept.as_bytes()),
                    dropped: short(dropped.as_bytes()),
                });
                kept.to_string()
            }
        }
    };
    Ok(Some(
        format!("{}{}{}{}", so.open, fm, so.close, body).into_bytes(),
    ))
}

/// A three-way merge of three texts (see [`super::lines`]; one too large for it goes to
/// `git merge-file`): the merged text, or None when both sides changed the same lines.
fn merge_text(
    tmp: &Path,
    git: &Git,
    base: &str,
    ours: &str,
    theirs: &str,
) -> Result<Option<String>> {
    if super::lines::fits(base, ours, theirs) {
        return Ok(super::lines::merge(base, ours, theirs));
    }
    let pid = std::process::id();
    let names = ["ours", "base", "theirs"].map(|n| format!("merge-{pid}-{n}"));
    for (name, text) in names.iter().zip([ours, base, theirs]) {
        let p = tmp.join(name);
        // Scratch input for git, read at once and removed below.
        crate::file::write_in_place(&p, text.as_bytes())?;
    }
    let out = std::process::Command::new("git")
        .arg("-C")
        .arg(tmp)
        .args(["merge-file", "-p", &names[0], &names[1], &names[2]])
        .output();
    for name in &names {
        let _ = std::fs::remove_file(tmp.join(name));
    }
    let out = out.map_err(|e| Error::io(tmp, "run git in", e))?;
    match out.status.code() {
        Some(0) => Ok(Some(String::from_utf8_lossy(&out.stdout).into_owned())),
        Some(n) if n > 0 && n < 128 => Ok(None),
        _ => Err(git_error(
            git,
            "merge-file",
            &String::from_utf8_lossy(&out.stderr),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn union_keeps_each_entry_once_in_seq_order() {
        let base = b"- {seq: 1, origin: \"a\", at: \"t\", actor: \"x\", op: \"create\", doc: \"tasks/t.md\"}\n";
        let ours = [
            &base[..],
            b"- {seq: 2, origin: \"a\", at: \"t\", actor: \"x\", op: \"edit\", doc: \"tasks/t.md\"}\n",
        ]
        .concat();
        let theirs = [
            &base[..],
            b"- {seq: 2, origin: \"b\", at: \"t\", actor: \"y\", op: \"edit\", doc: \"tasks/u.md\"}\n",
            b"- {seq: 3, origin: \"b\", at: \"t\", actor: \"y\", op: \"edit\", doc: \"tasks/u.md\"}\n",
        ]
        .concat();
        let u = String::from_utf8(union(base, &ours, &theirs)).unwrap();
        let heads: Vec<String> = u
            .lines()
            .map(|l| {
                let h = log::head(l.as_bytes()).unwrap();
                format!("{}{}", h.seq, h.origin)
            })
            .collect();
        assert_eq!(
            heads,
            ["1a", "2b", "3b", "2a"],
            "the remote's log, then ours"
        );
    }

    /// `updated_at` of mixed precision (an older document's seconds, a newer write's
    /// milliseconds) compares as times: as text, `…:05Z` sorts after `…:05.120Z`.
    #[test]
    fn mixed_precision_updated_at_compares_as_times() {
        assert!(later("2026-11-27T10:00:05.120Z", "2026-11-27T10:00:05Z"));
        assert!(!later("2026-11-27T10:00:05Z", "2026-11-27T10:00:05.120Z"));
        assert!(later("2026-11-27T10:00:06Z", "2026-11-27T10:00:05.999Z"));
        assert_eq!(
            stamp_text("updated_at: \"2026-11-27T10:00:05Z\"\n"),
            "2026-11-27T10:00:05Z"
        );
        // The rule without log entries on either side: the later updated_at wins.
        let side = || Side { stamp: None };
        let (ours, kept, _) = decide_with(
            &side(),
            &side(),
            Some("2026-11-27T10:00:05Z"),
            Some("2026-11-27T10:00:05.120Z"),
            b"a",
            b"b",
        );
        assert!(!ours, "theirs is 120ms later");
        assert_eq!(kept, b"b");
        let (ours, _, _) = decide_with(
            &side(),
            &side(),
            Some("2026-11-27T10:00:05.500Z"),
            Some("2026-11-27T10:00:05Z"),
            b"a",
            b"b",
        );
        assert!(ours);
    }

    #[test]
    fn fields_keep_their_continuation_lines() {
        let (pre, f) = fields("# c\nid: t\ntags:\n- a\n- b\nnote: |\n  x\n");
        assert_eq!(pre, "# c\n");
        assert_eq!(
            f,
            vec![
                ("id".to_string(), "id: t\n".to_string()),
                ("tags".to_string(), "tags:\n- a\n- b\n".to_string()),
                ("note".to_string(), "note: |\n  x\n".to_string()),
            ]
        );
    }
}
