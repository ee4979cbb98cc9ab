//! tavern: a blackboard made of plain files for teams of AI coding agents.
//!
//! This is the library: it never prints, has no clap, names no command-line flag and
//! tells nobody to run a command (tests/layering.rs holds the line). The front-ends are
//! the binary's modules, declared in src/main.rs (`cli` the command line, `mcp` the MCP
//! server, `web` the dashboard, `setup` client setup and hooks), and use the library as
//! `tavern::…`: they parse, call [`api`], and render.
//!
//! Layers, bottom up: [`yaml`] and [`doc`] (byte-exact documents), [`id`] and [`time`];
//! [`file`] (how a file is written: temp, sync, rename); [`layout`] (every path and lock name under the board), [`store`] (reading files and
//! the one write protocol, `store::write`) and [`log`] (the audit log); [`board`],
//! [`workflow`], [`schema`] and [`query`] (the model); [`scan`], [`agents`], [`check`],
//! [`runs`], [`process`] and [`client`] (reading the board, agent cards, validation,
//! activation outputs, processes); [`ops`] (the operations); [`watch`] (watch mode and the
//! change feed) and [`sync`] (git); [`api`] (one call per use case, typed results) and
//! [`views`] (the dashboard's read models), with [`error`] and [`notice`] (what goes
//! wrong, naming inputs and commands as data; what was noticed on the way) as typed values
//! throughout.

pub mod agents;
pub mod api;
pub mod board;
pub mod check;
pub mod client;
pub mod doc;
pub mod error;
pub mod file;
pub mod id;
pub(crate) mod index;
pub mod layout;
pub mod log;
pub mod notice;
pub mod ops;
pub mod process;
pub mod query;
pub mod runs;
pub mod scan;
pub mod schema;
pub mod store;
pub mod sync;
pub mod time;
pub mod watch;
pub mod workflow;
pub mod yaml;

pub use error::{Error, Kind, Result};
