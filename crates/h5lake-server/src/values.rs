//! Dataset and attribute values, in JSON and binary.
//!
//! Binary is the stored element bytes in C order (what h5pyd sends and
//! expects); variable-length elements are each a 4-byte little-endian byte
//! count followed by the bytes, HSDS's wire form. Big binary hyperslabs are
//! moved in slabs along the first selected dimension, each at most
//! `slab_bytes`, so a gigabyte request costs the server a few slabs of
//! memory, not a gigabyte.

use std::sync::Arc;

use axum::body::Body;
use axum::extract::{Path, State};
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use base64::Engine;
use bytes::Bytes;
use futures_util::StreamExt;
use h5lake_engine::{DatasetMeta, Domain};
use h5lake_types::{
    fixed_to_json, fixed_to_json_shortest, json_to_fixed, json_to_vlen, nest, record, value_dims,
    vlen_to_json, Datatype, DimSel, Field, Selection, Shape,
};
use serde_json::{json, Value};

use crate::auth::Action;
use crate::budget::{Reservation, JSON_VALUE_BYTES};
use crate::domains::open_domain;
use crate::error::{Result, ServerError};
use crate::nonfinite::{NonFinite, TypedAt};
use crate::objects::{resolve_type, Coll};
use crate::pool::{Pooled, SlabPool};
use crate::request::{
    parse_fields, parse_select, points_from_bytes, points_from_json, select_from_body, shape_json,
};
use crate::routes::{
    blocking, blocking_read, json_body, json_rsp, read_body, typed_rsp, Ctx, Gate,
    JSON_CONTENT_TYPE,
};
use crate::App;

fn bad(msg: impl Into<String>) -> ServerError {
    ServerError::BadRequest(msg.into())
}

// ---- JSON <-> element bytes -------------------------------------------------

/// The bytes of a fixed-size attribute's value, in base64 (`None` for
/// variable-length types and values that do not fit).
pub(crate) fn fixed_base64(attr: &Value) -> Option<String> {
    let t = Datatype::from_json(&attr["type"]).ok()?;
    t.fixed_size()?;
    let dims = value_dims(&Shape::from_json(&attr["shape"]).ok()?);
    let bytes = json_to_fixed(&t, &dims, attr.get("value")?).ok()?;
    Some(base64::engine::general_purpose::STANDARD.encode(bytes))
}

/// HSDS's binary form of variable-length elements.
/// Variable-length elements from a binary body (HSDS's form, see
/// `h5lake_types::record::join_elements`): exactly `n` of them.
///
/// h5pyd sizes the body of records holding arrays of strings 4 bytes per
/// such array too large and leaves the excess zero; HSDS ignores it, and
/// so do we (for records only: any other excess is refused).
fn vlen_from_bytes(dt: &Datatype, b: &[u8], n: usize) -> Result<Vec<Vec<u8>>> {
    let truncated = |_| bad("truncated variable-length element");
    let records = !dt.is_top_level_vlen();
    let out = record::split_elements(dt, b, if records { n } else { n.saturating_add(1) })
        .map_err(truncated)?;
    let used = record::join_elements(dt, &out).len();
    let excess_ok = used == b.len() || (records && b[used..].iter().all(|&x| x == 0));
    if out.len() != n || !excess_ok {
        return Err(bad(format!(
            "{} variable-length elements for a selection of {n}",
            out.len()
        )));
    }
    Ok(out)
}

// ---- attributes ----------------------------------------------------------------

/// Largest attribute value, in bytes of its elements.
const MAX_ATTRIBUTE_BYTES: u128 = 64 << 20;
/// Most JSON values in an attribute: attributes are kept as JSON in their
/// object's document, which every request on the object parses.
const MAX_ATTRIBUTE_VALUES: u64 = 1 << 20;

/// An attribute from a request body (`type`, `shape`, `value`, optional
/// `encoding: base64`) in the stored form: type resolved, value checked
/// against type and shape and, for fixed-size types, stored as plain JSON.
pub(crate) fn attr_from_request(dom: &Domain, body: &Value) -> Result<Value> {
    if !body.is_object() {
        return Err(bad("an attribute must be a JSON object"));
    }
    let t = resolve_type(
        dom,
        body.get("type")
            .ok_or_else(|| bad("expected type in body"))?,
    )?;
    let dt = Datatype::from_json(&t)?;
    let shape = shape_json(body.get("shape"), None)?;
    let s = Shape::from_json(&shape)?;
    let dims = value_dims(&s);
    // An attribute is read and written whole, and lives in its object's
    // document: its size is bounded like a request body.
    let bytes = dims
        .iter()
        .try_fold(dt.fixed_size().unwrap_or(16) as u128, |acc, &d| {
            acc.checked_mul(u128::from(d))
        });
    let values = dims
        .iter()
        .fold(json_values_per_element(&dt), |a, &d| a.saturating_mul(d))
        .saturating_add(nesting_lists(&dims));
    if !matches!(bytes, Some(b) if b <= MAX_ATTRIBUTE_BYTES) || values > MAX_ATTRIBUTE_VALUES {
        return Err(bad(format!(
            "attribute too large: at most {MAX_ATTRIBUTE_BYTES} bytes and {MAX_ATTRIBUTE_VALUES} \
             JSON values (store big data in a dataset)"
        )));
    }
    let raw = body.get("value").filter(|v| !v.is_null());
    let value = match raw {
        None => Value::Null,
        Some(_) if s == Shape::Null => {
            return Err(bad("data can not be included with H5S_NULL space"))
        }
        Some(v) if body.get("encoding").is_some() => {
            if body.get("encoding").and_then(Value::as_str) != Some("base64") {
                return Err(bad("the only encoding supported is base64"));
            }
            let es = dt.fixed_size().ok_or_else(|| {
                bad("base64 encoding is not supported for variable length attributes")
            })?;
            let data = base64::engine::general_purpose::STANDARD
                .decode(
                    v.as_str()
                        .ok_or_else(|| bad("base64 value must be a string"))?,
                )
                .map_err(|_| bad("unable to decode data"))?;
            let n: u64 = dims.iter().product();
            if data.len() as u64 != n * es as u64 {
                return Err(bad(format!(
                    "expected: {} bytes but got: {}",
                    n * es as u64,
                    data.len()
                )));
            }
            fixed_to_json_shortest(&dt, &data, &dims)?
        }
        Some(v) if dt.fixed_size().is_some() => {
            fixed_to_json_shortest(&dt, &json_to_fixed(&dt, &dims, v)?, &dims)?
        }
        Some(v) => {
            json_to_vlen(&dt, &dims, v)?;
            v.clone()
        }
    };
    let mut attr = json!({"type": t, "shape": shape, "value": value});
    if let Some(c) = body.get("created").and_then(Value::as_f64) {
        // HSDS keeps a client's creation time only if it is recent.
        if (h5lake_engine::domain::now() - c).abs() < 10.0 {
            attr["created"] = json!(c);
        }
    }
    Ok(attr)
}

/// `{name: attribute, …}` from a request, each checked.
pub(crate) fn attrs_from_request(dom: &Domain, attrs: &Value) -> Result<Vec<(String, Value)>> {
    attrs
        .as_object()
        .ok_or_else(|| bad("attributes must be an object of name: attribute"))?
        .iter()
        .map(|(n, a)| Ok((n.clone(), attr_from_request(dom, a)?)))
        .collect()
}

fn check_obj(id: &str, coll: &str) -> Result<()> {
    h5lake_engine::ids::parse_id(id).map_err(|_| bad(format!("Invalid object id: {id}")))?;
    if !coll.starts_with(&id[..1]) {
        return Err(bad(format!("{id} is not in /{coll}")));
    }
    Ok(())
}

pub(crate) async fn get_attr_value(
    State(app): State<Arc<App>>,
    ctx: Ctx,
    Coll(coll): Coll,
    Path((id, name)): Path<(String, String)>,
) -> Result<Response> {
    check_obj(&id, coll)?;
    blocking(move || {
        let dom = open_domain(&app, &ctx, Action::Read)?;
        let attr = dom.attr_get(&id, &name)?;
        if attr.pointer("/shape/class").and_then(Value::as_str) == Some("H5S_NULL") {
            return Err(bad("the attribute has a null dataspace: it holds no value"));
        }
        let value = attr.get("value").cloned().unwrap_or(Value::Null);
        if ctx.wants_binary() {
            let dt = Datatype::from_json(&attr["type"])?;
            let s = Shape::from_json(&attr["shape"])?;
            let dims = value_dims(&s);
            let bytes = if dt.fixed_size().is_some() {
                json_to_fixed(&dt, &dims, &value)?
            } else {
                record::join_elements(&dt, &json_to_vlen(&dt, &dims, &value)?)
            };
            return Ok(binary_rsp(bytes));
        }
        let typed: Vec<_> = TypedAt::attribute("/value", &attr).into_iter().collect();
        Ok(typed_rsp(
            StatusCode::OK,
            &json!({"value": value, "hrefs": []}),
            &typed,
            NonFinite::of(&ctx),
        ))
    })
    .await
}

pub(crate) async fn put_attr_value(
    State(app): State<Arc<App>>,
    ctx: Ctx,
    Coll(coll): Coll,
    Path((id, name)): Path<(String, String)>,
    body: Body,
) -> Result<Response> {
    check_obj(&id, coll)?;
    let binary = ctx.sends_binary();
    let data = read_body(&app, &ctx, body, Gate::On(Action::Update)).await?;
    blocking(move || {
        let dom = open_domain(&app, &ctx, Action::Update)?;
        let mut attr = dom.attr_get(&id, &name)?;
        let dt = Datatype::from_json(&attr["type"])?;
        let s = Shape::from_json(&attr["shape"])?;
        let dims = value_dims(&s);
        let value = if binary {
            match dt.fixed_size() {
                Some(es) => {
                    if data.len() as u64 != dims.iter().product::<u64>() * es as u64 {
                        return Err(bad(
                            "binary value does not match the attribute's type and shape",
                        ));
                    }
                    fixed_to_json(&dt, &data, &dims)?
                }
                None => {
                    let items = vlen_from_bytes(&dt, &data, dims.iter().product::<u64>() as usize)?;
                    nest(
                        items
                            .iter()
                            .map(|i| vlen_to_json(&dt, i).map_err(ServerError::from))
                            .collect::<Result<_>>()?,
                        &dims,
                    )
                }
            }
        } else {
            let body = crate::routes::parse_json_limited(&app, &data)?;
            let mut req = json!({"type": attr["type"], "shape": attr["shape"]});
            req["value"] = body
                .get("value")
                .cloned()
                .ok_or_else(|| bad("no value in body"))?;
            attr_from_request(&dom, &req)?["value"].take()
        };
        attr["value"] = value;
        if let Some(o) = attr.as_object_mut() {
            o.remove("encoding");
        }
        dom.attr_create(&id, &name, attr, true)?;
        Ok(json_rsp(StatusCode::OK, json!({})))
    })
    .await
}

// ---- dataset values ------------------------------------------------------------

fn binary_rsp(bytes: impl Into<Bytes>) -> Response {
    (
        StatusCode::OK,
        [(header::CONTENT_TYPE, "application/octet-stream")],
        bytes.into(),
    )
        .into_response()
}

/// The selectable dims: none for a scalar (whose stored extent is `[1]`).
fn sel_dims(m: &DatasetMeta) -> Vec<u64> {
    if m.shape == Shape::Scalar {
        Vec::new()
    } else {
        m.dims.clone()
    }
}

/// The type of what a read with `fields` returns: the named members, packed
/// in the order given.
fn projected_type(t: &Datatype, fields: Option<&[String]>, vlen_ok: bool) -> Result<Datatype> {
    let Some(names) = fields else {
        return Ok(t.clone());
    };
    let Datatype::Compound { fields: all, .. } = t else {
        return Err(bad("fields given for a dataset whose type is not compound"));
    };
    let by_name: std::collections::HashMap<&str, &Field> =
        all.iter().map(|f| (f.name.as_str(), f)).collect();
    let mut seen = std::collections::HashSet::with_capacity(names.len());
    let mut out = Vec::with_capacity(names.len());
    let mut offset = 0;
    let mut variable = false;
    for n in names {
        let f = by_name
            .get(n.as_str())
            .ok_or_else(|| bad(format!("no field {n:?} in the dataset's type")))?;
        if !seen.insert(n.as_str()) {
            return Err(bad(format!("field {n:?} is named twice")));
        }
        let size = match f.dtype.fixed_size() {
            Some(size) => size,
            None if vlen_ok => {
                variable = true;
                0
            }
            None => {
                return Err(bad(format!(
                    "field {n:?} is of variable length: fields= picks fixed-size fields (read \
                     whole rows, or ask for Arrow, for the others)"
                )))
            }
        };
        out.push(Field {
            name: f.name.clone(),
            dtype: f.dtype.clone(),
            offset,
        });
        offset += size;
    }
    if variable {
        // The layout of a compound with variable-length members.
        let members: Vec<Value> = out
            .iter()
            .map(|f| json!({"name": f.name, "type": f.dtype.to_json()}))
            .collect();
        return Ok(Datatype::from_json(
            &json!({"class": "H5T_COMPOUND", "fields": members}),
        )?);
    }
    Ok(Datatype::Compound {
        fields: out,
        size: offset,
    })
}

/// What a value request selects and how.
struct Plan {
    dom: Arc<Domain>,
    id: String,
    meta: Arc<DatasetMeta>,
    sel: Selection,
    fields: Option<Vec<String>>,
    /// Type of the elements on the wire.
    wire: Datatype,
    /// Only the elements where this condition holds are answered
    /// (`query=`, in h5lake's expression language: see h5lake-query).
    query: Option<String>,
    /// The server's memory budget, for what the plan's steps hold.
    memory: Arc<crate::budget::Budget>,
    /// What the request holds of it (its body, the plan's own reservations).
    request: Arc<crate::budget::RequestMemory>,
    /// Whether the plan writes its selection.
    writing: bool,
    /// What the engine holds of the chunks the selection reaches while it
    /// reads or writes them ([`Domain::chunk_work_bytes`]), reserved for as
    /// long as the plan lives.
    work: Reservation,
}

impl Plan {
    /// The plan for the selection `sel` instead (the points a body names):
    /// the memory of the chunks it reaches is reserved anew.
    /// The plan with the memory of the chunks its own selection reaches
    /// reserved.
    fn reserved(self) -> Result<Plan> {
        let sel = self.sel.clone();
        self.with_selection(sel)
    }

    fn with_selection(self, sel: Selection) -> Result<Plan> {
        let p = self.reserved_for(&sel)?;
        Ok(Plan { sel, ..p })
    }

    /// The plan with the memory of the chunks `part` reaches reserved
    /// instead: a streamed transfer works on one part of its selection at
    /// a time.
    fn reserved_for(mut self, part: &Selection) -> Result<Plan> {
        // (What was held before is given back first.)
        self.work = Reservation::nothing();
        let whole = self.fields.is_none() && covers_whole_chunks(&self.meta, part);
        self.work = reserve_work(
            &self.memory,
            &self.request,
            &self.dom,
            &self.meta,
            part,
            self.writing,
            whole,
        )?;
        Ok(self)
    }

    /// Reserves `bytes` more for this plan's request: refused at once when
    /// it could not hold them with what it holds (see
    /// [`crate::budget::RequestMemory`]).
    fn reserve(&self, bytes: usize, what: &str) -> Result<Reservation> {
        self.request.reserve_blocking(&self.memory, bytes, what)
    }

    /// Whether the selection is fixed-size data of at most `limit` bytes
    /// (no query, which may scan far more than it answers).
    fn is_small(&self, limit: u64) -> bool {
        self.query.is_none()
            && self
                .wire
                .fixed_size()
                .is_some_and(|es| self.sel.num_elements().saturating_mul(es as u64) <= limit)
            && self.chunk_work() <= limit.saturating_mul(4)
            && self
                .meta
                .stats
                .as_ref()
                .is_none_or(|s| s.functions.is_empty())
    }

    /// At most how many bytes of chunks the request decodes (and, writing
    /// part of a chunk, encodes again): a small selection of big or many
    /// chunks is not a small request.
    fn chunk_work(&self) -> u64 {
        let es = self.meta.dtype.fixed_size().unwrap_or(16) as u64;
        let chunk_bytes = self.meta.chunk.iter().fold(es, |a, &c| a.saturating_mul(c));
        chunks_reached(&self.meta, &self.sel, 1 << 16).saturating_mul(chunk_bytes)
    }

    fn out_shape(&self) -> Vec<u64> {
        match &self.sel {
            Selection::Orthogonal(s) if s.is_empty() => Vec::new(),
            s => s.out_shape(),
        }
    }
}

/// HSDS's `append` (a query parameter, or a key of a JSON body): how many
/// rows the value adds along `append_dim` (default 0).
fn append_of(ctx: &Ctx, body: Option<&Value>) -> Result<Option<(u64, usize)>> {
    let get = |k: &str| -> Result<Option<u64>> {
        match (body.and_then(|b| b.get(k)), ctx.param(k)) {
            (Some(v), _) => v
                .as_u64()
                .map(Some)
                .ok_or_else(|| bad(format!("{k} must be a non-negative integer"))),
            (None, Some(p)) => p
                .parse()
                .map(Some)
                .map_err(|_| bad(format!("{k} must be a non-negative integer"))),
            (None, None) => Ok(None),
        }
    };
    let Some(n) = get("append")? else {
        return Ok(None);
    };
    if n == 0 {
        return Err(bad("append must add at least one row"));
    }
    Ok(Some((n, get("append_dim")?.unwrap_or(0) as usize)))
}

/// Extends the dataset by `n` along `dim` (409 past its maximum extent) and
/// gives the selection of the rows added, for the value to fill.
fn append_rows(app: &App, ctx: &Ctx, id: &str, n: u64, dim: usize) -> Result<String> {
    check_obj(id, "datasets")?;
    let dom = open_domain(app, ctx, Action::Update)?;
    let m = dom.dataset(id)?;
    if let Shape::Simple {
        maxdims: Some(max), ..
    } = &m.shape
    {
        let past = max
            .get(dim)
            .is_some_and(|&x| x != h5lake_types::UNLIMITED && m.dims[dim].saturating_add(n) > x);
        if past {
            return Err(ServerError::Conflict(format!(
                "appending {n} rows along dimension {dim} passes its maximum extent {max:?}"
            )));
        }
    }
    // The rows the value will fill, checked before the extent grows (a
    // refused write must leave the dataset as it was).
    let rows: Vec<DimSel> = m
        .dims
        .iter()
        .enumerate()
        .map(|(d, &x)| DimSel::Slice {
            start: if d == dim { x } else { 0 },
            count: if d == dim { n } else { x },
            step: 1,
        })
        .collect();
    check_chunks_written(app, &m, &Selection::Orthogonal(rows))?;
    // (The engine adds the rows to the extent as it is when it commits:
    // concurrent appends each get rows of their own.)
    let (old, new) = dom.extend(id, dim, n)?;
    let parts: Vec<String> = old
        .iter()
        .zip(&new)
        .enumerate()
        .map(|(d, (o, x))| {
            if d == dim {
                format!("{o}:{x}")
            } else {
                format!("0:{x}")
            }
        })
        .collect();
    Ok(format!("[{}]", parts.join(",")))
}

/// The `fields` of a JSON body (HSDS takes them there as in the URL).
fn fields_from_body(body: &Value) -> Result<Option<String>> {
    match body.get("fields") {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(_) => Err(bad("fields must be a string of names separated by ':'")),
    }
}

/// The plan of a value request, before the memory of its chunks is
/// reserved ([`Plan::with_selection`] reserves it, for the selection a body
/// may still name).
fn plan_unreserved(
    app: &App,
    ctx: &Ctx,
    id: &str,
    action: Action,
    body_points: Option<&Value>,
    body_select: Option<String>,
    body_fields: Option<String>,
) -> Result<Plan> {
    check_obj(id, "datasets")?;
    let dom = open_domain(app, ctx, action)?;
    let meta = dom.dataset(id)?;
    if meta.shape == Shape::Null {
        return Err(bad("the dataset has a null dataspace; it holds no values"));
    }
    let dims = sel_dims(&meta);
    // (Points are the selection as given: a write of two points of a huge
    // dataset reaches two chunks, not every chunk of it.)
    let sel = match body_points {
        Some(v) => points_from_json(v, &dims)?,
        None => parse_select(body_select.as_deref().or(ctx.param("select")), &dims)?,
    };
    if !dims.is_empty() {
        sel.validate(&meta.dims)?;
    }
    if action == Action::Update {
        check_chunks_written(app, &meta, &sel)?;
    }
    let fields = parse_fields(body_fields.as_deref().or(ctx.param("fields")))?;
    // Arrow answers of rows carry variable-length members too (their
    // columns are read as they are); other answers hold fixed-size ones.
    let vlen_ok = action == Action::Read && ctx.wants_arrow();
    let wire = projected_type(&meta.dtype, fields.as_deref(), vlen_ok)?;
    let query = match ctx.param("query") {
        Some(q) if action == Action::Read => {
            h5lake_engine::stats::check_condition(&meta, q)
                .map_err(|e| bad(format!("invalid query: {e}")))?;
            // Of a compound with members of variable length, the engine
            // matches on its fixed-size members; whole rows are read after
            // by their coordinates, or just the fixed-size fields named.
            if fields.is_some() && wire.fixed_size().is_none() {
                return Err(bad(
                    "a query answers fields of variable length only with whole rows: \
                     name fixed-size fields, or none",
                ));
            }
            Some(q.to_string())
        }
        Some(_) => {
            return Err(ServerError::NotImplemented(
                "query updates are not supported by h5lake serve".into(),
            ))
        }
        None => None,
    };
    Ok(Plan {
        id: id.to_string(),
        fields,
        wire,
        query,
        memory: app.budget.clone(),
        request: ctx.memory.clone(),
        writing: action == Action::Update,
        work: Reservation::nothing(),
        dom,
        meta,
        sel,
    })
}

/// Reserves what the engine holds of the chunks of `meta` that `sel`
/// reaches while it reads or (`writing`) writes them: a read of a few
/// bytes of a compressed 128 MiB chunk holds the whole chunk decoded.
fn reserve_work(
    memory: &crate::budget::Budget,
    request: &Arc<crate::budget::RequestMemory>,
    dom: &Domain,
    meta: &DatasetMeta,
    sel: &Selection,
    writing: bool,
    whole: bool,
) -> Result<Reservation> {
    // (More chunks than the engine works on at once change nothing.)
    let chunks = chunks_reached(meta, sel, 1 << 10);
    // Points named in a body are held as given and again in the pieces
    // of a streamed transfer (see [`slabs`]): each coordinate's 8 bytes,
    // twice.
    let points = match sel {
        Selection::Points { coords, .. } => coords.len().saturating_mul(2 * 8),
        Selection::Orthogonal(_) => 0,
    };
    request.reserve_blocking(
        memory,
        dom.chunk_work_bytes(meta, chunks, writing, whole)
            .saturating_add(points),
        "the chunks this request reads and decodes",
    )
}

/// Whether `sel` takes every chunk of `m` it reaches whole (an edge chunk,
/// partly outside the extent, is not taken whole: the engine decodes it).
fn covers_whole_chunks(m: &DatasetMeta, sel: &Selection) -> bool {
    let chunk = |d: usize| m.chunk.get(d).copied().unwrap_or(1).max(1);
    match sel {
        Selection::Orthogonal(sels) => sels.iter().enumerate().all(|(d, s)| {
            let c = chunk(d);
            let edge = m.dims.get(d).copied().unwrap_or(1);
            match s {
                DimSel::Slice { start, count, step } => {
                    let end = start + count;
                    c == 1 || (*step == 1 && start % c == 0 && end % c == 0 && end <= edge)
                }
                DimSel::Indices(_) => c == 1,
            }
        }),
        Selection::Points { .. } => (0..m.dims.len()).all(|d| chunk(d) == 1),
    }
}

/// How many of a dataset's chunks (of extent `c` along this dimension)
/// one dimension of a selection reaches.
fn chunks_along(d: &DimSel, c: u64) -> u64 {
    let c = c.max(1);
    match d {
        DimSel::Slice { count: 0, .. } => 0,
        DimSel::Slice { count, step, .. } if *step >= c => *count,
        DimSel::Slice { start, count, step } => (start + (count - 1) * step) / c - start / c + 1,
        DimSel::Indices(ix) => {
            let mut n = 0;
            let mut last = None;
            for &i in ix {
                if last != Some(i / c) {
                    n += 1;
                    last = Some(i / c);
                }
            }
            n
        }
    }
}

/// How many chunks of `m` the selection `sel` reaches (of points, counted
/// up to a little past `cap`).
fn chunks_reached(m: &DatasetMeta, sel: &Selection, cap: usize) -> u64 {
    let chunk = |d: usize| m.chunk.get(d).copied().unwrap_or(1);
    match sel {
        Selection::Orthogonal(sels) => sels
            .iter()
            .enumerate()
            .map(|(d, s)| chunks_along(s, chunk(d)))
            .fold(1u64, u64::saturating_mul),
        Selection::Points { rank, coords } => {
            let rank = (*rank).max(1);
            let mut seen = std::collections::HashSet::new();
            for pt in coords.chunks(rank) {
                let key: Vec<u64> = pt
                    .iter()
                    .enumerate()
                    .map(|(d, &x)| x / chunk(d).max(1))
                    .collect();
                seen.insert(key);
                if seen.len() > cap {
                    break;
                }
            }
            seen.len() as u64
        }
    }
}

/// Refuses (413) a write of `sel` that reaches more chunks of `m` than
/// the server's `max_chunks_per_write`, before anything is read or written.
fn check_chunks_written(app: &App, m: &DatasetMeta, sel: &Selection) -> Result<()> {
    let chunks = chunks_reached(m, sel, app.cfg.max_chunks_per_write);
    if chunks > app.cfg.max_chunks_per_write as u64 {
        return Err(ServerError::TooLarge(format!(
            "this write reaches {chunks} chunks of the dataset, more than the {} one write \
             may reach (--max-chunks-per-write); write it in parts",
            app.cfg.max_chunks_per_write
        )));
    }
    Ok(())
}

/// Splits an orthogonal selection along its first dimension into pieces of
/// at most `rows` indices. A step-1 slice is cut at multiples of `align`
/// (the chunk extent) when `rows` allows, so that each piece covers whole
/// chunks and a write needs no read-modify-write.
fn split_rows(sels: &[DimSel], rows: u64, align: u64) -> Vec<Vec<DimSel>> {
    let Some((first, rest)) = sels.split_first() else {
        return vec![Vec::new()];
    };
    let mut rows = rows.max(1);
    let piece = |d: DimSel| {
        let mut v = vec![d];
        v.extend_from_slice(rest);
        v
    };
    let mut out = Vec::new();
    match first {
        DimSel::Slice { start, count, step } => {
            let aligned = *step == 1 && align > 1 && rows >= align;
            if aligned {
                rows = rows / align * align;
            }
            let mut done = 0;
            loop {
                let mut n = rows.min(count - done);
                if aligned && done + n < *count {
                    let end = (start + done + n) / align * align;
                    if end > start + done {
                        n = end - start - done;
                    }
                }
                out.push(piece(DimSel::Slice {
                    start: start + done * step,
                    count: n,
                    step: *step,
                }));
                done += n;
                if done >= *count {
                    break;
                }
            }
        }
        DimSel::Indices(ix) => {
            for c in ix.chunks(rows as usize) {
                out.push(piece(DimSel::Indices(c.to_vec())));
            }
            if ix.is_empty() {
                out.push(piece(DimSel::Indices(Vec::new())));
            }
        }
    }
    out
}

/// Slabs of a plan for binary transfer: (selection, bytes) pairs.
fn slabs(p: &Plan, slab_bytes: usize) -> Result<Vec<(Selection, usize)>> {
    let es = p.wire.fixed_size().unwrap_or(0);
    match &p.sel {
        Selection::Orthogonal(sels) if !sels.is_empty() => {
            let row = sels[1..]
                .iter()
                .try_fold(es as u64, |acc, s| acc.checked_mul(s.len()))
                .ok_or_else(|| ServerError::TooLarge("selection too large".into()))?;
            // A slab holds at most `slab_bytes`, and reaches at most
            // SLAB_CHUNKS chunks: the engine plans each chunk a slab
            // reaches, so over tiny chunks that bounds its memory.
            let chunk0 = p.meta.chunk.first().copied().unwrap_or(1).max(1);
            let per_block: u64 = sels[1..]
                .iter()
                .enumerate()
                .map(|(d, s)| chunks_along(s, p.meta.chunk.get(d + 1).copied().unwrap_or(1)))
                .fold(1u64, u64::saturating_mul);
            let by_chunks = match &sels[0] {
                DimSel::Slice { step, .. } if *step < chunk0 => (SLAB_CHUNKS / per_block.max(1))
                    .max(1)
                    .saturating_mul(chunk0 / step),
                _ => (SLAB_CHUNKS / per_block.max(1)).max(1),
            };
            let rows = (slab_bytes as u64 / row.max(1)).max(1).min(by_chunks);
            // The slab list is built up front: refuse requests that would
            // need an absurd number of them (terabytes) rather than the memory.
            if sels[0].len() / rows > MAX_SLABS || row > usize::MAX as u64 / 2 {
                return Err(ServerError::TooLarge(
                    "selection too large for one request; read it in parts".into(),
                ));
            }
            Ok(
                split_rows(sels, rows, p.meta.chunk.first().copied().unwrap_or(1))
                    .into_iter()
                    .map(|s| {
                        let sel = Selection::Orthogonal(s);
                        let n = sel.num_elements() as usize * es;
                        (sel, n)
                    })
                    .collect(),
            )
        }
        // Points in pieces too: the engine plans each point's chunk, and
        // points each in a chunk of their own made that plan, for all of a
        // body's points at once, several times the budget.
        Selection::Points { rank, coords } if *rank > 0 => {
            let per = (slab_bytes / es.max(1)).clamp(1, SLAB_CHUNKS as usize);
            Ok(coords
                .chunks(per.saturating_mul(*rank))
                .map(|c| {
                    let sel = Selection::Points {
                        rank: *rank,
                        coords: c.to_vec(),
                    };
                    (sel, c.len() / rank * es)
                })
                .collect())
        }
        s => Ok(vec![(s.clone(), s.num_elements() as usize * es)]),
    }
}

/// Memory a streamed transfer holds: two slabs at once (one moving over the
/// network, one being read or written), each up to the biggest.
fn slabs_in_flight(pieces: &[(Selection, usize)]) -> usize {
    let biggest = pieces.iter().map(|(_, n)| *n).max().unwrap_or(0);
    biggest.saturating_mul(pieces.len().min(2))
}

/// Most slabs one binary request may take (at 8 MiB each, 8 TiB).
const MAX_SLABS: u64 = 1 << 20;

/// Most chunks one slab of a streamed transfer reaches (see [`slabs`]).
const SLAB_CHUNKS: u64 = 1 << 16;

/// Memory the engine's plan of one slab of a streamed transfer takes at
/// most (a slab reaches at most [`SLAB_CHUNKS`] chunks).
const SLAB_PLAN_BYTES: usize = SLAB_CHUNKS as usize * PLAN_BYTES_PER_CHUNK;

/// Memory the engine's plan of a read takes per chunk it reaches (its
/// task, the chunk's key and what is fetched for it; measured at about
/// 35 bytes over one-byte chunks).
const PLAN_BYTES_PER_CHUNK: usize = 64;

/// Memory the plan of reading all of `p`'s selection at once takes.
fn plan_bytes(p: &Plan) -> usize {
    // (Points reach at most one chunk each: counted so, without a set of
    // their chunks.)
    let chunks = match &p.sel {
        Selection::Points { .. } => p.sel.num_elements(),
        sel => chunks_reached(&p.meta, sel, 0),
    };
    usize::try_from(chunks)
        .unwrap_or(usize::MAX)
        .saturating_mul(PLAN_BYTES_PER_CHUNK)
}

/// Reads `sel` (`n` bytes); `uncached` for the slabs of an answer too big
/// for the chunk cache (see [`Domain::read_with`]).
fn read_fixed(
    pool: &Arc<SlabPool>,
    p: &Plan,
    sel: &Selection,
    n: usize,
    uncached: bool,
) -> Result<Pooled> {
    let mut buf = pool.take(n);
    let fields = p.fields.as_deref();
    p.dom
        .read_with(&p.meta, sel, fields, buf.as_mut_slice(), uncached)?;
    Ok(buf)
}

/// Refuses a JSON answer of more than `max_json_elements` values (`n`
/// elements of type `t`, nested in lists of `shape`): as JSON, each costs
/// the server many times its binary size.
fn check_json_answer(app: &App, t: &Datatype, shape: &[u64], n: u64) -> Result<()> {
    let values = n
        .saturating_mul(json_values_per_element(t))
        .saturating_add(nesting_lists(shape));
    if values > app.cfg.max_json_elements as u64 {
        return Err(ServerError::TooLarge(format!(
            "a JSON answer of {values} values is more than the limit of {} (--max-json-elements); \
             ask for application/octet-stream, or read it in parts",
            app.cfg.max_json_elements
        )));
    }
    Ok(())
}

/// JSON values one element of `t` becomes, counting each list and object.
pub(crate) fn json_values_per_element(t: &Datatype) -> u64 {
    match t {
        Datatype::Compound { fields, .. } => fields
            .iter()
            .map(|f| json_values_per_element(&f.dtype))
            .fold(1, u64::saturating_add),
        Datatype::Array { base, dims } => dims
            .iter()
            .fold(1u64, |a, &d| a.saturating_mul(d))
            .saturating_mul(json_values_per_element(base))
            .saturating_add(1),
        Datatype::Complex { .. } => 3,
        _ => 1,
    }
}

/// Lists that elements shaped `shape` are nested in as JSON: the outer
/// list, one per row, one per row of each row… (a shape like `[2^40, 0]`
/// holds no element but would make 2^40 empty lists).
pub(crate) fn nesting_lists(shape: &[u64]) -> u64 {
    let mut lists = 0u64;
    let mut outer = 1u64;
    for &d in shape {
        lists = lists.saturating_add(outer);
        outer = outer.saturating_mul(d);
    }
    lists
}

/// Bytes of JSON text sent at a time by [`json_value_rsp`].
const JSON_STREAM_PIECE: usize = 256 << 10;

/// `{"value": …, "hrefs": []}` for the elements in `bytes` (of type `wire`,
/// shaped `shape`), written a row at a time as the client takes it: the
/// text of the whole answer, and the tree of JSON values it comes from,
/// never sit in memory at once.
fn json_value_rsp(
    wire: Datatype,
    bytes: Pooled,
    shape: Vec<u64>,
    held: crate::budget::Reservation,
    nf: NonFinite,
) -> Result<Response> {
    let rows = shape.first().copied().unwrap_or(0) as usize;
    let es = wire.fixed_size().unwrap_or(0);
    let row_bytes = es * shape.iter().skip(1).product::<u64>() as usize;
    if shape.is_empty() || (rows * row_bytes) <= JSON_STREAM_PIECE / 4 {
        let value = fixed_to_json(&wire, bytes.as_ref(), &shape)?;
        return Ok(typed_rsp(
            StatusCode::OK,
            &json!({"value": value, "hrefs": []}),
            &[TypedAt::new("/value", wire, shape.len())],
            nf,
        ));
    }
    let (tx, rx) = tokio::sync::mpsc::channel::<std::result::Result<Bytes, std::io::Error>>(1);
    tokio::task::spawn_blocking(move || {
        let _held = held;
        let mut text = Vec::with_capacity(JSON_STREAM_PIECE + 4096);
        text.extend_from_slice(b"{\"value\": [");
        for i in 0..rows {
            if i > 0 {
                text.push(b',');
            }
            let row = &bytes.as_ref()[i * row_bytes..(i + 1) * row_bytes];
            let written = fixed_to_json(&wire, row, &shape[1..])
                .map_err(|e| std::io::Error::other(e.to_string()))
                .map(|v| crate::nonfinite::write_value(&wire, &v, shape.len() - 1, nf, &mut text));
            if let Err(e) = written {
                let _ = tx.blocking_send(Err(e));
                return;
            }
            if text.len() >= JSON_STREAM_PIECE {
                let piece = Bytes::from(std::mem::replace(
                    &mut text,
                    Vec::with_capacity(JSON_STREAM_PIECE + 4096),
                ));
                if tx.blocking_send(Ok(piece)).is_err() {
                    return;
                }
            }
        }
        text.extend_from_slice(b"], \"hrefs\": []}");
        let _ = tx.blocking_send(Ok(Bytes::from(text)));
    });
    let stream =
        futures_util::stream::unfold(rx, |mut rx| async move { rx.recv().await.map(|x| (x, rx)) });
    Ok((
        StatusCode::OK,
        [(header::CONTENT_TYPE, JSON_CONTENT_TYPE)],
        Body::from_stream(stream),
    )
        .into_response())
}

/// Answers a read: JSON, or binary (streamed in slabs when big).
fn respond(app: &App, ctx: &Ctx, p: Plan) -> Result<Response> {
    if ctx.wants_arrow() {
        if p.query.is_some() {
            return Err(bad("queries are answered as JSON or binary, not as Arrow"));
        }
        return respond_arrow(app, p);
    }
    if p.query.is_some() {
        return respond_query(app, ctx, &p);
    }
    let mut shape = p.out_shape();
    if ctx.flag("reduce_dim") {
        // HSDS drops the extent-1 dimensions of a JSON answer on request.
        shape.retain(|&d| d != 1);
    }
    let n = p.sel.num_elements();
    if p.meta.dtype.is_variable() {
        if p.fields.is_some() {
            return Err(bad("fields are not supported for variable-length types"));
        }
        // Variable-length answers are built in memory: bound them by the
        // JSON limit, counting at least 16 bytes an element.
        if n.saturating_mul(16) > app.cfg.max_json_response_bytes as u64 {
            return Err(ServerError::TooLarge(format!(
                "{n} variable-length elements are too many for one request; read them in parts"
            )));
        }
        check_json_answer(app, &p.meta.dtype, &shape, n)?;
        let _held = p.reserve(
            n as usize * (JSON_VALUE_BYTES + 64) + plan_bytes(&p),
            "this variable-length answer",
        )?;
        // Element sizes are known only as they are read: the read stops
        // once they hold more than an answer may, or than the part of the
        // budget set aside for them (an eighth of it, taken up front).
        let limit = app
            .cfg
            .max_json_response_bytes
            .min(app.cfg.memory_budget_bytes / 8);
        let _values = p.reserve(limit, "this variable-length answer's values")?;
        let items = p.dom.read_vlen_within(&p.id, &p.sel, limit)?;
        if ctx.wants_binary() {
            return Ok(binary_rsp(record::join_elements(&p.meta.dtype, &items)));
        }
        // As JSON, each value of a sequence is a JSON value of its own (a
        // sequence of bytes takes ~100 times its size): that is reserved
        // too, before it is built.
        let bytes: usize = items.iter().map(Vec::len).sum();
        let per_value = match &p.meta.dtype {
            Datatype::String { .. } => bytes.saturating_mul(2),
            Datatype::Vlen { base } => {
                bytes / base.fixed_size().unwrap_or(1).max(1) * JSON_VALUE_BYTES
            }
            _ => bytes.saturating_mul(JSON_VALUE_BYTES),
        };
        let _json = p.reserve(per_value, "this variable-length answer as JSON")?;
        let flat = items
            .iter()
            .map(|i| vlen_to_json(&p.meta.dtype, i).map_err(ServerError::from))
            .collect::<Result<_>>()?;
        return Ok(typed_rsp(
            StatusCode::OK,
            &json!({"value": nest(flat, &shape), "hrefs": []}),
            &[TypedAt::new("/value", p.meta.dtype.clone(), shape.len())],
            NonFinite::of(ctx),
        ));
    }
    let es = p.wire.fixed_size().unwrap_or(0) as u64;
    let total = n
        .checked_mul(es)
        .ok_or_else(|| bad("selection too large"))?;
    if !ctx.wants_binary() {
        if total > app.cfg.max_json_response_bytes as u64 {
            return Err(ServerError::TooLarge(format!(
                "a JSON answer of {total} bytes is too large; ask for application/octet-stream"
            )));
        }
        check_json_answer(app, &p.wire, &shape, n)?;
        let held = p.reserve(
            total as usize + JSON_STREAM_PIECE * 3 + plan_bytes(&p),
            "this JSON answer",
        )?;
        let bytes = read_fixed(&app.slabs, &p, &p.sel, total as usize, false)?;
        return json_value_rsp(p.wire.clone(), bytes, shape, held, NonFinite::of(ctx));
    }
    if total <= app.cfg.slab_bytes as u64
        && chunks_reached(&p.meta, &p.sel, SLAB_CHUNKS as usize) <= SLAB_CHUNKS
    {
        let _held = p.reserve(total as usize + plan_bytes(&p), "this binary answer")?;
        let bytes = read_fixed(&app.slabs, &p, &p.sel, total as usize, false)?;
        return Ok(binary_rsp(bytes.into_bytes()));
    }
    let pieces = slabs(&p, app.cfg.slab_bytes)?;
    // One slab in the channel and one being read (a slab may be bigger
    // than `slab_bytes` when one row is), and the plan of the one read.
    let held = p.reserve(
        slabs_in_flight(&pieces) + SLAB_PLAN_BYTES,
        "this binary answer",
    )?;
    let uncached = total > app.cfg.chunk_cache_bytes as u64 / 2;
    // One slab in the channel and one being read: memory stays at a few
    // slabs however big the answer is.
    let (tx, rx) = tokio::sync::mpsc::channel::<std::result::Result<Bytes, std::io::Error>>(1);
    let pool = app.slabs.clone();
    tokio::task::spawn_blocking(move || {
        let _held = held;
        for (sel, n) in pieces {
            let msg = read_fixed(&pool, &p, &sel, n, uncached)
                .map(Pooled::into_bytes)
                .map_err(|e| std::io::Error::other(e.to_string()));
            let failed = msg.is_err();
            if tx.blocking_send(msg).is_err() || failed {
                return;
            }
        }
    });
    let stream =
        futures_util::stream::unfold(rx, |mut rx| async move { rx.recv().await.map(|x| (x, rx)) });
    Ok((
        StatusCode::OK,
        [
            (header::CONTENT_TYPE, "application/octet-stream".to_string()),
            (header::CONTENT_LENGTH, total.to_string()),
        ],
        Body::from_stream(stream),
    )
        .into_response())
}

/// The media type of an Arrow IPC stream.
pub(crate) const ARROW_STREAM: &str = "application/vnd.apache.arrow.stream";

/// Rows an Arrow answer holds in one record batch, for variable-length
/// rows whose size is not known up front.
const ARROW_VLEN_ROW_BYTES: usize = 64;

/// A strided selection of a table's rows is read as the run holding them
/// (nulls kept) when that run is at most this many times longer than the
/// rows picked, or this short; as values otherwise (as `to_arrow()` does).
const ARROW_SPREAD: u64 = 8;
const ARROW_SHORT_RUN: u64 = 1 << 16;

/// Answers a read as an Arrow IPC stream, one record batch a slab (a
/// compound's members are the columns; any other type is one column,
/// `value`; rows in C order of the selected elements). A run of rows of
/// a 1-D columnar table comes from its chunks' columns as they are, nulls
/// kept; any other selection from its elements.
fn respond_arrow(app: &App, p: Plan) -> Result<Response> {
    // Rows of a 1-D table read as Arrow (nulls kept): a run of them, or
    // every `step`-th of a run not much longer than the rows picked (as
    // `to_arrow()` picks them); other selections are read as values.
    let run = match &p.sel {
        Selection::Orthogonal(s) if p.meta.is_columnar() && p.meta.dims.len() == 1 => {
            match s.as_slice() {
                [DimSel::Slice { start, count, step }]
                    if *step == 1
                        || count.saturating_mul(*step)
                            <= (ARROW_SPREAD * count).max(ARROW_SHORT_RUN) =>
                {
                    Some((*start, *count, (*step).max(1)))
                }
                _ => None,
            }
        }
        _ => None,
    };
    let table = match &p.wire {
        t @ Datatype::Compound { .. } => t.clone(),
        t => Datatype::from_json(&json!({"class": "H5T_COMPOUND",
                                          "fields": [{"name": "value", "type": t.to_json()}]}))?,
    };
    let arrow =
        |e: h5lake_columnar::ColumnarError| ServerError::from(h5lake_engine::EngineError::from(e));
    let ipc = |e: arrow_schema::ArrowError| {
        ServerError::Internal(format!("writing the Arrow stream: {e}"))
    };
    let row_bytes = p.wire.fixed_size().unwrap_or(ARROW_VLEN_ROW_BYTES).max(1);
    let vlen_runs = match run {
        Some((start, count, step)) if p.wire.fixed_size().is_none() => Some(VlenRuns {
            done: 0,
            count,
            start,
            step,
            chunk: p.meta.chunk[0].max(1),
            slab: app.cfg.slab_bytes,
            chunk_bytes: 0,
        }),
        _ => None,
    };
    // The answer as a list of parts, each read and sent in turn (of a
    // table with variable-length members, made as it is read: see
    // [`VlenRuns`]).
    let parts: Vec<ArrowPart> =
        match run {
            _ if vlen_runs.is_some() => Vec::new(),
            Some((start, count, step)) => {
                // (Each part reads at most a slab of rows; the list is made up
                // front, so an absurd number of parts is refused, as for binary
                // answers.)
                let per = ((app.cfg.slab_bytes / row_bytes) as u64 / step).max(1);
                if count / per > MAX_SLABS {
                    return Err(ServerError::TooLarge(
                        "selection too large for one request; read it in parts".into(),
                    ));
                }
                (0..count)
                    .step_by(per as usize)
                    .map(|k| {
                        let n = per.min(count - k);
                        let first = start + k * step;
                        ArrowPart::Rows(first..first + (n - 1) * step + 1, step)
                    })
                    .collect()
            }
            None if p.wire.fixed_size().is_none() => return Err(bad(
                "variable-length values are answered as Arrow for runs of rows of a 1-D columnar \
                 dataset only",
            )),
            None => slabs(&p, app.cfg.slab_bytes)?
                .into_iter()
                .map(|(s, n)| ArrowPart::Elements(s, n))
                .collect(),
        };
    // What an answer of no rows holds: the schema.
    let empty = h5lake_columnar::rows_to_batch(&table, &[], 0)
        .and_then(|b| h5lake_columnar::present(&table, &b))
        .map_err(arrow)?;
    let fields = p.fields.clone();
    // Columns a Parquet load or an Arrow table keeps in another form get
    // their Arrow types back, as `to_arrow()` gives them.
    let kept: serde_json::Map<String, Value> = p
        .dom
        .attr_get(&p.id, "arrow_types")
        .ok()
        .and_then(|a| a.get("value").and_then(Value::as_str).map(str::to_string))
        .and_then(|v| serde_json::from_str(&v).ok())
        .unwrap_or_default();
    let empty = h5lake_columnar::restore_arrow_types(&table, &empty, &kept).map_err(arrow)?;
    // Restored columns can be wider than stored ones (a decimal256 of an
    // int64: 4x), so the answer is counted at the wider of the two.
    // Columns of text or bytes hold their values and an 8-byte offset a
    // row (a column of one-byte strings is 9 times its stored size).
    let schema = empty.schema();
    let primitive: usize = schema
        .fields()
        .iter()
        .map(|f| f.data_type().primitive_width().unwrap_or(0))
        .sum();
    let offsets = 8 * schema
        .fields()
        .iter()
        .filter(|f| f.data_type().primitive_width().is_none())
        .count();
    let restored_bytes = primitive + if offsets > 0 { row_bytes + offsets } else { 0 };
    let scale = restored_bytes.div_ceil(row_bytes).max(1);
    let biggest = match &vlen_runs {
        // (a slab to start with; grown to what the rows are seen to take)
        Some(_) => app.cfg.slab_bytes,
        None => parts
            .iter()
            .map(|part| match part {
                ArrowPart::Rows(r, _) => (r.end - r.start) as usize * row_bytes,
                ArrowPart::Elements(_, n) => *n,
            })
            .max()
            .unwrap_or(0),
    };
    // A slab read, its batch and its encoding, one being sent.
    let held = p.reserve(
        biggest.saturating_mul(scale).saturating_mul(4),
        "this Arrow answer",
    )?;
    let mut memory = ArrowMemory {
        budget: p.memory.clone(),
        request: p.request.clone(),
        held: vec![held],
    };
    // A part's batch, and the bytes read to make it.
    let read = move |part: &ArrowPart| -> Result<(arrow_array::RecordBatch, usize)> {
        let (batch, decoded) = match part {
            ArrowPart::Rows(r, step) => {
                let (schema, batches) = p.dom.read_arrow(&p.id, r.clone(), fields.as_deref())?;
                let run = h5lake_columnar::concat_batches(&schema, &batches).map_err(arrow)?;
                let decoded = run.get_array_memory_size();
                (
                    h5lake_columnar::every_nth(&run, *step as usize).map_err(arrow)?,
                    decoded,
                )
            }
            ArrowPart::Elements(sel, n) => {
                let mut buf = vec![0u8; *n];
                p.dom
                    .read_with(&p.meta, sel, fields.as_deref(), &mut buf, false)?;
                let rows = sel.num_elements() as usize;
                let b = h5lake_columnar::rows_to_batch(&table, &buf, rows).map_err(arrow)?;
                (b, *n)
            }
        };
        let batch = h5lake_columnar::present(&table, &batch)
            .and_then(|b| h5lake_columnar::restore_arrow_types(&table, &b, &kept))
            .map_err(arrow)?;
        Ok((batch, decoded))
    };
    let mut parts = match vlen_runs {
        Some(runs) => ArrowParts::Measured(runs),
        None => ArrowParts::Listed(parts.into_iter()),
    };
    // Reads the next part, keeping the memory it is seen to take reserved.
    let mut next = move |memory: &mut ArrowMemory| -> Option<Result<arrow_array::RecordBatch>> {
        let part = parts.next()?;
        Some(read(&part).and_then(|(batch, decoded)| {
            if let (ArrowParts::Measured(runs), ArrowPart::Rows(r, _)) = (&mut parts, &part) {
                runs.saw(r.end - r.start, decoded);
            }
            // what was read, its batch and its encoding
            memory.hold(decoded.saturating_add(batch.get_array_memory_size().saturating_mul(2)))?;
            Ok(batch)
        }))
    };
    // The schema comes with the first batch.
    let first = match next(&mut memory) {
        Some(batch) => batch?,
        None => empty,
    };
    let mut writer =
        arrow_ipc::writer::StreamWriter::try_new(Vec::new(), &first.schema()).map_err(ipc)?;
    writer.write(&first).map_err(ipc)?;
    drop(first);
    let head = Bytes::from(std::mem::take(writer.get_mut()));
    let (tx, rx) = tokio::sync::mpsc::channel::<std::result::Result<Bytes, std::io::Error>>(1);
    tokio::task::spawn_blocking(move || {
        let mut memory = memory;
        if tx.blocking_send(Ok(head)).is_err() {
            return;
        }
        while let Some(batch) = next(&mut memory) {
            let msg = batch
                .and_then(|b| writer.write(&b).map_err(ipc))
                .map(|()| Bytes::from(std::mem::take(writer.get_mut())))
                .map_err(|e| std::io::Error::other(e.to_string()));
            let failed = msg.is_err();
            if tx.blocking_send(msg).is_err() || failed {
                return;
            }
        }
        let end = writer
            .finish()
            .map(|()| Bytes::from(std::mem::take(writer.get_mut())))
            .map_err(|e| std::io::Error::other(e.to_string()));
        let _ = tx.blocking_send(end);
    });
    let stream =
        futures_util::stream::unfold(rx, |mut rx| async move { rx.recv().await.map(|x| (x, rx)) });
    Ok((
        StatusCode::OK,
        [(header::CONTENT_TYPE, ARROW_STREAM.to_string())],
        Body::from_stream(stream),
    )
        .into_response())
}

/// A part of an Arrow answer.
enum ArrowPart {
    /// The rows of this run, every `.1`-th of them from its first.
    Rows(std::ops::Range<u64>, u64),
    Elements(Selection, usize),
}

/// The parts of an Arrow answer, in order.
enum ArrowParts {
    /// Listed up front (rows or elements of a fixed size).
    Listed(std::vec::IntoIter<ArrowPart>),
    /// Runs of rows of a table with variable-length members.
    Measured(VlenRuns),
}

impl ArrowParts {
    fn next(&mut self) -> Option<ArrowPart> {
        match self {
            ArrowParts::Listed(parts) => parts.next(),
            ArrowParts::Measured(runs) => runs.next(),
        }
    }
}

/// The rows a run of a table with variable-length members is read in:
/// whole chunks (a chunk's variable-length columns are decoded whole,
/// however few of its rows are read), one to start with, then as many as
/// fit a slab at the most a chunk has been seen to take. (Counted at a
/// guess of bytes per row, a part of text-heavy rows held many times its
/// reservation.)
struct VlenRuns {
    /// Rows of the run picked so far.
    done: u64,
    count: u64,
    start: u64,
    step: u64,
    chunk: u64,
    slab: usize,
    /// The most bytes a whole chunk has been seen to take decoded (0: none
    /// read yet).
    chunk_bytes: usize,
}

impl VlenRuns {
    fn next(&mut self) -> Option<ArrowPart> {
        if self.done >= self.count {
            return None;
        }
        let first = self.start + self.done * self.step;
        let chunks = if self.chunk_bytes == 0 {
            1
        } else {
            (self.slab / self.chunk_bytes).max(1) as u64
        };
        let end = (first / self.chunk)
            .saturating_add(chunks)
            .saturating_mul(self.chunk);
        let n = (end - first)
            .div_ceil(self.step)
            .min(self.count - self.done);
        self.done += n;
        Some(ArrowPart::Rows(
            first..first + (n - 1) * self.step + 1,
            self.step,
        ))
    }

    /// A part of `rows` rows took `bytes` read.
    fn saw(&mut self, rows: u64, bytes: usize) {
        if rows > 0 {
            let per_chunk = (bytes as u128 * u128::from(self.chunk)).div_ceil(u128::from(rows));
            self.chunk_bytes = self
                .chunk_bytes
                .max(usize::try_from(per_chunk).unwrap_or(usize::MAX));
        }
    }
}

/// What an Arrow answer holds of the memory budget, grown when a part is
/// seen to take more than was reserved.
struct ArrowMemory {
    budget: Arc<crate::budget::Budget>,
    /// The request's count of what it holds, these parts' included.
    request: Arc<crate::budget::RequestMemory>,
    held: Vec<Reservation>,
}

impl ArrowMemory {
    /// Holds at least `bytes` (waiting for others to give memory back, or
    /// refusing when the budget cannot hold it).
    fn hold(&mut self, bytes: usize) -> Result<()> {
        let held: usize = self.held.iter().map(Reservation::bytes).sum();
        if bytes <= held {
            return Ok(());
        }
        let more = bytes - held;
        let what = "this Arrow answer's rows";
        // (An answer under way is not held to the user's share: it would
        // be cut short after its first rows; it waits instead.)
        if let Some(r) = self.request.try_reserve(&self.budget, more, what, false)? {
            self.held.push(r);
            return Ok(());
        }
        // Waiting for more while holding some could wait on another answer
        // doing the same: what is held goes back, and the whole is waited
        // for.
        self.held.clear();
        self.held.push(
            self.request
                .reserve_blocking_as(&self.budget, bytes, what, false)?,
        );
        Ok(())
    }
}

/// Answers a query: the matching elements of a 1-D compound selection in
/// order (at most `Limit` of them), read slab by slab; JSON answers also
/// carry their `index`.
fn respond_query(app: &App, ctx: &Ctx, p: &Plan) -> Result<Response> {
    if p.fields.is_none() && p.meta.dtype.is_variable() {
        return respond_query_rows(app, ctx, p);
    }
    let (out, index, rank) = query_matches(app, ctx, p, p.fields.as_deref(), &p.wire)?;
    check_answer_size(app, ctx, p, out.len(), index.len() / rank)?;
    // No match is answered as JSON even when bytes were asked for: h5pyd
    // (1.0) takes an empty binary body for a failed read, so its
    // read_where over a table broke at the first stretch of rows without
    // a match (HSDS answers with the empty body).
    if ctx.wants_binary() && !index.is_empty() {
        return Ok(binary_rsp(out));
    }
    let matched = index.len() / rank;
    let value = fixed_to_json(&p.wire, &out, &[matched as u64])?;
    Ok(typed_rsp(
        StatusCode::OK,
        &json!({"value": value, "index": index_json(&index, rank), "hrefs": []}),
        &[TypedAt::new("/value", p.wire.clone(), 1)],
        NonFinite::of(ctx),
    ))
}

/// A query of a type with members of variable length answered with whole
/// rows: matched on the fixed-size members, then the matches read by their
/// coordinates (as a point selection is read).
fn respond_query_rows(app: &App, ctx: &Ctx, p: &Plan) -> Result<Response> {
    // (Matching holds one small member per match, not the rows.)
    let Datatype::Compound { fields, .. } = &p.meta.dtype else {
        return Err(bad(
            "queries need a compound with fields of fixed size, or numbers",
        ));
    };
    let Some(smallest) = fields
        .iter()
        .filter_map(|f| f.dtype.fixed_size().map(|n| (n, f)))
        .min_by_key(|(n, _)| *n)
        .map(|(_, f)| vec![f.name.clone()])
    else {
        return Err(bad("a query needs fields of fixed size to compare"));
    };
    let wire = projected_type(&p.meta.dtype, Some(&smallest), false)?;
    let (_, index, rank) = query_matches(app, ctx, p, Some(&smallest), &wire)?;
    let matched = index.len() / rank;
    if matched.saturating_mul(16) > app.cfg.max_json_response_bytes {
        return Err(too_many_matches());
    }
    // As a variable-length read: the rows' sizes are known only as they
    // are read, within what an answer may hold.
    let limit = app
        .cfg
        .max_json_response_bytes
        .min(app.cfg.memory_budget_bytes / 8);
    let _values = p.reserve(limit, "this query's rows")?;
    let rows = if matched == 0 {
        Vec::new()
    } else {
        let points = Selection::Points {
            rank,
            coords: index.clone(),
        };
        p.dom.read_vlen_within(&p.id, &points, limit)?
    };
    // Answered as JSON even when bytes were asked for: h5pyd (1.0) cannot
    // size a binary answer of variable-length rows whose count it does
    // not know beforehand (ValueError), and reads JSON ones.
    let bytes: usize = rows.iter().map(Vec::len).sum();
    let _json = p.reserve(
        bytes.saturating_mul(JSON_VALUE_BYTES),
        "this query's rows as JSON",
    )?;
    let values = rows
        .iter()
        .map(|r| vlen_to_json(&p.meta.dtype, r).map_err(ServerError::from))
        .collect::<Result<Vec<_>>>()?;
    Ok(typed_rsp(
        StatusCode::OK,
        &json!({"value": values, "index": index_json(&index, rank), "hrefs": []}),
        &[TypedAt::new("/value", p.meta.dtype.clone(), 1)],
        NonFinite::of(ctx),
    ))
}

/// HSDS's `index` of a query's matches: a row number per match; of an N-D
/// dataset, each match's coordinates.
fn index_json(index: &[u64], rank: usize) -> Value {
    if rank == 1 {
        json!(index)
    } else {
        json!(index.chunks(rank).collect::<Vec<_>>())
    }
}

/// Runs the query of `p`, answering members `fields` (of type `wire`):
/// the matching elements and their coordinates (`rank` per match), in
/// order, at most `Limit`.
fn query_matches(
    app: &App,
    ctx: &Ctx,
    p: &Plan,
    fields: Option<&[String]>,
    wire: &Datatype,
) -> Result<(Vec<u8>, Vec<u64>, usize)> {
    let text = p.query.as_deref().expect("a query plan");
    let Selection::Orthogonal(sels) = &p.sel else {
        return Err(bad("queries take a select range, not points"));
    };
    let rank = sels.len();
    if rank == 0 {
        return Err(bad("queries need a dataset with dimensions"));
    }
    let limit = match ctx.limit()? {
        None | Some(0) => usize::MAX,
        Some(n) => n,
    };
    // The engine answers just the fields asked for (of a columnar dataset
    // it reads only their columns and the condition's), packed in order.
    let es = wire.fixed_size().unwrap_or(0);
    // The box around the selection, answered chunk by chunk
    // (skipping the chunks whose statistics rule the condition
    // out); elements between a strided or listed selection's are
    // dropped after.
    let region: Vec<(u64, u64)> = sels.iter().map(bounding).collect();
    let dense = sels.iter().all(|d| match d {
        DimSel::Slice { step, count, .. } => *step == 1 || *count <= 1,
        DimSel::Indices(ix) => ix.is_empty(),
    });
    // What the answer may grow to: the engine's matches (their elements
    // and coordinates, held twice while they are put in order), the JSON
    // made of them, and one slab being scanned. Under a small budget the
    // matches a query may hold are fewer, so that it fits a quarter of it.
    // With a Limit the engine stops at, no more than it. And the chunks
    // the engine's threads scan at once (each decoded, and its mask or its
    // sources' values).
    let limited = (dense && limit != usize::MAX).then_some(limit);
    let per_match = es + 8 * rank;
    let json_elements = limited.map_or(app.cfg.max_json_elements, |n| {
        let values = usize::try_from(json_values_per_element(wire)).unwrap_or(usize::MAX);
        n.saturating_mul(values.saturating_add(rank))
            .min(app.cfg.max_json_elements)
    });
    let answer = app.cfg.slab_bytes + json_elements * (JSON_VALUE_BYTES + 8);
    let max_matched = app
        .cfg
        .max_json_response_bytes
        .min(app.budget.total().saturating_sub(answer) / 4)
        .min(limited.map_or(usize::MAX, |n| {
            let held = n.saturating_mul(h5lake_engine::stats::QUERY_BATCH + 1);
            held.saturating_mul(per_match)
        }));
    let scanning = p
        .dom
        .chunk_work_bytes(&p.meta, chunks_reached(&p.meta, &p.sel, 0), true, false);
    let _held = p.reserve(2 * max_matched + answer + scanning, "this query")?;
    let found = p.dom.query(
        &p.meta.id,
        text,
        Some(&region),
        fields,
        h5lake_engine::stats::QueryLimits {
            max_matches: limited,
            max_bytes: Some(max_matched),
            // (No byte of the answer is sent before the query ends: past
            // the idle timeout its connection is closed anyway.)
            deadline: Some(std::time::Instant::now() + app.cfg.idle_timeout),
            cancel: Some(ctx.gone.clone()),
        },
    )?;
    let (mut out, mut index) = (found.elements, found.coords);
    if !dense {
        // Matches in the box around the selection but not in it go.
        let (mut kept, mut matched) = (0, 0);
        for k in 0..index.len() / rank {
            let at = k * rank;
            if matched < limit
                && sels
                    .iter()
                    .zip(&index[at..at + rank])
                    .all(|(d, &i)| picked(d, i))
            {
                index.copy_within(at..at + rank, kept * rank);
                out.copy_within(k * es..(k + 1) * es, kept * es);
                kept += 1;
                matched += 1;
            }
        }
        index.truncate(kept * rank);
        out.truncate(kept * es);
    }
    let matched = (index.len() / rank).min(limit);
    index.truncate(matched * rank);
    out.truncate(matched * es);
    Ok((out, index, rank))
}

/// `[lo, hi)` around the indices `d` selects along its dimension.
fn bounding(d: &DimSel) -> (u64, u64) {
    match d {
        DimSel::Slice { count: 0, .. } => (0, 0),
        DimSel::Slice { start, count, step } => (*start, start + (count - 1) * step + 1),
        DimSel::Indices(ix) if ix.is_empty() => (0, 0),
        DimSel::Indices(ix) => (ix[0], ix[ix.len() - 1] + 1),
    }
}

/// Whether `d` selects index `i` (inside its bounding range).
fn picked(d: &DimSel, i: u64) -> bool {
    match d {
        DimSel::Slice { start, step, .. } => (i - start) % step == 0,
        DimSel::Indices(ix) => ix.binary_search(&i).is_ok(),
    }
}

/// Refuses a query answer of `bytes` bytes and `matches` elements that
/// is more than one answer may hold.
fn check_answer_size(app: &App, ctx: &Ctx, p: &Plan, bytes: usize, matches: usize) -> Result<()> {
    let json_values =
        (matches as u64 + 1).saturating_mul(json_values_per_element(&p.wire).saturating_add(1));
    if bytes > app.cfg.max_json_response_bytes
        || (!ctx.wants_binary() && json_values > app.cfg.max_json_elements as u64)
    {
        return Err(too_many_matches());
    }
    Ok(())
}

fn too_many_matches() -> ServerError {
    ServerError::TooLarge(
        "the query matches too much for one answer; narrow the select range or set Limit".into(),
    )
}

pub(crate) async fn get_value(
    State(app): State<Arc<App>>,
    ctx: Ctx,
    Path(id): Path<String>,
) -> Result<Response> {
    // (Work handed to a blocking thread stops when the client goes.)
    let _stop = ctx.stop_when_dropped();
    if app.answers_inline() {
        let p = plan_unreserved(&app, &ctx, &id, Action::Read, None, None, None)?.reserved()?;
        if p.is_small(INLINE_BYTES) {
            return respond(&app, &ctx, p);
        }
        return blocking_read(ctx.gone.clone(), move || respond(&app, &ctx, p)).await;
    }
    blocking_read(ctx.gone.clone(), move || {
        let p = plan_unreserved(&app, &ctx, &id, Action::Read, None, None, None)?.reserved()?;
        respond(&app, &ctx, p)
    })
    .await
}

/// Value requests up to this many bytes are answered on the async thread
/// when the store is local (see [`App::answers_inline`]).
const INLINE_BYTES: u64 = 256 << 10;

/// POST `…/value`: a read whose selection is in the body — binary u64
/// points, or JSON `points` / `select` / `start`+`stop`.
pub(crate) async fn post_value(
    State(app): State<Arc<App>>,
    ctx: Ctx,
    Path(id): Path<String>,
    body: Body,
) -> Result<Response> {
    let binary = ctx.sends_binary();
    let data = read_body(&app, &ctx, body, Gate::On(Action::Read)).await?;
    let _stop = ctx.stop_when_dropped();
    blocking_read(ctx.gone.clone(), move || {
        let (points_json, select, fields) = if binary {
            (None, None, None)
        } else {
            let v = crate::routes::parse_json_limited(&app, &data)?;
            (
                v.get("points").cloned(),
                select_from_body(&v)?,
                fields_from_body(&v)?,
            )
        };
        let pre = plan_unreserved(
            &app,
            &ctx,
            &id,
            Action::Read,
            None,
            select.clone(),
            fields.clone(),
        )?;
        let dims = sel_dims(&pre.meta);
        let sel = if binary {
            Some(points_from_bytes(&data, &dims)?)
        } else {
            points_json
                .map(|p| points_from_json(&p, &dims))
                .transpose()?
        };
        let p = match sel {
            Some(s) => pre.with_selection(s)?,
            None => {
                let s = pre.sel.clone();
                pre.with_selection(s)?
            }
        };
        respond(&app, &ctx, p)
    })
    .await
}

/// Writes JSON `value` to `sel` (all of the dataset when `None`).
pub(crate) fn write_json_value(
    dom: &Domain,
    id: &str,
    sel: Option<Selection>,
    v: &Value,
) -> Result<()> {
    let m = dom.dataset_meta(id)?;
    let sel = sel.unwrap_or_else(|| {
        Selection::Orthogonal(
            sel_dims(&m)
                .iter()
                .map(|&d| DimSel::Slice {
                    start: 0,
                    count: d,
                    step: 1,
                })
                .collect(),
        )
    });
    let shape = match &sel {
        Selection::Orthogonal(s) if s.is_empty() => Vec::new(),
        s => s.out_shape(),
    };
    if m.dtype.is_variable() {
        dom.write_vlen(id, &sel, &json_to_vlen(&m.dtype, &shape, v)?)?;
    } else {
        dom.write(id, &sel, &json_to_fixed(&m.dtype, &shape, v)?)?;
    }
    Ok(())
}

/// For each field of `wire` (a projection of `all`): its offset in the
/// stored element, its offset in the projected one, and its size. Looked
/// up by name once per request, not once per element.
fn field_places(all: &[Field], wire: &[Field]) -> Vec<(usize, usize, usize)> {
    let by_name: std::collections::HashMap<&str, usize> =
        all.iter().map(|f| (f.name.as_str(), f.offset)).collect();
    wire.iter()
        .map(|w| {
            let stored = by_name[w.name.as_str()];
            (stored, w.offset, w.dtype.fixed_size().unwrap_or(0))
        })
        .collect()
}

/// Writes `data` (packed `fields` of each element) into the selection by
/// reading the whole elements, patching the fields and writing them back.
fn write_fields(p: &Plan, sel: &Selection, data: &[u8]) -> Result<()> {
    let Datatype::Compound { fields: all, size } = &p.meta.dtype else {
        return Err(bad("fields given for a dataset whose type is not compound"));
    };
    let Datatype::Compound {
        fields: wire,
        size: wsize,
    } = &p.wire
    else {
        return Err(bad("fields given for a dataset whose type is not compound"));
    };
    let n = sel.num_elements() as usize;
    // Whole elements are read to patch a few fields of them: far more than
    // the data sent when the other fields are big.
    let whole = n
        .checked_mul(*size)
        .ok_or_else(|| ServerError::TooLarge("selection too large".into()))?;
    let _held = p.reserve(whole, "this write of some fields")?;
    let mut full = vec![0u8; whole];
    p.dom.read_with(&p.meta, sel, None, &mut full, false)?;
    // (offset in the stored element, offset in the sent one, length)
    let places = field_places(all, wire);
    for (i, elem) in full.chunks_mut(*size).enumerate() {
        for &(to, from, len) in &places {
            let src = i * wsize + from;
            elem[to..to + len].copy_from_slice(&data[src..src + len]);
        }
    }
    p.dom.write_with(&p.meta, sel, &full)?;
    Ok(())
}

fn write_slab(p: &Plan, sel: &Selection, data: &[u8]) -> Result<()> {
    if p.fields.is_some() {
        write_fields(p, sel, data)
    } else {
        p.dom.write_with(&p.meta, sel, data)?;
        Ok(())
    }
}

/// HSDS's `element_count`: the body holds fewer elements than the selection
/// and is broadcast over it, numpy-style — one element, or a block as big
/// as the selection's trailing dimensions. `None` when no broadcast is
/// asked for (or the count is the selection's own size); else the count and
/// the block's shape.
fn broadcast_count(
    ctx: &Ctx,
    body: Option<&Value>,
    shape: &[u64],
) -> Result<Option<(u64, Vec<u64>)>> {
    let given = match body.and_then(|b| b.get("element_count")) {
        Some(v) => Some(
            v.as_u64()
                .ok_or_else(|| bad("element_count must be a positive integer"))?,
        ),
        None => ctx
            .param("element_count")
            .map(|s| s.parse::<u64>().map_err(|_| bad("invalid element_count")))
            .transpose()?,
    };
    let Some(count) = given else { return Ok(None) };
    let total: u64 = shape.iter().product();
    if count == total {
        return Ok(None);
    }
    if count == 1 {
        return Ok(Some((1, Vec::new())));
    }
    let mut block = 1u64;
    for k in (1..shape.len()).rev() {
        block *= shape[k];
        if block == count {
            return Ok(Some((count, shape[k..].to_vec())));
        }
    }
    Err(bad(format!(
        "element_count {count} not compatible with selection shape: {shape:?}"
    )))
}

/// Writes `data` (`count` elements) broadcast over the whole selection, a
/// slab at a time: slabs are whole rows, and a row is a whole number of
/// broadcast blocks, so each slab is the block repeated.
fn write_broadcast(p: &Plan, data: &[u8], count: u64, slab_bytes: usize) -> Result<()> {
    let es = p.wire.fixed_size().unwrap_or(0) as u64;
    if data.len() as u64 != count * es {
        return Err(bad(format!(
            "expected {} bytes for element_count {count} but got {}",
            count * es,
            data.len()
        )));
    }
    let pieces = slabs(p, slab_bytes)?;
    // Each slab is the block repeated: one slab's worth at a time (a row
    // bigger than a slab is one piece of its own).
    let biggest = pieces.iter().map(|(_, n)| *n).max().unwrap_or(0);
    let _held = p.reserve(biggest, "this broadcast write")?;
    for (sel, n) in pieces {
        write_slab(p, &sel, &data.repeat(n / data.len().max(1)))?;
    }
    Ok(())
}

pub(crate) async fn put_value(
    State(app): State<Arc<App>>,
    ctx: Ctx,
    Path(id): Path<String>,
    body: Body,
) -> Result<Response> {
    if !ctx.sends_binary() {
        let body = json_body(&app, &ctx, body, Gate::On(Action::Update))
            .await?
            .ok_or_else(|| bad("request has no body"))?;
        return blocking(move || {
            let select = match append_of(&ctx, Some(&body))? {
                Some((n, dim)) => Some(append_rows(&app, &ctx, &id, n, dim)?),
                None => select_from_body(&body)?,
            };
            let p = plan_unreserved(
                &app,
                &ctx,
                &id,
                Action::Update,
                body.get("points"),
                select,
                fields_from_body(&body)?,
            )?;
            let s = p.sel.clone();
            let p = p.with_selection(s)?;
            let sel = p.sel.clone();
            let shape = match &sel {
                Selection::Orthogonal(s) if s.is_empty() => Vec::new(),
                s => s.out_shape(),
            };
            let broadcast = match body.get("points") {
                Some(_) => None,
                None => broadcast_count(&ctx, Some(&body), &shape)?,
            };
            if let Some((count, block)) = broadcast {
                if p.meta.dtype.is_variable() {
                    return Err(bad(
                        "element_count is not supported for variable-length types",
                    ));
                }
                let data = match body.get("value_base64") {
                    Some(b64) => base64::engine::general_purpose::STANDARD
                        .decode(
                            b64.as_str()
                                .ok_or_else(|| bad("value_base64 must be a string"))?,
                        )
                        .map_err(|_| bad("unable to decode value_base64"))?,
                    None => {
                        let v = body
                            .get("value")
                            .ok_or_else(|| bad("request has no value"))?;
                        // The unit to repeat, shaped as the selection's
                        // trailing dimensions or as a flat list (HSDS takes
                        // `[42]` for one element).
                        let n: u64 = block.iter().product();
                        json_to_fixed(&p.wire, &block, v)
                            .or_else(|e| json_to_fixed(&p.wire, &[n], v).map_err(|_| e))?
                    }
                };
                write_broadcast(&p, &data, count, app.cfg.slab_bytes)?;
            } else if let Some(b64) = body.get("value_base64") {
                let data = base64::engine::general_purpose::STANDARD
                    .decode(
                        b64.as_str()
                            .ok_or_else(|| bad("value_base64 must be a string"))?,
                    )
                    .map_err(|_| bad("unable to decode value_base64"))?;
                write_binary_whole(&p, &sel, &data)?;
            } else {
                let v = body
                    .get("value")
                    .ok_or_else(|| bad("request has no value or value_base64 key in body"))?;
                if p.meta.dtype.is_variable() {
                    p.dom
                        .write_vlen(&p.id, &sel, &json_to_vlen(&p.meta.dtype, &shape, v)?)?;
                } else {
                    // (A flat list of as many elements fills the selection
                    // in C order, as HSDS takes it.)
                    let n: u64 = shape.iter().product();
                    let data = json_to_fixed(&p.wire, &shape, v)
                        .or_else(|e| json_to_fixed(&p.wire, &[n], v).map_err(|_| e))?;
                    write_slab(&p, &sel, &data)?;
                }
            }
            Ok(json_rsp(StatusCode::OK, json!({})))
        })
        .await;
    }
    let (p, ctx) = if app.answers_inline() && append_of(&ctx, None)?.is_none() {
        (
            plan_unreserved(&app, &ctx, &id, Action::Update, None, None, None)?.reserved()?,
            ctx,
        )
    } else {
        let app = app.clone();
        blocking(move || {
            let select = match append_of(&ctx, None)? {
                Some((n, dim)) => Some(append_rows(&app, &ctx, &id, n, dim)?),
                None => None,
            };
            Ok((
                plan_unreserved(&app, &ctx, &id, Action::Update, None, select, None)?.reserved()?,
                ctx,
            ))
        })
        .await?
    };
    if app.answers_inline()
        && content_length(&ctx).is_some_and(|n| n <= INLINE_BYTES)
        && p.fields.is_none()
        && p.is_small(INLINE_BYTES)
        && broadcast_count(&ctx, None, &p.sel.out_shape())?.is_none()
    {
        let data = read_body(&app, &ctx, body, Gate::On(Action::Update)).await?;
        write_binary_whole(&p, &p.sel, &data)?;
        return Ok(json_rsp(StatusCode::OK, json!({})));
    }
    if p.meta.dtype.is_variable() {
        let data = read_body(&app, &ctx, body, Gate::On(Action::Update)).await?;
        return blocking(move || {
            write_binary_whole(&p, &p.sel, &data)?;
            Ok(json_rsp(StatusCode::OK, json!({})))
        })
        .await;
    }
    if let Some((count, _)) = broadcast_count(&ctx, None, &p.sel.out_shape())? {
        let data = read_body(&app, &ctx, body, Gate::On(Action::Update)).await?;
        let slab_bytes = app.cfg.slab_bytes;
        return blocking(move || {
            write_broadcast(&p, &data, count, slab_bytes)?;
            Ok(json_rsp(StatusCode::OK, json!({})))
        })
        .await;
    }
    stream_write(app, ctx, p, body).await
}

fn content_length(ctx: &Ctx) -> Option<u64> {
    ctx.headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse().ok())
}

/// A binary value for a selection, all in memory (points, vlen, base64).
fn write_binary_whole(p: &Plan, sel: &Selection, data: &[u8]) -> Result<()> {
    let n = sel.num_elements();
    if p.meta.dtype.is_variable() {
        let items = vlen_from_bytes(&p.meta.dtype, data, n as usize)?;
        p.dom.write_vlen(&p.id, sel, &items)?;
        return Ok(());
    }
    let es = p.wire.fixed_size().unwrap_or(0) as u64;
    if data.len() as u64 != n * es {
        return Err(bad(format!(
            "expected {} bytes for the selection but got {}",
            n * es,
            data.len()
        )));
    }
    write_slab(p, sel, data)
}

/// Writes a binary body slab by slab as it arrives.
async fn finish_slab(h: tokio::task::JoinHandle<Result<()>>) -> Result<()> {
    h.await
        .map_err(|e| ServerError::Internal(format!("request failed: {e}")))?
}

async fn stream_write(app: Arc<App>, ctx: Ctx, p: Plan, body: Body) -> Result<Response> {
    let es = p.wire.fixed_size().unwrap_or(0) as u64;
    let total = p
        .sel
        .num_elements()
        .checked_mul(es)
        .ok_or_else(|| bad("selection too large"))?;
    if total == 0 {
        return Err(bad("nothing to write: the selection is empty"));
    }
    // A declared length that cannot be right is refused before anything is
    // written; only a body that lies about its length (or a chunked one of
    // the wrong size) can leave the first slabs written.
    if let Some(len) = content_length(&ctx) {
        if len != total {
            return Err(bad(format!(
                "body holds {len} bytes but the selection needs {total}"
            )));
        }
    }
    let pieces = slabs(&p, app.cfg.slab_bytes)?;
    // The engine writes one slab at a time: it holds the chunks of the
    // slab reaching most of them, not all the selection reaches.
    let p = match pieces
        .iter()
        .max_by_key(|(sel, _)| chunks_reached(&p.meta, sel, 1 << 10))
    {
        Some((widest, _)) => p.reserved_for(widest)?,
        None => p,
    };
    let p = Arc::new(p);
    // One slab being filled and one being written.
    let in_flight = slabs_in_flight(&pieces);
    let _held = p
        .request
        .reserve(&app.budget, in_flight, "this binary upload")
        .await?;
    let mut stream = body.into_data_stream();
    // What is left of the last body frame after filling the previous slab.
    let mut carry = Bytes::new();
    let mut written = 0u64;
    // One slab is written while the next arrives: the network and the
    // store work at once, and memory stays at about two slabs.
    let mut in_flight: Option<tokio::task::JoinHandle<Result<()>>> = None;
    for (sel, need) in pieces {
        let mut slab = app.slabs.take(need);
        let mut filled = 0;
        while filled < need {
            if carry.is_empty() {
                carry = match stream.next().await {
                    Some(Ok(b)) => b,
                    Some(Err(e)) if crate::routes::stalled(&e) => {
                        return Err(ServerError::Timeout(format!(
                            "error reading the request body: {e}"
                        )))
                    }
                    Some(Err(e)) => {
                        return Err(bad(format!("error reading the request body: {e}")))
                    }
                    None => {
                        return Err(bad(format!(
                            "body holds {} bytes but the selection needs {total}{}",
                            written + filled as u64,
                            if written > 0 {
                                " (the first part was written)"
                            } else {
                                ""
                            }
                        )))
                    }
                };
            }
            let k = (need - filled).min(carry.len());
            slab.as_mut_slice()[filled..filled + k].copy_from_slice(&carry[..k]);
            carry = carry.slice(k..);
            filled += k;
        }
        if let Some(prev) = in_flight.take() {
            finish_slab(prev).await?;
        }
        let p2 = p.clone();
        in_flight = Some(tokio::spawn(blocking(move || {
            write_slab(&p2, &sel, slab.as_ref())
        })));
        written += need as u64;
    }
    if let Some(last) = in_flight.take() {
        finish_slab(last).await?;
    }
    if !carry.is_empty() || stream.next().await.is_some() {
        return Err(bad(format!(
            "body is longer than the {total} bytes the selection needs (they were written)"
        )));
    }
    Ok(json_rsp(StatusCode::OK, json!({})))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_split() {
        let s = vec![
            DimSel::Slice {
                start: 2,
                count: 5,
                step: 3,
            },
            DimSel::Indices(vec![0, 2]),
        ];
        let parts = split_rows(&s, 2, 4);
        assert_eq!(parts.len(), 3);
        assert_eq!(
            parts[1][0],
            DimSel::Slice {
                start: 8,
                count: 2,
                step: 3
            }
        );
        assert_eq!(
            parts[2][0],
            DimSel::Slice {
                start: 14,
                count: 1,
                step: 3
            }
        );
        let parts = split_rows(&[DimSel::Indices(vec![1, 4, 6])], 2, 1);
        assert_eq!(parts[1][0], DimSel::Indices(vec![6]));
        // step-1 slices are cut on chunk boundaries: 3..8 | 8..16 | 16..21
        let sl = |start, count| DimSel::Slice {
            start,
            count,
            step: 1,
        };
        let parts = split_rows(&[sl(3, 18)], 9, 4);
        let got: Vec<_> = parts.iter().map(|p| p[0].clone()).collect();
        assert_eq!(got, vec![sl(3, 5), sl(8, 8), sl(16, 5)]);
        // an empty selection is still one (empty) piece
        assert_eq!(split_rows(&[sl(0, 0)], 9, 4).len(), 1);
    }

    #[test]
    fn vlen_wire_form() {
        let t = Datatype::from_json(&serde_json::json!({"class": "H5T_STRING",
            "charSet": "H5T_CSET_UTF8", "length": "H5T_VARIABLE", "strPad": "H5T_STR_NULLTERM"}))
        .unwrap();
        let items = vec![b"ab".to_vec(), Vec::new()];
        let b = record::join_elements(&t, &items);
        assert_eq!(b, vec![2, 0, 0, 0, b'a', b'b', 0, 0, 0, 0]);
        assert_eq!(vlen_from_bytes(&t, &b, 2).unwrap(), items);
        assert!(vlen_from_bytes(&t, &b[..5], 2).is_err());
        assert!(vlen_from_bytes(&t, &b, 3).is_err());
        assert!(vlen_from_bytes(&t, &b, 1).is_err());
    }
}
