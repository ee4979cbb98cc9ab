//! `ask`, `answer`, `questions`, and the permission decisions `approve` (for questions;
//! tasks go to the transition) and `deny`.

use std::io::{BufRead, IsTerminal, Write};
use std::process::ExitCode;

use clap::Args;
use serde_json::json;

use super::docs::BodyArgs;
use super::output::{self, line};
use super::{Ctx, TransitionArgs};
use tavern::doc::Region;
use tavern::error::{Error, Result};
use tavern::ops::questions::{self, Ask, Permission};

#[derive(Debug, Args)]
pub struct AskArgs {
    /// The question (not with --permission, whose title is made from it)
    pub text: Option<String>,
    /// The answers to choose from (comma-separated, or repeat the flag)
    #[arg(long, value_name = "A,B,C", value_delimiter = ',')]
    pub options: Vec<String>,
    /// A task that waits for the answer: it moves to blocked (repeatable, or comma-separated)
    #[arg(long, value_name = "TASK", value_delimiter = ',', num_args = 1..)]
    pub blocks: Vec<String>,
    /// Group it with others of this context (see `tavern summary --context`)
    #[arg(long, value_name = "NAME")]
    pub context: Option<String>,
    /// Ask a human for permission to use CAPABILITY (with --resource and --reason)
    #[arg(long, value_name = "CAPABILITY")]
    pub permission: Option<String>,
    /// With --permission: what the capability would be used on
    #[arg(long, value_name = "R", requires = "permission")]
    pub resource: Option<String>,
    /// With --permission: why it is needed
    #[arg(long, value_name = "TEXT", requires = "permission")]
    pub reason: Option<String>,
    #[command(flatten)]
    pub body: BodyArgs,
    /// Choose the id instead of generating one
    #[arg(long)]
    pub id: Option<String>,
}

#[derive(Debug, Args)]
pub struct AnswerArgs {
    /// The question: its id or a unique prefix of it
    pub id: String,
    /// The answer
    pub text: Option<String>,
    /// One of the question's options
    #[arg(long, value_name = "OPTION", conflicts_with = "text")]
    pub choice: Option<String>,
}

#[derive(Debug, Args)]
pub struct DenyArgs {
    /// The permission request: its id or a unique prefix of it
    pub id: String,
    /// Only if the request's rev is still N (compare-and-swap)
    #[arg(long, value_name = "N")]
    pub if_rev: Option<u64>,
}

pub fn ask(ctx: &Ctx, a: AskArgs) -> Result<ExitCode> {
    let board = ctx.board()?;
    let actor = ctx.actor(&board)?;
    let permission = match a.permission {
        Some(capability) => {
            if a.text.is_some() {
                return Err(Error::usage(
                    "a permission request takes no question text: put it in --reason (or --body)",
                ));
            }
            Some(Permission {
                capability,
                resource: a.resource.unwrap_or_default(),
                reason: a.reason.unwrap_or_default(),
            })
        }
        None => None,
    };
    let spec = Ask {
        id: a.id,
        text: a.text.unwrap_or_default(),
        body: a.body.read()?,
        options: a.options,
        blocks: a.blocks,
        context: a.context,
        permission,
    };
    let asked = questions::ask(&board, &actor, &spec)?;
    for w in &asked.warnings {
        eprintln!("warning: {w}");
    }
    output::created(ctx.global.json, &asked.doc, &asked.entry)
}

pub fn answer(ctx: &Ctx, a: AnswerArgs) -> Result<ExitCode> {
    let board = ctx.board()?;
    let actor = ctx.actor(&board)?;
    let (_, id) = tavern::ops::resolve::resolve(&board, &a.id, &[Region::Questions])?;
    let answered = questions::answer(&board, &actor, &id, a.text.as_deref(), a.choice.as_deref())?;
    for w in &answered.warnings {
        eprintln!("warning: {w}");
    }
    let doc = &answered.outcome.doc;
    if ctx.global.json {
        let mut v = json!({
            "ok": true,
            "id": doc.id(),
            "path": doc.rel_path(),
            "rev": doc.rev(),
            "status": doc.status(),
            "answer": doc.str("answer"),
            "unblocked": answered.unblocked,
        });
        if let Some(e) = &answered.outcome.entry {
            v["seq"] = e.seq.into();
        }
        output::json_line(&v)?;
    } else {
        line(&format!("answered {} (rev {})", doc.id(), doc.rev()))?;
        for t in &answered.unblocked {
            line(&format!("unblocked {t}"))?;
        }
    }
    Ok(ExitCode::SUCCESS)
}

pub fn list(ctx: &Ctx) -> Result<ExitCode> {
    let board = ctx.board()?;
    ctx.print(&tavern::api::questions::open(&board)?)
}

/// Prints the prompt on stderr and reads one line from the terminal.
fn prompt(text: &str) -> std::io::Result<String> {
    let mut err = std::io::stderr();
    err.write_all(text.as_bytes())?;
    err.flush()?;
    let mut typed = String::new();
    std::io::stdin().lock().read_line(&mut typed)?;
    Ok(typed)
}

fn decide(ctx: &Ctx, reference: &str, approve: bool, if_rev: Option<u64>) -> Result<ExitCode> {
    let board = ctx.board()?;
    let actor = ctx.actor(&board)?;
    let (_, id) = tavern::ops::resolve::resolve(&board, reference, &[Region::Questions])?;
    let mut ask_human = prompt;
    let confirm: questions::Confirm<'_> = if std::io::stdin().is_terminal() {
        Some(&mut ask_human)
    } else {
        None
    };
    let outcome = questions::decide(&board, &actor, &id, approve, if_rev, confirm)?;
    let verb = if approve { "approved" } else { "denied" };
    super::tasks::report(ctx, &outcome, verb)
}

/// `tavern approve ID`: a permission request is decided; a task takes its `approve`
/// transition.
pub fn approve(ctx: &Ctx, a: TransitionArgs) -> Result<ExitCode> {
    let board = ctx.board()?;
    let (region, id) =
        tavern::ops::resolve::resolve(&board, &a.id, &[Region::Tasks, Region::Questions])?;
    if region == Region::Tasks {
        return super::tasks::run_transition(ctx, "approve", a);
    }
    decide(ctx, &id, true, a.if_rev)
}

/// `tavern deny ID`: refuses a permission request.
pub fn deny(ctx: &Ctx, a: DenyArgs) -> Result<ExitCode> {
    decide(ctx, &a.id, false, a.if_rev)
}
