//! `hold`, `release-hold` (alias `unhold`), `holds`: holds on paths and named resources.

use std::process::ExitCode;

use clap::Args;

use super::Ctx;
use super::output::{cell, line};
use super::render::Render;
use tavern::api::holds::{self, EditCheck, Granted, Hold, HoldList, Released};
use tavern::api::{Error, Result};

#[derive(Debug, Args)]
pub struct HoldArgs {
    /// Paths or globs to hold, relative to where you are (`src/parser.rs`, `src/**/*.rs`,
    /// `docs/`): a path holds everything under it
    #[arg(value_name = "PATHSPEC")]
    pub paths: Vec<String>,
    /// A named resource to hold instead of (or beside) paths: `db:test`, `port:8080`
    #[arg(long = "resource", value_name = "NAME")]
    pub resources: Vec<String>,
    /// Hold it shared: other shared holds coexist, exclusive ones are refused
    #[arg(long)]
    pub shared: bool,
    /// How long the hold lasts (holding it again renews it)
    #[arg(long = "for", value_name = "DURATION", default_value = holds::DEFAULT_FOR)]
    pub duration: String,
    /// Why (shown to whoever is refused)
    #[arg(long, value_name = "TEXT")]
    pub reason: Option<String>,
    /// The task it is for: released with the task
    #[arg(long, value_name = "ID")]
    pub task: Option<String>,
    /// When held, wait in line (first come, first served) for at most TIMEOUT
    #[arg(long, value_name = "TIMEOUT", num_args = 0..=1, default_missing_value = "10m")]
    pub wait: Option<String>,
    /// When refused, ask a question with the conflict attached (the text is the question)
    #[arg(long, value_name = "QUESTION", num_args = 0..=1, default_missing_value = "")]
    pub ask: Option<String>,
    /// On a board connected to a remote: hold on this clone alone, unconfirmed (an agent
    /// of another machine may hold the same resources)
    #[arg(long)]
    pub local: bool,
}

#[derive(Debug, Args)]
pub struct ReleaseHoldArgs {
    /// Paths or globs as they were held
    #[arg(value_name = "PATHSPEC")]
    pub paths: Vec<String>,
    /// Named resources as they were held
    #[arg(long = "resource", value_name = "NAME")]
    pub resources: Vec<String>,
    /// Holds by id (`h-12`)
    #[arg(long = "id", value_name = "ID")]
    pub ids: Vec<String>,
    /// Every hold of the acting agent
    #[arg(long, conflicts_with_all = ["paths", "resources", "ids", "task"])]
    pub all: bool,
    /// The holds made for this task
    #[arg(long, value_name = "ID", conflicts_with_all = ["paths", "resources", "ids"])]
    pub task: Option<String>,
    /// Release another agent's hold (by --id; the log says you did)
    #[arg(long)]
    pub force: bool,
    /// On a board connected to a remote: release on this clone alone, unconfirmed (the
    /// remote's record keeps the hold until it expires)
    #[arg(long)]
    pub local: bool,
}

fn refusal_hint(e: Error, wait: bool) -> Error {
    match e {
        Error::Held {
            path,
            message,
            conflicts,
        } => {
            let todo = if wait {
                "still held when the wait ran out: ask the holder (`tavern hold … --ask`), or pick other work"
            } else {
                "wait for it (`tavern hold … --wait 10m`), ask the holder (`tavern hold … --ask`), or pick other work"
            };
            Error::Held {
                path,
                message: format!("{message}\nhint: {todo}"),
                conflicts,
            }
        }
        e => e,
    }
}

pub fn hold(ctx: &Ctx, a: HoldArgs) -> Result<ExitCode> {
    let board = ctx.board()?;
    let actor = ctx.actor(&board)?;
    let wait = match &a.wait {
        None => None,
        Some(w) => Some(
            tavern::api::time::parse_duration(w)
                .and_then(|d| d.to_std().ok())
                .ok_or_else(|| {
                    Error::usage(format!("--wait '{w}' is not a duration like 30s or 10m"))
                })?,
        ),
    };
    let spec = holds::Spec {
        paths: a.paths.clone(),
        resources: a.resources.clone(),
        shared: a.shared,
        duration: Some(a.duration.clone()),
        reason: a.reason.clone(),
        task: a.task.clone(),
        local: a.local,
    };
    match holds::hold(&board, &actor, &ctx.cwd, &spec, wait) {
        Ok(granted) => {
            if a.local
                && let Some(remote) = tavern::api::holds::connected(&board)?
            {
                super::render::warn(&format!(
                    "held on this clone only; the remote '{remote}' was not asked, so an agent of another machine may hold the same resources (the remote hears of them when they are held again without --local)"
                ));
            }
            ctx.print(&granted)
        }
        Err(e @ Error::Held { .. }) if a.ask.is_some() => {
            let question = a.ask.as_deref().unwrap_or_default();
            let asked = holds::ask_refused(&board, &actor, &spec, question, &e)?;
            super::render::warn(&format!("refused; asked {}: {}", asked.created.doc.id(), e));
            let _ = ctx.print(&asked)?;
            Ok(ExitCode::from(e.exit_code()))
        }
        Err(e) => Err(refusal_hint(e, wait.is_some())),
    }
}

pub fn release(ctx: &Ctx, a: ReleaseHoldArgs) -> Result<ExitCode> {
    let board = ctx.board()?;
    let actor = ctx.actor(&board)?;
    let spec = holds::ReleaseSpec {
        paths: a.paths,
        resources: a.resources,
        ids: a.ids,
        all: a.all,
        task: a.task,
        force: a.force,
        local: a.local,
    };
    let released = holds::release(&board, &actor, &ctx.cwd, &spec)?;
    let code = ctx.print(&released)?;
    if released.released.is_empty() {
        super::output::note(ctx.global.json, "nothing was held, nothing released");
    }
    Ok(code)
}

pub fn list(ctx: &Ctx) -> Result<ExitCode> {
    let board = ctx.board()?;
    let (list, unfetched) = holds::list_fetched(&board)?;
    if let Some(why) = unfetched {
        super::render::warn(&format!(
            "{why}: other clones' holds are shown as this clone last saw them"
        ));
    }
    let code = ctx.print(&list)?;
    if list.holds.is_empty() && list.waiting.is_empty() {
        super::output::note(ctx.global.json, "nothing is held");
    }
    Ok(code)
}

/// A hold as one line of text.
fn hold_line(h: &Hold) -> String {
    cell(&h.describe())
}

impl Render for Granted {
    fn text(&self) -> Result<()> {
        for h in &self.holds {
            line(&format!("{} {}", h.id, hold_line(h)))?;
        }
        Ok(())
    }
}

impl Render for Released {
    fn text(&self) -> Result<()> {
        for h in &self.released {
            line(&format!(
                "released {} ({})",
                h.id,
                cell(&h.resource.describe())
            ))?;
        }
        Ok(())
    }
}

impl Render for HoldList {
    fn text(&self) -> Result<()> {
        for h in &self.holds {
            let id = if h.owner_rule { "owner" } else { h.id.as_str() };
            line(&format!("{id:<8} {}", hold_line(h)))?;
        }
        for w in &self.waiting {
            // A waiter of another clone: its ticket there, and its place's lease.
            let (ticket, until) = match &w.clone {
                Some(c) => (format!("{} on {}", w.ticket, cell(c)), "in line until"),
                None => (w.ticket.to_string(), "gives up at"),
            };
            line(&format!(
                "waiting  {} waits for {} since {} (ticket {ticket}, {until} {})",
                cell(&w.agent),
                cell(
                    &w.resources
                        .iter()
                        .map(|r| r.describe())
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
                w.since,
                w.until
            ))?;
        }
        for x in &self.waits_on {
            line(&format!(
                "         {} waits on {} ({})",
                cell(&x.waiter),
                cell(&x.holder),
                cell(&x.resource)
            ))?;
        }
        Ok(())
    }
}

impl Render for EditCheck {
    fn text(&self) -> Result<()> {
        for h in &self.held_by {
            line(&hold_line(h))?;
        }
        Ok(())
    }
}
