//! Changes to the board, for resource notifications: the change feed watch mode's own
//! change detection drives (`tavern::api::changes`), so hand edits are reported as well as
//! tavern's writes. Followed only once a client subscribes, on one thread of its own;
//! nothing relies on it, since many clients drop these notifications.

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use tokio::sync::broadcast::error::RecvError;
use tokio::sync::broadcast::{Receiver, Sender};

use tavern::api::changes::{Batch, Feed, Kind};
use tavern::api::{Board, Region};

/// What one batch changed: the resources to report as updated, and whether the list of
/// resources changed (a document created, moved or deleted).
#[derive(Clone, Debug)]
pub struct Change {
    pub uris: Vec<String>,
    pub list_changed: bool,
    /// Changes were missed (a listener fell behind): any resource may have changed.
    pub all: bool,
}

impl Change {
    /// The URIs among `wanted` this change is about.
    pub fn among(&self, wanted: &HashSet<String>) -> Vec<String> {
        if self.all {
            return wanted.iter().cloned().collect();
        }
        let named = self.uris.iter().filter(|u| wanted.contains(*u));
        named.cloned().collect()
    }
}

/// The next change for one listener, or None once the feed is gone. A listener that fell
/// so far behind that changes were dropped hears that everything may have changed, rather
/// than nothing or an end.
pub async fn next(rx: &mut Receiver<Change>) -> Option<Change> {
    match rx.recv().await {
        Ok(change) => Some(change),
        Err(RecvError::Lagged(_)) => Some(Change {
            uris: Vec::new(),
            list_changed: true,
            all: true,
        }),
        Err(RecvError::Closed) => None,
    }
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
    Some(Change {
        uris,
        list_changed,
        all: false,
    })
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

#[cfg(test)]
mod tests {
    use super::*;

    fn change(uris: &[&str]) -> Change {
        Change {
            uris: uris.iter().map(|u| u.to_string()).collect(),
            list_changed: false,
            all: false,
        }
    }

    #[tokio::test(flavor = "current_thread")]
    async fn a_listener_that_fell_behind_hears_that_everything_may_have_changed() {
        let (tx, mut rx) = tokio::sync::broadcast::channel(2);
        let wanted: HashSet<String> = ["tavern://tasks/a", "tavern://tasks/b"]
            .map(String::from)
            .into();
        tx.send(change(&["tavern://tasks/a", "tavern://summary"]))
            .unwrap();
        let first = next(&mut rx).await.unwrap();
        assert_eq!(first.among(&wanted), ["tavern://tasks/a"]);
        for _ in 0..3 {
            tx.send(change(&["tavern://tasks/c"])).unwrap();
        }
        let lagged = next(&mut rx).await.unwrap();
        assert!(lagged.all && lagged.list_changed);
        let mut all = lagged.among(&wanted);
        all.sort();
        assert_eq!(all, ["tavern://tasks/a", "tavern://tasks/b"]);
        // What was not dropped still follows, then the end.
        assert!(next(&mut rx).await.unwrap().among(&wanted).is_empty());
        assert!(next(&mut rx).await.unwrap().among(&wanted).is_empty());
        drop(tx);
        assert!(next(&mut rx).await.is_none());
    }
}
