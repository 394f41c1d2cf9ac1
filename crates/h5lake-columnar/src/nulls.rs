//! Nulls through an edit. HDF5-shaped writes carry values only, so a chunk
//! rewritten after a partial write would turn every null it held into the
//! fill value; instead the nulls of the members and rows the write did not
//! touch are read from the old object and put back into the new one.

use std::sync::Arc;

use arrow_array::{make_array, ArrayRef};
use arrow_buffer::{BooleanBuffer, NullBuffer};
use arrow_schema::{Field, Schema};
use bytes::Bytes;
use h5lake_types::Datatype;

use crate::read::{Footer, Parts};
use crate::{encode_batch, rows_to_batch, Compression, Result};

/// Per member (top-level column) of a chunk object, which of its rows are
/// null (`true`); `None` for a member without nulls.
pub type Nulls = Vec<Option<Vec<bool>>>;

/// The nulls of the chunk object `stored` of `dtype` (a compound); `None`
/// when it holds none.
///
/// # Errors
/// Bytes that are not a chunk object of `dtype`.
pub fn chunk_nulls(dtype: &Datatype, stored: Bytes) -> Result<Option<Nulls>> {
    let footer = Footer::of_whole(&stored)?;
    if !footer.may_hold_nulls() {
        return Ok(None);
    }
    let rows = usize::try_from(footer.rows()).unwrap_or(0);
    let batch = footer.read_batch(dtype, &Parts::whole(stored), 0..rows)?;
    let nulls: Nulls = batch
        .columns()
        .iter()
        .map(|c| {
            c.nulls()
                .filter(|n| n.null_count() > 0)
                .map(|n| n.iter().map(|valid| !valid).collect())
        })
        .collect();
    Ok(nulls.iter().any(Option::is_some).then_some(nulls))
}

/// The chunk object [`crate::encode_chunk`] makes of the `n` elements in
/// `raw`, with the rows `nulls` names null in each member (rows past a
/// member's list are not).
///
/// # Errors
/// As [`crate::encode_chunk`].
pub fn encode_chunk_with_nulls(
    dtype: &Datatype,
    raw: &[u8],
    n: usize,
    nulls: &Nulls,
    compression: Compression,
) -> Result<Vec<u8>> {
    let batch = rows_to_batch(dtype, raw, n)?;
    let schema = batch.schema();
    let mut fields: Vec<Field> = Vec::with_capacity(schema.fields().len());
    let mut columns: Vec<ArrayRef> = Vec::with_capacity(fields.capacity());
    for (k, (field, column)) in schema.fields().iter().zip(batch.columns()).enumerate() {
        let marks = nulls.get(k).and_then(Option::as_ref);
        match marks.filter(|m| m.iter().take(n).any(|&null| null)) {
            None => {
                fields.push(field.as_ref().clone());
                columns.push(column.clone());
            }
            Some(marks) => {
                let valid: BooleanBuffer = (0..n)
                    .map(|i| !marks.get(i).copied().unwrap_or(false))
                    .collect();
                let data = column
                    .to_data()
                    .into_builder()
                    .nulls(Some(NullBuffer::new(valid)))
                    .build()?;
                fields.push(field.as_ref().clone().with_nullable(true));
                columns.push(make_array(data));
            }
        }
    }
    let batch = crate::batch_with_rows(Arc::new(Schema::new(fields)), columns, n)?;
    encode_batch(dtype, &batch, compression)
}
