//! `ctxfold stats`: what the store holds and what it costs.

use crate::cli::human::bytes;
use crate::cli::{Command, Io, Status, StoreArgs, TalkArgs, emit};
use crate::error::Result;
use crate::store::usage::measure;

/// Show what the store holds: logical, unique raw, stored and disk bytes, objects, ratios
///
/// logical bytes: the folded sessions as they were (every manifest's source size). unique raw
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
