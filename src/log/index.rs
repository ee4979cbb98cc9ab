//! Where to start reading the log for a seq or a set of per-origin marks, without reading
//! all of it.
//!
//! A merge of two clones' logs puts one side's entries after the other's, so seqs are not
//! in file order and no binary search is safe. What is safe: start at a place before which
//! every entry is at or below the reader's mark for its origin. Readers keep, in
//! `.state/log-index` (a cache, never tracked), checkpoints every [`STEP`] bytes: the end
//! of one entry, that entry's own (origin, seq), and the highest seq of every origin in the
//! file before it. A reader starts at the last checkpoint whose every origin is at or below
//! its mark (an origin the reader has no mark for counts as 0, so an unseen origin before it
//! makes it unusable), scans entry heads from there, and adds checkpoints for what it read.
//!
//! A checkpoint holds only while the file before it is unchanged. Appends keep it; a merge
//! by `git pull` keeps this side's lines first, so the checkpoints in them stay; a rebase,
//! a branch switch or a hand edit that changes the file before a checkpoint moves the entry
//! it names away from its place, so every checkpoint is checked (the entry ending there is
//! read back and must be the one it names) before it is used, and dropped with all later
//! ones when it is not. Without a usable checkpoint the reader scans from the start, as
//! before.

use std::collections::BTreeMap;
use std::io::{Read, Seek, SeekFrom};

use crate::board::Board;

/// Bytes of log between two checkpoints: what a reader at the end of the log scans at
/// most beyond the entries it wants.
pub const STEP: u64 = 256 * 1024;

/// One checkpoint: the entry `[start, end)` is (origin, seq), and `max` the highest seq of
/// each origin among the entries before `end`.
#[derive(Clone, Debug, PartialEq)]
pub struct Checkpoint {
    pub start: u64,
    pub end: u64,
    pub seq: u64,
    pub origin: String,
    pub max: BTreeMap<String, u64>,
}

/// How an empty origin (entries older than origins) is written.
const NO_ORIGIN: &str = "-";

fn origin_word(o: &str) -> &str {
    if o.is_empty() { NO_ORIGIN } else { o }
}

fn origin_of(w: &str) -> String {
    if w == NO_ORIGIN {
        String::new()
    } else {
        w.to_string()
    }
}

fn path(board: &Board) -> std::path::PathBuf {
    board.state_dir().join("log-index")
}

/// Checkpoints as saved: `START END SEQ ORIGIN` then `ORIGIN=MAX` words, one line each.
fn parse(text: &str) -> Vec<Checkpoint> {
    let mut out: Vec<Checkpoint> = Vec::new();
    for line in text.lines() {
        let mut w = line.split_whitespace();
        let (Some(start), Some(end), Some(seq), Some(origin)) = (
            w.next().and_then(|s| s.parse().ok()),
            w.next().and_then(|s| s.parse().ok()),
            w.next().and_then(|s| s.parse().ok()),
            w.next(),
        ) else {
            break;
        };
        let mut max = BTreeMap::new();
        for pair in w {
            let Some((o, n)) = pair.rsplit_once('=') else {
                return out;
            };
            let Ok(n) = n.parse() else {
                return out;
            };
            max.insert(origin_of(o), n);
        }
        if out.last().is_some_and(|c| c.end > start) || start >= end {
            break;
        }
        out.push(Checkpoint {
            start,
            end,
            seq,
            origin: origin_of(origin),
            max,
        });
    }
    out
}

fn render(points: &[Checkpoint]) -> String {
    let mut s = String::new();
    for c in points {
        s.push_str(&format!(
            "{} {} {} {}",
            c.start,
            c.end,
            c.seq,
            origin_word(&c.origin)
        ));
        for (o, n) in &c.max {
            s.push_str(&format!(" {}={n}", origin_word(o)));
        }
        s.push('\n');
    }
    s
}

/// Is the entry at `[c.start, c.end)` of the file still the one the checkpoint names?
fn holds(file: &mut std::fs::File, len: u64, c: &Checkpoint) -> bool {
    if c.end > len || c.end - c.start > 1 << 20 {
        return false;
    }
    let from = c.start.saturating_sub(1);
    let mut buf = vec![0; (c.end - from) as usize];
    if file.seek(SeekFrom::Start(from)).is_err() || file.read_exact(&mut buf).is_err() {
        return false;
    }
    let (before, chunk) = if c.start == 0 {
        (b'\n', &buf[..])
    } else {
        (buf[0], &buf[1..])
    };
    before == b'\n'
        && chunk.ends_with(b"\n")
        && super::head(chunk).is_some_and(|h| h.seq == c.seq && h.origin == c.origin)
        && (!chunk.starts_with(b"- {") || !chunk[..chunk.len() - 1].contains(&b'\n'))
}

/// The checkpoints of this board's log up to the last one `usable` accepts and that still
/// holds (that one last; none when there is none). Checkpoints after it are left out: the
/// reader's scan from it makes them again.
pub fn load(
    board: &Board,
    file: &mut std::fs::File,
    len: u64,
    usable: &dyn Fn(&BTreeMap<String, u64>) -> bool,
) -> (Vec<Checkpoint>, String) {
    let text = std::fs::read_to_string(path(board)).unwrap_or_default();
    let mut points = parse(&text);
    // Usable ones come first: the maxima only grow along the file.
    while let Some(i) = points.iter().rposition(|c| usable(&c.max)) {
        points.truncate(i + 1);
        if holds(file, len, &points[i]) {
            return (points, text);
        }
        points.truncate(i);
    }
    points.clear();
    (points, text)
}

/// Saves checkpoints when they differ from `was` (best effort: it is a cache).
pub fn save(board: &Board, points: &[Checkpoint], was: &str) {
    let text = render(points);
    let p = path(board);
    if text != was && p.parent().is_some_and(|d| d.is_dir()) {
        // A cache: every checkpoint is checked against the log before it is used.
        let _ = crate::file::write(&p, text.as_bytes(), crate::file::Durability::Cache);
    }
}

/// Builds checkpoints while a reader scans entry heads from a checkpoint (or 0) on.
pub struct Builder {
    max: BTreeMap<String, u64>,
    last_end: u64,
    pub added: Vec<Checkpoint>,
}

impl Builder {
    /// Starting at `from` (with what the checkpoint there says).
    pub fn new(from: Option<&Checkpoint>) -> Builder {
        Builder {
            max: from.map(|c| c.max.clone()).unwrap_or_default(),
            last_end: from.map_or(0, |c| c.end),
            added: Vec::new(),
        }
    }

    /// One complete entry at `[start, end)`, not the file's last (which may be torn).
    pub fn entry(&mut self, start: u64, end: u64, seq: u64, origin: &str) {
        let m = self.max.entry(origin.to_string()).or_insert(0);
        *m = (*m).max(seq);
        if end - self.last_end >= STEP {
            self.added.push(Checkpoint {
                start,
                end,
                seq,
                origin: origin.to_string(),
                max: self.max.clone(),
            });
            self.last_end = end;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn checkpoints_read_back() {
        let points = vec![
            Checkpoint {
                start: 10,
                end: 20,
                seq: 3,
                origin: "abc".into(),
                max: [("abc".to_string(), 3), (String::new(), 2)].into(),
            },
            Checkpoint {
                start: 20,
                end: 40,
                seq: 1,
                origin: String::new(),
                max: [("abc".to_string(), 3), (String::new(), 2)].into(),
            },
        ];
        assert_eq!(parse(&render(&points)), points);
        // A damaged line ends what is read.
        assert_eq!(parse("1 2 3 a a=x\n"), vec![]);
        assert_eq!(parse("5 9 3 a a=3\n1 2 1 a a=1\n").len(), 1);
    }
}
