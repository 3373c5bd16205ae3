//! Generations written by the test writer from the format description, read back; and every row
//! of the description's mutation table that concerns a reader.

use std::fs;
use std::path::Path;

use serde_json::Value;

use super::reference_writer::{self as writer, Options, Version, Written};
use super::*;

/// splitmix64 bytes: `text` compresses (zstd blocks), `noise` does not (raw blocks).
fn bytes(seed: u64, len: usize, text: bool) -> Vec<u8> {
    let mut state = seed;
    let mut next = move || {
        state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    };
    let mut out = Vec::with_capacity(len + 8);
    while out.len() < len {
        match text {
            true => out.extend_from_slice(format!("word{} ", next() % 50).as_bytes()),
            false => out.extend_from_slice(&next().to_le_bytes()),
        }
    }
    out.truncate(len);
    out
}

fn objects() -> Vec<Vec<u8>> {
    let mut objects = vec![bytes(1, 40_808, true), b"x".to_vec()];
    for i in 0..8 {
        objects.push(bytes(10 + i, 300 + 2500 * i as usize, true));
        objects.push(bytes(20 + i, 9000, false));
    }
    objects
}

fn options(version: Version) -> Options {
    Options {
        version,
        block_bytes: 16 << 10,
        pack_bytes: 32 << 10,
        ..Options::default()
    }
}

fn build(options: &Options) -> (tempfile::TempDir, Written) {
    let dir = tempfile::tempdir().unwrap();
    let written = writer::write(dir.path(), &objects(), options);
    (dir, written)
}

fn open(store: &Path) -> Result<Generation> {
    Ok(Generation::open(store)?.expect("CURRENT exists"))
}

/// Every object reads back byte for byte, and verify finds nothing.
fn assert_reads_everything(generation: &Generation) {
    for object in objects() {
        let digest = Digest::of(&object);
        let mut out = Vec::new();
        let n = generation
            .read(&digest, Some(object.len() as u64), &mut out)
            .unwrap();
        assert_eq!((n, out), (object.len() as u64, object));
    }
    assert_eq!(generation.verify(), Vec::new());
}

#[test]
fn every_version_reads_back_byte_for_byte() {
    for version in [Version::V3, Version::V2, Version::V1] {
        for content_size in [true, false] {
            let options = Options {
                content_size,
                ..options(version)
            };
            let (dir, written) = build(&options);
            assert!(written.packs.len() >= 3, "{:?}", written.packs);
            let blocks = written.objects.iter().flat_map(|o| &o.2);
            assert!(blocks.clone().any(|b| b.raw) || version == Version::V1);
            assert!(blocks.clone().any(|b| !b.raw));
            assert!(
                written.objects.iter().any(|o| o.2.len() > 1),
                "a multi-block object"
            );
            let generation = open(dir.path()).unwrap();
            let format = match version {
                Version::V1 => Format::V1,
                Version::V2 => Format::V2,
                Version::V3 => Format::V3,
            };
            assert_eq!(generation.format(), format);
            assert_eq!(generation.name(), written.generation);
            assert_reads_everything(&generation);
            let listed: Vec<String> = generation
                .objects()
                .map(|d| d.unwrap().to_string())
                .collect();
            let expected: Vec<String> = written.objects.iter().map(|o| o.0.clone()).collect();
            assert_eq!(listed, expected);
        }
    }
}

#[test]
fn absent_objects_and_wrong_sizes_are_errors() {
    let (dir, written) = build(&options(Version::V3));
    let generation = open(dir.path()).unwrap();
    let absent = Digest::of(b"absent");
    assert_eq!(generation.find(&absent).unwrap(), None);
    let err = generation.read(&absent, None, &mut Vec::new()).unwrap_err();
    assert!(
        err.to_string()
            .ends_with(&format!("object {absent} is not packed")),
        "{err}"
    );
    let (sha, raw_bytes, _) = &written.objects[0];
    let digest = Digest::parse(sha).unwrap();
    assert_eq!(
        generation.find(&digest).unwrap().unwrap().raw_bytes,
        *raw_bytes
    );
    let err = generation
        .read(&digest, Some(raw_bytes + 1), &mut Vec::new())
        .unwrap_err();
    assert!(
        err.to_string()
            .contains(&format!("raw size {raw_bytes}, want {}", raw_bytes + 1)),
        "{err}"
    );
}

#[test]
fn a_store_without_current_has_no_generation() {
    let dir = tempfile::tempdir().unwrap();
    assert!(Generation::open(dir.path()).unwrap().is_none());
    fs::create_dir(dir.path().join(DIR)).unwrap();
    assert!(Generation::open(dir.path()).unwrap().is_none());
}

#[test]
fn reading_writes_nothing_into_the_generation() {
    let (dir, written) = build(&options(Version::V3));
    fs::remove_dir(written.dir.join("leases")).unwrap();
    let before = listing(dir.path());
    let generation = open(dir.path()).unwrap();
    assert_reads_everything(&generation);
    assert_eq!(listing(dir.path()), before);
}

fn listing(root: &Path) -> Vec<String> {
    let mut names = Vec::new();
    for entry in fs::read_dir(root).unwrap() {
        let path = entry.unwrap().path();
        names.push(path.display().to_string());
        if path.is_dir() {
            names.extend(listing(&path));
        }
    }
    names.sort();
    names
}

// The mutation table of codexfold-pack.md's appendix, row by row.

#[derive(Debug)]
enum Outcome {
    /// Opens, and every object reads back verified.
    Opens,
    /// Opening fails with an error containing this.
    OpenFails(&'static str),
    /// Opens, but verify reports a problem containing this.
    ReadFails(&'static str),
}
use Outcome::*;

type Mutation = fn(&Path, &Written);

fn edit_json(path: &Path, edit: impl FnOnce(&mut Value)) {
    let mut value: Value = serde_json::from_slice(&fs::read(path).unwrap()).unwrap();
    edit(&mut value);
    fs::write(path, format!("{value}\n")).unwrap();
}

fn edit_meta(w: &Written, edit: impl FnOnce(&mut Value)) {
    edit_json(&w.dir.join("index.meta.json"), edit);
}

fn edit_index(w: &Written, edit: impl FnOnce(&mut Value)) {
    edit_json(&w.dir.join("index.json"), edit);
}

fn edit_file(path: &Path, edit: impl FnOnce(&mut Vec<u8>)) {
    let mut bytes = fs::read(path).unwrap();
    edit(&mut bytes);
    fs::write(path, bytes).unwrap();
}

/// Upper-case every key of every object, and add an unknown one.
fn shout(value: &mut Value) {
    match value {
        Value::Object(map) => {
            let members: Vec<(String, Value)> = std::mem::take(map).into_iter().collect();
            for (key, mut value) in members {
                shout(&mut value);
                map.insert(key.to_uppercase(), value);
            }
            map.insert("unknown".into(), Value::from(1));
        }
        Value::Array(items) => items.iter_mut().for_each(shout),
        _ => {}
    }
}

/// The index of the 40,808-byte object (three blocks), and of its first block record.
fn multi_block(w: &Written) -> (usize, usize) {
    let object = w.objects.iter().position(|o| o.1 == 40_808).unwrap();
    (object, w.objects[..object].iter().map(|o| o.2.len()).sum())
}

/// The first block record stored with zstd.
fn first_zstd_block(w: &Written) -> usize {
    w.objects
        .iter()
        .flat_map(|o| &o.2)
        .position(|b| !b.raw)
        .unwrap()
}

fn block_record(w: &Written, n: usize, edit: impl FnOnce(&mut [u8])) {
    edit_file(&w.dir.join("blocks.idx"), |bytes| {
        edit(&mut bytes[n * 69..(n + 1) * 69])
    });
}

fn object_record(w: &Written, n: usize, edit: impl FnOnce(&mut [u8])) {
    edit_file(&w.dir.join("objects.idx"), |bytes| {
        edit(&mut bytes[n * 52..(n + 1) * 52])
    });
}

fn current(store: &Path, text: &str) {
    fs::write(store.join("packs/CURRENT"), text).unwrap();
}

fn rename_generation(store: &Path, w: &Written, to: &str) {
    fs::rename(&w.dir, store.join("packs").join(to)).unwrap();
    current(store, &format!("{to}\n"));
}

fn cases() -> Vec<(&'static str, Version, Mutation, Outcome)> {
    vec![
        (
            "CURRENT with surrounding whitespace",
            Version::V3,
            |s, w| current(s, &format!("\t {} \n\n", w.generation)),
            Opens,
        ),
        (
            "CURRENT = ../<gen>",
            Version::V3,
            |s, w| current(s, &format!("../{}", w.generation)),
            OpenFails("unsafe pack generation \"../gen-"),
        ),
        (
            "CURRENT empty",
            Version::V3,
            |s, _| current(s, ""),
            OpenFails("unsafe pack generation \"\""),
        ),
        (
            "CURRENT = / (the reference lets it through)",
            Version::V3,
            |s, _| current(s, "/\n"),
            OpenFails("unsafe pack generation \"/\""),
        ),
        (
            "CURRENT names a missing generation",
            Version::V3,
            |s, _| current(s, "gen-1\n"),
            OpenFails("open pack generation"),
        ),
        (
            "generation dir renamed .generation-7 (meta unchanged)",
            Version::V3,
            |s, w| rename_generation(s, w, ".generation-7"),
            Opens,
        ),
        (
            "generation dir renamed gen-7 (meta unchanged)",
            Version::V3,
            |s, w| rename_generation(s, w, "gen-7"),
            OpenFails("does not match directory \"gen-7\""),
        ),
        (
            "meta version 2",
            Version::V3,
            |_, w| edit_meta(w, |m| m["version"] = 2.into()),
            OpenFails("unsupported pack v3 metadata version=2 kind=\"pack-v3\""),
        ),
        (
            "meta kind pack-V3",
            Version::V3,
            |_, w| edit_meta(w, |m| m["kind"] = "pack-V3".into()),
            OpenFails("unsupported pack v3 metadata version=3 kind=\"pack-V3\""),
        ),
        (
            "meta block_bytes 0",
            Version::V3,
            |_, w| edit_meta(w, |m| m["block_bytes"] = 0.into()),
            OpenFails("invalid pack v3 metadata"),
        ),
        (
            "meta block_bytes 1 (smaller than the blocks)",
            Version::V3,
            |_, w| edit_meta(w, |m| m["block_bytes"] = 1.into()),
            Opens,
        ),
        (
            "meta keys upper-cased + unknown key",
            Version::V3,
            |_, w| edit_meta(w, shout),
            Opens,
        ),
        (
            "meta version as string",
            Version::V3,
            |_, w| edit_meta(w, |m| m["version"] = "3".into()),
            OpenFails(
                "decode pack v3 metadata: json: cannot unmarshal string into Go struct field indexV3Meta.version of type int",
            ),
        ),
        (
            "meta packs: duplicate name",
            Version::V3,
            |_, w| edit_meta(w, |m| m["packs"][1] = "pack-000001.pack".into()),
            OpenFails("duplicate pack filename \"pack-000001.pack\""),
        ),
        (
            "meta packs: sub/dir name",
            Version::V3,
            |_, w| edit_meta(w, |m| m["packs"][0] = "x/pack-000001.pack".into()),
            OpenFails("unsafe pack filename \"x/pack-000001.pack\""),
        ),
        (
            "meta packs: extra missing file",
            Version::V3,
            |_, w| {
                edit_meta(w, |m| {
                    m["packs"]
                        .as_array_mut()
                        .unwrap()
                        .push("pack-999999.pack".into())
                })
            },
            OpenFails("open pack "),
        ),
        (
            "meta packs: extra existing unused file",
            Version::V3,
            |_, w| {
                fs::write(w.dir.join("pack-999999.pack"), b"unused").unwrap();
                edit_meta(w, |m| {
                    m["packs"]
                        .as_array_mut()
                        .unwrap()
                        .push("pack-999999.pack".into())
                });
            },
            Opens,
        ),
        (
            "meta object_count + 1",
            Version::V3,
            |_, w| edit_meta(w, |m| m["object_count"] = (w.objects.len() + 1).into()),
            OpenFails("pack v3 object index size mismatch"),
        ),
        (
            "objects.idx truncated by 1 byte",
            Version::V3,
            |_, w| {
                edit_file(&w.dir.join("objects.idx"), |b| {
                    b.pop();
                })
            },
            OpenFails("pack v3 object index size mismatch"),
        ),
        (
            "objects.idx first two records swapped",
            Version::V3,
            |_, w| {
                edit_file(&w.dir.join("objects.idx"), |b| {
                    let (first, second) = b[..104].split_at_mut(52);
                    first.swap_with_slice(second);
                })
            },
            OpenFails("pack v3 object index is not strictly sorted"),
        ),
        (
            "objects.idx record 1 = record 0 (duplicate)",
            Version::V3,
            |_, w| {
                edit_file(&w.dir.join("objects.idx"), |b| {
                    let first = b[..52].to_vec();
                    b[52..104].copy_from_slice(&first);
                })
            },
            OpenFails("pack v3 object index is not strictly sorted"),
        ),
        (
            "object block_count too large",
            Version::V3,
            |_, w| {
                object_record(w, 0, |r| {
                    r[48..52].copy_from_slice(&100_000u32.to_be_bytes())
                })
            },
            OpenFails("invalid pack v3 object record"),
        ),
        (
            "object raw_bytes off by one",
            Version::V3,
            |_, w| {
                let (object, _) = multi_block(w);
                object_record(w, object, |r| {
                    r[32..40].copy_from_slice(&40_809u64.to_be_bytes())
                });
            },
            OpenFails("block bytes 40808, want 40809"),
        ),
        (
            "block encoding byte 2",
            Version::V3,
            |_, w| block_record(w, 0, |r| r[68] = 2),
            OpenFails("invalid pack v3 block encoding 2"),
        ),
        (
            "block raw_offset not contiguous",
            Version::V3,
            |_, w| {
                let (_, first) = multi_block(w);
                block_record(w, first + 1, |r| {
                    r[20..28].copy_from_slice(&1u64.to_be_bytes())
                });
            },
            OpenFails("invalid pack v3 block for object"),
        ),
        (
            "block pack_index out of range",
            Version::V3,
            |_, w| {
                block_record(w, 0, |r| {
                    r[..4].copy_from_slice(&(w.packs.len() as u32).to_be_bytes())
                })
            },
            OpenFails("invalid pack v3 block for object"),
        ),
        (
            "block stored_bytes past pack end",
            Version::V3,
            |_, w| {
                block_record(w, 0, |r| {
                    r[12..20].copy_from_slice(&(1u64 << 30).to_be_bytes())
                })
            },
            OpenFails(":0 exceeds pack-000001.pack size"),
        ),
        (
            "block stored_bytes 0",
            Version::V3,
            |_, w| block_record(w, 0, |r| r[12..20].copy_from_slice(&0u64.to_be_bytes())),
            OpenFails("invalid pack v3 block for object"),
        ),
        (
            "block digest flipped (read-time)",
            Version::V3,
            |_, w| block_record(w, 0, |r| r[40] ^= 1),
            ReadFails(":0: SHA-256 mismatch"),
        ),
        (
            "zstd payload byte flipped (read-time)",
            Version::V3,
            |_, w| {
                let n = first_zstd_block(w);
                let block = w.objects.iter().flat_map(|o| &o.2).nth(n).unwrap().clone();
                edit_file(&w.dir.join(&w.packs[block.pack as usize]), |b| {
                    b[(block.pack_offset + block.stored_bytes / 2) as usize] ^= 0x40
                });
            },
            ReadFails("packed block "),
        ),
        (
            "extra unreferenced block record",
            Version::V3,
            |_, w| {
                edit_file(&w.dir.join("blocks.idx"), |b| {
                    b.extend_from_slice(&[0xee; 69])
                });
                edit_meta(w, |m| m["block_count"] = (w.block_count() + 1).into());
            },
            Opens,
        ),
        (
            "garbage index.json beside v3 files",
            Version::V3,
            |_, w| fs::write(w.dir.join("index.json"), b"{garbage").unwrap(),
            Opens,
        ),
        (
            "leases/ missing",
            Version::V3,
            |_, w| fs::remove_dir(w.dir.join("leases")).unwrap(),
            Opens,
        ),
        (
            "leases is a regular file (the reference's lease, not the format: a reader takes none)",
            Version::V3,
            |_, w| {
                fs::remove_dir(w.dir.join("leases")).unwrap();
                fs::write(w.dir.join("leases"), b"").unwrap();
            },
            Opens,
        ),
        (
            "index.meta.json removed (no index.json)",
            Version::V3,
            |_, w| fs::remove_file(w.dir.join("index.meta.json")).unwrap(),
            OpenFails("read pack index"),
        ),
        ("v2 as built", Version::V2, |_, _| (), Opens),
        (
            "v2 block encoding empty",
            Version::V2,
            |_, w| edit_index(w, |i| i["objects"][0]["blocks"][0]["encoding"] = "".into()),
            OpenFails("invalid block encoding \"\" for object"),
        ),
        (
            "v2 block encoding missing",
            Version::V2,
            |_, w| {
                edit_index(w, |i| {
                    i["objects"][0]["blocks"][0]
                        .as_object_mut()
                        .unwrap()
                        .remove("encoding");
                })
            },
            OpenFails("invalid block encoding \"\" for object"),
        ),
        (
            "pack-v1 with a raw block",
            Version::V2,
            |_, w| {
                edit_index(w, |i| {
                    i["version"] = 1.into();
                    i["kind"] = "pack-v1".into();
                })
            },
            OpenFails("invalid block encoding \"raw\" for object"),
        ),
        (
            "v2 version 3 kind pack-v3 in index.json",
            Version::V2,
            |_, w| {
                edit_index(w, |i| {
                    i["version"] = 3.into();
                    i["kind"] = "pack-v3".into();
                })
            },
            OpenFails("unsupported pack index version=3 kind=\"pack-v3\""),
        ),
        (
            "v2 objects in reverse order",
            Version::V2,
            |_, w| edit_index(w, |i| i["objects"].as_array_mut().unwrap().reverse()),
            Opens,
        ),
        (
            "v2 duplicate object",
            Version::V2,
            |_, w| {
                edit_index(w, |i| {
                    let first = i["objects"][0].clone();
                    i["objects"].as_array_mut().unwrap().push(first);
                })
            },
            OpenFails("duplicate pack object"),
        ),
        (
            "v2 upper-case object sha (read-time)",
            Version::V2,
            |_, w| {
                edit_index(w, |i| {
                    let sha = i["objects"][0]["sha256"].as_str().unwrap().to_uppercase();
                    i["objects"][0]["sha256"] = sha.into();
                })
            },
            ReadFails("is not named by a lowercase sha256"),
        ),
        (
            "v2 generation mismatch",
            Version::V2,
            |_, w| edit_index(w, |i| i["generation"] = "gen-other".into()),
            OpenFails("pack index generation \"gen-other\" does not match directory"),
        ),
        (
            "v2 block pack ../x",
            Version::V2,
            |_, w| edit_index(w, |i| i["objects"][0]["blocks"][0]["pack"] = "../x".into()),
            OpenFails("invalid block 0 for object"),
        ),
        (
            "v2 object raw_bytes off by one",
            Version::V2,
            |_, w| {
                let (object, _) = multi_block(w);
                edit_index(w, |i| i["objects"][object]["raw_bytes"] = 40_809.into());
            },
            OpenFails("block bytes 40808, want 40809"),
        ),
        (
            "v2 keys upper-cased + unknown key",
            Version::V2,
            |_, w| edit_index(w, shout),
            Opens,
        ),
        (
            "pack-v1 as built (zstd only, no encoding keys)",
            Version::V1,
            |_, _| (),
            Opens,
        ),
        (
            "pack-v1 with encoding zstd written out",
            Version::V1,
            |_, w| {
                edit_index(w, |i| {
                    for object in i["objects"].as_array_mut().unwrap() {
                        for block in object["blocks"].as_array_mut().unwrap() {
                            block["encoding"] = "zstd".into();
                        }
                    }
                })
            },
            Opens,
        ),
        (
            "pack-v1 relabelled pack-v2 (encodings absent)",
            Version::V1,
            |_, w| {
                edit_index(w, |i| {
                    i["version"] = 2.into();
                    i["kind"] = "pack-v2".into();
                })
            },
            OpenFails("invalid block encoding \"\" for object"),
        ),
    ]
}

#[test]
fn every_reader_row_of_the_mutation_table() {
    let mut failures = Vec::new();
    for (name, version, mutate, outcome) in cases() {
        let (dir, written) = build(&options(version));
        mutate(dir.path(), &written);
        let opened = open(dir.path());
        let ok = match (&outcome, &opened) {
            (Opens, Ok(generation)) => {
                assert_reads_everything(generation);
                true
            }
            (OpenFails(text), Err(e)) => e.to_string().contains(text),
            (ReadFails(text), Ok(generation)) => {
                generation.verify().iter().any(|p| p.what.contains(text))
            }
            _ => false,
        };
        if !ok {
            let got = match opened {
                Ok(generation) => format!("opened; verify: {:?}", generation.verify()),
                Err(e) => format!("open error: {e}"),
            };
            failures.push(format!("{name}: expected {outcome:?}, {got}"));
        }
    }
    assert!(failures.is_empty(), "\n{}", failures.join("\n"));
}
