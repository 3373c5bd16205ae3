//! A byte range of a file, read with `pread`: many threads can read one shared handle at once, and
//! a reader never runs past the range's end. Not buffered; wrap it in a `BufReader`.

use std::fs::File;
use std::io::{self, Read};
use std::os::unix::fs::FileExt;

pub struct Extent<'a> {
    file: &'a File,
    at: u64,
    end: u64,
}

impl<'a> Extent<'a> {
    /// `len` bytes of `file` from `offset`.
    pub fn new(file: &'a File, offset: u64, len: u64) -> Self {
        Self {
            file,
            at: offset,
            end: offset.saturating_add(len),
        }
    }

    /// Bytes of the range not yet read.
    pub fn left(&self) -> u64 {
        self.end - self.at
    }
}

impl Read for Extent<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let want = self.left().min(buf.len() as u64) as usize;
        let n = self.file.read_at(&mut buf[..want], self.at)?;
        if n == 0 && want > 0 {
            // The file is shorter than its index said: not an ordinary end of data.
            return Err(io::ErrorKind::UnexpectedEof.into());
        }
        self.at += n as u64;
        Ok(n)
    }
}
