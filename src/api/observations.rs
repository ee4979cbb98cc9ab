//! Observations (findings): post, acknowledge, resolve, reject.

use super::change::{Changed, Created};
use crate::board::Board;
use crate::doc::Region;
use crate::error::Result;
use crate::ops::observations;
pub use crate::ops::observations::{Action, Post};

/// Posts an observation.
pub fn post(board: &Board, actor: &str, spec: &Post) -> Result<Created> {
    let (doc, entry) = observations::post(board, actor, spec)?;
    Ok(Created { doc, entry })
}

/// Acknowledges, resolves or rejects an observation given by id or unique prefix.
pub fn act(
    board: &Board,
    actor: &str,
    reference: &str,
    action: &Action,
    if_rev: Option<u64>,
) -> Result<Changed> {
    let name = match action {
        Action::Ack => "ack",
        Action::Resolve { .. } => "resolve",
        Action::Reject { .. } => "reject",
    };
    let id = crate::ops::resolve::resolve_kind(
        board,
        reference,
        Region::Observations,
        &format!("{name} works on observations"),
    )?;
    Ok(Changed::new(observations::act(
        board, actor, &id, action, if_rev,
    )?))
}

/// Rejects what `reference` names: an observation is rejected, a task takes its `reject`
/// transition.
pub fn reject(
    board: &Board,
    actor: &str,
    reference: &str,
    opts: &crate::ops::transition::Options,
) -> Result<Changed> {
    let (region, _) = crate::ops::resolve::resolve_kinds(
        board,
        reference,
        &[Region::Tasks, Region::Observations],
        "reject works on tasks in review and on observations",
    )?;
    if region == Region::Tasks {
        return super::tasks::transition(board, actor, reference, "reject", opts);
    }
    let action = Action::Reject {
        note: opts.note.clone(),
    };
    act(board, actor, reference, &action, opts.if_rev)
}
