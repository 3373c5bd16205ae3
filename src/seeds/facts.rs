//! What the lexicons find in one block's text, and a cache of it by the text's sha256.
//!
//! Sessions repeat themselves: the same file read again and again, the same test log, a fork's
//! copy of its parent's history. What the lexicons find depends on the text alone (and on
//! whether it is a tool's result), so a text met before is not scanned again: its facts are kept
//! as byte ranges of the text, which any text with the same sha256 resolves to the same tokens.

use std::collections::hash_map::Entry;
use std::mem::size_of;
use std::sync::{Arc, Mutex};

use super::Map;
use super::extract::MAX_ERROR_CHARS;
use super::lexicon::{self, commands, errors};
use crate::digest::Digest;

/// A tool output this large is where summaries lose identifiers: its tokens come first.
const LARGE_OUTPUT_BYTES: usize = 2048;

/// A token of the text, as its byte range.
type Cut = (usize, usize);

/// What the lexicons find in one folded block (see the module comment).
pub struct Facts {
    sha256: String,
    /// From a large tool output: its identifiers rank first.
    large: bool,
    errors: Vec<ErrorLine>,
    commands: Vec<Cut>,
    /// Each identifier once, in the order first met, with how often the block has it: a block
    /// covered by several records is offered to each, and logs repeat their tokens.
    identifiers: Vec<(Cut, u32)>,
    paths: Vec<Cut>,
}

struct ErrorLine {
    /// Clipped to [`MAX_ERROR_CHARS`].
    line: Cut,
    /// What made it an error line (a word of it, or a phrase of the lexicon).
    marker: Box<str>,
    shape: Box<str>,
}

impl Facts {
    /// The facts of `text` (a tool's result when `result`), whose sha256 is `sha256`.
    fn of(text: &str, result: bool, sha256: &Digest) -> Self {
        let cut = |part: &str| {
            let start = part.as_ptr() as usize - text.as_ptr() as usize;
            debug_assert!(start + part.len() <= text.len(), "a token of the text");
            (start, start + part.len())
        };
        let mut facts = Facts {
            sha256: sha256.to_hex(),
            large: result && text.len() >= LARGE_OUTPUT_BYTES,
            errors: Vec::new(),
            commands: Vec::new(),
            identifiers: Vec::new(),
            paths: Vec::new(),
        };
        errors::error_lines(text, |line, marker| {
            let line = errors::clip(line, MAX_ERROR_CHARS);
            facts.errors.push(ErrorLine {
                line: cut(line),
                marker: marker.into(),
                shape: errors::shape(line).into(),
            })
        });
        if result {
            commands::prompt_commands(text, |command| facts.commands.push(cut(command)));
        }
        let mut seen: Map<&str, usize> =
            Map::with_capacity_and_hasher(text.len() / 64, Default::default());
        lexicon::tokens(
            text,
            |token| match seen.entry(token) {
                Entry::Occupied(at) => {
                    let times = &mut facts.identifiers[*at.get()].1;
                    *times = times.saturating_add(1);
                }
                Entry::Vacant(at) => {
                    at.insert(facts.identifiers.len());
                    facts.identifiers.push((cut(token), 1));
                }
            },
            |path| facts.paths.push(cut(path)),
        );
        facts
    }

    /// The sha256 of the text, in hex.
    pub fn sha256(&self) -> &str {
        &self.sha256
    }

    pub fn large(&self) -> bool {
        self.large
    }

    /// Each error line of `text` (the text these are the facts of): the line, its marker, its
    /// shape.
    pub fn errors<'t>(
        &'t self,
        text: &'t str,
    ) -> impl Iterator<Item = (&'t str, &'t str, &'t str)> {
        self.errors
            .iter()
            .map(|e| (&text[e.line.0..e.line.1], &*e.marker, &*e.shape))
    }

    /// The commands of its `$ cmd` lines.
    pub fn commands<'t>(&'t self, text: &'t str) -> impl Iterator<Item = &'t str> {
        self.commands.iter().map(|&(start, end)| &text[start..end])
    }

    /// Each identifier once, with how often the text has it.
    pub fn identifiers<'t>(
        &'t self,
        text: &'t str,
    ) -> impl ExactSizeIterator<Item = (&'t str, u32)> {
        self.identifiers
            .iter()
            .map(|&((start, end), times)| (&text[start..end], times))
    }

    pub fn paths<'t>(&'t self, text: &'t str) -> impl Iterator<Item = &'t str> {
        self.paths.iter().map(|&(start, end)| &text[start..end])
    }

    /// About how much memory these take, held in the cache.
    fn bytes(&self) -> usize {
        let errors: usize = self
            .errors
            .iter()
            .map(|e| size_of::<ErrorLine>() + e.marker.len() + e.shape.len())
            .sum();
        // The key, the map's slot and the Arc's counts.
        let held = size_of::<(Key, Arc<Facts>)>() + 2 * size_of::<usize>() + 16;
        held + size_of::<Facts>()
            + self.sha256.len()
            + errors
            + size_of::<Cut>() * (self.commands.len() + self.paths.len())
            + size_of::<(Cut, u32)>() * self.identifiers.len()
    }
}

/// A text's sha256, and whether it is a tool's result.
type Key = (Digest, bool);

/// The facts of texts met lately, in at most about [`FactsCache::new`]'s budget of memory, shared
/// by every thread extracting in one run. Two generations: texts are kept in the young one; once
/// it holds half the budget it becomes the old one (the old one dropped), and a text found in the
/// old one moves back to the young.
pub struct FactsCache {
    budget: usize,
    generations: Mutex<Generations>,
}

#[derive(Default)]
struct Generations {
    young: Map<Key, Arc<Facts>>,
    young_bytes: usize,
    old: Map<Key, Arc<Facts>>,
}

/// What a fold or a re-index keeps. Repeats come close together (a fork's copied history, a file
/// read again in the same hour): on the generated 1.3 GB corpus 8, 16 and 32 MiB serve the same
/// fifth of the text, and the fork corpus keeps every text at any of them.
pub const FACTS_CACHE_BYTES: usize = 16 << 20;

impl Default for FactsCache {
    fn default() -> Self {
        Self::new(FACTS_CACHE_BYTES)
    }
}

impl FactsCache {
    pub fn new(budget: usize) -> Self {
        Self {
            budget,
            generations: Mutex::new(Generations::default()),
        }
    }

    /// The facts of `text` (a tool's result when `result`): from the cache, or found and kept.
    pub fn of(&self, text: &str, result: bool) -> Arc<Facts> {
        let key = (Digest::of(text.as_bytes()), result);
        if let Some(facts) = self.lock().get(&key) {
            return facts;
        }
        // Scanned outside the lock: another thread may scan the same text meanwhile, and one of
        // the two equal results is kept.
        let facts = Arc::new(Facts::of(text, result, &key.0));
        self.lock().keep(key, Arc::clone(&facts), self.budget / 2);
        facts
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Generations> {
        self.generations.lock().expect("never poisoned")
    }

    /// About how much memory the cache holds.
    #[cfg(test)]
    fn bytes(&self) -> usize {
        let generations = self.lock();
        let old: usize = generations.old.values().map(|f| f.bytes()).sum();
        generations.young_bytes + old
    }
}

impl Generations {
    fn get(&mut self, key: &Key) -> Option<Arc<Facts>> {
        if let Some(facts) = self.young.get(key) {
            return Some(Arc::clone(facts));
        }
        let facts = self.old.remove(key)?;
        self.young_bytes += facts.bytes();
        self.young.insert(*key, Arc::clone(&facts));
        Some(facts)
    }

    fn keep(&mut self, key: Key, facts: Arc<Facts>, limit: usize) {
        let bytes = facts.bytes();
        if self.young.insert(key, facts).is_none() {
            self.young_bytes += bytes;
        }
        if self.young_bytes > limit {
            self.old = std::mem::take(&mut self.young);
            self.young_bytes = 0;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn found(facts: &Facts, text: &str) -> String {
        format!(
            "{} {} {:?} {:?} {:?} {:?}",
            facts.sha256(),
            facts.large(),
            facts.errors(text).collect::<Vec<_>>(),
            facts.commands(text).collect::<Vec<_>>(),
            facts.identifiers(text).collect::<Vec<_>>(),
            facts.paths(text).collect::<Vec<_>>(),
        )
    }

    const LOG: &str = "$ cargo test --locked\nerror[E0425]: cannot find value `fold_all` in src/fold/run.rs\nFAILED: 2 tests, fold_all fold_all\n";

    #[test]
    fn facts_are_tokens_of_the_text_found_once() {
        let facts = Facts::of(LOG, true, &Digest::of(LOG.as_bytes()));
        assert_eq!(facts.sha256(), Digest::of(LOG.as_bytes()).to_hex());
        assert!(!facts.large());
        assert_eq!(
            facts.commands(LOG).collect::<Vec<_>>(),
            ["cargo test --locked"]
        );
        assert_eq!(facts.paths(LOG).collect::<Vec<_>>(), ["src/fold/run.rs"]);
        let errors: Vec<_> = facts.errors(LOG).map(|(line, _, _)| line).collect();
        assert_eq!(
            errors,
            [
                "error[E0425]: cannot find value `fold_all` in src/fold/run.rs",
                "FAILED: 2 tests, fold_all fold_all"
            ]
        );
        let fold_all: Vec<_> = facts
            .identifiers(LOG)
            .filter(|(token, _)| *token == "fold_all")
            .collect();
        assert_eq!(fold_all, [("fold_all", 3)]);
        // Not a result: no `$ cmd` commands.
        let said = Facts::of(LOG, false, &Digest::of(LOG.as_bytes()));
        assert_eq!(said.commands(LOG).count(), 0);
    }

    #[test]
    fn cached_facts_read_the_same_from_a_copy_of_the_text() {
        let cache = FactsCache::default();
        let first = cache.of(LOG, true);
        let copy = LOG.to_string();
        let again = cache.of(&copy, true);
        assert!(
            Arc::ptr_eq(&first, &again),
            "the copy is served from the cache"
        );
        assert_eq!(
            found(&again, &copy),
            found(&Facts::of(LOG, true, &Digest::of(LOG.as_bytes())), LOG)
        );
        // Whether it is a result is part of the key.
        assert!(!Arc::ptr_eq(&first, &cache.of(LOG, false)));
    }

    #[test]
    fn the_cache_keeps_to_its_budget_and_keeps_what_is_met_again() {
        let one = cache_cost();
        let cache = FactsCache::new(one * 10);
        let texts: Vec<String> = (0..100).map(|i| format!("{LOG} run {i:02}")).collect();
        let first = cache.of(&texts[0], true);
        let second = cache.of(&texts[1], true);
        for (i, text) in texts.iter().enumerate() {
            cache.of(text, true);
            // The first text, met again all along, stays.
            assert!(Arc::ptr_eq(&first, &cache.of(&texts[0], true)), "text {i}");
            assert!(cache.bytes() <= one * 12, "{} bytes held", cache.bytes());
        }
        // The second, not met again, was let go in its turn: it is scanned anew.
        assert!(!Arc::ptr_eq(&second, &cache.of(&texts[1], true)));
    }

    /// What one text of the tests costs the cache.
    fn cache_cost() -> usize {
        let text = format!("{LOG} run 00");
        Facts::of(&text, true, &Digest::of(text.as_bytes())).bytes()
    }
}
