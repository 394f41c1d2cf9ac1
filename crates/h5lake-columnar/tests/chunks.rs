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

/// A read of some members fetches the footer and those members' columns
/// only, and decodes them in place; a column that was not fetched is an
/// error, never made-up values.
#[test]
fn members_decode_from_their_column_ranges_only() {
    use h5lake_columnar::{Footer, FooterRead, Parts};
    let dt = table_type();
    // Enough rows for several data pages per column.
    let n = 300_000;
    let raw = sample(&dt, n);
    let stored = Bytes::from(encode_chunk(&dt, &raw, n, Compression::Zstd(1)).unwrap());
    let len = stored.len() as u64;
    // A tail too short for the footer asks for the footer's range.
    let footer = match Footer::from_tail(len, &stored[stored.len() - 16..]).unwrap() {
        FooterRead::Need(r) => {
            Footer::parse(len, &stored[r.start as usize..r.end as usize]).unwrap()
        }
        FooterRead::Parsed(_) => panic!("a 16-byte tail cannot hold the footer"),
    };
    assert_eq!(footer.rows(), n as i64);
    let size = dt.fixed_size().unwrap();
    for names in [
        vec!["f8be", "i8"],
        vec!["inner", "s"],
        vec!["arr"],
        vec!["u64"],
    ] {
        let Datatype::Compound { fields, .. } = &dt else {
            unreachable!()
        };
        let picked: Vec<_> = names
            .iter()
            .map(|n| fields.iter().find(|f| f.name == *n).unwrap())
            .collect();
        let proj = Datatype::from_json(&json!({"class": "H5T_COMPOUND", "fields":
            picked.iter().map(|f| json!({"name": f.name, "type": f.dtype.to_json()})).collect::<Vec<_>>()}))
        .unwrap();
        let ranges = footer.ranges(&proj).unwrap();
        let fetched: u64 = ranges.iter().map(|r| r.end - r.start).sum();
        assert!(fetched < len / 2, "{names:?}: {fetched} of {len} bytes");
        let parts = Parts::new(
            len,
            ranges
                .iter()
                .map(|r| (r.start, stored.slice(r.start as usize..r.end as usize)))
                .collect(),
        );
        let psize = proj.fixed_size().unwrap();
        let mut out = vec![0xAAu8; n * psize];
        footer.decode_into(&proj, &parts, n, &[], &mut out).unwrap();
        for row in [0, 1, n / 2, n - 1] {
            let mut at = 0;
            for f in &picked {
                let w = f.dtype.fixed_size().unwrap();
                assert_eq!(
                    &out[row * psize + at..row * psize + at + w],
                    &raw[row * size + f.offset..row * size + f.offset + w],
                    "{names:?} row {row} member {}",
                    f.name
                );
                at += w;
            }
        }
        // Without the columns' bytes there is nothing to decode.
        let err = footer
            .decode_into(&proj, &Parts::new(len, vec![]), n, &[], &mut out)
            .unwrap_err();
        assert!(err.to_string().contains("not read"), "{err}");
    }
}

/// Parquet written by other tools: nullable columns (a null reads as the
/// fill value), dictionary-encoded pages, several row groups, rows fewer
/// than the chunk (the rest is fill).
#[test]
fn other_writers_columns_decode_with_nulls_as_fill() {
    use arrow_array::{Float64Array, Int32Array, RecordBatch};
    use arrow_schema::{DataType, Field, Schema};
    use h5lake_columnar::{Footer, Parts};
    use parquet::arrow::ArrowWriter;
    use parquet::file::properties::WriterProperties;
    use std::sync::Arc;
    let schema = Arc::new(Schema::new(vec![
        Field::new("x", DataType::Float64, true),
        Field::new("id", DataType::Int32, false),
    ]));
    let rows: usize = 5000;
    let x: Float64Array = (0..rows)
        .map(|i| (i % 7 != 0).then_some(i as f64 * 0.5))
        .collect();
    let id: Int32Array = (0..rows).map(|i| (i % 3) as i32).collect();
    let batch = RecordBatch::try_new(schema.clone(), vec![Arc::new(x), Arc::new(id)]).unwrap();
    let props = WriterProperties::builder()
        .set_max_row_group_row_count(Some(1500))
        .set_dictionary_enabled(true)
        .build();
    let mut file = Vec::new();
    let mut w = ArrowWriter::try_new(&mut file, schema, Some(props)).unwrap();
    w.write(&batch).unwrap();
    w.close().unwrap();
    let dt = Datatype::from_json(&json!({"class": "H5T_COMPOUND", "fields": [
        {"name": "id", "type": "H5T_STD_I32LE"},
        {"name": "x", "type": "H5T_IEEE_F64LE"}]}))
    .unwrap();
    let mut fill = (-1i32).to_le_bytes().to_vec();
    fill.extend_from_slice(&f64::NAN.to_le_bytes());
    let n = rows + 10;
    let mut out = vec![0u8; n * 12];
    let footer = Footer::of_whole(&file).unwrap();
    footer
        .decode_into(&dt, &Parts::whole(Bytes::from(file)), n, &fill, &mut out)
        .unwrap();
    for i in 0..n {
        let id = i32::from_le_bytes(out[i * 12..i * 12 + 4].try_into().unwrap());
        let x = f64::from_le_bytes(out[i * 12 + 4..i * 12 + 12].try_into().unwrap());
        if i >= rows {
            assert_eq!(id, -1);
            assert!(x.is_nan());
            continue;
        }
        assert_eq!(id, (i % 3) as i32, "row {i}");
        if i % 7 == 0 {
            assert!(x.is_nan(), "row {i}: a null reads as the fill value");
        } else {
            assert_eq!(x, i as f64 * 0.5, "row {i}");
        }
    }
}

/// A row group of a file of several, or rows of it, into a buffer of just
/// those rows: plain pages copied (several per row group), nullable and
/// dictionary columns through Arrow.
#[test]
fn rows_of_one_row_group_decode_into_their_place() {
    use arrow_array::{Float64Array, Int64Array, RecordBatch};
    use arrow_schema::{DataType, Field, Schema};
    use h5lake_columnar::{Footer, Parts};
    use parquet::arrow::ArrowWriter;
    use parquet::file::properties::WriterProperties;
    use std::sync::Arc;
    let schema = Arc::new(Schema::new(vec![
        Field::new("v", DataType::Int64, false),
        Field::new("x", DataType::Float64, true),
    ]));
    let rows: usize = 50_000;
    let v: Int64Array = (0..rows as i64).map(|i| i * 3 - 7).collect();
    let x: Float64Array = (0..rows)
        .map(|i| (i % 5 != 0).then_some(i as f64 / 4.0))
        .collect();
    let batch = RecordBatch::try_new(schema.clone(), vec![Arc::new(v), Arc::new(x)]).unwrap();
    let props = WriterProperties::builder()
        .set_max_row_group_row_count(Some(20_000))
        .set_data_page_row_count_limit(3_000)
        .set_write_batch_size(1_000)
        .set_column_dictionary_enabled("v".into(), false)
        .build();
    let mut file = Vec::new();
    let mut w = ArrowWriter::try_new(&mut file, schema, Some(props)).unwrap();
    w.write(&batch).unwrap();
    w.close().unwrap();
    let footer = Footer::of_whole(&file).unwrap();
    assert_eq!(footer.row_group_rows(), [20_000, 20_000, 10_000]);
    let parts = Parts::whole(Bytes::from(file));
    let fill: Vec<u8> = [(-1i64).to_le_bytes(), f64::NAN.to_le_bytes()].concat();
    let both = Datatype::from_json(&json!({"class": "H5T_COMPOUND", "fields": [
        {"name": "v", "type": "H5T_STD_I64LE"},
        {"name": "x", "type": "H5T_IEEE_F64LE"}]}))
    .unwrap();
    let only_v = Datatype::from_json(&json!({"class": "H5T_COMPOUND", "fields": [
        {"name": "v", "type": "H5T_STD_I64LE"}]}))
    .unwrap();
    for (rg, span) in [
        (0, 0..20_000),
        (1, 2_999..17_001),
        (2, 9_999..10_000),
        (1, 5..5),
    ] {
        let first = rg * 20_000;
        let mut out = vec![0xAAu8; span.len() * 16];
        footer
            .decode_row_group_into(&both, &parts, rg, span.clone(), &fill, &mut out)
            .unwrap();
        let mut just_v = vec![0xAAu8; span.len() * 8];
        footer
            .decode_row_group_into(&only_v, &parts, rg, span.clone(), &[], &mut just_v)
            .unwrap();
        for (k, i) in span.clone().enumerate() {
            let row = first + i;
            let v = i64::from_le_bytes(out[k * 16..k * 16 + 8].try_into().unwrap());
            let x = f64::from_le_bytes(out[k * 16 + 8..k * 16 + 16].try_into().unwrap());
            assert_eq!(v, row as i64 * 3 - 7, "row group {rg} row {i}");
            assert_eq!(&just_v[k * 8..k * 8 + 8], &out[k * 16..k * 16 + 8]);
            if row % 5 == 0 {
                assert!(x.is_nan(), "row {row}: a null reads as the fill value");
            } else {
                assert_eq!(x, row as f64 / 4.0, "row {row}");
            }
        }
    }
    // Rows past the row group, or a buffer of another size, are refused.
    let mut out = vec![0u8; 16 * 11];
    assert!(footer
        .decode_row_group_into(&both, &parts, 2, 9_990..10_001, &fill, &mut out)
        .is_err());
    assert!(footer
        .decode_row_group_into(&both, &parts, 0, 0..10, &fill, &mut out)
        .is_err());
    assert!(footer
        .decode_row_group_into(&both, &parts, 3, 0..11, &fill, &mut out)
        .is_err());
}

#[test]
fn fixed_length_strings_are_stored_unpadded_and_old_padded_chunks_still_read() {
    use arrow_array::{Array, BinaryArray, FixedSizeBinaryArray, RecordBatch};
    use std::sync::Arc;
    let dt = Datatype::from_json(&json!({"class": "H5T_COMPOUND", "fields": [
        {"name": "s", "type": {"class": "H5T_STRING", "charSet": "H5T_CSET_ASCII",
                               "strPad": "H5T_STR_NULLPAD", "length": 5}}]}))
    .unwrap();
    let raw = [&b"alpha"[..], b"\0ab\0\0", b"\0\0\0\0\0", b"x\0\0\0\0"].concat();
    let stored = encode_chunk(&dt, &raw, 4, Compression::None).unwrap();
    // What other tools see: the text without its trailing NULs.
    let footer = h5lake_columnar::Footer::of_whole(&stored).unwrap();
    let batch = footer
        .read_batch(
            &dt,
            &h5lake_columnar::Parts::whole(Bytes::from(stored.clone())),
            0..4,
        )
        .unwrap();
    let col = batch
        .column(0)
        .as_any()
        .downcast_ref::<BinaryArray>()
        .unwrap();
    let seen: Vec<&[u8]> = (0..4).map(|i| col.value(i)).collect();
    assert_eq!(seen, [&b"alpha"[..], b"\0ab", b"", b"x"]);
    assert_eq!(decode_chunk(&dt, Bytes::from(stored), 4, &[]).unwrap(), raw);
    // A chunk written before (the strings padded, as fixed-size binary).
    let old = FixedSizeBinaryArray::try_from_iter(raw.chunks(5)).unwrap();
    let schema = Arc::new(arrow_schema::Schema::new(vec![arrow_schema::Field::new(
        "s",
        old.data_type().clone(),
        false,
    )]));
    let batch = RecordBatch::try_new(schema, vec![Arc::new(old)]).unwrap();
    let stored = h5lake_columnar::encode_batch(&dt, &batch, Compression::None).unwrap();
    assert_eq!(decode_chunk(&dt, Bytes::from(stored), 4, &[]).unwrap(), raw);
}

#[test]
fn a_string_page_whose_lengths_run_past_it_is_refused() {
    let dt = Datatype::from_json(&json!({"class": "H5T_COMPOUND", "fields": [
        {"name": "s", "type": {"class": "H5T_STRING", "charSet": "H5T_CSET_ASCII",
                               "strPad": "H5T_STR_NULLPAD", "length": 5}}]}))
    .unwrap();
    let raw = [&b"alpha"[..], b"beta\0", b"gamma"].concat();
    let mut stored = encode_chunk(&dt, &raw, 3, Compression::None).unwrap();
    // The plain page holds each value after its 4-byte length.
    let value = b"\x04\x00\x00\x00beta";
    let at = stored
        .windows(value.len())
        .position(|w| w == value)
        .expect("an uncompressed plain page");
    assert_eq!(
        decode_chunk(&dt, Bytes::from(stored.clone()), 3, &[]).unwrap(),
        raw
    );
    stored[at..at + 4].copy_from_slice(&0x7fff_0000u32.to_le_bytes());
    let err = decode_chunk(&dt, Bytes::from(stored), 3, &[]).unwrap_err();
    assert!(err.to_string().contains("bytes"), "{err}");
}

#[test]
fn float_columns_declare_an_order_every_reader_knows_with_their_bounds() {
    use parquet::basic::{ColumnOrder, SortOrder};
    use parquet::file::reader::{FileReader, SerializedFileReader};
    let dt = Datatype::from_json(&json!({"class": "H5T_COMPOUND", "fields": [
        {"name": "x", "type": "H5T_IEEE_F32LE"}, {"name": "y", "type": "H5T_IEEE_F64LE"},
        {"name": "i", "type": "H5T_STD_I32LE"}]}))
    .unwrap();
    let n = 1000;
    for c in [Compression::None, Compression::Zstd(3)] {
        for nan_in_y in [false, true] {
            let mut raw = Vec::new();
            for r in 0..n {
                raw.extend((r as f32 * 0.5).to_le_bytes());
                let y = if nan_in_y && r % 7 == 0 {
                    f64::NAN
                } else {
                    -(r as f64)
                };
                raw.extend(y.to_le_bytes());
                raw.extend((r as i32).to_le_bytes());
            }
            let stored = encode_chunk(&dt, &raw, n, c).unwrap();
            let reader = SerializedFileReader::new(Bytes::from(stored.clone())).unwrap();
            let md = reader.metadata();
            let orders = md.file_metadata().column_orders().unwrap();
            let defined = ColumnOrder::TYPE_DEFINED_ORDER(SortOrder::SIGNED);
            // x has no NaN: every reader may prune on it. y with NaNs keeps
            // the total order (pyarrow 26 would prune away rows is_nan(y)
            // keeps); without, it is declared as x.
            assert_eq!(orders[0], defined);
            let y = if nan_in_y {
                ColumnOrder::IEEE_754_TOTAL_ORDER
            } else {
                defined
            };
            assert_eq!(orders[1], y);
            assert_eq!(orders[2], defined);
            let x = md.row_group(0).column(0).statistics().unwrap();
            assert!(x.min_bytes_opt().is_some() && x.max_bytes_opt().is_some());
            // The values are what they were: only the footer's order changed.
            assert_eq!(decode_chunk(&dt, Bytes::from(stored), n, &[]).unwrap(), raw);
        }
    }
}
