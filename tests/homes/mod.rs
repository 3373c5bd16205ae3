//! Fake agent homes for the porcelain tests: a `CODEX_HOME` with active, archived, `.jsonl.zst`
//! (one alone, one shadowed by its plain sibling), `session_index.jsonl` and a `state_5.sqlite`, and
//! a Pi agent dir with two sessions and a context-fold seed index, built from a fixture set: the
//! own fixtures, and the public ones too when they are there.
#![allow(dead_code)]

use std::fs;
use std::path::{Path, PathBuf};

use crate::common::{Env, own, own_fixture, public_fixtures_dir, session_files};

/// The sessions a pair of homes is built from.
pub struct Set {
    pub name: &'static str,
    /// Four Codex rollouts, placed in this order: archived (with a shadowed `.zst` sibling),
    /// archived as `.zst` only, then two active ones.
    pub codex: Vec<PathBuf>,
    /// Two Pi sessions.
    pub pi: Vec<PathBuf>,
    /// The titles of the first Codex rollout and the second Pi session: their first user messages.
    pub titles: [&'static str; 2],
}

/// The own set, then the public one when the public fixtures are there.
pub fn sets() -> Vec<Set> {
    let mut sets = vec![Set {
        name: "own",
        codex: [
            own::CODEX_SHELL_CRLF,
            own::CODEX_MID_TURN,
            own::CODEX_AGENT_SMALL,
            own::CODEX_AGENT_WORK,
        ]
        .map(own_fixture)
        .to_vec(),
        pi: [own::PI_V1_COMPACTION, own::PI_AGENT_WORK]
            .map(own_fixture)
            .to_vec(),
        titles: [
            "summarize what this repository does and list its failing checks",
            "ctxfold-scenario:work Please do the work task.",
        ],
    }];
    if let Some(dir) = public_fixtures_dir() {
        let (codex, pi) = session_files(&dir)
            .into_iter()
            .partition(|p| p.parent().unwrap().ends_with("codex"));
        sets.push(Set {
            name: "public",
            codex,
            pi,
            titles: [
                "what is current repository about? summarize purpuse and explain goals",
                "do you know how to create a custom tool?",
            ],
        });
    }
    sets
}

/// Run `test` over homes built from each set in turn, each in an environment of its own.
pub fn each_set(mut test: impl FnMut(Env, Homes)) {
    for set in sets() {
        let mut env = Env::new();
        let homes = build(&mut env, set);
        test(env, homes);
    }
}

/// One session placed in a fake home.
#[derive(Debug, Clone)]
pub struct Placed {
    pub id: String,
    /// The file on disk that fold reads.
    pub path: PathBuf,
    /// Where restore puts it back (the plain `.jsonl` for a `.zst`).
    pub rollout_path: PathBuf,
    /// Its decompressed bytes.
    pub bytes: Vec<u8>,
    pub archived: bool,
}

pub struct Homes {
    /// The fixture set they were built from.
    pub set: Set,
    pub codex: PathBuf,
    pub pi: PathBuf,
    pub sessions: Vec<Placed>,
    /// The `.jsonl.zst` sibling that its plain file shadows (never folded).
    pub shadowed: PathBuf,
    pub seed_index: PathBuf,
}

pub const PI_DIR: &str = "--Users-x-proj--";

impl Homes {
    pub fn get(&self, id: &str) -> &Placed {
        self.sessions
            .iter()
            .find(|s| s.id == id)
            .unwrap_or_else(|| panic!("no session {id}"))
    }

    pub fn archived(&self) -> impl Iterator<Item = &Placed> {
        self.sessions.iter().filter(|s| s.archived)
    }

    pub fn active(&self) -> impl Iterator<Item = &Placed> {
        self.sessions.iter().filter(|s| !s.archived)
    }
}

fn codex_id(path: &Path) -> String {
    let name = path.file_name().unwrap().to_str().unwrap();
    name.trim_end_matches(".jsonl")[name.len() - 6 - 36..].to_string()
}

fn pi_id(bytes: &[u8]) -> String {
    let first = bytes.split(|&b| b == b'\n').next().unwrap();
    let header: serde_json::Value = serde_json::from_slice(first).unwrap();
    header["id"].as_str().unwrap().to_string()
}

/// Build both homes from `set` under the test's temp dir and point the environment at them.
pub fn build(env: &mut Env, set: Set) -> Homes {
    assert_eq!((set.codex.len(), set.pi.len()), (4, 2), "{} set", set.name);
    // Printed with a failure: which set it was.
    eprintln!("homes built from the {} fixtures", set.name);
    let codex = env.path("codex");
    let pi = env.path("pi");
    let mut sessions = Vec::new();
    let archived_dir = codex.join("archived_sessions");
    fs::create_dir_all(&archived_dir).unwrap();
    let mut shadowed = PathBuf::new();
    for (i, source) in set.codex.iter().enumerate() {
        let bytes = fs::read(source).unwrap();
        let name = source.file_name().unwrap().to_str().unwrap().to_string();
        let id = codex_id(source);
        let placed = match i {
            // Archived, plain, with a different .zst sibling that must lose to it.
            0 => {
                let path = archived_dir.join(&name);
                fs::write(&path, &bytes).unwrap();
                shadowed = archived_dir.join(format!("{name}.zst"));
                fs::write(
                    &shadowed,
                    zstd::encode_all(&bytes[..bytes.len() / 2], 3).unwrap(),
                )
                .unwrap();
                Placed {
                    id,
                    rollout_path: path.clone(),
                    path,
                    bytes,
                    archived: true,
                }
            }
            // Archived and compressed by Codex: restored as the plain file.
            1 => {
                let path = archived_dir.join(format!("{name}.zst"));
                fs::write(&path, zstd::encode_all(&bytes[..], 3).unwrap()).unwrap();
                Placed {
                    id,
                    rollout_path: archived_dir.join(&name),
                    path,
                    bytes,
                    archived: true,
                }
            }
            // Active, under sessions/YYYY/MM/DD.
            _ => {
                let day = &name["rollout-".len().."rollout-2026-05-11".len()];
                let dir = codex.join("sessions").join(day.replace('-', "/"));
                fs::create_dir_all(&dir).unwrap();
                let path = dir.join(&name);
                fs::write(&path, &bytes).unwrap();
                Placed {
                    id,
                    rollout_path: path.clone(),
                    path,
                    bytes,
                    archived: false,
                }
            }
        };
        sessions.push(placed);
    }
    let pi_sessions = pi.join("sessions").join(PI_DIR);
    fs::create_dir_all(&pi_sessions).unwrap();
    for source in &set.pi {
        let bytes = fs::read(source).unwrap();
        let id = pi_id(&bytes);
        let path = pi_sessions.join(format!("2025-12-17T19-39-21-535Z_{id}.jsonl"));
        fs::write(&path, &bytes).unwrap();
        sessions.push(Placed {
            id,
            rollout_path: path.clone(),
            path,
            bytes,
            archived: false,
        });
    }
    let seed_dir = pi_sessions
        .join("context-fold")
        .join(&sessions.last().unwrap().id);
    fs::create_dir_all(&seed_dir).unwrap();
    let seed_index = seed_dir.join("seed-index.jsonl");
    fs::write(
        &seed_index,
        b"{\"v\":2,\"kind\":\"fold\",\"seq\":1}\n{\"v\":2,\"kind\":\"fold\",\"seq\":2}\n",
    )
    .unwrap();

    // Titles: the state database for one thread, session_index.jsonl for another (its last line wins).
    fs::write(
        codex.join("session_index.jsonl"),
        format!(
            "{{\"id\":\"{a}\",\"thread_name\":\"old name\",\"updated_at\":\"t\"}}\n{{\"id\":\"{a}\",\"thread_name\":\"Indexed title\",\"updated_at\":\"t\"}}\n",
            a = sessions[2].id
        ),
    )
    .unwrap();
    let db = rusqlite::Connection::open(codex.join("state_5.sqlite")).unwrap();
    db.execute_batch(
        "CREATE TABLE threads (id TEXT PRIMARY KEY, rollout_path TEXT, title TEXT, cwd TEXT, archived INTEGER)",
    )
    .unwrap();
    db.execute("INSERT INTO threads (id, rollout_path, title, cwd, archived) VALUES (?1, '', 'From the database', '/w', 0)", [&sessions[3].id])
        .unwrap();
    drop(db);

    env.set("CODEX_HOME", &codex);
    env.set("PI_CODING_AGENT_DIR", &pi);
    Homes {
        set,
        codex,
        pi,
        sessions,
        shadowed,
        seed_index,
    }
}

/// JSON Lines from a run's stdout.
pub fn json_lines(stdout: &[u8]) -> Vec<serde_json::Value> {
    String::from_utf8(stdout.to_vec())
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}
