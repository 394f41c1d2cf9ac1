//! Elements of variable-length types between h5lake's form and the HDF5
//! library's memory form.
//!
//! h5lake keeps them serialized (see `h5lake_types::record`: a string or a
//! sequence as a 4-byte count and its bytes, inside compounds and arrays
//! one part after another; a top-level string or sequence without its
//! count). The library reads and writes a variable-length string as a
//! `char*` and a sequence as an `hvl_t` (length, pointer to its elements
//! in memory form), inside compounds and arrays laid out packed, as
//! [`crate::types::memory_type`] builds them.
//!
//! Object references differ too, fixed-size as they are: h5lake keeps the
//! target's collection and id (`datasets/d-…`, NUL-padded, as HSDS does),
//! the library an `hobj_ref_t` (the target's address in the file;
//! `H5T_STD_REF_OBJ`, h5py's references) or an `H5R_ref_t` (HDF5's current
//! API, `H5T_STD_REF`). Which one becomes the other depends on the file at
//! hand: the caller converts them ([`RefConv`]). So do dataset region
//! references (h5py's `regionref`): h5lake keeps h5json's JSON object (the
//! dataset's id and the selection spelled out), the library a
//! `hdset_reg_ref_t` (`H5T_STD_REF_DSETREG`: the dataset's address and
//! the selection's place in the file's global heap).

use std::ffi::{c_char, c_void, CStr};
use std::mem::size_of;

use h5lake_types::Datatype;
use hdf5_sys::h5r::{hobj_ref_t, H5R_ref_t};
use hdf5_sys::h5t::hvl_t;

use crate::{Hdf5Error, Result};

/// Which reference a [`RefConv`] converts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum RefKind {
    /// An `hobj_ref_t` (`H5T_STD_REF_OBJ`, h5py's references).
    Object,
    /// An `H5R_ref_t` (`H5T_STD_REF`, HDF5's current API).
    Current,
    /// A `hdset_reg_ref_t` (`H5T_STD_REF_DSETREG`, h5py's region
    /// references); stored as h5json's JSON text, empty for a null one.
    Region,
}

impl RefKind {
    pub(crate) fn of_object(current_api: bool) -> Self {
        if current_api {
            RefKind::Current
        } else {
            RefKind::Object
        }
    }

    /// Bytes of such a reference in memory.
    pub(crate) fn size(self) -> usize {
        match self {
            RefKind::Object => size_of::<hobj_ref_t>(),
            RefKind::Current => size_of::<H5R_ref_t>(),
            RefKind::Region => size_of::<hdf5_sys::h5r::hdset_reg_ref_t>(),
        }
    }
}

/// Converts one reference from one form to the other: the bytes the
/// library holds to the stored form when reading, the stored form to
/// those when writing.
pub(crate) type RefConv<'a> = dyn FnMut(RefKind, &[u8]) -> Result<Vec<u8>> + 'a;

/// A [`RefConv`] for types without references (never called for them).
pub(crate) fn no_refs(_: RefKind, _: &[u8]) -> Result<Vec<u8>> {
    Err(Hdf5Error::Unsupported("object references here".into()))
}

/// Whether values of `dt` hold object references anywhere.
pub(crate) fn has_refs(dt: &Datatype) -> bool {
    match dt {
        Datatype::Reference { .. } | Datatype::RegionReference => true,
        Datatype::Compound { fields, .. } => fields.iter().any(|f| has_refs(&f.dtype)),
        Datatype::Array { base, .. } | Datatype::Vlen { base } => has_refs(base),
        _ => false,
    }
}

/// Whether elements of `dt` are other bytes in memory than stored (and
/// so are converted here, not copied).
pub(crate) fn converts(dt: &Datatype) -> bool {
    dt.is_variable() || has_refs(dt)
}

/// Bytes an element of `dt` takes in memory form.
pub(crate) fn mem_size(dt: &Datatype) -> usize {
    if !converts(dt) {
        return dt.fixed_size().unwrap_or(0);
    }
    match dt {
        Datatype::String { .. } => size_of::<*const c_char>(),
        Datatype::Reference { current_api, .. } => RefKind::of_object(*current_api).size(),
        Datatype::RegionReference => RefKind::Region.size(),
        Datatype::Compound { fields, .. } => fields.iter().map(|f| mem_size(&f.dtype)).sum(),
        Datatype::Array { base, dims } => mem_size(base) * dims.iter().product::<u64>() as usize,
        // Sequences.
        _ => size_of::<hvl_t>(),
    }
}

fn malformed() -> Hdf5Error {
    Hdf5Error::Types(h5lake_types::TypeError::InvalidValue(
        "malformed variable-length element".into(),
    ))
}

fn push_counted(out: &mut Vec<u8>, body: &[u8]) -> Result<()> {
    let n = u32::try_from(body.len()).map_err(|_| {
        Hdf5Error::Unsupported("a variable-length element part of 4 GiB or more".into())
    })?;
    out.extend_from_slice(&n.to_le_bytes());
    out.extend_from_slice(body);
    Ok(())
}

/// The `n` elements of `dt` in `buf`, each in h5lake's form (`refs`
/// converts object references).
///
/// # Safety
/// `buf` holds `n` elements of `dt` the library wrote in memory form (its
/// pointers point at what the library allocated and has not freed).
pub(crate) unsafe fn from_memory(
    dt: &Datatype,
    buf: &[u8],
    n: usize,
    refs: &mut RefConv,
) -> Result<Vec<Vec<u8>>> {
    let es = mem_size(dt);
    let top = dt.is_top_level_vlen();
    (0..n)
        .map(|i| {
            let mut out = Vec::new();
            read_elem(dt, &buf[i * es..(i + 1) * es], &mut out, refs)?;
            if top {
                // A top-level string's or sequence's payload goes without
                // its count.
                out.drain(..4);
            }
            Ok(out)
        })
        .collect()
}

/// Appends the element in `mem` (its memory form) to `out` serialized.
unsafe fn read_elem(
    dt: &Datatype,
    mem: &[u8],
    out: &mut Vec<u8>,
    refs: &mut RefConv,
) -> Result<()> {
    if !converts(dt) {
        out.extend_from_slice(&mem[..mem_size(dt)]);
        return Ok(());
    }
    match dt {
        Datatype::Reference { current_api, .. } => {
            let kind = RefKind::of_object(*current_api);
            out.extend(refs(kind, &mem[..kind.size()])?);
            Ok(())
        }
        Datatype::RegionReference => {
            let kind = RefKind::Region;
            push_counted(out, &refs(kind, &mem[..kind.size()])?)
        }
        Datatype::String { .. } => {
            let p = mem.as_ptr().cast::<*const c_char>().read_unaligned();
            let s = if p.is_null() {
                &[][..]
            } else {
                CStr::from_ptr(p).to_bytes()
            };
            push_counted(out, s)
        }
        Datatype::Vlen { base } => {
            let v = mem.as_ptr().cast::<hvl_t>().read_unaligned();
            let es = mem_size(base);
            let items = if v.p.is_null() {
                &[][..]
            } else {
                std::slice::from_raw_parts(v.p.cast::<u8>(), v.len * es)
            };
            let mut body = Vec::new();
            for item in items.chunks_exact(es.max(1)) {
                read_elem(base, item, &mut body, refs)?;
            }
            push_counted(out, &body)
        }
        Datatype::Compound { fields, .. } => {
            let mut at = 0;
            for f in fields {
                let n = mem_size(&f.dtype);
                read_elem(&f.dtype, &mem[at..at + n], out, refs)?;
                at += n;
            }
            Ok(())
        }
        Datatype::Array { base, dims } => {
            let es = mem_size(base);
            for k in 0..dims.iter().product::<u64>() as usize {
                read_elem(base, &mem[k * es..(k + 1) * es], out, refs)?;
            }
            Ok(())
        }
        _ => Err(Hdf5Error::Unsupported(format!(
            "{} in memory form",
            dt.to_json()
        ))),
    }
}

/// Elements in memory form, and the strings and sequence bodies their
/// pointers point into (kept alive, and in place, as long as this is).
pub(crate) struct MemBuf {
    pub bytes: Vec<u8>,
    _parts: Vec<Vec<u8>>,
}

/// `elems` (h5lake's form, as the engine reads them) in memory form
/// (`refs` converts object references).
///
/// # Errors
/// Elements that are not serialized elements of `dt`; references `refs`
/// refuses.
pub(crate) fn to_memory<E: AsRef<[u8]>>(
    dt: &Datatype,
    elems: &[E],
    refs: &mut RefConv,
) -> Result<MemBuf> {
    let mut bytes = Vec::with_capacity(elems.len() * mem_size(dt));
    let mut parts = Vec::new();
    let mut counted = Vec::new();
    for e in elems {
        let e = e.as_ref();
        let rec = if dt.is_top_level_vlen() {
            counted.clear();
            push_counted(&mut counted, e)?;
            &counted
        } else {
            e
        };
        let mut pos = 0;
        write_elem(dt, rec, &mut pos, &mut bytes, &mut parts, refs)?;
        if pos != rec.len() {
            return Err(malformed());
        }
    }
    Ok(MemBuf {
        bytes,
        _parts: parts,
    })
}

fn take<'a>(rec: &'a [u8], pos: &mut usize, n: usize) -> Result<&'a [u8]> {
    let b = rec
        .get(*pos..)
        .and_then(|r| r.get(..n))
        .ok_or_else(malformed)?;
    *pos += n;
    Ok(b)
}

fn take_counted<'a>(rec: &'a [u8], pos: &mut usize) -> Result<&'a [u8]> {
    let count: [u8; 4] = take(rec, pos, 4)?.try_into().expect("4 bytes");
    take(rec, pos, u32::from_le_bytes(count) as usize)
}

/// Appends the memory form of the serialized element at `rec[*pos]` to
/// `out`, moving `pos` past it; what its pointers point at goes to `parts`.
fn write_elem(
    dt: &Datatype,
    rec: &[u8],
    pos: &mut usize,
    out: &mut Vec<u8>,
    parts: &mut Vec<Vec<u8>>,
    refs: &mut RefConv,
) -> Result<()> {
    if !converts(dt) {
        out.extend_from_slice(take(rec, pos, dt.fixed_size().unwrap_or(0))?);
        return Ok(());
    }
    match dt {
        Datatype::Reference { size, current_api } => out.extend(refs(
            RefKind::of_object(*current_api),
            take(rec, pos, *size)?,
        )?),
        Datatype::RegionReference => out.extend(refs(RefKind::Region, take_counted(rec, pos)?)?),
        Datatype::String { .. } => {
            let body = take_counted(rec, pos)?;
            // A C string: HDF5 strings end at their first NUL, so a NUL
            // with text after it cannot be written (trailing NULs are
            // padding, dropped).
            let len = body.iter().position(|&b| b == 0).unwrap_or(body.len());
            if body[len..].iter().any(|&b| b != 0) {
                return Err(Hdf5Error::Unsupported(format!(
                    "the variable-length string {:?}, which holds a NUL byte before its end \
                     (an HDF5 variable-length string ends at its first NUL)",
                    String::from_utf8_lossy(body)
                )));
            }
            let mut s = Vec::with_capacity(len + 1);
            s.extend_from_slice(&body[..len]);
            s.push(0);
            out.extend_from_slice(&(s.as_ptr() as usize).to_ne_bytes());
            // Moving the Vec into `parts` leaves its heap buffer in place.
            parts.push(s);
        }
        Datatype::Vlen { base } => {
            let body = take_counted(rec, pos)?;
            let mut mem = Vec::new();
            let mut at = 0;
            let mut len = 0;
            while at < body.len() {
                write_elem(base, body, &mut at, &mut mem, parts, refs)?;
                len += 1;
            }
            let v = hvl_t {
                len,
                p: if mem.is_empty() {
                    std::ptr::null_mut()
                } else {
                    mem.as_mut_ptr().cast::<c_void>()
                },
            };
            let mut b = [0u8; size_of::<hvl_t>()];
            // SAFETY: `b` has room for one hvl_t; unaligned, as `out` is.
            unsafe { b.as_mut_ptr().cast::<hvl_t>().write_unaligned(v) };
            out.extend_from_slice(&b);
            parts.push(mem);
        }
        Datatype::Compound { fields, .. } => {
            for f in fields {
                write_elem(&f.dtype, rec, pos, out, parts, refs)?;
            }
        }
        Datatype::Array { base, dims } => {
            for _ in 0..dims.iter().product::<u64>() {
                write_elem(base, rec, pos, out, parts, refs)?;
            }
        }
        _ => {
            return Err(Hdf5Error::Unsupported(format!(
                "{} in memory form",
                dt.to_json()
            )))
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn records_go_to_memory_form_and_back() {
        let t = Datatype::from_json(&json!({"class": "H5T_COMPOUND", "fields": [
            {"name": "a", "type": "H5T_STD_I16LE"},
            {"name": "s", "type": {"class": "H5T_STRING", "length": "H5T_VARIABLE"}},
            {"name": "v", "type": {"class": "H5T_VLEN", "base": {"class": "H5T_ARRAY",
                "dims": [2], "base": {"class": "H5T_STRING", "length": "H5T_VARIABLE"}}}},
        ]}))
        .unwrap();
        assert_eq!(mem_size(&t), 2 + 8 + 16);
        let mut rec = Vec::new();
        h5lake_types::record::push_json(
            &t,
            &json!([-3, "héllo", [["a", ""], ["bc", "d"]]]),
            &mut rec,
        )
        .unwrap();
        let mut empty = Vec::new();
        h5lake_types::record::push_json(&t, &json!([0, "", []]), &mut empty).unwrap();
        let elems = vec![rec, empty];
        let mem = to_memory(&t, &elems, &mut no_refs).unwrap();
        assert_eq!(mem.bytes.len(), 2 * mem_size(&t));
        // SAFETY: `mem` is alive and in memory form.
        assert_eq!(
            unsafe { from_memory(&t, &mem.bytes, 2, &mut no_refs) }.unwrap(),
            elems
        );

        let s =
            Datatype::from_json(&json!({"class": "H5T_STRING", "length": "H5T_VARIABLE"})).unwrap();
        let words = vec![b"one".to_vec(), Vec::new()];
        let mem = to_memory(&s, &words, &mut no_refs).unwrap();
        assert_eq!(
            unsafe { from_memory(&s, &mem.bytes, 2, &mut no_refs) }.unwrap(),
            words
        );
        assert!(to_memory(&t, &[vec![1, 2, 3]], &mut no_refs).is_err());
    }

    #[test]
    fn references_are_converted_by_the_caller() {
        // HDF5's dimension-scale lists: a sequence of references, and a
        // compound of a reference and an index.
        let refs_t = Datatype::from_json(&json!({"class": "H5T_VLEN",
            "base": {"class": "H5T_REFERENCE", "base": "H5T_STD_REF_OBJ"}}))
        .unwrap();
        let list_t = Datatype::from_json(&json!({"class": "H5T_COMPOUND", "fields": [
            {"name": "dataset", "type": {"class": "H5T_REFERENCE", "base": "H5T_STD_REF_OBJ"}},
            {"name": "dimension", "type": "H5T_STD_I32LE"}]}))
        .unwrap();
        assert!(
            converts(&list_t) && !converts(&Datatype::from_json(&json!("H5T_STD_I8LE")).unwrap())
        );
        assert_eq!(mem_size(&list_t), 8 + 4);
        let stored = |id: &str| {
            let mut b = id.as_bytes().to_vec();
            b.resize(48, 0);
            b
        };
        // Stored ids ⇄ "addresses": the id's length here.
        let mut to_addr = |_: RefKind, b: &[u8]| {
            let n = b.iter().position(|&c| c == 0).unwrap_or(b.len()) as u64;
            Ok(n.to_ne_bytes().to_vec())
        };
        let mut to_id = |_: RefKind, b: &[u8]| {
            let n = u64::from_ne_bytes(b.try_into().unwrap()) as usize;
            Ok(stored(&"d".repeat(n)))
        };
        let seq = [stored("dd"), stored("ddd")].concat();
        let mem = to_memory(&refs_t, std::slice::from_ref(&seq), &mut to_addr).unwrap();
        let back = unsafe { from_memory(&refs_t, &mem.bytes, 1, &mut to_id) }.unwrap();
        assert_eq!(back, vec![seq]);
        let rec = [stored("d"), 7i32.to_le_bytes().to_vec()].concat();
        let mem = to_memory(&list_t, &[&rec], &mut to_addr).unwrap();
        assert_eq!(&mem.bytes[..8], &1u64.to_ne_bytes());
        let back = unsafe { from_memory(&list_t, &mem.bytes, 1, &mut to_id) }.unwrap();
        assert_eq!(back, vec![rec]);
    }
}
