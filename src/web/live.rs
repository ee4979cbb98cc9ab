//! One watcher of the board per server, fanned out to every open page: a change on disk
//! (by tavern, an agent's editor or `cat >`) becomes one `Update` on a broadcast channel,
//! which each page's event stream forwards. Pages then re-read what they show, so an
//! update only has to say that something changed and where.
//!
//! Runs on a thread of its own: the native watcher's events are hints, gathered for a few
//! milliseconds so that a burst (a rename over a file, a log append) is one update. The
//! board directory disappearing is noticed (and its coming back, with a fresh watcher).

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{RecvTimeoutError, channel};
use std::time::Duration;

use notify::event::{AccessKind, AccessMode, EventKind};
use notify::{RecursiveMode, Watcher};
use serde::Serialize;
use tokio::sync::broadcast;

/// How long a burst of events may last before it is sent as one update.
const GATHER: Duration = Duration::from_millis(25);
/// How often the watcher thread checks that the board directory is still there.
const CHECK_ROOT: Duration = Duration::from_millis(250);

#[derive(Clone, Debug, Serialize, PartialEq)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum Update {
    /// Files changed (paths relative to the board, `/`-separated).
    Changed { paths: Vec<String> },
    /// The board directory is gone.
    Gone,
    /// The board directory is back.
    Back,
}

pub struct Live {
    tx: broadcast::Sender<Update>,
    gone: Arc<AtomicBool>,
}

impl Live {
    /// Starts the watcher thread for the board at `root`.
    pub fn start(root: PathBuf) -> Live {
        let (tx, _) = broadcast::channel(256);
        let gone = Arc::new(AtomicBool::new(!root.is_dir()));
        let (thread_tx, thread_gone) = (tx.clone(), gone.clone());
        std::thread::spawn(move || watch(&root, &thread_tx, &thread_gone));
        Live { tx, gone }
    }

    pub fn subscribe(&self) -> broadcast::Receiver<Update> {
        self.tx.subscribe()
    }

    /// Is the board directory gone (as last seen by the watcher)?
    pub fn gone(&self) -> bool {
        self.gone.load(Ordering::Relaxed)
    }
}

/// Events that can mean a change; opens and reads (the server's own) are not.
fn relevant(kind: &EventKind) -> bool {
    match kind {
        EventKind::Access(AccessKind::Close(AccessMode::Write)) => true,
        EventKind::Access(_) => false,
        _ => true,
    }
}

/// The board-relative path of a change worth telling pages about: not runtime state, not
/// temp or swap files, not the reports watch mode rewrites every few seconds.
fn shown(root: &Path, path: &Path) -> Option<String> {
    let rel = path.strip_prefix(root).ok()?;
    let rel = rel.to_str()?.replace('\\', "/");
    if rel.is_empty() {
        return Some(String::new());
    }
    if rel.split('/').any(|part| part.starts_with('.'))
        || rel == "control/schedule.md"
        || rel == "control/metrics.md"
    {
        return None;
    }
    Some(rel)
}

fn watch(root: &Path, tx: &broadcast::Sender<Update>, gone: &AtomicBool) {
    loop {
        if !root.is_dir() {
            if !gone.swap(true, Ordering::Relaxed) {
                let _ = tx.send(Update::Gone);
            }
            std::thread::sleep(CHECK_ROOT);
            continue;
        }
        let (etx, erx) = channel::<notify::Result<notify::Event>>();
        let mut watcher = match notify::recommended_watcher(etx) {
            Ok(w) => w,
            Err(e) => {
                eprintln!("warning: cannot watch the board ({e}); pages will not update live");
                return;
            }
        };
        if let Err(e) = watcher.watch(root, RecursiveMode::Recursive) {
            if root.is_dir() {
                eprintln!("warning: cannot watch {} ({e}); retrying", root.display());
            }
            std::thread::sleep(CHECK_ROOT);
            continue;
        }
        // Said once the new watcher is in place, so that nothing a page re-reads after
        // hearing it can change unseen.
        if gone.swap(false, Ordering::Relaxed) {
            let _ = tx.send(Update::Back);
        }
        loop {
            let first = match erx.recv_timeout(CHECK_ROOT) {
                Ok(ev) => ev,
                Err(RecvTimeoutError::Timeout) => {
                    if root.is_dir() {
                        continue;
                    }
                    break;
                }
                Err(RecvTimeoutError::Disconnected) => break,
            };
            let mut paths: Vec<String> = Vec::new();
            let mut rescan = false;
            let mut take = |ev: notify::Result<notify::Event>| match ev {
                Ok(ev) if relevant(&ev.kind) => {
                    for p in &ev.paths {
                        if let Some(rel) = shown(root, p)
                            && !paths.contains(&rel)
                        {
                            paths.push(rel);
                        }
                    }
                }
                Ok(_) => {}
                Err(_) => rescan = true,
            };
            take(first);
            let deadline = std::time::Instant::now() + GATHER;
            while let Some(left) = deadline.checked_duration_since(std::time::Instant::now()) {
                match erx.recv_timeout(left) {
                    Ok(ev) => take(ev),
                    Err(_) => break,
                }
            }
            if rescan && paths.is_empty() {
                paths.push(String::new());
            }
            if !paths.is_empty() {
                paths.sort();
                let _ = tx.send(Update::Changed { paths });
            }
            if !root.is_dir() {
                break;
            }
        }
        drop(watcher);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runtime_state_and_temp_files_are_not_shown() {
        let root = Path::new("/b/.tavern");
        assert_eq!(
            shown(root, Path::new("/b/.tavern/tasks/t-1.md")).as_deref(),
            Some("tasks/t-1.md")
        );
        assert_eq!(
            shown(root, Path::new("/b/.tavern/log.yaml")).as_deref(),
            Some("log.yaml")
        );
        assert_eq!(shown(root, Path::new("/b/.tavern/.state/locks/x")), None);
        assert_eq!(shown(root, Path::new("/b/.tavern/tasks/.t-1.md.tmp")), None);
        assert_eq!(
            shown(root, Path::new("/b/.tavern/control/metrics.md")),
            None
        );
        assert_eq!(shown(root, Path::new("/elsewhere/x")), None);
    }
}
