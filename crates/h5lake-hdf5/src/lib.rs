//! Real HDF5 files in and out of h5lake stores, through the HDF5 C library
//! (2.0.0, built from source and linked in statically).
//!
//! - [`load()`]: an HDF5 file → a new h5lake store, copying the chunks or only
//!   linking to them (HSDS's `H5D_*_REF` layouts);
//! - [`get()`]: an h5lake store → a new HDF5 file.
//!
//! Both write to a temporary path next to the destination and rename it
//! into place at the end, so a failure never leaves half a store or half a
//! file behind.

mod attrs;
mod export;
mod h5;
mod load;
mod memory;
mod regions;
mod skipped;
mod source;
mod types;
mod userblock;
mod virtual_layout;

pub use export::{get, GetOptions, GetReport};
pub use load::{
    link_dataset, load, open_in_place, register_source_linker, LoadOptions, LoadReport,
};
pub use skipped::Skipped;
pub use source::{hdf5_version, is_hdf5};

use thiserror::Error;

/// Everything loading and exporting can fail with.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum Hdf5Error {
    /// The source is not an HDF5 file, or is damaged or truncated.
    #[error("{0}")]
    NotHdf5(String),
    /// Something in the file h5lake cannot represent (a filter, a type, a
    /// layout), named in the message.
    #[error("{0}")]
    Unsupported(String),
    /// The destination exists and `force` was not given.
    #[error("{0}")]
    DestinationExists(String),
    /// The source does not exist.
    #[error("{0}")]
    SourceNotFound(String),
    /// An error reported by the HDF5 library.
    #[error("HDF5 library: {0}")]
    Library(String),
    #[error(transparent)]
    Engine(#[from] h5lake_engine::EngineError),
    #[error(transparent)]
    Store(#[from] h5lake_store::StoreError),
    #[error(transparent)]
    Codec(#[from] h5lake_codecs::CodecError),
    #[error(transparent)]
    Types(#[from] h5lake_types::TypeError),
    #[error("{0}")]
    Io(#[from] std::io::Error),
}

/// Result alias for this crate.
pub type Result<T> = std::result::Result<T, Hdf5Error>;
