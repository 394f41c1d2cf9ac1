//! Datasets whose chunks live inside another file (HSDS's "link mode"
//! layouts): `H5D_CONTIGUOUS_REF`, `H5D_CHUNKED_REF` (a `chunks` map in the
//! layout) and `H5D_CHUNKED_REF_INDIRECT` (a chunk-table dataset).
//!
//! A logical chunk may group several source chunks (`hyper_dims` = the
//! source chunk shape, `dims` = a multiple of it), so that one request reads
//! several small chunks that sit next to each other in the file. Their byte
//! ranges are coalesced into as few reads as possible, each sub-chunk is
//! decoded with the dataset's filters (libhdf5's byte layout) and placed in
//! the logical chunk.
//!
//! A chunk written through h5lake is stored as a normal chunk object and
//! wins over the linked one (copy on write); the source file is never
//! modified.

use std::collections::HashMap;
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::sync::{Arc, Mutex};

use h5lake_codecs::ChunkFormat;
use h5lake_types::Selection;
use rayon::prelude::*;
use serde_json::Value;

use crate::dataset::DatasetMeta;
use crate::domain::Domain;
use crate::link_policy::{LinkPolicy, LinkTarget};
use crate::parquet_link::{ParquetFiles, ParquetSource};
use crate::planner::strides;
use crate::{EngineError, Result};

/// Most bytes read from a linked file at once (one logical chunk, its
/// source chunks coalesced): HDF5 chunks are under 4 GiB, and chunks this
/// big are already far past any sensible size.
const MAX_LINKED_READ: u64 = 1 << 30;

/// Linked files kept open per domain.
const MAX_OPEN_LINKED_FILES: usize = 64;

/// Byte ranges closer than this are read together (the gap is read and
/// thrown away: cheaper than another request).
const COALESCE_GAP: u64 = 64 << 10;

/// One chunk of an HDF5 file a dataset is linked to: its coordinates in
/// the grid of the file's chunks, its byte offset in the file, its size.
pub type SourceChunk = (Vec<u64>, u64, u64);

/// Where a linked dataset's chunks are.
#[derive(Clone, Debug)]
pub(crate) enum LinkIndex {
    /// The whole dataset as one contiguous byte range.
    Contiguous { offset: u64, size: u64 },
    /// Chunk coordinates → `(offset, size)`; no hyper-chunks (HSDS only
    /// groups source chunks through a chunk table).
    Inline(HashMap<Vec<u64>, (u64, u64)>),
    /// A dataset of `{offset: int64, size: int32}` records, one per *source*
    /// chunk and shaped like the grid of source chunks (HSDS's format): a
    /// hyper-chunk's entries are the records of the source chunks it groups.
    Table { table_id: String },
    /// Row groups of Parquet files (see [`crate::parquet_link`]).
    Parquet(Arc<ParquetSource>),
}

/// What a linked file was when it was linked: its size and modification
/// time (nanoseconds since the epoch). Kept in the layout as
/// `"h5lake_stamp": [size, mtime_ns]` (a key HSDS ignores).
pub type FileStamp = (u64, i128);

/// The stamp of the file `meta` describes.
pub fn file_stamp(meta: &std::fs::Metadata) -> FileStamp {
    let mtime = meta
        .modified()
        .ok()
        .and_then(|t| match t.duration_since(std::time::UNIX_EPOCH) {
            Ok(d) => i128::try_from(d.as_nanos()).ok(),
            Err(e) => i128::try_from(e.duration().as_nanos()).ok().map(|n| -n),
        })
        .unwrap_or(0);
    (meta.len(), mtime)
}

/// The layout key of a stamp.
pub fn stamp_json(stamp: FileStamp) -> Value {
    serde_json::json!([stamp.0, stamp.1.to_string()])
}

/// The link-mode part of a dataset's layout.
#[derive(Clone, Debug)]
pub struct LinkedLayout {
    pub file_uri: String,
    /// The linked file as it was linked, when the layout says (links made
    /// before stamps were kept, and HSDS's, do not).
    pub(crate) stamp: Option<FileStamp>,
    pub(crate) index: LinkIndex,
    /// Shape of one source chunk (equal to the logical chunk without
    /// hyper-chunking).
    pub(crate) sub_chunk: Vec<u64>,
    /// Most bytes one source chunk's entry may name (see [`max_entry`]).
    max_entry: u64,
}

/// Most bytes a source chunk of `sub_chunk` elements of `elem_size` bytes
/// can take in its file: its raw bytes, and room for what a filter adds
/// when it cannot compress (deflate's block headers, a checksum). An entry
/// naming more is damaged or hostile; reading it would allocate that much.
fn max_entry(sub_chunk: &[u64], elem_size: usize) -> u64 {
    let raw = sub_chunk
        .iter()
        .fold(elem_size as u64, |n, &d| n.saturating_mul(d));
    raw.saturating_add(raw / 8).saturating_add(64 << 10)
}

fn u64s(v: Option<&Value>) -> Option<Vec<u64>> {
    v?.as_array()?.iter().map(Value::as_u64).collect()
}

/// Whether a source chunk's entry names bytes a chunk can hold (`why` not).
fn check_entry(offset: u64, size: u64, max: u64) -> std::result::Result<(), String> {
    if size > max {
        return Err(format!(
            "names a chunk of {size} bytes at {offset}; a chunk of this dataset takes at most {max}"
        ));
    }
    if offset.checked_add(size).is_none() {
        return Err(format!(
            "names a chunk at byte {offset}, past the end of any file"
        ));
    }
    Ok(())
}

fn pair(v: &Value) -> Option<(u64, u64)> {
    let a = v.as_array()?;
    Some((a.first()?.as_u64()?, a.get(1)?.as_u64()?))
}

/// Logical chunk dims for a contiguous source: whole trailing dimensions
/// and as many rows as fit in about `target` bytes, so that every chunk is
/// one byte range of the file.
pub fn contiguous_chunk_dims(dims: &[u64], elem_size: u64, target: u64) -> Vec<u64> {
    let mut c: Vec<u64> = dims.iter().map(|&d| d.max(1)).collect();
    for d in 0..c.len() {
        let inner: u64 = c[d + 1..].iter().product::<u64>() * elem_size.max(1);
        if inner * c[d] <= target {
            break;
        }
        c[d] = (target / inner).max(1);
        if c[d] > 1 || inner <= target {
            break;
        }
    }
    c
}

impl LinkedLayout {
    /// The link of a dataset whose rows are those of Parquet files, in
    /// chunks of `chunk`.
    pub(crate) fn parquet(source: ParquetSource, chunk: &[u64]) -> Self {
        LinkedLayout {
            file_uri: source.files[0].uri.clone(),
            stamp: None,
            index: LinkIndex::Parquet(Arc::new(source)),
            sub_chunk: chunk.to_vec(),
            // (Row groups are read through their footers' own sizes.)
            max_entry: u64::MAX,
        }
    }

    /// The Parquet files the dataset's rows are, when it is linked to such.
    pub fn parquet_source(&self) -> Option<&ParquetSource> {
        match &self.index {
            LinkIndex::Parquet(s) => Some(s),
            _ => None,
        }
    }

    /// Parses a link-mode layout; `Ok(None)` for other layout classes.
    ///
    /// # Errors
    /// A link-mode layout that misses a key it needs.
    pub(crate) fn parse(
        id: &str,
        layout: &Value,
        dims: &[u64],
        elem_size: usize,
    ) -> Result<Option<(Self, Vec<u64>)>> {
        let class = layout.get("class").and_then(Value::as_str).unwrap_or("");
        if !class.ends_with("_REF") && !class.ends_with("_REF_INDIRECT") {
            return Ok(None);
        }
        let bad = |what: &str| EngineError::Corrupt(format!("{id}: {class} layout {what}"));
        let file_uri = layout
            .get("file_uri")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        let chunk_dims = u64s(layout.get("dims"));
        let (index, chunk) = match class {
            "H5D_CONTIGUOUS_REF" => {
                let offset = layout.get("offset").and_then(Value::as_u64);
                let size = layout.get("size").and_then(Value::as_u64);
                let (Some(offset), Some(size)) = (offset, size) else {
                    return Err(bad("needs offset and size"));
                };
                if offset.checked_add(size).is_none() {
                    return Err(bad("has a byte range past the end of any file"));
                }
                let chunk = chunk_dims
                    .filter(|c| c.len() == dims.len())
                    .unwrap_or_else(|| contiguous_chunk_dims(dims, elem_size as u64, 4 << 20));
                (LinkIndex::Contiguous { offset, size }, chunk)
            }
            "H5D_CHUNKED_REF" => {
                let chunk = chunk_dims.ok_or_else(|| bad("needs dims"))?;
                let map = layout
                    .get("chunks")
                    .and_then(Value::as_object)
                    .ok_or_else(|| bad("needs a chunks map"))?;
                let mut index = HashMap::with_capacity(map.len());
                for (k, v) in map {
                    let coords: Option<Vec<u64>> = k.split('_').map(|p| p.parse().ok()).collect();
                    let coords = coords.ok_or_else(|| bad("has a bad chunk key"))?;
                    let entry = pair(v).ok_or_else(|| bad("has a bad chunk entry"))?;
                    index.insert(coords, entry);
                }
                (LinkIndex::Inline(index), chunk)
            }
            "H5D_CHUNKED_REF_INDIRECT" => {
                let chunk = chunk_dims.ok_or_else(|| bad("needs dims"))?;
                let table_id = layout
                    .get("chunk_table")
                    .and_then(Value::as_str)
                    .ok_or_else(|| bad("needs a chunk_table"))?
                    .to_string();
                (LinkIndex::Table { table_id }, chunk)
            }
            _ => return Err(bad("is not supported")),
        };
        if chunk.len() != dims.len() || chunk.contains(&0) {
            return Err(bad("has chunk dims that do not fit the shape"));
        }
        let sub_chunk = u64s(layout.get("hyper_dims")).unwrap_or_else(|| chunk.clone());
        if sub_chunk.len() != chunk.len()
            || sub_chunk
                .iter()
                .zip(&chunk)
                .any(|(&s, &c)| s == 0 || c % s != 0)
        {
            return Err(bad("has hyper_dims that do not divide its dims"));
        }
        if sub_chunk != chunk && matches!(index, LinkIndex::Inline(_)) {
            return Err(bad(
                "has hyper_dims, which need a chunk table (H5D_CHUNKED_REF_INDIRECT)",
            ));
        }
        let max_entry = max_entry(&sub_chunk, elem_size);
        if let LinkIndex::Inline(map) = &index {
            for &(offset, size) in map.values() {
                check_entry(offset, size, max_entry).map_err(|e| bad(&e))?;
            }
        }
        let stamp = layout.get("h5lake_stamp").and_then(|v| {
            let a = v.as_array()?;
            Some((a.first()?.as_u64()?, a.get(1)?.as_str()?.parse().ok()?))
        });
        Ok(Some((
            LinkedLayout {
                file_uri,
                stamp,
                index,
                sub_chunk,
                max_entry,
            },
            chunk,
        )))
    }

    /// Whether logical chunks group several source chunks.
    pub(crate) fn is_hyper(&self, chunk: &[u64]) -> bool {
        self.sub_chunk != chunk
    }

    /// Whether `region` (chunk-local `[lo, hi)` per dimension) touches every
    /// source chunk of a logical chunk.
    pub(crate) fn covers_all_subs(&self, chunk: &[u64], region: &[(u64, u64)]) -> bool {
        region
            .iter()
            .zip(&self.sub_chunk)
            .zip(chunk)
            .all(|(((lo, hi), s), c)| *lo < *s && *hi > c - s)
    }

    /// Element origin (chunk-local) of sub-chunk `i` (C order).
    fn sub_origin(&self, chunk: &[u64], i: usize) -> Vec<u64> {
        let per = self.subs_per_chunk(chunk);
        let ps = strides(&per);
        (0..per.len())
            .map(|d| (i as u64 / ps[d]) % per[d] * self.sub_chunk[d])
            .collect()
    }

    fn subs_per_chunk(&self, chunk: &[u64]) -> Vec<u64> {
        chunk
            .iter()
            .zip(&self.sub_chunk)
            .map(|(c, s)| c / s)
            .collect()
    }
}

/// Open source files, shared by every dataset of a domain.
pub(crate) struct LinkedFiles {
    open: Mutex<HashMap<String, Arc<File>>>,
    /// Footers and buckets of linked Parquet files.
    pub(crate) parquet: ParquetFiles,
    /// What the domain's documents may make us open.
    pub(crate) policy: LinkPolicy,
    /// Where relative `file_uri`s start (HSDS's `root_dir`: the directory
    /// holding the bucket), for stores on local disk.
    pub(crate) root_dir: Option<std::path::PathBuf>,
}

impl LinkedFiles {
    pub(crate) fn new(policy: LinkPolicy, root_dir: Option<std::path::PathBuf>) -> Self {
        LinkedFiles {
            open: Mutex::default(),
            parquet: ParquetFiles::default(),
            policy,
            root_dir,
        }
    }

    /// Checks a `file_uri` about to be stored.
    pub(crate) fn check(&self, uri: &str) -> Result<()> {
        self.policy.check(uri, self.root_dir.as_deref()).map(|_| ())
    }

    /// Where `uri` leads, checked against the policy.
    pub(crate) fn target(&self, uri: &str) -> Result<LinkTarget> {
        self.policy.check(uri, self.root_dir.as_deref())
    }

    /// The open file `link` points into, checked to be the file it was
    /// when linked (when the link kept its stamp).
    ///
    /// # Errors
    /// As [`LinkedFiles::get`]; [`EngineError::LinkedFileChanged`].
    pub(crate) fn get_checked(&self, link: &LinkedLayout) -> Result<Arc<File>> {
        let file = self.get(&link.file_uri)?;
        if let Some(want) = link.stamp {
            let meta = file.metadata().map_err(|e| {
                EngineError::StoreNotFound(format!("linked file {}: {e}", link.file_uri))
            })?;
            let now = file_stamp(&meta);
            if now != want {
                return Err(EngineError::LinkedFileChanged(format!(
                    "linked file {} changed since it was linked ({} bytes then, {} now, \
                     or modified since): its values are no longer where the link says; open, \
                     link or load the file again",
                    link.file_uri, want.0, now.0
                )));
            }
        }
        Ok(file)
    }

    pub(crate) fn get(&self, uri: &str) -> Result<Arc<File>> {
        let path = match self.policy.check(uri, self.root_dir.as_deref())? {
            LinkTarget::Local(p) => p,
            LinkTarget::Object { .. } => {
                return Err(EngineError::Invalid(format!(
                    "linked file {uri:?}: linked datasets read local files only so far"
                )))
            }
        };
        // Kept by where the link leads, not how it is spelled (`a/./b`
        // and `a/b` share one descriptor), and only so many at once.
        let mut open = self.open.lock().unwrap_or_else(|e| e.into_inner());
        let key = path.to_string_lossy().into_owned();
        if let Some(f) = open.get(&key) {
            return Ok(f.clone());
        }
        let f = Arc::new(self.policy.open_local(uri, &path)?);
        if open.len() >= MAX_OPEN_LINKED_FILES {
            open.clear();
        }
        open.insert(key, f.clone());
        Ok(f)
    }
}

/// Reads `ranges` from `file`, merging neighbours into single reads.
fn read_ranges(file: &File, ranges: &[(u64, u64)]) -> Result<Vec<Vec<u8>>> {
    let mut order: Vec<usize> = (0..ranges.len()).collect();
    order.sort_by_key(|&i| ranges[i].0);
    let mut out = vec![Vec::new(); ranges.len()];
    let mut k = 0;
    while k < order.len() {
        let start = ranges[order[k]].0;
        let mut end = start + ranges[order[k]].1;
        let mut j = k + 1;
        while j < order.len() && ranges[order[j]].0 <= end + COALESCE_GAP {
            end = end.max(ranges[order[j]].0 + ranges[order[j]].1);
            j += 1;
        }
        // Sizes come from the layout, which whoever wrote the store chose.
        if end - start > MAX_LINKED_READ {
            return Err(EngineError::Corrupt(format!(
                "linked chunk bytes {start}..{end}: more than a chunk can hold ({MAX_LINKED_READ} bytes)"
            )));
        }
        // Sizes come from the layout; a file shorter than they say fails
        // here, before its claimed size is allocated.
        let len = file.metadata().map(|md| md.len()).unwrap_or(u64::MAX);
        if end > len {
            return Err(EngineError::Corrupt(format!(
                "linked file: its chunk index names bytes {start}..{end}, past its end ({len} bytes); was the file changed or truncated?"
            )));
        }
        let mut buf = Vec::new();
        buf.try_reserve_exact((end - start) as usize).map_err(|_| {
            EngineError::Invalid(format!(
                "not enough memory to read linked chunk bytes {start}..{end}"
            ))
        })?;
        buf.resize((end - start) as usize, 0);
        file.read_exact_at(&mut buf, start).map_err(|e| {
            EngineError::Corrupt(format!(
                "linked file: cannot read bytes {start}..{end} ({e}); was the file changed or truncated?"
            ))
        })?;
        for &i in &order[k..j] {
            let (o, n) = ranges[i];
            let s = (o - start) as usize;
            out[i] = buf[s..s + n as usize].to_vec();
        }
        k = j;
    }
    Ok(out)
}

impl Domain {
    /// The `(offset, size)` of each sub-chunk of the logical chunk `coords`
    /// (`None` where the source never allocated it).
    fn linked_entries(
        &self,
        m: &DatasetMeta,
        link: &LinkedLayout,
        coords: &[u64],
    ) -> Result<Vec<Option<(u64, u64)>>> {
        let entries = self.linked_entries_unchecked(m, link, coords)?;
        for &(offset, size) in entries.iter().flatten() {
            check_entry(offset, size, link.max_entry).map_err(|e| {
                EngineError::Corrupt(format!("{}: the chunk index of {coords:?} {e}", m.id))
            })?;
        }
        Ok(entries)
    }

    fn linked_entries_unchecked(
        &self,
        m: &DatasetMeta,
        link: &LinkedLayout,
        coords: &[u64],
    ) -> Result<Vec<Option<(u64, u64)>>> {
        let n: u64 = link.subs_per_chunk(&m.chunk).iter().product();
        let valid = |(o, s): (u64, u64)| (s > 0).then_some((o, s));
        match &link.index {
            LinkIndex::Contiguous { .. } | LinkIndex::Parquet(_) => Ok(Vec::new()),
            LinkIndex::Inline(map) => Ok(vec![map.get(coords).and_then(|&p| valid(p))]),
            LinkIndex::Table { table_id } => {
                let t = self.dataset_meta(table_id)?;
                // A table that is itself linked could name this dataset as
                // its table: reading one would read the other without end.
                if t.link.is_some() {
                    return Err(EngineError::Corrupt(format!(
                        "chunk table {table_id} is itself a linked dataset"
                    )));
                }
                if t.dtype.fixed_size() != Some(12) || t.dims.len() != coords.len() {
                    return Err(EngineError::Corrupt(format!(
                        "chunk table {table_id} must hold one {{offset: int64, size: int32}} record per source chunk, with the dataset's rank"
                    )));
                }
                // Table index of each source chunk of this logical chunk;
                // those past the table's end (edge chunks) hold nothing.
                let rank = coords.len();
                let mut points = Vec::with_capacity(n as usize * rank);
                let mut inside = Vec::with_capacity(n as usize);
                for i in 0..n as usize {
                    let origin = link.sub_origin(&m.chunk, i);
                    let idx: Vec<u64> = (0..rank)
                        .map(|d| (coords[d] * m.chunk[d] + origin[d]) / link.sub_chunk[d])
                        .collect();
                    let ok = idx.iter().zip(&t.dims).all(|(x, dim)| x < dim);
                    if ok {
                        points.extend_from_slice(&idx);
                    }
                    inside.push(ok);
                }
                let mut buf = vec![0u8; points.len() / rank.max(1) * 12];
                if !points.is_empty() {
                    let sel = Selection::Points {
                        rank,
                        coords: points,
                    };
                    self.read(table_id, &sel, &mut buf)?;
                }
                let mut records = buf.chunks_exact(12).map(|r| {
                    let o = u64::from_le_bytes(r[..8].try_into().expect("8 bytes"));
                    let s = u32::from_le_bytes(r[8..].try_into().expect("4 bytes"));
                    (o, u64::from(s))
                });
                Ok(inside
                    .into_iter()
                    .map(|ok| {
                        if ok {
                            records.next().and_then(valid)
                        } else {
                            None
                        }
                    })
                    .collect())
            }
        }
    }

    /// The source chunks of a dataset linked to an HDF5 file's chunks, as
    /// HDF5's chunk queries list them: (source chunk grid coordinates,
    /// byte offset in the file, size), in order of coordinates, only those
    /// the file allocated. `None` for a dataset linked otherwise (a
    /// contiguous range, Parquet row groups) or not linked.
    ///
    /// # Errors
    /// Unknown dataset; a damaged chunk table; I/O trouble.
    pub fn linked_source_chunks(&self, id: &str) -> Result<Option<Vec<SourceChunk>>> {
        let m = self.dataset_meta(id)?;
        let Some(link) = m.link.as_ref() else {
            return Ok(None);
        };
        let mut out: Vec<SourceChunk> = match &link.index {
            LinkIndex::Contiguous { .. } | LinkIndex::Parquet(_) => return Ok(None),
            LinkIndex::Inline(map) => map
                .iter()
                .filter(|(_, &(_, size))| size > 0)
                .map(|(c, &(o, s))| (c.clone(), o, s))
                .collect(),
            LinkIndex::Table { table_id } => {
                let t = self.dataset_meta(table_id)?;
                if t.link.is_some()
                    || t.dtype.fixed_size() != Some(12)
                    || t.dims.len() != m.dims.len()
                {
                    return Err(EngineError::Corrupt(format!(
                        "chunk table {table_id} must hold one {{offset: int64, size: int32}} record per source chunk, with the dataset's rank"
                    )));
                }
                let n: u64 = t.dims.iter().product();
                let mut buf = vec![0u8; n as usize * 12];
                self.read(table_id, &Selection::all(&t.dims), &mut buf)?;
                let ts = strides(&t.dims);
                buf.chunks_exact(12)
                    .enumerate()
                    .filter_map(|(i, r)| {
                        let o = u64::from_le_bytes(r[..8].try_into().expect("8 bytes"));
                        let s = u64::from(u32::from_le_bytes(r[8..].try_into().expect("4 bytes")));
                        let coords = (0..ts.len())
                            .map(|d| (i as u64 / ts[d]) % t.dims[d])
                            .collect();
                        (s > 0).then_some((coords, o, s))
                    })
                    .collect()
            }
        };
        out.sort_unstable();
        Ok(Some(out))
    }

    /// The bytes of one source chunk of a dataset linked to an HDF5 file,
    /// as the file holds them (its filters' output): HDF5's direct chunk
    /// read. `None` when the file never allocated it.
    ///
    /// # Errors
    /// As [`Domain::linked_source_chunks`]; the file cannot be read.
    pub fn linked_source_chunk(&self, id: &str, coords: &[u64]) -> Result<Option<bytes::Bytes>> {
        let Some(chunks) = self.linked_source_chunks(id)? else {
            return Ok(None);
        };
        let Some((_, offset, size)) = chunks.into_iter().find(|(c, _, _)| c == coords) else {
            return Ok(None);
        };
        let m = self.dataset_meta(id)?;
        let link = m.link.as_ref().expect("linked (listed above)");
        let file = self.linked_files.get_checked(link)?;
        Ok(read_ranges(&file, &[(offset, size)])?
            .pop()
            .map(bytes::Bytes::from))
    }

    /// The decoded logical chunk `coords` of a linked dataset, `None` if the
    /// source holds none of it.
    pub(crate) fn linked_chunk(
        &self,
        m: &DatasetMeta,
        link: &LinkedLayout,
        coords: &[u64],
    ) -> Result<Option<Vec<u8>>> {
        if let LinkIndex::Parquet(source) = &link.index {
            return self.parquet_chunk(m, source, coords[0]);
        }
        if let LinkIndex::Contiguous { offset, size } = link.index {
            let file = self.linked_files.get_checked(link)?;
            return self
                .contiguous_chunk(m, &file, offset, size, coords)
                .map(Some);
        }
        if !link.is_hyper(&m.chunk) {
            let entries = self.linked_entries(m, link, coords)?;
            let Some(Some(range)) = entries.first() else {
                return Ok(None);
            };
            let file = self.linked_files.get_checked(link)?;
            let raw = read_ranges(&file, &[*range])?;
            return decode_sub(m, link, &raw[0]).map(Some);
        }
        let mut out = m.fill_chunk();
        let any = self.linked_subchunks(m, link, coords, None, &mut out)?;
        Ok(any.then_some(out))
    }

    /// Decodes the source chunks of hyper-chunk `coords` that meet `region`
    /// (chunk-local `[lo, hi)` per dimension; `None` = all) into their place
    /// in `out`, a buffer of the whole logical chunk. With a region, the
    /// missing source chunks inside it are set to the fill value, and `out`
    /// outside it is left as it was (the caller never looks there), so a
    /// reused buffer needs no clearing. Returns whether the source holds any
    /// of them.
    pub(crate) fn linked_subchunks(
        &self,
        m: &DatasetMeta,
        link: &LinkedLayout,
        coords: &[u64],
        region: Option<&[(u64, u64)]>,
        out: &mut [u8],
    ) -> Result<bool> {
        let entries = self.linked_entries(m, link, coords)?;
        let wanted: Vec<usize> = (0..entries.len())
            .filter(|&i| match region {
                None => true,
                Some(r) => {
                    let o = link.sub_origin(&m.chunk, i);
                    (0..o.len()).all(|d| o[d] < r[d].1 && o[d] + link.sub_chunk[d] > r[d].0)
                }
            })
            .collect();
        let present: Vec<(usize, (u64, u64))> = wanted
            .iter()
            .filter_map(|&i| entries[i].map(|p| (i, p)))
            .collect();
        if region.is_some() && present.len() < wanted.len() {
            let es = m.dtype.fixed_size().unwrap_or(0);
            let sub_elems = link.sub_chunk.iter().product::<u64>() as usize;
            let fill = m.fill.repeat(sub_elems);
            for &i in wanted.iter().filter(|&&i| entries[i].is_none()) {
                place_sub(m, link, i, &fill, es, out);
            }
        }
        if present.is_empty() {
            return Ok(false);
        }
        let es = m.dtype.fixed_size().unwrap_or(0);
        // Decoded source chunks are cached on their own (the file never
        // changes under a link), so small reads that keep coming back to
        // one hyper-chunk decode each source chunk once.
        let chunk_key = crate::ids::chunk_key(&m.prefix, coords);
        let sub_key = |i: usize| format!("{chunk_key}#{i}");
        let mut missing = Vec::with_capacity(present.len());
        for &(i, range) in &present {
            match self.cache.get(&sub_key(i)) {
                Some((_, data)) => place_sub(m, link, i, &data, es, out),
                None => missing.push((i, range)),
            }
        }
        if missing.is_empty() {
            return Ok(true);
        }
        let file = self.linked_files.get_checked(link)?;
        let ranges: Vec<(u64, u64)> = missing.iter().map(|&(_, p)| p).collect();
        let raw = read_ranges(&file, &ranges)?;
        // Decoding is the costly part: spread it over the pool.
        let decoded: Vec<Vec<u8>> = raw
            .par_iter()
            .map(|bytes| decode_sub(m, link, bytes))
            .collect::<Result<_>>()?;
        for ((i, _), sub) in missing.iter().zip(decoded) {
            place_sub(m, link, *i, &sub, es, out);
            if self.cache.enabled() {
                let v = h5lake_store::Version(crate::dataset::LINKED_VERSION.into());
                self.cache.insert(&sub_key(*i), v, bytes::Bytes::from(sub));
            }
        }
        Ok(true)
    }

    /// A logical chunk of a contiguous source: one byte range per row of the
    /// chunk (coalesced into one read when the chunk spans whole rows).
    fn contiguous_chunk(
        &self,
        m: &DatasetMeta,
        file: &File,
        offset: u64,
        size: u64,
        coords: &[u64],
    ) -> Result<Vec<u8>> {
        let (runs, whole) = contiguous_runs(m, offset, size, coords)?;
        let mut out = if whole {
            vec![0; m.chunk_elems() * m.elem_size()]
        } else {
            m.fill_chunk()
        };
        for (start, len, dst) in runs {
            let (dst, len) = (dst as usize, len as usize);
            read_at(file, &mut out[dst..dst + len], start)?;
        }
        Ok(out)
    }

    /// Reads chunk `coords` of the linked, unfiltered dataset `m` straight
    /// from its file into `dest` ((offset in the chunk, destination) runs,
    /// in order, covering the whole chunk), saving the chunk-sized buffer
    /// and the copy out of it. `false` when its bytes are not one plain
    /// stretch of the file per run (an edge chunk of a contiguous source, a
    /// chunk made of several source chunks, a missing or filtered one):
    /// nothing is read, and the caller takes the general path.
    pub(crate) fn read_linked_into(
        &self,
        m: &DatasetMeta,
        link: &LinkedLayout,
        coords: &[u64],
        dest: &mut [(u64, &mut [u8])],
    ) -> Result<bool> {
        let total = (m.chunk_elems() * m.elem_size()) as u64;
        let runs = match link.index {
            LinkIndex::Parquet(_) => return Ok(false),
            LinkIndex::Contiguous { offset, size } => {
                let (runs, whole) = contiguous_runs(m, offset, size, coords)?;
                if !whole {
                    return Ok(false);
                }
                runs
            }
            _ if link.is_hyper(&m.chunk) || !m.pipeline.is_empty() => return Ok(false),
            _ => match self.linked_entries(m, link, coords)?.first() {
                Some(Some((start, len))) if *len == total => vec![(*start, total, 0)],
                _ => return Ok(false),
            },
        };
        let file = self.linked_files.get_checked(link)?;
        // Both lists run in chunk order: each destination takes its bytes
        // from the file runs it overlaps.
        let mut j = 0;
        for (at, buf) in dest.iter_mut() {
            let mut pos = *at;
            let mut done = 0;
            while done < buf.len() {
                while j < runs.len() && runs[j].2 + runs[j].1 <= pos {
                    j += 1;
                }
                let Some(&(start, len, dst)) = runs.get(j).filter(|r| r.2 <= pos) else {
                    return Err(EngineError::Corrupt(format!(
                        "{}: the linked file holds no bytes for offset {pos} of a chunk",
                        m.id
                    )));
                };
                let n = ((dst + len - pos) as usize).min(buf.len() - done);
                read_at(&file, &mut buf[done..done + n], start + (pos - dst))?;
                done += n;
                pos += n as u64;
            }
        }
        Ok(true)
    }
}

/// Where the rows of logical chunk `coords` of a contiguous source (its
/// data at `offset`, `size` bytes, in the file) are: (offset in the file,
/// length, offset in the chunk) runs in chunk order, runs that continue
/// each other in both joined (a chunk of whole rows is one run); and
/// whether the chunk lies wholly inside the dataset (else its runs cover
/// just the part inside).
fn contiguous_runs(
    m: &DatasetMeta,
    offset: u64,
    size: u64,
    coords: &[u64],
) -> Result<(Vec<(u64, u64, u64)>, bool)> {
    let es = m.dtype.fixed_size().unwrap_or(0) as u64;
    let rank = m.dims.len();
    let ds = strides(&m.dims);
    let cs = strides(&m.chunk);
    let lo: Vec<u64> = coords.iter().zip(&m.chunk).map(|(c, k)| c * k).collect();
    let ext: Vec<u64> = (0..rank)
        .map(|d| m.chunk[d].min(m.dims[d].saturating_sub(lo[d])))
        .collect();
    let last = rank - 1;
    let rows: u64 = ext[..last].iter().product();
    let mut runs: Vec<(u64, u64, u64)> = Vec::with_capacity(rows as usize);
    for r in 0..rows {
        let mut src = lo[last];
        let mut dst = 0;
        let mut rem = r;
        for d in (0..last).rev() {
            let idx = rem % ext[d];
            rem /= ext[d];
            src += (lo[d] + idx) * ds[d];
            dst += idx * cs[d];
        }
        let (start, len, dst) = (offset + src * es, ext[last] * es, dst * es);
        if start + len > offset + size {
            return Err(EngineError::Corrupt(format!(
                "{}: linked contiguous data is shorter than the dataset",
                m.id
            )));
        }
        match runs.last_mut() {
            Some((s, l, d)) if *s + *l == start && *d + *l == dst => *l += len,
            _ => runs.push((start, len, dst)),
        }
    }
    Ok((runs, ext == m.chunk))
}

/// Fills `buf` from `file` at `start`.
fn read_at(file: &File, buf: &mut [u8], start: u64) -> Result<()> {
    file.read_exact_at(buf, start).map_err(|e| {
        EngineError::Corrupt(format!(
            "linked file: cannot read bytes {start}..{} ({e}); was the file changed or truncated?",
            start + buf.len() as u64
        ))
    })
}

/// One source chunk decoded with the dataset's filters (libhdf5's layout).
fn decode_sub(m: &DatasetMeta, link: &LinkedLayout, bytes: &[u8]) -> Result<Vec<u8>> {
    let es = m.dtype.fixed_size().unwrap_or(0);
    let n = link.sub_chunk.iter().product::<u64>() as usize * es;
    let data = if m.pipeline.is_empty() {
        bytes.to_vec()
    } else {
        m.pipeline.decode_as(
            bytes,
            m.dtype.filter_elem_size(),
            Some(n),
            ChunkFormat::Hdf5,
        )?
    };
    if data.len() != n {
        return Err(EngineError::Corrupt(format!(
            "{}: a linked chunk decoded to {} bytes, expected {n}",
            m.id,
            data.len()
        )));
    }
    Ok(data)
}

/// Copies decoded source chunk `i` into its place in the logical chunk.
fn place_sub(
    m: &DatasetMeta,
    link: &LinkedLayout,
    i: usize,
    sub: &[u8],
    es: usize,
    out: &mut [u8],
) {
    let last = m.chunk.len() - 1;
    let cs = strides(&m.chunk);
    let origin = link.sub_origin(&m.chunk, i);
    let row = link.sub_chunk[last] as usize * es;
    let rows = sub.len() / row.max(1);
    for r in 0..rows {
        // Element index of the row's start inside the logical chunk.
        let mut dst = origin[last];
        let mut rem = r as u64;
        for d in (0..last).rev() {
            let idx = rem % link.sub_chunk[d];
            rem /= link.sub_chunk[d];
            dst += (origin[d] + idx) * cs[d];
        }
        let dst = dst as usize * es;
        out[dst..dst + row].copy_from_slice(&sub[r * row..(r + 1) * row]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::io::Write;

    #[test]
    fn contiguous_chunks_are_whole_trailing_rows() {
        // Small: one chunk.
        assert_eq!(contiguous_chunk_dims(&[10, 100], 8, 4 << 20), vec![10, 100]);
        // Rows of 8 KB, ~4 MiB per chunk.
        assert_eq!(
            contiguous_chunk_dims(&[100_000, 1024], 8, 4 << 20),
            vec![512, 1024]
        );
        // One row is bigger than the target: split the next dimension.
        assert_eq!(
            contiguous_chunk_dims(&[4, 1000, 1000], 8, 4 << 20),
            vec![1, 524, 1000]
        );
        assert_eq!(contiguous_chunk_dims(&[3, 0], 4, 100), vec![3, 1]);
    }

    #[test]
    fn ranges_are_coalesced_and_returned_in_request_order() {
        let mut f = tempfile::tempfile().unwrap();
        let data: Vec<u8> = (0..=255u8).cycle().take(300_000).collect();
        f.write_all(&data).unwrap();
        let ranges = [(200_000, 10), (5, 3), (0, 4), (9, 2), (299_990, 10)];
        let got = read_ranges(&f, &ranges).unwrap();
        for ((o, n), bytes) in ranges.iter().zip(&got) {
            assert_eq!(bytes.as_slice(), &data[*o as usize..(*o + *n) as usize]);
        }
        assert!(read_ranges(&f, &[(299_995, 10)]).is_err());
    }

    #[test]
    fn layouts_parse_and_reject_what_they_miss() {
        let dims = [100u64, 60];
        let l = json!({"class": "H5D_CHUNKED_REF_INDIRECT", "file_uri": "/x.h5",
                       "dims": [20, 30], "hyper_dims": [10, 30], "chunk_table": "d-1"});
        let (link, chunk) = LinkedLayout::parse("d", &l, &dims, 4).unwrap().unwrap();
        assert_eq!(chunk, vec![20, 30]);
        assert!(link.is_hyper(&chunk));
        assert_eq!(link.sub_origin(&chunk, 1), vec![10, 0]);
        assert!(link.covers_all_subs(&chunk, &[(5, 15), (0, 30)]));
        assert!(!link.covers_all_subs(&chunk, &[(0, 8), (0, 30)]));
        let bad = json!({"class": "H5D_CHUNKED_REF", "file_uri": "/x.h5", "dims": [20, 30],
                         "hyper_dims": [7, 30], "chunks": {}});
        assert!(LinkedLayout::parse("d", &bad, &dims, 4).is_err());
        let inline = json!({"class": "H5D_CHUNKED_REF", "file_uri": "/x.h5", "dims": [50, 60],
                            "chunks": {"0_0": [10, 20], "1_0": [30, 5]}});
        let (link, _) = LinkedLayout::parse("d", &inline, &dims, 4)
            .unwrap()
            .unwrap();
        let LinkIndex::Inline(map) = &link.index else {
            panic!("inline")
        };
        assert_eq!(map[&vec![1, 0]], (30, 5));
        let hyper_inline = json!({"class": "H5D_CHUNKED_REF", "file_uri": "/x.h5", "dims": [20, 30],
                                  "hyper_dims": [10, 30], "chunks": {}});
        assert!(LinkedLayout::parse("d", &hyper_inline, &dims, 4).is_err());
        assert!(
            LinkedLayout::parse("d", &json!({"class": "H5D_CHUNKED"}), &dims, 4)
                .unwrap()
                .is_none()
        );
    }
}
