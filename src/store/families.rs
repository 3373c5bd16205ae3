//! Sessions in fork-family order, the order a repack writes their objects in: each session placed
//! right after the one it shares the most objects with.
//!
//! A fork or a resume repeats its parent's lines, and what it adds resembles what its relatives
//! hold (the parts around a fork point hold lines of both); zstd finds those resemblances inside
//! one pack block and not across blocks. Sessions by name (by start time) scatter a family over
//! the whole pack. Measured on bench/forks' store (182 sessions, 14.5 MB of unique objects, zstd
//! 19 in 4 MiB blocks, as `gc --aggressive` writes): the sessions' objects 0.62 -> 0.58 MB and
//! their seed batches (in the same order) 0.23 -> 0.19 MB. Within a session its objects stay in
//! part order, together, as a restore reads them.

use std::cmp::Reverse;
use std::collections::HashMap;

use crate::digest::Digest;

/// An object more sessions than this hold (an instruction file every session opens with) tells
/// no family apart, and counting it would make the order quadratic in the number of sessions.
const COMMON: usize = 256;

/// The order of `sessions` (each the objects it names): greedily, the next is the session not yet
/// placed that shares the most distinct objects with the last one placed, the earliest on a tie;
/// when none shares any, the earliest not yet placed.
pub fn family_order(sessions: &[Vec<Digest>]) -> Vec<usize> {
    let mut numbers: HashMap<Digest, u32> = HashMap::new();
    let objects: Vec<Vec<u32>> = (sessions.iter())
        .map(|parts| {
            let mut held: Vec<u32> = (parts.iter())
                .map(|digest| {
                    let next = numbers.len() as u32;
                    *numbers.entry(*digest).or_insert(next)
                })
                .collect();
            held.sort_unstable();
            held.dedup();
            held
        })
        .collect();
    let mut holders = vec![Vec::new(); numbers.len()];
    for (session, held) in objects.iter().enumerate() {
        for &object in held {
            holders[object as usize].push(session);
        }
    }
    let mut placed = vec![false; sessions.len()];
    let mut order = Vec::with_capacity(sessions.len());
    let mut shared: HashMap<usize, u32> = HashMap::new();
    let (mut earliest, mut next) = (0, None);
    while order.len() < sessions.len() {
        let session = next.take().unwrap_or_else(|| {
            while placed[earliest] {
                earliest += 1;
            }
            earliest
        });
        placed[session] = true;
        order.push(session);
        shared.clear();
        for &object in &objects[session] {
            let holders = &holders[object as usize];
            if holders.len() > COMMON {
                continue;
            }
            for &other in holders.iter().filter(|&&other| !placed[other]) {
                *shared.entry(other).or_default() += 1;
            }
        }
        next = (shared.iter())
            .max_by_key(|&(&other, &count)| (count, Reverse(other)))
            .map(|(&other, _)| other);
    }
    order
}

#[cfg(test)]
mod tests {
    use super::*;

    fn objects(names: &[u8]) -> Vec<Digest> {
        names.iter().map(|n| Digest::of(&[*n])).collect()
    }

    #[test]
    fn each_session_follows_the_one_it_shares_most_with() {
        let sessions = [
            objects(&[1, 2, 3]),
            objects(&[10, 11]),
            objects(&[20]),
            objects(&[1, 2, 4]),
            objects(&[10, 11, 12]),
            objects(&[1, 5]),
        ];
        // 0 shares two with 3 and one with 5; 3 then shares one with 5; 5 none left: the earliest
        // unplaced (1) opens the next family, 4 follows it, and 2 shares with nobody.
        assert_eq!(family_order(&sessions), [0, 3, 5, 1, 4, 2]);
    }

    #[test]
    fn distinct_objects_count_once_and_ties_go_to_the_earliest() {
        let sessions = [
            objects(&[1, 1, 1, 2]),
            objects(&[2, 9]),
            objects(&[1, 8]),
            objects(&[2, 1, 1]),
        ];
        assert_eq!(family_order(&sessions), [0, 3, 1, 2]);
        let alike = [objects(&[7]), objects(&[7]), objects(&[7])];
        assert_eq!(family_order(&alike), [0, 1, 2]);
    }

    #[test]
    fn an_object_most_sessions_hold_tells_no_family() {
        let common = Digest::of(b"common");
        let mut sessions = vec![vec![common, Digest::of(b"first")], objects(&[9])];
        sessions.extend((0..COMMON).map(|n| vec![common, Digest::of(&n.to_le_bytes())]));
        // The first shares only the common object: the one after it is the earliest not placed,
        // not the earliest of those that hold it too.
        let order = family_order(&sessions);
        assert_eq!(order[..3], [0, 1, 2]);
        let mut sorted = order.clone();
        sorted.sort_unstable();
        assert_eq!(sorted, (0..sessions.len()).collect::<Vec<_>>());
    }

    #[test]
    fn no_sessions_no_order() {
        assert!(family_order(&[]).is_empty());
        assert_eq!(family_order(&[Vec::new(), Vec::new()]), [0, 1]);
    }
}
