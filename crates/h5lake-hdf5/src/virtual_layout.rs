//! HDF5's virtual layout in and out: the mappings of a virtual dataset's
//! creation properties read as h5lake's (`h5lake.virtual` in the dataset
//! document, see `h5lake_engine::virtual_ds`), and written back.
//!
//! A mapping pairs a selection of the virtual dataset with a selection of
//! a source dataset named by file and path (`"."`: the file itself). h5lake
//! maps regular hyperslabs, HDF5's `(start, stride, count, block)` per
//! dimension, unlimited ones among them. A mapping of irregular hyperslabs
//! (unions of regular ones) or of selections of other shapes is read as the
//! regular mappings that pair the same elements (see
//! `h5lake_engine::virtual_ds::pair_runs`); printf-style source names are
//! named as not supported.

use std::ffi::{c_char, CString};

use h5lake_engine::virtual_ds::{
    is_printf_name, pair_runs, printf_selection, same_shape, source_name, stored_source_name,
    ElementRuns, Run,
};
use hdf5_sys::h5::hsize_t;
use hdf5_sys::h5i::hid_t;
use hdf5_sys::h5s::{self, H5S_sel_type};
use serde_json::{json, Value};

use crate::h5::{check, check_id, lib, space_dims, Hid};
use crate::{Hdf5Error, Result};

/// One mapping of an HDF5 virtual dataset.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct RawMapping {
    /// The source file as the layout names it (`"."`: the same file).
    pub file: String,
    /// The source dataset's path in it.
    pub dataset: String,
    /// Selections of the virtual and source datasets: `[start, stride,
    /// count]` or `[start, stride, count, block]` per dimension; `None`
    /// for the whole source (whatever its extent).
    pub vsel: Vec<Value>,
    pub ssel: Option<Vec<Value>>,
    /// An irregular virtual selection mapped from the whole source (of
    /// the extent it has when loaded): the virtual extent and the
    /// selection's runs of elements, paired once the source's extent is
    /// known (`vsel` is then empty).
    pub velements: Option<ElementRuns>,
    /// A printf-style series (`file` or `dataset` holds `%b`; both kept as
    /// HDF5 states them): `vsel` is blocks without end along one
    /// dimension, as stated (`[start, stride, null, block]`), block `b`
    /// from the source numbered `b`.
    pub printf: bool,
}

impl RawMapping {
    /// The stored `(virtual runs, source runs)` of this mapping, the
    /// source being of extent `src_dims` (`None`: not known, as of a
    /// missing source).
    ///
    /// # Errors
    /// An irregular selection that does not pair with the whole source.
    pub fn pieces(&self, src_dims: Option<&[u64]>) -> std::result::Result<Vec<StoredPair>, String> {
        if let Some(ssel) = &self.ssel {
            return Ok(vec![(self.vsel.clone(), ssel.clone())]);
        }
        if !self.vsel.is_empty() {
            let whole = h5lake_engine::virtual_ds::whole_source(src_dims, &self.vsel);
            if self.velements.is_none() || same_shape(&self.vsel, &whole) {
                return Ok(vec![(self.vsel.clone(), whole)]);
            }
        }
        let Some(velements) = &self.velements else {
            return Err("a virtual selection of nothing".into());
        };
        let n: u64 = velements.runs.iter().map(|r| r.1).sum();
        let dims = src_dims.map_or_else(|| vec![n], <[u64]>::to_vec);
        let all = ElementRuns {
            runs: vec![(0, dims.iter().product::<u64>())],
            dims,
        };
        let pieces = pair_runs(velements, &all)?;
        Ok(pieces
            .into_iter()
            .map(|(d, s)| (runs_json(d), runs_json(s)))
            .collect())
    }
}

/// A mapping's stored virtual and source runs.
type StoredPair = (Vec<Value>, Vec<Value>);

fn runs_json(runs: Vec<Run>) -> Vec<Value> {
    runs.into_iter().map(Run::to_json).collect()
}

/// The mappings of the virtual dataset with creation properties `dcpl`;
/// `Ok(Err(why))` when one of them is of a kind h5lake cannot map.
pub(crate) fn read_mappings(dcpl: hid_t) -> Result<std::result::Result<Vec<RawMapping>, String>> {
    let mut n: usize = 0;
    check(
        lib(|| unsafe { hdf5_sys::h5p::H5Pget_virtual_count(dcpl, &mut n) }),
        "reading the virtual dataset's mappings",
    )?;
    let mut out = Vec::with_capacity(n);
    for i in 0..n {
        let what = "reading a virtual mapping";
        let vspace = check_id(
            lib(|| unsafe { hdf5_sys::h5p::H5Pget_virtual_vspace(dcpl, i) }),
            what,
        )?;
        let sspace = check_id(
            lib(|| unsafe { hdf5_sys::h5p::H5Pget_virtual_srcspace(dcpl, i) }),
            what,
        )?;
        let file = string_of(|buf, len| unsafe {
            hdf5_sys::h5p::H5Pget_virtual_filename(dcpl, i, buf, len)
        })?;
        let dataset = string_of(|buf, len| unsafe {
            hdf5_sys::h5p::H5Pget_virtual_dsetname(dcpl, i, buf, len)
        })?;
        if is_printf_name(&file) || is_printf_name(&dataset) {
            let (vsel, ssel) = match (printf_runs(vspace.id())?, selection(sspace.id())?) {
                (Ok(v), Sel::Runs(s)) => (v, s),
                // Each source whole: of the shape of a block.
                (Ok(v), Sel::Whole) => {
                    let block: Vec<Value> = v
                        .iter()
                        .map(|r| match r.get(2) {
                            Some(Value::Null) => {
                                json!([r[0], 1, r.get(3).cloned().unwrap_or(json!(1))])
                            }
                            _ => r.clone(),
                        })
                        .collect();
                    let s = h5lake_engine::virtual_ds::whole_source(None, &block);
                    (v, s)
                }
                (Err(why), _) => return Ok(Err(format!("mapping {i} (printf-style): {why}"))),
                _ => {
                    return Ok(Err(format!(
                        "mapping {i} (printf-style): the source selection is not a regular \
                         hyperslab"
                    )))
                }
            };
            out.push(RawMapping {
                dataset: if dataset.starts_with('/') {
                    dataset
                } else {
                    format!("/{dataset}")
                },
                file,
                vsel,
                ssel: Some(ssel),
                velements: None,
                printf: true,
            });
            continue;
        }
        let mut velements = None;
        let pieces = match (selection(vspace.id())?, selection(sspace.id())?) {
            (Sel::Runs(v), Sel::Runs(s)) if same_shape(&v, &s) => vec![(v, Some(s))],
            // (Paired element for element, if the source's extent turns
            // out to be of another shape.)
            (Sel::Runs(v), Sel::Whole) => {
                velements = Some(elements(vspace.id())?);
                vec![(v, None)]
            }
            // A mapping of nothing adds nothing.
            (Sel::Nothing, _) | (_, Sel::Nothing) => continue,
            (Sel::Whole, _) => {
                return Ok(Err(format!(
                    "mapping {i}: a virtual selection of no extent"
                )))
            }
            (Sel::Unsupported(why), _) => {
                return Ok(Err(format!("mapping {i} (virtual side): {why}")))
            }
            (_, Sel::Unsupported(why)) => {
                return Ok(Err(format!("mapping {i} ({file}:{dataset}): {why}")))
            }
            // Paired when the source's extent is known.
            (Sel::Elements, Sel::Whole) => {
                velements = Some(elements(vspace.id())?);
                vec![(Vec::new(), None)]
            }
            // Irregular on a side, or shapes that differ: paired element
            // for element, as HDF5 pairs them.
            _ => match pair_runs(&elements(vspace.id())?, &elements(sspace.id())?) {
                Ok(pieces) => pieces
                    .into_iter()
                    .map(|(d, s)| (runs_json(d), Some(runs_json(s))))
                    .collect(),
                Err(why) => return Ok(Err(format!("mapping {i}: {why}"))),
            },
        };
        let (file, dataset) = match (source_name(&file), source_name(&dataset)) {
            (Ok(f), Ok(d)) => (f, d),
            (Err(why), _) | (_, Err(why)) => return Ok(Err(format!("mapping {i}: {why}"))),
        };
        let dataset = if dataset.starts_with('/') {
            dataset
        } else {
            format!("/{dataset}")
        };
        for (vsel, ssel) in pieces {
            out.push(RawMapping {
                file: file.clone(),
                dataset: dataset.clone(),
                vsel,
                ssel,
                velements: velements.clone(),
                printf: false,
            });
        }
    }
    Ok(Ok(out))
}

/// The virtual selection of a printf-style series as stored: a regular
/// hyperslab with blocks without end along one dimension, stated as given
/// there; `Ok(Err(why))` for another selection.
fn printf_runs(space: hid_t) -> Result<std::result::Result<Vec<Value>, String>> {
    let (dims, _) = space_dims(space)?;
    let rank = dims.len();
    let hyperslab =
        lib(|| unsafe { h5s::H5Sget_select_type(space) }) == H5S_sel_type::H5S_SEL_HYPERSLABS;
    let Some([start, stride, count, block]) = hyperslab
        .then(|| regular_hyperslab(space, rank))
        .transpose()?
        .flatten()
    else {
        return Ok(Err(
            "the virtual selection is not a regular hyperslab".into()
        ));
    };
    Ok(printf_selection(&start, &stride, &count, &block))
}

/// `[start, stride, count, block]` of the hyperslab selection of `space`
/// (of `rank` dimensions), when it is a regular one.
fn regular_hyperslab(space: hid_t, rank: usize) -> Result<Option<[Vec<u64>; 4]>> {
    let what = "reading a virtual mapping's selection";
    if check(lib(|| unsafe { h5s::H5Sis_regular_hyperslab(space) }), what)? <= 0 {
        return Ok(None);
    }
    let mut parts = [vec![0; rank], vec![0; rank], vec![0; rank], vec![0; rank]];
    let [start, stride, count, block] = &mut parts;
    check(
        lib(|| unsafe {
            h5s::H5Sget_regular_hyperslab(
                space,
                start.as_mut_ptr(),
                stride.as_mut_ptr(),
                count.as_mut_ptr(),
                block.as_mut_ptr(),
            )
        }),
        what,
    )?;
    Ok(Some(parts))
}

/// The extent of `space` and its selection as runs of elements in
/// iteration order.
fn elements(space: hid_t) -> Result<ElementRuns> {
    const MAXSEQ: usize = 1024;
    let what = "reading a virtual mapping's selection";
    let (dims, _) = space_dims(space)?;
    let it = check_id(
        lib(|| unsafe { h5s::H5Ssel_iter_create(space, 1, 0) }),
        what,
    )?;
    let (mut off, mut len) = (vec![0 as hsize_t; MAXSEQ], vec![0usize; MAXSEQ]);
    let mut runs: Vec<(u64, u64)> = Vec::new();
    loop {
        let (mut nseq, mut nelem) = (0usize, 0usize);
        check(
            lib(|| unsafe {
                h5s::H5Ssel_iter_get_seq_list(
                    it.id(),
                    MAXSEQ,
                    usize::MAX,
                    &mut nseq,
                    &mut nelem,
                    off.as_mut_ptr(),
                    len.as_mut_ptr(),
                )
            }),
            what,
        )?;
        if nseq == 0 {
            return Ok(ElementRuns { dims, runs });
        }
        for k in 0..nseq {
            match runs.last_mut() {
                Some(last) if last.0 + last.1 == off[k] => last.1 += len[k] as u64,
                _ => runs.push((off[k], len[k] as u64)),
            }
        }
    }
}

/// Adds `mappings` to the dataset creation properties `dcpl` of a virtual
/// dataset of extent `dims`; each source is of extent `src_dims` (as far
/// as known: a selection past it reads as fill, as in HDF5).
pub(crate) fn set_mappings(
    dcpl: hid_t,
    dims: &[u64],
    mappings: &[(RawMapping, Vec<u64>)],
) -> Result<()> {
    for (m, src_dims) in mappings {
        let vspace = hyperslab_space(dims, dims, &m.vsel)?;
        // The source's extent: at least what the selection reaches (HDF5
        // checks the selection against it).
        let ssel = m.ssel.clone().unwrap_or_default();
        let reach: Vec<u64> = ssel
            .iter()
            .zip(src_dims.iter().chain(std::iter::repeat(&0)))
            .map(|(r, &d)| d.max(Run::of_json(r).map_or(1, |r| r.reach())))
            .collect();
        let sspace = hyperslab_space(&reach, &reach, &ssel)?;
        // (A printf-style series keeps its names as HDF5 states them.)
        let stated = |s: &str| {
            if m.printf {
                s.to_string()
            } else {
                stored_source_name(s)
            }
        };
        let file = CString::new(stated(&m.file))
            .map_err(|_| Hdf5Error::Unsupported(format!("file name {:?}", m.file)))?;
        let dset = CString::new(stated(&m.dataset))
            .map_err(|_| Hdf5Error::Unsupported(format!("dataset name {:?}", m.dataset)))?;
        check(
            lib(|| unsafe {
                hdf5_sys::h5p::H5Pset_virtual(
                    dcpl,
                    vspace.id(),
                    file.as_ptr(),
                    dset.as_ptr(),
                    sspace.id(),
                )
            }),
            "adding a virtual mapping",
        )?;
    }
    Ok(())
}

/// A dataspace of extent `dims` with the hyperslab `runs` selected.
fn hyperslab_space(dims: &[u64], maxdims: &[u64], runs: &[Value]) -> Result<Hid> {
    let space = check_id(
        lib(|| unsafe {
            h5s::H5Screate_simple(dims.len() as i32, dims.as_ptr(), maxdims.as_ptr())
        }),
        "creating a dataspace",
    )?;
    let runs: Vec<[hsize_t; 4]> = runs
        .iter()
        .map(Run::hdf5_of_json)
        .collect::<Option<_>>()
        .ok_or_else(|| Hdf5Error::Unsupported(format!("a stored virtual selection {runs:?}")))?;
    let part = |k: usize| -> Vec<hsize_t> { runs.iter().map(|r| r[k]).collect() };
    let (start, stride, count, block) = (part(0), part(1), part(2), part(3));
    check(
        lib(|| unsafe {
            h5s::H5Sselect_hyperslab(
                space.id(),
                h5s::H5S_seloper_t::H5S_SELECT_SET,
                start.as_ptr(),
                stride.as_ptr(),
                count.as_ptr(),
                block.as_ptr(),
            )
        }),
        "selecting a virtual mapping's hyperslab",
    )?;
    Ok(space)
}

enum Sel {
    Runs(Vec<Value>),
    /// An irregular hyperslab (or points, which libhdf5 refuses in
    /// mappings): paired element for element.
    Elements,
    /// Everything, of an extent the dataspace does not hold.
    Whole,
    Nothing,
    Unsupported(String),
}

/// The selection of `space` as stored runs.
fn selection(space: hid_t) -> Result<Sel> {
    let (dims, _) = space_dims(space)?;
    let kind = lib(|| unsafe { h5s::H5Sget_select_type(space) });
    match kind {
        // (A source's "all" is kept without the extent it will have.)
        H5S_sel_type::H5S_SEL_ALL if dims.is_empty() => Ok(Sel::Whole),
        H5S_sel_type::H5S_SEL_ALL => {
            if dims.contains(&0) {
                return Ok(Sel::Nothing);
            }
            Ok(Sel::Runs(dims.iter().map(|&d| json!([0, 1, d])).collect()))
        }
        H5S_sel_type::H5S_SEL_NONE => Ok(Sel::Nothing),
        H5S_sel_type::H5S_SEL_POINTS => Ok(Sel::Elements),
        H5S_sel_type::H5S_SEL_HYPERSLABS => {
            let rank = dims.len();
            let Some([start, stride, count, block]) = regular_hyperslab(space, rank)? else {
                return Ok(Sel::Elements);
            };
            if count.contains(&0) || block.contains(&0) {
                return Ok(Sel::Nothing);
            }
            (0..rank)
                .map(|d| Run::from_hdf5(start[d], stride[d], count[d], block[d]).map(Run::to_json))
                .collect::<Option<Vec<_>>>()
                .map_or_else(
                    || {
                        Ok(Sel::Unsupported(
                            "an overlapping or overflowing hyperslab".into(),
                        ))
                    },
                    |runs| Ok(Sel::Runs(runs)),
                )
        }
        _ => Ok(Sel::Unsupported(
            "a selection HDF5 could not describe".into(),
        )),
    }
}

/// A string the library writes into a buffer, asked for its length first.
fn string_of(get: impl Fn(*mut c_char, usize) -> isize) -> Result<String> {
    let what = "reading a virtual mapping's source name";
    let n = check(lib(|| get(std::ptr::null_mut(), 0)) as i64, what)? as usize;
    let mut buf = vec![0u8; n + 1];
    check(lib(|| get(buf.as_mut_ptr().cast(), n + 1)) as i64, what)?;
    buf.truncate(n);
    String::from_utf8(buf).map_err(|_| {
        Hdf5Error::Unsupported("a virtual source named in bytes that are not UTF-8".into())
    })
}
