//! HDF5 datatypes, dataspaces and selections, in the JSON forms HSDS uses.
//!
//! The engine keeps one canonical description of a type: HSDS's type JSON.
//! Every front end converts its own notion (numpy dtypes, HDF5 type ids, REST
//! bodies) to that form, and this crate turns it into something the engine can
//! compute with: element sizes, byte orders, field offsets and whether values
//! are variable-length.

pub mod convert;
mod datatype;
mod error;
pub mod float;
pub mod limits;
pub mod record;
mod selection;
mod shape;
pub mod transpose;
mod value;

pub use datatype::{ByteOrder, CharSet, Datatype, Field, StrPad};
pub use error::TypeError;
pub use float::{FloatBits, Norm, Pad};
pub use limits::{
    MAX_COMPOUND_MEMBERS, MAX_ELEMENT_BYTES, MAX_ENUM_MEMBERS, MAX_RANK, MAX_TYPE_DEPTH,
};
pub use selection::{DimSel, Selection};
pub use shape::{guess_chunks, hsds_chunks, Shape, UNLIMITED};
pub use value::{
    bytes_of, bytes_to_json, declared_fill, element_to_json, f16_to_f64, fixed_to_json,
    fixed_to_json_shortest, json_elements, json_to_element, json_to_fixed, json_to_vlen, nest,
    region_blocks_json, region_points_json, region_ref_bytes, region_ref_json, value_dims,
    vlen_element, vlen_to_json,
};

/// Result alias for this crate.
pub type Result<T> = std::result::Result<T, TypeError>;
