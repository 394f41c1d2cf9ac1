//! The h5lake engine: HDF5's data model (domains, groups, datasets,
//! attributes, links, committed datatypes) stored one object per document and
//! one object per chunk, in the HSDS object-store schema v2, over any
//! [`h5lake_store::Store`].
//!
//! Front ends (the Python API, the CLI, the REST server, the VOL connector)
//! all talk to [`Domain`].

mod cache;
pub mod cancel;
pub mod chunk_codec;
pub mod dataset;
pub mod domain;
mod error;
pub mod hdf5_sources;
pub mod ids;
mod journal;
pub mod json;
pub mod link_policy;
pub mod linked;
pub mod memory;
pub mod parquet_link;
pub mod planner;
mod pooled;
pub mod progress;
mod scratch;
pub mod stats;
pub mod table;
pub mod virtual_ds;

pub use dataset::{check_own_chunks, DatasetMeta};
pub use domain::{check_attrs, Domain, DomainOptions, Durability, OpenMode, PathEnd};
pub use error::{EngineError, Result};
pub use h5lake_types::{DimSel, Selection};
pub use link_policy::LinkPolicy;
