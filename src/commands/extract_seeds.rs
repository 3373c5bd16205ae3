//! `ctxfold-extract-seeds`: a session ledger's seed index records on stdout.

use std::path::PathBuf;

use crate::cli::{Command, Io, Status, StoreArgs, emit};
use crate::error::{Error, Result};
use crate::ledger::{FileSource, Ledger, Source, StoreSource};
use crate::seeds::extract::extract;
use crate::seeds::facts::FactsCache;
use crate::seeds::plan::{Options, Through};

/// Extract seed index v2 records (`fold-index`) from a Pi session, a Codex rollout or a Claude Code
/// transcript
///
/// LEDGER is a session file (plain, or `.jsonl.zst`); `--session ID` reads a folded session out of the
/// store instead, streaming. The format is detected from the first line (a Pi `session` header, a
/// Claude Code row or record naming its `sessionId`, else a Codex rollout); lines that do not parse
/// are passed over and counted on stderr.
///
/// By default one `compact` record per compaction: a Pi `compaction` covers the branch it is on, up to
/// its `firstKeptEntryId` (v1: `firstKeptEntryIndex`), with the `context_edit`s appended before it
/// applied (the latest per target; a null replacement omits the target); a Codex `compacted` line
/// covers every line before it; a Claude Code `compact_boundary` covers the branch before it up to
/// the first row it keeps (`compactMetadata.preservedSegment.headUuid`). Seqs count from 1 in
/// ledger order. `--final` adds a `compact` record over the whole active branch (Pi: from the last
/// entry up through `parentId`s; Codex: every line; Claude Code: from the file's last object up
/// through `parentUuid`s, see below). `--through ENTRY` gives instead the record of one fold event a
/// live harness reports: the context view (what follows the latest compaction on the branch) up to
/// ENTRY (a Pi entry id, a Claude Code row's uuid, or a 1-based line number among parsed entries),
/// folding tool results and thinking only, with the harness's `--trigger`, `--seq`, `--tokens` and
/// `--context-window`. The same input and flags give the same bytes: `at` and `usage` come from the
/// ledger (the entry's timestamp, or for one without, that of the nearest entry before it on its
/// branch; Pi `tokensBefore` or the last assistant `usage.totalTokens`; Codex the last
/// `token_count` event's `last_token_usage.total_tokens` and `model_context_window`; Claude Code
/// `compactMetadata.preTokens` or the last assistant row's `input_tokens` +
/// `cache_creation_input_tokens` + `cache_read_input_tokens`), never the clock.
///
/// Spans. A span names a block by `blockId`; `log.bytes` is the UTF-8 length of the block text,
/// `log.lines` 0 for an empty text else the count of `\n` plus one, `sha256` the hex sha256 of the
/// text, and `code` the FNV-1a 32-bit hash of the blockId's UTF-16 code units (basis 0x811c9dc5, prime
/// 0x01000193) in base 36, zero-padded to 6 characters, the last 6 kept. `turn` starts at 0 and goes up
/// by one at each user message. Compact records span every non-user block; tool calls never get spans.
///
/// Pi blocks (the context-fold extension's model): a user message is `u:<timestamp>` (content string,
/// or its text parts joined by `\n`); assistant part j (j counts every part of the content) is
/// `a:<responseId>:p<j>`, or `a:t<timestamp>:p<j>` without a responseId: thinking (not redacted,
/// not empty), text (not empty), toolCall (`<name> <arguments as written>`); a toolResult is
/// `r:<toolCallId>` (text parts joined by `\n`; one holding an image gets no span); a compaction or
/// branch summary is `s:<timestamp>` (its `summary`). `<timestamp>` is the message's own `timestamp`
/// as written (for compaction and branch_summary entries, the entry's). A replaced block is
/// `<blockId>:edit:<editId>`: the target message with its content replaced (a string becomes one text
/// part), blocked again, without `fullOutputPath`.
///
/// Codex blocks (the same model mapped onto a rollout; only `response_item` and `compacted` lines make
/// blocks, `replacement_history` never does, encrypted reasoning never does): a `message` with role
/// `user` is `u:<line timestamp>` (its `input_text` and `text` parts joined by `\n`; one that opens with
/// `<environment_context>`, `<user_instructions>`, `<permissions instructions>`, `<INSTRUCTIONS>`,
/// `# AGENTS.md instructions`, `<turn_aborted>` or `<user_shell_command>` is harness context: no
/// turn, no userMessages entry); a `message` with role `assistant` gives `a:<A>:p<j>` for each
/// non-empty `output_text` (or `text`) part j; a `reasoning` item gives `a:<A>:p<j>` for each non-empty
/// `summary_text` part, then `reasoning_text` part, j counting over `summary` then `content`; a
/// `function_call_output` or `custom_tool_call_output` is `r:<call_id>` (its `output` string as is, else the
/// `input_text`, `output_text` and `text` parts of the `output` array, or of an `output` object's
/// `content`, joined by `\n`; one holding an image gets no span; `tool` is the name of the call with
/// that call_id, else `tool`); a
/// `compacted` line with a non-empty `message` is `s:<line timestamp>`. The anchor A is the item's
/// `id`, else `t<line timestamp>`. Rollout items share timestamps: the k-th use (k ≥ 2) of an anchor in
/// the file (counted apart for `u:` ids and for `a:` anchors, assistant and reasoning items together) becomes
/// `<anchor>~<k>` (`u:2026-01-02T16:39:45.349Z~2`, `a:t2026-01-02T16:39:45.349Z~2:p0`).
///
/// Claude Code blocks (the same model mapped onto a transcript). An entry is one JSON object: a line
/// holding two (an append to a line without its newline) is read as both, and a torn object is
/// passed over up to the next row or record. Only `user` and `assistant` rows make blocks:
/// attachments, `system` rows, `summary` lines, the API request records and every other side record
/// never do. A `user` row whose content is a string or text blocks (joined by `\n`) is `u:<uuid>`;
/// it is harness context (no turn, no userMessages entry) when it is `isMeta`, or its text opens
/// with a tag (`<` then `[a-z][A-Za-z0-9_-]*` then `>` or a space: `<command-name>`,
/// `<local-command-stdout>`, `<system-reminder>`, `<task-notification>`, …) or is an
/// `[Request interrupted by user…]` notice (Claude Code's own rule for the prompt its picker shows);
/// one that opens with `<bash-input>` is a command a person ran (`!`): a `bash` tool call with that
/// command; one with `isCompactSummary` is the compaction summary `s:<uuid>`. Each `tool_result`
/// block of a user row is `r:<tool_use_id>` (its content string, else its text blocks joined by
/// `\n`; one holding an image gets no span; `tool` is the name of the tool_use with that id, else
/// `tool`; `fullOutputPath` is the row's `toolUseResult.persistedOutputPath`, the file in the
/// session's `tool-results/` folder that holds the whole output of a result the transcript keeps
/// only a preview of). A failed Bash command's exit status is in its result's text as the model
/// saw it (a first line `Exit code N`, with `is_error` set), and nowhere else; a successful one has
/// none. An `assistant` row's content block j (j counts every block of the row; Claude Code
/// writes one per row) is `a:<uuid>:p<j>`: thinking (not empty; never redacted_thinking), text (not
/// empty), tool_use (`<name> <input as written>`; a shell-class tool's `command`, `Bash` included,
/// is a command, a `file_path` or `path` a file). The branch: a row's parent is its `parentUuid`
/// (a compaction boundary's, whose `parentUuid` is null, its `logicalParentUuid`); a side record
/// follows the object before it, a `last-prompt` the row it names as `leafUuid`, so the active
/// branch ends at the file's last object and runs back through every compaction.
///
/// Lexicons. errors: trimmed lines matching the error lexicon (the extension's, without zero counts
/// such as `0 failed`, plus errno texts), one per shape (digit runs folded), spread over kinds,
/// clipped to 240 characters, at most 24. identifiers: uuids, hex ids, dotted versions, marked symbols
/// and 4+ digit numbers, at most 64, favouring tokens from large tool outputs, then rarer, longer and
/// more recent ones. files: tool-input paths and path-shaped tokens, relative to the session's cwd when
/// under it. commands: the command text shell-class tools ran. userMessages: the first line of each
/// user message, whitespace collapsed, at most 200 characters.
#[derive(Debug, clap::Parser)]
#[command(name = "ctxfold-extract-seeds", version, after_long_help = crate::cli::EXIT_STATUS)]
#[command(group = clap::ArgGroup::new("ledger_or_session").required(true).args(["ledger", "session"]))]
pub struct ExtractSeedsArgs {
    /// The session file (`.jsonl` or `.jsonl.zst`)
    #[arg(value_name = "LEDGER", value_hint = clap::ValueHint::FilePath)]
    pub ledger: Option<PathBuf>,
    /// Read the folded session with this id (or unique prefix of one) out of the store
    #[arg(long, value_name = "ID", add = crate::cli::complete::session_ids())]
    pub session: Option<String>,
    /// Add a `compact` record over the whole active branch
    #[arg(long = "final")]
    pub final_record: bool,
    /// Give the record of one fold event up to this entry (a Pi entry id, a Claude Code row's
    /// uuid, or a line number)
    #[arg(long, value_name = "ENTRY", requires_all = ["trigger", "seq", "tokens", "context_window"])]
    pub through: Option<String>,
    /// The fold event's trigger
    #[arg(long, value_parser = ["threshold", "cap"], requires = "through")]
    pub trigger: Option<String>,
    /// The fold event's seq
    #[arg(long, value_name = "N", requires = "through")]
    pub seq: Option<u64>,
    /// The context's size in tokens at the fold event
    #[arg(long, value_name = "T", requires = "through")]
    pub tokens: Option<u64>,
    /// The model's context window in tokens
    #[arg(long, value_name = "W", requires = "through")]
    pub context_window: Option<u64>,
    #[command(flatten)]
    pub store: StoreArgs,
}

impl Command for ExtractSeedsArgs {
    fn run(self, io: &mut Io<'_>) -> Result<Status> {
        let through = match (
            &self.through,
            &self.trigger,
            self.seq,
            self.tokens,
            self.context_window,
        ) {
            (Some(entry), Some(trigger), Some(seq), Some(tokens), Some(context_window)) => {
                Some(Through {
                    entry: entry.clone(),
                    trigger: trigger.clone(),
                    seq,
                    tokens,
                    context_window,
                })
            }
            (None, ..) => None,
            _ => {
                return Err(Error::usage(
                    "--through needs --trigger, --seq, --tokens and --context-window",
                ));
            }
        };
        let options = Options {
            final_record: self.final_record,
            through,
        };
        with_ledger(
            self.ledger.as_ref(),
            self.session.as_deref(),
            &self.store,
            &mut |source| {
                let ledger = Ledger::scan(source)?;
                if ledger.unparseable > 0 {
                    io.note(format_args!(
                        "{}: {} unparseable lines passed over",
                        source.describe(),
                        ledger.unparseable
                    ));
                }
                extract(&ledger, &options, &FactsCache::default(), &mut |record| {
                    emit(io.out, &record)
                })
            },
        )?;
        Ok(Status::Success)
    }
}

/// Run `f` over the ledger a command names: a file, or a folded session in the store.
pub fn with_ledger<T>(
    file: Option<&PathBuf>,
    session: Option<&str>,
    store: &StoreArgs,
    f: &mut dyn FnMut(&dyn Source) -> Result<T>,
) -> Result<T> {
    match (file, session) {
        (Some(path), _) => f(&FileSource(path.clone())),
        (None, Some(id)) => {
            let store = store.open()?;
            let manifest = store.load_named_manifest(id)?;
            f(&StoreSource {
                store: &store,
                manifest: &manifest,
            })
        }
        (None, None) => Err(Error::usage("name a ledger file or --session ID")),
    }
}
