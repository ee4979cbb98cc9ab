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

mod seek;
pub use seek::{offset_after_seq, offset_near_time};

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
    pub seq: u64,
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

/// Can `s` go into a literal block scalar unchanged? (No control characters but tab, no
/// CR, which YAML would fold into a line break, and it must not start with a space.)
fn block_safe(s: &str) -> bool {
    !s.starts_with([' ', '\n'])
        && s.chars().all(|c| c == '\n' || c == '\t' || !c.is_control())
        && !s.contains('\u{feff}')
}

/// The YAML text of one entry, ending with a newline.
pub fn render(e: &Entry) -> String {
    let mut out = format!("- seq: {}\n", e.seq);
    // Fields in this order, each on its line; an absent one is left out.
    let text = |s: &Option<String>| s.as_deref().map(yaml::render_str);
    let fields = [
        ("at", Some(yaml::render_str(&e.at))),
        ("actor", Some(yaml::render_str(&e.actor))),
        ("op", Some(yaml::render_str(&e.op))),
        ("via", text(&e.via)),
        ("doc", Some(yaml::render_str(&e.doc))),
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
    ];
    for (key, value) in fields {
        if let Some(value) = value {
            out.push_str(&format!("  {key}: {value}\n"));
        }
    }
    if let Some(diff) = &e.diff {
        if block_safe(diff) {
            out.push_str("  diff: |\n");
            for line in diff.lines() {
                out.push_str("    ");
                out.push_str(line);
                out.push('\n');
            }
        } else {
            out.push_str(&format!(
                "  diff: {}\n",
                serde_json::to_string(diff).unwrap_or_default()
            ));
        }
    }
    out
}

/// Parses the text of one rendered entry.
pub fn parse_entry(text: &str) -> Option<Entry> {
    parse_chunk(text)
}

/// Does the log hold an entry about `doc` at `rev`? Reads the whole log (parsing only the
/// entries that mention `doc`): only the recovery of an interrupted write asks.
pub fn contains(board: &Board, doc: &str, rev: u64) -> Result<bool> {
    let (entries, _, _) = read_matching(board, 0, Some(doc))?;
    Ok(entries.iter().any(|e| e.doc == doc && e.rev == Some(rev)))
}

/// Parses one chunk of log.yaml's bytes. tavern writes only UTF-8, but a hand edit or a
/// merge may not have: such bytes are read as U+FFFD, while every offset stays the file's
/// own (the chunking works on bytes, so a cut or a resume point never drifts).
fn parse_bytes(chunk: &[u8]) -> Option<Entry> {
    parse_chunk(&String::from_utf8_lossy(chunk))
}

/// Parses one chunk of log text (`- seq: …` and its indented lines).
fn parse_chunk(chunk: &str) -> Option<Entry> {
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
fn chunks(text: &[u8]) -> Vec<(usize, &[u8])> {
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

/// Appends an entry (its `seq` is assigned here) and returns it as written.
pub fn append(board: &Board, mut entry: Entry) -> Result<Entry> {
    if entry.via.is_none() {
        entry.via = VIA.get().cloned();
    }
    let _lock = store::lock(board, crate::layout::LOG_LOCK)?;
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
    let (last_seq, cut_at) = scan_tail(&mut file, len).map_err(|e| Error::io(&path, "read", e))?;
    if let Some(cut) = cut_at {
        // A torn entry from a crash: drop it so the file is valid YAML again.
        file.set_len(cut)
            .map_err(|e| Error::io(&path, "repair", e))?;
        crate::notice::report(crate::notice::Notice::LogCut {
            path: board.rel(&path),
        });
    }
    entry.seq = last_seq + 1;
    let text = render(&entry);
    file.seek(SeekFrom::End(0))
        .map_err(|e| Error::io(&path, "append to", e))?;
    file.write_all(text.as_bytes())
        .and_then(|_| file.sync_data())
        .map_err(|e| Error::io(&path, "append to", e))?;
    Ok(entry)
}

/// Where the log's complete entries end, and the highest seq among them, from its tail
/// alone (a reader that starts following the log now).
pub fn end(board: &Board) -> Result<(u64, u64)> {
    let path = board.log_path();
    let mut file = match std::fs::File::open(&path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok((0, 0)),
        Err(e) => return Err(Error::io(&path, "read", e)),
    };
    let len = file
        .metadata()
        .map_err(|e| Error::io(&path, "read", e))?
        .len();
    let (seq, cut) = scan_tail(&mut file, len).map_err(|e| Error::io(&path, "read", e))?;
    Ok((cut.unwrap_or(len), seq))
}

/// Reads the end of the log: the highest seq among complete entries, and where to cut the
/// file if its last entry is torn.
fn scan_tail(file: &mut std::fs::File, len: u64) -> std::io::Result<(u64, Option<u64>)> {
    if len == 0 {
        return Ok((0, None));
    }
    let mut start = len.saturating_sub(TAIL_BYTES);
    loop {
        file.seek(SeekFrom::Start(start))?;
        let mut buf = Vec::new();
        Read::by_ref(file).take(len - start).read_to_end(&mut buf)?;
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
            return Ok((0, None));
        };
        let last_readable = last_chunk.ends_with(b"\n") && parse_bytes(last_chunk).is_some();
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
        let kept_seq = if keep == chunk.len() {
            leading_seq(chunk)
        } else if keep > 0 {
            parse_bytes(&chunk[..keep]).map(|e| e.seq)
        } else {
            None
        };
        max_seq = max_seq.max(kept_seq.unwrap_or(0));
        // A complete entry may precede the window; if we saw none at all, look at it all.
        if max_seq == 0 && start > 0 {
            start = 0;
            continue;
        }
        return Ok((max_seq, cut));
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
        if !chunk.starts_with(b"- seq: ") {
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

/// The seq of an entry as tavern renders it (`- seq: 41` on its first line).
fn leading_seq(chunk: &[u8]) -> Option<u64> {
    let rest = chunk.strip_prefix(b"- seq: ")?;
    let digits = rest.split(|&b| b == b'\n').next()?;
    std::str::from_utf8(digits).ok()?.parse().ok()
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
    let needle = needle.filter(|n| {
        !n.is_empty()
            && n.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"._/-".contains(&b))
    });
    let path = board.log_path();
    let mut file = match std::fs::File::open(&path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Ok((Vec::new(), 0, Vec::new()));
        }
        Err(e) => return Err(Error::io(&path, "read", e)),
    };
    file.seek(SeekFrom::Start(from))
        .map_err(|e| Error::io(&path, "read", e))?;
    let mut buf = Vec::new();
    file.read_to_end(&mut buf)
        .map_err(|e| Error::io(&path, "read", e))?;
    let mut entries = Vec::new();
    let mut bad = Vec::new();
    let mut done = 0usize;
    let parts = chunks(&buf);
    for (i, (offset, chunk)) in parts.iter().enumerate() {
        let last = i + 1 == parts.len();
        // Borrowed (no copy) for the UTF-8 that tavern writes.
        let text = String::from_utf8_lossy(chunk);
        if !last && needle.is_some_and(|n| !text.contains(n)) {
            done = offset + chunk.len();
            continue;
        }
        match parse_chunk(&text) {
            Some(e) if chunk.ends_with(b"\n") => {
                entries.push(e);
                done = offset + chunk.len();
            }
            // The last entry may still be being written: leave it for the next read.
            _ if last => {}
            _ => {
                let line = count_newlines(&buf[..*offset]).unwrap_or(0) + 1;
                bad.push(Unreadable {
                    offset: from as usize + offset,
                    line,
                });
                done = offset + chunk.len();
            }
        }
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
    Ok((entries, from + done as u64, bad))
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

    #[test]
    fn rendered_entry_parses_back() {
        let e = Entry {
            seq: 7,
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
        assert!(text.contains("  diff: |\n    @@ -1,3 +1,3 @@\n     a\n    -status: claimed\n    +status: working\n     ---\n"), "{text}");
        assert_eq!(parse_chunk(&text), Some(e));
    }

    #[test]
    fn crlf_diff_is_quoted() {
        let e = Entry {
            seq: 1,
            diff: Some(diff("a\r\n", "b\r\n")),
            ..Default::default()
        };
        let text = render(&e);
        assert!(text.contains("diff: \"@@"), "{text}");
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
