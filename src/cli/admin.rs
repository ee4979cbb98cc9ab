//! `init`, `check`, `completions`.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, CommandFactory};

use super::Ctx;
use super::output;
use tavern::api;
use tavern::api::{Error, Result};

#[derive(Debug, Args)]
pub struct InitArgs {
    /// The project directory to create .tavern/ in [default: the working directory]
    pub dir: Option<PathBuf>,
    /// Create a board even inside the project of another one (which it then hides from
    /// commands run below this directory)
    #[arg(long)]
    pub nested: bool,
}

pub fn init(ctx: &Ctx, a: InitArgs) -> Result<ExitCode> {
    let dir = match a.dir.or_else(|| ctx.global.board.clone()) {
        Some(d) if d.is_absolute() => d,
        Some(d) => ctx.cwd.join(d),
        None => api::board::default_dir(&ctx.cwd),
    };
    ctx.print(&api::board::init(&dir, a.nested)?)
}

pub fn check(ctx: &Ctx) -> Result<ExitCode> {
    let board = ctx.board_as_found()?;
    ctx.print(&api::board::check(&board)?)
}

#[derive(Debug, Args)]
pub struct CompletionsArgs {
    /// The shell
    pub shell: clap_complete::Shell,
}

pub fn completions(a: CompletionsArgs) -> Result<ExitCode> {
    let mut cmd = super::Cli::command();
    let mut buf = Vec::new();
    clap_complete::generate(a.shell, &mut cmd, "tavern", &mut buf);
    output::out(&String::from_utf8_lossy(&buf))?;
    Ok(ExitCode::SUCCESS)
}

#[derive(Debug, Args)]
pub struct SummaryArgs {
    /// Only tasks, findings and questions of this context
    #[arg(long)]
    pub context: Option<String>,
    /// How long without change before a claimed task or an unacknowledged finding looks stuck
    #[arg(long, default_value = "1h", value_name = "DURATION")]
    pub stuck_after: String,
    /// Items each list shows at most (the best first; questions oldest first)
    #[arg(long, value_name = "N", default_value_t = api::summary::LIMIT)]
    pub limit: usize,
    /// Show every item of every list (what it holds then grows with the board)
    #[arg(long, conflicts_with = "limit")]
    pub all: bool,
}

pub fn summary(ctx: &Ctx, a: SummaryArgs) -> Result<ExitCode> {
    let board = ctx.board()?;
    let stuck = tavern::api::time::parse_duration(&a.stuck_after).ok_or_else(|| {
        Error::usage(format!(
            "--stuck-after '{}': expected a duration like 30m or 2h",
            a.stuck_after
        ))
    })?;
    let limit = (!a.all).then_some(a.limit);
    ctx.print(&api::summary::summary(
        &board,
        a.context.as_deref(),
        stuck,
        limit,
    )?)
}

#[derive(Debug, Args)]
pub struct ArchiveArgs {
    /// Query terms the documents must match (they must also be finished)
    #[arg(value_name = "QUERY")]
    pub query: Vec<String>,
    /// Only documents not updated for this long (e.g. 30d)
    #[arg(long, value_name = "DURATION")]
    pub older_than: Option<String>,
    /// Only say what would move; move nothing
    #[arg(long, short = 'n')]
    pub dry_run: bool,
}

/// `archive`: moves finished documents (terminal tasks, resolved or rejected findings,
/// decided questions) to archive/.
pub fn archive(ctx: &Ctx, a: ArchiveArgs) -> Result<ExitCode> {
    let board = ctx.board()?;
    let actor = ctx.actor(&board)?;
    let older = a
        .older_than
        .as_deref()
        .map(|d| {
            tavern::api::time::parse_duration(d).ok_or_else(|| {
                Error::usage(format!("--older-than '{d}': expected a duration like 30d"))
            })
        })
        .transpose()?;
    let nothing = |code: ExitCode, none: bool| {
        if none {
            output::note(
                ctx.global.json,
                "nothing to archive: no finished document matches",
            );
        }
        code
    };
    if a.dry_run {
        let would = api::board::archive_dry_run(&board, &a.query, older)?;
        return Ok(nothing(ctx.print(&would)?, would.would_move.is_empty()));
    }
    let archived = api::board::archive(&board, &actor, &a.query, older)?;
    Ok(nothing(ctx.print(&archived)?, archived.moved.is_empty()))
}
