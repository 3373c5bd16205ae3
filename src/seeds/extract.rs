//! Extraction: a ledger's blocks fed through the lexicons into one record per plan, capped and
//! clipped as the contract says. Deterministic: the same ledger and options give the same records.

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::Arc;

use compact_str::CompactString;
use serde::{Deserialize, Serialize};

use crate::agents::BlocksState;
use crate::blocks::block::{code, log_bytes, log_lines};
use crate::error::Result;
use crate::ledger::{Block, BlockKind, Ledger, Position, Scanned, Visit};
use crate::pipeline::{self, Feed};

use super::Map;
use super::facts::{Facts, FactsCache};
use super::lexicon::{commands, files, identifiers, user};
use super::plan::{Base, Options, Plan, plans};
use super::record::{FoldIndex, HARNESS, Log, Made, Span, UserMessage, VERSION};
use super::span_list::SpanList;

pub const MAX_IDENTIFIERS: usize = 64;
pub const MAX_ERRORS: usize = 24;
pub const MAX_ERROR_CHARS: usize = 240;
pub const MAX_FIRST_LINE_CHARS: usize = 200;
const MAX_COMMANDS: usize = 48;
const MAX_OUTPUT_FILES: usize = 64;
const MAX_INPUT_FILES: usize = 256;
/// Bounds on candidates held while a record is built (memory, not output).
const MAX_ERROR_CANDIDATES: usize = 512;
const MAX_IDENTIFIER_CANDIDATES: usize = 16384;

/// Hand the records of `ledger` under `options` to `each`, in seq order, each as soon as it and
/// those before it are complete: a long session's records re-list every earlier span, and holding
/// them all would hold its index.
pub fn extract(
    ledger: &Ledger<'_>,
    options: &Options,
    facts: &FactsCache,
    each: &mut dyn FnMut(Made<'_>) -> Result<()>,
) -> Result<()> {
    let plans = plans(ledger, options)?;
    let apart = ledger.bytes >= apart_bytes();
    build(ledger, &plans, true, apart, facts, Resume::default(), each).map(drop)
}

/// How an extraction relates to the one before it and the one after (see [`extract_from`]).
#[derive(Default)]
pub struct Resume {
    /// Where an extraction of the ledger's first entries ended, before an append.
    pub from: Option<Midway>,
    /// Whether to say where this one ends.
    pub keep: bool,
}

/// [`extract`] with a final record (a fold's records), going on from `resume.from` when it fits:
/// the entries it saw are not walked again, and only the records over more entries than those are
/// handed on (the others were handed on then). Returns where this extraction ended when asked
/// (`resume.keep`) and a later one can go on from there.
pub fn extract_from(
    ledger: &Ledger<'_>,
    facts: &FactsCache,
    resume: Resume,
    each: &mut dyn FnMut(Made<'_>) -> Result<()>,
) -> Result<Option<Midway>> {
    let options = Options {
        final_record: true,
        through: None,
    };
    let plans = plans(ledger, &options)?;
    let apart = ledger.bytes >= apart_bytes();
    build(ledger, &plans, true, apart, facts, resume, each)
}

/// Where an extraction stood at the end of a ledger: the walk's place and the builder of its final
/// record (made only when that record covers the branch to the last entry without edits), but for
/// what that record lists whole: [`with_final`](Self::with_final) gives those back.
#[derive(Serialize, Deserialize)]
pub struct Midway {
    /// What the ledger's first pass found, to go on from: the entries walked are its entries.
    scanned: Arc<Scanned>,
    blocks: BlocksState,
    builder: Builder,
}

/// A walk going on from a [`Midway`].
struct Resumed {
    position: Position,
    /// What the final record then covered.
    base: Base,
    builder: Builder,
    /// The first plan not finished then.
    first: usize,
}

impl Midway {
    /// This midway (as kept, without the lists its builder's record gives whole) with those lists
    /// from `record`, the final record handed on by the extraction that ended here.
    pub fn with_final(mut self, record: FoldIndex) -> Option<Self> {
        let builder = &mut self.builder;
        builder.commands = (record.commands.iter())
            .map(|c| c.as_str().map(String::from))
            .collect::<Option<_>>()?;
        for span in &record.spans {
            builder.spans.set(&span.block_id, &span_json(span));
        }
        builder.files = record.files;
        for message in &record.user_messages {
            builder.user_message(message);
        }
        Some(self)
    }

    /// What the ledger's first pass had found where this extraction ended.
    pub fn scanned(&self) -> &Scanned {
        &self.scanned
    }

    /// How to go on in `ledger`; `None` unless `ledger` is the one this was made from grown by
    /// an append, and every plan not finished then goes on from its final record's builder.
    fn resume(self, ledger: &Ledger<'_>, plans: &[Plan]) -> Option<Resumed> {
        let entries = self.scanned.entries.len();
        let fits = self.scanned.agent == ledger.agent
            && self.scanned.session_id == ledger.session_id
            && self.scanned.cwd == ledger.cwd
            && (1..=ledger.entries.len()).contains(&entries);
        if !fits || !plans.iter().map(|p| p.entry).is_sorted() {
            return None;
        }
        let base = Base::of(ledger, entries);
        let first = plans.partition_point(|p| p.entry < entries);
        if !plans[first..]
            .iter()
            .all(|p| !p.fold_event && p.continues(&base))
        {
            return None;
        }
        let position = Position {
            entries,
            bytes: self.scanned.bytes,
            blocks: self.blocks.resume(ledger.agent.format())?,
        };
        let builder = self.builder;
        Some(Resumed {
            position,
            base,
            builder,
            first,
        })
    }
}

/// The record of each plan, in plan order; `share_prefixes: false` gives every plan a builder of
/// its own (the tests' reference for the shared way), and `apart` walks on a thread of its own
/// (see [`APART_BYTES`]). Going on from `resume.from` (see
/// [`extract_from`]), only the plans not finished there, each from the builder it left.
fn build(
    ledger: &Ledger<'_>,
    plans: &[Plan],
    share_prefixes: bool,
    apart: bool,
    cache: &FactsCache,
    resume: Resume,
    each: &mut dyn FnMut(Made<'_>) -> Result<()>,
) -> Result<Option<Midway>> {
    let session = ledger.session_id.as_deref().unwrap_or_default();
    let cwd = ledger.cwd.as_deref();
    let resumed = (resume.from)
        .filter(|_| share_prefixes)
        .and_then(|midway| midway.resume(ledger, plans));
    let (start, base, builder, first) = match resumed {
        Some(r) => (Some(r.position), r.base, r.builder, r.first),
        None => (None, Base::default(), Builder::default(), 0),
    };
    // A plan over the first n entries, without edits, is what a plan over more of them was when it
    // had seen n: those share one builder, and each record is a copy of it taken on the way. A
    // long session's compactions cover ever longer prefixes, so this turns work that grew with the
    // square of its length into work that grows with its records. (Going on from a base, the
    // entries after it count.)
    let mut chains: Vec<Chain> = match share_prefixes {
        true => [false, true]
            .into_iter()
            .map(|fold_event| Chain::of(plans, first, fold_event, &base, &builder))
            .collect(),
        false => Vec::new(),
    };
    let mut own: Vec<(usize, Builder)> = (first..plans.len())
        .filter(|&p| !share_prefixes || plans[p].run_after(&base).is_none())
        .map(|p| (p, builder.clone()))
        .collect();
    let mut records = InOrder::new(first, plans.len(), each);
    let own_plans: Vec<usize> = own.iter().map(|&(p, _)| p).collect();
    let ahead = Ahead {
        ledger,
        plans,
        first,
        own: &own_plans,
        cache,
    };
    let mut take = |step: Step| -> Result<()> {
        for chain in &mut chains {
            chain.take_ending(step.index, plans, session, &mut records)?;
        }
        let mut facts: Vec<BlockFacts> = (step.facts.into_iter())
            .map(|facts| BlockFacts { cache, facts })
            .collect();
        for chain in chains.iter_mut().filter(|c| c.wants(step.index)) {
            for (block, facts) in step.blocks.iter().zip(&mut facts) {
                chain.builder.add(block, chain.fold_event, cwd, facts);
            }
        }
        for (p, builder) in &mut own {
            let plan = &plans[*p];
            if !plan.covers(step.index) {
                continue;
            }
            match plan.edits.get(&step.index) {
                None => {
                    for (block, facts) in step.blocks.iter().zip(&mut facts) {
                        builder.add(block, plan.fold_event, cwd, facts);
                    }
                }
                Some(edit) => {
                    let (_, blocks) = (step.edited.iter())
                        .find(|(at, _)| at == edit)
                        .expect("the walk made every edit's blocks");
                    for block in blocks.iter().flatten() {
                        builder.add(block, plan.fold_event, cwd, &mut BlockFacts::new(cache));
                    }
                }
            }
        }
        Ok(())
    };
    let end = match apart {
        true => ahead.walk_apart(start, &mut take)?,
        false => ledger.walk_from(start, |visit| take(ahead.step(visit)))?,
    };
    let midway = end.filter(|_| resume.keep).and_then(|end| {
        let builder = final_builder(ledger, plans, &chains, &own)?;
        Some(Midway {
            scanned: ledger.scanned(end.bytes)?,
            blocks: BlocksState::Reader(end.blocks),
            builder: builder.without_lists(),
        })
    });
    for chain in &mut chains {
        chain.take_ending(usize::MAX, plans, session, &mut records)?;
    }
    for (p, mut builder) in own {
        records.put(p, builder.finish(&plans[p], session))?;
    }
    debug_assert!(records.is_done(), "every plan is finished");
    Ok(midway)
}

/// The builder of the final record, once every entry is walked, when a walk of the ledger grown
/// by an append can go on from it: the last plan covers the branch to the last entry, no edits.
fn final_builder<'b>(
    ledger: &Ledger<'_>,
    plans: &[Plan],
    chains: &'b [Chain],
    own: &'b [(usize, Builder)],
) -> Option<&'b Builder> {
    let last = plans.len().checked_sub(1)?;
    let plan = &plans[last];
    let entries = ledger.entries.len();
    let whole = plan.entry + 1 == entries
        && !plan.fold_event
        && plan.edits.is_empty()
        && plan.continues(&Base::of(ledger, entries));
    if !whole {
        return None;
    }
    match own.iter().find(|(p, _)| *p == last) {
        Some((_, builder)) => Some(builder),
        None => chains
            .iter()
            .find(|c| c.waiting.iter().any(|&(_, p)| p == last))
            .map(|c| &c.builder),
    }
}

/// The walk ahead of the builders (see [`build`]), for the plans from `first` on (those before
/// were finished by an earlier extraction); `own` are those with builders of their own, which
/// may apply edits.
struct Ahead<'a, 'l> {
    ledger: &'a Ledger<'l>,
    plans: &'a [Plan],
    first: usize,
    own: &'a [usize],
    cache: &'a FactsCache,
}

/// An extraction of a ledger of this many bytes or more has the walk (reading lines, making their
/// blocks and facts) run on a thread of its own, some entries ahead of the builders: a long
/// session's extraction is what a fold of it waits for last. Shorter ones are not worth the
/// thread.
pub const APART_BYTES: u64 = 64 << 20;

/// [`APART_BYTES`], which tests lower (see [`crate::test_sizes`]).
pub fn apart_bytes() -> u64 {
    crate::test_sizes::size("CTXFOLD_TEST_APART_BYTES", APART_BYTES)
}

/// Entries walked apart are handed on in batches of this many bytes of text (or [`STEPS`]
/// entries): one at a time would cost a wake-up of the builders each.
const STEP_BYTES: usize = 1 << 20;
const STEPS: usize = 256;

impl Ahead<'_, '_> {
    /// Walk from `start` on a thread of its own, handing each entry to `take` on this one.
    fn walk_apart(
        &self,
        start: Option<Position>,
        take: &mut dyn FnMut(Step) -> Result<()>,
    ) -> Result<Option<Position>> {
        let walk = |feed: &Feed<Vec<Step>>| {
            let (mut batch, mut bytes) = (Vec::new(), 0);
            let end = self.ledger.walk_from(start, |visit| {
                let step = self.step(visit);
                bytes += step.blocks.iter().map(|b| b.text.len()).sum::<usize>();
                batch.push(step);
                if bytes >= STEP_BYTES || batch.len() >= STEPS {
                    bytes = 0;
                    feed.send(std::mem::take(&mut batch))?;
                }
                Ok(())
            })?;
            feed.send(batch)?;
            Ok(end)
        };
        pipeline::split(4, walk, |batch| batch.into_iter().try_for_each(&mut *take))
    }

    fn step(&self, visit: Visit<'_>) -> Step {
        let mut edited: Vec<(usize, Option<Vec<Block>>)> = Vec::new();
        for &p in self.own {
            let plan = &self.plans[p];
            let edit = (plan.covers(visit.index))
                .then(|| plan.edits.get(&visit.index))
                .flatten();
            if let Some(&edit) = edit.filter(|e| !edited.iter().any(|(at, _)| at == *e)) {
                edited.push((edit, self.ledger.edited(&visit, edit)));
            }
        }
        // What the lexicons find in a block is worked out once, whichever records cover it.
        let covering = self.plans[self.first..]
            .iter()
            .filter(|p| p.covers(visit.index));
        let (plain, event) = covering.fold((false, false), |(plain, event), p| {
            (plain || !p.fold_event, event || p.fold_event)
        });
        let facts = (visit.blocks.iter())
            .map(|b| (plain && folds(b, false) || event && folds(b, true)).then_some(b))
            .map(|b| b.map(|b| self.cache.of(&b.text, b.kind == BlockKind::ToolResult)))
            .collect();
        Step {
            index: visit.index,
            blocks: visit.blocks,
            facts,
            edited,
        }
    }
}

/// One entry as the walk hands it to the builders: its blocks, their facts, and the blocks each
/// edit that a plan applies to it makes of it.
struct Step {
    index: usize,
    blocks: Vec<Block>,
    /// Each block's facts, when a record covering the entry folds it.
    facts: Vec<Option<Arc<Facts>>>,
    edited: Vec<(usize, Option<Vec<Block>>)>,
}

/// Records finished in any order, handed on in plan order.
struct InOrder<'e> {
    /// Those finished before one ahead of them: their own, past the builders that made them.
    waiting: Vec<Option<Made<'static>>>,
    next: usize,
    each: &'e mut dyn FnMut(Made<'_>) -> Result<()>,
}

impl<'e> InOrder<'e> {
    /// Plans `first..plans` to hand on (those before were handed on by an earlier extraction).
    fn new(first: usize, plans: usize, each: &'e mut dyn FnMut(Made<'_>) -> Result<()>) -> Self {
        Self {
            waiting: (0..plans).map(|_| None).collect(),
            next: first,
            each,
        }
    }

    /// Plan `p`'s record, and then every record now next in order.
    fn put(&mut self, p: usize, record: Made<'_>) -> Result<()> {
        if p != self.next {
            self.waiting[p] = Some(record.into_owned());
            return Ok(());
        }
        self.next += 1;
        (self.each)(record)?;
        while let Some(record) = self.waiting.get_mut(self.next).and_then(Option::take) {
            self.next += 1;
            (self.each)(record)?;
        }
        Ok(())
    }

    fn is_done(&self) -> bool {
        self.next == self.waiting.len()
    }
}

/// The prefix plans of one kind (see [`build`]): one builder, and the plans it serves, by where
/// they end.
struct Chain {
    fold_event: bool,
    builder: Builder,
    /// (prefix length, plan), longest first: the next to finish is last.
    waiting: Vec<(usize, usize)>,
}

impl Chain {
    /// The plans from `first` on of one kind that go on from `base` as one run, starting from
    /// `builder` (what saw the base).
    fn of(plans: &[Plan], first: usize, fold_event: bool, base: &Base, builder: &Builder) -> Self {
        let mut waiting: Vec<(usize, usize)> = (first..plans.len())
            .filter(|&p| plans[p].fold_event == fold_event)
            .filter_map(|p| plans[p].run_after(base).map(|n| (n, p)))
            .collect();
        waiting.sort_unstable_by(|a, b| b.cmp(a));
        Self {
            fold_event,
            builder: builder.clone(),
            waiting,
        }
    }

    /// Whether some plan of the chain covers entry `index`.
    fn wants(&self, index: usize) -> bool {
        self.waiting.first().is_some_and(|&(n, _)| index < n)
    }

    /// Finish the plans whose prefix ends before entry `index`.
    fn take_ending(
        &mut self,
        index: usize,
        plans: &[Plan],
        session: &str,
        records: &mut InOrder<'_>,
    ) -> Result<()> {
        while let Some(&(_, p)) = self.waiting.last().filter(|&&(n, _)| n <= index) {
            records.put(p, self.builder.finish(&plans[p], session))?;
            self.waiting.pop();
        }
        Ok(())
    }
}

/// A record being built. What its record lists whole (spans, files, commands, user messages)
/// is not kept with a [`Midway`]: the final record the midway came with gives them back.
#[derive(Default, Clone, Serialize, Deserialize)]
struct Builder {
    turn: u64,
    order: u64,
    /// The user messages as a record writes them, `,` between them: each written once, not again
    /// for every record listing it (a long session's thousands of them).
    #[serde(skip)]
    user_messages: String,
    /// Each span as its record writes it: written once, not again for every record listing it.
    #[serde(skip)]
    spans: SpanList,
    #[serde(skip)]
    files: Vec<String>,
    input_files: usize,
    #[serde(skip)]
    commands: VecDeque<String>,
    errors: ErrorPicker,
    identifiers: IdentifierPicker,
}

impl Builder {
    /// A copy but for what its record lists whole (see [`Builder`]).
    fn without_lists(&self) -> Self {
        Self {
            turn: self.turn,
            order: self.order,
            input_files: self.input_files,
            errors: self.errors.clone(),
            identifiers: self.identifiers.clone(),
            ..Self::default()
        }
    }

    fn add(
        &mut self,
        block: &Block,
        fold_event: bool,
        cwd: Option<&str>,
        facts: &mut BlockFacts<'_>,
    ) {
        self.order += 1;
        match block.kind {
            BlockKind::User => {
                self.turn += 1;
                if let Some(first_line) = user::first_line(&block.text, MAX_FIRST_LINE_CHARS) {
                    self.user_message(&UserMessage {
                        turn: self.turn,
                        first_line,
                        extra: Default::default(),
                    });
                }
                return;
            }
            BlockKind::Context => return,
            BlockKind::ToolCall => {
                if let Some(call) = &block.call {
                    if let Some(command) = commands::command_of(&call.name, &call.args) {
                        self.command(command);
                    }
                    files::call_paths(&call.args, |p| self.input_file(p, cwd));
                }
                return;
            }
            _ => {}
        }
        if !folds(block, fold_event) {
            return;
        }
        let (facts, text) = (facts.of(block), block.text.as_str());
        self.span(block, facts.sha256());
        for (line, marker, shape) in facts.errors(text) {
            self.errors.offer(line, marker, shape, self.order);
        }
        for command in facts.commands(text) {
            self.command(command.to_string());
        }
        self.identifiers
            .offer_block(text, facts.identifiers(text), facts.large(), self.order);
        for path in facts.paths(text) {
            self.output_file(path, cwd);
        }
    }

    fn span(&mut self, block: &Block, sha256: &str) {
        let span = Span {
            block_id: block.id.clone(),
            code: Some(code(&block.id)),
            tool: Some(block.tool_label().to_string()),
            turn: Some(self.turn),
            log: Log {
                bytes: Some(log_bytes(&block.text)),
                lines: Some(log_lines(&block.text)),
                extra: Default::default(),
            },
            sha256: Some(sha256.to_string()),
            full_output_path: block.full_output_path.clone(),
            extra: Default::default(),
        };
        // A resolver serves the latest block of an id: so does the record.
        self.spans.set(&block.id, &span_json(&span));
    }

    /// Commands favour recent ones: past the cap, the oldest goes.
    fn command(&mut self, command: String) {
        if let Some(at) = self.commands.iter().position(|c| *c == command) {
            self.commands.remove(at);
        }
        self.commands.push_back(command);
        if self.commands.len() > MAX_COMMANDS {
            self.commands.pop_front();
        }
    }

    fn input_file(&mut self, path: &str, cwd: Option<&str>) {
        if self.input_files < MAX_INPUT_FILES && self.push_file(files::relative(path, cwd)) {
            self.input_files += 1;
        }
    }

    fn output_file(&mut self, path: &str, cwd: Option<&str>) {
        if self.files.len() < self.input_files + MAX_OUTPUT_FILES {
            self.push_file(files::relative(path, cwd));
        }
    }

    fn push_file(&mut self, path: &str) -> bool {
        let fresh = !path.is_empty() && !self.files.iter().any(|f| f == path);
        if fresh {
            self.files.push(path.to_string());
        }
        fresh
    }

    /// Add `message` to those the builder's records list.
    fn user_message(&mut self, message: &UserMessage) {
        if !self.user_messages.is_empty() {
            self.user_messages.push(',');
        }
        let json = serde_json::to_string(message).expect("a user message serializes");
        self.user_messages.push_str(&json);
    }

    /// `plan`'s record as a line, as the builder stands, its user messages and spans the
    /// builder's (see [`Made`]). The builder is left as it was: a chain's goes on after each of
    /// its records, and what a record does not list (where each span is, every identifier
    /// candidate) is worth no copy. Nor are the files it lends the record to be written.
    fn finish(&mut self, plan: &Plan, session: &str) -> Made<'_> {
        let record = FoldIndex {
            v: VERSION,
            kind: "fold-index".into(),
            harness: HARNESS.into(),
            session: session.into(),
            seq: 0,
            at: plan.at.clone(),
            trigger: plan.trigger.clone(),
            usage: plan.usage.clone(),
            files: std::mem::take(&mut self.files),
            commands: self.commands.iter().cloned().map(Into::into).collect(),
            errors: self.errors.pick().into_iter().map(Into::into).collect(),
            identifiers: self.identifiers.pick(),
            user_messages: Vec::new(),
            spans: Vec::new(),
            extra: Default::default(),
        };
        // The user messages and spans are the record's last fields: its line ends
        // `"userMessages":[],"spans":[]}` without them.
        let mut head = record.to_line();
        self.files = record.files;
        head.truncate(head.len() - r#"],"spans":[]}"#.len());
        debug_assert!(head.ends_with(r#""userMessages":["#));
        Made::spliced(plan.seq, head, &self.user_messages, self.spans.json())
    }
}

/// A span as a record's line writes it.
fn span_json(span: &Span) -> String {
    serde_json::to_string(span).expect("a span serializes")
}

/// Whether a record (of a fold event or not) folds `block` into a span, and so needs its facts.
fn folds(block: &Block, fold_event: bool) -> bool {
    block.spannable()
        && (!fold_event || matches!(block.kind, BlockKind::ToolResult | BlockKind::Thinking))
}

/// A block's facts, found when a record first needs them, once whichever records do.
struct BlockFacts<'c> {
    cache: &'c FactsCache,
    facts: Option<Arc<Facts>>,
}

impl<'c> BlockFacts<'c> {
    fn new(cache: &'c FactsCache) -> Self {
        Self { cache, facts: None }
    }

    fn of(&mut self, block: &Block) -> &Facts {
        let cache = self.cache;
        self.facts
            .get_or_insert_with(|| cache.of(&block.text, block.kind == BlockKind::ToolResult))
    }
}

/// Error lines, one per shape, spread over markers so that one noisy kind cannot fill every slot.
#[derive(Default, Clone, Serialize, Deserialize)]
struct ErrorPicker {
    candidates: Vec<ErrorCandidate>,
}

#[derive(Clone, Serialize, Deserialize)]
struct ErrorCandidate {
    line: String,
    shape: String,
    marker: String,
    last: u64,
}

impl ErrorPicker {
    fn offer(&mut self, line: &str, marker: &str, shape: &str, order: u64) {
        if let Some(seen) = self.candidates.iter_mut().find(|c| c.shape == shape) {
            seen.last = order;
            return;
        }
        self.candidates.push(ErrorCandidate {
            line: line.into(),
            shape: shape.into(),
            marker: marker.into(),
            last: order,
        });
        if self.candidates.len() > MAX_ERROR_CANDIDATES {
            // Drop the oldest of the most crowded marker.
            let mut counts: HashMap<&str, usize> = HashMap::new();
            for c in &self.candidates {
                *counts.entry(c.marker.as_str()).or_default() += 1;
            }
            let crowded = counts
                .into_iter()
                .max_by_key(|(m, n)| (*n, *m))
                .map(|(m, _)| m.to_string());
            let at = self
                .candidates
                .iter()
                .position(|c| Some(&c.marker) == crowded.as_ref())
                .unwrap_or(0);
            self.candidates.remove(at);
        }
    }

    /// Round-robin over markers (most recently seen first), newest line of each first; output in
    /// the order the lines were first seen.
    fn pick(&self) -> Vec<String> {
        let mut by_marker: Vec<(String, Vec<(usize, u64)>)> = Vec::new();
        for (i, c) in self.candidates.iter().enumerate() {
            match by_marker.iter_mut().find(|(m, _)| *m == c.marker) {
                Some((_, list)) => list.push((i, c.last)),
                None => by_marker.push((c.marker.clone(), vec![(i, c.last)])),
            }
        }
        for (_, list) in &mut by_marker {
            list.sort_by_key(|&(i, last)| (std::cmp::Reverse(last), i));
        }
        by_marker.sort_by_key(|(m, list)| (std::cmp::Reverse(list[0].1), m.clone()));
        let mut chosen = Vec::new();
        let mut round = 0;
        while chosen.len() < MAX_ERRORS {
            let before = chosen.len();
            for (_, list) in &by_marker {
                match list.get(round) {
                    Some(&(i, _)) if chosen.len() < MAX_ERRORS => chosen.push(i),
                    _ => {}
                }
            }
            if chosen.len() == before {
                break;
            }
            round += 1;
        }
        chosen.sort_unstable();
        chosen
            .into_iter()
            .map(|i| self.candidates[i].line.clone())
            .collect()
    }
}

#[derive(Default, Clone, Serialize, Deserialize)]
struct IdentifierPicker {
    /// Most identifiers are short: kept inline, a look-up finds the token where its entry is.
    candidates: Map<CompactString, IdentifierCandidate>,
}

#[derive(Clone, Copy, Serialize, Deserialize)]
struct IdentifierCandidate {
    count: u32,
    large: bool,
    last: u64,
}

impl IdentifierPicker {
    /// Offer a block's identifiers (`distinct`, from `text`), as the contract does: one token at a
    /// time, in order, pruning whenever the candidates overflow.
    fn offer_block<'t>(
        &mut self,
        text: &str,
        distinct: impl ExactSizeIterator<Item = (&'t str, u32)>,
        large: bool,
        order: u64,
    ) {
        // A block that cannot overflow the candidates prunes nothing, and then offering each token
        // once with its count gives the same counts, flags and orders as offering it each time.
        if self.candidates.len() + distinct.len() <= MAX_IDENTIFIER_CANDIDATES {
            for (token, times) in distinct {
                self.add(token, times, large, order);
            }
            return;
        }
        identifiers::identifiers(text, |token| {
            if self.add(token, 1, large, order) && self.candidates.len() > MAX_IDENTIFIER_CANDIDATES
            {
                self.prune(MAX_IDENTIFIER_CANDIDATES / 4);
            }
        });
    }

    /// Count `token` `times` more; returns whether it was new.
    fn add(&mut self, token: &str, times: u32, large: bool, order: u64) -> bool {
        if let Some(c) = self.candidates.get_mut(token) {
            c.count = c.count.saturating_add(times);
            c.large |= large;
            c.last = order;
            return false;
        }
        let candidate = IdentifierCandidate {
            count: times,
            large,
            last: order,
        };
        self.candidates.insert(token.into(), candidate);
        true
    }

    /// The `n` best candidates, best first.
    fn ranked(&self, n: usize) -> Vec<(&CompactString, &IdentifierCandidate)> {
        type Ranked<'a> = (&'a CompactString, &'a IdentifierCandidate);
        // From large tool outputs first, then rarer, longer, more recent; the token breaks ties.
        let order = |(a, x): &Ranked, (b, y): &Ranked| {
            y.large
                .cmp(&x.large)
                .then(x.count.min(4).cmp(&y.count.min(4)))
                .then(b.len().cmp(&a.len()))
                .then(y.last.cmp(&x.last))
                .then(a.cmp(b))
        };
        let mut all: Vec<Ranked> = self.candidates.iter().collect();
        // Each record picks a few of thousands of candidates: those are found first, in linear
        // time, and only they are sorted (the order is total, so they are the sort's first n).
        if all.len() > n {
            all.select_nth_unstable_by(n, order);
            all.truncate(n);
        }
        all.sort_unstable_by(order);
        all
    }

    fn prune(&mut self, keep: usize) {
        let kept: HashSet<CompactString> = (self.ranked(keep).into_iter())
            .map(|(t, _)| t.clone())
            .collect();
        self.candidates.retain(|t, _| kept.contains(t));
    }

    fn pick(&self) -> Vec<String> {
        (self.ranked(MAX_IDENTIFIERS).into_iter())
            .map(|(t, _)| t.to_string())
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ledger::FileSource;

    /// Every committed fixture that scans as a ledger, with its path.
    fn fixture_ledgers() -> Vec<(std::path::PathBuf, FileSource)> {
        let fixtures = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
        let mut found = Vec::new();
        for agent in ["codex", "pi", "claude"] {
            for entry in std::fs::read_dir(fixtures.join(agent)).unwrap() {
                let path = entry.unwrap().path();
                let source = FileSource(path.clone());
                if path.extension().is_some_and(|e| e == "jsonl") && Ledger::scan(&source).is_ok() {
                    found.push((path, source));
                }
            }
        }
        assert!(found.len() > 10, "the fixtures are there");
        found
    }

    const FINAL: Options = Options {
        final_record: true,
        through: None,
    };

    fn records(
        ledger: &Ledger<'_>,
        plans: &[Plan],
        share: bool,
        facts: &FactsCache,
    ) -> Vec<FoldIndex> {
        records_walked(ledger, plans, share, false, facts)
    }

    fn records_walked(
        ledger: &Ledger<'_>,
        plans: &[Plan],
        share: bool,
        apart: bool,
        facts: &FactsCache,
    ) -> Vec<FoldIndex> {
        let mut records = Vec::new();
        build(
            ledger,
            plans,
            share,
            apart,
            facts,
            Resume::default(),
            &mut |r| {
                records.push(read_back(r));
                Ok(())
            },
        )
        .unwrap();
        records
    }

    #[test]
    fn records_of_prefix_plans_sharing_a_builder_are_those_of_one_builder_each() {
        let mut shared_some = 0;
        for (path, source) in fixture_ledgers() {
            let ledger = Ledger::scan(&source).unwrap();
            let plans = plans(&ledger, &FINAL).unwrap();
            shared_some += usize::from(plans.iter().filter(|p| p.prefix().is_some()).count() > 1);
            let shared = records(&ledger, &plans, true, &FactsCache::default());
            assert_eq!(shared.len(), plans.len(), "{}", path.display());
            assert_eq!(
                shared,
                records(&ledger, &plans, false, &FactsCache::default()),
                "{}",
                path.display()
            );
            // Walked on a thread of its own, ahead of the builders, too.
            let apart = records_walked(&ledger, &plans, true, true, &FactsCache::default());
            assert_eq!(shared, apart, "{} walked apart", path.display());
        }
        assert!(
            shared_some > 0,
            "no fixture has two prefix plans to share a builder"
        );
    }

    #[test]
    fn records_made_with_facts_found_in_other_sessions_are_those_made_afresh() {
        let fixtures = fixture_ledgers();
        // One cache that has seen every fixture, and one too small to keep more than a text.
        let (warm, tiny) = (FactsCache::default(), FactsCache::new(0));
        for cache in [&warm, &tiny] {
            for (_, source) in &fixtures {
                let ledger = Ledger::scan(source).unwrap();
                records(&ledger, &plans(&ledger, &FINAL).unwrap(), true, cache);
            }
        }
        for (path, source) in &fixtures {
            let ledger = Ledger::scan(source).unwrap();
            let plans = plans(&ledger, &FINAL).unwrap();
            let afresh = records(&ledger, &plans, true, &FactsCache::default());
            for cache in [&warm, &tiny] {
                assert_eq!(
                    records(&ledger, &plans, true, cache),
                    afresh,
                    "{}",
                    path.display()
                );
            }
        }
    }

    /// [`extract_from`], walking apart or not, the ledger scanned on from where `from` ended (as
    /// a fold does).
    fn extract_from_all(
        source: &FileSource,
        from: Option<Midway>,
        apart: bool,
    ) -> (Vec<FoldIndex>, Option<Midway>) {
        let scanned = from.as_ref().map(|from| from.scanned().clone());
        let ledger = Ledger::scan_on(source, scanned).unwrap();
        if from.is_some() {
            let whole = Ledger::scan(source).unwrap();
            assert_eq!(
                skeleton(&ledger),
                skeleton(&whole),
                "{}",
                source.0.display()
            );
        }
        extract_scanned(&ledger, from, apart)
    }

    /// What a first pass found, as JSON.
    fn skeleton(ledger: &Ledger<'_>) -> serde_json::Value {
        serde_json::to_value(ledger.scanned(ledger.bytes)).unwrap()
    }

    /// [`extract_from`] over `ledger`, walking apart or not.
    fn extract_scanned(
        ledger: &Ledger<'_>,
        from: Option<Midway>,
        apart: bool,
    ) -> (Vec<FoldIndex>, Option<Midway>) {
        let plans = plans(ledger, &FINAL).unwrap();
        let mut records = Vec::new();
        let resume = Resume { from, keep: true };
        let cache = FactsCache::default();
        let midway = build(ledger, &plans, true, apart, &cache, resume, &mut |r| {
            records.push(read_back(r));
            Ok(())
        })
        .unwrap();
        (records, midway)
    }

    /// A midway as JSON with its maps' keys in order (its hash maps' order is any).
    fn json(midway: &Option<Midway>) -> serde_json::Value {
        serde_json::to_value(midway).unwrap()
    }

    /// Extract `bytes` cut after each line, then the whole going on from where each cut ended:
    /// the records and where it ends must be those of the whole walked whole. Returns how many
    /// cuts went on, and how many records those left out (handed on for the cut already).
    fn go_on_after_every_line(what: &str, bytes: &[u8]) -> (usize, usize) {
        let dir = tempfile::tempdir().unwrap();
        let whole = FileSource(dir.path().join("whole.jsonl"));
        std::fs::write(&whole.0, bytes).unwrap();
        let (all, end) = extract_from_all(&whole, None, false);
        let (mut resumed, mut skipped) = (0, 0);
        let cuts = (1..bytes.len()).filter(|&at| bytes[at - 1] == b'\n');
        for cut in cuts.chain([bytes.len() - 1]) {
            let prefix = FileSource(dir.path().join("prefix.jsonl"));
            std::fs::write(&prefix.0, &bytes[..cut]).unwrap();
            if Ledger::scan(&prefix).is_err() {
                continue;
            }
            let (before, midway) = extract_from_all(&prefix, None, false);
            // A line without its end may be cut short: nothing goes on from after it.
            let unended = bytes[cut - 1] != b'\n';
            assert!(!unended || midway.is_none(), "{what}");
            let Some(midway) = midway else { continue };
            // As kept in a checkpoint (every third as the extraction left it, its block reader
            // unsaved), and given back its lists by the final record.
            let midway = match cut % 3 {
                0 => midway,
                _ => serde_json::from_str(&serde_json::to_string(&midway).unwrap()).unwrap(),
            };
            let midway = midway.with_final(before.last().unwrap().clone()).unwrap();
            // Every other one walked apart.
            let apart = cut % 2 == 1;
            let (after, again) = extract_from_all(&whole, Some(midway), apart);
            let what = format!("{what} cut at {cut}");
            // The records not handed on again are those handed on for the prefix.
            let (done, rest) = all.split_at(all.len() - after.len());
            assert_eq!(rest, after, "{what}");
            assert!(done.iter().all(|r| before.contains(r)), "{what}");
            assert_eq!(json(&again), json(&end), "{what}");
            resumed += 1;
            skipped += done.len();
        }
        (resumed, skipped)
    }

    #[test]
    fn an_extraction_going_on_from_where_one_over_a_prefix_ended_gives_the_records_of_the_whole() {
        let (mut resumed, mut skipped) = (0, 0);
        for (path, _) in fixture_ledgers() {
            let (r, s) =
                go_on_after_every_line(&path.display().to_string(), &std::fs::read(&path).unwrap());
            resumed += r;
            skipped += s;
        }
        assert!(
            resumed > 100 && skipped > 0,
            "{resumed} resumed, {skipped} records skipped"
        );
    }

    /// A Pi fixture made a tree: a compaction on a branch of its own a third of the way, and a
    /// branch abandoned two thirds of the way (the entries after it go on from an earlier one).
    fn pi_tree() -> Vec<u8> {
        let fixtures = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/pi");
        let text = std::fs::read_to_string(
            fixtures.join("2026-11-30T23-21-14-726Z_01a22ec3-34e4-7265-bb6b-1383eb635647.jsonl"),
        )
        .unwrap();
        let mut lines: Vec<serde_json::Value> = text
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        let n = lines.len();
        let abandoned = lines[2 * n / 3 - 3]["id"].clone();
        lines[2 * n / 3]["parentId"] = abandoned;
        let kept = lines[n / 3 - 1]["id"].clone();
        let compaction = serde_json::json!({
            "type": "compaction", "id": "c0ffee01", "parentId": kept,
            "timestamp": lines[n / 3 - 1]["timestamp"], "summary": "What was done so far.",
            "firstKeptEntryId": kept, "tokensBefore": 5000,
        });
        lines.insert(n / 3, compaction);
        lines
            .iter()
            .flat_map(|l| format!("{l}\n").into_bytes())
            .collect()
    }

    #[test]
    fn records_of_a_session_with_context_edits_are_the_same_walked_apart() {
        // The Pi fixture with two context edits appended: one trims its first tool result, one
        // omits its second.
        let fixtures = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/pi");
        let text = std::fs::read_to_string(
            fixtures.join("2026-11-30T23-21-14-726Z_01a22ec3-34e4-7265-bb6b-1383eb635647.jsonl"),
        )
        .unwrap();
        let lines: Vec<serde_json::Value> = text
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        let results: Vec<&serde_json::Value> = (lines.iter())
            .filter(|l| l["message"]["role"] == "toolResult")
            .map(|l| &l["id"])
            .collect();
        let (last, at) = (
            &lines.last().unwrap()["id"],
            &lines.last().unwrap()["timestamp"],
        );
        let edits = [
            serde_json::json!({"type": "context_edit", "id": "ed000001", "parentId": last,
                "timestamp": at, "targetId": results[0],
                "replacement": {"content": "[trimmed] RESULT_TRIMMED_BY_AN_EDIT"}}),
            serde_json::json!({"type": "context_edit", "id": "ed000002", "parentId": "ed000001",
                "timestamp": at, "targetId": results[1], "replacement": null}),
        ];
        let mut bytes = text.into_bytes();
        for edit in edits {
            bytes.extend_from_slice(format!("{edit}\n").as_bytes());
        }
        let dir = tempfile::tempdir().unwrap();
        let source = FileSource(dir.path().join("edited.jsonl"));
        std::fs::write(&source.0, &bytes).unwrap();
        let ledger = Ledger::scan(&source).unwrap();
        let plans = plans(&ledger, &FINAL).unwrap();
        assert!(
            plans.iter().any(|p| !p.edits.is_empty()),
            "a plan applies the edits"
        );
        let cache = FactsCache::default();
        let own = records(&ledger, &plans, false, &cache);
        let edited = own.last().unwrap().to_line();
        assert!(edited.contains(":edit:ed000001"), "{edited}");
        for apart in [false, true] {
            assert_eq!(records_walked(&ledger, &plans, true, apart, &cache), own);
        }
    }

    #[test]
    fn an_extraction_of_a_tree_goes_on_from_its_final_record_wherever_the_branch_goes_on() {
        let tree = pi_tree();
        let dir = tempfile::tempdir().unwrap();
        let source = FileSource(dir.path().join("tree.jsonl"));
        std::fs::write(&source.0, &tree).unwrap();
        let ledger = Ledger::scan(&source).unwrap();
        let plans = plans(&ledger, &FINAL).unwrap();
        // Its final record is over no prefix: it has a builder of its own.
        assert!(plans.len() >= 2 && plans.last().unwrap().prefix().is_none());
        let (resumed, skipped) = go_on_after_every_line("the Pi tree", &tree);
        assert!(
            resumed > 10 && skipped > 0,
            "{resumed} resumed, {skipped} records skipped"
        );
    }

    #[test]
    fn an_extraction_does_not_go_on_from_another_ledgers_end() {
        let fixtures = fixture_ledgers();
        let (mut others, mut longer) = (0, 0);
        for (path, source) in &fixtures {
            let Some(midway) = extract_from_all(source, None, false).1 else {
                continue;
            };
            let entries = midway.scanned().entries.len();
            // Another session of as many entries or more, which the check cannot tell by length.
            let Some((other, other_source)) = fixtures
                .iter()
                .find(|(p, s)| p != path && Ledger::scan(s).unwrap().entries.len() >= entries)
            else {
                continue;
            };
            let (all, _) = extract_from_all(other_source, None, false);
            // Scanned whole: a fold goes on from a checkpoint of the bytes it read before only.
            let other_ledger = Ledger::scan(other_source).unwrap();
            let (from_other, _) = extract_scanned(&other_ledger, Some(midway), true);
            assert_eq!(
                from_other,
                all,
                "{} from {}",
                other.display(),
                path.display()
            );
            others += 1;
            longer += usize::from(all.len() > 1);
        }
        assert!(
            others >= 3 && longer > 0,
            "{others} tried, {longer} with several records"
        );
    }

    /// A record made as a line, read back: its line is the one the record writes, byte for byte
    /// (the spans spliced in as the record would write them).
    fn read_back(made: Made<'_>) -> FoldIndex {
        let record = made.record();
        assert_eq!(Made::of(record.clone()), made);
        record
    }

    fn record(seq: u64) -> Made<'static> {
        Made::spliced(seq, String::new(), "", "")
    }

    #[test]
    fn records_finished_out_of_order_are_handed_on_in_plan_order_as_soon_as_they_can_be() {
        let mut out = Vec::new();
        let mut each = |r: Made<'_>| {
            out.push(r.seq);
            Ok(())
        };
        let mut records = InOrder::new(0, 3, &mut each);
        records.put(1, record(11)).unwrap();
        records.put(0, record(10)).unwrap();
        assert!(!records.is_done());
        records.put(2, record(12)).unwrap();
        assert!(records.is_done());
        assert_eq!(out, [10, 11, 12]);
    }

    #[test]
    fn an_error_from_the_receiver_stops_extraction() {
        let source = FileSource(
            std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("tests/fixtures/codex/rollout-2026-03-02T10-00-00-0f1d0000-0000-7000-8000-000000000001.jsonl"),
        );
        let ledger = Ledger::scan(&source).unwrap();
        let plans = plans(&ledger, &FINAL).unwrap();
        for apart in [false, true] {
            let mut calls = 0;
            let cache = FactsCache::default();
            let result = build(
                &ledger,
                &plans,
                true,
                apart,
                &cache,
                Resume::default(),
                &mut |_| {
                    calls += 1;
                    Err(crate::error::Error::usage("receiver full"))
                },
            );
            let e = result.err().expect("the receiver's error");
            assert_eq!(e.to_string(), "receiver full", "apart: {apart}");
            assert_eq!(calls, 1);
        }
    }

    #[test]
    fn the_best_identifiers_are_those_a_whole_ranking_puts_first() {
        let mut picker = IdentifierPicker::default();
        // Ties on every rank but the token, and every rank deciding somewhere.
        for i in 0..500u64 {
            let token = format!("{}{i}", ["id_", "longer_id_", "x"][(i % 3) as usize]);
            picker.add(&token, (i % 6) as u32 + 1, i % 7 == 0, i % 11);
        }
        let whole = {
            let mut all: Vec<_> = picker.candidates.iter().collect();
            all.sort_by(|(a, x), (b, y)| {
                (y.large, x.count.min(4), b.len(), y.last)
                    .cmp(&(x.large, y.count.min(4), a.len(), x.last))
                    .then(a.cmp(b))
            });
            all.into_iter()
                .map(|(t, _)| t.to_string())
                .collect::<Vec<_>>()
        };
        for n in [0, 1, 2, 63, 64, 499, 500, 501] {
            let best: Vec<String> = (picker.ranked(n).into_iter())
                .map(|(t, _)| t.to_string())
                .collect();
            assert_eq!(best, whole[..n.min(whole.len())], "n = {n}");
        }
        assert_eq!(picker.pick(), whole[..MAX_IDENTIFIERS]);
        picker.prune(10);
        let mut kept: Vec<String> = picker.candidates.keys().map(|t| t.to_string()).collect();
        kept.sort();
        let mut best = whole[..10].to_vec();
        best.sort();
        assert_eq!(kept, best);
    }
}
