//! HDF5 datatypes (library handles) ⇄ h5lake's [`Datatype`].
//!
//! h5lake stores compound elements packed (as HSDS does); an HDF5 file may
//! pad them. [`file_layout`] says where each packed byte range sits in the
//! file's element, so chunk bytes can be repacked without the library.

use std::ffi::CStr;

use h5lake_types::{ByteOrder, CharSet, Datatype, Field, StrPad};
use hdf5_sys::h5i::hid_t;
use hdf5_sys::h5t::{self, H5T_class_t, H5T_cset_t, H5T_order_t, H5T_sign_t, H5T_str_t};

use crate::h5::{check, check_id, cstr, lib, Hid};
use crate::{Hdf5Error, Result};

fn unsupported(what: impl Into<String>) -> Hdf5Error {
    Hdf5Error::Unsupported(what.into())
}

fn order_of(t: hid_t) -> ByteOrder {
    match lib(|| unsafe { h5t::H5Tget_order(t) }) {
        H5T_order_t::H5T_ORDER_BE => ByteOrder::Big,
        _ => ByteOrder::Little,
    }
}

fn size_of(t: hid_t) -> Result<usize> {
    let n = lib(|| unsafe { h5t::H5Tget_size(t) });
    if n == 0 {
        return Err(Hdf5Error::Library("reading a datatype's size".into()));
    }
    Ok(n)
}

fn super_of(t: hid_t) -> Result<Hid> {
    check_id(
        lib(|| unsafe { h5t::H5Tget_super(t) }),
        "reading a base type",
    )
}

/// The h5lake datatype of an HDF5 datatype.
///
/// # Errors
/// Types h5lake cannot store (time, references, long double, odd sizes),
/// named in the message.
pub(crate) fn from_hdf5(t: hid_t) -> Result<Datatype> {
    let class = lib(|| unsafe { h5t::H5Tget_class(t) });
    let size = size_of(t)?;
    Ok(match class {
        H5T_class_t::H5T_INTEGER | H5T_class_t::H5T_BITFIELD => {
            if ![1, 2, 4, 8].contains(&size) {
                return Err(unsupported(format!("{size}-byte integers")));
            }
            if class == H5T_class_t::H5T_BITFIELD {
                return Ok(Datatype::Bitfield {
                    size,
                    order: order_of(t),
                });
            }
            let signed = lib(|| unsafe { h5t::H5Tget_sign(t) }) == H5T_sign_t::H5T_SGN_2;
            Datatype::Integer {
                size,
                signed,
                order: order_of(t),
            }
        }
        H5T_class_t::H5T_FLOAT => {
            if ![2, 4, 8].contains(&size) {
                return Err(unsupported(format!(
                    "{size}-byte floats (only IEEE 16, 32 and 64-bit floats are supported)"
                )));
            }
            Datatype::Float {
                size,
                order: order_of(t),
            }
        }
        H5T_class_t::H5T_STRING => {
            let variable = check(
                lib(|| unsafe { h5t::H5Tis_variable_str(t) }),
                "reading a string type",
            )? > 0;
            let charset = match lib(|| unsafe { h5t::H5Tget_cset(t) }) {
                H5T_cset_t::H5T_CSET_UTF8 => CharSet::Utf8,
                _ => CharSet::Ascii,
            };
            let pad = match lib(|| unsafe { h5t::H5Tget_strpad(t) }) {
                H5T_str_t::H5T_STR_NULLPAD => StrPad::NullPad,
                H5T_str_t::H5T_STR_SPACEPAD => StrPad::SpacePad,
                _ => StrPad::NullTerm,
            };
            Datatype::String {
                length: (!variable).then_some(size),
                charset,
                pad,
            }
        }
        H5T_class_t::H5T_COMPOUND => {
            let n = check(
                lib(|| unsafe { h5t::H5Tget_nmembers(t) }),
                "reading a compound type",
            )? as u32;
            let mut fields = Vec::with_capacity(n as usize);
            let mut offset = 0;
            for i in 0..n {
                let name = member_name(t, i)?;
                let mt = check_id(
                    lib(|| unsafe { h5t::H5Tget_member_type(t, i) }),
                    "reading a compound member",
                )?;
                let dtype = from_hdf5(mt.id())?;
                let len = dtype.fixed_size().ok_or_else(|| {
                    unsupported(format!(
                        "compound member {name:?} of variable length (`h5lake load` and `get` do not convert such records yet; h5py through the VOL connector can copy them)"
                    ))
                })?;
                fields.push(Field {
                    name,
                    dtype,
                    offset,
                });
                offset += len;
            }
            Datatype::Compound {
                fields,
                size: offset,
            }
        }
        H5T_class_t::H5T_ARRAY => {
            let rank = check(
                lib(|| unsafe { h5t::H5Tget_array_ndims(t) }),
                "reading an array type",
            )? as usize;
            let mut dims = vec![0u64; rank];
            check(
                lib(|| unsafe { h5t::H5Tget_array_dims2(t, dims.as_mut_ptr()) }),
                "reading an array type",
            )?;
            let base = super_of(t)?;
            Datatype::Array {
                base: Box::new(from_hdf5(base.id())?),
                dims,
            }
        }
        H5T_class_t::H5T_ENUM => {
            let base_t = super_of(t)?;
            let base = from_hdf5(base_t.id())?;
            let Datatype::Integer { size, .. } = base else {
                return Err(unsupported("enums over non-integer types"));
            };
            let n = check(
                lib(|| unsafe { h5t::H5Tget_nmembers(t) }),
                "reading an enum type",
            )? as u32;
            let mut mapping = Vec::with_capacity(n as usize);
            for i in 0..n {
                let name = member_name(t, i)?;
                let mut buf = [0u8; 8];
                check(
                    lib(|| unsafe { h5t::H5Tget_member_value(t, i, buf.as_mut_ptr().cast()) }),
                    "reading an enum value",
                )?;
                let value = h5lake_types::element_to_json(&base, &buf[..size])?;
                mapping.push((name, value.as_i64().unwrap_or(i64::MAX)));
            }
            Datatype::Enum {
                base: Box::new(base),
                mapping,
            }
        }
        H5T_class_t::H5T_OPAQUE => {
            let tag = lib(|| unsafe {
                let p = h5t::H5Tget_tag(t);
                if p.is_null() {
                    None
                } else {
                    let s = CStr::from_ptr(p).to_string_lossy().into_owned();
                    hdf5_sys::h5::H5free_memory(p.cast());
                    Some(s)
                }
            });
            Datatype::Opaque {
                size,
                tag: tag.filter(|s| !s.is_empty()),
            }
        }
        H5T_class_t::H5T_VLEN => {
            let base = super_of(t)?;
            Datatype::Vlen {
                base: Box::new(from_hdf5(base.id())?),
            }
        }
        H5T_class_t::H5T_COMPLEX => {
            // h5py's complex numbers: a compound of two floats named r and i.
            let base = super_of(t)?;
            let part = from_hdf5(base.id())?;
            let half = part.fixed_size().unwrap_or(size / 2);
            Datatype::Compound {
                fields: vec![
                    Field {
                        name: "r".into(),
                        dtype: part.clone(),
                        offset: 0,
                    },
                    Field {
                        name: "i".into(),
                        dtype: part,
                        offset: half,
                    },
                ],
                size,
            }
        }
        H5T_class_t::H5T_REFERENCE => return Err(unsupported("object and region references")),
        H5T_class_t::H5T_TIME => return Err(unsupported("the H5T_TIME class")),
        _ => return Err(unsupported("an unknown datatype class")),
    })
}

fn member_name(t: hid_t, i: u32) -> Result<String> {
    lib(|| unsafe {
        let p = h5t::H5Tget_member_name(t, i);
        if p.is_null() {
            return Err(Hdf5Error::Library("reading a member name".into()));
        }
        let s = CStr::from_ptr(p).to_string_lossy().into_owned();
        hdf5_sys::h5::H5free_memory(p.cast());
        Ok(s)
    })
}

/// Where each byte run of h5lake's packed element sits in the HDF5 file's
/// element: `(file offset, length, packed offset)`, merged where adjacent.
/// `None` when the two layouts are identical (no repacking needed).
pub(crate) fn file_layout(t: hid_t) -> Result<Option<Vec<(usize, usize, usize)>>> {
    let mut runs = Vec::new();
    collect_runs(t, 0, &mut 0, &mut runs)?;
    let file_size = size_of(t)?;
    let packed: usize = runs.iter().map(|r| r.1).sum();
    let identity = packed == file_size && runs.iter().all(|&(f, _, p)| f == p);
    Ok((!identity).then_some(runs))
}

fn collect_runs(
    t: hid_t,
    file_off: usize,
    packed_off: &mut usize,
    runs: &mut Vec<(usize, usize, usize)>,
) -> Result<()> {
    match lib(|| unsafe { h5t::H5Tget_class(t) }) {
        H5T_class_t::H5T_COMPOUND => {
            let n = check(
                lib(|| unsafe { h5t::H5Tget_nmembers(t) }),
                "reading a compound type",
            )? as u32;
            for i in 0..n {
                let off = lib(|| unsafe { h5t::H5Tget_member_offset(t, i) });
                let mt = check_id(
                    lib(|| unsafe { h5t::H5Tget_member_type(t, i) }),
                    "reading a compound member",
                )?;
                collect_runs(mt.id(), file_off + off, packed_off, runs)?;
            }
        }
        H5T_class_t::H5T_ARRAY => {
            let base = super_of(t)?;
            let total = size_of(t)?;
            let elem = size_of(base.id())?;
            for k in 0..total / elem.max(1) {
                collect_runs(base.id(), file_off + k * elem, packed_off, runs)?;
            }
        }
        _ => {
            let len = size_of(t)?;
            match runs.last_mut() {
                Some((f, l, p)) if *f + *l == file_off && *p + *l == *packed_off => *l += len,
                _ => runs.push((file_off, len, *packed_off)),
            }
            *packed_off += len;
        }
    }
    Ok(())
}

/// A new HDF5 datatype for an h5lake datatype (compound members packed).
///
/// # Errors
/// Library failures; types with variable-length parts inside compounds,
/// arrays or sequences (their records are not converted here yet).
pub(crate) fn to_hdf5(dt: &Datatype) -> Result<Hid> {
    if dt.is_variable() && !dt.is_top_level_vlen()
        || matches!(dt, Datatype::Vlen { base } if base.is_variable())
    {
        return Err(unsupported(
            "variable-length parts inside a compound, array or sequence (`h5lake get` does not convert such records yet; h5py through the VOL connector can copy them)",
        ));
    }
    let what = "creating a datatype";
    Ok(match dt {
        Datatype::Integer {
            size,
            signed,
            order,
        } => {
            let base = match (size, signed, order) {
                (1, true, ByteOrder::Little) => *h5t::H5T_STD_I8LE,
                (1, true, ByteOrder::Big) => *h5t::H5T_STD_I8BE,
                (1, false, ByteOrder::Little) => *h5t::H5T_STD_U8LE,
                (1, false, ByteOrder::Big) => *h5t::H5T_STD_U8BE,
                (2, true, ByteOrder::Little) => *h5t::H5T_STD_I16LE,
                (2, true, ByteOrder::Big) => *h5t::H5T_STD_I16BE,
                (2, false, ByteOrder::Little) => *h5t::H5T_STD_U16LE,
                (2, false, ByteOrder::Big) => *h5t::H5T_STD_U16BE,
                (4, true, ByteOrder::Little) => *h5t::H5T_STD_I32LE,
                (4, true, ByteOrder::Big) => *h5t::H5T_STD_I32BE,
                (4, false, ByteOrder::Little) => *h5t::H5T_STD_U32LE,
                (4, false, ByteOrder::Big) => *h5t::H5T_STD_U32BE,
                (8, true, ByteOrder::Little) => *h5t::H5T_STD_I64LE,
                (8, true, ByteOrder::Big) => *h5t::H5T_STD_I64BE,
                (8, false, ByteOrder::Little) => *h5t::H5T_STD_U64LE,
                _ => *h5t::H5T_STD_U64BE,
            };
            check_id(lib(|| unsafe { h5t::H5Tcopy(base) }), what)?
        }
        Datatype::Bitfield { size, order } => {
            let base = match (size, order) {
                (1, ByteOrder::Little) => *h5t::H5T_STD_B8LE,
                (1, ByteOrder::Big) => *h5t::H5T_STD_B8BE,
                (2, ByteOrder::Little) => *h5t::H5T_STD_B16LE,
                (2, ByteOrder::Big) => *h5t::H5T_STD_B16BE,
                (4, ByteOrder::Little) => *h5t::H5T_STD_B32LE,
                (4, ByteOrder::Big) => *h5t::H5T_STD_B32BE,
                (8, ByteOrder::Little) => *h5t::H5T_STD_B64LE,
                _ => *h5t::H5T_STD_B64BE,
            };
            check_id(lib(|| unsafe { h5t::H5Tcopy(base) }), what)?
        }
        Datatype::Float { size, order } => {
            let big = *order == ByteOrder::Big;
            let base = match (size, big) {
                (8, false) => *h5t::H5T_IEEE_F64LE,
                (8, true) => *h5t::H5T_IEEE_F64BE,
                (_, false) => *h5t::H5T_IEEE_F32LE,
                (_, true) => *h5t::H5T_IEEE_F32BE,
            };
            let t = check_id(lib(|| unsafe { h5t::H5Tcopy(base) }), what)?;
            if *size == 2 {
                // IEEE half precision: sign bit 15, exponent 10..15, mantissa 0..10.
                lib(|| unsafe {
                    h5t::H5Tset_fields(t.id(), 15, 10, 5, 0, 10);
                    h5t::H5Tset_size(t.id(), 2);
                    h5t::H5Tset_ebias(t.id(), 15);
                    h5t::H5Tset_precision(t.id(), 16)
                });
            }
            t
        }
        Datatype::String {
            length,
            charset,
            pad,
        } => {
            let t = check_id(lib(|| unsafe { h5t::H5Tcopy(*h5t::H5T_C_S1) }), what)?;
            let size = length.unwrap_or(h5t::H5T_VARIABLE);
            check(lib(|| unsafe { h5t::H5Tset_size(t.id(), size) }), what)?;
            let cset = match charset {
                CharSet::Utf8 => H5T_cset_t::H5T_CSET_UTF8,
                CharSet::Ascii => H5T_cset_t::H5T_CSET_ASCII,
            };
            let strpad = match pad {
                StrPad::NullPad => H5T_str_t::H5T_STR_NULLPAD,
                StrPad::SpacePad => H5T_str_t::H5T_STR_SPACEPAD,
                StrPad::NullTerm => H5T_str_t::H5T_STR_NULLTERM,
            };
            check(lib(|| unsafe { h5t::H5Tset_cset(t.id(), cset) }), what)?;
            check(lib(|| unsafe { h5t::H5Tset_strpad(t.id(), strpad) }), what)?;
            t
        }
        Datatype::Compound { fields, size } => {
            let t = check_id(
                lib(|| unsafe { h5t::H5Tcreate(H5T_class_t::H5T_COMPOUND, *size) }),
                what,
            )?;
            for f in fields {
                let mt = to_hdf5(&f.dtype)?;
                let name = cstr(&f.name)?;
                check(
                    lib(|| unsafe { h5t::H5Tinsert(t.id(), name.as_ptr(), f.offset, mt.id()) }),
                    what,
                )?;
            }
            t
        }
        Datatype::Array { base, dims } => {
            let b = to_hdf5(base)?;
            check_id(
                lib(|| unsafe { h5t::H5Tarray_create2(b.id(), dims.len() as u32, dims.as_ptr()) }),
                what,
            )?
        }
        // Written as h5py writes complex numbers: a compound of r and i.
        Datatype::Complex { part } => {
            let size = part.fixed_size().unwrap_or(0);
            to_hdf5(&Datatype::Compound {
                fields: ["r", "i"]
                    .iter()
                    .enumerate()
                    .map(|(k, name)| h5lake_types::Field {
                        name: name.to_string(),
                        dtype: (**part).clone(),
                        offset: k * size,
                    })
                    .collect(),
                size: 2 * size,
            })?
        }
        Datatype::Enum { base, mapping } => {
            let b = to_hdf5(base)?;
            let t = check_id(lib(|| unsafe { h5t::H5Tenum_create(b.id()) }), what)?;
            let (size, order) = match **base {
                Datatype::Integer { size, order, .. } => (size, order),
                _ => return Err(unsupported("enums over non-integer types")),
            };
            for (name, value) in mapping {
                let le = value.to_le_bytes();
                let mut bytes = le[..size].to_vec();
                if order == ByteOrder::Big {
                    bytes.reverse();
                }
                let n = cstr(name)?;
                check(
                    lib(|| unsafe {
                        h5t::H5Tenum_insert(t.id(), n.as_ptr(), bytes.as_ptr().cast())
                    }),
                    what,
                )?;
            }
            t
        }
        Datatype::Opaque { size, tag } => {
            let t = check_id(
                lib(|| unsafe { h5t::H5Tcreate(H5T_class_t::H5T_OPAQUE, *size) }),
                what,
            )?;
            if let Some(tag) = tag {
                let c = cstr(tag)?;
                check(lib(|| unsafe { h5t::H5Tset_tag(t.id(), c.as_ptr()) }), what)?;
            }
            t
        }
        Datatype::Vlen { base } => {
            let b = to_hdf5(base)?;
            check_id(lib(|| unsafe { h5t::H5Tvlen_create(b.id()) }), what)?
        }
        Datatype::Reference { .. } => return Err(unsupported("object references")),
        Datatype::RegionReference => return Err(unsupported("region references")),
        Datatype::CustomFloat { .. } => {
            return Err(unsupported(
                "floats laid out other than IEEE 754 (long double, custom layouts)",
            ))
        }
    })
}
