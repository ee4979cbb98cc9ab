//! Creating documents from the board's templates.

use serde_json::Value;

use crate::board::Board;
use crate::doc::edit::FieldEdit;
use crate::doc::{Document, Region};
use crate::error::{Command, Error, Input, Kind, Result};
use crate::layout;
use crate::log::{self, Entry};
use crate::msg;
use crate::store::{self, Step, Write};

use super::owned::{self, How, Refusal};

/// Everything `tavern new` can say about a new document.
#[derive(Clone, Debug, Default)]
pub struct NewDoc {
    pub id: Option<String>,
    pub title: String,
    pub body: Option<String>,
    pub tags: Vec<String>,
    pub priority: Option<i64>,
    pub depends_on: Vec<String>,
    /// `--set key=value`, applied last.
    pub sets: Vec<(String, Value)>,
    /// Fields `sets` may hold although the board does not know them (the caller says so
    /// explicitly): any other unknown field is refused as a typo.
    pub extra: Vec<String>,
    /// When it is created (`created_at`); now if unset. A caller that derives another time
    /// from the creation (an observation's `expires_at`) passes the instant it used.
    pub at: Option<chrono::DateTime<chrono::Utc>>,
}

/// Fields that tavern owns: setting them by hand would break the file name or the rev.
const RESERVED: [&str; 2] = ["id", "rev"];

/// A body as it goes after the closing `---`: a blank line first, a newline last.
pub fn normalize_body(body: &str) -> String {
    let mut out = String::with_capacity(body.len() + 2);
    if !body.starts_with('\n') && !body.starts_with("\r\n") {
        out.push('\n');
    }
    out.push_str(body);
    if !out.ends_with('\n') {
        out.push('\n');
    }
    out
}

/// A template's body without the sections that hold nothing but blank lines (a heading
/// with no text under it before the next heading of its level or higher); what remains
/// keeps its bytes. A body left with nothing is empty.
pub fn drop_empty_sections(body: &str) -> String {
    let lines: Vec<&str> = body.split_inclusive('\n').collect();
    let level = |l: &str| {
        let t = l.trim_end();
        let n = t.chars().take_while(|c| *c == '#').count();
        (n > 0 && (t.len() == n || t[n..].starts_with(' '))).then_some(n)
    };
    let mut keep = vec![true; lines.len()];
    for i in 0..lines.len() {
        let Some(lv) = level(lines[i]) else { continue };
        let mut j = i + 1;
        let mut empty = true;
        while j < lines.len() {
            if let Some(l2) = level(lines[j]) {
                if l2 <= lv {
                    break;
                }
                // A subsection with text makes this one non-empty; an empty one does not.
            } else if !lines[j].trim().is_empty() {
                empty = false;
                break;
            }
            j += 1;
        }
        if empty {
            // The heading and the blank lines under it.
            for k in keep.iter_mut().take(j).skip(i) {
                *k = false;
            }
        }
    }
    let kept: String = lines
        .iter()
        .zip(&keep)
        .filter(|(_, k)| **k)
        .map(|(l, _)| *l)
        .collect();
    if kept.trim().is_empty() {
        return String::new();
    }
    format!("{}\n", kept.trim_end())
}

/// `tavern new`: a document as the user describes it. A field that only a command writes
/// (a task's claim or a status past the first, a question's answer or a human's decision)
/// is refused as `edit` refuses it ([`super::owned`]); the decision fields are logged as an
/// alert.
pub fn new_document(
    board: &Board,
    actor: &str,
    region: Region,
    spec: &NewDoc,
) -> Result<(Document, Entry)> {
    let path = match &spec.id {
        Some(id) => format!("{}/{id}.md", region.dir()),
        None => format!("the new {}", region.kind()),
    };
    let known = crate::schema::Known::of(board, region);
    for (key, _) in &spec.sets {
        if !RESERVED.contains(&key.as_str()) && crate::query::is_field_name(key) {
            crate::schema::check_field(&known, &path, key, &spec.extra, None)?;
        }
    }
    for (key, value) in &spec.sets {
        // A value the schema refuses is said as such first (`status=bogus`).
        crate::schema::check_value(board, region, &path, key, value)?;
    }
    let refusals = spec.sets.iter().filter_map(|(key, value)| {
        owned::check(
            board,
            region,
            false,
            key,
            owned::Write::Set(value),
            How::New,
        )
    });
    match owned::first(refusals) {
        Some(Refusal::Workflow(e)) => return Err(e),
        Some(Refusal::Decision(what)) => {
            let (path, id) = match &spec.id {
                Some(id) => (format!("{}/{id}.md", region.dir()), id.as_str()),
                None => (format!("{}/", region.dir()), "ID"),
            };
            return Err(super::decisions::refuse(board, actor, &path, id, &what));
        }
        None => {}
    }
    create(board, actor, region, spec)
}

/// Creates a document: also what `ask` and `post` build on, which set the fields the
/// workflow owns themselves.
pub fn create(
    board: &Board,
    actor: &str,
    region: Region,
    spec: &NewDoc,
) -> Result<(Document, Entry)> {
    if spec.title.trim().is_empty() {
        return Err(Error::request(
            Kind::Usage,
            msg!("a title is required: ", Input::Title, " \"…\""),
        ));
    }
    for (key, _) in &spec.sets {
        if RESERVED.contains(&key.as_str()) {
            return Err(Error::request(
                Kind::Usage,
                msg!(
                    Input::Set,
                    format!(" {key}=… is not allowed: tavern manages '{key}' (use "),
                    Input::Id,
                    " to choose an id)"
                ),
            ));
        }
    }
    if let Some(id) = &spec.id {
        crate::id::validate(id)?;
    }
    if region == Region::Tasks {
        for dep in &spec.depends_on {
            crate::id::validate(dep)?;
            if Some(dep) == spec.id.as_ref() {
                return Err(Error::input(format!("task {dep} cannot depend on itself")));
            }
            if !board.task_exists(dep) {
                return Err(Error::request(
                    Kind::NotFound,
                    msg!(
                        format!("task '{dep}' (named in "),
                        Input::DependsOn,
                        ") not found\nhint: `",
                        Command::List(Some(Region::Tasks)),
                        "` shows the tasks on the board"
                    ),
                ));
            }
        }
    }
    if region == Region::Tasks
        && !spec.depends_on.is_empty()
        && let Some(id) = &spec.id
    {
        super::graph::refuse_cycle(board, id, &spec.depends_on)?;
    }
    let template_path = crate::layout::template(&board.root, region.kind());
    let template = Document::parse(
        region,
        "template",
        board.template(region),
        board.config.yaml_limits(),
    )
    .map_err(|e| {
        Error::invalid_doc(
            board.rel(&template_path),
            format!("template is broken: {e}"),
        )
    })?;

    let now = crate::time::stamp_millis(spec.at.unwrap_or_else(crate::time::now));
    let mut edits = vec![
        FieldEdit::Set("title".into(), spec.title.clone().into()),
        FieldEdit::Set("created_at".into(), now.clone().into()),
        FieldEdit::Set("created_by".into(), actor.into()),
        FieldEdit::Set("updated_at".into(), now.into()),
        FieldEdit::Set("rev".into(), 1.into()),
    ];
    if region == Region::Questions {
        edits.push(FieldEdit::Set("asked_by".into(), actor.into()));
    }
    if !spec.tags.is_empty() {
        edits.push(FieldEdit::Set("tags".into(), spec.tags.clone().into()));
    }
    if let Some(p) = spec.priority {
        edits.push(FieldEdit::Set("priority".into(), p.into()));
    }
    if !spec.depends_on.is_empty() {
        edits.push(FieldEdit::Set(
            "depends_on".into(),
            spec.depends_on.clone().into(),
        ));
    }
    for (k, v) in &spec.sets {
        edits.push(FieldEdit::Set(k.clone(), v.clone()));
    }
    // An observation has a scope however it is made (`post` sets it, so does `new`).
    if region == Region::Observations
        && template.get("scope").is_none()
        && !spec.sets.iter().any(|(k, _)| k == "scope")
    {
        edits.push(FieldEdit::Set("scope".into(), "persistent".into()));
    }
    // Without a body, the template's, less the headings that would stay empty.
    // Every field written is checked against the schema before anything is written.
    let path = match &spec.id {
        Some(id) => format!("{}/{id}.md", region.dir()),
        None => format!("the new {}", region.kind()),
    };
    for e in &edits {
        if let FieldEdit::Set(k, v) = e {
            crate::schema::check_value(board, region, &path, k, v)?;
        }
    }
    let body = Some(match spec.body.as_deref() {
        Some(b) => normalize_body(b),
        None => drop_empty_sections(template.body()),
    });

    // Try the chosen id once; generated ids grow a character on every collision.
    let mut len = crate::id::INITIAL_RANDOM_LEN;
    for attempt in 0u64.. {
        let id = match &spec.id {
            Some(id) => id.clone(),
            None => crate::id::generate(board.config.prefix(region), len, attempt),
        };
        let mut all = vec![FieldEdit::Set("id".into(), id.clone().into())];
        all.extend(edits.iter().cloned());
        let mut doc = template
            .with_edits(&all, body.as_deref(), board.config.yaml_limits())
            .map_err(|e| Error::input(format!("the new document would not be readable: {e}")))?;
        doc.file_id = id.clone();
        super::check_size(board, &doc)?;
        let path = board.doc_path(region, &id);
        let entry = Entry {
            actor: actor.to_string(),
            op: "create".into(),
            doc: doc.rel_path(),
            rev: Some(1),
            diff: Some(log::diff("", &doc.raw)),
            ..Entry::default()
        };
        // Under the new id's lock: taken means a retry with a longer generated id.
        let (taken, entry) = store::change(board, &[layout::doc_lock(region, &id)], || {
            if std::fs::symlink_metadata(&path).is_ok() {
                return Ok((true, None));
            }
            let step = Step::create(doc.rel_path(), doc.raw.as_bytes().to_vec());
            Ok((
                false,
                Some(Write {
                    steps: vec![step],
                    entry,
                }),
            ))
        })?;
        if let Some(entry) = entry {
            return Ok((doc, entry));
        }
        if taken && spec.id.is_some() {
            return Err(Error::conflict(
                board.rel(&path),
                format!("a {} with id '{id}' already exists", region.kind()),
            ));
        }
        len += 1;
        if len > 24 {
            break;
        }
    }
    Err(Error::conflict(
        board.rel(&board.region_dir(region)),
        "could not find a free id",
    ))
}

#[cfg(test)]
mod tests {
    #[test]
    fn empty_sections_are_dropped() {
        use super::drop_empty_sections as d;
        assert_eq!(d("\n## Goal\n\n## Done when\n"), "");
        assert_eq!(
            d("\n## Goal\n\nShip it.\n\n## Done when\n\n"),
            "\n## Goal\n\nShip it.\n"
        );
        assert_eq!(
            d("\n# Plan\n\n## Empty\n\n## Steps\n\n1. one\n"),
            "\n# Plan\n\n## Steps\n\n1. one\n"
        );
        assert_eq!(d("No headings\n\n\nat all\n"), "No headings\n\n\nat all\n");
        assert_eq!(d("#hashtag is text\n"), "#hashtag is text\n");
    }
}
