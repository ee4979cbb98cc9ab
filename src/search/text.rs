//! How text becomes terms: words by Unicode's rules (UAX #29), lowercased, then their
//! English stems (Snowball), so that `timeouts` finds `timeout`. The same analysis runs
//! on documents when they are indexed and on queries, and again on the lines of a hit to
//! find its snippets.

use std::collections::HashSet;
use std::sync::OnceLock;

use unicode_segmentation::UnicodeSegmentation;

/// A word longer than this (in bytes) is no term: hashes, base64, minified code.
const MAX_TERM: usize = 64;

/// How many lines a hit shows at most, and how long each may be (in characters).
pub const SNIPPETS: usize = 3;
const SNIPPET_CHARS: usize = 200;

fn stemmer() -> &'static rust_stemmers::Stemmer {
    static STEMMER: OnceLock<rust_stemmers::Stemmer> = OnceLock::new();
    STEMMER.get_or_init(|| rust_stemmers::Stemmer::create(rust_stemmers::Algorithm::English))
}

/// The term a word stands for, or None for a word too long to be one.
pub fn term(word: &str) -> Option<String> {
    if word.len() > MAX_TERM {
        return None;
    }
    let lower = word.to_lowercase();
    Some(stemmer().stem(&lower).into_owned())
}

/// The terms of a text, in order.
pub fn terms(text: &str) -> Vec<String> {
    text.unicode_words().filter_map(term).collect()
}

/// The words of a query text (a bare word may hold several: `lock-timeout`), each with
/// its term.
pub fn words(text: &str) -> Vec<(String, String)> {
    text.unicode_words()
        .filter_map(|w| term(w).map(|t| (w.to_string(), t)))
        .collect()
}

/// English words so common that sharing them says nothing (compared as terms).
const STOPWORDS: &[&str] = &[
    "a", "about", "after", "all", "an", "and", "are", "as", "at", "be", "been", "but", "by", "can",
    "do", "does", "for", "from", "has", "have", "if", "in", "into", "is", "it", "its", "no", "not",
    "of", "on", "or", "so", "than", "that", "the", "then", "there", "this", "to", "too", "up",
    "was", "we", "were", "what", "when", "where", "which", "while", "with",
];

/// Is `term` one of the [`STOPWORDS`]' terms?
pub fn is_stopword(term: &str) -> bool {
    static TERMS: OnceLock<HashSet<String>> = OnceLock::new();
    TERMS
        .get_or_init(|| STOPWORDS.iter().filter_map(|w| self::term(w)).collect())
        .contains(term)
}

/// Does `seq` hold `phrase` as consecutive terms?
pub fn holds_phrase(seq: &[String], phrase: &[String]) -> bool {
    !phrase.is_empty() && seq.windows(phrase.len()).any(|w| w == phrase)
}

/// A line of a hit that holds one of the terms looked for.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Snippet {
    /// The line's number in the file (1-based).
    pub line: usize,
    /// The line, cut to about 200 characters around the first word found.
    pub text: String,
}

/// Up to [`SNIPPETS`] lines of `text` holding one of `wanted`; `first_line` is the number
/// of the text's first line in its file.
pub fn snippets(text: &str, first_line: usize, wanted: &HashSet<String>) -> Vec<Snippet> {
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let hit = line
            .unicode_word_indices()
            .find(|(_, w)| term(w).is_some_and(|t| wanted.contains(&t)));
        if let Some((at, _)) = hit {
            out.push(Snippet {
                line: first_line + i,
                text: cut(line, at),
            });
            if out.len() == SNIPPETS {
                break;
            }
        }
    }
    out
}

/// A line cut to [`SNIPPET_CHARS`] characters, keeping the byte offset `at` in view.
fn cut(line: &str, at: usize) -> String {
    let line = line.trim_end();
    if line.chars().count() <= SNIPPET_CHARS {
        return line.trim_start().to_string();
    }
    let before = line[..at].chars().count();
    let start = before.saturating_sub(SNIPPET_CHARS / 4);
    let mut s: String = line.chars().skip(start).take(SNIPPET_CHARS).collect();
    if start > 0 {
        s.insert(0, '…');
    }
    if start + SNIPPET_CHARS < line.chars().count() {
        s.push('…');
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_are_lowercased_and_stemmed() {
        assert_eq!(
            terms("Lock TIMEOUTS, locking!"),
            ["lock", "timeout", "lock"]
        );
        assert_eq!(terms("naïve Ünïcode"), ["naïv", "ünïcode"]);
        assert!(terms(&"x".repeat(65)).is_empty());
    }

    #[test]
    fn stopwords_are_compared_as_terms() {
        assert!(is_stopword(&term("The").unwrap()) && is_stopword(&term("is").unwrap()));
        assert!(!is_stopword(&term("timeout").unwrap()));
    }

    #[test]
    fn phrases_are_consecutive_terms() {
        let seq = terms("the lock timed out after a timeout");
        assert!(holds_phrase(&seq, &terms("lock timed")));
        assert!(!holds_phrase(&seq, &terms("timed lock")));
        assert!(!holds_phrase(&seq, &[]));
    }

    #[test]
    fn snippets_name_their_lines_and_cut_long_ones() {
        let wanted: HashSet<String> = terms("timeout").into_iter().collect();
        let long = format!("{} a timeout {}", "x ".repeat(200), "y ".repeat(200));
        let text = format!("nothing\nthe Timeouts here\n{long}\n");
        let s = snippets(&text, 5, &wanted);
        assert_eq!(
            s[0],
            Snippet {
                line: 6,
                text: "the Timeouts here".into()
            }
        );
        assert_eq!(s[1].line, 7);
        assert!(s[1].text.contains("timeout") && s[1].text.starts_with('…'));
        assert!(s[1].text.chars().count() <= SNIPPET_CHARS + 2);
    }
}
