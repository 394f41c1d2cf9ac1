//! A thin, safe layer over the HDF5 C library: owned handles, error
//! checking and the few loops (links, attributes, chunks) the rest of the
//! crate needs.
//!
//! libhdf5 is not thread-safe as built here, so every call runs under the
//! library-wide reentrant lock of the `hdf5` crate ([`lib`]). Chunk bytes are
//! read with plain `pread`s outside that lock, which is what lets loads run
//! in parallel.

use std::ffi::{c_char, c_void, CStr, CString};

use hdf5_sys::h5::{herr_t, hsize_t, H5_index_t, H5_iter_order_t};
use hdf5_sys::h5i::hid_t;

use crate::{Hdf5Error, Result};

/// Runs `f` holding the HDF5 library lock (and initialising the library on
/// first use, with its error printing turned off).
pub(crate) fn lib<T>(f: impl FnOnce() -> T) -> T {
    static STARTED: std::sync::Once = std::sync::Once::new();
    STARTED.call_once(start_without_env_connector);
    hdf5::sync::sync(f)
}

/// Starts this copy of the library with `HDF5_VOL_CONNECTOR` hidden from
/// it. Every libhdf5 reads that variable as it starts; naming h5lake's
/// connector (as a user of the connector exports it), it would make this
/// copy load the connector plugin too, which works only with the library
/// that loaded it: this copy would fail to start, printing HDF5's error
/// stack, and route default file opens into the plugin. The variable is
/// put back at once, for the program's own HDF5.
fn start_without_env_connector() {
    const VAR: &str = "HDF5_VOL_CONNECTOR";
    let saved = std::env::var_os(VAR);
    if saved.is_some() {
        std::env::remove_var(VAR);
    }
    hdf5::sync::sync(|| unsafe { hdf5_sys::h5::H5open() });
    if let Some(v) = saved {
        std::env::set_var(VAR, v);
    }
}

/// The message of the library's current error stack.
fn last_error(what: &str) -> Hdf5Error {
    let detail = hdf5::Error::query()
        .map(|e| e.to_string())
        .unwrap_or_else(|_| "unknown HDF5 error".into());
    Hdf5Error::Library(format!("{what}: {detail}"))
}

/// Checks a handle-returning call.
pub(crate) fn check_id(id: hid_t, what: &str) -> Result<Hid> {
    if id < 0 {
        Err(last_error(what))
    } else {
        Ok(Hid(id))
    }
}

/// Checks a status-returning call (`herr_t` or `htri_t`).
pub(crate) fn check(status: impl Into<i64>, what: &str) -> Result<i64> {
    let s = status.into();
    if s < 0 {
        Err(last_error(what))
    } else {
        Ok(s)
    }
}

/// A new property list of `class` (read under the lock: the class ids
/// exist once the library is initialised).
pub(crate) fn plist(class: &'static hid_t) -> Result<Hid> {
    check_id(
        lib(|| unsafe { hdf5_sys::h5p::H5Pcreate(*class) }),
        "creating a property list",
    )
}

/// A file access list naming HDF5's native connector. This copy of the
/// library reads `HDF5_VOL_CONNECTOR` when it starts, as every libhdf5
/// does: in a process where that names h5lake's own connector (a program
/// running through it, or h5lake inside such a program), a file opened
/// with the default list would go through that connector, into the other
/// copy of the library, instead of being read here.
pub(crate) fn native_fapl() -> Result<Hid> {
    let fapl = plist(hdf5_sys::h5p::H5P_CLS_FILE_ACCESS)?;
    check(
        lib(|| unsafe {
            hdf5_sys::h5p::H5Pset_vol(fapl.id(), *hdf5_sys::h5vl::H5VL_NATIVE, std::ptr::null())
        }),
        "choosing HDF5's native connector",
    )?;
    Ok(fapl)
}

/// An owned HDF5 identifier, released on drop.
#[derive(Debug)]
pub(crate) struct Hid(pub hid_t);

impl Hid {
    pub(crate) fn id(&self) -> hid_t {
        self.0
    }
}

impl Drop for Hid {
    fn drop(&mut self) {
        if self.0 > 0 {
            lib(|| unsafe {
                hdf5_sys::h5i::H5Idec_ref(self.0);
            });
        }
    }
}

pub(crate) fn cstr(s: &str) -> Result<CString> {
    CString::new(s).map_err(|_| Hdf5Error::Unsupported(format!("name {s:?} contains a NUL byte")))
}

/// An iteration callback (links or attributes, `I` = their info struct)
/// that appends each name to the `Vec<String>` behind `data`.
unsafe extern "C" fn collect_name<I>(
    _obj: hid_t,
    name: *const c_char,
    _info: *const I,
    data: *mut c_void,
) -> herr_t {
    let out = &mut *data.cast::<Vec<String>>();
    out.push(CStr::from_ptr(name).to_string_lossy().into_owned());
    0
}

/// A name HDF5 gives through `get(obj, buf, size)` (the size asked first).
fn sized_name(
    obj: hid_t,
    get: unsafe extern "C" fn(hid_t, *mut std::ffi::c_char, usize) -> isize,
) -> Option<String> {
    let n = lib(|| unsafe { get(obj, std::ptr::null_mut(), 0) });
    let n = usize::try_from(n).ok()?;
    let mut buf = vec![0u8; n + 1];
    let got = lib(|| unsafe { get(obj, buf.as_mut_ptr().cast(), n + 1) });
    (got >= 0).then(|| String::from_utf8_lossy(&buf[..n]).into_owned())
}

/// The name of the file `obj` is in (as HDF5 opened it): another file than
/// the one opened when `obj` was reached through an external link.
pub(crate) fn file_name_of(obj: hid_t) -> Option<String> {
    sized_name(obj, hdf5_sys::h5f::H5Fget_name)
}

/// The path of `obj` in its own file.
pub(crate) fn path_of(obj: hid_t) -> Option<String> {
    sized_name(obj, hdf5_sys::h5i::H5Iget_name)
}

/// Names of the links of a group, in name order (h5py's iteration order).
pub(crate) fn link_names(group: hid_t) -> Result<Vec<String>> {
    let index = if tracks_creation_order(group, true)? {
        H5_index_t::H5_INDEX_CRT_ORDER
    } else {
        H5_index_t::H5_INDEX_NAME
    };
    let mut names: Vec<String> = Vec::new();
    let status = lib(|| unsafe {
        hdf5_sys::h5l::H5Literate2(
            group,
            index,
            H5_iter_order_t::H5_ITER_INC,
            std::ptr::null_mut(),
            Some(collect_name),
            (&mut names as *mut Vec<String>).cast(),
        )
    });
    check(status, "listing the links of a group")?;
    Ok(names)
}

/// Whether a group keeps the creation order of its links (`links`) or a
/// dataset that of its attributes — h5py's `track_order`, HSDS's
/// `CreateOrder`.
pub(crate) fn tracks_creation_order(obj: hid_t, links: bool) -> Result<bool> {
    let plist = check_id(
        lib(|| unsafe {
            if links {
                hdf5_sys::h5g::H5Gget_create_plist(obj)
            } else {
                hdf5_sys::h5d::H5Dget_create_plist(obj)
            }
        }),
        "reading creation properties",
    )?;
    let mut flags: std::os::raw::c_uint = 0;
    let status = lib(|| unsafe {
        if links {
            hdf5_sys::h5p::H5Pget_link_creation_order(plist.id(), &mut flags)
        } else {
            hdf5_sys::h5p::H5Pget_attr_creation_order(plist.id(), &mut flags)
        }
    });
    check(status, "reading the creation order setting")?;
    Ok(flags & hdf5_sys::h5p::H5P_CRT_ORDER_TRACKED != 0)
}

/// Names of the attributes of an object, in creation order when the file
/// tracks it, else name order.
pub(crate) fn attr_names(obj: hid_t) -> Result<Vec<String>> {
    let mut names: Vec<String> = Vec::new();
    // Creation order fails unless the file tracks it; then fall back to names.
    for index in [H5_index_t::H5_INDEX_CRT_ORDER, H5_index_t::H5_INDEX_NAME] {
        names.clear();
        let mut idx: hsize_t = 0;
        let status = lib(|| unsafe {
            hdf5_sys::h5a::H5Aiterate2(
                obj,
                index,
                H5_iter_order_t::H5_ITER_INC,
                &mut idx,
                Some(collect_name),
                (&mut names as *mut Vec<String>).cast(),
            )
        });
        if status >= 0 {
            return Ok(names);
        }
    }
    Err(last_error("listing attributes"))
}

/// One allocated chunk of a chunked dataset, as the file stores it.
#[derive(Clone, Debug)]
pub(crate) struct StoredChunk {
    /// Element coordinates of the chunk's first element.
    pub offset: Vec<u64>,
    /// Bit `i` set: filter `i` of the pipeline was skipped for this chunk.
    pub filter_mask: u32,
    /// Byte address in the file.
    pub addr: u64,
    pub size: u64,
}

/// Every allocated chunk of a chunked dataset, in one pass over the chunk
/// index (`H5Dchunk_iter`).
pub(crate) fn stored_chunks(dset: hid_t, rank: usize) -> Result<Vec<StoredChunk>> {
    struct Ctx {
        rank: usize,
        out: Vec<StoredChunk>,
    }
    unsafe extern "C" fn each(
        offset: *const hsize_t,
        filter_mask: u32,
        addr: u64,
        size: hsize_t,
        data: *mut c_void,
    ) -> i32 {
        let ctx = &mut *data.cast::<Ctx>();
        let offset = std::slice::from_raw_parts(offset, ctx.rank).to_vec();
        ctx.out.push(StoredChunk {
            offset,
            filter_mask,
            addr,
            size,
        });
        0
    }
    let mut ctx = Ctx {
        rank,
        out: Vec::new(),
    };
    let status = lib(|| unsafe {
        hdf5_sys::h5d::H5Dchunk_iter(
            dset,
            hdf5_sys::h5p::H5P_DEFAULT,
            Some(each),
            (&mut ctx as *mut Ctx).cast(),
        )
    });
    check(status, "listing the chunks of a dataset")?;
    Ok(ctx.out)
}

/// A dataspace's current and maximum dims (`None` for a scalar, `Some(None)`
/// never: null dataspaces are reported separately by the caller).
pub(crate) fn space_dims(space: hid_t) -> Result<(Vec<u64>, Vec<u64>)> {
    let rank = check(
        lib(|| unsafe { hdf5_sys::h5s::H5Sget_simple_extent_ndims(space) }),
        "reading a dataspace",
    )? as usize;
    let mut dims = vec![0u64; rank];
    let mut maxdims = vec![0u64; rank];
    check(
        lib(|| unsafe {
            hdf5_sys::h5s::H5Sget_simple_extent_dims(space, dims.as_mut_ptr(), maxdims.as_mut_ptr())
        }),
        "reading a dataspace",
    )?;
    Ok((dims, maxdims))
}
