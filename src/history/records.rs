//! A session's blocks and marks as JSON records (`ctxfold show --json`): each block as the seed
//! ledger sees it, its blockId, `code` and `sha256` computed as a span's are (so a record found
//! by `recall` is the same block here), with the line it is on and its turn.

use serde::Serialize;
use serde_json::Value;

use crate::agents::Mark;
use crate::blocks::block::{code, sha256_hex};
use crate::ledger::Block;

#[derive(Serialize)]
struct BlockRecord<'a> {
    #[serde(rename = "type")]
    record: &'static str,
    line: u64,
    turn: u64,
    #[serde(rename = "blockId")]
    block_id: &'a str,
    kind: &'static str,
    code: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    tool: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    call: Option<Call<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    exit: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    failed: Option<bool>,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    has_image: bool,
    #[serde(rename = "fullOutputPath", skip_serializing_if = "Option::is_none")]
    full_output_path: Option<&'a str>,
    sha256: String,
    text: &'a str,
}

#[derive(Serialize)]
struct Call<'a> {
    name: &'a str,
    args: &'a Value,
}

/// The record of `block`, on line `line` in turn `turn`.
pub fn block(line: u64, turn: u64, block: &Block) -> String {
    let record = BlockRecord {
        record: "block",
        line,
        turn,
        block_id: &block.id,
        kind: block.kind.name(),
        code: code(&block.id),
        tool: block.tool.as_deref(),
        call: block.call.as_ref().map(|c| Call {
            name: &c.name,
            args: &c.args,
        }),
        exit: block.outcome.and_then(|o| o.exit),
        failed: block.outcome.map(|o| o.failed),
        has_image: block.has_image,
        full_output_path: block.full_output_path.as_deref(),
        sha256: sha256_hex(&block.text),
        text: &block.text,
    };
    serde_json::to_string(&record).expect("records serialize")
}

/// The record of `mark`, on line `line` in turn `turn`.
pub fn mark(line: u64, turn: u64, mark: &Mark) -> String {
    let mut record = match mark {
        Mark::Model(model) => serde_json::json!({"type": "model", "model": model}),
        Mark::Thinking(level) => serde_json::json!({"type": "thinking_level", "level": level}),
        Mark::Compaction { tokens_before } => {
            serde_json::json!({"type": "compaction", "tokens_before": tokens_before})
        }
    };
    record["line"] = line.into();
    record["turn"] = turn.into();
    record.to_string()
}
