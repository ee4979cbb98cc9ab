//! tavern: a blackboard made of plain files for teams of AI coding agents.
//!
//! This is the library: it never prints, has no clap and names no command-line flag
//! (tests/layering.rs holds the line). The front-ends are the binary's modules, declared
//! in src/main.rs (`cli` the command line, `mcp` the MCP server, `setup` client setup),
//! and use the library as `tavern::…`: they parse, call [`api`], and render.
//!
//! Layers, bottom up: [`yaml`] and [`doc`] (byte-exact documents); [`layout`] (every path
//! under the board), [`store`] and [`log`] (the mutation protocol and the audit log);
//! [`board`], [`workflow`], [`schema`] and [`query`] (the model); [`scan`], [`agents`],
//! [`check`], [`runs`], [`process`] and [`client`] (reading the board, agent cards,
//! validation, activation outputs, processes); [`ops`] (the operations); [`watch`]
//! (watch mode and the change feed) and [`sync`] (git); [`api`] (one call per use case,
//! typed results), with [`error`] and [`notice`] (what goes wrong, what was noticed) as
//! typed values throughout.

pub mod agents;
pub mod api;
pub mod board;
pub mod check;
pub mod client;
pub mod doc;
pub mod error;
pub mod id;
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
pub mod views;
pub mod watch;
pub mod workflow;
pub mod yaml;

pub use error::{Error, Kind, Result};
