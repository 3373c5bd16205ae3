//! Which records a ledger gives and which entries each covers, decided from the skeleton alone:
//! one `compact` record per compaction (the branch before its first kept entry, with the edits
//! current at that point), a `--final` record over the whole active branch, or a fold event
//! `--through` an entry (the context view: what follows the latest compaction).

use crate::error::{Error, Result};
use crate::ledger::{EntryKind, Ledger};

use super::Map;
use super::record::Usage;

/// A fold event a live harness reports (`--through`).
#[derive(Debug, Clone)]
pub struct Through {
    pub entry: String,
    pub trigger: String,
    pub seq: u64,
    pub tokens: u64,
    pub context_window: u64,
}

#[derive(Debug, Clone, Default)]
pub struct Options {
    pub final_record: bool,
    pub through: Option<Through>,
}

pub struct Plan {
    pub seq: u64,
    /// The entry the record is for (a compaction, the leaf).
    pub entry: usize,
    pub trigger: String,
    pub at: String,
    pub usage: Option<Usage>,
    /// Fold events fold only tool results and thinking; compact records every non-user block.
    pub fold_event: bool,
    cover: Vec<u64>,
    /// target entry -> the `context_edit` entry current for it.
    pub edits: Map<usize, usize>,
}

impl Plan {
    pub fn covers(&self, index: usize) -> bool {
        self.cover
            .get(index / 64)
            .is_some_and(|w| w & (1 << (index % 64)) != 0)
    }

    /// `Some(n)` when the plan covers exactly the first n entries and applies no edit.
    pub fn prefix(&self) -> Option<usize> {
        self.run_after(&Base::default())
    }

    /// Whether the plan covers exactly `base`'s entries among the first `base.entries` and edits
    /// none of them: a builder that saw those can go on for it.
    pub fn continues(&self, base: &Base) -> bool {
        let n = base.entries;
        let below = |bits: &[u64], w: usize| word(bits, w) & if w == n / 64 { low(n) } else { !0 };
        (0..=n / 64).all(|w| below(&self.cover, w) == below(&base.cover, w))
            && self.edits.keys().all(|&target| target >= n)
    }

    /// `Some(m)` when the plan [continues](Self::continues) from `base`, applies no edit, and
    /// covers every entry from `base.entries` to `m` and none after.
    pub fn run_after(&self, base: &Base) -> Option<usize> {
        if !self.edits.is_empty() || !self.continues(base) {
            return None;
        }
        let mut m = base.entries;
        while self.covers(m) {
            m += match m.is_multiple_of(64) && word(&self.cover, m / 64) == !0 {
                true => 64,
                false => 1,
            };
        }
        let after = word(&self.cover, m / 64) & !low(m) == 0
            && self.cover.iter().skip(m / 64 + 1).all(|&w| w == 0);
        after.then_some(m)
    }
}

/// What a record over a ledger's first `entries` entries covered: the path from the root to the
/// last of them (the final record's, before an append).
#[derive(Default)]
pub struct Base {
    pub entries: usize,
    cover: Vec<u64>,
}

impl Base {
    pub fn of(ledger: &Ledger<'_>, entries: usize) -> Self {
        let mut cover = vec![0u64; entries.div_ceil(64)];
        for i in entries
            .checked_sub(1)
            .map_or(Vec::new(), |leaf| ledger.path_to(leaf))
        {
            cover[i / 64] |= 1 << (i % 64);
        }
        Self { entries, cover }
    }
}

fn word(bits: &[u64], w: usize) -> u64 {
    bits.get(w).copied().unwrap_or(0)
}

/// The bits of entries below `n` in the word that holds entry `n`.
fn low(n: usize) -> u64 {
    (1u64 << (n % 64)) - 1
}

pub fn plans(ledger: &Ledger<'_>, options: &Options) -> Result<Vec<Plan>> {
    let mut plans = Vec::new();
    // A ledger that names no session holds nothing to index (see `Ledger::scan_on`).
    if ledger.session_id.is_none() {
        return Ok(plans);
    }
    if let Some(through) = &options.through {
        let Some(end) = ledger.find_entry(&through.entry) else {
            return Err(Error::not_found(format!(
                "--through {}: no such entry in the ledger",
                through.entry
            )));
        };
        plans.push(through_plan(ledger, end, through));
    } else {
        for (k, entry) in ledger.entries.iter().enumerate() {
            if let EntryKind::Compaction { first_kept, tokens } = entry.kind {
                let path = ledger.path_to(k);
                let before = &path[..path.len() - 1];
                let limit = first_kept.unwrap_or(k);
                let covered = before.iter().copied().filter(|&i| i < limit);
                let tokens = tokens.or_else(|| latest_usage(ledger, k).map(|u| u.0));
                let window = latest_usage(ledger, k).and_then(|u| u.1);
                plans.push(plan(
                    ledger,
                    plans.len() as u64 + 1,
                    "compact",
                    k,
                    covered,
                    usage(tokens, window),
                    false,
                ));
            }
        }
    }
    if let Some(leaf) = ledger.leaf().filter(|_| options.final_record) {
        let (tokens, window) =
            latest_usage(ledger, leaf + 1).map_or((None, None), |(t, w)| (Some(t), w));
        let seq = match &options.through {
            Some(t) => t.seq + 1,
            None => plans.len() as u64 + 1,
        };
        plans.push(plan(
            ledger,
            seq,
            "compact",
            leaf,
            ledger.path_to(leaf),
            usage(tokens, window),
            false,
        ));
    }
    Ok(plans)
}

fn through_plan(ledger: &Ledger<'_>, end: usize, through: &Through) -> Plan {
    let path = ledger.path_to(end);
    // The context view starts at the latest compaction's first kept entry (Codex: the compaction).
    let start = path
        .iter()
        .rev()
        .find_map(|&i| match ledger.entries[i].kind {
            EntryKind::Compaction { first_kept, .. } => Some(first_kept.unwrap_or(i).min(i)),
            _ => None,
        })
        .unwrap_or(0);
    let covered = path.into_iter().filter(|&i| i >= start);
    let usage = usage(Some(through.tokens), Some(through.context_window));
    plan(
        ledger,
        through.seq,
        &through.trigger,
        end,
        covered,
        usage,
        true,
    )
}

fn plan(
    ledger: &Ledger<'_>,
    seq: u64,
    trigger: &str,
    entry: usize,
    covered: impl IntoIterator<Item = usize>,
    usage: Option<Usage>,
    fold_event: bool,
) -> Plan {
    let mut cover = vec![0u64; ledger.entries.len().div_ceil(64)];
    for i in covered {
        cover[i / 64] |= 1 << (i % 64);
    }
    // The latest edit per target appended before the record's own entry.
    let mut edits = Map::default();
    for (i, e) in ledger.entries.iter().enumerate().take(entry + 1) {
        if let EntryKind::Edit {
            target: Some(target),
            ..
        } = e.kind
        {
            edits.insert(target, i);
        }
    }
    // An entry without a timestamp (a Claude Code side record) dates the record by the nearest
    // entry before it on its branch that has one.
    let at = ledger
        .ancestors(entry)
        .map(|i| &ledger.entries[i].timestamp)
        .find(|t| !t.is_empty())
        .cloned()
        .unwrap_or_default();
    Plan {
        seq,
        entry,
        trigger: trigger.into(),
        at,
        usage,
        fold_event,
        cover,
        edits,
    }
}

/// The latest context size reported before entry `before`: (tokens, window).
fn latest_usage(ledger: &Ledger<'_>, before: usize) -> Option<(u64, Option<u64>)> {
    ledger.entries[..before]
        .iter()
        .rev()
        .find_map(|e| match e.kind {
            EntryKind::Usage { tokens, window } => Some((tokens, window)),
            EntryKind::Message {
                tokens: Some(tokens),
            } => Some((tokens, None)),
            _ => None,
        })
}

fn usage(tokens: Option<u64>, window: Option<u64>) -> Option<Usage> {
    tokens?;
    let fraction = match (tokens, window) {
        (Some(t), Some(w)) if w > 0 => Some((t as f64 / w as f64 * 1000.0).round() / 1000.0),
        _ => None,
    };
    Some(Usage {
        tokens: tokens.map(Into::into),
        context_window: window.map(Into::into),
        fraction,
        extra: Default::default(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn covering(entries: &[usize], edits: &[(usize, usize)]) -> Plan {
        let words = entries.iter().max().map_or(0, |&m| m / 64 + 2);
        let mut cover = vec![0u64; words];
        for &i in entries {
            cover[i / 64] |= 1 << (i % 64);
        }
        Plan {
            seq: 1,
            entry: 0,
            trigger: "compact".into(),
            at: String::new(),
            usage: None,
            fold_event: false,
            cover,
            edits: edits.iter().copied().collect(),
        }
    }

    #[test]
    fn a_prefix_is_exactly_the_first_n_entries_without_edits() {
        for n in [0, 1, 5, 63, 64, 65, 128, 200] {
            let all: Vec<usize> = (0..n).collect();
            assert_eq!(covering(&all, &[]).prefix(), Some(n), "first {n}");
        }
        assert_eq!(covering(&[], &[]).prefix(), Some(0));
        // A gap, a later start, a stray entry past a full word, an edit: none is a prefix.
        assert_eq!(covering(&[0, 1, 3], &[]).prefix(), None);
        assert_eq!(covering(&[1, 2, 3], &[]).prefix(), None);
        let stray: Vec<usize> = (0..64).chain([100]).collect();
        assert_eq!(covering(&stray, &[]).prefix(), None);
        assert_eq!(covering(&[0, 1, 2], &[(1, 2)]).prefix(), None);
    }

    fn base(entries: usize, covered: &[usize]) -> Base {
        let mut cover = vec![0u64; entries.div_ceil(64)];
        for &i in covered {
            cover[i / 64] |= 1 << (i % 64);
        }
        Base { entries, cover }
    }

    #[test]
    fn a_plan_goes_on_from_a_base_when_it_covers_exactly_its_entries_below_it() {
        // The base: 70 entries of which the 5th and the 66th were on another branch.
        let covered: Vec<usize> = (0..70).filter(|&i| i != 5 && i != 66).collect();
        let b = base(70, &covered);
        let with = |more: &[usize]| [&covered[..], more].concat();
        assert!(covering(&covered, &[]).continues(&b));
        assert_eq!(covering(&with(&[70, 71, 72]), &[]).run_after(&b), Some(73));
        assert_eq!(
            covering(&with(&(70..200).collect::<Vec<_>>()), &[]).run_after(&b),
            Some(200)
        );
        assert_eq!(covering(&covered, &[]).run_after(&b), Some(70));
        // Goes on, but not as one run: a gap after the base, or an entry past one.
        let gap = covering(&with(&[70, 72]), &[]);
        assert!(gap.continues(&b) && gap.run_after(&b).is_none());
        // Not from this base: an entry of the other branch, one missing, an edit of an entry
        // below it; an edit of one after it goes on, not as a run.
        assert!(!covering(&with(&[5]), &[]).continues(&b));
        assert!(!covering(&covered[1..], &[]).continues(&b));
        assert!(!covering(&with(&[70]), &[(3, 71)]).continues(&b));
        let edited = covering(&with(&[70, 71]), &[(70, 71)]);
        assert!(edited.continues(&b) && edited.run_after(&b).is_none());
        // The empty base is the start: going on from it is a prefix.
        assert_eq!(covering(&[0, 1, 2], &[]).run_after(&base(0, &[])), Some(3));
    }
}
