//! Man pages and shell completion scripts, rendered from the registry's clap definitions.
//!
//! The repository keeps them laid out as they install, `man/man1/` (so `MANPATH` can point at
//! `man/`) and `completions/<shell>/`; `tests/generated_docs.rs` fails when those files drift from
//! what this renders. `ctxfold install-docs` writes the same files where man and the shells look,
//! and `ctxfold completions` prints the scripts.

use std::io::Write;

use clap_complete::env::EnvCompleter;
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

/// The shells ctxfold completes in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Shell {
    Bash,
    Zsh,
    Fish,
}

impl Shell {
    pub const ALL: [Shell; 3] = [Shell::Bash, Shell::Zsh, Shell::Fish];

    pub fn name(self) -> &'static str {
        match self {
            Shell::Bash => "bash",
            Shell::Zsh => "zsh",
            Shell::Fish => "fish",
        }
    }

    /// The file each shell loads the script of `program` from, on demand: bash-completion's
    /// `completions/<program>`, zsh's `_<program>` on `$fpath`, fish's `<program>.fish`.
    pub fn file_name(self, program: &str) -> String {
        match self {
            Shell::Bash => program.to_string(),
            Shell::Zsh => format!("_{program}"),
            Shell::Fish => format!("{program}.fish"),
        }
    }

    /// The completion script of `program` (`ctxfold` or a plumbing binary): clap_complete's
    /// dynamic registration, so the shell asks `program` itself for the candidates as you type
    /// (session ids after `restore`, command names after `help`, files where a path goes).
    pub fn script(self, program: &str) -> Vec<u8> {
        let completer: &dyn EnvCompleter = match self {
            Shell::Bash => &clap_complete::env::Bash,
            Shell::Zsh => &clap_complete::env::Zsh,
            Shell::Fish => &clap_complete::env::Fish,
        };
        let mut script = Vec::new();
        completer
            .write_registration("COMPLETE", program, program, program, &mut script)
            .expect("render to memory");
        if self == Shell::Zsh {
            // Autoloaded from $fpath, the file is the completion function `_<program>` itself, and
            // clap's script only registers the real completer: without this line the first TAB
            // of every shell would complete nothing.
            let function = program.replace('-', "_");
            writeln!(
                script,
                "[[ ${{funcstack[1]}} = _{program} ]] && _clap_dynamic_completer_{function} \"$@\""
            )
            .expect("render to memory");
        }
        script
    }
}

/// Every program people complete: `ctxfold`, and each plumbing binary (also run directly).
pub fn programs() -> Vec<String> {
    let mut programs = vec!["ctxfold".to_string()];
    programs.extend(
        registry()
            .iter()
            .filter(|s| s.level == Level::Plumbing)
            .map(|s| s.invocation()),
    );
    programs
}

/// Every completion script of `shell`: `(file name, script)`.
pub fn completions(shell: Shell) -> Vec<(String, Vec<u8>)> {
    programs()
        .iter()
        .map(|program| (shell.file_name(program), shell.script(program)))
        .collect()
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
