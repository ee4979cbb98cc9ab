//! The board on disk: finding it, creating it, and its configuration (board.yaml).

use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::doc::Region;
use crate::error::{Error, Result};
use crate::layout;
use crate::sync::repo::{Found, How, Repo};
use crate::workflow::Workflow;
use crate::yaml::YamlLimits;

/// The name of the board directory inside a project.
pub use crate::layout::BOARD_DIR;

/// The default board.yaml, also the reference for every setting.
pub const DEFAULT_BOARD_YAML: &str = include_str!("../templates/board.yaml");

pub const TEMPLATES: [(&str, &str); 3] = [
    ("task", include_str!("../templates/task.md")),
    ("observation", include_str!("../templates/observation.md")),
    ("question", include_str!("../templates/question.md")),
];

/// The directories of a board that may be empty, which git does not keep: every command
/// recreates the missing ones.
const KEPT_DIRS: [&str; 8] = [
    "tasks",
    "solutions",
    "observations",
    "questions",
    "control/sources",
    "control/agents",
    "templates",
    "archive",
];

fn is_board(dir: &Path) -> bool {
    layout::board_yaml(&dir.join(BOARD_DIR)).is_file()
}

#[derive(Clone, Debug, Deserialize)]
pub struct Prefixes {
    pub task: String,
    pub observation: String,
    pub question: String,
}

#[derive(Clone, Debug, Deserialize)]
pub struct Limits {
    pub max_doc_bytes: u64,
    pub max_yaml_events: usize,
    pub max_aliases: usize,
}

/// Watch mode's loop guard (optional in board.yaml: boards made before watch mode have no
/// `watch:` section).
#[derive(Clone, Debug, Deserialize)]
#[serde(default)]
pub struct WatchConfig {
    /// An activation caused by a change an activation made, caused by …: deeper is an alert.
    pub max_chain: u32,
    /// Activations one document may start within `rate_window`; more is an alert.
    pub max_per_doc: usize,
    pub rate_window: String,
    /// How long the output of a source's or a check's command stays in `.state/runs/`.
    pub keep_runs: String,
    /// When a read that finds no watcher's change journal starts the index keeper.
    pub keeper: KeeperMode,
    /// How long the index keeper runs without a read before it stops.
    pub keeper_idle: String,
}

impl Default for WatchConfig {
    fn default() -> Self {
        WatchConfig {
            max_chain: 8,
            max_per_doc: 20,
            rate_window: "10m".into(),
            keep_runs: "7d".into(),
            keeper: KeeperMode::Auto,
            keeper_idle: "10m".into(),
        }
    }
}

/// When a read starts the index keeper (a watcher that keeps only the change journal)
/// in the background: board.yaml `watch.keeper`, or `TAVERN_KEEPER` on one machine.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum KeeperMode {
    /// When the read found a directory of many documents (see `index::keeper`).
    #[default]
    Auto,
    /// Whenever a read finds no journal.
    Always,
    Never,
}

impl KeeperMode {
    /// The mode `TAVERN_KEEPER` sets, if it names one.
    pub fn from_env() -> Option<KeeperMode> {
        match std::env::var("TAVERN_KEEPER").ok()?.trim() {
            "auto" => Some(KeeperMode::Auto),
            "always" => Some(KeeperMode::Always),
            "never" | "0" | "off" => Some(KeeperMode::Never),
            _ => None,
        }
    }
}

/// The fields a board adds to the schema's, by region (board.yaml `fields:`; optional:
/// boards made before it have none). `"*"` lets a region's documents carry any field.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default)]
pub struct ExtraFields {
    pub tasks: Vec<String>,
    pub observations: Vec<String>,
    pub questions: Vec<String>,
}

impl ExtraFields {
    pub fn of(&self, region: Region) -> &[String] {
        match region {
            Region::Tasks => &self.tasks,
            Region::Observations => &self.observations,
            Region::Questions => &self.questions,
        }
    }
}

fn default_archive_agents_after() -> String {
    "1d".into()
}

#[derive(Clone, Debug, Deserialize)]
pub struct Config {
    pub schema: u32,
    pub prefixes: Prefixes,
    pub limits: Limits,
    pub lease: String,
    /// How long the card of an agent that is gone stays before the sweep archives it.
    #[serde(default = "default_archive_agents_after")]
    pub archive_agents_after: String,
    #[serde(default)]
    pub humans: Vec<String>,
    /// Ownership rules: a path pattern of the working tree → the agent (or `role:R`, any
    /// agent with capability R) that owns it: holds that never expire.
    #[serde(default)]
    pub owners: indexmap::IndexMap<String, String>,
    pub workflow: Workflow,
    #[serde(default)]
    pub watch: WatchConfig,
    /// Fields documents may carry beyond the schema's.
    #[serde(default)]
    pub fields: ExtraFields,
}

impl Config {
    pub fn yaml_limits(&self) -> YamlLimits {
        YamlLimits {
            max_events: self.limits.max_yaml_events,
            max_aliases: self.limits.max_aliases,
        }
    }

    pub fn prefix(&self, region: Region) -> &str {
        match region {
            Region::Tasks => &self.prefixes.task,
            Region::Observations => &self.prefixes.observation,
            Region::Questions => &self.prefixes.question,
        }
    }
}

/// What `control/PAUSE` is.
#[derive(Debug, PartialEq)]
pub enum PauseFile {
    Missing,
    /// A symlink, a directory, a FIFO, or a file that cannot be read.
    NotAFile,
    Text(String),
}

/// An open board: where it is and how it is configured.
#[derive(Clone, Debug)]
pub struct Board {
    /// The `.tavern` directory itself.
    pub root: PathBuf,
    pub config: Config,
    /// How it was found, and where it sits in git.
    pub found: Found,
}

impl Board {
    /// Finds the board: an explicit path (the command line or `TAVERN_BOARD`) (the `.tavern` directory
    /// or the project holding it), else the nearest `.tavern` walking up from `cwd`. In a
    /// linked git worktree the board is the main worktree's (the same relative place
    /// there), so every worktree of a repository shares one board: one lock domain, one
    /// log, one set of claims. The worktree's own checked-out `.tavern/` is never used.
    pub fn discover(explicit: Option<&Path>, cwd: &Path) -> Result<Board> {
        if let Some(dir) = explicit {
            let dir = if dir.is_absolute() {
                dir.to_path_buf()
            } else {
                cwd.join(dir)
            };
            let how = match std::env::var_os("TAVERN_BOARD") {
                Some(v) if Path::new(&v) == explicit.unwrap_or(&dir) => How::Env,
                _ => How::Flag,
            };
            let found = |root: PathBuf| {
                Board::open(&root).map(|b| {
                    b.with_found(Found {
                        how,
                        ..Found::default()
                    })
                })
            };
            if layout::board_yaml(&dir).is_file() {
                return found(dir);
            }
            if layout::board_yaml(&dir.join(BOARD_DIR)).is_file() {
                return found(dir.join(BOARD_DIR));
            }
            if std::fs::symlink_metadata(&dir).is_err() {
                return Err(Error::NoSuchBoardDir { path: dir });
            }
            return Err(Error::BoardNotADir { path: dir });
        }
        let mut first = None;
        let mut repo = None;
        for dir in cwd.ancestors() {
            if first.is_none() && is_board(dir) {
                first = Some(dir.join(BOARD_DIR));
            }
            // Only the nearest working tree decides; past it, look for a board alone.
            if repo.is_none()
                && let Some(r) = Repo::at(dir)
            {
                if r.linked {
                    return Board::discover_main(r, cwd, first);
                }
                repo = Some(r);
            }
            if let Some(root) = &first
                && repo.is_some()
            {
                return Board::open(root).map(|b| {
                    b.with_found(Found {
                        how: How::Cwd,
                        repo,
                        ignored_copy: None,
                    })
                });
            }
        }
        match first {
            Some(root) => Board::open(&root).map(|b| {
                b.with_found(Found {
                    how: How::Cwd,
                    repo,
                    ignored_copy: None,
                })
            }),
            None => Err(Error::NoBoard {
                start: cwd.to_path_buf(),
            }),
        }
    }

    /// The board of a linked worktree: the one a command run at the same place in the
    /// main worktree would find.
    fn discover_main(repo: Repo, cwd: &Path, copy: Option<PathBuf>) -> Result<Board> {
        let Some(start) = repo.in_main(cwd) else {
            return Err(Error::NotFound {
                what: format!(
                    "tavern board of the repository at {} (its common directory is bare, so it has no main worktree to keep the board in)",
                    repo.common_dir.display()
                ),
                hint: "name the board in TAVERN_BOARD=DIR".into(),
            });
        };
        let main = repo.main.clone().unwrap_or_default();
        for dir in start.ancestors() {
            if is_board(dir) {
                let root = dir.join(BOARD_DIR);
                return Board::open(&root).map(|b| {
                    b.with_found(Found {
                        how: How::Worktree,
                        repo: Some(repo),
                        ignored_copy: copy,
                    })
                });
            }
        }
        let copy_note = copy
            .map(|c| format!("; the checked-out copy {} is not used, so that every worktree shares one board", c.display()))
            .unwrap_or_default();
        Err(Error::NotFound {
            what: format!(
                "tavern board in the main worktree {} (this is a linked worktree of it{copy_note})",
                main.display()
            ),
            hint: crate::msg!(
                "create it with `",
                crate::error::Command::Init(main.display().to_string()),
                "`, check out the branch that holds it there, or name the board in TAVERN_BOARD=DIR"
            ),
        })
    }

    /// Opens the board whose `.tavern` directory is `root`, recreating the directories
    /// git does not keep (a fresh clone of a committed board has no empty `tasks/`).
    pub fn open(root: &Path) -> Result<Board> {
        let path = layout::board_yaml(root);
        let text = std::fs::read_to_string(&path).map_err(|e| Error::io(&path, "read", e))?;
        let config =
            parse_config_kept(root, &text).map_err(|problem| Error::invalid_doc(&path, problem))?;
        for d in KEPT_DIRS {
            let dir = root.join(d);
            if std::fs::symlink_metadata(&dir).is_err() {
                // Best effort: a read-only board still reads; a write says what failed.
                let _ = std::fs::create_dir_all(&dir);
            }
        }
        Ok(Board {
            root: root.to_path_buf(),
            config,
            found: Found::default(),
        })
    }

    fn with_found(mut self, found: Found) -> Board {
        self.found = found;
        self
    }

    pub fn region_dir(&self, region: Region) -> PathBuf {
        layout::region_dir(&self.root, region)
    }

    pub fn doc_path(&self, region: Region, id: &str) -> PathBuf {
        layout::doc(&self.root, region, id)
    }

    /// Where archived documents of a region live: `archive/<region>/`.
    pub fn archive_dir(&self, region: Region) -> PathBuf {
        layout::archive_dir(&self.root, region)
    }

    /// Does a task with this id exist, on the board or in the archive?
    pub fn task_exists(&self, id: &str) -> bool {
        crate::id::validate(id).is_ok()
            && (std::fs::symlink_metadata(self.doc_path(Region::Tasks, id)).is_ok()
                || std::fs::symlink_metadata(
                    self.archive_dir(Region::Tasks).join(format!("{id}.md")),
                )
                .is_ok())
    }

    /// The project the board belongs to: the directory holding `.tavern`, where commands
    /// tavern starts (completion checks, knowledge sources) run.
    pub fn project(&self) -> &Path {
        self.root.parent().unwrap_or(&self.root)
    }

    pub fn state_dir(&self) -> PathBuf {
        layout::state_dir(&self.root)
    }

    pub fn log_path(&self) -> PathBuf {
        layout::log(&self.root)
    }

    pub fn pause_path(&self) -> PathBuf {
        layout::pause(&self.root)
    }

    /// The reason inside control/PAUSE when the board is paused.
    pub fn paused(&self) -> Option<String> {
        match self.pause_text() {
            PauseFile::Missing => None,
            PauseFile::NotAFile => Some(
                "control/PAUSE is not a regular file (a symbolic link?): it pauses the board, but tavern does not read it".into(),
            ),
            PauseFile::Text(text) if text.trim().is_empty() => {
                Some("no reason given in control/PAUSE".into())
            }
            PauseFile::Text(text) => Some(text.trim().to_string()),
        }
    }

    /// What `control/PAUSE` holds. A symlink or anything else that is not a regular file
    /// is never followed or read: its target could be any file on the machine, and the
    /// reason is printed and logged. A reason is short: only its first 4 KiB are read.
    pub fn pause_text(&self) -> PauseFile {
        use std::io::Read;
        let path = self.pause_path();
        match std::fs::symlink_metadata(&path) {
            Err(_) => PauseFile::Missing,
            Ok(meta) if !meta.file_type().is_file() => PauseFile::NotAFile,
            Ok(_) => {
                let mut bytes = Vec::new();
                match std::fs::File::open(&path).and_then(|f| f.take(4096).read_to_end(&mut bytes))
                {
                    Ok(_) => PauseFile::Text(String::from_utf8_lossy(&bytes).into_owned()),
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => PauseFile::Missing,
                    Err(_) => PauseFile::NotAFile,
                }
            }
        }
    }

    /// The template for new documents of a region: the board's own, else the built-in.
    pub fn template(&self, region: Region) -> String {
        std::fs::read_to_string(layout::template(&self.root, region.kind())).unwrap_or_else(|_| {
            TEMPLATES
                .iter()
                .find(|(k, _)| *k == region.kind())
                .map(|(_, t)| t.to_string())
                .unwrap_or_default()
        })
    }

    /// A path relative to the board root, with `/` separators, for messages and the log.
    pub fn rel(&self, path: &Path) -> String {
        layout::rel(&self.root, path)
    }
}

/// Reads board.yaml. Every required setting must be present (the default file has them
/// all), so a typo in one is an error rather than a silent default. A setting this tavern
/// does not know is ignored ([`unknown_settings`] names it for `tavern check`): clones
/// share board.yaml through git, and one running an older tavern must still work on a
/// board whose file a newer one wrote. (A board is opened through [`Board::open`], which
/// may take the YAML as parsed before.)
#[cfg(test)]
pub fn parse_config(text: &str) -> std::result::Result<Config, String> {
    config_of(yaml_of(text)?)
}

/// The settings in board.yaml `text` this tavern does not know (`watch.keepr`), sorted,
/// which it ignores: a newer tavern's, or misspelled. Empty when the text does not parse (opening
/// the board says why).
pub fn unknown_settings(text: &str) -> Vec<String> {
    let Ok(value) = yaml_of(text) else {
        return Vec::new();
    };
    let mut unknown = Vec::new();
    let _: std::result::Result<Config, _> =
        serde_ignored::deserialize(value, |path| unknown.push(path.to_string()));
    unknown.sort();
    unknown
}

/// board.yaml's YAML, as data (the part of reading it that costs: most of a hook's work).
fn yaml_of(text: &str) -> std::result::Result<serde_json::Value, String> {
    crate::yaml::parse_value(text, YamlLimits::default())
        .map_err(|e| format!("line {}: {}", e.line, e.message))
}

/// Reads board.yaml as [`parse_config`] does, taking its YAML as this same program parsed
/// the same text before, when `.state/` keeps that ([`layout::parsed_config`]). Only the
/// YAML parse is skipped: the settings are read and checked from its result every time,
/// so a board.yaml gives the same configuration, or the same error, either way.
fn parse_config_kept(root: &Path, text: &str) -> std::result::Result<Config, String> {
    let path = layout::parsed_config(root);
    let program = program_identity();
    if let Some(config) = program.as_deref().and_then(|p| kept::load(&path, p, text)) {
        return checked(config);
    }
    let value = yaml_of(text)?;
    let kept = program.is_some().then(|| value.clone());
    let config = config_of(value)?;
    // Only a valid board.yaml is kept (an invalid one is read again, and refused again).
    if let (Some(program), Some(value)) = (program, kept) {
        kept::save(&path, &program, text, &value);
    }
    Ok(config)
}

/// Which program this is: its version and its executable's size, inode and modification
/// time. A rebuilt or upgraded tavern is another program, which parses board.yaml again.
fn program_identity() -> Option<String> {
    #[cfg(target_os = "linux")]
    let meta = std::fs::metadata("/proc/self/exe").ok()?;
    #[cfg(not(target_os = "linux"))]
    let meta = std::fs::metadata(std::env::current_exe().ok()?).ok()?;
    let mtime = crate::file::mtime_nanos(&meta)?;
    #[cfg(unix)]
    let inode = std::os::unix::fs::MetadataExt::ino(&meta);
    #[cfg(not(unix))]
    let inode = 0;
    Some(format!(
        "tavern {} {} {inode} {mtime}",
        env!("CARGO_PKG_VERSION"),
        meta.len()
    ))
}

/// board.yaml's YAML as a program parsed it: `{"program", "text", "yaml"}`, taken only by
/// the same program for the same text, byte for byte. A cache: written without a sync,
/// and anything unreadable, other or missing is parsed again.
mod kept {
    use std::path::Path;

    use serde::{Deserialize, Serialize};
    use serde_json::Value;

    /// Read straight into the settings: the same as reading `yaml` as a `Value` and the
    /// settings from that (what a fresh parse does), without building the `Value`.
    #[derive(Deserialize)]
    struct Kept {
        program: String,
        text: String,
        yaml: super::Config,
    }

    #[derive(Serialize)]
    struct Keep<'a> {
        program: &'a str,
        text: &'a str,
        yaml: &'a Value,
    }

    /// A file this small is all a copy of board.yaml's parse can be; a bigger one is not read.
    const MAX_BYTES: u64 = 1 << 20;

    pub fn load(path: &Path, program: &str, text: &str) -> Option<super::Config> {
        use std::io::Read;
        let mut bytes = Vec::new();
        std::fs::File::open(path)
            .and_then(|f| f.take(MAX_BYTES).read_to_end(&mut bytes))
            .ok()?;
        let k: Kept = serde_json::from_slice(&bytes).ok()?;
        (k.program == program && k.text == text).then_some(k.yaml)
    }

    pub fn save(path: &Path, program: &str, text: &str, yaml: &Value) {
        let Ok(bytes) = serde_json::to_vec(&Keep {
            program,
            text,
            yaml,
        }) else {
            return;
        };
        // Best effort: a board without `.state/` (a fresh clone), or read-only, parses again.
        if path.parent().is_some_and(Path::is_dir) {
            let _ = crate::file::write(path, &bytes, crate::file::Durability::Cache);
        }
    }
}

/// The settings of board.yaml's YAML, checked.
fn config_of(value: serde_json::Value) -> std::result::Result<Config, String> {
    checked(serde_json::from_value(value).map_err(|e| format!("{e}"))?)
}

/// The settings, if they hold together: the checks beyond their shape.
fn checked(config: Config) -> std::result::Result<Config, String> {
    let problems = config.workflow.problems();
    if !problems.is_empty() {
        return Err(problems.join("; "));
    }
    if crate::time::parse_duration(&config.watch.rate_window)
        .is_none_or(|d| d <= chrono::Duration::zero())
    {
        return Err(format!(
            "watch.rate_window '{}' is not a duration like 10m or 1h",
            config.watch.rate_window
        ));
    }
    if crate::time::parse_duration(&config.watch.keep_runs)
        .is_none_or(|d| d <= chrono::Duration::zero())
    {
        return Err(format!(
            "watch.keep_runs '{}' is not a duration like 7d or 12h",
            config.watch.keep_runs
        ));
    }
    if crate::time::parse_duration(&config.watch.keeper_idle)
        .is_none_or(|d| d <= chrono::Duration::zero())
    {
        return Err(format!(
            "watch.keeper_idle '{}' is not a duration like 10m or 1h",
            config.watch.keeper_idle
        ));
    }
    if config.watch.max_chain == 0 || config.watch.max_per_doc == 0 {
        return Err("watch.max_chain and watch.max_per_doc must be at least 1".into());
    }
    if crate::time::parse_duration(&config.archive_agents_after).is_none() {
        return Err(format!(
            "archive_agents_after '{}' is not a duration like 1d or 12h",
            config.archive_agents_after
        ));
    }
    if crate::time::parse_duration(&config.lease).is_none() {
        return Err(format!(
            "lease '{}' is not a duration like 5m or 1h",
            config.lease
        ));
    }
    Ok(config)
}

/// What `init` did: the paths it created, relative to the project.
#[derive(Debug, Default)]
pub struct InitReport {
    pub root: PathBuf,
    pub created: Vec<String>,
}

/// Creates the board at `project/.tavern`, adding whatever is missing and never touching
/// a file that exists.
pub fn init(project: &Path) -> Result<InitReport> {
    let root = project.join(BOARD_DIR);
    let mut report = InitReport {
        root: root.clone(),
        created: Vec::new(),
    };
    for d in layout::INIT_DIRS {
        let path = root.join(d);
        if !path.is_dir() {
            std::fs::create_dir_all(&path).map_err(|e| Error::io(&path, "create directory", e))?;
            if !d.is_empty() && !d.starts_with(layout::STATE_DIR) {
                report.created.push(format!("{d}/"));
            }
        }
    }
    let mut files: Vec<(String, &str)> = vec![
        (layout::BOARD_YAML.into(), DEFAULT_BOARD_YAML),
        (layout::GITIGNORE.into(), layout::GITIGNORE_TEXT),
        (layout::GITATTRIBUTES.into(), layout::GITATTRIBUTES_TEXT),
        (layout::LOG.into(), ""),
    ];
    for (kind, text) in TEMPLATES {
        files.push((layout::rel(&root, &layout::template(&root, kind)), text));
    }
    for (rel, text) in files {
        let path = root.join(&rel);
        // Never over a file that is there (init again keeps what the user changed), whole,
        // and on disk once init says it made the board.
        if crate::file::create(&path, text.as_bytes(), crate::file::Durability::Durable)? {
            report.created.push(rel);
        }
    }
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_config_parses() {
        let c = parse_config(DEFAULT_BOARD_YAML).unwrap();
        assert_eq!(c.workflow.initial, "pending");
        assert_eq!(c.workflow.transition_to("review", "done"), Some("approve"));
        assert_eq!(
            c.workflow.allowed_from("pending"),
            ["claim", "fail", "cancel"]
        );
        assert_eq!(c.workflow.allowed_from("done"), ["reopen"]);
    }

    /// What the kept YAML gives, as text: the settings (Config has no `PartialEq`).
    fn kept(root: &Path, text: &str) -> std::result::Result<String, String> {
        parse_config_kept(root, text).map(|c| format!("{c:?}"))
    }

    #[test]
    fn a_kept_parse_gives_the_same_config_and_is_taken_only_for_the_same_text_and_program() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir(root.join(".state")).unwrap();
        let file = layout::parsed_config(root);
        let fresh = format!("{:?}", parse_config(DEFAULT_BOARD_YAML).unwrap());
        // Parsed, then kept; then taken from what was kept: the same settings.
        assert_eq!(kept(root, DEFAULT_BOARD_YAML).unwrap(), fresh);
        assert!(file.is_file());
        assert_eq!(kept(root, DEFAULT_BOARD_YAML).unwrap(), fresh);
        // It is taken: a planted copy of the same text and program decides.
        let program = program_identity().unwrap();
        let other = DEFAULT_BOARD_YAML.replace("lease: 5m", "lease: 2h");
        let plant = |program: &str, text: &str| {
            let bytes = serde_json::to_vec(&serde_json::json!({
                "program": program, "text": text, "yaml": yaml_of(&other).unwrap()
            }))
            .unwrap();
            std::fs::write(&file, bytes).unwrap();
        };
        plant(&program, DEFAULT_BOARD_YAML);
        assert!(
            kept(root, DEFAULT_BOARD_YAML)
                .unwrap()
                .contains("lease: \"2h\"")
        );
        // Another text (one byte more), or another program: parsed again, and kept anew.
        let edited = format!("{DEFAULT_BOARD_YAML}\n");
        assert_eq!(kept(root, &edited).unwrap(), fresh);
        let now: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
        assert_eq!(now["text"], edited.as_str());
        assert_eq!(now["program"], program.as_str());
        plant("tavern 0.0.0 1 2 3", DEFAULT_BOARD_YAML);
        assert_eq!(kept(root, DEFAULT_BOARD_YAML).unwrap(), fresh);
        // Torn or not JSON: parsed again.
        std::fs::write(&file, "{\"program\"").unwrap();
        assert_eq!(kept(root, DEFAULT_BOARD_YAML).unwrap(), fresh);
        // Without `.state/`, nothing is kept and the board reads the same.
        let bare = tempfile::tempdir().unwrap();
        assert_eq!(kept(bare.path(), DEFAULT_BOARD_YAML).unwrap(), fresh);
        assert!(!layout::parsed_config(bare.path()).exists());
    }

    #[test]
    fn an_invalid_board_yaml_is_refused_the_same_each_time_and_never_kept() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir(root.join(".state")).unwrap();
        let file = layout::parsed_config(root);
        for bad in [
            DEFAULT_BOARD_YAML.replace("lease: 5m", "lease: soon"),
            DEFAULT_BOARD_YAML.replace("schema: 1", "schema: [1"),
            DEFAULT_BOARD_YAML.replace("to: review", "to: reviewing"),
        ] {
            let want = parse_config(&bad).unwrap_err();
            assert_eq!(kept(root, &bad).unwrap_err(), want);
            assert_eq!(kept(root, &bad).unwrap_err(), want);
            assert!(!file.exists(), "{want}");
        }
        // A valid board.yaml kept, then broken: the broken text is parsed and refused.
        kept(root, DEFAULT_BOARD_YAML).unwrap();
        let bad = DEFAULT_BOARD_YAML.replace("lease: 5m", "lease: soon");
        assert_eq!(
            kept(root, &bad).unwrap_err(),
            "lease 'soon' is not a duration like 5m or 1h"
        );
    }

    #[test]
    fn unknown_settings_are_ignored_and_named_and_known_ones_are_not() {
        assert!(unknown_settings(DEFAULT_BOARD_YAML).is_empty());
        let commented = DEFAULT_BOARD_YAML
            .replace("  # keeper: auto\n", "  keeper: never\n")
            .replace("  # keeper_idle: 10m\n", "  keeper_idle: 1h\n");
        assert!(unknown_settings(&commented).is_empty());
        let text = DEFAULT_BOARD_YAML.replace("watch:\n", "watch:\n  keepr: always\n")
            + "colour: red\nfields_x: []\n";
        let config = parse_config(&text).expect("unknown settings are ignored");
        assert_eq!(config.watch.keeper, KeeperMode::Auto);
        assert_eq!(
            unknown_settings(&text),
            ["colour", "fields_x", "watch.keepr"]
        );
        assert!(unknown_settings("a: [").is_empty());
    }

    #[test]
    fn broken_workflow_is_refused() {
        let bad = DEFAULT_BOARD_YAML.replace("to: review", "to: reviewing");
        let e = parse_config(&bad).unwrap_err();
        assert!(
            e.contains("'reviewing', which is not in workflow.states"),
            "{e}"
        );
    }
}
