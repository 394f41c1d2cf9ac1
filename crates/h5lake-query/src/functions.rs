//! User-defined chunk functions: a reduction over an expression of the
//! fields (`max(abs(height))`, `sum(temp > 300)`), evaluated on every chunk
//! as it is written and merged into a value for any set of chunks.
//! NaN is skipped by every reduction (as numpy's `nanmax`, `nansum`, …).

use serde_json::{json, Value};

use crate::error::{QueryError, Result};
use crate::eval::{eval, Rows, Val};
use crate::expr::{parse_reduction, Node, Reduction, Ty};
use crate::leaf::Leaf;
use crate::stats::Num;

/// Names the per-chunk statistics table gives its own columns (a chunk's
/// coordinates, first element and extent), which no chunk function may
/// take.
pub const RESERVED_NAMES: [&str; 3] = ["chunk", "start", "shape"];

/// A declared chunk function.
#[derive(Clone, Debug, PartialEq)]
pub struct ChunkFunction {
    pub name: String,
    pub text: String,
    pub reduction: Reduction,
    pub node: Node,
}

/// A chunk function's partial result over some elements, which merges
/// with others into the result over all of them.
#[derive(Clone, Debug, PartialEq)]
pub enum FnState {
    /// min or max: the extreme value, if any.
    Extreme(Option<Num>),
    Sum(Num),
    Count(u64),
    Mean {
        sum: f64,
        count: u64,
    },
    Truth(bool),
}

impl ChunkFunction {
    /// Parses `text` as a function over `leaves`.
    ///
    /// # Errors
    /// A name that is not an identifier; a bad expression (with its
    /// position in `text`).
    pub fn parse(name: &str, text: &str, leaves: &[Leaf]) -> Result<Self> {
        let ok_name = !name.is_empty()
            && name.chars().all(|c| c.is_alphanumeric() || c == '_')
            && !name.starts_with(|c: char| c.is_ascii_digit());
        if !ok_name {
            return Err(QueryError::Invalid {
                pos: 0,
                msg: format!("chunk function name {name:?} is not an identifier"),
            });
        }
        if RESERVED_NAMES.contains(&name) {
            return Err(QueryError::Invalid {
                pos: 0,
                msg: format!(
                    "chunk function name {name:?} is taken by the per-chunk table's own \
                     columns ({})",
                    RESERVED_NAMES.join(", ")
                ),
            });
        }
        if leaves.iter().any(|l| l.name == name) {
            return Err(QueryError::Invalid {
                pos: 0,
                msg: format!("chunk function {name:?} has the name of a field"),
            });
        }
        let (reduction, node) = parse_reduction(text, leaves).map_err(|e| match e {
            QueryError::Syntax { pos, msg } => QueryError::Syntax {
                pos,
                msg: format!("in chunk function {name:?}: {msg}"),
            },
            QueryError::Invalid { pos, msg } => QueryError::Invalid {
                pos,
                msg: format!("in chunk function {name:?}: {msg}"),
            },
            other => other,
        })?;
        Ok(Self {
            name: name.to_string(),
            text: text.to_string(),
            reduction,
            node,
        })
    }

    fn float(&self) -> bool {
        self.node.ty() == Ty::Float
    }

    /// The state of no elements.
    pub fn empty(&self) -> FnState {
        match self.reduction {
            Reduction::Min | Reduction::Max => FnState::Extreme(None),
            Reduction::Sum if self.float() => FnState::Sum(Num::Float(0.0)),
            Reduction::Sum => FnState::Sum(Num::Int(0)),
            Reduction::Count => FnState::Count(0),
            Reduction::Mean => FnState::Mean { sum: 0.0, count: 0 },
            Reduction::Any => FnState::Truth(false),
            Reduction::All => FnState::Truth(true),
        }
    }

    /// The function over `rows`.
    pub fn compute(&self, leaves: &[Leaf], rows: Rows<'_>) -> FnState {
        let mut s = self.empty();
        rows.each_block(|block| {
            let v = eval(&self.node, leaves, block);
            self.merge(&mut s, &self.reduce(&v, block.len()));
        });
        s
    }

    /// The function over `n` elements whose expression value is `v`:
    /// each value (NaN skipped) merged in as the state of one element.
    fn reduce(&self, v: &Val, n: usize) -> FnState {
        let mut s = self.empty();
        for i in 0..n {
            let x = v.num(i);
            if matches!(x, Num::Float(f) if f.is_nan()) {
                continue;
            }
            let one = match self.reduction {
                Reduction::Min | Reduction::Max => FnState::Extreme(Some(x)),
                Reduction::Sum => FnState::Sum(x),
                Reduction::Count => FnState::Count(u64::from(x.as_f64() != 0.0)),
                Reduction::Mean => FnState::Mean {
                    sum: x.as_f64(),
                    count: 1,
                },
                Reduction::Any | Reduction::All => FnState::Truth(x.as_f64() != 0.0),
            };
            self.merge(&mut s, &one);
        }
        s
    }

    /// The function over `n` elements that all hold `elem` (a fill value).
    pub fn repeated(&self, leaves: &[Leaf], elem: &[u8], n: u64) -> FnState {
        let one = [(0usize, 1usize)];
        let v = eval(
            &self.node,
            leaves,
            Rows {
                data: elem,
                size: elem.len(),
                runs: &one,
            },
        );
        let mut s = self.reduce(&v, 1);
        if n != 1 {
            match &mut s {
                _ if n == 0 => s = self.empty(),
                // (Past i128, an exact sum would be a lie: a float is not.)
                FnState::Sum(x @ Num::Int(_)) => {
                    let Num::Int(v) = *x else { unreachable!() };
                    *x = v
                        .checked_mul(i128::from(n))
                        .map_or_else(|| Num::Float(v as f64 * n as f64), Num::Int);
                }
                FnState::Sum(Num::Float(x)) => *x *= n as f64,
                FnState::Count(c) => *c *= n,
                FnState::Mean { sum, count } => {
                    *sum *= n as f64;
                    *count *= n;
                }
                _ => {}
            }
        }
        s
    }

    /// Adds `o` (over other elements) into `s`.
    pub fn merge(&self, s: &mut FnState, o: &FnState) {
        match (s, o) {
            (FnState::Extreme(a), FnState::Extreme(b)) => {
                *a = match (*a, *b) {
                    (None, x) | (x, None) => x,
                    (Some(x), Some(y)) => {
                        let x_le = match (x, y) {
                            (Num::Int(p), Num::Int(q)) => p <= q,
                            (p, q) => p.as_f64() <= q.as_f64(),
                        };
                        Some(if x_le == (self.reduction == Reduction::Min) {
                            x
                        } else {
                            y
                        })
                    }
                }
            }
            (FnState::Sum(a), FnState::Sum(b)) => {
                *a = match (*a, *b) {
                    (Num::Int(p), Num::Int(q)) => p
                        .checked_add(q)
                        .map_or_else(|| Num::Float(p as f64 + q as f64), Num::Int),
                    (p, q) => Num::Float(p.as_f64() + q.as_f64()),
                }
            }
            (FnState::Count(a), FnState::Count(b)) => *a += b,
            (FnState::Mean { sum, count }, FnState::Mean { sum: s2, count: c2 }) => {
                *sum += s2;
                *count += c2;
            }
            (FnState::Truth(a), FnState::Truth(b)) => {
                *a = if self.reduction == Reduction::Any {
                    *a || *b
                } else {
                    *a && *b
                }
            }
            _ => {}
        }
    }

    /// The function's value for a state: a number, a bool, or null (min
    /// or max, or the mean, of nothing).
    pub fn value(&self, s: &FnState) -> Value {
        match s {
            FnState::Extreme(None) => Value::Null,
            FnState::Extreme(Some(x)) | FnState::Sum(x) => num_json(*x),
            FnState::Count(c) => json!(c),
            FnState::Mean { count: 0, .. } => Value::Null,
            FnState::Mean { sum, count } => num_json(Num::Float(sum / *count as f64)),
            FnState::Truth(b) => json!(b),
        }
    }

    /// The state as stored with a chunk.
    pub(crate) fn state_from_json(&self, v: &Value) -> Result<FnState> {
        let bad = || QueryError::Corrupt(format!("state of chunk function {}: {v}", self.name));
        Ok(match self.empty() {
            FnState::Extreme(_) => FnState::Extreme(match v {
                Value::Null => None,
                v => Some(num_from_json(v, self.float()).ok_or_else(bad)?),
            }),
            FnState::Sum(_) => FnState::Sum(num_from_json(v, self.float()).ok_or_else(bad)?),
            FnState::Count(_) => FnState::Count(v.as_u64().ok_or_else(bad)?),
            FnState::Mean { .. } => FnState::Mean {
                sum: v
                    .get(0)
                    .and_then(|s| num_from_json(s, true))
                    .map(Num::as_f64)
                    .ok_or_else(bad)?,
                count: v.get(1).and_then(Value::as_u64).ok_or_else(bad)?,
            },
            FnState::Truth(_) => FnState::Truth(v.as_bool().ok_or_else(bad)?),
        })
    }
}

impl FnState {
    pub(crate) fn to_json(&self) -> Value {
        match self {
            FnState::Extreme(None) => Value::Null,
            FnState::Extreme(Some(x)) | FnState::Sum(x) => num_json(*x),
            FnState::Count(c) => json!(c),
            FnState::Mean { sum, count } => json!([num_json(Num::Float(*sum)), count]),
            FnState::Truth(b) => json!(b),
        }
    }
}

fn num_json(x: Num) -> Value {
    match x {
        Num::Int(i) => i64::try_from(i).map_or_else(|_| json!(i.to_string()), |v| json!(v)),
        Num::Float(f) if f.is_finite() => json!(f),
        Num::Float(f) if f > 0.0 => json!("inf"),
        Num::Float(f) if f < 0.0 => json!("-inf"),
        Num::Float(_) => json!("nan"),
    }
}

fn num_from_json(v: &Value, float: bool) -> Option<Num> {
    if let Some(s) = v.as_str() {
        return match s {
            "inf" => Some(Num::Float(f64::INFINITY)),
            "-inf" => Some(Num::Float(f64::NEG_INFINITY)),
            "nan" => Some(Num::Float(f64::NAN)),
            s => s.parse().ok().map(Num::Int),
        };
    }
    if float {
        v.as_f64().map(Num::Float)
    } else {
        v.as_i64().map(|i| Num::Int(i.into()))
    }
}
