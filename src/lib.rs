//! tavern: a blackboard made of plain files for teams of AI coding agents.
//!
//! This is the library: it never prints, has no clap, names no command-line flag and
//! tells nobody to run a command (tests/layering.rs holds the line). The operations and
//! what they stand on (`ops`, `store`, `scan`, `schema`, `workflow`, `check`, `runs`,
//! `process`) are `pub(crate)`: the compiler keeps the front-ends from reaching past
//! [`api`] to them. The front-ends are
//! the binary's modules, declared in src/main.rs (`cli` the command line, `mcp` the MCP
//! server, `web` the dashboard, `setup` client setup and hooks), and use the library as
//! `tavern::…`: they parse, call [`api`], and render.
//!
//! Layers, bottom up: [`yaml`] and [`doc`] (byte-exact documents), [`id`] and [`time`];
//! [`file`] (how a file is written: temp, sync, rename); [`layout`] (every path and lock
//! name under the board), `store` (reading files and the one write protocol,
//! `store::write`) and [`log`] (the audit log); [`board`],
//! `workflow`, `schema` and [`query`] (the model); `scan`, [`agents`], `check`,
//! `runs`, `process` and [`client`] (reading the board, agent cards, validation,
//! activation outputs, processes); `ops` (the operations); [`watch`] (watch mode and the
//! change feed) and [`sync`] (git); [`api`] (one call per use case, typed results, the
//! dashboard's read models among them), with [`error`] and [`notice`] (what goes
//! wrong, naming inputs and commands as data; what was noticed on the way) as typed values
//! throughout.

pub mod agents;
pub mod api;
pub mod board;
pub(crate) mod check;
pub mod client;
pub mod doc;
pub mod error;
pub mod file;
pub mod id;
pub(crate) mod index;
pub mod layout;
pub mod log;
pub mod notice;
pub(crate) mod ops;
pub(crate) mod process;
pub mod query;
pub(crate) mod runs;
pub(crate) mod scan;
pub(crate) mod schema;
pub(crate) mod search;
pub(crate) mod store;
pub mod sync;
pub mod time;
pub mod watch;
pub(crate) mod workflow;
pub mod yaml;

pub use error::{Error, Kind, Result};
