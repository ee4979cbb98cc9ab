//! Following the remote: a task of this clone is made to say what the remote's record of
//! it says (state and holder), after a lost race and at every `tavern sync`.

use chrono::{DateTime, Utc};

use crate::board::Board;
use crate::doc::edit::FieldEdit;
use crate::doc::{Document, Region};
use crate::error::Result;

use super::exchange::all_known;
use super::record::Record;

/// The actor the log names when a sync makes a task follow the remote's record.
pub const SYNC_ACTOR: &str = "tavern-sync";

/// The change that makes this clone's copy of a task say what the remote's record says,
/// or None when it already does. Logged as `remote-claim` by `actor`, whose step lost.
pub fn follow(
    board: &Board,
    doc: &Document,
    actor: &str,
    remote: &str,
    record: &Record,
) -> Option<crate::ops::Change> {
    let w = &board.config.workflow;
    let status = doc.status().unwrap_or("");
    let holder = doc.str("claimed_by").unwrap_or("");
    let free = record.agent.is_empty() || w.is_claimable(&record.state);
    let want_holder = if free { "" } else { record.agent.as_str() };
    if !w.is_state(&record.state) || (status == record.state && holder == want_holder) {
        return None;
    }
    let mut edits = vec![FieldEdit::Set("status".into(), record.state.clone().into())];
    if free {
        edits.push(FieldEdit::Unset("claimed_by".into()));
        edits.push(FieldEdit::Unset("claimed_at".into()));
    } else if holder != want_holder {
        edits.push(FieldEdit::Set(
            "claimed_by".into(),
            record.agent.clone().into(),
        ));
        edits.push(FieldEdit::Set(
            "claimed_at".into(),
            crate::time::stamp(record.at).into(),
        ));
    }
    let entry = crate::log::Entry {
        actor: actor.to_string(),
        op: "remote-claim".into(),
        from: Some(status.to_string()),
        to: Some(record.state.clone()),
        note: Some(format!(
            "the remote '{remote}' says {} holds it ({} from {} at {}, epoch {})",
            if record.agent.is_empty() {
                "nobody"
            } else {
                &record.agent
            },
            record.state,
            record.origin,
            crate::time::stamp(record.at),
            record.epoch
        )),
        ..crate::log::Entry::default()
    };
    Some(crate::ops::Change {
        edits,
        body: None,
        entry,
    })
}

/// Makes every task of this clone say what the remote's record of it (as last fetched,
/// see [`super::fetch_all`]) says: state and holder. A task changed here after its record
/// was written (a `--local` move) keeps its local state; its next confirmed move settles
/// it. Returns the ids of the tasks that changed, each logged as a `remote-claim` entry.
pub fn reconcile(board: &Board) -> Result<Vec<String>> {
    let remote = super::remote(board)?.unwrap_or_default();
    let mut changed = Vec::new();
    for record in all_known(board)? {
        if crate::id::validate(&record.task).is_err() {
            continue;
        }
        let path = board.doc_path(Region::Tasks, &record.task);
        if !path.exists() {
            continue;
        }
        let outcome = crate::ops::mutate(board, Region::Tasks, &record.task, None, |doc| {
            let local_later = doc
                .str("updated_at")
                .and_then(|t| DateTime::parse_from_rfc3339(t).ok())
                .is_some_and(|t| t.with_timezone(&Utc) > record.at);
            if local_later {
                return Ok(None);
            }
            Ok(follow(board, doc, SYNC_ACTOR, &remote, &record))
        })?;
        if outcome.changed() {
            changed.push(record.task);
        }
    }
    Ok(changed)
}

/// The claims this clone holds that the remote has not confirmed, as `(task, holder)`: a
/// held task whose record (as last fetched) names another holder or none (a `--local`
/// claim, one made before the board was connected). Empty on a board not connected. For
/// `tavern check`.
pub fn unconfirmed(board: &Board) -> Result<Vec<(String, String)>> {
    if super::remote(board)?.is_none() {
        return Ok(Vec::new());
    }
    let records: std::collections::HashMap<String, Record> = all_known(board)?
        .into_iter()
        .map(|r| (r.task.clone(), r))
        .collect();
    let w = &board.config.workflow;
    let scan = crate::scan::scan_matching(board, &[Region::Tasks], |d| {
        d.str("claimed_by").is_some_and(|a| !a.is_empty())
            && d.status()
                .is_some_and(|s| !w.is_claimable(s) && !w.is_terminal(s))
    })?;
    let mut out: Vec<(String, String)> = scan
        .docs
        .iter()
        .filter_map(|d| {
            let holder = d.str("claimed_by")?;
            let confirmed = records
                .get(d.id())
                .is_some_and(|r| r.agent == holder && r.held(board));
            (!confirmed).then(|| (d.id().to_string(), holder.to_string()))
        })
        .collect();
    out.sort();
    Ok(out)
}
