//! HDF5 dataspace selections → h5lake selections, and moving elements
//! between a packed buffer and the caller's memory selection. HDF5's own
//! selection iterators do the element walking.

use h5lake_types::{DimSel, Selection};

use crate::api::Api;
use crate::error::{check, Result};
use crate::sys::{self, hid_t};

/// `H5S_ALL`: the whole dataspace.
pub const ALL: hid_t = sys::H5S_ALL as hid_t;

/// The h5lake selection of `space` in a dataset of extent `dims` (a scalar
/// is `[1]`), in HDF5's iteration order.
pub fn file_selection(api: &Api, space: hid_t, dims: &[u64]) -> Result<Selection> {
    if space == ALL {
        return Ok(Selection::all(dims));
    }
    let f = &api.f;
    // SAFETY (whole function): `space` is a dataspace id of the caller's.
    unsafe {
        match f.H5Sget_select_type(space) {
            sys::H5S_sel_type_H5S_SEL_ALL => return Ok(Selection::all(dims)),
            sys::H5S_sel_type_H5S_SEL_NONE => {
                return Ok(Selection::Points {
                    rank: dims.len(),
                    coords: Vec::new(),
                })
            }
            sys::H5S_sel_type_H5S_SEL_HYPERSLABS => {
                let rank = dims.len();
                let Some([mut start, stride, count, block]) = regular_hyperslab(api, space, rank)?
                else {
                    return every_element(api, space, dims);
                };
                // H5Soffset_simple moves a selection without changing the
                // hyperslab it reports (h5py broadcasts a small value over
                // a large selection that way); HDF5 has no getter for the
                // offset, but the selection's bounds include it.
                if count.iter().zip(&block).all(|(&c, &b)| c > 0 && b > 0) {
                    let (mut lo, mut hi) = (vec![0u64; rank], vec![0u64; rank]);
                    check(
                        f.H5Sget_select_bounds(space, lo.as_mut_ptr(), hi.as_mut_ptr()),
                        "H5Sget_select_bounds",
                    )?;
                    for (s, l) in start.iter_mut().zip(&lo) {
                        *s = *l;
                    }
                }
                let sels = (0..rank)
                    .map(|d| regular_dim(start[d], stride[d], count[d], block[d]))
                    .collect();
                return Ok(Selection::Orthogonal(sels));
            }
            _ => {}
        }
    }
    every_element(api, space, dims)
}

/// Points and irregular hyperslabs: every element, in iteration order.
fn every_element(api: &Api, space: hid_t, dims: &[u64]) -> Result<Selection> {
    let rank = dims.len();
    let mut coords = Vec::new();
    for_each_run(api, space, 1, |off, len| {
        for e in off..off + len as u64 {
            let mut rem = e;
            let start = coords.len();
            coords.resize(start + rank, 0);
            for d in (0..rank).rev() {
                coords[start + d] = rem % dims[d].max(1);
                rem /= dims[d].max(1);
            }
        }
    })?;
    Ok(Selection::Points { rank, coords })
}

/// Selects in `space` the regular hyperslab `[start, stride, count,
/// block]` (each one value per dimension), replacing its selection.
///
/// # Safety
/// `space` is a dataspace id of that many dimensions.
pub unsafe fn set_regular_hyperslab(api: &Api, space: hid_t, parts: &[Vec<u64>; 4]) -> Result<()> {
    let [start, stride, count, block] = parts;
    check(
        api.f.H5Sselect_hyperslab(
            space,
            sys::H5S_seloper_t_H5S_SELECT_SET,
            start.as_ptr(),
            stride.as_ptr(),
            count.as_ptr(),
            block.as_ptr(),
        ),
        "H5Sselect_hyperslab",
    )?;
    Ok(())
}

/// `[start, stride, count, block]` of `space`'s hyperslab selection (of
/// `rank` dimensions), if it is a regular one.
///
/// # Safety
/// `space` is a dataspace id.
pub unsafe fn regular_hyperslab(
    api: &Api,
    space: hid_t,
    rank: usize,
) -> Result<Option<[Vec<u64>; 4]>> {
    let f = &api.f;
    if check(f.H5Sis_regular_hyperslab(space), "H5Sis_regular_hyperslab")? <= 0 {
        return Ok(None);
    }
    let mut parts = [
        vec![0u64; rank],
        vec![0u64; rank],
        vec![0u64; rank],
        vec![0u64; rank],
    ];
    let [start, stride, count, block] = &mut parts;
    check(
        f.H5Sget_regular_hyperslab(
            space,
            start.as_mut_ptr(),
            stride.as_mut_ptr(),
            count.as_mut_ptr(),
            block.as_mut_ptr(),
        ),
        "H5Sget_regular_hyperslab",
    )?;
    Ok(Some(parts))
}

/// Where in the caller's buffer the elements `space` selects lie, when
/// they are one gap-free run in iteration order: its offset in bytes
/// (elements of `elem` bytes), so a packed buffer of them is that part of
/// the caller's buffer as is. `None` when the selection has gaps or is out
/// of order. A program reading slab after slab into a buffer a little
/// larger than each slab (BD-CATS) selects such a run, not the whole extent.
pub fn contiguous_offset(api: &Api, space: hid_t, elem: usize) -> Result<Option<usize>> {
    if space == ALL {
        return Ok(Some(0));
    }
    let a = &api.f;
    // SAFETY: `space` is a dataspace id of the caller's; the iterator is
    // created, used and closed here.
    unsafe {
        if a.H5Sget_select_type(space) == sys::H5S_sel_type_H5S_SEL_ALL {
            return Ok(Some(0));
        }
        let selected = check(a.H5Sget_select_npoints(space), "H5Sget_select_npoints")? as usize;
        let it = check(a.H5Ssel_iter_create(space, elem, 0), "H5Ssel_iter_create")?;
        // Two sequences are enough to tell one run from more.
        let (mut off, mut len) = ([0u64; 2], [0usize; 2]);
        let (mut nseq, mut nelem) = (0usize, 0usize);
        let got = a.H5Ssel_iter_get_seq_list(
            it,
            2,
            usize::MAX,
            &mut nseq,
            &mut nelem,
            off.as_mut_ptr(),
            len.as_mut_ptr(),
        );
        a.H5Ssel_iter_close(it);
        if got < 0 {
            return Err(crate::error::VolError::Hdf5(
                "H5Ssel_iter_get_seq_list failed".into(),
            ));
        }
        Ok(
            (nseq == 1 && nelem == selected && len[0] == selected * elem)
                .then_some(off[0] as usize),
        )
    }
}

/// One dimension of a regular hyperslab.
fn regular_dim(start: u64, stride: u64, count: u64, block: u64) -> DimSel {
    if block == 1 {
        DimSel::Slice {
            start,
            count,
            step: stride.max(1),
        }
    } else if count == 1 || stride == block {
        DimSel::Slice {
            start,
            count: count * block,
            step: 1,
        }
    } else {
        DimSel::Indices(
            (0..count)
                .flat_map(|c| (0..block).map(move |b| start + c * stride + b))
                .collect(),
        )
    }
}

/// Calls `f(offset, length)` for each run of `space`'s selection, in
/// iteration order; offsets and lengths count units of `elem` bytes' size
/// (1 = elements).
pub fn for_each_run(
    api: &Api,
    space: hid_t,
    elem: usize,
    mut f: impl FnMut(u64, usize),
) -> Result<()> {
    const MAXSEQ: usize = 1024;
    let a = &api.f;
    // SAFETY: the iterator is created, used and closed here.
    unsafe {
        let it = check(a.H5Ssel_iter_create(space, elem, 0), "H5Ssel_iter_create")?;
        let mut off = vec![0u64; MAXSEQ];
        let mut len = vec![0usize; MAXSEQ];
        let result = loop {
            let (mut nseq, mut nelem) = (0usize, 0usize);
            if a.H5Ssel_iter_get_seq_list(
                it,
                MAXSEQ,
                usize::MAX,
                &mut nseq,
                &mut nelem,
                off.as_mut_ptr(),
                len.as_mut_ptr(),
            ) < 0
            {
                break Err(crate::error::VolError::Hdf5(
                    "H5Ssel_iter_get_seq_list failed".into(),
                ));
            }
            if nseq == 0 {
                break Ok(());
            }
            for i in 0..nseq {
                f(off[i], len[i]);
            }
        };
        a.H5Ssel_iter_close(it);
        result
    }
}

/// Copies packed `data` (elements of `elem` bytes) into `buf` at the
/// positions `space` selects (all of it, contiguous, for `H5S_ALL`).
///
/// # Safety
/// `buf` holds every element `space` can select.
pub unsafe fn scatter(
    api: &Api,
    space: hid_t,
    elem: usize,
    data: &[u8],
    buf: *mut u8,
) -> Result<()> {
    if space == ALL {
        std::ptr::copy_nonoverlapping(data.as_ptr(), buf, data.len());
        return Ok(());
    }
    let mut at = 0usize;
    // With `elem` given, runs are in bytes.
    for_each_run(api, space, elem, |off, len| {
        let n = len.min(data.len() - at);
        std::ptr::copy_nonoverlapping(data.as_ptr().add(at), buf.add(off as usize), n);
        at += n;
    })
}

/// The inverse of [`scatter`]: packs the selected elements of `buf`.
///
/// # Safety
/// As [`scatter`].
pub unsafe fn gather(
    api: &Api,
    space: hid_t,
    elem: usize,
    buf: *const u8,
    out: &mut [u8],
) -> Result<()> {
    if space == ALL {
        std::ptr::copy_nonoverlapping(buf, out.as_mut_ptr(), out.len());
        return Ok(());
    }
    let mut at = 0usize;
    for_each_run(api, space, elem, |off, len| {
        let n = len.min(out.len() - at);
        std::ptr::copy_nonoverlapping(buf.add(off as usize), out.as_mut_ptr().add(at), n);
        at += n;
    })
}
