//! A parallel [`PartSink`] for writing: the caller's thread keeps reading and segmenting while
//! worker threads hash, compress and store the parts. Manifest entries still come out in part
//! order, so the manifest is the one the sequential [`super::writer::PartWriter`] builds.
//!
//! Memory is bounded: at most [`MAX_IN_FLIGHT_BYTES`] of part bytes (or one part, if larger) wait
//! for a worker, and at most [`MAX_SPARE_BUFFERS`] small buffers are kept for reuse, whatever the
//! size of the session.

use std::collections::BTreeMap;
use std::sync::mpsc::{Receiver, Sender, channel};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use super::Store;
use super::manifest::{ObjectRef, Part, PartKind as ManifestKind};
use super::writer::WriteStats;
use crate::digest::Digest;
use crate::error::{Error, Result};
use crate::odb::Encoder;
use crate::segment::{PartKind, PartSink};

/// Enough queued work to keep every worker busy while the reader runs ahead.
pub const MAX_IN_FLIGHT_BYTES: usize = 16 << 20;

/// Buffers handed back by workers and kept for the next parts (each at most 256 KiB).
pub const MAX_SPARE_BUFFERS: usize = 64;

struct Job {
    seq: u64,
    kind: ManifestKind,
    json_path: Option<String>,
    bytes: Vec<u8>,
}

struct Done {
    seq: u64,
    /// The job's buffer, handed back for the next part (fresh allocations fault in fresh pages).
    buffer: Vec<u8>,
    result: Result<(Part, bool)>,
}

pub struct ParallelWriter<F: FnMut(Part) -> Result<()>> {
    jobs: Option<Sender<Job>>,
    done: Receiver<Done>,
    workers: Vec<JoinHandle<()>>,
    sent: u64,
    recorded: u64,
    in_flight: usize,
    spare: Vec<Vec<u8>>,
    /// Finished parts that wait for an earlier one.
    ready: BTreeMap<u64, Result<(Part, bool)>>,
    record: F,
    pub stats: WriteStats,
}

impl<F: FnMut(Part) -> Result<()>> ParallelWriter<F> {
    /// Store parts into `store` with copies of `encoder`, one per worker (`workers` ≥ 1; by
    /// default, [`default_workers`]). `record` receives each part's manifest entry, in order.
    pub fn new(store: &Store, encoder: &Encoder, workers: usize, record: F) -> Result<Self> {
        let (jobs, queue) = channel::<Job>();
        let (finished, done) = channel::<Done>();
        let queue = Arc::new(Mutex::new(queue));
        let mut handles = Vec::new();
        for _ in 0..workers.max(1) {
            let mut encoder = encoder.fresh()?;
            let store = store.clone();
            let queue = queue.clone();
            let finished = finished.clone();
            handles.push(std::thread::spawn(move || {
                loop {
                    let job = match queue.lock().unwrap_or_else(|e| e.into_inner()).recv() {
                        Ok(job) => job,
                        Err(_) => return,
                    };
                    let result = store_part(&store, &mut encoder, &job);
                    let reply = Done {
                        seq: job.seq,
                        buffer: job.bytes,
                        result,
                    };
                    if finished.send(reply).is_err() {
                        return;
                    }
                }
            }));
        }
        Ok(Self {
            jobs: Some(jobs),
            done,
            workers: handles,
            sent: 0,
            recorded: 0,
            in_flight: 0,
            spare: Vec::new(),
            ready: BTreeMap::new(),
            record,
            stats: WriteStats::default(),
        })
    }

    /// Wait for every part, record the rest in order, and stop the workers.
    pub fn finish(mut self) -> Result<WriteStats> {
        self.jobs = None;
        while self.recorded < self.sent {
            self.wait_one()?;
        }
        for worker in self.workers.drain(..) {
            worker.join().map_err(|_| stopped())?;
        }
        Ok(self.stats)
    }

    fn wait_one(&mut self) -> Result<()> {
        let done = self.done.recv().map_err(|_| stopped())?;
        self.accept(done)
    }

    fn accept(&mut self, done: Done) -> Result<()> {
        self.in_flight -= done.buffer.len();
        if done.buffer.capacity() <= 256 << 10 && self.spare.len() < MAX_SPARE_BUFFERS {
            self.spare.push(done.buffer);
        }
        self.ready.insert(done.seq, done.result);
        while let Some(result) = self.ready.remove(&self.recorded) {
            let (part, created) = result?;
            self.recorded += 1;
            self.stats.parts += 1;
            if created {
                self.stats.new_objects += 1;
                self.stats.new_raw_bytes += part.object.raw_bytes;
                self.stats.new_stored_bytes += part.object.stored_bytes;
            } else {
                self.stats.dedup_raw_bytes += part.object.raw_bytes;
            }
            (self.record)(part)?;
        }
        Ok(())
    }
}

/// A worker died (a bug, not the data's fault).
fn stopped() -> Error {
    Error::system(
        "store parts",
        std::io::Error::other("a writer thread stopped"),
    )
}

/// One worker per core: the caller's thread segments at several times the speed a core compresses.
pub fn default_workers() -> usize {
    std::thread::available_parallelism().map_or(2, |n| n.get())
}

fn store_part(store: &Store, encoder: &mut Encoder, job: &Job) -> Result<(Part, bool)> {
    let sha256 = Digest::of(&job.bytes);
    let stored = store.odb().put(&sha256, &job.bytes, encoder)?;
    let object = ObjectRef {
        sha256,
        raw_bytes: job.bytes.len() as u64,
        stored_bytes: stored.stored_bytes,
    };
    Ok((
        Part {
            kind: job.kind,
            json_path: job.json_path.clone(),
            object,
        },
        stored.created,
    ))
}

impl<F: FnMut(Part) -> Result<()>> PartSink for ParallelWriter<F> {
    fn part(&mut self, kind: PartKind<'_>, bytes: &[u8]) -> Result<()> {
        while self.recorded < self.sent && self.in_flight + bytes.len() > MAX_IN_FLIGHT_BYTES {
            self.wait_one()?;
        }
        while let Ok(done) = self.done.try_recv() {
            self.accept(done)?;
        }
        let (kind, json_path) = match kind {
            PartKind::Residual => (ManifestKind::Residual, None),
            PartKind::Field { json_path } => (ManifestKind::Field, json_path.map(str::to_string)),
        };
        let mut buffer = self.spare.pop().unwrap_or_default();
        buffer.clear();
        buffer.extend_from_slice(bytes);
        let job = Job {
            seq: self.sent,
            kind,
            json_path,
            bytes: buffer,
        };
        self.in_flight += bytes.len();
        self.sent += 1;
        let jobs = self.jobs.as_ref().expect("parts come before finish");
        jobs.send(job).map_err(|_| stopped())
    }
}

impl<F: FnMut(Part) -> Result<()>> Drop for ParallelWriter<F> {
    fn drop(&mut self) {
        self.jobs = None;
        for worker in self.workers.drain(..) {
            let _ = worker.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::segment::{Settings, segment};
    use crate::store::writer::{Mode, PartWriter};

    fn corpus() -> Vec<u8> {
        let mut input = Vec::new();
        for i in 0..3000u64 {
            let big =
                format!("{}", i * 2_654_435_761 % 1_000_003).repeat(300 + (i % 7) as usize * 200);
            input.extend_from_slice(
                format!("{{\"n\":{i},\"out\":\"{big}\",\"again\":\"{big}\"}}\n").as_bytes(),
            );
            input.extend_from_slice(format!("{{\"small\":{}}}\n", i * i).as_bytes());
        }
        input
    }

    #[test]
    fn gives_the_manifest_the_sequential_writer_gives() {
        let input = corpus();
        let dir = tempfile::tempdir().unwrap();
        let settings = Settings::default();
        let sequential_store = Store::init(dir.path().join("a")).unwrap();
        let mut sequential = Vec::new();
        let mut writer = PartWriter::new(
            Mode::Write(&sequential_store, Encoder::new(3).unwrap()),
            |p| {
                sequential.push(p);
                Ok(())
            },
        );
        segment(&settings, &mut &input[..], "input", &mut writer).unwrap();
        let sequential_stats = writer.stats;

        let store = Store::init(dir.path().join("b")).unwrap();
        let mut parallel = Vec::new();
        let mut writer = ParallelWriter::new(&store, &Encoder::new(3).unwrap(), 3, |p| {
            parallel.push(p);
            Ok(())
        })
        .unwrap();
        segment(&settings, &mut &input[..], "input", &mut writer).unwrap();
        let stats = writer.finish().unwrap();
        assert_eq!(parallel, sequential);
        assert!(parallel.len() > 1000);
        assert_eq!(stats.parts, sequential_stats.parts);
        assert_eq!(
            stats.new_raw_bytes + stats.dedup_raw_bytes,
            input.len() as u64
        );
        assert!(stats.dedup_raw_bytes > 0, "the repeated fields dedupe");
        let listed: Vec<_> = store.odb().list().unwrap().collect();
        let expected: Vec<_> = sequential_store.odb().list().unwrap().collect();
        assert_eq!(listed, expected);
    }

    #[test]
    fn a_failing_store_is_an_error_not_a_hang() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::init(dir.path().join("s")).unwrap();
        std::fs::remove_dir_all(store.tmp_dir()).unwrap();
        std::fs::write(store.tmp_dir(), b"not a directory").unwrap();
        let mut writer =
            ParallelWriter::new(&store, &Encoder::new(3).unwrap(), 2, |_| Ok(())).unwrap();
        let input = corpus();
        let failed = segment(&Settings::default(), &mut &input[..], "input", &mut writer)
            .err()
            .or_else(|| writer.finish().err());
        assert!(failed.is_some());
    }
}
