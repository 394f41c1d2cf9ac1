use thiserror::Error;

/// Everything a store can fail with.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum StoreError {
    #[error("invalid key {key:?}: {reason}")]
    InvalidKey { key: String, reason: String },
    #[error("storage I/O error at {path}: {source}")]
    Io {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("store not found: {0}")]
    NotFound(String),
    #[error("permission denied: {0}")]
    PermissionDenied(String),
}
