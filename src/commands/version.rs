//! `ctxfold version`: what `ctxfold --version` prints, as git's `git version`.

use crate::cli::{Command, EXIT_STATUS, Io, Status};
use crate::error::Result;

/// Print ctxfold's version (as `ctxfold --version` does)
#[derive(Debug, clap::Parser)]
#[command(name = "ctxfold-version", version, after_long_help = EXIT_STATUS)]
pub struct VersionArgs {}

impl Command for VersionArgs {
    fn run(self, io: &mut Io<'_>) -> Result<Status> {
        io.line(super::dispatcher().render_version().trim_end())?;
        Ok(Status::Success)
    }
}
