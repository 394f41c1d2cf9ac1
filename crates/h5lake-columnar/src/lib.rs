//! Columnar chunks: a chunk of a compound dataset stored as one Parquet
//! object — one row group, one column per member of the compound (nested
//! compounds as Parquet structs, array members as fixed-size lists), rows
//! in C order of the chunk's elements.
//!
//! The engine hands chunks around in HSDS's row layout (each element its
//! packed bytes, members one after another); [`encode_chunk`] turns such a
//! chunk into a Parquet object and [`decode_chunk`] turns it back, so that
//! selections, partial writes, fill values and caching work alike on
//! every layout. [`arrow_schema`] is the one mapping from h5lake's types
//! to Arrow's.

mod arrays;
mod error;

use std::sync::Arc;

use arrow_array::RecordBatch;
use arrow_schema::{Field, Schema};
use bytes::Bytes;
use h5lake_types::Datatype;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use parquet::arrow::{ArrowWriter, ProjectionMask};
use parquet::basic::{GzipLevel, ZstdLevel};
use parquet::file::properties::{EnabledStatistics, WriterProperties};
use serde_json::Value;

pub use error::{ColumnarError, Result};

/// The Parquet codec a columnar dataset's chunks are compressed with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Compression {
    None,
    Snappy,
    Gzip(u32),
    Lz4,
    Zstd(i32),
}

impl Compression {
    /// The codec an HSDS filter list asks for: deflate (gzip), zstd, lz4
    /// and snappy map onto Parquet's codecs of the same names; byte
    /// shuffling is left to Parquet's own encodings.
    ///
    /// # Errors
    /// A filter that is neither a compressor Parquet has nor a shuffle, or
    /// two compressors.
    pub fn from_filters(filters: &Value) -> Result<Self> {
        let mut out = Compression::None;
        for f in filters.as_array().map(Vec::as_slice).unwrap_or_default() {
            let class = f.get("class").and_then(Value::as_str).unwrap_or("");
            let name = f.get("name").and_then(Value::as_str).unwrap_or("");
            let id = f.get("id").and_then(Value::as_u64).unwrap_or(0);
            let level = f.get("level").and_then(Value::as_i64);
            let codec = match (class, name, id) {
                ("H5Z_FILTER_SHUFFLE", ..) | (_, "shuffle", _) | (_, _, 2) => continue,
                ("H5Z_FILTER_DEFLATE", ..) | (_, "deflate" | "gzip", _) | (_, _, 1) => {
                    Compression::Gzip(level.unwrap_or(6).clamp(0, 9) as u32)
                }
                (_, "zstd", _) | (_, _, 32015) => {
                    Compression::Zstd(level.unwrap_or(1).clamp(1, 22) as i32)
                }
                (_, "lz4", _) | (_, _, 32004) => Compression::Lz4,
                (_, "snappy", _) => Compression::Snappy,
                _ => {
                    return Err(ColumnarError::Unsupported(format!(
                        "filter {f} on a columnar dataset (its chunks are Parquet objects: use \
                         gzip, zstd, lz4 or snappy compression)"
                    )))
                }
            };
            if out != Compression::None {
                return Err(ColumnarError::Unsupported(
                    "two compressors on a columnar dataset".into(),
                ));
            }
            out = codec;
        }
        Ok(out)
    }

    fn parquet(self) -> Result<parquet::basic::Compression> {
        use parquet::basic::Compression as P;
        Ok(match self {
            Compression::None => P::UNCOMPRESSED,
            Compression::Snappy => P::SNAPPY,
            Compression::Gzip(l) => P::GZIP(GzipLevel::try_new(l)?),
            Compression::Lz4 => P::LZ4_RAW,
            Compression::Zstd(l) => P::ZSTD(ZstdLevel::try_new(l)?),
        })
    }
}

/// The Arrow schema of a columnar dataset of type `dtype`: one column per
/// member of the compound.
///
/// # Errors
/// A type that is not a compound, or a member type with no columnar form
/// yet.
pub fn arrow_schema(dtype: &Datatype) -> Result<Schema> {
    let Datatype::Compound { fields, .. } = dtype else {
        return Err(ColumnarError::Unsupported(format!(
            "a columnar dataset of type {} (the columnar layout holds compound types: one \
             column per member)",
            dtype.to_json()
        )));
    };
    let fields: Vec<Field> = fields
        .iter()
        .map(|f| Ok(Field::new(&f.name, arrays::arrow_type(&f.dtype)?, false)))
        .collect::<Result<_>>()?;
    Ok(Schema::new(fields))
}

/// Checks that datasets of `dtype` can be columnar.
///
/// # Errors
/// As [`arrow_schema`].
pub fn check_type(dtype: &Datatype) -> Result<()> {
    arrow_schema(dtype).map(|_| ())
}

/// The Parquet object of one chunk: `raw` holds its `n` elements of
/// `dtype` in row layout.
///
/// # Errors
/// A type [`arrow_schema`] refuses; `raw` of another length than `n`
/// elements.
pub fn encode_chunk(
    dtype: &Datatype,
    raw: &[u8],
    n: usize,
    compression: Compression,
) -> Result<Vec<u8>> {
    let schema = Arc::new(arrow_schema(dtype)?);
    let size = dtype.fixed_size().unwrap_or(0);
    if raw.len() != n * size {
        return Err(ColumnarError::Corrupt(format!(
            "a chunk of {n} elements of {size} bytes holds {} bytes",
            raw.len()
        )));
    }
    let Datatype::Compound { fields, .. } = dtype else {
        unreachable!("arrow_schema accepts compounds only")
    };
    let columns = fields
        .iter()
        .map(|f| {
            let member = arrays::gather(raw, size, f.offset, f.dtype.fixed_size().unwrap_or(0), n);
            arrays::to_array(&f.dtype, &member, n)
        })
        .collect::<Result<Vec<_>>>()?;
    let batch = RecordBatch::try_new(schema.clone(), columns)?;
    let props = WriterProperties::builder()
        .set_compression(compression.parquet()?)
        .set_max_row_group_row_count(Some(n.max(1)))
        .set_max_row_group_bytes(None)
        .set_statistics_enabled(EnabledStatistics::Page)
        .build();
    let mut out = Vec::with_capacity(raw.len() / 2 + 1024);
    let mut w = ArrowWriter::try_new(&mut out, schema, Some(props))?;
    w.write(&batch)?;
    w.close()?;
    Ok(out)
}

/// The `n` elements of `dtype`, in row layout, of the Parquet object
/// `stored`. A null (Parquet and Arrow allow them; HDF5 has none) reads as
/// the member's bytes in `fill` (one element of `dtype`).
///
/// # Errors
/// Bytes that are not a Parquet object of this type and length.
pub fn decode_chunk(dtype: &Datatype, stored: Bytes, n: usize, fill: &[u8]) -> Result<Vec<u8>> {
    let size = dtype.fixed_size().unwrap_or(0);
    let Datatype::Compound { fields, .. } = dtype else {
        return Err(ColumnarError::Unsupported(format!(
            "a columnar chunk of type {}",
            dtype.to_json()
        )));
    };
    let builder = ParquetRecordBatchReaderBuilder::try_new(stored)?;
    let total = builder.metadata().file_metadata().num_rows();
    if usize::try_from(total).ok() != Some(n) {
        return Err(ColumnarError::Corrupt(format!(
            "a columnar chunk of {total} rows, expected {n}"
        )));
    }
    let mask = ProjectionMask::all();
    let reader = builder
        .with_projection(mask)
        .with_batch_size(n.max(1))
        .build()?;
    let mut out = vec![0u8; n * size];
    let mut row = 0usize;
    for batch in reader {
        let batch = batch?;
        let rows = batch.num_rows();
        if batch.num_columns() != fields.len() {
            return Err(ColumnarError::Corrupt(format!(
                "a columnar chunk of {} columns, expected {}",
                batch.num_columns(),
                fields.len()
            )));
        }
        for (f, col) in fields.iter().zip(batch.columns()) {
            let fs = f.dtype.fixed_size().unwrap_or(0);
            let mut member = vec![0u8; rows * fs];
            let fill_member = fill.get(f.offset..f.offset + fs).unwrap_or(&[]);
            arrays::from_array(&f.dtype, col.as_ref(), &mut member, fill_member)?;
            arrays::scatter(
                &member,
                &mut out[row * size..(row + rows) * size],
                size,
                f.offset,
                fs,
                rows,
            );
        }
        row += rows;
    }
    if row != n {
        return Err(ColumnarError::Corrupt(format!(
            "a columnar chunk yielded {row} rows, expected {n}"
        )));
    }
    Ok(out)
}
