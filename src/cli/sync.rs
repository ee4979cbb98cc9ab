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
