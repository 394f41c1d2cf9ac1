//! Random data, element sizes and filter chains round-trip; random bytes never panic.

use h5lake_codecs::{BloscCompressor, BloscShuffle, ChunkFormat, Filter, Pipeline};
use proptest::prelude::*;

fn compressor() -> impl Strategy<Value = Filter> {
    prop_oneof![
        (0u32..=9).prop_map(|level| Filter::Deflate { level }),
        (-3i32..=12).prop_map(|level| Filter::Zstd { level }),
        Just(Filter::Lz4),
        (
            prop_oneof![
                Just(BloscCompressor::Lz4),
                Just(BloscCompressor::Zlib),
                Just(BloscCompressor::Zstd),
                Just(BloscCompressor::BloscLz)
            ],
            0u8..=9,
            prop_oneof![Just(BloscShuffle::None), Just(BloscShuffle::Byte)]
        )
            .prop_map(|(compressor, level, shuffle)| Filter::Blosc {
                compressor,
                level,
                shuffle
            }),
    ]
}

fn pipeline() -> impl Strategy<Value = Pipeline> {
    (
        any::<bool>(),
        proptest::option::of(compressor()),
        any::<bool>(),
    )
        .prop_map(|(sh, comp, fl)| {
            let mut f = Vec::new();
            if sh {
                f.push(Filter::Shuffle);
            }
            f.extend(comp);
            if fl {
                f.push(Filter::Fletcher32);
            }
            Pipeline::new(f)
        })
}

/// Data with some structure, so compressors take their compressed paths too.
fn data() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        proptest::collection::vec(any::<u8>(), 0..3000),
        (proptest::collection::vec(0u8..4, 0..20_000), any::<u8>()).prop_map(|(v, k)| v
            .into_iter()
            .enumerate()
            .map(|(i, x)| x.wrapping_add((i as u8) & k))
            .collect()),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]

    #[test]
    fn roundtrip(p in pipeline(), raw in data(), elem in 1usize..=20, hsds in any::<bool>()) {
        let fmt = if hsds { ChunkFormat::Hsds } else { ChunkFormat::Hdf5 };
        let enc = p.encode_as(raw.clone(), elem, fmt).unwrap();
        prop_assert_eq!(&p.decode_as(&enc, elem, None, fmt).unwrap(), &raw);
        prop_assert_eq!(&p.decode_as(&enc, elem, Some(raw.len()), fmt).unwrap(), &raw);
        let back = Pipeline::from_hsds_json(&p.to_hsds_json()).unwrap();
        prop_assert_eq!(back, p);
    }

    #[test]
    fn random_bytes_never_panic(p in pipeline(), junk in proptest::collection::vec(any::<u8>(), 0..600),
                                elem in 1usize..=16, hint in proptest::option::of(0usize..100_000)) {
        let _ = p.decode_with_hint(&junk, elem, hint);
        let _ = p.decode_as(&junk, elem, hint, ChunkFormat::Hsds);
    }

    #[test]
    fn damaged_chunks_never_panic(p in pipeline(), raw in data(), elem in 1usize..=8,
                                  flips in proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..6),
                                  cut in any::<prop::sample::Index>()) {
        let mut enc = p.encode(raw, elem).unwrap();
        if !enc.is_empty() {
            for (at, x) in flips {
                let i = at.index(enc.len());
                enc[i] ^= x;
            }
            let _ = p.decode(&enc, elem);
            let n = cut.index(enc.len());
            let _ = p.decode(&enc[..n], elem);
        }
    }

    #[test]
    fn random_json_never_panics(v in any::<u32>(), s in "[a-zA-Z0-9_]{0,12}", lvl in any::<i64>()) {
        let j = serde_json::json!([{"id": v}, {"class": s.clone(), "level": lvl}, {"name": s, "level": lvl}]);
        let _ = Pipeline::from_hsds_json(&j);
    }
}
