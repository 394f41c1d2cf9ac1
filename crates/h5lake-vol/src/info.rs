//! The connector's settings: what follows its name in
//! `HDF5_VOL_CONNECTOR` (`"h5lake layout=columnar"`), or the string a
//! program gives `H5Pset_vol` with the connector's id.
//!
//! HDF5 keeps a connector's "info" in each file access property list and
//! hands it over through the class's info callbacks. This connector's info
//! is a NUL-terminated string of `key=value` settings, kept as given: so a
//! C program passes `"layout=columnar"` to `H5Pset_vol` as it is. The
//! settings are read when a file is created or opened; a key or value the
//! connector does not know fails that call with an HDF5 error naming it.
//!
//! Settings:
//! - `layout=row` (the default): datasets are stored in HSDS's row layout;
//! - `layout=columnar`: compound datasets created through the file are
//!   columnar, each chunk one Parquet object (see [`crate::dataset`]).

use std::ffi::{c_char, c_int, c_void, CStr, CString};

use crate::api::{h5, Api};
use crate::error::{guard, Result, VolError};
use crate::sys::{self, herr_t, hid_t};

/// How compound datasets created through a file are laid out.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Layout {
    /// HSDS's row layout: each element its packed bytes.
    #[default]
    Row,
    /// One Parquet object per chunk, one column per member.
    Columnar,
}

/// The connector's settings.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Settings {
    pub layout: Layout,
}

impl Settings {
    /// Parses an info string: `key=value` settings separated by commas,
    /// semicolons or white space.
    ///
    /// # Errors
    /// An unknown key or value, or a setting without `=`, named.
    pub fn parse(s: &str) -> Result<Settings> {
        let mut out = Settings::default();
        let known = "the h5lake VOL connector knows layout=row and layout=columnar";
        for item in s
            .split(|c: char| c == ',' || c == ';' || c.is_whitespace())
            .filter(|p| !p.is_empty())
        {
            let Some((key, value)) = item.split_once('=') else {
                return Err(VolError::Invalid(format!(
                    "h5lake VOL connector info {s:?}: setting {item:?} is not key=value ({known})"
                )));
            };
            match key {
                "layout" => {
                    out.layout = match value {
                        "row" => Layout::Row,
                        "columnar" => Layout::Columnar,
                        _ => {
                            return Err(VolError::Invalid(format!(
                                "h5lake VOL connector info {s:?}: unknown layout {value:?} \
                                 (layout=row or layout=columnar)"
                            )))
                        }
                    }
                }
                _ => {
                    return Err(VolError::Invalid(format!(
                        "h5lake VOL connector info {s:?}: unknown key {key:?} ({known})"
                    )))
                }
            }
        }
        Ok(out)
    }

    /// The canonical info string.
    pub fn to_info_string(self) -> String {
        match self.layout {
            Layout::Row => "layout=row".into(),
            Layout::Columnar => "layout=columnar".into(),
        }
    }

    /// The settings an info pointer of this connector holds (none: the
    /// defaults).
    ///
    /// # Safety
    /// `info` is null or a NUL-terminated string.
    unsafe fn of_info(info: *const c_void) -> Result<Settings> {
        Settings::parse(&text_of(info))
    }
}

/// The text of an info pointer (none: empty).
///
/// # Safety
/// `info` is null or a NUL-terminated string.
unsafe fn text_of(info: *const c_void) -> String {
    if info.is_null() {
        return String::new();
    }
    CStr::from_ptr(info.cast::<c_char>())
        .to_string_lossy()
        .into_owned()
}

/// A new NUL-terminated copy of `s`, allocated by `alloc` (null when it
/// fails).
///
/// # Safety
/// `alloc(n)` returns null or `n` writable bytes.
unsafe fn dup(s: &str, alloc: impl FnOnce(usize) -> *mut c_void) -> *mut c_void {
    let bytes = CString::new(s.replace('\0', " ")).expect("no NUL left");
    let bytes = bytes.as_bytes_with_nul();
    let p = alloc(bytes.len()).cast::<u8>();
    if !p.is_null() {
        std::ptr::copy_nonoverlapping(bytes.as_ptr(), p, bytes.len());
    }
    p.cast()
}

/// `from_str`: HDF5 handing over the text after the connector's name.
///
/// The text is kept as it is and checked when a file is created or opened
/// with it ([`of_fapl`]), where a bad setting fails that call with an error
/// naming it: HDF5 reads `HDF5_VOL_CONNECTOR` while it initializes, and a
/// failure there leaves the library unusable (h5py crashes on it).
pub unsafe extern "C" fn from_str(s: *const c_char, info: *mut *mut c_void) -> herr_t {
    guard("connector info", -1, || {
        if info.is_null() {
            return Err(VolError::Invalid("no place for the connector info".into()));
        }
        *info = std::ptr::null_mut();
        let text = text_of(s.cast());
        let text = text.trim();
        if text.is_empty() {
            return Ok(0);
        }
        let p = dup(text, |n| libc::malloc(n));
        if p.is_null() {
            return Err(VolError::Invalid(
                "out of memory keeping connector info".into(),
            ));
        }
        *info = p;
        Ok(0)
    })
}

/// `copy`: HDF5 keeping the info in a property list (`H5Pset_vol` with
/// this connector's id and an info string, among others).
pub unsafe extern "C" fn copy(info: *const c_void) -> *mut c_void {
    guard("connector info copy", std::ptr::null_mut(), || {
        let out = dup(&text_of(info), |n| libc::malloc(n));
        if out.is_null() {
            return Err(VolError::Invalid(
                "out of memory copying connector info".into(),
            ));
        }
        Ok(out)
    })
}

pub unsafe extern "C" fn cmp(
    cmp_value: *mut c_int,
    info1: *const c_void,
    info2: *const c_void,
) -> herr_t {
    *cmp_value = match text_of(info1).cmp(&text_of(info2)) {
        std::cmp::Ordering::Less => -1,
        std::cmp::Ordering::Equal => 0,
        std::cmp::Ordering::Greater => 1,
    };
    0
}

pub unsafe extern "C" fn free(info: *mut c_void) -> herr_t {
    libc::free(info);
    0
}

pub unsafe extern "C" fn to_str(info: *const c_void, out: *mut *mut c_char) -> herr_t {
    guard("connector info to string", -1, || {
        let api = h5().map_err(VolError::Library)?;
        // The caller frees the string with HDF5's allocator.
        let p = dup(&text_of(info), |n| api.f.H5allocate_memory(n, false));
        if p.is_null() {
            return Err(VolError::Invalid("out of memory".into()));
        }
        *out = p.cast();
        Ok(0)
    })
}

/// This connector's id (a new reference, closed by the caller).
pub fn connector_id(api: &Api) -> Result<hid_t> {
    // SAFETY: a plain library call with a NUL-terminated name.
    let id = unsafe { api.f.H5VLget_connector_id_by_name(crate::NAME.as_ptr()) };
    if id < 0 {
        return Err(VolError::Hdf5("H5VLget_connector_id_by_name failed".into()));
    }
    Ok(id)
}

/// The settings a file access property list gives this connector (the
/// defaults when the list names another connector, or none).
///
/// # Errors
/// The list's info names a key or value the connector does not know.
pub fn of_fapl(api: &Api, fapl: hid_t) -> Result<Settings> {
    if fapl <= 0 {
        return Ok(Settings::default());
    }
    let f = &api.f;
    // SAFETY: the caller's property list; the ids and the info copy made
    // here are released here.
    unsafe {
        let mut vol: hid_t = -1;
        if f.H5Pget_vol_id(fapl, &mut vol) < 0 || vol < 0 {
            return Ok(Settings::default());
        }
        // The list's connector is this one (the ids may differ).
        let mut differ: c_int = 1;
        let compared = connector_id(api).map(|ours| {
            let status = f.H5VLcmp_connector_cls(&mut differ, vol, ours);
            f.H5VLclose(ours);
            status
        });
        f.H5VLclose(vol);
        if compared? < 0 || differ != 0 {
            return Ok(Settings::default());
        }
        let mut info: *mut c_void = std::ptr::null_mut();
        if f.H5Pget_vol_info(fapl, &mut info) < 0 {
            return Err(VolError::Hdf5("H5Pget_vol_info failed".into()));
        }
        let out = Settings::of_info(info);
        libc::free(info);
        out
    }
}

/// Whether the connector's settings in `fapl` parse; when not, the error
/// is pushed (as `func`'s) on HDF5's stack. For the files this connector
/// hands to HDF5's native connector, which take no settings of h5lake's
/// but must not have a mistyped one ignored.
pub fn fapl_ok(fapl: hid_t, func: &str) -> bool {
    guard(func, false, || {
        of_fapl(h5().map_err(VolError::Library)?, fapl)?;
        Ok(true)
    })
}

/// Sets `fapl` to this connector with `settings` (what a file's access
/// property list reports), unless it says so already.
pub fn set_on_fapl(api: &Api, fapl: hid_t, settings: Settings) -> Result<()> {
    if of_fapl(api, fapl).ok() == Some(settings) {
        return Ok(());
    }
    let id = connector_id(api)?;
    let info = CString::new(settings.to_info_string()).expect("no NUL");
    // SAFETY: HDF5 copies the info (through [`copy`]).
    let status = unsafe { api.f.H5Pset_vol(fapl, id, info.as_ptr().cast()) };
    // SAFETY: the reference taken above.
    unsafe { api.f.H5VLclose(id) };
    if status < 0 {
        return Err(VolError::Hdf5("H5Pset_vol failed".into()));
    }
    Ok(())
}

/// The info class of the connector's class table.
pub const CLASS: sys::H5VL_info_class_t = sys::H5VL_info_class_t {
    size: 0,
    copy: Some(copy),
    cmp: Some(cmp),
    free: Some(free),
    to_str: Some(to_str),
    from_str: Some(from_str),
};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_settings() {
        assert_eq!(Settings::parse("").unwrap(), Settings::default());
        assert_eq!(
            Settings::parse("  layout=columnar ").unwrap().layout,
            Layout::Columnar
        );
        assert_eq!(Settings::parse("layout=row").unwrap().layout, Layout::Row);
        assert_eq!(
            Settings::parse("layout=row,layout=columnar")
                .unwrap()
                .layout,
            Layout::Columnar
        );
        let e = Settings::parse("layout=colunmar").unwrap_err().to_string();
        assert!(e.contains("unknown layout \"colunmar\""), "{e}");
        let e = Settings::parse("chunks=4").unwrap_err().to_string();
        assert!(e.contains("unknown key \"chunks\""), "{e}");
        let e = Settings::parse("columnar").unwrap_err().to_string();
        assert!(e.contains("not key=value"), "{e}");
    }

    #[test]
    fn info_round_trips() {
        for text in ["layout=columnar", "layout=row", "bogus"] {
            // SAFETY: made here, freed once each.
            unsafe {
                let mut p: *mut c_void = std::ptr::null_mut();
                let s = CString::new(format!("  {text} ")).unwrap();
                assert_eq!(from_str(s.as_ptr(), &mut p), 0);
                assert_eq!(text_of(p), text);
                let q = copy(p);
                let mut c = 1;
                assert_eq!(cmp(&mut c, p, q), 0);
                assert_eq!(c, 0);
                assert_eq!(Settings::of_info(q).is_ok(), text != "bogus");
                free(p);
                free(q);
            }
        }
        // SAFETY: null info is the defaults
        unsafe {
            assert_eq!(
                Settings::of_info(std::ptr::null()).unwrap(),
                Settings::default()
            )
        };
    }
}
