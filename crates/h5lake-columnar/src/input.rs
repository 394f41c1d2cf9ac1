//! Parquet files in: one or more files of one schema, read as the rows of
//! a compound dataset (one member per column).
//!
//! Arrow types map onto h5lake's: integers and floats as themselves;
//! booleans as h5py's bool (an enum of int8); strings and binary as
//! variable-length strings (UTF-8 and bytes); fixed-size binary as
//! fixed-length byte strings; timestamps, dates, times and durations as
//! their integer storage, their Arrow type kept by name
//! ([`ParquetInput::arrow_types`]); dictionary columns decoded; structs as
//! nested compounds; lists as variable-length sequences; fixed-size lists
//! as array members. Anything else (maps, unions, decimals, …) is refused
//! by column name before anything is read.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow_array::{ArrayRef, RecordBatch};
use arrow_schema::{DataType, Field, Schema, SchemaRef};
use h5lake_types::{ByteOrder, CharSet, Datatype, StrPad};
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use serde_json::{json, Map, Value};

use crate::arrays::member_type;
use crate::{ColumnarError, Result};

/// Rows read per batch.
const BATCH_ROWS: usize = 65_536;

/// Parquet files to read as one table.
pub struct ParquetInput {
    files: Vec<PathBuf>,
    table: TableSchema,
    rows: u64,
}

/// How a table of some Arrow schema is held as a compound dataset.
#[derive(Clone, Debug)]
pub struct TableSchema {
    dtype: Datatype,
    /// The schema batches are cast to (the members' own Arrow types; every
    /// column nullable).
    target: SchemaRef,
    arrow_types: Map<String, Value>,
}

impl TableSchema {
    /// The compound type of a table of `schema` (one member per column).
    ///
    /// # Errors
    /// No columns; a column type with no HDF5 form (named).
    pub fn of(schema: &Schema) -> Result<Self> {
        let mut notes = Map::new();
        let members = schema
            .fields()
            .iter()
            .map(|f| {
                Ok((
                    f.name().clone(),
                    map_type(f.name(), f.data_type(), true, &mut notes)?,
                ))
            })
            .collect::<Result<Vec<_>>>()?;
        if members.is_empty() {
            return Err(ColumnarError::Unsupported("a table without columns".into()));
        }
        let mut table = Self::for_dtype(&compound(members)?)?;
        table.arrow_types = notes;
        Ok(table)
    }

    /// The table a dataset of the compound `dtype` holds.
    ///
    /// # Errors
    /// A type with no columnar form.
    pub fn for_dtype(dtype: &Datatype) -> Result<Self> {
        let Datatype::Compound { fields, .. } = dtype else {
            return Err(ColumnarError::Unsupported(format!(
                "a table of type {} (tables are compound datasets)",
                dtype.to_json()
            )));
        };
        let target = Arc::new(Schema::new(
            fields
                .iter()
                .map(|f| Ok(Field::new(&f.name, member_type(&f.dtype)?, true)))
                .collect::<Result<Vec<_>>>()?,
        ));
        Ok(Self {
            dtype: dtype.clone(),
            target,
            arrow_types: Map::new(),
        })
    }

    /// The compound type of the rows.
    pub fn dtype(&self) -> &Datatype {
        &self.dtype
    }

    /// The schema of the batches [`TableSchema::cast`] gives.
    pub fn target(&self) -> &SchemaRef {
        &self.target
    }

    /// The Arrow types of the columns held as their integer storage
    /// (timestamps, dates, times, durations), by column name.
    pub fn arrow_types(&self) -> &Map<String, Value> {
        &self.arrow_types
    }

    /// `batch` with each column cast to its member's Arrow type. Its
    /// columns must be the members, by name and in order.
    ///
    /// # Errors
    /// Other columns than the members; values that do not fit.
    pub fn cast(&self, batch: &RecordBatch) -> Result<RecordBatch> {
        let names: Vec<&String> = batch
            .schema_ref()
            .fields()
            .iter()
            .map(|f| f.name())
            .collect();
        let members: Vec<&String> = self.target.fields().iter().map(|f| f.name()).collect();
        if names != members {
            return Err(ColumnarError::Unsupported(format!(
                "columns {names:?} do not match the table's {members:?}"
            )));
        }
        let columns = batch
            .columns()
            .iter()
            .zip(self.target.fields())
            .map(|(c, f)| -> Result<ArrayRef> {
                if c.data_type() == f.data_type() {
                    Ok(c.clone())
                } else {
                    // to the member's own type: a timestamp to its Int64
                    // storage, a dictionary decoded, large offsets to small
                    arrow_cast::cast(c, f.data_type()).map_err(|e| {
                        ColumnarError::Unsupported(format!(
                            "column {:?} of type {} cannot be stored as {}: {e}",
                            f.name(),
                            c.data_type(),
                            f.data_type()
                        ))
                    })
                }
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(RecordBatch::try_new(self.target.clone(), columns)?)
    }
}

fn schema_of(path: &Path) -> Result<(SchemaRef, u64)> {
    let file = File::open(path)
        .map_err(|e| ColumnarError::Unsupported(format!("cannot open {}: {e}", path.display())))?;
    let b = ParquetRecordBatchReaderBuilder::try_new(file).map_err(|e| {
        ColumnarError::Corrupt(format!(
            "{} is not a readable Parquet file: {e}",
            path.display()
        ))
    })?;
    let rows = u64::try_from(b.metadata().file_metadata().num_rows()).unwrap_or(0);
    Ok((b.schema().clone(), rows))
}

fn integer(size: usize, signed: bool) -> Datatype {
    Datatype::Integer {
        size,
        signed,
        order: ByteOrder::Little,
    }
}

/// The h5lake type of a column of Arrow type `t`, and the Arrow type the
/// column is cast to first when that differs (`None`: as it is). Its
/// Arrow type is noted in `notes` when h5lake keeps only its storage.
fn map_type(
    name: &str,
    t: &DataType,
    top: bool,
    notes: &mut Map<String, Value>,
) -> Result<Datatype> {
    let refuse = || {
        ColumnarError::Unsupported(format!(
            "column {name:?}: Arrow type {t} has no HDF5 form in h5lake (maps, unions, \
             decimals, intervals and lists inside lists or structs are not loaded)"
        ))
    };
    let note = |notes: &mut Map<String, Value>| {
        notes.insert(name.to_string(), json!(type_name(t)));
    };
    Ok(match t {
        DataType::Int8 => integer(1, true),
        DataType::Int16 => integer(2, true),
        DataType::Int32 => integer(4, true),
        DataType::Int64 => integer(8, true),
        DataType::UInt8 => integer(1, false),
        DataType::UInt16 => integer(2, false),
        DataType::UInt32 => integer(4, false),
        DataType::UInt64 => integer(8, false),
        DataType::Float16 | DataType::Float32 | DataType::Float64 => Datatype::Float {
            size: t.primitive_width().unwrap_or(8),
            order: ByteOrder::Little,
        },
        DataType::Boolean => Datatype::Enum {
            base: Box::new(integer(1, true)),
            mapping: vec![("FALSE".into(), 0), ("TRUE".into(), 1)],
        },
        DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View if top => Datatype::String {
            length: None,
            charset: CharSet::Utf8,
            pad: StrPad::NullTerm,
        },
        DataType::Binary | DataType::LargeBinary | DataType::BinaryView if top => {
            Datatype::String {
                length: None,
                charset: CharSet::Ascii,
                pad: StrPad::NullTerm,
            }
        }
        DataType::FixedSizeBinary(n) => {
            // Read back as h5py's byte strings (padding cut) unless the
            // table says it was fixed-size binary.
            note(notes);
            Datatype::String {
                length: Some(usize::try_from(*n).map_err(|_| refuse())?),
                charset: CharSet::Ascii,
                pad: StrPad::NullPad,
            }
        }
        DataType::Timestamp(..)
        | DataType::Date64
        | DataType::Time64(_)
        | DataType::Duration(_) => {
            note(notes);
            integer(8, true)
        }
        DataType::Date32 | DataType::Time32(_) => {
            note(notes);
            integer(4, true)
        }
        DataType::Dictionary(_, values) => map_type(name, values, top, notes)?,
        DataType::Struct(fields) => compound(
            fields
                .iter()
                .map(|f| {
                    let inner = format!("{name}.{}", f.name());
                    Ok((
                        f.name().clone(),
                        map_type(&inner, f.data_type(), false, notes)?,
                    ))
                })
                .collect::<Result<Vec<_>>>()?,
        )?,
        DataType::List(item) | DataType::LargeList(item) | DataType::ListView(item) if top => {
            let base = map_type(name, item.data_type(), false, notes)?;
            if base.fixed_size().is_none() {
                return Err(refuse());
            }
            Datatype::Vlen {
                base: Box::new(base),
            }
        }
        DataType::FixedSizeList(item, k) => Datatype::Array {
            base: Box::new(map_type(name, item.data_type(), false, notes)?),
            dims: vec![u64::try_from(*k).map_err(|_| refuse())?],
        },
        _ => return Err(refuse()),
    })
}

/// The name pyarrow gives a temporal type (`timestamp[us, tz=UTC]`,
/// `date32[day]`, `duration[ns]`, …): what a column kept as its integer
/// storage was, so that it can be made that type again.
fn type_name(t: &DataType) -> String {
    use arrow_schema::TimeUnit;
    let unit = |u: &TimeUnit| match u {
        TimeUnit::Second => "s",
        TimeUnit::Millisecond => "ms",
        TimeUnit::Microsecond => "us",
        TimeUnit::Nanosecond => "ns",
    };
    match t {
        DataType::Timestamp(u, None) => format!("timestamp[{}]", unit(u)),
        DataType::Timestamp(u, Some(tz)) => format!("timestamp[{}, tz={tz}]", unit(u)),
        DataType::Date32 => "date32[day]".into(),
        DataType::Date64 => "date64[ms]".into(),
        DataType::Time32(u) => format!("time32[{}]", unit(u)),
        DataType::Time64(u) => format!("time64[{}]", unit(u)),
        DataType::Duration(u) => format!("duration[{}]", unit(u)),
        DataType::FixedSizeBinary(n) => format!("fixed_size_binary[{n}]"),
        other => other.to_string(),
    }
}

/// A compound of `members`, laid out packed as HSDS stores it.
fn compound(members: Vec<(String, Datatype)>) -> Result<Datatype> {
    let fields: Vec<Value> = members
        .iter()
        .map(|(n, t)| json!({"name": n, "type": t.to_json()}))
        .collect();
    Ok(Datatype::from_json(
        &json!({"class": "H5T_COMPOUND", "fields": fields}),
    )?)
}

impl ParquetInput {
    /// Reads the footers of `files` (in that order) and maps their schema.
    ///
    /// # Errors
    /// No files; a file that cannot be opened or is not Parquet; files of
    /// different schemas; a column type with no HDF5 form (named).
    pub fn open(files: &[PathBuf]) -> Result<Self> {
        let Some(first) = files.first() else {
            return Err(ColumnarError::Unsupported("no Parquet files given".into()));
        };
        let (schema, mut rows) = schema_of(first)?;
        for f in &files[1..] {
            let (other, n) = schema_of(f)?;
            if other.fields() != schema.fields() {
                return Err(ColumnarError::Unsupported(format!(
                    "{} has another schema than {} (files loaded as one dataset share one): {other} vs {schema}",
                    f.display(),
                    first.display()
                )));
            }
            rows += n;
        }
        let table = TableSchema::of(&schema).map_err(|e| match e {
            ColumnarError::Unsupported(m) if m == "a table without columns" => {
                ColumnarError::Unsupported(format!("{} has no columns", first.display()))
            }
            e => e,
        })?;
        Ok(ParquetInput {
            files: files.to_vec(),
            table,
            rows,
        })
    }

    /// The compound type of the rows.
    pub fn dtype(&self) -> &Datatype {
        self.table.dtype()
    }

    /// Rows in all the files.
    pub fn num_rows(&self) -> u64 {
        self.rows
    }

    /// The Arrow types of the columns h5lake holds as their integer storage
    /// (timestamps, dates, times, durations), by column name.
    pub fn arrow_types(&self) -> &Map<String, Value> {
        self.table.arrow_types()
    }

    /// Calls `f` with the rows of every file, in order, a batch at a time,
    /// in HSDS's row layout (see [`crate::batch_rows`]; a null reads as
    /// zero or empty), and the number of rows.
    ///
    /// # Errors
    /// A file that cannot be read; what `f` returns.
    pub fn for_each_batch(&self, mut f: impl FnMut(&[u8], usize) -> Result<()>) -> Result<()> {
        let mut buf = Vec::new();
        for path in &self.files {
            let file = File::open(path).map_err(|e| {
                ColumnarError::Unsupported(format!("cannot open {}: {e}", path.display()))
            })?;
            let reader = ParquetRecordBatchReaderBuilder::try_new(file)?
                .with_batch_size(BATCH_ROWS)
                .build()?;
            for batch in reader {
                let batch = batch.map_err(|e| {
                    ColumnarError::Corrupt(format!("reading {}: {e}", path.display()))
                })?;
                let batch = self.table.cast(&batch)?;
                buf.clear();
                crate::batch_rows(
                    self.table.dtype(),
                    batch.columns(),
                    batch.num_rows(),
                    &[],
                    &mut buf,
                )?;
                f(&buf, batch.num_rows())?;
            }
        }
        Ok(())
    }
}
