//! `sources list` and `sources check`: the knowledge sources of watch mode, what each
//! reacts to and when it last ran, and whether every source file is valid.

use std::process::ExitCode;

use clap::Subcommand;

use super::Ctx;
use tavern::api::Result;
use tavern::api::sources;

#[derive(Debug, Subcommand)]
pub enum SourcesCommand {
    /// The registered sources, what they react to, and their last activation
    List,
    /// Validate every source file; exit 6 listing every problem, 0 when clean
    Check,
}

pub fn run(ctx: &Ctx, cmd: SourcesCommand) -> Result<ExitCode> {
    match cmd {
        SourcesCommand::List => list(ctx),
        SourcesCommand::Check => check(ctx),
    }
}

fn list(ctx: &Ctx) -> Result<ExitCode> {
    let board = ctx.board()?;
    ctx.print(&sources::list(&board)?)
}

fn check(ctx: &Ctx) -> Result<ExitCode> {
    let board = ctx.board()?;
    ctx.print(&sources::check(&board)?)
}
