//! Round trips through packs and what readers and `verify` say about damaged ones.

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use sha2::{Digest as _, Sha256};

use super::*;
use crate::odb::Check;
use crate::odb::dictionary::{DictionarySet, NoDictionaries};

/// splitmix64, to make varied but repeatable bytes.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
}

/// JSON-ish text of `len` bytes: compressible, as session lines are, and different per `seed`.
fn text(seed: u64, len: usize) -> Vec<u8> {
    let words = [
        "tool", "call", "output", "error", "session", "cargo", "test", "fn", "{\"", "\":",
    ];
    let mut rng = Rng(seed);
    let mut out = Vec::with_capacity(len + 16);
    while out.len() < len {
        let r = rng.next();
        out.extend_from_slice(words[(r % 10) as usize].as_bytes());
        out.extend_from_slice(format!("{} ", r % 1000).as_bytes());
    }
    out.truncate(len);
    out
}

/// Objects of every size that matters against a 64 KiB block target.
fn mixed_objects() -> Vec<Vec<u8>> {
    let mut objects = vec![Vec::new(), b"x".to_vec()];
    for i in 0..300u64 {
        objects.push(text(i, 50 + (i as usize * 7919) % 6000));
    }
    objects.push(text(1000, 64 << 10));
    objects.push(text(1001, (64 << 10) + 1));
    objects.push(text(1002, 200 << 10));
    objects.push(text(1003, 10));
    objects
}

const BLOCK: usize = 64 << 10;

fn options(block_bytes: usize) -> PackOptions {
    PackOptions {
        block_bytes,
        threads: 3,
        ..PackOptions::default()
    }
}

struct Fixture {
    _dir: tempfile::TempDir,
    tmp: PathBuf,
    packs: PathBuf,
}

fn fixture() -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let tmp = dir.path().join("tmp");
    fs::create_dir(&tmp).unwrap();
    let packs = dir.path().join(DIR);
    Fixture {
        _dir: dir,
        tmp,
        packs,
    }
}

fn write(f: &Fixture, objects: &[Vec<u8>], options: PackOptions) -> PackInfo {
    let mut writer = PackWriter::new(&f.tmp, options).unwrap();
    for object in objects {
        writer.add(&Digest::of(object), object).unwrap();
    }
    writer.finish(&f.packs).unwrap().unwrap()
}

fn read(
    pack: &Pack,
    digest: &Digest,
    dictionaries: &dyn crate::odb::dictionary::Dictionaries,
) -> Result<Vec<u8>> {
    let at = pack.find(digest).expect("the pack holds it");
    let mut out = Vec::new();
    pack.read(
        &at,
        Some(at.raw_bytes),
        &mut out,
        dictionaries,
        Check::Object,
    )?;
    Ok(out)
}

/// Rewrite an index's bytes and its checksum, as a buggy writer would.
fn rewrite_index(path: &Path, edit: impl FnOnce(&mut Vec<u8>)) {
    let mut bytes = fs::read(path).unwrap();
    edit(&mut bytes);
    let body = bytes.len() - 32;
    let checksum = Sha256::digest(&bytes[..body]);
    bytes[body..].copy_from_slice(&checksum);
    fs::write(path, bytes).unwrap();
}

#[test]
fn objects_of_every_size_round_trip_in_pack_order() {
    let f = fixture();
    let objects = mixed_objects();
    let info = write(&f, &objects, options(BLOCK));
    assert_eq!(info.objects as usize, objects.len());
    assert_eq!(
        info.raw_bytes,
        objects.iter().map(|o| o.len() as u64).sum::<u64>()
    );
    assert_eq!(list(&f.packs).unwrap(), vec![info.name]);
    let pack_bytes = fs::read(pack_path(&f.packs, &info.name)).unwrap();
    assert_eq!(
        Digest::of(&pack_bytes),
        info.name,
        "a pack is named by its sha256"
    );
    assert_eq!(pack_bytes.len() as u64, info.pack_bytes);
    assert!(
        info.pack_bytes < info.raw_bytes / 3,
        "blocks compress: {info:?}"
    );
    assert_eq!(
        fs::read_dir(&f.tmp).unwrap().count(),
        0,
        "no temp files left"
    );

    let pack = Pack::open(&f.packs, &info.name)
        .unwrap()
        .with_cache(Arc::new(BlockCache::default()));
    for object in &objects {
        assert_eq!(
            &read(&pack, &Digest::of(object), &NoDictionaries).unwrap(),
            object
        );
    }
    let in_order: Vec<Digest> = pack.objects().map(|o| o.unwrap().digest).collect();
    let added: Vec<Digest> = objects.iter().map(|o| Digest::of(o)).collect();
    assert_eq!(in_order, added);
    let blocks: Vec<Block> = pack.blocks().map(|b| b.unwrap()).collect();
    assert_eq!(blocks.len() as u32, info.blocks);
    for block in &blocks[..blocks.len() - 1] {
        assert!(
            block.raw_bytes <= BLOCK as u64 || block.objects.len() == 1,
            "{block:?}"
        );
    }
    let big = pack.find(&Digest::of(&objects[objects.len() - 2])).unwrap();
    assert_eq!(
        blocks[big.block as usize].objects.len(),
        1,
        "a large object has its own block"
    );
    assert_eq!(verify(&pack, &NoDictionaries), Vec::new());

    // Frames carry their content size and a checksum.
    let first = &blocks[0];
    let frame = &pack_bytes[first.pack_offset as usize..][..first.stored_bytes as usize];
    assert_eq!(
        zstd::zstd_safe::get_frame_content_size(frame).ok(),
        Some(Some(first.raw_bytes))
    );
    assert_eq!(frame[4] & 0x04, 0x04, "the checksum flag is set");
}

#[test]
fn a_forty_mib_object_streams_from_its_own_block() {
    let f = fixture();
    let large = text(7, 40 << 20);
    let objects = vec![text(1, 100), large.clone(), text(2, 100)];
    let info = write(&f, &objects, options(1 << 20));
    assert_eq!(info.blocks, 3);
    let pack = Pack::open(&f.packs, &info.name).unwrap();
    assert_eq!(
        read(&pack, &Digest::of(&large), &NoDictionaries).unwrap(),
        large
    );
    // An expected size other than the object's is refused before anything is decoded.
    let at = pack.find(&Digest::of(&large)).unwrap();
    let err = pack
        .read(
            &at,
            Some(100),
            &mut Vec::new(),
            &NoDictionaries,
            Check::Whole,
        )
        .unwrap_err();
    assert!(err.to_string().contains("100 were expected"), "{err}");
    assert_eq!(verify(&pack, &NoDictionaries), Vec::new());
}

#[test]
fn an_object_too_large_for_a_block_finds_its_repeats_megabytes_apart() {
    // Random bytes, twice: only a match 3 MiB back, past zstd's window at level 3, makes it small.
    let mut rng = Rng(11);
    let half: Vec<u8> = (0..3 << 20).map(|_| rng.next() as u8).collect();
    let large = [&half[..], &half[..]].concat();
    let small = text(3, 100);
    let f = fixture();
    let mut writer = PackWriter::new(&f.tmp, options(1 << 20)).unwrap();
    assert!(writer.add(&Digest::of(&small), &small).unwrap());
    // Handed over whole; a second time, it is there already.
    assert!(
        writer
            .add_owned(&Digest::of(&large), large.clone())
            .unwrap()
    );
    assert!(
        !writer
            .add_owned(&Digest::of(&large), large.clone())
            .unwrap()
    );
    assert!(writer.add_owned(&Digest::of(&half), half.clone()).unwrap());
    let info = writer.finish(&f.packs).unwrap().unwrap();
    assert_eq!((info.objects, info.blocks), (3, 3));
    // `half` once in each of the two blocks that hold it, not three times.
    assert!(
        info.pack_bytes < 2 * half.len() as u64 + (64 << 10),
        "{} bytes",
        info.pack_bytes
    );
    let pack = Pack::open(&f.packs, &info.name).unwrap();
    for object in [&small, &large, &half] {
        assert_eq!(
            &read(&pack, &Digest::of(object), &NoDictionaries).unwrap(),
            object
        );
    }
    assert_eq!(verify(&pack, &NoDictionaries), Vec::new());
}

#[test]
fn frames_name_their_dictionary_and_need_it() {
    let f = fixture();
    let samples: Vec<Vec<u8>> = (0..400).map(|i| text(i, 300)).collect();
    let sizes: Vec<usize> = samples.iter().map(Vec::len).collect();
    let dictionary = zstd::dict::from_continuous(&samples.concat(), &sizes, 8192).unwrap();
    let objects = mixed_objects();
    let info = write(
        &f,
        &objects,
        PackOptions {
            dictionary: Some(dictionary.clone().into()),
            ..options(BLOCK)
        },
    );
    let pack = Pack::open(&f.packs, &info.name).unwrap();
    let mut dictionaries = DictionarySet::default();
    let id = dictionaries.add(&dictionary).unwrap();
    let first = pack.block(0).unwrap();
    let mut head = vec![0u8; 18];
    std::os::unix::fs::FileExt::read_exact_at(
        &fs::File::open(pack.path()).unwrap(),
        &mut head,
        first.pack_offset,
    )
    .unwrap();
    assert_eq!(zstd::zstd_safe::get_dict_id_from_frame(&head), Some(id));
    for object in &objects {
        assert_eq!(
            &read(&pack, &Digest::of(object), &dictionaries).unwrap(),
            object
        );
    }
    assert_eq!(verify(&pack, &dictionaries), Vec::new());
    let err = read(&pack, &Digest::of(&objects[5]), &NoDictionaries).unwrap_err();
    assert!(
        err.to_string()
            .contains(&format!("no zstd dictionary with id {id}")),
        "{err}"
    );
}

#[test]
fn an_object_is_added_once() {
    let f = fixture();
    let mut writer = PackWriter::new(&f.tmp, options(BLOCK)).unwrap();
    let object = text(3, 1000);
    let digest = Digest::of(&object);
    assert!(!writer.contains(&digest));
    assert!(writer.add(&digest, &object).unwrap());
    assert!(writer.contains(&digest));
    assert!(!writer.add(&digest, &object).unwrap());
    assert_eq!(writer.object_count(), 1);
    let info = writer.finish(&f.packs).unwrap().unwrap();
    assert_eq!((info.objects, info.raw_bytes), (1, 1000));
}

#[test]
fn absent_digests_are_not_found_before_between_or_after() {
    let f = fixture();
    let objects = mixed_objects();
    let info = write(&f, &objects, options(BLOCK));
    let pack = Pack::open(&f.packs, &info.name).unwrap();
    let mut sorted: Vec<Digest> = objects.iter().map(|o| Digest::of(o)).collect();
    sorted.sort();
    let mut between = *sorted[10].as_bytes();
    between[31] ^= 1;
    let absent = [
        Digest::from_bytes([0; 32]),
        Digest::from_bytes([0xff; 32]),
        Digest::from_bytes(between),
        Digest::of(b"not in the pack"),
    ];
    for digest in absent {
        assert!(!sorted.contains(&digest));
        assert_eq!(pack.find(&digest), None, "{digest}");
        assert!(!pack.contains(&digest));
    }
    for digest in [sorted[0], sorted[sorted.len() - 1]] {
        assert!(pack.contains(&digest));
    }
}

#[test]
fn a_flipped_byte_names_its_block_and_objects() {
    let f = fixture();
    let objects = mixed_objects();
    let info = write(&f, &objects, options(BLOCK));
    let pack = Pack::open(&f.packs, &info.name).unwrap();
    let damaged = pack.block(1).unwrap();
    let path = pack.path().to_path_buf();
    let mut bytes = fs::read(&path).unwrap();
    bytes[(damaged.pack_offset + damaged.stored_bytes / 2) as usize] ^= 0x55;
    fs::write(&path, bytes).unwrap();

    let pack = Pack::open(&f.packs, &info.name).unwrap();
    let victim = pack.object_in_pack_order(damaged.objects.start).unwrap();
    let err = read(&pack, &victim.digest, &NoDictionaries).unwrap_err();
    assert!(
        err.to_string()
            .contains(&format!("{}: block 1: ", path.display())),
        "{err}"
    );
    let healthy = pack.object_in_pack_order(0).unwrap();
    assert_eq!(healthy.block, 0);
    read(&pack, &healthy.digest, &NoDictionaries).unwrap();

    let problems = verify(&pack, &NoDictionaries);
    let hit: Vec<&Problem> = problems.iter().filter(|p| p.block == Some(1)).collect();
    assert_eq!(hit.len(), 1, "{problems:?}");
    let expected: Vec<Digest> = damaged
        .objects
        .clone()
        .map(|nth| pack.object_in_pack_order(nth).unwrap().digest)
        .collect();
    assert_eq!(hit[0].objects, expected);
    let shown = hit[0].to_string();
    assert!(
        shown.starts_with(&format!("{}: block 1: zstd", path.display())),
        "{shown}"
    );
    assert!(
        shown.ends_with(&format!(
            "({} objects, first {})",
            expected.len(),
            expected[0]
        )),
        "{shown}"
    );
    assert!(
        problems
            .iter()
            .any(|p| p.block.is_none() && p.what.contains("not to its name"))
    );
}

#[test]
fn a_truncated_pack_or_index_does_not_open() {
    let f = fixture();
    let info = write(&f, &mixed_objects(), options(BLOCK));
    let pack = pack_path(&f.packs, &info.name);
    let bytes = fs::read(&pack).unwrap();
    fs::write(&pack, &bytes[..bytes.len() - 1]).unwrap();
    let err = Pack::open(&f.packs, &info.name).err().unwrap().to_string();
    assert!(err.starts_with(&format!("{}: ", pack.display())), "{err}");
    assert!(err.contains("its index records"), "{err}");
    fs::write(&pack, &bytes).unwrap();

    let index = index_path(&f.packs, &info.name);
    let bytes = fs::read(&index).unwrap();
    for len in [bytes.len() - 1, 100, 0] {
        fs::write(&index, &bytes[..len]).unwrap();
        let err = Pack::open(&f.packs, &info.name).err().unwrap().to_string();
        assert!(err.starts_with(&format!("{}: ", index.display())), "{err}");
    }
    let mut flipped = bytes.clone();
    flipped[2000] ^= 1;
    fs::write(&index, &flipped).unwrap();
    let err = Pack::open(&f.packs, &info.name).err().unwrap().to_string();
    assert!(err.ends_with("checksum mismatch"), "{err}");
}

#[test]
fn an_index_entry_outside_its_block_is_caught_on_read_and_verify() {
    let f = fixture();
    let objects = mixed_objects();
    let info = write(&f, &objects, options(BLOCK));
    let pack = Pack::open(&f.packs, &info.name).unwrap();
    let target = pack.object_in_pack_order(5).unwrap();
    let block = pack.block(target.block).unwrap();
    let position = {
        let mut sorted: Vec<Digest> = objects.iter().map(|o| Digest::of(o)).collect();
        sorted.sort();
        sorted.dedup();
        sorted.binary_search(&target.digest).unwrap()
    };
    drop(pack);
    rewrite_index(&index_path(&f.packs, &info.name), |bytes| {
        let at = format::INDEX_HEADER_LEN
            + format::FANOUT_LEN
            + position * format::OBJECT_RECORD_LEN
            + 44;
        bytes[at..at + 8].copy_from_slice(&block.raw_bytes.to_be_bytes());
    });
    let pack = Pack::open(&f.packs, &info.name).unwrap();
    let err = read(&pack, &target.digest, &NoDictionaries).unwrap_err();
    assert!(err.to_string().contains("the index places it at"), "{err}");
    let problems = verify(&pack, &NoDictionaries);
    assert!(
        problems
            .iter()
            .any(|p| p.block == Some(target.block) && p.objects.contains(&target.digest)),
        "{problems:?}"
    );
}

#[test]
fn an_index_from_another_pack_is_refused() {
    let f = fixture();
    let one = write(&f, &mixed_objects()[..100], options(BLOCK));
    let other = write(&f, &mixed_objects()[100..], options(BLOCK));
    fs::copy(
        index_path(&f.packs, &one.name),
        index_path(&f.packs, &other.name),
    )
    .unwrap();
    let err = Pack::open(&f.packs, &other.name).err().unwrap().to_string();
    assert!(
        err.contains(&format!("it indexes pack {}, not {}", one.name, other.name)),
        "{err}"
    );
}

#[test]
fn unfinished_or_empty_writers_leave_nothing() {
    let f = fixture();
    let mut writer = PackWriter::new(&f.tmp, options(1024)).unwrap();
    for object in &mixed_objects()[..50] {
        writer.add(&Digest::of(object), object).unwrap();
    }
    assert!(fs::read_dir(&f.tmp).unwrap().count() > 0);
    drop(writer);
    assert_eq!(fs::read_dir(&f.tmp).unwrap().count(), 0);

    let writer = PackWriter::new(&f.tmp, options(BLOCK)).unwrap();
    assert_eq!(writer.finish(&f.packs).unwrap(), None);
    assert_eq!(fs::read_dir(&f.tmp).unwrap().count(), 0);
    assert!(list(&f.packs).unwrap().is_empty());
}

#[test]
fn a_pack_without_its_index_is_not_listed() {
    let f = fixture();
    let info = write(&f, &mixed_objects(), options(BLOCK));
    fs::remove_file(index_path(&f.packs, &info.name)).unwrap();
    assert!(list(&f.packs).unwrap().is_empty());
    assert!(list(&f.packs.join("missing")).unwrap().is_empty());
}

#[test]
fn out_of_range_levels_are_refused_up_front() {
    let f = fixture();
    let bad = PackOptions {
        level: 99,
        ..PackOptions::default()
    };
    assert!(PackWriter::new(&f.tmp, bad).is_err());
}

#[test]
fn threads_share_a_pack_and_its_cache() {
    let f = fixture();
    let objects = mixed_objects();
    let info = write(&f, &objects, options(BLOCK));
    let cache = Arc::new(BlockCache::new(1 << 20));
    let pack = Pack::open(&f.packs, &info.name)
        .unwrap()
        .with_cache(cache.clone());
    std::thread::scope(|scope| {
        for t in 0..4 {
            let (pack, objects) = (&pack, &objects);
            scope.spawn(move || {
                for object in objects.iter().skip(t).step_by(2) {
                    assert_eq!(
                        &read(pack, &Digest::of(object), &NoDictionaries).unwrap(),
                        object
                    );
                }
            });
        }
    });
    assert!(cache.bytes() > 0 && cache.bytes() <= 1 << 20);
}

#[test]
fn an_unsorted_index_is_reported() {
    let f = fixture();
    let objects = mixed_objects();
    let info = write(&f, &objects, options(BLOCK));
    rewrite_index(&index_path(&f.packs, &info.name), |bytes| {
        let at = format::INDEX_HEADER_LEN + format::FANOUT_LEN;
        let len = format::OBJECT_RECORD_LEN;
        let (first, second) = bytes[at..at + 2 * len].split_at_mut(len);
        first.swap_with_slice(second);
    });
    let pack = Pack::open(&f.packs, &info.name).unwrap();
    let problems = verify(&pack, &NoDictionaries);
    assert!(
        problems
            .iter()
            .any(|p| p.what.ends_with(".idx: objects 0 and 1 are out of order")),
        "{problems:?}"
    );
    // Pack order now finds each of the two in the other's place: both are named, and the
    // objects after them are not blamed.
    let misplaced: Vec<&Problem> = problems
        .iter()
        .filter(|p| p.what.contains("pack-order object"))
        .collect();
    assert!((2..=4).contains(&misplaced.len()), "{misplaced:#?}");
}

#[test]
fn many_small_blocks_finishing_out_of_order_are_written_in_order() {
    let f = fixture();
    let objects = mixed_objects();
    let info = write(
        &f,
        &objects,
        PackOptions {
            block_bytes: 100,
            threads: 4,
            ..PackOptions::default()
        },
    );
    assert!(info.blocks > 250, "{info:?}");
    let pack = Pack::open(&f.packs, &info.name).unwrap();
    assert_eq!(verify(&pack, &NoDictionaries), Vec::new());
    for object in &objects {
        assert_eq!(
            &read(&pack, &Digest::of(object), &NoDictionaries).unwrap(),
            object
        );
    }
}

#[test]
fn the_buffer_of_an_object_handed_over_comes_back_once_compressed() {
    // Two of 20 MiB: more than the 32 MiB a writer holds in flight.
    let large = |n: u64| text(n, 20 << 20);
    let (first, second) = (large(1), large(2));
    let f = fixture();
    let mut writer = PackWriter::new(&f.tmp, options(1 << 20)).unwrap();
    assert_eq!(writer.take_spare().capacity(), 0, "nothing handed over yet");
    let capacity = first.capacity();
    writer.add_owned(&Digest::of(&first), first).unwrap();
    // The first is compressed before the second is taken, and its buffer kept back for the caller.
    writer
        .add_owned(&Digest::of(&second), second.clone())
        .unwrap();
    let spare = writer.take_spare();
    assert!(spare.is_empty());
    assert_eq!(spare.capacity(), capacity);
    assert_eq!(writer.take_spare().capacity(), 0, "given once");
    let info = writer.finish(&f.packs).unwrap().unwrap();
    let pack = Pack::open(&f.packs, &info.name).unwrap();
    assert_eq!(
        read(&pack, &Digest::of(&second), &NoDictionaries).unwrap(),
        second
    );
}

#[test]
fn a_read_checked_by_its_frame_refuses_a_block_whose_checksum_does_not_hold() {
    let f = fixture();
    // One object in a block decoded whole, one large enough to stream from a block of its own.
    let objects = vec![text(1, 100_000), text(2, 9 << 20)];
    let info = write(&f, &objects, options(1 << 20));
    assert_eq!(info.blocks, 2);
    let frame_read = |pack: &Pack, object: &[u8]| {
        let at = pack.find(&Digest::of(object)).unwrap();
        let mut out = Vec::new();
        let read = pack.read(&at, None, &mut out, &NoDictionaries, Check::Frame);
        read.map(|_| out)
    };
    let pack = Pack::open(&f.packs, &info.name).unwrap();
    for object in &objects {
        assert_eq!(&frame_read(&pack, object).unwrap(), object);
    }
    // The last bytes of each frame are its checksum: the bytes decode as they were, but do not
    // hold.
    let mut bytes = fs::read(pack.path()).unwrap();
    for n in 0..2 {
        let block = pack.block(n).unwrap();
        bytes[(block.pack_offset + block.stored_bytes - 1) as usize] ^= 0x55;
    }
    fs::write(pack.path(), bytes).unwrap();
    let pack = Pack::open(&f.packs, &info.name).unwrap();
    for (n, object) in objects.iter().enumerate() {
        let err = frame_read(&pack, object).unwrap_err();
        let shown = err.to_string();
        assert!(shown.contains(&format!("block {n}: zstd")), "{shown}");
        assert!(shown.contains("checksum"), "{shown}");
    }
}

#[test]
fn large_blocks_stream_after_a_damaged_one_and_within_one_another() {
    let f = fixture();
    // Each past what is decoded whole: streamed, with the thread's streaming context.
    let objects: Vec<Vec<u8>> = (1..=3).map(|n| text(n, 9 << 20)).collect();
    let info = write(&f, &objects, options(1 << 20));
    assert_eq!(info.blocks, 3);
    let pack = Pack::open(&f.packs, &info.name).unwrap();
    let damaged = pack.block(0).unwrap();
    let mut bytes = fs::read(pack.path()).unwrap();
    bytes[(damaged.pack_offset + damaged.stored_bytes / 2) as usize] ^= 0x55;
    fs::write(pack.path(), bytes).unwrap();
    let pack = Pack::open(&f.packs, &info.name).unwrap();
    assert!(read(&pack, &Digest::of(&objects[0]), &NoDictionaries).is_err());
    // The context the error left within a frame decodes the next block from its start.
    assert_eq!(
        read(&pack, &Digest::of(&objects[1]), &NoDictionaries).unwrap(),
        objects[1]
    );

    /// Reads another object of the pack as it is first written to.
    struct Nested<'p> {
        pack: &'p Pack,
        inner: Option<Vec<u8>>,
        inner_digest: Digest,
        out: Vec<u8>,
    }
    impl std::io::Write for Nested<'_> {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            if self.inner.is_none() {
                self.inner = Some(read(self.pack, &self.inner_digest, &NoDictionaries).unwrap());
            }
            self.out.extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut nested = Nested {
        pack: &pack,
        inner: None,
        inner_digest: Digest::of(&objects[1]),
        out: Vec::new(),
    };
    let at = pack.find(&Digest::of(&objects[2])).unwrap();
    pack.read(
        &at,
        Some(at.raw_bytes),
        &mut nested,
        &NoDictionaries,
        Check::Object,
    )
    .unwrap();
    assert_eq!(nested.out, objects[2]);
    assert_eq!(nested.inner.as_ref(), Some(&objects[1]));
}
