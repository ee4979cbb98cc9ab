//! Where everything lives: every path and lock name under `.tavern/` and `.state/`, in one
//! place. Other modules ask here instead of spelling a path; tests outside the crate spell
//! them on purpose (they pin the documented layout).
//!
//! Functions take the board's root (the `.tavern` directory itself).

use std::path::{Path, PathBuf};

use crate::doc::Region;

/// The name of the board directory inside a project.
pub const BOARD_DIR: &str = ".tavern";
/// The board's configuration.
pub const BOARD_YAML: &str = "board.yaml";
/// The audit log.
pub const LOG: &str = "log.yaml";
pub const GITIGNORE: &str = ".gitignore";
pub const GITATTRIBUTES: &str = ".gitattributes";
pub const TEMPLATES_DIR: &str = "templates";
pub const ARCHIVE_DIR: &str = "archive";
pub const SOLUTIONS_DIR: &str = "solutions";
pub const CONTROL_DIR: &str = "control";
/// Knowledge sources for watch mode.
pub const SOURCES_DIR: &str = "control/sources";
/// Agent cards.
pub const AGENTS_DIR: &str = "control/agents";
/// Exists => the board is paused; its text is the reason.
pub const PAUSE: &str = "control/PAUSE";
/// Written by watch mode for humans (git-ignored).
pub const SCHEDULE: &str = "control/schedule.md";
pub const METRICS: &str = "control/metrics.md";
/// Runtime state, never tracked.
pub const STATE_DIR: &str = ".state";

/// Directories `init` makes, relative to the board root ("" is the root itself).
pub const INIT_DIRS: [&str; 12] = [
    "",
    "tasks",
    "solutions",
    "observations",
    "questions",
    CONTROL_DIR,
    SOURCES_DIR,
    AGENTS_DIR,
    TEMPLATES_DIR,
    ARCHIVE_DIR,
    STATE_DIR,
    ".state/locks",
];

/// The lines of a new board's `.gitignore`. The temp-file pattern is what an interrupted
/// write may leave for a moment (the next tavern command removes it).
pub const GITIGNORE_TEXT: &str = "# Runtime state and files rewritten by `tavern watch`: never tracked.\n.state/\ncontrol/schedule.md\ncontrol/metrics.md\n# Temp files of writes in progress (or interrupted: the next tavern command removes them).\n.*.tmp\n";
/// The pattern that keeps temp files out of git; boards made before it are told by `check`.
pub const GITIGNORE_TEMP_PATTERN: &str = ".*.tmp";
pub const GITATTRIBUTES_TEXT: &str = "# Two branches that both appended to the log merge by keeping both sides.\nlog.yaml merge=union\n";

pub fn gitignore(root: &Path) -> PathBuf {
    root.join(GITIGNORE)
}

/// The directories where tavern writes temp files (beside the files it replaces).
pub fn temp_dirs(root: &Path) -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = Region::ALL.iter().map(|r| region_dir(root, *r)).collect();
    dirs.push(root.join(CONTROL_DIR));
    dirs.push(agents_dir(root));
    dirs
}

/// The lock held by whoever writes the temp file `name` found in `dir` (relative to the
/// board root: `tasks`, `control/agents`, `control`). Older versions named temps
/// `.NAME.PID.N.tmp`, this one `.NAME.tmp`.
pub fn temp_lock(dir: &str, name: &str) -> Option<String> {
    let inner = name.strip_prefix('.')?.strip_suffix(".tmp")?;
    if dir == CONTROL_DIR {
        return inner.starts_with("PAUSE").then(|| PAUSE_LOCK.to_string());
    }
    let id = inner.split_once(".md").map(|(id, _)| id)?;
    if dir == AGENTS_DIR {
        return Some(agent_lock(id));
    }
    let region = Region::ALL.into_iter().find(|r| r.dir() == dir)?;
    Some(doc_lock(region, id))
}

pub fn board_yaml(root: &Path) -> PathBuf {
    root.join(BOARD_YAML)
}

pub fn log(root: &Path) -> PathBuf {
    root.join(LOG)
}

pub fn region_dir(root: &Path, region: Region) -> PathBuf {
    root.join(region.dir())
}

pub fn doc(root: &Path, region: Region, id: &str) -> PathBuf {
    region_dir(root, region).join(format!("{id}.md"))
}

/// Where an archived agent card lives: `archive/control/agents/<id>.md`.
pub fn archived_agent_card(root: &Path, id: &str) -> PathBuf {
    root.join(ARCHIVE_DIR)
        .join("control")
        .join("agents")
        .join(format!("{id}.md"))
}

/// Where archived documents of a region live: `archive/<region>/`.
pub fn archive_dir(root: &Path, region: Region) -> PathBuf {
    root.join(ARCHIVE_DIR).join(region.dir())
}

pub fn archived_doc(root: &Path, region: Region, id: &str) -> PathBuf {
    archive_dir(root, region).join(format!("{id}.md"))
}

pub fn template(root: &Path, kind: &str) -> PathBuf {
    root.join(TEMPLATES_DIR).join(format!("{kind}.md"))
}

pub fn sources_dir(root: &Path) -> PathBuf {
    root.join(SOURCES_DIR)
}

/// The board-relative path of knowledge source `name`.
pub fn source_rel(name: &str) -> String {
    format!("{SOURCES_DIR}/{name}.md")
}

pub fn agents_dir(root: &Path) -> PathBuf {
    root.join(AGENTS_DIR)
}

pub fn agent_card(root: &Path, id: &str) -> PathBuf {
    agents_dir(root).join(format!("{id}.md"))
}

pub fn pause(root: &Path) -> PathBuf {
    root.join(PAUSE)
}

pub fn schedule(root: &Path) -> PathBuf {
    root.join(SCHEDULE)
}

pub fn metrics(root: &Path) -> PathBuf {
    root.join(METRICS)
}

pub fn state_dir(root: &Path) -> PathBuf {
    root.join(STATE_DIR)
}

/// `.state/locks/`: one lock file per lock name.
pub fn locks_dir(root: &Path) -> PathBuf {
    state_dir(root).join("locks")
}

pub fn lock_file(root: &Path, name: &str) -> PathBuf {
    locks_dir(root).join(format!("{name}.lock"))
}

/// `.state/intents/`: the changes being made right now (or interrupted).
pub fn intents_dir(root: &Path) -> PathBuf {
    state_dir(root).join("intents")
}

/// Heartbeats: a file per agent whose modification time is its last sign of life.
pub fn heartbeat(root: &Path, id: &str) -> PathBuf {
    state_dir(root).join("heartbeats").join(id)
}

/// On a connected board: the claim record a task's copy here last took into account (its
/// commit, by the ref name component of the task), so that following the remote never
/// undoes a newer move made here.
pub fn claim_seen(root: &Path, ref_component: &str) -> PathBuf {
    state_dir(root).join("claims-seen").join(ref_component)
}

/// What the last sweep saw of a silent agent.
pub fn swept_marker(root: &Path, agent: &str) -> PathBuf {
    state_dir(root).join("swept").join(agent)
}

/// `events`' cursor per agent.
pub fn events_cursor(root: &Path, actor: &str) -> PathBuf {
    state_dir(root).join("cursors").join(actor)
}

/// What has been delivered into an agent's context (`api::delivery`), per agent.
pub fn delivery_cursor(root: &Path, actor: &str) -> PathBuf {
    state_dir(root).join("delivered").join(actor)
}

/// `.state/board-yaml.json`: board.yaml's YAML as the program last parsed it, with the
/// text it parsed (a cache: the board is read the same without it).
pub fn parsed_config(root: &Path) -> PathBuf {
    state_dir(root).join("board-yaml.json")
}

/// Where a delivery that found nothing for the agent leaves how far it read, unsynced:
/// the next one starts there instead of reading the same entries again.
pub fn delivery_passed(root: &Path, actor: &str) -> PathBuf {
    state_dir(root).join("delivered-passed").join(actor)
}

/// `tavern setup`'s copies of client files as they were before it changed them.
pub fn setup_backups(root: &Path) -> PathBuf {
    state_dir(root).join("setup")
}

/// The output of board commands (sources, completion checks).
pub fn runs_dir(root: &Path) -> PathBuf {
    state_dir(root).join("runs")
}

/// The read index: what every document file held when last read, with its stat data
/// (derived, rebuilt from the files whenever it is missing or out of date).
pub fn index_dir(root: &Path) -> PathBuf {
    state_dir(root).join("index")
}

/// The search index (`tavern search`): derived like the read index.
pub fn search_dir(root: &Path) -> PathBuf {
    state_dir(root).join("search")
}

/// Watch mode's state: snapshot, shadows, cursor, queue, …
pub fn watch_dir(root: &Path) -> PathBuf {
    state_dir(root).join("watch")
}

/// The lock a watcher holds for as long as it runs.
pub fn watch_lock(root: &Path) -> PathBuf {
    lock_file(root, WATCH_LOCK)
}

// Lock names (files under .state/locks/, `<name>.lock`).

/// The log's lock: every append, and every change's visible step, under it.
pub const LOG_LOCK: &str = "log";
/// The lock `pause` and `resume` take.
pub const PAUSE_LOCK: &str = "control.PAUSE";
/// One watcher per board.
pub const WATCH_LOCK: &str = "watch";
/// One writer of the change journal (`tavern watch`, or the index keeper).
pub const JOURNAL_LOCK: &str = "journal";

/// The lock of a document: one per region and id.
pub fn doc_lock(region: Region, id: &str) -> String {
    format!("{}.{id}", region.dir())
}

/// The lock of an agent card.
pub fn agent_lock(id: &str) -> String {
    format!("agents.{id}")
}

// Temp files.

/// The temp file a write of `target` fills before it is renamed or linked into place: a
/// dot file next to it (readers and watchers skip dot files), one name per target, so a
/// leftover one is replaced by the next write of the same target. Only a holder of the
/// target's lock writes it.
pub fn temp_for(target: &Path) -> PathBuf {
    let name = target
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    target.with_file_name(format!(".{name}.tmp"))
}

/// Is this file name one of tavern's temp files (this version's or an older one's,
/// `.NAME.PID.N.tmp`)?
pub fn is_temp(name: &str) -> bool {
    name.len() > ".tmp".len() && name.starts_with('.') && name.ends_with(".tmp")
}

/// The board-relative path of a file under the board, with `/` separators.
pub fn rel(root: &Path, path: &Path) -> String {
    path.strip_prefix(root)
        .unwrap_or(path)
        .to_string_lossy()
        .replace('\\', "/")
}
