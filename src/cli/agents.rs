//! `agent register|heartbeat|deregister|list`, `sweep`, `ready`.

use std::process::ExitCode;

use clap::{Args, Subcommand};
use serde_json::json;

use super::Ctx;
use super::output::{self, line};
use tavern::agents;
use tavern::error::{Error, Result};
use tavern::ops;
use tavern::query::Query;

#[derive(Debug, Subcommand)]
pub enum AgentCommand {
    /// Register (or re-register) an agent: writes control/agents/NAME.md
    Register(RegisterArgs),
    /// Say the agent is alive (any command run --as a registered agent does too)
    Heartbeat,
    /// Deregister the acting agent and release what it holds
    Deregister,
    /// Agents, their status (active, idle, stale, gone), what they hold, when last seen
    List,
}

#[derive(Debug, Args)]
pub struct RegisterArgs {
    /// The agent's name, which is also its id: the old spelling of `--as NAME`, which
    /// heartbeat and deregister take too [default: the acting agent]
    #[arg(long, value_name = "NAME")]
    pub name: Option<String>,
    /// What it can do, matched against tasks' `needs`
    #[arg(long, value_delimiter = ',')]
    pub capabilities: Vec<String>,
    /// The agent's long-lived process; a sweep on this host releases its claims only once
    /// it is gone [default: the process that ran this command]
    #[arg(long)]
    pub pid: Option<u32>,
}

pub fn agent(ctx: &Ctx, cmd: AgentCommand) -> Result<ExitCode> {
    let board = ctx.board()?;
    match cmd {
        AgentCommand::Register(a) => {
            // The agent is named as on every other command (--as, TAVERN_AGENT, the user);
            // --name is the older spelling, and names the agent when both are given.
            let actor = match (&ctx.global.actor, &a.name) {
                (Some(actor), _) => actor.clone(),
                (None, Some(name)) => name.clone(),
                (None, None) => ctx.actor_name()?,
            };
            tavern::ops::validate_actor(&actor)?;
            let name = a.name.clone().unwrap_or_else(|| actor.clone());
            let pid = a.pid.unwrap_or_else(std::os::unix::process::parent_id);
            let (card, entry) = agents::register(&board, &actor, &name, &a.capabilities, pid)?;
            if ctx.global.json {
                let mut v = output::doc_json(&card, false);
                v["region"] = "control/agents".into();
                v["path"] = board.rel(&agents::card_path(&board, &name)).into();
                v["seq"] = entry.seq.into();
                output::json_line(&v)?;
            } else {
                line(&format!(
                    "registered {name} (pid {pid}, lease {})",
                    board.config.lease
                ))?;
            }
        }
        AgentCommand::Heartbeat => {
            let actor = ctx.actor(&board)?;
            if agents::read(&board, &actor)?.is_none() {
                return Err(not_registered(&actor));
            }
            agents::heartbeat(&board, &actor)?;
            // On a connected board, the remote's records of this agent's claims renewed.
            let claims = tavern::sync::claims::renew(&board, &actor)?;
            for task in &claims.lost {
                eprintln!(
                    "warning: {task}: no longer held by {actor} on the remote (taken over, released or moved); `tavern claim {task}` to learn who holds it"
                );
            }
            if ctx.global.json {
                output::json_line(
                    &json!({"ok": true, "agent": actor, "renewed": claims.renewed, "lost": claims.lost}),
                )?;
            } else {
                output::note(
                    false,
                    &format!(
                        "heartbeat recorded for {actor}; its lease runs {} from now",
                        board.config.lease
                    ),
                );
            }
        }
        AgentCommand::Deregister => {
            let actor = ctx.actor(&board)?;
            if agents::read(&board, &actor)?.is_none() {
                return Err(not_registered(&actor));
            }
            let released = ops::sweep::release_claims_of(
                &board,
                &actor,
                &actor,
                &format!("{actor} deregistered"),
            )?;
            agents::mark_gone(&board, &actor, &actor)?;
            if ctx.global.json {
                output::json_line(&json!({"ok": true, "agent": actor, "released": released}))?;
            } else {
                line(&format!(
                    "deregistered {actor}; released {}",
                    if released.is_empty() {
                        "nothing".into()
                    } else {
                        released.join(", ")
                    }
                ))?;
            }
        }
        AgentCommand::List => {
            ops::sweep::sweep(&board)?;
            let list = agents::all(&board)?;
            let held = tavern::scan::scan_matching(&board, &[tavern::doc::Region::Tasks], |d| {
                d.str("claimed_by").is_some()
                    && !d
                        .status()
                        .is_some_and(|s| board.config.workflow.is_terminal(s))
            })?;
            let now = chrono::Utc::now();
            let mut rows = Vec::new();
            for a in &list {
                let holds: Vec<&str> = held
                    .docs
                    .iter()
                    .filter(|d| d.str("claimed_by") == Some(a.id()))
                    .map(|d| d.id())
                    .collect();
                let status = if a.gone() {
                    "gone"
                } else if a.stale(&board, now) {
                    "stale"
                } else if holds.is_empty() {
                    "idle"
                } else {
                    "active"
                };
                rows.push((a, status, holds));
            }
            if ctx.global.json {
                let items: Vec<_> = rows
                    .iter()
                    .map(|(a, status, holds)| json!({"id": a.id(), "status": status, "holds": holds, "last_seen": tavern::time::stamp(a.last_seen), "capabilities": a.capabilities(), "host": a.host(), "pid": a.pid()}))
                    .collect();
                output::json_line(&json!({"agents": items}))?;
            } else {
                // Columns as wide as their widest cell, so three held ids or a long name
                // do not push the rest out of line.
                let cells: Vec<[String; 5]> = rows
                    .iter()
                    .map(|(a, status, holds)| {
                        let or_dash = |s: String| if s.is_empty() { "-".to_string() } else { s };
                        [
                            output::cell(a.id()),
                            status.to_string(),
                            if a.last_seen == chrono::DateTime::<chrono::Utc>::UNIX_EPOCH {
                                "never".to_string()
                            } else {
                                tavern::time::ago(a.last_seen, now)
                            },
                            or_dash(holds.join(",")),
                            output::cell(&or_dash(a.capabilities().join(","))),
                        ]
                    })
                    .collect();
                let text =
                    output::table(["AGENT", "STATUS", "SEEN", "HOLDS", "CAPABILITIES"], &cells);
                output::out(&text)?;
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn not_registered(actor: &str) -> Error {
    Error::NotFound {
        what: format!("agent '{actor}'"),
        hint: format!("register it with `tavern agent register --as {actor}`"),
    }
}

pub fn sweep(ctx: &Ctx) -> Result<ExitCode> {
    let board = ctx.board()?;
    let released = ops::sweep::sweep(&board)?;
    let expired = ops::archive::expire_observations(&board, ops::sweep::SWEEPER)?;
    let keep = tavern::runs::keep(&board);
    let running = tavern::watch::scheduler::running_outputs(&board);
    let pruned = tavern::runs::prune(&board, keep, &running)?;
    let temps = tavern::store::write::remove_stale_temps(&board)?;
    if ctx.global.json {
        output::json_line(
            &json!({"released": released, "expired": expired, "runs_removed": pruned, "temps_removed": temps}),
        )?;
    } else {
        for r in &released {
            line(&format!("released {}: {}", r.task, r.reason))?;
        }
        for e in &expired {
            line(&format!("{}: {}", e.doc, e.note.as_deref().unwrap_or("")))?;
        }
        if pruned > 0 {
            line(&format!(
                "removed {pruned} run output{} older than {} from .state/runs/",
                if pruned == 1 { "" } else { "s" },
                board.config.watch.keep_runs
            ))?;
        }
        for t in &temps {
            line(&format!(
                "removed {t}: a temp file left by an interrupted write"
            ))?;
        }
        if released.is_empty() && expired.is_empty() && pruned == 0 && temps.is_empty() {
            output::note(
                false,
                &format!(
                    "nothing to sweep: no stale claims, no expired session findings, no run outputs older than {}",
                    board.config.watch.keep_runs
                ),
            );
        }
    }
    Ok(ExitCode::SUCCESS)
}

#[derive(Debug, Args)]
pub struct ReadyArgs {
    /// Query terms the tasks must match
    #[arg(value_name = "QUERY")]
    pub query: Vec<String>,
}

pub fn ready(ctx: &Ctx, a: ReadyArgs) -> Result<ExitCode> {
    let board = ctx.board()?;
    let query = Query::parse(&a.query)?;
    let (docs, skipped) = ops::transition::ready(&board, &query)?;
    output::warn_skipped(&skipped);
    if ctx.global.json {
        let items: Vec<_> = docs.iter().map(|d| output::doc_json(d, false)).collect();
        output::json_line(&json!({"documents": items, "skipped": output::skipped_json(&skipped)}))?;
    } else if !docs.is_empty() {
        output::out(&output::doc_table(&docs))?;
    } else {
        output::note(
            false,
            "no claimable task matches (every task is claimed, finished, or waiting for its dependencies)",
        );
    }
    Ok(ExitCode::SUCCESS)
}
