//! Link and object callbacks: links are entries of their group's document
//! (HSDS's hard, soft and external link forms); objects are found by path,
//! index or token.

use std::collections::HashSet;
use std::sync::Arc;

use h5lake_engine::Domain;
use std::ffi::{c_void, CString};
use std::ptr::null_mut;

use serde_json::{json, Value};

use crate::error::{guard, Result, VolError};
use crate::objects::{
    c_str, copy_name, htype_of, join_path, kind_of, locate, nth_link, ordered_links,
    parent_and_name, register_id, Kind, Obj,
};
use crate::sys::{self, hid_t};

/// `H5L_TYPE_EXTERNAL`: the user-defined link class HDF5 builds external
/// links on.
const EXTERNAL: sys::H5L_type_t = 64;

/// An external link's value as HDF5 packs it: a version/flags byte, the
/// file name and the object path, each NUL-terminated.
fn pack_external(file: &str, path: &str) -> Vec<u8> {
    let mut v = vec![0u8];
    v.extend(file.as_bytes());
    v.push(0);
    v.extend(path.as_bytes());
    v.push(0);
    v
}

/// HDF5's description of link `name`. Its character set: the store keeps
/// every name as UTF-8 and records no other, so a name in plain ASCII is
/// reported ASCII (what HDF5 reports for names created the default way,
/// and what h5py asks for them), any other UTF-8.
/// A link's info; `corder` is its creation-order number where its group
/// tracks creation order (HDF5 has none otherwise).
fn link_info(name: &str, link: &Value, corder: Option<i64>) -> Result<sys::H5L_info2_t> {
    let mut info = sys::H5L_info2_t {
        type_: sys::H5L_type_t_H5L_TYPE_HARD,
        corder_valid: corder.is_some(),
        corder: corder.unwrap_or(0),
        cset: if name.is_ascii() {
            sys::H5T_cset_t_H5T_CSET_ASCII
        } else {
            sys::H5T_cset_t_H5T_CSET_UTF8
        },
        u: sys::H5L_info2_t__bindgen_ty_1 { val_size: 0 },
    };
    let s = |k: &str| link.get(k).and_then(Value::as_str).unwrap_or("");
    match s("class") {
        "H5L_TYPE_HARD" => info.u.token = crate::token::of_id(s("id"))?,
        "H5L_TYPE_SOFT" => {
            info.type_ = sys::H5L_type_t_H5L_TYPE_SOFT;
            info.u.val_size = s("h5path").len() + 1;
        }
        _ => {
            info.type_ = EXTERNAL;
            info.u.val_size = pack_external(s("h5domain"), s("h5path")).len();
        }
    }
    Ok(info)
}

/// The creation-order index of link `name` of `group`.
fn corder_of(dom: &h5lake_engine::Domain, group: &str, name: &str) -> Result<Option<i64>> {
    if !crate::objects::order::tracked(dom, group) {
        return Ok(None);
    }
    Ok(Some(
        dom.link_names(group)?
            .iter()
            .position(|n| n == name)
            .unwrap_or(0) as i64,
    ))
}

/// A link found by location: its store, group, name and document.
type LinkAt = (Arc<Domain>, String, String, Value);

/// The group and name a link location means (by name, or by index).
unsafe fn link_at(o: &Obj, loc: *const sys::H5VL_loc_params_t) -> Result<LinkAt> {
    let l = &*loc;
    match l.type_ {
        sys::H5VL_loc_type_t_H5VL_OBJECT_BY_NAME => {
            let (dom, g, name) = parent_and_name(o, l.loc_data.loc_by_name.name)?;
            let link = dom.link_get(&g, &name).map_err(|e| match e {
                h5lake_engine::EngineError::NotFound(_) => {
                    VolError::NotFound(format!("link {name:?} doesn't exist"))
                }
                e => e.into(),
            })?;
            Ok((dom, g, name, link))
        }
        sys::H5VL_loc_type_t_H5VL_OBJECT_BY_IDX => {
            let by = &l.loc_data.loc_by_idx;
            let g = crate::objects::resolve(&o.dom, o.id(), c_str(by.name)?)?;
            let (name, link) = nth_link(&o.dom, &g, by.idx_type, by.order, by.n)?;
            Ok((o.dom.clone(), g, name, link))
        }
        other => Err(VolError::Unsupported(format!(
            "links located by location type {other}"
        ))),
    }
}

fn create_link(o: &Obj, group: &str, name: &str, link: Value) -> Result<()> {
    o.dom.link_create(group, name, link).map_err(|e| match e {
        h5lake_engine::EngineError::AlreadyExists(_) => VolError::Exists(format!(
            "unable to create link (name {name:?} already exists)"
        )),
        e => e.into(),
    })
}

pub unsafe extern "C" fn create(
    args: *mut sys::H5VL_link_create_args_t,
    obj: *mut c_void,
    loc: *const sys::H5VL_loc_params_t,
    lcpl: hid_t,
    _lapl: hid_t,
    _dxpl: hid_t,
    _req: *mut *mut c_void,
) -> sys::herr_t {
    guard("link create", -1, || {
        let api = crate::api::h5().map_err(VolError::Library)?;
        let a = &mut *args;
        // H5Lcreate_hard may pass only the target's object.
        let here = if obj.is_null() {
            a.args.hard.curr_obj
        } else {
            obj
        };
        let o = Obj::from_ptr(here)?;
        let l = &*loc;
        if l.type_ != sys::H5VL_loc_type_t_H5VL_OBJECT_BY_NAME {
            return Err(VolError::Unsupported(
                "creating links other than by name".into(),
            ));
        }
        let path = c_str(l.loc_data.loc_by_name.name)?;
        let (group, name) = crate::dataset::parent_for_create(api, o, o.id(), path, lcpl)?;
        let link = match a.op_type {
            sys::H5VL_link_create_t_H5VL_LINK_CREATE_HARD => {
                let h = &a.args.hard;
                let target_obj = if h.curr_obj.is_null() {
                    o
                } else {
                    Obj::from_ptr(h.curr_obj)?
                };
                let id = locate(target_obj, &h.curr_loc_params)?;
                json!({"class": "H5L_TYPE_HARD", "id": id})
            }
            sys::H5VL_link_create_t_H5VL_LINK_CREATE_SOFT => {
                json!({"class": "H5L_TYPE_SOFT", "h5path": c_str(a.args.soft.target)?})
            }
            sys::H5VL_link_create_t_H5VL_LINK_CREATE_UD if a.args.ud.type_ == EXTERNAL => {
                let ud = &a.args.ud;
                let raw = std::slice::from_raw_parts(ud.buf.cast::<u8>(), ud.buf_size);
                let mut parts = raw.get(1..).unwrap_or_default().split(|b| *b == 0);
                let file = String::from_utf8_lossy(parts.next().unwrap_or_default()).into_owned();
                let path = String::from_utf8_lossy(parts.next().unwrap_or_default()).into_owned();
                json!({"class": "H5L_TYPE_EXTERNAL", "h5domain": file, "h5path": path})
            }
            _ => return Err(VolError::Unsupported("user-defined links".into())),
        };
        create_link(o, &group, &name, link)?;
        Ok(0)
    })
}

/// H5Lcopy and H5Lmove: the link document is copied to the destination
/// (and, for a move, removed from the source).
unsafe fn copy_or_move(
    src: *mut c_void,
    loc1: *const sys::H5VL_loc_params_t,
    dst: *mut c_void,
    loc2: *const sys::H5VL_loc_params_t,
    lcpl: hid_t,
    remove: bool,
) -> Result<sys::herr_t> {
    let api = crate::api::h5().map_err(VolError::Library)?;
    let s = Obj::from_ptr(src)?;
    let d = if dst.is_null() {
        s
    } else {
        Obj::from_ptr(dst)?
    };
    let (sdom, sg, sname, link) = link_at(s, loc1)?;
    let l2 = &*loc2;
    if l2.type_ != sys::H5VL_loc_type_t_H5VL_OBJECT_BY_NAME {
        return Err(VolError::Unsupported(
            "link destinations other than by name".into(),
        ));
    }
    let (dg, dname) = crate::dataset::parent_for_create(
        api,
        d,
        d.id(),
        c_str(l2.loc_data.loc_by_name.name)?,
        lcpl,
    )?;
    if remove && sg == dg && sname == dname {
        // (As HDF5: the destination name is taken, by the link itself.)
        return Err(VolError::Exists(format!(
            "Unable to move link {sname:?} onto itself (name already exists)"
        )));
    }
    if remove && std::sync::Arc::ptr_eq(&sdom, &d.dom) {
        // Within one store: made before the old link goes, and only while
        // that one is still as it was (see Domain::link_move).
        sdom.link_move(&sg, &sname, &dg, &dname)
            .map_err(|e| match e {
                h5lake_engine::EngineError::AlreadyExists(m) => VolError::Exists(m),
                e => e.into(),
            })?;
        return Ok(0);
    }
    create_link(d, &dg, &dname, link)?;
    if remove {
        sdom.link_delete(&sg, &sname)?;
    }
    Ok(0)
}

pub unsafe extern "C" fn copy(
    src: *mut c_void,
    loc1: *const sys::H5VL_loc_params_t,
    dst: *mut c_void,
    loc2: *const sys::H5VL_loc_params_t,
    lcpl: hid_t,
    _lapl: hid_t,
    _dxpl: hid_t,
    _req: *mut *mut c_void,
) -> sys::herr_t {
    guard("link copy", -1, || {
        copy_or_move(src, loc1, dst, loc2, lcpl, false)
    })
}

pub unsafe extern "C" fn move_(
    src: *mut c_void,
    loc1: *const sys::H5VL_loc_params_t,
    dst: *mut c_void,
    loc2: *const sys::H5VL_loc_params_t,
    lcpl: hid_t,
    _lapl: hid_t,
    _dxpl: hid_t,
    _req: *mut *mut c_void,
) -> sys::herr_t {
    guard("link move", -1, || {
        copy_or_move(src, loc1, dst, loc2, lcpl, true)
    })
}

/// Calls `op` for each link of `group` (and, when `recursive`, of every
/// group below it, each group once), with names relative to `prefix`.
#[allow(clippy::too_many_arguments)]
unsafe fn iterate(
    o: &Obj,
    group: &str,
    prefix: &str,
    it: &sys::H5VL_link_iterate_args_t,
    loc_id: hid_t,
    seen: &mut HashSet<String>,
    skip: usize,
    counter: &mut u64,
) -> Result<sys::herr_t> {
    let Some(op) = it.op else { return Ok(0) };
    let tracked = crate::objects::order::tracked(&o.dom, group);
    if !it.recursive && !tracked {
        crate::objects::needs_order_index(it.idx_type)?;
    }
    let links = ordered_links(&o.dom, group, it.idx_type, it.order)?;
    if skip > 0 && skip >= links.len() {
        // (HDF5 refuses a start index past the last link.)
        return Err(VolError::Invalid(format!(
            "index out of bound: start index {skip} of a group of {} links",
            links.len()
        )));
    }
    let created = o.dom.link_names(group)?;
    let corders: std::collections::HashMap<&str, usize> = created
        .iter()
        .enumerate()
        .map(|(i, n)| (n.as_str(), i))
        .collect();
    for (k, (name, link)) in links.iter().enumerate().skip(skip) {
        let corder = corders.get(name.as_str()).copied().unwrap_or(k) as i64;
        let info = link_info(name, link, tracked.then_some(corder))?;
        let full = if prefix.is_empty() {
            name.clone()
        } else {
            format!("{prefix}/{name}")
        };
        let cname = CString::new(full.as_str())
            .map_err(|_| VolError::Invalid("a link name with NUL".into()))?;
        let ret = op(loc_id, cname.as_ptr(), &info, it.op_data);
        *counter += 1;
        if ret != 0 {
            return Ok(ret);
        }
        if it.recursive && link.get("class").and_then(Value::as_str) == Some("H5L_TYPE_HARD") {
            let id = link.get("id").and_then(Value::as_str).unwrap_or("");
            if id.starts_with("g-") && seen.insert(id.to_string()) {
                let ret = iterate(o, id, &full, it, loc_id, seen, 0, counter)?;
                if ret != 0 {
                    return Ok(ret);
                }
            }
        }
    }
    Ok(0)
}

pub unsafe extern "C" fn specific(
    obj: *mut c_void,
    loc: *const sys::H5VL_loc_params_t,
    args: *mut sys::H5VL_link_specific_args_t,
    _dxpl: hid_t,
    _req: *mut *mut c_void,
) -> sys::herr_t {
    guard("link specific", -1, || {
        let o = Obj::from_ptr(obj)?;
        let a = &mut *args;
        let l = &*loc;
        match a.op_type {
            sys::H5VL_link_specific_t_H5VL_LINK_EXISTS => {
                // (A missing group on the way is an error, as in HDF5; only
                // the last name may be missing.)
                let (dom, g, last) = parent_and_name(o, l.loc_data.loc_by_name.name)?;
                let exists = match dom.link_get(&g, &last) {
                    Ok(_) => true,
                    Err(h5lake_engine::EngineError::NotFound(_)) => false,
                    Err(e) => return Err(e.into()),
                };
                *a.args.exists.exists = exists;
            }
            sys::H5VL_link_specific_t_H5VL_LINK_DELETE => {
                let (dom, g, name, _) = link_at(o, loc)?;
                dom.link_delete(&g, &name)?;
            }
            sys::H5VL_link_specific_t_H5VL_LINK_ITER => {
                let it = &mut a.args.iterate;
                let gid = locate(o, loc)?;
                let path = match l.type_ {
                    sys::H5VL_loc_type_t_H5VL_OBJECT_BY_NAME => {
                        join_path(&o.path, c_str(l.loc_data.loc_by_name.name)?)
                    }
                    _ => o.path.clone(),
                };
                let loc_id = register_id(o, &gid, &path)?;
                let skip = if it.idx_p.is_null() || it.recursive {
                    0
                } else {
                    *it.idx_p as usize
                };
                let mut seen = HashSet::from([gid.clone()]);
                let mut counter = skip as u64;
                let ret = iterate(o, &gid, "", it, loc_id.0, &mut seen, skip, &mut counter)?;
                if !it.idx_p.is_null() && !it.recursive {
                    *it.idx_p = counter;
                }
                return Ok(ret);
            }
            other => return Err(VolError::Unsupported(format!("link operation {other}"))),
        }
        Ok(0)
    })
}

pub unsafe extern "C" fn get(
    obj: *mut c_void,
    loc: *const sys::H5VL_loc_params_t,
    args: *mut sys::H5VL_link_get_args_t,
    _dxpl: hid_t,
    _req: *mut *mut c_void,
) -> sys::herr_t {
    guard("link get", -1, || {
        let o = Obj::from_ptr(obj)?;
        let a = &mut *args;
        let (dom, g, name, link) = link_at(o, loc)?;
        match a.op_type {
            sys::H5VL_link_get_t_H5VL_LINK_GET_INFO => {
                *a.args.get_info.linfo = link_info(&name, &link, corder_of(&dom, &g, &name)?)?
            }
            sys::H5VL_link_get_t_H5VL_LINK_GET_NAME => {
                let n = &mut a.args.get_name;
                copy_name(&name, n.name, n.name_size, n.name_len);
            }
            sys::H5VL_link_get_t_H5VL_LINK_GET_VAL => {
                let v = &mut a.args.get_val;
                let s = |k: &str| {
                    link.get(k)
                        .and_then(Value::as_str)
                        .unwrap_or("")
                        .to_string()
                };
                let val = match s("class").as_str() {
                    "H5L_TYPE_SOFT" => {
                        let mut b = s("h5path").into_bytes();
                        b.push(0);
                        b
                    }
                    "H5L_TYPE_EXTERNAL" => pack_external(&s("h5domain"), &s("h5path")),
                    _ => {
                        return Err(VolError::Invalid(format!(
                            "{name:?} is a hard link: it has no value"
                        )))
                    }
                };
                if !v.buf.is_null() {
                    let n = val.len().min(v.buf_size);
                    std::ptr::copy_nonoverlapping(val.as_ptr(), v.buf.cast::<u8>(), n);
                }
            }
            other => return Err(VolError::Unsupported(format!("link get operation {other}"))),
        }
        Ok(0)
    })
}

/// The path an object location reaches, when it can be told from the
/// location (by name: the object's path joined with the name).
unsafe fn path_of(o: &Obj, loc: *const sys::H5VL_loc_params_t) -> Result<String> {
    let l = &*loc;
    Ok(match l.type_ {
        sys::H5VL_loc_type_t_H5VL_OBJECT_BY_SELF => o.path.clone(),
        sys::H5VL_loc_type_t_H5VL_OBJECT_BY_NAME => {
            join_path(&o.path, c_str(l.loc_data.loc_by_name.name)?)
        }
        sys::H5VL_loc_type_t_H5VL_OBJECT_BY_IDX => {
            let by = &l.loc_data.loc_by_idx;
            let g = crate::objects::resolve(&o.dom, o.id(), c_str(by.name)?)?;
            let (name, _) = nth_link(&o.dom, &g, by.idx_type, by.order, by.n)?;
            join_path(&join_path(&o.path, c_str(by.name)?), &name)
        }
        _ => String::new(),
    })
}

pub unsafe extern "C" fn object_open(
    obj: *mut c_void,
    loc: *const sys::H5VL_loc_params_t,
    opened_type: *mut sys::H5I_type_t,
    _dxpl: hid_t,
    _req: *mut *mut c_void,
) -> *mut c_void {
    guard("object open", null_mut(), || {
        let o = Obj::from_ptr(obj)?;
        let (dom, id) = crate::objects::locate_in(o, loc)?;
        if (*loc).type_ == sys::H5VL_loc_type_t_H5VL_OBJECT_BY_TOKEN {
            // A token comes from a reference, which HDF5 refuses to follow
            // once the object's last link is gone.
            dom.check_linked(&id)?;
        }
        let kind = kind_of(&id);
        *opened_type = htype_of(&kind);
        let path = if std::sync::Arc::ptr_eq(&dom, &o.dom) {
            path_of(o, loc)?
        } else {
            String::new()
        };
        Ok(Obj::boxed(dom, kind, path))
    })
}

fn otype_of(id: &str) -> sys::H5O_type_t {
    match kind_of(id) {
        Kind::Dataset(_) => sys::H5O_type_t_H5O_TYPE_DATASET,
        Kind::Datatype(_) => sys::H5O_type_t_H5O_TYPE_NAMED_DATATYPE,
        _ => sys::H5O_type_t_H5O_TYPE_GROUP,
    }
}

/// Object info: what h5lake knows; times only for objects created with
/// time tracking (see [`tracked_times`]).
fn object_info(o: &Obj, id: &str) -> Result<sys::H5O_info2_t> {
    info_in(&o.dom, id)
}

/// [`object_info`] of an object of any open domain.
fn info_in(dom: &std::sync::Arc<h5lake_engine::Domain>, id: &str) -> Result<sys::H5O_info2_t> {
    // SAFETY: plain data; every field is set or meaningfully zero.
    let mut info: sys::H5O_info2_t = unsafe { std::mem::zeroed() };
    info.fileno = crate::file::fileno_of(dom);
    info.token = crate::token::of_id(id)?;
    info.type_ = otype_of(id);
    info.rc = 1;
    info.num_attrs = dom.attr_names(id).map_or(0, |n| n.len() as u64);
    if let Some((created, modified)) = tracked_times(dom, id) {
        info.btime = created;
        info.ctime = modified;
        info.mtime = modified;
        info.atime = modified;
    }
    Ok(info)
}

/// Creation and last-change times (seconds since the epoch) of an object
/// whose creation properties asked for them (HDF5's `track_times`, which
/// h5py turns off for datasets by default: `None` then, as HDF5 reports 0).
pub fn tracked_times(dom: &h5lake_engine::Domain, id: &str) -> Option<(i64, i64)> {
    let doc = dom.get_doc(id).ok()?;
    if doc.pointer("/creationProperties/trackTimes") != Some(&Value::Bool(true)) {
        return None;
    }
    let t = |k: &str| doc.get(k).and_then(Value::as_f64).map(|x| x as i64);
    let created = t("created")?;
    Some((created, t("lastModified").unwrap_or(created)))
}

/// The first path (breadth first, by hard links from the root) that
/// reaches object `id`.
fn find_path(o: &Obj, id: &str) -> Result<String> {
    let root = o.dom.root_id().to_string();
    if id == root {
        return Ok("/".into());
    }
    let mut queue = std::collections::VecDeque::from([(root.clone(), String::new())]);
    let mut seen = HashSet::from([root]);
    while let Some((g, path)) = queue.pop_front() {
        for (name, link) in o.dom.links(&g)? {
            if link.get("class").and_then(Value::as_str) != Some("H5L_TYPE_HARD") {
                continue;
            }
            let target = link
                .get("id")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string();
            let p = format!("{path}/{name}");
            if target == id {
                return Ok(p);
            }
            if target.starts_with("g-") && seen.insert(target.clone()) {
                queue.push_back((target, p));
            }
        }
    }
    Err(VolError::NotFound(
        "the object is not linked into the file".into(),
    ))
}

pub unsafe extern "C" fn object_get(
    obj: *mut c_void,
    loc: *const sys::H5VL_loc_params_t,
    args: *mut sys::H5VL_object_get_args_t,
    _dxpl: hid_t,
    _req: *mut *mut c_void,
) -> sys::herr_t {
    guard("object get", -1, || {
        let o = Obj::from_ptr(obj)?;
        let a = &mut *args;
        match a.op_type {
            sys::H5VL_object_get_t_H5VL_OBJECT_GET_FILE => {
                *a.args.get_file.file = Obj::boxed(o.dom.clone(), Kind::File, "/".into());
            }
            sys::H5VL_object_get_t_H5VL_OBJECT_GET_NAME => {
                let mut path = path_of(o, loc)?;
                let by_self = (*loc).type_ == sys::H5VL_loc_type_t_H5VL_OBJECT_BY_SELF;
                // An open object's path goes stale when a link on it is
                // moved (H5Lmove of its group): HDF5 names it where it is.
                let stale = by_self
                    && !path.is_empty()
                    && crate::objects::resolve(&o.dom, o.dom.root_id(), &path)
                        .ok()
                        .as_deref()
                        != Some(o.id());
                if path.is_empty() || stale {
                    path = find_path(o, &locate(o, loc)?)?;
                }
                let n = &mut a.args.get_name;
                copy_name(&path, n.buf, n.buf_size, n.name_len);
            }
            sys::H5VL_object_get_t_H5VL_OBJECT_GET_TYPE => {
                *a.args.get_type.obj_type = otype_of(&crate::objects::locate_in(o, loc)?.1)
            }
            sys::H5VL_object_get_t_H5VL_OBJECT_GET_INFO => {
                let (dom, id) = crate::objects::locate_in(o, loc)?;
                *a.args.get_info.oinfo = info_in(&dom, &id)?;
            }
            other => {
                return Err(VolError::Unsupported(format!(
                    "object get operation {other}"
                )))
            }
        }
        Ok(0)
    })
}

/// Whether a by-name path ends in a link name (not "/", ".", "g/."):
/// those name the group itself, which exists.
unsafe fn names_a_link(name: *const std::ffi::c_char) -> bool {
    c_str(name).is_ok_and(|p| {
        let last = p.trim_end_matches('/').rsplit('/').next().unwrap_or("");
        !last.is_empty() && last != "." && !p.ends_with('/')
    })
}

/// H5Ovisit: the start object (named "."), then every object below it
/// once, depth first in the index's order, by hard links, with paths
/// relative to the start (as the native connector walks).
unsafe fn visit(
    o: &Obj,
    start: &str,
    start_path: &str,
    v: &sys::H5VL_object_visit_args_t,
) -> Result<sys::herr_t> {
    let Some(op) = v.op else { return Ok(0) };
    let loc_id = register_id(o, start, start_path)?;
    let dot = c".";
    let ret = op(loc_id.0, dot.as_ptr(), &object_info(o, start)?, v.op_data);
    if ret != 0 || !start.starts_with("g-") {
        return Ok(ret);
    }
    let mut seen = HashSet::from([start.to_string()]);
    visit_below(o, start, "", v, loc_id.0, &mut seen)
}

unsafe fn visit_below(
    o: &Obj,
    group: &str,
    prefix: &str,
    v: &sys::H5VL_object_visit_args_t,
    loc_id: hid_t,
    seen: &mut HashSet<String>,
) -> Result<sys::herr_t> {
    let Some(op) = v.op else { return Ok(0) };
    for (name, link) in ordered_links(&o.dom, group, v.idx_type, v.order)? {
        if link.get("class").and_then(Value::as_str) != Some("H5L_TYPE_HARD") {
            continue;
        }
        let target = link
            .get("id")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        if !seen.insert(target.clone()) {
            continue;
        }
        let path = if prefix.is_empty() {
            name.clone()
        } else {
            format!("{prefix}/{name}")
        };
        let cname = CString::new(path.as_str())
            .map_err(|_| VolError::Invalid("a link name with NUL".into()))?;
        let ret = op(loc_id, cname.as_ptr(), &object_info(o, &target)?, v.op_data);
        if ret != 0 {
            return Ok(ret);
        }
        if target.starts_with("g-") {
            let ret = visit_below(o, &target, &path, v, loc_id, seen)?;
            if ret != 0 {
                return Ok(ret);
            }
        }
    }
    Ok(0)
}

pub unsafe extern "C" fn object_specific(
    obj: *mut c_void,
    loc: *const sys::H5VL_loc_params_t,
    args: *mut sys::H5VL_object_specific_args_t,
    _dxpl: hid_t,
    _req: *mut *mut c_void,
) -> sys::herr_t {
    guard("object specific", -1, || {
        let o = Obj::from_ptr(obj)?;
        let a = &mut *args;
        match a.op_type {
            sys::H5VL_object_specific_t_H5VL_OBJECT_EXISTS
                if (*loc).type_ == sys::H5VL_loc_type_t_H5VL_OBJECT_BY_NAME
                    && names_a_link((*loc).loc_data.loc_by_name.name) =>
            {
                // As HDF5: a missing group on the way fails; a missing last
                // link, or one that leads nowhere (a dangling soft link),
                // is false.
                let (dom, g, last) =
                    crate::objects::parent_and_name(o, (*loc).loc_data.loc_by_name.name)?;
                *a.args.exists.exists = match dom.link_get(&g, &last) {
                    Ok(_) => match crate::objects::locate_in(o, loc) {
                        Ok(_) => true,
                        Err(VolError::NotFound(_))
                        | Err(VolError::Engine(h5lake_engine::EngineError::NotFound(_))) => false,
                        Err(e) => return Err(e),
                    },
                    Err(h5lake_engine::EngineError::NotFound(_)) => false,
                    Err(e) => return Err(e.into()),
                };
            }
            sys::H5VL_object_specific_t_H5VL_OBJECT_EXISTS => {
                *a.args.exists.exists = match crate::objects::locate_in(o, loc) {
                    Ok(_) => true,
                    Err(VolError::NotFound(_)) => false,
                    Err(VolError::Engine(h5lake_engine::EngineError::NotFound(_))) => false,
                    Err(e) => return Err(e),
                };
            }
            sys::H5VL_object_specific_t_H5VL_OBJECT_LOOKUP => {
                *a.args.lookup.token_ptr = crate::token::of_id(&locate(o, loc)?)?;
            }
            sys::H5VL_object_specific_t_H5VL_OBJECT_VISIT => {
                let start = locate(o, loc)?;
                let path = path_of(o, loc)?;
                return visit(o, &start, &path, &a.args.visit);
            }
            // Objects live until their last link goes; writes are durable on return.
            sys::H5VL_object_specific_t_H5VL_OBJECT_CHANGE_REF_COUNT
            | sys::H5VL_object_specific_t_H5VL_OBJECT_FLUSH
            | sys::H5VL_object_specific_t_H5VL_OBJECT_REFRESH => {}
            other => return Err(VolError::Unsupported(format!("object operation {other}"))),
        }
        Ok(0)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn external_link_values_are_packed_like_hdf5() {
        assert_eq!(pack_external("a.h5", "/x"), b"\0a.h5\0/x\0".to_vec());
    }
}
