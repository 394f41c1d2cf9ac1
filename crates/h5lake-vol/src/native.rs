//! Pass-through to HDF5's native connector.
//!
//! With h5lake set as a process's connector, a name that is an HDF5 file
//! (a regular file, where a store is a directory), or a file driver or
//! file image that only the native format has, is opened by HDF5's own
//! native connector through this one: a program reads `input.h5` and
//! writes a store side by side, as the issue of "read input.h5, write a
//! store" scripts asks.
//!
//! Every object the connector hands HDF5 begins with a tag: [`LAKE_TAG`]
//! for a store's object ([`Obj`]), [`NATIVE_TAG`] for a native object
//! wrapped ([`Native`]). Each callback of the class table routes on it:
//! a store's objects to the h5lake callbacks, native ones forwarded
//! through HDF5's connector-author calls (`H5VL*`) with the wrapper taken
//! off, and what the native connector returns wrapped. The native library
//! also keeps bare objects of its own under this connector (the file's own
//! object, through which variable-length data and references are read), so
//! an object with neither tag is a native one.

use std::ffi::{c_char, c_int, c_uint, c_void};
use std::ptr::null_mut;
use std::sync::atomic::{AtomicI64, Ordering};

use crate::api::h5;
use crate::error::{guard, VolError};
use crate::objects::Obj;
use crate::sys::{self, herr_t, hid_t};

/// First word of every [`Obj`].
pub const LAKE_TAG: u64 = 0x6835_6c61_6b65_4f62;
/// First word of every [`Native`].
pub const NATIVE_TAG: u64 = 0x6835_6c61_6b65_4e61;

/// A native object as this connector hands it to HDF5.
#[repr(C)]
pub struct Native {
    tag: u64,
    under: *mut c_void,
    vol: hid_t,
}

/// Where a callback's object lives.
#[derive(Clone, Copy)]
enum Target {
    Lake,
    Native(*mut c_void, hid_t),
}

static NATIVE_ID: AtomicI64 = AtomicI64::new(0);

/// The native connector's id (held for the life of the library).
fn native_id() -> hid_t {
    let id = NATIVE_ID.load(Ordering::Acquire);
    if id > 0 {
        return id;
    }
    let Ok(api) = h5() else { return -1 };
    // SAFETY: a plain library call with a NUL-terminated name.
    let id = unsafe { api.f.H5VLget_connector_id_by_name(c"native".as_ptr()) };
    if id > 0 {
        NATIVE_ID.store(id, Ordering::Release);
    }
    id
}

/// Forgets the native connector's id (the library is closing; a reopened
/// library numbers its ids anew).
pub fn forget() {
    NATIVE_ID.store(0, Ordering::Release);
}

/// # Safety
/// `obj` is null or an object HDF5 handed to this connector.
unsafe fn target(obj: *const c_void) -> Target {
    if obj.is_null() {
        return Target::Lake;
    }
    match *(obj as *const u64) {
        LAKE_TAG => Target::Lake,
        NATIVE_TAG => {
            let n = &*(obj as *const Native);
            Target::Native(n.under, n.vol)
        }
        _ => Target::Native(obj.cast_mut(), native_id()),
    }
}

/// Whether `obj` is one of a store's objects.
///
/// # Safety
/// As [`target`].
pub unsafe fn is_lake(obj: *const c_void) -> bool {
    !obj.is_null() && *(obj as *const u64) == LAKE_TAG
}

/// A native object wrapped for HDF5 (null stays null: the call failed).
fn wrap(under: *mut c_void, vol: hid_t) -> *mut c_void {
    if under.is_null() {
        return null_mut();
    }
    Box::into_raw(Box::new(Native {
        tag: NATIVE_TAG,
        under,
        vol,
    }))
    .cast()
}

/// Frees a wrapper (the native object itself was closed or handed on).
unsafe fn unwrap_free(obj: *mut c_void) {
    if !obj.is_null() && *(obj as *const u64) == NATIVE_TAG {
        drop(Box::from_raw(obj.cast::<Native>()));
    }
}

fn lib() -> Option<&'static sys::Hdf5Api> {
    h5().ok().map(|a| &a.f)
}

fn fail(func: &str, e: VolError) -> herr_t {
    e.push(func);
    -1
}

fn mixed(func: &str) -> herr_t {
    fail(
        func,
        VolError::Unsupported(
            "an operation joining an HDF5 file and an h5lake store (copy data between them \
             with h5lake load / h5lake get, or read one and write the other)"
                .into(),
        ),
    )
}

/// Routes a callback whose first argument is its object.
macro_rules! route {
    ($(#[$m:meta])* fn $name:ident($obj:ident $(, $a:ident: $t:ty)*) -> $r:ty;
     fail $failed:expr; lake $lake:expr;
     native |$u:ident, $v:ident, $f:ident| $native:expr) => {
        $(#[$m])*
        pub unsafe extern "C" fn $name($obj: *mut c_void $(, $a: $t)*) -> $r {
            match target($obj) {
                Target::Lake => $lake,
                Target::Native($u, $v) => match lib() {
                    Some($f) => $native,
                    None => $failed,
                },
            }
        }
    };
}

type Req = *mut *mut c_void;
type Loc = *const sys::H5VL_loc_params_t;

fn unsupported(what: &str) -> herr_t {
    fail(what, VolError::Unsupported(what.into()))
}

// ---- attributes ----

route!(fn attr_create(obj, loc: Loc, name: *const c_char, ty: hid_t, space: hid_t, acpl: hid_t, aapl: hid_t, dxpl: hid_t, req: Req) -> *mut c_void;
    fail null_mut(); lake crate::attr::create(obj, loc, name, ty, space, acpl, aapl, dxpl, req);
    native |u, v, f| wrap(f.H5VLattr_create(u, loc, v, name, ty, space, acpl, aapl, dxpl, req), v));
route!(fn attr_open(obj, loc: Loc, name: *const c_char, aapl: hid_t, dxpl: hid_t, req: Req) -> *mut c_void;
    fail null_mut(); lake crate::attr::open(obj, loc, name, aapl, dxpl, req);
    native |u, v, f| wrap(f.H5VLattr_open(u, loc, v, name, aapl, dxpl, req), v));
route!(fn attr_read(obj, ty: hid_t, buf: *mut c_void, dxpl: hid_t, req: Req) -> herr_t;
    fail -1; lake crate::attr::read(obj, ty, buf, dxpl, req);
    native |u, v, f| f.H5VLattr_read(u, v, ty, buf, dxpl, req));
route!(fn attr_write(obj, ty: hid_t, buf: *const c_void, dxpl: hid_t, req: Req) -> herr_t;
    fail -1; lake crate::attr::write(obj, ty, buf, dxpl, req);
    native |u, v, f| f.H5VLattr_write(u, v, ty, buf, dxpl, req));
route!(fn attr_get(obj, args: *mut sys::H5VL_attr_get_args_t, dxpl: hid_t, req: Req) -> herr_t;
    fail -1; lake crate::attr::get(obj, args, dxpl, req);
    native |u, v, f| f.H5VLattr_get(u, v, args, dxpl, req));
route!(fn attr_specific(obj, loc: Loc, args: *mut sys::H5VL_attr_specific_args_t, dxpl: hid_t, req: Req) -> herr_t;
    fail -1; lake crate::attr::specific(obj, loc, args, dxpl, req);
    native |u, v, f| f.H5VLattr_specific(u, loc, v, args, dxpl, req));
route!(fn attr_optional(obj, args: *mut sys::H5VL_optional_args_t, dxpl: hid_t, req: Req) -> herr_t;
    fail -1; lake unsupported("native attribute operations on a store");
    native |u, v, f| f.H5VLattr_optional(u, v, args, dxpl, req));
route!(fn attr_close(obj, dxpl: hid_t, req: Req) -> herr_t;
    fail -1; lake crate::attr::close(obj, dxpl, req);
    native |u, v, f| closed(obj, f.H5VLattr_close(u, v, dxpl, req)));

/// A close forwarded: the wrapper goes once the native object has.
unsafe fn closed(obj: *mut c_void, status: herr_t) -> herr_t {
    if status >= 0 {
        unwrap_free(obj);
    }
    status
}

// ---- datasets ----

route!(fn dataset_create(obj, loc: Loc, name: *const c_char, lcpl: hid_t, ty: hid_t, space: hid_t, dcpl: hid_t, dapl: hid_t, dxpl: hid_t, req: Req) -> *mut c_void;
    fail null_mut(); lake crate::dataset::create(obj, loc, name, lcpl, ty, space, dcpl, dapl, dxpl, req);
    native |u, v, f| wrap(f.H5VLdataset_create(u, loc, v, name, lcpl, ty, space, dcpl, dapl, dxpl, req), v));
route!(fn dataset_open(obj, loc: Loc, name: *const c_char, dapl: hid_t, dxpl: hid_t, req: Req) -> *mut c_void;
    fail null_mut(); lake crate::dataset::open(obj, loc, name, dapl, dxpl, req);
    native |u, v, f| wrap(f.H5VLdataset_open(u, loc, v, name, dapl, dxpl, req), v));
route!(fn dataset_get(obj, args: *mut sys::H5VL_dataset_get_args_t, dxpl: hid_t, req: Req) -> herr_t;
    fail -1; lake crate::dataset::get(obj, args, dxpl, req);
    native |u, v, f| f.H5VLdataset_get(u, v, args, dxpl, req));
route!(fn dataset_specific(obj, args: *mut sys::H5VL_dataset_specific_args_t, dxpl: hid_t, req: Req) -> herr_t;
    fail -1; lake crate::dataset::specific(obj, args, dxpl, req);
    native |u, v, f| f.H5VLdataset_specific(u, v, args, dxpl, req));
route!(fn dataset_optional(obj, args: *mut sys::H5VL_optional_args_t, dxpl: hid_t, req: Req) -> herr_t;
    fail -1; lake crate::dataset::optional(obj, args, dxpl, req);
    native |u, v, f| f.H5VLdataset_optional(u, v, args, dxpl, req));
route!(fn dataset_close(obj, dxpl: hid_t, req: Req) -> herr_t;
    fail -1; lake crate::dataset::close(obj, dxpl, req);
    native |u, v, f| closed(obj, f.H5VLdataset_close(u, v, dxpl, req)));

/// Routes a multi-dataset call: to `lake` when every one of the `count`
/// datasets is a store's, to `native` (given the native objects under
/// them) when every one is native; mixed ones fail naming `what`.
unsafe fn route_multi(
    count: usize,
    dset: *mut *mut c_void,
    what: &str,
    lake: impl FnOnce() -> herr_t,
    native: impl FnOnce(&sys::Hdf5Api, *mut *mut c_void, hid_t) -> herr_t,
) -> herr_t {
    let objs = std::slice::from_raw_parts(dset, count);
    let mut unders = Vec::with_capacity(count);
    let mut vol = -1;
    for &o in objs {
        if let Target::Native(u, v) = target(o) {
            unders.push(u);
            vol = v;
        }
    }
    match (unders.len(), lib()) {
        (0, _) => lake(),
        (n, Some(f)) if n == count => native(f, unders.as_mut_ptr(), vol),
        (n, None) if n == count => -1,
        _ => mixed(what),
    }
}

pub unsafe extern "C" fn dataset_read(
    count: usize,
    dset: *mut *mut c_void,
    mem_type: *mut hid_t,
    mem_space: *mut hid_t,
    file_space: *mut hid_t,
    dxpl: hid_t,
    buf: *mut *mut c_void,
    req: Req,
) -> herr_t {
    route_multi(
        count,
        dset,
        "dataset read",
        || crate::dataset::read(count, dset, mem_type, mem_space, file_space, dxpl, buf, req),
        |f, u, v| f.H5VLdataset_read(count, u, v, mem_type, mem_space, file_space, dxpl, buf, req),
    )
}

pub unsafe extern "C" fn dataset_write(
    count: usize,
    dset: *mut *mut c_void,
    mem_type: *mut hid_t,
    mem_space: *mut hid_t,
    file_space: *mut hid_t,
    dxpl: hid_t,
    buf: *mut *const c_void,
    req: Req,
) -> herr_t {
    route_multi(
        count,
        dset,
        "dataset write",
        || crate::dataset::write(count, dset, mem_type, mem_space, file_space, dxpl, buf, req),
        |f, u, v| f.H5VLdataset_write(count, u, v, mem_type, mem_space, file_space, dxpl, buf, req),
    )
}

// ---- committed datatypes ----

route!(fn datatype_commit(obj, loc: Loc, name: *const c_char, ty: hid_t, lcpl: hid_t, tcpl: hid_t, tapl: hid_t, dxpl: hid_t, req: Req) -> *mut c_void;
    fail null_mut(); lake crate::datatype::commit(obj, loc, name, ty, lcpl, tcpl, tapl, dxpl, req);
    native |u, v, f| wrap(f.H5VLdatatype_commit(u, loc, v, name, ty, lcpl, tcpl, tapl, dxpl, req), v));
route!(fn datatype_open(obj, loc: Loc, name: *const c_char, tapl: hid_t, dxpl: hid_t, req: Req) -> *mut c_void;
    fail null_mut(); lake crate::datatype::open(obj, loc, name, tapl, dxpl, req);
    native |u, v, f| wrap(f.H5VLdatatype_open(u, loc, v, name, tapl, dxpl, req), v));
route!(fn datatype_get(obj, args: *mut sys::H5VL_datatype_get_args_t, dxpl: hid_t, req: Req) -> herr_t;
    fail -1; lake crate::datatype::get(obj, args, dxpl, req);
    native |u, v, f| f.H5VLdatatype_get(u, v, args, dxpl, req));
route!(fn datatype_specific(obj, args: *mut sys::H5VL_datatype_specific_args_t, dxpl: hid_t, req: Req) -> herr_t;
    fail -1; lake crate::datatype::specific(obj, args, dxpl, req);
    native |u, v, f| f.H5VLdatatype_specific(u, v, args, dxpl, req));
route!(fn datatype_optional(obj, args: *mut sys::H5VL_optional_args_t, dxpl: hid_t, req: Req) -> herr_t;
    fail -1; lake unsupported("native datatype operations on a store");
    native |u, v, f| f.H5VLdatatype_optional(u, v, args, dxpl, req));
route!(fn datatype_close(obj, dxpl: hid_t, req: Req) -> herr_t;
    fail -1; lake crate::datatype::close(obj, dxpl, req);
    native |u, v, f| closed(obj, f.H5VLdatatype_close(u, v, dxpl, req)));

// ---- files ----

/// Whether `name` is to be opened or created by the native connector: a
/// regular file (a store is a directory), or a file access list whose
/// driver or file image only the native format has.
unsafe fn is_native_name(name: *const c_char, fapl: hid_t) -> bool {
    let Ok(api) = h5() else { return false };
    if crate::storage::needs_native_format(api, fapl) {
        return true;
    }
    let Ok(name) = crate::objects::c_str(name) else {
        return false;
    };
    !name.contains("://") && std::fs::metadata(name).is_ok_and(|m| m.is_file())
}

/// A copy of `fapl` that selects the native connector. Native files are
/// closed weakly (when their last object closes): HDF5's strong and semi
/// close degrees walk every open object of the process expecting its own
/// structures, the stores' objects included.
unsafe fn native_fapl(f: &sys::Hdf5Api, fapl: hid_t) -> hid_t {
    let Ok(api) = h5() else { return -1 };
    let copy = if fapl > 0 {
        f.H5Pcopy(fapl)
    } else {
        f.H5Pcreate(api.g.p_file_access.id())
    };
    if copy < 0 {
        return -1;
    }
    if f.H5Pset_vol(copy, native_id(), std::ptr::null()) < 0
        || f.H5Pset_fclose_degree(copy, sys::H5F_close_degree_t_H5F_CLOSE_WEAK) < 0
    {
        f.H5Pclose(copy);
        return -1;
    }
    copy
}

pub unsafe extern "C" fn file_create(
    name: *const c_char,
    flags: c_uint,
    fcpl: hid_t,
    fapl: hid_t,
    dxpl: hid_t,
    req: Req,
) -> *mut c_void {
    if !is_native_name(name, fapl) {
        return crate::file::create(name, flags, fcpl, fapl, dxpl, req);
    }
    if !crate::info::fapl_ok(fapl, "file create") {
        return null_mut();
    }
    let Some(f) = lib() else { return null_mut() };
    let nfapl = native_fapl(f, fapl);
    if nfapl < 0 {
        return null_mut();
    }
    let out = f.H5VLfile_create(name, flags, fcpl, nfapl, dxpl, req);
    f.H5Pclose(nfapl);
    wrap(out, native_id())
}

pub unsafe extern "C" fn file_open(
    name: *const c_char,
    flags: c_uint,
    fapl: hid_t,
    dxpl: hid_t,
    req: Req,
) -> *mut c_void {
    if !is_native_name(name, fapl) {
        return crate::file::open(name, flags, fapl, dxpl, req);
    }
    if !crate::info::fapl_ok(fapl, "file open") {
        return null_mut();
    }
    let Some(f) = lib() else { return null_mut() };
    let nfapl = native_fapl(f, fapl);
    if nfapl < 0 {
        return null_mut();
    }
    let out = f.H5VLfile_open(name, flags, nfapl, dxpl, req);
    f.H5Pclose(nfapl);
    wrap(out, native_id())
}

pub unsafe extern "C" fn file_get(
    obj: *mut c_void,
    args: *mut sys::H5VL_file_get_args_t,
    dxpl: hid_t,
    req: Req,
) -> herr_t {
    let Target::Native(u, v) = target(obj) else {
        return crate::file::get(obj, args, dxpl, req);
    };
    let Some(f) = lib() else { return -1 };
    let a = &mut *args;
    match a.op_type {
        // The native connector counts open objects by walking every id
        // of the process as its own; answered here instead.
        sys::H5VL_file_get_t_H5VL_FILE_GET_OBJ_COUNT => guard("file get", -1, || {
            let g = &mut a.args.get_obj_count;
            *g.count = open_ids(f, u, v, g.types)?.len();
            Ok(0)
        }),
        sys::H5VL_file_get_t_H5VL_FILE_GET_OBJ_IDS => guard("file get", -1, || {
            let g = &mut a.args.get_obj_ids;
            let ids = open_ids(f, u, v, g.types)?;
            let n = ids.len().min(g.max_objs);
            if n > 0 && !g.oid_list.is_null() {
                std::ptr::copy_nonoverlapping(ids.as_ptr(), g.oid_list, n);
            }
            *g.count = n;
            Ok(0)
        }),
        _ => f.H5VLfile_get(u, v, args, dxpl, req),
    }
}

/// The ids of open native objects of the kinds `types` (`H5F_OBJ_*`) in
/// native file `file`: opened through it (`H5F_OBJ_LOCAL`) or through any
/// open of the same file.
unsafe fn open_ids(
    f: &sys::Hdf5Api,
    file: *mut c_void,
    vol: hid_t,
    types: u32,
) -> crate::error::Result<Vec<hid_t>> {
    const LOCAL: u32 = 0x20;
    let local = types & LOCAL != 0;
    let fileno = |p: *mut c_void| -> Option<std::ffi::c_ulong> {
        let mut n: std::ffi::c_ulong = 0;
        let mut args: sys::H5VL_file_get_args_t = std::mem::zeroed();
        args.op_type = sys::H5VL_file_get_t_H5VL_FILE_GET_FILENO;
        args.args.get_fileno.fileno = &mut n;
        (f.H5VLfile_get(p, vol, &mut args, 0, null_mut()) >= 0).then_some(n)
    };
    let mine = fileno(file);
    crate::file::each_open_id(types, |_, htype, obj| {
        if is_lake(obj) {
            return false;
        }
        let of = if htype == sys::H5I_type_t_H5I_FILE {
            obj
        } else {
            let mut loc: sys::H5VL_loc_params_t = std::mem::zeroed();
            loc.type_ = sys::H5VL_loc_type_t_H5VL_OBJECT_BY_SELF;
            loc.obj_type = htype;
            let mut out: *mut c_void = null_mut();
            let mut args: sys::H5VL_object_get_args_t = std::mem::zeroed();
            args.op_type = sys::H5VL_object_get_t_H5VL_OBJECT_GET_FILE;
            args.args.get_file.file = &mut out;
            if f.H5VLobject_get(obj, &loc, vol, &mut args, 0, null_mut()) < 0 {
                return false;
            }
            out
        };
        if local {
            of == file
        } else {
            mine.is_some() && fileno(of) == mine
        }
    })
}

pub unsafe extern "C" fn file_specific(
    obj: *mut c_void,
    args: *mut sys::H5VL_file_specific_args_t,
    dxpl: hid_t,
    req: Req,
) -> herr_t {
    let Some(f) = lib() else { return -1 };
    let a = &mut *args;
    match target(obj) {
        Target::Lake if obj.is_null() => {
            // by name: is it accessible, delete it
            let (name, fapl) = match a.op_type {
                sys::H5VL_file_specific_t_H5VL_FILE_IS_ACCESSIBLE => {
                    (a.args.is_accessible.filename, a.args.is_accessible.fapl_id)
                }
                sys::H5VL_file_specific_t_H5VL_FILE_DELETE => {
                    (a.args.del.filename, a.args.del.fapl_id)
                }
                _ => return crate::file::specific(obj, args, dxpl, req),
            };
            if !is_native_name(name, fapl) {
                return crate::file::specific(obj, args, dxpl, req);
            }
            let nfapl = native_fapl(f, fapl);
            if nfapl < 0 {
                return -1;
            }
            if a.op_type == sys::H5VL_file_specific_t_H5VL_FILE_DELETE {
                a.args.del.fapl_id = nfapl;
            } else {
                a.args.is_accessible.fapl_id = nfapl;
            }
            let status = f.H5VLfile_specific(null_mut(), native_id(), args, dxpl, req);
            f.H5Pclose(nfapl);
            status
        }
        Target::Lake => {
            if a.op_type == sys::H5VL_file_specific_t_H5VL_FILE_IS_EQUAL
                && !a.args.is_equal.obj2.is_null()
                && !is_lake(a.args.is_equal.obj2)
            {
                *a.args.is_equal.same_file = false;
                return 0;
            }
            crate::file::specific(obj, args, dxpl, req)
        }
        Target::Native(u, v) => match a.op_type {
            sys::H5VL_file_specific_t_H5VL_FILE_IS_EQUAL => {
                let other = a.args.is_equal.obj2;
                match target(other) {
                    Target::Native(o, _) if !other.is_null() => {
                        a.args.is_equal.obj2 = o;
                        let status = f.H5VLfile_specific(u, v, args, dxpl, req);
                        a.args.is_equal.obj2 = other;
                        status
                    }
                    _ => {
                        *a.args.is_equal.same_file = false;
                        0
                    }
                }
            }
            sys::H5VL_file_specific_t_H5VL_FILE_REOPEN => {
                let status = f.H5VLfile_specific(u, v, args, dxpl, req);
                if status >= 0 {
                    let out = a.args.reopen.file;
                    *out = wrap(*out, v);
                }
                status
            }
            _ => f.H5VLfile_specific(u, v, args, dxpl, req),
        },
    }
}

route!(fn file_optional(obj, args: *mut sys::H5VL_optional_args_t, dxpl: hid_t, req: Req) -> herr_t;
    fail -1; lake crate::file::file_optional(obj, args, dxpl, req);
    native |u, v, f| f.H5VLfile_optional(u, v, args, dxpl, req));
route!(fn file_close(obj, dxpl: hid_t, req: Req) -> herr_t;
    fail -1; lake crate::file::close(obj, dxpl, req);
    native |u, v, f| closed(obj, f.H5VLfile_close(u, v, dxpl, req)));

// ---- groups ----

route!(fn group_create(obj, loc: Loc, name: *const c_char, lcpl: hid_t, gcpl: hid_t, gapl: hid_t, dxpl: hid_t, req: Req) -> *mut c_void;
    fail null_mut(); lake crate::file::group_create(obj, loc, name, lcpl, gcpl, gapl, dxpl, req);
    native |u, v, f| wrap(f.H5VLgroup_create(u, loc, v, name, lcpl, gcpl, gapl, dxpl, req), v));
route!(fn group_open(obj, loc: Loc, name: *const c_char, gapl: hid_t, dxpl: hid_t, req: Req) -> *mut c_void;
    fail null_mut(); lake crate::file::group_open(obj, loc, name, gapl, dxpl, req);
    native |u, v, f| wrap(f.H5VLgroup_open(u, loc, v, name, gapl, dxpl, req), v));
route!(fn group_get(obj, args: *mut sys::H5VL_group_get_args_t, dxpl: hid_t, req: Req) -> herr_t;
    fail -1; lake crate::file::group_get(obj, args, dxpl, req);
    native |u, v, f| f.H5VLgroup_get(u, v, args, dxpl, req));
route!(fn group_specific(obj, args: *mut sys::H5VL_group_specific_args_t, dxpl: hid_t, req: Req) -> herr_t;
    fail -1; lake unsupported("group operations such as mounting, flushing and refreshing on a store");
    native |u, v, f| group_specific_native(u, v, f, args, dxpl, req));
route!(fn group_optional(obj, args: *mut sys::H5VL_optional_args_t, dxpl: hid_t, req: Req) -> herr_t;
    fail -1; lake crate::file::group_optional(obj, args, dxpl, req);
    native |u, v, f| f.H5VLgroup_optional(u, v, args, dxpl, req));
route!(fn group_close(obj, dxpl: hid_t, req: Req) -> herr_t;
    fail -1; lake { let _ = (dxpl, req); Obj::free(obj); 0 };
    native |u, v, f| closed(obj, f.H5VLgroup_close(u, v, dxpl, req)));

/// Mounting names a second file: it must be native too.
unsafe fn group_specific_native(
    u: *mut c_void,
    v: hid_t,
    f: &sys::Hdf5Api,
    args: *mut sys::H5VL_group_specific_args_t,
    dxpl: hid_t,
    req: Req,
) -> herr_t {
    let a = &mut *args;
    if a.op_type != sys::H5VL_group_specific_t_H5VL_GROUP_MOUNT {
        return f.H5VLgroup_specific(u, v, args, dxpl, req);
    }
    let child = a.args.mount.child_file;
    let Target::Native(c, _) = target(child) else {
        return mixed("mount");
    };
    a.args.mount.child_file = c;
    let status = f.H5VLgroup_specific(u, v, args, dxpl, req);
    a.args.mount.child_file = child;
    status
}

// ---- links ----

pub unsafe extern "C" fn link_create(
    args: *mut sys::H5VL_link_create_args_t,
    obj: *mut c_void,
    loc: Loc,
    lcpl: hid_t,
    lapl: hid_t,
    dxpl: hid_t,
    req: Req,
) -> herr_t {
    let a = &mut *args;
    let hard = a.op_type == sys::H5VL_link_create_t_H5VL_LINK_CREATE_HARD;
    let other = if hard {
        a.args.hard.curr_obj
    } else {
        null_mut()
    };
    // A hard link within one file may give the target location alone.
    let here = if obj.is_null() { other } else { obj };
    match target(here) {
        Target::Lake => {
            if !other.is_null() && !is_lake(other) {
                return mixed("link create");
            }
            crate::link::create(args, obj, loc, lcpl, lapl, dxpl, req)
        }
        Target::Native(u, v) => {
            let Some(f) = lib() else { return -1 };
            let inner = if obj.is_null() { null_mut() } else { u };
            if other.is_null() {
                return f.H5VLlink_create(args, inner, loc, v, lcpl, lapl, dxpl, req);
            }
            let Target::Native(o, _) = target(other) else {
                return mixed("link create");
            };
            a.args.hard.curr_obj = o;
            let status = f.H5VLlink_create(args, inner, loc, v, lcpl, lapl, dxpl, req);
            a.args.hard.curr_obj = other;
            status
        }
    }
}

/// Routes a call on a source and a destination object, either of which
/// may be absent (the same location as the other): to `lake` when both are
/// a store's, to `native` (given the native objects under them) when both
/// are native; one of each fails naming `what`.
unsafe fn route_pair(
    a: *mut c_void,
    b: *mut c_void,
    what: &str,
    lake: impl FnOnce() -> herr_t,
    native: impl FnOnce(&sys::Hdf5Api, *mut c_void, *mut c_void, hid_t) -> herr_t,
) -> herr_t {
    let side = |o: *mut c_void| if o.is_null() { None } else { Some(target(o)) };
    let (x, y, vol) = match (side(a), side(b)) {
        (Some(Target::Native(x, v)), Some(Target::Native(y, _))) => (x, y, v),
        (Some(Target::Native(x, v)), None) => (x, null_mut(), v),
        (None, Some(Target::Native(y, v))) => (null_mut(), y, v),
        (Some(Target::Native(..)), _) | (_, Some(Target::Native(..))) => return mixed(what),
        _ => return lake(),
    };
    match lib() {
        Some(f) => native(f, x, y, vol),
        None => -1,
    }
}

pub unsafe extern "C" fn link_copy(
    src: *mut c_void,
    loc1: Loc,
    dst: *mut c_void,
    loc2: Loc,
    lcpl: hid_t,
    lapl: hid_t,
    dxpl: hid_t,
    req: Req,
) -> herr_t {
    route_pair(
        src,
        dst,
        "link copy",
        || crate::link::copy(src, loc1, dst, loc2, lcpl, lapl, dxpl, req),
        |f, s, d, v| f.H5VLlink_copy(s, loc1, d, loc2, v, lcpl, lapl, dxpl, req),
    )
}

pub unsafe extern "C" fn link_move(
    src: *mut c_void,
    loc1: Loc,
    dst: *mut c_void,
    loc2: Loc,
    lcpl: hid_t,
    lapl: hid_t,
    dxpl: hid_t,
    req: Req,
) -> herr_t {
    route_pair(
        src,
        dst,
        "link move",
        || crate::link::move_(src, loc1, dst, loc2, lcpl, lapl, dxpl, req),
        |f, s, d, v| f.H5VLlink_move(s, loc1, d, loc2, v, lcpl, lapl, dxpl, req),
    )
}

route!(fn link_get(obj, loc: Loc, args: *mut sys::H5VL_link_get_args_t, dxpl: hid_t, req: Req) -> herr_t;
    fail -1; lake crate::link::get(obj, loc, args, dxpl, req);
    native |u, v, f| f.H5VLlink_get(u, loc, v, args, dxpl, req));
route!(fn link_specific(obj, loc: Loc, args: *mut sys::H5VL_link_specific_args_t, dxpl: hid_t, req: Req) -> herr_t;
    fail -1; lake crate::link::specific(obj, loc, args, dxpl, req);
    native |u, v, f| f.H5VLlink_specific(u, loc, v, args, dxpl, req));
route!(fn link_optional(obj, loc: Loc, args: *mut sys::H5VL_optional_args_t, dxpl: hid_t, req: Req) -> herr_t;
    fail -1; lake { let _ = (loc, args, dxpl, req); unsupported("native link operations on a store") };
    native |u, v, f| f.H5VLlink_optional(u, loc, v, args, dxpl, req));

// ---- objects ----

route!(fn object_open(obj, loc: Loc, opened: *mut sys::H5I_type_t, dxpl: hid_t, req: Req) -> *mut c_void;
    fail null_mut(); lake crate::link::object_open(obj, loc, opened, dxpl, req);
    native |u, v, f| wrap(f.H5VLobject_open(u, loc, v, opened, dxpl, req), v));
route!(fn object_get(obj, loc: Loc, args: *mut sys::H5VL_object_get_args_t, dxpl: hid_t, req: Req) -> herr_t;
    fail -1; lake crate::link::object_get(obj, loc, args, dxpl, req);
    native |u, v, f| f.H5VLobject_get(u, loc, v, args, dxpl, req));
route!(fn object_specific(obj, loc: Loc, args: *mut sys::H5VL_object_specific_args_t, dxpl: hid_t, req: Req) -> herr_t;
    fail -1; lake crate::link::object_specific(obj, loc, args, dxpl, req);
    native |u, v, f| f.H5VLobject_specific(u, loc, v, args, dxpl, req));
route!(fn object_optional(obj, loc: Loc, args: *mut sys::H5VL_optional_args_t, dxpl: hid_t, req: Req) -> herr_t;
    fail -1; lake { let _ = (loc, args, dxpl, req); unsupported("native object operations on a store") };
    native |u, v, f| f.H5VLobject_optional(u, loc, v, args, dxpl, req));

pub unsafe extern "C" fn object_copy(
    src: *mut c_void,
    loc1: Loc,
    src_name: *const c_char,
    dst: *mut c_void,
    loc2: Loc,
    dst_name: *const c_char,
    ocpypl: hid_t,
    lcpl: hid_t,
    dxpl: hid_t,
    req: Req,
) -> herr_t {
    route_pair(
        src,
        dst,
        "object copy",
        || {
            crate::copy::copy(
                src, loc1, src_name, dst, loc2, dst_name, ocpypl, lcpl, dxpl, req,
            )
        },
        |f, s, d, v| {
            f.H5VLobject_copy(
                s, loc1, src_name, d, loc2, dst_name, v, ocpypl, lcpl, dxpl, req,
            )
        },
    )
}

// ---- introspection, blobs, tokens, the class-level optional call ----

pub unsafe extern "C" fn get_conn_cls(
    obj: *mut c_void,
    lvl: sys::H5VL_get_conn_lvl_t,
    cls: *mut *const sys::H5VL_class_t,
) -> herr_t {
    match target(obj) {
        Target::Native(u, v) if lvl == sys::H5VL_get_conn_lvl_t_H5VL_GET_CONN_LVL_TERM => {
            match lib() {
                Some(f) => f.H5VLintrospect_get_conn_cls(u, v, lvl, cls),
                None => -1,
            }
        }
        _ => {
            *cls = &crate::CLASS.0;
            0
        }
    }
}

pub unsafe extern "C" fn opt_query(
    obj: *mut c_void,
    subcls: sys::H5VL_subclass_t,
    opt: c_int,
    flags: *mut u64,
) -> herr_t {
    match target(obj) {
        Target::Native(u, v) => match lib() {
            Some(f) => f.H5VLintrospect_opt_query(u, v, subcls, opt, flags),
            None => -1,
        },
        // No optional (native-format) operation is supported on a store.
        Target::Lake => {
            *flags = 0;
            0
        }
    }
}

route!(fn blob_put(obj, buf: *const c_void, size: usize, blob_id: *mut c_void, ctx: *mut c_void) -> herr_t;
    fail -1; lake { let _ = (buf, size, blob_id, ctx); unsupported("blob storage on a store") };
    native |u, v, f| f.H5VLblob_put(u, v, buf, size, blob_id, ctx));
route!(fn blob_get(obj, blob_id: *const c_void, buf: *mut c_void, size: usize, ctx: *mut c_void) -> herr_t;
    fail -1; lake { let _ = (buf, size, blob_id, ctx); unsupported("blob storage on a store") };
    native |u, v, f| f.H5VLblob_get(u, v, blob_id, buf, size, ctx));
route!(fn blob_specific(obj, blob_id: *mut c_void, args: *mut sys::H5VL_blob_specific_args_t) -> herr_t;
    fail -1; lake { let _ = (blob_id, args); unsupported("blob storage on a store") };
    native |u, v, f| f.H5VLblob_specific(u, v, blob_id, args));
route!(fn blob_optional(obj, blob_id: *mut c_void, args: *mut sys::H5VL_optional_args_t) -> herr_t;
    fail -1; lake { let _ = (blob_id, args); unsupported("blob storage on a store") };
    native |u, v, f| f.H5VLblob_optional(u, v, blob_id, args));

route!(fn token_cmp(obj, a: *const sys::H5O_token_t, b: *const sys::H5O_token_t, out: *mut c_int) -> herr_t;
    fail -1; lake { *out = ((*a).__data.cmp(&(*b).__data)) as c_int; 0 };
    native |u, v, f| f.H5VLtoken_cmp(u, v, a, b, out));
route!(fn token_to_str(obj, ty: sys::H5I_type_t, token: *const sys::H5O_token_t, out: *mut *mut c_char) -> herr_t;
    fail -1; lake { let _ = ty; lake_token_to_str(token, out) };
    native |u, v, f| f.H5VLtoken_to_str(u, ty, v, token, out));
route!(fn token_from_str(obj, ty: sys::H5I_type_t, s: *const c_char, token: *mut sys::H5O_token_t) -> herr_t;
    fail -1; lake { let _ = ty; lake_token_from_str(s, token) };
    native |u, v, f| f.H5VLtoken_from_str(u, ty, v, s, token));

/// A store's token as text: its 16 bytes in hexadecimal (HDF5 frees the
/// string with `H5free_memory`).
unsafe fn lake_token_to_str(token: *const sys::H5O_token_t, out: *mut *mut c_char) -> herr_t {
    let Some(f) = lib() else { return -1 };
    let hex: String = (*token).__data.iter().map(|b| format!("{b:02x}")).collect();
    let p = f.H5allocate_memory(hex.len() + 1, false).cast::<u8>();
    if p.is_null() {
        return fail("token to string", VolError::Invalid("out of memory".into()));
    }
    std::ptr::copy_nonoverlapping(hex.as_ptr(), p, hex.len());
    *p.add(hex.len()) = 0;
    *out = p.cast();
    0
}

unsafe fn lake_token_from_str(s: *const c_char, token: *mut sys::H5O_token_t) -> herr_t {
    let text = crate::objects::c_str(s).unwrap_or("");
    let bytes: Option<Vec<u8>> = (text.len() == 32)
        .then(|| {
            (0..16)
                .map(|i| u8::from_str_radix(text.get(2 * i..2 * i + 2)?, 16).ok())
                .collect()
        })
        .flatten();
    match bytes {
        Some(b) => {
            (*token).__data.copy_from_slice(&b);
            0
        }
        None => fail(
            "token from string",
            VolError::Invalid(format!(
                "{text:?} is not an h5lake object token (32 hex digits)"
            )),
        ),
    }
}

route!(fn optional(obj, args: *mut sys::H5VL_optional_args_t, dxpl: hid_t, req: Req) -> herr_t;
    fail -1; lake { let _ = (args, dxpl, req); unsupported("connector-specific operations on a store") };
    native |u, v, f| f.H5VLoptional(u, v, args, dxpl, req));

// ---- wrapping: what HDF5 registers on the native connector's behalf ----

/// The context for wrapping objects the native connector makes during a
/// call (group ids handed to an iteration callback, say).
struct WrapCtx {
    under: *mut c_void,
    vol: hid_t,
}

pub unsafe extern "C" fn get_object(obj: *const c_void) -> *mut c_void {
    match target(obj) {
        Target::Lake => obj.cast_mut(),
        Target::Native(u, v) => match lib() {
            Some(f) => f.H5VLget_object(u, v),
            None => null_mut(),
        },
    }
}

pub unsafe extern "C" fn get_wrap_ctx(obj: *const c_void, ctx: *mut *mut c_void) -> herr_t {
    match target(obj) {
        // a store's objects register themselves, unwrapped
        Target::Lake => {
            *ctx = null_mut();
            0
        }
        Target::Native(u, v) => {
            let Some(f) = lib() else { return -1 };
            let mut under = null_mut();
            if f.H5VLget_wrap_ctx(u, v, &mut under) < 0 {
                return -1;
            }
            *ctx = Box::into_raw(Box::new(WrapCtx { under, vol: v })).cast();
            0
        }
    }
}

pub unsafe extern "C" fn wrap_object(
    obj: *mut c_void,
    ty: sys::H5I_type_t,
    ctx: *mut c_void,
) -> *mut c_void {
    if ctx.is_null() {
        return obj;
    }
    let c = &*ctx.cast::<WrapCtx>();
    let Some(f) = lib() else { return null_mut() };
    wrap(f.H5VLwrap_object(obj, ty, c.vol, c.under), c.vol)
}

pub unsafe extern "C" fn unwrap_object(obj: *mut c_void) -> *mut c_void {
    match target(obj) {
        Target::Native(u, v) if *(obj as *const u64) == NATIVE_TAG => {
            let Some(f) = lib() else { return null_mut() };
            let under = f.H5VLunwrap_object(u, v);
            if !under.is_null() {
                unwrap_free(obj);
            }
            under
        }
        _ => obj,
    }
}

pub unsafe extern "C" fn free_wrap_ctx(ctx: *mut c_void) -> herr_t {
    if ctx.is_null() {
        return 0;
    }
    let c = Box::from_raw(ctx.cast::<WrapCtx>());
    match lib() {
        Some(f) if !c.under.is_null() => f.H5VLfree_wrap_ctx(c.under, c.vol),
        _ => 0,
    }
}
