//! THE write protocol (DESIGN §5): every change tavern makes to the board goes through
//! [`change`], whatever it changes (documents, agent cards, `control/PAUSE`, archive moves):
//!
//! 1. take the change's locks, in sorted order;
//! 2. complete any interrupted change that held one of them (its intent is still there);
//! 3. let the caller re-read and check its preconditions under the locks and say what to
//!    change (nothing is a valid answer);
//! 4. write the intent (`.state/intents/`): the log entry and the steps, before anything
//!    else, so that whatever a kill leaves behind is named somewhere;
//! 5. write each new content to its temp file (`.NAME.tmp` beside the target), fsync;
//! 6. under the log lock: make the steps visible (rename, link, unlink), fsync the
//!    directories, append the log entry (its `seq` and `at` are taken there, so the log's
//!    order is the order in which the changes became visible);
//! 7. remove the intent, release the locks.
//!
//! A process killed anywhere leaves an intent; the next tavern command that touches the
//! board completes it ([`recover`]): a change with a step visible is finished and logged
//! (once: an entry already appended is found in the log), one with nothing visible is
//! dropped, and its temp files go either way.

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::board::Board;
use crate::error::{Error, Result};
use crate::file;
use crate::layout;
use crate::log::{self, Entry};

use super::Lock;

/// One file operation of a change. Paths are relative to the board root.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Step {
    /// Replace `path` (or create it) with `content`: temp file, fsync, rename over.
    Put {
        path: String,
        #[serde(skip)]
        content: Vec<u8>,
        /// Hashes of the content before (None: no file) and after, for recovery.
        before: Option<u64>,
        after: u64,
    },
    /// Create `path` with `content`, never over an existing file: temp file, fsync, link.
    Create {
        path: String,
        #[serde(skip)]
        content: Vec<u8>,
        after: u64,
    },
    /// Move a file from `from` to `to`, never over an existing file: link, unlink.
    Move { from: String, to: String },
    /// Remove `path`: a file, or an empty directory.
    Remove { path: String },
}

impl Step {
    /// Replaces the file at `path` (board-relative) with `content`; `before` is what the
    /// caller read under the lock (None if there was no file).
    pub fn put(path: impl Into<String>, before: Option<&[u8]>, content: Vec<u8>) -> Step {
        Step::Put {
            path: path.into(),
            before: before.map(hash),
            after: hash(&content),
            content,
        }
    }

    pub fn create(path: impl Into<String>, content: Vec<u8>) -> Step {
        Step::Create {
            path: path.into(),
            after: hash(&content),
            content,
        }
    }

    pub fn moved(from: impl Into<String>, to: impl Into<String>) -> Step {
        Step::Move {
            from: from.into(),
            to: to.into(),
        }
    }

    pub fn remove(path: impl Into<String>) -> Step {
        Step::Remove { path: path.into() }
    }

    /// The file whose temp this step writes, if it writes one.
    fn temp_target(&self) -> Option<&str> {
        match self {
            Step::Put { path, .. } | Step::Create { path, .. } => Some(path),
            Step::Move { .. } | Step::Remove { .. } => None,
        }
    }
}

/// What a change does: its steps, in order, and the log entry that tells it (`seq` and
/// `at` are set when it is appended).
#[derive(Debug)]
pub struct Write {
    pub steps: Vec<Step>,
    pub entry: Entry,
}

/// The intent file: everything needed to finish or drop a change after a kill.
#[derive(Debug, Serialize, Deserialize)]
struct Intent {
    /// When it was written: the change's entry, if appended, is not older.
    written_at: String,
    locks: Vec<String>,
    steps: Vec<Step>,
    entry: Entry,
}

/// Why a change failed because the document moved on: one message for every `if_rev`.
pub fn check_rev(rel: &str, rev: u64, want: Option<u64>) -> Result<()> {
    match want {
        Some(want) if want != rev => Err(Error::conflict(
            rel,
            format!("rev is {rev}, not {want}: it changed since you read it; re-read and retry"),
        )),
        _ => Ok(()),
    }
}

/// Makes one change by the protocol. `decide` runs under the locks: it re-reads what it
/// needs, checks its preconditions, and returns its result with the change to make (None
/// for nothing to do). Returns that result and the entry as logged.
pub fn change<T>(
    board: &Board,
    locks: &[String],
    decide: impl FnOnce() -> Result<(T, Option<Write>)>,
) -> Result<(T, Option<Entry>)> {
    let held = hold(board, locks)?;
    let (value, write) = decide()?;
    let Some(write) = write else {
        return Ok((value, None));
    };
    let entry = held.write(board, write)?;
    Ok((value, Some(entry)))
}

/// The locks of one change, held (steps 1 and 2 of the protocol): for a caller whose
/// decision has effects of its own between reading and writing (a claim confirmed by a
/// remote), and which must act on the write's result. Released when dropped.
#[derive(Debug)]
pub struct Held {
    locks: Vec<String>,
    _held: Vec<Lock>,
}

/// Takes `locks` in sorted order and completes any interrupted change that held one.
pub fn hold(board: &Board, locks: &[String]) -> Result<Held> {
    let locks: Vec<String> = locks
        .iter()
        .cloned()
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    let mut held = Vec::with_capacity(locks.len());
    for name in &locks {
        held.push(super::lock(board, name)?);
    }
    recover_held(board, &locks)?;
    Ok(Held { locks, _held: held })
}

impl Held {
    /// Steps 4-7 of the protocol: makes `write` visible and logs it. The locks go when
    /// this is dropped.
    pub fn write(&self, board: &Board, write: Write) -> Result<Entry> {
        apply(board, &self.locks, write)
    }
}

fn intent_path(board: &Board, locks: &[String]) -> PathBuf {
    layout::intents_dir(&board.root).join(format!("{}.json", locks.join("+")))
}

/// Steps 4-7 of the protocol, with the locks held.
fn apply(board: &Board, locks: &[String], write: Write) -> Result<Entry> {
    let Write { steps, entry } = write;
    let intent = Intent {
        written_at: crate::time::stamp_millis(crate::time::now()),
        locks: locks.to_vec(),
        steps,
        entry,
    };
    let ipath = intent_path(board, locks);
    write_intent(&ipath, &intent)?;
    let abs = |rel: &str| board.root.join(rel);
    // The temps, complete and fsynced before anything becomes visible.
    for step in &intent.steps {
        if let Step::Put { path, content, .. } | Step::Create { path, content, .. } = step {
            let target = abs(path);
            if let Some(dir) = target.parent() {
                fs::create_dir_all(dir).map_err(|e| Error::io(dir, "create directory", e))?;
            }
            if let Err(e) = write_temp(&target, content) {
                drop_change(board, &ipath, &intent);
                return Err(e);
            }
        }
    }
    // The log's append below is synced; where the filesystem journals metadata in order
    // that sync also makes the steps' renames, links and unlinks durable, and syncing
    // their directories first would be a second disk flush that protects nothing.
    let sync_dirs = !file::journal_orders_metadata(&board.root);
    let log = log::Appender::lock(board)?;
    for (i, step) in intent.steps.iter().enumerate() {
        if let Err(e) = perform(board, step, sync_dirs) {
            if i == 0 {
                // Nothing is visible yet: the change did not happen.
                drop_change(board, &ipath, &intent);
            }
            // Else the intent stays, and the next command finishes the change.
            return Err(e);
        }
    }
    let entry = log.append(intent.entry.clone())?;
    drop(log);
    let _ = fs::remove_file(&ipath);
    Ok(entry)
}

/// Forgets a change none of whose steps became visible: its temps and its intent go.
fn drop_change(board: &Board, ipath: &Path, intent: &Intent) {
    for step in &intent.steps {
        if let Some(target) = step.temp_target() {
            let _ = fs::remove_file(layout::temp_for(&board.root.join(target)));
        }
    }
    let _ = fs::remove_file(ipath);
}

fn write_intent(path: &Path, intent: &Intent) -> Result<()> {
    let text = serde_json::to_vec(intent).map_err(|e| Error::io(path, "write", e.into()))?;
    // In place and not synced. A torn intent means the change did not begin (nothing else
    // is written before it is complete), which `complete` knows; a kill is what recovery
    // is for, and the page cache keeps the intent through one. Syncing it would add a disk
    // flush to every change, for the one case of a power loss between a step becoming
    // visible and its log entry being synced (the change then stands, unlogged).
    let write = || file::write_in_place(path, &text);
    if write().is_err() {
        let dir = path.parent().unwrap_or(path);
        fs::create_dir_all(dir).map_err(|e| Error::io(dir, "create directory", e))?;
        write()?;
    }
    Ok(())
}

/// Writes the temp of `target`, synced (a leftover one, from a kill, is replaced).
fn write_temp(target: &Path, content: &[u8]) -> Result<()> {
    file::fill_temp(&layout::temp_for(target), content)
}

fn parent(p: &Path) -> &Path {
    p.parent().unwrap_or(Path::new("."))
}

/// Makes one step visible, and durable if `sync_dirs` (else the caller's synced log
/// append, on a filesystem that orders metadata, makes it so).
fn perform(board: &Board, step: &Step, sync_dirs: bool) -> Result<()> {
    let abs = |rel: &str| board.root.join(rel);
    match step {
        Step::Put { path, .. } => {
            let target = abs(path);
            file::rename_into_place(&layout::temp_for(&target), &target, sync_dirs)
                .map_err(|e| Error::io(&target, "replace", e))?;
        }
        Step::Create { path, .. } => {
            let target = abs(path);
            match file::link_into_place(&layout::temp_for(&target), &target, sync_dirs) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                    return Err(Error::conflict(
                        board.rel(&target),
                        "was created by someone else meanwhile; nothing written",
                    ));
                }
                Err(e) => return Err(Error::io(&target, "create", e)),
            }
        }
        Step::Move { from, to } => {
            let (from, to) = (abs(from), abs(to));
            if let Some(dir) = to.parent() {
                fs::create_dir_all(dir).map_err(|e| Error::io(dir, "create directory", e))?;
            }
            fs::hard_link(&from, &to).map_err(|e| Error::io(&to, "move to", e))?;
            fs::remove_file(&from).map_err(|e| Error::io(&from, "move", e))?;
            if sync_dirs {
                file::sync_dir(parent(&to));
                file::sync_dir(parent(&from));
            }
        }
        Step::Remove { path } => {
            let target = abs(path);
            remove_any(&target)?;
            if sync_dirs {
                file::sync_dir(parent(&target));
            }
        }
    }
    Ok(())
}

/// Removes a file, or an empty directory; a missing one is already removed.
fn remove_any(path: &Path) -> Result<()> {
    let result = match fs::symlink_metadata(path) {
        Ok(m) if m.is_dir() => fs::remove_dir(path),
        Ok(_) => fs::remove_file(path),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(e),
    };
    result.map_err(|e| Error::io(path, "remove", e))
}

/// FNV-1a: a stable hash of a file's content, to tell its versions apart in recovery.
fn hash(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in bytes {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

/// The hash of what is at `path` now: None if there is no file (or not a regular one).
fn current_hash(path: &Path) -> Option<u64> {
    let meta = fs::symlink_metadata(path).ok()?;
    if !meta.is_file() {
        return None;
    }
    fs::read(path).ok().map(|b| hash(&b))
}

/// Where a step stands after a kill.
#[derive(Debug, PartialEq)]
enum Stand {
    /// Visible: the change of this step happened.
    Done,
    /// Visible in part (a move linked to its new name, not yet unlinked from the old).
    Begun,
    /// Not visible, and can still be made.
    Pending,
    /// Neither: someone else changed the file meanwhile.
    Lost,
}

fn stand(board: &Board, step: &Step) -> Stand {
    let abs = |rel: &str| board.root.join(rel);
    match step {
        Step::Put {
            path,
            before,
            after,
            ..
        } => {
            let now = current_hash(&abs(path));
            if now == Some(*after) {
                Stand::Done
            } else if now == *before
                || (before.is_none() && fs::symlink_metadata(abs(path)).is_ok_and(|m| m.is_dir()))
            {
                Stand::Pending
            } else {
                Stand::Lost
            }
        }
        Step::Create { path, after, .. } => match current_hash(&abs(path)) {
            Some(h) if h == *after => Stand::Done,
            Some(_) => Stand::Lost,
            None => Stand::Pending,
        },
        Step::Move { from, to } => {
            let (from, to) = (abs(from), abs(to));
            match (
                fs::symlink_metadata(&from).is_ok(),
                fs::symlink_metadata(&to).is_ok(),
            ) {
                (false, true) => Stand::Done,
                (true, false) => Stand::Pending,
                // Linked, not yet unlinked: the same file under both names.
                (true, true) if same_file(&from, &to) => Stand::Begun,
                _ => Stand::Lost,
            }
        }
        Step::Remove { path } => {
            if fs::symlink_metadata(abs(path)).is_err() {
                Stand::Done
            } else {
                Stand::Pending
            }
        }
    }
}

fn same_file(a: &Path, b: &Path) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        match (fs::symlink_metadata(a), fs::symlink_metadata(b)) {
            (Ok(x), Ok(y)) => x.dev() == y.dev() && x.ino() == y.ino(),
            _ => false,
        }
    }
    #[cfg(not(unix))]
    {
        let _ = (a, b);
        false
    }
}

/// Finishes a pending step after a kill. A temp that is not the complete new content
/// (killed while writing it) cannot be: then nothing is done.
fn finish(board: &Board, step: &Step) -> Result<bool> {
    match step {
        Step::Put { path, after, .. } | Step::Create { path, after, .. } => {
            let tmp = layout::temp_for(&board.root.join(path));
            if current_hash(&tmp) != Some(*after) {
                return Ok(false);
            }
        }
        Step::Move { from, to } => {
            let (from, to) = (board.root.join(from), board.root.join(to));
            if same_file(&from, &to) {
                fs::remove_file(&from).map_err(|e| Error::io(&from, "move", e))?;
                file::sync_dir(parent(&from));
                return Ok(true);
            }
        }
        Step::Remove { .. } => {}
    }
    // Recovery may find the entry logged already and append nothing: no synced append
    // follows, so the directories are synced here.
    perform(board, step, true).map(|()| true)
}

/// What recovery did with one interrupted change.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Recovered {
    /// The document (board-relative) the change was about.
    pub doc: String,
    /// The seq of the entry it was logged under now; None if it had been logged already
    /// or did not happen (nothing of it was visible).
    pub logged: Option<u64>,
}

/// Completes every interrupted change: those whose locks nobody holds (a live writer's
/// intent is its own business). Called by every command before it uses the board; never
/// waits for a lock.
pub fn recover(board: &Board) -> Result<Vec<Recovered>> {
    let mut out = Vec::new();
    for (path, locks) in intents(board) {
        let Some(_held) = try_lock_all(board, &locks)? else {
            continue;
        };
        if let Some(r) = complete(board, &path)? {
            out.push(r);
        }
    }
    Ok(out)
}

/// Takes every lock of `names` that nobody holds (this process included, through another
/// handle), never waiting: None, with none of them held, as soon as one is taken.
fn try_lock_all<'a>(
    board: &Board,
    names: impl IntoIterator<Item = &'a String>,
) -> Result<Option<Vec<Lock>>> {
    let mut held = Vec::new();
    for name in names {
        match super::try_lock(board, name)? {
            Some(l) => held.push(l),
            None => return Ok(None),
        }
    }
    Ok(Some(held))
}

/// The intents on disk, each with the locks its name says it holds.
fn intents(board: &Board) -> Vec<(PathBuf, Vec<String>)> {
    let Ok(entries) = fs::read_dir(layout::intents_dir(&board.root)) else {
        return Vec::new();
    };
    let mut out: Vec<(PathBuf, Vec<String>)> = entries
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().into_string().ok()?;
            let stem = name.strip_suffix(".json")?;
            Some((e.path(), stem.split('+').map(str::to_string).collect()))
        })
        .collect();
    out.sort();
    out
}

/// Completes the interrupted changes that hold any of `held` (locks the caller holds):
/// their other locks are tried, never waited for. True if there was one.
pub fn recover_held(board: &Board, held: &[String]) -> Result<bool> {
    let mut any = false;
    for (path, locks) in intents(board) {
        if !locks.iter().any(|l| held.contains(l)) {
            continue;
        }
        let others = locks.iter().filter(|l| !held.contains(l));
        let Some(_more) = try_lock_all(board, others)? else {
            continue;
        };
        any |= complete(board, &path)?.is_some();
    }
    Ok(any)
}

/// Completes the intent at `path`, its locks held.
fn complete(board: &Board, path: &Path) -> Result<Option<Recovered>> {
    let text = match fs::read(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(Error::io(path, "read", e)),
    };
    let Ok(intent) = serde_json::from_slice::<Intent>(&text) else {
        // Killed while writing the intent: nothing else was written yet.
        let _ = fs::remove_file(path);
        return Ok(None);
    };
    let stands: Vec<Stand> = intent.steps.iter().map(|s| stand(board, s)).collect();
    let visible = stands
        .iter()
        .any(|s| matches!(s, Stand::Done | Stand::Begun));
    let mut recovered = Recovered {
        doc: intent.entry.doc.clone(),
        logged: None,
    };
    if visible {
        // Finish what the killed process began, in order.
        for (step, st) in intent.steps.iter().zip(&stands) {
            if matches!(st, Stand::Pending | Stand::Begun) {
                finish(board, step)?;
            }
        }
        if !already_logged(board, &intent)? {
            let mut entry = intent.entry.clone();
            let note = format!(
                "{}: the write that made this change was interrupted before logging it",
                log::LOGGED_LATE
            );
            entry.note = Some(match entry.note.take() {
                Some(n) => format!("{n} ({note})"),
                None => note,
            });
            let entry = log::append(board, entry)?;
            recovered.logged = Some(entry.seq);
        }
    }
    drop_change(board, path, &intent);
    Ok(Some(recovered))
}

/// Was the intent's entry appended before the kill? Looked for among the entries about
/// its document since the intent was written, by what it says (not by its diff: a kill
/// in the middle of the append may have left it torn short, as the next append finds).
fn already_logged(board: &Board, intent: &Intent) -> Result<bool> {
    let from = crate::time::parse_time(&intent.written_at, chrono::Utc::now())
        .map(|t| log::offset_near_time(board, t))
        .transpose()?
        .unwrap_or(0);
    let (entries, _, _) = log::read_matching(board, from, Some(&intent.entry.doc))?;
    let want = &intent.entry;
    let same = |e: &Entry| {
        e.actor == want.actor
            && e.op == want.op
            && e.doc == want.doc
            && e.rev == want.rev
            && e.transition == want.transition
            && e.from == want.from
            && e.to == want.to
            && (want.rev.is_some() || e.note == want.note)
    };
    Ok(entries
        .iter()
        .any(|e| e.at.as_str() >= intent.written_at.as_str() && same(e)))
}

/// An interrupted change as `check` reports it (nothing is changed).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Leftover {
    /// The intent file, board-relative.
    pub intent: String,
    pub doc: String,
    /// Whether any of its steps is visible (a change on disk that the log may lack).
    pub visible: bool,
}

/// The interrupted changes (intents whose locks nobody holds), without touching them.
pub fn leftovers(board: &Board) -> Result<Vec<Leftover>> {
    let mut out = Vec::new();
    for (path, locks) in intents(board) {
        let Some(_held) = try_lock_all(board, &locks)? else {
            continue;
        };
        let intent = fs::read(&path)
            .ok()
            .and_then(|t| serde_json::from_slice::<Intent>(&t).ok());
        let (doc, visible) = match &intent {
            Some(i) => (
                i.entry.doc.clone(),
                i.steps
                    .iter()
                    .any(|s| matches!(stand(board, s), Stand::Done | Stand::Begun)),
            ),
            None => (String::new(), false),
        };
        out.push(Leftover {
            intent: board.rel(&path),
            doc,
            visible,
        });
    }
    Ok(out)
}

/// Temp files nobody is writing (their target's lock is free) in the directories tavern
/// writes, board-relative: what older versions left after a kill, or a hand-made one.
/// This version's are named by an intent and removed with it.
pub fn stale_temps(board: &Board) -> Result<Vec<String>> {
    // Those an intent names go with it.
    let named: BTreeSet<PathBuf> = intents(board)
        .iter()
        .filter_map(|(p, _)| fs::read(p).ok())
        .filter_map(|t| serde_json::from_slice::<Intent>(&t).ok())
        .flat_map(|i| i.steps)
        .filter_map(|s| {
            s.temp_target()
                .map(|t| layout::temp_for(&board.root.join(t)))
        })
        .collect();
    let mut out = Vec::new();
    for dir in layout::temp_dirs(&board.root) {
        let rel_dir = board.rel(&dir);
        let Ok(entries) = fs::read_dir(&dir) else {
            continue;
        };
        let mut names: Vec<String> = entries
            .flatten()
            .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
            .filter_map(|e| e.file_name().into_string().ok())
            .filter(|n| layout::is_temp(n))
            .collect();
        names.sort();
        for name in names {
            let free = try_lock_all(board, &layout::temp_lock(&rel_dir, &name))?.is_some();
            if free && !named.contains(&dir.join(&name)) {
                out.push(format!("{rel_dir}/{name}"));
            }
        }
    }
    Ok(out)
}

/// Removes the temp files nobody is writing (see [`stale_temps`]), each under its
/// target's lock; returns them.
pub fn remove_stale_temps(board: &Board) -> Result<Vec<String>> {
    let mut removed = Vec::new();
    for rel in stale_temps(board)? {
        let path = board.root.join(&rel);
        let (dir, name) = rel.rsplit_once('/').unwrap_or(("", rel.as_str()));
        let Some(_held) = try_lock_all(board, &layout::temp_lock(dir, name))? else {
            continue; // A writer started meanwhile: its temp is live.
        };
        match fs::remove_file(&path) {
            Ok(()) => removed.push(rel),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(Error::io(&path, "remove", e)),
        }
    }
    Ok(removed)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::doc::Region;

    struct Fixture {
        _dir: tempfile::TempDir,
        board: Board,
    }

    fn fixture() -> Fixture {
        let dir = tempfile::tempdir().unwrap();
        crate::board::init(dir.path()).unwrap();
        let board = Board::open(&dir.path().join(".tavern")).unwrap();
        Fixture { _dir: dir, board }
    }

    impl Fixture {
        fn read(&self, rel: &str) -> Option<String> {
            fs::read_to_string(self.board.root.join(rel)).ok()
        }

        fn put_file(&self, rel: &str, text: &str) {
            let p = self.board.root.join(rel);
            fs::create_dir_all(p.parent().unwrap()).unwrap();
            fs::write(p, text).unwrap();
        }

        fn log(&self) -> Vec<Entry> {
            log::read_from(&self.board, 0).unwrap().0
        }

        /// Every file under the board that a change leaves behind only when it is
        /// interrupted: intents and temps.
        fn leftovers_on_disk(&self) -> Vec<String> {
            let mut out: Vec<String> = walkdir::WalkDir::new(&self.board.root)
                .into_iter()
                .flatten()
                .filter(|e| e.file_type().is_file())
                .map(|e| self.board.rel(e.path()))
                .filter(|rel| {
                    rel.starts_with(".state/intents/")
                        || rel.rsplit('/').next().is_some_and(layout::is_temp)
                })
                .collect();
            out.sort();
            out
        }

        /// Begins a change as `apply` does and stops as a kill would: its intent and temps
        /// written, the first `visible` steps made visible, nothing logged.
        fn interrupted(&self, locks: &[String], steps: Vec<Step>, visible: usize) {
            let intent = Intent {
                written_at: crate::time::stamp_millis(crate::time::now()),
                locks: locks.to_vec(),
                steps,
                entry: entry("tasks/a.md"),
            };
            write_intent(&intent_path(&self.board, locks), &intent).unwrap();
            for step in &intent.steps {
                if let Step::Put { path, content, .. } | Step::Create { path, content, .. } = step {
                    write_temp(&self.board.root.join(path), content).unwrap();
                }
            }
            for step in &intent.steps[..visible] {
                perform(&self.board, step, true).unwrap();
            }
        }
    }

    fn entry(doc: &str) -> Entry {
        Entry {
            at: crate::time::stamp_millis(crate::time::now()),
            actor: "alice".into(),
            op: "edit".into(),
            doc: doc.into(),
            ..Entry::default()
        }
    }

    fn lock_of(id: &str) -> String {
        layout::doc_lock(Region::Tasks, id)
    }

    fn write_of(steps: Vec<Step>) -> Option<Write> {
        Some(Write {
            steps,
            entry: entry("tasks/a.md"),
        })
    }

    #[test]
    fn a_change_makes_its_steps_visible_and_logs_one_entry() {
        let f = fixture();
        f.put_file("tasks/old.md", "old\n");
        f.put_file("tasks/gone.md", "gone\n");
        let steps = vec![
            Step::put("tasks/a.md", None, b"a\n".to_vec()),
            Step::create("tasks/b.md", b"b\n".to_vec()),
            Step::moved("tasks/old.md", "archive/tasks/old.md"),
            Step::remove("tasks/gone.md"),
        ];
        let locks = [lock_of("a"), lock_of("b"), lock_of("a")];
        let (value, logged) = change(&f.board, &locks, || Ok((7, write_of(steps)))).unwrap();
        assert_eq!(value, 7);
        let logged = logged.unwrap();
        assert_eq!((logged.seq, logged.op.as_str()), (1, "edit"));
        assert_eq!(f.read("tasks/a.md").as_deref(), Some("a\n"));
        assert_eq!(f.read("tasks/b.md").as_deref(), Some("b\n"));
        assert_eq!(f.read("archive/tasks/old.md").as_deref(), Some("old\n"));
        assert_eq!(f.read("tasks/old.md"), None);
        assert_eq!(f.read("tasks/gone.md"), None);
        assert_eq!(f.log().len(), 1);
        assert!(
            f.leftovers_on_disk().is_empty(),
            "{:?}",
            f.leftovers_on_disk()
        );
    }

    #[test]
    fn nothing_to_do_or_a_refusal_writes_and_logs_nothing() {
        let f = fixture();
        let (v, logged) = change(&f.board, &[lock_of("a")], || Ok(("nothing", None))).unwrap();
        assert_eq!((v, logged.is_none()), ("nothing", true));
        let refused: Result<((), Option<Entry>)> = change(&f.board, &[lock_of("a")], || {
            Err(Error::conflict("tasks/a.md", "no"))
        });
        assert!(matches!(refused, Err(Error::Conflict { .. })));
        assert!(f.log().is_empty());
        assert!(f.leftovers_on_disk().is_empty());
        assert_eq!(f.read("tasks/a.md"), None);
    }

    #[test]
    fn a_create_over_a_file_someone_made_is_a_conflict_and_changes_nothing() {
        let f = fixture();
        f.put_file("tasks/a.md", "theirs\n");
        let steps = vec![Step::create("tasks/a.md", b"ours\n".to_vec())];
        let e = change(&f.board, &[lock_of("a")], || Ok(((), write_of(steps)))).unwrap_err();
        assert!(e.to_string().contains("created by someone else"), "{e}");
        assert_eq!(f.read("tasks/a.md").as_deref(), Some("theirs\n"));
        assert!(f.log().is_empty());
        assert!(
            f.leftovers_on_disk().is_empty(),
            "{:?}",
            f.leftovers_on_disk()
        );
    }

    #[test]
    fn a_change_killed_after_its_first_step_is_finished_and_logged_late() {
        let f = fixture();
        f.put_file("tasks/b.md", "b0\n");
        let steps = vec![
            Step::put("tasks/a.md", None, b"a1\n".to_vec()),
            Step::put("tasks/b.md", Some(b"b0\n"), b"b1\n".to_vec()),
        ];
        let locks = [lock_of("a"), lock_of("b")];
        f.interrupted(&locks, steps, 1);
        let left = leftovers(&f.board).unwrap();
        assert_eq!(left.len(), 1);
        assert!(left[0].visible);
        assert_eq!(left[0].doc, "tasks/a.md");
        // Reporting changed nothing.
        assert_eq!(f.read("tasks/b.md").as_deref(), Some("b0\n"));

        let recovered = recover(&f.board).unwrap();
        assert_eq!(
            recovered,
            [Recovered {
                doc: "tasks/a.md".into(),
                logged: Some(1)
            }]
        );
        assert_eq!(f.read("tasks/a.md").as_deref(), Some("a1\n"));
        assert_eq!(f.read("tasks/b.md").as_deref(), Some("b1\n"));
        let log = f.log();
        assert_eq!(log.len(), 1);
        assert!(log[0].note.as_deref().unwrap().contains(log::LOGGED_LATE));
        assert!(
            f.leftovers_on_disk().is_empty(),
            "{:?}",
            f.leftovers_on_disk()
        );
        // Once.
        assert!(recover(&f.board).unwrap().is_empty());
        assert_eq!(f.log().len(), 1);
    }

    #[test]
    fn a_change_killed_before_anything_was_visible_is_dropped() {
        let f = fixture();
        f.put_file("tasks/a.md", "a0\n");
        let steps = vec![Step::put("tasks/a.md", Some(b"a0\n"), b"a1\n".to_vec())];
        f.interrupted(&[lock_of("a")], steps, 0);
        assert!(!leftovers(&f.board).unwrap()[0].visible);
        let recovered = recover(&f.board).unwrap();
        assert_eq!(recovered[0].logged, None);
        assert_eq!(f.read("tasks/a.md").as_deref(), Some("a0\n"));
        assert!(f.log().is_empty());
        assert!(
            f.leftovers_on_disk().is_empty(),
            "{:?}",
            f.leftovers_on_disk()
        );
    }

    #[test]
    fn a_change_killed_after_its_entry_was_appended_is_not_logged_twice() {
        let f = fixture();
        let steps = vec![Step::put("tasks/a.md", None, b"a1\n".to_vec())];
        f.interrupted(&[lock_of("a")], steps, 1);
        log::append(&f.board, entry("tasks/a.md")).unwrap();
        assert_eq!(recover(&f.board).unwrap()[0].logged, None);
        assert_eq!(f.log().len(), 1);
        assert!(f.leftovers_on_disk().is_empty());
    }

    #[test]
    fn a_move_killed_between_link_and_unlink_is_finished() {
        let f = fixture();
        f.put_file("tasks/a.md", "a\n");
        let step = Step::moved("tasks/a.md", "archive/tasks/a.md");
        fs::create_dir_all(f.board.root.join("archive/tasks")).unwrap();
        fs::hard_link(
            f.board.root.join("tasks/a.md"),
            f.board.root.join("archive/tasks/a.md"),
        )
        .unwrap();
        assert_eq!(stand(&f.board, &step), Stand::Begun);
        f.interrupted(&[lock_of("a")], vec![step.clone()], 0);
        assert_eq!(recover(&f.board).unwrap()[0].logged, Some(1));
        assert_eq!(stand(&f.board, &step), Stand::Done);
        assert_eq!(f.read("tasks/a.md"), None);
        assert_eq!(f.read("archive/tasks/a.md").as_deref(), Some("a\n"));
    }

    #[test]
    fn where_a_step_stands() {
        let f = fixture();
        let put = Step::put("tasks/a.md", Some(b"a0\n"), b"a1\n".to_vec());
        f.put_file("tasks/a.md", "a0\n");
        assert_eq!(stand(&f.board, &put), Stand::Pending);
        f.put_file("tasks/a.md", "a1\n");
        assert_eq!(stand(&f.board, &put), Stand::Done);
        f.put_file("tasks/a.md", "someone else's\n");
        assert_eq!(stand(&f.board, &put), Stand::Lost);

        let create = Step::create("tasks/b.md", b"b\n".to_vec());
        assert_eq!(stand(&f.board, &create), Stand::Pending);
        f.put_file("tasks/b.md", "other\n");
        assert_eq!(stand(&f.board, &create), Stand::Lost);

        let mv = Step::moved("tasks/b.md", "archive/tasks/b.md");
        assert_eq!(stand(&f.board, &mv), Stand::Pending);
        f.put_file("archive/tasks/b.md", "a copy, not the same file\n");
        assert_eq!(stand(&f.board, &mv), Stand::Lost);
        fs::remove_file(f.board.root.join("tasks/b.md")).unwrap();
        assert_eq!(stand(&f.board, &mv), Stand::Done);

        let rm = Step::remove("tasks/a.md");
        assert_eq!(stand(&f.board, &rm), Stand::Pending);
        fs::remove_file(f.board.root.join("tasks/a.md")).unwrap();
        assert_eq!(stand(&f.board, &rm), Stand::Done);
    }

    #[test]
    fn a_torn_temp_is_not_made_visible() {
        let f = fixture();
        f.put_file("tasks/a.md", "a0\n");
        let put = Step::put("tasks/a.md", Some(b"a0\n"), b"a1\n".to_vec());
        f.put_file("tasks/.a.md.tmp", "a");
        assert!(!finish(&f.board, &put).unwrap());
        assert_eq!(f.read("tasks/a.md").as_deref(), Some("a0\n"));
    }

    #[test]
    fn a_torn_intent_is_a_change_that_never_began() {
        let f = fixture();
        f.put_file(".state/intents/tasks.a.lock.json", "{\"written_at\": \"20");
        assert!(recover(&f.board).unwrap().is_empty());
        assert!(f.leftovers_on_disk().is_empty());
    }

    #[test]
    fn an_intent_whose_lock_is_held_is_left_to_its_writer() {
        let f = fixture();
        let steps = vec![Step::put("tasks/a.md", None, b"a1\n".to_vec())];
        f.interrupted(&[lock_of("a"), lock_of("b")], steps, 1);
        let held = super::super::lock(&f.board, &lock_of("b")).unwrap();
        assert!(recover(&f.board).unwrap().is_empty());
        assert!(leftovers(&f.board).unwrap().is_empty());
        // One who holds a lock it names completes it, taking the other locks if free.
        assert!(!recover_held(&f.board, &[lock_of("c")]).unwrap());
        assert!(!recover_held(&f.board, &[lock_of("a")]).unwrap());
        assert!(recover_held(&f.board, &[lock_of("b")]).unwrap());
        drop(held);
        assert_eq!(f.log().len(), 1);
        assert!(f.leftovers_on_disk().is_empty());
    }

    #[test]
    fn temps_nobody_writes_are_stale_and_swept() {
        let f = fixture();
        f.put_file("tasks/.a.md.tmp", "left by a kill");
        f.put_file("tasks/.b.md.123.4.tmp", "an older version's");
        f.put_file("tasks/.c.md.tmp", "being written");
        let writer = super::super::lock(&f.board, &lock_of("c")).unwrap();
        // A temp an intent names goes with the intent, not as stale.
        f.interrupted(
            &[lock_of("d")],
            vec![Step::put("tasks/d.md", None, b"d\n".to_vec())],
            0,
        );
        assert_eq!(
            stale_temps(&f.board).unwrap(),
            ["tasks/.a.md.tmp", "tasks/.b.md.123.4.tmp"]
        );
        assert_eq!(
            remove_stale_temps(&f.board).unwrap(),
            ["tasks/.a.md.tmp", "tasks/.b.md.123.4.tmp"]
        );
        assert_eq!(f.read("tasks/.c.md.tmp").as_deref(), Some("being written"));
        assert!(f.read("tasks/.d.md.tmp").is_some());
        drop(writer);
        assert_eq!(stale_temps(&f.board).unwrap(), ["tasks/.c.md.tmp"]);
    }

    #[test]
    fn a_rev_other_than_the_one_read_is_a_conflict() {
        assert!(check_rev("tasks/a.md", 3, None).is_ok());
        assert!(check_rev("tasks/a.md", 3, Some(3)).is_ok());
        let e = check_rev("tasks/a.md", 3, Some(2)).unwrap_err();
        assert!(matches!(e, Error::Conflict { .. }));
        assert!(e.to_string().contains("rev is 3, not 2"), "{e}");
    }
}
