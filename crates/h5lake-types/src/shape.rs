use serde_json::{json, Value};

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
    /// A missing or unknown `class`, non-integer dims, maxdims smaller than dims.
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
                    .ok_or_else(|| bad("missing dims"))?
                    .iter()
                    .map(|d| {
                        d.as_u64()
                            .ok_or_else(|| bad("dims must be non-negative integers"))
                    })
                    .collect::<Result<Vec<_>>>()?;
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

    /// Number of elements.
    pub fn num_elements(&self) -> u64 {
        self.dims().iter().product()
    }
}
