//! The credential formats the secret scan knows: one rule each, a name, what it finds, the
//! keywords that must be on a line before its pattern is tried, and the pattern. The patterns are
//! those of the issuers' documented formats (as gitleaks collects them), anchored on a fixed
//! prefix or checksum marker wherever the format has one, so that prose, hashes and ids do not
//! match; the two formats without one (a key assigned to `aws_secret_access_key`, a password in a
//! connection URL) need their context in the match.
//!
//! Lines are matched as bytes: session text is not always UTF-8, and JSON escapes (`\n` inside a
//! private key block) are matched as written.

use std::sync::LazyLock;

use aho_corasick::{AhoCorasick, AhoCorasickBuilder};
use regex::bytes::Regex;

/// One credential format.
#[derive(Debug)]
pub struct Rule {
    /// Its stable name, in reports and `--json`.
    pub id: &'static str,
    /// What it finds, for the manual.
    pub what: &'static str,
    /// Text it finds (made up, of the right shape), as a session holds it: what tests plant.
    pub example: &'static str,
    /// Lowercase words one of which a line must hold for the pattern to be tried.
    keywords: &'static [&'static str],
    /// The pattern; its group `secret`, when it has one, is the credential within the match.
    pattern: &'static str,
}

/// Every rule, in the order the manual lists them.
pub const RULES: &[Rule] = &[
    Rule {
        id: "aws-access-key-id",
        what: "AWS access key id (AKIA…, ASIA…)",
        example: "AKIAQ3EGTQ5NQ7XVZ4PL",
        keywords: &["akia", "asia", "abia", "acca"],
        pattern: r"\b(?P<secret>(?:AKIA|ASIA|ABIA|ACCA)[A-Z2-7]{16})\b",
    },
    Rule {
        id: "aws-secret-access-key",
        what: "AWS secret access key assigned to aws_secret_access_key",
        example: "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
        keywords: &["secret_access_key", "secretaccesskey"],
        pattern: r#"(?i)aws_?secret_?access_?key\\?["']?\s*[:=]\s*\\?["']?(?P<secret>[A-Za-z0-9/+]{40})(?:[^A-Za-z0-9/+=]|$)"#,
    },
    Rule {
        id: "google-api-key",
        what: "Google Cloud / Gemini API key (AIza…)",
        example: "AIzaSyD3xKq9vY2mN8pL4rT6wZ1bC5eF7gH0jK2",
        keywords: &["aiza"],
        pattern: r"\b(?P<secret>AIza[0-9A-Za-z_-]{35})(?:[^0-9A-Za-z_-]|$)",
    },
    Rule {
        id: "google-oauth-client-secret",
        what: "Google OAuth client secret (GOCSPX-…)",
        example: "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",
        keywords: &["gocspx-"],
        pattern: r"\b(?P<secret>GOCSPX-[0-9A-Za-z_-]{28})(?:[^0-9A-Za-z_-]|$)",
    },
    Rule {
        id: "azure-storage-key",
        what: "Azure storage account key in a connection string (AccountKey=…)",
        example: "AccountKey=CzBVep/E6Q4zWH2ix+wRNluApcrvFDleg6jN8hc8YYar0PUaP2SJrtP4HUJnjLHW+yBFao+02f4jSG2St9wBJg==;EndpointSuffix=core.windows.net",
        keywords: &["accountkey="],
        pattern: r"AccountKey=(?P<secret>[A-Za-z0-9+/]{86}==)",
    },
    Rule {
        id: "digitalocean-token",
        what: "DigitalOcean token (dop_v1_…, doo_v1_…, dor_v1_…)",
        example: "dop_v1_0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
        keywords: &["_v1_"],
        pattern: r"\b(?P<secret>do[por]_v1_[a-f0-9]{64})\b",
    },
    Rule {
        id: "github-token",
        what: "GitHub token: personal (ghp_), OAuth (gho_), user-to-server (ghu_), server-to-server (ghs_), refresh (ghr_)",
        example: "ghp_R2d2C3poL7uK3sKyWalkrH4nS0l0Ch3wa1b2",
        keywords: &["ghp_", "gho_", "ghu_", "ghs_", "ghr_"],
        pattern: r"\b(?P<secret>gh[pousr]_[A-Za-z0-9]{36})\b",
    },
    Rule {
        id: "github-fine-grained-token",
        what: "GitHub fine-grained personal access token (github_pat_…)",
        example: "github_pat_11ABCDEFG0123456789abc_0123456789abcdefghijABCDEFGHIJ0123456789abcdefghijABCDEFGHI",
        keywords: &["github_pat_"],
        pattern: r"\b(?P<secret>github_pat_[A-Za-z0-9]{22}_[A-Za-z0-9]{59})\b",
    },
    Rule {
        id: "gitlab-token",
        what: "GitLab personal, project or group access token (glpat-…)",
        example: "glpat-Xy9_z8W7v6U5t4S3r2Q1",
        keywords: &["glpat-"],
        pattern: r"\b(?P<secret>glpat-[A-Za-z0-9_-]{20,})(?:[^A-Za-z0-9_-]|$)",
    },
    Rule {
        id: "npm-token",
        what: "npm access token (npm_…)",
        example: "npm_aB3dE5fG7hI9jK1lM3nO5pQ7rS9tU1vW3xY5",
        keywords: &["npm_"],
        pattern: r"\b(?P<secret>npm_[A-Za-z0-9]{36})\b",
    },
    Rule {
        id: "pypi-token",
        what: "PyPI upload token (pypi-AgEIcHlwaS5vcmc…)",
        example: "pypi-AgEIcHlwaS5vcmcCJGE2ZjQ0ZDI1LWI0ZjctNDBiNC1hNmE1LWYzZTA0YjkzMjQ0ZgACKlszLCJi",
        keywords: &["pypi-ageichlwas5vcmc"],
        pattern: r"\b(?P<secret>pypi-AgEIcHlwaS5vcmc[A-Za-z0-9_-]{50,})",
    },
    Rule {
        id: "openai-api-key",
        what: "OpenAI API key (sk-…T3BlbkFJ…, project, service account and admin keys too)",
        example: "sk-proj-Ab3De5Gh7Jk9Mn1Pq3St5VwT3BlbkFJXy7Za9Bc1De3Fg5Hi7Jk9",
        keywords: &["t3blbkfj"],
        pattern: r"\b(?P<secret>sk-(?:(?:proj|svcacct|admin)-)?[A-Za-z0-9_-]{20,}T3BlbkFJ[A-Za-z0-9_-]{20,})(?:[^A-Za-z0-9_-]|$)",
    },
    Rule {
        id: "anthropic-api-key",
        what: "Anthropic API or admin key (sk-ant-api03-…, sk-ant-admin01-…)",
        example: "sk-ant-api03-Ab3De5Gh7Jk9Mn1Pq3St5Vw7Yz9Ab3De5Gh7Jk9Mn1Pq3St5Vw7Yz9Ab3De5Gh7Jk9Mn1Pq3St5Vw7Yz9Ab3De5Gh7JkAA",
        keywords: &["sk-ant-"],
        pattern: r"\b(?P<secret>sk-ant-(?:api|admin)0\d-[A-Za-z0-9_-]{80,}AA)(?:[^A-Za-z0-9_-]|$)",
    },
    Rule {
        id: "huggingface-token",
        what: "Hugging Face access token (hf_…)",
        example: "hf_AbCdEfGhIjKlMnOpQrStUvWxYzAbCdEfGh",
        keywords: &["hf_"],
        pattern: r"\b(?P<secret>hf_[A-Za-z]{34})\b",
    },
    Rule {
        id: "groq-api-key",
        what: "Groq API key (gsk_…)",
        example: "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",
        keywords: &["gsk_"],
        pattern: r"\b(?P<secret>gsk_[A-Za-z0-9]{52})\b",
    },
    Rule {
        id: "xai-api-key",
        what: "xAI API key (xai-…)",
        example: "xai-Ab3De5Gh7Jk9Mn1Pq3St5Vw7Yz9Ab3De5Gh7Jk9Mn1Pq3St5Vw7Yz9Ab3De5Gh7Jk9Mn1Pq3St5Vw7Yz",
        keywords: &["xai-"],
        pattern: r"\b(?P<secret>xai-[A-Za-z0-9]{80})\b",
    },
    Rule {
        id: "stripe-key",
        what: "Stripe secret or restricted key (sk_live_, rk_live_, sk_test_, rk_test_)",
        example: "sk_live_51Hx2Ab3De5Gh7Jk9Mn1Pq3St",
        keywords: &["_live_", "_test_"],
        pattern: r"\b(?P<secret>[rs]k_(?:live|test)_[A-Za-z0-9]{24,})\b",
    },
    Rule {
        id: "sendgrid-api-key",
        what: "SendGrid API key (SG.….…)",
        example: "SG.Ab3De5Gh7Jk9Mn1Pq3St5V.Ab3De5Gh7Jk9Mn1Pq3St5Vw7Yz9Ab3De5Gh7Jk9Mn1P",
        keywords: &["sg."],
        pattern: r"\b(?P<secret>SG\.[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43})(?:[^A-Za-z0-9_-]|$)",
    },
    Rule {
        id: "slack-token",
        what: "Slack bot, user, app or config token (xoxb-, xoxp-, xoxa-, xoxr-, xoxe-, xapp-)",
        example: "xoxb-1234567890-1234567890123-Ab3De5Gh7Jk9Mn1Pq3St5Vw7",
        keywords: &["xox", "xapp-"],
        pattern: r"\b(?P<secret>(?:xox[bpaer]|xoxe\.xox[bp])-[0-9]{1,}-[A-Za-z0-9-]{8,}|xapp-\d-[A-Z0-9]+-\d+-[a-f0-9]{32,})\b",
    },
    Rule {
        id: "slack-webhook",
        what: "Slack incoming webhook URL",
        example: "https://hooks.slack.com/services/T0ABCDEFG/B0ABCDEFG/Ab3De5Gh7Jk9Mn1Pq3St5Vw7",
        keywords: &["hooks.slack.com"],
        pattern: r"(?P<secret>hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9+/]{40,})",
    },
    Rule {
        id: "discord-webhook",
        what: "Discord webhook URL",
        example: "https://discord.com/api/webhooks/123456789012345678/Ab3De5Gh7Jk9Mn1Pq3St5Vw7Yz9Ab3De5Gh7Jk9Mn1Pq3St5Vw7Yz9Ab3De5Gh7Jk9Mn1",
        keywords: &["/api/webhooks/"],
        pattern: r"discord(?:app)?\.com/api/webhooks/[0-9]{17,20}/(?P<secret>[A-Za-z0-9_-]{60,})",
    },
    Rule {
        id: "telegram-bot-token",
        what: "Telegram bot token (<bot id>:AA…)",
        example: "123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw7",
        keywords: &[":aa"],
        pattern: r"\b(?P<secret>[0-9]{8,10}:AA[0-9A-Za-z_-]{33})(?:[^0-9A-Za-z_-]|$)",
    },
    Rule {
        id: "private-key",
        what: "PEM private key block (RSA, EC, DSA, OpenSSH, PKCS#8, PGP), with its body",
        example: "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW\nQyNTUxOQAAACDh\n-----END OPENSSH PRIVATE KEY-----\n",
        keywords: &["private key"],
        pattern: r"(?P<secret>-----BEGIN[ A-Z0-9_-]{0,100}PRIVATE KEY(?: BLOCK)?-----(?:\\[nr]|[\s\r\n])+[A-Za-z0-9+/=:,\s\\-]{64,}?-----END[ A-Z0-9_-]{0,100}PRIVATE KEY(?: BLOCK)?-----)",
    },
    Rule {
        id: "jwt",
        what: "JSON Web Token (eyJ….eyJ….…), signed",
        example: "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
        keywords: &["eyj"],
        pattern: r"\b(?P<secret>eyJ[A-Za-z0-9_-]{10,}\.eyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{16,})(?:[^A-Za-z0-9_.-]|$)",
    },
    Rule {
        id: "connection-string-password",
        what: "password in a database or broker URL (postgres, mysql, mariadb, mongodb, redis, amqp, mssql, sqlserver: scheme://user:password@host), placeholders such as ${VAR}, <pass> or password excepted",
        example: "postgres://app:Tr0ub4dor&3@db.internal:5432/app",
        keywords: &["://"],
        pattern: r#"\b(?:postgres(?:ql)?|mysql|mariadb|mongodb(?:\+srv)?|rediss?|amqps?|mssql|sqlserver)://[^:/\s@"'\\]*:(?P<secret>[^@/\s"'\\]{3,})@[A-Za-z0-9.-]+"#,
    },
];

/// Passwords that only say where one goes (`user:password@`, `:${DB_PASSWORD}@`, `:<pass>@`).
fn placeholder(secret: &[u8]) -> bool {
    let lower = secret.to_ascii_lowercase();
    let words: [&[u8]; 8] = [
        b"password",
        b"passwd",
        b"pass",
        b"secret",
        b"changeme",
        b"example",
        b"xxx",
        b"***",
    ];
    matches!(secret.first(), Some(b'$' | b'<' | b'{' | b'%' | b'['))
        || words.contains(&lower.as_slice())
        || lower.iter().all(|&b| b == b'*' || b == b'x' || b == b'.')
}

/// A credential found on a line.
#[derive(Debug, Clone)]
pub struct Hit<'l> {
    pub rule: &'static Rule,
    pub secret: &'l [u8],
}

struct Compiled {
    keywords: AhoCorasick,
    /// Which rule each keyword belongs to.
    owners: Vec<usize>,
    patterns: Vec<Regex>,
}

static COMPILED: LazyLock<Compiled> = LazyLock::new(|| {
    let (mut words, mut owners) = (Vec::new(), Vec::new());
    for (at, rule) in RULES.iter().enumerate() {
        for word in rule.keywords {
            words.push(*word);
            owners.push(at);
        }
    }
    Compiled {
        keywords: AhoCorasickBuilder::new()
            .ascii_case_insensitive(true)
            .build(&words)
            .expect("fixed keywords"),
        owners,
        patterns: RULES
            .iter()
            .map(|r| Regex::new(r.pattern).expect("fixed patterns"))
            .collect(),
    }
});

/// The credentials on `line`, in rule order then position.
pub fn find(line: &[u8]) -> Vec<Hit<'_>> {
    let compiled = &*COMPILED;
    let mut tried = vec![false; RULES.len()];
    for found in compiled.keywords.find_overlapping_iter(line) {
        tried[compiled.owners[found.pattern().as_usize()]] = true;
    }
    let mut hits = Vec::new();
    for (at, rule) in RULES.iter().enumerate().filter(|(at, _)| tried[*at]) {
        for caps in compiled.patterns[at].captures_iter(line) {
            let secret = caps
                .name("secret")
                .unwrap_or_else(|| caps.get(0).expect("a match"));
            if rule.id == "connection-string-password" && placeholder(secret.as_bytes()) {
                continue;
            }
            hits.push(Hit {
                rule,
                secret: secret.as_bytes(),
            });
        }
    }
    hits
}

/// A name for the rule set as it is: a scan remembered under another is not trusted.
pub fn fingerprint() -> String {
    let mut all = String::new();
    for rule in RULES {
        all.push_str(rule.id);
        all.push('\0');
        all.push_str(rule.pattern);
        all.push('\0');
        all.push_str(&rule.keywords.join(","));
        all.push('\n');
    }
    crate::digest::Digest::of(all.as_bytes()).to_hex()[..16].to_string()
}

/// What a person may see of a secret: its first and last characters (at most four each, fewer for
/// a short one, so that most of it stays hidden), `ghp_…a1b2`.
pub fn mask(secret: &[u8]) -> String {
    let text = String::from_utf8_lossy(secret);
    let chars: Vec<char> = text.chars().collect();
    let keep = (chars.len() / 5).min(4);
    let head: String = chars[..keep].iter().collect();
    let tail: String = chars[chars.len() - keep..].iter().collect();
    format!("{head}…{tail}")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// For every rule, a near miss it must pass over.
    const NEAR_MISSES: &[(&str, &str)] = &[
        (
            "aws-access-key-id",
            "the word AKIAQ3EGTQ5NQ7XVZ4PLX is one letter too long",
        ),
        (
            "aws-secret-access-key",
            "aws_secret_access_key = ${AWS_SECRET_ACCESS_KEY}",
        ),
        (
            "google-api-key",
            "AIzaSy is how the prefix looks, AIzaSyShort",
        ),
        (
            "google-oauth-client-secret",
            "GOCSPX- is the prefix, GOCSPX-short",
        ),
        ("azure-storage-key", "AccountKey=<your key here>"),
        (
            "digitalocean-token",
            "dop_v1_ tokens are 64 hex digits: dop_v1_0123456789abcdef",
        ),
        (
            "github-token",
            "a variable named ghp_token_prefix_length, and ghp_ alone",
        ),
        (
            "github-fine-grained-token",
            "tokens start with github_pat_ followed by 82 characters",
        ),
        ("gitlab-token", "glpat-xxxx is a placeholder"),
        ("npm-token", "npm_config_cache=/home/me/.npm"),
        (
            "pypi-token",
            "username = __token__ and password = pypi-AgEIcHlwaS5vcmc…",
        ),
        (
            "openai-api-key",
            "the task-management-system-config-loader module",
        ),
        ("anthropic-api-key", "export ANTHROPIC_API_KEY=sk-ant-..."),
        (
            "huggingface-token",
            "see hf_hub_download(repo_id, filename)",
        ),
        ("groq-api-key", "the gsk_ prefix marks Groq keys"),
        ("xai-api-key", "the xai-sdk package and xai-grok-client"),
        (
            "stripe-key",
            "def test_ask_live_question(): uses rk_test_fixture",
        ),
        (
            "sendgrid-api-key",
            "Singapore is SG. and the SG.config file",
        ),
        ("slack-token", "tokens look like xoxb-… or xoxp-…"),
        (
            "slack-webhook",
            "post to https://hooks.slack.com/services/… with your webhook",
        ),
        (
            "discord-webhook",
            "https://discord.com/api/webhooks/{id}/{token}",
        ),
        (
            "telegram-bot-token",
            "at 12:34:56 the build at 2026-01-02T10:00:AA failed",
        ),
        (
            "private-key",
            r#"if line.startswith("-----BEGIN RSA PRIVATE KEY-----"): parse(line)"#,
        ),
        ("jwt", "a JWT is eyJhbGciOi….eyJzdWIi….signature"),
        (
            "connection-string-password",
            r#"DATABASE_URL="postgres://app:${DB_PASSWORD}@db:5432/app" or postgres://user:password@localhost/db"#,
        ),
    ];

    fn hits(line: &[u8]) -> Vec<(&'static str, String)> {
        find(line)
            .iter()
            .map(|h| (h.rule.id, String::from_utf8_lossy(h.secret).into_owned()))
            .collect()
    }

    #[test]
    fn every_rule_finds_its_example_in_a_session_line() {
        for rule in RULES {
            // As a JSON Lines session spells it: inside a string, newlines escaped.
            let text = format!("I set {} and ran the tests.", rule.example);
            let line = serde_json::json!({"type": "message", "text": text}).to_string();
            let found = hits(line.as_bytes());
            let ours: Vec<_> = found.iter().filter(|(id, _)| *id == rule.id).collect();
            assert_eq!(ours.len(), 1, "{}: {line} gave {found:?}", rule.id);
            let spelled = serde_json::to_string(rule.example).unwrap();
            assert!(
                spelled.contains(ours[0].1.as_str()),
                "{}: {}",
                rule.id,
                ours[0].1
            );
        }
    }

    #[test]
    fn every_rule_passes_over_its_near_miss() {
        for rule in RULES {
            let Some((_, missed)) = NEAR_MISSES.iter().find(|c| c.0 == rule.id) else {
                panic!("rule {} has no near miss", rule.id);
            };
            let found = hits(missed.as_bytes());
            assert!(found.is_empty(), "{}: {missed:?} gave {found:?}", rule.id);
        }
    }

    #[test]
    fn no_rule_finds_what_sessions_are_full_of() {
        let ordinary = [
            "019c2b1e-7a44-7c31-9c1e-0f5b2a1d9e77",
            "sha256 e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
            "commit 1f3a9c2d4e5b6a7c8d9e0f1a2b3c4d5e6f7a8b9c",
            "https://github.com/rust-lang/rust/blob/master/src/lib.rs",
            "mongodb://localhost:27017/test",
            "fn sk_live_check(key: &str) -> bool",
        ];
        for line in ordinary {
            assert!(find(line.as_bytes()).is_empty(), "{line}");
        }
    }

    #[test]
    fn a_mask_shows_a_little_of_each_end() {
        assert_eq!(
            mask(b"ghp_R2d2C3poL7uK3sKyWalkrH4nS0l0Ch3wa1b2"),
            "ghp_…a1b2"
        );
        assert_eq!(mask(b"hunter22hunter"), "hu…er");
        assert_eq!(mask(b"abc"), "…");
    }
}
