//! A fork-heavy corpus made of real sessions, for benchmarks: sessions are forked the way agents
//! fork them (a resumed or forked session copies its parent's history, then goes its own way).
//!
//! `fork-corpus [--seed N] [--sessions 182] --from DIR OUT` reads every `*.jsonl` under `DIR`
//! (Codex rollouts, whose first line is `session_meta`, and Pi sessions, whose first line is the
//! `session` header; others are skipped), copies each into `OUT/codex-home/sessions/…` or
//! `OUT/pi-agent/sessions/--fork--/…`, then adds forks until `--sessions` files exist: a fork is a
//! line-aligned prefix of an existing session of the same agent (an original or an earlier fork)
//! followed by a run of lines of another, with its header rewritten to a new session id. The output
//! depends only on the seed and the inputs.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use serde_json::Value;

/// splitmix64, as gen-corpus uses.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Agent {
    Codex,
    Pi,
}

/// A session as lines (each with its `\n`), the first being the header.
struct Session {
    agent: Agent,
    lines: Vec<Vec<u8>>,
}

fn main() {
    if let Err(e) = run() {
        eprintln!("fork-corpus: {e}");
        std::process::exit(2);
    }
}

fn run() -> Result<(), String> {
    let mut seed = 7u64;
    let mut count = 182usize;
    let mut from = None;
    let mut out = None;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let mut value = || args.next().ok_or(format!("{arg} needs a value"));
        match arg.as_str() {
            "--seed" => seed = value()?.parse().map_err(|e| format!("--seed: {e}"))?,
            "--sessions" => count = value()?.parse().map_err(|e| format!("--sessions: {e}"))?,
            "--from" => from = Some(PathBuf::from(value()?)),
            _ if out.is_none() && !arg.starts_with('-') => out = Some(PathBuf::from(arg)),
            _ => {
                return Err(format!(
                    "unexpected {arg:?}; usage: fork-corpus [--seed N] [--sessions N] --from DIR OUT"
                ));
            }
        }
    }
    let (from, out) = from
        .zip(out)
        .ok_or("usage: fork-corpus [--seed N] [--sessions N] --from DIR OUT")?;
    let mut sessions = read_sessions(&from).map_err(|e| format!("{}: {e}", from.display()))?;
    if sessions.is_empty() {
        return Err(format!("no Codex or Pi sessions under {}", from.display()));
    }
    let mut rng = Rng(seed);
    let mut written = 0u64;
    for n in 0..count {
        if n >= sessions.len() {
            let fork = fork(&sessions, &mut rng, n);
            sessions.push(fork);
        }
        written += write(&out, &sessions[n], n).map_err(|e| format!("{}: {e}", out.display()))?;
    }
    eprintln!(
        "fork-corpus: {count} sessions, {written} bytes in {}",
        out.display()
    );
    Ok(())
}

fn read_sessions(dir: &Path) -> io::Result<Vec<Session>> {
    let mut files = Vec::new();
    let mut dirs = vec![dir.to_path_buf()];
    while let Some(dir) = dirs.pop() {
        for entry in fs::read_dir(&dir)? {
            let path = entry?.path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|e| e == "jsonl") {
                files.push(path);
            }
        }
    }
    files.sort();
    let mut sessions = Vec::new();
    for path in files {
        let bytes = fs::read(&path)?;
        let lines: Vec<Vec<u8>> = bytes
            .split_inclusive(|&b| b == b'\n')
            .map(<[u8]>::to_vec)
            .collect();
        let Some(header) = lines
            .first()
            .and_then(|l| serde_json::from_slice::<Value>(l).ok())
        else {
            continue;
        };
        let agent = match header["type"].as_str() {
            Some("session_meta") => Agent::Codex,
            Some("session") => Agent::Pi,
            _ => continue,
        };
        sessions.push(Session { agent, lines });
    }
    Ok(sessions)
}

/// A prefix of one session of some agent, then a run of lines of another of the same agent.
fn fork(sessions: &[Session], rng: &mut Rng, n: usize) -> Session {
    let parent = &sessions[rng.below(sessions.len())];
    let same: Vec<&Session> = sessions
        .iter()
        .filter(|s| s.agent == parent.agent)
        .collect();
    let other = same[rng.below(same.len())];
    let keep = 1 + parent.lines.len() / 3 + rng.below(parent.lines.len() * 2 / 3);
    let body = &other.lines[1..];
    let start = rng.below(body.len());
    let run = 1 + rng.below((body.len() - start).min(400));
    let mut lines: Vec<Vec<u8>> = parent.lines[..keep.min(parent.lines.len())].to_vec();
    lines[0] = with_id(&lines[0], parent.agent, &uuid(rng, n));
    // A parent cut after a line without its newline (the file's last) gets one before the run.
    if let Some(last) = lines.last_mut()
        && !last.ends_with(b"\n")
    {
        last.push(b'\n');
    }
    lines.extend(body[start..start + run].iter().cloned());
    Session {
        agent: parent.agent,
        lines,
    }
}

fn with_id(header: &[u8], agent: Agent, id: &str) -> Vec<u8> {
    let mut value: Value = serde_json::from_slice(header).expect("headers were parsed before");
    match agent {
        Agent::Codex => value["payload"]["id"] = id.into(),
        Agent::Pi => value["id"] = id.into(),
    }
    let mut line = serde_json::to_vec(&value).expect("values serialize");
    line.push(b'\n');
    line
}

fn uuid(rng: &mut Rng, n: usize) -> String {
    let (a, b) = (rng.next(), rng.next());
    format!(
        "{:08x}-{:04x}-7{:03x}-8{:03x}-{:012x}",
        (0x019c_0000 + n as u64) & 0xffff_ffff,
        a & 0xffff,
        (a >> 16) & 0xfff,
        (a >> 28) & 0xfff,
        b & 0xffff_ffff_ffff
    )
}

/// The session's id as its header names it.
fn id_of(session: &Session) -> String {
    let value: Value =
        serde_json::from_slice(&session.lines[0]).expect("headers were parsed before");
    let id = match session.agent {
        Agent::Codex => &value["payload"]["id"],
        Agent::Pi => &value["id"],
    };
    id.as_str().unwrap_or("unknown").to_string()
}

fn write(out: &Path, session: &Session, n: usize) -> io::Result<u64> {
    let id = id_of(session);
    let (day, minute) = (1 + n % 28, n % 60);
    let path = match session.agent {
        Agent::Codex => out.join(format!(
            "codex-home/sessions/2026/03/{day:02}/rollout-2026-03-{day:02}T10-{minute:02}-00-{id}.jsonl"
        )),
        Agent::Pi => out.join(format!(
            "pi-agent/sessions/--fork--/2026-03-{day:02}T10-{minute:02}-00-000Z_{id}.jsonl"
        )),
    };
    fs::create_dir_all(path.parent().expect("a folder"))?;
    let bytes = session.lines.concat();
    fs::write(&path, &bytes)?;
    Ok(bytes.len() as u64)
}
