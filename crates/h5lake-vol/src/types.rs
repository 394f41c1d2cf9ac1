//! HDF5 datatype ids (the host library's) ⇄ h5lake's [`Datatype`].

use std::ffi::{c_char, CStr, CString};

use h5lake_types::{ByteOrder, CharSet, Datatype, Field, StrPad};

use crate::api::Api;
use crate::error::{check, Result, VolError};
use crate::sys::{self, hid_t};

/// An id this module opened; closed on drop.
pub struct TypeId(pub hid_t);

impl Drop for TypeId {
    fn drop(&mut self) {
        if let Ok(api) = crate::api::h5() {
            // SAFETY: the id was returned by the library and is closed once.
            unsafe { api.f.H5Tclose(self.0) };
        }
    }
}

fn bad(what: impl Into<String>) -> VolError {
    VolError::BadType(what.into())
}

/// The bit layout of float type `t`.
unsafe fn float_bits(api: &Api, t: hid_t) -> Result<h5lake_types::FloatBits> {
    use h5lake_types::{Norm, Pad};
    let f = &api.f;
    let what = "reading a float's layout";
    let (mut spos, mut epos, mut esize, mut mpos, mut msize) = (0, 0, 0, 0, 0);
    check(
        f.H5Tget_fields(t, &mut spos, &mut epos, &mut esize, &mut mpos, &mut msize),
        what,
    )?;
    let (mut lsb, mut msb) = (0, 0);
    check(f.H5Tget_pad(t, &mut lsb, &mut msb), what)?;
    let pad = |p| match p {
        sys::H5T_pad_t_H5T_PAD_ONE => Pad::One,
        sys::H5T_pad_t_H5T_PAD_BACKGROUND => Pad::Background,
        _ => Pad::Zero,
    };
    Ok(h5lake_types::FloatBits {
        precision: f.H5Tget_precision(t),
        offset: usize::try_from(check(f.H5Tget_offset(t), what)?).unwrap_or(0),
        sign: spos,
        exp_pos: epos,
        exp_size: esize,
        mant_pos: mpos,
        mant_size: msize,
        bias: f.H5Tget_ebias(t) as u64,
        norm: match f.H5Tget_norm(t) {
            sys::H5T_norm_t_H5T_NORM_IMPLIED => Norm::Implied,
            sys::H5T_norm_t_H5T_NORM_MSBSET => Norm::MsbSet,
            _ => Norm::None,
        },
        pad: [pad(lsb), pad(msb), pad(f.H5Tget_inpad(t))],
    })
}

fn norm_of(n: h5lake_types::Norm) -> sys::H5T_norm_t {
    match n {
        h5lake_types::Norm::Implied => sys::H5T_norm_t_H5T_NORM_IMPLIED,
        h5lake_types::Norm::MsbSet => sys::H5T_norm_t_H5T_NORM_MSBSET,
        h5lake_types::Norm::None => sys::H5T_norm_t_H5T_NORM_NONE,
    }
}

fn pad_of(p: h5lake_types::Pad) -> sys::H5T_pad_t {
    match p {
        h5lake_types::Pad::Zero => sys::H5T_pad_t_H5T_PAD_ZERO,
        h5lake_types::Pad::One => sys::H5T_pad_t_H5T_PAD_ONE,
        h5lake_types::Pad::Background => sys::H5T_pad_t_H5T_PAD_BACKGROUND,
    }
}

/// A member, element or base type: anything but a region reference, which
/// is a whole value of its own (variable-length, see regions.rs).
fn part_of(dt: Datatype) -> Result<Datatype> {
    if dt == Datatype::RegionReference {
        return Err(crate::refs::nested_regions());
    }
    Ok(dt)
}

/// The [`Datatype`] an HDF5 datatype id describes.
///
/// # Errors
/// Type classes h5lake does not store (time, references other than object
/// and region ones, odd-sized bit fields); region references inside other
/// types.
pub fn from_hdf5(api: &Api, t: hid_t) -> Result<Datatype> {
    let f = &api.f;
    // SAFETY (whole function): `t` is a valid datatype id for these calls.
    unsafe {
        let class = f.H5Tget_class(t);
        let size = f.H5Tget_size(t);
        let order = || {
            if f.H5Tget_order(t) == sys::H5T_order_t_H5T_ORDER_BE {
                ByteOrder::Big
            } else {
                ByteOrder::Little
            }
        };
        Ok(match class {
            sys::H5T_class_t_H5T_INTEGER => Datatype::Integer {
                size,
                signed: f.H5Tget_sign(t) != sys::H5T_sign_t_H5T_SGN_NONE,
                order: order(),
            },
            sys::H5T_class_t_H5T_FLOAT => {
                // IEEE binary16/32/64 in HSDS's spelling; any other layout
                // (long double, custom exponent, mantissa, bias or padding)
                // with the layout kept, so that it reads back as written.
                if matches!(size, 2 | 4 | 8) {
                    let dt = Datatype::Float {
                        size,
                        order: order(),
                    };
                    let ieee = to_hdf5(api, &dt)?;
                    if check(f.H5Tequal(t, ieee.0), "H5Tequal")? > 0 {
                        return Ok(dt);
                    }
                }
                let bits = float_bits(api, t)?;
                bits.check(size)
                    .map_err(|e| VolError::Unsupported(e.to_string()))?;
                Datatype::CustomFloat {
                    size,
                    order: order(),
                    bits: Box::new(bits),
                }
            }
            sys::H5T_class_t_H5T_STRING => {
                let charset = if f.H5Tget_cset(t) == sys::H5T_cset_t_H5T_CSET_UTF8 {
                    CharSet::Utf8
                } else {
                    CharSet::Ascii
                };
                let pad = match f.H5Tget_strpad(t) {
                    sys::H5T_str_t_H5T_STR_NULLPAD => StrPad::NullPad,
                    sys::H5T_str_t_H5T_STR_SPACEPAD => StrPad::SpacePad,
                    _ => StrPad::NullTerm,
                };
                let variable = check(f.H5Tis_variable_str(t), "H5Tis_variable_str")? > 0;
                Datatype::String {
                    length: (!variable).then_some(size),
                    charset,
                    pad,
                }
            }
            sys::H5T_class_t_H5T_COMPOUND => {
                let n = check(f.H5Tget_nmembers(t), "H5Tget_nmembers")? as u32;
                let mut fields = Vec::with_capacity(n as usize);
                for i in 0..n {
                    let name = member_name(api, t, i)?;
                    let mt = TypeId(check(f.H5Tget_member_type(t, i), "H5Tget_member_type")?);
                    let dtype = part_of(from_hdf5(api, mt.0)?)?;
                    fields.push(Field {
                        name,
                        dtype,
                        offset: f.H5Tget_member_offset(t, i),
                    });
                }
                Datatype::Compound { fields, size }
            }
            sys::H5T_class_t_H5T_ARRAY => {
                let rank = check(f.H5Tget_array_ndims(t), "H5Tget_array_ndims")? as usize;
                let mut dims = vec![0u64; rank];
                check(
                    f.H5Tget_array_dims2(t, dims.as_mut_ptr()),
                    "H5Tget_array_dims2",
                )?;
                let base = TypeId(check(f.H5Tget_super(t), "H5Tget_super")?);
                let base = part_of(from_hdf5(api, base.0)?)?;
                Datatype::Array {
                    base: Box::new(base),
                    dims,
                }
            }
            sys::H5T_class_t_H5T_ENUM => {
                let base = TypeId(check(f.H5Tget_super(t), "H5Tget_super")?);
                let base_dt = part_of(from_hdf5(api, base.0)?)?;
                let n = check(f.H5Tget_nmembers(t), "H5Tget_nmembers")? as u32;
                let mut mapping = Vec::with_capacity(n as usize);
                for i in 0..n {
                    let name = member_name(api, t, i)?;
                    let mut raw = [0u8; 8];
                    check(
                        f.H5Tget_member_value(t, i, raw.as_mut_ptr().cast()),
                        "H5Tget_member_value",
                    )?;
                    let mut v = [0u8; 8];
                    // Widen the native-order value of the base type's size.
                    let value = match &base_dt {
                        Datatype::Integer { size, signed, .. } => {
                            v[..*size].copy_from_slice(&raw[..*size]);
                            if *signed && raw[*size - 1] & 0x80 != 0 {
                                v[*size..].fill(0xff);
                            }
                            i64::from_ne_bytes(v)
                        }
                        _ => return Err(bad("enumerations over a non-integer base")),
                    };
                    mapping.push((name, value));
                }
                Datatype::Enum {
                    base: Box::new(base_dt),
                    mapping,
                }
            }
            sys::H5T_class_t_H5T_OPAQUE => {
                let tag = f.H5Tget_tag(t);
                let tag_s = if tag.is_null() {
                    None
                } else {
                    let s = CStr::from_ptr(tag).to_string_lossy().into_owned();
                    f.H5free_memory(tag.cast());
                    Some(s).filter(|s| !s.is_empty())
                };
                Datatype::Opaque { size, tag: tag_s }
            }
            sys::H5T_class_t_H5T_VLEN => {
                let base = TypeId(check(f.H5Tget_super(t), "H5Tget_super")?);
                let base = part_of(from_hdf5(api, base.0)?)?;
                Datatype::Vlen {
                    base: Box::new(base),
                }
            }
            sys::H5T_class_t_H5T_REFERENCE => {
                // Object references of both APIs are stored alike (see refs.rs);
                // which objects a reference names is in the value.
                let v1 = check(f.H5Tequal(t, api.g.t_std_ref_obj.id()), "H5Tequal")? > 0;
                if v1 || check(f.H5Tequal(t, api.g.t_std_ref.id()), "H5Tequal")? > 0 {
                    Datatype::Reference {
                        size: 48,
                        current_api: !v1,
                    }
                } else if check(f.H5Tequal(t, api.g.t_std_ref_dsetreg.id()), "H5Tequal")? > 0 {
                    Datatype::RegionReference
                } else {
                    return Err(VolError::Unsupported("this kind of reference".into()));
                }
            }
            sys::H5T_class_t_H5T_COMPLEX => {
                let part = TypeId(check(f.H5Tget_super(t), "H5Tget_super")?);
                match from_hdf5(api, part.0)? {
                    p @ (Datatype::Float { .. } | Datatype::CustomFloat { .. }) => {
                        Datatype::Complex { part: Box::new(p) }
                    }
                    _ => return Err(bad("complex numbers over a non-float part")),
                }
            }
            sys::H5T_class_t_H5T_BITFIELD if matches!(size, 1 | 2 | 4 | 8) => Datatype::Bitfield {
                size,
                order: order(),
            },
            sys::H5T_class_t_H5T_BITFIELD => {
                return Err(VolError::Unsupported(format!("{size}-byte bit fields")))
            }
            sys::H5T_class_t_H5T_TIME => {
                return Err(VolError::Unsupported("time datatypes".into()))
            }
            other => return Err(bad(format!("datatype class {other}"))),
        })
    }
}

fn member_name(api: &Api, t: hid_t, i: u32) -> Result<String> {
    // SAFETY: the library returns a malloc'd string it lets us free.
    unsafe {
        let p: *mut c_char = api.f.H5Tget_member_name(t, i);
        if p.is_null() {
            return Err(VolError::Hdf5("H5Tget_member_name failed".into()));
        }
        let s = CStr::from_ptr(p).to_string_lossy().into_owned();
        api.f.H5free_memory(p.cast());
        Ok(s)
    }
}

/// A new HDF5 datatype id for `dt` (the caller owns it).
///
/// # Errors
/// When the library refuses a step.
pub fn to_hdf5(api: &Api, dt: &Datatype) -> Result<TypeId> {
    let f = &api.f;
    let what = "building a datatype";
    // SAFETY (whole function): ids come from the library and are used while open.
    unsafe {
        let set_order = |t: hid_t, order: &ByteOrder| {
            let o = match order {
                ByteOrder::Big => sys::H5T_order_t_H5T_ORDER_BE,
                ByteOrder::Little => sys::H5T_order_t_H5T_ORDER_LE,
            };
            check(f.H5Tset_order(t, o), what)
        };
        Ok(match dt {
            Datatype::Integer {
                size,
                signed,
                order,
            } => {
                let t = TypeId(check(f.H5Tcopy(api.g.t_std_i8le.id()), what)?);
                check(f.H5Tset_size(t.0, *size), what)?;
                check(f.H5Tset_precision(t.0, *size * 8), what)?;
                let sign = if *signed {
                    sys::H5T_sign_t_H5T_SGN_2
                } else {
                    sys::H5T_sign_t_H5T_SGN_NONE
                };
                check(f.H5Tset_sign(t.0, sign), what)?;
                set_order(t.0, order)?;
                t
            }
            Datatype::Bitfield { size, order } => {
                let t = TypeId(check(f.H5Tcopy(api.g.t_std_b8le.id()), what)?);
                check(f.H5Tset_size(t.0, *size), what)?;
                check(f.H5Tset_precision(t.0, *size * 8), what)?;
                set_order(t.0, order)?;
                t
            }
            Datatype::CustomFloat { size, order, bits } => {
                let t = TypeId(check(f.H5Tcopy(api.g.t_ieee_f64le.id()), what)?);
                let fields = |t: hid_t| {
                    check(
                        f.H5Tset_fields(
                            t,
                            bits.sign,
                            bits.exp_pos,
                            bits.exp_size,
                            bits.mant_pos,
                            bits.mant_size,
                        ),
                        what,
                    )?;
                    check(f.H5Tset_ebias(t, bits.bias as usize), what)?;
                    check(f.H5Tset_norm(t, norm_of(bits.norm)), what)?;
                    check(f.H5Tset_inpad(t, pad_of(bits.pad[2])), what).map(|_| ())
                };
                // HDF5 keeps fields inside the precision and the precision
                // inside the size at every step: grow the outside first,
                // shrink the inside first.
                if *size > 8 {
                    check(f.H5Tset_size(t.0, *size), what)?;
                    check(f.H5Tset_precision(t.0, bits.precision), what)?;
                    check(f.H5Tset_offset(t.0, bits.offset), what)?;
                    fields(t.0)?;
                } else {
                    fields(t.0)?;
                    check(f.H5Tset_precision(t.0, bits.precision), what)?;
                    check(f.H5Tset_offset(t.0, bits.offset), what)?;
                    check(f.H5Tset_size(t.0, *size), what)?;
                }
                check(
                    f.H5Tset_pad(t.0, pad_of(bits.pad[0]), pad_of(bits.pad[1])),
                    what,
                )?;
                set_order(t.0, order)?;
                t
            }
            Datatype::Float { size, order } => {
                let base = if *size == 8 {
                    api.g.t_ieee_f64le.id()
                } else {
                    api.g.t_ieee_f32le.id()
                };
                let t = TypeId(check(f.H5Tcopy(base), what)?);
                if *size == 2 {
                    // IEEE half: sign bit 15, exponent bits 10..15, mantissa 0..10.
                    check(f.H5Tset_fields(t.0, 15, 10, 5, 0, 10), what)?;
                    check(f.H5Tset_size(t.0, 2), what)?;
                    check(f.H5Tset_ebias(t.0, 15), what)?;
                    check(f.H5Tset_precision(t.0, 16), what)?;
                }
                set_order(t.0, order)?;
                t
            }
            Datatype::String {
                length,
                charset,
                pad,
            } => {
                let t = TypeId(check(f.H5Tcopy(api.g.t_c_s1.id()), what)?);
                let size = length.unwrap_or(usize::MAX); // H5T_VARIABLE
                check(f.H5Tset_size(t.0, size), what)?;
                let cset = match charset {
                    CharSet::Utf8 => sys::H5T_cset_t_H5T_CSET_UTF8,
                    CharSet::Ascii => sys::H5T_cset_t_H5T_CSET_ASCII,
                };
                check(f.H5Tset_cset(t.0, cset), what)?;
                let p = match pad {
                    StrPad::NullPad => sys::H5T_str_t_H5T_STR_NULLPAD,
                    StrPad::SpacePad => sys::H5T_str_t_H5T_STR_SPACEPAD,
                    StrPad::NullTerm => sys::H5T_str_t_H5T_STR_NULLTERM,
                };
                check(f.H5Tset_strpad(t.0, p), what)?;
                t
            }
            Datatype::Compound { fields, size } => {
                let members = fields
                    .iter()
                    .map(|fl| Ok((fl, to_hdf5(api, &fl.dtype)?)))
                    .collect::<Result<Vec<_>>>()?;
                // A reference member is 64 bytes in HDF5 and 48 stored, a
                // variable-length one a pointer in memory and a counted
                // run of bytes stored: such compounds are described packed,
                // and their values are converted member by member (refs.rs,
                // memory::RecordMem), never byte for byte — unless the
                // offsets given fit HDF5's member sizes: the layout the
                // program wrote the type with (Datatype::laid_out_as_in),
                // which C structs such as HDF5's own dimension-scale lists
                // are read into.
                let hsizes: Vec<usize> =
                    members.iter().map(|(_, ft)| f.H5Tget_size(ft.0)).collect();
                let fits = {
                    let mut spans: Vec<(usize, usize)> = fields
                        .iter()
                        .zip(&hsizes)
                        .map(|(fl, n)| (fl.offset, fl.offset + n))
                        .collect();
                    spans.sort_unstable();
                    spans.windows(2).all(|w| w[0].1 <= w[1].0)
                        && spans.last().is_some_and(|l| l.1 <= *size)
                };
                // The stored form itself (references at their stored 48
                // bytes, members back to back): not a layout a program
                // wrote, so packed with HDF5's sizes, as h5py packs it.
                let stored_form = fields
                    .iter()
                    .map(|fl| fl.dtype.fixed_size())
                    .sum::<Option<usize>>()
                    == Some(*size)
                    && fields
                        .iter()
                        .zip(&hsizes)
                        .any(|(fl, n)| fl.dtype.fixed_size() != Some(*n));
                let packed =
                    (crate::refs::contains(dt) || dt.is_variable()) && (!fits || stored_form);
                let total = if packed { hsizes.iter().sum() } else { *size };
                let t = TypeId(check(
                    f.H5Tcreate(sys::H5T_class_t_H5T_COMPOUND, total),
                    what,
                )?);
                let mut at = 0;
                for (fl, ft) in members {
                    let offset = if packed { at } else { fl.offset };
                    at += f.H5Tget_size(ft.0);
                    let name = CString::new(fl.name.as_str())
                        .map_err(|_| bad("a field name with a NUL byte"))?;
                    check(f.H5Tinsert(t.0, name.as_ptr(), offset, ft.0), what)?;
                }
                t
            }
            Datatype::Array { base, dims } => {
                let b = to_hdf5(api, base)?;
                TypeId(check(
                    f.H5Tarray_create2(b.0, dims.len() as u32, dims.as_ptr()),
                    what,
                )?)
            }
            Datatype::Enum { base, mapping } => {
                let b = to_hdf5(api, base)?;
                let t = TypeId(check(f.H5Tenum_create(b.0), what)?);
                let size = base.fixed_size().unwrap_or(8);
                for (name, v) in mapping {
                    let name = CString::new(name.as_str())
                        .map_err(|_| bad("an enumeration name with a NUL byte"))?;
                    let bytes = v.to_ne_bytes();
                    // Native order; the base's own order applies on conversion.
                    check(
                        f.H5Tenum_insert(t.0, name.as_ptr(), bytes[..size].as_ptr().cast()),
                        what,
                    )?;
                }
                t
            }
            Datatype::Opaque { size, tag } => {
                let t = TypeId(check(
                    f.H5Tcreate(sys::H5T_class_t_H5T_OPAQUE, *size),
                    what,
                )?);
                if let Some(tag) = tag {
                    let tag =
                        CString::new(tag.as_str()).map_err(|_| bad("an opaque tag with a NUL"))?;
                    check(f.H5Tset_tag(t.0, tag.as_ptr()), what)?;
                }
                t
            }
            Datatype::Vlen { base } => {
                let b = to_hdf5(api, base)?;
                TypeId(check(f.H5Tvlen_create(b.0), what)?)
            }
            Datatype::Complex { part } => {
                let b = to_hdf5(api, part)?;
                TypeId(check(f.H5Tcomplex_create(b.0), what)?)
            }
            // In the form the program wrote: HDF5's own dimension scales read
            // and write their reference lists in the type they find, h5py
            // knows only the version-1 form.
            Datatype::Reference { current_api, .. } => {
                let form = if *current_api {
                    api.g.t_std_ref.id()
                } else {
                    api.g.t_std_ref_obj.id()
                };
                TypeId(check(f.H5Tcopy(form), what)?)
            }
            Datatype::RegionReference => {
                TypeId(check(f.H5Tcopy(api.g.t_std_ref_dsetreg.id()), what)?)
            }
        })
    }
}
