//! Every result is bounded: lists come in pages with the total count, long bodies are cut
//! with the offset to ask for the rest, so no call comes near what clients accept (about
//! 25k tokens). Documents are rendered compactly: what a model needs to act, no more.

use serde_json::{Value, json};

use tavern::api::{Document, Entry, Error, Result, Skipped};

/// Characters of a body `show` returns at once.
pub const BODY_CHARS: usize = 16_000;
/// Characters of a resource read at once.
pub const RESOURCE_CHARS: usize = 24_000;
/// Characters of the task's body `claim` returns with it.
pub const CLAIM_BODY_CHARS: usize = 4_000;
/// Characters of the summary `status` returns.
pub const SUMMARY_CHARS: usize = 24_000;
/// Items per page unless asked otherwise, and at most.
pub const PAGE: usize = 20;
pub const MAX_PAGE: usize = 100;
/// No result is longer than this many bytes as sent (about 20k tokens): its text, JSON
/// inside the JSON-RPC response, counted with every character escaped as it goes out.
pub const MAX_RESULT_BYTES: usize = 80_000;
/// Characters of an error's message, at most (an input it echoes is cut).
pub const ERROR_CHARS: usize = 2_000;

pub struct Cut {
    pub shown: usize,
    pub total: usize,
    pub next: usize,
}

/// What a character of a result's text costs as sent: escaped once in the result's JSON,
/// and again as the text of the JSON-RPC response (a quote costs 4 bytes, a control
/// character 7).
fn sent_bytes(c: char) -> usize {
    match c {
        '"' | '\\' => 4,
        '\n' | '\r' | '\t' | '\u{8}' | '\u{c}' => 3,
        c if (c as u32) < 0x20 => 7,
        c => c.len_utf8(),
    }
}

/// The bytes a result's JSON text costs as sent: escaped once more, as the text of the
/// JSON-RPC response.
pub fn sent_len(json: &str) -> usize {
    json.chars()
        .map(|c| match c {
            '"' | '\\' | '\n' | '\r' | '\t' | '\u{8}' | '\u{c}' => 2,
            c if (c as u32) < 0x20 => 6,
            c => c.len_utf8(),
        })
        .sum()
}

/// `text` from character `from`: at most `max` characters, and at most what three bytes a
/// character cost as sent (so that text full of quotes or control characters comes in
/// more, shorter parts); and where it stopped if it did.
pub fn cut(text: &str, from: usize, max: usize) -> (String, Option<Cut>) {
    let total = text.chars().count();
    let budget = max.saturating_mul(3);
    let mut spent = 0;
    let part: String = text
        .chars()
        .skip(from)
        .take(max)
        .take_while(|c| {
            spent += sent_bytes(*c);
            spent <= budget
        })
        .collect();
    let next = from + part.chars().count();
    if from == 0 && next >= total {
        return (part, None);
    }
    (
        part,
        Some(Cut {
            shown: next - from.min(next),
            total,
            next,
        }),
    )
}

/// A document's place and fields, without its body.
pub fn doc(d: &Document) -> Value {
    let mut v = json!({
        "id": d.id(),
        "path": d.rel_path(),
        "rev": d.rev(),
        "fields": Value::Object(d.fields.clone()),
    });
    with_decision(&mut v, d);
    v
}

/// A question's decision as the log says it (a forged one says so), beside its fields.
fn with_decision(v: &mut Value, d: &Document) {
    if let Some(x) = &d.decision {
        v["decision"] = json!(x);
    }
}

/// One row of a list: enough to choose, not the whole document.
pub fn row(d: &Document) -> Value {
    let mut v = json!({"id": d.id(), "region": d.region.dir(), "title": d.title(), "rev": d.rev()});
    for key in [
        "status",
        "priority",
        "severity",
        "claimed_by",
        "tags",
        "depends_on",
        "needs",
    ] {
        if let Some(x) = d.fields.get(key)
            && !x.is_null()
        {
            v[key] = x.clone();
        }
    }
    with_decision(&mut v, d);
    v
}

pub fn with_body(v: &mut Value, d: &Document, max: usize) {
    with_body_from(v, d, 0, max);
}

pub fn with_body_from(v: &mut Value, d: &Document, from: usize, max: usize) {
    with_text_from(v, d.id(), d.body(), from, max);
}

/// `text` as the result's body from character `from`, saying how to ask for the rest of
/// what `reference` holds.
pub fn with_text_from(v: &mut Value, reference: &str, text: &str, from: usize, max: usize) {
    let (body, c) = cut(text, from, max);
    v["body"] = json!(body);
    if let Some(c) = c {
        v["body_cut"] = json!({
            "total_chars": c.total,
            "next_offset": if c.next < c.total { Some(c.next) } else { None },
            "hint": if c.next < c.total {
                format!("the body goes on: call show with id {reference} and offset {}", c.next)
            } else {
                "that is the end of the body".to_string()
            },
        });
    }
}

/// Characters of a note shown in a list of entries.
const NOTE_CHARS: usize = 300;

/// One log entry, compact: its diff only when asked for, its note cut.
pub fn entry(e: &Entry, patch: bool) -> Value {
    let mut v = json!({"id": tavern::api::history::entry_id(e), "seq": e.seq, "at": e.at, "actor": e.actor, "op": e.op, "doc": e.doc});
    for (k, x) in [
        ("via", &e.via),
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
        v["note"] = json!(cut(n, 0, NOTE_CHARS).0);
    }
    if patch && let Some(d) = &e.diff {
        v["diff"] = json!(d);
    }
    v
}

/// The newest `limit` of `entries` (oldest first), fewer when they would be too long,
/// with the total and a hint when older ones were left out.
pub fn entries(entries: &[Entry], limit: Option<usize>, patch: bool) -> Value {
    let limit = limit.unwrap_or(PAGE).clamp(1, MAX_PAGE);
    let start = entries.len().saturating_sub(limit);
    let mut out = Vec::new();
    let mut bytes = 0;
    for e in entries[start..].iter().rev() {
        let v = entry(e, patch);
        bytes += sent_len(&v.to_string());
        if bytes > MAX_RESULT_BYTES / 2 && !out.is_empty() {
            break;
        }
        out.push(v);
    }
    out.reverse();
    let older = entries.len() - out.len();
    let mut v = json!({"total": entries.len(), "entries": out});
    if older > 0 {
        v["hint"] = json!(format!(
            "{older} older entries not shown: pass since with the id of the last entry you have, or a smaller limit"
        ));
    }
    v
}

/// What a creation did.
pub fn created(d: &Document, e: &Entry, warnings: &[String]) -> Value {
    let mut v = json!({"ok": true, "id": d.id(), "path": d.rel_path(), "rev": d.rev(), "status": d.status(), "seq": e.seq});
    if !warnings.is_empty() {
        v["warnings"] = json!(warnings);
    }
    v
}

fn skipped_json(skipped: &[Skipped]) -> Value {
    Value::Array(
        skipped
            .iter()
            .take(10)
            .map(|s| json!({"path": s.path, "problem": s.problem}))
            .collect(),
    )
}

/// One page of documents (each as [`row`] shows it), with the total and the cursor of the
/// next page.
pub fn page(
    key: &str,
    docs: &[Value],
    skipped: &[Skipped],
    limit: Option<usize>,
    cursor: Option<&str>,
) -> Result<Value> {
    let (start, limit) = window(limit, cursor)?;
    let from = docs.get(start..).unwrap_or_default();
    Ok(page_of(key, docs.len(), start, from, skipped, limit))
}

/// Where a page starts (from `cursor`) and how many documents it may hold at most.
pub fn window(limit: Option<usize>, cursor: Option<&str>) -> Result<(usize, usize)> {
    let limit = limit.unwrap_or(PAGE).clamp(1, MAX_PAGE);
    let start = match cursor {
        None | Some("") => 0,
        Some(c) => c.parse::<usize>().map_err(|_| {
            Error::usage(format!(
                "cursor '{c}' is not one this server gave: pass next_cursor from the previous result"
            ))
        })?,
    };
    Ok((start, limit))
}

/// [`page`] of `total` documents, given those from the `start`th on (at least the page's).
pub fn page_of(
    key: &str,
    total: usize,
    start: usize,
    from: &[Value],
    skipped: &[Skipped],
    limit: usize,
) -> Value {
    let mut items = Vec::new();
    let mut bytes = 0;
    let mut end = start;
    for r in from.iter().take(limit) {
        let r = r.clone();
        bytes += sent_len(&r.to_string());
        if bytes > MAX_RESULT_BYTES / 2 && !items.is_empty() {
            break;
        }
        items.push(r);
        end += 1;
    }
    let mut v = json!({"total": total, key: items});
    if end < total {
        v["next_cursor"] = json!(end.to_string());
    }
    if !skipped.is_empty() {
        v["skipped"] = skipped_json(skipped);
    }
    v
}

/// A list of names, cut at a page.
pub fn capped_list(key: &str, items: &[&str]) -> Value {
    let shown: Vec<&str> = items.iter().take(MAX_PAGE).copied().collect();
    let mut v = json!({"total": items.len(), key: shown});
    if items.len() > MAX_PAGE {
        v["hint"] = json!(format!("{} more not shown", items.len() - MAX_PAGE));
    }
    v
}

/// Any JSON result, refused in favour of a hint when it would be too long as sent.
pub fn capped_value(v: Value) -> Value {
    let len = sent_len(&v.to_string());
    if len <= MAX_RESULT_BYTES {
        return v;
    }
    json!({"cut": true, "bytes": len, "hint": "the result is too long to return at once; narrow the request (a query, a limit)"})
}

/// A message of at most [`ERROR_CHARS`] characters: an input it echoes is cut, saying so.
pub fn message(text: &str) -> String {
    super::wire::shorten(text, ERROR_CHARS)
}
