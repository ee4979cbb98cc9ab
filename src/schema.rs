//! What the fields of a document may hold (DESIGN §3, and the workflow of board.yaml for a
//! task's `status`). Every write checks the fields it writes against it, so a value that
//! `check`, a reader or a sort would trip over never reaches the disk: a priority of 9 or
//! `high`, an empty title, `tags` that is not a list, a `parent` that names nothing, a
//! status the workflow does not know. `--force` lets a write skip the workflow, never
//! this.
//!
//! Which fields a document may carry at all ([`Known`]): the schema's (those below, and
//! the ones commands write), the ones board.yaml declares under `fields:`, and the fields
//! of the region's template. A write of any other field is refused as a typo with a
//! suggestion ("did you mean 'priority'?") unless the request names it as extra or the
//! document already carries it; so is a query term on one (see `api`). Fields a document
//! carries are always kept, shown and queryable.

use serde_json::Value;

use crate::board::Board;
use crate::doc::Region;
use crate::error::{Error, Result};

/// The statuses an observation goes through (post, ack, resolve, reject; sweep expires).
pub const OBSERVATION_STATES: [&str; 5] =
    ["open", "acknowledged", "resolved", "rejected", "expired"];
/// How grave an observation is, least first.
pub const SEVERITIES: [&str; 5] = ["info", "low", "medium", "high", "critical"];
/// How long an observation holds: for the session that posted it, or until resolved.
pub const SCOPES: [&str; 2] = ["session", "persistent"];

/// The statuses of a question (answer) or a permission request (approve, deny).
pub const QUESTION_STATES: [&str; 4] = ["open", "answered", "approved", "denied"];

/// What one field may hold.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Rule {
    /// Text that is not empty.
    Title,
    Text,
    /// An RFC 3339 time or a date (not a relative time: it would move).
    Time,
    Integer(i64, i64),
    Number(f64, f64),
    OneOf(&'static [&'static str]),
    /// A task state of the board's workflow.
    TaskState,
    /// A list of text items.
    List,
    /// Text, or a list of text items.
    TextOrList,
    /// The id of a task on the board (or archived).
    Task,
    /// A list of task ids.
    Tasks,
    /// The id of any document on the board (or archived).
    Doc,
    /// A list of document ids.
    Docs,
}

/// The rule for `key` in `region`, if the schema names it.
fn rule(region: Region, key: &str) -> Option<Rule> {
    use Rule::*;
    let common = match key {
        "title" => Some(Title),
        "created_at" | "updated_at" => Some(Time),
        "created_by" => Some(Text),
        "tags" | "refs" => Some(List),
        "context" => Some(TextOrList),
        _ => None,
    };
    if common.is_some() {
        return common;
    }
    match (region, key) {
        (Region::Tasks, "status") => Some(TaskState),
        (Region::Tasks, "priority") => Some(Integer(0, 4)),
        (Region::Tasks, "depends_on") => Some(Tasks),
        (Region::Tasks, "parent") => Some(Task),
        (Region::Tasks, "needs") => Some(List),
        (Region::Tasks, "claimed_by" | "type") => Some(Text),
        (Region::Tasks, "claimed_at") => Some(Time),
        (Region::Observations, "status") => Some(OneOf(&OBSERVATION_STATES)),
        (Region::Observations, "severity") => Some(OneOf(&SEVERITIES)),
        (Region::Observations, "scope") => Some(OneOf(&SCOPES)),
        (Region::Observations, "confidence") => Some(Number(0.0, 1.0)),
        (Region::Observations, "about") => Some(Docs),
        (Region::Observations, "parent") => Some(Doc),
        (Region::Observations, "topic") => Some(Text),
        (Region::Observations, "expires_at") => Some(Time),
        (Region::Questions, "status") => Some(OneOf(&QUESTION_STATES)),
        (Region::Questions, "kind") => Some(OneOf(&["question", "permission"])),
        (Region::Questions, "blocks") => Some(Tasks),
        (Region::Questions, "options") => Some(List),
        (Region::Questions, "asked_by" | "answered_by" | "answer") => Some(Text),
        (Region::Questions, "answered_at") => Some(Time),
        _ => None,
    }
}

/// Every field of the schema for documents of `region`: those with a rule, and those only
/// tavern's commands write (ids, revs, who did what and when).
pub fn fields(region: Region) -> &'static [&'static str] {
    match region {
        Region::Tasks => &[
            "id",
            "rev",
            "title",
            "status",
            "created_at",
            "created_by",
            "updated_at",
            "tags",
            "context",
            "refs",
            "priority",
            "type",
            "claimed_by",
            "claimed_at",
            "depends_on",
            "parent",
            "needs",
            "completion_requires",
        ],
        Region::Observations => &[
            "id",
            "rev",
            "title",
            "status",
            "created_at",
            "created_by",
            "updated_at",
            "tags",
            "context",
            "refs",
            "topic",
            "severity",
            "confidence",
            "about",
            "parent",
            "scope",
            "expires_at",
            "acked_by",
            "acked_at",
            "resolution",
            "resolved_by",
            "resolved_at",
            "rejected_by",
            "rejected_at",
        ],
        Region::Questions => &[
            "id",
            "rev",
            "title",
            "status",
            "created_at",
            "created_by",
            "updated_at",
            "tags",
            "context",
            "refs",
            "asked_by",
            "blocks",
            "options",
            "answer",
            "answered_by",
            "answered_at",
            "kind",
            "capability",
            "resource",
            "reason",
            "decided_by",
            "decided_at",
        ],
    }
}

/// The fields documents of a region may carry: the schema's, the ones board.yaml declares
/// under `fields:` (`"*"`: any), and the fields of the region's template.
#[derive(Clone, Debug)]
pub struct Known {
    pub region: Region,
    /// Any field goes (`"*"` under `fields:`).
    pub any: bool,
    /// The schema's fields, then the declared ones, then the template's.
    pub names: Vec<String>,
}

impl Known {
    /// What `board` lets documents of `region` carry. Reads the region's template.
    pub fn of(board: &Board, region: Region) -> Known {
        let mut names: Vec<String> = fields(region).iter().map(|f| f.to_string()).collect();
        let declared = board.config.fields.of(region);
        let any = declared.iter().any(|f| f == "*");
        let template = crate::doc::Document::parse(
            region,
            "template",
            board.template(region),
            board.config.yaml_limits(),
        )
        .map(|d| d.fields.keys().cloned().collect::<Vec<_>>())
        .unwrap_or_default();
        for name in declared.iter().filter(|f| *f != "*").chain(&template) {
            if !names.contains(name) {
                names.push(name.clone());
            }
        }
        Known { region, any, names }
    }

    pub fn contains(&self, key: &str) -> bool {
        self.any || self.names.iter().any(|n| n == key)
    }

    /// The known field `key` was most likely meant to be, if one is close enough.
    pub fn suggest(&self, key: &str) -> Option<&str> {
        suggest(key, self.names.iter().map(String::as_str))
    }
}

/// The candidate closest to `key`, if one is close enough to be a typo of it (Jaro-Winkler
/// similarity of at least 0.8, as `priorty` to `priority` or `stauts` to `status`).
pub fn suggest<'a>(key: &str, candidates: impl Iterator<Item = &'a str>) -> Option<&'a str> {
    candidates
        .map(|c| (strsim::jaro_winkler(key, c), c))
        .filter(|(score, _)| *score >= 0.8)
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(_, c)| c)
}

/// ` did you mean 'priority'?`, or the known fields when none is close.
pub fn did_you_mean(suggestion: Option<&str>, known: &[String]) -> String {
    match suggestion {
        Some(s) => format!("; did you mean '{s}'?"),
        None => format!("; known fields: {}", known.join(", ")),
    }
}

/// Refuses (exit 2) a write of field `key` to a document of `region` at `path` (for the
/// message) that documents there may not carry ([`Known`]), unless `extra` names it or
/// `doc` (the document as it is) already carries it.
pub fn check_field(
    known: &Known,
    path: &str,
    key: &str,
    extra: &[String],
    doc: Option<&crate::doc::Document>,
) -> Result<()> {
    if known.contains(key)
        || extra.iter().any(|e| e == key)
        || doc.is_some_and(|d| d.get(key).is_some())
    {
        return Ok(());
    }
    Err(Error::request(
        crate::error::Kind::Usage,
        crate::msg!(
            format!(
                "{path}: unknown field '{key}' for {}{} (nothing written)\nhint: a field of your own is declared under fields: in board.yaml (or in the region's template); ",
                known.region.dir(),
                did_you_mean(known.suggest(key), &known.names),
            ),
            crate::error::Input::ExtraField,
            " writes it this once",
        ),
    ))
}

/// Refuses (exit 2, naming the term) a query with a term on a field that documents of
/// `regions` may not carry ([`Known`]) and that no document there (on the board or
/// archived) carries either: `stauts=pending` matches nothing, and says so as a typo. The
/// documents are read only for a field nothing declares.
pub fn check_query(board: &Board, query: &crate::query::Query, regions: &[Region]) -> Result<()> {
    match unknown_in_query(board, query, regions, true)? {
        None => Ok(()),
        Some(problem) => Err(Error::usage(format!(
            "{problem}\nhint: a query names the fields documents carry: the schema's, those declared under fields: in board.yaml or in a region's template, and any a document has"
        ))),
    }
}

/// What is wrong with the fields `query` names for documents of `regions`: the first term
/// on a field that they may not carry ([`Known`]) and, when `search` is set, that no
/// document there carries either (a knowledge source's `when:` is configuration: it
/// names declared fields, and is checked without reading the board).
pub fn unknown_in_query(
    board: &Board,
    query: &crate::query::Query,
    regions: &[Region],
    search: bool,
) -> Result<Option<String>> {
    let fields = query.fields();
    if fields.is_empty() {
        return Ok(None);
    }
    let known: Vec<Known> = regions.iter().map(|r| Known::of(board, *r)).collect();
    for (field, term) in fields {
        if known.iter().any(|k| k.contains(field)) || (search && carried(board, regions, field)?) {
            continue;
        }
        let mut names: Vec<&str> = Vec::new();
        for n in known.iter().flat_map(|k| &k.names) {
            if !names.contains(&n.as_str()) {
                names.push(n);
            }
        }
        let why = match suggest(field, names.iter().copied()) {
            Some(s) => format!("; did you mean '{s}'?"),
            None if !search => "; it is not declared under fields: in board.yaml".to_string(),
            None if regions.len() == 1 => format!("; no {} has it", regions[0].kind()),
            None => "; no document has it".to_string(),
        };
        return Ok(Some(format!(
            "unknown field '{field}' in query term '{term}'{why}"
        )));
    }
    Ok(None)
}

/// Does any document of `regions`, on the board or archived, carry `field`?
fn carried(board: &Board, regions: &[Region], field: &str) -> Result<bool> {
    for archived in [false, true] {
        let found = crate::scan::scan_with_needles(board, regions, archived, &[], |d| {
            d.get(field).is_some()
        })?;
        if !found.docs.is_empty() {
            return Ok(true);
        }
    }
    Ok(false)
}

/// Fields every document of the region must keep: `--unset` may not remove them.
fn required(region: Region, key: &str) -> bool {
    key == "title" || (key == "status" && region == Region::Tasks)
}

fn show(v: &Value) -> String {
    crate::yaml::render_inline(v)
}

fn invalid(path: &str, key: &str, what: &str, v: &Value) -> Error {
    Error::input(format!(
        "{path}: {key} must be {what}, not {}; nothing written",
        show(v)
    ))
}

fn is_time(s: &str) -> bool {
    !s.starts_with(['-', '+']) && crate::time::parse_time(s, crate::time::now()).is_some()
}

/// Whether a document `id` exists (a task, with `tasks_only`), on the board or archived:
/// what a reference may name.
pub type Exists<'a> = dyn Fn(&str, bool) -> bool + 'a;

/// Is there a file for the document `id` (a task, with `tasks_only`), on the board or
/// archived?
pub fn exists(board: &Board, id: &str, tasks_only: bool) -> bool {
    if tasks_only {
        return board.task_exists(id);
    }
    crate::id::validate(id).is_ok()
        && Region::ALL.iter().any(|r| {
            std::fs::symlink_metadata(board.doc_path(*r, id)).is_ok()
                || std::fs::symlink_metadata(board.archive_dir(*r).join(format!("{id}.md"))).is_ok()
        })
}

fn reference(
    exists: &Exists<'_>,
    path: &str,
    key: &str,
    v: &Value,
    tasks_only: bool,
) -> Result<()> {
    let kind = if tasks_only { "task" } else { "document" };
    let Value::String(id) = v else {
        return Err(invalid(path, key, &format!("a {kind} id"), v));
    };
    crate::id::validate(id)?;
    if !exists(id, tasks_only) {
        return Err(Error::NotFound {
            what: format!("{kind} '{id}' (named in {key} of {path})"),
            hint: if tasks_only {
                crate::msg!(
                    "`",
                    crate::error::Command::List(Some(Region::Tasks)),
                    "` shows the tasks on the board"
                )
            } else {
                crate::msg!(
                    "`",
                    crate::error::Command::List(None),
                    "` shows the documents on the board"
                )
            },
        });
    }
    Ok(())
}

/// Checks the value a write gives `key` of a document of `region` at `path` (for the
/// message). `null` clears an optional field. References must name a document that
/// exists: exit 4 when it does not; any other mismatch is invalid input (exit 6).
pub fn check_value(board: &Board, region: Region, path: &str, key: &str, v: &Value) -> Result<()> {
    check_value_with(board, region, path, key, v, &|id, tasks_only| {
        exists(board, id, tasks_only)
    })
}

/// [`check_value`], with `exists` saying which documents a reference may name.
fn check_value_with(
    board: &Board,
    region: Region,
    path: &str,
    key: &str,
    v: &Value,
    exists: &Exists<'_>,
) -> Result<()> {
    let Some(rule) = rule(region, key) else {
        return Ok(());
    };
    if v.is_null() {
        return if required(region, key) {
            Err(invalid(path, key, "set (it cannot be empty)", v))
        } else {
            Ok(())
        };
    }
    let list_of_text = |v: &Value| matches!(v, Value::Array(items) if items.iter().all(|i| matches!(i, Value::String(s) if !s.is_empty())));
    match rule {
        Rule::Title => match v {
            Value::String(s) if !s.trim().is_empty() => Ok(()),
            _ => Err(invalid(path, key, "text that is not empty", v)),
        },
        Rule::Text => match v {
            Value::String(_) => Ok(()),
            _ => Err(invalid(path, key, "text", v)),
        },
        Rule::Time => match v {
            Value::String(s) if is_time(s) => Ok(()),
            _ => Err(invalid(
                path,
                key,
                "a time like 2026-11-22T10:04:05Z or a date like 2026-11-22",
                v,
            )),
        },
        Rule::Integer(lo, hi) => match v.as_i64() {
            Some(n) if v.is_i64() && (lo..=hi).contains(&n) => Ok(()),
            _ if key == "priority" => Err(invalid(
                path,
                key,
                &format!("a whole number from {lo} (critical) to {hi} (backlog)"),
                v,
            )),
            _ => Err(invalid(
                path,
                key,
                &format!("a whole number from {lo} to {hi}"),
                v,
            )),
        },
        Rule::Number(lo, hi) => match v.as_f64() {
            Some(n) if (lo..=hi).contains(&n) => Ok(()),
            _ => Err(invalid(
                path,
                key,
                &format!("a number from {lo} to {hi}"),
                v,
            )),
        },
        Rule::OneOf(allowed) => match v {
            Value::String(s) if allowed.contains(&s.as_str()) => Ok(()),
            _ => Err(invalid(
                path,
                key,
                &format!("one of {}", allowed.join(", ")),
                v,
            )),
        },
        Rule::TaskState => {
            let states = &board.config.workflow.states;
            match v {
                Value::String(s) if states.contains(s) => Ok(()),
                _ => Err(invalid(
                    path,
                    key,
                    &format!("a state of the workflow ({})", states.join(", ")),
                    v,
                )),
            }
        }
        Rule::List => {
            if list_of_text(v) {
                Ok(())
            } else {
                Err(invalid(path, key, "a list of text, like [a, b]", v))
            }
        }
        Rule::TextOrList => {
            if matches!(v, Value::String(_)) || list_of_text(v) {
                Ok(())
            } else {
                Err(invalid(path, key, "text or a list of text", v))
            }
        }
        Rule::Task | Rule::Doc => reference(exists, path, key, v, rule == Rule::Task),
        Rule::Tasks | Rule::Docs => {
            // One id stands for a list of one, as readers take it.
            let items = match v {
                Value::Array(items) => items.as_slice(),
                Value::String(_) => std::slice::from_ref(v),
                _ => return Err(invalid(path, key, "a list of ids, like [task-7k2m]", v)),
            };
            for item in items {
                reference(exists, path, key, item, rule == Rule::Tasks)?;
            }
            Ok(())
        }
    }
}

/// What is wrong with the value of `key` in a document of `region` at `path` as it is on
/// disk, in `check`'s words (`priority must be a whole number from 0 (critical) to 4
/// (backlog), not high`); None when the schema takes it. A reference to a document that
/// does not exist is said as such.
pub fn value_problem(
    board: &Board,
    region: Region,
    path: &str,
    key: &str,
    v: &Value,
) -> Option<String> {
    value_problem_with(board, region, path, key, v, &|id, tasks_only| {
        exists(board, id, tasks_only)
    })
}

/// [`value_problem`], with `exists` saying which documents a reference may name (a
/// reader that has listed the board knows without a look at the disk).
pub fn value_problem_with(
    board: &Board,
    region: Region,
    path: &str,
    key: &str,
    v: &Value,
    exists: &Exists<'_>,
) -> Option<String> {
    match check_value_with(board, region, path, key, v, exists) {
        Ok(()) => None,
        Err(Error::NotFound { .. }) => {
            let (tasks_only, ids) = references(region, key, v)?;
            let missing = ids.into_iter().find(|id| !exists(id, tasks_only))?;
            Some(missing_reference(key, missing, tasks_only))
        }
        Err(e) => {
            let message = e.to_string();
            let message = message
                .strip_prefix(&format!("{path}: "))
                .unwrap_or(&message);
            Some(message.trim_end_matches("; nothing written").to_string())
        }
    }
}

/// What a value of `key` names when the schema takes it for references: whether they
/// must be tasks, and the ids (the strings of a list).
pub fn references<'v>(region: Region, key: &str, v: &'v Value) -> Option<(bool, Vec<&'v str>)> {
    let tasks_only = match rule(region, key)? {
        Rule::Task | Rule::Tasks => true,
        Rule::Doc | Rule::Docs => false,
        _ => return None,
    };
    let ids = match v {
        Value::String(s) => vec![s.as_str()],
        Value::Array(items) => items.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    };
    Some((tasks_only, ids))
}

/// The problem with a reference to `missing`, which is not a document (a task, with
/// `tasks_only`) on the board or archived.
pub fn missing_reference(key: &str, missing: &str, tasks_only: bool) -> String {
    format!(
        "{key} names '{missing}', which is not a {} on this board",
        if tasks_only { "task" } else { "document" }
    )
}

/// Checks that `key` may be removed from a document of `region`.
pub fn check_unset(region: Region, path: &str, key: &str) -> Result<()> {
    if required(region, key) {
        return Err(Error::input(format!(
            "{path}: {key} cannot be removed: every {} has one; nothing written",
            region.kind()
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_field_the_schema_names_has_a_rule_per_region() {
        assert_eq!(rule(Region::Tasks, "priority"), Some(Rule::Integer(0, 4)));
        assert_eq!(rule(Region::Observations, "priority"), None);
        assert_eq!(rule(Region::Questions, "title"), Some(Rule::Title));
        assert_eq!(rule(Region::Tasks, "whatever"), None);
        assert!(required(Region::Tasks, "status") && !required(Region::Questions, "status"));
    }
}
