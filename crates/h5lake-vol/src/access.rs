//! What each open store was opened with — file locking, SWMR reading and
//! writing,
//! from the file access list and the open flags, or, for a store reached
//! through an external link, from the link access list or the linking
//! file. A store of objects takes no locks and needs no SWMR mode, but
//! HDF5 programs ask these back (`H5Fget_access_plist`, `H5Fget_intent`;
//! h5py's `File(locking=…)`, `get(…, elink_locking=…, elink_swmr=…)`) and
//! should get what they set.

use std::sync::{Arc, Mutex, Weak};

use h5lake_engine::{Domain, OpenMode};

use crate::api::Api;
use crate::sys::hid_t;

/// HDF5's `H5F_ACC_SWMR_READ`.
pub const ACC_SWMR_READ: u32 = 0x0040;
/// HDF5's `H5F_ACC_SWMR_WRITE`.
pub const ACC_SWMR_WRITE: u32 = 0x0020;
const ACC_RDWR: u32 = 0x0001;
/// `H5F_ACC_DEFAULT`: an external link inherits the linking file's intent.
const ACC_DEFAULT: u32 = 0xffff;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Access {
    /// `H5Pset_file_locking`'s (use locking, ignore when disabled).
    pub locking: (bool, bool),
    pub swmr_read: bool,
    /// Opened for, or switched to, SWMR writing (`H5Fstart_swmr_write`).
    /// Every write to a store is already one its readers see whole or not
    /// at all (see h5lake-store), which is what SWMR asks of a writer.
    pub swmr_write: bool,
    /// How compound datasets created through the file are laid out (the
    /// connector's info string, `layout=`; see [`crate::info`]).
    pub layout: crate::info::Layout,
}

impl Default for Access {
    /// HDF5's defaults.
    fn default() -> Self {
        Access {
            locking: (true, true),
            swmr_read: false,
            swmr_write: false,
            layout: crate::info::Layout::Row,
        }
    }
}

impl Access {
    /// The SWMR bits of `H5Fget_intent`.
    pub fn swmr_flags(&self) -> u32 {
        (if self.swmr_read { ACC_SWMR_READ } else { 0 })
            | (if self.swmr_write { ACC_SWMR_WRITE } else { 0 })
    }
}

static OPEN: Mutex<Vec<(Weak<Domain>, Access)>> = Mutex::new(Vec::new());

/// Records what `dom` was opened with.
pub fn record(dom: &Arc<Domain>, access: Access) {
    let mut open = OPEN.lock().unwrap_or_else(|e| e.into_inner());
    open.retain(|(w, _)| w.strong_count() > 0 && !std::ptr::eq(w.as_ptr(), Arc::as_ptr(dom)));
    open.push((Arc::downgrade(dom), access));
}

/// Whether this process has the store `name` open through the connector:
/// `Some(true)` when only for reading, `Some(false)` when some handle may
/// write. (HDF5 refuses to truncate a file it has open, and to open one
/// for writing that it has open only for reading.)
pub fn already_open(name: &str) -> Option<bool> {
    let same = |loc: &str| {
        if loc.contains("://") || name.contains("://") {
            return loc == name;
        }
        match (std::fs::canonicalize(loc), std::fs::canonicalize(name)) {
            (Ok(a), Ok(b)) => a == b,
            _ => false,
        }
    };
    let live: Vec<Arc<Domain>> = {
        let open = OPEN.lock().unwrap_or_else(|e| e.into_inner());
        open.iter().filter_map(|(w, _)| w.upgrade()).collect()
    };
    live.iter()
        .filter(|d| same(d.location()))
        .map(|d| d.readonly())
        .reduce(|a, b| a && b)
}

/// What `dom` was opened with (HDF5's defaults if nothing was recorded).
pub fn of(dom: &Arc<Domain>) -> Access {
    let open = OPEN.lock().unwrap_or_else(|e| e.into_inner());
    open.iter()
        .find(|(w, _)| std::ptr::eq(w.as_ptr(), Arc::as_ptr(dom)))
        .map_or_else(Access::default, |(_, a)| *a)
}

/// The locking a file access property list asks for (`None`: the list's
/// defaults, or no list).
pub fn locking_of(api: &Api, fapl: hid_t) -> Option<(bool, bool)> {
    if fapl <= 0 {
        return None;
    }
    let (mut use_locking, mut ignore) = (true, true);
    // SAFETY: the caller's property list; failure leaves `None`.
    let ok = unsafe {
        api.f
            .H5Pget_file_locking(fapl, &mut use_locking, &mut ignore)
    } >= 0;
    ok.then_some((use_locking, ignore))
}

/// How a link access property list asks external stores to be opened:
/// intent, SWMR reading and locking, each `None` to inherit the linking
/// file's.
#[derive(Clone, Copy, Debug, Default)]
pub struct ExtOpen {
    pub mode: Option<OpenMode>,
    pub swmr_read: Option<bool>,
    pub locking: Option<(bool, bool)>,
}

impl ExtOpen {
    /// From `H5Pset_elink_acc_flags` and `H5Pset_elink_fapl` on `lapl`.
    pub fn of_lapl(api: &Api, lapl: hid_t) -> ExtOpen {
        let mut ext = ExtOpen::default();
        if lapl <= 0 {
            return ext;
        }
        let mut flags = ACC_DEFAULT;
        // SAFETY: the caller's property list.
        if unsafe { api.f.H5Pget_elink_acc_flags(lapl, &mut flags) } >= 0 && flags != ACC_DEFAULT {
            ext.mode = Some(if flags & ACC_RDWR != 0 {
                OpenMode::ReadWrite
            } else {
                OpenMode::Read
            });
            ext.swmr_read = Some(flags & ACC_SWMR_READ != 0);
        }
        // SAFETY: a copy of the list's external-link fapl, closed here.
        unsafe {
            let fapl = api.f.H5Pget_elink_fapl(lapl);
            if fapl > 0 {
                ext.locking = locking_of(api, fapl);
                api.f.H5Pclose(fapl);
            }
        }
        ext
    }

    /// What a store reached from `from` through an external link is
    /// opened with.
    pub fn access_from(&self, from: &Arc<Domain>) -> Access {
        let parent = of(from);
        Access {
            locking: self.locking.unwrap_or(parent.locking),
            swmr_read: self.swmr_read.unwrap_or(parent.swmr_read),
            swmr_write: false,
            // A store reached through an external link is written as the
            // linking file is.
            layout: parent.layout,
        }
    }
}
