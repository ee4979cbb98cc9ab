//! Finding where to start reading log.yaml: `events`, `log --since` and watch mode's
//! recovery read only from the first entry that can matter.
//!
//! The log is not always in order. Appends are (each seq is above every seq in the log's
//! tail), but a plain `git pull` that merges two clones' logs puts one side's entries after
//! the other's, whatever their seqs and times. So where to start is found by scanning the
//! head of every entry in file order (its first line, without parsing YAML: one-line
//! entries hold seq, origin and time there), never by a binary search, which could skip an
//! entry the other side wrote. Readers still apply their exact filter.
//!
//! When in doubt it starts earlier: an entry whose `at` cannot be read and the last entry
//! (which may be torn, and which `read_from` must see to leave it for the next read) count
//! as "read from here". It always returns 0 or the start or end of an entry, never a place
//! inside one: `log --follow` goes on reading from there.
//!
//! `at` is stamped just before the log lock is taken, so times are in append order up to
//! the wait for the lock; the exception is an entry logged late by the recovery of an
//! interrupted write (`ops::intent`), which keeps the time of that write and is not judged.

use chrono::{DateTime, Utc};

use crate::board::Board;
use crate::error::{Error, Result};

/// How far `at` may run behind file order: the longest we expect a writer to wait for the
/// log lock between stamping its entry and appending it.
const TIME_SLACK_SECS: i64 = 5 * 60;

/// The head of one entry, as the search judges it.
#[derive(Debug, PartialEq)]
pub struct Probe {
    /// Where the entry starts.
    pub offset: u64,
    /// Where the next chunk (any column-0 `- ` line, readable or not) starts, or EOF.
    pub end: u64,
    pub seq: u64,
    /// None when the entry's `at` is not an RFC 3339 time.
    pub at: Option<DateTime<Utc>>,
    /// Its note says it was logged late (see `ops::intent::recover`), so its `at` is older
    /// than its place in the file.
    pub late: bool,
    /// Nothing follows it: it may still be being written.
    pub last: bool,
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

/// Does a one-line entry's note say it was logged late?
fn one_line_late(line: &[u8]) -> bool {
    contains(line, format!(", note: \"{}", super::LOGGED_LATE).as_bytes())
}

/// Every entry's head, in file order (chunks that are not entries are left out).
pub fn probes(bytes: &[u8]) -> Vec<Probe> {
    let parts = super::chunks(bytes);
    let mut out = Vec::with_capacity(parts.len());
    for (i, (offset, chunk)) in parts.iter().enumerate() {
        let Some(h) = super::head(chunk) else {
            continue;
        };
        let (at, late) = if h.one_line {
            (
                h.at.and_then(|t| parse_at(t.as_bytes())),
                one_line_late(chunk),
            )
        } else {
            let at = chunk
                .split(|&b| b == b'\n')
                .nth(1)
                .and_then(|l| l.strip_prefix(b"  at: "))
                .and_then(parse_at);
            let late = chunk
                .split(|&b| b == b'\n')
                .any(|l| l.starts_with(b"  note: ") && contains(l, super::LOGGED_LATE.as_bytes()));
            (at, late)
        };
        out.push(Probe {
            offset: *offset as u64,
            end: (offset + chunk.len()) as u64,
            seq: h.seq,
            at,
            late,
            last: i + 1 == parts.len(),
        });
    }
    out
}

/// The start of the first entry `keep` accepts (or of the last entry, which may be torn
/// and which the reader must see). Without one: the end of the last entry it rejected, or
/// 0. `keep` may say None: not judged (read on).
pub fn first_kept(bytes: &[u8], keep: impl Fn(&Probe) -> Option<bool>) -> u64 {
    let mut from = 0;
    for p in probes(bytes) {
        if p.last {
            return p.offset;
        }
        match keep(&p) {
            Some(true) => return p.offset,
            Some(false) => from = p.end,
            None => {}
        }
    }
    from
}

fn first_kept_in_log(board: &Board, keep: impl Fn(&Probe) -> Option<bool>) -> Result<u64> {
    let path = board.log_path();
    match std::fs::read(&path) {
        Ok(bytes) => Ok(first_kept(&bytes, keep)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(0),
        Err(e) => Err(Error::io(&path, "read", e)),
    }
}

/// Where reading must start to see every entry with a seq above `after`.
pub fn offset_after_seq(board: &Board, after: u64) -> Result<u64> {
    first_new(board, &|_, seq| seq > after, &|max| {
        max.values().all(|&n| n <= after)
    })
}

/// Where reading must start to see every entry new to `marks` (above the mark of its
/// origin).
pub fn offset_after_marks(board: &Board, marks: &super::Marks) -> Result<u64> {
    first_new(board, &|origin, seq| seq > marks.mark(origin), &|max| {
        max.iter().all(|(o, &n)| n <= marks.mark(o))
    })
}

/// The start of the first entry `new` accepts (by origin and seq), or of the last entry
/// (which may be torn, and which the reader must see); without one, the end of the last
/// entry it rejected, or 0. The scan of entry heads starts at the last checkpoint of
/// [`super::index`] before which nothing is new (`usable`), and leaves checkpoints for what
/// it read.
fn first_new(
    board: &Board,
    new: &dyn Fn(&str, u64) -> bool,
    usable: &dyn Fn(&std::collections::BTreeMap<String, u64>) -> bool,
) -> Result<u64> {
    use std::io::{Read, Seek, SeekFrom};
    let path = board.log_path();
    let mut file = match std::fs::File::open(&path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(0),
        Err(e) => return Err(Error::io(&path, "read", e)),
    };
    let len = file
        .metadata()
        .map_err(|e| Error::io(&path, "read", e))?
        .len();
    let (mut points, was) = super::index::load(board, &mut file, len, usable);
    let from = points.last().map_or(0, |c| c.end);
    let mut builder = super::index::Builder::new(points.last());
    let mut bytes = Vec::new();
    file.seek(SeekFrom::Start(from))
        .and_then(|_| file.read_to_end(&mut bytes))
        .map_err(|e| Error::io(&path, "read", e))?;
    let parts = super::chunks(&bytes);
    let mut found = None;
    let mut after_rejected = from;
    for (i, (offset, chunk)) in parts.iter().enumerate() {
        let start = from + *offset as u64;
        let end = start + chunk.len() as u64;
        let Some(h) = super::head(chunk) else {
            continue;
        };
        if i + 1 == parts.len() {
            found.get_or_insert(start);
            break;
        }
        if found.is_none() {
            if new(h.origin, h.seq) {
                found = Some(start);
            } else {
                after_rejected = end;
            }
        }
        if chunk.ends_with(b"\n") {
            builder.entry(start, end, h.seq, h.origin);
        }
    }
    points.extend(builder.added);
    super::index::save(board, &points, &was);
    Ok(found.unwrap_or(after_rejected))
}

/// Where reading must start to see every entry at or after time `t`: the first one
/// stamped no earlier than `t` minus the slack.
pub fn offset_near_time(board: &Board, t: DateTime<Utc>) -> Result<u64> {
    first_kept_in_log(board, near_time(t))
}

/// Accepts entries stamped at or after `t` minus the slack. Why starting at the first one
/// is safe: every entry before it in the file was stamped before `t` minus the slack
/// (those judged; a late one's own time says nothing, and one whose time cannot be read
/// is where reading starts).
fn near_time(t: DateTime<Utc>) -> impl Fn(&Probe) -> Option<bool> {
    let from = t - chrono::Duration::seconds(TIME_SLACK_SECS);
    move |p| (!p.late).then(|| p.at.is_none_or(|at| at >= from))
}

#[cfg(test)]
mod tests {
    use super::*;

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

    /// The same entry in today's one-line form.
    fn one_line(seq: u64, origin: &str, minute: u32, note: Option<&str>) -> String {
        super::super::render(&super::super::Entry {
            seq,
            origin: origin.into(),
            at: format!("2026-11-23T{:02}:{:02}:00.000Z", minute / 60, minute % 60),
            actor: "a".into(),
            op: "edit".into(),
            doc: "tasks/t.md".into(),
            note: note.map(String::from),
            diff: Some("-- seq: 1\n+- {seq: 2}\n".into()),
            ..Default::default()
        })
    }

    /// A log of `n` entries, one per minute, old multi-line ones first, then one-line
    /// ones, with garbage chunks between some.
    fn synthetic(n: u64) -> String {
        let mut text = String::new();
        for seq in 1..=n {
            if seq > n / 2 {
                text.push_str(&one_line(seq, "abcd", seq as u32, None));
            } else {
                let diff = if seq % 7 == 3 { 40 } else { 0 };
                text.push_str(&entry(seq, seq as u32, None, diff));
            }
            if seq % 11 == 5 {
                text.push_str("- seq: [oops\n  at: x\n");
            }
        }
        text
    }

    #[test]
    fn heads_of_both_forms_are_read() {
        let text = synthetic(40);
        let ps = probes(text.as_bytes());
        assert_eq!(
            ps.iter().map(|p| p.seq).collect::<Vec<_>>(),
            (1..=40).collect::<Vec<_>>()
        );
        for p in &ps {
            let minute = p.seq as u32;
            assert_eq!(
                p.at.unwrap().format("%H:%M").to_string(),
                format!("{:02}:{:02}", minute / 60, minute % 60)
            );
            assert!(text[p.offset as usize..].starts_with("- "));
        }
        assert!(ps.last().unwrap().last);
    }

    #[test]
    fn seq_search_starts_at_the_first_later_entry() {
        let text = synthetic(100);
        let ps = probes(text.as_bytes());
        for after in 0..=102 {
            let got = first_kept(text.as_bytes(), |p| Some(p.seq > after));
            let want = ps
                .iter()
                .find(|p| p.seq > after || p.last)
                .map(|p| p.offset)
                .unwrap();
            assert_eq!(got, want, "after {after}");
        }
    }

    #[test]
    fn a_merged_log_out_of_order_is_read_from_the_first_later_entry() {
        // Two clones' logs after `git pull`: ours (seq 3..5) then theirs (seq 3..4).
        let text = [
            one_line(1, "a", 1, None),
            one_line(2, "a", 2, None),
            one_line(3, "a", 3, None),
            one_line(4, "a", 4, None),
            one_line(5, "a", 5, None),
            one_line(3, "b", 3, None),
            one_line(4, "b", 4, None),
        ]
        .concat();
        let start = |n: usize| -> u64 { text.lines().take(n).map(|l| l.len() as u64 + 1).sum() };
        // Reading from the first entry with a higher seq sees theirs too, though a binary
        // search would have taken their seq 3 for "before".
        assert_eq!(first_kept(text.as_bytes(), |p| Some(p.seq > 2)), start(2));
        assert_eq!(first_kept(text.as_bytes(), |p| Some(p.seq > 4)), start(4));
        assert_eq!(first_kept(text.as_bytes(), |p| Some(p.seq > 3)), start(3));
    }

    #[test]
    fn small_logs() {
        let k = |t: &str, after: u64| first_kept(t.as_bytes(), |p| Some(p.seq > after));
        assert_eq!(k("", 0), 0);
        let one = one_line(1, "a", 1, None);
        // The last entry is always read: it may be torn.
        assert_eq!(k(&one, 5), 0);
        let two = format!("{one}{}", one_line(2, "a", 2, None));
        assert_eq!(k(&two, 1), one.len() as u64);
        assert_eq!(k(&two, 9), one.len() as u64);
        assert_eq!(k(&two, 0), 0);
        let torn = format!("{two}- {{seq: 3, ori");
        assert_eq!(k(&torn, 9), two.len() as u64);
        assert_eq!(k("not a log\n", 9), 0);
    }

    #[test]
    fn time_search_keeps_every_later_entry() {
        let mut text = String::new();
        let minutes: Vec<u32> = (1..=200)
            .map(|s| s + 60 + [0, 3, 0, 0, 2][s as usize % 5])
            .collect();
        for (i, &m) in minutes.iter().enumerate() {
            let seq = i as u64 + 1;
            let e = match seq {
                150 => one_line(seq, "a", m, None).replace("at: \"2026", "at: \"oops"),
                _ if seq.is_multiple_of(9) => {
                    one_line(seq, "a", m - 60, Some("logged late: the write …"))
                }
                _ if seq < 50 => entry(seq, m, None, 0),
                _ => one_line(seq, "a", m, None),
            };
            text.push_str(&e);
        }
        let ps = probes(text.as_bytes());
        assert!(ps.iter().filter(|p| p.late).count() > 10);
        for t_min in (0..300).step_by(7) {
            let t = DateTime::parse_from_rfc3339("2026-11-23T00:00:00Z")
                .unwrap()
                .with_timezone(&Utc)
                + chrono::Duration::minutes(t_min);
            let from = first_kept(text.as_bytes(), near_time(t));
            for p in &ps {
                if !p.late && p.at.is_some_and(|at| at >= t) {
                    assert!(p.offset >= from, "t {t}: entry {} is before {from}", p.seq);
                }
            }
            if (80..200).contains(&t_min) {
                let skipped = ps.iter().filter(|p| p.end <= from).count() as i64;
                assert!(skipped >= t_min - 72, "t {t_min}: skipped {skipped}");
            }
        }
    }

    /// A board whose log is `entries` (origin, seq), each with a diff of about 1 KiB.
    fn board_with_log(dir: &std::path::Path, entries: &[(&str, u64)]) -> Board {
        crate::board::init(dir).unwrap();
        let board = Board::open(&dir.join(".tavern")).unwrap();
        write_log(&board, entries);
        board
    }

    fn write_log(board: &Board, entries: &[(&str, u64)]) {
        let text: String = entries
            .iter()
            .map(|(o, n)| {
                super::super::render(&super::super::Entry {
                    seq: *n,
                    origin: o.to_string(),
                    at: "2026-11-23T00:00:00.000Z".into(),
                    actor: "a".into(),
                    op: "edit".into(),
                    doc: "tasks/t.md".into(),
                    diff: Some("+x\n".repeat(256)),
                    ..Default::default()
                })
            })
            .collect();
        std::fs::write(board.log_path(), text).unwrap();
    }

    fn run(o: &'static str, seqs: std::ops::RangeInclusive<u64>) -> Vec<(&'static str, u64)> {
        seqs.map(|n| (o, n)).collect()
    }

    /// Every entry new to `marks`, read the way `events` reads them, as (origin, seq).
    fn new_to(board: &Board, marks: &super::super::Marks) -> Vec<(String, u64)> {
        marks
            .read_new(board)
            .unwrap()
            .into_iter()
            .map(|e| (e.origin, e.seq))
            .collect()
    }

    fn want(entries: &[(&str, u64)], marks: &super::super::Marks) -> Vec<(String, u64)> {
        let mut v: Vec<(String, u64)> = entries
            .iter()
            .filter(|(o, n)| *n > marks.mark(o))
            .map(|(o, n)| (o.to_string(), *n))
            .collect();
        v.sort_by(|a, b| (a.1, &a.0).cmp(&(b.1, &b.0)));
        v
    }

    #[test]
    fn merged_logs_out_of_order_are_read_exactly_from_checkpoints() {
        let tmp = tempfile::tempdir().unwrap();
        // Ours (a: 1..=600), theirs merged after (b: 300..=700, an old origin-less run
        // first), then ours again after the merge (a: 701..=800).
        let mut entries = run("", 1..=50);
        entries.extend(run("a", 51..=600));
        entries.extend(run("b", 300..=700));
        entries.extend(run("a", 701..=800));
        let board = board_with_log(tmp.path(), &entries);
        let len = std::fs::metadata(board.log_path()).unwrap().len();
        let mark_sets: Vec<super::super::Marks> = vec![
            super::super::Marks::after(0),
            super::super::Marks::after(299),
            super::super::Marks::after(590),
            super::super::Marks::after(650),
            super::super::Marks::after(795),
            super::super::Marks::after(800),
            super::super::Marks {
                base: 0,
                by_origin: [("a".to_string(), 800), (String::new(), 50)].into(),
            },
            super::super::Marks {
                base: 0,
                by_origin: [
                    ("a".to_string(), 790),
                    ("b".to_string(), 650),
                    (String::new(), 50),
                ]
                .into(),
            },
            super::super::Marks {
                base: 0,
                by_origin: [
                    ("a".to_string(), 800),
                    ("b".to_string(), 700),
                    (String::new(), 50),
                ]
                .into(),
            },
        ];
        for round in 0..2 {
            for m in &mark_sets {
                assert_eq!(new_to(&board, m), want(&entries, m), "round {round}, {m:?}");
            }
        }
        let index = std::fs::read_to_string(board.state_dir().join("log-index")).unwrap();
        assert!(index.lines().count() >= 4, "{index}");
        // Near the end, reading starts at the last usable checkpoint: no further back
        // than one step before the first new entry's checkpoint.
        let a790 = super::super::Marks {
            base: 0,
            by_origin: [
                ("a".to_string(), 790),
                ("b".to_string(), 700),
                (String::new(), 50),
            ]
            .into(),
        };
        let from = offset_after_marks(&board, &a790).unwrap();
        assert!(from > len - 20 * 1100, "{from} of {len}");
        let bytes = std::fs::read(board.log_path()).unwrap();
        assert_eq!(
            offset_after_seq(&board, 300).unwrap(),
            first_kept(&bytes, |p| Some(p.seq > 300))
        );

        // A rebase puts theirs first and ours after: the checkpoints in ours no longer
        // hold and are dropped; every answer is still exact.
        let mut rebased = run("", 1..=50);
        rebased.extend(run("b", 300..=700));
        rebased.extend(run("a", 51..=600));
        rebased.extend(run("a", 701..=820));
        write_log(&board, &rebased);
        for round in 0..2 {
            for m in &mark_sets {
                assert_eq!(
                    new_to(&board, m),
                    want(&rebased, m),
                    "rebased {round}, {m:?}"
                );
            }
        }
        // A log cut short (a branch switched to an older one) too.
        let short = run("", 1..=50);
        write_log(&board, &short);
        for m in &mark_sets {
            assert_eq!(new_to(&board, m), want(&short, m), "short, {m:?}");
        }
    }
}
