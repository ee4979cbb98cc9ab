//! `watch:` entries: which board-relative paths a source watches, and what is wrong with an
//! entry. A path without glob characters matches that path and everything under it;
//! otherwise `*` matches within one segment, `?` one character of a segment, and a `**`
//! segment any number of whole segments (none included). Matching is globset's, with
//! `[`, `]`, `{` and `}` taken literally (the documented syntax has only `*`, `?`, `**`).

use globset::{GlobBuilder, GlobSet, GlobSetBuilder};

use super::WATCHABLE;
use super::shown;

/// The `watch:` entries of one source, ready to match paths.
#[derive(Clone, Debug, Default)]
pub struct Patterns {
    /// Plain paths, as segments: each matches itself and everything under it.
    plain: Vec<Vec<String>>,
    globs: GlobSet,
}

impl Patterns {
    /// Compiles entries that [`pattern_problem`] accepted (an entry that would not compile
    /// anyway matches nothing).
    pub fn new(patterns: &[String]) -> Patterns {
        let mut plain = Vec::new();
        let mut globs = GlobSetBuilder::new();
        for p in patterns {
            let p = p.strip_suffix('/').unwrap_or(p);
            if !has_glob(p) {
                plain.push(p.split('/').map(str::to_string).collect());
                continue;
            }
            if let Some(glob) = glob(p) {
                globs.add(glob);
            }
            // `solutions/**` also matches `solutions`: `**` may stand for no segment.
            if let Some(glob) = p.strip_suffix("/**").and_then(glob) {
                globs.add(glob);
            }
        }
        Patterns {
            plain,
            globs: globs.build().unwrap_or_else(|_| GlobSet::empty()),
        }
    }

    /// Does one of the entries match the board-relative path `rel` (`/` separators)?
    pub fn matches(&self, rel: &str) -> bool {
        let r: Vec<&str> = rel.split('/').collect();
        self.plain
            .iter()
            .any(|p| r.len() >= p.len() && r.iter().zip(p).all(|(a, b)| a == b))
            || self.globs.is_match(rel)
    }
}

/// Does `pattern` match `rel`? (One entry; [`Patterns`] matches many at once.)
#[cfg(test)]
fn pattern_matches(pattern: &str, rel: &str) -> bool {
    Patterns::new(&[pattern.to_string()]).matches(rel)
}

fn has_glob(pattern: &str) -> bool {
    pattern.contains(['*', '?'])
}

/// One pattern as a glob: `*` and `?` never cross a `/`, every other character is itself.
fn glob(pattern: &str) -> Option<globset::Glob> {
    let mut escaped = String::with_capacity(pattern.len());
    for c in pattern.chars() {
        match c {
            '[' | ']' | '{' | '}' | '\\' => {
                escaped.push('[');
                escaped.push(c);
                escaped.push(']');
            }
            c => escaped.push(c),
        }
    }
    GlobBuilder::new(&escaped)
        .literal_separator(true)
        .backslash_escape(false)
        .build()
        .ok()
}

/// The segments of a pattern; one trailing `/` (`tasks/`) is allowed and ignored.
fn segments(pattern: &str) -> Vec<&str> {
    pattern
        .strip_suffix('/')
        .unwrap_or(pattern)
        .split('/')
        .collect()
}

/// What is wrong with one `watch:` entry, if anything.
pub fn pattern_problem(pattern: &str) -> Option<String> {
    let s = shown(pattern);
    if pattern.is_empty() {
        return Some(
            "an entry is empty; expected a path under the board like tasks or solutions/*/design.md"
                .into(),
        );
    }
    if pattern.starts_with('/') {
        return Some(format!(
            "'{s}' must be relative to the board (no leading /)"
        ));
    }
    if pattern.contains('\\') {
        return Some(format!(
            "'{s}' must separate components with / (no backslash)"
        ));
    }
    let segs = segments(pattern);
    if segs.contains(&"..") {
        return Some(format!(
            "'{s}' must stay inside the board (no .. components)"
        ));
    }
    if segs.iter().any(|seg| seg.is_empty() || *seg == ".") {
        return Some(format!("'{s}' has an empty or '.' component"));
    }
    if !under_watched_area(&segs, !has_glob(pattern)) {
        return Some(format!(
            "'{s}' is not under a watched area; watch {} or paths and globs under them",
            watchable_list()
        ));
    }
    None
}

fn watchable_list() -> String {
    let (last, rest) = WATCHABLE.split_last().unwrap_or((&"", &[]));
    format!("{}, or {last},", rest.join(", "))
}

/// Can the pattern match something in (or, for a plain path, above and so over) one of
/// the watched areas?
fn under_watched_area(segs: &[&str], literal: bool) -> bool {
    WATCHABLE.iter().any(|area| {
        let area: Vec<&str> = area.split('/').collect();
        for (i, a) in area.iter().enumerate() {
            match segs.get(i) {
                // `control` covers control/sources and the rest; `contr*` only the dir.
                None => return literal,
                Some(&"**") => return true,
                Some(seg) if segment_matches(seg, a) => {}
                Some(_) => return false,
            }
        }
        true
    })
}

/// `*` and `?` inside one path segment.
fn segment_matches(pattern: &str, name: &str) -> bool {
    glob(pattern).is_some_and(|g| g.compile_matcher().is_match(name))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globs() {
        let m = pattern_matches;
        // A plain path: itself and everything under it, whole segments only.
        assert!(m("tasks", "tasks/task-7k2m.md"));
        assert!(m("tasks", "tasks"));
        assert!(m("tasks/", "tasks/task-7k2m.md"));
        assert!(!m("tasks", "tasksx/a.md"));
        assert!(!m("tasks", "observations/tasks.md"));
        assert!(m("solutions/task-1", "solutions/task-1/design.md"));
        assert!(!m("solutions/task-1", "solutions/task-10/design.md"));
        assert!(m("control/PAUSE", "control/PAUSE"));
        // `*` and `?` stay within one segment.
        assert!(m("tasks/*.md", "tasks/task-7k2m.md"));
        assert!(!m("tasks/*.md", "tasks/sub/task-7k2m.md"));
        assert!(!m("tasks/*.md", "tasks/notes.txt"));
        assert!(m("solutions/*/design.md", "solutions/task-1/design.md"));
        assert!(!m("solutions/*/design.md", "solutions/task-1/x/design.md"));
        assert!(!m("solutions/*/design.md", "solutions/design.md"));
        assert!(m("tasks/task-????.md", "tasks/task-7k2m.md"));
        assert!(!m("tasks/task-????.md", "tasks/task-7k2.md"));
        assert!(!m("tasks/?", "tasks/a/b"));
        assert!(m("tasks/*-*-*", "tasks/a-b-c-d"));
        assert!(!m("tasks/*x*y", "tasks/axbx"));
        assert!(m("tasks/*", "tasks/é.md"));
        assert!(m("*", "tasks"));
        assert!(!m("*", "tasks/a.md"));
        // `**`: any number of whole segments, none included.
        assert!(m("solutions/**", "solutions/task-1/impl/src/main.rs"));
        assert!(m("solutions/**", "solutions"));
        assert!(!m("solutions/**", "solutionsx/a"));
        assert!(m("**/design.md", "design.md"));
        assert!(m("**/design.md", "solutions/t/design.md"));
        assert!(m("solutions/**/*.md", "solutions/t/a/b.md"));
        assert!(m("solutions/**/*.md", "solutions/b.md"));
        assert!(!m("solutions/**/*.md", "tasks/b.md"));
        assert!(m("**", "anything/at/all"));
        assert!(m("a/**/b/**/c", "a/x/b/y/z/c"));
        assert!(!m("a/**/b/**/c", "a/x/c"));
        // Only `*`, `?` and `**` are special: brackets and braces are themselves.
        assert!(m("tasks/[ab]*.md", "tasks/[ab]x.md"));
        assert!(!m("tasks/[ab]*.md", "tasks/ax.md"));
        assert!(m("tasks/{a,b}*", "tasks/{a,b}.md"));
        assert!(!m("tasks/{a,b}*", "tasks/a.md"));
        assert!(!m("tasks/!*", "tasks/x"));
        // Many `**` and a long path stay fast (no exponential backtracking).
        let pattern = "**/".repeat(200) + "z";
        let path = "a/".repeat(2000) + "b";
        assert!(!m(&pattern, &path));
        let star = "*".repeat(200) + "z";
        assert!(!segment_matches(&star, &"a".repeat(2000)));
    }

    #[test]
    fn many_patterns_match_as_one() {
        let p = Patterns::new(&["tasks".into(), "solutions/*/design.md".into()]);
        assert!(p.matches("tasks/task-7k2m.md"));
        assert!(p.matches("solutions/task-1/design.md"));
        assert!(!p.matches("solutions/task-1/notes.md"));
        assert!(!p.matches("observations/obs-1.md"));
        assert!(!Patterns::default().matches("tasks/a.md"));
    }

    #[test]
    fn watch_entries() {
        for ok in [
            "tasks",
            "tasks/",
            "tasks/*.md",
            "solutions/*/design.md",
            "solutions/**",
            "control",
            "control/*",
            "control/PAUSE",
            "control/sources/x.md",
            "**/design.md",
            "obs*/*.md",
        ] {
            assert_eq!(pattern_problem(ok), None, "{ok}");
        }
        let area = "is not under a watched area; watch tasks, observations, questions, solutions, control/sources, control/agents, or control/PAUSE, or paths and globs under them";
        for (bad, why) in [
            ("archive/tasks", area.to_string()),
            (".state/x", area.into()),
            ("log.yaml", area.into()),
            ("templates/task.md", area.into()),
            ("control/schedule.md", area.into()),
            ("contr*", area.into()),
            (
                "/tasks",
                "must be relative to the board (no leading /)".into(),
            ),
            (
                "tasks/../log.yaml",
                "must stay inside the board (no .. components)".into(),
            ),
            ("..", "must stay inside the board (no .. components)".into()),
            (
                "tasks\\x",
                "must separate components with / (no backslash)".into(),
            ),
            ("tasks//x", "has an empty or '.' component".into()),
            ("./tasks", "has an empty or '.' component".into()),
        ] {
            assert_eq!(
                pattern_problem(bad),
                Some(format!("'{bad}' {why}")),
                "{bad}"
            );
        }
    }
}
