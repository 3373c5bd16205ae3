//! The threads that compress a pack's blocks while the caller keeps adding objects.
//!
//! Each worker owns a zstd compressor (building one is the expensive part) and takes blocks from
//! a shared queue; finished frames come back tagged with their block number, in whatever order
//! they finish. Putting them back in order, bounding what is in flight and writing them is the
//! writer's job, not this module's.

use std::thread::JoinHandle;

use crossbeam_channel::{Receiver, Sender};

use super::{frame, writer_error};
use crate::error::Result;

/// A block to compress.
struct Job {
    block: u32,
    raw: Vec<u8>,
}

/// A compressed block, with its raw buffer handed back for reuse.
pub struct Done {
    pub block: u32,
    pub raw: Vec<u8>,
    pub frame: Result<Vec<u8>>,
}

pub struct Workers {
    jobs: Option<Sender<Job>>,
    done: Receiver<Done>,
    threads: Vec<JoinHandle<()>>,
}

impl Workers {
    /// `threads` (at least one) compressors at `level`, with `dictionary` if any, for blocks of
    /// `block_bytes`. Compressors are built here, so that a bad level or dictionary is an error now
    /// rather than on a thread.
    pub fn new(
        threads: usize,
        level: i32,
        dictionary: Option<&[u8]>,
        block_bytes: usize,
    ) -> Result<Self> {
        // The writer bounds what is in flight, so the queues never hold more than that.
        let (jobs, queue) = crossbeam_channel::unbounded::<Job>();
        let (finished, done) = crossbeam_channel::unbounded::<Done>();
        let mut handles = Vec::new();
        for _ in 0..threads.max(1) {
            let mut compressor = frame::Compressor::new(level, dictionary, block_bytes)?;
            let queue = queue.clone();
            let finished = finished.clone();
            handles.push(std::thread::spawn(move || {
                for Job { block, raw } in queue {
                    // A panic must come back as an error: the writer waits for every block.
                    let frame = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                        compressor.compress(&raw)
                    }))
                    .unwrap_or_else(|_| Err(writer_error("a compression thread panicked")));
                    if finished.send(Done { block, raw, frame }).is_err() {
                        return;
                    }
                }
            }));
        }
        Ok(Self {
            jobs: Some(jobs),
            done,
            threads: handles,
        })
    }

    pub fn send(&self, block: u32, raw: Vec<u8>) -> Result<()> {
        self.jobs
            .as_ref()
            .expect("jobs are sent before drop")
            .send(Job { block, raw })
            .map_err(|_| writer_error("the compression threads stopped"))
    }

    /// The next finished block, waiting for one.
    pub fn recv(&self) -> Result<Done> {
        self.done
            .recv()
            .map_err(|_| writer_error("the compression threads stopped"))
    }

    /// A finished block, if one is ready now.
    pub fn try_recv(&self) -> Option<Done> {
        self.done.try_recv().ok()
    }
}

impl Drop for Workers {
    fn drop(&mut self) {
        // Closing the queue ends each worker after its current block.
        self.jobs = None;
        for thread in self.threads.drain(..) {
            let _ = thread.join();
        }
    }
}
