//! The `ctxfold` dispatcher, as git's: porcelain runs in-process, anything else is executed as
//! `ctxfold-<name>` from the exec path, and `help` shows manual pages.
//!
//! Exec path order: `--exec-path=DIR` or `$CTXFOLD_EXEC_PATH`, then `<dir of ctxfold>/../libexec/ctxfold`,
//! then the directory of `ctxfold` itself, then `$PATH`.

use std::ffi::{OsStr, OsString};
use std::io::{IsTerminal, Write};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use crate::cli::{self, Level, docs};
use crate::commands;
use crate::error::{Error, Result};

/// Run the dispatcher with the process's arguments.
pub fn main() -> ExitCode {
    let args: Vec<OsString> = std::env::args_os().collect();
    match dispatch(&args) {
        Ok(code) => code,
        Err(e) => cli::exit_for("ctxfold", Err(e)),
    }
}

fn dispatch(args: &[OsString]) -> Result<ExitCode> {
    let mut explicit: Option<PathBuf> = None;
    let mut rest = args.iter().skip(1);
    let command = loop {
        let Some(arg) = rest.next() else {
            return usage_exit();
        };
        let text = arg.to_string_lossy();
        match text.as_ref() {
            "--exec-path" => {
                let path = ExecPath::new(explicit).plumbing_dir();
                println!("{}", path.display());
                return Ok(ExitCode::SUCCESS);
            }
            "-h" | "--help" => return help(&[]),
            "-V" | "--version" => {
                println!("ctxfold {}", env!("CARGO_PKG_VERSION"));
                return Ok(ExitCode::SUCCESS);
            }
            _ if text.starts_with("--exec-path=") => {
                use std::os::unix::ffi::OsStrExt;
                explicit = Some(PathBuf::from(OsStr::from_bytes(
                    &arg.as_encoded_bytes()[12..],
                )));
            }
            _ if text.starts_with('-') => {
                return Err(Error::usage(format!(
                    "unknown option {text}; see 'ctxfold help'"
                )));
            }
            _ => break text.into_owned(),
        }
    };
    let rest: Vec<OsString> = rest.cloned().collect();
    if command == "help" {
        return help(&rest);
    }
    let registry = commands::registry();
    if let Some(spec) = registry
        .iter()
        .find(|s| s.level == Level::Porcelain && names(&(s.command)()).contains(&command))
    {
        let mut argv = vec![OsString::from(format!("ctxfold {}", spec.name))];
        argv.extend(rest);
        return Ok(cli::run_process(argv, docs::subcommand(spec), spec.run));
    }
    let exec_path = ExecPath::new(explicit);
    match exec_path.find(&format!("ctxfold-{command}")) {
        Some(program) => {
            let error = std::process::Command::new(&program)
                .args(&rest)
                .env("CTXFOLD_EXEC_PATH", exec_path.plumbing_dir())
                .exec();
            Err(Error::io("run", &program, error))
        }
        None => Err(unknown_command(&command, &exec_path)),
    }
}

/// A command's name and its aliases.
fn names(cmd: &clap::Command) -> Vec<String> {
    let mut names = vec![cmd.get_name().trim_start_matches("ctxfold-").to_string()];
    names.extend(cmd.get_all_aliases().map(str::to_string));
    names
}

fn usage_exit() -> Result<ExitCode> {
    let mut err = std::io::stderr();
    let _ = writeln!(
        err,
        "usage: ctxfold [--exec-path[=DIR]] <command> [<args>]\n"
    );
    let _ = write_command_list(&mut err, false);
    Ok(ExitCode::from(2))
}

fn unknown_command(command: &str, exec_path: &ExecPath) -> Error {
    let mut known: Vec<String> = commands::registry()
        .iter()
        .flat_map(|s| names(&(s.command)()))
        .collect();
    known.extend(exec_path.extensions());
    known.push("help".into());
    let mut close: Vec<(f64, String)> = known
        .into_iter()
        .map(|k| (strsim::jaro_winkler(command, &k), k))
        .filter(|(score, k)| *score > 0.8 || k.starts_with(command))
        .collect();
    close.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
    close.dedup_by(|a, b| a.1 == b.1);
    let mut message = format!("'{command}' is not a ctxfold command; see 'ctxfold help -a'");
    if !close.is_empty() {
        let names: Vec<&str> = close.iter().take(3).map(|(_, k)| k.as_str()).collect();
        message.push_str(&format!(" (did you mean {}?)", names.join(", ")));
    }
    Error::usage(message)
}

/// `ctxfold help [-a] [COMMAND]`
fn help(args: &[OsString]) -> Result<ExitCode> {
    let args: Vec<String> = args
        .iter()
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    let all = args.iter().any(|a| a == "-a" || a == "--all");
    let named: Vec<&String> = args.iter().filter(|a| !a.starts_with('-')).collect();
    let mut out = std::io::stdout().lock();
    let Some(name) = named.first() else {
        writeln!(
            out,
            "usage: ctxfold [--exec-path[=DIR]] <command> [<args>]\n"
        )
        .map_err(crate::error::stdout_failed)?;
        write_command_list(&mut out, all)?;
        return Ok(ExitCode::SUCCESS);
    };
    let name = name.trim_start_matches("ctxfold-");
    let cmd = if name == "ctxfold" {
        docs::dispatcher_command()
    } else {
        let registry = commands::registry();
        match registry
            .iter()
            .find(|s| names(&(s.command)()).iter().any(|n| n == name))
        {
            Some(spec) => (spec.command)(),
            None => return Err(unknown_command(name, &ExecPath::new(None))),
        }
    };
    if out.is_terminal() && show_man_page(&cmd)? {
        return Ok(ExitCode::SUCCESS);
    }
    write!(out, "{}", cmd.clone().render_long_help()).map_err(crate::error::stdout_failed)?;
    Ok(ExitCode::SUCCESS)
}

/// Show the page with `man` when it is installed; false when it is not.
fn show_man_page(cmd: &clap::Command) -> Result<bool> {
    let Some(man) = search_path("man") else {
        return Ok(false);
    };
    let page = docs::render_man(cmd.clone());
    let mut file = tempfile::Builder::new()
        .suffix(".1")
        .tempfile()
        .map_err(|e| Error::system("create a temp file", e))?;
    file.write_all(&page)
        .map_err(|e| Error::system("write a temp file", e))?;
    let status = std::process::Command::new(man)
        .arg("-l")
        .arg(file.path())
        .status()
        .map_err(|e| Error::system("run man", e))?;
    Ok(status.success())
}

fn write_command_list(out: &mut dyn Write, all: bool) -> Result<()> {
    let registry = commands::registry();
    let mut text = String::from("Commands for people:\n");
    for spec in registry.iter().filter(|s| s.level == Level::Porcelain) {
        text.push_str(&format!("   {:<16}{}\n", spec.name, spec.summary()));
    }
    if all {
        text.push_str("\nPlumbing, for scripts (ctxfold-<name>):\n");
        for spec in registry.iter().filter(|s| s.level == Level::Plumbing) {
            text.push_str(&format!("   {:<16}{}\n", spec.name, spec.summary()));
        }
        let extensions = ExecPath::new(None).extensions();
        let extensions: Vec<_> = extensions
            .iter()
            .filter(|e| !registry.iter().any(|s| &s.name == *e))
            .collect();
        if !extensions.is_empty() {
            text.push_str("\nFound on the exec path and $PATH:\n");
            for name in extensions {
                text.push_str(&format!("   {name}\n"));
            }
        }
    } else {
        text.push_str("\n'ctxfold help -a' lists the plumbing too; 'ctxfold help <command>' shows its manual.\n");
    }
    out.write_all(text.as_bytes())
        .map_err(crate::error::stdout_failed)
}

/// Where `ctxfold-<name>` programs are looked for, in order.
struct ExecPath {
    dirs: Vec<PathBuf>,
}

impl ExecPath {
    fn new(explicit: Option<PathBuf>) -> Self {
        let mut dirs = Vec::new();
        if let Some(dir) = explicit.or_else(|| {
            std::env::var_os("CTXFOLD_EXEC_PATH")
                .filter(|v| !v.is_empty())
                .map(PathBuf::from)
        }) {
            dirs.push(dir);
        }
        if let Some(own) = std::env::current_exe()
            .ok()
            .and_then(|p| p.parent().map(Path::to_path_buf))
        {
            dirs.push(own.join("../libexec/ctxfold"));
            dirs.push(own);
        }
        if let Some(path) = std::env::var_os("PATH") {
            dirs.extend(std::env::split_paths(&path));
        }
        Self { dirs }
    }

    /// The directory plumbing comes from: the first candidate before $PATH that exists.
    fn plumbing_dir(&self) -> PathBuf {
        let path_dirs = std::env::var_os("PATH")
            .map(|p| std::env::split_paths(&p).count())
            .unwrap_or(0);
        let own = &self.dirs[..self.dirs.len() - path_dirs];
        own.iter()
            .find(|d| d.is_dir())
            .or(own.last())
            .cloned()
            .unwrap_or_default()
    }

    fn find(&self, program: &str) -> Option<PathBuf> {
        self.dirs
            .iter()
            .map(|d| d.join(program))
            .find(|p| is_executable(p))
    }

    /// Names of every `ctxfold-<name>` program on the path.
    fn extensions(&self) -> Vec<String> {
        let mut found: Vec<String> = self
            .dirs
            .iter()
            .filter_map(|d| std::fs::read_dir(d).ok())
            .flatten()
            .filter_map(|e| e.ok())
            .filter(|e| is_executable(&e.path()))
            .filter_map(|e| {
                e.file_name()
                    .to_str()?
                    .strip_prefix("ctxfold-")
                    .map(str::to_string)
            })
            .collect();
        found.sort();
        found.dedup();
        found
    }
}

fn search_path(program: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(program))
        .find(|p| is_executable(p))
}

fn is_executable(path: &Path) -> bool {
    path.metadata()
        .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}
