//! What the connector's `void *` objects are, and how HDF5 locations
//! (an object plus a path, index or token) resolve to h5lake ids.

use std::ffi::{c_void, CStr};
use std::sync::Arc;

use h5lake_engine::{Domain, OpenMode};
use serde_json::Value;

use crate::access::ExtOpen;
use crate::error::{Result, VolError};
use crate::sys;

/// One open HDF5 object of an h5lake domain.
#[repr(C)]
pub struct Obj {
    /// [`crate::native::LAKE_TAG`]: tells a store's objects from the
    /// native connector's (see [`crate::native`]).
    tag: u64,
    /// Zeros. HDF5 takes a committed datatype's connector object for an
    /// `H5T_t` of its own in some places (`H5T_get_actual_type`, as the
    /// library's termination iterates the open types and reads
    /// `shared` at byte 40, then `vol_obj` at 48): null there makes it
    /// pass over ours. (A datatype handle left open at exit crashed the
    /// program.)
    h5t_view: [u64; 6],
    pub dom: Arc<Domain>,
    pub kind: Kind,
    /// The absolute path the object was reached by (HDF5 names an open
    /// object by that path, soft links included); empty when reached
    /// otherwise (by token), then found by search when asked for.
    pub path: String,
    /// A dataset's chunk cache settings (slots, bytes, w0) as its access
    /// list gave them when it was opened: the store has no chunk cache of
    /// HDF5's, but programs read back what they set.
    pub chunk_cache: std::cell::Cell<Option<(usize, usize, f64)>>,
    /// What a virtual dataset's access list said of its sources when it
    /// was opened (`H5Pset_virtual_prefix`, `H5Pset_virtual_printf_gap`).
    pub vds_access: std::cell::RefCell<h5lake_engine::virtual_ds::VirtualAccess>,
}

const _: () = assert!(std::mem::offset_of!(Obj, h5t_view) == 8);

pub enum Kind {
    File,
    Group(String),
    Dataset(String),
    Datatype(String),
    Attr { owner: String, name: String },
}

impl Obj {
    pub fn boxed(dom: Arc<Domain>, kind: Kind, path: String) -> *mut c_void {
        Box::into_raw(Box::new(Obj {
            tag: crate::native::LAKE_TAG,
            h5t_view: [0; 6],
            dom,
            kind,
            path,
            chunk_cache: Default::default(),
            vds_access: Default::default(),
        }))
        .cast()
    }

    /// The object behind a pointer HDF5 hands back.
    ///
    /// # Safety
    /// `p` must be a pointer [`Obj::boxed`] returned and not yet freed.
    pub unsafe fn from_ptr<'a>(p: *mut c_void) -> Result<&'a Obj> {
        if p.is_null() {
            return Err(VolError::Invalid("no object given".into()));
        }
        if !crate::native::is_lake(p) {
            return Err(VolError::Unsupported(
                "an object of a native HDF5 file where an h5lake store's object is needed".into(),
            ));
        }
        Ok(&*(p as *const Obj))
    }

    /// Frees an object.
    ///
    /// # Safety
    /// As [`Obj::from_ptr`]; `p` is not used afterwards.
    pub unsafe fn free(p: *mut c_void) {
        if crate::native::is_lake(p) {
            drop(Box::from_raw(p as *mut Obj));
            // an in-memory file's store goes with its last object
            crate::storage::sweep();
        }
    }

    /// The h5lake id of the object (the root group for a file).
    pub fn id(&self) -> &str {
        match &self.kind {
            Kind::File => self.dom.root_id(),
            Kind::Group(id) | Kind::Dataset(id) | Kind::Datatype(id) => id,
            Kind::Attr { owner, .. } => owner,
        }
    }

    /// Another object of the same domain; its path is unknown.
    pub fn with(&self, kind: Kind) -> *mut c_void {
        Obj::boxed(self.dom.clone(), kind, String::new())
    }

    /// An object reached from this one by `rel` (a path, absolute or not).
    pub fn child(&self, kind: Kind, rel: &str) -> *mut c_void {
        Obj::boxed(self.dom.clone(), kind, join_path(&self.path, rel))
    }
}

/// The object kind an h5lake id names, by its prefix.
pub fn kind_of(id: &str) -> Kind {
    match id.as_bytes().first() {
        Some(b'd') => Kind::Dataset(id.to_string()),
        Some(b't') => Kind::Datatype(id.to_string()),
        _ => Kind::Group(id.to_string()),
    }
}

pub fn htype_of(kind: &Kind) -> sys::H5I_type_t {
    match kind {
        Kind::File => sys::H5I_type_t_H5I_FILE,
        Kind::Group(_) => sys::H5I_type_t_H5I_GROUP,
        Kind::Dataset(_) => sys::H5I_type_t_H5I_DATASET,
        Kind::Datatype(_) => sys::H5I_type_t_H5I_DATATYPE,
        Kind::Attr { .. } => sys::H5I_type_t_H5I_ATTR,
    }
}

/// Opens (or creates) the domain a file name names: a local directory, or
/// an `s3://` URL.
pub fn open_domain(name: &str, mode: OpenMode) -> Result<Arc<Domain>> {
    open_domain_with(name, mode, Value::Object(Default::default()))
}

/// [`open_domain`], giving the root group's creation properties when the
/// domain is created.
pub fn open_domain_with(name: &str, mode: OpenMode, root_props: Value) -> Result<Arc<Domain>> {
    // Metadata is written at H5Fflush/H5Fclose, as HDF5 writes its
    // metadata cache; H5LAKE_DURABLE=1 writes each change at once.
    let durability = if std::env::var("H5LAKE_DURABLE").is_ok_and(|v| v == "1") {
        h5lake_engine::Durability::EachCall
    } else {
        h5lake_engine::Durability::AtFlush
    };
    let opts = h5lake_engine::DomainOptions {
        root_creation_props: root_props,
        durability,
        ..Default::default()
    };
    let dom = if name.contains("://") {
        Domain::open_url_with(name, mode, &opts)
    } else {
        Domain::open_local_with(std::path::Path::new(name), mode, &opts)
    };
    Ok(Arc::new(dom?))
}

/// Creation-order tracking, as h5lake's creation properties record it
/// (`CreateOrder`, what h5py's `track_order=True` asks for).
pub mod order {
    use super::*;

    const TRACKED: u32 = 0x1;
    const INDEXED: u32 = 0x2;

    /// `{"CreateOrder": 1}` when a group/file creation list tracks link or
    /// attribute creation order, or a dataset creation list attribute order.
    pub fn props_of(api: &crate::api::Api, plist: sys::hid_t, links: bool) -> Value {
        let (mut l, mut a) = (0u32, 0u32);
        if plist > 0 {
            // SAFETY: the caller's property list; failures leave 0.
            unsafe {
                if links {
                    api.f.H5Pget_link_creation_order(plist, &mut l);
                }
                api.f.H5Pget_attr_creation_order(plist, &mut a);
            }
        }
        if (l | a) & TRACKED != 0 {
            serde_json::json!({"CreateOrder": 1})
        } else {
            Value::Object(Default::default())
        }
    }

    /// Whether an object's document tracks creation order.
    pub fn tracked(dom: &Domain, id: &str) -> bool {
        dom.tracks_creation_order(id).unwrap_or(false)
    }

    /// Sets tracking on a creation property list the connector hands out.
    pub fn set(api: &crate::api::Api, plist: sys::hid_t, links: bool) {
        // SAFETY: a list the connector just created.
        unsafe {
            if links {
                api.f.H5Pset_link_creation_order(plist, TRACKED | INDEXED);
            }
            api.f.H5Pset_attr_creation_order(plist, TRACKED | INDEXED);
        }
    }
}

/// A C string argument.
///
/// # Safety
/// `p` is null or a NUL-terminated string.
pub unsafe fn c_str<'a>(p: *const std::ffi::c_char) -> Result<&'a str> {
    if p.is_null() {
        return Err(VolError::Invalid("no name given".into()));
    }
    CStr::from_ptr(p)
        .to_str()
        .map_err(|_| VolError::Invalid("names must be UTF-8".into()))
}

/// Follows `path` from group `start` (from the root when it begins with
/// `/`): the id it names. Soft links are followed; external links are not
/// (yet).
pub fn resolve(dom: &Domain, start: &str, path: &str) -> Result<String> {
    resolve_depth(dom, start, path, 0)
}

fn resolve_depth(dom: &Domain, start: &str, path: &str, depth: u32) -> Result<String> {
    if depth > 32 {
        return Err(VolError::NotFound(format!(
            "too many soft links resolving {path:?}"
        )));
    }
    let mut cur = if path.starts_with('/') {
        dom.root_id().to_string()
    } else {
        start.to_string()
    };
    let mut here = String::new();
    for part in path.split('/').filter(|p| !p.is_empty() && *p != ".") {
        let link = dom.link_get(&cur, part).map_err(|e| match e {
            h5lake_engine::EngineError::NotFound(_) => {
                VolError::NotFound(format!("object '{here}/{part}' doesn't exist"))
            }
            e => e.into(),
        })?;
        cur = link_target(dom, &cur, &link, depth)?;
        here.push('/');
        here.push_str(part);
    }
    Ok(cur)
}

/// The id a link document points at.
pub fn link_target(dom: &Domain, group: &str, link: &Value, depth: u32) -> Result<String> {
    match link.get("class").and_then(Value::as_str) {
        Some("H5L_TYPE_HARD") => link
            .get("id")
            .and_then(Value::as_str)
            .map(str::to_string)
            .ok_or_else(|| VolError::Invalid("hard link without an id".into())),
        Some("H5L_TYPE_SOFT") => {
            let to = link.get("h5path").and_then(Value::as_str).unwrap_or("");
            resolve_depth(dom, group, to, depth + 1)
                .map_err(|_| VolError::NotFound(format!("soft link to {to:?} dangles")))
        }
        Some("H5L_TYPE_EXTERNAL") => Err(VolError::Unsupported("following external links".into())),
        other => Err(VolError::Invalid(format!("unknown link class {other:?}"))),
    }
}

/// Splits `path` into its parent path and last name.
pub fn split_last(path: &str) -> (&str, &str) {
    let p = path.trim_end_matches('/');
    match p.rfind('/') {
        Some(0) => ("/", &p[1..]),
        Some(i) => (&p[..i], &p[i + 1..]),
        None => ("", p),
    }
}

/// The id a location parameter names, starting from `obj`.
///
/// # Safety
/// `loc` points at a valid `H5VL_loc_params_t`.
pub unsafe fn locate(obj: &Obj, loc: *const sys::H5VL_loc_params_t) -> Result<String> {
    let loc = &*loc;
    match loc.type_ {
        sys::H5VL_loc_type_t_H5VL_OBJECT_BY_SELF => Ok(obj.id().to_string()),
        sys::H5VL_loc_type_t_H5VL_OBJECT_BY_NAME => {
            let name = c_str(loc.loc_data.loc_by_name.name)?;
            resolve(&obj.dom, obj.id(), name)
        }
        sys::H5VL_loc_type_t_H5VL_OBJECT_BY_TOKEN => {
            let token = &*loc.loc_data.loc_by_token.token;
            crate::token::id_of(&obj.dom, token)
        }
        sys::H5VL_loc_type_t_H5VL_OBJECT_BY_IDX => {
            let by = &loc.loc_data.loc_by_idx;
            let group = resolve(&obj.dom, obj.id(), c_str(by.name)?)?;
            let (name, link) = nth_link(&obj.dom, &group, by.idx_type, by.order, by.n)?;
            let _ = name;
            link_target(&obj.dom, &group, &link, 0)
        }
        other => Err(VolError::Invalid(format!("location type {other}"))),
    }
}

/// Copies `name` into a caller's buffer of `size` bytes (NUL-terminated,
/// truncated to fit) and reports its full length, as HDF5's name getters do.
///
/// # Safety
/// `buf` is null or holds `size` bytes; `len` is null or writable.
pub unsafe fn copy_name(name: &str, buf: *mut std::ffi::c_char, size: usize, len: *mut usize) {
    if !len.is_null() {
        *len = name.len();
    }
    if !buf.is_null() && size > 0 {
        let n = name.len().min(size - 1);
        std::ptr::copy_nonoverlapping(name.as_ptr(), buf.cast::<u8>(), n);
        *buf.add(n) = 0;
    }
}

/// The connector object behind HDF5 id `id` if this connector (`ours`, its
/// connector id) made it; another connector's objects, a native file's say,
/// are not ours to look into.
///
/// # Safety
/// `id` is a valid id of a VOL-managed object.
pub unsafe fn own_object<'a>(
    api: &crate::api::Api,
    id: sys::hid_t,
    ours: sys::hid_t,
) -> Option<&'a Obj> {
    let f = &api.f;
    let cid = f.H5VLget_connector_id(id);
    if cid < 0 {
        return None;
    }
    let mut cmp = 1;
    let same_connector = f.H5VLcmp_connector_cls(&mut cmp, cid, ours) >= 0 && cmp == 0;
    f.H5VLclose(cid);
    if !same_connector {
        return None;
    }
    Obj::from_ptr(f.H5VLobject(id)).ok()
}

/// An HDF5 id for one of the connector's objects, valid while this value
/// lives (iteration callbacks get one for the object iterated over).
pub struct RegisteredId(pub sys::hid_t);

impl Drop for RegisteredId {
    fn drop(&mut self) {
        if let Ok(api) = crate::api::h5() {
            // SAFETY: the id was registered by `register_id`; dropping the
            // last reference closes (frees) the object through the connector.
            unsafe { api.f.H5Idec_ref(self.0) };
        }
    }
}

/// Registers object `id` of `o`'s domain with HDF5.
pub fn register_id(o: &Obj, id: &str, path: &str) -> Result<RegisteredId> {
    let api = crate::api::h5().map_err(VolError::Library)?;
    let kind = kind_of(id);
    let htype = htype_of(&kind);
    let obj = Obj::boxed(o.dom.clone(), kind, path.to_string());
    // SAFETY: `obj` is a fresh connector object; HDF5 owns it from here.
    let hid = unsafe { api.f.H5VLwrap_register(obj, htype) };
    if hid < 0 {
        // SAFETY: not registered, so still ours.
        unsafe { Obj::free(obj) };
        return Err(VolError::Hdf5("H5VLwrap_register failed".into()));
    }
    Ok(RegisteredId(hid))
}

/// `rel` joined to `base` and normalized (no `.`, no empty parts); an
/// absolute `rel` stands alone. Empty when `base` is unknown.
pub fn join_path(base: &str, rel: &str) -> String {
    if rel.is_empty() {
        return String::new();
    }
    let start = if rel.starts_with('/') {
        ""
    } else if base.is_empty() {
        return String::new();
    } else {
        base
    };
    let mut out = String::new();
    for part in start
        .split('/')
        .chain(rel.split('/'))
        .filter(|p| !p.is_empty() && *p != ".")
    {
        out.push('/');
        out.push_str(part);
    }
    if out.is_empty() {
        out.push('/');
    }
    out
}

/// A group's links in the order an index asks for: by name, or by
/// creation order (the order the document keeps).
pub fn ordered_links(
    dom: &Domain,
    group: &str,
    idx_type: sys::H5_index_t,
    order: sys::H5_iter_order_t,
) -> Result<Vec<(String, Value)>> {
    let mut links = dom.links(group)?;
    // (A group that does not track creation order has only the name
    // index: a visit asking for the other walks that one, as in HDF5.)
    if idx_type == sys::H5_index_t_H5_INDEX_NAME || !order::tracked(dom, group) {
        links.sort_by(|a, b| a.0.cmp(&b.0));
    }
    if order == sys::H5_iter_order_t_H5_ITER_DEC {
        links.reverse();
    }
    Ok(links)
}

/// Refuses the creation-order index of a group that does not track
/// creation order, as HDF5 does (it has no such index).
pub fn needs_order_index(idx_type: sys::H5_index_t) -> Result<()> {
    if idx_type == sys::H5_index_t_H5_INDEX_CRT_ORDER {
        return Err(VolError::Invalid(
            "creation order not tracked for links in group".into(),
        ));
    }
    Ok(())
}

/// The n-th link of a group in an index's order.
pub fn nth_link(
    dom: &Domain,
    group: &str,
    idx_type: sys::H5_index_t,
    order: sys::H5_iter_order_t,
    n: u64,
) -> Result<(String, Value)> {
    if !order::tracked(dom, group) {
        needs_order_index(idx_type)?;
    }
    ordered_links(dom, group, idx_type, order)?
        .into_iter()
        .nth(n as usize)
        .ok_or_else(|| VolError::Invalid(format!("index {n} is out of range")))
}

/// The group holding the link a by-name location names (in whichever
/// store the path leads to), and the link's name in it.
///
/// # Safety
/// `name` is a NUL-terminated string.
pub unsafe fn parent_and_name(
    obj: &Obj,
    name: *const std::ffi::c_char,
) -> Result<(Arc<Domain>, String, String)> {
    let path = c_str(name)?;
    let (parent, last) = split_last(path);
    if last.is_empty() {
        return Err(VolError::Invalid(format!("{path:?} does not name a link")));
    }
    let parent = if parent.is_empty() { "." } else { parent };
    let (dom, group) = resolve_in(&obj.dom, obj.id(), parent)?;
    Ok((dom, group, last.to_string()))
}

/// Follows `path` from group `start` of `dom`, through soft links and
/// external links (into other stores): the domain and id it names.
pub fn resolve_in(dom: &Arc<Domain>, start: &str, path: &str) -> Result<(Arc<Domain>, String)> {
    resolve_in_depth(dom, start, path, 0, ExtOpen::default())
}

/// [`resolve_in`] opening external stores as `ext` asks (else as the
/// linking store was opened).
pub fn resolve_in_mode(
    dom: &Arc<Domain>,
    start: &str,
    path: &str,
    ext: ExtOpen,
) -> Result<(Arc<Domain>, String)> {
    resolve_in_depth(dom, start, path, 0, ext)
}

fn resolve_in_depth(
    dom: &Arc<Domain>,
    start: &str,
    path: &str,
    depth: u32,
    ext: ExtOpen,
) -> Result<(Arc<Domain>, String)> {
    if depth > 32 {
        return Err(VolError::NotFound(format!(
            "too many links resolving {path:?}"
        )));
    }
    let mut d = dom.clone();
    let mut cur = if path.starts_with('/') {
        d.root_id().to_string()
    } else {
        start.to_string()
    };
    let mut here = String::new();
    for part in path.split('/').filter(|p| !p.is_empty() && *p != ".") {
        let link = d.link_get(&cur, part).map_err(|e| match e {
            h5lake_engine::EngineError::NotFound(_) => {
                VolError::NotFound(format!("object '{here}/{part}' doesn't exist"))
            }
            e => e.into(),
        })?;
        let s = |k: &str| {
            link.get(k)
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string()
        };
        (d, cur) = match s("class").as_str() {
            "H5L_TYPE_EXTERNAL" => {
                let target = open_external(&d, &s("h5domain"), ext)?;
                let root = target.root_id().to_string();
                resolve_in_depth(&target, &root, &s("h5path"), depth + 1, ext)?
            }
            "H5L_TYPE_SOFT" => {
                resolve_in_depth(&d, &cur, &s("h5path"), depth + 1, ext).map_err(|_| {
                    VolError::NotFound(format!("soft link to {:?} dangles", s("h5path")))
                })?
            }
            _ => {
                let id = link_target(&d, &cur, &link, depth)?;
                (d, id)
            }
        };
        here.push('/');
        here.push_str(part);
    }
    Ok((d, cur))
}

/// The store an external link names: a path relative to the directory of
/// the store holding the link (as HDF5 resolves relative file names), an
/// absolute path, or a URL.
fn open_external(from: &Arc<Domain>, file: &str, ext: ExtOpen) -> Result<Arc<Domain>> {
    let target = if file.contains("://") || std::path::Path::new(file).is_absolute() {
        file.to_string()
    } else {
        let base = std::path::Path::new(from.location())
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or(std::path::Path::new("."));
        // A store opened by a relative path: from the working directory,
        // as HDF5 makes the parent file's path absolute (the link policy
        // takes absolute paths only).
        let base = if from.location().contains("://") {
            base.to_path_buf()
        } else {
            std::path::absolute(base).unwrap_or_else(|_| base.to_path_buf())
        };
        base.join(file).to_string_lossy().into_owned()
    };
    from.link_policy().check(&target, None)?;
    let inherited = if from.readonly() {
        OpenMode::Read
    } else {
        OpenMode::ReadWrite
    };
    let dom = open_domain(&target, ext.mode.unwrap_or(inherited)).map_err(|e| match e {
        VolError::Engine(
            h5lake_engine::EngineError::NotFound(m) | h5lake_engine::EngineError::StoreNotFound(m),
        ) => VolError::NotFound(format!("external link target {target:?}: {m}")),
        e => e,
    })?;
    crate::access::record(&dom, ext.access_from(from));
    Ok(dom)
}

/// The domain and id a location names, following external links for
/// locations by name.
///
/// # Safety
/// As [`locate`].
pub unsafe fn locate_in(
    obj: &Obj,
    loc: *const sys::H5VL_loc_params_t,
) -> Result<(Arc<Domain>, String)> {
    let l = &*loc;
    if l.type_ == sys::H5VL_loc_type_t_H5VL_OBJECT_BY_NAME {
        let by = &l.loc_data.loc_by_name;
        let ext = match crate::api::h5() {
            Ok(api) => ExtOpen::of_lapl(api, by.lapl_id),
            Err(_) => ExtOpen::default(),
        };
        return resolve_in_mode(&obj.dom, obj.id(), c_str(by.name)?, ext);
    }
    Ok((obj.dom.clone(), locate(obj, loc)?))
}

/// Opens the object `name` names from a location, which must be of the
/// kind `make` builds (its id starts with `prefix`): the connector object
/// for a group, dataset or datatype open.
///
/// # Safety
/// As [`locate`]; `name` is a NUL-terminated string.
pub unsafe fn open_named(
    o: &Obj,
    loc: *const sys::H5VL_loc_params_t,
    name: *const std::ffi::c_char,
    prefix: &str,
    what: &str,
    make: fn(String) -> Kind,
) -> Result<*mut c_void> {
    let start = locate(o, loc)?;
    let path = c_str(name)?;
    let (dom, id) = resolve_in(&o.dom, &start, path)?;
    if !id.starts_with(prefix) {
        return Err(VolError::BadType(format!("{path:?} is not a {what}")));
    }
    if !Arc::ptr_eq(&dom, &o.dom) {
        // Reached through an external link: its path there is not known.
        return Ok(Obj::boxed(dom, make(id), String::new()));
    }
    Ok(o.child(make(id), path))
}
