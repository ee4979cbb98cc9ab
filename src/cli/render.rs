//! The two printers: every command's result goes through [`print`], which writes it as
//! one JSON line (`--json`, from the result's `Serialize`) or as text (its [`Render`]
//! impl). Commands never look at `--json` themselves; what a result looks like as text
//! is decided here and in the `text` impls below, one per result type.

use std::process::ExitCode;

use serde::Serialize;

use super::output::{self, cell, line, out};
use tavern::api::agents::AgentList;
use tavern::api::docs::Shown;
use tavern::api::graph::{Deps, Node, Task};
use tavern::api::history::DocHistory;
use tavern::api::summary::{Brief, Summary};
use tavern::api::view::{Listing, Skipped};
use tavern::error::Result;
use tavern::log::Entry;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    Text,
    Json,
}

/// A result as text, and what it says on stderr in either format.
pub trait Render: Serialize {
    /// The human text, written with [`out`]/[`line`] (and [`warn`] for stderr).
    fn text(&self) -> Result<()>;

    /// Warnings printed before the result in every format (files a reader skipped).
    fn warnings(&self) -> Vec<String> {
        Vec::new()
    }

    /// The exit code once printed.
    fn exit_code(&self) -> ExitCode {
        ExitCode::SUCCESS
    }
}

/// Prints a result in the chosen format and returns its exit code.
pub fn print<R: Render>(format: Format, r: &R) -> Result<ExitCode> {
    for w in r.warnings() {
        warn(&w);
    }
    match format {
        Format::Json => json(r)?,
        Format::Text => r.text()?,
    }
    Ok(r.exit_code())
}

/// One JSON line on stdout.
pub fn json<T: Serialize + ?Sized>(v: &T) -> Result<()> {
    line(&serde_json::to_string(v).unwrap_or_default())
}

/// One line on stderr; a closed stderr is not worth failing the command for.
pub fn warn(text: &str) {
    let _ = std::io::Write::write_all(
        &mut std::io::stderr(),
        format!("warning: {text}\n").as_bytes(),
    );
}

pub fn skipped_warnings(skipped: &[Skipped]) -> Vec<String> {
    skipped
        .iter()
        .map(|s| format!("skipped {}: {}", s.path, s.problem))
        .collect()
}

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
}

impl Render for Shown {
    fn text(&self) -> Result<()> {
        out(&self.doc.raw)
    }
}

/// A log entry on one line (control characters blanked), as `log` and `events` show it.
pub fn entry_line(e: &Entry) -> String {
    let mut s = format!("{} {} {} {} {}", e.seq, e.at, e.actor, e.op, e.doc);
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

/// A log entry as `log`, `events` and `diff` print it: one JSON line each, or its line
/// and, with `patch`, its diff indented below.
#[derive(Serialize)]
#[serde(transparent)]
pub struct EntryView<'a> {
    pub entry: &'a Entry,
    #[serde(skip)]
    pub patch: bool,
}

impl Render for EntryView<'_> {
    fn text(&self) -> Result<()> {
        line(&entry_line(self.entry))?;
        if self.patch
            && let Some(d) = &self.entry.diff
        {
            for l in d.lines() {
                line(&format!("    {l}"))?;
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
        let mut text = format!(
            "{:<16} {:<7} {:<10} {:<20} {}\n",
            "AGENT", "STATUS", "SEEN", "HOLDS", "CAPABILITIES"
        );
        for a in &self.agents {
            let holds = if a.holds.is_empty() {
                "-".to_string()
            } else {
                a.holds.join(",")
            };
            let seen = if a.last_seen == chrono::DateTime::<chrono::Utc>::UNIX_EPOCH {
                "never".to_string()
            } else {
                tavern::time::ago(a.last_seen, self.now)
            };
            text.push_str(&format!(
                "{:<16} {:<7} {:<10} {:<20} {}\n",
                a.id,
                a.status.name(),
                seen,
                holds,
                a.capabilities.join(",")
            ));
        }
        out(&text)
    }
}

/// One line of a task graph: `ID [status] title`, indented by depth.
fn graph_line(t: &Task, depth: usize, repeated: bool, text: &mut String) {
    let status = t.status.as_deref().unwrap_or("missing");
    let title = t.title.as_deref().unwrap_or("");
    let more = if repeated { " (see above)" } else { "" };
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

/// One item of the summary's markdown: `- ID title (owner)`, control characters blanked.
fn item(b: &Brief, extra: &str) -> String {
    let mut s = format!("- {} {}", b.id, b.title);
    if let Some(owner) = &b.claimed_by {
        s.push_str(&format!(" ({owner})"));
    }
    cell(&s) + extra + "\n"
}

impl Render for Summary {
    fn text(&self) -> Result<()> {
        let mut o = match &self.context {
            Some(c) => format!("# Board summary: context {c}\n"),
            None => "# Board summary\n".to_string(),
        };
        o.push_str("\n## Agents\n\n");
        if self.agents.is_empty() {
            o.push_str("No registered agents.\n");
        }
        for a in &self.agents {
            let holds: Vec<String> = a
                .holds
                .iter()
                .map(|t| format!("{} [{}]", t.id, t.status.as_deref().unwrap_or("")))
                .collect();
            let holds = if holds.is_empty() {
                "nothing".to_string()
            } else {
                holds.join(", ")
            };
            o.push_str(&format!(
                "- {} ({}): holds {holds}\n",
                a.id,
                a.status.name()
            ));
        }
        o.push_str("\n## Open findings\n\n");
        if self.findings.is_empty() {
            o.push_str("None.\n");
        }
        for (sev, list) in &self.findings {
            o.push_str(&format!("{sev}:\n"));
            for f in list {
                let about = if f.about.is_empty() {
                    String::new()
                } else {
                    format!(" — about {}", f.about.join(", "))
                };
                o.push_str(&item(&f.brief, &about));
            }
        }
        o.push_str("\n## Tasks\n\n");
        if self.tasks.is_empty() {
            o.push_str("None.\n");
        }
        for (state, list) in &self.tasks {
            o.push_str(&format!("{state} ({}):\n", list.len()));
            for t in list {
                o.push_str(&item(t, ""));
            }
        }
        o.push_str("\n## Open questions\n\n");
        if self.questions.is_empty() {
            o.push_str("None.\n");
        }
        for q in &self.questions {
            let mut extra = format!(" — asked by {}", q.asked_by.as_deref().unwrap_or("?"));
            if !q.blocks.is_empty() {
                extra.push_str(&format!(", blocks {}", q.blocks.join(", ")));
            }
            o.push_str(&item(&q.brief, &extra));
        }
        o.push_str("\n## Looks stuck\n\n");
        if self.stuck.is_empty() {
            o.push_str("Nothing.\n");
        }
        for s in &self.stuck {
            o.push_str(&format!("- {}: {}\n", s.id, s.why));
        }
        out(&o)
    }

    fn warnings(&self) -> Vec<String> {
        skipped_warnings(&self.skipped)
    }
}
