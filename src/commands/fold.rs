//! `ctxfold fold`: the sessions on this machine (or the paths named) folded into the store.

use std::path::PathBuf;

use serde::Serialize;

use crate::cli::human::bytes;
use crate::cli::{Command, Io, Status, StoreArgs, TalkArgs, emit};
use crate::commands::{LevelArgs, SettingsArgs};
use crate::error::Result;
use crate::fold::{Action, Options, Removal, Report, fold_session};
use crate::sources::{Discovery, Homes, discover};
use crate::store::Store;
use crate::store::lock::Mode as LockMode;
use crate::store::union::union_lines;
use crate::store::writer::WriteStats;

/// Fold sessions into the store (a dry run unless --apply)
///
/// Without PATHS, folds the sessions on this machine: Codex rollouts under $CODEX_HOME (default
/// ~/.codex: sessions/YYYY/MM/DD/rollout-*.jsonl are active, archived_sessions/rollout-*.jsonl and
/// rollout-*.jsonl.zst are archived) and Pi sessions under $PI_CODING_AGENT_DIR/sessions (default
/// ~/.pi/agent/sessions). With PATHS, folds those files, and every *.jsonl and *.jsonl.zst under
/// those folders. A Codex .jsonl.zst is folded as its decompressed bytes and restores as the plain
/// .jsonl beside it; a plain .jsonl wins over its .zst sibling.
///
/// A dry run reports, per session and in total, the bytes folding would store new, the bytes that
/// dedupe against the store, and the estimated stored (compressed) size; it writes nothing.
/// --apply commits: every object is stored and synced, a reconstruction from the store is checked
/// against the source's sha256 and size, and only then is the manifest written. A session already
/// folded with the same sha256 is up to date; one folded with other bytes (a session that grew) is
/// replaced only with --overwrite (without it, it is listed as "needs overwrite" and skipped, which
/// is not a failure). A source whose size, mtime, ctime or inode changed while it was
/// read is not committed, and the run ends with status 1.
///
/// --remove-source removes a source only after its manifest is committed and a reconstruction from
/// the store verified, and only an archived one unless --allow-active is given too.
///
/// Sessions are folded in parallel, one per core. The Pi context-fold extension's seed indexes
/// (--<cwd>--/context-fold/<session-id>/seed-index.jsonl) are merged under --apply into
/// <store>/context-fold/<session-id>/seed-index.jsonl as a union of lines, so the index outlives a
/// removed source. Under --apply each Codex or Pi session folded is also indexed, from the store,
/// into that same file (see ctxfold-extract-seeds; --no-seeds skips it), so `ctxfold recall` finds
/// it. New objects are compressed with the store's current zstd dictionary, if one was trained
/// (ctxfold-train-dict), which the manifest names. A progress bar shows on a terminal.
#[derive(Debug, clap::Parser)]
#[command(name = "ctxfold-fold", version, after_long_help = crate::cli::EXIT_STATUS)]
#[command(arg = crate::cli::dry_run())]
pub struct FoldArgs {
    /// Session files and folders to fold [default: the Codex and Pi homes]
    #[arg(value_name = "PATH", value_hint = clap::ValueHint::AnyPath)]
    pub paths: Vec<PathBuf>,
    /// Commit (without it, a dry run that writes nothing)
    #[arg(long)]
    pub apply: bool,
    /// Replace the manifest of a session folded earlier with other bytes
    #[arg(long)]
    pub overwrite: bool,
    /// Remove each archived source once its manifest is committed and its reconstruction verified
    #[arg(long)]
    pub remove_source: bool,
    /// With --remove-source, remove active (not archived) sources too
    #[arg(long, requires = "remove_source")]
    pub allow_active: bool,
    /// Do not extract the seed index of the folded sessions
    #[arg(long)]
    pub no_seeds: bool,
    /// One JSON object per session, then one with the totals (JSON Lines)
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub settings: SettingsArgs,
    #[command(flatten)]
    pub level: LevelArgs,
    #[command(flatten)]
    pub talk: TalkArgs,
    #[command(flatten)]
    pub store: StoreArgs,
}

/// The totals line.
#[derive(Debug, Default, Serialize)]
struct Totals {
    sessions: u64,
    fold: u64,
    up_to_date: u64,
    needs_overwrite: u64,
    changed: u64,
    failed: u64,
    removed: u64,
    source_bytes: u64,
    #[serde(flatten)]
    stats: WriteStats,
    seed_index_lines: u64,
}

impl Command for FoldArgs {
    fn run(self, io: &mut Io<'_>) -> Result<Status> {
        let mut settings = self.settings.settings()?;
        // A bad --level is a usage error before anything is searched, not a failure per session.
        crate::store::objects::Encoder::new(self.level.level)?;
        let homes = Homes::from_env()?;
        let discovery = discover(&homes, &self.paths);
        for problem in &discovery.problems {
            io.warn(problem);
        }
        let store_path = self.store.path()?;
        if discovery.sessions.is_empty() && discovery.seed_indexes.is_empty() {
            nothing_found(io, &discovery, &Store::at(&store_path));
            return Ok(if discovery.problems.is_empty() {
                Status::Success
            } else {
                Status::Refused
            });
        }
        let store = if self.apply {
            Store::init(&store_path)?
        } else {
            Store::at(&store_path)
        };
        let _lock = match self.apply {
            true => Some(store.lock(LockMode::Shared, || {
                io.note("waiting for the store lock (held by a gc or another tool)…")
            })?),
            false => None,
        };
        let dictionary = store.current_dictionary_bytes()?;
        settings.dictionary = dictionary.as_ref().map(|(digest, _)| *digest);
        let options = Options {
            apply: self.apply,
            overwrite: self.overwrite,
            remove_source: self.remove_source,
            allow_active: self.allow_active,
            settings,
            level: self.level.level,
            dictionary,
            seeds: !self.no_seeds,
            counted: Default::default(),
        };
        let progress = io.progress(
            discovery.sessions.len() as u64,
            "{bar:30} {pos}/{len} sessions {elapsed}",
        );
        let reports = crate::parallel::map(
            &discovery.sessions,
            || None,
            |encoder, found| fold_session(&store, found, &options, encoder),
            || progress.inc(1),
        );
        progress.finish_and_clear();

        let mut totals = Totals::default();
        for report in &reports {
            totals.add(report);
            if self.json {
                emit(
                    io.out,
                    serde_json::to_string(report).expect("reports serialize"),
                )?;
            } else {
                emit(io.out, human_line(report, self.apply))?;
            }
        }
        let mut status = reports
            .iter()
            .fold(Status::Success, |s, r| s.worst(r.status));
        if !discovery.problems.is_empty() {
            status = status.worst(Status::Refused);
        }
        for index in &discovery.seed_indexes {
            let target = store
                .context_fold_dir()
                .join(&index.session_id)
                .join("seed-index.jsonl");
            let merged = crate::store::check_session_id(&index.session_id).and_then(|()| {
                if self.apply {
                    union_lines(&store.tmp_dir(), &target, &index.path)
                } else {
                    Ok(0)
                }
            });
            match merged {
                Ok(lines) => {
                    totals.seed_index_lines += lines as u64;
                    if !self.json {
                        let verb = if self.apply {
                            format!("merged {lines} new lines")
                        } else {
                            "would merge".into()
                        };
                        emit(
                            io.out,
                            format!(
                                "seed index       {}  {verb} from {}",
                                index.session_id,
                                index.path.display()
                            ),
                        )?;
                    }
                }
                Err(e) => {
                    status = status.worst(e.status());
                    io.warn(format_args!("{}: {e}", index.path.display()));
                }
            }
        }
        if self.json {
            emit(io.out, serde_json::json!({ "total": totals }))?;
        } else {
            emit(io.out, totals.line())?;
            if totals.needs_overwrite > 0 {
                io.note(format_args!(
                    "{} sessions were folded earlier with other bytes: --overwrite replaces them.",
                    totals.needs_overwrite
                ));
            }
            if !self.apply {
                io.note(format_args!(
                    "dry run: nothing was written. Add --apply to fold into {}.",
                    store.root().display()
                ));
            }
        }
        Ok(status)
    }
}

impl Totals {
    fn add(&mut self, report: &Report) {
        self.sessions += 1;
        match report.action {
            Action::Fold => self.fold += 1,
            Action::UpToDate => self.up_to_date += 1,
            Action::NeedsOverwrite => self.needs_overwrite += 1,
            Action::Changed => self.changed += 1,
            Action::Failed => self.failed += 1,
        }
        if report.source == Removal::Removed {
            self.removed += 1;
        }
        self.source_bytes += report.source_bytes;
        self.stats += report.stats;
    }

    fn line(&self) -> String {
        format!(
            "total: {} sessions ({} to fold, {} up to date, {} need --overwrite, {} changed, {} failed, {} sources removed); \
             source {}, new {} stored as {}, deduped {}",
            self.sessions,
            self.fold,
            self.up_to_date,
            self.needs_overwrite,
            self.changed,
            self.failed,
            self.removed,
            bytes(self.source_bytes),
            bytes(self.stats.new_raw_bytes),
            bytes(self.stats.new_stored_bytes),
            bytes(self.stats.dedup_raw_bytes),
        )
    }
}

fn human_line(report: &Report, apply: bool) -> String {
    let action = match report.action {
        Action::Fold if apply => "folded",
        Action::Fold => "would fold",
        Action::UpToDate => "up to date",
        Action::NeedsOverwrite => "needs overwrite",
        Action::Changed => "changed",
        Action::Failed => "failed",
    };
    let mut line = format!("{action:<17}{}  {}", report.id, bytes(report.source_bytes));
    if report.action == Action::Fold {
        line.push_str(&format!(
            ": new {} stored as {}, deduped {}",
            bytes(report.stats.new_raw_bytes),
            bytes(report.stats.new_stored_bytes),
            bytes(report.stats.dedup_raw_bytes)
        ));
    }
    match report.source {
        Removal::Removed => line.push_str("; source removed"),
        Removal::WouldRemove => line.push_str("; would remove the source"),
        Removal::Kept | Removal::KeptActive => {}
    }
    if let Some(note) = &report.note {
        line.push_str(&format!("; {note}"));
    }
    line.push_str(&format!("  {}", report.path));
    line
}

/// With nothing to fold, say where we looked, how to name files, and what the store holds.
fn nothing_found(io: &mut Io<'_>, discovery: &Discovery, store: &Store) {
    let mut text = String::from("no sessions found. Looked in:\n");
    for (dir, exists) in &discovery.looked_in {
        text.push_str(&format!(
            "  {}{}\n",
            dir.display(),
            if *exists { "" } else { " (missing)" }
        ));
    }
    text.push_str(
        "Set CODEX_HOME or PI_CODING_AGENT_DIR if your agents keep sessions elsewhere, or fold files and \
         folders by path: ctxfold fold PATH...\n",
    );
    let held = store.manifest_files().map(|m| m.len()).unwrap_or(0);
    text.push_str(&format!(
        "The store at {} holds {held} folded sessions",
        store.root().display()
    ));
    text.push_str(if held > 0 {
        " ('ctxfold ls' lists them)."
    } else {
        "."
    });
    io.note(text);
}
