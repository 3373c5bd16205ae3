//! ctxfold: keep, shrink, search and sync the history of AI coding-agent sessions.
//!
//! Layers, dependencies pointing down: the binaries (`libexec/`, `src/main.rs`) → [`commands`]
//! (one module per command, taking writers, never printing or exiting) → the engine: [`segment`]
//! (pure functions over bytes) and [`store`] (objects, manifests, reconstruction) over [`odb`]; at
//! the bottom, [`files`] (private folders, atomic writes) under both, and [`blocks`] (what a
//! session is read into) under [`agents`] and [`ledger`].

pub mod agents;
pub mod blocks;
pub mod cli;
pub mod commands;
pub mod digest;
pub mod dispatch;
pub mod error;
pub mod files;
pub mod fold;
pub mod grep;
pub mod history;
pub mod input;
pub mod interrupt;
pub mod keys;
pub mod ledger;
pub mod mirror;
pub mod mount;
pub mod odb;
pub mod pipeline;
pub mod restore;
pub mod secrets;
pub mod seeds;
pub mod segment;
pub mod sources;
pub mod store;
pub mod test_sizes;
pub mod time;
