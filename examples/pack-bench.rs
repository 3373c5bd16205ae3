//! Measure ctxfold packs against the loose objects of a real store, to choose the pack defaults.
//!
//! `pack-bench STORE [--threads N] [--blocks 256K,1M,4M] [--levels 3,19] [--random N]` takes every
//! object of STORE in fold order (manifests by name, parts in order, each object where first met)
//! and, for every block target × zstd level × without/with a dictionary trained on the store's
//! small objects (as `ctxfold train-dict` trains one), writes one pack on N threads (default 2) and
//! reports: pack + index bytes against the loose files' bytes and disk blocks; write throughput
//! (MB/s of raw bytes); random reads (N objects in random order, no block cache: each read
//! decodes its block) and sequential reads (pack order through a 64 MiB block cache, as a restore
//! reads), each in wall time and per CPU second (on a shared machine the second is the steadier).
//! Run it with `cargo run --release --example pack-bench -- STORE`.

use std::collections::HashSet;
use std::fs;
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use ctxfold::digest::Digest;
use ctxfold::odb::Check;
use ctxfold::odb::dictionary::{Dictionaries, DictionarySet, NoDictionaries};
use ctxfold::odb::pack::{BlockCache, Pack, PackOptions, PackWriter};
use ctxfold::store::Store;

struct Args {
    store: String,
    threads: usize,
    blocks: Vec<usize>,
    levels: Vec<i32>,
    random: usize,
}

fn parse_args() -> Args {
    let mut args = Args {
        store: String::new(),
        threads: 2,
        blocks: vec![256 << 10, 1 << 20, 4 << 20],
        levels: vec![3, 19],
        random: 2000,
    };
    let mut it = std::env::args().skip(1);
    while let Some(arg) = it.next() {
        let mut value = || it.next().expect("a value after the flag");
        match arg.as_str() {
            "--threads" => args.threads = value().parse().expect("a number"),
            "--blocks" => args.blocks = value().split(',').map(size).collect(),
            "--levels" => {
                args.levels = value()
                    .split(',')
                    .map(|l| l.parse().expect("a level"))
                    .collect()
            }
            "--random" => args.random = value().parse().expect("a number"),
            store => args.store = store.to_string(),
        }
    }
    assert!(
        !args.store.is_empty(),
        "usage: pack-bench STORE [--threads N] [--blocks 256K,1M] [--levels 3,19] [--random N]"
    );
    args
}

fn size(text: &str) -> usize {
    let (digits, unit) = text.split_at(
        text.find(|c: char| !c.is_ascii_digit())
            .unwrap_or(text.len()),
    );
    let n: usize = digits.parse().expect("a size");
    n * match unit {
        "" => 1,
        "K" => 1 << 10,
        "M" => 1 << 20,
        other => panic!("unknown unit {other}"),
    }
}

/// Every object of the store in fold order, with its raw bytes.
fn objects_in_fold_order(store: &Store) -> Vec<(Digest, Vec<u8>)> {
    let mut manifests: Vec<_> = fs::read_dir(store.manifests_dir())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    manifests.sort();
    let mut seen = HashSet::new();
    let mut order = Vec::new();
    for path in manifests {
        let manifest: serde_json::Value =
            serde_json::from_slice(&fs::read(&path).unwrap()).unwrap();
        for part in manifest["parts"].as_array().unwrap() {
            let digest = Digest::parse(part["object"]["sha256"].as_str().unwrap()).unwrap();
            if seen.insert(digest) {
                order.push(digest);
            }
        }
    }
    for entry in store.odb().list().unwrap() {
        if let ctxfold::odb::Listed::Object { digest, .. } = entry
            && seen.insert(digest)
        {
            order.push(digest);
        }
    }
    order
        .into_iter()
        .map(|d| (d, store.odb().read_to_vec(&d, None).unwrap()))
        .collect()
}

/// Bytes and disk blocks (st_blocks × 512) of files.
fn footprint<'a>(paths: impl IntoIterator<Item = &'a Path>) -> (u64, u64) {
    paths.into_iter().fold((0, 0), |(bytes, disk), path| {
        let meta = fs::metadata(path).unwrap();
        (bytes + meta.len(), disk + meta.blocks() * 512)
    })
}

/// What the objects take as loose files, each compressed alone at level 3: bytes, and the 4 KiB
/// blocks they fill (what ext4 allocates for a file that small).
fn loose_footprint(objects: &[(Digest, Vec<u8>)]) -> (u64, u64) {
    let mut encoder = ctxfold::odb::Encoder::new(3).unwrap();
    objects.iter().fold((0, 0), |(bytes, disk), (_, raw)| {
        let len = encoder.compressed_len(raw).unwrap();
        (bytes + len, disk + len.div_ceil(4096) * 4096)
    })
}

/// A dictionary trained as `ctxfold train-dict` trains one: small objects, up to 32 MiB of them.
fn train(objects: &[(Digest, Vec<u8>)]) -> Vec<u8> {
    let mut data = Vec::new();
    let mut sizes = Vec::new();
    for (_, raw) in objects {
        if raw.len() <= 64 << 10 && data.len() < 32 << 20 {
            data.extend_from_slice(raw);
            sizes.push(raw.len());
        }
    }
    zstd::dict::from_continuous(&data, &sizes, 112_640).unwrap()
}

/// CPU seconds this process has used (user + system), from /proc: on a shared machine, wall time
/// says more about the neighbours than about the code.
fn cpu_seconds() -> f64 {
    let stat = fs::read_to_string("/proc/self/stat").unwrap();
    let fields: Vec<&str> = stat[stat.rfind(')').unwrap() + 2..]
        .split_whitespace()
        .collect();
    // utime and stime, fields 14 and 15, in clock ticks (100 per second on Linux).
    (fields[11].parse::<f64>().unwrap() + fields[12].parse::<f64>().unwrap()) / 100.0
}

fn mb_per_s(bytes: u64, seconds: f64) -> f64 {
    bytes as f64 / 1e6 / seconds
}

fn main() {
    let args = parse_args();
    let store = Store::open(&args.store).unwrap();
    let objects = objects_in_fold_order(&store);
    let raw_total: u64 = objects.iter().map(|(_, raw)| raw.len() as u64).sum();
    let (loose_bytes, loose_disk) = loose_footprint(&objects);
    let small = objects.iter().filter(|(_, raw)| raw.len() < 4096).count();
    println!(
        "store {}: {} objects ({} under 4 KiB), {:.2} MB raw; loose: {:.2} MB in files, {:.2} MB of disk blocks",
        args.store,
        objects.len(),
        small,
        raw_total as f64 / 1e6,
        loose_bytes as f64 / 1e6,
        loose_disk as f64 / 1e6
    );
    let dictionary = train(&objects);
    let mut with_dictionary = DictionarySet::default();
    with_dictionary.add(&dictionary).unwrap();
    println!(
        "dictionary: {} bytes, trained on the store's objects of at most 64 KiB\n",
        dictionary.len()
    );
    println!(
        "| block | level | dict | pack+idx MB | disk MB | vs loose files | vs loose disk | write MB/s | write MB/cpu-s | random reads/s | random reads/cpu-s | sequential MB/s | sequential MB/cpu-s |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|---|---|---|");
    let mut rng = 0x2545_f491_4f6c_dd1du64;
    let mut random_order: Vec<usize> = (0..objects.len()).collect();
    for i in (1..random_order.len()).rev() {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        random_order.swap(i, (rng % (i as u64 + 1)) as usize);
    }
    random_order.truncate(args.random);
    for &block_bytes in &args.blocks {
        for &level in &args.levels {
            for dict in [false, true] {
                let work = tempfile::tempdir_in(store.tmp_dir()).unwrap();
                let options = PackOptions {
                    block_bytes,
                    level,
                    dictionary: dict.then(|| Arc::from(dictionary.as_slice())),
                    threads: args.threads,
                };
                let (started, cpu) = (Instant::now(), cpu_seconds());
                let mut writer = PackWriter::new(work.path(), options).unwrap();
                for (digest, raw) in &objects {
                    writer.add(digest, raw).unwrap();
                }
                let info = writer.finish(&work.path().join("packs")).unwrap().unwrap();
                let write_s = started.elapsed().as_secs_f64();
                let write_cpu = cpu_seconds() - cpu;
                let dir = work.path().join("packs");
                let files = [
                    ctxfold::odb::pack::pack_path(&dir, &info.name),
                    ctxfold::odb::pack::index_path(&dir, &info.name),
                ];
                let (bytes, disk) = footprint(files.iter().map(|p| p.as_path()));
                let dictionaries: &dyn Dictionaries = match dict {
                    true => &with_dictionary,
                    false => &NoDictionaries,
                };
                let pack = Pack::open(&dir, &info.name).unwrap();
                let (started, cpu) = (Instant::now(), cpu_seconds());
                for &i in &random_order {
                    let at = pack.find(&objects[i].0).unwrap();
                    pack.read(&at, None, &mut std::io::sink(), dictionaries, Check::Object)
                        .unwrap();
                }
                let random_s = started.elapsed().as_secs_f64();
                let random_cpu = cpu_seconds() - cpu;
                let pack = pack.with_cache(Arc::new(BlockCache::default()));
                let (started, cpu) = (Instant::now(), cpu_seconds());
                let mut sequential_bytes = 0;
                for at in pack.objects() {
                    sequential_bytes += pack
                        .read(
                            &at.unwrap(),
                            None,
                            &mut std::io::sink(),
                            dictionaries,
                            Check::Object,
                        )
                        .unwrap();
                }
                let sequential_s = started.elapsed().as_secs_f64();
                let sequential_cpu = cpu_seconds() - cpu;
                println!(
                    "| {} KiB | {level} | {} | {:.2} | {:.2} | {:.2}× | {:.2}× | {:.0} | {:.0} | {:.0} | {:.0} | {:.0} | {:.0} |",
                    block_bytes >> 10,
                    if dict { "yes" } else { "no" },
                    bytes as f64 / 1e6,
                    disk as f64 / 1e6,
                    bytes as f64 / loose_bytes as f64,
                    disk as f64 / loose_disk as f64,
                    mb_per_s(raw_total, write_s),
                    mb_per_s(raw_total, write_cpu),
                    random_order.len() as f64 / random_s,
                    random_order.len() as f64 / random_cpu,
                    mb_per_s(sequential_bytes, sequential_s),
                    mb_per_s(sequential_bytes, sequential_cpu),
                );
            }
        }
    }
}
