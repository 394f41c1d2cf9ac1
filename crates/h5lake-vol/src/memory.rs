//! Element values between h5lake's stored form and the caller's memory
//! type: HDF5's own conversion (`H5Tconvert`) for fixed-size types; for
//! variable-length types the caller's pointers (`char *` for strings,
//! `hvl_t` for sequences), allocated with `malloc` on reads because HDF5's
//! reclaim calls (`H5Treclaim`, h5py's) free them with `free`.

use h5lake_types::Datatype;

use crate::api::Api;
use crate::error::{check, Result, VolError};
use crate::sys::{self, hid_t};
use crate::types::to_hdf5;

/// Converts `n` packed elements in place between two HDF5 types; `buf`
/// holds `n` elements of the larger of the two.
fn convert(api: &Api, from: hid_t, to: hid_t, n: usize, buf: &mut [u8], dxpl: hid_t) -> Result<()> {
    convert_over(api, from, to, n, buf, None, dxpl)
}

/// [`convert`] onto `background`: `n` packed elements of `to` whose
/// members the source type lacks keep their values (HDF5's background
/// buffer; without one they come out zero).
fn convert_over(
    api: &Api,
    from: hid_t,
    to: hid_t,
    n: usize,
    buf: &mut [u8],
    background: Option<Vec<u8>>,
    dxpl: hid_t,
) -> Result<()> {
    let f = &api.f;
    // SAFETY: both ids are valid types; `buf` and `bkg` hold n elements of
    // either type (the caller sized `buf`, `bkg` is sized here).
    unsafe {
        if check(f.H5Tequal(from, to), "H5Tequal")? > 0 || n == 0 {
            return Ok(());
        }
        let size = n * f.H5Tget_size(to).max(f.H5Tget_size(from));
        let mut bkg = background.unwrap_or_default();
        bkg.resize(size, 0);
        check(
            f.H5Tconvert(
                from,
                to,
                n,
                buf.as_mut_ptr().cast(),
                bkg.as_mut_ptr().cast(),
                dxpl,
            ),
            "converting between the stored and the memory datatype",
        )?;
    }
    Ok(())
}

/// Whether `mem_type` is exactly the stored type of `dt` (no conversion).
pub fn same_type(api: &Api, dt: &Datatype, mem_type: hid_t) -> Result<bool> {
    let ftype = to_hdf5(api, dt)?;
    // SAFETY: both are valid type ids.
    Ok(unsafe { check(api.f.H5Tequal(ftype.0, mem_type), "H5Tequal")? } > 0)
}

/// Converts `n` stored elements at the start of `buf` to `mem_type` in
/// place; `buf` holds `n` elements of the larger of the two types.
pub fn to_memory_in_place(
    api: &Api,
    dt: &Datatype,
    buf: &mut [u8],
    n: usize,
    mem_type: hid_t,
    dxpl: hid_t,
) -> Result<()> {
    crate::types::refuse_nested_vlen(dt)?;
    let ftype = to_hdf5(api, dt)?;
    convert(api, ftype.0, mem_type, n, buf, dxpl)
}

/// Stored (file-form) fixed-size elements, `n` of them, as elements of
/// `mem_type`.
pub fn fixed_to_memory(
    api: &Api,
    dt: &Datatype,
    mut data: Vec<u8>,
    n: usize,
    mem_type: hid_t,
    dxpl: hid_t,
) -> Result<Vec<u8>> {
    crate::types::refuse_nested_vlen(dt)?;
    // SAFETY: `mem_type` is the caller's type id.
    let msize = unsafe { api.f.H5Tget_size(mem_type) };
    let fsize = dt.fixed_size().unwrap_or(0);
    data.resize(n * fsize.max(msize), 0);
    let ftype = to_hdf5(api, dt)?;
    convert(api, ftype.0, mem_type, n, &mut data, dxpl)?;
    data.truncate(n * msize);
    Ok(data)
}

/// Elements of `mem_type` (packed, `n` of them) in the stored form of `dt`.
///
/// `current` gives the stored elements being overwritten, needed when the
/// memory type leaves out compound members (see [`lacks_members`]).
pub fn fixed_from_memory(
    api: &Api,
    dt: &Datatype,
    mut data: Vec<u8>,
    n: usize,
    mem_type: hid_t,
    current: Option<Vec<u8>>,
    dxpl: hid_t,
) -> Result<Vec<u8>> {
    crate::types::refuse_nested_vlen(dt)?;
    let fsize = dt.fixed_size().unwrap_or(0);
    // SAFETY: `mem_type` is the caller's type id.
    let msize = unsafe { api.f.H5Tget_size(mem_type) };
    data.resize(n * fsize.max(msize), 0);
    let ftype = to_hdf5(api, dt)?;
    convert_over(api, mem_type, ftype.0, n, &mut data, current, dxpl)?;
    data.truncate(n * fsize);
    Ok(data)
}

/// Whether writing elements of `mem_type` to stored type `dt` leaves some
/// stored compound member (at any depth) without a value: h5py's
/// `dset["field"] = …` writes through a compound of that field alone, and
/// the other members must keep what is stored.
pub fn lacks_members(api: &Api, dt: &Datatype, mem_type: hid_t) -> Result<bool> {
    let Datatype::Compound { fields, .. } = dt else {
        return Ok(false);
    };
    let f = &api.f;
    // SAFETY: `mem_type` is a valid type id; member ids are closed here.
    unsafe {
        if f.H5Tget_class(mem_type) != sys::H5T_class_t_H5T_COMPOUND {
            return Ok(false);
        }
        for field in fields {
            let name = std::ffi::CString::new(field.name.as_str())
                .map_err(|_| VolError::Invalid("member name holds a NUL byte".into()))?;
            let i = f.H5Tget_member_index(mem_type, name.as_ptr());
            if i < 0 {
                return Ok(true);
            }
            let member = check(f.H5Tget_member_type(mem_type, i as u32), "H5Tget_member_type")?;
            let lacks = lacks_members(api, &field.dtype, member);
            f.H5Tclose(member);
            if lacks? {
                return Ok(true);
            }
        }
    }
    Ok(false)
}

/// Appends an `hvl_t` of `len` elements whose bytes are `body`, copied to
/// a fresh `malloc` block (null when empty) that belongs to the caller.
pub fn push_hvl(out: &mut Vec<u8>, len: usize, body: &[u8]) -> Result<()> {
    let p = if body.is_empty() {
        std::ptr::null_mut()
    } else {
        // SAFETY: a fresh allocation, filled within its length.
        unsafe {
            let p = libc::malloc(body.len()) as *mut u8;
            if p.is_null() {
                return Err(VolError::Invalid("out of memory".into()));
            }
            std::ptr::copy_nonoverlapping(body.as_ptr(), p, body.len());
            p
        }
    };
    out.extend(len.to_ne_bytes());
    out.extend((p as usize).to_ne_bytes());
    Ok(())
}

/// How variable-length elements sit in the caller's memory.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum VlenMem {
    /// `char *`, NUL-terminated.
    Str,
    /// `hvl_t { size_t len; void *p; }` of elements `base` bytes each.
    Seq { base: usize },
}

impl VlenMem {
    /// The memory form `mem_type` asks for, for stored type `dt`.
    ///
    /// # Errors
    /// Memory types that would need a conversion the connector does not do
    /// (variable-length to fixed-length strings, sequences of another base).
    pub fn of(api: &Api, dt: &Datatype, mem_type: hid_t) -> Result<VlenMem> {
        let f = &api.f;
        // SAFETY: `mem_type` is the caller's type id.
        unsafe {
            if check(f.H5Tis_variable_str(mem_type), "H5Tis_variable_str")? > 0 {
                if matches!(dt, Datatype::String { length: None, .. }) {
                    return Ok(VlenMem::Str);
                }
            } else if f.H5Tget_class(mem_type) == sys::H5T_class_t_H5T_VLEN {
                if let Datatype::Vlen { base } = dt {
                    let ftype = to_hdf5(api, base)?;
                    let mbase =
                        crate::types::TypeId(check(f.H5Tget_super(mem_type), "H5Tget_super")?);
                    if check(f.H5Tequal(ftype.0, mbase.0), "H5Tequal")? > 0 {
                        return Ok(VlenMem::Seq {
                            base: base.fixed_size().unwrap_or(1),
                        });
                    }
                    return Err(VolError::Unsupported(
                        "converting the base type of variable-length sequences".into(),
                    ));
                }
            }
        }
        Err(VolError::Unsupported(
            "converting variable-length data to or from a fixed-size memory type".into(),
        ))
    }

    /// The bytes one element takes in memory.
    pub fn size(self) -> usize {
        match self {
            VlenMem::Str => std::mem::size_of::<*mut u8>(),
            VlenMem::Seq { .. } => std::mem::size_of::<sys::hvl_t>(),
        }
    }

    /// Stored values as packed memory elements; every pointer is newly
    /// `malloc`ed and belongs to the caller.
    pub fn to_memory(self, items: &[Vec<u8>]) -> Result<Vec<u8>> {
        let mut out = Vec::with_capacity(items.len() * self.size());
        for it in items {
            // SAFETY: fresh allocations, filled within their length.
            unsafe {
                match self {
                    VlenMem::Str => {
                        let p = libc::malloc(it.len() + 1) as *mut u8;
                        if p.is_null() {
                            return Err(VolError::Invalid("out of memory".into()));
                        }
                        std::ptr::copy_nonoverlapping(it.as_ptr(), p, it.len());
                        *p.add(it.len()) = 0;
                        out.extend((p as usize).to_ne_bytes());
                    }
                    VlenMem::Seq { base } => push_hvl(&mut out, it.len() / base.max(1), it)?,
                }
            }
        }
        Ok(out)
    }

    /// The values packed memory elements point at.
    ///
    /// # Safety
    /// Every pointer in `mem` is null or valid for its element.
    pub unsafe fn from_memory(self, mem: &[u8]) -> Vec<Vec<u8>> {
        let word = std::mem::size_of::<usize>();
        let at = |i: usize| usize::from_ne_bytes(mem[i..i + word].try_into().expect("a word"));
        mem.chunks(self.size())
            .enumerate()
            .map(|(k, _)| {
                let o = k * self.size();
                match self {
                    VlenMem::Str => {
                        let p = at(o) as *const std::ffi::c_char;
                        if p.is_null() {
                            Vec::new()
                        } else {
                            std::ffi::CStr::from_ptr(p).to_bytes().to_vec()
                        }
                    }
                    VlenMem::Seq { base } => {
                        let (len, p) = (at(o), at(o + word) as *const u8);
                        if p.is_null() || len == 0 {
                            Vec::new()
                        } else {
                            std::slice::from_raw_parts(p, len * base).to_vec()
                        }
                    }
                }
            })
            .collect()
    }
}
