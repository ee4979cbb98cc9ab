//! `ask`, `answer`, `questions`, and the permission decisions `approve` (for questions;
//! tasks go to the transition) and `deny`.

use std::io::{BufRead, IsTerminal, Write};
use std::process::ExitCode;

use clap::Args;

use super::docs::BodyArgs;
use super::{Ctx, TransitionArgs};
use tavern::api::questions::{self, Ask, Permission};
use tavern::api::{Error, Result};

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
    /// Then wait until a human decides it (a question: until it is answered); exit 0 when
    /// approved or answered, 3 when denied. A decision forged by hand does not end the wait.
    #[arg(long)]
    pub wait: bool,
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
    let code = ctx.print(&asked)?;
    if !a.wait {
        return Ok(code);
    }
    let id = asked.created.doc.id().to_string();
    let mut forged = |d: &tavern::api::Decision| {
        super::render::warn(&super::output::cell(&format!(
            "{id}: {} (still waiting for a human)",
            d.describe()
        )));
    };
    let waited = questions::wait(&board, &id, WAIT_POLL, &mut forged)?;
    let code = ctx.print(&waited)?;
    match waited {
        questions::Waited::Decided {
            decision: tavern::api::Decision::Denied { by, .. },
            ..
        } => Err(Error::conflict(
            asked.created.doc.rel_path(),
            format!("permission request {id} was denied by {by}"),
        )),
        _ => Ok(code),
    }
}

/// How often `ask --wait` looks at the question.
const WAIT_POLL: std::time::Duration = std::time::Duration::from_millis(500);

pub fn answer(ctx: &Ctx, a: AnswerArgs) -> Result<ExitCode> {
    let board = ctx.board()?;
    let actor = ctx.actor(&board)?;
    let answered = questions::answer(
        &board,
        &actor,
        &a.id,
        a.text.as_deref(),
        a.choice.as_deref(),
    )?;
    ctx.print(&answered)
}

#[derive(Debug, Args)]
pub struct QuestionsArgs {
    /// Every question on the board: answered, approved and denied ones too
    #[arg(long)]
    pub all: bool,
}

pub fn list(ctx: &Ctx, a: QuestionsArgs) -> Result<ExitCode> {
    let board = ctx.board()?;
    let listing = questions::list(&board, a.all)?;
    let code = ctx.print(&QuestionTable(&listing))?;
    if listing.docs.is_empty() {
        super::output::note(
            ctx.global.json,
            if a.all {
                "no questions on the board"
            } else {
                "no open questions"
            },
        );
    }
    Ok(code)
}

/// Questions as `questions` shows them: the listing's JSON, its own table.
#[derive(serde::Serialize)]
#[serde(transparent)]
struct QuestionTable<'a>(&'a tavern::api::Listing);

impl super::render::Render for QuestionTable<'_> {
    fn text(&self) -> Result<()> {
        if self.0.docs.is_empty() {
            return Ok(());
        }
        super::output::out(&question_table(&self.0.docs))
    }

    fn warnings(&self) -> Vec<String> {
        super::render::skipped_warnings(&self.0.skipped)
    }

    fn warnings_after(&self) -> Vec<String> {
        super::output::forged_warnings(&self.0.docs)
    }
}

/// The table of `questions`: who asked, what it blocks, and the answer once there is one
/// (a question has no claimant, so no OWNER column).
fn question_table(docs: &[tavern::api::Document]) -> String {
    let cell = super::output::cell;
    let or_dash = |s: String| if s.is_empty() { "-".to_string() } else { s };
    let rows: Vec<[String; 6]> = docs
        .iter()
        .map(|d| {
            [
                cell(d.id()),
                cell(&super::output::status_cell(d)),
                cell(d.str("asked_by").unwrap_or("-")),
                cell(&or_dash(d.list("blocks").join(","))),
                cell(d.title()),
                cell(&or_dash(d.text("answer").unwrap_or_default())),
            ]
        })
        .collect();
    super::output::table(
        ["ID", "STATUS", "ASKED_BY", "BLOCKS", "TITLE", "ANSWER"],
        &rows,
    )
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

/// How a human confirms a decision here: at the terminal, or not at all.
fn confirm_at_terminal(
    ask: &mut dyn FnMut(&str) -> std::io::Result<String>,
) -> questions::Confirm<'_> {
    if std::io::stdin().is_terminal() {
        Some(ask)
    } else {
        None
    }
}

/// `tavern approve ID`: a permission request is decided; a task takes its `approve`
/// transition.
pub fn approve(ctx: &Ctx, a: TransitionArgs) -> Result<ExitCode> {
    let board = ctx.board()?;
    let actor = ctx.actor(&board)?;
    let mut ask = prompt;
    let opts = super::tasks::options(&a);
    let changed = questions::approve(&board, &actor, &a.id, &opts, confirm_at_terminal(&mut ask))?;
    super::tasks::report(ctx, &changed, "approved")
}

/// `tavern deny ID`: refuses a permission request.
pub fn deny(ctx: &Ctx, a: DenyArgs) -> Result<ExitCode> {
    let board = ctx.board()?;
    let actor = ctx.actor(&board)?;
    let mut ask = prompt;
    let confirm = confirm_at_terminal(&mut ask);
    let changed = questions::decide(&board, &actor, &a.id, false, a.if_rev, confirm)?;
    super::tasks::report(ctx, &changed, "denied")
}
