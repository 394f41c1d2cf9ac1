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

#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

pub mod access;
pub mod api;
pub mod attr;
pub mod compat;
pub mod copy;
pub mod dataset;
pub mod datatype;
pub mod error;
pub mod file;
pub mod info;
pub mod link;
pub mod memory;
pub mod native;
pub mod objects;
pub mod refs;
pub mod regions;
pub mod selection;
pub mod storage;
#[allow(clippy::all, clippy::pedantic)]
pub mod sys;
pub mod token;
pub mod types;
pub mod virtual_layout;

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

/// At exit, before HDF5's own handler closes what the program left open
/// (HDF5 registered its handler first; they run last-in, first-out):
/// writes what is pending. By then the main thread's thread-locals are
/// destroyed, which writing from HDF5's close callbacks would touch
/// (the process aborted and the changes were lost); a program that called
/// `H5dont_atexit` is covered too.
extern "C" fn write_pending_at_exit() {
    if let Err(e) = h5lake_engine::Domain::flush_all_pending() {
        eprintln!("h5lake VOL connector: pending changes could not be written at exit: {e}");
    }
}

unsafe extern "C" fn initialize(_vipl: hid_t) -> sys::herr_t {
    match api::h5() {
        Ok(_) => {
            static AT_EXIT: std::sync::Once = std::sync::Once::new();
            AT_EXIT.call_once(|| {
                // SAFETY: registers a plain function with no arguments.
                unsafe { libc::atexit(write_pending_at_exit) };
            });
            compat::install();
            // Virtual datasets mapping datasets of HDF5 files read their
            // values from those files (without it: the fill value).
            h5lake_hdf5::register_source_linker();
            0
        }
        Err(_) => -1,
    }
}

unsafe extern "C" fn terminate() -> sys::herr_t {
    storage::remove_all();
    native::forget();
    0
}

unsafe extern "C" fn get_cap_flags(_info: *const c_void, flags: *mut u64) -> sys::herr_t {
    *flags = CAP_FLAGS;
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
    info_cls: info::CLASS,
    wrap_cls: sys::H5VL_wrap_class_t {
        get_object: Some(native::get_object),
        get_wrap_ctx: Some(native::get_wrap_ctx),
        wrap_object: Some(native::wrap_object),
        unwrap_object: Some(native::unwrap_object),
        free_wrap_ctx: Some(native::free_wrap_ctx),
    },
    attr_cls: sys::H5VL_attr_class_t {
        create: Some(native::attr_create),
        open: Some(native::attr_open),
        read: Some(native::attr_read),
        write: Some(native::attr_write),
        get: Some(native::attr_get),
        specific: Some(native::attr_specific),
        optional: Some(native::attr_optional),
        close: Some(native::attr_close),
    },
    dataset_cls: sys::H5VL_dataset_class_t {
        create: Some(native::dataset_create),
        open: Some(native::dataset_open),
        read: Some(native::dataset_read),
        write: Some(native::dataset_write),
        get: Some(native::dataset_get),
        specific: Some(native::dataset_specific),
        optional: Some(native::dataset_optional),
        close: Some(native::dataset_close),
    },
    datatype_cls: sys::H5VL_datatype_class_t {
        commit: Some(native::datatype_commit),
        open: Some(native::datatype_open),
        get: Some(native::datatype_get),
        specific: Some(native::datatype_specific),
        optional: Some(native::datatype_optional),
        close: Some(native::datatype_close),
    },
    file_cls: sys::H5VL_file_class_t {
        create: Some(native::file_create),
        open: Some(native::file_open),
        get: Some(native::file_get),
        specific: Some(native::file_specific),
        optional: Some(native::file_optional),
        close: Some(native::file_close),
    },
    group_cls: sys::H5VL_group_class_t {
        create: Some(native::group_create),
        open: Some(native::group_open),
        get: Some(native::group_get),
        specific: Some(native::group_specific),
        optional: Some(native::group_optional),
        close: Some(native::group_close),
    },
    link_cls: sys::H5VL_link_class_t {
        create: Some(native::link_create),
        copy: Some(native::link_copy),
        move_: Some(native::link_move),
        get: Some(native::link_get),
        specific: Some(native::link_specific),
        optional: Some(native::link_optional),
    },
    object_cls: sys::H5VL_object_class_t {
        open: Some(native::object_open),
        copy: Some(native::object_copy),
        get: Some(native::object_get),
        specific: Some(native::object_specific),
        optional: Some(native::object_optional),
    },
    introspect_cls: sys::H5VL_introspect_class_t {
        get_conn_cls: Some(native::get_conn_cls),
        get_cap_flags: Some(get_cap_flags),
        opt_query: Some(native::opt_query),
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
        put: Some(native::blob_put),
        get: Some(native::blob_get),
        specific: Some(native::blob_specific),
        optional: Some(native::blob_optional),
    },
    token_cls: sys::H5VL_token_class_t {
        cmp: Some(native::token_cmp),
        to_str: Some(native::token_to_str),
        from_str: Some(native::token_from_str),
    },
    optional: Some(native::optional),
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
