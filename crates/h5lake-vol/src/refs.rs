//! Object references between their stored form and the caller's memory.
//!
//! h5lake stores an object reference as HSDS does: the referenced object's
//! collection and id as a NUL-padded string (`datasets/d-…`). A caller holds
//! one in memory either as an `hobj_ref_t` (`H5T_STD_REF_OBJ`, 8 bytes: the
//! object's address, for h5lake the last 8 bytes of its token, the first 8
//! being the same for every object of a store) or as an `H5R_ref_t`
//! (`H5T_STD_REF`, 64 bytes; HDF5's dimension scales use these with every
//! connector but the native one).
//!
//! HDF5 has no public call that makes an `H5R_ref_t` from a token, and
//! making each one through `H5Rcreate_object` would open every referenced
//! object. Values read are therefore built in the layout of HDF5 2.0's
//! `H5R_ref_priv_t` (token, file name, location id, encoded size, type,
//! token size, app-ref flag); [`Refs`] checks that layout once against a
//! reference made by `H5Rcreate_object` and refuses references if it differs.
//!
//! Types holding references (compounds with reference members, sequences of
//! references) are converted member by member here; every other member goes
//! through HDF5's own conversion.

use std::ffi::{c_char, CStr};
use std::sync::OnceLock;

use h5lake_types::Datatype;

use crate::api::Api;
use crate::error::{check, Result, VolError};
use crate::objects::{Kind, Obj};
use crate::regions;
use crate::sys::{self, hid_t};
use crate::types::{to_hdf5, TypeId};

/// Whether values of `dt` hold object references anywhere.
pub fn contains(dt: &Datatype) -> bool {
    match dt {
        Datatype::Reference { .. } | Datatype::RegionReference => true,
        Datatype::Compound { fields, .. } => fields.iter().any(|f| contains(&f.dtype)),
        Datatype::Array { base, .. } | Datatype::Vlen { base } => contains(base),
        _ => false,
    }
}

/// Byte offsets in HDF5 2.0's `H5R_ref_priv_t` (an `H5R_ref_t`'s contents).
mod layout {
    pub const TOKEN: usize = 0;
    pub const LOC_ID: usize = 32;
    pub const ENCODE_SIZE: usize = 40;
    pub const TYPE: usize = 44;
    pub const TOKEN_SIZE: usize = 45;
    pub const APP_REF: usize = 46;
    /// `sizeof(H5R_ref_t)`.
    pub const SIZE: usize = 64;
    /// Encoded size of an object reference in the same file: a 2-byte
    /// header, the token's size, the token.
    pub const ENCODED: u32 = 2 + 1 + 16;
}

const TOKEN_BYTES: usize = std::mem::size_of::<sys::H5O_token_t>();

/// Converts reference-holding values for one object's file. Values read as
/// `H5R_ref_t` each hold a reference on one file id registered for them.
pub struct Refs<'a> {
    api: &'a Api,
    obj: &'a Obj,
    /// The file id references read here point into, once registered.
    file: std::cell::Cell<Option<hid_t>>,
}

impl Drop for Refs<'_> {
    fn drop(&mut self) {
        if let Some(fid) = self.file.get() {
            // Registered and never handed to a reference.
            // SAFETY: the id was registered here and nothing else holds it.
            unsafe { self.api.f.H5Idec_ref(fid) };
        }
    }
}

impl<'a> Refs<'a> {
    pub fn new(api: &'a Api, obj: &'a Obj) -> Self {
        Refs {
            api,
            obj,
            file: std::cell::Cell::new(None),
        }
    }

    /// `n` stored elements of `dt` as packed elements of `mem_type`.
    ///
    /// # Safety
    /// `mem_type` is a valid datatype id.
    pub unsafe fn to_memory(
        &self,
        dt: &Datatype,
        stored: &[u8],
        n: usize,
        mem_type: hid_t,
    ) -> Result<Vec<u8>> {
        let fsize = dt.fixed_size().unwrap_or(0);
        let msize = self.api.f.H5Tget_size(mem_type);
        let mut out = vec![0u8; n * msize];
        for k in 0..n {
            let src = &stored[k * fsize..(k + 1) * fsize];
            self.elem_out(dt, src, mem_type, out.as_mut_ptr().add(k * msize))?;
        }
        Ok(out)
    }

    /// `n` packed elements of `mem_type` in the stored form of `dt`.
    ///
    /// # Safety
    /// `mem_type` is a valid datatype id and `mem` holds `n` of its elements.
    pub unsafe fn from_memory(
        &self,
        dt: &Datatype,
        mem: &[u8],
        n: usize,
        mem_type: hid_t,
    ) -> Result<Vec<u8>> {
        let fsize = dt.fixed_size().unwrap_or(0);
        let msize = self.api.f.H5Tget_size(mem_type);
        let mut out = vec![0u8; n * fsize];
        for k in 0..n {
            self.elem_in(
                dt,
                mem.as_ptr().add(k * msize),
                mem_type,
                &mut out[k * fsize..(k + 1) * fsize],
            )?;
        }
        Ok(out)
    }

    /// Stored sequences of `base` (each item packed stored elements) as
    /// `hvl_t`s of `mem_type`'s base type, their memory `malloc`ed.
    ///
    /// # Safety
    /// `mem_type` is a valid variable-length datatype id.
    pub unsafe fn vlen_to_memory(
        &self,
        base: &Datatype,
        items: &[Vec<u8>],
        mem_type: hid_t,
    ) -> Result<Vec<u8>> {
        let mbase = self.vlen_base(mem_type)?;
        let fsize = base.fixed_size().unwrap_or(1).max(1);
        let mut out = Vec::with_capacity(items.len() * std::mem::size_of::<sys::hvl_t>());
        for it in items {
            let len = it.len() / fsize;
            let body = self.to_memory(base, it, len, mbase.0)?;
            crate::memory::push_hvl(&mut out, len, &body)?;
        }
        Ok(out)
    }

    /// `hvl_t`s of `mem_type` as stored sequences of `base`.
    ///
    /// # Safety
    /// `mem` holds `n` valid `hvl_t`s of `mem_type`.
    pub unsafe fn vlen_from_memory(
        &self,
        base: &Datatype,
        mem: &[u8],
        n: usize,
        mem_type: hid_t,
    ) -> Result<Vec<Vec<u8>>> {
        let mbase = self.vlen_base(mem_type)?;
        let msize = self.api.f.H5Tget_size(mbase.0);
        let word = std::mem::size_of::<usize>();
        let at = |i: usize| usize::from_ne_bytes(mem[i..i + word].try_into().expect("a word"));
        (0..n)
            .map(|k| {
                let (len, p) = (at(2 * word * k), at(2 * word * k + word) as *const u8);
                if len == 0 || p.is_null() {
                    return Ok(Vec::new());
                }
                let body = std::slice::from_raw_parts(p, len * msize);
                self.from_memory(base, body, len, mbase.0)
            })
            .collect()
    }

    /// Stored region references (h5json text; empty for null) as
    /// `hdset_reg_ref_t`s, their selections entered in the process's table.
    ///
    /// # Safety
    /// `mem_type` is a valid datatype id.
    pub unsafe fn regions_to_memory(&self, items: &[Vec<u8>], mem_type: hid_t) -> Result<Vec<u8>> {
        self.check_region_type(mem_type)?;
        let mut out = Vec::with_capacity(items.len() * regions::SIZE);
        for it in items {
            let v =
                h5lake_types::region_ref_json(it).map_err(|e| VolError::Invalid(e.to_string()))?;
            if v.is_null() {
                out.extend_from_slice(&[0u8; regions::SIZE]);
                continue;
            }
            let (id, sel) = regions::split(&v)?;
            let addr = addr_of_token(&crate::token::of_id(&id)?);
            out.extend_from_slice(&regions::encode(addr, regions::register(&sel)?));
        }
        Ok(out)
    }

    /// `n` packed `hdset_reg_ref_t`s as stored region references.
    ///
    /// # Safety
    /// `mem_type` is a valid datatype id; `mem` holds `n` of its elements.
    pub unsafe fn regions_from_memory(
        &self,
        mem: &[u8],
        n: usize,
        mem_type: hid_t,
    ) -> Result<Vec<Vec<u8>>> {
        self.check_region_type(mem_type)?;
        mem.chunks_exact(regions::SIZE)
            .take(n)
            .map(|b| {
                let Some((addr, index)) = regions::decode(b.try_into().expect("12 bytes")) else {
                    return Ok(Vec::new());
                };
                let id = self.id_of_addr(addr)?;
                if !id.starts_with("d-") {
                    return Err(VolError::Invalid(
                        "a region reference must name a dataset".into(),
                    ));
                }
                let mut v = regions::selection(index)?;
                v["id"] = id.into();
                h5lake_types::region_ref_bytes(&v).map_err(|e| VolError::Invalid(e.to_string()))
            })
            .collect()
    }

    unsafe fn check_region_type(&self, mem_type: hid_t) -> Result<()> {
        let f = &self.api.f;
        if check(
            f.H5Tequal(mem_type, self.api.g.t_std_ref_dsetreg.id()),
            "H5Tequal",
        )? > 0
        {
            Ok(())
        } else {
            Err(VolError::Unsupported(
                "converting region references to a type other than H5T_STD_REF_DSETREG".into(),
            ))
        }
    }

    unsafe fn vlen_base(&self, mem_type: hid_t) -> Result<TypeId> {
        let f = &self.api.f;
        if f.H5Tget_class(mem_type) != sys::H5T_class_t_H5T_VLEN {
            return Err(VolError::Unsupported(
                "reading a sequence of references into a non-sequence memory type".into(),
            ));
        }
        Ok(TypeId(check(f.H5Tget_super(mem_type), "H5Tget_super")?))
    }

    /// One stored element at `src` into one memory element at `dst`.
    unsafe fn elem_out(&self, dt: &Datatype, src: &[u8], mt: hid_t, dst: *mut u8) -> Result<()> {
        let f = &self.api.f;
        match dt {
            Datatype::RegionReference => Err(nested_regions()),
            Datatype::Reference { .. } => {
                let id = stored_id(src);
                match self.mem_ref(mt)? {
                    MemRef::Addr => {
                        let addr = match &id {
                            Some(id) => addr_of_token(&crate::token::of_id(id)?),
                            None => 0,
                        };
                        std::ptr::copy_nonoverlapping(addr.to_ne_bytes().as_ptr(), dst, 8);
                    }
                    MemRef::Full => {
                        let r = match &id {
                            Some(id) => self.make_ref(id)?,
                            None => [0u8; layout::SIZE],
                        };
                        std::ptr::copy_nonoverlapping(r.as_ptr(), dst, layout::SIZE);
                    }
                }
                Ok(())
            }
            Datatype::Compound { fields, .. } if contains(dt) => {
                for (name, off, mtype) in members(self.api, mt)? {
                    if let Some(fd) = fields.iter().find(|fd| fd.name == name) {
                        self.elem_out(&fd.dtype, &src[fd.offset..], mtype.0, dst.add(off))?;
                    }
                }
                Ok(())
            }
            Datatype::Array { base, dims } if contains(dt) => {
                let mbase = TypeId(check(f.H5Tget_super(mt), "H5Tget_super")?);
                let (bsize, msize) = (base.fixed_size().unwrap_or(0), f.H5Tget_size(mbase.0));
                for k in 0..dims.iter().product::<u64>() as usize {
                    self.elem_out(base, &src[k * bsize..], mbase.0, dst.add(k * msize))?;
                }
                Ok(())
            }
            _ => {
                let (fsize, msize) = (dt.fixed_size().unwrap_or(0), f.H5Tget_size(mt));
                let mut buf = vec![0u8; fsize.max(msize)];
                buf[..fsize].copy_from_slice(&src[..fsize]);
                let ftype = to_hdf5(self.api, dt)?;
                convert_one(self.api, ftype.0, mt, &mut buf)?;
                std::ptr::copy_nonoverlapping(buf.as_ptr(), dst, msize);
                Ok(())
            }
        }
    }

    /// One memory element at `src` into its stored form at `dst`.
    unsafe fn elem_in(
        &self,
        dt: &Datatype,
        src: *const u8,
        mt: hid_t,
        dst: &mut [u8],
    ) -> Result<()> {
        let f = &self.api.f;
        match dt {
            Datatype::RegionReference => Err(nested_regions()),
            Datatype::Reference { size, .. } => {
                let id = match self.mem_ref(mt)? {
                    MemRef::Addr => {
                        let mut a = [0u8; 8];
                        std::ptr::copy_nonoverlapping(src, a.as_mut_ptr(), 8);
                        match u64::from_ne_bytes(a) {
                            0 => None,
                            addr => Some(self.id_of_addr(addr)?),
                        }
                    }
                    MemRef::Full => self.id_of_ref(src)?,
                };
                let text = id.map(|id| stored_text(&id)).unwrap_or_default();
                if text.len() > *size {
                    return Err(VolError::Invalid(format!("reference {text} is too long")));
                }
                dst[..*size].fill(0);
                dst[..text.len()].copy_from_slice(text.as_bytes());
                Ok(())
            }
            Datatype::Compound { fields, .. } if contains(dt) => {
                for (name, off, mtype) in members(self.api, mt)? {
                    if let Some(fd) = fields.iter().find(|fd| fd.name == name) {
                        let size = fd.dtype.fixed_size().unwrap_or(0);
                        self.elem_in(
                            &fd.dtype,
                            src.add(off),
                            mtype.0,
                            &mut dst[fd.offset..fd.offset + size],
                        )?;
                    }
                }
                Ok(())
            }
            Datatype::Array { base, dims } if contains(dt) => {
                let mbase = TypeId(check(f.H5Tget_super(mt), "H5Tget_super")?);
                let (bsize, msize) = (base.fixed_size().unwrap_or(0), f.H5Tget_size(mbase.0));
                for k in 0..dims.iter().product::<u64>() as usize {
                    self.elem_in(
                        base,
                        src.add(k * msize),
                        mbase.0,
                        &mut dst[k * bsize..(k + 1) * bsize],
                    )?;
                }
                Ok(())
            }
            _ => {
                let (fsize, msize) = (dt.fixed_size().unwrap_or(0), f.H5Tget_size(mt));
                let mut buf = vec![0u8; fsize.max(msize)];
                std::ptr::copy_nonoverlapping(src, buf.as_mut_ptr(), msize);
                let ftype = to_hdf5(self.api, dt)?;
                convert_one(self.api, mt, ftype.0, &mut buf)?;
                dst[..fsize].copy_from_slice(&buf[..fsize]);
                Ok(())
            }
        }
    }

    unsafe fn mem_ref(&self, mt: hid_t) -> Result<MemRef> {
        let f = &self.api.f;
        if check(f.H5Tequal(mt, self.api.g.t_std_ref_obj.id()), "H5Tequal")? > 0 {
            Ok(MemRef::Addr)
        } else if check(f.H5Tequal(mt, self.api.g.t_std_ref.id()), "H5Tequal")? > 0 {
            Ok(MemRef::Full)
        } else {
            Err(VolError::Unsupported(
                "converting object references to a type other than H5T_STD_REF_OBJ or H5T_STD_REF"
                    .into(),
            ))
        }
    }

    /// The id of the object whose `hobj_ref_t` is `addr`.
    fn id_of_addr(&self, addr: u64) -> Result<String> {
        let root = crate::token::of_id(self.obj.dom.root_id())?;
        let mut t = root;
        t.__data[8..16].copy_from_slice(&addr.to_be_bytes());
        crate::token::id_of(&self.obj.dom, &t)
    }

    /// The id an `H5R_ref_t` names (`None` for a null reference).
    unsafe fn id_of_ref(&self, r: *const u8) -> Result<Option<String>> {
        let f = &self.api.f;
        let bytes = std::slice::from_raw_parts(r, layout::SIZE);
        if bytes.iter().all(|&b| b == 0) {
            return Ok(None);
        }
        let ty = f.H5Rget_type(r.cast());
        if ty != sys::H5R_type_t_H5R_OBJECT2 {
            return Err(VolError::Unsupported(
                "region and attribute references (only object references are stored)".into(),
            ));
        }
        self.check_layout()?;
        if bytes[layout::TOKEN_SIZE] as usize != TOKEN_BYTES {
            return Err(VolError::Invalid(
                "a reference to an object of another connector's file".into(),
            ));
        }
        let mut t = sys::H5O_token_t { __data: [0; 16] };
        t.__data
            .copy_from_slice(&bytes[layout::TOKEN..layout::TOKEN + TOKEN_BYTES]);
        crate::token::id_of(&self.obj.dom, &t)
            .map(Some)
            .map_err(|_| {
                VolError::Invalid("the reference names an object that is not in this file".into())
            })
    }

    /// An `H5R_ref_t` to object `id`, holding a reference on this file's id.
    unsafe fn make_ref(&self, id: &str) -> Result<[u8; layout::SIZE]> {
        self.check_layout()?;
        let f = &self.api.f;
        // `self.file` holds one spare reference on the id: this value takes
        // it, and a new spare is added for the next.
        let fid = match self.file.take() {
            Some(fid) => fid,
            None => self.register_file()?,
        };
        let mut r = [0u8; layout::SIZE];
        r[layout::TOKEN..layout::TOKEN + TOKEN_BYTES]
            .copy_from_slice(&crate::token::of_id(id)?.__data);
        r[layout::LOC_ID..layout::LOC_ID + 8].copy_from_slice(&fid.to_ne_bytes());
        r[layout::ENCODE_SIZE..layout::ENCODE_SIZE + 4]
            .copy_from_slice(&layout::ENCODED.to_ne_bytes());
        r[layout::TYPE] = sys::H5R_type_t_H5R_OBJECT2 as u8;
        r[layout::TOKEN_SIZE] = TOKEN_BYTES as u8;
        r[layout::APP_REF] = 1;
        // Keep one more reference for the next value; dropped if unused.
        check(f.H5Iinc_ref(fid), "H5Iinc_ref")?;
        self.file.set(Some(fid));
        Ok(r)
    }

    /// A new file id for this object's store.
    unsafe fn register_file(&self) -> Result<hid_t> {
        let obj = Obj::boxed(self.obj.dom.clone(), Kind::File, "/".into());
        let fid = self.api.f.H5VLwrap_register(obj, sys::H5I_type_t_H5I_FILE);
        if fid < 0 {
            Obj::free(obj);
            return Err(VolError::Hdf5("H5VLwrap_register failed".into()));
        }
        Ok(fid)
    }

    /// Compares the assumed `H5R_ref_t` layout with a reference HDF5 makes
    /// itself, once per process.
    unsafe fn check_layout(&self) -> Result<()> {
        static OK: OnceLock<bool> = OnceLock::new();
        if *OK.get_or_init(|| self.layout_matches().unwrap_or(false)) {
            Ok(())
        } else {
            Err(VolError::Unsupported(
                "H5R_ref_t references with this HDF5 version (its reference layout differs from 2.0's)"
                    .into(),
            ))
        }
    }

    unsafe fn layout_matches(&self) -> Result<bool> {
        let f = &self.api.f;
        let fid = self.register_file()?;
        let mut r = [0u8; layout::SIZE];
        let made = f.H5Rcreate_object(
            fid,
            c"/".as_ptr(),
            sys::H5P_DEFAULT as hid_t,
            r.as_mut_ptr().cast(),
        );
        let root = crate::token::of_id(self.obj.dom.root_id())?;
        let ok = made >= 0
            && r[layout::TOKEN..layout::TOKEN + TOKEN_BYTES] == root.__data
            && r[layout::TYPE] == sys::H5R_type_t_H5R_OBJECT2 as u8
            && r[layout::TOKEN_SIZE] as usize == TOKEN_BYTES
            // HDF5 attaches a file id of its own making.
            && f.H5Iget_type(i64::from_ne_bytes(
                r[layout::LOC_ID..layout::LOC_ID + 8].try_into().expect("8"),
            )) == sys::H5I_type_t_H5I_FILE
            && u32::from_ne_bytes(r[layout::ENCODE_SIZE..layout::ENCODE_SIZE + 4].try_into().expect("4"))
                == layout::ENCODED;
        if made >= 0 {
            f.H5Rdestroy(r.as_mut_ptr().cast());
        }
        f.H5Idec_ref(fid);
        Ok(ok)
    }
}

/// Region references are variable-length: only whole values of their own.
pub fn nested_regions() -> VolError {
    VolError::Unsupported("region references inside compound, array or sequence types".into())
}

enum MemRef {
    /// `hobj_ref_t`
    Addr,
    /// `H5R_ref_t`
    Full,
}

/// The `hobj_ref_t` of an h5lake object: its token's last 8 bytes (the
/// first 8 are the same for every object of a store).
pub fn addr_of_token(t: &sys::H5O_token_t) -> u64 {
    u64::from_be_bytes(t.__data[8..16].try_into().expect("8 bytes"))
}

/// The id a stored reference names (`None` when empty).
fn stored_id(b: &[u8]) -> Option<String> {
    let end = b.iter().position(|&c| c == 0).unwrap_or(b.len());
    let s = std::str::from_utf8(&b[..end]).ok()?;
    let id = s.rsplit('/').next()?;
    (!id.is_empty()).then(|| id.to_string())
}

/// The stored form of a reference to `id`.
fn stored_text(id: &str) -> String {
    let collection = match id.as_bytes().first() {
        Some(b'g') => "groups",
        Some(b'd') => "datasets",
        _ => "datatypes",
    };
    format!("{collection}/{id}")
}

/// A compound memory type's members: name, offset, type.
unsafe fn members(api: &Api, mt: hid_t) -> Result<Vec<(String, usize, TypeId)>> {
    let f = &api.f;
    if f.H5Tget_class(mt) != sys::H5T_class_t_H5T_COMPOUND {
        return Err(VolError::Unsupported(
            "converting a compound type holding references to a non-compound type".into(),
        ));
    }
    let n = check(f.H5Tget_nmembers(mt), "H5Tget_nmembers")? as u32;
    (0..n)
        .map(|i| {
            let p: *mut c_char = f.H5Tget_member_name(mt, i);
            if p.is_null() {
                return Err(VolError::Hdf5("H5Tget_member_name failed".into()));
            }
            let name = CStr::from_ptr(p).to_string_lossy().into_owned();
            f.H5free_memory(p.cast());
            let off = f.H5Tget_member_offset(mt, i);
            let t = TypeId(check(f.H5Tget_member_type(mt, i), "H5Tget_member_type")?);
            Ok((name, off, t))
        })
        .collect()
}

/// Converts one element in place; `buf` holds the larger of the two.
unsafe fn convert_one(api: &Api, from: hid_t, to: hid_t, buf: &mut [u8]) -> Result<()> {
    let f = &api.f;
    if check(f.H5Tequal(from, to), "H5Tequal")? > 0 {
        return Ok(());
    }
    let mut bkg = vec![0u8; buf.len()];
    check(
        f.H5Tconvert(
            from,
            to,
            1,
            buf.as_mut_ptr().cast(),
            bkg.as_mut_ptr().cast(),
            sys::H5P_DEFAULT as hid_t,
        ),
        "converting a member of a type holding references",
    )?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use h5lake_types::Field;

    #[test]
    fn stored_references_name_their_collection() {
        let id = "d-0123abcd-89ef0123-4567-89abcd-ef0123";
        let text = stored_text(id);
        assert_eq!(text, format!("datasets/{id}"));
        let mut padded = text.into_bytes();
        padded.resize(48, 0);
        assert_eq!(stored_id(&padded).as_deref(), Some(id));
        assert_eq!(stored_id(&[0u8; 48]), None);
    }

    #[test]
    fn reference_holding_types_are_found() {
        let r = Datatype::Reference {
            size: 48,
            current_api: true,
        };
        let int = Datatype::from_json(&serde_json::json!("H5T_STD_I32LE")).unwrap();
        assert!(contains(&r));
        assert!(!contains(&int));
        let list = Datatype::Compound {
            fields: vec![
                Field {
                    name: "dataset".into(),
                    dtype: r.clone(),
                    offset: 0,
                },
                Field {
                    name: "dim_idx".into(),
                    dtype: int.clone(),
                    offset: 48,
                },
            ],
            size: 52,
        };
        assert!(contains(&list));
        assert!(contains(&Datatype::Vlen { base: Box::new(r) }));
        assert!(!contains(&Datatype::Vlen {
            base: Box::new(int)
        }));
    }
}
