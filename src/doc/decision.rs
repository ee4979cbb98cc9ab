//! What the log says of a human decision on a question: a permission request counts as
//! approved or denied only when the log holds that decision by one of the board's humans
//! (see `ops::decisions`, which derives it). A reader that derived it keeps it beside the
//! document, so that every front-end shows the same thing.

use serde::Serialize;

/// A permission request's decision as derived from the log, or a forged one.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "state", rename_all = "lowercase")]
pub enum Decision {
    /// Nobody has decided it yet.
    Open,
    /// A human approved it: `by` (listed under `humans:`) at `at` (the log entry's time).
    Approved { by: String, at: String },
    /// A human denied it.
    Denied { by: String, at: String },
    /// The file claims a decision that the log does not hold: it counts as undecided.
    /// `says` is what the file claims (`approved by alice`), `why` why it does not count.
    Forged { says: String, why: String },
}

impl Decision {
    /// The state's one word: open, approved, denied or forged.
    pub fn state(&self) -> &'static str {
        match self {
            Decision::Open => "open",
            Decision::Approved { .. } => "approved",
            Decision::Denied { .. } => "denied",
            Decision::Forged { .. } => "forged",
        }
    }

    pub fn is_forged(&self) -> bool {
        matches!(self, Decision::Forged { .. })
    }

    /// Whether a human still has to decide it: open, or only forged.
    pub fn is_undecided(&self) -> bool {
        matches!(self, Decision::Open | Decision::Forged { .. })
    }

    /// One line for a person: `approved by alice`, `forged: approved by alice (…)`.
    pub fn describe(&self) -> String {
        match self {
            Decision::Open => "open: no human has decided it".into(),
            Decision::Approved { by, at } => format!("approved by {by} at {at}"),
            Decision::Denied { by, at } => format!("denied by {by} at {at}"),
            Decision::Forged { says, why } => format!("forged: it says {says}, but {why}"),
        }
    }
}
