//! HDF5's deprecated v1 link, object and object-reference calls, rebuilt
//! on the current calls.
//!
//! h5py 3.16 is compiled with `H5_USE_110_API`, so it lists a group, gets
//! link and object info and visits trees through `H5Literate1`,
//! `H5Lget_info1`, `H5Oget_info1`, `H5Ovisit1` and their `_by_name` /
//! `_by_idx` forms. HDF5 2.0 refuses every one of those for any connector
//! but the native one (their info structs carry a file address where the
//! newer ones carry a token), so without help `list(f)` fails through any
//! VOL connector. When the connector is initialized it points each of these
//! entry points of the loaded HDF5 library at an equivalent built here on
//! the current calls: the token becomes the address — through
//! `H5VLnative_token_to_addr` for native files, so they behave exactly as
//! before, and the object's unique last 8 token bytes for h5lake objects.
//!
//! Redirecting means writing a 12-byte absolute jump over the first bytes
//! of each function (x86-64 Linux only; elsewhere nothing is changed and
//! those calls keep failing with HDF5's own message).

use std::ffi::{c_char, c_uint, c_void};

use crate::api::h5;
use crate::sys::{self, haddr_t, herr_t, hid_t, hsize_t};

/// `H5L_info1_t`: as `H5L_info2_t`, with an address instead of a token.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct LinkInfo1 {
    pub type_: sys::H5L_type_t,
    pub corder_valid: bool,
    pub corder: i64,
    pub cset: sys::H5T_cset_t,
    /// `haddr_t address` for hard links, `size_t val_size` otherwise.
    pub u: u64,
}

/// `H5O_info1_t`; the header and index-size parts (native-format
/// internals) stay zero.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct ObjInfo1 {
    pub fileno: std::ffi::c_ulong,
    pub addr: haddr_t,
    pub type_: sys::H5O_type_t,
    pub rc: c_uint,
    pub atime: sys::time_t,
    pub mtime: sys::time_t,
    pub ctime: sys::time_t,
    pub btime: sys::time_t,
    pub num_attrs: hsize_t,
    /// `H5O_hdr_info_t`: 4 unsigned, then 6 hsize_t/uint64_t.
    pub hdr: [u64; 8],
    /// Two `H5_ih_info_t` (2 hsize_t each).
    pub meta_size: [u64; 4],
}

type LinkOp1 =
    Option<unsafe extern "C" fn(hid_t, *const c_char, *const LinkInfo1, *mut c_void) -> herr_t>;
type ObjOp1 =
    Option<unsafe extern "C" fn(hid_t, *const c_char, *const ObjInfo1, *mut c_void) -> herr_t>;

/// The address v1 callers see for an object token.
unsafe fn addr_of(loc: hid_t, token: sys::H5O_token_t) -> haddr_t {
    let Ok(api) = h5() else { return haddr_t::MAX };
    let mut native = false;
    if api.f.H5VLobject_is_native(loc, &mut native) >= 0 && native {
        let mut addr: haddr_t = haddr_t::MAX;
        if api.f.H5VLnative_token_to_addr(loc, token, &mut addr) >= 0 {
            return addr;
        }
        return haddr_t::MAX;
    }
    // h5lake ids: the first 8 bytes are shared by every object of a
    // domain, the last 8 are the object's own.
    u64::from_be_bytes(token.__data[8..16].try_into().expect("8 bytes"))
}

unsafe fn link_info1(loc: hid_t, i: &sys::H5L_info2_t) -> LinkInfo1 {
    LinkInfo1 {
        type_: i.type_,
        corder_valid: i.corder_valid,
        corder: i.corder,
        cset: i.cset,
        u: if i.type_ == sys::H5L_type_t_H5L_TYPE_HARD {
            addr_of(loc, i.u.token)
        } else {
            i.u.val_size as u64
        },
    }
}

unsafe fn obj_info1(loc: hid_t, i: &sys::H5O_info2_t) -> ObjInfo1 {
    ObjInfo1 {
        fileno: i.fileno,
        addr: addr_of(loc, i.token),
        type_: i.type_,
        rc: i.rc,
        atime: i.atime,
        mtime: i.mtime,
        ctime: i.ctime,
        btime: i.btime,
        num_attrs: i.num_attrs,
        hdr: [0; 8],
        meta_size: [0; 4],
    }
}

/// The v1 callback and its data, handed to the v2 call as its data.
struct Shim<Op> {
    op: Op,
    data: *mut c_void,
}

unsafe extern "C" fn link_shim(
    g: hid_t,
    name: *const c_char,
    info: *const sys::H5L_info2_t,
    data: *mut c_void,
) -> herr_t {
    let s = &*(data as *const Shim<LinkOp1>);
    let i1 = link_info1(g, &*info);
    s.op.map_or(0, |op| op(g, name, &i1, s.data))
}

unsafe extern "C" fn obj_shim(
    o: hid_t,
    name: *const c_char,
    info: *const sys::H5O_info2_t,
    data: *mut c_void,
) -> herr_t {
    let s = &*(data as *const Shim<ObjOp1>);
    let i1 = obj_info1(o, &*info);
    s.op.map_or(0, |op| op(o, name, &i1, s.data))
}

/// Runs a v2 iteration with the v1 callback wrapped by `shim`.
unsafe fn iterate_with<Op>(
    op: Op,
    data: *mut c_void,
    run: impl FnOnce(&crate::api::Api, *mut c_void) -> herr_t,
) -> herr_t {
    let Ok(api) = h5() else { return -1 };
    let mut s = Shim { op, data };
    run(api, (&mut s as *mut Shim<Op>).cast())
}

/// Runs a v2 link-info query and hands the caller the v1 form.
unsafe fn link_info_with(
    loc: hid_t,
    out: *mut LinkInfo1,
    query: impl FnOnce(&crate::api::Api, &mut sys::H5L_info2_t) -> herr_t,
) -> herr_t {
    let Ok(api) = h5() else { return -1 };
    let mut i2: sys::H5L_info2_t = std::mem::zeroed();
    let r = query(api, &mut i2);
    if r >= 0 && !out.is_null() {
        *out = link_info1(loc, &i2);
    }
    r
}

/// Runs a v3 object-info query and hands the caller the v1 form.
unsafe fn obj_info_with(
    loc: hid_t,
    out: *mut ObjInfo1,
    query: impl FnOnce(&crate::api::Api, &mut sys::H5O_info2_t) -> herr_t,
) -> herr_t {
    let Ok(api) = h5() else { return -1 };
    let mut i2: sys::H5O_info2_t = std::mem::zeroed();
    let r = query(api, &mut i2);
    if r >= 0 && !out.is_null() {
        *out = obj_info1(loc, &i2);
    }
    r
}

type Index = sys::H5_index_t;
type Order = sys::H5_iter_order_t;

unsafe extern "C" fn literate1(
    g: hid_t,
    it: Index,
    ord: Order,
    idx: *mut hsize_t,
    op: LinkOp1,
    data: *mut c_void,
) -> herr_t {
    iterate_with(op, data, |api, d| {
        api.f.H5Literate2(g, it, ord, idx, Some(link_shim), d)
    })
}

#[allow(clippy::too_many_arguments)]
unsafe extern "C" fn literate_by_name1(
    loc: hid_t,
    name: *const c_char,
    it: Index,
    ord: Order,
    idx: *mut hsize_t,
    op: LinkOp1,
    data: *mut c_void,
    lapl: hid_t,
) -> herr_t {
    iterate_with(op, data, |api, d| {
        api.f
            .H5Literate_by_name2(loc, name, it, ord, idx, Some(link_shim), d, lapl)
    })
}

unsafe extern "C" fn lvisit1(
    g: hid_t,
    it: Index,
    ord: Order,
    op: LinkOp1,
    data: *mut c_void,
) -> herr_t {
    iterate_with(op, data, |api, d| {
        api.f.H5Lvisit2(g, it, ord, Some(link_shim), d)
    })
}

unsafe extern "C" fn lvisit_by_name1(
    loc: hid_t,
    name: *const c_char,
    it: Index,
    ord: Order,
    op: LinkOp1,
    data: *mut c_void,
    lapl: hid_t,
) -> herr_t {
    iterate_with(op, data, |api, d| {
        api.f
            .H5Lvisit_by_name2(loc, name, it, ord, Some(link_shim), d, lapl)
    })
}

unsafe extern "C" fn lget_info1(
    loc: hid_t,
    name: *const c_char,
    out: *mut LinkInfo1,
    lapl: hid_t,
) -> herr_t {
    link_info_with(loc, out, |api, i| api.f.H5Lget_info2(loc, name, i, lapl))
}

unsafe extern "C" fn lget_info_by_idx1(
    loc: hid_t,
    group: *const c_char,
    it: Index,
    ord: Order,
    n: hsize_t,
    out: *mut LinkInfo1,
    lapl: hid_t,
) -> herr_t {
    link_info_with(loc, out, |api, i| {
        api.f.H5Lget_info_by_idx2(loc, group, it, ord, n, i, lapl)
    })
}

const FIELDS: c_uint = sys::H5O_INFO_ALL;

unsafe extern "C" fn oget_info1(loc: hid_t, out: *mut ObjInfo1) -> herr_t {
    obj_info_with(loc, out, |api, i| api.f.H5Oget_info3(loc, i, FIELDS))
}

unsafe extern "C" fn oget_info_by_name1(
    loc: hid_t,
    name: *const c_char,
    out: *mut ObjInfo1,
    lapl: hid_t,
) -> herr_t {
    obj_info_with(loc, out, |api, i| {
        api.f.H5Oget_info_by_name3(loc, name, i, FIELDS, lapl)
    })
}

unsafe extern "C" fn oget_info_by_idx1(
    loc: hid_t,
    group: *const c_char,
    it: Index,
    ord: Order,
    n: hsize_t,
    out: *mut ObjInfo1,
    lapl: hid_t,
) -> herr_t {
    obj_info_with(loc, out, |api, i| {
        api.f
            .H5Oget_info_by_idx3(loc, group, it, ord, n, i, FIELDS, lapl)
    })
}

unsafe extern "C" fn ovisit1(
    o: hid_t,
    it: Index,
    ord: Order,
    op: ObjOp1,
    data: *mut c_void,
) -> herr_t {
    iterate_with(op, data, |api, d| {
        api.f.H5Ovisit3(o, it, ord, Some(obj_shim), d, FIELDS)
    })
}

unsafe extern "C" fn ovisit_by_name1(
    loc: hid_t,
    name: *const c_char,
    it: Index,
    ord: Order,
    op: ObjOp1,
    data: *mut c_void,
    lapl: hid_t,
) -> herr_t {
    iterate_with(op, data, |api, d| {
        api.f
            .H5Ovisit_by_name3(loc, name, it, ord, Some(obj_shim), d, FIELDS, lapl)
    })
}

// ---- version-1 object references ------------------------------------------
//
// h5py makes and follows object references with HDF5's version-1 calls
// (`H5Rcreate`, `H5Rdereference2`, `H5Rget_obj_type2`, `H5Rget_name`): an
// `hobj_ref_t` is an object's address. HDF5 2.0 refuses all of them for any
// connector but the native one, although for object references nothing in
// them needs the native format: the rebuilds below find the token by name
// and turn it into the address as `addr_of` does (native files: the
// object's header address, as before), and back.
//
// Region references (`H5R_DATASET_REGION1`, `hdset_reg_ref_t`) begin with
// the dataset's address like an object reference; for h5lake objects the
// rest is the index of the selection in the process's table (regions.rs).
// In a native file the rest points into the file's global heap, which no
// public call reaches: there they fail with an error naming them while the
// rebuilds are in place. That is why the rebuilds are put in place only
// when h5lake is the default connector (`HDF5_VOL_CONNECTOR`), where native
// files are not reached by default anyway.

fn no_native_region_refs(func: &str) {
    crate::error::VolError::Unsupported(
        "region references (H5R_DATASET_REGION1) into native HDF5 files while h5lake is the default connector".into(),
    )
    .push(func);
}

/// Whether `loc` is an object of a native HDF5 file.
unsafe fn is_native(api: &crate::api::Api, loc: hid_t) -> bool {
    let mut native = false;
    api.f.H5VLobject_is_native(loc, &mut native) >= 0 && native
}

/// The token of the object of `loc`'s file whose address is `addr`.
unsafe fn token_of_addr(loc: hid_t, addr: haddr_t) -> Option<sys::H5O_token_t> {
    let api = h5().ok()?;
    let mut token: sys::H5O_token_t = std::mem::zeroed();
    let mut native = false;
    if api.f.H5VLobject_is_native(loc, &mut native) >= 0 && native {
        return (api.f.H5VLnative_addr_to_token(loc, addr, &mut token) >= 0).then_some(token);
    }
    // The first 8 token bytes are those of every object of the store.
    let mut info: sys::H5O_info2_t = std::mem::zeroed();
    if api.f.H5Oget_info3(loc, &mut info, sys::H5O_INFO_BASIC) < 0 {
        return None;
    }
    token = info.token;
    token.__data[8..16].copy_from_slice(&addr.to_be_bytes());
    Some(token)
}

/// Opens the object a version-1 object reference names.
unsafe fn open_ref1(loc: hid_t, ty: sys::H5R_type_t, r: *const c_void, func: &str) -> hid_t {
    let Ok(api) = h5() else { return -1 };
    if ty == sys::H5R_type_t_H5R_DATASET_REGION1 && is_native(&api, loc) {
        no_native_region_refs(func);
        return -1;
    }
    if ty != sys::H5R_type_t_H5R_OBJECT1 && ty != sys::H5R_type_t_H5R_DATASET_REGION1 {
        crate::error::VolError::Invalid(format!("reference type {ty}")).push(func);
        return -1;
    }
    if r.is_null() {
        crate::error::VolError::Invalid("no reference given".into()).push(func);
        return -1;
    }
    let addr = std::ptr::read_unaligned(r.cast::<haddr_t>());
    match token_of_addr(loc, addr) {
        Some(token) => api.f.H5Oopen_by_token(loc, token),
        None => -1,
    }
}

unsafe extern "C" fn rcreate(
    r: *mut c_void,
    loc: hid_t,
    name: *const c_char,
    ty: sys::H5R_type_t,
    space: hid_t,
) -> herr_t {
    let Ok(api) = h5() else { return -1 };
    let region = ty == sys::H5R_type_t_H5R_DATASET_REGION1;
    if region && is_native(&api, loc) {
        no_native_region_refs("H5Rcreate");
        return -1;
    }
    if ty != sys::H5R_type_t_H5R_OBJECT1 && !region {
        crate::error::VolError::Invalid(format!("reference type {ty}")).push("H5Rcreate");
        return -1;
    }
    if r.is_null() || name.is_null() {
        crate::error::VolError::Invalid("no reference or name given".into()).push("H5Rcreate");
        return -1;
    }
    let mut info: sys::H5O_info2_t = std::mem::zeroed();
    if api
        .f
        .H5Oget_info_by_name3(loc, name, &mut info, sys::H5O_INFO_BASIC, 0)
        < 0
    {
        return -1;
    }
    let addr = addr_of(loc, info.token);
    if !region {
        std::ptr::write_unaligned(r.cast::<haddr_t>(), addr);
        return 0;
    }
    if info.type_ != sys::H5O_type_t_H5O_TYPE_DATASET {
        crate::error::VolError::Invalid("a region reference must name a dataset".into())
            .push("H5Rcreate");
        return -1;
    }
    match crate::regions::selection_of(&api, space).and_then(|s| crate::regions::register(&s)) {
        Ok(index) => {
            let bytes = crate::regions::encode(addr, index);
            std::ptr::copy_nonoverlapping(bytes.as_ptr(), r.cast::<u8>(), bytes.len());
            0
        }
        Err(e) => {
            e.push("H5Rcreate");
            -1
        }
    }
}

/// The referenced dataset's dataspace with the reference's selection.
unsafe extern "C" fn rget_region(dataset: hid_t, ty: sys::H5R_type_t, r: *const c_void) -> hid_t {
    let Ok(api) = h5() else { return -1 };
    if ty != sys::H5R_type_t_H5R_DATASET_REGION1 {
        crate::error::VolError::Invalid("not a region reference".into()).push("H5Rget_region");
        return -1;
    }
    let d = open_ref1(dataset, ty, r, "H5Rget_region");
    if d < 0 {
        return -1;
    }
    let space = api.f.H5Dget_space(d);
    api.f.H5Oclose(d);
    if space < 0 {
        return -1;
    }
    let mut bytes = [0u8; crate::regions::SIZE];
    std::ptr::copy_nonoverlapping(r.cast::<u8>(), bytes.as_mut_ptr(), bytes.len());
    let applied = crate::regions::decode(&bytes)
        .ok_or_else(|| crate::error::VolError::Invalid("a null region reference".into()))
        .and_then(|(_, index)| crate::regions::selection(index))
        .and_then(|sel| crate::regions::apply(&api, space, &sel));
    if let Err(e) = applied {
        api.f.H5Sclose(space);
        e.push("H5Rget_region");
        return -1;
    }
    space
}

unsafe extern "C" fn rdereference2(
    obj: hid_t,
    _oapl: hid_t,
    ty: sys::H5R_type_t,
    r: *const c_void,
) -> hid_t {
    open_ref1(obj, ty, r, "H5Rdereference2")
}

unsafe extern "C" fn rget_obj_type2(
    id: hid_t,
    ty: sys::H5R_type_t,
    r: *const c_void,
    out: *mut sys::H5O_type_t,
) -> herr_t {
    let Ok(api) = h5() else { return -1 };
    let o = open_ref1(id, ty, r, "H5Rget_obj_type2");
    if o < 0 {
        return -1;
    }
    let mut info: sys::H5O_info2_t = std::mem::zeroed();
    let rc = api.f.H5Oget_info3(o, &mut info, sys::H5O_INFO_BASIC);
    api.f.H5Oclose(o);
    if rc >= 0 && !out.is_null() {
        *out = info.type_;
    }
    rc
}

unsafe extern "C" fn rget_name(
    loc: hid_t,
    ty: sys::H5R_type_t,
    r: *const c_void,
    name: *mut c_char,
    size: usize,
) -> isize {
    let Ok(api) = h5() else { return -1 };
    let o = open_ref1(loc, ty, r, "H5Rget_name");
    if o < 0 {
        return -1;
    }
    let n = api.f.H5Iget_name(o, name, size);
    api.f.H5Oclose(o);
    n as isize
}

/// The version-1 reference calls and their rebuilds.
fn ref_replacements() -> [(&'static [u8], *const c_void); 5] {
    [
        (b"H5Rcreate\0", rcreate as *const c_void),
        (b"H5Rget_region\0", rget_region as *const c_void),
        (b"H5Rdereference2\0", rdereference2 as *const c_void),
        (b"H5Rget_obj_type2\0", rget_obj_type2 as *const c_void),
        (b"H5Rget_name\0", rget_name as *const c_void),
    ]
}

// HDF5's dimension scales (`H5DS*`, libhdf5_hl) use version-1 references
// only for native files (`H5DSwith_new_ref`); for any other connector they
// store `H5T_STD_REF` ones, which h5py cannot read: a dataset's attributes
// would fail to list once a scale is attached. With the version-1 calls
// rebuilt, h5lake objects get version-1 references too — unless the
// dataset already holds its scale lists in the current form (written so by
// an earlier connector), which H5DS must keep reading as written.

/// `H5DSwith_new_ref`: current-form references for objects of connectors
/// other than the native one and h5lake.
unsafe extern "C" fn ds_with_new_ref(obj: hid_t, out: *mut bool) -> herr_t {
    let Ok(api) = h5() else { return -1 };
    if out.is_null() {
        return -1;
    }
    let mut name = [0 as c_char; 16];
    *out = if is_native(&api, obj) {
        false
    } else if api
        .f
        .H5VLget_connector_name(obj, name.as_mut_ptr(), name.len())
        > 0
        && std::ffi::CStr::from_ptr(name.as_ptr()).to_bytes() == b"h5lake"
    {
        scale_lists_in_current_form(&api, obj)
    } else {
        true
    };
    0
}

/// Whether `obj`'s `DIMENSION_LIST` or `REFERENCE_LIST` holds `H5T_STD_REF`
/// references.
unsafe fn scale_lists_in_current_form(api: &crate::api::Api, obj: hid_t) -> bool {
    let f = &api.f;
    let current = |t: hid_t| f.H5Tequal(t, api.g.t_std_ref.id()) > 0;
    for (attr, part) in [(c"DIMENSION_LIST", 0), (c"REFERENCE_LIST", 1)] {
        if f.H5Aexists(obj, attr.as_ptr()) <= 0 {
            continue;
        }
        let a = f.H5Aopen(obj, attr.as_ptr(), sys::H5P_DEFAULT as hid_t);
        if a < 0 {
            continue;
        }
        let t = f.H5Aget_type(a);
        // the references: a sequence's base, or a compound's first member
        let r = if part == 0 {
            f.H5Tget_super(t)
        } else {
            f.H5Tget_member_type(t, 0)
        };
        let found = r >= 0 && current(r);
        for id in [r, t] {
            if id >= 0 {
                f.H5Tclose(id);
            }
        }
        f.H5Aclose(a);
        return found;
    }
    false
}

/// Whether h5lake is the connector HDF5 uses by default in this process.
fn h5lake_is_default() -> bool {
    std::env::var("HDF5_VOL_CONNECTOR").is_ok_and(|v| v.split_whitespace().next() == Some("h5lake"))
}

/// Each v1 entry point and its replacement.
fn replacements() -> [(&'static [u8], *const c_void); 11] {
    [
        (b"H5Literate1\0", literate1 as *const c_void),
        (b"H5Literate_by_name1\0", literate_by_name1 as *const c_void),
        (b"H5Lvisit1\0", lvisit1 as *const c_void),
        (b"H5Lvisit_by_name1\0", lvisit_by_name1 as *const c_void),
        (b"H5Lget_info1\0", lget_info1 as *const c_void),
        (b"H5Lget_info_by_idx1\0", lget_info_by_idx1 as *const c_void),
        (b"H5Oget_info1\0", oget_info1 as *const c_void),
        (
            b"H5Oget_info_by_name1\0",
            oget_info_by_name1 as *const c_void,
        ),
        (b"H5Oget_info_by_idx1\0", oget_info_by_idx1 as *const c_void),
        (b"H5Ovisit1\0", ovisit1 as *const c_void),
        (b"H5Ovisit_by_name1\0", ovisit_by_name1 as *const c_void),
    ]
}

/// Points the loaded library's v1 calls at the replacements, once.
pub fn install() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        #[cfg(all(target_os = "linux", target_arch = "x86_64"))]
        if let Ok(lib) = crate::api::host_library() {
            let redirect_all = |list: &[(&[u8], *const c_void)]| {
                for &(name, to) in list {
                    // SAFETY: a symbol lookup; the address is only written
                    // through `redirect`.
                    if let Ok(sym) = unsafe { lib.get::<*mut c_void>(name) } {
                        // SAFETY: `*sym` is the entry of a function at least
                        // 12 bytes long (each is a full HDF5 API function).
                        unsafe { redirect(*sym, to) };
                    }
                }
            };
            redirect_all(&replacements());
            if h5lake_is_default() {
                redirect_all(&ref_replacements());
                if let Some(hl) = crate::api::hl_library() {
                    // SAFETY: as above, for the high-level library.
                    if let Ok(sym) = unsafe { hl.get::<*mut c_void>(b"H5DSwith_new_ref\0") } {
                        // SAFETY: `*sym` is the entry of a function longer than 12 bytes.
                        unsafe { redirect(*sym, ds_with_new_ref as *const c_void) };
                    }
                }
            }
        }
    });
}

/// Overwrites the start of `from` with `movabs rax, to; jmp rax`.
#[cfg(all(target_os = "linux", target_arch = "x86_64"))]
unsafe fn redirect(from: *mut c_void, to: *const c_void) -> bool {
    let page = libc::sysconf(libc::_SC_PAGESIZE).max(4096) as usize;
    let start = from as usize & !(page - 1);
    let len = from as usize + 12 - start;
    let rwx = libc::PROT_READ | libc::PROT_WRITE | libc::PROT_EXEC;
    if libc::mprotect(start as *mut c_void, len, rwx) != 0 {
        return false;
    }
    let mut code = [0x48u8, 0xB8, 0, 0, 0, 0, 0, 0, 0, 0, 0xFF, 0xE0];
    code[2..10].copy_from_slice(&(to as u64).to_le_bytes());
    std::ptr::copy_nonoverlapping(code.as_ptr(), from.cast::<u8>(), code.len());
    libc::mprotect(start as *mut c_void, len, libc::PROT_READ | libc::PROT_EXEC);
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn v1_structs_have_the_c_layout() {
        // sizes from the HDF5 2.0 headers on LP64
        assert_eq!(std::mem::size_of::<LinkInfo1>(), 32);
        assert_eq!(std::mem::size_of::<ObjInfo1>(), 160);
    }
}
