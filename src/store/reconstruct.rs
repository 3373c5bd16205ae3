//! Reconstruction: a manifest's parts streamed back out of the store as the original bytes,
//! each object checked against its name and size, the whole against the source's sha256 and size.

use std::io::{self, Write};

use super::Store;
use super::manifest::Manifest;
use crate::digest::HashingWriter;
use crate::error::{Error, Result};

/// Write the session's bytes to `out`, verifying as they stream. On error, `out` may hold a
/// prefix: callers that must not expose it write to a temp file.
pub fn write_session(store: &Store, manifest: &Manifest, out: &mut dyn Write) -> Result<()> {
    let mut sink = HashingWriter::new(out);
    for part in &manifest.parts {
        store.read_object(&part.object.sha256, Some(part.object.raw_bytes), &mut sink)?;
    }
    let (_, digest, bytes) = sink.finish();
    let source = &manifest.source;
    if bytes != source.bytes || digest != source.sha256 {
        return Err(Error::failed(format!(
            "reconstruction gives {bytes} bytes with sha256 {digest}, the source had {} bytes with sha256 {}",
            source.bytes, source.sha256
        )));
    }
    Ok(())
}

/// Reconstruct without keeping the bytes: the check made before a manifest is committed and
/// before a source is removed.
pub fn verify(store: &Store, manifest: &Manifest) -> Result<()> {
    write_session(store, manifest, &mut io::sink())
}

/// Restore a folded session to `target`: a temp file beside it, written and verified, fsynced,
/// then renamed into place (never over an existing file unless `overwrite`). On any failure the
/// target is untouched and the temp file is gone. Missing parent directories are created private.
pub fn restore_file(store: &Store, manifest: &Manifest, target: &std::path::Path, overwrite: bool) -> Result<()> {
    use super::atomic::{Committed, Pending};
    use crate::error::IoContext;
    if !overwrite && target.symlink_metadata().is_ok() {
        return Err(Error::failed(format!("{} exists (use --overwrite to replace it)", target.display())));
    }
    let dir = match target.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => std::path::PathBuf::from("."),
    };
    super::create_private_dir(&dir)?;
    let name = target.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let mut pending = Pending::new_in(&dir, &format!(".{name}.restore-"))?;
    let mut buffered = io::BufWriter::with_capacity(1 << 20, &mut pending);
    write_session(store, manifest, &mut buffered)?;
    buffered.flush().with_path("write", target)?;
    drop(buffered);
    match pending.commit(target, overwrite)? {
        Committed::Written => Ok(()),
        Committed::AlreadyThere => {
            Err(Error::failed(format!("{} appeared while restoring; left as it is", target.display())))
        }
    }
}
