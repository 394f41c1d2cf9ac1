//! File and group callbacks: a file is an h5lake domain, its root group
//! the file object's own location.

use std::ffi::{c_char, c_void};
use std::ptr::null_mut;

use h5lake_engine::OpenMode;
use serde_json::json;

use crate::api::h5;
use crate::error::{check, guard, VolError};
use crate::objects::{c_str, locate, open_domain, Kind, Obj};
use crate::sys::{self, hid_t};

const ACC_RDWR: u32 = 0x0001;
const ACC_TRUNC: u32 = 0x0002;

pub unsafe extern "C" fn create(
    name: *const c_char,
    flags: u32,
    fcpl: hid_t,
    fapl: hid_t,
    _dxpl: hid_t,
    _req: *mut *mut c_void,
) -> *mut c_void {
    guard("file create", null_mut(), || {
        let api = h5().map_err(VolError::Library)?;
        let placement = crate::storage::check_fapl(api, fapl, true, true)?;
        // Before anything is made: a bad connector setting fails the call.
        let access = opened_with(api, fapl, flags)?;
        let mode = if flags & ACC_TRUNC != 0 {
            OpenMode::Truncate
        } else {
            OpenMode::CreateExclusive
        };
        let props = crate::objects::order::props_of(api, fcpl, true);
        let dom = if placement == crate::storage::Placement::Scratch {
            crate::storage::scratch_domain(c_str(name)?, props)?
        } else {
            if mode == OpenMode::Truncate && crate::access::already_open(c_str(name)?).is_some() {
                return Err(VolError::Invalid(format!(
                    "unable to truncate a file which is already open: {}",
                    c_str(name)?
                )));
            }
            crate::objects::open_domain_with(c_str(name)?, mode, props)
                .map_err(VolError::for_file)?
        };
        crate::access::record(&dom, access);
        Ok(Obj::boxed(dom, Kind::File, "/".into()))
    })
}

pub unsafe extern "C" fn open(
    name: *const c_char,
    flags: u32,
    fapl: hid_t,
    _dxpl: hid_t,
    _req: *mut *mut c_void,
) -> *mut c_void {
    guard("file open", null_mut(), || {
        let api = h5().map_err(VolError::Library)?;
        crate::storage::check_fapl(api, fapl, false, flags & ACC_RDWR != 0)?;
        let access = opened_with(api, fapl, flags)?;
        let mode = if flags & ACC_RDWR != 0 {
            OpenMode::ReadWrite
        } else {
            OpenMode::Read
        };
        if mode == OpenMode::ReadWrite && crate::access::already_open(c_str(name)?) == Some(true) {
            return Err(VolError::Invalid(format!(
                "file is already open for read-only: {}",
                c_str(name)?
            )));
        }
        let dom = open_domain(c_str(name)?, mode).map_err(VolError::for_file)?;
        crate::access::record(&dom, access);
        Ok(Obj::boxed(dom, Kind::File, "/".into()))
    })
}

/// What a file open or create asked for, to report back, and the
/// connector's settings its access list gives (see [`crate::info`]).
fn opened_with(
    api: &crate::api::Api,
    fapl: hid_t,
    flags: u32,
) -> Result<crate::access::Access, VolError> {
    let default = crate::access::Access::default();
    Ok(crate::access::Access {
        locking: crate::access::locking_of(api, fapl).unwrap_or(default.locking),
        swmr_read: flags & crate::access::ACC_SWMR_READ != 0,
        swmr_write: flags & crate::access::ACC_SWMR_WRITE != 0,
        layout: crate::info::of_fapl(api, fapl)?.layout,
    })
}

pub unsafe extern "C" fn get(
    obj: *mut c_void,
    args: *mut sys::H5VL_file_get_args_t,
    _dxpl: hid_t,
    _req: *mut *mut c_void,
) -> sys::herr_t {
    guard("file get", -1, || {
        let api = h5().map_err(VolError::Library)?;
        let o = Obj::from_ptr(obj)?;
        let a = &mut *args;
        match a.op_type {
            sys::H5VL_file_get_t_H5VL_FILE_GET_INTENT => {
                let swmr = crate::access::of(&o.dom).swmr_flags();
                *a.args.get_intent.flags = swmr | if o.dom.readonly() { 0 } else { ACC_RDWR };
            }
            sys::H5VL_file_get_t_H5VL_FILE_GET_NAME => {
                let g = &mut a.args.get_name;
                let scratch = crate::storage::scratch_name(&o.dom);
                let name = scratch.as_deref().unwrap_or(o.dom.location()).as_bytes();
                if !g.file_name_len.is_null() {
                    *g.file_name_len = name.len();
                }
                if !g.buf.is_null() && g.buf_size > 0 {
                    let n = name.len().min(g.buf_size - 1);
                    std::ptr::copy_nonoverlapping(name.as_ptr(), g.buf.cast(), n);
                    *g.buf.add(n) = 0;
                }
            }
            sys::H5VL_file_get_t_H5VL_FILE_GET_FCPL => {
                let fcpl = check(api.f.H5Pcreate(api.g.p_file_create.id()), "H5Pcreate")?;
                if crate::objects::order::tracked(&o.dom, o.dom.root_id()) {
                    crate::objects::order::set(api, fcpl, true);
                }
                a.args.get_fcpl.fcpl_id = fcpl;
            }
            sys::H5VL_file_get_t_H5VL_FILE_GET_FAPL => {
                let fapl = check(api.f.H5Pcreate(api.g.p_file_access.id()), "H5Pcreate")?;
                let (use_locking, ignore) = crate::access::of(&o.dom).locking;
                check(
                    api.f.H5Pset_file_locking(fapl, use_locking, ignore),
                    "H5Pset_file_locking",
                )?;
                crate::info::set_on_fapl(
                    api,
                    fapl,
                    crate::info::Settings {
                        layout: crate::access::of(&o.dom).layout,
                    },
                )?;
                if crate::storage::scratch_name(&o.dom).is_some() {
                    // an in-memory file: the core driver, no backing store
                    check(
                        api.f.H5Pset_fapl_core(fapl, 64 * 1024, false),
                        "H5Pset_fapl_core",
                    )?;
                }
                a.args.get_fapl.fapl_id = fapl;
            }
            sys::H5VL_file_get_t_H5VL_FILE_GET_FILENO => {
                *a.args.get_fileno.fileno = fileno_of(&o.dom);
            }
            sys::H5VL_file_get_t_H5VL_FILE_GET_OBJ_COUNT => {
                let g = &mut a.args.get_obj_count;
                *g.count = open_ids(o, g.types)?.len();
            }
            sys::H5VL_file_get_t_H5VL_FILE_GET_OBJ_IDS => {
                let g = &mut a.args.get_obj_ids;
                let ids = open_ids(o, g.types)?;
                let n = ids.len().min(g.max_objs);
                if n > 0 && !g.oid_list.is_null() {
                    std::ptr::copy_nonoverlapping(ids.as_ptr(), g.oid_list, n);
                }
                *g.count = n;
            }
            sys::H5VL_file_get_t_H5VL_FILE_GET_CONT_INFO => {
                let info = &mut *a.args.get_cont_info.info;
                info.version = sys::H5VL_CONTAINER_INFO_VERSION;
                info.feature_flags = 0;
                info.token_size = std::mem::size_of::<sys::H5O_token_t>();
                info.blob_id_size = 0;
            }
            other => return Err(VolError::Unsupported(format!("file get operation {other}"))),
        }
        Ok(0)
    })
}

/// The ids of open objects of the kinds `types` (HDF5's `H5F_OBJ_*`
/// mask) that belong to file `o`: those opened through it (`H5F_OBJ_LOCAL`)
/// or through any open file of the same store. HDF5 asks the connector,
/// and h5py closes what it gets when a file closes.
unsafe fn open_ids(o: &Obj, types: u32) -> Result<Vec<hid_t>, VolError> {
    const LOCAL: u32 = 0x20;
    let local = types & LOCAL != 0;
    each_open_id(types, |_, _, obj| {
        // another connector's object, or a native file's through this one
        let Ok(obj) = Obj::from_ptr(obj) else {
            return false;
        };
        if local {
            std::sync::Arc::ptr_eq(&obj.dom, &o.dom)
        } else {
            obj.dom.location() == o.dom.location()
        }
    })
}

/// The open ids of this connector's objects of the kinds `types`
/// (`H5F_OBJ_*`) that `keep` accepts, given each id, its HDF5 type and
/// its object (a store's [`Obj`], or a native object, unwrapped).
pub(crate) unsafe fn each_open_id(
    types: u32,
    keep: impl FnMut(hid_t, sys::H5I_type_t, *mut c_void) -> bool,
) -> Result<Vec<hid_t>, VolError> {
    let api = h5().map_err(VolError::Library)?;
    let f = &api.f;
    let ours = check(
        f.H5VLget_connector_id_by_name(c"h5lake".as_ptr()),
        "H5VLget_connector_id_by_name",
    )?;
    let mut found = Found {
        ours,
        keep: Box::new(keep),
        ids: Vec::new(),
    };
    let kinds = [
        (0x1, sys::H5I_type_t_H5I_FILE),
        (0x2, sys::H5I_type_t_H5I_DATASET),
        (0x4, sys::H5I_type_t_H5I_GROUP),
        (0x8, sys::H5I_type_t_H5I_DATATYPE),
        (0x10, sys::H5I_type_t_H5I_ATTR),
    ];
    let mut status = 0;
    for (bit, kind) in kinds {
        if types & bit != 0 && status >= 0 {
            status = f.H5Iiterate(kind, Some(visit_id), (&mut found as *mut Found).cast());
        }
    }
    f.H5VLclose(ours);
    check(status, "H5Iiterate")?;
    Ok(found.ids)
}

struct Found<'a> {
    ours: hid_t,
    keep: Box<dyn FnMut(hid_t, sys::H5I_type_t, *mut c_void) -> bool + 'a>,
    ids: Vec<hid_t>,
}

unsafe extern "C" fn visit_id(id: hid_t, udata: *mut c_void) -> sys::herr_t {
    let Ok(api) = h5() else { return -1 };
    let f = &api.f;
    let found = &mut *udata.cast::<Found>();
    let htype = f.H5Iget_type(id);
    // Transient datatypes are no file's objects (and have no connector).
    if htype == sys::H5I_type_t_H5I_DATATYPE && f.H5Tcommitted(id) <= 0 {
        return 0;
    }
    let cid = f.H5VLget_connector_id(id);
    if cid < 0 {
        return 0;
    }
    let mut cmp = 1;
    let same = f.H5VLcmp_connector_cls(&mut cmp, cid, found.ours) >= 0 && cmp == 0;
    f.H5VLclose(cid);
    if !same {
        return 0; // another connector's object
    }
    let obj = f.H5VLobject(id);
    if !obj.is_null() && (found.keep)(id, htype, obj) {
        found.ids.push(id);
    }
    0
}

pub unsafe extern "C" fn specific(
    obj: *mut c_void,
    args: *mut sys::H5VL_file_specific_args_t,
    _dxpl: hid_t,
    _req: *mut *mut c_void,
) -> sys::herr_t {
    guard("file specific", -1, || {
        let a = &mut *args;
        match a.op_type {
            sys::H5VL_file_specific_t_H5VL_FILE_FLUSH => Obj::from_ptr(obj)?.dom.flush()?,
            sys::H5VL_file_specific_t_H5VL_FILE_IS_ACCESSIBLE => {
                let name = c_str(a.args.is_accessible.filename)?;
                *a.args.is_accessible.accessible = open_domain(name, OpenMode::Read).is_ok();
            }
            sys::H5VL_file_specific_t_H5VL_FILE_REOPEN => {
                let me = Obj::from_ptr(obj)?;
                *a.args.reopen.file = Obj::boxed(me.dom.clone(), Kind::File, "/".into());
            }
            sys::H5VL_file_specific_t_H5VL_FILE_DELETE => {
                let name = c_str(a.args.del.filename)?;
                let dom = open_domain(name, OpenMode::ReadWrite)?;
                std::sync::Arc::try_unwrap(dom)
                    .map_err(|_| VolError::Invalid("the file is open".into()))?
                    .delete_domain()?;
            }
            sys::H5VL_file_specific_t_H5VL_FILE_IS_EQUAL => {
                let other = Obj::from_ptr(a.args.is_equal.obj2)?;
                let me = Obj::from_ptr(obj)?;
                *a.args.is_equal.same_file = std::sync::Arc::ptr_eq(&me.dom, &other.dom)
                    || me.dom.location() == other.dom.location();
            }
            other => return Err(VolError::Unsupported(format!("file operation {other}"))),
        }
        Ok(0)
    })
}

pub unsafe extern "C" fn close(
    obj: *mut c_void,
    _dxpl: hid_t,
    _req: *mut *mut c_void,
) -> sys::herr_t {
    // H5Fclose writes what is pending, as HDF5 flushes a file it closes
    // (objects still open keep the domain; its last one commits the rest).
    let flushed = guard("file close", -1, || {
        if crate::native::is_lake(obj) {
            Obj::from_ptr(obj)?.dom.flush()?;
        }
        Ok(0)
    });
    Obj::free(obj);
    flushed
}

pub unsafe extern "C" fn group_create(
    obj: *mut c_void,
    loc: *const sys::H5VL_loc_params_t,
    name: *const c_char,
    lcpl: hid_t,
    gcpl: hid_t,
    _gapl: hid_t,
    _dxpl: hid_t,
    _req: *mut *mut c_void,
) -> *mut c_void {
    guard("group create", null_mut(), || {
        let api = h5().map_err(VolError::Library)?;
        let o = Obj::from_ptr(obj)?;
        if name.is_null() {
            // H5Gcreate_anon: linked later, if at all.
            let props = crate::objects::order::props_of(api, gcpl, true);
            return Ok(o.child(Kind::Group(o.dom.create_group(props)?), ""));
        }
        let start = locate(o, loc)?;
        let (parent, last) = crate::dataset::parent_for_create(api, o, &start, c_str(name)?, lcpl)?;
        crate::dataset::ensure_free(o, &parent, &last, "group")?;
        let id = o
            .dom
            .create_group(crate::objects::order::props_of(api, gcpl, true))?;
        o.dom
            .link_create(&parent, &last, json!({"class": "H5L_TYPE_HARD", "id": id}))?;
        Ok(o.child(Kind::Group(id), c_str(name)?))
    })
}

pub unsafe extern "C" fn group_open(
    obj: *mut c_void,
    loc: *const sys::H5VL_loc_params_t,
    name: *const c_char,
    _gapl: hid_t,
    _dxpl: hid_t,
    _req: *mut *mut c_void,
) -> *mut c_void {
    guard("group open", null_mut(), || {
        let o = Obj::from_ptr(obj)?;
        crate::objects::open_named(o, loc, name, "g-", "group", Kind::Group)
    })
}

pub unsafe extern "C" fn group_get(
    obj: *mut c_void,
    args: *mut sys::H5VL_group_get_args_t,
    _dxpl: hid_t,
    _req: *mut *mut c_void,
) -> sys::herr_t {
    guard("group get", -1, || {
        let api = h5().map_err(VolError::Library)?;
        let o = Obj::from_ptr(obj)?;
        let a = &mut *args;
        match a.op_type {
            sys::H5VL_group_get_t_H5VL_GROUP_GET_INFO => {
                let g = &mut a.args.get_info;
                let id = locate(o, &g.loc_params)?;
                let n = o.dom.link_names(&id)?.len() as u64;
                *g.ginfo = sys::H5G_info_t {
                    storage_type: sys::H5G_storage_type_t_H5G_STORAGE_TYPE_COMPACT,
                    nlinks: n,
                    max_corder: n as i64,
                    mounted: false,
                };
            }
            sys::H5VL_group_get_t_H5VL_GROUP_GET_GCPL => {
                let gcpl = check(api.f.H5Pcreate(api.g.p_group_create.id()), "H5Pcreate")?;
                if crate::objects::order::tracked(&o.dom, o.id()) {
                    crate::objects::order::set(api, gcpl, true);
                }
                a.args.get_gcpl.gcpl_id = gcpl;
            }
            other => {
                return Err(VolError::Unsupported(format!(
                    "group get operation {other}"
                )))
            }
        }
        Ok(0)
    })
}

/// `H5G_stat_t` (HDF5's deprecated object status, what `H5Gget_objinfo`
/// fills; h5py hashes and compares objects by it).
#[repr(C)]
pub struct GroupStat {
    pub fileno: [std::ffi::c_ulong; 2],
    pub objno: [std::ffi::c_ulong; 2],
    pub nlink: u32,
    pub type_: i32,
    pub mtime: sys::time_t,
    pub linklen: usize,
    /// `H5O_stat_t`: native object-header sizes, zero here.
    pub ohdr: [u64; 3],
}

/// `H5VL_native_group_get_objinfo_t`.
#[repr(C)]
struct GetObjinfoArgs {
    loc_params: sys::H5VL_loc_params_t,
    follow_link: bool,
    statbuf: *mut GroupStat,
}

/// `H5VL_native_group_iterate_old_t`.
#[repr(C)]
struct IterateOldArgs {
    loc_params: sys::H5VL_loc_params_t,
    idx: sys::hsize_t,
    last_obj: *mut sys::hsize_t,
    op: Option<unsafe extern "C" fn(hid_t, *const c_char, *mut c_void) -> sys::herr_t>,
    op_data: *mut c_void,
}

/// The native connector's operation numbers for `H5Giterate` and
/// `H5Gget_objinfo`, which HDF5 hands to every connector as group
/// "optional" operations.
const GROUP_ITERATE_OLD: i32 = 0;
const GROUP_GET_OBJINFO: i32 = 1;

/// `H5G_obj_t` of an object id.
fn gobj_type(id: &str) -> i32 {
    match id.as_bytes().first() {
        Some(b'd') => 1,
        Some(b't') => 2,
        _ => 0,
    }
}

/// The native file operations that mean something for a store: starting
/// SWMR writing (recorded and reported; see [`crate::access::Access`]).
/// Others (file images, VFD handles, metadata cache settings) are the
/// native file's and fail naming themselves.
pub unsafe extern "C" fn file_optional(
    obj: *mut c_void,
    args: *mut sys::H5VL_optional_args_t,
    _dxpl: hid_t,
    _req: *mut *mut c_void,
) -> sys::herr_t {
    guard("file optional", -1, || {
        let o = Obj::from_ptr(obj)?;
        let a = &*args;
        match a.op_type as u32 {
            sys::H5VL_NATIVE_FILE_START_SWMR_WRITE => {
                if o.dom.readonly() {
                    return Err(VolError::Invalid(
                        "SWMR writing needs a file opened for writing".into(),
                    ));
                }
                let mut access = crate::access::of(&o.dom);
                access.swmr_write = true;
                crate::access::record(&o.dom, access);
                // As HDF5 flushes the file here: readers opening it from
                // now on see what was made before.
                o.dom.flush()?;
            }
            sys::H5VL_NATIVE_FILE_GET_VFD_HANDLE => {
                return Err(VolError::Unsupported(
                    "a file handle (an h5lake store is a directory of objects, not one file)"
                        .into(),
                ))
            }
            op => {
                return Err(VolError::Unsupported(format!(
                    "native file operation {op} (it works on the native file format)"
                )))
            }
        }
        Ok(0)
    })
}

pub unsafe extern "C" fn group_optional(
    obj: *mut c_void,
    args: *mut sys::H5VL_optional_args_t,
    _dxpl: hid_t,
    _req: *mut *mut c_void,
) -> sys::herr_t {
    guard("group optional", -1, || {
        let o = Obj::from_ptr(obj)?;
        let a = &mut *args;
        match a.op_type {
            GROUP_GET_OBJINFO => {
                let g = &mut *(a.args as *mut GetObjinfoArgs);
                let mut st = GroupStat {
                    fileno: [fileno_of(&o.dom), 0],
                    objno: [0, 0],
                    nlink: 1,
                    type_: 0,
                    mtime: 0,
                    linklen: 0,
                    ohdr: [0; 3],
                };
                let l = &g.loc_params;
                let soft = if !g.follow_link && l.type_ == sys::H5VL_loc_type_t_H5VL_OBJECT_BY_NAME
                {
                    crate::objects::parent_and_name(o, l.loc_data.loc_by_name.name)
                        .ok()
                        .and_then(|(dom, grp, name)| dom.link_get(&grp, &name).ok())
                        .filter(|lk| {
                            lk.get("class").and_then(serde_json::Value::as_str)
                                != Some("H5L_TYPE_HARD")
                        })
                } else {
                    None
                };
                if let Some(lk) = soft {
                    st.type_ = 3; // H5G_LINK
                    st.linklen = lk
                        .get("h5path")
                        .and_then(serde_json::Value::as_str)
                        .map_or(0, |p| p.len() + 1);
                } else {
                    let id = locate(o, l)?;
                    let t = crate::token::of_id(&id)?.__data;
                    st.objno = [
                        u64::from_be_bytes(t[8..16].try_into().expect("8 bytes")) as _,
                        u64::from_be_bytes(t[..8].try_into().expect("8 bytes")) as _,
                    ];
                    st.type_ = gobj_type(&id);
                    if let Some((_, modified)) = crate::link::tracked_times(&o.dom, &id) {
                        st.mtime = modified as _;
                    }
                }
                if !g.statbuf.is_null() {
                    *g.statbuf = st;
                }
                Ok(0)
            }
            GROUP_ITERATE_OLD => {
                let it = &mut *(a.args as *mut IterateOldArgs);
                let gid = locate(o, &it.loc_params)?;
                let loc_id = crate::objects::register_id(o, &gid, &o.path)?;
                let links = crate::objects::ordered_links(
                    &o.dom,
                    &gid,
                    sys::H5_index_t_H5_INDEX_NAME,
                    sys::H5_iter_order_t_H5_ITER_INC,
                )?;
                let Some(op) = it.op else { return Ok(0) };
                for (k, (name, _)) in links.iter().enumerate().skip(it.idx as usize) {
                    let c = std::ffi::CString::new(name.as_str())
                        .map_err(|_| VolError::Invalid("a link name with NUL".into()))?;
                    let ret = op(loc_id.0, c.as_ptr(), it.op_data);
                    if !it.last_obj.is_null() {
                        *it.last_obj = (k + 1) as u64;
                    }
                    if ret != 0 {
                        return Ok(ret);
                    }
                }
                Ok(0)
            }
            other => Err(VolError::Unsupported(format!(
                "native group operation {other}"
            ))),
        }
    })
}

/// HDF5's file number of a store: the same for every open of it (as HDF5
/// shares one file among its opens, so that objects opened through two
/// handles compare equal), different for different stores: its root
/// group's id and where it lies.
pub fn fileno_of(dom: &h5lake_engine::Domain) -> std::ffi::c_ulong {
    use std::hash::{Hash, Hasher};
    let place = if dom.location().contains("://") {
        dom.location().to_string()
    } else {
        std::fs::canonicalize(dom.location()).map_or_else(
            |_| dom.location().to_string(),
            |p| p.to_string_lossy().into_owned(),
        )
    };
    let mut h = std::collections::hash_map::DefaultHasher::new();
    (dom.root_id(), place).hash(&mut h);
    h.finish() as std::ffi::c_ulong
}
