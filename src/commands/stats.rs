//! `ctxfold stats`: what the store holds and what it costs.

use crate::cli::human::{bytes, count};
use crate::cli::{Command, Io, Status, StoreArgs, TalkArgs, emit};
use crate::error::Result;
use crate::store::usage::{Usage, measure};

/// Show what the store holds: the bytes folded, on disk and saved, then objects and ratios
///
/// It leads with what folding gives: the sessions' bytes folded (as they were), the bytes the
/// store takes on disk now, and what that saves (the difference, and its share of the bytes
/// folded). Then the details. logical bytes: the folded sessions as they were (every manifest's source size). unique raw
/// bytes: the distinct objects they name, after dedupe. stored bytes: the object files, after
/// zstd. disk bytes: the blocks actually allocated for the whole store (st_blocks × 512, which
/// small files round up). Objects are counted by the kind of part that first names them (field or
/// residual), and unreferenced ones apart. seed index bytes: the seed indexes' raw lines, kept in
/// objects (packed and compressed with the rest) listed by seeds/catalog.jsonl. The dedup ratio is logical / unique raw; the compression
/// ratio is unique raw / stored.
#[derive(Debug, clap::Parser)]
#[command(name = "ctxfold-stats", version, after_long_help = crate::cli::EXIT_STATUS)]
pub struct StatsArgs {
    /// One JSON object (JSON Lines)
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub talk: TalkArgs,
    #[command(flatten)]
    pub store: StoreArgs,
}

impl Command for StatsArgs {
    fn run(self, io: &mut Io<'_>) -> Result<Status> {
        let store = self.store.open()?;
        let (usage, problems) = measure(&store)?;
        for problem in &problems {
            io.warn(problem);
        }
        if self.json {
            emit(
                io.out,
                serde_json::to_string(&usage).expect("usage serializes"),
            )?;
        } else {
            emit(io.out, lead(&usage, store.session_ids()?.len() as u64))?;
            let text = format!(
                "manifests          {}\n\
                 logical bytes      {} ({})\n\
                 unique raw bytes   {} ({})\n\
                 stored bytes       {} ({})\n\
                 manifest bytes     {} ({})\n\
                 seed index bytes   {} ({} raw, in {} objects; catalog {})\n\
                 disk bytes         {} ({})\n\
                 objects            {} ({} field, {} residual, {} unreferenced)\n\
                 dedup ratio        {:.2}\n\
                 compression ratio  {:.2}",
                usage.manifests,
                usage.logical_bytes,
                bytes(usage.logical_bytes),
                usage.unique_raw_bytes,
                bytes(usage.unique_raw_bytes),
                usage.stored_bytes,
                bytes(usage.stored_bytes),
                usage.manifest_bytes,
                bytes(usage.manifest_bytes),
                usage.seed_index_bytes,
                bytes(usage.seed_index_bytes),
                usage.seed_objects,
                bytes(usage.seed_catalog_bytes),
                usage.disk_bytes,
                bytes(usage.disk_bytes),
                usage.objects,
                usage.field_objects,
                usage.residual_objects,
                usage.unreferenced_objects,
                usage.dedup_ratio,
                usage.compression_ratio,
            );
            emit(io.out, text)?;
        }
        Ok(if problems.is_empty() {
            Status::Success
        } else {
            Status::Corrupt
        })
    }
}

/// The three lines a user asks about first: folded, on disk, saved.
fn lead(usage: &Usage, sessions: u64) -> String {
    let mut folded = format!(
        "{}: {}",
        bytes(usage.logical_bytes),
        count(sessions, "session")
    );
    if usage.manifests > sessions {
        let others = usage.manifests - sessions;
        folded.push_str(&format!(
            " and {}",
            count(others, "earlier or conflicting version")
        ));
    }
    let saved = match usage.saved_bytes {
        saved if saved >= 0 => format!(
            "{} ({:.0}% of the bytes folded)",
            bytes(saved as u64),
            100.0 * saved as f64 / usage.logical_bytes.max(1) as f64
        ),
        more => format!(
            "nothing yet: the store takes {} more than the sessions",
            bytes(more.unsigned_abs())
        ),
    };
    format!(
        "folded             {folded}\n\
         on disk now        {}\n\
         saved              {saved}\n",
        bytes(usage.disk_bytes),
    )
}
