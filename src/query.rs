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
use crate::index::files::Head;

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
    /// `archive` (or `region:archive`): the document lives under `archive/`.
    Archived,
    /// A bare word: text in the title or body, or the document's id. Lowercase.
    Text(String),
    /// A double-quoted phrase (`"fix the parser"`): text in the title or body. Lowercase.
    Phrase(String),
}

#[derive(Clone, Debug, Default, PartialEq)]
pub struct Query {
    pub terms: Vec<Term>,
}

/// A name a field may have: a letter or `_`, then letters, digits, `_`, `-` or `.`.
pub fn is_field_name(s: &str) -> bool {
    let mut chars = s.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))
}

fn bad(term: &str, why: &str) -> Error {
    Error::usage(format!(
        "malformed query term '{term}': {why}\nhint: terms look like status=pending, priority<=1, updated_at<-2h, has:claimed_by, tag:parser, tasks, \"a phrase\", or a bare word"
    ))
}

/// One whitespace-separated word of a query, with double quotes taken out: `"a b"` is one
/// word (a phrase), and so is `title="a b"` (its value is quoted).
struct Word {
    text: String,
    /// The whole word was quoted: a phrase, never a filter.
    phrase: bool,
    /// Some part of it was quoted (a value with spaces or commas): taken as one value.
    quoted: bool,
}

fn words(arg: &str) -> Result<Vec<Word>> {
    let mut out = Vec::new();
    let mut chars = arg.chars().peekable();
    loop {
        while chars.next_if(|c| c.is_whitespace()).is_some() {}
        if chars.peek().is_none() {
            return Ok(out);
        }
        let mut w = Word {
            text: String::new(),
            phrase: chars.peek() == Some(&'"'),
            quoted: false,
        };
        let mut in_quote = false;
        while let Some(c) = chars.peek().copied() {
            if c == '"' {
                in_quote = !in_quote;
                w.quoted = true;
                chars.next();
                // A phrase ends at its closing quote.
                if !in_quote && w.phrase {
                    break;
                }
                continue;
            }
            if c.is_whitespace() && !in_quote {
                break;
            }
            w.text.push(c);
            chars.next();
        }
        if in_quote {
            return Err(bad(arg.trim(), "a double quote is not closed"));
        }
        if w.phrase && chars.peek().is_some_and(|c| !c.is_whitespace()) {
            return Err(bad(
                arg.trim(),
                "a quoted phrase must stand alone (quote a value after its operator: title=\"a b\")",
            ));
        }
        out.push(w);
    }
}

impl Query {
    /// Parses query arguments; each argument may hold several whitespace-separated terms.
    pub fn parse<S: AsRef<str>>(args: &[S]) -> Result<Query> {
        let mut terms = Vec::new();
        for arg in args {
            for word in words(arg.as_ref())? {
                terms.push(if word.phrase {
                    if word.text.trim().is_empty() {
                        return Err(bad("\"\"", "an empty phrase matches everything"));
                    }
                    Term::Phrase(word.text.to_lowercase())
                } else {
                    parse_term(&word.text, word.quoted)?
                });
            }
        }
        Ok(Query { terms })
    }

    pub fn is_empty(&self) -> bool {
        self.terms.is_empty()
    }

    /// The document fields the terms name (`field=v`, `has:field`, `no:field`; not the
    /// `region` pseudo-field), each with its term as written, for messages.
    pub fn fields(&self) -> Vec<(&str, String)> {
        self.terms
            .iter()
            .filter_map(|t| match t {
                Term::Compare { field, op, values } if field != "region" => {
                    let op = match op {
                        Op::Eq => "=",
                        Op::Ne => "!=",
                        Op::Lt => "<",
                        Op::Le => "<=",
                        Op::Gt => ">",
                        Op::Ge => ">=",
                    };
                    Some((field.as_str(), format!("{field}{op}{}", values.join(","))))
                }
                Term::Has(f) => Some((f.as_str(), format!("has:{f}"))),
                Term::No(f) => Some((f.as_str(), format!("no:{f}"))),
                _ => None,
            })
            .collect()
    }

    /// The regions named by region words or `region:` terms, if any (a document must be
    /// in one of them).
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

    /// Does the query ask for archived documents (`archive`, `region:archive`)?
    pub fn archived(&self) -> bool {
        self.terms.contains(&Term::Archived)
    }

    pub fn matches(&self, doc: &Document, now: DateTime<Utc>) -> bool {
        self.matches_in(doc, Some(doc.region), now)
    }

    /// Like [`Query::matches`] for a file that may live outside the three document
    /// regions (a solution file, a control file): region terms hold only for `region`.
    /// Several regions are alternatives (`tasks observations`); every other term must hold.
    pub fn matches_in(&self, doc: &Document, region: Option<Region>, now: DateTime<Utc>) -> bool {
        let regions = self.regions();
        (regions.is_empty() || region.is_some_and(|r| regions.contains(&r)))
            && self.terms.iter().all(|t| term_matches(t, doc, region, now))
    }
}

impl Query {
    /// May a document whose frontmatter the fast parser reads (see `doc::fast`) match?
    /// Judged from the lines of the fields its terms name, each read alone as the fast
    /// parser reads it: false only when a field term surely fails (a `status=`, a `<=`,
    /// `has:`, `no:`, `tag:`); the other terms are left to [`Query::matches`]. A reader
    /// passes over such a document without parsing it whole.
    pub fn may_match_plain(&self, frontmatter: &str, now: DateTime<Utc>) -> bool {
        let field = |f: &str| crate::doc::fast::field(frontmatter, f);
        self.terms.iter().all(|t| match t {
            Term::Compare {
                field: f,
                op,
                values,
            } if f != "region" => field(f).is_none_or(|v| {
                let have = v.as_ref().map(scalars).unwrap_or_default();
                compare(&have, *op, values, now)
            }),
            Term::Has(f) => field(f).is_none_or(|v| present_value(v.as_ref())),
            Term::No(f) => field(f).is_none_or(|v| !present_value(v.as_ref())),
            Term::Tag(tag) => field("tags").is_none_or(|v| has_tag(v.as_ref(), tag)),
            _ => true,
        })
    }

    /// May a document whose `status` field is the string `status` match? (None: it has
    /// none, or one that is not a string, about which nothing is said.) False only when a
    /// term on `status` surely fails, judged as [`Query::matches`] judges it; the other
    /// terms are left to it. A reader passes over such a document by what the index keeps
    /// of it, without looking at its text.
    pub fn may_match_status(&self, status: Option<&str>, now: DateTime<Utc>) -> bool {
        let Some(status) = status else {
            return true;
        };
        self.terms.iter().all(|t| match t {
            Term::Compare { field, op, values } if field == "status" => match op {
                Op::Eq => values.iter().any(|v| v == status),
                Op::Ne => !values.iter().any(|v| v == status),
                _ => ordered(status, *op, &values[0], now),
            },
            _ => true,
        })
    }

    /// Does a task whose head the read index keeps is `head` match? `Some` when the head
    /// decides every term (judged as [`Query::matches`] judges the task it was taken
    /// from), or rules the task out by one; None when a term needs the task itself (its
    /// body, its tags, a field the head lacks or holds as something other than a string).
    /// Only for the heads of live tasks: their region is `tasks`, and they are not archived.
    pub fn decide_head(&self, head: &Head<'_>, now: DateTime<Utc>) -> Option<bool> {
        let regions = self.regions();
        if !regions.is_empty() && !regions.contains(&Region::Tasks) {
            return Some(false);
        }
        let mut decided = true;
        for t in &self.terms {
            match head_term(t, head, now) {
                Some(false) => return Some(false),
                Some(true) => {}
                None => decided = false,
            }
        }
        decided.then_some(true)
    }

    /// Are all the terms of a kind a task's head nearly always decides (its status, its
    /// priority as a number, its region), so that a read by the heads alone leaves few
    /// tasks to parse? (Whatever it leaves is read and judged whole.)
    pub fn heads_suffice(&self) -> bool {
        self.terms.iter().all(|t| match t {
            Term::Region(_) | Term::Archived => true,
            Term::Compare { field, .. } => {
                matches!(field.as_str(), "status" | "priority" | "region")
            }
            _ => false,
        })
    }

    /// Words a document's text must hold for the query to match it, when its frontmatter
    /// is in the fast parser's plain subset (where every scalar is written as it reads):
    /// each inner list is a set of alternatives, all ASCII and lowercase, to be looked for
    /// case-insensitively. A reader may skip a plain, ASCII document that lacks one of
    /// them without parsing it. Terms that give no such word (comparisons other than `=`,
    /// `no:`, non-ASCII words) give none.
    pub fn needles(&self) -> Vec<Vec<String>> {
        let ascii = |v: &[String]| {
            v.iter()
                .all(|s| s.is_ascii() && !s.is_empty())
                .then(|| v.iter().map(|s| s.to_ascii_lowercase()).collect::<Vec<_>>())
        };
        self.terms
            .iter()
            .filter_map(|t| match t {
                Term::Compare {
                    field,
                    op: Op::Eq,
                    values,
                } if field != "region" => ascii(values),
                Term::Has(f) => ascii(std::slice::from_ref(f)),
                Term::Tag(tag) => ascii(std::slice::from_ref(tag)),
                Term::Text(w) | Term::Phrase(w) => ascii(std::slice::from_ref(w)),
                _ => None,
            })
            .collect()
    }
}

/// The strings `field` matches as [`scalars`] gives them, where a task's head says them
/// exactly; None where it does not know.
fn head_scalars(head: &Head<'_>, field: &str) -> Option<Vec<String>> {
    let known = |v: &Option<std::borrow::Cow<'_, str>>| v.as_deref().map(|s| vec![s.to_string()]);
    match field {
        "region" => Some(vec![Region::Tasks.dir().to_string()]),
        // Kept when the field is a string.
        "status" => known(&head.status),
        "claimed_by" => known(&head.claimed_by),
        "updated_at" => known(&head.updated_at),
        "parent" => known(&head.parent),
        // Empty for a title that is no string, or none.
        "title" => (!head.title.is_empty()).then(|| vec![head.title.to_string()]),
        // The head keeps the text of `priority`, else of `severity`. Text that reads as the
        // number the task ranks by is the priority's: a severity ranks only by its words.
        "priority" => head
            .pri
            .as_deref()
            .filter(|p| head.priority != i64::MAX && *p == head.priority.to_string())
            .map(|p| vec![p.to_string()]),
        _ => None,
    }
}

/// One term, judged from a task's head (see [`Query::decide_head`]).
fn head_term(term: &Term, head: &Head<'_>, now: DateTime<Utc>) -> Option<bool> {
    match term {
        Term::Region(_) => Some(true),
        Term::Archived => Some(false),
        // The body may hold what the id and title do not.
        Term::Text(w) => (*head.id == **w || contains_ci(&head.title, w)).then_some(true),
        Term::Phrase(p) => contains_ci(&head.title, p).then_some(true),
        Term::Tag(_) => None,
        Term::Has(f) | Term::No(f) => {
            let present = match f.as_str() {
                // Lists that hold a string or a number are present.
                "depends_on" if !head.depends_on.is_empty() => true,
                "needs" if !head.needs.is_empty() => true,
                // `region` is a field like any other here, not the document's region.
                "region" => return None,
                _ => !head_scalars(head, f)?[0].is_empty(),
            };
            Some(present == matches!(term, Term::Has(_)))
        }
        Term::Compare { field, op, values } => {
            Some(compare(&head_scalars(head, field)?, *op, values, now))
        }
    }
}

/// A bare word that names a region (`tasks`, `obs`, …) or the archive selects documents
/// rather than searching text; quote it (`"tasks"`) to search for the word.
fn region_word(word: &str) -> Option<Term> {
    match word {
        "archive" | "archived" => Some(Term::Archived),
        _ => Region::parse(word).map(Term::Region),
    }
}

fn parse_term(word: &str, quoted: bool) -> Result<Term> {
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
        if value.is_empty() && !quoted {
            return Err(bad(word, "expected a value after the operator"));
        }
        if !quoted && value.starts_with(['=', '<', '>']) {
            return Err(bad(
                word,
                "one operator per term: = != < <= > >= (status=pending, not status==pending)",
            ));
        }
        // A quoted value is one value, commas and spaces included.
        let values: Vec<String> = if quoted {
            vec![value.to_string()]
        } else {
            value.split(',').map(str::to_string).collect()
        };
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
            "region" => region_word(arg)
                .ok_or_else(|| bad(word, "regions are tasks, observations, questions, archive")),
            _ => Err(bad(
                word,
                "unknown filter; known ones are has:, no:, tag:, region:",
            )),
        };
    }
    if let Some(t) = region_word(word) {
        return Ok(t);
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
    present_value(doc.get(field))
}

fn present_value(v: Option<&Value>) -> bool {
    match v {
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
        Term::Tag(t) => has_tag(doc.get("tags"), t),
        // Regions are alternatives, decided in `matches_in`.
        Term::Region(_) => true,
        Term::Archived => doc.archived,
        Term::Text(w) => doc.id() == w || contains_ci(doc.title(), w) || contains_ci(doc.body(), w),
        Term::Phrase(p) => contains_ci(doc.title(), p) || contains_ci(doc.body(), p),
        Term::Compare { field, op, values } => {
            let have = match field.as_str() {
                "region" => region.map(|r| r.dir().to_string()).into_iter().collect(),
                _ => doc.get(field).map(scalars).unwrap_or_default(),
            };
            compare(&have, *op, values, now)
        }
    }
}

/// Does a field's value hold (Eq), lack (Ne) or compare with the query's values?
fn compare(have: &[String], op: Op, values: &[String], now: DateTime<Utc>) -> bool {
    match op {
        Op::Eq => have.iter().any(|h| values.contains(h)),
        Op::Ne => !have.iter().any(|h| values.contains(h)),
        _ => have.iter().any(|h| ordered(h, op, &values[0], now)),
    }
}

/// Is `tag` among a `tags` value's strings (as `Document::list` reads them)?
fn has_tag(tags: Option<&Value>, tag: &str) -> bool {
    crate::doc::list_value(tags).iter().any(|x| x == tag)
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

    #[test]
    fn the_plain_prefilter_never_rules_out_a_match() {
        let fms = [
            "id: t\nstatus: pending\npriority: 1\ntags: [parser, 1]\n",
            "id: t\nstatus: done\npriority: -2\ntags: solo\nowner: [ann, bob]\n",
            "id: t\nstatus: 7\npriority:\ntags: []\nflag: true\n",
            "id: t\nstatus: pending # a comment\nupdated_at: 2026-11-01T10:00:00Z\n",
            "id: t\n# a comment line\nstatus: review\npriority: 3\nflag: null\n",
            "id: t\nstatus: pending\ntitle: b\n",
        ];
        let queries = [
            "status=pending",
            "status!=pending",
            "status=7",
            "priority<=1",
            "priority<1",
            "priority>=0",
            "priority!=1",
            "priority=-2",
            "has:priority",
            "no:priority",
            "has:tags",
            "no:tags",
            "tag:parser",
            "tag:1",
            "tag:solo",
            "owner=bob",
            "flag=true",
            "has:flag",
            "updated_at<-1h",
            "updated_at>2026-12-01T00:00:00Z",
            "title=b",
            "region=tasks",
            "status=pending priority<=1",
            "missing=x",
            "missing!=x",
        ];
        let now = Utc::now();
        let mut ruled_out = 0;
        for fm in fms {
            assert!(crate::doc::fast::parse(fm).is_some(), "plain: {fm}");
            let d = doc(fm, "body\n");
            for q in queries {
                let q = Query::parse(&[q]).unwrap();
                let may = q.may_match_plain(fm, now);
                let does = q.matches(&d, now);
                assert!(may || !does, "{q:?} on {fm:?}: ruled out, yet it matches");
                ruled_out += usize::from(!may);
                // Exact for the field terms: a prefilter that passes everything is useless.
                assert_eq!(may, does, "{q:?} on {fm:?}");
            }
        }
        assert!(ruled_out > 40, "{ruled_out}");
    }

    /// The status prefilter never rules out what matches, and rules out what a `status`
    /// term fails, for any kind of value `status` may hold (the head keeps only strings).
    #[test]
    fn the_status_prefilter_rules_out_only_what_cannot_match() {
        let statuses = [
            "pending",
            "done",
            "\"pending\"",
            "'Pending'",
            "7",
            "[pending, done]",
            "null",
            "2026-11-01T10:00:00Z",
            "",
        ];
        let queries = [
            "status=pending",
            "status!=pending",
            "status=pending,done",
            "status!=done,pending",
            "status=7",
            "status>=3",
            "status<2026-12-01T00:00:00Z",
            "status=pending priority<=1",
            "priority<=1",
            "tag:x",
            "region=tasks",
        ];
        let now = Utc::now();
        let mut ruled_out = 0;
        for status in statuses {
            let fm = format!("id: t\nstatus: {status}\npriority: 1\n");
            let d = doc(&fm, "body\n");
            let head = d.status();
            for q in queries {
                let q = Query::parse(&[q]).unwrap();
                let may = q.may_match_status(head, now);
                let does = q.matches(&d, now);
                assert!(
                    may || !does,
                    "{q:?} on status {status:?}: ruled out, yet it matches"
                );
                ruled_out += usize::from(!may);
                // Exact where the status is a string and the query only speaks of it.
                if head.is_some()
                    && q.terms
                        .iter()
                        .all(|t| matches!(t, Term::Compare { field, .. } if field == "status"))
                {
                    assert_eq!(may, does, "{q:?} on status {status:?}");
                }
            }
        }
        assert!(ruled_out > 15, "{ruled_out}");
    }

    /// What a task's head decides of a query is what the task itself gives, for any kind
    /// of value the fields it keeps may hold; and it decides the common terms.
    #[test]
    fn a_head_decides_only_what_the_task_gives() {
        let fms = [
            "id: t\ntitle: Fix the parser\nstatus: pending\npriority: 1\ntags: [parser]\n",
            "id: t\ntitle: Fix the parser\nstatus: pending\npriority: 3\nclaimed_by: ann\n",
            "id: t\nstatus: pending\npriority: \"1\"\nseverity: high\n",
            "id: t\nstatus: pending\nseverity: high\n",
            "id: t\nstatus: pending\nseverity: 1\n",
            "id: t\nstatus: pending\npriority: [1, 2]\nseverity: high\n",
            "id: t\nstatus: pending\npriority: 1.0\n",
            "id: t\nstatus: pending\npriority: true\n",
            "id: t\nstatus: pending\npriority: 9223372036854775807\n",
            "id: t\nstatus: pending\npriority: null\n",
            "id: t\nstatus: [pending]\n",
            "id: t\nstatus: 7\n",
            "id: t\nstatus: pending\ntitle: 7\nclaimed_by: [ann]\nparent: 3\n",
            "id: t\nstatus: pending\ntitle: \"\"\nclaimed_by: \"\"\nupdated_at: 2026-11-01T10:00:00Z\n",
            "id: t\nstatus: pending\ndepends_on: [a, 1, true]\nneeds: gpu\nregion: x\n",
            "id: t\nstatus: pending\ndepends_on: [true]\nneeds: \"\"\nparent: p\n",
            "id: 5\nstatus: review\npriority: 0\n",
        ];
        let queries = [
            "status=pending",
            "status!=pending",
            "status=pending,review",
            "priority<=1",
            "priority=1",
            "priority!=1",
            "priority>2",
            "has:priority",
            "no:priority",
            "title=\"Fix the parser\"",
            "title=7",
            "has:title",
            "no:title",
            "claimed_by=ann",
            "has:claimed_by",
            "no:claimed_by",
            "parent=p",
            "no:parent",
            "updated_at<-1h",
            "has:depends_on",
            "no:depends_on",
            "depends_on=a",
            "has:needs",
            "no:needs",
            "has:region",
            "region=tasks",
            "region!=tasks",
            "tasks",
            "questions",
            "archive",
            "parser",
            "t",
            "5",
            "\"fix the\"",
            "body",
            "tag:parser",
            "status=pending priority<=1",
            "status=pending tag:parser",
            "status!=pending tag:parser",
        ];
        let now = Utc::now();
        let mut decided = 0;
        for fm in fms {
            let d = doc(fm, "body\n");
            let head = Head::of(&d);
            for q in queries {
                let q = Query::parse(&[q]).unwrap();
                let does = q.matches(&d, now);
                if let Some(said) = q.decide_head(&head, now) {
                    assert_eq!(said, does, "{q:?} on {fm:?}");
                    decided += 1;
                }
            }
        }
        assert!(decided > 200, "{decided}");
        // The common ones, on a plain task.
        let d = doc(fms[0], "body\n");
        for q in [
            "status=pending priority<=1",
            "parser",
            "region=tasks",
            "has:title",
        ] {
            let q = Query::parse(&[q]).unwrap();
            assert!(q.decide_head(&Head::of(&d), now).is_some(), "{q:?}");
        }
    }

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
            ("questions", false),
            ("tasks", true),
            ("questions tasks", true),
            ("observations questions", false),
            ("\"the frontmatter\"", true),
            ("\"frontmatter the\"", false),
            ("title=\"Fix the Frontmatter splitter\"", false),
            ("archive", false),
            ("missing=x", false),
            ("missing!=x", true),
            ("status<3", false),
        ] {
            assert_eq!(q(query).matches(&d, now), expect, "{query}");
        }
    }

    #[test]
    fn phrases_ids_and_regions() {
        let now = Utc::now();
        let d = Document::parse(
            Region::Tasks,
            "task-n9gn",
            "---\nid: task-n9gn\ntitle: Fix the parser, then the lexer\n---\nBody\n".into(),
            YamlLimits::default(),
        )
        .unwrap();
        for (query, expect) in [
            ("task-n9gn", true),
            ("task-n9", false),
            ("\"the parser\"", true),
            ("\"parser the\"", false),
            ("title=\"Fix the parser, then the lexer\"", true),
            ("title=\"Fix the parser\"", false),
            ("\"tasks\"", false),
            ("tasks status!=done", true),
            ("observations tasks", true),
            ("region:observations region:tasks", true),
        ] {
            assert_eq!(q(query).matches(&d, now), expect, "{query}");
        }
        assert_eq!(
            q("priority<=1 tasks observations").regions(),
            [Region::Tasks, Region::Observations]
        );
        assert!(q("archive").archived() && q("region:archive").archived());
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
            "status==pending",
            "status==",
            "priority<=<1",
            "\"open quote",
            "\"a\"b",
        ] {
            let e = Query::parse(&[bad]).unwrap_err();
            assert!(e.to_string().contains(&format!("'{bad}'")), "{bad}: {e}");
            assert_eq!(e.exit_code(), 2);
        }
    }
}
