//! Chunks of plain numbers written through Parquet's column writers
//! directly.
//!
//! `ArrowWriter` hands every leaf column to its column writer as a list of
//! row indices (one `usize` per value, even for a column that cannot hold
//! a null) and gathers the values through it. For the tables scientists
//! write most (rows of ints and floats, no nulls) that list and that gather
//! cost a fifth of a columnar write. A batch whose columns are all
//! non-nullable integers or floats is written here instead, from each
//! column's values as they are: the same schema, Arrow schema metadata,
//! pages, statistics and page index as `ArrowWriter` writes (a test holds
//! the two byte for byte equal).

use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::{
    Float32Type, Float64Type, Int16Type, Int32Type as ArrowInt32, Int64Type as ArrowInt64,
    Int8Type, UInt16Type, UInt32Type, UInt64Type, UInt8Type,
};
use arrow_array::{Array, RecordBatch};
use arrow_schema::DataType;
use parquet::arrow::{add_encoded_arrow_schema_to_metadata, ArrowSchemaConverter};
use parquet::column::writer::ColumnWriter;
use parquet::file::properties::WriterProperties;
use parquet::file::writer::SerializedFileWriter;

use crate::error::Result;

/// Whether [`write`] takes `batch`: some rows, every column a flat,
/// non-nullable integer or float column without nulls. (`ArrowWriter`
/// writes no row group for no rows.)
pub(crate) fn takes(batch: &RecordBatch) -> bool {
    batch.num_columns() > 0
        && batch.num_rows() > 0
        && batch
            .schema()
            .fields()
            .iter()
            .zip(batch.columns())
            .all(|(f, c)| {
                !f.is_nullable()
                    && c.null_count() == 0
                    && matches!(
                        f.data_type(),
                        DataType::Int8
                            | DataType::Int16
                            | DataType::Int32
                            | DataType::Int64
                            | DataType::UInt8
                            | DataType::UInt16
                            | DataType::UInt32
                            | DataType::UInt64
                            | DataType::Float32
                            | DataType::Float64
                    )
            })
}

/// Writes `batch` (one that [`takes`]) as one row group into `out`, as
/// `ArrowWriter` with `props` would.
///
/// # Errors
/// What Parquet's writers report.
pub(crate) fn write(batch: &RecordBatch, props: WriterProperties, out: &mut Vec<u8>) -> Result<()> {
    let schema = batch.schema();
    let descr = ArrowSchemaConverter::new()
        .with_coerce_types(props.coerce_types())
        .convert(&schema)?;
    let mut props = props;
    add_encoded_arrow_schema_to_metadata(&schema, &mut props);
    let mut file = SerializedFileWriter::new(out, descr.root_schema_ptr(), Arc::new(props))?;
    let mut group = file.next_row_group()?;
    for column in batch.columns() {
        let Some(mut writer) = group.next_column()? else {
            unreachable!("the Parquet schema has a leaf per flat column")
        };
        write_column(writer.untyped(), column.as_ref())?;
        writer.close()?;
    }
    group.close()?;
    file.close()?;
    Ok(())
}

/// One column's values, widened or reinterpreted as Parquet stores them
/// (8- and 16-bit integers as INT32; unsigned 32- and 64-bit integers as
/// the signed integers of the same bits, as Arrow's writer and C++ do).
fn write_column(writer: &mut ColumnWriter<'_>, column: &dyn Array) -> Result<()> {
    fn widened<T: arrow_array::ArrowPrimitiveType>(
        column: &dyn Array,
        to_i32: impl Fn(T::Native) -> i32,
    ) -> Vec<i32> {
        column
            .as_primitive::<T>()
            .values()
            .iter()
            .map(|&v| to_i32(v))
            .collect()
    }
    match (writer, column.data_type()) {
        (ColumnWriter::Int32ColumnWriter(w), t) => {
            let owned;
            let values: &[i32] = match t {
                DataType::Int32 => column.as_primitive::<ArrowInt32>().values(),
                DataType::UInt32 => column
                    .as_primitive::<UInt32Type>()
                    .values()
                    .inner()
                    .typed_data(),
                DataType::Int8 => {
                    owned = widened::<Int8Type>(column, i32::from);
                    &owned
                }
                DataType::Int16 => {
                    owned = widened::<Int16Type>(column, i32::from);
                    &owned
                }
                DataType::UInt8 => {
                    owned = widened::<UInt8Type>(column, i32::from);
                    &owned
                }
                DataType::UInt16 => {
                    owned = widened::<UInt16Type>(column, i32::from);
                    &owned
                }
                t => unreachable!("{t} is not stored as INT32"),
            };
            w.write_batch(values, None, None)?;
        }
        (ColumnWriter::Int64ColumnWriter(w), t) => {
            let values: &[i64] = match t {
                DataType::Int64 => column.as_primitive::<ArrowInt64>().values(),
                DataType::UInt64 => column
                    .as_primitive::<UInt64Type>()
                    .values()
                    .inner()
                    .typed_data(),
                t => unreachable!("{t} is not stored as INT64"),
            };
            w.write_batch(values, None, None)?;
        }
        (ColumnWriter::FloatColumnWriter(w), _) => {
            w.write_batch(column.as_primitive::<Float32Type>().values(), None, None)?;
        }
        (ColumnWriter::DoubleColumnWriter(w), _) => {
            w.write_batch(column.as_primitive::<Float64Type>().values(), None, None)?;
        }
        (_, t) => unreachable!("{t} is not a flat number column"),
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::{
        ArrayRef, Float32Array, Float64Array, Int16Array, Int32Array, Int64Array, Int8Array,
        UInt16Array, UInt32Array, UInt64Array, UInt8Array,
    };
    use arrow_schema::{Field, Schema};
    use parquet::arrow::ArrowWriter;
    use parquet::file::properties::EnabledStatistics;

    fn props() -> WriterProperties {
        WriterProperties::builder()
            .set_dictionary_enabled(false)
            .set_max_row_group_row_count(Some(1 << 20))
            .set_statistics_enabled(EnabledStatistics::Page)
            // Small pages, so that the test covers many of them.
            .set_data_page_size_limit(4096)
            .build()
    }

    fn batch(n: usize) -> RecordBatch {
        let i = |k: usize| (k as i64 * 7919 % 1000) - 500;
        let columns: Vec<(&str, ArrayRef)> = vec![
            (
                "i8",
                Arc::new(Int8Array::from_iter_values((0..n).map(|k| i(k) as i8))),
            ),
            (
                "i16",
                Arc::new(Int16Array::from_iter_values((0..n).map(|k| i(k) as i16))),
            ),
            (
                "i32",
                Arc::new(Int32Array::from_iter_values((0..n).map(|k| i(k) as i32))),
            ),
            (
                "i64",
                Arc::new(Int64Array::from_iter_values((0..n).map(|k| i(k) << 40))),
            ),
            (
                "u8",
                Arc::new(UInt8Array::from_iter_values((0..n).map(|k| i(k) as u8))),
            ),
            (
                "u16",
                Arc::new(UInt16Array::from_iter_values((0..n).map(|k| i(k) as u16))),
            ),
            (
                "u32",
                Arc::new(UInt32Array::from_iter_values((0..n).map(|k| i(k) as u32))),
            ),
            (
                "u64",
                Arc::new(UInt64Array::from_iter_values((0..n).map(|k| i(k) as u64))),
            ),
            (
                "f32",
                Arc::new(Float32Array::from_iter_values((0..n).map(|k| {
                    match k % 97 {
                        5 => f32::NAN,
                        6 => -0.0,
                        _ => i(k) as f32 / 3.0,
                    }
                }))),
            ),
            (
                "f64",
                Arc::new(Float64Array::from_iter_values(
                    (0..n).map(|k| i(k) as f64 * 1e300),
                )),
            ),
        ];
        let fields: Vec<Field> = columns
            .iter()
            .map(|(name, c)| Field::new(*name, c.data_type().clone(), false))
            .collect();
        RecordBatch::try_new(
            Arc::new(Schema::new(fields)),
            columns.into_iter().map(|(_, c)| c).collect(),
        )
        .unwrap()
    }

    #[test]
    fn writes_what_arrow_writer_writes() {
        for n in [1, 1000, 50_000] {
            let b = batch(n);
            assert!(takes(&b));
            let mut ours = Vec::new();
            write(&b, props(), &mut ours).unwrap();
            let mut theirs = Vec::new();
            let mut w = ArrowWriter::try_new(&mut theirs, b.schema(), Some(props())).unwrap();
            w.write(&b).unwrap();
            w.close().unwrap();
            let first = ours.iter().zip(&theirs).position(|(a, b)| a != b);
            assert!(
                ours == theirs,
                "{n} rows: the two writers differ at {first:?}, {} vs {} bytes",
                ours.len(),
                theirs.len()
            );
        }
    }

    #[test]
    fn leaves_other_batches_to_arrow_writer() {
        let b = batch(10);
        let nullable = Schema::new(
            b.schema()
                .fields()
                .iter()
                .map(|f| f.as_ref().clone().with_nullable(true))
                .collect::<Vec<_>>(),
        );
        let nullable = RecordBatch::try_new(Arc::new(nullable), b.columns().to_vec()).unwrap();
        assert!(!takes(&nullable));
        let with_text = RecordBatch::try_new(
            Arc::new(Schema::new(vec![Field::new("s", DataType::Utf8, false)])),
            vec![Arc::new(arrow_array::StringArray::from(vec!["a"]))],
        )
        .unwrap();
        assert!(!takes(&with_text));
        assert!(!takes(&RecordBatch::new_empty(b.schema())));
        assert!(!takes(&RecordBatch::new_empty(Arc::new(Schema::empty()))));
    }
}
