//! The real agents, pinned, installed with npm into a cached folder: `$CTXFOLD_AGENT_CACHE`, or
//! `agent-cache/` beside cargo's test temp folder (under target/). Codex and Pi share one folder,
//! Claude Code (a 400 MB native binary, installed only by the tests that run it) has its own. A
//! folder that already holds the pinned versions is reused; otherwise npm installs into a temp
//! folder beside it, which is renamed into place only once the agents answer `--version` with the
//! pinned version, so a failed or interrupted install is never taken for a good one.
//!
//! Claude Code's npm package is a wrapper whose postinstall links the platform package's binary
//! (`@anthropic-ai/claude-code-linux-x64`, an optional dependency, also from npm) into place:
//! nothing is downloaded from elsewhere, and it runs without a login given an API key.
//!
//! No npm, no Node.js new enough, or no agent: the test fails and says so. It never skips.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

pub const CODEX_PACKAGE: &str = "@openai/codex@0.169.0";
pub const PI_PACKAGE: &str = "@mariozechner/pi-coding-agent@0.73.1";
pub const CLAUDE_PACKAGE: &str = "@anthropic-ai/claude-code@2.1.332";
const CODEX_VERSION: &str = "codex-cli 0.169.0";
const PI_VERSION: &str = "0.73.1";
const CLAUDE_VERSION: &str = "2.1.332 (Claude Code)";
/// Pi's engines field asks for Node.js >= 20.6.
const NODE_MAJOR: u32 = 20;

pub struct Agents {
    pub codex: PathBuf,
    pub pi: PathBuf,
}

/// The installed agents, once per test process.
pub fn agents() -> &'static Agents {
    static AGENTS: OnceLock<Agents> = OnceLock::new();
    AGENTS.get_or_init(|| {
        install(
            "codex-0.169.0+pi-0.73.1",
            &[CODEX_PACKAGE, PI_PACKAGE],
            found,
        )
        .unwrap_or_else(|e| panic!("the agent tests need the real agents and cannot run: {e}"))
    })
}

/// The installed Claude Code, once per test process.
pub fn claude() -> &'static PathBuf {
    static CLAUDE: OnceLock<PathBuf> = OnceLock::new();
    CLAUDE.get_or_init(|| {
        install("claude-code-2.1.332", &[CLAUDE_PACKAGE], |dir| {
            let claude = dir.join("node_modules/.bin/claude");
            check_version(&claude, CLAUDE_VERSION)?;
            Ok(claude)
        })
        .unwrap_or_else(|e| panic!("the Claude Code tests need the real agent and cannot run: {e}"))
    })
}

fn cache_dir() -> PathBuf {
    match std::env::var_os("CTXFOLD_AGENT_CACHE") {
        Some(dir) => PathBuf::from(dir),
        None => Path::new(env!("CARGO_TARGET_TMPDIR"))
            .parent()
            .unwrap()
            .join("agent-cache"),
    }
}

/// `packages` installed into the cache's folder `name`, as `found` finds them there.
fn install<T>(
    name: &str,
    packages: &[&str],
    found: impl Fn(&Path) -> Result<T, String>,
) -> Result<T, String> {
    check_node()?;
    let cache = cache_dir();
    let dir = cache.join(name);
    if let Ok(agents) = found(&dir) {
        return Ok(agents);
    }
    std::fs::create_dir_all(&cache).map_err(|e| format!("create {}: {e}", cache.display()))?;
    let temp = |prefix: &str| {
        tempfile::Builder::new()
            .prefix(prefix)
            .tempdir_in(&cache)
            .map_err(|e| format!("temp folder in {}: {e}", cache.display()))
    };
    let (fresh, downloads) = (temp(".install-")?, temp(".npm-")?);
    eprintln!(
        "installing {} with npm into {} ...",
        packages.join(" and "),
        dir.display()
    );
    let out = Command::new("npm")
        .args([
            "install",
            "--no-audit",
            "--no-fund",
            "--no-save",
            "--loglevel=error",
            "--prefix",
        ])
        .arg(fresh.path())
        .args(packages)
        // npm's own download cache: out of the home folder, and gone after the install (the
        // installed folder is the cache that matters; this saves its ~250 MB of tarballs).
        .env("npm_config_cache", downloads.path())
        .env("npm_config_update_notifier", "false")
        .output()
        .map_err(|e| {
            format!(
                "npm did not start ({e}): install Node.js >= {NODE_MAJOR} and npm (.ci/run does)"
            )
        })?;
    if !out.status.success() {
        return Err(format!(
            "npm install failed ({}):\n{}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    found(fresh.path())?;
    let fresh = fresh.keep();
    // Another test process may have won the race: theirs is as good as ours.
    if std::fs::rename(&fresh, &dir).is_err() {
        let _ = std::fs::remove_dir_all(&fresh);
    }
    found(&dir)
}

/// Both agents in `dir`, each answering `--version` with the pinned version.
fn found(dir: &Path) -> Result<Agents, String> {
    let bin = dir.join("node_modules/.bin");
    let agents = Agents {
        codex: bin.join("codex"),
        pi: bin.join("pi"),
    };
    for (program, want) in [(&agents.codex, CODEX_VERSION), (&agents.pi, PI_VERSION)] {
        check_version(program, want)?;
    }
    Ok(agents)
}

/// `program --version` says `want`.
fn check_version(program: &Path, want: &str) -> Result<(), String> {
    // Even `--version` may set up a config dir in the home folder: give it a throwaway one.
    let home = tempfile::tempdir().map_err(|e| format!("temp home: {e}"))?;
    let out = Command::new(program)
        .arg("--version")
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", home.path())
        .output()
        .map_err(|e| format!("{}: {e}", program.display()))?;
    // Pi prints its version on stderr.
    let said = String::from_utf8_lossy(if out.stdout.is_empty() {
        &out.stderr
    } else {
        &out.stdout
    });
    if !out.status.success() || said.trim() != want {
        return Err(format!(
            "{} --version said {:?}, want {want:?}",
            program.display(),
            said.trim()
        ));
    }
    Ok(())
}

fn check_node() -> Result<(), String> {
    let out = Command::new("node")
        .arg("--version")
        .output()
        .map_err(|e| {
            format!(
                "node did not start ({e}): install Node.js >= {NODE_MAJOR} and npm (.ci/run does)"
            )
        })?;
    let version = String::from_utf8_lossy(&out.stdout).trim().to_string();
    let major: u32 = version
        .trim_start_matches('v')
        .split('.')
        .next()
        .and_then(|m| m.parse().ok())
        .unwrap_or(0);
    if major < NODE_MAJOR {
        return Err(format!(
            "node {version} is too old: Pi {PI_VERSION} needs Node.js >= 20.6"
        ));
    }
    Ok(())
}
