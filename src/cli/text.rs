//! The text printer: what each result looks like to a person at a terminal. One impl
//! of [`Render`] per result type, so the wording of every command's output is here.

use std::process::ExitCode;

use serde::Serialize;

use super::output::{self, cell, line, out};
use super::render::{Render, err_line, skipped_warnings};
use tavern::api::Entry;
use tavern::api::Listing;
use tavern::api::Result;
use tavern::api::agents::{AgentList, Deregistered, Heartbeat, Registered, Swept};
use tavern::api::board::{Archived, Checked, Initialised, PauseState, Problem, WouldArchive};
use tavern::api::docs::Shown;
use tavern::api::graph::{Deps, Node, Task};
use tavern::api::history::DocHistory;
use tavern::api::questions::{Answered, Asked};
use tavern::api::sources::{SourceList, SourcesChecked};
use tavern::api::summary::Summary;
use tavern::api::{Changed, Created};

impl Render for Listing {
    fn text(&self) -> Result<()> {
        if self.docs.is_empty() {
            return Ok(());
        }
        out(&output::doc_table(&self.docs))
    }

    fn warnings(&self) -> Vec<String> {
        skipped_warnings(&self.skipped)
    }

    fn warnings_after(&self) -> Vec<String> {
        output::forged_warnings(&self.docs)
    }
}

impl Render for Shown {
    fn text(&self) -> Result<()> {
        match self {
            Shown::Doc(doc) => out(&doc.raw),
            Shown::Solution { body, .. } => out(body),
        }
    }

    /// A forged decision is said before the file, which claims it.
    fn warnings(&self) -> Vec<String> {
        match self {
            Shown::Doc(doc) => output::forged_warnings(std::slice::from_ref(doc)),
            Shown::Solution { .. } => Vec::new(),
        }
    }
}

/// This clone's origin, once a command that shows log entries opened its board: its own
/// entries are shown by seq, other clones' as `ORIGIN:SEQ`.
static OWN_ORIGIN: std::sync::OnceLock<Option<String>> = std::sync::OnceLock::new();

pub fn set_own_origin(board: &tavern::api::Board) {
    let _ = OWN_ORIGIN.set(tavern::api::history::own_origin(board));
}

/// A log entry on one line (control characters blanked), as `log` and `events` show it.
pub fn entry_line(e: &Entry) -> String {
    let own = OWN_ORIGIN.get().and_then(Option::as_deref);
    let mut s = format!(
        "{} {} {} {} {}",
        tavern::api::history::entry_name(e, own),
        e.at,
        e.actor,
        e.op,
        e.doc
    );
    if let Some(t) = &e.transition {
        s.push_str(&format!(" {t}"));
    }
    match (&e.from, &e.to) {
        (Some(from), Some(to)) => s.push_str(&format!(" {from} -> {to}")),
        // An activation: started, then ok / failed / timed-out / killed.
        (None, Some(to)) => s.push_str(&format!(" {to}")),
        _ => {}
    }
    if let Some(event) = &e.event {
        s.push_str(&format!(" on {event}"));
    }
    if let Some(cause) = e.cause {
        s.push_str(&format!(" (seq {cause})"));
    }
    if let Some(rev) = e.rev {
        s.push_str(&format!(" rev {rev}"));
    }
    if e.force {
        s.push_str(" (forced)");
    }
    if let Some(note) = &e.note {
        s.push_str(&format!(" — {note}"));
    }
    cell(&s)
}

/// A log entry as `log`, `events` and `diff` print it: one JSON line each, or its line;
/// its diff (below the line, or as `diff` in JSON) only with `patch`.
pub struct EntryView<'a> {
    pub entry: &'a Entry,
    pub patch: bool,
}

impl Serialize for EntryView<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        if self.patch || self.entry.diff.is_none() {
            return self.entry.serialize(s);
        }
        let mut without = self.entry.clone();
        without.diff = None;
        without.serialize(s)
    }
}

impl Render for EntryView<'_> {
    fn text(&self) -> Result<()> {
        line(&super::style::entry_line(&entry_line(self.entry)))?;
        if self.patch
            && let Some(d) = &self.entry.diff
        {
            for l in d.lines() {
                line(&super::style::diff_line(l))?;
            }
        }
        Ok(())
    }
}

impl Render for DocHistory {
    fn text(&self) -> Result<()> {
        for (i, e) in self.entries.iter().enumerate() {
            if i > 0 {
                line("")?;
            }
            EntryView {
                entry: e,
                patch: true,
            }
            .text()?;
        }
        Ok(())
    }
}

impl Render for AgentList {
    fn text(&self) -> Result<()> {
        // Columns as wide as their widest cell, so three held ids or a long name do not
        // push the rest out of line.
        let or_dash = |s: String| if s.is_empty() { "-".to_string() } else { s };
        let cells: Vec<[String; 5]> = self
            .agents
            .iter()
            .map(|a| {
                [
                    cell(&a.id),
                    a.status.name().to_string(),
                    if a.last_seen == chrono::DateTime::<chrono::Utc>::UNIX_EPOCH {
                        "never".to_string()
                    } else {
                        tavern::api::time::ago(a.last_seen, self.now)
                    },
                    or_dash(a.holds.join(",")),
                    cell(&or_dash(a.capabilities.join(","))),
                ]
            })
            .collect();
        out(&output::table(
            ["AGENT", "STATUS", "SEEN", "HOLDS", "CAPABILITIES"],
            &cells,
        ))
    }
}

/// One line of a task graph: `ID [status] title`, indented by depth.
fn graph_line(t: &Task, depth: usize, repeated: bool, text: &mut String) {
    let status = t.status.as_deref().unwrap_or("missing");
    let title = t.title.as_deref().unwrap_or("");
    let more = if repeated {
        " (see above)"
    } else if t.archived {
        " (archived)"
    } else {
        ""
    };
    text.push_str(&format!(
        "{}{} [{status}] {title}{more}\n",
        "  ".repeat(depth),
        t.id
    ));
}

fn graph(nodes: &[Node], depth: usize, text: &mut String) {
    for n in nodes {
        graph_line(&n.task, depth, n.repeated, text);
        graph(&n.children, depth + 1, text);
    }
}

impl Render for Deps {
    fn text(&self) -> Result<()> {
        let mut text = String::new();
        graph_line(&self.task, 0, false, &mut text);
        for (nodes, heading) in [
            (&self.waits_for, "waits for:"),
            (&self.waited_on_by, "waited on by:"),
        ] {
            text.push_str(heading);
            if nodes.is_empty() {
                text.push_str(" nothing\n");
            } else {
                text.push('\n');
                graph(nodes, 1, &mut text);
            }
        }
        out(&text)
    }
}

impl Render for Node {
    fn text(&self) -> Result<()> {
        let mut text = String::new();
        graph(std::slice::from_ref(self), 0, &mut text);
        line(text.trim_end())
    }
}

impl Render for Summary {
    fn text(&self) -> Result<()> {
        out(&self.markdown(&super::errors::Cli))
    }

    fn warnings(&self) -> Vec<String> {
        skipped_warnings(&self.skipped)
    }
}

/// A created document: its id, so `id=$(tavern new …)` works.
impl Render for Created {
    fn text(&self) -> Result<()> {
        line(self.doc.id())
    }

    /// Open findings that look like a new one, named on stderr (JSON: `similar`).
    fn warnings_after(&self) -> Vec<String> {
        self.similar
            .iter()
            .map(|s| {
                output::cell(&format!(
                    "{} looks like open finding {} (similarity {:.2}): {}",
                    self.doc.id(),
                    s.id,
                    s.similarity,
                    s.title
                ))
            })
            .collect()
    }
}

/// A changed document as `VERB ID (rev N, status)`; the verb is the command's.
#[derive(Serialize)]
#[serde(transparent)]
pub struct Done<'a> {
    pub changed: &'a Changed,
    #[serde(skip)]
    pub verb: &'a str,
}

impl Render for Done<'_> {
    fn text(&self) -> Result<()> {
        let doc = self.changed.doc();
        let status = doc.status().map(|s| format!(", {s}")).unwrap_or_default();
        line(&format!(
            "{} {} (rev {}{status})",
            self.verb,
            doc.id(),
            doc.rev()
        ))
    }

    fn warnings(&self) -> Vec<String> {
        match &self.changed.unconfirmed_by {
            Some(remote) => vec![format!(
                "{}: changed on this clone only; the remote '{remote}' was not asked, so another machine may claim it too (the remote hears of it at its next confirmed move)",
                self.changed.doc().id()
            )],
            None => Vec::new(),
        }
    }
}

impl Render for Asked {
    fn text(&self) -> Result<()> {
        self.created.text()
    }

    fn warnings(&self) -> Vec<String> {
        self.warnings.clone()
    }
}

impl Render for tavern::api::questions::Waited {
    fn text(&self) -> Result<()> {
        use tavern::api::Decision;
        use tavern::api::questions::Waited;
        let text = match self {
            Waited::Decided { id, decision } => match decision {
                Decision::Approved { by, .. } => format!("approved {id} by {by}"),
                Decision::Denied { by, .. } => format!("denied {id} by {by}"),
                other => format!("{id}: {}", other.describe()),
            },
            Waited::Answered {
                id,
                answer,
                answered_by,
            } => format!(
                "answered {id} by {}: {}",
                answered_by.as_deref().unwrap_or("?"),
                answer.as_deref().unwrap_or("")
            ),
        };
        line(&output::cell(&text))
    }
}

impl Render for Answered {
    fn text(&self) -> Result<()> {
        let doc = &self.outcome.doc;
        line(&format!("answered {} (rev {})", doc.id(), doc.rev()))?;
        for t in &self.unblocked {
            line(&format!("unblocked {t}"))?;
        }
        Ok(())
    }

    fn warnings(&self) -> Vec<String> {
        self.warnings.clone()
    }
}

impl Render for Registered {
    fn text(&self) -> Result<()> {
        line(&format!(
            "registered {} (pid {}, lease {})",
            self.card.id(),
            self.pid,
            self.lease
        ))
    }
}

impl Render for Heartbeat {
    fn text(&self) -> Result<()> {
        Ok(())
    }

    fn warnings(&self) -> Vec<String> {
        self.lost
            .iter()
            .map(|task| {
                format!(
                    "{task}: no longer held by {} on the remote (taken over, released or moved); `tavern claim {task}` to learn who holds it",
                    self.agent
                )
            })
            .collect()
    }
}

impl Render for Deregistered {
    fn text(&self) -> Result<()> {
        line(&format!(
            "deregistered {}; released {}",
            self.agent,
            if self.released.is_empty() {
                "nothing".into()
            } else {
                self.released.join(", ")
            }
        ))
    }
}

fn plural(n: usize) -> &'static str {
    if n == 1 { "" } else { "s" }
}

impl Render for Swept {
    fn text(&self) -> Result<()> {
        for r in &self.released {
            line(&format!("released {}: {}", r.task, r.reason))?;
        }
        if self.holds_expired > 0 {
            line(&format!(
                "released {} expired hold{} on resources",
                self.holds_expired,
                plural(self.holds_expired)
            ))?;
        }
        for e in &self.expired {
            line(&format!("{}: {}", e.doc, e.note.as_deref().unwrap_or("")))?;
        }
        if self.runs_removed > 0 {
            line(&format!(
                "removed {} run output{} older than {} from .state/runs/",
                self.runs_removed,
                plural(self.runs_removed),
                self.keep_runs
            ))?;
        }
        for t in &self.temps_removed {
            line(&format!(
                "removed {t}: a temp file left by an interrupted write"
            ))?;
        }
        for e in &self.placed {
            line(&format!("{}: {}", e.doc, e.note.as_deref().unwrap_or("")))?;
        }
        Ok(())
    }
}

impl Render for Initialised {
    fn text(&self) -> Result<()> {
        if self.created.is_empty() {
            return line(&format!(
                "board already initialised at {}; nothing changed",
                self.board.display()
            ));
        }
        line(&format!("initialised board at {}", self.board.display()))?;
        for c in &self.created {
            line(&format!("  created {c}"))?;
        }
        Ok(())
    }
}

/// Problems go to stderr, one a line, then how many and where.
fn problems(problems: &[Problem], place: &std::path::Path) {
    for p in problems {
        err_line(&format!("{}: {}", p.path, p.problem));
    }
    err_line(&format!(
        "{} problem{} in {}",
        problems.len(),
        plural(problems.len()),
        place.display()
    ));
}

fn clean_or_invalid(ok: bool) -> ExitCode {
    if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(tavern::api::Kind::Invalid.exit_code())
    }
}

impl Render for Checked {
    fn text(&self) -> Result<()> {
        if let Some(s) = &self.sync {
            line(&super::sync::sync_line(s))?;
        }
        if self.ok {
            return line(&format!(
                "ok: {} documents and {} log entries checked, no problems",
                self.documents, self.log_entries
            ));
        }
        problems(&self.problems, &self.root);
        Ok(())
    }

    fn exit_code(&self) -> ExitCode {
        clean_or_invalid(self.ok)
    }
}

impl Render for SourcesChecked {
    fn text(&self) -> Result<()> {
        if self.ok {
            return line(&format!(
                "ok: {} source{} checked, no problems",
                self.sources,
                plural(self.sources)
            ));
        }
        problems(&self.problems, &self.dir);
        Ok(())
    }

    fn exit_code(&self) -> ExitCode {
        clean_or_invalid(self.ok)
    }
}

/// The last activation in one cell: when, how it ended (or `started`), and what it was about.
fn last_text(e: Option<&Entry>) -> String {
    match e {
        Some(e) => format!("{} {} {}", e.at, e.to.as_deref().unwrap_or("-"), e.doc),
        None => "-".into(),
    }
}

impl Render for SourceList {
    fn text(&self) -> Result<()> {
        if self.sources.is_empty() {
            return Ok(());
        }
        let rows: Vec<[String; 5]> = self
            .sources
            .iter()
            .map(|s| {
                [
                    cell(&s.name),
                    cell(&s.on.join(",")),
                    cell(&s.watch.join(",")),
                    s.priority.to_string(),
                    cell(&last_text(s.last.as_ref())),
                ]
            })
            .collect();
        out(&output::table(
            ["NAME", "ON", "WATCH", "PRIORITY", "LAST"],
            &rows,
        ))
    }

    /// After the table, so a reader sees what runs first and what was left out below it.
    fn warnings_after(&self) -> Vec<String> {
        self.skipped
            .iter()
            .map(|p| format!("skipped {}: {}", p.path, p.problem))
            .collect()
    }
}

impl Render for Archived {
    fn text(&self) -> Result<()> {
        for e in &self.moved {
            line(&format!("{}: {}", e.doc, e.note.as_deref().unwrap_or("")))?;
        }
        Ok(())
    }
}

impl Render for WouldArchive {
    fn text(&self) -> Result<()> {
        for p in &self.would_move {
            line(&format!("{p}: would move to archive/{p}"))?;
        }
        Ok(())
    }
}

impl Render for PauseState {
    fn text(&self) -> Result<()> {
        let reason = self.reason.as_deref().unwrap_or("");
        line(&match (self.paused, self.changed()) {
            (true, true) => format!("paused: {reason}"),
            (true, false) => format!("already paused: {reason}"),
            (false, true) => "resumed: claims and activations start again".to_string(),
            (false, false) => "not paused; nothing changed".to_string(),
        })
    }
}
