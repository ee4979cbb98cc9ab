//! Agents: cards under `control/agents/<id>.md` (tracked, human-readable) and heartbeats
//! under `.state/heartbeats/<id>` (runtime only, so liveness does not churn git). A
//! heartbeat is the file's modification time; every command run `--as` a registered agent
//! touches it.

use std::path::PathBuf;
use std::time::SystemTime;

use chrono::{DateTime, Utc};

use crate::board::Board;
use crate::doc::Document;
use crate::doc::edit::FieldEdit;
use crate::error::{Error, Result};
use crate::log::{self, Entry};
use crate::store;

/// The directory of agent cards.
pub fn cards_dir(board: &Board) -> PathBuf {
    crate::layout::agents_dir(&board.root)
}

pub fn card_path(board: &Board, id: &str) -> PathBuf {
    crate::layout::agent_card(&board.root, id)
}

fn heartbeat_path(board: &Board, id: &str) -> PathBuf {
    crate::layout::heartbeat(&board.root, id)
}

/// This machine's name, to tell whether an agent's recorded pid can be checked here.
pub fn host_name() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .or_else(|| std::env::var("HOSTNAME").ok())
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "localhost".to_string())
}

/// Is process `pid` alive on this machine?
pub fn pid_alive(pid: u32) -> bool {
    if std::path::Path::new("/proc/self").exists() {
        return std::path::Path::new(&format!("/proc/{pid}")).exists();
    }
    std::process::Command::new("kill")
        .args(["-0", &pid.to_string()])
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// A registered agent as read from its card and heartbeat.
#[derive(Clone, Debug)]
pub struct Agent {
    pub card: Document,
    /// The later of its heartbeat and its card's updated_at; the epoch if neither exists.
    pub last_seen: DateTime<Utc>,
}

impl Agent {
    pub fn id(&self) -> &str {
        &self.card.file_id
    }
    pub fn gone(&self) -> bool {
        self.card.status() == Some("gone")
    }
    pub fn host(&self) -> Option<&str> {
        self.card.str("host")
    }
    pub fn pid(&self) -> Option<u32> {
        self.card
            .get("pid")
            .and_then(|v| v.as_u64())
            .and_then(|p| u32::try_from(p).ok())
    }
    pub fn capabilities(&self) -> Vec<String> {
        self.card.list("capabilities")
    }
    /// Not seen within the lease and, if it runs on this host, its process is gone. Last
    /// seen more than [`AHEAD_TOLERANCE`] ahead of `now` (the clock was set back since),
    /// its lease cannot be judged, and would otherwise run until the clock caught up: it
    /// is then stale only if its recorded process, on this host, is gone.
    pub fn stale(&self, board: &Board, now: DateTime<Utc>) -> bool {
        let ahead = self.last_seen - now > AHEAD_TOLERANCE;
        if !ahead && now - self.last_seen <= lease(board) {
            return false;
        }
        match (self.host(), self.pid()) {
            (Some(h), Some(pid)) if h == host_name() => !pid_alive(pid),
            _ => !ahead,
        }
    }
}

/// The one rule of who may claim what: the `needs` of `task` that `capabilities` (a
/// registered agent's; None for an actor that never registered, who is not held to
/// capabilities) do not cover. Empty: the actor may claim it. `claim ID`, `claim --next`
/// and `ready` all ask this.
pub fn missing_needs(task: &Document, capabilities: Option<&[String]>) -> Vec<String> {
    missing(&task.list("needs"), capabilities)
}

/// [`missing_needs`] of a task whose `needs` are `needs` (as [`Document::list`] reads
/// them: what the read index's head of a task keeps).
pub fn missing<S: AsRef<str>>(needs: &[S], capabilities: Option<&[String]>) -> Vec<String> {
    let Some(caps) = capabilities else {
        return Vec::new();
    };
    needs
        .iter()
        .map(AsRef::as_ref)
        .filter(|n| !caps.iter().any(|c| c == n))
        .map(str::to_string)
        .collect()
}

/// The capabilities `actor` is held to: its card's, or None when it never registered.
pub fn held_to(board: &Board, actor: &str) -> Result<Option<Vec<String>>> {
    Ok(read(board, actor)?.map(|a| a.capabilities()))
}

/// An agent last seen further ahead of the clock than this was seen before the clock was
/// set back (less is a file system's rounded stamp).
pub const AHEAD_TOLERANCE: chrono::Duration = chrono::Duration::seconds(2);

pub fn lease(board: &Board) -> chrono::Duration {
    crate::time::parse_duration(&board.config.lease).unwrap_or_else(|| chrono::Duration::minutes(5))
}

fn parse_card(board: &Board, id: &str, text: String) -> Result<Document> {
    let path = card_path(board, id);
    let doc = Document::parse(
        crate::doc::Region::Tasks,
        id,
        text,
        board.config.yaml_limits(),
    )
    .map_err(|e| Error::invalid_doc(board.rel(&path), e.to_string()))?;
    Ok(doc)
}

/// Reads one agent, or None if it has no card.
pub fn read(board: &Board, id: &str) -> Result<Option<Agent>> {
    let path = card_path(board, id);
    let text = match store::read_text(&path, board.config.limits.max_doc_bytes) {
        Ok(t) => t,
        Err(Error::NotFound { .. }) => return Ok(None),
        Err(e) => return Err(e),
    };
    let card = parse_card(board, id, text)?;
    let from_card = card
        .str("updated_at")
        .and_then(|t| crate::time::parse_time(t, Utc::now()))
        .unwrap_or(DateTime::<Utc>::UNIX_EPOCH);
    let beat = std::fs::metadata(heartbeat_path(board, id))
        .and_then(|m| m.modified())
        .ok()
        .map(DateTime::<Utc>::from);
    let last_seen = beat.map_or(from_card, |b| b.max(from_card));
    Ok(Some(Agent { card, last_seen }))
}

/// Every registered agent (cards that cannot be read are skipped, with a notice).
pub fn all(board: &Board) -> Result<Vec<Agent>> {
    let dir = cards_dir(board);
    let mut out = Vec::new();
    let Ok(entries) = std::fs::read_dir(&dir) else {
        return Ok(out);
    };
    let mut ids: Vec<String> = entries
        .flatten()
        .filter_map(|e| {
            e.file_name()
                .to_str()
                .and_then(|n| n.strip_suffix(".md"))
                .map(str::to_string)
        })
        .filter(|n| !n.starts_with('.') && crate::id::validate(n).is_ok())
        .collect();
    ids.sort();
    for id in ids {
        match read(board, &id) {
            Ok(Some(a)) => out.push(a),
            Ok(None) => {}
            Err(e) => crate::notice::report(crate::notice::Notice::AgentCardSkipped {
                problem: e.to_string(),
            }),
        }
    }
    Ok(out)
}

/// Touches the heartbeat of `id` if it is a registered agent. Cheap: one stat, one open.
pub fn heartbeat_if_registered(board: &Board, id: &str) {
    if crate::id::validate(id).is_ok() && card_path(board, id).is_file() {
        let _ = heartbeat(board, id);
    }
}

pub fn heartbeat(board: &Board, id: &str) -> Result<()> {
    let path = heartbeat_path(board, id);
    let open = || {
        std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)
    };
    let file = match open() {
        Ok(f) => f,
        Err(_) => {
            let dir = path.parent().unwrap_or(&path).to_path_buf();
            std::fs::create_dir_all(&dir).map_err(|e| Error::io(&dir, "create directory", e))?;
            open().map_err(|e| Error::io(&path, "write", e))?
        }
    };
    file.set_modified(SystemTime::now())
        .map_err(|e| Error::io(&path, "touch", e))
}

/// Writes or refreshes an agent card.
pub fn register(
    board: &Board,
    actor: &str,
    name: &str,
    capabilities: &[String],
    pid: u32,
) -> Result<(Document, Entry)> {
    crate::id::validate(name)?;
    let path = card_path(board, name);
    let (after, entry) = store::change(board, &[crate::layout::agent_lock(name)], || {
        let now = crate::time::stamp_millis(crate::time::now());
        let existing = match store::read_text(&path, board.config.limits.max_doc_bytes) {
            Ok(t) => Some(parse_card(board, name, t)?),
            Err(Error::NotFound { .. }) => None,
            Err(e) => return Err(e),
        };
        let base = match &existing {
            Some(d) => d.clone(),
            None => parse_card(board, name, format!("---\nid: {name}\nname: {name}\n---\n"))?,
        };
        let rev = base.rev() + 1;
        let mut edits = vec![
            FieldEdit::Set("capabilities".into(), capabilities.to_vec().into()),
            FieldEdit::Set("status".into(), "active".into()),
            FieldEdit::Set("host".into(), host_name().into()),
            FieldEdit::Set("pid".into(), pid.into()),
        ];
        if existing.is_none() {
            edits.push(FieldEdit::Set("registered_at".into(), now.clone().into()));
            edits.push(FieldEdit::Set("created_by".into(), actor.into()));
        }
        edits.push(FieldEdit::Set("updated_at".into(), now.into()));
        edits.push(FieldEdit::Set("rev".into(), rev.into()));
        let after = base
            .with_edits(&edits, None, board.config.yaml_limits())
            .map_err(|e| Error::input(e.to_string()))?;
        let note = if existing.is_some() {
            "registered again"
        } else {
            "registered"
        };
        let write = card_write(board, actor, &path, existing.as_ref(), &after, note);
        Ok((after, Some(write)))
    })?;
    heartbeat(board, name)?;
    Ok((after, entry.expect("a registration always writes the card")))
}

/// Marks an agent gone (its claims are released by the caller first).
pub fn mark_gone(board: &Board, actor: &str, id: &str) -> Result<Entry> {
    let path = card_path(board, id);
    let (_, entry) = store::change(board, &[crate::layout::agent_lock(id)], || {
        let text =
            store::read_text(&path, board.config.limits.max_doc_bytes).map_err(|e| match e {
                Error::NotFound { .. } => Error::NotFound {
                    what: format!("agent '{id}'"),
                    hint: crate::msg!(
                        "`",
                        crate::error::Command::Agents,
                        "` shows the registered agents"
                    ),
                },
                e => e,
            })?;
        let card = parse_card(board, id, text)?;
        let rev = card.rev() + 1;
        let edits = vec![
            FieldEdit::Set("status".into(), "gone".into()),
            FieldEdit::Set(
                "updated_at".into(),
                crate::time::stamp_millis(crate::time::now()).into(),
            ),
            FieldEdit::Set("rev".into(), rev.into()),
        ];
        let after = card
            .with_edits(&edits, None, board.config.yaml_limits())
            .map_err(|e| Error::input(e.to_string()))?;
        let write = card_write(board, actor, &path, Some(&card), &after, "deregistered");
        Ok(((), Some(write)))
    })?;
    let _ = std::fs::remove_file(heartbeat_path(board, id));
    Ok(entry.expect("a deregistration always writes the card"))
}

/// How long a card of an agent that is gone (deregistered, or stale: its lease over and its
/// process gone) stays in `control/agents/` before the sweep archives it.
pub fn keep_gone(board: &Board) -> chrono::Duration {
    crate::time::parse_duration(&board.config.archive_agents_after)
        .unwrap_or_else(|| chrono::Duration::days(1))
}

/// Moves the card of agent `id` to `archive/control/agents/`, where nothing reads it as an
/// agent, if it still is what `still_gone` says under the card's lock; logs the move.
pub fn archive_card(
    board: &Board,
    actor: &str,
    id: &str,
    why: &str,
    still_gone: impl Fn(&Agent) -> bool,
) -> Result<Option<Entry>> {
    let from = card_path(board, id);
    let to = crate::layout::archived_agent_card(&board.root, id);
    let (_, entry) = store::change(board, &[crate::layout::agent_lock(id)], || {
        let Some(agent) = read(board, id)? else {
            return Ok(((), None));
        };
        if !still_gone(&agent) {
            return Ok(((), None)); // It came back since the sweep looked.
        }
        // An older card of the same name in the archive gives way to this one: the log
        // keeps both.
        let mut steps = Vec::new();
        if let Ok(old) = std::fs::read(&to) {
            steps.push(store::Step::put(
                board.rel(&to),
                Some(&old[..]),
                agent.card.raw.as_bytes().to_vec(),
            ));
            steps.push(store::Step::remove(board.rel(&from)));
        } else {
            steps.push(store::Step::moved(board.rel(&from), board.rel(&to)));
        }
        let entry = Entry {
            actor: actor.into(),
            op: "move".into(),
            doc: board.rel(&from),
            rev: Some(agent.card.rev()),
            note: Some(format!("{why}: moved to {}", board.rel(&to))),
            ..Entry::default()
        };
        Ok(((), Some(store::Write { steps, entry })))
    })?;
    if entry.is_some() {
        let _ = std::fs::remove_file(heartbeat_path(board, id));
    }
    Ok(entry)
}

/// The change that replaces a card, logged as an `agent` entry.
fn card_write(
    board: &Board,
    actor: &str,
    path: &std::path::Path,
    before: Option<&Document>,
    after: &Document,
    note: &str,
) -> store::Write {
    let rel = board.rel(path);
    store::Write {
        steps: vec![store::Step::put(
            rel.clone(),
            before.map(|d| d.raw.as_bytes()),
            after.raw.as_bytes().to_vec(),
        )],
        entry: Entry {
            actor: actor.into(),
            op: "agent".into(),
            doc: rel,
            rev: Some(after.rev()),
            note: Some(note.into()),
            diff: Some(log::diff(before.map_or("", |d| &d.raw), &after.raw)),
            ..Entry::default()
        },
    }
}
