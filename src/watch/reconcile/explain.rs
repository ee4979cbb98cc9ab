//! Explaining a file by tavern's log entries: the events an entry stands for, which
//! entries are writes the watcher has not seen, and their diffs replayed on (or taken back
//! from) the content the watcher last saw.

use crate::doc::Document;
use crate::log::{self, Entry};
use crate::watch::areas::Tracked;
use crate::watch::patch;
use crate::watch::sources::On;

/// The events a tavern log entry stands for.
pub(super) fn events_of(e: &Entry) -> Vec<On> {
    let mut events = vec![match e.op.as_str() {
        "create" | "pause" => On::Created,
        "move" | "delete" | "resume" => On::Deleted,
        _ => On::Changed,
    }];
    if let Some(to) = &e.to
        && !matches!(
            e.op.as_str(),
            "external-edit" | "create" | "pause" | "resume" | "sync-merge" | "sync-conflict"
        )
    {
        events.push(On::Transition(to.clone()));
    }
    events
}

/// tavern's writes of a file since the watcher last saw it (`before`): its log entries,
/// without external edits and without those the watcher's copy already holds.
pub(super) fn tavern_writes<'a>(
    t: &Tracked,
    before: Option<&[u8]>,
    entries: &'a [Entry],
) -> Vec<&'a Entry> {
    let before_rev = before.map_or(0, rev_of);
    entries
        .iter()
        .filter(|e| e.op != "external-edit")
        .filter(|e| !t.has_rev() || e.rev.is_none_or(|r| r > before_rev))
        .collect()
}

/// The rev an external edit's entry records: the document's own, for files that have one.
pub(super) fn logged_rev(t: &Tracked, doc: Option<&Document>) -> Option<u64> {
    doc.filter(|_| t.has_rev())
        .map(Document::rev)
        .filter(|r| *r > 0)
}

/// The events of a change made outside tavern: created, or changed (and a transition when
/// the status moved).
/// `from` is None when what the file held before is not known: then no transition.
pub(super) fn external_events(
    created: bool,
    from: Option<&[u8]>,
    doc: Option<&Document>,
) -> Vec<On> {
    if created {
        return vec![On::Created];
    }
    let mut events = vec![On::Changed];
    if let Some(from) = from
        && let Some(status) = doc.and_then(Document::status)
        && Some(status) != status_of(from).as_deref()
    {
        events.push(On::Transition(status.to_string()));
    }
    events
}

pub(super) enum Replay {
    Exact(String),
    /// A diff does not apply to what the watcher last saw: something else changed it.
    Mismatch,
    /// A diff was cut to its size limit and cannot be replayed.
    Truncated,
}

/// What the file was before tavern's logged writes made `now` of it; None if `now` is not
/// what they made (or a diff was truncated).
pub(super) fn unreplay(now: &str, entries: &[&Entry]) -> Option<String> {
    let mut text = now.to_string();
    for e in entries.iter().rev() {
        let Some(diff) = &e.diff else { continue };
        if diff.contains("… diff truncated:") {
            return None;
        }
        text = patch::revert(&text, diff)?;
    }
    Some(text)
}

/// What tavern's logged writes make of `base`.
pub(super) fn replay(base: &str, entries: &[&Entry]) -> Replay {
    let mut text = base.to_string();
    for e in entries {
        let Some(diff) = &e.diff else { continue };
        if diff.contains("… diff truncated:") {
            return Replay::Truncated;
        }
        match patch::apply(&text, diff) {
            Some(next) => text = next,
            None => return Replay::Mismatch,
        }
    }
    Replay::Exact(text)
}

/// A unified diff when both sides are text.
pub(super) fn text_diff(before: &[u8], after: &[u8]) -> Option<String> {
    let (Ok(a), Ok(b)) = (std::str::from_utf8(before), std::str::from_utf8(after)) else {
        return None;
    };
    Some(log::diff(a, b))
}

pub(super) fn frontmatter_field(bytes: &[u8], key: &str) -> Option<serde_json::Value> {
    let text = std::str::from_utf8(bytes).ok()?;
    let parts = crate::doc::split::split(text).ok()?;
    let fields = crate::doc::fast::parse(parts.frontmatter).or_else(|| {
        crate::yaml::parse_mapping(parts.frontmatter, crate::yaml::YamlLimits::default()).ok()
    })?;
    fields.get(key).cloned()
}

/// The `rev` in a file's frontmatter (0 if none).
pub(super) fn rev_of(bytes: &[u8]) -> u64 {
    frontmatter_field(bytes, "rev")
        .and_then(|v| v.as_u64())
        .unwrap_or(0)
}

pub(super) fn status_of(bytes: &[u8]) -> Option<String> {
    frontmatter_field(bytes, "status").and_then(|v| v.as_str().map(str::to_string))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_of_log_entries() {
        let e = |op: &str, to: Option<&str>| Entry {
            op: op.into(),
            to: to.map(str::to_string),
            ..Entry::default()
        };
        let names = |e: &Entry| events_of(e).iter().map(On::name).collect::<Vec<_>>();
        assert_eq!(names(&e("create", Some("pending"))), ["created"]);
        assert_eq!(
            names(&e("transition", Some("review"))),
            ["changed", "transition:review"]
        );
        assert_eq!(names(&e("edit", None)), ["changed"]);
        assert_eq!(
            names(&e("move", Some("archive"))),
            ["deleted", "transition:archive"]
        );
        assert_eq!(names(&e("pause", None)), ["created"]);
        assert_eq!(names(&e("resume", None)), ["deleted"]);
        assert_eq!(names(&e("external-edit", Some("x"))), ["changed"]);
        assert_eq!(names(&e("sync-merge", Some("done"))), ["changed"]);
        assert_eq!(names(&e("sync-conflict", None)), ["changed"]);
    }

    #[test]
    fn replaying_logged_diffs() {
        let d1 = log::diff("a\n", "a\nb\n");
        let d2 = log::diff("a\nb\n", "a\nc\n");
        let entries = [
            Entry {
                diff: Some(d1.clone()),
                ..Entry::default()
            },
            Entry {
                diff: Some(d2),
                ..Entry::default()
            },
        ];
        let refs: Vec<&Entry> = entries.iter().collect();
        assert!(matches!(replay("a\n", &refs), Replay::Exact(t) if t == "a\nc\n"));
        assert!(matches!(replay("z\n", &refs), Replay::Mismatch));
        // Taken back from what they made, they give what was there before them.
        assert_eq!(unreplay("a\nc\n", &refs).as_deref(), Some("a\n"));
        assert_eq!(unreplay("q\n", &refs), None);
        let cut = Entry {
            diff: Some(format!("{d1}… diff truncated: 1 more lines\n")),
            ..Entry::default()
        };
        assert!(matches!(replay("a\n", &[&cut]), Replay::Truncated));
        assert_eq!(unreplay("a\nb\n", &[&cut]), None);
    }
}
