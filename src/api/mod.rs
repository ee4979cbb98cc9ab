//! The use cases: one library call per thing a person or an agent does with the board,
//! each returning a typed, serialisable result or a typed [`Error`].
//!
//! Front-ends (the command line, the MCP server, the web dashboard) parse their input,
//! call these, and render what comes back; none of them reaches into `store`, `scan`,
//! `log` or `runs` itself, so every front-end behaves the same. Results serialise to the
//! JSON the CLI prints with `--json`; the fields a text renderer needs beside it (a
//! document's raw text, a time to show as "5m ago") are kept but not serialised.
//!
//! Calls that act take the acting agent's name; [`actor`] checks it and counts the call
//! as the agent's heartbeat, as every command run as a registered agent does. Every
//! front-end finds that name the same way: [`named_actor`] (its own input, else
//! `TAVERN_AGENT`, `USER`, `LOGNAME`), and [`acting_name`] refuses a call that acts with
//! nobody named.

pub mod agents;
pub mod board;
pub mod cache;
pub(crate) mod change;
pub mod columns;
pub mod delivery;
pub mod docs;
pub mod errors;
pub mod graph;
pub mod history;
pub mod holds;
pub mod observations;
pub mod questions;
pub mod search;
pub mod sources;
pub mod summary;
pub mod sync;
pub mod tasks;
pub mod time;
pub(crate) mod view;
pub mod waiting;
pub mod watch;

pub use change::{Changed, Created};
pub use view::{Listing, Skipped};

// What front-ends name in calls and results: the board, documents, log entries, errors and
// the words of messages. Nothing else of the library is theirs to reach.
pub use crate::board::Board;
pub use crate::doc::decision::Decision;
pub use crate::doc::{Document, Region};
pub use crate::error::{Command, Error, Input, Kind, Message, Names, Result};
pub use crate::log::Entry;
pub use crate::notice::Notice;
/// Changes to the board as they happen (what a live page or a subscribed client follows).
pub use crate::watch::feed as changes;

/// Every change this process makes from now on is logged as having come `via` this
/// front-end (`mcp`, `dashboard`).
pub fn via(front_end: &'static str) {
    crate::log::set_via(front_end);
}

/// Where the notices of this process go (what a call noticed and handled on the way): the
/// front-end installs one sink, once; without one they are dropped.
pub fn on_notice(sink: impl Fn(&Notice) + Send + Sync + 'static) {
    crate::notice::set_sink(sink);
}

/// Where the progress of building the read index or the search index from nothing goes
/// (which index, the directory, files read, files in it), once it has taken a second: the
/// front-end installs one, once.
pub fn on_index_progress(sink: fn(&str, &std::path::Path, usize, usize)) {
    crate::index::on_progress(sink);
}

/// Names the command that runs the index keeper for the board at a root (see
/// [`watch::keep_index`]), which a read of a big board with no watcher running starts in
/// the background (its standard streams closed, in a process group of its own): the
/// front-end sets it, once; without it no read starts one.
pub fn on_index_keeper(command: fn(&std::path::Path) -> Option<std::process::Command>) {
    crate::index::keeper::set_program(command);
}

/// Writes a whole file as tavern writes its own (a temporary file synced, then renamed
/// over the old one): a front-end's own files, such as a client's configuration.
pub fn write_file(path: &std::path::Path, bytes: &[u8]) -> Result<()> {
    crate::file::write(path, bytes, crate::file::Durability::Durable)
}

/// Refuses a name no one can act as (empty, too long, control characters).
pub fn validate_actor(name: &str) -> Result<()> {
    crate::ops::validate_actor(name)
}

/// Refuses what is not a document id.
pub fn validate_id(id: &str) -> Result<()> {
    crate::id::validate(id).map(|_| ())
}

/// The process that holds an agent's claims when it acts through this one: the client
/// that started it (its parent, past any shell).
pub fn client_process() -> u32 {
    crate::client::holder()
}

/// The agent named on purpose: the front-end's own input (`given`, such as the command
/// line's `--as`), else `TAVERN_AGENT`. An empty variable names nobody.
pub fn named_agent(given: Option<String>) -> Option<String> {
    given.or_else(|| from_env("TAVERN_AGENT"))
}

/// Who is acting, as every front-end finds it: [`named_agent`], else the user the
/// environment names (`USER`, else `LOGNAME`); None when nothing names anyone (a
/// container's environment may have neither).
pub fn named_actor(given: Option<String>) -> Option<String> {
    named_agent(given)
        .or_else(|| from_env("USER"))
        .or_else(|| from_env("LOGNAME"))
}

/// The name a call that acts is made as: `named` (what [`named_actor`] found), checked.
/// Nobody named is [`Error::NoActor`] (exit 2), never a change logged as someone unknown.
pub fn acting_name(named: Option<String>) -> Result<String> {
    let name = named.ok_or(Error::NoActor)?;
    validate_actor(&name)?;
    Ok(name)
}

fn from_env(var: &str) -> Option<String> {
    std::env::var(var).ok().filter(|s| !s.is_empty())
}

/// Checks the acting agent's name and, when it is a registered agent, touches its
/// heartbeat: any call made as an agent says it is alive.
pub fn actor(board: &Board, name: &str) -> Result<String> {
    crate::ops::validate_actor(name)?;
    crate::agents::heartbeat_if_registered(board, name);
    Ok(name.to_string())
}
