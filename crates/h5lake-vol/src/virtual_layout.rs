//! Virtual datasets through the connector: the mappings a program puts on
//! a creation list (`H5Pset_virtual`, h5py's `create_virtual_dataset`) are
//! stored as h5lake's (`h5lake.virtual`, read by the engine), and given
//! back on the creation list a program asks of the dataset.
//!
//! A source file is another store (every file a program names through the
//! connector is one): named as the program named it, found when read as
//! libhdf5 finds it — absolute, under `$HDF5_VDS_PREFIX`, or beside the
//! virtual dataset's store — and `"."`, or the store itself by name, is the
//! store of the virtual dataset.

use std::ffi::{c_char, CString};
use std::path::{Path, PathBuf};

use h5lake_engine::virtual_ds::{
    is_printf_name, pair_runs, printf_name, printf_selection, same_shape, source_name,
    stored_source_name, whole_source, ElementRuns, Run,
};
use h5lake_engine::{DatasetMeta, Domain, DomainOptions, OpenMode};
use serde_json::{json, Value};

use crate::api::Api;
use crate::error::{check, Result, VolError};
use crate::sys::{self, hid_t};

/// The mappings on the creation list `dcpl`, as stored (`None`: not a
/// virtual layout).
///
/// A mapping of an irregular hyperslab on either side (libhdf5 itself
/// refuses point selections in mappings), or of
/// selections of other shapes, is stored as the regular mappings that pair
/// the same elements (see [`pair_runs`]).
///
/// # Errors
/// Mappings h5lake cannot hold, named: printf-style source names; pairings
/// needing more than [`h5lake_engine::virtual_ds::MAX_PAIRED_MAPPINGS`].
pub unsafe fn mappings_of(api: &Api, dcpl: hid_t, dom: &Domain) -> Result<Option<Value>> {
    let f = &api.f;
    if dcpl <= 0 || f.H5Pget_layout(dcpl) != sys::H5D_layout_t_H5D_VIRTUAL {
        return Ok(None);
    }
    let mut n = 0usize;
    check(f.H5Pget_virtual_count(dcpl, &mut n), "H5Pget_virtual_count")?;
    let mut out = Vec::with_capacity(n);
    for i in 0..n {
        let vspace = Space(check(
            f.H5Pget_virtual_vspace(dcpl, i),
            "H5Pget_virtual_vspace",
        )?);
        let sspace = Space(check(
            f.H5Pget_virtual_srcspace(dcpl, i),
            "H5Pget_virtual_srcspace",
        )?);
        let file = name_of(|b, l| f.H5Pget_virtual_filename(dcpl, i, b, l))?;
        let given = name_of(|b, l| f.H5Pget_virtual_dsetname(dcpl, i, b, l))?;
        if is_printf_name(&file) || is_printf_name(&given) {
            out.push(printf_mapping(
                api,
                dom,
                (vspace.0, sspace.0),
                &file,
                &given,
                i,
            )?);
            continue;
        }
        let unprintf = |n: &str| source_name(n).map_err(VolError::Unsupported);
        let (file, given) = (unprintf(&file)?, unprintf(&given)?);
        let dset = if given.starts_with('/') {
            given.clone()
        } else {
            format!("/{given}")
        };
        let hdf5 = hdf5_file_of(dom, &file);
        let store = store_of(dom, &file);
        let dst = match runs(api, vspace.0)? {
            Sel::Nothing => continue, // a mapping of nothing
            Sel::Whole => {
                return Err(VolError::Unsupported(format!(
                    "virtual mapping {i}: a virtual selection of no extent"
                )))
            }
            sel => sel,
        };
        // A dataset of an HDF5 file: linked into the store (its values
        // left in the file), as `load --link` and h5lake's own
        // `create_virtual_dataset` link one; one that cannot be linked
        // reads as fill, and the warning given when it is read says why.
        let linked = hdf5
            .as_ref()
            .map(|path| h5lake_hdf5::link_dataset(dom, path, &dset).map_err(|e| e.to_string()));
        let src = match runs(api, sspace.0)? {
            Sel::Nothing => continue,
            // The whole source, of the extent it has now.
            Sel::Whole => match &dst {
                Sel::Runs(dst) => {
                    let extent = match &linked {
                        Some(Ok(id)) => dom.dataset(id).ok().map(|m| m.dims.clone()),
                        Some(Err(_)) => None,
                        None => source_extent(dom, store.as_str(), &dset),
                    };
                    Sel::Runs(whole_source(extent.as_deref(), dst))
                }
                _ => {
                    return Err(VolError::Unsupported(format!(
                        "virtual mapping {i}: an irregular virtual selection mapped from a \
                         source selection of no extent"
                    )))
                }
            },
            sel => sel,
        };
        let pieces = match (dst, src) {
            (Sel::Runs(d), Sel::Runs(s)) if same_shape(&d, &s) => vec![(d, s)],
            _ => pair_runs(&elements(api, vspace.0)?, &elements(api, sspace.0)?)
                .map_err(|e| VolError::Invalid(format!("virtual mapping {i}: {e}")))?
                .into_iter()
                .map(|(d, s)| {
                    let json = |r: Vec<Run>| r.into_iter().map(Run::to_json).collect();
                    (json(d), json(s))
                })
                .collect(),
        };
        let source = SourceOf {
            file: &file,
            given: &given,
            dset: &dset,
            hdf5,
            linked,
            store,
        };
        out.extend(pieces.into_iter().map(|(d, s)| source.mapping(d, s)));
    }
    Ok(Some(Value::Array(out)))
}

/// A mapping's source dataset `dset` (named `given`) in the source file
/// `file`: an HDF5 file (`hdf5`, linked as `linked`) or a store (`store`).
struct SourceOf<'a> {
    file: &'a str,
    given: &'a str,
    dset: &'a str,
    hdf5: Option<PathBuf>,
    linked: Option<std::result::Result<String, String>>,
    store: Value,
}

impl SourceOf<'_> {
    /// The stored mapping of `dst` in the virtual dataset from `src` of it.
    fn mapping(&self, dst: Vec<Value>, src: Vec<Value>) -> Value {
        let mut mapping = match (&self.hdf5, &self.linked) {
            (Some(path), Some(found)) => {
                let mut m = json!({
                    "store": null,
                    "file": path.to_string_lossy(),
                    "id": found.as_ref().ok(),
                    "path": self.dset,
                    "src": src,
                    "dst": dst,
                });
                if let Err(why) = found {
                    m["why"] = json!(why);
                }
                if Path::new(self.file) != path.as_path() {
                    // (Given back as the program named it.)
                    m["file_name"] = json!(self.file);
                }
                m
            }
            _ => json!({
                "store": self.store,
                "path": self.dset,
                "src": src,
                "dst": dst,
            }),
        };
        if self.given != self.dset {
            // (Given back as the program named it, as HDF5 does.)
            mapping["name"] = json!(self.given);
        }
        mapping
    }
}

/// Adds the mappings of the virtual dataset `m` of `dom` to the creation
/// list `dcpl` (the layout becomes virtual, mappings or not): unlimited
/// ones as made, not as the sources' extents resolve them now.
pub unsafe fn set_mappings(api: &Api, dcpl: hid_t, dom: &Domain, m: &DatasetMeta) -> Result<()> {
    if m.virtual_map.is_none() {
        return Ok(());
    }
    let doc = dom.get_doc(&m.id)?;
    let Some(list) = doc.pointer("/h5lake/virtual").and_then(Value::as_array) else {
        return Ok(());
    };
    let f = &api.f;
    check(
        f.H5Pset_layout(dcpl, sys::H5D_layout_t_H5D_VIRTUAL),
        "H5Pset_layout",
    )?;
    for mp in list {
        let runs = |k: &str| mp[k].as_array().cloned().unwrap_or_default();
        let (dst, src) = (runs("dst"), runs("src"));
        let vspace = hyperslab_space(api, &m.dims, &dst)?;
        // (The source's extent is not known without opening it: the
        // selection's reach stands in for it.)
        let reach: Vec<u64> = src
            .iter()
            .map(|r| Run::of_json(r).map_or(1, |r| r.reach()))
            .collect();
        let sspace = hyperslab_space(api, &reach, &src)?;
        let file = match (mp["store"].as_str(), mp["file"].as_str()) {
            (Some(store), _) => store.to_string(),
            (None, Some(file)) => mp["file_name"].as_str().unwrap_or(file).to_string(),
            (None, None) => ".".to_string(),
        };
        // (A printf-style series keeps its names as HDF5 states them.)
        let printf = mp["printf"] == json!(true);
        let cstring = |s: &str| {
            CString::new(if printf {
                s.to_string()
            } else {
                stored_source_name(s)
            })
            .map_err(|_| VolError::Invalid(format!("a name with a NUL byte: {s:?}")))
        };
        let name = mp["name"].as_str().or(mp["path"].as_str()).unwrap_or("/");
        let (file, dset) = (cstring(&file)?, cstring(name)?);
        check(
            f.H5Pset_virtual(dcpl, vspace.0, file.as_ptr(), dset.as_ptr(), sspace.0),
            "H5Pset_virtual",
        )?;
    }
    Ok(())
}

/// A dataspace id closed on drop.
struct Space(hid_t);

impl Drop for Space {
    fn drop(&mut self) {
        if let Ok(api) = crate::api::h5() {
            // SAFETY: a dataspace this module opened.
            unsafe { api.f.H5Sclose(self.0) };
        }
    }
}

/// A dataspace of extent `dims` with the stored hyperslab `runs` selected.
unsafe fn hyperslab_space(api: &Api, dims: &[u64], runs: &[Value]) -> Result<Space> {
    let f = &api.f;
    let space = Space(check(
        f.H5Screate_simple(dims.len() as i32, dims.as_ptr(), dims.as_ptr()),
        "H5Screate_simple",
    )?);
    let runs: Vec<[u64; 4]> = runs
        .iter()
        .map(Run::hdf5_of_json)
        .collect::<Option<_>>()
        .ok_or_else(|| VolError::Invalid(format!("a stored virtual selection {runs:?}")))?;
    let part = |k: usize| -> Vec<u64> { runs.iter().map(|r| r[k]).collect() };
    crate::selection::set_regular_hyperslab(api, space.0, &[part(0), part(1), part(2), part(3)])?;
    Ok(space)
}

/// The extent of the dataset at `path` of the store `store` (this one if
/// `None`), when there is one to be found.
fn source_extent(dom: &Domain, store: Option<&str>, path: &str) -> Option<Vec<u64>> {
    let other;
    let home = match store {
        None => dom,
        Some(loc) => {
            let loc = dom.source_location(loc);
            other = Domain::open_url_with(&loc, OpenMode::Read, &DomainOptions::default()).ok()?;
            &other
        }
    };
    let id = home.resolve_path(path).ok()??;
    Some(home.dataset(&id).ok()?.dims.clone())
}

enum Sel {
    /// A regular hyperslab (or everything), as stored runs.
    Runs(Vec<Value>),
    Nothing,
    /// Everything, of an extent the dataspace does not hold.
    Whole,
    /// An irregular hyperslab (or points, which libhdf5 refuses in
    /// mappings): paired element for element.
    Elements,
}

/// The extent of the simple dataspace `space`.
unsafe fn extent(api: &Api, space: hid_t) -> Result<Vec<u64>> {
    let f = &api.f;
    let rank = check(
        f.H5Sget_simple_extent_ndims(space),
        "H5Sget_simple_extent_ndims",
    )? as usize;
    let mut dims = vec![0u64; rank];
    check(
        f.H5Sget_simple_extent_dims(space, dims.as_mut_ptr(), std::ptr::null_mut()),
        "H5Sget_simple_extent_dims",
    )?;
    Ok(dims)
}

/// The extent of `space` and its selection as runs of elements in
/// iteration order, for [`pair_runs`].
unsafe fn elements(api: &Api, space: hid_t) -> Result<ElementRuns> {
    let mut runs: Vec<(u64, u64)> = Vec::new();
    crate::selection::for_each_run(api, space, 1, |off, len| match runs.last_mut() {
        Some(last) if last.0 + last.1 == off => last.1 += len as u64,
        _ => runs.push((off, len as u64)),
    })?;
    Ok(ElementRuns {
        dims: extent(api, space)?,
        runs,
    })
}

/// The selection of a mapping's dataspace `space`.
unsafe fn runs(api: &Api, space: hid_t) -> Result<Sel> {
    let f = &api.f;
    let dims = extent(api, space)?;
    let rank = dims.len();
    match f.H5Sget_select_type(space) {
        sys::H5S_sel_type_H5S_SEL_ALL if rank == 0 => Ok(Sel::Whole),
        sys::H5S_sel_type_H5S_SEL_ALL if dims.iter().all(|&d| d > 0) => {
            Ok(Sel::Runs(dims.iter().map(|&d| json!([0, 1, d])).collect()))
        }
        sys::H5S_sel_type_H5S_SEL_ALL | sys::H5S_sel_type_H5S_SEL_NONE => Ok(Sel::Nothing),
        sys::H5S_sel_type_H5S_SEL_HYPERSLABS => {
            let Some([start, stride, count, block]) =
                crate::selection::regular_hyperslab(api, space, rank)?
            else {
                return Ok(Sel::Elements);
            };
            if count.contains(&0) || block.contains(&0) {
                return Ok(Sel::Nothing);
            }
            Ok((0..rank)
                .map(|d| Run::from_hdf5(start[d], stride[d], count[d], block[d]).map(Run::to_json))
                .collect::<Option<Vec<_>>>()
                .map_or(Sel::Elements, Sel::Runs))
        }
        sys::H5S_sel_type_H5S_SEL_POINTS
            if check(f.H5Sget_select_npoints(space), "H5Sget_select_npoints")? == 0 =>
        {
            Ok(Sel::Nothing)
        }
        _ => Ok(Sel::Elements),
    }
}

/// The stored mapping of a printf-style series (`file` or `given`, the
/// dataset's name, holding `%b`; both as HDF5 states them): blocks without
/// end of the virtual selection, block `b` from the source named with `b`.
/// Its sources are HDF5 files when the first of them is one, else stores.
unsafe fn printf_mapping(
    api: &Api,
    dom: &Domain,
    (vspace, sspace): (hid_t, hid_t),
    file: &str,
    given: &str,
    i: usize,
) -> Result<Value> {
    let refuse =
        |what: &str| VolError::Invalid(format!("virtual mapping {i} (printf-style names): {what}"));
    let rank = extent(api, vspace)?.len();
    let Some([start, stride, count, block]) =
        crate::selection::regular_hyperslab(api, vspace, rank)?
    else {
        return Err(refuse("the virtual selection is not a regular hyperslab"));
    };
    let dst = printf_selection(&start, &stride, &count, &block).map_err(|e| refuse(&e))?;
    let Sel::Runs(src) = runs(api, sspace)? else {
        return Err(refuse("the source selection is not a regular hyperslab"));
    };
    let dset = if given.starts_with('/') {
        given.to_string()
    } else {
        format!("/{given}")
    };
    let mut m = match hdf5_file_of(dom, &printf_name(file, 0)) {
        // Found when read as libhdf5 finds each (a relative name under the
        // prefixes, beside the store, from the working directory).
        Some(_) => json!({
            "store": null,
            "file": if Path::new(file).is_absolute() {
                file.to_string()
            } else {
                dom.source_location(file)
            },
            "file_name": file,
        }),
        None => json!({ "store": store_of(dom, file) }),
    };
    m["path"] = json!(dset);
    m["src"] = json!(src);
    m["dst"] = json!(dst);
    m["printf"] = json!(true);
    if given != dset {
        m["name"] = json!(given);
    }
    Ok(m)
}

/// A name the library writes into a buffer, asked for its length first
/// (as HDF5 states it: `%%` for `%`, `%b` printf-style).
unsafe fn name_of(get: impl Fn(*mut c_char, usize) -> isize) -> Result<String> {
    let n = get(std::ptr::null_mut(), 0);
    if n < 0 {
        return Err(VolError::Hdf5(
            "reading a virtual mapping's source name".into(),
        ));
    }
    let mut buf = vec![0u8; n as usize + 1];
    if get(buf.as_mut_ptr().cast(), buf.len()) < 0 {
        return Err(VolError::Hdf5(
            "reading a virtual mapping's source name".into(),
        ));
    }
    buf.truncate(n as usize);
    String::from_utf8(buf)
        .map_err(|_| VolError::Unsupported("a virtual source named in non-UTF-8 bytes".into()))
}

/// The HDF5 file the source file `name` is, found where libhdf5 looks for
/// it (absolute; else under `$HDF5_VDS_PREFIX`, beside the store, then
/// from the working directory), when it is an existing HDF5 file: other
/// names, existing or not, are stores (the connector makes every file a
/// program creates a store).
fn hdf5_file_of(dom: &Domain, name: &str) -> Option<PathBuf> {
    if name == "." || name.starts_with("s3://") {
        return None;
    }
    let beside = PathBuf::from(dom.source_location(name));
    let from_cwd = std::path::absolute(name).ok();
    [Some(beside), from_cwd]
        .into_iter()
        .flatten()
        .find(|p| p.is_file())
        .filter(|p| h5lake_hdf5::is_hdf5(p))
        .map(|p| p.canonicalize().unwrap_or(p))
}

/// The mapping's `store` for the source file `name`: null for the store
/// of the virtual dataset itself, else the other store's location.
fn store_of(dom: &Domain, name: &str) -> Value {
    if name == "." {
        return Value::Null;
    }
    let here = dom.location();
    if let Some((dir, _)) = here.strip_prefix("s3://").and(here.rsplit_once('/')) {
        if name.starts_with("s3://") {
            return if name == here {
                Value::Null
            } else {
                json!(name)
            };
        }
        let there = format!("{dir}/{}", name.trim_start_matches("./"));
        return if there == here {
            Value::Null
        } else {
            json!(there)
        };
    }
    let given = Path::new(name);
    let there: PathBuf = if given.is_absolute() {
        given.to_path_buf()
    } else {
        Path::new(here)
            .parent()
            .map_or_else(|| given.to_path_buf(), |dir| dir.join(given))
    };
    let same = |a: &Path, b: &Path| match (a.canonicalize(), b.canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => a == b,
    };
    if same(&there, Path::new(here)) {
        return Value::Null;
    }
    if !given.is_absolute() {
        // Kept as named: found when read (under $HDF5_VDS_PREFIX, else
        // beside the store), so the stores can move together.
        return json!(name);
    }
    json!(there.to_string_lossy())
}
