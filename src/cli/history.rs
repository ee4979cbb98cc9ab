//! `log`, `events` and `diff`: reading the audit log.

use std::process::ExitCode;

use clap::Args;

use super::Ctx;
use super::render::warn;
use super::text::EntryView;
use tavern::api::Entry;
use tavern::api::history::{self, LogFilter, Since};
use tavern::api::{Error, Result};

#[derive(Debug, Args)]
pub struct LogArgs {
    /// Only entries after this seq, after these marks (ORIGIN:SEQ,…: each origin's entries
    /// above its seq), or at/after this time (RFC 3339, a date, or -2h)
    #[arg(long, value_name = "SEQ|MARKS|TIME", allow_hyphen_values = true)]
    pub since: Option<String>,
    /// Only entries about this document (id, prefix, REGION/ID, or a path under solutions/)
    #[arg(long, value_name = "ID")]
    pub doc: Option<String>,
    /// Only entries by this actor
    // Its own id: `actor` is the global `--as`, which a command's flag must not shadow.
    #[arg(long = "actor", id = "by_actor", value_name = "NAME")]
    pub actor: Option<String>,
    /// Keep printing entries as they are appended
    #[arg(long, short)]
    pub follow: bool,
    /// Show each entry's diff
    #[arg(long, short)]
    pub patch: bool,
}

/// Reads `--since SEQ|TIME`.
fn parse_since(s: &str) -> Result<Since> {
    Since::parse(s).ok_or_else(|| {
        Error::usage(format!(
            "--since '{s}': expected a seq number, ORIGIN:SEQ marks (k3f9q2ab:42,7hq2mm0c:17), an RFC 3339 time, a date, or a relative time like -2h"
        ))
    })
}

fn print_entry(ctx: &Ctx, entry: &Entry, patch: bool) -> Result<()> {
    ctx.print(&EntryView { entry, patch }).map(|_| ())
}

#[derive(Debug, Args)]
pub struct EventsArgs {
    /// Start after this seq, these marks (ORIGIN:SEQ,…) or at this time instead of at the
    /// agent's cursor
    #[arg(long, value_name = "SEQ|MARKS|TIME", allow_hyphen_values = true)]
    pub since: Option<String>,
    /// Show each entry's diff (in JSON too: `diff`)
    #[arg(long, short)]
    pub patch: bool,
    /// At most N entries (the oldest new ones); run `events` again for the next N
    #[arg(long, value_name = "N", default_value_t = EVENTS_PAGE, conflicts_with = "all")]
    pub limit: usize,
    /// Every new entry, however many
    #[arg(long)]
    pub all: bool,
    /// Only what concerns you (answers, decisions, findings about your tasks, lost claims,
    /// pauses, reviews), each once: what the client hooks deliver
    #[arg(long, conflicts_with_all = ["since", "patch", "all", "limit"])]
    pub for_me: bool,
}

/// Entries per `events` call unless `--limit` or `--all` says otherwise.
const EVENTS_PAGE: usize = 50;

/// `events`: what changed since the acting agent last looked, at most `--limit` entries,
/// oldest first. The cursor advances past what was printed, so the next call starts
/// with the first entry not shown: paging through sees every entry once.
pub fn events(ctx: &Ctx, a: EventsArgs) -> Result<ExitCode> {
    if a.for_me {
        return super::delivery::for_me(ctx);
    }
    let board = ctx.board()?;
    super::text::set_own_origin(&board);
    let actor = ctx.actor(&board)?;
    let since = a.since.as_deref().map(parse_since).transpose()?;
    if a.limit == 0 {
        return Err(Error::usage(
            "--limit 0 would show nothing: give at least 1, or --all",
        ));
    }
    let limit = (!a.all).then_some(a.limit);
    let events = history::events(&board, &actor, since, limit)?;
    for e in &events.entries {
        print_entry(ctx, e, a.patch)?;
    }
    if events.entries.is_empty() {
        let since = match &events.since {
            Since::All => String::new(),
            Since::Marks(m) if m.base == 0 && m.by_origin.is_empty() => {
                " (the log is empty)".to_string()
            }
            // Only this clone's entries seen: their seq says it.
            Since::Marks(m)
                if m.base == 0
                    && m.by_origin.len() == 1
                    && tavern::api::history::own_origin(&board).as_ref()
                        == m.by_origin.keys().next() =>
            {
                format!(" since seq {}", m.by_origin.values().next().unwrap_or(&0))
            }
            s => format!(" since {}", s.describe()),
        };
        super::output::note(ctx.global.json, &format!("no new events{since}"));
    }
    if !events.entries.is_empty() {
        history::seen(&board, &actor, &events.entries)?;
    }
    if events.more > 0 {
        // On stderr in either format: stdout stays one entry per line.
        super::output::err_line(&format!(
            "{} more new {}: `tavern events` again shows the next {} (`--all`: every one)",
            events.more,
            if events.more == 1 { "entry" } else { "entries" },
            a.limit.min(events.more),
        ));
    }
    Ok(ExitCode::SUCCESS)
}

pub fn log(ctx: &Ctx, a: LogArgs) -> Result<ExitCode> {
    let board = ctx.board()?;
    super::text::set_own_origin(&board);
    let filter = LogFilter {
        since: a
            .since
            .as_deref()
            .map(parse_since)
            .transpose()?
            .unwrap_or_default(),
        doc: a.doc,
        actor: a.actor,
        op: None,
    };
    let mut read = history::log(&board, &filter)?;
    for u in &read.unreadable {
        warn(&format!(
            "skipped log.yaml line {}: entry cannot be parsed",
            u.line
        ));
    }
    // A long story with diffs goes through the pager at a terminal (never with --follow,
    // which does not end, nor --json, which is for programs).
    let pager = if a.patch && !a.follow && !ctx.global.json {
        super::style::Pager::start()
    } else {
        None
    };
    for e in &read.entries {
        print_entry(ctx, e, a.patch)?;
    }
    drop(pager);
    if a.follow {
        loop {
            std::thread::sleep(std::time::Duration::from_millis(200));
            for e in read.follow.next(&board)? {
                print_entry(ctx, &e, a.patch)?;
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

#[derive(Debug, Args)]
pub struct DiffArgs {
    /// The document (id, prefix, REGION/ID, or a path under solutions/)
    pub id: String,
}

pub fn diff(ctx: &Ctx, a: DiffArgs) -> Result<ExitCode> {
    let board = ctx.board()?;
    super::text::set_own_origin(&board);
    ctx.print(&history::diff(&board, &a.id)?)
}
