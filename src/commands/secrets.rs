//! `ctxfold secrets`: the credentials sessions hold, before they leave the machine.

use crate::cli::{Command, Io, Status, StoreArgs, TalkArgs, emit};
use crate::commands::show::open_if_any;
use crate::error::{Error, Result};
use crate::history::named::Named;
use crate::ledger::FileSource;
use crate::secrets::remembered::Remembered;
use crate::secrets::rules::RULES;
use crate::secrets::scan::{Finding, scan};
use crate::store::Store;

/// Find credentials in sessions: API keys, tokens, private keys, passwords
#[derive(Debug, clap::Parser)]
#[command(name = "ctxfold-secrets", version, after_long_help = crate::cli::EXIT_STATUS)]
#[command(long_about = long_about())]
pub struct SecretsArgs {
    /// Sessions: folded ids or unique prefixes, or session files by path [default: every folded
    /// session]
    #[arg(value_name = "SESSION", add = crate::cli::complete::session_ids())]
    pub sessions: Vec<String>,
    /// JSON Lines: one object a finding
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub talk: TalkArgs,
    #[command(flatten)]
    pub store: StoreArgs,
}

/// The manual: what the command does, then the rules as the scan defines them.
fn long_about() -> String {
    let rules: Vec<String> = RULES
        .iter()
        .map(|r| format!("{}: {}", r.id, r.what))
        .collect();
    format!(
        "{ABOUT}\n\nRules (RULE: what it finds): {}.\n\nExit status 1 when anything is found, 0 when \
         nothing is.",
        rules.join("; ")
    )
}

const ABOUT: &str = "Find credentials in sessions: API keys, tokens, private keys, passwords\n\n\
Scans folded sessions (every current one in the store when none is named; a SESSION is an id or a \
unique prefix of one) and session files named by path (folded or not, as they are on disk), line by \
line, for credentials of well-known formats. Each finding is printed as \
`SESSION:LINE<tab>RULE<tab>PREVIEW<tab>BLOCK`: the line of the session file, the rule that matched, a \
masked preview that shows only a few characters of each end (`ghp_…a1b2`), and the seed blockId of \
the block that holds it (as `ctxfold show` and `ctxfold-verify-span` name blocks), `-` for none \
(session metadata, a file of no agent). With --json, one JSON object a finding: \
{\"session\",\"line\",\"blockId\",\"rule\",\"preview\"}. The credential itself is never printed.\n\n\
What a folded session was found to hold is remembered by its bytes' sha256 \
(`<store>/cache/secrets.jsonl`, never mirrored, masked previews only): a second scan, and the scan \
`ctxfold sync` runs over what it is about to push, reads only what is new. A change of the rules \
below forgets it all.";

/// A finding with the session it is in, as reported.
#[derive(serde::Serialize)]
struct Reported<'f> {
    session: &'f str,
    #[serde(flatten)]
    finding: &'f Finding,
}

impl Command for SecretsArgs {
    fn run(self, io: &mut Io<'_>) -> Result<Status> {
        let scanned = match self.sessions.is_empty() {
            true => every_folded(&self.store.open()?)?,
            false => named(&self.sessions, open_if_any(&self.store)?.as_ref())?,
        };
        let mut found = 0u64;
        let mut sessions = 0u64;
        for (session, findings) in &scanned {
            sessions += u64::from(!findings.is_empty());
            for finding in findings {
                found += 1;
                if self.json {
                    let reported = Reported { session, finding };
                    emit(
                        io.out,
                        serde_json::to_string(&reported).expect("findings serialize"),
                    )?;
                } else {
                    emit(
                        io.out,
                        format_args!(
                            "{session}:{}\t{}\t{}\t{}",
                            finding.line,
                            finding.rule,
                            finding.preview,
                            finding.block.as_deref().unwrap_or("-")
                        ),
                    )?;
                }
            }
        }
        io.note(format_args!(
            "{} in {} of {} scanned",
            crate::cli::human::count(found, "secret"),
            sessions,
            crate::cli::human::count(scanned.len() as u64, "session"),
        ));
        Ok(match found {
            0 => Status::Success,
            _ => Status::Negative,
        })
    }
}

/// What every current folded session holds, by id.
fn every_folded(store: &Store) -> Result<Vec<(String, Vec<Finding>)>> {
    let manifests = store
        .manifest_files()?
        .iter()
        .filter(|p| p.parent() == Some(store.manifests_dir().as_path()))
        .map(|p| store.load_manifest_at(p))
        .collect::<Result<Vec<_>>>()?;
    folded(store, manifests)
}

fn folded(
    store: &Store,
    manifests: Vec<crate::store::manifest::Manifest>,
) -> Result<Vec<(String, Vec<Finding>)>> {
    let remembered = Remembered::load(store);
    let findings = remembered.findings(store, &manifests)?;
    remembered.save(store)?;
    Ok(manifests
        .into_iter()
        .map(|m| m.session.id)
        .zip(findings)
        .collect())
}

/// What the sessions named hold: a file named by path as it is on disk, a folded session from
/// the store, one found only on disk from its file.
fn named(specs: &[String], store: Option<&Store>) -> Result<Vec<(String, Vec<Finding>)>> {
    let mut scanned = Vec::new();
    for spec in specs {
        let named = Named::find(spec, store)?;
        let findings = match (&named.manifest, store, &named.file) {
            (_, _, Some(file)) if named.by_path => scan(&FileSource(file.clone()))?,
            (Some(manifest), Some(store), _) => folded(store, vec![manifest.clone()])?
                .pop()
                .map(|(_, f)| f)
                .unwrap_or_default(),
            (_, _, Some(file)) => scan(&FileSource(file.clone()))?,
            _ => return Err(Error::not_found(format!("{spec}: no session to scan"))),
        };
        scanned.push((named.describe(), findings));
    }
    Ok(scanned)
}
