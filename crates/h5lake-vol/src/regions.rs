//! Dataset region references (`H5T_STD_REF_DSETREG`, h5py's `regionref`):
//! a dataset and a selection of its elements.
//!
//! Stored, a region reference is h5json's JSON object (see
//! [`Datatype::RegionReference`](h5lake_types::Datatype::RegionReference)),
//! which names the dataset by id and spells the selection out. In memory it
//! is HDF5's version-1 `hdset_reg_ref_t`, 12 bytes: in a native file the
//! dataset's address and where the selection sits in the file's global heap.
//! Here the first 8 bytes are the dataset's address as in an object
//! reference (`hobj_ref_t`), and the last 4 the index of the selection in a
//! table this process keeps (from 1; all zero is the null reference).
//! Selections enter the table when a reference is made or read and stay
//! for the life of the process, so a reference value stays valid wherever
//! the process hands it — written to a dataset, it is stored as the
//! selection itself, not as the index.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use serde_json::{json, Value};

use crate::api::Api;
use crate::error::{check, Result, VolError};
use crate::sys::{self, hid_t};

/// `sizeof(hdset_reg_ref_t)`.
pub const SIZE: usize = 12;

/// Hyperslabs of more blocks than this are kept as HDF5 describes a
/// regular hyperslab (start, stride, count, block) when they are one,
/// rather than block by block.
const MAX_LISTED_BLOCKS: i64 = 4096;

#[derive(Default)]
struct Table {
    texts: Vec<Arc<str>>,
    index: HashMap<Arc<str>, u32>,
}

fn table() -> &'static Mutex<Table> {
    static TABLE: OnceLock<Mutex<Table>> = OnceLock::new();
    TABLE.get_or_init(Mutex::default)
}

/// The index of `sel` (the selection part of a stored reference) in the
/// process's table, entering it if it is new.
pub fn register(sel: &Value) -> Result<u32> {
    let text: Arc<str> = sel.to_string().into();
    let mut t = table()
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if let Some(&i) = t.index.get(&text) {
        return Ok(i);
    }
    let i = u32::try_from(t.texts.len() + 1)
        .map_err(|_| VolError::Invalid("too many region references in one process".into()))?;
    t.texts.push(text.clone());
    t.index.insert(text, i);
    Ok(i)
}

/// The selection registered as `index`.
pub fn selection(index: u32) -> Result<Value> {
    let t = table()
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let text = index
        .checked_sub(1)
        .and_then(|i| t.texts.get(i as usize))
        .ok_or_else(|| {
            VolError::Invalid(
                "a region reference this process did not make or read (its selection is unknown)"
                    .into(),
            )
        })?;
    serde_json::from_str(text).map_err(|e| VolError::Invalid(format!("region selection: {e}")))
}

/// The memory form of a reference to the dataset at `addr`.
pub fn encode(addr: u64, index: u32) -> [u8; SIZE] {
    let mut out = [0u8; SIZE];
    out[..8].copy_from_slice(&addr.to_ne_bytes());
    out[8..].copy_from_slice(&index.to_ne_bytes());
    out
}

/// `(address, index)` of a memory reference; `None` for the null one.
pub fn decode(b: &[u8; SIZE]) -> Option<(u64, u32)> {
    let addr = u64::from_ne_bytes(b[..8].try_into().expect("8 bytes"));
    let index = u32::from_ne_bytes(b[8..].try_into().expect("4 bytes"));
    (addr != 0 || index != 0).then_some((addr, index))
}

/// The selection part (`select_type` and its coordinates) of a stored
/// reference, split from the dataset id.
pub fn split(stored: &Value) -> Result<(String, Value)> {
    let mut o = stored
        .as_object()
        .cloned()
        .ok_or_else(|| VolError::Invalid(format!("stored region reference {stored}")))?;
    let id = o
        .remove("id")
        .and_then(|v| v.as_str().map(str::to_string))
        .ok_or_else(|| VolError::Invalid(format!("stored region reference {stored} has no id")))?;
    Ok((id, Value::Object(o)))
}

/// The selection of `space` in the stored form.
///
/// # Safety
/// `space` is a dataspace id.
pub unsafe fn selection_of(api: &Api, space: hid_t) -> Result<Value> {
    let f = &api.f;
    let rank = usize::try_from(check(
        f.H5Sget_simple_extent_ndims(space),
        "H5Sget_simple_extent_ndims",
    )?)
    .unwrap_or(0);
    Ok(match f.H5Sget_select_type(space) {
        sys::H5S_sel_type_H5S_SEL_NONE => json!({"select_type": "H5S_SEL_NONE", "selection": []}),
        sys::H5S_sel_type_H5S_SEL_ALL => json!({"select_type": "H5S_SEL_ALL"}),
        sys::H5S_sel_type_H5S_SEL_POINTS => {
            let n = check(
                f.H5Sget_select_elem_npoints(space),
                "H5Sget_select_elem_npoints",
            )?;
            let mut flat = vec![0u64; n as usize * rank];
            check(
                f.H5Sget_select_elem_pointlist(space, 0, n as u64, flat.as_mut_ptr()),
                "H5Sget_select_elem_pointlist",
            )?;
            h5lake_types::region_points_json(&flat, rank)
        }
        sys::H5S_sel_type_H5S_SEL_HYPERSLABS => {
            let n = check(
                f.H5Sget_select_hyper_nblocks(space),
                "H5Sget_select_hyper_nblocks",
            )?;
            let regular = crate::selection::regular_hyperslab(api, space, rank)?;
            if let Some([start, stride, count, block]) = &regular {
                // h5py selects `a[2:5, 1:9]` as 3×8 blocks of one element.
                let one_box = (0..rank).all(|d| count[d] <= 1 || stride[d] == block[d]);
                if one_box && n > 0 {
                    let end: Vec<u64> = (0..rank)
                        .map(|d| start[d] + count[d] * block[d] - 1)
                        .collect();
                    return Ok(
                        json!({"select_type": "H5S_SEL_HYPERSLABS", "selection": [[start, end]]}),
                    );
                }
                if n > MAX_LISTED_BLOCKS {
                    return Ok(json!({"select_type": "H5S_SEL_HYPERSLABS", "start": start,
                                     "stride": stride, "count": count, "block": block}));
                }
            }
            {
                let mut flat = vec![0u64; n as usize * 2 * rank];
                check(
                    f.H5Sget_select_hyper_blocklist(space, 0, n as u64, flat.as_mut_ptr()),
                    "H5Sget_select_hyper_blocklist",
                )?;
                h5lake_types::region_blocks_json(&flat, rank)
            }
        }
        _ => {
            return Err(VolError::Invalid(
                "a dataspace without a valid selection".into(),
            ))
        }
    })
}

/// Selects `sel` (the stored form) in `space`, the referenced dataset's
/// dataspace.
///
/// # Safety
/// `space` is a dataspace id.
pub unsafe fn apply(api: &Api, space: hid_t, sel: &Value) -> Result<()> {
    let f = &api.f;
    let bad = || VolError::Invalid(format!("stored region selection {sel}"));
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
    match sel.get("select_type").and_then(Value::as_str) {
        Some("H5S_SEL_ALL") | None => {
            check(f.H5Sselect_all(space), "H5Sselect_all")?;
        }
        Some("H5S_SEL_NONE") => {
            check(f.H5Sselect_none(space), "H5Sselect_none")?;
        }
        Some("H5S_SEL_POINTS") => {
            let pts = items()?;
            let mut flat = Vec::new();
            for p in pts {
                flat.extend(coords(p)?);
            }
            if pts.is_empty() {
                check(f.H5Sselect_none(space), "H5Sselect_none")?;
            } else {
                check(
                    f.H5Sselect_elements(
                        space,
                        sys::H5S_seloper_t_H5S_SELECT_SET,
                        pts.len(),
                        flat.as_ptr(),
                    ),
                    "H5Sselect_elements",
                )?;
            }
        }
        Some("H5S_SEL_HYPERSLABS") if sel.get("selection").is_none() => {
            let part = |k: &str| coords(sel.get(k).ok_or_else(bad)?);
            let parts = [
                part("start")?,
                part("stride")?,
                part("count")?,
                part("block")?,
            ];
            crate::selection::set_regular_hyperslab(api, space, &parts)?;
        }
        Some("H5S_SEL_HYPERSLABS") => {
            check(f.H5Sselect_none(space), "H5Sselect_none")?;
            for b in items()? {
                let pair = b.as_array().filter(|p| p.len() == 2).ok_or_else(bad)?;
                let (start, end) = (coords(&pair[0])?, coords(&pair[1])?);
                let count = vec![1u64; start.len()];
                let block: Vec<u64> = start
                    .iter()
                    .zip(&end)
                    .map(|(s, e)| e.checked_sub(*s).map(|d| d + 1).ok_or_else(bad))
                    .collect::<Result<_>>()?;
                check(
                    f.H5Sselect_hyperslab(
                        space,
                        sys::H5S_seloper_t_H5S_SELECT_OR,
                        start.as_ptr(),
                        std::ptr::null(),
                        count.as_ptr(),
                        block.as_ptr(),
                    ),
                    "H5Sselect_hyperslab",
                )?;
            }
        }
        Some(_) => return Err(bad()),
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn memory_form_and_table() {
        assert_eq!(decode(&[0; SIZE]), None);
        let a = register(&json!({"select_type": "H5S_SEL_ALL"})).unwrap();
        let b = register(&json!({"select_type": "H5S_SEL_NONE", "selection": []})).unwrap();
        assert_ne!(a, b);
        assert_eq!(register(&json!({"select_type": "H5S_SEL_ALL"})).unwrap(), a);
        assert_eq!(decode(&encode(0x1234, b)), Some((0x1234, b)));
        assert_eq!(selection(b).unwrap()["select_type"], "H5S_SEL_NONE");
        assert!(selection(0).is_err());
        assert!(selection(u32::MAX).is_err());
        let (id, sel) = split(&json!({"id": "d-1", "select_type": "H5S_SEL_ALL"})).unwrap();
        assert_eq!(
            (id.as_str(), sel),
            ("d-1", json!({"select_type": "H5S_SEL_ALL"}))
        );
    }
}
