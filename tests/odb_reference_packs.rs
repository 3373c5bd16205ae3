//! The reference implementation's pack generations, written by the test writer of
//! `support/codexfold_pack.rs` (shared with the unit tests), read through the library's public API.

#[path = "support/codexfold_pack.rs"]
mod codexfold_pack;

use codexfold_pack::{Options, Version};
use ctxfold::digest::Digest;
use ctxfold::odb::codexfold::Generation;

#[test]
fn a_store_packed_and_retired_by_the_reference_reads_back() {
    let objects: Vec<Vec<u8>> = (0..40u32)
        .map(|i| {
            format!(
                "{{\"line\":{i},\"text\":\"{}\"}}\n",
                "lorem ipsum ".repeat(i as usize * 300)
            )
            .into_bytes()
        })
        .collect();
    for version in [Version::V3, Version::V2, Version::V1] {
        let store = tempfile::tempdir().unwrap();
        let options = Options {
            version,
            block_bytes: 16 << 10,
            pack_bytes: 2 << 10,
            ..Options::default()
        };
        let written = codexfold_pack::write(store.path(), &objects, &options);
        assert!(written.packs.len() > 1);
        let generation = Generation::open(store.path()).unwrap().unwrap();
        let mut listed: Vec<Digest> = generation.objects().map(Result::unwrap).collect();
        listed.sort();
        let mut expected: Vec<Digest> = objects.iter().map(|o| Digest::of(o)).collect();
        expected.sort();
        assert_eq!(listed, expected);
        for object in &objects {
            let mut out = Vec::new();
            generation
                .read(&Digest::of(object), Some(object.len() as u64), &mut out)
                .unwrap();
            assert_eq!(&out, object);
        }
        assert!(generation.verify().is_empty());
    }
}
