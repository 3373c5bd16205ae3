//! A synthetic but realistically shaped corpus of agent sessions, for benchmarks.
//!
//! `gen-corpus [--seed N] --size 1G OUT` writes `OUT/codex-home/` (sessions/YYYY/MM/DD/rollout-*.jsonl,
//! archived_sessions/ with some `.jsonl.zst`) and `OUT/pi-agent/sessions/--<cwd>--/*.jsonl`.
//! `gen-corpus --grow 10% OUT` appends new turns to some live sessions of an existing corpus.
//! The output depends only on the seed and the sizes asked for.
//!
//! What makes real session logs big, and what this reproduces (see `formats.md`): one
//! `base_instructions` text per CLI version; AGENTS.md repeated on every `turn_context`; the same
//! files read again and again, across sessions, until a patch changes them; test logs that differ
//! only in timings; `exec_command_end` carrying each output three times beside the
//! `function_call_output`; incompressible encrypted reasoning; screenshots (incompressible base64)
//! repeated by every later compaction and by forks; `compacted` records re-embedding earlier user
//! messages; subagent forks re-writing their parent's prefix; Pi sessions with thinking signatures,
//! tool results and compactions. Prose is word salad over a Zipf vocabulary, so it compresses
//! about as well as English does.

use std::fs::{self, File};
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};

/// splitmix64: small, fast, and good enough to shape data.
#[derive(Clone)]
struct Rng(u64);

impl Rng {
    fn new(seed: u64) -> Self {
        Self(seed ^ 0x9e37_79b9_7f4a_7c15)
    }
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: u64) -> u64 {
        ((self.next() >> 32) * n) >> 32
    }
    fn range(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.below(hi - lo + 1)
    }
    fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }
    /// Log-uniform in `lo..=hi`: many small values, a few large ones.
    fn log_range(&mut self, lo: u64, hi: u64) -> u64 {
        let (l, h) = ((lo as f64).ln(), (hi as f64).ln());
        let x = l + (h - l) * (self.next() >> 11) as f64 / (1u64 << 53) as f64;
        x.exp() as u64
    }
    fn hex(&mut self, n: usize) -> String {
        (0..n)
            .map(|_| char::from(b"0123456789abcdef"[self.below(16) as usize]))
            .collect()
    }
    /// Random base64: what encrypted reasoning and PNG data look like to a compressor.
    fn base64(&mut self, out: &mut String, n: usize) {
        const B64: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
        out.reserve(n);
        let mut left = n;
        while left > 0 {
            let mut r = self.next();
            for _ in 0..10.min(left) {
                out.push(char::from(B64[(r & 63) as usize]));
                r >>= 6;
            }
            left -= 10.min(left);
        }
    }
    fn uuid7(&mut self, ms: u64) -> String {
        let r = self.hex(20);
        format!(
            "{:08x}-{:04x}-7{}-{}-{}",
            ms >> 16,
            ms & 0xffff,
            &r[..3],
            &r[3..7],
            &r[7..19]
        )
    }
}

// ---------------------------------------------------------------------------------------------
// Compact JSON, keys in the order given (as serde_json writes the agents' structs).

enum J<'a> {
    S(&'a str),
    Str(String),
    N(i64),
    F(f64),
    B(bool),
    Null,
    A(Vec<J<'a>>),
    O(Vec<(&'static str, J<'a>)>),
    /// Already-serialized JSON, re-embedded byte for byte (compactions, forks).
    Raw(&'a [u8]),
}

impl J<'_> {
    fn write(&self, out: &mut Vec<u8>) {
        match self {
            J::S(s) => serde_json::to_writer(&mut *out, s).unwrap(),
            J::Str(s) => serde_json::to_writer(&mut *out, s).unwrap(),
            J::N(n) => serde_json::to_writer(&mut *out, n).unwrap(),
            J::F(f) => serde_json::to_writer(&mut *out, f).unwrap(),
            J::B(b) => out.extend_from_slice(if *b { b"true" } else { b"false" }),
            J::Null => out.extend_from_slice(b"null"),
            J::Raw(raw) => out.extend_from_slice(raw),
            J::A(items) => {
                out.push(b'[');
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        out.push(b',');
                    }
                    item.write(out);
                }
                out.push(b']');
            }
            J::O(entries) => {
                out.push(b'{');
                for (i, (k, v)) in entries.iter().enumerate() {
                    if i > 0 {
                        out.push(b',');
                    }
                    serde_json::to_writer(&mut *out, k).unwrap();
                    out.push(b':');
                    v.write(out);
                }
                out.push(b'}');
            }
        }
    }
    fn to_vec(&self) -> Vec<u8> {
        let mut out = Vec::new();
        self.write(&mut out);
        out
    }
    fn to_json_string(&self) -> String {
        String::from_utf8(self.to_vec()).unwrap()
    }
}

macro_rules! obj {
    ($($k:literal => $v:expr),* $(,)?) => { J::O(vec![$(($k, $v)),*]) };
}

// ---------------------------------------------------------------------------------------------
// Text.

/// Words drawn with a Zipf-like law from a vocabulary made of syllables.
struct Words {
    words: Vec<String>,
    /// 65,536 draws mapped to word indexes: one table lookup per word.
    table: Vec<u16>,
    idents: Vec<String>,
}

impl Words {
    fn new(rng: &mut Rng) -> Self {
        const SYL: [&str; 40] = [
            "ar", "be", "co", "de", "en", "fi", "ga", "he", "in", "jo", "ka", "le", "mo", "ne",
            "or", "pa", "qu", "re", "st", "to", "un", "ve", "wa", "xe", "yo", "ze", "th", "ch",
            "sh", "ing", "tion", "er", "al", "ly", "ed", "es", "ou", "ea", "io", "ss",
        ];
        let mut words: Vec<String> = [
            "the", "a", "to", "of", "and", "is", "in", "that", "it", "for", "we", "this",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        while words.len() < 4000 {
            let n = rng.range(1, 4);
            words.push(
                (0..n)
                    .map(|_| SYL[rng.below(SYL.len() as u64) as usize])
                    .collect(),
            );
        }
        let weights: Vec<f64> = (1..=words.len()).map(|r| 1.0 / r as f64).collect();
        let total: f64 = weights.iter().sum();
        let mut table = Vec::with_capacity(65536);
        let mut acc = 0.0;
        for (i, w) in weights.iter().enumerate() {
            acc += w / total * 65536.0;
            while (table.len() as f64) < acc && table.len() < 65536 {
                table.push(i as u16);
            }
        }
        table.resize(65536, (words.len() - 1) as u16);
        let idents = (0..1500)
            .map(|i| {
                let a = &words[rng.range(12, 600) as usize];
                let b = &words[rng.range(12, 3000) as usize];
                if i % 3 == 0 {
                    format!("{a}{}", capitalize(b))
                } else {
                    format!("{a}_{b}")
                }
            })
            .collect();
        Self {
            words,
            table,
            idents,
        }
    }
    fn word(&self, rng: &mut Rng) -> &str {
        &self.words[self.table[(rng.next() & 0xffff) as usize] as usize]
    }
    fn ident(&self, rng: &mut Rng) -> &str {
        let i = (rng.log_range(1, self.idents.len() as u64) - 1) as usize;
        &self.idents[i]
    }
    /// About `n` bytes of prose in sentences and paragraphs.
    fn prose(&self, rng: &mut Rng, n: usize) -> String {
        let mut s = String::with_capacity(n + 16);
        let mut in_sentence = 0;
        while s.len() < n {
            let w = self.word(rng);
            if in_sentence == 0 {
                s.push_str(&capitalize(w));
            } else {
                s.push_str(w);
            }
            in_sentence += 1;
            let r = rng.below(100);
            if in_sentence > 6 && r < 12 {
                s.push_str(if r < 2 { ".\n\n" } else { ". " });
                in_sentence = 0;
            } else if r < 16 {
                s.push_str(", ");
            } else if r < 18 {
                s.push_str(" `");
                s.push_str(self.ident(rng));
                s.push_str("` ");
            } else {
                s.push(' ');
            }
        }
        s
    }
    fn prose_log(&self, rng: &mut Rng, lo: u64, hi: u64) -> String {
        let n = rng.log_range(lo, hi) as usize;
        self.prose(rng, n)
    }
    fn prose_lin(&self, rng: &mut Rng, lo: u64, hi: u64) -> String {
        let n = rng.range(lo, hi) as usize;
        self.prose(rng, n)
    }
    /// About `n` bytes of code-shaped text.
    fn code(&self, rng: &mut Rng, n: usize) -> String {
        const KW: [&str; 12] = [
            "let", "fn", "if", "return", "match", "for", "pub", "struct", "impl", "use", "const",
            "while",
        ];
        let mut s = String::with_capacity(n + 80);
        let mut depth: usize = 0;
        while s.len() < n {
            for _ in 0..depth * 4 {
                s.push(' ');
            }
            let r = rng.below(100);
            if r < 8 && depth > 0 {
                s.push('}');
                depth -= 1;
            } else if r < 16 {
                s.push_str("// ");
                let n = rng.range(20, 70) as usize;
                s.push_str(&self.prose(rng, n));
            } else {
                s.push_str(KW[rng.below(12) as usize]);
                s.push(' ');
                s.push_str(self.ident(rng));
                for _ in 0..rng.below(4) {
                    s.push_str([" = ", "(", ", ", ".", " + ", "::"][rng.below(6) as usize]);
                    s.push_str(self.ident(rng));
                }
                if r > 85 && depth < 5 {
                    s.push_str(" {");
                    depth += 1;
                } else {
                    s.push(';');
                }
            }
            s.push('\n');
        }
        s
    }
}

fn capitalize(w: &str) -> String {
    let mut c = w.chars();
    c.next()
        .map(|f| f.to_uppercase().chain(c).collect())
        .unwrap_or_default()
}

// ---------------------------------------------------------------------------------------------
// Time.

const DAY_MS: u64 = 86_400_000;
/// 2026-06-01T00:00:00Z.
const EPOCH_MS: u64 = 1_780_272_000_000;

fn civil(ms: u64) -> (u64, u64, u64, u64, u64, u64, u64) {
    let days = (ms / DAY_MS) as i64;
    let rem = ms % DAY_MS;
    // Howard Hinnant's days_from_civil, inverted.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    (
        y as u64,
        m as u64,
        d as u64,
        rem / 3_600_000,
        rem / 60_000 % 60,
        rem / 1000 % 60,
        rem % 1000,
    )
}

fn iso(ms: u64) -> String {
    let (y, mo, d, h, mi, s, milli) = civil(ms);
    format!("{y:04}-{mo:02}-{d:02}T{h:02}:{mi:02}:{s:02}.{milli:03}Z")
}

// ---------------------------------------------------------------------------------------------
// The world sessions are about: projects with files that change, instructions per CLI version.

struct Project {
    cwd: String,
    agents_md: String,
    files: Vec<(String, String)>,
    tests: Vec<String>,
}

struct World {
    words: Words,
    projects: Vec<Project>,
    /// (cli_version, base_instructions, developer_instructions)
    versions: Vec<(String, String, String)>,
    permissions: String,
    tools: String,
}

impl World {
    fn new(seed: u64) -> Self {
        let mut rng = Rng::new(seed);
        let words = Words::new(&mut rng);
        let base = words.prose(&mut rng, 15_000);
        let versions = (0..6)
            .map(|v| {
                // Each release edits a few paragraphs of the previous prompt.
                let mut text = base.clone();
                for _ in 0..v * 3 {
                    let at = floor_char(&text, rng.below(text.len() as u64) as usize);
                    text.insert_str(at, &words.prose(&mut rng, 300));
                }
                (
                    format!("0.{}.0", 120 + v * 3),
                    text,
                    words.prose(&mut rng, 3_000),
                )
            })
            .collect();
        let projects = (0..10)
            .map(|p| {
                let name = words.ident(&mut rng).replace('_', "-");
                let cwd = format!("/home/dev/src/{name}{p}");
                let agents_md =
                    format!("# AGENTS.md\n\n{}", words.prose_lin(&mut rng, 2_000, 7_000));
                let files = (0..rng.range(40, 90))
                    .map(|_| {
                        let dir =
                            ["src", "src/core", "tests", "docs", "lib"][rng.below(5) as usize];
                        let path = format!("{dir}/{}.rs", words.ident(&mut rng));
                        let size = rng.log_range(800, 60_000) as usize;
                        (path, words.code(&mut rng, size))
                    })
                    .collect();
                let tests = (0..rng.range(40, 600))
                    .map(|_| format!("{}::{}", words.ident(&mut rng), words.ident(&mut rng)))
                    .collect();
                Project {
                    cwd,
                    agents_md,
                    files,
                    tests,
                }
            })
            .collect();
        let permissions = format!(
            "<permissions instructions>\n{}\n</permissions instructions>",
            words.prose(&mut rng, 4_000)
        );
        let tools = words.prose(&mut rng, 6_000);
        Self {
            words,
            projects,
            versions,
            permissions,
            tools,
        }
    }
}

fn floor_char(s: &str, mut at: usize) -> usize {
    while !s.is_char_boundary(at) {
        at -= 1;
    }
    at
}

/// What one step of a turn did.
struct Action {
    cmd: String,
    output: String,
    exit_code: i64,
}

/// The state of a session being written.
struct Sess<'w> {
    world: &'w World,
    rng: Rng,
    project: usize,
    version: usize,
    now: u64,
    out: Vec<u8>,
    /// Earlier user messages as written (JSON), which compactions re-embed.
    history: Vec<Vec<u8>>,
    /// The latest response items as written, which compactions retain.
    recent: std::collections::VecDeque<Vec<u8>>,
    screenshots: Vec<String>,
    tokens: i64,
    turns: u64,
}

impl<'w> Sess<'w> {
    fn tick(&mut self, max_ms: u64) -> String {
        self.now += self.rng.range(5, max_ms);
        iso(self.now)
    }

    /// A response item: written, and remembered for the next compaction to re-embed.
    fn item(&mut self, ts: String, payload: J<'_>) {
        let payload = payload.to_vec();
        self.line(obj! { "timestamp" => J::Str(ts), "type" => J::S("response_item"), "payload" => J::Raw(&payload) });
        if self.recent.len() == 16 {
            self.recent.pop_front();
        }
        self.recent.push_back(payload);
    }

    fn line(&mut self, j: J<'_>) {
        j.write(&mut self.out);
        self.out.push(b'\n');
    }

    fn screenshot(&mut self) -> String {
        if self.screenshots.is_empty() || self.rng.chance(40) {
            let mut s = String::from("data:image/png;base64,");
            let n = self.rng.log_range(60_000, 700_000) as usize;
            self.rng.base64(&mut s, n);
            self.screenshots.push(s);
        }
        let i = self.rng.below(self.screenshots.len() as u64) as usize;
        self.screenshots[i].clone()
    }

    /// A tool run against the project: reads repeat across sessions until a patch changes the file.
    fn action(&mut self, world: &'w World, projects: &mut [Project]) -> Action {
        let rng = &mut self.rng;
        let project = &mut projects[self.project];
        let r = rng.below(100);
        if r < 45 {
            let (path, text) =
                &project.files[rng.log_range(1, project.files.len() as u64) as usize - 1];
            if text.len() < 12_000 || rng.chance(50) {
                return Action {
                    cmd: format!("cat {path}"),
                    output: text.clone(),
                    exit_code: 0,
                };
            }
            let lines: Vec<&str> = text.lines().collect();
            let from = 200 * rng.below(lines.len() as u64 / 200 + 1) as usize;
            let to = (from + 200).min(lines.len());
            let mut output = lines[from..to].join("\n");
            output.push('\n');
            return Action {
                cmd: format!("sed -n '{},{}p' {path}", from + 1, to),
                output,
                exit_code: 0,
            };
        }
        if r < 65 {
            let mut out = String::new();
            let fail = rng
                .chance(25)
                .then(|| rng.below(project.tests.len() as u64) as usize);
            out.push_str(&format!(
                "   Compiling {} v0.1.0 ({})\n",
                project.cwd.rsplit('/').next().unwrap(),
                project.cwd
            ));
            out.push_str(&format!(
                "    Finished `test` profile [unoptimized + debuginfo] target(s) in {}.{:02}s\n",
                rng.below(60),
                rng.below(100)
            ));
            out.push_str(&format!("\nrunning {} tests\n", project.tests.len()));
            for (i, t) in project.tests.iter().enumerate() {
                let verdict = if Some(i) == fail { "FAILED" } else { "ok" };
                out.push_str(&format!("test {t} ... {verdict}\n"));
            }
            if let Some(i) = fail {
                out.push_str(&format!(
                    "\nfailures:\n\n---- {} stdout ----\nthread '{}' panicked at src/lib.rs:{}:{}:\n{}\n",
                    project.tests[i],
                    project.tests[i],
                    rng.range(10, 900),
                    rng.range(1, 40),
                    world.words.prose(rng, 200)
                ));
            }
            let n = project.tests.len();
            let failed = usize::from(fail.is_some());
            out.push_str(&format!(
                "\ntest result: {}. {} passed; {failed} failed; 0 ignored; 0 measured; 0 filtered out; finished in {}.{:02}s\n",
                if failed > 0 { "FAILED" } else { "ok" },
                n - failed,
                rng.below(20),
                rng.below(100)
            ));
            return Action {
                cmd: "cargo test".into(),
                output: out,
                exit_code: if failed > 0 { 101 } else { 0 },
            };
        }
        if r < 80 {
            let pattern = world.words.ident(rng).to_string();
            let mut out = String::new();
            for _ in 0..rng.log_range(1, 80) {
                let (path, text) = &project.files[rng.below(project.files.len() as u64) as usize];
                let line = text.lines().nth(rng.below(50) as usize).unwrap_or("");
                out.push_str(&format!("{path}:{}:{line}\n", rng.range(1, 900)));
            }
            return Action {
                cmd: format!("rg -n {pattern}"),
                output: out,
                exit_code: 0,
            };
        }
        // A patch: the file changes for every later reader, in this session and the next ones.
        let i = rng.below(project.files.len() as u64) as usize;
        let (path, text) = &mut project.files[i];
        let at = floor_char(text, rng.below(text.len() as u64) as usize);
        let n = rng.range(100, 2_000) as usize;
        let added = world.words.code(rng, n);
        text.insert_str(at, &added);
        let patch = format!(
            "*** Begin Patch\n*** Update File: {path}\n@@\n{}*** End Patch\n",
            added.lines().map(|l| format!("+{l}\n")).collect::<String>()
        );
        Action {
            cmd: format!("apply_patch\n{patch}"),
            output: format!("Success. Updated the following files:\nM {path}\n"),
            exit_code: 0,
        }
    }

    fn token_count(&mut self) {
        self.tokens += self.rng.range(2_000, 40_000) as i64;
        let (t, last) = (self.tokens, self.rng.range(500, 30_000) as i64);
        let ts = self.tick(500);
        let usage = |n: i64| {
            obj! { "input_tokens" => J::N(n), "cached_input_tokens" => J::N(n * 7 / 10), "output_tokens" => J::N(n / 20),
            "reasoning_output_tokens" => J::N(n / 50), "total_tokens" => J::N(n + n / 20) }
        };
        self.line(obj! { "timestamp" => J::Str(ts), "type" => J::S("event_msg"), "payload" => obj! {
            "type" => J::S("token_count"),
            "info" => obj! { "total_token_usage" => usage(t), "last_token_usage" => usage(last), "model_context_window" => J::N(258_400) },
            "rate_limits" => obj! { "primary" => obj! { "used_percent" => J::F((t % 1000) as f64 / 10.0), "window_minutes" => J::N(300) } },
        }});
    }
}

// ---------------------------------------------------------------------------------------------
// Codex rollouts.

fn codex_session_meta(s: &mut Sess<'_>, id: &str, forked_from: Option<&str>) {
    let world = s.world;
    let (version, base, _) = &world.versions[s.version];
    let cwd = world.projects[s.project].cwd.clone();
    let ts = iso(s.now);
    let mut payload = vec![
        ("id", J::S(id)),
        ("timestamp", J::Str(ts.clone())),
        ("cwd", J::Str(cwd)),
        ("originator", J::S("codex-tui")),
        ("cli_version", J::S(version)),
        (
            "source",
            J::S(if forked_from.is_some() {
                "subagent"
            } else {
                "cli"
            }),
        ),
        ("model_provider", J::S("openai")),
        ("base_instructions", obj! { "text" => J::S(base) }),
        (
            "dynamic_tools",
            J::A(vec![
                obj! { "name" => J::S("web_fetch"), "description" => J::S(&world.tools) },
            ]),
        ),
    ];
    if let Some(parent) = forked_from {
        payload.push(("forked_from_id", J::S(parent)));
    }
    s.line(obj! { "timestamp" => J::Str(ts), "type" => J::S("session_meta"), "payload" => J::O(payload) });
}

fn codex_preamble(s: &mut Sess<'_>) {
    let world = s.world;
    let ts = s.tick(50);
    s.item(
        ts,
        obj! {
        "type" => J::S("message"), "role" => J::S("developer"),
        "content" => J::A(vec![obj! { "type" => J::S("input_text"), "text" => J::S(&world.permissions) }]) },
    );
    let env = format!(
        "# AGENTS.md instructions for {0}\n\n<INSTRUCTIONS>\n{1}\n</INSTRUCTIONS>\n<environment_context>\n  <cwd>{0}</cwd>\n  <shell>bash</shell>\n</environment_context>",
        world.projects[s.project].cwd, world.projects[s.project].agents_md
    );
    let ts = s.tick(50);
    s.item(
        ts,
        obj! {
        "type" => J::S("message"), "role" => J::S("user"),
        "content" => J::A(vec![obj! { "type" => J::S("input_text"), "text" => J::Str(env) }]) },
    );
}

fn codex_turn(s: &mut Sess<'_>, projects: &mut [Project]) {
    let world = s.world;
    let turn_id = s.rng.uuid7(s.now);
    let cwd = world.projects[s.project].cwd.clone();
    let agents_md = projects[s.project].agents_md.clone();
    let (_, _, developer) = &world.versions[s.version];
    let ts = s.tick(60_000);
    s.line(obj! { "timestamp" => J::Str(ts), "type" => J::S("turn_context"), "payload" => obj! {
        "turn_id" => J::S(&turn_id), "cwd" => J::S(&cwd), "approval_policy" => J::S("on-request"),
        "sandbox_policy" => obj! { "type" => J::S("workspace-write"), "network_access" => J::B(false) },
        "model" => J::S("gpt-5.5"), "effort" => J::S("medium"), "summary" => J::S("auto"),
        "collaboration_mode" => obj! { "mode" => J::S("default"), "settings" => obj! { "developer_instructions" => J::S(developer) } },
        "user_instructions" => J::S(&agents_md), "truncation_policy" => obj! { "mode" => J::S("tokens"), "limit" => J::N(10_000) },
    }});
    let prompt = world.words.prose_log(&mut s.rng, 40, 3_000);
    let image = s.rng.chance(6).then(|| s.screenshot());
    let ts = s.tick(100);
    s.line(obj! { "timestamp" => J::Str(ts), "type" => J::S("event_msg"), "payload" => obj! {
        "type" => J::S("user_message"), "message" => J::S(&prompt),
        "images" => J::A(image.iter().map(|i| J::S(i)).collect()), "local_images" => J::A(vec![]), "text_elements" => J::A(vec![]) }});
    let mut content = vec![obj! { "type" => J::S("input_text"), "text" => J::S(&prompt) }];
    if let Some(image) = &image {
        content.push(obj! { "type" => J::S("input_image"), "image_url" => J::S(image) });
    }
    let user =
        obj! { "type" => J::S("message"), "role" => J::S("user"), "content" => J::A(content) }
            .to_vec();
    let ts = s.tick(10);
    s.line(obj! { "timestamp" => J::Str(ts), "type" => J::S("response_item"), "payload" => J::Raw(&user) });
    s.history.push(user);
    let ts = s.tick(10);
    s.line(obj! { "timestamp" => J::Str(ts), "type" => J::S("event_msg"), "payload" => obj! {
    "type" => J::S("task_started"), "turn_id" => J::S(&turn_id), "model_context_window" => J::N(258_400) }});

    for _ in 0..s.rng.log_range(1, 14) {
        let summary = world.words.prose_lin(&mut s.rng, 80, 600);
        let mut encrypted = String::from("gAAAAAB");
        let n = s.rng.log_range(1_000, 27_000) as usize;
        s.rng.base64(&mut encrypted, n);
        let ts = s.tick(20_000);
        s.item(ts, obj! {
            "type" => J::S("reasoning"), "summary" => J::A(vec![obj! { "type" => J::S("summary_text"), "text" => J::S(&summary) }]),
            "content" => J::Null, "encrypted_content" => J::Str(encrypted) });
        let ts = s.tick(10);
        s.line(
            obj! { "timestamp" => J::Str(ts), "type" => J::S("event_msg"), "payload" => obj! {
            "type" => J::S("agent_reasoning"), "text" => J::S(&summary) }},
        );
        let action = s.action(world, projects);
        let call_id = format!("call_{}", s.rng.hex(24));
        if let Some(patch) = action.cmd.strip_prefix("apply_patch\n") {
            let ts = s.tick(5_000);
            s.item(
                ts,
                obj! {
                "type" => J::S("custom_tool_call"), "status" => J::S("completed"), "call_id" => J::S(&call_id),
                "name" => J::S("apply_patch"), "input" => J::S(patch) },
            );
            let ts = s.tick(500);
            s.line(obj! { "timestamp" => J::Str(ts), "type" => J::S("event_msg"), "payload" => obj! {
                "type" => J::S("patch_apply_end"), "call_id" => J::S(&call_id), "turn_id" => J::S(&turn_id),
                "stdout" => J::S(&action.output), "stderr" => J::S(""), "success" => J::B(true), "status" => J::S("completed") }});
            let output = obj! { "output" => J::S(&action.output), "metadata" => obj! { "exit_code" => J::N(0), "duration_seconds" => J::F(0.1) } }.to_json_string();
            let ts = s.tick(10);
            s.item(
                ts,
                obj! {
                "type" => J::S("custom_tool_call_output"), "call_id" => J::S(&call_id), "output" => J::Str(output) },
            );
        } else {
            let args = obj! { "cmd" => J::S(&action.cmd), "workdir" => J::S(&cwd), "yield_time_ms" => J::N(10_000) }
                .to_json_string();
            let ts = s.tick(5_000);
            s.item(ts, obj! {
                "type" => J::S("function_call"), "name" => J::S("exec_command"), "arguments" => J::Str(args), "call_id" => J::S(&call_id) });
            let wall = s.rng.range(1, 30_000) as f64 / 1000.0;
            let pid = s.rng.range(1000, 99_999).to_string();
            let ts = s.tick(30_000);
            s.line(obj! { "timestamp" => J::Str(ts), "type" => J::S("event_msg"), "payload" => obj! {
                "type" => J::S("exec_command_end"), "call_id" => J::S(&call_id), "process_id" => J::Str(pid),
                "turn_id" => J::S(&turn_id), "command" => J::A(vec![J::S("/bin/bash"), J::S("-lc"), J::S(&action.cmd)]),
                "cwd" => J::S(&cwd), "parsed_cmd" => J::A(vec![obj! { "type" => J::S("unknown"), "cmd" => J::S(&action.cmd) }]),
                "source" => J::S("agent"), "stdout" => J::S(&action.output), "stderr" => J::S(""),
                "aggregated_output" => J::S(&action.output), "exit_code" => J::N(action.exit_code),
                "duration" => obj! { "secs" => J::N(wall as i64), "nanos" => J::N(((wall.fract()) * 1e9) as i64) },
                "formatted_output" => J::S(&action.output), "status" => J::S("completed") }});
            let output = format!(
                "Chunk ID: {}\nWall time: {wall:.4} seconds\nProcess exited with code {}\nOriginal token count: {}\nOutput:\n{}",
                s.rng.hex(6),
                action.exit_code,
                action.output.len() / 4,
                action.output
            );
            let ts = s.tick(10);
            s.item(
                ts,
                obj! {
                "type" => J::S("function_call_output"), "call_id" => J::S(&call_id), "output" => J::Str(output) },
            );
        }
        s.token_count();
    }
    let answer = world.words.prose_log(&mut s.rng, 100, 4_000);
    let ts = s.tick(20_000);
    s.item(ts, obj! {
        "type" => J::S("message"), "role" => J::S("assistant"),
        "content" => J::A(vec![obj! { "type" => J::S("output_text"), "text" => J::S(&answer) }]), "phase" => J::S("final_answer") });
    let ts = s.tick(10);
    s.line(obj! { "timestamp" => J::Str(ts), "type" => J::S("event_msg"), "payload" => obj! { "type" => J::S("agent_message"), "message" => J::S(&answer) }});
    let ts = s.tick(10);
    s.line(obj! { "timestamp" => J::Str(ts), "type" => J::S("event_msg"), "payload" => obj! {
    "type" => J::S("task_complete"), "turn_id" => J::S(&turn_id), "last_agent_message" => J::S(&answer) }});
    s.turns += 1;
    if s.turns.is_multiple_of(12) {
        let summary = world.words.prose(&mut s.rng, 4_000);
        // Every earlier user message (screenshots included) and the latest items, again.
        let history: Vec<J<'_>> = s
            .history
            .iter()
            .chain(&s.recent)
            .map(|h| J::Raw(h))
            .collect();
        let line = obj! { "timestamp" => J::Str(iso(s.now + 1)), "type" => J::S("compacted"), "payload" => obj! {
        "message" => J::S(&summary), "replacement_history" => J::A(history) }}
        .to_vec();
        s.out.extend_from_slice(&line);
        s.out.push(b'\n');
        let ts = s.tick(10);
        s.line(obj! { "timestamp" => J::Str(ts), "type" => J::S("event_msg"), "payload" => obj! { "type" => J::S("context_compacted") }});
    }
}

// ---------------------------------------------------------------------------------------------
// Pi sessions.

fn pi_header(s: &mut Sess<'_>, id: &str, parent: Option<&str>) {
    let cwd = s.world.projects[s.project].cwd.clone();
    let mut header = vec![
        ("type", J::S("session")),
        ("version", J::N(3)),
        ("id", J::S(id)),
        ("timestamp", J::Str(iso(s.now))),
        ("cwd", J::Str(cwd)),
    ];
    if let Some(parent) = parent {
        header.push(("parentSession", J::S(parent)));
    }
    s.line(J::O(header));
}

fn pi_entry(s: &mut Sess<'_>, parent: &mut String, body: Vec<(&'static str, J<'_>)>) {
    let id = s.rng.hex(8);
    let ts = s.tick(20_000);
    let mut entry = vec![
        ("type", J::S("message")),
        ("id", J::S(&id)),
        (
            "parentId",
            if parent.is_empty() {
                J::Null
            } else {
                J::S(parent)
            },
        ),
        ("timestamp", J::Str(ts)),
    ];
    entry.extend(body);
    let line = J::O(entry).to_vec();
    s.out.extend_from_slice(&line);
    s.out.push(b'\n');
    *parent = id;
}

fn pi_turn(s: &mut Sess<'_>, projects: &mut [Project], parent: &mut String) {
    let world = s.world;
    let prompt = world.words.prose_log(&mut s.rng, 40, 2_000);
    let mut content = vec![obj! { "type" => J::S("text"), "text" => J::S(&prompt) }];
    let image = s.rng.chance(6).then(|| s.screenshot());
    if let Some(image) = &image {
        let data = image.trim_start_matches("data:image/png;base64,");
        content.push(
            obj! { "type" => J::S("image"), "data" => J::S(data), "mimeType" => J::S("image/png") },
        );
    }
    let ms = s.now;
    let user =
        obj! { "role" => J::S("user"), "content" => J::A(content), "timestamp" => J::N(ms as i64) }
            .to_vec();
    pi_entry(s, parent, vec![("message", J::Raw(&user))]);
    s.history.push(user);
    for _ in 0..s.rng.log_range(1, 14) {
        let thinking = world.words.prose_lin(&mut s.rng, 100, 1_500);
        let mut signature = String::new();
        let n = s.rng.log_range(300, 8_000) as usize;
        s.rng.base64(&mut signature, n);
        let action = s.action(world, projects);
        let call_id = format!("toolu_{}", s.rng.hex(24));
        let (name, args) = match action.cmd.strip_prefix("apply_patch\n") {
            Some(patch) => (
                "edit",
                obj! { "path" => J::S("src/lib.rs"), "newText" => J::S(patch) },
            ),
            None => ("bash", obj! { "command" => J::S(&action.cmd) }),
        };
        let assistant = obj! { "role" => J::S("assistant"), "content" => J::A(vec![
            obj! { "type" => J::S("thinking"), "thinking" => J::S(&thinking), "thinkingSignature" => J::Str(signature) },
            obj! { "type" => J::S("toolCall"), "id" => J::S(&call_id), "name" => J::S(name), "arguments" => args }]),
        "api" => J::S("anthropic-messages"), "provider" => J::S("anthropic"), "model" => J::S("claude-opus-5"),
        "usage" => obj! { "input" => J::N(s.rng.range(1, 9) as i64), "output" => J::N(s.rng.range(50, 900) as i64),
            "cacheRead" => J::N(s.rng.range(1_000, 150_000) as i64), "cacheWrite" => J::N(s.rng.range(0, 5_000) as i64) },
        "stopReason" => J::S("toolUse"), "timestamp" => J::N(s.now as i64) };
        pi_entry(s, parent, vec![("message", assistant)]);
        let result = obj! { "role" => J::S("toolResult"), "toolCallId" => J::S(&call_id), "toolName" => J::S(name),
        "content" => J::A(vec![obj! { "type" => J::S("text"), "text" => J::S(&action.output) }]),
        "isError" => J::B(action.exit_code != 0), "timestamp" => J::N(s.now as i64) };
        pi_entry(s, parent, vec![("message", result)]);
    }
    let answer = world.words.prose_log(&mut s.rng, 100, 3_000);
    let assistant = obj! { "role" => J::S("assistant"), "content" => J::A(vec![obj! { "type" => J::S("text"), "text" => J::S(&answer) }]),
    "api" => J::S("anthropic-messages"), "provider" => J::S("anthropic"), "model" => J::S("claude-opus-5"),
    "stopReason" => J::S("stop"), "timestamp" => J::N(s.now as i64) };
    pi_entry(s, parent, vec![("message", assistant)]);
    s.turns += 1;
    if s.turns.is_multiple_of(15) {
        let summary = world.words.prose(&mut s.rng, 4_500);
        let line = obj! { "type" => J::S("compaction"), "id" => J::Str(s.rng.hex(8)), "parentId" => J::S(parent),
        "timestamp" => J::Str(iso(s.now)), "summary" => J::S(&summary), "firstKeptEntryId" => J::S(parent),
        "tokensBefore" => J::N(s.rng.range(100_000, 200_000) as i64) }
        .to_vec();
        s.out.extend_from_slice(&line);
        s.out.push(b'\n');
        // Pi chains the next entry to the compaction: it is on the branch, not beside it.
        *parent = last_entry_id(&s.out);
    }
}

// ---------------------------------------------------------------------------------------------
// Driving it.

struct Args {
    seed: u64,
    size: Option<u64>,
    grow_percent: Option<u64>,
    out: PathBuf,
}

fn parse_args() -> Result<Args, String> {
    let mut args = Args {
        seed: 7,
        size: None,
        grow_percent: None,
        out: PathBuf::new(),
    };
    let mut it = std::env::args().skip(1);
    while let Some(a) = it.next() {
        match a.as_str() {
            "--seed" => {
                args.seed = it
                    .next()
                    .and_then(|v| v.parse().ok())
                    .ok_or("--seed needs a number")?
            }
            "--size" => args.size = Some(parse_size(&it.next().ok_or("--size needs a value")?)?),
            "--grow" => {
                let v = it.next().ok_or("--grow needs a percentage")?;
                args.grow_percent = Some(
                    v.trim_end_matches('%')
                        .parse()
                        .map_err(|_| format!("bad --grow {v}"))?,
                );
            }
            "-h" | "--help" => {
                return Err("usage: gen-corpus [--seed N] (--size 1G | --grow 10%) OUT".into());
            }
            _ if args.out.as_os_str().is_empty() && !a.starts_with('-') => {
                args.out = PathBuf::from(a)
            }
            _ => return Err(format!("unexpected argument {a:?}")),
        }
    }
    if args.out.as_os_str().is_empty() || args.size.is_some() == args.grow_percent.is_some() {
        return Err("usage: gen-corpus [--seed N] (--size 1G | --grow 10%) OUT".into());
    }
    Ok(args)
}

fn parse_size(v: &str) -> Result<u64, String> {
    let (num, mult) = match v.chars().last() {
        Some('K' | 'k') => (&v[..v.len() - 1], 1 << 10),
        Some('M' | 'm') => (&v[..v.len() - 1], 1 << 20),
        Some('G' | 'g') => (&v[..v.len() - 1], 1 << 30),
        _ => (v, 1),
    };
    let n: f64 = num.parse().map_err(|_| format!("bad size {v:?}"))?;
    Ok((n * mult as f64) as u64)
}

fn main() {
    let args = match parse_args() {
        Ok(args) => args,
        Err(e) => {
            eprintln!("gen-corpus: {e}");
            std::process::exit(2);
        }
    };
    let result = match (args.size, args.grow_percent) {
        (Some(size), _) => generate(args.seed, size, &args.out),
        (_, Some(percent)) => grow(args.seed, percent, &args.out),
        _ => unreachable!(),
    };
    if let Err(e) = result {
        eprintln!("gen-corpus: {e}");
        std::process::exit(1);
    }
}

fn write_file(path: &Path, bytes: &[u8], append: bool) -> io::Result<()> {
    fs::create_dir_all(path.parent().unwrap())?;
    let file = fs::OpenOptions::new()
        .create(true)
        .write(true)
        .append(append)
        .truncate(!append)
        .open(path)?;
    let mut w = BufWriter::with_capacity(1 << 20, file);
    w.write_all(bytes)?;
    w.flush()
}

fn pi_dir(out: &Path, cwd: &str) -> PathBuf {
    let name = cwd.trim_start_matches('/').replace(['/', '\\', ':'], "-");
    out.join("pi-agent/sessions").join(format!("--{name}--"))
}

fn generate(seed: u64, size: u64, out: &Path) -> io::Result<()> {
    if out.exists() && fs::read_dir(out)?.next().is_some() {
        return Err(io::Error::other(format!("{} is not empty", out.display())));
    }
    let world = World::new(seed);
    let mut projects: Vec<Project> = World::new(seed).projects;
    let mut rng = Rng::new(seed.wrapping_mul(31).wrapping_add(1));
    let codex_home = out.join("codex-home");
    let days = 60;
    let end_ms = EPOCH_MS + days * DAY_MS;
    let mut written = 0u64;
    let mut sessions = 0u64;
    // Sessions in time order; forks continue a recent parent's prefix.
    let mut recent: Vec<(String, Vec<u8>, usize, usize, bool)> = Vec::new();
    let mut start = EPOCH_MS + 8 * 3_600_000;
    while written < size {
        start += rng.range(60_000, (days * DAY_MS * 2) / (size / (3 << 20)).max(1));
        let now = start.min(end_ms - DAY_MS);
        let pi = rng.chance(25);
        let fork = !recent.is_empty() && rng.chance(15);
        let (project, version) = if fork {
            let r = &recent[rng.below(recent.len() as u64) as usize];
            (r.2, r.3)
        } else {
            (
                rng.log_range(1, 10) as usize - 1,
                (((now - EPOCH_MS) / (10 * DAY_MS)) as usize).min(world.versions.len() - 1),
            )
        };
        let mut s = Sess {
            world: &world,
            rng: Rng::new(rng.next()),
            project,
            version,
            now,
            out: Vec::new(),
            history: Vec::new(),
            recent: Default::default(),
            screenshots: Vec::new(),
            tokens: 0,
            turns: 0,
        };
        let id = s.rng.uuid7(now);
        let target = s.rng.log_range(40_000, 24 << 20);
        let parent = fork
            .then(|| recent[rng.below(recent.len() as u64) as usize].clone())
            .filter(|p| p.4 == pi);
        if pi {
            let mut parent_id = String::new();
            pi_header(&mut s, &id, parent.as_ref().map(|p| p.0.as_str()));
            if let Some((_, bytes, ..)) = &parent {
                // A fork re-writes the parent's entries (after its header) up to some point, and
                // goes on from the last of them.
                let body = &bytes[memchr_nl(bytes) + 1..];
                let cut = cut_at_line(body, s.rng.below(body.len() as u64 + 1) as usize);
                s.out.extend_from_slice(&body[..cut]);
                parent_id = last_entry_id(&body[..cut]);
            }
            while (s.out.len() as u64) < target {
                pi_turn(&mut s, &mut projects, &mut parent_id);
            }
            let (_, _, _, h, mi, se, ms) = civil(now);
            let (y, mo, d, ..) = civil(now);
            let name = format!("{y:04}-{mo:02}-{d:02}T{h:02}-{mi:02}-{se:02}-{ms:03}Z_{id}.jsonl");
            let path = pi_dir(out, &world.projects[project].cwd).join(name);
            write_file(&path, &s.out, false)?;
        } else {
            let parent_id = parent.as_ref().map(|p| p.0.clone());
            codex_session_meta(&mut s, &id, parent_id.as_deref());
            if let Some((_, bytes, ..)) = &parent {
                let body = &bytes[memchr_nl(bytes) + 1..];
                let cut = cut_at_line(body, s.rng.below(body.len() as u64 + 1) as usize);
                s.out.extend_from_slice(&body[..cut]);
            } else {
                codex_preamble(&mut s);
            }
            while (s.out.len() as u64) < target {
                codex_turn(&mut s, &mut projects);
            }
            // Local time for the path (UTC+1 here), UTC inside.
            let local = now + 3_600_000;
            let (y, mo, d, h, mi, se, _) = civil(local);
            let name = format!("rollout-{y:04}-{mo:02}-{d:02}T{h:02}-{mi:02}-{se:02}-{id}.jsonl");
            let age_days = (end_ms - now) / DAY_MS;
            if age_days > 7 && rng.chance(45) {
                let dir = codex_home.join("archived_sessions");
                if age_days > 14 && rng.chance(70) {
                    // What Codex's compression worker leaves behind: zstd -3, plain file gone.
                    fs::create_dir_all(&dir)?;
                    let file = File::create(dir.join(format!("{name}.zst")))?;
                    zstd::stream::copy_encode(&s.out[..], file, 3)?;
                } else {
                    write_file(&dir.join(name), &s.out, false)?;
                }
            } else {
                let dir = codex_home.join(format!("sessions/{y:04}/{mo:02}/{d:02}"));
                write_file(&dir.join(name), &s.out, false)?;
            }
        }
        written += s.out.len() as u64;
        sessions += 1;
        recent.push((id, std::mem::take(&mut s.out), project, version, pi));
        if recent.len() > 6 {
            recent.remove(0);
        }
    }
    fs::write(
        out.join(".gen-corpus"),
        format!("seed {seed}\nsize {size}\n"),
    )?;
    eprintln!(
        "gen-corpus: {sessions} sessions, {written} bytes of JSONL in {}",
        out.display()
    );
    Ok(())
}

fn memchr_nl(bytes: &[u8]) -> usize {
    bytes
        .iter()
        .position(|&b| b == b'\n')
        .unwrap_or(bytes.len().saturating_sub(1))
}

/// The `id` of the last line of `lines` (a Pi entry's), or "" when it has none (a header, nothing).
fn last_entry_id(lines: &[u8]) -> String {
    let last = lines
        .trim_ascii_end()
        .rsplit(|&b| b == b'\n')
        .next()
        .unwrap_or_default();
    serde_json::from_slice::<serde_json::Value>(last)
        .ok()
        .filter(|line| line["type"] != "session")
        .and_then(|line| line["id"].as_str().map(String::from))
        .unwrap_or_default()
}

/// The end of the line holding byte `at` (a whole number of lines).
fn cut_at_line(bytes: &[u8], at: usize) -> usize {
    match bytes[at.min(bytes.len())..]
        .iter()
        .position(|&b| b == b'\n')
    {
        Some(i) => at + i + 1,
        None => bytes.len(),
    }
}

/// Append turns to some live sessions (never to archived ones) until the corpus grew by `percent`.
fn grow(seed: u64, percent: u64, out: &Path) -> io::Result<()> {
    let world = World::new(seed);
    let mut projects = World::new(seed).projects;
    let mut live = Vec::new();
    let mut total = 0u64;
    let mut stack = vec![out.join("codex-home"), out.join("pi-agent")];
    while let Some(dir) = stack.pop() {
        for entry in fs::read_dir(&dir)? {
            let path = entry?.path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "jsonl" || e == "zst") {
                let len = fs::metadata(&path)?.len();
                total += len;
                if !path.to_string_lossy().contains("archived_sessions") {
                    live.push(path);
                }
            }
        }
    }
    live.sort();
    let mut rng = Rng::new(seed ^ total);
    let goal = total * percent / 100;
    let mut added = 0u64;
    let mut touched = 0;
    while added < goal && !live.is_empty() {
        let path = live.swap_remove(rng.below(live.len() as u64) as usize);
        let first = io::BufRead::lines(io::BufReader::new(File::open(&path)?))
            .next()
            .transpose()?
            .unwrap_or_default();
        let head: serde_json::Value = serde_json::from_str(&first).map_err(io::Error::other)?;
        let pi = head["type"] == "session";
        let cwd = if pi {
            &head["cwd"]
        } else {
            &head["payload"]["cwd"]
        };
        let project = world
            .projects
            .iter()
            .position(|p| cwd == p.cwd.as_str())
            .unwrap_or(0);
        let version = world
            .versions
            .iter()
            .position(|v| head["payload"]["cli_version"] == v.0.as_str())
            .unwrap_or(0);
        let now = EPOCH_MS + 61 * DAY_MS + rng.below(DAY_MS);
        let mut s = Sess {
            world: &world,
            rng: Rng::new(rng.next()),
            project,
            version,
            now,
            out: Vec::new(),
            history: Vec::new(),
            recent: Default::default(),
            screenshots: Vec::new(),
            tokens: 0,
            turns: 0,
        };
        let target = s.rng.log_range(100_000, 6 << 20).min(goal - added + 50_000);
        // New turns go on from the session's leaf, its last entry, as Pi appends them.
        let mut parent = match pi {
            true => last_entry_id(&fs::read(&path)?),
            false => String::new(),
        };
        while (s.out.len() as u64) < target {
            if pi {
                pi_turn(&mut s, &mut projects, &mut parent)
            } else {
                codex_turn(&mut s, &mut projects)
            }
        }
        write_file(&path, &s.out, true)?;
        added += s.out.len() as u64;
        touched += 1;
    }
    eprintln!(
        "gen-corpus: appended {added} bytes to {touched} sessions (corpus was {total} bytes on disk)"
    );
    Ok(())
}
