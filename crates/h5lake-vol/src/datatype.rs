//! Committed (named) datatypes: a datatype object holding HSDS type JSON.
//! HDF5 gets an opened committed type's description from the connector in
//! its own serialized form (`H5Tencode`), built here from the stored JSON.

use std::ffi::{c_char, c_void};
use std::ptr::null_mut;

use h5lake_types::Datatype;
use serde_json::{json, Value};

use crate::api::{h5, Api};
use crate::dataset::{ensure_free, parent_for_create};
use crate::error::{check, guard, VolError};
use crate::objects::{c_str, locate, Kind, Obj};
use crate::sys::{self, hid_t};
use crate::types::{from_hdf5, to_hdf5};

pub unsafe extern "C" fn commit(
    obj: *mut c_void,
    loc: *const sys::H5VL_loc_params_t,
    name: *const c_char,
    type_id: hid_t,
    lcpl: hid_t,
    _tcpl: hid_t,
    _tapl: hid_t,
    _dxpl: hid_t,
    _req: *mut *mut c_void,
) -> *mut c_void {
    guard("datatype commit", null_mut(), || {
        let api = h5().map_err(VolError::Library)?;
        let o = Obj::from_ptr(obj)?;
        let dt = from_hdf5(api, type_id)?;
        if name.is_null() {
            // H5Tcommit_anon: linked later, if at all.
            return Ok(o.child(
                Kind::Datatype(o.dom.create_datatype(dt.with_layout_json())?),
                "",
            ));
        }
        let start = locate(o, loc)?;
        let (parent, last) = parent_for_create(api, o, &start, c_str(name)?, lcpl)?;
        ensure_free(o, &parent, &last, "datatype")?;
        let id = o.dom.create_datatype(dt.with_layout_json())?;
        o.dom
            .link_create(&parent, &last, json!({"class": "H5L_TYPE_HARD", "id": id}))?;
        Ok(o.child(Kind::Datatype(id), c_str(name)?))
    })
}

pub unsafe extern "C" fn open(
    obj: *mut c_void,
    loc: *const sys::H5VL_loc_params_t,
    name: *const c_char,
    _tapl: hid_t,
    _dxpl: hid_t,
    _req: *mut *mut c_void,
) -> *mut c_void {
    guard("datatype open", null_mut(), || {
        let o = Obj::from_ptr(obj)?;
        crate::objects::open_named(o, loc, name, "t-", "datatype", Kind::Datatype)
    })
}

/// The JSON of `dt`, the description of HDF5 type `type_id`, to be stored
/// with an object of `o`'s store, with what it takes to report the type
/// back as it was given: the layout of an unpacked compound, and when
/// `type_id` is a datatype committed in that store, its id (as HSDS
/// records a type taken from a committed one).
///
/// # Safety
/// `type_id` is a valid datatype id.
pub unsafe fn type_json(api: &Api, o: &Obj, type_id: hid_t, dt: &Datatype) -> Value {
    let mut json = dt.with_layout_json();
    if api.f.H5Tcommitted(type_id) <= 0 {
        return json;
    }
    let ours = api.f.H5VLget_connector_id_by_name(c"h5lake".as_ptr());
    if ours < 0 {
        return json;
    }
    if let Some(t) = crate::objects::own_object(api, type_id, ours) {
        if let Kind::Datatype(id) = &t.kind {
            if t.dom.location() == o.dom.location() {
                json["id"] = json!(id);
            }
        }
    }
    api.f.H5VLclose(ours);
    json
}

/// An id for HDF5 of the committed datatype `tid` of `o`'s store, as
/// `H5Dget_type` and `H5Aget_type` return for objects made with one;
/// `None` if that type is gone (deleted since), and the caller describes
/// the type itself.
pub fn open_committed(o: &Obj, tid: &str) -> Option<hid_t> {
    o.dom.get_doc(tid).ok()?;
    let id = crate::objects::register_id(o, tid, "").ok()?;
    let hid = id.0;
    std::mem::forget(id); // the caller's to close
    Some(hid)
}

/// The stored type of a committed-datatype object.
fn stored_type(o: &Obj) -> crate::error::Result<Datatype> {
    let Kind::Datatype(id) = &o.kind else {
        return Err(VolError::BadType("not a committed datatype".into()));
    };
    let doc = o.dom.get_doc(id)?;
    let dt = Datatype::from_json(&doc["type"]).map_err(|e| VolError::BadType(e.to_string()))?;
    Ok(dt.laid_out_as_in(&doc["type"]).unwrap_or(dt))
}

pub unsafe extern "C" fn get(
    obj: *mut c_void,
    args: *mut sys::H5VL_datatype_get_args_t,
    _dxpl: hid_t,
    _req: *mut *mut c_void,
) -> sys::herr_t {
    guard("datatype get", -1, || {
        let api = h5().map_err(VolError::Library)?;
        let o = Obj::from_ptr(obj)?;
        let a = &mut *args;
        match a.op_type {
            sys::H5VL_datatype_get_t_H5VL_DATATYPE_GET_BINARY_SIZE => {
                let t = to_hdf5(api, &stored_type(o)?)?;
                check(
                    api.f
                        .H5Tencode(t.0, null_mut(), a.args.get_binary_size.size),
                    "H5Tencode",
                )?;
            }
            sys::H5VL_datatype_get_t_H5VL_DATATYPE_GET_BINARY => {
                let t = to_hdf5(api, &stored_type(o)?)?;
                let b = &mut a.args.get_binary;
                let mut size = b.buf_size;
                check(api.f.H5Tencode(t.0, b.buf, &mut size), "H5Tencode")?;
            }
            sys::H5VL_datatype_get_t_H5VL_DATATYPE_GET_TCPL => {
                a.args.get_tcpl.tcpl_id =
                    check(api.f.H5Pcreate(api.g.p_datatype_create.id()), "H5Pcreate")?;
            }
            other => {
                return Err(VolError::Unsupported(format!(
                    "datatype get operation {other}"
                )))
            }
        }
        Ok(0)
    })
}

pub unsafe extern "C" fn specific(
    _obj: *mut c_void,
    args: *mut sys::H5VL_datatype_specific_args_t,
    _dxpl: hid_t,
    _req: *mut *mut c_void,
) -> sys::herr_t {
    guard("datatype specific", -1, || match (*args).op_type {
        // Nothing is buffered: the type is in the store once committed.
        sys::H5VL_datatype_specific_t_H5VL_DATATYPE_FLUSH
        | sys::H5VL_datatype_specific_t_H5VL_DATATYPE_REFRESH => Ok(0),
        other => Err(VolError::Unsupported(format!("datatype operation {other}"))),
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
