//! The HDF5 library that loaded this plugin, reached at run time.
//!
//! A VOL plugin must call back into the *same* HDF5 library that loaded it
//! (its property lists, dataspaces and datatypes are that library's ids).
//! h5py's wheel bundles a renamed copy (`libhdf5-<hash>.so.*`) loaded with
//! local symbol scope, so no link line could name it: the plugin finds the
//! loaded library among the process's shared objects instead, and binds
//! every function through [`sys::Hdf5Api`].

use std::ffi::{c_char, c_int, c_void, CStr, CString};
use std::sync::OnceLock;

use crate::sys::{self, hid_t};

/// The bound library and the handful of its global ids the plugin uses.
pub struct Api {
    pub f: sys::Hdf5Api,
    pub g: Globals,
}

/// A global `hid_t` variable of the library. Read at each use, not once:
/// the library assigns new ids when it is closed and opened again.
#[derive(Clone, Copy)]
pub struct GlobalId(*const hid_t);

// SAFETY: the pointer is to a variable of the loaded library, which lives
// as long as the process; it is only read.
unsafe impl Send for GlobalId {}
unsafe impl Sync for GlobalId {}

impl GlobalId {
    /// The variable's current value.
    pub fn id(self) -> hid_t {
        // SAFETY: see the `Send`/`Sync` note.
        unsafe { self.0.read_volatile() }
    }
}

/// Ids HDF5 exports as global variables (valid once the library is open).
pub struct Globals {
    pub err_cls: GlobalId,
    pub maj_vol: GlobalId,
    pub min_notfound: GlobalId,
    pub min_exists: GlobalId,
    pub min_unsupported: GlobalId,
    pub min_cantopen: GlobalId,
    pub min_badvalue: GlobalId,
    pub min_readerror: GlobalId,
    pub min_writeerror: GlobalId,
    pub min_noperm: GlobalId,
    pub min_cantcreate: GlobalId,
    pub min_cantdelete: GlobalId,
    pub min_badtype: GlobalId,
    pub p_dataset_create: GlobalId,
    pub p_group_create: GlobalId,
    pub p_file_create: GlobalId,
    pub p_file_access: GlobalId,
    pub p_dataset_access: GlobalId,
    pub p_attribute_create: GlobalId,
    pub p_datatype_create: GlobalId,
    pub t_c_s1: GlobalId,
    pub t_std_ref_obj: GlobalId,
    pub t_std_ref: GlobalId,
    pub t_std_ref_dsetreg: GlobalId,
    pub t_std_i8le: GlobalId,
    pub t_std_b8le: GlobalId,
    pub t_ieee_f32le: GlobalId,
    pub t_ieee_f64le: GlobalId,
}

static API: OnceLock<Result<Api, String>> = OnceLock::new();

/// The host library, bound on first use.
///
/// # Errors
/// When no loaded HDF5 library exports the VOL API (the plugin was loaded
/// by something other than HDF5).
pub fn h5() -> Result<&'static Api, String> {
    API.get_or_init(|| unsafe { bind() })
        .as_ref()
        .map_err(Clone::clone)
}

unsafe fn bind() -> Result<Api, String> {
    let lib = host_library()?;
    let f = sys::Hdf5Api::from_library(lib).map_err(|e| e.to_string())?;
    let g = globals(&f)?;
    Ok(Api { f, g })
}

/// The global `hid_t` variable named `name`.
///
/// A program linked against libhdf5 (not h5py, which loads it privately)
/// may hold its own copy of the variable (a copy relocation): the library
/// then updates that copy, so it is the one to read. It is found in the
/// global scope, in an object other than the library and not another HDF5.
unsafe fn global(lib: &libloading::Library, name: &str) -> Result<GlobalId, String> {
    let cname = CString::new(name).expect("no NUL in symbol names");
    let sym: libloading::Symbol<*const hid_t> = lib
        .get(cname.as_bytes_with_nul())
        .map_err(|e| format!("HDF5 does not export {name}: {e}"))?;
    let in_lib = *sym;
    let this = libloading::os::unix::Library::this();
    if let Ok(g) = this.get::<*const hid_t>(cname.as_bytes_with_nul()) {
        let in_scope = *g;
        if in_scope != in_lib && !in_scope.is_null() {
            let (mut a, mut b): (libc::Dl_info, libc::Dl_info) =
                (std::mem::zeroed(), std::mem::zeroed());
            if libc::dladdr(in_lib.cast(), &mut a) != 0
                && libc::dladdr(in_scope.cast(), &mut b) != 0
                && a.dli_fbase != b.dli_fbase
            {
                let owner = if b.dli_fname.is_null() {
                    ""
                } else {
                    CStr::from_ptr(b.dli_fname).to_str().unwrap_or("")
                };
                if !owner
                    .rsplit('/')
                    .next()
                    .unwrap_or("")
                    .starts_with("libhdf5")
                {
                    return Ok(GlobalId(in_scope));
                }
            }
        }
    }
    Ok(GlobalId(in_lib))
}

/// The global `hid_t` variable named `name`, if this HDF5 exports it (a
/// build lacks the file drivers it was configured without).
pub fn optional_global(name: &str) -> Option<GlobalId> {
    let lib = host_library().ok()?;
    // SAFETY: reads symbol addresses of the loaded library.
    unsafe { global(&lib, name) }.ok()
}

unsafe fn globals(f: &sys::Hdf5Api) -> Result<Globals, String> {
    if f.H5open() < 0 {
        return Err("H5open failed".into());
    }
    // from_library moved the handle into `f`; a second handle to the same
    // (already loaded) object reads the variables.
    let lib = host_library()?;
    Ok(Globals {
        err_cls: global(&lib, "H5E_ERR_CLS_g")?,
        maj_vol: global(&lib, "H5E_VOL_g")?,
        min_notfound: global(&lib, "H5E_NOTFOUND_g")?,
        min_exists: global(&lib, "H5E_EXISTS_g")?,
        min_unsupported: global(&lib, "H5E_UNSUPPORTED_g")?,
        min_cantopen: global(&lib, "H5E_CANTOPENOBJ_g")?,
        min_badvalue: global(&lib, "H5E_BADVALUE_g")?,
        min_readerror: global(&lib, "H5E_READERROR_g")?,
        min_writeerror: global(&lib, "H5E_WRITEERROR_g")?,
        min_noperm: global(&lib, "H5E_CANTOPENFILE_g")?,
        min_cantcreate: global(&lib, "H5E_CANTCREATE_g")?,
        min_cantdelete: global(&lib, "H5E_CANTDELETE_g")?,
        min_badtype: global(&lib, "H5E_BADTYPE_g")?,
        p_dataset_create: global(&lib, "H5P_CLS_DATASET_CREATE_ID_g")?,
        p_group_create: global(&lib, "H5P_CLS_GROUP_CREATE_ID_g")?,
        p_file_create: global(&lib, "H5P_CLS_FILE_CREATE_ID_g")?,
        p_file_access: global(&lib, "H5P_CLS_FILE_ACCESS_ID_g")?,
        p_dataset_access: global(&lib, "H5P_CLS_DATASET_ACCESS_ID_g")?,
        p_attribute_create: global(&lib, "H5P_CLS_ATTRIBUTE_CREATE_ID_g")?,
        p_datatype_create: global(&lib, "H5P_CLS_DATATYPE_CREATE_ID_g")?,
        t_c_s1: global(&lib, "H5T_C_S1_g")?,
        t_std_ref_obj: global(&lib, "H5T_STD_REF_OBJ_g")?,
        t_std_ref: global(&lib, "H5T_STD_REF_g")?,
        t_std_ref_dsetreg: global(&lib, "H5T_STD_REF_DSETREG_g")?,
        t_std_i8le: global(&lib, "H5T_STD_I8LE_g")?,
        t_std_b8le: global(&lib, "H5T_STD_B8LE_g")?,
        t_ieee_f32le: global(&lib, "H5T_IEEE_F32LE_g")?,
        t_ieee_f64le: global(&lib, "H5T_IEEE_F64LE_g")?,
    })
}

/// The loaded HDF5 library: the first shared object named `libhdf5*`
/// (not the high-level `libhdf5_hl`) that exports the VOL API, else the
/// program itself (HDF5 linked statically into it).
pub(crate) fn host_library() -> Result<libloading::Library, String> {
    loaded_library(
        |file| file.starts_with("libhdf5") && !file.starts_with("libhdf5_hl"),
        b"H5VLregister_connector\0",
    )
    .ok_or_else(|| "the h5lake VOL connector found no loaded HDF5 library to call".into())
}

/// HDF5's high-level library (`libhdf5_hl`: dimension scales and the
/// like), if the program has loaded it.
pub(crate) fn hl_library() -> Option<libloading::Library> {
    loaded_library(|file| file.starts_with("libhdf5_hl"), b"H5DSwith_new_ref\0")
}

/// The first loaded shared object whose file name `wanted` accepts and
/// that exports `symbol`, else the program itself if it exports it.
fn loaded_library(wanted: impl Fn(&str) -> bool, symbol: &[u8]) -> Option<libloading::Library> {
    let mut names: Vec<CString> = Vec::new();
    unsafe extern "C" fn collect(
        info: *mut libc::dl_phdr_info,
        _size: usize,
        data: *mut c_void,
    ) -> c_int {
        let names = &mut *(data as *mut Vec<CString>);
        let name = (*info).dlpi_name;
        if !name.is_null() {
            names.push(CStr::from_ptr(name as *const c_char).to_owned());
        }
        0
    }
    // SAFETY: the callback only reads the entry it is given.
    unsafe { libc::dl_iterate_phdr(Some(collect), &mut names as *mut _ as *mut c_void) };
    for name in names {
        let path = name.to_string_lossy().into_owned();
        if !wanted(path.rsplit('/').next().unwrap_or(&path)) {
            continue;
        }
        // SAFETY: RTLD_NOLOAD only returns a handle to an object already
        // loaded; nothing runs.
        let lib = unsafe {
            libloading::os::unix::Library::open(Some(&path), libc::RTLD_NOLOAD | libc::RTLD_LAZY)
        };
        if let Ok(lib) = lib {
            if unsafe { lib.get::<*const c_void>(symbol) }.is_ok() {
                return Some(lib.into());
            }
        }
    }
    let this = libloading::os::unix::Library::this();
    unsafe { this.get::<*const c_void>(symbol) }
        .is_ok()
        .then(|| this.into())
}
