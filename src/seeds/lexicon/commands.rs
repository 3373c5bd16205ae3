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

/// The command of a `$ cmd` line of output, when it starts with a common tool.
pub fn prompt_command(line: &str) -> Option<&str> {
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
}
