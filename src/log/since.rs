//! Where a reader of the log starts: `log --since`, `events --since`, and the cursors the
//! front-ends pass around.
//!
//! An entry is named by its origin and its seq together (`k3f9q2ab:42`): seqs are a
//! Lamport clock per clone, so two clones that worked at the same time give the same seq
//! to different entries, and a merge of their logs holds both. A reader's place is
//! therefore a mark per origin (the highest seq of it seen), written
//! `ORIGIN:SEQ[,ORIGIN:SEQ…]`, optionally with one bare `SEQ` item as the mark of every
//! origin not named (`-` names the entries older than origins). A bare `SEQ` alone is the
//! same mark for every origin: every entry with a higher seq, from whichever clone, which
//! after a merge leaves out the other clone's concurrent entries with lower seqs.

use chrono::{DateTime, Utc};

use super::{Entry, Marks};
use crate::board::Board;
use crate::error::Result;

/// Where a read of the log starts.
#[derive(Clone, Debug, Default, PartialEq)]
pub enum Since {
    #[default]
    All,
    /// Entries whose seq is above this one, from every origin.
    Seq(u64),
    /// Entries at or after this time.
    Time(DateTime<Utc>),
    /// Entries above the mark of their origin.
    Marks(Marks),
}

/// An entry's name: `ORIGIN:SEQ`, or the seq alone for an entry older than origins.
pub fn entry_id(e: &Entry) -> String {
    if e.origin.is_empty() {
        e.seq.to_string()
    } else {
        format!("{}:{}", e.origin, e.seq)
    }
}

/// An entry's name as a clone shows it: its seq alone when it is this clone's own entry
/// (`own`, see [`own_origin`]) or older than origins, `ORIGIN:SEQ` when another clone
/// wrote it.
pub fn entry_name(e: &Entry, own: Option<&str>) -> String {
    if own == Some(e.origin.as_str()) {
        e.seq.to_string()
    } else {
        entry_id(e)
    }
}

/// This clone's origin, if it has written to its log yet (never makes one up).
pub fn own_origin(board: &Board) -> Option<String> {
    let text = std::fs::read_to_string(board.state_dir().join("clock")).ok()?;
    let o = text.split_whitespace().next()?;
    crate::id::validate(o).is_ok().then(|| o.to_string())
}

/// An origin as a cursor names it: what clocks make (`[a-z0-9]`, at least 4), or `-`.
fn origin_word(w: &str) -> Option<String> {
    if w == "-" {
        return Some(String::new());
    }
    (w.len() >= 4
        && w.len() <= 64
        && w.bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit()))
    .then(|| w.to_string())
}

impl Since {
    /// `SEQ`, `ORIGIN:SEQ[,ORIGIN:SEQ…]` (with at most one bare `SEQ` item), an RFC 3339
    /// time, a date, or a relative time (`-2h`, or `2h`: a bare duration means that long
    /// ago). None when it is none of these.
    pub fn parse(text: &str) -> Option<Since> {
        let text = text.trim();
        if let Ok(n) = text.parse::<u64>() {
            return Some(Since::Seq(n));
        }
        if let Some(m) = Since::parse_marks(text) {
            return Some(Since::Marks(m));
        }
        let now = crate::time::now();
        crate::time::parse_time(text, now)
            .or_else(|| crate::time::parse_time(&format!("-{text}"), now))
            .map(Since::Time)
    }

    fn parse_marks(text: &str) -> Option<Marks> {
        let mut marks = Marks::default();
        let mut base = None;
        let mut named = false;
        for item in text.split(',').map(str::trim) {
            match item.rsplit_once(':') {
                Some((o, n)) => {
                    let o = origin_word(o)?;
                    let n: u64 = n.parse().ok()?;
                    let m = marks.by_origin.entry(o).or_insert(0);
                    *m = (*m).max(n);
                    named = true;
                }
                None => {
                    if base.replace(item.parse::<u64>().ok()?).is_some() {
                        return None;
                    }
                }
            }
        }
        marks.base = base.unwrap_or(0);
        named.then_some(marks)
    }

    /// The reader's place after `entries` were seen from here: the marks to pass back.
    /// None for a time.
    pub fn marks(&self) -> Option<Marks> {
        match self {
            Since::All => Some(Marks::default()),
            Since::Seq(n) => Some(Marks::after(*n)),
            Since::Time(_) => None,
            Since::Marks(m) => Some(m.clone()),
        }
    }

    /// Whether the entry is after this place.
    pub fn keep(&self, e: &Entry) -> bool {
        match self {
            Since::All => true,
            Since::Seq(n) => e.seq > *n,
            Since::Time(t) => crate::time::parse_time(&e.at, *t).is_some_and(|at| at >= *t),
            Since::Marks(m) => m.is_new(e),
        }
    }

    /// Where reading the log must start to see every entry [`Since::keep`] accepts.
    pub fn offset(&self, board: &Board) -> Result<u64> {
        match self {
            Since::All => Ok(0),
            Since::Seq(n) => super::offset_after_seq(board, *n),
            Since::Time(t) => super::offset_near_time(board, *t),
            Since::Marks(m) => super::offset_after_marks(board, m),
        }
    }

    /// Said for a person: `seq 42`, `k3f9q2ab:42,7hq2mm0c:17`, or a time.
    pub fn describe(&self) -> String {
        match self {
            Since::All => "the start".into(),
            Since::Seq(n) => format!("seq {n}"),
            Since::Time(t) => crate::time::stamp(*t),
            Since::Marks(m) => m.cursor(),
        }
    }
}

impl Marks {
    /// These marks as `--since` takes them: `ORIGIN:SEQ,…` (a bare `SEQ` first for the
    /// mark of origins not named, when it is not 0).
    pub fn cursor(&self) -> String {
        let mut items = Vec::new();
        if self.base > 0 || self.by_origin.is_empty() {
            items.push(self.base.to_string());
        }
        for (o, n) in &self.by_origin {
            let o = if o.is_empty() { "-" } else { o.as_str() };
            items.push(format!("{o}:{n}"));
        }
        items.join(",")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn e(origin: &str, seq: u64) -> Entry {
        Entry {
            seq,
            origin: origin.into(),
            ..Default::default()
        }
    }

    #[test]
    fn cursors_parse_and_render() {
        assert_eq!(Since::parse("42"), Some(Since::Seq(42)));
        let Some(Since::Marks(m)) = Since::parse("k3f9q2ab:42, 7hq2mm0c:17,-:3") else {
            panic!()
        };
        assert_eq!(m.base, 0);
        assert_eq!(m.cursor(), "-:3,7hq2mm0c:17,k3f9q2ab:42");
        assert_eq!(Since::parse(&m.cursor()), Some(Since::Marks(m.clone())));
        assert!(m.is_new(&e("k3f9q2ab", 43)) && !m.is_new(&e("k3f9q2ab", 42)));
        assert!(
            m.is_new(&e("otherorg", 1)),
            "an origin not named is all new"
        );
        let Some(Since::Marks(m)) = Since::parse("5,abcd:9") else {
            panic!()
        };
        assert!(!m.is_new(&e("zzzz", 5)) && m.is_new(&e("zzzz", 6)));
        assert_eq!(m.cursor(), "5,abcd:9");
        // Times with colons stay times; damaged cursors are none of these.
        assert!(matches!(
            Since::parse("2026-11-24T10:00:00Z"),
            Some(Since::Time(_))
        ));
        for bad in ["abcd:x", "AB:1", "1,2,abcd:3", "abcd:1,"] {
            assert_eq!(Since::parse(bad), None, "{bad}");
        }
        assert_eq!(entry_id(&e("abcd", 7)), "abcd:7");
        assert_eq!(entry_id(&e("", 7)), "7");
    }
}
