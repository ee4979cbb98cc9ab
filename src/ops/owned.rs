//! Fields that only a command writes, as one rule for `edit` and `new`: a task's status and
//! claim change through its workflow (`move`, `claim`, `release`), a question's status and
//! answerer through `answer`, and a human's decision on a permission request only through
//! `approve` or `deny`. Setting them any other way would skip the workflow, or forge a
//! decision.

use serde_json::Value;

use crate::board::Board;
use crate::doc::Region;
use crate::error::{Command, Error, Input, Kind};
use crate::msg;

use super::decisions::DECISION_FIELDS;

/// Fields that transitions own on a task.
const TASK_OWNED: [&str; 3] = ["status", "claimed_by", "claimed_at"];
/// Fields that `answer` (or `ask`) owns on a question.
const QUESTION_OWNED: [&str; 4] = ["status", "answered_by", "answered_at", "kind"];
/// What a human decides on when deciding a permission request: changing it would change
/// what was decided.
const REQUEST_FIELDS: [&str; 5] = ["status", "kind", "capability", "resource", "reason"];

/// How a document is being written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum How {
    /// `edit`: `force` overrides the workflow (logged), never a decision.
    Edit { force: bool },
    /// `new`: the document starts where the workflow starts.
    New,
}

/// Why a field may not be written this way.
#[derive(Debug)]
pub enum Refusal {
    /// It would skip the workflow: a usage error (exit 2).
    Workflow(Error),
    /// It would forge a human's decision (what was tried, `set status=approved`): refused
    /// with exit 3 and logged as an alert, whatever `force` says ([`super::decisions::refuse`]).
    Decision(String),
}

/// What is done to the field: set to a value, or unset / changed as a list.
#[derive(Clone, Copy, Debug)]
pub enum Write<'a> {
    Set(&'a Value),
    Unset,
    List,
}

impl Write<'_> {
    fn describe(self, key: &str) -> String {
        match self {
            Write::Set(Value::String(s)) => format!("set {key}={s}"),
            Write::Set(v) => format!("set {key}={v}"),
            Write::Unset => format!("unset {key}"),
            Write::List => format!("change {key}"),
        }
    }
}

/// The status a new document of `region` starts in, when the workflow owns its status.
fn initial(board: &Board, region: Region) -> Option<&str> {
    match region {
        Region::Tasks => Some(board.config.workflow.initial.as_str()),
        Region::Questions => Some("open"),
        Region::Observations => None,
    }
}

/// Whether `key` may be written as `write` on a document of `region` (`permission`: it
/// is a permission request). The first refusal that applies, or None.
pub fn check(
    board: &Board,
    region: Region,
    permission: bool,
    key: &str,
    write: Write<'_>,
    how: How,
) -> Option<Refusal> {
    if region == Region::Questions {
        let decided =
            matches!(write, Write::Set(Value::String(s)) if s == "approved" || s == "denied");
        if DECISION_FIELDS.contains(&key)
            || (key == "status" && decided)
            || (permission && REQUEST_FIELDS.contains(&key))
        {
            return Some(Refusal::Decision(write.describe(key)));
        }
    }
    let owned: &[&str] = match region {
        Region::Tasks => &TASK_OWNED,
        Region::Questions => &QUESTION_OWNED,
        Region::Observations => &[],
    };
    if !owned.contains(&key) {
        return None;
    }
    let force = match how {
        How::Edit { force } => force,
        // A new document may say what it starts as anyway.
        How::New => match (key, write) {
            ("status", Write::Set(Value::String(s)))
                if Some(s.as_str()) == initial(board, region) =>
            {
                return None;
            }
            // What kind of question it is, too (an open permission request decides nothing).
            ("kind", _) => return None,
            _ => false,
        },
    };
    if force {
        return None;
    }
    Some(Refusal::Workflow(workflow_error(region, key, how)))
}

/// The refusal to report among several: a forged decision before anything else.
pub fn first(refusals: impl Iterator<Item = Refusal>) -> Option<Refusal> {
    let mut workflow = None;
    for r in refusals {
        match r {
            Refusal::Decision(_) => return Some(r),
            Refusal::Workflow(_) if workflow.is_none() => workflow = Some(r),
            Refusal::Workflow(_) => {}
        }
    }
    workflow
}

/// The message for a workflow-owned field: the commands that change it, and the override
/// where there is one.
fn workflow_error(region: Region, key: &str, how: How) -> Error {
    let kind = region.kind();
    let mut m = match (region, key) {
        (Region::Questions, "kind") => msg!(
            "'kind' of a question is set when it is asked: use `",
            Command::Ask,
            " ",
            Input::Permission,
            "` to ask for a permission"
        ),
        (Region::Questions, _) => msg!(
            format!("'{key}' of a question changes when it is answered: use `"),
            Command::Answer("ID".into()),
            "`"
        ),
        _ => msg!(
            format!("'{key}' of a {kind} changes through its workflow: use `"),
            Command::Move,
            "`, `",
            Command::Claim,
            "` or `",
            Command::Release,
            "`"
        ),
    };
    let tail = match (how, key) {
        (_, "kind") => msg!(),
        (How::Edit { .. }, _) => msg!(" (or ", Input::Force, " to override, which is logged)"),
        (How::New, _) => msg!(format!(" once the {kind} exists")),
    };
    m.0.extend(tail.0);
    Error::request(Kind::Usage, m)
}
