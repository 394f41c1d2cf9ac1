use thiserror::Error;

/// Everything a codec can fail with.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum CodecError {
    #[error("unsupported filter: {0}")]
    Unsupported(String),
    #[error("invalid filter description: {0}")]
    Invalid(String),
    #[error("corrupt chunk data ({filter}): {reason}")]
    Corrupt {
        filter: &'static str,
        reason: String,
    },
    #[error("fletcher32 checksum mismatch: the chunk is corrupt")]
    Checksum,
}
