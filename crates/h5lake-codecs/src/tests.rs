use super::*;
use serde_json::json;

fn sample(len: usize) -> Vec<u8> {
    (0..len)
        .map(|i| ((i / 5) as u32).wrapping_mul(2654435761) as u8 & 0x3f)
        .collect()
}

#[test]
fn empty_or_null_is_empty_pipeline() {
    assert!(Pipeline::from_hsds_json(&Value::Null).unwrap().is_empty());
    assert!(Pipeline::from_hsds_json(&json!([])).unwrap().is_empty());
    let p = Pipeline::default();
    assert_eq!(p.encode(vec![1, 2, 3], 1).unwrap(), vec![1, 2, 3]);
    assert_eq!(p.decode(&[1, 2, 3], 1).unwrap(), vec![1, 2, 3]);
}

#[test]
fn parses_hsds_fixture_filters() {
    // As HSDS 1.0.2 stored them in shared/fixtures/hsds-store.
    let v = json!([{"class": "H5Z_FILTER_SHUFFLE", "id": 2, "name": "shuffle"},
                   {"class": "H5Z_FILTER_DEFLATE", "id": 1, "name": "gzip", "level": 6}]);
    let p = Pipeline::from_hsds_json(&v).unwrap();
    assert_eq!(
        p.filters,
        vec![Filter::Shuffle, Filter::Deflate { level: 6 }]
    );
}

#[test]
fn identifies_by_id_then_class_then_name() {
    let p = Pipeline::from_hsds_json(&json!([
        {"id": 32015, "class": "H5Z_FILTER_DEFLATE"},
        {"class": "H5Z_FILTER_LZ4"},
        {"class": "H5Z_FILTER_USER", "name": "zstd", "level": 7},
        {"name": "gzip"},
        {"name": "deflate", "level": "2"},
        {"name": "fletcher32"},
        2, "H5Z_FILTER_LZ4", "zstd",
    ]))
    .unwrap();
    assert_eq!(
        p.filters,
        vec![
            Filter::Zstd { level: 3 },
            Filter::Lz4,
            Filter::Zstd { level: 7 },
            Filter::Deflate { level: 4 },
            Filter::Deflate { level: 2 },
            Filter::Fletcher32,
            Filter::Shuffle,
            Filter::Lz4,
            Filter::Zstd { level: 3 },
        ]
    );
}

#[test]
fn blosc_parameters() {
    let p = Pipeline::from_hsds_json(&json!([
        {"class": "H5Z_FILTER_BLOSC", "id": 32001, "name": "blosclz"},
        {"class": "H5Z_FILTER_BLOSC", "id": 32001, "name": "lz4", "level": 9},
        {"id": 32001, "cname": "zstd", "clevel": 1, "shuffle": 0},
        {"id": 32001, "compressor": 4, "shuffle": 2},
    ]))
    .unwrap();
    assert_eq!(
        p.filters,
        vec![
            Filter::Blosc {
                compressor: BloscCompressor::BloscLz,
                level: 5,
                shuffle: BloscShuffle::Byte
            },
            Filter::Blosc {
                compressor: BloscCompressor::Lz4,
                level: 9,
                shuffle: BloscShuffle::Byte
            },
            Filter::Blosc {
                compressor: BloscCompressor::Zstd,
                level: 1,
                shuffle: BloscShuffle::None
            },
            Filter::Blosc {
                compressor: BloscCompressor::Zlib,
                level: 5,
                shuffle: BloscShuffle::Bit
            },
        ]
    );
    assert!(matches!(
        Pipeline::from_hsds_json(&json!([{"id": 32001, "compressor": "brotli"}])),
        Err(CodecError::Unsupported(m)) if m.contains("brotli")
    ));
}

#[test]
fn unknown_filters_are_named() {
    let cases = [
        (json!([{"class": "H5Z_FILTER_NBIT", "id": 5}]), "nbit"),
        (json!([{"class": "H5Z_FILTER_SNAPPY"}]), "snappy"),
        (
            json!([{"class": "H5Z_FILTER_USER", "id": 32013, "name": "zfp"}]),
            "zfp",
        ),
        (json!([{"id": 307}]), "307"),
        (json!(["nbit"]), "nbit"),
    ];
    for (v, needle) in cases {
        match Pipeline::from_hsds_json(&v) {
            Err(CodecError::Unsupported(m)) => assert!(m.contains(needle), "{m} lacks {needle}"),
            other => panic!("{v}: {other:?}"),
        }
    }
}

#[test]
fn invalid_json_is_invalid() {
    for v in [
        json!({"a": 1}),
        json!([true]),
        json!([{"id": 1, "level": 11}]),
        json!([{"id": 1, "level": "x"}]),
        json!([{"id": 32001, "shuffle": 3}]),
    ] {
        assert!(
            matches!(Pipeline::from_hsds_json(&v), Err(CodecError::Invalid(_))),
            "{v}"
        );
    }
}

#[test]
fn json_roundtrip_and_shape() {
    let p = Pipeline::new(vec![
        Filter::Shuffle,
        Filter::Deflate { level: 4 },
        Filter::Zstd { level: 3 },
        Filter::Lz4,
        Filter::Blosc {
            compressor: BloscCompressor::Zlib,
            level: 5,
            shuffle: BloscShuffle::Byte,
        },
        Filter::Fletcher32,
    ]);
    let v = p.to_hsds_json();
    assert_eq!(
        v[0],
        json!({"class": "H5Z_FILTER_SHUFFLE", "id": 2, "name": "shuffle"})
    );
    assert_eq!(
        v[1],
        json!({"class": "H5Z_FILTER_DEFLATE", "id": 1, "name": "gzip", "level": 4})
    );
    assert_eq!(
        v[2],
        json!({"class": "H5Z_FILTER_ZSTD", "id": 32015, "name": "zstd", "level": 3})
    );
    assert_eq!(
        v[3],
        json!({"class": "H5Z_FILTER_LZ4", "id": 32004, "name": "lz4"})
    );
    assert_eq!(v[4]["class"], "H5Z_FILTER_BLOSC");
    assert_eq!(
        v[5],
        json!({"class": "H5Z_FILTER_FLETCHER32", "id": 3, "name": "fletcher32"})
    );
    assert_eq!(Pipeline::from_hsds_json(&v).unwrap(), p);
}

#[test]
fn every_filter_roundtrips_in_both_formats() {
    let filters = [
        Filter::Shuffle,
        Filter::Deflate { level: 1 },
        Filter::Deflate { level: 9 },
        Filter::Zstd { level: 0 },
        Filter::Zstd { level: 19 },
        Filter::Lz4,
        Filter::Fletcher32,
        Filter::Blosc {
            compressor: BloscCompressor::Lz4,
            level: 5,
            shuffle: BloscShuffle::Byte,
        },
        Filter::Blosc {
            compressor: BloscCompressor::BloscLz,
            level: 5,
            shuffle: BloscShuffle::None,
        },
    ];
    for f in filters {
        for len in [0, 1, 7, 4096, 100_003] {
            let raw = sample(len);
            for fmt in [ChunkFormat::Hdf5, ChunkFormat::Hsds] {
                let p = Pipeline::new(vec![Filter::Shuffle, f.clone(), Filter::Fletcher32]);
                let enc = p.encode_as(raw.clone(), 4, fmt).unwrap();
                assert_eq!(
                    p.decode_as(&enc, 4, Some(len), fmt).unwrap(),
                    raw,
                    "{f:?} {len} {fmt:?}"
                );
                assert_eq!(
                    p.decode_as(&enc, 4, None, fmt).unwrap(),
                    raw,
                    "{f:?} {len} {fmt:?}"
                );
            }
        }
    }
}

#[test]
fn filters_in_any_order_roundtrip_in_both_formats() {
    // HDF5 applies filters in the order they were added: deflate then
    // shuffle shuffles the compressed bytes. Such chunks were put in a
    // Blosc frame (which shuffles before compressing) and could not be read.
    let orders = [
        vec![Filter::Deflate { level: 6 }, Filter::Shuffle],
        vec![
            Filter::Zstd { level: 3 },
            Filter::Shuffle,
            Filter::Fletcher32,
        ],
        vec![Filter::Fletcher32, Filter::Lz4, Filter::Shuffle],
        vec![
            Filter::Shuffle,
            Filter::Deflate { level: 1 },
            Filter::Shuffle,
        ],
    ];
    for p in orders.into_iter().map(Pipeline::new) {
        for len in [0, 4, 4096, 100_000] {
            let raw = sample(len);
            for fmt in [ChunkFormat::Hdf5, ChunkFormat::Hsds] {
                let enc = p.encode_as(raw.clone(), 4, fmt).unwrap();
                assert_eq!(enc, p.encode(raw.clone(), 4).unwrap(), "{p} {len} {fmt:?}");
                for hint in [Some(len), None] {
                    assert_eq!(
                        p.decode_as(&enc, 4, hint, fmt).unwrap(),
                        raw,
                        "{p} {len} {fmt:?}"
                    );
                }
            }
        }
    }
}

#[test]
fn chunks_framed_by_earlier_versions_for_out_of_order_filters_still_read() {
    let raw = sample(40_000);
    let p = Pipeline::new(vec![Filter::Deflate { level: 6 }, Filter::Shuffle]);
    let framed = blosc::compress(&raw, 4, BloscCompressor::Zlib, 6, BloscShuffle::Byte).unwrap();
    assert_eq!(
        p.decode_as(&framed, 4, Some(raw.len()), ChunkFormat::Hsds)
            .unwrap(),
        raw
    );
}

#[test]
fn hdf5_decode_reads_hsds_chunks() {
    let raw = sample(50_000);
    for comp in [
        Filter::Deflate { level: 6 },
        Filter::Zstd { level: 3 },
        Filter::Lz4,
    ] {
        let p = Pipeline::new(vec![Filter::Shuffle, comp, Filter::Fletcher32]);
        let hsds = p.encode_as(raw.clone(), 2, ChunkFormat::Hsds).unwrap();
        assert_eq!(&hsds[..2], &[2, 1], "a Blosc1 frame");
        assert_eq!(p.decode(&hsds, 2).unwrap(), raw);
    }
}

#[test]
fn hsds_layout_without_compressor_is_raw() {
    let p = Pipeline::new(vec![Filter::Shuffle, Filter::Fletcher32]);
    let raw = sample(100);
    assert_eq!(p.encode_as(raw.clone(), 4, ChunkFormat::Hsds).unwrap(), raw);
    assert_eq!(p.decode_as(&raw, 4, None, ChunkFormat::Hsds).unwrap(), raw);
}

#[test]
fn lz4_incompressible_blocks_are_stored_raw() {
    let mut x: u64 = 88172645463325252;
    let raw: Vec<u8> = (0..10_000)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect();
    let enc = Pipeline::new(vec![Filter::Lz4])
        .encode(raw.clone(), 1)
        .unwrap();
    assert_eq!(enc.len(), 12 + 4 + raw.len());
    assert_eq!(&enc[..8], &(raw.len() as u64).to_be_bytes());
    assert_eq!(&enc[16..], &raw[..]);
    assert_eq!(lz4::decompress(&enc).unwrap(), raw);
    // Multi-block framing as H5Zlz4 writes it with a 1 KiB block size.
    let small = lz4::compress(&sample(5000), 1024);
    assert_eq!(u32::from_be_bytes(small[8..12].try_into().unwrap()), 1024);
    assert_eq!(lz4::decompress(&small).unwrap(), sample(5000));
}

#[test]
fn corrupt_input_is_an_error() {
    let raw = sample(10_000);
    for f in [
        Filter::Deflate { level: 4 },
        Filter::Zstd { level: 3 },
        Filter::Lz4,
        Filter::Fletcher32,
        Filter::Blosc {
            compressor: BloscCompressor::Zstd,
            level: 5,
            shuffle: BloscShuffle::Byte,
        },
    ] {
        let p = Pipeline::new(vec![f.clone()]);
        let enc = p.encode(raw.clone(), 4).unwrap();
        assert!(
            p.decode(&enc[..enc.len() / 2], 4).is_err(),
            "{f:?} truncated"
        );
        assert!(p.decode(&[], 4).is_err(), "{f:?} empty");
    }
    let p = Pipeline::new(vec![Filter::Deflate { level: 4 }, Filter::Fletcher32]);
    let mut enc = p.encode(raw, 4).unwrap();
    enc[10] ^= 0x40;
    assert!(matches!(p.decode(&enc, 4), Err(CodecError::Checksum)));
}

#[test]
fn pipeline_is_send_sync_and_parallel_safe() {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<Pipeline>();
    let p = std::sync::Arc::new(Pipeline::new(vec![
        Filter::Shuffle,
        Filter::Deflate { level: 4 },
    ]));
    let handles: Vec<_> = (0..4)
        .map(|t| {
            let p = p.clone();
            std::thread::spawn(move || {
                for i in 0..20 {
                    let raw = sample(1000 + t * 100 + i);
                    let enc = p.encode(raw.clone(), 8).unwrap();
                    assert_eq!(p.decode(&enc, 8).unwrap(), raw);
                }
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
}

#[test]
fn deflate_grows_past_a_bad_hint() {
    let raw = vec![7u8; 1 << 20];
    let p = Pipeline::new(vec![Filter::Deflate { level: 6 }]);
    let enc = p.encode(raw.clone(), 1).unwrap();
    assert_eq!(p.decode_with_hint(&enc, 1, Some(10)).unwrap(), raw);
    assert_eq!(p.decode_with_hint(&enc, 1, Some(1 << 20)).unwrap(), raw);
}

#[test]
fn optional_filters_it_knows_nothing_of_are_skipped() {
    assert!(skips_optional(256));
    assert!(
        !skips_optional(filter_id::SZIP),
        "known and lacking: refused by name"
    );
    assert!(
        !skips_optional(filter_id::DEFLATE),
        "known and had: applied"
    );
    let skipped = skipped_filter_json(256, &[1, 2], "test filter");
    assert!(is_skipped_entry(&skipped) && !is_skipped_entry(&json!({"id": 256})));
    let p = Pipeline::from_hsds_json(&json!([{"id": 2}, skipped, {"id": 1, "level": 3}])).unwrap();
    assert_eq!(
        p.filters,
        vec![Filter::Shuffle, Filter::Deflate { level: 3 }]
    );
    // without the mark the same entry is refused
    assert!(matches!(
        Pipeline::from_hsds_json(&json!([{"id": 256}])),
        Err(CodecError::Unsupported(_))
    ));
}

#[test]
fn adaptive_filters_are_completed_for_the_dataset() {
    // What h5py/h5pyd send: the user's settings only, as HSDS spells them.
    let user = json!([
        {"class": "H5Z_FILTER_SCALEOFFSET", "id": 6, "scaleType": "H5Z_SO_INT", "scaleOffset": 0},
        {"class": "H5Z_FILTER_SZIP", "id": 4, "coding": "H5_SZIP_NN_OPTION_MASK",
         "pixelsPerBlock": 8},
    ]);
    assert!(matches!(
        Pipeline::from_hsds_json(&user),
        Err(CodecError::Invalid(m)) if m.contains("filled in when the dataset is created")
    ));
    let int32 = ElementInfo {
        class: ElementClass::Integer { signed: true },
        size: 4,
        big_endian: false,
    };
    let done = complete_filters(&user, int32, &[10, 30], &7i32.to_le_bytes()).unwrap();
    // Completing is idempotent, and the complete form parses.
    assert_eq!(
        complete_filters(&done, int32, &[10, 30], &[0; 4]).unwrap(),
        done
    );
    let p = Pipeline::from_hsds_json(&done).unwrap();
    let Filter::Szip { cd } = &p.filters[1] else {
        panic!("{p:?}")
    };
    // libhdf5's set_local for int32 LE chunks of (10, 30), ("nn", 8).
    assert_eq!(cd, &vec![169, 8, 32, 30]);
    assert_eq!(done[0]["scaleOffset"], 0);
    assert_eq!(done[1]["pixelsPerScanline"], 30);
    let raw: Vec<u8> = (0..300i32)
        .flat_map(|i| (i * 7 - 40).to_le_bytes())
        .collect();
    for format in [ChunkFormat::Hdf5, ChunkFormat::Hsds] {
        let enc = p.encode_as(raw.clone(), 4, format).unwrap();
        assert!(enc.len() < raw.len() / 2, "{}", enc.len());
        assert_eq!(p.decode_as(&enc, 4, None, format).unwrap(), raw);
    }
    // Where libhdf5 refuses them.
    let text = ElementInfo {
        class: ElementClass::Other,
        size: 4,
        big_endian: false,
    };
    assert!(complete_filters(&user, text, &[10, 30], &[0; 4]).is_err());
    let float = ElementInfo {
        class: ElementClass::Float,
        size: 8,
        big_endian: false,
    };
    assert!(complete_filters(&user, float, &[10, 30], &[0; 8]).is_err());
    let few = json!([{"class": "H5Z_FILTER_SZIP", "pixelsPerBlock": 32}]);
    assert!(complete_filters(&few, int32, &[2, 3], &[0; 4]).is_err());
}

#[test]
fn bitshuffle_entries_and_round_trips() {
    // HSDS's bare entry: LZ4, default blocks; an HDF5 file's client data.
    let p = Pipeline::from_hsds_json(&json!([{"class": "H5Z_FILTER_BITSHUFFLE", "id": 32008,
                                               "name": "bitshuffle"}]))
    .unwrap();
    assert_eq!(
        p.filters,
        vec![Filter::Bitshuffle {
            block: 0,
            compression: 2,
            level: 0
        }]
    );
    let p2 =
        Pipeline::from_hsds_json(&json!([{"id": 32008, "parameters": [0, 5, 4, 256, 0]}])).unwrap();
    assert_eq!(
        p2.filters,
        vec![Filter::Bitshuffle {
            block: 256,
            compression: 0,
            level: 0
        }]
    );
    // What to_hsds_json writes reads back the same.
    for q in [&p, &p2] {
        assert_eq!(&Pipeline::from_hsds_json(&q.to_hsds_json()).unwrap(), q);
    }
    assert_eq!(p.filters[0].hdf5_client_data(4, 4096), vec![0, 5, 4, 0, 2]);
    let data: Vec<u8> = (0..4000u32).flat_map(|i| (i / 3).to_le_bytes()).collect();
    for q in [p, p2] {
        for format in [ChunkFormat::Hdf5, ChunkFormat::Hsds] {
            let enc = q.encode_as(data.clone(), 4, format).unwrap();
            assert_eq!(
                q.decode_as(&enc, 4, Some(data.len()), format).unwrap(),
                data
            );
        }
    }
    assert!(Pipeline::from_hsds_json(&json!([{"id": 32008, "block_size": 12}])).is_err());
    assert!(Pipeline::from_hsds_json(&json!([{"id": 32008, "compression": 7}])).is_err());
}

#[test]
fn entries_are_completed_with_class_id_and_name() {
    let f32le = ElementInfo {
        class: ElementClass::Float,
        size: 4,
        big_endian: false,
    };
    // What h5pyd 0.24 sends, bare names, a user-class entry by name, a blosc
    // entry naming its codec by key: each comes back with all three keys.
    let given = json!([
        {"class": "H5Z_FILTER_DEFLATE", "id": 1, "level": 6},
        "shuffle",
        "deflate",
        32015,
        {"class": "H5Z_FILTER_USER", "name": "lz4"},
        {"class": "H5Z_FILTER_BLOSC", "compressor": "zstd", "level": 3},
    ]);
    let done = complete_filters(&given, f32le, &[10], &[0; 4]).unwrap();
    assert_eq!(
        done,
        json!([
            {"class": "H5Z_FILTER_DEFLATE", "id": 1, "name": "gzip", "level": 6},
            {"class": "H5Z_FILTER_SHUFFLE", "id": 2, "name": "shuffle"},
            {"class": "H5Z_FILTER_DEFLATE", "id": 1, "name": "gzip"},
            {"class": "H5Z_FILTER_ZSTD", "id": 32015, "name": "zstd"},
            {"class": "H5Z_FILTER_USER", "name": "lz4", "id": 32004},
            {"class": "H5Z_FILTER_BLOSC", "compressor": "zstd", "level": 3, "id": 32001,
             "name": "zstd"},
        ])
    );
    // The same filters, and completing again changes nothing.
    assert_eq!(
        Pipeline::from_hsds_json(&done).unwrap(),
        Pipeline::from_hsds_json(&given).unwrap()
    );
    assert_eq!(
        complete_filters(&done, f32le, &[10], &[0; 4]).unwrap(),
        done
    );
    // HSDS's lz4hc: Blosc with that codec, kept under HSDS's identity.
    let lz4hc =
        complete_filters(&json!(["lz4hc", {"id": "32005"}]), f32le, &[10], &[0; 4]).unwrap();
    let identity = json!({"class": "H5Z_FILTER_LZ4HC", "id": 32005, "name": "lz4hc"});
    assert_eq!(lz4hc, json!([identity, identity]));
    let p = Pipeline::from_hsds_json(&lz4hc).unwrap();
    assert!(matches!(
        p.filters[0],
        Filter::Blosc {
            compressor: BloscCompressor::Lz4Hc,
            ..
        }
    ));
    // A name naming another filter than the class does is refused (h5pyd
    // would report it as the compression); Blosc's entries name its codec.
    let lying = json!([{"class": "H5Z_FILTER_SHUFFLE", "name": "gzip"}]);
    assert!(complete_filters(&lying, f32le, &[10], &[0; 4]).is_err());
    let codec = json!([{"class": "H5Z_FILTER_BLOSC", "name": "zstd"}]);
    assert!(complete_filters(&codec, f32le, &[10], &[0; 4]).is_ok());
    // A class and an id naming two filters are refused, not read as the id's.
    let mixed = json!([{"class": "H5Z_FILTER_DEFLATE", "id": 32015}]);
    assert!(matches!(
        complete_filters(&mixed, f32le, &[10], &[0; 4]),
        Err(CodecError::Invalid(m)) if m.contains("H5Z_FILTER_DEFLATE")
    ));
}

#[test]
fn a_stored_pipeline_keeps_filters_it_cannot_apply_and_fails_only_on_chunks() {
    // bzip2 (an hdf5plugin filter h5lake lacks) after shuffle, as a file
    // written with the plugin describes it.
    let bzip2 = json!({"class": "H5Z_FILTER_USER", "id": 307, "name": "bzip2",
                       "parameters": [9]});
    let filters = json!([{"class": "H5Z_FILTER_SHUFFLE", "id": 2}, bzip2]);
    // A dataset being made under it is refused ...
    assert!(matches!(
        Pipeline::from_hsds_json(&filters),
        Err(CodecError::Unsupported(_))
    ));
    // ... one that exists is described whole: its entry and client data
    // kept, so h5py's `compression` and the connector's property list
    // still name it.
    let p = Pipeline::described(&filters).unwrap();
    assert_eq!(p.filters[0], Filter::Shuffle);
    assert_eq!(p.to_hsds_json()[1], bzip2);
    assert_eq!(p.filters[1].id(), 307);
    assert_eq!(p.filters[1].hdf5_client_data(4, 64), vec![9]);
    let why = p.unavailable().expect("bzip2 is unavailable");
    assert!(why.contains("bzip2"), "{why}");
    // Its chunks fail either way, naming the filter, in both layouts
    // (never passed through as if unfiltered).
    for format in [ChunkFormat::Hdf5, ChunkFormat::Hsds] {
        let read = p.decode_as(&[1, 2, 3, 4], 4, Some(4), format);
        assert!(
            matches!(&read, Err(CodecError::Unsupported(m)) if m.contains("bzip2") && m.contains("read")),
            "{read:?}"
        );
        let write = p.encode_as(vec![0; 16], 4, format);
        assert!(
            matches!(&write, Err(CodecError::Unsupported(m)) if m.contains("written")),
            "{write:?}"
        );
    }
    // Parameters h5lake cannot read are described the same way; a list
    // that is no list is still an error.
    let odd = json!([{"class": "H5Z_FILTER_DEFLATE", "id": 1, "level": 12}]);
    assert!(Pipeline::described(&odd).unwrap().unavailable().is_some());
    assert!(Pipeline::described(&json!({"id": 1})).is_err());
    // What h5lake applies is parsed as before.
    let known = json!([{"class": "H5Z_FILTER_DEFLATE", "id": 1, "level": 4}]);
    assert_eq!(
        Pipeline::described(&known).unwrap(),
        Pipeline::from_hsds_json(&known).unwrap()
    );
}

#[test]
fn a_pipeline_holds_at_most_hdf5s_32_filters() {
    let many = |n: usize| Value::Array(vec![json!({"class": "H5Z_FILTER_SHUFFLE", "id": 2}); n]);
    assert!(Pipeline::from_hsds_json(&many(MAX_FILTERS)).is_ok());
    assert!(Pipeline::described(&many(MAX_FILTERS)).is_ok());
    // (Opened as well as made: a stored list of thousands would cost every
    // chunk thousands of passes.)
    for parse in [Pipeline::from_hsds_json, Pipeline::described] {
        let e = parse(&many(MAX_FILTERS + 1)).unwrap_err();
        assert!(
            matches!(&e, CodecError::Invalid(m) if m.contains("at most 32")),
            "{e}"
        );
    }
}
