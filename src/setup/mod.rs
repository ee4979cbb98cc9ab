//! `tavern setup CLIENT`: hooks, MCP server entry and agent-loop notes for agent clients.

pub mod hook;

use std::path::Path;
use std::process::ExitCode;

use clap::Args;

#[derive(Debug, Args)]
pub struct SetupArgs {
    pub client: String,
}

pub fn run(_cwd: &Path, _board: Option<&Path>, _a: SetupArgs) -> tavern::Result<ExitCode> {
    Ok(ExitCode::SUCCESS)
}
