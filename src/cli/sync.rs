//! `status`: which board is used and why, and how it is shared.

use std::process::ExitCode;

use super::Ctx;
use super::output::line;
use tavern::error::Result;
use tavern::sync::status::Layout;

pub fn status(ctx: &Ctx) -> Result<ExitCode> {
    let board = ctx.board()?;
    let s = tavern::sync::status::status(&board)?;
    if ctx.global.json {
        super::render::json(&s)?;
        return Ok(ExitCode::SUCCESS);
    }
    line(&format!("board: {}", s.board.display()))?;
    line(&format!("  why: {}", s.why))?;
    if let Some(copy) = &s.ignored_copy {
        line(&format!(
            "  not used: {} (this worktree's checked-out copy)",
            copy.display()
        ))?;
    }
    if let Some(repo) = &s.repo {
        line(&format!(
            "repository: {} ({} worktree{})",
            repo.common_dir.display(),
            s.worktrees,
            if s.worktrees == 1 { "" } else { "s" }
        ))?;
    }
    line(&format!(
        "layout: {}",
        match s.layout {
            Layout::NoGit =>
                "not in a git repository: the board is shared only through this directory",
            Layout::CodeBranch =>
                "code branch: .tavern/ is tracked with the code and travels with git pull and push",
            Layout::BoardBranch => "board branch: .tavern/ is not tracked by the code branches",
        }
    ))?;
    line(&format!(
        "remote: {}",
        s.remote
            .as_deref()
            .unwrap_or("none (not connected; `tavern sync init` connects the board)")
    ))?;
    Ok(ExitCode::SUCCESS)
}

#[derive(Debug, clap::Args)]
pub struct SyncArgs {
    #[command(subcommand)]
    pub command: Option<SyncCommand>,
}

#[derive(Debug, clap::Subcommand)]
pub enum SyncCommand {
    /// Connect the board to a git remote (default origin) and fetch its board branch if it has one
    Init {
        /// The git remote
        #[arg(default_value = "origin")]
        remote: String,
    },
}

pub fn sync(ctx: &Ctx, a: SyncArgs) -> Result<ExitCode> {
    match a.command {
        Some(SyncCommand::Init { remote }) => {
            let repo = tavern::sync::repo::Repo::find(&ctx.cwd).ok_or_else(|| {
                tavern::Error::input(format!(
                    "{} is not in a git repository: sync needs one",
                    ctx.cwd.display()
                ))
            })?;
            let root = match ctx.board() {
                Ok(b) => b.root,
                Err(_) => repo
                    .in_main(&ctx.cwd)
                    .and(repo.main.clone())
                    .unwrap_or_else(|| repo.worktree.clone())
                    .join(tavern::layout::BOARD_DIR),
            };
            let had = tavern::sync::init(&repo, &root, &remote)?;
            if ctx.global.json {
                super::render::json(
                    &serde_json::json!({"remote": remote, "board": root, "remote_had_board": had}),
                )?;
            } else {
                line(&format!(
                    "connected {} to '{remote}'{}",
                    root.display(),
                    if had {
                        " (fetched its board branch)"
                    } else {
                        ""
                    }
                ))?;
            }
        }
        None => {
            let board = ctx.board()?;
            let x = tavern::sync::exchange(&board)?;
            render_exchange(ctx, &x)?;
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn render_exchange(ctx: &Ctx, x: &tavern::sync::Exchange) -> Result<()> {
    if ctx.global.json {
        return super::render::json(x);
    }
    line(&format!(
        "{}: {}{}",
        x.remote,
        x.outcome,
        if x.changed.is_empty() {
            String::new()
        } else {
            format!(
                " ({} file{} changed here)",
                x.changed.len(),
                if x.changed.len() == 1 { "" } else { "s" }
            )
        }
    ))?;
    for c in &x.conflicts {
        line(&format!(
            "  conflict: {} {}: kept {}, dropped {}",
            c.doc, c.field, c.kept, c.dropped
        ))?;
    }
    for id in &x.claims_followed {
        line(&format!("  {id}: follows the remote's claim record"))?;
    }
    Ok(())
}
