//! The store's seed catalog, `<store>/seeds/catalog.jsonl`: where every session's seed index is.
//!
//! A session's seed index (the contract's append-only JSONL file of records) is kept as objects,
//! one per append: a *batch* holds the lines one writer added at once. Batches go into packs with
//! the sessions' objects, compressed, so that the records forks repeat of each other compress
//! together. The catalog lists the batches in the order they were appended, one JSON line each:
//!
//! ```text
//! {"session":"<id>","object":"<sha256 of the batch>","bytes":<its length>}
//! ```
//!
//! A session's index is the concatenation of its batches. The catalog is append-only too: a batch
//! is listed only once its object is durable, in one `O_APPEND` write, fsynced, under
//! `locks/seeds.lock`. Only `rm` rewrites it (dropping a session's lines), under the same lock.
//! Readers take no lock: a last line without its `\n` is a write in progress, and is left unread;
//! the next writer drops it, since a writer holding the lock finds one only after a crash.
//!
//! Not for what the lines of an index mean (see `index` and `union`).

use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader, Read, Seek, SeekFrom, Write};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::digest::Digest;
use crate::error::{IoContext, Result};
use crate::files::atomic::{Pending, sync_parent};
use crate::files::create_private_dir;
use crate::store::lock::StoreLock;
use crate::store::{Store, check_session_id};

/// One append to one session's seed index.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Batch {
    pub session: String,
    pub object: Digest,
    pub bytes: u64,
}

/// The catalog as read so far; [`Catalog::refresh`] reads what was appended since.
#[derive(Debug, Default)]
pub struct Catalog {
    batches: Vec<Batch>,
    by_session: HashMap<String, Vec<usize>>,
    /// The file read: (device, inode), and the bytes of whole lines read from it.
    file: Option<(u64, u64)>,
    read_to: u64,
    /// Lines that are no batch, as `catalog.jsonl:N: why` (fsck reports them; readers skip them).
    pub problems: Vec<String>,
    lines: u64,
}

/// `<store>/seeds/catalog.jsonl`.
pub fn path(store: &Store) -> PathBuf {
    store.seeds_dir().join("catalog.jsonl")
}

/// Take the catalog's lock (see the module comment), waiting for it.
pub fn lock(store: &Store) -> Result<StoreLock> {
    store.lock_file("seeds")
}

impl Catalog {
    /// The catalog of `store` (empty when it has none yet).
    pub fn load(store: &Store) -> Result<Self> {
        let mut catalog = Self::default();
        catalog.refresh(store)?;
        Ok(catalog)
    }

    /// Read the lines appended since the last read (everything again if the file was rewritten).
    pub fn refresh(&mut self, store: &Store) -> Result<()> {
        let path = path(store);
        let mut file = match File::open(&path) {
            Ok(file) => file,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                *self = Self::default();
                return Ok(());
            }
            Err(e) => return Err(e).with_path("open", &path),
        };
        let meta = file.metadata().with_path("stat", &path)?;
        let identity = (meta.dev(), meta.ino());
        if self.file != Some(identity) || meta.len() < self.read_to {
            *self = Self {
                file: Some(identity),
                ..Self::default()
            };
        }
        file.seek(SeekFrom::Start(self.read_to))
            .with_path("read", &path)?;
        let mut reader = BufReader::new(file);
        let mut line = Vec::new();
        loop {
            line.clear();
            let n = reader
                .read_until(b'\n', &mut line)
                .with_path("read", &path)?;
            if n == 0 || !line.ends_with(b"\n") {
                return Ok(());
            }
            self.read_to += n as u64;
            self.lines += 1;
            self.line(&line[..n - 1]);
        }
    }

    fn line(&mut self, line: &[u8]) {
        if line.iter().all(u8::is_ascii_whitespace) {
            return;
        }
        match parse(line) {
            Ok(batch) => {
                self.by_session
                    .entry(batch.session.clone())
                    .or_default()
                    .push(self.batches.len());
                self.batches.push(batch);
            }
            Err(why) => self
                .problems
                .push(format!("seeds/catalog.jsonl:{}: {why}", self.lines)),
        }
    }

    /// Every batch, in the order they were appended.
    pub fn batches(&self) -> &[Batch] {
        &self.batches
    }

    /// The batches of `session`, in order.
    pub fn of<'a>(&'a self, session: &str) -> impl Iterator<Item = &'a Batch> + 'a {
        let at = self.by_session.get(session).map_or(&[][..], Vec::as_slice);
        at.iter().map(|&i| &self.batches[i])
    }

    /// The sessions with batches, in the order of their first.
    pub fn sessions(&self) -> Vec<&str> {
        let mut sessions: Vec<(&str, usize)> = self
            .by_session
            .iter()
            .map(|(session, at)| (session.as_str(), at[0]))
            .collect();
        sessions.sort_unstable_by_key(|&(_, first)| first);
        sessions.into_iter().map(|(session, _)| session).collect()
    }

    /// Append `batches`, whose objects are durable, in one write. The caller holds [`lock`].
    pub fn append(&mut self, store: &Store, _lock: &StoreLock, batches: &[Batch]) -> Result<()> {
        if batches.is_empty() {
            return Ok(());
        }
        let path = path(store);
        create_private_dir(&store.seeds_dir())?;
        let created = !path.exists();
        let mut file = OpenOptions::new()
            .create(true)
            .read(true)
            .append(true)
            .mode(0o600)
            .open(&path)
            .with_path("open", &path)?;
        // A line a crash cut short (no writer holds the lock but us) listed nothing: it goes, rather
        // than become a bad line that would stop every later gc.
        drop_torn_tail(&mut file).with_path("repair", &path)?;
        let mut text = Vec::new();
        for batch in batches {
            serde_json::to_writer(&mut text, batch).expect("a batch serializes");
            text.push(b'\n');
        }
        file.write_all(&text)
            .and_then(|()| file.sync_all())
            .with_path("append to", &path)?;
        if created {
            sync_parent(&path)?;
        }
        self.refresh(store)
    }

    /// Rewrite the catalog without the batches of `session`; how many went. The caller holds
    /// [`lock`].
    pub fn forget(&mut self, store: &Store, _lock: &StoreLock, session: &str) -> Result<usize> {
        self.refresh(store)?;
        let gone = self.of(session).count();
        if gone > 0 {
            self.rewrite(store, &mut |_, batch| {
                batch.is_none_or(|b| b.session != session)
            })?;
        }
        Ok(gone)
    }

    /// Make `batch` (whose object is durable) its session's first, dropping any later listing of
    /// it. The caller holds [`lock`].
    pub fn put_first(&mut self, store: &Store, lock: &StoreLock, batch: &Batch) -> Result<()> {
        let mut line = serde_json::to_vec(batch).expect("a batch serializes");
        line.push(b'\n');
        let mut placed = false;
        self.rewrite(store, &mut |out, listed| {
            let Some(listed) = listed.filter(|b| b.session == batch.session) else {
                return true;
            };
            if !placed {
                out.extend_from_slice(&line);
                placed = true;
            }
            listed.object != batch.object
        })?;
        if !placed {
            self.append(store, lock, std::slice::from_ref(batch))?;
        }
        Ok(())
    }

    /// Rewrite the catalog (atomically), keeping each line `keep` says to (given the output so
    /// far, to insert before the line, and the line's batch if it is one).
    fn rewrite(
        &mut self,
        store: &Store,
        keep: &mut dyn FnMut(&mut Vec<u8>, Option<&Batch>) -> bool,
    ) -> Result<()> {
        let path = path(store);
        let text = match std::fs::read(&path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
            Err(e) => return Err(e).with_path("read", &path),
        };
        let mut out = Vec::with_capacity(text.len());
        for line in text.split_inclusive(|&b| b == b'\n') {
            let Some(body) = line.strip_suffix(b"\n") else {
                continue; // a torn last line: dropped, as `append` drops it
            };
            if keep(&mut out, parse(body).ok().as_ref()) {
                out.extend_from_slice(body);
                out.push(b'\n');
            }
        }
        create_private_dir(&store.seeds_dir())?;
        let mut pending = Pending::new_in(&store.tmp_dir(), ".catalog-")?;
        pending.file().write_all(&out).with_path("write", &path)?;
        pending.commit(&path, true)?;
        self.refresh(store)
    }
}

/// One catalog line (without its `\n`) as a batch, or why it is none.
pub fn parse(line: &[u8]) -> std::result::Result<Batch, String> {
    let batch = serde_json::from_slice::<Batch>(line).map_err(|e| e.to_string())?;
    check_session_id(&batch.session).map_err(|e| e.to_string())?;
    Ok(batch)
}

/// Cut `file` back to the end of its last whole line.
fn drop_torn_tail(file: &mut File) -> std::io::Result<()> {
    let len = file.metadata()?.len();
    let mut end = len;
    let mut chunk = [0u8; 4096];
    while end > 0 {
        let start = end.saturating_sub(chunk.len() as u64);
        let piece = &mut chunk[..(end - start) as usize];
        file.seek(SeekFrom::Start(start))?;
        file.read_exact(piece)?;
        if let Some(at) = memchr::memrchr(b'\n', piece) {
            end = start + at as u64 + 1;
            break;
        }
        end = start;
    }
    if end < len {
        file.set_len(end)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A new store in a temp dir (kept while the store is used).
    fn store() -> (tempfile::TempDir, Store) {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::init(dir.path()).unwrap();
        (dir, store)
    }

    /// Leave the start of `session`'s line at the catalog's end, as a crash mid-append would.
    fn tear(store: &Store, session: &str) {
        let mut file = OpenOptions::new().append(true).open(path(store)).unwrap();
        write!(file, r#"{{"session":"{session}","obj"#).unwrap();
    }

    fn batch(session: &str, n: u8) -> Batch {
        Batch {
            session: session.into(),
            object: Digest::of(&[n]),
            bytes: u64::from(n),
        }
    }

    #[test]
    fn appends_read_back_in_order_and_refresh_reads_only_what_is_new() {
        let (_dir, store) = store();
        let mut writer = Catalog::load(&store).unwrap();
        let mut reader = Catalog::load(&store).unwrap();
        assert!(reader.batches().is_empty());
        let held = lock(&store).unwrap();
        writer
            .append(&store, &held, &[batch("b", 1), batch("a", 2)])
            .unwrap();
        writer.append(&store, &held, &[batch("b", 3)]).unwrap();
        reader.refresh(&store).unwrap();
        assert_eq!(reader.sessions(), ["b", "a"]);
        let of_b: Vec<_> = reader.of("b").cloned().collect();
        assert_eq!(of_b, [batch("b", 1), batch("b", 3)]);
        assert_eq!(reader.batches().len(), 3);
    }

    #[test]
    fn a_torn_last_line_is_left_unread_then_dropped_by_the_next_append() {
        let (_dir, store) = store();
        let held = lock(&store).unwrap();
        let mut catalog = Catalog::load(&store).unwrap();
        catalog.append(&store, &held, &[batch("a", 1)]).unwrap();
        tear(&store, "b");
        let mut reader = Catalog::load(&store).unwrap();
        assert_eq!(reader.batches().len(), 1);
        assert!(reader.problems.is_empty());
        catalog.append(&store, &held, &[batch("c", 2)]).unwrap();
        reader.refresh(&store).unwrap();
        assert_eq!(reader.sessions(), ["a", "c"]);
        assert!(reader.problems.is_empty(), "{:?}", reader.problems);
        let text = std::fs::read_to_string(path(&store)).unwrap();
        assert_eq!(text.lines().count(), 2, "{text}");
        assert!(!text.contains(r#""obj""#) && !text.contains(r#"{"session":"b""#));
    }

    #[test]
    fn a_rewrite_drops_a_torn_last_line_too() {
        let (_dir, store) = store();
        let held = lock(&store).unwrap();
        let mut catalog = Catalog::load(&store).unwrap();
        catalog
            .append(&store, &held, &[batch("a", 1), batch("b", 2)])
            .unwrap();
        tear(&store, "c");
        assert_eq!(catalog.forget(&store, &held, "a").unwrap(), 1);
        let text = std::fs::read_to_string(path(&store)).unwrap();
        assert_eq!(text, serde_json::to_string(&batch("b", 2)).unwrap() + "\n");
        assert!(Catalog::load(&store).unwrap().problems.is_empty());
    }

    #[test]
    fn forget_rewrites_without_the_session_and_readers_start_over() {
        let (_dir, store) = store();
        let held = lock(&store).unwrap();
        let mut catalog = Catalog::load(&store).unwrap();
        catalog
            .append(
                &store,
                &held,
                &[batch("a", 1), batch("b", 2), batch("a", 3)],
            )
            .unwrap();
        let mut reader = Catalog::load(&store).unwrap();
        assert_eq!(catalog.forget(&store, &held, "a").unwrap(), 2);
        assert_eq!(catalog.forget(&store, &held, "a").unwrap(), 0);
        reader.refresh(&store).unwrap();
        assert_eq!(reader.sessions(), ["b"]);
        assert_eq!(reader.batches(), [batch("b", 2)]);
    }

    #[test]
    fn lines_that_are_no_batch_are_problems_not_batches() {
        let (_dir, store) = store();
        create_private_dir(&store.seeds_dir()).unwrap();
        let good = serde_json::to_string(&batch("a", 1)).unwrap();
        let unsafe_id = good.replace("\"a\"", "\"../x\"");
        std::fs::write(
            path(&store),
            format!("{good}\nnot json\n{unsafe_id}\n{{\"session\":\"a\"}}\n"),
        )
        .unwrap();
        let catalog = Catalog::load(&store).unwrap();
        assert_eq!(catalog.batches(), [batch("a", 1)]);
        assert_eq!(catalog.problems.len(), 3, "{:?}", catalog.problems);
        assert!(catalog.problems[0].starts_with("seeds/catalog.jsonl:2: "));
    }

    #[test]
    fn put_first_goes_before_the_sessions_first_batch_once() {
        let (_dir, store) = store();
        let held = lock(&store).unwrap();
        let mut catalog = Catalog::load(&store).unwrap();
        catalog
            .append(
                &store,
                &held,
                &[batch("a", 1), batch("b", 2), batch("b", 9), batch("a", 3)],
            )
            .unwrap();
        catalog.put_first(&store, &held, &batch("b", 9)).unwrap();
        catalog.put_first(&store, &held, &batch("b", 9)).unwrap();
        let order: Vec<_> = Catalog::load(&store).unwrap().batches().to_vec();
        assert_eq!(
            order,
            [batch("a", 1), batch("b", 9), batch("b", 2), batch("a", 3)]
        );
        // A session without batches gets it appended.
        catalog.put_first(&store, &held, &batch("c", 4)).unwrap();
        assert_eq!(catalog.of("c").count(), 1);
        assert_eq!(catalog.batches().len(), 5);
    }
}
