//! `new`, `show`, `list`, `edit`.

use std::io::Read;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, ValueEnum};
use serde_json::Value;

use super::Ctx;
use tavern::api::Region;
use tavern::api::{
    self,
    docs::{EditSpec, NewDoc},
};
use tavern::api::{Error, Result};

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum Kind {
    Task,
    Observation,
    Question,
}

impl Kind {
    fn region(self) -> Region {
        match self {
            Kind::Task => Region::Tasks,
            Kind::Observation => Region::Observations,
            Kind::Question => Region::Questions,
        }
    }
}

#[derive(Debug, Args)]
pub struct BodyArgs {
    /// The body text (markdown); `-` reads it from standard input
    #[arg(long, value_name = "TEXT", conflicts_with = "body_file")]
    pub body: Option<String>,
    /// Read the body from a file; `-` is standard input
    #[arg(long, value_name = "PATH")]
    pub body_file: Option<PathBuf>,
}

impl BodyArgs {
    pub(crate) fn read(&self) -> Result<Option<String>> {
        let from_stdin = || {
            let mut s = String::new();
            std::io::stdin().read_to_string(&mut s).map_err(|e| {
                Error::input(format!("cannot read the body from standard input: {e}"))
            })?;
            Ok(Some(s))
        };
        match (&self.body, &self.body_file) {
            (Some(b), _) if b == "-" => from_stdin(),
            (Some(b), _) => Ok(Some(b.clone())),
            (None, Some(p)) if p.as_os_str() == "-" => from_stdin(),
            (None, Some(p)) => {
                let bytes = std::fs::read(p).map_err(|e| Error::io(p, "read", e))?;
                String::from_utf8(bytes).map(Some).map_err(|_| {
                    Error::input(format!("{}: the body is not valid UTF-8", p.display()))
                })
            }
            (None, None) => Ok(None),
        }
    }
}

#[derive(Debug, Args)]
pub struct NewArgs {
    /// What to create
    pub kind: Kind,
    /// The title (as `post` and `ask` take theirs)
    #[arg(value_name = "TITLE", required_unless_present = "title")]
    pub title_arg: Option<String>,
    /// The title: the older spelling of the TITLE argument
    #[arg(long, short, value_name = "TITLE", conflicts_with = "title_arg")]
    pub title: Option<String>,
    /// The parent: a task this one is a part of (see `tavern tree`), or the document an
    /// observation follows up on
    #[arg(long, value_name = "ID")]
    pub parent: Option<String>,
    /// What an agent must be able to do to claim it, matched against its capabilities
    /// (repeatable, or comma-separated)
    #[arg(long, value_name = "CAPABILITY", value_delimiter = ',')]
    pub needs: Vec<String>,
    #[command(flatten)]
    pub body: BodyArgs,
    /// Choose the id instead of generating one
    #[arg(long)]
    pub id: Option<String>,
    /// Set a field: KEY=VALUE, where VALUE may be YAML like [a, b] or 3 (repeatable)
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub sets: Vec<String>,
    /// Let --set write NAME although the board does not know the field (by default an
    /// unknown field is refused as a typo) (repeatable, or comma-separated)
    #[arg(long = "extra-field", value_name = "NAME", value_delimiter = ',')]
    pub extra_fields: Vec<String>,
    /// Add a tag (repeatable)
    #[arg(long = "tag", value_name = "TAG")]
    pub tags: Vec<String>,
    /// Priority, 0 = critical … 4 = backlog
    #[arg(long, short, value_name = "N")]
    pub priority: Option<i64>,
    /// Group it with others of this context (see `tavern summary --context`)
    #[arg(long, value_name = "NAME")]
    pub context: Option<String>,
    /// A task this one waits for (repeatable, or comma-separated)
    #[arg(long = "depends-on", value_name = "ID", value_delimiter = ',')]
    pub depends_on: Vec<String>,
}

/// Splits `KEY=VALUE`, checking the key.
fn key_value(arg: &str, flag: &str, board: &tavern::api::Board) -> Result<(String, Value)> {
    let Some((k, v)) = arg.split_once('=') else {
        return Err(Error::usage(format!(
            "{flag} expects KEY=VALUE, got '{arg}'"
        )));
    };
    check_key(k, flag)?;
    Ok((k.to_string(), tavern::api::docs::parse_value(board, v)))
}

fn check_key(k: &str, flag: &str) -> Result<()> {
    if tavern::api::docs::is_field_name(k) {
        Ok(())
    } else {
        Err(Error::usage(format!(
            "{flag}: '{k}' is not a field name (letters, digits, _ - .)"
        )))
    }
}

pub fn new(ctx: &Ctx, a: NewArgs) -> Result<ExitCode> {
    let board = ctx.board()?;
    let actor = ctx.actor(&board)?;
    let mut sets = a
        .sets
        .iter()
        .map(|s| key_value(s, "--set", &board))
        .collect::<Result<Vec<_>>>()?;
    if let Some(c) = a.context {
        sets.push(("context".into(), c.into()));
    }
    if let Some(p) = a.parent {
        sets.push(("parent".into(), p.into()));
    }
    if !a.needs.is_empty() {
        sets.push(("needs".into(), a.needs.into()));
    }
    let spec = NewDoc {
        id: a.id,
        title: a.title_arg.or(a.title).unwrap_or_default(),
        body: a.body.read()?,
        tags: a.tags,
        priority: a.priority,
        depends_on: a.depends_on,
        sets,
        extra: a.extra_fields,
        at: None,
    };
    ctx.print(&api::docs::create(&board, &actor, a.kind.region(), &spec)?)
}

#[derive(Debug, Args)]
pub struct ShowArgs {
    /// The document: id, unique id prefix, REGION/ID, or a path under solutions/
    pub id: String,
}

pub fn show(ctx: &Ctx, a: ShowArgs) -> Result<ExitCode> {
    let board = ctx.board()?;
    ctx.print(&tavern::api::docs::show(&board, &a.id)?)
}

#[derive(Debug, Args)]
pub struct ListArgs {
    /// Regions (tasks, observations, questions, archive) and query terms, in any order: status=pending priority<=1 tag:parser "a phrase" …
    #[arg(value_name = "[REGION] QUERY")]
    pub terms: Vec<String>,
    /// Include archived documents
    #[arg(long)]
    pub archived: bool,
}

pub fn list(ctx: &Ctx, a: ListArgs) -> Result<ExitCode> {
    use super::output::{doc_row, forged_warning};
    use tavern::api::docs::{brief_json, list_rows};
    let board = ctx.board()?;
    let req = tavern::api::docs::ListRequest {
        terms: a.terms,
        archived: a.archived,
    };
    // Each document becomes what is printed of it as it is read, so that a big listing
    // holds those, not documents (about 3.5 KiB each, parsed).
    let empty = if ctx.global.json {
        let l = list_rows(&board, &req, |d| (brief_json(&d), forged_warning(&d)))?;
        print_json_rows(l.rows, &l.skipped, "")?
    } else {
        let l = list_rows(&board, &req, |d| (doc_row(&d), forged_warning(&d)))?;
        print_table_rows(l.rows, &l.skipped)?
    };
    if empty {
        super::output::note(ctx.global.json, "no documents match");
    }
    Ok(ExitCode::SUCCESS)
}

/// Prints a listing made of JSON objects (`list --json`, `ready --json`) as `serde_json`
/// prints a `Listing` (`{"documents":[…],"skipped":[…]}`, `extra` before the closing
/// brace): the skipped files' warnings before it, the forged decisions' after. Whether it
/// was empty.
pub(crate) fn print_json_rows(
    rows: Vec<(String, Option<String>)>,
    skipped: &[tavern::api::Skipped],
    extra: &str,
) -> Result<bool> {
    let (docs, forged) = warned(rows, skipped);
    let skipped = serde_json::to_string(skipped).unwrap_or_default();
    let size = docs.iter().map(|j| j.len() + 1).sum::<usize>() + skipped.len() + extra.len();
    let mut text = String::with_capacity(size + 32);
    text.push_str("{\"documents\":[");
    for (i, j) in docs.iter().enumerate() {
        if i > 0 {
            text.push(',');
        }
        text.push_str(j);
    }
    text.push_str("],\"skipped\":");
    text.push_str(&skipped);
    text.push_str(extra);
    text.push_str("}\n");
    super::output::out(&text)?;
    after(forged);
    Ok(docs.is_empty())
}

/// Prints a listing made of table rows (`list`, `ready`), with the warnings as
/// [`print_json_rows`] does. Whether it was empty.
pub(crate) fn print_table_rows(
    rows: Vec<([String; 5], Option<String>)>,
    skipped: &[tavern::api::Skipped],
) -> Result<bool> {
    use super::output::{DOC_COLUMNS, out, table};
    let (rows, forged) = warned(rows, skipped);
    if !rows.is_empty() {
        out(&table(DOC_COLUMNS, &rows))?;
    }
    let empty = rows.is_empty();
    // The process ends next: freeing every row one by one costs time for memory the exit
    // returns anyway.
    std::mem::forget(rows);
    after(forged);
    Ok(empty)
}

/// Warns of the skipped files, and parts the rows from the forged decisions' warnings.
fn warned<R>(
    rows: Vec<(R, Option<String>)>,
    skipped: &[tavern::api::Skipped],
) -> (Vec<R>, Vec<Option<String>>) {
    for w in super::render::skipped_warnings(skipped) {
        super::output::warn(&w);
    }
    rows.into_iter().unzip()
}

fn after(forged: Vec<Option<String>>) {
    for w in forged.into_iter().flatten() {
        super::output::warn(&w);
    }
}

#[derive(Debug, Args)]
pub struct EditArgs {
    /// The document: id, unique id prefix, or REGION/ID
    pub id: String,
    /// Set a field: KEY=VALUE (VALUE may be YAML like [a, b] or 3)
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub sets: Vec<String>,
    /// Remove a field
    #[arg(long = "unset", value_name = "KEY")]
    pub unsets: Vec<String>,
    /// Add an item to a list field, if it is not there yet
    #[arg(long = "add", value_name = "KEY=VALUE")]
    pub adds: Vec<String>,
    /// Remove an item from a list field
    #[arg(long = "remove", value_name = "KEY=VALUE")]
    pub removes: Vec<String>,
    #[command(flatten)]
    pub body: BodyArgs,
    /// Only if the document's rev is still N (compare-and-swap)
    #[arg(long, value_name = "N")]
    pub if_rev: Option<u64>,
    /// Allow changing fields the workflow owns (status, claimed_by); logged
    #[arg(long)]
    pub force: bool,
    /// Let the edit write NAME although the board does not know the field (by default an
    /// unknown field is refused as a typo) (repeatable, or comma-separated)
    #[arg(long = "extra-field", value_name = "NAME", value_delimiter = ',')]
    pub extra_fields: Vec<String>,
}

pub fn edit(ctx: &Ctx, a: EditArgs) -> Result<ExitCode> {
    let board = ctx.board()?;
    let actor = ctx.actor(&board)?;
    let parse = |items: &[String], flag: &str| {
        items
            .iter()
            .map(|s| key_value(s, flag, &board))
            .collect::<Result<Vec<_>>>()
    };
    for k in &a.unsets {
        check_key(k, "--unset")?;
    }
    let spec = EditSpec {
        sets: parse(&a.sets, "--set")?,
        unsets: a.unsets.clone(),
        adds: parse(&a.adds, "--add")?,
        removes: parse(&a.removes, "--remove")?,
        body: a.body.read()?,
        if_rev: a.if_rev,
        force: a.force,
        extra: a.extra_fields.clone(),
    };
    if spec.is_empty() {
        return Err(Error::usage(
            "nothing to edit: give --set, --unset, --add, --remove, --body or --body-file",
        ));
    }
    let changed = api::docs::edit(&board, &actor, &a.id, &spec)?;
    let verb = if changed.changed() {
        "edited"
    } else {
        "unchanged"
    };
    super::tasks::report(ctx, &changed, verb)
}
