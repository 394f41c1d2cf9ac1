//! Element values between h5lake's stored form and the caller's memory
//! type: HDF5's own conversion (`H5Tconvert`) for fixed-size types; for
//! variable-length types the caller's pointers (`char *` for strings,
//! `hvl_t` for sequences), allocated with `malloc` on reads because HDF5's
//! reclaim calls (`H5Treclaim`, h5py's) free them with `free`.

use h5lake_types::Datatype;

use crate::api::Api;
use crate::error::{check, Result, VolError};
use crate::sys::{self, hid_t};
use crate::types::{to_hdf5, TypeId};

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

/// Refuses a read whose stored type `dt` HDF5 cannot convert to
/// `mem_type`, before anything is read into the caller's buffer (a read
/// that reads in place and then finds no conversion left raw stored bytes
/// there: pointers of a string read, which the program's clean-up freed).
pub fn check_conversion(api: &Api, dt: &Datatype, mem_type: hid_t) -> Result<()> {
    let ftype = to_hdf5(api, dt)?;
    let f = &api.f;
    // SAFETY: both are valid type ids; `H5Tfind` fills in a pointer to
    // data it owns, which is not kept.
    unsafe {
        if check(f.H5Tequal(ftype.0, mem_type), "H5Tequal")? > 0 {
            return Ok(());
        }
        let mut cdata = std::ptr::null_mut();
        if f.H5Tfind(ftype.0, mem_type, &mut cdata).is_none() {
            return Err(VolError::Invalid(
                "no conversion between the stored and the memory datatype (HDF5: no \
                 appropriate function for conversion path)"
                    .into(),
            ));
        }
    }
    Ok(())
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
    let ftype = to_hdf5(api, dt)?;
    convert(api, ftype.0, mem_type, n, buf, dxpl)
}

/// Stored (file-form) fixed-size elements, `n` of them, as elements of
/// `mem_type`, onto `background` (`n` packed elements of `mem_type`: the
/// caller's buffer, whose bytes that no member of `mem_type` takes from
/// the stored type keep their values, as HDF5 keeps them when a program
/// reads a compound member by member).
pub fn fixed_to_memory(
    api: &Api,
    dt: &Datatype,
    mut data: Vec<u8>,
    n: usize,
    mem_type: hid_t,
    background: Option<Vec<u8>>,
    dxpl: hid_t,
) -> Result<Vec<u8>> {
    // SAFETY: `mem_type` is the caller's type id.
    let msize = unsafe { api.f.H5Tget_size(mem_type) };
    let fsize = dt.fixed_size().unwrap_or(0);
    data.resize(n * fsize.max(msize), 0);
    let ftype = to_hdf5(api, dt)?;
    convert_over(api, ftype.0, mem_type, n, &mut data, background, dxpl)?;
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
            let member = check(
                f.H5Tget_member_type(mem_type, i as u32),
                "H5Tget_member_type",
            )?;
            let lacks = lacks_members(api, &field.dtype, member);
            f.H5Tclose(member);
            if lacks? {
                return Ok(true);
            }
        }
    }
    Ok(false)
}

thread_local! {
    /// The allocator a dataset read's transfer list names for
    /// variable-length data (`H5Pset_vlen_mem_manager`), while it runs.
    static VLEN_ALLOC: std::cell::Cell<(sys::H5MM_allocate_t, usize)> =
        const { std::cell::Cell::new((None, 0)) };
}

/// Makes the reads on this thread allocate variable-length data with the
/// allocator `dxpl` names, if any, until the guard is dropped. HDF5's
/// `H5Dvlen_get_buf_size` counts the bytes a read needs through such an
/// allocator (it answered 0 when its allocator was passed over).
pub fn use_allocator_of(api: &Api, dxpl: hid_t) -> AllocatorGuard {
    let mut func: sys::H5MM_allocate_t = None;
    let mut info: *mut std::ffi::c_void = std::ptr::null_mut();
    if dxpl != sys::H5P_DEFAULT as hid_t {
        // SAFETY: `dxpl` is the caller's transfer list; the free function
        // is not asked for.
        let got = unsafe {
            api.f.H5Pget_vlen_mem_manager(
                dxpl,
                &mut func,
                &mut info,
                std::ptr::null_mut(),
                std::ptr::null_mut(),
            )
        };
        if got < 0 {
            func = None;
        }
    }
    VLEN_ALLOC.with(|a| a.set((func, info as usize)));
    AllocatorGuard(())
}

/// Restores `malloc` for variable-length data when dropped.
pub struct AllocatorGuard(());

impl Drop for AllocatorGuard {
    fn drop(&mut self) {
        let _ = VLEN_ALLOC.try_with(|a| a.set((None, 0)));
    }
}

/// `n` bytes for variable-length data the caller will own: from the
/// transfer list's allocator when the read has one, else `malloc`.
/// Zeroed when `zeroed`.
///
/// # Safety
/// The caller fills or hands over the block; it is the caller's to free.
unsafe fn alloc_vlen(n: usize, zeroed: bool) -> *mut u8 {
    let (func, info) = VLEN_ALLOC.try_with(|a| a.get()).unwrap_or((None, 0));
    match func {
        Some(f) => {
            let p = f(n, info as *mut std::ffi::c_void) as *mut u8;
            if zeroed && !p.is_null() {
                std::ptr::write_bytes(p, 0, n);
            }
            p
        }
        None if zeroed => libc::calloc(n, 1) as *mut u8,
        None => libc::malloc(n) as *mut u8,
    }
}

/// Appends an `hvl_t` of `len` elements whose bytes are `body`, copied to
/// a fresh block (null when empty) that belongs to the caller.
pub fn push_hvl(out: &mut Vec<u8>, len: usize, body: &[u8]) -> Result<()> {
    let p = if body.is_empty() {
        std::ptr::null_mut()
    } else {
        // SAFETY: a fresh allocation, filled within its length.
        unsafe {
            let p = alloc_vlen(body.len(), false);
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
                        let p = alloc_vlen(it.len() + 1, false);
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

/// How one stored part of a record lands in the caller's memory element.
enum Part {
    /// Fixed-size bytes at `off`; `conv` converts the stored type to the
    /// memory type when the two differ.
    Fixed {
        off: usize,
        ssize: usize,
        msize: usize,
        conv: Option<(TypeId, TypeId)>,
    },
    /// A variable-length string: `char *` at `off`.
    Str { off: usize },
    /// A variable-length sequence: `hvl_t` at `off` of elements laid out
    /// by `elem`, `msize` bytes each in memory.
    Seq {
        off: usize,
        elem: Box<[Part]>,
        stored: Box<Datatype>,
        msize: usize,
    },
    /// A stored member the memory type leaves out (h5py reading some
    /// fields): skipped on reads; a write without it is refused.
    Skip { stored: Datatype, name: String },
}

/// Records (elements of compounds and arrays with variable-length parts,
/// and sequences of such) between their stored form and the caller's
/// memory type: the variable-length parts as `char *` and `hvl_t`, newly
/// `malloc`ed on reads (HDF5's reclaim calls free them).
pub struct RecordMem {
    parts: Box<[Part]>,
    /// Elements are a top-level string's or sequence's payload, whose
    /// byte count the stored record form puts in front.
    counted: bool,
    size: usize,
}

impl RecordMem {
    /// The plan for stored type `dt` (variable-length) in `mem_type`.
    ///
    /// # Errors
    /// A memory type whose shape does not match the stored one, or that
    /// asks for a conversion HDF5 cannot do.
    pub fn of(api: &Api, dt: &Datatype, mem_type: hid_t) -> Result<RecordMem> {
        let mut parts = Vec::new();
        plan(api, dt, mem_type, 0, &mut parts)?;
        Ok(RecordMem {
            parts: parts.into(),
            counted: dt.is_top_level_vlen(),
            // SAFETY: the caller's type id.
            size: unsafe { api.f.H5Tget_size(mem_type) },
        })
    }

    /// The bytes one element takes in memory.
    pub fn size(&self) -> usize {
        self.size
    }

    /// Stored elements as packed memory elements.
    ///
    /// # Errors
    /// A corrupt record; a failed conversion.
    pub fn to_memory(&self, api: &Api, items: &[Vec<u8>]) -> Result<Vec<u8>> {
        let mut out = vec![0u8; items.len() * self.size];
        let mut counted = Vec::new();
        for (item, dst) in items.iter().zip(out.chunks_mut(self.size.max(1))) {
            let rec: &[u8] = if self.counted {
                counted.clear();
                counted.extend((item.len() as u32).to_le_bytes());
                counted.extend_from_slice(item);
                &counted
            } else {
                item
            };
            let mut pos = 0;
            // SAFETY: `dst` is one memory element, which the plan was made for.
            unsafe { read_parts(api, &self.parts, rec, &mut pos, dst.as_mut_ptr())? };
        }
        Ok(out)
    }

    /// The stored elements of packed memory elements.
    ///
    /// # Safety
    /// Every pointer in `mem` is null or valid for its part.
    ///
    /// # Errors
    /// A memory type without some stored member; a failed conversion.
    pub unsafe fn from_memory(&self, api: &Api, mem: &[u8]) -> Result<Vec<Vec<u8>>> {
        mem.chunks(self.size.max(1))
            .map(|src| {
                let mut rec = Vec::new();
                write_parts(api, &self.parts, src.as_ptr(), &mut rec)?;
                if self.counted {
                    rec.drain(..4);
                }
                Ok(rec)
            })
            .collect()
    }
}

fn plan(api: &Api, dt: &Datatype, mem: hid_t, off: usize, out: &mut Vec<Part>) -> Result<()> {
    let f = &api.f;
    let mismatch = || {
        VolError::Unsupported(format!(
            "converting {} to a memory type of another shape",
            dt.to_json()
        ))
    };
    // SAFETY (whole function): `mem` and the member/super ids made here are
    // valid type ids; the ones kept are owned by the plan.
    unsafe {
        let class = f.H5Tget_class(mem);
        if let Some(ssize) = dt.fixed_size() {
            let ftype = to_hdf5(api, dt)?;
            let msize = f.H5Tget_size(mem);
            let conv = if check(f.H5Tequal(ftype.0, mem), "H5Tequal")? > 0 {
                None
            } else {
                Some((ftype, TypeId(check(f.H5Tcopy(mem), "H5Tcopy")?)))
            };
            out.push(Part::Fixed {
                off,
                ssize,
                msize,
                conv,
            });
            return Ok(());
        }
        match dt {
            Datatype::String { .. } => {
                if check(f.H5Tis_variable_str(mem), "H5Tis_variable_str")? <= 0 {
                    return Err(mismatch());
                }
                out.push(Part::Str { off });
            }
            Datatype::Vlen { base } => {
                if class != sys::H5T_class_t_H5T_VLEN {
                    return Err(mismatch());
                }
                let sup = TypeId(check(f.H5Tget_super(mem), "H5Tget_super")?);
                let mut elem = Vec::new();
                plan(api, base, sup.0, 0, &mut elem)?;
                out.push(Part::Seq {
                    off,
                    elem: elem.into(),
                    stored: base.clone(),
                    msize: f.H5Tget_size(sup.0),
                });
            }
            Datatype::Compound { fields, .. } => {
                if class != sys::H5T_class_t_H5T_COMPOUND {
                    return Err(mismatch());
                }
                for field in fields {
                    let name = std::ffi::CString::new(field.name.as_str())
                        .map_err(|_| VolError::Invalid("member name holds a NUL byte".into()))?;
                    let i = f.H5Tget_member_index(mem, name.as_ptr());
                    if i < 0 {
                        out.push(Part::Skip {
                            stored: field.dtype.clone(),
                            name: field.name.clone(),
                        });
                        continue;
                    }
                    let moff = f.H5Tget_member_offset(mem, i as u32);
                    let mt = TypeId(check(
                        f.H5Tget_member_type(mem, i as u32),
                        "H5Tget_member_type",
                    )?);
                    plan(api, &field.dtype, mt.0, off + moff, out)?;
                }
            }
            Datatype::Array { base, dims } => {
                let n: u64 = dims.iter().product();
                if class != sys::H5T_class_t_H5T_ARRAY {
                    return Err(mismatch());
                }
                let sup = TypeId(check(f.H5Tget_super(mem), "H5Tget_super")?);
                let esize = f.H5Tget_size(sup.0);
                if esize * n as usize != f.H5Tget_size(mem) {
                    return Err(mismatch());
                }
                for k in 0..n as usize {
                    plan(api, base, sup.0, off + k * esize, out)?;
                }
            }
            _ => return Err(mismatch()),
        }
    }
    Ok(())
}

fn corrupt(e: h5lake_types::TypeError) -> VolError {
    VolError::Invalid(format!("stored variable-length data: {e}"))
}

fn counted_at(rec: &[u8], pos: &mut usize) -> Result<std::ops::Range<usize>> {
    let n = rec
        .get(*pos..*pos + 4)
        .and_then(|b| b.try_into().ok())
        .map(u32::from_le_bytes)
        .ok_or_else(|| VolError::Invalid("truncated variable-length record".into()))?
        as usize;
    let body = *pos + 4..*pos + 4 + n;
    if body.end > rec.len() {
        return Err(VolError::Invalid("truncated variable-length record".into()));
    }
    *pos = body.end;
    Ok(body)
}

/// Converts one element of HDF5 type `from` at `src` into `to` at `dst`.
unsafe fn convert_one(
    api: &Api,
    from: hid_t,
    to: hid_t,
    src: &[u8],
    dst: *mut u8,
    dsize: usize,
) -> Result<()> {
    let mut buf = src.to_vec();
    buf.resize(src.len().max(dsize), 0);
    convert(api, from, to, 1, &mut buf, sys::H5P_DEFAULT as hid_t)?;
    std::ptr::copy_nonoverlapping(buf.as_ptr(), dst, dsize);
    Ok(())
}

/// Fills the memory element at `dst` from the record at `rec[*pos]`.
unsafe fn read_parts(
    api: &Api,
    parts: &[Part],
    rec: &[u8],
    pos: &mut usize,
    dst: *mut u8,
) -> Result<()> {
    let word = std::mem::size_of::<usize>();
    for part in parts {
        match part {
            Part::Fixed {
                off,
                ssize,
                msize,
                conv,
            } => {
                let src = rec
                    .get(*pos..*pos + ssize)
                    .ok_or_else(|| VolError::Invalid("truncated variable-length record".into()))?;
                match conv {
                    None => std::ptr::copy_nonoverlapping(src.as_ptr(), dst.add(*off), *msize),
                    Some((ft, mt)) => convert_one(api, ft.0, mt.0, src, dst.add(*off), *msize)?,
                }
                *pos += ssize;
            }
            Part::Str { off } => {
                let body = &rec[counted_at(rec, pos)?];
                let p = alloc_vlen(body.len() + 1, false);
                if p.is_null() {
                    return Err(VolError::Invalid("out of memory".into()));
                }
                std::ptr::copy_nonoverlapping(body.as_ptr(), p, body.len());
                *p.add(body.len()) = 0;
                std::ptr::copy_nonoverlapping(
                    (p as usize).to_ne_bytes().as_ptr(),
                    dst.add(*off),
                    word,
                );
            }
            Part::Seq {
                off,
                elem,
                stored,
                msize,
            } => {
                let body = &rec[counted_at(rec, pos)?];
                let mut starts = Vec::new();
                let mut at = 0;
                while at < body.len() {
                    starts.push(at);
                    at += h5lake_types::record::record_len(stored, body, at).map_err(corrupt)?;
                    if stored.fixed_size() == Some(0) {
                        break;
                    }
                }
                let n = starts.len();
                let p = if n == 0 {
                    std::ptr::null_mut()
                } else {
                    alloc_vlen(n.saturating_mul((*msize).max(1)), true)
                };
                if n > 0 && p.is_null() {
                    return Err(VolError::Invalid("out of memory".into()));
                }
                for (k, &s) in starts.iter().enumerate() {
                    let mut q = s;
                    read_parts(api, elem, body, &mut q, p.add(k * msize))?;
                }
                let mut hvl = Vec::with_capacity(2 * word);
                hvl.extend(n.to_ne_bytes());
                hvl.extend((p as usize).to_ne_bytes());
                std::ptr::copy_nonoverlapping(hvl.as_ptr(), dst.add(*off), hvl.len());
            }
            Part::Skip { stored, .. } => {
                *pos += h5lake_types::record::record_len(stored, rec, *pos).map_err(corrupt)?;
            }
        }
    }
    Ok(())
}

/// Appends the record of the memory element at `src`.
unsafe fn write_parts(api: &Api, parts: &[Part], src: *const u8, out: &mut Vec<u8>) -> Result<()> {
    let word = std::mem::size_of::<usize>();
    let read_word = |at: *const u8| {
        let mut w = [0u8; 8];
        std::ptr::copy_nonoverlapping(at, w.as_mut_ptr(), word);
        usize::from_ne_bytes(w)
    };
    let push_counted = |out: &mut Vec<u8>, body: &[u8]| -> Result<()> {
        let n = u32::try_from(body.len())
            .map_err(|_| VolError::Invalid("a variable-length part above 4 GiB".into()))?;
        out.extend(n.to_le_bytes());
        out.extend_from_slice(body);
        Ok(())
    };
    for part in parts {
        match part {
            Part::Fixed {
                off,
                ssize,
                msize,
                conv,
            } => {
                let m = std::slice::from_raw_parts(src.add(*off), *msize);
                match conv {
                    None => out.extend_from_slice(&m[..*ssize]),
                    Some((ft, mt)) => {
                        let at = out.len();
                        out.resize(at + ssize, 0);
                        convert_one(api, mt.0, ft.0, m, out.as_mut_ptr().add(at), *ssize)?;
                    }
                }
            }
            Part::Str { off } => {
                let p = read_word(src.add(*off)) as *const std::ffi::c_char;
                let body = if p.is_null() {
                    &[][..]
                } else {
                    std::ffi::CStr::from_ptr(p).to_bytes()
                };
                push_counted(out, body)?;
            }
            Part::Seq {
                off, elem, msize, ..
            } => {
                let n = read_word(src.add(*off));
                let p = read_word(src.add(*off + word)) as *const u8;
                let mut body = Vec::new();
                if !p.is_null() {
                    for k in 0..n {
                        write_parts(api, elem, p.add(k * msize), &mut body)?;
                    }
                }
                push_counted(out, &body)?;
            }
            Part::Skip { name, .. } => {
                return Err(VolError::Unsupported(format!(
                    "writing a compound with variable-length parts without its member {name:?}"
                )))
            }
        }
    }
    Ok(())
}

/// Variable-length elements in the caller's memory: plain strings and
/// sequences of fixed-size elements, or records.
pub enum VarMem {
    Simple(VlenMem),
    Records(RecordMem),
}

impl VarMem {
    /// The memory form `mem_type` asks for, for stored variable-length type `dt`.
    ///
    /// # Errors
    /// As [`VlenMem::of`] and [`RecordMem::of`].
    pub fn of(api: &Api, dt: &Datatype, mem_type: hid_t) -> Result<VarMem> {
        let simple = match dt {
            Datatype::Vlen { base } => !base.is_variable(),
            other => other.is_top_level_vlen(),
        };
        Ok(if simple {
            match VlenMem::of(api, dt, mem_type) {
                Ok(v) => VarMem::Simple(v),
                // A sequence read as one of another base type (int32 as
                // double): element by element, converted as HDF5 converts.
                Err(e) if matches!(dt, Datatype::Vlen { .. }) => {
                    VarMem::Records(RecordMem::of(api, dt, mem_type).map_err(|_| e)?)
                }
                Err(e) => return Err(e),
            }
        } else {
            VarMem::Records(RecordMem::of(api, dt, mem_type)?)
        })
    }

    /// The bytes one element takes in memory.
    pub fn size(&self) -> usize {
        match self {
            VarMem::Simple(v) => v.size(),
            VarMem::Records(r) => r.size(),
        }
    }

    /// Stored elements as packed memory elements (newly allocated parts).
    ///
    /// # Errors
    /// Out of memory; corrupt records; failed conversions.
    pub fn to_memory(&self, api: &Api, items: &[Vec<u8>]) -> Result<Vec<u8>> {
        match self {
            VarMem::Simple(v) => v.to_memory(items),
            VarMem::Records(r) => r.to_memory(api, items),
        }
    }

    /// The stored elements of packed memory elements.
    ///
    /// # Safety
    /// Every pointer in `mem` is null or valid for its element.
    ///
    /// # Errors
    /// As [`RecordMem::from_memory`].
    pub unsafe fn from_memory(&self, api: &Api, mem: &[u8]) -> Result<Vec<Vec<u8>>> {
        match self {
            VarMem::Simple(v) => Ok(v.from_memory(mem)),
            VarMem::Records(r) => r.from_memory(api, mem),
        }
    }
}
