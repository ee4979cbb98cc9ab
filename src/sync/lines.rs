//! A three-way merge of lines, as `git merge-file` makes it, in this process: a merge of
//! thousands of documents whose bodies both sides changed starts no process per document.
//!
//! Each side's changes are its differences from the base, line by line (Myers); a change
//! only one side made is taken; a region both sides changed (overlapping, or touching:
//! one side's change ends where the other's begins, as git counts it) merges cleanly only
//! when both made it the same; otherwise the merge is a conflict (`None`), which the
//! caller decides by its rule. Lines keep their endings (a last line without one too).

use std::ops::Range;

use similar::{Algorithm, DiffTag, capture_diff_slices};

/// One side's change: the base lines it replaces, and the side's lines that replace them.
#[derive(Clone, Debug)]
struct Hunk {
    base: Range<usize>,
    side: Range<usize>,
}

/// The changes from `base` to `side`, adjacent ones joined.
fn hunks(base: &[&str], side: &[&str]) -> Vec<Hunk> {
    let mut out: Vec<Hunk> = Vec::new();
    for op in capture_diff_slices(Algorithm::Myers, base, side) {
        let (tag, b, s) = op.as_tag_tuple();
        if tag == DiffTag::Equal {
            continue;
        }
        match out.last_mut() {
            Some(last) if last.base.end == b.start && last.side.end == s.start => {
                last.base.end = b.end;
                last.side.end = s.end;
            }
            _ => out.push(Hunk { base: b, side: s }),
        }
    }
    out
}

/// `base[range]` with `hunks` (of `side`, all inside `range`) applied.
fn apply<'a>(
    base: &[&'a str],
    side: &[&'a str],
    range: Range<usize>,
    hunks: &[Hunk],
) -> Vec<&'a str> {
    let mut out = Vec::new();
    let mut at = range.start;
    for h in hunks {
        out.extend_from_slice(&base[at..h.base.start]);
        out.extend_from_slice(&side[h.side.clone()]);
        at = h.base.end;
    }
    out.extend_from_slice(&base[at..range.end]);
    out
}

/// The most lines (base, ours and theirs together) merged here; a larger text goes to
/// `git merge-file`, whose diff bounds its own cost.
pub const MAX_LINES: usize = 30_000;

/// Merges `ours` and `theirs`, both changed from `base`: the merged text, or None when both
/// changed the same lines differently (or lines next to each other).
pub fn merge(base: &str, ours: &str, theirs: &str) -> Option<String> {
    let (b, o, t) = (split(base), split(ours), split(theirs));
    let (ho, ht) = (hunks(&b, &o), hunks(&b, &t));
    let mut out = String::with_capacity(ours.len().max(theirs.len()));
    let (mut i, mut j) = (0, 0);
    let mut at = 0;
    while i < ho.len() || j < ht.len() {
        // The next region: the earliest change of either side, grown by every change of
        // either side that overlaps or touches it.
        let start = match (ho.get(i), ht.get(j)) {
            (Some(x), Some(y)) => x.base.start.min(y.base.start),
            (Some(x), None) => x.base.start,
            (None, Some(y)) => y.base.start,
            (None, None) => break,
        };
        let mut end = start;
        let (i0, j0) = (i, j);
        loop {
            if let Some(h) = ho.get(i).filter(|h| h.base.start <= end) {
                end = end.max(h.base.end);
                i += 1;
            } else if let Some(h) = ht.get(j).filter(|h| h.base.start <= end) {
                end = end.max(h.base.end);
                j += 1;
            } else {
                break;
            }
        }
        for line in &b[at..start] {
            out.push_str(line);
        }
        let mine = apply(&b, &o, start..end, &ho[i0..i]);
        let region = if j == j0 {
            mine
        } else {
            let other = apply(&b, &t, start..end, &ht[j0..j]);
            if i > i0 && mine != other {
                return None;
            }
            other
        };
        for line in region {
            out.push_str(line);
        }
        at = end;
    }
    for line in &b[at..] {
        out.push_str(line);
    }
    Some(out)
}

fn split(text: &str) -> Vec<&str> {
    text.split_inclusive('\n').collect()
}

/// Whether the three texts are small enough to merge here (see [`MAX_LINES`]).
pub fn fits(base: &str, ours: &str, theirs: &str) -> bool {
    let lines = |t: &str| t.bytes().filter(|&c| c == b'\n').count() + 1;
    lines(base) + lines(ours) + lines(theirs) <= MAX_LINES
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn changes_at_different_lines_are_both_taken() {
        let base = "a\nb\nc\nd\ne\n";
        assert_eq!(
            merge(base, "A\nb\nc\nd\ne\n", "a\nb\nc\nd\nE\n").as_deref(),
            Some("A\nb\nc\nd\nE\n")
        );
        // One side only.
        assert_eq!(
            merge(base, base, "a\nb\nX\nd\ne\n").as_deref(),
            Some("a\nb\nX\nd\ne\n")
        );
        // The same change on both sides, once.
        assert_eq!(
            merge(base, "a\nB\nc\nd\ne\n", "a\nB\nc\nd\ne\n").as_deref(),
            Some("a\nB\nc\nd\ne\n")
        );
        // An insertion at the end and a change at the start; a last line without an end.
        assert_eq!(
            merge("a\nb\nc", "x\nb\nc", "a\nb\nc\nd").as_deref(),
            Some("x\nb\nc\nd")
        );
    }

    #[test]
    fn changes_to_the_same_or_touching_lines_conflict() {
        let base = "a\nb\nc\nd\n";
        assert_eq!(merge(base, "a\nB\nc\nd\n", "a\nb2\nc\nd\n"), None);
        // Touching: ours changes b, theirs changes c.
        assert_eq!(merge(base, "a\nB\nc\nd\n", "a\nb\nC\nd\n"), None);
        // Both insert at the same place, differently.
        assert_eq!(merge(base, "a\nb\nx\nc\nd\n", "a\nb\ny\nc\nd\n"), None);
    }

    /// One side's edit of `base`: lines replaced, removed and added, every new line
    /// unique (so the changes any diff finds are these).
    fn edit(base: &[String], side: &str, seed: &mut u64) -> Vec<String> {
        let mut next = || {
            *seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (*seed >> 33) as usize
        };
        let mut out = Vec::new();
        for (k, line) in base.iter().enumerate() {
            match next() % 10 {
                0 => out.push(format!("{side} replaced {k}\n")),
                1 => {}
                2 => {
                    out.push(line.clone());
                    out.push(format!("{side} added {k}\n"));
                }
                _ => out.push(line.clone()),
            }
        }
        out
    }

    /// The same merges as `git merge-file`: clean or not, and the same text when clean.
    #[test]
    fn merges_as_git_merge_file_does() {
        let dir = tempfile::tempdir().unwrap();
        let mut seed = 7u64;
        let (mut clean, mut conflicts) = (0, 0);
        for case in 0..300 {
            let n = 3 + case % 17;
            let base: Vec<String> = (0..n).map(|k| format!("line {k}\n")).collect();
            let ours = edit(&base, "ours", &mut seed);
            let theirs = edit(&base, "theirs", &mut seed);
            let [b, o, t] = [&base, &ours, &theirs].map(|v| v.concat());
            for (name, text) in [("b", &b), ("o", &o), ("t", &t)] {
                std::fs::write(dir.path().join(name), text).unwrap();
            }
            let git = std::process::Command::new("git")
                .current_dir(dir.path())
                .args(["merge-file", "-p", "o", "b", "t"])
                .output()
                .unwrap();
            let ours_merge = merge(&b, &o, &t);
            match git.status.code() {
                Some(0) => {
                    clean += 1;
                    assert_eq!(
                        ours_merge.as_deref(),
                        Some(String::from_utf8_lossy(&git.stdout).as_ref()),
                        "case {case}: base {b:?} ours {o:?} theirs {t:?}"
                    );
                }
                Some(c) if c > 0 && c < 128 => {
                    conflicts += 1;
                    assert_eq!(
                        ours_merge, None,
                        "case {case}: base {b:?} ours {o:?} theirs {t:?}"
                    );
                }
                other => panic!("git merge-file: {other:?}"),
            }
        }
        assert!(
            clean > 30 && conflicts > 30,
            "{clean} clean, {conflicts} conflicts"
        );
    }
}
