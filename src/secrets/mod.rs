//! The secret scan: credentials of well-known formats found in session transcripts, so that none
//! leaves the machine in clear by accident. `rules` says what a credential looks like, `scan`
//! finds them in one session (by line and block), `remembered` keeps what was found by the bytes'
//! sha256 so that a sync scans only what is new, and `gate` is the scan as a sync's screen.
//!
//! Findings carry masked previews, never a credential: what reports them cannot leak them.

pub mod gate;
pub mod remembered;
pub mod rules;
pub mod scan;
