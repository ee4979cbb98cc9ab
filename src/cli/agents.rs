//! `agent register|heartbeat|deregister|list`, `sweep`, `ready`.

use std::process::ExitCode;

use clap::{Args, Subcommand};
use serde_json::json;

use super::Ctx;
use super::output::{self, line};
use tavern::agents;
use tavern::error::{Error, Result};
use tavern::ops;

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
    /// The agent's name, which is also its id
    #[arg(long)]
    pub name: String,
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
            let actor = ctx.global.actor.clone().unwrap_or_else(|| a.name.clone());
            tavern::ops::validate_actor(&actor)?;
            let pid = a.pid.unwrap_or_else(std::os::unix::process::parent_id);
            let (card, entry) = agents::register(&board, &actor, &a.name, &a.capabilities, pid)?;
            if ctx.global.json {
                let mut v = output::doc_json(&card, false);
                v["region"] = "control/agents".into();
                v["path"] = board.rel(&agents::card_path(&board, &a.name)).into();
                v["seq"] = entry.seq.into();
                output::json_line(&v)?;
            } else {
                line(&format!(
                    "registered {} (pid {pid}, lease {})",
                    a.name, board.config.lease
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
        AgentCommand::List => return ctx.print(&tavern::api::agents::list(&board)?),
    }
    Ok(ExitCode::SUCCESS)
}

fn not_registered(actor: &str) -> Error {
    Error::NotFound {
        what: format!("agent '{actor}'"),
        hint: format!("register it with `tavern agent register --name {actor}`"),
    }
}

pub fn sweep(ctx: &Ctx) -> Result<ExitCode> {
    let board = ctx.board()?;
    let released = ops::sweep::sweep(&board)?;
    let expired = ops::archive::expire_observations(&board, ops::sweep::SWEEPER)?;
    let keep = tavern::runs::keep(&board);
    let running = tavern::watch::scheduler::running_outputs(&board);
    let pruned = tavern::runs::prune(&board, keep, &running)?;
    if ctx.global.json {
        output::json_line(
            &json!({"released": released, "expired": expired, "runs_removed": pruned}),
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
    ctx.print(&tavern::api::tasks::ready(&board, &a.query)?)
}
