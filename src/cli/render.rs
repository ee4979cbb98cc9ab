//! The two printers: every command's result goes through [`print`], which writes it as
//! one JSON line (`--json`, from the result's `Serialize`: the same shape every
//! front-end gets from the library) or as text (its [`Render`] impl, all of them in
//! `text.rs`). Commands never look at `--json` themselves.

use std::process::ExitCode;

use serde::Serialize;

// Writing to stderr is output's; rendering says it where a renderer does.
use super::output::line;
pub use super::output::{err_line, index_progress, warn};
use tavern::api::Result;
use tavern::api::Skipped;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    Text,
    Json,
}

/// A result as text, and what it says on stderr in either format.
pub trait Render: Serialize {
    /// The human text, written with `output::out`/`line` (and [`warn`] for stderr).
    fn text(&self) -> Result<()>;

    /// Warnings printed before the result in every format (files a reader skipped).
    fn warnings(&self) -> Vec<String> {
        Vec::new()
    }

    /// Warnings printed after the result in every format (what a listing left out, read
    /// below it).
    fn warnings_after(&self) -> Vec<String> {
        Vec::new()
    }

    /// The exit code once printed.
    fn exit_code(&self) -> ExitCode {
        ExitCode::SUCCESS
    }
}

/// Prints a result in the chosen format and returns its exit code.
pub fn print<R: Render>(format: Format, r: &R) -> Result<ExitCode> {
    for w in r.warnings() {
        warn(&w);
    }
    match format {
        Format::Json => json(r)?,
        Format::Text => r.text()?,
    }
    for w in r.warnings_after() {
        warn(&w);
    }
    Ok(r.exit_code())
}

/// One JSON line on stdout.
pub fn json<T: Serialize + ?Sized>(v: &T) -> Result<()> {
    line(&serde_json::to_string(v).unwrap_or_default())
}

pub fn skipped_warnings(skipped: &[Skipped]) -> Vec<String> {
    skipped
        .iter()
        .map(|s| format!("skipped {}: {}", s.path, s.problem))
        .collect()
}
