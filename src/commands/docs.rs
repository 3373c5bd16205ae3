//! Man pages and shell completion scripts, rendered from the registry's clap definitions.
//!
//! The repository keeps them under `man/man1/` (so `MANPATH` can point at `man/`) and
//! `completions/`; `tests/generated_docs.rs` fails when those files drift from what this renders.

use clap_complete::Shell;
use clap_mangen::Man;

use super::{dispatcher_with_commands, registry};
use crate::cli::{EXIT_STATUS, Level};

/// Every man page: `(file name, roff)`.
pub fn man_pages() -> Vec<(String, Vec<u8>)> {
    let mut pages = vec![(
        "ctxfold.1".to_string(),
        render_man(dispatcher_with_commands()),
    )];
    for spec in registry() {
        pages.push((format!("ctxfold-{}.1", spec.name), render_man(spec.page())));
    }
    pages
}

/// One man page: clap_mangen's sections, then the exit status table every page carries.
pub fn render_man(cmd: clap::Command) -> Vec<u8> {
    let mut cmd = cmd;
    cmd.build();
    let man = Man::new(cmd.clone())
        .date("")
        .source(format!("ctxfold {}", env!("CARGO_PKG_VERSION")));
    let mut out = Vec::new();
    man.render_title(&mut out).expect("render to memory");
    man.render_name_section(&mut out).expect("render to memory");
    man.render_synopsis_section(&mut out)
        .expect("render to memory");
    man.render_description_section(&mut out)
        .expect("render to memory");
    if cmd.get_arguments().any(|a| !a.is_hide_set()) {
        man.render_options_section(&mut out)
            .expect("render to memory");
    }
    if cmd.has_subcommands() {
        man.render_subcommands_section(&mut out)
            .expect("render to memory");
    }
    out.extend(exit_status_section());
    out
}

/// `EXIT STATUS` as man pages lay it out: a tagged paragraph per status, then the note after the
/// table. The `--help` text carries [`EXIT_STATUS`] as one paragraph; this reads the same text.
fn exit_status_section() -> Vec<u8> {
    let (table, after) = EXIT_STATUS
        .strip_prefix("Exit status: ")
        .and_then(|text| text.split_once(". "))
        .expect("EXIT_STATUS reads `Exit status: 0 …; 1 …. <note>`");
    let mut roff = String::from(".SH \"EXIT STATUS\"\n");
    for item in table.split("; ") {
        let (code, meaning) = item
            .split_once(' ')
            .expect("each status reads `<code> <meaning>`");
        roff.push_str(&format!(".TP\n{code}\n{}\n", roff_text(meaning)));
    }
    roff.push_str(&format!(".PP\n{}\n", roff_text(after)));
    roff.into_bytes()
}

/// Plain text made safe for roff: backslashes escaped, no line starting with a control character.
fn roff_text(text: &str) -> String {
    text.lines()
        .map(|line| {
            let line = line.replace('\\', "\\e");
            if line.starts_with(['.', '\'']) {
                format!("\\&{line}")
            } else {
                line
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Every completion script: `(file name, script)` for bash, zsh and fish, for `ctxfold` and for
/// each plumbing binary (which people also call directly).
pub fn completions() -> Vec<(String, Vec<u8>)> {
    let mut commands = vec![dispatcher_with_commands()];
    commands.extend(
        registry()
            .iter()
            .filter(|s| s.level == Level::Plumbing)
            .map(|s| (s.command)()),
    );
    let mut files = Vec::new();
    for cmd in commands {
        let name = cmd.get_name().to_string();
        for shell in [Shell::Bash, Shell::Zsh, Shell::Fish] {
            let mut script = Vec::new();
            clap_complete::generate(shell, &mut cmd.clone(), &name, &mut script);
            let file = match shell {
                Shell::Bash => format!("{name}.bash"),
                Shell::Zsh => format!("_{name}"),
                _ => format!("{name}.fish"),
            };
            files.push((file, script));
        }
    }
    files
}

#[cfg(test)]
mod tests {
    #[test]
    fn every_exit_status_becomes_a_tagged_paragraph() {
        let section = String::from_utf8(super::exit_status_section()).unwrap();
        for code in 0..=5 {
            assert!(section.contains(&format!(".TP\n{code}\n")), "{section}");
        }
        assert!(section.contains(".PP\nA closed stdout"), "{section}");
    }
}
