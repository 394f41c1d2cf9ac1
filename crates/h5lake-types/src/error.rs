use thiserror::Error;

/// Invalid or unsupported type, shape, selection or value descriptions.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum TypeError {
    #[error("invalid datatype: {0}")]
    InvalidType(String),
    #[error("unsupported datatype: {0}")]
    UnsupportedType(String),
    #[error("invalid shape: {0}")]
    InvalidShape(String),
    #[error("invalid selection: {0}")]
    InvalidSelection(String),
    #[error("invalid value for type: {0}")]
    InvalidValue(String),
}
