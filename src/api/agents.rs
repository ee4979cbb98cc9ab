//! Agents: register, heartbeat, deregister, the list of who is registered with what each
//! holds and its status, and the sweep that gives expired claims back.

use chrono::{DateTime, Utc};
use serde::Serialize;

use crate::agents::{self, Agent};
use crate::board::Board;
use crate::doc::Region;
use crate::error::{Error, Result};
use crate::log::Entry;
use crate::ops::sweep::Released;

/// Where an agent stands: gone (deregistered), stale (lease over and process gone),
/// else active when it holds a task, idle when not.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    Active,
    Idle,
    Stale,
    Gone,
}

impl Status {
    pub fn of(agent: &Agent, board: &Board, now: DateTime<Utc>, holds_any: bool) -> Status {
        if agent.gone() {
            Status::Gone
        } else if agent.stale(board, now) {
            Status::Stale
        } else if holds_any {
            Status::Active
        } else {
            Status::Idle
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Status::Active => "active",
            Status::Idle => "idle",
            Status::Stale => "stale",
            Status::Gone => "gone",
        }
    }
}

/// One row of the agent list.
#[derive(Debug, Serialize)]
pub struct AgentRow {
    pub id: String,
    pub status: Status,
    /// The tasks it has claimed that are not finished.
    pub holds: Vec<String>,
    /// Its last heartbeat or card change; the epoch when it was never seen.
    #[serde(serialize_with = "stamp")]
    pub last_seen: DateTime<Utc>,
    pub capabilities: Vec<String>,
    pub host: Option<String>,
    pub pid: Option<u32>,
}

pub(crate) fn stamp<S: serde::Serializer>(t: &DateTime<Utc>, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&crate::time::stamp_millis(*t))
}

#[derive(Debug, Serialize)]
pub struct AgentList {
    pub agents: Vec<AgentRow>,
    /// When the statuses were decided, for "seen 5m ago".
    #[serde(skip)]
    pub now: DateTime<Utc>,
}

/// Every registered agent with its status and what it holds, by id. Expired leases are
/// swept first, so a stale agent's claims are already back in the pool.
pub fn list(board: &Board) -> Result<AgentList> {
    crate::ops::sweep::sweep(board)?;
    let list = agents::all(board)?;
    let held = crate::scan::scan_matching(board, &[Region::Tasks], |d| {
        d.str("claimed_by").is_some()
            && !d
                .status()
                .is_some_and(|s| board.config.workflow.is_terminal(s))
    })?;
    let now = Utc::now();
    let agents = list
        .iter()
        .map(|a| {
            let holds: Vec<String> = held
                .docs
                .iter()
                .filter(|d| d.str("claimed_by") == Some(a.id()))
                .map(|d| d.id().to_string())
                .collect();
            AgentRow {
                id: a.id().to_string(),
                status: Status::of(a, board, now, !holds.is_empty()),
                holds,
                last_seen: a.last_seen,
                capabilities: a.capabilities(),
                host: a.host().map(str::to_string),
                pid: a.pid(),
            }
        })
        .collect();
    Ok(AgentList { agents, now })
}

/// An agent registered: its card, where the card is, and the log entry's seq.
#[derive(Debug)]
pub struct Registered {
    pub card: crate::doc::Document,
    pub path: String,
    pub entry: Entry,
    pub pid: u32,
    /// The board's lease, as board.yaml spells it.
    pub lease: String,
}

impl Serialize for Registered {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        // The card as a document, but in control/agents, where cards live.
        let mut m = s.serialize_map(None)?;
        m.serialize_entry("id", self.card.id())?;
        m.serialize_entry("region", "control/agents")?;
        m.serialize_entry("path", &self.path)?;
        m.serialize_entry("rev", &self.card.rev())?;
        m.serialize_entry("fields", &self.card.fields)?;
        m.serialize_entry("seq", &self.entry.seq)?;
        m.end()
    }
}

/// Registers (or re-registers) agent `name`: its card in control/agents/. `pid` is its
/// long-lived process: a sweep on this host releases its claims only once it is gone.
pub fn register(
    board: &Board,
    actor: &str,
    name: &str,
    capabilities: &[String],
    pid: u32,
) -> Result<Registered> {
    crate::ops::validate_actor(actor)?;
    let (card, entry) = agents::register(board, actor, name, capabilities, pid)?;
    // What concerns it from now on is delivered to it (a name registered before keeps
    // its place: what happened while it was away still comes).
    super::delivery::start(board, name)?;
    Ok(Registered {
        card,
        path: board.rel(&agents::card_path(board, name)),
        entry,
        pid,
        lease: board.config.lease.clone(),
    })
}

/// The name of the agent a client session acts as when nothing names it: the client's
/// name and the process id of the client (`claude-4242`). Its hooks and its MCP server
/// take the same name, so they act as one agent.
pub fn session_name(client: &str, holder: u32) -> String {
    format!("{client}-{holder}")
}

/// Registers agent `name` for a client session, acting as itself, with `holder` as the
/// process that holds its claims, with these capabilities or else those its card already
/// has. A card that already says this (the same live holder on this host, not gone, the
/// same capabilities) is only a heartbeat: one client start is one `registered` in the
/// log, however many of its hooks and servers register it.
pub fn join(board: &Board, name: &str, capabilities: Option<&[String]>, holder: u32) -> Result<()> {
    let card = agents::read(board, name)?;
    let capabilities = match (capabilities, &card) {
        (Some(c), _) => c.to_vec(),
        (None, Some(a)) => a.capabilities(),
        (None, None) => Vec::new(),
    };
    if let Some(a) = &card
        && !a.gone()
        && a.pid() == Some(holder)
        && a.host() == Some(agents::host_name().as_str())
        && a.capabilities() == capabilities
    {
        super::actor(board, name)?;
        return Ok(());
    }
    register(board, name, name, &capabilities, holder)?;
    Ok(())
}

/// A client session's end: deregisters agent `name` unless it is not registered or
/// already gone (then nothing happens).
pub fn leave(board: &Board, name: &str) -> Result<()> {
    if agents::read(board, name)?.is_none_or(|a| a.gone()) {
        return Ok(());
    }
    deregister(board, name)?;
    Ok(())
}

fn not_registered(actor: &str) -> Error {
    Error::NotRegistered {
        agent: actor.to_string(),
    }
}

#[derive(Debug, Serialize)]
pub struct Heartbeat {
    pub ok: bool,
    pub agent: String,
    /// On a connected board: the tasks whose remote claim records were renewed.
    pub renewed: Vec<String>,
    /// On a connected board: the tasks the remote no longer says this agent holds (taken
    /// over, released or moved elsewhere).
    pub lost: Vec<String>,
}

/// Says a registered agent is alive; on a connected board its remote claim records are
/// renewed too, so no other machine takes them over.
pub fn heartbeat(board: &Board, actor: &str) -> Result<Heartbeat> {
    if agents::read(board, actor)?.is_none() {
        return Err(not_registered(actor));
    }
    agents::heartbeat(board, actor)?;
    let claims = crate::sync::claims::renew(board, actor)?;
    Ok(Heartbeat {
        ok: true,
        agent: actor.to_string(),
        renewed: claims.renewed,
        lost: claims.lost,
    })
}

#[derive(Debug, Serialize)]
pub struct Deregistered {
    pub ok: bool,
    pub agent: String,
    /// The tasks it held, given back to the pool.
    pub released: Vec<String>,
    /// The holds it had on resources, released.
    pub holds: Vec<String>,
}

/// Deregisters a registered agent: what it holds goes back to the pool, its card says gone.
pub fn deregister(board: &Board, actor: &str) -> Result<Deregistered> {
    if agents::read(board, actor)?.is_none() {
        return Err(not_registered(actor));
    }
    let released = crate::ops::sweep::release_claims_of(
        board,
        actor,
        actor,
        &format!("{actor} deregistered"),
    )?;
    let holds = super::holds::release_agent(board, actor, actor, &format!("{actor} deregistered"))?
        .into_iter()
        .map(|h| h.id)
        .collect();
    agents::mark_gone(board, actor, actor)?;
    Ok(Deregistered {
        ok: true,
        agent: actor.to_string(),
        released,
        holds,
    })
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

/// What a sweep did.
#[derive(Debug, Serialize)]
pub struct Swept {
    /// Claims of agents whose lease expired, given back.
    pub released: Vec<Released>,
    /// Session findings past their expiry, archived.
    pub expired: Vec<Entry>,
    /// Holds on resources past their expiry, released.
    #[serde(skip_serializing_if = "is_zero")]
    pub holds_expired: usize,
    /// Activation outputs in .state/runs/ older than the board keeps them, removed.
    pub runs_removed: usize,
    /// Temp files left by interrupted writes, removed (paths relative to the board).
    pub temps_removed: Vec<String>,
    /// Documents found both in their region and in the archive, put in one place.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub placed: Vec<Entry>,
    /// How long run outputs are kept (watch.keep_runs).
    #[serde(skip)]
    pub keep_runs: String,
}

impl Swept {
    /// Nothing was there to sweep.
    pub fn is_empty(&self) -> bool {
        self.released.is_empty()
            && self.expired.is_empty()
            && self.runs_removed == 0
            && self.temps_removed.is_empty()
            && self.placed.is_empty()
            && self.holds_expired == 0
    }
}

/// Gives the claims of agents whose lease expired back to the pool, archives expired
/// session findings, removes old activation outputs (sparing those of running ones) and the temp files
/// interrupted writes left.
pub fn sweep(board: &Board) -> Result<Swept> {
    let released = crate::ops::sweep::sweep(board)?;
    let holds_expired = crate::holds::expire(board)?.len();
    let expired = crate::ops::archive::expire_observations(board, crate::ops::sweep::SWEEPER)?;
    let keep = crate::runs::keep(board);
    let running = crate::watch::scheduler::running_outputs(board);
    let runs_removed = crate::runs::prune(board, keep, &running)?;
    let temps_removed = crate::store::write::remove_stale_temps(board)?;
    let placed = crate::ops::archive::one_place_all(board, crate::ops::sweep::SWEEPER)?;
    Ok(Swept {
        holds_expired,
        placed,
        released,
        expired,
        runs_removed,
        temps_removed,
        keep_runs: board.config.watch.keep_runs.clone(),
    })
}
