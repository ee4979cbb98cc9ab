//! Knowledge sources (DESIGN §9): `control/sources/<name>.md`. The frontmatter says what a
//! source reacts to (`watch`, `on`, `when`) and how it runs (`run`, `priority`, `cooldown`,
//! `max_parallel`, `timeout`); the body is the prompt, given to the command on stdin.
//!
//! One job per room: [`parse`] validates a file's text (pure), [`globs`] matches `watch:`
//! entries, [`command`] renders `run:` templates safely; this module reads the files
//! ([`load`], [`load_all`]) and, through [`crate::log`], the last activations.

pub mod command;
pub mod globs;
pub mod parse;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::board::Board;
use crate::error::Error;
use crate::log::Entry;
use crate::query::Query;
pub use command::shell_word;
pub use parse::parse;

/// One thing wrong with a source file (or with `control/sources/`), naming the file.
/// `tavern check` reports these among the board's problems (as `check::Problem`).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Problem {
    pub path: String,
    pub problem: String,
}

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

pub(crate) const BAD_FILE_NAME: &str = "file name is not a valid id ([a-z0-9][a-z0-9._-]{0,63}.md)";

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
    /// `watch:` compiled.
    pub patterns: globs::Patterns,
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
    /// `description:`, free text for humans (listed with the sources).
    pub description: Option<String>,
}

impl Source {
    /// Does `rel` (a board-relative path like `tasks/task-7k2m.md`) fall under `watch:`?
    pub fn watches(&self, rel: &str) -> bool {
        self.patterns.matches(rel)
    }

    /// The first of `events` that `on:` listens for.
    pub fn listens<'a>(&self, events: &'a [On]) -> Option<&'a On> {
        events.iter().find(|e| self.on.contains(e))
    }

    /// The command line with `{id}`, `{path}` and `{region}` substituted, each value as
    /// exactly one shell word (see [`shell_word`]).
    pub fn command(&self, id: &str, path: &str, region: &str) -> String {
        command::render(&self.run, id, path, region)
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
#[cfg(test)]
fn load(board: &Board, name: &str) -> Result<Source, Vec<String>> {
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

/// The latest `activation` entry of each source (by actor), in log order.
///
/// Watch mode logs two entries per activation (`to: started`, then `ok`, `failed`,
/// `timed-out`, `killed` or `lost`). Read through the log's own reader, which parses only
/// the entries that mention `activation` (a torn last entry is never returned).
pub fn last_activations(board: &Board) -> crate::error::Result<HashMap<String, Entry>> {
    let (entries, _, _) = crate::log::read_matching(board, 0, Some("activation"))?;
    let mut last = HashMap::new();
    for entry in entries {
        if entry.op == "activation" {
            last.insert(entry.actor.clone(), entry);
        }
    }
    Ok(last)
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

#[cfg(test)]
mod tests {
    use super::*;

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
