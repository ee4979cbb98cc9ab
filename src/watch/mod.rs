//! Watch mode (DESIGN §9): notice every change to the board, hand edits included, log what
//! did not come through tavern, and start the knowledge sources that registered for it.
//!
//! The rooms, in the order a change goes through them: [`event_loop`] (waits for file
//! events, commands' ends, signals and timers) → [`intake`] and [`fsevents`] (where to
//! look) → [`reconcile`] (what changed, by whom; external edits logged) → [`activations`]
//! (offers changes to the sources, starts and ends their commands) with [`scheduler`]
//! (which sources, loop guard, queue) and [`runner`] (the commands) → [`chores`] and
//! [`report`] (state saved, schedule.md, metrics.md). [`areas`] says what is tracked,
//! [`snapshot`] what was last seen, [`patch`] replays logged diffs, [`sources`] reads the
//! sources. What happens is reported as [`Event`]s to the caller: the library never prints.

pub mod activations;
pub mod areas;
pub mod chores;
pub mod event_loop;
pub mod events;
pub mod feed;
pub mod files_index;
pub mod fsevents;
pub mod intake;
pub mod keeper;
pub mod lock;
pub mod mark;
pub mod pack;
pub mod patch;
pub mod reconcile;
pub mod report;
pub mod runner;
pub mod scheduler;
pub mod snapshot;
pub mod sources;
pub mod starting;

use std::sync::mpsc::Sender;
use std::time::Duration;

use crate::board::Board;
use crate::error::Result;
pub use events::Event;
use fsevents::Msg;
use lock::WatchLock;

#[derive(Clone, Debug)]
pub struct Options {
    /// Handle what is pending, wait for the activations, and return.
    pub once: bool,
    /// Activations running at once, in all.
    pub jobs: usize,
    /// Rescan this often instead of using the native watcher.
    pub poll: Option<Duration>,
    /// At SIGINT/SIGTERM, how long running activations may finish before they are killed.
    pub grace: Duration,
}

/// How a run of the watcher ended.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct Summary {
    /// Activations that failed, timed out or were killed.
    pub failed: usize,
    /// Activations that ran.
    pub ran: usize,
    /// Activations left waiting because the board is paused.
    pub held: usize,
    /// Activations the loop guard stopped (each logged as an alert): they did not run.
    pub guarded: usize,
}

/// Runs the watcher until SIGINT/SIGTERM (or, with `once`, until nothing is pending),
/// handing each [`Event`] to `emit` as it happens.
pub fn run(board: Board, opts: Options, emit: &mut dyn FnMut(Event)) -> Result<Summary> {
    let lock = WatchLock::acquire(&board)?;
    let (tx, rx) = std::sync::mpsc::channel();
    listen_for_signals(tx.clone());
    let mut w = event_loop::Watch::open(board, opts, tx, lock, emit)?;
    w.run(rx)?;
    Ok(w.summary().clone())
}

pub(crate) fn listen_for_signals(tx: Sender<Msg>) {
    use signal_hook::consts::{SIGINT, SIGTERM};
    let Ok(mut signals) = signal_hook::iterator::Signals::new([SIGINT, SIGTERM]) else {
        return;
    };
    std::thread::spawn(move || {
        for _ in signals.forever() {
            if tx.send(Msg::Signal).is_err() {
                break;
            }
        }
    });
}
