//! `get`: h5lake stores written through the engine, exported to HDF5 files
//! and read back with the HDF5 library itself.

use std::ffi::{c_char, CStr, CString};
use std::path::{Path, PathBuf};

use h5lake_codecs::Pipeline;
use h5lake_engine::{Domain, DomainOptions, OpenMode, Selection};
use h5lake_hdf5::{get, GetOptions, GetReport, Hdf5Error};
use hdf5::types::VarLenUnicode;
use hdf5_sys::h5::{hsize_t, H5_index_t, H5_iter_order_t};
use hdf5_sys::h5i::hid_t;
use hdf5_sys::{h5a, h5d, h5f, h5l, h5o, h5p, h5s, h5t};
use serde_json::{json, Value};

// ---- helpers -----------------------------------------------------------------

fn sync<T>(f: impl FnOnce() -> T) -> T {
    hdf5::sync::sync(f)
}

/// An owned HDF5 id for the raw checks below.
struct H(hid_t);

impl Drop for H {
    fn drop(&mut self) {
        sync(|| unsafe { hdf5_sys::h5i::H5Idec_ref(self.0) });
    }
}

fn ok(id: hid_t, what: &str) -> H {
    assert!(id >= 0, "{what} failed");
    H(id)
}

fn c(s: &str) -> CString {
    CString::new(s).unwrap()
}

fn open_file(p: &Path) -> H {
    let name = c(p.to_str().unwrap());
    ok(
        sync(|| unsafe { h5f::H5Fopen(name.as_ptr(), h5f::H5F_ACC_RDONLY, h5p::H5P_DEFAULT) }),
        "H5Fopen",
    )
}

fn open_dset(file: &H, path: &str) -> H {
    let n = c(path);
    ok(
        sync(|| unsafe { h5d::H5Dopen2(file.0, n.as_ptr(), h5p::H5P_DEFAULT) }),
        &format!("H5Dopen2 {path}"),
    )
}

/// The dataset's elements as the file stores them (memory type = file type).
fn raw_values(file: &H, path: &str) -> Vec<u8> {
    let d = open_dset(file, path);
    let t = ok(sync(|| unsafe { h5d::H5Dget_type(d.0) }), "H5Dget_type");
    let s = ok(sync(|| unsafe { h5d::H5Dget_space(d.0) }), "H5Dget_space");
    let n = sync(|| unsafe { h5s::H5Sget_simple_extent_npoints(s.0) }) as usize;
    let size = sync(|| unsafe { h5t::H5Tget_size(t.0) });
    let mut buf = vec![0u8; n * size];
    let st = sync(|| unsafe {
        h5d::H5Dread(
            d.0,
            t.0,
            h5s::H5S_ALL,
            h5s::H5S_ALL,
            h5p::H5P_DEFAULT,
            buf.as_mut_ptr().cast(),
        )
    });
    assert!(st >= 0, "H5Dread {path}");
    buf
}

fn dims_of(file: &H, path: &str) -> (Vec<u64>, Vec<u64>) {
    let d = open_dset(file, path);
    let s = ok(sync(|| unsafe { h5d::H5Dget_space(d.0) }), "H5Dget_space");
    let rank = sync(|| unsafe { h5s::H5Sget_simple_extent_ndims(s.0) }) as usize;
    let mut dims = vec![0; rank];
    let mut max = vec![0; rank];
    sync(|| unsafe { h5s::H5Sget_simple_extent_dims(s.0, dims.as_mut_ptr(), max.as_mut_ptr()) });
    (dims, max)
}

fn space_class(file: &H, path: &str) -> h5s::H5S_class_t {
    let d = open_dset(file, path);
    let s = ok(sync(|| unsafe { h5d::H5Dget_space(d.0) }), "H5Dget_space");
    sync(|| unsafe { h5s::H5Sget_simple_extent_type(s.0) })
}

fn layout_of(file: &H, path: &str) -> (h5d::H5D_layout_t, Option<Vec<u64>>) {
    let d = open_dset(file, path);
    let p = ok(sync(|| unsafe { h5d::H5Dget_create_plist(d.0) }), "dcpl");
    let layout = sync(|| unsafe { h5p::H5Pget_layout(p.0) });
    let chunk = (layout == h5d::H5D_layout_t::H5D_CHUNKED).then(|| {
        let mut dims = vec![0u64; 32];
        let r = sync(|| unsafe { h5p::H5Pget_chunk(p.0, 32, dims.as_mut_ptr()) });
        dims.truncate(r as usize);
        dims
    });
    (layout, chunk)
}

/// (filter id, flags, cd_values) of each filter, in pipeline order.
fn filters_of(file: &H, path: &str) -> Vec<(i32, u32, Vec<u32>)> {
    let d = open_dset(file, path);
    let p = ok(sync(|| unsafe { h5d::H5Dget_create_plist(d.0) }), "dcpl");
    let n = sync(|| unsafe { h5p::H5Pget_nfilters(p.0) });
    (0..n as u32)
        .map(|i| {
            let mut flags = 0u32;
            let mut nelmts: usize = 16;
            let mut cd = vec![0u32; 16];
            let mut name = [0 as c_char; 64];
            let mut config = 0u32;
            let id = sync(|| unsafe {
                h5p::H5Pget_filter2(
                    p.0,
                    i,
                    &mut flags,
                    &mut nelmts,
                    cd.as_mut_ptr(),
                    name.len(),
                    name.as_mut_ptr(),
                    &mut config,
                )
            });
            cd.truncate(nelmts);
            (id, flags, cd)
        })
        .collect()
}

fn fill_value_of<const N: usize>(file: &H, path: &str) -> [u8; N] {
    let d = open_dset(file, path);
    let p = ok(sync(|| unsafe { h5d::H5Dget_create_plist(d.0) }), "dcpl");
    let t = ok(sync(|| unsafe { h5d::H5Dget_type(d.0) }), "type");
    let mut out = [0u8; N];
    let st = sync(|| unsafe { h5p::H5Pget_fill_value(p.0, t.0, out.as_mut_ptr().cast()) });
    assert!(st >= 0);
    out
}

/// Offsets of the chunks the file holds, sorted.
fn stored_chunk_offsets(file: &H, path: &str) -> Vec<Vec<u64>> {
    let d = open_dset(file, path);
    let s = ok(sync(|| unsafe { h5d::H5Dget_space(d.0) }), "space");
    let rank = sync(|| unsafe { h5s::H5Sget_simple_extent_ndims(s.0) }) as usize;
    let mut n: hsize_t = 0;
    sync(|| unsafe { h5d::H5Dget_num_chunks(d.0, h5s::H5S_ALL, &mut n) });
    let mut out: Vec<Vec<u64>> = (0..n)
        .map(|i| {
            let mut off = vec![0u64; rank];
            let (mut mask, mut addr, mut size) = (0u32, 0u64, 0u64);
            let st = sync(|| unsafe {
                h5d::H5Dget_chunk_info(
                    d.0,
                    h5s::H5S_ALL,
                    i,
                    off.as_mut_ptr(),
                    &mut mask,
                    &mut addr,
                    &mut size,
                )
            });
            assert!(st >= 0);
            assert_eq!(mask, 0, "every filter applied");
            off
        })
        .collect();
    out.sort();
    out
}

/// A chunk's stored (filtered) bytes.
fn raw_chunk(file: &H, path: &str, offset: &[u64]) -> Vec<u8> {
    let d = open_dset(file, path);
    let (mut size, mut mask, mut addr): (hsize_t, u32, u64) = (0, 0, 0);
    let st = sync(|| unsafe {
        h5d::H5Dget_chunk_info_by_coord(d.0, offset.as_ptr(), &mut mask, &mut addr, &mut size)
    });
    assert!(st >= 0);
    let mut buf = vec![0u8; size as usize];
    let mut mask = 0u32;
    let mut n = buf.len();
    let st = sync(|| unsafe {
        h5d::H5Dread_chunk(
            d.0,
            h5p::H5P_DEFAULT,
            offset.as_ptr(),
            &mut mask,
            buf.as_mut_ptr().cast(),
            &mut n,
        )
    });
    assert!(st >= 0, "H5Dread_chunk");
    buf
}

fn link_info(file: &H, path: &str) -> (h5l::H5L_type_t, Vec<u8>) {
    let n = c(path);
    let mut info: h5l::H5L_info2_t = unsafe { std::mem::zeroed() };
    let st = sync(|| unsafe { h5l::H5Lget_info2(file.0, n.as_ptr(), &mut info, h5p::H5P_DEFAULT) });
    assert!(st >= 0, "H5Lget_info2 {path}");
    let mut val = Vec::new();
    if info.type_ != h5l::H5L_type_t::H5L_TYPE_HARD {
        let len = unsafe { *info.u.val_size() };
        val = vec![0u8; len];
        sync(|| unsafe {
            h5l::H5Lget_val(
                file.0,
                n.as_ptr(),
                val.as_mut_ptr().cast(),
                len,
                h5p::H5P_DEFAULT,
            )
        });
    }
    (info.type_, val)
}

fn object_token(file: &H, path: &str) -> h5o::H5O_token_t {
    let n = c(path);
    let mut info: h5o::H5O_info2_t = unsafe { std::mem::zeroed() };
    let st = sync(|| unsafe {
        h5o::H5Oget_info_by_name3(
            file.0,
            n.as_ptr(),
            &mut info,
            h5o::H5O_INFO_BASIC,
            h5p::H5P_DEFAULT,
        )
    });
    assert!(st >= 0, "H5Oget_info_by_name3 {path}");
    info.token
}

/// Link names of a group in creation order (fails unless tracked).
fn names_in_creation_order(file: &H, group: &str) -> Option<Vec<String>> {
    unsafe extern "C" fn collect(
        _g: hid_t,
        name: *const c_char,
        _i: *const h5l::H5L_info2_t,
        data: *mut std::ffi::c_void,
    ) -> hdf5_sys::h5::herr_t {
        let out = &mut *data.cast::<Vec<String>>();
        out.push(CStr::from_ptr(name).to_string_lossy().into_owned());
        0
    }
    let n = c(group);
    let g = ok(
        sync(|| unsafe { hdf5_sys::h5g::H5Gopen2(file.0, n.as_ptr(), h5p::H5P_DEFAULT) }),
        "H5Gopen2",
    );
    let mut names: Vec<String> = Vec::new();
    let mut idx: hsize_t = 0;
    let st = sync(|| unsafe {
        h5l::H5Literate2(
            g.0,
            H5_index_t::H5_INDEX_CRT_ORDER,
            H5_iter_order_t::H5_ITER_INC,
            &mut idx,
            Some(collect),
            (&mut names as *mut Vec<String>).cast(),
        )
    });
    (st >= 0).then_some(names)
}

fn attr_raw(file: &H, obj: &str, name: &str) -> (Vec<u8>, H) {
    let o = c(obj);
    let n = c(name);
    let a = ok(
        sync(|| unsafe {
            h5a::H5Aopen_by_name(
                file.0,
                o.as_ptr(),
                n.as_ptr(),
                h5p::H5P_DEFAULT,
                h5p::H5P_DEFAULT,
            )
        }),
        &format!("open attribute {obj}:{name}"),
    );
    let t = ok(sync(|| unsafe { h5a::H5Aget_type(a.0) }), "H5Aget_type");
    let s = ok(sync(|| unsafe { h5a::H5Aget_space(a.0) }), "H5Aget_space");
    let npts = sync(|| unsafe { h5s::H5Sget_simple_extent_npoints(s.0) }) as usize;
    let size = sync(|| unsafe { h5t::H5Tget_size(t.0) });
    let mut buf = vec![0u8; npts * size];
    if npts > 0 {
        let st = sync(|| unsafe { h5a::H5Aread(a.0, t.0, buf.as_mut_ptr().cast()) });
        assert!(st >= 0);
    }
    (buf, t)
}

fn new_store(dir: &Path) -> (Domain, PathBuf) {
    let p = dir.join("src.h5l");
    (Domain::open_local(&p, OpenMode::Truncate).unwrap(), p)
}

fn link(dom: &Domain, group: &str, name: &str, id: &str) {
    dom.link_create(group, name, json!({"class": "H5L_TYPE_HARD", "id": id}))
        .unwrap();
}

fn f32s(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

fn i32s(v: &[i32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

/// Exports, keeping a copy of the file in `$H5LAKE_TEST_KEEP` when set (to
/// check it with h5py and hdf5plugin by hand).
fn run_get(src: &Path, dest: &Path) -> GetReport {
    let report = get(src, dest, &GetOptions::default()).unwrap();
    if let Some(keep) = std::env::var_os("H5LAKE_TEST_KEEP") {
        let name = format!(
            "{}-{}",
            std::thread::current()
                .name()
                .unwrap_or("test")
                .replace("::", "-"),
            dest.file_name().unwrap().to_string_lossy()
        );
        std::fs::copy(dest, Path::new(&keep).join(name)).unwrap();
    }
    report
}

fn f32_type() -> Value {
    json!({"class": "H5T_FLOAT", "base": "H5T_IEEE_F32LE"})
}

fn i32_type() -> Value {
    json!({"class": "H5T_INTEGER", "base": "H5T_STD_I32LE"})
}

// ---- tests -------------------------------------------------------------------

#[test]
fn groups_links_attributes_and_small_datasets() {
    let dir = tempfile::tempdir().unwrap();
    let (dom, src) = new_store(dir.path());
    let root = dom.root_id().to_string();
    let vstr = json!({"class": "H5T_STRING", "charSet": "H5T_CSET_UTF8", "strPad": "H5T_STR_NULLTERM", "length": "H5T_VARIABLE"});
    let boolt = json!({"class": "H5T_ENUM", "base": {"class": "H5T_INTEGER", "base": "H5T_STD_I8LE"}, "mapping": {"FALSE": 0, "TRUE": 1}});
    let pair = json!({"class": "H5T_COMPOUND", "fields": [
        {"name": "a", "type": "H5T_STD_U8LE"}, {"name": "b", "type": {"class": "H5T_FLOAT", "base": "H5T_IEEE_F64LE"}}]});
    let scalar = json!({"class": "H5S_SCALAR"});
    let attr = |obj: &str, name: &str, t: &Value, shape: Value, value: Value| {
        dom.attr_create(
            obj,
            name,
            json!({"type": t, "shape": shape, "value": value}),
            false,
        )
        .unwrap();
    };
    attr(&root, "version", &i32_type(), scalar.clone(), json!(3));
    attr(
        &root,
        "scales",
        &json!({"class": "H5T_FLOAT", "base": "H5T_IEEE_F64LE"}),
        json!({"class": "H5S_SIMPLE", "dims": [2, 2]}),
        json!([[0.5, 1.5], [2.5, "NaN"]]),
    );
    attr(&root, "title", &vstr, scalar.clone(), json!("héllo"));
    attr(
        &root,
        "tags",
        &vstr,
        json!({"class": "H5S_SIMPLE", "dims": [2]}),
        json!(["a", "bc"]),
    );
    attr(
        &root,
        "code",
        &json!({"class": "H5T_STRING", "charSet": "H5T_CSET_ASCII", "strPad": "H5T_STR_NULLPAD", "length": 4}),
        scalar.clone(),
        json!({"base64": "/wAB"}),
    );
    attr(&root, "flag", &boolt, scalar.clone(), json!(true));
    attr(&root, "pair", &pair, scalar.clone(), json!([7, -2.0]));
    attr(
        &root,
        "empty",
        &i32_type(),
        json!({"class": "H5S_NULL"}),
        Value::Null,
    );
    attr(
        &root,
        "seq",
        &json!({"class": "H5T_VLEN", "base": "H5T_STD_I16LE"}),
        json!({"class": "H5S_SIMPLE", "dims": [2]}),
        json!([[1, 2, 3], []]),
    );

    let g = dom.create_group(json!({})).unwrap();
    link(&dom, &root, "g", &g);
    let h = dom.create_group(json!({})).unwrap();
    link(&dom, &g, "h", &h);
    attr(&h, "units", &vstr, scalar.clone(), json!("counts"));

    let d = dom
        .create_dataset(
            i32_type(),
            json!({"class": "H5S_SIMPLE", "dims": [5, 4]}),
            json!({}),
        )
        .unwrap();
    link(&dom, &g, "ints", &d);
    let ints: Vec<i32> = (0..20).map(|i| i * 3 - 7).collect();
    dom.write(&d, &Selection::all(&[5, 4]), &i32s(&ints))
        .unwrap();
    attr(&d, "exposure", &f32_type(), scalar.clone(), json!(0.25));
    // A second hard link to the same dataset.
    link(&dom, &h, "same_ints", &d);

    let s = dom
        .create_dataset(
            json!({"class": "H5T_FLOAT", "base": "H5T_IEEE_F64LE"}),
            scalar.clone(),
            json!({}),
        )
        .unwrap();
    link(&dom, &root, "scalar", &s);
    dom.write(&s, &Selection::all(&[1]), &3.25f64.to_le_bytes())
        .unwrap();

    let names = dom
        .create_dataset(
            vstr.clone(),
            json!({"class": "H5S_SIMPLE", "dims": [4]}),
            json!({}),
        )
        .unwrap();
    link(&dom, &root, "names", &names);
    let words: Vec<Vec<u8>> = ["alpha", "béta", "", "a longer string"]
        .iter()
        .map(|s| s.as_bytes().to_vec())
        .collect();
    dom.write_vlen(&names, &Selection::all(&[4]), &words)
        .unwrap();

    let seqs = dom
        .create_dataset(
            json!({"class": "H5T_VLEN", "base": i32_type()}),
            json!({"class": "H5S_SIMPLE", "dims": [3]}),
            json!({}),
        )
        .unwrap();
    link(&dom, &root, "seqs", &seqs);
    let seq_vals = vec![i32s(&[1]), i32s(&[]), i32s(&[4, 5, 6])];
    dom.write_vlen(&seqs, &Selection::all(&[3]), &seq_vals)
        .unwrap();

    let pairs = dom
        .create_dataset(
            pair.clone(),
            json!({"class": "H5S_SIMPLE", "dims": [3]}),
            json!({}),
        )
        .unwrap();
    link(&dom, &root, "pairs", &pairs);
    let mut pb = Vec::new();
    for i in 0..3u8 {
        pb.push(i);
        pb.extend_from_slice(&(f64::from(i) * 1.5).to_le_bytes());
    }
    dom.write(&pairs, &Selection::all(&[3]), &pb).unwrap();

    let nul = dom
        .create_dataset(i32_type(), json!({"class": "H5S_NULL"}), json!({}))
        .unwrap();
    link(&dom, &root, "nothing", &nul);

    let compact = dom
        .create_dataset(
            i32_type(),
            json!({"class": "H5S_SIMPLE", "dims": [6]}),
            json!({"layout": {"class": "H5D_COMPACT"}}),
        )
        .unwrap();
    link(&dom, &root, "compact", &compact);
    dom.write(&compact, &Selection::all(&[6]), &i32s(&[1, 2, 3, 4, 5, 6]))
        .unwrap();

    dom.link_create(
        &root,
        "soft",
        json!({"class": "H5L_TYPE_SOFT", "h5path": "/g/ints"}),
    )
    .unwrap();
    dom.link_create(
        &g,
        "ext",
        json!({"class": "H5L_TYPE_EXTERNAL", "h5domain": "other.h5", "h5path": "/data"}),
    )
    .unwrap();
    drop(dom);

    let dest = dir.path().join("out.h5");
    let report = run_get(&src, &dest);
    assert!(report.skipped.is_empty(), "{:?}", report.skipped);
    assert_eq!(report.groups, 3, "{report:?}");
    assert_eq!(report.datasets, 7, "{report:?}");
    assert_eq!(report.attributes, 11, "{report:?}");
    // g, h, ints, same_ints, scalar, names, seqs, pairs, nothing, compact, soft, ext
    assert_eq!(report.links, 12, "{report:?}");

    // Through the high-level crate: values and types as h5py would see them.
    let f = hdf5::File::open(&dest).unwrap();
    assert_eq!(
        f.dataset("g/ints").unwrap().read_raw::<i32>().unwrap(),
        ints
    );
    assert_eq!(f.dataset("g/ints").unwrap().shape(), vec![5, 4]);
    assert_eq!(
        f.dataset("g/h/same_ints")
            .unwrap()
            .read_raw::<i32>()
            .unwrap(),
        ints
    );
    assert_eq!(f.dataset("soft").unwrap().read_raw::<i32>().unwrap(), ints);
    assert_eq!(
        f.dataset("scalar").unwrap().read_scalar::<f64>().unwrap(),
        3.25
    );
    let got: Vec<String> = f
        .dataset("names")
        .unwrap()
        .read_raw::<VarLenUnicode>()
        .unwrap()
        .iter()
        .map(|s| s.as_str().to_string())
        .collect();
    assert_eq!(got, ["alpha", "béta", "", "a longer string"]);
    assert_eq!(
        f.dataset("compact").unwrap().read_raw::<i32>().unwrap(),
        vec![1, 2, 3, 4, 5, 6]
    );
    assert_eq!(f.attr("version").unwrap().read_scalar::<i32>().unwrap(), 3);
    let scales = f.attr("scales").unwrap().read_raw::<f64>().unwrap();
    assert_eq!(&scales[..3], &[0.5, 1.5, 2.5]);
    assert!(scales[3].is_nan());
    assert_eq!(f.attr("scales").unwrap().shape(), vec![2, 2]);
    assert_eq!(
        f.attr("title")
            .unwrap()
            .read_scalar::<VarLenUnicode>()
            .unwrap()
            .as_str(),
        "héllo"
    );
    let tags: Vec<String> = f
        .attr("tags")
        .unwrap()
        .read_raw::<VarLenUnicode>()
        .unwrap()
        .iter()
        .map(|s| s.as_str().to_string())
        .collect();
    assert_eq!(tags, ["a", "bc"]);
    assert!(f.attr("flag").unwrap().read_scalar::<bool>().unwrap());
    assert_eq!(
        f.group("g/h")
            .unwrap()
            .attr("units")
            .unwrap()
            .read_scalar::<VarLenUnicode>()
            .unwrap()
            .as_str(),
        "counts"
    );
    assert_eq!(
        f.dataset("g/ints")
            .unwrap()
            .attr("exposure")
            .unwrap()
            .read_scalar::<f32>()
            .unwrap(),
        0.25
    );
    drop(f);

    // Raw checks: exact bytes, layouts, links, object identity.
    let file = open_file(&dest);
    assert_eq!(raw_values(&file, "pairs"), pb, "packed compound elements");
    assert_eq!(space_class(&file, "scalar"), h5s::H5S_class_t::H5S_SCALAR);
    assert_eq!(space_class(&file, "nothing"), h5s::H5S_class_t::H5S_NULL);
    assert_eq!(
        layout_of(&file, "compact").0,
        h5d::H5D_layout_t::H5D_COMPACT
    );
    assert_eq!(
        layout_of(&file, "g/ints").0,
        h5d::H5D_layout_t::H5D_CONTIGUOUS
    );
    assert_eq!(
        object_token(&file, "/g/ints"),
        object_token(&file, "/g/h/same_ints")
    );
    assert_eq!(
        link_info(&file, "/g/h/same_ints").0,
        h5l::H5L_type_t::H5L_TYPE_HARD
    );
    let (t, v) = link_info(&file, "/soft");
    assert_eq!(t, h5l::H5L_type_t::H5L_TYPE_SOFT);
    assert_eq!(
        CStr::from_bytes_until_nul(&v).unwrap().to_str().unwrap(),
        "/g/ints"
    );
    let (t, v) = link_info(&file, "/g/ext");
    assert_eq!(t, h5l::H5L_type_t::H5L_TYPE_EXTERNAL);
    // Packed external link value: version/flags byte, file name, object path.
    let parts: Vec<&[u8]> = v[1..].split(|&b| b == 0).collect();
    assert_eq!(parts[0], b"other.h5");
    assert_eq!(parts[1], b"/data");

    let (code, t) = attr_raw(&file, "/", "code");
    assert_eq!(code, vec![0xff, 0x00, 0x01, 0x00]);
    assert_eq!(sync(|| unsafe { h5t::H5Tget_size(t.0) }), 4);
    let (pair_bytes, _) = attr_raw(&file, "/", "pair");
    let mut want = vec![7u8];
    want.extend_from_slice(&(-2.0f64).to_le_bytes());
    assert_eq!(pair_bytes, want);
    let (flag, t) = attr_raw(&file, "/", "flag");
    assert_eq!(flag, vec![1]);
    assert_eq!(
        sync(|| unsafe { h5t::H5Tget_class(t.0) }),
        h5t::H5T_class_t::H5T_ENUM
    );
    let (empty, _) = attr_raw(&file, "/", "empty");
    assert!(empty.is_empty());

    // Variable-length sequences, read back as hvl_t.
    let read_seqs = |obj: &str| -> Vec<Vec<i32>> {
        let d = open_dset(&file, obj);
        let t = ok(sync(|| unsafe { h5d::H5Dget_type(d.0) }), "type");
        let mut hv: Vec<h5t::hvl_t> = (0..3)
            .map(|_| h5t::hvl_t {
                len: 0,
                p: std::ptr::null_mut(),
            })
            .collect();
        let st = sync(|| unsafe {
            h5d::H5Dread(
                d.0,
                t.0,
                h5s::H5S_ALL,
                h5s::H5S_ALL,
                h5p::H5P_DEFAULT,
                hv.as_mut_ptr().cast(),
            )
        });
        assert!(st >= 0);
        hv.iter()
            .map(|h| {
                (0..h.len)
                    .map(|k| unsafe { *h.p.cast::<i32>().add(k) })
                    .collect()
            })
            .collect()
    };
    assert_eq!(read_seqs("seqs"), vec![vec![1], vec![], vec![4, 5, 6]]);
    let (seq_attr, _) = attr_raw(&file, "/", "seq");
    let hv: &[h5t::hvl_t] = unsafe { std::slice::from_raw_parts(seq_attr.as_ptr().cast(), 2) };
    assert_eq!(hv[0].len, 3);
    assert_eq!(unsafe { *hv[0].p.cast::<i16>().add(2) }, 3);
    assert_eq!(hv[1].len, 0);
}

#[test]
fn chunked_datasets_keep_chunks_filters_and_fill() {
    let dir = tempfile::tempdir().unwrap();
    let (dom, src) = new_store(dir.path());
    let root = dom.root_id().to_string();
    let d = dom
        .create_dataset(
            f32_type(),
            json!({"class": "H5S_SIMPLE", "dims": [40, 30], "maxdims": ["H5S_UNLIMITED", 30]}),
            json!({"layout": {"class": "H5D_CHUNKED", "dims": [16, 16]}, "fillValue": -1.0,
                   "filters": [{"class": "H5Z_FILTER_SHUFFLE", "id": 2}, {"class": "H5Z_FILTER_DEFLATE", "id": 1, "level": 6}]}),
        )
        .unwrap();
    link(&dom, &root, "grid", &d);
    let vals: Vec<f32> = (0..40 * 30).map(|i| i as f32 * 0.5).collect();
    dom.write(&d, &Selection::all(&[40, 30]), &f32s(&vals))
        .unwrap();
    dom.resize(&d, &[50, 30]).unwrap();
    // Only part of the new rows written: chunk row 3 (rows 48..) stays unstored.
    dom.write(
        &d,
        &Selection::from_slices(&[(40, 2, 1), (0, 30, 1)]),
        &f32s(&[9.0; 60]),
    )
    .unwrap();

    let f32c = dom
        .create_dataset(
            f32_type(),
            json!({"class": "H5S_SIMPLE", "dims": [100]}),
            json!({"layout": {"class": "H5D_CHUNKED", "dims": [30]},
                   "filters": [{"class": "H5Z_FILTER_DEFLATE", "id": 1, "level": 1}, {"class": "H5Z_FILTER_FLETCHER32", "id": 3}]}),
        )
        .unwrap();
    link(&dom, &root, "checked", &f32c);
    let line: Vec<f32> = (0..100).map(|i| (i as f32).sqrt()).collect();
    dom.write(&f32c, &Selection::all(&[100]), &f32s(&line))
        .unwrap();

    // Variable-length strings in filtered chunks go through H5Dwrite.
    let vs = dom
        .create_dataset(
            json!({"class": "H5T_STRING", "charSet": "H5T_CSET_UTF8", "strPad": "H5T_STR_NULLTERM", "length": "H5T_VARIABLE"}),
            json!({"class": "H5S_SIMPLE", "dims": [7], "maxdims": [0]}),
            json!({"layout": {"class": "H5D_CHUNKED", "dims": [3]}, "filters": [{"class": "H5Z_FILTER_DEFLATE", "id": 1, "level": 5}]}),
        )
        .unwrap();
    link(&dom, &root, "words", &vs);
    let words: Vec<Vec<u8>> = (0..4)
        .map(|i| format!("w{}", "x".repeat(i)).into_bytes())
        .collect();
    dom.write_vlen(&vs, &Selection::from_slices(&[(0, 4, 1)]), &words)
        .unwrap();

    // A big "contiguous" dataset the store keeps in hidden chunks.
    let big = dom
        .create_dataset(
            i32_type(),
            json!({"class": "H5S_SIMPLE", "dims": [1_500_000]}),
            json!({}),
        )
        .unwrap();
    link(&dom, &root, "big", &big);
    let big_vals: Vec<i32> = (0..1_500_000).map(|i| i ^ 0x5a5a).collect();
    dom.write(&big, &Selection::all(&[1_500_000]), &i32s(&big_vals))
        .unwrap();

    // Store chunks larger than the fixed maximum shape (libhdf5 refuses
    // such chunk dims): the file gets chunks of the maximum shape.
    let odd = dom
        .create_dataset(
            i32_type(),
            json!({"class": "H5S_SIMPLE", "dims": [10]}),
            json!({"layout": {"class": "H5D_CHUNKED", "dims": [5]}}),
        )
        .unwrap();
    dom.update_doc(&odd, |doc| {
        doc["creationProperties"]["layout"]["dims"] = json!([16]);
        Ok(())
    })
    .unwrap();
    link(&dom, &root, "odd", &odd);
    dom.write(
        &odd,
        &Selection::all(&[10]),
        &i32s(&(0..10).collect::<Vec<_>>()),
    )
    .unwrap();
    drop(dom);

    let dest = dir.path().join("out.h5");
    let report = run_get(&src, &dest);
    assert!(report.skipped.is_empty(), "{:?}", report.skipped);
    // grid: 3 chunk rows x 2 chunk columns; checked: 4; words: 2; odd: 1.
    assert_eq!(report.chunks, 6 + 4 + 2 + 1, "{report:?}");
    let word_bytes: u64 = (0..4).map(|i| 1 + i).sum();
    assert_eq!(
        report.bytes,
        (48 * 30 + 100 + 1_500_000 + 10) * 4 + word_bytes,
        "{report:?}"
    );

    let file = open_file(&dest);
    let (dims, max) = dims_of(&file, "grid");
    assert_eq!(dims, vec![50, 30]);
    assert_eq!(max, vec![h5s::H5S_UNLIMITED, 30]);
    assert_eq!(layout_of(&file, "grid").1, Some(vec![16, 16]));
    let filters = filters_of(&file, "grid");
    assert_eq!(filters.iter().map(|f| f.0).collect::<Vec<_>>(), vec![2, 1]);
    assert_eq!(filters[1].2, vec![6]);
    assert_eq!(fill_value_of::<4>(&file, "grid"), (-1.0f32).to_le_bytes());
    assert_eq!(
        stored_chunk_offsets(&file, "grid"),
        vec![
            vec![0, 0],
            vec![0, 16],
            vec![16, 0],
            vec![16, 16],
            vec![32, 0],
            vec![32, 16]
        ]
    );
    let got: Vec<f32> = raw_values(&file, "grid")
        .chunks(4)
        .map(|b| f32::from_le_bytes(b.try_into().unwrap()))
        .collect();
    assert_eq!(&got[..1200], &vals[..]);
    assert!(got[1200..1260].iter().all(|&x| x == 9.0));
    assert!(
        got[1260..].iter().all(|&x| x == -1.0),
        "unstored rows read as the fill value"
    );

    let filters = filters_of(&file, "checked");
    assert_eq!(filters.iter().map(|f| f.0).collect::<Vec<_>>(), vec![1, 3]);
    let got: Vec<f32> = raw_values(&file, "checked")
        .chunks(4)
        .map(|b| f32::from_le_bytes(b.try_into().unwrap()))
        .collect();
    assert_eq!(got, line, "libhdf5 verifies the checksums and inflates");

    assert_eq!(dims_of(&file, "words"), (vec![7], vec![h5s::H5S_UNLIMITED]));
    assert_eq!(layout_of(&file, "words").1, Some(vec![3]));
    assert_eq!(filters_of(&file, "words")[0].0, 1);
    assert_eq!(stored_chunk_offsets(&file, "words"), vec![vec![0], vec![3]]);
    assert_eq!(
        layout_of(&file, "big"),
        (h5d::H5D_layout_t::H5D_CONTIGUOUS, None)
    );
    assert_eq!(layout_of(&file, "odd").1, Some(vec![10]));
    drop(file);
    let f = hdf5::File::open(&dest).unwrap();
    let got: Vec<String> = f
        .dataset("words")
        .unwrap()
        .read_raw::<VarLenUnicode>()
        .unwrap()
        .iter()
        .map(|s| s.as_str().to_string())
        .collect();
    assert_eq!(got, ["w", "wx", "wxx", "wxxx", "", "", ""]);
    assert_eq!(
        f.dataset("big").unwrap().read_raw::<i32>().unwrap(),
        big_vals
    );
    assert_eq!(
        f.dataset("odd").unwrap().read_raw::<i32>().unwrap(),
        (0..10).collect::<Vec<_>>()
    );
}

#[test]
fn plugin_filters_are_declared_and_their_chunks_decode() {
    let dir = tempfile::tempdir().unwrap();
    let (dom, src) = new_store(dir.path());
    let root = dom.root_id().to_string();
    let data: Vec<i32> = (0..1000).map(|i| (i * 7) % 101).collect();
    let cases = [
        (
            "zstd",
            json!([{"class": "H5Z_FILTER_ZSTD", "id": 32015, "level": 5}]),
            vec![(32015, vec![5u32])],
        ),
        (
            "lz4",
            json!([{"class": "H5Z_FILTER_SHUFFLE", "id": 2}, {"class": "H5Z_FILTER_LZ4", "id": 32004}]),
            vec![(2, vec![]), (32004, vec![0])],
        ),
        (
            "blosc",
            json!([{"class": "H5Z_FILTER_BLOSC", "id": 32001, "compressor": "zstd", "level": 4, "shuffle": 1}]),
            vec![(32001, vec![2, 2, 4, 1000, 4, 1, 5])],
        ),
    ];
    for (name, filters, _) in &cases {
        let d = dom
            .create_dataset(
                i32_type(),
                json!({"class": "H5S_SIMPLE", "dims": [1000]}),
                json!({"layout": {"class": "H5D_CHUNKED", "dims": [250]}, "filters": filters}),
            )
            .unwrap();
        link(&dom, &root, name, &d);
        dom.write(&d, &Selection::all(&[1000]), &i32s(&data))
            .unwrap();
    }
    drop(dom);
    let dest = dir.path().join("out.h5");
    let report = run_get(&src, &dest);
    assert!(report.skipped.is_empty(), "{:?}", report.skipped);

    let file = open_file(&dest);
    let raw = i32s(&data);
    for (name, filters, want) in &cases {
        let got = filters_of(&file, name);
        for ((id, flags, cd), (wid, wcd)) in got.iter().zip(want) {
            assert_eq!(id, wid, "{name}");
            if *id > 256 {
                assert_eq!(
                    *flags & hdf5_sys::h5z::H5Z_FLAG_OPTIONAL,
                    1,
                    "{name}: optional"
                );
            }
            // The shuffle filter's cd_values are the library's to fill in.
            if *id != 2 {
                assert_eq!(cd, wcd, "{name}");
            }
        }
        assert_eq!(got.len(), want.len());
        let pipeline = Pipeline::from_hsds_json(filters).unwrap();
        let offsets = stored_chunk_offsets(&file, name);
        assert_eq!(offsets, vec![vec![0], vec![250], vec![500], vec![750]]);
        for off in offsets {
            let stored = raw_chunk(&file, name, &off);
            // libhdf5's plugin layouts, not HSDS's Blosc frames.
            match *name {
                "zstd" => assert_eq!(stored[..4], [0x28, 0xb5, 0x2f, 0xfd], "zstd frame magic"),
                "lz4" => assert_eq!(stored[..8], 1000u64.to_be_bytes(), "H5Zlz4 header"),
                _ => {
                    assert_eq!(stored[3], 4, "blosc typesize");
                    assert_eq!(stored[4..8], 1000u32.to_le_bytes(), "blosc nbytes");
                }
            }
            let chunk = pipeline.decode(&stored, 4).unwrap();
            let s = off[0] as usize * 4;
            assert_eq!(chunk, raw[s..s + 1000], "{name} chunk {off:?}");
        }
    }
}

#[test]
fn hdf5_format_chunks_and_linked_datasets() {
    let dir = tempfile::tempdir().unwrap();
    // A source file whose chunks a linked dataset points at.
    let h5src = dir.path().join("source.h5");
    let data: Vec<i32> = (0..95).collect();
    let chunk_table = {
        let f = hdf5::File::create(&h5src).unwrap();
        let ds = f
            .new_dataset_builder()
            .chunk(10)
            .deflate(4)
            .with_data(&data)
            .create("x")
            .unwrap();
        let n = ds.num_chunks().unwrap();
        (0..n)
            .map(|i| ds.chunk_info(i).unwrap())
            .filter(|ci| ci.offset[0] != 90) // chunk 9 left to the fill value
            .map(|ci| (format!("{}", ci.offset[0] / 10), json!([ci.addr, ci.size])))
            .collect::<serde_json::Map<String, Value>>()
    };

    let (dom, src) = new_store(dir.path());
    let root = dom.root_id().to_string();
    let linked = dom
        .create_dataset(
            i32_type(),
            json!({"class": "H5S_SIMPLE", "dims": [95]}),
            json!({"layout": {"class": "H5D_CHUNKED_REF", "file_uri": h5src.to_str().unwrap(), "dims": [10], "chunks": chunk_table},
                   "filters": [{"class": "H5Z_FILTER_DEFLATE", "id": 1, "level": 4}]}),
        )
        .unwrap();
    link(&dom, &root, "linked", &linked);

    // Chunks kept in libhdf5's own layout are copied as stored.
    let h = dom
        .create_dataset(
            i32_type(),
            json!({"class": "H5S_SIMPLE", "dims": [95]}),
            json!({"layout": {"class": "H5D_CHUNKED", "dims": [20]},
                   "filters": [{"class": "H5Z_FILTER_SHUFFLE", "id": 2}, {"class": "H5Z_FILTER_DEFLATE", "id": 1, "level": 9}]}),
        )
        .unwrap();
    dom.update_doc(&h, |doc| {
        doc["h5lake"] = json!({"chunkFormat": "hdf5"});
        Ok(())
    })
    .unwrap();
    link(&dom, &root, "hdf5fmt", &h);
    dom.write(&h, &Selection::all(&[95]), &i32s(&data)).unwrap();
    let stored_chunk0 = {
        let key =
            h5lake_engine::ids::chunk_key(&h5lake_engine::ids::object_prefix(&h).unwrap(), &[0]);
        dom.store().get(&key).unwrap().unwrap().to_vec()
    };
    drop(dom);

    let dest = dir.path().join("out.h5");
    let report = run_get(&src, &dest);
    assert!(report.skipped.is_empty(), "{:?}", report.skipped);
    let f = hdf5::File::open(&dest).unwrap();
    let mut want = data.clone();
    want[90..].iter_mut().for_each(|x| *x = 0);
    assert_eq!(
        f.dataset("linked").unwrap().read_raw::<i32>().unwrap(),
        want
    );
    assert_eq!(
        f.dataset("hdf5fmt").unwrap().read_raw::<i32>().unwrap(),
        data
    );
    drop(f);
    let file = open_file(&dest);
    assert_eq!(layout_of(&file, "linked").1, Some(vec![10]));
    assert_eq!(
        stored_chunk_offsets(&file, "linked").len(),
        9,
        "the missing chunk stays unwritten"
    );
    assert_eq!(raw_chunk(&file, "hdf5fmt", &[0]), stored_chunk0);
}

#[test]
fn committed_types_and_creation_order() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("src.h5l");
    let dom = Domain::open_local_with(
        &src,
        OpenMode::Truncate,
        &DomainOptions {
            root_creation_props: json!({"CreateOrder": 1}),
            ..Default::default()
        },
    )
    .unwrap();
    let root = dom.root_id().to_string();
    let pt = json!({"class": "H5T_COMPOUND", "fields": [
        {"name": "x", "type": f32_type()}, {"name": "n", "type": "H5T_STD_I16BE"}]});
    let t = dom.create_datatype(pt.clone()).unwrap();
    // Links in an order that is not the alphabetical one.
    link(&dom, &root, "zeta_type", &t);
    let mut typed = pt.clone();
    typed["id"] = json!(t);
    let d = dom
        .create_dataset(
            typed,
            json!({"class": "H5S_SIMPLE", "dims": [2]}),
            json!({}),
        )
        .unwrap();
    link(&dom, &root, "alpha_points", &d);
    let mut bytes = Vec::new();
    for (x, n) in [(1.5f32, 3i16), (-2.0, -4)] {
        bytes.extend_from_slice(&x.to_le_bytes());
        bytes.extend_from_slice(&n.to_be_bytes());
    }
    dom.write(&d, &Selection::all(&[2]), &bytes).unwrap();
    dom.attr_create(
        &d,
        "origin",
        json!({"type": t, "shape": {"class": "H5S_SCALAR"}, "value": [0.5, 7]}),
        false,
    )
    .unwrap();
    dom.attr_create(
        &t,
        "doc",
        json!({"type": i32_type(), "shape": {"class": "H5S_SCALAR"}, "value": 11}),
        false,
    )
    .unwrap();
    let g = dom.create_group(json!({})).unwrap();
    link(&dom, &root, "middle", &g);
    // As HSDS may store it: the type as the bare committed-type id. Chunked
    // data is copied from the stored chunks, so it exports.
    let by_id = dom
        .create_dataset(
            pt.clone(),
            json!({"class": "H5S_SIMPLE", "dims": [2]}),
            json!({"layout": {"class": "H5D_CHUNKED", "dims": [2]}}),
        )
        .unwrap();
    dom.write(&by_id, &Selection::all(&[2]), &bytes).unwrap();
    dom.update_doc(&by_id, |doc| {
        doc["type"] = json!(t);
        Ok(())
    })
    .unwrap();
    link(&dom, &g, "by_id", &by_id);
    drop(dom);

    let dest = dir.path().join("out.h5");
    let report = run_get(&src, &dest);
    assert!(report.skipped.is_empty(), "{:?}", report.skipped);
    assert_eq!(report.datatypes, 1);
    assert_eq!(report.datasets, 2);
    assert_eq!(report.attributes, 2);
    let file = open_file(&dest);
    assert_eq!(
        names_in_creation_order(&file, "/").expect("creation order tracked"),
        ["zeta_type", "alpha_points", "middle"]
    );
    assert!(
        names_in_creation_order(&file, "/middle").is_none(),
        "not asked for"
    );
    let ds = open_dset(&file, "alpha_points");
    let dt = ok(sync(|| unsafe { h5d::H5Dget_type(ds.0) }), "type");
    assert!(
        sync(|| unsafe { h5t::H5Tcommitted(dt.0) }) > 0,
        "the dataset uses the committed type"
    );
    assert_eq!(raw_values(&file, "alpha_points"), bytes);
    let (origin, at) = attr_raw(&file, "/alpha_points", "origin");
    assert!(sync(|| unsafe { h5t::H5Tcommitted(at.0) }) > 0);
    let mut want = 0.5f32.to_le_bytes().to_vec();
    want.extend_from_slice(&7i16.to_be_bytes());
    assert_eq!(origin, want);
    let (doc_attr, _) = attr_raw(&file, "/zeta_type", "doc");
    assert_eq!(doc_attr, 11i32.to_le_bytes());
    assert_eq!(raw_values(&file, "middle/by_id"), bytes);
    let ds = open_dset(&file, "middle/by_id");
    let dt = ok(sync(|| unsafe { h5d::H5Dget_type(ds.0) }), "type");
    assert!(sync(|| unsafe { h5t::H5Tcommitted(dt.0) }) > 0);
}

#[test]
fn unwritable_objects_are_reported_not_fatal() {
    let dir = tempfile::tempdir().unwrap();
    let (dom, src) = new_store(dir.path());
    let root = dom.root_id().to_string();
    // Region references (h5py's), null ones: written as such.
    let r = dom
        .create_dataset(
            json!({"class": "H5T_REFERENCE", "base": "H5T_STD_REF_DSETREG"}),
            json!({"class": "H5S_SIMPLE", "dims": [2]}),
            json!({}),
        )
        .unwrap();
    link(&dom, &root, "refs", &r);
    link(&dom, &root, "refs_again", &r);
    let ok_d = dom
        .create_dataset(
            i32_type(),
            json!({"class": "H5S_SIMPLE", "dims": [2]}),
            json!({}),
        )
        .unwrap();
    link(&dom, &root, "fine", &ok_d);
    dom.write(&ok_d, &Selection::all(&[2]), &i32s(&[4, 5]))
        .unwrap();
    // A contiguous dataset typed by a bare committed-type id: its data is
    // read through the engine, which cannot parse that document.
    let t = dom.create_datatype(i32_type()).unwrap();
    link(&dom, &root, "t", &t);
    let by_id = dom
        .create_dataset(
            i32_type(),
            json!({"class": "H5S_SIMPLE", "dims": [2]}),
            json!({}),
        )
        .unwrap();
    dom.update_doc(&by_id, |doc| {
        doc["type"] = json!(t);
        Ok(())
    })
    .unwrap();
    link(&dom, &root, "z_by_id", &by_id);
    drop(dom);

    let dest = dir.path().join("out.h5");
    let report = run_get(&src, &dest);
    // the region references (never written: null ones) are written as such
    assert_eq!(report.datasets, 2);
    assert_eq!(report.skipped.len(), 1, "{:?}", report.skipped);
    assert!(
        report.skipped[0]
            .to_string()
            .starts_with("/z_by_id: the engine cannot read"),
        "{:?}",
        report.skipped
    );
    assert_eq!(report.datatypes, 1);
    let f = hdf5::File::open(&dest).unwrap();
    assert_eq!(
        f.dataset("fine").unwrap().read_raw::<i32>().unwrap(),
        vec![4, 5]
    );
    assert!(f.link_exists("refs") && f.link_exists("refs_again"));
}

fn leftovers(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains(".tmp-"))
        .collect()
}

#[test]
fn existing_destinations_need_force_and_failures_leave_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let (dom, src) = new_store(dir.path());
    let root = dom.root_id().to_string();
    let d = dom
        .create_dataset(
            i32_type(),
            json!({"class": "H5S_SIMPLE", "dims": [8]}),
            json!({"layout": {"class": "H5D_CHUNKED", "dims": [4]}, "filters": [{"class": "H5Z_FILTER_DEFLATE", "id": 1, "level": 1}]}),
        )
        .unwrap();
    link(&dom, &root, "x", &d);
    dom.write(&d, &Selection::all(&[8]), &i32s(&[1, 2, 3, 4, 5, 6, 7, 8]))
        .unwrap();

    let dest = dir.path().join("out.h5");
    std::fs::write(&dest, b"precious").unwrap();
    let err = get(&src, &dest, &GetOptions::default()).unwrap_err();
    assert!(matches!(err, Hdf5Error::DestinationExists(_)), "{err}");
    assert!(err.to_string().contains("--force"), "{err}");
    assert_eq!(std::fs::read(&dest).unwrap(), b"precious");

    let report = get(
        &src,
        &dest,
        &GetOptions {
            force: true,
            progress: true,
            ..Default::default()
        },
    )
    .unwrap();
    assert_eq!(report.datasets, 1);
    assert_eq!(
        hdf5::File::open(&dest)
            .unwrap()
            .dataset("x")
            .unwrap()
            .read_raw::<i32>()
            .unwrap(),
        vec![1, 2, 3, 4, 5, 6, 7, 8]
    );

    // A damaged chunk fails the export half way: nothing is left behind.
    let key = h5lake_engine::ids::chunk_key(&h5lake_engine::ids::object_prefix(&d).unwrap(), &[1]);
    dom.store().put(&key, b"not deflate data").unwrap();
    drop(dom);
    let dest2 = dir.path().join("broken.h5");
    let err = get(&src, &dest2, &GetOptions::default()).unwrap_err();
    assert!(!matches!(err, Hdf5Error::DestinationExists(_)), "{err}");
    assert!(!dest2.exists());
    assert!(
        leftovers(dir.path()).is_empty(),
        "{:?}",
        leftovers(dir.path())
    );

    // A missing store is the engine's error, and no file appears.
    let err = get(&dir.path().join("nope.h5l"), &dest2, &GetOptions::default()).unwrap_err();
    assert!(matches!(err, Hdf5Error::Engine(_)), "{err}");
    assert!(!dest2.exists());
}

#[test]
fn the_hsds_fixture_exports() {
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../../shared/fixtures/hsds-store/hsdstest/home/test_user1/fixture.h5");
    if !fixture.join(".domain.json").exists() {
        eprintln!("skipping: no HSDS fixture at {}", fixture.display());
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let dest = dir.path().join("fixture.h5");
    let report = run_get(&fixture, &dest);
    assert!(report.skipped.is_empty(), "{:?}", report.skipped);
    assert_eq!(report.datasets, 6, "{report:?}");

    let f = hdf5::File::open(&dest).unwrap();
    let frames = f.dataset("instrument/detector/frames").unwrap();
    assert_eq!(frames.shape(), vec![5, 64, 48]);
    assert_eq!(frames.chunk(), Some(vec![1, 32, 24]));
    let want: Vec<u16> = (0..5 * 64 * 48).map(|i| i as u16).collect();
    assert_eq!(frames.read_raw::<u16>().unwrap(), want);
    assert_eq!(
        frames
            .attr("exposure_s")
            .unwrap()
            .read_scalar::<f64>()
            .unwrap(),
        0.25
    );

    let grid = f.dataset("grid").unwrap();
    assert_eq!(grid.shape(), vec![48, 30]);
    let g = grid.read_raw::<f32>().unwrap();
    assert_eq!(g[0], 0.0);
    assert!((g[40 * 30 - 1] - 1.0).abs() < 1e-6);
    assert!(g[40 * 30..].iter().all(|&x| x == -1.0));

    let names: Vec<String> = f
        .dataset("names")
        .unwrap()
        .read_raw::<VarLenUnicode>()
        .unwrap()
        .iter()
        .map(|s| s.as_str().to_string())
        .collect();
    assert_eq!(names, ["alpha", "béta", "", "a much longer string of text"]);
    assert_eq!(
        f.dataset("scalar").unwrap().read_scalar::<f64>().unwrap(),
        3.25
    );
    assert_eq!(
        f.dataset("be_ints").unwrap().read_raw::<i32>().unwrap(),
        (0..10).collect::<Vec<i32>>()
    );
    assert_eq!(f.attr("version").unwrap().read_scalar::<i32>().unwrap(), 3);
    assert_eq!(
        f.group("instrument/detector")
            .unwrap()
            .attr("units")
            .unwrap()
            .read_scalar::<VarLenUnicode>()
            .unwrap()
            .as_str(),
        "counts"
    );
    drop(f);

    let file = open_file(&dest);
    let particles = raw_values(&file, "particles");
    assert_eq!(particles.len(), 1000 * 23);
    let rec = &particles[23 * 10..23 * 11];
    assert_eq!(f32::from_le_bytes(rec[0..4].try_into().unwrap()), 10.0);
    assert_eq!(i64::from_le_bytes(rec[12..20].try_into().unwrap()), 70);
    assert_eq!(&rec[20..23], &[1, 2, 3]);
    let be = open_dset(&file, "be_ints");
    let bt = ok(sync(|| unsafe { h5d::H5Dget_type(be.0) }), "type");
    assert_eq!(
        sync(|| unsafe { h5t::H5Tget_order(bt.0) }),
        h5t::H5T_order_t::H5T_ORDER_BE
    );
    assert_eq!(
        object_token(&file, "/grid"),
        object_token(&file, "/hard_grid")
    );
    assert_eq!(
        link_info(&file, "/link_to_grid").0,
        h5l::H5L_type_t::H5L_TYPE_SOFT
    );
    assert_eq!(
        link_info(&file, "/ext").0,
        h5l::H5L_type_t::H5L_TYPE_EXTERNAL
    );
}

/// The name of the object `r` (an `H5R_ref_t`) references, `None` for a
/// null one.
fn referenced_name(r: &hdf5_sys::h5r::H5R_ref_t) -> Option<String> {
    let obj =
        sync(|| unsafe { hdf5_sys::h5r::H5Ropen_object(r, h5p::H5P_DEFAULT, h5p::H5P_DEFAULT) });
    if obj < 0 {
        return None;
    }
    let obj = H(obj);
    let mut name = vec![0 as c_char; 256];
    let n = sync(|| unsafe { hdf5_sys::h5i::H5Iget_name(obj.0, name.as_mut_ptr(), name.len()) });
    assert!(n > 0, "H5Iget_name");
    Some(
        unsafe { CStr::from_ptr(name.as_ptr()) }
            .to_string_lossy()
            .into_owned(),
    )
}

#[test]
fn object_references_point_at_the_objects_written() {
    let dir = tempfile::tempdir().unwrap();
    let (dom, src) = new_store(dir.path());
    let root = dom.root_id().to_string();
    let target = dom
        .create_dataset(
            i32_type(),
            json!({"class": "H5S_SIMPLE", "dims": [2]}),
            json!({}),
        )
        .unwrap();
    link(&dom, &root, "target", &target);
    let g = dom.create_group(json!({})).unwrap();
    link(&dom, &root, "grp", &g);
    let stored = |s: String| {
        let mut b = s.into_bytes();
        b.resize(48, 0);
        b
    };
    let values: Vec<u8> = [
        format!("datasets/{target}"),
        format!("groups/{g}"),
        String::new(),
    ]
    .into_iter()
    .flat_map(stored)
    .collect();
    // Datasets of references, before their targets in link order: as
    // h5py writes them (H5T_STD_REF_OBJ) and as HDF5's current API does.
    let v1 = json!({"class": "H5T_REFERENCE", "base": "H5T_STD_REF_OBJ"});
    let current = json!({"class": "H5T_REFERENCE", "base": "H5T_STD_REF_OBJ",
                         "h5lake": {"api": "H5T_STD_REF"}});
    for (name, t) in [("a_v1", &v1), ("a_current", &current)] {
        let d = dom
            .create_dataset(
                t.clone(),
                json!({"class": "H5S_SIMPLE", "dims": [3]}),
                json!({"layout": {"class": "H5D_CHUNKED", "dims": [2]}}),
            )
            .unwrap();
        link(&dom, &root, name, &d);
        dom.write(&d, &Selection::all(&[3]), &values).unwrap();
    }
    // A sequence of references as an attribute (a dimension-scale list),
    // and a reference to an object the store does not hold.
    dom.update_doc(&root, |doc| {
        doc["attributes"]["list"] = json!({
            "type": {"class": "H5T_VLEN", "base": v1},
            "shape": {"class": "H5S_SIMPLE", "dims": [2]},
            "value": [[format!("datasets/{target}")], []],
        });
        doc["attributes"]["lost"] = json!({
            "type": v1, "shape": {"class": "H5S_SCALAR"},
            "value": "datasets/d-00000000-00000000-0000-000000-000000",
        });
        Ok(())
    })
    .unwrap();
    drop(dom);

    let dest = dir.path().join("out.h5");
    let report = run_get(&src, &dest);
    assert_eq!(report.skipped.len(), 1, "{:?}", report.skipped);
    assert!(
        report.skipped[0]
            .to_string()
            .starts_with("/: attribute \"lost\": 1 object references"),
        "{:?}",
        report.skipped
    );
    assert_eq!(report.datasets, 3);
    assert_eq!(report.attributes, 2);
    let file = open_file(&dest);
    for (name, file_type) in [
        ("a_v1", *h5t::H5T_STD_REF_OBJ),
        ("a_current", *h5t::H5T_STD_REF),
    ] {
        let d = open_dset(&file, name);
        let t = ok(sync(|| unsafe { h5d::H5Dget_type(d.0) }), "H5Dget_type");
        assert!(
            sync(|| unsafe { h5t::H5Tequal(t.0, file_type) }) > 0,
            "{name}"
        );
        let mut refs = [hdf5_sys::h5r::H5R_ref_t::default(); 3];
        let status = sync(|| unsafe {
            h5d::H5Dread(
                d.0,
                *h5t::H5T_STD_REF,
                h5s::H5S_ALL,
                h5s::H5S_ALL,
                h5p::H5P_DEFAULT,
                refs.as_mut_ptr().cast(),
            )
        });
        assert!(status >= 0, "reading {name}");
        let names: Vec<Option<String>> = refs.iter().map(referenced_name).collect();
        assert_eq!(
            names,
            [Some("/target".to_string()), Some("/grp".to_string()), None],
            "{name}"
        );
        for r in &mut refs {
            sync(|| unsafe { hdf5_sys::h5r::H5Rdestroy(r) });
        }
    }
    drop(file);

    // And loaded again: both kinds name the new store's objects.
    let again = dir.path().join("again.h5l");
    let report = h5lake_hdf5::load(&dest, &again, &Default::default()).unwrap();
    assert!(report.skipped.is_empty(), "{:?}", report.skipped);
    let dom = Domain::open_local(&again, OpenMode::Read).unwrap();
    let root = dom.get_doc(dom.root_id()).unwrap();
    let id_of = |name: &str| root["links"][name]["id"].as_str().unwrap().to_string();
    let expected: Vec<u8> = [
        format!("datasets/{}", id_of("target")),
        format!("groups/{}", id_of("grp")),
        String::new(),
    ]
    .into_iter()
    .flat_map(stored)
    .collect();
    for name in ["a_v1", "a_current"] {
        let mut got = vec![0u8; 3 * 48];
        dom.read(&id_of(name), &Selection::all(&[3]), &mut got)
            .unwrap();
        assert_eq!(got, expected, "{name}");
    }
    let doc = dom.get_doc(&id_of("a_current")).unwrap();
    assert_eq!(doc["type"], current);
    assert_eq!(
        root["attributes"]["list"]["value"],
        json!([[format!("datasets/{}", id_of("target"))], []])
    );
}
