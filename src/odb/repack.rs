//! Repacking: objects from some packs and from loose files rewritten into one new pack, in an
//! order that keeps each session's objects together, then the packs and loose files they came
//! from removed.
//!
//! The new pack is in place and durable before anything is removed, so a crash at any point leaves
//! every object readable (at worst twice, until the next repack); a source goes only once what it
//! holds that the repack keeps is in another file (the object database's removal rule), so a
//! repack whose new pack is byte for byte a source's keeps that pack. Registered dictionaries stay
//! loose: a frame written with a dictionary must never be needed to read that dictionary. Callers
//! hold the store lock exclusive. Not for deciding what is garbage: that is gc's job, passed in as
//! `keep`.

use std::collections::{HashMap, HashSet};

use super::pack::{PackInfo, PackOptions};
use super::{Listed, Odb, Place};
use crate::digest::Digest;
use crate::error::Result;

/// What to rewrite.
pub struct Sources {
    /// Packs to rewrite: each is removed once its kept objects are in the new pack.
    pub packs: Vec<Digest>,
    /// Pack the loose objects too (all but registered dictionaries).
    pub loose: bool,
}

/// What becomes of an object of the sources.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fate {
    /// Into the new pack.
    Pack,
    /// Gone (from a rewritten pack, or its loose file removed).
    Drop,
    /// A loose object left as it is (one in a rewritten pack is packed instead).
    Leave,
}

/// What a repack did.
#[derive(Debug, Default)]
pub struct Repacked {
    pub pack: Option<PackInfo>,
    pub removed_packs: Vec<Digest>,
    /// Loose objects whose files were removed: now in the new pack, or in a pack already.
    pub packed_loose: u64,
    /// Objects `keep` refused, with where they were: gone now.
    pub dropped: Vec<(Digest, Place)>,
    /// The new pack came out byte for byte the one pack it was written from, which stays, and
    /// nothing else changed: the store was packed so already.
    pub unchanged: bool,
}

/// Rewrite `sources` into one pack written with `options`. Objects go in the order `order` names
/// them (each session's parts, say), then the rest in the order they were found; `fate` decides
/// what becomes of each. Loose objects already in a pack that stays are duplicates: their files
/// are removed.
pub fn repack(
    odb: &Odb,
    sources: &Sources,
    order: impl IntoIterator<Item = Digest>,
    fate: impl Fn(&Digest, Place) -> Fate,
    options: PackOptions,
) -> Result<Repacked> {
    let dictionaries: HashSet<Digest> = odb.dictionaries()?.into_iter().collect();
    let rewritten: HashSet<Digest> = sources.packs.iter().copied().collect();
    // Every object of the sources with where it is, in the order found; an object listed in
    // several places keeps its first. Objects in packs that stay are not moved.
    let mut found: Vec<(Digest, Place)> = Vec::new();
    let mut loose = Vec::new();
    let mut seen = HashSet::new();
    let mut staying = HashSet::new();
    for entry in odb.list()? {
        let Listed::Object { digest, place } = entry else {
            continue;
        };
        match place {
            Place::Pack(name) if !rewritten.contains(&name) => {
                staying.insert(digest);
                continue;
            }
            Place::Loose if !sources.loose || dictionaries.contains(&digest) => continue,
            Place::Loose => loose.push(digest),
            Place::Pack(_) => {}
            Place::Codexfold => continue,
        }
        if seen.insert(digest) {
            found.push((digest, place));
        }
    }
    let places: HashMap<Digest, Place> = found.iter().copied().collect();
    let mut done = Repacked::default();
    let mut dropped = HashSet::new();
    let mut left = HashSet::new();
    let mut writer = odb.pack_writer(options)?;
    let ordered = order
        .into_iter()
        .filter_map(|digest| places.get(&digest).map(|&place| (digest, place)));
    for (digest, place) in ordered.chain(found.iter().copied()) {
        if staying.contains(&digest)
            || writer.contains(&digest)
            || dropped.contains(&digest)
            || left.contains(&digest)
        {
            continue;
        }
        match fate(&digest, place) {
            Fate::Drop => {
                dropped.insert(digest);
                done.dropped.push((digest, place));
                continue;
            }
            Fate::Leave if place == Place::Loose => {
                left.insert(digest);
                continue;
            }
            Fate::Pack | Fate::Leave => {}
        }
        let bytes = odb.read_to_vec(&digest, None)?;
        if dictionaries.contains(&digest) {
            // A dictionary that came in a pack leaves it as a loose object written without one.
            let mut encoder = super::Encoder::new(super::DEFAULT_LEVEL)?;
            odb.loose.put(&digest, &bytes, &mut encoder)?;
            odb.sync()?;
            continue;
        }
        writer.add(&digest, &bytes)?;
    }
    done.pack = odb.commit_pack(writer)?;
    // What the new pack holds, and what stays where it was, is what retiring checks for.
    let keeps = |digest: &Digest| !dropped.contains(digest);
    for name in &sources.packs {
        if odb.retire_pack(name, keeps)? {
            done.removed_packs.push(*name);
        }
    }
    for digest in loose.into_iter().filter(|d| !left.contains(d)) {
        let keep = keeps(&digest);
        if odb.retire_loose(&digest, keep)? && keep {
            done.packed_loose += 1;
        }
    }
    done.unchanged = done.removed_packs.is_empty()
        && done.packed_loose == 0
        && done.dropped.is_empty()
        && done
            .pack
            .as_ref()
            .is_some_and(|p| sources.packs.contains(&p.name));
    Ok(done)
}
