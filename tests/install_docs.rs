//! The README's set-up line, run as a new user would in an empty home: it installs the binaries,
//! the manual pages and the completion scripts, and man and the shells then find them.
//!
//! `cargo install` itself is simulated (a `cargo` on `$PATH` that links the freshly built binaries
//! into `~/.cargo/bin`, as it would copy them); `ctxfold install-docs` is the real command.

mod common;

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use common::{Env, Run};
use ctxfold::cli::Level;
use ctxfold::commands::docs::{self, Shell};

/// The README's set-up line: the command in its "Set up" section that installs.
fn readme_setup_line() -> String {
    let readme = fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md"))
        .expect("README.md");
    let setup = &readme[readme.find("## Set up").expect("a Set up section")..];
    setup
        .lines()
        .find(|l| l.starts_with("cargo install"))
        .expect("a cargo install line under Set up")
        .to_string()
}

/// A `cargo` that checks it is asked what the README asks and installs what the build made.
fn fake_cargo(env: &Env) -> PathBuf {
    let bin = env.path("fake-cargo");
    fs::create_dir_all(&bin).unwrap();
    let mut programs = vec!["ctxfold".to_string()];
    programs.extend(
        ctxfold::commands::registry()
            .iter()
            .filter(|s| s.level == Level::Plumbing)
            .map(|s| s.invocation()),
    );
    let mut script = String::from(
        "#!/bin/sh\n[ \"$*\" = \"install --locked --path . --root $HOME/.local\" ] || { echo \"unexpected: cargo $*\" >&2; exit 9; }\n\
         mkdir -p \"$HOME/.local/bin\"\n",
    );
    for program in programs {
        script.push_str(&format!(
            "ln -sf '{}' \"$HOME/.local/bin/\"\n",
            common::bin_dir().join(program).display()
        ));
    }
    let cargo = bin.join("cargo");
    fs::write(&cargo, script).unwrap();
    fs::set_permissions(&cargo, fs::Permissions::from_mode(0o755)).unwrap();
    bin
}

/// A fresh home where the README's line has run; `~/.local/bin` on `$PATH` when `local_bin`, as
/// systemd's file hierarchy, Fedora's ~/.bashrc and Debian's ~/.profile (once it exists) put it.
fn installed_with(local_bin: bool) -> (Env, Run) {
    let mut env = Env::new();
    let cargo = fake_cargo(&env);
    let path = format!(
        "{}{}:/usr/bin:/bin",
        match local_bin {
            true => format!("{}:", env.home.join(".local/bin").display()),
            false => String::new(),
        },
        cargo.display()
    );
    env.set("PATH", path);
    let mut line = env.command_for("sh");
    line.arg("-c")
        .arg(readme_setup_line())
        // A user's shell knows nothing of the freshly built binaries.
        .env_remove("CTXFOLD_EXEC_PATH");
    let run = Env::output(line, b"").ok();
    (env, run)
}

fn installed() -> (Env, Run) {
    installed_with(true)
}

fn share(env: &Env) -> PathBuf {
    env.home.join(".local/share")
}

#[test]
fn the_readme_line_installs_every_man_page_and_completion_script() {
    let (env, run) = installed();
    let share = share(&env);
    for (name, roff) in docs::man_pages() {
        let path = share.join("man/man1").join(&name);
        assert_eq!(fs::read(&path).ok(), Some(roff), "{}", path.display());
        assert_eq!(
            fs::metadata(&path).unwrap().permissions().mode() & 0o777,
            0o644,
            "man pages are for everyone to read"
        );
    }
    let dirs = [
        (Shell::Bash, "bash-completion/completions"),
        (Shell::Zsh, "zsh/site-functions"),
        (Shell::Fish, "fish/vendor_completions.d"),
    ];
    for (shell, dir) in dirs {
        for (name, script) in docs::completions(shell) {
            let path = share.join(dir).join(&name);
            assert_eq!(fs::read(&path).ok(), Some(script), "{}", path.display());
        }
    }
    assert_eq!(modes(&share), (vec![0o755], vec![0o644]), "for every user");
    // man finds the pages through ~/.local/bin on PATH: nothing to add.
    assert!(!run.stderr.contains("export"), "{}", run.stderr);
    // Where ~/.local/bin is not on PATH yet, man would not look in ~/.local/share/man: say so.
    let (_, run) = installed_with(false);
    assert!(
        run.stderr.contains("export PATH=") && run.stderr.contains("/.local/bin:$PATH"),
        "no PATH hint: {}",
        run.stderr
    );
}

#[test]
fn man_finds_the_installed_pages_and_reads_them_as_roff() {
    let (env, _) = installed();
    let man_dir = share(&env).join("man");
    let page = man_dir.join("man1/ctxfold-fold.1");
    let roff = fs::read_to_string(&page).unwrap();
    assert!(
        roff.contains(".TH ctxfold-fold 1") && roff.contains(".SH SYNOPSIS\n\\fBctxfold fold\\fR"),
        "not clap_mangen's roff for `ctxfold fold`: {roff}"
    );
    let Some(man) = common::which("man") else {
        eprintln!("man is not installed: checked the page's roff only");
        return;
    };
    // As the hint says: MANPATH with a trailing colon keeps the system's pages too.
    let mut found = env.command_for(&man);
    found
        .args(["-w", "ctxfold-fold"])
        .env("MANPATH", format!("{}:", man_dir.display()));
    let found = Env::output(found, b"").ok();
    assert_eq!(found.stdout_text().trim(), page.display().to_string());
    // man-db also finds `<dir>/../share/man` of each $PATH entry: ~/.local/bin, where the README's
    // line installs the binaries, on PATH is enough.
    let mut found = env.command_for(&man);
    found.args(["-w", "ctxfold-fold"]).env(
        "PATH",
        format!("{}:/usr/bin:/bin", env.home.join(".local/bin").display()),
    );
    let found = Env::output(found, b"").ok();
    assert_eq!(found.stdout_text().trim(), page.display().to_string());
    // Rendered without a troff warning, with the exit status table.
    let mut shown = env.command_for(&man);
    shown
        .arg("-l")
        .arg(&page)
        .env("LC_ALL", "C.UTF-8")
        .env("MANWIDTH", "80");
    let shown = Env::output(shown, b"").ok();
    assert_eq!(shown.stderr, "", "man complained");
    let text = shown.stdout_text();
    assert!(text.contains("EXIT STATUS"), "{text}");
    // man justifies a wrapped synopsis with runs of spaces.
    let words = text.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(words.contains("ctxfold fold"), "{text}");
}

#[test]
fn a_prefix_installs_under_its_share_folder_for_packagers() {
    let env = Env::new();
    let prefix = env.path("pkg/usr/local");
    env.run(
        "ctxfold",
        [
            "install-docs".as_ref(),
            "-q".as_ref(),
            "--prefix".as_ref(),
            prefix.as_os_str(),
        ],
    )
    .ok();
    for file in [
        "share/man/man1/ctxfold.1",
        "share/man/man1/ctxfold-split.1",
        "share/bash-completion/completions/ctxfold",
        "share/zsh/site-functions/_ctxfold",
        "share/fish/vendor_completions.d/ctxfold.fish",
    ] {
        assert!(prefix.join(file).is_file(), "{file} missing");
    }
    // Nothing went to the user's own folders.
    assert!(!env.home.join(".local").exists());
    // For every user: the folders it made 0755, whatever the umask, and the files 0644.
    assert_eq!(modes(&env.path("pkg")), (vec![0o755], vec![0o644]));
}

/// The distinct modes of the folders and of the files under `root`, `root` included.
fn modes(root: &Path) -> (Vec<u32>, Vec<u32>) {
    let (mut dirs, mut files) = (Vec::new(), Vec::new());
    let mut todo = vec![root.to_path_buf()];
    while let Some(path) = todo.pop() {
        let meta = fs::metadata(&path).unwrap();
        let mode = meta.permissions().mode() & 0o777;
        if meta.is_dir() {
            dirs.push(mode);
            todo.extend(fs::read_dir(&path).unwrap().map(|e| e.unwrap().path()));
        } else {
            files.push(mode);
        }
    }
    for modes in [&mut dirs, &mut files] {
        modes.sort();
        modes.dedup();
    }
    (dirs, files)
}

#[test]
fn quiet_says_nothing_and_verbose_names_every_file() {
    let env = Env::new();
    let quiet = env.run("ctxfold", ["install-docs", "-q"]).ok();
    assert_eq!(quiet.stderr, "");
    let verbose = env.run("ctxfold", ["install-docs", "-v"]).ok();
    let page = share(&env).join("man/man1/ctxfold-fold.1");
    assert!(
        verbose
            .stderr
            .contains(&format!("ctxfold install-docs: {}\n", page.display())),
        "{}",
        verbose.stderr
    );
}

/// What `cargo install` builds: release binaries without debug info (with it, each was ~100 MB).
#[test]
fn release_binaries_carry_no_debug_info() {
    let manifest = fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("Cargo.toml"))
        .expect("Cargo.toml");
    let release = manifest
        .split("\n[")
        .find(|section| section.starts_with("profile.release]"))
        .expect("a [profile.release] section");
    let settings: Vec<&str> = release.lines().skip(1).map(str::trim).collect();
    assert!(settings.contains(&"debug = false"), "{release}");
    assert!(settings.contains(&"strip = \"debuginfo\""), "{release}");
}
