//! Replaying the diffs of log.yaml: given what a file was, and the diffs tavern logged for
//! its later writes, what tavern wrote (and back: given what tavern wrote, what the file
//! was before). Watch mode compares that with the file on disk:
//! anything more is a hand edit, logged on its own even when it landed in the same instant
//! as tavern's write.
//!
//! The diffs are the unified diffs `log::diff` makes (similar's, context radius 1): each
//! line is a tag (` `, `-`, `+`) and the line with its own line ending; a line without one
//! is followed by `\ No newline at end of file`. Lines end at `\n`, `\r\n` or a lone
//! `\r`, as similar splits them.

/// Splits text into lines as similar does, each with its line ending.
fn lines(text: &str) -> Vec<&str> {
    let bytes = text.as_bytes();
    let mut out = Vec::new();
    let mut start = 0;
    let mut i = 0;
    while i < bytes.len() {
        let end = match bytes[i] {
            b'\n' => i + 1,
            b'\r' if bytes.get(i + 1) == Some(&b'\n') => i + 2,
            b'\r' => i + 1,
            _ => {
                i += 1;
                continue;
            }
        };
        out.push(&text[start..end]);
        start = end;
        i = end;
    }
    if start < text.len() {
        out.push(&text[start..]);
    }
    out
}

/// One line of a hunk: its tag and its text, line ending included.
struct Line<'a> {
    tag: u8,
    text: std::borrow::Cow<'a, str>,
}

struct Hunk<'a> {
    /// 0-based index of the first old line the hunk covers.
    old_start: usize,
    lines: Vec<Line<'a>>,
}

/// Which way a diff is read: old to new (apply), or new to old (revert).
#[derive(Clone, Copy, PartialEq)]
enum Way {
    Forward,
    Backward,
}

/// `@@ -a[,b] +c[,d] @@` → the 0-based start of the old range. (The new range is not
/// read: for some inputs with lone `\r` line endings similar's is off; where a hunk starts
/// in the new text follows from the old start and the lines the hunks before it added and
/// removed.)
fn parse_header(line: &str) -> Option<usize> {
    let range = line.strip_prefix("@@ -")?.split(' ').next()?;
    let (start, len) = match range.split_once(',') {
        Some((s, l)) => (s.parse::<usize>().ok()?, l.parse::<usize>().ok()?),
        None => (range.parse::<usize>().ok()?, 1),
    };
    // An empty range names the line before it.
    Some(if len == 0 {
        start
    } else {
        start.checked_sub(1)?
    })
}

/// The hunks of `diff`, as read `way`: going backward, added lines are the ones to find
/// and removed lines the ones to put back.
fn parse(diff: &str, way: Way) -> Option<Vec<Hunk<'_>>> {
    let mut hunks: Vec<Hunk<'_>> = Vec::new();
    for raw in lines(diff) {
        if raw.starts_with("@@") {
            let old_start = parse_header(raw.trim_end())?;
            hunks.push(Hunk {
                old_start,
                lines: Vec::new(),
            });
            continue;
        }
        let hunk = hunks.last_mut()?;
        if raw.starts_with('\\') {
            // The line before has no line ending in the file.
            let last = hunk.lines.last_mut()?;
            let text = last.text.strip_suffix('\n')?.to_string();
            last.text = text.into();
            continue;
        }
        let tag = *raw.as_bytes().first()?;
        if !matches!(tag, b' ' | b'-' | b'+') {
            // Not a diff we made (a truncated one ends with a note): cannot replay.
            return None;
        }
        hunk.lines.push(Line {
            tag,
            text: raw[1..].into(),
        });
    }
    if way == Way::Backward {
        let mut shift: isize = 0;
        for hunk in &mut hunks {
            let (mut added, mut removed) = (0, 0);
            for line in &mut hunk.lines {
                line.tag = match line.tag {
                    b'+' => {
                        added += 1;
                        b'-'
                    }
                    b'-' => {
                        removed += 1;
                        b'+'
                    }
                    tag => tag,
                };
            }
            hunk.old_start = hunk.old_start.checked_add_signed(shift)?;
            shift += added - removed;
        }
    }
    Some(hunks)
}

/// Applies `diff` to `old`; None if it does not apply exactly (the file was not what the
/// diff was made from, or the diff was truncated).
pub fn apply(old: &str, diff: &str) -> Option<String> {
    patch(old, diff, Way::Forward)
}

/// Takes `diff` back from `new`: what the file was before the write the diff records;
/// None if `new` is not what the diff made.
pub fn revert(new: &str, diff: &str) -> Option<String> {
    patch(new, diff, Way::Backward)
}

fn patch(old: &str, diff: &str, way: Way) -> Option<String> {
    let old_lines = lines(old);
    let mut out = String::with_capacity(old.len() + diff.len());
    let mut pos = 0;
    for hunk in parse(diff, way)? {
        if hunk.old_start < pos || hunk.old_start > old_lines.len() {
            return None;
        }
        for line in &old_lines[pos..hunk.old_start] {
            out.push_str(line);
        }
        pos = hunk.old_start;
        for line in &hunk.lines {
            match line.tag {
                b'+' => out.push_str(&line.text),
                _ => {
                    if old_lines.get(pos) != Some(&line.text.as_ref()) {
                        return None;
                    }
                    if line.tag == b' ' {
                        out.push_str(&line.text);
                    }
                    pos += 1;
                }
            }
        }
    }
    for line in &old_lines[pos..] {
        out.push_str(line);
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn roundtrip(old: &str, new: &str) {
        let d = crate::log::diff(old, new);
        assert_eq!(apply(old, &d).as_deref(), Some(new), "diff:\n{d}");
        assert_eq!(revert(new, &d).as_deref(), Some(old), "diff:\n{d}");
        // Through the log's own rendering and parsing, as the watcher reads it back.
        let entry = crate::log::Entry {
            seq: 1,
            diff: Some(d.clone()),
            ..Default::default()
        };
        let back = crate::log::parse_entry(&crate::log::render(&entry)).unwrap();
        assert_eq!(back.diff.as_deref(), Some(d.as_str()));
    }

    #[test]
    fn replays_what_log_diff_wrote() {
        roundtrip("", "---\nid: a\n---\nbody\n");
        roundtrip("a\nb\nc\n", "a\nB\nc\n");
        roundtrip("a\nb\nc\n", "");
        roundtrip("a\nb", "a\nc");
        roundtrip("a\nb\n", "a\nb");
        roundtrip("a\nb", "a\nb\n");
        roundtrip("x\r\ny\r\n", "x\r\nz\r\n");
        roundtrip(
            "1\n2\n3\n4\n5\n6\n7\n8\n",
            "0\n1\n2\n3\nfour\n5\n6\n7\n8\nnine\n",
        );
        roundtrip("a\n \nb\n", "a\n \nc\n");
        roundtrip("a\n\n\nb\n", "a\n\n\nc\n  \n");
        // similar's new range is off here (lone `\r` line endings): revert must not use it.
        roundtrip("\n\rb\n", "\r\r\ra\na");
    }

    #[test]
    fn refuses_what_does_not_fit() {
        let d = crate::log::diff("a\nb\nc\n", "a\nB\nc\n");
        assert_eq!(apply("a\nx\nc\n", &d), None);
        assert_eq!(apply("", &d), None);
        assert_eq!(revert("a\nb\nc\n", &d), None);
        assert_eq!(revert("a\nB\nc\n", &d).as_deref(), Some("a\nb\nc\n"));
        let big: String = (0..5000).map(|i| format!("line {i}\n")).collect();
        let truncated = crate::log::diff(&big, "");
        assert_eq!(apply(&big, &truncated), None);
    }

    proptest! {
        #[test]
        fn replays_any_diff(
            old in proptest::collection::vec("[ab \r]{0,3}\n?", 0..12),
            new in proptest::collection::vec("[ab \r]{0,3}\n?", 0..12),
        ) {
            let (old, new) = (old.concat(), new.concat());
            let d = crate::log::diff(&old, &new);
            prop_assert_eq!(apply(&old, &d), Some(new.clone()));
            prop_assert_eq!(revert(&new, &d), Some(old));
        }
    }
}
