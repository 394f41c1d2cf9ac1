//! A store in an S3 bucket (AWS or any S3-compatible server), through the
//! `object_store` crate.
//!
//! Why it is built this way:
//!
//! * **Sync trait, async client.** The engine calls stores from rayon threads
//!   and from tokio `spawn_blocking` threads, so the trait is blocking; the
//!   S3 client is async. One multi-thread tokio runtime, created on first use
//!   and owned by this module, runs every request; a sync method waits for its
//!   future. A caller that is itself inside some tokio runtime (where a nested
//!   `block_on` would panic) gets the future spawned onto our runtime instead,
//!   and waits for it under `block_in_place` when that runtime can lend the
//!   thread, so even a misplaced call works rather than panicking.
//!
//! * **Versions are ETags**, and the conditional writes are S3's conditional
//!   PUTs: `If-None-Match: *` for create-if-absent and `If-Match: <etag>` for
//!   replace-if-unchanged. Both are atomic on S3 itself, so no lock objects
//!   are needed. Identical bytes get identical ETags; the trait allows that
//!   (a conditional write based on unchanged content is harmless).
//!
//! * **Batched reads.** A round trip costs milliseconds, so [`get_many`] keeps
//!   many requests in flight at once and [`get_ranges`] merges nearby ranges
//!   into one request; [`prefers_batching`] tells the engine to use them.
//!
//! * **Listing by string prefix.** The trait's prefixes are plain string
//!   prefixes (`q/c_` matches `q/c_0`), which `object_store`'s segment-wise
//!   `list` cannot express, so listings go through its paginated S3 listing,
//!   which passes the prefix to S3 unchanged.
//!
//! [`get_many`]: crate::ReadableStore::get_many
//! [`get_ranges`]: crate::ReadableStore::get_ranges
//! [`prefers_batching`]: crate::ReadableStore::prefers_batching

use std::future::Future;
use std::ops::Range;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use futures::stream::{self, StreamExt};
use object_store::aws::{AmazonS3, AmazonS3Builder, S3ConditionalPut};
use object_store::list::{PaginatedListOptions, PaginatedListStore};
use object_store::path::Path;
use object_store::{
    BackoffConfig, GetOptions, GetRange, ObjectStore, ObjectStoreExt, PutMode, PutOptions,
    PutPayload, RetryConfig, UpdateVersion, WriteMultipart,
};

use crate::{
    validate_key, validate_prefix, ListableStore, OpenObject, PutOutcome, ReadableStore, Result,
    Store, StoreError, Version, Versioned, WritableStore,
};

/// Requests in flight at once for batched reads and bulk deletes: enough to
/// hide a round trip behind the others, few enough not to be throttled.
const IN_FLIGHT: usize = 32;

/// Objects at least this big are uploaded in parts (several in flight);
/// smaller ones in one PUT.
const DEFAULT_MULTIPART_THRESHOLD: usize = 64 << 20;

/// Part size of multipart uploads (S3's minimum is 5 MiB).
const PART_SIZE: usize = 16 << 20;

/// Parts of one upload in flight at once.
const PART_CONCURRENCY: usize = 8;

/// How to reach S3. [`S3Config::from_env`] reads the usual AWS environment;
/// a default-constructed config with fields set uses only what it is given
/// (what tests want: nothing leaks in from the developer's environment).
#[derive(Clone, Debug, Default)]
pub struct S3Config {
    /// An S3-compatible server's URL (`http://127.0.0.1:9000`); `None` = AWS.
    /// Requests then use path-style addressing (`<endpoint>/<bucket>/<key>`)
    /// and plain HTTP is allowed when the URL says `http://`.
    pub endpoint: Option<String>,
    /// Region; `us-east-1` when unset.
    pub region: Option<String>,
    pub access_key_id: Option<String>,
    pub secret_access_key: Option<String>,
    pub session_token: Option<String>,
    /// Anonymous requests (public buckets).
    pub skip_signature: bool,
    /// Objects of at least this many bytes are uploaded in parts; `0` means
    /// the default (64 MiB).
    pub multipart_threshold: usize,
    /// Also take the AWS environment's other settings (web identity, container
    /// credentials, `AWS_*` client options) into account; set by
    /// [`S3Config::from_env`].
    pub inherit_env: bool,
}

fn env(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.is_empty())
}

impl S3Config {
    /// The configuration the AWS tools would use: `AWS_ACCESS_KEY_ID`,
    /// `AWS_SECRET_ACCESS_KEY`, `AWS_SESSION_TOKEN`, `AWS_REGION` (or
    /// `AWS_DEFAULT_REGION`), `AWS_ENDPOINT_URL_S3` (or `AWS_ENDPOINT_URL`)
    /// for S3-compatible servers, `AWS_SKIP_SIGNATURE=true` for anonymous
    /// access, plus web-identity and container credentials.
    pub fn from_env() -> Self {
        S3Config {
            endpoint: env("AWS_ENDPOINT_URL_S3")
                .or_else(|| env("AWS_ENDPOINT_URL"))
                .or_else(|| env("AWS_ENDPOINT")),
            region: env("AWS_REGION").or_else(|| env("AWS_DEFAULT_REGION")),
            access_key_id: env("AWS_ACCESS_KEY_ID"),
            secret_access_key: env("AWS_SECRET_ACCESS_KEY"),
            session_token: env("AWS_SESSION_TOKEN"),
            skip_signature: env("AWS_SKIP_SIGNATURE")
                .is_some_and(|v| matches!(v.to_ascii_lowercase().as_str(), "1" | "true" | "yes")),
            multipart_threshold: 0,
            inherit_env: true,
        }
    }

    /// Whether some credential source other than static keys is configured
    /// in the environment.
    fn env_has_other_credentials(&self) -> bool {
        self.inherit_env
            && (env("AWS_WEB_IDENTITY_TOKEN_FILE").is_some()
                || env("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI").is_some()
                || env("AWS_CONTAINER_CREDENTIALS_FULL_URI").is_some())
    }
}

/// Why `endpoint` is no URL an S3 client can send requests to, if it is
/// not: object_store panics on some (no scheme, a bad port) instead of
/// failing.
fn check_endpoint(endpoint: &str) -> std::result::Result<(), &'static str> {
    if endpoint
        .chars()
        .any(|c| c.is_whitespace() || c.is_control())
    {
        return Err("holds a space or a control character");
    }
    let Some(rest) = endpoint
        .strip_prefix("http://")
        .or_else(|| endpoint.strip_prefix("https://"))
    else {
        return Err("does not start with http:// or https://");
    };
    let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
    let host_port = authority.rsplit('@').next().unwrap_or("");
    // (An IPv6 host is bracketed: its colons are not the port's.)
    let port = match host_port.rfind(':') {
        Some(i) if !host_port[i..].contains(']') => Some(&host_port[i + 1..]),
        _ => None,
    };
    let host = port.map_or(host_port, |p| &host_port[..host_port.len() - p.len() - 1]);
    if host.is_empty() {
        return Err("names no host");
    }
    if let Some(p) = port {
        if !p.parse::<u16>().is_ok_and(|n| n > 0) {
            return Err("has a port that is not a number from 1 to 65535");
        }
    }
    Ok(())
}

/// `s3://bucket[/prefix]` split into bucket and prefix (`""` or ending in `/`).
///
/// # Errors
/// [`StoreError::Config`] for anything else.
pub fn parse_s3_url(url: &str) -> Result<(String, String)> {
    let bad = |reason: &str| StoreError::Config {
        url: url.to_string(),
        reason: reason.to_string(),
    };
    let rest = url
        .strip_prefix("s3://")
        .ok_or_else(|| bad("not an s3:// URL"))?;
    let (bucket, prefix) = rest.split_once('/').unwrap_or((rest, ""));
    if bucket.is_empty() {
        return Err(bad("no bucket name (expected s3://bucket[/path])"));
    }
    let prefix = prefix.trim_matches('/');
    if prefix.is_empty() {
        return Ok((bucket.to_string(), String::new()));
    }
    validate_key(prefix)
        .map_err(|_| bad("the path after the bucket has empty, '.' or '..' segments"))?;
    Ok((bucket.to_string(), format!("{prefix}/")))
}

/// Keys with sizes, and child prefixes, of one listing.
/// Keys with their sizes and versions (ETags), and "directories".
type Listing = (Vec<(String, u64, Version)>, Vec<String>);

/// A [`Store`] on `s3://bucket/prefix`: key `k` is the object `prefix/k`.
#[derive(Debug)]
pub struct S3Store {
    s3: Arc<AmazonS3>,
    bucket: String,
    /// `""` or a `/`-terminated key prefix.
    prefix: String,
    endpoint: Option<String>,
    multipart_threshold: usize,
}

impl S3Store {
    /// Opens `s3://bucket[/prefix]` with [`S3Config::from_env`].
    ///
    /// # Errors
    /// As [`S3Store::open_with`].
    pub fn open(url: &str, create: bool) -> Result<Self> {
        Self::open_with(url, &S3Config::from_env(), create)
    }

    /// Opens `s3://bucket[/prefix]`. The bucket must exist (h5lake never
    /// creates buckets); unless `create`, something must already be stored
    /// under the prefix (the counterpart of a local store's directory). One
    /// listing request checks both, so a wrong endpoint, bad credentials or a
    /// missing bucket show up here, with what to do about them.
    ///
    /// # Errors
    /// [`StoreError::Config`] for a bad URL or missing credentials;
    /// [`StoreError::NotFound`] for a missing bucket or (without `create`) an
    /// empty prefix; [`StoreError::Remote`] / [`StoreError::PermissionDenied`]
    /// when the request fails.
    pub fn open_with(url: &str, config: &S3Config, create: bool) -> Result<Self> {
        let (bucket, prefix) = parse_s3_url(url)?;
        let store = Self::connect(url, &bucket, prefix, config)?;
        let (keys, dirs) = store.list_page("", Some("/"), Some(1))?;
        if !create && keys.is_empty() && dirs.is_empty() && !store.prefix.is_empty() {
            return Err(StoreError::NotFound(format!(
                "nothing is stored under {url} (use mode 'w' or 'a' to create a store there)"
            )));
        }
        Ok(store)
    }

    fn connect(url: &str, bucket: &str, prefix: String, config: &S3Config) -> Result<Self> {
        let mut b = if config.inherit_env {
            AmazonS3Builder::from_env()
        } else {
            AmazonS3Builder::new()
        };
        b = b
            .with_bucket_name(bucket)
            .with_conditional_put(S3ConditionalPut::ETagMatch)
            // object_store's default retries for up to 3 minutes, which turns
            // "wrong endpoint" into a long hang; a few quick retries still
            // ride out throttling and dropped connections.
            .with_retry(RetryConfig {
                backoff: BackoffConfig::default(),
                max_retries: 5,
                retry_timeout: Duration::from_secs(60),
            });
        if let Some(region) = &config.region {
            b = b.with_region(region);
        }
        match &config.endpoint {
            Some(endpoint) => {
                check_endpoint(endpoint).map_err(|why| StoreError::Config {
                    url: url.to_string(),
                    reason: format!(
                        "the S3 endpoint {endpoint:?} (AWS_ENDPOINT_URL) {why}; \
                         give a URL such as http://127.0.0.1:9000"
                    ),
                })?;
                b = b
                    .with_endpoint(endpoint)
                    .with_allow_http(endpoint.starts_with("http://"))
                    // S3-compatible servers rarely have per-bucket host names.
                    .with_virtual_hosted_style_request(false);
            }
            None => {
                // AWS's preferred addressing (path-style is deprecated there).
                if env("AWS_VIRTUAL_HOSTED_STYLE_REQUEST").is_none() || !config.inherit_env {
                    b = b.with_virtual_hosted_style_request(true);
                }
            }
        }
        let has_keys = config.access_key_id.is_some() || config.secret_access_key.is_some();
        if has_keys {
            let (Some(id), Some(secret)) = (&config.access_key_id, &config.secret_access_key)
            else {
                return Err(StoreError::Config {
                    url: url.to_string(),
                    reason:
                        "set both AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (only one is set)"
                            .into(),
                });
            };
            b = b.with_access_key_id(id).with_secret_access_key(secret);
            if let Some(token) = &config.session_token {
                b = b.with_token(token);
            }
        } else if config.skip_signature {
            b = b.with_skip_signature(true);
        } else if config.endpoint.is_some() || !config.inherit_env {
            // Without keys object_store would ask the EC2 instance metadata
            // service, which an S3-compatible server's users never have.
            if !config.env_has_other_credentials() {
                return Err(StoreError::Config {
                    url: url.to_string(),
                    reason: "no credentials: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY \
                             (or AWS_SKIP_SIGNATURE=true for anonymous access)"
                        .into(),
                });
            }
        }
        let s3 = b.build().map_err(|e| StoreError::Config {
            url: url.to_string(),
            reason: format!("{e} (check the AWS_* environment variables)"),
        })?;
        Ok(S3Store {
            s3: Arc::new(s3),
            bucket: bucket.to_string(),
            prefix,
            endpoint: config.endpoint.clone(),
            multipart_threshold: match config.multipart_threshold {
                0 => DEFAULT_MULTIPART_THRESHOLD,
                n => n,
            },
        })
    }

    /// The object path of `key`. `Path::parse` keeps the key's characters
    /// as they are (`Path::from` would percent-encode some), so keys are
    /// the same strings HSDS and other S3 tools see.
    fn path(&self, key: &str) -> Result<Path> {
        validate_key(key)?;
        Path::parse(format!("{}{key}", self.prefix)).map_err(|e| StoreError::InvalidKey {
            key: key.to_string(),
            reason: e.to_string(),
        })
    }

    fn url_of(&self, key: &str) -> String {
        let url = format!("s3://{}/{}{key}", self.bucket, self.prefix);
        url.trim_end_matches('/').to_string()
    }

    /// A failed request as a [`StoreError`] that says what to check.
    fn error(&self, key: &str, e: object_store::Error) -> StoreError {
        let location = self.url_of(key);
        match e {
            object_store::Error::NotFound { .. } => StoreError::NotFound(format!(
                "{location}: no such bucket or object ({e}); h5lake does not create buckets, create it first"
            )),
            object_store::Error::Unauthenticated { .. } => StoreError::PermissionDenied(format!(
                "{location}: the credentials were rejected ({e}); check AWS_ACCESS_KEY_ID, \
                 AWS_SECRET_ACCESS_KEY and AWS_SESSION_TOKEN"
            )),
            object_store::Error::PermissionDenied { .. } => StoreError::PermissionDenied(format!(
                "{location}: access denied ({e}); the credentials lack rights on this bucket"
            )),
            e => {
                let text = error_chain(&e).to_ascii_lowercase();
                // Listing a missing bucket is a plain 404 to object_store.
                if text.contains("nosuchbucket") {
                    return StoreError::NotFound(format!(
                        "{location}: there is no bucket {:?}; h5lake does not create buckets, create it first",
                        self.bucket
                    ));
                }
                // (Without keys object_store asks EC2's instance metadata
                // service, which answers nothing useful off AWS.)
                let unreachable = [
                    "connection refused",
                    "dns error",
                    "tcp connect error",
                    "failed to lookup",
                    "no route to host",
                ]
                .iter()
                .any(|t| text.contains(t));
                let hint = if text.contains("credential") || text.contains("169.254.169.254") {
                    " (no usable credentials: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, \
                     or AWS_PROFILE; for an S3-compatible server also AWS_ENDPOINT_URL)"
                        .to_string()
                } else if [
                    "invalidaccesskeyid",
                    "signaturedoesnotmatch",
                    "accessdenied",
                    "403 forbidden",
                ]
                .iter()
                .any(|t| text.contains(t))
                {
                    format!(
                        " (S3 refused the request: check AWS_ACCESS_KEY_ID and \
                         AWS_SECRET_ACCESS_KEY (or AWS_PROFILE) and that they may use bucket {:?})",
                        self.bucket
                    )
                } else if !unreachable && text.contains("timed out") {
                    match &self.endpoint {
                        Some(ep) => format!(" (the S3 endpoint {ep} took the request but did not answer in time: is the server overloaded or stopped? it comes from AWS_ENDPOINT_URL)"),
                        None => " (AWS S3 did not answer in time)".to_string(),
                    }
                } else if unreachable
                    || text.contains("connect")
                    || text.contains("sending request")
                {
                    match &self.endpoint {
                        Some(ep) => format!(" (cannot reach the S3 endpoint {ep}: is the server running? it comes from AWS_ENDPOINT_URL)"),
                        None => " (cannot reach AWS S3; for an S3-compatible server set AWS_ENDPOINT_URL to its URL)".to_string(),
                    }
                } else {
                    String::new()
                };
                StoreError::Remote {
                    location,
                    hint,
                    source: Box::new(e),
                }
            }
        }
    }

    /// One page of a listing (or all pages when `max_keys` is `None`): keys
    /// with their sizes and, with a delimiter, child prefixes, all as full
    /// store keys, sorted.
    fn list_page(
        &self,
        prefix: &str,
        delimiter: Option<&'static str>,
        max_keys: Option<usize>,
    ) -> Result<Listing> {
        let s3 = self.s3.clone();
        let full = format!("{}{prefix}", self.prefix);
        let strip = self.prefix.len();
        let result = run(async move {
            let (mut keys, mut dirs) = (Vec::new(), Vec::new());
            let mut token = None;
            loop {
                let opts = PaginatedListOptions {
                    delimiter: delimiter.map(Into::into),
                    max_keys,
                    page_token: token.take(),
                    ..Default::default()
                };
                let page = s3
                    .list_paginated((!full.is_empty()).then_some(full.as_str()), opts)
                    .await?;
                keys.extend(page.result.objects.into_iter().map(|m| {
                    (
                        m.location.to_string(),
                        m.size,
                        Version(m.e_tag.unwrap_or_default()),
                    )
                }));
                dirs.extend(
                    page.result
                        .common_prefixes
                        .into_iter()
                        .map(|p| format!("{p}/")),
                );
                match page.page_token {
                    Some(t) if max_keys.is_none() => token = Some(t),
                    _ => return Ok::<_, object_store::Error>((keys, dirs)),
                }
            }
        });
        let (keys, dirs) = result.map_err(|e| self.error(prefix, e))?;
        let mut keys: Vec<(String, u64, Version)> = keys
            .into_iter()
            .filter(|(k, _, _)| k.len() > strip)
            .map(|(k, size, v)| (k[strip..].to_string(), size, v))
            .collect();
        keys.sort_by(|a, b| a.0.cmp(&b.0));
        keys.dedup_by(|a, b| a.0 == b.0);
        let mut dirs: Vec<String> = dirs
            .into_iter()
            .filter(|d| d.len() > strip)
            .map(|d| d[strip..].to_string())
            .collect();
        dirs.sort();
        dirs.dedup();
        Ok((keys, dirs))
    }

    fn get_opts(&self, key: &str, opts: GetOptions) -> Result<Option<(Bytes, Version, u64)>> {
        let path = self.path(key)?;
        let s3 = self.s3.clone();
        let got = run(async move {
            let r = s3.get_opts(&path, opts).await?;
            let version = Version(r.meta.e_tag.clone().unwrap_or_default());
            let size = r.meta.size;
            Ok::<_, object_store::Error>((r.bytes().await?, version, size))
        });
        match got {
            Ok(v) => Ok(Some(v)),
            Err(object_store::Error::NotFound { .. }) => Ok(None),
            Err(e) => Err(self.error(key, e)),
        }
    }

    fn put_mode(&self, key: &str, data: &[u8], mode: PutMode) -> Result<PutOutcome> {
        let path = self.path(key)?;
        let s3 = self.s3.clone();
        let data = Bytes::copy_from_slice(data);
        // Only plain overwrites go multipart: S3 has no conditional multipart
        // completion everywhere, and conditional writes are small documents.
        let multipart =
            matches!(mode, PutMode::Overwrite) && data.len() >= self.multipart_threshold;
        let put = run(async move {
            if multipart {
                let upload = s3.put_multipart(&path).await?;
                let mut w = WriteMultipart::new_with_chunk_size(upload, PART_SIZE);
                let mut rest = data;
                while !rest.is_empty() {
                    w.wait_for_capacity(PART_CONCURRENCY).await?;
                    w.put(rest.split_to(rest.len().min(PART_SIZE)));
                }
                return w.finish().await;
            }
            let opts = PutOptions {
                mode,
                ..Default::default()
            };
            s3.put_opts(&path, PutPayload::from(data), opts).await
        });
        match put {
            Ok(r) => Ok(PutOutcome::Written(Version(r.e_tag.unwrap_or_default()))),
            Err(
                object_store::Error::AlreadyExists { .. }
                | object_store::Error::Precondition { .. },
            ) => Ok(PutOutcome::Conflict),
            Err(e) => Err(self.error(key, e)),
        }
    }
}

/// The error and its sources as one line (hints are chosen from it).
fn error_chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut cur = e.source();
    while let Some(s) = cur {
        text.push_str(": ");
        text.push_str(&s.to_string());
        cur = s.source();
    }
    text
}

/// The module's runtime, made on first use and kept for the process's life
/// (the HTTP connection pools live on it). A process forked from one that
/// had it (Python's multiprocessing) inherits it without its threads, so a
/// child makes its own; the parent's copy is leaked, as dropping it would
/// wait for threads that do not exist there.
fn runtime() -> &'static tokio::runtime::Runtime {
    static RT: Mutex<Option<(u32, &'static tokio::runtime::Runtime)>> = Mutex::new(None);
    let pid = std::process::id();
    let mut slot = RT.lock().unwrap_or_else(|e| e.into_inner());
    match *slot {
        Some((owner, rt)) if owner == pid => rt,
        _ => {
            let rt = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .thread_name("h5lake-s3")
                .enable_all()
                .build()
                // Only fails when the OS refuses threads or an epoll instance,
                // and then no request could be made anyway.
                .expect("creating the tokio runtime for S3 requests");
            let rt: &'static tokio::runtime::Runtime = Box::leak(Box::new(rt));
            *slot = Some((pid, rt));
            rt
        }
    }
}

/// Runs `fut` on the module's runtime and waits for its output.
fn run<T: Send + 'static>(fut: impl Future<Output = T> + Send + 'static) -> T {
    let Ok(caller) = tokio::runtime::Handle::try_current() else {
        // The normal case: a plain, rayon or spawn_blocking-less thread.
        return runtime().block_on(fut);
    };
    // On some runtime's thread, where a nested block_on panics in async
    // context: run the future on ours and wait for it like for any I/O.
    let (tx, rx) = std::sync::mpsc::sync_channel(1);
    runtime().spawn(async move {
        let _ = tx.send(fut.await);
    });
    let wait = move || rx.recv().expect("the S3 runtime dropped a request");
    match caller.runtime_flavor() {
        // Lets that runtime move its other tasks off this thread meanwhile
        // (a no-op on its spawn_blocking threads).
        tokio::runtime::RuntimeFlavor::MultiThread => tokio::task::block_in_place(wait),
        _ => wait(),
    }
}

impl ReadableStore for S3Store {
    fn get(&self, key: &str) -> Result<Option<Bytes>> {
        Ok(self
            .get_opts(key, GetOptions::default())?
            .map(|(b, _, _)| b))
    }

    fn get_versioned(&self, key: &str) -> Result<Option<Versioned>> {
        Ok(self
            .get_opts(key, GetOptions::default())?
            .map(|(data, version, _)| Versioned { data, version }))
    }

    fn get_range(&self, key: &str, offset: u64, len: u64) -> Result<Option<Bytes>> {
        let end = offset.saturating_add(len);
        if len == 0 {
            return Ok(self.exists(key)?.then(Bytes::new));
        }
        let opts = GetOptions {
            range: Some(GetRange::Bounded(offset..end)),
            ..Default::default()
        };
        match self.get_opts(key, opts) {
            Ok(got) => Ok(got.map(|(b, _, _)| b)),
            // S3 answers a range that starts past the end with 416; whether
            // that means "empty" or "missing" takes a HEAD to tell.
            Err(e) => match self.head(key)? {
                None => Ok(None),
                Some((_, size)) if offset >= size => Ok(Some(Bytes::new())),
                Some(_) => Err(e),
            },
        }
    }

    fn exists(&self, key: &str) -> Result<bool> {
        Ok(self.head(key)?.is_some())
    }

    fn version(&self, key: &str) -> Result<Option<Version>> {
        Ok(self.head(key)?.map(|(v, _)| v))
    }

    fn get_many(&self, keys: &[String]) -> Result<Vec<Option<Versioned>>> {
        let paths: Vec<Path> = keys.iter().map(|k| self.path(k)).collect::<Result<_>>()?;
        let s3 = self.s3.clone();
        let results = run(async move {
            let mut out: Vec<Option<std::result::Result<Versioned, object_store::Error>>> =
                (0..paths.len()).map(|_| None).collect();
            let mut fetches = stream::iter(paths.into_iter().enumerate())
                .map(|(i, path)| {
                    let s3 = s3.clone();
                    async move {
                        let got = async {
                            let r = s3.get_opts(&path, GetOptions::default()).await?;
                            let version = Version(r.meta.e_tag.clone().unwrap_or_default());
                            Ok(Versioned {
                                data: r.bytes().await?,
                                version,
                            })
                        };
                        (i, got.await)
                    }
                })
                .buffer_unordered(IN_FLIGHT);
            while let Some((i, r)) = fetches.next().await {
                out[i] = Some(r);
            }
            out
        });
        keys.iter()
            .zip(results)
            .map(|(key, r)| match r.expect("every fetch reports") {
                Ok(v) => Ok(Some(v)),
                Err(object_store::Error::NotFound { .. }) => Ok(None),
                Err(e) => Err(self.error(key, e)),
            })
            .collect()
    }

    fn get_ranges(&self, key: &str, ranges: &[Range<u64>]) -> Result<Option<Vec<Bytes>>> {
        let path = self.path(key)?;
        if ranges.iter().any(|r| r.start >= r.end) {
            // object_store refuses empty ranges; the plain path handles them.
            return crate::get_ranges_one_by_one(self, key, ranges);
        }
        let s3 = self.s3.clone();
        let wanted = ranges.to_vec();
        // object_store merges ranges less than 1 MiB apart and fetches the
        // merged ones concurrently.
        match run(async move { s3.get_ranges(&path, &wanted).await }) {
            Ok(parts) => Ok(Some(parts)),
            Err(object_store::Error::NotFound { .. }) => Ok(None),
            // Ranges past the end: the per-range path clips them.
            Err(_) => crate::get_ranges_one_by_one(self, key, ranges),
        }
    }

    fn open_object(&self, key: &str, tail: u64) -> Result<Option<Box<dyn OpenObject + '_>>> {
        // One request: the last bytes, with the object's size and ETag.
        let opts = GetOptions {
            range: (tail > 0).then_some(GetRange::Suffix(tail)),
            ..Default::default()
        };
        let got = match self.get_opts(key, opts) {
            Ok(got) => got,
            // An empty object has no suffix to give (416).
            Err(e) => match self.head(key)? {
                None => None,
                Some((version, 0)) => Some((Bytes::new(), version, 0)),
                Some(_) => return Err(e),
            },
        };
        Ok(got.map(|(tail, version, len)| {
            Box::new(S3Object {
                store: self,
                key: key.to_string(),
                len,
                version,
                tail,
            }) as Box<dyn OpenObject + '_>
        }))
    }

    fn prefers_batching(&self) -> bool {
        true
    }
}

/// An object read in parts: every ranged GET names the ETag opened
/// (`If-Match`), so a replaced object fails the read instead of mixing
/// versions.
struct S3Object<'a> {
    store: &'a S3Store,
    key: String,
    len: u64,
    version: Version,
    tail: Bytes,
}

/// Ranges closer than this are fetched as one request: a round trip costs
/// more than reading the bytes between them.
const COALESCE_GAP: u64 = 1 << 20;

impl OpenObject for S3Object<'_> {
    fn len(&self) -> u64 {
        self.len
    }

    fn version(&self) -> &Version {
        &self.version
    }

    fn tail(&self) -> &Bytes {
        &self.tail
    }

    fn read_ranges(&self, ranges: &[Range<u64>]) -> Result<Vec<Bytes>> {
        let clip =
            |r: &Range<u64>| r.start.min(self.len)..r.end.min(self.len).max(r.start.min(self.len));
        let mut wanted: Vec<Range<u64>> =
            ranges.iter().map(clip).filter(|r| !r.is_empty()).collect();
        wanted.sort_by_key(|r| r.start);
        let mut merged: Vec<Range<u64>> = Vec::new();
        for r in wanted {
            match merged.last_mut() {
                Some(m) if r.start <= m.end.saturating_add(COALESCE_GAP) => {
                    m.end = m.end.max(r.end)
                }
                _ => merged.push(r),
            }
        }
        let path = self.store.path(&self.key)?;
        let s3 = self.store.s3.clone();
        let etag = self.version.0.clone();
        let requests = merged.clone();
        let fetched = run(async move {
            let mut out: Vec<Option<std::result::Result<Bytes, object_store::Error>>> =
                (0..requests.len()).map(|_| None).collect();
            let mut fetches = stream::iter(requests.into_iter().enumerate())
                .map(|(i, range)| {
                    let (s3, path, etag) = (s3.clone(), path.clone(), etag.clone());
                    async move {
                        let got = async {
                            let opts = GetOptions {
                                range: Some(GetRange::Bounded(range)),
                                if_match: Some(etag),
                                ..Default::default()
                            };
                            s3.get_opts(&path, opts).await?.bytes().await
                        };
                        (i, got.await)
                    }
                })
                .buffer_unordered(IN_FLIGHT);
            while let Some((i, r)) = fetches.next().await {
                out[i] = Some(r);
            }
            out
        });
        let mut parts = Vec::with_capacity(merged.len());
        for r in fetched {
            match r.expect("every fetch reports") {
                Ok(b) => parts.push(b),
                Err(
                    object_store::Error::Precondition { .. } | object_store::Error::NotFound { .. },
                ) => return Err(StoreError::Changed(self.store.url_of(&self.key))),
                Err(e) => return Err(self.store.error(&self.key, e)),
            }
        }
        Ok(ranges
            .iter()
            .map(|r| {
                let r = clip(r);
                if r.is_empty() {
                    return Bytes::new();
                }
                let k = merged.partition_point(|m| m.end < r.end);
                let (m, b) = (&merged[k], &parts[k]);
                b.slice((r.start - m.start) as usize..(r.end - m.start) as usize)
            })
            .collect())
    }
}

impl S3Store {
    /// Version and size without the bytes (`None` if missing).
    fn head(&self, key: &str) -> Result<Option<(Version, u64)>> {
        let path = self.path(key)?;
        let s3 = self.s3.clone();
        match run(async move { s3.head(&path).await }) {
            Ok(m) => Ok(Some((Version(m.e_tag.unwrap_or_default()), m.size))),
            Err(object_store::Error::NotFound { .. }) => Ok(None),
            Err(e) => Err(self.error(key, e)),
        }
    }
}

impl WritableStore for S3Store {
    fn put(&self, key: &str, data: &[u8]) -> Result<Version> {
        match self.put_mode(key, data, PutMode::Overwrite)? {
            PutOutcome::Written(v) => Ok(v),
            PutOutcome::Conflict => unreachable!("an unconditional put cannot conflict"),
        }
    }

    fn put_if_absent(&self, key: &str, data: &[u8]) -> Result<PutOutcome> {
        self.put_mode(key, data, PutMode::Create)
    }

    fn put_if_version(&self, key: &str, data: &[u8], expected: &Version) -> Result<PutOutcome> {
        let v = UpdateVersion {
            e_tag: Some(expected.0.clone()),
            version: None,
        };
        self.put_mode(key, data, PutMode::Update(v))
    }

    fn delete(&self, key: &str) -> Result<()> {
        let path = self.path(key)?;
        let s3 = self.s3.clone();
        match run(async move { s3.delete(&path).await }) {
            Ok(()) | Err(object_store::Error::NotFound { .. }) => Ok(()),
            Err(e) => Err(self.error(key, e)),
        }
    }

    fn delete_prefix(&self, prefix: &str) -> Result<()> {
        validate_prefix(prefix)?;
        let keys = self.list_prefix(prefix)?;
        let paths: Vec<Path> = keys.iter().map(|k| self.path(k)).collect::<Result<_>>()?;
        let s3 = self.s3.clone();
        // Bulk DeleteObjects requests (up to 1000 keys each).
        let results: Vec<object_store::Result<Path>> = run(async move {
            let locations = stream::iter(paths.into_iter().map(Ok)).boxed();
            s3.delete_stream(locations).collect().await
        });
        for r in results {
            match r {
                // Deleted meanwhile by someone else: just as good.
                Ok(_) | Err(object_store::Error::NotFound { .. }) => {}
                Err(e) => return Err(self.error(prefix, e)),
            }
        }
        Ok(())
    }
}

impl ListableStore for S3Store {
    fn list_prefix(&self, prefix: &str) -> Result<Vec<String>> {
        validate_prefix(prefix)?;
        Ok(self
            .list_page(prefix, None, None)?
            .0
            .into_iter()
            .map(|(k, _, _)| k)
            .collect())
    }

    fn list_versions(&self, prefix: &str) -> Result<Option<Vec<(String, Version)>>> {
        validate_prefix(prefix)?;
        Ok(Some(
            self.list_page(prefix, None, None)?
                .0
                .into_iter()
                .map(|(k, _, v)| (k, v))
                .collect(),
        ))
    }

    fn list_dir(&self, prefix: &str) -> Result<(Vec<String>, Vec<String>)> {
        if !prefix.is_empty() && !prefix.ends_with('/') {
            return Err(StoreError::InvalidKey {
                key: prefix.to_string(),
                reason: "list_dir needs an empty or '/'-terminated prefix".into(),
            });
        }
        validate_prefix(prefix)?;
        let (keys, dirs) = self.list_page(prefix, Some("/"), None)?;
        Ok((keys.into_iter().map(|(k, _, _)| k).collect(), dirs))
    }
}

impl Store for S3Store {
    fn location(&self) -> String {
        self.url_of("")
    }

    fn list_sizes(&self, prefix: &str) -> Result<Vec<(String, u64)>> {
        validate_prefix(prefix)?;
        Ok(self
            .list_page(prefix, None, None)?
            .0
            .into_iter()
            .map(|(k, size, _)| (k, size))
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::check_endpoint;

    #[test]
    fn endpoints_object_store_would_panic_on_are_refused() {
        for bad in [
            "127.0.0.1:35667",
            "localhost:9000",
            "s3.amazonaws.com",
            "http://",
            "http://127.0.0.1:99999",
            "http://127.0.0.1:0",
            "http://a b",
            "http://:9000",
        ] {
            assert!(check_endpoint(bad).is_err(), "{bad}");
        }
        for good in [
            "http://127.0.0.1:9000",
            "https://s3.us-east-1.amazonaws.com",
            "http://[::1]:9000/",
            "http://minio/",
        ] {
            assert!(check_endpoint(good).is_ok(), "{good}");
        }
    }
}
