//! An HDF5 file's user block (bytes before the HDF5 data that other
//! programs own: MATLAB v7.3 files keep their header there), carried
//! through a store: `load` keeps it in the root group's creation
//! properties, `get` writes it back.

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::Path;

use h5lake_engine::Domain;
use hdf5_sys::h5i::hid_t;
use serde_json::{json, Value};

use crate::h5::{check, check_id, lib};
use crate::Result;

/// The root group's creation property holding the user block, as hex.
const KEY: &str = "h5lake_userblock";

/// User blocks kept at most (HDF5's may be any power of two from 512
/// bytes; a document is no place for a big one).
const MAX_KEPT: u64 = 64 << 10;

/// Keeps the user block of the open HDF5 file `file` (read from `src`) in
/// the root group `root` of `dom`. `Some(why)` when it has one that was not
/// kept.
///
/// # Errors
/// Library and I/O failures, store trouble.
pub(crate) fn keep(file: hid_t, src: &Path, dom: &Domain, root: &str) -> Result<Option<String>> {
    let fcpl = check_id(
        lib(|| unsafe { hdf5_sys::h5f::H5Fget_create_plist(file) }),
        "reading the file's creation properties",
    )?;
    let mut size: u64 = 0;
    check(
        lib(|| unsafe { hdf5_sys::h5p::H5Pget_userblock(fcpl.id(), &mut size) }),
        "reading the file's user block size",
    )?;
    if size == 0 {
        return Ok(None);
    }
    if size > MAX_KEPT {
        return Ok(Some(format!(
            "the file's user block of {size} bytes is bigger than the {MAX_KEPT} bytes a store keeps"
        )));
    }
    let mut bytes = vec![0u8; size as usize];
    File::open(src)?.read_exact_at(&mut bytes, 0)?;
    let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    dom.update_doc(root, |doc| {
        if !doc.get("creationProperties").is_some_and(Value::is_object) {
            doc["creationProperties"] = json!({});
        }
        doc["creationProperties"][KEY] = json!(hex);
        Ok(())
    })?;
    Ok(None)
}

/// The user block a store's root group document keeps, if any (only a
/// size HDF5 takes: a power of two of at least 512 bytes).
pub(crate) fn of_root(root_doc: &Value) -> Option<Vec<u8>> {
    let hex = root_doc
        .pointer(&format!("/creationProperties/{KEY}"))?
        .as_str()?;
    if hex.len() % 2 != 0 || !hex.is_ascii() {
        return None;
    }
    let bytes: Option<Vec<u8>> = (0..hex.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).ok())
        .collect();
    bytes.filter(|b| b.len() >= 512 && b.len().is_power_of_two())
}
