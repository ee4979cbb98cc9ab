//! Changes to the board, for resource notifications: the log's new entries, read as they
//! are appended. Followed only once a client subscribes; nothing relies on it, since many
//! clients drop these notifications.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use tokio::sync::broadcast::Sender;

use tavern::board::Board;

/// What one log entry changed: the resources to report as updated, and whether the list of
/// resources changed (a document created, moved or deleted).
#[derive(Clone, Debug)]
pub struct Change {
    pub uris: Vec<String>,
    pub list_changed: bool,
}

const POLL: Duration = Duration::from_millis(250);

static STARTED: AtomicBool = AtomicBool::new(false);

/// The resource a log entry's document is, if it is one (`tasks/x.md` -> `tavern://tasks/x`).
fn uri_of(doc: &str) -> Option<String> {
    let (region, file) = doc.split_once('/')?;
    tavern::doc::Region::parse(region)?;
    let id = file.strip_suffix(".md")?;
    (!id.contains('/')).then(|| format!("tavern://{region}/{id}"))
}

fn change_of(e: &tavern::log::Entry) -> Change {
    let mut uris = vec!["tavern://summary".to_string()];
    uris.extend(uri_of(&e.doc));
    if let Some(moved) = e.doc.strip_prefix("archive/") {
        uris.extend(uri_of(moved));
    }
    let list_changed = matches!(e.op.as_str(), "create" | "move" | "delete")
        || (e.op == "external-edit"
            && e.note
                .as_deref()
                .is_some_and(|n| n.contains("created") || n.contains("deleted")));
    Change { uris, list_changed }
}

/// Starts following the log (once per process) and sends every change on `tx`.
pub fn start(board: Board, tx: Sender<Change>) {
    if STARTED.swap(true, Ordering::SeqCst) {
        return;
    }
    tokio::spawn(async move {
        let b = board.clone();
        let mut offset = tokio::task::spawn_blocking(move || tavern::log::end(&b).map(|e| e.0))
            .await
            .ok()
            .and_then(|r| r.ok())
            .unwrap_or(0);
        loop {
            tokio::time::sleep(POLL).await;
            let b = board.clone();
            let read =
                tokio::task::spawn_blocking(move || tavern::log::read_from(&b, offset)).await;
            let Ok(Ok((entries, next, _))) = read else {
                continue;
            };
            offset = next;
            for e in &entries {
                // No receiver (nobody subscribed any more) is not an error worth stopping for.
                let _ = tx.send(change_of(e));
            }
        }
    });
}
