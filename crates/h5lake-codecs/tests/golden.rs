//! Chunks written by the reference implementations (libhdf5 through h5py,
//! the hdf5plugin filters, c-blosc through numcodecs, HSDS 1.0.2) must decode
//! to the array they came from, and our own encoding of that array must
//! decode the same. Regenerate with tests/data/make_golden.py.

use std::path::PathBuf;

use h5lake_codecs::{ChunkFormat, Pipeline};
use serde_json::Value;

fn dir() -> PathBuf {
    // Cargo sets CARGO_MANIFEST_DIR when it runs tests too; prefer that over
    // the compile-time path so that a binary reused from another checkout
    // (a shared CARGO_TARGET_DIR) reads this checkout's files.
    let root = std::env::var_os("CARGO_MANIFEST_DIR")
        .map_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")), PathBuf::from);
    root.join("tests/data/golden")
}

#[test]
fn golden_vectors() {
    let manifest: Value =
        serde_json::from_slice(&std::fs::read(dir().join("manifest.json")).expect("manifest"))
            .unwrap();
    let mut checked = 0;
    for entry in manifest.as_array().unwrap() {
        let name = entry["name"].as_str().unwrap();
        let stored = std::fs::read(dir().join(format!("{name}.stored"))).unwrap();
        let raw = std::fs::read(dir().join(format!("{name}.raw"))).unwrap();
        let elem = entry["elem_size"].as_u64().unwrap() as usize;
        let format = match entry["format"].as_str().unwrap() {
            "hsds" => ChunkFormat::Hsds,
            _ => ChunkFormat::Hdf5,
        };
        let p =
            Pipeline::from_hsds_json(&entry["filters"]).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(entry["expect"], "ok", "{name}");
        for hint in [None, Some(raw.len())] {
            let got = p
                .decode_as(&stored, elem, hint, format)
                .unwrap_or_else(|e| panic!("{name} (hint {hint:?}): {e}"));
            assert!(got == raw, "{name}: decoded bytes differ");
        }
        let ours = p.encode_as(raw.clone(), elem, format).unwrap();
        assert_eq!(
            p.decode_as(&ours, elem, None, format).unwrap(),
            raw,
            "{name}: our roundtrip"
        );
        checked += 1;
    }
    assert!(checked >= 20, "only {checked} vectors");
}

/// Byte-exact where the format is deterministic: libhdf5's shuffle and
/// fletcher32 have no encoder freedom, so our output must equal its chunk.
#[test]
fn shuffle_and_fletcher_are_byte_exact() {
    for name in [
        "h5_fletcher_odd_u8",
        "h5_fletcher_i16",
        "h5_shuffle_f64",
        "h5_shuffle_fletcher_s3",
    ] {
        let manifest: Value =
            serde_json::from_slice(&std::fs::read(dir().join("manifest.json")).unwrap()).unwrap();
        let entry = manifest
            .as_array()
            .unwrap()
            .iter()
            .find(|e| e["name"] == name)
            .unwrap();
        let p = Pipeline::from_hsds_json(&entry["filters"]).unwrap();
        let raw = std::fs::read(dir().join(format!("{name}.raw"))).unwrap();
        let stored = std::fs::read(dir().join(format!("{name}.stored"))).unwrap();
        let elem = entry["elem_size"].as_u64().unwrap() as usize;
        assert_eq!(p.encode(raw, elem).unwrap(), stored, "{name}");
    }
}
