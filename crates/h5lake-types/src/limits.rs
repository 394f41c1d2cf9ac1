//! Hard bounds on the types and shapes a client may describe.
//!
//! Every type and shape reaches the engine through [`Datatype::from_json`]
//! and [`Shape::from_json`], which refuse anything beyond these bounds, so
//! that no description can make a process allocate without bound, overflow
//! a size or recurse deeper than its stack. The bounds are HDF5's own
//! wherever HDF5 has one: whatever HDF5 can store fits them.
//!
//! [`Datatype::from_json`]: crate::Datatype::from_json
//! [`Shape::from_json`]: crate::Shape::from_json

/// Most dimensions of a dataspace or of an array type: HDF5's
/// `H5S_MAX_RANK`, which `H5Screate_simple` and `H5Tarray_create2` enforce.
pub const MAX_RANK: usize = 32;

/// Largest element of any type, in bytes: HDF5's datatype message records
/// the element size in a 32-bit field. A variable-length part counts as
/// what HDF5 stores for it in the element (a length and a global heap id).
pub const MAX_ELEMENT_BYTES: usize = u32::MAX as usize;

/// Most members of a compound type: HDF5's datatype message keeps the
/// member count in 16 bits of the class bit field.
pub const MAX_COMPOUND_MEMBERS: usize = 65_535;

/// Most members of an enum type, for the same reason as
/// [`MAX_COMPOUND_MEMBERS`].
pub const MAX_ENUM_MEMBERS: usize = 65_535;

/// Deepest nesting of types inside compound, array, variable-length, enum
/// and complex types; an atomic type has depth 1. HDF5 sets no bound of its
/// own, but code walking a type recurses once a level, so the bound keeps
/// that recursion far from the end of any thread's stack.
pub const MAX_TYPE_DEPTH: usize = 32;
