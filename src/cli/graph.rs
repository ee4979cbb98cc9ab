//! `deps` and `tree`: what a task waits for, what waits for it, and its subtasks.

use std::process::ExitCode;

use clap::Args;

use super::Ctx;
use tavern::api;
use tavern::api::Result;

#[derive(Debug, Args)]
pub struct GraphArgs {
    /// The task (id or unique prefix)
    pub id: String,
}

pub fn deps(ctx: &Ctx, a: GraphArgs) -> Result<ExitCode> {
    let board = ctx.board()?;
    ctx.print(&api::graph::deps(&board, &a.id)?)
}

pub fn tree(ctx: &Ctx, a: GraphArgs) -> Result<ExitCode> {
    let board = ctx.board()?;
    ctx.print(&api::graph::tree(&board, &a.id)?)
}
