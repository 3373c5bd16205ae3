//! `ctxfold-cat-manifest`: a folded session's bytes on stdout, verified as they stream; or its
//! manifest, as the contract's JSON.

use std::path::PathBuf;

use crate::cli::{Command, Io, Status, StoreArgs};
use crate::error::{Error, Result, STDOUT, stdout_failed};
use crate::store::Store;
use crate::store::generations;
use crate::store::reconstruct::write_session;

/// Write a folded session's original bytes to stdout, verified as they stream
///
/// Every object is checked against its name and size as it is decoded, and the whole against the
/// manifest's sha256 and size. Bytes reach stdout before the last check: on a mismatch the command
/// stops with an error and exit 1, so a script must test the exit status (restore checks before it
/// renames anything into place).
///
/// With --json, the session's manifest itself instead (SESSION@N: generation N's), the Fold V1
/// contract's JSON byte for byte as it was committed, whether the store keeps it as a loose file
/// or packed (see ctxfold gc).
#[derive(Debug, clap::Parser)]
#[command(name = "ctxfold-cat-manifest", version, after_long_help = crate::cli::EXIT_STATUS)]
#[command(group = clap::ArgGroup::new("which").required(true).args(["session", "manifest"]))]
pub struct CatManifestArgs {
    /// The folded session's id, or a unique prefix of it
    #[arg(value_name = "SESSION", add = crate::cli::complete::session_ids())]
    pub session: Option<String>,
    /// Read this manifest file instead of the store's manifest for a session
    #[arg(long, value_name = "FILE", value_hint = clap::ValueHint::FilePath)]
    pub manifest: Option<PathBuf>,
    /// Print the manifest (the contract's JSON) instead of the session's bytes
    #[arg(long, requires = "session")]
    pub json: bool,
    #[command(flatten)]
    pub store: StoreArgs,
}

impl Command for CatManifestArgs {
    fn run(self, io: &mut Io<'_>) -> Result<Status> {
        let store = self.store.open()?;
        if let (true, Some(spec)) = (self.json, &self.session) {
            let name = generations::resolve_name(&store, spec, None)?;
            let bytes = store.manifest_bytes_at(&name)?.ok_or_else(|| {
                Error::not_found(format!(
                    "no folded session {spec:?} ('ctxfold ls' lists them)"
                ))
            })?;
            io.out.write_all(&bytes).map_err(stdout_failed)?;
            return Ok(Status::Success);
        }
        let manifest = match (&self.session, &self.manifest) {
            (_, Some(file)) => Store::load_manifest_file(file)?,
            (Some(id), None) => store.load_named_manifest(id)?,
            (None, None) => unreachable!("clap requires one"),
        };
        // Named, so that a closed pipe ends it quietly and a full disk says where.
        write_session(&store, &manifest, io.out).map_err(|e| e.on_target(STDOUT))?;
        Ok(Status::Success)
    }
}
