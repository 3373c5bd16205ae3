//! `ctxfold-verify-span`: one block's text, located in its ledger and checked against a sha256.

use std::collections::HashSet;
use std::io::BufRead;
use std::path::PathBuf;

use crate::blocks::block::sha256_hex;
use crate::cli::{Command, Io, Status, StoreArgs};
use crate::error::{Error, Result, stdout_failed};
use crate::ledger::Ledger;

use super::extract_seeds::with_ledger;

/// Print a span's block text after checking it against its sha256
///
/// The block is located in the ledger as the context-fold extension's resolver does: the latest
/// block with that id over every branch, or for `<id>:edit:<editId>` the target of that `context_edit`
/// with its replacement applied (see ctxfold-extract-seeds(1) for the block model of Pi sessions and
/// Codex rollouts). With `--sha256` the text reaches stdout, exactly and with nothing added, only when
/// its sha256 matches; without it the text is served with a warning on stderr that it is unverified
/// (a v1 span carries no sha256). With `--session ID` the ledger is the folded session streamed out of
/// the store, for when the source file is gone: `ctxfold-verify-span --session ID BLOCKID`.
///
/// `--batch` checks many spans in one pass over the ledger: stdin holds one `BLOCKID<TAB>SHA256` per
/// line (the sha256 may be left out), stdout gets `BLOCKID<TAB>verified|unverified|mismatch|missing`
/// per line and no text; the exit status is 1 when any span is a mismatch or missing.
#[derive(Debug, clap::Parser)]
#[command(name = "ctxfold-verify-span", version, after_long_help = crate::cli::EXIT_STATUS)]
#[command(
    override_usage = "ctxfold-verify-span [OPTIONS] LEDGER BLOCKID\n       ctxfold-verify-span [OPTIONS] --session ID BLOCKID"
)]
pub struct VerifySpanArgs {
    /// LEDGER BLOCKID, or BLOCKID alone with --session (no BLOCKID with --batch)
    #[arg(value_name = "LEDGER|BLOCKID", num_args = 0..=2)]
    pub args: Vec<String>,
    /// Check the spans listed on stdin (`BLOCKID<TAB>SHA256` lines)
    #[arg(long, conflicts_with = "sha256")]
    pub batch: bool,
    /// The span's sha256 (hex): the text is printed only if it matches
    #[arg(long, value_name = "HEX")]
    pub sha256: Option<String>,
    /// Read the folded session with this id (or unique prefix of one) out of the store
    #[arg(long, value_name = "ID", add = crate::cli::complete::session_ids())]
    pub session: Option<String>,
    #[command(flatten)]
    pub store: StoreArgs,
}

impl Command for VerifySpanArgs {
    fn run(self, io: &mut Io<'_>) -> Result<Status> {
        if self.batch {
            return self.batch(io);
        }
        let (file, block_id) = match (self.session.is_some(), self.args.as_slice()) {
            (false, [ledger, block]) => (Some(PathBuf::from(ledger)), block.clone()),
            (true, [block]) => (None, block.clone()),
            (false, _) => {
                return Err(Error::usage(
                    "give LEDGER and BLOCKID (or --session ID and BLOCKID)",
                ));
            }
            (true, _) => return Err(Error::usage("with --session give BLOCKID only")),
        };
        if let Some(hex) = self
            .sha256
            .as_ref()
            .filter(|h| h.len() != 64 || !h.bytes().all(|b| b.is_ascii_hexdigit()))
        {
            return Err(Error::usage(format!(
                "--sha256 {hex:?} is not 64 hex digits"
            )));
        }
        let wanted: HashSet<String> = [block_id.clone()].into();
        let (found, what) = with_ledger(
            file.as_ref(),
            self.session.as_deref(),
            &self.store,
            &mut |source| {
                let ledger = Ledger::scan(source)?;
                Ok((
                    ledger.resolve(&wanted)?.remove(&block_id),
                    source.describe(),
                ))
            },
        )?;
        let Some(block) = found else {
            return Err(Error::not_found(format!("{what}: no block {block_id:?}")));
        };
        match &self.sha256 {
            Some(expected) => {
                let actual = sha256_hex(&block.text);
                if !actual.eq_ignore_ascii_case(expected) {
                    return Err(Error::differs(format!(
                        "{what}: block {block_id:?} has sha256 {actual}, the span says {expected}"
                    )));
                }
            }
            None => {
                io.warn(format_args!(
                    "{block_id}: no sha256 given, the text is unverified"
                ));
            }
        }
        io.out
            .write_all(block.text.as_bytes())
            .map_err(stdout_failed)?;
        Ok(Status::Success)
    }
}

impl VerifySpanArgs {
    fn batch(&self, io: &mut Io<'_>) -> Result<Status> {
        let file = match (self.session.is_some(), self.args.as_slice()) {
            (false, [ledger]) => Some(PathBuf::from(ledger)),
            (true, []) => None,
            _ => {
                return Err(Error::usage(
                    "--batch takes LEDGER (or --session ID) and reads the spans on stdin",
                ));
            }
        };
        let mut spans = Vec::new();
        for line in (&mut *io.stdin).lines() {
            let line = line.map_err(|e| Error::system("read stdin", e))?;
            if line.is_empty() {
                continue;
            }
            let (id, sha) = match line.split_once('\t') {
                Some((id, sha)) => (id.to_string(), Some(sha.trim().to_ascii_lowercase())),
                None => (line.clone(), None),
            };
            spans.push((id, sha));
        }
        let wanted: HashSet<String> = spans.iter().map(|(id, _)| id.clone()).collect();
        let found = with_ledger(
            file.as_ref(),
            self.session.as_deref(),
            &self.store,
            &mut |source| Ledger::scan(source)?.resolve(&wanted),
        )?;
        let mut all_good = true;
        for (id, sha) in &spans {
            let verdict = match (found.get(id), sha) {
                (None, _) => "missing",
                (Some(_), None) => "unverified",
                (Some(block), Some(sha)) if sha256_hex(&block.text) == *sha => "verified",
                (Some(_), Some(_)) => "mismatch",
            };
            all_good &= matches!(verdict, "verified" | "unverified");
            crate::cli::emit(io.out, format!("{id}\t{verdict}"))?;
        }
        Ok(if all_good {
            Status::Success
        } else {
            Status::Negative
        })
    }
}
