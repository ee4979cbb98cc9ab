//! `run:` as a command template. Only `{id}`, `{path}` and `{region}` are substituted, each
//! value becomes exactly one shell word (quoted when it is not plainly safe), and a
//! placeholder where quoting would not protect it (inside quotes, backquotes, `${…}`,
//! `$((…))` or a here-document) is refused when the source is read.
//!
//! Word-splitting crates (shlex, shell-words) turn a line into words and lose where each
//! word stood: whether a `{id}` sits inside `$(…)`, backquotes or a here-document is what
//! decides its safety, so the template has its own small scanner. Quoting is ours too: a
//! value that starts with `-` is quoted here, which those crates leave bare.

use super::PLACEHOLDERS;

/// A value as one word for `sh`: as is when made only of `[A-Za-z0-9._/-]` and not
/// starting with `-`, otherwise single-quoted (a `'` inside becomes `'"'"'`), so no value
/// can add shell syntax to a command line.
pub fn shell_word(value: &str) -> String {
    let plain = !value.is_empty()
        && !value.starts_with('-')
        && value
            .bytes()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'.' | b'_' | b'/' | b'-'));
    if plain {
        value.to_string()
    } else {
        format!("'{}'", value.replace('\'', r#"'"'"'"#))
    }
}

/// The command line of template `run` with `{id}`, `{path}` and `{region}` substituted,
/// each value as exactly one shell word (see [`shell_word`]); a value is never scanned for
/// placeholders again.
pub fn render(run: &str, id: &str, path: &str, region: &str) -> String {
    let mut out = String::with_capacity(run.len() + id.len() + path.len());
    let mut done = 0;
    for p in scan_run(run).placeholders {
        let value = match p.word {
            "id" => id,
            "path" => path,
            "region" => region,
            _ => continue,
        };
        out.push_str(&run[done..p.start]);
        out.push_str(&shell_word(value));
        done = p.end;
    }
    out.push_str(&run[done..]);
    out
}

/// What is wrong with template `run`: unknown placeholders (each once), placeholders where
/// quoting cannot protect their value, and a quote or bracket left open.
pub fn problems(run: &str) -> Vec<String> {
    let scan = scan_run(run);
    let mut problems: Vec<String> = Vec::new();
    for p in &scan.placeholders {
        let problem = if !PLACEHOLDERS.contains(&p.word) {
            format!(
                "{{{}}} is not substituted: only {{id}} {{path}} {{region}} are substituted; other values reach the command through the environment (TAVERN_DOC, TAVERN_ID, …) or stdin",
                p.word
            )
        } else if let Some(context) = p.unsafe_in {
            format!(
                "{{{}}} is inside {context}, where quoting cannot keep its value one word; write it outside any quotes: tavern quotes the value itself",
                p.word
            )
        } else {
            continue;
        };
        if !problems.contains(&problem) {
            problems.push(problem);
        }
    }
    if let Some(open) = scan.unclosed {
        problems.push(format!(
            "{} is never closed, so sh would refuse the command",
            open.opener()
        ));
    }
    problems
}

/// A `{word}` in `run:`: where it is, and the shell context around it when that context
/// would not keep a quoted value one literal word.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Placeholder<'a> {
    word: &'a str,
    start: usize,
    end: usize,
    unsafe_in: Option<&'static str>,
}

/// The shell contexts the scanner tells apart.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Sh {
    Plain,
    Single,
    Double,
    Backtick,
    /// `$(…)`: a fresh command, where quoting works again.
    Subst,
    /// `(…)`: a subshell, likewise.
    Paren,
    Arith,
    Param,
}

impl Sh {
    fn inside(self) -> &'static str {
        match self {
            Sh::Single => "'…'",
            Sh::Double => "\"…\"",
            Sh::Backtick => "`…`",
            Sh::Arith => "$((…))",
            Sh::Param => "${…}",
            Sh::Plain | Sh::Subst | Sh::Paren => "",
        }
    }

    fn opener(self) -> &'static str {
        match self {
            Sh::Single => "a ' quote",
            Sh::Double => "a \" quote",
            Sh::Backtick => "a ` quote",
            Sh::Subst => "a $(",
            Sh::Paren => "a (",
            Sh::Arith => "a $((",
            Sh::Param => "a ${",
            Sh::Plain => "",
        }
    }

    /// Contexts where a single-quoted word is one literal word.
    fn is_command(self) -> bool {
        matches!(self, Sh::Plain | Sh::Subst | Sh::Paren)
    }
}

#[derive(Debug, Default)]
struct RunScan<'a> {
    placeholders: Vec<Placeholder<'a>>,
    /// The innermost quote or bracket left open at the end, if any.
    unclosed: Option<Sh>,
}

/// The length of a `{word}` placeholder starting at `i`, if one does. `${word}` is the
/// shell's own parameter expansion and never a placeholder.
fn placeholder_at(b: &[u8], i: usize) -> Option<usize> {
    if b.get(i) != Some(&b'{') || (i > 0 && b[i - 1] == b'$') {
        return None;
    }
    let first = *b.get(i + 1)?;
    if !(first.is_ascii_alphabetic() || first == b'_') {
        return None;
    }
    let len = b[i + 1..]
        .iter()
        .take_while(|c| c.is_ascii_alphanumeric() || **c == b'_')
        .count();
    (b.get(i + 1 + len) == Some(&b'}')).then_some(len + 2)
}

/// Walks `run` like a (small) shell lexer: quotes, backquotes, `$(…)`, `(…)`, `$((…))`,
/// `${…}`, comments and here-documents, enough to know the context of every placeholder.
/// Only ASCII bytes drive it, so slicing at its offsets is always on char boundaries.
fn scan_run(run: &str) -> RunScan<'_> {
    let b = run.as_bytes();
    let mut out = RunScan::default();
    let mut stack = vec![Sh::Plain];
    // After an unquoted `<<`, the lines that follow are a here-document body, where sh
    // expands `$(…)` whatever the quotes: nothing after it is safe (we do not track where
    // the body ends; refusing too much is the safe side).
    let mut heredoc_pending = false;
    let mut in_heredoc = false;
    let mut i = 0;
    while i < b.len() {
        let top = stack.last().copied().unwrap_or(Sh::Plain);
        if let Some(len) = placeholder_at(b, i) {
            let unsafe_in = if in_heredoc {
                Some("a here-document")
            } else if stack.contains(&Sh::Backtick) {
                Some(Sh::Backtick.inside())
            } else if top.is_command() {
                None
            } else {
                Some(top.inside())
            };
            out.placeholders.push(Placeholder {
                word: &run[i + 1..i + len - 1],
                start: i,
                end: i + len,
                unsafe_in,
            });
            i += len;
            continue;
        }
        let c = b[i];
        if in_heredoc {
            i += 1;
            continue;
        }
        if top == Sh::Single {
            if c == b'\'' {
                stack.pop();
            }
            i += 1;
            continue;
        }
        let next = b.get(i + 1).copied();
        let step = match c {
            b'\\' => 2,
            b'$' if b[i..].starts_with(b"$((") => {
                stack.push(Sh::Arith);
                3
            }
            b'$' if next == Some(b'(') => {
                stack.push(Sh::Subst);
                2
            }
            b'$' if next == Some(b'{') => {
                stack.push(Sh::Param);
                2
            }
            b'`' => {
                if top == Sh::Backtick {
                    stack.pop();
                } else {
                    stack.push(Sh::Backtick);
                }
                1
            }
            b'"' => {
                if top == Sh::Double {
                    stack.pop();
                } else {
                    stack.push(Sh::Double);
                }
                1
            }
            b'\'' if top != Sh::Double => {
                stack.push(Sh::Single);
                1
            }
            b'(' if top.is_command() => {
                stack.push(Sh::Paren);
                1
            }
            b')' if top == Sh::Arith && next == Some(b')') => {
                stack.pop();
                2
            }
            b')' if matches!(top, Sh::Subst | Sh::Paren) => {
                stack.pop();
                1
            }
            b'}' if top == Sh::Param => {
                stack.pop();
                1
            }
            b'#' if top.is_command() && starts_word(b, i) => {
                // A comment runs to the end of the line.
                b[i..]
                    .iter()
                    .position(|c| *c == b'\n')
                    .unwrap_or(b.len() - i)
            }
            b'<' if top.is_command() && next == Some(b'<') => {
                heredoc_pending = true;
                2
            }
            b'\n' => {
                in_heredoc = heredoc_pending;
                1
            }
            _ => 1,
        };
        i += step;
    }
    if !in_heredoc {
        out.unclosed = stack.last().copied().filter(|s| *s != Sh::Plain);
    }
    out
}

/// Does a word start at `i` (so a `#` there begins a comment)?
fn starts_word(b: &[u8], i: usize) -> bool {
    i == 0 || b[i - 1].is_ascii_whitespace() || matches!(b[i - 1], b';' | b'&' | b'|' | b'(')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shell_words() {
        assert_eq!(shell_word("task-7k2m"), "task-7k2m");
        assert_eq!(shell_word("tasks/task-7k2m.md"), "tasks/task-7k2m.md");
        assert_eq!(shell_word("A_b.9"), "A_b.9");
        assert_eq!(shell_word(""), "''");
        assert_eq!(shell_word("-rf"), "'-rf'");
        assert_eq!(shell_word("it's"), r#"'it'"'"'s'"#);
        assert_eq!(shell_word("a b"), "'a b'");
        assert_eq!(shell_word("é"), "'é'");
        assert_eq!(
            shell_word("a b; rm -rf ~ $(x) `y`"),
            "'a b; rm -rf ~ $(x) `y`'"
        );
    }

    /// What sh makes of a command line: its words, one per line.
    #[cfg(unix)]
    fn sh_words(command: &str) -> String {
        let out = std::process::Command::new("sh")
            .arg("-c")
            .arg(format!("set -- {command}; printf '%s\\n' \"$@\""))
            .output()
            .expect("run sh");
        assert!(out.status.success(), "{out:?}");
        String::from_utf8(out.stdout).unwrap()
    }

    #[cfg(unix)]
    #[test]
    fn hostile_values_stay_one_word() {
        let run = "a {id} solutions/{path}/x {region}";
        let hostile = "a b; rm -rf ~ $(x) `y` 'q' \"d\" \\ \n*";
        let line = render(run, hostile, "-n", "it's");
        assert_eq!(
            line,
            r#"a 'a b; rm -rf ~ $(x) `y` '"'"'q'"'"' "d" \ 
*' solutions/'-n'/x 'it'"'"'s'"#
        );
        assert_eq!(
            sh_words(&line),
            format!("a\n{hostile}\nsolutions/-n/x\nit's\n")
        );
    }

    #[test]
    fn scanner_contexts() {
        let words = |run: &str| -> Vec<(String, Option<&'static str>)> {
            scan_run(run)
                .placeholders
                .into_iter()
                .map(|p| (p.word.to_string(), p.unsafe_in))
                .collect()
        };
        assert_eq!(
            words("a {id} '{x}' \"{y}\""),
            [
                ("id".into(), None),
                ("x".into(), Some("'…'")),
                ("y".into(), Some("\"…\"")),
            ]
        );
        assert_eq!(words("echo \\'{id}"), [("id".into(), None)]);
        assert_eq!(words("echo \"it's {id}\""), [("id".into(), Some("\"…\""))]);
        assert_eq!(words("`echo $({id})`"), [("id".into(), Some("`…`"))]);
        assert_eq!(words("{} {1} {a-b} {id"), []);
        assert_eq!(scan_run("echo 'a").unclosed, Some(Sh::Single));
        assert_eq!(scan_run("echo \"a").unclosed, Some(Sh::Double));
        assert_eq!(scan_run("echo `a").unclosed, Some(Sh::Backtick));
        assert_eq!(scan_run("echo ${a").unclosed, Some(Sh::Param));
        assert_eq!(scan_run("echo $((a)) (b) $(c) # it's").unclosed, None);
        assert_eq!(scan_run("cat <<'EOF'\nit's\nEOF").unclosed, None);
    }
}
