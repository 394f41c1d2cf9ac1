//! Datasets: creation, shape changes and the chunked data path.
//!
//! Reads and writes take a whole selection. The selection is planned per
//! chunk ([`crate::planner`]); chunks are then fetched, decoded and scattered
//! into the caller's buffer in parallel on all cores (the reverse on write).
//! Each task touches a disjoint part of the buffer, so no locking is needed.
//!
//! A write that covers a whole chunk simply replaces it. A partial write is a
//! read-modify-write guarded by a conditional put and retried on conflict, so
//! concurrent writers of different parts of one chunk never lose each other's
//! elements.

use bytes::Bytes;
use h5lake_codecs::{ChunkFormat, ElementClass, ElementInfo, Pipeline};
use h5lake_store::{PutOutcome, Version, Versioned};
use h5lake_types::{ByteOrder, Datatype, Selection, Shape, UNLIMITED};
use rayon::prelude::*;
use serde_json::{json, Value};

use std::sync::Arc;

use crate::chunk_codec::{ChunkCodec, Columnar, Filtered};
use crate::domain::{backoff, Domain};
use crate::ids;
use crate::linked::{LinkIndex, LinkedLayout};
use crate::planner::{
    contiguous_run, contiguous_source, plan_points, strides, walk, DimPart, OrthoPlan,
};
use crate::{EngineError, Result};

/// Most bytes the fill value of a variable-length type may take over one
/// chunk (each unwritten element of a chunk read holds its own copy).
const MAX_FILL_CHUNK_BYTES: u128 = 64 << 20;

/// Refuses a variable-length fill value of `fill_len` bytes that would
/// take more than [`MAX_FILL_CHUNK_BYTES`] over a chunk of `chunk`: a
/// chunk never written reads as its fill value once per element.
fn check_fill_fits(dtype: &Datatype, fill_len: usize, chunk: &[u64]) -> Result<()> {
    let elems = chunk.iter().try_fold(1u64, |n, &c| n.checked_mul(c));
    if dtype.fixed_size().is_none()
        && elems.is_none_or(|n| fill_len as u128 * u128::from(n) > MAX_FILL_CHUNK_BYTES)
    {
        return Err(EngineError::TooLarge(format!(
            "a fill value of {fill_len} bytes over chunks of {chunk:?} elements would take \
             more than {MAX_FILL_CHUNK_BYTES} bytes; give a smaller fill value or smaller chunks"
        )));
    }
    Ok(())
}

/// Most bytes of values a chunk of a variable-length type may hold (every
/// read or write of the chunk holds it whole; HSDS's chunk cache is 128 MiB).
const MAX_VLEN_CHUNK_BYTES: u128 = 128 << 20;

/// Contiguous datasets up to this size are stored as one chunk covering the
/// whole shape, which is also how HSDS stores small contiguous datasets.
const MAX_SINGLE_CHUNK_BYTES: u64 = 4 << 20;
/// Target size of the hidden chunks of a large contiguous dataset.
const HIDDEN_CHUNK_BYTES: u64 = 2 << 20;

/// Everything the data path needs to know about a dataset, parsed from its
/// document.
#[derive(Clone, Debug)]
pub struct DatasetMeta {
    pub id: String,
    pub dtype: Datatype,
    /// The committed datatype (`t-…`) the type was taken from, which HSDS
    /// records as the `id` inside the dataset's type.
    pub committed_type: Option<String>,
    /// `dtype` as the program that made the dataset laid it out, when that
    /// differs from the packed layout stored (see
    /// [`Datatype::unpacked_layout`]).
    pub laid_out: Option<Datatype>,
    pub shape: Shape,
    /// Current extent (a scalar is `[1]`).
    pub dims: Vec<u64>,
    /// Storage chunk shape.
    pub chunk: Vec<u64>,
    /// Whether the user asked for a chunked layout (resizable).
    pub chunked: bool,
    pub pipeline: Pipeline,
    /// Byte layout of filtered chunks: HSDS's (a Blosc frame around the
    /// compressor, no checksum) unless the document says otherwise.
    pub format: ChunkFormat,
    /// What an unwritten element reads as: one element of fill value; for
    /// variable-length types the bytes of the fill element (empty without
    /// a fill value).
    pub fill: Vec<u8>,
    /// Where the chunks are when they live in another file (link mode).
    pub link: Option<Arc<LinkedLayout>>,
    /// How chunk objects hold their chunks (see [`crate::chunk_codec`]).
    pub codec: Arc<dyn ChunkCodec>,
    pub(crate) prefix: String,
    /// The statistics kept per chunk (see [`crate::stats`]); `None`: none.
    pub stats: Option<Arc<crate::stats::StatsPlan>>,
    /// Of a virtual dataset, where its elements come from (see
    /// [`crate::virtual_ds`]).
    pub virtual_map: Option<Arc<crate::virtual_ds::VirtualMap>>,
}

/// The members `names` of the compound `dtype`, in that order.
///
/// # Errors
/// Not a compound; a name that is no member, or named twice.
pub(crate) fn named_members<'a>(
    dtype: &'a Datatype,
    names: &[String],
) -> Result<Vec<&'a h5lake_types::Field>> {
    let Datatype::Compound { fields, .. } = dtype else {
        return Err(EngineError::WrongType(
            "field names only apply to compound types".into(),
        ));
    };
    names
        .iter()
        .enumerate()
        .map(|(i, name)| {
            if names[..i].contains(name) {
                return Err(EngineError::Invalid(format!(
                    "field {name:?} requested twice"
                )));
            }
            fields.iter().find(|f| &f.name == name).ok_or_else(|| {
                EngineError::Invalid(format!("no field {name:?} in the compound type"))
            })
        })
        .collect()
}

impl DatasetMeta {
    /// Parses a dataset document.
    ///
    /// # Errors
    /// Documents that are not datasets or are malformed.
    pub fn from_doc(doc: &Value) -> Result<Self> {
        let id = doc
            .get("id")
            .and_then(Value::as_str)
            .ok_or_else(|| EngineError::Corrupt("dataset without id".into()))?;
        let t = doc
            .get("type")
            .ok_or_else(|| EngineError::WrongType(format!("object {id} is not a dataset")))?;
        let dtype = Datatype::from_json(t)?;
        let committed_type = t
            .get("id")
            .and_then(Value::as_str)
            .filter(|s| s.starts_with("t-"))
            .map(str::to_string);
        let laid_out = dtype.laid_out_as_in(t);
        let shape = Shape::from_json(
            doc.get("shape")
                .ok_or_else(|| EngineError::Corrupt(format!("{id}: no shape")))?,
        )?;
        let dims = shape.dims();
        let cprops = doc.get("creationProperties").cloned().unwrap_or(json!({}));
        let layout = doc
            .get("layout")
            .filter(|l| l.get("class").and_then(Value::as_str) == Some("H5D_CHUNKED"))
            .or_else(|| cprops.get("layout"));
        let layout_class = layout
            .and_then(|l| l.get("class"))
            .and_then(Value::as_str)
            .unwrap_or("H5D_CONTIGUOUS");
        let hidden =
            doc.pointer("/h5lake/layout").and_then(Value::as_str) == Some("H5D_CONTIGUOUS");
        let linked = match layout {
            Some(l) => LinkedLayout::parse(id, l, &dims, dtype.fixed_size().unwrap_or(0))?,
            None => None,
        };
        let (chunk, chunked, link) = if let Some((link, chunk)) = linked {
            (chunk, false, Some(Arc::new(link)))
        } else if layout_class == "H5D_CHUNKED" {
            let c: Vec<u64> = layout
                .and_then(|l| l.get("dims"))
                .and_then(Value::as_array)
                .map(|a| a.iter().filter_map(Value::as_u64).collect())
                .unwrap_or_default();
            if c.len() != dims.len() || c.contains(&0) {
                return Err(EngineError::Corrupt(format!(
                    "{id}: chunk dims {c:?} do not fit shape {dims:?}"
                )));
            }
            (c, !hidden, None)
        } else {
            (dims.iter().map(|&d| d.max(1)).collect(), false, None)
        };
        // Rows of Parquet files, linked: chunked as the document says, read
        // from the files.
        let link = match crate::parquet_link::ParquetSource::of_doc(doc)? {
            Some(source) if link.is_none() && dims.len() == 1 && chunk.len() == 1 => {
                Some(Arc::new(LinkedLayout::parquet(source, &chunk)))
            }
            Some(_) => {
                return Err(EngineError::Corrupt(format!(
                    "{id}: a dataset linked to Parquet files is 1-D and chunked"
                )))
            }
            None => link,
        };
        let filters = cprops.get("filters").unwrap_or(&Value::Null);
        let pipeline = if crate::chunk_codec::format_name(doc) == Some(crate::chunk_codec::PARQUET)
        {
            // Parquet compresses columnar chunks; the pipeline only says
            // what an HDF5 copy of the dataset is filtered with (snappy has
            // no HDF5 filter: none).
            Pipeline::from_hsds_json(filters).unwrap_or_default()
        } else {
            // (A filter h5lake lacks leaves the dataset open and described,
            // as h5py without the plugin; its chunks fail naming it.)
            Pipeline::described(filters)?
        };
        // HDF5's "fill time never": unwritten elements are undefined, not
        // the declared fill value; h5lake reads them as zero bytes.
        let never = cprops.get("fillTime").and_then(Value::as_str) == Some("H5D_FILL_TIME_NEVER");
        let declared = if never {
            None
        } else {
            h5lake_types::declared_fill(&dtype, &cprops)?
        };
        let fill = match (dtype.fixed_size(), declared) {
            (_, Some(b)) => b,
            (None, None) if dtype.is_top_level_vlen() => Vec::new(),
            (None, None) => h5lake_types::record::empty_record(&dtype),
            (Some(n), None) => vec![0; n],
        };
        check_fill_fits(&dtype, fill.len(), &chunk)?;
        let format = match crate::chunk_codec::format_name(doc) {
            None | Some("hsds" | crate::chunk_codec::PARQUET) => ChunkFormat::Hsds,
            Some("hdf5") => ChunkFormat::Hdf5,
            Some(other) => {
                return Err(EngineError::Corrupt(format!(
                    "{id}: unknown chunk format {other:?}"
                )))
            }
        };
        let codec: Arc<dyn ChunkCodec> =
            if crate::chunk_codec::format_name(doc) == Some(crate::chunk_codec::PARQUET) {
                Arc::new(Columnar {
                    compression: h5lake_columnar::Compression::from_filters(
                        cprops.get("filters").unwrap_or(&Value::Null),
                    )?,
                    elems: chunk.iter().product::<u64>() as usize,
                    fill: fill.clone(),
                    dtype: dtype.clone(),
                    some_columns: false,
                })
            } else {
                Arc::new(Filtered {
                    pipeline: pipeline.clone(),
                    format,
                    filter_elem_size: dtype.filter_elem_size(),
                })
            };
        let prefix = ids::object_prefix(id)?;
        let stats = crate::stats::StatsPlan::of_dataset(doc, &dtype)?;
        let virtual_map = crate::virtual_ds::VirtualMap::of_doc(doc, &dims)?;
        Ok(DatasetMeta {
            id: id.to_string(),
            dtype,
            committed_type,
            laid_out,
            shape,
            dims,
            chunk,
            chunked,
            pipeline,
            format,
            fill,
            link,
            codec,
            prefix,
            stats,
            virtual_map,
        })
    }

    pub(crate) fn elem_size(&self) -> usize {
        self.dtype.fixed_size().unwrap_or(0)
    }

    pub(crate) fn chunk_elems(&self) -> usize {
        self.chunk.iter().product::<u64>() as usize
    }

    pub(crate) fn key(&self, coords: &[u64]) -> String {
        ids::chunk_key(&self.prefix, coords)
    }

    /// A whole chunk of fill value.
    pub(crate) fn fill_chunk(&self) -> Vec<u8> {
        if self.fill.iter().all(|&b| b == 0) {
            return vec![0; self.chunk_elems() * self.elem_size()];
        }
        self.fill.repeat(self.chunk_elems())
    }

    pub(crate) fn check_decoded_len(&self, len: usize) -> Result<()> {
        let expected = self.chunk_elems() * self.elem_size();
        if self.dtype.fixed_size().is_some() && len != expected {
            return Err(EngineError::Corrupt(format!(
                "chunk of {} holds {len} bytes, expected {expected}",
                self.id
            )));
        }
        Ok(())
    }

    /// Whether chunk objects hold chunks as they are (no filters, not
    /// columnar): parts of them are then read and written in place.
    pub fn stored_as_raw(&self) -> bool {
        self.codec.is_identity()
    }

    /// The dataset as if its type held only the members `names` (in that
    /// order, packed): what a read of those members of a columnar dataset
    /// decodes.
    pub(crate) fn projected(&self, names: &[String]) -> Result<DatasetMeta> {
        let mut members = Vec::with_capacity(names.len());
        let mut fill = Vec::new();
        for f in named_members(&self.dtype, names)? {
            let name = &f.name;
            let w = f.dtype.fixed_size().ok_or_else(|| {
                EngineError::WrongType(format!(
                    "field {name:?} is of variable length: read it with read_vlen"
                ))
            })?;
            match self.fill.get(f.offset..f.offset + w) {
                Some(part) => fill.extend_from_slice(part),
                None => fill.resize(fill.len() + w, 0),
            }
            members.push(json!({"name": name, "type": f.dtype.to_json()}));
        }
        let dtype = Datatype::from_json(&json!({"class": "H5T_COMPOUND", "fields": members}))?;
        let Some(columnar) = self.codec.as_columnar() else {
            return Err(EngineError::Invalid("not a columnar dataset".into()));
        };
        let codec = Arc::new(Columnar {
            dtype: dtype.clone(),
            compression: columnar.compression,
            elems: columnar.elems,
            fill: fill.clone(),
            some_columns: true,
        });
        Ok(DatasetMeta {
            dtype,
            committed_type: None,
            laid_out: None,
            fill,
            codec,
            ..self.clone()
        })
    }

    /// The dataset as its statistics and queries see it: itself, or of a
    /// compound with members of variable length, the dataset of just its
    /// fixed-size members (what [`DatasetMeta::stats`] is kept over): of a
    /// columnar one their columns, of one in rows a read-only view that
    /// takes them out of each element.
    ///
    /// # Errors
    /// A damaged fill value.
    pub(crate) fn stats_view(&self) -> Result<DatasetMeta> {
        let Some(names) = crate::stats::fixed_members(&self.dtype) else {
            return Ok(self.clone());
        };
        if self.is_columnar() {
            return self.projected(&names);
        }
        let Datatype::Compound { fields, .. } = &self.dtype else {
            return Ok(self.clone());
        };
        let kept: Vec<usize> = (0..fields.len())
            .filter(|&k| names.contains(&fields[k].name))
            .collect();
        let mut fill = Vec::new();
        crate::chunk_codec::fixed_part(&self.dtype, &kept, &self.fill, &mut fill)?;
        let codec = Arc::new(crate::chunk_codec::FixedPart {
            inner: self.codec.clone(),
            whole: self.dtype.clone(),
            elems: self.chunk_elems(),
            whole_fill: self.fill.clone(),
            kept,
        });
        Ok(DatasetMeta {
            dtype: crate::stats::members_type(&self.dtype, &names)?,
            committed_type: None,
            laid_out: None,
            fill,
            codec,
            ..self.clone()
        })
    }

    /// Refuses writes of data to a dataset whose values are those of
    /// linked Parquet files.
    ///
    /// # Errors
    /// [`EngineError::ReadOnly`] for such a dataset.
    pub fn check_data_writable(&self) -> Result<()> {
        if self.virtual_map.is_some() {
            return Err(EngineError::ReadOnly(format!(
                "{} is a virtual dataset: its elements are its sources'; write to the sources",
                self.id
            )));
        }
        if self
            .link
            .as_ref()
            .is_some_and(|l| l.parquet_source().is_some())
        {
            return Err(EngineError::ReadOnly(format!(
                "{} is linked to Parquet files and read-only (its values are theirs); load the \
                 files without --link/link=True to get a dataset you can write",
                self.id
            )));
        }
        Ok(())
    }

    /// What makes a damaged chunk's error say which chunk of which dataset
    /// it is.
    pub(crate) fn naming_chunk<'k>(
        &'k self,
        key: &'k str,
    ) -> impl Fn(EngineError) -> EngineError + 'k {
        move |e| {
            let msg = match e {
                // (Not damage: a codec h5lake lacks, said as such.)
                e @ EngineError::Codec(h5lake_codecs::CodecError::Unsupported(_)) => return e,
                EngineError::Corrupt(msg) if !msg.starts_with("chunk ") => msg,
                EngineError::Codec(e) => e.to_string(),
                e => return e,
            };
            let name = key.get(self.prefix.len()..).unwrap_or(key);
            EngineError::Corrupt(format!("chunk {name} of dataset {}: {msg}", self.id))
        }
    }

    /// Whether chunks are Parquet objects (the columnar layout).
    pub fn is_columnar(&self) -> bool {
        self.codec.as_columnar().is_some()
    }

    pub(crate) fn decode(&self, stored: Bytes) -> Result<Bytes> {
        if self.stored_as_raw() {
            // Chunks stored as they are are used as read: no copy.
            self.check_decoded_len(stored.len())?;
            return Ok(stored);
        }
        Ok(Bytes::from(self.decode_stored(&stored)?))
    }

    pub(crate) fn decode_stored(&self, stored: &[u8]) -> Result<Vec<u8>> {
        // (A chunk of variable-length values has no size known before.)
        let expected =
            (self.dtype.fixed_size().is_some()).then(|| self.chunk_elems() * self.elem_size());
        let raw = self.codec.decode(stored, expected)?;
        self.check_decoded_len(raw.len())?;
        Ok(raw)
    }

    /// The object to store for the chunk at `key`.
    pub(crate) fn encode<'a>(
        &self,
        raw: impl Into<std::borrow::Cow<'a, [u8]>>,
        key: &str,
    ) -> Result<Vec<u8>> {
        self.codec.encode(raw.into(), self.live_elems(key))
    }

    /// The elements of the chunk at `key` that lie in the dataset's extent
    /// when they are its leading ones (a 1-D dataset's last chunk); all of
    /// them otherwise.
    fn live_elems(&self, key: &str) -> usize {
        let n = self.chunk_elems();
        if self.dims.len() != 1 {
            return n;
        }
        let Some(coords) = key
            .get(self.prefix.len()..)
            .and_then(|k| parse_chunk_name(k, 1))
        else {
            return n;
        };
        let start = coords[0].saturating_mul(self.chunk[0]);
        (self.dims[0].saturating_sub(start).min(self.chunk[0]) as usize).min(n)
    }

    /// Whether reading or writing `bytes` of this dataset is small work
    /// for each chunk it touches: few bytes, no filters to run, no linked
    /// file to read through.
    fn is_small_io(&self, bytes: usize) -> bool {
        bytes <= SMALL_IO_BYTES && self.stored_as_raw() && self.link.is_none()
    }

    /// Whether `parts` select every element of their chunk with unit steps
    /// (an edge chunk's padding beyond the extent is never selected, so edge
    /// chunks do not qualify).
    fn covers_whole_chunk(&self, parts: &[&DimPart]) -> bool {
        parts
            .iter()
            .enumerate()
            .all(|(d, p)| p.covered == self.chunk[d] && p.runs.iter().all(|r| r.step == 1))
    }
}

/// Which bytes of each stored element go where in each output element.
pub(crate) struct Projection {
    /// (offset in the stored element, length, offset in the output element).
    pieces: Vec<(usize, usize, usize)>,
    elem_size: usize,
    pub(crate) out_size: usize,
}

impl Projection {
    /// Appends the output element made of stored element `elem`.
    pub(crate) fn append(&self, elem: &[u8], out: &mut Vec<u8>) {
        for &(at, len, _) in &self.pieces {
            out.extend_from_slice(&elem[at..at + len]);
        }
    }

    fn is_identity(&self) -> bool {
        matches!(self.pieces[..], [(0, len, 0)] if len == self.elem_size)
    }

    pub(crate) fn new(dtype: &Datatype, fields: Option<&[String]>) -> Result<Self> {
        let elem_size = dtype.fixed_size().unwrap_or(0);
        let Some(names) = fields else {
            return Ok(Projection {
                pieces: vec![(0, elem_size, 0)],
                elem_size,
                out_size: elem_size,
            });
        };
        let Datatype::Compound {
            fields: members, ..
        } = dtype
        else {
            return Err(EngineError::WrongType(
                "field names only apply to compound types".into(),
            ));
        };
        let mut pieces = Vec::with_capacity(names.len());
        let mut out = 0;
        for (i, name) in names.iter().enumerate() {
            if names[..i].contains(name) {
                return Err(EngineError::Invalid(format!(
                    "field {name:?} requested twice"
                )));
            }
            let f = members.iter().find(|f| &f.name == name).ok_or_else(|| {
                EngineError::Invalid(format!("no field {name:?} in the compound type"))
            })?;
            let len = f.dtype.fixed_size().unwrap_or(0);
            pieces.push((f.offset, len, out));
            out += len;
        }
        Ok(Projection {
            pieces,
            elem_size,
            out_size: out,
        })
    }

    /// Copies `n` consecutive elements from chunk element `s` to output
    /// element `d`.
    ///
    /// # Safety
    /// `src` holds element `s + n - 1` and the output buffer behind `dst`
    /// holds element `d + n - 1`; no other thread writes those outputs.
    unsafe fn copy(&self, src: &[u8], s: u64, dst: OutPtr, d: u64, n: u64) {
        let (s, d, n) = (s as usize, d as usize, n as usize);
        if let [(0, len, 0)] = self.pieces[..] {
            if len == self.elem_size {
                std::ptr::copy_nonoverlapping(src.as_ptr().add(s * len), dst.at(d * len), n * len);
                return;
            }
        }
        // Member by member, so that each inner loop is a strided gather of a
        // fixed width the compiler turns into plain loads and stores.
        let (es, os) = (self.elem_size, self.out_size);
        let src0 = src.as_ptr().add(s * es);
        let dst0 = dst.at(d * os);
        for &(off, len, doff) in &self.pieces {
            let (sp, dp) = (src0.add(off), dst0.add(doff));
            match len {
                1 => gather::<1>(sp, es, dp, os, n),
                2 => gather::<2>(sp, es, dp, os, n),
                4 => gather::<4>(sp, es, dp, os, n),
                8 => gather::<8>(sp, es, dp, os, n),
                _ => (0..n).for_each(|k| {
                    std::ptr::copy_nonoverlapping(sp.add(k * es), dp.add(k * os), len)
                }),
            }
        }
    }
}

/// Copies `n` items of `W` bytes from `src + k * src_stride` to
/// `dst + k * dst_stride`.
///
/// # Safety
/// Both ranges are valid for the strides and counts given.
#[inline(always)]
unsafe fn gather<const W: usize>(
    src: *const u8,
    src_stride: usize,
    dst: *mut u8,
    dst_stride: usize,
    n: usize,
) {
    for k in 0..n {
        let v = std::ptr::read_unaligned(src.add(k * src_stride).cast::<[u8; W]>());
        std::ptr::write_unaligned(dst.add(k * dst_stride).cast::<[u8; W]>(), v);
    }
}

/// Raw pointer into the caller's buffer, shared by chunk tasks that write
/// disjoint elements of it.
#[derive(Clone, Copy)]
pub(crate) struct OutPtr(pub(crate) *mut u8);
unsafe impl Send for OutPtr {}
unsafe impl Sync for OutPtr {}

impl OutPtr {
    /// The address `offset` bytes in. A method (rather than `.0`) so that
    /// closures capture the whole `Send` wrapper, not the raw pointer field.
    pub(crate) fn at(self, offset: usize) -> *mut u8 {
        // SAFETY: callers stay inside the validated buffer.
        unsafe { self.0.add(offset) }
    }
}

/// What scale-offset and szip adapt to in an element type.
fn element_info(dtype: &Datatype) -> ElementInfo {
    let (class, order) = match dtype {
        Datatype::Integer { signed, order, .. } => {
            (ElementClass::Integer { signed: *signed }, *order)
        }
        Datatype::Float { order, .. } => (ElementClass::Float, *order),
        _ => (ElementClass::Other, ByteOrder::Little),
    };
    ElementInfo {
        class,
        size: dtype.fixed_size().unwrap_or(0),
        big_endian: order == ByteOrder::Big,
    }
}

/// A filter list given at creation that cannot be used (unknown filter,
/// level out of range) is the caller's mistake, not a store fault.
fn bad_filters(e: h5lake_codecs::CodecError) -> EngineError {
    EngineError::Invalid(format!("invalid filters: {e}"))
}

impl Domain {
    /// Creates an unlinked dataset from HSDS type, shape and creation
    /// properties JSON.
    ///
    /// # Errors
    /// Invalid type, shape, layout, filter or fill value; read-only domain.
    pub fn create_dataset(
        &self,
        type_json: Value,
        shape_json: Value,
        cprops: Value,
    ) -> Result<String> {
        self.create_dataset_with_id(None, type_json, shape_json, cprops)
    }

    /// [`Domain::create_dataset`] with a caller-chosen id.
    ///
    /// # Errors
    /// As [`Domain::create_group_with_id`] and [`Domain::create_dataset`].
    pub fn create_dataset_with_id(
        &self,
        id: Option<&str>,
        type_json: Value,
        shape_json: Value,
        mut cprops: Value,
    ) -> Result<String> {
        self.check_writable()?;
        let dtype = Datatype::from_json(&type_json)?;
        let shape = Shape::from_json(&shape_json)?;
        if !cprops.is_object() {
            cprops = json!({});
        }
        let declared_fill = h5lake_types::declared_fill(&dtype, &cprops)?;
        let dims = shape.dims();
        let maxdims = shape.maxdims();
        let class = cprops
            .pointer("/layout/class")
            .and_then(Value::as_str)
            .unwrap_or("H5D_CONTIGUOUS")
            .to_string();
        let mut doc = json!({"type": type_json, "shape": shape.to_json(), "attributes": {}});
        match class.as_str() {
            "H5D_CHUNKED" => {
                if matches!(shape, Shape::Scalar | Shape::Null) {
                    return Err(EngineError::WrongType(
                        "chunked layout requires a simple (non-scalar) dataspace".into(),
                    ));
                }
                let c: Vec<u64> = cprops
                    .pointer("/layout/dims")
                    .and_then(Value::as_array)
                    .map(|a| a.iter().map(|v| v.as_u64().unwrap_or(0)).collect())
                    .unwrap_or_default();
                if c.len() != dims.len() {
                    return Err(EngineError::Invalid(format!(
                        "chunk shape must have the dataset's rank {} (got {c:?})",
                        dims.len()
                    )));
                }
                // (A chunk may reach past a fixed maximum extent: libhdf5
                // takes it, and h5py's guess for an empty dataset makes one.)
                if c.contains(&0) {
                    return Err(EngineError::Invalid(format!(
                        "chunk shape {c:?} must be positive"
                    )));
                }
                if let Some(filters) = cprops.get("filters") {
                    let fill = match (&declared_fill, dtype.fixed_size()) {
                        (Some(b), Some(_)) => b.clone(),
                        _ => vec![0; dtype.fixed_size().unwrap_or(0)],
                    };
                    cprops["filters"] =
                        h5lake_codecs::complete_filters(filters, element_info(&dtype), &c, &fill)
                            .map_err(bad_filters)?;
                }
            }
            "H5D_CONTIGUOUS" | "H5D_COMPACT" => {
                // (A virtual dataset's maximum extent is kept as HDF5 keeps
                // it; its mappings, not chunks, say where elements are.)
                let is_virtual = cprops.pointer("/h5lake/virtual").is_some();
                if maxdims != dims && !is_virtual {
                    return Err(EngineError::Invalid(
                        "a resizable dataset (maxshape) must be chunked".into(),
                    ));
                }
                if cprops
                    .get("filters")
                    .and_then(Value::as_array)
                    .is_some_and(|f| !f.is_empty())
                {
                    return Err(EngineError::Invalid(
                        "filters require a chunked layout".into(),
                    ));
                }
                let esize = dtype.fixed_size().unwrap_or(16) as u64;
                let nbytes = shape.num_elements().saturating_mul(esize);
                if nbytes > MAX_SINGLE_CHUNK_BYTES && !matches!(shape, Shape::Scalar | Shape::Null)
                {
                    // Store it chunked so that parts read and write
                    // independently, but keep reporting "contiguous".
                    let c = hidden_chunks(&dims, esize);
                    cprops["layout"] = json!({"class": "H5D_CHUNKED", "dims": c});
                    doc["h5lake"] = json!({"layout": class});
                }
            }
            c if LINKED_CLASSES.contains(&c) => {
                let Some(esize) = dtype.fixed_size() else {
                    return Err(EngineError::WrongType(
                        "linked layouts need a fixed-size type".into(),
                    ));
                };
                if matches!(shape, Shape::Scalar | Shape::Null) {
                    return Err(EngineError::WrongType(format!(
                        "{class} needs a simple dataspace"
                    )));
                }
                // Checked here, before anything is stored: a client must not
                // get the server to read a file it names.
                let parsed = LinkedLayout::parse("new dataset", &cprops["layout"], &dims, esize)
                    .map_err(|e| match e {
                        EngineError::Corrupt(m) => EngineError::Invalid(m),
                        e => e,
                    })?;
                if let Some((link, _)) = parsed {
                    self.linked_files.check(&link.file_uri)?;
                    if let LinkIndex::Table { table_id } = &link.index {
                        if self.dataset(table_id)?.link.is_some() {
                            return Err(EngineError::Invalid(format!(
                                "chunk table {table_id} must be a dataset of its own data, not a linked one"
                            )));
                        }
                    }
                }
            }
            other => {
                return Err(EngineError::Invalid(format!(
                    "unsupported layout class {other}"
                )))
            }
        }
        // h5lake's own settings of the dataset (the chunk format) go to the
        // document's `h5lake` key, beside HSDS's.
        if let Some(Value::Object(own)) = cprops.as_object_mut().and_then(|o| o.remove("h5lake")) {
            for (k, v) in own {
                doc["h5lake"][k] = v;
            }
        }
        crate::chunk_codec::check_new(&doc, &dtype, &cprops, class == "H5D_CHUNKED")?;
        if doc.pointer("/h5lake/virtual").is_some() {
            if !matches!(shape, Shape::Simple { .. }) {
                return Err(EngineError::Invalid(
                    "a virtual dataset has a simple (non-scalar) shape".into(),
                ));
            }
            if class != "H5D_CONTIGUOUS"
                || cprops
                    .get("filters")
                    .is_some_and(|f| f.as_array().is_some_and(|a| !a.is_empty()))
            {
                return Err(EngineError::Invalid(
                    "a virtual dataset has no chunks or filters of its own".into(),
                ));
            }
            self.check_new_virtual(&doc, &dims)?;
        }
        // Chunk functions are checked now, so that a bad one is refused
        // with its position before anything is stored.
        crate::stats::StatsPlan::check_new_functions(&doc)?;
        crate::stats::StatsPlan::of_dataset(&doc, &dtype)?;
        crate::parquet_link::check_new(
            &self.linked_files,
            &doc,
            &dims,
            &maxdims,
            class == "H5D_CHUNKED",
        )?;
        if crate::chunk_codec::format_name(&doc) != Some(crate::chunk_codec::PARQUET) {
            let filters = cprops.get("filters").unwrap_or(&Value::Null);
            // A linked dataset's filters say how a file written elsewhere
            // was coded: one h5lake lacks makes its chunks unreadable, not
            // the dataset (h5py lists it too). Anything written here must
            // be coded by filters h5lake applies.
            if LINKED_CLASSES.contains(&class.as_str()) {
                Pipeline::described(filters)
            } else {
                Pipeline::from_hsds_json(filters)
            }
            .map_err(bad_filters)?;
        }
        if let Some(fill) = &declared_fill {
            let chunk: Vec<u64> = match cprops.pointer("/layout/dims").and_then(Value::as_array) {
                Some(c) => c.iter().map(|v| v.as_u64().unwrap_or(0)).collect(),
                None => dims.iter().map(|&d| d.max(1)).collect(),
            };
            check_fill_fits(&dtype, fill.len(), &chunk)?;
        }
        doc["creationProperties"] = cprops;
        self.new_dataset_doc(id, doc)
    }

    /// The parsed dataset document.
    ///
    /// # Errors
    /// Unknown id; not a dataset.
    pub fn dataset_meta(&self, id: &str) -> Result<DatasetMeta> {
        Ok((*self.dataset(id)?).clone())
    }

    /// The parsed dataset document, shared with the domain's cache: what
    /// the `*_with` data calls take, so that a caller that has just looked
    /// a dataset up (a server planning a request) does not look it up again.
    ///
    /// # Errors
    /// Unknown id; not a dataset.
    pub fn dataset(&self, id: &str) -> Result<Arc<DatasetMeta>> {
        self.dataset_with_access(id, &crate::virtual_ds::VirtualAccess::default())
    }

    /// [`Domain::dataset`], of a virtual dataset opened with a dataset
    /// access list: its sources found and its printf-style series ended as
    /// `access` says (HDF5's `H5Pset_virtual_prefix`,
    /// `H5Pset_virtual_printf_gap`).
    ///
    /// # Errors
    /// As [`Domain::dataset`].
    pub fn dataset_with_access(
        &self,
        id: &str,
        access: &crate::virtual_ds::VirtualAccess,
    ) -> Result<Arc<DatasetMeta>> {
        let mut m = self.stored_dataset(id)?;
        if let Some(vm) = m.virtual_map.as_ref().filter(|vm| vm.access != *access) {
            let mut own = (*m).clone();
            own.virtual_map = Some(Arc::new(vm.with_access(access)));
            m = Arc::new(own);
        }
        match &m.virtual_map {
            Some(vm) if vm.unlimited => Ok(Arc::new(self.live_virtual(&m, vm)?)),
            _ => Ok(m),
        }
    }

    /// The dataset as its document describes it: of a virtual dataset
    /// with unlimited mappings, the extent and mappings as stored, not as
    /// its sources' extents make them now ([`Domain::dataset`]).
    ///
    /// # Errors
    /// Unknown id; not a dataset.
    pub fn stored_dataset(&self, id: &str) -> Result<Arc<DatasetMeta>> {
        if !id.starts_with("d-") {
            return Err(EngineError::WrongType(format!(
                "object {id} is not a dataset"
            )));
        }
        self.cached_meta(id)
    }

    /// A scalar dataset is stored as one element of shape `[1]`; callers
    /// may select it with the empty (rank-0) selection.
    fn normalize<'s>(m: &DatasetMeta, sel: &'s Selection) -> std::borrow::Cow<'s, Selection> {
        match sel {
            Selection::Orthogonal(v) if v.is_empty() && m.shape == Shape::Scalar => {
                std::borrow::Cow::Owned(Selection::all(&[1]))
            }
            Selection::Points { rank: 0, coords }
                if m.shape == Shape::Scalar && coords.is_empty() =>
            {
                std::borrow::Cow::Owned(Selection::all(&[1]))
            }
            _ => std::borrow::Cow::Borrowed(sel),
        }
    }

    fn check_selection(m: &DatasetMeta, sel: &Selection, buf_len: usize) -> Result<()> {
        Self::check_selection_sized(m, sel, buf_len, m.elem_size())
    }

    fn check_selection_sized(
        m: &DatasetMeta,
        sel: &Selection,
        buf_len: usize,
        out_elem: usize,
    ) -> Result<()> {
        if m.shape == Shape::Null {
            return Err(EngineError::Invalid(
                "the dataset has a null dataspace; it holds no elements".into(),
            ));
        }
        sel.validate(&m.dims)?;
        let need = usize::try_from(sel.num_elements())
            .ok()
            .and_then(|n| n.checked_mul(out_elem));
        if m.dtype.fixed_size().is_some() && need != Some(buf_len) {
            let need = need.map_or_else(|| "more than memory holds".into(), |n| n.to_string());
            return Err(EngineError::Invalid(format!(
                "buffer holds {buf_len} bytes but the selection needs {need}"
            )));
        }
        Ok(())
    }

    /// Reads the selection into `out` (C order, stored element bytes).
    ///
    /// # Errors
    /// Bad selection or buffer size; corrupt chunks; I/O trouble.
    pub fn read(&self, id: &str, sel: &Selection, out: &mut [u8]) -> Result<()> {
        self.read_fields(id, sel, None, out)
    }

    /// Reads the selection, keeping only the named members of a compound
    /// type (`None` = whole elements). Each output element is the packed
    /// concatenation of those members in the order given, so reading 3 of 8
    /// columns moves 3 columns' bytes, not 8.
    ///
    /// # Errors
    /// Unknown or repeated field names, a non-compound type; as [`Domain::read`].
    pub fn read_fields(
        &self,
        id: &str,
        sel: &Selection,
        fields: Option<&[String]>,
        out: &mut [u8],
    ) -> Result<()> {
        self.read_with(&*self.dataset(id)?, sel, fields, out, false)
    }

    /// As [`Domain::read_fields`], for a dataset already looked up with
    /// [`Domain::dataset`]. With `bypass_cache`, for one part of a
    /// sequential read too big for the chunk cache (a server streaming a
    /// large answer slab by slab), the chunks go from storage to `out`
    /// without entering the cache: judged part by part, each slab would fit
    /// and the scan would evict every cached chunk, its own included, before
    /// they are read again.
    ///
    /// # Errors
    /// As [`Domain::read_fields`].
    pub fn read_with(
        &self,
        m: &DatasetMeta,
        sel: &Selection,
        fields: Option<&[String]>,
        out: &mut [u8],
        bypass_cache: bool,
    ) -> Result<()> {
        if let Some(vm) = &m.virtual_map {
            return self.read_virtual(m, vm, &Self::normalize(m, sel), fields, out);
        }
        if let (Some(names), true) = (fields, m.is_columnar()) {
            // Some members of a columnar dataset: only their columns are
            // decoded, into elements of just those members. Such partial
            // chunks never enter the cache, which holds whole ones.
            return self.read_with(&m.projected(names)?, sel, None, out, true);
        }
        let sel = &*Self::normalize(m, sel);
        if m.dtype.is_variable() {
            return Err(EngineError::WrongType(
                "variable-length data must be read with read_vlen".into(),
            ));
        }
        let proj = Projection::new(&m.dtype, fields)?;
        Self::check_selection_sized(m, sel, out.len(), proj.out_size)?;
        let ptr = OutPtr(out.as_mut_ptr());
        let fill_chunk = std::sync::OnceLock::new();
        let inline = m.is_small_io(out.len());
        match sel {
            Selection::Orthogonal(sels) => {
                let plan = OrthoPlan::new(sels, &m.chunk);
                let cs = strides(&m.chunk);
                let os = strides(&sel.out_shape());
                let use_cache = !bypass_cache && self.fits_cache(m, plan.num_chunks());
                // Unfiltered whole elements can go from storage straight into
                // the caller's buffer. Where a chunk is read whole from a local
                // store, that costs no more than a cache hit (whose version
                // check is a `stat` of the same file), so the cache is not
                // consulted or filled for it.
                // (Also those of a dataset linked to an HDF5 file's
                // unfiltered data: from that file, unless rewritten here.)
                let direct = m.stored_as_raw()
                    && proj.is_identity()
                    && m.link.as_ref().is_none_or(|l| l.parquet_source().is_none());
                // Columnar chunks decode straight into the output (only the
                // columns asked for are read); partly selected ones go
                // through the cache when it can hold the read.
                let columnar = m.is_columnar() && proj.is_identity() && m.link.is_none();
                // So do the row groups of linked Parquet files.
                let parquet = m
                    .link
                    .as_ref()
                    .and_then(|l| l.parquet_source())
                    .filter(|_| proj.is_identity());
                let chunk_key = |i: usize| {
                    let coords: Vec<u64> = plan.chunk(i).iter().map(|p| p.chunk).collect();
                    m.key(&coords)
                };
                self.chunk_tasks(
                    m,
                    plan.num_chunks(),
                    inline,
                    chunk_key,
                    |i, fetched| -> Result<()> {
                        let parts = plan.chunk(i);
                        let coords: Vec<u64> = parts.iter().map(|p| p.chunk).collect();
                        let key = m.key(&coords);
                        if fetched.is_none() && direct && m.covers_whole_chunk(&parts) {
                            // SAFETY: as below; the runs are this task's own elements.
                            if unsafe { self.read_chunk_direct(m, &key, &parts, &cs, &os, ptr)? } {
                                return Ok(());
                            }
                        }
                        let region = chunk_region(&parts);
                        let scatter = |src: &[u8]| {
                            // SAFETY: chunk tasks write disjoint output elements and
                            // the selection was validated against the buffer size.
                            walk(&parts, &cs, &os, &mut |s, d, n| unsafe {
                                proj.copy(src, s, ptr, d, n)
                            });
                        };
                        let whole = m.covers_whole_chunk(&parts);
                        if columnar && !whole && fetched.is_none() {
                            // A few rows of a chunk not in the cache: only the
                            // pages that hold them are read.
                            let span = element_span(&region, &m.chunk);
                            if span.len() * FEW_ROWS <= m.chunk_elems()
                                && self.cache.get(&key).is_none()
                            {
                                let es = m.elem_size();
                                let decoded = decode_in_place(m, None, scatter, |buf| {
                                    let dst = &mut buf[span.start * es..span.end * es];
                                    self.read_columnar_rows_into(m, &key, Some(span.clone()), dst)
                                })?;
                                if decoded {
                                    return Ok(());
                                }
                            }
                        }
                        if (columnar || parquet.is_some()) && (whole || !use_cache) {
                            let run = contiguous_run(&parts, &cs, &os)
                                .filter(|&(_, len)| whole && len as usize == m.chunk_elems());
                            let es = m.elem_size();
                            // SAFETY: the run is this task's own output elements, inside
                            // the validated buffer.
                            let into = run.map(|(d0, len)| unsafe {
                                std::slice::from_raw_parts_mut(
                                    ptr.at(d0 as usize * es),
                                    len as usize * es,
                                )
                            });
                            let decoded = match parquet {
                                Some(src) => decode_in_place(m, into, scatter, |dst| {
                                    self.parquet_chunk_into(m, src, coords[0], dst)
                                })?,
                                None => self.with_columnar_chunk(
                                    m,
                                    &key,
                                    fetched.as_ref(),
                                    into,
                                    scatter,
                                )?,
                            };
                            if decoded {
                                return Ok(());
                            }
                        }
                        self.with_task_chunk(
                            m,
                            &key,
                            fetched,
                            use_cache,
                            &fill_chunk,
                            Some(&region),
                            scatter,
                        )
                    },
                )
            }
            Selection::Points { .. } => {
                let groups = plan_points(sel, &m.chunk);
                let use_cache = !bypass_cache && self.fits_cache(m, groups.len());
                let chunk_key = |g: usize| m.key(groups.group(g).0);
                self.chunk_tasks(
                    m,
                    groups.len(),
                    inline,
                    chunk_key,
                    |g, fetched| -> Result<()> {
                        let (coords, pts) = groups.group(g);
                        let key = m.key(coords);
                        let gather = |src: &[u8]| {
                            for &(s, d) in pts {
                                // SAFETY: every point has its own output slot.
                                unsafe { proj.copy(src, s, ptr, d, 1) };
                            }
                        };
                        self.with_task_chunk(m, &key, fetched, use_cache, &fill_chunk, None, gather)
                    },
                )
            }
        }
    }

    /// Writes `data` (C order, stored element bytes) to the selection.
    ///
    /// # Errors
    /// Bad selection or buffer size; read-only domain; I/O trouble.
    pub fn write(&self, id: &str, sel: &Selection, data: &[u8]) -> Result<()> {
        self.check_writable()?;
        self.write_with(&*self.dataset(id)?, sel, data)
    }

    /// As [`Domain::write`], for a dataset already looked up with
    /// [`Domain::dataset`].
    ///
    /// # Errors
    /// As [`Domain::write`].
    pub fn write_with(&self, m: &DatasetMeta, sel: &Selection, data: &[u8]) -> Result<()> {
        self.write_within(m, sel, data)?;
        self.clear_after_shrink(m)
    }

    /// Runs the write `write` of dataset `id`, then
    /// [`Domain::clear_after_shrink`] against the dataset as it was before.
    pub(crate) fn write_guarded(&self, id: &str, write: impl FnOnce() -> Result<()>) -> Result<()> {
        let m = self.dataset(id)?;
        write()?;
        self.clear_after_shrink(&m)
    }

    /// After a write that checked its selection against `m`'s extent:
    /// when another writer has shrunk the dataset since, the shrink may
    /// have cleared the chunks outside its new extent before this write's
    /// landed there, and a later growth would show them where HDF5 shows
    /// the fill value; they are cleared again. (A shrink made after this
    /// look clears this write's chunks itself.)
    fn clear_after_shrink(&self, m: &DatasetMeta) -> Result<()> {
        if m.virtual_map.is_some() || m.link.is_some() {
            return Ok(());
        }
        let now = self.dataset(&m.id)?;
        if now.dims.len() == m.dims.len() && now.dims.iter().zip(&m.dims).any(|(n, o)| n < o) {
            self.clear_outside(&now)?;
        }
        Ok(())
    }

    fn write_within(&self, m: &DatasetMeta, sel: &Selection, data: &[u8]) -> Result<()> {
        self.check_writable()?;
        if let Some(vm) = &m.virtual_map {
            return self.write_virtual(m, vm, &Self::normalize(m, sel), data);
        }
        m.check_data_writable()?;
        let sel = &*Self::normalize(m, sel);
        if m.dtype.is_variable() {
            return Err(EngineError::WrongType(
                "variable-length data must be written with write_vlen".into(),
            ));
        }
        Self::check_selection(m, sel, data.len())?;
        let es = m.elem_size();
        let inline = m.is_small_io(data.len());
        match sel {
            Selection::Orthogonal(sels) => {
                let plan = OrthoPlan::new(sels, &m.chunk);
                let cs = strides(&m.chunk);
                let os = strides(&sel.out_shape());
                for_each_task(plan.num_chunks(), inline, |i| -> Result<()> {
                    let parts = plan.chunk(i);
                    let coords: Vec<u64> = parts.iter().map(|p| p.chunk).collect();
                    if m.covers_whole_chunk(&parts) {
                        if let Some(src) = contiguous_source(&parts, &cs, &os, es, data) {
                            // The chunk is already laid out in the caller's
                            // buffer: stored (or encoded) from there.
                            let key = m.key(&coords);
                            let rec = self.prepare_stats(m, &coords, src);
                            let v = if m.stored_as_raw() {
                                self.store().put(&key, src)?
                            } else {
                                self.store().put(&key, &m.encode(src, &key)?)?
                            };
                            self.cache.remove(&key);
                            return self.store_stats(m, &coords, rec, &v);
                        }
                    }
                    let gather = |buf: &mut Vec<u8>| {
                        walk(&parts, &cs, &os, &mut |s, d, n| {
                            let (s, d, n) = (s as usize * es, d as usize * es, n as usize * es);
                            buf[s..s + n].copy_from_slice(&data[d..d + n]);
                        });
                    };
                    // Only a write of the whole chunk may replace it
                    // unread: an edge chunk's elements past the extent this
                    // writer saw may already hold rows another writer
                    // appended after extending the dataset.
                    let full = m.covers_whole_chunk(&parts);
                    if !full
                        && self.patch_chunk(m, &m.key(&coords), data, |run| {
                            walk(&parts, &cs, &os, &mut |s, d, n| {
                                run(s * es as u64, d as usize * es, n as usize * es);
                            });
                        })?
                    {
                        return Ok(());
                    }
                    self.modify_chunk(m, &m.key(&coords), full, |buf| {
                        gather(buf);
                        Ok(())
                    })
                })
            }
            Selection::Points { .. } => {
                let groups = plan_points(sel, &m.chunk);
                for_each_task(groups.len(), inline, |g| {
                    let (coords, pts) = groups.group(g);
                    if self.patch_chunk(m, &m.key(coords), data, |run| {
                        for &(s, d) in pts {
                            run(s * es as u64, d as usize * es, es);
                        }
                    })? {
                        return Ok(());
                    }
                    self.modify_chunk(m, &m.key(coords), false, |buf| {
                        for &(s, d) in pts {
                            let (s, d) = (s as usize * es, d as usize * es);
                            buf[s..s + es].copy_from_slice(&data[d..d + es]);
                        }
                        Ok(())
                    })
                })
            }
        }
    }

    /// Writes members `fields` of the elements of `sel` of the dataset
    /// `id` (a compound of fixed size) from the whole elements in `data`
    /// (the bytes of its other members are not looked at). The other
    /// members keep what they hold (and, in a columnar chunk, their nulls);
    /// each chunk is edited under a conditional put, so writers of other
    /// members of the same elements lose nothing.
    ///
    /// # Errors
    /// As [`Domain::write`]; a name that is no member, or named twice.
    pub fn write_fields(
        &self,
        id: &str,
        sel: &Selection,
        fields: &[String],
        data: &[u8],
    ) -> Result<()> {
        self.write_guarded(id, || self.write_fields_within(id, sel, fields, data))
    }

    fn write_fields_within(
        &self,
        id: &str,
        sel: &Selection,
        fields: &[String],
        data: &[u8],
    ) -> Result<()> {
        self.check_writable()?;
        let m = self.dataset(id)?;
        m.check_data_writable()?;
        let sel = &*Self::normalize(&m, sel);
        if m.dtype.fixed_size().is_none() {
            return Err(EngineError::WrongType(
                "members of variable-length elements are written with the whole elements".into(),
            ));
        }
        let proj = Projection::new(&m.dtype, Some(fields))?;
        Self::check_selection(&m, sel, data.len())?;
        // (Each member from where it lies in the elements given.)
        let pieces: Vec<(usize, usize, usize)> = proj
            .pieces
            .iter()
            .map(|&(at, len, _)| (at, len, at))
            .collect();
        let (es, ps) = (m.elem_size(), m.elem_size());
        // Element `s` of a chunk from element `d` of `data`, member by member.
        let put = |buf: &mut [u8], s: usize, d: usize| {
            for &(at, len, from) in &pieces {
                let (s, d) = (s * es + at, d * ps + from);
                buf[s..s + len].copy_from_slice(&data[d..d + len]);
            }
        };
        let inline = m.is_small_io(data.len());
        match sel {
            Selection::Orthogonal(sels) => {
                let plan = OrthoPlan::new(sels, &m.chunk);
                let cs = strides(&m.chunk);
                let os = strides(&sel.out_shape());
                for_each_task(plan.num_chunks(), inline, |i| {
                    let parts = plan.chunk(i);
                    let coords: Vec<u64> = parts.iter().map(|p| p.chunk).collect();
                    let key = m.key(&coords);
                    if self.patch_chunk(&m, &key, data, |run| {
                        walk(&parts, &cs, &os, &mut |s, d, n| {
                            for j in 0..n as usize {
                                let (s, d) = (s as usize + j, d as usize + j);
                                for &(at, len, from) in &pieces {
                                    run((s * es + at) as u64, d * ps + from, len);
                                }
                            }
                        });
                    })? {
                        return Ok(());
                    }
                    self.modify_chunk(&m, &key, false, |buf| {
                        walk(&parts, &cs, &os, &mut |s, d, n| {
                            for j in 0..n as usize {
                                put(buf, s as usize + j, d as usize + j);
                            }
                        });
                        Ok(())
                    })
                })
            }
            Selection::Points { .. } => {
                let groups = plan_points(sel, &m.chunk);
                for_each_task(groups.len(), inline, |g| {
                    let (coords, pts) = groups.group(g);
                    let key = m.key(coords);
                    if self.patch_chunk(&m, &key, data, |run| {
                        for &(s, d) in pts {
                            for &(at, len, from) in &pieces {
                                run(s * es as u64 + at as u64, d as usize * ps + from, len);
                            }
                        }
                    })? {
                        return Ok(());
                    }
                    self.modify_chunk(&m, &key, false, |buf| {
                        for &(s, d) in pts {
                            put(buf, s as usize, d as usize);
                        }
                        Ok(())
                    })
                })
            }
        }
    }

    /// After a 1-D columnar table grew from `old` rows: its chunk that
    /// was the last, stored with only the rows it had (so that other tools
    /// read the table's rows and no padding), is stored again with the
    /// rows it holds now (the new ones as the fill value), so that DuckDB
    /// and the like see every row h5lake reads.
    fn pad_last_rows(&self, m: &DatasetMeta, old: &[u64]) -> Result<()> {
        let (&[old], &[chunk]) = (old, &m.chunk[..]) else {
            return Ok(());
        };
        if !m.is_columnar() || old % chunk == 0 {
            return Ok(());
        }
        let key = m.key(&[old / chunk]);
        if !self.store().exists(&key)? {
            return Ok(());
        }
        if m.dtype.fixed_size().is_some() {
            self.modify_chunk(m, &key, false, |_| Ok(()))
        } else {
            self.modify_vlen_chunk(m, &key, None, |_| {})
        }
    }

    /// Reads variable-length elements of an orthogonal selection, C order.
    ///
    /// # Errors
    /// Not a variable-length dataset; bad selection; corrupt chunks.
    pub fn read_vlen(&self, id: &str, sel: &Selection) -> Result<Vec<Vec<u8>>> {
        self.read_vlen_within(id, sel, usize::MAX)
    }

    /// [`Domain::read_vlen`], given up as soon as the elements read hold
    /// more than `limit` bytes (a server answering within its memory).
    ///
    /// # Errors
    /// As [`Domain::read_vlen`]; [`EngineError::TooLarge`] past `limit`.
    pub fn read_vlen_within(
        &self,
        id: &str,
        sel: &Selection,
        limit: usize,
    ) -> Result<Vec<Vec<u8>>> {
        let held = std::sync::atomic::AtomicUsize::new(0);
        let m = self.dataset_meta(id)?;
        let sel = &*Self::normalize(&m, sel);
        if !m.dtype.is_variable() {
            return Err(EngineError::WrongType(
                "read_vlen needs a variable-length dataset".into(),
            ));
        }
        Self::check_selection(&m, sel, 0)?;
        if let Some(vm) = &m.virtual_map {
            return self.read_virtual_vlen(&m, vm, sel, limit);
        }
        let n = sel.num_elements() as usize;
        let tasks = vlen_tasks(&m, sel);
        let out = std::sync::Mutex::new(vec![Vec::new(); n]);
        self.chunk_tasks(
            &m,
            tasks.len(),
            false,
            |i| m.key(&tasks[i].0),
            |i, fetched| {
                let (coords, pairs) = &tasks[i];
                let key = m.key(coords);
                let chunk = match fetched {
                    Some(Some(stored)) => Some(self.decode_fetched(&m, &key, stored, true)?),
                    Some(None) if m.link.is_none() => {
                        self.cache.remove(&key);
                        None
                    }
                    _ => self.load_chunk(&m, &key, true)?,
                };
                let elems = match chunk {
                    Some(c) => parse_vlen_chunk(&c, &m)?,
                    None => vec![m.fill.clone(); m.chunk_elems()],
                };
                let bytes: usize = pairs.iter().map(|&(s, _)| elems[s as usize].len()).sum();
                let total = held.fetch_add(bytes, std::sync::atomic::Ordering::Relaxed) + bytes;
                if total > limit {
                    return Err(EngineError::TooLarge(format!(
                        "these variable-length elements hold more than {limit} bytes; read \
                         them in parts"
                    )));
                }
                let mut out = out.lock().unwrap_or_else(|e| e.into_inner());
                for &(s, d) in pairs {
                    out[d as usize] = elems[s as usize].clone();
                }
                Ok(())
            },
        )?;
        Ok(out.into_inner().unwrap_or_else(|e| e.into_inner()))
    }

    /// Writes variable-length elements to an orthogonal or point selection.
    ///
    /// # Errors
    /// Not a variable-length dataset; count mismatch; read-only domain.
    pub fn write_vlen(&self, id: &str, sel: &Selection, values: &[Vec<u8>]) -> Result<()> {
        self.write_vlen_members(id, sel, values, None)
    }

    /// [`Domain::write_vlen`] of elements whose members `members` (of a
    /// compound; `None`: not known) are what the caller means to write.
    /// In a columnar table a null member is written (no longer null) where
    /// it is named, whatever its value, and stays null where it is not;
    /// not known, a member whose bytes did not change is taken as not
    /// written (the caller may have read it, as its fill value, and
    /// written it back).
    ///
    /// # Errors
    /// As [`Domain::write_vlen`]; a member name the type does not have.
    pub fn write_vlen_members(
        &self,
        id: &str,
        sel: &Selection,
        values: &[Vec<u8>],
        members: Option<&[String]>,
    ) -> Result<()> {
        self.write_guarded(id, || self.write_vlen_within(id, sel, values, members))
    }

    fn write_vlen_within(
        &self,
        id: &str,
        sel: &Selection,
        values: &[Vec<u8>],
        members: Option<&[String]>,
    ) -> Result<()> {
        self.check_writable()?;
        let m = self.dataset_meta(id)?;
        if m.virtual_map.is_none() {
            m.check_data_writable()?;
        }
        let sel = &*Self::normalize(&m, sel);
        if !m.dtype.is_variable() {
            return Err(EngineError::WrongType(
                "write_vlen needs a variable-length dataset".into(),
            ));
        }
        Self::check_selection(&m, sel, 0)?;
        if values.len() as u64 != sel.num_elements() {
            return Err(EngineError::Invalid(format!(
                "{} values for a selection of {} elements",
                values.len(),
                sel.num_elements()
            )));
        }
        let given: Option<Vec<usize>> = match (members, &m.dtype) {
            (None, _) => None,
            (Some(names), Datatype::Compound { fields, .. }) => Some(
                names
                    .iter()
                    .map(|n| {
                        fields.iter().position(|f| &f.name == n).ok_or_else(|| {
                            EngineError::Invalid(format!("{id} has no member {n:?}"))
                        })
                    })
                    .collect::<Result<_>>()?,
            ),
            (Some(_), _) => None,
        };
        if let Some(vm) = &m.virtual_map {
            return self.write_virtual_vlen(&m, vm, sel, values);
        }
        let tasks = vlen_tasks(&m, sel);
        for_each_task(tasks.len(), false, |t| -> Result<()> {
            let (coords, pairs) = &tasks[t];
            self.modify_vlen_chunk(&m, &m.key(coords), given.as_deref(), |elems| {
                for &(s, d) in pairs {
                    elems[s as usize] = values[d as usize].clone();
                }
            })
        })
    }

    /// Changes elements of the variable-length chunk at `key` (a chunk
    /// never written starts as fill values), stored back only if no other
    /// writer changed it meanwhile (else again, on what that writer left).
    fn modify_vlen_chunk(
        &self,
        m: &DatasetMeta,
        key: &str,
        given: Option<&[usize]>,
        apply: impl Fn(&mut Vec<Vec<u8>>),
    ) -> Result<()> {
        let store = self.store();
        for attempt in 0u32.. {
            let cur = store.get_versioned(key)?;
            let nulls = match &cur {
                Some(v) => m.codec.nulls(&v.data).map_err(m.naming_chunk(key))?,
                None => None,
            };
            let mut elems = match &cur {
                Some(v) => {
                    parse_vlen_chunk(&m.decode(v.data.clone()).map_err(m.naming_chunk(key))?, m)?
                }
                None => vec![m.fill.clone(); m.chunk_elems()],
            };
            let before = nulls.is_some().then(|| elems.clone());
            apply(&mut elems);
            let live = self.live_now(m, key)?;
            let joined = h5lake_types::record::join_elements(&m.dtype, &elems);
            if joined.len() as u128 > MAX_VLEN_CHUNK_BYTES {
                return Err(EngineError::TooLarge(format!(
                    "this write would make a chunk of {} bytes of variable-length values, \
                     more than the {} one chunk may hold; use smaller chunks",
                    joined.len(),
                    MAX_VLEN_CHUNK_BYTES
                )));
            }
            let enc = match (nulls, before) {
                (Some(mut nulls), Some(before)) => {
                    // Elements are written whole (variable-length ones
                    // cannot be written by member). In an element written,
                    // a member the caller names is written; not named, it
                    // stays null; when the caller did not say, a member
                    // holds a value now where its bytes changed, and one
                    // left as it was (a null read as its fill value and
                    // written back) stays null. (What was written is found
                    // as in `untouched_nulls`.)
                    let mut empty = vec![Vec::new(); elems.len()];
                    apply(&mut empty);
                    let mut marked = vec![vec![0u8]; elems.len()];
                    apply(&mut marked);
                    for site in &mut nulls {
                        for (row, null) in site.rows.iter_mut().enumerate() {
                            let Some(p) = site_place(&m.dtype, &site.path, row) else {
                                continue;
                            };
                            let i = p.elem;
                            let written = empty.get(i).is_some_and(|e| Some(e) == marked.get(i));
                            if *null && written {
                                let bytes = |rec: &[u8]| {
                                    let b = member_bytes(&m.dtype, rec, p.member)?;
                                    b.get(p.offset..p.size.map_or(b.len(), |n| p.offset + n))
                                        .map(<[u8]>::to_vec)
                                };
                                *null = match given {
                                    Some(given) => !given.contains(&p.member),
                                    None => bytes(&before[i]) == bytes(&elems[i]),
                                };
                            }
                        }
                    }
                    nulls.retain(|site| site.rows.contains(&true));
                    m.codec.encode_with_nulls(joined.into(), live, &nulls)?
                }
                _ => m.codec.encode(joined.into(), live)?,
            };
            let outcome = match &cur {
                Some(v) => store.put_if_version(key, &enc, &v.version)?,
                None => store.put_if_absent(key, &enc)?,
            };
            if matches!(outcome, PutOutcome::Written(_)) {
                self.cache.remove(key);
                break;
            }
            backoff(attempt);
        }
        Ok(())
    }

    /// Grows dimension `dim` by `n` in one conditional update, so that
    /// concurrent appenders (HSDS's `extend`) each get rows of their own:
    /// the new extent is computed from the document the update applies to,
    /// never from an earlier read. Returns the old and the new dims.
    ///
    /// # Errors
    /// As [`Domain::resize`] (growth never needs to reset chunks).
    pub fn extend(&self, id: &str, dim: usize, n: u64) -> Result<(Vec<u64>, Vec<u64>)> {
        let m = self.dataset_meta(id)?;
        if m.link.is_some() || !m.chunked {
            return Err(EngineError::WrongType(
                "Only chunked datasets (not linked ones) can be extended".into(),
            ));
        }
        let maxdims = m.shape.maxdims();
        if dim >= maxdims.len() {
            return Err(EngineError::Invalid(format!(
                "cannot extend dimension {dim} of a rank-{} dataset",
                maxdims.len()
            )));
        }
        self.update_keys_in_store(id, &["shape"], |doc| {
            let old = Shape::from_json(&doc["shape"])?.dims();
            let mut new = old.clone();
            new[dim] = new[dim]
                .checked_add(n)
                .filter(|&d| d <= maxdims[dim])
                .ok_or_else(|| {
                    EngineError::Invalid(format!(
                        "Unable to extend dimension {dim} by {n}: the maximal size is {}",
                        if maxdims[dim] == UNLIMITED {
                            "unlimited".to_string()
                        } else {
                            maxdims[dim].to_string()
                        }
                    ))
                })?;
            doc["shape"]["dims"] = json!(new);
            Ok((old, new))
        })
    }

    /// Changes the extent of a chunked dataset. Chunks wholly outside the new
    /// extent are deleted and partial edge chunks are reset to the fill value
    /// beyond it, so that growing again shows fill values as HDF5 does.
    ///
    /// # Errors
    /// [`EngineError::WrongType`] for non-chunked datasets; rank mismatch or
    /// beyond maxdims ([`EngineError::Invalid`]).
    pub fn resize(&self, id: &str, new_dims: &[u64]) -> Result<()> {
        let m = self.dataset_meta(id)?;
        if m.link.is_some() {
            return Err(EngineError::WrongType(
                "a dataset linked to chunks of another file cannot be resized".into(),
            ));
        }
        if !m.chunked {
            return Err(EngineError::WrongType(
                "Only chunked datasets can be resized".into(),
            ));
        }
        if new_dims.len() != m.dims.len() {
            return Err(EngineError::Invalid(format!(
                "new shape {new_dims:?} must have the dataset's rank {}",
                m.dims.len()
            )));
        }
        let maxdims = m.shape.maxdims();
        if new_dims.iter().zip(&maxdims).any(|(n, mx)| n > mx) {
            return Err(EngineError::Invalid(format!(
                "Unable to set extent of dataset (dimension cannot exceed the existing maximal size (new: {new_dims:?} max: {:?}))",
                maxdims.iter().map(|&d| if d == UNLIMITED { -1i128 } else { i128::from(d) }).collect::<Vec<_>>()
            )));
        }
        let old = self.update_keys(id, &["shape"], |doc| {
            let shape = Shape::from_json(&doc["shape"])?;
            if doc["shape"].get("maxdims").is_none() {
                // A shape without its own maximum has its extent as the
                // maximum: kept so when the extent shrinks (HDF5's maximum
                // stays; the dataset could no longer grow back).
                doc["shape"]["maxdims"] = json!(shape.maxdims());
            }
            doc["shape"]["dims"] = json!(new_dims);
            Ok(shape.dims())
        })?;
        if new_dims.iter().zip(&old).all(|(n, o)| n >= o) {
            return self.pad_last_rows(
                &DatasetMeta {
                    dims: new_dims.to_vec(),
                    ..m
                },
                &old,
            );
        }
        self.clear_outside(&DatasetMeta {
            dims: new_dims.to_vec(),
            ..m
        })
    }

    /// Deletes the chunk objects of `m` that lie outside its extent
    /// (`m.dims`), and sets the elements outside it of those it cuts to
    /// the fill value.
    fn clear_outside(&self, m: &DatasetMeta) -> Result<()> {
        let dims = &m.dims[..];
        let store = self.store();
        let (keys, _) = store.list_dir(&m.prefix)?;
        for_each_task(keys.len(), false, |k| -> Result<()> {
            let key = &keys[k];
            let Some(coords) = chunk_coords_of(m, key) else {
                return Ok(());
            };
            let lo: Vec<u64> = coords.iter().zip(&m.chunk).map(|(c, k)| c * k).collect();
            if lo.iter().zip(dims).any(|(l, n)| l >= n) {
                store.delete(key)?;
                self.cache.remove(key);
                return Ok(());
            }
            let cut = lo
                .iter()
                .zip(&m.chunk)
                .zip(dims)
                .any(|((l, k), n)| l + k > *n);
            if !cut {
                return Ok(());
            }
            // Reset the part of this chunk that fell outside the extent.
            let cs = strides(&m.chunk);
            let outside =
                |e: u64| (0..m.dims.len()).any(|d| lo[d] + (e / cs[d]) % m.chunk[d] >= dims[d]);
            if m.dtype.is_variable() {
                // (A 1-D columnar chunk is stored again holding just the
                // rows left in the extent: what other tools read of it.)
                return self.modify_vlen_chunk(m, key, None, |elems| {
                    for (e, v) in elems.iter_mut().enumerate() {
                        if outside(e as u64) {
                            v.clone_from(&m.fill);
                        }
                    }
                });
            }
            let es = m.elem_size();
            self.modify_chunk(m, key, false, |buf| {
                for e in 0..m.chunk_elems() as u64 {
                    if outside(e) {
                        let s = e as usize * es;
                        buf[s..s + es].copy_from_slice(&m.fill);
                    }
                }
                Ok(())
            })
        })
    }

    /// Creates a chunk that must not exist yet, from its decoded bytes (full
    /// chunk shape, C order; `encode`) or from bytes already in the
    /// dataset's chunk format, stored as given. A create-if-absent write
    /// needs no lock against conditional writers, so this is the cheapest
    /// write there is: what bulk loads into a fresh store use.
    ///
    /// # Errors
    /// [`EngineError::AlreadyExists`] if the chunk exists; a wrong length or
    /// coordinates; read-only domain; I/O trouble.
    pub fn create_chunk(
        &self,
        m: &DatasetMeta,
        coords: &[u64],
        bytes: Vec<u8>,
        encode: bool,
    ) -> Result<()> {
        self.check_writable()?;
        if encode {
            m.check_decoded_len(bytes.len())?;
        }
        if coords.len() != m.chunk.len() {
            return Err(EngineError::Invalid(format!(
                "chunk coordinates {coords:?} do not match the rank {}",
                m.chunk.len()
            )));
        }
        let key = m.key(coords);
        let rec = if encode {
            self.prepare_stats(m, coords, &bytes)
        } else {
            None
        };
        let stored = if encode {
            m.encode(bytes, &key)?
        } else {
            bytes
        };
        match self.store().put_if_absent(&key, &stored)? {
            PutOutcome::Written(v) => self.store_stats(m, coords, rec, &v),
            PutOutcome::Conflict => Err(EngineError::AlreadyExists(format!(
                "chunk {key} already exists"
            ))),
        }
    }

    /// The coordinates of the dataset's stored chunk objects, in order
    /// (a listing only: no object's size is asked for).
    ///
    /// # Errors
    /// I/O trouble.
    pub(crate) fn stored_chunk_coords(&self, m: &DatasetMeta) -> Result<Vec<Vec<u64>>> {
        let mut out: Vec<Vec<u64>> = self
            .store()
            .list_prefix(&m.prefix)?
            .iter()
            .filter_map(|k| chunk_coords_of(m, k))
            .collect();
        out.sort_unstable();
        Ok(out)
    }

    /// The chunks a dataset holds as objects of their own: chunk
    /// coordinates (in chunks, C order) and stored bytes. Chunks never
    /// written, and link-mode chunks still in their source file, are not
    /// among them.
    ///
    /// # Errors
    /// Unknown dataset; I/O trouble.
    pub fn stored_chunks(&self, id: &str) -> Result<Vec<(Vec<u64>, u64)>> {
        let m = self.dataset_meta(id)?;
        let mut out: Vec<(Vec<u64>, u64)> = self
            .store()
            .list_sizes(&m.prefix)?
            .into_iter()
            .filter_map(|(k, size)| Some((chunk_coords_of(&m, &k)?, size)))
            .collect();
        out.sort_unstable();
        Ok(out)
    }

    /// The chunk at chunk coordinates `coords` as HDF5's filters make it,
    /// what HDF5's direct chunk read gives: the chunk object itself when it
    /// is kept in libhdf5's layout, else re-filtered (`None`: never
    /// written).
    ///
    /// # Errors
    /// A dataset whose chunks are not HDF5's filtered bytes in objects of
    /// their own (linked to another file's chunks, or columnar: Parquet
    /// objects), or not chunked; wrong coordinates; I/O trouble.
    pub fn stored_chunk(&self, id: &str, coords: &[u64]) -> Result<Option<bytes::Bytes>> {
        let m = self.dataset(id)?;
        check_own_chunks(&m, "read a raw chunk")?;
        if coords.len() != m.chunk.len() {
            return Err(EngineError::Invalid(format!(
                "chunk coordinates {coords:?} do not match the rank {}",
                m.chunk.len()
            )));
        }
        let Some(stored) = self.store().get(&m.key(coords))? else {
            return Ok(None);
        };
        let raw_len = (m.dtype.fixed_size().is_some()).then(|| m.chunk_elems() * m.elem_size());
        Ok(Some(m.codec.hdf5_bytes(stored, raw_len)?))
    }

    /// Writes the chunk at `coords` from `filtered`, its bytes as HDF5's
    /// filter pipeline makes them (HDF5's direct chunk write, all filters
    /// applied): decoded to check them and to keep the chunk's
    /// statistics, then stored as the dataset stores its chunks.
    ///
    /// # Errors
    /// A chunk outside the dataset, bytes that are not such a chunk, a
    /// dataset whose chunks are not its own or not filtered HDF5's way.
    pub fn write_hdf5_chunk(&self, id: &str, coords: &[u64], filtered: &[u8]) -> Result<()> {
        self.check_writable()?;
        let m = self.dataset(id)?;
        check_own_chunks(&m, "write a raw chunk")?;
        if m.virtual_map.is_some() {
            return Err(EngineError::WrongType(
                "a virtual dataset has no chunks of its own to write".into(),
            ));
        }
        m.check_data_writable()?;
        if m.dtype.fixed_size().is_none() {
            // (libhdf5's chunk of such values holds addresses in its file's
            // heap, which mean nothing here.)
            return Err(EngineError::WrongType(
                "cannot write a raw chunk of variable-length values: write the values".into(),
            ));
        }
        let inside = coords.len() == m.chunk.len()
            && coords
                .iter()
                .zip(&m.chunk)
                .zip(&m.dims)
                .all(|((&c, &n), &d)| c.checked_mul(n).is_some_and(|at| at < d));
        if !inside {
            return Err(EngineError::Invalid(format!(
                "chunk {coords:?} is not a chunk of the dataset's extent {:?}",
                m.dims
            )));
        }
        let raw = m
            .codec
            .decode_hdf5_bytes(filtered, m.chunk_elems() * m.elem_size())?;
        m.check_decoded_len(raw.len())?;
        let key = m.key(coords);
        let rec = self.prepare_stats(&m, coords, &raw);
        let v = self.store().put(&key, &m.encode(&raw[..], &key)?)?;
        self.cache.remove(&key);
        self.store_stats(&m, coords, rec, &v)
    }

    /// Where each stored chunk object of a dataset is — a local path or an
    /// `s3://` URL — in the order of the chunks' coordinates. For a
    /// columnar dataset these are Parquet files other tools read directly;
    /// for one linked to Parquet files, those files (as they were linked).
    ///
    /// # Errors
    /// Unknown dataset; I/O trouble.
    pub fn chunk_objects(&self, id: &str) -> Result<Vec<String>> {
        // Other programs read these objects from the store: pending ones
        // must be there.
        self.flush()?;
        let m = self.dataset_meta(id)?;
        if let Some(source) = m.link.as_ref().and_then(|l| l.parquet_source()) {
            return Ok(source.uris().map(str::to_string).collect());
        }
        let base = self.store().location();
        let sep = if base.ends_with('/') { "" } else { "/" };
        let mut keys: Vec<(Vec<u64>, String)> = self
            .store()
            .list_prefix(&m.prefix)?
            .into_iter()
            .filter_map(|k| {
                let coords = chunk_coords_of(&m, &k)?;
                Some((coords, k))
            })
            .collect();
        keys.sort_unstable();
        Ok(keys
            .into_iter()
            .map(|(_, k)| format!("{base}{sep}{k}"))
            .collect())
    }

    /// Number of stored chunks of a dataset.
    ///
    /// # Errors
    /// Unknown dataset; I/O trouble.
    pub fn chunk_count(&self, id: &str) -> Result<usize> {
        let m = self.dataset_meta(id)?;
        let (keys, _) = self.store().list_dir(&m.prefix)?;
        Ok(keys
            .iter()
            .filter(|k| chunk_coords_of(&m, k).is_some())
            .count())
    }
}

impl Domain {
    /// Most bytes a read (or, `writing`, a write) reaching `chunks` chunks
    /// of `m` holds at once beyond the caller's buffer and the chunk cache:
    /// the chunks the pool's threads and the calling thread work on at
    /// once, each in its decoded form, and in its stored form too when it
    /// is filtered or lives in a linked file; a write also holds a chunk
    /// merged and encoded again. Unfiltered chunks a read takes whole
    /// (`whole_chunks`: the selection covers every chunk it reaches) go
    /// straight into the caller's buffer. On stores read in batches (S3),
    /// the batch being decoded and the one fetched ahead are held too. A
    /// server reserves this from its memory budget before it reads.
    pub fn chunk_work_bytes(
        &self,
        m: &DatasetMeta,
        chunks: u64,
        writing: bool,
        whole_chunks: bool,
    ) -> usize {
        if chunks == 0 {
            return 0;
        }
        let chunk = m.chunk_elems().saturating_mul(m.elem_size()).max(1);
        let encoded = !m.stored_as_raw() || m.link.is_some();
        let direct = !encoded && !writing && whole_chunks;
        let copies = usize::from(!direct) + usize::from(encoded) + usize::from(writing);
        // (The pool is shared by every request: on machines with many
        // cores one request may have more chunks than this in hand at once,
        // but all requests together never more than the pool's threads.)
        let threads = (chunk_pool().current_num_threads() + 1).min(MAX_CHUNKS_AT_ONCE);
        let at_once = usize::try_from(chunks).unwrap_or(usize::MAX).min(threads);
        let mut bytes = chunk.saturating_mul(copies).saturating_mul(at_once);
        if chunks > 1 && self.store().prefers_batching() {
            let per_batch = (FETCH_BATCH_BYTES / chunk).clamp(1, FETCH_BATCH_CHUNKS);
            let batch = usize::try_from(chunks).unwrap_or(usize::MAX).min(per_batch);
            bytes = bytes.saturating_add(chunk.saturating_mul(batch).saturating_mul(2));
        }
        bytes
    }
}

impl Domain {
    /// The decoded chunk at `key` (`None` = never written: fill value),
    /// from the cache when the store confirms the cached version is current.
    fn load_chunk(&self, m: &DatasetMeta, key: &str, use_cache: bool) -> Result<Option<Bytes>> {
        Ok(self
            .load_chunk_versioned(m, key, use_cache)?
            .map(|(_, d)| d))
    }

    /// The chunk at `key` to edit: its version, its decoded bytes and,
    /// of a columnar chunk holding nulls, which rows of each member are
    /// null (an edit keeps those it does not write).
    fn load_for_edit(
        &self,
        m: &DatasetMeta,
        key: &str,
    ) -> Result<Option<(Version, Bytes, Option<h5lake_columnar::Nulls>)>> {
        if !m.is_columnar() || m.link.is_some() || m.dtype.fixed_size().is_none() {
            return Ok(self
                .load_chunk_versioned(m, key, true)?
                .map(|(v, data)| (v, data, None)));
        }
        // (Read from the store, not the cache: the cache holds values,
        // nulls already turned into fill.)
        let Some(stored) = self.store().get_versioned(key)? else {
            return Ok(None);
        };
        let nulls = m.codec.nulls(&stored.data).map_err(m.naming_chunk(key))?;
        let data = m.decode(stored.data).map_err(m.naming_chunk(key))?;
        Ok(Some((stored.version, data, nulls)))
    }

    /// As [`Domain::load_chunk`], with the version read. With `use_cache`
    /// off (a streaming read bigger than the cache) the cache is neither
    /// consulted nor filled, so a big scan does not evict what small reads
    /// keep coming back to.
    pub(crate) fn load_chunk_versioned(
        &self,
        m: &DatasetMeta,
        key: &str,
        use_cache: bool,
    ) -> Result<Option<(Version, Bytes)>> {
        let store = self.store();
        let use_cache = use_cache && self.cache.enabled();
        if use_cache {
            if let Some((v, data)) = self.cache.get(key) {
                let current = store.version(key)?;
                // A linked chunk stays valid until a chunk object replaces it.
                if current.as_ref() == Some(&v) || (current.is_none() && v.0 == LINKED_VERSION) {
                    return Ok(Some((v, data)));
                }
            }
        }
        let Some(stored) = store.get_versioned(key)? else {
            if let Some(data) = self.load_linked(m, key)? {
                let v = Version(LINKED_VERSION.into());
                if use_cache {
                    self.cache.insert(key, v.clone(), data.clone());
                }
                return Ok(Some((v, data)));
            }
            self.cache.remove(key);
            return Ok(None);
        };
        let data = m.decode(stored.data).map_err(m.naming_chunk(key))?;
        if use_cache {
            self.cache.insert(key, stored.version.clone(), data.clone());
        }
        Ok(Some((stored.version, data)))
    }

    /// Runs `f` on the decoded chunk at `key` (the fill chunk if it was never
    /// written). Through the cache when `use_cache`; otherwise a streaming
    /// read into a per-thread buffer that is reused from chunk to chunk, so
    /// a big scan does not fault in fresh pages for every chunk.
    ///
    /// `region` (chunk-local `[lo, hi)` per dimension) bounds the elements
    /// `f` will look at: a linked hyper-chunk then reads and decodes only
    /// the source chunks inside it, and is not cached half-filled.
    fn with_chunk(
        &self,
        m: &DatasetMeta,
        key: &str,
        use_cache: bool,
        fill: &std::sync::OnceLock<Vec<u8>>,
        region: Option<&[(u64, u64)]>,
        f: impl FnOnce(&[u8]),
    ) -> Result<()> {
        if let (Some(link), Some(region)) = (&m.link, region) {
            if link.is_hyper(&m.chunk) && !link.covers_all_subs(&m.chunk, region) {
                if let Some(stored) = self.store().get(key)? {
                    f(&m.decode(stored).map_err(m.naming_chunk(key))?);
                    return Ok(());
                }
                let coords = chunk_coords_of(m, key)
                    .ok_or_else(|| EngineError::Corrupt(format!("bad chunk key {key}")))?;
                thread_local! {
                    static HYPER: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
                }
                // A reused per-thread buffer: only the part inside `region`
                // is written, and only that part is read.
                let mut buf = crate::scratch::take(&HYPER);
                buf.resize(m.chunk_elems() * m.elem_size(), 0);
                let result = self.linked_subchunks(m, link, &coords, Some(region), &mut buf);
                if result.is_ok() {
                    f(&buf);
                }
                crate::scratch::give_back(&HYPER, buf);
                result?;
                return Ok(());
            }
        }
        if let Some(region) = region.filter(|_| m.stored_as_raw() && m.link.is_none()) {
            let (start, len) = region_span(m, region);
            let whole = (m.chunk_elems() * m.elem_size()) as u64;
            // A small part of an unfiltered chunk: read just the bytes that
            // hold it (a 16x16 read of a 1 MiB chunk reads ~60 KB, not 1 MiB).
            if len.saturating_mul(4) <= whole {
                let Some(part) = self.store().get_range(key, start, len)? else {
                    f(fill.get_or_init(|| m.fill_chunk()));
                    return Ok(());
                };
                if part.len() as u64 != len {
                    return Err(EngineError::Corrupt(format!(
                        "{key}: the chunk object is shorter than the dataset's chunk size"
                    )));
                }
                thread_local! {
                    static SPAN: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
                }
                // A chunk-sized per-thread buffer: only the span is filled,
                // and `f` looks only inside `region`, which the span covers.
                let mut buf = crate::scratch::take(&SPAN);
                buf.resize(whole as usize, 0);
                buf[start as usize..(start + len) as usize].copy_from_slice(&part);
                f(&buf);
                crate::scratch::give_back(&SPAN, buf);
                return Ok(());
            }
        }
        if use_cache && self.cache.enabled() {
            match self.load_chunk(m, key, true)? {
                Some(c) => f(&c),
                None => f(fill.get_or_init(|| m.fill_chunk())),
            }
            return Ok(());
        }
        thread_local! {
            static SCRATCH: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
        }
        let mut f = Some(f);
        let mut buf = crate::scratch::take(&SCRATCH);
        let stored = (|| -> Result<bool> {
            if self.store().get_into(key, &mut buf)?.is_none() {
                return Ok(false);
            }
            let f = f.take().expect("called once");
            if m.stored_as_raw() {
                m.check_decoded_len(buf.len())?;
                f(&buf);
            } else {
                f(&m.decode_stored(&buf).map_err(m.naming_chunk(key))?);
            }
            Ok(true)
        })();
        crate::scratch::give_back(&SCRATCH, buf);
        if !stored? {
            // A linked chunk may read its chunk table through this same
            // path, so the scratch buffer is back in its slot first.
            let f = f.take().expect("called once");
            match self.load_linked(m, key)? {
                Some(data) => f(&data),
                None => f(fill.get_or_init(|| m.fill_chunk())),
            }
        }
        Ok(())
    }

    /// Runs `task(i, fetched)` for the chunk tasks `0..n` (task `i` reads
    /// the chunk `key(i)`). Where the store prefers batching (S3: a round
    /// trip per request), the chunks are fetched ahead in batches with many
    /// requests in flight, the next batch while the current one is decoded,
    /// and each task gets its stored chunk as `Some(fetched)`. Elsewhere
    /// `fetched` is `None` and tasks read for themselves, which keeps local
    /// reads on their streaming, zero-copy paths.
    fn chunk_tasks(
        &self,
        m: &DatasetMeta,
        n: usize,
        inline: bool,
        key: impl Fn(usize) -> String + Sync,
        task: impl Fn(usize, Option<Option<Versioned>>) -> Result<()> + Sync + Send,
    ) -> Result<()> {
        let store = self.store();
        // Some columns of columnar chunks: each task reads just their byte
        // ranges (ranged GETs), rather than whole objects fetched ahead.
        let some_columns = m.codec.as_columnar().is_some_and(|c| c.some_columns);
        if n <= 1 || !store.prefers_batching() || some_columns {
            return for_each_task(n, inline, |i| task(i, None));
        }
        // Bounded so that a sparse selection over many big chunks does not
        // hold them all in memory at once.
        let chunk_bytes = (m.chunk_elems() * m.elem_size()).max(1);
        let per = (FETCH_BATCH_BYTES / chunk_bytes).clamp(1, FETCH_BATCH_CHUNKS);
        let batches: Vec<std::ops::Range<usize>> =
            (0..n).step_by(per).map(|s| s..(s + per).min(n)).collect();
        let fetch = |b: &std::ops::Range<usize>| -> Result<Vec<Option<Versioned>>> {
            let keys: Vec<String> = b.clone().map(&key).collect();
            Ok(store.get_many(&keys)?)
        };
        // Pool threads have no cancellation flag or memory gate of their
        // own: carry the caller's in, and also look at the flag between
        // batches.
        let cancel = crate::cancel::current();
        let gate = crate::memory::current();
        let decode_batch = |batch: &std::ops::Range<usize>, fetched: &[Option<Versioned>]| {
            carried(&cancel, &gate, || {
                for_each_task(batch.len(), false, |j| {
                    task(batch.start + j, Some(fetched[j].clone()))
                })
            })
        };
        chunk_pool().install(|| {
            let mut ahead = Some(fetch(&batches[0]));
            for (bi, batch) in batches.iter().enumerate() {
                let fetched = ahead.take().expect("fetched before use")?;
                if crate::cancel::is_set(&cancel) {
                    return Err(EngineError::Interrupted);
                }
                let (next, done) = rayon::join(
                    || batches.get(bi + 1).map(&fetch),
                    || decode_batch(batch, &fetched),
                );
                done?;
                ahead = next;
            }
            Ok(())
        })
    }

    /// [`Domain::with_chunk`] for a task of [`Domain::chunk_tasks`]:
    /// `fetched` is `None` when the task reads for itself, else the chunk's
    /// stored bytes fetched ahead (`Some(None)`: not stored). The cache
    /// still saves the decode when it holds the same version.
    #[allow(clippy::too_many_arguments)]
    fn with_task_chunk(
        &self,
        m: &DatasetMeta,
        key: &str,
        fetched: Option<Option<Versioned>>,
        use_cache: bool,
        fill: &std::sync::OnceLock<Vec<u8>>,
        region: Option<&[(u64, u64)]>,
        f: impl FnOnce(&[u8]),
    ) -> Result<()> {
        let Some(fetched) = fetched else {
            return self.with_chunk(m, key, use_cache, fill, region, f);
        };
        let Some(stored) = fetched else {
            if m.link.is_some() {
                // The linked source may hold it: the general path knows how.
                return self.with_chunk(m, key, use_cache, fill, region, f);
            }
            self.cache.remove(key);
            f(fill.get_or_init(|| m.fill_chunk()));
            return Ok(());
        };
        f(&self.decode_fetched(m, key, stored, use_cache)?);
        Ok(())
    }

    /// The decoded form of fetched chunk bytes: from the cache when it holds
    /// the same version (saving the decode), else decoded (and cached).
    fn decode_fetched(
        &self,
        m: &DatasetMeta,
        key: &str,
        stored: Versioned,
        use_cache: bool,
    ) -> Result<Bytes> {
        let use_cache = use_cache && self.cache.enabled();
        if use_cache {
            if let Some((v, data)) = self.cache.get(key) {
                if v == stored.version {
                    return Ok(data);
                }
            }
        }
        let data = m.decode(stored.data).map_err(m.naming_chunk(key))?;
        if use_cache {
            self.cache.insert(key, stored.version, data.clone());
        }
        Ok(data)
    }

    /// Decodes the columnar chunk at `key` (`fetched` as for
    /// [`Domain::with_task_chunk`]) reading only the columns of `m.dtype`'s
    /// members: into `into` (the whole chunk's place in the caller's
    /// buffer) when given, else into a per-thread buffer `f` is run on.
    /// `Ok(false)` when no chunk object is stored (nothing called).
    pub(crate) fn with_columnar_chunk(
        &self,
        m: &DatasetMeta,
        key: &str,
        fetched: Option<&Option<Versioned>>,
        into: Option<&mut [u8]>,
        f: impl FnOnce(&[u8]),
    ) -> Result<bool> {
        let n = m.chunk_elems();
        let decode = |dst: &mut [u8]| -> Result<bool> {
            match fetched {
                Some(None) => Ok(false),
                Some(Some(v)) => {
                    let footer = h5lake_columnar::Footer::of_whole(&v.data)?;
                    let parts = h5lake_columnar::Parts::whole(v.data.clone());
                    footer.decode_into(&m.dtype, &parts, n, &m.fill, dst)?;
                    Ok(true)
                }
                None => self.read_columnar_into(m, key, dst),
            }
        };
        decode_in_place(m, into, f, decode).map_err(m.naming_chunk(key))
    }

    /// Reads the stored columnar chunk at `key` into `dst`: its footer,
    /// then the byte ranges of the columns of `m.dtype`'s members, all of
    /// one version of the object (read again when it is replaced in
    /// between). `Ok(false)`: not stored.
    fn read_columnar_into(&self, m: &DatasetMeta, key: &str, dst: &mut [u8]) -> Result<bool> {
        self.read_columnar_rows_into(m, key, None, dst)
    }

    /// As [`Domain::read_columnar_into`], of the chunk's elements `rows`
    /// only (C order; `dst` holds exactly those) when given: of each
    /// member copied page by page, only the pages holding them are read.
    fn read_columnar_rows_into(
        &self,
        m: &DatasetMeta,
        key: &str,
        rows: Option<std::ops::Range<usize>>,
        dst: &mut [u8],
    ) -> Result<bool> {
        use h5lake_columnar::{Footer, FooterRead, Parts, TAIL_BYTES};
        let store = self.store();
        let mut attempts = 0;
        loop {
            let mut read = || -> Result<bool> {
                let Some(obj) = store.open_object(key, TAIL_BYTES)? else {
                    return Ok(false);
                };
                let (len, tail) = (obj.len(), obj.tail().clone());
                let footer = match Footer::from_tail(len, &tail)? {
                    FooterRead::Parsed(f) => f,
                    FooterRead::Need(r) => Footer::parse(len, &obj.read_ranges(&[r])?[0])?,
                };
                let tail_at = len - tail.len() as u64;
                let ranges = match &rows {
                    Some(rows) => {
                        let known = Parts::new(len, vec![(tail_at, tail.clone())]);
                        footer.ranges_for_rows(&m.dtype, &known, rows.clone())?
                    }
                    None => footer.ranges(&m.dtype)?,
                };
                // What the tail already holds is not read again.
                let wanted: Vec<_> = ranges.into_iter().filter(|r| r.start < tail_at).collect();
                let mut parts: Vec<(u64, bytes::Bytes)> = Vec::with_capacity(wanted.len() + 1);
                if let Some(mapped) = obj.map_ranges(&wanted)? {
                    // In place, no copy out of the page cache.
                    parts.extend(wanted.iter().map(|r| r.start).zip(mapped));
                } else {
                    let mut buf = crate::pooled::PooledBuf::kept();
                    obj.read_ranges_into(&wanted, &mut buf.0)?;
                    let whole = bytes::Bytes::from_owner(buf);
                    let mut at = 0;
                    for r in &wanted {
                        let n = (r.end - r.start) as usize;
                        parts.push((r.start, whole.slice(at..at + n)));
                        at += n;
                    }
                }
                parts.push((tail_at, tail));
                let parts = Parts::new(len, parts);
                match &rows {
                    Some(rows) => {
                        footer.decode_rows_into(&m.dtype, &parts, rows.clone(), &m.fill, dst)?
                    }
                    None => footer.decode_into(&m.dtype, &parts, m.chunk_elems(), &m.fill, dst)?,
                }
                Ok(true)
            };
            match read() {
                Err(EngineError::Store(h5lake_store::StoreError::Changed(_))) if attempts < 8 => {
                    attempts += 1;
                }
                r => return r,
            }
        }
    }

    /// Reads a wholly selected, unfiltered chunk with one scattered read
    /// straight into the output (the kernel copies each row to its place:
    /// no intermediate buffer, no second copy); a chunk of a linked dataset
    /// not rewritten in the store is read so from the linked file.
    /// `Ok(false)` when the chunk is missing, not of the expected size or
    /// not plainly in its file: the caller takes the normal path, which
    /// fills or reports it.
    ///
    /// # Safety
    /// `out` must be valid for every output element of `parts`, and no other
    /// thread may write those elements.
    unsafe fn read_chunk_direct(
        &self,
        m: &DatasetMeta,
        key: &str,
        parts: &[&DimPart],
        cs: &[u64],
        os: &[u64],
        out: OutPtr,
    ) -> Result<bool> {
        let es = m.elem_size();
        let mut runs: Vec<(u64, &mut [u8])> = Vec::new();
        let mut next = 0u64;
        let mut in_order = true;
        walk(parts, cs, os, &mut |s, d, n| {
            let off = s * es as u64;
            in_order &= off == next;
            next = off + n * es as u64;
            runs.push((
                off,
                std::slice::from_raw_parts_mut(out.at(d as usize * es), n as usize * es),
            ));
        });
        let total = (m.chunk_elems() * es) as u64;
        if !in_order || next != total {
            return Ok(false);
        }
        match (self.store().get_scattered(key, total, &mut runs)?, &m.link) {
            (Some(done), _) => Ok(done),
            (None, Some(link)) => {
                let coords = chunk_coords_of(m, key)
                    .ok_or_else(|| EngineError::Corrupt(format!("bad chunk key {key}")))?;
                self.read_linked_into(m, link, &coords, &mut runs)
            }
            (None, None) => Ok(false),
        }
    }

    /// The chunk at `key` from the linked source file, for datasets in link
    /// mode whose chunk has not been written through h5lake.
    fn load_linked(&self, m: &DatasetMeta, key: &str) -> Result<Option<Bytes>> {
        let Some(link) = &m.link else {
            return Ok(None);
        };
        let Some(coords) = chunk_coords_of(m, key) else {
            return Ok(None);
        };
        Ok(self.linked_chunk(m, link, &coords)?.map(Bytes::from))
    }

    /// Whether a read of `chunks` chunks is small enough to go through the cache.
    fn fits_cache(&self, m: &DatasetMeta, chunks: usize) -> bool {
        chunks.saturating_mul(m.chunk_elems() * m.elem_size().max(1)) <= self.cache.budget() / 2
    }

    /// Writes a small edit of a stored, unfiltered chunk where the chunk
    /// lies, on stores that can (local directories), rather than rewriting
    /// the whole chunk: a 16x16 write into a 1 MiB chunk then costs ~1 KB
    /// of I/O, not 2 MiB. `runs` hands each run of the edit to its
    /// argument as (offset in the chunk, offset in `data`, length), in
    /// bytes. `false`: nothing was written (a filtered or absent chunk, a
    /// big or scattered edit, a store that replaces whole objects); the
    /// caller rewrites the chunk.
    fn patch_chunk(
        &self,
        m: &DatasetMeta,
        key: &str,
        data: &[u8],
        runs: impl FnOnce(&mut dyn FnMut(u64, usize, usize)),
    ) -> Result<bool> {
        if !m.stored_as_raw() {
            return Ok(false);
        }
        let whole = (m.chunk_elems() * m.elem_size()) as u64;
        // (chunk offset, data range); runs that continue each other in the
        // chunk and in `data` are one edit.
        let mut merged: Vec<(u64, std::ops::Range<usize>)> = Vec::new();
        runs(&mut |at, from, n| match merged.last_mut() {
            Some((o, r)) if *o + r.len() as u64 == at && r.end == from => r.end += n,
            _ => merged.push((at, from..from + n)),
        });
        let bytes: usize = merged.iter().map(|(_, r)| r.len()).sum();
        // Past these, rewriting the chunk is as cheap as the edits.
        if merged.len() > MAX_PATCH_EDITS || (bytes as u64).saturating_mul(4) > whole {
            return Ok(false);
        }
        let edits: Vec<(u64, &[u8])> = merged.into_iter().map(|(o, r)| (o, &data[r])).collect();
        let done = self.store().patch(key, whole, &edits)?.is_some();
        if done {
            self.cache.remove(key);
        }
        Ok(done)
    }

    /// Replaces a chunk (`full`: the caller overwrites every in-extent
    /// element) or read-modify-writes it under a conditional put, retrying on
    /// conflict.
    /// The elements of chunk `key` inside the dataset's extent as stored
    /// now, read after the chunk was loaded for an edit. A columnar chunk
    /// object holds only those rows, and another writer may have grown the
    /// extent and written rows into this chunk since `m` was read: cut at
    /// `m`'s extent, its rows would be lost.
    fn live_now(&self, m: &DatasetMeta, key: &str) -> Result<usize> {
        let live = m.live_elems(key);
        if !m.is_columnar() || live == m.chunk_elems() {
            return Ok(live);
        }
        Ok(self.stored_dataset(&m.id)?.live_elems(key))
    }

    fn modify_chunk(
        &self,
        m: &DatasetMeta,
        key: &str,
        full: bool,
        mut apply: impl FnMut(&mut Vec<u8>) -> Result<()>,
    ) -> Result<()> {
        let store = self.store();
        let coords = key
            .get(m.prefix.len()..)
            .and_then(|k| parse_chunk_name(k, m.dims.len()))
            .unwrap_or_default();
        if full {
            let mut buf = m.fill_chunk();
            apply(&mut buf)?;
            let rec = self.prepare_stats(m, &coords, &buf);
            let v = store.put(key, &m.encode(buf, key)?)?;
            self.cache.remove(key);
            return self.store_stats(m, &coords, rec, &v);
        }
        for attempt in 0u32.. {
            let (cur, mut buf, nulls) = match self.load_for_edit(m, key)? {
                Some((v, data, nulls)) => {
                    // The entry is replaced below; dropping it now usually
                    // leaves these bytes unshared, to be edited in place
                    // rather than copied into a fresh allocation.
                    self.cache.remove(key);
                    let buf = data.try_into_mut().map_or_else(|d| d.to_vec(), Vec::from);
                    (Some(v), buf, nulls)
                }
                None => (None, m.fill_chunk(), None),
            };
            apply(&mut buf)?;
            let mut rec = self.prepare_stats(m, &coords, &buf);
            let live = self.live_now(m, key)?;
            let enc = match nulls {
                Some(old) => {
                    let kept = untouched_nulls(m, old, buf.len(), &mut apply)?;
                    let enc = m.codec.encode_with_nulls(buf.into(), live, &kept)?;
                    // The nulls kept are counted as the object holds them.
                    if let (Some(rec), Some(plan)) = (&mut rec, &m.stats) {
                        let footer = h5lake_columnar::Footer::of_whole(&enc)?;
                        plan.set_nulls(rec, &footer.null_counts(&plan.leaf_names())?);
                    }
                    enc
                }
                None => m.codec.encode(buf.into(), live)?,
            };
            let outcome = match &cur {
                Some(v) if v.0 != LINKED_VERSION => store.put_if_version(key, &enc, v)?,
                // A linked chunk's first write creates its chunk object.
                _ => store.put_if_absent(key, &enc)?,
            };
            match outcome {
                // An unfiltered chunk is stored as it is decoded: the bytes
                // just written are the cache entry for their new version,
                // so the next small write or read of this chunk skips the
                // store read (the version check still guards it).
                PutOutcome::Written(v) if m.stored_as_raw() && self.cache.enabled() => {
                    self.cache.insert(key, v.clone(), Bytes::from(enc));
                    return self.store_stats(m, &coords, rec, &v);
                }
                PutOutcome::Written(v) => {
                    self.cache.remove(key);
                    return self.store_stats(m, &coords, rec, &v);
                }
                PutOutcome::Conflict => self.cache.remove(key),
            }
            backoff(attempt);
        }
        unreachable!("the retry loop only ends by returning")
    }
}

/// Where value `row` of the null site at `path` (see
/// [`h5lake_columnar::NullSite`]) of a chunk of the compound `dtype` lies:
/// the element holding it, and the offset and size of its bytes in that
/// element's top-level member `path[0]` (no size: all of a variable-length
/// member). (`None` for a path that names no member of `dtype`.)
struct SitePlace {
    elem: usize,
    member: usize,
    offset: usize,
    size: Option<usize>,
}

fn site_place(dtype: &Datatype, path: &[usize], row: usize) -> Option<SitePlace> {
    let (&member, rest) = path.split_first()?;
    let Datatype::Compound { fields, .. } = dtype else {
        return None;
    };
    let mut dtype = &fields.get(member)?.dtype;
    // Each level below: its offset in the value above, and for the items
    // of an array how many there are to a value and their size.
    let mut levels: Vec<(usize, usize, usize)> = Vec::with_capacity(rest.len());
    for &k in rest {
        match dtype {
            Datatype::Compound { fields, .. } => {
                let f = fields.get(k)?;
                levels.push((f.offset, 1, 0));
                dtype = &f.dtype;
            }
            Datatype::Complex { part } if k < 2 => {
                levels.push((k * part.fixed_size()?, 1, 0));
                dtype = part;
            }
            Datatype::Array { base, .. } if k == 0 => {
                let item = base.fixed_size()?;
                levels.push((0, dtype.fixed_size()? / item.max(1), item));
                dtype = base;
            }
            _ => return None,
        }
    }
    let size = dtype.fixed_size();
    if size.is_none() && !rest.is_empty() {
        return None;
    }
    let (mut elem, mut offset) = (row, 0);
    for &(at, per, item) in levels.iter().rev() {
        offset += at + (elem % per) * item;
        elem /= per;
    }
    Some(SitePlace {
        elem,
        member,
        offset,
        size,
    })
}

/// The bytes of top-level member `k` of the record `rec` of the compound
/// `dtype` (`None` when it cannot be told: not a compound, or a damaged
/// record).
fn member_bytes<'r>(dtype: &Datatype, rec: &'r [u8], k: usize) -> Option<&'r [u8]> {
    let Datatype::Compound { fields, .. } = dtype else {
        return None;
    };
    let mut pos = 0;
    for f in fields.iter().take(k) {
        pos += h5lake_types::record::record_len(&f.dtype, rec, pos).ok()?;
    }
    let len = h5lake_types::record::record_len(&fields.get(k)?.dtype, rec, pos).ok()?;
    rec.get(pos..pos + len)
}

/// The nulls of a chunk after an edit: those of `old` in the members and
/// elements `apply` does not write. What it writes is found by running it
/// on two chunks of different bytes: a member's bytes it writes come out
/// the same in both, whatever it writes, and those it leaves differ.
fn untouched_nulls(
    m: &DatasetMeta,
    mut old: h5lake_columnar::Nulls,
    len: usize,
    apply: &mut impl FnMut(&mut Vec<u8>) -> Result<()>,
) -> Result<h5lake_columnar::Nulls> {
    let es = m.elem_size();
    let mut zeros = vec![0u8; len];
    apply(&mut zeros)?;
    let mut ones = vec![0xffu8; len];
    apply(&mut ones)?;
    let Datatype::Compound { fields, .. } = &m.dtype else {
        return Ok(old);
    };
    for site in &mut old {
        for (row, null) in site.rows.iter_mut().enumerate() {
            let Some(p) = site_place(&m.dtype, &site.path, row).filter(|_| *null) else {
                continue;
            };
            let at = p.elem * es + fields[p.member].offset + p.offset;
            let end = at + p.size.unwrap_or(0);
            if end <= len && zeros[at..end] == ones[at..end] {
                *null = false;
            }
        }
    }
    old.retain(|site| site.rows.contains(&true));
    Ok(old)
}

/// Most chunks [`Domain::chunk_work_bytes`] counts one request as working
/// on at once.
const MAX_CHUNKS_AT_ONCE: usize = 16;

/// At most this many bytes of (decoded-size) chunks are fetched ahead in
/// one batch from a store that prefers batching...
const FETCH_BATCH_BYTES: usize = 256 << 20;
/// ...and at most this many chunks: enough to keep ~32 requests in flight
/// through a whole batch.
const FETCH_BATCH_CHUNKS: usize = 256;

/// Selections up to this many bytes of unfiltered data are read and written
/// on the calling thread (see `for_each_task`).
const SMALL_IO_BYTES: usize = 256 << 10;

/// Most separate byte runs a chunk edit is written as in place (see
/// `patch_chunk`); more, and the chunk is rewritten whole.
const MAX_PATCH_EDITS: usize = 256;

/// HSDS's layouts of datasets whose chunks lie in a file written elsewhere.
const LINKED_CLASSES: [&str; 3] = [
    "H5D_CONTIGUOUS_REF",
    "H5D_CHUNKED_REF",
    "H5D_CHUNKED_REF_INDIRECT",
];

/// The cache version of a chunk read from a linked file (never a store
/// version: those are `ino-mtime-size` or etags).
pub(crate) const LINKED_VERSION: &str = "linked";

/// Runs `n` independent chunk tasks: in parallel on the chunk pool, or on
/// the calling thread when there is only one, or a few that the caller says
/// are small (`inline`): waking the pool's threads, which then spin a while
/// before they sleep again, costs more than a few small reads or edits.
pub(crate) fn for_each_task(
    n: usize,
    inline: bool,
    f: impl Fn(usize) -> Result<()> + Sync + Send,
) -> Result<()> {
    if n <= 1 || (inline && n <= 4) {
        return (0..n).try_for_each(f);
    }
    let cancel = crate::cancel::current();
    let gate = crate::memory::current();
    let task = |i| {
        if crate::cancel::is_set(&cancel) {
            return Err(EngineError::Interrupted);
        }
        carried(&cancel, &gate, || f(i))
    };
    chunk_pool().install(|| (0..n).into_par_iter().try_for_each(task))
}

/// Runs `f`, work a call handed to a pool thread, with the call's
/// cancellation flag and memory gate (a virtual dataset's sources, read
/// in a task, are stopped by the flag and hold their documents to the
/// gate as the call's own reads do).
fn carried<T>(
    cancel: &Option<Arc<std::sync::atomic::AtomicBool>>,
    gate: &Option<Arc<dyn crate::memory::Gate>>,
    f: impl FnOnce() -> T,
) -> T {
    crate::memory::carried(gate, || crate::cancel::within(cancel.clone(), f))
}

/// The pool that runs chunk tasks. Each task both waits on storage and
/// decodes, so the pool has more threads than cores: while some wait for a
/// read, others decode, and several reads are in flight at once (cold reads
/// on this machine's disk went from ~0.8 to ~1.4 GB/s going from 2 to 8
/// threads). `H5LAKE_THREADS` overrides the size.
///
/// A process forked after the pool started (Python's multiprocessing)
/// inherits the pool without its threads, and work handed to it would wait
/// forever; so each process makes its own, and a child leaks the parent's
/// copy (dropping it would wait for threads that do not exist there).
pub(crate) fn chunk_pool() -> &'static rayon::ThreadPool {
    type Owned = Option<(u32, &'static rayon::ThreadPool)>;
    static POOL: std::sync::Mutex<Owned> = std::sync::Mutex::new(None);
    let pid = std::process::id();
    let mut slot = POOL.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((owner, pool)) = *slot {
        if owner == pid {
            return pool;
        }
    }
    let pool: &'static rayon::ThreadPool = Box::leak(Box::new(new_chunk_pool()));
    *slot = Some((pid, pool));
    pool
}

fn new_chunk_pool() -> rayon::ThreadPool {
    let cores = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(2);
    let threads = std::env::var("H5LAKE_THREADS")
        .ok()
        .and_then(|v| v.parse().ok())
        .filter(|&n: &usize| n > 0)
        .unwrap_or((cores * 4).clamp(8, 64));
    rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .thread_name(|i| format!("h5lake-chunk-{i}"))
        .build()
        .expect("creating the chunk thread pool")
}

/// The chunks a contiguous dataset too big for one chunk object is stored
/// in (about 2 MiB each, halving the longest dimension first); it is still
/// reported as contiguous.
pub fn hidden_chunks(dims: &[u64], esize: u64) -> Vec<u64> {
    let mut c: Vec<u64> = dims.iter().map(|&d| d.max(1)).collect();
    while c.iter().product::<u64>() * esize > HIDDEN_CHUNK_BYTES {
        let (i, _) = c
            .iter()
            .enumerate()
            .max_by_key(|(_, &v)| v)
            .expect("rank >= 1");
        if c[i] == 1 {
            break;
        }
        c[i] = c[i].div_ceil(2);
    }
    c
}

/// The bytes of a chunk (offset, length) from the first to the last element
/// of `region` (chunk-local `[lo, hi)` per dimension) in C order.
fn region_span(m: &DatasetMeta, region: &[(u64, u64)]) -> (u64, u64) {
    let es = m.elem_size() as u64;
    let span = element_span(region, &m.chunk);
    (span.start as u64 * es, span.len() as u64 * es)
}

/// A selection touching at most this share (1/`FEW_ROWS`) of a columnar
/// chunk's elements reads only the pages holding them.
const FEW_ROWS: usize = 4;

/// The chunk-local elements (C order) from the first to the last of a
/// chunk's `region` (per dimension, its `[lo, hi)`; see [`chunk_region`]).
fn element_span(region: &[(u64, u64)], chunk: &[u64]) -> std::ops::Range<usize> {
    let strides = strides(chunk);
    let first: u64 = region.iter().zip(&strides).map(|((lo, _), s)| lo * s).sum();
    let last: u64 = region
        .iter()
        .zip(&strides)
        .map(|((_, hi), s)| hi.saturating_sub(1) * s)
        .sum();
    first as usize..last as usize + 1
}

/// The chunk-local bounding box `[lo, hi)` per dimension of a chunk's part
/// of a selection.
fn chunk_region(parts: &[&DimPart]) -> Vec<(u64, u64)> {
    parts
        .iter()
        .map(|p| {
            let lo = p.runs.iter().map(|r| r.src).min().unwrap_or(0);
            let hi = p
                .runs
                .iter()
                .map(|r| r.src + (r.len.max(1) - 1) * r.step + 1)
                .max()
                .unwrap_or(0);
            (lo, hi)
        })
        .collect()
}

/// The chunk coordinates of the store key `key` when it names one of the
/// dataset's chunk objects.
pub(crate) fn chunk_coords_of(m: &DatasetMeta, key: &str) -> Option<Vec<u64>> {
    parse_chunk_name(key.strip_prefix(m.prefix.as_str())?, m.dims.len())
}

fn parse_chunk_name(name: &str, rank: usize) -> Option<Vec<u64>> {
    let v: Option<Vec<u64>> = name.split('_').map(|p| p.parse().ok()).collect();
    v.filter(|v| v.len() == rank)
}

/// Per chunk, (chunk-local element, output element) pairs of a selection.
/// Chunk coordinates with their (chunk-local element, output element) pairs.
type ChunkPairs = Vec<(Vec<u64>, Vec<(u64, u64)>)>;

fn vlen_tasks(m: &DatasetMeta, sel: &Selection) -> ChunkPairs {
    match sel {
        Selection::Orthogonal(sels) => {
            let plan = OrthoPlan::new(sels, &m.chunk);
            let cs = strides(&m.chunk);
            let os = strides(&sel.out_shape());
            (0..plan.num_chunks())
                .map(|i| {
                    let parts = plan.chunk(i);
                    let mut pairs = Vec::new();
                    walk(&parts, &cs, &os, &mut |s, d, n| {
                        pairs.extend((0..n).map(|k| (s + k, d + k)))
                    });
                    (parts.iter().map(|p| p.chunk).collect(), pairs)
                })
                .collect()
        }
        Selection::Points { .. } => {
            let plan = plan_points(sel, &m.chunk);
            (0..plan.len())
                .map(|g| {
                    let (coords, pairs) = plan.group(g);
                    (coords.to_vec(), pairs.to_vec())
                })
                .collect()
        }
    }
}

/// Splits a decoded variable-length chunk into its elements
/// (`h5lake_types::record::split_elements`); trailing elements a chunk
/// does not hold read as the fill value.
fn parse_vlen_chunk(raw: &[u8], m: &DatasetMeta) -> Result<Vec<Vec<u8>>> {
    let n = m.chunk_elems();
    let mut out = h5lake_types::record::split_elements(&m.dtype, raw, n)
        .map_err(|e| EngineError::Corrupt(format!("variable-length chunk of {}: {e}", m.id)))?;
    out.resize(n, m.fill.clone());
    Ok(out)
}

/// Runs `decode` (which writes a whole chunk of `m` in row layout, or
/// returns `Ok(false)` having written nothing) into `into` (the chunk's
/// place in the caller's buffer) when given, else into a per-thread
/// buffer that `f` is then run on.
fn decode_in_place(
    m: &DatasetMeta,
    into: Option<&mut [u8]>,
    f: impl FnOnce(&[u8]),
    decode: impl FnOnce(&mut [u8]) -> Result<bool>,
) -> Result<bool> {
    if let Some(dst) = into {
        return decode(dst);
    }
    thread_local! {
        static ROWS: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
    }
    // Reused from chunk to chunk: every byte is written by the decode.
    let mut buf = crate::scratch::take(&ROWS);
    buf.resize(m.chunk_elems() * m.elem_size(), 0);
    let decoded = decode(&mut buf);
    if let Ok(true) = decoded {
        f(&buf);
    }
    crate::scratch::give_back(&ROWS, buf);
    decoded
}

/// Refuses a dataset whose chunks are not HDF5's filtered bytes in
/// objects of its own, for `what` (HDF5's chunk queries and direct reads).
pub fn check_own_chunks(m: &DatasetMeta, what: &str) -> Result<()> {
    if m.link.is_some() {
        return Err(EngineError::WrongType(format!(
            "cannot {what}: the dataset's chunks are in the file it is linked to, not in the \
             store (read the data, open that file itself, or `h5lake get` it to an HDF5 file)"
        )));
    }
    if !m.chunked {
        return Err(EngineError::WrongType(format!(
            "cannot {what}: not a chunked dataset"
        )));
    }
    if m.is_columnar() {
        return Err(EngineError::WrongType(format!(
            "cannot {what}: a columnar dataset's chunks are Parquet objects, not HDF5's \
             filtered bytes (parquet_files() names them)"
        )));
    }
    Ok(())
}
