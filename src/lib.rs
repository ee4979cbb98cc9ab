//! tavern: a blackboard made of plain files for teams of AI coding agents.
//!
//! This is the library: it never prints, has no clap, names no command-line flag and
//! tells nobody to run a command (tests/layering.rs holds the line). Its one public module
//! is [`api`]: every other module is `pub(crate)`, so the compiler keeps the front-ends
//! from reaching past `api`. The front-ends are the binary's modules, declared in
//! src/main.rs (`cli` the command line, `mcp` the MCP server, `web` the dashboard, `setup`
//! client setup and hooks), and use the library as `tavern::api::…`: they parse, call
//! `api`, and render. (`testing` holds hooks for tavern's own integration tests only.)
//!
//! Layers, bottom up: `yaml` and `doc` (byte-exact documents), `id` and `time`;
//! `file` (how a file is written: temp, sync, rename); `layout` (every path and lock
//! name under the board), `store` (reading files and the one write protocol,
//! `store::write`) and `log` (the audit log); `board`,
//! `workflow`, `schema` and `query` (the model); `scan` and `index` (reading the board,
//! through the read cache), `search`, `holds`, `agents`, `check`, `runs`, `process` and
//! `client` (relevance, holds on resources, agent cards, validation, activation outputs,
//! processes); `ops` (the operations); `watch` (watch mode and the
//! change feed) and `sync` (git); [`api`] (one call per use case, typed results, the
//! dashboard's read models among them), with `error` and `notice` (what goes
//! wrong, naming inputs and commands as data; what was noticed on the way) as typed values
//! throughout.

pub(crate) mod agents;
pub mod api;
pub(crate) mod board;
pub(crate) mod check;
pub(crate) mod client;
pub(crate) mod doc;
pub(crate) mod error;
pub(crate) mod file;
pub(crate) mod holds;
pub(crate) mod id;
pub(crate) mod index;
pub(crate) mod layout;
pub(crate) mod log;
pub(crate) mod notice;
pub(crate) mod ops;
pub(crate) mod process;
pub(crate) mod query;
pub(crate) mod runs;
pub(crate) mod scan;
pub(crate) mod schema;
pub(crate) mod search;
pub(crate) mod store;
pub(crate) mod sync;
pub(crate) mod time;
pub(crate) mod watch;
pub(crate) mod workflow;
pub(crate) mod yaml;

/// Hooks for tavern's own integration tests, not part of its surface: what no command
/// reaches on the board layout those tests use. Nothing outside tests/ may call them.
#[doc(hidden)]
pub mod testing {
    use crate::board::Board;
    use crate::error::Result;

    /// Fetches the remote's claim records and makes this clone's tasks agree with them
    /// (what `sync` does for a board on its own branch): the tasks that changed.
    pub fn follow_remote_claims(board: &Board) -> Result<Vec<String>> {
        crate::sync::claims::fetch_all(board)?;
        crate::sync::claims::reconcile(board)
    }

    /// The last content `tavern watch` recorded as handled of a board-relative file (its
    /// shadow), as a restarted watcher would find it; None if it has none.
    pub fn watch_shadow(board: &Board, rel: &str) -> Option<Vec<u8>> {
        crate::watch::snapshot::Snapshot::load(board).read_shadow(board, rel)
    }

    /// Claims held here that the remote's records do not confirm: (task, holder).
    pub fn unconfirmed_claims(board: &Board) -> Result<Vec<(String, String)>> {
        crate::sync::claims::unconfirmed(board)
    }
}
