//! The one query language (DESIGN §7), shared by `list`, `ready`, `claim --next`,
//! knowledge sources' `when:` and `completion_requires`.
//!
//! Whitespace-separated terms, all of which must hold: `field=v` (lists: contains; `a,b`:
//! any of), `field!=v`, `< <= > >=` (numbers, RFC 3339 times, relative times like `-2h`),
//! `has:field`, `no:field`, `tag:x`, `region:tasks`, and bare words, matched
//! case-insensitively against the title and body.

use chrono::{DateTime, Utc};
use serde_json::Value;

use crate::doc::{Document, Region};
use crate::error::{Error, Result};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
}

#[derive(Clone, Debug, PartialEq)]
pub enum Term {
    Compare {
        field: String,
        op: Op,
        values: Vec<String>,
    },
    Has(String),
    No(String),
    Tag(String),
    Region(Region),
    Text(String),
}

#[derive(Clone, Debug, Default, PartialEq)]
pub struct Query {
    pub terms: Vec<Term>,
}

fn is_field_name(s: &str) -> bool {
    let mut chars = s.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))
}

fn bad(term: &str, why: &str) -> Error {
    Error::usage(format!(
        "malformed query term '{term}': {why}\nhint: terms look like status=pending, priority<=1, updated_at<-2h, has:claimed_by, tag:parser, region:tasks, or a bare word"
    ))
}

impl Query {
    /// Parses query arguments; each argument may hold several whitespace-separated terms.
    pub fn parse<S: AsRef<str>>(args: &[S]) -> Result<Query> {
        let mut terms = Vec::new();
        for arg in args {
            for word in arg.as_ref().split_whitespace() {
                terms.push(parse_term(word)?);
            }
        }
        Ok(Query { terms })
    }

    pub fn is_empty(&self) -> bool {
        self.terms.is_empty()
    }

    /// The regions named by `region:` terms, if any.
    pub fn regions(&self) -> Vec<Region> {
        self.terms
            .iter()
            .filter_map(|t| {
                if let Term::Region(r) = t {
                    Some(*r)
                } else {
                    None
                }
            })
            .collect()
    }

    pub fn matches(&self, doc: &Document, now: DateTime<Utc>) -> bool {
        self.matches_in(doc, Some(doc.region), now)
    }

    /// Like [`Query::matches`] for a file that may live outside the three document
    /// regions (a solution file, a control file): `region:` terms hold only for `region`.
    pub fn matches_in(&self, doc: &Document, region: Option<Region>, now: DateTime<Utc>) -> bool {
        self.terms.iter().all(|t| term_matches(t, doc, region, now))
    }
}

fn parse_term(word: &str) -> Result<Term> {
    if let Some(pos) = word.find(['=', '!', '<', '>']) {
        let field = &word[..pos];
        let rest = &word[pos..];
        let (op, value) = if let Some(v) = rest.strip_prefix("!=") {
            (Op::Ne, v)
        } else if let Some(v) = rest.strip_prefix("<=") {
            (Op::Le, v)
        } else if let Some(v) = rest.strip_prefix(">=") {
            (Op::Ge, v)
        } else if let Some(v) = rest.strip_prefix('=') {
            (Op::Eq, v)
        } else if let Some(v) = rest.strip_prefix('<') {
            (Op::Lt, v)
        } else if let Some(v) = rest.strip_prefix('>') {
            (Op::Gt, v)
        } else {
            return Err(bad(
                word,
                "expected one of = != < <= > >= after the field name",
            ));
        };
        if !is_field_name(field) {
            return Err(bad(word, "expected a field name before the operator"));
        }
        if value.is_empty() {
            return Err(bad(word, "expected a value after the operator"));
        }
        let values: Vec<String> = value.split(',').map(str::to_string).collect();
        if values.iter().any(String::is_empty) {
            return Err(bad(word, "empty value in a comma-separated list"));
        }
        if !matches!(op, Op::Eq | Op::Ne) && values.len() > 1 {
            return Err(bad(word, "a comparison takes one value"));
        }
        // `ordered` compares only numbers with numbers and times with times, so any other
        // value could never hold: say so now rather than match nothing, silently.
        if !matches!(op, Op::Eq | Op::Ne) && !comparable(&values[0]) {
            return Err(bad(
                word,
                "a comparison takes a number, a time (2026-01-02, 2026-01-02T10:00:00Z) or an age (-2h)",
            ));
        }
        return Ok(Term::Compare {
            field: field.to_string(),
            op,
            values,
        });
    }
    if let Some((prefix, arg)) = word.split_once(':') {
        let need_field = |arg: &str| {
            if is_field_name(arg) {
                Ok(arg.to_string())
            } else {
                Err(bad(word, "expected a field name after the colon"))
            }
        };
        return match prefix {
            "has" => Ok(Term::Has(need_field(arg)?)),
            "no" => Ok(Term::No(need_field(arg)?)),
            "tag" if !arg.is_empty() => Ok(Term::Tag(arg.to_string())),
            "tag" => Err(bad(word, "expected a tag after the colon")),
            "region" => Region::parse(arg)
                .map(Term::Region)
                .ok_or_else(|| bad(word, "regions are tasks, observations, questions")),
            _ => Err(bad(
                word,
                "unknown filter; known ones are has:, no:, tag:, region:",
            )),
        };
    }
    Ok(Term::Text(word.to_lowercase()))
}

/// Can `value` be one side of `ordered`: a number, or a time absolute or relative?
fn comparable(value: &str) -> bool {
    value.parse::<f64>().is_ok_and(|n| !n.is_nan())
        || crate::time::parse_time(value, chrono::Utc::now()).is_some()
}

/// A field value as the strings it matches: a scalar is one, a list is its items.
fn scalars(v: &Value) -> Vec<String> {
    match v {
        Value::String(s) => vec![s.clone()],
        Value::Number(n) => vec![n.to_string()],
        Value::Bool(b) => vec![b.to_string()],
        Value::Null => vec![],
        Value::Array(items) => items.iter().flat_map(scalars).collect(),
        Value::Object(_) => vec![],
    }
}

/// Does a present, non-null, non-empty value exist for `field`?
fn present(doc: &Document, field: &str) -> bool {
    match doc.get(field) {
        None | Some(Value::Null) => false,
        Some(Value::String(s)) => !s.is_empty(),
        Some(Value::Array(a)) => !a.is_empty(),
        Some(_) => true,
    }
}

fn term_matches(term: &Term, doc: &Document, region: Option<Region>, now: DateTime<Utc>) -> bool {
    match term {
        Term::Has(f) => present(doc, f),
        Term::No(f) => !present(doc, f),
        Term::Tag(t) => doc.list("tags").iter().any(|x| x == t),
        Term::Region(r) => region == Some(*r),
        Term::Text(w) => contains_ci(doc.title(), w) || contains_ci(doc.body(), w),
        Term::Compare { field, op, values } => {
            let have = match field.as_str() {
                "region" => region.map(|r| r.dir().to_string()).into_iter().collect(),
                _ => doc.get(field).map(scalars).unwrap_or_default(),
            };
            match op {
                Op::Eq => have.iter().any(|h| values.contains(h)),
                Op::Ne => !have.iter().any(|h| values.contains(h)),
                _ => have.iter().any(|h| ordered(h, *op, &values[0], now)),
            }
        }
    }
}

fn contains_ci(haystack: &str, needle_lower: &str) -> bool {
    if haystack.is_ascii() && needle_lower.is_ascii() {
        let h = haystack.as_bytes();
        let n = needle_lower.as_bytes();
        return n.is_empty() || h.windows(n.len()).any(|w| w.eq_ignore_ascii_case(n));
    }
    haystack.to_lowercase().contains(needle_lower)
}

/// Compares as numbers when both sides are numbers, as times when both are times
/// (the query side may be relative, like `-2h`); otherwise the term does not hold.
fn ordered(have: &str, op: Op, want: &str, now: DateTime<Utc>) -> bool {
    use std::cmp::Ordering;
    let ord = if let (Ok(a), Ok(b)) = (have.parse::<f64>(), want.parse::<f64>()) {
        a.partial_cmp(&b)
    } else if let (Some(a), Some(b)) = (
        crate::time::parse_time(have, now),
        crate::time::parse_time(want, now),
    ) {
        Some(a.cmp(&b))
    } else {
        None
    };
    match (ord, op) {
        (Some(o), Op::Lt) => o == Ordering::Less,
        (Some(o), Op::Le) => o != Ordering::Greater,
        (Some(o), Op::Gt) => o == Ordering::Greater,
        (Some(o), Op::Ge) => o != Ordering::Less,
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::yaml::YamlLimits;

    fn doc(fm: &str, body: &str) -> Document {
        Document::parse(
            Region::Tasks,
            "t",
            format!("---\n{fm}---\n{body}"),
            YamlLimits::default(),
        )
        .unwrap()
    }

    fn q(s: &str) -> Query {
        Query::parse(&[s]).unwrap()
    }

    #[test]
    fn terms() {
        let now = crate::time::parse_time("2026-11-22T12:00:00Z", Utc::now()).unwrap();
        let d = doc(
            "id: t\nstatus: pending\npriority: 1\ntags: [parser, cli]\nupdated_at: 2026-11-22T09:00:00Z\nempty: []\n",
            "Fix the Frontmatter splitter\n",
        );
        for (query, expect) in [
            ("status=pending", true),
            ("status=claimed,pending", true),
            ("status!=pending", false),
            ("status!=done", true),
            ("priority<=1 priority>0", true),
            ("priority<1", false),
            ("tags=cli", true),
            ("tag:parser", true),
            ("tag:yaml", false),
            ("updated_at<-2h", true),
            ("updated_at<-4h", false),
            ("updated_at>=2026-11-22", true),
            ("has:tags no:claimed_by", true),
            ("has:empty", false),
            ("no:empty", true),
            ("frontmatter SPLITTER", true),
            ("region:tasks", true),
            ("region:questions", false),
            ("missing=x", false),
            ("missing!=x", true),
            ("status<3", false),
        ] {
            assert_eq!(q(query).matches(&d, now), expect, "{query}");
        }
    }

    #[test]
    fn malformed_terms_point_at_the_term() {
        for bad in [
            "=x",
            "status=",
            "a=b,,c",
            "priority<1,2",
            "priority<abc",
            "updated_at>=yesterday",
            "estimate>NaN",
            "what:ever",
            "has:",
            "region:nowhere",
            "9x=1",
        ] {
            let e = Query::parse(&[bad]).unwrap_err();
            assert!(e.to_string().contains(&format!("'{bad}'")), "{bad}: {e}");
            assert_eq!(e.exit_code(), 2);
        }
    }
}
