//! The dispatcher: exec path, help, "did you mean", extension commands, exit status pass-through.

mod common;

use std::fs;
use std::os::unix::fs::PermissionsExt;

use common::Env;

#[test]
fn exec_path_prints_where_plumbing_is_found() {
    let env = Env::new();
    let out = env.run("ctxfold", ["--exec-path"]).ok();
    assert_eq!(
        out.stdout_text().trim(),
        common::bin_dir().display().to_string()
    );
    let elsewhere = env.path("libexec");
    fs::create_dir_all(&elsewhere).unwrap();
    let arg = format!("--exec-path={}", elsewhere.display());
    let out = env.run("ctxfold", [arg.as_str(), "--exec-path"]).ok();
    assert_eq!(out.stdout_text().trim(), elsewhere.display().to_string());
}

#[test]
fn plumbing_runs_through_the_dispatcher() {
    let env = Env::new();
    let file = env.path("f");
    fs::write(&file, b"abc").unwrap();
    let direct = env.run("ctxfold-hash-object", [&file]).ok().stdout;
    let through = env
        .run("ctxfold", ["hash-object".as_ref(), file.as_os_str()])
        .ok()
        .stdout;
    assert_eq!(direct, through);
    env.run("ctxfold", ["cat-object", "-p", "nothex"]).fails(2);
}

#[test]
fn extension_commands_on_path_run_and_their_status_passes_through() {
    let mut env = Env::new();
    let bin = env.path("bin");
    fs::create_dir_all(&bin).unwrap();
    let script = bin.join("ctxfold-hello");
    fs::write(&script, "#!/bin/sh\necho \"hello $*\"\nexit 7\n").unwrap();
    fs::set_permissions(&script, fs::Permissions::from_mode(0o755)).unwrap();
    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap());
    env.set("PATH", &path);
    let out = env.run("ctxfold", ["hello", "a", "b"]).fails(7);
    assert_eq!(out.stdout_text(), "hello a b\n");
    let listed = env.run("ctxfold", ["help", "-a"]).ok().stdout_text();
    assert!(listed.contains("hello"), "{listed}");
}

#[test]
fn unknown_commands_get_did_you_mean() {
    let env = Env::new();
    env.run("ctxfold", ["restor"])
        .fails(2)
        .one_line_error("did you mean restore");
    env.run("ctxfold", ["cat-objct"])
        .fails(2)
        .one_line_error("cat-object");
    env.run("ctxfold", ["zzzzzz"])
        .fails(2)
        .one_line_error("'zzzzzz' is not a ctxfold command");
    let bare = env.run("ctxfold", Vec::<&str>::new()).fails(2);
    assert!(
        bare.stderr
            .starts_with("Usage: ctxfold [--exec-path[=DIR]] [--store DIR] [-q|-v] [--no-pager]"),
        "{}",
        bare.stderr
    );
}

/// The first line of stderr for each way ctxfold can fail: the dispatcher's own options, an
/// unknown command, a porcelain command, plumbing run through the dispatcher and directly, a
/// program the dispatcher cannot run.
#[test]
fn every_error_names_the_program_as_it_was_run() {
    let mut env = Env::new();
    let bin = env.path("bin");
    fs::create_dir_all(&bin).unwrap();
    // A script whose interpreter cannot be executed: exec itself fails (EACCES).
    let interpreter = env.path("not-executable");
    fs::write(&interpreter, "").unwrap();
    let broken = bin.join("ctxfold-broken");
    fs::write(&broken, format!("#!{}\n", interpreter.display())).unwrap();
    fs::set_permissions(&broken, fs::Permissions::from_mode(0o755)).unwrap();
    env.set(
        "PATH",
        format!("{}:{}", bin.display(), std::env::var("PATH").unwrap()),
    );
    let missing = "0".repeat(64);
    let cases: [(&str, &[&str], i32, &str); 9] = [
        (
            "ctxfold",
            &["--bogus"],
            2,
            "ctxfold: error: unexpected argument '--bogus' found",
        ),
        (
            "ctxfold",
            &["restor"],
            2,
            "ctxfold: error: 'restor' is not a ctxfold command",
        ),
        (
            "ctxfold",
            &["fold", "--bogus"],
            2,
            "ctxfold fold: error: unexpected argument '--bogus'",
        ),
        (
            "ctxfold",
            &["restore", "nope"],
            1,
            "ctxfold restore: error: ",
        ),
        (
            "ctxfold",
            &["help", "nonsense"],
            2,
            "ctxfold help: error: 'nonsense' is not a ctxfold command",
        ),
        (
            "ctxfold",
            &["split", "--bogus"],
            2,
            "ctxfold split: error: unexpected argument '--bogus'",
        ),
        (
            "ctxfold",
            &["cat-object", "-p", &missing],
            1,
            "ctxfold cat-object: error: ",
        ),
        (
            "ctxfold-cat-object",
            &["-p", &missing],
            1,
            "ctxfold-cat-object: error: ",
        ),
        ("ctxfold", &["broken"], 5, "ctxfold: error: run "),
    ];
    for (program, args, code, first_line) in cases {
        let run = env.run(program, args).fails(code);
        assert!(
            run.stderr.starts_with(first_line),
            "{program} {args:?}: {}",
            run.stderr
        );
    }
    // And usage lines spell the command as it was run.
    let run = env.run("ctxfold", ["split", "--bogus"]).fails(2);
    assert!(
        run.stderr.contains("Usage: ctxfold split [OPTIONS] <FILE>"),
        "{}",
        run.stderr
    );
}

#[test]
fn version_is_a_command_and_an_option_of_every_program() {
    let env = Env::new();
    let version = format!("ctxfold {}\n", env!("CARGO_PKG_VERSION"));
    for args in [&["version"][..], &["--version"], &["-V"]] {
        assert_eq!(
            env.run("ctxfold", args).ok().stdout_text(),
            version,
            "{args:?}"
        );
    }
    let of = |program: &str, args: &[&str]| env.run(program, args).ok().stdout_text();
    let v = env!("CARGO_PKG_VERSION");
    assert_eq!(
        of("ctxfold", &["fold", "--version"]),
        format!("ctxfold fold {v}\n")
    );
    assert_eq!(
        of("ctxfold", &["split", "--version"]),
        format!("ctxfold split {v}\n")
    );
    assert_eq!(
        of("ctxfold-split", &["--version"]),
        format!("ctxfold-split {v}\n")
    );
}

#[test]
fn help_spells_usage_as_commands_are_run() {
    let env = Env::new();
    let fold = env.run("ctxfold", ["help", "fold"]).ok().stdout_text();
    assert!(fold.contains("Usage: ctxfold fold [OPTIONS]"), "{fold}");
    assert!(!fold.contains("ctxfold-fold"), "{fold}");
    // `--help COMMAND` is `help COMMAND`, as git's.
    assert_eq!(
        env.run("ctxfold", ["--help", "fold"]).ok().stdout_text(),
        fold
    );
    assert_eq!(
        env.run("ctxfold", ["-h"]).ok().stdout,
        env.run("ctxfold", ["help"]).ok().stdout
    );
    let split = env.run("ctxfold", ["help", "split"]).ok().stdout_text();
    assert!(
        split.contains("Usage: ctxfold-split [OPTIONS] <FILE>"),
        "{split}"
    );
    let page = env.run("ctxfold", ["help", "ctxfold"]).ok().stdout_text();
    assert!(
        page.contains("Usage: ctxfold [--exec-path[=DIR]] [--store DIR] [-q|-v]"),
        "{page}"
    );
}

#[test]
fn help_lists_commands_and_shows_long_help_without_a_terminal() {
    let env = Env::new();
    let short = env.run("ctxfold", ["help"]).ok().stdout_text();
    assert!(
        short.contains("restore") && !short.contains("hash-object"),
        "{short}"
    );
    let all = env.run("ctxfold", ["help", "-a"]).ok().stdout_text();
    for spec in ctxfold::commands::registry() {
        assert!(all.contains(&spec.name), "help -a lacks {}", spec.name);
    }
    let page = env.run("ctxfold", ["help", "split"]).ok().stdout_text();
    assert!(
        page.contains("--field-threshold") && page.contains("FastCDC"),
        "{page}"
    );
    let alias = env
        .run("ctxfold", ["help", "materialize"])
        .ok()
        .stdout_text();
    assert!(alias.contains("--overwrite"));
    env.run("ctxfold", ["help", "nonsense"]).fails(2);
    assert!(
        env.run("ctxfold", ["--version"])
            .ok()
            .stdout_text()
            .starts_with("ctxfold ")
    );
}

#[test]
fn porcelain_usage_errors_exit_2() {
    let env = Env::new();
    env.run("ctxfold", ["restore"]).fails(2);
    env.run("ctxfold", ["restore", "x", "--bogus"]).fails(2);
    let help = env.run("ctxfold", ["restore", "--help"]).ok().stdout_text();
    assert!(help.contains("ctxfold restore"), "{help}");
}

#[test]
fn options_before_the_command_are_the_commands_own() {
    let env = Env::new();
    let other = env.path("other-store");
    let other = other.to_str().unwrap();
    let file = common::own_fixture(common::own::CODEX_AGENT_SMALL);
    let id = "01a22ec3-2142-7dc0-ba9d-93c0133f1498";
    let fold = [
        "--store",
        other,
        "-q",
        "fold",
        "--apply",
        file.to_str().unwrap(),
    ];
    let run = env.run("ctxfold", fold).ok();
    assert_eq!(run.stderr, "", "-q reaches fold");
    let listed = env.run("ctxfold", ["--store", other, "ls"]).ok();
    assert!(
        listed.stdout_text().contains(id),
        "{}",
        listed.stdout_text()
    );
    // The default store was not touched; plumbing takes the store too.
    assert!(!env.store.exists());
    let bytes = env
        .run("ctxfold", ["--store", other, "cat-manifest", id])
        .ok();
    assert_eq!(bytes.stdout, fs::read(&file).unwrap());
    // The option after the command wins, as it would over $CTXFOLD_STORE.
    env.run(
        "ctxfold",
        ["--store", "/nonexistent", "ls", "--store", other],
    )
    .ok();

    let shown = ["--store", other, "--color=always", "--no-pager", "show", id];
    let shown = env.run("ctxfold", shown).ok().stdout_text();
    assert!(shown.starts_with("\x1b["), "{shown}");
    // A command that has no such option is not refused it (as git's --no-pager).
    env.run("ctxfold", ["-q", "--no-pager", "version"]).ok();
    let both = env.run("ctxfold", ["-q", "-v", "ls"]).fails(2);
    assert!(
        both.stderr.contains("cannot be used with"),
        "{}",
        both.stderr
    );
}
