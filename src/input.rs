//! Opening session files for reading: plain JSONL, or `.zst` (Codex compresses its own archived
//! rollouts) decoded as a stream, so callers always see the decompressed bytes.

use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::Path;

use crate::error::{IoContext, Result};

/// True for a path whose bytes are zstd-compressed (`rollout-….jsonl.zst`).
pub fn is_zstd(path: &Path) -> bool {
    path.extension().is_some_and(|e| e == "zst")
}

/// The decompressed bytes of `path`, buffered.
pub fn open(path: &Path) -> Result<Box<dyn BufRead + Send>> {
    let file = File::open(path).with_path("open", path)?;
    if is_zstd(path) {
        let decoder = zstd::stream::read::Decoder::new(file).with_path("read zstd", path)?;
        Ok(Box::new(BufReader::with_capacity(1 << 20, decoder)))
    } else {
        Ok(Box::new(BufReader::with_capacity(1 << 20, file)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;

    #[test]
    fn zst_files_read_as_their_decompressed_bytes() {
        let dir = tempfile::tempdir().unwrap();
        let plain = dir.path().join("a.jsonl");
        let packed = dir.path().join("a.jsonl.zst");
        std::fs::write(&plain, b"{}\n").unwrap();
        std::fs::write(&packed, zstd::encode_all(&b"{}\n"[..], 3).unwrap()).unwrap();
        for path in [&plain, &packed] {
            let mut text = Vec::new();
            open(path).unwrap().read_to_end(&mut text).unwrap();
            assert_eq!(text, b"{}\n");
        }
    }
}
