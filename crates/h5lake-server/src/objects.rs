//! Groups, datasets and committed datatypes, their links and attributes
//! (values of datasets and attributes are in [`crate::values`]).

use std::sync::Arc;

use axum::body::Body;
use axum::extract::{FromRequestParts, Path, State};
use axum::http::request::Parts;
use axum::response::Response;
use h5lake_engine::{ids, Domain};
use serde_json::{json, Map, Value};

use crate::auth::Action;
use crate::domains::{glob_match, open_domain};
use crate::error::{Result, ServerError};
use crate::gone::Deleted;
use crate::request::{shape_json, type_json};
use crate::routes::{blocking, created, json_body, ok, ok_typed, AppState, Ctx, Gate};
use crate::values;
use crate::App;

// ---- objects -------------------------------------------------------------

pub(crate) fn collection_of(id: &str) -> &'static str {
    match id.get(..2) {
        Some("d-") => "datasets",
        Some("t-") => "datatypes",
        _ => "groups",
    }
}

/// HSDS's view of a dataset's creation properties: h5lake's hidden chunking
/// of big contiguous datasets is reported as the contiguous layout it is.
pub(crate) fn public_cprops(doc: &Value) -> Value {
    let mut c = doc.get("creationProperties").cloned().unwrap_or(json!({}));
    if let Some(class) = doc.pointer("/h5lake/layout").and_then(Value::as_str) {
        c["layout"] = json!({"class": class});
    }
    c
}

pub(crate) fn count(doc: &Value, key: &str) -> usize {
    doc.get(key).and_then(Value::as_object).map_or(0, Map::len)
}

/// The JSON HSDS answers `GET /<collection>/<id>` with.
pub(crate) fn object_json(doc: &Value, domain: &str, links: bool, attrs: bool) -> Value {
    let id = doc.get("id").and_then(Value::as_str).unwrap_or("");
    let mut out = json!({
        "id": id,
        "root": doc.get("root").cloned().unwrap_or(Value::Null),
        "created": doc.get("created").cloned().unwrap_or(json!(0)),
        "lastModified": doc.get("lastModified").cloned().unwrap_or(json!(0)),
        "attributeCount": count(doc, "attributes"),
        "domain": domain,
        "hrefs": [],
    });
    match collection_of(id) {
        "groups" => {
            out["linkCount"] = json!(count(doc, "links"));
            if let Some(c) = doc.get("creationProperties") {
                out["creationProperties"] = c.clone();
            }
            if links {
                let mut l = doc.get("links").cloned().unwrap_or(json!({}));
                if let Some(m) = l.as_object_mut() {
                    m.values_mut().for_each(with_file_key);
                }
                out["links"] = l;
            }
        }
        "datasets" => {
            out["type"] = doc.get("type").cloned().unwrap_or(Value::Null);
            out["shape"] = doc.get("shape").cloned().unwrap_or(Value::Null);
            let c = public_cprops(doc);
            if let Some(l) = c.get("layout") {
                out["layout"] = l.clone();
            }
            out["creationProperties"] = c;
        }
        _ => {
            out["type"] = doc.get("type").cloned().unwrap_or(Value::Null);
        }
    }
    if attrs {
        let mut all = doc.get("attributes").cloned().unwrap_or(json!({}));
        if let Some(map) = all.as_object_mut() {
            for attr in map.values_mut() {
                with_wire_value(attr, false);
            }
        }
        out["attributes"] = all;
    }
    out
}

/// An attribute's value the way clients read it: as base64 of its bytes
/// (with `"encoding": "base64"`) when asked to (`base64`), and always for
/// opaque values and for fixed-length text that is not UTF-8, which have no
/// plain JSON form a client could turn back into bytes.
fn with_wire_value(attr: &mut Value, base64: bool) {
    if attr.get("encoding").is_some() {
        return;
    }
    let class = attr.pointer("/type/class").and_then(Value::as_str);
    let bytes_in_json = |v: &Value| -> bool {
        // (h5lake's own documents keep such text as {"base64": …}.)
        fn any_object(v: &Value) -> bool {
            match v {
                Value::Object(_) => true,
                Value::Array(a) => a.iter().any(any_object),
                _ => false,
            }
        }
        any_object(v)
    };
    let wire = base64
        || class == Some("H5T_OPAQUE")
        || (class == Some("H5T_STRING")
            && attr.pointer("/type/length").is_some_and(Value::is_u64)
            && attr.get("value").is_some_and(bytes_in_json));
    if wire {
        if let Some(b64) = crate::values::fixed_base64(attr) {
            attr["value"] = json!(b64);
            attr["encoding"] = json!("base64");
        }
    }
}

/// Why `id` names no object: 404 for an object id of a layout other than
/// this store's (HSDS's older ids: `g-` and a plain UUID), which is well
/// formed but cannot be here; 400 for anything else.
pub(crate) fn bad_id(id: &str) -> ServerError {
    let plain_uuid = matches!(id.get(..2), Some("g-" | "d-" | "t-"))
        && id[2..].split('-').map(str::len).eq([8, 4, 4, 4, 12])
        && id[2..].chars().all(|c| c == '-' || c.is_ascii_hexdigit());
    if plain_uuid {
        ServerError::NotFound(format!("no object {id}"))
    } else {
        ServerError::BadRequest(format!("Invalid object id: {id}"))
    }
}

/// Checks that the id in the URL is well formed and of the URL's collection.
pub(crate) fn check_id(id: &str, coll: &str) -> Result<()> {
    ids::parse_id(id).map_err(|_| bad_id(id))?;
    if collection_of(id) != coll {
        return Err(ServerError::BadRequest(format!("{id} is not in /{coll}")));
    }
    Ok(())
}

pub(crate) fn coll_from_path(parts_path: &str) -> &'static str {
    if parts_path.starts_with("/datasets") {
        "datasets"
    } else if parts_path.starts_with("/datatypes") {
        "datatypes"
    } else {
        "groups"
    }
}

/// The collection named by the request path (the id must belong to it).
pub(crate) struct Coll(pub &'static str);

impl<S: Send + Sync> FromRequestParts<S> for Coll {
    type Rejection = ServerError;
    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self> {
        Ok(Coll(coll_from_path(parts.uri.path())))
    }
}

pub(crate) async fn get_object(
    State(app): AppState,
    ctx: Ctx,
    Coll(coll): Coll,
    Path(id): Path<String>,
) -> Result<Response> {
    check_id(&id, coll)?;
    blocking(move || {
        let dom = open_domain(&app, &ctx, Action::Read)?;
        let mut out = object_answer(&dom, &ctx, &id)?;
        if ctx.flag("getalias") {
            out["alias"] = json!(aliases(&dom, &id)?);
        }
        if ctx.flag("verbose") && coll == "datasets" {
            // (HSDS's summary of what the dataset holds: its chunk objects
            // and their stored bytes.)
            let chunks = dom.stored_chunks(&id)?;
            out["num_chunks"] = json!(chunks.len());
            out["allocated_size"] = json!(chunks.iter().map(|(_, n)| n).sum::<u64>());
        }
        ok_typed(&ctx, out)
    })
    .await
}

/// Most groups searched for the paths of an object (`getalias`).
const MAX_ALIAS_GROUPS: usize = 10_000;

/// The paths by hard links from the root group to `id` (HSDS's `alias`:
/// none for an object no link reaches), each group visited once.
fn aliases(dom: &h5lake_engine::Domain, id: &str) -> Result<Vec<String>> {
    let root = dom.root_id().to_string();
    if id == root {
        return Ok(vec!["/".into()]);
    }
    let mut out = Vec::new();
    let mut seen = std::collections::HashSet::from([root.clone()]);
    let mut queue = std::collections::VecDeque::from([(root, String::new())]);
    while let Some((gid, path)) = queue.pop_front() {
        if seen.len() > MAX_ALIAS_GROUPS {
            break;
        }
        let doc = dom.get_doc(&gid)?;
        let Some(links) = doc.get("links").and_then(Value::as_object) else {
            continue;
        };
        for (name, link) in links {
            let Some(target) = link.get("id").and_then(Value::as_str) else {
                continue;
            };
            let here = format!("{path}/{name}");
            if target == id {
                out.push(here.clone());
            }
            if target.starts_with("g-") && seen.insert(target.to_string()) {
                queue.push_back((target.to_string(), here));
            }
        }
    }
    out.sort();
    Ok(out)
}

pub(crate) async fn delete_object(
    State(app): AppState,
    ctx: Ctx,
    Coll(coll): Coll,
    Path(id): Path<String>,
) -> Result<Response> {
    check_id(&id, coll)?;
    blocking(move || {
        let dom = open_domain(&app, &ctx, Action::Delete)?;
        if id == dom.root_id() {
            return Err(ServerError::Forbidden(
                "deletion of the root group is not allowed - delete the domain".into(),
            ));
        }
        dom.get_doc(&id)?;
        dom.delete_object(&id)?;
        app.gone.note(Deleted::Object(&id));
        ok(json!({}))
    })
    .await
}

/// `GET /groups` (or `/datasets`, `/datatypes`): the ids of the domain's
/// objects of one kind, sorted, without the root group (as HSDS), with
/// HSDS's `Limit` and `Marker` paging. HSDS lists what links reach; this
/// lists what is stored, which includes anonymous objects.
pub(crate) fn list_collection(app: &App, ctx: &Ctx, letter: &str, key: &str) -> Result<Response> {
    let dom = open_domain(app, ctx, Action::Read)?;
    let root = dom.root_id().to_string();
    let prefix = ids::domain_db_prefix(&root)?;
    let (_, dirs) = dom.store().list_dir(&format!("{prefix}{letter}/"))?;
    let first = &root[2..19];
    let limit = ctx.limit()?.unwrap_or(usize::MAX);
    let marker = ctx.param("Marker");
    let list: Vec<String> = dirs
        .iter()
        .filter_map(|d| {
            let rest = d.trim_end_matches('/').rsplit('/').next()?;
            let id = format!("{letter}-{first}-{rest}");
            ids::parse_id(&id).is_ok().then_some(id)
        })
        .filter(|id| *id != root && marker.map_or(true, |m| id.as_str() > m))
        .take(limit)
        .collect();
    ok(json!({key: list, "hrefs": []}))
}

/// An object as `GET /groups/{id}` answers it: with its links and
/// attributes when the request asks (`include_links`, `include_attrs`).
fn object_answer(dom: &Domain, ctx: &Ctx, id: &str) -> Result<Value> {
    let doc = dom.get_doc(id)?;
    Ok(object_json(
        &doc,
        dom.location(),
        ctx.flag("include_links"),
        ctx.flag("include_attrs"),
    ))
}

/// Most external links one path walk follows (a cycle of them ends there;
/// the engine bounds soft links within each domain).
const MAX_EXTERNAL_HOPS: usize = 40;

/// The object at `path` (absolute, or relative to the group `start` of
/// `dom`) by hard links, soft links when `follow_soft` (HSDS's
/// `follow_soft_links`) and external links when `follow_external`
/// (`follow_external_links`), with the domain it is in; `None` when a name
/// on the way is missing. A link on the way not to be followed is 400, as
/// in HSDS; an external link leads only where the caller may read.
fn walk_path(
    app: &App,
    ctx: &Ctx,
    mut dom: Arc<Domain>,
    start: &str,
    path: &str,
    follow_soft: bool,
    follow_external: bool,
) -> Result<Option<(Arc<Domain>, String)>> {
    use h5lake_engine::PathEnd;
    let (mut start, mut rest) = (start.to_string(), path.to_string());
    for _ in 0..=MAX_EXTERNAL_HOPS {
        match dom.walk_path(&start, &rest, follow_soft)? {
            PathEnd::Found(id) => return Ok(Some((dom, id))),
            PathEnd::Missing => return Ok(None),
            PathEnd::TooManyLinks => {
                return Err(ServerError::BadRequest(format!(
                    "h5path {path:?}: a cycle of soft links, or more names than one path may \
                     walk, on the way"
                )))
            }
            PathEnd::SoftLink(name) => {
                return Err(ServerError::BadRequest(format!(
                    "h5path {path:?}: {name:?} is a soft link (ask with follow_soft_links=1)"
                )))
            }
            PathEnd::ExternalLink { name, .. } if !follow_external => {
                return Err(ServerError::BadRequest(format!(
                    "h5path {path:?}: {name:?} is an external link (ask with follow_external_links=1)"
                )))
            }
            PathEnd::ExternalLink {
                file, target, rest: after, ..
            } => {
                // (`hdf5://` names a domain of this server.)
                let domain =
                    crate::request::domain_path(file.strip_prefix("hdf5:/").unwrap_or(&file))?;
                dom = crate::domains::open_domain_named(app, &ctx.user, domain, Action::Read)?;
                start = dom.root_id().to_string();
                rest = format!("/{target}/{after}");
            }
        }
    }
    Err(ServerError::BadRequest(format!(
        "h5path {path:?}: more than {MAX_EXTERNAL_HOPS} external links on the way"
    )))
}

/// The object at the request's `h5path` (absolute, or relative to the
/// group `grpid`), following hard and soft links, as `GET /groups/{id}`
/// answers it; `kind` (`"g"`, `"d"`, `"t"`) when it must be of one kind.
pub(crate) fn object_by_path(
    app: &App,
    ctx: &Ctx,
    path: &str,
    kind: Option<&str>,
) -> Result<Response> {
    let dom = open_domain(app, ctx, Action::Read)?;
    let start = match ctx.param("grpid").or_else(|| ctx.param("parent_id")) {
        Some(g) => {
            check_id(g, "groups")?;
            g.to_string()
        }
        None if path.starts_with('/') => dom.root_id().to_string(),
        None => {
            return Err(ServerError::BadRequest(format!(
                "h5path {path:?} is relative: give grpid, the group it starts from"
            )))
        }
    };
    let (dom, id) = walk_path(
        app,
        ctx,
        dom,
        &start,
        path,
        ctx.flag("follow_soft_links"),
        ctx.flag("follow_external_links"),
    )?
    .filter(|(_, id)| kind.map_or(true, |k| id.starts_with(k)))
    .ok_or_else(|| ServerError::NotFound(format!("no such object at h5path {path:?}")))?;
    let mut out = object_answer(&dom, ctx, &id)?;
    out["class"] = json!(match &id[..1] {
        "g" => "group",
        "d" => "dataset",
        _ => "datatype",
    });
    ok_typed(ctx, out)
}

/// `GET /groups` (and the other collections): the object at `h5path` when
/// one is asked for, else the list.
fn list_or_find(app: &App, ctx: &Ctx, letter: &str, key: &str) -> Result<Response> {
    match ctx.param("h5path") {
        Some(path) => object_by_path(app, ctx, path, Some(&format!("{letter}-"))),
        None => list_collection(app, ctx, letter, key),
    }
}

pub(crate) async fn list_groups(State(app): AppState, ctx: Ctx) -> Result<Response> {
    blocking(move || list_or_find(&app, &ctx, "g", "groups")).await
}

pub(crate) async fn list_datasets(State(app): AppState, ctx: Ctx) -> Result<Response> {
    blocking(move || list_or_find(&app, &ctx, "d", "datasets")).await
}

pub(crate) async fn list_datatypes(State(app): AppState, ctx: Ctx) -> Result<Response> {
    blocking(move || list_or_find(&app, &ctx, "t", "datatypes")).await
}

/// A type given by reference to a committed datatype (`"t-…"`) becomes that
/// type with its `id`, as HSDS stores it.
pub(crate) fn resolve_type(dom: &Domain, t: &Value) -> Result<Value> {
    if let Some(tid) = t.as_str().filter(|s| s.starts_with("t-")) {
        let doc = dom.get_doc(tid)?;
        let mut ty = doc
            .get("type")
            .cloned()
            .ok_or_else(|| ServerError::BadRequest(format!("{tid} is not a datatype")))?;
        ty["id"] = json!(tid);
        return Ok(ty);
    }
    type_json(t)
}

/// Largest chunk a dataset may declare: every read or write of a chunk holds
/// it whole in memory (HSDS refuses chunks beyond its chunk cache, 128 MiB
/// by default, too).
const MAX_CHUNK_BYTES: u128 = 128 << 20;

pub(crate) fn check_chunk_size(t: &Value, cprops: &Value) -> Result<()> {
    let esize = h5lake_types::Datatype::from_json(t)?
        .fixed_size()
        .unwrap_or(16) as u128;
    // Every element lives in some chunk, and a read holds its chunk whole.
    if esize > MAX_CHUNK_BYTES {
        return Err(ServerError::BadRequest(format!(
            "elements of {esize} bytes are too large (at most {MAX_CHUNK_BYTES} bytes, the largest chunk)"
        )));
    }
    let Some(dims) = cprops.pointer("/layout/dims").and_then(Value::as_array) else {
        return Ok(());
    };
    let n = dims.iter().try_fold(esize, |acc, d| {
        d.as_u64().and_then(|d| acc.checked_mul(u128::from(d)))
    });
    match n {
        Some(n) if n <= MAX_CHUNK_BYTES => Ok(()),
        _ => Err(ServerError::BadRequest(format!(
            "chunk shape {} is too large (at most {MAX_CHUNK_BYTES} bytes a chunk)",
            Value::Array(dims.clone())
        ))),
    }
}

/// HSDS's rule: no chunk reaches past a fixed maximum extent (`shape` as
/// stored: `maxdims` holds numbers and "H5S_UNLIMITED").
fn check_chunks_within(shape: &Value, cprops: &Value) -> Result<()> {
    let (Some(chunk), Some(max)) = (
        cprops.pointer("/layout/dims").and_then(Value::as_array),
        shape
            .get("maxdims")
            .or_else(|| shape.get("dims"))
            .and_then(Value::as_array),
    ) else {
        return Ok(());
    };
    let past = chunk
        .iter()
        .zip(max)
        .any(|(c, m)| matches!((c.as_u64(), m.as_u64()), (Some(c), Some(m)) if m > 0 && c > m));
    if past {
        return Err(ServerError::BadRequest(format!(
            "chunk shape {} must not exceed the maximum shape {}",
            Value::Array(chunk.clone()),
            Value::Array(max.clone())
        )));
    }
    Ok(())
}

pub(crate) fn object_body(item: &Value) -> Result<&Map<String, Value>> {
    item.as_object().ok_or_else(|| {
        ServerError::BadRequest("each object to create must be a JSON object".into())
    })
}

/// Creates one object from a POST item; returns its JSON and the link the
/// item asked for (`link: {id, name}`), to be made by the caller in batch.
pub(crate) fn create_item(
    dom: &Domain,
    coll: &str,
    item: &Value,
    implicit: bool,
) -> Result<(Value, Option<(String, String)>)> {
    let body = object_body(item)?;
    let link = match body.get("link") {
        None => None,
        Some(l) => {
            let parent = l.get("id").and_then(Value::as_str).unwrap_or(dom.root_id());
            let name = l
                .get("name")
                .and_then(Value::as_str)
                .ok_or_else(|| ServerError::BadRequest("link without name".into()))?;
            Some((parent.to_string(), name.to_string()))
        }
    };
    let link = match (link, body.get("h5path").and_then(Value::as_str)) {
        (Some(l), None) => Some(l),
        (None, Some(path)) => {
            let parent = body
                .get("parent_id")
                .and_then(Value::as_str)
                .unwrap_or(dom.root_id());
            let (parent, name) = resolve_parent(dom, parent, path, implicit)?;
            Some((parent, name))
        }
        (None, None) => None,
        (Some(_), Some(_)) => {
            return Err(ServerError::BadRequest(
                "'link' key in body can't be used with h5path".into(),
            ))
        }
    };
    // Where the object will be linked is checked before it is made: a
    // request that fails leaves nothing behind.
    if let Some((parent, name)) = &link {
        dom.check_new_link(parent, name)?;
    }
    let id = match body.get("id") {
        None => None,
        Some(Value::String(s)) => Some(s.as_str()),
        Some(v) => return Err(ServerError::BadRequest(format!("invalid id {v}"))),
    };
    // HSDS answers a POST of an id already made with 400.
    if let Some(i) = id {
        if dom.get_doc(i).is_ok() {
            return Err(ServerError::BadRequest(format!(
                "an object with id {i} already exists"
            )));
        }
    }
    let cprops = body.get("creationProperties").cloned().unwrap_or(json!({}));
    if !cprops.is_object() {
        return Err(ServerError::BadRequest(
            "creationProperties must be an object".into(),
        ));
    }
    let new_id = match coll {
        "groups" => {
            if body.contains_key("type") {
                return Err(ServerError::BadRequest(
                    "type key is not allowed for Group creation".into(),
                ));
            }
            dom.create_group_with_id(id, cprops)?
        }
        "datatypes" => {
            let t = resolve_type(
                dom,
                body.get("type")
                    .ok_or_else(|| ServerError::BadRequest("no type given".into()))?,
            )?;
            dom.create_datatype_with_id(id, t)?
        }
        _ => {
            let t = resolve_type(
                dom,
                body.get("type").ok_or_else(|| {
                    ServerError::BadRequest("no type specified for create dataset".into())
                })?,
            )?;
            let shape = shape_json(body.get("shape"), body.get("maxdims"))?;
            if cprops.get("initializer").is_some() {
                // (Kept and not run, its dataset would read as fill values.)
                return Err(ServerError::NotImplemented(
                    "dataset initializers (creationProperties.initializer) are not supported \
                     by h5lake serve: write the values"
                        .into(),
                ));
            }
            let mut cprops = cprops;
            let filtered = cprops
                .get("filters")
                .and_then(Value::as_array)
                .is_some_and(|f| !f.is_empty());
            // (A maximum extent given at all, even the extent itself, asks
            // for a dataset HSDS can shrink and grow back: chunked.)
            let resizable = body.get("maxdims").is_some()
                || shape
                    .get("maxdims")
                    .is_some_and(|m| Some(m) != shape.get("dims"));
            // (A virtual dataset's mappings say where its elements are.)
            let virtual_ds = cprops.pointer("/h5lake/virtual").is_some();
            if cprops.get("layout").is_none() && !virtual_ds {
                // As HSDS lays out a dataset the client gave no layout:
                // chunks of 1-4 MiB once it needs them (filters, resizing)
                // or is that big, reported as they are stored.
                let dims: Vec<u64> = shape["dims"]
                    .as_array()
                    .map(|a| a.iter().filter_map(Value::as_u64).collect())
                    .unwrap_or_default();
                let maxdims: Option<Vec<Option<u64>>> = shape["maxdims"]
                    .as_array()
                    .map(|a| a.iter().map(Value::as_u64).collect());
                // (HSDS guesses 128 bytes for an element of variable length.)
                let esize = h5lake_types::Datatype::from_json(&t)?
                    .fixed_size()
                    .unwrap_or(128) as u64;
                let simple = shape.get("class").and_then(Value::as_str) == Some("H5S_SIMPLE");
                let bytes = dims.iter().fold(esize, |n, &d| n.saturating_mul(d));
                cprops["layout"] = if simple
                    && (filtered || resizable || bytes >= crate::domains::MIN_CHUNK_BYTES)
                {
                    let chunks = h5lake_types::hsds_chunks(
                        &dims,
                        maxdims.as_deref(),
                        esize,
                        (
                            crate::domains::MIN_CHUNK_BYTES,
                            crate::domains::LAYOUT_MAX_CHUNK_BYTES,
                        ),
                    );
                    json!({"class": "H5D_CHUNKED", "dims": chunks})
                } else {
                    json!({"class": "H5D_CONTIGUOUS"})
                };
            }
            check_chunk_size(&t, &cprops)?;
            check_chunks_within(&shape, &cprops)?;
            let did = dom.create_dataset_with_id(id, t, shape, cprops)?;
            if let Some(v) = body.get("value").filter(|v| !v.is_null()) {
                if let Err(e) = values::write_json_value(dom, &did, None, v) {
                    let _ = dom.delete_object(&did);
                    return Err(e);
                }
            }
            did
        }
    };
    let after = || -> Result<()> {
        if let Some(attrs) = body.get("attributes") {
            let items = values::attrs_from_request(dom, attrs)?;
            if !items.is_empty() {
                dom.attrs_create(&new_id, items, false)?;
            }
        }
        if let Some(links) = body.get("links") {
            if coll != "groups" {
                return Err(ServerError::BadRequest(
                    "links can only be used with groups".into(),
                ));
            }
            let items = links_from_request(links)?;
            if !items.is_empty() {
                dom.links_create(&new_id, items, false)?;
            }
        }
        Ok(())
    };
    if let Err(e) = after() {
        let _ = dom.delete_object(&new_id);
        return Err(e);
    }
    let doc = dom.get_doc(&new_id)?;
    Ok((object_json(&doc, dom.location(), false, false), link))
}

/// The group that `path` (relative to `start`, or absolute) names the last
/// component in, and that component; with `implicit` (HSDS's `implicit=1`),
/// groups missing on the way are made and linked.
pub(crate) fn resolve_parent(
    dom: &Domain,
    start: &str,
    path: &str,
    implicit: bool,
) -> Result<(String, String)> {
    let mut cur = if path.starts_with('/') {
        dom.root_id().to_string()
    } else {
        start.to_string()
    };
    let parts: Vec<&str> = path.split('/').filter(|p| !p.is_empty()).collect();
    let (last, dirs) = parts
        .split_last()
        .ok_or_else(|| ServerError::BadRequest(format!("invalid h5path {path:?}")))?;
    for p in dirs {
        let link = match dom.link_get(&cur, p) {
            Ok(l) => l,
            Err(h5lake_engine::EngineError::NotFound(_)) if implicit => {
                let gid = dom.create_group(json!({}))?;
                let link = json!({"class": "H5L_TYPE_HARD", "id": gid});
                if let Err(e) = dom.link_create(&cur, p, link.clone()) {
                    let _ = dom.delete_object(&gid);
                    return Err(e.into());
                }
                link
            }
            Err(_) => {
                return Err(ServerError::NotFound(format!(
                    "no group at {p:?} in h5path {path:?}"
                )))
            }
        };
        cur = link
            .get("id")
            .and_then(Value::as_str)
            .filter(|i| i.starts_with("g-"))
            .ok_or_else(|| {
                ServerError::BadRequest(format!("{p:?} in h5path {path:?} is not a group"))
            })?
            .to_string();
    }
    Ok((cur, (*last).to_string()))
}

pub(crate) async fn post_objects(
    app: Arc<App>,
    ctx: Ctx,
    coll: &'static str,
    body: Body,
) -> Result<Response> {
    let body = json_body(&app, &ctx, body, Gate::On(Action::Create)).await?;
    blocking(move || {
        let dom = open_domain(&app, &ctx, Action::Create)?;
        let (items, many) = match body {
            None => (vec![json!({})], false),
            Some(Value::Array(a)) => (a, true),
            Some(v @ Value::Object(_)) => (vec![v], false),
            Some(_) => {
                return Err(ServerError::BadRequest(
                    "the body must be an object or a list of objects".into(),
                ))
            }
        };
        let mut objects = Vec::with_capacity(items.len());
        let mut links: Vec<(String, Vec<(String, Value)>)> = Vec::new();
        let mut linked = 0;
        let made = (|| -> Result<()> {
            for item in &items {
                let (obj, link) = create_item(&dom, coll, item, ctx.flag("implicit"))?;
                if let Some((parent, name)) = link {
                    let target = json!({"class": "H5L_TYPE_HARD", "id": obj["id"]});
                    match links.iter_mut().find(|(p, _)| *p == parent) {
                        Some((_, l)) => l.push((name, target)),
                        None => links.push((parent, vec![(name, target)])),
                    }
                }
                objects.push(obj);
            }
            // One document update per parent group, however many links.
            for (parent, l) in &links {
                dom.links_create(parent, l.clone(), many)?;
                linked += 1;
            }
            Ok(())
        })();
        if let Err(e) = made {
            // All or nothing: the links and objects this request made go
            // again (only the groups whose update went through hold links
            // of this request).
            for (parent, l) in &links[..linked] {
                let names: Vec<String> = l.iter().map(|(n, _)| n.clone()).collect();
                let _ = dom.links_delete(parent, &names);
            }
            for obj in &objects {
                if let Some(id) = obj.get("id").and_then(Value::as_str) {
                    let _ = dom.delete_object(id);
                }
            }
            return Err(e);
        }
        if many {
            created(json!({"objects": objects}))
        } else {
            created(objects.pop().unwrap_or(json!({})))
        }
    })
    .await
}

pub(crate) async fn post_groups(State(app): AppState, ctx: Ctx, body: Body) -> Result<Response> {
    post_objects(app, ctx, "groups", body).await
}

pub(crate) async fn post_datasets(State(app): AppState, ctx: Ctx, body: Body) -> Result<Response> {
    post_objects(app, ctx, "datasets", body).await
}

pub(crate) async fn post_datatypes(State(app): AppState, ctx: Ctx, body: Body) -> Result<Response> {
    post_objects(app, ctx, "datatypes", body).await
}

pub(crate) async fn get_shape(
    State(app): AppState,
    ctx: Ctx,
    Path(id): Path<String>,
) -> Result<Response> {
    check_id(&id, "datasets")?;
    blocking(move || {
        let dom = open_domain(&app, &ctx, Action::Read)?;
        let doc = dom.get_doc(&id)?;
        ok(json!({"shape": doc["shape"], "created": doc["created"], "lastModified": doc["lastModified"], "hrefs": []}))
    })
    .await
}

/// h5lake's own: a dataset's statistics — per stored chunk (`chunks`) and
/// over the whole dataset (`total`, from the chunks' records, reading only
/// chunks whose records are stale).
pub(crate) async fn get_stats(
    State(app): AppState,
    ctx: Ctx,
    Path(id): Path<String>,
) -> Result<Response> {
    check_id(&id, "datasets")?;
    blocking(move || {
        let dom = open_domain(&app, &ctx, Action::Read)?;
        // Each chunk's row holds a few values per field: bounded like any
        // JSON answer, before any is computed; and the memory the records
        // and the answer take is reserved from the budget.
        let m = dom.dataset(&id)?;
        // (Without statistics kept, the aggregate is computed per chunk
        // over the type's members all the same.)
        let members = match &m.dtype {
            h5lake_types::Datatype::Compound { fields, .. } => fields.len().max(1),
            _ => 1,
        };
        let (leaves, functions) = m
            .stats
            .as_ref()
            .map_or((members, 0), |p| (p.leaves.len(), p.functions.len()));
        let per_chunk = 8 + 6 * leaves + functions;
        let chunks = dom.chunk_count(&id)?;
        if chunks.saturating_mul(per_chunk) > app.cfg.max_json_elements {
            return Err(ServerError::TooLarge(
                "the dataset has too many chunks to list their statistics in one answer".into(),
            ));
        }
        // (Chunks whose records are stale are read and decoded.)
        let _held = app.budget.reserve_blocking(
            chunks
                .saturating_mul(per_chunk.saturating_mul(2 * crate::budget::JSON_VALUE_BYTES))
                .saturating_add(dom.chunk_work_bytes(&m, chunks as u64, false, false)),
            "this dataset's statistics",
        )?;
        let (plan, agg) = dom.aggregate(&id, None)?;
        let total = h5lake_engine::stats::aggregate_json(&plan, &agg);
        let chunks = match dom.chunk_stats(&id) {
            Ok((m, plan, c)) => {
                h5lake_engine::stats::chunk_stats_json(&plan, &m, &c)["chunks"].take()
            }
            Err(h5lake_engine::EngineError::WrongType(_)) => json!([]),
            Err(e) => return Err(e.into()),
        };
        ok(json!({"chunks": chunks, "total": total, "hrefs": []}))
    })
    .await
}

/// A new extent past the dataset's maximum conflicts with the dataset as
/// made (409, as HSDS answers it).
fn check_maxdims(m: &h5lake_engine::DatasetMeta, dims: &[u64]) -> Result<()> {
    if let h5lake_types::Shape::Simple {
        maxdims: Some(max), ..
    } = &m.shape
    {
        let past = dims
            .iter()
            .zip(max)
            .any(|(&d, &x)| x != h5lake_types::UNLIMITED && d > x);
        if past {
            return Err(ServerError::Conflict(format!(
                "the new extent {dims:?} passes the maximum {max:?}"
            )));
        }
    }
    Ok(())
}

pub(crate) async fn put_shape(
    State(app): AppState,
    ctx: Ctx,
    Path(id): Path<String>,
    body: Body,
) -> Result<Response> {
    check_id(&id, "datasets")?;
    let body = json_body(&app, &ctx, body, Gate::On(Action::Update))
        .await?
        .unwrap_or(json!({}));
    blocking(move || {
        let dom = open_domain(&app, &ctx, Action::Update)?;
        let m = dom.dataset_meta(&id)?;
        let (old, new_dims) = if let Some(ext) = body.get("extend") {
            if body.get("shape").is_some() {
                return Err(ServerError::BadRequest(
                    "give shape or extend, not both".into(),
                ));
            }
            let n = ext.as_u64().ok_or_else(|| {
                ServerError::BadRequest("extend must be a non-negative integer".into())
            })?;
            let dim = body
                .get("extend_dim")
                .map_or(Some(0), Value::as_u64)
                .ok_or_else(|| ServerError::BadRequest("invalid extend_dim".into()))?
                as usize;
            let mut d = m.dims.clone();
            let slot = d
                .get_mut(dim)
                .ok_or_else(|| ServerError::BadRequest(format!("extend_dim {dim} out of range")))?;
            *slot = slot
                .checked_add(n)
                .ok_or_else(|| ServerError::BadRequest("extent overflows".into()))?;
            check_elements(&d)?;
            check_maxdims(&m, &d)?;
            // The engine re-applies the growth to the current shape: with
            // concurrent extends, each gets rows of its own.
            dom.extend(&id, dim, n)?
        } else if let Some(s) = body.get("shape") {
            let new_dims: Vec<u64> = match s {
                Value::Array(a) => a
                    .iter()
                    .map(|x| {
                        x.as_u64().ok_or_else(|| {
                            ServerError::BadRequest(format!("invalid dimension {x}"))
                        })
                    })
                    .collect::<Result<_>>()?,
                Value::Number(n) => vec![n
                    .as_u64()
                    .ok_or_else(|| ServerError::BadRequest(format!("invalid dimension {n}")))?],
                _ => {
                    return Err(ServerError::BadRequest(
                        "shape must be a list of dimensions".into(),
                    ))
                }
            };
            if new_dims.len() != m.dims.len() {
                return Err(ServerError::BadRequest(format!(
                    "new shape must have rank {}",
                    m.dims.len()
                )));
            }
            check_elements(&new_dims)?;
            check_maxdims(&m, &new_dims)?;
            dom.resize(&id, &new_dims)?;
            (m.dims.clone(), new_dims)
        } else {
            return Err(ServerError::BadRequest("give shape or extend".into()));
        };
        let mut out = json!({"hrefs": []});
        if body.get("extend").is_some() {
            // HSDS answers an extend with the selection the new rows occupy.
            let sel: Vec<String> = old
                .iter()
                .zip(&new_dims)
                .map(|(o, n)| {
                    if o == n {
                        format!("0:{n}")
                    } else {
                        format!("{o}:{n}")
                    }
                })
                .collect();
            out["selection"] = json!(format!("[{}]", sel.join(",")));
        }
        created(out)
    })
    .await
}

/// Refuses shapes with more elements than the server handles.
fn check_elements(dims: &[u64]) -> Result<()> {
    let n = dims
        .iter()
        .try_fold(1u128, |a, &d| a.checked_mul(u128::from(d)));
    if n.is_some_and(|n| n <= crate::request::MAX_ELEMENTS) {
        Ok(())
    } else {
        Err(ServerError::BadRequest("shape too large".into()))
    }
}

pub(crate) async fn get_type(
    State(app): AppState,
    ctx: Ctx,
    Path(id): Path<String>,
) -> Result<Response> {
    check_id(&id, "datasets")?;
    blocking(move || {
        let dom = open_domain(&app, &ctx, Action::Read)?;
        let doc = dom.get_doc(&id)?;
        // (HSDS's three: the type, its dataset, the domain's root.)
        let hrefs = json!([
            {"rel": "self", "href": format!("/datasets/{id}/type")},
            {"rel": "owner", "href": format!("/datasets/{id}")},
            {"rel": "root", "href": format!("/groups/{}", dom.root_id())},
        ]);
        ok(json!({"type": doc["type"], "hrefs": hrefs}))
    })
    .await
}

// ---- links -----------------------------------------------------------------

/// A link from a request (`{id}`, `{h5path}`, `{h5path, h5domain}`, or any
/// of those with an explicit `class`) in the stored form.
pub(crate) fn link_from_request(v: &Value) -> Result<Value> {
    let s = |k: &str| v.get(k).and_then(Value::as_str);
    let mut link = if let Some(id) = s("id") {
        ids::parse_id(id).map_err(|_| bad_id(id))?;
        json!({"class": "H5L_TYPE_HARD", "id": id})
    } else if let (Some(path), Some(domain)) = (s("h5path"), s("h5domain").or_else(|| s("file"))) {
        json!({"class": "H5L_TYPE_EXTERNAL", "h5path": path, "h5domain": domain})
    } else if let Some(path) = s("h5path") {
        json!({"class": "H5L_TYPE_SOFT", "h5path": path})
    } else {
        return Err(ServerError::BadRequest(format!(
            "invalid link {v}: give id, h5path, or h5path and h5domain"
        )));
    };
    // A client's own time is kept only near the server's (HSDS allows 300
    // s of drift): creation order is the store's, not a skewed clock's.
    if let Some(t) = v.get("created").and_then(Value::as_f64) {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0.0, |d| d.as_secs_f64());
        if (t - now).abs() <= MAX_TIMESTAMP_DRIFT_SECS {
            link["created"] = json!(t);
        }
    }
    Ok(link)
}

/// How far a client's `created` may be from the server's clock (HSDS's
/// `max_timestamp_drift`).
const MAX_TIMESTAMP_DRIFT_SECS: f64 = 300.0;

pub(crate) fn links_from_request(links: &Value) -> Result<Vec<(String, Value)>> {
    links
        .as_object()
        .ok_or_else(|| ServerError::BadRequest("links must be an object of name: link".into()))?
        .iter()
        .map(|(name, l)| Ok((name.clone(), link_from_request(l)?)))
        .collect()
}

/// A stored link as HSDS lists it.
/// HSDS answers external links with their domain under `file` (h5pyd reads
/// that key); the stored documents keep `h5domain`.
pub(crate) fn with_file_key(link: &mut Value) {
    if let Some(d) = link.get("h5domain").cloned() {
        link["file"] = d;
    }
}

pub(crate) fn link_item(name: &str, link: &Value) -> Value {
    let mut item = link.clone();
    with_file_key(&mut item);
    item["title"] = json!(name);
    if let Some(id) = link.get("id").and_then(Value::as_str) {
        let target = json!(format!("/{}/{id}", collection_of(id)));
        item["collection"] = json!(collection_of(id));
        item["href"] = target.clone();
        // (HSDS's key for where a hard link leads.)
        item["target"] = target;
    }
    item
}

pub(crate) async fn get_links(
    State(app): AppState,
    ctx: Ctx,
    Path(id): Path<String>,
) -> Result<Response> {
    check_id(&id, "groups")?;
    blocking(move || {
        let dom = open_domain(&app, &ctx, Action::Read)?;
        let items = link_page(&ctx, dom.links(&id)?)?;
        ok(json!({"links": items, "hrefs": []}))
    })
    .await
}

/// When a link or attribute was made: creation order is this order (the
/// document keeps members in it only for objects that track it).
fn creation_time(member: &Value) -> f64 {
    member.get("created").and_then(Value::as_f64).unwrap_or(0.0)
}

/// The links a listing answers with, as the request asks: by name unless
/// `CreateOrder`, those matching `pattern`, after the link named `Marker`
/// (404 when there is none, as in HSDS), at most `Limit` of them.
fn link_page(ctx: &Ctx, mut links: Vec<(String, Value)>) -> Result<Vec<Value>> {
    let limit = ctx.limit()?.unwrap_or(usize::MAX);
    let pattern = ctx.param("pattern");
    if ctx.flag("CreateOrder") {
        links.sort_by(|a, b| creation_time(&a.1).total_cmp(&creation_time(&b.1)));
    } else {
        links.sort_by(|a, b| a.0.cmp(&b.0));
    }
    let start = match ctx.param("Marker") {
        None => 0,
        Some(m) => links
            .iter()
            .position(|(n, _)| n == m)
            .map(|p| p + 1)
            .ok_or_else(|| ServerError::NotFound(format!("marker {m:?}: no such link")))?,
    };
    Ok(links[start.min(links.len())..]
        .iter()
        .filter(|(n, _)| pattern.map_or(true, |p| glob_match(p, n)))
        .take(limit)
        .map(|(n, l)| link_item(n, l))
        .collect())
}

pub(crate) async fn get_link(
    State(app): AppState,
    ctx: Ctx,
    Path((id, name)): Path<(String, String)>,
) -> Result<Response> {
    check_id(&id, "groups")?;
    blocking(move || {
        let dom = open_domain(&app, &ctx, Action::Read)?;
        let link = dom.link_get(&id, &name)?;
        let created = link.get("created").cloned().unwrap_or(json!(0));
        ok(json!({"link": link_item(&name, &link), "created": created, "lastModified": created, "hrefs": []}))
    })
    .await
}

pub(crate) async fn put_link(
    State(app): AppState,
    ctx: Ctx,
    Path((id, name)): Path<(String, String)>,
    body: Body,
) -> Result<Response> {
    check_id(&id, "groups")?;
    let body = json_body(&app, &ctx, body, Gate::On(Action::Create))
        .await?
        .unwrap_or(json!({}));
    let link = link_from_request(&body)?;
    blocking(move || {
        let dom = open_domain(&app, &ctx, Action::Create)?;
        match dom.link_create(&id, &name, link.clone()) {
            Ok(()) => created(json!({"hrefs": []})),
            Err(h5lake_engine::EngineError::AlreadyExists(m)) => {
                // HSDS: putting the same link again is fine, a different one conflicts.
                if same_link(&dom.link_get(&id, &name)?, &link) {
                    ok(json!({"hrefs": []}))
                } else {
                    Err(ServerError::Conflict(m))
                }
            }
            Err(e) => Err(e.into()),
        }
    })
    .await
}

pub(crate) async fn delete_link(
    State(app): AppState,
    ctx: Ctx,
    Path((id, name)): Path<(String, String)>,
) -> Result<Response> {
    check_id(&id, "groups")?;
    blocking(move || {
        let dom = open_domain(&app, &ctx, Action::Delete)?;
        dom.link_delete(&id, &name)?;
        app.gone.note(Deleted::Member(&id, "links", &name));
        ok(json!({"hrefs": []}))
    })
    .await
}

/// Named items (links or attributes) of one object.
type Named = Vec<(String, Value)>;

/// The items of one target of a batch PUT: the same items for every id a
/// list names are one copy, shared (a small body naming many ids must not
/// make the server hold a copy per id).
type Items = std::sync::Arc<Named>;

/// The items of a batch PUT, by target object: `{ITEMS: {...}}` for the
/// object in the URL, `{IDS: {id: {ITEMS: {...}}}}` for several, or
/// `{IDS: [id, ...], ITEMS: {...}}` for the same items on several (`keys` is
/// `(IDS, ITEMS)`, e.g. `("grp_ids", "links")`).
fn per_target(
    body: &Value,
    keys: (&str, &str),
    url_id: &str,
    check: impl Fn(&str) -> Result<()>,
    mut items: impl FnMut(&Value) -> Result<Named>,
) -> Result<Vec<(String, Items)>> {
    let (ids_key, items_key) = keys;
    let of = |v: &Value| v.get(items_key).cloned().unwrap_or(Value::Null);
    match body.get(ids_key) {
        None => Ok(vec![(url_id.to_string(), Items::new(items(&of(body))?))]),
        Some(Value::Object(m)) => m
            .iter()
            .map(|(id, v)| {
                check(id)?;
                Ok((id.clone(), Items::new(items(&of(v))?)))
            })
            .collect(),
        Some(Value::Array(a)) => {
            let shared = Items::new(items(&of(body))?);
            let mut seen = std::collections::HashSet::new();
            a.iter()
                .filter_map(|id| {
                    let Some(id) = id.as_str() else {
                        return Some(Err(ServerError::BadRequest(format!(
                            "{ids_key} must hold ids"
                        ))));
                    };
                    // (An id named twice is one target: its second write
                    // would conflict with its first.)
                    seen.insert(id)
                        .then(|| check(id).map(|()| (id.to_string(), shared.clone())))
                })
                .collect()
        }
        Some(_) => Err(ServerError::BadRequest(format!(
            "{ids_key} must be an object or a list"
        ))),
    }
}

/// PUT `/groups/{id}/links`: `{"links": {...}}` for this group, or
/// `{"grp_ids": {gid: {"links": {...}}}}` / `{"grp_ids": [...], "links": {...}}`
/// for many groups at once (what h5pyd flushes with).
pub(crate) async fn put_links(
    State(app): AppState,
    ctx: Ctx,
    Path(id): Path<String>,
    body: Body,
) -> Result<Response> {
    check_id(&id, "groups")?;
    let body = json_body(&app, &ctx, body, Gate::On(Action::Create))
        .await?
        .unwrap_or(json!({}));
    let per_group = per_target(
        &body,
        ("grp_ids", "links"),
        &id,
        |gid| check_id(gid, "groups"),
        links_from_request,
    )?;
    blocking(move || {
        let dom = open_domain(&app, &ctx, Action::Create)?;
        // As HSDS: a link already there as given is left, one there
        // otherwise conflicts; 200 when nothing was new. Every group's
        // links are checked (names, targets, conflicts) before any is
        // written: a refused request writes nothing.
        let mut new_per_group = Vec::with_capacity(per_group.len());
        for (gid, links) in per_group {
            let mut new = Vec::with_capacity(links.len());
            {
                let existing = dom.links(&gid)?;
                let existing: std::collections::HashMap<&str, &Value> =
                    existing.iter().map(|(n, v)| (n.as_str(), v)).collect();
                for (i, (name, link)) in links.iter().enumerate() {
                    match existing.get(name.as_str()) {
                        None => new.push(i),
                        Some(cur) if same_link(cur, link) => {}
                        Some(_) => {
                            return Err(ServerError::Conflict(format!(
                                "link {name:?} of {gid} already exists and leads elsewhere"
                            )))
                        }
                    }
                }
            }
            dom.check_links(new.iter().map(|&i| (links[i].0.as_str(), &links[i].1)))?;
            new_per_group.push((gid, links, new));
        }
        let mut made = false;
        for (gid, links, new) in new_per_group {
            if !new.is_empty() {
                // (One group's copy at a time: many groups named by one
                // small body would otherwise hold a copy each.)
                dom.links_create(&gid, new.iter().map(|&i| links[i].clone()).collect(), false)?;
                made = true;
            }
        }
        if made {
            created(json!({}))
        } else {
            ok(json!({}))
        }
    })
    .await
}

/// Whether stored link `cur` is the link `new` a request gives.
fn same_link(cur: &Value, new: &Value) -> bool {
    ["class", "id", "h5path", "h5domain"]
        .iter()
        .all(|k| cur.get(k) == new.get(k))
}

/// POST `/groups/{id}/links`: several links by `titles`.
pub(crate) async fn post_links(
    State(app): AppState,
    ctx: Ctx,
    Path(id): Path<String>,
    body: Body,
) -> Result<Response> {
    check_id(&id, "groups")?;
    let body = json_body(&app, &ctx, body, Gate::On(Action::Read))
        .await?
        .unwrap_or(json!({}));
    let titles: Option<Vec<String>> = match body.get("titles") {
        None => None,
        Some(Value::Array(a)) => Some(
            a.iter()
                .map(|t| {
                    t.as_str()
                        .map(str::to_string)
                        .ok_or_else(|| ServerError::BadRequest("titles must be strings".into()))
                })
                .collect::<Result<_>>()?,
        ),
        Some(_) => return Err(ServerError::BadRequest("titles must be a list".into())),
    };
    let groups: Option<Vec<String>> = match body.get("grp_ids") {
        None => None,
        Some(Value::Array(a)) => Some(
            a.iter()
                .map(|g| {
                    let g = g
                        .as_str()
                        .ok_or_else(|| ServerError::BadRequest("grp_ids must hold ids".into()))?;
                    check_id(g, "groups")?;
                    Ok(g.to_string())
                })
                .collect::<Result<_>>()?,
        ),
        Some(_) => return Err(ServerError::BadRequest("grp_ids must be a list".into())),
    };
    blocking(move || {
        let dom = open_domain(&app, &ctx, Action::Read)?;
        // The links of one group: all, or those named (a name missing is
        // 404 for one group; of several groups, each gives what it has).
        let by_name = !ctx.flag("CreateOrder");
        let of = |gid: &str, strict: bool| -> Result<Vec<Value>> {
            let mut links = dom.links(gid)?;
            let Some(t) = &titles else {
                return link_page(&ctx, links);
            };
            if by_name {
                links.sort_by(|a, b| a.0.cmp(&b.0));
            }
            let mut out = Vec::new();
            for name in t {
                match links.iter().find(|(n, _)| n == name) {
                    Some((n, l)) => out.push(link_item(n, l)),
                    None if strict => {
                        return Err(ServerError::NotFound(format!("link {name:?} not found")))
                    }
                    None => {}
                }
            }
            Ok(out)
        };
        match &groups {
            None => ok(json!({"links": of(&id, true)?})),
            // (HSDS answers a list of one group as a request for that group.)
            Some(gids) if gids.len() == 1 => ok(json!({"links": of(&gids[0], true)?})),
            Some(gids) => {
                let mut out = serde_json::Map::new();
                for g in gids {
                    out.insert(g.clone(), json!(of(g, false)?));
                }
                ok(json!({"links": out}))
            }
        }
    })
    .await
}

/// Names from a `titles=a/b` or `attr_names=a|b` parameter with HSDS's
/// `separator` parameter (default `/`).
pub(crate) fn split_names(ctx: &Ctx, key: &str) -> Result<Vec<String>> {
    let v = ctx
        .param(key)
        .ok_or_else(|| ServerError::BadRequest(format!("{key} parameter missing")))?;
    let sep = ctx
        .param("separator")
        .filter(|s| !s.is_empty())
        .unwrap_or("/");
    let names: Vec<String> = v.split(sep).map(str::to_string).collect();
    if names.iter().any(String::is_empty) {
        return Err(ServerError::BadRequest(format!("invalid {key} parameter")));
    }
    Ok(names)
}

pub(crate) async fn delete_links(
    State(app): AppState,
    ctx: Ctx,
    Path(id): Path<String>,
) -> Result<Response> {
    check_id(&id, "groups")?;
    let names = split_names(&ctx, "titles")?;
    blocking(move || {
        let dom = open_domain(&app, &ctx, Action::Delete)?;
        dom.links_delete(&id, &names)?;
        for name in &names {
            app.gone.note(Deleted::Member(&id, "links", name));
        }
        ok(json!({}))
    })
    .await
}

// ---- attributes ------------------------------------------------------------

/// Whether, and how, attribute answers carry values.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum AttrData {
    Without,
    Json,
    /// `encoding=base64`: the bytes of each fixed-size value.
    Base64,
}

impl AttrData {
    /// What `ctx` asks for; `IncludeData` defaults to `default`.
    pub(crate) fn of(ctx: &Ctx, default: bool) -> Self {
        let include = if ctx.param("IncludeData").is_none() {
            default
        } else {
            ctx.flag("IncludeData")
        };
        match (include, ctx.param("encoding")) {
            (false, _) => Self::Without,
            (true, Some("base64")) => Self::Base64,
            (true, _) => Self::Json,
        }
    }
}

pub(crate) fn attr_item(name: &str, attr: &Value, data: AttrData) -> Value {
    let mut item = json!({
        "name": name,
        "type": attr.get("type").cloned().unwrap_or(Value::Null),
        "shape": attr.get("shape").cloned().unwrap_or(Value::Null),
        "created": attr.get("created").cloned().unwrap_or(json!(0)),
        "href": format!("attributes/{}", percent_encoding::utf8_percent_encode(name, percent_encoding::NON_ALPHANUMERIC)),
        "hrefs": [],
    });
    if data != AttrData::Without {
        item["value"] = attr.get("value").cloned().unwrap_or(Value::Null);
        if let Some(e) = attr.get("encoding") {
            item["encoding"] = e.clone();
        }
        with_wire_value(&mut item, data == AttrData::Base64);
    }
    item
}

pub(crate) async fn get_attrs(
    State(app): AppState,
    ctx: Ctx,
    Coll(coll): Coll,
    Path(id): Path<String>,
) -> Result<Response> {
    check_id(&id, coll)?;
    blocking(move || {
        let dom = open_domain(&app, &ctx, Action::Read)?;
        let doc = dom.get_doc(&id)?;
        let limit = ctx.limit()?.unwrap_or(usize::MAX);
        let marker = ctx.param("Marker");
        let data = AttrData::of(&ctx, false);
        let empty = Map::new();
        let attrs = doc
            .get("attributes")
            .and_then(Value::as_object)
            .unwrap_or(&empty);
        let mut names: Vec<&String> = attrs.keys().collect();
        if ctx.flag("CreateOrder") {
            names.sort_by(|a, b| {
                creation_time(&attrs[a.as_str()]).total_cmp(&creation_time(&attrs[b.as_str()]))
            });
        } else {
            names.sort();
        }
        let start = marker
            .and_then(|m| names.iter().position(|n| *n == m).map(|p| p + 1))
            .unwrap_or(0);
        let items: Vec<Value> = names[start.min(names.len())..]
            .iter()
            .take(limit)
            .map(|n| attr_item(n, &attrs[n.as_str()], data))
            .collect();
        ok_typed(&ctx, json!({"attributes": items, "hrefs": []}))
    })
    .await
}

pub(crate) async fn get_attr(
    State(app): AppState,
    ctx: Ctx,
    Coll(coll): Coll,
    Path((id, name)): Path<(String, String)>,
) -> Result<Response> {
    check_id(&id, coll)?;
    blocking(move || {
        let dom = open_domain(&app, &ctx, Action::Read)?;
        let attr = dom.attr_get(&id, &name)?;
        let data = AttrData::of(&ctx, true);
        let mut item = attr_item(&name, &attr, data);
        item["lastModified"] = item["created"].clone();
        // (HSDS's three: the attribute, its owner, the root group.)
        let domain = ctx.domain()?;
        let q = format!("?domain={domain}");
        item["hrefs"] = json!([
            {"rel": "self", "href": format!("/{coll}/{id}/attributes/{}{q}",
                percent_encoding::utf8_percent_encode(&name, percent_encoding::NON_ALPHANUMERIC))},
            {"rel": "owner", "href": format!("/{coll}/{id}{q}")},
            {"rel": "root", "href": format!("/groups/{}{q}", dom.root_id())},
        ]);
        ok_typed(&ctx, item)
    })
    .await
}

pub(crate) async fn put_attr(
    State(app): AppState,
    ctx: Ctx,
    Coll(coll): Coll,
    Path((id, name)): Path<(String, String)>,
    body: Body,
) -> Result<Response> {
    check_id(&id, coll)?;
    let body = json_body(&app, &ctx, body, Gate::On(Action::Create))
        .await?
        .unwrap_or(json!({}));
    blocking(move || {
        let dom = open_domain(&app, &ctx, Action::Create)?;
        let replace =
            ctx.flag("replace") || body.get("replace").and_then(Value::as_bool) == Some(true);
        let attr = values::attr_from_request(&dom, &body)?;
        // (HSDS answers 201 for a new attribute, 200 for one replaced or
        // sent again unchanged.)
        let existed = replace && dom.attr_get(&id, &name).is_ok();
        match dom.attr_create(&id, &name, attr.clone(), replace) {
            Ok(()) if existed => ok(json!({"hrefs": []})),
            Ok(()) => created(json!({"hrefs": []})),
            Err(h5lake_engine::EngineError::AlreadyExists(e)) => {
                if same_attr(&dom.attr_get(&id, &name)?, &attr) {
                    ok(json!({"hrefs": []}))
                } else {
                    Err(h5lake_engine::EngineError::AlreadyExists(e).into())
                }
            }
            Err(e) => Err(e.into()),
        }
    })
    .await
}

pub(crate) async fn delete_attr(
    State(app): AppState,
    ctx: Ctx,
    Coll(coll): Coll,
    Path((id, name)): Path<(String, String)>,
) -> Result<Response> {
    check_id(&id, coll)?;
    blocking(move || {
        let dom = open_domain(&app, &ctx, Action::Delete)?;
        dom.attr_delete(&id, &name)?;
        app.gone.note(Deleted::Member(&id, "attributes", &name));
        ok(json!({"hrefs": []}))
    })
    .await
}

/// PUT `…/attributes`: `{"attributes": {...}}` for this object, or
/// `{"obj_ids": {id: {"attributes": {...}}}}` / `{"obj_ids": [...],
/// "attributes": {...}}` for many objects (what h5pyd flushes with).
pub(crate) async fn put_attrs(
    State(app): AppState,
    ctx: Ctx,
    Coll(coll): Coll,
    Path(id): Path<String>,
    body: Body,
) -> Result<Response> {
    check_id(&id, coll)?;
    let body = json_body(&app, &ctx, body, Gate::On(Action::Create))
        .await?
        .unwrap_or(json!({}));
    blocking(move || {
        let dom = open_domain(&app, &ctx, Action::Create)?;
        let replace = ctx.flag("replace");
        let per_obj = per_target(
            &body,
            ("obj_ids", "attributes"),
            &id,
            |oid| {
                ids::parse_id(oid)
                    .map(|_| ())
                    .map_err(|_| ServerError::BadRequest(format!("invalid id {oid}")))
            },
            |v| values::attrs_from_request(&dom, v),
        )?;
        // Clients re-send attributes they already stored (h5pyd does on
        // its first flush after opening with 'a'): an identical one is not
        // a conflict, as in HSDS. Every object is checked (there, and no
        // other attribute of a name given) before any is written: a
        // refused request writes nothing.
        let mut new_per_obj = Vec::with_capacity(per_obj.len());
        for (oid, items) in per_obj {
            h5lake_engine::check_attrs(items.iter().map(|(n, a)| (n.as_str(), a)))?;
            let mut new = Vec::with_capacity(items.len());
            {
                let doc = dom.get_doc(&oid)?;
                for (i, (n, a)) in items.iter().enumerate() {
                    let cur = doc.get("attributes").and_then(|m| m.get(n));
                    match cur {
                        Some(cur) if !replace && same_attr(cur, a) => {}
                        Some(_) if !replace => {
                            return Err(ServerError::Conflict(format!(
                                "attribute {n:?} of {oid} already exists"
                            )))
                        }
                        _ => new.push(i),
                    }
                }
            }
            new_per_obj.push((oid, items, new));
        }
        let mut made = false;
        for (oid, items, new) in new_per_obj {
            if !new.is_empty() {
                // (One object's copy at a time: many objects named by one
                // small body would otherwise hold a copy each.)
                dom.attrs_create(
                    &oid,
                    new.iter().map(|&i| items[i].clone()).collect(),
                    replace,
                )?;
                made = true;
            }
        }
        // (Nothing new: 200, as HSDS answers a repeated request.)
        if made {
            created(json!({}))
        } else {
            ok(json!({}))
        }
    })
    .await
}

pub(crate) fn same_attr(a: &Value, b: &Value) -> bool {
    ["type", "shape", "value", "encoding"]
        .iter()
        .all(|k| a.get(k) == b.get(k))
}

/// POST `…/attributes`: several attributes by `attr_names` (of this object,
/// or of each of `obj_ids`).
pub(crate) async fn post_attrs(
    State(app): AppState,
    ctx: Ctx,
    Coll(coll): Coll,
    Path(id): Path<String>,
    body: Body,
) -> Result<Response> {
    check_id(&id, coll)?;
    let body = json_body(&app, &ctx, body, Gate::On(Action::Read))
        .await?
        .unwrap_or(json!({}));
    blocking(move || {
        let dom = open_domain(&app, &ctx, Action::Read)?;
        let data = AttrData::of(&ctx, true);
        let names: Option<Vec<String>> = match body.get("attr_names") {
            None => None,
            Some(Value::Array(a)) => Some(
                a.iter()
                    .map(|t| {
                        t.as_str().map(str::to_string).ok_or_else(|| {
                            ServerError::BadRequest("attr_names must be strings".into())
                        })
                    })
                    .collect::<Result<_>>()?,
            ),
            Some(_) => return Err(ServerError::BadRequest("attr_names must be a list".into())),
        };
        let pick = |oid: &str| -> Result<Vec<Value>> {
            let doc = dom.get_doc(oid)?;
            let empty = Map::new();
            let attrs = doc
                .get("attributes")
                .and_then(Value::as_object)
                .unwrap_or(&empty);
            match &names {
                None => Ok(attrs.iter().map(|(n, a)| attr_item(n, a, data)).collect()),
                Some(ns) => ns
                    .iter()
                    .map(|n| {
                        attrs.get(n).map(|a| attr_item(n, a, data)).ok_or_else(|| {
                            ServerError::NotFound(format!("attribute {n:?} not found"))
                        })
                    })
                    .collect(),
            }
        };
        match body.get("obj_ids") {
            None => ok_typed(&ctx, json!({"attributes": pick(&id)?})),
            Some(Value::Array(a)) => {
                let mut out = Map::new();
                for oid in a {
                    let oid = oid
                        .as_str()
                        .ok_or_else(|| ServerError::BadRequest("obj_ids must hold ids".into()))?;
                    out.insert(oid.to_string(), json!(pick(oid)?));
                }
                ok_typed(&ctx, json!({"attributes": out}))
            }
            Some(_) => Err(ServerError::BadRequest("obj_ids must be a list".into())),
        }
    })
    .await
}

pub(crate) async fn delete_attrs(
    State(app): AppState,
    ctx: Ctx,
    Coll(coll): Coll,
    Path(id): Path<String>,
) -> Result<Response> {
    check_id(&id, coll)?;
    let names = split_names(&ctx, "attr_names")?;
    blocking(move || {
        let dom = open_domain(&app, &ctx, Action::Delete)?;
        dom.attrs_delete(&id, &names)?;
        for name in &names {
            app.gone.note(Deleted::Member(&id, "attributes", name));
        }
        ok(json!({}))
    })
    .await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunk_guess() {
        assert_eq!(h5lake_types::guess_chunks(&[10], 8), vec![10]);
        let c = h5lake_types::guess_chunks(&[1 << 20, 100], 8);
        assert!(c.iter().product::<u64>() * 8 <= 1 << 20);
        assert_eq!(h5lake_types::guess_chunks(&[0, 5], 4), vec![1, 5]);
        // Every dimension gives way, not the first alone.
        let c = h5lake_types::guess_chunks(&[50_000, 80_000], 4);
        assert!(c[0] < 50_000 && c[1] < 80_000, "{c:?}");
        assert!((512 << 10..=1 << 20).contains(&(c[0] * c[1] * 4)), "{c:?}");
        // HSDS's shapes for datasets made without a layout: 1-4 MiB.
        let hsds = |dims: &[u64], max: Option<&[Option<u64>]>, es| {
            h5lake_types::hsds_chunks(dims, max, es, (1 << 20, 4 << 20))
        };
        assert_eq!(hsds(&[50_000, 80_000], None, 4), vec![782, 1250]);
        assert_eq!(hsds(&[0], Some(&[None]), 8), vec![131_072]);
        assert_eq!(hsds(&[0], Some(&[Some(0)]), 8), vec![131_072]);
        assert_eq!(hsds(&[100], Some(&[Some(1000)]), 8), vec![1000]);
        assert_eq!(hsds(&[10, 10], None, 4), vec![10, 10]);
        assert_eq!(hsds(&[10, 0], Some(&[Some(10), None]), 4), vec![10, 32_768]);
        assert_eq!(hsds(&[1 << 40], None, 1 << 30), vec![1]);
    }

    #[test]
    fn links() {
        assert_eq!(
            link_from_request(&json!({"h5path": "/a"})).unwrap()["class"],
            "H5L_TYPE_SOFT"
        );
        assert_eq!(
            link_from_request(&json!({"h5path": "/a", "h5domain": "/x/y.h5"})).unwrap()["class"],
            "H5L_TYPE_EXTERNAL"
        );
        assert!(link_from_request(&json!({"id": "nope"})).is_err());
        assert!(link_from_request(&json!({})).is_err());
    }
}
