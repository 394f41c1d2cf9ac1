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
    /// A [`crate::WritableStore::patch`] edit reaches beyond the object.
    #[error("invalid patch of {key:?}: {reason}")]
    InvalidPatch { key: String, reason: String },
    #[error("store not found: {0}")]
    NotFound(String),
    #[error("permission denied: {0}")]
    PermissionDenied(String),
    /// An object opened to be read in parts was replaced in between (its
    /// reader opens it again).
    #[error("{0} changed while it was read")]
    Changed(String),
    /// A store URL or its configuration (environment) is unusable; the
    /// message says what to set.
    #[error("cannot use {url}: {reason}")]
    Config { url: String, reason: String },
    /// A remote store (S3) failed a request; `hint` says what to check.
    #[error("{location}: {source}{hint}")]
    Remote {
        location: String,
        hint: String,
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
}
