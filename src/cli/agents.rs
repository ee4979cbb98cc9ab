//! `agent register|heartbeat|deregister|list`, `sweep`, `ready`.

use std::process::ExitCode;

use clap::{Args, Subcommand};

use super::Ctx;
use tavern::api::Result;
use tavern::api::agents;

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
            let name = a.name.clone().unwrap_or_else(|| actor.clone());
            let pid = a.pid.unwrap_or_else(std::os::unix::process::parent_id);
            ctx.print(&agents::register(
                &board,
                &actor,
                &name,
                &a.capabilities,
                pid,
            )?)
        }
        AgentCommand::Heartbeat => {
            let actor = ctx.actor(&board)?;
            let beat = agents::heartbeat(&board, &actor)?;
            let code = ctx.print(&beat)?;
            super::output::note(
                ctx.global.json,
                &format!(
                    "heartbeat recorded for {actor}; its lease runs {} from now",
                    board.config.lease
                ),
            );
            Ok(code)
        }
        AgentCommand::Deregister => {
            let actor = ctx.actor(&board)?;
            ctx.print(&agents::deregister(&board, &actor)?)
        }
        AgentCommand::List => ctx.print(&agents::list(&board)?),
    }
}

pub fn sweep(ctx: &Ctx) -> Result<ExitCode> {
    let board = ctx.board()?;
    let swept = agents::sweep(&board)?;
    let code = ctx.print(&swept)?;
    if swept.is_empty() {
        super::output::note(
            ctx.global.json,
            &format!(
                "nothing to sweep: no stale claims, no expired session findings, no run outputs older than {}",
                swept.keep_runs
            ),
        );
    }
    Ok(code)
}

#[derive(Debug, Args)]
pub struct ReadyArgs {
    /// Query terms the tasks must match
    #[arg(value_name = "QUERY")]
    pub query: Vec<String>,
    /// Every ready task, also those needing capabilities the acting agent lacks
    #[arg(long)]
    pub all: bool,
}

pub fn ready(ctx: &Ctx, a: ReadyArgs) -> Result<ExitCode> {
    use super::output::{cell, forged_warning};
    use tavern::api::tasks::ready_rows;
    let board = ctx.board()?;
    // A read: with nobody named it lists every ready task, as for an unregistered actor.
    let actor = match ctx.named_actor() {
        Some(_) => Some(ctx.actor(&board)?),
        None => None,
    };
    let for_actor = actor.as_deref().filter(|_| !a.all);
    // Rows made as the tasks are read, as `list` makes them.
    let (empty, lacking) = if ctx.global.json {
        let r = ready_rows(&board, &a.query, for_actor, |d| {
            (tavern::api::docs::brief_json(&d), forged_warning(&d))
        })?;
        let extra = format!(",\"lacking\":{}", r.lacking);
        (
            super::docs::print_json_rows(r.rows, &r.skipped, &extra)?,
            r.lacking,
        )
    } else {
        // The rows come from the read index's heads (a task's decision is never forged:
        // only questions have one); a task is parsed only where a query term needs it.
        let r = tavern::api::tasks::ready_heads(&board, &a.query, for_actor)?;
        let rows = r.rows.into_iter().map(|t| {
            let row = [
                cell(&t.id),
                cell(&t.status),
                cell(t.pri.as_deref().unwrap_or("-")),
                cell(t.owner.as_deref().unwrap_or("-")),
                cell(&t.title),
            ];
            (row, None)
        });
        (
            super::docs::print_table_rows(rows.collect(), &r.skipped)?,
            r.lacking,
        )
    };
    let actor = actor.unwrap_or_default();
    if lacking > 0 {
        super::output::note(
            ctx.global.json,
            &format!(
                "{} more ready {} {} capabilities {actor} lacks (`tavern ready --all` lists {})",
                lacking,
                if lacking == 1 { "task" } else { "tasks" },
                if lacking == 1 { "needs" } else { "need" },
                if lacking == 1 { "it" } else { "them" },
            ),
        );
    } else if empty {
        super::output::note(
            ctx.global.json,
            "no claimable task matches (every task is claimed, finished, or waiting for its dependencies)",
        );
    }
    Ok(ExitCode::SUCCESS)
}
