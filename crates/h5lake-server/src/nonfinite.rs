//! JSON answers that hold float values which may be NaN or infinite.
//!
//! Strict JSON has no spelling for them. HSDS writes Python's bare tokens
//! (`NaN`, `Infinity`, `-Infinity`), which Python's `json` and h5pyd read
//! back as floats, and with `ignore_nan=1` writes `null` instead, for
//! clients whose parser is strict. h5lake's documents keep them as the
//! strings `"NaN"`, … (serde_json's `Value` cannot hold them); a string is
//! a non-finite float only where the type says the element is a float, so
//! the answer is written knowing where its typed values sit.

use h5lake_types::Datatype;
use serde_json::Value;

use crate::routes::Ctx;

/// How non-finite floats are spelled in an answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum NonFinite {
    /// `NaN`, `Infinity`, `-Infinity`: HSDS's default.
    Bare,
    /// `null`: asked for with `ignore_nan=1`.
    Null,
    /// `"nan"`, `"inf"`, `"-inf"`.
    Text,
}

impl NonFinite {
    pub(crate) fn of(ctx: &Ctx) -> Self {
        if ctx.flag("ignore_nan") {
            Self::Null
        } else {
            Self::Bare
        }
    }
}

/// A value of `dtype` nested `rank` lists deep at JSON pointer `pointer` of
/// an answer.
pub(crate) struct TypedAt {
    pub pointer: String,
    pub dtype: Datatype,
    pub rank: usize,
    /// Under `ignore_nan`, non-finite values as Python's text (`"nan"`,
    /// `"inf"`, `"-inf"`) rather than `null`: HSDS's form for a fill value,
    /// which a client can send back as it is.
    pub text_under_null: bool,
}

impl TypedAt {
    pub(crate) fn new(pointer: impl Into<String>, dtype: Datatype, rank: usize) -> Self {
        Self {
            pointer: pointer.into(),
            dtype,
            rank,
            text_under_null: false,
        }
    }

    /// An attribute's value (its JSON form: `type` and `shape` beside it),
    /// or `None` when the attribute's type or shape cannot be read (its
    /// value is then written as stored).
    pub(crate) fn attribute(pointer: impl Into<String>, attr: &Value) -> Option<Self> {
        let dtype = Datatype::from_json(attr.get("type")?).ok()?;
        let shape = h5lake_types::Shape::from_json(attr.get("shape")?).ok()?;
        Some(Self::new(
            pointer,
            dtype,
            h5lake_types::value_dims(&shape).len(),
        ))
    }
}

/// The typed values of an object or attribute answer: the value of an
/// attribute (`type`, `shape` and `value` side by side), a dataset's
/// `creationProperties.fillValue`, and the attributes listed under
/// `attributes` (a list, a map by name, or a map of lists by object id).
pub(crate) fn typed_in(doc: &Value) -> Vec<TypedAt> {
    let mut out = Vec::new();
    if doc.get("value").is_some() {
        out.extend(TypedAt::attribute("/value", doc));
    }
    let fill = doc.pointer("/creationProperties/fillValue");
    let encoded = doc
        .pointer("/creationProperties/fillValue_encoding")
        .is_some();
    if let (Some(_), false, Some(t)) = (fill, encoded, doc.get("type")) {
        if let Ok(dtype) = Datatype::from_json(t) {
            out.push(TypedAt {
                text_under_null: true,
                ..TypedAt::new("/creationProperties/fillValue", dtype, 0)
            });
        }
    }
    let mut attrs = |at: String, v: &Value| {
        if v.get("value").is_some() {
            out.extend(TypedAt::attribute(format!("{at}/value"), v));
        }
    };
    let key = |k: &str| k.replace('~', "~0").replace('/', "~1");
    match doc.get("attributes") {
        Some(Value::Array(a)) => {
            for (i, v) in a.iter().enumerate() {
                attrs(format!("/attributes/{i}"), v);
            }
        }
        Some(Value::Object(m)) => {
            for (k, v) in m {
                match v {
                    Value::Array(a) => {
                        for (i, v) in a.iter().enumerate() {
                            attrs(format!("/attributes/{}/{i}", key(k)), v);
                        }
                    }
                    v => attrs(format!("/attributes/{}", key(k)), v),
                }
            }
        }
        _ => {}
    }
    out
}

/// The text of `doc`, with the values at `typed` written by their types.
pub(crate) fn to_text(doc: &Value, typed: &[TypedAt], nf: NonFinite) -> Vec<u8> {
    let mut out = Vec::new();
    let typed: Vec<&TypedAt> = typed.iter().filter(|t| has_float(&t.dtype)).collect();
    if typed.is_empty() {
        serde_json::to_writer(&mut out, doc).expect("a JSON value serialises");
    } else {
        write_doc(doc, &mut String::new(), &typed, nf, &mut out);
    }
    out
}

fn write_doc(v: &Value, at: &mut String, typed: &[&TypedAt], nf: NonFinite, out: &mut Vec<u8>) {
    if let Some(t) = typed.iter().find(|t| t.pointer == *at) {
        let nf = match nf {
            NonFinite::Null if t.text_under_null => NonFinite::Text,
            nf => nf,
        };
        return write_value(&t.dtype, v, t.rank, nf, out);
    }
    let len = at.len();
    match v {
        Value::Object(m) => {
            out.push(b'{');
            for (i, (k, x)) in m.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                serde_json::to_writer(&mut *out, k).expect("a string serialises");
                out.push(b':');
                at.push('/');
                at.push_str(&k.replace('~', "~0").replace('/', "~1"));
                write_doc(x, at, typed, nf, out);
                at.truncate(len);
            }
            out.push(b'}');
        }
        Value::Array(a) => {
            out.push(b'[');
            for (i, x) in a.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                at.push('/');
                at.push_str(&i.to_string());
                write_doc(x, at, typed, nf, out);
                at.truncate(len);
            }
            out.push(b']');
        }
        v => serde_json::to_writer(&mut *out, v).expect("a JSON value serialises"),
    }
}

/// Writes `v`, elements of `t` nested `rank` lists deep.
pub(crate) fn write_value(t: &Datatype, v: &Value, rank: usize, nf: NonFinite, out: &mut Vec<u8>) {
    match v {
        Value::Array(a) if rank > 0 => {
            out.push(b'[');
            for (i, x) in a.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_value(t, x, rank - 1, nf, out);
            }
            out.push(b']');
        }
        v => write_element(t, v, nf, out),
    }
}

fn write_element(t: &Datatype, v: &Value, nf: NonFinite, out: &mut Vec<u8>) {
    match (t, v) {
        (Datatype::Float { .. } | Datatype::CustomFloat { .. }, Value::String(s))
            if matches!(s.as_str(), "NaN" | "Infinity" | "-Infinity") =>
        {
            out.extend_from_slice(match (nf, s.as_str()) {
                (NonFinite::Null, _) => b"null",
                (NonFinite::Bare, _) => s.as_bytes(),
                (NonFinite::Text, "NaN") => br#""nan""#,
                (NonFinite::Text, "Infinity") => br#""inf""#,
                (NonFinite::Text, _) => br#""-inf""#,
            });
        }
        (Datatype::Compound { fields, .. }, Value::Array(a)) if a.len() == fields.len() => {
            out.push(b'[');
            for (i, (f, x)) in fields.iter().zip(a).enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_element(&f.dtype, x, nf, out);
            }
            out.push(b']');
        }
        (Datatype::Array { base, dims }, v) => write_value(base, v, dims.len(), nf, out),
        (Datatype::Vlen { base }, v) => write_value(base, v, 1, nf, out),
        (Datatype::Complex { part }, v) => write_value(part, v, 1, nf, out),
        (_, v) => serde_json::to_writer(&mut *out, v).expect("a JSON value serialises"),
    }
}

fn has_float(t: &Datatype) -> bool {
    match t {
        Datatype::Float { .. } | Datatype::CustomFloat { .. } | Datatype::Complex { .. } => true,
        Datatype::Compound { fields, .. } => fields.iter().any(|f| has_float(&f.dtype)),
        Datatype::Array { base, .. } | Datatype::Vlen { base } => has_float(base),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn f64le() -> Datatype {
        Datatype::from_json(&json!("H5T_IEEE_F64LE")).unwrap()
    }

    #[test]
    fn floats_are_bare_where_the_type_says_so() {
        let doc = json!({"name": "NaN", "value": [["NaN", 1.5], ["Infinity", "-Infinity"]]});
        let at = [TypedAt::new("/value", f64le(), 2)];
        let text = String::from_utf8(to_text(&doc, &at, NonFinite::Bare)).unwrap();
        assert_eq!(
            text,
            r#"{"name":"NaN","value":[[NaN,1.5],[Infinity,-Infinity]]}"#
        );
        let text = String::from_utf8(to_text(&doc, &at, NonFinite::Null)).unwrap();
        assert_eq!(text, r#"{"name":"NaN","value":[[null,1.5],[null,null]]}"#);
    }

    #[test]
    fn strings_of_a_compound_stay_strings() {
        let t = Datatype::from_json(&json!({"class": "H5T_COMPOUND", "fields": [
            {"name": "s", "type": {"class": "H5T_STRING", "charSet": "H5T_CSET_ASCII",
                "strPad": "H5T_STR_NULLPAD", "length": 4}},
            {"name": "x", "type": "H5T_IEEE_F32LE"}]}))
        .unwrap();
        let doc = json!({"attributes": [{"value": ["NaN", "NaN"]}]});
        let at = [TypedAt::new("/attributes/0/value", t, 0)];
        let text = String::from_utf8(to_text(&doc, &at, NonFinite::Bare)).unwrap();
        assert_eq!(text, r#"{"attributes":[{"value":["NaN",NaN]}]}"#);
        // A string type: nothing is a float.
        let s = Datatype::from_json(&json!({"class": "H5T_STRING", "charSet": "H5T_CSET_ASCII",
            "strPad": "H5T_STR_NULLPAD", "length": 4}))
        .unwrap();
        let at = [TypedAt::new("/value", s, 1)];
        let doc = json!({"value": ["NaN"]});
        assert_eq!(to_text(&doc, &at, NonFinite::Bare), br#"{"value":["NaN"]}"#);
    }
}
