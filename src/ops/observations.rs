//! Observations (findings): posting one, and its life after that: acknowledged, resolved
//! or rejected. Every change goes through [`mutate`].

use serde_json::Value;

use crate::board::Board;
use crate::doc::edit::FieldEdit;
use crate::doc::{Document, Region};
use crate::error::{Command, Error, Input, Kind, Result};
use crate::log::Entry;
use crate::msg;

use super::new::NewDoc;
use super::{Change, Outcome, mutate};
use crate::schema::{SCOPES, SEVERITIES};

/// Everything `tavern post` can say about a new observation.
#[derive(Clone, Debug, Default)]
pub struct Post {
    pub id: Option<String>,
    pub title: String,
    pub body: Option<String>,
    pub tags: Vec<String>,
    pub topic: String,
    pub severity: String,
    pub confidence: Option<String>,
    pub about: Vec<String>,
    pub parent: Option<String>,
    /// `session` or `persistent` (the default).
    pub scope: Option<String>,
    /// How long a session observation lives, like `1h`.
    pub ttl: Option<String>,
    pub context: Option<String>,
}

/// Does a document with exactly this id exist in any region?
fn exists_anywhere(board: &Board, id: &str) -> bool {
    Region::ALL
        .iter()
        .any(|r| std::fs::symlink_metadata(board.doc_path(*r, id)).is_ok())
}

fn require_doc(board: &Board, id: &str, input: Input) -> Result<()> {
    crate::id::validate(id)?;
    if !exists_anywhere(board, id) {
        return Err(Error::request(
            Kind::NotFound,
            msg!(
                format!("document '{id}' (named in "),
                input,
                ") not found\nhint: `",
                Command::List(None),
                "` shows the documents on the board"
            ),
        ));
    }
    Ok(())
}

fn parse_confidence(s: &str) -> Result<f64> {
    match s.trim().parse::<f64>() {
        Ok(c) if (0.0..=1.0).contains(&c) => Ok(c),
        _ => Err(Error::usage(format!(
            "invalid confidence '{s}': use a number from 0 to 1, like 0.8"
        ))),
    }
}

/// Checks a post and turns it into the fields of the new document.
fn fields(
    board: &Board,
    p: &Post,
    now: chrono::DateTime<chrono::Utc>,
) -> Result<Vec<(String, Value)>> {
    if p.topic.trim().is_empty() {
        return Err(Error::request(
            Kind::Usage,
            msg!("a topic is required: ", Input::Topic, " TOPIC"),
        ));
    }
    if !SEVERITIES.contains(&p.severity.as_str()) {
        return Err(Error::usage(format!(
            "invalid severity '{}': use one of {}",
            p.severity,
            SEVERITIES.join(", ")
        )));
    }
    let confidence = p.confidence.as_deref().map(parse_confidence).transpose()?;
    let scope = p.scope.as_deref().unwrap_or("persistent");
    if !SCOPES.contains(&scope) {
        return Err(Error::usage(format!(
            "invalid scope '{scope}': use session or persistent"
        )));
    }
    let expires_at = match &p.ttl {
        None => None,
        Some(_) if scope != "session" => {
            return Err(Error::request(
                Kind::Usage,
                msg!(
                    Input::Ttl,
                    " needs ",
                    Input::Scope,
                    " session: persistent observations do not expire"
                ),
            ));
        }
        Some(ttl) => {
            let d = crate::time::parse_duration(ttl).ok_or_else(|| {
                Error::request(
                    Kind::Usage,
                    msg!(
                        "invalid ",
                        Input::Ttl,
                        format!(" '{ttl}': use a number and a unit (s, m, h, d, w), like 1h")
                    ),
                )
            })?;
            let at = now.checked_add_signed(d).ok_or_else(|| {
                Error::request(
                    Kind::Usage,
                    msg!(Input::Ttl, format!(" '{ttl}' is too long")),
                )
            })?;
            Some(crate::time::stamp_millis(at))
        }
    };
    for id in &p.about {
        require_doc(board, id, Input::About)?;
    }
    if let Some(parent) = &p.parent {
        require_doc(board, parent, Input::Parent)?;
    }

    let mut sets: Vec<(String, Value)> = vec![
        ("status".into(), "open".into()),
        ("topic".into(), p.topic.clone().into()),
        ("severity".into(), p.severity.clone().into()),
    ];
    if let Some(c) = confidence {
        sets.push(("confidence".into(), c.into()));
    }
    if !p.about.is_empty() {
        sets.push(("about".into(), p.about.clone().into()));
    }
    if let Some(parent) = &p.parent {
        sets.push(("parent".into(), parent.clone().into()));
    }
    sets.push(("scope".into(), scope.into()));
    if let Some(at) = expires_at {
        sets.push(("expires_at".into(), at.into()));
    }
    if let Some(c) = &p.context {
        sets.push(("context".into(), c.clone().into()));
    }
    Ok(sets)
}

/// `tavern post`: a new open observation.
pub fn post(board: &Board, actor: &str, p: &Post) -> Result<(Document, Entry)> {
    // One instant for created_at and expires_at: expires_at is exactly created_at + ttl.
    let now = crate::time::now();
    let sets = fields(board, p, now)?;
    let spec = NewDoc {
        at: Some(now),
        id: p.id.clone(),
        title: p.title.clone(),
        body: p.body.clone(),
        tags: p.tags.clone(),
        sets,
        ..NewDoc::default()
    };
    super::new::create(board, actor, Region::Observations, &spec)
}

/// What happens to an observation after it is posted.
#[derive(Clone, Debug)]
pub enum Action {
    Ack,
    Resolve { resolution: String },
    Reject { note: Option<String> },
}

impl Action {
    fn name(&self) -> &'static str {
        match self {
            Action::Ack => "ack",
            Action::Resolve { .. } => "resolve",
            Action::Reject { .. } => "reject",
        }
    }

    /// The statuses it may start from.
    fn from(&self) -> &'static [&'static str] {
        match self {
            Action::Ack => &["open"],
            Action::Resolve { .. } | Action::Reject { .. } => &["open", "acknowledged"],
        }
    }

    fn to(&self) -> &'static str {
        match self {
            Action::Ack => "acknowledged",
            Action::Resolve { .. } => "resolved",
            Action::Reject { .. } => "rejected",
        }
    }

    /// The fields that say who did it and when.
    fn stamp_fields(&self) -> (&'static str, &'static str) {
        match self {
            Action::Ack => ("acked_by", "acked_at"),
            Action::Resolve { .. } => ("resolved_by", "resolved_at"),
            Action::Reject { .. } => ("rejected_by", "rejected_at"),
        }
    }
}

/// Runs `action` on observation `id` as `actor`; `if_rev` makes it a compare-and-swap.
pub fn act(
    board: &Board,
    actor: &str,
    id: &str,
    action: &Action,
    if_rev: Option<u64>,
) -> Result<Outcome> {
    if let Action::Resolve { resolution } = action
        && resolution.trim().is_empty()
    {
        return Err(Error::request(
            Kind::Usage,
            msg!(
                "a resolution is required: ",
                Input::Resolution,
                " \"what was done\""
            ),
        ));
    }
    mutate(board, Region::Observations, id, if_rev, |doc| {
        let status = doc.status().unwrap_or("");
        if !action.from().contains(&status) {
            let current = if status.is_empty() {
                "has no status".to_string()
            } else {
                format!("is {status}")
            };
            return Err(Error::conflict(
                doc.rel_path(),
                format!(
                    "cannot {} observation {}: it {current}; {} works only on {} observations",
                    action.name(),
                    doc.id(),
                    action.name(),
                    action.from().join(" or ")
                ),
            ));
        }
        let (by, at) = action.stamp_fields();
        let mut edits = vec![FieldEdit::Set("status".into(), action.to().into())];
        if let Action::Resolve { resolution } = action {
            edits.push(FieldEdit::Set(
                "resolution".into(),
                resolution.clone().into(),
            ));
        }
        edits.push(FieldEdit::Set(by.into(), actor.into()));
        edits.push(FieldEdit::Set(
            at.into(),
            crate::time::stamp_millis(crate::time::now()).into(),
        ));
        let note = match action {
            Action::Reject { note: Some(n) } => format!("reject: {n}"),
            other => other.name().to_string(),
        };
        let entry = Entry {
            actor: actor.to_string(),
            op: "edit".into(),
            note: Some(note),
            ..Entry::default()
        };
        Ok(Some(Change {
            edits,
            body: None,
            entry,
        }))
    })
}
