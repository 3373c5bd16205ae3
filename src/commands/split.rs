//! `ctxfold-split`: segment a file into fold-v1 parts, as JSON Lines; `--write` stores the objects.

use std::io::BufRead;
use std::path::PathBuf;

use crate::cli::{Command, Io, Status, StoreArgs};
use crate::commands::{LevelArgs, SettingsArgs};
use crate::error::{Result, stdout_failed};
use crate::segment::segment;
use crate::store::lock::Mode as LockMode;
use crate::store::writer::{Mode, PartWriter};

/// Segment a session file into fold-v1 parts, printed as JSON Lines
///
/// A `.zst` file (a Codex archive) is segmented as its decompressed bytes.
///
/// Each line of a valid JSON value contributes a field part for every string value (never a key)
/// whose raw token, quotes and escapes as written, is at least --field-threshold bytes; every other
/// byte is cut by FastCDC v2020 into residual parts. The parts concatenate to the input byte for
/// byte, whatever it holds (invalid JSON or UTF-8, CRLF, no final newline).
///
/// Each output line is one manifest part, ready for ctxfold-write-manifest:
/// `{"kind":"field","json_path":"/payload/output","object":{"sha256":"…","raw_bytes":5000}}`
/// (with "stored_bytes" too under --write). Memory is bounded by the longest line, capped by
/// --max-json-line-bytes. Under --write, new objects are hashed and compressed on one thread per
/// core, with the store's current zstd dictionary if it has one (see ctxfold-train-dict).
#[derive(Debug, clap::Parser)]
#[command(name = "ctxfold-split", version, after_long_help = crate::cli::EXIT_STATUS)]
pub struct SplitArgs {
    /// Store each part's object (new ones compressed; present ones only touched)
    #[arg(long)]
    pub write: bool,
    /// The file to segment; `-` for stdin
    #[arg(value_name = "FILE", value_hint = clap::ValueHint::FilePath)]
    pub file: PathBuf,
    #[command(flatten)]
    pub settings: SettingsArgs,
    #[command(flatten)]
    pub level: LevelArgs,
    #[command(flatten)]
    pub store: StoreArgs,
}

impl Command for SplitArgs {
    fn run(self, io: &mut Io<'_>) -> Result<Status> {
        let settings = self.settings.settings()?;
        let what = self.file.display().to_string();
        let mut input: Box<dyn BufRead> = if self.file.as_os_str() == "-" {
            Box::new(&mut *io.stdin)
        } else {
            crate::input::open(&self.file)?
        };
        let what = if self.file.as_os_str() == "-" {
            "<stdin>".to_string()
        } else {
            what
        };
        let out = &mut *io.out;
        if !self.write {
            // Without --write the stored size is unknown: leave it out rather than lie.
            let mut writer = PartWriter::new(Mode::HashOnly, |part| {
                let mut value = serde_json::to_value(&part).expect("parts serialize");
                value["object"]
                    .as_object_mut()
                    .expect("object")
                    .remove("stored_bytes");
                print_line(out, &value)
            });
            segment(&settings, &mut input, &what, &mut writer)?;
            return Ok(Status::Success);
        }
        let store = self.store.init()?;
        let _lock = store.lock(LockMode::Shared, || ())?;
        // The fold's writer: new objects go into one pack, its blocks compressed on every core
        // while this thread reads. The parts are printed once the pack is in place, so that
        // `ctxfold-write-manifest` reading them finds every object.
        let odb = store.odb();
        let mut pack = odb.pack_writer(crate::odb::pack::PackOptions {
            level: self.level.level,
            ..odb.pack_options(false)?
        })?;
        let claimed = Default::default();
        let mut parts = Vec::new();
        let mut writer = PartWriter::new(Mode::Pack(odb, &mut pack, &claimed), |part| {
            parts.push(part);
            Ok(())
        });
        segment(&settings, &mut input, &what, &mut writer)?;
        writer.finish()?;
        odb.commit_pack(pack)?;
        for mut part in parts {
            if part.object.stored_bytes == 0 {
                part.object.stored_bytes = odb.stored_bytes(&part.object.sha256)?.unwrap_or(0);
            }
            print_line(out, &part)?;
        }
        Ok(Status::Success)
    }
}

fn print_line(out: &mut dyn std::io::Write, value: &impl serde::Serialize) -> Result<()> {
    let line = serde_json::to_vec(value).expect("parts serialize");
    out.write_all(&line)
        .and_then(|()| out.write_all(b"\n"))
        .map_err(stdout_failed)
}
