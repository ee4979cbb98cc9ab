//! Markdown for the page: agent-written bodies rendered on the server by pulldown-cmark
//! (a parser its maintainers fuzz) and cleaned by ammonia, within fixed bounds, so that no
//! body can hang the page, exhaust a stack or hide the other cards.
//!
//! - Size: at most [`SOURCE_LIMIT`] bytes of a body are rendered; the page says how much
//!   was left out, and the document's page shows the whole text as on disk.
//! - Nesting: elements deeper than [`DEPTH_LIMIT`] (quotes in quotes, lists in lists,
//!   emphasis in emphasis) are flattened into their parent: their text stays, their tags
//!   go. Nothing downstream (ammonia, the browser) ever sees a deeper tree.
//! - Output: at most [`EVENT_LIMIT`] elements and [`TEXT_LIMIT`] bytes of text and links,
//!   whatever the source expands to (a table header of many columns pads every row; a
//!   reference link can be used thousands of times).
//!
//! Nothing an agent wrote becomes markup of its own: raw HTML is shown as text, images as
//! their alt text (nothing is fetched), links kept only for http(s) and opened without a
//! referrer. ammonia then keeps only the tags and attributes listed here.

use std::collections::{HashMap, HashSet};
use std::sync::OnceLock;

use pulldown_cmark::{CodeBlockKind, CowStr, Event, HeadingLevel, Options, Parser, Tag, TagEnd};

/// Bytes of a body rendered as markdown.
pub const SOURCE_LIMIT: usize = 64 * 1024;
/// Elements nested in elements, at most.
pub const DEPTH_LIMIT: usize = 16;
/// Elements (start or end of a tag, or a piece of text) rendered, at most.
pub const EVENT_LIMIT: usize = 20_000;
/// Bytes of text and link targets rendered, at most.
pub const TEXT_LIMIT: usize = 128 * 1024;

/// A body rendered: clean HTML, and whether (and where) it was cut.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Rendered {
    pub html: String,
    /// The body's size in bytes.
    pub bytes: usize,
    /// How many of those bytes the HTML shows, when not all.
    pub shown: Option<usize>,
}

/// Renders `body` as markdown within the bounds above.
pub fn render(body: &str) -> Rendered {
    let source = head(body, SOURCE_LIMIT);
    let mut bounded = Bounded::new(Parser::new_ext(source, options()));
    let mut html = String::new();
    pulldown_cmark::html::push_html(&mut html, &mut bounded);
    let mut html = cleaner().clean(&html).to_string();
    let shown = if source.len() < body.len() {
        Some(source.len())
    } else if bounded.cut {
        Some(bounded.source_end.min(body.len()))
    } else {
        None
    };
    if let Some(n) = shown {
        html.push_str(&format!(
            "<p class=\"md-cut\">[The rest of this body is not rendered here: it has {} bytes, and only the first {} are shown as markdown. The document's page shows all of it as on disk.]</p>",
            body.len(),
            n
        ));
    }
    Rendered {
        html,
        bytes: body.len(),
        shown,
    }
}

/// At most `max` bytes of `text`, ending at a line's end when one is near.
fn head(text: &str, max: usize) -> &str {
    if text.len() <= max {
        return text;
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    let cut = &text[..end];
    match cut.rfind('\n') {
        Some(nl) if nl >= max / 2 => &cut[..=nl],
        _ => cut,
    }
}

fn options() -> Options {
    Options::ENABLE_TABLES | Options::ENABLE_STRIKETHROUGH | Options::ENABLE_TASKLISTS
}

/// What closing an element the filter opened (or dropped) writes.
enum Open {
    /// The element was kept: its end tag.
    Tag(TagEnd),
    /// The element was dropped (too deep, or not allowed): nothing, or a separator so that
    /// the text of two flattened blocks does not run together.
    Dropped { block: bool },
    /// An image, shown as `[image: ALT]`: the closing bracket.
    Image,
}

/// pulldown-cmark's events with the bounds and the allowlist applied. No recursion: one
/// stack of open elements, as deep as [`DEPTH_LIMIT`] plus the dropped ones (a counter
/// would do, but the stack keeps what each end must write).
struct Bounded<'a> {
    inner: pulldown_cmark::OffsetIter<'a, pulldown_cmark::DefaultBrokenLinkCallback>,
    open: Vec<Open>,
    /// How many open elements were kept (the depth of the output).
    kept: usize,
    events: usize,
    text: usize,
    /// Over a limit: only the ends of the open elements are still written.
    cut: bool,
    /// The last event written was the separator of flattened blocks.
    separated: bool,
    /// Where in the source the last event rendered ended.
    source_end: usize,
}

impl<'a> Bounded<'a> {
    fn new(parser: Parser<'a>) -> Bounded<'a> {
        Bounded {
            inner: parser.into_offset_iter(),
            open: Vec::new(),
            kept: 0,
            events: 0,
            text: 0,
            cut: false,
            separated: false,
            source_end: 0,
        }
    }

    /// Closes the innermost open element; None when none is open.
    fn close(&mut self) -> Option<Option<Event<'a>>> {
        Some(match self.open.pop()? {
            Open::Tag(end) => {
                self.kept -= 1;
                Some(Event::End(end))
            }
            // One separator for a run of flattened blocks.
            Open::Dropped { block: true } if !self.separated => {
                self.separated = true;
                Some(Event::Text(CowStr::Borrowed("\n")))
            }
            Open::Dropped { .. } => None,
            Open::Image => Some(Event::Text(CowStr::Borrowed("]"))),
        })
    }

    fn start(&mut self, tag: Tag<'a>) -> Option<Event<'a>> {
        let block = is_block(&tag);
        if self.kept >= DEPTH_LIMIT {
            self.open.push(Open::Dropped { block });
            return None;
        }
        let tag = match tag {
            Tag::Image { .. } => {
                self.open.push(Open::Image);
                return Some(Event::Text(CowStr::Borrowed("[image: ")));
            }
            Tag::Link { dest_url, .. } if !web_url(&dest_url) => {
                self.open.push(Open::Dropped { block: false });
                return None;
            }
            Tag::Link {
                link_type,
                dest_url,
                id,
                ..
            } => {
                self.text += dest_url.len();
                Tag::Link {
                    link_type,
                    dest_url,
                    title: CowStr::Borrowed(""),
                    id,
                }
            }
            // A body's headings sit under the page's own.
            Tag::Heading { level, .. } => Tag::Heading {
                level: lower(level),
                id: None,
                classes: Vec::new(),
                attrs: Vec::new(),
            },
            Tag::CodeBlock(_) => Tag::CodeBlock(CodeBlockKind::Indented),
            Tag::Table(columns) => Tag::Table(vec![pulldown_cmark::Alignment::None; columns.len()]),
            // Raw HTML blocks: their text is shown as text.
            Tag::HtmlBlock | Tag::MetadataBlock(_) | Tag::FootnoteDefinition(_) => {
                self.open.push(Open::Dropped { block: true });
                return None;
            }
            other => other,
        };
        self.open.push(Open::Tag(tag.to_end()));
        self.kept += 1;
        Some(Event::Start(tag))
    }
}

impl<'a> Iterator for Bounded<'a> {
    type Item = Event<'a>;

    fn next(&mut self) -> Option<Event<'a>> {
        loop {
            if self.cut {
                // Only the ends of what is open, so the HTML stays well formed.
                match self.close()? {
                    Some(e) => return Some(e),
                    None => continue,
                }
            }
            let (event, range) = self.inner.next()?;
            if self.events >= EVENT_LIMIT || self.text > TEXT_LIMIT {
                self.cut = true;
                continue;
            }
            self.source_end = range.end;
            let out = match event {
                Event::Start(tag) => self.start(tag),
                Event::End(_) => match self.close() {
                    Some(e) => e,
                    None => continue,
                },
                Event::Text(t) | Event::Html(t) | Event::InlineHtml(t) => {
                    self.text += t.len();
                    Some(Event::Text(t))
                }
                Event::Code(t) => {
                    self.text += t.len();
                    Some(Event::Code(t))
                }
                Event::InlineMath(t) | Event::DisplayMath(t) | Event::FootnoteReference(t) => {
                    self.text += t.len();
                    Some(Event::Text(t))
                }
                Event::TaskListMarker(done) => Some(Event::Text(CowStr::Borrowed(if done {
                    "☑ "
                } else {
                    "☐ "
                }))),
                e @ (Event::SoftBreak | Event::HardBreak | Event::Rule) => Some(e),
            };
            if let Some(e) = out {
                // Only what is written counts: flattened elements cost nothing downstream.
                self.events += 1;
                self.separated = matches!(&e, Event::Text(t) if t.as_ref() == "\n");
                return Some(e);
            }
        }
    }
}

fn is_block(tag: &Tag) -> bool {
    !matches!(
        tag,
        Tag::Emphasis
            | Tag::Strong
            | Tag::Strikethrough
            | Tag::Superscript
            | Tag::Subscript
            | Tag::Link { .. }
            | Tag::Image { .. }
    )
}

/// `# Title` in a body is a heading under the page's own: two levels down.
fn lower(level: HeadingLevel) -> HeadingLevel {
    match level {
        HeadingLevel::H1 => HeadingLevel::H3,
        HeadingLevel::H2 => HeadingLevel::H4,
        HeadingLevel::H3 => HeadingLevel::H5,
        _ => HeadingLevel::H6,
    }
}

/// Links are kept only to the web: http and https.
fn web_url(url: &str) -> bool {
    let lower = url.trim_start().to_ascii_lowercase();
    lower.starts_with("http://") || lower.starts_with("https://")
}

/// The sanitizer: only the elements the filter writes, links only to http(s), opened in a
/// new tab without a referrer.
fn cleaner() -> &'static ammonia::Builder<'static> {
    static CLEANER: OnceLock<ammonia::Builder<'static>> = OnceLock::new();
    CLEANER.get_or_init(|| {
        let tags: HashSet<&str> = [
            "p",
            "br",
            "hr",
            "h3",
            "h4",
            "h5",
            "h6",
            "blockquote",
            "ul",
            "ol",
            "li",
            "pre",
            "code",
            "em",
            "strong",
            "del",
            "sup",
            "sub",
            "a",
            "table",
            "thead",
            "tbody",
            "tr",
            "th",
            "td",
        ]
        .into_iter()
        .collect();
        let attributes: HashMap<&str, HashSet<&str>> = [
            ("a", ["href"].into_iter().collect()),
            ("ol", ["start"].into_iter().collect()),
        ]
        .into_iter()
        .collect();
        let mut b = ammonia::Builder::empty();
        b.tags(tags)
            .tag_attributes(attributes)
            .url_schemes(["http", "https"].into_iter().collect())
            .url_relative(ammonia::UrlRelative::Deny)
            .link_rel(Some("noopener noreferrer nofollow"))
            .set_tag_attribute_value("a", "target", "_blank")
            .strip_comments(true);
        b
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markdown_renders_as_the_page_shows_it() {
        let r = render(
            "# Plan\n\nSome *em* and **strong**, `code`, ~~gone~~.\n\n- [x] done\n- [ ] todo\n\n> quoted\n\n| a | b |\n|---|:-:|\n| 1 | 2 |\n\n```rust\nfn x() {}\n```\n\n[site](https://example.com/x \"t\") and ![alt text](http://127.0.0.1/p.png)\n",
        );
        assert_eq!(r.shown, None);
        for want in [
            "<h3>Plan</h3>",
            "<em>em</em>",
            "<strong>strong</strong>",
            "<code>code</code>",
            "<del>gone</del>",
            "☑ done",
            "☐ todo",
            "<blockquote>",
            "<table>",
            "<td>2</td>",
            "<pre><code>fn x() {}",
            "<a href=\"https://example.com/x\" target=\"_blank\" rel=\"noopener noreferrer nofollow\">site</a>",
            "[image: alt text]",
        ] {
            assert!(r.html.contains(want), "{want} in {}", r.html);
        }
        assert!(!r.html.contains("<img"), "{}", r.html);
        assert!(!r.html.contains("style="), "{}", r.html);
    }

    #[test]
    fn nothing_written_in_a_body_becomes_markup() {
        let r = render(
            "<img src=x onerror=alert(1)>\n\n<script>alert(2)</script>\n\ninline <b onclick=x>b</b>\n\n[js](javascript:alert(3)) [rel](/api/pause) [data](data:text/html,x) <javascript:alert(4)>\n",
        );
        for banned in [
            "<img",
            "<script",
            "<b ",
            "onclick=\"",
            "href=\"javascript",
            "href=\"/api",
            "href=\"data",
        ] {
            assert!(!r.html.contains(banned), "{banned} in {}", r.html);
        }
        assert!(
            r.html.contains("&lt;img src=x onerror=alert(1)&gt;"),
            "{}",
            r.html
        );
        assert!(r.html.contains("&lt;script&gt;"), "{}", r.html);
        // The links' text stays.
        assert!(
            r.html.contains("js") && r.html.contains("rel"),
            "{}",
            r.html
        );
    }

    #[test]
    fn nesting_is_flattened_past_the_limit_and_the_text_kept() {
        for n in [3_000, 20_000, 200_000] {
            let body = format!("{} deep", ">".repeat(n));
            let r = render(&body);
            // Past the size bound the text is cut, and the page says so.
            assert!(
                r.html.contains(if n < SOURCE_LIMIT {
                    "deep"
                } else {
                    "not rendered here"
                }),
                "{n}"
            );
            assert!(r.html.matches("<blockquote>").count() <= DEPTH_LIMIT, "{n}");
            let lists = format!("{}x", "- ".repeat(n));
            let r = render(&lists);
            assert!(r.html.matches("<ul>").count() <= DEPTH_LIMIT, "{n}");
            let em = format!("{}x{}", "*".repeat(n), "*".repeat(n));
            let r = render(&em);
            assert!(
                r.html.matches("<em>").count() + r.html.matches("<strong>").count() <= DEPTH_LIMIT,
                "{n}"
            );
        }
    }

    #[test]
    fn big_bodies_and_expanding_markup_are_cut_and_say_so() {
        let big = "word ".repeat(1 << 18);
        let r = render(&big);
        assert_eq!(r.bytes, big.len());
        assert!(r.shown.is_some_and(|n| n <= SOURCE_LIMIT), "{:?}", r.shown);
        assert!(r.html.contains("not rendered here"));
        assert!(r.html.len() < 2 * SOURCE_LIMIT);
        // A header of 2,000 columns pads each of 20,000 short rows: millions of cells,
        // unless the output is bounded.
        let table = format!(
            "|{}\n|{}\n{}",
            "a|".repeat(2_000),
            "-|".repeat(2_000),
            "|x\n".repeat(20_000)
        );
        let r = render(&table);
        assert!(r.shown.is_some());
        assert!(r.html.len() < 1 << 20, "{} bytes", r.html.len());
        assert!(
            r.html.ends_with("</p>") && r.html.contains("</table>"),
            "well formed"
        );
        // One long reference used many times.
        let refs = format!(
            "[r]: https://example.com/{}\n\n{}",
            "x".repeat(4_000),
            "[r] ".repeat(10_000)
        );
        let r = render(&refs);
        assert!(r.html.len() < 1 << 20, "{} bytes", r.html.len());
        // A cut never splits a character.
        let wide = "é".repeat(SOURCE_LIMIT);
        assert!(render(&wide).shown.is_some());
    }
}
