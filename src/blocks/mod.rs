//! The units a session is read into: each line's skeleton (an entry: its kind, its ids) and its
//! blocks (the pieces of text the seed index names). Below the agents, which make them from their
//! own lines, and the ledger, which reads a session's lines through the agents.

pub mod block;
mod entry;

pub use block::{Block, BlockKind, Call, Outcome};
pub use entry::{Entry, EntryKind};
