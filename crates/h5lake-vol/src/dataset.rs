//! Dataset callbacks: create, open, read, write, get, set_extent, close.

use std::ffi::{c_char, c_void, CString};
use std::ptr::null_mut;
use std::sync::Arc;

use h5lake_codecs::Filter;
use h5lake_engine::virtual_ds::VirtualAccess;
use h5lake_engine::DatasetMeta;
use h5lake_types::{element_to_json, vlen_to_json, Datatype, Shape};
use serde_json::{json, Value};

use crate::api::{h5, Api};
use crate::error::{check, guard, Result, VolError};
use crate::memory::{
    fixed_from_memory, fixed_to_memory, lacks_members, same_type, to_memory_in_place, VarMem,
};
use crate::objects::{c_str, locate, Kind, Obj};
use crate::refs::{self, Refs};
use crate::regions;
use crate::selection::{contiguous_offset, file_selection, gather, scatter};
use crate::sys::{self, hid_t};
use crate::types::{from_hdf5, to_hdf5};

/// HSDS shape JSON of a dataspace.
pub fn space_json(api: &Api, space: hid_t) -> Result<Value> {
    let f = &api.f;
    // SAFETY: `space` is the caller's dataspace id.
    unsafe {
        match f.H5Sget_simple_extent_type(space) {
            sys::H5S_class_t_H5S_SCALAR => Ok(json!({"class": "H5S_SCALAR"})),
            sys::H5S_class_t_H5S_NULL => Ok(json!({"class": "H5S_NULL"})),
            sys::H5S_class_t_H5S_SIMPLE => {
                let rank = check(
                    f.H5Sget_simple_extent_ndims(space),
                    "H5Sget_simple_extent_ndims",
                )?;
                let mut dims = vec![0u64; rank as usize];
                let mut maxdims = vec![0u64; rank as usize];
                check(
                    f.H5Sget_simple_extent_dims(space, dims.as_mut_ptr(), maxdims.as_mut_ptr()),
                    "H5Sget_simple_extent_dims",
                )?;
                if maxdims == dims {
                    // Not extendible; HSDS's maxdims would read a 0 as unlimited.
                    return Ok(json!({"class": "H5S_SIMPLE", "dims": dims}));
                }
                // HSDS writes an unlimited dimension as 0.
                let maxdims: Vec<Value> = maxdims
                    .iter()
                    .map(|&m| if m == u64::MAX { json!(0) } else { json!(m) })
                    .collect();
                Ok(json!({"class": "H5S_SIMPLE", "dims": dims, "maxdims": maxdims}))
            }
            other => Err(VolError::Invalid(format!("dataspace class {other}"))),
        }
    }
}

/// A new dataspace id for an h5lake shape.
pub fn space_of(api: &Api, shape: &Shape) -> Result<hid_t> {
    let f = &api.f;
    // SAFETY: plain constructors.
    unsafe {
        Ok(match shape {
            Shape::Null => check(f.H5Screate(sys::H5S_class_t_H5S_NULL), "H5Screate")?,
            Shape::Scalar => check(f.H5Screate(sys::H5S_class_t_H5S_SCALAR), "H5Screate")?,
            Shape::Simple { dims, maxdims } => {
                let max = maxdims.as_ref().map_or(std::ptr::null(), |m| m.as_ptr());
                check(
                    f.H5Screate_simple(dims.len() as i32, dims.as_ptr(), max),
                    "H5Screate_simple",
                )?
            }
        })
    }
}

/// HSDS creation properties from a dataset creation property list.
fn dcpl_json(api: &Api, dcpl: hid_t, type_id: hid_t, dt: &Datatype) -> Result<Value> {
    let f = &api.f;
    let mut cp = crate::objects::order::props_of(api, dcpl, false);
    if dcpl <= 0 {
        return Ok(cp);
    }
    // SAFETY: `dcpl` is the caller's property list.
    unsafe {
        match f.H5Pget_layout(dcpl) {
            sys::H5D_layout_t_H5D_CHUNKED => {
                let mut dims = [0u64; 32];
                let rank = check(f.H5Pget_chunk(dcpl, 32, dims.as_mut_ptr()), "H5Pget_chunk")?;
                cp["layout"] = json!({"class": "H5D_CHUNKED", "dims": &dims[..rank as usize]});
            }
            // (Stored as a contiguous dataset is; reported back as asked.)
            sys::H5D_layout_t_H5D_COMPACT => cp["layout"] = json!({"class": "H5D_COMPACT"}),
            _ => {}
        }
        let n = check(f.H5Pget_nfilters(dcpl), "H5Pget_nfilters")?;
        let mut filters = Vec::new();
        for i in 0..n as u32 {
            let (mut flags, mut ncd) = (0u32, 32usize);
            let mut cd = [0u32; 32];
            let mut name = [0 as c_char; 64];
            let mut config = 0u32;
            let id = f.H5Pget_filter2(
                dcpl,
                i,
                &mut flags,
                &mut ncd,
                cd.as_mut_ptr(),
                name.len(),
                name.as_mut_ptr(),
                &mut config,
            );
            if id < 0 {
                return Err(VolError::Hdf5("H5Pget_filter2 failed".into()));
            }
            let label = std::ffi::CStr::from_ptr(name.as_ptr()).to_string_lossy();
            let cd = &cd[..ncd.min(cd.len())];
            filters.push(
                if flags & sys::H5Z_FLAG_OPTIONAL != 0 && h5lake_codecs::skips_optional(id as u64) {
                    h5lake_codecs::skipped_filter_json(id as u64, cd, &label)
                } else {
                    h5lake_codecs::hdf5_filter_json(id as u64, cd, &label)
                },
            );
        }
        if !filters.is_empty() {
            cp["filters"] = json!(filters);
        }
        let mut track_times = false;
        check(
            f.H5Pget_obj_track_times(dcpl, &mut track_times),
            "H5Pget_obj_track_times",
        )?;
        if track_times {
            cp["trackTimes"] = json!(true);
        }
        let mut fill_time = sys::H5D_fill_time_t_H5D_FILL_TIME_IFSET;
        check(f.H5Pget_fill_time(dcpl, &mut fill_time), "H5Pget_fill_time")?;
        if let Some(name) = FILL_TIMES
            .iter()
            .find(|(t, _)| *t == fill_time)
            .map(|(_, n)| n)
        {
            if fill_time != sys::H5D_fill_time_t_H5D_FILL_TIME_IFSET {
                cp["fillTime"] = json!(name);
            }
        }
        let mut status = 0;
        check(
            f.H5Pfill_value_defined(dcpl, &mut status),
            "H5Pfill_value_defined",
        )?;
        if status == sys::H5D_fill_value_t_H5D_FILL_VALUE_USER_DEFINED {
            if let Some(size) = dt.fixed_size() {
                let mut buf = vec![0u8; size.max(f.H5Tget_size(type_id))];
                check(
                    f.H5Pget_fill_value(dcpl, type_id, buf.as_mut_ptr().cast()),
                    "H5Pget_fill_value",
                )?;
                cp["fillValue"] = element_to_json(dt, &buf[..size])
                    .map_err(|e| VolError::Invalid(e.to_string()))?;
            } else if let Ok(vm) = VarMem::of(api, dt, type_id) {
                // A variable-length fill value (h5py: a string dataset's
                // `fillvalue`) comes out as pointers HDF5 allocates.
                let mut buf = vec![0u8; vm.size()];
                check(
                    f.H5Pget_fill_value(dcpl, type_id, buf.as_mut_ptr().cast()),
                    "H5Pget_fill_value",
                )?;
                let item = vm.from_memory(api, &buf)?.pop().unwrap_or_default();
                let scalar = check(f.H5Screate(sys::H5S_class_t_H5S_SCALAR), "H5Screate")?;
                f.H5Treclaim(
                    type_id,
                    scalar,
                    sys::H5P_DEFAULT as hid_t,
                    buf.as_mut_ptr().cast(),
                );
                f.H5Sclose(scalar);
                cp["fillValue"] =
                    vlen_to_json(dt, &item).map_err(|e| VolError::Invalid(e.to_string()))?;
            }
        }
    }
    Ok(cp)
}

/// Whether the dataset was made compact (stored as a contiguous one is).
fn is_compact(o: &Obj, m: &h5lake_engine::DatasetMeta) -> Result<bool> {
    Ok(!m.chunked
        && o.dom
            .get_doc(&m.id)?
            .pointer("/creationProperties/layout/class")
            == Some(&json!("H5D_COMPACT")))
}

/// HDF5 keeps a compact dataset's values in its object header, whose
/// messages hold at most 64 KiB: a bigger one is refused as HDF5 refuses it.
fn compact_fits(space: &Value, type_size: usize) -> Result<()> {
    const MAX_COMPACT_BYTES: u64 = 65532;
    let elements: u64 = match space.get("class").and_then(Value::as_str) {
        Some("H5S_NULL") => 0,
        Some("H5S_SCALAR") => 1,
        _ => space
            .get("dims")
            .and_then(Value::as_array)
            .map_or(0, |d| d.iter().filter_map(Value::as_u64).product()),
    };
    if elements.saturating_mul(type_size as u64) > MAX_COMPACT_BYTES {
        return Err(VolError::Invalid(
            "compact dataset size is bigger than header message maximum size".into(),
        ));
    }
    Ok(())
}

/// With the connector set to `layout=columnar` (see [`crate::info`]):
/// marks the creation properties `cp` of a new dataset of type `dt` and
/// shape `space` columnar (each chunk one Parquet object) where it can be.
///
/// - A chunked compound dataset keeps its chunks.
/// - A contiguous (or compact) one is stored in the hidden chunks h5lake
///   gives large contiguous datasets (about 2 MiB each: a table of 16 M
///   rows of 32 bytes is ~250 Parquet files, not thousands of tiny ones),
///   and is still reported as contiguous: a program sees the layout it
///   asked for.
/// - What the columnar layout cannot hold stays in row layout rather than
///   failing: types other than compounds, compounds with a member type
///   the columnar codec has no column for, filters other than a compressor
///   Parquet has (gzip, zstd, lz4) and shuffle, and datasets with nothing
///   to chunk (scalar, null or empty dataspaces).
fn columnar_props(dt: &Datatype, type_size: usize, space: &Value, cp: &mut Value) {
    if !matches!(dt, Datatype::Compound { .. }) || h5lake_columnar::check_type(dt).is_err() {
        return;
    }
    if h5lake_columnar::Compression::from_filters(cp.get("filters").unwrap_or(&Value::Null))
        .is_err()
    {
        return;
    }
    let chunked = cp.pointer("/layout/class").and_then(Value::as_str) == Some("H5D_CHUNKED");
    if chunked {
        cp["h5lake"] = json!({"chunkFormat": h5lake_engine::chunk_codec::PARQUET});
        return;
    }
    if space.get("class").and_then(Value::as_str) != Some("H5S_SIMPLE")
        || space.get("maxdims").is_some()
    {
        // (a resizable contiguous dataset fails in the engine, as in HDF5)
        return;
    }
    let dims: Vec<u64> = space
        .get("dims")
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_u64).collect())
        .unwrap_or_default();
    if dims.is_empty() || dims.contains(&0) {
        return;
    }
    cp["layout"] = json!({"class": "H5D_CHUNKED",
                          "dims": h5lake_engine::dataset::hidden_chunks(&dims, type_size as u64)});
    cp["h5lake"] = json!({
        "chunkFormat": h5lake_engine::chunk_codec::PARQUET,
        // reported as the contiguous layout it was created with
        "layout": "H5D_CONTIGUOUS",
    });
}

/// HDF5's fill times and their names in HSDS creation properties.
const FILL_TIMES: [(sys::H5D_fill_time_t, &str); 3] = [
    (
        sys::H5D_fill_time_t_H5D_FILL_TIME_ALLOC,
        "H5D_FILL_TIME_ALLOC",
    ),
    (
        sys::H5D_fill_time_t_H5D_FILL_TIME_NEVER,
        "H5D_FILL_TIME_NEVER",
    ),
    (
        sys::H5D_fill_time_t_H5D_FILL_TIME_IFSET,
        "H5D_FILL_TIME_IFSET",
    ),
];

/// Finds (creating intermediate groups when `lcpl` asks) the group that
/// will hold `path`'s last name.
pub fn parent_for_create(
    api: &Api,
    o: &Obj,
    start: &str,
    path: &str,
    lcpl: hid_t,
) -> Result<(String, String)> {
    let (parent, last) = crate::objects::split_last(path);
    if last.is_empty() {
        return Err(VolError::Invalid("an empty name".into()));
    }
    let mut intermediate = 0u32;
    if lcpl > 0 {
        // SAFETY: the caller's link creation property list.
        unsafe {
            api.f
                .H5Pget_create_intermediate_group(lcpl, &mut intermediate)
        };
    }
    let mut cur = if parent.starts_with('/') {
        o.dom.root_id().to_string()
    } else {
        start.to_string()
    };
    for part in parent.split('/').filter(|p| !p.is_empty() && *p != ".") {
        cur = match o.dom.link_get(&cur, part) {
            Ok(link) => crate::objects::link_target(&o.dom, &cur, &link, 0)?,
            Err(h5lake_engine::EngineError::NotFound(_)) if intermediate > 0 => {
                let id = o.dom.create_group(json!({}))?;
                o.dom
                    .link_create(&cur, part, json!({"class": "H5L_TYPE_HARD", "id": id}))?;
                id
            }
            Err(h5lake_engine::EngineError::NotFound(_)) => {
                return Err(VolError::NotFound(format!(
                    "parent group {parent:?} doesn't exist"
                )))
            }
            Err(e) => return Err(e.into()),
        };
    }
    Ok((cur, last.to_string()))
}

/// Fails with "already exists" when `group` has a link `name`.
pub fn ensure_free(o: &Obj, group: &str, name: &str, what: &str) -> Result<()> {
    if o.dom.link_get(group, name).is_ok() {
        return Err(VolError::Exists(format!(
            "unable to create {what} (name {name:?} already exists)"
        )));
    }
    Ok(())
}

pub unsafe extern "C" fn create(
    obj: *mut c_void,
    loc: *const sys::H5VL_loc_params_t,
    name: *const c_char,
    lcpl: hid_t,
    type_id: hid_t,
    space_id: hid_t,
    dcpl: hid_t,
    dapl: hid_t,
    _dxpl: hid_t,
    _req: *mut *mut c_void,
) -> *mut c_void {
    guard("dataset create", null_mut(), || {
        let api = h5().map_err(VolError::Library)?;
        let o = Obj::from_ptr(obj)?;
        crate::storage::check_dcpl(api, dcpl)?;
        let dt = from_hdf5(api, type_id)?;
        let layout = crate::access::of(&o.dom).layout;
        let mappings = crate::virtual_layout::mappings_of(api, dcpl, &o.dom)?;
        let create = || -> Result<String> {
            let space = space_json(api, space_id)?;
            let mut cp = dcpl_json(api, dcpl, type_id, &dt)?;
            if cp.pointer("/layout/class") == Some(&json!("H5D_COMPACT")) {
                compact_fits(&space, api.f.H5Tget_size(type_id))?;
            }
            if let Some(m) = &mappings {
                cp["h5lake"] = json!({ "virtual": m });
            } else if layout == crate::info::Layout::Columnar {
                columnar_props(&dt, api.f.H5Tget_size(type_id), &space, &mut cp);
            }
            Ok(o.dom
                .create_dataset(crate::datatype::type_json(api, o, type_id, &dt), space, cp)?)
        };
        if name.is_null() {
            // H5Dcreate_anon: linked later (H5Olink / H5Lcreate_hard), if at all.
            return with_access(api, o.child(Kind::Dataset(create()?), ""), dapl);
        }
        let start = locate(o, loc)?;
        let (parent, last) = parent_for_create(api, o, &start, c_str(name)?, lcpl)?;
        ensure_free(o, &parent, &last, "dataset")?;
        let id = create()?;
        o.dom
            .link_create(&parent, &last, json!({"class": "H5L_TYPE_HARD", "id": id}))?;
        with_access(api, o.child(Kind::Dataset(id), c_str(name)?), dapl)
    })
}

/// Keeps with a dataset just opened what its access list `dapl` says
/// (see [`Obj::chunk_cache`], [`Obj::vds_access`]).
unsafe fn with_access(api: &Api, obj: *mut c_void, dapl: hid_t) -> Result<*mut c_void> {
    let (mut slots, mut bytes, mut w0) = (0usize, 0usize, 0f64);
    if api
        .f
        .H5Pget_chunk_cache(dapl, &mut slots, &mut bytes, &mut w0)
        < 0
    {
        Obj::free(obj);
        return Err(VolError::Hdf5("H5Pget_chunk_cache failed".into()));
    }
    let prefix = match virtual_prefix(api, dapl) {
        Ok(p) => p,
        Err(e) => {
            Obj::free(obj);
            return Err(e);
        }
    };
    let mut printf_gap = 0u64;
    if api.f.H5Pget_virtual_printf_gap(dapl, &mut printf_gap) < 0 {
        Obj::free(obj);
        return Err(VolError::Hdf5("H5Pget_virtual_printf_gap failed".into()));
    }
    let o = Obj::from_ptr(obj)?;
    o.chunk_cache.set(Some((slots, bytes, w0)));
    // A leading `${ORIGIN}` is the directory of the virtual dataset's
    // file, put in when opened (the list is given back so), as libhdf5 does.
    let prefix = prefix.map(|p| match p.strip_prefix("${ORIGIN}") {
        Some(rest) => {
            let here = std::path::absolute(o.dom.location()).unwrap_or_default();
            let dir = here.parent().map(|d| d.to_string_lossy().into_owned());
            format!("{}/{rest}", dir.unwrap_or_default())
        }
        None => p,
    });
    *o.vds_access.borrow_mut() = VirtualAccess { prefix, printf_gap };
    Ok(obj)
}

/// The virtual prefix on the access list `dapl` (`None`: none set).
unsafe fn virtual_prefix(api: &Api, dapl: hid_t) -> Result<Option<String>> {
    let f = &api.f;
    let n = f.H5Pget_virtual_prefix(dapl, std::ptr::null_mut(), 0);
    if n < 0 {
        return Err(VolError::Hdf5("H5Pget_virtual_prefix failed".into()));
    }
    if n == 0 {
        return Ok(None);
    }
    let mut buf = vec![0u8; n as usize + 1];
    if f.H5Pget_virtual_prefix(dapl, buf.as_mut_ptr().cast(), buf.len()) < 0 {
        return Err(VolError::Hdf5("H5Pget_virtual_prefix failed".into()));
    }
    buf.truncate(n as usize);
    String::from_utf8(buf)
        .map(Some)
        .map_err(|_| VolError::Unsupported("a virtual prefix in non-UTF-8 bytes".into()))
}

/// The dataset `o` is, as its access list makes it (a virtual dataset's
/// sources found under its virtual prefix).
fn meta_of(o: &Obj) -> Result<Arc<DatasetMeta>> {
    let id = dataset_id(o)?;
    Ok(o.dom.dataset_with_access(id, &o.vds_access.borrow())?)
}

/// The extent the program sees of the dataset `o` (see
/// [`h5lake_engine::Domain::extent_seen`]): another process's resize shows
/// after `H5Drefresh`, as in HDF5 (a read of `H5S_ALL` wrote past buffers
/// sized from the extent before). A virtual dataset's extent follows its
/// sources at each look, as HDF5 recomputes it.
fn extent_of(o: &Obj, m: &DatasetMeta) -> Result<Vec<u64>> {
    if m.virtual_map.is_some() {
        return Ok(m.dims.clone());
    }
    Ok(o.dom.extent_seen(dataset_id(o)?, &m.dims))
}

/// `m`'s shape with the extent the program sees.
fn shape_seen(o: &Obj, m: &DatasetMeta) -> Result<Shape> {
    Ok(match &m.shape {
        Shape::Simple { maxdims, .. } => Shape::Simple {
            dims: extent_of(o, m)?,
            maxdims: maxdims.clone(),
        },
        other => other.clone(),
    })
}

pub unsafe extern "C" fn open(
    obj: *mut c_void,
    loc: *const sys::H5VL_loc_params_t,
    name: *const c_char,
    dapl: hid_t,
    _dxpl: hid_t,
    _req: *mut *mut c_void,
) -> *mut c_void {
    guard("dataset open", null_mut(), || {
        let api = h5().map_err(VolError::Library)?;
        let o = Obj::from_ptr(obj)?;
        let opened = crate::objects::open_named(o, loc, name, "d-", "dataset", Kind::Dataset)?;
        with_access(api, opened, dapl)
    })
}

fn dataset_id(o: &Obj) -> Result<&str> {
    match &o.kind {
        Kind::Dataset(id) => Ok(id),
        _ => Err(VolError::BadType("not a dataset".into())),
    }
}

/// Refuses a memory selection of another number of elements than the
/// file's `n`: the transfer would run past the caller's buffer (HDF5
/// leaves this check to the connector).
fn same_count(api: &Api, mem_space: hid_t, n: usize) -> Result<()> {
    if mem_space == crate::selection::ALL {
        return Ok(());
    }
    // SAFETY: `mem_space` is the caller's dataspace id.
    let m = check(
        unsafe { api.f.H5Sget_select_npoints(mem_space) },
        "H5Sget_select_npoints",
    )? as usize;
    if m != n {
        return Err(VolError::Invalid(format!(
            "src and dest dataspaces have different number of elements selected \
             (memory {m}, file {n})"
        )));
    }
    Ok(())
}

/// Refuses a transfer list with a data transform (`H5Pset_data_transform`):
/// the connector does not apply them, and a transform ignored would read
/// and store other values than the program asked for.
fn no_transform(api: &Api, dxpl: hid_t) -> Result<()> {
    if dxpl == sys::H5P_DEFAULT as hid_t {
        return Ok(());
    }
    let f = &api.f;
    let stack = sys::H5E_DEFAULT as hid_t;
    // SAFETY: `dxpl` is the caller's transfer list; a null buffer of size 0
    // asks for the expression's length only. A list without a transform
    // (the usual one) makes the call fail: its error is neither kept nor
    // printed (a C program printed a stack on every read and write).
    let len = unsafe {
        let (mut func, mut data) = (None, std::ptr::null_mut());
        let saved = f.H5Eget_auto2(stack, &mut func, &mut data) >= 0;
        if saved {
            f.H5Eset_auto2(stack, None, std::ptr::null_mut());
        }
        f.H5Epause_stack(stack);
        let len = f.H5Pget_data_transform(dxpl, std::ptr::null_mut(), 0);
        f.H5Eresume_stack(stack);
        if saved {
            f.H5Eset_auto2(stack, func, data);
        }
        len
    };
    if len > 0 {
        return Err(VolError::Unsupported(
            "data transforms (H5Pset_data_transform) are not applied by the h5lake connector; \
             transform the values in the program instead"
                .into(),
        ));
    }
    Ok(())
}

unsafe fn read_one(
    api: &Api,
    o: &Obj,
    mem_type: hid_t,
    mem_space: hid_t,
    file_space: hid_t,
    dxpl: hid_t,
    buf: *mut u8,
) -> Result<()> {
    let id = dataset_id(o)?;
    let m = meta_of(o)?;
    let sel = file_selection(api, file_space, &extent_of(o, &m)?)?;
    let n = sel.num_elements() as usize;
    same_count(api, mem_space, n)?;
    no_transform(api, dxpl)?;
    if n == 0 {
        return Ok(());
    }
    let _alloc = crate::memory::use_allocator_of(api, dxpl);
    let space = if mem_space == crate::selection::ALL {
        file_space
    } else {
        mem_space
    };
    if refs::contains(&m.dtype) {
        let refs = Refs::new(api, o);
        let (packed, msize) = match &m.dtype {
            Datatype::RegionReference => (
                refs.regions_to_memory(&o.dom.read_vlen(id, &sel)?, mem_type)?,
                regions::SIZE,
            ),
            Datatype::Vlen { base } => (
                refs.vlen_to_memory(base, &o.dom.read_vlen(id, &sel)?, mem_type)?,
                std::mem::size_of::<sys::hvl_t>(),
            ),
            dt => {
                let mut data = vec![0u8; n * dt.fixed_size().unwrap_or(0)];
                o.dom.read(id, &sel, &mut data)?;
                (
                    refs.to_memory(dt, &data, n, mem_type)?,
                    api.f.H5Tget_size(mem_type),
                )
            }
        };
        return scatter(api, space, msize, &packed, buf);
    }
    // A memory type without some stored members reads onto the caller's
    // elements: their other members (a program reading a compound member
    // by member) keep their values.
    let onto_caller = !m.dtype.is_variable() && lacks_members(api, &m.dtype, mem_type)?;
    if let (Some(fsize), false) = (m.dtype.fixed_size(), m.dtype.is_variable() || onto_caller) {
        let msize = api.f.H5Tget_size(mem_type);
        let run = if msize >= fsize {
            contiguous_offset(api, space, msize)?
        } else {
            None
        };
        if let Some(at) = run {
            // Straight into the caller's buffer, converted there if need be.
            crate::memory::check_conversion(api, &m.dtype, mem_type)?;
            let out = std::slice::from_raw_parts_mut(buf.add(at), n * msize);
            o.dom
                .read_with(&m, &sel, None, &mut out[..n * fsize], false)?;
            return to_memory_in_place(api, &m.dtype, out, n, mem_type, dxpl);
        }
    }
    let (packed, msize) = if m.dtype.is_variable() {
        let vm = VarMem::of(api, &m.dtype, mem_type)?;
        (vm.to_memory(api, &o.dom.read_vlen(id, &sel)?)?, vm.size())
    } else {
        let mut data = vec![0u8; n * m.dtype.fixed_size().unwrap_or(0)];
        o.dom.read(id, &sel, &mut data)?;
        let msize = api.f.H5Tget_size(mem_type);
        let background = if onto_caller {
            let mut b = vec![0u8; n * msize];
            gather(api, space, msize, buf, &mut b)?;
            Some(b)
        } else {
            None
        };
        (
            fixed_to_memory(api, &m.dtype, data, n, mem_type, background, dxpl)?,
            msize,
        )
    };
    scatter(api, space, msize, &packed, buf)
}

unsafe fn write_one(
    api: &Api,
    o: &Obj,
    mem_type: hid_t,
    mem_space: hid_t,
    file_space: hid_t,
    dxpl: hid_t,
    buf: *const u8,
) -> Result<()> {
    let id = dataset_id(o)?;
    let m = meta_of(o)?;
    if o.dom.readonly() {
        return Err(VolError::Engine(h5lake_engine::EngineError::ReadOnly(
            "no write intent on file".into(),
        )));
    }
    let sel = file_selection(api, file_space, &extent_of(o, &m)?)?;
    let n = sel.num_elements() as usize;
    same_count(api, mem_space, n)?;
    no_transform(api, dxpl)?;
    if n == 0 {
        return Ok(());
    }
    let space = if mem_space == crate::selection::ALL {
        file_space
    } else {
        mem_space
    };
    if refs::contains(&m.dtype) {
        let refs = Refs::new(api, o);
        if m.dtype == Datatype::RegionReference {
            let mut packed = vec![0u8; n * regions::SIZE];
            gather(api, space, regions::SIZE, buf, &mut packed)?;
            o.dom
                .write_vlen(id, &sel, &refs.regions_from_memory(&packed, n, mem_type)?)?;
        } else if let Datatype::Vlen { base } = &m.dtype {
            let mut packed = vec![0u8; n * std::mem::size_of::<sys::hvl_t>()];
            gather(
                api,
                space,
                std::mem::size_of::<sys::hvl_t>(),
                buf,
                &mut packed,
            )?;
            o.dom.write_vlen(
                id,
                &sel,
                &refs.vlen_from_memory(base, &packed, n, mem_type)?,
            )?;
        } else {
            let msize = api.f.H5Tget_size(mem_type);
            let mut packed = vec![0u8; n * msize];
            gather(api, space, msize, buf, &mut packed)?;
            o.dom
                .write(id, &sel, &refs.from_memory(&m.dtype, &packed, n, mem_type)?)?;
        }
        return Ok(());
    }
    if m.dtype.is_variable() {
        let vm = VarMem::of(api, &m.dtype, mem_type)?;
        let mut packed = vec![0u8; n * vm.size()];
        gather(api, space, vm.size(), buf, &mut packed)?;
        o.dom.write_vlen(id, &sel, &vm.from_memory(api, &packed)?)?;
        return Ok(());
    }
    let msize = api.f.H5Tget_size(mem_type);
    if !m.dtype.is_variable()
        && m.dtype.fixed_size() == Some(msize)
        && same_type(api, &m.dtype, mem_type)?
    {
        if let Some(at) = contiguous_offset(api, space, msize)? {
            // The caller's buffer is already the stored form.
            o.dom
                .write_with(&m, &sel, std::slice::from_raw_parts(buf.add(at), n * msize))?;
            return Ok(());
        }
    }
    let mut packed = vec![0u8; n * msize];
    gather(api, space, msize, buf, &mut packed)?;
    let current = if lacks_members(api, &m.dtype, mem_type)? {
        let mut cur = vec![0u8; n * m.dtype.fixed_size().unwrap_or(0)];
        o.dom.read(id, &sel, &mut cur)?;
        Some(cur)
    } else {
        None
    };
    o.dom.write(
        id,
        &sel,
        &fixed_from_memory(api, &m.dtype, packed, n, mem_type, current, dxpl)?,
    )?;
    Ok(())
}

pub unsafe extern "C" fn read(
    count: usize,
    dset: *mut *mut c_void,
    mem_type: *mut hid_t,
    mem_space: *mut hid_t,
    file_space: *mut hid_t,
    dxpl: hid_t,
    buf: *mut *mut c_void,
    _req: *mut *mut c_void,
) -> sys::herr_t {
    guard("dataset read", -1, || {
        let api = h5().map_err(VolError::Library)?;
        for i in 0..count {
            let o = Obj::from_ptr(*dset.add(i))?;
            read_one(
                api,
                o,
                *mem_type.add(i),
                *mem_space.add(i),
                *file_space.add(i),
                dxpl,
                (*buf.add(i)).cast(),
            )?;
        }
        Ok(0)
    })
}

pub unsafe extern "C" fn write(
    count: usize,
    dset: *mut *mut c_void,
    mem_type: *mut hid_t,
    mem_space: *mut hid_t,
    file_space: *mut hid_t,
    dxpl: hid_t,
    buf: *mut *const c_void,
    _req: *mut *mut c_void,
) -> sys::herr_t {
    guard("dataset write", -1, || {
        let api = h5().map_err(VolError::Library)?;
        for i in 0..count {
            let o = Obj::from_ptr(*dset.add(i))?;
            write_one(
                api,
                o,
                *mem_type.add(i),
                *mem_space.add(i),
                *file_space.add(i),
                dxpl,
                (*buf.add(i)).cast(),
            )?;
        }
        Ok(0)
    })
}

pub unsafe extern "C" fn get(
    obj: *mut c_void,
    args: *mut sys::H5VL_dataset_get_args_t,
    _dxpl: hid_t,
    _req: *mut *mut c_void,
) -> sys::herr_t {
    guard("dataset get", -1, || {
        let api = h5().map_err(VolError::Library)?;
        let o = Obj::from_ptr(obj)?;
        let m = meta_of(o)?;
        let a = &mut *args;
        match a.op_type {
            sys::H5VL_dataset_get_t_H5VL_DATASET_GET_SPACE => {
                a.args.get_space.space_id = space_of(api, &shape_seen(o, &m)?)?
            }
            sys::H5VL_dataset_get_t_H5VL_DATASET_GET_TYPE => {
                let committed = m.committed_type.as_deref();
                if let Some(hid) = committed.and_then(|tid| crate::datatype::open_committed(o, tid))
                {
                    a.args.get_type.type_id = hid;
                    return Ok(0);
                }
                let t = to_hdf5(api, m.laid_out.as_ref().unwrap_or(&m.dtype))?;
                a.args.get_type.type_id = t.0;
                std::mem::forget(t);
            }
            sys::H5VL_dataset_get_t_H5VL_DATASET_GET_DCPL => {
                a.args.get_dcpl.dcpl_id = dcpl_of(api, &o.dom, &m)?
            }
            sys::H5VL_dataset_get_t_H5VL_DATASET_GET_DAPL => {
                let dapl = check(api.f.H5Pcreate(api.g.p_dataset_access.id()), "H5Pcreate")?;
                if let Some((slots, bytes, w0)) = o.chunk_cache.get() {
                    if api.f.H5Pset_chunk_cache(dapl, slots, bytes, w0) < 0 {
                        api.f.H5Pclose(dapl);
                        return Err(VolError::Hdf5("H5Pset_chunk_cache failed".into()));
                    }
                }
                let access = o.vds_access.borrow();
                if access.printf_gap > 0
                    && api.f.H5Pset_virtual_printf_gap(dapl, access.printf_gap) < 0
                {
                    api.f.H5Pclose(dapl);
                    return Err(VolError::Hdf5("H5Pset_virtual_printf_gap failed".into()));
                }
                if let Some(p) = access.prefix.as_deref() {
                    // (It came from an access list: it has no NUL byte.)
                    let p = CString::new(p).unwrap_or_default();
                    if api.f.H5Pset_virtual_prefix(dapl, p.as_ptr()) < 0 {
                        api.f.H5Pclose(dapl);
                        return Err(VolError::Hdf5("H5Pset_virtual_prefix failed".into()));
                    }
                }
                a.args.get_dapl.dapl_id = dapl;
            }
            sys::H5VL_dataset_get_t_H5VL_DATASET_GET_SPACE_STATUS => {
                // Chunks never written are not allocated, as in HDF5; the
                // values of a dataset linked to a file or virtual dataset
                // are where they are.
                let status = if m.link.is_some() || m.virtual_map.is_some() || is_compact(o, &m)? {
                    sys::H5D_space_status_t_H5D_SPACE_STATUS_ALLOCATED
                } else {
                    let stored = o.dom.stored_chunks(dataset_id(o)?)?.len() as u64;
                    let all: u64 = m
                        .dims
                        .iter()
                        .zip(&m.chunk)
                        .map(|(&d, &c)| d.div_ceil(c.max(1)))
                        .product();
                    if stored == 0 && all > 0 {
                        sys::H5D_space_status_t_H5D_SPACE_STATUS_NOT_ALLOCATED
                    } else if stored < all {
                        sys::H5D_space_status_t_H5D_SPACE_STATUS_PART_ALLOCATED
                    } else {
                        sys::H5D_space_status_t_H5D_SPACE_STATUS_ALLOCATED
                    }
                };
                *a.args.get_space_status.status = status
            }
            sys::H5VL_dataset_get_t_H5VL_DATASET_GET_STORAGE_SIZE if is_compact(o, &m)? => {
                // A compact dataset's values are allocated with it.
                *a.args.get_storage_size.storage_size =
                    m.dims.iter().product::<u64>() * m.dtype.fixed_size().unwrap_or(0) as u64;
            }
            sys::H5VL_dataset_get_t_H5VL_DATASET_GET_STORAGE_SIZE => {
                // The bytes of the dataset's chunk objects, as h5lake's
                // Python API gives them.
                *a.args.get_storage_size.storage_size = o
                    .dom
                    .stored_chunks(dataset_id(o)?)?
                    .iter()
                    .map(|(_, size)| size)
                    .sum()
            }
            other => {
                return Err(VolError::Unsupported(format!(
                    "dataset get operation {other}"
                )))
            }
        }
        Ok(0)
    })
}

/// A dataset creation property list describing `m`.
fn dcpl_of(
    api: &Api,
    dom: &h5lake_engine::Domain,
    m: &h5lake_engine::DatasetMeta,
) -> Result<hid_t> {
    let f = &api.f;
    // SAFETY: a new list, filled and handed to the caller.
    unsafe {
        let dcpl = check(f.H5Pcreate(api.g.p_dataset_create.id()), "H5Pcreate")?;
        let doc = dom.get_doc(&m.id)?;
        if crate::objects::order::tracked(dom, &m.id) {
            crate::objects::order::set(api, dcpl, false);
        }
        if m.chunked {
            check(
                f.H5Pset_chunk(dcpl, m.chunk.len() as i32, m.chunk.as_ptr()),
                "H5Pset_chunk",
            )?;
            let chunk_bytes =
                m.chunk.iter().product::<u64>() * m.dtype.fixed_size().unwrap_or(16) as u64;
            // The pipeline's filters, and where the dataset's filters list
            // optional ones recorded as skipped (no pipeline has them), those.
            let entries = doc
                .pointer("/creationProperties/filters")
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default();
            let mut applied = m.pipeline.filters.iter();
            let es = m.dtype.filter_elem_size();
            for e in &entries {
                if !h5lake_codecs::is_skipped_entry(e) {
                    if let Some(flt) = applied.next() {
                        set_filter(api, dcpl, flt, es, chunk_bytes)?;
                    }
                    continue;
                }
                let id = e.get("id").and_then(Value::as_u64).unwrap_or(0);
                let cd: Vec<u32> = e
                    .get("parameters")
                    .and_then(Value::as_array)
                    .map(|p| {
                        p.iter()
                            .filter_map(Value::as_u64)
                            .map(|x| x as u32)
                            .collect()
                    })
                    .unwrap_or_default();
                check(
                    f.H5Pset_filter(
                        dcpl,
                        id as i32,
                        sys::H5Z_FLAG_OPTIONAL,
                        cd.len(),
                        cd.as_ptr(),
                    ),
                    "adding a filter to the creation property list",
                )?;
            }
            for flt in applied {
                set_filter(api, dcpl, flt, es, chunk_bytes)?;
            }
        }
        if !m.chunked
            && doc.pointer("/creationProperties/layout/class") == Some(&json!("H5D_COMPACT"))
        {
            check(
                f.H5Pset_layout(dcpl, sys::H5D_layout_t_H5D_COMPACT),
                "H5Pset_layout",
            )?;
        }
        let tracked = doc.pointer("/creationProperties/trackTimes") == Some(&Value::Bool(true));
        check(
            f.H5Pset_obj_track_times(dcpl, tracked),
            "H5Pset_obj_track_times",
        )?;
        let stored_time = doc
            .pointer("/creationProperties/fillTime")
            .and_then(Value::as_str);
        if let Some((t, _)) = FILL_TIMES.iter().find(|(_, n)| Some(*n) == stored_time) {
            check(f.H5Pset_fill_time(dcpl, *t), "H5Pset_fill_time")?;
        }
        // The declared fill value (which `m.fill` is not under "fill time never").
        let invalid = |e: h5lake_types::TypeError| VolError::Invalid(e.to_string());
        let declared = match doc.get("creationProperties") {
            Some(cprops) => h5lake_types::declared_fill(&m.dtype, cprops).map_err(invalid)?,
            None => None,
        };
        if let (Some(fsize), Some(fill)) = (m.dtype.fixed_size(), &declared) {
            if fill.len() == fsize && fill.iter().any(|b| *b != 0) {
                let t = to_hdf5(api, &m.dtype)?;
                check(
                    f.H5Pset_fill_value(dcpl, t.0, fill.as_ptr().cast()),
                    "H5Pset_fill_value",
                )?;
            }
        } else if let Some(fill) = declared.filter(|_| m.dtype.is_variable()) {
            let t = to_hdf5(api, &m.dtype)?;
            if let Ok(vm) = VarMem::of(api, &m.dtype, t.0) {
                let mut mem = vm.to_memory(api, std::slice::from_ref(&fill))?;
                // The list keeps a copy; the parts made here are ours to free.
                let status = f.H5Pset_fill_value(dcpl, t.0, mem.as_ptr().cast());
                let scalar = check(f.H5Screate(sys::H5S_class_t_H5S_SCALAR), "H5Screate")?;
                f.H5Treclaim(
                    t.0,
                    scalar,
                    sys::H5P_DEFAULT as hid_t,
                    mem.as_mut_ptr().cast(),
                );
                f.H5Sclose(scalar);
                check(status, "H5Pset_fill_value")?;
            }
        }
        crate::virtual_layout::set_mappings(api, dcpl, dom, m)?;
        Ok(dcpl)
    }
}

/// The chunk queries of HDF5's native dataset API (`H5Dget_num_chunks`,
/// `H5Dget_chunk_info`, `H5Dget_chunk_info_by_coord`, `H5Dchunk_iter`,
/// `H5Dget_chunk_storage_size`), which HDF5 hands to every connector as
/// dataset "optional" operations. A chunk is an object of its own in
/// h5lake, so its byte offset is 0: the start of that object.
pub unsafe extern "C" fn optional(
    obj: *mut c_void,
    args: *mut sys::H5VL_optional_args_t,
    _dxpl: hid_t,
    _req: *mut *mut c_void,
) -> sys::herr_t {
    guard("dataset optional", -1, || {
        let o = Obj::from_ptr(obj)?;
        let id = dataset_id(o)?;
        let a = &mut *args;
        let n = &mut *a.args.cast::<sys::H5VL_native_dataset_optional_args_t>();
        let m = o.dom.dataset(id)?;
        let chunk_query = |what: &str| -> Result<Vec<(Vec<u64>, u64)>> {
            if !m.chunked {
                return Err(VolError::BadType(format!("{what}: not a chunked dataset")));
            }
            // Linked and columnar chunks are no HDF5 chunk objects of the
            // store: refused by name rather than counted as none.
            h5lake_engine::check_own_chunks(&m, what)?;
            Ok(o.dom.stored_chunks(id)?)
        };
        let offset_of = |coords: &[u64]| -> Vec<u64> {
            coords.iter().zip(&m.chunk).map(|(c, d)| c * d).collect()
        };
        match a.op_type as u32 {
            sys::H5VL_NATIVE_DATASET_GET_NUM_CHUNKS => {
                *n.get_num_chunks.nchunks = chunk_query("counting chunks")?.len() as u64;
            }
            sys::H5VL_NATIVE_DATASET_GET_CHUNK_INFO_BY_IDX => {
                let g = &mut n.get_chunk_info_by_idx;
                let chunks = chunk_query("chunk info")?;
                let (coords, size) = chunks.get(g.chk_index as usize).ok_or_else(|| {
                    VolError::Invalid(format!(
                        "chunk index {} out of range ({} chunks stored)",
                        g.chk_index,
                        chunks.len()
                    ))
                })?;
                let off = offset_of(coords);
                if !g.offset.is_null() {
                    std::ptr::copy_nonoverlapping(off.as_ptr(), g.offset, off.len());
                }
                put(g.filter_mask, 0);
                put(g.addr, 0);
                put(g.size, *size);
            }
            sys::H5VL_NATIVE_DATASET_GET_CHUNK_INFO_BY_COORD => {
                let g = &mut n.get_chunk_info_by_coord;
                let chunks = chunk_query("chunk info")?;
                let rank = m.chunk.len();
                let at = std::slice::from_raw_parts(g.offset, rank);
                let coords: Vec<u64> = at.iter().zip(&m.chunk).map(|(o, d)| o / d).collect();
                match chunks.iter().find(|(c, _)| *c == coords) {
                    Some((_, size)) => {
                        put(g.filter_mask, 0);
                        put(g.addr, 0);
                        put(g.size, *size);
                    }
                    // Never written: no storage, as HDF5 reports it.
                    None => {
                        put(g.filter_mask, 0);
                        put(g.addr, u64::MAX); // HADDR_UNDEF
                        put(g.size, 0);
                    }
                }
            }
            sys::H5VL_NATIVE_DATASET_GET_CHUNK_STORAGE_SIZE => {
                let g = &mut n.get_chunk_storage_size;
                let chunks = chunk_query("chunk storage size")?;
                let at = std::slice::from_raw_parts(g.offset, m.chunk.len());
                let coords: Vec<u64> = at.iter().zip(&m.chunk).map(|(o, d)| o / d).collect();
                let size = chunks
                    .iter()
                    .find(|(c, _)| *c == coords)
                    .map_or(0, |(_, s)| *s);
                put(g.size, size);
            }
            sys::H5VL_NATIVE_DATASET_CHUNK_ITER => {
                let it = &mut n.chunk_iter;
                let op = it.op.ok_or_else(|| {
                    VolError::Invalid("chunk iteration without a callback".into())
                })?;
                for (coords, size) in chunk_query("iterating chunks")? {
                    let off = offset_of(&coords);
                    let rc = op(off.as_ptr(), 0, 0, size, it.op_data);
                    if rc < 0 {
                        return Err(VolError::Hdf5("the chunk iteration callback failed".into()));
                    }
                    if rc > 0 {
                        break;
                    }
                }
            }
            other => {
                return Err(VolError::Unsupported(format!(
                "native dataset operation {other} (direct chunk I/O and other native-layout calls)"
            )))
            }
        }
        Ok(0)
    })
}

/// Writes through an out-pointer HDF5 may leave null.
unsafe fn put<T>(p: *mut T, v: T) {
    if !p.is_null() {
        *p = v;
    }
}

pub unsafe extern "C" fn specific(
    obj: *mut c_void,
    args: *mut sys::H5VL_dataset_specific_args_t,
    _dxpl: hid_t,
    _req: *mut *mut c_void,
) -> sys::herr_t {
    guard("dataset specific", -1, || {
        let o = Obj::from_ptr(obj)?;
        let id = dataset_id(o)?;
        let a = &mut *args;
        match a.op_type {
            sys::H5VL_dataset_specific_t_H5VL_DATASET_SET_EXTENT => {
                let rank = o.dom.dataset(id)?.dims.len();
                let dims = std::slice::from_raw_parts(a.args.set_extent.size, rank).to_vec();
                o.dom.resize(id, &dims)?;
                o.dom.see_extent(id, &dims);
            }
            // What this program wrote reaches the store for other
            // processes (an SWMR writer's H5Dflush: readers saw nothing
            // before the file's flush or close).
            sys::H5VL_dataset_specific_t_H5VL_DATASET_FLUSH => o.dom.flush()?,
            // Another process's resize shows from here on.
            sys::H5VL_dataset_specific_t_H5VL_DATASET_REFRESH => {
                o.dom.see_extent(id, &o.dom.dataset(id)?.dims);
            }
            other => return Err(VolError::Unsupported(format!("dataset operation {other}"))),
        }
        Ok(0)
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

/// Adds `flt` to a dataset creation property list.
///
/// # Safety
/// `dcpl` is a dataset creation property list.
unsafe fn set_filter(
    api: &Api,
    dcpl: hid_t,
    flt: &Filter,
    elem_size: usize,
    chunk_bytes: u64,
) -> Result<()> {
    let f = &api.f;
    if flt.id() == 0 {
        // (A stored entry naming no filter id, which h5lake cannot apply
        // either: nothing HDF5 could record.)
        return Ok(());
    }
    let cd = flt.hdf5_client_data(elem_size, chunk_bytes);
    let status = match flt {
        Filter::Deflate { level } => f.H5Pset_deflate(dcpl, *level),
        // With the element size as its parameter, as HDF5 records it when
        // a dataset is made (H5Pset_shuffle leaves it to that moment).
        Filter::Shuffle => f.H5Pset_filter(
            dcpl,
            sys::H5Z_FILTER_SHUFFLE as i32,
            sys::H5Z_FLAG_OPTIONAL,
            1,
            [elem_size as std::ffi::c_uint].as_ptr(),
        ),
        Filter::Fletcher32 => f.H5Pset_fletcher32(dcpl),
        // Optional: the property list may name a filter this process has
        // not loaded (h5lake decodes it itself).
        _ => f.H5Pset_filter(
            dcpl,
            flt.id() as i32,
            sys::H5Z_FLAG_OPTIONAL,
            cd.len(),
            cd.as_ptr(),
        ),
    };
    check(status, "adding a filter to the creation property list").map(|_| ())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn compound() -> Datatype {
        Datatype::from_json(&json!({"class": "H5T_COMPOUND", "fields": [
            {"name": "a", "type": "H5T_STD_I32LE"}, {"name": "b", "type": "H5T_IEEE_F64LE"}]}))
        .unwrap()
    }

    #[test]
    fn columnar_props_marks_compounds_only() {
        let space = json!({"class": "H5S_SIMPLE", "dims": [1000]});
        // contiguous: in hidden chunks of about 2 MiB, reported contiguous
        let mut cp = json!({});
        columnar_props(&compound(), 12, &space, &mut cp);
        assert_eq!(cp["h5lake"]["chunkFormat"], "parquet");
        assert_eq!(cp["h5lake"]["layout"], "H5D_CONTIGUOUS");
        assert_eq!(cp["layout"]["dims"], json!([1000]));
        let big = json!({"class": "H5S_SIMPLE", "dims": [16_000_000]});
        let mut cp = json!({});
        columnar_props(&compound(), 32, &big, &mut cp);
        assert_eq!(cp["layout"]["dims"], json!([62_500]));
        // chunked: kept
        let mut cp = json!({"layout": {"class": "H5D_CHUNKED", "dims": [10]},
                            "filters": [{"class": "H5Z_FILTER_DEFLATE", "id": 1, "level": 4}]});
        columnar_props(&compound(), 12, &space, &mut cp);
        assert_eq!(cp["h5lake"], json!({"chunkFormat": "parquet"}));
        assert_eq!(cp["layout"]["dims"], json!([10]));
        // stays row layout: not a compound, a filter Parquet lacks, a
        // scalar or empty dataspace
        let plain = Datatype::from_json(&json!("H5T_STD_I32LE")).unwrap();
        for (dt, space, mut cp) in [
            (plain, space.clone(), json!({})),
            (
                compound(),
                space.clone(),
                json!({"layout": {"class": "H5D_CHUNKED", "dims": [10]},
                       "filters": [{"class": "H5Z_FILTER_FLETCHER32", "id": 3}]}),
            ),
            (compound(), json!({"class": "H5S_SCALAR"}), json!({})),
            (
                compound(),
                json!({"class": "H5S_SIMPLE", "dims": [0]}),
                json!({}),
            ),
        ] {
            columnar_props(&dt, 12, &space, &mut cp);
            assert!(cp.get("h5lake").is_none(), "{cp}");
        }
    }
}
