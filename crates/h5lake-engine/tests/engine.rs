//! End-to-end engine tests on the memory and local backends: metadata,
//! the chunked data path against a brute-force model, and concurrent writers.

mod common;

use std::sync::Arc;

use common::TestStore;

use h5lake_engine::{DimSel, Domain, EngineError, OpenMode, Selection};
use h5lake_store::{MemoryStore, Store};
use serde_json::json;

fn slices(s: &[(u64, u64, u64)]) -> Selection {
    Selection::from_slices(s)
}

fn mem_domain() -> Domain {
    let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
    Domain::open(store, "", OpenMode::Truncate, "mem".into()).unwrap()
}

fn i32_type() -> serde_json::Value {
    json!({"class": "H5T_INTEGER", "base": "H5T_STD_I32LE"})
}

fn make_2d(dom: &Domain, dims: [u64; 2], chunk: [u64; 2], filters: serde_json::Value) -> String {
    dom.create_dataset(
        i32_type(),
        json!({"class": "H5S_SIMPLE", "dims": dims, "maxdims": ["H5S_UNLIMITED", dims[1]]}),
        json!({"layout": {"class": "H5D_CHUNKED", "dims": chunk}, "filters": filters, "fillValue": -7}),
    )
    .unwrap()
}

fn to_bytes(v: &[i32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

fn from_bytes(b: &[u8]) -> Vec<i32> {
    b.chunks(4)
        .map(|c| i32::from_le_bytes(c.try_into().unwrap()))
        .collect()
}

#[test]
fn links_and_attributes_round_trip() {
    let dom = mem_domain();
    let root = dom.root_id().to_string();
    let g = dom.create_group(json!({})).unwrap();
    dom.link_create(&root, "g", json!({"class": "H5L_TYPE_HARD", "id": g}))
        .unwrap();
    let err = dom
        .link_create(&root, "g", json!({"class": "H5L_TYPE_HARD", "id": g}))
        .unwrap_err();
    assert!(matches!(err, EngineError::AlreadyExists(_)));
    dom.link_create(
        &root,
        "soft",
        json!({"class": "H5L_TYPE_SOFT", "h5path": "/g"}),
    )
    .unwrap();
    let names: Vec<String> = dom
        .links(&root)
        .unwrap()
        .into_iter()
        .map(|(n, _)| n)
        .collect();
    assert_eq!(names, ["g", "soft"]);
    assert!(matches!(
        dom.link_get(&root, "nope"),
        Err(EngineError::NotFound(_))
    ));
    dom.link_delete(&root, "soft").unwrap();
    assert!(matches!(
        dom.link_delete(&root, "soft"),
        Err(EngineError::NotFound(_))
    ));
    let attr = json!({"type": i32_type(), "shape": {"class": "H5S_SCALAR"}, "value": 3});
    dom.attr_create(&g, "a", attr.clone(), false).unwrap();
    assert!(matches!(
        dom.attr_create(&g, "a", attr.clone(), false),
        Err(EngineError::AlreadyExists(_))
    ));
    dom.attr_create(&g, "b", attr.clone(), false).unwrap();
    dom.attr_create(&g, "a", attr, true).unwrap();
    assert_eq!(dom.attr_names(&g).unwrap(), ["b", "a"]);
    assert_eq!(dom.attr_get(&g, "a").unwrap()["value"], 3);
    let bad = json!({"type": {"class": "H5T_NOPE"}, "shape": {"class": "H5S_SCALAR"}, "value": 1});
    assert!(dom.attr_create(&g, "c", bad, false).is_err());
    assert_eq!(
        dom.attr_names(&g).unwrap().len(),
        2,
        "a rejected call writes nothing"
    );
}

/// Brute-force model: the dataset as a dense Vec, compared after every op.
#[test]
fn selections_match_a_dense_model() {
    check_against_dense_model(mem_domain);
}

/// The same on local disk with the chunk cache off: whole-chunk reads go
/// from the files straight into the output (scattered reads).
#[test]
fn selections_match_a_dense_model_uncached_on_disk() {
    let dir = tempfile::tempdir().unwrap();
    let n = std::sync::atomic::AtomicUsize::new(0);
    check_against_dense_model(|| {
        let opts = h5lake_engine::DomainOptions {
            chunk_cache_bytes: 0,
            ..Default::default()
        };
        let p = dir.path().join(format!(
            "s{}.h5l",
            n.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
        ));
        Domain::open_local_with(&p, OpenMode::Truncate, &opts).unwrap()
    });
}

/// The batched read path (what S3 uses) against the model, with the chunk
/// cache on and off.
#[test]
fn selections_match_a_dense_model_batched() {
    let stores: std::sync::Mutex<Vec<Arc<TestStore>>> = Default::default();
    for cache in [h5lake_engine::DomainOptions::default().chunk_cache_bytes, 0] {
        check_against_dense_model(|| {
            let store = Arc::new(TestStore::batching());
            stores.lock().unwrap().push(store.clone());
            let opts = h5lake_engine::DomainOptions {
                chunk_cache_bytes: cache,
                ..Default::default()
            };
            Domain::open_with(store, "", OpenMode::Truncate, "batching".into(), &opts).unwrap()
        });
    }
    for s in stores.lock().unwrap().iter() {
        assert!(s.batches() > 0);
    }
}

fn check_against_dense_model(make: impl Fn() -> Domain) {
    for filters in [
        json!([]),
        json!([{"class": "H5Z_FILTER_SHUFFLE", "id": 2}, {"class": "H5Z_FILTER_DEFLATE", "id": 1, "level": 1}]),
    ] {
        let dom = make();
        let (rows, cols) = (23u64, 17u64);
        let id = make_2d(&dom, [rows, cols], [5, 4], filters);
        let mut model = vec![-7i32; (rows * cols) as usize];
        let mut rng = 12345u64;
        let mut next = |n: u64| {
            rng = rng
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (rng >> 33) % n.max(1)
        };
        for round in 0..60 {
            let sel_dim = |next: &mut dyn FnMut(u64) -> u64, extent: u64| -> DimSel {
                if next(3) == 0 {
                    let mut v: Vec<u64> = (0..extent).filter(|_| next(3) == 0).collect();
                    if v.is_empty() {
                        v.push(next(extent));
                    }
                    DimSel::Indices(v)
                } else {
                    let start = next(extent);
                    let step = 1 + next(4);
                    let count = 1 + next((extent - start - 1) / step + 1);
                    DimSel::Slice {
                        start,
                        count: count.min((extent - start - 1) / step + 1),
                        step,
                    }
                }
            };
            let sel = if round % 5 == 4 {
                // Whole dataset: whole chunks, edge chunks and the direct path.
                slices(&[(0, rows, 1), (0, cols, 1)])
            } else {
                Selection::Orthogonal(vec![sel_dim(&mut next, rows), sel_dim(&mut next, cols)])
            };
            let idx = |s: &DimSel| -> Vec<u64> {
                match s {
                    DimSel::Slice { start, count, step } => {
                        (0..*count).map(|k| start + k * step).collect()
                    }
                    DimSel::Indices(v) => v.clone(),
                }
            };
            let Selection::Orthogonal(ds) = &sel else {
                unreachable!()
            };
            let (ri, ci) = (idx(&ds[0]), idx(&ds[1]));
            if round % 2 == 0 {
                let vals: Vec<i32> = (0..ri.len() * ci.len())
                    .map(|k| (round * 1000 + k) as i32)
                    .collect();
                dom.write(&id, &sel, &to_bytes(&vals)).unwrap();
                let mut k = 0;
                for r in &ri {
                    for c in &ci {
                        model[(r * cols + c) as usize] = vals[k];
                        k += 1;
                    }
                }
            }
            let mut out = vec![0u8; ri.len() * ci.len() * 4];
            dom.read(&id, &sel, &mut out).unwrap();
            let got = from_bytes(&out);
            let want: Vec<i32> = ri
                .iter()
                .flat_map(|r| ci.iter().map(move |c| (r, c)))
                .map(|(r, c)| model[(r * cols + c) as usize])
                .collect();
            assert_eq!(got, want, "round {round} sel {sel:?}");
        }
        // Points agree with the model too.
        let coords = vec![0, 0, 22, 16, 7, 3, 7, 4];
        let mut out = vec![0u8; 16];
        dom.read(
            &id,
            &Selection::Points {
                rank: 2,
                coords: coords.clone(),
            },
            &mut out,
        )
        .unwrap();
        let want: Vec<i32> = coords
            .chunks(2)
            .map(|p| model[(p[0] * cols + p[1]) as usize])
            .collect();
        assert_eq!(from_bytes(&out), want);
    }
}

#[test]
fn appends_past_a_stale_extent_are_kept() {
    // Two writers append to one dataset: A planned its write of rows 4..6
    // with the extent it saw (6 rows), B has since extended to 8 and
    // written rows 6..8 into the same chunk. A's write covers every row of
    // that chunk A knew of, but must not replace the chunk unread.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.h5l");
    let a = Domain::open_local(&path, OpenMode::Truncate).unwrap();
    let id = make_2d(&a, [6, 2], [8, 2], json!([]));
    let b = Domain::open_local(&path, OpenMode::ReadWrite).unwrap();
    let stale = a.dataset_meta(&id).unwrap();
    b.extend(&id, 0, 2).unwrap();
    b.write(&id, &slices(&[(6, 2, 1), (0, 2, 1)]), &to_bytes(&[2; 4]))
        .unwrap();
    a.write_with(
        &stale,
        &slices(&[(0, 6, 1), (0, 2, 1)]),
        &to_bytes(&[1; 12]),
    )
    .unwrap();
    let mut out = vec![0u8; 16 * 4];
    b.read(&id, &slices(&[(0, 8, 1), (0, 2, 1)]), &mut out)
        .unwrap();
    assert_eq!(from_bytes(&out), [[1; 12].as_slice(), &[2; 4]].concat());
}

#[test]
fn resize_shows_fill_beyond_old_extent() {
    let dom = mem_domain();
    let id = make_2d(&dom, [6, 4], [4, 4], json!([]));
    dom.write(&id, &slices(&[(0, 6, 1), (0, 4, 1)]), &to_bytes(&[1; 24]))
        .unwrap();
    dom.resize(&id, &[3, 4]).unwrap();
    dom.resize(&id, &[8, 4]).unwrap();
    let mut out = vec![0u8; 32 * 4];
    dom.read(&id, &slices(&[(0, 8, 1), (0, 4, 1)]), &mut out)
        .unwrap();
    let v = from_bytes(&out);
    assert!(v[..12].iter().all(|&x| x == 1));
    assert!(v[12..].iter().all(|&x| x == -7), "{v:?}");
    assert!(matches!(
        dom.resize(&id, &[8, 5]),
        Err(EngineError::Invalid(_))
    ));
    let contiguous = dom
        .create_dataset(
            i32_type(),
            json!({"class": "H5S_SIMPLE", "dims": [3]}),
            json!({}),
        )
        .unwrap();
    assert!(matches!(
        dom.resize(&contiguous, &[4]),
        Err(EngineError::WrongType(_))
    ));
}

#[test]
fn a_shape_without_its_own_maximum_keeps_its_extent_as_maximum_when_shrunk() {
    // (As the VOL connector stores h5py's maxshape equal to the shape: a
    // shrink lowered the maximum, and the dataset could not grow back.)
    let dom = mem_domain();
    let id = dom
        .create_dataset(
            i32_type(),
            json!({"class": "H5S_SIMPLE", "dims": [4]}),
            json!({"layout": {"class": "H5D_CHUNKED", "dims": [2]}}),
        )
        .unwrap();
    dom.write(&id, &slices(&[(0, 4, 1)]), &to_bytes(&[5; 4]))
        .unwrap();
    dom.resize(&id, &[1]).unwrap();
    dom.resize(&id, &[4]).unwrap();
    assert!(matches!(
        dom.resize(&id, &[5]),
        Err(EngineError::Invalid(_))
    ));
    let mut out = vec![0u8; 16];
    dom.read(&id, &slices(&[(0, 4, 1)]), &mut out).unwrap();
    assert_eq!(from_bytes(&out)[0], 5);
    assert!(from_bytes(&out)[1..].iter().all(|&x| x != 5));
}

#[test]
fn bad_selections_and_buffers_are_rejected() {
    let dom = mem_domain();
    let id = make_2d(&dom, [4, 4], [2, 2], json!([]));
    let mut out = vec![0u8; 16];
    assert!(dom
        .read(&id, &slices(&[(0, 5, 1), (0, 1, 1)]), &mut out)
        .is_err());
    assert!(
        dom.read(&id, &slices(&[(0, 2, 1), (0, 1, 1)]), &mut out)
            .is_err(),
        "buffer size"
    );
    assert!(
        dom.read(&id, &slices(&[(0, 4, 1)]), &mut out).is_err(),
        "rank"
    );
    assert!(dom
        .write(
            &id,
            &Selection::Orthogonal(vec![DimSel::Indices(vec![1, 0]), DimSel::Indices(vec![0])]),
            &[0; 8]
        )
        .is_err());
    assert_eq!(
        dom.chunk_count(&id).unwrap(),
        0,
        "a rejected call writes nothing"
    );
}

#[test]
fn vlen_strings_round_trip() {
    check_vlen_strings(mem_domain());
    // The batched read path, with a never-written chunk (elements 6..8).
    let store = Arc::new(TestStore::batching());
    check_vlen_strings(Domain::open(store.clone(), "", OpenMode::Truncate, "b".into()).unwrap());
    assert!(store.batches() > 0);
}

fn check_vlen_strings(dom: Domain) {
    let id = dom
        .create_dataset(
            json!({"class": "H5T_STRING", "charSet": "H5T_CSET_UTF8", "strPad": "H5T_STR_NULLTERM", "length": "H5T_VARIABLE"}),
            json!({"class": "H5S_SIMPLE", "dims": [8]}),
            json!({"layout": {"class": "H5D_CHUNKED", "dims": [2]}}),
        )
        .unwrap();
    let vals: Vec<Vec<u8>> = ["a", "", "héllo", "x", "yz"]
        .iter()
        .map(|s| s.as_bytes().to_vec())
        .collect();
    dom.write_vlen(&id, &slices(&[(0, 5, 1)]), &vals).unwrap();
    dom.write_vlen(
        &id,
        &Selection::Orthogonal(vec![DimSel::Indices(vec![1, 4])]),
        &[b"B".to_vec(), b"E".to_vec()],
    )
    .unwrap();
    let got = dom.read_vlen(&id, &slices(&[(0, 5, 1)])).unwrap();
    assert_eq!(
        got,
        vec![
            b"a".to_vec(),
            b"B".to_vec(),
            "héllo".as_bytes().to_vec(),
            b"x".to_vec(),
            b"E".to_vec()
        ]
    );
    let got = dom.read_vlen(&id, &slices(&[(3, 5, 1)])).unwrap();
    assert_eq!(
        got,
        vec![b"x".to_vec(), b"E".to_vec(), vec![], vec![], vec![]]
    );
}

#[test]
fn concurrent_partial_writers_lose_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let dom = Arc::new(Domain::open_local(&dir.path().join("s.h5l"), OpenMode::Truncate).unwrap());
    // One chunk of 64 elements; 8 threads each write their own 8 elements,
    // one at a time, so every write is a partial read-modify-write.
    let id = dom
        .create_dataset(
            i32_type(),
            json!({"class": "H5S_SIMPLE", "dims": [64]}),
            json!({"layout": {"class": "H5D_CHUNKED", "dims": [64]}}),
        )
        .unwrap();
    let root = dom.root_id().to_string();
    std::thread::scope(|s| {
        for t in 0..8u64 {
            let (dom, id, root) = (dom.clone(), id.clone(), root.clone());
            s.spawn(move || {
                for k in 0..8u64 {
                    let i = t * 8 + k;
                    dom.write(&id, &slices(&[(i, 1, 1)]), &(i as i32 + 1).to_le_bytes())
                        .unwrap();
                }
                let g = dom.create_group(json!({})).unwrap();
                dom.link_create(
                    &root,
                    &format!("g{t}"),
                    json!({"class": "H5L_TYPE_HARD", "id": g}),
                )
                .unwrap();
            });
        }
    });
    let mut out = vec![0u8; 256];
    dom.read(&id, &slices(&[(0, 64, 1)]), &mut out).unwrap();
    assert_eq!(from_bytes(&out), (1..=64).collect::<Vec<i32>>());
    assert_eq!(dom.links(&root).unwrap().len(), 8);
}

#[test]
fn modes_follow_h5py() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("m.h5l");
    assert!(matches!(
        Domain::open_local(&p, OpenMode::Read),
        Err(EngineError::StoreNotFound(_))
    ));
    let d = Domain::open_local(&p, OpenMode::CreateExclusive).unwrap();
    let root = d.root_id().to_string();
    assert!(matches!(
        Domain::open_local(&p, OpenMode::CreateExclusive),
        Err(EngineError::StoreExists(_))
    ));
    assert_eq!(
        Domain::open_local(&p, OpenMode::Append).unwrap().root_id(),
        root
    );
    let r = Domain::open_local(&p, OpenMode::Read).unwrap();
    assert!(matches!(
        r.create_group(json!({})),
        Err(EngineError::ReadOnly(_))
    ));
    let w = Domain::open_local(&p, OpenMode::Truncate).unwrap();
    assert_ne!(w.root_id(), root);
    let file = dir.path().join("plain.h5");
    std::fs::write(&file, b"\x89HDF\r\n\x1a\n").unwrap();
    assert!(matches!(
        Domain::open_local(&file, OpenMode::Read),
        Err(EngineError::NotAStore(_))
    ));
}

#[test]
fn reads_the_hsds_fixture() {
    // Run-time CARGO_MANIFEST_DIR: a binary reused from another checkout
    // (shared CARGO_TARGET_DIR) must look beside this one.
    let manifest_dir = std::env::var("CARGO_MANIFEST_DIR")
        .unwrap_or_else(|_| env!("CARGO_MANIFEST_DIR").to_string());
    let fixture = std::path::Path::new(&manifest_dir)
        .join("../../../shared/fixtures/hsds-store/hsdstest/home/test_user1/fixture.h5");
    if !fixture.exists() {
        eprintln!("skipping: no shared fixture at {}", fixture.display());
        return;
    }
    let dom = Domain::open_local(&fixture, OpenMode::Read).unwrap();
    let links = dom.links(dom.root_id()).unwrap();
    let grid = links.iter().find(|(n, _)| n == "grid").unwrap().1["id"]
        .as_str()
        .unwrap()
        .to_string();
    let mut out = vec![0u8; 48 * 30 * 4];
    dom.read(&grid, &slices(&[(0, 48, 1), (0, 30, 1)]), &mut out)
        .unwrap();
    let v: Vec<f32> = out
        .chunks(4)
        .map(|c| f32::from_le_bytes(c.try_into().unwrap()))
        .collect();
    assert_eq!(v[0], 0.0);
    assert!((v[40 * 30 - 1] - 1.0).abs() < 1e-6);
    assert!(
        v[40 * 30..].iter().all(|&x| x == -1.0),
        "resized region shows the fill value"
    );
    let frames = links.iter().find(|(n, _)| n == "instrument").unwrap().1["id"]
        .as_str()
        .unwrap()
        .to_string();
    let det = dom.links(&frames).unwrap()[0].1["id"]
        .as_str()
        .unwrap()
        .to_string();
    let fr = dom.links(&det).unwrap()[0].1["id"]
        .as_str()
        .unwrap()
        .to_string();
    let mut out = vec![0u8; 5 * 64 * 48 * 2];
    dom.read(&fr, &slices(&[(0, 5, 1), (0, 64, 1), (0, 48, 1)]), &mut out)
        .unwrap();
    let v: Vec<u16> = out
        .chunks(2)
        .map(|c| u16::from_le_bytes(c.try_into().unwrap()))
        .collect();
    assert_eq!(
        v,
        (0..(64 * 48 * 5) as u32)
            .map(|x| x as u16)
            .collect::<Vec<_>>()
    );
    let names = links.iter().find(|(n, _)| n == "names").unwrap().1["id"]
        .as_str()
        .unwrap()
        .to_string();
    let s = dom.read_vlen(&names, &slices(&[(0, 4, 1)])).unwrap();
    assert_eq!(s[1], "béta".as_bytes());
}

#[test]
fn chunk_cache_never_hides_another_writer() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("c.h5l");
    let a = Domain::open_local(&p, OpenMode::Truncate).unwrap();
    let id = a
        .create_dataset(
            i32_type(),
            json!({"class": "H5S_SIMPLE", "dims": [8]}),
            json!({"layout": {"class": "H5D_CHUNKED", "dims": [4]}}),
        )
        .unwrap();
    a.write(&id, &slices(&[(0, 8, 1)]), &to_bytes(&[1; 8]))
        .unwrap();
    let mut out = vec![0u8; 32];
    a.read(&id, &slices(&[(0, 8, 1)]), &mut out).unwrap(); // now cached in `a`
    let b = Domain::open_local(&p, OpenMode::ReadWrite).unwrap();
    b.write(&id, &slices(&[(2, 4, 1)]), &to_bytes(&[9; 4]))
        .unwrap();
    a.read(&id, &slices(&[(0, 8, 1)]), &mut out).unwrap();
    assert_eq!(from_bytes(&out), vec![1, 1, 9, 9, 9, 9, 1, 1]);
    // A partial write through `a` builds on b's data, not on a stale copy.
    a.write(&id, &slices(&[(0, 1, 1)]), &to_bytes(&[5]))
        .unwrap();
    b.read(&id, &slices(&[(0, 8, 1)]), &mut out).unwrap();
    assert_eq!(from_bytes(&out), vec![5, 1, 9, 9, 9, 9, 1, 1]);
}

#[test]
fn compound_field_projection() {
    let dom = mem_domain();
    let t = json!({"class": "H5T_COMPOUND", "fields": [
        {"name": "a", "type": "H5T_STD_U8LE"},
        {"name": "b", "type": "H5T_STD_U16LE"},
        {"name": "c", "type": "H5T_STD_I32LE"}]});
    let id = dom
        .create_dataset(
            t,
            json!({"class": "H5S_SIMPLE", "dims": [10]}),
            json!({"layout": {"class": "H5D_CHUNKED", "dims": [3]}}),
        )
        .unwrap();
    let mut data = Vec::new();
    for i in 0..10u8 {
        data.push(i);
        data.extend_from_slice(&(u16::from(i) * 100).to_le_bytes());
        data.extend_from_slice(&(-i32::from(i)).to_le_bytes());
    }
    dom.write(&id, &slices(&[(0, 10, 1)]), &data).unwrap();
    let fields = vec!["c".to_string(), "a".to_string()];
    let mut out = vec![0u8; 4 * 5];
    dom.read_fields(&id, &slices(&[(1, 4, 2)]), Some(&fields), &mut out)
        .unwrap();
    let got: Vec<(i32, u8)> = out
        .chunks(5)
        .map(|e| (i32::from_le_bytes(e[..4].try_into().unwrap()), e[4]))
        .collect();
    assert_eq!(got, vec![(-1, 1), (-3, 3), (-5, 5), (-7, 7)]);
    let mut out = vec![0u8; 5];
    assert!(dom
        .read_fields(
            &id,
            &slices(&[(0, 1, 1)]),
            Some(&["nope".to_string()]),
            &mut out
        )
        .is_err());
    assert!(dom
        .read_fields(
            &id,
            &slices(&[(0, 1, 1)]),
            Some(&["a".to_string(), "a".to_string()]),
            &mut out
        )
        .is_err());
    let mut small = vec![0u8; 3];
    assert!(
        dom.read_fields(&id, &slices(&[(0, 1, 1)]), Some(&fields), &mut small)
            .is_err(),
        "buffer sized for the projection"
    );
}

#[test]
fn a_cancelled_call_stops_with_interrupted() {
    check_cancel(mem_domain());
    // The batched read path (S3's) honours the flag too.
    let store = Arc::new(TestStore::batching());
    check_cancel(Domain::open(store, "", OpenMode::Truncate, "b".into()).unwrap());
}

fn check_cancel(dom: Domain) {
    let id = make_2d(&dom, [64, 64], [8, 8], json!([]));
    let flag = Arc::new(std::sync::atomic::AtomicBool::new(true));
    let mut out = vec![0u8; 64 * 64 * 4];
    let r = h5lake_engine::cancel::with_cancel(flag, || {
        dom.read(&id, &slices(&[(0, 64, 1), (0, 64, 1)]), &mut out)
    });
    assert!(matches!(r, Err(EngineError::Interrupted)), "{r:?}");
    // Without the flag the same call works.
    dom.read(&id, &slices(&[(0, 64, 1), (0, 64, 1)]), &mut out)
        .unwrap();
}

#[test]
fn caller_chosen_ids_and_batches() {
    let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
    let root = "g-0123abcd-4567ef01-89ab-2345cd-ef6789";
    let opts = h5lake_engine::DomainOptions {
        root_id: Some(root.into()),
        owner: Some("alice".into()),
        ..Default::default()
    };
    let dom = Domain::open_with(
        store.clone(),
        "a",
        OpenMode::CreateExclusive,
        "a".into(),
        &opts,
    )
    .unwrap();
    assert_eq!(dom.root_id(), root);
    assert_eq!(dom.domain_doc().unwrap()["owner"], "alice");
    // the same root id cannot make a second domain
    let err = Domain::open_with(
        store.clone(),
        "b",
        OpenMode::CreateExclusive,
        "b".into(),
        &opts,
    )
    .unwrap_err();
    assert!(matches!(err, EngineError::AlreadyExists(_)));
    let bad = h5lake_engine::DomainOptions {
        root_id: Some("g-0123ABCD-4567ef01-89ab-2345cd-ef6789".into()),
        ..Default::default()
    };
    assert!(Domain::open_with(
        store.clone(),
        "c",
        OpenMode::CreateExclusive,
        "c".into(),
        &bad
    )
    .is_err());

    let g = "g-0123abcd-4567ef01-0000-000000-000001";
    assert_eq!(dom.create_group_with_id(Some(g), json!({})).unwrap(), g);
    assert!(matches!(
        dom.create_group_with_id(Some(g), json!({})),
        Err(EngineError::AlreadyExists(_))
    ));
    // wrong kind, wrong domain, malformed, upper case
    for id in [
        "d-0123abcd-4567ef01-0000-000000-000002",
        "g-ffffffff-4567ef01-0000-000000-000002",
        "g-nope",
        "g-0123abcd-4567ef01-0000-000000-00000A",
    ] {
        assert!(
            matches!(
                dom.create_group_with_id(Some(id), json!({})),
                Err(EngineError::Invalid(_))
            ),
            "{id}"
        );
    }
    let d = "d-0123abcd-4567ef01-0000-000000-000003";
    let shape = json!({"class": "H5S_SIMPLE", "dims": [4]});
    assert_eq!(
        dom.create_dataset_with_id(Some(d), i32_type(), shape, json!({}))
            .unwrap(),
        d
    );

    // a batch with one existing name writes nothing
    dom.links_create(
        root,
        vec![("x".into(), json!({"class": "H5L_TYPE_HARD", "id": g}))],
        false,
    )
    .unwrap();
    let batch = vec![
        ("y".to_string(), json!({"class": "H5L_TYPE_HARD", "id": d})),
        (
            "x".to_string(),
            json!({"class": "H5L_TYPE_SOFT", "h5path": "/y"}),
        ),
    ];
    assert!(dom.links_create(root, batch.clone(), false).is_err());
    assert_eq!(dom.links(root).unwrap().len(), 1);
    dom.links_create(root, batch, true).unwrap();
    let links = dom.links(root).unwrap();
    assert_eq!(links.len(), 2);
    assert_eq!(dom.link_get(root, "x").unwrap()["class"], "H5L_TYPE_SOFT");
    assert!(dom
        .links_delete(root, &["x".into(), "nope".into()])
        .is_err());
    dom.links_delete(root, &["x".into(), "y".into()]).unwrap();
    assert!(dom.links(root).unwrap().is_empty());

    let attr = |v: i32| json!({"type": i32_type(), "shape": {"class": "H5S_SCALAR"}, "value": v});
    dom.attrs_create(g, vec![("a".into(), attr(1)), ("b".into(), attr(2))], false)
        .unwrap();
    assert!(dom
        .attrs_create(g, vec![("c".into(), attr(3)), ("a".into(), attr(4))], false)
        .is_err());
    assert_eq!(dom.attr_names(g).unwrap(), vec!["a", "b"]);
    dom.attrs_delete(g, &["a".into(), "b".into()]).unwrap();
    assert!(dom.attr_names(g).unwrap().is_empty());
}

#[test]
fn small_reads_of_big_unfiltered_chunks_read_only_their_bytes() {
    // 64x128 chunks: a 3x5 selection is read with one ranged read of the
    // rows it spans. Values (and the fill value of a missing chunk) must be
    // those of a whole-chunk read.
    let dom = mem_domain();
    let id = make_2d(&dom, [200, 300], [64, 128], json!([]));
    let all: Vec<i32> = (0..200 * 128).collect();
    dom.write(&id, &slices(&[(0, 200, 1), (0, 128, 1)]), &to_bytes(&all))
        .unwrap();
    for (r, c, step) in [
        (5u64, 7u64, 1u64),
        (60, 120, 2),
        (130, 20, 3),
        (199, 127, 1),
    ] {
        let sel = slices(&[
            (r, 1 + (199 - r).min(2), 1),
            (c, 1 + ((127 - c) / step).min(4), step),
        ]);
        let mut out = vec![0u8; sel.num_elements() as usize * 4];
        dom.read(&id, &sel, &mut out).unwrap();
        let mut want = Vec::new();
        for i in r..r + 1 + (199 - r).min(2) {
            for k in 0..1 + ((127 - c) / step).min(4) {
                want.push((i * 128 + c + k * step) as i32);
            }
        }
        assert_eq!(from_bytes(&out), want, "rows {r}, cols {c} step {step}");
    }
    // Columns 128.. were never written: the fill value.
    let sel = slices(&[(10, 2, 1), (200, 3, 1)]);
    let mut out = vec![0u8; 24];
    dom.read(&id, &sel, &mut out).unwrap();
    assert_eq!(from_bytes(&out), vec![-7; 6]);
}

#[test]
fn small_writes_edit_local_chunks_in_place() {
    // On a local store a small write into an unfiltered chunk edits the
    // chunk file where it lies (same inode); a big one, or one into a
    // filtered chunk, rewrites it (new inode). The values are the same.
    use std::os::unix::fs::MetadataExt;
    let dir = tempfile::tempdir().unwrap();
    let dom = Domain::open_local(&dir.path().join("s.h5l"), OpenMode::Truncate).unwrap();
    let plain = make_2d(&dom, [64, 128], [64, 128], json!([]));
    let zipped = make_2d(
        &dom,
        [64, 128],
        [64, 128],
        json!([{"class": "H5Z_FILTER_DEFLATE", "id": 1, "level": 1}]),
    );
    // The chunk file (`0_0` in a directory named after the dataset's id),
    // held open: it keeps its name while it is edited in place, and loses it
    // when it is replaced (inode numbers cannot tell: they are recycled).
    let held = |id: &str| {
        let tail = &id[id.len() - 12..];
        let mut stack = vec![dir.path().to_path_buf()];
        while let Some(d) = stack.pop() {
            for e in std::fs::read_dir(&d).unwrap().flatten() {
                let p = e.path();
                if p.is_dir() {
                    stack.push(p);
                } else if p.ends_with("0_0") && p.to_string_lossy().contains(tail) {
                    return std::fs::File::open(&p).unwrap();
                }
            }
        }
        panic!("no chunk file for {id}")
    };
    let mut model: Vec<i32> = (0..64 * 128).collect();
    for id in [&plain, &zipped] {
        dom.write(id, &slices(&[(0, 64, 1), (0, 128, 1)]), &to_bytes(&model))
            .unwrap();
    }
    let block: Vec<i32> = (0..20).map(|v| -100 - v).collect();
    let points = Selection::Points {
        rank: 2,
        coords: vec![63, 127, 0, 0, 31, 64],
    };
    for (id, in_place) in [(&plain, true), (&zipped, false)] {
        let before = held(id);
        dom.write(id, &slices(&[(10, 4, 1), (7, 5, 2)]), &to_bytes(&block))
            .unwrap();
        dom.write(id, &points, &to_bytes(&[1, 2, 3])).unwrap();
        let kept = before.metadata().unwrap().nlink() == 1;
        assert_eq!(kept, in_place, "small writes of {id}");
        let mut want = model.clone();
        for (k, v) in block.iter().enumerate() {
            want[(10 + k / 5) * 128 + 7 + 2 * (k % 5)] = *v;
        }
        for (p, v) in [(63 * 128 + 127, 1), (0, 2), (31 * 128 + 64, 3)] {
            want[p] = v;
        }
        let mut out = vec![0u8; 64 * 128 * 4];
        dom.read(id, &slices(&[(0, 64, 1), (0, 128, 1)]), &mut out)
            .unwrap();
        assert_eq!(from_bytes(&out), want, "values of {id} after small writes");
        // 40 of 64 rows: more than a quarter of the chunk is rewritten whole.
        let before = held(id);
        dom.write(
            id,
            &slices(&[(0, 40, 1), (0, 128, 1)]),
            &to_bytes(&model[..40 * 128]),
        )
        .unwrap();
        assert_eq!(before.metadata().unwrap().nlink(), 0, "a big write of {id}");
    }
    // Only the point at row 63 outlives the big write.
    model[63 * 128 + 127] = 1;
    for id in [&plain, &zipped] {
        let mut out = vec![0u8; 64 * 128 * 4];
        dom.read(id, &slices(&[(0, 64, 1), (0, 128, 1)]), &mut out)
            .unwrap();
        assert_eq!(from_bytes(&out), model, "values of {id}");
    }
}

#[test]
fn removing_a_link_keeps_creation_order_where_the_group_tracks_it() {
    let dom = mem_domain();
    let root = dom.root_id().to_string();
    for (props, ordered) in [(json!({"CreateOrder": 1}), true), (json!({}), false)] {
        let g = dom.create_group(props).unwrap();
        for name in ["c", "a", "d", "b", "e"] {
            dom.link_create(&g, name, json!({"class": "H5L_TYPE_SOFT", "h5path": "/x"}))
                .unwrap();
        }
        dom.link_delete(&g, "c").unwrap();
        dom.link_rename(&g, "a", "z").unwrap();
        let names = dom.link_names(&g).unwrap();
        if ordered {
            assert_eq!(names, ["d", "b", "e", "z"]);
        } else {
            let mut sorted = names.clone();
            sorted.sort();
            assert_eq!(sorted, ["b", "d", "e", "z"]);
        }
        dom.link_create(
            &root,
            if ordered { "t" } else { "u" },
            json!({"class": "H5L_TYPE_HARD", "id": g}),
        )
        .unwrap();
    }
}

#[test]
fn a_query_stops_when_cancelled_or_past_its_deadline() {
    use h5lake_engine::stats::QueryLimits;
    use std::sync::atomic::AtomicBool;
    use std::time::{Duration, Instant};
    let dom = mem_domain();
    let id = make_2d(&dom, [64, 8], [8, 8], json!([]));
    let values: Vec<i32> = (0..64 * 8).collect();
    dom.write(&id, &slices(&[(0, 64, 1), (0, 8, 1)]), &to_bytes(&values))
        .unwrap();
    let run = |limits: QueryLimits| dom.query(&id, "value % 7 == 3", None, None, limits);
    let all = run(QueryLimits::default()).unwrap();
    assert_eq!(
        from_bytes(&all.elements),
        values
            .iter()
            .copied()
            .filter(|v| v % 7 == 3)
            .collect::<Vec<_>>()
    );
    // Time to spare, nobody gone: the same answer.
    let later = run(QueryLimits {
        deadline: Some(Instant::now() + Duration::from_secs(3600)),
        cancel: Some(Arc::new(AtomicBool::new(false))),
        ..QueryLimits::default()
    })
    .unwrap();
    assert_eq!(later.elements, all.elements);
    let cancelled = run(QueryLimits {
        cancel: Some(Arc::new(AtomicBool::new(true))),
        ..QueryLimits::default()
    })
    .unwrap_err();
    assert!(
        matches!(&cancelled, EngineError::TooLarge(m) if m.contains("cancelled")),
        "{cancelled}"
    );
    let late = run(QueryLimits {
        deadline: Some(Instant::now()),
        ..QueryLimits::default()
    })
    .unwrap_err();
    assert!(
        matches!(&late, EngineError::TooLarge(m) if m.contains("time limit")),
        "{late}"
    );
}

#[test]
fn claimed_numbers_are_never_handed_out_twice() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("c.h5l");
    Domain::open_local(&path, OpenMode::Truncate).unwrap();
    // Writers as separate processes would be: a domain each.
    let claimed = std::sync::Mutex::new(Vec::new());
    std::thread::scope(|s| {
        for _ in 0..6 {
            let (path, claimed) = (&path, &claimed);
            s.spawn(move || {
                let dom = Domain::open_local(path, OpenMode::ReadWrite).unwrap();
                for _ in 0..25 {
                    let first = dom.claim_numbers("dimid", 3, 2).unwrap();
                    claimed.lock().unwrap().extend([first, first + 1]);
                }
            });
        }
    });
    let mut got = claimed.into_inner().unwrap();
    got.sort_unstable();
    assert_eq!(got, (3..3 + 300).collect::<Vec<u64>>());
    let dom = Domain::open_local(&path, OpenMode::ReadWrite).unwrap();
    assert_eq!(dom.claim_numbers("dimid", 0, 1).unwrap(), 303);
    assert_eq!(dom.claim_numbers("dimid", 1000, 1).unwrap(), 1000);
    assert_eq!(dom.claim_numbers("other", 0, 1).unwrap(), 0);
    assert!(dom.claim_numbers("Not/ok", 0, 1).is_err());
    let read_only = Domain::open_local(&path, OpenMode::Read).unwrap();
    assert!(matches!(
        read_only.claim_numbers("dimid", 0, 1),
        Err(EngineError::ReadOnly(_))
    ));
}

#[test]
fn a_write_that_lands_after_a_shrink_clears_what_it_left_outside() {
    let dom = mem_domain();
    let id = make_2d(&dom, [20, 4], [2, 4], json!([]));
    dom.write(&id, &slices(&[(0, 20, 1), (0, 4, 1)]), &to_bytes(&[1; 80]))
        .unwrap();
    // A writer that checked the extent before another writer's shrink ...
    let stale = dom.dataset(&id).unwrap();
    dom.resize(&id, &[3, 4]).unwrap();
    // ... lands its chunks after it: one the shrink cut, one wholly outside.
    dom.write_with(&stale, &slices(&[(2, 2, 1), (0, 4, 1)]), &to_bytes(&[9; 8]))
        .unwrap();
    dom.write_with(
        &stale,
        &slices(&[(10, 2, 1), (0, 4, 1)]),
        &to_bytes(&[9; 8]),
    )
    .unwrap();
    dom.resize(&id, &[20, 4]).unwrap();
    let mut out = vec![0u8; 80 * 4];
    dom.read(&id, &slices(&[(0, 20, 1), (0, 4, 1)]), &mut out)
        .unwrap();
    let got = from_bytes(&out);
    assert_eq!(&got[..8], &[1; 8]);
    assert_eq!(
        &got[8..12],
        &[9; 4],
        "row 2 was inside the extent all along"
    );
    assert!(got[12..].iter().all(|&v| v == -7), "{got:?}");
}

/// A gate that lets everything through and notes what it was asked for.
#[derive(Default)]
struct Noting(std::sync::Mutex<Vec<String>>);

impl h5lake_engine::memory::Gate for Noting {
    fn hold(&self, key: &str, _bytes: usize) -> h5lake_engine::Result<()> {
        self.0.lock().unwrap().push(key.to_string());
        Ok(())
    }
}

#[test]
fn the_sources_a_virtual_dataset_reads_on_pool_threads_are_held_to_the_callers_gate() {
    // Before: documents read by work handed to the chunk pool (a virtual
    // dataset's sources) were outside the server's memory budget.
    let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
    let dom = Domain::open(store.clone(), "", OpenMode::Truncate, "mem".into()).unwrap();
    let root = dom.root_id().to_string();
    let space = |n: u64| json!({"class": "H5S_SIMPLE", "dims": [n]});
    let mut mappings = Vec::new();
    let mut sources = Vec::new();
    for i in 0..4u64 {
        let s = dom
            .create_dataset(i32_type(), space(10), json!({}))
            .unwrap();
        dom.link_create(
            &root,
            &format!("s{i}"),
            json!({"class": "H5L_TYPE_HARD", "id": s}),
        )
        .unwrap();
        let v: Vec<i32> = (0..10).map(|x| x + 100 * i as i32).collect();
        dom.write(&s, &slices(&[(0, 10, 1)]), &to_bytes(&v))
            .unwrap();
        mappings
            .push(json!({"path": format!("/s{i}"), "src": [[0, 1, 10]], "dst": [[10 * i, 1, 10]]}));
        sources.push(h5lake_engine::ids::doc_key(&s).unwrap());
    }
    let vd = dom
        .create_dataset(
            i32_type(),
            space(40),
            json!({"h5lake": {"virtual": mappings}}),
        )
        .unwrap();
    dom.flush().unwrap();
    let fresh = Domain::open(store, "", OpenMode::Read, "mem".into()).unwrap();
    let gate = Arc::new(Noting::default());
    let _scope = h5lake_engine::memory::Scope::open();
    assert!(h5lake_engine::memory::install(gate.clone()));
    let mut out = vec![0u8; 160];
    fresh.read(&vd, &slices(&[(0, 40, 1)]), &mut out).unwrap();
    assert_eq!(from_bytes(&out)[31..33], [301, 302]);
    let asked = gate.0.lock().unwrap().clone();
    for s in &sources {
        assert!(asked.contains(s), "{s} not held; asked for {asked:?}");
    }
}
