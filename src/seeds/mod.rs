//! The seed index: records of what a session's folded history holds (files, commands, errors,
//! identifiers, user intents) with span pointers back into its ledger, as `seed-index-v2.md` and the
//! context-fold extension define them. Extraction, the union reader, the store's index (its catalog) and recall.

pub mod catalog;
pub mod extract;
pub mod facts;
pub mod index;
pub mod lean;
pub mod lexicon;
pub mod plan;
pub mod recall;
pub mod record;
pub mod resume;
mod span_list;
pub mod union;

pub use index::index_folded_session;

/// Extraction looks a map up for every token of every block: SipHash was a sixth of a fold's CPU.
/// foldhash is randomly seeded per process, which is all the collision resistance these need.
pub(crate) type Map<K, V> = std::collections::HashMap<K, V, foldhash::fast::RandomState>;
