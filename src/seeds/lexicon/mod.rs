//! The lexicons: pure functions that pick errors, identifiers, files, commands and user intents out
//! of block text, verbatim. Choosing among many (caps, diversity, recency) is the record builder's job.

pub mod commands;
pub mod errors;
pub mod files;
pub mod identifiers;
pub mod user;
