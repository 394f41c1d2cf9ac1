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
//! as array members; decimals of precision up to 18 (a column's own, not
//! inside a struct or list) as their unscaled integers (`decimal32` as
//! int32, the others as int64), their Arrow type kept by name. Anything
//! else (maps, unions, decimals of precision above 18, …) is refused by
//! column name before anything is read.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::{
    Decimal128Type, Decimal256Type, Decimal32Type, Decimal64Type, Int32Type, Int64Type,
};
use arrow_array::{Array, ArrayRef, RecordBatch};
use arrow_schema::{DataType, Field, Schema, SchemaRef};
use h5lake_types::{ByteOrder, CharSet, Datatype, StrPad};
use parquet::arrow::arrow_reader::{ArrowReaderOptions, ParquetRecordBatchReaderBuilder};
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
    /// (timestamps, dates, times, durations, decimals), by column name.
    pub fn arrow_types(&self) -> &Map<String, Value> {
        &self.arrow_types
    }

    /// `batch` with each column cast to its member's Arrow type. Its
    /// columns must be the members, by name and in order. A decimal column
    /// gives its unscaled integers (`123.45` of `decimal128(10, 2)` is
    /// 12345), as [`TableSchema::of`] maps it; its scale is the caller's to
    /// keep (`arrow_types`).
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
        let member_types: Vec<&Datatype> = match &self.dtype {
            Datatype::Compound { fields, .. } => fields.iter().map(|f| &f.dtype).collect(),
            _ => Vec::new(),
        };
        let columns = batch
            .columns()
            .iter()
            .zip(self.target.fields())
            .enumerate()
            .map(|(i, (c, f))| -> Result<ArrayRef> {
                if let Some(Datatype::String {
                    length: Some(width),
                    ..
                }) = member_types.get(i)
                {
                    return fixed_text(f.name(), c, *width);
                }
                if c.data_type() == f.data_type() {
                    Ok(c.clone())
                } else if is_decimal(c.data_type()) {
                    unscaled(f.name(), c, f.data_type())
                } else {
                    // to the member's own type: a timestamp to its Int64
                    // storage, a dictionary decoded, large offsets to small
                    strict_cast(c, f.data_type()).map_err(|e| {
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

/// The column `c` for a fixed-length string member of `width` bytes (held
/// as Arrow binary without its trailing NULs): text or bytes, each value at
/// most `width` bytes once its trailing NULs are gone. A longer value is
/// refused rather than kept whole (Parquet readers would see all of it,
/// HDF5 reads its first `width` bytes) or cut (data lost without a word);
/// numbers are refused rather than stored as their bytes.
fn fixed_text(name: &str, c: &ArrayRef, width: usize) -> Result<ArrayRef> {
    let refuse = |why: String| {
        ColumnarError::Unsupported(format!(
            "column {name:?} cannot be stored as a fixed-length string of {width} bytes: {why}"
        ))
    };
    let binary = match c.data_type() {
        DataType::Binary => c.clone(),
        DataType::Utf8
        | DataType::LargeUtf8
        | DataType::Utf8View
        | DataType::LargeBinary
        | DataType::BinaryView
        | DataType::FixedSizeBinary(_)
        | DataType::Null => {
            arrow_cast::cast(c, &DataType::Binary).map_err(|e| refuse(e.to_string()))?
        }
        DataType::Dictionary(_, v)
            if matches!(
                v.as_ref(),
                DataType::Utf8 | DataType::LargeUtf8 | DataType::Binary | DataType::LargeBinary
            ) =>
        {
            arrow_cast::cast(c, &DataType::Binary).map_err(|e| refuse(e.to_string()))?
        }
        other => return Err(refuse(format!("its values are {other}, not text or bytes"))),
    };
    let values = binary.as_binary::<i32>();
    let trimmed = |v: &[u8]| v.iter().rposition(|&b| b != 0).map_or(0, |p| p + 1);
    if let Some((row, v)) = values
        .iter()
        .enumerate()
        .find_map(|(r, v)| v.filter(|v| trimmed(v) > width).map(|v| (r, v)))
    {
        return Err(refuse(format!(
            "row {row} of the rows given holds {} bytes ({:?})",
            trimmed(v),
            String::from_utf8_lossy(&v[..trimmed(v).min(40)])
        )));
    }
    if values.iter().flatten().all(|v| trimmed(v) == v.len()) {
        return Ok(binary);
    }
    Ok(Arc::new(
        values
            .iter()
            .map(|v| v.map(|v| &v[..trimmed(v)]))
            .collect::<arrow_array::BinaryArray>(),
    ))
}

/// `c` cast to `to`, or an error naming the first value that does not
/// survive the cast as it is (what pyarrow's safe cast refuses): text that
/// is no number, a number out of the type's range, a fraction into an
/// integer. Arrow's default cast would turn those into nulls, which read
/// as the fill value: data lost without a word.
pub(crate) fn strict_cast(c: &ArrayRef, to: &DataType) -> std::result::Result<ArrayRef, String> {
    let opts = arrow_cast::CastOptions {
        safe: false,
        ..Default::default()
    };
    let out = arrow_cast::cast_with_options(c, to, &opts).map_err(|e| e.to_string())?;
    if c.data_type().is_floating() && to.is_integer() {
        let f = arrow_cast::cast(c, &DataType::Float64).map_err(|e| e.to_string())?;
        if let Some(v) = f
            .as_primitive::<arrow_array::types::Float64Type>()
            .iter()
            .flatten()
            .find(|v| v.fract() != 0.0)
        {
            return Err(format!("{v} is not a whole number"));
        }
    }
    if c.data_type().is_floating() && to.is_floating() {
        // (A narrower float takes a value past its range as infinity.)
        let wide =
            |a: &ArrayRef| arrow_cast::cast(a, &DataType::Float64).map_err(|e| e.to_string());
        let (before, after) = (wide(c)?, wide(&out)?);
        let before = before.as_primitive::<arrow_array::types::Float64Type>();
        let after = after.as_primitive::<arrow_array::types::Float64Type>();
        if let Some((v, _)) = before
            .iter()
            .zip(after.iter())
            .filter_map(|(b, a)| Some((b?, a?)))
            .find(|(b, a)| b.is_finite() && !a.is_finite())
        {
            return Err(format!("{v} is out of the range of {to}"));
        }
    }
    Ok(out)
}

fn schema_of(path: &Path) -> Result<(SchemaRef, u64)> {
    let file = File::open(path)
        .map_err(|e| ColumnarError::Unsupported(format!("cannot open {}: {e}", path.display())))?;
    let b = ParquetRecordBatchReaderBuilder::try_new(file).map_err(|e| {
        ColumnarError::Source(format!(
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
             intervals and lists inside lists or structs are not loaded)"
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
        DataType::Decimal32(..)
        | DataType::Decimal64(..)
        | DataType::Decimal128(..)
        | DataType::Decimal256(..) => {
            decimal_storage(name, t, top)?;
            note(notes);
            match t {
                DataType::Decimal32(..) => integer(4, true),
                _ => integer(8, true),
            }
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
            // Items are noted as `name[]`: the column itself is a list.
            let base = map_type(&format!("{name}[]"), item.data_type(), false, notes)?;
            if base.fixed_size().is_none() {
                return Err(refuse());
            }
            Datatype::Vlen {
                base: Box::new(base),
            }
        }
        DataType::FixedSizeList(item, k) => Datatype::Array {
            base: Box::new(map_type(
                &format!("{name}[]"),
                item.data_type(),
                false,
                notes,
            )?),
            dims: vec![u64::try_from(*k).map_err(|_| refuse())?],
        },
        _ => return Err(refuse()),
    })
}

/// `schema` with its dictionary-of-decimal columns made plain decimal
/// columns; `None` when it has none.
pub(crate) fn undictionaried_decimals(schema: &SchemaRef) -> Option<SchemaRef> {
    let plain = |f: &Arc<Field>| match f.data_type() {
        DataType::Dictionary(_, values) if is_decimal(values) => Some(Arc::new(
            f.as_ref().clone().with_data_type(values.as_ref().clone()),
        )),
        _ => None,
    };
    if !schema.fields().iter().any(|f| plain(f).is_some()) {
        return None;
    }
    let fields: Vec<Arc<Field>> = schema
        .fields()
        .iter()
        .map(|f| plain(f).unwrap_or_else(|| f.clone()))
        .collect();
    Some(Arc::new(Schema::new_with_metadata(
        fields,
        schema.metadata().clone(),
    )))
}

/// Largest decimal precision whose unscaled values fit an int64.
const MAX_DECIMAL_PRECISION: u8 = 18;

pub(crate) fn is_decimal(t: &DataType) -> bool {
    match t {
        DataType::Decimal32(..)
        | DataType::Decimal64(..)
        | DataType::Decimal128(..)
        | DataType::Decimal256(..) => true,
        DataType::Dictionary(_, values) => is_decimal(values),
        _ => false,
    }
}

/// Checks that a decimal column of type `t` can be held as its unscaled
/// integers: precision at most 18 (they fit an int64), a table's own
/// column (its Arrow type is kept by column name).
fn decimal_storage(name: &str, t: &DataType, top: bool) -> Result<()> {
    let (DataType::Decimal32(p, _)
    | DataType::Decimal64(p, _)
    | DataType::Decimal128(p, _)
    | DataType::Decimal256(p, _)) = t
    else {
        return Ok(());
    };
    let pa = type_name(t);
    let smaller = match t {
        DataType::Decimal256(_, s) | DataType::Decimal128(_, s) => {
            format!("pa.decimal128({MAX_DECIMAL_PRECISION}, {s})")
        }
        _ => String::new(),
    };
    if *p > MAX_DECIMAL_PRECISION {
        return Err(ColumnarError::Unsupported(format!(
            "column {name:?}: Arrow type {pa} has no HDF5 form in h5lake: decimals are held as \
             their unscaled integers, and those of precision {p} need more than 64 bits (HDF5 \
             tools and NumPy have no 128-bit integer); decimals of precision up to \
             {MAX_DECIMAL_PRECISION} are loaded. Cast the column in pyarrow first: to \
             {smaller} (exact if its values fit), to pa.float64() (approximate) or to \
             pa.string() (exact, as text)"
        )));
    }
    if !top {
        return Err(ColumnarError::Unsupported(format!(
            "column {name:?}: Arrow type {pa} inside a struct or list is not loaded (decimals \
             are loaded as a table's own columns); cast it in pyarrow to pa.float64() or \
             pa.string(), or make it a column of its own"
        )));
    }
    Ok(())
}

/// The unscaled integers of the decimal column `c` (of a type
/// [`decimal_storage`] accepts; a dictionary of decimals is decoded
/// first), as the integer type `to`; nulls stay null.
pub(crate) fn unscaled(name: &str, c: &ArrayRef, to: &DataType) -> Result<ArrayRef> {
    let too_big = |v: &dyn std::fmt::Display| {
        ColumnarError::Unsupported(format!(
            "column {name:?} of type {}: unscaled value {v} does not fit an int64 (a value \
             beyond the type's precision)",
            type_name(c.data_type())
        ))
    };
    let ints: ArrayRef = match c.data_type() {
        DataType::Dictionary(_, values) => {
            let decoded = arrow_cast::cast(c, values)?;
            return unscaled(name, &decoded, to);
        }
        DataType::Decimal32(..) => Arc::new(
            c.as_primitive::<Decimal32Type>()
                .reinterpret_cast::<Int32Type>(),
        ),
        DataType::Decimal64(..) => Arc::new(
            c.as_primitive::<Decimal64Type>()
                .reinterpret_cast::<Int64Type>(),
        ),
        DataType::Decimal128(..) => Arc::new(
            c.as_primitive::<Decimal128Type>()
                .try_unary::<_, Int64Type, _>(|v| i64::try_from(v).map_err(|_| too_big(&v)))?,
        ),
        DataType::Decimal256(..) => Arc::new(
            c.as_primitive::<Decimal256Type>()
                .try_unary::<_, Int64Type, _>(|v| {
                    v.to_i128()
                        .and_then(|x| i64::try_from(x).ok())
                        .ok_or_else(|| too_big(&v))
                })?,
        ),
        other => {
            return Err(ColumnarError::Unsupported(format!(
                "column {name:?} of type {other} is not a decimal"
            )))
        }
    };
    if ints.data_type() == to {
        return Ok(ints);
    }
    let cast = arrow_cast::cast_with_options(
        &ints,
        to,
        &arrow_cast::CastOptions {
            safe: false,
            ..Default::default()
        },
    );
    cast.map_err(|e| {
        ColumnarError::Unsupported(format!(
            "column {name:?} of type {}: its unscaled integers cannot be stored as {to}: {e}",
            type_name(c.data_type())
        ))
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
        DataType::Decimal32(p, s) => format!("decimal32({p}, {s})"),
        DataType::Decimal64(p, s) => format!("decimal64({p}, {s})"),
        DataType::Decimal128(p, s) => format!("decimal128({p}, {s})"),
        DataType::Decimal256(p, s) => format!("decimal256({p}, {s})"),
        other => other.to_string(),
    }
}

/// A compound of `members`, laid out packed as HSDS stores it.
fn compound(members: Vec<(String, Datatype)>) -> Result<Datatype> {
    // (Parquet and Arrow allow two columns of one name; an HDF5 compound
    // does not: said here as what it is, not as a damaged type.)
    let twice = members
        .iter()
        .enumerate()
        .find_map(|(i, (n, _))| members[..i].iter().any(|(m, _)| m == n).then_some(n));
    if let Some(name) = twice {
        return Err(ColumnarError::Unsupported(format!(
            "two columns are named {name:?}: the members of an HDF5 compound type need \
             distinct names; rename one of them"
        )));
    }
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
    /// (timestamps, dates, times, durations, decimals), by column name.
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
        self.for_each_record_batch(|batch| {
            buf.clear();
            crate::batch_rows(
                self.table.dtype(),
                batch.columns(),
                batch.num_rows(),
                &[],
                &mut buf,
            )?;
            f(&buf, batch.num_rows())
        })
    }

    /// Calls `f` with the rows of every file, in order, a record batch at
    /// a time, cast to the members' Arrow types (nulls kept; see
    /// [`TableSchema::cast`]).
    ///
    /// # Errors
    /// A file that cannot be read; what `f` returns.
    pub fn for_each_record_batch(
        &self,
        mut f: impl FnMut(RecordBatch) -> Result<()>,
    ) -> Result<()> {
        self.record_batches().try_for_each(|b| f(b?))
    }

    /// The rows of every file, in order, a record batch at a time, cast to
    /// the members' Arrow types (nulls kept; see [`TableSchema::cast`]).
    pub fn record_batches(&self) -> impl Iterator<Item = Result<RecordBatch>> + '_ {
        self.files.iter().flat_map(move |path| {
            let reader = match Self::reader(path) {
                Ok(r) => r,
                Err(e) => return Box::new(std::iter::once(Err(e))) as Box<dyn Iterator<Item = _>>,
            };
            Box::new(reader.map(move |batch| {
                let batch = batch.map_err(|e| {
                    ColumnarError::Source(format!("reading {}: {e}", path.display()))
                })?;
                self.table.cast(&batch)
            }))
        })
    }

    fn reader(path: &Path) -> Result<parquet::arrow::arrow_reader::ParquetRecordBatchReader> {
        let open = || {
            File::open(path).map_err(|e| {
                ColumnarError::Unsupported(format!("cannot open {}: {e}", path.display()))
            })
        };
        let mut builder = ParquetRecordBatchReaderBuilder::try_new(open()?)?;
        if let Some(schema) = undictionaried_decimals(builder.schema()) {
            // Arrow's reader does not make dictionaries of decimals: read
            // the values.
            builder = ParquetRecordBatchReaderBuilder::try_new_with_options(
                open()?,
                ArrowReaderOptions::new().with_schema(schema),
            )?;
        }
        Ok(builder.with_batch_size(BATCH_ROWS).build()?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::{
        Decimal128Array, Decimal256Array, Decimal32Array, Decimal64Array, DictionaryArray,
        Int64Array,
    };
    use arrow_buffer::i256;

    fn member_types(t: &TableSchema) -> Vec<(String, usize)> {
        let Datatype::Compound { fields, .. } = t.dtype() else {
            panic!("not a compound")
        };
        fields
            .iter()
            .map(|f| match f.dtype {
                Datatype::Integer {
                    size, signed: true, ..
                } => (f.name.clone(), size),
                ref other => panic!("{} is {}", f.name, other.to_json()),
            })
            .collect()
    }

    #[test]
    fn decimals_are_their_unscaled_integers_with_their_type_kept() {
        let d128 = Decimal128Array::from(vec![Some(12_345), None, Some(-99_999_999_999)])
            .with_precision_and_scale(18, 2)
            .unwrap();
        let d32 = Decimal32Array::from(vec![Some(-5), Some(7), None])
            .with_precision_and_scale(5, 1)
            .unwrap();
        let d64 = Decimal64Array::from(vec![None, Some(1), Some(-1)])
            .with_precision_and_scale(12, 0)
            .unwrap();
        let d256 = Decimal256Array::from(vec![Some(i256::from_i128(-3)), None, Some(i256::ONE)])
            .with_precision_and_scale(10, -2)
            .unwrap();
        let dict = DictionaryArray::<Int32Type>::try_new(
            vec![1, 0, 1].into(),
            Arc::new(
                Decimal128Array::from(vec![100, -250])
                    .with_precision_and_scale(9, 3)
                    .unwrap(),
            ),
        )
        .unwrap();
        let batch = RecordBatch::try_from_iter(vec![
            ("d128", Arc::new(d128) as ArrayRef),
            ("d32", Arc::new(d32) as ArrayRef),
            ("d64", Arc::new(d64) as ArrayRef),
            ("d256", Arc::new(d256) as ArrayRef),
            ("dict", Arc::new(dict) as ArrayRef),
        ])
        .unwrap();
        let table = TableSchema::of(batch.schema_ref()).unwrap();
        assert_eq!(
            member_types(&table),
            [
                ("d128", 8),
                ("d32", 4),
                ("d64", 8),
                ("d256", 8),
                ("dict", 8)
            ]
            .map(|(n, s)| (n.to_string(), s))
        );
        assert_eq!(
            Value::Object(table.arrow_types().clone()),
            json!({"d128": "decimal128(18, 2)", "d32": "decimal32(5, 1)",
                   "d64": "decimal64(12, 0)", "d256": "decimal256(10, -2)",
                   "dict": "decimal128(9, 3)"})
        );
        let cast = table.cast(&batch).unwrap();
        let ints = |i: usize| -> Vec<Option<i64>> {
            let c = arrow_cast::cast(cast.column(i), &DataType::Int64).unwrap();
            c.as_primitive::<Int64Type>().iter().collect()
        };
        assert_eq!(ints(0), [Some(12_345), None, Some(-99_999_999_999)]);
        assert_eq!(cast.column(1).data_type(), &DataType::Int32);
        assert_eq!(ints(1), [Some(-5), Some(7), None]);
        assert_eq!(ints(2), [None, Some(1), Some(-1)]);
        assert_eq!(ints(3), [Some(-3), None, Some(1)]);
        assert_eq!(ints(4), [Some(-250), Some(100), Some(-250)]);
        // HSDS's rows: a null is zero.
        let mut rows = Vec::new();
        crate::batch_rows(table.dtype(), cast.columns(), 3, &[], &mut rows).unwrap();
        assert_eq!(&rows[..8], &12_345i64.to_le_bytes());
        assert_eq!(&rows[36..44], &[0; 8]);
    }

    #[test]
    fn a_value_beyond_the_precision_is_refused_not_wrapped() {
        // Arrow does not check values against the precision when it makes
        // an array; the cast does.
        let big = Decimal128Array::from(vec![i128::from(i64::MAX) + 1])
            .with_precision_and_scale(18, 0)
            .unwrap();
        let batch = RecordBatch::try_from_iter(vec![("x", Arc::new(big) as ArrayRef)]).unwrap();
        let table = TableSchema::of(batch.schema_ref()).unwrap();
        let e = table.cast(&batch).unwrap_err().to_string();
        assert!(e.contains("\"x\"") && e.contains("does not fit"), "{e}");
        // A table of plain integers takes a decimal's unscaled integers.
        let ints =
            TableSchema::of(&Schema::new(vec![Field::new("x", DataType::Int64, true)])).unwrap();
        let small = Decimal128Array::from(vec![Some(-7), None])
            .with_precision_and_scale(4, 1)
            .unwrap();
        let batch = RecordBatch::try_from_iter(vec![("x", Arc::new(small) as ArrayRef)]).unwrap();
        let got = ints.cast(&batch).unwrap();
        let got: &Int64Array = got.column(0).as_primitive();
        assert_eq!(got.iter().collect::<Vec<_>>(), [Some(-7), None]);
    }

    #[test]
    fn wide_or_nested_decimals_are_refused_by_name_with_advice() {
        for t in [DataType::Decimal128(19, 2), DataType::Decimal256(40, 0)] {
            let s = Schema::new(vec![Field::new("amount", t, true)]);
            let e = TableSchema::of(&s).unwrap_err().to_string();
            assert!(e.contains("\"amount\"") && e.contains("precision"), "{e}");
            assert!(
                e.contains("pa.float64()") && e.contains("pa.decimal128(18"),
                "{e}"
            );
        }
        let inner =
            DataType::Struct(vec![Field::new("d", DataType::Decimal128(5, 2), true)].into());
        let s = Schema::new(vec![Field::new("s", inner, true)]);
        let e = TableSchema::of(&s).unwrap_err().to_string();
        assert!(
            e.contains("\"s.d\"") && e.contains("inside a struct or list"),
            "{e}"
        );
        let list = DataType::List(Arc::new(Field::new(
            "item",
            DataType::Decimal64(5, 2),
            true,
        )));
        let e = TableSchema::of(&Schema::new(vec![Field::new("l", list, true)]))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("\"l[]\"") && e.contains("inside a struct or list"),
            "{e}"
        );
    }
}
