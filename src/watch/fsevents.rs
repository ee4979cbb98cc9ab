//! File-system events, as hints. The native watcher (inotify, FSEvents, …) says roughly
//! where to look; what changed is decided by comparing with the snapshot, so lost, merged
//! or repeated events cost a rescan, never a wrong answer.
//!
//! Events reach the main loop through a channel. The watcher's callback drops events when
//! too many wait (a burst the loop has not caught up with) and raises a flag instead; the
//! loop then rescans everything, as it does when the kernel's own queue overflows.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc::Sender;

use notify::event::{AccessKind, AccessMode, EventKind};
use notify::{RecursiveMode, Watcher};

use super::areas;
use crate::board::Board;

/// How many events may wait in the channel before the callback starts dropping them.
pub const CHANNEL_CAPACITY: usize = 8192;

/// What the watcher threads send the main loop.
pub enum Msg {
    /// Paths something happened to (absolute).
    Paths(Vec<PathBuf>),
    /// Everything must be rescanned (the kernel's queue overflowed).
    Rescan,
    /// The native watcher failed (for instance, the inotify watch limit was reached).
    Failed(notify::Error),
    /// An activation's command ended.
    Exited {
        id: u64,
        status: std::io::Result<std::process::ExitStatus>,
    },
    /// SIGINT or SIGTERM.
    Signal,
}

/// Shared between the watcher's callback and the main loop.
#[derive(Clone, Default)]
pub struct Backlog {
    waiting: Arc<AtomicUsize>,
    overflowed: Arc<AtomicBool>,
}

impl Backlog {
    /// The loop took one path message off the channel.
    pub fn taken(&self) {
        self.waiting.fetch_sub(1, Ordering::Relaxed);
    }

    /// Did the callback drop events since the last call?
    pub fn take_overflow(&self) -> bool {
        self.overflowed.swap(false, Ordering::Relaxed)
    }
}

/// Events that can mean a change of content or of the set of files. Opens and reads (our
/// own included) are not: without this filter, reading a file would trigger a rescan.
fn relevant(kind: &EventKind) -> bool {
    match kind {
        EventKind::Access(AccessKind::Close(AccessMode::Write)) => true,
        EventKind::Access(_) => false,
        _ => true,
    }
}

/// What a native watcher reports besides the tracked files.
#[derive(Clone, Default)]
pub struct Extra {
    /// Appends to log.yaml and the comings and goings of board.yaml (the change feed
    /// reports them; the watcher reads the log only when a file changed, and would
    /// otherwise wake up for its own appends).
    pub log_and_board: bool,
    /// The change journal reads are checked against (`tavern watch` keeps it; a server's
    /// feed does not): every event's paths are written to it first, in the kernel's order.
    pub journal: Option<Arc<crate::index::journal::Writer>>,
    /// The index keeper: the journal is all it keeps. No event is sent on but a failure,
    /// and a watcher's request for the journal, as [`Msg::Signal`].
    pub journal_only: bool,
}

/// Could a change of this path be a change of a tracked file or of a directory holding
/// some? Not the log, board.yaml, the reports watch mode writes, or temp and swap files:
/// every append to log.yaml (the watcher's own included) would wake the watcher up.
fn worth_a_look(root: &std::path::Path, path: &std::path::Path, log_and_board: bool) -> bool {
    let Ok(rel) = path.strip_prefix(root) else {
        return false;
    };
    let name = rel.file_name().and_then(|n| n.to_str()).unwrap_or("");
    if rel.as_os_str().is_empty() || areas::is_noise(name) {
        return false;
    }
    let parent = rel.parent().and_then(|p| p.to_str()).unwrap_or("");
    match parent {
        // Directly in the board: only the region directories themselves.
        "" => {
            areas::FLAT_DIRS.contains(&name)
                || areas::RECURSIVE_DIRS.contains(&name)
                || (log_and_board && matches!(name, "log.yaml" | "board.yaml"))
        }
        "control" => !matches!(name, "schedule.md" | "metrics.md"),
        _ => true,
    }
}

/// The directories watched, and how.
fn watches(board: &Board) -> Vec<(PathBuf, RecursiveMode)> {
    let mut out = vec![(board.root.clone(), RecursiveMode::NonRecursive)];
    for dir in areas::FLAT_DIRS {
        out.push((board.root.join(dir), RecursiveMode::NonRecursive));
    }
    for dir in areas::RECURSIVE_DIRS {
        out.push((board.root.join(dir), RecursiveMode::Recursive));
    }
    out
}

/// The directories watch mode needs, created if missing (as `tavern init` would).
pub fn ensure_dirs(board: &Board) {
    for (dir, _) in watches(board) {
        let _ = std::fs::create_dir_all(dir);
    }
}

pub struct Native {
    watcher: notify::RecommendedWatcher,
}

impl Native {
    /// Starts the native watcher on the board's directories.
    pub fn start(
        board: &Board,
        tx: Sender<Msg>,
        backlog: Backlog,
        extra: Extra,
    ) -> Result<Native, notify::Error> {
        let root = board.root.clone();
        let journal = extra.journal.clone();
        let cookies = journal.as_ref().map(|j| j.cookie_dir().to_path_buf());
        let log_and_board = extra.log_and_board;
        let journal_only = extra.journal_only;
        let handler = move |res: notify::Result<notify::Event>| {
            let mut stop_asked = false;
            if let Some(j) = &journal {
                match &res {
                    Ok(ev) if ev.need_rescan() => j.lost(),
                    Ok(ev) if relevant(&ev.kind) => {
                        stop_asked = j.record(&ev.paths, matches!(ev.kind, EventKind::Create(_)))
                    }
                    Ok(_) => {}
                    Err(_) => j.lost(),
                }
            }
            if journal_only {
                let msg = match res {
                    Err(e) => Msg::Failed(e),
                    Ok(_) if stop_asked => Msg::Signal,
                    Ok(_) => return,
                };
                let _ = tx.send(msg);
                return;
            }
            let msg = match res {
                Ok(ev) if ev.need_rescan() => Msg::Rescan,
                Ok(ev) if !relevant(&ev.kind) => return,
                Ok(mut ev) => {
                    // The log, our own reports, temp files and cookies: not worth waking
                    // up for.
                    ev.paths.retain(|p| {
                        cookies.as_deref() != p.parent() && worth_a_look(&root, p, log_and_board)
                    });
                    if ev.paths.is_empty() {
                        return;
                    }
                    if backlog.waiting.load(Ordering::Relaxed) >= CHANNEL_CAPACITY {
                        backlog.overflowed.store(true, Ordering::Relaxed);
                        return;
                    }
                    backlog.waiting.fetch_add(1, Ordering::Relaxed);
                    Msg::Paths(ev.paths)
                }
                Err(e) => Msg::Failed(e),
            };
            let _ = tx.send(msg);
        };
        // A symlink under solutions/ may point anywhere: never watched through.
        // Opens and reads are not changes: asked of the kernel, they would wake the
        // watcher for every file anyone reads (a `grep -r` of the board, a raw read of every
        // file costing a third more while a watcher runs). Closes after writing are.
        let config = notify::Config::default()
            .with_follow_symlinks(false)
            .with_event_kinds(notify::EventKindMask::CORE | notify::EventKindMask::ACCESS_CLOSE);
        let mut watcher = notify::RecommendedWatcher::new(handler, config)?;
        for (dir, mode) in watches(board) {
            watcher.watch(&dir, mode)?;
        }
        // The caller takes the journal (`Writer::take`) only now: a cookie answered before
        // a directory was watched would vouch for changes no one recorded.
        if let Some(j) = &extra.journal {
            watcher.watch(j.cookie_dir(), RecursiveMode::NonRecursive)?;
        }
        Ok(Native { watcher })
    }

    /// Watches the journal's cookie directory again (it was removed and made anew).
    pub fn watch_cookies(&mut self, dir: &std::path::Path) {
        let _ = self.watcher.unwatch(dir);
        let _ = self.watcher.watch(dir, RecursiveMode::NonRecursive);
    }

    /// Watches a directory again (it was removed and created anew).
    pub fn rewatch(&mut self, board: &Board, dir: &std::path::Path) {
        if let Some((path, mode)) = watches(board).into_iter().find(|(p, _)| p == dir) {
            let _ = self.watcher.unwatch(&path);
            let _ = self.watcher.watch(&path, mode);
        }
    }

    /// Is `dir` one of the watched directories?
    pub fn is_watched_dir(board: &Board, dir: &std::path::Path) -> bool {
        watches(board).iter().any(|(p, _)| p == dir)
    }
}

/// Where a path the native watcher named sends the watcher (or the feed) to look.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Look {
    /// A tracked file (or where one was): compare it with what was last seen.
    File(String),
    /// A directory that appeared, moved in or changed wholesale: every tracked file under
    /// it, and every known one that was under it.
    Under(String),
    /// A path under solutions/ that is gone, perhaps a directory (`rm -r`, `mv src lib`),
    /// whose files were tracked one by one and get no event of their own.
    GoneUnder(String),
    /// A watched directory removed and made again: the old watch went with the old one.
    Rewatch(PathBuf),
    /// A path whose name is not UTF-8.
    Undecodable(PathBuf),
}

/// What a path named by a file-system event asks to look at. Board-level files (log.yaml,
/// board.yaml) are the caller's: they are not tracked files.
pub fn looks(board: &Board, path: &std::path::Path) -> Vec<Look> {
    let Some(rel) = areas::relative(board, path) else {
        return vec![Look::Undecodable(path.to_path_buf())];
    };
    if rel.is_empty() {
        return Vec::new();
    }
    // Not `path.is_dir()`: a symlink to a directory (solutions/x -> /) is never entered.
    let meta = std::fs::symlink_metadata(path);
    let is_dir = meta.as_ref().is_ok_and(|m| m.is_dir());
    let tracked = areas::classify(&rel).is_some();
    let mut out = Vec::new();
    if !is_dir && tracked {
        if meta.is_err() && rel.starts_with("solutions/") {
            out.push(Look::GoneUnder(rel.clone()));
        }
        out.push(Look::File(rel));
        return out;
    }
    let name = rel.rsplit('/').next().unwrap_or(&rel);
    if areas::is_noise(name) {
        return out;
    }
    if is_dir && Native::is_watched_dir(board, path) {
        out.push(Look::Rewatch(path.to_path_buf()));
    }
    let in_solutions = rel.starts_with("solutions/") && rel.matches('/').count() == 1;
    let region_dir = areas::FLAT_DIRS.contains(&rel.as_str()) || rel == "solutions";
    if is_dir || in_solutions || region_dir {
        out.push(Look::Under(rel.clone()));
    }
    if is_dir && tracked {
        // A file of that name may have been there a moment ago: its deletion.
        out.push(Look::File(rel));
    }
    out
}

/// Why the native watcher failed, for the user (a front-end adds what to do about it).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum NativeFailure {
    /// The limit of inotify watches is reached.
    WatchLimit,
    /// The process ran out of file descriptors (or inotify instances).
    OpenFiles { error: String },
    /// Anything else (a file system without change notification, …).
    Other { error: String },
}

impl NativeFailure {
    pub fn of(e: &notify::Error) -> NativeFailure {
        match &e.kind {
            notify::ErrorKind::MaxFilesWatch => NativeFailure::WatchLimit,
            notify::ErrorKind::Io(io) if io.raw_os_error() == Some(24) => {
                NativeFailure::OpenFiles {
                    error: io.to_string(),
                }
            }
            _ => NativeFailure::Other {
                error: e.to_string(),
            },
        }
    }
}

impl std::fmt::Display for NativeFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            NativeFailure::WatchLimit => f.write_str(
                "the limit of inotify watches is reached (one is needed per directory watched, and solutions/ has one per task).",
            ),
            NativeFailure::OpenFiles { error } => write!(f, "too many open files ({error})."),
            NativeFailure::Other { error } => f.write_str(error),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failures_of_the_native_watcher_are_told_apart() {
        let limit = NativeFailure::of(&notify::Error::new(notify::ErrorKind::MaxFilesWatch));
        assert_eq!(limit, NativeFailure::WatchLimit);
        assert!(
            limit
                .to_string()
                .starts_with("the limit of inotify watches is reached")
        );
        let io = std::io::Error::from_raw_os_error(24);
        let files = NativeFailure::of(&notify::Error::io(io));
        assert!(
            matches!(&files, NativeFailure::OpenFiles { .. }),
            "{files:?}"
        );
        assert!(
            files.to_string().starts_with("too many open files ("),
            "{files}"
        );
        let other = NativeFailure::of(&notify::Error::generic("no notification here"));
        assert_eq!(other.to_string(), "no notification here");
    }

    #[test]
    fn the_log_reports_and_temp_files_wake_nobody() {
        let root = std::path::Path::new("/p/.tavern");
        let look = |rel: &str| worth_a_look(root, &root.join(rel), false);
        for yes in [
            "tasks",
            "tasks/task-1.md",
            "solutions/task-1",
            "solutions/task-1/a/b.rs",
            "control/PAUSE",
            "control/sources",
            "control/sources/x.md",
        ] {
            assert!(look(yes), "{yes}");
        }
        for no in [
            "log.yaml",
            "board.yaml",
            ".gitignore",
            "control/schedule.md",
            "control/metrics.md",
            "tasks/.task-1.md.4.0.tmp",
            "control/.schedule.md.tmp",
            "tasks/task-1.md~",
        ] {
            assert!(!look(no), "{no}");
        }
        assert!(!worth_a_look(
            root,
            std::path::Path::new("/elsewhere/x.md"),
            false
        ));
        let feed = true;
        assert!(worth_a_look(root, &root.join("log.yaml"), feed));
        assert!(worth_a_look(root, &root.join("board.yaml"), feed));
        assert!(!worth_a_look(root, &root.join("control/schedule.md"), feed));
    }

    #[test]
    fn reads_are_not_changes() {
        use notify::event::{AccessKind, AccessMode, CreateKind, ModifyKind};
        assert!(!relevant(&EventKind::Access(AccessKind::Open(
            AccessMode::Any
        ))));
        assert!(!relevant(&EventKind::Access(AccessKind::Close(
            AccessMode::Read
        ))));
        assert!(relevant(&EventKind::Access(AccessKind::Close(
            AccessMode::Write
        ))));
        assert!(relevant(&EventKind::Create(CreateKind::File)));
        assert!(relevant(&EventKind::Modify(ModifyKind::Any)));
    }
}
