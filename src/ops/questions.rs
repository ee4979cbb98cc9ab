//! Questions for a human, and permission requests: asking one (which blocks the tasks that
//! wait for it), answering it (which unblocks the tasks that waited only for it), and
//! deciding a permission request, which only a human at a terminal may do.

use serde_json::Value;

use crate::board::Board;
use crate::doc::decision::Decision;
use crate::doc::edit::FieldEdit;
use crate::doc::{Document, Region};
use crate::error::{Command, Error, Input, Kind, Result};
use crate::log::{self, Entry};
use crate::msg;
use crate::store;

use super::decisions;
use super::new::NewDoc;
use super::transition::{self, Options};
use super::{Change, Outcome, mutate};

/// A permission request: who may do what on which resource, and why.
#[derive(Clone, Debug, Default)]
pub struct Permission {
    pub capability: String,
    pub resource: String,
    pub reason: String,
}

/// Everything `tavern ask` can say about a new question.
#[derive(Clone, Debug, Default)]
pub struct Ask {
    pub id: Option<String>,
    /// The question itself (the title); unused for a permission request.
    pub text: String,
    pub body: Option<String>,
    pub options: Vec<String>,
    pub blocks: Vec<String>,
    pub context: Option<String>,
    pub permission: Option<Permission>,
}

/// What `ask` did: the new question, and a warning for each listed task it could not block.
#[derive(Debug)]
pub struct Asked {
    pub doc: Document,
    pub entry: Entry,
    pub warnings: Vec<String>,
}

/// `tavern ask`: a new open question; the tasks in `blocks` move to blocked when they can.
pub fn ask(board: &Board, actor: &str, a: &Ask) -> Result<Asked> {
    let mut sets: Vec<(String, Value)> = vec![("status".into(), "open".into())];
    let title = match &a.permission {
        None => {
            if a.text.trim().is_empty() {
                return Err(Error::request(
                    Kind::Usage,
                    msg!(
                        "the question is required: ",
                        Command::Ask,
                        " \"text\" (or ",
                        Input::Permission,
                        " CAPABILITY)"
                    ),
                ));
            }
            sets.push(("kind".into(), "question".into()));
            a.text.clone()
        }
        Some(p) => {
            for (input, v) in [
                (Input::Permission, &p.capability),
                (Input::Resource, &p.resource),
                (Input::Reason, &p.reason),
            ] {
                if v.trim().is_empty() {
                    return Err(Error::request(
                        Kind::Usage,
                        msg!(
                            "a permission request needs ",
                            input,
                            ": ",
                            Command::Ask,
                            " ",
                            Input::Permission,
                            " CAPABILITY ",
                            Input::Resource,
                            " R ",
                            Input::Reason,
                            " \"…\""
                        ),
                    ));
                }
            }
            sets.push(("kind".into(), "permission".into()));
            sets.push(("capability".into(), p.capability.clone().into()));
            sets.push(("resource".into(), p.resource.clone().into()));
            sets.push(("reason".into(), p.reason.clone().into()));
            format!("Permission: {} on {}", p.capability, p.resource)
        }
    };
    let options: Vec<String> = a
        .options
        .iter()
        .map(|o| o.trim().to_string())
        .filter(|o| !o.is_empty())
        .collect();
    let mut blocks: Vec<String> = Vec::new();
    for t in &a.blocks {
        crate::id::validate(t)?;
        if !board.doc_path(Region::Tasks, t).exists() {
            return Err(Error::request(
                Kind::NotFound,
                msg!(
                    format!("task '{t}' (named in "),
                    Input::Blocks,
                    ") not found\nhint: `",
                    Command::List(Some(Region::Tasks)),
                    "` shows the tasks on the board"
                ),
            ));
        }
        if !blocks.contains(t) {
            blocks.push(t.clone());
        }
    }
    if !options.is_empty() {
        sets.push(("options".into(), options.clone().into()));
    }
    if !blocks.is_empty() {
        sets.push(("blocks".into(), blocks.clone().into()));
    }
    if let Some(c) = &a.context {
        sets.push(("context".into(), c.clone().into()));
    }
    // Without a body of its own, the body says what is asked, so the file reads whole.
    let body = a
        .body
        .clone()
        .or_else(|| Some(question_body(a, &options, &blocks)));
    let spec = NewDoc {
        id: a.id.clone(),
        title,
        body,
        sets,
        ..NewDoc::default()
    };
    let (doc, entry) = super::new::create(board, actor, Region::Questions, &spec)?;
    let blocked_state = board
        .config
        .workflow
        .transition("block")
        .map(|t| t.to.clone());
    let mut warnings = Vec::new();
    for t in &blocks {
        // Already blocked (by another question, say): it is where it should be.
        if let (Ok(task), Some(state)) = (
            store::read_doc(board, Region::Tasks, t),
            blocked_state.as_deref(),
        ) && task.status() == Some(state)
        {
            continue;
        }
        let opts = Options {
            note: Some(format!("blocked by {}", doc.id())),
            ..Options::default()
        };
        if let Err(e) = transition::transition(board, actor, t, "block", &opts) {
            warnings.push(format!(
                "task {t} is listed in blocks but was not blocked: {e}"
            ));
        }
    }
    Ok(Asked {
        doc,
        entry,
        warnings,
    })
}

/// The body of a question asked without one: the question (or the permission asked for),
/// its options, the tasks waiting for it, and its context.
fn question_body(a: &Ask, options: &[String], blocks: &[String]) -> String {
    let mut out = match &a.permission {
        None => format!("## Question\n\n{}\n", a.text.trim()),
        Some(p) => format!(
            "## Permission\n\n- capability: {}\n- resource: {}\n- reason: {}\n",
            p.capability.trim(),
            p.resource.trim(),
            p.reason.trim()
        ),
    };
    if !options.is_empty() {
        out.push_str("\n## Options\n\n");
        for o in options {
            out.push_str(&format!("- {o}\n"));
        }
    }
    if !blocks.is_empty() {
        out.push_str(&format!("\n## Blocks\n\n{}\n", blocks.join(", ")));
    }
    if let Some(c) = &a.context {
        out.push_str(&format!("\n## Context\n\n{}\n", c.trim()));
    }
    out
}

/// What `answer` did: the answered question, the tasks it unblocked, and a warning for
/// each task it should have unblocked but could not.
#[derive(Debug)]
pub struct Answered {
    pub outcome: Outcome,
    pub unblocked: Vec<String>,
    pub warnings: Vec<String>,
}

/// `tavern answer`: records the answer (free text, or one of the question's options) and
/// unblocks the tasks that waited only for this question.
pub fn answer(
    board: &Board,
    actor: &str,
    id: &str,
    text: Option<&str>,
    choice: Option<&str>,
) -> Result<Answered> {
    let value = match (text, choice) {
        (Some(_), Some(_)) => {
            return Err(Error::request(
                Kind::Usage,
                msg!(
                    "give either the answer text or ",
                    Input::Choice,
                    ", not both"
                ),
            ));
        }
        (None, None) => {
            return Err(Error::request(
                Kind::Usage,
                msg!(
                    "an answer is required: ",
                    Command::Answer("ID".into()),
                    " \"text\" or ",
                    Input::Choice,
                    " OPTION"
                ),
            ));
        }
        (Some(t), None) if t.trim().is_empty() => {
            return Err(Error::usage("the answer is empty"));
        }
        (Some(t), None) => t.to_string(),
        (None, Some(c)) => c.to_string(),
    };
    let mut decision = false;
    let outcome = mutate(board, Region::Questions, id, None, |doc| {
        if decisions::is_permission(doc) {
            decision = true;
            return Err(Error::conflict(doc.rel_path(), "a human's decision"));
        }
        if let Some(c) = choice {
            let options = doc.list("options");
            if options.is_empty() {
                return Err(Error::request(
                    Kind::Usage,
                    msg!(
                        format!(
                            "question {} has no options; answer it with text: ",
                            doc.id()
                        ),
                        Command::Answer(doc.id().to_string()),
                        " \"…\""
                    ),
                ));
            }
            if !options.iter().any(|o| o == c) {
                return Err(Error::usage(format!(
                    "'{c}' is not an option of question {}; its options are: {}",
                    doc.id(),
                    // Quoted, since an option may itself contain a comma.
                    options
                        .iter()
                        .map(|o| format!("'{o}'"))
                        .collect::<Vec<_>>()
                        .join(", ")
                )));
            }
        }
        let status = doc.status().unwrap_or("");
        if status != "open" {
            return Err(Error::conflict(
                doc.rel_path(),
                format!(
                    "cannot answer question {}: it is {}, not open",
                    doc.id(),
                    if status.is_empty() {
                        "without status"
                    } else {
                        status
                    }
                ),
            ));
        }
        let edits = vec![
            FieldEdit::Set("answer".into(), value.clone().into()),
            FieldEdit::Set("answered_by".into(), actor.into()),
            FieldEdit::Set(
                "answered_at".into(),
                crate::time::stamp_millis(crate::time::now()).into(),
            ),
            FieldEdit::Set("status".into(), "answered".into()),
        ];
        Ok(Some(Change {
            edits,
            body: None,
            entry: Entry {
                actor: actor.to_string(),
                op: "edit".into(),
                from: Some(status.to_string()),
                to: Some("answered".into()),
                note: Some("answered".into()),
                ..Entry::default()
            },
        }))
    });
    // A permission request is decided, never answered: an answer would be taken for a
    // decision, so the attempt is logged as one.
    if decision {
        let path = format!("{}/{id}.md", Region::Questions.dir());
        return Err(decisions::refuse(board, actor, &path, id, "answer it"));
    }
    let outcome = outcome?;
    let (unblocked, warnings) = unblock_waiting(board, actor, &outcome.doc)?;
    Ok(Answered {
        outcome,
        unblocked,
        warnings,
    })
}

/// Unblocks the blocked tasks in `question`'s `blocks` that no other open question blocks.
fn unblock_waiting(
    board: &Board,
    actor: &str,
    question: &Document,
) -> Result<(Vec<String>, Vec<String>)> {
    let blocks = question.list("blocks");
    let mut unblocked = Vec::new();
    let mut warnings = Vec::new();
    if blocks.is_empty() {
        return Ok((unblocked, warnings));
    }
    let qid = question.id().to_string();
    let others = crate::scan::scan_matching(board, &[Region::Questions], |d| {
        d.id() != qid && d.status() == Some("open")
    })?;
    for t in blocks {
        let Ok(task) =
            crate::id::validate(&t).and_then(|_| store::read_doc(board, Region::Tasks, &t))
        else {
            warnings.push(format!("task {t} (in blocks) is not on the board; skipped"));
            continue;
        };
        if task.status() != Some("blocked") {
            continue;
        }
        if let Some(other) = others.docs.iter().find(|q| q.list("blocks").contains(&t)) {
            warnings.push(format!(
                "task {t} stays blocked: open question {} blocks it too",
                other.id()
            ));
            continue;
        }
        let opts = Options {
            answered: true,
            note: Some(format!("unblocked: {qid} answered")),
            ..Options::default()
        };
        match transition::transition(board, actor, &t, "unblock", &opts) {
            Ok(_) => unblocked.push(t),
            Err(e) => warnings.push(format!("task {t} was not unblocked: {e}")),
        }
    }
    Ok((unblocked, warnings))
}

/// Open questions, oldest first (created_at, then id): those that wait for an answer or a
/// human's decision, forged decisions included (they count as undecided).
pub fn open_questions(board: &Board) -> Result<crate::scan::Scan> {
    questions(board, false)
}

/// Questions, oldest first (created_at, then id): the open ones, or with `all` every one
/// on the board (answered and decided ones too; not the archived ones). Each carries its
/// decision as the log says it (read once for the whole list).
pub fn questions(board: &Board, all: bool) -> Result<crate::scan::Scan> {
    let scan = crate::scan::scan_matching(board, &[Region::Questions], |d| all || may_be_open(d))?;
    open_of(board, scan, all)
}

/// A question that may still wait: open, or claiming a decision the log may not hold.
pub fn may_be_open(d: &Document) -> bool {
    d.status() == Some("open") || decisions::claims_decision(d)
}

/// [`questions`] of the questions read (with `all`, every one; else those that
/// [`may_be_open`]), each given its decision as the log says it.
pub fn open_of(board: &Board, mut scan: crate::scan::Scan, all: bool) -> Result<crate::scan::Scan> {
    decisions::annotate(board, &mut scan.docs)?;
    if !all {
        scan.docs.retain(decisions::is_open);
    }
    scan.docs.sort_by(|a, b| {
        crate::time::cmp_stamps(a.created_at(), b.created_at()).then_with(|| a.id().cmp(b.id()))
    });
    Ok(scan)
}

/// How a human confirms a decision: None when standard input is not a terminal, else a
/// prompt that returns the line the human typed.
pub type Confirm<'a> = Option<&'a mut dyn FnMut(&str) -> std::io::Result<String>>;

/// `tavern approve ID` / `tavern deny ID` on a permission request. Only an actor listed
/// under `humans:` in board.yaml, at a terminal, who types the question's id, may decide;
/// every refusal is logged as an `alert`.
pub fn decide(
    board: &Board,
    actor: &str,
    id: &str,
    approve: bool,
    if_rev: Option<u64>,
    confirm: Confirm<'_>,
) -> Result<Outcome> {
    let verb = if approve { "approve" } else { "deny" };
    let to = if approve { "approved" } else { "denied" };
    let doc = store::read_doc(board, Region::Questions, id)?;
    check_decidable(board, &doc, verb)?;
    let refuse = |why: String| -> Result<Outcome> {
        let entry = Entry {
            actor: actor.to_string(),
            op: "alert".into(),
            at: crate::time::stamp_millis(crate::time::now()),
            doc: doc.rel_path(),
            note: Some(format!("refused: {actor} may not {verb} {id}: {why}")),
            ..Entry::default()
        };
        log::append(board, entry)?;
        Err(Error::conflict(
            doc.rel_path(),
            format!("{actor} may not {verb} permission request {id}: {why} (logged)"),
        ))
    };
    if !board.config.humans.iter().any(|h| h == actor) {
        return refuse("not a human (only actors listed under humans: in board.yaml may decide permission requests)".into());
    }
    let Some(confirm) = confirm else {
        return refuse(
            "no terminal (standard input is not a terminal; a human confirms at a prompt)".into(),
        );
    };
    let typed = match confirm(&prompt(&doc, verb)) {
        Ok(line) => line,
        Err(e) => return refuse(format!("could not read the confirmation: {e}")),
    };
    if typed.trim() != id {
        return refuse(format!(
            "the confirmation did not match (typed '{}', expected '{id}')",
            typed.trim().escape_debug()
        ));
    }
    mutate(board, Region::Questions, id, if_rev, |doc| {
        check_decidable(board, doc, verb)?;
        let edits = vec![
            FieldEdit::Set("status".into(), to.into()),
            FieldEdit::Set("decided_by".into(), actor.into()),
            FieldEdit::Set(
                "decided_at".into(),
                crate::time::stamp_millis(crate::time::now()).into(),
            ),
        ];
        Ok(Some(Change {
            edits,
            body: None,
            entry: Entry {
                actor: actor.to_string(),
                op: "edit".into(),
                from: doc.status().map(str::to_string),
                to: Some(to.into()),
                note: Some(decisions::note(doc, approve)),
                ..Entry::default()
            },
        }))
    })
}

/// What a human reads before deciding: who asks for which capability on what and why, and
/// the start of the request's body, then what to type. Agent-written text, so control
/// characters (terminal escapes) are shown as spaces.
fn prompt(doc: &Document, verb: &str) -> String {
    let clean = |s: &str| -> String {
        s.chars()
            .map(|c| if c.is_control() { ' ' } else { c })
            .collect()
    };
    let field = |k: &str| clean(doc.str(k).unwrap_or("-"));
    let mut out = format!(
        "permission request {} from {}\n  capability: {}\n  resource:   {}\n  reason:     {}\n",
        doc.id(),
        field("asked_by"),
        field("capability"),
        field("resource"),
        field("reason"),
    );
    const PREVIEW_LINES: usize = 12;
    let lines: Vec<&str> = doc.body().trim().lines().collect();
    if !lines.is_empty() {
        out.push_str("  preview:\n");
        for l in lines.iter().take(PREVIEW_LINES) {
            out.push_str(&format!("    {}\n", clean(l)));
        }
        if lines.len() > PREVIEW_LINES {
            out.push_str(&format!(
                "    … {} more lines in {}\n",
                lines.len() - PREVIEW_LINES,
                doc.rel_path()
            ));
        }
    }
    out.push_str(&format!("type {} to {verb}: ", doc.id()));
    out
}

/// A permission request that no human has decided yet (open, or only forged), or why it
/// cannot be decided.
fn check_decidable(board: &Board, doc: &Document, verb: &str) -> Result<()> {
    if doc.str("kind") != Some("permission") {
        return Err(Error::request_at(
            Kind::Conflict,
            doc.rel_path(),
            msg!(
                format!(
                    "{} is a question, not a permission request: answer it with `",
                    doc.id()
                ),
                Command::Answer(doc.id().to_string()),
                " \"…\"`"
            ),
        ));
    }
    match decisions::of(board, doc)? {
        Some(d) if d.is_undecided() => Ok(()),
        Some(d @ (Decision::Approved { .. } | Decision::Denied { .. })) => Err(Error::conflict(
            doc.rel_path(),
            format!(
                "cannot {verb} permission request {}: it is already {}",
                doc.id(),
                d.describe()
            ),
        )),
        _ => {
            let status = doc.status().unwrap_or("");
            Err(Error::conflict(
                doc.rel_path(),
                format!(
                    "cannot {verb} permission request {}: it is {}, not open",
                    doc.id(),
                    if status.is_empty() {
                        "without status"
                    } else {
                        status
                    }
                ),
            ))
        }
    }
}
