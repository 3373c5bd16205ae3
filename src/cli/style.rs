//! Colours for people: on where a person reads stdout (a terminal, or the pager standing for one)
//! unless `NO_COLOR` is set (no-color.org), or as `--color` says. Colour is added line by line so
//! that a pager's `-R` and a cut-off line never leave a colour running.

use std::fmt;

/// `--color WHEN`, for the commands that colour their output.
#[derive(Debug, Clone, clap::Args)]
pub struct ColorArgs {
    /// When to colour the output: auto (where a person reads it, unless $NO_COLOR is set),
    /// always, never
    #[arg(long, value_enum, value_name = "WHEN", default_value_t = When::Auto)]
    pub color: When,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum When {
    Auto,
    Always,
    Never,
}

impl ColorArgs {
    /// The style for output that goes to a terminal or not (`super::Io::out_is_terminal`).
    pub fn style(&self, out_is_terminal: bool) -> Style {
        let no_color = std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty());
        Style {
            on: enabled(self.color, out_is_terminal, no_color),
        }
    }
}

/// Whether to colour: `always`, `never`, or (`auto`) on a terminal without `NO_COLOR`.
pub fn enabled(when: When, out_is_terminal: bool, no_color: bool) -> bool {
    match when {
        When::Always => true,
        When::Never => false,
        When::Auto => out_is_terminal && !no_color,
    }
}

/// What a piece of text is, which decides its colour.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// A heading: a turn, a session, a hunk's place.
    Heading,
    /// A person's words.
    User,
    /// A tool call.
    Tool,
    /// A result that went well, a line only the second side has.
    Good,
    /// A result that failed, a line only the first side has.
    Bad,
    /// Asides: thinking, context, elisions.
    Dim,
}

impl Role {
    fn code(self) -> &'static str {
        match self {
            Role::Heading => "1;33",
            Role::User => "1",
            Role::Tool => "36",
            Role::Good => "32",
            Role::Bad => "31",
            Role::Dim => "2",
        }
    }
}

/// Colours on or off.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Style {
    pub on: bool,
}

impl Style {
    pub const PLAIN: Style = Style { on: false };

    /// `text` in `role`'s colour (one line: colour does not run across a newline).
    pub fn paint<T: fmt::Display>(self, role: Role, text: T) -> Painted<T> {
        Painted {
            role: self.on.then_some(role),
            text,
        }
    }
}

/// Text with its colour, for `format!`.
pub struct Painted<T> {
    role: Option<Role>,
    text: T,
}

impl<T: fmt::Display> fmt::Display for Painted<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.role {
            Some(role) => write!(f, "\x1b[{}m{}\x1b[0m", role.code(), self.text),
            None => self.text.fmt(f),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn colour_only_where_a_person_reads_and_no_color_is_unset() {
        assert!(enabled(When::Auto, true, false));
        assert!(!enabled(When::Auto, true, true));
        assert!(!enabled(When::Auto, false, false));
        assert!(enabled(When::Always, false, true));
        assert!(!enabled(When::Never, true, false));
        let on = Style { on: true };
        assert_eq!(on.paint(Role::Bad, "x").to_string(), "\x1b[31mx\x1b[0m");
        assert_eq!(Style::PLAIN.paint(Role::Bad, "x").to_string(), "x");
    }
}
