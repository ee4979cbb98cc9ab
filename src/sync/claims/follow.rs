//! Following the remote: a task of this clone is made to say what the remote's record of
//! it says (state and holder), after a lost race and at every `tavern sync`.

use crate::board::Board;
use crate::doc::edit::FieldEdit;
use crate::doc::{Document, Region};
use crate::error::Result;

use crate::ops::Locked;

use super::exchange::{all_known, git, is_ancestor, known, local_sha, set_local};
use super::record::Record;
use super::refname::{component, ref_name};

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
            crate::time::stamp_millis(record.at).into(),
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

/// What this clone's copy of a task last took into account (see [`settle`]).
#[derive(Debug, PartialEq, Eq)]
enum Seen {
    /// This record (its commit).
    Record(String),
    /// That there was no record, at this time: a move made here (`--local`) before this
    /// clone heard of any record of the task.
    Nothing(chrono::DateTime<chrono::Utc>),
}

fn seen(board: &Board, task: &str) -> Option<Seen> {
    let path = crate::layout::claim_seen(&board.root, &component(task));
    let text = std::fs::read_to_string(path).ok()?;
    let mut words = text.split_whitespace();
    match words.next()? {
        "none" => {
            let at = chrono::DateTime::parse_from_rfc3339(words.next()?).ok()?;
            Some(Seen::Nothing(at.with_timezone(&chrono::Utc)))
        }
        sha if sha.bytes().all(|b| b.is_ascii_hexdigit()) => Some(Seen::Record(sha.to_string())),
        _ => None,
    }
}

/// Notes that this clone's copy of `task` has taken its copy of the task's record into
/// account (or, with none, that there was none, and when). Called under the task's lock
/// after every write of the task on a connected board: the copy is as new as that record,
/// or newer (a move made here that the remote has not confirmed).
pub fn settle(board: &Board, task: &str) -> Result<()> {
    let path = crate::layout::claim_seen(&board.root, &component(task));
    let text = match local_sha(board, task)? {
        Some(sha) => format!("{sha}\n"),
        None => format!("none {}\n", crate::time::stamp_millis(crate::time::now())),
    };
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)
            .map_err(|e| crate::error::Error::io(dir, "create directory", e))?;
    }
    // Whole: one step back after a power loss only makes the next sync look at the task
    // again.
    crate::file::write(&path, text.as_bytes(), crate::file::Durability::Whole)
}

/// Whether `record` is news to a task copy that took `seen` into account: newer in the
/// task's history, or unrelated to it. Ordered by history (each record's parent is the one
/// it replaced); only a record of a task moved here before any record was known, which
/// shares no history with that move, is ordered by the two times (milliseconds).
fn is_news(board: &Board, record: &Record, seen: Option<&Seen>) -> Result<bool> {
    Ok(match seen {
        None => true,
        Some(Seen::Record(s)) if *s == record.sha => false,
        Some(Seen::Record(s)) => !is_ancestor(board, &record.sha, s)?,
        Some(Seen::Nothing(at)) => record.at > *at,
    })
}

/// Makes every task of this clone say what its copy of the remote's record says (as last
/// fetched, see [`super::fetch_all`]): state and holder, without ever moving a task back.
/// Under each task's lock it reads the record this clone has now and the one the task's
/// copy last took into account ([`settle`]): the same one, or a newer one that a fetch
/// started earlier replaced by an older one, leaves the task as it is (a move made here
/// since, `--local` or not, stays); a newer record is followed. Records are ordered by
/// their history (each record's parent is the one it replaced), never by clocks.
/// Returns the ids of the tasks that changed, each logged as a `remote-claim` entry.
pub fn reconcile(board: &Board) -> Result<Vec<String>> {
    reconcile_listed(board, all_known(board)?)
}

/// [`reconcile`] over `records`, this clone's copies of the records as listed a moment ago
/// (by [`super::fetch_all`]): each task's record is read again under its lock when its copy
/// moved since.
pub fn reconcile_listed(board: &Board, records: Vec<Record>) -> Result<Vec<String>> {
    let remote = super::remote(board)?.unwrap_or_default();
    let mut changed = Vec::new();
    for listed in records {
        let task = listed.task.clone();
        if crate::id::validate(&task).is_err() {
            continue;
        }
        if !board.doc_path(Region::Tasks, &task).exists() {
            continue;
        }
        let locked = match Locked::take(board, Region::Tasks, &task, None) {
            Ok(locked) => locked,
            // Archived (or removed) since it was looked at: nothing left here to follow
            // the record, and the rest of the exchange goes on.
            Err(crate::error::Error::NotFound { .. }) => continue,
            Err(e) => return Err(e),
        };
        let Some(sha) = local_sha(board, &task)? else {
            continue;
        };
        let record = if sha == listed.sha {
            listed
        } else {
            match known(board, &task)? {
                Some(r) => r,
                None => continue,
            }
        };
        let seen = seen(board, &task);
        if !is_news(board, &record, seen.as_ref())? {
            if let Some(Seen::Record(newer)) = &seen
                && *newer != record.sha
            {
                // A fetch that began before this clone's own confirmed move put the older
                // record back: keep the newer one.
                let _ = set_local(board, &git(board), &ref_name(&task), newer);
            }
            continue;
        }
        match follow(board, &locked.doc, SYNC_ACTOR, &remote, &record) {
            Some(change) => {
                locked.write_then(board, change, |_| settle(board, &task))?;
                changed.push(task);
            }
            None => settle(board, &task)?,
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
