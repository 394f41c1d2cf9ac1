//! Native-format storage settings a program may put on its property lists,
//! which a store of objects cannot honour: file drivers (VFDs) and file
//! images on a file access list, virtual and external-storage layouts on a
//! dataset creation list. Each is refused by name before anything is
//! created — never accepted and ignored (a virtual dataset reading zeros, a
//! store named after a Python object). An in-memory file (the core driver
//! without a backing store) is a scratch store that is gone when closed.

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, PoisonError, Weak};

use h5lake_engine::Domain;

use crate::api::{Api, GlobalId};
use crate::error::{check, Result, VolError};
use crate::sys::{self, hid_t};

/// HDF5's built-in file drivers, by the global variable holding the id of
/// each (`H5FD_SEC2` is `H5FD_SEC2_id_g`); a build lacks some of them.
const DRIVERS: [(&str, &str); 15] = [
    ("sec2", "H5FD_SEC2_id_g"),
    ("core", "H5FD_CORE_id_g"),
    ("stdio", "H5FD_STDIO_id_g"),
    ("direct", "H5FD_DIRECT_id_g"),
    ("family", "H5FD_FAMILY_id_g"),
    ("log", "H5FD_LOG_id_g"),
    ("multi", "H5FD_MULTI_id_g"),
    ("splitter", "H5FD_SPLITTER_id_g"),
    ("onion", "H5FD_ONION_id_g"),
    ("mpio", "H5FD_MPIO_id_g"),
    ("ros3", "H5FD_ROS3_id_g"),
    ("mirror", "H5FD_MIRROR_id_g"),
    ("hdfs", "H5FD_HDFS_id_g"),
    ("subfiling", "H5FD_SUBFILING_id_g"),
    ("ioc", "H5FD_IOC_id_g"),
];

/// The ids of the built-in drivers this HDF5 has.
fn builtin_drivers() -> &'static [(&'static str, GlobalId)] {
    static IDS: OnceLock<Vec<(&'static str, GlobalId)>> = OnceLock::new();
    IDS.get_or_init(|| {
        DRIVERS
            .iter()
            .filter_map(|&(name, var)| Some((name, crate::api::optional_global(var)?)))
            .collect()
    })
}

/// `H5FD_get_class`: HDF5's (library-private, but exported by the usual
/// shared builds) lookup of a driver id's class, whose name names a driver
/// registered by the program (h5py's "fileobj"). Absent, such drivers go
/// unnamed.
type GetClass = unsafe extern "C" fn(hid_t) -> *const sys::H5FD_class_t;

fn get_class() -> Option<GetClass> {
    static F: OnceLock<Option<GetClass>> = OnceLock::new();
    *F.get_or_init(|| {
        let lib = crate::api::host_library().ok()?;
        // SAFETY: the symbol, when present, is HDF5's function of this type.
        let f = unsafe { lib.get::<GetClass>(b"H5FD_get_class\0") }.ok()?;
        let f = *f;
        // The library stays loaded (it loaded this plugin).
        std::mem::forget(lib);
        Some(f)
    })
}

/// The name of file driver `driver` (an id from `H5Pget_driver`).
unsafe fn driver_name(driver: hid_t) -> Option<String> {
    if let Some((name, _)) = builtin_drivers().iter().find(|(_, g)| g.id() == driver) {
        return Some((*name).to_string());
    }
    let cls = get_class()?(driver);
    if cls.is_null() || (*cls).name.is_null() {
        return None;
    }
    Some(
        std::ffi::CStr::from_ptr((*cls).name)
            .to_string_lossy()
            .into_owned(),
    )
}

/// What each refused driver is, for the message.
fn driver_role(name: &str) -> &'static str {
    match name {
        "fileobj" => "h5py's driver for Python file-like objects such as io.BytesIO",
        "family" => "a native file split into numbered member files",
        "multi" | "split" => "a native file split into metadata and raw-data files",
        "log" => "logs the native file's I/O",
        "splitter" => "writes a native file and a copy of it",
        "onion" => "revisions of a native file",
        "mpio" | "subfiling" | "ioc" => "parallel I/O on a native file",
        "ros3" | "hdfs" => "reads a native file from a remote store",
        "mirror" => "mirrors a native file to a server",
        _ => "it reads and writes the bytes of a native file",
    }
}

/// Where a file access list puts a store.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Placement {
    /// At the name given.
    Named,
    /// In memory only (the core driver without a backing store, creating a
    /// file): a scratch store that nothing outside the process sees and
    /// that is gone when closed (see [`scratch_domain`]).
    Scratch,
}

/// Checks a file access list for a file being created (`create`) or
/// opened (`writable`: for writing): refuses a driver or file image a
/// store cannot honour. Fine: the POSIX drivers (sec2, the default; stdio;
/// direct); the core driver with a backing store (the contents end up at
/// the name either way), and without one when creating (a scratch store)
/// or opening read-only.
///
/// # Errors
/// [`VolError::Unsupported`] naming the driver or the file image.
pub unsafe fn check_fapl(
    api: &Api,
    fapl: hid_t,
    create: bool,
    writable: bool,
) -> Result<Placement> {
    let mut placement = Placement::Named;
    if fapl <= 0 {
        return Ok(placement);
    }
    let f = &api.f;
    let driver = check(f.H5Pget_driver(fapl), "H5Pget_driver")?;
    match driver_name(driver).as_deref() {
        Some("sec2" | "stdio" | "direct") => {}
        Some("core") => {
            let (mut increment, mut backing_store) = (0usize, true);
            check(
                f.H5Pget_fapl_core(fapl, &mut increment, &mut backing_store),
                "H5Pget_fapl_core",
            )?;
            if !backing_store && create {
                placement = Placement::Scratch;
            } else if !backing_store && writable {
                return Err(VolError::Unsupported(
                    "opening a store for writing with the core file driver without a backing \
                     store (changes kept in memory and discarded: \
                     H5Pset_fapl_core(backing_store=false), h5py's driver=\"core\", \
                     backing_store=False; open it read-only, or create a new in-memory file)"
                        .into(),
                ));
            }
        }
        Some(name) => {
            return Err(VolError::Unsupported(format!(
                "the {name:?} file driver (VFD: {}; a store is read and written without \
                 HDF5's file drivers)",
                driver_role(name)
            )))
        }
        None => {
            return Err(VolError::Unsupported(
                "a file driver (VFD) other than sec2, stdio, direct and core (a driver the \
                 program registered, such as h5py's fileobj driver for Python file-like \
                 objects; a store is read and written without HDF5's file drivers)"
                    .into(),
            ))
        }
    }
    let mut len = 0usize;
    check(
        f.H5Pget_file_image(fapl, std::ptr::null_mut(), &mut len),
        "H5Pget_file_image",
    )?;
    if len > 0 {
        return Err(VolError::Unsupported(
            "file images (H5Pset_file_image: the bytes of a native HDF5 file in memory)".into(),
        ));
    }
    Ok(placement)
}

/// Whether a file access list asks for what only the native format has:
/// a file driver other than the POSIX ones and the core driver (h5py's
/// driver for Python file objects, family, split, ...), or a file image.
/// Such files are opened and created by HDF5's native connector.
pub unsafe fn needs_native_format(api: &Api, fapl: hid_t) -> bool {
    if fapl <= 0 {
        return false;
    }
    let f = &api.f;
    let driver = f.H5Pget_driver(fapl);
    if driver < 0 {
        return false;
    }
    if !matches!(
        driver_name(driver).as_deref(),
        Some("sec2" | "stdio" | "direct" | "core")
    ) {
        return true;
    }
    let mut len = 0usize;
    f.H5Pget_file_image(fapl, std::ptr::null_mut(), &mut len) >= 0 && len > 0
}

/// Scratch stores: each with the directory holding it and the name the
/// program gave.
static SCRATCH: Mutex<Vec<(Weak<Domain>, PathBuf, String)>> = Mutex::new(Vec::new());

fn scratch() -> std::sync::MutexGuard<'static, Vec<(Weak<Domain>, PathBuf, String)>> {
    SCRATCH.lock().unwrap_or_else(PoisonError::into_inner)
}

/// A new store for an in-memory file named `name` (HDF5's core driver
/// without a backing store): made in a fresh private directory under the
/// system's temporary directory, never at `name`, and removed when its
/// last object closes ([`sweep`]) or the library closes ([`remove_all`]).
///
/// # Errors
/// The temporary directory cannot be made, or the store in it.
pub fn scratch_domain(name: &str, root_props: serde_json::Value) -> Result<Arc<Domain>> {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let base = std::env::temp_dir();
    let dir = loop {
        let stamp = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        let dir = base.join(format!(
            "h5lake-in-memory-{}-{}-{stamp:x}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        match std::fs::create_dir(&dir) {
            Ok(()) => break dir,
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => {
                return Err(VolError::Os {
                    errno: e.raw_os_error().unwrap_or(libc::EIO),
                    msg: format!("cannot make a scratch store for in-memory file {name}: {e}"),
                })
            }
        }
    };
    let store = dir.join("store");
    let dom = match crate::objects::open_domain_with(
        &store.to_string_lossy(),
        h5lake_engine::OpenMode::Truncate,
        root_props,
    ) {
        Ok(d) => d,
        Err(e) => {
            let _ = std::fs::remove_dir_all(&dir);
            return Err(e);
        }
    };
    let mut all = scratch();
    all.push((Arc::downgrade(&dom), dir, name.to_string()));
    Ok(dom)
}

/// The name the program gave `dom`, when it is a scratch store.
pub fn scratch_name(dom: &Arc<Domain>) -> Option<String> {
    let all = scratch();
    all.iter()
        .find(|(w, _, _)| std::ptr::eq(w.as_ptr(), Arc::as_ptr(dom)))
        .map(|(_, _, name)| name.clone())
}

/// Removes the scratch stores no open object holds any more.
pub fn sweep() {
    let mut all = scratch();
    if all.is_empty() {
        return;
    }
    all.retain(|(w, dir, _)| {
        if w.strong_count() > 0 {
            return true;
        }
        let _ = std::fs::remove_dir_all(dir);
        false
    });
}

/// Removes every scratch store (the library is closing).
pub fn remove_all() {
    for (_, dir, _) in scratch().drain(..) {
        let _ = std::fs::remove_dir_all(dir);
    }
}

/// Refuses a dataset creation list with a layout a store cannot honour:
/// external raw-data files. (Virtual layouts are stored as h5lake's: see
/// [`crate::virtual_layout`].)
///
/// # Errors
/// [`VolError::Unsupported`] naming the layout.
pub unsafe fn check_dcpl(api: &Api, dcpl: hid_t) -> Result<()> {
    if dcpl <= 0 {
        return Ok(());
    }
    let f = &api.f;
    if check(f.H5Pget_external_count(dcpl), "H5Pget_external_count")? > 0 {
        return Err(VolError::Unsupported(
            "external raw-data storage (H5Pset_external, h5py's external=)".into(),
        ));
    }
    Ok(())
}
