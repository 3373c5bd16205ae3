//! One real agent in a sandbox of temp folders: its own home, config dir (`CODEX_HOME`,
//! `PI_CODING_AGENT_DIR` or `CLAUDE_CONFIG_DIR`), temp dir and working directory, pointed at its own mock model on
//! loopback. The environment is cleared: nothing reaches the real home, and no credentials.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use super::install::{agents, claude};
use super::mock::MockModel;
use super::script;

#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Kind {
    Codex,
    Pi,
    Claude,
}

/// A session file an agent wrote.
#[derive(Clone, Debug)]
pub struct Session {
    pub id: String,
    pub path: PathBuf,
}

pub struct Agent {
    pub kind: Kind,
    pub root: tempfile::TempDir,
    pub mock: MockModel,
}

/// A run that hangs is killed after this long, so a broken agent fails the test instead of
/// stalling CI; it bounds the wait, it asserts nothing about speed.
const HANG: Duration = Duration::from_secs(300);

impl Agent {
    pub fn new(kind: Kind) -> Self {
        match kind {
            Kind::Claude => drop(claude()),
            _ => drop(agents()),
        }
        let root = tempfile::tempdir().unwrap();
        let mock = MockModel::start();
        let agent = Self { kind, root, mock };
        for dir in [agent.home(), agent.tmp(), agent.work(), agent.config_dir()] {
            std::fs::create_dir_all(dir).unwrap();
        }
        std::fs::write(agent.work().join("big.log"), script::big_log()).unwrap();
        match kind {
            Kind::Codex => {
                std::fs::write(agent.config_dir().join("config.toml"), agent.codex_config())
                    .unwrap()
            }
            Kind::Pi => {
                std::fs::write(agent.config_dir().join("models.json"), agent.pi_models()).unwrap();
                std::fs::write(agent.config_dir().join("settings.json"), PI_SETTINGS).unwrap();
            }
            Kind::Claude => {}
        }
        agent
    }

    pub fn home(&self) -> PathBuf {
        self.root.path().join("home")
    }
    pub fn tmp(&self) -> PathBuf {
        self.root.path().join("tmp")
    }
    /// The agent's working directory (the "project").
    pub fn work(&self) -> PathBuf {
        self.root.path().join("work")
    }
    /// `CODEX_HOME` or `PI_CODING_AGENT_DIR`.
    pub fn config_dir(&self) -> PathBuf {
        self.root.path().join(match self.kind {
            Kind::Codex => "codex-home",
            Kind::Pi => "pi-agent",
            Kind::Claude => "claude-config",
        })
    }
    /// The variable that points the agent, and ctxfold's session discovery, at `config_dir`.
    pub fn config_var(&self) -> &'static str {
        match self.kind {
            Kind::Codex => "CODEX_HOME",
            Kind::Pi => "PI_CODING_AGENT_DIR",
            Kind::Claude => "CLAUDE_CONFIG_DIR",
        }
    }

    fn codex_config(&self) -> String {
        // Small window and compaction limit: a reply reporting script::COMPACT_TOKENS makes Codex
        // compact before its next turn. The provider is ours; retries off so a mock bug fails fast.
        format!(
            r#"model = "mock-model"
model_provider = "mock"
model_context_window = 100000
model_auto_compact_token_limit = 20000
approval_policy = "never"
sandbox_mode = "danger-full-access"
check_for_update_on_startup = false

[analytics]
enabled = false

[model_providers.mock]
name = "ctxfold mock model"
base_url = "{}"
wire_api = "responses"
request_max_retries = 0
stream_max_retries = 0
"#,
            self.mock.base_url()
        )
    }

    fn pi_models(&self) -> String {
        // contextWindow - reserveTokens (settings) = 36000 < script::COMPACT_TOKENS < 40000.
        serde_json::json!({"providers": {"mock": {
            "baseUrl": self.mock.base_url(),
            "api": "openai-responses",
            "apiKey": "mock-key",
            "models": [{"id": "mock-model", "name": "ctxfold mock model", "reasoning": false, "input": ["text"],
                        "contextWindow": 40000, "maxTokens": 4000,
                        "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0}}],
        }}})
        .to_string()
    }

    /// Every session file the agent has written, sorted.
    pub fn session_files(&self) -> Vec<PathBuf> {
        let mut files = Vec::new();
        let tree = match self.kind {
            Kind::Claude => "projects",
            _ => "sessions",
        };
        let mut stack = vec![self.config_dir().join(tree)];
        while let Some(dir) = stack.pop() {
            let Ok(entries) = std::fs::read_dir(&dir) else {
                continue;
            };
            for entry in entries {
                let path = entry.unwrap().path();
                if path.is_dir() {
                    stack.push(path);
                } else if path.extension().is_some_and(|e| e == "jsonl") {
                    files.push(path);
                }
            }
        }
        files.sort();
        files
    }

    /// Start a new session running `scenario`; returns the session file it wrote.
    pub fn start(&self, scenario: &str) -> Session {
        let before = self.session_files();
        let prompt = script::prompt(scenario);
        let (ok, output) = match self.kind {
            Kind::Codex => self.run(&[
                "exec",
                "--skip-git-repo-check",
                "--dangerously-bypass-approvals-and-sandbox",
                &prompt,
            ]),
            Kind::Pi => self.run(&["-p", "--provider", "mock", "--model", "mock-model", &prompt]),
            Kind::Claude => self.run(&["-p", "--dangerously-skip-permissions", &prompt]),
        };
        assert!(ok, "{:?} failed on {scenario}\n{output}", self.kind);
        let new: Vec<PathBuf> = self
            .session_files()
            .into_iter()
            .filter(|f| !before.contains(f))
            .collect();
        assert_eq!(
            new.len(),
            1,
            "{:?} {scenario}: expected one new session file, got {new:?}",
            self.kind
        );
        let path = new.into_iter().next().unwrap();
        Session {
            id: session_id(&path),
            path,
        }
    }

    /// Resume `session` with the agent's own resume, running `scenario`: it appends to the file.
    pub fn resume(&self, session: &Session, scenario: &str) {
        let (ok, output) = self.try_resume(session, scenario);
        assert!(
            ok,
            "{:?} could not resume {}\n{output}",
            self.kind,
            session.path.display()
        );
    }

    /// Resume, returning whether the agent succeeded, and its output.
    pub fn try_resume(&self, session: &Session, scenario: &str) -> (bool, String) {
        let prompt = script::prompt(scenario);
        let path = session.path.to_str().unwrap();
        match self.kind {
            Kind::Codex => self.run(&[
                "exec",
                "--skip-git-repo-check",
                "--dangerously-bypass-approvals-and-sandbox",
                "resume",
                &session.id,
                &prompt,
            ]),
            Kind::Pi => self.run(&[
                "-p",
                "--provider",
                "mock",
                "--model",
                "mock-model",
                "--session",
                path,
                &prompt,
            ]),
            Kind::Claude => self.run(&[
                "-p",
                "--dangerously-skip-permissions",
                "--resume",
                &session.id,
                &prompt,
            ]),
        }
    }

    /// Run the agent to completion: whether it succeeded, and what it printed. Panics if it hangs.
    fn run(&self, args: &[&str]) -> (bool, String) {
        let program = match self.kind {
            Kind::Codex => &agents().codex,
            Kind::Pi => &agents().pi,
            Kind::Claude => claude(),
        };
        let log = |name: &str| self.root.path().join(format!("{name}.log"));
        let (stdout, stderr) = (log("stdout"), log("stderr"));
        let mut cmd = Command::new(program);
        cmd.args(args)
            .current_dir(self.work())
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", self.home())
            .env("TMPDIR", self.tmp())
            .env("TZ", "UTC")
            .env("LANG", "C.UTF-8")
            .env("NO_COLOR", "1")
            .env(self.config_var(), self.config_dir())
            .stdin(Stdio::null())
            .stdout(std::fs::File::create(&stdout).unwrap())
            .stderr(std::fs::File::create(&stderr).unwrap());
        match self.kind {
            Kind::Pi => {
                cmd.env("PI_OFFLINE", "1").env("PI_SKIP_VERSION_CHECK", "1");
            }
            // An API key is all `-p` needs (no login); no traffic but the model's; the smallest
            // auto-compact window, so that script::CLAUDE_COMPACT_TOKENS compacts; and, since the
            // tests may run as root, the variable that lets root skip permission prompts.
            Kind::Claude => {
                cmd.env("ANTHROPIC_BASE_URL", self.mock.anthropic_base_url())
                    .env("ANTHROPIC_API_KEY", "sk-ant-ctxfold-mock")
                    .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
                    .env("CLAUDE_CODE_AUTO_COMPACT_WINDOW", "100000")
                    .env("IS_SANDBOX", "1");
            }
            Kind::Codex => {}
        }
        let mut child = cmd
            .spawn()
            .unwrap_or_else(|e| panic!("start {}: {e}", program.display()));
        let started = Instant::now();
        let status = loop {
            if let Some(status) = child.try_wait().unwrap() {
                break status;
            }
            if started.elapsed() > HANG {
                let _ = child.kill();
                let _ = child.wait();
                panic!(
                    "{:?} {args:?} hung for {HANG:?}\n{}",
                    self.kind,
                    output(&stdout, &stderr)
                );
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        (
            status.success(),
            format!("{args:?}: {status}\n{}", output(&stdout, &stderr)),
        )
    }
}

fn output(stdout: &Path, stderr: &Path) -> String {
    format!(
        "stdout:\n{}\nstderr:\n{}",
        String::from_utf8_lossy(&std::fs::read(stdout).unwrap_or_default()),
        String::from_utf8_lossy(&std::fs::read(stderr).unwrap_or_default())
    )
}

/// Compaction on, with little kept, so one large turn is enough to compact.
const PI_SETTINGS: &str =
    r#"{"compaction": {"enabled": true, "reserveTokens": 4000, "keepRecentTokens": 2000}}"#;

/// The session id from the file's first line: Codex `session_meta.payload.id`, Pi's header `id`,
/// Claude Code's `sessionId` on every line.
pub fn session_id(path: &Path) -> String {
    let text = std::fs::read_to_string(path).unwrap();
    let first: serde_json::Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
    first["payload"]["id"]
        .as_str()
        .or(first["id"].as_str())
        .or(first["sessionId"].as_str())
        .unwrap_or_else(|| panic!("no session id in {}", path.display()))
        .to_string()
}

/// The JSON lines of a session file.
pub fn lines(path: &Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}
