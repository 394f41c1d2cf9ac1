//! Columnar datasets as Arrow tables: batches of fill value, batches made
//! uniform across chunks, and values shown as h5py shows them.

use std::sync::Arc;

use arrow_array::{Array, ArrayRef, BinaryArray, FixedSizeBinaryArray, RecordBatch};
use arrow_schema::{DataType, Field, Schema, SchemaRef};
use h5lake_types::Datatype;

use crate::arrays::member_type;
use crate::{rows_to_batch, ColumnarError, Result};

/// `n` rows of `fill` (one element of the compound `dtype`; zero bytes or
/// empty records when empty), as a batch of [`crate::arrow_schema`].
///
/// # Errors
/// A type with no columnar form.
pub fn fill_batch(dtype: &Datatype, fill: &[u8], n: usize) -> Result<RecordBatch> {
    let one: Vec<u8> = match dtype.fixed_size() {
        Some(size) if fill.len() == size => fill.to_vec(),
        Some(size) => vec![0; size],
        None if !fill.is_empty() => fill.to_vec(),
        None => h5lake_types::record::empty_record(dtype),
    };
    rows_to_batch(dtype, &one.repeat(n), n)
}

/// The schema every batch of a table of `dtype` is given: the members'
/// Arrow types, every column nullable (a chunk may hold nulls).
///
/// # Errors
/// A type with no columnar form.
pub fn table_schema(dtype: &Datatype) -> Result<SchemaRef> {
    let Datatype::Compound { fields, .. } = dtype else {
        return Err(ColumnarError::Unsupported(format!(
            "a table of type {}",
            dtype.to_json()
        )));
    };
    Ok(Arc::new(Schema::new(
        fields
            .iter()
            .map(|f| Ok(Field::new(&f.name, member_type(&f.dtype)?, true)))
            .collect::<Result<Vec<_>>>()?,
    )))
}

/// `batch` (columns of `schema`'s names, in order) with `schema`'s column
/// types, cast where a chunk stored them otherwise (a decimal column, as a
/// linked Parquet file holds it, gives its unscaled integers).
///
/// # Errors
/// Columns missing or of types that do not cast.
pub fn conform(batch: &RecordBatch, schema: &SchemaRef) -> Result<RecordBatch> {
    let columns = schema
        .fields()
        .iter()
        .map(|f| {
            let c = batch.column_by_name(f.name()).ok_or_else(|| {
                ColumnarError::Corrupt(format!("a columnar chunk without column {:?}", f.name()))
            })?;
            conform_column(f.name(), c, f.data_type())
        })
        .collect::<Result<Vec<_>>>()?;
    crate::batch_with_rows(schema.clone(), columns, batch.num_rows())
}

/// Column `c` (named `name`) as Arrow type `to`: itself when it is one,
/// else cast (a decimal gives its unscaled integers).
pub(crate) fn conform_column(name: &str, c: &ArrayRef, to: &DataType) -> Result<ArrayRef> {
    if c.data_type() == to {
        Ok(c.clone())
    } else if crate::input::is_decimal(c.data_type()) {
        crate::input::unscaled(name, c, to)
    } else {
        Ok(arrow_cast::cast(c, to)?)
    }
}

/// `batch` (of the compound `dtype`'s members) with the columns of h5py's
/// booleans as Parquet's BOOLEAN columns, so that DuckDB, Polars and
/// pyarrow reading the chunk objects see booleans, not int8 (reads cast
/// them back: see [`conform_column`]); `None` when there are none.
/// Booleans inside structs and lists stay int8.
///
/// # Errors
/// A column that does not cast.
pub(crate) fn booleans_stored(
    dtype: &Datatype,
    batch: &RecordBatch,
) -> Result<Option<RecordBatch>> {
    let Datatype::Compound { fields, .. } = dtype else {
        return Ok(None);
    };
    let schema = batch.schema();
    let is_bool = |name: &str| {
        fields
            .iter()
            .any(|f| f.name == name && is_h5py_bool(&f.dtype))
    };
    if !schema
        .fields()
        .iter()
        .any(|f| is_bool(f.name()) && f.data_type() != &DataType::Boolean)
    {
        return Ok(None);
    }
    let mut out_fields = Vec::with_capacity(batch.num_columns());
    let mut columns = Vec::with_capacity(batch.num_columns());
    for (f, c) in schema.fields().iter().zip(batch.columns()) {
        if is_bool(f.name()) && f.data_type() != &DataType::Boolean {
            columns.push(arrow_cast::cast(c, &DataType::Boolean)?);
            out_fields.push(f.as_ref().clone().with_data_type(DataType::Boolean));
        } else {
            columns.push(c.clone());
            out_fields.push(f.as_ref().clone());
        }
    }
    crate::batch_with_rows(
        Arc::new(arrow_schema::Schema::new_with_metadata(
            out_fields,
            schema.metadata().clone(),
        )),
        columns,
        batch.num_rows(),
    )
    .map(Some)
}

/// `col`, a column of the member type `dt` as a chunk object stores it,
/// as the member's Arrow type: a BOOLEAN column of h5py's boolean (see
/// [`booleans_stored`]) cast back to its int8.
///
/// # Errors
/// A member type with no Arrow form.
pub(crate) fn boolean_back(dt: &Datatype, col: &ArrayRef) -> Result<ArrayRef> {
    if col.data_type() == &DataType::Boolean && is_h5py_bool(dt) {
        return Ok(arrow_cast::cast(col, &member_type(dt)?)?);
    }
    Ok(col.clone())
}

/// Whether `dt` is h5py's boolean: an enum of a 1-byte integer with just
/// FALSE = 0 and TRUE = 1.
fn is_h5py_bool(dt: &Datatype) -> bool {
    match dt {
        Datatype::Enum { base, mapping } => {
            base.fixed_size() == Some(1)
                && mapping.len() == 2
                && mapping.iter().any(|(n, v)| n == "FALSE" && *v == 0)
                && mapping.iter().any(|(n, v)| n == "TRUE" && *v == 1)
        }
        _ => false,
    }
}

/// The columns of `batch` (the members of the compound `dtype` it names)
/// as h5py shows their values: h5py's booleans as booleans, fixed-length
/// strings as byte strings without their padding (NumPy's `S` type).
///
/// # Errors
/// A column that does not cast.
pub fn present(dtype: &Datatype, batch: &RecordBatch) -> Result<RecordBatch> {
    let Datatype::Compound { fields, .. } = dtype else {
        return Ok(batch.clone());
    };
    let mut out_fields = Vec::with_capacity(batch.num_columns());
    let mut columns = Vec::with_capacity(batch.num_columns());
    for (field, col) in batch.schema_ref().fields().iter().zip(batch.columns()) {
        let member = fields.iter().find(|f| &f.name == field.name());
        let col: ArrayRef = match member.map(|m| &m.dtype) {
            Some(dt) if is_h5py_bool(dt) => arrow_cast::cast(col, &DataType::Boolean)?,
            Some(Datatype::String {
                length: Some(_), ..
            }) if matches!(col.data_type(), DataType::FixedSizeBinary(_)) => unpadded(col.as_ref()),
            _ => col.clone(),
        };
        out_fields.push(Field::new(field.name(), col.data_type().clone(), true));
        columns.push(col);
    }
    crate::batch_with_rows(Arc::new(Schema::new(out_fields)), columns, batch.num_rows())
}

/// Fixed-length strings as variable-length bytes, their trailing NULs cut
/// as NumPy does (space padding is kept, as NumPy keeps it).
fn unpadded(col: &dyn Array) -> ArrayRef {
    let fixed = col
        .as_any()
        .downcast_ref::<FixedSizeBinaryArray>()
        .expect("a fixed-size binary column");
    let values: BinaryArray = (0..fixed.len())
        .map(|i| {
            fixed.is_valid(i).then(|| {
                let v = fixed.value(i);
                let end = v.iter().rposition(|&b| b != 0).map_or(0, |p| p + 1);
                &v[..end]
            })
        })
        .collect();
    Arc::new(values)
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::cast::AsArray;
    use arrow_array::types::Int64Type;
    use arrow_array::Decimal128Array;

    #[test]
    fn conform_gives_a_decimal_column_as_its_unscaled_integers() {
        let d = Decimal128Array::from(vec![Some(-12_345), None, Some(7)])
            .with_precision_and_scale(10, 2)
            .unwrap();
        let batch = RecordBatch::try_from_iter(vec![("price", Arc::new(d) as ArrayRef)]).unwrap();
        let schema = Arc::new(Schema::new(vec![Field::new(
            "price",
            DataType::Int64,
            true,
        )]));
        let got = conform(&batch, &schema).unwrap();
        let got = got.column(0).as_primitive::<Int64Type>();
        assert_eq!(
            got.iter().collect::<Vec<_>>(),
            [Some(-12_345), None, Some(7)]
        );
    }
}
