//! The log for the tools: what changed since the agent last looked, and the audit log.

use serde_json::{Value, json};

use tavern::board::Board;
use tavern::doc::Region;
use tavern::error::{Error, Result};
use tavern::log::Entry;

/// Log entries per status call.
const CHANGES: usize = 50;
/// Characters of a note shown in a list of entries.
const NOTE_CHARS: usize = 300;

pub struct Changes {
    pub entries: Vec<Value>,
    pub more: usize,
}

/// One entry, compact: its diff only when asked for, bounded as the log bounds it.
pub fn entry(e: &Entry, patch: bool) -> Value {
    let mut v = json!({"seq": e.seq, "at": e.at, "actor": e.actor, "op": e.op, "doc": e.doc});
    for (k, x) in [
        ("transition", &e.transition),
        ("from", &e.from),
        ("to", &e.to),
    ] {
        if let Some(x) = x {
            v[k] = json!(x);
        }
    }
    if let Some(rev) = e.rev {
        v["rev"] = json!(rev);
    }
    if e.force {
        v["force"] = json!(true);
    }
    if let Some(n) = &e.note {
        v["note"] = json!(super::bound::cut(n, 0, NOTE_CHARS).0);
    }
    if patch && let Some(d) = &e.diff {
        v["diff"] = json!(d);
    }
    v
}

/// The entries since `actor`'s cursor (the one `tavern events` keeps), at most a page; the
/// cursor moves past those returned.
pub fn changes_since_last_look(board: &Board, actor: &str) -> Result<Changes> {
    tavern::id::validate(actor).map_err(|_| {
        Error::usage(format!(
            "status keeps a cursor per agent, so the agent's name must be a valid id; '{actor}' is not (start the server with --as NAME)"
        ))
    })?;
    // The same cursor as `tavern events`: a high-water mark per origin (log::Marks), so
    // the two can be used in turn and both stay right after a merge of clones' logs.
    let cursor = tavern::layout::events_cursor(&board.root, actor);
    let mut marks = tavern::log::Marks::load(&cursor);
    let new = marks.read_new(board)?;
    let shown = &new[..new.len().min(CHANGES)];
    if !shown.is_empty() {
        for e in shown {
            marks.advance(e);
        }
        marks.save(&cursor)?;
    }
    Ok(Changes {
        entries: shown.iter().map(|e| entry(e, false)).collect(),
        more: new.len() - shown.len(),
    })
}

/// The audit log, the newest `limit` entries that pass the filters.
pub fn log(
    board: &Board,
    since: Option<u64>,
    doc: Option<&str>,
    actor: Option<&str>,
    limit: Option<usize>,
    patch: bool,
) -> Result<Value> {
    let doc_path = match doc {
        Some(reference) => {
            let (region, id) = tavern::ops::resolve::resolve(board, reference, &Region::ALL)?;
            Some(format!("{}/{id}.md", region.dir()))
        }
        None => None,
    };
    let from = match since {
        Some(n) => tavern::log::offset_after_seq(board, n)?,
        None => 0,
    };
    let needle = doc_path.as_deref().or(actor);
    let (entries, _, _) = tavern::log::read_matching(board, from, needle)?;
    let kept: Vec<&Entry> = entries
        .iter()
        .filter(|e| since.is_none_or(|n| e.seq > n))
        .filter(|e| doc_path.as_ref().is_none_or(|d| &e.doc == d))
        .filter(|e| actor.is_none_or(|a| e.actor == a))
        .collect();
    let limit = limit
        .unwrap_or(super::bound::PAGE)
        .clamp(1, super::bound::MAX_PAGE);
    let start = kept.len().saturating_sub(limit);
    let mut out = Vec::new();
    let mut bytes = 0;
    for e in kept[start..].iter().rev() {
        let v = entry(e, patch);
        bytes += v.to_string().len();
        if bytes > super::bound::MAX_RESULT_BYTES / 2 && !out.is_empty() {
            break;
        }
        out.push(v);
    }
    out.reverse();
    let first = kept.len() - out.len();
    let mut v = json!({"total": kept.len(), "entries": out});
    if first > 0 {
        v["hint"] = json!(format!(
            "{first} older entries not shown: pass since with a seq, or a smaller limit"
        ));
    }
    Ok(v)
}
