//! Questions and permission requests: ask, answer, the open ones, and the decisions
//! on permission requests.

use serde::Serialize;
use serde::ser::{SerializeMap, Serializer};

use super::change::{Changed, Created};
use super::view::Listing;
use crate::board::Board;
use crate::doc::Region;
use crate::error::Result;
use crate::ops::Outcome;
use crate::ops::questions;

/// Open questions (or, with `all`, every question), oldest first.
pub fn list(board: &Board, all: bool) -> Result<Listing> {
    let scan = crate::ops::questions::questions(board, all)?;
    Ok(Listing {
        docs: scan.docs,
        skipped: scan.skipped,
    })
}

pub use crate::ops::questions::{Ask, Confirm, Permission};

/// A question asked, and what could not be done on the way (a task in `blocks` that
/// could not be blocked).
#[derive(Debug, Serialize)]
#[serde(transparent)]
pub struct Asked {
    pub created: Created,
    #[serde(skip)]
    pub warnings: Vec<String>,
}

/// Asks a question or requests a permission; the tasks it blocks move to blocked.
pub fn ask(board: &Board, actor: &str, spec: &Ask) -> Result<Asked> {
    let asked = questions::ask(board, actor, spec)?;
    Ok(Asked {
        created: Created::new(asked.doc, asked.entry),
        warnings: asked.warnings,
    })
}

/// A question answered, and the tasks that waited only on it and are unblocked now.
#[derive(Debug)]
pub struct Answered {
    pub outcome: Outcome,
    pub unblocked: Vec<String>,
    pub warnings: Vec<String>,
}

impl Serialize for Answered {
    fn serialize<S: Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        let doc = &self.outcome.doc;
        let mut m = s.serialize_map(None)?;
        m.serialize_entry("ok", &true)?;
        m.serialize_entry("id", doc.id())?;
        m.serialize_entry("path", &doc.rel_path())?;
        m.serialize_entry("rev", &doc.rev())?;
        m.serialize_entry("status", &doc.status())?;
        m.serialize_entry("answer", &doc.str("answer"))?;
        m.serialize_entry("unblocked", &self.unblocked)?;
        if let Some(e) = &self.outcome.entry {
            m.serialize_entry("seq", &e.seq)?;
        }
        m.end()
    }
}

/// Answers an open question (id or unique prefix): free text, or one of its options.
pub fn answer(
    board: &Board,
    actor: &str,
    reference: &str,
    text: Option<&str>,
    choice: Option<&str>,
) -> Result<Answered> {
    let id = crate::ops::resolve::resolve_kind(
        board,
        reference,
        Region::Questions,
        "answer works on questions",
    )?;
    let a = questions::answer(board, actor, &id, text, choice)?;
    Ok(Answered {
        outcome: a.outcome,
        unblocked: a.unblocked,
        warnings: a.warnings,
    })
}

/// Approves or denies a permission request (id or unique prefix). Only a human listed
/// in board.yaml may, confirming at a prompt: `confirm` asks them, None when there is no
/// one to ask (every refusal is logged).
pub fn decide(
    board: &Board,
    actor: &str,
    reference: &str,
    approve: bool,
    if_rev: Option<u64>,
    confirm: Confirm<'_>,
) -> Result<Changed> {
    let (_, id) = crate::ops::resolve::resolve(board, reference, &[Region::Questions])?;
    Ok(Changed::new(questions::decide(
        board, actor, &id, approve, if_rev, confirm,
    )?))
}

/// Approves what `reference` names: a permission request is decided, a task takes its
/// `approve` transition.
pub fn approve(
    board: &Board,
    actor: &str,
    reference: &str,
    opts: &crate::ops::transition::Options,
    confirm: Confirm<'_>,
) -> Result<Changed> {
    let (region, id) =
        crate::ops::resolve::resolve(board, reference, &[Region::Tasks, Region::Questions])?;
    if region == Region::Tasks {
        return super::tasks::transition(board, actor, reference, "approve", opts);
    }
    decide(board, actor, &id, true, opts.if_rev, confirm)
}

/// What a wait for a question ended with.
#[derive(Debug, Serialize)]
#[serde(tag = "outcome", rename_all = "lowercase")]
pub enum Waited {
    /// A human decided the permission request (the log holds it).
    Decided {
        id: String,
        decision: crate::doc::decision::Decision,
    },
    /// The question was answered.
    Answered {
        id: String,
        answer: Option<String>,
        answered_by: Option<String>,
    },
}

/// Waits until a human decides permission request `id` (as the log says it: a forged
/// decision never ends the wait, and `forged` hears of each one when it first appears), or
/// until question `id` is answered. Reads the file every `poll` (an unreadable one does
/// not end the wait), and the log only when the file or the log changed since the last
/// look and the file claims a decision.
pub fn wait(
    board: &Board,
    id: &str,
    poll: std::time::Duration,
    forged: &mut dyn FnMut(&crate::doc::decision::Decision),
) -> Result<Waited> {
    use crate::doc::decision::Decision;
    let mut seen: Option<(String, u64)> = None;
    let mut told: Option<Decision> = None;
    loop {
        let mut doc = match crate::store::read_doc(board, Region::Questions, id) {
            Ok(doc) => doc,
            // Half written by hand (`cat >` truncates first), or broken: an unreadable
            // file decides nothing, so the wait goes on.
            Err(crate::error::Error::InvalidDoc { .. }) => {
                std::thread::sleep(poll);
                continue;
            }
            Err(e) => return Err(e),
        };
        if crate::ops::decisions::is_permission(&doc) {
            let log_len = std::fs::metadata(board.log_path()).map_or(0, |m| m.len());
            let now = (doc.raw.clone(), log_len);
            if seen.as_ref() != Some(&now) {
                crate::ops::decisions::annotate_one(board, &mut doc)?;
                match doc.decision.take() {
                    Some(d @ (Decision::Approved { .. } | Decision::Denied { .. })) => {
                        return Ok(Waited::Decided {
                            id: doc.id().to_string(),
                            decision: d,
                        });
                    }
                    Some(d @ Decision::Forged { .. }) if told.as_ref() != Some(&d) => {
                        forged(&d);
                        told = Some(d);
                    }
                    _ => {}
                }
                seen = Some(now);
            }
        } else if doc.status() == Some("answered") {
            return Ok(Waited::Answered {
                id: doc.id().to_string(),
                answer: doc.text("answer"),
                answered_by: doc.text("answered_by"),
            });
        }
        std::thread::sleep(poll);
    }
}
