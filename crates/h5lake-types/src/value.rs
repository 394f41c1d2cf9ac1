use serde_json::Value;

use crate::{ByteOrder, Datatype, Result, TypeError};

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

fn f16_bits(x: f32) -> u16 {
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
    let mut out = Vec::with_capacity(t.fixed_size().unwrap_or(0));
    encode(t, v, &mut out)?;
    Ok(out)
}

fn encode(t: &Datatype, v: &Value, out: &mut Vec<u8>) -> Result<()> {
    let bad = || TypeError::InvalidValue(format!("{v} for {}", t.to_json()));
    match t {
        Datatype::Integer {
            size,
            signed,
            order,
        } => {
            let i: i128 = match v {
                Value::Number(n) => {
                    if let Some(i) = n.as_i64() {
                        i128::from(i)
                    } else if let Some(u) = n.as_u64() {
                        i128::from(u)
                    } else {
                        let f = n.as_f64().ok_or_else(bad)?;
                        if f.fract() != 0.0 {
                            return Err(bad());
                        }
                        f as i128
                    }
                }
                Value::Bool(b) => i128::from(*b),
                _ => return Err(bad()),
            };
            let bits = (*size * 8) as u32;
            let (lo, hi) = if *signed {
                (-(1i128 << (bits - 1)), (1i128 << (bits - 1)) - 1)
            } else {
                (0, (1i128 << bits) - 1)
            };
            if i < lo || i > hi {
                return Err(bad());
            }
            put_int(out, i, *size, *order);
        }
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
                let (_, n) = mapping.iter().find(|(k, _)| k == s).ok_or_else(bad)?;
                encode(base, &Value::from(*n), out)?;
            }
            _ => encode(base, v, out)?,
        },
        Datatype::String {
            length: Some(n), ..
        } => {
            let s = v.as_str().ok_or_else(bad)?.as_bytes();
            if s.len() > *n {
                return Err(bad());
            }
            out.extend_from_slice(s);
            out.resize(out.len() + n - s.len(), 0);
        }
        Datatype::Reference { size } => {
            let s = v.as_str().unwrap_or("").as_bytes();
            let k = s.len().min(*size);
            out.extend_from_slice(&s[..k]);
            out.resize(out.len() + size - k, 0);
        }
        Datatype::Compound { fields, .. } => match v {
            Value::Array(items) if items.len() == fields.len() => {
                for (f, item) in fields.iter().zip(items) {
                    encode(&f.dtype, item, out)?;
                }
            }
            Value::Object(m) => {
                for f in fields {
                    encode(&f.dtype, m.get(&f.name).ok_or_else(bad)?, out)?;
                }
            }
            _ => return Err(bad()),
        },
        Datatype::Array { base, dims } => {
            let n: u64 = dims.iter().product();
            let mut flat = Vec::new();
            flatten(v, &mut flat);
            if flat.len() as u64 != n {
                return Err(bad());
            }
            for item in flat {
                encode(base, item, out)?;
            }
        }
        Datatype::Opaque { size, .. } => {
            // Opaque values travel as a list of byte values.
            let mut flat = Vec::new();
            flatten(v, &mut flat);
            if flat.len() != *size {
                return Err(bad());
            }
            for b in flat {
                out.push(b.as_u64().filter(|&b| b < 256).ok_or_else(bad)? as u8);
            }
        }
        Datatype::String { length: None, .. } | Datatype::Vlen { .. } => {
            return Err(TypeError::UnsupportedType(
                "fill values of variable-length types".into(),
            ))
        }
    }
    Ok(())
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
}
