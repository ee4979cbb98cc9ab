//! An error as a front-end reports it: the library's message in the front-end's words
//! ([`Names`]), and the one JSON object every front-end gives (`--json` on stderr, a tool
//! error, a refused request of the dashboard), bounded whatever the input it echoes.

use serde::Serialize;

use crate::error::{Error, Kind, Message, Names};

/// Characters of a message in an error object, at most: an input a message echoes (a
/// megabyte-long value) is cut, saying how long it was.
pub const MESSAGE_CHARS: usize = 2_000;

/// Conflicts of a refused hold in an error object, at most.
pub const CONFLICTS: usize = 16;

/// The message of an error, each input and command it names worded by `names`, with the
/// hint that says where to look when there is one. Hints that only a front-end can give
/// (a flag, an environment variable) are that front-end's to add.
pub fn message(e: &Error, names: &dyn Names) -> String {
    match e {
        Error::Request { path, message, .. } => {
            let text = message.render_with(names);
            match path {
                Some(p) => format!("{}: {text}", p.display()),
                None => text,
            }
        }
        Error::NotFound { what, hint } => with_hint(format!("{what} not found"), hint, names),
        Error::Nothing { what, hint } => with_hint(format!("no {what}"), hint, names),
        _ => e.to_string(),
    }
}

fn with_hint(text: String, hint: &Message, names: &dyn Names) -> String {
    if hint.is_empty() {
        text
    } else {
        format!("{text}\nhint: {}", hint.render_with(names))
    }
}

/// `text`, at most `max` characters, saying how long it was when cut.
pub fn shorten(text: &str, max: usize) -> String {
    let total = text.chars().count();
    if total <= max {
        return text.to_string();
    }
    let head: String = text.chars().take(max).collect();
    format!("{head}… [cut: {total} characters in all]")
}

/// What an error's kind means to a program deciding what to do next (a model reading a
/// tool error).
pub fn meaning(kind: Kind) -> &'static str {
    match kind {
        Kind::Other => "something failed outside the board's rules (I/O); retrying may help",
        Kind::Usage => "bad arguments: fix the call",
        Kind::Conflict => {
            "someone else got there first, you do not hold it, its rev changed, or the transition is not allowed now: re-read and choose again"
        }
        Kind::NotFound => "no such board or document, or nothing to claim",
        Kind::Paused => "a human paused the board: claim nothing new until it is resumed",
        Kind::Invalid => "an invalid document or input (malformed, over a limit, hostile)",
        Kind::Unconfirmed => {
            "the board's remote could not confirm the claim or move, so nothing changed: try again when it is reachable"
        }
        Kind::Unknown => {
            "the board's remote may have taken the claim or move but its answer was lost: make the same call again, which finds out"
        }
    }
}

/// The error object: `{"error": {"kind", "code", "meaning"?, "message", "path"}}`.
#[derive(Clone, Debug, Serialize)]
pub struct Report {
    pub error: ErrorObject,
}

#[derive(Clone, Debug, Serialize)]
pub struct ErrorObject {
    /// `usage`, `conflict`, `not-found`, … ([`Kind::name`]).
    pub kind: &'static str,
    /// The exit code the command line gives it.
    pub code: u8,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub meaning: Option<&'static str>,
    pub message: String,
    /// The file it is about, when there is one.
    pub path: Option<String>,
    /// A refused hold: each hold in the way (at most [`CONFLICTS`]), as `holds` lists
    /// holds, with what was asked for.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub conflicts: Option<Vec<crate::holds::Conflict>>,
    /// How many more conflicts there were than `conflicts` shows.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub more_conflicts: Option<usize>,
}

impl Report {
    /// The report of `e` with `message` (as [`message`] words it for the front-end), cut
    /// at [`MESSAGE_CHARS`].
    pub fn new(e: &Error, message: &str) -> Report {
        Report {
            error: ErrorObject {
                kind: e.kind().name(),
                code: e.exit_code(),
                meaning: None,
                message: shorten(message, MESSAGE_CHARS),
                path: e.path().map(|p| p.display().to_string()),
                conflicts: (!e.conflicts().is_empty())
                    .then(|| e.conflicts().iter().take(CONFLICTS).cloned().collect()),
                more_conflicts: (e.conflicts().len() > CONFLICTS)
                    .then(|| e.conflicts().len() - CONFLICTS),
            },
        }
    }

    /// The report with what its kind means ([`meaning`]), for a program to act on.
    pub fn explained(e: &Error, message: &str) -> Report {
        let mut r = Report::new(e, message);
        r.error.meaning = Some(meaning(e.kind()));
        r
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::{Input, Plain};

    #[test]
    fn the_error_object_is_one_shape_and_bounded() {
        let e = Error::request(
            Kind::Invalid,
            crate::msg!("bad ", Input::Title, ": ", "x".repeat(10_000)),
        );
        let r = Report::explained(&e, &message(&e, &Plain));
        let v = serde_json::to_value(&r).unwrap();
        assert_eq!(v["error"]["kind"], "invalid");
        assert_eq!(v["error"]["code"], 6);
        assert!(
            v["error"]["meaning"]
                .as_str()
                .unwrap()
                .contains("over a limit")
        );
        let m = v["error"]["message"].as_str().unwrap();
        assert!(
            m.starts_with("bad title: xxx") && m.ends_with("[cut: 10011 characters in all]"),
            "{m:.100}"
        );
        assert!(v["error"]["path"].is_null());
        let plain = serde_json::to_value(Report::new(&e, "short")).unwrap();
        assert!(plain["error"].get("meaning").is_none());
    }
}
