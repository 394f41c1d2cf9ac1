//! Virtual datasets: a dataset whose elements are selections of other
//! datasets — in the same store or in other h5lake stores (local paths,
//! `s3://` URLs) — mapped as HDF5's virtual layout maps them: each mapping
//! pairs a regular hyperslab of the virtual dataset with one of equal shape
//! in a source; what no mapping covers, and what a missing or too-small
//! source cannot give, reads as the fill value.
//!
//! The mappings live in the dataset document under `h5lake.virtual`
//! (HSDS has no virtual layout: to HSDS the dataset holds no chunks and
//! reads as fill). A read asks every source it touches at once, each of
//! those reads being chunk-parallel itself.
//!
//! Other stores are opened under this store's link policy, so a document
//! cannot make a server open a store its operator did not allow.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use h5lake_types::{DimSel, Selection};
use serde_json::{json, Value};

use crate::dataset::{for_each_task, DatasetMeta, OutPtr, Projection};
use crate::domain::{Domain, DomainOptions, OpenMode};
use crate::error::{EngineError, Result};

/// Where the mappings live in a dataset document.
const VIRTUAL_KEY: &str = "/h5lake/virtual";

/// Mappings at most this many are checked pairwise for overlap; more are
/// read one after another (overlapping ones must be, later ones winning).
const MAX_OVERLAP_CHECK: usize = 2048;

/// A regular hyperslab along one dimension: `count` indices from `start`,
/// `step` apart.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Run {
    pub start: u64,
    pub step: u64,
    pub count: u64,
}

impl Run {
    fn last(&self) -> u64 {
        self.start + (self.count - 1) * self.step
    }

    fn of_json(v: &Value) -> Option<Run> {
        let a = v.as_array().filter(|a| a.len() == 3)?;
        let (start, step, count) = (a[0].as_u64()?, a[1].as_u64()?, a[2].as_u64()?);
        let run = Run { start, step, count };
        (step >= 1 && count >= 1 && start.checked_add((count - 1).checked_mul(step)?).is_some())
            .then_some(run)
    }

    fn to_json(self) -> Value {
        json!([self.start, self.step, self.count])
    }
}

/// One mapping: the hyperslab `src` of the dataset at `path` in `store`
/// (this store when `None`) is the hyperslab `dst` of the virtual dataset.
/// A source in an HDF5 `file` is linked into this store when the mapping
/// is made (an anonymous dataset, `id`; `None` if the file or dataset was
/// missing then).
#[derive(Clone, Debug)]
pub struct Mapping {
    pub store: Option<String>,
    pub path: String,
    pub file: Option<String>,
    pub id: Option<String>,
    pub src: Vec<Run>,
    pub dst: Vec<Run>,
    /// For each virtual dimension, the source dimension it runs along
    /// (`None` where the virtual run holds one index).
    pairs: Vec<Option<usize>>,
}

/// The mappings of a virtual dataset.
#[derive(Debug)]
pub struct VirtualMap {
    pub mappings: Vec<Mapping>,
    /// Whether no two mappings' boxes overlap (reads may then run at once).
    disjoint: bool,
}

impl VirtualMap {
    /// The mappings a dataset document declares, checked against its
    /// extent `dims`; `None` for a dataset that is not virtual.
    ///
    /// # Errors
    /// Malformed mappings, selections outside the extent, or source and
    /// virtual selections of different shapes.
    pub fn of_doc(doc: &Value, dims: &[u64]) -> Result<Option<Arc<Self>>> {
        let Some(v) = doc.pointer(VIRTUAL_KEY) else {
            return Ok(None);
        };
        let bad = |m: String| EngineError::Invalid(format!("virtual dataset: {m}"));
        let list = v
            .as_array()
            .ok_or_else(|| bad("the mappings are a list".into()))?;
        let mut mappings = Vec::with_capacity(list.len());
        for (i, mp) in list.iter().enumerate() {
            let runs = |key: &str| -> Result<Vec<Run>> {
                mp.get(key)
                    .and_then(Value::as_array)
                    .and_then(|a| a.iter().map(Run::of_json).collect::<Option<Vec<_>>>())
                    .filter(|r| !r.is_empty())
                    .ok_or_else(|| {
                        bad(format!(
                            "mapping {i}: {key} is a list of [start, step, count] per dimension \
                             (step and count at least 1)"
                        ))
                    })
            };
            let (src, dst) = (runs("src")?, runs("dst")?);
            let path = mp
                .get("path")
                .and_then(Value::as_str)
                .filter(|p| p.starts_with('/'))
                .ok_or_else(|| bad(format!("mapping {i}: path is the source's absolute path")))?;
            let store = match mp.get("store") {
                None | Some(Value::Null) => None,
                Some(Value::String(s)) if !s.is_empty() => Some(s.clone()),
                Some(other) => return Err(bad(format!("mapping {i}: store {other}"))),
            };
            if dst.len() != dims.len() {
                return Err(bad(format!(
                    "mapping {i} selects {} dimensions of a dataset of {}",
                    dst.len(),
                    dims.len()
                )));
            }
            if let Some((d, r)) = dst.iter().enumerate().find(|(d, r)| r.last() >= dims[*d]) {
                return Err(bad(format!(
                    "mapping {i} reaches index {} of dimension {d}, of extent {}",
                    r.last(),
                    dims[d]
                )));
            }
            let pairs = pair_dims(&src, &dst).ok_or_else(|| {
                let shape = |r: &[Run]| r.iter().map(|r| r.count).collect::<Vec<_>>();
                bad(format!(
                    "mapping {i}: the source selection {:?} and the virtual selection {:?} \
                     differ in shape (dimensions of one index aside)",
                    shape(&src),
                    shape(&dst)
                ))
            })?;
            let text = |key: &str| -> Result<Option<String>> {
                match mp.get(key) {
                    None | Some(Value::Null) => Ok(None),
                    Some(Value::String(s)) if !s.is_empty() => Ok(Some(s.clone())),
                    Some(other) => Err(bad(format!("mapping {i}: {key} {other}"))),
                }
            };
            let (file, id) = (text("file")?, text("id")?);
            if id.is_some() && (file.is_none() || store.is_some()) {
                return Err(bad(format!(
                    "mapping {i}: an id names the link to an HDF5 file's dataset in this store"
                )));
            }
            mappings.push(Mapping {
                store,
                file,
                id,
                path: path.to_string(),
                src,
                dst,
                pairs,
            });
        }
        let disjoint = mappings.len() <= MAX_OVERLAP_CHECK
            && mappings.iter().enumerate().all(|(i, a)| {
                mappings[i + 1..].iter().all(|b| {
                    a.dst
                        .iter()
                        .zip(&b.dst)
                        .any(|(x, y)| x.last() < y.start || y.last() < x.start)
                })
            });
        Ok(Some(Arc::new(VirtualMap { mappings, disjoint })))
    }

    /// The mappings as stored.
    pub fn to_json(&self) -> Value {
        Value::Array(
            self.mappings
                .iter()
                .map(|m| {
                    json!({
                        "store": m.store,
                        "path": m.path,
                        "file": m.file,
                        "id": m.id,
                        "src": m.src.iter().map(|r| r.to_json()).collect::<Vec<_>>(),
                        "dst": m.dst.iter().map(|r| r.to_json()).collect::<Vec<_>>(),
                    })
                })
                .collect(),
        )
    }
}

/// Pairs the virtual dimensions of more than one index with the source's,
/// in order; `None` when their counts differ.
fn pair_dims(src: &[Run], dst: &[Run]) -> Option<Vec<Option<usize>>> {
    let s: Vec<usize> = (0..src.len()).filter(|&q| src[q].count > 1).collect();
    let d: Vec<usize> = (0..dst.len()).filter(|&q| dst[q].count > 1).collect();
    if s.len() != d.len()
        || s.iter()
            .zip(&d)
            .any(|(&a, &b)| src[a].count != dst[b].count)
    {
        return None;
    }
    let mut pairs = vec![None; dst.len()];
    for (&a, &b) in s.iter().zip(&d) {
        pairs[b] = Some(a);
    }
    Some(pairs)
}

/// The part of one dimension of a read that one mapping serves: output
/// positions and the source coordinates they come from.
#[derive(Clone, Debug, PartialEq)]
enum Hits {
    /// Outputs `out..out + count`, from `src, src + step, …`.
    Regular {
        out: u64,
        src: u64,
        step: u64,
        count: u64,
    },
    Listed {
        out: Vec<u64>,
        src: Vec<u64>,
    },
}

impl Hits {
    fn len(&self) -> u64 {
        match self {
            Hits::Regular { count, .. } => *count,
            Hits::Listed { out, .. } => out.len() as u64,
        }
    }

    /// Lists as a regular run where they are one.
    fn compact(out: Vec<u64>, src: Vec<u64>) -> Self {
        let regular = out.windows(2).all(|w| w[1] == w[0] + 1)
            && src.len() >= 2
            && src.windows(2).all(|w| w[1] - w[0] == src[1] - src[0]);
        match (regular, out.first(), src.first()) {
            (true, Some(&o), Some(&s)) => Hits::Regular {
                out: o,
                src: s,
                step: src[1] - src[0],
                count: out.len() as u64,
            },
            _ => Hits::Listed { out, src },
        }
    }

    /// Keeps the hits whose source coordinate is below `extent`.
    fn clip(self, extent: u64) -> Self {
        match self {
            Hits::Regular {
                out,
                src,
                step,
                count,
            } => Hits::Regular {
                out,
                src,
                step,
                count: if src >= extent {
                    0
                } else {
                    count.min((extent - 1 - src) / step + 1)
                },
            },
            Hits::Listed { mut out, mut src } => {
                let keep = src.partition_point(|&s| s < extent);
                out.truncate(keep);
                src.truncate(keep);
                Hits::Listed { out, src }
            }
        }
    }

    fn src_sel(&self) -> DimSel {
        match self {
            Hits::Regular {
                src, step, count, ..
            } => DimSel::Slice {
                start: *src,
                count: *count,
                step: *step,
            },
            Hits::Listed { src, .. } => DimSel::Indices(src.clone()),
        }
    }

    /// The output positions, as a contiguous range when they are one.
    fn out_range(&self) -> Option<(u64, u64)> {
        match self {
            Hits::Regular { out, count, .. } => Some((*out, *count)),
            Hits::Listed { out, .. } => {
                let first = *out.first()?;
                out.windows(2)
                    .all(|w| w[1] == w[0] + 1)
                    .then_some((first, out.len() as u64))
            }
        }
    }

    fn out_at(&self, j: u64) -> u64 {
        match self {
            Hits::Regular { out, .. } => out + j,
            Hits::Listed { out, .. } => out[j as usize],
        }
    }
}

/// What one mapping serves of a selection `sel_d` of dimension `d`:
/// `run` is the mapping's virtual run there, `src` its paired source run.
fn dim_hits(sel_d: &DimSel, run: Run, src: Option<Run>) -> Option<Hits> {
    let coord = |k: u64| src.map_or(0, |p| p.start + k * p.step);
    let src_step = src.map_or(1, |p| p.step);
    let index_of = |x: u64| -> Option<u64> {
        let off = x.checked_sub(run.start)?;
        (off % run.step == 0 && off / run.step < run.count).then_some(off / run.step)
    };
    let hits = match sel_d {
        DimSel::Slice { start, count, step } if *count > 0 => {
            let (s0, st, c) = (*start, *step, *count);
            let last = s0 + (c - 1) * st;
            if last < run.start || s0 > run.last() {
                return None;
            }
            // The selection's indices inside the run's bounds.
            let lo = if run.start > s0 {
                (run.start - s0).div_ceil(st)
            } else {
                0
            };
            let hi = ((run.last() - s0) / st).min(c - 1);
            if lo > hi {
                return None;
            }
            if run.step == 1 {
                let k0 = s0 + lo * st - run.start;
                Hits::Regular {
                    out: lo,
                    src: coord(k0),
                    step: st * src_step,
                    count: hi - lo + 1,
                }
            } else {
                let (mut out, mut srcs) = (Vec::new(), Vec::new());
                for i in lo..=hi {
                    if let Some(k) = index_of(s0 + i * st) {
                        out.push(i);
                        srcs.push(coord(k));
                    }
                }
                Hits::compact(out, srcs)
            }
        }
        DimSel::Slice { .. } => return None,
        DimSel::Indices(ix) => {
            let from = ix.partition_point(|&x| x < run.start);
            let (mut out, mut srcs) = (Vec::new(), Vec::new());
            for (i, &x) in ix.iter().enumerate().skip(from) {
                if x > run.last() {
                    break;
                }
                if let Some(k) = index_of(x) {
                    out.push(i as u64);
                    srcs.push(coord(k));
                }
            }
            Hits::compact(out, srcs)
        }
    };
    (hits.len() > 0).then_some(hits)
}

/// A mapping's source, resolved: the domain holding it (`None`: this one)
/// and the dataset.
type Source = (Option<Arc<Domain>>, Arc<DatasetMeta>);

/// Other stores opened for virtual datasets' sources, by location.
#[derive(Default)]
pub(crate) struct SourceStores(Mutex<HashMap<String, Arc<Domain>>>);

/// Why a mapping's source gives less than its selection, for
/// [`Domain::virtual_problems`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SourceProblem {
    pub mapping: usize,
    pub store: Option<String>,
    pub path: String,
    pub problem: String,
}

impl Domain {
    /// The source of `mp`: `Ok(None)` when its store or dataset is missing
    /// (it then reads as fill, as in HDF5); the problem, as text, in `why`.
    fn virtual_source(
        &self,
        m: &DatasetMeta,
        mp: &Mapping,
        why: &mut String,
    ) -> Result<Option<Source>> {
        let dom = match &mp.store {
            None => None,
            Some(loc) => {
                let open = self
                    .virtual_stores
                    .0
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .get(loc)
                    .cloned();
                match open {
                    Some(d) => Some(d),
                    None => {
                        // The same rule as links to files: refused, not opened.
                        self.link_policy().check(loc, None)?;
                        let opts = DomainOptions {
                            link_policy: Some(self.link_policy().clone()),
                            ..DomainOptions::default()
                        };
                        match Domain::open_url_with(loc, OpenMode::Read, &opts) {
                            Ok(d) => {
                                let d = Arc::new(d);
                                self.virtual_stores
                                    .0
                                    .lock()
                                    .unwrap_or_else(|e| e.into_inner())
                                    .insert(loc.clone(), d.clone());
                                Some(d)
                            }
                            Err(EngineError::StoreNotFound(e) | EngineError::NotAStore(e)) => {
                                *why = format!("no store: {e}");
                                return Ok(None);
                            }
                            Err(e) => return Err(e),
                        }
                    }
                }
            }
        };
        let home = dom.as_deref().unwrap_or(self);
        let id = match (&mp.file, &mp.id) {
            (Some(file), None) => {
                *why = format!("{file} had no dataset {} when the mapping was made", mp.path);
                return Ok(None);
            }
            (Some(_), Some(id)) => id.clone(),
            (None, _) => match home.resolve_path(&mp.path)? {
                Some(id) => id,
                None => {
                    *why = format!("no dataset {}", mp.path);
                    return Ok(None);
                }
            },
        };
        if dom.is_none() && id == m.id {
            return Err(EngineError::Invalid(format!(
                "virtual dataset {} maps itself",
                m.id
            )));
        }
        let src = home.dataset(&id)?;
        if src.dtype != m.dtype {
            return Err(EngineError::WrongType(format!(
                "virtual dataset {}: source {} has type {}, the virtual dataset {}",
                m.id,
                mp.path,
                src.dtype.to_json(),
                m.dtype.to_json()
            )));
        }
        if src.virtual_map.is_some() {
            return Err(EngineError::Invalid(format!(
                "virtual dataset {}: source {} is virtual itself (not supported)",
                m.id, mp.path
            )));
        }
        if src.dims.len() != mp.src.len() {
            return Err(EngineError::Invalid(format!(
                "virtual dataset {}: source {} has {} dimensions, its selection {}",
                m.id,
                mp.path,
                src.dims.len(),
                mp.src.len()
            )));
        }
        if let Some((q, r)) = mp
            .src
            .iter()
            .enumerate()
            .find(|(q, r)| r.last() >= src.dims[*q])
        {
            *why = format!(
                "{} has extent {} along dimension {q}, the mapping reads up to index {}",
                mp.path,
                src.dims[q],
                r.last()
            );
        }
        Ok(Some((dom, src)))
    }

    /// The id of the object at the absolute `path`, following hard and
    /// soft links; `None` when nothing is there.
    ///
    /// # Errors
    /// I/O trouble; an external link on the way (not followed here).
    pub fn resolve_path(&self, path: &str) -> Result<Option<String>> {
        let mut id = self.root_id().to_string();
        let mut parts: Vec<String> = path
            .split('/')
            .filter(|p| !p.is_empty())
            .map(str::to_string)
            .collect();
        parts.reverse();
        let mut hops = 0;
        while let Some(name) = parts.pop() {
            if !id.starts_with("g-") {
                return Ok(None);
            }
            let link = match self.link_get(&id, &name) {
                Ok(l) => l,
                Err(EngineError::NotFound(_)) => return Ok(None),
                Err(e) => return Err(e),
            };
            match link.get("class").and_then(Value::as_str) {
                Some("H5L_TYPE_HARD") => {
                    id = link
                        .get("id")
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .to_string();
                }
                Some("H5L_TYPE_SOFT") => {
                    hops += 1;
                    let target = link
                        .get("h5path")
                        .and_then(Value::as_str)
                        .unwrap_or_default();
                    if hops > 40 || !target.starts_with('/') {
                        return Ok(None);
                    }
                    id = self.root_id().to_string();
                    parts.extend(
                        target
                            .split('/')
                            .filter(|p| !p.is_empty())
                            .rev()
                            .map(str::to_string),
                    );
                }
                _ => {
                    return Err(EngineError::Invalid(format!(
                        "{path}: an external link on the way to a virtual dataset's source \
                         (name the other store in the mapping instead)"
                    )))
                }
            }
        }
        Ok(Some(id))
    }

    /// Why mappings of the virtual dataset `id` read (partly) as fill:
    /// missing stores or datasets, sources smaller than their selections.
    ///
    /// # Errors
    /// Unknown or non-virtual dataset; sources that cannot be mapped at
    /// all (another type, refused by the link policy).
    pub fn virtual_problems(&self, id: &str) -> Result<Vec<SourceProblem>> {
        let m = self.dataset(id)?;
        let vm = m
            .virtual_map
            .clone()
            .ok_or_else(|| EngineError::WrongType(format!("{id} is not a virtual dataset")))?;
        let found = Mutex::new(Vec::new());
        for_each_task(vm.mappings.len(), false, |i| {
            let mp = &vm.mappings[i];
            let mut why = String::new();
            self.virtual_source(&m, mp, &mut why)?;
            if !why.is_empty() {
                found
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .push(SourceProblem {
                        mapping: i,
                        store: mp.store.clone(),
                        path: mp.path.clone(),
                        problem: why,
                    });
            }
            Ok(())
        })?;
        let mut found = found.into_inner().unwrap_or_else(|e| e.into_inner());
        found.sort_by_key(|p| p.mapping);
        Ok(found)
    }

    /// Checks a new virtual dataset's mappings before it is stored: their
    /// shapes against its extent, and every store they name against the
    /// link policy.
    pub(crate) fn check_new_virtual(&self, doc: &Value, dims: &[u64]) -> Result<()> {
        if let Some(vm) = VirtualMap::of_doc(doc, dims)? {
            for mp in &vm.mappings {
                if let Some(loc) = &mp.store {
                    self.link_policy().check(loc, None)?;
                }
            }
        }
        Ok(())
    }

    /// Reads `sel` of the virtual dataset `m` (members `fields` of each
    /// element when given) into `out`.
    pub(crate) fn read_virtual(
        &self,
        m: &DatasetMeta,
        vm: &VirtualMap,
        sel: &Selection,
        fields: Option<&[String]>,
        out: &mut [u8],
    ) -> Result<()> {
        let proj = Projection::new(&m.dtype, fields)?;
        let es = proj.out_size;
        let mut fill = Vec::with_capacity(es);
        proj.append(&m.fill, &mut fill);
        let fill_all = |out: &mut [u8]| {
            if fill.iter().all(|&b| b == 0) {
                out.fill(0);
            } else if es > 0 {
                for e in out.chunks_exact_mut(es) {
                    e.copy_from_slice(&fill);
                }
            }
        };
        let sels = match sel {
            Selection::Orthogonal(sels) => sels,
            Selection::Points { rank, coords } => {
                fill_all(out);
                return self.read_virtual_points(m, vm, *rank, coords, fields, es, out);
            }
        };
        let shape: Vec<u64> = sels.iter().map(DimSel::len).collect();
        let total: u64 = shape.iter().product();
        if (out.len() as u64) != total * es as u64 {
            return Err(EngineError::Invalid(format!(
                "a buffer of {} bytes for {total} elements of {es}",
                out.len()
            )));
        }
        // Each mapping's part of the read, with its source.
        struct Part {
            mapping: usize,
            hits: Vec<Hits>,
            source: Option<Source>,
        }
        let parts = Mutex::new(Vec::new());
        let short = std::sync::atomic::AtomicBool::new(false);
        for_each_task(vm.mappings.len(), false, |i| {
            let mp = &vm.mappings[i];
            let Some(mut hits) = sels
                .iter()
                .zip(&mp.dst)
                .zip(&mp.pairs)
                .map(|((s, &r), p)| dim_hits(s, r, p.map(|q| mp.src[q])))
                .collect::<Option<Vec<Hits>>>()
            else {
                return Ok(());
            };
            let mut why = String::new();
            let source = self.virtual_source(m, mp, &mut why)?;
            if let Some((_, src)) = &source {
                // Past a source's extent: fill, as HDF5 reads it.
                for (d, h) in hits.iter_mut().enumerate() {
                    if let Some(q) = mp.pairs[d] {
                        *h = std::mem::replace(
                            h,
                            Hits::Listed {
                                out: vec![],
                                src: vec![],
                            },
                        )
                        .clip(src.dims[q]);
                    }
                }
                let unpaired_outside = mp.src.iter().enumerate().any(|(q, r)| {
                    r.count == 1 && !mp.pairs.contains(&Some(q)) && r.start >= src.dims[q]
                });
                if unpaired_outside {
                    hits.iter_mut().for_each(|h| *h = h.clone().clip(0));
                }
            }
            if !why.is_empty() {
                short.store(true, std::sync::atomic::Ordering::Relaxed);
            }
            parts.lock().unwrap_or_else(|e| e.into_inner()).push(Part {
                mapping: i,
                hits,
                source,
            });
            Ok(())
        })?;
        let mut parts = parts.into_inner().unwrap_or_else(|e| e.into_inner());
        parts.sort_by_key(|p| p.mapping);
        let covered: u64 = parts
            .iter()
            .filter(|p| p.source.is_some())
            .map(|p| p.hits.iter().map(Hits::len).product::<u64>())
            .sum();
        if !(vm.disjoint && covered == total && !short.load(std::sync::atomic::Ordering::Relaxed)) {
            fill_all(out);
        }
        let strides: Vec<u64> = (0..shape.len())
            .map(|d| shape[d + 1..].iter().product())
            .collect();
        let ptr = OutPtr(out.as_mut_ptr());
        let read_part = |p: &Part| -> Result<()> {
            let Some((dom, src)) = &p.source else {
                return Ok(());
            };
            let n: u64 = p.hits.iter().map(Hits::len).product();
            if n == 0 {
                return Ok(());
            }
            let mp = &vm.mappings[p.mapping];
            let src_sel = Selection::Orthogonal(
                mp.src
                    .iter()
                    .enumerate()
                    .map(|(q, r)| match mp.pairs.iter().position(|&x| x == Some(q)) {
                        Some(d) => p.hits[d].src_sel(),
                        None => DimSel::Slice {
                            start: r.start,
                            count: 1,
                            step: 1,
                        },
                    })
                    .collect(),
            );
            let home = dom.as_deref().unwrap_or(self);
            let bytes = n as usize * es;
            if let Some(at) = contiguous_block(&p.hits, &shape, &strides) {
                // SAFETY: the block lies inside `out` (positions come from
                // the selection's shape) and no other part writes it (the
                // mappings are disjoint, or parts run one at a time).
                let dst =
                    unsafe { std::slice::from_raw_parts_mut(ptr.at(at as usize * es), bytes) };
                return home.read_with(src, &src_sel, fields, dst, false);
            }
            let mut tmp = vec![0u8; bytes];
            home.read_with(src, &src_sel, fields, &mut tmp, false)?;
            scatter(&tmp, &p.hits, &strides, es, ptr);
            Ok(())
        };
        if vm.disjoint {
            for_each_task(parts.len(), false, |k| read_part(&parts[k]))
        } else {
            parts.iter().try_for_each(read_part)
        }
    }

    /// Points of a virtual dataset: each read from the last mapping that
    /// covers it (fill elsewhere; `out` holds fill on entry).
    #[allow(clippy::too_many_arguments)]
    fn read_virtual_points(
        &self,
        m: &DatasetMeta,
        vm: &VirtualMap,
        rank: usize,
        coords: &[u64],
        fields: Option<&[String]>,
        es: usize,
        out: &mut [u8],
    ) -> Result<()> {
        if rank != m.dims.len() || coords.len() % rank.max(1) != 0 {
            return Err(EngineError::Invalid(
                "points of another rank than the dataset's".into(),
            ));
        }
        let n = coords.len() / rank.max(1);
        // Per mapping: (output index, source coordinates).
        let mut per: Vec<(Vec<u64>, Vec<u64>)> = vec![(Vec::new(), Vec::new()); vm.mappings.len()];
        for i in 0..n {
            let pt = &coords[i * rank..(i + 1) * rank];
            let hit = vm.mappings.iter().enumerate().rev().find_map(|(k, mp)| {
                let ks: Option<Vec<u64>> = pt
                    .iter()
                    .zip(&mp.dst)
                    .map(|(&x, r)| {
                        let off = x.checked_sub(r.start)?;
                        (off % r.step == 0 && off / r.step < r.count).then_some(off / r.step)
                    })
                    .collect();
                ks.map(|ks| (k, ks))
            });
            if let Some((k, ks)) = hit {
                let mp = &vm.mappings[k];
                per[k].0.push(i as u64);
                for (q, r) in mp.src.iter().enumerate() {
                    let j = mp
                        .pairs
                        .iter()
                        .position(|&x| x == Some(q))
                        .map_or(0, |d| ks[d]);
                    per[k].1.push(r.start + j * r.step);
                }
            }
        }
        let ptr = OutPtr(out.as_mut_ptr());
        for_each_task(per.len(), false, |k| {
            let (outs, src_coords) = &per[k];
            if outs.is_empty() {
                return Ok(());
            }
            let mp = &vm.mappings[k];
            let mut why = String::new();
            let Some((dom, src)) = self.virtual_source(m, mp, &mut why)? else {
                return Ok(());
            };
            let srank = mp.src.len();
            // Points past the source's extent stay fill.
            let inside: Vec<usize> = (0..outs.len())
                .filter(|&j| {
                    src_coords[j * srank..(j + 1) * srank]
                        .iter()
                        .zip(&src.dims)
                        .all(|(c, d)| c < d)
                })
                .collect();
            let pts: Vec<u64> = inside
                .iter()
                .flat_map(|&j| src_coords[j * srank..(j + 1) * srank].iter().copied())
                .collect();
            let mut tmp = vec![0u8; inside.len() * es];
            let home = dom.as_deref().unwrap_or(self);
            home.read_with(
                &src,
                &Selection::Points {
                    rank: srank,
                    coords: pts,
                },
                fields,
                &mut tmp,
                false,
            )?;
            for (t, &j) in inside.iter().enumerate() {
                // SAFETY: output element outs[j] < n lies in `out`; each
                // point belongs to one mapping, so tasks write apart.
                unsafe {
                    std::ptr::copy_nonoverlapping(
                        tmp.as_ptr().add(t * es),
                        ptr.at(outs[j] as usize * es),
                        es,
                    );
                }
            }
            Ok(())
        })
    }
}

/// Where the elements `hits` select lie in one piece of the output, in the
/// same order (C order of their positions): the first one's index.
fn contiguous_block(hits: &[Hits], shape: &[u64], strides: &[u64]) -> Option<u64> {
    let ranges: Vec<(u64, u64)> = hits.iter().map(Hits::out_range).collect::<Option<_>>()?;
    // Single indices, then one partial dimension, then whole ones.
    let j = ranges
        .iter()
        .position(|&(_, len)| len != 1)
        .unwrap_or(ranges.len());
    let whole_after = ranges
        .iter()
        .zip(shape)
        .skip(j + 1)
        .all(|(&(first, len), &d)| first == 0 && len == d);
    whole_after.then(|| {
        ranges
            .iter()
            .zip(strides)
            .map(|(&(first, _), s)| first * s)
            .sum()
    })
}

/// Copies `tmp` (the elements `hits` select, in C order) to their places
/// in the output behind `ptr` (of C-order `strides`).
fn scatter(tmp: &[u8], hits: &[Hits], strides: &[u64], es: usize, ptr: OutPtr) {
    let rank = hits.len();
    let counts: Vec<u64> = hits.iter().map(Hits::len).collect();
    let last = rank - 1;
    let inner = counts[last] as usize;
    let run = hits[last].out_range();
    let mut idx = vec![0u64; last];
    let mut at = 0usize;
    loop {
        let base: u64 = idx
            .iter()
            .enumerate()
            .map(|(d, &j)| hits[d].out_at(j) * strides[d])
            .sum();
        match run {
            Some((first, len)) => {
                // SAFETY: positions inside the output (see `read_virtual`).
                unsafe {
                    std::ptr::copy_nonoverlapping(
                        tmp.as_ptr().add(at),
                        ptr.at((base + first) as usize * es),
                        len as usize * es,
                    );
                }
            }
            None => {
                for j in 0..inner {
                    let o = base + hits[last].out_at(j as u64);
                    // SAFETY: as above.
                    unsafe {
                        std::ptr::copy_nonoverlapping(
                            tmp.as_ptr().add(at + j * es),
                            ptr.at(o as usize * es),
                            es,
                        );
                    }
                }
            }
        }
        at += inner * es;
        // The next index of the outer dimensions, C order.
        let mut d = last;
        loop {
            if d == 0 {
                return;
            }
            d -= 1;
            idx[d] += 1;
            if idx[d] < counts[d] {
                break;
            }
            idx[d] = 0;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(start: u64, step: u64, count: u64) -> Run {
        Run { start, step, count }
    }

    #[test]
    fn hits_of_slices_against_runs_equal_a_plain_walk() {
        for (sel, r, p) in [
            ((0, 10, 1), run(3, 1, 4), run(100, 2, 4)),
            ((1, 7, 3), run(3, 1, 12), run(0, 1, 12)),
            ((0, 30, 1), run(2, 3, 5), run(10, 1, 5)),
            ((5, 4, 2), run(2, 3, 5), run(10, 1, 5)),
            ((0, 3, 1), run(10, 1, 2), run(0, 1, 2)),
        ] {
            let s = DimSel::Slice {
                start: sel.0,
                count: sel.1,
                step: sel.2,
            };
            let got = dim_hits(&s, r, Some(p));
            let (mut out, mut src) = (vec![], vec![]);
            for i in 0..sel.1 {
                let x = sel.0 + i * sel.2;
                if x >= r.start && (x - r.start) % r.step == 0 && (x - r.start) / r.step < r.count {
                    out.push(i);
                    src.push(p.start + (x - r.start) / r.step * p.step);
                }
            }
            let want = (!out.is_empty()).then(|| Hits::compact(out, src));
            assert_eq!(got, want, "{sel:?} {r:?} {p:?}");
        }
    }

    #[test]
    fn blocks_are_contiguous_only_when_whole_trailing_dimensions_follow() {
        let h = |out, count| Hits::Regular {
            out,
            src: 0,
            step: 1,
            count,
        };
        let shape = [4, 5];
        let strides = [5, 1];
        assert_eq!(
            contiguous_block(&[h(1, 2), h(0, 5)], &shape, &strides),
            Some(5)
        );
        assert_eq!(
            contiguous_block(&[h(1, 1), h(2, 3)], &shape, &strides),
            Some(7)
        );
        assert_eq!(
            contiguous_block(&[h(1, 2), h(0, 4)], &shape, &strides),
            None
        );
    }

    #[test]
    fn shapes_must_agree_up_to_single_indices() {
        assert!(pair_dims(&[run(0, 1, 10)], &[run(2, 1, 1), run(0, 1, 10)]).is_some());
        assert!(pair_dims(&[run(0, 1, 10)], &[run(0, 1, 2), run(0, 1, 5)]).is_none());
    }
}
