//! `deps` and `tree`: what a task waits for, what waits for it, and its subtasks.

use std::process::ExitCode;

use clap::Args;

use super::Ctx;
use super::output::{self, line};
use tavern::doc::Region;
use tavern::error::Result;
use tavern::ops;

#[derive(Debug, Args)]
pub struct GraphArgs {
    /// The task (id or unique prefix)
    pub id: String,
}

pub fn deps(ctx: &Ctx, a: GraphArgs) -> Result<ExitCode> {
    let board = ctx.board()?;
    let (_, id) = ops::resolve::resolve(&board, &a.id, &[Region::Tasks])?;
    let v = ops::graph::deps(&board, &id)?;
    if ctx.global.json {
        return output::json_line(&v).map(|_| ExitCode::SUCCESS);
    }
    let mut text = String::new();
    ops::graph::render(std::slice::from_ref(&strip(&v)), 0, &mut text);
    for (key, heading) in [
        ("waits_for", "waits for:"),
        ("waited_on_by", "waited on by:"),
    ] {
        text.push_str(heading);
        let nodes = v[key].as_array().cloned().unwrap_or_default();
        if nodes.is_empty() {
            text.push_str(" nothing\n");
        } else {
            text.push('\n');
            ops::graph::render(&nodes, 1, &mut text);
        }
    }
    output::out(&text)?;
    Ok(ExitCode::SUCCESS)
}

/// The root node without its subtrees, for its one header line.
fn strip(v: &serde_json::Value) -> serde_json::Value {
    serde_json::json!({"id": v["id"], "title": v["title"], "status": v["status"]})
}

pub fn tree(ctx: &Ctx, a: GraphArgs) -> Result<ExitCode> {
    let board = ctx.board()?;
    let (_, id) = ops::resolve::resolve(&board, &a.id, &[Region::Tasks])?;
    let v = ops::graph::tree(&board, &id)?;
    if ctx.global.json {
        return output::json_line(&v).map(|_| ExitCode::SUCCESS);
    }
    let mut text = String::new();
    ops::graph::render(std::slice::from_ref(&v), 0, &mut text);
    line(text.trim_end())?;
    Ok(ExitCode::SUCCESS)
}
