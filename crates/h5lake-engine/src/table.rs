//! 1-D columnar datasets as Arrow tables: rows read as record batches
//! (nulls kept, no row layout in between) and record batches written and
//! appended as rows.

use std::ops::Range;

use arrow_array::RecordBatch;
use arrow_schema::SchemaRef;
use h5lake_columnar::{
    conform, encode_batch, fill_batch, table_schema, Footer, FooterRead, Parts, TableSchema,
    TAIL_BYTES,
};
use h5lake_store::{PutOutcome, StoreError};
use h5lake_types::Datatype;
use rayon::prelude::*;
use serde_json::json;

use crate::dataset::{chunk_pool, DatasetMeta};
use crate::domain::backoff;
use crate::{Domain, EngineError, Result};

/// How often a read of a chunk object replaced while it was read starts
/// over.
const CHANGED_RETRIES: u32 = 8;

impl Domain {
    /// Rows `rows` of the 1-D columnar dataset `id`, the members `fields`
    /// (all when `None`), as record batches of one schema (the members'
    /// Arrow types, every column nullable), one batch per chunk. Nulls
    /// stay nulls; rows never written read as the fill value.
    ///
    /// # Errors
    /// Not a 1-D columnar dataset; rows past the extent; unknown fields;
    /// corrupt chunks.
    pub fn read_arrow(
        &self,
        id: &str,
        rows: Range<u64>,
        fields: Option<&[String]>,
    ) -> Result<(SchemaRef, Vec<RecordBatch>)> {
        let m = self.dataset(id)?;
        let m = table_meta(&m)?;
        if rows.start > rows.end || rows.end > m.dims[0] {
            return Err(EngineError::Invalid(format!(
                "rows {}..{} of a table of {} rows",
                rows.start, rows.end, m.dims[0]
            )));
        }
        let dtype = members(&m.dtype, fields)?;
        let schema = table_schema(&dtype)?;
        let c = m.chunk[0];
        let chunks = if rows.is_empty() {
            0..0
        } else {
            rows.start / c..rows.end.div_ceil(c)
        };
        let batches = chunk_pool().install(|| {
            chunks
                .into_par_iter()
                .map(|k| {
                    let lo = rows.start.max(k * c) - k * c;
                    let hi = rows.end.min((k + 1) * c) - k * c;
                    self.chunk_batch(m, &dtype, &schema, k, lo as usize..hi as usize)
                })
                .collect::<Result<Vec<_>>>()
        })?;
        Ok((schema, batches))
    }

    /// Rows `rows` of chunk `k`, members of `dtype`, as a batch of `schema`.
    fn chunk_batch(
        &self,
        m: &DatasetMeta,
        dtype: &Datatype,
        schema: &SchemaRef,
        k: u64,
        rows: Range<usize>,
    ) -> Result<RecordBatch> {
        if let Some(source) = m.link.as_ref().and_then(|l| l.parquet_source()) {
            let c = m.chunk[0];
            let (lo, hi) = (k * c + rows.start as u64, k * c + rows.end as u64);
            let batches = self.parquet_batches(m, source, dtype, lo..hi)?;
            return Ok(h5lake_columnar::concat_batches(schema, &batches)?);
        }
        let key = m.key(&[k]);
        let stored = match self.stored_batch(&key, dtype, rows.clone())? {
            Some(b) => conform(&b, schema)?,
            None => RecordBatch::new_empty(schema.clone()),
        };
        let missing = rows.len() - stored.num_rows();
        if missing == 0 {
            return Ok(stored);
        }
        // Rows the chunk object does not hold (a chunk never written, or
        // rows past the end of a table's last chunk when it grew).
        let fill = conform(&fill_batch(&m.dtype, &m.fill, missing)?, schema)?;
        Ok(h5lake_columnar::concat_batches(schema, &[stored, fill])?)
    }

    /// The stored rows `rows` (clipped at those stored) of the members of
    /// `dtype` of the chunk object at `key`, reading the footer and those
    /// columns only; `None` when no object is stored.
    fn stored_batch(
        &self,
        key: &str,
        dtype: &Datatype,
        rows: Range<usize>,
    ) -> Result<Option<RecordBatch>> {
        let store = self.store();
        for attempt in 0.. {
            let read = || -> Result<Option<RecordBatch>> {
                let Some(obj) = store.open_object(key, TAIL_BYTES)? else {
                    return Ok(None);
                };
                let (len, tail) = (obj.len(), obj.tail().clone());
                let footer = match Footer::from_tail(len, &tail)? {
                    FooterRead::Parsed(f) => f,
                    FooterRead::Need(r) => Footer::parse(len, &obj.read_ranges(&[r])?[0])?,
                };
                let ranges = footer.ranges(dtype)?;
                let got = match obj.map_ranges(&ranges)? {
                    Some(mapped) => mapped,
                    None => obj.read_ranges(&ranges)?,
                };
                let mut parts: Vec<_> = ranges.iter().map(|r| r.start).zip(got).collect();
                parts.push((len - tail.len() as u64, tail));
                Ok(Some(footer.read_batch(
                    dtype,
                    &Parts::new(len, parts),
                    rows.clone(),
                )?))
            };
            match read() {
                Err(EngineError::Store(StoreError::Changed(_))) if attempt < CHANGED_RETRIES => {}
                r => return r,
            }
        }
        unreachable!("the retry loop only ends by returning")
    }

    /// Writes `batch` as rows `at..at + batch.num_rows()` of the 1-D
    /// columnar dataset `id` (inside its extent). Its columns are the
    /// dataset's members by name and in order, cast to their types; nulls
    /// are kept. Chunks the rows cover whole are stored as they are; a
    /// chunk covered in part is merged with the rows it holds, under a
    /// version check (retried when another writer got there first).
    ///
    /// # Errors
    /// Columns that do not match the members or do not cast; rows past the
    /// extent; read-only stores.
    pub fn write_arrow(&self, id: &str, at: u64, batch: &RecordBatch) -> Result<()> {
        self.write_guarded(id, || self.write_arrow_within(id, at, batch))
    }

    fn write_arrow_within(&self, id: &str, at: u64, batch: &RecordBatch) -> Result<()> {
        self.check_writable()?;
        let m = self.dataset(id)?;
        let m = table_meta(&m)?;
        m.check_data_writable()?;
        let n = batch.num_rows() as u64;
        if at.checked_add(n).is_none_or(|end| end > m.dims[0]) {
            return Err(EngineError::Invalid(format!(
                "rows {at}..{} past the table's {} rows (resize it first)",
                at.saturating_add(n),
                m.dims[0]
            )));
        }
        let table = TableSchema::for_dtype(&m.dtype)?;
        let batch = table.cast(batch)?;
        let c = m.chunk[0];
        let chunks = if n == 0 {
            0..0
        } else {
            at / c..(at + n).div_ceil(c)
        };
        chunk_pool().install(|| {
            chunks.into_par_iter().try_for_each(|k| {
                let lo = at.max(k * c);
                let hi = (at + n).min((k + 1) * c);
                let part = batch.slice((lo - at) as usize, (hi - lo) as usize);
                self.put_rows(m, &table, k, (lo - k * c) as usize, &part)
            })
        })
    }

    /// Writes `batches` (columns: the members, by name and in order) to
    /// the 1-D columnar dataset `id`: from row `at` on (inside the
    /// extent), or appended when `at` is `None` (the dataset grows by each
    /// group of rows as it is written, atomically, so concurrent appenders
    /// never overlap). Rows are gathered into whole chunks before they are
    /// written, so that each chunk object is written once and memory stays
    /// bounded by a chunk. Nulls are kept. Returns the rows written.
    ///
    /// # Errors
    /// As [`Domain::write_arrow`]; what `batches` yields.
    pub fn write_batches(
        &self,
        id: &str,
        batches: impl IntoIterator<Item = Result<RecordBatch>>,
        at: Option<u64>,
    ) -> Result<u64> {
        let m = self.dataset(id)?;
        let chunk = m.chunk.first().copied().unwrap_or(1).max(1);
        let mut next = at.unwrap_or(m.dims.first().copied().unwrap_or(0));
        let table = TableSchema::for_dtype(&m.dtype)?;
        let schema = table.target().clone();
        let mut pending: Vec<RecordBatch> = Vec::new();
        let mut pending_rows = 0u64;
        let mut written = 0u64;
        // Writes the pending rows where they go; returns the row after them.
        let flush = |pending: &mut Vec<RecordBatch>, rows: u64, next: u64| {
            if rows == 0 {
                return Ok(next);
            }
            let batch = h5lake_columnar::concat_batches(&schema, pending)?;
            pending.clear();
            let start = match at {
                Some(_) => next,
                None => self.extend_rows(id, rows)?,
            };
            self.write_arrow(id, start, &batch)?;
            Ok::<u64, EngineError>(start + rows)
        };
        // A stream is appended chunk by chunk (memory stays bounded): a
        // failure part way says what was kept.
        let kept = |e: EngineError, written: u64| match e {
            EngineError::Invalid(msg) if at.is_none() && written > 0 => {
                EngineError::Invalid(format!(
                    "{msg} (the {written} rows of the stream before this were appended: a \
                     stream is appended chunk by chunk)"
                ))
            }
            e => e,
        };
        for batch in batches {
            // Cast before the rows are placed (a value that does not fit
            // fails here, not after the table grew).
            let mut batch = table
                .cast(&batch.map_err(|e| kept(e, written))?)
                .map_err(|e| kept(e.into(), written))?;
            while batch.num_rows() > 0 {
                // Up to the next chunk boundary, so that chunks are
                // written whole.
                let room = chunk - (next + pending_rows) % chunk;
                let take = room.min(batch.num_rows() as u64);
                pending.push(batch.slice(0, take as usize));
                pending_rows += take;
                batch = batch.slice(take as usize, batch.num_rows() - take as usize);
                if (next + pending_rows) % chunk == 0 {
                    next = flush(&mut pending, pending_rows, next).map_err(|e| kept(e, written))?;
                    written += pending_rows;
                    pending_rows = 0;
                }
            }
        }
        flush(&mut pending, pending_rows, next).map_err(|e| kept(e, written))?;
        Ok(written + pending_rows)
    }

    /// Stores the statistics record of chunk `k`, just written (now at
    /// `version`) from the rows of `batch` as the Parquet object `enc`:
    /// its rows as a read decodes them (nulls as the fill value, rows past
    /// the batch as the fill value), taken from the batch itself rather
    /// than by decoding the object again.
    fn record_written(
        &self,
        m: &DatasetMeta,
        k: u64,
        batch: &RecordBatch,
        enc: &[u8],
        version: &h5lake_store::Version,
    ) -> Result<()> {
        if m.stats.is_none() {
            return Ok(());
        }
        // (Of a compound with members of variable length, the record is of
        // its fixed-size members: their columns of the batch.)
        let view;
        let (m, columns) = if m.dtype.fixed_size().is_some() {
            (m, batch.columns().to_vec())
        } else {
            view = m.stats_view()?;
            let Datatype::Compound { fields, .. } = &view.dtype else {
                return Ok(());
            };
            let cols: Option<Vec<_>> = fields
                .iter()
                .map(|f| batch.column_by_name(&f.name).cloned())
                .collect();
            match cols {
                Some(c) => (&view, c),
                None => return Ok(()),
            }
        };
        let whole = m.chunk_elems() * m.elem_size();
        let mut raw = Vec::with_capacity(whole);
        let raw = match h5lake_columnar::batch_rows(
            &m.dtype,
            &columns,
            batch.num_rows(),
            &m.fill,
            &mut raw,
        ) {
            Ok(()) => {
                while raw.len() < whole && !m.fill.is_empty() {
                    raw.extend_from_slice(&m.fill);
                }
                raw
            }
            // (A batch whose columns are not the members' own Arrow types:
            // the stored object says what a read sees.)
            Err(_) => m.decode_stored(enc)?,
        };
        let mut rec = self.prepare_stats(m, &[k], &raw);
        if let (Some(rec), Some(plan)) = (&mut rec, &m.stats) {
            plan.set_nulls(
                rec,
                &h5lake_columnar::null_counts(batch, &plan.leaf_names()),
            );
        }
        self.store_stats(m, &[k], rec, version)
    }

    /// Stores `part` as rows `from..` of chunk `k`.
    fn put_rows(
        &self,
        m: &DatasetMeta,
        table: &TableSchema,
        k: u64,
        from: usize,
        part: &RecordBatch,
    ) -> Result<()> {
        let key = m.key(&[k]);
        let compression = m
            .codec
            .as_columnar()
            .map(|c| c.compression)
            .unwrap_or(h5lake_columnar::Compression::None);
        let store = self.store();
        let chunk_rows = m.chunk[0] as usize;
        if from == 0 && part.num_rows() == chunk_rows {
            let enc = encode_batch(&m.dtype, part, compression)?;
            let v = store.put(&key, &enc)?;
            self.cache.remove(&key);
            return self.record_written(m, k, part, &enc, &v);
        }
        let schema = table.target();
        for attempt in 0u32.. {
            let current = store.get_versioned(&key)?;
            let held = match &current {
                Some(v) => {
                    let footer = Footer::of_whole(&v.data)?;
                    let stored = usize::try_from(footer.rows()).unwrap_or(0);
                    let b =
                        footer.read_batch(&m.dtype, &Parts::whole(v.data.clone()), 0..stored)?;
                    conform(&b, schema)?
                }
                None => RecordBatch::new_empty(schema.clone()),
            };
            let end = from + part.num_rows();
            let mut pieces = Vec::with_capacity(4);
            pieces.push(held.slice(0, from.min(held.num_rows())));
            if held.num_rows() < from {
                let gap = from - held.num_rows();
                pieces.push(conform(&fill_batch(&m.dtype, &m.fill, gap)?, schema)?);
            }
            pieces.push(part.clone());
            if held.num_rows() > end {
                pieces.push(held.slice(end, held.num_rows() - end));
            }
            let merged = h5lake_columnar::concat_batches(schema, &pieces)?;
            let enc = encode_batch(&m.dtype, &merged, compression)?;
            let outcome = match &current {
                Some(v) => store.put_if_version(&key, &enc, &v.version)?,
                None => store.put_if_absent(&key, &enc)?,
            };
            self.cache.remove(&key);
            if let PutOutcome::Written(v) = outcome {
                return self.record_written(m, k, &merged, &enc, &v);
            }
            backoff(attempt);
        }
        unreachable!("the retry loop only ends by returning")
    }

    /// Grows the 1-D dataset `id` by `n` rows at once (whatever other
    /// writers do meanwhile) and returns where the new rows start: what an
    /// append writes to without racing another.
    ///
    /// # Errors
    /// Not a resizable 1-D dataset; more rows than its maximum.
    pub fn extend_rows(&self, id: &str, n: u64) -> Result<u64> {
        let m = self.dataset_meta(id)?;
        m.check_data_writable()?;
        if m.dims.len() != 1 || !m.chunked {
            return Err(EngineError::WrongType(
                "rows are appended to a chunked 1-D dataset".into(),
            ));
        }
        let max = m.shape.maxdims()[0];
        let at = self.update_keys_in_store(id, &["shape"], |doc| {
            let dims = h5lake_types::Shape::from_json(&doc["shape"])?.dims();
            let old = dims.first().copied().unwrap_or(0);
            let new = old.checked_add(n).filter(|&v| v <= max).ok_or_else(|| {
                EngineError::Invalid(format!(
                    "Unable to set extent of dataset ({old} + {n} rows is more than its maximum {max})"
                ))
            })?;
            doc["shape"]["dims"] = json!([new]);
            Ok(old)
        })?;
        Ok(at)
    }
}

/// The dataset as a table: 1-D and columnar.
fn table_meta(m: &DatasetMeta) -> Result<&DatasetMeta> {
    let hdf5_link = m
        .link
        .as_ref()
        .is_some_and(|l| l.parquet_source().is_none());
    if m.dims.len() != 1 || !m.is_columnar() || hdf5_link {
        return Err(EngineError::WrongType(
            "Arrow tables are 1-D columnar datasets".into(),
        ));
    }
    Ok(m)
}

/// The compound of the members `names` of `dtype` (all of them when
/// `None`), in that order.
fn members(dtype: &Datatype, names: Option<&[String]>) -> Result<Datatype> {
    let Some(names) = names else {
        return Ok(dtype.clone());
    };
    let picked: Vec<_> = crate::dataset::named_members(dtype, names)?
        .into_iter()
        .map(|f| json!({"name": f.name, "type": f.dtype.to_json()}))
        .collect();
    Ok(Datatype::from_json(
        &json!({"class": "H5T_COMPOUND", "fields": picked}),
    )?)
}
