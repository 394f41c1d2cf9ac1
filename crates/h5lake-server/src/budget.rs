//! The server's memory budget: every request reserves the memory it will
//! hold (its body, the parsed JSON, the answer it builds, the slabs it
//! streams) before it holds it. A request that must wait for others to
//! finish waits; one that could never fit is refused with 413, naming the
//! limit. Nothing a client sends can make the server hold more than the
//! budget at once, however many requests it sends.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::header;
use axum::middleware::Next;
use axum::response::Response;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use crate::error::{Result, ServerError};
use crate::App;

/// Permits are counted in units of this many bytes (a semaphore counts in
/// `u32`s, and a byte-exact count is not needed).
const UNIT: usize = 1024;

/// Longest a request waits for memory held by others before it is told to
/// come back later (503): long enough for big transfers in flight to end.
const WAIT: Duration = Duration::from_secs(60);

pub(crate) use h5lake_engine::memory::{count_json_values, JSON_VALUE_BYTES};

pub(crate) struct Budget {
    permits: Arc<Semaphore>,
    bytes: usize,
    /// Permits in all (`bytes` in units, rounded down).
    units_total: usize,
    /// Bytes each user's requests hold or wait for.
    users: Arc<Mutex<HashMap<String, usize>>>,
}

/// Memory reserved for a request; given back when dropped.
#[must_use = "the memory is given back when the reservation is dropped"]
pub(crate) struct Reservation {
    _permit: Option<OwnedSemaphorePermit>,
    _share: Option<UserShare>,
    bytes: usize,
    /// The request whose count of what it holds this is part of.
    counted_in: Option<Arc<RequestMemory>>,
}

impl Reservation {
    pub(crate) fn nothing() -> Self {
        Reservation {
            _permit: None,
            _share: None,
            bytes: 0,
            counted_in: None,
        }
    }

    fn of(permit: OwnedSemaphorePermit, bytes: usize) -> Self {
        Reservation {
            _permit: Some(permit),
            _share: None,
            bytes,
            counted_in: None,
        }
    }

    /// The bytes reserved.
    pub(crate) fn bytes(&self) -> usize {
        self.bytes
    }

    /// This reservation, counted in what `request` holds until dropped.
    fn counted(mut self, request: &Arc<RequestMemory>) -> Self {
        request
            .held
            .fetch_add(in_units(self.bytes), Ordering::Relaxed);
        self.counted_in = Some(request.clone());
        self
    }
}

impl Drop for Reservation {
    fn drop(&mut self) {
        if let Some(r) = &self.counted_in {
            r.held.fetch_sub(in_units(self.bytes), Ordering::Relaxed);
        }
    }
}

/// A user's part of the memory held; given back when dropped.
struct UserShare {
    users: Arc<Mutex<HashMap<String, usize>>>,
    user: String,
    bytes: usize,
}

impl Drop for UserShare {
    fn drop(&mut self) {
        let mut b = self.users.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(held) = b.get_mut(&self.user) {
            *held = held.saturating_sub(self.bytes);
            if *held == 0 {
                b.remove(&self.user);
            }
        }
    }
}

/// What one request holds of the budget: its body, the chunks its plan
/// works on, the parts of its answer. What it reserves next is checked
/// against it, so that a request that could never hold all of it at once
/// is refused at once (413) instead of waiting for memory it holds itself
/// until it times out; and the user's other requests are told apart from
/// this one's own (see [`Budget::share`]).
pub(crate) struct RequestMemory {
    user: String,
    held: AtomicUsize,
    /// Reservations that last as long as the request (its body's).
    kept: Mutex<Vec<Reservation>>,
    /// The documents whose memory it holds (see [`gate_documents`]).
    documents: Mutex<std::collections::HashSet<String>>,
}

impl RequestMemory {
    pub(crate) fn new(user: &str) -> Arc<Self> {
        Arc::new(RequestMemory {
            user: user.to_string(),
            held: AtomicUsize::new(0),
            kept: Mutex::default(),
            documents: Mutex::default(),
        })
    }

    /// Bytes the request holds now (in whole units of the budget).
    pub(crate) fn held(&self) -> usize {
        self.held.load(Ordering::Relaxed)
    }

    /// Keeps `r` for as long as the request lives, counted in what it holds.
    pub(crate) fn keep(&self, mut r: Reservation) {
        // (Kept here, a reservation must not hold the request itself.)
        if r.counted_in.take().is_none() {
            self.held.fetch_add(in_units(r.bytes()), Ordering::Relaxed);
        }
        self.kept.lock().unwrap_or_else(|e| e.into_inner()).push(r);
    }

    /// Reserves `bytes` more for this request (see [`Budget::reserve`]):
    /// refused at once when the request could not hold them with what it
    /// holds, or when its user's other requests hold their share.
    ///
    /// # Errors
    /// 413 past the whole budget; 503 past the user's share or after
    /// waiting too long.
    pub(crate) async fn reserve(
        self: &Arc<Self>,
        budget: &Budget,
        bytes: usize,
        what: &str,
    ) -> Result<Reservation> {
        let share = self.admit(budget, bytes, what, true)?;
        Ok(self.hold(budget.reserve(bytes, what).await?, share))
    }

    /// [`RequestMemory::reserve`] from synchronous code.
    ///
    /// # Errors
    /// As [`RequestMemory::reserve`].
    pub(crate) fn reserve_blocking(
        self: &Arc<Self>,
        budget: &Budget,
        bytes: usize,
        what: &str,
    ) -> Result<Reservation> {
        self.reserve_blocking_as(budget, bytes, what, true)
    }

    /// [`RequestMemory::reserve_blocking`]; `shared`: held to the user's
    /// share (not for an answer already under way, which would be cut
    /// short: it waits instead).
    pub(crate) fn reserve_blocking_as(
        self: &Arc<Self>,
        budget: &Budget,
        bytes: usize,
        what: &str,
        shared: bool,
    ) -> Result<Reservation> {
        let share = self.admit(budget, bytes, what, shared)?;
        Ok(self.hold(budget.reserve_blocking(bytes, what)?, share))
    }

    /// [`RequestMemory::reserve`] only if the budget has `bytes` free now.
    ///
    /// # Errors
    /// As [`RequestMemory::reserve`], but for the wait.
    pub(crate) fn try_reserve(
        self: &Arc<Self>,
        budget: &Budget,
        bytes: usize,
        what: &str,
        shared: bool,
    ) -> Result<Option<Reservation>> {
        let share = self.admit(budget, bytes, what, shared)?;
        Ok(budget
            .try_reserve(bytes, what)?
            .map(|r| self.hold(r, share)))
    }

    /// `r`, with the user's share it took, counted in what this request holds.
    fn hold(self: &Arc<Self>, mut r: Reservation, share: Option<UserShare>) -> Reservation {
        r._share = share;
        r.counted(self)
    }

    fn admit(
        &self,
        budget: &Budget,
        bytes: usize,
        what: &str,
        shared: bool,
    ) -> Result<Option<UserShare>> {
        budget.refuse_beyond(self.held(), bytes, what)?;
        // (Without credentials every client is the same user: unrelated
        // clients must not share one half of the budget.)
        if bytes == 0 || !shared || self.user == crate::auth::DEFAULT_USER {
            return Ok(None);
        }
        budget.share(&self.user, bytes, self.held()).map(Some)
    }
}

impl Budget {
    pub fn new(bytes: usize) -> Self {
        let units = (bytes / UNIT).clamp(1, Semaphore::MAX_PERMITS.min(u32::MAX as usize));
        Budget {
            permits: Arc::new(Semaphore::new(units)),
            bytes,
            units_total: units,
            users: Arc::default(),
        }
    }

    /// [`Budget::reserve`] for the body of a request of `user`.
    ///
    /// # Errors
    /// As [`Budget::reserve`]; 503 past the user's share ([`Budget::share`]).
    pub async fn reserve_body(&self, user: &str, bytes: usize) -> Result<Reservation> {
        let what = "this request's body";
        self.units(bytes, what)?;
        if bytes == 0 {
            return Ok(Reservation::nothing());
        }
        let share = self.share(user, bytes, 0)?;
        let mut r = self.reserve(bytes, what).await?;
        r._share = Some(share);
        Ok(r)
    }

    /// Counts `bytes` more as `user`'s, of which one request holds `mine`
    /// already. One user's requests may hold at most half the budget at
    /// once (one request alone, the whole budget): more is refused at once
    /// (503) rather than queued, so that one client cannot make everyone
    /// else's requests wait behind its own (bodies sent slowly, answers
    /// not read).
    ///
    /// # Errors
    /// 503 past the user's share.
    fn share(&self, user: &str, bytes: usize, mine: usize) -> Result<UserShare> {
        let mut b = self.users.lock().unwrap_or_else(|e| e.into_inner());
        let held = b.get(user).copied().unwrap_or(0);
        let others = held.saturating_sub(mine);
        if others > 0 && held.saturating_add(bytes) > self.bytes / 2 {
            return Err(ServerError::Unavailable(format!(
                "your requests already hold {held} bytes of the server's memory, and this one \
                 needs {bytes} more: at most half the memory budget ({} bytes) is one client's; \
                 try again when they are done",
                self.bytes / 2
            )));
        }
        b.insert(user.to_string(), held + bytes);
        Ok(UserShare {
            users: self.users.clone(),
            user: user.to_string(),
            bytes,
        })
    }

    /// The whole budget, in bytes.
    pub fn total(&self) -> usize {
        self.bytes
    }

    fn units(&self, bytes: usize, what: &str) -> Result<u32> {
        // (Counted in whole units, as the permits are: a request whose
        // parts each round up must not wait for one unit it can never get.)
        if bytes.div_ceil(UNIT) > self.units_total {
            return Err(ServerError::TooLarge(format!(
                "{what} needs {bytes} bytes of server memory, more than the {} bytes requests \
                 may hold at once (--memory-budget, less the chunk cache); ask for less at a \
                 time, or use application/octet-stream, which streams",
                self.bytes
            )));
        }
        Ok(bytes.div_ceil(UNIT) as u32)
    }

    /// Reserves `bytes`, waiting for other requests to give memory back.
    ///
    /// # Errors
    /// 413 when `bytes` exceeds the whole budget; 503 after waiting too long.
    pub async fn reserve(&self, bytes: usize, what: &str) -> Result<Reservation> {
        let units = self.units(bytes, what)?;
        if units == 0 {
            return Ok(Reservation::nothing());
        }
        match tokio::time::timeout(WAIT, self.permits.clone().acquire_many_owned(units)).await {
            Ok(Ok(p)) => Ok(Reservation::of(p, bytes)),
            Ok(Err(_)) => Err(ServerError::Internal("memory budget closed".into())),
            Err(_) => Err(busy()),
        }
    }

    /// Refuses (413) `bytes` more for a request that already holds `held`
    /// when both together exceed the whole budget: reserving them, the
    /// request would wait on itself.
    ///
    /// # Errors
    /// As said.
    pub fn refuse_beyond(&self, held: usize, bytes: usize, what: &str) -> Result<()> {
        self.units(held.saturating_add(bytes), what).map(drop)
    }

    /// `bytes` at once if the budget has them free now; `None` otherwise.
    ///
    /// # Errors
    /// 413 when `bytes` exceeds the whole budget.
    pub fn try_reserve(&self, bytes: usize, what: &str) -> Result<Option<Reservation>> {
        let units = self.units(bytes, what)?;
        if units == 0 {
            return Ok(Some(Reservation::nothing()));
        }
        Ok(self
            .permits
            .clone()
            .try_acquire_many_owned(units)
            .ok()
            .map(|p| Reservation::of(p, bytes)))
    }

    /// [`Budget::reserve`] from synchronous code (a blocking engine call,
    /// or a handler answering on the async thread).
    ///
    /// # Errors
    /// As [`Budget::reserve`].
    pub fn reserve_blocking(&self, bytes: usize, what: &str) -> Result<Reservation> {
        let units = self.units(bytes, what)?;
        if units == 0 {
            return Ok(Reservation::nothing());
        }
        if let Ok(p) = self.permits.clone().try_acquire_many_owned(units) {
            return Ok(Reservation::of(p, bytes));
        }
        let handle = tokio::runtime::Handle::current();
        tokio::task::block_in_place(|| handle.block_on(self.reserve(bytes, what)))
    }
}

fn busy() -> ServerError {
    ServerError::Unavailable(
        "the server's memory budget is in use by other requests; try again shortly".into(),
    )
}

/// `bytes` as the budget counts them: in whole units.
fn in_units(bytes: usize) -> usize {
    bytes.div_ceil(UNIT).saturating_mul(UNIT)
}

/// The documents one request reads (see `h5lake_engine::memory`), held to
/// its memory: what each costs parsed, three times over (the parsed
/// document, the copy an answer or edit makes of it, and that answer's or
/// edit's text), once per document for the whole request (however often
/// it opens its domain). Without it a
/// few requests on a big group would each hold several copies of it,
/// outside any budget.
struct DocMemory {
    budget: Arc<Budget>,
    request: Arc<RequestMemory>,
}

impl DocMemory {
    /// Holds the document `key` (of `bytes` parsed) to the request's
    /// memory, once; waiting for the budget when `wait`, else refused
    /// as busy when the budget has not the memory free now.
    fn hold_document(&self, key: &str, bytes: usize, wait: bool) -> h5lake_engine::Result<()> {
        use h5lake_engine::EngineError;
        let documents = || {
            self.request
                .documents
                .lock()
                .unwrap_or_else(|e| e.into_inner())
        };
        // (Marked held first: tasks of one request reading the same
        // document at once reserve it once.)
        if !documents().insert(key.to_string()) {
            return Ok(());
        }
        let what = "an object's document";
        let bytes = bytes.saturating_mul(3);
        let r = if wait {
            self.request.reserve_blocking(&self.budget, bytes, what)
        } else {
            self.request
                .try_reserve(&self.budget, bytes, what, true)
                .and_then(|r| r.ok_or_else(busy))
        };
        let r = match r {
            Ok(r) => r,
            Err(e) => {
                documents().remove(key);
                return Err(match e {
                    ServerError::TooLarge(m) => EngineError::TooLarge(m),
                    other => EngineError::Busy(other.to_string()),
                });
            }
        };
        self.request.keep(r);
        Ok(())
    }
}

impl h5lake_engine::memory::Gate for DocMemory {
    fn hold(&self, key: &str, bytes: usize) -> h5lake_engine::Result<()> {
        self.hold_document(key, bytes, true)
    }

    fn hold_now(&self, key: &str, bytes: usize) -> h5lake_engine::Result<()> {
        self.hold_document(key, bytes, false)
    }
}

/// Holds the documents the request's work on this thread reads to its
/// memory (for the rest of the blocking call it runs in).
pub(crate) fn gate_documents(app: &App, ctx: &crate::routes::Ctx) {
    h5lake_engine::memory::install(Arc::new(DocMemory {
        budget: app.budget.clone(),
        request: ctx.memory.clone(),
    }));
}

/// Most bytes a body sent without a declared length (chunked) may hold: a
/// sixteenth of the memory budget (at least 1 MiB), below the limit on
/// bodies. Memory is set aside for the longest body before it is read, and
/// a budget's worth for every chunked `{}` refused them all under a
/// moderate budget.
pub(crate) fn undeclared_body_bytes(cfg: &crate::ServerConfig) -> usize {
    cfg.max_request_bytes
        .min((cfg.memory_budget_bytes / 16).max(1 << 20))
}

/// How long a request's body is: as declared, else (chunked) as long as
/// a body without a declared length may be.
fn body_len(app: &App, req: &Request) -> u64 {
    let declared = req
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    match declared {
        Some(n) => n,
        None if req.headers().contains_key(header::TRANSFER_ENCODING) => {
            undeclared_body_bytes(&app.cfg) as u64
        }
        None => 0,
    }
}

/// What a request body costs in memory before its handler runs: its bytes,
/// and for JSON the parsed values it can hold (every value takes at least
/// two bytes of text, and at most `max_json_elements` are parsed). Binary
/// value uploads cost nothing here: most stream through in slabs, which
/// their handler reserves, and the handlers that read one whole reserve
/// it then (see `routes::read_body`).
fn body_cost(app: &App, req: &Request) -> usize {
    let binary = req
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/octet-stream"));
    let len = usize::try_from(body_len(app, req))
        .unwrap_or(usize::MAX)
        .min(app.cfg.max_request_bytes);
    if len == 0 || binary {
        return 0;
    }
    let values = (len / 2 + 1).min(app.cfg.max_json_elements);
    len + values * JSON_VALUE_BYTES
}

/// Reserves what a request's body will cost for as long as the request
/// runs, before the body is read.
pub(crate) async fn hold_body_memory(
    State(app): State<Arc<App>>,
    req: Request<Body>,
    next: Next,
) -> Response {
    use axum::response::IntoResponse;
    // Only a user who may use the server gets memory set aside; who it is
    // travels with the request, so that handlers do not check again.
    let mut req = req;
    let user = match crate::routes::user_of(&app, req.uri().path(), req.headers()) {
        Ok(user) => {
            req.extensions_mut()
                .insert(crate::routes::User(user.clone()));
            user
        }
        Err(e) => return e.into_response(),
    };
    let cost = body_cost(&app, &req);
    let memory = RequestMemory::new(&user);
    match app.budget.reserve_body(&user, cost).await {
        Ok(r) => memory.keep(r),
        Err(e) => return e.into_response(),
    };
    req.extensions_mut().insert(memory.clone());
    let req = req.map(|b| stall_limited(b, app.cfg.idle_timeout));
    let rsp = next.run(req).await;
    drop(memory);
    rsp
}

/// Slowest rate a body may be sent at on average: memory is set aside for
/// a body while it comes, so a trickle (a byte every few seconds) must not
/// hold it for hours.
const MIN_BODY_BYTES_PER_SEC: u64 = 1 << 20;

/// `body`, failing with a `TimedOut` error once the client has sent nothing
/// for `patience`, or has taken longer over what it sent than twice
/// `patience` plus those bytes at [`MIN_BODY_BYTES_PER_SEC`]: a client
/// that stops or crawls half way through a body must not hold its
/// connection, and the memory set aside for the body, for long.
fn stall_limited(body: Body, patience: Duration) -> Body {
    use futures_util::StreamExt;
    let frames = body.into_data_stream();
    let start = tokio::time::Instant::now();
    Body::from_stream(futures_util::stream::unfold(
        Some((frames, 0u64)),
        move |state| async move {
            let (mut frames, sent) = state?;
            match tokio::time::timeout(patience, frames.next()).await {
                Ok(Some(Ok(b))) => {
                    let sent = sent + b.len() as u64;
                    let allowed = patience * 2
                        + Duration::from_millis(sent.saturating_mul(1000) / MIN_BODY_BYTES_PER_SEC);
                    if start.elapsed() > allowed {
                        return Some((
                            Err(std::io::Error::new(
                                std::io::ErrorKind::TimedOut,
                                format!(
                                    "the client sent the body slower than {} KiB/s",
                                    MIN_BODY_BYTES_PER_SEC >> 10
                                ),
                            )),
                            None,
                        ));
                    }
                    Some((Ok(b), Some((frames, sent))))
                }
                Ok(Some(Err(e))) => Some((Err(std::io::Error::other(e)), None)),
                Ok(None) => None,
                Err(_) => Some((
                    Err(std::io::Error::new(
                        std::io::ErrorKind::TimedOut,
                        format!("the client sent no part of the body for {patience:?}"),
                    )),
                    None,
                )),
            }
        },
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn values_in(v: &serde_json::Value) -> usize {
        1 + match v {
            serde_json::Value::Array(a) => a.iter().map(values_in).sum(),
            serde_json::Value::Object(o) => o.values().map(|x| 1 + values_in(x)).sum(),
            _ => 0,
        }
    }

    fn any_json() -> impl proptest::strategy::Strategy<Value = serde_json::Value> {
        use proptest::prelude::*;
        let leaf = prop_oneof![
            Just(serde_json::Value::Null),
            any::<bool>().prop_map(serde_json::Value::from),
            any::<i64>().prop_map(serde_json::Value::from),
            any::<f64>()
                .prop_filter("finite", |f| f.is_finite())
                .prop_map(serde_json::Value::from),
            ".{0,8}".prop_map(serde_json::Value::from),
        ];
        leaf.prop_recursive(4, 64, 8, |inner| {
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..8).prop_map(serde_json::Value::from),
                proptest::collection::hash_map(".{0,6}", inner, 0..6)
                    .prop_map(|m| serde_json::Value::Object(m.into_iter().collect())),
            ]
        })
    }

    proptest::proptest! {
        /// The count that gates parsing is exact (object keys count as the
        /// strings they are), compact or pretty-printed.
        #[test]
        fn counts_match_the_parsed_values(v in any_json()) {
            let n = values_in(&v);
            proptest::prop_assert_eq!(count_json_values(v.to_string().as_bytes()), n);
            let pretty = serde_json::to_vec_pretty(&v).unwrap();
            proptest::prop_assert_eq!(count_json_values(&pretty), n);
        }

        #[test]
        fn counting_never_panics(b in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..256)) {
            let _ = count_json_values(&b);
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn reservations_wait_and_give_back() {
        let b = Budget::new(8 * UNIT);
        let r = b.reserve(6 * UNIT, "x").await.unwrap();
        assert!(b.permits.available_permits() == 2);
        assert!(b.reserve(9 * UNIT, "x").await.is_err());
        drop(r);
        let _r = b.reserve_blocking(8 * UNIT, "x").unwrap();
        assert_eq!(b.permits.available_permits(), 0);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_request_never_waits_on_memory_it_holds_itself() {
        // From an audit: a 16 MiB upload whose chunks' work did not fit
        // beside its body waited 60 s on itself, then answered 503.
        let b = Budget::new(16 * UNIT);
        let req = RequestMemory::new("alice");
        req.keep(b.reserve_body("alice", 10 * UNIT).await.unwrap());
        let started = std::time::Instant::now();
        let e = req
            .reserve(&b, 8 * UNIT, "work")
            .await
            .err()
            .expect("refused");
        assert!(matches!(e, ServerError::TooLarge(_)), "{e:?}");
        assert!(started.elapsed() < Duration::from_secs(5));
        // What fits beside it is reserved, counted, and given back.
        let r = req.reserve_blocking(&b, 6 * UNIT, "work").unwrap();
        assert_eq!(req.held(), 16 * UNIT);
        drop(r);
        assert_eq!(req.held(), 10 * UNIT);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn reservations_are_counted_in_the_units_the_budget_gives() {
        // From a review: 10 units and a byte held, 6 units less a byte
        // asked: it fit by bytes, not in permits, and waited on itself.
        let b = Budget::new(16 * UNIT);
        let req = RequestMemory::new("alice");
        req.keep(b.reserve_body("alice", 10 * UNIT + 1).await.unwrap());
        let started = std::time::Instant::now();
        let e = req
            .reserve(&b, 6 * UNIT - 1, "work")
            .await
            .err()
            .expect("refused at once");
        assert!(matches!(e, ServerError::TooLarge(_)), "{e:?}");
        assert!(started.elapsed() < Duration::from_secs(5));
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn clients_without_credentials_do_not_share_one_half() {
        let b = Budget::new(16 * UNIT);
        let first = RequestMemory::new(crate::auth::DEFAULT_USER);
        let _a = first.reserve_blocking(&b, 7 * UNIT, "x").unwrap();
        let second = RequestMemory::new(crate::auth::DEFAULT_USER);
        assert!(second
            .try_reserve(&b, 4 * UNIT, "x", true)
            .unwrap()
            .is_some());
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn one_users_requests_hold_at_most_half_the_budget() {
        // From an audit: one user's reads left unread held every slab of
        // the budget, and everyone else's requests waited, then got 503.
        let b = Budget::new(16 * UNIT);
        let first = RequestMemory::new("alice");
        // one request alone may grow past half
        let _a = first.reserve_blocking(&b, 6 * UNIT, "x").unwrap();
        let _b = first.reserve_blocking(&b, 6 * UNIT, "x").unwrap();
        let second = RequestMemory::new("alice");
        let e = second
            .try_reserve(&b, UNIT, "x", true)
            .err()
            .expect("refused");
        assert!(matches!(e, ServerError::Unavailable(_)), "{e:?}");
        let bob = RequestMemory::new("bob");
        assert!(bob.try_reserve(&b, 4 * UNIT, "x", true).unwrap().is_some());
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn one_user_holds_at_most_half_the_budget_in_bodies() {
        let b = Budget::new(16 * UNIT);
        let a1 = b.reserve_body("alice", 6 * UNIT).await.unwrap();
        // past her half: refused at once, not queued
        let e = b
            .reserve_body("alice", 3 * UNIT)
            .await
            .err()
            .expect("refused");
        assert!(matches!(e, ServerError::Unavailable(_)), "{e:?}");
        let _b1 = b.reserve_body("bob", 8 * UNIT).await.unwrap();
        assert_eq!(b.permits.available_permits(), 2);
        drop(a1);
        let a2 = b.reserve_body("alice", 8 * UNIT).await.unwrap();
        assert!(b.users.lock().unwrap().values().all(|&v| v == 8 * UNIT));
        drop(a2);
        drop(_b1);
        // one request alone may take more than half
        let _a3 = b.reserve_body("alice", 12 * UNIT).await.unwrap();
        assert!(b.reserve_body("alice", UNIT).await.is_err());
    }
}
