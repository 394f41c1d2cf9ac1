//! Attribute callbacks. An attribute lives inside its owner's document as
//! HSDS JSON (`type`, `shape`, `value`); reads and writes translate between
//! that value and the caller's memory type.

use std::ffi::{c_char, c_void, CString};
use std::ptr::null_mut;

use h5lake_engine::{Domain, EngineError};
use h5lake_types::{
    fixed_to_json, json_to_fixed, json_to_vlen, nest, value_dims, vlen_to_json, Datatype, Shape,
};
use serde_json::{json, Value};

use crate::api::{h5, Api};
use crate::dataset::{space_json, space_of};
use crate::error::{check, guard, Result, VolError};
use crate::memory::{fixed_from_memory, fixed_to_memory, lacks_members, VarMem};
use crate::objects::{c_str, locate, Kind, Obj};
use crate::refs::{self, Refs};
use crate::sys::{self, hid_t};
use crate::types::{from_hdf5, to_hdf5};

/// An attribute's datatype; a committed type (`"t-…"`) is looked up.
pub fn attr_type(dom: &Domain, attr: &Value) -> Result<Datatype> {
    Ok(attr_types(dom, attr)?.0)
}

/// [`attr_type`], and the type as the program that made the attribute laid
/// it out (see `Datatype::unpacked_layout`), if that differs.
fn attr_types(dom: &Domain, attr: &Value) -> Result<(Datatype, Option<Datatype>)> {
    let t = &attr["type"];
    let t = match t.as_str() {
        Some(id) if id.starts_with("t-") => dom.get_doc(id)?["type"].clone(),
        _ => t.clone(),
    };
    let dt = Datatype::from_json(&t).map_err(|e| VolError::BadType(e.to_string()))?;
    let laid_out = dt.laid_out_as_in(&t);
    Ok((dt, laid_out))
}

fn attr_shape(attr: &Value) -> Result<Shape> {
    Shape::from_json(&attr["shape"]).map_err(|e| VolError::Invalid(e.to_string()))
}

fn not_found(e: EngineError, name: &str) -> VolError {
    match e {
        EngineError::NotFound(_) => VolError::NotFound(format!("can't locate attribute: {name:?}")),
        e => e.into(),
    }
}

/// The names of `owner`'s attributes in the order an index asks for:
/// by name, or by creation order (the order the document keeps).
fn ordered_names(
    dom: &Domain,
    owner: &str,
    idx_type: sys::H5_index_t,
    order: sys::H5_iter_order_t,
) -> Result<Vec<String>> {
    let mut names = dom.attr_names(owner)?;
    if idx_type == sys::H5_index_t_H5_INDEX_NAME {
        names.sort();
    }
    if order == sys::H5_iter_order_t_H5_ITER_DEC {
        names.reverse();
    }
    Ok(names)
}

/// The owner and attribute name a location plus an optional name mean:
/// by name, or the n-th attribute of an index.
unsafe fn owner_and_name(
    o: &Obj,
    loc: *const sys::H5VL_loc_params_t,
    name: *const c_char,
) -> Result<(String, String)> {
    let l = &*loc;
    if l.type_ == sys::H5VL_loc_type_t_H5VL_OBJECT_BY_IDX {
        let by = &l.loc_data.loc_by_idx;
        let owner = crate::objects::resolve(&o.dom, o.id(), c_str(by.name)?)?;
        let names = ordered_names(&o.dom, &owner, by.idx_type, by.order)?;
        let name = names
            .get(by.n as usize)
            .cloned()
            .ok_or_else(|| VolError::Invalid(format!("attribute index {} out of range", by.n)))?;
        return Ok((owner, name));
    }
    if let Kind::Attr { owner, name: own } = &o.kind {
        if l.type_ == sys::H5VL_loc_type_t_H5VL_OBJECT_BY_SELF && name.is_null() {
            return Ok((owner.clone(), own.clone()));
        }
    }
    Ok((locate(o, loc)?, c_str(name)?.to_string()))
}

pub unsafe extern "C" fn create(
    obj: *mut c_void,
    loc: *const sys::H5VL_loc_params_t,
    name: *const c_char,
    type_id: hid_t,
    space_id: hid_t,
    _acpl: hid_t,
    _aapl: hid_t,
    _dxpl: hid_t,
    _req: *mut *mut c_void,
) -> *mut c_void {
    guard("attribute create", null_mut(), || {
        let api = h5().map_err(VolError::Library)?;
        let o = Obj::from_ptr(obj)?;
        let owner = locate(o, loc)?;
        let name = c_str(name)?;
        let dt = from_hdf5(api, type_id)?;
        let shape = space_json(api, space_id)?;
        // Until written, an attribute reads as zeros (HDF5's fill).
        let value = match dt.fixed_size() {
            Some(size) if Shape::from_json(&shape).is_ok_and(|s| s != Shape::Null) => {
                let dims = value_dims(
                    &Shape::from_json(&shape).map_err(|e| VolError::Invalid(e.to_string()))?,
                );
                let n = dims.iter().product::<u64>() as usize;
                fixed_to_json(&dt, &vec![0u8; n * size], &dims).unwrap_or(Value::Null)
            }
            _ => Value::Null,
        };
        let ty = crate::datatype::type_json(api, o, type_id, &dt);
        let doc = json!({"type": ty, "shape": shape, "value": value});
        o.dom
            .attr_create(&owner, name, doc, false)
            .map_err(|e| match e {
                EngineError::AlreadyExists(_) => VolError::Exists(format!(
                    "unable to create attribute (attribute {name:?} already exists)"
                )),
                e => e.into(),
            })?;
        Ok(o.child(
            Kind::Attr {
                owner,
                name: name.to_string(),
            },
            ".",
        ))
    })
}

pub unsafe extern "C" fn open(
    obj: *mut c_void,
    loc: *const sys::H5VL_loc_params_t,
    name: *const c_char,
    _aapl: hid_t,
    _dxpl: hid_t,
    _req: *mut *mut c_void,
) -> *mut c_void {
    guard("attribute open", null_mut(), || {
        let o = Obj::from_ptr(obj)?;
        let (owner, name) = owner_and_name(o, loc, name)?;
        o.dom
            .attr_get(&owner, &name)
            .map_err(|e| not_found(e, &name))?;
        Ok(o.child(Kind::Attr { owner, name }, "."))
    })
}

fn attr_of(o: &Obj) -> Result<(&str, &str)> {
    match &o.kind {
        Kind::Attr { owner, name } => Ok((owner, name)),
        _ => Err(VolError::BadType("not an attribute".into())),
    }
}

pub unsafe extern "C" fn read(
    attr: *mut c_void,
    mem_type: hid_t,
    buf: *mut c_void,
    dxpl: hid_t,
    _req: *mut *mut c_void,
) -> sys::herr_t {
    guard("attribute read", -1, || {
        let api = h5().map_err(VolError::Library)?;
        let o = Obj::from_ptr(attr)?;
        let (owner, name) = attr_of(o)?;
        let doc = o
            .dom
            .attr_get(owner, name)
            .map_err(|e| not_found(e, name))?;
        let dt = attr_type(&o.dom, &doc)?;
        let shape = attr_shape(&doc)?;
        if shape == Shape::Null {
            return Ok(0);
        }
        let dims = value_dims(&shape);
        let n = dims.iter().product::<u64>() as usize;
        let value = doc.get("value").cloned().unwrap_or(Value::Null);
        let invalid = |e: h5lake_types::TypeError| VolError::Invalid(e.to_string());
        let packed = if dt.is_variable() {
            let items = if value.is_null() && dt.is_top_level_vlen() {
                vec![Vec::new(); n]
            } else if value.is_null() {
                vec![h5lake_types::record::empty_record(&dt); n]
            } else {
                json_to_vlen(&dt, &dims, &value).map_err(invalid)?
            };
            match &dt {
                Datatype::RegionReference => {
                    Refs::new(api, o).regions_to_memory(&items, mem_type)?
                }
                Datatype::Vlen { base } if refs::contains(base) => {
                    Refs::new(api, o).vlen_to_memory(base, &items, mem_type)?
                }
                _ => VarMem::of(api, &dt, mem_type)?.to_memory(api, &items)?,
            }
        } else {
            let data = if value.is_null() {
                vec![0u8; n * dt.fixed_size().unwrap_or(0)]
            } else {
                json_to_fixed(&dt, &dims, &value).map_err(invalid)?
            };
            if refs::contains(&dt) {
                Refs::new(api, o).to_memory(&dt, &data, n, mem_type)?
            } else {
                // Members the memory type lacks keep the caller's values.
                let background = if lacks_members(api, &dt, mem_type)? {
                    let msize = api.f.H5Tget_size(mem_type);
                    Some(std::slice::from_raw_parts(buf.cast::<u8>(), n * msize).to_vec())
                } else {
                    None
                };
                fixed_to_memory(api, &dt, data, n, mem_type, background, dxpl)?
            }
        };
        std::ptr::copy_nonoverlapping(packed.as_ptr(), buf.cast::<u8>(), packed.len());
        Ok(0)
    })
}

/// The JSON value of `n` elements of `mem_type` at `buf`, in the stored
/// form of `dt` nested as `dims`.
unsafe fn value_from_memory(
    api: &Api,
    o: &Obj,
    dt: &Datatype,
    dims: &[u64],
    mem_type: hid_t,
    buf: *const u8,
    current: Option<Vec<u8>>,
    dxpl: hid_t,
) -> Result<Value> {
    let n = dims.iter().product::<u64>() as usize;
    let invalid = |e: h5lake_types::TypeError| VolError::Invalid(e.to_string());
    if refs::contains(dt) {
        let refs = Refs::new(api, o);
        if *dt == Datatype::RegionReference {
            let mem = std::slice::from_raw_parts(buf, n * crate::regions::SIZE);
            let flat = refs
                .regions_from_memory(mem, n, mem_type)?
                .iter()
                .map(|i| vlen_to_json(dt, i))
                .collect::<std::result::Result<Vec<_>, _>>()
                .map_err(invalid)?;
            return Ok(nest(flat, dims));
        }
        if let Datatype::Vlen { base } = dt {
            let mem = std::slice::from_raw_parts(buf, n * std::mem::size_of::<sys::hvl_t>());
            let flat = refs
                .vlen_from_memory(base, mem, n, mem_type)?
                .iter()
                .map(|i| vlen_to_json(dt, i))
                .collect::<std::result::Result<Vec<_>, _>>()
                .map_err(invalid)?;
            return Ok(nest(flat, dims));
        }
        let mem = std::slice::from_raw_parts(buf, n * api.f.H5Tget_size(mem_type));
        let data = refs.from_memory(dt, mem, n, mem_type)?;
        return fixed_to_json(dt, &data, dims).map_err(invalid);
    }
    if dt.is_variable() {
        let vm = VarMem::of(api, dt, mem_type)?;
        let items = vm.from_memory(api, std::slice::from_raw_parts(buf, n * vm.size()))?;
        let flat = items
            .iter()
            .map(|i| vlen_to_json(dt, i))
            .collect::<std::result::Result<Vec<_>, _>>()
            .map_err(invalid)?;
        return Ok(nest(flat, dims));
    }
    let msize = api.f.H5Tget_size(mem_type);
    let mem = std::slice::from_raw_parts(buf, n * msize).to_vec();
    let data = fixed_from_memory(api, dt, mem, n, mem_type, current, dxpl)?;
    fixed_to_json(dt, &data, dims).map_err(invalid)
}

pub unsafe extern "C" fn write(
    attr: *mut c_void,
    mem_type: hid_t,
    buf: *const c_void,
    dxpl: hid_t,
    _req: *mut *mut c_void,
) -> sys::herr_t {
    guard("attribute write", -1, || {
        let api = h5().map_err(VolError::Library)?;
        let o = Obj::from_ptr(attr)?;
        let (owner, name) = attr_of(o)?;
        let mut doc = o
            .dom
            .attr_get(owner, name)
            .map_err(|e| not_found(e, name))?;
        let dt = attr_type(&o.dom, &doc)?;
        let shape = attr_shape(&doc)?;
        if shape == Shape::Null {
            return Ok(0);
        }
        let dims = value_dims(&shape);
        // A memory type without some members writes only the members it
        // has: the others keep their stored values.
        let current = if !dt.is_variable() && lacks_members(api, &dt, mem_type)? {
            let n = dims.iter().product::<u64>() as usize;
            Some(match doc.get("value") {
                Some(v) if !v.is_null() => {
                    json_to_fixed(&dt, &dims, v).map_err(|e| VolError::Invalid(e.to_string()))?
                }
                _ => vec![0u8; n * dt.fixed_size().unwrap_or(0)],
            })
        } else {
            None
        };
        doc["value"] = value_from_memory(api, o, &dt, &dims, mem_type, buf.cast(), current, dxpl)?;
        o.dom.attr_create(owner, name, doc, true)?;
        Ok(0)
    })
}

unsafe fn info_of(dom: &Domain, owner: &str, name: &str) -> Result<sys::H5A_info_t> {
    let names = dom.attr_names(owner)?;
    let corder = names
        .iter()
        .position(|n| n == name)
        .ok_or_else(|| VolError::NotFound(format!("can't locate attribute: {name:?}")))?;
    info_from(dom, &dom.attr_get(owner, name)?, corder)
}

/// `H5A_info_t` of an attribute document at creation index `corder`.
fn info_from(dom: &Domain, doc: &Value, corder: usize) -> Result<sys::H5A_info_t> {
    let dt = attr_type(dom, doc)?;
    let n = attr_shape(doc)?.num_elements();
    let cset = match dt {
        Datatype::String {
            charset: h5lake_types::CharSet::Utf8,
            ..
        } => sys::H5T_cset_t_H5T_CSET_UTF8,
        _ => sys::H5T_cset_t_H5T_CSET_ASCII,
    };
    Ok(sys::H5A_info_t {
        corder_valid: true,
        corder: corder as _,
        cset,
        data_size: n * dt.fixed_size().unwrap_or(16) as u64,
    })
}

pub unsafe extern "C" fn get(
    obj: *mut c_void,
    args: *mut sys::H5VL_attr_get_args_t,
    _dxpl: hid_t,
    _req: *mut *mut c_void,
) -> sys::herr_t {
    guard("attribute get", -1, || {
        let api = h5().map_err(VolError::Library)?;
        let o = Obj::from_ptr(obj)?;
        let a = &mut *args;
        match a.op_type {
            sys::H5VL_attr_get_t_H5VL_ATTR_GET_SPACE => {
                let (owner, name) = attr_of(o)?;
                let doc = o
                    .dom
                    .attr_get(owner, name)
                    .map_err(|e| not_found(e, name))?;
                a.args.get_space.space_id = space_of(api, &attr_shape(&doc)?)?;
            }
            sys::H5VL_attr_get_t_H5VL_ATTR_GET_TYPE => {
                let (owner, name) = attr_of(o)?;
                let doc = o
                    .dom
                    .attr_get(owner, name)
                    .map_err(|e| not_found(e, name))?;
                let t = &doc["type"];
                let committed = t.as_str().or_else(|| t["id"].as_str());
                let committed = committed.filter(|tid| tid.starts_with("t-"));
                if let Some(hid) = committed.and_then(|tid| crate::datatype::open_committed(o, tid))
                {
                    a.args.get_type.type_id = hid;
                    return Ok(0);
                }
                let (dt, laid_out) = attr_types(&o.dom, &doc)?;
                let t = to_hdf5(api, laid_out.as_ref().unwrap_or(&dt))?;
                a.args.get_type.type_id = t.0;
                std::mem::forget(t);
            }
            sys::H5VL_attr_get_t_H5VL_ATTR_GET_ACPL => {
                a.args.get_acpl.acpl_id =
                    check(api.f.H5Pcreate(api.g.p_attribute_create.id()), "H5Pcreate")?;
            }
            sys::H5VL_attr_get_t_H5VL_ATTR_GET_STORAGE_SIZE => {
                let (owner, name) = attr_of(o)?;
                *a.args.get_storage_size.data_size = info_of(&o.dom, owner, name)?.data_size;
            }
            sys::H5VL_attr_get_t_H5VL_ATTR_GET_INFO => {
                let g = &mut a.args.get_info;
                let (owner, name) = owner_and_name(o, &g.loc_params, g.attr_name)?;
                *g.ainfo = info_of(&o.dom, &owner, &name)?;
            }
            sys::H5VL_attr_get_t_H5VL_ATTR_GET_NAME => {
                let g = &mut a.args.get_name;
                let (_, name) = owner_and_name(o, &g.loc_params, std::ptr::null())?;
                crate::objects::copy_name(&name, g.buf, g.buf_size, g.attr_name_len);
            }
            other => {
                return Err(VolError::Unsupported(format!(
                    "attribute get operation {other}"
                )))
            }
        }
        Ok(0)
    })
}

pub unsafe extern "C" fn specific(
    obj: *mut c_void,
    loc: *const sys::H5VL_loc_params_t,
    args: *mut sys::H5VL_attr_specific_args_t,
    _dxpl: hid_t,
    _req: *mut *mut c_void,
) -> sys::herr_t {
    guard("attribute specific", -1, || {
        let o = Obj::from_ptr(obj)?;
        let a = &mut *args;
        let owner = || locate(o, loc);
        match a.op_type {
            sys::H5VL_attr_specific_t_H5VL_ATTR_EXISTS => {
                let name = c_str(a.args.exists.name)?;
                *a.args.exists.exists = o.dom.attr_names(&owner()?)?.iter().any(|n| n == name);
            }
            sys::H5VL_attr_specific_t_H5VL_ATTR_DELETE => {
                let name = c_str(a.args.del.name)?;
                o.dom
                    .attr_delete(&owner()?, name)
                    .map_err(|e| not_found(e, name))?;
            }
            sys::H5VL_attr_specific_t_H5VL_ATTR_DELETE_BY_IDX => {
                let d = &a.args.delete_by_idx;
                let owner = owner()?;
                let names = ordered_names(&o.dom, &owner, d.idx_type, d.order)?;
                let name = names.get(d.n as usize).ok_or_else(|| {
                    VolError::Invalid(format!("attribute index {} out of range", d.n))
                })?;
                o.dom.attr_delete(&owner, name)?;
            }
            sys::H5VL_attr_specific_t_H5VL_ATTR_RENAME => {
                let r = &a.args.rename;
                let (old, new) = (c_str(r.old_name)?, c_str(r.new_name)?);
                rename(&o.dom, &owner()?, old, new)?;
            }
            sys::H5VL_attr_specific_t_H5VL_ATTR_ITER => {
                let it = &mut a.args.iterate;
                let owner = owner()?;
                let names = ordered_names(&o.dom, &owner, it.idx_type, it.order)?;
                let start = if it.idx.is_null() {
                    0
                } else {
                    *it.idx as usize
                };
                let Some(op) = it.op else { return Ok(0) };
                let loc_id = crate::objects::register_id(o, &owner, &o.path)?;
                // One read of the owner's attributes for the whole walk.
                let doc = o.dom.get_doc(&owner)?;
                let attrs = doc
                    .get("attributes")
                    .and_then(Value::as_object)
                    .cloned()
                    .unwrap_or_default();
                let mut ret = 0;
                for (k, name) in names.iter().enumerate().skip(start) {
                    let corder = attrs.keys().position(|n| n == name).unwrap_or(k);
                    let info = info_from(
                        &o.dom,
                        attrs.get(name.as_str()).ok_or_else(|| {
                            VolError::NotFound(format!("can't locate attribute: {name:?}"))
                        })?,
                        corder,
                    )?;
                    let cname = CString::new(name.as_str())
                        .map_err(|_| VolError::Invalid("an attribute name with NUL".into()))?;
                    ret = op(loc_id.0, cname.as_ptr(), &info, it.op_data);
                    if !it.idx.is_null() {
                        *it.idx = (k + 1) as u64;
                    }
                    if ret != 0 {
                        break;
                    }
                }
                return Ok(ret);
            }
            other => {
                return Err(VolError::Unsupported(format!(
                    "attribute operation {other}"
                )))
            }
        }
        Ok(0)
    })
}

/// Renames an attribute in one document update: the value moves, nothing
/// is lost if another writer races.
fn rename(dom: &Domain, owner: &str, old: &str, new: &str) -> Result<()> {
    dom.update_doc(owner, |doc| {
        let attrs = doc
            .get_mut("attributes")
            .and_then(Value::as_object_mut)
            .ok_or_else(|| EngineError::NotFound(format!("can't locate attribute: {old:?}")))?;
        if attrs.contains_key(new) {
            return Err(EngineError::AlreadyExists(format!(
                "attribute {new:?} already exists"
            )));
        }
        if !attrs.contains_key(old) {
            return Err(EngineError::NotFound(format!(
                "can't locate attribute: {old:?}"
            )));
        }
        // Keep the attribute's place in creation order.
        *attrs = std::mem::take(attrs)
            .into_iter()
            .map(|(k, v)| {
                if k == old {
                    (new.to_string(), v)
                } else {
                    (k, v)
                }
            })
            .collect();
        Ok(())
    })
    .map_err(|e| match e {
        EngineError::AlreadyExists(m) => VolError::Exists(m),
        EngineError::NotFound(m) => VolError::NotFound(m),
        e => e.into(),
    })
}

pub unsafe extern "C" fn close(
    obj: *mut c_void,
    _dxpl: hid_t,
    _req: *mut *mut c_void,
) -> sys::herr_t {
    Obj::free(obj);
    0
}
