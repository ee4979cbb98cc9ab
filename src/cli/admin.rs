//! `init`, `check`, `completions`.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, CommandFactory};
use serde_json::json;

use super::Ctx;
use super::output::{self, line};
use tavern::error::{Error, Result};

#[derive(Debug, Args)]
pub struct InitArgs {
    /// The project directory to create .tavern/ in [default: the working directory]
    pub dir: Option<PathBuf>,
}

pub fn init(ctx: &Ctx, a: InitArgs) -> Result<ExitCode> {
    let project = match a.dir.or_else(|| ctx.global.board.clone()) {
        Some(d) if d.is_absolute() => d,
        Some(d) => ctx.cwd.join(d),
        None => ctx.cwd.clone(),
    };
    // `--board path/.tavern` names the board itself; create it there, not inside it.
    let project = if project
        .file_name()
        .is_some_and(|n| n == tavern::board::BOARD_DIR)
    {
        project.parent().map(PathBuf::from).unwrap_or(project)
    } else {
        project
    };
    if !project.is_dir() {
        return Err(Error::NotFound {
            what: format!("directory {}", project.display()),
            hint: "create it first".into(),
        });
    }
    let report = tavern::board::init(&project)?;
    if ctx.global.json {
        output::json_line(&json!({"board": report.root, "created": report.created}))?;
    } else if report.created.is_empty() {
        line(&format!(
            "board already initialised at {}; nothing changed",
            report.root.display()
        ))?;
    } else {
        line(&format!("initialised board at {}", report.root.display()))?;
        for c in &report.created {
            line(&format!("  created {c}"))?;
        }
    }
    Ok(ExitCode::SUCCESS)
}

pub fn check(ctx: &Ctx) -> Result<ExitCode> {
    let board = ctx.board()?;
    let report = tavern::check::check(&board)?;
    if ctx.global.json {
        output::json_line(
            &json!({"ok": report.is_clean(), "documents": report.documents, "log_entries": report.log_entries, "problems": report.problems}),
        )?;
    } else if report.is_clean() {
        line(&format!(
            "ok: {} documents and {} log entries checked, no problems",
            report.documents, report.log_entries
        ))?;
    } else {
        for p in &report.problems {
            eprintln!("{}: {}", p.path, p.problem);
        }
        eprintln!(
            "{} problem{} in {}",
            report.problems.len(),
            if report.problems.len() == 1 { "" } else { "s" },
            board.root.display()
        );
    }
    Ok(if report.is_clean() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(tavern::error::Kind::Invalid.exit_code())
    })
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
}

pub fn summary(ctx: &Ctx, a: SummaryArgs) -> Result<ExitCode> {
    let board = ctx.board()?;
    let stuck = tavern::time::parse_duration(&a.stuck_after).ok_or_else(|| {
        Error::usage(format!(
            "--stuck-after '{}': expected a duration like 30m or 2h",
            a.stuck_after
        ))
    })?;
    ctx.print(&tavern::api::summary::summary(
        &board,
        a.context.as_deref(),
        stuck,
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
}

/// `archive`: moves finished documents (terminal tasks, resolved or rejected findings,
/// decided questions) to archive/.
pub fn archive(ctx: &Ctx, a: ArchiveArgs) -> Result<ExitCode> {
    let board = ctx.board()?;
    let actor = ctx.actor(&board)?;
    let query = tavern::query::Query::parse(&a.query)?;
    let older = a
        .older_than
        .as_deref()
        .map(|d| {
            tavern::time::parse_duration(d).ok_or_else(|| {
                Error::usage(format!("--older-than '{d}': expected a duration like 30d"))
            })
        })
        .transpose()?;
    let moved = tavern::ops::archive::archive(&board, &actor, &query, older)?;
    if ctx.global.json {
        output::json_line(&json!({"moved": moved}))?;
    } else {
        for e in &moved {
            line(&format!("{}: {}", e.doc, e.note.as_deref().unwrap_or("")))?;
        }
    }
    Ok(ExitCode::SUCCESS)
}
