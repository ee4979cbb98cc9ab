//! `summary`: what an agent needs after a context reset, in one read: who is active and
//! what they hold, open findings by severity, tasks by state, open questions, and what
//! looks stuck.

use chrono::Utc;
use indexmap::IndexMap;
use serde::Serialize;

use super::agents::Status;
use super::view::Skipped;
use crate::agents;
use crate::board::Board;
use crate::doc::{Document, Region};
use crate::error::Result;
use crate::scan;

const SEVERITIES: [&str; 5] = ["critical", "high", "medium", "low", "info"];

/// A document in one line: what it is, where it stands, who holds it.
#[derive(Clone, Debug, Serialize)]
pub struct Brief {
    pub id: String,
    pub title: String,
    pub status: Option<String>,
    pub claimed_by: Option<String>,
    pub updated_at: Option<String>,
}

impl Brief {
    fn of(doc: &Document) -> Brief {
        Brief {
            id: doc.id().to_string(),
            title: doc.title().to_string(),
            status: doc.status().map(str::to_string),
            claimed_by: doc.str("claimed_by").map(str::to_string),
            updated_at: doc.str("updated_at").map(str::to_string),
        }
    }
}

#[derive(Clone, Debug, Serialize)]
pub struct AgentBrief {
    pub id: String,
    pub status: Status,
    pub last_seen: String,
    pub holds: Vec<Brief>,
}

pub use super::observations::Finding;
pub use super::waiting::OpenQuestion;

/// Something that looks stuck, and why.
#[derive(Clone, Debug, Serialize)]
pub struct Stuck {
    pub id: String,
    pub why: String,
}

/// What an agent needs after a context reset, in one read.
#[derive(Clone, Debug, Serialize)]
pub struct Summary {
    pub context: Option<String>,
    pub generated_at: String,
    /// The pause's reason when the board is paused: the first thing to know after a
    /// context reset, since nothing can be claimed.
    pub paused: Option<String>,
    /// Registered agents that are not gone.
    pub agents: Vec<AgentBrief>,
    /// Open or acknowledged findings by severity, most severe first; empty ones left out.
    pub findings: IndexMap<String, Vec<Finding>>,
    /// Tasks by state, in the workflow's order; empty states left out.
    pub tasks: IndexMap<String, Vec<Brief>>,
    /// Open questions, oldest first: those waiting for an answer or a human's decision
    /// (forged decisions included).
    pub questions: Vec<OpenQuestion>,
    pub stuck: Vec<Stuck>,
    pub skipped: Vec<Skipped>,
}

/// The summary of the board, or of one context. Expired leases are swept first;
/// `stuck_after` is how long without change before a claimed task or an unacknowledged
/// finding looks stuck.
pub fn summary(
    board: &Board,
    context: Option<&str>,
    stuck_after: chrono::Duration,
) -> Result<Summary> {
    crate::ops::sweep::sweep(board)?;
    let now = Utc::now();
    let in_context =
        |d: &Document| context.is_none_or(|c| d.list("context").iter().any(|x| x == c));
    // Each document becomes the little the summary shows of it on the thread that read
    // it: a big board is never held parsed (about 3.5 KiB a document), only its lines.
    let decisions = crate::ops::decisions::Annotator::new(board);
    let kept = std::sync::Mutex::new(Kept::default());
    let each = |mut d: Document| {
        if !in_context(&d) {
            return;
        }
        let key = scan::OrderKey::best_first(&d);
        match d.region {
            Region::Tasks => {
                let brief = Brief::of(&d);
                lock(&kept).tasks.push((key, brief));
            }
            Region::Observations => {
                if matches!(d.status(), Some("open") | Some("acknowledged")) {
                    let finding = Finding::of(&d);
                    lock(&kept).findings.push((key, finding));
                }
            }
            Region::Questions => {
                decisions.annotate(&mut d);
                if crate::ops::decisions::is_open(&d) {
                    let question = OpenQuestion::of(&d, false);
                    lock(&kept).questions.push((key, question));
                }
            }
        }
    };
    let skipped =
        scan::each_prefiltered(board, &Region::ALL, false, &[], &|_| true, &|_| true, &each)?;
    decisions.finish()?;
    let Kept {
        tasks,
        findings: open_findings,
        questions,
    } = kept.into_inner().unwrap_or_else(|p| p.into_inner());
    let tasks = best_first(tasks);
    let open_findings = best_first(open_findings);
    let questions = best_first(questions);
    let workflow = &board.config.workflow;
    let mut agents_out = Vec::new();
    for a in agents::all(board)? {
        if a.gone() {
            continue;
        }
        let holds: Vec<Brief> = tasks
            .iter()
            .filter(|t| {
                t.claimed_by.as_deref() == Some(a.id())
                    && !t.status.as_deref().is_some_and(|s| workflow.is_terminal(s))
            })
            .cloned()
            .collect();
        agents_out.push(AgentBrief {
            id: a.id().to_string(),
            status: Status::of(&a, board, now, !holds.is_empty()),
            last_seen: crate::time::stamp_millis(a.last_seen),
            holds,
        });
    }

    let mut findings = IndexMap::new();
    for sev in SEVERITIES {
        let list: Vec<Finding> = open_findings
            .iter()
            .filter(|f| f.severity == sev)
            .cloned()
            .collect();
        if !list.is_empty() {
            findings.insert(sev.to_string(), list);
        }
    }

    let mut by_state = IndexMap::new();
    for state in &workflow.states {
        let list: Vec<Brief> = tasks
            .iter()
            .filter(|t| t.status.as_deref() == Some(state.as_str()))
            .cloned()
            .collect();
        if !list.is_empty() {
            by_state.insert(state.clone(), list);
        }
    }

    let mut questions = questions;
    questions.sort_by(|a, b| {
        crate::time::cmp_stamps(&a.created_at, &b.created_at).then_with(|| a.id.cmp(&b.id))
    });

    // Stuck: findings nobody acknowledged, blocked tasks, and claims with no change for long.
    let old = |t: Option<&str>| {
        t.and_then(|t| crate::time::parse_time(t, now))
            .is_some_and(|t| now - t > stuck_after)
    };
    let mut stuck = Vec::new();
    let why = |id: &str, why: String| Stuck {
        id: id.to_string(),
        why,
    };
    for f in &open_findings {
        if f.status.as_deref() == Some("open") && old(Some(&f.created_at)) {
            stuck.push(why(
                &f.id,
                format!("finding not acknowledged since {}", f.created_at),
            ));
        }
    }
    for t in &tasks {
        let status = t.status.as_deref().unwrap_or("");
        let updated = t.updated_at.as_deref();
        if status == "blocked" {
            stuck.push(why(
                &t.id,
                format!("blocked since {}", updated.unwrap_or("?")),
            ));
        } else if t.claimed_by.is_some()
            && !workflow.is_terminal(status)
            && !workflow.is_claimable(status)
            && old(updated)
        {
            stuck.push(why(
                &t.id,
                format!(
                    "{status} by {} with no change since {}",
                    t.claimed_by.as_deref().unwrap_or("?"),
                    updated.unwrap_or("?")
                ),
            ));
        }
    }

    Ok(Summary {
        context: context.map(str::to_string),
        generated_at: crate::time::stamp(now),
        paused: board.paused(),
        agents: agents_out,
        findings,
        tasks: by_state,
        questions,
        stuck,
        skipped,
    })
}

/// What a summary keeps of the documents it reads, each with its place in their order.
#[derive(Default)]
struct Kept {
    tasks: Vec<(scan::OrderKey, Brief)>,
    findings: Vec<(scan::OrderKey, Finding)>,
    questions: Vec<(scan::OrderKey, OpenQuestion)>,
}

fn lock<T>(m: &std::sync::Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// The items in their documents' order, best first ([`scan::OrderKey::best_first`]).
fn best_first<T>(mut items: Vec<(scan::OrderKey, T)>) -> Vec<T> {
    items.sort_unstable_by(|a, b| a.0.cmp(&b.0));
    items.into_iter().map(|(_, item)| item).collect()
}

/// Text for one line of markdown: control characters (a hostile title) become spaces.
fn blank_controls(s: &str) -> String {
    s.chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect()
}

/// One item of the summary's markdown: `- ID title (owner)`, control characters blanked.
fn item(id: &str, title: &str, owner: Option<&str>, extra: &str) -> String {
    let mut s = format!("- {id} {title}");
    if let Some(owner) = owner {
        s.push_str(&format!(" ({owner})"));
    }
    blank_controls(&s) + extra + "\n"
}

impl Summary {
    /// The summary as markdown, for people and for a model's context alike.
    pub fn markdown(&self) -> String {
        let mut o = match &self.context {
            Some(c) => format!("# Board summary: context {c}\n"),
            None => "# Board summary\n".to_string(),
        };
        if let Some(reason) = &self.paused {
            o.push_str(&format!(
                "\n**The board is paused**: {}. No task can be claimed and no knowledge source starts until it is resumed.\n",
                blank_controls(reason)
            ));
        }
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
                o.push_str(&item(&f.id, &f.title, None, &about));
            }
        }
        o.push_str("\n## Tasks\n\n");
        if self.tasks.is_empty() {
            o.push_str("None.\n");
        }
        for (state, list) in &self.tasks {
            o.push_str(&format!("{state} ({}):\n", list.len()));
            for t in list {
                o.push_str(&item(&t.id, &t.title, t.claimed_by.as_deref(), ""));
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
            if let Some(d) = q.decision.as_ref().filter(|d| d.is_forged()) {
                extra.push_str(&format!(" — {}", blank_controls(&d.describe())));
            }
            o.push_str(&item(&q.id, &q.title, None, &extra));
        }
        o.push_str("\n## Looks stuck\n\n");
        if self.stuck.is_empty() {
            o.push_str("Nothing.\n");
        }
        for s in &self.stuck {
            o.push_str(&format!("- {}: {}\n", s.id, s.why));
        }
        o
    }
}

/// What an agent reads after a context reset or between steps: the summary, and the log
/// entries new to it (at most `limit`; its cursor moves past them).
#[derive(Debug)]
pub struct CatchUp {
    pub summary: Summary,
    pub changes: super::history::Events,
}

/// The summary of the board and what changed since `actor` last looked, moving its
/// cursor past what is returned (the `events` cursor: the CLI's `tavern events` and this
/// share it).
pub fn catch_up(board: &Board, actor: &str, limit: usize) -> Result<CatchUp> {
    let summary = summary(board, None, chrono::Duration::hours(1))?;
    let changes = super::history::events(board, actor, None, Some(limit))?;
    super::history::seen(board, actor, &changes.entries)?;
    Ok(CatchUp { summary, changes })
}
