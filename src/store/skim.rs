//! A folded session skimmed at its ends without its large strings: its bytes with every field part
//! elided to `""`, read from the start or from the end, decoding only residual objects. A field
//! part is always a whole JSON string token (the segmentation makes nothing else a field), so an
//! elided line is still the same JSON with its long strings emptied: enough to read what a line's
//! short values say (an id, a cwd, a timestamp) at the cost of a few small objects, whatever the
//! session's size.
//!
//! Not for: anything that needs the bytes as they are (`reconstruct` streams and verifies those).

use super::Store;
use super::manifest::{Manifest, PartKind};
use crate::error::Result;

/// What a field part becomes.
const ELIDED: &[u8] = b"\"\"";

/// The session's first lines, elided, without their `\n`: parts are read from the start until
/// `count` lines are whole (or the session ends), within `limit` elided bytes (a line cut off
/// there is left out).
pub fn first_lines(
    store: &Store,
    manifest: &Manifest,
    count: usize,
    limit: usize,
) -> Result<Vec<Vec<u8>>> {
    store.odb().check_dictionary(&manifest.settings)?;
    let mut head = Vec::new();
    let mut at_end = true;
    for part in &manifest.parts {
        read_elided(store, part, &mut head)?;
        if memchr::memchr_iter(b'\n', &head).count() >= count || head.len() > limit {
            at_end = false;
            break;
        }
    }
    let mut lines: Vec<Vec<u8>> = head.split(|&b| b == b'\n').map(<[u8]>::to_vec).collect();
    // What follows the last line end is a line cut off, unless the session ends there.
    if !at_end || lines.last().is_some_and(Vec::is_empty) {
        lines.pop();
    }
    lines.truncate(count);
    Ok(lines)
}

/// The session's last lines, elided, without their `\n`, the last first: parts are read from the
/// end until `count` lines are whole (or the session starts), within `limit` elided bytes.
pub fn last_lines(
    store: &Store,
    manifest: &Manifest,
    count: usize,
    limit: usize,
) -> Result<Vec<Vec<u8>>> {
    store.odb().check_dictionary(&manifest.settings)?;
    // The tail read so far, parts prepended as they are read.
    let mut tail: Vec<u8> = Vec::new();
    let mut part_bytes = Vec::new();
    let mut at_start = true;
    for part in manifest.parts.iter().rev() {
        part_bytes.clear();
        read_elided(store, part, &mut part_bytes)?;
        part_bytes.extend_from_slice(&tail);
        std::mem::swap(&mut tail, &mut part_bytes);
        // `count` whole lines need `count` line ends before them (the last line's own may lack).
        let body = tail.strip_suffix(b"\n").unwrap_or(&tail);
        if memchr::memchr_iter(b'\n', body).count() >= count || tail.len() > limit {
            at_start = false;
            break;
        }
    }
    let body = tail.strip_suffix(b"\n").unwrap_or(&tail);
    let mut lines: Vec<Vec<u8>> = body.rsplit(|&b| b == b'\n').map(<[u8]>::to_vec).collect();
    if !at_start {
        // The earliest piece may be the end of a line cut off: only whole lines count.
        lines.pop();
    }
    lines.truncate(count);
    Ok(lines)
}

fn read_elided(store: &Store, part: &super::manifest::Part, out: &mut Vec<u8>) -> Result<()> {
    match part.kind {
        PartKind::Field => out.extend_from_slice(ELIDED),
        PartKind::Residual => {
            store
                .odb()
                .read(&part.object.sha256, Some(part.object.raw_bytes), out)?;
        }
    }
    Ok(())
}
