//! Splitting a document into frontmatter and body, byte-exactly.
//!
//! We split the text ourselves instead of using a frontmatter crate so that joining the
//! parts gives back the input exactly: CRLF line ends, leading blank lines in the body, a
//! `---` rule inside the body and a missing final newline all survive a round-trip.

/// A document cut into four pieces whose concatenation is the original text.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Split<'a> {
    /// The opening `---` line with its line ending.
    pub open: &'a str,
    /// Every line between the delimiters, line endings included.
    pub frontmatter: &'a str,
    /// The closing `---` line with its line ending, if it has one.
    pub close: &'a str,
    /// Everything after the closing line, untouched.
    pub body: &'a str,
}

impl Split<'_> {
    /// Joins the pieces again; `split(t).unwrap().join() == t` for every `t` that splits.
    #[cfg(test)]
    pub fn join(&self) -> String {
        [self.open, self.frontmatter, self.close, self.body].concat()
    }

    /// Byte offset of the first frontmatter line in the original text.
    pub fn frontmatter_start(&self) -> usize {
        self.open.len()
    }
}

/// Why a text has no frontmatter we can use.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SplitError {
    /// The first line is not exactly `---`.
    NoOpening,
    /// No line after the first is exactly `---`.
    NotClosed,
}

/// Is this line (without its `\n`) a delimiter? A trailing `\r` is tolerated.
fn is_delimiter(line: &str) -> bool {
    line == "---" || line == "---\r"
}

/// Splits `text` at its frontmatter delimiters.
pub fn split(text: &str) -> Result<Split<'_>, SplitError> {
    let first_end = match super::fast::byte_at(text, b'\n') {
        Some(i) => i,
        None => return Err(SplitError::NoOpening),
    };
    if !is_delimiter(&text[..first_end]) {
        return Err(SplitError::NoOpening);
    }
    let open = &text[..first_end + 1];
    let mut pos = open.len();
    while pos < text.len() {
        let rest = &text[pos..];
        let (line, next) = match super::fast::byte_at(rest, b'\n') {
            Some(i) => (&rest[..i], pos + i + 1),
            None => (rest, text.len()),
        };
        if is_delimiter(line) {
            return Ok(Split {
                open,
                frontmatter: &text[open.len()..pos],
                close: &text[pos..next],
                body: &text[next..],
            });
        }
        pos = next;
    }
    Err(SplitError::NotClosed)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn splits_simple_document() {
        let s = split("---\nid: a\n---\nbody\n").unwrap();
        assert_eq!(s.open, "---\n");
        assert_eq!(s.frontmatter, "id: a\n");
        assert_eq!(s.close, "---\n");
        assert_eq!(s.body, "body\n");
    }

    #[test]
    fn keeps_crlf_and_rule_in_body() {
        let t = "---\r\nid: a\r\n---\r\n\r\n\r\ntext\r\n---\r\nmore";
        let s = split(t).unwrap();
        assert_eq!(s.frontmatter, "id: a\r\n");
        assert_eq!(s.close, "---\r\n");
        assert_eq!(s.body, "\r\n\r\ntext\r\n---\r\nmore");
        assert_eq!(s.join(), t);
    }

    #[test]
    fn closing_line_without_newline() {
        let s = split("---\nid: a\n---").unwrap();
        assert_eq!(s.close, "---");
        assert_eq!(s.body, "");
    }

    #[test]
    fn empty_frontmatter() {
        let s = split("---\n---\nx").unwrap();
        assert_eq!(s.frontmatter, "");
        assert_eq!(s.body, "x");
    }

    #[test]
    fn refuses_missing_delimiters() {
        assert_eq!(split("id: a\n"), Err(SplitError::NoOpening));
        assert_eq!(split("--- \nid: a\n---\n"), Err(SplitError::NoOpening));
        assert_eq!(split("---\nid: a\n----\n"), Err(SplitError::NotClosed));
        assert_eq!(split("---"), Err(SplitError::NoOpening));
    }

    /// Text built from the pieces that matter to the splitter, so that delimiters and
    /// line endings occur often.
    fn doc_like() -> impl Strategy<Value = String> {
        let piece = prop_oneof![
            Just("---".to_string()),
            Just("\n".to_string()),
            Just("\r\n".to_string()),
            Just("\r".to_string()),
            Just("-".to_string()),
            Just(" ".to_string()),
            "[a-z: #\"'\\[\\]{}é]{0,6}",
        ];
        proptest::collection::vec(piece, 0..40).prop_map(|v| v.concat())
    }

    proptest! {
        #[test]
        fn split_then_join_is_identity(text in doc_like()) {
            if let Ok(s) = split(&text) {
                prop_assert_eq!(s.join(), text);
            }
        }

        #[test]
        fn split_then_join_is_identity_on_any_string(text in any::<String>()) {
            if let Ok(s) = split(&text) {
                prop_assert_eq!(s.join(), text);
            }
        }

        #[test]
        fn wrapped_frontmatter_always_splits(fm in "([a-z]{1,5}: [a-z0-9 ]{0,8}\n){0,6}", body in any::<String>()) {
            let text = format!("---\n{fm}---\n{body}");
            let s = split(&text).unwrap();
            prop_assert_eq!(s.frontmatter, fm.as_str());
            prop_assert_eq!(s.body, body.as_str());
        }
    }
}
