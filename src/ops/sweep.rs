//! Sweeps: a claim is a lease. A task claimed by a registered agent that has not been seen
//! within the board's lease (and whose process, on this host, is gone) goes back to the
//! pool, and the log says which agent, since when, and why.
//!
//! Cheap on big boards: it looks at the agent cards (a handful of files) first, and only
//! scans the tasks when an agent has gone stale since its last sweep.

use chrono::Utc;

use crate::agents::{self, Agent};
use crate::board::Board;
use crate::doc::Region;
use crate::doc::edit::FieldEdit;
use crate::error::{Kind, Result};
use crate::log::Entry;
use crate::scan;
use crate::sync::claims;

use super::{Change, Locked};

/// The actor the log names for releases made by a sweep.
pub const SWEEPER: &str = "tavern-sweep";

#[derive(Clone, Debug, serde::Serialize)]
pub struct Released {
    pub task: String,
    pub agent: String,
    pub last_seen: String,
    pub reason: String,
}

fn marker_path(board: &Board, agent: &str) -> std::path::PathBuf {
    crate::layout::swept_marker(&board.root, agent)
}

fn why(agent: &Agent, board: &Board) -> String {
    let lease = &board.config.lease;
    let seen = if agent.last_seen == chrono::DateTime::<Utc>::UNIX_EPOCH {
        "ever (no heartbeat)".to_string()
    } else {
        crate::time::stamp(agent.last_seen)
    };
    match (agent.host(), agent.pid()) {
        (Some(h), Some(pid)) if h == agents::host_name() => {
            format!(
                "lease expired: {} not seen since {seen} (lease {lease}) and its pid {pid} on {h} is gone",
                agent.id()
            )
        }
        _ => format!(
            "lease expired: {} not seen since {seen} (lease {lease})",
            agent.id()
        ),
    }
}

/// The agent whose claim a sweep's release note says it released (see [`why`]).
pub fn released_claim_of(note: &str) -> Option<&str> {
    let (agent, _) = note
        .strip_prefix("lease expired: ")?
        .split_once(" not seen since ")?;
    Some(agent)
}

/// Releases every claim of `agent` (from the states the workflow lets `release` leave).
pub fn release_claims_of(
    board: &Board,
    actor: &str,
    agent: &str,
    reason: &str,
) -> Result<Vec<String>> {
    Ok(release_all(board, actor, agent, reason)?.released)
}

/// What [`release_all`] did with an agent's claims.
struct Releases {
    released: Vec<String>,
    /// Claims the agent still holds: the remote did not confirm their release (offline, or
    /// its answer lost), or its record of them is not expired. The next sweep looks again.
    kept: Vec<String>,
}

fn release_all(board: &Board, actor: &str, agent: &str, reason: &str) -> Result<Releases> {
    let workflow = &board.config.workflow;
    let mut out = Releases {
        released: Vec::new(),
        kept: Vec::new(),
    };
    let Some(release) = workflow.transition("release") else {
        return Ok(out);
    };
    let held = scan::scan_matching(board, &[Region::Tasks], |d| {
        d.str("claimed_by") == Some(agent)
            && d.status().is_some_and(|s| workflow.allows_from(release, s))
    })?;
    // On a connected board the remote confirms each release (DESIGN §12): an agent's own
    // release like any move; a sweep's only if the remote's record expired too.
    let remote = claims::remote(board)?;
    for doc in held.docs {
        let id = doc.file_id.clone();
        match release_one(board, actor, agent, reason, &id, remote.as_deref())? {
            Release::Released => out.released.push(id),
            Release::Kept => out.kept.push(id),
            Release::NotHeld => {}
        }
    }
    Ok(out)
}

/// What became of one claim a release was asked of.
#[derive(Debug, PartialEq)]
enum Release {
    Released,
    /// The agent no longer held it (it came back and moved on, another clone's record
    /// says someone else holds it).
    NotHeld,
    /// The agent holds it still (see [`Releases::kept`]).
    Kept,
}

/// Releases `agent`'s claim of task `id` if it still holds it (re-checked under the lock:
/// the agent may have come back or moved on).
fn release_one(
    board: &Board,
    actor: &str,
    agent: &str,
    reason: &str,
    id: &str,
    remote: Option<&str>,
) -> Result<Release> {
    let workflow = &board.config.workflow;
    let Some(release) = workflow.transition("release") else {
        return Ok(Release::NotHeld);
    };
    let locked = Locked::take(board, Region::Tasks, id, None)?;
    let doc = &locked.doc;
    let status = doc.status().unwrap_or("").to_string();
    if doc.str("claimed_by") != Some(agent) || !workflow.allows_from(release, &status) {
        return Ok(Release::NotHeld);
    }
    // What this copy took into account follows every write on a connected board.
    let settle = |_: &super::Outcome| match remote {
        Some(_) => claims::settle(board, id),
        None => Ok(()),
    };
    let mut pushed = None;
    if let Some(r) = remote {
        let step = claims::Step {
            task: doc.id(),
            actor: agent,
            claim: false,
            from: &status,
            to: &release.to,
            force: false,
            open: false,
            seen_holder: Some(agent),
            local_holder: None,
            expired_hold_of: (actor != agent).then_some(agent),
        };
        match claims::confirm(board, r, &step) {
            Ok(claims::Confirmed::Pushed(p)) => pushed = Some(p),
            Ok(claims::Confirmed::Lost { remote, record }) => {
                let still = record.agent == agent && record.held(board);
                if let Some(change) = claims::follow(board, doc, actor, &remote, &record) {
                    locked.write_then(board, change, settle)?;
                }
                return Ok(if still {
                    Release::Kept
                } else {
                    Release::NotHeld
                });
            }
            Ok(claims::Confirmed::NoRecord) => return Ok(Release::Kept),
            // A sweep offline (or whose answer was lost) keeps the claim here; the next
            // sweep looks again. Its owner's own release does not.
            Err(e) if matches!(e.kind(), Kind::Unconfirmed | Kind::Unknown) && actor != agent => {
                return Ok(Release::Kept);
            }
            Err(e) => return Err(e),
        }
    }
    let entry = Entry {
        actor: actor.into(),
        op: "release".into(),
        from: Some(status.clone()),
        to: Some(release.to.clone()),
        note: Some(reason.into()),
        ..Entry::default()
    };
    let edits = vec![
        FieldEdit::Set("status".into(), release.to.clone().into()),
        FieldEdit::Unset("claimed_by".into()),
        FieldEdit::Unset("claimed_at".into()),
    ];
    let change = Change {
        edits,
        body: None,
        entry,
    };
    match &pushed {
        Some(p) => super::write_confirmed(board, locked, change, p)?,
        None => locked.write_then(board, change, settle)?,
    };
    Ok(Release::Released)
}

/// Whether `agent` is gone (deregistered, or stale) and has been for longer than the board
/// keeps such cards.
fn long_gone(agent: &Agent, board: &Board, now: chrono::DateTime<Utc>) -> bool {
    (agent.gone() || agent.stale(board, now)) && now - agent.last_seen > agents::keep_gone(board)
}

/// Runs a sweep and returns what it released. Cards of agents gone for longer than the
/// board's `archive_agents_after` are archived (their claims given back first).
pub fn sweep(board: &Board) -> Result<Vec<Released>> {
    let now = Utc::now();
    let mut out = Vec::new();
    let all = agents::all(board)?;
    for agent in &all {
        if agent.gone() || !agent.stale(board, now) {
            continue;
        }
        let seen = crate::time::stamp(agent.last_seen);
        let marker = marker_path(board, agent.id());
        if std::fs::read_to_string(&marker).is_ok_and(|m| m == seen) {
            continue; // Already swept for this silence.
        }
        let reason = why(agent, board);
        // Its holds on resources are leases too.
        // On a connected board the remote's records drop them first; one that cannot be
        // told keeps them (until they expire), and the next sweep tries again.
        let mut holds_kept = false;
        if board.root.join(crate::holds::FILE).exists() {
            match crate::holds::release(
                board,
                SWEEPER,
                agent.id(),
                &crate::holds::Which::All,
                false,
                &reason,
                false,
            ) {
                Ok(_) => {}
                Err(e) if matches!(e.kind(), Kind::Unconfirmed | Kind::Unknown) => {
                    holds_kept = true;
                }
                Err(e) => return Err(e),
            }
        }
        let releases = release_all(board, SWEEPER, agent.id(), &reason)?;
        for task in releases.released {
            out.push(Released {
                task,
                agent: agent.id().to_string(),
                last_seen: seen.clone(),
                reason: reason.clone(),
            });
        }
        if !releases.kept.is_empty() || holds_kept {
            // A claim whose release the remote did not confirm stays a lease: the next
            // sweep tries it again, so no marker says this silence was dealt with.
            continue;
        }
        if let Some(dir) = marker.parent() {
            let _ = std::fs::create_dir_all(dir);
        }
        // A cache: without it the next sweep releases this agent's claims again, and finds
        // none left to release.
        let _ = crate::file::write(&marker, seen.as_bytes(), crate::file::Durability::Cache);
    }
    for agent in all.iter().filter(|a| long_gone(a, board, now)) {
        let why = format!(
            "archived: {} gone since {}",
            agent.id(),
            crate::time::stamp(agent.last_seen)
        );
        // A stale agent's claims went back above; one that still holds a task (a release
        // the remote did not confirm) keeps its card, so that its claim stays a lease.
        let holds = scan::scan_matching(board, &[Region::Tasks], |d| {
            d.str("claimed_by") == Some(agent.id())
                && !d
                    .status()
                    .is_some_and(|s| board.config.workflow.is_terminal(s))
        })?;
        if !holds.docs.is_empty() {
            continue;
        }
        agents::archive_card(board, SWEEPER, agent.id(), &why, |a| {
            long_gone(a, board, now)
        })?;
        let _ = std::fs::remove_file(marker_path(board, agent.id()));
    }
    Ok(out)
}
