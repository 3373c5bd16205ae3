//! The command lexicon: the command text a shell-class tool ran (not its JSON argument object), and
//! `$ cmd` lines in output that start with a common tool.

use serde_json::Value;

/// Tools whose arguments carry a shell command.
const SHELL_TOOLS: &[&str] = &[
    "bash",
    "shell",
    "sh",
    "cmd",
    "exec",
    "run",
    "terminal",
    "run_command",
    "shell_command",
    "exec_command",
    "local_shell",
    "container.exec",
];

/// First words that make a `$ …` line a command.
const TOOLS: &[&str] = &[
    "npm", "npx", "pnpm", "yarn", "node", "git", "cargo", "rustc", "python", "python3", "pip",
    "pytest", "go", "make", "ls", "cat", "cd", "rg", "grep", "find", "sed", "docker", "kubectl",
    "curl", "bash", "sh",
];

/// The command a tool call ran, when it is a shell-class call (whatever the case of its name:
/// Claude Code's is `Bash`).
pub fn command_of(tool: &str, args: &Value) -> Option<String> {
    if !SHELL_TOOLS.iter().any(|t| t.eq_ignore_ascii_case(tool)) {
        return None;
    }
    let command = args.get("command").or_else(|| args.get("cmd"))?;
    match command {
        Value::String(text) => Some(text.clone()).filter(|t| !t.trim().is_empty()),
        Value::Array(argv) => {
            let argv: Vec<&str> = argv.iter().filter_map(Value::as_str).collect();
            // `["bash", "-lc", "cargo test"]` ran `cargo test`.
            if let [shell, flag, script] = argv.as_slice()
                && ["bash", "sh", "zsh", "/bin/bash", "/bin/sh", "/bin/zsh"].contains(shell)
                && ["-lc", "-c"].contains(flag)
            {
                return Some(script.to_string());
            }
            let words: Vec<String> = argv.iter().map(|a| quote(a)).collect();
            Some(words.join(" ")).filter(|t| !t.is_empty())
        }
        _ => None,
    }
}

fn quote(word: &str) -> String {
    if !word.is_empty()
        && word
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_./=:,+@%".contains(&b))
    {
        word.to_string()
    } else {
        format!("'{}'", word.replace('\'', r"'\''"))
    }
}

/// The command of each `$ cmd` line of `text` that starts with a common tool, in order. Only the
/// lines holding `$ ` are looked at (output has few).
pub fn prompt_commands<'t>(text: &'t str, mut found: impl FnMut(&'t str)) {
    let bytes = text.as_bytes();
    let finder = memchr::memmem::Finder::new("$ ");
    let mut at = 0;
    while let Some(hit) = finder.find(&bytes[at..]).map(|h| at + h) {
        let start = memchr::memrchr(b'\n', &bytes[..hit]).map_or(0, |p| p + 1);
        let end = memchr::memchr(b'\n', &bytes[hit..]).map_or(text.len(), |p| hit + p);
        if text[start..hit].trim().is_empty()
            && let Some(command) = prompt_command(&text[start..end])
        {
            found(command);
        }
        at = end;
    }
}

/// The command of a `$ cmd` line of output, when it starts with a common tool.
fn prompt_command(line: &str) -> Option<&str> {
    let rest = line.trim_start().strip_prefix("$ ")?.trim();
    let first = rest.split_whitespace().next()?;
    TOOLS.contains(&first).then_some(rest)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn commands_are_the_command_text() {
        assert_eq!(
            command_of("bash", &json!({"command": "ls -la"})).as_deref(),
            Some("ls -la")
        );
        assert_eq!(
            command_of("Bash", &json!({"command": "ls -la", "description": "List"})).as_deref(),
            Some("ls -la")
        );
        assert_eq!(
            command_of(
                "exec_command",
                &json!({"cmd": "cargo test", "workdir": "/r"})
            )
            .as_deref(),
            Some("cargo test")
        );
        assert_eq!(
            command_of("shell", &json!({"command": ["bash", "-lc", "rg foo"]})).as_deref(),
            Some("rg foo")
        );
        assert_eq!(
            command_of("shell", &json!({"command": ["git", "commit", "-m", "a b"]})).as_deref(),
            Some("git commit -m 'a b'")
        );
        assert_eq!(command_of("read", &json!({"path": "a"})), None);
        assert_eq!(prompt_command("$ npm test"), Some("npm test"));
        assert_eq!(prompt_command("$ 5.00 total"), None);
    }

    #[test]
    fn prompt_commands_are_those_of_lines_opening_with_a_prompt() {
        let text = "$ git status\r\n  $ cargo test -q  \nsay $ ls\n$ 5.00\n\t$ npm i $ x\n$ rg";
        let mut found = Vec::new();
        prompt_commands(text, |c| found.push(c));
        assert_eq!(found, ["git status", "cargo test -q", "npm i $ x", "rg"]);
        let by_lines: Vec<&str> = text
            .lines()
            .filter_map(|l| prompt_command(l.trim()))
            .collect();
        assert_eq!(found, by_lines);
    }
}
