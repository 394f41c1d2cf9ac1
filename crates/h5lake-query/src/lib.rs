//! Per-chunk statistics, the expression language, and chunk pruning.
//!
//! Storing each chunk as an object of its own makes two things cheap that a
//! single HDF5 file makes expensive: keeping a summary beside every chunk as
//! it is written, and answering a question from those summaries instead of
//! from the data. This crate is the part that knows nothing of storage:
//!
//! - [`leaf`]: the numeric members of a type that statistics are kept on;
//! - [`stats`]: computing, merging and storing per-chunk statistics;
//! - [`expr`]: parsing and type-checking expressions over the members;
//! - [`eval`]: evaluating them on a chunk, and deciding from a chunk's
//!   statistics whether any element can match;
//! - [`functions`]: user-defined chunk functions (`max(abs(height))`),
//!   kept per chunk and merged per dataset.
//!
//! The engine decides when statistics are computed, where they are kept,
//! and whether a stored record still describes its chunk.

pub mod error;
pub mod eval;
pub mod expr;
pub mod functions;
pub mod leaf;
mod permute_gather;
pub mod stats;

pub use error::{QueryError, Result};
pub use functions::{ChunkFunction, FnState};
pub use leaf::{leaves, live_runs, Leaf};
pub use stats::{ChunkRecord, LeafStats, Num};
