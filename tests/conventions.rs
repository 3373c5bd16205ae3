//! Conventions people bring from git, restic and ripgrep: `-q/--quiet` and `-v/--verbose` on
//! porcelain, `--dry-run` where a command is a dry run by default, `remote` and `remote -v`.

mod common;

use common::Env;
use ctxfold::cli::Level;
use ctxfold::commands::registry;

/// Porcelain that prints only data on stdout and never talks on stderr: nothing to quiet.
const SILENT: [&str; 3] = ["help", "version", "completions"];

#[test]
fn every_porcelain_command_takes_quiet_and_verbose() {
    for spec in registry() {
        if spec.level != Level::Porcelain || SILENT.contains(&spec.name.as_str()) {
            continue;
        }
        let cmd = (spec.command)();
        for (id, short) in [("quiet", 'q'), ("verbose", 'v')] {
            let arg = cmd.get_arguments().find(|a| a.get_id() == id);
            assert!(
                arg.is_some_and(|a| a.get_short() == Some(short)),
                "{} lacks -{short}/--{id}",
                spec.name
            );
        }
    }
}

/// A store with one folded session; and a file of a session not folded yet.
fn world() -> (Env, std::path::PathBuf) {
    let env = Env::new();
    let source = env.path("session.jsonl");
    std::fs::write(&source, "{\"type\":\"session\"}\n").unwrap();
    let parts = env
        .run("ctxfold-split", ["--write".as_ref(), source.as_os_str()])
        .ok()
        .stdout;
    let fields = [
        "--session-id".as_ref(),
        "s1".as_ref(),
        "--source".as_ref(),
        source.as_os_str(),
    ];
    env.run_with_stdin("ctxfold-write-manifest", fields, &parts)
        .ok();
    (env, source)
}

#[test]
fn quiet_silences_the_talk_and_keeps_the_data() {
    let (env, _) = world();
    let talk = env.run("ctxfold", ["gc"]).ok();
    assert!(
        talk.stderr.contains("ctxfold gc: dry run"),
        "{}",
        talk.stderr
    );
    let quiet = env.run("ctxfold", ["gc", "-q"]).ok();
    assert_eq!(quiet.stderr, "");
    assert_eq!(quiet.stdout, talk.stdout);
    env.run("ctxfold", ["gc", "-q", "-v"]).fails(2);
}

#[test]
fn dry_run_is_accepted_where_it_is_the_default_and_refused_with_apply() {
    let (env, source) = world();
    for cmd in registry().iter().map(|s| (s.command)()) {
        let has = |id: &str| cmd.get_arguments().any(|a| a.get_id() == id);
        assert_eq!(has("apply"), has("dry-run"), "{}", cmd.get_name());
    }
    let file = source.as_os_str();
    let plain = env.run("ctxfold", ["fold".as_ref(), file]).ok();
    let dry = env
        .run("ctxfold", ["fold".as_ref(), "--dry-run".as_ref(), file])
        .ok();
    assert_eq!(dry.stdout, plain.stdout);
    env.run("ctxfold", ["gc", "--dry-run"]).ok();
    let both = env.run("ctxfold", ["gc", "--dry-run", "--apply"]).fails(2);
    assert!(
        both.stderr.starts_with(
            "ctxfold gc: error: the argument '--dry-run' cannot be used with '--apply'"
        ),
        "{}",
        both.stderr
    );
}

#[test]
fn remote_alone_lists_names_and_verbose_adds_urls() {
    let fresh = Env::new();
    fresh
        .run("ctxfold", ["remote"])
        .fails(1)
        .one_line_error("not a ctxfold store yet");
    assert!(!fresh.store.exists(), "listing created a store");
    let (env, _) = world();
    env.run(
        "ctxfold",
        ["remote", "add", "origin", "/srv/sessions.git", "-q"],
    )
    .ok();
    env.run(
        "ctxfold",
        ["remote", "add", "usb", "/media/usb/sessions.git"],
    )
    .ok();
    let names = env.run("ctxfold", ["remote"]).ok().stdout_text();
    assert_eq!(names, "origin\nusb\n");
    let urls = "origin\t/srv/sessions.git\nusb\t/media/usb/sessions.git\n";
    assert_eq!(
        env.run("ctxfold", ["remote", "-v"]).ok().stdout_text(),
        urls
    );
    assert_eq!(
        env.run("ctxfold", ["remote", "--verbose"])
            .ok()
            .stdout_text(),
        urls
    );
    assert_eq!(
        env.run("ctxfold", ["remote", "list"]).ok().stdout_text(),
        urls
    );
}

/// The README's command tables name every command of the registry (`ctxfold-<name>` for plumbing,
/// `ctxfold <name>` for porcelain).
#[test]
fn the_readme_tables_name_every_command() {
    let readme =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md")).unwrap();
    let commands = &readme[readme.find("## Commands").expect("a Commands section")..];
    let rows: Vec<&str> = commands.lines().filter(|l| l.starts_with("| `")).collect();
    let missing: Vec<String> = registry()
        .iter()
        .map(|spec| spec.invocation())
        .filter(|invocation| {
            let name = invocation.rsplit([' ', '-']).next().unwrap();
            !rows.iter().any(|row| {
                let cell = row.split('|').nth(1).unwrap_or_default();
                cell.contains(&format!("`{invocation}"))
                    || cell.contains(&format!(" `{name}`"))
                    || cell.contains(&format!(" `{name} "))
            })
        })
        .collect();
    assert!(
        missing.is_empty(),
        "not in the README's tables: {missing:?}"
    );
}

/// As git: adding a remote whose name is taken is refused (3, not a system failure), and
/// `remote rm` is `remote remove`.
#[test]
fn remote_add_of_a_taken_name_is_refused_and_rm_removes() {
    let (env, _) = world();
    env.run("ctxfold", ["remote", "add", "origin", "/srv/a.git"])
        .ok();
    env.run("ctxfold", ["remote", "add", "origin", "/srv/b.git"])
        .fails(3)
        .one_line_error("remote \"origin\" exists already (/srv/a.git)");
    env.run("ctxfold", ["remote", "rm", "origin"]).ok();
    assert_eq!(env.run("ctxfold", ["remote"]).ok().stdout_text(), "");
}
