//! Changes to the board, for resource notifications: the change feed watch mode's own
//! change detection drives (`tavern::api::changes`), so hand edits are reported as well as
//! tavern's writes. Followed only once a client subscribes, on one thread of its own;
//! nothing relies on it, since many clients drop these notifications.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use tokio::sync::broadcast::Sender;

use tavern::api::changes::{Batch, Feed, Kind};
use tavern::api::{Board, Region};

/// What one batch changed: the resources to report as updated, and whether the list of
/// resources changed (a document created, moved or deleted).
#[derive(Clone, Debug)]
pub struct Change {
    pub uris: Vec<String>,
    pub list_changed: bool,
}

static STARTED: AtomicBool = AtomicBool::new(false);

fn change_of(batch: &Batch) -> Option<Change> {
    let mut uris = Vec::new();
    let mut list_changed = false;
    for c in &batch.changes {
        if Region::parse(&c.region).is_none() {
            continue;
        }
        let uri = format!("tavern://{}/{}", c.region, c.id);
        if !uris.contains(&uri) {
            uris.push(uri);
        }
        list_changed |= !matches!(c.kind, Kind::Changed);
    }
    if batch.changes.is_empty() && batch.board.is_empty() {
        return None;
    }
    // Whatever changed, the summary may have.
    uris.push("tavern://summary".to_string());
    Some(Change { uris, list_changed })
}

/// Starts following the board (once per process) and sends every change on `tx`.
pub fn start(board: Board, tx: Sender<Change>) {
    if STARTED.swap(true, Ordering::SeqCst) {
        return;
    }
    let Ok(mut feed) = Feed::open(&board, Default::default()) else {
        return;
    };
    std::thread::spawn(move || {
        loop {
            if let Some(change) = feed
                .next(Duration::from_secs(1))
                .as_ref()
                .and_then(change_of)
            {
                // No receiver (nobody listens any more) is not a reason to stop.
                let _ = tx.send(change);
            }
        }
    });
}
