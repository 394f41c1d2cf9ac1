//! Elements of types that hold variable-length parts inside a compound, an
//! array or a sequence ("records"), in HSDS's serialized form: the parts
//! one after another in declaration order; a fixed-size part as its bytes;
//! a variable-length string as a 4-byte little-endian byte count and its
//! bytes; a variable-length sequence as a 4-byte byte count and its
//! elements, each serialized the same way. No padding, no alignment.
//!
//! This is the form of such elements in chunks and in binary transfers
//! (HSDS's `arrayToBytes`). Top-level variable-length strings and
//! sequences keep their simpler convention: the engine passes their
//! payload around without the count, which is the count-less tail of this
//! same form.

use serde_json::Value;

use crate::datatype::Datatype;
use crate::error::TypeError;
use crate::value::{bytes_of, bytes_to_json, element_to_json, encode, nest, EnumNames};
use crate::Result;

impl Datatype {
    /// Whether the type is a variable-length string or sequence itself
    /// (rather than a compound or array holding one).
    pub fn is_top_level_vlen(&self) -> bool {
        matches!(
            self,
            Datatype::String { length: None, .. }
                | Datatype::Vlen { .. }
                | Datatype::RegionReference
        )
    }
}

fn truncated() -> TypeError {
    TypeError::InvalidValue("truncated variable-length record".into())
}

/// `n` bytes of `buf` from `pos`; checked, as both come from stored or
/// client-sent bytes.
fn bytes_at(buf: &[u8], pos: usize, n: usize) -> Result<&[u8]> {
    buf.get(pos..)
        .and_then(|rest| rest.get(..n))
        .ok_or_else(truncated)
}

/// The body of the counted part at `buf[pos]`, and the position after it.
fn counted_at(buf: &[u8], pos: usize) -> Result<(&[u8], usize)> {
    let count: [u8; 4] = bytes_at(buf, pos, 4)?.try_into().expect("4 bytes");
    let n = u32::from_le_bytes(count) as usize;
    let body = bytes_at(buf, pos + 4, n)?;
    Ok((body, pos + 4 + n))
}

/// How many bytes the serialized element of `t` starting at `buf[pos]`
/// takes.
///
/// # Errors
/// A buffer that ends inside the element.
pub fn record_len(t: &Datatype, buf: &[u8], pos: usize) -> Result<usize> {
    let end = skip(t, buf, pos)?;
    Ok(end - pos)
}

fn skip(t: &Datatype, buf: &[u8], pos: usize) -> Result<usize> {
    if let Some(n) = t.fixed_size() {
        return bytes_at(buf, pos, n).map(|_| pos + n);
    }
    match t {
        Datatype::String { .. } | Datatype::Vlen { .. } | Datatype::RegionReference => {
            counted_at(buf, pos).map(|(_, end)| end)
        }
        Datatype::Compound { fields, .. } => {
            fields.iter().try_fold(pos, |p, f| skip(&f.dtype, buf, p))
        }
        Datatype::Array { base, dims } => {
            (0..dims.iter().product::<u64>()).try_fold(pos, |p, _| skip(base, buf, p))
        }
        _ => Err(truncated()),
    }
}

/// The element with every fixed-size part zero and every variable-length
/// part empty (what an unwritten element of such a type reads as).
pub fn empty_record(t: &Datatype) -> Vec<u8> {
    let mut out = Vec::new();
    push_empty(t, &mut out);
    out
}

fn push_empty(t: &Datatype, out: &mut Vec<u8>) {
    if let Some(n) = t.fixed_size() {
        out.resize(out.len() + n, 0);
        return;
    }
    match t {
        Datatype::Compound { fields, .. } => fields.iter().for_each(|f| push_empty(&f.dtype, out)),
        Datatype::Array { base, dims } => {
            (0..dims.iter().product::<u64>()).for_each(|_| push_empty(base, out))
        }
        _ => out.extend_from_slice(&0u32.to_le_bytes()),
    }
}

/// Appends the serialized element of `t` given as JSON (a compound as a
/// list of member values, a string as text, a sequence as a list).
///
/// # Errors
/// Values that do not fit the type.
pub fn push_json(t: &Datatype, v: &Value, out: &mut Vec<u8>) -> Result<()> {
    push(t, v, out, &mut EnumNames::new())
}

/// [`push_json`], with the enum lookups of a whole conversion.
pub(crate) fn push<'t>(
    t: &'t Datatype,
    v: &Value,
    out: &mut Vec<u8>,
    names: &mut EnumNames<'t>,
) -> Result<()> {
    if t.fixed_size().is_some() {
        return encode(t, v, out, names);
    }
    let bad = || TypeError::InvalidValue(format!("{v} for {}", t.to_json()));
    match t {
        Datatype::String { .. } => {
            let b = match v {
                Value::Null => Vec::new(),
                v => bytes_of(v).ok_or_else(bad)?,
            };
            push_counted(out, &b)
        }
        Datatype::Vlen { base } => {
            let mut body = Vec::new();
            match v {
                Value::Null => {}
                Value::Array(items) => {
                    for x in items {
                        push(base, x, &mut body, names)?;
                    }
                }
                x => push(base, x, &mut body, names)?,
            }
            push_counted(out, &body)
        }
        Datatype::RegionReference => push_counted(out, &crate::value::region_ref_bytes(v)?),
        Datatype::Compound { fields, .. } => {
            let members: Vec<&Value> = match v {
                Value::Array(a) if a.len() == fields.len() => a.iter().collect(),
                Value::Object(m) => fields
                    .iter()
                    .map(|f| m.get(&f.name).ok_or_else(bad))
                    .collect::<Result<_>>()?,
                _ => return Err(bad()),
            };
            fields
                .iter()
                .zip(members)
                .try_for_each(|(f, m)| push(&f.dtype, m, out, names))
        }
        Datatype::Array { base, dims } => {
            let flat = crate::value::json_elements(v, dims)?;
            flat.into_iter().try_for_each(|x| push(base, x, out, names))
        }
        _ => Err(bad()),
    }
}

fn push_counted(out: &mut Vec<u8>, body: &[u8]) -> Result<()> {
    let n = u32::try_from(body.len())
        .map_err(|_| TypeError::InvalidValue("a variable-length part above 4 GiB".into()))?;
    out.extend_from_slice(&n.to_le_bytes());
    out.extend_from_slice(body);
    Ok(())
}

/// The JSON value of the serialized element of `t` at `buf[*pos]`,
/// advancing `pos` past it.
///
/// # Errors
/// A buffer that ends inside the element.
pub fn read_json(t: &Datatype, buf: &[u8], pos: &mut usize) -> Result<Value> {
    if let Some(n) = t.fixed_size() {
        let b = bytes_at(buf, *pos, n)?;
        *pos += n;
        return element_to_json(t, b);
    }
    match t {
        Datatype::String { .. } => {
            let (body, end) = counted_at(buf, *pos)?;
            *pos = end;
            Ok(bytes_to_json(body))
        }
        Datatype::Vlen { base } => {
            let (body, end) = counted_at(buf, *pos)?;
            *pos = end;
            Ok(Value::Array(items_json(base, body)?))
        }
        Datatype::RegionReference => {
            let (body, end) = counted_at(buf, *pos)?;
            *pos = end;
            crate::value::region_ref_json(body)
        }
        Datatype::Compound { fields, .. } => Ok(Value::Array(
            fields
                .iter()
                .map(|f| read_json(&f.dtype, buf, pos))
                .collect::<Result<_>>()?,
        )),
        Datatype::Array { base, dims } => {
            let flat = (0..dims.iter().product::<u64>())
                .map(|_| read_json(base, buf, pos))
                .collect::<Result<Vec<_>>>()?;
            Ok(nest(flat, dims))
        }
        _ => Err(truncated()),
    }
}

/// The JSON values of a sequence's body: its elements one after another.
///
/// # Errors
/// A body that ends inside an element.
pub fn items_json(base: &Datatype, body: &[u8]) -> Result<Vec<Value>> {
    let mut pos = 0;
    let mut out = Vec::new();
    if base.fixed_size() == Some(0) {
        return Ok(out);
    }
    while pos < body.len() {
        out.push(read_json(base, body, &mut pos)?);
    }
    Ok(out)
}

/// Elements of variable-length type `t` one after another, as chunks and
/// binary transfers hold them: a top-level string's or sequence's payload
/// behind its 4-byte byte count, a record as it is.
pub fn join_elements(t: &Datatype, items: &[Vec<u8>]) -> Vec<u8> {
    let counted = t.is_top_level_vlen();
    let prefix = if counted { 4 } else { 0 };
    let mut out = Vec::with_capacity(items.iter().map(|e| e.len() + prefix).sum());
    for e in items {
        if counted {
            out.extend_from_slice(&(e.len() as u32).to_le_bytes());
        }
        out.extend_from_slice(e);
    }
    out
}

/// The elements of [`join_elements`]'s form, at most `max` of them (fewer
/// when `raw` ends first).
///
/// # Errors
/// Bytes that end inside an element.
pub fn split_elements(t: &Datatype, raw: &[u8], max: usize) -> Result<Vec<Vec<u8>>> {
    let counted = t.is_top_level_vlen();
    let mut out = Vec::with_capacity(max.min(1 << 20));
    let mut pos = 0;
    while pos < raw.len() && out.len() < max {
        let len = record_len(t, raw, pos)?;
        let body = if counted {
            pos + 4..pos + len
        } else {
            pos..pos + len
        };
        out.push(raw[body].to_vec());
        pos += len;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn vstr() -> Value {
        json!({"class": "H5T_STRING", "charSet": "H5T_CSET_UTF8",
               "length": "H5T_VARIABLE", "strPad": "H5T_STR_NULLTERM"})
    }

    #[test]
    fn compound_with_variable_members_round_trips() {
        let t = Datatype::from_json(&json!({"class": "H5T_COMPOUND", "fields": [
            {"name": "id", "type": "H5T_STD_I16LE"},
            {"name": "name", "type": vstr()},
            {"name": "hits", "type": {"class": "H5T_VLEN", "base": "H5T_STD_U8LE"}},
        ]}))
        .unwrap();
        assert!(t.is_variable() && !t.is_top_level_vlen());
        let mut rec = Vec::new();
        push_json(&t, &json!([7, "ab", [1, 2, 3]]), &mut rec).unwrap();
        // HSDS's arrayToBytes form: i16, then count + bytes per variable part.
        assert_eq!(rec, [7, 0, 2, 0, 0, 0, b'a', b'b', 3, 0, 0, 0, 1, 2, 3]);
        assert_eq!(record_len(&t, &rec, 0).unwrap(), rec.len());
        let mut pos = 0;
        assert_eq!(
            read_json(&t, &rec, &mut pos).unwrap(),
            json!([7, "ab", [1, 2, 3]])
        );
        assert_eq!(pos, rec.len());
        assert_eq!(empty_record(&t), [0, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
        assert!(record_len(&t, &rec[..rec.len() - 1], 0).is_err());
    }

    #[test]
    fn sequences_of_records_and_arrays_of_strings() {
        let inner = json!({"class": "H5T_COMPOUND", "fields": [
            {"name": "s", "type": vstr()}, {"name": "x", "type": "H5T_STD_U8LE"}]});
        let t = Datatype::from_json(&json!({"class": "H5T_VLEN", "base": inner})).unwrap();
        let mut rec = Vec::new();
        push_json(&t, &json!([["a", 1], ["", 2]]), &mut rec).unwrap();
        assert_eq!(rec, [11, 0, 0, 0, 1, 0, 0, 0, b'a', 1, 0, 0, 0, 0, 2]);
        let mut pos = 0;
        assert_eq!(
            read_json(&t, &rec, &mut pos).unwrap(),
            json!([["a", 1], ["", 2]])
        );
        let a = Datatype::from_json(&json!({"class": "H5T_ARRAY", "dims": [2], "base": vstr()}))
            .unwrap();
        let mut rec = Vec::new();
        push_json(&a, &json!(["x", "yz"]), &mut rec).unwrap();
        assert_eq!(record_len(&a, &rec, 0).unwrap(), 11);
    }
}
