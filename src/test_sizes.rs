//! Sizes made for large sessions that tests of small fixtures lower, through `CTXFOLD_TEST_*`
//! variables (as git has its GIT_TEST_* ones): read by debug builds only, never by a release.

/// `default`, or in a debug build the size the variable `var` gives.
#[cfg(not(debug_assertions))]
pub fn size(_var: &str, default: u64) -> u64 {
    default
}

/// `default`, or in a debug build the size the variable `var` gives.
#[cfg(debug_assertions)]
pub fn size(var: &str, default: u64) -> u64 {
    std::env::var(var)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}
