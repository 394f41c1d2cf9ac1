//! The HSDS endpoints and what every handler shares: the request context
//! (user, parameters, domain), body reading, and running engine calls off
//! the async threads. The handlers are in [`crate::domains`],
//! [`crate::objects`] and [`crate::values`].
//!
//! Status codes and JSON shapes follow what HSDS 1.0.2 answers; documents
//! are HSDS's own, so most responses are a stored document plus the counts
//! and `hrefs` HSDS adds.

use std::collections::HashMap;
use std::sync::Arc;

use axum::body::Body;
use axum::extract::{FromRequestParts, State};
use axum::http::request::Parts;
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use serde_json::Value;

use crate::auth;
use crate::error::{Result, ServerError};
use crate::request::domain_path;
use crate::values;
use crate::App;
use crate::{domains, objects};

pub(crate) type AppState = State<Arc<App>>;

pub(crate) fn router(app: Arc<App>) -> Router {
    let mut r = Router::new()
        .route("/about", get(domains::about))
        .route("/info", get(domains::about))
        .route(
            "/",
            get(domains::get_domain)
                .put(domains::put_domain)
                .delete(domains::delete_domain),
        )
        .route("/domains", get(domains::get_domains))
        .route("/acls", get(domains::get_acls))
        .route("/acls/{user}", get(domains::get_acl).put(domains::put_acl))
        .route(
            "/groups",
            get(objects::list_groups).post(objects::post_groups),
        )
        .route("/groups/", get(objects::list_groups))
        .route(
            "/groups/{id}",
            get(objects::get_object).delete(objects::delete_object),
        )
        .route(
            "/groups/{id}/links",
            get(objects::get_links)
                .put(objects::put_links)
                .post(objects::post_links)
                .delete(objects::delete_links),
        )
        .route(
            "/groups/{id}/links/{name}",
            get(objects::get_link)
                .put(objects::put_link)
                .delete(objects::delete_link),
        )
        .route(
            "/datasets",
            get(objects::list_datasets).post(objects::post_datasets),
        )
        .route("/datasets/", get(objects::list_datasets))
        .route(
            "/datasets/{id}",
            get(objects::get_object).delete(objects::delete_object),
        )
        .route(
            "/datasets/{id}/shape",
            get(objects::get_shape).put(objects::put_shape),
        )
        .route("/datasets/{id}/type", get(objects::get_type))
        .route("/datasets/{id}/stats", get(objects::get_stats))
        .route(
            "/datasets/{id}/value",
            get(values::get_value)
                .put(values::put_value)
                .post(values::post_value),
        )
        .route(
            "/datatypes",
            get(objects::list_datatypes).post(objects::post_datatypes),
        )
        .route("/datatypes/", get(objects::list_datatypes))
        .route(
            "/datatypes/{id}",
            get(objects::get_object).delete(objects::delete_object),
        );
    for coll in ["groups", "datasets", "datatypes"] {
        r = r
            .route(
                &format!("/{coll}/{{id}}/attributes"),
                get(objects::get_attrs)
                    .put(objects::put_attrs)
                    .post(objects::post_attrs)
                    .delete(objects::delete_attrs),
            )
            .route(
                &format!("/{coll}/{{id}}/attributes/{{name}}"),
                get(objects::get_attr)
                    .put(objects::put_attr)
                    .delete(objects::delete_attr),
            )
            .route(
                &format!("/{coll}/{{id}}/attributes/{{name}}/value"),
                get(values::get_attr_value).put(values::put_attr_value),
            );
    }
    r.fallback(|| async { ServerError::NotFound("no such endpoint".into()) })
        .method_not_allowed_fallback(|method: axum::http::Method| async move {
            ServerError::MethodNotAllowed(format!("{method} is not a method of this endpoint"))
        })
        .layer(axum::middleware::from_fn_with_state(
            app.clone(),
            crate::budget::hold_body_memory,
        ))
        .layer(axum::middleware::from_fn_with_state(
            app.clone(),
            crate::gone::gone_for_deleted,
        ))
        .layer(axum::extract::DefaultBodyLimit::disable())
        .layer(tower_http::catch_panic::CatchPanicLayer::custom(|_| {
            ServerError::Internal("internal error (the request panicked)".into()).into_response()
        }))
        .with_state(app)
}

// ---- request context ------------------------------------------------------

/// Who asks, with which query parameters: every handler starts from this.
pub(crate) struct Ctx {
    pub user: String,
    pub params: HashMap<String, String>,
    pub headers: HeaderMap,
    /// Set once nobody waits for the answer any more (see
    /// [`Ctx::stop_when_dropped`]): long work checks it and stops.
    pub gone: Arc<std::sync::atomic::AtomicBool>,
    /// What the request holds of the server's memory budget.
    pub memory: Arc<crate::budget::RequestMemory>,
}

/// Sets a request's [`Ctx::gone`] when dropped: held by the handler's
/// future, which is dropped when the client goes away.
pub(crate) struct StopWhenDropped(Arc<std::sync::atomic::AtomicBool>);

impl Drop for StopWhenDropped {
    fn drop(&mut self) {
        self.0.store(true, std::sync::atomic::Ordering::Relaxed);
    }
}

impl FromRequestParts<Arc<App>> for Ctx {
    type Rejection = ServerError;

    async fn from_request_parts(parts: &mut Parts, app: &Arc<App>) -> Result<Self> {
        let params = form_urlencoded_pairs(parts.uri.query().unwrap_or(""))?
            .into_iter()
            .collect::<HashMap<String, String>>();
        let user = match parts.extensions.get::<User>() {
            Some(User(u)) => u.clone(),
            None => user_of(app, parts.uri.path(), &parts.headers)?,
        };
        let memory = match parts.extensions.get::<Arc<crate::budget::RequestMemory>>() {
            Some(m) => m.clone(),
            None => crate::budget::RequestMemory::new(&user),
        };
        Ok(Ctx {
            user,
            params,
            headers: parts.headers.clone(),
            gone: Arc::default(),
            memory,
        })
    }
}

/// The authenticated user of a request, set by the middleware that
/// authenticates it before its body memory is reserved.
#[derive(Clone)]
pub(crate) struct User(pub String);

/// Who sends a request to `path`: anyone may ask `/about`.
pub(crate) fn user_of(app: &App, path: &str, headers: &HeaderMap) -> Result<String> {
    let anonymous_ok = path == "/about" || path == "/info";
    match auth::authenticate(headers, &app.users, app.cfg.allow_noauth) {
        Ok(u) => Ok(u),
        Err(_) if anonymous_ok => Ok(auth::DEFAULT_USER.to_string()),
        Err(e) => Err(e),
    }
}

/// `a=1&b=x%2Fy` → pairs, `+` as space, invalid escapes kept verbatim.
///
/// # Errors
/// A name or value that is not UTF-8 once decoded: read lossily, two
/// different domain names could reach one domain.
fn form_urlencoded_pairs(q: &str) -> Result<Vec<(String, String)>> {
    let decode = |s: &str| {
        percent_encoding::percent_decode_str(&s.replace('+', " "))
            .decode_utf8()
            .map(|c| c.into_owned())
            .map_err(|_| {
                ServerError::BadRequest(format!(
                    "query parameter {s:?} is not valid UTF-8 once decoded"
                ))
            })
    };
    q.split('&')
        .filter(|p| !p.is_empty())
        .map(|p| match p.split_once('=') {
            Some((k, v)) => Ok((decode(k)?, decode(v)?)),
            None => Ok((decode(p)?, String::new())),
        })
        .collect()
}

impl Ctx {
    /// A guard for the handler to hold while work it handed to another
    /// thread runs: dropped with the handler, it tells that work to stop.
    pub fn stop_when_dropped(&self) -> StopWhenDropped {
        StopWhenDropped(self.gone.clone())
    }

    pub fn param(&self, k: &str) -> Option<&str> {
        self.params.get(k).map(String::as_str)
    }

    /// The `Limit` parameter of listings and queries, if given.
    ///
    /// # Errors
    /// Not a non-negative integer: a bad request (HSDS refuses it too).
    pub fn limit(&self) -> Result<Option<usize>> {
        self.param("Limit")
            .map(|l| {
                l.parse::<usize>().map_err(|_| {
                    ServerError::BadRequest(format!(
                        "Limit must be a non-negative integer, not {l:?}"
                    ))
                })
            })
            .transpose()
    }

    /// HSDS's boolean parameters: present and not `0`/`false`.
    pub fn flag(&self, k: &str) -> bool {
        self.param(k)
            .is_some_and(|v| !matches!(v.to_ascii_lowercase().as_str(), "" | "0" | "false"))
    }

    /// The domain the request is about: `domain=` (or h5serv's `host=`)
    /// parameter, else the `X-Hdf-domain` header.
    pub fn domain(&self) -> Result<String> {
        let raw = self
            .param("domain")
            .or_else(|| self.param("host"))
            .map(str::to_string)
            .or_else(|| {
                self.headers
                    .get("x-hdf-domain")
                    .and_then(|v| v.to_str().ok())
                    .map(str::to_string)
            })
            .ok_or_else(|| ServerError::BadRequest("no domain given (use ?domain=/path)".into()))?;
        if let Some(b) = self.param("bucket") {
            // (The server has one root; a bucket named is at least a name.)
            let valid = (3..=63).contains(&b.len())
                && b.chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '.');
            if !valid {
                return Err(ServerError::BadRequest(format!(
                    "invalid bucket name {b:?}"
                )));
            }
        }
        domain_path(&raw)
    }

    /// Whether the client wants binary (`Accept: application/octet-stream`).
    pub fn wants_binary(&self) -> bool {
        self.headers
            .get(header::ACCEPT)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.contains("application/octet-stream"))
    }

    /// Whether the client wants an Arrow IPC stream
    /// (`Accept: application/vnd.apache.arrow.stream`).
    pub fn wants_arrow(&self) -> bool {
        self.headers
            .get(header::ACCEPT)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.contains(crate::values::ARROW_STREAM))
    }

    /// Whether the body is binary (`Content-Type: application/octet-stream`).
    pub fn sends_binary(&self) -> bool {
        self.headers
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.starts_with("application/octet-stream"))
    }
}

/// Runs blocking engine work off the async threads.
pub(crate) async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T> + Send + 'static,
) -> Result<T> {
    tokio::task::spawn_blocking(move || {
        // (A request's documents are held to its memory within: see
        // budget::gate_documents.)
        let _scope = h5lake_engine::memory::Scope::open();
        f()
    })
    .await
    .map_err(|e| ServerError::Internal(format!("request failed: {e}")))?
}

/// [`blocking`] for work that only reads: the engine calls it makes stop
/// between chunks once `gone` is set (a request's [`Ctx::gone`]: its client
/// went away, and the handler holding [`Ctx::stop_when_dropped`]'s guard
/// was dropped), rather than decode
/// every chunk for an answer nobody will receive. (Writes run to their
/// end: a write cut between chunks would leave part of it done.)
pub(crate) async fn blocking_read<T: Send + 'static>(
    gone: Arc<std::sync::atomic::AtomicBool>,
    f: impl FnOnce() -> Result<T> + Send + 'static,
) -> Result<T> {
    blocking(move || h5lake_engine::cancel::with_cancel(gone, f)).await
}

/// A whole JSON body (at most `max_request_bytes` and `max_json_elements`
/// values), `None` if empty. `gate` is checked before a byte is read.
pub(crate) async fn json_body(
    app: &Arc<App>,
    ctx: &Ctx,
    body: Body,
    gate: Gate,
) -> Result<Option<Value>> {
    if ctx.sends_binary() {
        return Err(ServerError::UnsupportedMediaType(
            "this request takes a JSON body, not application/octet-stream".into(),
        ));
    }
    let bytes = read_body(app, ctx, body, gate).await?;
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Ok(None);
    }
    // Clients send `null` for "no body" (h5pyd's PUT without one).
    match parse_json_limited(app, &bytes)? {
        Value::Null => Ok(None),
        v => Ok(Some(v)),
    }
}

/// Parses a JSON body after checking that it holds at most
/// `max_json_elements` values: parsed, each costs many times its text.
pub(crate) fn parse_json_limited(app: &App, bytes: &[u8]) -> Result<Value> {
    let n = crate::budget::count_json_values(bytes);
    if n > app.cfg.max_json_elements {
        return Err(ServerError::TooLarge(format!(
            "the JSON body holds {n} values, more than the limit of {} (--max-json-elements); \
             send big dataset values as application/octet-stream",
            app.cfg.max_json_elements
        )));
    }
    parse_json_body(bytes)
}

/// A JSON request body. Python clients (h5pyd) write non-finite floats as
/// the bare tokens `NaN` / `Infinity`, which strict JSON refuses; they are
/// read as the engine reads them in HSDS's own documents.
pub(crate) fn parse_json_body(bytes: &[u8]) -> Result<Value> {
    let v = h5lake_engine::json::parse_doc(bytes, "request body").map_err(|e| {
        // The engine speaks of its own documents; this one is the client's.
        let why = match e {
            h5lake_engine::EngineError::Corrupt(m) => m,
            e => e.to_string(),
        };
        ServerError::BadRequest(format!("Unable to load JSON body: {why}"))
    })?;
    // Parts of a body (types, creation properties, links) are kept as sent
    // a few levels down in documents, which must stay under the parser's
    // nesting limit (128) to be read again.
    if crate::request::json_depth(&v) > MAX_BODY_DEPTH {
        return Err(ServerError::BadRequest(format!(
            "Unable to load JSON body: nested more than {MAX_BODY_DEPTH} levels deep"
        )));
    }
    crate::request::check_metadata_text(&v)?;
    Ok(v)
}

/// Deepest nesting of a JSON body accepted (see [`parse_json_body`]).
const MAX_BODY_DEPTH: usize = 100;

/// A whole (non-streamed) body of at most `max_request_bytes`, read only
/// once `gate` lets the sender send it.
pub(crate) async fn read_body(
    app: &Arc<App>,
    ctx: &Ctx,
    body: Body,
    gate: Gate,
) -> Result<bytes::Bytes> {
    crate::domains::authorize(app, ctx, gate).await?;
    let declared: Option<usize> = ctx
        .headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse().ok());
    let limit = match declared {
        Some(_) => app.cfg.max_request_bytes,
        None => crate::budget::undeclared_body_bytes(&app.cfg),
    };
    if ctx.sends_binary() {
        // (A JSON body was reserved before the handler ran; a binary one
        // is reserved only where it is read whole, here.)
        let bytes = declared.unwrap_or(limit).min(limit);
        let r = ctx
            .memory
            .reserve(&app.budget, bytes, "this request's body")
            .await?;
        ctx.memory.keep(r);
    }
    limited_body(body, limit, declared).await
}

/// The right under which a request sends a body.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Gate {
    /// `action` on the request's domain.
    On(crate::auth::Action),
    /// Creating the request's domain (or flushing it, if it exists).
    NewDomain,
}

async fn limited_body(body: Body, limit: usize, declared: Option<usize>) -> Result<bytes::Bytes> {
    use futures_util::StreamExt;
    let too_large = || {
        ServerError::TooLarge(match declared {
            Some(_) => format!(
                "request body larger than {limit} bytes (send big dataset values as \
                 application/octet-stream)"
            ),
            None => format!(
                "a request body sent without Content-Length may hold at most {limit} bytes; \
                 send its Content-Length"
            ),
        })
    };
    if declared.is_some_and(|n| n > limit) {
        return Err(too_large());
    }
    // One buffer of the declared size: collecting frames and joining them
    // would hold the body twice (what the memory budget reserved once).
    let mut buf = Vec::with_capacity(declared.unwrap_or(0));
    let mut frames = body.into_data_stream();
    while let Some(frame) = frames.next().await {
        let frame = frame.map_err(|e| {
            if stalled(&e) {
                ServerError::Timeout(format!("error reading the request body: {e}"))
            } else {
                // a client that sent less than its Content-Length, or went away
                ServerError::BadRequest(format!("error reading the request body: {e}"))
            }
        })?;
        let len = buf.len() + frame.len();
        if len > limit {
            return Err(too_large());
        }
        // (Grown by doubling, but never past the limit the memory budget
        // reserved for.)
        if len > buf.capacity() {
            buf.reserve_exact(len.max(buf.capacity() * 2).min(limit) - buf.len());
        }
        buf.extend_from_slice(&frame);
    }
    Ok(bytes::Bytes::from(buf))
}

/// Whether reading a body failed because the client stopped sending it.
pub(crate) fn stalled(e: &(dyn std::error::Error + 'static)) -> bool {
    let mut cur: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(err) = cur {
        if err
            .downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::TimedOut)
        {
            return true;
        }
        cur = err.source();
    }
    false
}

/// The content type of JSON answers, as HSDS sends it.
pub(crate) const JSON_CONTENT_TYPE: &str = "application/json; charset=utf-8";

pub(crate) fn json_rsp(status: StatusCode, v: Value) -> Response {
    (
        status,
        [(header::CONTENT_TYPE, JSON_CONTENT_TYPE)],
        v.to_string(),
    )
        .into_response()
}

/// A JSON answer holding typed values at `typed` (see [`crate::nonfinite`]).
pub(crate) fn typed_rsp(
    status: StatusCode,
    v: &Value,
    typed: &[crate::nonfinite::TypedAt],
    nf: crate::nonfinite::NonFinite,
) -> Response {
    (
        status,
        [(header::CONTENT_TYPE, JSON_CONTENT_TYPE)],
        crate::nonfinite::to_text(v, typed, nf),
    )
        .into_response()
}

/// An object or attribute answer: its values and fill value written as
/// HSDS writes them, NaN and all.
pub(crate) fn ok_typed(ctx: &Ctx, v: Value) -> Result<Response> {
    let typed = crate::nonfinite::typed_in(&v);
    Ok(typed_rsp(
        StatusCode::OK,
        &v,
        &typed,
        crate::nonfinite::NonFinite::of(ctx),
    ))
}

pub(crate) fn ok(v: Value) -> Result<Response> {
    Ok(json_rsp(StatusCode::OK, v))
}

pub(crate) fn created(v: Value) -> Result<Response> {
    Ok(json_rsp(StatusCode::CREATED, v))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A handler holding the stop guard while a read runs, dropped as
    /// hyper drops it when the client goes: the engine work it started
    /// sees its cancellation flag set and ends.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_read_stops_when_its_client_goes() {
        let ctx = Ctx {
            user: "u".into(),
            params: HashMap::new(),
            headers: HeaderMap::new(),
            gone: Arc::default(),
            memory: crate::budget::RequestMemory::new("u"),
        };
        let (tx, rx) = std::sync::mpsc::channel();
        let handler = tokio::spawn(async move {
            let _stop = ctx.stop_when_dropped();
            blocking_read(ctx.gone.clone(), move || {
                // engine work, checking as chunk tasks check
                let flag = h5lake_engine::cancel::current();
                let started = std::time::Instant::now();
                while !h5lake_engine::cancel::is_set(&flag) {
                    if started.elapsed() > std::time::Duration::from_secs(30) {
                        tx.send("ran on").unwrap();
                        return Ok(());
                    }
                    std::thread::sleep(std::time::Duration::from_millis(1));
                }
                tx.send("stopped").unwrap();
                Ok(())
            })
            .await
        });
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        handler.abort();
        let ended = tokio::task::spawn_blocking(move || {
            rx.recv_timeout(std::time::Duration::from_secs(10))
        })
        .await
        .unwrap();
        assert_eq!(ended, Ok("stopped"));
    }

    #[tokio::test]
    async fn body_limits() {
        assert_eq!(
            limited_body(Body::from("12345"), 5, Some(5)).await.unwrap(),
            "12345"
        );
        assert_eq!(
            limited_body(Body::from("12345"), 5, None).await.unwrap(),
            "12345"
        );
        let e = limited_body(Body::from("123456"), 5, None)
            .await
            .unwrap_err();
        assert_eq!(e.status(), StatusCode::PAYLOAD_TOO_LARGE);
        let e = limited_body(Body::from("1"), 5, Some(6)).await.unwrap_err();
        assert_eq!(e.status(), StatusCode::PAYLOAD_TOO_LARGE);
        let failing = futures_util::stream::iter(vec![
            Ok(bytes::Bytes::from("ab")),
            Err(std::io::Error::other("connection reset")),
        ]);
        let e = limited_body(Body::from_stream(failing), 5, None)
            .await
            .unwrap_err();
        assert_eq!(e.status(), StatusCode::BAD_REQUEST);
    }

    #[test]
    fn query_strings() {
        let q = form_urlencoded_pairs("domain=%2Fhome%2Fu%2Ff.h5&select=[0:4]&flag&a=b+c").unwrap();
        assert_eq!(q[0], ("domain".into(), "/home/u/f.h5".into()));
        assert_eq!(q[1], ("select".into(), "[0:4]".into()));
        assert_eq!(q[2], ("flag".into(), String::new()));
        assert_eq!(q[3], ("a".into(), "b c".into()));
        assert!(form_urlencoded_pairs("domain=%2Fhome%2F%FF").is_err());
        assert!(form_urlencoded_pairs("domain=%2Fhome%2F%C3%A9").is_ok());
    }
}
