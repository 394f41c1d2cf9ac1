//! H5Ocopy: an object, and everything below a group, copied into the same
//! or another store — metadata documents, attributes, links, and dataset
//! values in slabs (chunks never written are not copied: they read as the
//! fill value in the copy too). As HDF5 does on request, soft and external
//! links inside may be copied as the objects they lead to, and objects that
//! references name copied along, the references then naming the copies.

use std::collections::HashMap;
use std::ffi::{c_char, c_void};
use std::sync::Arc;

use h5lake_engine::Domain;
use h5lake_types::{Datatype, DimSel, Selection};
use serde_json::{json, Value};

use crate::api::h5;
use crate::dataset::{ensure_free, parent_for_create};
use crate::error::{guard, Result, VolError};
use crate::objects::{c_str, link_target, locate, resolve_in, Obj};
use crate::sys::{self, hid_t};

const SHALLOW_HIERARCHY: u32 = 0x0001;
const EXPAND_SOFT_LINK: u32 = 0x0002;
const EXPAND_EXT_LINK: u32 = 0x0004;
const EXPAND_REFERENCE: u32 = 0x0008;
const WITHOUT_ATTR: u32 = 0x0010;
/// Bytes of dataset values moved per step.
const SLAB_BYTES: u64 = 64 << 20;

struct Copier<'a> {
    dst: &'a Domain,
    flags: u32,
    /// Source id → copy: an object linked twice is copied once.
    done: HashMap<String, String>,
}

impl Copier<'_> {
    fn object(&mut self, src: &Arc<Domain>, id: &str, depth: u32) -> Result<String> {
        if let Some(c) = self.done.get(id) {
            return Ok(c.clone());
        }
        let doc = src.get_doc(id)?;
        let props = || {
            let mut p = doc
                .get("creationProperties")
                .cloned()
                .unwrap_or_else(|| json!({}));
            // A dataset's own settings of h5lake's go with it, as HDF5's
            // copy keeps a dataset's layout: its chunk format (columnar),
            // and that its chunks are hidden under a contiguous layout.
            let own: serde_json::Map<String, Value> = doc
                .get("h5lake")
                .and_then(Value::as_object)
                .filter(|_| id.starts_with("d-"))
                .map(|o| {
                    o.iter()
                        .filter(|(k, _)| matches!(k.as_str(), "chunkFormat" | "layout"))
                        .map(|(k, v)| (k.clone(), v.clone()))
                        .collect()
                })
                .unwrap_or_default();
            if !own.is_empty() {
                p["h5lake"] = Value::Object(own);
            }
            p
        };
        let new = match id.as_bytes().first() {
            Some(b'd') => {
                self.dst
                    .create_dataset(doc["type"].clone(), doc["shape"].clone(), props())?
            }
            Some(b't') => self.dst.create_datatype(doc["type"].clone())?,
            _ => self.dst.create_group(props())?,
        };
        self.done.insert(id.to_string(), new.clone());
        if id.starts_with("d-") {
            self.values(src, id, &new, depth)?;
        }
        if self.flags & WITHOUT_ATTR == 0 {
            let mut attrs = Vec::new();
            for n in src.attr_names(id)? {
                let mut a = src.attr_get(id, &n)?;
                // As HDF5: references held by attributes name copies, or
                // nothing (also within one file).
                if let Ok(t) = Datatype::from_json(&a["type"]) {
                    if let Some(v) = a.get_mut("value") {
                        self.fix_refs(src, &t, v, depth)?;
                    }
                }
                attrs.push((n, a));
            }
            if !attrs.is_empty() {
                self.dst.attrs_create(&new, attrs, true)?;
            }
        }
        if id.starts_with("g-") && (self.flags & SHALLOW_HIERARCHY == 0 || depth == 0) {
            for (name, link) in src.links(id)? {
                let class = link.get("class").and_then(Value::as_str).unwrap_or("");
                let path = link.get("h5path").and_then(Value::as_str).unwrap_or("");
                let target = match class {
                    "H5L_TYPE_HARD" => Some((src.clone(), link_target(src, id, &link, 0)?)),
                    "H5L_TYPE_SOFT" if self.flags & EXPAND_SOFT_LINK != 0 => {
                        resolve_in(src, id, path).ok()
                    }
                    // as HDF5: a link whose target is missing stays a link
                    "H5L_TYPE_EXTERNAL" if self.flags & EXPAND_EXT_LINK != 0 => {
                        resolve_in(src, id, &name).ok()
                    }
                    _ => None,
                };
                let copied = match target {
                    Some((d, t)) => {
                        json!({"class": "H5L_TYPE_HARD", "id": self.object(&d, &t, depth + 1)?})
                    }
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

    /// With `H5O_COPY_EXPAND_REFERENCE_FLAG`, copies the objects the
    /// references in `value` (of type `t`, JSON) name and makes it name the
    /// copies; without, makes them null references. References held inside
    /// compounds, arrays or sequences are kept as they are (as HDF5 does).
    fn fix_refs(
        &mut self,
        src: &Arc<Domain>,
        t: &Datatype,
        value: &mut Value,
        depth: u32,
    ) -> Result<()> {
        let expand = self.flags & EXPAND_REFERENCE != 0;
        match value {
            Value::Array(items) => {
                for v in items {
                    self.fix_refs(src, t, v, depth)?;
                }
            }
            Value::String(r) if matches!(t, Datatype::Reference { .. }) && !r.is_empty() => match r
                .rsplit_once('/')
                .map(|(c, i)| (c.to_string(), i.to_string()))
            {
                Some((coll, id)) if expand => {
                    let copy = self.object(src, &id, depth + 1)?;
                    *r = format!("{coll}/{copy}");
                }
                _ => r.clear(),
            },
            Value::Object(o) if *t == Datatype::RegionReference => {
                match o.get("id").and_then(Value::as_str).map(str::to_string) {
                    Some(id) if expand => {
                        let copy = self.object(src, &id, depth + 1)?;
                        o.insert("id".into(), Value::String(copy));
                    }
                    _ => *value = Value::Null,
                }
            }
            _ => {}
        }
        Ok(())
    }

    fn values(&mut self, src: &Arc<Domain>, from: &str, to: &str, depth: u32) -> Result<()> {
        if src.chunk_count(from)? == 0 {
            return Ok(());
        }
        let m = src.dataset_meta(from)?;
        let Some((&rows, rest)) = m.dims.split_first() else {
            return Ok(());
        };
        // As HDF5: a dataset's references are kept within one file, and
        // name copies or nothing in another.
        let fix = src.location() != self.dst.location()
            && matches!(
                m.dtype,
                Datatype::Reference { .. } | Datatype::RegionReference
            );
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
                let mut items = src.read_vlen(from, &sel)?;
                if fix {
                    for it in items.iter_mut() {
                        let mut v = h5lake_types::vlen_to_json(&m.dtype, it)
                            .map_err(|e| VolError::Invalid(e.to_string()))?;
                        self.fix_refs(src, &m.dtype, &mut v, depth)?;
                        *it = h5lake_types::vlen_element(&m.dtype, &v)
                            .map_err(|e| VolError::Invalid(e.to_string()))?;
                    }
                }
                self.dst.write_vlen(to, &sel, &items)?;
            } else {
                let es = m.dtype.fixed_size().unwrap_or(0);
                let mut buf = vec![0u8; (sel.num_elements() as usize) * es];
                src.read(from, &sel, &mut buf)?;
                if fix {
                    for e in buf.chunks_mut(es.max(1)) {
                        let mut v = h5lake_types::element_to_json(&m.dtype, e)
                            .map_err(|e| VolError::Invalid(e.to_string()))?;
                        self.fix_refs(src, &m.dtype, &mut v, depth)?;
                        let b = h5lake_types::json_to_element(&m.dtype, &v)
                            .map_err(|e| VolError::Invalid(e.to_string()))?;
                        e.copy_from_slice(&b);
                    }
                }
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
        // The source name is followed through soft and external links.
        let (src, from) = resolve_in(&s.dom, &locate(s, loc1)?, c_str(src_name)?)?;
        let start = locate(d, loc2)?;
        let (parent, last) = parent_for_create(api, d, &start, c_str(dst_name)?, lcpl)?;
        ensure_free(d, &parent, &last, "object copy")?;
        let mut flags = 0u32;
        if ocpypl > 0 {
            api.f.H5Pget_copy_object(ocpypl, &mut flags);
        }
        let mut c = Copier {
            dst: &d.dom,
            flags,
            done: HashMap::new(),
        };
        let new = c.object(&src, &from, 0)?;
        d.dom
            .link_create(&parent, &last, json!({"class": "H5L_TYPE_HARD", "id": new}))?;
        Ok(0)
    })
}
