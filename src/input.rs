//! Opening session files for reading: plain JSONL, or `.zst` (Codex compresses its own archived
//! rollouts) decoded as a stream, so callers always see the decompressed bytes.

use std::fs::{File, Metadata};
use std::io::{self, BufRead, BufReader, Read, Seek, SeekFrom};
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::Path;

use crate::error::{Error, IoContext, Result};

/// Open `path` to read it as a file. What is not a regular file is refused before a byte is read
/// (a FIFO would block the read until a writer came, a device never end): it is opened without
/// blocking, then looked at. A symbolic link loop is said as one, not as a missing file.
pub fn open_file(path: &Path) -> Result<File> {
    let file = File::options()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
        .map_err(|e| unopened(path, e))?;
    let meta = file.metadata().with_path("stat", path)?;
    if let Some(e) = not_regular(path, &meta) {
        return Err(e);
    }
    // Reads of a regular file never block; clear the flag all the same, for what reads it next.
    rustix::fs::fcntl_setfl(&file, rustix::fs::OFlags::empty())
        .map_err(|e| Error::io("open", path, e.into()))?;
    Ok(file)
}

/// Why `path`, named to be read, cannot be: a symbolic link loop is said as one.
pub fn unopened(path: &Path, e: io::Error) -> Error {
    match e.raw_os_error() {
        Some(libc::ELOOP) => Error::bad_input(
            path.display(),
            "a symbolic link loop (too many levels of symbolic links)",
        ),
        _ => Error::io("open", path, e),
    }
}

/// The refusal of a file that is not a regular one, saying what it is.
pub fn not_regular(path: &Path, meta: &Metadata) -> Option<Error> {
    let kind = meta.file_type();
    let what = if kind.is_file() {
        return None;
    } else if kind.is_dir() {
        "a folder"
    } else if kind.is_fifo() {
        "a FIFO"
    } else if kind.is_socket() {
        "a socket"
    } else if kind.is_char_device() || kind.is_block_device() {
        "a device"
    } else {
        "not a file"
    };
    Some(Error::bad_input(
        path.display(),
        format!("not a regular file ({what}); only files are read"),
    ))
}

/// True for a path whose bytes are zstd-compressed (`rollout-….jsonl.zst`).
pub fn is_zstd(path: &Path) -> bool {
    path.extension().is_some_and(|e| e == "zst")
}

/// The decompressed bytes of `path`, buffered for reading through.
pub fn open(path: &Path) -> Result<Box<dyn BufRead + Send>> {
    open_buffered(path, 1 << 20)
}

/// The first lines of `path`, decompressed: a small buffer, as every fold reads them of every
/// session it finds, and a first line is a few kilobytes.
pub fn open_head(path: &Path) -> Result<Box<dyn BufRead + Send>> {
    open_buffered(path, 64 << 10)
}

fn open_buffered(path: &Path, capacity: usize) -> Result<Box<dyn BufRead + Send>> {
    let file = open_file(path)?;
    if is_zstd(path) {
        let decoder = zstd::stream::read::Decoder::new(file).with_path("read zstd", path)?;
        Ok(Box::new(BufReader::with_capacity(capacity, decoder)))
    } else {
        Ok(Box::new(BufReader::with_capacity(capacity, file)))
    }
}

/// The bytes of `path` from `offset` on, buffered as [`open`] does; `None` for a compressed file,
/// which cannot be read from the middle.
pub fn open_at(path: &Path, offset: u64) -> Result<Option<Box<dyn BufRead + Send>>> {
    if is_zstd(path) {
        return Ok(None);
    }
    let mut file = open_file(path)?;
    file.seek(SeekFrom::Start(offset)).with_path("seek", path)?;
    Ok(Some(Box::new(BufReader::with_capacity(1 << 20, file))))
}

/// Consume the next `bytes` of `input` without looking at them (a reader that hashes or counts
/// what is consumed still does); false when it has fewer. `what` names it in an error.
pub fn skip(input: &mut dyn BufRead, mut bytes: u64, what: &str) -> Result<bool> {
    while bytes > 0 {
        let available = match input.fill_buf() {
            Ok(available) => available,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e).context(|| format!("read {what}")),
        };
        if available.is_empty() {
            return Ok(false);
        }
        let n = available.len().min(bytes as usize);
        input.consume(n);
        bytes -= n as u64;
    }
    Ok(true)
}

/// The rest of `input` in memory when it is at most `limit` bytes; else `None`, and `input` reads
/// the same bytes as before (those read already, then the rest). `size`, when known, is how many
/// there are: more than `limit` are not read at all, and the buffer is made to fit.
pub fn read_small(
    input: &mut Box<dyn BufRead + Send>,
    limit: u64,
    size: Option<u64>,
    what: &str,
) -> Result<Option<Vec<u8>>> {
    if size.is_some_and(|size| size > limit) {
        return Ok(None);
    }
    let mut bytes = Vec::with_capacity(size.map_or(0, |size| size as usize));
    (&mut **input)
        .take(limit.saturating_add(1))
        .read_to_end(&mut bytes)
        .context(|| format!("read {what}"))?;
    if bytes.len() as u64 <= limit {
        return Ok(Some(bytes));
    }
    let rest = std::mem::replace(input, Box::new(std::io::empty()));
    *input = Box::new(std::io::Cursor::new(bytes).chain(rest));
    Ok(None)
}

/// Whether `path` reads as JSON Lines: its first line that is not blank is a JSON object (an
/// empty file passes). What every agent writes; a text note, a binary or `/etc/hostname` does not.
pub fn is_json_lines(path: &Path) -> Result<bool> {
    // The line-length limit of fold-v1's default settings bounds what is read.
    let limit = crate::segment::Settings::default().max_json_line_bytes;
    let mut input = open_head(path)?.take(limit);
    let mut line = Vec::new();
    loop {
        line.clear();
        if input.read_until(b'\n', &mut line).with_path("read", path)? == 0 {
            return Ok(true);
        }
        if !line.iter().all(u8::is_ascii_whitespace) {
            break;
        }
    }
    Ok(serde_json::from_slice::<serde_json::Map<String, serde_json::Value>>(&line).is_ok())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;

    #[test]
    fn small_inputs_are_read_whole_and_larger_ones_read_on_as_they_were() {
        let bytes: Vec<u8> = (0..=255u8).cycle().take(1000).collect();
        let reader = |capacity| -> Box<dyn BufRead + Send> {
            Box::new(BufReader::with_capacity(
                capacity,
                std::io::Cursor::new(bytes.clone()),
            ))
        };
        for (limit, size) in [
            (1000, None),
            (1000, Some(1000)),
            (5000, Some(10)),
            (u64::MAX, None),
        ] {
            let mut input = reader(7);
            let whole = read_small(&mut input, limit, size, "t").unwrap();
            assert_eq!(whole.as_deref(), Some(&bytes[..]), "{limit} {size:?}");
            assert!(input.fill_buf().unwrap().is_empty());
        }
        // More than the limit, or said to be: the reader gives every byte still.
        for (limit, size) in [(999, None), (0, None), (999, Some(1000))] {
            let mut input = reader(7);
            assert_eq!(read_small(&mut input, limit, size, "t").unwrap(), None);
            let mut all = Vec::new();
            input.read_to_end(&mut all).unwrap();
            assert_eq!(all, bytes, "{limit} {size:?}");
        }
    }

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

    #[test]
    fn json_lines_start_with_an_object() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("f");
        let sniff = |bytes: &[u8]| {
            std::fs::write(&file, bytes).unwrap();
            is_json_lines(&file).unwrap()
        };
        assert!(sniff(b"\n  \r\n{\"a\":1}\r\nnot json\n"));
        assert!(sniff(b""));
        assert!(!sniff(b"my-hostname\n"));
        assert!(!sniff(b"[1,2]\n"));
        assert!(!sniff(b"\"a string\"\n"));
        assert!(!sniff(b"{\"a\":1} {\"b\":2}\n"));
        assert!(!sniff(&[0xff, 0xfe, 0, 1, 2]));
    }
}
