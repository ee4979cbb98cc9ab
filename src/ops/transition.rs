//! Workflow transitions, claims included: the one place that decides whether a task may
//! move, under its lock.

use crate::board::Board;
use crate::doc::edit::FieldEdit;
use crate::doc::{Document, Region};
use crate::error::{Error, Input, Kind, Result};
use crate::log::Entry;
use crate::msg;
use crate::query::Query;
use crate::scan;
use crate::store;
use crate::sync::claims;
use crate::workflow::CLAIM;

use super::{Change, Outcome, mutate};

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

/// Runs transition `name` on task `id` as `actor`.
pub fn transition(
    board: &Board,
    actor: &str,
    id: &str,
    name: &str,
    opts: &Options,
) -> Result<Outcome> {
    let workflow = &board.config.workflow;
    let Some(t) = workflow.transition(name) else {
        let names: Vec<&str> = workflow.transitions.keys().map(String::as_str).collect();
        return Err(Error::usage(format!(
            "unknown transition '{name}'; this board's workflow has: {}",
            names.join(", ")
        )));
    };
    if name == CLAIM {
        if let Some(reason) = board.paused() {
            return Err(Error::Paused { reason });
        }
        // A claim is a lease: give stale agents' claims back before deciding.
        super::sweep::sweep(board)?;
    }
    // Completion checks may run commands for minutes: they run before the lock, and the
    // write below happens only if the task is still the version that was checked.
    let checked_rev = if workflow.is_success(&t.to) {
        let doc = store::read_doc(board, Region::Tasks, id)?;
        let status = doc.status().unwrap_or("");
        let owner = doc.str("claimed_by").filter(|o| !o.is_empty());
        let may =
            opts.force || t.by == crate::workflow::By::Any || owner.is_none_or(|o| o == actor);
        // Run nobody's checks for a transition that will be refused anyway.
        if workflow.allows_from(t, status) && may {
            super::completion::check(board, &doc, name)?;
            Some(doc.rev())
        } else {
            None
        }
    } else {
        None
    };
    // A registered agent claims only what its capabilities cover, by id as by --next.
    let capabilities = if name == CLAIM {
        crate::agents::read(board, actor)?.map(|a| a.capabilities())
    } else {
        None
    };
    // A connected board's claims are confirmed by its remote (DESIGN §12).
    let remote = if opts.local {
        None
    } else {
        claims::remote(board)?
    };
    let mut lost: Option<Error> = None;
    let mut pushed: Option<Box<claims::Pushed>> = None;
    let result = mutate(board, Region::Tasks, id, opts.if_rev, |doc| {
        if let Some(rev) = checked_rev
            && doc.rev() != rev
        {
            return Err(Error::conflict(
                doc.rel_path(),
                format!(
                    "changed while its completion checks ran (rev {rev} -> {}); retry",
                    doc.rev()
                ),
            ));
        }
        let path = doc.rel_path();
        let status = doc.status().unwrap_or("");
        if !workflow.is_state(status) {
            return Err(Error::invalid_doc(
                &path,
                format!(
                    "status '{status}' is not a state of the workflow ({})",
                    workflow.states.join(", ")
                ),
            ));
        }
        let owner = doc.str("claimed_by").filter(|s| !s.is_empty());
        // A claim of a task this copy says another agent holds: on a connected board the
        // remote decides whether that hold expired and may be taken over.
        let mut takeover_of = None;
        if name == CLAIM {
            if owner == Some(actor)
                && !workflow.is_claimable(status)
                && !workflow.is_terminal(status)
            {
                return Ok(None); // Re-claiming what you hold is a no-op success.
            }
            // A finished task is not "claimed": the workflow check below says it is final.
            if let Some(owner) = owner
                && !workflow.is_claimable(status)
                && !workflow.is_terminal(status)
            {
                if remote.is_none() {
                    return Err(Error::conflict(
                        &path,
                        format!("already claimed by {owner} (status {status})"),
                    ));
                }
                takeover_of = Some(owner);
            }
        }
        if takeover_of.is_none() && !workflow.allows_from(t, status) {
            let allowed = workflow.allowed_from(status);
            let mut allowed = if allowed.is_empty() {
                "none (it is final)".to_string()
            } else {
                allowed.join(", ")
            };
            // Fencing: tell a former claimant who holds the task now.
            if let Some(o) = owner.filter(|o| *o != actor && name != CLAIM) {
                allowed.push_str(&format!("; it is held by {o}, not you"));
            }
            return Err(Error::conflict(
                &path,
                format!(
                    "transition '{name}' is not allowed: the task's status is {status}; allowed from {status}: {allowed}"
                ),
            ));
        }
        let mut forced = false;
        if let Some(owner) = owner
            && owner != actor
            && name != CLAIM
            && t.by == crate::workflow::By::Claimant
        {
            if opts.answered {
                // Not forced: the claimant's own question was answered.
            } else if !opts.force {
                return Err(Error::request_at(
                    Kind::Conflict,
                    &path,
                    msg!(
                        format!(
                            "claimed by {owner}; only the claimant may move it (you are {actor}; a human may override with "
                        ),
                        Input::Force,
                        ")"
                    ),
                ));
            } else {
                forced = true;
            }
        }
        if name == CLAIM
            && let Some(waiting) = unmet_dependencies(board, doc)
        {
            return Err(Error::conflict(
                &path,
                format!("not claimable yet: waits for {waiting}"),
            ));
        }
        if let Some(caps) = &capabilities {
            let missing: Vec<String> = doc
                .list("needs")
                .into_iter()
                .filter(|n| !caps.contains(n))
                .collect();
            if !missing.is_empty() {
                return Err(Error::conflict(
                    &path,
                    format!(
                        "needs {}, which {actor} does not have (its capabilities: {})",
                        missing.join(", "),
                        if caps.is_empty() {
                            "none".to_string()
                        } else {
                            caps.join(", ")
                        }
                    ),
                ));
            }
        }
        let mut edits = vec![FieldEdit::Set("status".into(), t.to.clone().into())];
        if name == CLAIM {
            edits.push(FieldEdit::Set("claimed_by".into(), actor.into()));
            edits.push(FieldEdit::Set(
                "claimed_at".into(),
                crate::time::stamp(crate::time::now()).into(),
            ));
        } else if workflow.is_claimable(&t.to) {
            // Back in the pool: the claim is gone.
            edits.push(FieldEdit::Unset("claimed_by".into()));
            edits.push(FieldEdit::Unset("claimed_at".into()));
        }
        let op = match name {
            CLAIM => "claim",
            "release" => "release",
            _ => "transition",
        };
        let mut note = match (forced, owner, &opts.note) {
            (true, Some(o), Some(n)) => Some(format!("forced over {o}: {n}")),
            (true, Some(o), None) => Some(format!("forced over {o}")),
            (_, _, n) => n.clone(),
        };
        if let Some(r) = &remote
            && (name == CLAIM || owner.is_some())
        {
            let step = claims::Step {
                task: doc.id(),
                actor,
                claim: name == CLAIM,
                from: status,
                to: &t.to,
                force: forced,
                local_holder: takeover_of,
                expired_hold_of: None,
            };
            match claims::confirm(board, r, &step)? {
                claims::Confirmed::Pushed(p) => {
                    if let Some(old) = &p.took_over {
                        let took = format!(
                            "took over from {}: lease expired on the remote '{r}' (last renewed {})",
                            old.agent,
                            crate::time::stamp(old.at)
                        );
                        note = Some(match note {
                            Some(n) => format!("{took}; {n}"),
                            None => took,
                        });
                    }
                    pushed = Some(p);
                }
                claims::Confirmed::Lost { remote, record } => {
                    lost = Some(Error::conflict(
                        &path,
                        claims::lost_message(board, name, status, actor, &remote, &record),
                    ));
                    return Ok(claims::follow(board, doc, actor, &remote, &record));
                }
                claims::Confirmed::NoRecord => {
                    return Err(Error::conflict(
                        &path,
                        format!(
                            "already claimed by {} (status {status})",
                            takeover_of.unwrap_or_default()
                        ),
                    ));
                }
            }
        } else if opts.local
            && (name == CLAIM || owner.is_some())
            && let Some(r) = claims::remote(board)?
        {
            let local = format!("local only: not confirmed by the remote '{r}'");
            note = Some(match note {
                Some(n) => format!("{local}; {n}"),
                None => local,
            });
        }
        let entry = Entry {
            actor: actor.to_string(),
            op: op.into(),
            transition: (op == "transition").then(|| name.to_string()),
            from: Some(status.to_string()),
            to: Some(t.to.clone()),
            force: forced,
            note,
            ..Entry::default()
        };
        Ok(Some(Change {
            edits,
            body: None,
            entry,
        }))
    });
    match result {
        Err(e) => {
            // The remote took a record this clone failed to write: take it back.
            if let Some(p) = &pushed {
                claims::undo(board, p);
            }
            Err(e)
        }
        Ok(outcome) => match lost {
            Some(e) => Err(e),
            None => Ok(outcome),
        },
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
    let doc = store::read_doc(board, Region::Tasks, id)?;
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

/// The tasks that are claimable now, best first: claimable state, no live claim, every
/// dependency done, matching `query`.
pub fn ready(board: &Board, query: &Query) -> Result<(Vec<Document>, Vec<scan::Skipped>)> {
    super::sweep::sweep(board)?;
    let workflow = &board.config.workflow;
    let now = crate::time::now();
    // Keep only the candidates while reading; their dependencies are read one by one
    // afterwards (with a cache), so a big board of finished work is never held in memory.
    let scan = scan::scan_matching(board, &[Region::Tasks], |d| {
        d.status().is_some_and(|s| workflow.is_claimable(s)) && query.matches(d, now)
    })?;
    let mut done: std::collections::HashMap<String, bool> = std::collections::HashMap::new();
    let mut is_done = |dep: &str| {
        *done.entry(dep.to_string()).or_insert_with(|| {
            super::graph::read_task(board, dep)
                .is_some_and(|d| d.status().is_some_and(|s| workflow.is_success(s)))
        })
    };
    let mut ready: Vec<Document> = scan
        .docs
        .into_iter()
        .filter(|d| d.list("depends_on").iter().all(|dep| is_done(dep)))
        .collect();
    scan::sort_best_first(&mut ready);
    Ok((ready, scan.skipped))
}

/// `claim --next`: claims the best ready task, moving on to the next if another agent
/// wins the race for it. Returns None when nothing is claimable.
pub fn claim_next(
    board: &Board,
    actor: &str,
    query: &Query,
) -> Result<(Option<Outcome>, Vec<scan::Skipped>)> {
    claim_next_with(board, actor, query, &Options::default())
}

/// `claim --next` with options (`local`).
pub fn claim_next_with(
    board: &Board,
    actor: &str,
    query: &Query,
    opts: &Options,
) -> Result<(Option<Outcome>, Vec<scan::Skipped>)> {
    if let Some(reason) = board.paused() {
        return Err(Error::Paused { reason });
    }
    let (candidates, skipped) = ready(board, query)?;
    // A registered agent only gets tasks whose `needs` its capabilities cover.
    let capabilities = crate::agents::read(board, actor)?.map(|a| a.capabilities());
    let capable = |doc: &Document| {
        capabilities
            .as_ref()
            .is_none_or(|caps| doc.list("needs").iter().all(|n| caps.contains(n)))
    };
    let mut candidates: Vec<Document> = candidates.into_iter().filter(|d| capable(d)).collect();
    // On a connected board: first the tasks whose record this clone has is still the
    // remote's (one ls-remote says which), then, only if none of those could be claimed,
    // the others, once their records are fetched.
    let remote = if opts.local {
        None
    } else {
        claims::remote(board)?
    };
    let mut later = Vec::new();
    if let Some(remote) = &remote {
        let survey = claims::survey(board, remote)?;
        let (now, changed): (Vec<Document>, Vec<Document>) = candidates
            .into_iter()
            .partition(|d| !survey.changed(d.id()));
        candidates = now;
        candidates.retain(|d| claims::worth_trying(board, survey.known.get(d.id()), actor));
        claims::spread(&mut candidates, actor);
        later = changed;
    }
    let opts = Options {
        local: opts.local,
        ..Options::default()
    };
    if let Some(outcome) = claim_first(board, actor, candidates, &opts)? {
        return Ok((Some(outcome), skipped));
    }
    if let Some(remote) = &remote
        && !later.is_empty()
    {
        let records = claims::fetch_for_next(board, remote)?;
        later.retain(|d| claims::worth_trying(board, records.get(d.id()), actor));
        claims::spread(&mut later, actor);
        if let Some(outcome) = claim_first(board, actor, later, &opts)? {
            return Ok((Some(outcome), skipped));
        }
    }
    Ok((None, skipped))
}

/// Claims the first of `candidates` it can, moving on when another agent wins one.
fn claim_first(
    board: &Board,
    actor: &str,
    candidates: Vec<Document>,
    opts: &Options,
) -> Result<Option<Outcome>> {
    for doc in candidates {
        match transition(board, actor, doc.id(), CLAIM, opts) {
            Ok(outcome) => return Ok(Some(outcome)),
            // Lost the race (or the task changed since the scan): try the next one.
            Err(e)
                if e.kind() == crate::error::Kind::Conflict
                    || e.kind() == crate::error::Kind::NotFound =>
            {
                continue;
            }
            Err(e) => return Err(e),
        }
    }
    Ok(None)
}
