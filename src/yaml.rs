//! The one place that talks to the YAML library (serde-saphyr), and our own rendering of
//! single values for surgical edits and the log.
//!
//! Parsing is bounded (events, aliases, anchors) so an alias bomb costs nothing, booleans
//! are strict (`yes` stays a string) and duplicate keys are an error. Rendering quotes every
//! string a YAML 1.1 reader could misread.

use serde_json::{Map, Value};

/// Limits applied to every frontmatter we parse (from board.yaml `limits:`).
#[derive(Clone, Copy, Debug)]
pub struct YamlLimits {
    pub max_events: usize,
    pub max_aliases: usize,
}

impl Default for YamlLimits {
    fn default() -> Self {
        YamlLimits {
            max_events: 10_000,
            max_aliases: 64,
        }
    }
}

/// A YAML syntax or limit error, with its position inside the parsed text (1-based).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct YamlError {
    pub line: u64,
    pub column: u64,
    pub message: String,
}

fn options(limits: YamlLimits) -> serde_saphyr::Options {
    let mut budget = serde_saphyr::Budget::default();
    budget.max_events = limits.max_events;
    budget.max_aliases = limits.max_aliases;
    budget.max_anchors = limits.max_aliases.max(1);
    let mut o = serde_saphyr::Options::default();
    o.budget = Some(budget);
    o.alias_limits.max_total_replayed_events = limits.max_events;
    o.strict_booleans = true;
    o.duplicate_keys = serde_saphyr::DuplicateKeyPolicy::Error;
    o.leading_zero_numbers_as_strings = true;
    o.underscored_numbers_as_strings = true;
    o
}

/// The first line of the library's message, without its own "error: line L column C:" prefix.
fn short_message(e: &serde_saphyr::Error) -> String {
    let full = e.to_string();
    let first = full.lines().next().unwrap_or("").trim();
    let first = first.strip_prefix("error: ").unwrap_or(first);
    // Drop a leading "line L column C: " since we print the position ourselves.
    let msg = match first.strip_prefix("line ") {
        Some(rest) => match rest.find(": ") {
            Some(i) if rest[..i].contains("column") => &rest[i + 2..],
            _ => first,
        },
        None => first,
    };
    msg.replace(", set DuplicateKeyPolicy in Options if acceptable", "")
}

/// What a value may not start with unquoted: YAML reads it as syntax (a flow list or map,
/// an alias, an anchor, a tag, a block scalar, a quoted string, a directive, or a reserved
/// character).
const INDICATORS: &[char] = &['[', '{', '*', '&', '!', '|', '>', '\'', '"', '%', '@', '`'];

/// The value of a `key: value` line, if the line is one.
fn line_value(line: &str) -> Option<(&str, &str)> {
    let t = line.trim_start();
    if t.starts_with(['#', '-']) {
        return None;
    }
    let (key, value) = t.split_once(": ")?;
    Some((key.trim(), value.trim()))
}

/// Does `value` open a flow collection or a quoted string that it does not close on its
/// line (so that YAML reads on, and trips over the end later)?
fn left_open(value: &str) -> bool {
    let depth = |open: char, close: char| {
        value.chars().filter(|c| *c == open).count() > value.chars().filter(|c| *c == close).count()
    };
    match value.chars().next() {
        Some('[') => depth('[', ']'),
        Some('{') => depth('{', '}'),
        Some(q @ ('\'' | '"')) => value.len() == 1 || !value[1..].trim_end().ends_with(q),
        _ => false,
    }
}

/// Where a YAML error that the parser found on `line` (1-based) of `text` comes from: the
/// line of an unquoted value that starts with an indicator character (a flow list left open
/// is found at the end of the text, lines later), and the hint to quote it. None when no
/// such value explains it.
fn unquoted_value(text: &str, line: u64) -> Option<(u64, String)> {
    let lines: Vec<&str> = text.lines().collect();
    let last = usize::try_from(line).ok()?.clamp(1, lines.len().max(1));
    (1..=last.min(lines.len())).rev().find_map(|n| {
        let (key, value) = line_value(lines[n - 1])?;
        let first = value.chars().next()?;
        let here = n == last || n + 1 == last;
        let candidate = INDICATORS.contains(&first)
            && (left_open(value) || (here && !matches!(first, '[' | '{' | '\'' | '"')));
        // A block scalar (`key: |`) is fine on its own line.
        let block = matches!(first, '|' | '>') && value.len() == 1;
        (candidate && !block).then(|| {
            let quoted = value.replace('\\', "\\\\").replace('"', "\\\"");
            (
                n as u64,
                format!(
                    "a value starting with [ {{ * & ! | > ' \" % @ or ` is read as YAML syntax: quote it, as in {key}: \"{quoted}\""
                ),
            )
        })
    })
}

/// Parses any YAML value.
pub fn parse_value(text: &str, limits: YamlLimits) -> Result<Value, YamlError> {
    serde_saphyr::from_str_with_options::<Value>(text, options(limits)).map_err(|e| {
        let (line, column) = e
            .location()
            .map(|l| (l.line(), l.column()))
            .unwrap_or((0, 0));
        let message = short_message(&e);
        // A budget (an alias bomb, too many events) is not a quoting matter.
        if line > 0
            && !message.contains("budget")
            && let Some((line, hint)) = unquoted_value(text, line)
        {
            return YamlError {
                line,
                column: 1,
                message: format!("{message} ({hint})"),
            };
        }
        YamlError {
            line,
            column,
            message,
        }
    })
}

/// Parses a frontmatter: a mapping (or nothing at all, which is an empty mapping).
pub fn parse_mapping(text: &str, limits: YamlLimits) -> Result<Map<String, Value>, YamlError> {
    match parse_value(text, limits)? {
        Value::Object(map) => Ok(map),
        Value::Null => Ok(Map::new()),
        other => Err(YamlError {
            line: 1,
            column: 1,
            message: format!(
                "frontmatter must be a mapping of fields, found {}",
                kind_name(&other)
            ),
        }),
    }
}

pub fn kind_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "a mapping",
    }
}

/// Reads a value given on the command line (`--set k=v`): flow lists and maps, numbers,
/// booleans, null and quoted strings are YAML; anything else is the literal string, so
/// `--set title=Fix: the parser` does not turn into a mapping.
pub fn parse_cli_value(raw: &str, limits: YamlLimits) -> Value {
    let trimmed = raw.trim();
    if trimmed.is_empty() {
        return Value::String(String::new());
    }
    match parse_value(trimmed, limits) {
        Ok(Value::Object(_)) if !trimmed.starts_with('{') => Value::String(raw.to_string()),
        Ok(Value::Array(_)) if !trimmed.starts_with('[') => Value::String(raw.to_string()),
        Ok(Value::String(s)) if !trimmed.starts_with(['"', '\'']) => {
            // A plain scalar: keep the user's exact text (YAML would fold some whitespace).
            let _ = s;
            Value::String(raw.to_string())
        }
        Ok(v) => v,
        Err(_) => Value::String(raw.to_string()),
    }
}

/// Renders a value on one line, as it goes after `key: ` in a frontmatter.
pub fn render_inline(v: &Value) -> String {
    let mut out = String::new();
    write_inline(&mut out, v);
    out
}

fn write_inline(out: &mut String, v: &Value) {
    match v {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => out.push_str(&n.to_string()),
        Value::String(s) => out.push_str(&render_str(s)),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                write_inline(out, item);
            }
            out.push(']');
        }
        Value::Object(map) => {
            out.push('{');
            for (i, (k, item)) in map.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                out.push_str(&render_str(k));
                out.push_str(": ");
                write_inline(out, item);
            }
            out.push('}');
        }
    }
}

/// A string as a plain scalar when every YAML reader reads it back as the same string,
/// double-quoted otherwise.
pub fn render_str(s: &str) -> String {
    if is_plain_safe(s) {
        s.to_string()
    } else {
        // JSON string escapes are a subset of YAML double-quoted escapes.
        serde_json::to_string(s).unwrap_or_else(|_| "\"\"".to_string())
    }
}

fn is_plain_safe(s: &str) -> bool {
    let Some(first) = s.chars().next() else {
        return false;
    };
    if !(first.is_alphanumeric() || first == '_' || first == '/' || first == '.') {
        return false;
    }
    if s.ends_with(' ') {
        return false;
    }
    let is_timestamp = chrono::DateTime::parse_from_rfc3339(s).is_ok();
    for c in s.chars() {
        if c.is_control() || "#,[]{}&*!|>'\"%@`\\".contains(c) {
            return false;
        }
        if c == ':' && !is_timestamp {
            return false;
        }
    }
    !is_ambiguous_scalar(s) || is_timestamp
}

/// Would a YAML 1.1 or 1.2 reader take this plain text for something other than a string?
fn is_ambiguous_scalar(s: &str) -> bool {
    let lower = s.to_ascii_lowercase();
    const WORDS: &[&str] = &[
        "true", "false", "yes", "no", "on", "off", "y", "n", "null", "~", ".inf", "-.inf", "+.inf",
        ".nan",
    ];
    if WORDS.contains(&lower.as_str()) {
        return true;
    }
    // Numbers, dates and sexagesimals in any of the spellings readers know.
    s.chars()
        .all(|c| c.is_ascii_digit() || "_.eE+-:xXoObB".contains(c))
        && s.chars().any(|c| c.is_ascii_digit())
        || lower.starts_with("0x")
        || lower.starts_with("0o")
        || lower.starts_with("0b")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn renders_plain_when_safe() {
        assert_eq!(render_str("task-7k2m"), "task-7k2m");
        assert_eq!(
            render_str("Parse frontmatter byte-exactly"),
            "Parse frontmatter byte-exactly"
        );
        assert_eq!(render_str("2026-11-22T10:04:05Z"), "2026-11-22T10:04:05Z");
    }

    #[test]
    fn quotes_what_readers_would_misread() {
        for s in [
            "yes",
            "no",
            "on",
            "NULL",
            "~",
            "1",
            "0755",
            "1e3",
            "2026-11-22",
            "0x1F",
            "1:20",
            "",
            " a",
            "a ",
            "Fix: it",
            "a # b",
            "[x]",
            "-x",
            "'q'",
            "line\nbreak",
        ] {
            let r = render_str(s);
            assert!(r.starts_with('"'), "{s:?} rendered as {r}");
            let back = parse_value(&r, YamlLimits::default()).unwrap();
            assert_eq!(back, json!(s), "{s:?} -> {r}");
        }
    }

    #[test]
    fn renders_lists_and_maps() {
        assert_eq!(
            render_inline(&json!(["a", "b c", 1, true])),
            "[a, b c, 1, true]"
        );
        assert_eq!(
            render_inline(&json!({"k": "v", "z": null})),
            "{k: v, z: null}"
        );
    }

    #[test]
    fn cli_values() {
        let l = YamlLimits::default();
        assert_eq!(parse_cli_value("[a, b]", l), json!(["a", "b"]));
        assert_eq!(parse_cli_value("3", l), json!(3));
        assert_eq!(parse_cli_value("0.5", l), json!(0.5));
        assert_eq!(parse_cli_value("true", l), json!(true));
        assert_eq!(parse_cli_value("yes", l), json!("yes"));
        assert_eq!(
            parse_cli_value("Fix: the parser", l),
            json!("Fix: the parser")
        );
        assert_eq!(parse_cli_value("\"3\"", l), json!("3"));
        assert_eq!(parse_cli_value("a - b", l), json!("a - b"));
    }

    #[test]
    fn strict_booleans_and_duplicates() {
        let l = YamlLimits::default();
        let m = parse_mapping("a: yes\nb: true\n", l).unwrap();
        assert_eq!(m["a"], json!("yes"));
        assert_eq!(m["b"], json!(true));
        let e = parse_mapping("a: 1\na: 2\n", l).unwrap_err();
        assert_eq!(e.line, 2);
        assert!(e.message.contains("duplicate"), "{}", e.message);
    }

    #[test]
    fn alias_bomb_is_refused() {
        let bomb = "a: &a [x,x,x,x,x,x,x,x,x]\nb: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]\nc: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]\nd: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]\ne: [*d,*d,*d,*d,*d,*d,*d,*d,*d]\n";
        assert!(parse_mapping(bomb, YamlLimits::default()).is_err());
    }
}
