//! Values read through the library (attributes, fill values, datasets the
//! chunk path cannot take: compact, variable-length) and their HSDS JSON.

use std::ffi::{c_char, c_void, CStr};

use h5lake_types::{bytes_to_json, element_to_json, nest, Datatype};
use hdf5_sys::h5i::hid_t;
use hdf5_sys::h5s::H5S_class_t;
use hdf5_sys::h5t::{self, hvl_t};
use serde_json::{json, Value};

use crate::h5::{check, check_id, cstr, lib, space_dims, Hid};
use crate::types::{from_hdf5, to_hdf5};
use crate::Result;

/// Elements as read into memory: packed fixed-size bytes, or one byte
/// string per element for variable-length types (a string's UTF-8 bytes, a
/// sequence's packed base elements).
pub(crate) enum Values {
    Fixed(Vec<u8>),
    Variable(Vec<Vec<u8>>),
}

/// The memory type h5lake reads `dt` as (packed, same byte order).
pub(crate) fn memory_type(dt: &Datatype) -> Result<Hid> {
    to_hdf5(dt)
}

/// Reads `n` elements of type `dt` with `read(memtype, buf)` (an
/// `H5Aread`/`H5Dread` call).
pub(crate) fn read_values(
    dt: &Datatype,
    n: usize,
    read: impl Fn(hid_t, *mut c_void) -> i32,
) -> Result<Values> {
    let mem = memory_type(dt)?;
    match dt {
        Datatype::String { length: None, .. } => {
            let mut ptrs: Vec<*mut c_char> = vec![std::ptr::null_mut(); n];
            check(
                lib(|| read(mem.id(), ptrs.as_mut_ptr().cast())),
                "reading strings",
            )?;
            let out = ptrs
                .iter()
                .map(|&p| {
                    if p.is_null() {
                        return Vec::new();
                    }
                    // SAFETY: the library wrote NUL-terminated strings it allocated.
                    let v = unsafe { CStr::from_ptr(p) }.to_bytes().to_vec();
                    lib(|| unsafe { hdf5_sys::h5::H5free_memory(p.cast()) });
                    v
                })
                .collect();
            Ok(Values::Variable(out))
        }
        Datatype::Vlen { base } => {
            let es = base.fixed_size().unwrap_or(0);
            let mut seqs: Vec<hvl_t> = vec![
                hvl_t {
                    len: 0,
                    p: std::ptr::null_mut()
                };
                n
            ];
            check(
                lib(|| read(mem.id(), seqs.as_mut_ptr().cast())),
                "reading sequences",
            )?;
            let out = seqs
                .iter()
                .map(|s| {
                    if s.p.is_null() {
                        return Vec::new();
                    }
                    // SAFETY: the library allocated `len` base elements at `p`.
                    let v = unsafe { std::slice::from_raw_parts(s.p.cast::<u8>(), s.len * es) }
                        .to_vec();
                    lib(|| unsafe { hdf5_sys::h5::H5free_memory(s.p) });
                    v
                })
                .collect();
            Ok(Values::Variable(out))
        }
        _ => {
            let es = dt.fixed_size().unwrap_or(0);
            let mut buf = vec![0u8; n * es];
            check(
                lib(|| read(mem.id(), buf.as_mut_ptr().cast())),
                "reading values",
            )?;
            Ok(Values::Fixed(buf))
        }
    }
}

/// HSDS JSON of the elements, nested by `dims` (a bare value for a scalar).
pub(crate) fn values_json(dt: &Datatype, values: &Values, dims: &[u64]) -> Result<Value> {
    let flat: Vec<Value> = match values {
        Values::Fixed(buf) => {
            let es = dt.fixed_size().unwrap_or(1).max(1);
            buf.chunks(es)
                .map(|e| element_to_json(dt, e))
                .collect::<std::result::Result<_, _>>()?
        }
        Values::Variable(items) => match dt {
            Datatype::Vlen { base } => {
                let es = base.fixed_size().unwrap_or(1).max(1);
                items
                    .iter()
                    .map(|it| {
                        it.chunks(es)
                            .map(|e| element_to_json(base, e))
                            .collect::<std::result::Result<Vec<_>, _>>()
                            .map(Value::Array)
                    })
                    .collect::<std::result::Result<_, _>>()?
            }
            _ => items.iter().map(|s| bytes_to_json(s)).collect(),
        },
    };
    Ok(nest(flat, dims))
}

/// The shape JSON of a dataspace and its dims (`[]` for scalar and null).
pub(crate) fn shape_json(space: hid_t) -> Result<(Value, Vec<u64>, Vec<u64>)> {
    match lib(|| unsafe { hdf5_sys::h5s::H5Sget_simple_extent_type(space) }) {
        H5S_class_t::H5S_SCALAR => Ok((json!({"class": "H5S_SCALAR"}), vec![], vec![])),
        H5S_class_t::H5S_NULL => Ok((json!({"class": "H5S_NULL"}), vec![], vec![])),
        _ => {
            let (dims, maxdims) = space_dims(space)?;
            let mut shape = json!({"class": "H5S_SIMPLE", "dims": dims});
            if maxdims != dims {
                // HSDS writes an unlimited dimension as 0.
                let m: Vec<u64> = maxdims
                    .iter()
                    .map(|&d| {
                        if d == hdf5_sys::h5s::H5S_UNLIMITED {
                            0
                        } else {
                            d
                        }
                    })
                    .collect();
                shape["maxdims"] = json!(m);
            }
            Ok((shape, dims, maxdims))
        }
    }
}

/// One attribute as HSDS JSON (`{type, shape, value}`).
///
/// # Errors
/// Types h5lake cannot hold ([`crate::Hdf5Error::Unsupported`]); library errors.
pub(crate) fn attribute_json(obj: hid_t, name: &str) -> Result<Value> {
    let cname = cstr(name)?;
    let a = check_id(
        lib(|| unsafe { hdf5_sys::h5a::H5Aopen(obj, cname.as_ptr(), hdf5_sys::h5p::H5P_DEFAULT) }),
        "opening an attribute",
    )?;
    let ft = check_id(
        lib(|| unsafe { hdf5_sys::h5a::H5Aget_type(a.id()) }),
        "reading an attribute's type",
    )?;
    let dt = from_hdf5(ft.id())?;
    let space = check_id(
        lib(|| unsafe { hdf5_sys::h5a::H5Aget_space(a.id()) }),
        "reading an attribute's shape",
    )?;
    let (shape, dims, _) = shape_json(space.id())?;
    let value = if shape["class"] == "H5S_NULL" {
        Value::Null
    } else {
        let n = dims.iter().product::<u64>() as usize;
        let values = read_values(&dt, n, |mem, buf| unsafe {
            hdf5_sys::h5a::H5Aread(a.id(), mem, buf)
        })?;
        values_json(&dt, &values, &dims)?
    };
    Ok(json!({"type": dt.to_json(), "shape": shape, "value": value}))
}

/// A dataset's fill value as HSDS JSON, when the user set one.
pub(crate) fn fill_value_json(dcpl: hid_t, dt: &Datatype) -> Result<Option<Value>> {
    if dt.fixed_size().is_none() {
        return Ok(None);
    }
    let mut status = hdf5_sys::h5d::H5D_fill_value_t::H5D_FILL_VALUE_ERROR;
    check(
        lib(|| unsafe { hdf5_sys::h5p::H5Pfill_value_defined(dcpl, &mut status) }),
        "reading a fill value",
    )?;
    if status != hdf5_sys::h5d::H5D_fill_value_t::H5D_FILL_VALUE_USER_DEFINED {
        return Ok(None);
    }
    let values = read_values(dt, 1, |mem, buf| unsafe {
        hdf5_sys::h5p::H5Pget_fill_value(dcpl, mem, buf)
    })?;
    Ok(Some(values_json(dt, &values, &[])?))
}

/// Whether `t` (a file type) contains a variable-length part anywhere.
pub(crate) fn is_variable(t: hid_t) -> bool {
    lib(|| unsafe { h5t::H5Tdetect_class(t, h5t::H5T_class_t::H5T_VLEN) > 0 })
        || lib(|| unsafe { h5t::H5Tis_variable_str(t) > 0 })
}
