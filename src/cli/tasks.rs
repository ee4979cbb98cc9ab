//! `claim`, `move`, and the named transitions.

use std::process::ExitCode;

use clap::{Args, FromArgMatches};

use super::render;
use super::text::Done;
use super::{Ctx, TransitionArgs};
use tavern::api::tasks::Options;
use tavern::api::{self, Changed};
use tavern::api::{Error, Result};

/// Prints what a mutation did: `VERB ID (rev N, status)` or its JSON.
pub fn report(ctx: &Ctx, changed: &Changed, verb: &str) -> Result<ExitCode> {
    ctx.print(&Done { changed, verb })
}

pub fn options(a: &TransitionArgs) -> Options {
    Options {
        force: a.force,
        if_rev: a.if_rev,
        note: a.note.clone(),
        local: a.local,
        ..Options::default()
    }
}

/// Past tense for the human report of a transition.
fn verb(name: &str) -> String {
    match name {
        "claim" => "claimed".into(),
        "release" => "released".into(),
        "start" => "started".into(),
        "submit" => "submitted".into(),
        "approve" => "approved".into(),
        "reject" => "rejected".into(),
        "block" => "blocked".into(),
        "unblock" => "unblocked".into(),
        "done" => "done".into(),
        "fail" => "failed".into(),
        "cancel" => "cancelled".into(),
        "reopen" => "reopened".into(),
        other => format!("{other}:"),
    }
}

pub fn run_transition(ctx: &Ctx, name: &str, a: TransitionArgs) -> Result<ExitCode> {
    let board = ctx.board()?;
    let actor = ctx.actor(&board)?;
    let changed = api::tasks::transition(&board, &actor, &a.id, name, &options(&a))?;
    report(ctx, &changed, &verb(name))
}

/// A clap error as a usage error, without clap's own `error: ` prefix (main adds one).
fn clap_usage(e: clap::Error) -> Error {
    let text = e.render().to_string();
    Error::usage(text.trim_start_matches("error: ").trim_end())
}

/// `tavern NAME ID …` for a transition that only this board's workflow defines. The global
/// flags may follow NAME (`tavern shelve T --as me --json`), as they may follow any
/// built-in command.
pub fn custom(ctx: &Ctx, args: Vec<String>) -> Result<ExitCode> {
    let name = args.first().cloned().unwrap_or_default();
    let cmd = TransitionArgs::augment_args(super::Global::augment_args(
        clap::Command::new("transition")
            .bin_name(format!("tavern {name}"))
            .no_binary_name(true),
    ));
    let parsed = cmd.try_get_matches_from(&args[1..]);
    let given = |m: &clap::ArgMatches, id: &str| {
        m.value_source(id) == Some(clap::parser::ValueSource::CommandLine)
    };
    let mut global = super::Global {
        board: ctx.global.board.clone(),
        actor: ctx.global.actor.clone(),
        json: ctx.global.json,
    };
    if let Ok(m) = &parsed {
        let g = super::Global::from_arg_matches(m).map_err(clap_usage)?;
        if given(m, "board") {
            global.board = g.board;
        }
        if given(m, "actor") {
            global.actor = g.actor;
        }
        global.json |= g.json;
    }
    let ctx = Ctx {
        global,
        cwd: ctx.cwd.clone(),
    };
    let board = ctx.board()?;
    if board.config.workflow.transition(&name).is_none() {
        return Err(Error::usage(format!(
            "unrecognized command '{name}'\nhint: `tavern --help` lists the commands; this board's transitions are: {}",
            board
                .config
                .workflow
                .transitions
                .keys()
                .cloned()
                .collect::<Vec<_>>()
                .join(", ")
        )));
    }
    let a = TransitionArgs::from_arg_matches(&parsed.map_err(clap_usage)?).map_err(clap_usage)?;
    run_transition(&ctx, &name, a)
}

#[derive(Debug, Args)]
pub struct ClaimArgs {
    /// The task to claim (id or unique prefix); with --next, query terms that the task must match
    #[arg(value_name = "ID | QUERY")]
    pub args: Vec<String>,
    /// Claim the best claimable task (priority, then age, dependencies done)
    #[arg(long)]
    pub next: bool,
    /// Only if the task's rev is still N (compare-and-swap)
    #[arg(long, value_name = "N", conflicts_with = "next")]
    pub if_rev: Option<u64>,
    /// On a board connected to a remote: claim on this clone alone, unconfirmed (another
    /// machine may claim the same task)
    #[arg(long)]
    pub local: bool,
    /// Print only the claimed task's id (for scripts: `id=$(tavern claim --next -q) || exit`)
    #[arg(long, short = 'q')]
    pub quiet: bool,
}

pub fn claim(ctx: &Ctx, a: ClaimArgs) -> Result<ExitCode> {
    if a.quiet && ctx.global.json {
        return Err(Error::usage(
            "--quiet prints only the id and --json the whole result: give one of them",
        ));
    }
    let board = ctx.board()?;
    let actor = ctx.actor(&board)?;
    if a.next {
        let opts = Options {
            local: a.local,
            ..Options::default()
        };
        let next = api::tasks::claim_next(&board, &actor, &a.args, &opts)?;
        for w in render::skipped_warnings(&next.skipped) {
            render::warn(&w);
        }
        return match &next.claimed {
            Some(changed) if a.quiet => print_id(changed),
            Some(changed) => report(ctx, changed, "claimed"),
            None => Err(api::tasks::nothing_claimable(&a.args)),
        };
    }
    // Query terms without --next: say how to claim by query instead of "invalid id".
    let by_query = || {
        Error::usage(format!(
            "claim takes one task id; to claim the best task matching a query, use --next: tavern claim --next {}",
            a.args.join(" ")
        ))
    };
    let [reference] = a.args.as_slice() else {
        return Err(if api::tasks::is_query(&a.args) {
            by_query()
        } else {
            Error::usage("claim takes one task id, or --next [QUERY…]")
        });
    };
    let opts = Options {
        if_rev: a.if_rev,
        local: a.local,
        ..Options::default()
    };
    let changed = match api::tasks::claim(&board, &actor, reference, &opts) {
        Ok(changed) => changed,
        Err(Error::InvalidId { .. }) if api::tasks::is_query(std::slice::from_ref(reference)) => {
            return Err(by_query());
        }
        Err(e) => return Err(e),
    };
    if a.quiet {
        return print_id(&changed);
    }
    let verb = if changed.changed() {
        "claimed"
    } else {
        "already yours:"
    };
    report(ctx, &changed, verb)
}

/// `claim --quiet`: the id alone on stdout, as `new` prints it, so `id=$(…)` needs no pipe
/// and keeps the exit code.
fn print_id(changed: &Changed) -> Result<ExitCode> {
    use render::Render;
    let done = Done {
        changed,
        verb: "claimed",
    };
    for w in done.warnings() {
        render::warn(&w);
    }
    super::output::line(changed.doc().id())?;
    Ok(ExitCode::SUCCESS)
}

#[derive(Debug, Args)]
pub struct MoveArgs {
    #[command(flatten)]
    pub t: TransitionArgs,
    /// The state to move to
    pub state: String,
}

pub fn move_cmd(ctx: &Ctx, a: MoveArgs) -> Result<ExitCode> {
    let board = ctx.board()?;
    let actor = ctx.actor(&board)?;
    let changed = api::tasks::move_to(&board, &actor, &a.t.id, &a.state, &options(&a.t))?;
    report(ctx, &changed, "moved")
}
