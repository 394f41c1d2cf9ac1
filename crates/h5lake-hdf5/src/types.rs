//! HDF5 datatypes (library handles) ⇄ h5lake's [`Datatype`] and its JSON.
//!
//! h5lake stores compound elements packed (as HSDS does) and knows no time
//! class; an HDF5 file may pad its compounds and may hold `H5T_TIME` data.
//! What the [`Datatype`] cannot say goes into the type's JSON under
//! `"h5lake"` keys, which HSDS ignores ([`type_json`]): a compound's member
//! offsets and size as the library described them (`{"offsets": [..],
//! "size": n}`, the form of `Datatype::with_layout_json`, at every level of
//! nesting), and for a time type kept as opaque bytes its class, byte order
//! and precision. [`file_type`] makes the file's type again from both.
//!
//! Offsets and sizes are those of the library's memory form of a type
//! (what `H5Dget_type` and `H5Aget_type` return): a variable-length string
//! member is a `char*` there, a sequence an `hvl_t`. The library lays the
//! type out in the file from that form.
//!
//! [`Repack`] moves fixed-size elements between the file's layout and the
//! packed one without the library, for chunk bytes.

use std::ffi::CStr;

use h5lake_types::{
    ByteOrder, CharSet, Datatype, Field, FloatBits, Norm, Pad, StrPad, MAX_ELEMENT_BYTES,
};
use hdf5_sys::h5i::hid_t;
use hdf5_sys::h5t::{
    self, H5T_class_t, H5T_cset_t, H5T_norm_t, H5T_order_t, H5T_pad_t, H5T_sign_t, H5T_str_t,
};
use serde_json::{json, Value};

use crate::h5::{check, check_id, cstr, lib, Hid};
use crate::memory::mem_size;
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

fn member_type(t: hid_t, i: u32) -> Result<Hid> {
    check_id(
        lib(|| unsafe { h5t::H5Tget_member_type(t, i) }),
        "reading a compound member",
    )
}

/// The h5lake datatype of an HDF5 datatype.
///
/// # Errors
/// Types h5lake cannot store (references, odd integer sizes, float layouts
/// it cannot describe), named in the message.
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
        H5T_class_t::H5T_FLOAT => float_from_hdf5(t, size)?,
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
            let n = member_count(t, "reading a compound type")?;
            let mut fields = Vec::with_capacity(n as usize);
            // Packed, as `Datatype::from_json` places members: a
            // variable-length member takes no fixed bytes (see
            // `h5lake_types::record`).
            let mut offset = 0;
            for i in 0..n {
                let name = member_name(t, i)?;
                let mt = member_type(t, i)?;
                let dtype = from_hdf5(mt.id())?;
                let len = dtype.fixed_size().unwrap_or(0);
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
            let n = member_count(t, "reading an enum type")?;
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
        // Kept as its bytes; `type_json` records the rest.
        H5T_class_t::H5T_TIME => Datatype::Opaque { size, tag: None },
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
        H5T_class_t::H5T_REFERENCE => {
            let is = |base: fn() -> hid_t| {
                check(
                    lib(|| unsafe { h5t::H5Tequal(t, base()) }),
                    "reading a reference type",
                )
                .map(|equal| equal > 0)
            };
            // HDF5's current references may also point at attributes and
            // regions: which a value is shows only when it is read.
            let current_api = is(|| *h5t::H5T_STD_REF)?;
            if !current_api && !is(|| *h5t::H5T_STD_REF_OBJ)? {
                if is(|| *h5t::H5T_STD_REF_DSETREG)? {
                    return Ok(Datatype::RegionReference);
                }
                return Err(unsupported(
                    "a reference type other than HDF5's object, region and current ones",
                ));
            }
            Datatype::Reference {
                size: REF_BYTES,
                current_api,
            }
        }
        _ => return Err(unsupported("an unknown datatype class")),
    })
}

/// A float as IEEE 754 binary16/32/64 when it is laid out as one, else as
/// the bit layout the library describes (x87's 80-bit extended precision
/// in 16 bytes for numpy's `longdouble`, IEEE quad, custom layouts).
fn float_from_hdf5(t: hid_t, size: usize) -> Result<Datatype> {
    let order = match lib(|| unsafe { h5t::H5Tget_order(t) }) {
        H5T_order_t::H5T_ORDER_LE => ByteOrder::Little,
        H5T_order_t::H5T_ORDER_BE => ByteOrder::Big,
        _ => return Err(unsupported("floats of VAX or mixed byte order")),
    };
    let what = "reading a float type";
    let (mut sign, mut exp_pos, mut exp_size, mut mant_pos, mut mant_size) = (0, 0, 0, 0, 0);
    check(
        lib(|| unsafe {
            h5t::H5Tget_fields(
                t,
                &mut sign,
                &mut exp_pos,
                &mut exp_size,
                &mut mant_pos,
                &mut mant_size,
            )
        }),
        what,
    )?;
    let norm = match lib(|| unsafe { h5t::H5Tget_norm(t) }) {
        H5T_norm_t::H5T_NORM_IMPLIED => Norm::Implied,
        H5T_norm_t::H5T_NORM_MSBSET => Norm::MsbSet,
        H5T_norm_t::H5T_NORM_NONE => Norm::None,
        H5T_norm_t::H5T_NORM_ERROR => return Err(Hdf5Error::Library(what.into())),
    };
    let (mut lsb, mut msb) = (H5T_pad_t::H5T_PAD_ERROR, H5T_pad_t::H5T_PAD_ERROR);
    check(
        lib(|| unsafe { h5t::H5Tget_pad(t, &mut lsb, &mut msb) }),
        what,
    )?;
    let inpad = lib(|| unsafe { h5t::H5Tget_inpad(t) });
    let pad = [pad_of(lsb)?, pad_of(msb)?, pad_of(inpad)?];
    let precision = lib(|| unsafe { h5t::H5Tget_precision(t) });
    let offset = check(lib(|| unsafe { h5t::H5Tget_offset(t) }), what)? as usize;
    let bias = lib(|| unsafe { h5t::H5Tget_ebias(t) }) as u64;
    let bits = FloatBits {
        precision,
        offset,
        sign,
        exp_pos,
        exp_size,
        mant_pos,
        mant_size,
        bias,
        norm,
        pad,
    };
    if FloatBits::ieee(size).as_ref() == Some(&bits) {
        return Ok(Datatype::Float { size, order });
    }
    bits.check(size).map_err(|e| {
        unsupported(format!(
            "a {size}-byte float layout h5lake cannot hold ({e})"
        ))
    })?;
    Ok(Datatype::CustomFloat {
        size,
        order,
        bits: Box::new(bits),
    })
}

fn pad_of(p: H5T_pad_t) -> Result<Pad> {
    match p {
        H5T_pad_t::H5T_PAD_ZERO => Ok(Pad::Zero),
        H5T_pad_t::H5T_PAD_ONE => Ok(Pad::One),
        H5T_pad_t::H5T_PAD_BACKGROUND => Ok(Pad::Background),
        _ => Err(Hdf5Error::Library("reading a float's padding".into())),
    }
}

fn hdf5_pad(p: Pad) -> H5T_pad_t {
    match p {
        Pad::Zero => H5T_pad_t::H5T_PAD_ZERO,
        Pad::One => H5T_pad_t::H5T_PAD_ONE,
        Pad::Background => H5T_pad_t::H5T_PAD_BACKGROUND,
    }
}

/// How many members the compound or enum type `t` has.
fn member_count(t: hid_t, what: &str) -> Result<u32> {
    Ok(check(lib(|| unsafe { h5t::H5Tget_nmembers(t) }), what)? as u32)
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

const TIME: &str = "H5T_TIME";

/// Bytes of a stored object reference: the target's collection and id,
/// NUL-padded, as HSDS keeps them (and `Datatype::from_json` sizes them).
pub(crate) const REF_BYTES: usize = 48;

/// The type JSON of `dt`, read from the library's type `t`: HSDS's form
/// plus what it cannot say (see the module docs).
pub(crate) fn type_json(t: hid_t, dt: &Datatype) -> Result<Value> {
    let mut json = dt.to_json();
    annotate(t, dt, &mut json)?;
    Ok(json)
}

fn annotate(t: hid_t, dt: &Datatype, json: &mut Value) -> Result<()> {
    match (lib(|| unsafe { h5t::H5Tget_class(t) }), dt) {
        (H5T_class_t::H5T_COMPOUND, Datatype::Compound { fields, .. }) => {
            let mut offsets = Vec::with_capacity(fields.len());
            let mut packed = 0;
            let mut is_packed = true;
            for (i, f) in fields.iter().enumerate() {
                let mt = member_type(t, i as u32)?;
                if let Some(ft) = json.pointer_mut(&format!("/fields/{i}/type")) {
                    annotate(mt.id(), &f.dtype, ft)?;
                }
                let offset = lib(|| unsafe { h5t::H5Tget_member_offset(t, i as u32) });
                is_packed &= offset == packed;
                packed += size_of(mt.id())?;
                offsets.push(offset);
            }
            let size = size_of(t)?;
            if !is_packed || size != packed {
                json["h5lake"]["offsets"] = json!(offsets);
                json["h5lake"]["size"] = json!(size);
            }
        }
        (H5T_class_t::H5T_ARRAY, Datatype::Array { base, .. })
        | (H5T_class_t::H5T_VLEN, Datatype::Vlen { base }) => {
            let bt = super_of(t)?;
            annotate(bt.id(), base, &mut json["base"])?;
        }
        (H5T_class_t::H5T_TIME, _) => {
            let order = match order_of(t) {
                ByteOrder::Big => "H5T_ORDER_BE",
                ByteOrder::Little => "H5T_ORDER_LE",
            };
            let precision = lib(|| unsafe { h5t::H5Tget_precision(t) });
            let offset = check(
                lib(|| unsafe { h5t::H5Tget_offset(t) }),
                "reading a time type",
            )?;
            json["h5lake"] = json!({
                "class": TIME, "order": order, "precision": precision, "offset": offset,
            });
        }
        _ => {}
    }
    Ok(())
}

/// How [`build`] lays compounds out.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Form {
    /// Members packed in order, variable-length parts in the library's
    /// memory form: the element buffers h5lake reads and writes (see
    /// [`crate::memory`]).
    Memory,
    /// As the type JSON recorded the file's type ([`type_json`]).
    File,
}

/// The type h5lake's element buffers for `dt` hold (`json`: its type JSON,
/// for the classes it records).
///
/// # Errors
/// Library failures; references.
pub(crate) fn memory_type(dt: &Datatype, json: &Value) -> Result<Hid> {
    build(dt, json, Form::Memory)
}

/// The type to create an object of type `dt` with in a file: laid out as
/// its type JSON recorded (see the module docs).
///
/// # Errors
/// Library failures; references.
pub(crate) fn file_type(dt: &Datatype, json: &Value) -> Result<Hid> {
    build(dt, json, Form::File)
}

/// The member offsets and size recorded in a compound's JSON, if they fit
/// members of `sizes` bytes without overlapping (the JSON is anyone's).
fn recorded_layout(json: &Value, sizes: &[usize]) -> Option<(Vec<usize>, usize)> {
    let size = json
        .pointer("/h5lake/size")?
        .as_u64()
        .filter(|&n| n <= MAX_ELEMENT_BYTES as u64)? as usize;
    let offsets = json
        .pointer("/h5lake/offsets")?
        .as_array()?
        .iter()
        .map(|o| o.as_u64().filter(|&o| o <= size as u64).map(|o| o as usize))
        .collect::<Option<Vec<usize>>>()?;
    if offsets.len() != sizes.len() {
        return None;
    }
    let mut spans: Vec<(usize, usize)> = offsets
        .iter()
        .zip(sizes)
        .map(|(&o, &n)| (o, o + n))
        .collect();
    spans.sort_unstable();
    let fits = spans.windows(2).all(|w| w[0].1 <= w[1].0) && spans.iter().all(|s| s.1 <= size);
    fits.then_some((offsets, size))
}

/// A copy of the predefined type `base` names. The library's predefined
/// types exist once it is initialised, which [`lib`] does first.
fn copy_of(base: impl FnOnce() -> hid_t) -> Result<Hid> {
    check_id(
        lib(|| unsafe { h5t::H5Tcopy(base()) }),
        "creating a datatype",
    )
}

fn build(dt: &Datatype, json: &Value, form: Form) -> Result<Hid> {
    let what = "creating a datatype";
    Ok(match dt {
        Datatype::Integer {
            size,
            signed,
            order,
        } => copy_of(|| match (size, signed, order) {
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
        })?,
        Datatype::Bitfield { size, order } => copy_of(|| match (size, order) {
            (1, ByteOrder::Little) => *h5t::H5T_STD_B8LE,
            (1, ByteOrder::Big) => *h5t::H5T_STD_B8BE,
            (2, ByteOrder::Little) => *h5t::H5T_STD_B16LE,
            (2, ByteOrder::Big) => *h5t::H5T_STD_B16BE,
            (4, ByteOrder::Little) => *h5t::H5T_STD_B32LE,
            (4, ByteOrder::Big) => *h5t::H5T_STD_B32BE,
            (8, ByteOrder::Little) => *h5t::H5T_STD_B64LE,
            _ => *h5t::H5T_STD_B64BE,
        })?,
        Datatype::Float { size, order } => {
            let big = *order == ByteOrder::Big;
            let t = copy_of(|| match (size, big) {
                (8, false) => *h5t::H5T_IEEE_F64LE,
                (8, true) => *h5t::H5T_IEEE_F64BE,
                (_, false) => *h5t::H5T_IEEE_F32LE,
                (_, true) => *h5t::H5T_IEEE_F32BE,
            })?;
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
        Datatype::CustomFloat { size, order, bits } => custom_float(*size, *order, bits)?,
        Datatype::String {
            length,
            charset,
            pad,
        } => {
            let t = copy_of(|| *h5t::H5T_C_S1)?;
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
        Datatype::Compound { fields, .. } => {
            let members = fields
                .iter()
                .enumerate()
                .map(|(i, f)| {
                    let fj = json
                        .pointer(&format!("/fields/{i}/type"))
                        .unwrap_or(&Value::Null);
                    build(&f.dtype, fj, form)
                })
                .collect::<Result<Vec<Hid>>>()?;
            let sizes = members
                .iter()
                .map(|m| size_of(m.id()))
                .collect::<Result<Vec<usize>>>()?;
            let packed = || {
                let offsets = sizes
                    .iter()
                    .scan(0, |at, n| {
                        let o = *at;
                        *at += n;
                        Some(o)
                    })
                    .collect();
                (offsets, sizes.iter().sum())
            };
            let (offsets, size) = match form {
                Form::File => recorded_layout(json, &sizes).unwrap_or_else(packed),
                Form::Memory => packed(),
            };
            let t = check_id(
                lib(|| unsafe { h5t::H5Tcreate(H5T_class_t::H5T_COMPOUND, size) }),
                what,
            )?;
            for ((f, mt), offset) in fields.iter().zip(&members).zip(offsets) {
                let name = cstr(&f.name)?;
                check(
                    lib(|| unsafe { h5t::H5Tinsert(t.id(), name.as_ptr(), offset, mt.id()) }),
                    what,
                )?;
            }
            t
        }
        Datatype::Array { base, dims } => {
            let b = build(base, json.get("base").unwrap_or(&Value::Null), form)?;
            check_id(
                lib(|| unsafe { h5t::H5Tarray_create2(b.id(), dims.len() as u32, dims.as_ptr()) }),
                what,
            )?
        }
        // Written as h5py writes complex numbers: a compound of r and i.
        Datatype::Complex { part } => {
            let size = part.fixed_size().unwrap_or(0);
            build(
                &Datatype::Compound {
                    fields: ["r", "i"]
                        .iter()
                        .enumerate()
                        .map(|(k, name)| Field {
                            name: name.to_string(),
                            dtype: (**part).clone(),
                            offset: k * size,
                        })
                        .collect(),
                    size: 2 * size,
                },
                &Value::Null,
                form,
            )?
        }
        Datatype::Enum { base, mapping } => {
            let b = build(base, &Value::Null, form)?;
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
        Datatype::Opaque { size, .. }
            if json.pointer("/h5lake/class").and_then(Value::as_str) == Some(TIME) =>
        {
            time_type(*size, json)?
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
            let b = build(base, json.get("base").unwrap_or(&Value::Null), form)?;
            check_id(lib(|| unsafe { h5t::H5Tvlen_create(b.id()) }), what)?
        }
        Datatype::Reference { current_api, .. } => copy_of(|| {
            if *current_api {
                *h5t::H5T_STD_REF
            } else {
                *h5t::H5T_STD_REF_OBJ
            }
        })?,
        Datatype::RegionReference => copy_of(|| *h5t::H5T_STD_REF_DSETREG)?,
    })
}

/// A float of the bit layout `bits`.
fn custom_float(size: usize, order: ByteOrder, bits: &FloatBits) -> Result<Hid> {
    let what = "creating a float type";
    let t = copy_of(|| *h5t::H5T_IEEE_F64LE)?;
    let id = t.id();
    let o = if order == ByteOrder::Big {
        H5T_order_t::H5T_ORDER_BE
    } else {
        H5T_order_t::H5T_ORDER_LE
    };
    // The library checks every change against the fields, precision and
    // size in place: shrink the fields to three bits first, so that any
    // size, offset and precision can follow, then set the real fields.
    let steps: [&dyn Fn() -> i32; 11] = [
        &|| unsafe { h5t::H5Tset_fields(id, 2, 1, 1, 0, 1) },
        &|| unsafe { h5t::H5Tset_precision(id, 3) },
        &|| unsafe { h5t::H5Tset_size(id, size) },
        &|| unsafe { h5t::H5Tset_offset(id, bits.offset) },
        &|| unsafe { h5t::H5Tset_precision(id, bits.precision) },
        &|| unsafe {
            h5t::H5Tset_fields(
                id,
                bits.sign,
                bits.exp_pos,
                bits.exp_size,
                bits.mant_pos,
                bits.mant_size,
            )
        },
        &|| unsafe { h5t::H5Tset_ebias(id, bits.bias as usize) },
        &|| unsafe {
            h5t::H5Tset_norm(
                id,
                match bits.norm {
                    Norm::Implied => H5T_norm_t::H5T_NORM_IMPLIED,
                    Norm::MsbSet => H5T_norm_t::H5T_NORM_MSBSET,
                    Norm::None => H5T_norm_t::H5T_NORM_NONE,
                },
            )
        },
        &|| unsafe { h5t::H5Tset_pad(id, hdf5_pad(bits.pad[0]), hdf5_pad(bits.pad[1])) },
        &|| unsafe { h5t::H5Tset_inpad(id, hdf5_pad(bits.pad[2])) },
        &|| unsafe { h5t::H5Tset_order(id, o) },
    ];
    for step in steps {
        check(lib(step), what)?;
    }
    Ok(t)
}

/// An `H5T_TIME` type as [`type_json`] recorded it.
fn time_type(size: usize, json: &Value) -> Result<Hid> {
    let what = "creating a time type";
    let big = json.pointer("/h5lake/order").and_then(Value::as_str) == Some("H5T_ORDER_BE");
    let t = copy_of(|| {
        if big {
            *h5t::H5T_UNIX_D32BE
        } else {
            *h5t::H5T_UNIX_D32LE
        }
    })?;
    check(lib(|| unsafe { h5t::H5Tset_size(t.id(), size) }), what)?;
    let field = |k: &str| {
        json.pointer(&format!("/h5lake/{k}"))
            .and_then(Value::as_u64)
    };
    let precision = field("precision").unwrap_or(size as u64 * 8) as usize;
    let offset = field("offset").unwrap_or(0) as usize;
    // Recorded numbers that do not fit the size are not used.
    if precision > 0
        && precision
            .checked_add(offset)
            .is_some_and(|end| end <= size * 8)
    {
        check(
            lib(|| unsafe { h5t::H5Tset_precision(t.id(), precision) }),
            what,
        )?;
        check(lib(|| unsafe { h5t::H5Tset_offset(t.id(), offset) }), what)?;
    }
    Ok(t)
}

/// From the file's layout of a fixed-size element to h5lake's packed one
/// and back: byte runs `(file offset, length, packed offset)`.
#[derive(Clone, Debug)]
pub(crate) struct Repack {
    runs: Vec<(usize, usize, usize)>,
    pub file_elem: usize,
    pub packed_elem: usize,
}

impl Repack {
    /// How elements of the library's type `t` map onto their packed form;
    /// `None` when the two layouts are identical (no repacking needed).
    pub(crate) fn of(t: hid_t) -> Result<Option<Repack>> {
        let mut runs = Vec::new();
        collect_runs(t, 0, &mut 0, &mut runs)?;
        let file_elem = size_of(t)?;
        let packed_elem: usize = runs.iter().map(|r| r.1).sum();
        let identity = packed_elem == file_elem && runs.iter().all(|&(f, _, p)| f == p);
        Ok((!identity).then_some(Repack {
            runs,
            file_elem,
            packed_elem,
        }))
    }

    /// File-layout elements → packed ones.
    pub(crate) fn pack(&self, src: &[u8]) -> Vec<u8> {
        self.relayout(src, true)
    }

    /// Packed elements → the file's layout, padding zeroed.
    pub(crate) fn unpack(&self, src: &[u8]) -> Vec<u8> {
        self.relayout(src, false)
    }

    /// Moves each run of every element from one layout to the other.
    fn relayout(&self, src: &[u8], packing: bool) -> Vec<u8> {
        let (from, to) = if packing {
            (self.file_elem, self.packed_elem)
        } else {
            (self.packed_elem, self.file_elem)
        };
        let n = src.len() / from;
        let mut out = vec![0u8; n * to];
        for i in 0..n {
            let (s, d) = (i * from, i * to);
            for &(f, len, p) in &self.runs {
                let (a, b) = if packing { (f, p) } else { (p, f) };
                out[d + b..d + b + len].copy_from_slice(&src[s + a..s + a + len]);
            }
        }
        out
    }
}

fn collect_runs(
    t: hid_t,
    file_off: usize,
    packed_off: &mut usize,
    runs: &mut Vec<(usize, usize, usize)>,
) -> Result<()> {
    match lib(|| unsafe { h5t::H5Tget_class(t) }) {
        H5T_class_t::H5T_COMPOUND => {
            let n = member_count(t, "reading a compound type")?;
            for i in 0..n {
                let off = lib(|| unsafe { h5t::H5Tget_member_offset(t, i) });
                let mt = member_type(t, i)?;
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

/// Whether the library's type `t` holds integers in part of their bytes
/// (a precision short of their size, or an offset): their values are not
/// their bytes, so they are read through the library, which converts them
/// (sign-extending), never copied or linked byte for byte.
pub(crate) fn has_partial_integers(t: hid_t) -> Result<bool> {
    Ok(match lib(|| unsafe { h5t::H5Tget_class(t) }) {
        H5T_class_t::H5T_INTEGER => {
            let precision = lib(|| unsafe { h5t::H5Tget_precision(t) });
            let offset = check(
                lib(|| unsafe { h5t::H5Tget_offset(t) }),
                "reading an integer type",
            )?;
            precision != size_of(t)? * 8 || offset != 0
        }
        H5T_class_t::H5T_COMPOUND => {
            let n = member_count(t, "reading a compound type")?;
            for i in 0..n {
                if has_partial_integers(member_type(t, i)?.id())? {
                    return Ok(true);
                }
            }
            false
        }
        H5T_class_t::H5T_ARRAY | H5T_class_t::H5T_ENUM | H5T_class_t::H5T_VLEN => {
            has_partial_integers(super_of(t)?.id())?
        }
        _ => false,
    })
}

/// Checks that the library's memory form of `dt` is the one
/// [`crate::memory`] walks.
pub(crate) fn check_memory_size(mem: hid_t, dt: &Datatype) -> Result<usize> {
    let n = size_of(mem)?;
    if n != mem_size(dt) {
        return Err(Hdf5Error::Library(format!(
            "the library lays out {} in {n} bytes, h5lake in {}",
            dt.to_json(),
            mem_size(dt)
        )));
    }
    Ok(n)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round_trip(dt: &Datatype, json: &Value) -> (Datatype, Value) {
        let t = file_type(dt, json).unwrap();
        let back = from_hdf5(t.id()).unwrap();
        let j = type_json(t.id(), &back).unwrap();
        (back, j)
    }

    #[test]
    fn float_layouts_come_back() {
        let quad = FloatBits {
            precision: 128,
            offset: 0,
            sign: 127,
            exp_pos: 112,
            exp_size: 15,
            mant_pos: 0,
            mant_size: 112,
            bias: 16383,
            norm: Norm::Implied,
            pad: [Pad::Zero; 3],
        };
        let odd = FloatBits {
            precision: 20,
            offset: 4,
            sign: 19,
            exp_pos: 13,
            exp_size: 6,
            mant_pos: 0,
            mant_size: 13,
            bias: 31,
            norm: Norm::MsbSet,
            pad: [Pad::One, Pad::Zero, Pad::Zero],
        };
        for (size, bits) in [(16, FloatBits::x87()), (16, quad), (3, odd)] {
            for order in [ByteOrder::Little, ByteOrder::Big] {
                let dt = Datatype::CustomFloat {
                    size,
                    order,
                    bits: Box::new(bits.clone()),
                };
                assert_eq!(round_trip(&dt, &dt.to_json()).0, dt);
            }
        }
        for size in [2, 4, 8] {
            let dt = Datatype::Float {
                size,
                order: ByteOrder::Big,
            };
            assert_eq!(round_trip(&dt, &dt.to_json()).0, dt);
        }
    }

    #[test]
    fn layouts_and_time_types_are_recorded_and_rebuilt() {
        let json = json!({"class": "H5T_COMPOUND", "fields": [
            {"name": "a", "type": {"class": "H5T_INTEGER", "base": "H5T_STD_I16LE"}},
            {"name": "in", "type": {"class": "H5T_COMPOUND", "fields": [
                {"name": "x", "type": {"class": "H5T_INTEGER", "base": "H5T_STD_U8LE"}},
                {"name": "s", "type": {"class": "H5T_STRING", "charSet": "H5T_CSET_UTF8",
                                       "strPad": "H5T_STR_NULLTERM", "length": "H5T_VARIABLE"}}],
                "h5lake": {"offsets": [0, 8], "size": 24}}},
            {"name": "t", "type": {"class": "H5T_OPAQUE", "size": 8,
                "h5lake": {"class": "H5T_TIME", "order": "H5T_ORDER_BE", "precision": 64, "offset": 0}}}],
            "h5lake": {"offsets": [0, 8, 40], "size": 56}});
        let dt = Datatype::from_json(&json).unwrap();
        let (back, j) = round_trip(&dt, &json);
        assert_eq!(back, dt);
        assert_eq!(j, json);
        let mem = memory_type(&dt, &json).unwrap();
        assert_eq!(check_memory_size(mem.id(), &dt).unwrap(), 2 + 1 + 8 + 8);
        // A layout that does not fit its members is not used.
        let mut bad = json.clone();
        bad["h5lake"]["offsets"] = json!([0, 1, 40]);
        let (_, j) = round_trip(&dt, &bad);
        assert!(j.get("h5lake").is_none(), "{j}");
    }

    #[test]
    fn repacking_moves_members_to_their_offsets() {
        let json = json!({"class": "H5T_COMPOUND", "fields": [
            {"name": "a", "type": "H5T_STD_I16LE"}, {"name": "b", "type": "H5T_STD_I8LE"}],
            "h5lake": {"offsets": [4, 0], "size": 8}});
        let dt = Datatype::from_json(&json).unwrap();
        let t = file_type(&dt, &json).unwrap();
        let r = Repack::of(t.id()).unwrap().unwrap();
        let packed = [1, 2, 3, 4, 5, 6];
        let file = r.unpack(&packed);
        assert_eq!(file, [3, 0, 0, 0, 1, 2, 0, 0, 6, 0, 0, 0, 4, 5, 0, 0]);
        assert_eq!(r.pack(&file), packed);
    }
}
