//! A fast path for the frontmatters tavern itself writes: one `key: value` per line with
//! plain scalars and flow lists of plain scalars. Anything else (quotes, block values,
//! anchors, floats, odd spellings) returns None and goes to the full YAML parser, so the
//! fast path never decides what YAML would decide differently. A property test checks it
//! against the full parser.
//!
//! Why: `tavern list` on a 100k-document board spends most of its time in YAML parsing
//! otherwise; this keeps a query within a small factor of reading the files raw.

use serde_json::{Map, Value};

/// Parses a frontmatter if every line is in the simple subset; None means "use YAML".
pub fn parse(frontmatter: &str) -> Option<Map<String, Value>> {
    // Sized once: growing the map line by line was a fifth of the parse.
    let count = frontmatter.bytes().filter(|&b| b == b'\n').count() + 1;
    let mut map = Map::with_capacity(count);
    for line in lines(frontmatter) {
        let line = line.strip_suffix('\r').unwrap_or(line);
        if line.is_empty() {
            continue;
        }
        let first = line.as_bytes()[0];
        if first == b'#' {
            continue;
        }
        if line.bytes().any(|b| b == b'\t') {
            return None;
        }
        let colon = byte_at(line, b':')?;
        let key = &line[..colon];
        if !is_simple_key(key) {
            return None;
        }
        let rest = &line[colon + 1..];
        if !(rest.is_empty() || rest.starts_with(' ')) {
            return None;
        }
        let value = value(rest)?;
        if map.insert(key.to_string(), value).is_some() {
            return None; // Duplicate key: the full parser reports it.
        }
    }
    Some(map)
}

/// A plain value (what follows `key:` on a line), as [`parse`] reads it.
fn value(rest: &str) -> Option<Value> {
    let value = strip_comment(rest).trim();
    if value.is_empty() {
        Some(Value::Null)
    } else if let Some(inner) = value.strip_prefix('[') {
        let inner = inner.strip_suffix(']')?;
        let mut items = Vec::new();
        if !inner.trim().is_empty() {
            for item in inner.split(',') {
                let item = item.trim();
                if item.is_empty() || item.contains([':', '#', '[', ']', '{', '}', '"', '\'']) {
                    return None;
                }
                items.push(scalar(item)?);
            }
        }
        Some(Value::Array(items))
    } else {
        scalar(value)
    }
}

/// One field of a frontmatter that [`parse`] reads (only then is the answer its): the
/// value [`parse`] would give `key`, read from its line alone; `Some(None)` when no line
/// holds it; None when the line does not read as plain.
pub fn field(frontmatter: &str, key: &str) -> Option<Option<Value>> {
    for line in lines(frontmatter) {
        let line = line.strip_suffix('\r').unwrap_or(line);
        if line.is_empty() || line.as_bytes()[0] == b'#' {
            continue;
        }
        let colon = byte_at(line, b':')?;
        if &line[..colon] == key {
            return value(&line[colon + 1..]).map(Some);
        }
    }
    Some(None)
}

/// The pieces of `text` between `\n`s, as `text.split('\n')` gives them, found byte by
/// byte: frontmatter lines are short, and the general searcher for a char (memchr, then
/// a compare of what it found) was a fifth of a big `list`'s time.
pub fn lines(text: &str) -> impl Iterator<Item = &str> {
    let mut rest = Some(text);
    std::iter::from_fn(move || {
        let r = rest?;
        match byte_at(r, b'\n') {
            Some(i) => {
                rest = Some(&r[i + 1..]);
                Some(&r[..i])
            }
            None => {
                rest = None;
                Some(r)
            }
        }
    })
}

/// Where the first `byte` (ASCII, so a char boundary) is in `s`.
pub fn byte_at(s: &str, byte: u8) -> Option<usize> {
    s.bytes().position(|b| b == byte)
}

fn is_simple_key(key: &str) -> bool {
    let mut bytes = key.bytes();
    matches!(bytes.next(), Some(b) if b.is_ascii_alphabetic() || b == b'_')
        && bytes.all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// Cuts a ` # comment`; only valid because no quoted scalar reaches the fast path. Byte
/// by byte: building a substring searcher for every value was a twentieth of a `summary`.
fn strip_comment(s: &str) -> &str {
    let bytes = s.as_bytes();
    match (1..bytes.len()).find(|&i| bytes[i] == b'#' && bytes[i - 1] == b' ') {
        Some(i) => &s[..i - 1],
        None => s,
    }
}

/// One plain scalar: a small integer, true/false, null, an RFC 3339 timestamp, or a string
/// that starts with a letter and has nothing YAML would treat specially.
fn scalar(s: &str) -> Option<Value> {
    let bytes = s.as_bytes();
    let first = bytes[0];
    if first.is_ascii_digit() || first == b'-' {
        if is_small_int(s) {
            return s.parse::<i64>().ok().map(Value::from);
        }
        if is_timestamp(s) {
            return Some(Value::String(s.to_string()));
        }
        return None;
    }
    match s {
        "true" | "True" | "TRUE" => return Some(Value::Bool(true)),
        "false" | "False" | "FALSE" => return Some(Value::Bool(false)),
        "null" | "Null" | "NULL" | "~" => return Some(Value::Null),
        _ => {}
    }
    let starts_ok = s
        .chars()
        .next()
        .is_some_and(|c| c.is_alphabetic() || c == '_' || c == '/');
    if !starts_ok || s.ends_with(':') || s.contains(": ") || s.chars().any(char::is_control) {
        return None;
    }
    Some(Value::String(s.to_string()))
}

fn is_small_int(s: &str) -> bool {
    let digits = s.strip_prefix('-').unwrap_or(s);
    !digits.is_empty()
        && digits.len() <= 18
        && digits.bytes().all(|b| b.is_ascii_digit())
        && (digits == "0" || !digits.starts_with('0'))
        && s != "-0"
}

/// `2026-11-22T10:04:05Z`, with optional fraction and offset.
fn is_timestamp(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() >= 20
        && b[..4].iter().all(u8::is_ascii_digit)
        && b[4] == b'-'
        && b[7] == b'-'
        && b[10] == b'T'
        && b[13] == b':'
        && b[16] == b':'
        && s.bytes()
            .all(|c| c.is_ascii_digit() || matches!(c, b'-' | b':' | b'T' | b'Z' | b'.' | b'+'))
        && chrono::DateTime::parse_from_rfc3339(s).is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::yaml::{YamlLimits, parse_mapping};
    use proptest::prelude::*;

    #[test]
    fn parses_what_tavern_writes() {
        let fm = "id: task-7k2m\ntitle: Parse frontmatter byte-exactly\nstatus: claimed\npriority: 1              # 0 = critical\ntags: [parser, cli]\ndepends_on: []\nclaimed_at: 2026-11-22T10:04:05Z\nrev: 3\nempty:\n";
        assert_eq!(
            parse(fm),
            Some(parse_mapping(fm, YamlLimits::default()).unwrap())
        );
    }

    #[test]
    fn declines_anything_unusual() {
        for fm in [
            "a: \"q\"\n",
            "a:\n  - x\n",
            "a: &x 1\n",
            "a: 0.5\n",
            "a: 0755\n",
            "a: 2026-11-22\n",
            "a: b: c\n",
            "a: {x: 1}\n",
            " a: 1\n",
            "a: 1\na: 2\n",
            "a: [\"x\"]\n",
            "a: [x: y]\n",
            "? a\n",
        ] {
            assert_eq!(parse(fm), None, "{fm:?}");
        }
    }

    fn line() -> impl Strategy<Value = String> {
        let scalar = prop_oneof![
            "[a-zA-Z_/][a-zA-Z0-9 _./@()'\"!&*%,#:-]{0,12}",
            "-?[0-9]{1,20}",
            Just("true".to_string()),
            Just("False".to_string()),
            Just("null".to_string()),
            Just("~".to_string()),
            Just("2026-11-22T10:04:05Z".to_string()),
            Just("2026-11-22T10:04:05.5+01:00".to_string()),
            Just("yes".to_string()),
            Just(".inf".to_string()),
            "[0-9.eE+-]{1,6}",
        ];
        let value = prop_oneof![
            scalar.clone(),
            proptest::collection::vec(scalar, 0..4).prop_map(|v| format!("[{}]", v.join(", "))),
            Just(String::new()),
        ];
        (
            prop_oneof!["[a-z_][a-z0-9_-]{0,6}", Just("#".to_string())],
            value,
            prop_oneof![Just(""), Just("  # c"), Just(" "), Just("\r")],
        )
            .prop_map(|(k, v, tail)| format!("{k}: {v}{tail}\n"))
    }

    proptest! {
        /// Whenever the fast path answers, it answers exactly what the YAML parser does.
        #[test]
        fn agrees_with_the_yaml_parser(lines in proptest::collection::vec(line(), 0..8)) {
            let fm = lines.concat();
            if let Some(fast) = parse(&fm) {
                let full = parse_mapping(&fm, YamlLimits::default());
                prop_assert_eq!(Ok(fast), full, "{:?}", fm);
            }
        }

        /// `lines` cuts as `split('\n')` does, on any text (multi-byte chars, `\r`, empty
        /// pieces at either end).
        #[test]
        fn lines_are_what_split_gives(text in "(\\PC|\n|\r){0,60}") {
            let ours: Vec<&str> = lines(&text).collect();
            let std: Vec<&str> = text.split('\n').collect();
            prop_assert_eq!(ours, std);
        }

        /// `strip_comment` cuts where the first ` #` starts, as `find(" #")` does, on any
        /// text (multi-byte chars, `#` first, runs of spaces and hashes).
        #[test]
        fn strip_comment_cuts_at_the_first_space_hash(text in "( |#|a|é|\\PC){0,30}") {
            let want = match text.find(" #") {
                Some(i) => &text[..i],
                None => &text[..],
            };
            prop_assert_eq!(strip_comment(&text), want);
        }

        #[test]
        fn agrees_on_any_text(fm in "\\PC{0,40}") {
            if let Some(fast) = parse(&fm) {
                prop_assert_eq!(Ok(fast), parse_mapping(&fm, YamlLimits::default()), "{:?}", fm);
            }
        }
    }
}
