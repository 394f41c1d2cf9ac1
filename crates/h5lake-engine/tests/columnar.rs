//! Columnar datasets (chunks as Parquet objects) read and write exactly as
//! row-layout ones do, for every selection and partial write.

use std::sync::Arc;

mod common;

use h5lake_engine::{Domain, OpenMode, Selection};
use h5lake_store::{MemoryStore, Store};
use serde_json::{json, Value};

fn table_type() -> Value {
    json!({"class": "H5T_COMPOUND", "fields": [
        {"name": "x", "type": "H5T_IEEE_F32LE"},
        {"name": "id", "type": "H5T_STD_I64BE"},
        {"name": "tag", "type": {"class": "H5T_STRING", "charSet": "H5T_CSET_ASCII",
                                 "strPad": "H5T_STR_NULLPAD", "length": 3}},
        {"name": "v", "type": {"class": "H5T_ARRAY", "dims": [2], "base": "H5T_STD_U16LE"}}
    ]})
}

const ELEM: usize = 4 + 8 + 3 + 4;

fn make(dom: &Domain, columnar: bool, filters: Value) -> String {
    let mut cprops = json!({"layout": {"class": "H5D_CHUNKED", "dims": [7, 4]}, "filters": filters,
                            "fillValue": [1.5, 9, "abc", [1, 2]]});
    if columnar {
        cprops["h5lake"] = json!({"chunkFormat": "parquet"});
    }
    dom.create_dataset(
        table_type(),
        json!({"class": "H5S_SIMPLE", "dims": [20, 10], "maxdims": ["H5S_UNLIMITED", 10]}),
        cprops,
    )
    .unwrap()
}

fn read(dom: &Domain, id: &str, sel: &Selection) -> Vec<u8> {
    let mut out = vec![0u8; sel.num_elements() as usize * ELEM];
    dom.read(id, sel, &mut out).unwrap();
    out
}

fn bytes(n: usize, seed: usize) -> Vec<u8> {
    (0..n * ELEM)
        .map(|i| ((i * 31 + seed) % 253) as u8)
        .collect()
}

#[test]
fn columnar_reads_and_writes_as_row_layout_does() {
    let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
    let dom = Domain::open(store.clone(), "", OpenMode::Truncate, "mem".into()).unwrap();
    for filters in [
        json!([]),
        json!([{"class": "H5Z_FILTER_DEFLATE", "id": 1, "level": 5}]),
    ] {
        let row = make(&dom, false, filters.clone());
        let col = make(&dom, true, filters);
        assert!(dom.dataset_meta(&col).unwrap().is_columnar());
        assert!(!dom.dataset_meta(&row).unwrap().is_columnar());
        let writes: Vec<Selection> = vec![
            Selection::from_slices(&[(0, 20, 1), (0, 10, 1)]),
            Selection::from_slices(&[(3, 5, 2), (1, 6, 1)]),
            Selection::from_slices(&[(0, 1, 1), (9, 1, 1)]),
            Selection::from_slices(&[(14, 6, 1), (0, 4, 1)]),
        ];
        for (k, sel) in writes.iter().enumerate() {
            let n = sel.num_elements() as usize;
            let data = bytes(n, k);
            dom.write(&row, sel, &data).unwrap();
            dom.write(&col, sel, &data).unwrap();
            for rsel in [
                Selection::from_slices(&[(0, 20, 1), (0, 10, 1)]),
                Selection::from_slices(&[(1, 6, 3), (2, 4, 2)]),
                Selection::from_slices(&[(19, 1, 1), (9, 1, 1)]),
            ] {
                assert_eq!(read(&dom, &row, &rsel), read(&dom, &col, &rsel));
            }
        }
        // some members: only their columns are decoded, in the order asked
        for names in [vec!["id"], vec!["v", "x"], vec!["tag", "id", "x", "v"]] {
            let names: Vec<String> = names.into_iter().map(String::from).collect();
            let sel = Selection::from_slices(&[(2, 15, 1), (1, 8, 1)]);
            let size: usize = names
                .iter()
                .map(|n| match n.as_str() {
                    "x" | "v" => 4,
                    "id" => 8,
                    _ => 3,
                })
                .sum();
            let mut a = vec![0u8; 15 * 8 * size];
            let mut b = a.clone();
            dom.read_fields(&row, &sel, Some(&names), &mut a).unwrap();
            dom.read_fields(&col, &sel, Some(&names), &mut b).unwrap();
            assert_eq!(a, b, "{names:?}");
        }
        let mut out = vec![0u8; 8];
        let err = dom
            .read_fields(
                &col,
                &Selection::from_slices(&[(0, 1, 1), (0, 1, 1)]),
                Some(&["nope".into()]),
                &mut out,
            )
            .unwrap_err();
        assert!(err.to_string().contains("no field \"nope\""), "{err}");
        // resize keeps what is there, and new rows read as the fill value
        dom.resize(&row, &[30, 10]).unwrap();
        dom.resize(&col, &[30, 10]).unwrap();
        let all = Selection::from_slices(&[(0, 30, 1), (0, 10, 1)]);
        assert_eq!(read(&dom, &row, &all), read(&dom, &col, &all));
    }
    // every chunk object of a columnar dataset is a Parquet file
    let keys = store.list_prefix("").unwrap();
    let parquet = keys
        .iter()
        .filter(|k| {
            let b = store.get(k).unwrap().unwrap();
            b.len() > 8 && &b[..4] == b"PAR1" && &b[b.len() - 4..] == b"PAR1"
        })
        .count();
    assert!(parquet >= 2 * 9, "{parquet} Parquet chunks");
}

#[test]
fn columnar_refuses_what_it_cannot_hold() {
    let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
    let dom = Domain::open(store, "", OpenMode::Truncate, "mem".into()).unwrap();
    let own = json!({"chunkFormat": "parquet"});
    let err = dom
        .create_dataset(
            json!("H5T_STD_I32LE"),
            json!({"class": "H5S_SIMPLE", "dims": [4]}),
            json!({"layout": {"class": "H5D_CHUNKED", "dims": [2]}, "h5lake": own}),
        )
        .unwrap_err();
    assert!(err.to_string().contains("compound"), "{err}");
    let err = dom
        .create_dataset(
            table_type(),
            json!({"class": "H5S_SIMPLE", "dims": [4]}),
            json!({"layout": {"class": "H5D_CONTIGUOUS"}, "h5lake": own}),
        )
        .unwrap_err();
    assert!(err.to_string().contains("chunked"), "{err}");
    let err = dom
        .create_dataset(
            table_type(),
            json!({"class": "H5S_SIMPLE", "dims": [4]}),
            json!({"layout": {"class": "H5D_CHUNKED", "dims": [2]}, "h5lake": own,
                   "filters": [{"class": "H5Z_FILTER_FLETCHER32", "id": 3}]}),
        )
        .unwrap_err();
    assert!(err.to_string().contains("Parquet"), "{err}");
}

#[test]
fn a_few_rows_read_only_the_pages_that_hold_them() {
    // A number, a fixed-length string (stored without its padding, as
    // byte arrays) and a number: 28 bytes a row; chunks of 100,000 rows
    // are about 2.3 MB, written in pages of at most 20,000 rows.
    let store = Arc::new(common::TestStore::default());
    let dom = Domain::open(store.clone(), "", OpenMode::Truncate, "mem".into()).unwrap();
    let t = json!({"class": "H5T_COMPOUND", "fields": [
        {"name": "x", "type": "H5T_IEEE_F64LE"},
        {"name": "name", "type": {"class": "H5T_STRING", "charSet": "H5T_CSET_ASCII",
                                  "strPad": "H5T_STR_NULLPAD", "length": 16}},
        {"name": "id", "type": "H5T_STD_I32LE"}]});
    let id = dom
        .create_dataset(
            t,
            json!({"class": "H5S_SIMPLE", "dims": [250_000]}),
            json!({"layout": {"class": "H5D_CHUNKED", "dims": [100_000]},
                   "h5lake": {"chunkFormat": "parquet"}}),
        )
        .unwrap();
    const ROW: usize = 28;
    let row = |i: usize| {
        let mut r = (i as f64 / 2.0).to_le_bytes().to_vec();
        // Names of every length up to the member's, some with a NUL inside.
        let mut name = [0u8; 16];
        let text = format!("p{i}\0{}", "z".repeat(i % 9));
        let k = (i % 17).min(text.len()).min(16);
        name[..k].copy_from_slice(&text.as_bytes()[..k]);
        r.extend(name);
        r.extend((i as i32 * 3).to_le_bytes());
        r
    };
    let all: Vec<u8> = (0..250_000).flat_map(row).collect();
    dom.write(&id, &Selection::all(&[250_000]), &all).unwrap();
    dom.flush().unwrap();
    let mut whole = vec![0u8; all.len()];
    dom.read(&id, &Selection::all(&[250_000]), &mut whole)
        .unwrap();
    assert!(whole == all, "the whole table reads back");
    for (start, n) in [
        (50_000usize, 10usize),
        (119_990, 20),
        (0, 1),
        (99_999, 2),
        (249_990, 10),
        (210_000, 40_000),
    ] {
        let before = store.bytes_read();
        let sel = Selection::Orthogonal(vec![h5lake_engine::DimSel::Slice {
            start: start as u64,
            count: n as u64,
            step: 1,
        }]);
        let mut out = vec![0u8; n * ROW];
        dom.read(&id, &sel, &mut out).unwrap();
        assert!(
            out == all[start * ROW..(start + n) * ROW],
            "rows {start}+{n}"
        );
        let read = store.bytes_read() - before;
        if n <= 40 {
            // per chunk touched, its tail (64 KiB) and a page or two per
            // member, not the chunk's 2.3 MB
            let chunks = (start + n - 1) / 100_000 - start / 100_000 + 1;
            assert!(
                read < chunks * 700_000,
                "rows {start}+{n}: {read} bytes read"
            );
        }
    }
    let mut whole = vec![0u8; all.len()];
    dom.read(&id, &Selection::all(&[250_000]), &mut whole)
        .unwrap();
    assert!(whole == all, "the whole table reads back");
}
