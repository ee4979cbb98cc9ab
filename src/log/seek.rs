//! Finding where to start reading log.yaml without reading all of it: a binary search over
//! byte offsets, so `events`, `log --since` and the like cost what they show, not what the
//! log holds.
//!
//! It rests on how `append` writes the log:
//! - entries are appended under the log lock, so their seqs increase through the file;
//! - every entry starts with a `- seq: N` line at column 0 and everything inside it is
//!   indented, so from any byte offset the next entry start is the next such line;
//! - `at` is stamped just before the lock is taken, so times are in file order up to the
//!   wait for the lock; the exception is an entry logged late by the recovery of an
//!   interrupted write (`ops::intent`), which keeps the time of that write.
//!
//! The search only chooses where reading starts; readers still apply their exact filter.
//! When in doubt it starts earlier: an entry whose `at` cannot be read and the last entry
//! (which may be torn, and which `read_from` must see to leave it for the next read) count
//! as "read from here". It always returns 0 or the end of an entry (the start of the next
//! chunk, or the file length), never a place inside an entry: `log --follow` goes on
//! reading from there.
//!
//! Should seqs or times not be in order after all (a hand edit, a git union merge of two
//! branches' logs), the search still returns such a place, but may skip entries a full
//! read would show.

use std::fs::File;
use std::io::{BufRead, BufReader, Read, Seek, SeekFrom};

use chrono::{DateTime, Utc};

use crate::board::Board;
use crate::error::{Error, Result};

/// How far `at` may run behind file order: the longest we expect a writer to wait for the
/// log lock between stamping its entry and appending it.
const TIME_SLACK_SECS: i64 = 5 * 60;

/// The entry found by reading forward from some byte offset.
#[derive(Debug, PartialEq)]
pub struct Probe {
    /// Where its `- seq: N` line starts.
    pub offset: u64,
    /// Where the next entry (any column-0 `- ` line, readable or not) starts, or EOF.
    pub end: u64,
    pub seq: u64,
    /// None when the line after `- seq: N` is not an `at:` with an RFC 3339 time.
    pub at: Option<DateTime<Utc>>,
    /// Its note says it was logged late (see `ops::intent::recover`), so its `at` is older
    /// than its place in the file.
    pub late: bool,
    /// Nothing follows it: it may still be being written.
    pub last: bool,
}

/// The first entry starting at or after byte `pos`. We read from `pos - 1` so that a line
/// starting exactly at `pos` is kept while a line cut by `pos` is dropped.
pub fn first_entry_at_or_after<R: Read + Seek>(
    file: &mut R,
    pos: u64,
) -> std::io::Result<Option<Probe>> {
    let start = pos.saturating_sub(1);
    file.seek(SeekFrom::Start(start))?;
    let mut r = BufReader::new(file);
    let mut line = Vec::new();
    let mut offset = start;
    if pos > 0 {
        offset += r.read_until(b'\n', &mut line)? as u64;
    }
    // Find the entry's first line.
    let seq = loop {
        line.clear();
        let n = r.read_until(b'\n', &mut line)?;
        if n == 0 {
            return Ok(None);
        }
        if let Some(seq) = seq_line(&line) {
            break seq;
        }
        offset += n as u64;
    };
    let mut end = offset + line.len() as u64;
    let mut at = None;
    let mut late = false;
    // Read the rest of the entry, for `at`, a late note and where it ends.
    let mut first = true;
    loop {
        line.clear();
        let n = r.read_until(b'\n', &mut line)?;
        if n == 0 || super::starts_chunk(&line) {
            return Ok(Some(Probe {
                offset,
                end,
                seq,
                at,
                late,
                last: n == 0,
            }));
        }
        if first {
            at = line.strip_prefix(b"  at: ").and_then(parse_at);
            first = false;
        }
        // The note `ops::intent::recover` gives an entry it logs late.
        late |= line.starts_with(b"  note: ") && contains(&line, super::LOGGED_LATE.as_bytes());
        end += n as u64;
    }
}

/// The seq of a complete `- seq: N` line.
fn seq_line(line: &[u8]) -> Option<u64> {
    let digits = line.strip_prefix(b"- seq: ")?.strip_suffix(b"\n")?;
    if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    std::str::from_utf8(digits).ok()?.parse().ok()
}

/// The time of an `at:` value, plain or quoted.
fn parse_at(value: &[u8]) -> Option<DateTime<Utc>> {
    let s = std::str::from_utf8(value).ok()?.trim();
    let s = s.trim_matches(|c| c == '"' || c == '\'');
    DateTime::parse_from_rfc3339(s)
        .ok()
        .map(|t| t.with_timezone(&Utc))
}

fn contains(hay: &[u8], needle: &[u8]) -> bool {
    hay.windows(needle.len()).any(|w| w == needle)
}

/// Where to start reading so as to see every entry that `keep` accepts. `keep` judges an
/// entry (or says None: judge by the next one), and must be monotone over the entries it
/// judges: false, then true. Returns 0 or the end of an entry it rejects (the start of the
/// next entry or unreadable chunk, or the file length).
///
/// A lower-bound search over byte positions: P(pos) says the first judged entry at or
/// after pos is accepted (or there is none, or it is the last). Invariant: every judged
/// entry starting before `lo` is rejected, and P(hi) holds.
pub fn search<R: Read + Seek>(
    file: &mut R,
    len: u64,
    keep: impl Fn(&Probe) -> Option<bool>,
) -> std::io::Result<u64> {
    let (mut lo, mut hi) = (0, len);
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        let mut pos = mid;
        let rejected_until = loop {
            match first_entry_at_or_after(file, pos)? {
                Some(p) if !p.last => match keep(&p) {
                    Some(false) => break Some(p.end),
                    Some(true) => break None,
                    None => pos = p.end,
                },
                _ => break None,
            }
        };
        match rejected_until {
            // Skip the whole entry: every position up to its end finds it or a later one.
            // Its end may pass hi when it spans hi; then the first entry after hi is the
            // first after its end, so lo is still right.
            Some(end) => lo = end,
            None => hi = mid,
        }
    }
    Ok(lo)
}

fn search_log(board: &Board, keep: impl Fn(&Probe) -> Option<bool>) -> Result<u64> {
    let path = board.log_path();
    let mut file = match File::open(&path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(0),
        Err(e) => return Err(Error::io(&path, "read", e)),
    };
    let len = file
        .metadata()
        .map_err(|e| Error::io(&path, "read", e))?
        .len();
    search(&mut file, len, keep).map_err(|e| Error::io(&path, "read", e))
}

/// Where reading must start to see every entry with a seq above `after`.
pub fn offset_after_seq(board: &Board, after: u64) -> Result<u64> {
    search_log(board, |p| Some(p.seq > after))
}

/// Where reading must start to see every entry at or after time `t`: entries are nearly in
/// time order, so we start at the first one stamped no earlier than `t` minus the slack.
pub fn offset_near_time(board: &Board, t: DateTime<Utc>) -> Result<u64> {
    search_log(board, near_time(t))
}

/// Accepts entries stamped at or after `t` minus the slack. Why skipping a rejected entry E
/// and all before it is safe: E was stamped at most the slack before it took the lock, and
/// every entry before it was stamped and appended before that, so all of them are stamped
/// before `t` (one logged late, even earlier). A late entry's own time says nothing about
/// its neighbours: it is not judged. One whose time cannot be read may be anything a
/// person wrote: reading starts at it.
fn near_time(t: DateTime<Utc>) -> impl Fn(&Probe) -> Option<bool> {
    let from = t - chrono::Duration::seconds(TIME_SLACK_SECS);
    move |p| (!p.late).then(|| p.at.is_none_or(|at| at >= from))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Cursor;

    fn entry(seq: u64, minute: u32, note: Option<&str>, diff_lines: usize) -> String {
        let mut s = format!(
            "- seq: {seq}\n  at: 2026-11-23T{:02}:{:02}:00.000Z\n  actor: a\n  op: edit\n  doc: tasks/t.md\n",
            minute / 60,
            minute % 60
        );
        if let Some(n) = note {
            s.push_str(&format!("  note: \"{n}\"\n"));
        }
        if diff_lines > 0 {
            s.push_str("  diff: |\n");
            for i in 0..diff_lines {
                // Lines that look like entries but are indented, as in a real diff.
                s.push_str(&format!("    +- seq: {i}\n"));
            }
        }
        s
    }

    /// A log of `n` entries, one per minute, some with diffs far larger than a read
    /// buffer, and garbage chunks between some.
    fn synthetic(n: u64) -> String {
        let mut text = String::new();
        for seq in 1..=n {
            let diff = match seq % 7 {
                0 => 700, // 11 KB, more than a read buffer
                3 => 40,
                _ => 0,
            };
            text.push_str(&entry(seq, seq as u32, None, diff));
            if seq % 11 == 5 {
                text.push_str("- seq: [oops\n  at: x\n");
            }
        }
        text
    }

    /// Every complete entry: (offset, end, seq, last), by reading the whole text.
    fn all_entries(text: &str) -> Vec<(u64, u64, u64, bool)> {
        let mut starts = Vec::new();
        let mut offset = 0;
        for line in text.split_inclusive('\n') {
            if super::super::starts_chunk(line.as_bytes()) {
                starts.push((offset, seq_line(line.as_bytes())));
            }
            offset += line.len();
        }
        let mut out = Vec::new();
        for (i, (start, seq)) in starts.iter().enumerate() {
            let end = starts.get(i + 1).map_or(text.len(), |s| s.0);
            if let Some(seq) = seq {
                out.push((*start as u64, end as u64, *seq, i + 1 == starts.len()));
            }
        }
        out
    }

    fn search_text(text: &str, keep: impl Fn(&Probe) -> Option<bool>) -> u64 {
        search(&mut Cursor::new(text.as_bytes()), text.len() as u64, keep).unwrap()
    }

    /// What a full read says the search must return: the end of the last entry that fails
    /// (the last entry always counts as passing), or 0.
    fn expected(text: &str, fails: impl Fn(u64) -> bool) -> u64 {
        all_entries(text)
            .iter()
            .filter(|(_, _, seq, last)| !last && fails(*seq))
            .map(|e| e.1)
            .last()
            .unwrap_or(0)
    }

    #[test]
    fn probes_find_the_next_entry_start() {
        let text = synthetic(30);
        let entries = all_entries(&text);
        for pos in 0..=text.len() as u64 {
            let want = entries.iter().find(|e| e.0 >= pos);
            let got = first_entry_at_or_after(&mut Cursor::new(text.as_bytes()), pos).unwrap();
            assert_eq!(
                got.as_ref().map(|p| (p.offset, p.end, p.seq, p.last)),
                want.copied(),
                "pos {pos}"
            );
            if let Some(p) = got {
                let minute = p.seq as u32;
                assert_eq!(
                    p.at.unwrap().format("%H:%M").to_string(),
                    format!("{:02}:{:02}", minute / 60, minute % 60)
                );
            }
        }
    }

    #[test]
    fn seq_search_matches_a_full_read() {
        let text = synthetic(300);
        assert!(text.len() > 300_000, "{}", text.len());
        for after in 0..=302 {
            let got = search_text(&text, |p| Some(p.seq > after));
            assert_eq!(got, expected(&text, |seq| seq <= after), "after {after}");
        }
    }

    #[test]
    fn small_logs() {
        assert_eq!(search_text("", |p| Some(p.seq > 0)), 0);
        let one = entry(1, 1, None, 0);
        // The last entry is always read: it may be torn.
        assert_eq!(search_text(&one, |p| Some(p.seq > 5)), 0);
        let two = format!("{one}{}", entry(2, 2, None, 0));
        assert_eq!(search_text(&two, |p| Some(p.seq > 1)), one.len() as u64);
        assert_eq!(search_text(&two, |p| Some(p.seq > 9)), one.len() as u64);
        assert_eq!(search_text(&two, |p| Some(p.seq > 0)), 0);
        // A torn last entry, cut in its first line: reading starts at it, not past it.
        let torn = format!("{two}- se");
        assert_eq!(search_text(&torn, |p| Some(p.seq > 9)), two.len() as u64);
        let garbage = "not a log\n";
        assert_eq!(search_text(garbage, |p| Some(p.seq > 9)), 0);
    }

    #[test]
    fn time_search_keeps_every_later_entry() {
        // One entry a minute, with jitter within the slack, some logged late (an hour old)
        // and one whose time cannot be read.
        let mut text = String::new();
        let minutes: Vec<u32> = (1..=400)
            .map(|s| s + 60 + [0, 3, 0, 0, 2][s as usize % 5])
            .collect();
        for (i, &m) in minutes.iter().enumerate() {
            let seq = i as u64 + 1;
            let e = match seq {
                300 => entry(seq, m, None, 0).replace("  at: 2026", "  at: oops"),
                _ if seq.is_multiple_of(9) => {
                    entry(seq, m - 60, Some("x (logged late: the write …)"), 0)
                }
                _ => entry(seq, m, None, 2 * (seq as usize % 3)),
            };
            text.push_str(&e);
        }
        let entries = all_entries(&text);
        for t_min in (0..500).step_by(7) {
            let t = DateTime::parse_from_rfc3339("2026-11-23T00:00:00Z")
                .unwrap()
                .with_timezone(&Utc)
                + chrono::Duration::minutes(t_min);
            let from = search_text(&text, near_time(t));
            for (i, e) in entries.iter().enumerate() {
                let at = first_entry_at_or_after(&mut Cursor::new(text.as_bytes()), e.0)
                    .unwrap()
                    .unwrap()
                    .at;
                if at.is_some_and(|at| at >= t) {
                    assert!(
                        e.0 >= from,
                        "t {t}: entry {} at {at:?} is before {from}",
                        i + 1
                    );
                }
            }
            // It does skip, the late entry notwithstanding: little more than the slack and
            // the jitter before t is read (up to the entry with no time, which stops it).
            if (80..350).contains(&t_min) {
                let skipped = entries.iter().filter(|e| e.1 <= from).count() as i64;
                assert!(skipped >= t_min - 72, "t {t_min}: skipped {skipped}");
            }
        }
    }
}
