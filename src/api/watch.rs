//! Watch mode: every change to the board noticed (hand edits included) and explained, the
//! knowledge sources started for what they registered for, each step reported as an
//! [`Event`]; on a board connected to a remote, exchanges with it alongside.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use crate::board::Board;
use crate::error::Result;

use super::sync::{Exchange, KeepOptions};

pub use crate::watch::events::{ActivationInfo, Event, Mode, Skip, Warning, human_duration};
pub use crate::watch::fsevents::NativeFailure;
pub use crate::watch::keeper::End as KeeperEnd;
pub use crate::watch::{Options, Summary};

/// Runs the index keeper (`tavern watch --keeper`, which reads start in the background):
/// keeps the board's change journal, so that reads check only the files it names, until
/// no read has asked for `watch.keeper_idle`, a watcher takes the journal over, a signal,
/// or the board is gone. Ends at once ([`KeeperEnd::Busy`]) when a watcher or another
/// keeper keeps it.
pub fn keep_index(board: &Board) -> Result<KeeperEnd> {
    let idle = crate::time::parse_duration(&board.config.watch.keeper_idle)
        .and_then(|d| d.to_std().ok())
        .unwrap_or(std::time::Duration::from_secs(600));
    // A stopping watcher that invited this keeper says so in its environment.
    let invited = std::env::var("TAVERN_KEEPER_INVITATION")
        .ok()
        .and_then(|t| crate::watch::keeper::Invitation::parse(&t));
    crate::watch::keeper::keep(board, idle, invited.as_ref())
}

/// Runs the watcher until SIGINT/SIGTERM (or, with `once`, until nothing is pending),
/// handing each [`Event`] to `emit` as it happens.
///
/// A board connected to a remote keeps exchanging with it while it is watched (unless
/// `once`), by `sync`, on a thread of its own: a fetch or push never holds the watch loop
/// up, and what other machines change arrives as file changes, explained by the log
/// entries that come with them. Each exchange's result goes to `exchanged`; the exchanges
/// stop when the watcher does, once the exchange under way has ended (as `sync --watch`
/// stops), so that no git of it is left running to race the clone's next exchange. A
/// SIGINT or SIGTERM while it waits for that exchange ends the process at once (exit 1).
pub fn run(
    board: Board,
    opts: Options,
    sync: KeepOptions,
    emit: &mut dyn FnMut(Event),
    exchanged: impl Fn(&Result<Exchange>) + Send + 'static,
) -> Result<Summary> {
    let stop = Arc::new(AtomicBool::new(false));
    let mut exchanging = None;
    if !opts.once && crate::sync::remote(&board)?.is_some() {
        let (board, stop) = (board.clone(), stop.clone());
        exchanging = Some(std::thread::spawn(move || {
            let r = crate::sync::keep_exchanging(&board, &sync, &stop, &exchanged);
            if let Err(e) = r {
                exchanged(&Err(e));
            }
        }));
    }
    let summary = crate::watch::run(board, opts, emit);
    stop.store(true, Ordering::Relaxed);
    if let Some(thread) = exchanging {
        let now = Arc::new(AtomicBool::new(true));
        for signal in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
            let _ = signal_hook::flag::register_conditional_shutdown(signal, 1, now.clone());
        }
        let _ = thread.join();
    }
    summary
}
