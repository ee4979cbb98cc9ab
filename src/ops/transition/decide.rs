//! Whether a task may move, and what the move writes: a decision from the workflow, the
//! task as read under its lock, who acts and what was gathered before (dependencies,
//! capabilities, the remote, the clock). It reads nothing and writes nothing, so every
//! rule of the workflow is tested here on its own; [`super::transition`] gathers the facts
//! and applies the plan.

use chrono::{DateTime, Utc};

use crate::doc::Document;
use crate::doc::edit::FieldEdit;
use crate::error::{Error, Input, Kind, Result};
use crate::log::Entry;
use crate::msg;
use crate::workflow::{By, CLAIM, Transition, Workflow};

use super::Options;

/// Who asks for which move, and the facts about the board the decision needs.
#[derive(Clone, Debug)]
pub struct Request<'a> {
    /// The transition's name (`claim`, `start`, …).
    pub name: &'a str,
    pub actor: &'a str,
    pub opts: &'a Options,
    /// The remote the board is connected to, if any (asked to confirm unless `--local`).
    pub remote: Option<&'a str>,
    /// The rev whose completion checks passed (a move into a success state).
    pub checked_rev: Option<u64>,
    /// A claim: what the task's dependencies still wait for (None: all done).
    pub waiting_for: Option<String>,
    /// A claim by a registered agent: its capabilities.
    pub capabilities: Option<Vec<String>>,
    /// The time a claim records.
    pub now: DateTime<Utc>,
    /// The actor is listed under `humans:` in board.yaml (whose `--force` overrides the
    /// review rule).
    pub human: bool,
    /// A `by: reviewer` transition: who moved the task into its current state, as the log
    /// says (None: not known).
    pub moved_in_by: Option<String>,
    /// A move by a former claimant that the workflow refuses: the sweep's release of its
    /// claim, if that is what took the task from it.
    pub swept: Option<Swept>,
}

/// A sweep released a claim (the log's entry): when, and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Swept {
    pub at: String,
    pub reason: String,
}

/// What to do.
#[derive(Clone, Debug, PartialEq)]
pub enum Plan {
    /// Nothing to write: the actor re-claims what it holds.
    Unchanged,
    Move(Box<Move>),
}

/// A move to make: the task's new fields, the log entry, and what the remote must confirm
/// first on a connected board.
#[derive(Clone, Debug, PartialEq)]
pub struct Move {
    pub edits: Vec<FieldEdit>,
    pub entry: Entry,
    pub confirm: Option<Confirm>,
}

/// What a connected board's remote is asked to record before the write (see
/// [`crate::sync::claims::Step`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Confirm {
    pub claim: bool,
    pub from: String,
    pub to: String,
    pub force: bool,
    /// A move the workflow opens to others than the holder (`by: any`, `by: reviewer`),
    /// or the answer to the holder's question, made by someone else: the remote confirms
    /// it while its record is the hold this copy saw.
    pub open: bool,
    /// The holder this copy names.
    pub holder: Option<String>,
    /// A claim of a task this copy says another agent holds: the remote decides whether
    /// that hold expired and may be taken over.
    pub local_holder: Option<String>,
}

/// The workflow's transition called `name`; an unknown one is a usage error naming them.
pub fn lookup<'w>(workflow: &'w Workflow, name: &str) -> Result<&'w Transition> {
    workflow.transition(name).ok_or_else(|| {
        let names: Vec<&str> = workflow.transitions.keys().map(String::as_str).collect();
        Error::usage(format!(
            "unknown transition '{name}'; this board's workflow has: {}",
            names.join(", ")
        ))
    })
}

/// Whether a move into a success state is worth its completion checks before the lock:
/// not when the workflow or the claim would refuse it anyway.
pub fn worth_checking(workflow: &Workflow, t: &Transition, doc: &Document, req: &Request) -> bool {
    let status = doc.status().unwrap_or("");
    let owner = doc.str("claimed_by").filter(|o| !o.is_empty());
    let may = req.opts.force || t.by != By::Claimant || owner.is_none_or(|o| o == req.actor);
    workflow.allows_from(t, status)
        && may
        && own_review(t, owner, req).is_none_or(|_| req.opts.force && req.human)
}

/// Decides `req` for the task `doc` as read under its lock.
pub fn decide(workflow: &Workflow, doc: &Document, req: &Request) -> Result<Plan> {
    let t = lookup(workflow, req.name)?;
    let (name, actor) = (req.name, req.actor);
    let path = doc.rel_path();
    if let Some(rev) = req.checked_rev
        && doc.rev() != rev
    {
        return Err(Error::conflict(
            &path,
            format!(
                "changed while its completion checks ran (rev {rev} -> {}); retry",
                doc.rev()
            ),
        ));
    }
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
    let confirming = req.remote.is_some() && !req.opts.local;
    let held = !workflow.is_claimable(status) && !workflow.is_terminal(status);
    // A claim of a task this copy says another agent holds: on a connected board the
    // remote decides whether that hold expired and may be taken over.
    let mut takeover_of = None;
    if name == CLAIM {
        if owner == Some(actor) && held {
            return Ok(Plan::Unchanged); // Re-claiming what you hold is a no-op success.
        }
        // A finished task is not "claimed": the workflow check below says it is final.
        if let Some(owner) = owner
            && held
        {
            if !confirming {
                return Err(Error::conflict(
                    &path,
                    format!("already claimed by {owner} (status {status})"),
                ));
            }
            takeover_of = Some(owner);
        }
    }
    if takeover_of.is_none() && !workflow.allows_from(t, status) {
        return Err(not_allowed(workflow, &path, name, status, owner, req));
    }
    let forced = overrides_claimant(t, &path, owner, req)?;
    let self_review = match own_review(t, owner, req) {
        Some(_) if req.opts.force && req.human => true,
        Some(why) => return Err(refuse_own_review(&path, name, &why, req.actor)),
        None => false,
    };
    if name == CLAIM
        && let Some(waiting) = &req.waiting_for
    {
        return Err(Error::conflict(
            &path,
            format!("not claimable yet: waits for {waiting}"),
        ));
    }
    if let Some(caps) = &req.capabilities {
        lacks_capabilities(doc, &path, actor, caps)?;
    }
    let mut edits = vec![FieldEdit::Set("status".into(), t.to.clone().into())];
    if name == CLAIM {
        edits.push(FieldEdit::Set("claimed_by".into(), actor.into()));
        edits.push(FieldEdit::Set(
            "claimed_at".into(),
            crate::time::stamp_millis(req.now).into(),
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
    let mut note = match (forced, owner, &req.opts.note) {
        (true, Some(o), Some(n)) => Some(format!("forced over {o}: {n}")),
        (true, Some(o), None) => Some(format!("forced over {o}")),
        (_, _, n) => n.clone(),
    };
    if self_review {
        note = Some(prefixed(
            &format!("forced over the review rule: {actor} reviews its own task"),
            note,
        ));
    }
    // The remote confirms a claim and every move of a claimed task.
    let mut confirm = None;
    if name == CLAIM || owner.is_some() {
        match req.remote {
            Some(_) if confirming => {
                let other = owner.is_some_and(|o| o != actor);
                confirm = Some(Confirm {
                    claim: name == CLAIM,
                    from: status.to_string(),
                    to: t.to.clone(),
                    force: forced || self_review,
                    open: other && name != CLAIM && (t.by != By::Claimant || req.opts.answered),
                    holder: owner.map(str::to_string),
                    local_holder: takeover_of.map(str::to_string),
                });
            }
            Some(r) => {
                note = Some(prefixed(
                    &format!("local only: not confirmed by the remote '{r}'"),
                    note,
                ))
            }
            None => {}
        }
    }
    let entry = Entry {
        actor: actor.to_string(),
        op: op.into(),
        transition: (op == "transition").then(|| name.to_string()),
        from: Some(status.to_string()),
        to: Some(t.to.clone()),
        force: forced || self_review,
        note,
        ..Entry::default()
    };
    Ok(Plan::Move(Box::new(Move {
        edits,
        entry,
        confirm,
    })))
}

/// `first`, then `; note` if there is one.
pub fn prefixed(first: &str, note: Option<String>) -> String {
    match note {
        Some(n) => format!("{first}; {n}"),
        None => first.to_string(),
    }
}

/// The workflow does not allow `name` from `status`: say which transitions it allows, and
/// tell a former claimant (fencing) who holds the task now.
fn not_allowed(
    workflow: &Workflow,
    path: &str,
    name: &str,
    status: &str,
    owner: Option<&str>,
    req: &Request,
) -> Error {
    let actor = req.actor;
    let allowed = workflow.allowed_from(status);
    let mut allowed = if allowed.is_empty() {
        "none (it is final)".to_string()
    } else {
        allowed.join(", ")
    };
    if let Some(o) = owner.filter(|o| *o != actor && name != CLAIM) {
        allowed.push_str(&format!("; it is held by {o}, not you"));
    }
    // A former claimant whose lease expired is told so, rather than left to guess.
    if let Some(s) = &req.swept {
        allowed.push_str(&format!(
            "; {actor}'s claim was released by the sweep at {} ({}): claim it again if it is still to be done",
            s.at, s.reason
        ));
    }
    Error::conflict(
        path,
        format!(
            "transition '{name}' is not allowed: the task's status is {status}; allowed from {status}: {allowed}"
        ),
    )
}

/// Only the claimant moves a claimed task by a `by: claimant` transition: another actor
/// needs `--force` (true: the move is forced over the claimant, and logged so), unless
/// the move answers the claimant's own question.
fn overrides_claimant(
    t: &Transition,
    path: &str,
    owner: Option<&str>,
    req: &Request,
) -> Result<bool> {
    let Some(owner) = owner else {
        return Ok(false);
    };
    if owner == req.actor || req.name == CLAIM || t.by != By::Claimant || req.opts.answered {
        return Ok(false);
    }
    if !req.opts.force {
        return Err(Error::request_at(
            Kind::Conflict,
            path,
            msg!(
                format!(
                    "claimed by {owner}; only the claimant may move it (you are {}; a human may override with ",
                    req.actor
                ),
                Input::Force,
                ")"
            ),
        ));
    }
    Ok(true)
}

/// A `by: reviewer` transition asked by the task's claimant or by whoever moved it into
/// its current state: why it is the actor's own (None when it is someone else's).
fn own_review(t: &Transition, owner: Option<&str>, req: &Request) -> Option<String> {
    if t.by != By::Reviewer {
        return None;
    }
    let actor = req.actor;
    let claimed = owner == Some(actor);
    let moved = req.moved_in_by.as_deref() == Some(actor);
    match (claimed, moved) {
        (true, true) => Some(format!("{actor} claimed it and submitted it")),
        (true, false) => Some(format!("{actor} claimed it")),
        (false, true) => Some(format!("{actor} submitted it")),
        (false, false) => None,
    }
}

/// Review means someone else: exit 3 naming the rule and who may.
fn refuse_own_review(path: &str, name: &str, why: &str, actor: &str) -> Error {
    Error::request_at(
        Kind::Conflict,
        path,
        msg!(
            format!(
                "{actor} cannot {name} its own task ({why}): review means someone else (`{name}` is by: reviewer in board.yaml); another agent or a human may {name} it, a human listed under humans: may override with "
            ),
            Input::Force,
            ", and a board may allow self-review with by: any"
        ),
    )
}

/// A registered agent claims only what its capabilities cover.
fn lacks_capabilities(doc: &Document, path: &str, actor: &str, caps: &[String]) -> Result<()> {
    let missing = crate::agents::missing_needs(doc, Some(caps));
    if missing.is_empty() {
        return Ok(());
    }
    Err(Error::conflict(
        path,
        format!(
            "needs {}, which {actor} does not have (its capabilities: {})",
            missing.join(", "),
            if caps.is_empty() {
                "none".to_string()
            } else {
                caps.join(", ")
            }
        ),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::doc::Region;

    fn workflow() -> Workflow {
        crate::board::parse_config(crate::board::DEFAULT_BOARD_YAML)
            .expect("the default board.yaml parses")
            .workflow
    }

    /// A task `t1` with these extra frontmatter lines.
    fn task(fields: &str) -> Document {
        let raw = format!("---\nid: t1\ntitle: x\nrev: 3\n{fields}---\n");
        Document::parse(Region::Tasks, "t1", raw, Default::default()).expect("test task parses")
    }

    fn now() -> DateTime<Utc> {
        DateTime::parse_from_rfc3339("2026-11-25T10:00:00Z")
            .unwrap()
            .with_timezone(&Utc)
    }

    fn request<'a>(name: &'a str, actor: &'a str, opts: &'a Options) -> Request<'a> {
        Request {
            name,
            actor,
            opts,
            remote: None,
            checked_rev: None,
            waiting_for: None,
            capabilities: None,
            now: now(),
            human: false,
            moved_in_by: None,
            swept: None,
        }
    }

    fn plan(doc: &Document, req: &Request) -> Move {
        match decide(&workflow(), doc, req) {
            Ok(Plan::Move(m)) => *m,
            other => panic!("expected a move, got {other:?}"),
        }
    }

    fn refusal(doc: &Document, req: &Request) -> (Kind, String) {
        match decide(&workflow(), doc, req) {
            Err(e) => (e.kind(), e.to_string()),
            Ok(p) => panic!("expected a refusal, got {p:?}"),
        }
    }

    fn set(k: &str, v: &str) -> FieldEdit {
        FieldEdit::Set(k.into(), v.into())
    }

    #[test]
    fn a_claim_sets_the_holder_and_its_time_and_is_logged_as_a_claim() {
        let opts = Options::default();
        let m = plan(&task("status: pending\n"), &request("claim", "a1", &opts));
        assert_eq!(
            m.edits,
            vec![
                set("status", "claimed"),
                set("claimed_by", "a1"),
                set("claimed_at", "2026-11-25T10:00:00.000Z"),
            ]
        );
        assert_eq!((m.entry.op.as_str(), m.entry.transition), ("claim", None));
        assert_eq!(m.entry.from.as_deref(), Some("pending"));
        assert_eq!(m.entry.to.as_deref(), Some("claimed"));
        assert_eq!(m.confirm, None);
    }

    #[test]
    fn reclaiming_what_you_hold_changes_nothing() {
        let opts = Options::default();
        let doc = task("status: working\nclaimed_by: a1\n");
        assert_eq!(
            decide(&workflow(), &doc, &request("claim", "a1", &opts)).unwrap(),
            Plan::Unchanged
        );
    }

    #[test]
    fn a_claim_of_a_held_task_is_refused_naming_the_holder() {
        let opts = Options::default();
        let doc = task("status: working\nclaimed_by: a2\n");
        assert_eq!(
            refusal(&doc, &request("claim", "a1", &opts)),
            (
                Kind::Conflict,
                "tasks/t1.md: already claimed by a2 (status working)".into()
            )
        );
    }

    #[test]
    fn on_a_connected_board_a_claim_of_a_held_task_asks_the_remote_for_a_takeover() {
        let opts = Options::default();
        let doc = task("status: working\nclaimed_by: a2\n");
        let mut req = request("claim", "a1", &opts);
        req.remote = Some("origin");
        let m = plan(&doc, &req);
        assert_eq!(
            m.confirm,
            Some(Confirm {
                claim: true,
                from: "working".into(),
                to: "claimed".into(),
                force: false,
                open: false,
                holder: Some("a2".into()),
                local_holder: Some("a2".into()),
            })
        );
    }

    #[test]
    fn a_transition_the_workflow_does_not_allow_says_which_it_does() {
        let opts = Options::default();
        let doc = task("status: pending\n");
        assert_eq!(
            refusal(&doc, &request("submit", "a1", &opts)),
            (
                Kind::Conflict,
                "tasks/t1.md: transition 'submit' is not allowed: the task's status is pending; allowed from pending: claim, fail, cancel".into()
            )
        );
        let done = task("status: done\n");
        assert!(
            refusal(&done, &request("start", "a1", &opts))
                .1
                .ends_with("allowed from done: reopen")
        );
    }

    #[test]
    fn a_fenced_former_claimant_is_told_who_holds_the_task() {
        let opts = Options::default();
        let doc = task("status: claimed\nclaimed_by: a2\n");
        assert!(refusal(&doc, &request("submit", "a1", &opts)).1.ends_with(
            "allowed from claimed: release, start, fail, cancel; it is held by a2, not you"
        ));
    }

    #[test]
    fn a_claimant_whose_claim_the_sweep_released_is_told_when_and_why() {
        let opts = Options::default();
        let doc = task("status: pending\n");
        let mut req = request("start", "a1", &opts);
        req.swept = Some(Swept {
            at: "2026-11-25T09:00:00.000Z".into(),
            reason: "lease expired: a1 not seen since 2026-11-25T08:54:00Z (lease 5m)".into(),
        });
        assert_eq!(
            refusal(&doc, &req).1,
            "tasks/t1.md: transition 'start' is not allowed: the task's status is pending; allowed from pending: claim, fail, cancel; a1's claim was released by the sweep at 2026-11-25T09:00:00.000Z (lease expired: a1 not seen since 2026-11-25T08:54:00Z (lease 5m)): claim it again if it is still to be done"
        );
    }

    #[test]
    fn only_the_claimant_moves_a_claimed_task_unless_forced_or_answered() {
        let doc = task("status: working\nclaimed_by: a2\n");
        let opts = Options::default();
        let (kind, text) = refusal(&doc, &request("submit", "a1", &opts));
        assert_eq!(kind, Kind::Conflict);
        assert_eq!(
            text,
            "tasks/t1.md: claimed by a2; only the claimant may move it (you are a1; a human may override with force)"
        );
        let forced = Options {
            force: true,
            note: Some("stuck".into()),
            ..Options::default()
        };
        let m = plan(&doc, &request("submit", "alice", &forced));
        assert!(m.entry.force);
        assert_eq!(m.entry.note.as_deref(), Some("forced over a2: stuck"));
        let answered = Options {
            answered: true,
            ..Options::default()
        };
        let blocked = task("status: blocked\nclaimed_by: a2\n");
        let m = plan(&blocked, &request("unblock", "alice", &answered));
        assert!(!m.entry.force);
        assert_eq!(m.entry.note, None);
        assert_eq!(m.entry.transition.as_deref(), Some("unblock"));
    }

    #[test]
    fn a_reviewer_moves_a_task_it_neither_holds_nor_submitted() {
        let opts = Options::default();
        let doc = task("status: review\nclaimed_by: a2\n");
        let mut req = request("approve", "rev", &opts);
        req.moved_in_by = Some("a2".into());
        let m = plan(&doc, &req);
        assert!(!m.entry.force);
        assert_eq!(m.entry.note, None);
        assert_eq!(m.edits, vec![set("status", "done")]);
        assert_eq!(m.entry.transition.as_deref(), Some("approve"));
    }

    #[test]
    fn review_means_someone_else_unless_a_listed_human_forces_it() {
        let opts = Options::default();
        let doc = task("status: review\nclaimed_by: a1\n");
        let rule = "review means someone else (`approve` is by: reviewer in board.yaml); another agent or a human may approve it, a human listed under humans: may override with force, and a board may allow self-review with by: any";
        // The claimant, whoever submitted it, or both.
        let mut req = request("approve", "a1", &opts);
        assert_eq!(
            refusal(&doc, &req),
            (
                Kind::Conflict,
                format!("tasks/t1.md: a1 cannot approve its own task (a1 claimed it): {rule}")
            )
        );
        req.moved_in_by = Some("a1".into());
        assert_eq!(
            refusal(&doc, &req).1,
            format!(
                "tasks/t1.md: a1 cannot approve its own task (a1 claimed it and submitted it): {rule}"
            )
        );
        let mut req = request("approve", "a2", &opts);
        req.moved_in_by = Some("a2".into());
        assert_eq!(
            refusal(&doc, &req).1,
            format!("tasks/t1.md: a2 cannot approve its own task (a2 submitted it): {rule}")
        );
        // --force overrides the rule for a human listed in board.yaml, and for nobody else.
        let forced = Options {
            force: true,
            note: Some("solo project".into()),
            ..Options::default()
        };
        let mut req = request("approve", "a1", &forced);
        assert_eq!(refusal(&doc, &req).0, Kind::Conflict);
        req.human = true;
        let m = plan(&doc, &req);
        assert!(m.entry.force);
        assert_eq!(
            m.entry.note.as_deref(),
            Some("forced over the review rule: a1 reviews its own task; solo project")
        );
        // Other transitions are not review: the claimant moves its own task.
        plan(&doc, &request("block", "a1", &opts));
    }

    #[test]
    fn a_by_any_transition_needs_no_claim_and_the_remote_confirms_it_open() {
        let opts = Options::default();
        let doc = task("status: done\nclaimed_by: a2\nclaimed_at: x\n");
        let mut req = request("reopen", "a1", &opts);
        let m = plan(&doc, &req);
        assert!(!m.entry.force);
        assert_eq!(m.entry.note, None);
        assert_eq!(
            m.edits,
            vec![
                set("status", "pending"),
                FieldEdit::Unset("claimed_by".into()),
                FieldEdit::Unset("claimed_at".into()),
            ]
        );
        // On a connected board the remote confirms it while a2's record still holds.
        req.remote = Some("origin");
        assert_eq!(
            plan(&doc, &req).confirm,
            Some(Confirm {
                claim: false,
                from: "done".into(),
                to: "pending".into(),
                force: false,
                open: true,
                holder: Some("a2".into()),
                local_holder: None,
            })
        );
    }

    #[test]
    fn completion_checks_run_only_for_a_move_the_decision_could_allow() {
        let wf = workflow();
        let worth = |name: &str, fields: &str, actor: &str, opts: &Options, human: bool| {
            let t = lookup(&wf, name).unwrap();
            let mut req = request(name, actor, opts);
            req.human = human;
            worth_checking(&wf, t, &task(fields), &req)
        };
        let plain = Options::default();
        let forced = Options {
            force: true,
            ..Options::default()
        };
        let working = "status: working\nclaimed_by: a1\n";
        let review = "status: review\nclaimed_by: a1\n";
        assert!(worth("done", working, "a1", &plain, false));
        // The workflow refuses it from this state.
        assert!(!worth("done", "status: pending\n", "a1", &plain, false));
        // Someone else's task: only with --force.
        assert!(!worth("done", working, "a2", &plain, false));
        assert!(worth("done", working, "a2", &forced, false));
        // One's own review: only a listed human's --force.
        assert!(worth("approve", review, "a2", &plain, false));
        assert!(!worth("approve", review, "a1", &plain, false));
        assert!(!worth("approve", review, "a1", &forced, false));
        assert!(worth("approve", review, "a1", &forced, true));
    }

    #[test]
    fn moving_back_to_the_pool_drops_the_claim() {
        let opts = Options::default();
        let doc = task("status: working\nclaimed_by: a1\nclaimed_at: x\n");
        let m = plan(&doc, &request("release", "a1", &opts));
        assert_eq!(
            m.edits,
            vec![
                set("status", "pending"),
                FieldEdit::Unset("claimed_by".into()),
                FieldEdit::Unset("claimed_at".into()),
            ]
        );
        assert_eq!(m.entry.op, "release");
    }

    #[test]
    fn a_claim_waits_for_its_dependencies_and_the_agents_capabilities() {
        let opts = Options::default();
        let doc = task("status: pending\nneeds: [rust, sql]\n");
        let mut req = request("claim", "a1", &opts);
        req.waiting_for = Some("t0 (working)".into());
        assert_eq!(
            refusal(&doc, &req).1,
            "tasks/t1.md: not claimable yet: waits for t0 (working)"
        );
        req.waiting_for = None;
        req.capabilities = Some(vec!["rust".into()]);
        assert_eq!(
            refusal(&doc, &req).1,
            "tasks/t1.md: needs sql, which a1 does not have (its capabilities: rust)"
        );
        req.capabilities = Some(vec![]);
        assert!(refusal(&doc, &req).1.ends_with("(its capabilities: none)"));
        req.capabilities = Some(vec!["sql".into(), "rust".into()]);
        plan(&doc, &req);
    }

    #[test]
    fn a_task_changed_while_its_checks_ran_is_not_moved() {
        let opts = Options::default();
        let doc = task("status: working\nclaimed_by: a1\n");
        let mut req = request("done", "a1", &opts);
        req.checked_rev = Some(2);
        assert_eq!(
            refusal(&doc, &req).1,
            "tasks/t1.md: changed while its completion checks ran (rev 2 -> 3); retry"
        );
        req.checked_rev = Some(3);
        plan(&doc, &req);
    }

    #[test]
    fn a_status_outside_the_workflow_is_an_invalid_document() {
        let opts = Options::default();
        let doc = task("status: limbo\n");
        let (kind, text) = refusal(&doc, &request("claim", "a1", &opts));
        assert_eq!(kind, Kind::Invalid);
        assert!(text.starts_with("tasks/t1.md: status 'limbo' is not a state of the workflow"));
        assert_eq!(
            refusal(&doc, &request("fly", "a1", &opts)),
            (
                Kind::Usage,
                "unknown transition 'fly'; this board's workflow has: claim, release, start, submit, approve, reject, block, unblock, done, fail, cancel, reopen".into()
            )
        );
    }

    #[test]
    fn a_connected_board_confirms_claims_and_moves_of_claimed_tasks_unless_local() {
        let opts = Options::default();
        let mut req = request("start", "a1", &opts);
        req.remote = Some("origin");
        let held = task("status: claimed\nclaimed_by: a1\n");
        assert_eq!(
            plan(&held, &req).confirm,
            Some(Confirm {
                claim: false,
                from: "claimed".into(),
                to: "working".into(),
                force: false,
                open: false,
                holder: Some("a1".into()),
                local_holder: None,
            })
        );
        // A task nobody holds moves without the remote (`cancel` of a pending task).
        let free = task("status: pending\n");
        req.name = "cancel";
        assert_eq!(plan(&free, &req).confirm, None);
        let local = Options {
            local: true,
            note: Some("offline".into()),
            ..Options::default()
        };
        let mut req = request("start", "a1", &local);
        req.remote = Some("origin");
        let m = plan(&held, &req);
        assert_eq!(m.confirm, None);
        assert_eq!(
            m.entry.note.as_deref(),
            Some("local only: not confirmed by the remote 'origin'; offline")
        );
    }
}
