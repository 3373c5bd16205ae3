//! Starting the writeback of a file's dirty pages while it is still being written, so that the
//! fsync or `syncfs` that makes it durable finds little left to write (git's
//! `core.fsyncMethod=batch` starts writeback the same way). A durability barrier at the end of a
//! fold or a restore otherwise waits for every byte written since the last one: restoring a 1 GB
//! rollout spent a third of its 1.8 s in its final fsync, and folding one 0.13 s in fsyncs at its
//! end, after every core had finished.
//!
//! Only a start: nothing here makes a byte durable, or waits. Not for: deciding when a barrier
//! runs (`atomic`, `commit`, `restore`).

use std::fs::File;
use std::sync::atomic::{AtomicU64, Ordering};

/// Writeback of a file starts each time this many more bytes were written to it: large enough
/// that the calls cost nothing beside the writes, small enough that the disk has work all along.
const STEP_BYTES: u64 = 8 << 20;

/// How many bytes were written to one file, from any thread, in any order.
#[derive(Debug, Default)]
pub struct Writeback {
    written: AtomicU64,
}

impl Writeback {
    /// `bytes` more were written to `file`: once another [`STEP_BYTES`] were, start writing its
    /// dirty pages out.
    pub fn wrote(&self, file: &File, bytes: u64) {
        let before = self.written.fetch_add(bytes, Ordering::Relaxed);
        if crosses_step(before, bytes) {
            start(file);
        }
    }
}

/// Whether writing `bytes` after `before` reaches another multiple of [`STEP_BYTES`]: once for
/// each, whichever thread's write it is.
fn crosses_step(before: u64, bytes: u64) -> bool {
    before / STEP_BYTES != before.saturating_add(bytes) / STEP_BYTES
}

/// Start writing out every dirty page of `file` not being written out already, on a thread of its
/// own: starting it takes milliseconds (the filesystem allocates the pages' blocks then), which the
/// threads writing the file do not wait for. Advisory: skipped while that thread is behind, and
/// an error there would show again, and be reported, at the fsync that follows.
#[cfg(target_os = "linux")]
fn start(file: &File) {
    use std::sync::OnceLock;

    use crossbeam_channel::{Sender, bounded};

    /// Files waiting for their writeback to start, at most.
    const WAITING: usize = 64;
    static STARTER: OnceLock<Option<Sender<File>>> = OnceLock::new();
    let starter = STARTER.get_or_init(|| {
        let (sender, files) = bounded::<File>(WAITING);
        let thread = std::thread::Builder::new().name("ctxfold-writeback".into());
        let started = thread.spawn(move || {
            for file in files {
                start_now(&file);
            }
        });
        started.ok().map(|_| sender)
    });
    // A descriptor of its own keeps the file open until its writeback has started, whatever
    // becomes of the caller's.
    if let (Some(starter), Ok(file)) = (starter, file.try_clone()) {
        let _ = starter.try_send(file);
    }
}

#[cfg(target_os = "linux")]
fn start_now(file: &File) {
    use std::os::fd::AsRawFd;
    // SAFETY: the descriptor is open for the call's duration (`file` is borrowed), and the call
    // touches no memory of this process. Offset 0 and length 0 cover the whole file.
    unsafe {
        libc::sync_file_range(file.as_raw_fd(), 0, 0, libc::SYNC_FILE_RANGE_WRITE);
    }
}

#[cfg(not(target_os = "linux"))]
fn start(_file: &File) {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writeback_starts_once_for_each_step_written_whatever_the_writes() {
        let starts = |writes: &[u64]| {
            let mut written = 0;
            let mut starts = 0;
            for &bytes in writes {
                starts += usize::from(crosses_step(written, bytes));
                written += bytes;
            }
            starts
        };
        assert_eq!(starts(&[]), 0);
        assert_eq!(starts(&[STEP_BYTES - 1]), 0);
        assert_eq!(starts(&[STEP_BYTES - 1, 1]), 1);
        assert_eq!(starts(&[STEP_BYTES]), 1);
        assert_eq!(starts(&[1, STEP_BYTES, STEP_BYTES]), 2);
        // One write over several steps starts it once: it covers the whole file.
        assert_eq!(starts(&[3 * STEP_BYTES]), 1);
        assert_eq!(starts(&vec![4096; (2 * STEP_BYTES / 4096) as usize]), 2);
        assert_eq!(starts(&[0, 0]), 0);
        assert!(!crosses_step(u64::MAX - 1, 10), "no overflow");
    }
}
