//! Parsing what clients send: domain paths, `select=` strings, point lists,
//! field lists, and the shape/type forms HSDS accepts in bodies. Pure
//! functions, so that they can be tested (and fuzzed) without a server.

use h5lake_types::{DimSel, Selection, UNLIMITED};
use serde_json::{json, Value};

use crate::error::{Result, ServerError};

fn bad(msg: impl Into<String>) -> ServerError {
    ServerError::BadRequest(msg.into())
}

/// Longest domain path accepted (S3 keys are limited to 1024 bytes).
const MAX_DOMAIN_LEN: usize = 900;
/// Longest name of one folder or domain in a path: what local file
/// systems allow for one name (NAME_MAX).
const MAX_SEGMENT_LEN: usize = 255;
/// Largest number of elements a dataset or attribute may declare: beyond
/// this, shapes are almost certainly mistakes (or attacks on the planner).
pub const MAX_ELEMENTS: u128 = 1 << 60;

/// A checked domain path: `/a/b/c` (no trailing slash; `/` is the bucket
/// top). Rejects anything that could reach outside its own directory or
/// into the object tree (`db/`).
///
/// # Errors
/// [`ServerError::BadRequest`] naming the problem.
pub fn domain_path(raw: &str) -> Result<String> {
    if !raw.starts_with('/') {
        return Err(bad(format!(
            "invalid domain {raw:?}: domains are absolute paths (/home/user/file.h5)"
        )));
    }
    if raw.len() > MAX_DOMAIN_LEN {
        return Err(bad("domain path too long"));
    }
    let trimmed = raw.trim_end_matches('/');
    if trimmed.is_empty() {
        return Ok("/".into());
    }
    for (i, seg) in trimmed[1..].split('/').enumerate() {
        if seg.len() > MAX_SEGMENT_LEN {
            return Err(bad(format!(
                "invalid domain: a path segment is longer than {MAX_SEGMENT_LEN} bytes"
            )));
        }
        if seg.is_empty() || seg == "." || seg == ".." {
            return Err(bad(format!(
                "invalid domain {raw:?}: empty, '.' or '..' path segment"
            )));
        }
        if seg.chars().any(|c| c.is_control() || c == '\\') {
            return Err(bad(format!(
                "invalid domain {raw:?}: control character or backslash"
            )));
        }
        if seg == ".domain.json" || (i == 0 && seg == "db") {
            return Err(bad(format!(
                "invalid domain {raw:?}: reserved name {seg:?}"
            )));
        }
    }
    Ok(trimmed.to_string())
}

/// The store key of a domain's (or folder's) document.
pub fn domain_key(domain: &str) -> String {
    let p = domain.trim_matches('/');
    if p.is_empty() {
        ".domain.json".into()
    } else {
        format!("{p}/.domain.json")
    }
}

fn parse_u64(s: &str, what: &str, dim: usize) -> Result<u64> {
    s.trim()
        .parse::<u64>()
        .map_err(|_| bad(format!("invalid {what} {s:?} for dimension {dim}")))
}

/// Splits `a,b,[c,d],e` at the commas outside brackets.
fn split_top(s: &str) -> Result<Vec<&str>> {
    let mut out = Vec::new();
    let (mut depth, mut start) = (0usize, 0usize);
    for (i, c) in s.char_indices() {
        match c {
            '[' => {
                depth += 1;
                if depth > 1 {
                    return Err(bad("nested brackets in selection"));
                }
            }
            ']' => {
                depth = depth
                    .checked_sub(1)
                    .ok_or_else(|| bad("unbalanced ']' in selection"))?;
            }
            ',' if depth == 0 => {
                out.push(&s[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    if depth != 0 {
        return Err(bad("unbalanced '[' in selection"));
    }
    out.push(&s[start..]);
    Ok(out)
}

/// Parses HSDS's `select` parameter, `[a:b:s, c, [i,j,k], :]` (one item per
/// dimension; `a:b` is a half-open slice with optional step `s`, `c` a
/// single index, `[i,j,k]` increasing coordinates), against the extent
/// `dims`. `None` or empty selects everything.
///
/// # Errors
/// Malformed strings, wrong rank, indices outside the extent.
pub fn parse_select(select: Option<&str>, dims: &[u64]) -> Result<Selection> {
    let Some(s) = select.map(str::trim).filter(|s| !s.is_empty()) else {
        return Ok(Selection::all(dims));
    };
    let inner = s
        .strip_prefix('[')
        .and_then(|s| s.strip_suffix(']'))
        .ok_or_else(|| {
            bad(format!(
                "invalid selection {s:?}: expected [start:stop:step,...]"
            ))
        })?;
    if inner.trim().is_empty() {
        if dims.is_empty() {
            return Ok(Selection::Orthogonal(Vec::new()));
        }
        return Err(bad("empty selection for a dataset of rank > 0"));
    }
    let items = split_top(inner)?;
    if items.len() != dims.len() {
        return Err(bad(format!(
            "selection has rank {} but the dataset has rank {}",
            items.len(),
            dims.len()
        )));
    }
    let mut sels = Vec::with_capacity(dims.len());
    for (dim, (item, &extent)) in items.iter().zip(dims).enumerate() {
        let item = item.trim();
        if let Some(list) = item.strip_prefix('[') {
            let list = list
                .strip_suffix(']')
                .ok_or_else(|| bad(format!("invalid coordinate list for dimension {dim}")))?;
            let coords = list
                .split(',')
                .map(|c| parse_u64(c, "coordinate", dim))
                .collect::<Result<Vec<u64>>>()?;
            if coords.windows(2).any(|w| w[0] >= w[1]) {
                return Err(bad(format!(
                    "coordinates for dimension {dim} must be strictly increasing"
                )));
            }
            if coords.last().is_some_and(|&c| c >= extent) {
                return Err(bad(format!(
                    "coordinate out of range for dimension {dim} (extent {extent})"
                )));
            }
            sels.push(DimSel::Indices(coords));
        } else if item.contains(':') {
            let parts: Vec<&str> = item.split(':').map(str::trim).collect();
            if parts.len() > 3 {
                return Err(bad(format!("invalid slice {item:?} for dimension {dim}")));
            }
            let start = match parts[0] {
                "" => 0,
                p => parse_u64(p, "start", dim)?,
            };
            let stop = match parts[1] {
                "" => extent,
                p => parse_u64(p, "stop", dim)?,
            };
            let step = match parts.get(2).copied() {
                None | Some("") => 1,
                Some(p) => parse_u64(p, "step", dim)?,
            };
            if step == 0 {
                return Err(bad(format!("step must be >= 1 for dimension {dim}")));
            }
            if stop > extent || start > stop || (start == extent && extent > 0 && start != stop) {
                return Err(bad(format!(
                    "slice {start}:{stop} out of range for dimension {dim} (extent {extent})"
                )));
            }
            let count = (stop - start).div_ceil(step);
            sels.push(DimSel::Slice { start, count, step });
        } else {
            let i = parse_u64(item, "index", dim)?;
            if i >= extent {
                return Err(bad(format!(
                    "index {i} out of range for dimension {dim} (extent {extent})"
                )));
            }
            sels.push(DimSel::Slice {
                start: i,
                count: 1,
                step: 1,
            });
        }
    }
    Ok(Selection::Orthogonal(sels))
}

/// HSDS's other way to send a hyperslab: `start`, `stop` and optional `step`
/// keys (numbers or lists) in a JSON body; turned into a `select` string.
///
/// # Errors
/// Keys of different ranks or that are not non-negative integers.
pub fn select_from_body(body: &Value) -> Result<Option<String>> {
    if let Some(s) = body.get("select") {
        return match s {
            Value::String(s) => Ok(Some(s.clone())),
            // Per dimension: an index, or a list of coordinates (HSDS's
            // JSON form of the same selection).
            Value::Array(dims) => {
                let part = |d: &Value| -> Result<String> {
                    match d {
                        Value::Number(n) => n
                            .as_u64()
                            .map(|i| i.to_string())
                            .ok_or_else(|| bad(format!("invalid index {n} in select"))),
                        Value::Array(coords) => {
                            let c: Vec<String> = coords
                                .iter()
                                .map(|x| {
                                    x.as_u64().map(|i| i.to_string()).ok_or_else(|| {
                                        bad(format!("invalid coordinate {x} in select"))
                                    })
                                })
                                .collect::<Result<_>>()?;
                            Ok(format!("[{}]", c.join(",")))
                        }
                        other => Err(bad(format!("invalid select entry {other}"))),
                    }
                };
                let parts: Vec<String> = dims.iter().map(part).collect::<Result<_>>()?;
                Ok(Some(format!("[{}]", parts.join(","))))
            }
            _ => Err(bad("select must be a string or a list")),
        };
    }
    let Some(start) = body.get("start") else {
        return Ok(None);
    };
    let list = |v: &Value, what: &str| -> Result<Vec<u64>> {
        match v {
            Value::Array(a) => a
                .iter()
                .map(|x| {
                    x.as_u64()
                        .ok_or_else(|| bad(format!("invalid {what} value {x}")))
                })
                .collect(),
            x => Ok(vec![x
                .as_u64()
                .ok_or_else(|| bad(format!("invalid {what} value {x}")))?]),
        }
    };
    let start = list(start, "start")?;
    let stop = list(
        body.get("stop").ok_or_else(|| bad("start without stop"))?,
        "stop",
    )?;
    let step = match body.get("step") {
        Some(s) => list(s, "step")?,
        None => vec![1; start.len()],
    };
    if stop.len() != start.len() || step.len() != start.len() {
        return Err(bad("start, stop and step have different ranks"));
    }
    let items: Vec<String> = (0..start.len())
        .map(|i| format!("{}:{}:{}", start[i], stop[i], step[i]))
        .collect();
    Ok(Some(format!("[{}]", items.join(","))))
}

/// Points of a point selection from a binary body: `npoints × rank`
/// little-endian u64 coordinates (what h5pyd POSTs).
///
/// # Errors
/// A length that is not a whole number of points; no points.
pub fn points_from_bytes(body: &[u8], dims: &[u64]) -> Result<Selection> {
    let rank = dims.len();
    if rank == 0 || body.is_empty() || body.len() % (8 * rank) != 0 {
        return Err(bad(format!(
            "binary point list of {} bytes is not a whole number of {rank}-dimensional u64 points",
            body.len()
        )));
    }
    let coords = body
        .chunks_exact(8)
        .map(|c| u64::from_le_bytes(c.try_into().expect("8 bytes")))
        .collect();
    checked_points(rank, coords, dims)
}

/// Points from JSON: a list of coordinates for rank 1, else a list of
/// `rank`-long lists.
///
/// # Errors
/// Wrong nesting, lengths or non-integers; no points.
pub fn points_from_json(points: &Value, dims: &[u64]) -> Result<Selection> {
    let rank = dims.len();
    let list = points
        .as_array()
        .ok_or_else(|| bad("points must be a list"))?;
    if rank == 0 || list.is_empty() {
        return Err(bad(
            "points need a dataset of rank >= 1 and at least one point",
        ));
    }
    let mut coords = Vec::with_capacity(list.len() * rank);
    for p in list {
        match p {
            Value::Array(c) if c.len() == rank => {
                for x in c {
                    coords.push(
                        x.as_u64()
                            .ok_or_else(|| bad(format!("invalid coordinate {x}")))?,
                    );
                }
            }
            Value::Number(n) if rank == 1 => {
                coords.push(
                    n.as_u64()
                        .ok_or_else(|| bad(format!("invalid coordinate {n}")))?,
                );
            }
            other => return Err(bad(format!("invalid point {other} for rank {rank}"))),
        }
    }
    checked_points(rank, coords, dims)
}

fn checked_points(rank: usize, coords: Vec<u64>, dims: &[u64]) -> Result<Selection> {
    let sel = Selection::Points { rank, coords };
    sel.validate(dims)?;
    Ok(sel)
}

/// The `fields` parameter: member names separated by `:`.
///
/// # Errors
/// Empty names.
pub fn parse_fields(fields: Option<&str>) -> Result<Option<Vec<String>>> {
    let Some(f) = fields.filter(|f| !f.is_empty()) else {
        return Ok(None);
    };
    let names: Vec<String> = f.split(':').map(str::to_string).collect();
    if names.iter().any(String::is_empty) {
        return Err(bad(format!("invalid fields parameter {f:?}")));
    }
    Ok(Some(names))
}

fn dim_of(v: &Value, what: &str) -> Result<u64> {
    match v {
        Value::Null => Ok(UNLIMITED),
        Value::String(s) if s == "H5S_UNLIMITED" => Ok(UNLIMITED),
        v => v.as_u64().ok_or_else(|| bad(format!("invalid {what} {v}"))),
    }
}

fn dims_of(v: &Value, what: &str) -> Result<Vec<u64>> {
    match v {
        Value::Array(a) => a.iter().map(|x| dim_of(x, what)).collect(),
        v => Ok(vec![dim_of(v, what)?]),
    }
}

fn check_elements(dims: &[u64]) -> Result<()> {
    let n = dims
        .iter()
        .try_fold(1u128, |acc, &d| acc.checked_mul(u128::from(d)));
    match n {
        Some(n) if n <= MAX_ELEMENTS => Ok(()),
        _ => Err(bad(format!("shape {dims:?} is too large"))),
    }
}

/// Canonical shape JSON from the forms HSDS accepts: a shape object, a list
/// of dims (with `maxdims` beside it, 0 or `"H5S_UNLIMITED"` = unlimited), an
/// integer, or the strings `H5S_SCALAR` / `H5S_NULL`. A missing shape is
/// scalar.
///
/// # Errors
/// Malformed shapes; more elements than [`MAX_ELEMENTS`].
pub fn shape_json(shape: Option<&Value>, maxdims: Option<&Value>) -> Result<Value> {
    let (dims, max) = match shape {
        None => return Ok(json!({"class": "H5S_SCALAR"})),
        Some(Value::String(s)) if s == "H5S_SCALAR" => return Ok(json!({"class": "H5S_SCALAR"})),
        Some(Value::String(s)) if s == "H5S_NULL" => return Ok(json!({"class": "H5S_NULL"})),
        Some(Value::Object(o)) => match o.get("class").and_then(Value::as_str) {
            Some("H5S_SCALAR") => return Ok(json!({"class": "H5S_SCALAR"})),
            Some("H5S_NULL") => return Ok(json!({"class": "H5S_NULL"})),
            Some("H5S_SIMPLE") => (
                dims_of(
                    o.get("dims")
                        .ok_or_else(|| bad("simple shape without dims"))?,
                    "dimension",
                )?,
                o.get("maxdims").map(|m| dims_of(m, "maxdim")).transpose()?,
            ),
            _ => return Err(bad("invalid shape class")),
        },
        Some(Value::Array(a)) if a.is_empty() => return Ok(json!({"class": "H5S_SCALAR"})),
        Some(v @ (Value::Array(_) | Value::Number(_))) => (
            dims_of(v, "dimension")?,
            maxdims.map(|m| dims_of(m, "maxdim")).transpose()?,
        ),
        Some(v) => return Err(bad(format!("invalid shape {v}"))),
    };
    if dims.contains(&UNLIMITED) {
        return Err(bad("dimensions must be non-negative integers"));
    }
    check_elements(&dims)?;
    let mut out = json!({"class": "H5S_SIMPLE", "dims": dims});
    if let Some(max) = max {
        if max.len() != dims.len() {
            return Err(bad("maxdims must have the rank of the shape"));
        }
        // Unlimited is 0 or "H5S_UNLIMITED" in requests, the string when stored.
        let max: Vec<Value> = max
            .iter()
            .zip(&dims)
            .map(|(&m, &d)| {
                if m == UNLIMITED || m == 0 {
                    Ok(json!("H5S_UNLIMITED"))
                } else if m < d {
                    Err(bad("maxdims smaller than dims"))
                } else {
                    Ok(json!(m))
                }
            })
            .collect::<Result<_>>()?;
        out["maxdims"] = json!(max);
    }
    Ok(out)
}

/// How deeply `v` nests (a number or a string: 1).
pub(crate) fn json_depth(v: &Value) -> usize {
    // (Iterative: the value came from a parser that allows more nesting
    // than a recursion here would want to follow.)
    let mut deepest = 0;
    let mut stack = vec![(v, 1usize)];
    while let Some((v, d)) = stack.pop() {
        deepest = deepest.max(d);
        match v {
            Value::Array(a) => stack.extend(a.iter().map(|x| (x, d + 1))),
            Value::Object(o) => stack.extend(o.values().map(|x| (x, d + 1))),
            _ => {}
        }
    }
    deepest
}

/// Longest name (an object key: a link's, an attribute's) or text of a
/// body's metadata (a path, a type's parts, a creation property), in bytes.
pub(crate) const MAX_NAME_BYTES: usize = 64 << 10;
/// Most bytes of creation properties one object may keep (its chunk table
/// of a linked layout, mostly: bigger ones belong in a chunk table dataset).
pub(crate) const MAX_PROPERTIES_BYTES: usize = 4 << 20;

/// Checks the parts of a body that are kept in documents as sent. A
/// document is read whole by every request on its object, so a few huge
/// strings stored in one (a link name, a soft link's path, an unknown
/// creation property) would cost every later request their size many
/// times over. Names (object keys) anywhere, and texts under `type`,
/// `creationProperties`, `link`/`links`, `h5path`, `h5domain` and `file`,
/// are held to [`MAX_NAME_BYTES`]; creation properties in all to
/// [`MAX_PROPERTIES_BYTES`]. Data is not: `value`, `values`,
/// `value_base64`, `points` and `fillValue` hold whatever they hold, in any
/// body shape (h5pyd nests attributes under `obj_ids`, creates lists).
///
/// # Errors
/// A name or such text longer than [`MAX_NAME_BYTES`]; creation
/// properties past [`MAX_PROPERTIES_BYTES`].
pub(crate) fn check_metadata_text(body: &Value) -> Result<()> {
    // (Iterative, as json_depth.) Per value: whether its texts are held to
    // the limit, and whether it lies in creation properties.
    let mut stack: Vec<(&Value, bool, bool)> = vec![(body, false, false)];
    let mut props = 0usize;
    while let Some((v, held, in_props)) = stack.pop() {
        match v {
            Value::String(t) => {
                if held && t.len() > MAX_NAME_BYTES {
                    return Err(bad(format!(
                        "a text of {} bytes in a path, type or creation property: at most \
                         {MAX_NAME_BYTES} bytes",
                        t.len()
                    )));
                }
                if in_props {
                    props += t.len();
                }
            }
            Value::Array(a) => {
                if in_props {
                    props += 8 * a.len();
                }
                stack.extend(a.iter().map(|x| (x, held, in_props)));
            }
            Value::Object(o) => {
                for (k, x) in o {
                    if k.len() > MAX_NAME_BYTES {
                        return Err(long_name(k.len()));
                    }
                    if in_props {
                        props += k.len() + 8;
                    }
                    let (held, in_props) = match k.as_str() {
                        "value" | "values" | "value_base64" | "points" | "fillValue" => {
                            (false, in_props)
                        }
                        "creationProperties" => (true, true),
                        "type" | "link" | "links" | "h5path" | "h5domain" | "file" => {
                            (true, in_props)
                        }
                        _ => (held, in_props),
                    };
                    stack.push((x, held, in_props));
                }
            }
            _ => {
                if in_props {
                    props += 8;
                }
            }
        }
        if props > MAX_PROPERTIES_BYTES {
            return Err(ServerError::TooLarge(format!(
                "creation properties of more than {MAX_PROPERTIES_BYTES} bytes (a linked \
                 layout of many chunks takes a chunk table: H5D_CHUNKED_REF_INDIRECT)"
            )));
        }
    }
    Ok(())
}

fn long_name(n: usize) -> ServerError {
    bad(format!(
        "a name of {n} bytes: names are at most {MAX_NAME_BYTES} bytes"
    ))
}

/// Type JSON in canonical form: predefined names (`H5T_STD_I32LE`) become
/// type objects; everything is checked by parsing it.
///
/// # Errors
/// Types h5lake does not understand.
pub fn type_json(t: &Value) -> Result<Value> {
    let dt = h5lake_types::Datatype::from_json(t).map_err(|e| bad(format!("invalid type: {e}")))?;
    Ok(match t {
        Value::String(_) => dt.to_json(),
        other => other.clone(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn sl(start: u64, count: u64, step: u64) -> DimSel {
        DimSel::Slice { start, count, step }
    }

    #[test]
    fn select_strings() {
        let s = parse_select(Some("[0:10:2, 3, [1,4,5], :]"), &[10, 5, 6, 7]).unwrap();
        assert_eq!(
            s,
            Selection::Orthogonal(vec![
                sl(0, 5, 2),
                sl(3, 1, 1),
                DimSel::Indices(vec![1, 4, 5]),
                sl(0, 7, 1)
            ])
        );
        assert_eq!(parse_select(None, &[4]).unwrap(), Selection::all(&[4]));
        assert_eq!(
            parse_select(Some("[2:]"), &[4]).unwrap(),
            Selection::Orthogonal(vec![sl(2, 2, 1)])
        );
        assert_eq!(
            parse_select(Some("[:3:2]"), &[4]).unwrap(),
            Selection::Orthogonal(vec![sl(0, 2, 2)])
        );
        assert_eq!(
            parse_select(Some("[]"), &[]).unwrap(),
            Selection::Orthogonal(vec![])
        );
        assert_eq!(
            parse_select(Some("[0:0]"), &[0]).unwrap(),
            Selection::Orthogonal(vec![sl(0, 0, 1)])
        );
        for bad in [
            "0:3",
            "[0:5]",
            "[4]",
            "[0:3:0]",
            "[3:1]",
            "[-1:2]",
            "[0:2,1]",
            "[[2,1]]",
            "[[1,9]]",
            "[a:b]",
            "[1:2:3:4]",
            "[[1,2]",
            "[1]]",
            "[[[1]]]",
            "[]",
            "[,]",
        ] {
            assert!(parse_select(Some(bad), &[4]).is_err(), "{bad} should fail");
        }
    }

    #[test]
    fn body_selections() {
        assert_eq!(
            select_from_body(&json!({"start": [1, 2], "stop": [3, 4]}))
                .unwrap()
                .as_deref(),
            Some("[1:3:1,2:4:1]")
        );
        assert_eq!(
            select_from_body(&json!({"start": 1, "stop": 3, "step": 2}))
                .unwrap()
                .as_deref(),
            Some("[1:3:2]")
        );
        assert!(select_from_body(&json!({"start": [1], "stop": [3, 4]})).is_err());
        assert!(select_from_body(&json!({"start": [-1], "stop": [3]})).is_err());
        assert_eq!(select_from_body(&json!({})).unwrap(), None);
    }

    #[test]
    fn points() {
        let b: Vec<u8> = [1u64, 2, 3, 0]
            .iter()
            .flat_map(|x| x.to_le_bytes())
            .collect();
        assert_eq!(
            points_from_bytes(&b, &[4, 4]).unwrap(),
            Selection::Points {
                rank: 2,
                coords: vec![1, 2, 3, 0]
            }
        );
        assert!(points_from_bytes(&b[..12], &[4, 4]).is_err());
        assert!(points_from_bytes(&b, &[4, 2]).is_err());
        assert!(points_from_json(&json!([1, 3]), &[4]).is_ok());
        assert!(points_from_json(&json!([[1, 3], [0, 0]]), &[4, 4]).is_ok());
        assert!(points_from_json(&json!([[1, 3, 1]]), &[4, 4]).is_err());
        assert!(points_from_json(&json!([]), &[4]).is_err());
        assert!(points_from_json(&json!("x"), &[4]).is_err());
    }

    #[test]
    fn domains() {
        assert_eq!(domain_path("/home/u/f.h5").unwrap(), "/home/u/f.h5");
        assert_eq!(domain_path("/home/u/").unwrap(), "/home/u");
        assert_eq!(domain_path("/").unwrap(), "/");
        for bad in [
            "home/u",
            "/home/../etc",
            "/a//b",
            "/db/x",
            "/a/./b",
            "/a/.domain.json",
            "/a\\b",
        ] {
            assert!(domain_path(bad).is_err(), "{bad}");
        }
        assert!(domain_path(&format!("/home/{}", "x".repeat(256))).is_err());
        assert!(domain_path(&format!("/home/{}", "x".repeat(255))).is_ok());
        assert_eq!(domain_key("/home/u/f.h5"), "home/u/f.h5/.domain.json");
    }

    #[test]
    fn shapes() {
        assert_eq!(
            shape_json(Some(&json!([3, 4])), Some(&json!([0, 4]))).unwrap(),
            json!({"class": "H5S_SIMPLE", "dims": [3, 4], "maxdims": ["H5S_UNLIMITED", 4]})
        );
        assert_eq!(
            shape_json(Some(&json!(5)), None).unwrap(),
            json!({"class": "H5S_SIMPLE", "dims": [5]})
        );
        assert_eq!(
            shape_json(None, None).unwrap(),
            json!({"class": "H5S_SCALAR"})
        );
        assert_eq!(
            shape_json(Some(&json!("H5S_NULL")), None).unwrap(),
            json!({"class": "H5S_NULL"})
        );
        assert!(shape_json(Some(&json!([1u64 << 40, 1u64 << 40])), None).is_err());
        assert!(shape_json(Some(&json!([-1])), None).is_err());
        assert!(shape_json(Some(&json!([4])), Some(&json!([2]))).is_err());
        assert!(shape_json(Some(&json!({"class": "H5S_SIMPLE"})), None).is_err());
    }

    #[test]
    fn fields() {
        assert_eq!(
            parse_fields(Some("a:b")).unwrap(),
            Some(vec!["a".to_string(), "b".to_string()])
        );
        assert_eq!(parse_fields(None).unwrap(), None);
        assert!(parse_fields(Some("a::b")).is_err());
    }

    proptest! {
        #[test]
        fn select_parser_never_panics(s in ".{0,40}", d0 in 0u64..20, d1 in 0u64..20) {
            let _ = parse_select(Some(&s), &[d0, d1]);
            let _ = parse_select(Some(&s), &[d0]);
        }

        #[test]
        fn select_like_strings_never_panic(s in r"\[[0-9:,\[\] -]{0,30}\]", d0 in 0u64..20, d1 in 0u64..20) {
            if let Ok(sel) = parse_select(Some(&s), &[d0, d1]) {
                // whatever parses must be a valid selection of that extent
                prop_assert!(sel.validate(&[d0, d1]).is_ok());
            }
        }

        #[test]
        fn domain_parser_never_panics(s in ".{0,60}") {
            if let Ok(d) = domain_path(&s) {
                prop_assert!(!d.split('/').any(|seg| seg == ".."));
            }
        }

        #[test]
        fn points_parsers_never_panic(b in proptest::collection::vec(any::<u8>(), 0..64), r in 1usize..4) {
            let dims = vec![10u64; r];
            let _ = points_from_bytes(&b, &dims);
            let v = crate::routes::parse_json_body(&b).unwrap_or(Value::Null);
            let _ = points_from_json(&v, &dims);
            let _ = shape_json(Some(&v), None);
            let _ = select_from_body(&v);
        }
    }
}
