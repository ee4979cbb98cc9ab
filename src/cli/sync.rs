//! `status`: which board is used and why, and how it is shared.

use std::process::ExitCode;

use super::Ctx;
use super::output::line;
use tavern::api::sync::{self, Exchange, KeepOptions, Layout, SyncState};
use tavern::api::{self, Error, Result};

pub fn status(ctx: &Ctx) -> Result<ExitCode> {
    let board = ctx.board()?;
    let s = sync::status(&board)?;
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
    line(&match &s.journal {
        Some(k) if k.by == "watch" => format!(
            "reads: by the change journal `tavern watch` keeps (pid {})",
            k.pid
        ),
        Some(k) => format!(
            "reads: by the change journal the index keeper keeps (pid {}; board.yaml watch.keeper)",
            k.pid
        ),
        None => "reads: no change journal kept (no watcher running): each read checks every file"
            .to_string(),
    })?;
    if let Some(sync) = &s.sync {
        line(&sync_line(sync))?;
        for c in &sync.unconfirmed {
            line(&format!(
                "  unconfirmed: {} claimed by {} (the remote has no record of it)",
                c.task, c.holder
            ))?;
        }
    }
    Ok(ExitCode::SUCCESS)
}

#[derive(Debug, clap::Args)]
pub struct SyncArgs {
    #[command(subcommand)]
    pub command: Option<SyncCommand>,
    /// Keep exchanging: now, every --interval and soon after each change on this board,
    /// until interrupted
    #[arg(long)]
    pub watch: bool,
    /// With --watch: exchange at least this often (e.g. 10s, 1m)
    #[arg(long, default_value = "30s", value_name = "DUR")]
    pub interval: String,
    /// With --watch: look at the board every DUR instead of using file-system events
    #[arg(long, value_name = "DUR")]
    pub poll: Option<String>,
    /// Record documents and board files deleted by hand (no tavern command removed them)
    /// as deleted, each logged as a `delete` by you, instead of refusing the record
    #[arg(long)]
    pub allow_deletions: bool,
}

fn duration(flag: &str, text: &str) -> Result<std::time::Duration> {
    api::time::parse_duration(text)
        .and_then(|d| d.to_std().ok())
        .filter(|d| !d.is_zero())
        .ok_or_else(|| {
            Error::usage(format!(
                "{flag} '{text}': expected a duration longer than 0, like 500ms, 2s or 1m"
            ))
        })
}

/// `tavern sync --watch` and a connected `tavern watch`: what to keep exchanging with.
pub fn keep_options(
    interval: &str,
    poll: Option<&str>,
    exchange: sync::Options,
) -> Result<KeepOptions> {
    Ok(KeepOptions {
        interval: duration("--interval", interval)?,
        poll: poll.map(|p| duration("--poll", p)).transpose()?,
        exchange,
        ..Default::default()
    })
}

/// Prints one exchange of a running loop: what it did when it did something, errors on
/// stderr (the loop goes on).
pub fn report_exchange(json: bool, r: &Result<Exchange>) {
    match r {
        Ok(x) if x.outcome == "up-to-date" && x.claims_followed.is_empty() => {}
        Ok(x) => {
            let _ = if json {
                super::render::json(x)
            } else {
                render_exchange_text(x)
            };
        }
        Err(e) => {
            if json {
                let v = serde_json::to_string(&super::errors::report(e)).unwrap_or_default();
                super::render::err_line(&v);
            } else {
                super::render::err_line(&format!(
                    "sync: {} (trying again later)",
                    super::errors::message(e)
                ));
            }
        }
    }
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
            let c = sync::init(&ctx.cwd, ctx.board().ok().as_ref(), &remote)?;
            if ctx.global.json {
                super::render::json(&c)?;
            } else {
                line(&format!(
                    "connected {} to '{}'{}",
                    c.board.display(),
                    c.remote,
                    if c.remote_had_board {
                        " (fetched its board branch)"
                    } else {
                        ""
                    }
                ))?;
            }
        }
        None if a.watch => {
            let board = ctx.board()?;
            let exchange = sync::Options {
                actor: ctx.actor(&board)?,
                allow_deletions: a.allow_deletions,
            };
            let opts = keep_options(&a.interval, a.poll.as_deref(), exchange)?;
            // SIGINT or SIGTERM stops the loop once the exchange under way has ended, so
            // that no git of it is left running to race the next exchange of the clone
            // (a second signal stops it at once).
            let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
            for signal in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
                let registered =
                    signal_hook::flag::register_conditional_shutdown(signal, 1, stop.clone())
                        .and_then(|_| signal_hook::flag::register(signal, stop.clone()));
                if let Err(e) = registered {
                    return Err(Error::Io {
                        path: board.root.clone(),
                        action: "listen for signals for",
                        source: e,
                    });
                }
            }
            let json = ctx.global.json;
            sync::keep_exchanging(&board, &opts, &stop, |r| report_exchange(json, r))?;
        }
        None => {
            let board = ctx.board()?;
            let opts = sync::Options {
                actor: ctx.actor(&board)?,
                allow_deletions: a.allow_deletions,
            };
            let x = sync::exchange(&board, &opts)?;
            render_exchange(ctx, &x)?;
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn render_exchange(ctx: &Ctx, x: &Exchange) -> Result<()> {
    if ctx.global.json {
        return super::render::json(x);
    }
    render_exchange_text(x)
}

fn render_exchange_text(x: &Exchange) -> Result<()> {
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
    for r in &x.refused {
        line(&format!(
            "  refused from '{}': {}: {} (kept this clone's version; logged as an alert)",
            x.remote, r.path, r.why
        ))?;
    }
    for r in &x.not_recorded {
        line(&format!("  not recorded: {}: {}", r.path, r.why))?;
    }
    Ok(())
}

/// One line on how a connected board stands with its remote (check and status).
pub fn sync_line(s: &SyncState) -> String {
    let mut parts = vec![format!(
        "{} board commit{} to send, {} to receive (as of the last fetch)",
        s.ahead,
        if s.ahead == 1 { "" } else { "s" },
        s.behind
    )];
    if s.unrecorded > 0 {
        parts.push(format!(
            "{} changed file{} not recorded yet",
            s.unrecorded,
            if s.unrecorded == 1 { "" } else { "s" }
        ));
    }
    if !s.unconfirmed.is_empty() {
        parts.push(format!("{} unconfirmed claim(s)", s.unconfirmed.len()));
    }
    format!("sync with '{}': {}", s.remote, parts.join("; "))
}
