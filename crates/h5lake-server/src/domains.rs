//! Domains, folders and their ACLs: `/`, `/domains`, `/acls`.

use std::collections::HashMap;
use std::sync::Arc;

use axum::body::Body;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use h5lake_engine::{ids, Domain, DomainOptions, OpenMode};
use h5lake_store::{PutOutcome, Store, Version};
use serde_json::{json, Map, Value};

use crate::auth::{self, acl_check, Action};
use crate::error::{Result, ServerError};
use crate::objects::object_json;
use crate::request::domain_key;
use crate::routes::{blocking, created, json_body, ok, AppState, Ctx, Gate};
use crate::App;

// ---- domains -------------------------------------------------------------

pub(crate) fn parse_doc(bytes: &[u8], what: &str) -> Result<Value> {
    h5lake_engine::json::parse_doc(bytes, what)
        .map_err(|e| ServerError::Internal(format!("corrupt document: {e}")))
}

/// The domain or folder document, 404 if there is none.
pub(crate) fn domain_doc(app: &App, domain: &str) -> Result<Value> {
    let place = app.places.place(domain)?;
    let key = domain_key(&format!("/{}", place.path));
    let missing = || ServerError::NotFound(format!("domain {domain} not found"));
    if place.store.prefers_batching() {
        // A remote store answers a version check no faster than the read.
        let bytes = place.store.get(&key)?.ok_or_else(missing)?;
        return parse_doc(&bytes, &key);
    }
    let version = place.store.version(&key)?.ok_or_else(missing)?;
    if let Some(doc) = app.domain_docs.get(domain, &version) {
        return Ok(doc);
    }
    let read = place.store.get_versioned(&key)?.ok_or_else(missing)?;
    let doc = parse_doc(&read.data, &key)?;
    app.domain_docs
        .put(domain.to_string(), read.version, doc.clone());
    Ok(doc)
}

/// Domain and folder documents read by earlier requests, by domain, with the
/// version each was read at. Every request needs its domain's document (for
/// the root id and the ACLs); on a local store a `stat` tells whether the
/// copy here is still current, saving the open and read of the file.
#[derive(Default)]
pub(crate) struct DomainDocs(std::sync::Mutex<HashMap<String, (Version, Value)>>);

impl DomainDocs {
    /// Most documents kept; past it the cache starts over.
    const SLOTS: usize = 1024;

    fn get(&self, key: &str, version: &Version) -> Option<Value> {
        let map = self.0.lock().unwrap_or_else(|e| e.into_inner());
        map.get(key)
            .filter(|(v, _)| v == version)
            .map(|(_, doc)| doc.clone())
    }

    fn put(&self, key: String, version: Version, doc: Value) {
        let mut map = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if map.len() >= Self::SLOTS && !map.contains_key(&key) {
            map.clear();
        }
        map.insert(key, (version, doc));
    }
}

/// Domains opened by earlier requests, by path, reused while the path still
/// names the same root group. Nothing here is authoritative: a `Domain`
/// checks every cached document and chunk against the store's version, so
/// a write through another server process is seen by the next request.
#[derive(Default)]
pub(crate) struct OpenDomains(std::sync::Mutex<HashMap<String, Arc<Domain>>>);

impl OpenDomains {
    /// Most domains kept open; each gets this share of the chunk cache.
    const SLOTS: usize = 16;

    fn get(&self, path: &str, root: &str) -> Option<Arc<Domain>> {
        let map = self.0.lock().unwrap_or_else(|e| e.into_inner());
        map.get(path).filter(|d| d.root_id() == root).cloned()
    }

    fn put(&self, path: String, dom: Arc<Domain>) {
        let mut map = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if map.len() >= Self::SLOTS && !map.contains_key(&path) {
            map.clear();
        }
        map.insert(path, dom);
    }
}

/// Opens the request's domain after checking `action` against its ACLs.
pub(crate) fn open_domain(app: &App, ctx: &Ctx, action: Action) -> Result<Arc<Domain>> {
    crate::budget::gate_documents(app, ctx);
    open_domain_named(app, &ctx.user, ctx.domain()?, action)
}

/// Opens `domain` for `user` after checking `action` against its ACLs.
pub(crate) fn open_domain_named(
    app: &App,
    user: &str,
    domain: String,
    action: Action,
) -> Result<Arc<Domain>> {
    let doc = domain_doc(app, &domain)?;
    acl_check(&doc, action, user, &app.cfg.admin_user)?;
    let Some(root) = doc.get("root").and_then(Value::as_str) else {
        return Err(ServerError::BadRequest(format!(
            "{domain} is a folder, not a domain"
        )));
    };
    if let Some(dom) = app.domains.get(&domain, root) {
        return Ok(dom);
    }
    let place = app.places.place(&domain)?;
    // An HDF5 file served in place reads its own bytes and nothing else.
    let link_policy = match &place.linked_file {
        Some(file) => h5lake_engine::LinkPolicy::only_file(file),
        None => app.link_policy.clone(),
    };
    // Opened read-write whatever the action: the ACL check above is what
    // decides, and one open domain then serves every request.
    let opts = DomainOptions {
        chunk_cache_bytes: app.cfg.chunk_cache_bytes / OpenDomains::SLOTS,
        shared_docs: Some(app.docs.clone()),
        max_doc_bytes: Some(app.cfg.max_document_bytes),
        link_policy: Some(link_policy),
        link_base: app.link_base.clone(),
        ..Default::default()
    };
    let mode = if place.linked_file.is_some() {
        OpenMode::Read
    } else {
        OpenMode::ReadWrite
    };
    let dom = Arc::new(Domain::open_with(
        place.store,
        &place.path,
        mode,
        domain.clone(),
        &opts,
    )?);
    if dom.root_id() == root {
        app.domains.put(domain, dom.clone());
    }
    Ok(dom)
}

/// Checks that the sender of a request may send its body, before the body
/// is read: a user with no rights must not make the server take in (and
/// hold) a hundred megabytes to learn that.
///
/// # Errors
/// 401/403 as the request itself would get; 404 for a missing domain.
pub(crate) async fn authorize(app: &Arc<App>, ctx: &Ctx, gate: Gate) -> Result<()> {
    let domain = ctx.domain()?;
    let user = ctx.user.clone();
    let check = {
        let app = app.clone();
        move || -> Result<()> {
            let admin = &app.cfg.admin_user;
            match gate {
                Gate::On(action) => acl_check(&domain_doc(&app, &domain)?, action, &user, admin),
                Gate::NewDomain => match domain_doc(&app, &domain) {
                    Ok(doc) => acl_check(&doc, Action::Update, &user, admin),
                    Err(ServerError::NotFound(_)) => {
                        if user == auth::DEFAULT_USER {
                            return Err(ServerError::Unauthorized(
                                "anonymous users cannot create domains".into(),
                            ));
                        }
                        match parent_of(&domain) {
                            "/" if user == *admin => Ok(()),
                            "/" => Err(ServerError::Forbidden(
                                "creation of top-level domains is only supported by admin users"
                                    .into(),
                            )),
                            parent => match domain_doc(&app, parent) {
                                Ok(p) => acl_check(&p, Action::Create, &user, admin),
                                Err(ServerError::NotFound(_)) => Err(ServerError::NotFound(
                                    format!("parent folder {parent} not found"),
                                )),
                                Err(e) => Err(e),
                            },
                        }
                    }
                    Err(e) => Err(e),
                },
            }
        }
    };
    if app.answers_inline() {
        check()
    } else {
        blocking(check).await
    }
}

pub(crate) async fn about(State(app): AppState, ctx: Ctx) -> Result<Response> {
    ok(json!({
        "start_time": app.started,
        "state": "READY",
        "hsds_version": "1.0.2",
        "name": "h5lake",
        "greeting": "Welcome to h5lake",
        "about": "h5lake: HDF5 data in the HSDS object-store schema, served over the HSDS REST API",
        "h5lake_version": env!("CARGO_PKG_VERSION"),
        "node_count": 1,
        "username": ctx.user,
        "isadmin": ctx.user == app.cfg.admin_user,
    }))
}

/// HSDS's `min_chunk_size`: a dataset made without a layout is chunked
/// from this size up.
pub(crate) const MIN_CHUNK_BYTES: u64 = 1 << 20;
/// HSDS's `max_chunk_size`: the most such a dataset's chunks hold.
pub(crate) const LAYOUT_MAX_CHUNK_BYTES: u64 = 4 << 20;

// Each one a filter a dataset can be made with, by this name alone.
const COMPRESSORS: [&str; 7] = ["deflate", "gzip", "lz4", "lz4hc", "lzf", "zstd", "blosclz"];

pub(crate) fn domain_response(domain: &str, doc: &Value) -> Value {
    let mut out = json!({
        "owner": doc.get("owner").cloned().unwrap_or(Value::Null),
        "created": doc.get("created").cloned().unwrap_or(json!(0)),
        "lastModified": doc.get("lastModified").cloned().unwrap_or(json!(0)),
        "class": if doc.get("root").is_some() { "domain" } else { "folder" },
        "name": domain,
        "hrefs": [],
        "limits": {"min_chunk_size": MIN_CHUNK_BYTES, "max_chunk_size": LAYOUT_MAX_CHUNK_BYTES,
                   "max_request_size": 100 << 20, "max_chunks_per_request": 1000},
        "compressors": COMPRESSORS,
        "version": "1.0.2",
    });
    if let Some(root) = doc.get("root") {
        out["root"] = root.clone();
    }
    out
}

/// The one node serving (HSDS lists its data nodes as `dn_ids`).
const DN_ID: &str = "dn-h5lake";

/// The answer to a domain or folder just made: as a `GET` answers it, with
/// its ACLs (the caller owns it) and, asked with `getdnids`, the nodes that
/// serve it (this server is one).
fn created_response(ctx: &Ctx, domain: &str, doc: &Value) -> Value {
    let mut out = domain_response(domain, doc);
    out["acls"] = doc.get("acls").cloned().unwrap_or(json!({}));
    if ctx.flag("getdnids") {
        out["dn_ids"] = json!([DN_ID]);
    }
    out
}

pub(crate) async fn get_domain(State(app): AppState, ctx: Ctx) -> Result<Response> {
    let named = ctx.param("domain").is_some()
        || ctx.param("host").is_some()
        || ctx.headers.contains_key("x-hdf-domain");
    if !named {
        // (No domain: the top level's domains, as HSDS answers.)
        return get_domains(State(app), ctx).await;
    }
    blocking(move || {
        let domain = ctx.domain()?;
        if domain == "/" {
            return Err(ServerError::BadRequest(
                "use GET /domains to list the top level".into(),
            ));
        }
        if let Some(path) = ctx.param("h5path") {
            // (The object at that path, as HSDS answers it.)
            return crate::objects::object_by_path(&app, &ctx, path, None);
        }
        let doc = domain_doc(&app, &domain)?;
        acl_check(&doc, Action::Read, &ctx.user, &app.cfg.admin_user)?;
        let mut out = domain_response(&domain, &doc);
        if ctx.flag("getdnids") {
            out["dn_ids"] = json!([DN_ID]);
        }
        if let Some(root) = doc.get("root").and_then(Value::as_str) {
            let store = app.places.place(&domain)?.store;
            if ctx.flag("verbose") {
                add_counts(&*store, root, &mut out)?;
            }
            if ctx.flag("getobjs") {
                crate::budget::gate_documents(&app, &ctx);
                if let Some(objs) = domain_objs(&*store, &domain, root)? {
                    out["domain_objs"] = objs;
                }
            }
        }
        ok(out)
    })
    .await
}

/// Most objects `GET /?getobjs=1` returns; bigger domains answer without
/// them (as HSDS does when it has no summary) and clients fetch objects one
/// by one.
const MAX_DOMAIN_OBJS: usize = 10_000;

/// Every object of a domain with its links and attributes, for
/// `GET /?getobjs=1`: what lets h5pyd open a domain in one round trip.
pub(crate) fn domain_objs(store: &dyn Store, domain: &str, root: &str) -> Result<Option<Value>> {
    let prefix = ids::domain_db_prefix(root)?;
    let keys: Vec<String> = store
        .list_prefix(&prefix)?
        .into_iter()
        .filter(|k| {
            k.ends_with("/.group.json")
                || k.ends_with("/.dataset.json")
                || k.ends_with("/.datatype.json")
        })
        .collect();
    if keys.len() > MAX_DOMAIN_OBJS {
        return Ok(None);
    }
    let mut objs = Map::new();
    for k in keys {
        let Some(bytes) = store.get(&k)? else {
            continue;
        };
        h5lake_engine::memory::hold(&k, h5lake_engine::memory::json_cost(&bytes))?;
        let doc = parse_doc(&bytes, &k)?;
        if let Some(id) = doc.get("id").and_then(Value::as_str) {
            let mut o = object_json(&doc, domain, true, true);
            if let Some(m) = o.as_object_mut() {
                m.remove("hrefs");
            }
            objs.insert(id.to_string(), o);
        }
    }
    Ok(Some(Value::Object(objs)))
}

/// Object and chunk counts for `GET /?verbose=1` (what `hsinfo` shows),
/// with sizes from the store's listing (no object is read).
pub(crate) fn add_counts(store: &dyn Store, root: &str, out: &mut Value) -> Result<()> {
    let prefix = ids::domain_db_prefix(root)?;
    let keys = store.list_sizes(&prefix)?;
    let (mut groups, mut datasets, mut datatypes, mut chunks) = (0u64, 0u64, 0u64, 0u64);
    let (mut meta_bytes, mut chunk_bytes) = (0u64, 0u64);
    for (k, n) in &keys {
        if k.ends_with("/.group.json") {
            groups += 1;
        } else if k.ends_with("/.dataset.json") {
            datasets += 1;
        } else if k.ends_with("/.datatype.json") {
            datatypes += 1;
        }
        // (Statistics records are metadata, not chunks.)
        if k.ends_with(".json") || h5lake_engine::stats::is_own_metadata_key(k) {
            meta_bytes += n;
        } else {
            chunks += 1;
            chunk_bytes += n;
        }
    }
    out["num_groups"] = json!(groups);
    out["num_datasets"] = json!(datasets);
    out["num_datatypes"] = json!(datatypes);
    out["num_objects"] = json!(groups + datasets + datatypes);
    out["num_chunks"] = json!(chunks);
    out["allocated_bytes"] = json!(chunk_bytes);
    out["metadata_bytes"] = json!(meta_bytes);
    out["total_size"] = json!(chunk_bytes + meta_bytes);
    out["num_linked_chunks"] = json!(0);
    out["linked_bytes"] = json!(0);
    Ok(())
}

pub(crate) fn parent_of(domain: &str) -> &str {
    match domain.rfind('/') {
        Some(0) | None => "/",
        Some(i) => &domain[..i],
    }
}

pub(crate) fn owner_acl() -> Value {
    json!({"create": true, "read": true, "update": true, "delete": true, "readACL": true, "updateACL": true})
}

pub(crate) async fn put_domain(State(app): AppState, ctx: Ctx, body: Body) -> Result<Response> {
    let body = json_body(&app, &ctx, body, Gate::NewDomain)
        .await?
        .unwrap_or(json!({}));
    if !body.is_object() {
        return Err(ServerError::BadRequest(
            "the body must be a JSON object".into(),
        ));
    }
    let made = ctx.domain();
    let app2 = app.clone();
    let rsp = blocking(move || {
        let domain = ctx.domain()?;
        if domain == "/" {
            return Err(ServerError::BadRequest("cannot create the top level".into()));
        }
        let admin = &app.cfg.admin_user;
        let truthy = |k: &str| ctx.flag(k) || body.get(k).is_some_and(|v| v.as_bool() == Some(true) || v.as_i64().is_some_and(|n| n != 0));
        if truthy("flush") || truthy("rescan") {
            // Every write is durable when it returns: a flush only checks
            // that the caller could have written.
            let doc = domain_doc(&app, &domain)?;
            acl_check(&doc, Action::Update, &ctx.user, admin)?;
            if ctx.flag("getdnids") {
                return ok(json!({"dn_ids": [DN_ID]}));
            }
            return Ok(StatusCode::NO_CONTENT.into_response());
        }
        let owner = match body.get("owner") {
            None => ctx.user.clone(),
            Some(Value::String(o)) if *o == ctx.user || ctx.user == *admin => o.clone(),
            Some(Value::String(_)) => {
                return Err(ServerError::Forbidden("only the admin may create domains for others".into()))
            }
            Some(_) => return Err(ServerError::BadRequest("owner must be a string".into())),
        };
        if ctx.user == auth::DEFAULT_USER {
            return Err(ServerError::Unauthorized("anonymous users cannot create domains".into()));
        }
        let parent = parent_of(&domain);
        let parent_doc = if parent == "/" {
            if ctx.user != *admin {
                return Err(ServerError::Forbidden(
                    "creation of top-level domains is only supported by admin users".into(),
                ));
            }
            None
        } else {
            let p = domain_doc(&app, parent).map_err(|e| match e {
                ServerError::NotFound(_) => ServerError::NotFound(format!("parent folder {parent} not found")),
                e => e,
            })?;
            if p.get("root").is_some() {
                return Err(ServerError::BadRequest("Parent domain must be a folder".into()));
            }
            acl_check(&p, Action::Create, &ctx.user, admin)?;
            Some(p)
        };
        // Users with rights on the parent folder keep them on what is made in it.
        let mut acls = Map::new();
        if let Some(pacls) = parent_doc.as_ref().and_then(|p| p.get("acls")).and_then(Value::as_object) {
            for (u, acl) in pacls {
                let any = acl.as_object().is_some_and(|a| a.values().any(|v| v.as_bool() == Some(true)));
                if u != auth::DEFAULT_USER && *u != owner && u != admin && any {
                    acls.insert(u.clone(), acl.clone());
                }
            }
        }
        acls.insert(owner.clone(), owner_acl());
        let folder = truthy("folder");
        let place = app.places.place(&domain)?;
        refuse_served_file(&place, &domain)?;
        let key = domain_key(&format!("/{}", place.path));
        if folder {
            acls.insert(
                auth::DEFAULT_USER.into(),
                json!({"create": false, "read": true, "update": false, "delete": false, "readACL": false, "updateACL": false}),
            );
            let t = h5lake_engine::domain::now();
            let doc = json!({"owner": owner, "acls": acls, "created": t, "lastModified": t});
            return match place.store.put_if_absent(&key, doc.to_string().as_bytes())? {
                PutOutcome::Written(_) => created(created_response(&ctx, &domain, &doc)),
                PutOutcome::Conflict => Err(ServerError::Conflict(format!("domain {domain} already exists"))),
            };
        }
        if let Some(target) = body.get("linked_domain") {
            return link_domain(&app, &ctx, &domain, target, owner, acls);
        }
        let root_id = match body.get("root_id") {
            None => None,
            Some(Value::String(r)) if ids::is_root_id(r) => Some(r.clone()),
            Some(r) => return Err(ServerError::BadRequest(format!("invalid client provided root id: {r}"))),
        };
        let root_props = body
            .pointer("/group/creationProperties")
            .cloned()
            .unwrap_or(json!({}));
        let chosen_root = root_id.clone();
        let opts = DomainOptions {
            root_creation_props: root_props,
            chunk_cache_bytes: 0,
            root_id,
            owner: Some(owner.clone()),
            link_policy: Some(app.link_policy.clone()),
            link_base: app.link_base.clone(),
            ..Default::default()
        };
        let dom = Domain::open_with(
            place.store.clone(),
            &place.path,
            OpenMode::CreateExclusive,
            domain.clone(),
            &opts,
        )
        .map_err(|e| match e {
            h5lake_engine::EngineError::StoreExists(_) => {
                ServerError::Conflict(format!("domain {domain} already exists"))
            }
            // The domain is new; what exists is the root group the client
            // chose an id for, which belongs to some other domain.
            h5lake_engine::EngineError::AlreadyExists(_) => ServerError::Conflict(format!(
                "root id {} is already in use; choose another (or none)",
                chosen_root.as_deref().unwrap_or("")
            )),
            e => e.into(),
        })?;
        let doc = update_domain_doc(&app, &domain, |doc| {
            doc["acls"] = Value::Object(acls.clone());
            Ok(())
        })?;
        let _ = dom;
        created(created_response(&ctx, &domain, &doc))
    })
    .await?;
    // A domain made again is no longer the one deleted: what is missing
    // from it now was never there (404, not 410).
    if let (StatusCode::CREATED, Ok(domain)) = (rsp.status(), made) {
        app2.gone.forget(crate::gone::Deleted::Domain(&domain));
    }
    Ok(rsp)
}

/// `PUT /` with `linked_domain`: a new domain whose root is that of an
/// existing domain, so both name the same objects (HSDS's linked domains).
/// Its owner can change and delete those objects, and give others access
/// to them, through it, so the caller must hold every right on the target
/// (HSDS asks for the delete right). Deleting it later leaves the objects
/// to the target.
fn link_domain(
    app: &App,
    ctx: &Ctx,
    domain: &str,
    target: &Value,
    owner: String,
    acls: Map<String, Value>,
) -> Result<Response> {
    let target = target
        .as_str()
        .ok_or_else(|| ServerError::BadRequest("linked_domain must be a domain path".into()))?;
    let target = crate::request::domain_path(target)?;
    let tdoc = domain_doc(app, &target)?;
    // (And its ACL rights: the link's owner could otherwise give others
    // access to the target that the caller may not give.)
    for action in [
        Action::Read,
        Action::Update,
        Action::Delete,
        Action::ReadAcl,
        Action::UpdateAcl,
    ] {
        acl_check(&tdoc, action, &ctx.user, &app.cfg.admin_user)?;
    }
    let root = tdoc
        .get("root")
        .cloned()
        .ok_or_else(|| ServerError::BadRequest(format!("{target} is a folder, not a domain")))?;
    // Objects are found through the store their domain lives in.
    let (here, there) = (app.places.place(domain)?, app.places.place(&target)?);
    if !Arc::ptr_eq(&here.store, &there.store) {
        return Err(ServerError::BadRequest(format!(
            "{target} is in another store than {domain}: a linked domain must share its store"
        )));
    }
    refuse_served_file(&here, domain)?;
    let t = h5lake_engine::domain::now();
    let mut doc = tdoc.clone();
    doc["owner"] = json!(owner);
    doc["acls"] = Value::Object(acls);
    doc["created"] = json!(t);
    doc["lastModified"] = json!(t);
    doc["root"] = root;
    // (A key HSDS ignores: deleting this domain keeps the objects.)
    doc["h5lake_linked_to"] = json!(target);
    let key = domain_key(&format!("/{}", here.path));
    match here.store.put_if_absent(&key, doc.to_string().as_bytes())? {
        PutOutcome::Written(_) => created(created_response(ctx, domain, &doc)),
        PutOutcome::Conflict => Err(ServerError::Conflict(format!(
            "domain {domain} already exists"
        ))),
    }
}

/// An HDF5 file served in place is read-only for everyone, the admin too:
/// its domain cannot be deleted, re-permissioned or have domains made in it.
fn refuse_served_file(place: &crate::place::Place, domain: &str) -> Result<()> {
    match &place.linked_file {
        Some(file) => Err(ServerError::Forbidden(format!(
            "{domain}: the HDF5 file {} is served read-only",
            file.display()
        ))),
        None => Ok(()),
    }
}

/// Read-modify-write of a domain document with a conditional put, so that
/// concurrent ACL changes from several servers are never lost.
pub(crate) fn update_domain_doc(
    app: &App,
    domain: &str,
    mut f: impl FnMut(&mut Value) -> Result<()>,
) -> Result<Value> {
    let place = app.places.place(domain)?;
    refuse_served_file(&place, domain)?;
    let key = domain_key(&format!("/{}", place.path));
    loop {
        let cur = place
            .store
            .get_versioned(&key)?
            .ok_or_else(|| ServerError::NotFound(format!("domain {domain} not found")))?;
        let mut doc = parse_doc(&cur.data, &key)?;
        f(&mut doc)?;
        doc["lastModified"] = json!(h5lake_engine::domain::now());
        if let PutOutcome::Written(_) =
            place
                .store
                .put_if_version(&key, doc.to_string().as_bytes(), &cur.version)?
        {
            return Ok(doc);
        }
    }
}

pub(crate) async fn delete_domain(State(app): AppState, ctx: Ctx, body: Body) -> Result<Response> {
    let body = json_body(&app, &ctx, body, Gate::On(Action::Delete))
        .await?
        .unwrap_or(json!({}));
    blocking(move || {
        // `keep_root`: the objects stay, for a domain linked to the same root.
        let keep_root = ctx.flag("keep_root")
            || body
                .get("keep_root")
                .is_some_and(|v| v.as_bool() == Some(true) || v.as_i64().is_some_and(|n| n != 0));
        let domain = ctx.domain()?;
        if domain == "/" {
            return Err(ServerError::Forbidden(
                "the top level cannot be deleted".into(),
            ));
        }
        let doc = domain_doc(&app, &domain)?;
        acl_check(&doc, Action::Delete, &ctx.user, &app.cfg.admin_user)?;
        let place = app.places.place(&domain)?;
        refuse_served_file(&place, &domain)?;
        let key = domain_key(&format!("/{}", place.path));
        match doc.get("root").and_then(Value::as_str) {
            Some(root) => {
                // The document goes first: from then on the domain is gone
                // for everyone, whatever happens to the objects.
                place.store.delete(&key)?;
                // (A linked domain's objects are its target's.)
                let linked = doc.get("h5lake_linked_to").is_some();
                if !keep_root && !linked {
                    place.store.delete_prefix(&ids::domain_db_prefix(root)?)?;
                }
            }
            None => {
                if !list_children(&app, &domain)?.is_empty() {
                    return Err(ServerError::Conflict(format!(
                        "folder {domain} is not empty"
                    )));
                }
                place.store.delete(&key)?;
            }
        }
        app.gone.note(crate::gone::Deleted::Domain(&domain));
        ok(json!({"domain": domain}))
    })
    .await
}

/// The domains and folders directly inside a folder, sorted by name
/// (stores inside the root are domains there too; see [`crate::place`]).
pub(crate) fn list_children(app: &App, folder: &str) -> Result<Vec<(String, Value)>> {
    let place = app.places.place(folder)?;
    let prefix = match place.path.as_str() {
        "" => String::new(),
        p => format!("{p}/"),
    };
    let (_, dirs) = place.store.list_dir(&prefix)?;
    let mut out = Vec::new();
    let top = folder.trim_end_matches('/');
    if top.is_empty() {
        if let Some(name) = app.places.top_name() {
            if let Some(bytes) = place.store.get(".domain.json")? {
                if let Ok(doc) = h5lake_engine::json::parse_doc(&bytes, "") {
                    out.push((format!("/{name}"), doc));
                }
            }
        }
    }
    for dir in dirs {
        if prefix.is_empty() && dir == "db/" {
            continue;
        }
        let key = format!("{dir}.domain.json");
        if let Some(bytes) = place.store.get(&key)? {
            if let Ok(doc) = h5lake_engine::json::parse_doc(&bytes, "") {
                let name = dir[prefix.len()..].trim_end_matches('/');
                out.push((format!("{top}/{name}"), doc));
            }
        }
    }
    out.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(out)
}

pub(crate) async fn get_domains(State(app): AppState, ctx: Ctx) -> Result<Response> {
    blocking(move || {
        // The folder as any request names its domain (HSDS takes the
        // header too); the top without one.
        let named = ["domain", "host"].iter().any(|k| ctx.param(k).is_some())
            || ctx.headers.contains_key("x-hdf-domain");
        let folder = if named {
            ctx.domain()?
        } else {
            "/".to_string()
        };
        let query = ctx.param("query").map(str::to_string);
        if let Some(q) = &query {
            crate::domain_query::check_syntax(q)?;
            crate::budget::gate_documents(&app, &ctx);
        }
        if let Some(p) = ctx.param("pattern") {
            check_glob(p)?;
        }
        if folder != "/" {
            let doc = domain_doc(&app, &folder)?;
            // (Allowed first: what kind of entry it is is for its readers.)
            acl_check(&doc, Action::Read, &ctx.user, &app.cfg.admin_user)?;
            if doc.get("root").is_some() {
                return Err(ServerError::BadRequest(format!(
                    "{folder} is a domain, not a folder"
                )));
            }
        }
        let limit = ctx.limit()?.unwrap_or(usize::MAX);
        let marker = ctx.param("Marker").map(str::to_string);
        let pattern = ctx.param("pattern").map(str::to_string);
        let mut items = Vec::new();
        for (name, doc) in list_children(&app, &folder)? {
            if marker.as_ref().is_some_and(|m| name.as_str() <= m.as_str()) {
                continue;
            }
            let base = name.rsplit('/').next().unwrap_or("");
            if pattern.as_ref().is_some_and(|p| !glob_match(p, base)) {
                continue;
            }
            let readable = acl_check(&doc, Action::Read, &ctx.user, &app.cfg.admin_user).is_ok();
            // A query looks inside a domain: only one the caller may read
            // can match (else its answers would tell attribute values).
            if let Some(q) = &query {
                if !readable || !root_attributes_match(&app, &ctx.user, &name, &doc, q)? {
                    continue;
                }
            }
            if items.len() >= limit {
                break;
            }
            // Reading the folder shows what is in it and whose each entry
            // is (as HSDS lists it: hsls reads every entry's owner); what
            // it holds (root, sizes) only to those who may read it.
            if !readable {
                let class = if doc.get("root").is_some() {
                    "domain"
                } else {
                    "folder"
                };
                let mut item = json!({"name": name, "class": class});
                for k in ["owner", "created", "lastModified"] {
                    item[k] = doc.get(k).cloned().unwrap_or(Value::Null);
                }
                items.push(item);
                continue;
            }
            let mut item = domain_response(&name, &doc);
            if let Some(obj) = item.as_object_mut() {
                for k in ["hrefs", "limits", "compressors", "version"] {
                    obj.remove(k);
                }
            }
            if ctx.flag("verbose") {
                if let Some(root) = doc.get("root").and_then(Value::as_str) {
                    add_counts(&*app.places.place(&name)?.store, root, &mut item)?;
                }
            }
            items.push(item);
        }
        ok(json!({"domains": items, "hrefs": []}))
    })
    .await
}

/// Whether domain `name` (document `doc`) has a root group whose
/// attributes satisfy query `q`. A domain whose root cannot be read (gone
/// meanwhile, damaged) does not match: it is not the query's fault.
///
/// # Errors
/// A query that does not parse (400).
fn root_attributes_match(app: &App, user: &str, name: &str, doc: &Value, q: &str) -> Result<bool> {
    let Some(root) = doc.get("root").and_then(Value::as_str) else {
        return Ok(false);
    };
    let root_doc = match open_domain_named(app, user, name.to_string(), Action::Read)
        .and_then(|dom| dom.get_doc(root).map_err(ServerError::from))
    {
        Ok(doc) => doc,
        Err(e) => {
            // (Gone meanwhile is no news; anything else is the operator's.)
            if e.status() != axum::http::StatusCode::NOT_FOUND {
                eprintln!("h5lake serve: domain query: {name} left out: {e}");
            }
            return Ok(false);
        }
    };
    match root_doc.get("attributes").and_then(Value::as_object) {
        Some(attrs) => crate::domain_query::matches(q, attrs),
        None => Ok(false),
    }
}

/// A pattern whose brackets close (`[a-z]`, `[!0-9]`).
fn check_glob(p: &str) -> Result<()> {
    // (The matcher takes a `[` no `]` closes as itself; a pattern is
    // refused for one instead, as HSDS refuses it.)
    if glob_tokens(p).contains(&Glob::Char('[')) {
        return Err(ServerError::BadRequest(format!(
            "invalid pattern {p:?}: a [ is not closed"
        )));
    }
    Ok(())
}

/// Whether `c` is in the set of a bracket expression (`a-z0`, no
/// brackets; a leading `!` or `^` negates).
fn in_set(set: &[char], c: char) -> bool {
    let (negate, set) = match set.first() {
        Some('!' | '^') => (true, &set[1..]),
        _ => (false, set),
    };
    let mut i = 0;
    let mut found = false;
    while i < set.len() {
        if i + 2 < set.len() && set[i + 1] == '-' {
            found |= (set[i]..=set[i + 2]).contains(&c);
            i += 3;
        } else {
            found |= set[i] == c;
            i += 1;
        }
    }
    found != negate
}

/// Shell wildcards, as `hsls` patterns use them: `*`, `?` and bracket
/// sets (`[a-c]`, `[!0-9]`).
pub(crate) fn glob_match(p: &str, s: &str) -> bool {
    let tokens = glob_tokens(p);
    let s: Vec<char> = s.chars().collect();
    let one = |t: &Glob, c: char| match t {
        Glob::Any => true,
        Glob::Char(x) => *x == c,
        Glob::Set(set) => in_set(set, c),
        Glob::Star => false,
    };
    let (mut ti, mut si, mut star, mut mark) = (0, 0, None, 0);
    while si < s.len() {
        if ti < tokens.len() && tokens[ti] != Glob::Star && one(&tokens[ti], s[si]) {
            ti += 1;
            si += 1;
        } else if ti < tokens.len() && tokens[ti] == Glob::Star {
            star = Some(ti);
            mark = si;
            ti += 1;
        } else if let Some(st) = star {
            ti = st + 1;
            mark += 1;
            si = mark;
        } else {
            return false;
        }
    }
    tokens[ti..].iter().all(|t| *t == Glob::Star)
}

#[derive(PartialEq)]
enum Glob {
    Star,
    Any,
    Char(char),
    Set(Vec<char>),
}

/// A pattern's parts; a `[` that no `]` closes stands for itself.
fn glob_tokens(p: &str) -> Vec<Glob> {
    let p: Vec<char> = p.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < p.len() {
        match p[i] {
            '*' => out.push(Glob::Star),
            '?' => out.push(Glob::Any),
            '[' => {
                // (A `]` first in the set, after any negation, is a member.)
                let first = i + 1 + usize::from(matches!(p.get(i + 1), Some('!' | '^')));
                match p.iter().skip(first + 1).position(|&c| c == ']') {
                    Some(k) => {
                        let close = first + 1 + k;
                        out.push(Glob::Set(p[i + 1..close].to_vec()));
                        i = close;
                    }
                    None => out.push(Glob::Char('[')),
                }
            }
            c => out.push(Glob::Char(c)),
        }
        i += 1;
    }
    out
}

// ---- ACLs ------------------------------------------------------------------

pub(crate) fn acl_item(user: &str, acl: &Value) -> Value {
    let mut item = json!({"userName": user});
    for a in Action::ALL {
        item[a.key()] = json!(acl.get(a.key()).and_then(Value::as_bool).unwrap_or(false));
    }
    item
}

pub(crate) async fn get_acls(State(app): AppState, ctx: Ctx) -> Result<Response> {
    blocking(move || {
        let domain = ctx.domain()?;
        let doc = domain_doc(&app, &domain)?;
        acl_check(&doc, Action::ReadAcl, &ctx.user, &app.cfg.admin_user)?;
        let acls: Vec<Value> = doc
            .get("acls")
            .and_then(Value::as_object)
            .map(|m| m.iter().map(|(u, a)| acl_item(u, a)).collect())
            .unwrap_or_default();
        ok(json!({"acls": acls, "hrefs": []}))
    })
    .await
}

pub(crate) async fn get_acl(
    State(app): AppState,
    ctx: Ctx,
    Path(user): Path<String>,
) -> Result<Response> {
    blocking(move || {
        let domain = ctx.domain()?;
        let doc = domain_doc(&app, &domain)?;
        // Anyone may see their own entry; other entries need readACL.
        if user != ctx.user {
            acl_check(&doc, Action::ReadAcl, &ctx.user, &app.cfg.admin_user)?;
        }
        let acl = doc
            .pointer(&format!(
                "/acls/{}",
                user.replace('~', "~0").replace('/', "~1")
            ))
            .ok_or_else(|| ServerError::NotFound(format!("no ACL for user {user}")))?;
        let mut item = acl_item(&user, acl);
        if let Some(d) = acl.get("domain") {
            item["domain"] = d.clone();
        }
        ok(json!({"acl": item, "hrefs": []}))
    })
    .await
}

pub(crate) async fn put_acl(
    State(app): AppState,
    ctx: Ctx,
    Path(user): Path<String>,
    body: Body,
) -> Result<Response> {
    let body = json_body(&app, &ctx, body, Gate::On(Action::UpdateAcl)).await?;
    let Some(Value::Object(perms)) = body else {
        return Err(ServerError::BadRequest(
            "the body must be an object of ACL flags".into(),
        ));
    };
    let mut acl = Map::new();
    for (k, v) in &perms {
        if k == "userName" {
            continue;
        }
        if !Action::ALL.iter().any(|a| a.key() == k) {
            return Err(ServerError::BadRequest(format!("unknown ACL key {k:?}")));
        }
        let b = v
            .as_bool()
            .or_else(|| v.as_i64().map(|n| n != 0))
            .ok_or_else(|| {
                ServerError::BadRequest(format!("ACL flag {k} must be true or false"))
            })?;
        acl.insert(k.clone(), json!(b));
    }
    if user.is_empty() || user.contains(|c: char| c.is_control()) {
        return Err(ServerError::BadRequest("invalid user name".into()));
    }
    blocking(move || {
        let domain = ctx.domain()?;
        let doc = domain_doc(&app, &domain)?;
        acl_check(&doc, Action::UpdateAcl, &ctx.user, &app.cfg.admin_user)?;
        update_domain_doc(&app, &domain, |doc| {
            if !doc.get("acls").is_some_and(Value::is_object) {
                doc["acls"] = json!({});
            }
            let entry = doc["acls"]
                .as_object_mut()
                .expect("acls is an object")
                .entry(user.clone())
                .or_insert_with(|| json!({}));
            if !entry.is_object() {
                *entry = json!({});
            }
            for a in Action::ALL {
                let cur = entry.get(a.key()).and_then(Value::as_bool).unwrap_or(false);
                let new = acl.get(a.key()).and_then(Value::as_bool).unwrap_or(cur);
                entry[a.key()] = json!(new);
            }
            // (HSDS marks an entry set through /acls with its domain, and
            // shows the mark when the entry is read.)
            entry["domain"] = json!(domain);
            Ok(())
        })?;
        created(json!({}))
    })
    .await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globs() {
        assert!(glob_match("*.h5", "a.h5"));
        assert!(glob_match("a?c", "abc"));
        assert!(!glob_match("*.h5", "a.h6"));
        assert!(glob_match("*", ""));
    }
}
