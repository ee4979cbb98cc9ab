//! `tavern setup CLIENT`: makes an agent client work with the board. Hooks register the
//! session as an agent at its start (the client process holding its claims) and give it
//! the board summary, heartbeat on tool use, give the summary again after a compaction and
//! deregister at its end; `--mcp` adds the MCP server; a short section on the agent loop
//! goes into AGENTS.md or CLAUDE.md. Everything merges into what is there, a second run
//! changes nothing, `--dry-run` shows the change and `--remove` undoes it.

mod check;
pub mod clients;
pub mod guard;
pub mod hook;
mod merge;

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::Args;
use serde_json::json;

use tavern::api::{Error, Result};

#[derive(Debug, Args)]
pub struct SetupArgs {
    /// The client: claude (Claude Code), codex (Codex CLI) or opencode
    #[arg(value_parser = ["claude", "codex", "opencode"], required_unless_present_any = ["check", "pre_commit"])]
    pub client: Option<String>,
    /// Instead of a client: a git pre-commit hook that refuses to commit a path another
    /// agent holds (in this repository's hooks directory)
    #[arg(long, conflicts_with_all = ["client", "check", "mcp", "user"])]
    pub pre_commit: bool,
    /// Tell, per client (or for CLIENT), whether tavern's hooks, plugin and MCP server are
    /// installed, trusted by the client and reachable; change nothing
    #[arg(long, conflicts_with_all = ["dry_run", "remove", "mcp"])]
    pub check: bool,
    /// Also add the MCP server (`tavern mcp`) to the client's configuration
    #[arg(long)]
    pub mcp: bool,
    /// Show what would change (as diffs) and change nothing
    #[arg(long)]
    pub dry_run: bool,
    /// Take out everything setup added; a file untouched since comes back byte for byte
    #[arg(long)]
    pub remove: bool,
    /// The user's configuration (every project) instead of this project's
    #[arg(long)]
    pub user: bool,
}

/// The new content of a file from its current one (None: no file), with tavern's part
/// (true) or without it (false).
pub type Merge = Box<dyn Fn(Option<&str>, bool) -> Result<Option<String>>>;

/// One file setup manages, and how its content changes.
pub struct Plan {
    pub path: PathBuf,
    /// What it holds of tavern's, for the report.
    pub what: &'static str,
    pub merge: Merge,
    /// The agent-loop notes, a file more than one client may share (Codex and OpenCode
    /// both read the project's AGENTS.md).
    pub notes: bool,
}

/// The repository's hooks directory (`core.hooksPath` if set).
fn git_hooks_dir(cwd: &Path) -> Result<PathBuf> {
    let out = std::process::Command::new("git")
        .args(["rev-parse", "--path-format=absolute", "--git-path", "hooks"])
        .current_dir(cwd)
        .output()
        .map_err(|e| Error::io("git", "run", e))?;
    if !out.status.success() {
        return Err(Error::usage(format!(
            "setup --pre-commit needs a git repository: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    Ok(PathBuf::from(String::from_utf8_lossy(&out.stdout).trim()))
}

fn make_executable(path: &Path) -> Result<()> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755))
        .map_err(|e| Error::io(path, "make executable", e))
}

/// Where backups of the files as they were before setup live, so that `--remove` can give
/// back the very bytes.
fn backup_dir(board: Option<&tavern::api::Board>, home: &Path, user: bool) -> PathBuf {
    match (user, board) {
        (false, Some(b)) => tavern::api::board::setup_backups(b),
        _ => std::env::var_os("XDG_STATE_HOME")
            .map(PathBuf::from)
            .filter(|p| p.is_absolute())
            .unwrap_or_else(|| home.join(".local").join("state"))
            .join("tavern")
            .join("setup"),
    }
}

fn backup_key(path: &Path) -> String {
    path.to_string_lossy()
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '.' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

fn read(path: &Path) -> Result<Option<String>> {
    match std::fs::read(path) {
        Ok(bytes) => String::from_utf8(bytes).map(Some).map_err(|_| {
            Error::input(format!(
                "{}: not UTF-8 text; nothing changed",
                path.display()
            ))
        }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(Error::io(path, "read", e)),
    }
}

fn write(path: &Path, text: Option<&str>) -> Result<()> {
    match text {
        Some(t) => {
            if let Some(dir) = path.parent() {
                std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, "create directory", e))?;
            }
            // The user's own configuration: whole, and on disk once setup says it is.
            tavern::api::write_file(path, t.as_bytes())
        }
        None => match std::fs::remove_file(path) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(Error::io(path, "remove", e)),
        },
    }
}

/// The backup of one file: its bytes before setup (None: it did not exist) and the bytes
/// setup left in it.
struct Backup {
    orig: PathBuf,
    absent: PathBuf,
    ours: PathBuf,
}

impl Backup {
    fn of(dir: &Path, path: &Path) -> Backup {
        let key = backup_key(path);
        Backup {
            orig: dir.join(format!("{key}.orig")),
            absent: dir.join(format!("{key}.absent")),
            ours: dir.join(format!("{key}.ours")),
        }
    }

    /// The original content, when the file holds exactly what setup left in it.
    fn restorable(&self, current: Option<&str>) -> Option<Option<String>> {
        let ours = std::fs::read_to_string(&self.ours).ok();
        if ours.as_deref() != current && !(ours.is_none() && current.is_none()) {
            return None;
        }
        if self.absent.exists() {
            return Some(None);
        }
        std::fs::read_to_string(&self.orig).ok().map(Some)
    }

    fn save(&self, orig: Option<&str>, ours: Option<&str>) -> Result<()> {
        self.forget();
        match orig {
            Some(o) => write(&self.orig, Some(o))?,
            None => write(&self.absent, Some(""))?,
        }
        write(&self.ours, Some(ours.unwrap_or("")))
    }

    fn forget(&self) {
        for p in [&self.orig, &self.absent, &self.ours] {
            let _ = std::fs::remove_file(p);
        }
    }

    fn exists(&self) -> bool {
        self.ours.exists()
    }
}

pub fn run(
    cwd: &Path,
    board_flag: Option<&Path>,
    json_out: bool,
    a: SetupArgs,
) -> Result<ExitCode> {
    let home = std::env::var_os("HOME")
        .map(PathBuf::from)
        .filter(|p| p.is_absolute())
        .ok_or_else(|| Error::usage("setup needs HOME to find the client's configuration"))?;
    let board = match tavern::api::Board::discover(board_flag, cwd) {
        Ok(b) => Some(b),
        Err(e) if a.user => {
            let _ = e;
            None
        }
        Err(e) => return Err(e),
    };
    let base = if a.user {
        home.clone()
    } else {
        board
            .as_ref()
            .map(|b| b.project().to_path_buf())
            .unwrap_or_else(|| cwd.to_path_buf())
    };
    if a.check {
        return check::run(a.client.as_deref(), a.user, &base, &home, json_out);
    }
    let client = a.client.clone().unwrap_or_default();
    let plans = if a.pre_commit {
        vec![clients::pre_commit(&git_hooks_dir(cwd)?)]
    } else {
        clients::plans(&client, a.user, &base, &home, a.mcp || a.remove)?
    };
    let backups = backup_dir(board.as_ref(), &home, a.user);
    let mut report = Vec::new();
    let mut diffs = String::new();
    for plan in &plans {
        let current = read(&plan.path)?;
        let backup = Backup::of(&backups, &plan.path);
        let (new, action) = if a.remove {
            match backup.restorable(current.as_deref()) {
                // A file setup created is removed, not "restored".
                Some(None) if backup.exists() => (None, "removed"),
                Some(orig) if backup.exists() => (orig, "restored"),
                _ => ((plan.merge)(current.as_deref(), false)?, "removed"),
            }
        } else {
            ((plan.merge)(current.as_deref(), true)?, "")
        };
        let shown = display(&plan.path, &base, &home, a.user);
        if a.remove && plan.notes {
            // Another client set up in the same scope reads the same notes: they stay, and
            // so does their backup, for the last client's --remove to restore.
            let users = clients::others_using(&client, &plan.path, a.user, &base, &home);
            if !users.is_empty() && new != current {
                report.push(
                    json!({"path": shown, "action": "kept", "what": plan.what, "used_by": users}),
                );
                continue;
            }
        }
        if new == current {
            report.push(json!({"path": shown, "action": "unchanged", "what": plan.what}));
            if a.remove && !a.dry_run {
                backup.forget();
            }
            continue;
        }
        let action = match (a.remove, &current, &new) {
            (true, _, _) => action,
            (false, None, _) => "created",
            (false, Some(_), _) => "updated",
        };
        if a.dry_run {
            diffs.push_str(&format!("--- {shown}\n+++ {shown}\n"));
            diffs.push_str(&tavern::api::history::text_diff(
                current.as_deref().unwrap_or(""),
                new.as_deref().unwrap_or(""),
            ));
        } else {
            if a.remove {
                write(&plan.path, new.as_deref())?;
                backup.forget();
                if new.is_none() {
                    prune_empty_dirs(&plan.path, &base, board.as_ref());
                }
            } else {
                // The bytes before setup are kept only while they hold nothing of tavern's
                // and the file has not been changed by hand since setup last wrote it.
                let untouched = backup.restorable(current.as_deref()).is_some();
                let clean = (plan.merge)(current.as_deref(), false)? == current;
                if clean && !backup.exists() {
                    write(&plan.path, new.as_deref())?;
                    backup.save(current.as_deref(), new.as_deref())?;
                } else if untouched && backup.exists() {
                    let orig = backup.restorable(current.as_deref()).flatten();
                    write(&plan.path, new.as_deref())?;
                    backup.save(orig.as_deref(), new.as_deref())?;
                } else {
                    write(&plan.path, new.as_deref())?;
                    backup.forget();
                }
            }
        }
        if a.pre_commit && new.is_some() && !a.dry_run {
            make_executable(&plan.path)?;
        }
        report.push(json!({"path": shown, "action": action, "what": plan.what}));
    }
    let next = if a.remove {
        Vec::new()
    } else {
        clients::next_steps(&client, a.user, a.mcp)
    };
    if json_out {
        let v = json!({"client": client, "scope": if a.user {"user"} else {"project"}, "dry_run": a.dry_run, "files": report, "next": next});
        out(&format!("{v}\n"))?;
    } else if a.dry_run {
        out(if diffs.is_empty() {
            "nothing would change\n"
        } else {
            &diffs
        })?;
    } else {
        let mut text = String::new();
        for r in &report {
            let users: Vec<&str> = r["used_by"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|u| u.as_str())
                .collect();
            let why = if users.is_empty() {
                String::new()
            } else {
                format!("; still set up for {}", users.join(", "))
            };
            text.push_str(&format!(
                "{} {} ({}{why})\n",
                r["action"].as_str().unwrap_or(""),
                r["path"].as_str().unwrap_or(""),
                r["what"].as_str().unwrap_or("")
            ));
        }
        for step in &next {
            text.push_str(&format!("next: {step}\n"));
        }
        out(&text)?;
    }
    Ok(ExitCode::SUCCESS)
}

/// Removes the directories above a removed file that it leaves empty (`.claude/`,
/// `.opencode/plugins/`), up to `base` and never the board's own directory.
fn prune_empty_dirs(file: &Path, base: &Path, board: Option<&tavern::api::Board>) {
    let mut dir = file.parent();
    while let Some(d) = dir {
        if d == base || !d.starts_with(base) || board.is_some_and(|b| d == b.root) {
            break;
        }
        // Fails, and so stops, at the first directory that still holds something.
        if std::fs::remove_dir(d).is_err() {
            break;
        }
        dir = d.parent();
    }
}

pub(crate) fn out(text: &str) -> Result<()> {
    std::io::Write::write_all(&mut std::io::stdout(), text.as_bytes())
        .map_err(|e| Error::io("stdout", "write to", e))
}

pub(crate) fn display(path: &Path, base: &Path, home: &Path, user: bool) -> String {
    if user && let Ok(rel) = path.strip_prefix(home) {
        return format!("~/{}", rel.display());
    }
    path.strip_prefix(base)
        .map(|p| p.display().to_string())
        .unwrap_or_else(|_| path.display().to_string())
}
