//! Errors of the connector, and how they reach HDF5: every failing
//! callback pushes one message on HDF5's error stack, with the minor code
//! h5py turns into the exception its users expect (not found → KeyError,
//! exists → ValueError, …), then returns HDF5's failure value.

use std::ffi::CString;

use h5lake_engine::EngineError;

use crate::api::h5;

/// What went wrong in a callback.
#[derive(thiserror::Error, Debug)]
#[non_exhaustive]
pub enum VolError {
    #[error("{0}")]
    NotFound(String),
    #[error("{0}")]
    Exists(String),
    #[error("h5lake VOL connector: {0} is not supported")]
    Unsupported(String),
    #[error("{0}")]
    Invalid(String),
    #[error("{0}")]
    BadType(String),
    /// A file that cannot be opened or created for an operating-system
    /// reason; the message carries HDF5's `errno = N` wording, from which
    /// h5py raises the matching `OSError` subclass (`FileNotFoundError`,
    /// `FileExistsError`, `PermissionError`).
    #[error("{msg} (errno = {errno}, error message = '{}')", std::io::Error::from_raw_os_error(*.errno).kind())]
    Os { errno: i32, msg: String },
    /// A call into HDF5 failed (its own message is already on the stack).
    #[error("{0}")]
    Hdf5(String),
    #[error(transparent)]
    Engine(#[from] EngineError),
    /// The host library could not be bound.
    #[error("{0}")]
    Library(String),
    #[error("h5lake VOL connector: internal error: {0}")]
    Panic(String),
}

pub type Result<T> = std::result::Result<T, VolError>;

impl VolError {
    /// Pushes this error on HDF5's default error stack.
    pub fn push(&self, func: &str) {
        let Ok(api) = h5() else { return };
        let g = &api.g;
        let minor = match self {
            VolError::NotFound(_) => g.min_notfound.id(),
            VolError::Exists(_) => g.min_exists.id(),
            VolError::Unsupported(_) => g.min_unsupported.id(),
            VolError::Invalid(_) => g.min_badvalue.id(),
            VolError::BadType(_) => g.min_badtype.id(),
            VolError::Engine(e) => match e {
                EngineError::NotFound(_) | EngineError::StoreNotFound(_) => g.min_notfound.id(),
                EngineError::AlreadyExists(_) | EngineError::StoreExists(_) => g.min_exists.id(),
                EngineError::Invalid(_) => g.min_badvalue.id(),
                EngineError::WrongType(_) => g.min_badtype.id(),
                EngineError::ReadOnly(_) => g.min_writeerror.id(),
                _ => g.min_readerror.id(),
            },
            VolError::Os { .. } | VolError::Hdf5(_) | VolError::Library(_) | VolError::Panic(_) => {
                g.min_cantopen.id()
            }
        };
        let msg = CString::new(self.to_string().replace('\0', " ")).unwrap_or_default();
        let func = CString::new(func).unwrap_or_default();
        let file = c"h5lake-vol";
        // SAFETY: every pointer is a valid NUL-terminated string; "%s" makes
        // the message a plain argument, never a format.
        let Ok(push) = api.f.H5Epush2.as_ref() else {
            return;
        };
        unsafe {
            push(
                0, // H5E_DEFAULT
                file.as_ptr(),
                func.as_ptr(),
                0,
                g.err_cls.id(),
                g.maj_vol.id(),
                minor,
                c"%s".as_ptr(),
                msg.as_ptr(),
            );
        }
    }
}

impl VolError {
    /// A file-level failure as the operating-system error it amounts to,
    /// so that h5py users get the exceptions native HDF5 gives them (mode
    /// 'a' relies on `FileNotFoundError` to fall back to creating).
    pub fn for_file(e: VolError) -> VolError {
        let VolError::Engine(e) = e else { return e };
        let errno = match &e {
            EngineError::StoreNotFound(_) => libc::ENOENT,
            EngineError::StoreExists(_) => libc::EEXIST,
            EngineError::Store(s) => match std::error::Error::source(s)
                .and_then(|io| io.downcast_ref::<std::io::Error>())
                .and_then(std::io::Error::raw_os_error)
            {
                Some(n) => n,
                None => return VolError::Engine(e),
            },
            _ => return VolError::Engine(e),
        };
        VolError::Os {
            errno,
            msg: e.to_string(),
        }
    }
}

/// Runs a callback body: errors and panics become an HDF5 error and the
/// `failed` value, never an unwind across the C boundary.
pub fn guard<T>(func: &str, failed: T, body: impl FnOnce() -> Result<T>) -> T {
    let out = std::panic::catch_unwind(std::panic::AssertUnwindSafe(body)).unwrap_or_else(|p| {
        let what = p
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_default();
        Err(VolError::Panic(what))
    });
    match out {
        Ok(v) => v,
        Err(e) => {
            e.push(func);
            failed
        }
    }
}

/// Checks an HDF5 return value (negative = failure).
pub fn check<T: Into<i64> + Copy>(v: T, what: &str) -> Result<T> {
    if v.into() < 0 {
        Err(VolError::Hdf5(format!("HDF5 failed: {what}")))
    } else {
        Ok(v)
    }
}
