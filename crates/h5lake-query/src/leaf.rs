//! The numeric leaves of a datatype: what statistics are kept on and what
//! an expression can name.

use h5lake_types::{ByteOrder, Datatype};

/// How a leaf's bytes read as a number.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Int {
        size: usize,
        signed: bool,
        big: bool,
    },
    Float {
        size: usize,
        big: bool,
    },
    /// numpy's `bool` (an enum of FALSE/TRUE over a 1-byte integer, as h5py
    /// writes it): reads as 0/1, compares and combines as a condition.
    Bool,
    /// Fixed-length text or bytes (strings, opaque values) of `len` bytes:
    /// compared with text literals, up to the first NUL (as numpy's `S`
    /// type and HSDS compare them). No bounds are kept for them.
    Text {
        len: usize,
    },
}

/// A number-valued member of an element: a field of a compound (nested
/// compounds give dotted names, `pos.x`), or the element itself (named
/// [`VALUE_NAME`]) for a dataset of numbers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Leaf {
    pub name: String,
    pub offset: usize,
    pub kind: Kind,
}

/// The name expressions use for the elements of a dataset that is not a
/// compound.
pub const VALUE_NAME: &str = "value";

impl Leaf {
    /// Whether values of this leaf are text.
    pub fn is_text(&self) -> bool {
        matches!(self.kind, Kind::Text { .. })
    }

    /// The leaf's text in `elem` without its trailing NULs (the padding,
    /// as NumPy compares byte strings: a NUL inside is part of the text);
    /// `None` for numbers.
    #[inline]
    pub fn text_at<'e>(&self, elem: &'e [u8]) -> Option<&'e [u8]> {
        let Kind::Text { len } = self.kind else {
            return None;
        };
        let b = &elem[self.offset..self.offset + len];
        Some(&b[..b.iter().rposition(|&c| c != 0).map_or(0, |p| p + 1)])
    }

    /// Whether values of this leaf are floats.
    pub fn is_float(&self) -> bool {
        matches!(self.kind, Kind::Float { .. })
    }

    /// The leaf's value in `elem` (one element's bytes) as an integer;
    /// `None` for floats.
    #[inline]
    pub fn int_at(&self, elem: &[u8]) -> Option<i128> {
        let b = &elem[self.offset..];
        Some(match self.kind {
            Kind::Bool => i128::from(b[0] != 0),
            Kind::Int { size, signed, big } => read_int(b, size, signed, big),
            Kind::Float { .. } | Kind::Text { .. } => return None,
        })
    }

    /// The leaf's value in `elem` as a float (integers converted).
    #[inline]
    pub fn float_at(&self, elem: &[u8]) -> f64 {
        let b = &elem[self.offset..];
        match self.kind {
            Kind::Float { size, big } => read_float(b, size, big),
            _ => self.int_at(elem).unwrap_or(0) as f64,
        }
    }
}

#[inline]
fn arr<const N: usize>(b: &[u8], big: bool) -> [u8; N] {
    let mut a = [0u8; N];
    a.copy_from_slice(&b[..N]);
    if big {
        a.reverse();
    }
    a
}

#[inline]
pub(crate) fn read_int(b: &[u8], size: usize, signed: bool, big: bool) -> i128 {
    match (size, signed) {
        (1, true) => i128::from(b[0] as i8),
        (1, false) => i128::from(b[0]),
        (2, true) => i128::from(i16::from_le_bytes(arr(b, big))),
        (2, false) => i128::from(u16::from_le_bytes(arr(b, big))),
        (4, true) => i128::from(i32::from_le_bytes(arr(b, big))),
        (4, false) => i128::from(u32::from_le_bytes(arr(b, big))),
        (8, true) => i128::from(i64::from_le_bytes(arr(b, big))),
        _ => i128::from(u64::from_le_bytes(arr(b, big))),
    }
}

#[inline]
pub(crate) fn read_float(b: &[u8], size: usize, big: bool) -> f64 {
    match size {
        2 => h5lake_types::f16_to_f64(u16::from_le_bytes(arr(b, big))),
        4 => f64::from(f32::from_le_bytes(arr(b, big))),
        _ => f64::from_le_bytes(arr(b, big)),
    }
}

/// The leaves of `dtype`, in member order: integers, IEEE floats (16, 32
/// and 64 bits), bit fields, enums (by their integer values; numpy's bool
/// as [`Kind::Bool`]), fixed-length strings and opaque values (as
/// [`Kind::Text`]), and the members of compounds, nested ones with dotted
/// names. Arrays, references and variable-length values have none.
pub fn leaves(dtype: &Datatype) -> Vec<Leaf> {
    let mut out = Vec::new();
    match dtype {
        Datatype::Compound { .. } => {
            collect(dtype, "", 0, &mut out);
            // A member whose own name holds a dot (`p.x`, as pandas names
            // flattened columns) beside a nested member of that path: no
            // condition or record could tell the two apart, so neither is a
            // leaf.
            let mut seen = std::collections::HashMap::<String, usize>::new();
            for l in &out {
                *seen.entry(l.name.clone()).or_default() += 1;
            }
            out.retain(|l| seen[&l.name] == 1);
        }
        other => {
            if let Some(kind) = kind_of(other) {
                out.push(Leaf {
                    name: VALUE_NAME.into(),
                    offset: 0,
                    kind,
                });
            }
        }
    }
    out
}

fn collect(dtype: &Datatype, prefix: &str, base: usize, out: &mut Vec<Leaf>) {
    if let Datatype::Compound { fields, .. } = dtype {
        for f in fields {
            let name = if prefix.is_empty() {
                f.name.clone()
            } else {
                format!("{prefix}.{}", f.name)
            };
            collect(&f.dtype, &name, base + f.offset, out);
        }
    } else if let Some(kind) = kind_of(dtype) {
        out.push(Leaf {
            name: prefix.to_string(),
            offset: base,
            kind,
        });
    }
}

fn kind_of(dtype: &Datatype) -> Option<Kind> {
    let big = |o: &ByteOrder| *o == ByteOrder::Big;
    match dtype {
        Datatype::Integer {
            size,
            signed,
            order,
        } if matches!(size, 1 | 2 | 4 | 8) => Some(Kind::Int {
            size: *size,
            signed: *signed,
            big: big(order),
        }),
        Datatype::Bitfield { size, order } if matches!(size, 1 | 2 | 4 | 8) => Some(Kind::Int {
            size: *size,
            signed: false,
            big: big(order),
        }),
        Datatype::Float { size, order } if matches!(size, 2 | 4 | 8) => Some(Kind::Float {
            size: *size,
            big: big(order),
        }),
        Datatype::String {
            length: Some(len), ..
        }
        | Datatype::Opaque { size: len, .. } => Some(Kind::Text { len: *len }),
        Datatype::Enum { base, mapping } => {
            let is_bool = base.fixed_size() == Some(1)
                && mapping.len() == 2
                && mapping
                    .iter()
                    .all(|(n, v)| (n == "FALSE" && *v == 0) || (n == "TRUE" && *v == 1));
            if is_bool {
                Some(Kind::Bool)
            } else {
                kind_of(base)
            }
        }
        _ => None,
    }
}

/// The runs `(first element, count)` of a chunk (dimensions `chunk`, C
/// order) that lie inside the dataset's extent, when `live[d]` of its
/// `chunk[d]` indices along each dimension do (the leading ones).
pub fn live_runs(chunk: &[u64], live: &[u64]) -> Vec<(usize, usize)> {
    let total: u64 = chunk.iter().product();
    if live.contains(&0) {
        return Vec::new();
    }
    if live == chunk || chunk.is_empty() {
        return vec![(0, total as usize)];
    }
    let rank = chunk.len();
    // The innermost dimensions that are whole form one run with the last
    // partial one.
    let mut k = rank - 1;
    while k > 0 && live[k] == chunk[k] {
        k -= 1;
    }
    let inner: u64 = chunk[k + 1..].iter().product();
    let run = (live[k] * inner) as usize;
    let mut strides = vec![1u64; rank];
    for d in (0..rank - 1).rev() {
        strides[d] = strides[d + 1] * chunk[d + 1];
    }
    let outer: Vec<u64> = live[..k].to_vec();
    let mut idx = vec![0u64; k];
    let mut out = Vec::new();
    loop {
        let start: u64 = idx.iter().zip(&strides).map(|(i, s)| i * s).sum();
        out.push((start as usize, run));
        let mut d = k;
        loop {
            if d == 0 {
                return out;
            }
            d -= 1;
            idx[d] += 1;
            if idx[d] < outer[d] {
                break;
            }
            idx[d] = 0;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_dotted_name_that_names_two_members_is_no_leaf() {
        let t = |fields: serde_json::Value| {
            Datatype::from_json(&serde_json::json!({"class": "H5T_COMPOUND", "fields": fields}))
                .unwrap()
        };
        let i4 = serde_json::json!({"class": "H5T_INTEGER", "base": "H5T_STD_I32LE"});
        let names = |d: &Datatype| leaves(d).into_iter().map(|l| l.name).collect::<Vec<_>>();
        // pandas' flattened column alone is a leaf of its own name
        let flat =
            t(serde_json::json!([{"name": "user.id", "type": i4}, {"name": "n", "type": i4}]));
        assert_eq!(names(&flat), ["user.id", "n"]);
        let both = t(serde_json::json!([
            {"name": "p.x", "type": i4},
            {"name": "p", "type": {"class": "H5T_COMPOUND", "fields": [
                {"name": "x", "type": i4}, {"name": "y", "type": i4}]}},
        ]));
        assert_eq!(names(&both), ["p.y"]);
    }

    #[test]
    fn live_runs_cover_the_extent_only() {
        assert_eq!(live_runs(&[4, 4], &[4, 4]), vec![(0, 16)]);
        assert_eq!(live_runs(&[4, 4], &[2, 4]), vec![(0, 8)]);
        assert_eq!(live_runs(&[4, 4], &[2, 3]), vec![(0, 3), (4, 3)]);
        assert_eq!(live_runs(&[4, 4], &[0, 3]), vec![]);
        assert_eq!(live_runs(&[2, 3, 4], &[2, 2, 4]), vec![(0, 8), (12, 8)]);
        assert_eq!(live_runs(&[10], &[7]), vec![(0, 7)]);
    }
}
