//! `h5lake serve`: the HSDS REST API (what h5pyd and the `hs*` tools speak)
//! over an h5lake store.
//!
//! The store directory is the HSDS bucket: domain `/home/u/f.h5` is the
//! document `home/u/f.h5/.domain.json` and its objects live under `db/`,
//! exactly where HSDS puts them. The server keeps no authoritative state in
//! memory — every request reads the documents it needs (the engine caches
//! them by store version) — so any number of `h5lake serve` processes can
//! share one store. Engine calls block, so they run on tokio's blocking
//! pool; large binary values stream through in slabs of bounded size.

mod auth;
mod budget;
mod conn;
mod domain_query;
mod domains;
mod error;
mod gone;
mod nonfinite;
mod objects;
mod place;
mod pool;
mod request;
mod routes;
mod values;

use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use h5lake_store::Store;

pub use auth::Action;
pub use error::{Result, ServerError};
pub use place::Hdf5Linker;

/// How to run the server.
#[derive(Clone, Debug)]
pub struct ServerConfig {
    /// The store (an HSDS bucket): a directory or `s3://bucket[/prefix]`.
    pub root: String,
    /// Interface to bind; loopback unless told otherwise.
    pub host: String,
    /// Port to bind; 0 picks a free one (see [`Server::local_addr`]).
    pub port: u16,
    /// HSDS `passwd.txt`-style `user:password` file.
    pub password_file: Option<PathBuf>,
    /// Let requests without credentials act as the `default` ACL user.
    pub allow_noauth: bool,
    /// The user who may do anything.
    pub admin_user: String,
    /// Largest JSON body accepted (binary values stream and have no limit).
    pub max_request_bytes: usize,
    /// Largest selection answered as JSON (binary answers stream instead).
    pub max_json_response_bytes: usize,
    /// Bytes of a binary value read or written per step: what bounds the
    /// server's memory for big requests.
    pub slab_bytes: usize,
    /// Decoded chunks kept in memory, over all open domains (at most a
    /// quarter of `memory_budget_bytes` less the document cache, taken
    /// from it). Every cached
    /// chunk is checked against the store's version before use, so several
    /// servers on one store still see each other's writes at once.
    pub chunk_cache_bytes: usize,
    /// Directories whose files linked datasets and other links may name
    /// (`--link-root`); none by default: the server then opens no path a
    /// client or a stored document names.
    pub link_roots: Vec<PathBuf>,
    /// `s3://bucket[/prefix]` locations links may name (`--link-bucket`).
    pub link_buckets: Vec<String>,
    /// Memory the server may spend on request bodies, JSON answers and
    /// value slabs at once; a request that would go past it waits for
    /// others to finish, and one that could never fit is refused (413).
    pub memory_budget_bytes: usize,
    /// Most elements a JSON body or a JSON answer may hold (each costs far
    /// more memory as JSON than as binary).
    pub max_json_elements: usize,
    /// Largest object document (a group's links and attributes) a change
    /// may leave, in bytes of memory parsed (`--max-document-size`; at
    /// most an eighth of `memory_budget_bytes`): every request on an object
    /// reads its document whole, so no client may grow one without bound.
    pub max_document_bytes: usize,
    /// Parsed documents kept in memory, over all open domains (a sixteenth
    /// of `memory_budget_bytes`, taken from the chunk cache's quarter; set
    /// when the server starts).
    pub doc_cache_bytes: usize,
    /// Most chunks one write may reach (`--max-chunks-per-write`): each is
    /// a stored object (and a statistics record), so without a bound a few
    /// bytes sent to a dataset of tiny chunks would make millions of files.
    pub max_chunks_per_write: usize,
    /// How long a client has to send a complete request head, counted from
    /// connecting or from the previous response: without it a client that
    /// connects and sends nothing, or half a head, holds a socket forever.
    pub header_timeout: Duration,
    /// How long a connection with no request in flight may stay open with
    /// no byte read or written: idle keep-alive connections otherwise pile
    /// up until the server runs out of sockets. A request being answered,
    /// however slowly, keeps its connection, unless the client has taken
    /// no byte of its response for this long: it would otherwise hold the
    /// response's memory forever.
    pub idle_timeout: Duration,
    /// Connections one client address may hold open; more are answered 503
    /// and closed, so that one client cannot take every socket.
    pub max_connections_per_client: usize,
    /// Connections the server holds open in all; more are answered 503 and
    /// closed, so that the server stays within its file descriptors.
    pub max_connections: usize,
    /// Serves the HDF5 files inside a local root read-only, each as the
    /// domain of its path (see [`place`]); `None`: they are not served.
    pub hdf5_linker: Option<Hdf5Linker>,
}

impl Default for ServerConfig {
    fn default() -> Self {
        ServerConfig {
            root: ".".to_string(),
            host: "127.0.0.1".into(),
            port: 5101,
            password_file: None,
            allow_noauth: false,
            admin_user: "admin".into(),
            max_request_bytes: 100 << 20,
            max_json_response_bytes: 100 << 20,
            slab_bytes: 8 << 20,
            chunk_cache_bytes: 256 << 20,
            link_roots: Vec::new(),
            link_buckets: Vec::new(),
            memory_budget_bytes: 1 << 30,
            max_json_elements: 1 << 20,
            max_chunks_per_write: 10_000,
            max_document_bytes: 64 << 20,
            doc_cache_bytes: 0,
            header_timeout: Duration::from_secs(30),
            idle_timeout: Duration::from_secs(60),
            max_connections_per_client: 64,
            max_connections: 1024,
            hdf5_linker: None,
        }
    }
}

/// Shared, read-only state of a running server.
pub(crate) struct App {
    pub store: Arc<dyn Store>,
    pub cfg: ServerConfig,
    pub users: HashMap<String, String>,
    pub started: f64,
    /// Domains opened by earlier requests (see [`domains::open_domain`]).
    pub domains: domains::OpenDomains,
    /// Domain and folder documents read by earlier requests.
    pub domain_docs: domains::DomainDocs,
    /// Buffers of binary value answers, reused.
    pub slabs: Arc<pool::SlabPool>,
    /// What linked datasets may make the server open (the operator's
    /// `--link-root`/`--link-bucket`; nothing by default).
    pub link_policy: h5lake_engine::LinkPolicy,
    /// Where relative `file_uri`s start: the directory holding a local
    /// store, as HSDS's `root_dir` holds its buckets.
    pub link_base: Option<PathBuf>,
    /// Memory requests may hold at once (see [`budget`]).
    pub budget: Arc<budget::Budget>,
    /// Parsed documents, shared by the open domains (see
    /// [`ServerConfig::doc_cache_bytes`]).
    pub docs: h5lake_engine::domain::SharedDocs,
    /// The store of each domain (see [`place`]).
    pub places: place::Places,
    /// What was deleted through this server, for 410 answers (see [`gone`]).
    pub gone: gone::Tombstones,
}

impl App {
    /// Whether small requests are answered on the async thread itself. A
    /// local store answers them in microseconds (page-cache reads, `stat`s),
    /// less than handing the work to a blocking thread and back costs; a
    /// store that prefers batching is remote, and its calls wait on the
    /// network, so they never run there.
    pub fn answers_inline(&self) -> bool {
        !self.store.prefers_batching()
    }
}

/// Opens the store behind `root`. The one place that knows what kind of
/// store it is, so that other backends (S3 URLs) plug in here.
fn open_store(root: &str) -> Result<Arc<dyn Store>> {
    h5lake_store::open_url(root, true)
        .map_err(|e| ServerError::Startup(format!("cannot open store {root}: {e}")))
}

/// A bound, not yet serving, server.
pub struct Server {
    listener: tokio::net::TcpListener,
    app: Arc<App>,
}

impl Server {
    /// Opens the store, reads the password file and binds the port.
    ///
    /// # Errors
    /// No password file and no `allow_noauth`; unreadable files; a port in use.
    pub async fn bind(mut cfg: ServerConfig) -> Result<Self> {
        // Decoded chunks the engine keeps are part of the memory budget: at
        // most a quarter of it, the rest for what requests hold. (A cache
        // of its own size beside a small budget let the process hold four
        // times the budget.)
        // Parsed documents are kept in a sixteenth of it, taken from that
        // quarter. And no document may be a big part of what requests hold
        // (each request on it reads it whole).
        cfg.doc_cache_bytes = cfg.memory_budget_bytes / 16;
        cfg.chunk_cache_bytes = cfg
            .chunk_cache_bytes
            .min(cfg.memory_budget_bytes / 4 - cfg.doc_cache_bytes);
        cfg.max_document_bytes = cfg.max_document_bytes.min(cfg.memory_budget_bytes / 8);
        let users = match &cfg.password_file {
            Some(p) => auth::load_passwords(p)?,
            None if cfg.allow_noauth => HashMap::new(),
            None => return Err(ServerError::Startup(
                "give a password file (--password-file) or allow anonymous access (--allow-noauth)"
                    .into(),
            )),
        };
        let store = open_store(&cfg.root)?;
        let local_root = (!cfg.root.contains("://")).then(|| PathBuf::from(&cfg.root));
        // The store's own files and the password file are never link
        // targets, even below an allowed root.
        let denied: Vec<PathBuf> = local_root
            .iter()
            .chain(cfg.password_file.iter())
            .cloned()
            .collect();
        let link_policy =
            h5lake_engine::LinkPolicy::for_server(&cfg.link_roots, &cfg.link_buckets, &denied)
                .map_err(|e| ServerError::Startup(e.to_string()))?;
        let link_base = local_root
            .as_ref()
            .and_then(|r| r.canonicalize().ok())
            .and_then(|r| r.parent().map(std::path::Path::to_path_buf));
        let addr = format!("{}:{}", cfg.host, cfg.port);
        let listener = tokio::net::TcpListener::bind(&addr)
            .await
            .map_err(|e| ServerError::Startup(format!("cannot listen on {addr}: {e}")))?;
        let slabs = pool::SlabPool::new(cfg.slab_bytes);
        let budget = Arc::new(budget::Budget::new(
            cfg.memory_budget_bytes - cfg.chunk_cache_bytes - cfg.doc_cache_bytes,
        ));
        let places = place::Places::new(store.clone(), &cfg.root, cfg.hdf5_linker.clone());
        let docs = h5lake_engine::domain::SharedDocs::new(cfg.doc_cache_bytes);
        let app = Arc::new(App {
            store,
            cfg,
            users,
            started: h5lake_engine::domain::now(),
            domains: Default::default(),
            domain_docs: Default::default(),
            slabs,
            link_policy,
            link_base,
            budget,
            docs,
            places,
            gone: gone::Tombstones::default(),
        });
        Ok(Server { listener, app })
    }

    /// The address actually bound (useful with port 0).
    ///
    /// # Errors
    /// The socket has no local address.
    pub fn local_addr(&self) -> Result<SocketAddr> {
        self.listener
            .local_addr()
            .map_err(|e| ServerError::Startup(e.to_string()))
    }

    /// Serves until `shutdown` completes, then finishes the requests in flight.
    ///
    /// # Errors
    /// None so far: a failing accept (out of file descriptors, say) is
    /// reported and retried, since ending the server would not fix it.
    pub async fn serve(
        self,
        shutdown: impl std::future::Future<Output = ()> + Send + 'static,
    ) -> Result<()> {
        let Server { listener, app } = self;
        let router = routes::router(app.clone());
        conn::serve(listener, router, &app.cfg, shutdown).await;
        Ok(())
    }
}

/// Slab buffers are megabytes each and allocated on many threads. glibc
/// raises its mmap threshold after the first such buffer is freed, and from
/// then on serves them from per-thread heaps that keep their memory: a fixed
/// threshold keeps slabs mmapped, so that freeing one gives it back and the
/// server's resident size stays at a few slabs. It sits above common chunk
/// sizes (1–4 MiB): a chunk buffer mmapped afresh for every small write
/// costs more in page faults than the write itself.
fn return_big_buffers_to_the_os() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt only changes allocator tuning; any value is valid.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, 6 << 20);
    }
}

/// How long requests in flight may take to finish once stopped.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(10);

/// Completes once `flag` is set.
async fn stopped(flag: Arc<AtomicBool>) {
    while !flag.load(Ordering::Relaxed) {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Runs a server on its own tokio runtime until `stop` becomes true; calls
/// `on_ready` with the bound address once it accepts connections.
///
/// # Errors
/// As [`Server::bind`] and [`Server::serve`].
pub fn run_blocking(
    cfg: ServerConfig,
    stop: Arc<AtomicBool>,
    on_ready: impl FnOnce(SocketAddr),
) -> Result<()> {
    return_big_buffers_to_the_os();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_name("h5lake-serve")
        .build()
        .map_err(|e| ServerError::Startup(format!("cannot start the runtime: {e}")))?;
    let result = rt.block_on(async move {
        let server = Server::bind(cfg).await?;
        on_ready(server.local_addr()?);
        let served = server.serve(stopped(stop.clone()));
        // Requests in flight get a grace period, not an unlimited one: a
        // slow client must not keep a stopped server alive.
        let deadline = async move {
            stopped(stop).await;
            tokio::time::sleep(SHUTDOWN_GRACE).await;
        };
        tokio::select! {
            r = served => r,
            () = deadline => Ok(()),
        }
    });
    // Blocking engine calls still running (a client that went away) must
    // not keep the process alive.
    rt.shutdown_timeout(Duration::from_secs(5));
    result
}
