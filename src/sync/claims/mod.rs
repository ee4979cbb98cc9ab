//! Claims across machines (DESIGN §12): on a board connected to a git remote, a claim and
//! every transition of a claimed task are confirmed by the remote before they count.
//!
//! Each task has its own ref on the remote, `refs/tavern/claims/<task-id>`, pointing at a
//! small commit (an empty tree; the previous record as parent) whose message is the
//! record: task, agent, the clone it came from, state, epoch and time. The first claim
//! creates the ref with `--force-with-lease=REF:` (git refuses if it exists); every later
//! change pushes a new record with `--force-with-lease=REF:<the sha it replaces>`. That
//! lease is the compare-and-swap and the fence: whoever pushed from a stale record loses.
//! Claims of different tasks touch different refs, so they never wait for one another.
//!
//! The clone keeps the last record it saw or pushed at the same ref name locally, so the
//! common case is one push; only a rejected push fetches the ref to learn the winner.
//!
//! Liveness across machines is the record's `at`: every confirmed transition renews it,
//! and so does `tavern agent heartbeat` ([`renew`]). A record held for longer than the
//! board's lease without renewal may be taken over from any clone (epoch + 1), through the
//! same compare-and-swap; the old holder's next push is rejected and it is told who holds
//! the task now.
//!
//! One job per file: [`record`] the record's format, [`refname`] where it lives, `exchange`
//! the git commands (copies, commits, the push, the fetch), `confirm` the compare-and-swap
//! of a step (and renewals), `follow` making tasks say what the records say, `next` how
//! `claim --next` picks, and `wording` what all of it tells a person.

mod confirm;
mod exchange;
mod follow;
pub mod holds;
mod next;
pub mod record;
pub mod refname;
mod wording;

pub use confirm::{Confirmed, Pushed, Step, confirm, renew, undo};
pub use exchange::{fetch_all, fetch_for_next, survey};
pub use follow::{follow, reconcile, reconcile_listed, settle, unconfirmed};
pub use next::{spread, worth_trying};
pub use wording::Failure;

use crate::board::Board;
use crate::error::Result;

/// The remote to confirm with: None when the board is not connected.
pub fn remote(board: &Board) -> Result<Option<String>> {
    super::remote(board)
}
