//! Path patterns of holds, and when two of them overlap.
//!
//! A pattern is a path relative to the top of the working tree, `/`-separated, whose
//! segments may be globs: `*` (any characters within a segment), `?` (one character),
//! `[abc]`, `[a-z]`, `[!a-z]` (one character of a class), and a whole segment `**` (any
//! number of segments, none included). A pattern holds exactly the paths it matches; a
//! directory is held with everything under it as `dir/**` (what `dir/`, or the path of a
//! directory that exists, becomes when it is held), so `src/**` holds `src/lib.rs` and
//! `src/*.rs` does not hold `src/a/b.rs`.
//!
//! Two patterns overlap when some path is held by both. That is decided exactly, without
//! listing files (what is not on disk yet can be held too), by walking both patterns at
//! once (segment against segment, `**` against any run of segments, and within a segment
//! character against character, `*` against any run of characters); the only
//! approximation is conservative: two character classes are taken to share a character
//! unless both are plain (unnegated) sets with none in common. A literal path is a
//! pattern without globs, so "path against glob", "directory against a file under it"
//! and "glob against glob" are all the same question.

/// One character position of a segment glob.
#[derive(Clone, Debug, PartialEq)]
enum Char {
    Lit(char),
    /// `?`
    Any,
    /// `[...]`: ranges (inclusive), negated with `!` or `^`.
    Class(Vec<(char, char)>, bool),
    /// `*`
    Star,
}

#[derive(Clone, Debug, PartialEq)]
enum Seg {
    /// `**`
    Deep,
    Glob(Vec<Char>),
}

/// A parsed pattern.
#[derive(Clone, Debug, PartialEq)]
pub struct Pattern {
    segs: Vec<Seg>,
}

impl Pattern {
    /// Parses a normalised pattern (`a/b/*.rs`; no empty, `.` or `..` segments). The empty
    /// pattern is the whole tree.
    pub fn parse(text: &str) -> Result<Pattern, String> {
        let mut segs = Vec::new();
        for seg in text.split('/').filter(|s| !s.is_empty()) {
            if seg == "**" {
                if segs.last() != Some(&Seg::Deep) {
                    segs.push(Seg::Deep);
                }
                continue;
            }
            segs.push(Seg::Glob(parse_segment(seg)?));
        }
        Ok(Pattern { segs })
    }

    /// A path taken literally (a file an agent is about to edit): no globs.
    pub fn literal(path: &str) -> Pattern {
        Pattern {
            segs: path
                .split('/')
                .filter(|s| !s.is_empty())
                .map(|s| Seg::Glob(s.chars().map(Char::Lit).collect()))
                .collect(),
        }
    }

    /// Is some path held by both? (Each holds what it matches and everything under it.)
    pub fn overlaps(&self, other: &Pattern) -> bool {
        let (a, b) = (&self.segs, &other.segs);
        // seen[i][j]: the state (i, j) was already explored (and failed).
        let mut seen = vec![vec![false; b.len() + 1]; a.len() + 1];
        segs_meet(a, b, 0, 0, &mut seen)
    }
}

fn parse_segment(seg: &str) -> Result<Vec<Char>, String> {
    let mut out = Vec::new();
    let mut chars = seg.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '*' => {
                if out.last() != Some(&Char::Star) {
                    out.push(Char::Star);
                }
            }
            '?' => out.push(Char::Any),
            '[' => {
                let negated = matches!(chars.peek(), Some('!' | '^'));
                if negated {
                    chars.next();
                }
                let mut ranges = Vec::new();
                let mut closed = false;
                let mut first = true;
                while let Some(c) = chars.next() {
                    if c == ']' && !first {
                        closed = true;
                        break;
                    }
                    first = false;
                    if chars.peek() == Some(&'-') {
                        chars.next();
                        match chars.peek() {
                            Some(']') | None => {
                                ranges.push((c, c));
                                ranges.push(('-', '-'));
                            }
                            Some(&hi) => {
                                chars.next();
                                if hi < c {
                                    return Err(format!(
                                        "the range {c}-{hi} in '{seg}' is backwards"
                                    ));
                                }
                                ranges.push((c, hi));
                            }
                        }
                    } else {
                        ranges.push((c, c));
                    }
                }
                if !closed {
                    return Err(format!("'{seg}' has a '[' without its ']'"));
                }
                out.push(Char::Class(ranges, negated));
            }
            c => out.push(Char::Lit(c)),
        }
    }
    Ok(out)
}

fn segs_meet(a: &[Seg], b: &[Seg], i: usize, j: usize, seen: &mut [Vec<bool>]) -> bool {
    // One pattern done: the other must be able to stop here too (only `**` left).
    if i == a.len() || j == b.len() {
        return a[i..].iter().chain(&b[j..]).all(|s| *s == Seg::Deep);
    }
    if seen[i][j] {
        return false;
    }
    seen[i][j] = true;
    match (&a[i], &b[j]) {
        // `**` matches no segment, or one more (what the other's segment matches).
        (Seg::Deep, _) => segs_meet(a, b, i + 1, j, seen) || segs_meet(a, b, i, j + 1, seen),
        (_, Seg::Deep) => segs_meet(a, b, i, j + 1, seen) || segs_meet(a, b, i + 1, j, seen),
        (Seg::Glob(x), Seg::Glob(y)) => globs_meet(x, y) && segs_meet(a, b, i + 1, j + 1, seen),
    }
}

/// Do two segment globs match some name in common?
fn globs_meet(x: &[Char], y: &[Char]) -> bool {
    let mut seen = vec![vec![false; y.len() + 1]; x.len() + 1];
    chars_meet(x, y, 0, 0, &mut seen)
}

fn chars_meet(x: &[Char], y: &[Char], i: usize, j: usize, seen: &mut [Vec<bool>]) -> bool {
    if i == x.len() && j == y.len() {
        return true;
    }
    if seen[i][j] {
        return false;
    }
    seen[i][j] = true;
    match (x.get(i), y.get(j)) {
        (Some(Char::Star), _) => {
            chars_meet(x, y, i + 1, j, seen) || (j < y.len() && chars_meet(x, y, i, j + 1, seen))
        }
        (_, Some(Char::Star)) => {
            chars_meet(x, y, i, j + 1, seen) || (i < x.len() && chars_meet(x, y, i + 1, j, seen))
        }
        (Some(p), Some(q)) => one_char_meets(p, q) && chars_meet(x, y, i + 1, j + 1, seen),
        // One is done, the other still needs a character.
        _ => false,
    }
}

fn one_char_meets(p: &Char, q: &Char) -> bool {
    match (p, q) {
        (Char::Lit(a), Char::Lit(b)) => a == b,
        (Char::Any, _) | (_, Char::Any) => true,
        (Char::Lit(c), Char::Class(r, neg)) | (Char::Class(r, neg), Char::Lit(c)) => {
            in_class(*c, r) != *neg
        }
        (Char::Class(r, false), Char::Class(s, false)) => r
            .iter()
            .any(|(a, b)| s.iter().any(|(c, d)| a <= d && c <= b)),
        // A negated class against a class: taken to meet (conservative).
        _ => true,
    }
}

fn in_class(c: char, ranges: &[(char, char)]) -> bool {
    ranges.iter().any(|(lo, hi)| *lo <= c && c <= *hi)
}

/// Normalises a path or pattern given relative to `base` (a directory under the top of
/// the working tree, itself relative to that top: "" at the top) into a pattern relative
/// to the top: `./` and `.` go, `..` steps up, `\` is not a separator. None if it leaves
/// the working tree.
pub fn normalise(base: &str, text: &str) -> Option<String> {
    let mut parts: Vec<&str> = if text.starts_with('/') {
        Vec::new()
    } else {
        base.split('/').filter(|s| !s.is_empty()).collect()
    };
    for seg in text.split('/') {
        match seg {
            "" | "." => {}
            ".." => {
                parts.pop()?;
            }
            s => parts.push(s),
        }
    }
    Some(parts.join("/"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn meet(a: &str, b: &str) -> bool {
        let (pa, pb) = (Pattern::parse(a).unwrap(), Pattern::parse(b).unwrap());
        let one = pa.overlaps(&pb);
        assert_eq!(
            one,
            pb.overlaps(&pa),
            "overlap must be symmetric: {a} / {b}"
        );
        one
    }

    #[test]
    fn paths_and_directories() {
        assert!(meet("src/lib.rs", "src/lib.rs"));
        assert!(!meet("src/lib.rs", "src/main.rs"));
        assert!(
            meet("src/**", "src/lib.rs"),
            "a directory holds the files under it"
        );
        assert!(meet("src/**", "src/a/b/c.rs"));
        assert!(meet("src/**", "src"), "and itself");
        assert!(!meet("src/**", "srcx/lib.rs"));
        assert!(!meet("src/lib.rs", "src/lib.rsx"));
        assert!(
            !meet("src/lib.rs", "src/lib.rs/x"),
            "a file is not a directory"
        );
        assert!(meet("**", "anything/at/all"), "the whole tree");
    }

    #[test]
    fn globs_against_paths() {
        assert!(meet("src/*.rs", "src/lib.rs"));
        assert!(!meet("src/*.rs", "src/lib.md"));
        assert!(
            !meet("src/*", "src/a/b.rs"),
            "a glob holds what it matches, not below"
        );
        assert!(meet("src/*/**", "src/a/b.rs"));
        assert!(meet("**/*.rs", "a/b/c/d.rs"));
        assert!(meet("**/*.rs", "d.rs"), "** matches no segment too");
        assert!(!meet("**/*.rs", "a/b/d.md"));
        assert!(!meet("**/*.md", "src/a.rs"));
        assert!(meet("src/**/mod.rs", "src/a/b/mod.rs"));
        assert!(meet("src/**/mod.rs", "src/mod.rs"));
        assert!(!meet("src/**/mod.rs", "tests/a/mod.rs"));
        assert!(meet("src/?.rs", "src/a.rs"));
        assert!(!meet("src/?.rs", "src/ab.rs"));
        assert!(meet("src/[a-c].rs", "src/b.rs"));
        assert!(!meet("src/[a-c].rs", "src/d.rs"));
        assert!(meet("src/[!a-c].rs", "src/d.rs"));
        assert!(!meet("src/[!a-c].rs", "src/a.rs"));
    }

    #[test]
    fn globs_against_globs() {
        assert!(meet("src/*.rs", "src/lib.*"));
        assert!(!meet("src/*.rs", "src/*.md"));
        assert!(meet("src/a*", "src/*b"));
        assert!(!meet("src/a*", "src/b*"));
        assert!(meet("**/*.rs", "docs/**"));
        assert!(!meet("docs/*.md", "src/**"));
        assert!(meet("*/x/*.rs", "a/*/y.rs"));
        assert!(!meet("*/x/*.rs", "a/*/y.md"));
        assert!(meet("a/**/b/*.rs", "a/c/**/q.rs"));
        assert!(!meet("a/**/b/*.rs", "c/**"));
        assert!(meet("*.[ch]", "x.[a-c]"));
        assert!(!meet("*.[ch]", "x.[d-g]"));
        assert!(meet("src/**", "src/**/x"));
        assert!(meet("src/*.rs", "src/**/mod.rs"), "src/mod.rs");
        assert!(!meet("src/*.rs", "src/*/mod.rs"));
    }

    #[test]
    fn parse_refuses_broken_classes() {
        assert!(Pattern::parse("src/[abc").is_err());
        assert!(Pattern::parse("src/[z-a]").is_err());
        assert!(Pattern::parse("src/[]]").is_ok());
    }

    #[test]
    fn normalising() {
        assert_eq!(normalise("", "./src/lib.rs").as_deref(), Some("src/lib.rs"));
        assert_eq!(normalise("src", "lib.rs").as_deref(), Some("src/lib.rs"));
        assert_eq!(normalise("src", "../docs/").as_deref(), Some("docs"));
        assert_eq!(normalise("", "../x"), None);
        assert_eq!(normalise("src", "/abs"), Some("abs".into()));
    }
}
