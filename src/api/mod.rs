//! The use cases: one library call per thing a person or an agent does with the board,
//! each returning a typed, serialisable result or a typed [`Error`](crate::Error).
//!
//! Front-ends (the command line, the MCP server, the web dashboard) parse their input,
//! call these, and render what comes back; none of them reaches into `store`, `scan`,
//! `log` or `runs` itself, so every front-end behaves the same. Results serialise to the
//! JSON the CLI prints with `--json`; the fields a text renderer needs beside it (a
//! document's raw text, a time to show as "5m ago") are kept but not serialised.
//!
//! Calls that act take the acting agent's name; [`actor`] checks it and counts the call
//! as the agent's heartbeat, as every command run as a registered agent does.

pub mod agents;
pub mod board;
pub mod change;
pub mod docs;
pub mod graph;
pub mod history;
pub mod observations;
pub mod questions;
pub mod sources;
pub mod summary;
pub mod tasks;
pub mod view;

use crate::board::Board;
use crate::error::Result;

pub use change::{Changed, Created};
pub use view::{Listing, Skipped};

/// Checks the acting agent's name and, when it is a registered agent, touches its
/// heartbeat: any call made as an agent says it is alive.
pub fn actor(board: &Board, name: &str) -> Result<String> {
    crate::ops::validate_actor(name)?;
    crate::agents::heartbeat_if_registered(board, name);
    Ok(name.to_string())
}
