//! `post`, `ack`, `resolve`, and `reject` (for observations; tasks go to the transition).

use std::process::ExitCode;

use clap::Args;

use super::docs::BodyArgs;
use super::{Ctx, TransitionArgs};
use tavern::api::Result;
use tavern::api::observations::{self, Action, Post};

#[derive(Debug, Args)]
pub struct PostArgs {
    /// The title
    #[arg(value_name = "TITLE", required_unless_present = "title_flag")]
    pub title: Option<String>,
    /// The title, spelled as `new` once spelled it
    #[arg(
        long = "title",
        short = 't',
        value_name = "TITLE",
        conflicts_with = "title"
    )]
    pub title_flag: Option<String>,
    /// What the observation is about (a subsystem, a module, …)
    #[arg(long)]
    pub topic: String,
    /// info, low, medium, high or critical
    #[arg(long)]
    pub severity: String,
    /// How sure you are, from 0 to 1
    #[arg(long, value_name = "0..1")]
    pub confidence: Option<String>,
    /// A document this observation is about (repeatable, or comma-separated)
    #[arg(long, value_name = "ID", value_delimiter = ',')]
    pub about: Vec<String>,
    /// The document this one follows up on
    #[arg(long, value_name = "ID")]
    pub parent: Option<String>,
    /// session or persistent [default: persistent]
    #[arg(long)]
    pub scope: Option<String>,
    /// With --scope session: how long it lives, like 1h (sets expires_at)
    #[arg(long, value_name = "DURATION")]
    pub ttl: Option<String>,
    /// Free text: where or under which circumstances it was seen
    #[arg(long, value_name = "TEXT")]
    pub context: Option<String>,
    #[command(flatten)]
    pub body: BodyArgs,
    /// Choose the id instead of generating one
    #[arg(long)]
    pub id: Option<String>,
    /// Add a tag (repeatable)
    #[arg(long = "tag", value_name = "TAG")]
    pub tags: Vec<String>,
}

pub fn post(ctx: &Ctx, a: PostArgs) -> Result<ExitCode> {
    let board = ctx.board()?;
    let actor = ctx.actor(&board)?;
    let spec = Post {
        id: a.id,
        title: a.title.or(a.title_flag).unwrap_or_default(),
        body: a.body.read()?,
        tags: a.tags,
        topic: a.topic,
        severity: a.severity,
        confidence: a.confidence,
        about: a.about,
        parent: a.parent,
        scope: a.scope,
        ttl: a.ttl,
        context: a.context,
    };
    ctx.print(&observations::post(&board, &actor, &spec)?)
}

#[derive(Debug, Args)]
pub struct AckArgs {
    /// The observation: its id or a unique prefix of it
    pub id: String,
    /// Only if the observation's rev is still N (compare-and-swap)
    #[arg(long, value_name = "N")]
    pub if_rev: Option<u64>,
}

#[derive(Debug, Args)]
pub struct ResolveArgs {
    /// The observation: its id or a unique prefix of it
    pub id: String,
    /// What was done about it
    #[arg(long, value_name = "TEXT")]
    pub resolution: String,
    /// Only if the observation's rev is still N (compare-and-swap)
    #[arg(long, value_name = "N")]
    pub if_rev: Option<u64>,
}

fn run(
    ctx: &Ctx,
    reference: &str,
    action: Action,
    if_rev: Option<u64>,
    verb: &str,
) -> Result<ExitCode> {
    let board = ctx.board()?;
    let actor = ctx.actor(&board)?;
    let changed = observations::act(&board, &actor, reference, &action, if_rev)?;
    super::tasks::report(ctx, &changed, verb)
}

pub fn ack(ctx: &Ctx, a: AckArgs) -> Result<ExitCode> {
    run(ctx, &a.id, Action::Ack, a.if_rev, "acknowledged")
}

pub fn resolve(ctx: &Ctx, a: ResolveArgs) -> Result<ExitCode> {
    let action = Action::Resolve {
        resolution: a.resolution,
    };
    run(ctx, &a.id, action, a.if_rev, "resolved")
}

/// `tavern reject ID`: an observation is rejected; a task takes its `reject` transition.
pub fn reject(ctx: &Ctx, a: TransitionArgs) -> Result<ExitCode> {
    let board = ctx.board()?;
    let actor = ctx.actor(&board)?;
    let changed = observations::reject(&board, &actor, &a.id, &super::tasks::options(&a))?;
    super::tasks::report(ctx, &changed, "rejected")
}
