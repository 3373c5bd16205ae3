//! `ctxfold fsck`: the store checked, findings one per line.

use std::path::PathBuf;

use crate::agents::Homes;
use crate::agents::place::unplaced_manifests;
use crate::cli::human::bytes;
use crate::cli::{Command, Io, Status, StoreArgs, TalkArgs, Verbosity, emit};
use crate::error::Result;
use crate::store::fsck::check;
use crate::store::restore_temp::leftovers_under;

/// Check the store: manifests readable, every object they name present (--full: and sound)
///
/// Reads every manifest under manifests/ (generations/ and conflicts/ included) and the seed
/// catalog (seeds/catalog.jsonl), and checks that each object they name exists. --full also
/// decompresses and re-hashes every object, and reconstructs every manifest whose objects are
/// sound, checking its sha256 and size.
///
/// Prints one finding per line: `bad manifest PATH: WHY`, `missing object SHA256 (named by PATH)`,
/// `corrupt object SHA256: WHY`, `bad seed catalog line seeds/catalog.jsonl:N: WHY`, `stray file
/// PATH`, `bad reconstruction PATH: WHY`, and `unreferenced object SHA256`, and `unplaced manifest
/// PATH: WHY` for a session restore will not put back without --to (see ctxfold-restore: a file
/// folded by path, or a rollout_path that is not where its agent keeps it, as a manifest edited or
/// brought by a remote may have). Unreferenced objects and unplaced manifests are notes, not faults
/// (gc removes the objects: one line counts them, -v lists them; the sessions are sound and restore
/// with --to); anything else makes the exit status 4.
///
/// It also looks in the agents' session folders (as fold finds them) for the temp files killed
/// restores left beside their targets, and lists each: `leftover restore temp file PATH (SIZE)`.
/// They are not the store's and no fault: the next restore of the same target removes them.
#[derive(Debug, clap::Parser)]
#[command(name = "ctxfold-fsck", version, after_long_help = crate::cli::EXIT_STATUS)]
pub struct FsckArgs {
    /// Also decompress and re-hash every object and reconstruct every manifest
    #[arg(long)]
    pub full: bool,
    #[command(flatten)]
    pub talk: TalkArgs,
    #[command(flatten)]
    pub store: StoreArgs,
}

impl Command for FsckArgs {
    fn run(self, io: &mut Io<'_>) -> Result<Status> {
        let store = self.store.open()?;
        let (mut faults, mut notes) = (0u64, 0u64);
        // Unreferenced objects are normal after an interrupted fold: one summary line, the list
        // with --verbose.
        let list_notes = io.verbosity() == Verbosity::Verbose;
        let out = &mut *io.out;
        check(&store, self.full, &mut |finding| {
            if finding.is_fault() {
                faults += 1;
            } else {
                notes += 1;
                if !list_notes {
                    return Ok(());
                }
            }
            emit(out, &finding)
        })?;
        let unplaced = unplaced_manifests(&store)?;
        for manifest in &unplaced {
            emit(
                io.out,
                format_args!(
                    "unplaced manifest {}: {}; restore {} needs --to",
                    manifest.path.display(),
                    manifest.unplaced,
                    manifest.session
                ),
            )?;
        }
        let leftovers = restore_leftovers();
        for (path, size) in &leftovers {
            emit(
                io.out,
                format_args!(
                    "leftover restore temp file {} ({}; the next restore of its session removes it)",
                    path.display(),
                    bytes(*size)
                ),
            )?;
        }
        let depth = if self.full {
            "objects re-hashed, reconstructions checked"
        } else {
            "objects present (--full re-hashes them)"
        };
        emit(
            io.out,
            format_args!(
                "{faults} problems, {notes} unreferenced objects (gc removes them{}), {} unplaced manifests{}; {depth}",
                if list_notes { "" } else { ", -v lists them" },
                unplaced.len(),
                match leftovers.len() {
                    0 => String::new(),
                    n => format!(", {n} leftover restore temp files"),
                }
            ),
        )?;
        Ok(if faults == 0 {
            Status::Success
        } else {
            Status::Corrupt
        })
    }
}

/// The temp files killed restores left in the agents' session folders, where restore puts
/// sessions back (restores elsewhere, with --to, cannot be found). Best effort: a home that is
/// not set or cannot be read has none.
fn restore_leftovers() -> Vec<(PathBuf, u64)> {
    let Ok(homes) = Homes::from_env() else {
        return Vec::new();
    };
    homes
        .session_trees()
        .iter()
        .filter_map(|dir| leftovers_under(dir).ok())
        .flatten()
        .collect()
}
