//! `ctxfold fold`: the sessions on this machine (or the paths named) folded into the store.

use std::io::Write;
use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::agents::{Homes, Titles};
use crate::cli::human::{bytes, count, path};
use crate::cli::{Command, Io, Status, StoreArgs, TalkArgs, Verbosity, emit};
use crate::commands::{AgentArgs, LevelArgs, SettingsArgs, report_discovery};
use crate::error::Result;
use crate::fold::compare::State;
use crate::fold::merges::Merges;
use crate::fold::run::{Progress, fold_all};
use crate::fold::{Action, Options, Removal, Report};
use crate::interrupt::Interrupt;
use crate::sources::{Discovery, discover_titled};
use crate::store::Store;
use crate::store::lock::Mode as LockMode;
use crate::store::writer::WriteStats;

/// Fold sessions into the store (a dry run unless --apply)
///
/// Without PATHS, folds the sessions on this machine: Codex rollouts under $CODEX_HOME (default
/// ~/.codex: sessions/YYYY/MM/DD/rollout-*.jsonl are active, archived_sessions/rollout-*.jsonl and
/// rollout-*.jsonl.zst are archived), Pi sessions under $PI_CODING_AGENT_DIR/sessions (default
/// ~/.pi/agent/sessions) and Claude Code transcripts and their subagents' under
/// $CLAUDE_CONFIG_DIR/projects (default ~/.claude/projects; one that a running Claude Code
/// registered or that changed in the last 10 minutes is active, any other archived); --agent keeps
/// one agent's. With PATHS, folds those files, and every *.jsonl and *.jsonl.zst under those
/// folders. A Codex .jsonl.zst is folded as its decompressed bytes and restores as the plain
/// .jsonl beside it; a plain .jsonl wins over its .zst sibling.
///
/// A dry run reports, per session and in total, the bytes folding would store new, the bytes that
/// dedupe against the store, and the estimated stored (compressed) size; it writes nothing. A part
/// that several sessions of one run share is new in the one that reaches it first and deduped in
/// the others: the totals are exact, but which session a shared part is counted in may differ
/// between a dry run and --apply.
/// --apply commits: every object is stored and synced, a reconstruction from the store is checked
/// against the source's sha256 and size, and only then is the manifest written.
/// Each session's line is printed as it is done, then the totals; with -q only the sessions that
/// were (or would be) folded, refused or failed, or whose source went, and no totals.
///
/// Each session is first compared with what the store holds of it, in the words of ctxfold status:
/// new (not folded yet), up to date (the same sha256: nothing to do), grown (the folded bytes are a
/// prefix of the file: its agent appended to it; folded again, only the new bytes are stored, and
/// for a session of 1 MiB or more only they are hashed, the bytes before checked by the xxh3 the
/// last fold kept in the store's cache), or
/// changed (changed other than by an append: rewritten, truncated). A changed session is refused
/// (status 3) unless --overwrite is given. Whenever a fold replaces a session's manifest, it first
/// keeps the one it replaces as a generation, manifests/generations/<id>/<time>-<grown|changed>-<12
/// hex>.json, which `ctxfold restore ID@N` brings back (ID@1 is the newest) and `ctxfold ls
/// --generations` lists. Fold keeps the newest 3 grown generations of a session and drops older
/// ones (each holds a prefix of a later version, so nothing is lost); a changed generation holds
/// the only copy of its bytes and stays until `ctxfold gc --prune-generations` or `ctxfold rm`.
/// Once 256 or more manifests are loose, --apply packs them at the end (as ctxfold gc does, and
/// only if no other writer holds the store lock), so that the store's file count does not grow
/// with its sessions. A source whose size, mtime, ctime or inode changed while it was read is not committed ("not
/// folded"), and the run ends with status 3.
///
/// A file that is no agent's session must be JSON Lines, its first line that is not blank a
/// JSON object: anything else (a note, a binary named by mistake) is refused with an error and
/// status 3. --force folds it anyway, as opaque bytes: it restores byte for byte, and no seeds are
/// extracted from it. Symbolic links in the session folders are never followed: they are skipped
/// with a note (-v lists them).
///
/// Each session's line is printed as soon as it is done. Ctrl-C stops taking new sessions and lets
/// those in progress finish: what was committed stands, the totals are printed, and the status is
/// 130. A second Ctrl-C stops at once; what the unfinished sessions wrote is unreferenced, and gc
/// removes it. A full disk stops the run too: no session is started after a write finds no room,
/// the first error is said (the other sessions it failed are counted), the totals are printed, and
/// a last line says how many sessions failed for want of space and how many were not started
/// when there are more (status 5); what was committed stands.
///
/// --remove-source removes a source only after its manifest is committed and a reconstruction from
/// the store verified, and only an archived one unless --allow-active is given too, or --older-than
/// AGE: a session whose file has not changed (its mtime) for AGE counts as inactive, whatever its
/// folder (Pi keeps no archive, so this is how Pi sessions are let go). The sources kept as active
/// are counted in one note at the end. Whatever the options, a source another process holds open
/// for writing (as `fuser` finds it: an agent idle in a terminal still holds its session) is kept,
/// and its line names the process: what the agent wrote next would go to a file no name reaches.
/// A source that another fold removed meanwhile, its session safe in the store, is reported up to
/// date. What an agent keeps beside a session file stays, and its line says so (Claude Code's
/// <project>/<session id>/ folder: the whole output of large tool results, subagents' metadata).
/// The folders a removed source leaves empty go too (Codex's sessions/YYYY/MM/DD), never the
/// agent's session tree itself nor a folder holding anything.
///
/// Sessions are folded in parallel, one per core. Under --apply each agent's session folded is
/// also indexed (see ctxfold-extract-seeds; --no-seeds skips it), so `ctxfold recall` finds it: its
/// seed records that the store's seed index of the session lacks are appended to it. A grown
/// session's extraction goes on from where the last fold's ended (a checkpoint in the store's
/// cache, for active sessions of 1 MiB or more): only its appended entries are walked. A session up
/// to date that has no seed index at all (folded with --no-seeds, or by a fold stopped before its
/// seeds) is indexed from the store. The Pi context-fold extension's seed indexes
/// (--<cwd>--/context-fold/<session-id>/seed-index.jsonl) are merged under --apply into the store's
/// as a union of lines, so the index outlives a removed source; the extension's files are never
/// changed, and one unchanged since it was merged (into a session index unchanged since) is not
/// read again. The store keeps seed indexes compressed, as
/// objects packed with the sessions' (see ctxfold-read-seeds). New objects are compressed with the
/// store's current zstd dictionary, if one was trained (ctxfold-train-dict), which the manifest
/// names. A progress bar shows on a terminal.
#[derive(Debug, clap::Parser)]
#[command(name = "ctxfold-fold", version, after_long_help = crate::cli::EXIT_STATUS)]
#[command(arg = crate::cli::dry_run())]
pub struct FoldArgs {
    /// Session files and folders to fold [default: the agents' homes]
    #[arg(value_name = "PATH", value_hint = clap::ValueHint::AnyPath)]
    pub paths: Vec<PathBuf>,
    #[command(flatten)]
    pub agent: AgentArgs,
    /// Commit (without it, a dry run that writes nothing)
    #[arg(long)]
    pub apply: bool,
    /// Fold sessions that changed other than by an append since they were folded, keeping each
    /// folded version as a generation
    #[arg(long)]
    pub overwrite: bool,
    /// Fold named files that are not JSON Lines too, as opaque bytes
    #[arg(long)]
    pub force: bool,
    /// Remove each archived source once its manifest is committed and its reconstruction verified
    #[arg(long)]
    pub remove_source: bool,
    /// With --remove-source, remove active (not archived) sources too
    #[arg(long, requires = "remove_source", conflicts_with = "older_than")]
    pub allow_active: bool,
    /// With --remove-source, count a session unchanged for AGE as inactive: `now`, or a number
    /// with s, m, h, d or w (`30m`, `2d`)
    #[arg(long, value_name = "AGE", requires = "remove_source", value_parser = crate::cli::human::parse_duration)]
    pub older_than: Option<std::time::Duration>,
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
    /// Folded (or, in a dry run, to fold): `new` + `grown` + `changed`.
    fold: u64,
    new: u64,
    grown: u64,
    changed: u64,
    up_to_date: u64,
    needs_overwrite: u64,
    unsettled: u64,
    failed: u64,
    /// Not started: the run was interrupted, or the disk was full, first.
    not_started: u64,
    /// Sources removed (or, in a dry run, to remove).
    removed: u64,
    /// Sources `--remove-source` kept because their sessions are active.
    kept_active: u64,
    /// Sources `--remove-source` kept because another process holds them open for writing.
    kept_open: u64,
    source_bytes: u64,
    #[serde(flatten)]
    stats: WriteStats,
    seed_index_lines: u64,
}

impl Command for FoldArgs {
    fn run(self, io: &mut Io<'_>) -> Result<Status> {
        let mut settings = self.settings.settings()?;
        // A bad --level is a usage error before anything is searched, not a failure per session.
        crate::odb::codec::check_level(self.level.level)?;
        let homes = Homes::from_env()?;
        // Titles read whole are read of the sessions folded only.
        let mut discovery = discover_titled(&homes, &self.paths, &self.agent.agents, Titles::Later);
        if !self.force {
            refuse_opaque(&mut discovery);
        }
        let mut status = report_discovery(io, &discovery);
        let store_path = self.store.path()?;
        if discovery.sessions.is_empty() && discovery.seed_indexes.is_empty() {
            if discovery.problems.is_empty() {
                nothing_found(io, &discovery, &Store::at(&store_path));
            }
            return Ok(status);
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
        let dictionary = store.odb().current_dictionary_bytes()?;
        settings.dictionary = dictionary.as_ref().map(|(digest, _)| *digest);
        let options = Options {
            apply: self.apply,
            overwrite: self.overwrite,
            remove_source: self.remove_source,
            allow_active: self.allow_active,
            inactive_after: self.older_than,
            settings,
            level: self.level.level,
            dictionary,
            seeds: !self.no_seeds,
            session_trees: homes.session_trees(),
        };
        let interrupt = Interrupt::watch(format!(
            "{}: interrupted: finishing the sessions in progress (Ctrl-C again stops at once)",
            io.program()
        ))?;
        let progress = io.progress(
            discovery.sessions.len() as u64,
            "{bar:30} {pos}/{len} sessions {elapsed}",
        );
        let mut totals = Totals {
            not_started: discovery.sessions.len() as u64,
            ..Totals::default()
        };
        // Each group's lines as it commits: an interrupted run has said what it committed. Under
        // -q only what changed or failed: a store of hundreds of sessions is mostly up to date.
        let quiet = io.verbosity() == Verbosity::Quiet && !self.json;
        let mut printed = Ok(());
        let read = || progress.inc(1);
        let stop = || interrupt.requested();
        // Sessions that failed for want of space on the store's disk.
        let mut out_of_space = 0;
        fold_all(
            &store,
            &discovery.sessions,
            &options,
            &Progress {
                read: &read,
                stop: &stop,
            },
            &mut |reports| {
                for report in &reports {
                    totals.add(report);
                    status = status.worst(report.status);
                    if printed.is_ok() && !(quiet && unchanged(report)) {
                        printed = progress.suspend(|| print_report(io.out, report, &self));
                    }
                    // Its line says so on stdout; a failure is said on stderr too, under -q as
                    // well, where a script or a person reading errors looks (a full disk once:
                    // the sessions it failed after the first are counted at the end).
                    let said_full = out_of_space > 0;
                    out_of_space += u64::from(report.out_of_space);
                    if let Some(note) = report
                        .note
                        .as_ref()
                        .filter(|_| matches!(report.status, Status::Corrupt | Status::System))
                        .filter(|_| !(report.out_of_space && said_full))
                    {
                        progress.suspend(|| io.error(format_args!("{}: {note}", report.id)));
                    }
                }
                Ok(())
            },
        )?;
        progress.finish_and_clear();
        printed?;
        if out_of_space > 0 {
            // The run stopped: nothing more is written (no seed index merged, no packing).
            totals.emit(io.out, &self)?;
            // Said when the one error said does not tell it all.
            if out_of_space > 1 || totals.not_started > 0 {
                io.error(format_args!(
                    "the store's disk is full: {} failed for want of space, {} not started; what \
                     was folded stands (make room, then fold again)",
                    count(out_of_space, "session"),
                    count(totals.not_started, "session")
                ));
            }
            return Ok(status.worst(Status::System));
        }
        if interrupt.requested() {
            totals.emit(io.out, &self)?;
            io.warn(format_args!(
                "interrupted: {} not started; what was folded stands (fold again to finish)",
                count(totals.not_started, "session")
            ));
            return Ok(Status::Interrupted);
        }
        let mut merges = match self.apply && !discovery.seed_indexes.is_empty() {
            true => Some(Merges::load(&store)?),
            false => None,
        };
        for index in &discovery.seed_indexes {
            let merged = match &mut merges {
                Some(merges) => merges.merge(&store, index),
                None => crate::store::check_session_id(&index.session_id).map(|()| Some(0)),
            };
            match merged {
                Ok(lines) => {
                    totals.seed_index_lines += lines.unwrap_or(0) as u64;
                    let nothing = lines.is_none() || (self.apply && lines == Some(0));
                    if !(self.json || quiet && nothing) {
                        let verb = match lines {
                            _ if !self.apply => "would merge".into(),
                            Some(lines) => format!("merged {lines} new lines"),
                            None => "merged already".into(),
                        };
                        emit(
                            io.out,
                            format!(
                                "seed index       {}  {verb} from {}",
                                index.session_id,
                                path(&index.path)
                            ),
                        )?;
                    }
                }
                Err(e) => {
                    status = status.worst(e.status());
                    io.error(format_args!("{}: {e}", path(&index.path)));
                }
            }
        }
        if let Some(merges) = &merges {
            merges.save(&store)?;
        }
        if self.apply {
            drop(_lock);
            crate::store::packing::pack_auto(&store)?;
        }
        if !quiet {
            totals.emit(io.out, &self)?;
        }
        if !self.json {
            if totals.needs_overwrite > 0 {
                io.note(format_args!(
                    "{} changed other than by an append since folded: 'ctxfold diff ID' shows \
                     how; --overwrite folds again, keeping each folded version as a generation \
                     (ID@1).",
                    count(totals.needs_overwrite, "session")
                ));
            }
            if totals.kept_active > 0 {
                io.note(format_args!(
                    "kept the sources of {}: --remove-source removes an active session's source \
                     with --allow-active, or once it is unchanged for AGE with --older-than AGE.",
                    count(totals.kept_active, "active session")
                ));
            }
            if totals.kept_open > 0 {
                io.note(format_args!(
                    "kept the sources of {} that another process holds open for writing (an \
                     agent still writing them): fold them again once it has closed them.",
                    count(totals.kept_open, "session")
                ));
            }
            if !self.apply {
                io.note(format_args!(
                    "dry run: nothing was written. Add --apply to fold into {}.",
                    path(store.root())
                ));
            }
        }
        Ok(status)
    }
}

/// A file that is no agent's session must at least be JSON Lines, unless `--force`: a note or a
/// binary named by mistake would otherwise be folded, and fail every later `ctxfold seeds`.
fn refuse_opaque(discovery: &mut Discovery) {
    let Discovery {
        sessions, problems, ..
    } = discovery;
    sessions.retain(|found| {
        if found.agent.is_some() {
            return true;
        }
        match crate::input::is_json_lines(&found.path) {
            Ok(true) => return true,
            Ok(false) => problems.push(format!(
                "{}: not JSON Lines (its first line is not a JSON object); not folded (--force folds it as opaque bytes)",
                found.path.display()
            )),
            Err(e) => problems.push(e.to_string()),
        }
        false
    });
}

/// Whether a session's fold changed nothing and failed at nothing: what -q does not print.
fn unchanged(report: &Report) -> bool {
    report.action == Action::UpToDate
        && !matches!(report.source, Removal::Removed | Removal::WouldRemove)
}

/// A session's line on stdout, flushed: a person (or a script) watching sees each as it is done.
fn print_report(out: &mut dyn Write, report: &Report, args: &FoldArgs) -> Result<()> {
    if args.json {
        emit(
            out,
            serde_json::to_string(report).expect("reports serialize"),
        )?;
    } else {
        emit(out, human_line(report, args.apply))?;
    }
    out.flush().map_err(crate::error::stdout_failed)
}

impl Totals {
    fn add(&mut self, report: &Report) {
        self.not_started -= 1;
        match report.action {
            Action::Fold => {
                self.fold += 1;
                match report.state {
                    Some(State::Grown) => self.grown += 1,
                    Some(State::Changed) => self.changed += 1,
                    _ => self.new += 1,
                }
            }
            Action::UpToDate => self.up_to_date += 1,
            Action::NeedsOverwrite => self.needs_overwrite += 1,
            Action::Unsettled => self.unsettled += 1,
            Action::Failed => self.failed += 1,
        }
        self.sessions += 1;
        match report.source {
            Removal::Removed | Removal::WouldRemove => self.removed += 1,
            Removal::KeptActive => self.kept_active += 1,
            Removal::KeptOpen => self.kept_open += 1,
            Removal::Kept | Removal::Gone => {}
        }
        self.source_bytes += report.source_bytes;
        self.stats += report.stats;
    }

    /// The totals on stdout: a line for people, or `{"total": …}`.
    fn emit(&self, out: &mut dyn Write, args: &FoldArgs) -> Result<()> {
        match args.json {
            true => emit(out, serde_json::json!({ "total": self })),
            false => emit(out, self.line(args.apply)),
        }
    }

    fn line(&self, apply: bool) -> String {
        let mut line = format!(
            "total: {}: {} {} ({} new, {} grown, {} changed), {} up to date, \
             {} changed need --overwrite, {} unsettled, {} failed",
            count(self.sessions, "session"),
            self.fold,
            if apply { "folded" } else { "to fold" },
            self.new,
            self.grown,
            self.changed,
            self.up_to_date,
            self.needs_overwrite,
            self.unsettled,
            self.failed,
        );
        if self.not_started > 0 {
            line.push_str(&format!(", {} not started", self.not_started));
        }
        let removed = match apply {
            true => format!("{} removed", count(self.removed, "source")),
            false => format!("{} to remove", count(self.removed, "source")),
        };
        line.push_str(&format!(
            "; {removed}; source {}, new {} stored as {}, deduped {}",
            bytes(self.source_bytes),
            bytes(self.stats.new_raw_bytes),
            bytes(self.stats.new_stored_bytes),
            bytes(self.stats.dedup_raw_bytes),
        ));
        line
    }
}

/// `<state> <action> <id>  <size>…`: the state in status's words (new, up to date, grown,
/// changed), then what this run did about it.
fn human_line(report: &Report, apply: bool) -> String {
    let state = match report.state {
        Some(State::New) => "new",
        Some(State::UpToDate) => "up to date",
        Some(State::Grown) => "grown",
        Some(State::Changed) => "changed",
        None => "",
    };
    let action = match report.action {
        Action::Fold if apply => "folded",
        Action::Fold => "would fold",
        Action::UpToDate => "",
        Action::NeedsOverwrite => "refused",
        Action::Unsettled => "not folded",
        Action::Failed => "failed",
    };
    let mut line = format!(
        "{state:<11}{action:<11}{}  {}",
        report.id,
        bytes(report.source_bytes)
    );
    if report.action == Action::Fold {
        line.push_str(&format!(
            ": new {} stored as {}, deduped {}",
            bytes(report.stats.new_raw_bytes),
            bytes(report.stats.new_stored_bytes),
            bytes(report.stats.dedup_raw_bytes)
        ));
    }
    if report.kept.is_some() {
        line.push_str(&format!("; previous version kept as {}@1", report.id));
    }
    if let (Action::UpToDate, Some(records)) = (report.action, report.seed_records) {
        line.push_str(&format!(
            "; indexed: {}",
            count(records as u64, "seed record")
        ));
    }
    match report.source {
        Removal::Removed => line.push_str("; source removed"),
        Removal::WouldRemove => line.push_str("; would remove the source"),
        Removal::Kept | Removal::KeptActive | Removal::KeptOpen | Removal::Gone => {}
    }
    if let Some(note) = &report.note {
        line.push_str(&format!("; {note}"));
    }
    line.push_str(&format!("  {}", path(Path::new(&report.path))));
    line
}

/// With nothing to fold, say where we looked, how to name files, and what the store holds.
fn nothing_found(io: &mut Io<'_>, discovery: &Discovery, store: &Store) {
    let mut text = String::from("no sessions found. Looked in:\n");
    for (dir, exists) in &discovery.looked_in {
        text.push_str(&format!(
            "  {}{}\n",
            path(dir),
            if *exists { "" } else { " (missing)" }
        ));
    }
    text.push_str(
        "Set CODEX_HOME, PI_CODING_AGENT_DIR or CLAUDE_CONFIG_DIR if your agents keep sessions elsewhere, \
         or fold files and folders by path: ctxfold fold PATH...\n",
    );
    let held = store.manifest_files().map(|m| m.len()).unwrap_or(0);
    text.push_str(&format!(
        "The store at {} holds {}",
        path(store.root()),
        count(held as u64, "folded session")
    ));
    text.push_str(if held > 0 {
        " ('ctxfold ls' lists them)."
    } else {
        "."
    });
    io.note(text);
}
