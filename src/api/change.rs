//! What a call that changes the board returns: the document it made or changed, and the
//! seq of the log entry that records it.

use serde::Serialize;
use serde::ser::{SerializeMap, Serializer};

use crate::board::Board;
use crate::doc::Document;
use crate::error::Result;
use crate::log::Entry;
use crate::ops::Outcome;

/// A document that a call created: as JSON, the document and its log entry's seq.
#[derive(Debug)]
pub struct Created {
    pub doc: Document,
    pub entry: Entry,
    /// For a new finding: open findings that look like it (likely duplicates), as JSON's
    /// `similar` when there are any.
    pub similar: Vec<crate::search::Similar>,
}

impl Created {
    pub(crate) fn new(doc: Document, entry: Entry) -> Created {
        Created {
            doc,
            entry,
            similar: Vec::new(),
        }
    }

    /// Notes the open findings that look like this new one. A search that fails costs
    /// only the note: the finding is posted.
    pub(crate) fn with_similar(mut self, board: &Board) -> Created {
        self.similar = crate::search::similar(board, &self.doc).unwrap_or_default();
        self
    }
}

impl Serialize for Created {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        if self.similar.is_empty() {
            return super::view::write_doc(&self.doc, false, Some(self.entry.seq), s);
        }
        let mut v = serde_json::to_value(Created::new(self.doc.clone(), self.entry.clone()))
            .map_err(serde::ser::Error::custom)?;
        if let Some(o) = v.as_object_mut() {
            o.insert(
                "similar".into(),
                serde_json::to_value(&self.similar).map_err(serde::ser::Error::custom)?,
            );
        }
        v.serialize(s)
    }
}

/// A document that a call changed, or left as it was when there was nothing to do.
#[derive(Debug)]
pub struct Changed {
    pub outcome: Outcome,
    /// When the change was made on this clone alone (a claim or move asked not to wait for
    /// the remote), the remote that was not asked.
    pub unconfirmed_by: Option<String>,
}

impl Changed {
    pub fn new(outcome: Outcome) -> Changed {
        Changed {
            outcome,
            unconfirmed_by: None,
        }
    }

    /// Notes the remote a `local` change skipped, on a board connected to one.
    pub(crate) fn local(mut self, board: &Board, local: bool) -> Result<Changed> {
        if local {
            self.unconfirmed_by = crate::sync::remote(board)?;
        }
        Ok(self)
    }

    pub fn doc(&self) -> &Document {
        &self.outcome.doc
    }

    pub fn changed(&self) -> bool {
        self.outcome.changed()
    }
}

impl Serialize for Changed {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let doc = &self.outcome.doc;
        let mut m = s.serialize_map(None)?;
        m.serialize_entry("ok", &true)?;
        m.serialize_entry("changed", &self.outcome.changed())?;
        m.serialize_entry("id", doc.id())?;
        m.serialize_entry("path", &doc.rel_path())?;
        m.serialize_entry("rev", &doc.rev())?;
        m.serialize_entry("status", &doc.status())?;
        m.serialize_entry("claimed_by", &doc.str("claimed_by"))?;
        m.serialize_entry("title", doc.title())?;
        // An entry not appended yet (its append failed after the change was written; the
        // next command appends it) has no seq to give.
        if let Some(e) = self.outcome.entry.as_ref().filter(|e| e.seq > 0) {
            m.serialize_entry("seq", &e.seq)?;
        }
        m.end()
    }
}
