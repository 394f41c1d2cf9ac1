//! Accepting connections and serving HTTP/1.1 on them, within the bounds a
//! server facing untrusted clients needs. `axum::serve` sets none: a client
//! that connected and sent nothing, or half a request head, held its socket
//! forever, and one client could open connections until the server ran out
//! of file descriptors.
//!
//! - A client must send each request head within `header_timeout` of
//!   connecting or of the previous response (hyper enforces it, for the
//!   first request and for every keep-alive one).
//! - A connection with no request in flight and no byte read or written for
//!   `idle_timeout` is closed. A request in flight is not: a long
//!   computation, a slow download or a slow upload keeps its connection,
//!   unless the client has taken no byte of the response for that long (it
//!   would otherwise hold the response's buffers forever).
//! - A client address may hold `max_connections_per_client` connections
//!   and the server `max_connections`; past that a connection is answered
//!   503 and closed.

use std::collections::HashMap;
use std::convert::Infallible;
use std::future::Future;
use std::io;
use std::net::IpAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};
use std::time::Duration;

use axum::body::Body;
use axum::Router;
use bytes::Bytes;
use hyper::body::{Frame, Incoming, SizeHint};
use hyper::server::conn::http1;
use hyper::Request;
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{watch, Semaphore};
use tokio::task::JoinSet;
use tokio::time::Instant;
use tower_service::Service;

use crate::ServerConfig;

/// How long a refused connection may take to get its 503 and close.
const REFUSAL_LINGER: Duration = Duration::from_secs(1);

/// Refused connections being answered at once; past that they are closed
/// unanswered, so that a flood of them cannot itself use up the sockets.
const MAX_REFUSING: usize = 64;

/// Longest timeout applied: deadlines further out overflow `Instant`, and
/// are as good as none anyway.
const MAX_TIMEOUT: Duration = Duration::from_secs(365 * 24 * 3600);

/// Pause after an accept error that is not about one connection (out of
/// file descriptors, say): retrying at once would spin on the error.
const ACCEPT_BACKOFF: Duration = Duration::from_millis(100);

/// Accepts connections on `listener` and serves `router` on them until
/// `shutdown` completes; then stops accepting, lets the requests in flight
/// finish and returns once every connection has closed.
pub(crate) async fn serve(
    listener: TcpListener,
    router: Router,
    cfg: &ServerConfig,
    shutdown: impl Future<Output = ()>,
) {
    let mut http = http1::Builder::new();
    http.timer(TokioTimer::new())
        .header_read_timeout(cfg.header_timeout.min(MAX_TIMEOUT));
    let limits = Arc::new(Limits {
        max_total: cfg.max_connections,
        max_per_client: cfg.max_connections_per_client,
        open: Mutex::default(),
    });
    let refusing = Arc::new(Semaphore::new(MAX_REFUSING));
    let (stop_tx, stop_rx) = watch::channel(false);
    // Owning the connection tasks lets the server wait for them at shutdown,
    // and aborts them if the caller stops waiting (the grace period ended).
    let mut tasks = JoinSet::new();
    let mut last_reported: Option<Instant> = None;
    tokio::pin!(shutdown);
    loop {
        let (tcp, peer) = tokio::select! {
            biased;
            () = &mut shutdown => break,
            // A task that panicked has already been reported by the panic
            // hook; the other connections go on.
            Some(_) = tasks.join_next(), if !tasks.is_empty() => continue,
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(e) => {
                    accept_failed(&e, &mut last_reported).await;
                    continue;
                }
            },
        };
        // Without TCP_NODELAY a response written as headers then body waits
        // for the client's delayed ACK: 40 ms a request.
        let _ = tcp.set_nodelay(true);
        match limits.admit(peer.ip()) {
            Ok(slot) => {
                let conn = serve_connection(
                    tcp,
                    http.clone(),
                    router.clone(),
                    cfg.idle_timeout.min(MAX_TIMEOUT),
                    stop_rx.clone(),
                );
                tasks.spawn(async move {
                    conn.await;
                    drop(slot);
                });
            }
            Err(why) => {
                if let Ok(permit) = refusing.clone().try_acquire_owned() {
                    tasks.spawn(async move {
                        refuse(tcp, why).await;
                        drop(permit);
                    });
                }
            }
        }
    }
    // Clients connecting from now on are refused by the kernel rather than
    // left waiting in the backlog.
    drop(listener);
    stop_tx.send_replace(true);
    while tasks.join_next().await.is_some() {}
}

/// Reports a failed accept (at most once a second: they come in bursts)
/// and pauses if the failure is not just one connection's.
async fn accept_failed(e: &io::Error, last_reported: &mut Option<Instant>) {
    // The client gave up between connecting and being accepted: nothing is
    // wrong with the listener.
    if matches!(
        e.kind(),
        io::ErrorKind::ConnectionAborted
            | io::ErrorKind::ConnectionReset
            | io::ErrorKind::ConnectionRefused
    ) {
        return;
    }
    if last_reported.map_or(true, |t| t.elapsed() >= Duration::from_secs(1)) {
        eprintln!("h5lake serve: cannot accept a connection: {e}");
        *last_reported = Some(Instant::now());
    }
    tokio::time::sleep(ACCEPT_BACKOFF).await;
}

/// Serves HTTP/1.1 on one connection until the client closes it, a timeout
/// ends it, or the server stops.
async fn serve_connection(
    tcp: TcpStream,
    http: http1::Builder,
    router: Router,
    idle_timeout: Duration,
    mut stop: watch::Receiver<bool>,
) {
    let activity = Arc::new(Activity::new());
    let io = TokioIo::new(Watched {
        io: tcp,
        activity: activity.clone(),
    });
    let in_flight = activity.clone();
    let service = hyper::service::service_fn(move |req: Request<Incoming>| {
        let busy = Busy::new(in_flight.clone());
        let mut router = router.clone();
        async move {
            let response = router.call(req).await?;
            Ok::<_, Infallible>(response.map(|body| Tracked { body, _busy: busy }))
        }
    });
    let conn = http.serve_connection(io, service);
    let idle = activity.idle(idle_timeout);
    tokio::pin!(conn, idle);
    // Errors end the connection and concern only this client (it went away,
    // sent garbage, or was too slow with its head): nothing to report.
    tokio::select! {
        _ = conn.as_mut() => return,
        // Nothing in flight, or a response its client stopped taking:
        // closing loses nothing anyone would get.
        () = &mut idle => return,
        _ = stop.wait_for(|&stop| stop) => {}
    }
    conn.as_mut().graceful_shutdown();
    tokio::select! {
        _ = conn => {}
        () = idle => {}
    }
}

/// What tells an idle connection from a busy one.
struct Activity {
    start: Instant,
    /// Requests whose response has not been sent yet.
    in_flight: AtomicUsize,
    /// The last write found the client's receive window full.
    write_blocked: AtomicBool,
    /// When (milliseconds after `start`) a byte was last read or written,
    /// or a response finished.
    last_ms: AtomicU64,
}

impl Activity {
    fn new() -> Self {
        Activity {
            start: Instant::now(),
            in_flight: AtomicUsize::new(0),
            write_blocked: AtomicBool::new(false),
            last_ms: AtomicU64::new(0),
        }
    }

    fn touch(&self) {
        let ms = self.start.elapsed().as_millis() as u64;
        self.last_ms.store(ms, Ordering::Relaxed);
    }

    fn quiet_since(&self) -> Instant {
        self.start + Duration::from_millis(self.last_ms.load(Ordering::Relaxed))
    }

    /// Completes once the connection has been idle for `limit`. It looks at
    /// the clock only when its timer fires, so that the reads and writes of
    /// a busy connection cost an atomic store rather than a timer reset.
    async fn idle(&self, limit: Duration) {
        let mut due = self.start + limit;
        loop {
            tokio::time::sleep_until(due).await;
            let now = Instant::now();
            due = self.quiet_since() + limit;
            if due <= now {
                if self.in_flight.load(Ordering::Relaxed) == 0
                    || self.write_blocked.load(Ordering::Relaxed)
                {
                    return;
                }
                // A request being answered (a long computation, a client
                // pausing its upload) is no idleness; look again once it
                // could have become some.
                due = now + limit;
            }
        }
    }
}

/// A request being answered, from its head until its response body is sent
/// or dropped.
struct Busy(Arc<Activity>);

impl Busy {
    fn new(activity: Arc<Activity>) -> Self {
        activity.in_flight.fetch_add(1, Ordering::Relaxed);
        Busy(activity)
    }
}

impl Drop for Busy {
    fn drop(&mut self) {
        // Idleness counts from the end of the response, however long ago
        // the connection last moved a byte.
        self.0.touch();
        self.0.in_flight.fetch_sub(1, Ordering::Relaxed);
    }
}

/// A response body that keeps its request in flight until hyper has sent
/// (or dropped) it: a download to a slow client is not idleness.
struct Tracked {
    body: Body,
    _busy: Busy,
}

impl hyper::body::Body for Tracked {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        Pin::new(&mut self.body).poll_frame(cx)
    }

    // Forwarded: hyper derives Content-Length from these.
    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}

/// A socket that records when bytes last moved, and whether the client has
/// stopped taking them: what tells a response still being flushed to a slow
/// reader (after its body was handed over) from one nobody reads, and lets
/// a client trickling bytes between requests count as active (the header
/// timeout bounds that one).
struct Watched {
    io: TcpStream,
    activity: Arc<Activity>,
}

impl Watched {
    fn wrote(&self, written: &Poll<io::Result<usize>>) {
        match written {
            Poll::Pending => self.activity.write_blocked.store(true, Ordering::Relaxed),
            Poll::Ready(Ok(n)) if *n > 0 => {
                self.activity.write_blocked.store(false, Ordering::Relaxed);
                self.activity.touch();
            }
            Poll::Ready(_) => {}
        }
    }
}

impl AsyncRead for Watched {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        let read = Pin::new(&mut self.io).poll_read(cx, buf);
        if buf.filled().len() > before {
            self.activity.touch();
        }
        read
    }
}

impl AsyncWrite for Watched {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let written = Pin::new(&mut self.io).poll_write(cx, buf);
        self.wrote(&written);
        written
    }

    // Forwarded so that hyper keeps writing headers and body in one call.
    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let written = Pin::new(&mut self.io).poll_write_vectored(cx, bufs);
        self.wrote(&written);
        written
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_shutdown(cx)
    }
}

/// Open connections, in all and per client address.
struct Limits {
    max_total: usize,
    max_per_client: usize,
    open: Mutex<OpenConnections>,
}

#[derive(Default)]
struct OpenConnections {
    total: usize,
    per_client: HashMap<IpAddr, usize>,
}

impl Limits {
    fn lock(&self) -> std::sync::MutexGuard<'_, OpenConnections> {
        // The counts are updated in single statements: a panic elsewhere
        // while the lock was held leaves them consistent.
        self.open.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Counts a new connection from `ip`, or says why it is refused.
    fn admit(self: &Arc<Self>, ip: IpAddr) -> std::result::Result<Slot, &'static str> {
        // An IPv4 client reaching a dual-stack socket shows up as
        // `::ffff:a.b.c.d`: still the same client.
        let ip = ip.to_canonical();
        let mut open = self.lock();
        if open.total >= self.max_total {
            return Err("the server has too many open connections; try again later");
        }
        if open.per_client.get(&ip).copied().unwrap_or(0) >= self.max_per_client {
            return Err("too many open connections from this client; close some and try again");
        }
        open.total += 1;
        *open.per_client.entry(ip).or_default() += 1;
        Ok(Slot {
            limits: self.clone(),
            ip,
        })
    }
}

/// One counted connection; dropping it (however its task ends, panics
/// included) gives the place back.
struct Slot {
    limits: Arc<Limits>,
    ip: IpAddr,
}

impl Drop for Slot {
    fn drop(&mut self) {
        let mut open = self.limits.lock();
        open.total -= 1;
        if let Some(n) = open.per_client.get_mut(&self.ip) {
            *n -= 1;
            if *n == 0 {
                open.per_client.remove(&self.ip);
            }
        }
    }
}

/// Answers a connection over the limits with a 503 in the server's usual
/// error shape (the message also as reason phrase, which is what h5pyd
/// shows), then closes it.
async fn refuse(mut tcp: TcpStream, why: &'static str) {
    let body = serde_json::json!({"status": 503, "error": why, "message": why}).to_string();
    let answer = format!(
        "HTTP/1.1 503 {why}\r\ncontent-type: application/json; charset=utf-8\r\ncontent-length: {}\r\n\
         connection: close\r\nretry-after: 1\r\n\r\n{body}",
        body.len()
    );
    let _ = tokio::time::timeout(REFUSAL_LINGER, async {
        tcp.write_all(answer.as_bytes()).await?;
        tcp.shutdown().await?;
        // Closing a socket with unread input in it resets the connection,
        // and the client may then lose the answer before reading it:
        // reading until the client closes avoids that.
        let mut sink = [0; 4096];
        while tcp.read(&mut sink).await? > 0 {}
        Ok::<_, io::Error>(())
    })
    .await;
}
