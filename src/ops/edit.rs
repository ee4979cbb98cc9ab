//! `tavern edit`: field and body changes through the mutation protocol.

use serde_json::Value;

use crate::board::Board;
use crate::doc::Region;
use crate::doc::edit::FieldEdit;
use crate::error::{Error, Input, Kind, Result};
use crate::log::Entry;
use crate::msg;

use super::owned::{self, How, Refusal, Write};
use super::{Change, Outcome, decisions, mutate};

#[derive(Clone, Debug, Default)]
pub struct EditSpec {
    pub sets: Vec<(String, Value)>,
    pub unsets: Vec<String>,
    pub adds: Vec<(String, Value)>,
    pub removes: Vec<(String, Value)>,
    pub body: Option<String>,
    pub if_rev: Option<u64>,
    pub force: bool,
    /// Fields the edit may write although the board does not know them (the caller
    /// says so explicitly): any other unknown field is refused as a typo.
    pub extra: Vec<String>,
}

impl EditSpec {
    /// Whether it changes nothing: no field to set, unset, add to or remove from, no body.
    pub fn is_empty(&self) -> bool {
        self.sets.is_empty()
            && self.unsets.is_empty()
            && self.adds.is_empty()
            && self.removes.is_empty()
            && self.body.is_none()
    }
}

/// Fields only tavern writes: changing them by hand would break the file name or the rev.
const MANAGED: [&str; 2] = ["id", "rev"];

fn check_keys(spec: &EditSpec) -> Result<()> {
    for (key, _) in writes(spec) {
        if !crate::query::is_field_name(key) {
            return Err(Error::usage(format!(
                "'{key}' is not a field name (letters, digits, _ - .)"
            )));
        }
        if MANAGED.contains(&key) {
            return Err(Error::usage(format!(
                "'{key}' is managed by tavern and cannot be edited"
            )));
        }
    }
    Ok(())
}

/// Every field the edit writes, and how.
fn writes(spec: &EditSpec) -> impl Iterator<Item = (&str, Write<'_>)> {
    spec.sets
        .iter()
        .map(|(k, v)| (k.as_str(), Write::Set(v)))
        .chain(spec.unsets.iter().map(|k| (k.as_str(), Write::Unset)))
        .chain(
            spec.adds
                .iter()
                .chain(&spec.removes)
                .map(|(k, _)| (k.as_str(), Write::List)),
        )
}

/// A field of the edit that only a command may write (see [`owned`]), on a document of
/// `region` that is (or is not) a permission request: a forged decision first, since that
/// is logged whatever else is wrong.
fn owned_refusal(
    board: &Board,
    region: Region,
    permission: bool,
    spec: &EditSpec,
) -> Option<Refusal> {
    let how = How::Edit { force: spec.force };
    // The body of a permission request is what the human read before deciding.
    let body =
        (permission && spec.body.is_some()).then(|| Refusal::Decision("change the body".into()));
    owned::first(body.into_iter().chain(
        writes(spec).filter_map(|(key, w)| owned::check(board, region, permission, key, w, how)),
    ))
}

/// Refuses (exit 3, an alert in the log) an edit of question `id` that would write a
/// human's decision, for a front-end that does not edit questions at all: an attempt at a
/// decision is said as such there too. Ok when the edit would not.
pub fn refuse_decision(board: &Board, actor: &str, id: &str, spec: &EditSpec) -> Result<()> {
    let doc = crate::store::read_doc(board, Region::Questions, id)?;
    let permission = decisions::is_permission(&doc);
    match owned_refusal(board, Region::Questions, permission, spec) {
        Some(Refusal::Decision(what)) => {
            Err(decisions::refuse(board, actor, &doc.rel_path(), id, &what))
        }
        _ => Ok(()),
    }
}

/// The list value of a field after adding or removing items.
fn edited_list(
    current: Option<&Value>,
    key: &str,
    add: &[&Value],
    remove: &[&Value],
) -> Result<Value> {
    let mut items = match current {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(items)) => items.clone(),
        Some(other) => {
            return Err(Error::request(
                Kind::Invalid,
                msg!(
                    Input::AddRemove,
                    format!(
                        " need '{key}' to be a list, but it is {}",
                        crate::yaml::kind_name(other)
                    )
                ),
            ));
        }
    };
    for v in add {
        if !items.contains(v) {
            items.push((*v).clone());
        }
    }
    items.retain(|i| !remove.contains(&i));
    Ok(Value::Array(items))
}

pub fn edit(
    board: &Board,
    actor: &str,
    region: Region,
    id: &str,
    spec: &EditSpec,
) -> Result<Outcome> {
    check_keys(spec)?;
    let path = format!("{}/{id}.md", region.dir());
    // A task's workflow fields are refused before reading it; a question's need to know
    // whether it is a permission request, so they are checked once it is read, under its
    // lock.
    if region != Region::Questions
        && let Some(Refusal::Workflow(e)) = owned_refusal(board, region, false, spec)
    {
        return Err(e);
    }
    let mut forged = None;
    let known = crate::schema::Known::of(board, region);
    let outcome = mutate(board, region, id, spec.if_rev, |doc| {
        // A field the board does not know, and the document does not carry, is a typo.
        for (key, _) in writes(spec) {
            crate::schema::check_field(&known, &path, key, &spec.extra, Some(doc))?;
        }
        match owned_refusal(board, region, decisions::is_permission(doc), spec) {
            Some(Refusal::Workflow(e)) => return Err(e),
            Some(Refusal::Decision(what)) => {
                forged = Some(what);
                return Err(Error::conflict(doc.rel_path(), "a human's decision"));
            }
            None => {}
        }
        let mut edits = Vec::new();
        for (k, v) in &spec.sets {
            edits.push(FieldEdit::Set(k.clone(), v.clone()));
        }
        for k in &spec.unsets {
            if doc.get(k).is_some() {
                edits.push(FieldEdit::Unset(k.clone()));
            }
        }
        let mut list_keys: Vec<&String> = spec
            .adds
            .iter()
            .chain(&spec.removes)
            .map(|(k, _)| k)
            .collect();
        list_keys.dedup();
        let mut seen = std::collections::HashSet::new();
        for key in list_keys {
            if !seen.insert(key) {
                continue;
            }
            let add: Vec<&Value> = spec
                .adds
                .iter()
                .filter(|(k, _)| k == key)
                .map(|(_, v)| v)
                .collect();
            let remove: Vec<&Value> = spec
                .removes
                .iter()
                .filter(|(k, _)| k == key)
                .map(|(_, v)| v)
                .collect();
            let new = edited_list(doc.get(key), key, &add, &remove)?;
            edits.push(FieldEdit::Set(key.clone(), new));
        }
        // Leave out sets that change nothing, so a repeated edit is a no-op and logs nothing.
        edits.retain(|e| match e {
            FieldEdit::Set(k, v) => doc.get(k) != Some(v),
            FieldEdit::Unset(_) => true,
        });
        // What is written must fit the schema; --force skips the workflow, not this. Of a
        // list, only the items it did not hold yet are checked (one already dangling is
        // `check`'s to report).
        let path = doc.rel_path();
        for e in &edits {
            match e {
                FieldEdit::Set(k, v) => {
                    let v = match (v, doc.get(k)) {
                        (Value::Array(new), Some(Value::Array(old))) => {
                            Value::Array(new.iter().filter(|i| !old.contains(i)).cloned().collect())
                        }
                        _ => v.clone(),
                    };
                    crate::schema::check_value(board, region, &path, k, &v)?;
                }
                FieldEdit::Unset(k) => crate::schema::check_unset(region, &path, k)?,
            }
        }
        // A new body takes the document's line ending, so a CRLF file stays CRLF.
        let crlf = crate::doc::edit::line_ending(&doc.raw) == "\r\n";
        let body = spec
            .body
            .as_deref()
            .map(super::new::normalize_body)
            .map(|b| {
                if crlf {
                    b.replace("\r\n", "\n").replace('\n', "\r\n")
                } else {
                    b
                }
            })
            .filter(|b| b != doc.body());
        // A new depends_on must not close a dependency cycle.
        if region == Region::Tasks {
            for e in &edits {
                if let FieldEdit::Set(k, v) = e
                    && k == "depends_on"
                {
                    let deps: Vec<String> = match v {
                        Value::Array(items) => items
                            .iter()
                            .filter_map(|i| i.as_str().map(str::to_string))
                            .collect(),
                        Value::String(s) => vec![s.clone()],
                        _ => Vec::new(),
                    };
                    // Only new entries must exist; one already dangling is `check`'s to report.
                    let had = doc.list("depends_on");
                    for dep in deps.iter().filter(|d| !had.contains(d)) {
                        crate::id::validate(dep)?;
                        if !board.task_exists(dep) {
                            return Err(Error::NotFound {
                                what: format!("task '{dep}' (named in depends_on)"),
                                hint: crate::msg!(
                                    "`",
                                    crate::error::Command::List(Some(Region::Tasks)),
                                    "` shows the tasks on the board"
                                ),
                            });
                        }
                    }
                    super::graph::refuse_cycle(board, id, &deps)?;
                }
            }
        }
        if edits.is_empty() && body.is_none() {
            return Ok(None);
        }
        let entry = Entry {
            actor: actor.to_string(),
            op: "edit".into(),
            force: spec.force,
            ..Entry::default()
        };
        Ok(Some(Change { edits, body, entry }))
    });
    match forged {
        Some(what) => Err(decisions::refuse(board, actor, &path, id, &what)),
        None => outcome,
    }
}
