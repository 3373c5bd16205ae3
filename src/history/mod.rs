//! Folded history read as a person reads it, over the ledger and the store: what a listing says of
//! each session (`summary`, for `log`), a session rendered turn by turn
//! (`render`, for `show`), and how two sessions relate (`fork`, for `diff`, and a session's nearest
//! relative, `relative`). Everything streams:
//! memory is bounded by a line (a turn, for a diff), whatever a session's size.
//!
//! Not for: plumbing's stable formats, or anything that writes.

pub mod ends;
pub mod ends_cache;
pub mod fork;
pub mod named;
pub mod records;
pub mod relative;
pub mod render;
pub mod summary;
pub mod unchanged;
