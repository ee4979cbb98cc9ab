//! `agent register|heartbeat|deregister|list`, `sweep`, `ready`.

use std::process::ExitCode;

use clap::{Args, Subcommand};

use super::Ctx;
use tavern::api::agents;
use tavern::error::Result;

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
            // Registering names the agent: it acts as itself unless --as says otherwise.
            let actor = ctx.global.actor.clone().unwrap_or_else(|| a.name.clone());
            let pid = a.pid.unwrap_or_else(std::os::unix::process::parent_id);
            ctx.print(&agents::register(
                &board,
                &actor,
                &a.name,
                &a.capabilities,
                pid,
            )?)
        }
        AgentCommand::Heartbeat => {
            let actor = ctx.actor(&board)?;
            ctx.print(&agents::heartbeat(&board, &actor)?)
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
    ctx.print(&agents::sweep(&board)?)
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
