//! One module per command, each a clap definition plus `run`. The registry below is the single list
//! that the dispatcher, `ctxfold help -a`, the man pages and the completions are built from, and
//! [`dispatcher`] is `ctxfold`'s own definition, which both parses its command line and documents it.

pub mod cat_manifest;
pub mod cat_object;
pub mod completions;
pub mod diff;
pub mod docs;
pub mod extract_seeds;
pub mod fold;
pub mod fsck;
pub mod gc;
pub mod grep;
pub mod hash_object;
pub mod help;
pub mod install_docs;
pub mod key;
pub mod list_sessions;
pub mod log;
pub mod ls;
pub mod mirror;
pub mod mount;
pub mod read_seeds;
pub mod recall;
pub mod remote;
pub mod repack;
pub mod restore;
pub mod rm;
pub mod secrets;
pub mod seeds;
pub mod show;
pub mod split;
pub mod stats;
pub mod status;
pub mod sync;
pub mod train_dict;
pub mod unpack;
pub mod verify_span;
pub mod version;
pub mod write_manifest;

use std::ffi::OsString;
use std::path::PathBuf;

use clap::ArgAction;

use crate::cli::human::count;
use crate::cli::{EXIT_STATUS, Io, Level, Spec, Status};
use crate::segment::Settings;
use crate::sources::Discovery;

/// Every command, plumbing first, in the order `help -a` lists them.
pub fn registry() -> Vec<Spec> {
    vec![
        Spec::of::<hash_object::HashObjectArgs>(Level::Plumbing),
        Spec::of::<cat_object::CatObjectArgs>(Level::Plumbing),
        Spec::of::<split::SplitArgs>(Level::Plumbing),
        Spec::of::<write_manifest::WriteManifestArgs>(Level::Plumbing),
        Spec::of::<cat_manifest::CatManifestArgs>(Level::Plumbing),
        Spec::of::<list_sessions::ListSessionsArgs>(Level::Plumbing),
        Spec::of::<mirror::MirrorArgs>(Level::Plumbing),
        Spec::of::<extract_seeds::ExtractSeedsArgs>(Level::Plumbing),
        Spec::of::<read_seeds::ReadSeedsArgs>(Level::Plumbing),
        Spec::of::<verify_span::VerifySpanArgs>(Level::Plumbing),
        Spec::of::<train_dict::TrainDictArgs>(Level::Plumbing),
        Spec::of::<fold::FoldArgs>(Level::Porcelain),
        Spec::of::<restore::RestoreArgs>(Level::Porcelain),
        Spec::of::<ls::LsArgs>(Level::Porcelain),
        Spec::of::<log::LogArgs>(Level::Porcelain),
        Spec::of::<show::ShowArgs>(Level::Porcelain),
        Spec::of::<diff::DiffArgs>(Level::Porcelain),
        Spec::of::<status::StatusArgs>(Level::Porcelain),
        Spec::of::<stats::StatsArgs>(Level::Porcelain),
        Spec::of::<fsck::FsckArgs>(Level::Porcelain),
        Spec::of::<gc::GcArgs>(Level::Porcelain),
        Spec::of::<repack::RepackArgs>(Level::Porcelain),
        Spec::of::<unpack::UnpackArgs>(Level::Porcelain),
        Spec::of::<rm::RmArgs>(Level::Porcelain),
        Spec::of::<mount::MountArgs>(Level::Porcelain),
        Spec::of::<mount::UnmountArgs>(Level::Porcelain),
        Spec::of::<key::KeyArgs>(Level::Porcelain),
        Spec::of::<remote::RemoteArgs>(Level::Porcelain),
        Spec::of::<sync::SyncArgs>(Level::Porcelain),
        Spec::of::<sync::CloneArgs>(Level::Porcelain),
        Spec::of::<secrets::SecretsArgs>(Level::Porcelain),
        Spec::of::<seeds::SeedsArgs>(Level::Porcelain),
        Spec::of::<recall::RecallArgs>(Level::Porcelain),
        Spec::of::<grep::GrepArgs>(Level::Porcelain),
        Spec::of::<help::HelpArgs>(Level::Porcelain),
        Spec::of::<version::VersionArgs>(Level::Porcelain),
        Spec::of::<completions::CompletionsArgs>(Level::Porcelain),
        Spec::of::<install_docs::InstallDocsArgs>(Level::Porcelain),
    ]
}

/// The registry entry called `name`, or with the alias `name` (`materialize`).
pub fn find(name: &str) -> Option<Spec> {
    registry()
        .into_iter()
        .find(|spec| spec.names().iter().any(|n| n == name))
}

/// `ctxfold` itself: its options, usage and manual. The dispatcher parses its command line with
/// this: every command is an external subcommand to it, whose arguments the command parses itself
/// (a porcelain command in-process, plumbing in its own binary), as git's commands do.
pub fn dispatcher() -> clap::Command {
    let ctxfold = clap::Command::new("ctxfold")
        .version(env!("CARGO_PKG_VERSION"))
        .about("Keep, shrink, search and sync the history of AI coding-agent sessions")
        .long_about(
            "ctxfold keeps Codex, Pi and Claude Code session transcripts in a deduplicating, content-addressed, \
             zstd-compressed store from which every file comes back byte for byte.\n\n\
             `ctxfold <command>` runs a porcelain command built into the dispatcher, or else executes \
             `ctxfold-<command>` from the exec path: --exec-path=DIR or $CTXFOLD_EXEC_PATH, then \
             <dir of ctxfold>/../libexec/ctxfold, then the directory of ctxfold itself, then $PATH, \
             so `ctxfold-foo` anywhere on $PATH is `ctxfold foo`.\n\n\
             Options before the command are the command's own, as git's are: `ctxfold --store DIR ls` \
             is `ctxfold ls --store DIR` (the store becomes $CTXFOLD_STORE, for every program the \
             command runs too); -q, -v, --no-pager and --color go to a command that takes them.",
        )
        .after_long_help(EXIT_STATUS)
        .override_usage(
            "ctxfold [--exec-path[=DIR]] [--store DIR] [-q|-v] [--no-pager] [--color WHEN] <COMMAND> [<ARGS>]",
        )
        .subcommand_value_name("COMMAND")
        .allow_external_subcommands(true)
        .external_subcommand_value_parser(clap::value_parser!(OsString))
        // `help` is a command of the registry, and `-h` lists the commands as it does.
        .disable_help_subcommand(true)
        .disable_help_flag(true)
        .arg(
            clap::Arg::new("exec-path")
                .long("exec-path")
                .value_name("DIR")
                .num_args(0..=1)
                .action(ArgAction::Append)
                .require_equals(true)
                .value_parser(clap::value_parser!(PathBuf))
                .value_hint(clap::ValueHint::DirPath)
                .help("Without a value, print where plumbing is found; with one, look there first"),
        )
        .arg(
            clap::Arg::new("help")
                .short('h')
                .long("help")
                .action(ArgAction::SetTrue)
                .help("List the commands; before a command, show its manual (as `ctxfold help`)"),
        );
    crate::cli::global::define(ctxfold)
}

/// [`dispatcher`] with every command of the registry as a subcommand: what `ctxfold.1` documents
/// and what shell completion completes.
pub fn dispatcher_with_commands() -> clap::Command {
    registry()
        .iter()
        .fold(dispatcher(), |cmd, spec| cmd.subcommand(spec.subcommand()))
}

/// The segmentation settings as flags (defaults: the contract's).
#[derive(Debug, Clone, clap::Args)]
pub struct SettingsArgs {
    /// String values whose raw token is at least this many bytes become field parts
    #[arg(long, value_name = "BYTES", default_value_t = Settings::default().field_threshold)]
    pub field_threshold: u64,
    /// Lines longer than this (with their newline) are not parsed, only chunked
    #[arg(long, value_name = "BYTES", default_value_t = Settings::default().max_json_line_bytes)]
    pub max_json_line_bytes: u64,
    /// FastCDC minimum chunk size for the bytes between fields
    #[arg(long, value_name = "BYTES", default_value_t = Settings::default().cdc_min_bytes)]
    pub cdc_min_bytes: u64,
    /// FastCDC average chunk size
    #[arg(long, value_name = "BYTES", default_value_t = Settings::default().cdc_average_bytes)]
    pub cdc_average_bytes: u64,
    /// FastCDC maximum chunk size
    #[arg(long, value_name = "BYTES", default_value_t = Settings::default().cdc_max_bytes)]
    pub cdc_max_bytes: u64,
}

impl SettingsArgs {
    pub fn settings(&self) -> crate::error::Result<Settings> {
        let settings = Settings {
            field_threshold: self.field_threshold,
            max_json_line_bytes: self.max_json_line_bytes,
            cdc_min_bytes: self.cdc_min_bytes,
            cdc_average_bytes: self.cdc_average_bytes,
            cdc_max_bytes: self.cdc_max_bytes,
            compression: "zstd".into(),
            dictionary: None,
        };
        settings.check_writable()?;
        Ok(settings)
    }
}

/// `--agent AGENT`: only the sessions of these agents.
#[derive(Debug, Clone, clap::Args)]
pub struct AgentArgs {
    /// Only the sessions of this agent (repeatable)
    #[arg(long = "agent", value_name = "AGENT", value_enum)]
    pub agents: Vec<crate::agents::Agent>,
}

impl AgentArgs {
    /// Whether a folded session is one of the agents asked for (any, when none is): the agent
    /// whose place its `rollout_path` is.
    pub fn keeps(&self, session: &crate::store::manifest::Session) -> bool {
        self.agents.is_empty()
            || crate::agents::place::place(session).is_ok_and(|p| self.agents.contains(&p.agent))
    }
}

/// `--level N`: the zstd level new objects are written at.
#[derive(Debug, Clone, clap::Args)]
pub struct LevelArgs {
    /// zstd level for new objects
    #[arg(long, value_name = "N", default_value_t = crate::odb::DEFAULT_LEVEL, allow_negative_numbers = true)]
    pub level: i32,
}

/// Say what a search for sessions turned up besides sessions: each problem (a path refused) as an
/// error, since it makes the run's status non-zero, and the symbolic links it did not follow, which
/// do not, in one note (each one under `--verbose`). Returns the status the problems give the run.
pub fn report_discovery(io: &mut Io<'_>, discovery: &Discovery) -> Status {
    for problem in &discovery.problems {
        io.error(problem);
    }
    if !discovery.symlinks.is_empty() {
        io.note(format_args!(
            "skipped {} in the session folders (never followed; -v lists them)",
            count(discovery.symlinks.len() as u64, "symbolic link")
        ));
        for link in &discovery.symlinks {
            io.detail(format_args!("skipped symbolic link {}", link.display()));
        }
    }
    if discovery.problems.is_empty() {
        Status::Success
    } else {
        Status::Refused
    }
}
