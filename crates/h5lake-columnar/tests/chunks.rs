//! Chunks through Parquet and back, byte for byte.

use bytes::Bytes;
use h5lake_columnar::{decode_chunk, encode_chunk, Compression};
use h5lake_types::Datatype;
use serde_json::json;

fn table_type() -> Datatype {
    Datatype::from_json(&json!({"class": "H5T_COMPOUND", "fields": [
        {"name": "i8", "type": "H5T_STD_I8LE"},
        {"name": "be", "type": "H5T_STD_I32BE"},
        {"name": "u64", "type": "H5T_STD_U64LE"},
        {"name": "f2", "type": "H5T_IEEE_F16LE"},
        {"name": "f8be", "type": "H5T_IEEE_F64BE"},
        {"name": "s", "type": {"class": "H5T_STRING", "charSet": "H5T_CSET_ASCII",
                               "strPad": "H5T_STR_NULLPAD", "length": 5}},
        {"name": "arr", "type": {"class": "H5T_ARRAY", "dims": [2, 3], "base": "H5T_IEEE_F32LE"}},
        {"name": "inner", "type": {"class": "H5T_COMPOUND", "fields": [
            {"name": "a", "type": "H5T_STD_I16LE"},
            {"name": "b", "type": "H5T_STD_U8LE"}]}}
    ]}))
    .unwrap()
}

fn sample(dt: &Datatype, n: usize) -> Vec<u8> {
    let size = dt.fixed_size().unwrap();
    (0..n * size).map(|i| (i * 7 % 251) as u8).collect()
}

#[test]
fn every_member_type_round_trips_with_every_codec() {
    let dt = table_type();
    for n in [1usize, 17, 1000] {
        let raw = sample(&dt, n);
        for c in [
            Compression::None,
            Compression::Snappy,
            Compression::Gzip(4),
            Compression::Lz4,
            Compression::Zstd(3),
        ] {
            let stored = encode_chunk(&dt, &raw, n, c).unwrap();
            assert_eq!(&stored[..4], b"PAR1");
            let back = decode_chunk(&dt, Bytes::from(stored), n, &[]).unwrap();
            assert_eq!(back, raw, "{c:?}, {n} rows");
        }
    }
}

#[test]
fn bad_input_is_refused_by_name() {
    let dt = table_type();
    let raw = sample(&dt, 4);
    assert!(encode_chunk(&dt, &raw[1..], 4, Compression::None).is_err());
    let stored = encode_chunk(&dt, &raw, 4, Compression::None).unwrap();
    // fewer rows than the chunk: the rest reads as fill
    let padded = decode_chunk(&dt, Bytes::from(stored.clone()), 6, &[]).unwrap();
    assert_eq!(&padded[..raw.len()], &raw[..]);
    assert!(padded[raw.len()..].iter().all(|&b| b == 0) && padded.len() == raw.len() / 4 * 6);
    let err = decode_chunk(&dt, Bytes::from(stored.clone()), 3, &[]).unwrap_err();
    assert!(
        err.to_string().contains("4 rows, expected at most 3"),
        "{err}"
    );
    let err = decode_chunk(
        &dt,
        Bytes::from(stored[..stored.len() / 2].to_vec()),
        4,
        &[],
    )
    .unwrap_err();
    assert!(err.to_string().contains("parquet"), "{err}");
    let vlen = Datatype::from_json(&json!({"class": "H5T_COMPOUND", "fields": [
        {"name": "inner", "type": {"class": "H5T_COMPOUND", "fields": [
            {"name": "s", "type": {"class": "H5T_STRING", "charSet": "H5T_CSET_UTF8",
                                   "strPad": "H5T_STR_NULLTERM", "length": "H5T_VARIABLE"}}]}}]}))
    .unwrap();
    let err = h5lake_columnar::check_type(&vlen).unwrap_err();
    assert!(err.to_string().contains("variable-length"), "{err}");
    let err = h5lake_columnar::check_type(&Datatype::from_json(&json!("H5T_STD_I32LE")).unwrap())
        .unwrap_err();
    assert!(err.to_string().contains("compound"), "{err}");
    let err = Compression::from_filters(&json!([{"class": "H5Z_FILTER_SCALEOFFSET", "id": 6}]))
        .unwrap_err();
    assert!(
        err.to_string().contains("gzip, zstd, lz4 or snappy"),
        "{err}"
    );
}

#[test]
fn variable_length_members_round_trip() {
    let dt = Datatype::from_json(&json!({"class": "H5T_COMPOUND", "fields": [
        {"name": "id", "type": "H5T_STD_I32LE"},
        {"name": "name", "type": {"class": "H5T_STRING", "charSet": "H5T_CSET_UTF8",
                                  "strPad": "H5T_STR_NULLTERM", "length": "H5T_VARIABLE"}},
        {"name": "raw", "type": {"class": "H5T_STRING", "charSet": "H5T_CSET_ASCII",
                                 "strPad": "H5T_STR_NULLTERM", "length": "H5T_VARIABLE"}},
        {"name": "hits", "type": {"class": "H5T_VLEN", "base": "H5T_IEEE_F64BE"}}
    ]}))
    .unwrap();
    let n = 50;
    let mut raw = Vec::new();
    for i in 0..n {
        raw.extend_from_slice(&(i as i32).to_le_bytes());
        let name = "é".repeat(i % 4);
        raw.extend_from_slice(&(name.len() as u32).to_le_bytes());
        raw.extend_from_slice(name.as_bytes());
        let bytes: Vec<u8> = (0..i % 3).map(|k| 200 + k as u8).collect();
        raw.extend_from_slice(&(bytes.len() as u32).to_le_bytes());
        raw.extend_from_slice(&bytes);
        let hits: Vec<u8> = (0..i % 5)
            .flat_map(|k| (k as f64 * 1.5).to_be_bytes())
            .collect();
        raw.extend_from_slice(&(hits.len() as u32).to_le_bytes());
        raw.extend_from_slice(&hits);
    }
    let stored = encode_chunk(&dt, &raw, n, Compression::Zstd(1)).unwrap();
    let back = decode_chunk(&dt, Bytes::from(stored), n, &[]).unwrap();
    assert_eq!(back, raw);
}
