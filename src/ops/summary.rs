//! `summary`: what an agent needs after a context reset, in one read: who is active and
//! what they hold, open findings by severity, tasks by state, open questions, and what
//! looks stuck.

use chrono::{DateTime, Utc};
use serde_json::{Value, json};

use crate::agents;
use crate::board::Board;
use crate::doc::{Document, Region};
use crate::error::Result;
use crate::scan;

const SEVERITIES: [&str; 5] = ["critical", "high", "medium", "low", "info"];

fn time_of(doc: &Document, key: &str, now: DateTime<Utc>) -> Option<DateTime<Utc>> {
    doc.str(key).and_then(|t| crate::time::parse_time(t, now))
}

fn brief(doc: &Document) -> Value {
    json!({"id": doc.id(), "title": doc.title(), "status": doc.status(), "claimed_by": doc.str("claimed_by"), "updated_at": doc.str("updated_at")})
}

/// Builds the summary as JSON; `render` turns it into markdown.
pub fn summary(
    board: &Board,
    context: Option<&str>,
    stale_after: chrono::Duration,
) -> Result<Value> {
    let now = Utc::now();
    let in_context =
        |d: &Document| context.is_none_or(|c| d.list("context").iter().any(|x| x == c));
    let scanned = scan::scan_matching(board, &Region::ALL, in_context)?;
    let mut docs = scanned.docs;
    scan::sort_best_first(&mut docs);
    let workflow = &board.config.workflow;
    let tasks: Vec<&Document> = docs.iter().filter(|d| d.region == Region::Tasks).collect();

    let mut agents_out = Vec::new();
    for a in agents::all(board)? {
        if a.gone() {
            continue;
        }
        let holds: Vec<Value> = tasks
            .iter()
            .filter(|t| {
                t.str("claimed_by") == Some(a.id())
                    && !t.status().is_some_and(|s| workflow.is_terminal(s))
            })
            .map(|t| brief(t))
            .collect();
        let status = if a.stale(board, now) {
            "stale"
        } else if holds.is_empty() {
            "idle"
        } else {
            "active"
        };
        agents_out.push(json!({"id": a.id(), "status": status, "last_seen": crate::time::stamp(a.last_seen), "holds": holds}));
    }

    let open_findings: Vec<&Document> = docs
        .iter()
        .filter(|d| {
            d.region == Region::Observations
                && matches!(d.status(), Some("open") | Some("acknowledged"))
        })
        .collect();
    let mut findings = serde_json::Map::new();
    for sev in SEVERITIES {
        let list: Vec<Value> = open_findings
            .iter()
            .filter(|d| d.str("severity") == Some(sev))
            .map(|d| {
                let mut v = brief(d);
                v["about"] = json!(d.list("about"));
                v
            })
            .collect();
        if !list.is_empty() {
            findings.insert(sev.to_string(), Value::Array(list));
        }
    }

    let mut by_state = serde_json::Map::new();
    for state in &workflow.states {
        let list: Vec<Value> = tasks
            .iter()
            .filter(|t| t.status() == Some(state.as_str()))
            .map(|t| brief(t))
            .collect();
        if !list.is_empty() {
            by_state.insert(state.clone(), Value::Array(list));
        }
    }

    let mut questions: Vec<&Document> = docs
        .iter()
        .filter(|d| d.region == Region::Questions && d.status() == Some("open"))
        .collect();
    questions.sort_by(|a, b| {
        a.created_at()
            .cmp(b.created_at())
            .then_with(|| a.id().cmp(b.id()))
    });
    let questions: Vec<Value> = questions
        .iter()
        .map(|q| {
            let mut v = brief(q);
            v["asked_by"] = json!(q.str("asked_by"));
            v["blocks"] = json!(q.list("blocks"));
            v
        })
        .collect();

    // Stuck: findings nobody acknowledged, blocked tasks, and claims with no change for long.
    let old = |d: &Document, key: &str| time_of(d, key, now).is_some_and(|t| now - t > stale_after);
    let mut stuck = Vec::new();
    for d in &open_findings {
        if d.status() == Some("open") && old(d, "created_at") {
            stuck.push(json!({"id": d.id(), "why": format!("finding not acknowledged since {}", d.created_at())}));
        }
    }
    for t in &tasks {
        let status = t.status().unwrap_or("");
        if status == "blocked" {
            stuck.push(json!({"id": t.id(), "why": format!("blocked since {}", t.str("updated_at").unwrap_or("?"))}));
        } else if t.str("claimed_by").is_some()
            && !workflow.is_terminal(status)
            && !workflow.is_claimable(status)
            && old(t, "updated_at")
        {
            stuck.push(json!({"id": t.id(), "why": format!("{status} by {} with no change since {}", t.str("claimed_by").unwrap_or("?"), t.str("updated_at").unwrap_or("?"))}));
        }
    }

    Ok(json!({
        "context": context,
        "generated_at": crate::time::stamp(now),
        // The first thing to know after a context reset: nothing can be claimed.
        "paused": board.paused(),
        "agents": agents_out,
        "findings": findings,
        "tasks": by_state,
        "questions": questions,
        "stuck": stuck,
        "skipped": scanned.skipped.iter().map(|s| json!({"path": s.path, "problem": s.problem})).collect::<Vec<_>>(),
    }))
}

fn item(v: &Value) -> String {
    let mut s = format!(
        "- {} {}",
        v["id"].as_str().unwrap_or(""),
        v["title"].as_str().unwrap_or("")
    );
    if let Some(owner) = v["claimed_by"].as_str() {
        s.push_str(&format!(" ({owner})"));
    }
    s.chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect::<String>()
        + "\n"
}

/// The summary as markdown for humans and agents to read.
pub fn render(v: &Value) -> String {
    let mut out = match v["context"].as_str() {
        Some(c) => format!("# Board summary: context {c}\n"),
        None => "# Board summary\n".to_string(),
    };
    if let Some(reason) = v["paused"].as_str() {
        let reason: String = reason
            .chars()
            .map(|c| if c.is_control() { ' ' } else { c })
            .collect();
        out.push_str(&format!(
            "\n**The board is paused**: {reason}. No task can be claimed and no knowledge source starts until it is resumed.\n"
        ));
    }
    out.push_str("\n## Agents\n\n");
    let agents = v["agents"].as_array().cloned().unwrap_or_default();
    if agents.is_empty() {
        out.push_str("No registered agents.\n");
    }
    for a in &agents {
        let holds: Vec<String> = a["holds"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|t| {
                format!(
                    "{} [{}]",
                    t["id"].as_str().unwrap_or(""),
                    t["status"].as_str().unwrap_or("")
                )
            })
            .collect();
        let holds = if holds.is_empty() {
            "nothing".to_string()
        } else {
            holds.join(", ")
        };
        out.push_str(&format!(
            "- {} ({}): holds {holds}\n",
            a["id"].as_str().unwrap_or(""),
            a["status"].as_str().unwrap_or("")
        ));
    }
    out.push_str("\n## Open findings\n\n");
    let findings = v["findings"].as_object().cloned().unwrap_or_default();
    if findings.is_empty() {
        out.push_str("None.\n");
    }
    for (sev, list) in &findings {
        out.push_str(&format!("{sev}:\n"));
        for f in list.as_array().into_iter().flatten() {
            let about: Vec<&str> = f["about"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .collect();
            let mut line = item(f);
            if !about.is_empty() {
                line.insert_str(line.len() - 1, &format!(" — about {}", about.join(", ")));
            }
            out.push_str(&line);
        }
    }
    out.push_str("\n## Tasks\n\n");
    let tasks = v["tasks"].as_object().cloned().unwrap_or_default();
    if tasks.is_empty() {
        out.push_str("None.\n");
    }
    for (state, list) in &tasks {
        let list = list.as_array().cloned().unwrap_or_default();
        out.push_str(&format!("{state} ({}):\n", list.len()));
        for t in &list {
            out.push_str(&item(t));
        }
    }
    out.push_str("\n## Open questions\n\n");
    let questions = v["questions"].as_array().cloned().unwrap_or_default();
    if questions.is_empty() {
        out.push_str("None.\n");
    }
    for q in &questions {
        let mut line = item(q);
        let blocks: Vec<&str> = q["blocks"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect();
        let mut extra = format!(" — asked by {}", q["asked_by"].as_str().unwrap_or("?"));
        if !blocks.is_empty() {
            extra.push_str(&format!(", blocks {}", blocks.join(", ")));
        }
        line.insert_str(line.len() - 1, &extra);
        out.push_str(&line);
    }
    out.push_str("\n## Looks stuck\n\n");
    let stuck = v["stuck"].as_array().cloned().unwrap_or_default();
    if stuck.is_empty() {
        out.push_str("Nothing.\n");
    }
    for s in &stuck {
        out.push_str(&format!(
            "- {}: {}\n",
            s["id"].as_str().unwrap_or(""),
            s["why"].as_str().unwrap_or("")
        ));
    }
    out
}
