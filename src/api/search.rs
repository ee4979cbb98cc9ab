//! `search`: every document and every text file under `solutions/`, ranked by relevance
//! (BM25), with the query language's filters (see `crate::search`).

use crate::board::Board;
use crate::error::Result;

pub use crate::search::{FUZZY_MIN_CHARS, FUZZY_WEIGHT, Found, Hit, SIMILAR_MIN, Similar, Snippet};

/// How many hits a search returns unless told.
pub const DEFAULT_LIMIT: usize = 10;

/// What to search for: words, `"phrases"` and filters (`region:observations`,
/// `status=open`, …), as query arguments; at most `limit` hits.
#[derive(Clone, Debug)]
pub struct SearchRequest {
    pub terms: Vec<String>,
    pub limit: usize,
}

/// The hits, best first. A query without words is a usage error; so is a malformed term.
pub fn search(board: &Board, req: &SearchRequest) -> Result<Found> {
    crate::search::search(
        board,
        &crate::search::Request {
            terms: req.terms.clone(),
            limit: req.limit,
        },
    )
}
