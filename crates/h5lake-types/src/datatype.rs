use std::collections::HashSet;

use serde_json::Value;

use crate::float::FloatBits;
use crate::limits::{
    MAX_COMPOUND_MEMBERS, MAX_ELEMENT_BYTES, MAX_ENUM_MEMBERS, MAX_RANK, MAX_TYPE_DEPTH,
};
use crate::{Result, TypeError};

/// What an HDF5 element holds for a variable-length string or sequence: a
/// 4-byte length and a global heap id (an 8-byte address, a 4-byte index).
const HDF5_VLEN_BYTES: u64 = 16;

/// What an HDF5 element holds for a dataset region reference
/// (`H5R_DSET_REG_REF_BUF_SIZE`): a global heap id.
const HDF5_REGION_REF_BYTES: u64 = 12;

fn too_big(what: &str) -> TypeError {
    TypeError::InvalidType(format!(
        "{what} exceeds HDF5's element size limit of {MAX_ELEMENT_BYTES} bytes"
    ))
}

/// Byte order of an atomic numeric type.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ByteOrder {
    Little,
    Big,
}

/// Character set of a string type.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CharSet {
    Ascii,
    Utf8,
}

/// Padding of a fixed-length string type.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StrPad {
    NullTerm,
    NullPad,
    SpacePad,
}

/// A member of a compound type; `offset` is its byte offset in the packed
/// element (HSDS stores compound elements without padding).
#[derive(Clone, Debug, PartialEq)]
pub struct Field {
    pub name: String,
    pub dtype: Datatype,
    pub offset: usize,
}

/// An HDF5 datatype as described by HSDS type JSON.
#[derive(Clone, Debug, PartialEq)]
pub enum Datatype {
    Integer {
        size: usize,
        signed: bool,
        order: ByteOrder,
    },
    Float {
        size: usize,
        order: ByteOrder,
    },
    /// HDF5's bit field (`H5T_STD_B16LE`, ...): HSDS has none, so it is
    /// spelled as the unsigned integer of its size (what clients that do
    /// not know the mark read it as), marked `"h5lake": {"class":
    /// "H5T_BITFIELD"}`.
    Bitfield {
        size: usize,
        order: ByteOrder,
    },
    /// A float laid out other than IEEE 754 binary16/32/64 (numpy's
    /// `longdouble`, custom layouts): stored as laid out, the layout kept in
    /// the type's JSON as `"h5lake": {"float": …}` (HSDS has no such type).
    CustomFloat {
        size: usize,
        order: ByteOrder,
        bits: Box<FloatBits>,
    },
    /// `length: None` is a variable-length string.
    String {
        length: Option<usize>,
        charset: CharSet,
        pad: StrPad,
    },
    Compound {
        fields: Vec<Field>,
        size: usize,
    },
    Array {
        base: Box<Datatype>,
        dims: Vec<u64>,
    },
    Enum {
        base: Box<Datatype>,
        mapping: Vec<(String, i64)>,
    },
    Opaque {
        size: usize,
        tag: Option<String>,
    },
    /// Variable-length sequence of `base`.
    Vlen {
        base: Box<Datatype>,
    },
    /// Object reference, stored by HSDS as a fixed-length id string.
    Reference {
        size: usize,
        /// Written through HDF5's current reference calls (`H5T_STD_REF`,
        /// `H5Rcreate_object`) rather than the version-1 ones
        /// (`H5T_STD_REF_OBJ`, h5py's): stored alike, but a program reads
        /// back the form it wrote. Kept in the type's JSON as
        /// `"h5lake": {"api": "H5T_STD_REF"}` beside HSDS's spelling.
        current_api: bool,
    },
    /// Dataset region reference (`H5T_STD_REF_DSETREG`): a dataset and a
    /// selection of its elements. Variable-length, as HSDS has it: each
    /// element is the JSON text of h5json's form, `{"id": "d-…",
    /// "select_type": "H5S_SEL_HYPERSLABS", "selection": [[start, end], …]}`
    /// (inclusive corners), `H5S_SEL_POINTS` with a list of coordinates, or
    /// `H5S_SEL_ALL` / `H5S_SEL_NONE`; an empty element is a null reference.
    RegionReference,
    /// HDF5 2.0's native complex type: a real and an imaginary `part`
    /// (a float), byte for byte h5py's compound of members `r` and `i`,
    /// which is how it is stored (HSDS has no complex class), marked so
    /// that HDF5 programs get the complex type back.
    Complex {
        part: Box<Datatype>,
    },
}

fn parse_atomic_base(s: &str) -> Result<Datatype> {
    let bad = || TypeError::InvalidType(format!("unknown base type {s:?}"));
    let (body, order) = if let Some(b) = s.strip_suffix("LE") {
        (b, ByteOrder::Little)
    } else if let Some(b) = s.strip_suffix("BE") {
        (b, ByteOrder::Big)
    } else {
        return Err(bad());
    };
    if let Some(rest) = body.strip_prefix("H5T_STD_") {
        let (signed, bits) = match rest.as_bytes().first() {
            Some(b'I') => (true, &rest[1..]),
            Some(b'U') => (false, &rest[1..]),
            _ => return Err(bad()),
        };
        let size = match bits {
            "8" => 1,
            "16" => 2,
            "32" => 4,
            "64" => 8,
            _ => return Err(bad()),
        };
        return Ok(Datatype::Integer {
            size,
            signed,
            order,
        });
    }
    if let Some(bits) = body.strip_prefix("H5T_IEEE_F") {
        let size = match bits {
            "16" => 2,
            "32" => 4,
            "64" => 8,
            _ => return Err(bad()),
        };
        return Ok(Datatype::Float { size, order });
    }
    Err(bad())
}

fn order_suffix(o: ByteOrder) -> &'static str {
    match o {
        ByteOrder::Little => "LE",
        ByteOrder::Big => "BE",
    }
}

impl Datatype {
    /// The unsigned integer a bit field's values are read and written as.
    pub fn bitfield_as_integer(&self) -> Option<Datatype> {
        match *self {
            Datatype::Bitfield { size, order } => Some(Datatype::Integer {
                size,
                signed: false,
                order,
            }),
            _ => None,
        }
    }

    /// Parses HSDS type JSON. A bare string is a predefined type name
    /// (`"H5T_STD_I32LE"`); committed-type references (`"t-…"` ids) must be
    /// resolved by the caller first.
    ///
    /// Clients are not trusted: every type this accepts keeps to the bounds
    /// of [`crate::limits`], so its [`Datatype::fixed_size`] cannot
    /// overflow and code walking it recurses at most
    /// [`MAX_TYPE_DEPTH`] levels.
    ///
    /// # Errors
    /// Unknown classes or base names, malformed members, and types beyond
    /// the bounds of [`crate::limits`].
    pub fn from_json(v: &Value) -> Result<Self> {
        Self::parse(v, 1)
    }

    fn parse(v: &Value, depth: usize) -> Result<Self> {
        if depth > MAX_TYPE_DEPTH {
            return Err(TypeError::InvalidType(format!(
                "types nest more than h5lake's limit of {MAX_TYPE_DEPTH} levels"
            )));
        }
        let inner = |t: &Value| Self::parse(t, depth + 1);
        let bad = |m: &str| TypeError::InvalidType(format!("{m}: {v}"));
        if let Value::String(s) = v {
            return parse_atomic_base(s);
        }
        let class = v
            .get("class")
            .and_then(Value::as_str)
            .ok_or_else(|| bad("missing class"))?;
        match class {
            "H5T_FLOAT" if v.get("base").is_none() => {
                let bits = FloatBits::from_json(
                    v.pointer("/h5lake/float")
                        .ok_or_else(|| bad("missing base"))?,
                )?;
                let size = v
                    .get("size")
                    .and_then(Value::as_u64)
                    .ok_or_else(|| bad("a float layout needs a size"))?
                    as usize;
                let order = match v.get("order").and_then(Value::as_str) {
                    Some("H5T_ORDER_BE") => ByteOrder::Big,
                    Some("H5T_ORDER_LE") | None => ByteOrder::Little,
                    Some(_) => return Err(bad("unknown order")),
                };
                bits.check(size)?;
                if FloatBits::ieee(size).as_ref() == Some(&bits) {
                    return Ok(Datatype::Float { size, order });
                }
                Ok(Datatype::CustomFloat {
                    size,
                    order,
                    bits: Box::new(bits),
                })
            }
            "H5T_INTEGER" | "H5T_FLOAT" => {
                let base = v
                    .get("base")
                    .and_then(Value::as_str)
                    .ok_or_else(|| bad("missing base"))?;
                let t = parse_atomic_base(base)?;
                let bitfield =
                    v.pointer("/h5lake/class").and_then(Value::as_str) == Some("H5T_BITFIELD");
                match (t, class) {
                    (
                        Datatype::Integer {
                            size,
                            signed: false,
                            order,
                        },
                        "H5T_INTEGER",
                    ) if bitfield => Ok(Datatype::Bitfield { size, order }),
                    (Datatype::Integer { .. }, _) if bitfield => {
                        Err(bad("a bit field is spelled as an unsigned integer"))
                    }
                    (t @ Datatype::Integer { .. }, "H5T_INTEGER")
                    | (t @ Datatype::Float { .. }, "H5T_FLOAT") => Ok(t),
                    _ => Err(bad("base does not match class")),
                }
            }
            "H5T_STRING" => {
                let charset = match v
                    .get("charSet")
                    .and_then(Value::as_str)
                    .unwrap_or("H5T_CSET_ASCII")
                {
                    "H5T_CSET_ASCII" => CharSet::Ascii,
                    "H5T_CSET_UTF8" => CharSet::Utf8,
                    _ => return Err(bad("unknown charSet")),
                };
                let pad = match v
                    .get("strPad")
                    .and_then(Value::as_str)
                    .unwrap_or("H5T_STR_NULLPAD")
                {
                    "H5T_STR_NULLTERM" => StrPad::NullTerm,
                    "H5T_STR_NULLPAD" => StrPad::NullPad,
                    "H5T_STR_SPACEPAD" => StrPad::SpacePad,
                    _ => return Err(bad("unknown strPad")),
                };
                let length = match v.get("length") {
                    Some(Value::String(s)) if s == "H5T_VARIABLE" => None,
                    Some(Value::Number(n)) => {
                        let n = n
                            .as_u64()
                            .filter(|&n| n > 0)
                            .ok_or_else(|| bad("string length must be >= 1"))?;
                        if n > MAX_ELEMENT_BYTES as u64 {
                            return Err(too_big(&format!("string length {n}")));
                        }
                        Some(n as usize)
                    }
                    _ => return Err(bad("missing string length")),
                };
                Ok(Datatype::String {
                    length,
                    charset,
                    pad,
                })
            }
            "H5T_COMPOUND"
                if v.pointer("/h5lake/class").and_then(Value::as_str) == Some("H5T_COMPLEX") =>
            {
                let part = |i: usize, name: &str| {
                    v.pointer(&format!("/fields/{i}"))
                        .filter(|f| f.get("name").and_then(Value::as_str) == Some(name))
                        .and_then(|f| f.get("type"))
                        .ok_or_else(|| bad("a complex type is a compound of members r and i"))
                        .and_then(inner)
                };
                let (r, i) = (part(0, "r")?, part(1, "i")?);
                if r != i || !matches!(r, Datatype::Float { .. } | Datatype::CustomFloat { .. }) {
                    return Err(bad("the parts of a complex type are two equal floats"));
                }
                Ok(Datatype::Complex { part: Box::new(r) })
            }
            "H5T_COMPOUND" => {
                let fields_json = v
                    .get("fields")
                    .and_then(Value::as_array)
                    .ok_or_else(|| bad("missing fields"))?;
                if fields_json.is_empty() {
                    return Err(bad("compound type without fields"));
                }
                if fields_json.len() > MAX_COMPOUND_MEMBERS {
                    return Err(TypeError::InvalidType(format!(
                        "compound type of {} members exceeds HDF5's limit of {MAX_COMPOUND_MEMBERS}",
                        fields_json.len()
                    )));
                }
                let mut names = HashSet::with_capacity(fields_json.len());
                let mut fields = Vec::with_capacity(fields_json.len());
                let mut offset = 0usize;
                // Cannot overflow: at most 65,535 members of at most
                // 2^32 - 1 bytes each.
                let mut hdf5_size = 0u64;
                for f in fields_json {
                    let name = f
                        .get("name")
                        .and_then(Value::as_str)
                        .ok_or_else(|| bad("field without name"))?;
                    if !names.insert(name) {
                        return Err(TypeError::InvalidType(format!(
                            "duplicate field name {name:?} in a compound type"
                        )));
                    }
                    let dtype = inner(f.get("type").ok_or_else(|| bad("field without type"))?)?;
                    // A variable-length member has no fixed place: the
                    // element is a record (see `record`), offsets count
                    // only the fixed-size members before it.
                    let size = dtype.fixed_size().unwrap_or(0);
                    hdf5_size += dtype.hdf5_size();
                    fields.push(Field {
                        name: name.to_string(),
                        dtype,
                        offset,
                    });
                    offset += size;
                }
                if hdf5_size > MAX_ELEMENT_BYTES as u64 {
                    return Err(too_big(&format!("compound type of {hdf5_size} bytes")));
                }
                Ok(Datatype::Compound {
                    fields,
                    size: offset,
                })
            }
            "H5T_ARRAY" => {
                let dims = v
                    .get("dims")
                    .and_then(Value::as_array)
                    .ok_or_else(|| bad("missing dims"))?;
                if dims.is_empty() || dims.len() > MAX_RANK {
                    return Err(TypeError::InvalidType(format!(
                        "array type of rank {}: HDF5's array types have 1 to {MAX_RANK} dimensions",
                        dims.len()
                    )));
                }
                let dims = dims
                    .iter()
                    .map(|d| {
                        d.as_u64()
                            .filter(|&d| d > 0)
                            .ok_or_else(|| bad("array dims must be >= 1"))
                    })
                    .collect::<Result<Vec<_>>>()?;
                let base = inner(v.get("base").ok_or_else(|| bad("missing base"))?)?;
                let elem = base.hdf5_size();
                let fits = dims
                    .iter()
                    .try_fold(elem, |n, &d| n.checked_mul(d))
                    .is_some_and(|n| n <= MAX_ELEMENT_BYTES as u64);
                if !fits {
                    return Err(too_big(&format!(
                        "array type of dims {dims:?} of {elem}-byte elements"
                    )));
                }
                Ok(Datatype::Array {
                    base: Box::new(base),
                    dims,
                })
            }
            "H5T_ENUM" => {
                let base = inner(v.get("base").ok_or_else(|| bad("missing base"))?)?;
                if !matches!(base, Datatype::Integer { .. }) {
                    return Err(bad("enum base must be an integer type"));
                }
                let Datatype::Integer { size, signed, .. } = base else {
                    unreachable!("checked above")
                };
                let bits = 8 * size.min(8) as u32;
                let (lo, hi) = if signed {
                    (
                        i128::from(i64::MIN) >> (64 - bits),
                        i128::from(i64::MAX) >> (64 - bits),
                    )
                } else {
                    (
                        0,
                        (i128::from(u64::MAX) >> (64 - bits)).min(i128::from(i64::MAX)),
                    )
                };
                let value = |val: &Value| {
                    let n = val
                        .as_i64()
                        .ok_or_else(|| bad("enum values must be integers"))?;
                    if !(lo..=hi).contains(&i128::from(n)) {
                        return Err(TypeError::InvalidType(format!(
                            "enum value {n} does not fit the enum's base type ({lo} to {hi})"
                        )));
                    }
                    Ok(n)
                };
                let too_many = |n: usize| {
                    TypeError::InvalidType(format!(
                        "enum type of {n} members exceeds HDF5's limit of {MAX_ENUM_MEMBERS}"
                    ))
                };
                // HSDS's `mapping` object, or hdf5-json's (and h5pyd's)
                // `members` list of {name, value}.
                let mapping = if let Some(m) = v.get("mapping").and_then(Value::as_object) {
                    if m.len() > MAX_ENUM_MEMBERS {
                        return Err(too_many(m.len()));
                    }
                    m.iter()
                        .map(|(k, val)| Ok((k.clone(), value(val)?)))
                        .collect::<Result<Vec<_>>>()?
                } else if let Some(m) = v.get("members").and_then(Value::as_array) {
                    if m.len() > MAX_ENUM_MEMBERS {
                        return Err(too_many(m.len()));
                    }
                    // HDF5 refuses a name twice, and values are looked up
                    // by name.
                    let mut names = HashSet::with_capacity(m.len());
                    m.iter()
                        .map(|e| {
                            let name = e
                                .get("name")
                                .and_then(Value::as_str)
                                .ok_or_else(|| bad("enum member without a name"))?;
                            if !names.insert(name) {
                                return Err(TypeError::InvalidType(format!(
                                    "duplicate member name {name:?} in an enum type"
                                )));
                            }
                            Ok((
                                name.to_string(),
                                value(e.get("value").unwrap_or(&Value::Null))?,
                            ))
                        })
                        .collect::<Result<Vec<_>>>()?
                } else {
                    return Err(bad("missing mapping"));
                };
                Ok(Datatype::Enum {
                    base: Box::new(base),
                    mapping,
                })
            }
            "H5T_OPAQUE" => {
                let size = v
                    .get("size")
                    .and_then(Value::as_u64)
                    .filter(|&s| s > 0)
                    .ok_or_else(|| bad("missing size"))?;
                if size > MAX_ELEMENT_BYTES as u64 {
                    return Err(too_big(&format!("opaque size {size}")));
                }
                let tag = v.get("tag").and_then(Value::as_str).map(str::to_string);
                Ok(Datatype::Opaque {
                    size: size as usize,
                    tag,
                })
            }
            "H5T_VLEN" => {
                let base = inner(v.get("base").ok_or_else(|| bad("missing base"))?)?;
                Ok(Datatype::Vlen {
                    base: Box::new(base),
                })
            }
            "H5T_REFERENCE"
                if v.get("base").and_then(Value::as_str) == Some("H5T_STD_REF_DSETREG") =>
            {
                Ok(Datatype::RegionReference)
            }
            "H5T_REFERENCE" => Ok(Datatype::Reference {
                size: 48,
                current_api: v.pointer("/h5lake/api").and_then(Value::as_str)
                    == Some("H5T_STD_REF"),
            }),
            other => Err(TypeError::UnsupportedType(format!("type class {other}"))),
        }
    }

    /// HSDS's JSON form (the inverse of [`Datatype::from_json`]).
    pub fn to_json(&self) -> Value {
        use serde_json::json;
        match self {
            Datatype::Integer {
                size,
                signed,
                order,
            } => json!({
                "class": "H5T_INTEGER",
                "base": format!("H5T_STD_{}{}{}", if *signed { "I" } else { "U" }, size * 8, order_suffix(*order)),
            }),
            Datatype::Float { size, order } => json!({
                "class": "H5T_FLOAT",
                "base": format!("H5T_IEEE_F{}{}", size * 8, order_suffix(*order)),
            }),
            Datatype::Bitfield { size, order } => {
                let mut t = Datatype::Integer {
                    size: *size,
                    signed: false,
                    order: *order,
                }
                .to_json();
                t["h5lake"] = json!({"class": "H5T_BITFIELD"});
                t
            }
            Datatype::CustomFloat { size, order, bits } => json!({
                "class": "H5T_FLOAT",
                "size": size,
                "order": if *order == ByteOrder::Big { "H5T_ORDER_BE" } else { "H5T_ORDER_LE" },
                "h5lake": {"float": bits.to_json()},
            }),
            Datatype::String {
                length,
                charset,
                pad,
            } => json!({
                "class": "H5T_STRING",
                "charSet": match charset { CharSet::Ascii => "H5T_CSET_ASCII", CharSet::Utf8 => "H5T_CSET_UTF8" },
                "strPad": match pad { StrPad::NullTerm => "H5T_STR_NULLTERM", StrPad::NullPad => "H5T_STR_NULLPAD", StrPad::SpacePad => "H5T_STR_SPACEPAD" },
                "length": match length { Some(n) => json!(n), None => json!("H5T_VARIABLE") },
            }),
            Datatype::Compound { fields, .. } => json!({
                "class": "H5T_COMPOUND",
                "fields": fields.iter().map(|f| json!({"name": f.name, "type": f.dtype.to_json()})).collect::<Vec<_>>(),
            }),
            Datatype::Array { base, dims } => {
                json!({"class": "H5T_ARRAY", "dims": dims, "base": base.to_json()})
            }
            Datatype::Enum { base, mapping } => {
                let m: serde_json::Map<String, Value> =
                    mapping.iter().map(|(k, v)| (k.clone(), json!(v))).collect();
                json!({"class": "H5T_ENUM", "base": base.to_json(), "mapping": m})
            }
            Datatype::Opaque { size, tag } => {
                let mut o = json!({"class": "H5T_OPAQUE", "size": size});
                if let Some(t) = tag {
                    o["tag"] = json!(t);
                }
                o
            }
            Datatype::Vlen { base } => json!({"class": "H5T_VLEN", "base": base.to_json()}),
            Datatype::Reference { current_api, .. } => {
                let mut r = json!({"class": "H5T_REFERENCE", "base": "H5T_STD_REF_OBJ"});
                if *current_api {
                    r["h5lake"] = json!({"api": "H5T_STD_REF"});
                }
                r
            }
            Datatype::RegionReference => {
                json!({"class": "H5T_REFERENCE", "base": "H5T_STD_REF_DSETREG"})
            }
            Datatype::Complex { part } => json!({
                "class": "H5T_COMPOUND",
                "fields": [{"name": "r", "type": part.to_json()}, {"name": "i", "type": part.to_json()}],
                "h5lake": {"class": "H5T_COMPLEX"},
            }),
        }
    }

    /// The member offsets and size HDF5 gave a compound whose members do
    /// not sit packed in order (padding, reordered offsets, a bigger size:
    /// numpy's aligned dtypes, say); `None` for a packed compound and any
    /// other type. Stores keep compounds packed (the HSDS layout), and the
    /// layout goes beside, in the type's JSON (see
    /// [`Datatype::with_layout_json`]), so that a program reads back the
    /// type it wrote.
    pub fn unpacked_layout(&self) -> Option<(Vec<usize>, usize)> {
        let Datatype::Compound { fields, size } = self else {
            return None;
        };
        let mut packed = 0;
        let mut is_packed = true;
        for f in fields {
            is_packed &= f.offset == packed;
            packed += f.dtype.fixed_size()?;
        }
        (!is_packed || *size != packed).then(|| (fields.iter().map(|f| f.offset).collect(), *size))
    }

    /// [`Datatype::to_json`], plus the layout of an unpacked compound under
    /// `"h5lake": {"offsets": [...], "size": n}` (a key HSDS ignores).
    pub fn with_layout_json(&self) -> Value {
        let mut json = self.to_json();
        if let Some((offsets, size)) = self.unpacked_layout() {
            json["h5lake"] = serde_json::json!({"offsets": offsets, "size": size});
        }
        json
    }

    /// The compound `self` laid out as [`Datatype::with_layout_json`]
    /// recorded in `json` (the members at their recorded offsets in the
    /// recorded size): the type as the program that stored it described it.
    /// `None` when `json` records no layout that fits `self`.
    pub fn laid_out_as_in(&self, json: &Value) -> Option<Datatype> {
        let Datatype::Compound { fields, .. } = self else {
            return None;
        };
        // The layout is client-written JSON beside the checked type.
        let size = json
            .pointer("/h5lake/size")?
            .as_u64()
            .filter(|&n| n <= MAX_ELEMENT_BYTES as u64)? as usize;
        let offsets = json.pointer("/h5lake/offsets")?.as_array()?;
        if offsets.len() != fields.len() {
            return None;
        }
        let mut laid = fields.clone();
        for (f, o) in laid.iter_mut().zip(offsets) {
            let o = o.as_u64()? as usize;
            let end = o.checked_add(f.dtype.fixed_size()?)?;
            if end > size {
                return None;
            }
            f.offset = o;
        }
        Some(Datatype::Compound { fields: laid, size })
    }

    /// Bytes per element in a chunk, or `None` for variable-length types
    /// and types holding variable-length parts (see `record` for their
    /// chunk form).
    ///
    /// At most [`MAX_ELEMENT_BYTES`] for every type [`Datatype::from_json`]
    /// accepts; types built in Rust are trusted to keep that bound too.
    pub fn fixed_size(&self) -> Option<usize> {
        match self {
            Datatype::Integer { size, .. }
            | Datatype::Float { size, .. }
            | Datatype::CustomFloat { size, .. }
            | Datatype::Bitfield { size, .. }
            | Datatype::Opaque { size, .. } => Some(*size),
            Datatype::Reference { size, .. } => Some(*size),
            Datatype::String { length, .. } => *length,
            Datatype::Compound { fields, size } => fields
                .iter()
                .all(|f| f.dtype.fixed_size().is_some())
                .then_some(*size),
            Datatype::Array { base, dims } => base
                .fixed_size()
                .map(|s| s * dims.iter().product::<u64>() as usize),
            Datatype::Enum { base, .. } => base.fixed_size(),
            Datatype::Vlen { .. } | Datatype::RegionReference => None,
            Datatype::Complex { part } => part.fixed_size().map(|s| 2 * s),
        }
    }

    /// The element size HDF5's datatype message would record: variable-length
    /// parts count as the heap ids HDF5 keeps in their place. Saturates
    /// rather than overflowing, for the callers to compare with
    /// [`MAX_ELEMENT_BYTES`].
    fn hdf5_size(&self) -> u64 {
        match self {
            Datatype::Integer { size, .. }
            | Datatype::Float { size, .. }
            | Datatype::CustomFloat { size, .. }
            | Datatype::Bitfield { size, .. }
            | Datatype::Opaque { size, .. }
            | Datatype::Reference { size, .. }
            | Datatype::String {
                length: Some(size), ..
            } => *size as u64,
            Datatype::String { length: None, .. } | Datatype::Vlen { .. } => HDF5_VLEN_BYTES,
            Datatype::RegionReference => HDF5_REGION_REF_BYTES,
            Datatype::Compound { fields, .. } => fields
                .iter()
                .fold(0, |n, f| n.saturating_add(f.dtype.hdf5_size())),
            Datatype::Array { base, dims } => dims
                .iter()
                .fold(base.hdf5_size(), |n, &d| n.saturating_mul(d)),
            Datatype::Enum { base, .. } => base.hdf5_size(),
            Datatype::Complex { part } => part.hdf5_size().saturating_mul(2),
        }
    }

    /// Whether elements are variable-length (vlen strings and sequences,
    /// and compounds and arrays holding them).
    pub fn is_variable(&self) -> bool {
        self.fixed_size().is_none()
    }

    /// Size of the unit that byte-shuffle and similar filters work on.
    pub fn filter_elem_size(&self) -> usize {
        self.fixed_size().unwrap_or(1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn unpacked_compounds_keep_their_layout_beside_the_packed_type() {
        let int = |size| Datatype::Integer {
            size,
            signed: true,
            order: ByteOrder::Little,
        };
        let field = |name: &str, dtype, offset| Field {
            name: name.into(),
            dtype,
            offset,
        };
        // numpy's aligned i4,f8,i2: members at 0, 8, 16 of 24 bytes.
        let aligned = Datatype::Compound {
            fields: vec![
                field("a", int(4), 0),
                field("b", int(8), 8),
                field("c", int(2), 16),
            ],
            size: 24,
        };
        assert_eq!(aligned.unpacked_layout(), Some((vec![0, 8, 16], 24)));
        let json = aligned.with_layout_json();
        let stored = Datatype::from_json(&json).unwrap();
        assert_eq!(stored.fixed_size(), Some(14), "stored packed");
        assert_eq!(stored.unpacked_layout(), None);
        assert_eq!(stored.laid_out_as_in(&json), Some(aligned));
        // A packed compound records nothing; a layout that does not fit the
        // members (a member past the end) is not used.
        assert!(stored.with_layout_json().get("h5lake").is_none());
        let mut bad = json.clone();
        bad["h5lake"]["size"] = serde_json::json!(16);
        assert_eq!(stored.laid_out_as_in(&bad), None);
    }

    #[test]
    fn round_trips_hsds_forms() {
        let forms = [
            json!({"class": "H5T_INTEGER", "base": "H5T_STD_I32BE"}),
            json!({"class": "H5T_FLOAT", "base": "H5T_IEEE_F16LE"}),
            json!({"class": "H5T_STRING", "charSet": "H5T_CSET_UTF8", "strPad": "H5T_STR_NULLTERM", "length": "H5T_VARIABLE"}),
            json!({"class": "H5T_STRING", "charSet": "H5T_CSET_ASCII", "strPad": "H5T_STR_NULLPAD", "length": 7}),
            json!({"class": "H5T_COMPOUND", "fields": [
                {"name": "x", "type": {"class": "H5T_FLOAT", "base": "H5T_IEEE_F32LE"}},
                {"name": "flags", "type": {"class": "H5T_ARRAY", "dims": [3], "base": {"class": "H5T_INTEGER", "base": "H5T_STD_U8LE"}}}
            ]}),
            json!({"class": "H5T_ENUM", "base": {"class": "H5T_INTEGER", "base": "H5T_STD_I8LE"}, "mapping": {"FALSE": 0, "TRUE": 1}}),
            json!({"class": "H5T_OPAQUE", "size": 5}),
            json!({"class": "H5T_VLEN", "base": {"class": "H5T_INTEGER", "base": "H5T_STD_I16LE"}}),
        ];
        for f in forms {
            let t = Datatype::from_json(&f).unwrap();
            assert_eq!(Datatype::from_json(&t.to_json()).unwrap(), t, "{f}");
        }
    }

    #[test]
    fn enum_members_list_reads_like_a_mapping() {
        let base = json!({"class": "H5T_INTEGER", "base": "H5T_STD_I8LE"});
        let members = Datatype::from_json(&json!({"class": "H5T_ENUM", "base": base,
            "members": [{"name": "FALSE", "value": 0}, {"name": "TRUE", "value": 1}]}))
        .unwrap();
        let mapping = Datatype::from_json(&json!({"class": "H5T_ENUM", "base": base,
            "mapping": {"FALSE": 0, "TRUE": 1}}))
        .unwrap();
        assert_eq!(members, mapping);
        assert!(
            Datatype::from_json(&json!({"class": "H5T_ENUM", "base": base,
            "members": [{"name": "X"}]}))
            .is_err()
        );
    }

    #[test]
    fn enum_values_must_fit_their_base_type() {
        // From an audit: 1000 in an 8-bit enum was stored, and served back.
        let e = |base: &str, v: i64| {
            Datatype::from_json(&json!({"class": "H5T_ENUM",
                "base": {"class": "H5T_INTEGER", "base": base}, "mapping": {"a": v}}))
        };
        for (base, ok, bad) in [
            ("H5T_STD_I8LE", [-128, 127], [1000, -129]),
            ("H5T_STD_U8LE", [0, 255], [256, -1]),
            ("H5T_STD_I16BE", [-32768, 32767], [32768, -32769]),
            ("H5T_STD_U32LE", [0, 4_294_967_295], [4_294_967_296, -1]),
            ("H5T_STD_I64LE", [i64::MIN, i64::MAX], [0, 0]),
        ] {
            for v in ok {
                assert!(e(base, v).is_ok(), "{base} {v}");
            }
            if base != "H5T_STD_I64LE" {
                for v in bad {
                    assert!(e(base, v).is_err(), "{base} {v}");
                }
            }
        }
    }

    #[test]
    fn sizes_and_offsets() {
        let t = Datatype::from_json(&json!({"class": "H5T_COMPOUND", "fields": [
            {"name": "a", "type": {"class": "H5T_INTEGER", "base": "H5T_STD_I8LE"}},
            {"name": "b", "type": {"class": "H5T_FLOAT", "base": "H5T_IEEE_F64LE"}},
            {"name": "c", "type": {"class": "H5T_ARRAY", "dims": [2, 3], "base": {"class": "H5T_INTEGER", "base": "H5T_STD_U16BE"}}}
        ]}))
        .unwrap();
        assert_eq!(t.fixed_size(), Some(1 + 8 + 12));
        let Datatype::Compound { fields, .. } = &t else {
            panic!()
        };
        assert_eq!(
            fields.iter().map(|f| f.offset).collect::<Vec<_>>(),
            vec![0, 1, 9]
        );
        let vs =
            Datatype::from_json(&json!({"class": "H5T_STRING", "length": "H5T_VARIABLE"})).unwrap();
        assert!(vs.is_variable());
    }

    #[test]
    fn rejects_bad_types() {
        for bad in [
            json!({"class": "H5T_INTEGER", "base": "H5T_STD_I24LE"}),
            json!({"class": "H5T_FLOAT", "base": "H5T_STD_I32LE"}),
            json!({"class": "H5T_NOPE"}),
            json!({"class": "H5T_COMPOUND", "fields": []}),
            json!({"class": "H5T_STRING", "length": 0}),
            json!("H5T_STD_X"),
        ] {
            assert!(Datatype::from_json(&bad).is_err(), "{bad}");
        }
    }
}
