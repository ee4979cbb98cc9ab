//! Surgical edits of frontmatter fields: only the lines of the fields that change are
//! rewritten. Key order, comments, quoting, unknown keys and the body stay byte-identical,
//! so `git diff` of a claim shows exactly the lines that changed.

use serde_json::Value;

use crate::yaml;

/// The lines of one top-level key: from its `key:` line up to (not including) the next
/// top-level key, comment or trailing blank lines.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KeySpan {
    pub key: String,
    /// The key as written, quotes included, so a rewrite keeps its spelling.
    pub written_key: String,
    pub start: usize,
    pub end: usize,
}

/// One requested change to a frontmatter.
#[derive(Clone, Debug, PartialEq)]
pub enum FieldEdit {
    Set(String, Value),
    Unset(String),
}

/// Splits text into lines, each with its line ending.
fn lines_with_offsets(text: &str) -> impl Iterator<Item = (usize, &str)> {
    let mut offset = 0;
    text.split_inclusive('\n').map(move |line| {
        let at = offset;
        offset += line.len();
        (at, line)
    })
}

/// If `line` starts a top-level `key:` entry, returns (key, written key).
fn top_level_key(line: &str) -> Option<(String, String)> {
    let content = line.trim_end_matches(['\n', '\r']);
    let first = content.chars().next()?;
    if first.is_whitespace() || first == '#' || content == "---" || content == "..." {
        return None;
    }
    if first == '-' && (content.len() == 1 || content[1..].starts_with([' ', '\t'])) {
        return None;
    }
    let (key, after) = match first {
        '"' | '\'' => {
            let close = find_closing_quote(content, first)?;
            let written = &content[..=close];
            let key = match yaml::parse_value(written, yaml::YamlLimits::default()) {
                Ok(Value::String(s)) => s,
                _ => return None,
            };
            (key, close + 1)
        }
        _ => {
            let bytes = content.as_bytes();
            let mut i = 0;
            loop {
                if i >= bytes.len() {
                    return None;
                }
                if bytes[i] == b':'
                    && (i + 1 == bytes.len() || matches!(bytes[i + 1], b' ' | b'\t'))
                {
                    break;
                }
                i += 1;
            }
            (content[..i].trim_end().to_string(), i)
        }
    };
    let rest = content[after..].trim_start_matches([' ', '\t']);
    let colon = content.len() - rest.len();
    if !rest.starts_with(':') {
        return None;
    }
    let after_colon = &rest[1..];
    if !(after_colon.is_empty() || after_colon.starts_with([' ', '\t'])) {
        return None;
    }
    Some((key, content[..colon].to_string()))
}

fn find_closing_quote(s: &str, quote: char) -> Option<usize> {
    let bytes = s.as_bytes();
    let q = quote as u8;
    let mut i = 1;
    while i < bytes.len() {
        let b = bytes[i];
        if quote == '"' && b == b'\\' {
            i += 2;
            continue;
        }
        if b == q {
            if quote == '\'' && bytes.get(i + 1) == Some(&b'\'') {
                i += 2;
                continue;
            }
            return Some(i);
        }
        i += 1;
    }
    None
}

/// Does this line continue the value of the key above it?
fn is_continuation(line: &str) -> bool {
    let content = line.trim_end_matches(['\n', '\r']);
    content.starts_with([' ', '\t'])
        || content == "-"
        || content.starts_with("- ")
        || content.starts_with("-\t")
}

fn is_blank(line: &str) -> bool {
    line.trim().is_empty()
}

/// Every top-level key of a frontmatter with the byte range of its lines.
pub fn key_spans(frontmatter: &str) -> Vec<KeySpan> {
    let lines: Vec<(usize, &str)> = lines_with_offsets(frontmatter).collect();
    let mut spans = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let (start, line) = lines[i];
        let Some((key, written_key)) = top_level_key(line) else {
            i += 1;
            continue;
        };
        let mut end = start + line.len();
        let mut j = i + 1;
        // Blank lines belong to the value only when more of the value follows them.
        while j < lines.len() {
            let (_, l) = lines[j];
            if is_continuation(l) {
                end = lines[j].0 + l.len();
                j += 1;
            } else if is_blank(l) {
                let mut k = j;
                while k < lines.len() && is_blank(lines[k].1) {
                    k += 1;
                }
                if k < lines.len() && is_continuation(lines[k].1) {
                    j = k;
                } else {
                    break;
                }
            } else {
                break;
            }
        }
        spans.push(KeySpan {
            key,
            written_key,
            start,
            end,
        });
        i = j;
    }
    spans
}

/// The trailing `  # comment` of a one-line value, if any, so a rewrite can keep it.
fn trailing_comment(value_part: &str) -> Option<&str> {
    let bytes = value_part.as_bytes();
    let start = value_part.len() - value_part.trim_start().len();
    let mut i = start;
    let mut depth = 0i32;
    let mut quote: Option<u8> = None;
    while i < bytes.len() {
        let b = bytes[i];
        match quote {
            Some(q) => {
                if q == b'"' && b == b'\\' {
                    i += 2;
                    continue;
                }
                if q == b'\'' && b == q && bytes.get(i + 1) == Some(&q) {
                    i += 2;
                    continue;
                }
                if b == q {
                    quote = None;
                }
            }
            None => match b {
                b'"' | b'\''
                    if i == start
                        || depth > 0 && matches!(bytes[i - 1], b'[' | b'{' | b',' | b' ') =>
                {
                    quote = Some(b)
                }
                b'[' | b'{' => depth += 1,
                b']' | b'}' => depth -= 1,
                b'#' if i == start || matches!(bytes[i - 1], b' ' | b'\t') => {
                    let mut c = i;
                    while c > 0 && matches!(bytes[c - 1], b' ' | b'\t') {
                        c -= 1;
                    }
                    return Some(&value_part[c..]);
                }
                _ => {}
            },
        }
        i += 1;
    }
    None
}

/// The line ending a frontmatter uses (CRLF if its first line has one).
pub fn line_ending(text: &str) -> &'static str {
    match text.find('\n') {
        Some(i) if i > 0 && text.as_bytes()[i - 1] == b'\r' => "\r\n",
        _ => "\n",
    }
}

/// Applies field edits to a frontmatter text and returns the new text. Fields that are set
/// and exist are rewritten in place; new fields go at the end; unset fields vanish.
pub fn apply(frontmatter: &str, edits: &[FieldEdit], eol: &str) -> String {
    let mut text = frontmatter.to_string();
    for edit in edits {
        let spans = key_spans(&text);
        match edit {
            FieldEdit::Set(key, value) => {
                let rendered = yaml::render_inline(value);
                match spans.iter().find(|s| &s.key == key) {
                    Some(span) => {
                        let old = &text[span.start..span.end];
                        let first_line = old.split_inclusive('\n').next().unwrap_or(old);
                        let single_line = first_line.len() == old.len();
                        let content = first_line.trim_end_matches(['\n', '\r']);
                        let line_eol = &first_line[content.len()..];
                        let line_eol = if line_eol.is_empty() { eol } else { line_eol };
                        let after_key = &content[span.written_key.len()..];
                        let value_part = after_key.find(':').map_or("", |i| &after_key[i + 1..]);
                        let comment = if single_line {
                            trailing_comment(value_part).unwrap_or("")
                        } else {
                            ""
                        };
                        let new_line =
                            format!("{}: {rendered}{comment}{line_eol}", span.written_key);
                        text.replace_range(span.start..span.end, &new_line);
                    }
                    None => {
                        if !text.is_empty() && !text.ends_with('\n') {
                            text.push_str(eol);
                        }
                        text.push_str(&format!("{}: {rendered}{eol}", yaml::render_str(key)));
                    }
                }
            }
            FieldEdit::Unset(key) => {
                if let Some(span) = spans.iter().find(|s| &s.key == key) {
                    text.replace_range(span.start..span.end, "");
                }
            }
        }
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    const FM: &str = "id: task-1\n# a comment\ntitle: \"Quoted: title\"\npriority: 1              # 0 = critical\ntags:\n  - a\n\n  - b\nunknown_key: {x: 1}\n'quoted key': v\nbody_like: |\n  line one\n\n  line two\n\nlast: x\n";

    #[test]
    fn finds_every_top_level_key() {
        let keys: Vec<String> = key_spans(FM).into_iter().map(|s| s.key).collect();
        assert_eq!(
            keys,
            [
                "id",
                "title",
                "priority",
                "tags",
                "unknown_key",
                "quoted key",
                "body_like",
                "last"
            ]
        );
        let tags = key_spans(FM).into_iter().find(|s| s.key == "tags").unwrap();
        assert_eq!(&FM[tags.start..tags.end], "tags:\n  - a\n\n  - b\n");
        let body = key_spans(FM)
            .into_iter()
            .find(|s| s.key == "body_like")
            .unwrap();
        assert_eq!(
            &FM[body.start..body.end],
            "body_like: |\n  line one\n\n  line two\n"
        );
    }

    #[test]
    fn set_rewrites_one_line_and_keeps_comment() {
        let out = apply(FM, &[FieldEdit::Set("priority".into(), json!(0))], "\n");
        assert_eq!(
            out,
            FM.replace(
                "priority: 1              # 0",
                "priority: 0              # 0"
            )
        );
    }

    #[test]
    fn set_replaces_block_value() {
        let out = apply(
            FM,
            &[FieldEdit::Set("tags".into(), json!(["a", "b", "c"]))],
            "\n",
        );
        assert_eq!(
            out,
            FM.replace("tags:\n  - a\n\n  - b\n", "tags: [a, b, c]\n")
        );
    }

    #[test]
    fn set_new_key_appends_and_unset_removes() {
        let out = apply(
            FM,
            &[FieldEdit::Set("claimed_by".into(), json!("coder-1"))],
            "\n",
        );
        assert_eq!(out, format!("{FM}claimed_by: coder-1\n"));
        let out = apply(
            &out,
            &[
                FieldEdit::Unset("claimed_by".into()),
                FieldEdit::Unset("title".into()),
            ],
            "\n",
        );
        assert_eq!(out, FM.replace("title: \"Quoted: title\"\n", ""));
    }

    #[test]
    fn quoted_key_keeps_its_spelling() {
        let out = apply(FM, &[FieldEdit::Set("quoted key".into(), json!("w"))], "\n");
        assert_eq!(out, FM.replace("'quoted key': v", "'quoted key': w"));
    }

    #[test]
    fn crlf_is_kept() {
        let fm = "id: a\r\nstatus: pending\r\n";
        let out = apply(
            fm,
            &[
                FieldEdit::Set("status".into(), json!("claimed")),
                FieldEdit::Set("rev".into(), json!(2)),
            ],
            "\r\n",
        );
        assert_eq!(out, "id: a\r\nstatus: claimed\r\nrev: 2\r\n");
    }

    #[test]
    fn comment_detection() {
        assert_eq!(trailing_comment(" 1   # c"), Some("   # c"));
        assert_eq!(trailing_comment(" \"a # b\""), None);
        assert_eq!(trailing_comment(" 'it''s # x' # y"), Some(" # y"));
        assert_eq!(trailing_comment(" [a, '#b'] # z"), Some(" # z"));
        assert_eq!(trailing_comment(" a#b"), None);
    }

    fn plain_value() -> impl Strategy<Value = Value> {
        prop_oneof![
            "[a-z][a-z0-9 -]{0,10}".prop_map(Value::from),
            any::<i32>().prop_map(Value::from),
            any::<bool>().prop_map(Value::from),
            "\\PC{0,12}".prop_map(Value::from),
            proptest::collection::vec("[a-z0-9:# ,'\"]{0,6}", 0..4).prop_map(|v| json!(v)),
        ]
    }

    proptest! {
        /// An edit changes no line but the edited field's, and the edited field reads back
        /// as the value that was set.
        #[test]
        fn edit_touches_only_the_edited_field(
            keys in proptest::collection::btree_set("[a-z]{1,6}", 1..6),
            values in proptest::collection::vec(plain_value(), 6),
            pick in 0usize..6,
            new_value in plain_value(),
            crlf in any::<bool>(),
        ) {
            let eol = if crlf { "\r\n" } else { "\n" };
            let keys: Vec<String> = keys.into_iter().collect();
            let mut fm = String::new();
            for (k, v) in keys.iter().zip(&values) {
                fm.push_str(&format!("{k}: {}{eol}", yaml::render_inline(v)));
                fm.push_str(&format!("# after {k}{eol}"));
            }
            let target = &keys[pick % keys.len()];
            let out = apply(&fm, &[FieldEdit::Set(target.clone(), new_value.clone())], eol);
            let before: Vec<&str> = fm.split_inclusive('\n').collect();
            let after: Vec<&str> = out.split_inclusive('\n').collect();
            prop_assert_eq!(before.len(), after.len());
            for (b, a) in before.iter().zip(&after) {
                if !b.starts_with(&format!("{target}:")) {
                    prop_assert_eq!(b, a);
                }
            }
            let parsed = yaml::parse_mapping(&out, yaml::YamlLimits::default()).unwrap();
            prop_assert_eq!(&parsed[target.as_str()], &new_value);
            for (k, v) in keys.iter().zip(&values) {
                if k != target {
                    prop_assert_eq!(&parsed[k.as_str()], v);
                }
            }
        }
    }
}
