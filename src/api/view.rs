//! How documents appear in results: the JSON every front-end shows of a document (where
//! it is, its fields in file order, optionally its body), kept beside the document itself
//! so text renderers can still read its fields and raw text.

use serde::Serialize;
use serde::ser::{SerializeMap, Serializer};

use crate::doc::Document;

pub use crate::scan::Skipped;

/// A document as JSON, without its body: id, region, path, rev, fields, and a question's
/// decision as the log says it (`{"state": "forged", "says": …, "why": …}`).
pub fn doc<S: Serializer>(doc: &Document, s: S) -> Result<S::Ok, S::Error> {
    write_doc(doc, false, None, s)
}

/// A document as JSON with its body.
pub fn doc_with_body<S: Serializer>(doc: &Document, s: S) -> Result<S::Ok, S::Error> {
    write_doc(doc, true, None, s)
}

/// Documents as a JSON array, without bodies.
pub fn docs<S: Serializer>(docs: &[Document], s: S) -> Result<S::Ok, S::Error> {
    s.collect_seq(docs.iter().map(Brief))
}

/// A document as one JSON object of [`docs`], for a front-end that prints a listing as it
/// makes it.
pub fn brief_json(doc: &Document) -> String {
    serde_json::to_string(&Brief(doc)).unwrap_or_default()
}

struct Brief<'a>(&'a Document);

impl Serialize for Brief<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        doc(self.0, s)
    }
}

/// The document's map, then `seq` when the caller has the log entry that made it.
pub(crate) fn write_doc<S: Serializer>(
    doc: &Document,
    body: bool,
    seq: Option<u64>,
    s: S,
) -> Result<S::Ok, S::Error> {
    let mut m = s.serialize_map(None)?;
    m.serialize_entry("id", doc.id())?;
    m.serialize_entry("region", doc.region.dir())?;
    m.serialize_entry("path", &doc.rel_path())?;
    m.serialize_entry("rev", &doc.rev())?;
    m.serialize_entry("fields", &doc.fields)?;
    if doc.archived {
        m.serialize_entry("archived", &true)?;
    }
    if let Some(d) = &doc.decision {
        m.serialize_entry("decision", d)?;
    }
    if body {
        m.serialize_entry("body", doc.body())?;
    }
    if let Some(seq) = seq {
        m.serialize_entry("seq", &seq)?;
    }
    m.end()
}

/// Documents that matched, best first, and the files that could not be read.
#[derive(Debug, Serialize)]
pub struct Listing {
    #[serde(rename = "documents", serialize_with = "docs")]
    pub docs: Vec<Document>,
    pub skipped: Vec<Skipped>,
}
