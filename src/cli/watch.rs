//! `watch`, `pause`, `resume`.

use std::process::ExitCode;
use std::time::Duration;

use clap::Args;

use super::Ctx;
use tavern::error::{Error, Kind, Result};

#[derive(Debug, Args)]
pub struct WatchArgs {
    /// Handle what changed since the last run, wait for the activations it starts (and
    /// what they change), then exit: 1 if one failed or the loop guard stopped one, 5 if
    /// the pause holds some back
    #[arg(long)]
    pub once: bool,
    /// Activations running at once, in all
    #[arg(long, short, default_value_t = 4, value_name = "N")]
    pub jobs: usize,
    /// Poll the board every DUR (e.g. 500ms, 2s) instead of using file-system events
    #[arg(long, value_name = "DUR")]
    pub poll: Option<String>,
    /// On SIGINT/SIGTERM, how long running activations may finish before they are killed
    #[arg(long, default_value = "10s", value_name = "DUR")]
    pub grace: String,
    /// On a board connected to a remote (`sync init`): exchange with it at least this
    /// often, and soon after each change here
    #[arg(long, default_value = "30s", value_name = "DUR")]
    pub sync_interval: String,
}

#[derive(Debug, Args)]
pub struct PauseArgs {
    /// Why (the text of control/PAUSE, shown to every refused claim)
    #[arg(value_name = "REASON")]
    pub reason: Vec<String>,
}

fn duration(flag: &str, text: &str) -> Result<Duration> {
    let parsed = tavern::time::parse_duration(text).and_then(|d| d.to_std().ok());
    parsed.ok_or_else(|| {
        Error::usage(format!(
            "{flag} '{text}': expected a duration like 500ms, 2s or 1m"
        ))
    })
}

pub fn watch(ctx: &Ctx, a: WatchArgs) -> Result<ExitCode> {
    let board = ctx.board()?;
    if a.jobs == 0 {
        return Err(Error::usage("--jobs must be at least 1"));
    }
    let poll = a
        .poll
        .as_deref()
        .map(|p| duration("--poll", p))
        .transpose()?;
    if poll.is_some_and(|p| p.is_zero()) {
        return Err(Error::usage("--poll must be longer than 0"));
    }
    let opts = tavern::watch::Options {
        once: a.once,
        jobs: a.jobs,
        poll,
        grace: duration("--grace", &a.grace)?,
        json: ctx.global.json,
    };
    // A board connected to a remote keeps exchanging while it is watched, on its own
    // thread (a fetch or push never holds the watch loop up): what other machines change
    // arrives as file changes, explained by the log entries that come with them.
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let keep = super::sync::keep_options(&a.sync_interval, a.poll.as_deref())?;
    if !a.once && tavern::sync::remote(&board)?.is_some() {
        let (board, stop, json) = (board.clone(), stop.clone(), ctx.global.json);
        std::thread::spawn(move || {
            let r = tavern::sync::keep_exchanging(&board, &keep, &stop, |r| {
                super::sync::report_exchange(json, r)
            });
            if let Err(e) = r {
                super::sync::report_exchange(json, &Err(e));
            }
        });
    }
    let summary = tavern::watch::run(board, opts);
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let summary = summary?;
    Ok(if !a.once {
        ExitCode::SUCCESS
    } else if summary.failed > 0 || summary.guarded > 0 {
        ExitCode::from(Kind::Other.exit_code())
    } else if summary.held > 0 {
        ExitCode::from(Kind::Paused.exit_code())
    } else {
        ExitCode::SUCCESS
    })
}

pub fn pause(ctx: &Ctx, a: PauseArgs) -> Result<ExitCode> {
    let board = ctx.board()?;
    let actor = ctx.actor(&board)?;
    ctx.print(&tavern::api::board::pause(
        &board,
        &actor,
        &a.reason.join(" "),
    )?)
}

pub fn resume(ctx: &Ctx) -> Result<ExitCode> {
    let board = ctx.board()?;
    let actor = ctx.actor(&board)?;
    ctx.print(&tavern::api::board::resume(&board, &actor)?)
}
