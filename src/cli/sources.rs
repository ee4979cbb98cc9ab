//! `sources list` and `sources check`: the knowledge sources of watch mode, what each
//! reacts to and when it last ran, and whether every source file is valid.

use std::collections::HashMap;
use std::process::ExitCode;
use std::time::Duration;

use clap::Subcommand;
use serde_json::{Value, json};

use super::Ctx;
use super::output::{self, cell, line};
use tavern::check::Problem;
use tavern::error::{Kind, Result};
use tavern::log::Entry;
use tavern::watch::sources::{self, Source};

#[derive(Debug, Subcommand)]
pub enum SourcesCommand {
    /// The registered sources, what they react to, and their last activation
    List,
    /// Validate every source file; exit 6 listing every problem, 0 when clean
    Check,
}

pub fn run(ctx: &Ctx, cmd: SourcesCommand) -> Result<ExitCode> {
    match cmd {
        SourcesCommand::List => list(ctx),
        SourcesCommand::Check => check(ctx),
    }
}

fn list(ctx: &Ctx) -> Result<ExitCode> {
    let board = ctx.board()?;
    let (list, problems) = sources::load_all(&board);
    let last = sources::last_activations(&board)?;
    if ctx.global.json {
        let items: Vec<Value> = list.iter().map(|s| source_json(s, &last)).collect();
        output::json_line(&json!({"sources": items, "skipped": problems}))?;
    } else if !list.is_empty() {
        output::out(&table(&list, &last))?;
    }
    // After the table, so a reader sees what runs first and what was left out below it.
    for p in &problems {
        eprintln!("warning: skipped {}: {}", p.path, p.problem);
    }
    Ok(ExitCode::SUCCESS)
}

fn check(ctx: &Ctx) -> Result<ExitCode> {
    let board = ctx.board()?;
    let (list, problems) = sources::load_all(&board);
    let checked = list.len() + files_with_problems(&problems);
    let clean = problems.is_empty();
    if ctx.global.json {
        output::json_line(&json!({"ok": clean, "sources": checked, "problems": problems}))?;
    } else if clean {
        line(&format!(
            "ok: {checked} source{} checked, no problems",
            plural(checked)
        ))?;
    } else {
        for p in &problems {
            eprintln!("{}: {}", p.path, p.problem);
        }
        eprintln!(
            "{} problem{} in {}",
            problems.len(),
            plural(problems.len()),
            sources::dir(&board).display()
        );
    }
    Ok(if clean {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(Kind::Invalid.exit_code())
    })
}

fn plural(n: usize) -> &'static str {
    if n == 1 { "" } else { "s" }
}

/// How many source files the problems are about (a file may have several).
fn files_with_problems(problems: &[Problem]) -> usize {
    let mut paths: Vec<&str> = problems.iter().map(|p| p.path.as_str()).collect();
    paths.dedup();
    paths.len()
}

fn on_names(s: &Source) -> Vec<String> {
    s.on.iter().map(|o| o.name()).collect()
}

/// `30s`, `15m`: as a source file would spell it.
fn duration_text(d: Duration) -> String {
    match chrono::Duration::from_std(d) {
        Ok(d) => tavern::time::format_duration(d),
        Err(_) => format!("{}s", d.as_secs()),
    }
}

fn source_json(s: &Source, last: &HashMap<String, Entry>) -> Value {
    json!({
        "name": s.name,
        "path": s.path,
        "watch": s.watch,
        "on": on_names(s),
        "when": if s.when_text.is_empty() { None } else { Some(&s.when_text) },
        "run": s.run,
        "priority": s.priority,
        "cooldown": duration_text(s.cooldown),
        "max_parallel": s.max_parallel,
        "timeout": duration_text(s.timeout),
        "description": s.description,
        "last": last.get(&s.name).and_then(|e| serde_json::to_value(e).ok()),
    })
}

/// The last activation in one cell: when, how it ended (or `started`), and what it was about.
fn last_text(e: Option<&Entry>) -> String {
    match e {
        Some(e) => format!("{} {} {}", e.at, e.to.as_deref().unwrap_or("-"), e.doc),
        None => "-".into(),
    }
}

/// The human table: one row per source, in the style of `tavern list`.
fn table(list: &[Source], last: &HashMap<String, Entry>) -> String {
    let rows: Vec<[String; 5]> = list
        .iter()
        .map(|s| {
            [
                cell(&s.name),
                cell(&on_names(s).join(",")),
                cell(&s.watch.join(",")),
                s.priority.to_string(),
                cell(&last_text(last.get(&s.name))),
            ]
        })
        .collect();
    output::table(["NAME", "ON", "WATCH", "PRIORITY", "LAST"], &rows)
}
