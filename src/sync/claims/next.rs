//! How `claim --next` picks among candidates on a connected board, from what it knows of
//! the remote's records.

use crate::board::Board;
use crate::doc::Document;

use super::record::Record;

/// Whether `claim --next` should try a task, given the remote's record of it: no record,
/// a free one, or one this actor holds.
pub fn worth_trying(board: &Board, record: Option<&Record>, actor: &str) -> bool {
    record.is_none_or(|r| {
        r.agent == actor || (board.config.workflow.is_claimable(&r.state) && !r.held(board))
    })
}

/// How many of the best candidates of one priority `claim --next` spreads its agents over
/// on a connected board.
pub const SPREAD: usize = 16;

/// On a connected board, agents on different machines see one another's claims only by
/// losing a race to them, so if all went for the very best task they would queue on it,
/// one push and one fetch per loser per task. `claim --next` therefore starts each agent at
/// its own place among the first [`SPREAD`] candidates of the best priority (by a hash of
/// its name) and goes on from there, wrapping round; priorities are kept.
pub fn spread(candidates: &mut [Document], actor: &str) {
    let Some(first) = candidates.first().map(|d| d.priority()) else {
        return;
    };
    let lead = candidates
        .iter()
        .take(SPREAD)
        .take_while(|d| d.priority() == first)
        .count();
    if lead > 1 {
        // FNV-1a: stable across runs and machines.
        let hash = actor.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
            (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
        });
        candidates[..lead].rotate_left((hash % lead as u64) as usize);
    }
}
