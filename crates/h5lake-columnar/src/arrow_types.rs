//! The Arrow types of members h5lake holds in another form: a table loaded
//! from Parquet keeps timestamps, dates, times, durations and decimals as
//! their integers and fixed-size binary as fixed-length strings, and names
//! each column's Arrow type in the dataset's `arrow_types` attribute (as
//! pyarrow prints them: `timestamp[ms, tz=UTC]`, `decimal128(10, 2)`).
//! [`restore_arrow_types`] gives such columns their Arrow types back.

use std::sync::Arc;

use arrow_array::{
    Array, ArrayRef, BinaryArray, Decimal128Array, Decimal256Array, Decimal32Array, Decimal64Array,
    FixedSizeBinaryArray, Int64Array, RecordBatch,
};
use arrow_buffer::i256;
use arrow_schema::{DataType, Field, Schema, TimeUnit};
use h5lake_types::Datatype;
use serde_json::{Map, Value};

use crate::{ColumnarError, Result};

/// The Arrow type pyarrow names `name`; `None` for a name this mapping
/// never writes.
pub fn parse_type_name(name: &str) -> Option<DataType> {
    let unit = |u: &str| match u {
        "s" => Some(TimeUnit::Second),
        "ms" => Some(TimeUnit::Millisecond),
        "us" => Some(TimeUnit::Microsecond),
        "ns" => Some(TimeUnit::Nanosecond),
        _ => None,
    };
    if let Some((kind, rest)) = name.split_once('(') {
        let (p, s) = rest.strip_suffix(')')?.split_once(", ")?;
        let (p, s): (u8, i8) = (p.parse().ok()?, s.parse().ok()?);
        return match kind {
            "decimal32" => Some(DataType::Decimal32(p, s)),
            "decimal64" => Some(DataType::Decimal64(p, s)),
            "decimal128" => Some(DataType::Decimal128(p, s)),
            "decimal256" => Some(DataType::Decimal256(p, s)),
            _ => None,
        };
    }
    let (kind, args) = name.strip_suffix(']')?.split_once('[')?;
    let (first, tz) = match args.split_once(", tz=") {
        Some((u, tz)) => (u, Some(tz)),
        None => (args, None),
    };
    match (kind, tz) {
        ("timestamp", tz) if tz.is_none_or(plausible_time_zone) => {
            Some(DataType::Timestamp(unit(first)?, tz.map(Arc::from)))
        }
        ("date32", None) if first == "day" => Some(DataType::Date32),
        ("date64", None) if first == "ms" => Some(DataType::Date64),
        ("time32", None) => Some(DataType::Time32(unit(first)?)),
        ("time64", None) => Some(DataType::Time64(unit(first)?)),
        ("duration", None) => Some(DataType::Duration(unit(first)?)),
        ("fixed_size_binary", None) => Some(DataType::FixedSizeBinary(first.parse().ok()?)),
        _ => None,
    }
}

/// Whether `tz` can name a time zone as Arrow's readers take one: an
/// offset `+HH:MM`/`-HH:MM` within a day, or a zone database name such as
/// `UTC` or `America/New_York` (whether that zone exists is the reader's
/// database's to say; its characters are checked here).
fn plausible_time_zone(tz: &str) -> bool {
    if let Some(offset) = tz.strip_prefix(['+', '-']) {
        let b = offset.as_bytes();
        let two = |i: usize| -> Option<u8> {
            let d = |c: u8| c.is_ascii_digit().then(|| c - b'0');
            Some(d(b[i])? * 10 + d(b[i + 1])?)
        };
        return b.len() == 5
            && b[2] == b':'
            && two(0).is_some_and(|h| h < 24)
            && two(3).is_some_and(|m| m < 60);
    }
    !tz.is_empty()
        && tz.len() <= 64
        && tz.starts_with(|c: char| c.is_ascii_alphabetic())
        && tz
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '/' | '_' | '-' | '+'))
}

/// `batch` (columns of the members of the compound `dtype`) with the
/// columns `types` names (column → pyarrow type name) given those types:
/// integers as temporal values or as a decimal's unscaled integers, byte
/// strings padded back to their fixed size. Nulls stay null; other columns
/// are left as they are.
///
/// # Errors
/// A type name this mapping does not know; values that do not fit it; a
/// fixed size that is not the member's own (`types` is an attribute anyone
/// who may write the dataset may write: a wider size would pad every row).
pub fn restore_arrow_types(
    dtype: &Datatype,
    batch: &RecordBatch,
    types: &Map<String, Value>,
) -> Result<RecordBatch> {
    if types.is_empty() {
        return Ok(batch.clone());
    }
    let schema = batch.schema();
    let mut fields = Vec::with_capacity(batch.num_columns());
    let mut columns = Vec::with_capacity(batch.num_columns());
    for (field, col) in schema.fields().iter().zip(batch.columns()) {
        let Some(name) = types.get(field.name()).and_then(Value::as_str) else {
            fields.push(field.as_ref().clone());
            columns.push(col.clone());
            continue;
        };
        let to = parse_type_name(name).ok_or_else(|| {
            ColumnarError::Unsupported(format!(
                "unknown Arrow type {name:?} for column {:?} in arrow_types",
                field.name()
            ))
        })?;
        if let DataType::FixedSizeBinary(n) = to {
            let width = member_width(dtype, field.name());
            if width != usize::try_from(n).ok() {
                return Err(ColumnarError::Unsupported(format!(
                    "arrow_types names {name} for column {:?}, whose values are {} bytes",
                    field.name(),
                    width.map_or_else(|| "not a fixed number of".to_string(), |w| w.to_string())
                )));
            }
        }
        let col = as_type(col, &to).map_err(|e| {
            ColumnarError::Unsupported(format!("column {:?} as {name}: {e}", field.name()))
        })?;
        fields.push(Field::new(field.name(), to, true));
        columns.push(col);
    }
    crate::batch_with_rows(Arc::new(Schema::new(fields)), columns, batch.num_rows())
}

/// The size of the fixed-length string or opaque member `name` of `dtype`.
fn member_width(dtype: &Datatype, name: &str) -> Option<usize> {
    let Datatype::Compound { fields, .. } = dtype else {
        return None;
    };
    let member = &fields.iter().find(|f| f.name == name)?.dtype;
    match member {
        Datatype::String {
            length: Some(_), ..
        }
        | Datatype::Opaque { .. } => member.fixed_size(),
        _ => None,
    }
}

fn as_type(col: &ArrayRef, to: &DataType) -> Result<ArrayRef> {
    if col.data_type() == to {
        return Ok(col.clone());
    }
    // (A value the named type cannot hold is an error: Arrow's default
    // cast would answer it as a null, or cut a fraction off.)
    let strict = |to: &DataType| {
        crate::input::strict_cast(col, to).map_err(|e| {
            ColumnarError::Unsupported(format!(
                "a value of type {} does not fit the type {to} its arrow_types names: {e}",
                col.data_type()
            ))
        })
    };
    let unscaled = || -> Result<Int64Array> {
        let ints = strict(&DataType::Int64)?;
        Ok(ints
            .as_any()
            .downcast_ref::<Int64Array>()
            .expect("cast to Int64")
            .clone())
    };
    let narrow = |v: i64| -> Result<i32> {
        i32::try_from(v)
            .map_err(|_| ColumnarError::Unsupported(format!("{v} is past a decimal32's digits")))
    };
    Ok(match to {
        DataType::FixedSizeBinary(n) => {
            let size = usize::try_from(*n).unwrap_or(0);
            let bytes = arrow_cast::cast(col, &DataType::Binary)?;
            let bytes = bytes
                .as_any()
                .downcast_ref::<BinaryArray>()
                .expect("cast to Binary");
            // NumPy-style byte strings lose their trailing NULs: put them back.
            let padded = bytes.iter().map(|v| {
                v.map(|b| {
                    let mut b = b.to_vec();
                    b.resize(size.max(b.len()), 0);
                    b
                })
            });
            Arc::new(FixedSizeBinaryArray::try_from_sparse_iter_with_size(
                padded, *n,
            )?)
        }
        DataType::Decimal32(p, s) => {
            let v = unscaled()?;
            let vals = v
                .iter()
                .map(|x| x.map(narrow).transpose())
                .collect::<Result<Vec<_>>>()?;
            Arc::new(Decimal32Array::from(vals).with_precision_and_scale(*p, *s)?)
        }
        DataType::Decimal64(p, s) => {
            let v = unscaled()?;
            Arc::new(Decimal64Array::from_iter(v.iter()).with_precision_and_scale(*p, *s)?)
        }
        DataType::Decimal128(p, s) => {
            let v = unscaled()?;
            Arc::new(
                Decimal128Array::from_iter(v.iter().map(|x| x.map(i128::from)))
                    .with_precision_and_scale(*p, *s)?,
            )
        }
        DataType::Decimal256(p, s) => {
            let v = unscaled()?;
            Arc::new(
                Decimal256Array::from_iter(v.iter().map(|x| x.map(|x| i256::from_i128(x.into()))))
                    .with_precision_and_scale(*p, *s)?,
            )
        }
        _ => strict(to)?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::{Date32Array, Int32Array, TimestampMillisecondArray};
    use serde_json::json;

    #[test]
    fn time_zones_must_be_ones_readers_can_take() {
        for tz in [
            "UTC",
            "America/New_York",
            "Etc/GMT+5",
            "+05:30",
            "-11:00",
            "+00:00",
        ] {
            let name = format!("timestamp[us, tz={tz}]");
            assert!(parse_type_name(&name).is_some(), "{name}");
        }
        for tz in [
            "+99:99",
            "+05:60",
            "+0530",
            "+5:30",
            "",
            "1UTC",
            "a b",
            "Europe/Paris\0",
        ] {
            let name = format!("timestamp[us, tz={tz}]");
            assert_eq!(parse_type_name(&name), None, "{name}");
        }
    }

    #[test]
    fn names_parse_as_pyarrow_prints_them() {
        assert_eq!(
            parse_type_name("timestamp[ms, tz=UTC]"),
            Some(DataType::Timestamp(
                TimeUnit::Millisecond,
                Some("UTC".into())
            ))
        );
        assert_eq!(parse_type_name("date32[day]"), Some(DataType::Date32));
        assert_eq!(
            parse_type_name("time64[ns]"),
            Some(DataType::Time64(TimeUnit::Nanosecond))
        );
        assert_eq!(
            parse_type_name("duration[s]"),
            Some(DataType::Duration(TimeUnit::Second))
        );
        assert_eq!(
            parse_type_name("fixed_size_binary[3]"),
            Some(DataType::FixedSizeBinary(3))
        );
        assert_eq!(
            parse_type_name("decimal128(10, 2)"),
            Some(DataType::Decimal128(10, 2))
        );
        assert_eq!(
            parse_type_name("decimal64(18, -3)"),
            Some(DataType::Decimal64(18, -3))
        );
        for bad in [
            "timestamp[fortnight]",
            "map<string, int64>",
            "decimal128(10)",
            "int64",
            "",
        ] {
            assert_eq!(parse_type_name(bad), None, "{bad}");
        }
    }

    #[test]
    fn columns_get_their_types_back_with_nulls() {
        let batch = RecordBatch::try_from_iter(vec![
            (
                "when",
                Arc::new(Int64Array::from(vec![Some(1000), None])) as ArrayRef,
            ),
            (
                "day",
                Arc::new(Int32Array::from(vec![Some(3), Some(4)])) as ArrayRef,
            ),
            (
                "code",
                Arc::new(BinaryArray::from(vec![Some(&b"a"[..]), Some(&b"abc"[..])])) as ArrayRef,
            ),
            (
                "cents",
                Arc::new(Int64Array::from(vec![Some(-12345), None])) as ArrayRef,
            ),
            (
                "other",
                Arc::new(Int64Array::from(vec![Some(7), Some(8)])) as ArrayRef,
            ),
        ])
        .unwrap();
        let types = json!({"when": "timestamp[ms]", "day": "date32[day]",
                           "code": "fixed_size_binary[3]", "cents": "decimal128(10, 2)"});
        let dtype = Datatype::from_json(&json!({"class": "H5T_COMPOUND", "fields": [
            {"name": "when", "type": "H5T_STD_I64LE"},
            {"name": "day", "type": "H5T_STD_I32LE"},
            {"name": "code", "type": {"class": "H5T_STRING", "charSet": "H5T_CSET_ASCII",
                                      "strPad": "H5T_STR_NULLPAD", "length": 3}},
            {"name": "cents", "type": "H5T_STD_I64LE"},
            {"name": "other", "type": "H5T_STD_I64LE"}]}))
        .unwrap();
        let got = restore_arrow_types(&dtype, &batch, types.as_object().unwrap()).unwrap();
        let when = got
            .column(0)
            .as_any()
            .downcast_ref::<TimestampMillisecondArray>()
            .unwrap();
        assert_eq!((when.value(0), when.is_null(1)), (1000, true));
        assert_eq!(
            got.column(1)
                .as_any()
                .downcast_ref::<Date32Array>()
                .unwrap()
                .value(1),
            4
        );
        let code = got
            .column(2)
            .as_any()
            .downcast_ref::<FixedSizeBinaryArray>()
            .unwrap();
        assert_eq!((code.value(0), code.value(1)), (&b"a\0\0"[..], &b"abc"[..]));
        let cents = got
            .column(3)
            .as_any()
            .downcast_ref::<Decimal128Array>()
            .unwrap();
        assert_eq!(cents.value_as_string(0), "-123.45");
        assert!(cents.is_null(1));
        assert_eq!(got.schema().field(4).data_type(), &DataType::Int64);
        let bad = json!({"other": "no such type"});
        assert!(restore_arrow_types(&dtype, &batch, bad.as_object().unwrap()).is_err());
        // A fixed size other than the member's own (it would pad every
        // row to it), or on a member of no fixed size, is refused.
        for wide in [
            json!({"code": "fixed_size_binary[2000000]"}),
            json!({"code": "fixed_size_binary[2]"}),
            json!({"other": "fixed_size_binary[8]"}),
        ] {
            let err = restore_arrow_types(&dtype, &batch, wide.as_object().unwrap()).unwrap_err();
            assert!(err.to_string().contains("bytes"), "{err}");
        }
    }
}
