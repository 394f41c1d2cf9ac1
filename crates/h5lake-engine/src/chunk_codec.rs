//! How a dataset's chunks are stored: the one seam between a chunk object's
//! bytes and the chunk in HSDS's row layout (each element its packed bytes)
//! that the planner, the cache and every front end work on.
//!
//! - [`Filtered`]: HSDS's layout, through the dataset's filter pipeline
//!   (in HSDS's byte format, or libhdf5's for chunks `load --keep-chunks`
//!   copied as they were);
//! - [`Columnar`]: one Parquet object per chunk (`"h5lake": {"chunkFormat":
//!   "parquet"}`), one column per member of the compound type.

use std::borrow::Cow;
use std::fmt;

use h5lake_codecs::{ChunkFormat, Pipeline};
use h5lake_types::Datatype;
use serde_json::Value;

use crate::{EngineError, Result};

/// A way of storing chunks.
pub trait ChunkCodec: Send + Sync + fmt::Debug {
    /// Whether a stored chunk is its row-layout bytes as they are, so that
    /// parts of it are read and written in place.
    fn is_identity(&self) -> bool;
    /// The name the dataset document gives it (`/h5lake/chunkFormat`).
    fn name(&self) -> &'static str;
    /// The chunk (`raw_len` bytes when known) of a stored object.
    ///
    /// # Errors
    /// A stored object that is not such a chunk.
    fn decode(&self, stored: &[u8], raw_len: Option<usize>) -> Result<Vec<u8>>;
    /// The object to store for a chunk, of which the first `live` elements
    /// lie in the dataset's extent (all of them but in a 1-D dataset's last
    /// chunk).
    ///
    /// # Errors
    /// A chunk this codec cannot store.
    fn encode(&self, raw: Cow<'_, [u8]>, live: usize) -> Result<Vec<u8>>;
    /// Which rows of each member of the stored chunk are null (`None`
    /// when none are: only columnar chunks hold nulls).
    ///
    /// # Errors
    /// A stored object that is not such a chunk.
    fn nulls(&self, _stored: &bytes::Bytes) -> Result<Option<h5lake_columnar::Nulls>> {
        Ok(None)
    }
    /// As [`ChunkCodec::encode`], with the rows `nulls` names null in each
    /// member kept null.
    ///
    /// # Errors
    /// As [`ChunkCodec::encode`].
    fn encode_with_nulls(
        &self,
        raw: Cow<'_, [u8]>,
        live: usize,
        _nulls: &h5lake_columnar::Nulls,
    ) -> Result<Vec<u8>> {
        self.encode(raw, live)
    }
    /// The columnar codec, when this is one (its chunks can be read in part,
    /// some columns at a time).
    fn as_columnar(&self) -> Option<&Columnar> {
        None
    }
    /// A stored chunk (`raw_len` bytes decoded) as HDF5's filter pipeline
    /// makes it: what HDF5's direct chunk read gives.
    ///
    /// # Errors
    /// A codec whose chunks have no such form; a damaged chunk.
    fn hdf5_bytes(&self, _stored: bytes::Bytes, _raw_len: Option<usize>) -> Result<bytes::Bytes> {
        Err(EngineError::WrongType(format!(
            "{} chunks have no form of HDF5's filters",
            self.name()
        )))
    }
    /// The chunk (`raw_len` bytes) of bytes HDF5's filter pipeline made:
    /// what HDF5's direct chunk write is given.
    ///
    /// # Errors
    /// A codec whose chunks have no such form; bytes that do not decode.
    fn decode_hdf5_bytes(&self, _filtered: &[u8], _raw_len: usize) -> Result<Vec<u8>> {
        Err(EngineError::WrongType(format!(
            "{} chunks have no form of HDF5's filters",
            self.name()
        )))
    }
}

/// HSDS's chunks: row layout through the filter pipeline.
#[derive(Debug)]
pub struct Filtered {
    pub pipeline: Pipeline,
    pub format: ChunkFormat,
    /// The unit filters such as shuffle work on.
    pub filter_elem_size: usize,
}

impl ChunkCodec for Filtered {
    fn is_identity(&self) -> bool {
        self.pipeline.is_empty()
    }

    fn name(&self) -> &'static str {
        match self.format {
            ChunkFormat::Hdf5 => "hdf5",
            _ => "hsds",
        }
    }

    fn decode(&self, stored: &[u8], raw_len: Option<usize>) -> Result<Vec<u8>> {
        Ok(self
            .pipeline
            .decode_as(stored, self.filter_elem_size, raw_len, self.format)?)
    }

    fn encode(&self, raw: Cow<'_, [u8]>, _live: usize) -> Result<Vec<u8>> {
        Ok(self
            .pipeline
            .encode_as(raw.into_owned(), self.filter_elem_size, self.format)?)
    }

    /// The object itself when it is in libhdf5's layout; a chunk kept in
    /// HSDS's layout (compressed in a Blosc frame, or shuffle and checksum
    /// left out) decoded and filtered again, libhdf5's way.
    fn hdf5_bytes(&self, stored: bytes::Bytes, raw_len: Option<usize>) -> Result<bytes::Bytes> {
        if self.pipeline.is_empty()
            || self.format == ChunkFormat::Hdf5
            || self.pipeline.keeps_hdf5_layout()
        {
            return Ok(stored);
        }
        let raw = self.decode(&stored, raw_len)?;
        Ok(bytes::Bytes::from(
            self.pipeline.encode(raw, self.filter_elem_size)?,
        ))
    }

    fn decode_hdf5_bytes(&self, filtered: &[u8], raw_len: usize) -> Result<Vec<u8>> {
        Ok(self.pipeline.decode_as(
            filtered,
            self.filter_elem_size,
            Some(raw_len),
            ChunkFormat::Hdf5,
        )?)
    }
}

/// A read-only view of the chunks of a compound with members of variable
/// length as rows of just its fixed-size members (packed, in order): what
/// statistics and queries of such a dataset in row layout read.
#[derive(Debug)]
pub struct FixedPart {
    /// How the chunks are stored.
    pub inner: std::sync::Arc<dyn ChunkCodec>,
    /// The whole compound, its elements serialized as HSDS stores them.
    pub whole: Datatype,
    /// Elements of a chunk, and the whole type's fill element (what a
    /// chunk's elements past its records read as).
    pub elems: usize,
    pub whole_fill: Vec<u8>,
    /// Indices of the members kept.
    pub kept: Vec<usize>,
}

/// Appends the members `kept` (indices) of the serialized element `elem` of
/// the compound `whole` to `out`.
///
/// # Errors
/// An element that is not one of `whole`.
pub fn fixed_part(whole: &Datatype, kept: &[usize], elem: &[u8], out: &mut Vec<u8>) -> Result<()> {
    let Datatype::Compound { fields, .. } = whole else {
        return Err(EngineError::WrongType(
            "fixed parts of a compound only".into(),
        ));
    };
    let mut pos = 0;
    for (k, f) in fields.iter().enumerate() {
        let len = h5lake_types::record::record_len(&f.dtype, elem, pos)
            .map_err(|e| EngineError::Corrupt(format!("a record of variable length: {e}")))?;
        if kept.contains(&k) {
            out.extend_from_slice(&elem[pos..pos + len]);
        }
        pos += len;
    }
    Ok(())
}

impl ChunkCodec for FixedPart {
    fn is_identity(&self) -> bool {
        false
    }

    fn name(&self) -> &'static str {
        self.inner.name()
    }

    fn decode(&self, stored: &[u8], raw_len: Option<usize>) -> Result<Vec<u8>> {
        let raw = self.inner.decode(stored, None)?;
        let elems = h5lake_types::record::split_elements(&self.whole, &raw, self.elems)
            .map_err(|e| EngineError::Corrupt(format!("a chunk of variable length: {e}")))?;
        let mut out = Vec::with_capacity(raw_len.unwrap_or(0));
        for e in &elems {
            fixed_part(&self.whole, &self.kept, e, &mut out)?;
        }
        for _ in elems.len()..self.elems {
            fixed_part(&self.whole, &self.kept, &self.whole_fill, &mut out)?;
        }
        Ok(out)
    }

    fn encode(&self, _raw: Cow<'_, [u8]>, _live: usize) -> Result<Vec<u8>> {
        Err(EngineError::WrongType(
            "the fixed-size members of records of variable length are read, never stored, alone"
                .into(),
        ))
    }
}

/// Chunks as Parquet objects.
#[derive(Debug)]
pub struct Columnar {
    pub dtype: Datatype,
    pub compression: h5lake_columnar::Compression,
    /// Elements per chunk.
    pub elems: usize,
    /// One element of fill value: what a null reads as.
    pub fill: Vec<u8>,
    /// Whether `dtype` holds only some of the stored columns (a read of
    /// some members): chunks are then read column by column, never whole.
    pub some_columns: bool,
}

impl ChunkCodec for Columnar {
    fn is_identity(&self) -> bool {
        false
    }

    fn name(&self) -> &'static str {
        PARQUET
    }

    fn decode(&self, stored: &[u8], _raw_len: Option<usize>) -> Result<Vec<u8>> {
        Ok(h5lake_columnar::decode_chunk(
            &self.dtype,
            bytes::Bytes::copy_from_slice(stored),
            self.elems,
            &self.fill,
        )?)
    }

    fn as_columnar(&self) -> Option<&Columnar> {
        Some(self)
    }

    /// Only the rows in the dataset's extent are stored: the Parquet object
    /// of a table's last chunk holds its rows and no padding, so that other
    /// tools reading it see the table's rows only. Decoding pads with fill.
    fn encode(&self, raw: Cow<'_, [u8]>, live: usize) -> Result<Vec<u8>> {
        let (rows, live) = self.live_rows(raw, live)?;
        Ok(h5lake_columnar::encode_chunk(
            &self.dtype,
            &rows,
            live,
            self.compression,
        )?)
    }

    fn nulls(&self, stored: &bytes::Bytes) -> Result<Option<h5lake_columnar::Nulls>> {
        Ok(h5lake_columnar::chunk_nulls(&self.dtype, stored.clone())?)
    }

    fn encode_with_nulls(
        &self,
        raw: Cow<'_, [u8]>,
        live: usize,
        nulls: &h5lake_columnar::Nulls,
    ) -> Result<Vec<u8>> {
        let (rows, live) = self.live_rows(raw, live)?;
        Ok(h5lake_columnar::encode_chunk_with_nulls(
            &self.dtype,
            &rows,
            live,
            nulls,
            self.compression,
        )?)
    }
}

impl Columnar {
    /// The first `live` elements of the chunk `raw` (at most all of them),
    /// and how many that is.
    fn live_rows<'a>(&self, raw: Cow<'a, [u8]>, live: usize) -> Result<(Cow<'a, [u8]>, usize)> {
        let live = live.min(self.elems);
        let rows: Cow<'_, [u8]> = match self.dtype.fixed_size() {
            Some(size) => match raw {
                Cow::Borrowed(r) => Cow::Borrowed(r.get(..live * size).unwrap_or(r)),
                Cow::Owned(mut r) => {
                    r.truncate(live * size);
                    Cow::Owned(r)
                }
            },
            None if live < self.elems => {
                let items = h5lake_types::record::split_elements(&self.dtype, &raw, live)?;
                Cow::Owned(h5lake_types::record::join_elements(&self.dtype, &items))
            }
            None => raw,
        };
        Ok((rows, live))
    }
}

/// The document's name of the columnar chunk format.
pub const PARQUET: &str = "parquet";

/// The chunk format a dataset document names (`/h5lake/chunkFormat`).
pub(crate) fn format_name(doc: &Value) -> Option<&str> {
    doc.pointer("/h5lake/chunkFormat").and_then(Value::as_str)
}

/// Checks, when a dataset is made, that its chunks can be stored as the
/// document says.
pub(crate) fn check_new(
    doc: &Value,
    dtype: &Datatype,
    cprops: &Value,
    chunked: bool,
) -> Result<()> {
    match format_name(doc) {
        None | Some("hsds" | "hdf5") => Ok(()),
        Some(PARQUET) => {
            if !chunked {
                return Err(EngineError::Invalid(
                    "a columnar dataset is chunked (each chunk is one Parquet object)".into(),
                ));
            }
            h5lake_columnar::check_type(dtype)?;
            h5lake_columnar::Compression::from_filters(
                cprops.get("filters").unwrap_or(&Value::Null),
            )?;
            Ok(())
        }
        Some(other) => Err(EngineError::Invalid(format!(
            "unknown chunk format {other:?}"
        ))),
    }
}
