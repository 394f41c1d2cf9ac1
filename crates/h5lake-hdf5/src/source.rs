//! Opening an HDF5 file to read, with errors that say what is wrong with it.

use std::io::Read;
use std::path::Path;

use crate::h5::{check_id, cstr, lib, Hid};
use crate::{Hdf5Error, Result};

const SIGNATURE: &[u8; 8] = b"\x89HDF\r\n\x1a\n";

/// Whether `path` is an HDF5 file: the format signature sits at byte 0, 512,
/// 1024, 2048, … (after a user block).
pub fn is_hdf5(path: &Path) -> bool {
    let Ok(mut f) = std::fs::File::open(path) else {
        return false;
    };
    let Ok(len) = f.metadata().map(|m| m.len()) else {
        return false;
    };
    let mut at = 0u64;
    while at + 8 <= len {
        let mut sig = [0u8; 8];
        if std::io::Seek::seek(&mut f, std::io::SeekFrom::Start(at)).is_err()
            || f.read_exact(&mut sig).is_err()
        {
            return false;
        }
        if &sig == SIGNATURE {
            return true;
        }
        at = if at == 0 { 512 } else { at * 2 };
    }
    false
}

/// Opens `path` read-only.
///
/// # Errors
/// A missing file, a file that is not HDF5, or a damaged one.
pub(crate) fn open(path: &Path) -> Result<Hid> {
    if path.to_string_lossy().contains("://") {
        return Err(Hdf5Error::Unsupported(format!(
            "{}: HDF5 files are read from local disk only; download it first (for S3: aws s3 cp URL FILE)",
            path.display()
        )));
    }
    if !path.exists() {
        return Err(Hdf5Error::SourceNotFound(format!(
            "{}: no such file",
            path.display()
        )));
    }
    if path.is_dir() {
        return Err(Hdf5Error::NotHdf5(format!(
            "{} is a directory, not an HDF5 file",
            path.display()
        )));
    }
    if !is_hdf5(path) {
        return Err(Hdf5Error::NotHdf5(format!(
            "{} is not an HDF5 file (no HDF5 signature)",
            path.display()
        )));
    }
    let c = cstr(&path.to_string_lossy())?;
    let fapl = crate::h5::native_fapl()?;
    check_id(
        lib(|| unsafe {
            hdf5_sys::h5f::H5Fopen(c.as_ptr(), hdf5_sys::h5f::H5F_ACC_RDONLY, fapl.id())
        }),
        "opening the file",
    )
    .map_err(|e| {
        let e = e.to_string();
        if e.contains("unable to lock file") {
            // (Not damaged: a program has it open for writing.)
            return Hdf5Error::NotHdf5(format!(
                "{} is locked by a program that has it open for writing (HDF5's file \
                 locking): close it there, or set HDF5_USE_FILE_LOCKING=FALSE to read it \
                 while it is written",
                path.display()
            ));
        }
        Hdf5Error::NotHdf5(format!(
            "{} cannot be read as HDF5; it may be truncated or damaged ({e})",
            path.display()
        ))
    })
}

/// The version of the HDF5 library h5lake reads and writes HDF5 files with
/// (`H5get_libversion`).
pub fn hdf5_version() -> (u32, u32, u32) {
    let (mut major, mut minor, mut release) = (0u32, 0u32, 0u32);
    // (Cannot fail: it reports the library's compiled-in numbers.)
    lib(|| unsafe { hdf5_sys::h5::H5get_libversion(&mut major, &mut minor, &mut release) });
    (major, minor, release)
}
