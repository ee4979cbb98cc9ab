//! The audit log, `log.yaml`: a top-level YAML sequence with one item per mutation.
//!
//! Appends happen under the log lock, as one write followed by fsync, so the file is valid
//! YAML after every append and two branches merge with git's union driver. A torn last
//! entry (a crash in the middle of a write) is detected on the next append and cut off;
//! readers skip any entry they cannot parse and say so.

use std::fs::OpenOptions;
use std::io::{Read, Seek, SeekFrom, Write};

use serde::{Deserialize, Serialize};

use crate::board::Board;
use crate::error::{Error, Result};
use crate::store;
use crate::yaml::{self, YamlLimits};

mod index;
mod marks;
mod seek;
mod since;
pub use marks::Marks;
pub use seek::{offset_after_marks, offset_after_seq, offset_near_time};
pub use since::{Since, entry_id, entry_name, own_origin};

/// How the note of an entry logged late begins (by the recovery of a write interrupted
/// before its log append): its `at` is older than its place in the file, which the
/// search by time must know.
pub const LOGGED_LATE: &str = "logged late";

/// The most diff text one entry holds; the rest is summarised in a last line.
const MAX_DIFF_BYTES: usize = 8 * 1024;

/// How much of the end of log.yaml we read to find the last seq.
const TAIL_BYTES: u64 = 64 * 1024;

#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct Entry {
    /// Unique per origin, and a Lamport clock across origins: an entry's seq is above
    /// every seq its clone's log held when it was written.
    pub seq: u64,
    /// The clone that wrote it (a random id kept in `.state/clock`); empty in entries
    /// written before origins existed.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub origin: String,
    pub at: String,
    pub actor: String,
    pub op: String,
    /// The front-end the change came through when it was not the command line
    /// (`dashboard` for `tavern serve`); see [`set_via`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub via: Option<String>,
    pub doc: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub transition: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub to: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rev: Option<u64>,
    /// Watch mode: the event that started an activation (`created`, `transition:review`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub event: Option<String>,
    /// Watch mode: the seq of the entry whose change started an activation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cause: Option<u64>,
    /// Watch mode: an activation's exit code (absent when a signal ended it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit: Option<i32>,
    /// Watch mode: how long an activation ran.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration_ms: Option<u64>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub force: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub diff: Option<String>,
}

/// A unified diff of two versions of a document, without file headers, bounded in size.
pub fn diff(old: &str, new: &str) -> String {
    let text = similar::TextDiff::from_lines(old, new)
        .unified_diff()
        .context_radius(1)
        .to_string();
    if text.len() <= MAX_DIFF_BYTES {
        return text;
    }
    let mut cut = MAX_DIFF_BYTES;
    while !text.is_char_boundary(cut) {
        cut -= 1;
    }
    let cut = text[..cut].rfind('\n').map_or(0, |i| i + 1);
    let rest = text[cut..].lines().count();
    format!("{}… diff truncated: {rest} more lines\n", &text[..cut])
}

/// A string as a YAML double-quoted scalar that is also a JSON string, on one line:
/// line breaks, control characters and the characters YAML does not print (U+2028,
/// U+2029, U+FEFF, U+FFFE, U+FFFF) are escaped, so an entry can never span lines.
pub fn quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    // Runs of characters written as they are go in whole.
    let bytes = s.as_bytes();
    let (mut from, mut i) = (0, 0);
    while i < bytes.len() {
        if matches!(bytes[i], 0x20..0x7f) && !matches!(bytes[i], b'"' | b'\\') {
            i += 1;
            continue;
        }
        // A character's first byte: `i` only ever moves by whole characters.
        let Some(c) = s[i..].chars().next() else {
            break;
        };
        let short = match c {
            '"' => "\\\"",
            '\\' => "\\\\",
            '\n' => "\\n",
            '\t' => "\\t",
            '\r' => "\\r",
            c if c.is_control()
                || matches!(
                    c,
                    '\u{2028}' | '\u{2029}' | '\u{feff}' | '\u{fffe}' | '\u{ffff}'
                ) =>
            {
                ""
            }
            _ => {
                i += c.len_utf8();
                continue;
            }
        };
        out.push_str(&s[from..i]);
        i += c.len_utf8();
        from = i;
        if short.is_empty() {
            out.push_str(&format!("\\u{:04x}", c as u32));
        } else {
            out.push_str(short);
        }
    }
    out.push_str(&s[from..]);
    out.push('"');
    out
}

/// The YAML text of one entry: one line (a flow mapping in the log's sequence), ending
/// with a newline. One line per entry is what keeps the log whole through a plain `git
/// merge` or `git rebase` with the union driver, which keeps both sides' lines: lines of
/// two entries can no longer interleave. Strings are always quoted (no YAML 1.1 reader
/// takes `no` for false), the diff is one escaped string.
pub fn render(e: &Entry) -> String {
    let text = |s: &Option<String>| s.as_deref().map(quote);
    let fields = [
        ("origin", (!e.origin.is_empty()).then(|| quote(&e.origin))),
        ("at", Some(quote(&e.at))),
        ("actor", Some(quote(&e.actor))),
        ("op", Some(quote(&e.op))),
        ("via", text(&e.via)),
        ("doc", Some(quote(&e.doc))),
        ("transition", text(&e.transition)),
        ("from", text(&e.from)),
        ("to", text(&e.to)),
        ("rev", e.rev.map(|n| n.to_string())),
        ("event", text(&e.event)),
        ("cause", e.cause.map(|n| n.to_string())),
        ("exit", e.exit.map(|n| n.to_string())),
        ("duration_ms", e.duration_ms.map(|n| n.to_string())),
        ("force", e.force.then(|| "true".to_string())),
        ("note", text(&e.note)),
        ("diff", text(&e.diff)),
    ];
    let mut out = format!("- {{seq: {}", e.seq);
    for (key, value) in fields {
        if let Some(value) = value {
            out.push_str(", ");
            out.push_str(key);
            out.push_str(": ");
            out.push_str(&value);
        }
    }
    out.push_str("}\n");
    out
}

/// Parses the text of one rendered entry.
pub fn parse_entry(text: &str) -> Option<Entry> {
    parse_chunk(text)
}

/// Parses one chunk of log.yaml's bytes. tavern writes only UTF-8, but a hand edit or a
/// merge may not have: such bytes are read as U+FFFD, while every offset stays the file's
/// own (the chunking works on bytes, so a cut or a resume point never drifts).
fn parse_bytes(chunk: &[u8]) -> Option<Entry> {
    parse_chunk(&String::from_utf8_lossy(chunk))
}

/// Parses one chunk of log text (`- seq: …` and its indented lines): an entry as tavern
/// renders it is read without the YAML parser, anything else with it.
fn parse_chunk(chunk: &str) -> Option<Entry> {
    parse_rendered(chunk).or_else(|| parse_yaml(chunk))
}

/// An entry exactly as [`render`] writes it (one line, its fields in render's order,
/// strings quoted as [`quote`] quotes them, numbers of at most 15 digits), read without
/// the YAML parser: most of the cost of reading the log. It answers only for a text that
/// rendering what it read gives back byte for byte, and the YAML parser reads every
/// rendered entry as the entry (a property test holds both), so it never answers
/// otherwise than [`parse_yaml`]; None for anything else, which the YAML parser reads.
fn parse_rendered(text: &str) -> Option<Entry> {
    let mut rest = text.strip_prefix("- {seq: ")?;
    let number = |rest: &mut &str| -> Option<i64> {
        let end = rest.find([',', '}'])?;
        let (digits, after) = rest.split_at(end);
        let unsigned = digits.strip_prefix('-').unwrap_or(digits);
        if unsigned.is_empty()
            || unsigned.len() > 15
            || !unsigned.bytes().all(|b| b.is_ascii_digit())
        {
            return None;
        }
        *rest = after;
        digits.parse().ok()
    };
    let mut e = Entry {
        seq: u64::try_from(number(&mut rest)?).ok()?,
        ..Entry::default()
    };
    while let Some(after) = rest.strip_prefix(", ") {
        let (key, value) = after.split_once(": ")?;
        rest = value;
        if !value.starts_with('"') {
            match key {
                "rev" => e.rev = Some(u64::try_from(number(&mut rest)?).ok()?),
                "cause" => e.cause = Some(u64::try_from(number(&mut rest)?).ok()?),
                "exit" => e.exit = Some(i32::try_from(number(&mut rest)?).ok()?),
                "duration_ms" => e.duration_ms = Some(u64::try_from(number(&mut rest)?).ok()?),
                "force" => {
                    rest = rest.strip_prefix("true")?;
                    e.force = true;
                }
                _ => return None,
            }
            continue;
        }
        let text = unquote(&mut rest)?;
        match key {
            "origin" => e.origin = text,
            "at" => e.at = text,
            "actor" => e.actor = text,
            "op" => e.op = text,
            "via" => e.via = Some(text),
            "doc" => e.doc = text,
            "transition" => e.transition = Some(text),
            "from" => e.from = Some(text),
            "to" => e.to = Some(text),
            "event" => e.event = Some(text),
            "note" => e.note = Some(text),
            "diff" => e.diff = Some(text),
            _ => return None,
        }
    }
    (rest == "}\n" && render(&e) == text).then_some(e)
}

/// A string as [`quote`] writes it, at the start of `rest` (which moves past it).
fn unquote(rest: &mut &str) -> Option<String> {
    let body = rest.strip_prefix('"')?;
    let mut out = String::new();
    let mut from = 0;
    let bytes = body.as_bytes();
    let mut i = 0;
    loop {
        match bytes.get(i)? {
            b'"' => {
                out.push_str(&body[from..i]);
                *rest = &body[i + 1..];
                return Some(out);
            }
            b'\\' => {
                out.push_str(&body[from..i]);
                let (c, len) = match bytes.get(i + 1)? {
                    b'"' => ('"', 2),
                    b'\\' => ('\\', 2),
                    b'n' => ('\n', 2),
                    b't' => ('\t', 2),
                    b'r' => ('\r', 2),
                    b'u' => {
                        let hex = body.get(i + 2..i + 6)?;
                        (char::from_u32(u32::from_str_radix(hex, 16).ok()?)?, 6)
                    }
                    _ => return None,
                };
                out.push(c);
                i += len;
                from = i;
            }
            _ => i += 1,
        }
    }
}

/// Parses one chunk of log text with the YAML parser.
fn parse_yaml(chunk: &str) -> Option<Entry> {
    let limits = YamlLimits {
        max_events: 100_000,
        max_aliases: 0,
    };
    match yaml::parse_value(chunk, limits).ok()? {
        serde_json::Value::Array(mut items) if items.len() == 1 => {
            serde_json::from_value(items.remove(0)).ok()
        }
        _ => None,
    }
}

/// A complete entry at the start of an unreadable last chunk, followed by lines that are
/// not its own (every line of an entry but the first is indented or empty; `echo junk >>
/// log.yaml` is not): its length and the entry. None for a chunk whose lines are all
/// indented, which is a torn write: that one is cut whole, and the write's intent logs it
/// again in full.
fn entry_prefix(chunk: &[u8]) -> Option<(usize, Entry)> {
    let mut end = 0;
    for (i, line) in chunk.split_inclusive(|&b| b == b'\n').enumerate() {
        if i > 0 && !(line.starts_with(b" ") || line == b"\n") {
            return parse_bytes(&chunk[..end]).map(|e| (end, e));
        }
        end += line.len();
    }
    None
}

/// Does this line start an entry chunk? Everything inside an entry is indented.
fn starts_chunk(line: &[u8]) -> bool {
    line.starts_with(b"- ") || line == b"-\n"
}

/// Splits log bytes into entry chunks, each with its byte offset: each starts at a line
/// beginning with `- `.
pub fn chunks(text: &[u8]) -> Vec<(usize, &[u8])> {
    let mut starts: Vec<usize> = Vec::new();
    let mut offset = 0;
    for line in text.split_inclusive(|&b| b == b'\n') {
        if starts_chunk(line) {
            starts.push(offset);
        }
        offset += line.len();
    }
    let mut out = Vec::with_capacity(starts.len());
    for (i, &s) in starts.iter().enumerate() {
        let end = starts.get(i + 1).copied().unwrap_or(text.len());
        out.push((s, &text[s..end]));
    }
    out
}

static VIA: std::sync::OnceLock<String> = std::sync::OnceLock::new();

/// Says, once per process, which front-end every change this process makes comes through
/// (`dashboard` for `tavern serve`): every entry it appends without a `via` of its own gets
/// this one, so the log tells a human's click in the browser from a command. Later calls
/// are ignored.
pub fn set_via(via: &str) {
    let _ = VIA.set(via.to_string());
}

/// Appends an entry (its `seq` and `at` are assigned here) and returns it as written.
pub fn append(board: &Board, entry: Entry) -> Result<Entry> {
    Appender::lock(board)?.append(entry)
}

/// The log lock, held: a writer makes its change visible and appends its entry under it,
/// so the log's order is the order of the changes.
pub struct Appender<'a> {
    board: &'a Board,
    _lock: store::Lock,
}

impl<'a> Appender<'a> {
    pub fn lock(board: &'a Board) -> Result<Appender<'a>> {
        let lock = store::lock(board, crate::layout::LOG_LOCK)?;
        Ok(Appender { board, _lock: lock })
    }

    /// Appends an entry: its `seq` follows the last one's, its `at` is now (never before
    /// the last entry's, whatever the clock did), both taken under the lock.
    pub fn append(&self, mut entry: Entry) -> Result<Entry> {
        if entry.via.is_none() {
            entry.via = VIA.get().cloned();
        }
        let board = self.board;
        let path = board.log_path();
        let mut file = OpenOptions::new()
            .read(true)
            .append(true)
            .create(true)
            .open(&path)
            .map_err(|e| Error::io(&path, "open", e))?;
        let len = file
            .metadata()
            .map_err(|e| Error::io(&path, "read", e))?
            .len();
        let clock = Clock::read(board);
        // The log as this clone's last append left it needs no look at its tail.
        let tail = match clock.end.as_ref().filter(|end| end.is_at(&file, len)) {
            Some(end) => Tail {
                last_seq: clock.seq,
                cut: None,
                last_at: Some(end.at.clone()),
            },
            None => scan_tail(&file, len).map_err(|e| Error::io(&path, "read", e))?,
        };
        if let Some(cut) = tail.cut {
            // A torn entry from a crash: drop it so the file is valid YAML again.
            file.set_len(cut)
                .map_err(|e| Error::io(&path, "repair", e))?;
            crate::notice::report(crate::notice::Notice::LogCut {
                path: board.rel(&path),
            });
        }
        entry.seq = tail.last_seq.max(clock.seq) + 1;
        entry.origin = clock.origin.clone();
        let now = crate::time::now();
        let last_at = tail
            .last_at
            .and_then(|t| crate::time::parse_time(&t, now))
            .filter(|t| *t > now);
        entry.at = crate::time::stamp_millis(last_at.unwrap_or(now));
        let text = render(&entry);
        // Opened to append: the write goes to the end, wherever the cut left it.
        file.write_all(text.as_bytes())
            .and_then(|_| file.sync_data())
            .map_err(|e| Error::io(&path, "append to", e))?;
        Clock {
            seq: entry.seq,
            end: Some(LogEnd::of(tail.cut.unwrap_or(len), &text, &entry.at)),
            ..clock
        }
        .save(board);
        Ok(entry)
    }
}

/// This clone's log clock, in `.state/clock` (`ORIGIN SEQ`, then how its last append left
/// the log): the origin its entries carry and the last seq it gave. The seq is kept
/// because the log alone may forget it (a code branch switched, a log rewritten by a
/// merge): with it, a clone never gives the same seq twice, so (origin, seq) names one
/// entry on every machine.
#[derive(Clone, Debug)]
pub struct Clock {
    pub origin: String,
    pub seq: u64,
    end: Option<LogEnd>,
}

/// How this clone's last append left the log: its length then, and the entry it ended
/// with (that entry's length and CRC, and its `at`). An append that finds the log still
/// that long and still ending with that entry knows what a look at its tail would say
/// (no torn entry; the highest seq there is the clock's; the last `at`) without reading
/// 64 KiB of entries and parsing the last one: a fifth of a claim's own work. A log
/// changed in any other way (another worktree's or clone's entries, a merge, a checkout,
/// a cut) ends elsewhere or with other bytes, and its tail is read as before.
#[derive(Clone, Debug, PartialEq)]
struct LogEnd {
    len: u64,
    entry_len: u64,
    crc: u32,
    at: String,
}

impl LogEnd {
    /// After appending `text` (an entry whose `at` is `at`) to a log `before` bytes long.
    fn of(before: u64, text: &str, at: &str) -> LogEnd {
        LogEnd {
            len: before + text.len() as u64,
            entry_len: text.len() as u64,
            crc: crc32fast::hash(text.as_bytes()),
            at: at.to_string(),
        }
    }

    /// Whether the log, `len` bytes long, ends as this says.
    fn is_at(&self, file: &std::fs::File, len: u64) -> bool {
        use std::os::unix::fs::FileExt;
        if len != self.len || self.entry_len > len || self.entry_len > TAIL_BYTES {
            return false;
        }
        let mut last = vec![0; self.entry_len as usize];
        file.read_exact_at(&mut last, len - self.entry_len).is_ok()
            && crc32fast::hash(&last) == self.crc
    }

    /// The words after `ORIGIN SEQ`: `LEN ENTRY_LEN CRC AT`.
    fn parse<'w>(mut words: impl Iterator<Item = &'w str>) -> Option<LogEnd> {
        let end = LogEnd {
            len: words.next()?.parse().ok()?,
            entry_len: words.next()?.parse().ok()?,
            crc: u32::from_str_radix(words.next()?, 16).ok()?,
            at: words.next()?.to_string(),
        };
        words.next().is_none().then_some(end)
    }
}

impl Clock {
    fn path(board: &Board) -> std::path::PathBuf {
        board.state_dir().join("clock")
    }

    /// The clock, or a new origin when there is none (a fresh clone: `.state/` is never
    /// tracked, so each clone gets its own).
    pub fn read(board: &Board) -> Clock {
        let text = read_small(&Clock::path(board)).unwrap_or_default();
        let text = String::from_utf8_lossy(&text);
        let mut words = text.split_whitespace();
        match (words.next(), words.next().and_then(|n| n.parse().ok())) {
            (Some(origin), Some(seq)) if crate::id::validate(origin).is_ok() => Clock {
                origin: origin.to_string(),
                seq,
                end: LogEnd::parse(words),
            },
            _ => Clock {
                origin: new_origin(),
                seq: 0,
                end: None,
            },
        }
    }

    /// Saved under the log lock, whole, but not synced: if it is lost, the log's own last
    /// seq is the fallback, and a new origin keeps the seqs unique anyway. Written in
    /// place, in one write at its start, instead of through a temp file and a rename (the
    /// rename was a journaled directory change on every append): its readers hold the log
    /// lock, a kill cannot tear one write of a few bytes into one page, and bytes left
    /// after the new text (a longer old one, truncated right after) are past the two
    /// words a reader takes. A torn or lost clock mints a new origin, as before.
    fn save(&self, board: &Board) {
        use std::os::unix::fs::{FileExt, OpenOptionsExt};
        let path = Clock::path(board);
        let mut text = format!("{} {}", self.origin, self.seq);
        if let Some(end) = &self.end {
            text += &format!(" {} {} {:08x} {}", end.len, end.entry_len, end.crc, end.at);
        }
        text.push('\n');
        // Not through a symbolic link (then replaced below, as any other failure).
        let written = OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(false)
            .custom_flags(rustix::fs::OFlags::NOFOLLOW.bits() as i32)
            .open(&path)
            .and_then(|f| {
                f.write_all_at(text.as_bytes(), 0)?;
                if f.metadata()?.len() > text.len() as u64 {
                    f.set_len(text.len() as u64)?;
                }
                Ok(())
            });
        if written.is_err() {
            let _ = crate::file::write(&path, text.as_bytes(), crate::file::Durability::Cache);
        }
    }
}

/// The first 256 bytes of a small file (the clock), read in one call.
fn read_small(path: &std::path::Path) -> std::io::Result<Vec<u8>> {
    let mut f = std::fs::File::open(path)?;
    let mut buf = vec![0; 256];
    let mut n = 0;
    loop {
        match f.read(&mut buf[n..])? {
            0 => break,
            k => n += k,
        }
        if n == buf.len() {
            break;
        }
    }
    buf.truncate(n);
    Ok(buf)
}

/// A random origin: 8 base32 characters (40 bits).
fn new_origin() -> String {
    let id = crate::id::generate("o", 8, std::process::id() as u64);
    id.trim_start_matches("o-").to_string()
}

/// Where the log's complete entries end, and the highest seq among them, from its tail
/// alone (a reader that starts following the log now).
pub fn end(board: &Board) -> Result<(u64, u64)> {
    let path = board.log_path();
    let file = match std::fs::File::open(&path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok((0, 0)),
        Err(e) => return Err(Error::io(&path, "read", e)),
    };
    let len = file
        .metadata()
        .map_err(|e| Error::io(&path, "read", e))?
        .len();
    let tail = scan_tail(&file, len).map_err(|e| Error::io(&path, "read", e))?;
    Ok((tail.cut.unwrap_or(len), tail.last_seq))
}

/// What the end of the log says: the highest seq among its complete entries, where to cut
/// the file if its last entry is torn, and the `at` of the last entry that stays.
struct Tail {
    last_seq: u64,
    cut: Option<u64>,
    last_at: Option<String>,
}

/// Bytes `start..len` of the log, in one read.
fn read_range(file: &std::fs::File, start: u64, len: u64) -> std::io::Result<Vec<u8>> {
    use std::os::unix::fs::FileExt;
    let mut buf = vec![0; (len - start) as usize];
    file.read_exact_at(&mut buf, start)?;
    Ok(buf)
}

/// Reads the end of the log (its last 64 KiB, in one read; the whole file only if that
/// holds no complete entry): the highest seq among complete entries, where to cut the
/// file if its last entry is torn, and the `at` of the last entry kept.
fn scan_tail(file: &std::fs::File, len: u64) -> std::io::Result<Tail> {
    let none = Tail {
        last_seq: 0,
        cut: None,
        last_at: None,
    };
    if len == 0 {
        return Ok(none);
    }
    let mut start = len.saturating_sub(TAIL_BYTES);
    loop {
        let buf = read_range(file, start, len)?;
        // Skip a partial first line when we started mid-file.
        let skip = if start == 0 {
            0
        } else {
            buf.iter()
                .position(|&b| b == b'\n')
                .map_or(buf.len(), |i| i + 1)
        };
        let body = &buf[skip..];
        let parts = chunks(body);
        if parts.is_empty() && start > 0 {
            start = 0;
            continue;
        }
        let Some((_, last_chunk)) = parts.last() else {
            return Ok(none);
        };
        let last_entry = if last_chunk.ends_with(b"\n") {
            parse_bytes(last_chunk)
        } else {
            None
        };
        let last_readable = last_entry.is_some();
        // What stays: the whole chunks before index `k`, and `keep` bytes of chunk `k`.
        let (k, keep) = if last_readable {
            (parts.len() - 1, last_chunk.len())
        } else {
            cut_point(&parts)
        };
        let cut = (!last_readable).then(|| start + (skip + parts[k].0 + keep) as u64);
        // The seqs of what stays, read from each entry's first line: a full parse of 64 KiB
        // of entries on every append would be the cost of every mutation otherwise.
        let mut max_seq = 0;
        for (_, chunk) in &parts[..k] {
            max_seq = max_seq.max(leading_seq(chunk).unwrap_or(0));
        }
        let chunk = parts[k].1;
        let kept = if last_readable {
            last_entry
        } else if keep > 0 {
            parse_bytes(&chunk[..keep])
        } else {
            None
        };
        let kept_seq = if keep == chunk.len() {
            leading_seq(chunk)
        } else {
            kept.as_ref().map(|e| e.seq)
        };
        max_seq = max_seq.max(kept_seq.unwrap_or(0));
        // A complete entry may precede the window; if we saw none at all, look at it all.
        if max_seq == 0 && start > 0 {
            start = 0;
            continue;
        }
        // The `at` of the last entry kept that parses: the one just parsed, else the
        // nearest before it.
        let last_at = match kept {
            Some(e) => Some(e.at),
            None => parts[..k]
                .iter()
                .rev()
                .find_map(|(_, c)| parse_bytes(c))
                .map(|e| e.at),
        };
        return Ok(Tail {
            last_seq: max_seq,
            cut,
            last_at,
        });
    }
}

/// Where an unreadable end of the log is cut: as chunk index and bytes of that chunk kept.
///
/// Walks back from the last chunk over those tavern did not write (they do not begin with
/// `- seq: `: lines added by hand, like `- todo: x`) to the first one it did. That one is
/// kept whole if it is readable (a stray unindented line after it is a chunk of its own
/// only if it begins with `- `); else its own complete lines are kept if they make an entry
/// (the lines after them were added by hand); else, as the last chunk, it is a torn entry
/// and goes; not the last, it stays for `check` to report, and only what follows goes.
fn cut_point(parts: &[(usize, &[u8])]) -> (usize, usize) {
    let last = parts.len() - 1;
    for k in (0..=last).rev() {
        let chunk = parts[k].1;
        if !(chunk.starts_with(b"- seq: ") || chunk.starts_with(b"- {seq: ")) {
            continue;
        }
        if k < last && chunk.ends_with(b"\n") && parse_bytes(chunk).is_some() {
            return (k, chunk.len());
        }
        if let Some((n, _)) = entry_prefix(chunk) {
            return (k, n);
        }
        return if k == last { (k, 0) } else { (k, chunk.len()) };
    }
    // Nothing tavern wrote in the window: cut everything read.
    (0, 0)
}

/// The seq of an entry as tavern renders it: `- {seq: 41, …}` (one line), or `- seq: 41`
/// on the first line of an entry written before entries were one line.
/// The same as `head(chunk).map(|h| h.seq)`, read from the entry's first bytes only (an
/// append reads the seqs of every entry in the log's last 64 KiB, and `head` first finds
/// the end of each entry's line, all of it).
fn leading_seq(chunk: &[u8]) -> Option<u64> {
    let digits = |rest: &[u8]| {
        let end = rest
            .iter()
            .position(|b| !b.is_ascii_digit())
            .unwrap_or(rest.len());
        (end > 0).then_some(end)
    };
    if let Some(rest) = chunk.strip_prefix(b"- {seq: ") {
        let end = digits(rest)?;
        let after = &rest[end..];
        if !(after.starts_with(b", ") || after.starts_with(b"}")) {
            return None;
        }
        return std::str::from_utf8(&rest[..end]).ok()?.parse().ok();
    }
    let rest = chunk.strip_prefix(b"- seq: ")?;
    let end = digits(rest)?;
    let after = &rest[end..];
    // The line ends there: `head` takes the whole first line less a `\r` at its end.
    if !(after.is_empty()
        || after == b"\r"
        || after.starts_with(b"\n")
        || after.starts_with(b"\r\n"))
    {
        return None;
    }
    std::str::from_utf8(&rest[..end]).ok()?.parse().ok()
}

/// What the first line of an entry says without parsing it as YAML: enough to skip it.
#[derive(Debug, PartialEq)]
pub struct Head<'a> {
    pub seq: u64,
    /// Empty for entries written before origins.
    pub origin: &'a str,
    /// The raw `at` value, when it is on the first line (one-line entries).
    pub at: Option<&'a str>,
    /// A one-line entry (the whole entry is this line).
    pub one_line: bool,
}

/// Reads the head of an entry chunk (or line): `- {seq: N, origin: "X", at: "T", …` or
/// `- seq: N`.
pub fn head(chunk: &[u8]) -> Option<Head<'_>> {
    let first = chunk.split(|&b| b == b'\n').next()?;
    if let Some(rest) = first.strip_prefix(b"- {seq: ") {
        let digits_end = rest.iter().position(|b| !b.is_ascii_digit())?;
        let seq = std::str::from_utf8(&rest[..digits_end])
            .ok()?
            .parse()
            .ok()?;
        let rest = &rest[digits_end..];
        if !(rest.starts_with(b", ") || rest.starts_with(b"}")) {
            return None;
        }
        let field = |key: &[u8]| -> Option<&str> {
            let at = find(rest, key)?;
            let v = &rest[at + key.len()..];
            let end = v.iter().position(|&b| b == b'"' || b == b'\\')?;
            (v[end] == b'"').then(|| std::str::from_utf8(&v[..end]).ok())?
        };
        return Some(Head {
            seq,
            origin: field(b", origin: \"").unwrap_or(""),
            at: field(b", at: \""),
            one_line: true,
        });
    }
    let digits = first.strip_prefix(b"- seq: ")?;
    let digits = digits.strip_suffix(b"\r").unwrap_or(digits);
    if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    Some(Head {
        seq: std::str::from_utf8(digits).ok()?.parse().ok()?,
        origin: "",
        at: None,
        one_line: false,
    })
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

/// One entry that could not be parsed, for warnings.
#[derive(Debug)]
pub struct Unreadable {
    pub offset: usize,
    pub line: usize,
}

/// Reads every entry from byte `from` (0 or where an entry starts) on. Returns the
/// entries, the offset just past the last complete entry, and the chunks that could not be
/// read.
pub fn read_from(board: &Board, from: u64) -> Result<(Vec<Entry>, u64, Vec<Unreadable>)> {
    read_matching(board, from, None)
}

/// Like `read_from`, but parses only the entries whose text contains `needle` (a doc path
/// or an actor the caller filters on), since parsing is most of the cost of reading. The
/// needle is used only if it is made of characters that every YAML rendering of it keeps
/// as they are; otherwise every entry is parsed. Entries without it are skipped silently,
/// unreadable or not. The last entry is always parsed: whether it is complete decides
/// where the next read starts.
pub fn read_matching(
    board: &Board,
    from: u64,
    needle: Option<&str>,
) -> Result<(Vec<Entry>, u64, Vec<Unreadable>)> {
    read_filtered(board, from, needle, &|_| false)
}

/// Like `read_matching`, also skipping (unparsed) every entry whose head `skip` rejects:
/// seq and origin are read from an entry's first line, so a reader that keeps a
/// high-water mark per origin reads the whole log for what is new at the cost of a scan.
pub fn read_filtered(
    board: &Board,
    from: u64,
    needle: Option<&str>,
    skip: &dyn Fn(&Head) -> bool,
) -> Result<(Vec<Entry>, u64, Vec<Unreadable>)> {
    let mut entries = Vec::new();
    let (end, bad) = stream(
        board,
        from,
        BLOCK_BYTES,
        &|parts, last| filtered(parts, last, needle, skip),
        &mut |e| entries.push(e),
    )?;
    // In seq order (then origin): after a merge of two clones' logs the file holds one
    // side's entries after the other's; a reader sees them in the order they happened.
    sort(&mut entries);
    Ok((entries, end, bad))
}

/// Hands every entry of the log, made into what `map` makes of it, to `each` in the
/// file's order (not sorted: see [`sort`] for the order readers see), reading the file a
/// block at a time, so that a reader of the whole log holds what `each` keeps, not the
/// log. The entries of a block are parsed, and given to `map`, on every core. Returns
/// the offset just past the last complete entry and the chunks that could not be read, as
/// [`read_from`] does.
pub fn each_entry<T: Send>(
    board: &Board,
    map: &(dyn Fn(Entry) -> T + Sync),
    each: &mut dyn FnMut(T),
) -> Result<(u64, Vec<Unreadable>)> {
    stream(
        board,
        0,
        BLOCK_BYTES,
        &|parts, last| parsed_on_every_core(parts, last, map),
        each,
    )
}

/// How much of the log a reader holds at once (plus the entry that straddles a block).
const BLOCK_BYTES: usize = 8 << 20;

/// What becomes of the whole chunks of a block (each with its offset, in order; the
/// index of the file's last chunk when the block ends the file).
type Outcomes<'a, T> = dyn Fn(&[(usize, &[u8])], Option<usize>) -> Vec<Outcome<T>> + 'a;

/// What became of one chunk of the log.
enum Outcome<T> {
    /// Passed over unparsed (a reader's filter).
    Skipped,
    Read(T),
    /// Not an entry, or one without its line end.
    Unreadable,
}

/// One chunk parsed: an entry only when it is whole (its line end too).
fn outcome<T>(chunk: &[u8], text: &str, map: impl FnOnce(Entry) -> T) -> Outcome<T> {
    match parse_chunk(text) {
        Some(e) if chunk.ends_with(b"\n") => Outcome::Read(map(e)),
        _ => Outcome::Unreadable,
    }
}

/// The chunks of a block, in order, as [`read_filtered`] reads them: those without the
/// needle, or whose head `skip` rejects, are passed over (never the file's last, `last`).
fn filtered(
    parts: &[(usize, &[u8])],
    last: Option<usize>,
    needle: Option<&str>,
    skip: &dyn Fn(&Head) -> bool,
) -> Vec<Outcome<Entry>> {
    let needle = needle.filter(|n| {
        !n.is_empty()
            && n.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"._/-".contains(&b))
    });
    parts
        .iter()
        .enumerate()
        .map(|(i, &(_, chunk))| {
            // Borrowed (no copy) for the UTF-8 that tavern writes.
            let text = String::from_utf8_lossy(chunk);
            let passed = last != Some(i)
                && (needle.is_some_and(|n| !text.contains(n))
                    || head(chunk).is_some_and(|h| skip(&h)));
            if passed {
                Outcome::Skipped
            } else {
                outcome(chunk, &text, |e| e)
            }
        })
        .collect()
}

/// The chunks of a block, in order, each parsed and made into what `map` makes of it,
/// spread over the cores in runs of consecutive chunks.
fn parsed_on_every_core<T: Send>(
    parts: &[(usize, &[u8])],
    _last: Option<usize>,
    map: &(dyn Fn(Entry) -> T + Sync),
) -> Vec<Outcome<T>> {
    // One chunk a run in the unit tests, so that their order is kept across threads.
    const RUN: usize = if cfg!(test) { 1 } else { 256 };
    let runs = parts.len().div_ceil(RUN);
    crate::index::dir::each_bucket(runs, |r| {
        parts[r * RUN..((r + 1) * RUN).min(parts.len())]
            .iter()
            .map(|&(_, chunk)| outcome(chunk, &String::from_utf8_lossy(chunk), map))
            .collect::<Vec<_>>()
    })
    .into_iter()
    .flatten()
    .collect()
}

/// The reading behind [`read_filtered`] and [`each_entry`], `block` bytes at a time:
/// `outcomes` says what became of each whole chunk of a block (given them in order, and
/// the index of the file's last chunk when the block ends the file).
fn stream<T>(
    board: &Board,
    from: u64,
    block: usize,
    outcomes: &Outcomes<'_, T>,
    each: &mut dyn FnMut(T),
) -> Result<(u64, Vec<Unreadable>)> {
    let path = board.log_path();
    let mut file = match std::fs::File::open(&path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok((0, Vec::new())),
        Err(e) => return Err(Error::io(&path, "read", e)),
    };
    file.seek(SeekFrom::Start(from))
        .map_err(|e| Error::io(&path, "read", e))?;
    let mut bad = Vec::new();
    // `buf` holds the file's bytes from `from + base` on: the entry that straddled the
    // last block, and the block read after it. `lines` counts the lines before it.
    let mut buf: Vec<u8> = Vec::new();
    let mut base = 0usize;
    let mut lines = 0usize;
    let mut done = 0usize;
    loop {
        let before = buf.len();
        Read::by_ref(&mut file)
            .take(block as u64)
            .read_to_end(&mut buf)
            .map_err(|e| Error::io(&path, "read", e))?;
        let at_end = buf.len() == before;
        let parts = chunks(&buf);
        // The last chunk may go on in the next block: it is read with it, unless the file
        // ends here.
        let whole = if at_end {
            parts.len()
        } else {
            parts.len().saturating_sub(1)
        };
        let last = (at_end && whole > 0).then(|| whole - 1);
        let read = outcomes(&parts[..whole], last);
        for (i, (&(offset, chunk), what)) in parts[..whole].iter().zip(read).enumerate() {
            match what {
                Outcome::Skipped => done = base + offset + chunk.len(),
                Outcome::Read(e) => {
                    each(e);
                    done = base + offset + chunk.len();
                }
                // The last entry may still be being written: leave it for the next read.
                Outcome::Unreadable if last == Some(i) => {}
                Outcome::Unreadable => {
                    let line = lines + count_newlines(&buf[..offset]).unwrap_or(0) + 1;
                    bad.push(Unreadable {
                        offset: from as usize + base + offset,
                        line,
                    });
                    done = base + offset + chunk.len();
                }
            }
        }
        if at_end {
            break;
        }
        // Keep the last chunk (all of it when no chunk starts yet).
        let keep = parts.get(whole).map_or(0, |&(offset, _)| offset);
        lines += count_newlines(&buf[..keep]).unwrap_or(0);
        base += keep;
        buf.drain(..keep);
    }
    if !bad.is_empty() && from > 0 {
        // Line numbers are the file's: count the lines before `from` too.
        file.seek(SeekFrom::Start(0))
            .map_err(|e| Error::io(&path, "read", e))?;
        let before = count_newlines(Read::by_ref(&mut file).take(from))
            .map_err(|e| Error::io(&path, "read", e))?;
        for u in &mut bad {
            u.line += before;
        }
    }
    Ok((from + done as u64, bad))
}

/// Puts entries in the order readers see: by seq (a Lamport clock), then origin; entries
/// the same in both keep their file order.
pub fn sort(entries: &mut [Entry]) {
    if entries
        .windows(2)
        .any(|w| (w[0].seq, &w[0].origin) > (w[1].seq, &w[1].origin))
    {
        entries.sort_by(|a, b| (a.seq, &a.origin).cmp(&(b.seq, &b.origin)));
    }
}

fn count_newlines(mut r: impl Read) -> std::io::Result<usize> {
    let mut buf = vec![0; 64 * 1024];
    let mut n = 0;
    loop {
        match r.read(&mut buf)? {
            0 => return Ok(n),
            k => n += buf[..k].iter().filter(|&&b| b == b'\n').count(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(op: &str) -> Entry {
        Entry {
            actor: "a".into(),
            op: op.into(),
            doc: "tasks/t.md".into(),
            ..Default::default()
        }
    }

    /// The seq read from an entry's first bytes is the one its head gives, whatever the
    /// chunk (a rendered entry, an old multi-line one, torn, hand-made, odd line ends).
    #[test]
    fn leading_seq_is_the_heads_seq() {
        let rendered = render(&Entry {
            seq: 41,
            origin: "k3f9q2ab".into(),
            at: "2026-11-22T10:04:05.123Z".into(),
            ..entry("edit")
        });
        let mut cases: Vec<Vec<u8>> = vec![
            rendered.clone().into_bytes(),
            rendered.as_bytes()[..20].to_vec(),
            rendered.as_bytes()[..9].to_vec(),
            b"- {seq: 7}\n".to_vec(),
            b"- {seq: 7x, at: 1}\n".to_vec(),
            b"- {seq: , at: 1}\n".to_vec(),
            b"- {seq: 99999999999999999999999, at: 1}\n".to_vec(),
            b"- seq: 3\n  at: x\n".to_vec(),
            b"- seq: 3\r\n  at: x\r\n".to_vec(),
            b"- seq: 3\r".to_vec(),
            b"- seq: 3".to_vec(),
            b"- seq: 3\rX\n".to_vec(),
            b"- seq: 3 \n".to_vec(),
            b"- seq: \n".to_vec(),
            b"- seq: 3x\n".to_vec(),
            b"- todo: x\n".to_vec(),
            b"-\n".to_vec(),
            b"".to_vec(),
        ];
        for n in [0u64, 1, 9, 10, 12345, u64::MAX] {
            cases.push(format!("- {{seq: {n}, origin: \"a\"}}\n").into_bytes());
            cases.push(format!("- seq: {n}\n").into_bytes());
        }
        for c in &cases {
            assert_eq!(
                leading_seq(c),
                head(c).map(|h| h.seq),
                "{}",
                String::from_utf8_lossy(c)
            );
        }
        assert_eq!(leading_seq(rendered.as_bytes()), Some(41));
    }

    /// The clock is written in place (the same file, not a new one renamed over it), and
    /// holds exactly `ORIGIN SEQ` after each append, even when a longer one was there.
    #[test]
    fn the_clock_is_written_in_place_and_whole() {
        use std::os::unix::fs::MetadataExt;
        let tmp = tempfile::tempdir().unwrap();
        crate::board::init(tmp.path()).unwrap();
        let board = Board::open(&tmp.path().join(".tavern")).unwrap();
        let path = Clock::path(&board);
        let first = append(&board, entry("create")).unwrap();
        assert_eq!(first.seq, 1);
        let text = std::fs::read_to_string(&path).unwrap();
        let log = std::fs::read_to_string(board.log_path()).unwrap();
        assert_eq!(
            text,
            format!(
                "{} 1 {} {} {:08x} {}\n",
                first.origin,
                log.len(),
                log.len(),
                crc32fast::hash(log.as_bytes()),
                first.at
            )
        );
        let inode = std::fs::metadata(&path).unwrap().ino();
        // A longer clock (say, a hand-edited one) with words after the two it holds.
        std::fs::write(
            &path,
            format!("{} 41 and some trailing words\n", first.origin),
        )
        .unwrap();
        let inode_after_edit = std::fs::metadata(&path).unwrap().ino();
        assert_eq!(inode_after_edit, inode);
        let next = append(&board, entry("edit")).unwrap();
        assert_eq!(
            (next.seq, next.origin.as_str()),
            (42, first.origin.as_str())
        );
        let clock = std::fs::read_to_string(&path).unwrap();
        assert!(
            clock.starts_with(&format!("{} 42 ", first.origin))
                && clock.ends_with(&format!(" {}\n", next.at)),
            "{clock}"
        );
        assert_eq!(
            std::fs::metadata(&path).unwrap().ino(),
            inode,
            "replaced, not written in place"
        );
        // No clock at all: a new origin, and the log's own seq goes on.
        std::fs::remove_file(&path).unwrap();
        let third = append(&board, entry("edit")).unwrap();
        assert_eq!(third.seq, 43);
        assert_ne!(third.origin, first.origin);
        assert!(
            std::fs::read_to_string(&path)
                .unwrap()
                .starts_with(&format!("{} 43 ", third.origin))
        );
    }

    /// What an append finds at the log's end when the log is not as this clone's last
    /// append left it: each change behind the clock's back is seen, as a look at the tail
    /// sees it.
    #[test]
    fn an_append_sees_every_change_to_the_log_s_end_since_the_last() {
        use std::io::Write as _;
        let tmp = tempfile::tempdir().unwrap();
        crate::board::init(tmp.path()).unwrap();
        let board = Board::open(&tmp.path().join(".tavern")).unwrap();
        let log = board.log_path();
        let add = |text: &str| {
            let mut f = OpenOptions::new().append(true).open(&log).unwrap();
            f.write_all(text.as_bytes()).unwrap();
        };
        let mine = append(&board, entry("create")).unwrap();
        // Another clone's entry, merged in after it, with a higher seq.
        add(&render(&Entry {
            seq: 40,
            origin: "otherzzz".into(),
            ..entry("edit")
        }));
        assert_eq!(append(&board, entry("edit")).unwrap().seq, 41);
        // A torn entry (a writer killed mid-append): cut, and the seq goes on.
        let before_torn = std::fs::metadata(&log).unwrap().len();
        add("- {seq: 99, origin: \"otherzzz\", at: \"2026");
        let after_cut = append(&board, entry("edit")).unwrap();
        assert_eq!(after_cut.seq, 42);
        let text = std::fs::read_to_string(&log).unwrap();
        assert!(!text.contains("seq: 99"), "{text}");
        assert_eq!(
            text.len() as u64,
            before_torn + render(&after_cut).len() as u64
        );
        // The log put back as it was before (a checkout): the clock's seq still counts.
        let whole = std::fs::read_to_string(&log).unwrap();
        std::fs::write(&log, render(&mine)).unwrap();
        assert_eq!(append(&board, entry("edit")).unwrap().seq, 43);
        std::fs::write(&log, &whole).unwrap();
        // The same length, the last entry rewritten in place: its `at`, a day ahead, is
        // what the next entry's `at` may not go below.
        let last = append(&board, entry("edit")).unwrap();
        let text = std::fs::read_to_string(&log).unwrap();
        let ahead = crate::time::stamp_millis(crate::time::now() + chrono::Duration::days(1));
        assert_eq!(ahead.len(), last.at.len());
        std::fs::write(&log, text.replace(&last.at, &ahead)).unwrap();
        assert_eq!(std::fs::metadata(&log).unwrap().len(), text.len() as u64);
        let next = append(&board, entry("edit")).unwrap();
        assert_eq!(next.at, ahead);
        assert_eq!(next.seq, last.seq + 1);
    }

    /// Text for an entry's strings: every character (controls, quotes, backslashes, the
    /// ones YAML does not print, multi-byte), and plain words.
    fn any_text() -> impl proptest::strategy::Strategy<Value = String> {
        use proptest::prelude::*;
        prop_oneof![
            any::<String>(),
            "[a-z0-9 :/._-]{0,12}",
            "(\\PC|\n|\t|\r|\"|\\\\|\u{2028}|\u{85}|\u{7f}|\u{feff}|\u{ffff}|\u{0}| ){0,16}",
        ]
    }

    /// Any entry, its numbers of at most 15 digits (as many as the fast reading takes).
    fn any_entry() -> impl proptest::strategy::Strategy<Value = Entry> {
        use proptest::prelude::*;
        let big = 0..1_000_000_000_000_000u64;
        let optional = || proptest::option::of(any_text());
        (
            (
                big.clone(),
                any_text(),
                any_text(),
                any_text(),
                any_text(),
                any_text(),
            ),
            (
                optional(),
                optional(),
                optional(),
                optional(),
                optional(),
                optional(),
            ),
            (
                optional(),
                proptest::option::of(big.clone()),
                proptest::option::of(big.clone()),
            ),
            (
                proptest::option::of(any::<i32>()),
                proptest::option::of(big),
                any::<bool>(),
            ),
        )
            .prop_map(
                |(
                    (seq, origin, at, actor, op, doc),
                    (via, transition, from, to, event, note),
                    (diff, rev, cause),
                    (exit, duration_ms, force),
                )| Entry {
                    seq,
                    origin,
                    at,
                    actor,
                    op,
                    via,
                    doc,
                    transition,
                    from,
                    to,
                    rev,
                    event,
                    cause,
                    exit,
                    duration_ms,
                    force,
                    note,
                    diff,
                },
            )
    }

    /// [`quote`] a character at a time, as it was written first.
    fn quote_by_char(s: &str) -> String {
        let mut out = String::from('"');
        for c in s.chars() {
            match c {
                '"' => out.push_str("\\\""),
                '\\' => out.push_str("\\\\"),
                '\n' => out.push_str("\\n"),
                '\t' => out.push_str("\\t"),
                '\r' => out.push_str("\\r"),
                c if c.is_control()
                    || matches!(
                        c,
                        '\u{2028}' | '\u{2029}' | '\u{feff}' | '\u{fffe}' | '\u{ffff}'
                    ) =>
                {
                    out.push_str(&format!("\\u{:04x}", c as u32));
                }
                c => out.push(c),
            }
        }
        out.push('"');
        out
    }

    proptest::proptest! {
        /// Every entry rendered is read back as itself, by the YAML parser and by the
        /// fast reading: so the fast reading, which answers only for a text that renders
        /// back byte for byte, answers as the YAML parser does.
        #[test]
        fn a_rendered_entry_is_read_back_both_ways(e in any_entry()) {
            let text = render(&e);
            proptest::prop_assert_eq!(parse_yaml(&text), Some(e.clone()), "{}", text);
            proptest::prop_assert_eq!(parse_rendered(&text), Some(e), "{}", text);
        }

        /// `quote` copies runs of plain characters whole: the same text as a character at
        /// a time.
        #[test]
        fn quote_is_quoting_a_character_at_a_time(s in any_text()) {
            proptest::prop_assert_eq!(quote(&s), quote_by_char(&s));
        }

        /// Whatever the text (a rendered entry cut, with a character put in, or made of
        /// entry-like pieces), the fast reading answers only what the YAML parser does.
        #[test]
        fn the_fast_reading_agrees_with_the_yaml_parser(
            e in any_entry(),
            cut in 0..400usize,
            put in proptest::prelude::any::<char>(),
            at in 0..400usize,
            made in "- \\{seq: -?[0-9]{1,17}(, (origin|at|op|doc|rev|exit|force|note|x): (\"([a-z]|\\\\[nu\"]|\\\\u00[0-9a-f]{2}){0,4}\"|-?[0-9]{1,3}|true|false)){0,6}\\}\n?",
        ) {
            let text = render(&e);
            let floor = |i: usize| (0..=i.min(text.len())).rev().find(|&i| text.is_char_boundary(i)).unwrap_or(0);
            let mut put_in = text.clone();
            put_in.insert(floor(at), put);
            for t in [&text[..floor(cut)], put_in.as_str(), made.as_str()] {
                if let Some(fast) = parse_rendered(t) {
                    proptest::prop_assert_eq!(Some(fast), parse_yaml(t), "{:?}", t);
                }
            }
        }
    }

    /// Read a block at a time, the log gives what one read of the whole file gives,
    /// wherever the blocks end: the same entries, end and unreadable chunks (offsets and
    /// lines), with text before the first entry, an unreadable entry, one that does not
    /// start on its first line, multi-byte characters and a torn last entry.
    #[test]
    fn a_log_read_by_blocks_is_the_log_read_whole() {
        let tmp = tempfile::tempdir().unwrap();
        crate::board::init(tmp.path()).unwrap();
        let board = Board::open(&tmp.path().join(".tavern")).unwrap();
        let numbered = |seq: u64, note: &str| {
            render(&Entry {
                seq,
                note: Some(note.into()),
                ..entry("edit")
            })
        };
        let text = format!(
            "# by hand\n{}{}- {{seq: 3, at: [\n  oops\n{}-\n  seq: 5\n  at: x\n  actor: a\n  op: edit\n  doc: tasks/t.md\n{}{}",
            numbered(1, "first"),
            numbered(2, "ça marche, 東京"),
            numbered(4, "after the bad one"),
            numbered(6, "last whole"),
            &numbered(7, "torn")[..20],
        );
        std::fs::write(board.log_path(), &text).unwrap();
        // Parsed on this thread, as the readers that filter do, and on every core, as
        // `each_entry` does: the same.
        let read = |from: u64, block: usize| {
            let mut entries = Vec::new();
            let (end, bad) = stream(
                &board,
                from,
                block,
                &|parts, last| filtered(parts, last, None, &|_| false),
                &mut |e| entries.push(render(&e)),
            )
            .unwrap();
            let bad: Vec<(usize, usize)> = bad.iter().map(|u| (u.offset, u.line)).collect();
            let mut parallel = Vec::new();
            let (parallel_end, parallel_bad) = stream(
                &board,
                from,
                block,
                &|parts, last| parsed_on_every_core(parts, last, &|e| render(&e)),
                &mut |e| parallel.push(e),
            )
            .unwrap();
            let parallel_bad: Vec<(usize, usize)> =
                parallel_bad.iter().map(|u| (u.offset, u.line)).collect();
            assert_eq!(
                (&parallel, parallel_end, &parallel_bad),
                (&entries, end, &bad)
            );
            (entries, end, bad)
        };
        let whole = read(0, usize::MAX >> 1);
        assert_eq!(whole.0.len(), 5, "{:?}", whole.0);
        assert_eq!(whole.2, [(text.find("- {seq: 3").unwrap(), 4)]);
        assert_eq!(whole.1 as usize, text.len() - 20);
        let from = text.find("- {seq: 2").unwrap() as u64;
        let tail = read(from, usize::MAX >> 1);
        assert_eq!(tail.0.len(), 4);
        for block in 1..text.len() + 2 {
            assert_eq!(read(0, block), whole, "blocks of {block} bytes");
            assert_eq!(
                read(from, block),
                tail,
                "from {from}, blocks of {block} bytes"
            );
        }
    }

    /// An entry's `at` is never before the last entry's, found in the tail read once,
    /// also when the last entry is torn and cut (then the one before it counts).
    #[test]
    fn at_follows_the_last_entry_kept_and_a_torn_one_is_cut() {
        let tmp = tempfile::tempdir().unwrap();
        crate::board::init(tmp.path()).unwrap();
        let board = Board::open(&tmp.path().join(".tavern")).unwrap();
        let future = |seq: u64, at: &str| {
            render(&Entry {
                seq,
                origin: "aaaaaaaa".into(),
                at: at.into(),
                ..entry("edit")
            })
        };
        let kept = future(5, "2999-01-01T00:00:00.000Z");
        let torn = future(6, "3000-01-01T00:00:00.000Z");
        let torn = &torn[..torn.len() / 2];
        std::fs::write(board.log_path(), format!("{kept}{torn}")).unwrap();
        let e = append(&board, entry("edit")).unwrap();
        assert_eq!(e.seq, 6);
        assert_eq!(e.at, "2999-01-01T00:00:00.000Z");
        let log = std::fs::read_to_string(board.log_path()).unwrap();
        assert_eq!(log, format!("{kept}{}", render(&e)));
        // The next one follows the entry just written.
        let f = append(&board, entry("edit")).unwrap();
        assert_eq!((f.seq, f.at.as_str()), (7, "2999-01-01T00:00:00.000Z"));
    }

    #[test]
    fn rendered_entry_parses_back() {
        let e = Entry {
            seq: 7,
            origin: "k3f9q2ab".into(),
            at: "2026-11-22T10:04:05.123Z".into(),
            actor: "coder: 1".into(),
            op: "transition".into(),
            via: Some("dashboard".into()),
            doc: "tasks/task-7k2m.md".into(),
            transition: Some("start".into()),
            from: Some("claimed".into()),
            to: Some("working".into()),
            rev: Some(3),
            event: Some("transition:review".into()),
            cause: Some(40),
            exit: Some(-1),
            duration_ms: Some(1234),
            force: true,
            note: Some("yes".into()),
            diff: Some(diff(
                "a\nstatus: claimed\n---\n",
                "a\nstatus: working\n---\n",
            )),
        };
        let text = render(&e);
        assert_eq!(
            text,
            "- {seq: 7, origin: \"k3f9q2ab\", at: \"2026-11-22T10:04:05.123Z\", actor: \"coder: 1\", op: \"transition\", via: \"dashboard\", doc: \"tasks/task-7k2m.md\", transition: \"start\", from: \"claimed\", to: \"working\", rev: 3, event: \"transition:review\", cause: 40, exit: -1, duration_ms: 1234, force: true, note: \"yes\", diff: \"@@ -1,3 +1,3 @@\\n a\\n-status: claimed\\n+status: working\\n ---\\n\"}\n"
        );
        assert_eq!(parse_chunk(&text), Some(e.clone()));
        assert_eq!(
            head(text.as_bytes()),
            Some(Head {
                seq: 7,
                origin: "k3f9q2ab",
                at: Some("2026-11-22T10:04:05.123Z"),
                one_line: true
            })
        );
    }

    #[test]
    fn hostile_text_stays_on_one_line_and_parses_back() {
        let nasty = "a\"b\\c\nd\re\tf\u{0}g\u{85}h\u{2028}i\u{feff}j\u{ffff}k: - [x] {y} # z\n";
        let e = Entry {
            seq: 1,
            actor: nasty.into(),
            note: Some(nasty.into()),
            diff: Some(nasty.into()),
            ..Default::default()
        };
        let text = render(&e);
        assert_eq!(text.matches('\n').count(), 1, "{text}");
        assert!(text.is_ascii() || !text.contains('\u{2028}'));
        assert_eq!(parse_chunk(&text), Some(e));
        // Also JSON, once the list item's dash is gone (keys aside).
        assert!(serde_json::from_str::<String>(&quote(nasty)).unwrap() == nasty);
    }

    #[test]
    fn old_multi_line_entries_still_read() {
        let old = "- seq: 3\n  at: 2026-11-22T10:04:05.123Z\n  actor: a\n  op: edit\n  doc: tasks/t.md\n  diff: |\n    -x\n    +y\n";
        let e = parse_chunk(old).unwrap();
        assert_eq!(
            (e.seq, e.origin.as_str(), e.diff.as_deref()),
            (3, "", Some("-x\n+y\n"))
        );
        assert_eq!(head(old.as_bytes()).unwrap().seq, 3);
    }

    #[test]
    fn crlf_diff_is_quoted() {
        let e = Entry {
            seq: 1,
            diff: Some(diff("a\r\n", "b\r\n")),
            ..Default::default()
        };
        let text = render(&e);
        assert!(
            text.contains("diff: \"@@ -1 +1 @@\\r\\n") || text.contains("diff: \"@@"),
            "{text}"
        );
        assert_eq!(parse_chunk(&text).unwrap().diff, e.diff);
    }

    #[test]
    fn big_diffs_are_bounded() {
        let old: String = (0..5000).map(|i| format!("line {i}\n")).collect();
        let d = diff(&old, "");
        assert!(d.len() < MAX_DIFF_BYTES + 100);
        assert!(d.ends_with("more lines\n"));
    }
}
