//! The board as a whole: create it, check it, archive what is finished, pause and resume.

use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::board::Board;
use crate::error::{Error, Input, Kind, Result};
use crate::log::Entry;
use crate::msg;
use crate::query::Query;

/// The board a front-end works on: `explicit` (a `.tavern` directory or the project
/// holding it) or the one found from `cwd`, with every change an interrupted command left
/// half made completed first. Call it once per request (or once per session for a long
/// running server, which then recovers as it writes).
pub fn open(explicit: Option<&Path>, cwd: &Path) -> Result<Board> {
    let board = Board::discover(explicit, cwd)?;
    crate::store::recover(&board)?;
    Ok(board)
}

/// The board as it is, interrupted changes left in place (for [`check`], which reports
/// them).
pub fn open_as_found(explicit: Option<&Path>, cwd: &Path) -> Result<Board> {
    Board::discover(explicit, cwd)
}

/// Where `init` puts a board when told no place: here, or in a linked worktree the main
/// worktree's same directory (every worktree shares the main worktree's board).
pub fn default_dir(cwd: &Path) -> PathBuf {
    crate::sync::repo::Repo::find(cwd)
        .filter(|r| r.linked)
        .and_then(|r| r.in_main(cwd))
        .unwrap_or_else(|| cwd.to_path_buf())
}

/// A board created or completed.
#[derive(Debug, Serialize)]
pub struct Initialised {
    /// The board directory (`.tavern`).
    pub board: PathBuf,
    /// What was missing and is there now; empty when nothing changed.
    pub created: Vec<String>,
}

/// Creates the board in `dir`, a project directory or the `.tavern` directory itself,
/// adding whatever is missing and never touching what is there. Inside the project of
/// another board it refuses unless `nested`: the new board would hide the outer one from
/// every command run below it.
pub fn init(dir: &Path, nested: bool) -> Result<Initialised> {
    // A path to `.tavern` names the board itself: create it there, not inside it.
    let project = if dir
        .file_name()
        .is_some_and(|n| n == crate::board::BOARD_DIR)
    {
        dir.parent().map(PathBuf::from).unwrap_or(dir.to_path_buf())
    } else {
        dir.to_path_buf()
    };
    if !project.is_dir() {
        return Err(Error::NotFound {
            what: format!("directory {}", project.display()),
            hint: "create it first".into(),
        });
    }
    if !nested
        && !project.join(crate::board::BOARD_DIR).exists()
        && let Some(parent) = project.parent()
        && let Ok(outer) = Board::discover(None, parent)
    {
        return Err(Error::request_at(
            Kind::Conflict,
            &outer.root,
            msg!(
                format!(
                    "{} is inside the project of this board; a board there would hide it from every command run below it\nhint: use the existing board (tavern finds it from there), or pass ",
                    project.display()
                ),
                Input::Nested,
                " to create a separate one"
            ),
        ));
    }
    let report = crate::board::init(&project)?;
    Ok(Initialised {
        board: report.root,
        created: report.created,
    })
}

pub use crate::check::Problem;

/// Every problem on the board, or none.
#[derive(Debug, Serialize)]
pub struct Checked {
    pub ok: bool,
    pub documents: usize,
    pub log_entries: usize,
    pub problems: Vec<Problem>,
    /// A board connected to a remote: how it stands with it (as of the last fetch).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sync: Option<crate::sync::status::SyncState>,
    /// The board checked, for the report's last line.
    #[serde(skip)]
    pub root: PathBuf,
}

/// Validates the whole board: documents, the log, the task graph.
pub fn check(board: &Board) -> Result<Checked> {
    let report = crate::check::check(board)?;
    Ok(Checked {
        ok: report.is_clean(),
        documents: report.documents,
        log_entries: report.log_entries,
        problems: report.problems,
        sync: report.sync,
        root: board.root.clone(),
    })
}

/// The documents moved to archive/, one log entry each.
#[derive(Debug, Serialize)]
pub struct Archived {
    pub moved: Vec<Entry>,
}

/// Moves finished documents (terminal tasks, resolved or rejected findings, decided
/// questions) that match the query terms, and are `older_than` when given, to archive/.
pub fn archive(
    board: &Board,
    actor: &str,
    terms: &[String],
    older_than: Option<chrono::Duration>,
) -> Result<Archived> {
    let query = Query::parse(terms)?;
    crate::schema::check_query(board, &query, &query_regions(&query))?;
    Ok(Archived {
        moved: crate::ops::archive::archive(board, actor, &query, older_than)?,
    })
}

/// What `archive` would move, moving nothing.
#[derive(Debug, Serialize)]
pub struct WouldArchive {
    pub dry_run: bool,
    /// The documents' paths under the board.
    pub would_move: Vec<String>,
}

/// The documents `archive` would move with these terms, without moving them.
pub fn archive_dry_run(
    board: &Board,
    terms: &[String],
    older_than: Option<chrono::Duration>,
) -> Result<WouldArchive> {
    let query = Query::parse(terms)?;
    crate::schema::check_query(board, &query, &query_regions(&query))?;
    let docs = crate::ops::archive::candidates(board, &query, older_than)?;
    Ok(WouldArchive {
        dry_run: true,
        would_move: docs.iter().map(|d| d.rel_path()).collect(),
    })
}

/// Whether the board is paused after a pause or resume, and the entry if it changed.
#[derive(Debug, Serialize)]
pub struct PauseState {
    pub paused: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// The log entry, when the call changed something; shown as its seq.
    #[serde(rename = "seq", serialize_with = "seq")]
    pub entry: Option<Entry>,
}

fn seq<S: serde::Serializer>(e: &Option<Entry>, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_some(&e.as_ref().map(|e| e.seq))
}

impl PauseState {
    pub fn changed(&self) -> bool {
        self.entry.is_some()
    }
}

/// Stops new claims and new activations (control/PAUSE holds the reason; empty: "paused
/// by ACTOR"). Pausing a paused board changes nothing.
pub fn pause(board: &Board, actor: &str, reason: &str) -> Result<PauseState> {
    let entry = crate::ops::pause::pause(board, actor, reason)?;
    Ok(PauseState {
        paused: true,
        reason: Some(board.paused().unwrap_or_default()),
        entry,
    })
}

/// Lifts a pause; resuming a board that is not paused changes nothing.
pub fn resume(board: &Board, actor: &str) -> Result<PauseState> {
    Ok(PauseState {
        paused: false,
        reason: None,
        entry: crate::ops::pause::resume(board, actor)?,
    })
}

/// Where the board stands: whether it is paused and why, the last seq of the log, the
/// workflow's states and transitions, and who the humans are.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Status {
    pub paused: Option<String>,
    pub last_seq: u64,
    pub states: Vec<String>,
    pub humans: Vec<String>,
    /// The workflow's transitions, by name.
    pub transitions: Vec<String>,
}

pub fn status(board: &Board) -> Result<Status> {
    let (_, last_seq) = crate::log::end(board)?;
    Ok(Status {
        paused: board.paused(),
        last_seq,
        states: board.config.workflow.states.clone(),
        humans: board.config.humans.clone(),
        transitions: board.config.workflow.transitions.keys().cloned().collect(),
    })
}

/// Is `actor` one of the board's humans (`humans:` in board.yaml)?
pub fn is_human(board: &Board, actor: &str) -> bool {
    board.config.humans.iter().any(|h| h == actor)
}

/// Where the board is: its `.tavern` directory.
pub fn root(board: &Board) -> &Path {
    &board.root
}

/// The board at `root` as it is now (a long-running front-end opens it again for each
/// request: board.yaml may change, the directory may go away and come back).
pub fn reopen(root: &Path) -> Result<Board> {
    if !root.is_dir() {
        return Err(Error::NotFound {
            what: format!("the board directory {}", root.display()),
            hint: "it was removed or moved away; it is shown again once it is back".into(),
        });
    }
    Board::open(root)
}

/// The regions a query reads: those it names, else every one.
fn query_regions(query: &Query) -> Vec<crate::doc::Region> {
    let regions = query.regions();
    if regions.is_empty() {
        crate::doc::Region::ALL.to_vec()
    } else {
        regions
    }
}

/// Where `setup` keeps the files it changed as they were before, for this board.
pub fn setup_backups(board: &Board) -> PathBuf {
    crate::layout::setup_backups(&board.root)
}
