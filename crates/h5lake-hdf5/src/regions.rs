//! Dataset region references between a file and a store: the selection of
//! a dataspace as h5json spells it in a stored region reference
//! (`{"select_type": …, "selection": …}`, see
//! [`h5lake_types::value::region_ref_bytes`]) and back.

use hdf5_sys::h5s::{self, H5S_sel_type, H5S_seloper_t};
use serde_json::{json, Value};

use crate::h5::{check, lib};
use crate::{Hdf5Error, Result};

/// The selection of `space` in h5json's form.
pub(crate) fn selection_json(space: hdf5_sys::h5i::hid_t) -> Result<Value> {
    let what = "reading a region's selection";
    let rank = usize::try_from(check(
        lib(|| unsafe { h5s::H5Sget_simple_extent_ndims(space) }),
        what,
    )?)
    .unwrap_or(0);
    Ok(match lib(|| unsafe { h5s::H5Sget_select_type(space) }) {
        H5S_sel_type::H5S_SEL_NONE => json!({"select_type": "H5S_SEL_NONE", "selection": []}),
        H5S_sel_type::H5S_SEL_ALL => json!({"select_type": "H5S_SEL_ALL"}),
        H5S_sel_type::H5S_SEL_POINTS => {
            let n = check(
                lib(|| unsafe { h5s::H5Sget_select_elem_npoints(space) }),
                what,
            )?;
            let mut flat = vec![0u64; n as usize * rank];
            check(
                lib(|| unsafe {
                    h5s::H5Sget_select_elem_pointlist(space, 0, n as u64, flat.as_mut_ptr())
                }),
                what,
            )?;
            h5lake_types::region_points_json(&flat, rank)
        }
        H5S_sel_type::H5S_SEL_HYPERSLABS => {
            let n = check(
                lib(|| unsafe { h5s::H5Sget_select_hyper_nblocks(space) }),
                what,
            )?;
            let mut flat = vec![0u64; n as usize * 2 * rank];
            check(
                lib(|| unsafe {
                    h5s::H5Sget_select_hyper_blocklist(space, 0, n as u64, flat.as_mut_ptr())
                }),
                what,
            )?;
            h5lake_types::region_blocks_json(&flat, rank)
        }
        _ => {
            return Err(Hdf5Error::Library(
                "a region without a valid selection".into(),
            ))
        }
    })
}

/// Selects in `space` what `sel` (a stored region reference's JSON object)
/// names.
pub(crate) fn select(space: hdf5_sys::h5i::hid_t, sel: &Value) -> Result<()> {
    let what = "selecting a region";
    let bad = || Hdf5Error::Library(format!("a region reference's selection {sel}"));
    let coords = |v: &Value| -> Result<Vec<u64>> {
        v.as_array()
            .ok_or_else(bad)?
            .iter()
            .map(|c| c.as_u64().ok_or_else(bad))
            .collect()
    };
    let items = || {
        sel.get("selection")
            .and_then(Value::as_array)
            .ok_or_else(bad)
    };
    match sel
        .get("select_type")
        .and_then(Value::as_str)
        .unwrap_or("H5S_SEL_ALL")
    {
        "H5S_SEL_ALL" => check(lib(|| unsafe { h5s::H5Sselect_all(space) }), what)?,
        "H5S_SEL_NONE" => check(lib(|| unsafe { h5s::H5Sselect_none(space) }), what)?,
        "H5S_SEL_POINTS" => {
            let points = items()?;
            let flat: Vec<u64> = points
                .iter()
                .map(coords)
                .collect::<Result<Vec<_>>>()?
                .concat();
            check(
                lib(|| unsafe {
                    h5s::H5Sselect_elements(
                        space,
                        H5S_seloper_t::H5S_SELECT_SET,
                        points.len(),
                        flat.as_ptr(),
                    )
                }),
                what,
            )?
        }
        "H5S_SEL_HYPERSLABS" if sel.get("selection").is_none() => {
            let part = |k: &str| coords(sel.get(k).ok_or_else(bad)?);
            let (start, stride, count, block) = (
                part("start")?,
                part("stride")?,
                part("count")?,
                part("block")?,
            );
            check(
                lib(|| unsafe {
                    h5s::H5Sselect_hyperslab(
                        space,
                        H5S_seloper_t::H5S_SELECT_SET,
                        start.as_ptr(),
                        stride.as_ptr(),
                        count.as_ptr(),
                        block.as_ptr(),
                    )
                }),
                what,
            )?
        }
        "H5S_SEL_HYPERSLABS" => {
            check(lib(|| unsafe { h5s::H5Sselect_none(space) }), what)?;
            for b in items()? {
                let pair = b.as_array().filter(|p| p.len() == 2).ok_or_else(bad)?;
                let (lo, hi) = (coords(&pair[0])?, coords(&pair[1])?);
                let count: Vec<u64> = lo.iter().zip(&hi).map(|(l, h)| h + 1 - l).collect();
                check(
                    lib(|| unsafe {
                        h5s::H5Sselect_hyperslab(
                            space,
                            H5S_seloper_t::H5S_SELECT_OR,
                            lo.as_ptr(),
                            std::ptr::null(),
                            count.as_ptr(),
                            std::ptr::null(),
                        )
                    }),
                    what,
                )?;
            }
            0
        }
        _ => return Err(bad()),
    };
    Ok(())
}
