//! Holds on resources: hold, release, list, and the pre-edit question "may this agent edit
//! this file?" (README, "Holds").

use std::path::Path;

use serde::Serialize;

use crate::board::Board;
use crate::error::{Error, Result};
use crate::holds::{self, Which};

pub use crate::holds::{Conflict, Granted, Hold, Resource, Waiter};

/// The holds registry, relative to the board (what a refusal names as its file).
pub const REGISTRY: &str = holds::FILE;

/// How long a hold lasts when the request does not say.
pub const DEFAULT_FOR: &str = "30m";
/// How often a waiting request looks again.
pub const WAIT_POLL: std::time::Duration = std::time::Duration::from_millis(100);

/// What to hold, as given: paths and globs relative to `cwd`, named resources.
#[derive(Clone, Debug, Default)]
pub struct Spec {
    pub paths: Vec<String>,
    pub resources: Vec<String>,
    pub shared: bool,
    /// A duration (`30m`, `2h`); None is [`DEFAULT_FOR`].
    pub duration: Option<String>,
    pub reason: Option<String>,
    pub task: Option<String>,
    /// On a connected board: hold on this clone alone, without the remote's word.
    pub local: bool,
}

fn resources(
    board: &Board,
    cwd: &Path,
    paths: &[String],
    named: &[String],
) -> Result<Vec<Resource>> {
    let top = holds::work_tree(board, cwd);
    let mut out = Vec::new();
    for p in paths {
        let r = holds::path_resource(&top, cwd, p)?;
        if !out.contains(&r) {
            out.push(r);
        }
    }
    for n in named {
        let r = Resource::Named(n.trim().to_string());
        if !out.contains(&r) {
            out.push(r);
        }
    }
    Ok(out)
}

fn request(board: &Board, cwd: &Path, spec: &Spec) -> Result<holds::Request> {
    let text = spec.duration.as_deref().unwrap_or(DEFAULT_FOR);
    let duration = crate::time::parse_duration(text).ok_or_else(|| {
        Error::input(format!(
            "{} is not a duration like 30m, 2h or 1d",
            crate::log::quote(&text.chars().take(40).collect::<String>())
        ))
    })?;
    Ok(holds::Request {
        resources: resources(board, cwd, &spec.paths, &spec.resources)?,
        shared: spec.shared,
        duration,
        reason: spec.reason.clone().filter(|r| !r.trim().is_empty()),
        task: spec.task.clone(),
        local: spec.local,
    })
}

/// Holds what `spec` names for `actor`, all or none; with `wait`, queues first come, first
/// served for at most that long. Exit 3 naming each holder when refused.
pub fn hold(
    board: &Board,
    actor: &str,
    cwd: &Path,
    spec: &Spec,
    wait: Option<std::time::Duration>,
) -> Result<Granted> {
    let req = request(board, cwd, spec)?;
    holds::hold(board, actor, &req, wait, WAIT_POLL)
}

/// An agent refused a hold asks a human (`hold --ask`, the MCP `hold` tool's `ask`): a
/// question whose body is the refusal, naming each hold in the way. `question` is the text
/// to ask; empty, "May ACTOR have WHAT?". The refusal stays what it was (exit 3).
pub fn ask_refused(
    board: &Board,
    actor: &str,
    spec: &Spec,
    question: &str,
    refusal: &Error,
) -> Result<crate::api::questions::Asked> {
    let what: Vec<String> = spec
        .paths
        .iter()
        .cloned()
        .chain(spec.resources.iter().map(|r| format!("resource {r}")))
        .collect();
    let text = if question.trim().is_empty() {
        format!("May {actor} have {}?", what.join(", "))
    } else {
        question.to_string()
    };
    let body = format!(
        "{actor} asked to hold {} and was refused:\n\n    {}\n\n(The text after the colon is the board's record of who holds it.)\n",
        what.join(", "),
        refusal.to_string().replace('\n', "\n    ")
    );
    let ask = crate::api::questions::Ask {
        id: None,
        text,
        body: Some(body),
        options: Vec::new(),
        blocks: Vec::new(),
        context: None,
        permission: None,
    };
    crate::api::questions::ask(board, actor, &ask)
}

/// The remote a connected board confirms holds with, if any.
pub fn connected(board: &Board) -> Result<Option<String>> {
    crate::sync::remote(board)
}

/// What to release: resources as held (paths relative to `cwd`), hold ids, every hold of
/// the actor, or the holds made for a task.
#[derive(Clone, Debug, Default)]
pub struct ReleaseSpec {
    pub paths: Vec<String>,
    pub resources: Vec<String>,
    pub ids: Vec<String>,
    pub all: bool,
    pub task: Option<String>,
    /// Release another agent's holds (a human's override; logged as theirs).
    pub force: bool,
    /// On a connected board: release on this clone alone, without the remote's word.
    pub local: bool,
}

/// What a release gave up.
#[derive(Debug, Serialize)]
pub struct Released {
    pub ok: bool,
    pub released: Vec<Hold>,
}

pub fn release(board: &Board, actor: &str, cwd: &Path, spec: &ReleaseSpec) -> Result<Released> {
    let which = if spec.all {
        Which::All
    } else if let Some(t) = &spec.task {
        Which::Task(t.clone())
    } else if !spec.ids.is_empty() {
        Which::Ids(spec.ids.clone())
    } else {
        let rs = resources(board, cwd, &spec.paths, &spec.resources)?;
        if rs.is_empty() {
            return Err(Error::usage(
                "nothing to release: name what you hold, a hold id, a task, or all of it",
            ));
        }
        Which::Resources(rs)
    };
    let why = if spec.force {
        format!("by {actor}, forced")
    } else {
        format!("by {actor}")
    };
    let released = holds::release(board, actor, actor, &which, spec.force, &why, spec.local)?;
    Ok(Released { ok: true, released })
}

/// Releases every hold of `agent` (deregistered, swept, its session ended), logged by
/// `actor` with `why`.
pub(crate) fn release_agent(
    board: &Board,
    actor: &str,
    agent: &str,
    why: &str,
) -> Result<Vec<Hold>> {
    if !board.root.join(holds::FILE).exists() {
        return Ok(Vec::new());
    }
    holds::release(board, actor, agent, &Which::All, false, why, false)
}

/// Releases the holds made for `task` (the task was released or finished).
pub(crate) fn release_task(board: &Board, actor: &str, task: &str, why: &str) -> Result<Vec<Hold>> {
    if !board.root.join(holds::FILE).exists() {
        return Ok(Vec::new());
    }
    holds::release(
        board,
        actor,
        actor,
        &Which::Task(task.to_string()),
        false,
        why,
        false,
    )
}

/// Every hold in force (ownership rules first), and who waits for what.
#[derive(Debug, Serialize)]
pub struct HoldList {
    pub holds: Vec<Hold>,
    pub waiting: Vec<Waiter>,
    /// Pairs (waiter, holder): who waits on whom.
    pub waits_on: Vec<WaitsOn>,
}

#[derive(Debug, Serialize)]
pub struct WaitsOn {
    pub waiter: String,
    pub holder: String,
    /// The id of the hold waited on (`owner:PATTERN` for an ownership rule).
    pub hold: String,
    pub resource: String,
}

/// Every hold in force: this clone's registry and, on a connected board, the holds of
/// other clones as this clone last fetched them (no network).
pub fn list(board: &Board) -> Result<HoldList> {
    Ok(listed(board, false)?.0)
}

/// [`list`], after fetching the remote's hold records on a connected board; the second
/// value says why the fetch failed, if it did (the list is then as last fetched).
pub fn list_fetched(board: &Board) -> Result<(HoldList, Option<String>)> {
    listed(board, true)
}

fn listed(board: &Board, fetch: bool) -> Result<(HoldList, Option<String>)> {
    let mut reg = holds::current(board)?;
    let mut unfetched = None;
    if let Some(remote) = crate::sync::remote(board)? {
        let (others, waiting, why) =
            crate::sync::claims::holds::elsewhere_all(board, fetch.then_some(remote.as_str()))?;
        unfetched = why;
        // Other clones' waiters, from the remote's line as last fetched, after this
        // clone's own (whose line is in the same order as the remote's).
        for w in waiting {
            let q = w.waiter;
            reg.queue.push(Waiter {
                ticket: w.number,
                agent: q.agent,
                resources: q.resources,
                shared: q.shared,
                since: q.since,
                until: q.until,
                host: w.clone.split_once(':').map_or("", |(h, _)| h).to_string(),
                pid: 0,
                clone: Some(w.clone),
            });
        }
        for h in others {
            if !reg
                .holds
                .iter()
                .any(|o| o.agent == h.agent && o.resource == h.resource)
            {
                reg.holds.push(h);
            }
        }
    }
    let mut waits_on = Vec::new();
    for w in &reg.queue {
        for h in &reg.holds {
            if h.agent != w.agent
                && !(h.shared && w.shared)
                && w.resources.iter().any(|r| r.overlaps(&h.resource))
            {
                waits_on.push(WaitsOn {
                    waiter: w.agent.clone(),
                    holder: h.agent.clone(),
                    hold: h.id.clone(),
                    resource: h.resource.describe(),
                });
            }
        }
    }
    Ok((
        HoldList {
            holds: reg.holds,
            waiting: reg.queue,
            waits_on,
        },
        unfetched,
    ))
}

/// A recent refusal of a hold, as the log recorded it.
#[derive(Debug, Serialize)]
pub struct Refusal {
    pub seq: u64,
    pub at: String,
    /// Who was refused.
    pub agent: String,
    /// The holds that stood in its way, by id (an ownership rule or a waiter has none).
    pub holds: Vec<String>,
    /// The log's words: what was asked for and who holds it (others' reasons quoted
    /// inside; data, not instructions).
    pub note: String,
}

/// The holds with their conflicts: who holds what, who waits on whom, and the most recent
/// refusals (the dashboard's view).
#[derive(Debug, Serialize)]
pub struct Overview {
    #[serde(flatten)]
    pub list: HoldList,
    /// The newest refusals first, at most [`REFUSALS`].
    pub refused: Vec<Refusal>,
}

/// Refusals an overview gives, at most.
pub const REFUSALS: usize = 10;

pub fn overview(board: &Board) -> Result<Overview> {
    let list = list(board)?;
    let filter = crate::api::history::LogFilter {
        op: Some("hold-refused".into()),
        ..Default::default()
    };
    let page = crate::api::history::page(board, &filter, None, REFUSALS)?;
    let refused = page
        .entries
        .into_iter()
        .map(|e| {
            let note = e.note.unwrap_or_default();
            Refusal {
                seq: e.seq,
                at: e.at,
                agent: e.actor,
                holds: crate::api::delivery::hold_ids(&note),
                note,
            }
        })
        .collect();
    Ok(Overview { list, refused })
}

/// May `actor` edit `file`? The holds of others (and ownership rules) on it.
#[derive(Debug, Serialize)]
pub struct EditCheck {
    /// The file relative to the top of the working tree (None: outside it, never held).
    pub path: Option<String>,
    pub held_by: Vec<Hold>,
}

impl EditCheck {
    pub fn allowed(&self) -> bool {
        self.held_by.is_empty()
    }
}

/// How long the hooks trust their copy of other clones' holds before they fetch the hold
/// records again (README, "Holds across machines").
pub const ELSEWHERE_FRESH: std::time::Duration = std::time::Duration::from_secs(60);
/// How long such a fetch may take before the hooks give up and use the last copy.
pub const ELSEWHERE_LIMIT: std::time::Duration = std::time::Duration::from_secs(3);

/// What the pre-edit and pre-commit hooks check edits against: this clone's registry (if
/// there is one), the ownership rules, and the holds of other clones as this clone last
/// fetched them.
#[derive(Debug)]
pub struct EditGuard {
    registry: bool,
    elsewhere: Vec<Hold>,
    /// When this clone last fetched other clones' holds (None: never; not connected).
    pub fetched: Option<String>,
    /// Other clones' holds are as last fetched, older than the bound: why they could not be
    /// fetched now.
    pub stale: Option<String>,
}

impl EditGuard {
    /// Nothing held anywhere and no ownership rule: every edit goes through.
    pub fn idle(&self, board: &Board) -> bool {
        !self.registry && self.elsewhere.is_empty() && board.config.owners.is_empty()
    }
}

/// The hooks' view of what is held: one stat of `.state/holds.json` and one of this clone's
/// copy of other clones' holds (read only when it lists any); that copy is refreshed first
/// when it is older than `fresh` (once per `fresh` at most, a fetch given `limit`).
pub fn edit_guard(
    board: &Board,
    fresh: std::time::Duration,
    limit: std::time::Duration,
) -> EditGuard {
    let seen = crate::sync::claims::holds::seen(board, fresh, limit);
    EditGuard {
        registry: board.root.join(holds::FILE).exists(),
        elsewhere: seen.holds,
        fetched: seen.fetched.map(crate::time::stamp_millis),
        stale: seen.stale,
    }
}

/// Checks an edit of `file` (absolute, or relative to `cwd`) by `actor`: the holds of
/// others here and on other clones, and the ownership rules. Cheap when `guard` is idle.
pub fn check_edit(
    board: &Board,
    guard: &EditGuard,
    actor: &str,
    cwd: &Path,
    file: &str,
) -> Result<EditCheck> {
    if guard.idle(board) {
        return Ok(EditCheck {
            path: None,
            held_by: Vec::new(),
        });
    }
    let top = holds::work_tree(board, cwd);
    let path = match holds::relative(&top, cwd, file) {
        Some(p) => p,
        // Outside the working tree: nothing there is held.
        None => {
            return Ok(EditCheck {
                path: None,
                held_by: Vec::new(),
            });
        }
    };
    let mut held_by = if guard.registry || !board.config.owners.is_empty() {
        holds::holders_of(board, actor, &path)?
    } else {
        Vec::new()
    };
    let lit = holds::Pattern::literal(&path);
    for h in &guard.elsewhere {
        let dup = held_by
            .iter()
            .any(|o| o.agent == h.agent && o.resource == h.resource);
        let hit = match &h.resource {
            Resource::Path(p) => holds::Pattern::parse(p).map_or(true, |p| p.overlaps(&lit)),
            Resource::Named(_) => false,
        };
        if h.agent != actor && hit && !dup {
            held_by.push(h.clone());
        }
    }
    Ok(EditCheck {
        path: Some(path),
        held_by,
    })
}

/// Drops expired holds now (each logged as an expiry); how many.
pub fn expire(board: &Board) -> Result<usize> {
    Ok(holds::expire(board)?.len())
}

/// Ownership rules of board.yaml that overlap with different owners, or do not parse.
pub fn owner_rule_problems(board: &Board) -> Vec<String> {
    holds::overlapping_owner_rules(board)
}
