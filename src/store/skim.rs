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

/// The first line of the session, elided, without its `\n`; `None` past `limit` elided bytes.
pub fn first_line(store: &Store, manifest: &Manifest, limit: usize) -> Result<Option<Vec<u8>>> {
    store.odb().check_dictionary(&manifest.settings)?;
    let mut line = Vec::new();
    for part in &manifest.parts {
        let start = line.len();
        read_elided(store, part, &mut line)?;
        if let Some(at) = memchr::memchr(b'\n', &line[start..]) {
            line.truncate(start + at);
            return Ok(Some(line));
        }
        if line.len() > limit {
            return Ok(None);
        }
    }
    Ok(Some(line))
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
