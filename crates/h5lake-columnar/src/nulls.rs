//! Nulls through an edit. HDF5-shaped writes carry values only, so a chunk
//! rewritten after a partial write would turn every null it held into the
//! fill value; instead the nulls of the members and rows the write did not
//! touch are read from the old object and put back into the new one.

use std::sync::Arc;

use arrow_array::{make_array, Array, ArrayRef, FixedSizeListArray, StructArray};
use arrow_buffer::{BooleanBuffer, NullBuffer};
use arrow_schema::{DataType, Field, Fields, Schema};
use bytes::Bytes;
use h5lake_types::Datatype;

use crate::read::{Footer, Parts};
use crate::{encode_batch, rows_to_batch, Compression, Result};

/// Where a chunk holds nulls: a member, named by its index among the
/// compound's members and, inside struct members (nested compounds, complex
/// numbers), by the index at each level below (`[2, 0]`: the first member
/// of the third); the items of a fixed-size list (an array member) are its
/// child 0. `rows` says which of its values are null (`true`): one per row
/// of the chunk, and for the items of a list one per item, row by row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NullSite {
    pub path: Vec<usize>,
    pub rows: Vec<bool>,
}

/// Every place of a chunk object that holds a null.
pub type Nulls = Vec<NullSite>;

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
    let mut sites = Nulls::new();
    for (k, column) in batch.columns().iter().enumerate() {
        collect_sites(column.as_ref(), &mut vec![k], &mut sites);
    }
    Ok((!sites.is_empty()).then_some(sites))
}

fn collect_sites(array: &dyn Array, path: &mut Vec<usize>, sites: &mut Nulls) {
    if let Some(nulls) = array.nulls().filter(|n| n.null_count() > 0) {
        sites.push(NullSite {
            path: path.clone(),
            rows: nulls.iter().map(|valid| !valid).collect(),
        });
    }
    if let Some(parent) = array.as_any().downcast_ref::<StructArray>() {
        for (k, child) in parent.columns().iter().enumerate() {
            path.push(k);
            collect_sites(child.as_ref(), path, sites);
            path.pop();
        }
    } else if let Some(list) = array.as_any().downcast_ref::<FixedSizeListArray>() {
        path.push(0);
        collect_sites(list.values().as_ref(), path, sites);
        path.pop();
    }
}

/// The chunk object [`crate::encode_chunk`] makes of the `n` elements in
/// `raw`, with the rows `nulls` names null at each of its sites (rows past
/// a site's list are not).
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
    let sites: Vec<(&[usize], &[bool])> = nulls
        .iter()
        // (A site of list items has a value for each item, more than `n`.)
        .filter(|s| s.rows.contains(&true))
        .map(|s| (s.path.as_slice(), s.rows.as_slice()))
        .collect();
    let mut fields: Vec<Field> = Vec::with_capacity(schema.fields().len());
    let mut columns: Vec<ArrayRef> = Vec::with_capacity(fields.capacity());
    for (k, (field, column)) in schema.fields().iter().zip(batch.columns()).enumerate() {
        let (field, column) = with_nulls(field, column, &below(&sites, k), n)?;
        fields.push(field);
        columns.push(column);
    }
    let batch = crate::batch_with_rows(Arc::new(Schema::new(fields)), columns, n)?;
    encode_batch(dtype, &batch, compression)
}

/// The sites of `sites` under member `k`, their paths taken from there.
fn below<'s>(sites: &[(&'s [usize], &'s [bool])], k: usize) -> Vec<(&'s [usize], &'s [bool])> {
    sites
        .iter()
        .filter_map(|&(path, rows)| match path.split_first() {
            Some((&first, rest)) if first == k => Some((rest, rows)),
            _ => None,
        })
        .collect()
}

/// `column` (of `field`) with the nulls of `sites`, whose paths start at it
/// (an empty path is the column itself).
fn with_nulls(
    field: &Field,
    column: &ArrayRef,
    sites: &[(&[usize], &[bool])],
    n: usize,
) -> Result<(Field, ArrayRef)> {
    if sites.is_empty() {
        return Ok((field.clone(), column.clone()));
    }
    let own = sites
        .iter()
        .find(|(path, _)| path.is_empty())
        .map(|&(_, rows)| validity(rows, n));
    let inner = sites.iter().any(|(path, _)| !path.is_empty());
    if let Some(list) = column
        .as_any()
        .downcast_ref::<FixedSizeListArray>()
        .filter(|_| inner)
    {
        let DataType::FixedSizeList(item, k) = list.data_type() else {
            unreachable!("a fixed-size list has its type")
        };
        let items = n * usize::try_from(*k).unwrap_or(0);
        let (item, values) = with_nulls(item, list.values(), &below(sites, 0), items)?;
        let nulls = own.or_else(|| list.nulls().cloned());
        let column: ArrayRef = Arc::new(FixedSizeListArray::try_new(
            Arc::new(item),
            *k,
            values,
            nulls,
        )?);
        let field = field
            .clone()
            .with_data_type(column.data_type().clone())
            .with_nullable(true);
        return Ok((field, column));
    }
    let column = match column.as_any().downcast_ref::<StructArray>() {
        Some(parent) if inner => {
            let mut fields = Vec::with_capacity(parent.num_columns());
            let mut children = Vec::with_capacity(parent.num_columns());
            for (k, (f, child)) in parent.fields().iter().zip(parent.columns()).enumerate() {
                let (f, child) = with_nulls(f, child, &below(sites, k), n)?;
                fields.push(f);
                children.push(child);
            }
            let nulls = own.or_else(|| parent.nulls().cloned());
            Arc::new(StructArray::try_new(Fields::from(fields), children, nulls)?) as ArrayRef
        }
        _ => match own {
            Some(valid) => make_array(column.to_data().into_builder().nulls(Some(valid)).build()?),
            None => column.clone(),
        },
    };
    let field = field
        .clone()
        .with_data_type(column.data_type().clone())
        .with_nullable(true);
    Ok((field, column))
}

fn validity(rows: &[bool], n: usize) -> NullBuffer {
    let valid: BooleanBuffer = (0..n)
        .map(|i| !rows.get(i).copied().unwrap_or(false))
        .collect();
    NullBuffer::new(valid)
}
