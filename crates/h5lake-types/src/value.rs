use std::collections::HashMap;

use serde_json::Value;

use crate::limits::MAX_RANK;
use crate::{ByteOrder, CharSet, Datatype, Result, StrPad, TypeError};

/// Name-to-value lookups of the enums met while encoding values, each
/// built the first time a name is looked up in that enum (keyed by the
/// address of its mapping): an enum may have 65,535 names, and scanning
/// them for each element would make encoding many elements quadratic.
pub(crate) type EnumNames<'t> = HashMap<*const Vec<(String, i64)>, HashMap<&'t str, i64>>;

/// Room for `n` more bytes, or an error where a failed allocation would
/// abort the process: `n` derives from client-described types and shapes.
pub(crate) fn reserve(out: &mut Vec<u8>, n: usize) -> Result<()> {
    out.try_reserve_exact(n)
        .map_err(|_| TypeError::InvalidValue(format!("no memory for a value of {n} bytes")))
}

fn check_rank(dims: &[u64]) -> Result<()> {
    if dims.len() > MAX_RANK {
        return Err(TypeError::InvalidValue(format!(
            "a value of rank {} exceeds HDF5's limit of {MAX_RANK} dimensions",
            dims.len()
        )));
    }
    Ok(())
}

fn float_of(v: &Value) -> Option<f64> {
    match v {
        Value::Number(n) => n.as_f64(),
        // serde_json has no NaN/Infinity literals; h5lake writes them as strings.
        Value::String(s) => match s.as_str() {
            "NaN" | "nan" => Some(f64::NAN),
            "Infinity" | "inf" => Some(f64::INFINITY),
            "-Infinity" | "-inf" => Some(f64::NEG_INFINITY),
            _ => None,
        },
        Value::Bool(b) => Some(f64::from(u8::from(*b))),
        _ => None,
    }
}

fn put_int(out: &mut Vec<u8>, v: i128, size: usize, order: ByteOrder) {
    let le = v.to_le_bytes();
    let bytes = &le[..size];
    match order {
        ByteOrder::Little => out.extend_from_slice(bytes),
        ByteOrder::Big => out.extend(bytes.iter().rev()),
    }
}

pub(crate) fn f16_bits(x: f32) -> u16 {
    // Round-to-nearest-even conversion, enough for fill values.
    let bits = x.to_bits();
    let sign = ((bits >> 16) & 0x8000) as u16;
    let exp = ((bits >> 23) & 0xff) as i32;
    let mant = bits & 0x7f_ffff;
    if exp == 0xff {
        return sign | 0x7c00 | if mant != 0 { 0x200 } else { 0 };
    }
    let e = exp - 127 + 15;
    if e >= 0x1f {
        return sign | 0x7c00;
    }
    if e <= 0 {
        if e < -10 {
            return sign;
        }
        let m = (mant | 0x80_0000) >> (1 - e);
        let round = (m >> 12) & 1;
        return sign | ((m >> 13) + round) as u16;
    }
    let round = (mant >> 12) & 1;
    (sign | ((e as u32) << 10) as u16 | (mant >> 13) as u16) + round as u16
}

/// Encodes one element given as HSDS JSON (the form of attribute values and
/// `fillValue`) into its chunk bytes.
///
/// # Errors
/// Values that do not fit the type; variable-length types.
pub fn json_to_element(t: &Datatype, v: &Value) -> Result<Vec<u8>> {
    let mut out = Vec::new();
    reserve(&mut out, t.fixed_size().unwrap_or(0))?;
    encode(t, v, &mut out, &mut EnumNames::new())?;
    Ok(out)
}

/// An integer of `size` bytes; `None` for a value that is not one or does
/// not fit.
fn encode_int(
    v: &Value,
    size: usize,
    signed: bool,
    order: ByteOrder,
    out: &mut Vec<u8>,
) -> Option<()> {
    let i: i128 = match v {
        Value::Number(n) => {
            if let Some(i) = n.as_i64() {
                i128::from(i)
            } else if let Some(u) = n.as_u64() {
                i128::from(u)
            } else {
                let f = n.as_f64()?;
                if f.fract() != 0.0 {
                    return None;
                }
                f as i128
            }
        }
        Value::Bool(b) => i128::from(*b),
        _ => return None,
    };
    let bits = (size * 8) as u32;
    let (lo, hi) = if signed {
        (-(1i128 << (bits - 1)), (1i128 << (bits - 1)) - 1)
    } else {
        (0, (1i128 << bits) - 1)
    };
    (lo..=hi).contains(&i).then(|| put_int(out, i, size, order))
}

pub(crate) fn encode<'t>(
    t: &'t Datatype,
    v: &Value,
    out: &mut Vec<u8>,
    names: &mut EnumNames<'t>,
) -> Result<()> {
    let bad = || TypeError::InvalidValue(format!("{v} for {}", t.to_json()));
    match t {
        Datatype::Bitfield { size, order } => {
            encode_int(v, *size, false, *order, out).ok_or_else(bad)?;
        }
        Datatype::Integer {
            size,
            signed,
            order,
        } => encode_int(v, *size, *signed, *order, out).ok_or_else(bad)?,
        Datatype::CustomFloat { size, order, bits } => match v {
            Value::Object(_) => {
                let b = bytes_of(v).filter(|b| b.len() == *size).ok_or_else(bad)?;
                out.extend_from_slice(&b);
            }
            v => out.extend(bits.encode(float_of(v).ok_or_else(bad)?, *size, *order)),
        },
        Datatype::Float { size, order } => {
            let f = float_of(v).ok_or_else(bad)?;
            let le: Vec<u8> = match size {
                2 => f16_bits(f as f32).to_le_bytes().to_vec(),
                4 => (f as f32).to_le_bytes().to_vec(),
                8 => f.to_le_bytes().to_vec(),
                _ => return Err(bad()),
            };
            match order {
                ByteOrder::Little => out.extend_from_slice(&le),
                ByteOrder::Big => out.extend(le.iter().rev()),
            }
        }
        Datatype::Enum { base, mapping } => match v {
            Value::String(s) => {
                let n = *names
                    .entry(std::ptr::from_ref(mapping))
                    .or_insert_with(|| mapping.iter().map(|(k, n)| (k.as_str(), *n)).collect())
                    .get(s.as_str())
                    .ok_or_else(bad)?;
                encode(base, &Value::from(n), out, names)?;
            }
            _ => encode(base, v, out, names)?,
        },
        Datatype::String {
            length: Some(n),
            charset,
            ..
        } => {
            let s = bytes_of(v).ok_or_else(bad)?;
            // Longer text is cut to the type's length in bytes, as numpy
            // (so h5py) cuts it; UTF-8 text at a character boundary, so
            // that what is kept is still text.
            let mut end = s.len().min(*n);
            if *charset == CharSet::Utf8 && end < s.len() {
                if let Ok(t) = std::str::from_utf8(&s) {
                    while !t.is_char_boundary(end) {
                        end -= 1;
                    }
                }
            }
            let s = &s[..end];
            out.extend_from_slice(s);
            out.resize(out.len() + n - s.len(), 0);
        }
        Datatype::Reference { size, .. } => {
            let s = v.as_str().unwrap_or("").as_bytes();
            let k = s.len().min(*size);
            out.extend_from_slice(&s[..k]);
            out.resize(out.len() + size - k, 0);
        }
        Datatype::Compound { fields, .. } => match v {
            Value::Array(items) if items.len() == fields.len() => {
                for (f, item) in fields.iter().zip(items) {
                    encode(&f.dtype, item, out, names)?;
                }
            }
            Value::Object(m) => {
                for f in fields {
                    encode(&f.dtype, m.get(&f.name).ok_or_else(bad)?, out, names)?;
                }
            }
            // A record of one member may be given as that member's value
            // (as numpy and HSDS take it), where that cannot be mistaken
            // for a list of members.
            v if fields.len() == 1 && !v.is_array() => encode(&fields[0].dtype, v, out, names)?,
            _ => return Err(bad()),
        },
        Datatype::Array { base, dims } => {
            let n: u64 = dims.iter().product();
            // Compound, complex and array values are lists themselves, so
            // their nesting must follow `dims`; scalars may also come as
            // one flat list.
            let items = match **base {
                Datatype::Compound { .. } | Datatype::Complex { .. } | Datatype::Array { .. } => {
                    json_elements(v, dims).map_err(|_| bad())?
                }
                _ => {
                    let mut flat = Vec::new();
                    flatten(v, &mut flat);
                    flat
                }
            };
            if items.len() as u64 != n {
                return Err(bad());
            }
            for item in items {
                encode(base, item, out, names)?;
            }
        }
        Datatype::Opaque { size, .. } if !v.is_array() => {
            // A string (or base64 object) of the bytes, as the Python API writes.
            let mut b = bytes_of(v).ok_or_else(bad)?;
            b.resize(*size, 0);
            out.extend_from_slice(&b);
        }
        Datatype::Opaque { size, .. } => {
            // Or a list of byte values.
            let mut flat = Vec::new();
            flatten(v, &mut flat);
            if flat.len() != *size {
                return Err(bad());
            }
            for b in flat {
                out.push(b.as_u64().filter(|&b| b < 256).ok_or_else(bad)? as u8);
            }
        }
        Datatype::String { length: None, .. }
        | Datatype::Vlen { .. }
        | Datatype::RegionReference => {
            return Err(TypeError::UnsupportedType(
                "fill values of variable-length types".into(),
            ))
        }
        // [re, im] as the compound it is stored as; a bare number is real.
        Datatype::Complex { part } => match v {
            Value::Array(a) if a.len() == 2 => {
                encode(part, &a[0], out, names)?;
                encode(part, &a[1], out, names)?;
            }
            Value::Array(_) => return Err(bad()),
            re => {
                encode(part, re, out, names)?;
                encode(part, &Value::from(0.0), out, names)?;
            }
        },
    }
    Ok(())
}

/// The bytes of a string value: UTF-8 text, or `{"base64": ...}` for bytes
/// that are not UTF-8 (h5lake's JSON convention).
pub fn bytes_of(v: &Value) -> Option<Vec<u8>> {
    use base64::Engine;
    match v {
        Value::String(s) => Some(s.as_bytes().to_vec()),
        Value::Object(m) => base64::engine::general_purpose::STANDARD
            .decode(m.get("base64")?.as_str()?)
            .ok(),
        _ => None,
    }
}

/// `{"base64": ...}` of bytes.
pub(crate) fn bytes_to_json_base64(b: &[u8]) -> Value {
    use base64::Engine;
    serde_json::json!({"base64": base64::engine::general_purpose::STANDARD.encode(b)})
}

/// The JSON value of bytes: a string when they are UTF-8, else
/// `{"base64": ...}`.
pub fn bytes_to_json(b: &[u8]) -> Value {
    use base64::Engine;
    match std::str::from_utf8(b) {
        Ok(s) => Value::String(s.to_string()),
        Err(_) => serde_json::json!({
            "base64": base64::engine::general_purpose::STANDARD.encode(b)
        }),
    }
}

fn get_int(b: &[u8], signed: bool, order: ByteOrder) -> i128 {
    let mut le = [0u8; 16];
    match order {
        ByteOrder::Little => le[..b.len()].copy_from_slice(b),
        ByteOrder::Big => b.iter().rev().enumerate().for_each(|(i, &x)| le[i] = x),
    }
    let v = u128::from_le_bytes(le);
    let bits = b.len() * 8;
    if signed && (v >> (bits - 1)) & 1 == 1 {
        (v | (!0u128 << bits)) as i128
    } else {
        v as i128
    }
}

/// IEEE binary16 to f64 (every half value is exact in f64).
pub fn f16_to_f64(h: u16) -> f64 {
    let sign = if h & 0x8000 != 0 { -1.0 } else { 1.0 };
    let exp = i32::from((h >> 10) & 0x1f);
    let mant = f64::from(h & 0x3ff);
    match exp {
        0 => sign * mant * 2f64.powi(-24),
        0x1f if mant == 0.0 => sign * f64::INFINITY,
        0x1f => f64::NAN,
        e => sign * (1.0 + mant / 1024.0) * 2f64.powi(e - 15),
    }
}

pub(crate) fn float_json(x: f64) -> Value {
    if x.is_nan() {
        Value::from("NaN")
    } else if x.is_infinite() {
        Value::from(if x > 0.0 { "Infinity" } else { "-Infinity" })
    } else {
        Value::from(x)
    }
}

/// The HSDS JSON value of one fixed-size element (the inverse of
/// [`json_to_element`], with the Python API's conventions: non-finite floats
/// as strings, bool enums as `true`/`false`, strings and opaque bytes as text
/// or base64, compounds as lists of member values).
///
/// # Errors
/// Variable-length types, or `b` shorter than the element.
pub fn element_to_json(t: &Datatype, b: &[u8]) -> Result<Value> {
    element_json(t, b, false)
}

fn element_json(t: &Datatype, b: &[u8], short: bool) -> Result<Value> {
    let size = t.fixed_size().ok_or_else(|| {
        TypeError::UnsupportedType("JSON values of variable-length elements".into())
    })?;
    if b.len() < size {
        return Err(TypeError::InvalidValue(format!(
            "{} bytes for an element of {size}",
            b.len()
        )));
    }
    let b = &b[..size];
    Ok(match t {
        Datatype::Bitfield { .. } => {
            return element_json(&t.bitfield_as_integer().expect("a bit field"), b, short)
        }
        Datatype::Integer { signed, order, .. } => {
            let v = get_int(b, *signed, *order);
            if *signed {
                Value::from(v as i64)
            } else {
                Value::from(v as u64)
            }
        }
        Datatype::CustomFloat { order, bits, .. } => bits.to_json_value(b, *order),
        Datatype::Float { size, order } => {
            let mut le = b.to_vec();
            if *order == ByteOrder::Big {
                le.reverse();
            }
            let x = match size {
                2 => f16_to_f64(u16::from_le_bytes([le[0], le[1]])),
                4 => {
                    let x = f32::from_le_bytes(le[..4].try_into().expect("4 bytes"));
                    // The shortest decimal that reads back as this float.
                    match short && x.is_finite() {
                        true => x.to_string().parse().unwrap_or(f64::from(x)),
                        false => f64::from(x),
                    }
                }
                _ => f64::from_le_bytes(le[..8].try_into().expect("8 bytes")),
            };
            float_json(x)
        }
        Datatype::Enum { base, mapping } => {
            let v = element_json(base, b, short)?;
            let is_bool = mapping.len() == 2
                && mapping.iter().any(|(k, v)| k == "FALSE" && *v == 0)
                && mapping.iter().any(|(k, v)| k == "TRUE" && *v == 1);
            match (is_bool, v.as_i64()) {
                (true, Some(i)) => Value::Bool(i != 0),
                _ => v,
            }
        }
        Datatype::String {
            pad,
            length: Some(_),
            ..
        } => {
            let end = match pad {
                StrPad::NullTerm => b.iter().position(|&c| c == 0).unwrap_or(b.len()),
                _ => b.iter().rposition(|&c| c != 0).map_or(0, |p| p + 1),
            };
            bytes_to_json(&b[..end])
        }
        Datatype::Opaque { .. } => bytes_to_json(b),
        Datatype::Reference { .. } => {
            let end = b.iter().position(|&c| c == 0).unwrap_or(b.len());
            bytes_to_json(&b[..end])
        }
        Datatype::Compound { fields, .. } => Value::Array(
            fields
                .iter()
                .map(|f| element_json(&f.dtype, &b[f.offset..], short))
                .collect::<Result<_>>()?,
        ),
        Datatype::Array { base, dims } => {
            let es = base.fixed_size().unwrap_or(0);
            let flat: Vec<Value> = (0..dims.iter().product::<u64>() as usize)
                .map(|i| element_json(base, &b[i * es..], short))
                .collect::<Result<_>>()?;
            nest(flat, dims)
        }
        Datatype::Complex { part } => {
            let half = size / 2;
            Value::Array(vec![
                element_json(part, &b[..half], short)?,
                element_json(part, &b[half..], short)?,
            ])
        }
        Datatype::String { length: None, .. }
        | Datatype::Vlen { .. }
        | Datatype::RegionReference => {
            unreachable!()
        }
    })
}

/// Nests a flat C-order list into lists of `dims` (a bare value for no dims).
pub fn nest(flat: Vec<Value>, dims: &[u64]) -> Value {
    if dims.is_empty() {
        return flat.into_iter().next().unwrap_or(Value::Null);
    }
    if dims.len() == 1 {
        return Value::Array(flat);
    }
    let inner: usize = dims[1..].iter().product::<u64>() as usize;
    let mut it = flat.into_iter();
    Value::Array(
        (0..dims[0])
            .map(|_| nest(it.by_ref().take(inner).collect(), &dims[1..]))
            .collect(),
    )
}

fn flatten<'a>(v: &'a Value, out: &mut Vec<&'a Value>) {
    match v {
        Value::Array(a) => a.iter().for_each(|x| flatten(x, out)),
        other => out.push(other),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn encodes_numbers_and_compounds() {
        let t =
            Datatype::from_json(&json!({"class": "H5T_INTEGER", "base": "H5T_STD_I32BE"})).unwrap();
        assert_eq!(
            json_to_element(&t, &json!(-2)).unwrap(),
            vec![0xff, 0xff, 0xff, 0xfe]
        );
        let u8t = Datatype::from_json(&json!("H5T_STD_U8LE")).unwrap();
        assert!(json_to_element(&u8t, &json!(256)).is_err());
        assert!(json_to_element(&u8t, &json!(-1)).is_err());
        let f =
            Datatype::from_json(&json!({"class": "H5T_FLOAT", "base": "H5T_IEEE_F32LE"})).unwrap();
        assert_eq!(
            json_to_element(&f, &json!(-1.0)).unwrap(),
            (-1.0f32).to_le_bytes().to_vec()
        );
        assert!(f32::from_le_bytes(
            json_to_element(&f, &json!("NaN"))
                .unwrap()
                .try_into()
                .unwrap()
        )
        .is_nan());
        let h = Datatype::from_json(&json!("H5T_IEEE_F16LE")).unwrap();
        assert_eq!(json_to_element(&h, &json!(1.0)).unwrap(), vec![0x00, 0x3c]);
        assert_eq!(json_to_element(&h, &json!(-2.5)).unwrap(), vec![0x00, 0xc1]);
        let c = Datatype::from_json(&json!({"class": "H5T_COMPOUND", "fields": [
            {"name": "a", "type": "H5T_STD_U8LE"}, {"name": "b", "type": "H5T_STD_U16LE"}]}))
        .unwrap();
        assert_eq!(json_to_element(&c, &json!([1, 2])).unwrap(), vec![1, 2, 0]);
    }

    #[test]
    fn element_json_round_trips() {
        let cases = [
            (json!("H5T_STD_I16BE"), json!(-300)),
            (json!("H5T_STD_U64LE"), json!(u64::MAX)),
            (json!("H5T_IEEE_F16LE"), json!(-2.5)),
            (json!("H5T_IEEE_F64BE"), json!("-Infinity")),
            (
                json!({"class": "H5T_STRING", "charSet": "H5T_CSET_ASCII", "strPad": "H5T_STR_NULLPAD", "length": 6}),
                json!("ab"),
            ),
            (
                json!({"class": "H5T_STRING", "charSet": "H5T_CSET_ASCII", "strPad": "H5T_STR_NULLPAD", "length": 3}),
                json!({"base64": "/w=="}),
            ),
            (
                json!({"class": "H5T_ENUM", "base": "H5T_STD_I8LE", "mapping": {"FALSE": 0, "TRUE": 1}}),
                json!(true),
            ),
            (
                json!({"class": "H5T_ARRAY", "base": "H5T_STD_U8LE", "dims": [2, 2]}),
                json!([[1, 2], [3, 4]]),
            ),
            (
                json!({"class": "H5T_COMPOUND", "fields": [
                {"name": "a", "type": "H5T_STD_U8LE"}, {"name": "b", "type": "H5T_IEEE_F32LE"}]}),
                json!([7, 0.5]),
            ),
            // Arrays of list-valued elements, found by the fuzz tests.
            (
                json!({"class": "H5T_ARRAY", "dims": [2], "base": {"class": "H5T_COMPOUND",
                    "fields": [{"name": "a", "type": "H5T_STD_U8LE"}, {"name": "b", "type": "H5T_STD_U8LE"}]}}),
                json!([[1, 2], [3, 4]]),
            ),
            (
                json!({"class": "H5T_ARRAY", "dims": [2], "base": {"class": "H5T_ARRAY", "dims": [2], "base": "H5T_STD_U8LE"}}),
                json!([[1, 2], [3, 4]]),
            ),
        ];
        for (tj, v) in cases {
            let t = Datatype::from_json(&tj).unwrap();
            let b = json_to_element(&t, &v).unwrap();
            assert_eq!(element_to_json(&t, &b).unwrap(), v, "{tj}");
        }
    }
}

// ---- whole values: nested JSON of a shape <-> packed element bytes ----------
//
// The forms attribute documents (and the server's JSON bodies) hold values
// in; the REST server and the VOL connector both translate through these.

/// The dimensions a JSON value of this shape nests in: none for a scalar,
/// whose value is the bare element.
pub fn value_dims(s: &crate::Shape) -> Vec<u64> {
    if *s == crate::Shape::Scalar {
        Vec::new()
    } else {
        s.dims()
    }
}

/// The elements of a nested JSON array of shape `dims`, in C order.
/// Dimensions of extent 1 may be left out, as numpy's broadcasting allows
/// (`[7, 8]` for a 1×2 block).
///
/// # Errors
/// A value whose nesting does not match `dims`, more than
/// [`MAX_RANK`] dims.
pub fn json_elements<'a>(v: &'a Value, dims: &[u64]) -> Result<Vec<&'a Value>> {
    fn walk<'a>(v: &'a Value, dims: &[u64], out: &mut Vec<&'a Value>) -> Result<()> {
        let Some((&n, rest)) = dims.split_first() else {
            out.push(v);
            return Ok(());
        };
        match v {
            Value::Array(a) if a.len() as u64 == n => a.iter().try_for_each(|x| walk(x, rest, out)),
            _ if n == 1 => walk(v, rest, out),
            _ => Err(TypeError::InvalidValue(format!(
                "value does not match the selection shape {dims:?}"
            ))),
        }
    }
    check_rank(dims)?;
    let mut out = Vec::new();
    walk(v, dims, &mut out)?;
    Ok(out)
}

/// Fixed-size elements from a nested JSON value of shape `dims`.
///
/// # Errors
/// A value that does not match the shape or the type.
pub fn json_to_fixed(t: &Datatype, dims: &[u64], v: &Value) -> Result<Vec<u8>> {
    let elems = json_elements(v, dims)?;
    let es = t.fixed_size().unwrap_or(0);
    let n = elems.len().checked_mul(es).ok_or_else(|| {
        TypeError::InvalidValue(format!(
            "{} elements of {es} bytes overflow a byte count",
            elems.len()
        ))
    })?;
    let mut out = Vec::new();
    reserve(&mut out, n)?;
    let mut names = EnumNames::new();
    for e in elems {
        encode(t, e, &mut out, &mut names)?;
    }
    Ok(out)
}

/// Packed fixed-size elements as a nested JSON value of shape `dims`.
///
/// # Errors
/// As [`element_to_json`]; more than [`MAX_RANK`] dims.
pub fn fixed_to_json(t: &Datatype, b: &[u8], dims: &[u64]) -> Result<Value> {
    fixed_json(t, b, dims, false)
}

/// [`fixed_to_json`], with each single-precision float written as the
/// shortest decimal that reads back to it (`0.42`, not
/// `0.41999998688697815`): the form of values a person typed, which is how
/// HSDS keeps attributes.
///
/// # Errors
/// As [`fixed_to_json`].
pub fn fixed_to_json_shortest(t: &Datatype, b: &[u8], dims: &[u64]) -> Result<Value> {
    fixed_json(t, b, dims, true)
}

fn fixed_json(t: &Datatype, b: &[u8], dims: &[u64], short: bool) -> Result<Value> {
    check_rank(dims)?;
    let es = t.fixed_size().unwrap_or(1).max(1);
    let flat = b
        .chunks(es)
        .map(|c| element_json(t, c, short))
        .collect::<Result<Vec<_>>>()?;
    Ok(nest(flat, dims))
}

/// The fill value a dataset's creation properties declare, as the bytes of
/// one element (`None` when none is declared). `fillValue` is the element in
/// JSON, or, with `"fillValue_encoding": "base64"` beside it, the element's
/// own bytes in base64: HSDS's form for fills JSON spells badly (a NaN with
/// a payload, say).
///
/// # Errors
/// A value that does not fit the type; base64 that is not one element.
pub fn declared_fill(t: &Datatype, cprops: &Value) -> Result<Option<Vec<u8>>> {
    use base64::Engine;
    let Some(v) = cprops.get("fillValue").filter(|v| !v.is_null()) else {
        return Ok(None);
    };
    match cprops.get("fillValue_encoding") {
        None | Some(Value::Null) => {}
        Some(Value::String(e)) if e == "base64" => {
            let size = t.fixed_size().ok_or_else(|| {
                TypeError::InvalidValue("a base64 fillValue needs a fixed-size type".into())
            })?;
            let b = v
                .as_str()
                .and_then(|s| base64::engine::general_purpose::STANDARD.decode(s).ok())
                .ok_or_else(|| {
                    TypeError::InvalidValue(format!("fillValue {v} is not base64 text"))
                })?;
            if b.len() != size {
                return Err(TypeError::InvalidValue(format!(
                    "the base64 fillValue holds {} bytes; an element of the type has {size}",
                    b.len()
                )));
            }
            return Ok(Some(b));
        }
        Some(e) => {
            return Err(TypeError::InvalidValue(format!(
                "fillValue_encoding {e} is not known (only \"base64\")"
            )))
        }
    }
    Ok(Some(if t.fixed_size().is_some() {
        json_to_element(t, v)?
    } else {
        vlen_element(t, v)?
    }))
}

/// One variable-length element from JSON: text (or `{"base64": …}`) for
/// strings, a list of base elements for sequences; `null` is empty.
///
/// # Errors
/// A value that does not fit the type.
pub fn vlen_element(t: &Datatype, v: &Value) -> Result<Vec<u8>> {
    vlen_encode(t, v, &mut EnumNames::new())
}

fn vlen_encode<'t>(t: &'t Datatype, v: &Value, names: &mut EnumNames<'t>) -> Result<Vec<u8>> {
    match (t, v) {
        (_, Value::Null) if t.is_top_level_vlen() => Ok(Vec::new()),
        (Datatype::String { .. }, v) => {
            bytes_of(v).ok_or_else(|| TypeError::InvalidValue(format!("invalid string value {v}")))
        }
        (Datatype::RegionReference, v) => region_ref_bytes(v),
        (Datatype::Vlen { base }, Value::Array(a)) => {
            let mut out = Vec::new();
            for x in a {
                crate::record::push(base, x, &mut out, names)?;
            }
            Ok(out)
        }
        (Datatype::Vlen { base }, x) => {
            let mut out = Vec::new();
            crate::record::push(base, x, &mut out, names)?;
            Ok(out)
        }
        _ if t.is_variable() => {
            let mut out = Vec::new();
            crate::record::push(t, v, &mut out, names)?;
            Ok(out)
        }
        _ => Err(TypeError::UnsupportedType(
            "not a variable-length type".into(),
        )),
    }
}

/// The JSON value of one variable-length element's bytes (a top-level
/// string's or sequence's payload, or a record).
///
/// # Errors
/// Bytes that end inside an element.
pub fn vlen_to_json(t: &Datatype, b: &[u8]) -> Result<Value> {
    match t {
        Datatype::Vlen { base } => crate::record::items_json(base, b).map(Value::Array),
        Datatype::String { .. } => Ok(bytes_to_json(b)),
        Datatype::RegionReference => region_ref_json(b),
        _ => crate::record::read_json(t, b, &mut 0),
    }
}

/// The stored bytes of one region reference given as h5json's JSON object
/// (`null` is the null reference): checked, and written in one canonical
/// form so that equal references are equal bytes.
///
/// # Errors
/// Anything but a dataset id with a selection of a known kind whose
/// coordinates are non-negative integers of one rank, at most [`MAX_RANK`].
pub fn region_ref_bytes(v: &Value) -> Result<Vec<u8>> {
    let bad = |why: &str| TypeError::InvalidValue(format!("region reference {v}: {why}"));
    let o = match v {
        Value::Null => return Ok(Vec::new()),
        Value::Object(o) => o,
        _ => return Err(bad("expected an object with id, select_type and selection")),
    };
    let id = o
        .get("id")
        .and_then(Value::as_str)
        .map(|id| id.rsplit('/').next().unwrap_or(id))
        .filter(|id| id.starts_with("d-"))
        .ok_or_else(|| bad("id must name a dataset (d-…)"))?;
    let coords = |x: &Value| -> Result<Vec<u64>> {
        let c = x
            .as_array()
            .ok_or_else(|| bad("a coordinate must be a list"))?;
        if c.len() > MAX_RANK {
            return Err(bad(&format!(
                "coordinates of more than HDF5's {MAX_RANK} dimensions"
            )));
        }
        c.iter()
            .map(|c| {
                c.as_u64()
                    .ok_or_else(|| bad("coordinates are non-negative integers"))
            })
            .collect()
    };
    let kind = o
        .get("select_type")
        .and_then(Value::as_str)
        .unwrap_or("H5S_SEL_ALL");
    let items = || {
        o.get("selection")
            .and_then(Value::as_array)
            .ok_or_else(|| bad("selection must be a list"))
    };
    let mut rank = None;
    let mut same_rank = |c: &[u64]| match rank {
        None => {
            rank = Some(c.len());
            Ok(())
        }
        Some(r) if r == c.len() => Ok(()),
        Some(_) => Err(bad("coordinates of different ranks")),
    };
    let selection = match kind {
        "H5S_SEL_ALL" => None,
        "H5S_SEL_NONE" => Some(Value::Array(Vec::new())),
        "H5S_SEL_POINTS" => {
            let mut pts = Vec::new();
            for p in items()? {
                let c = coords(p)?;
                same_rank(&c)?;
                pts.push(serde_json::json!(c));
            }
            Some(Value::Array(pts))
        }
        // A regular hyperslab of very many blocks, which h5lake writes as
        // HDF5 describes it rather than block by block.
        "H5S_SEL_HYPERSLABS" if o.get("selection").is_none() => {
            let mut part = |k: &str| {
                let c = coords(
                    o.get(k)
                        .ok_or_else(|| bad("a hyperslab needs a selection"))?,
                )?;
                same_rank(&c)?;
                Ok::<_, TypeError>(c)
            };
            let (start, stride, count, block) = (
                part("start")?,
                part("stride")?,
                part("count")?,
                part("block")?,
            );
            if stride.iter().zip(&block).any(|(&s, &b)| b == 0 || s < b) {
                return Err(bad(
                    "a regular hyperslab needs blocks of at least 1, no longer than the stride",
                ));
            }
            let mut out = serde_json::json!({"id": id, "select_type": kind});
            for (k, c) in [
                ("start", start),
                ("stride", stride),
                ("count", count),
                ("block", block),
            ] {
                out[k] = serde_json::json!(c);
            }
            return Ok(out.to_string().into_bytes());
        }
        "H5S_SEL_HYPERSLABS" => {
            let mut blocks = Vec::new();
            for b in items()? {
                let pair = b
                    .as_array()
                    .filter(|p| p.len() == 2)
                    .ok_or_else(|| bad("a block is [start, end]"))?;
                let (start, end) = (coords(&pair[0])?, coords(&pair[1])?);
                same_rank(&start)?;
                same_rank(&end)?;
                if start.iter().zip(&end).any(|(s, e)| s > e) {
                    return Err(bad("a block ends before it starts"));
                }
                blocks.push(serde_json::json!([start, end]));
            }
            Some(Value::Array(blocks))
        }
        other => return Err(bad(&format!("unknown select_type {other}"))),
    };
    let mut out = serde_json::json!({"id": id, "select_type": kind});
    if let Some(sel) = selection {
        out["selection"] = sel;
    }
    Ok(out.to_string().into_bytes())
}

/// h5json's form of a point selection: `flat` holds the points'
/// coordinates one after another, `rank` each (as HDF5's
/// `H5Sget_select_elem_pointlist` gives them).
pub fn region_points_json(flat: &[u64], rank: usize) -> Value {
    let points: Vec<Value> = flat
        .chunks(rank.max(1))
        .map(|c| serde_json::json!(c))
        .collect();
    serde_json::json!({"select_type": "H5S_SEL_POINTS", "selection": points})
}

/// h5json's form of a hyperslab selection given block by block: each
/// block's first corner, then its last (inclusive), `rank` coordinates each
/// (as HDF5's `H5Sget_select_hyper_blocklist` gives them).
pub fn region_blocks_json(flat: &[u64], rank: usize) -> Value {
    let blocks: Vec<Value> = flat
        .chunks((2 * rank).max(1))
        .map(|c| serde_json::json!([&c[..rank.min(c.len())], &c[rank.min(c.len())..]]))
        .collect();
    serde_json::json!({"select_type": "H5S_SEL_HYPERSLABS", "selection": blocks})
}

/// The JSON object of one stored region reference (`null` when empty).
///
/// # Errors
/// Bytes that are not a region reference's JSON text.
pub fn region_ref_json(b: &[u8]) -> Result<Value> {
    if b.is_empty() {
        return Ok(Value::Null);
    }
    serde_json::from_slice(b)
        .map_err(|e| TypeError::InvalidValue(format!("stored region reference: {e}")))
}

/// Variable-length elements from a nested JSON value of shape `dims`.
///
/// # Errors
/// As [`json_elements`] and [`vlen_element`].
pub fn json_to_vlen(t: &Datatype, dims: &[u64], v: &Value) -> Result<Vec<Vec<u8>>> {
    let mut names = EnumNames::new();
    json_elements(v, dims)?
        .into_iter()
        .map(|e| vlen_encode(t, e, &mut names))
        .collect()
}

#[cfg(test)]
mod whole_value_tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn bit_fields_are_marked_unsigned_integers() {
        let t = Datatype::from_json(&json!({"class": "H5T_INTEGER", "base": "H5T_STD_U16BE",
                                            "h5lake": {"class": "H5T_BITFIELD"}}))
        .unwrap();
        assert_eq!(
            t,
            Datatype::Bitfield {
                size: 2,
                order: ByteOrder::Big
            }
        );
        assert_eq!(Datatype::from_json(&t.to_json()).unwrap(), t);
        assert_eq!(
            t.to_json()["base"],
            "H5T_STD_U16BE",
            "clients without the mark see a u16"
        );
        let b = json_to_fixed(&t, &[2], &json!([1, 0x8001])).unwrap();
        assert_eq!(b, vec![0, 1, 0x80, 1]);
        assert_eq!(fixed_to_json(&t, &b, &[2]).unwrap(), json!([1, 0x8001]));
        // the mark on a signed integer is refused rather than dropped
        assert!(
            Datatype::from_json(&json!({"class": "H5T_INTEGER", "base": "H5T_STD_I8LE",
                                            "h5lake": {"class": "H5T_BITFIELD"}}))
            .is_err()
        );
    }

    #[test]
    fn region_references_are_checked_and_kept_in_one_form() {
        let t =
            Datatype::from_json(&json!({"class": "H5T_REFERENCE", "base": "H5T_STD_REF_DSETREG"}))
                .unwrap();
        assert_eq!(t, Datatype::RegionReference);
        assert!(t.is_variable() && t.is_top_level_vlen());
        assert_eq!(Datatype::from_json(&t.to_json()).unwrap(), t);
        let v = json!([
            {"id": "datasets/d-1", "select_type": "H5S_SEL_HYPERSLABS", "selection": [[[0, 1], [2, 3]]]},
            {"id": "d-1", "select_type": "H5S_SEL_POINTS", "selection": [[0, 0], [4, 5]]},
            {"id": "d-1", "select_type": "H5S_SEL_HYPERSLABS",
             "start": [0], "stride": [2], "count": [9], "block": [1]},
            null,
        ]);
        let items = json_to_vlen(&t, &[4], &v).unwrap();
        assert!(items[3].is_empty());
        let back: Vec<Value> = items.iter().map(|i| vlen_to_json(&t, i).unwrap()).collect();
        assert_eq!(back[0]["id"], "d-1", "the collection prefix is dropped");
        assert_eq!(back[1], v[1]);
        assert_eq!(back[2]["count"], json!([9]));
        assert_eq!(back[3], Value::Null);
        // equal references, equal bytes, whatever the key order given
        let reordered =
            json!({"selection": [[0, 0], [4, 5]], "select_type": "H5S_SEL_POINTS", "id": "d-1"});
        assert_eq!(region_ref_bytes(&reordered).unwrap(), items[1]);
        for bad in [
            json!({"id": "g-1", "select_type": "H5S_SEL_ALL"}),
            json!({"select_type": "H5S_SEL_ALL"}),
            json!({"id": "d-1", "select_type": "H5S_SEL_BOXES", "selection": []}),
            json!({"id": "d-1", "select_type": "H5S_SEL_POINTS", "selection": [[0, 0], [1]]}),
            json!({"id": "d-1", "select_type": "H5S_SEL_POINTS", "selection": [[-1, 0]]}),
            json!({"id": "d-1", "select_type": "H5S_SEL_HYPERSLABS", "selection": [[[3], [2]]]}),
            json!({"id": "d-1", "select_type": "H5S_SEL_HYPERSLABS",
                   "start": [0], "stride": [1], "count": [4], "block": [2]}),
            json!("d-1"),
        ] {
            assert!(region_ref_bytes(&bad).is_err(), "{bad} was taken");
        }
    }

    #[test]
    fn fixed_values_round_trip_and_check_their_shape() {
        let t = Datatype::from_json(&json!("H5T_STD_I16LE")).unwrap();
        let b = json_to_fixed(&t, &[2, 2], &json!([[1, 2], [3, 4]])).unwrap();
        assert_eq!(b, vec![1, 0, 2, 0, 3, 0, 4, 0]);
        assert_eq!(
            fixed_to_json(&t, &b, &[2, 2]).unwrap(),
            json!([[1, 2], [3, 4]])
        );
        assert_eq!(json_to_fixed(&t, &[1], &json!(7)).unwrap(), vec![7, 0]);
        assert!(json_to_fixed(&t, &[2], &json!([1])).is_err());
        assert!(json_to_fixed(&t, &[2], &json!(["x", 1])).is_err());
    }

    #[test]
    fn native_complex_is_stored_as_a_marked_compound() {
        let t = Datatype::from_json(&json!({"class": "H5T_COMPOUND",
            "fields": [{"name": "r", "type": "H5T_IEEE_F32BE"}, {"name": "i", "type": "H5T_IEEE_F32BE"}],
            "h5lake": {"class": "H5T_COMPLEX"}}))
        .unwrap();
        assert!(matches!(t, Datatype::Complex { .. }));
        assert_eq!(Datatype::from_json(&t.to_json()).unwrap(), t);
        assert_eq!(t.fixed_size(), Some(8));
        let b = json_to_fixed(&t, &[1], &json!([[1.5, -2.0]])).unwrap();
        assert_eq!(b, [0x3f, 0xc0, 0, 0, 0xc0, 0, 0, 0]);
        assert_eq!(fixed_to_json(&t, &b, &[1]).unwrap(), json!([[1.5, -2.0]]));
        // Without the mark it is the plain compound HSDS and h5py write.
        let mut plain = t.to_json();
        plain.as_object_mut().unwrap().remove("h5lake");
        assert!(matches!(
            Datatype::from_json(&plain).unwrap(),
            Datatype::Compound { .. }
        ));
        let bad = json!({"class": "H5T_COMPOUND", "fields": [{"name": "r", "type": "H5T_IEEE_F32LE"},
            {"name": "i", "type": "H5T_IEEE_F64LE"}], "h5lake": {"class": "H5T_COMPLEX"}});
        assert!(Datatype::from_json(&bad).is_err());
    }

    #[test]
    fn vlen_values() {
        let s = Datatype::from_json(&json!({"class": "H5T_STRING", "charSet": "H5T_CSET_UTF8",
            "length": "H5T_VARIABLE", "strPad": "H5T_STR_NULLTERM"}))
        .unwrap();
        let items = json_to_vlen(&s, &[2], &json!(["ab", null])).unwrap();
        assert_eq!(items, vec![b"ab".to_vec(), Vec::new()]);
        assert_eq!(vlen_to_json(&s, b"ab").unwrap(), json!("ab"));
        let v = Datatype::from_json(&json!({"class": "H5T_VLEN", "base": "H5T_STD_U8LE"})).unwrap();
        assert_eq!(
            json_to_vlen(&v, &[1], &json!([[1, 2]])).unwrap(),
            vec![vec![1, 2]]
        );
        assert_eq!(vlen_to_json(&v, &[1, 2]).unwrap(), json!([1, 2]));
    }
}

#[cfg(test)]
mod cut_text {
    use super::*;
    use serde_json::json;

    #[test]
    fn long_text_is_cut_to_the_type_length() {
        let ascii = Datatype::from_json(&json!({"class": "H5T_STRING", "length": 3,
            "charSet": "H5T_CSET_ASCII", "strPad": "H5T_STR_NULLPAD"}))
        .unwrap();
        assert_eq!(json_to_element(&ascii, &json!("abcdef")).unwrap(), b"abc");
        // UTF-8: never half a character ("八" is three bytes).
        let utf8 = Datatype::from_json(&json!({"class": "H5T_STRING", "length": 4,
            "charSet": "H5T_CSET_UTF8", "strPad": "H5T_STR_NULLPAD"}))
        .unwrap();
        assert_eq!(
            json_to_element(&utf8, &json!("ab\u{516b}")).unwrap(),
            b"ab\0\0"
        );
        assert_eq!(
            json_to_element(&utf8, &json!("a\u{516b}")).unwrap(),
            "a\u{516b}".as_bytes()
        );
    }
}
