//! Knowledge sources (DESIGN §9): `control/sources/<name>.md`. The frontmatter says what a
//! source reacts to (`watch`, `on`, `when`) and how it runs (`run`, `priority`, `cooldown`,
//! `max_parallel`, `timeout`); the body is the prompt, given to the command on stdin.
//!
//! A source file is validated whole: every problem is reported, each naming its field and
//! what the field expects, so one `tavern sources check` shows everything there is to fix.
//! [`parse`] is pure; [`load`], [`load_all`] and [`last_activations`] read the board.
//!
//! `run:` is a shell command, so it gets more care than the other fields: only `{id}`,
//! `{path}` and `{region}` are substituted, each value becomes exactly one shell word
//! (quoted when it is not plainly safe), and a placeholder where quoting would not protect
//! it (inside quotes, backquotes, `${…}`, `$((…))` or a here-document) is refused.

use std::collections::HashMap;
use std::io::BufRead;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{Map, Value};

use crate::board::Board;
use crate::check::Problem;
use crate::doc::split;
use crate::error::Error;
use crate::log::Entry;
use crate::query::Query;

/// The fields a source file may have; any other key is most likely a typo.
pub const FIELDS: [&str; 10] = [
    "name",
    "watch",
    "on",
    "when",
    "run",
    "priority",
    "cooldown",
    "max_parallel",
    "timeout",
    "description",
];

/// Where `watch:` may point: the places whose changes watch mode notices.
pub const WATCHABLE: [&str; 7] = [
    "tasks",
    "observations",
    "questions",
    "solutions",
    "control/sources",
    "control/agents",
    "control/PAUSE",
];

/// `watch:` when the field is absent: the three document regions.
pub const DEFAULT_WATCH: [&str; 3] = ["tasks", "observations", "questions"];

/// The only placeholders `run:` may hold.
pub const PLACEHOLDERS: [&str; 3] = ["id", "path", "region"];

/// `timeout:` when the field is absent.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30 * 60);

const BAD_FILE_NAME: &str = "file name is not a valid id ([a-z0-9][a-z0-9._-]{0,63}.md)";

/// What a change can be, for `on:`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum On {
    Created,
    Changed,
    Deleted,
    /// `transition:STATE`: a task entered STATE.
    Transition(String),
}

impl On {
    /// The event name as written in `on:` and given to children as TAVERN_EVENT.
    pub fn name(&self) -> String {
        match self {
            On::Created => "created".into(),
            On::Changed => "changed".into(),
            On::Deleted => "deleted".into(),
            On::Transition(s) => format!("transition:{s}"),
        }
    }

    /// Reads one `on:` entry. `states` are the workflow's task states, the only ones a
    /// `transition:` can name.
    pub fn parse(text: &str, states: &[String]) -> Result<On, String> {
        match text {
            "created" => Ok(On::Created),
            "changed" => Ok(On::Changed),
            "deleted" => Ok(On::Deleted),
            _ => match text.strip_prefix("transition:") {
                Some(state) if states.iter().any(|s| s == state) => {
                    Ok(On::Transition(state.to_string()))
                }
                Some(state) => Err(format!(
                    "'{}': '{}' is not a state of the workflow ({})",
                    shown(text),
                    shown(state),
                    states.join(", ")
                )),
                None => Err(format!(
                    "'{}' is not an event; expected created, changed, deleted or transition:STATE",
                    shown(text)
                )),
            },
        }
    }
}

/// A registered knowledge source, validated.
#[derive(Clone, Debug)]
pub struct Source {
    pub name: String,
    /// Board-relative path of its file: `control/sources/<name>.md`.
    pub path: String,
    /// The `watch:` entries as written (regions, or globs under the board).
    pub watch: Vec<String>,
    pub on: Vec<On>,
    pub when: Query,
    /// The `when:` text as written (empty when absent).
    pub when_text: String,
    pub run: String,
    /// Higher runs first.
    pub priority: i64,
    pub cooldown: Duration,
    pub max_parallel: usize,
    pub timeout: Duration,
    /// The body: given to the command on stdin.
    pub prompt: String,
    /// `description:`, free text for humans (`tavern sources list --json`).
    pub description: Option<String>,
}

impl Source {
    /// Does `rel` (a board-relative path like `tasks/task-7k2m.md`) fall under `watch:`?
    pub fn watches(&self, rel: &str) -> bool {
        self.watch.iter().any(|p| pattern_matches(p, rel))
    }

    /// The first of `events` that `on:` listens for.
    pub fn listens<'a>(&self, events: &'a [On]) -> Option<&'a On> {
        events.iter().find(|e| self.on.contains(e))
    }

    /// The command line with `{id}`, `{path}` and `{region}` substituted, each value as
    /// exactly one shell word (see [`shell_word`]).
    pub fn command(&self, id: &str, path: &str, region: &str) -> String {
        let mut out = String::with_capacity(self.run.len() + id.len() + path.len());
        let mut done = 0;
        for p in scan_run(&self.run).placeholders {
            let value = match p.word {
                "id" => id,
                "path" => path,
                "region" => region,
                _ => continue,
            };
            out.push_str(&self.run[done..p.start]);
            out.push_str(&shell_word(value));
            done = p.end;
        }
        out.push_str(&self.run[done..]);
        out
    }
}

/// A value as one word for `sh`: as is when made only of `[A-Za-z0-9._/-]` and not
/// starting with `-`, otherwise single-quoted (a `'` inside becomes `'"'"'`), so no value
/// can add shell syntax to a command line.
pub fn shell_word(value: &str) -> String {
    let plain = !value.is_empty()
        && !value.starts_with('-')
        && value
            .bytes()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'.' | b'_' | b'/' | b'-'));
    if plain {
        value.to_string()
    } else {
        format!("'{}'", value.replace('\'', r#"'"'"'"#))
    }
}

/// The directory of source files.
pub fn dir(board: &Board) -> PathBuf {
    crate::layout::sources_dir(&board.root)
}

/// The board-relative path of source `name`, as problems and `Source::path` name it.
pub fn rel_path(name: &str) -> String {
    crate::layout::source_rel(name)
}

/// Reads and validates source `name`; the problems are as [`parse`] reports them.
pub fn load(board: &Board, name: &str) -> Result<Source, Vec<String>> {
    // Checked before any path is built from it: `../x` must not reach the file system.
    if crate::id::validate(name).is_err() {
        return Err(vec![BAD_FILE_NAME.into()]);
    }
    load_file(board, name, &dir(board).join(format!("{name}.md")))
}

fn load_file(board: &Board, stem: &str, path: &Path) -> Result<Source, Vec<String>> {
    let text = crate::store::read_text(path, board.config.limits.max_doc_bytes)
        .map_err(|e| vec![error_problem(&e)])?;
    parse(board, stem, &text)
}

/// The problem part of an error about a source file (no path prefix: the caller has it).
fn error_problem(e: &Error) -> String {
    match e {
        Error::InvalidDoc { problem, .. } => problem.clone(),
        Error::NotFound { .. } => "does not exist".into(),
        other => other.to_string(),
    }
}

/// Every valid source of the board, sorted by name, and one problem for each thing wrong
/// with the others. No `control/sources/` directory is no sources and no problems.
pub fn load_all(board: &Board) -> (Vec<Source>, Vec<Problem>) {
    let dir = dir(board);
    let mut sources = Vec::new();
    let mut problems = Vec::new();
    let entries = match std::fs::read_dir(&dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return (sources, problems),
        Err(e) => {
            problems.push(Problem {
                path: "control/sources".into(),
                problem: format!("cannot be listed: {e}"),
            });
            return (sources, problems);
        }
    };
    let mut files: Vec<(String, PathBuf)> = Vec::new();
    for entry in entries.flatten() {
        let name = entry.file_name();
        let lossy = name.to_string_lossy();
        // Dot files are temp files and editors' swap files; only `*.md` are sources.
        let Some(stem) = lossy
            .strip_suffix(".md")
            .filter(|_| !lossy.starts_with('.'))
        else {
            continue;
        };
        if name.to_str().is_none() {
            problems.push(Problem {
                path: rel_path(stem),
                problem: "file name is not valid UTF-8".into(),
            });
            continue;
        }
        files.push((stem.to_string(), entry.path()));
    }
    files.sort();
    for (stem, path) in files {
        match load_file(board, &stem, &path) {
            Ok(source) => sources.push(source),
            Err(list) => problems.extend(list.into_iter().map(|problem| Problem {
                path: rel_path(&stem),
                problem,
            })),
        }
    }
    (sources, problems)
}

/// Parses and validates the text of source file `<stem>.md`. Every problem is reported,
/// each naming its field and what the field expects.
pub fn parse(board: &Board, stem: &str, text: &str) -> Result<Source, Vec<String>> {
    let mut problems = Vec::new();
    if crate::id::validate(stem).is_err() {
        problems.push(BAD_FILE_NAME.to_string());
    }
    let parts = match split::split(text) {
        Ok(parts) => parts,
        Err(e) => {
            problems.push(split_problem(e).into());
            return Err(problems);
        }
    };
    let map = match crate::yaml::parse_mapping(parts.frontmatter, board.config.yaml_limits()) {
        Ok(map) => map,
        Err(e) => {
            // The frontmatter starts on line 2 of the file.
            problems.push(format!("line {}: {}", e.line.max(1) + 1, e.message));
            return Err(problems);
        }
    };
    let mut f = Fields {
        map: &map,
        problems,
    };
    f.unknown_keys();
    f.read("name", (), |v| read_name(v, stem));
    let watch = f.read("watch", default_watch(), read_watch);
    let on = f.read("on", vec![On::Created, On::Changed], |v| {
        read_on(v, &board.config.workflow.states)
    });
    let (when, when_text) = f.read("when", (Query::default(), String::new()), read_when);
    let run = f.required("run", read_run);
    let priority = f.read("priority", 0, read_integer);
    let cooldown = f.read("cooldown", Duration::ZERO, read_duration);
    let max_parallel = f.read("max_parallel", 1, read_max_parallel);
    let timeout = f.read("timeout", DEFAULT_TIMEOUT, read_timeout);
    let description = f.read("description", None, read_description);
    if !f.problems.is_empty() {
        return Err(f.problems);
    }
    Ok(Source {
        name: stem.to_string(),
        path: rel_path(stem),
        watch,
        on,
        when,
        when_text,
        run: run.unwrap_or_default(),
        priority,
        cooldown,
        max_parallel,
        timeout,
        prompt: parts.body.to_string(),
        description,
    })
}

fn split_problem(e: split::SplitError) -> &'static str {
    match e {
        split::SplitError::NoOpening => {
            "line 1: no frontmatter: the first line must be exactly `---`"
        }
        split::SplitError::NotClosed => {
            "line 1: frontmatter is not closed: no line is exactly `---` after the first"
        }
    }
}

fn default_watch() -> Vec<String> {
    DEFAULT_WATCH.iter().map(|s| s.to_string()).collect()
}

/// The frontmatter being read, and the problems found so far: one pass reports them all.
struct Fields<'a> {
    map: &'a Map<String, Value>,
    problems: Vec<String>,
}

impl Fields<'_> {
    fn unknown_keys(&mut self) {
        for key in self.map.keys() {
            if !FIELDS.contains(&key.as_str()) {
                self.problems.push(format!(
                    "unknown field '{}'; known fields: {}",
                    shown(key),
                    FIELDS.join(", ")
                ));
            }
        }
    }

    /// A field that is absent (or empty, `key:` with no value) is `default`.
    fn get(&self, key: &str) -> Option<&Value> {
        self.map.get(key).filter(|v| !v.is_null())
    }

    /// Reads `key` with `read`, recording its problems (prefixed by the field name).
    fn read<T>(
        &mut self,
        key: &str,
        default: T,
        read: impl FnOnce(&Value) -> Result<T, Vec<String>>,
    ) -> T {
        let Some(value) = self.get(key) else {
            return default;
        };
        match read(value) {
            Ok(t) => t,
            Err(list) => {
                self.problems
                    .extend(list.into_iter().map(|p| format!("{key}: {p}")));
                default
            }
        }
    }

    fn required<T>(
        &mut self,
        key: &str,
        read: impl FnOnce(&Value) -> Result<T, Vec<String>>,
    ) -> Option<T> {
        if self.get(key).is_none() {
            self.problems.push(format!(
                "{key}: missing; expected the command to start (run with sh -c in the project root), e.g. run: ./agents/x.sh {{id}}"
            ));
            return None;
        }
        self.read(key, None, |v| read(v).map(Some))
    }
}

/// A value as a message shows it: strings quoted, numbers as written, the rest by kind.
fn found(v: &Value) -> String {
    match v {
        Value::String(s) => format!("'{}'", shown(s)),
        Value::Number(n) => n.to_string(),
        Value::Bool(b) => b.to_string(),
        other => crate::yaml::kind_name(other).to_string(),
    }
}

/// Text from the file as a message shows it: control characters escaped (a hostile file
/// must not drive the terminal) and at most 60 characters.
fn shown(s: &str) -> String {
    let mut out = String::new();
    for c in s.chars().take(60) {
        if c.is_control() {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    if s.chars().nth(60).is_some() {
        out.push('…');
    }
    out
}

fn one(problem: String) -> Vec<String> {
    vec![problem]
}

/// A string, or a list of strings.
fn strings(v: &Value, what: &str) -> Result<Vec<String>, Vec<String>> {
    let item = |v: &Value| match v {
        Value::String(s) => Ok(s.clone()),
        other => Err(format!("expected {what}, found {}", found(other))),
    };
    match v {
        Value::Array(items) => {
            let (ok, bad): (Vec<_>, Vec<_>) = items.iter().map(item).partition(|r| r.is_ok());
            if bad.is_empty() {
                Ok(ok.into_iter().flatten().collect())
            } else {
                Err(bad.into_iter().filter_map(|r| r.err()).collect())
            }
        }
        other => item(other).map(|s| vec![s]).map_err(one),
    }
}

fn read_name(v: &Value, stem: &str) -> Result<(), Vec<String>> {
    match v {
        Value::String(s) if s == stem => Ok(()),
        Value::String(s) => Err(one(format!(
            "'{}' does not match the file name; expected '{}' (or leave name out)",
            shown(s),
            shown(stem)
        ))),
        other => Err(one(format!(
            "expected '{}' (the file name), found {}",
            shown(stem),
            found(other)
        ))),
    }
}

fn read_watch(v: &Value) -> Result<Vec<String>, Vec<String>> {
    let patterns = strings(
        v,
        "a path under the board like tasks or solutions/*/design.md",
    )?;
    if patterns.is_empty() {
        return Err(one(
            "empty; expected at least one path under the board (leave watch out for tasks, observations, questions)".into(),
        ));
    }
    let problems: Vec<String> = patterns.iter().filter_map(|p| pattern_problem(p)).collect();
    if problems.is_empty() {
        Ok(patterns)
    } else {
        Err(problems)
    }
}

fn read_on(v: &Value, states: &[String]) -> Result<Vec<On>, Vec<String>> {
    // `[transition: review]` (with a space) is a mapping in YAML: say what was meant.
    if let Value::Array(items) = v
        && items
            .iter()
            .any(|i| i.as_object().is_some_and(|m| m.contains_key("transition")))
    {
        return Err(one(
            "write transition:STATE without a space after the colon (with one, YAML reads a mapping)"
                .into(),
        ));
    }
    let names = strings(
        v,
        "an event (created, changed, deleted or transition:STATE)",
    )?;
    if names.is_empty() {
        return Err(one(
            "empty; expected at least one of created, changed, deleted, transition:STATE (leave on out for created, changed)".into(),
        ));
    }
    let (ok, bad): (Vec<_>, Vec<_>) = names
        .iter()
        .map(|n| On::parse(n, states))
        .partition(|r| r.is_ok());
    if bad.is_empty() {
        // `[created, created]` is `[created]`.
        let mut events: Vec<On> = Vec::new();
        for event in ok.into_iter().flatten() {
            if !events.contains(&event) {
                events.push(event);
            }
        }
        Ok(events)
    } else {
        Err(bad.into_iter().filter_map(|r| r.err()).collect())
    }
}

fn read_when(v: &Value) -> Result<(Query, String), Vec<String>> {
    let Value::String(text) = v else {
        return Err(one(format!(
            "expected a query like status=pending no:design, found {}",
            found(v)
        )));
    };
    match Query::parse(&[text.as_str()]) {
        Ok(q) => Ok((q, text.clone())),
        Err(e) => {
            let message = e.to_string();
            Err(one(shown_line(message.lines().next().unwrap_or(""))))
        }
    }
}

/// A whole line of a message built from file text: control characters escaped, no cut.
fn shown_line(s: &str) -> String {
    s.chars()
        .flat_map(|c| {
            let escaped: Vec<char> = if c.is_control() {
                c.escape_default().collect()
            } else {
                vec![c]
            };
            escaped
        })
        .collect()
}

fn read_run(v: &Value) -> Result<String, Vec<String>> {
    let Value::String(run) = v else {
        return Err(one(format!(
            "expected the command to start (a string, run with sh -c in the project root), found {}",
            found(v)
        )));
    };
    if run.trim().is_empty() {
        return Err(one(
            "empty; expected the command to start (run with sh -c in the project root)".into(),
        ));
    }
    let scan = scan_run(run);
    let mut problems: Vec<String> = Vec::new();
    for p in &scan.placeholders {
        let problem = if !PLACEHOLDERS.contains(&p.word) {
            format!(
                "{{{}}} is not substituted: only {{id}} {{path}} {{region}} are substituted; other values reach the command through the environment (TAVERN_DOC, TAVERN_ID, …) or stdin",
                p.word
            )
        } else if let Some(context) = p.unsafe_in {
            format!(
                "{{{}}} is inside {context}, where quoting cannot keep its value one word; write it outside any quotes: tavern quotes the value itself",
                p.word
            )
        } else {
            continue;
        };
        if !problems.contains(&problem) {
            problems.push(problem);
        }
    }
    if let Some(open) = scan.unclosed {
        problems.push(format!(
            "{} is never closed, so sh would refuse the command",
            open.opener()
        ));
    }
    if problems.is_empty() {
        Ok(run.clone())
    } else {
        Err(problems)
    }
}

fn read_integer(v: &Value) -> Result<i64, Vec<String>> {
    v.as_i64().ok_or_else(|| {
        one(format!(
            "expected an integer (higher runs first), found {}",
            found(v)
        ))
    })
}

fn read_max_parallel(v: &Value) -> Result<usize, Vec<String>> {
    v.as_u64()
        .filter(|n| *n >= 1)
        .and_then(|n| usize::try_from(n).ok())
        .ok_or_else(|| {
            one(format!(
                "expected an integer >= 1 (how many runs of this source at once), found {}",
                found(v)
            ))
        })
}

/// The longest `cooldown` or `timeout`: longer is a typo, and would overflow the clock.
const MAX_DURATION: Duration = Duration::from_secs(366 * 24 * 3600);

fn read_duration(v: &Value) -> Result<Duration, Vec<String>> {
    let duration = match v {
        Value::String(s) => crate::time::parse_duration(s).and_then(|d| d.to_std().ok()),
        _ => None,
    };
    match duration {
        Some(d) if d > MAX_DURATION => Err(one(format!("{} is too long: at most 366d", found(v)))),
        Some(d) => Ok(d),
        None => Err(one(format!(
            "expected a duration like 30s, 5m or 2h, found {}",
            found(v)
        ))),
    }
}

fn read_timeout(v: &Value) -> Result<Duration, Vec<String>> {
    match read_duration(v)? {
        d if d.is_zero() => Err(one(format!(
            "expected a duration above zero like 15m, found {}",
            found(v)
        ))),
        d => Ok(d),
    }
}

fn read_description(v: &Value) -> Result<Option<String>, Vec<String>> {
    match v {
        Value::String(s) => Ok(Some(s.clone())),
        other => Err(one(format!("expected a string, found {}", found(other)))),
    }
}

// ---------------------------------------------------------------------------------------
// watch: patterns

/// The segments of a pattern; one trailing `/` (`tasks/`) is allowed and ignored.
fn segments(pattern: &str) -> Vec<&str> {
    pattern
        .strip_suffix('/')
        .unwrap_or(pattern)
        .split('/')
        .collect()
}

fn has_glob(pattern: &str) -> bool {
    pattern.contains(['*', '?'])
}

/// Does `pattern` match the board-relative path `rel` (`/` separators)? A pattern without
/// glob characters matches that path and everything under it; otherwise `*` matches within
/// one segment, `?` one character of a segment, and a `**` segment any number of whole
/// segments (none included).
pub fn pattern_matches(pattern: &str, rel: &str) -> bool {
    let p = segments(pattern);
    let r: Vec<&str> = rel.split('/').collect();
    if has_glob(pattern) {
        glob_segments(&p, &r)
    } else {
        r.len() >= p.len() && r[..p.len()] == p[..]
    }
}

/// Segment-wise glob matching, by dynamic programming: `reach[j]` says whether the pattern
/// segments seen so far can match the first `j` path segments. Linear in the pattern
/// times the path, whatever the number of `**`.
fn glob_segments(p: &[&str], r: &[&str]) -> bool {
    let mut reach = vec![false; r.len() + 1];
    reach[0] = true;
    for seg in p {
        if *seg == "**" {
            let mut on = false;
            for cell in reach.iter_mut() {
                on |= *cell;
                *cell = on;
            }
        } else {
            // Backwards, so reach[j - 1] still holds the previous segment's answer.
            for j in (0..reach.len()).rev() {
                reach[j] = j > 0 && reach[j - 1] && segment_matches(seg, r[j - 1]);
            }
        }
    }
    reach[r.len()]
}

/// `*` and `?` inside one path segment (the classic backtracking wildcard match).
fn segment_matches(pattern: &str, name: &str) -> bool {
    let p: Vec<char> = pattern.chars().collect();
    let s: Vec<char> = name.chars().collect();
    let (mut i, mut j) = (0, 0);
    // The last `*` seen, and the name position it currently stands for up to.
    let mut star: Option<(usize, usize)> = None;
    while j < s.len() {
        if i < p.len() && p[i] == '*' {
            star = Some((i, j));
            i += 1;
        } else if i < p.len() && (p[i] == '?' || p[i] == s[j]) {
            i += 1;
            j += 1;
        } else if let Some((si, sj)) = star {
            star = Some((si, sj + 1));
            i = si + 1;
            j = sj + 1;
        } else {
            return false;
        }
    }
    p[i..].iter().all(|c| *c == '*')
}

/// What is wrong with one `watch:` entry, if anything.
fn pattern_problem(pattern: &str) -> Option<String> {
    let s = shown(pattern);
    if pattern.is_empty() {
        return Some(
            "an entry is empty; expected a path under the board like tasks or solutions/*/design.md"
                .into(),
        );
    }
    if pattern.starts_with('/') {
        return Some(format!(
            "'{s}' must be relative to the board (no leading /)"
        ));
    }
    if pattern.contains('\\') {
        return Some(format!(
            "'{s}' must separate components with / (no backslash)"
        ));
    }
    let segs = segments(pattern);
    if segs.contains(&"..") {
        return Some(format!(
            "'{s}' must stay inside the board (no .. components)"
        ));
    }
    if segs.iter().any(|seg| seg.is_empty() || *seg == ".") {
        return Some(format!("'{s}' has an empty or '.' component"));
    }
    if !under_watched_area(&segs, !has_glob(pattern)) {
        return Some(format!(
            "'{s}' is not under a watched area; watch {} or paths and globs under them",
            watchable_list()
        ));
    }
    None
}

fn watchable_list() -> String {
    let (last, rest) = WATCHABLE.split_last().unwrap_or((&"", &[]));
    format!("{}, or {last},", rest.join(", "))
}

/// Can the pattern match something in (or, for a plain path, above and so over) one of
/// the watched areas?
fn under_watched_area(segs: &[&str], literal: bool) -> bool {
    WATCHABLE.iter().any(|area| {
        let area: Vec<&str> = area.split('/').collect();
        for (i, a) in area.iter().enumerate() {
            match segs.get(i) {
                // `control` covers control/sources and the rest; `contr*` only the dir.
                None => return literal,
                Some(&"**") => return true,
                Some(seg) if segment_matches(seg, a) => {}
                Some(_) => return false,
            }
        }
        true
    })
}

// ---------------------------------------------------------------------------------------
// run: placeholders and the shell context around them

/// A `{word}` in `run:`: where it is, and the shell context around it when that context
/// would not keep a quoted value one literal word.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Placeholder<'a> {
    word: &'a str,
    start: usize,
    end: usize,
    unsafe_in: Option<&'static str>,
}

/// The shell contexts the scanner tells apart.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Sh {
    Plain,
    Single,
    Double,
    Backtick,
    /// `$(…)`: a fresh command, where quoting works again.
    Subst,
    /// `(…)`: a subshell, likewise.
    Paren,
    Arith,
    Param,
}

impl Sh {
    fn inside(self) -> &'static str {
        match self {
            Sh::Single => "'…'",
            Sh::Double => "\"…\"",
            Sh::Backtick => "`…`",
            Sh::Arith => "$((…))",
            Sh::Param => "${…}",
            Sh::Plain | Sh::Subst | Sh::Paren => "",
        }
    }

    fn opener(self) -> &'static str {
        match self {
            Sh::Single => "a ' quote",
            Sh::Double => "a \" quote",
            Sh::Backtick => "a ` quote",
            Sh::Subst => "a $(",
            Sh::Paren => "a (",
            Sh::Arith => "a $((",
            Sh::Param => "a ${",
            Sh::Plain => "",
        }
    }

    /// Contexts where a single-quoted word is one literal word.
    fn is_command(self) -> bool {
        matches!(self, Sh::Plain | Sh::Subst | Sh::Paren)
    }
}

#[derive(Debug, Default)]
struct RunScan<'a> {
    placeholders: Vec<Placeholder<'a>>,
    /// The innermost quote or bracket left open at the end, if any.
    unclosed: Option<Sh>,
}

/// The length of a `{word}` placeholder starting at `i`, if one does. `${word}` is the
/// shell's own parameter expansion and never a placeholder.
fn placeholder_at(b: &[u8], i: usize) -> Option<usize> {
    if b.get(i) != Some(&b'{') || (i > 0 && b[i - 1] == b'$') {
        return None;
    }
    let first = *b.get(i + 1)?;
    if !(first.is_ascii_alphabetic() || first == b'_') {
        return None;
    }
    let len = b[i + 1..]
        .iter()
        .take_while(|c| c.is_ascii_alphanumeric() || **c == b'_')
        .count();
    (b.get(i + 1 + len) == Some(&b'}')).then_some(len + 2)
}

/// Walks `run` like a (small) shell lexer: quotes, backquotes, `$(…)`, `(…)`, `$((…))`,
/// `${…}`, comments and here-documents, enough to know the context of every placeholder.
/// Only ASCII bytes drive it, so slicing at its offsets is always on char boundaries.
fn scan_run(run: &str) -> RunScan<'_> {
    let b = run.as_bytes();
    let mut out = RunScan::default();
    let mut stack = vec![Sh::Plain];
    // After an unquoted `<<`, the lines that follow are a here-document body, where sh
    // expands `$(…)` whatever the quotes: nothing after it is safe (we do not track where
    // the body ends; refusing too much is the safe side).
    let mut heredoc_pending = false;
    let mut in_heredoc = false;
    let mut i = 0;
    while i < b.len() {
        let top = stack.last().copied().unwrap_or(Sh::Plain);
        if let Some(len) = placeholder_at(b, i) {
            let unsafe_in = if in_heredoc {
                Some("a here-document")
            } else if stack.contains(&Sh::Backtick) {
                Some(Sh::Backtick.inside())
            } else if top.is_command() {
                None
            } else {
                Some(top.inside())
            };
            out.placeholders.push(Placeholder {
                word: &run[i + 1..i + len - 1],
                start: i,
                end: i + len,
                unsafe_in,
            });
            i += len;
            continue;
        }
        let c = b[i];
        if in_heredoc {
            i += 1;
            continue;
        }
        if top == Sh::Single {
            if c == b'\'' {
                stack.pop();
            }
            i += 1;
            continue;
        }
        let next = b.get(i + 1).copied();
        let step = match c {
            b'\\' => 2,
            b'$' if b[i..].starts_with(b"$((") => {
                stack.push(Sh::Arith);
                3
            }
            b'$' if next == Some(b'(') => {
                stack.push(Sh::Subst);
                2
            }
            b'$' if next == Some(b'{') => {
                stack.push(Sh::Param);
                2
            }
            b'`' => {
                if top == Sh::Backtick {
                    stack.pop();
                } else {
                    stack.push(Sh::Backtick);
                }
                1
            }
            b'"' => {
                if top == Sh::Double {
                    stack.pop();
                } else {
                    stack.push(Sh::Double);
                }
                1
            }
            b'\'' if top != Sh::Double => {
                stack.push(Sh::Single);
                1
            }
            b'(' if top.is_command() => {
                stack.push(Sh::Paren);
                1
            }
            b')' if top == Sh::Arith && next == Some(b')') => {
                stack.pop();
                2
            }
            b')' if matches!(top, Sh::Subst | Sh::Paren) => {
                stack.pop();
                1
            }
            b'}' if top == Sh::Param => {
                stack.pop();
                1
            }
            b'#' if top.is_command() && starts_word(b, i) => {
                // A comment runs to the end of the line.
                b[i..]
                    .iter()
                    .position(|c| *c == b'\n')
                    .unwrap_or(b.len() - i)
            }
            b'<' if top.is_command() && next == Some(b'<') => {
                heredoc_pending = true;
                2
            }
            b'\n' => {
                in_heredoc = heredoc_pending;
                1
            }
            _ => 1,
        };
        i += step;
    }
    if !in_heredoc {
        out.unclosed = stack.last().copied().filter(|s| *s != Sh::Plain);
    }
    out
}

/// Does a word start at `i` (so a `#` there begins a comment)?
fn starts_word(b: &[u8], i: usize) -> bool {
    i == 0 || b[i - 1].is_ascii_whitespace() || matches!(b[i - 1], b';' | b'&' | b'|' | b'(')
}

// ---------------------------------------------------------------------------------------
// Last activations, from the log

/// The latest `activation` entry of each source (by actor), in log order.
///
/// Watch mode logs two entries per activation (`to: started`, then `ok`, `failed`,
/// `timed-out` or `killed`). The log can be long, so it is read line by line and only the
/// entries whose `op:` line mentions `activation` are parsed; a torn last entry is skipped.
pub fn last_activations(board: &Board) -> crate::error::Result<HashMap<String, Entry>> {
    let path = board.log_path();
    let file = match std::fs::File::open(&path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(HashMap::new()),
        Err(e) => return Err(Error::io(&path, "read", e)),
    };
    let mut reader = std::io::BufReader::new(file);
    let mut last = HashMap::new();
    let mut chunk: Vec<u8> = Vec::new();
    let mut is_activation = false;
    let mut line: Vec<u8> = Vec::new();
    loop {
        line.clear();
        let n = reader
            .read_until(b'\n', &mut line)
            .map_err(|e| Error::io(&path, "read", e))?;
        let starts_entry = n == 0 || line.starts_with(b"- ") || line == b"-\n";
        if starts_entry && !chunk.is_empty() {
            if is_activation && chunk.ends_with(b"\n") {
                remember_activation(&chunk, &mut last);
            }
            chunk.clear();
            is_activation = false;
        }
        if n == 0 {
            break;
        }
        is_activation |= is_activation_op_line(&line);
        chunk.extend_from_slice(&line);
    }
    Ok(last)
}

/// `  op: activation` (or `- op: …` as the first line, or quoted): a cheap test, which the
/// parse of the whole entry then confirms.
fn is_activation_op_line(line: &[u8]) -> bool {
    let line = line.strip_prefix(b"- ").unwrap_or(line);
    let trimmed = line.trim_ascii_start();
    trimmed.starts_with(b"op:") && trimmed.windows(10).any(|w| w == b"activation")
}

fn remember_activation(chunk: &[u8], last: &mut HashMap<String, Entry>) {
    let text = String::from_utf8_lossy(chunk);
    if let Some(entry) = crate::log::parse_entry(&text)
        && entry.op == "activation"
    {
        last.insert(entry.actor.clone(), entry);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn board() -> Board {
        Board {
            root: PathBuf::from("/nonexistent/.tavern"),
            config: crate::board::parse_config(crate::board::DEFAULT_BOARD_YAML).unwrap(),
            found: Default::default(),
        }
    }

    fn parse_ok(text: &str) -> Source {
        parse(&board(), "architect", text).unwrap_or_else(|p| panic!("problems: {p:#?}"))
    }

    fn problems(text: &str) -> Vec<String> {
        match parse(&board(), "architect", text) {
            Ok(s) => panic!("parsed: {s:#?}"),
            Err(p) => p,
        }
    }

    fn fm(fields: &str) -> String {
        format!("---\n{fields}---\nprompt\n")
    }

    const STATES: &str = "pending, claimed, working, review, blocked, done, failed, cancelled";

    #[test]
    fn parses_every_field() {
        let text = "---\r\nname: architect\r\nwatch: [tasks, solutions/*/design.md]   # c\r\non: [created, changed, transition:pending]\r\nwhen: status=pending no:design\r\nrun: ./agents/architect.sh {id}\r\npriority: 10\r\ncooldown: 30s\r\nmax_parallel: 2\r\ntimeout: 15m\r\ndescription: Writes designs\r\n---\r\nThe prompt.\r\n\r\n---\r\nmore\r\n";
        let s = parse_ok(text);
        assert_eq!(s.name, "architect");
        assert_eq!(s.path, "control/sources/architect.md");
        assert_eq!(s.watch, ["tasks", "solutions/*/design.md"]);
        assert_eq!(
            s.on,
            [On::Created, On::Changed, On::Transition("pending".into())]
        );
        assert_eq!(s.when_text, "status=pending no:design");
        assert_eq!(s.when, Query::parse(&["status=pending no:design"]).unwrap());
        assert_eq!(s.run, "./agents/architect.sh {id}");
        assert_eq!(s.priority, 10);
        assert_eq!(s.cooldown, Duration::from_secs(30));
        assert_eq!(s.max_parallel, 2);
        assert_eq!(s.timeout, Duration::from_secs(15 * 60));
        assert_eq!(s.description.as_deref(), Some("Writes designs"));
        // Byte-exact: CRLF and a later `---` stay in the prompt.
        assert_eq!(s.prompt, "The prompt.\r\n\r\n---\r\nmore\r\n");
    }

    #[test]
    fn defaults() {
        let s = parse_ok("---\nrun: echo hi\n---\n");
        assert_eq!(s.watch, ["tasks", "observations", "questions"]);
        assert_eq!(s.on, [On::Created, On::Changed]);
        assert!(s.when.is_empty());
        assert_eq!(s.when_text, "");
        assert_eq!(s.priority, 0);
        assert_eq!(s.cooldown, Duration::ZERO);
        assert_eq!(s.max_parallel, 1);
        assert_eq!(s.timeout, Duration::from_secs(30 * 60));
        assert_eq!(s.description, None);
        assert_eq!(s.prompt, "");
        // An empty value is the default too.
        let s = parse_ok("---\nrun: x\nwhen:\ntimeout:\n---\n");
        assert_eq!(s.timeout, DEFAULT_TIMEOUT);
    }

    #[test]
    fn single_strings_are_accepted_for_lists() {
        let s = parse_ok(&fm("watch: solutions/**\non: deleted\nrun: x\n"));
        assert_eq!(s.watch, ["solutions/**"]);
        assert_eq!(s.on, [On::Deleted]);
    }

    #[test]
    fn file_level_problems() {
        assert_eq!(
            problems("run: x\n"),
            ["line 1: no frontmatter: the first line must be exactly `---`"]
        );
        assert_eq!(
            problems("---\nrun: x\n"),
            ["line 1: frontmatter is not closed: no line is exactly `---` after the first"]
        );
        assert_eq!(
            problems("---\n- a\n- b\n---\n"),
            ["line 2: frontmatter must be a mapping of fields, found a list"]
        );
        let duplicate = problems("---\nrun: x\nrun: y\n---\n");
        assert!(duplicate[0].starts_with("line 3: "), "{duplicate:?}");
        let e = parse(&board(), "Bad Name", "---\nrun: x\n---\n").unwrap_err();
        assert_eq!(e, [BAD_FILE_NAME]);
    }

    #[test]
    fn hostile_yaml_is_a_problem_not_a_crash() {
        let deep = format!(
            "---\nrun: x\nwatch: {}{}\n---\n",
            "[".repeat(10_000),
            "]".repeat(10_000)
        );
        let p = problems(&deep);
        assert_eq!(p.len(), 1);
        assert!(p[0].starts_with("line "), "{p:?}");
        let bomb = "---\na: &a [x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a]\nc: &c [*b, *b, *b, *b, *b, *b, *b, *b]\nd: &d [*c, *c, *c, *c, *c, *c, *c, *c]\ne: [*d, *d, *d, *d, *d, *d, *d, *d]\nrun: x\n---\n";
        let p = problems(bomb);
        assert_eq!(p.len(), 1, "{p:?}");
        assert!(p[0].starts_with("line "), "{p:?}");
    }

    #[test]
    fn every_problem_is_reported_at_once() {
        let text = fm(
            "name: other\nmax-parallel: 2\nwatch: [archive/x, /tasks]\non: [created, modified, transition:reviewing]\nwhen: status=\nrun: ./x.sh {title}\npriority: high\ncooldown: 5 minutes\nmax_parallel: 0\ntimeout: 0s\ndescription: [a]\n",
        );
        let p = parse(&board(), "Arch", &text).unwrap_err();
        assert_eq!(
            p,
            [
                BAD_FILE_NAME.to_string(),
                "unknown field 'max-parallel'; known fields: name, watch, on, when, run, priority, cooldown, max_parallel, timeout, description".into(),
                "name: 'other' does not match the file name; expected 'Arch' (or leave name out)".into(),
                "watch: 'archive/x' is not under a watched area; watch tasks, observations, questions, solutions, control/sources, control/agents, or control/PAUSE, or paths and globs under them".into(),
                "watch: '/tasks' must be relative to the board (no leading /)".into(),
                "on: 'modified' is not an event; expected created, changed, deleted or transition:STATE".into(),
                format!("on: 'transition:reviewing': 'reviewing' is not a state of the workflow ({STATES})"),
                "when: malformed query term 'status=': expected a value after the operator".into(),
                "run: {title} is not substituted: only {id} {path} {region} are substituted; other values reach the command through the environment (TAVERN_DOC, TAVERN_ID, …) or stdin".into(),
                "priority: expected an integer (higher runs first), found 'high'".into(),
                "cooldown: expected a duration like 30s, 5m or 2h, found '5 minutes'".into(),
                "max_parallel: expected an integer >= 1 (how many runs of this source at once), found 0".into(),
                "timeout: expected a duration above zero like 15m, found '0s'".into(),
                "description: expected a string, found a list".into(),
            ]
        );
    }

    #[test]
    fn name_must_be_the_file_stem() {
        parse_ok(&fm("name: architect\nrun: x\n"));
        assert_eq!(
            problems(&fm("name: 3\nrun: x\n")),
            ["name: expected 'architect' (the file name), found 3"]
        );
    }

    #[test]
    fn run_is_required_and_a_string() {
        let missing = "run: missing; expected the command to start (run with sh -c in the project root), e.g. run: ./agents/x.sh {id}";
        assert_eq!(problems(&fm("priority: 1\n")), [missing]);
        assert_eq!(problems(&fm("run:\n")), [missing]);
        assert_eq!(
            problems(&fm("run: '  '\n")),
            ["run: empty; expected the command to start (run with sh -c in the project root)"]
        );
        assert_eq!(
            problems(&fm("run: [a, b]\n")),
            [
                "run: expected the command to start (a string, run with sh -c in the project root), found a list"
            ]
        );
    }

    #[test]
    fn run_placeholders() {
        parse_ok(&fm(
            "run: ./x.sh {id} {path} {region} solutions/{id}/design.md\n",
        ));
        // The shell's own ${…}, brace groups, awk programs and escaped braces are not ours.
        parse_ok(&fm(
            "run: 'echo ${HOME} $TAVERN_ID; { echo a; }; awk \"{ print }\" f; echo \\{title}'\n",
        ));
        // Each unknown placeholder once, however often it appears.
        assert_eq!(
            problems(&fm("run: ./x.sh {title} {title} {doc_id}\n")),
            [
                "run: {title} is not substituted: only {id} {path} {region} are substituted; other values reach the command through the environment (TAVERN_DOC, TAVERN_ID, …) or stdin",
                "run: {doc_id} is not substituted: only {id} {path} {region} are substituted; other values reach the command through the environment (TAVERN_DOC, TAVERN_ID, …) or stdin",
            ]
        );
    }

    #[test]
    fn run_placeholders_must_be_bare_words() {
        let inside = |what: &str| {
            format!(
                "run: {{id}} is inside {what}, where quoting cannot keep its value one word; write it outside any quotes: tavern quotes the value itself"
            )
        };
        for (run, what) in [
            (r#"run: "echo '{id}'""#, "'…'"),
            (r#"run: 'echo "{id}"'"#, "\"…\""),
            ("run: 'echo `cat {id}`'", "`…`"),
            ("run: 'echo $((1 + {id}))'", "$((…))"),
            ("run: 'echo ${x:-{id}}'", "${…}"),
            ("run: |\n  cat <<EOF\n  {id}\n  EOF\n", "a here-document"),
        ] {
            assert_eq!(problems(&fm(&format!("{run}\n"))), [inside(what)], "{run}");
        }
        // A fresh command inside $(…) or (…) quotes normally again, even within "…".
        parse_ok(&fm(
            "run: 'echo \"$(cat {id})\" $(x {path}) (cd {region})'\n",
        ));
        // A comment is not part of the command.
        parse_ok(&fm("run: \"./x.sh {id} # see '{title}\"\n"));
    }

    #[test]
    fn run_with_an_unclosed_quote() {
        assert_eq!(
            problems(&fm("run: \"echo it's\"\n")),
            ["run: a ' quote is never closed, so sh would refuse the command"]
        );
        assert_eq!(
            problems(&fm("run: 'echo $(date'\n")),
            ["run: a $( is never closed, so sh would refuse the command"]
        );
    }

    #[test]
    fn watch_entries() {
        for ok in [
            "tasks",
            "tasks/",
            "tasks/*.md",
            "solutions/*/design.md",
            "solutions/**",
            "control",
            "control/*",
            "control/PAUSE",
            "control/sources/x.md",
            "**/design.md",
            "obs*/*.md",
        ] {
            assert_eq!(pattern_problem(ok), None, "{ok}");
        }
        let area = "is not under a watched area; watch tasks, observations, questions, solutions, control/sources, control/agents, or control/PAUSE, or paths and globs under them";
        for (bad, why) in [
            ("archive/tasks", area.to_string()),
            (".state/x", area.into()),
            ("log.yaml", area.into()),
            ("templates/task.md", area.into()),
            ("control/schedule.md", area.into()),
            ("contr*", area.into()),
            (
                "/tasks",
                "must be relative to the board (no leading /)".into(),
            ),
            (
                "tasks/../log.yaml",
                "must stay inside the board (no .. components)".into(),
            ),
            ("..", "must stay inside the board (no .. components)".into()),
            (
                "tasks\\x",
                "must separate components with / (no backslash)".into(),
            ),
            ("tasks//x", "has an empty or '.' component".into()),
            ("./tasks", "has an empty or '.' component".into()),
        ] {
            assert_eq!(
                pattern_problem(bad),
                Some(format!("'{bad}' {why}")),
                "{bad}"
            );
        }
        assert_eq!(
            problems(&fm("watch: ['', 3]\nrun: x\n")),
            ["watch: expected a path under the board like tasks or solutions/*/design.md, found 3"]
        );
        assert_eq!(
            problems(&fm("watch: ['']\nrun: x\n")),
            [
                "watch: an entry is empty; expected a path under the board like tasks or solutions/*/design.md"
            ]
        );
        assert_eq!(
            problems(&fm("watch: []\nrun: x\n")),
            [
                "watch: empty; expected at least one path under the board (leave watch out for tasks, observations, questions)"
            ]
        );
        assert_eq!(
            problems(&fm("watch: {a: 1}\nrun: x\n")),
            [
                "watch: expected a path under the board like tasks or solutions/*/design.md, found a mapping"
            ]
        );
    }

    #[test]
    fn on_entries() {
        assert_eq!(
            problems(&fm("on: [transition: review]\nrun: x\n")),
            [
                "on: write transition:STATE without a space after the colon (with one, YAML reads a mapping)"
            ]
        );
        assert_eq!(
            problems(&fm("on: []\nrun: x\n")),
            [
                "on: empty; expected at least one of created, changed, deleted, transition:STATE (leave on out for created, changed)"
            ]
        );
        assert_eq!(
            problems(&fm("on: [1]\nrun: x\n")),
            ["on: expected an event (created, changed, deleted or transition:STATE), found 1"]
        );
        assert_eq!(
            On::parse("transition:", &["a".into()]),
            Err("'transition:': '' is not a state of the workflow (a)".into())
        );
        for on in [
            On::Created,
            On::Changed,
            On::Deleted,
            On::Transition("done".into()),
        ] {
            assert_eq!(On::parse(&on.name(), &["done".into()]), Ok(on));
        }
    }

    #[test]
    fn when_must_be_a_query_string() {
        assert_eq!(
            problems(&fm("when: [a]\nrun: x\n")),
            ["when: expected a query like status=pending no:design, found a list"]
        );
        assert_eq!(
            problems(&fm("when: 'priority<=x region:nowhere'\nrun: x\n")).len(),
            1
        );
    }

    #[test]
    fn numbers_and_durations() {
        let s = parse_ok(&fm(
            "run: x\npriority: -3\ncooldown: 0s\ntimeout: 2h\nmax_parallel: 4\n",
        ));
        assert_eq!(
            (s.priority, s.cooldown, s.timeout, s.max_parallel),
            (-3, Duration::ZERO, Duration::from_secs(7200), 4)
        );
        for (field, value, why) in [
            (
                "priority",
                "1.5",
                "expected an integer (higher runs first), found 1.5",
            ),
            (
                "priority",
                "'10'",
                "expected an integer (higher runs first), found '10'",
            ),
            (
                "max_parallel",
                "-1",
                "expected an integer >= 1 (how many runs of this source at once), found -1",
            ),
            (
                "max_parallel",
                "true",
                "expected an integer >= 1 (how many runs of this source at once), found true",
            ),
            (
                "cooldown",
                "30",
                "expected a duration like 30s, 5m or 2h, found 30",
            ),
            (
                "cooldown",
                "10000000h",
                "'10000000h' is too long: at most 366d",
            ),
            ("timeout", "400d", "'400d' is too long: at most 366d"),
            (
                "cooldown",
                "99999999999999999w",
                "expected a duration like 30s, 5m or 2h, found '99999999999999999w'",
            ),
            (
                "timeout",
                "-5m",
                "expected a duration like 30s, 5m or 2h, found '-5m'",
            ),
        ] {
            assert_eq!(
                problems(&fm(&format!("run: x\n{field}: {value}\n"))),
                [format!("{field}: {why}")],
                "{field}: {value}"
            );
        }
    }

    #[test]
    fn control_characters_never_reach_a_message() {
        let p = problems(&fm("\"bad\\e[31mkey\": 1\nrun: x\n"));
        assert_eq!(p.len(), 1);
        assert!(
            p[0].starts_with("unknown field 'bad\\u{1b}[31mkey'"),
            "{p:?}"
        );
        assert!(!p[0].chars().any(|c| c.is_control()));
    }

    #[test]
    fn globs() {
        let m = pattern_matches;
        // A plain path: itself and everything under it, whole segments only.
        assert!(m("tasks", "tasks/task-7k2m.md"));
        assert!(m("tasks", "tasks"));
        assert!(m("tasks/", "tasks/task-7k2m.md"));
        assert!(!m("tasks", "tasksx/a.md"));
        assert!(!m("tasks", "observations/tasks.md"));
        assert!(m("solutions/task-1", "solutions/task-1/design.md"));
        assert!(!m("solutions/task-1", "solutions/task-10/design.md"));
        assert!(m("control/PAUSE", "control/PAUSE"));
        // `*` and `?` stay within one segment.
        assert!(m("tasks/*.md", "tasks/task-7k2m.md"));
        assert!(!m("tasks/*.md", "tasks/sub/task-7k2m.md"));
        assert!(!m("tasks/*.md", "tasks/notes.txt"));
        assert!(m("solutions/*/design.md", "solutions/task-1/design.md"));
        assert!(!m("solutions/*/design.md", "solutions/task-1/x/design.md"));
        assert!(!m("solutions/*/design.md", "solutions/design.md"));
        assert!(m("tasks/task-????.md", "tasks/task-7k2m.md"));
        assert!(!m("tasks/task-????.md", "tasks/task-7k2.md"));
        assert!(m("tasks/*-*-*", "tasks/a-b-c-d"));
        assert!(!m("tasks/*x*y", "tasks/axbx"));
        assert!(m("tasks/*", "tasks/é.md"));
        assert!(m("*", "tasks"));
        assert!(!m("*", "tasks/a.md"));
        // `**`: any number of whole segments, none included.
        assert!(m("solutions/**", "solutions/task-1/impl/src/main.rs"));
        assert!(m("solutions/**", "solutions"));
        assert!(m("**/design.md", "design.md"));
        assert!(m("**/design.md", "solutions/t/design.md"));
        assert!(m("solutions/**/*.md", "solutions/t/a/b.md"));
        assert!(m("solutions/**/*.md", "solutions/b.md"));
        assert!(!m("solutions/**/*.md", "tasks/b.md"));
        assert!(m("**", "anything/at/all"));
        assert!(m("a/**/b/**/c", "a/x/b/y/z/c"));
        assert!(!m("a/**/b/**/c", "a/x/c"));
        // Many `**` and a long path stay fast (no exponential backtracking).
        let pattern = "**/".repeat(200) + "z";
        let path = "a/".repeat(2000) + "b";
        assert!(!m(&pattern, &path));
        let star = "*".repeat(200) + "z";
        assert!(!segment_matches(&star, &"a".repeat(2000)));
    }

    #[test]
    fn watches_uses_every_pattern() {
        let s = parse_ok(&fm("watch: [tasks, solutions/*/design.md]\nrun: x\n"));
        assert!(s.watches("tasks/task-7k2m.md"));
        assert!(s.watches("solutions/task-1/design.md"));
        assert!(!s.watches("solutions/task-1/notes.md"));
        assert!(!s.watches("observations/obs-1.md"));
    }

    #[test]
    fn listens_returns_the_first_listed_event() {
        let s = parse_ok(&fm("on: [changed, transition:review]\nrun: x\n"));
        let review = On::Transition("review".into());
        let events = [On::Created, review.clone(), On::Changed];
        assert_eq!(s.listens(&events), Some(&review));
        assert_eq!(s.listens(&[On::Created, On::Deleted]), None);
        assert_eq!(
            s.listens(&[On::Transition("done".into()), On::Changed]),
            Some(&On::Changed)
        );
        let twice = parse_ok(&fm("on: [created, changed, created]\nrun: x\n"));
        assert_eq!(twice.on, vec![On::Created, On::Changed]);
    }

    #[test]
    fn shell_words() {
        assert_eq!(shell_word("task-7k2m"), "task-7k2m");
        assert_eq!(shell_word("tasks/task-7k2m.md"), "tasks/task-7k2m.md");
        assert_eq!(shell_word("A_b.9"), "A_b.9");
        assert_eq!(shell_word(""), "''");
        assert_eq!(shell_word("-rf"), "'-rf'");
        assert_eq!(shell_word("it's"), r#"'it'"'"'s'"#);
        assert_eq!(shell_word("a b"), "'a b'");
        assert_eq!(shell_word("é"), "'é'");
        assert_eq!(
            shell_word("a b; rm -rf ~ $(x) `y`"),
            "'a b; rm -rf ~ $(x) `y`'"
        );
    }

    #[test]
    fn command_substitutes_only_the_three_placeholders() {
        let s = parse_ok(&fm(
            "run: ./x.sh {id} --doc={path} solutions/{id}/design.md {region} ${HOME}\n",
        ));
        assert_eq!(
            s.command("task-1", "tasks/task-1.md", "tasks"),
            "./x.sh task-1 --doc=tasks/task-1.md solutions/task-1/design.md tasks ${HOME}"
        );
        // A value holding a placeholder is not substituted again.
        assert_eq!(
            s.command("{path}", "p", "r"),
            "./x.sh '{path}' --doc=p solutions/'{path}'/design.md r ${HOME}"
        );
    }

    /// What sh makes of a command line: its words, one per line.
    #[cfg(unix)]
    fn sh_words(command: &str) -> String {
        let out = std::process::Command::new("sh")
            .arg("-c")
            .arg(format!("set -- {command}; printf '%s\\n' \"$@\""))
            .output()
            .expect("run sh");
        assert!(out.status.success(), "{out:?}");
        String::from_utf8(out.stdout).unwrap()
    }

    #[cfg(unix)]
    #[test]
    fn hostile_values_stay_one_word() {
        let s = parse_ok(&fm("run: a {id} solutions/{path}/x {region}\n"));
        let hostile = "a b; rm -rf ~ $(x) `y` 'q' \"d\" \\ \n*";
        let line = s.command(hostile, "-n", "it's");
        assert_eq!(
            line,
            r#"a 'a b; rm -rf ~ $(x) `y` '"'"'q'"'"' "d" \ 
*' solutions/'-n'/x 'it'"'"'s'"#
        );
        assert_eq!(
            sh_words(&line),
            format!("a\n{hostile}\nsolutions/-n/x\nit's\n")
        );
    }

    #[test]
    fn scanner_contexts() {
        let words = |run: &str| -> Vec<(String, Option<&'static str>)> {
            scan_run(run)
                .placeholders
                .into_iter()
                .map(|p| (p.word.to_string(), p.unsafe_in))
                .collect()
        };
        assert_eq!(
            words("a {id} '{x}' \"{y}\""),
            [
                ("id".into(), None),
                ("x".into(), Some("'…'")),
                ("y".into(), Some("\"…\"")),
            ]
        );
        assert_eq!(words("echo \\'{id}"), [("id".into(), None)]);
        assert_eq!(words("echo \"it's {id}\""), [("id".into(), Some("\"…\""))]);
        assert_eq!(words("`echo $({id})`"), [("id".into(), Some("`…`"))]);
        assert_eq!(words("{} {1} {a-b} {id"), []);
        assert_eq!(scan_run("echo 'a").unclosed, Some(Sh::Single));
        assert_eq!(scan_run("echo \"a").unclosed, Some(Sh::Double));
        assert_eq!(scan_run("echo `a").unclosed, Some(Sh::Backtick));
        assert_eq!(scan_run("echo ${a").unclosed, Some(Sh::Param));
        assert_eq!(scan_run("echo $((a)) (b) $(c) # it's").unclosed, None);
        assert_eq!(scan_run("cat <<'EOF'\nit's\nEOF").unclosed, None);
    }

    #[test]
    fn activation_op_lines() {
        assert!(is_activation_op_line(b"  op: activation\n"));
        assert!(is_activation_op_line(b"- op: \"activation\"\n"));
        assert!(!is_activation_op_line(b"  op: create\n"));
        assert!(!is_activation_op_line(b"    +op: activation\n"));
        assert!(!is_activation_op_line(b"  note: op: activation\n"));
    }

    fn temp_board() -> (tempfile::TempDir, Board) {
        let dir = tempfile::tempdir().unwrap();
        crate::board::init(dir.path()).unwrap();
        let board = Board::open(&dir.path().join(".tavern")).unwrap();
        (dir, board)
    }

    #[test]
    fn load_reads_one_source_by_name() {
        let (_dir, board) = temp_board();
        std::fs::write(dir(&board).join("x.md"), "---\nrun: echo\n---\nhi\n").unwrap();
        let s = load(&board, "x").unwrap();
        assert_eq!((s.name.as_str(), s.prompt.as_str()), ("x", "hi\n"));
        assert_eq!(load(&board, "y").unwrap_err(), ["does not exist"]);
        // A name that is not an id never becomes a path.
        assert_eq!(load(&board, "../x").unwrap_err(), [BAD_FILE_NAME]);
    }

    #[test]
    fn load_all_sorts_by_name_and_reports_per_file() {
        let (_dir, board) = temp_board();
        let d = dir(&board);
        std::fs::write(d.join("b.md"), "---\nrun: b\n---\n").unwrap();
        std::fs::write(d.join("a.md"), "---\nrun: a\n---\n").unwrap();
        std::fs::write(d.join("c.md"), "---\nrun: c {x}\npriority: y\n---\n").unwrap();
        std::fs::write(d.join(".d.md"), "junk").unwrap();
        std::fs::write(d.join("e.txt"), "junk").unwrap();
        let (sources, problems) = load_all(&board);
        let names: Vec<&str> = sources.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["a", "b"]);
        let paths: Vec<&str> = problems.iter().map(|p| p.path.as_str()).collect();
        assert_eq!(paths, ["control/sources/c.md", "control/sources/c.md"]);
        std::fs::remove_dir_all(&d).unwrap();
        let (sources, problems) = load_all(&board);
        assert!(sources.is_empty() && problems.is_empty());
    }

    #[test]
    fn last_activations_keeps_the_latest_entry_per_source() {
        let (_dir, board) = temp_board();
        assert!(last_activations(&board).unwrap().is_empty());
        let entry = |seq: u64, actor: &str, op: &str, to: &str| Entry {
            seq,
            at: format!("2026-11-23T10:00:0{seq}.000Z"),
            actor: actor.into(),
            op: op.into(),
            doc: "tasks/t.md".into(),
            to: Some(to.into()),
            ..Entry::default()
        };
        let mut log = String::new();
        for e in [
            entry(1, "a", "activation", "started"),
            entry(2, "a", "activation", "ok"),
            entry(3, "b", "activation", "timed-out"),
            entry(4, "a", "transition", "done"),
        ] {
            log.push_str(&crate::log::render(&e));
        }
        // A torn last entry (no final newline) is not read.
        log.push_str("- seq: 5\n  at: x\n  actor: b\n  op: activation\n  doc: d\n  to: ok");
        std::fs::write(board.log_path(), log).unwrap();
        let last = last_activations(&board).unwrap();
        assert_eq!(last.len(), 2);
        assert_eq!((last["a"].seq, last["a"].to.as_deref()), (2, Some("ok")));
        assert_eq!(
            (last["b"].seq, last["b"].to.as_deref()),
            (3, Some("timed-out"))
        );
    }
}
