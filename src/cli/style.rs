//! Colour and paging for people at a terminal, never for pipes: colour only when stdout is
//! a terminal and `NO_COLOR` is unset or empty (<https://no-color.org>) and `TERM` is not
//! `dumb`; a pager (`$PAGER`, default `less` with `LESS=FRX`) only for long output to a
//! terminal, never when piped, and not at all when `PAGER` is empty or `cat`.

use std::io::{IsTerminal, Write};
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;

/// Should stdout get colour?
pub fn color() -> bool {
    static COLOR: OnceLock<bool> = OnceLock::new();
    *COLOR.get_or_init(|| {
        std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
            && std::env::var_os("TERM").is_none_or(|t| t != "dumb")
            && std::io::stdout().is_terminal()
    })
}

const RESET: &str = "\x1b[0m";
const RED: &str = "\x1b[31m";
const GREEN: &str = "\x1b[32m";
const CYAN: &str = "\x1b[36m";
const BOLD: &str = "\x1b[1m";

/// Text for a terminal: control characters an agent wrote (escape sequences, carriage
/// returns) are shown as spaces, so they cannot restyle or rewrite the screen.
fn clean(s: &str) -> String {
    s.chars()
        .map(|c| if c.is_control() && c != '\t' { ' ' } else { c })
        .collect()
}

/// One line of a unified diff as printed under a log entry: coloured at a terminal
/// (additions green, removals red, hunk headers cyan), as it is otherwise.
pub fn diff_line(l: &str) -> String {
    if !color() {
        return format!("    {l}");
    }
    let paint = match l.as_bytes().first() {
        Some(b'+') => GREEN,
        Some(b'-') => RED,
        Some(b'@') => CYAN,
        _ => return format!("    {}", clean(l)),
    };
    format!("    {paint}{}{RESET}", clean(l))
}

/// A log entry's summary line: its seq in bold at a terminal.
pub fn entry_line(summary: &str) -> String {
    if !color() {
        return summary.to_string();
    }
    match summary.split_once(' ') {
        Some((seq, rest)) => format!("{BOLD}{seq}{RESET} {rest}"),
        None => summary.to_string(),
    }
}

/// A running pager that stdout goes to until it is dropped.
pub struct Pager {
    child: Child,
}

impl Pager {
    /// Starts `$PAGER` (default `less`, with `LESS=FRX` unless `LESS` is set: quit when the
    /// text fits, keep colours, leave the screen as it was) when stdout is a terminal;
    /// None when it is not, or when `PAGER` is empty or `cat`, or the pager cannot start.
    pub fn start() -> Option<Pager> {
        if !std::io::stdout().is_terminal() {
            return None;
        }
        let command = std::env::var("PAGER").unwrap_or_else(|_| "less".into());
        if command.trim().is_empty() || command.trim() == "cat" {
            return None;
        }
        let mut c = Command::new("sh");
        c.arg("-c").arg(&command).stdin(Stdio::piped());
        if std::env::var_os("LESS").is_none() {
            c.env("LESS", "FRX");
        }
        let mut child = c.spawn().ok()?;
        super::output::redirect(Some(child.stdin.take()?));
        Some(Pager { child })
    }
}

impl Drop for Pager {
    fn drop(&mut self) {
        // Closing its input lets the pager reach the end; then wait for the human to quit.
        if let Some(mut w) = super::output::redirect(None) {
            let _ = w.flush();
        }
        let _ = self.child.wait();
    }
}
