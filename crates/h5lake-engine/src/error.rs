use thiserror::Error;

/// Everything the engine can fail with. Front ends map these once to their
/// own vocabulary (Python exceptions, HTTP status codes, HDF5 errors).
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum EngineError {
    /// A name, object or store that does not exist (Python: KeyError / FileNotFoundError).
    #[error("{0}")]
    NotFound(String),
    /// The store itself does not exist.
    #[error("{0}")]
    StoreNotFound(String),
    /// A name or store that already exists (Python: ValueError / FileExistsError).
    #[error("{0}")]
    AlreadyExists(String),
    /// The store already exists and the mode forbids that.
    #[error("{0}")]
    StoreExists(String),
    /// A path that exists but is not an h5lake store (Python: OSError).
    #[error("{0}")]
    NotAStore(String),
    /// A bad argument: shape, selection, buffer size (Python: ValueError).
    #[error("{0}")]
    Invalid(String),
    /// An operation that does not apply to this type of object (Python: TypeError).
    #[error("{0}")]
    WrongType(String),
    /// A path or URL a document names that the link policy does not let us
    /// open (see [`crate::link_policy`]; Python: PermissionError, HTTP 403).
    #[error("{0}")]
    LinkRefused(String),
    /// Writing to a store opened read-only.
    #[error("{0}")]
    ReadOnly(String),
    /// An answer bigger than the caller allowed (a query matching more
    /// than its byte limit; HTTP 413).
    #[error("{0}")]
    TooLarge(String),
    /// Memory the front end's gate (see [`crate::memory`]) could not give
    /// now: others hold it (HTTP 503; try again).
    #[error("{0}")]
    Busy(String),
    /// A stored document or chunk that cannot be understood.
    #[error("corrupt store: {0}")]
    Corrupt(String),
    /// A file a linked dataset points into is no longer the file it was
    /// when linked: its values would be read from stale offsets.
    #[error("{0}")]
    LinkedFileChanged(String),
    /// The call was cancelled (see [`crate::cancel`]); chunks already
    /// written stay written, each one atomically.
    #[error("interrupted")]
    Interrupted,
    #[error(transparent)]
    Store(#[from] h5lake_store::StoreError),
    #[error(transparent)]
    Codec(#[from] h5lake_codecs::CodecError),
    #[error(transparent)]
    Types(#[from] h5lake_types::TypeError),
}

/// Result alias for engine operations.
pub type Result<T> = std::result::Result<T, EngineError>;

impl From<h5lake_columnar::ColumnarError> for EngineError {
    fn from(e: h5lake_columnar::ColumnarError) -> Self {
        match e {
            h5lake_columnar::ColumnarError::Unsupported(m)
            | h5lake_columnar::ColumnarError::Source(m) => EngineError::Invalid(m),
            other => EngineError::Corrupt(other.to_string()),
        }
    }
}
