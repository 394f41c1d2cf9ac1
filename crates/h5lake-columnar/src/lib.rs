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
mod arrow_types;
mod column_order;
mod error;
mod flat_writer;
mod input;
mod nulls;
mod read;
mod table;

use std::sync::Arc;

use arrow_array::{ArrayRef, RecordBatch};
use arrow_schema::{Field, Schema};
use bytes::Bytes;
use h5lake_types::Datatype;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use parquet::arrow::{ArrowWriter, ProjectionMask};
use parquet::basic::{GzipLevel, ZstdLevel};
use parquet::file::properties::{EnabledStatistics, WriterProperties};
use parquet::schema::types::ColumnPath;
use serde_json::Value;

pub use arrow_types::{parse_type_name, restore_arrow_types};
pub use error::{ColumnarError, Result};
pub use input::{ParquetInput, TableSchema};
pub use nulls::{chunk_nulls, encode_chunk_with_nulls, NullSite, Nulls};
pub use read::{Footer, FooterRead, Parts, TAIL_BYTES};
pub use table::{conform, fill_batch, present, table_schema};

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
        .map(|f| Ok(Field::new(&f.name, arrays::member_type(&f.dtype)?, false)))
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
    encode_batch(dtype, &rows_to_batch(dtype, raw, n)?, compression)
}

/// The `n` elements of `dtype` in `raw` (row layout) as a record batch of
/// [`arrow_schema`]'s columns.
///
/// # Errors
/// As [`encode_chunk`].
pub fn rows_to_batch(dtype: &Datatype, raw: &[u8], n: usize) -> Result<RecordBatch> {
    let schema = Arc::new(arrow_schema(dtype)?);
    let Datatype::Compound { fields, .. } = dtype else {
        unreachable!("arrow_schema accepts compounds only")
    };
    let columns = match dtype.fixed_size() {
        Some(size) => {
            if raw.len() != n * size {
                return Err(ColumnarError::Corrupt(format!(
                    "a chunk of {n} elements of {size} bytes holds {} bytes",
                    raw.len()
                )));
            }
            let places: Vec<(usize, usize)> = fields
                .iter()
                .map(|f| (f.offset, f.dtype.fixed_size().unwrap_or(0)))
                .collect();
            fields
                .iter()
                .zip(arrays::gather_members(raw, size, &places, n))
                .map(|(f, member)| arrays::member_array(&f.dtype, member, n))
                .collect::<Result<Vec<_>>>()?
        }
        None => {
            // Records of variable length: each member's part of each row.
            let records = h5lake_types::record::split_elements(dtype, raw, n)?;
            if records.len() != n {
                return Err(ColumnarError::Corrupt(format!(
                    "a chunk of {} records, expected {n}",
                    records.len()
                )));
            }
            let mut parts: Vec<Vec<&[u8]>> = vec![Vec::with_capacity(n); fields.len()];
            for rec in &records {
                let mut pos = 0;
                for (k, f) in fields.iter().enumerate() {
                    let len = h5lake_types::record::record_len(&f.dtype, rec, pos)?;
                    parts[k].push(&rec[pos..pos + len]);
                    pos += len;
                }
            }
            fields
                .iter()
                .zip(&parts)
                .map(|(f, p)| {
                    if arrays::is_vlen_member(&f.dtype) {
                        arrays::vlen_column(&f.dtype, p)
                    } else {
                        arrays::member_array(&f.dtype, p.concat(), n)
                    }
                })
                .collect::<Result<Vec<_>>>()?
        }
    };
    batch_with_rows(schema, columns, n)
}

/// A batch of `rows` rows (the count kept when there are no columns).
///
/// # Errors
/// Columns that do not match `schema` or `rows`.
pub(crate) fn batch_with_rows(
    schema: arrow_schema::SchemaRef,
    columns: Vec<ArrayRef>,
    rows: usize,
) -> Result<RecordBatch> {
    Ok(RecordBatch::try_new_with_options(
        schema,
        columns,
        &arrow_array::RecordBatchOptions::new().with_row_count(Some(rows)),
    )?)
}

/// Every `step`-th row of `batch`, from its first.
///
/// # Errors
/// A step of 0.
pub fn every_nth(batch: &RecordBatch, step: usize) -> Result<RecordBatch> {
    if step == 0 {
        return Err(ColumnarError::Corrupt("a step of 0 rows".into()));
    }
    if step == 1 {
        return Ok(batch.clone());
    }
    let rows: arrow_array::UInt64Array = (0..batch.num_rows() as u64).step_by(step).collect();
    Ok(arrow_select::take::take_record_batch(batch, &rows)?)
}

/// Record batches of one schema as one batch.
///
/// # Errors
/// Batches of another schema.
pub fn concat_batches(
    schema: &arrow_schema::SchemaRef,
    batches: &[RecordBatch],
) -> Result<RecordBatch> {
    Ok(arrow_select::concat::concat_batches(schema, batches)?)
}

/// The Parquet object of one chunk of `dtype` (a compound) given as a
/// record batch of its members (one row group; nulls kept).
///
/// # Errors
/// Columns Parquet cannot hold.
pub fn encode_batch(
    dtype: &Datatype,
    batch: &RecordBatch,
    compression: Compression,
) -> Result<Vec<u8>> {
    let with_booleans = table::booleans_stored(dtype, batch)?;
    let batch = with_booleans.as_ref().unwrap_or(batch);
    let n = batch.num_rows();
    let mut props = WriterProperties::builder();
    // Numbers and fixed-length strings are stored plain, as an HDF5 chunk
    // holds them: readers copy them out of the pages into rows without
    // decoding, a few rows' pages at a time, and a dictionary seldom pays
    // for measured values (the codec still compresses repeats).
    let fixed_strings: Vec<&str> = match dtype {
        Datatype::Compound { fields, .. } => fields
            .iter()
            .filter(|f| {
                matches!(
                    f.dtype,
                    Datatype::String {
                        length: Some(_),
                        ..
                    }
                )
            })
            .map(|f| f.name.as_str())
            .collect(),
        _ => Vec::new(),
    };
    for f in batch.schema().fields() {
        if f.data_type().is_primitive() || fixed_strings.contains(&f.name().as_str()) {
            props =
                props.set_column_dictionary_enabled(ColumnPath::new(vec![f.name().clone()]), false);
        }
    }
    let props = props
        .set_compression(compression.parquet()?)
        .set_max_row_group_row_count(Some(n.max(1)))
        .set_max_row_group_bytes(None)
        .set_statistics_enabled(EnabledStatistics::Page)
        .build();
    // Room for the chunk stored as it is: growing the buffer would copy it.
    let mut out = Vec::with_capacity(batch.get_array_memory_size() + (64 << 10));
    if flat_writer::takes(batch) {
        flat_writer::write(batch, props, &mut out)?;
    } else {
        let mut w = ArrowWriter::try_new(&mut out, batch.schema(), Some(props))?;
        w.write(batch)?;
        w.close()?;
    }
    column_order::declare_type_defined_float_order(&mut out)?;
    Ok(out)
}

/// The `n` elements of `dtype`, in row layout, of the Parquet object
/// `stored`. A null (Parquet and Arrow allow them; HDF5 has none) reads as
/// the member's bytes in `fill` (one element of `dtype`).
///
/// # Errors
/// Bytes that are not a Parquet object of this type and length.
pub fn decode_chunk(dtype: &Datatype, stored: Bytes, n: usize, fill: &[u8]) -> Result<Vec<u8>> {
    if let Some(size) = dtype.fixed_size() {
        let footer = Footer::of_whole(&stored)?;
        let mut out = vec![0u8; n * size];
        footer.decode_into(dtype, &Parts::whole(stored), n, fill, &mut out)?;
        return Ok(out);
    }
    let Datatype::Compound { fields, .. } = dtype else {
        return Err(ColumnarError::Unsupported(format!(
            "a columnar chunk of type {}",
            dtype.to_json()
        )));
    };
    let builder = ParquetRecordBatchReaderBuilder::try_new(stored)?;
    let total = builder.metadata().file_metadata().num_rows();
    // A table's last chunk holds only its rows; the rest reads as fill.
    let stored_rows = usize::try_from(total)
        .ok()
        .filter(|&t| t <= n)
        .ok_or_else(|| {
            ColumnarError::Corrupt(format!(
                "a columnar chunk of {total} rows, expected at most {n}"
            ))
        })?;
    // Only the columns of `dtype`'s members are decoded (a read of some
    // members of the dataset's type passes just those).
    let file_schema = builder.schema().clone();
    let missing =
        |name: &str| ColumnarError::Corrupt(format!("a columnar chunk without column {name:?}"));
    let mut roots = fields
        .iter()
        .map(|f| file_schema.index_of(&f.name).map_err(|_| missing(&f.name)))
        .collect::<Result<Vec<_>>>()?;
    roots.sort_unstable();
    roots.dedup();
    let mask = ProjectionMask::roots(builder.parquet_schema(), roots);
    let reader = builder
        .with_projection(mask)
        .with_batch_size(n.max(1))
        .build()?;
    let mut out = Vec::with_capacity(n * 16);
    let mut rows = 0;
    for batch in reader {
        let batch = batch?;
        let columns = fields
            .iter()
            .map(|f| {
                let col = batch
                    .column_by_name(&f.name)
                    .ok_or_else(|| missing(&f.name))?;
                table::boolean_back(&f.dtype, col)
            })
            .collect::<Result<Vec<_>>>()?;
        rows += batch.num_rows();
        batch_rows(dtype, &columns, batch.num_rows(), fill, &mut out)?;
    }
    if rows != stored_rows {
        return Err(ColumnarError::Corrupt(format!(
            "a columnar chunk yielded {rows} rows, expected {stored_rows}"
        )));
    }
    let filler: Vec<u8> = if fill.is_empty() {
        h5lake_types::record::empty_record(dtype)
    } else {
        fill.to_vec()
    };
    for _ in rows..n {
        out.extend_from_slice(&filler);
    }
    Ok(out)
}

/// Writes `rows` values of `col` (member `f`'s column) into the member's
/// place in each of the first `rows` elements of `out` (row layout,
/// `size` bytes an element); a null reads as the member's part of `fill`.
pub(crate) fn member_rows(
    f: &h5lake_types::Field,
    col: &dyn arrow_array::Array,
    rows: usize,
    fill: &[u8],
    out: &mut [u8],
    size: usize,
) -> Result<()> {
    let fs = f.dtype.fixed_size().unwrap_or(0);
    if let Some(values) = arrays::plain_values(&f.dtype, col) {
        arrays::scatter(&values, out, size, f.offset, fs, rows);
        return Ok(());
    }
    let mut member = vec![0u8; rows * fs];
    let fill_member = fill.get(f.offset..f.offset + fs).unwrap_or(&[]);
    arrays::from_array(&f.dtype, col, &mut member, fill_member)?;
    arrays::scatter(&member, out, size, f.offset, fs, rows);
    Ok(())
}

/// Appends `rows` rows of `columns` (one per member of the compound
/// `dtype`, in its order, of the Arrow types [`arrow_schema`] gives) to
/// `out` in HSDS's row layout: packed elements, or serialized records when
/// members are of variable length. A null reads as the member's part of
/// `fill` (one element of `dtype`; zero or empty when `fill` is empty).
///
/// # Errors
/// Columns of other types than the members'.
pub fn batch_rows(
    dtype: &Datatype,
    columns: &[ArrayRef],
    rows: usize,
    fill: &[u8],
    out: &mut Vec<u8>,
) -> Result<()> {
    let Datatype::Compound { fields, .. } = dtype else {
        return Err(ColumnarError::Unsupported(format!(
            "rows of type {}",
            dtype.to_json()
        )));
    };
    if columns.len() != fields.len() {
        return Err(ColumnarError::Corrupt(format!(
            "{} columns for {} members",
            columns.len(),
            fields.len()
        )));
    }
    if let Some(size) = dtype.fixed_size() {
        let at = out.len();
        out.resize(at + rows * size, 0);
        for (f, col) in fields.iter().zip(columns) {
            member_rows(f, col.as_ref(), rows, fill, &mut out[at..], size)?;
        }
        return Ok(());
    }
    // Each member's part of the fill record (a null reads as it).
    let mut fill_parts: Vec<&[u8]> = Vec::with_capacity(fields.len());
    let mut pos = 0;
    for f in fields {
        let len = h5lake_types::record::record_len(&f.dtype, fill, pos).unwrap_or(0);
        fill_parts.push(fill.get(pos..pos + len).unwrap_or(&[]));
        pos += len;
    }
    // Fixed-size members decoded whole, then interleaved row by row.
    let fixed: Vec<Option<Vec<u8>>> = fields
        .iter()
        .zip(columns)
        .zip(&fill_parts)
        .map(|((f, col), fp)| {
            if arrays::is_vlen_member(&f.dtype) {
                return Ok(None);
            }
            let w = f.dtype.fixed_size().unwrap_or(0);
            let mut member = vec![0u8; rows * w];
            arrays::from_array(&f.dtype, col.as_ref(), &mut member, fp)?;
            Ok(Some(member))
        })
        .collect::<Result<_>>()?;
    for i in 0..rows {
        for (k, f) in fields.iter().enumerate() {
            match &fixed[k] {
                Some(member) => {
                    let w = f.dtype.fixed_size().unwrap_or(0);
                    out.extend_from_slice(&member[i * w..(i + 1) * w]);
                }
                None => arrays::vlen_part(&f.dtype, columns[k].as_ref(), i, fill_parts[k], out)?,
            }
        }
    }
    Ok(())
}

/// For each leaf named (a path through struct columns, parts joined by
/// `.`): how many of `batch`'s rows hold no value there — null, or inside
/// a null struct. 0 for a name that is no column.
pub fn null_counts(batch: &RecordBatch, names: &[&str]) -> Vec<u64> {
    null_counts_in(batch, names, &[(0, batch.num_rows())])
}

/// As [`null_counts`], over the rows of `runs` ((first row, count)
/// pairs; rows past the batch's end are not counted).
pub fn null_counts_in(batch: &RecordBatch, names: &[&str], runs: &[(usize, usize)]) -> Vec<u64> {
    use arrow_array::Array;
    let rows = batch.num_rows();
    let within = |nulls: &arrow_buffer::NullBuffer| -> u64 {
        runs.iter()
            .map(|&(first, count)| {
                let (lo, hi) = (first.min(rows), first.saturating_add(count).min(rows));
                nulls.slice(lo, hi - lo).null_count() as u64
            })
            .sum()
    };
    names
        .iter()
        .map(|name| {
            let mut level: Vec<(&str, &ArrayRef)> = batch
                .schema_ref()
                .fields()
                .iter()
                .map(|f| f.name().as_str())
                .zip(batch.columns())
                .collect();
            let mut rest: &str = name;
            let mut nulls: Option<arrow_buffer::NullBuffer> = None;
            loop {
                // The longest member name the rest of the path starts with
                // (member names may hold dots).
                let Some((n, col)) = level
                    .iter()
                    .filter(|(n, _)| {
                        rest == *n
                            || (rest.starts_with(n) && rest.as_bytes().get(n.len()) == Some(&b'.'))
                    })
                    .max_by_key(|(n, _)| n.len())
                    .copied()
                else {
                    return 0;
                };
                nulls =
                    arrow_buffer::NullBuffer::union(nulls.as_ref(), col.logical_nulls().as_ref());
                if rest.len() == n.len() {
                    return nulls.as_ref().map_or(0, within);
                }
                rest = &rest[n.len() + 1..];
                let Some(st) = col.as_any().downcast_ref::<arrow_array::StructArray>() else {
                    return 0;
                };
                level = st
                    .fields()
                    .iter()
                    .map(|f| f.name().as_str())
                    .zip(st.columns())
                    .collect();
            }
        })
        .collect()
}
