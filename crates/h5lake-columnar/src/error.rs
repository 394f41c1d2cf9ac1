//! Errors of columnar chunks.

/// What went wrong turning chunks into Parquet objects or back.
#[derive(thiserror::Error, Debug)]
#[non_exhaustive]
pub enum ColumnarError {
    /// A type or setting the columnar layout does not hold (yet).
    #[error("{0}")]
    Unsupported(String),
    /// A Parquet file given as input (to load or link) that cannot be read.
    #[error("{0}")]
    Source(String),
    /// A stored object that is not the Parquet chunk it should be.
    #[error("corrupt columnar chunk: {0}")]
    Corrupt(String),
    #[error("parquet: {0}")]
    Parquet(#[from] parquet::errors::ParquetError),
    #[error("arrow: {0}")]
    Arrow(#[from] arrow_schema::ArrowError),
    #[error("corrupt columnar chunk: {0}")]
    Types(#[from] h5lake_types::TypeError),
}

pub type Result<T> = std::result::Result<T, ColumnarError>;
