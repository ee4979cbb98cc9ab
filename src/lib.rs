//! tavern: a blackboard made of plain files for teams of AI coding agents.
//!
//! This is the library: it never prints, has no clap and names no command-line flag
//! (tests/layering.rs holds the line). The front-ends are the binary's modules, declared
//! in src/main.rs (`cli`, the command line), and use the library as `tavern::…`.
//! Layers, bottom up: [`yaml`] and [`doc`] (byte-exact documents), [`store`] and [`log`]
//! (the mutation protocol), [`board`], [`workflow`] and [`query`] (the model), [`ops`]
//! (the operations).

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
pub mod watch;
pub mod workflow;
pub mod yaml;

pub use error::{Error, Kind, Result};
