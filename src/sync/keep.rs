//! `tavern sync --watch` and a connected `tavern watch`: exchanging again and again.

use crate::board::Board;
use crate::error::Result;
use crate::sync::exchange::{Exchange, Options, exchange};

/// How `tavern sync --watch` (and a connected `tavern watch`) keeps exchanging.
#[derive(Clone, Debug)]
pub struct KeepOptions {
    /// Exchange at least this often (to hear of other machines' changes).
    pub interval: std::time::Duration,
    /// After a local change, wait this long for more before exchanging.
    pub settle: std::time::Duration,
    /// Look at the board by polling every DUR instead of file events.
    pub poll: Option<std::time::Duration>,
    /// Who exchanges (see [`Options`]).
    pub exchange: Options,
}

impl Default for KeepOptions {
    fn default() -> KeepOptions {
        KeepOptions {
            interval: std::time::Duration::from_secs(30),
            settle: std::time::Duration::from_millis(300),
            poll: None,
            exchange: Options::default(),
        }
    }
}

/// Exchanges now, then every `interval` and soon after every local change (seen through
/// [`crate::watch::feed::Feed`]; the files an exchange itself wrote are not a local
/// change), until `stop` is set. Each exchange's result goes to `report`; a failed one
/// (offline) is retried at the next turn, and what changed meanwhile is sent then.
pub fn keep_exchanging(
    board: &Board,
    opts: &KeepOptions,
    stop: &std::sync::atomic::AtomicBool,
    mut report: impl FnMut(&Result<Exchange>),
) -> Result<()> {
    use crate::watch::feed::{self, BoardEvent, Feed};
    use std::sync::atomic::Ordering;
    use std::time::{Duration, Instant};
    let mut feed = Feed::open(board, feed::Options { poll: opts.poll })?;
    let mut next = Instant::now();
    let mut own: std::collections::HashSet<String> = std::collections::HashSet::new();
    while !stop.load(Ordering::Relaxed) {
        let now = Instant::now();
        if now >= next {
            let r = exchange(board, &opts.exchange);
            own = match &r {
                Ok(x) => x.changed.iter().cloned().collect(),
                Err(_) => Default::default(),
            };
            report(&r);
            next = Instant::now() + opts.interval;
            continue;
        }
        let wait = (next - now).min(Duration::from_millis(500));
        let Some(batch) = feed.next(wait) else {
            continue;
        };
        // Each file an exchange wrote is its own change once; anything else is local.
        let mut local = false;
        for c in &batch.changes {
            local |= !own.remove(&c.path);
        }
        for e in &batch.board {
            local |= match e {
                BoardEvent::LogAppended { .. } | BoardEvent::LogReplaced { .. } => {
                    !own.remove(crate::layout::LOG)
                }
                BoardEvent::Paused { .. } | BoardEvent::Resumed => !own.remove("control/PAUSE"),
                _ => false,
            };
        }
        if local {
            own.clear();
            next = next.min(Instant::now() + opts.settle);
        }
    }
    Ok(())
}
