//! Writing to stdout and stderr: JSON for agents, aligned text for humans. Every write
//! returns an error so that a closed pipe (`tavern list | head`) ends the command quietly.

use std::io::Write;

use tavern::api::Document;
use tavern::api::{Error, Result};

/// Where stdout goes instead while a pager runs (see `style::Pager`).
static SINK: std::sync::Mutex<Option<std::process::ChildStdin>> = std::sync::Mutex::new(None);

/// Sends stdout to `to` (a pager's input), or back to stdout with None; returns what it
/// replaced.
pub fn redirect(to: Option<std::process::ChildStdin>) -> Option<std::process::ChildStdin> {
    let mut sink = SINK.lock().unwrap_or_else(|e| e.into_inner());
    std::mem::replace(&mut *sink, to)
}

pub fn out(text: &str) -> Result<()> {
    let mut sink = SINK.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(pager) = sink.as_mut() {
        // A pager the human quit is a closed pipe: the command ends quietly.
        return pager
            .write_all(text.as_bytes())
            .map_err(|e| Error::io("stdout", "write to", e));
    }
    let mut stdout = std::io::stdout().lock();
    stdout
        .write_all(text.as_bytes())
        .and_then(|_| stdout.flush())
        .map_err(|e| Error::io("stdout", "write to", e))
}

pub fn line(text: &str) -> Result<()> {
    out(&format!("{text}\n"))
}

/// One line on stderr; a closed stderr is not worth failing the command for.
pub fn warn(text: &str) {
    let _ = std::io::Write::write_all(
        &mut std::io::stderr(),
        format!("warning: {text}\n").as_bytes(),
    );
}

/// How far building the read index from nothing is, on one line of a terminal's stderr
/// rewritten in place, ended when it is done.
pub fn index_progress(what: &str, dir: &std::path::Path, done: usize, total: usize) {
    let end = if done >= total { "\n" } else { "" };
    let _ = std::io::Write::write_all(
        &mut std::io::stderr(),
        format!(
            "\rbuilding the {what} of {}: {done} of {total} files{end}",
            dir.display()
        )
        .as_bytes(),
    );
}

/// A line on stderr, as is (a problem report).
pub fn err_line(text: &str) {
    let _ = std::io::Write::write_all(&mut std::io::stderr(), format!("{text}\n").as_bytes());
}

/// Says on stderr what a text-mode command did when it printed nothing else ("no documents
/// match"), so a person can tell "done" from "did nothing". JSON output is a value and
/// needs no such note.
pub fn note(json: bool, text: &str) {
    if !json {
        err_line(text);
    }
}

/// Text for one table cell: control characters (a hostile title) never reach the terminal.
pub fn cell(s: &str) -> String {
    if !s.chars().any(char::is_control) {
        return s.to_string();
    }
    s.chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect()
}

/// The human table of `list` and `ready`.
pub fn doc_table(docs: &[Document]) -> String {
    let rows: Vec<[String; 5]> = docs.iter().map(doc_row).collect();
    table(DOC_COLUMNS, &rows)
}

/// The columns of [`doc_table`].
pub const DOC_COLUMNS: [&str; 5] = ["ID", "STATUS", "PRI", "OWNER", "TITLE"];

/// A document's row in [`doc_table`].
pub fn doc_row(d: &Document) -> [String; 5] {
    let pri = d
        .text("priority")
        .or_else(|| d.text("severity"))
        .unwrap_or_else(|| "-".into());
    let owner = d.str("claimed_by").unwrap_or("-");
    [
        cell(d.id()),
        cell(&status_cell(d)),
        cell(&pri),
        cell(owner),
        cell(d.title()),
    ]
}

/// A document's status as tables show it: `(archived)` for one in the archive, and
/// `(forged)` for a decision the log does not hold.
pub fn status_cell(d: &Document) -> String {
    let mut status = d.status().unwrap_or("-").to_string();
    if d.decision.as_ref().is_some_and(|x| x.is_forged()) {
        status.push_str(" (forged)");
    }
    if d.archived {
        status.push_str(" (archived)");
    }
    status
}

/// One warning per document whose decision is forged: what it claims, and why it does
/// not count.
pub fn forged_warnings(docs: &[Document]) -> Vec<String> {
    docs.iter().filter_map(forged_warning).collect()
}

/// The warning about a document whose decision is forged, if it is.
pub fn forged_warning(d: &Document) -> Option<String> {
    let x = d.decision.as_ref().filter(|x| x.is_forged())?;
    // The file's own words (who it says decided) are agent-written: no escapes.
    Some(cell(&format!(
        "{}: {} (it counts as undecided; a human decides it with approve or deny)",
        d.rel_path(),
        x.describe()
    )))
}

/// Columns padded to their widest cell, two spaces apart; the last one is not padded.
pub fn table<const N: usize>(header: [&str; N], rows: &[[String; N]]) -> String {
    let header = header.map(String::from);
    let width = |c: &str| {
        if c.is_ascii() {
            c.len()
        } else {
            c.chars().count()
        }
    };
    let mut widths = [0usize; N];
    let mut size = 0;
    for row in std::iter::once(&header).chain(rows) {
        for (w, c) in widths.iter_mut().zip(row.iter()) {
            *w = (*w).max(width(c));
            size += c.len() + 2;
        }
    }
    // Padded by hand: a `format!` per cell was a tenth of `list`'s time on a big board.
    let mut text = String::with_capacity(size + widths.iter().sum::<usize>());
    for row in std::iter::once(&header).chain(rows) {
        for (i, c) in row.iter().enumerate() {
            text.push_str(c);
            if i + 1 < N {
                let pad = widths[i] - width(c) + 2;
                text.extend(std::iter::repeat_n(' ', pad));
            }
        }
        text.push('\n');
    }
    text
}
