//! Holds: exclusive or shared leases on resources (paths and globs of the working tree,
//! named things such as `db:test`), as claims are on tasks (DESIGN §14).
//!
//! The registry is one runtime file, `.state/holds.json`, shared by every worktree of the
//! repository (they share one board), written by the write protocol under **one lock**
//! (`holds`): whether a request overlaps a hold is a question about every hold at once (a
//! glob has no single key a per-resource lock could name), and the question is small (a
//! handful of holds, a file read and a compare), so one short critical section is both
//! correct and cheap. Readers (`holds`, the pre-edit hook) take no lock: the file is
//! replaced by rename, so they see the old registry or the new one.
//!
//! A hold is a lease: it ends at its expiry, when its agent deregisters or is swept, and
//! when the task it was made for is released or finished. `owners:` in board.yaml are
//! holds that never expire. Every grant, release, expiry and refusal is logged.

pub mod pattern;

use std::path::Path;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::board::Board;
use crate::error::{Error, Result};
use crate::log::{self, Entry};
use crate::store::{self, Step, Write};

pub use pattern::Pattern;

/// The lock of the registry.
pub const LOCK: &str = "holds";
/// The registry, relative to the board root.
pub const FILE: &str = ".state/holds.json";
/// The actor the log names for expiries.
pub const EXPIRER: &str = "tavern-sweep";
/// At most this many resources in one request, and this long a resource or a reason.
pub const MAX_RESOURCES: usize = 64;
pub const MAX_TEXT: usize = 500;
/// How often a waiting request looks again on a connected board (each look may fetch).
pub const REMOTE_POLL: std::time::Duration = std::time::Duration::from_secs(1);
/// A waiter's place in the remote's line lasts this long unless renewed (a third of it
/// into it): one that died drops out then.
pub const WAIT_LEASE: chrono::Duration = chrono::Duration::seconds(30);
/// The waiter's environment may set its lease, in whole seconds (at least 3).
pub const WAIT_LEASE_VAR: &str = "TAVERN_HOLDS_WAIT_LEASE";

/// The lease of a waiter's place in the remote's line: [`WAIT_LEASE`], or
/// [`WAIT_LEASE_VAR`] seconds when set to a whole number of at least 3 (anything else is
/// ignored: a lease too short for its renewals would drop live waiters).
pub fn wait_lease() -> chrono::Duration {
    std::env::var(WAIT_LEASE_VAR)
        .ok()
        .and_then(|v| v.trim().parse::<i64>().ok())
        .filter(|s| (3..=86_400).contains(s))
        .map_or(WAIT_LEASE, chrono::Duration::seconds)
}

/// What is held: a path pattern of the working tree, or a named resource.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", content = "name", rename_all = "snake_case")]
pub enum Resource {
    /// A path or glob relative to the top of the working tree (`src/**`, `README.md`).
    Path(String),
    /// A named thing (`db:test`, `port:8080`): the same only when the names are equal.
    Named(String),
}

impl Resource {
    pub fn text(&self) -> &str {
        match self {
            Resource::Path(p) | Resource::Named(p) => p,
        }
    }

    /// How it reads in a message: a path as it is (`.` for the whole tree), a named one
    /// as `resource NAME`.
    pub fn describe(&self) -> String {
        match self {
            Resource::Path(p) if p.is_empty() => ".".into(),
            Resource::Path(p) => p.clone(),
            Resource::Named(n) => format!("resource {n}"),
        }
    }

    /// Is something held by both? Paths by [`Pattern::overlaps`], names by equality.
    pub fn overlaps(&self, other: &Resource) -> bool {
        match (self, other) {
            (Resource::Named(a), Resource::Named(b)) => a == b,
            (Resource::Path(a), Resource::Path(b)) => {
                match (Pattern::parse(a), Pattern::parse(b)) {
                    (Ok(a), Ok(b)) => a.overlaps(&b),
                    // A pattern that no longer parses (a hand edit): taken to overlap.
                    _ => true,
                }
            }
            _ => false,
        }
    }
}

/// One hold.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Hold {
    pub id: String,
    pub resource: Resource,
    #[serde(default)]
    pub shared: bool,
    pub agent: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    pub since: String,
    /// When it ends; None never (an ownership rule).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub until: Option<String>,
    /// An `owners:` rule of board.yaml, not a hold anyone made.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub owner_rule: bool,
}

impl Hold {
    fn expired(&self, now: DateTime<Utc>) -> bool {
        self.until
            .as_deref()
            .and_then(|u| DateTime::parse_from_rfc3339(u).ok())
            .is_some_and(|u| u.with_timezone(&Utc) <= now)
    }

    /// Does this hold stand in the way of `agent` holding `resource` (shared or not)?
    fn blocks(&self, agent: &str, resource: &Resource, shared: bool) -> bool {
        self.agent != agent && !(self.shared && shared) && self.resource.overlaps(resource)
    }

    /// One line naming who holds what, since and until when, why and for which task.
    pub fn describe(&self) -> String {
        let mut s = format!(
            "{} holds {} ({}",
            self.agent,
            self.resource.describe(),
            if self.owner_rule {
                "owner rule in board.yaml"
            } else if self.shared {
                "shared"
            } else {
                "exclusive"
            }
        );
        if !self.owner_rule {
            s.push_str(&format!(", {} since {}", self.id, self.since));
        }
        match &self.until {
            Some(u) => s.push_str(&format!(", until {u}")),
            None => s.push_str(", never expires"),
        }
        if let Some(t) = &self.task {
            s.push_str(&format!(", for task {t}"));
        }
        if let Some(r) = &self.reason {
            s.push_str(&format!(", reason: {}", crate::log::quote(r)));
        }
        s.push(')');
        s
    }
}

/// An agent waiting (`--wait`) for resources: served in the order of their tickets.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Waiter {
    pub ticket: u64,
    pub agent: String,
    pub resources: Vec<Resource>,
    #[serde(default)]
    pub shared: bool,
    pub since: String,
    /// It stops waiting then (and is dropped from the queue if it did not say so).
    pub until: String,
    pub host: String,
    /// 0 for a waiter of another clone (its process is not known here).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub pid: u32,
    /// The clone it waits on (`box:/path`) when it is not this one: a waiter of another
    /// clone, in the remote's line as this clone last fetched it (its `until` is then
    /// its place's lease, renewed while it waits).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clone: Option<String>,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

impl Waiter {
    fn live(&self, now: DateTime<Utc>) -> bool {
        let before_deadline =
            DateTime::parse_from_rfc3339(&self.until).is_ok_and(|u| u.with_timezone(&Utc) > now);
        let process = self.host != crate::agents::host_name() || crate::agents::pid_alive(self.pid);
        before_deadline && process
    }

    fn wants(&self, agent: &str, resource: &Resource, shared: bool) -> bool {
        self.agent != agent
            && !(self.shared && shared)
            && self.resources.iter().any(|r| r.overlaps(resource))
    }
}

/// The registry file.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Registry {
    #[serde(default)]
    pub next: u64,
    #[serde(default)]
    pub holds: Vec<Hold>,
    #[serde(default)]
    pub queue: Vec<Waiter>,
}

fn path(board: &Board) -> std::path::PathBuf {
    board.root.join(FILE)
}

/// Reads the registry as it is (no lock); a missing file is an empty registry.
pub fn read(board: &Board) -> Result<(Registry, Option<Vec<u8>>)> {
    let path = path(board);
    let bytes = match std::fs::read(&path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Ok((Registry::default(), None));
        }
        Err(e) => return Err(Error::io(&path, "read", e)),
    };
    let reg = serde_json::from_slice(&bytes).map_err(|e| {
        Error::invalid_doc(
            board.rel(&path),
            format!("{e} (it is runtime state: remove it to drop every hold)"),
        )
    })?;
    Ok((reg, Some(bytes)))
}

/// The ownership rules of board.yaml as holds that never expire.
pub fn owner_holds(board: &Board) -> Vec<Hold> {
    board
        .config
        .owners
        .iter()
        .map(|(pattern, owner)| Hold {
            id: format!("owner:{pattern}"),
            resource: Resource::Path(as_held(
                board.project(),
                &pattern::normalise("", pattern).unwrap_or_default(),
                pattern.ends_with('/'),
            )),
            shared: false,
            agent: owner.clone(),
            task: None,
            reason: Some("ownership rule".into()),
            since: String::new(),
            until: None,
            owner_rule: true,
        })
        .collect()
}

/// Is `agent` the owner a rule names (the agent itself, or `role:R` with R among the
/// agent's capabilities)?
pub fn owns(board: &Board, owner: &str, agent: &str) -> bool {
    if owner == agent {
        return true;
    }
    let Some(role) = owner.strip_prefix("role:") else {
        return false;
    };
    crate::agents::read(board, agent)
        .ok()
        .flatten()
        .is_some_and(|a| a.capabilities().iter().any(|c| c == role))
}

/// What stands in the way of a request: a hold of someone else, an ownership rule, or an
/// earlier waiter.
#[derive(Clone, Debug, Serialize)]
pub struct Conflict {
    /// What was asked for.
    pub wanted: Resource,
    /// The hold in the way.
    pub hold: Hold,
    /// The one in the way is waiting for it (queued earlier), not holding it yet.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub queued: bool,
}

impl Conflict {
    /// An earlier waiter in the way of `wanted`: it holds nothing yet, so it stands as a
    /// hold with id `queue:TICKET` (this clone's line or the remote's).
    pub(crate) fn queued_behind(
        wanted: &Resource,
        ticket: impl std::fmt::Display,
        agent: &str,
        shared: bool,
        since: &str,
        until: &str,
    ) -> Conflict {
        Conflict {
            wanted: wanted.clone(),
            hold: Hold {
                id: format!("queue:{ticket}"),
                resource: wanted.clone(),
                shared,
                agent: agent.to_string(),
                task: None,
                reason: None,
                since: since.to_string(),
                until: Some(until.to_string()),
                owner_rule: false,
            },
            queued: true,
        }
    }

    pub fn describe(&self) -> String {
        if self.queued {
            format!(
                "{}: {} waits for it (queued first, since {})",
                self.wanted.describe(),
                self.hold.agent,
                self.hold.since
            )
        } else {
            format!("{}: {}", self.wanted.describe(), self.hold.describe())
        }
    }
}

/// What an agent asks to hold.
#[derive(Clone, Debug)]
pub struct Request {
    pub resources: Vec<Resource>,
    pub shared: bool,
    pub duration: chrono::Duration,
    pub reason: Option<String>,
    pub task: Option<String>,
    /// On a connected board: hold on this clone alone, without the remote's word.
    pub local: bool,
}

/// The remote a change of holds is confirmed with: None when the board is not connected,
/// or when the change is for this clone alone (`local`).
fn remote_for(board: &Board, local: bool) -> Result<Option<String>> {
    if local {
        return Ok(None);
    }
    crate::sync::remote(board)
}

fn described(resources: &[Resource]) -> String {
    resources
        .iter()
        .map(Resource::describe)
        .collect::<Vec<_>>()
        .join(", ")
}

/// The conflicts of a request against the registry and the rules (for `agent`).
/// `ticket`: the request's place in the queue (only earlier waiters count), None for a
/// request that does not wait (every live waiter counts: nobody jumps the queue).
fn conflicts(
    board: &Board,
    reg: &Registry,
    agent: &str,
    req: &Request,
    ticket: Option<u64>,
    now: DateTime<Utc>,
) -> Vec<Conflict> {
    let mut out = Vec::new();
    let owners = owner_holds(board);
    for r in &req.resources {
        for h in reg.holds.iter().filter(|h| !h.expired(now)) {
            if h.blocks(agent, r, req.shared) {
                out.push(Conflict {
                    wanted: r.clone(),
                    hold: h.clone(),
                    queued: false,
                });
            }
        }
        for h in &owners {
            if h.resource.overlaps(r) && !owns(board, &h.agent, agent) {
                out.push(Conflict {
                    wanted: r.clone(),
                    hold: h.clone(),
                    queued: false,
                });
            }
        }
        for w in &reg.queue {
            let earlier = ticket.is_none_or(|t| w.ticket < t);
            if earlier && w.live(now) && w.wants(agent, r, req.shared) {
                out.push(Conflict::queued_behind(
                    r, w.ticket, &w.agent, w.shared, &w.since, &w.until,
                ));
            }
        }
    }
    out
}

fn entry(actor: &str, op: &str, doc: &str, note: String) -> Entry {
    Entry {
        actor: actor.to_string(),
        op: op.to_string(),
        doc: doc.to_string(),
        note: Some(note),
        ..Entry::default()
    }
}

fn hold_doc(id: &str) -> String {
    format!("holds/{id}")
}

/// The registry's new bytes.
fn encode(reg: &Registry) -> Vec<u8> {
    let mut b = serde_json::to_vec_pretty(reg).unwrap_or_default();
    b.push(b'\n');
    b
}

/// Under the lock: reads the registry, drops expired holds and dead waiters (each expiry
/// logged), lets `decide` change it, writes it back if anything changed. Returns what
/// `decide` returned and the entries logged.
fn update<T>(
    board: &Board,
    decide: impl FnOnce(&mut Registry, DateTime<Utc>) -> Result<(T, Vec<Entry>)>,
) -> Result<(T, Vec<Entry>)> {
    let held = store::hold(board, &[LOCK.to_string()])?;
    let (mut reg, before) = read(board)?;
    let now = crate::time::now();
    let mut entries = Vec::new();
    let (expired, kept): (Vec<Hold>, Vec<Hold>) = std::mem::take(&mut reg.holds)
        .into_iter()
        .partition(|h| h.expired(now));
    reg.holds = kept;
    for h in &expired {
        entries.push(entry(
            EXPIRER,
            "hold-expired",
            &hold_doc(&h.id),
            format!("expired: {}", h.describe()),
        ));
    }
    reg.queue.retain(|w| w.live(now));
    let (value, more) = decide(&mut reg, now)?;
    entries.extend(more);
    let after = encode(&reg);
    let changed = before.as_deref() != Some(after.as_slice());
    let mut logged = Vec::new();
    let mut rest = entries.into_iter();
    match (changed, rest.next()) {
        // The registry and the first entry through the protocol; the others appended
        // next, still under the registry's lock.
        (true, Some(first)) => logged.push(held.write(
            board,
            Write {
                steps: vec![Step::put(FILE, before.as_deref(), after)],
                entry: first,
            },
        )?),
        // Only the queue changed (a waiter came or went): nothing to log.
        (true, None) => {
            let p = path(board);
            crate::file::write(&p, &after, crate::file::Durability::Whole)?;
        }
        (false, Some(first)) => logged.push(log::append(board, first)?),
        (false, None) => {}
    }
    for e in rest {
        logged.push(log::append(board, e)?);
    }
    Ok((value, logged))
}

/// A granted request.
#[derive(Clone, Debug, Serialize)]
pub struct Granted {
    pub holds: Vec<Hold>,
    /// How long it waited in the queue, when it did.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub waited_ms: Option<u64>,
}

/// Why a request was refused (exit 3), with every conflict.
pub fn refused(board: &Board, conflicts: &[Conflict]) -> Error {
    let mut lines: Vec<String> = conflicts.iter().take(8).map(Conflict::describe).collect();
    if conflicts.len() > 8 {
        lines.push(format!("… and {} more", conflicts.len() - 8));
    }
    let file = if conflicts.iter().all(|c| c.hold.owner_rule) {
        crate::layout::BOARD_YAML
    } else {
        FILE
    };
    Error::Held {
        path: board.rel(&board.root.join(file)).into(),
        message: format!("held by another: {}", lines.join("; ")),
        conflicts: conflicts.to_vec(),
    }
}

fn check_request(board: &Board, req: &Request) -> Result<()> {
    if req.resources.is_empty() {
        return Err(Error::usage(
            "nothing to hold: name a path, a glob or a resource",
        ));
    }
    if req.resources.len() > MAX_RESOURCES {
        return Err(Error::input(format!(
            "at most {MAX_RESOURCES} resources in one hold, not {}",
            req.resources.len()
        )));
    }
    for r in &req.resources {
        let t = r.text();
        if t.len() > MAX_TEXT || t.chars().any(char::is_control) {
            return Err(Error::input(format!(
                "'{}' is not a resource: at most {MAX_TEXT} bytes, no control characters",
                crate::log::quote(&t.chars().take(60).collect::<String>())
            )));
        }
        match r {
            Resource::Named(n) if n.trim().is_empty() => {
                return Err(Error::input("a resource name is empty".to_string()));
            }
            Resource::Path(p) => {
                Pattern::parse(p).map_err(|e| Error::input(format!("{p}: {e}")))?;
            }
            _ => {}
        }
    }
    if let Some(r) = &req.reason
        && (r.len() > MAX_TEXT || r.chars().any(|c| c.is_control() && c != '\n'))
    {
        return Err(Error::input(format!(
            "a reason is at most {MAX_TEXT} bytes of text"
        )));
    }
    if req.duration <= chrono::Duration::zero() {
        return Err(Error::input("a hold's duration must be more than nothing"));
    }
    if let Some(t) = &req.task
        && !board.task_exists(t)
    {
        return Err(Error::NotFound {
            what: format!("task {t} (for the hold)"),
            hint: crate::error::Message::default(),
        });
    }
    Ok(())
}

/// Tries the request once: granted (holds written and logged), or the conflicts (the
/// refusal logged when `log_refusal`). With a ticket, it is this waiter's turn check.
fn try_grant(
    board: &Board,
    agent: &str,
    req: &Request,
    ticket: Option<u64>,
    log_refusal: bool,
) -> Result<std::result::Result<Vec<Hold>, Vec<Conflict>>> {
    let remote = remote_for(board, req.local)?;
    // A waiter's turn on the remote: only earlier waiters there count.
    let turn = match (ticket, &remote) {
        (Some(t), Some(_)) => Some(queued(board, agent, req, t, String::new())),
        _ => None,
    };
    let (out, _) = update(board, |current, now| {
        let refuse = |found: Vec<Conflict>| {
            let mut entries = Vec::new();
            if log_refusal {
                entries.push(entry(
                    agent,
                    "hold-refused",
                    "holds",
                    format!(
                        "refused {}: {}",
                        described(&req.resources),
                        found
                            .iter()
                            .take(4)
                            .map(Conflict::describe)
                            .collect::<Vec<_>>()
                            .join("; ")
                    ),
                ));
            }
            Ok((Err(found), entries))
        };
        let found = conflicts(board, current, agent, req, ticket, now);
        if !found.is_empty() {
            return refuse(found);
        }
        // Decided on a copy: the registry changes only once the remote (if any) agrees.
        let mut next = current.clone();
        let reg = &mut next;
        if let Some(t) = ticket {
            reg.queue.retain(|w| w.ticket != t);
        }
        let until = crate::time::stamp_millis(now + req.duration);
        let since = crate::time::stamp_millis(now);
        let mut granted = Vec::new();
        let mut entries = Vec::new();
        for r in &req.resources {
            // Holding again what one holds renews it (and takes the new mode, reason, task).
            let existing = reg
                .holds
                .iter_mut()
                .find(|h| h.agent == agent && h.resource == *r);
            let (hold, op) = match existing {
                Some(h) => {
                    h.shared = req.shared;
                    h.until = Some(until.clone());
                    h.reason = req.reason.clone().or(h.reason.take());
                    h.task = req.task.clone().or(h.task.take());
                    (h.clone(), "hold-renewed")
                }
                None => {
                    reg.next += 1;
                    let h = Hold {
                        id: format!("h-{}", reg.next),
                        resource: r.clone(),
                        shared: req.shared,
                        agent: agent.to_string(),
                        task: req.task.clone(),
                        reason: req.reason.clone(),
                        since: since.clone(),
                        until: Some(until.clone()),
                        owner_rule: false,
                    };
                    reg.holds.push(h.clone());
                    (h, "hold")
                }
            };
            let unconfirmed = match (&remote, req.local) {
                (None, true) => crate::sync::remote(board)?
                    .map(|r| format!(" (local only: not confirmed by the remote '{r}')"))
                    .unwrap_or_default(),
                _ => String::new(),
            };
            entries.push(entry(
                agent,
                op,
                &hold_doc(&hold.id),
                format!("granted: {}{unconfirmed}", hold.describe()),
            ));
            granted.push(hold);
        }
        if let Some(remote) = &remote {
            let change = crate::sync::claims::holds::Change {
                add: &granted,
                drop: &[],
                what: format!("holding {}", described(&req.resources)),
                queue: turn
                    .as_ref()
                    .map(|q| (q, crate::sync::claims::holds::QueueOp::Turn)),
            };
            match crate::sync::claims::holds::confirm(board, remote, agent, &change)? {
                crate::sync::claims::holds::Outcome::Done => {}
                crate::sync::claims::holds::Outcome::Refused(found) => return refuse(found),
            }
        }
        *current = next;
        Ok((Ok(granted), entries))
    })?;
    Ok(out)
}

/// This clone's waiter `t` as the remote's line keeps it, its lease until `until`.
fn queued(
    board: &Board,
    agent: &str,
    req: &Request,
    t: u64,
    until: String,
) -> crate::sync::claims::holds::Queued {
    crate::sync::claims::holds::Queued {
        ticket: crate::sync::claims::holds::ticket(board, t),
        agent: agent.to_string(),
        resources: req.resources.clone(),
        shared: req.shared,
        since: crate::time::stamp_millis(crate::time::now()),
        until,
    }
}

/// Joins (or renews its place in), or leaves, the remote's line for waiter `t`.
fn in_line(
    board: &Board,
    remote: &str,
    agent: &str,
    req: &Request,
    t: u64,
    op: crate::sync::claims::holds::QueueOp,
) -> Result<()> {
    let until = crate::time::stamp_millis(crate::time::now() + wait_lease());
    let q = queued(board, agent, req, t, until);
    let change = crate::sync::claims::holds::Change {
        add: &[],
        drop: &[],
        what: format!("waiting for {}", described(&req.resources)),
        queue: Some((&q, op)),
    };
    crate::sync::claims::holds::confirm(board, remote, agent, &change).map(|_| ())
}

/// Holds the request's resources for `agent`, all or none. Refused (exit 3, naming every
/// holder, its reason and expiry) when another agent holds an overlapping resource
/// exclusively (or holds it shared and this is exclusive), an ownership rule names someone
/// else, or someone waits for it already. With `wait`, queues (first come, first served)
/// until it is granted or `wait` runs out, checking every `poll`.
pub fn hold(
    board: &Board,
    agent: &str,
    req: &Request,
    wait: Option<std::time::Duration>,
    poll: std::time::Duration,
) -> Result<Granted> {
    check_request(board, req)?;
    let Some(wait) = wait else {
        return match try_grant(board, agent, req, None, true)? {
            Ok(holds) => Ok(Granted {
                holds,
                waited_ms: None,
            }),
            Err(found) => Err(refused(board, &found)),
        };
    };
    let started = std::time::Instant::now();
    // On a connected board each look asks the remote (a fetch when it refuses): once a
    // second is often enough there.
    let poll = if !req.local && crate::sync::remote(board)?.is_some() {
        poll.max(REMOTE_POLL)
    } else {
        poll
    };
    // First try: as a newcomer (any live waiter is ahead of it). Else take a ticket.
    if let Ok(holds) = try_grant(board, agent, req, None, false)? {
        return Ok(Granted {
            holds,
            waited_ms: Some(0),
        });
    }
    let deadline = crate::time::now()
        + chrono::Duration::from_std(wait).unwrap_or_else(|_| chrono::Duration::days(365));
    // On a connected board the remote keeps the line every clone waits in: joined under
    // the registry's lock, so this clone's own waiters are in the same order in both.
    let remote = remote_for(board, req.local)?;
    // Joins the remote's line, or renews this waiter's place in it (its lease).
    let join = |r: &str, ticket: u64| {
        in_line(
            board,
            r,
            agent,
            req,
            ticket,
            crate::sync::claims::holds::QueueOp::Join,
        )
    };
    let (ticket, _) = update(board, |reg, now| {
        reg.next += 1;
        let ticket = reg.next;
        if let Some(r) = &remote {
            join(r, ticket)?;
        }
        reg.queue.push(Waiter {
            ticket,
            agent: agent.to_string(),
            resources: req.resources.clone(),
            shared: req.shared,
            since: crate::time::stamp_millis(now),
            until: crate::time::stamp_millis(deadline),
            host: crate::agents::host_name(),
            pid: std::process::id(),
            clone: None,
        });
        let note = format!(
            "waits for {} (ticket {ticket})",
            req.resources
                .iter()
                .map(Resource::describe)
                .collect::<Vec<_>>()
                .join(", ")
        );
        Ok((ticket, vec![entry(agent, "hold-wait", "holds", note)]))
    })?;
    let mut renewed = std::time::Instant::now();
    let renew_every = (wait_lease() / 3)
        .to_std()
        .unwrap_or(std::time::Duration::from_secs(10));
    loop {
        if let Some(r) = &remote
            && renewed.elapsed() >= renew_every
        {
            update(board, |_, _| join(r, ticket).map(|()| ((), Vec::new())))?;
            renewed = std::time::Instant::now();
        }
        match try_grant(board, agent, req, Some(ticket), false)? {
            Ok(holds) => {
                return Ok(Granted {
                    holds,
                    waited_ms: Some(started.elapsed().as_millis() as u64),
                });
            }
            Err(found) => {
                if started.elapsed() >= wait {
                    let _ = update(board, |reg, _| {
                        reg.queue.retain(|w| w.ticket != ticket);
                        if let Some(r) = &remote {
                            // Best effort: its lease ends it anyway.
                            let _ = in_line(
                                board,
                                r,
                                agent,
                                req,
                                ticket,
                                crate::sync::claims::holds::QueueOp::Leave,
                            );
                        }
                        Ok(((), Vec::new()))
                    });
                    // Logged as the refusal it ends in.
                    let _ = log::append(
                        board,
                        entry(
                            agent,
                            "hold-refused",
                            "holds",
                            format!(
                                "gave up waiting after {}: {}",
                                crate::time::format_millis(wait.as_millis() as u64),
                                found
                                    .iter()
                                    .take(4)
                                    .map(Conflict::describe)
                                    .collect::<Vec<_>>()
                                    .join("; ")
                            ),
                        ),
                    );
                    return Err(refused(board, &found));
                }
                std::thread::sleep(
                    poll.min(wait.saturating_sub(started.elapsed()))
                        .max(std::time::Duration::from_millis(5)),
                );
            }
        }
    }
}

/// What to release.
#[derive(Clone, Debug)]
pub enum Which {
    /// Holds of these resources (as they were held).
    Resources(Vec<Resource>),
    /// Holds with these ids.
    Ids(Vec<String>),
    /// Every hold of the agent.
    All,
    /// The holds made for this task.
    Task(String),
}

/// Releases holds of `agent` (or anyone's with `force`); the released, each logged with
/// `why`. Not found (exit 4) when a named resource or id is not held by it.
/// On a connected board (unless `local`) the remote's records drop them first: exit 7,
/// nothing changed, when it cannot be told.
pub fn release(
    board: &Board,
    actor: &str,
    agent: &str,
    which: &Which,
    force: bool,
    why: &str,
    local: bool,
) -> Result<Vec<Hold>> {
    let remote = remote_for(board, local)?;
    let (released, _) = update(board, |reg, _now| {
        let mut missing = Vec::new();
        let mine = |h: &Hold| force || h.agent == agent;
        let pick = |h: &Hold| -> bool {
            match which {
                Which::Resources(rs) => rs.contains(&h.resource),
                Which::Ids(ids) => ids.contains(&h.id),
                Which::All => h.agent == agent,
                Which::Task(t) => h.task.as_deref() == Some(t.as_str()),
            }
        };
        match which {
            Which::Resources(rs) => {
                for r in rs {
                    if !reg.holds.iter().any(|h| h.resource == *r && mine(h)) {
                        missing.push(r.describe());
                    }
                }
            }
            Which::Ids(ids) => {
                for id in ids {
                    match reg.holds.iter().find(|h| &h.id == id) {
                        Some(h) if mine(h) => {}
                        Some(h) => {
                            return Err(Error::conflict(
                                board.rel(&board.root.join(FILE)),
                                format!("{id} is not {agent}'s: {}", h.describe()),
                            ));
                        }
                        None => missing.push(id.clone()),
                    }
                }
            }
            Which::All | Which::Task(_) => {}
        }
        if !missing.is_empty() {
            return Err(Error::NotFound {
                what: format!("a hold of {agent} on {} in {FILE}", missing.join(", ")),
                hint: crate::error::Message::default(),
            });
        }
        let (gone, kept): (Vec<Hold>, Vec<Hold>) = std::mem::take(&mut reg.holds)
            .into_iter()
            .partition(|h| pick(h) && (mine(h) || matches!(which, Which::Task(_))));
        if let Some(remote) = &remote
            && !gone.is_empty()
        {
            let drop: Vec<(String, Resource)> = gone
                .iter()
                .map(|h| (h.agent.clone(), h.resource.clone()))
                .collect();
            let change = crate::sync::claims::holds::Change {
                add: &[],
                drop: &drop,
                what: format!(
                    "releasing {}",
                    described(&gone.iter().map(|h| h.resource.clone()).collect::<Vec<_>>())
                ),
                queue: None,
            };
            crate::sync::claims::holds::confirm(board, remote, actor, &change)?;
        }
        reg.holds = kept;
        let entries = gone
            .iter()
            .map(|h| {
                entry(
                    actor,
                    "hold-released",
                    &hold_doc(&h.id),
                    format!("released ({why}): {}", h.describe()),
                )
            })
            .collect();
        Ok((gone, entries))
    })?;
    Ok(released)
}

/// Who the log names for a hold the remote refused when the board was connected.
pub const CONNECTOR: &str = "tavern-sync";

/// A board just connected to `remote`: every live hold of this clone is pushed, each
/// confirmed as `hold` confirms one (a hold already there changes nothing). One the remote
/// refuses (an agent of another clone holds an overlapping resource there) is released
/// here, logged, and the whole is refused (exit 3) naming each holder; the others stay
/// pushed.
pub fn publish(board: &Board, remote: &str) -> Result<()> {
    if !path(board).exists() {
        return Ok(());
    }
    let (found, _) = update(board, |reg, _now| {
        let mut found: Vec<Conflict> = Vec::new();
        let mut entries = Vec::new();
        let mut kept = Vec::new();
        for h in std::mem::take(&mut reg.holds) {
            let change = crate::sync::claims::holds::Change {
                add: std::slice::from_ref(&h),
                drop: &[],
                what: format!(
                    "holding {} (held before the board was connected)",
                    h.resource.describe()
                ),
                queue: None,
            };
            match crate::sync::claims::holds::confirm(board, remote, &h.agent, &change)? {
                crate::sync::claims::holds::Outcome::Done => kept.push(h),
                crate::sync::claims::holds::Outcome::Refused(theirs) => {
                    entries.push(entry(
                        CONNECTOR,
                        "hold-released",
                        &hold_doc(&h.id),
                        format!(
                            "released (the remote '{remote}' refused it when the board was connected: {}): {}",
                            theirs
                                .iter()
                                .take(4)
                                .map(Conflict::describe)
                                .collect::<Vec<_>>()
                                .join("; "),
                            h.describe()
                        ),
                    ));
                    found.extend(theirs);
                }
            }
        }
        reg.holds = kept;
        Ok((found, entries))
    })?;
    if found.is_empty() {
        return Ok(());
    }
    match refused(board, &found) {
        Error::Held {
            path,
            message,
            conflicts,
        } => Err(Error::Held {
            path,
            message: format!(
                "the remote '{remote}' has holds in the way of holds made here before the board was connected, which were released here: {message}"
            ),
            conflicts,
        }),
        e => Err(e),
    }
}

/// Drops expired holds now (each logged); what expired.
pub fn expire(board: &Board) -> Result<Vec<Entry>> {
    if !path(board).exists() {
        return Ok(Vec::new());
    }
    let (_, logged) = update(board, |_, _| Ok(((), Vec::new())))?;
    Ok(logged)
}

/// Every live hold (owner rules first) and the queue, as read without the lock.
pub fn current(board: &Board) -> Result<Registry> {
    let (mut reg, _) = read(board)?;
    let now = crate::time::now();
    reg.holds.retain(|h| !h.expired(now));
    reg.queue.retain(|w| w.live(now));
    let mut all = owner_holds(board);
    all.append(&mut reg.holds);
    reg.holds = all;
    Ok(reg)
}

/// Who holds `path` (a file relative to the top of the working tree) against `agent`:
/// the holds of others and the ownership rules that refuse `agent` an edit of it. Fast
/// when nothing is held: one failed open and no rules means nothing.
pub fn holders_of(board: &Board, agent: &str, path: &str) -> Result<Vec<Hold>> {
    let wanted = Resource::Path(path.to_string());
    let mut out = Vec::new();
    if !board.config.owners.is_empty() {
        for h in owner_holds(board) {
            if h.resource.overlaps(&wanted) && !owns(board, &h.agent, agent) {
                out.push(h);
            }
        }
    }
    let (reg, _) = read(board)?;
    let now = crate::time::now();
    let lit = Pattern::literal(path);
    for h in reg
        .holds
        .iter()
        .filter(|h| !h.expired(now) && h.agent != agent)
    {
        let hit = match &h.resource {
            Resource::Path(p) => Pattern::parse(p).map_or(true, |p| p.overlaps(&lit)),
            Resource::Named(_) => false,
        };
        if hit {
            out.push(h.clone());
        }
    }
    Ok(out)
}

/// Ownership rules whose patterns overlap with different owners (for `check`).
pub fn overlapping_owner_rules(board: &Board) -> Vec<String> {
    let rules = owner_holds(board);
    let mut out = Vec::new();
    for (i, a) in rules.iter().enumerate() {
        for b in &rules[i + 1..] {
            if a.agent != b.agent && a.resource.overlaps(&b.resource) {
                out.push(format!(
                    "owners: '{}' ({}) and '{}' ({}) overlap: a path under both has two owners, and nobody else nor either of them alone can hold it",
                    a.resource.describe(),
                    a.agent,
                    b.resource.describe(),
                    b.agent
                ));
            }
        }
    }
    for (pattern, _) in &board.config.owners {
        if let Err(e) = pattern::normalise("", pattern)
            .ok_or_else(|| "it leaves the working tree".to_string())
            .and_then(|p| Pattern::parse(&p))
        {
            out.push(format!("owners: '{pattern}': {e}"));
        }
    }
    out
}

/// Turns a path or pattern given in `cwd` into a resource relative to the top of `top`
/// (the working tree): relative to where it was typed, `..` allowed within the tree. A
/// directory (`docs/`, or a path without globs naming a directory there) is held with
/// everything under it: `docs/**`.
pub fn path_resource(top: &Path, cwd: &Path, text: &str) -> Result<Resource> {
    let rel = relative(top, cwd, text).ok_or_else(|| {
        Error::input(format!(
            "{text}: not inside the working tree {}",
            top.display()
        ))
    })?;
    let rel = as_held(top, &rel, text.ends_with('/'));
    Pattern::parse(&rel).map_err(|e| Error::input(format!("{text}: {e}")))?;
    Ok(Resource::Path(rel))
}

/// The pattern a path is held as: a directory (said with a final `/`, or found on disk
/// under `top`) with `/**`, the whole tree as `**`.
pub fn as_held(top: &Path, rel: &str, dir: bool) -> String {
    if rel.is_empty() {
        return "**".into();
    }
    let literal = !rel.contains(['*', '?', '[']);
    let is_dir = dir || (literal && top.join(rel).is_dir());
    if is_dir && !rel.ends_with("/**") && rel != "**" {
        format!("{rel}/**")
    } else {
        rel.to_string()
    }
}

/// `text` (absolute, or relative to `cwd`) relative to the top of the working tree `top`;
/// None outside it.
pub fn relative(top: &Path, cwd: &Path, text: &str) -> Option<String> {
    let p = Path::new(text);
    if p.is_absolute() {
        let r = p.strip_prefix(top).ok()?;
        pattern::normalise("", &r.to_string_lossy())
    } else {
        let base = cwd
            .strip_prefix(top)
            .map(|b| b.to_string_lossy().replace('\\', "/"))
            .unwrap_or_default();
        pattern::normalise(&base, text)
    }
}

/// The top of the working tree holding `cwd` (the directory with `.git`), else the
/// board's project.
pub fn work_tree(board: &Board, cwd: &Path) -> std::path::PathBuf {
    crate::sync::repo::Repo::find(cwd)
        .map(|r| r.worktree)
        .unwrap_or_else(|| board.project().to_path_buf())
}
