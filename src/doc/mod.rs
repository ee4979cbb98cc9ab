//! Documents: a markdown file with YAML frontmatter, kept as its exact text plus the
//! parsed fields. Edits go through [`edit`] so that only changed lines change.

pub mod decision;
pub mod edit;
pub mod fast;
pub mod split;

use serde_json::{Map, Value};

use crate::yaml::{self, YamlLimits};

/// The regions that hold documents with ids. A document's region is the directory it is in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Region {
    Tasks,
    Observations,
    Questions,
}

impl Region {
    pub const ALL: [Region; 3] = [Region::Tasks, Region::Observations, Region::Questions];

    /// The directory name under the board.
    pub fn dir(self) -> &'static str {
        match self {
            Region::Tasks => "tasks",
            Region::Observations => "observations",
            Region::Questions => "questions",
        }
    }

    /// The kind name used by `tavern new KIND` and by templates.
    pub fn kind(self) -> &'static str {
        match self {
            Region::Tasks => "task",
            Region::Observations => "observation",
            Region::Questions => "question",
        }
    }

    /// Accepts the directory name, the kind, and short forms (`task`, `tasks`, `obs`, `q`).
    pub fn parse(s: &str) -> Option<Region> {
        match s {
            "tasks" | "task" => Some(Region::Tasks),
            "observations" | "observation" | "obs" => Some(Region::Observations),
            "questions" | "question" | "q" => Some(Region::Questions),
            _ => None,
        }
    }
}

impl std::fmt::Display for Region {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.dir())
    }
}

/// A parsed document. `raw` is the file's exact text; `fields` is its frontmatter.
#[derive(Clone, Debug)]
pub struct Document {
    pub region: Region,
    /// The id taken from the file name (`<id>.md`).
    pub file_id: String,
    pub raw: String,
    pub fields: Map<String, Value>,
    /// Lives under `archive/<region>/` rather than in its region.
    pub archived: bool,
    /// A question's human decision as the log says it, once a reader derived it
    /// (`ops::decisions::annotate`); None for every other document.
    pub decision: Option<decision::Decision>,
    /// Byte offsets of the frontmatter inside `raw`.
    fm_start: usize,
    fm_end: usize,
    body_start: usize,
}

/// Why a document could not be parsed. `line` is a line of the file (1-based).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DocError {
    pub line: Option<u64>,
    pub message: String,
}

impl std::fmt::Display for DocError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.line {
            Some(line) => write!(f, "line {line}: {}", self.message),
            None => f.write_str(&self.message),
        }
    }
}

impl Document {
    /// Parses a document's text. It must start with a `---` frontmatter holding a mapping.
    pub fn parse(
        region: Region,
        file_id: &str,
        raw: String,
        limits: YamlLimits,
    ) -> Result<Document, DocError> {
        let parts = split::split(&raw).map_err(|e| DocError {
            line: Some(1),
            message: match e {
                split::SplitError::NoOpening => {
                    "no frontmatter: the first line must be exactly `---`".into()
                }
                split::SplitError::NotClosed => {
                    "frontmatter is not closed: no line is exactly `---` after the first".into()
                }
            },
        })?;
        let fields = match fast::parse(parts.frontmatter) {
            Some(fields) => fields,
            None => yaml::parse_mapping(parts.frontmatter, limits).map_err(|e| DocError {
                // The frontmatter starts on line 2 of the file.
                line: Some(e.line.max(1) + 1),
                message: e.message,
            })?,
        };
        let fm_start = parts.frontmatter_start();
        let fm_end = fm_start + parts.frontmatter.len();
        let body_start = fm_end + parts.close.len();
        Ok(Document {
            region,
            file_id: file_id.to_string(),
            archived: false,
            decision: None,
            raw,
            fields,
            fm_start,
            fm_end,
            body_start,
        })
    }

    /// A file read only to be queried: its frontmatter when it has a readable one, else no
    /// fields and the whole text as the body (a solution file may be any markdown).
    pub fn loose(region: Region, file_id: &str, raw: String, limits: YamlLimits) -> Document {
        if split::split(&raw).is_ok()
            && let Ok(doc) = Document::parse(region, file_id, raw.clone(), limits)
        {
            return doc;
        }
        Document {
            region,
            file_id: file_id.to_string(),
            archived: false,
            decision: None,
            raw,
            fields: Map::new(),
            fm_start: 0,
            fm_end: 0,
            body_start: 0,
        }
    }

    /// Path relative to the board, e.g. `tasks/task-7k2m.md`.
    pub fn rel_path(&self) -> String {
        let prefix = if self.archived { "archive/" } else { "" };
        format!("{prefix}{}/{}.md", self.region.dir(), self.file_id)
    }

    pub fn frontmatter(&self) -> &str {
        &self.raw[self.fm_start..self.fm_end]
    }

    pub fn body(&self) -> &str {
        &self.raw[self.body_start..]
    }

    pub fn get(&self, key: &str) -> Option<&Value> {
        self.fields.get(key)
    }

    /// A scalar field as text (numbers and booleans included), or None.
    pub fn text(&self, key: &str) -> Option<String> {
        match self.fields.get(key)? {
            Value::String(s) => Some(s.clone()),
            Value::Number(n) => Some(n.to_string()),
            Value::Bool(b) => Some(b.to_string()),
            _ => None,
        }
    }

    pub fn str(&self, key: &str) -> Option<&str> {
        self.fields.get(key).and_then(Value::as_str)
    }

    pub fn id(&self) -> &str {
        self.str("id").unwrap_or(&self.file_id)
    }

    pub fn title(&self) -> &str {
        self.str("title").unwrap_or("")
    }

    pub fn status(&self) -> Option<&str> {
        self.str("status")
    }

    pub fn rev(&self) -> u64 {
        self.fields.get("rev").and_then(Value::as_u64).unwrap_or(0)
    }

    /// Priority, 0 = critical … 4 = backlog; absent sorts after every set one. An
    /// observation's severity ranks it the same way (critical = 0 … info = 4).
    pub fn priority(&self) -> i64 {
        if let Some(p) = self.fields.get("priority").and_then(Value::as_i64) {
            return p;
        }
        match self.str("severity") {
            Some("critical") => 0,
            Some("high") => 1,
            Some("medium") => 2,
            Some("low") => 3,
            Some("info") => 4,
            _ => i64::MAX,
        }
    }

    pub fn created_at(&self) -> &str {
        self.str("created_at").unwrap_or("")
    }

    /// A field that holds a list of strings (a single string counts as a list of one).
    pub fn list(&self, key: &str) -> Vec<String> {
        list_value(self.fields.get(key))
    }

    /// The text after applying field edits (and optionally a new body), re-parsed so that
    /// an edit can never produce a document we cannot read back.
    pub fn with_edits(
        &self,
        edits: &[edit::FieldEdit],
        new_body: Option<&str>,
        limits: YamlLimits,
    ) -> Result<Document, DocError> {
        let eol = edit::line_ending(&self.raw);
        let fm = edit::apply(self.frontmatter(), edits, eol);
        let mut raw = String::with_capacity(self.raw.len() + 64);
        raw.push_str(&self.raw[..self.fm_start]);
        raw.push_str(&fm);
        raw.push_str(&self.raw[self.fm_end..self.body_start]);
        raw.push_str(new_body.unwrap_or(self.body()));
        Document::parse(self.region, &self.file_id, raw, limits)
    }
}

/// A field's value as a list of strings (see [`Document::list`]).
pub fn list_value(v: Option<&Value>) -> Vec<String> {
    match v {
        Some(Value::Array(items)) => items
            .iter()
            .filter_map(|v| match v {
                Value::String(s) => Some(s.clone()),
                Value::Number(n) => Some(n.to_string()),
                _ => None,
            })
            .collect(),
        Some(Value::String(s)) if !s.is_empty() => vec![s.clone()],
        _ => Vec::new(),
    }
}
