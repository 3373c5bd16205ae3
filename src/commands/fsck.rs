//! `ctxfold fsck`: the store checked, findings one per line.

use std::path::PathBuf;

use crate::agents::Homes;
use crate::agents::place::unplaced_manifests;
use crate::cli::human::{self, bytes, count};
use crate::cli::{Command, Io, Status, StoreArgs, TalkArgs, Verbosity, emit, emit_either};
use crate::error::Result;
use crate::store::fsck::check;
use crate::store::lock::Mode;
use crate::store::restore_temp::leftovers_under;
use crate::store::{Store, gc};

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
/// They are not the store's and no fault: the next restore of the same target removes them. And
/// the staging folders killed syncs left in <store>/tmp: `leftover temp folder PATH (SIZE; …)`,
/// which gc removes (listed only when no other ctxfold is writing the store: a running sync's
/// staging is no leftover).
///
/// The last line sums up. With -q only the problems are printed (nothing for a sound store), and
/// the exit status says the rest. --json prints JSON Lines instead, every finding listed (unreferenced
/// objects too): `{"type":"bad_manifest","path":…,"why":…}`,
/// `{"type":"missing_object","sha256":HEX,"manifest":PATH}`, `{"type":"corrupt_object","sha256":HEX,"why":…}`,
/// `{"type":"bad_pack","what":…,"sessions":[ID…]}`, `{"type":"stray_file","path":…}`,
/// `{"type":"bad_reconstruction","path":…,"why":…}`, `{"type":"unreferenced_object","sha256":HEX}`,
/// `{"type":"unplaced_manifest","path":…,"session":ID,"why":…}`,
/// `{"type":"leftover_restore_temp","path":…,"bytes":N}`,
/// `{"type":"leftover_temp_folder","path":…,"bytes":N}`, then
/// `{"type":"summary","problems":N,"unreferenced_objects":N,"unplaced_manifests":N,"leftover_restore_temps":N,"leftover_temp_folders":N,"full":BOOL}`.
#[derive(Debug, clap::Parser)]
#[command(name = "ctxfold-fsck", version, after_long_help = crate::cli::EXIT_STATUS)]
pub struct FsckArgs {
    /// Also decompress and re-hash every object and reconstruct every manifest
    #[arg(long)]
    pub full: bool,
    /// JSON Lines: one object per finding, then a summary
    #[arg(long)]
    pub json: bool,
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
        let list_notes = self.json || io.verbosity() == Verbosity::Verbose;
        // -q: the problems alone, as git's fsck says nothing of a sound repository.
        let quiet = !self.json && io.verbosity() == Verbosity::Quiet;
        let json = self.json;
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
            match json {
                true => emit(out, serde_json::to_string(&finding).expect("serializes")),
                false => emit(out, &finding),
            }
        })?;
        if quiet {
            return Ok(fsck_status(faults));
        }
        let unplaced = unplaced_manifests(&store)?;
        for manifest in &unplaced {
            emit_either(
                io.out,
                json,
                format_args!(
                    "unplaced manifest {}: {}; restore {} needs --to",
                    manifest.path.display(),
                    manifest.unplaced,
                    manifest.session
                ),
                serde_json::json!({
                    "type": "unplaced_manifest",
                    "path": manifest.path,
                    "session": manifest.session,
                    "why": manifest.unplaced.to_string(),
                }),
            )?;
        }
        let leftovers = restore_leftovers();
        for (path, size) in &leftovers {
            emit_either(
                io.out,
                json,
                format_args!(
                    "leftover restore temp file {} ({}; the next restore of its session removes it)",
                    human::path(path),
                    bytes(*size)
                ),
                serde_json::json!({"type": "leftover_restore_temp", "path": path, "bytes": size}),
            )?;
        }
        let folders = temp_folders(&store)?;
        for (path, size) in &folders {
            emit_either(
                io.out,
                json,
                format_args!(
                    "leftover temp folder {} ({}; a killed sync's staging, gc --apply removes it)",
                    human::path(path),
                    bytes(*size)
                ),
                serde_json::json!({"type": "leftover_temp_folder", "path": path, "bytes": size}),
            )?;
        }
        let depth = if self.full {
            "objects re-hashed, reconstructions checked"
        } else {
            "objects present (--full re-hashes them)"
        };
        emit_either(
            io.out,
            json,
            format_args!(
                "{}, {} (gc removes them{}), {}{}{}; {depth}",
                count(faults, "problem"),
                count(notes, "unreferenced object"),
                if list_notes { "" } else { ", -v lists them" },
                count(unplaced.len() as u64, "unplaced manifest"),
                match leftovers.len() {
                    0 => String::new(),
                    n => format!(", {}", count(n as u64, "leftover restore temp file")),
                },
                match folders.len() {
                    0 => String::new(),
                    n => format!(", {}", count(n as u64, "leftover temp folder")),
                }
            ),
            serde_json::json!({
                "type": "summary",
                "problems": faults,
                "unreferenced_objects": notes,
                "unplaced_manifests": unplaced.len(),
                "leftover_restore_temps": leftovers.len(),
                "leftover_temp_folders": folders.len(),
                "full": self.full,
            }),
        )?;
        crate::commands::mount::note_mounts(io, &store);
        Ok(fsck_status(faults))
    }
}

fn fsck_status(faults: u64) -> Status {
    match faults {
        0 => Status::Success,
        _ => Status::Corrupt,
    }
}

/// The staging folders killed syncs left in the store, with their sizes: none while another
/// ctxfold holds the store lock (a sync running has one).
fn temp_folders(store: &Store) -> Result<Vec<(PathBuf, u64)>> {
    let Some(_lock) = store.try_lock(Mode::Exclusive)? else {
        return Ok(Vec::new());
    };
    Ok(gc::temp_folders(store)?
        .into_iter()
        .map(|dir| {
            let size = gc::folder_bytes(&dir);
            (dir, size)
        })
        .collect())
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
