//! h5lake's HDF5 VOL connector: a terminal connector that HDF5 loads as a
//! plugin (`HDF5_PLUGIN_PATH=<dir> HDF5_VOL_CONNECTOR=h5lake`), so that
//! unmodified HDF5 programs — h5py, C, Fortran — read and write h5lake
//! stores (local directories and `s3://` URLs) through the same engine as
//! the Python API and the server.
//!
//! Layout: [`api`] binds the HDF5 library that loaded the plugin; [`types`]
//! and [`selection`] translate datatypes and dataspace selections;
//! [`objects`] is what the `void *` objects are; the callbacks live in
//! [`file`] (files and groups), [`dataset`] and [`link`] (links and
//! objects). What is not implemented fails with an HDF5 error naming it.

#![allow(clippy::missing_safety_doc)]

pub mod access;
pub mod api;
pub mod attr;
pub mod compat;
pub mod copy;
pub mod dataset;
pub mod datatype;
pub mod error;
pub mod file;
pub mod link;
pub mod memory;
pub mod objects;
pub mod refs;
pub mod regions;
pub mod selection;
pub mod storage;
#[allow(clippy::all, clippy::pedantic)]
pub mod sys;
pub mod token;
pub mod types;

use std::ffi::c_void;

use sys::hid_t;

/// The connector's name, as `HDF5_VOL_CONNECTOR` names it.
pub const NAME: &std::ffi::CStr = c"h5lake";
/// A value in the range HDF5 leaves to connectors not registered with The
/// HDF Group.
const CLASS_VALUE: sys::H5VL_class_value_t = 518;

const CAP_FLAGS: u64 = sys::H5VL_CAP_FLAG_FILE_BASIC as u64
    | sys::H5VL_CAP_FLAG_GROUP_BASIC as u64
    | sys::H5VL_CAP_FLAG_DATASET_BASIC as u64
    | sys::H5VL_CAP_FLAG_ATTR_BASIC as u64
    | sys::H5VL_CAP_FLAG_LINK_BASIC as u64
    | sys::H5VL_CAP_FLAG_OBJECT_BASIC as u64
    | sys::H5VL_CAP_FLAG_HARD_LINKS as u64
    | sys::H5VL_CAP_FLAG_SOFT_LINKS as u64
    | sys::H5VL_CAP_FLAG_EXTERNAL_LINKS as u64
    | sys::H5VL_CAP_FLAG_ITERATE as u64
    | sys::H5VL_CAP_FLAG_BY_IDX as u64
    | sys::H5VL_CAP_FLAG_CREATION_ORDER as u64
    | sys::H5VL_CAP_FLAG_GET_PLIST as u64
    | sys::H5VL_CAP_FLAG_FLUSH_REFRESH as u64
    | sys::H5VL_CAP_FLAG_STORED_DATATYPES as u64
    | sys::H5VL_CAP_FLAG_FILTERS
    | sys::H5VL_CAP_FLAG_FILL_VALUES;

unsafe extern "C" fn initialize(_vipl: hid_t) -> sys::herr_t {
    match api::h5() {
        Ok(_) => {
            compat::install();
            0
        }
        Err(_) => -1,
    }
}

unsafe extern "C" fn terminate() -> sys::herr_t {
    storage::remove_all();
    0
}

unsafe extern "C" fn get_conn_cls(
    _obj: *mut c_void,
    _lvl: sys::H5VL_get_conn_lvl_t,
    cls: *mut *const sys::H5VL_class_t,
) -> sys::herr_t {
    *cls = &CLASS.0;
    0
}

unsafe extern "C" fn get_cap_flags(_info: *const c_void, flags: *mut u64) -> sys::herr_t {
    *flags = CAP_FLAGS;
    0
}

/// No optional (native-format) operation is supported.
unsafe extern "C" fn opt_query(
    _obj: *mut c_void,
    _cls: sys::H5VL_subclass_t,
    _opt: std::ffi::c_int,
    flags: *mut u64,
) -> sys::herr_t {
    *flags = 0;
    0
}

unsafe extern "C" fn token_cmp(
    _obj: *mut c_void,
    a: *const sys::H5O_token_t,
    b: *const sys::H5O_token_t,
    out: *mut std::ffi::c_int,
) -> sys::herr_t {
    *out = ((*a).__data.cmp(&(*b).__data)) as std::ffi::c_int;
    0
}

unsafe extern "C" fn close_nothing(
    _obj: *mut c_void,
    _dxpl: hid_t,
    _req: *mut *mut c_void,
) -> sys::herr_t {
    objects::Obj::free(_obj);
    0
}

/// `H5VL_class_t` holds raw pointers, which are not `Sync`; the table is
/// immutable, so sharing it is sound.
pub struct Class(pub sys::H5VL_class_t);
// SAFETY: never mutated after construction; only read by HDF5.
unsafe impl Sync for Class {}

pub static CLASS: Class = Class(sys::H5VL_class_t {
    version: sys::H5VL_VERSION,
    value: CLASS_VALUE,
    name: NAME.as_ptr(),
    conn_version: 1,
    cap_flags: CAP_FLAGS,
    initialize: Some(initialize),
    terminate: Some(terminate),
    info_cls: sys::H5VL_info_class_t {
        size: 0,
        copy: None,
        cmp: None,
        free: None,
        to_str: None,
        from_str: None,
    },
    wrap_cls: sys::H5VL_wrap_class_t {
        get_object: None,
        get_wrap_ctx: None,
        wrap_object: None,
        unwrap_object: None,
        free_wrap_ctx: None,
    },
    attr_cls: sys::H5VL_attr_class_t {
        create: Some(attr::create),
        open: Some(attr::open),
        read: Some(attr::read),
        write: Some(attr::write),
        get: Some(attr::get),
        specific: Some(attr::specific),
        optional: None,
        close: Some(attr::close),
    },
    dataset_cls: sys::H5VL_dataset_class_t {
        create: Some(dataset::create),
        open: Some(dataset::open),
        read: Some(dataset::read),
        write: Some(dataset::write),
        get: Some(dataset::get),
        specific: Some(dataset::specific),
        optional: Some(dataset::optional),
        close: Some(dataset::close),
    },
    datatype_cls: sys::H5VL_datatype_class_t {
        commit: Some(datatype::commit),
        open: Some(datatype::open),
        get: Some(datatype::get),
        specific: Some(datatype::specific),
        optional: None,
        close: Some(datatype::close),
    },
    file_cls: sys::H5VL_file_class_t {
        create: Some(file::create),
        open: Some(file::open),
        get: Some(file::get),
        specific: Some(file::specific),
        optional: Some(file::file_optional),
        close: Some(file::close),
    },
    group_cls: sys::H5VL_group_class_t {
        create: Some(file::group_create),
        open: Some(file::group_open),
        get: Some(file::group_get),
        specific: None,
        optional: Some(file::group_optional),
        close: Some(close_nothing),
    },
    link_cls: sys::H5VL_link_class_t {
        create: Some(link::create),
        copy: Some(link::copy),
        move_: Some(link::move_),
        get: Some(link::get),
        specific: Some(link::specific),
        optional: None,
    },
    object_cls: sys::H5VL_object_class_t {
        open: Some(link::object_open),
        copy: Some(copy::copy),
        get: Some(link::object_get),
        specific: Some(link::object_specific),
        optional: None,
    },
    introspect_cls: sys::H5VL_introspect_class_t {
        get_conn_cls: Some(get_conn_cls),
        get_cap_flags: Some(get_cap_flags),
        opt_query: Some(opt_query),
    },
    request_cls: sys::H5VL_request_class_t {
        wait: None,
        notify: None,
        cancel: None,
        specific: None,
        optional: None,
        free: None,
    },
    blob_cls: sys::H5VL_blob_class_t {
        put: None,
        get: None,
        specific: None,
        optional: None,
    },
    token_cls: sys::H5VL_token_class_t {
        cmp: Some(token_cmp),
        to_str: None,
        from_str: None,
    },
    optional: None,
});

/// HDF5's plugin entry point: this library is a VOL connector.
#[no_mangle]
pub extern "C" fn H5PLget_plugin_type() -> sys::H5PL_type_t {
    sys::H5PL_type_t_H5PL_TYPE_VOL
}

/// HDF5's plugin entry point: the connector class.
#[no_mangle]
pub extern "C" fn H5PLget_plugin_info() -> *const c_void {
    (&CLASS.0 as *const sys::H5VL_class_t).cast()
}
