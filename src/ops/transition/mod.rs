//! Workflow transitions, claims included: the one place that decides whether a task may
//! move, under its lock.

mod decide;
mod next;

pub use decide::{Move, Plan, Request, Swept};
pub use next::{Row, claim_next_with, ready, ready_heads, ready_page, ready_rows};

use crate::board::Board;
use crate::doc::{Document, Region};
use crate::error::{Error, Result};
use crate::store;
use crate::sync::claims;
use crate::workflow::{By, CLAIM};

use super::{Change, Locked, Outcome};

#[derive(Clone, Debug, Default)]
pub struct Options {
    pub force: bool,
    pub if_rev: Option<u64>,
    pub note: Option<String>,
    /// The move is the answer to a question the task waited for (`unblock` after `answer`):
    /// it is not an override of the claimant, who asked for exactly that.
    pub answered: bool,
    /// On a board connected to a remote: act on this clone alone, without the remote's
    /// confirmation (another machine may claim the same task meanwhile).
    pub local: bool,
}

/// Why a task's dependencies keep it from being claimed, or None when they are all done.
fn unmet_dependencies(board: &Board, doc: &Document) -> Option<String> {
    let mut waiting = Vec::new();
    for dep in doc.list("depends_on") {
        let state = super::graph::read_task(board, &dep)
            .map(|d| d.status().unwrap_or("no status").to_string());
        match state {
            Some(s) if board.config.workflow.is_success(&s) => {}
            Some(s) => waiting.push(format!("{dep} ({s})")),
            None => waiting.push(format!("{dep} (missing)")),
        }
    }
    if waiting.is_empty() {
        None
    } else {
        Some(waiting.join(", "))
    }
}

/// The last log entry about `doc` that `pred` accepts. Reads the log from shortly before
/// the document's last write, and the whole log only if that finds none.
fn last_entry(
    board: &Board,
    doc: &Document,
    pred: impl Fn(&crate::log::Entry) -> bool,
) -> Result<Option<crate::log::Entry>> {
    let path = doc.rel_path();
    let last = |from: u64| -> Result<Option<crate::log::Entry>> {
        let (entries, _, _) = crate::log::read_matching(board, from, Some(&path))?;
        Ok(entries.into_iter().rev().find(|e| e.doc == path && pred(e)))
    };
    let since = doc
        .str("updated_at")
        .and_then(|t| chrono::DateTime::parse_from_rfc3339(t).ok())
        .map(|t| crate::log::offset_near_time(board, t.with_timezone(&chrono::Utc)))
        .transpose()?
        .unwrap_or(0);
    match last(since)? {
        Some(e) => Ok(Some(e)),
        None if since > 0 => last(0),
        None => Ok(None),
    }
}

/// Who moved the task into the state it is in, as the log says: the actor of the last
/// entry about it that led there (a follow of the remote's record names nobody).
fn moved_in_by(board: &Board, doc: &Document) -> Result<Option<String>> {
    let status = doc.status().unwrap_or("");
    Ok(last_entry(board, doc, |e| e.to.as_deref() == Some(status))?
        .filter(|e| e.op != "remote-claim")
        .map(|e| e.actor))
}

/// The sweep's release of `actor`'s claim of the task, if that is the last release the
/// log holds of it: when and why, for a former claimant who comes back.
fn swept_claim(board: &Board, doc: &Document, actor: &str) -> Result<Option<Swept>> {
    let release = last_entry(board, doc, |e| e.op == "release")?;
    Ok(release.and_then(|e| {
        let note = e.note?;
        let swept = e.actor == super::sweep::SWEEPER
            && super::sweep::released_claim_of(&note) == Some(actor);
        swept.then_some(Swept {
            at: e.at,
            reason: note,
        })
    }))
}

/// Reads task `id` without its lock (to decide what to do before taking it). `tavern sync`
/// writing the board replaces a changed task the way git does, removing the file before it
/// writes the new one, and holds the log's lock while it does: a task not found, or not
/// whole, is read again once that is over.
fn read_unlocked(board: &Board, id: &str) -> Result<Document> {
    match store::read_doc(board, Region::Tasks, id) {
        Err(Error::NotFound { .. } | Error::InvalidDoc { .. }) => {
            let _settled = store::lock(board, crate::layout::LOG_LOCK)?;
            store::read_doc(board, Region::Tasks, id)
        }
        read => read,
    }
}

/// Runs transition `name` on task `id` as `actor`: gathers what the decision needs
/// (completion checks, capabilities, the remote), then under the task's lock decides
/// ([`decide::decide`]) and applies the plan ([`apply`]).
pub fn transition(
    board: &Board,
    actor: &str,
    id: &str,
    name: &str,
    opts: &Options,
) -> Result<Outcome> {
    let workflow = &board.config.workflow;
    let t = decide::lookup(workflow, name)?;
    if name == CLAIM {
        if let Some(reason) = board.paused() {
            return Err(Error::Paused { reason });
        }
        // A claim is a lease: give stale agents' claims back before deciding.
        super::sweep::sweep(board)?;
    }
    let mut req = Request {
        name,
        actor,
        opts,
        remote: None,
        checked_rev: None,
        waiting_for: None,
        capabilities: None,
        now: crate::time::now(),
        human: board.config.humans.iter().any(|h| h == actor),
        moved_in_by: None,
        swept: None,
    };
    // Completion checks may run commands for minutes: they run before the lock, and the
    // write happens only if the task is still the version that was checked.
    if workflow.is_success(&t.to) {
        let doc = read_unlocked(board, id)?;
        if t.by == By::Reviewer {
            req.moved_in_by = moved_in_by(board, &doc)?;
        }
        // Run nobody's checks for a transition that will be refused anyway.
        if decide::worth_checking(workflow, t, &doc, &req) {
            super::completion::check(board, &doc, name)?;
            req.checked_rev = Some(doc.rev());
        }
    }
    // A registered agent claims only what its capabilities cover, by id as by --next.
    if name == CLAIM {
        req.capabilities = crate::agents::held_to(board, actor)?;
    }
    // A connected board's claims are confirmed by its remote (DESIGN §12).
    let remote = claims::remote(board)?;
    req.remote = remote.as_deref();
    let locked = Locked::take(board, Region::Tasks, id, opts.if_rev)?;
    if name == CLAIM {
        req.waiting_for = unmet_dependencies(board, &locked.doc);
    }
    if t.by == By::Reviewer {
        req.moved_in_by = moved_in_by(board, &locked.doc)?;
    }
    // A former claimant refused a move: was its claim released by the sweep?
    let owner = locked.doc.str("claimed_by").filter(|o| !o.is_empty());
    if name != CLAIM
        && owner != Some(actor)
        && !workflow.allows_from(t, locked.doc.status().unwrap_or(""))
    {
        req.swept = swept_claim(board, &locked.doc, actor)?;
    }
    req.now = crate::time::now();
    match decide::decide(workflow, &locked.doc, &req)? {
        Plan::Unchanged => Ok(locked.unchanged()),
        Plan::Move(m) => apply(board, locked, &req, *m),
    }
}

/// Applies a decided move to the task held in `locked`: on a connected board the remote
/// confirms it first (a lost race makes this copy follow the winner's record, and fails),
/// then the task is written and the move logged.
fn apply(board: &Board, locked: Locked, req: &Request, mut m: Move) -> Result<Outcome> {
    let id = locked.doc.id().to_string();
    // On a connected board, what this copy took into account follows every write.
    let settle = |_: &Outcome| match req.remote {
        Some(_) => claims::settle(board, &id),
        None => Ok(()),
    };
    let (Some(confirm), Some(remote)) = (&m.confirm, req.remote) else {
        return locked.write_then(board, m.into_change(), settle);
    };
    let doc = &locked.doc;
    let step = claims::Step {
        task: doc.id(),
        actor: req.actor,
        claim: confirm.claim,
        from: &confirm.from,
        to: &confirm.to,
        force: confirm.force,
        open: confirm.open,
        seen_holder: confirm.holder.as_deref(),
        local_holder: confirm.local_holder.as_deref(),
        expired_hold_of: None,
    };
    match claims::confirm(board, remote, &step)? {
        claims::Confirmed::Pushed(p) => {
            if let Some(old) = &p.took_over {
                let took = format!(
                    "took over from {}: lease expired on the remote '{remote}' (last renewed {})",
                    old.agent,
                    crate::time::stamp(old.at)
                );
                m.entry.note = Some(decide::prefixed(&took, m.entry.note.take()));
            }
            super::write_confirmed(board, locked, m.into_change(), &p)
        }
        claims::Confirmed::Lost { remote, record } => {
            let lost = Error::from(claims::Failure::Lost {
                path: doc.rel_path(),
                name: req.name.to_string(),
                status: confirm.from.clone(),
                actor: req.actor.to_string(),
                held: record.held(board),
                remote: remote.clone(),
                record: record.clone(),
            });
            if let Some(change) = claims::follow(board, doc, req.actor, &remote, &record) {
                locked.write_then(board, change, settle)?;
            }
            Err(lost)
        }
        claims::Confirmed::NoRecord => Err(Error::conflict(
            doc.rel_path(),
            format!(
                "already claimed by {} (status {})",
                confirm.local_holder.as_deref().unwrap_or_default(),
                confirm.from
            ),
        )),
    }
}

impl Move {
    fn into_change(self) -> Change {
        Change {
            edits: self.edits,
            body: None,
            entry: self.entry,
        }
    }
}

/// `move ID STATE`: whichever transition leads from the current state to STATE.
pub fn move_to(
    board: &Board,
    actor: &str,
    id: &str,
    target: &str,
    opts: &Options,
) -> Result<Outcome> {
    let workflow = &board.config.workflow;
    if !workflow.is_state(target) {
        return Err(Error::usage(format!(
            "unknown state '{target}'; this board's states are: {}",
            workflow.states.join(", ")
        )));
    }
    let doc = read_unlocked(board, id)?;
    let status = doc.status().unwrap_or("");
    match workflow.transition_to(status, target) {
        Some(name) => transition(board, actor, id, name, opts),
        None => {
            let allowed: Vec<String> = workflow
                .allowed_from(status)
                .into_iter()
                .filter_map(|n| workflow.transition(n).map(|t| format!("{} ({n})", t.to)))
                .collect();
            Err(Error::conflict(
                doc.rel_path(),
                format!(
                    "no transition leads from {status} to {target}; from {status} it can go to: {}",
                    if allowed.is_empty() {
                        "nothing (it is final)".to_string()
                    } else {
                        allowed.join(", ")
                    }
                ),
            ))
        }
    }
}
