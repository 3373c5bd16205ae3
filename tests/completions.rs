//! Shell completion: `ctxfold completions SHELL`, the answers the binaries give the scripts, and
//! the installed scripts at work in real bash, zsh and fish (zsh and fish when installed).

mod common;

use std::path::{Path, PathBuf};

use common::{Env, Run};
use ctxfold::commands::docs::{Shell, completions};

const SESSIONS: [&str; 3] = [
    "019c8a4c-ed82-79a1-aa28-7738fc5ab61a",
    "019c8a70-dda7-7f33-98ea-f30553347322",
    "019e1625-789d-76c0-80ab-3724b5ddb799",
];

/// A store holding three folded sessions, and the completion scripts installed in the home.
fn world() -> Env {
    let env = Env::new();
    let source = env.path("session.jsonl");
    std::fs::write(&source, "{\"type\":\"session\"}\n").unwrap();
    for id in SESSIONS {
        let parts = env
            .run("ctxfold-split", ["--write".as_ref(), source.as_os_str()])
            .ok()
            .stdout;
        let fields = [
            "--session-id".as_ref(),
            id.as_ref(),
            "--source".as_ref(),
            source.as_os_str(),
        ];
        env.run_with_stdin("ctxfold-write-manifest", fields, &parts)
            .ok();
    }
    env.run("ctxfold", ["install-docs", "-q"]).ok();
    env
}

/// What the script's call `COMPLETE=<shell> ctxfold -- <words>` answers.
fn answer(env: &Env, shell: &str, words: &[&str]) -> Run {
    let mut cmd = env.command("ctxfold");
    cmd.env("COMPLETE", shell)
        .env("_CLAP_COMPLETE_INDEX", (words.len() - 1).to_string())
        .arg("--")
        .args(words);
    Env::output(cmd, b"").ok()
}

#[test]
fn restore_completes_the_folded_session_ids_and_help_the_command_names() {
    let env = world();
    for shell in ["bash", "zsh", "fish"] {
        let ids = answer(&env, shell, &["ctxfold", "restore", "019c"]).stdout_text();
        let ids: Vec<&str> = ids.lines().collect();
        assert_eq!(ids, SESSIONS[..2], "{shell}");
        let names = answer(&env, shell, &["ctxfold", "help", "ver"]).stdout_text();
        assert!(
            names.starts_with("verify-span") && names.contains("\nversion"),
            "{shell}: {names}"
        );
    }
    // `ctxfold <TAB>` offers each command by its name, never an alias in its place, plumbing first
    // as `help -a` lists them.
    let commands = answer(&env, "bash", &["ctxfold", ""]).stdout_text();
    let offered: Vec<&str> = commands
        .lines()
        .take_while(|c| !c.starts_with('-'))
        .collect();
    let registry = ctxfold::commands::registry();
    let names: Vec<&str> = registry.iter().map(|spec| spec.name.as_str()).collect();
    assert_eq!(offered, names);
    // Plumbing binaries answer for themselves, as people run them directly too.
    let mut plumbing = env.command("ctxfold-cat-manifest");
    plumbing
        .env("COMPLETE", "bash")
        .env("_CLAP_COMPLETE_INDEX", "1")
        .args(["--", "ctxfold-cat-manifest", "019e"]);
    let ids = Env::output(plumbing, b"").ok().stdout_text();
    assert_eq!(ids.trim(), SESSIONS[2]);
}

#[test]
fn completions_prints_every_program_s_script_for_the_shell() {
    let env = Env::new();
    for shell in Shell::ALL {
        let printed = env
            .run("ctxfold", ["completions", shell.name()])
            .ok()
            .stdout;
        let expected: Vec<u8> = completions(shell)
            .into_iter()
            .flat_map(|(_, s)| s)
            .collect();
        assert_eq!(printed, expected, "{}", shell.name());
    }
    env.run("ctxfold", ["completions", "tcsh"]).fails(2);
}

fn share(env: &Env) -> PathBuf {
    env.home.join(".local/share")
}

/// `script` in `shell`, or None (and a note) where that shell is not installed. bash always is.
fn in_shell(env: &Env, shell: &str, args: &[&str], script: &str) -> Option<String> {
    if shell != "bash" && common::which(shell).is_none() {
        eprintln!("{shell} is not installed: its completion was checked through the protocol only");
        return None;
    }
    let mut cmd = env.command_for(shell);
    cmd.args(args).arg(script).env(
        "PATH",
        format!(
            "{}:{}",
            common::bin_dir().display(),
            std::env::var("PATH").unwrap()
        ),
    );
    Some(Env::output(cmd, b"").ok().stdout_text())
}

#[test]
fn bash_completes_from_the_installed_script() {
    let env = world();
    // What bash-completion does on the first TAB: source completions/ctxfold from the user's
    // folder (where it is installed; the loader itself, when present, is checked below).
    let script = format!(
        "source '{}'\n\
         COMP_WORDS=(ctxfold restore 019c); COMP_CWORD=2\n\
         _clap_complete_ctxfold ctxfold 019c restore\n\
         printf '%s\\n' \"${{COMPREPLY[@]}}\"",
        share(&env)
            .join("bash-completion/completions/ctxfold")
            .display()
    );
    let out = in_shell(&env, "bash", &["-c"], &script).unwrap();
    assert_eq!(out.lines().collect::<Vec<_>>(), SESSIONS[..2]);
    let loader = Path::new("/usr/share/bash-completion/bash_completion");
    if !loader.is_file() {
        eprintln!("bash-completion is not installed: its loader was not run");
        return;
    }
    let script = format!(
        "source {}\n_completion_loader ctxfold\ncomplete -p ctxfold",
        loader.display()
    );
    let out = in_shell(&env, "bash", &["-c"], &script).unwrap();
    assert!(out.contains("-F _clap_complete_ctxfold ctxfold"), "{out}");
}

#[test]
fn zsh_completes_from_fpath_on_the_first_tab() {
    let env = world();
    // compinit registers the `#compdef` file; the first call of the autoloaded `_ctxfold` must
    // complete already. `_describe` (which needs a live prompt) prints what it is handed instead.
    let script = format!(
        "fpath=('{}' $fpath)\n\
         autoload -Uz compinit && compinit -u -d '{}'\n\
         _describe() {{ print -l -- \"${{(@P)3}}\" }}\n\
         words=(ctxfold restore 019c); CURRENT=3\n\
         $_comps[ctxfold]",
        share(&env).join("zsh/site-functions").display(),
        env.path("zcompdump").display()
    );
    if let Some(out) = in_shell(&env, "zsh", &["-f", "-c"], &script) {
        assert_eq!(out.lines().collect::<Vec<_>>(), SESSIONS[..2]);
    }
}

#[test]
fn fish_completes_from_its_vendor_folder() {
    let env = world();
    if let Some(out) = in_shell(&env, "fish", &["-c"], "complete -C'ctxfold restore 019c'") {
        assert_eq!(out.lines().collect::<Vec<_>>(), SESSIONS[..2]);
    }
}
