//! One watcher of the board per server, fanned out to every open page: the library's
//! change feed (`tavern::api::changes`, the change detection watch mode uses) runs on a
//! thread of its own, and each batch it reports becomes one `Update` on a broadcast
//! channel, which each page's event stream forwards. Pages then re-read what they show,
//! so an update only has to say that something changed and where.
//!
//! The board directory disappearing is reported by the feed (and its coming back); a
//! board that is not there when the server starts is waited for.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use serde::Serialize;
use tavern::api::changes::{Batch, BoardEvent, Feed, Kind};
use tokio::sync::broadcast;

/// How often the thread looks for a board that is not there (yet).
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
    /// Starts the feed's thread for the board at `root`, and returns once the feed
    /// watches (or the board is found missing): a page that connects after the server
    /// says where it is misses nothing.
    pub fn start(root: PathBuf) -> Live {
        let (tx, _) = broadcast::channel(256);
        let gone = Arc::new(AtomicBool::new(!root.is_dir()));
        let (thread_tx, thread_gone) = (tx.clone(), gone.clone());
        let (ready_tx, ready_rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || follow(&root, &thread_tx, &thread_gone, ready_tx));
        let _ = ready_rx.recv();
        Live { tx, gone }
    }

    pub fn subscribe(&self) -> broadcast::Receiver<Update> {
        self.tx.subscribe()
    }

    /// Is the board directory gone (as last reported)?
    pub fn gone(&self) -> bool {
        self.gone.load(Ordering::Relaxed)
    }
}

/// What pages are told about one batch of the feed, in order.
pub fn updates(batch: &Batch) -> Vec<Update> {
    let mut out = Vec::new();
    let mut paths: Vec<String> = Vec::new();
    let mut add = |p: &str| {
        if !paths.iter().any(|q| q == p) {
            paths.push(p.to_string());
        }
    };
    for event in &batch.board {
        match event {
            BoardEvent::Gone => out.push(Update::Gone),
            BoardEvent::Back => out.push(Update::Back),
            BoardEvent::Paused { .. } | BoardEvent::Resumed => add("control/PAUSE"),
            BoardEvent::LogAppended { .. } | BoardEvent::LogReplaced { .. } => add("log.yaml"),
            // Still live, only slower; nothing for a page to re-read.
            BoardEvent::Polling { .. } => {}
        }
    }
    for c in &batch.changes {
        if let Kind::Moved { from } = &c.kind {
            add(from);
        }
        add(&c.path);
    }
    if !paths.is_empty() {
        paths.sort();
        out.push(Update::Changed { paths });
    }
    out
}

fn follow(
    root: &Path,
    tx: &broadcast::Sender<Update>,
    gone: &AtomicBool,
    ready: std::sync::mpsc::Sender<()>,
) {
    let mut feed = loop {
        let opened =
            tavern::api::board::reopen(root).and_then(|b| Feed::open(&b, Default::default()));
        let _ = ready.send(());
        match opened {
            Ok(feed) => break feed,
            Err(_) => {
                if !gone.swap(true, Ordering::Relaxed) {
                    let _ = tx.send(Update::Gone);
                }
                std::thread::sleep(CHECK_ROOT);
            }
        }
    };
    // Said once the feed is in place, so that nothing a page re-reads after hearing it
    // can change unseen.
    if gone.swap(false, Ordering::Relaxed) {
        let _ = tx.send(Update::Back);
    }
    loop {
        let Some(batch) = feed.next(Duration::from_secs(1)) else {
            continue;
        };
        for update in updates(&batch) {
            match update {
                Update::Gone => gone.store(true, Ordering::Relaxed),
                Update::Back => gone.store(false, Ordering::Relaxed),
                Update::Changed { .. } => {}
            }
            let _ = tx.send(update);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tavern::api::changes::DocChange;

    #[test]
    fn a_batch_becomes_board_events_then_one_change_with_every_path() {
        let batch = Batch {
            changes: vec![
                DocChange {
                    region: "tasks".into(),
                    id: "t-2".into(),
                    path: "tasks/t-2.md".into(),
                    kind: Kind::Moved {
                        from: "observations/t-2.md".into(),
                    },
                },
                DocChange {
                    region: "tasks".into(),
                    id: "t-1".into(),
                    path: "tasks/t-1.md".into(),
                    kind: Kind::Changed,
                },
            ],
            board: vec![
                BoardEvent::Back,
                BoardEvent::LogAppended { entries: vec![] },
                BoardEvent::Resumed,
            ],
        };
        assert_eq!(
            updates(&batch),
            vec![
                Update::Back,
                Update::Changed {
                    paths: vec![
                        "control/PAUSE".into(),
                        "log.yaml".into(),
                        "observations/t-2.md".into(),
                        "tasks/t-1.md".into(),
                        "tasks/t-2.md".into(),
                    ]
                }
            ]
        );
        assert_eq!(updates(&Batch::default()), vec![]);
    }
}
