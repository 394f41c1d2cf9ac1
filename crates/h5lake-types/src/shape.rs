use serde_json::{json, Value};

use crate::limits::MAX_RANK;
use crate::{Result, TypeError};

/// Marker for an unlimited maximum dimension.
pub const UNLIMITED: u64 = u64::MAX;

/// An HDF5 dataspace: scalar, null or simple (`dims`, `maxdims`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Shape {
    Null,
    Scalar,
    Simple {
        dims: Vec<u64>,
        maxdims: Option<Vec<u64>>,
    },
}

impl Shape {
    /// Parses HSDS's shape object.
    ///
    /// # Errors
    /// A missing or unknown `class`, non-integer dims, maxdims smaller than
    /// dims, more than [`MAX_RANK`] dims, or more elements than a `u64`
    /// counts.
    pub fn from_json(v: &Value) -> Result<Self> {
        let bad = |m: &str| TypeError::InvalidShape(format!("{m}: {v}"));
        let class = v
            .get("class")
            .and_then(Value::as_str)
            .ok_or_else(|| bad("missing class"))?;
        match class {
            "H5S_NULL" => Ok(Shape::Null),
            "H5S_SCALAR" => Ok(Shape::Scalar),
            "H5S_SIMPLE" => {
                let dims = v
                    .get("dims")
                    .and_then(Value::as_array)
                    .ok_or_else(|| bad("missing dims"))?;
                if dims.len() > MAX_RANK {
                    return Err(TypeError::InvalidShape(format!(
                        "rank {} exceeds HDF5's limit of {MAX_RANK} dimensions",
                        dims.len()
                    )));
                }
                let dims = dims
                    .iter()
                    .map(|d| {
                        d.as_u64()
                            .ok_or_else(|| bad("dims must be non-negative integers"))
                    })
                    .collect::<Result<Vec<_>>>()?;
                if checked_product(&dims).is_none() {
                    return Err(TypeError::InvalidShape(format!(
                        "dims {dims:?} hold more elements than a 64-bit count"
                    )));
                }
                let maxdims = match v.get("maxdims") {
                    None | Some(Value::Null) => None,
                    Some(Value::Array(m)) => {
                        if m.len() != dims.len() {
                            return Err(bad("maxdims rank differs from dims"));
                        }
                        let m = m
                            .iter()
                            .map(|d| match d {
                                Value::String(s) if s == "H5S_UNLIMITED" => Ok(UNLIMITED),
                                // HSDS clients also send 0 for "unlimited".
                                Value::Number(n) if n.as_u64() == Some(0) => Ok(UNLIMITED),
                                Value::Number(n) => {
                                    n.as_u64().ok_or_else(|| bad("bad maxdims entry"))
                                }
                                _ => Err(bad("bad maxdims entry")),
                            })
                            .collect::<Result<Vec<_>>>()?;
                        if m.iter().zip(&dims).any(|(mx, d)| mx < d) {
                            return Err(bad("maxdims smaller than dims"));
                        }
                        Some(m)
                    }
                    Some(_) => return Err(bad("maxdims must be a list")),
                };
                Ok(Shape::Simple { dims, maxdims })
            }
            other => Err(TypeError::InvalidShape(format!(
                "unknown shape class {other}"
            ))),
        }
    }

    /// HSDS's JSON form.
    pub fn to_json(&self) -> Value {
        match self {
            Shape::Null => json!({"class": "H5S_NULL"}),
            Shape::Scalar => json!({"class": "H5S_SCALAR"}),
            Shape::Simple { dims, maxdims } => {
                let mut o = json!({"class": "H5S_SIMPLE", "dims": dims});
                if let Some(m) = maxdims {
                    let m: Vec<Value> = m
                        .iter()
                        .map(|&d| {
                            if d == UNLIMITED {
                                json!("H5S_UNLIMITED")
                            } else {
                                json!(d)
                            }
                        })
                        .collect();
                    o["maxdims"] = Value::Array(m);
                }
                o
            }
        }
    }

    /// Current extent; a scalar is treated as the 1-element array `[1]`.
    pub fn dims(&self) -> Vec<u64> {
        match self {
            Shape::Null => vec![0],
            Shape::Scalar => vec![1],
            Shape::Simple { dims, .. } => dims.clone(),
        }
    }

    /// Maximum extent per dimension ([`UNLIMITED`] for unlimited).
    pub fn maxdims(&self) -> Vec<u64> {
        match self {
            Shape::Simple {
                maxdims: Some(m), ..
            } => m.clone(),
            other => other.dims(),
        }
    }

    /// Number of elements; `u64::MAX` for a shape built in Rust whose count
    /// overflows (a parsed one never does).
    pub fn num_elements(&self) -> u64 {
        saturating_product(&self.dims())
    }
}

/// The number of elements of `dims`, `None` when a `u64` cannot hold it.
fn checked_product(dims: &[u64]) -> Option<u64> {
    // A zero extent anywhere empties the shape, however large the others.
    if dims.contains(&0) {
        return Some(0);
    }
    dims.iter().try_fold(1u64, |n, &d| n.checked_mul(d))
}

/// The number of elements of `dims`, saturating at `u64::MAX`; exact
/// whenever it fits (a saturated count times a zero extent is zero).
pub(crate) fn saturating_product(dims: &[u64]) -> u64 {
    dims.iter().fold(1u64, |n, &d| n.saturating_mul(d))
}

/// A chunk shape for `dims` of about 1 MiB at most: the extent halved a
/// dimension at a time, first to last and round again, so that every
/// dimension keeps a like share of it.
pub fn guess_chunks(dims: &[u64], esize: u64) -> Vec<u64> {
    let chunk: Vec<u64> = dims.iter().map(|&d| d.max(1)).collect();
    halved_to(chunk, esize, 1 << 20)
}

/// `chunk` halved a dimension at a time (rounding up), first to last and
/// round again, until it holds at most `max` bytes or cannot shrink.
fn halved_to(mut chunk: Vec<u64>, esize: u64, max: u64) -> Vec<u64> {
    let bytes = |c: &[u64]| c.iter().fold(esize.max(1), |n, &d| n.saturating_mul(d));
    while bytes(&chunk) > max && chunk.iter().any(|&c| c > 1) {
        for d in 0..chunk.len() {
            chunk[d] = chunk[d].div_ceil(2);
            if bytes(&chunk) <= max {
                break;
            }
        }
    }
    chunk
}

/// The chunk shape HSDS gives a dataset whose client gave none (h5json's
/// `guessChunk`), between `min` and `max` bytes where the extent allows:
/// it starts from the maximum extent (1024 along an unlimited dimension,
/// `None` in `maxdims`), grows a small one by doubling — along the
/// dimensions that can grow, last first, or else up to the extent — and
/// halves a big one as [`guess_chunks`] does.
pub fn hsds_chunks(
    dims: &[u64],
    maxdims: Option<&[Option<u64>]>,
    esize: u64,
    (min, max): (u64, u64),
) -> Vec<u64> {
    let esize = esize.max(1);
    let bytes = |c: &[u64]| c.iter().fold(esize, |n, &d| n.saturating_mul(d));
    let limit = |i: usize| match maxdims {
        Some(m) => m.get(i).copied().flatten().filter(|&m| m > 0),
        None => Some(dims[i]).filter(|&d| d > 0),
    };
    let mut chunk: Vec<u64> = (0..dims.len()).map(|i| limit(i).unwrap_or(1024)).collect();
    if bytes(&chunk) > max {
        return halved_to(chunk, esize, max);
    }
    let can_grow = |i: usize| match maxdims {
        Some(m) => m
            .get(i)
            .copied()
            .flatten()
            .is_none_or(|m| m == 0 || m > dims[i]),
        None => false,
    };
    let mut growing = (0..dims.len()).filter(|&i| can_grow(i)).count();
    if growing == 0 && bytes(dims) <= min {
        return dims.iter().map(|&d| d.max(1)).collect();
    }
    while bytes(&chunk) < min {
        let before = bytes(&chunk);
        for i in (0..chunk.len()).rev() {
            if growing > 0 {
                match limit(i).filter(|_| can_grow(i)) {
                    None if can_grow(i) => chunk[i] = chunk[i].saturating_mul(2),
                    Some(m) if m > chunk[i] => {
                        chunk[i] = chunk[i].saturating_mul(2);
                        if chunk[i] >= dims[i] {
                            chunk[i] = chunk[i].min(m);
                            growing -= 1;
                        }
                    }
                    _ => continue,
                }
            } else if dims[i] > chunk[i] {
                chunk[i] = chunk[i].saturating_mul(2).min(dims[i]);
            } else {
                continue;
            }
            if bytes(&chunk) > min {
                break;
            }
        }
        if bytes(&chunk) <= before {
            break;
        }
    }
    chunk
}
