//! H5Ocopy: an object, and everything below a group, copied into the same
//! or another store — metadata documents, attributes, links, and dataset
//! values in slabs (chunks never written are not copied: they read as the
//! fill value in the copy too).

use std::collections::HashMap;
use std::ffi::{c_char, c_void};

use h5lake_engine::Domain;
use h5lake_types::{DimSel, Selection};
use serde_json::{json, Value};

use crate::api::h5;
use crate::dataset::{ensure_free, parent_for_create};
use crate::error::{guard, Result, VolError};
use crate::objects::{c_str, link_target, locate, resolve, Obj};
use crate::sys::{self, hid_t};

const SHALLOW_HIERARCHY: u32 = 0x0001;
const EXPAND_SOFT_LINK: u32 = 0x0002;
const WITHOUT_ATTR: u32 = 0x0010;
/// Bytes of dataset values moved per step.
const SLAB_BYTES: u64 = 64 << 20;

struct Copier<'a> {
    src: &'a Domain,
    dst: &'a Domain,
    flags: u32,
    /// Source id → copy: an object linked twice is copied once.
    done: HashMap<String, String>,
}

impl Copier<'_> {
    fn object(&mut self, id: &str, depth: u32) -> Result<String> {
        if let Some(c) = self.done.get(id) {
            return Ok(c.clone());
        }
        let doc = self.src.get_doc(id)?;
        let new = match id.as_bytes().first() {
            Some(b'd') => {
                let new = self.dst.create_dataset(
                    doc["type"].clone(),
                    doc["shape"].clone(),
                    doc.get("creationProperties")
                        .cloned()
                        .unwrap_or_else(|| json!({})),
                )?;
                self.values(id, &new)?;
                new
            }
            Some(b't') => self.dst.create_datatype(doc["type"].clone())?,
            _ => self.dst.create_group(
                doc.get("creationProperties")
                    .cloned()
                    .unwrap_or_else(|| json!({})),
            )?,
        };
        self.done.insert(id.to_string(), new.clone());
        if self.flags & WITHOUT_ATTR == 0 {
            let attrs = self
                .src
                .attr_names(id)?
                .into_iter()
                .map(|n| Ok((n.clone(), self.src.attr_get(id, &n)?)))
                .collect::<Result<Vec<_>>>()?;
            if !attrs.is_empty() {
                self.dst.attrs_create(&new, attrs, true)?;
            }
        }
        if id.starts_with("g-") && (self.flags & SHALLOW_HIERARCHY == 0 || depth == 0) {
            for (name, link) in self.src.links(id)? {
                let class = link.get("class").and_then(Value::as_str).unwrap_or("");
                let target = match class {
                    "H5L_TYPE_HARD" => Some(link_target(self.src, id, &link, 0)?),
                    "H5L_TYPE_SOFT" if self.flags & EXPAND_SOFT_LINK != 0 => {
                        link_target(self.src, id, &link, 0).ok()
                    }
                    _ => None,
                };
                let copied = match target {
                    Some(t) => json!({"class": "H5L_TYPE_HARD", "id": self.object(&t, depth + 1)?}),
                    None => {
                        let mut l = link.clone();
                        if let Some(m) = l.as_object_mut() {
                            m.remove("created");
                        }
                        l
                    }
                };
                self.dst.link_create(&new, &name, copied)?;
            }
        }
        Ok(new)
    }

    fn values(&self, from: &str, to: &str) -> Result<()> {
        if self.src.chunk_count(from)? == 0 {
            return Ok(());
        }
        let m = self.src.dataset_meta(from)?;
        let Some((&rows, rest)) = m.dims.split_first() else {
            return Ok(());
        };
        let row_bytes =
            rest.iter().product::<u64>().max(1) * m.dtype.fixed_size().unwrap_or(64) as u64;
        let step = (SLAB_BYTES / row_bytes.max(1)).max(1);
        let mut start = 0;
        while start < rows {
            let count = step.min(rows - start);
            let mut dims = vec![DimSel::Slice {
                start,
                count,
                step: 1,
            }];
            dims.extend(rest.iter().map(|&n| DimSel::Slice {
                start: 0,
                count: n,
                step: 1,
            }));
            let sel = Selection::Orthogonal(dims);
            if m.dtype.is_variable() {
                self.dst
                    .write_vlen(to, &sel, &self.src.read_vlen(from, &sel)?)?;
            } else {
                let mut buf =
                    vec![0u8; (sel.num_elements() as usize) * m.dtype.fixed_size().unwrap_or(0)];
                self.src.read(from, &sel, &mut buf)?;
                self.dst.write(to, &sel, &buf)?;
            }
            start += count;
        }
        Ok(())
    }
}

#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn copy(
    src_obj: *mut c_void,
    loc1: *const sys::H5VL_loc_params_t,
    src_name: *const c_char,
    dst_obj: *mut c_void,
    loc2: *const sys::H5VL_loc_params_t,
    dst_name: *const c_char,
    ocpypl: hid_t,
    lcpl: hid_t,
    _dxpl: hid_t,
    _req: *mut *mut c_void,
) -> sys::herr_t {
    guard("object copy", -1, || {
        let api = h5().map_err(VolError::Library)?;
        let s = Obj::from_ptr(src_obj)?;
        let d = Obj::from_ptr(dst_obj)?;
        let from = resolve(&s.dom, &locate(s, loc1)?, c_str(src_name)?)?;
        let start = locate(d, loc2)?;
        let (parent, last) = parent_for_create(api, d, &start, c_str(dst_name)?, lcpl)?;
        ensure_free(d, &parent, &last, "object copy")?;
        let mut flags = 0u32;
        if ocpypl > 0 {
            api.f.H5Pget_copy_object(ocpypl, &mut flags);
        }
        let mut c = Copier {
            src: &s.dom,
            dst: &d.dom,
            flags,
            done: HashMap::new(),
        };
        let new = c.object(&from, 0)?;
        d.dom
            .link_create(&parent, &last, json!({"class": "H5L_TYPE_HARD", "id": new}))?;
        Ok(0)
    })
}
