//! A reader's place in the log that stays right after a merge: the highest seq it has seen
//! from each origin. Each clone's seqs increase, and a merge keeps each side's entries in
//! their order, so an entry is new to the reader exactly when its seq is above the mark
//! of its origin, wherever the merge put it in the file.

use std::collections::BTreeMap;
use std::path::Path;

use super::{Entry, Head};
use crate::board::Board;
use crate::error::{Error, Result};

/// High-water marks per origin. `base` is a mark for every origin not listed: a cursor
/// saved as a single seq before origins existed.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Marks {
    pub base: u64,
    pub by_origin: BTreeMap<String, u64>,
}

/// How an empty origin (entries written before origins) is written in a cursor file.
const NO_ORIGIN: &str = "-";

impl Marks {
    /// Has a reader with these marks passed everything one with `other` has? (Every mark
    /// of `other` at most this one's; an origin these lack counts as 0.)
    pub fn covers(&self, other: &Marks) -> bool {
        self.base >= other.base
            && other
                .by_origin
                .iter()
                .all(|(o, n)| self.by_origin.get(o).copied().unwrap_or(0) >= *n)
    }

    /// Everything up to and including `seq`, from every origin (a `--since SEQ`).
    pub fn after(seq: u64) -> Marks {
        Marks {
            base: seq,
            by_origin: BTreeMap::new(),
        }
    }

    /// The mark of `origin`: the highest seq of it the reader has seen.
    pub fn mark(&self, origin: &str) -> u64 {
        self.by_origin.get(origin).copied().unwrap_or(self.base)
    }

    pub fn is_new_head(&self, h: &Head) -> bool {
        h.seq > self.mark(h.origin)
    }

    pub fn is_new(&self, e: &Entry) -> bool {
        e.seq > self.mark(&e.origin)
    }

    pub fn advance(&mut self, e: &Entry) {
        let m = self.mark(&e.origin).max(e.seq);
        self.by_origin.insert(e.origin.clone(), m);
    }

    /// Reads a cursor file: `ORIGIN SEQ` lines (`-` for no origin), or one seq (an older
    /// cursor). A missing or unreadable file is the start of the log.
    pub fn load(path: &Path) -> Marks {
        Marks::parse(&std::fs::read_to_string(path).unwrap_or_default())
    }

    /// Reads the text of a cursor file (see [`Marks::load`]).
    pub fn parse(text: &str) -> Marks {
        let mut marks = Marks::default();
        for line in text.lines() {
            let mut words = line.split_whitespace();
            match (words.next(), words.next()) {
                (Some(n), None) => marks.base = n.parse().unwrap_or(0),
                (Some(o), Some(n)) => {
                    let o = if o == NO_ORIGIN { "" } else { o };
                    marks
                        .by_origin
                        .insert(o.to_string(), n.parse().unwrap_or(0));
                }
                _ => {}
            }
        }
        marks
    }

    pub fn render(&self) -> String {
        let mut out = String::new();
        if self.base > 0 {
            out.push_str(&format!("{}\n", self.base));
        }
        for (o, n) in &self.by_origin {
            let o = if o.is_empty() { NO_ORIGIN } else { o };
            out.push_str(&format!("{o} {n}\n"));
        }
        out
    }

    pub fn save(&self, path: &Path) -> Result<()> {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, "create directory", e))?;
        }
        // Synced whole: a reader's cursor going back one step after a power loss only
        // shows entries again, but an empty one would show the whole log as new.
        crate::file::write(
            path,
            self.render().as_bytes(),
            crate::file::Durability::Whole,
        )
    }

    /// Every entry new to these marks, in reader order (seq, then origin).
    pub fn read_new(&self, board: &Board) -> Result<Vec<Entry>> {
        let from = super::seek::offset_after_marks(board, self)?;
        let (entries, _, _) = super::read_filtered(board, from, None, &|h| !self.is_new_head(h))?;
        Ok(entries.into_iter().filter(|e| self.is_new(e)).collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn marks_cover_those_they_are_at_or_past_in_every_origin() {
        let m = |base, origins: &[(&str, u64)]| Marks {
            base,
            by_origin: origins.iter().map(|(o, n)| (o.to_string(), *n)).collect(),
        };
        let synced = m(3, &[("a", 5), ("b", 2)]);
        assert!(m(3, &[("a", 5), ("b", 2)]).covers(&synced));
        assert!(m(4, &[("a", 7), ("b", 2), ("c", 1)]).covers(&synced));
        assert!(!m(3, &[("a", 7)]).covers(&synced), "an origin missing");
        assert!(!m(3, &[("a", 4), ("b", 9)]).covers(&synced), "one behind");
        assert!(!m(2, &[("a", 5), ("b", 2)]).covers(&synced));
        assert!(!Marks::default().covers(&synced), "an empty note");
    }

    #[test]
    fn marks_round_trip_and_read_old_cursors() {
        let mut m = Marks::load(Path::new("/nonexistent"));
        assert_eq!(m, Marks::default());
        let e = |seq, origin: &str| Entry {
            seq,
            origin: origin.into(),
            ..Default::default()
        };
        m.advance(&e(5, "a"));
        m.advance(&e(3, ""));
        assert!(m.is_new(&e(4, "b")) && !m.is_new(&e(5, "a")) && m.is_new(&e(6, "a")));
        let tmp = tempfile::tempdir().unwrap();
        let p = tmp.path().join("c");
        std::fs::write(&p, m.render()).unwrap();
        assert_eq!(Marks::load(&p), m);
        std::fs::write(&p, "41\n").unwrap();
        let old = Marks::load(&p);
        assert!(!old.is_new(&e(41, "x")) && old.is_new(&e(42, "x")));
    }
}
