//! Values read through the library (attributes, fill values, datasets the
//! chunk path cannot take: compact, variable-length) and their HSDS JSON.

use std::ffi::c_void;

use h5lake_types::{element_to_json, nest, vlen_to_json, Datatype};
use hdf5_sys::h5i::hid_t;
use hdf5_sys::h5s::H5S_class_t;
use serde_json::{json, Value};

use crate::h5::{check, check_id, cstr, lib, space_dims};
use crate::memory::{converts, from_memory, has_refs, RefConv};
use crate::types::{check_memory_size, from_hdf5, memory_type, type_json};
use crate::Result;

/// Elements as read into memory: packed fixed-size bytes, or one byte
/// string per element for variable-length types (h5lake's form: see
/// [`crate::memory`]).
pub(crate) enum Values {
    Fixed(Vec<u8>),
    Variable(Vec<Vec<u8>>),
}

/// Reads `n` elements of type `dt` (`json`: its type JSON) with
/// `read(memtype, buf)` (an `H5Aread`/`H5Dread` call); `refs` converts
/// object references to their stored form.
pub(crate) fn read_values(
    dt: &Datatype,
    json: &Value,
    n: usize,
    read: impl Fn(hid_t, *mut c_void) -> i32,
    refs: &mut RefConv,
) -> Result<Values> {
    let mem = memory_type(dt, json)?;
    if let (Some(es), false) = (dt.fixed_size(), converts(dt)) {
        let mut buf = vec![0u8; n * es];
        check(
            lib(|| read(mem.id(), buf.as_mut_ptr().cast())),
            "reading values",
        )?;
        return Ok(Values::Fixed(buf));
    }
    let es = check_memory_size(mem.id(), dt)?;
    let mut buf = vec![0u8; n * es];
    check(
        lib(|| read(mem.id(), buf.as_mut_ptr().cast())),
        "reading variable-length values",
    )?;
    // SAFETY: the library wrote `n` elements of `mem`, the memory form of
    // `dt` (checked above), into `buf`.
    let items = unsafe { from_memory(dt, &buf, n, refs) };
    // What the library allocated for the elements (variable-length parts,
    // current references) goes back to it, also when they did not convert.
    let space = check_id(
        lib(|| unsafe {
            hdf5_sys::h5s::H5Screate_simple(1, [n as u64].as_ptr(), std::ptr::null())
        }),
        "creating a dataspace",
    )?;
    check(
        lib(|| unsafe {
            hdf5_sys::h5t::H5Treclaim(
                mem.id(),
                space.id(),
                hdf5_sys::h5p::H5P_DEFAULT,
                buf.as_mut_ptr().cast(),
            )
        }),
        "freeing the values read",
    )?;
    Ok(if dt.is_variable() {
        Values::Variable(items?)
    } else {
        Values::Fixed(items?.concat())
    })
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
        Values::Variable(items) => items
            .iter()
            .map(|it| vlen_to_json(dt, it))
            .collect::<std::result::Result<_, _>>()?,
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

/// One attribute as HSDS JSON (`{type, shape, value}`); `None` when it
/// holds object references and `refs` (which converts them) is not given.
///
/// # Errors
/// Types h5lake cannot hold ([`crate::Hdf5Error::Unsupported`]); library errors.
pub(crate) fn attribute_json(
    obj: hid_t,
    name: &str,
    refs: Option<&mut RefConv>,
) -> Result<Option<Value>> {
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
    let mut none = crate::memory::no_refs;
    let refs: &mut RefConv = match refs {
        Some(r) => r,
        None if has_refs(&dt) => return Ok(None),
        None => &mut none,
    };
    let tjson = type_json(ft.id(), &dt)?;
    let space = check_id(
        lib(|| unsafe { hdf5_sys::h5a::H5Aget_space(a.id()) }),
        "reading an attribute's shape",
    )?;
    let (shape, dims, _) = shape_json(space.id())?;
    let value = if shape["class"] == "H5S_NULL" {
        Value::Null
    } else {
        let n = dims.iter().product::<u64>() as usize;
        let values = read_values(
            &dt,
            &tjson,
            n,
            |mem, buf| unsafe { hdf5_sys::h5a::H5Aread(a.id(), mem, buf) },
            refs,
        )?;
        values_json(&dt, &values, &dims)?
    };
    Ok(Some(json!({"type": tjson, "shape": shape, "value": value})))
}

/// A dataset's fill value as HSDS JSON, when the user set one (`json`:
/// the type JSON of `dt`; `refs` converts object references).
pub(crate) fn fill_value_json(
    dcpl: hid_t,
    dt: &Datatype,
    json: &Value,
    refs: &mut RefConv,
) -> Result<Option<Value>> {
    let mut status = hdf5_sys::h5d::H5D_fill_value_t::H5D_FILL_VALUE_ERROR;
    check(
        lib(|| unsafe { hdf5_sys::h5p::H5Pfill_value_defined(dcpl, &mut status) }),
        "reading a fill value",
    )?;
    if status != hdf5_sys::h5d::H5D_fill_value_t::H5D_FILL_VALUE_USER_DEFINED {
        return Ok(None);
    }
    let values = read_values(
        dt,
        json,
        1,
        |mem, buf| unsafe { hdf5_sys::h5p::H5Pget_fill_value(dcpl, mem, buf) },
        refs,
    )?;
    Ok(Some(values_json(dt, &values, &[])?))
}
