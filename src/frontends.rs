//! The serving front-ends' commands (`mcp`, `setup`, `hook`), parsed before the library's
//! command line until it moves into the binary.

use std::process::ExitCode;

use clap::{Parser, Subcommand};

#[derive(Debug, Parser)]
#[command(name = "tavern")]
struct Cli {
    #[command(flatten)]
    global: tavern::cli::Global,
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Serve the board to an agent client over MCP (stdio)
    Mcp(crate::mcp::McpArgs),
    /// Set up an agent client (claude, codex, opencode) to work with this board
    Setup(crate::setup::SetupArgs),
    /// What the hooks `tavern setup` installs run (reads the client's event on stdin)
    #[command(hide = true)]
    Hook(crate::setup::hook::HookArgs),
}

pub fn dispatch() -> Option<ExitCode> {
    let first = std::env::args().skip(1).find(|a| !a.starts_with('-'))?;
    if !matches!(first.as_str(), "mcp" | "setup" | "hook") {
        return None;
    }
    let cli = Cli::parse();
    let json = cli.global.json;
    let result = (|| -> tavern::Result<ExitCode> {
        let cwd = std::env::current_dir()
            .map_err(|e| tavern::Error::io(".", "read the working directory", e))?;
        match cli.command {
            Command::Mcp(a) => {
                let board = || tavern::board::Board::discover(cli.global.board.as_deref(), &cwd);
                let explicit = cli
                    .global
                    .actor
                    .clone()
                    .or_else(|| std::env::var("TAVERN_AGENT").ok().filter(|s| !s.is_empty()))
                    .or_else(|| {
                        a.client.as_ref().map(|c| {
                            crate::setup::hook::agent_name(c, None, tavern::client::holder())
                        })
                    });
                let actor = explicit
                    .clone()
                    .or_else(|| std::env::var("USER").ok().filter(|s| !s.is_empty()))
                    .unwrap_or_else(|| "unknown".into());
                tavern::ops::validate_actor(&actor)?;
                crate::mcp::run(board, actor, explicit.is_some(), a)
            }
            Command::Setup(a) => crate::setup::run(&cwd, cli.global.board.as_deref(), json, a),
            Command::Hook(a) => crate::setup::hook::run(
                &cwd,
                cli.global.board.as_deref(),
                cli.global.actor.clone(),
                a,
            ),
        }
    })();
    Some(match result {
        Ok(code) => code,
        Err(e) => crate::report(e, json),
    })
}
