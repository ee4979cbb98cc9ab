//! `log` and `diff`: reading the audit log.

use std::process::ExitCode;

use clap::Args;
use serde_json::json;

use super::Ctx;
use super::output::{self, line};
use tavern::board::Board;
use tavern::doc::Region;
use tavern::error::{Error, Result};
use tavern::log::Entry;

#[derive(Debug, Args)]
pub struct LogArgs {
    /// Only entries after this seq, or at/after this time (RFC 3339, a date, or -2h)
    #[arg(long, value_name = "SEQ|TIME", allow_hyphen_values = true)]
    pub since: Option<String>,
    /// Only entries about this document (id, prefix, REGION/ID, or a path under solutions/)
    #[arg(long, value_name = "ID")]
    pub doc: Option<String>,
    /// Only entries by this actor
    #[arg(long, value_name = "NAME")]
    pub actor: Option<String>,
    /// Keep printing entries as they are appended
    #[arg(long, short)]
    pub follow: bool,
    /// Show each entry's diff
    #[arg(long, short)]
    pub patch: bool,
}

enum Since {
    All,
    Seq(u64),
    Time(chrono::DateTime<chrono::Utc>),
}

struct Filter {
    since: Since,
    doc: Option<String>,
    actor: Option<String>,
}

impl Filter {
    fn keep(&self, e: &Entry) -> bool {
        let since = match self.since {
            Since::All => true,
            Since::Seq(n) => e.seq > n,
            Since::Time(t) => tavern::time::parse_time(&e.at, t).is_some_and(|at| at >= t),
        };
        since
            && self.doc.as_ref().is_none_or(|d| &e.doc == d)
            && self.actor.as_ref().is_none_or(|a| &e.actor == a)
    }

    /// Reads the part of the log that can hold entries `keep` accepts: from where `--since`
    /// says, parsing only entries that mention the doc or actor asked for.
    fn read(&self, board: &Board) -> Result<(Vec<Entry>, u64, Vec<tavern::log::Unreadable>)> {
        let from = match self.since {
            Since::All => 0,
            Since::Seq(n) => tavern::log::offset_after_seq(board, n)?,
            Since::Time(t) => tavern::log::offset_near_time(board, t)?,
        };
        tavern::log::read_matching(board, from, self.needle())
    }

    fn needle(&self) -> Option<&str> {
        self.doc.as_deref().or(self.actor.as_deref())
    }
}

/// The log path (`tasks/x.md`) of a document reference, even for a deleted document.
fn doc_path(board: &Board, reference: &str) -> Result<String> {
    if let Some(rel) = tavern::ops::resolve::solution_path(reference) {
        return rel;
    }
    match tavern::ops::resolve::resolve(board, reference, &Region::ALL) {
        Ok((region, id)) => Ok(format!("{}/{id}.md", region.dir())),
        Err(Error::NotFound { .. }) => {
            tavern::id::validate(reference.rsplit('/').next().unwrap_or(reference))?;
            let stem = reference.trim_end_matches(".md");
            let (entries, _, _) = tavern::log::read_matching(board, 0, Some(stem))?;
            let wanted = format!("/{stem}.md");
            entries
                .iter()
                .find(|e| e.doc.ends_with(&wanted) || e.doc == reference)
                .map(|e| e.doc.clone())
                .ok_or_else(|| Error::NotFound {
                    what: format!("document '{reference}'"),
                    hint: "the log has no entry about it either".into(),
                })
        }
        Err(e) => Err(e),
    }
}

fn summary(e: &Entry) -> String {
    let mut s = format!("{} {} {} {} {}", e.seq, e.at, e.actor, e.op, e.doc);
    if let Some(t) = &e.transition {
        s.push_str(&format!(" {t}"));
    }
    match (&e.from, &e.to) {
        (Some(from), Some(to)) => s.push_str(&format!(" {from} -> {to}")),
        // An activation: started, then ok / failed / timed-out / killed.
        (None, Some(to)) => s.push_str(&format!(" {to}")),
        _ => {}
    }
    if let Some(event) = &e.event {
        s.push_str(&format!(" on {event}"));
    }
    if let Some(cause) = e.cause {
        s.push_str(&format!(" (seq {cause})"));
    }
    if let Some(rev) = e.rev {
        s.push_str(&format!(" rev {rev}"));
    }
    if e.force {
        s.push_str(" (forced)");
    }
    if let Some(note) = &e.note {
        s.push_str(&format!(" — {note}"));
    }
    s.chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect()
}

fn print_entry(ctx: &Ctx, e: &Entry, patch: bool) -> Result<()> {
    if ctx.global.json {
        return output::json_line(&serde_json::to_value(e).unwrap_or_default());
    }
    line(&super::style::entry_line(&summary(e)))?;
    if patch && let Some(d) = &e.diff {
        for l in d.lines() {
            line(&super::style::diff_line(l))?;
        }
    }
    Ok(())
}

/// Reads `--since SEQ|TIME`.
fn parse_since(since: Option<&str>) -> Result<Since> {
    Ok(match since {
        None => Since::All,
        Some(s) => match s.parse::<u64>() {
            Ok(n) => Since::Seq(n),
            Err(_) => {
                let now = tavern::time::now();
                let t = tavern::time::parse_time(s, now)
                    // A bare duration means that long ago, as `-2h` does.
                    .or_else(|| tavern::time::parse_time(&format!("-{s}"), now))
                    .ok_or_else(|| Error::usage(format!("--since '{s}': expected a seq number, an RFC 3339 time, a date, or a relative time like -2h")))?;
                Since::Time(t)
            }
        },
    })
}

#[derive(Debug, Args)]
pub struct EventsArgs {
    /// Start after this seq or at this time instead of at the agent's cursor
    #[arg(long, value_name = "SEQ|TIME", allow_hyphen_values = true)]
    pub since: Option<String>,
    /// Show each entry's diff
    #[arg(long, short)]
    pub patch: bool,
}

/// `events`: what changed since the acting agent last looked. The cursor (the last seq
/// shown) lives in `.state/cursors/<agent>` and advances after every call.
pub fn events(ctx: &Ctx, a: EventsArgs) -> Result<ExitCode> {
    let board = ctx.board()?;
    let actor = ctx.actor(&board)?;
    tavern::id::validate(&actor).map_err(|_| {
        Error::usage(format!(
            "events keeps a cursor per agent, so the actor must be a valid id; '{actor}' is not"
        ))
    })?;
    let cursor = tavern::layout::events_cursor(&board.root, &actor);
    // The cursor is a high-water mark per origin (log::Marks), so it stays right after a
    // merge of several clones' logs; --since starts elsewhere and still moves it on.
    let mut marks = tavern::log::Marks::load(&cursor);
    let entries = match a.since.as_deref() {
        None => marks.read_new(&board)?,
        Some(s) => {
            let filter = Filter {
                since: parse_since(Some(s))?,
                doc: None,
                actor: None,
            };
            let (entries, _, _) = filter.read(&board)?;
            entries.into_iter().filter(|e| filter.keep(e)).collect()
        }
    };
    for e in &entries {
        print_entry(ctx, e, a.patch)?;
        marks.advance(e);
    }
    if entries.is_empty() {
        let since = match a.since.as_deref() {
            Some(s) => match parse_since(Some(s))? {
                Since::All => String::new(),
                Since::Seq(n) => format!(" since seq {n}"),
                Since::Time(t) => format!(" since {}", tavern::time::stamp(t)),
            },
            None => match marks.by_origin.values().copied().chain([marks.base]).max() {
                Some(0) | None => " (the log is empty)".to_string(),
                Some(n) => format!(" since seq {n}"),
            },
        };
        output::note(ctx.global.json, &format!("no new events{since}"));
    } else {
        marks.save(&cursor)?;
    }
    Ok(ExitCode::SUCCESS)
}

pub fn log(ctx: &Ctx, a: LogArgs) -> Result<ExitCode> {
    let board = ctx.board()?;
    let since = parse_since(a.since.as_deref())?;
    let doc = a.doc.as_deref().map(|d| doc_path(&board, d)).transpose()?;
    let filter = Filter {
        since,
        doc,
        actor: a.actor,
    };
    let (entries, mut offset, unreadable) = filter.read(&board)?;
    for u in &unreadable {
        eprintln!(
            "warning: skipped log.yaml line {}: entry cannot be parsed",
            u.line
        );
    }
    // A long story with diffs goes through the pager at a terminal (never with --follow,
    // which does not end, nor --json, which is for programs).
    let pager = if a.patch && !a.follow && !ctx.global.json {
        super::style::Pager::start()
    } else {
        None
    };
    for e in entries.iter().filter(|e| filter.keep(e)) {
        print_entry(ctx, e, a.patch)?;
    }
    drop(pager);
    if a.follow {
        loop {
            std::thread::sleep(std::time::Duration::from_millis(200));
            let (entries, next, _) = tavern::log::read_matching(&board, offset, filter.needle())?;
            offset = next;
            for e in entries.iter().filter(|e| filter.keep(e)) {
                print_entry(ctx, e, a.patch)?;
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
    let path = doc_path(&board, &a.id)?;
    let (entries, _, _) = tavern::log::read_matching(&board, 0, Some(&path))?;
    let mine: Vec<&Entry> = entries.iter().filter(|e| e.doc == path).collect();
    if ctx.global.json {
        output::json_line(&json!({"doc": path, "entries": mine}))?;
        return Ok(ExitCode::SUCCESS);
    }
    for (i, e) in mine.iter().enumerate() {
        if i > 0 {
            line("")?;
        }
        print_entry(ctx, e, true)?;
    }
    Ok(ExitCode::SUCCESS)
}
