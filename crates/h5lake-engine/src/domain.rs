//! Domains (what h5py calls files) and their metadata documents: groups,
//! links, attributes, committed datatypes.
//!
//! Every metadata change is a read-modify-write of one JSON document guarded
//! by the store's conditional put: a writer that lost a race re-reads and
//! re-applies its change, so concurrent writers (threads, processes, servers)
//! never lose each other's links or attributes. With
//! [`Durability::AtFlush`] the changes collect in the domain's
//! [`crate::journal`] and are committed together (merged with other
//! writers' changes the same way) at [`Domain::flush`].

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use h5lake_store::{LocalStore, PutOutcome, Store, Version};
use serde_json::{json, Map, Value};

use crate::cache::{ChunkCache, DEFAULT_CACHE_BYTES};
use crate::ids::{self, ObjKind};
pub use crate::journal::Durability;
use crate::journal::{Journal, PendingLookup, Touch};
use crate::json::parse_doc;
use crate::link_policy::LinkPolicy;
use crate::{EngineError, Result};

/// How to open a domain (h5py's file modes).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OpenMode {
    /// `r`: must exist, read-only.
    Read,
    /// `r+`: must exist, read-write.
    ReadWrite,
    /// `w`: create, replacing any existing domain.
    Truncate,
    /// `w-` / `x`: create, fail if it exists.
    CreateExclusive,
    /// `a`: read-write if it exists, create otherwise.
    Append,
}

impl OpenMode {
    /// Parses h5py's mode strings.
    ///
    /// # Errors
    /// Unknown modes.
    pub fn parse(mode: &str) -> Result<Self> {
        Ok(match mode {
            "r" => OpenMode::Read,
            "r+" => OpenMode::ReadWrite,
            "w" => OpenMode::Truncate,
            "w-" | "x" => OpenMode::CreateExclusive,
            "a" => OpenMode::Append,
            other => {
                return Err(EngineError::Invalid(format!(
                    "Invalid mode; must be one of r, r+, w, w-, x, a (got {other:?})"
                )))
            }
        })
    }
}

/// Most soft links one path walk follows: a cycle of them ends there.
const MAX_SOFT_LINKS: usize = 40;

/// Most names one path walk follows, soft links' targets included.
const MAX_PATH_STEPS: usize = 4096;

/// Where a walk along an h5path ends (see [`Domain::walk_path`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PathEnd {
    /// The object at the path.
    Found(String),
    /// A name on the way is missing (or names no group).
    Missing,
    /// A soft link (named) that the walk was not to follow.
    SoftLink(String),
    /// An external link (`name`) to `target` in the file or domain `file`;
    /// `rest` is the part of the path after it.
    ExternalLink {
        name: String,
        file: String,
        target: String,
        rest: String,
    },
    /// More soft links on the way than a walk follows (a cycle).
    TooManyLinks,
}

/// Options for opening a domain.
#[derive(Clone, Debug)]
pub struct DomainOptions {
    /// Creation properties of the root group when the domain is created
    /// (e.g. `{"CreateOrder": 1}` for h5py's `track_order`).
    pub root_creation_props: Value,
    /// Decoded-chunk cache budget in bytes (0 = no cache).
    pub chunk_cache_bytes: usize,
    /// Root-group id for a domain being created (HSDS clients such as h5pyd
    /// choose their ids); `None` makes a fresh one.
    pub root_id: Option<String>,
    /// Owner recorded in a created domain (the REST server's authenticated
    /// user); `None` is `$USER`.
    pub owner: Option<String>,
    /// Which files and buckets the domain's links may lead to; `None` is
    /// [`LinkPolicy::for_store_at`] the location opened, with
    /// `allow_local_links`.
    pub link_policy: Option<LinkPolicy>,
    /// Let a store in a bucket link to local files (the user trusts it).
    /// Defaults to whether `H5LAKE_ALLOW_LOCAL_LINKS` is set to `1`, so that
    /// programs reaching stores through the VOL connector can opt in.
    pub allow_local_links: bool,
    /// Where relative `file_uri`s start (HSDS's `root_dir`); `None` is the
    /// directory holding a local store's bucket.
    pub link_base: Option<PathBuf>,
    /// When metadata changes reach the store: at once (the default), or
    /// together at [`Domain::flush`].
    pub durability: Durability,
    /// Parsed documents kept, in bytes of what they cost parsed (see
    /// [`crate::memory::json_cost`]); a document costing more than a
    /// quarter of it is not kept.
    pub doc_cache_bytes: usize,
    /// A cache of parsed documents shared with other domains (a server's
    /// open domains share one within its budget); `None`: one of
    /// `doc_cache_bytes` of its own. (Ids name their domain: domains
    /// sharing a cache never see each other's documents.)
    pub shared_docs: Option<SharedDocs>,
    /// Largest document an edit may leave, in bytes of memory parsed (see
    /// [`crate::memory::json_cost`]): an edit that grows a document past it
    /// is refused
    /// ([`EngineError::TooLarge`]). `None`: no limit. A server sets one, so
    /// that no client can grow an object that every later request must
    /// read whole.
    pub max_doc_bytes: Option<usize>,
}

impl Default for DomainOptions {
    fn default() -> Self {
        DomainOptions {
            root_creation_props: json!({}),
            chunk_cache_bytes: DEFAULT_CACHE_BYTES,
            root_id: None,
            owner: None,
            link_policy: None,
            allow_local_links: std::env::var("H5LAKE_ALLOW_LOCAL_LINKS").is_ok_and(|v| v == "1"),
            link_base: None,
            durability: Durability::EachCall,
            doc_cache_bytes: DEFAULT_DOC_CACHE_BYTES,
            shared_docs: None,
            max_doc_bytes: None,
        }
    }
}

/// Seconds since the epoch, as HSDS records times.
pub fn now() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0)
}

fn default_owner() -> String {
    std::env::var("USER")
        .ok()
        .filter(|u| !u.is_empty())
        .unwrap_or_else(|| "admin".to_string())
}

/// Mode 'w' on an empty regular file (what `tempfile.mkstemp` and
/// `NamedTemporaryFile` leave for a program to fill) takes its place, as
/// native HDF5 truncates it; a file with any content is never touched.
fn replace_empty_file(path: &Path) -> Result<()> {
    match std::fs::symlink_metadata(path) {
        Ok(m) if m.is_file() && m.len() == 0 => std::fs::remove_file(path).map_err(|e| {
            EngineError::Invalid(format!("cannot replace empty file {}: {e}", path.display()))
        }),
        _ => Ok(()),
    }
}

/// Where a local path's domain lives: the bucket directory and the domain
/// path inside it.
///
/// A path inside an HSDS bucket directory (an ancestor holding `db/`) names
/// that bucket's domain, so `h5lake.File("<root_dir>/<bucket>/home/u/f.h5")`
/// opens what HSDS wrote. Any other path is a self-contained store: the
/// directory is its own bucket and holds the domain document at its top.
pub fn resolve_local(path: &Path) -> Result<(PathBuf, String)> {
    let abs = lexically_absolute(path).map_err(|e| {
        EngineError::Invalid(format!("cannot resolve path {}: {e}", path.display()))
    })?;
    if abs.is_file() {
        return Err(EngineError::NotAStore(format!(
            "{} is a file, but neither an h5lake store (a directory) nor an HDF5 file",
            abs.display()
        )));
    }
    if abs.join(".domain.json").is_file() && abs.join("db").is_dir() {
        return Ok((abs, String::new()));
    }
    let inside = |dir: &Path| {
        let rel = abs.strip_prefix(dir).expect("ancestor");
        (dir.to_path_buf(), rel.to_string_lossy().replace('\\', "/"))
    };
    // A bucket that holds no domain yet has no `db/`, but HSDS folders
    // (`.domain.json` without a root) already mark the way down from it.
    let mut top_folder = None;
    let mut cur = abs.parent();
    while let Some(dir) = cur {
        if dir.join("db").is_dir() {
            return Ok(inside(dir));
        }
        if is_folder_doc(&dir.join(".domain.json")) {
            top_folder = Some(dir);
        }
        cur = dir.parent();
    }
    match top_folder.and_then(Path::parent) {
        Some(bucket) => Ok(inside(bucket)),
        None => Ok((abs, String::new())),
    }
}

/// Where in a bucket the store holding `domain_path` is rooted: "" (HSDS's
/// layout, `db/` at the bucket root) unless the domain's objects sit under a
/// prefix of its path (a store served with `h5lake serve --root
/// s3://bucket/prefix`), like [`resolve_local`]'s nearest ancestor with
/// `db/`. An existing domain is found by its root group (one HEAD per
/// level); a new one goes to the deepest prefix that holds a `db/`.
fn s3_store_prefix(bucket: &dyn Store, domain_path: &str) -> Result<String> {
    let ancestors: Vec<&str> = domain_path
        .match_indices('/')
        .map(|(i, _)| &domain_path[..i])
        .collect();
    if ancestors.is_empty() {
        return Ok(String::new());
    }
    let doc = bucket.get(&format!("{domain_path}/.domain.json"))?;
    let root = doc
        .map(|b| parse_doc(&b, domain_path))
        .transpose()?
        .and_then(|d| d.get("root").and_then(Value::as_str).map(str::to_string));
    if let Some(root) = root {
        let db = ids::domain_db_prefix(&root)?;
        if bucket.exists(&format!("{db}.group.json"))? {
            return Ok(String::new());
        }
        for p in ancestors.iter().rev() {
            if bucket.exists(&format!("{p}/{db}.group.json"))? {
                return Ok((*p).to_string());
            }
        }
        return Ok(String::new());
    }
    for p in ancestors.iter().rev() {
        let (keys, dirs) = bucket.list_dir(&format!("{p}/db/"))?;
        if !keys.is_empty() || !dirs.is_empty() {
            return Ok((*p).to_string());
        }
    }
    Ok(String::new())
}

/// `path` made absolute, with `.` and `..` taken out as written (a store
/// at `s.h5l/../x.h5l` is beside `s.h5l`, not inside it; symbolic links
/// are not followed).
///
/// # Errors
/// The working directory cannot be had.
pub fn lexically_absolute(path: &Path) -> std::io::Result<PathBuf> {
    use std::path::Component;
    let mut out = PathBuf::new();
    for c in std::path::absolute(path)?.components() {
        match c {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other),
        }
    }
    Ok(out)
}

/// The store (a domain with a root group) that a new domain or file at
/// `path` (absolute, as [`lexically_absolute`] makes it) would sit inside,
/// if any: HSDS nests domains in
/// folders only, and a store inside a store hides the group of that name
/// from its paths.
pub fn store_around(path: &Path) -> Option<PathBuf> {
    let mut cur = path.parent();
    while let Some(dir) = cur {
        let doc = dir.join(".domain.json");
        if doc.is_file() && !is_folder_doc(&doc) {
            return Some(dir.to_path_buf());
        }
        cur = dir.parent();
    }
    None
}

fn is_folder_doc(path: &Path) -> bool {
    std::fs::read(path)
        .ok()
        .and_then(|b| serde_json::from_slice::<Value>(&b).ok())
        .is_some_and(|v| v.is_object() && v.get("root").is_none())
}

/// The key of the `.domain.json` of `domain_path` ("" = the bucket's own).
fn domain_key_of(domain_path: &str) -> String {
    let domain_path = domain_path.trim_matches('/');
    if domain_path.is_empty() {
        ".domain.json".to_string()
    } else {
        format!("{domain_path}/.domain.json")
    }
}

/// An open domain.
pub struct Domain {
    store: Arc<dyn Store>,
    pub(crate) cache: ChunkCache,
    domain_key: String,
    root_id: String,
    readonly: bool,
    location: String,
    pub(crate) linked_files: crate::linked::LinkedFiles,
    /// Parsed documents by id, each with the store version it was read at:
    /// a repeat lookup costs a version check (one `stat` locally) instead of
    /// a read and a JSON parse, and never returns a stale document.
    docs: Arc<DocCache>,
    /// Other stores opened for virtual datasets' sources.
    pub(crate) virtual_stores: crate::virtual_ds::SourceStores,
    /// Blocks of printf-style series found so far (see
    /// [`crate::virtual_ds::PrintfSeen`]).
    pub(crate) printf_seen: crate::virtual_ds::PrintfSeen,
    /// HDF5 files' datasets linked again because their files changed.
    pub(crate) relinked: crate::hdf5_sources::RelinkedSources,
    /// Pending metadata ([`Durability::AtFlush`]); `store` reads through it.
    journal: Option<Arc<Journal>>,
    /// See [`DomainOptions::max_doc_bytes`].
    max_doc_bytes: Option<usize>,
    /// See [`Domain::extent_seen`].
    extents_seen: std::sync::Mutex<HashMap<String, Vec<u64>>>,
    /// Set by a [`Domain::close`] that could not write: the drop does not
    /// try again.
    closed_failing: std::sync::atomic::AtomicBool,
}

/// Parsed documents kept by default (see [`DomainOptions::doc_cache_bytes`]).
pub const DEFAULT_DOC_CACHE_BYTES: usize = 256 << 20;

/// A cache of parsed documents several domains share (see
/// [`DomainOptions::shared_docs`]).
#[derive(Clone)]
pub struct SharedDocs(Arc<DocCache>);

impl SharedDocs {
    /// A cache of documents costing `bytes` parsed in all.
    pub fn new(bytes: usize) -> Self {
        SharedDocs(Arc::new(DocCache::new(bytes)))
    }
}

impl std::fmt::Debug for SharedDocs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "SharedDocs({} bytes)", self.0.max_bytes)
    }
}

/// See [`Domain::get_doc`]. Bounded by the count of entries
/// ([`DocCache::MAX`]) and by what its documents cost parsed: entries go
/// when either would grow past its bound.
pub(crate) struct DocCache {
    docs: std::sync::Mutex<Costed<Value>>,
    metas: std::sync::Mutex<Costed<crate::dataset::DatasetMeta>>,
    max_bytes: usize,
}

/// Cached values by object id, each with the version it was read at and
/// what it costs; and what they cost in all.
struct Costed<T> {
    map: std::collections::HashMap<String, (Version, Arc<T>, usize)>,
    bytes: usize,
}

impl<T> Default for Costed<T> {
    fn default() -> Self {
        Costed {
            map: std::collections::HashMap::new(),
            bytes: 0,
        }
    }
}

impl DocCache {
    const MAX: usize = 4096;

    fn new(max_bytes: usize) -> Self {
        DocCache {
            docs: Default::default(),
            metas: Default::default(),
            max_bytes,
        }
    }

    /// The value cached for `id` at `version`, with what it costs.
    fn get<T>(
        map: &std::sync::Mutex<Costed<T>>,
        id: &str,
        version: &Version,
    ) -> Option<(Arc<T>, usize)> {
        let c = map.lock().unwrap_or_else(|e| e.into_inner());
        c.map
            .get(id)
            .filter(|(v, _, _)| v == version)
            .map(|(_, t, cost)| (t.clone(), *cost))
    }

    fn forget<T>(map: &std::sync::Mutex<Costed<T>>, id: &str) {
        let mut c = map.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((_, _, cost)) = c.map.remove(id) {
            c.bytes -= cost;
        }
    }

    fn put<T>(
        &self,
        map: &std::sync::Mutex<Costed<T>>,
        id: &str,
        version: Version,
        value: Arc<T>,
        cost: usize,
    ) {
        let mut c = map.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((_, _, old)) = c.map.remove(id) {
            c.bytes -= old;
        }
        if cost > self.max_bytes / 4 {
            return;
        }
        // (Others make room, in no particular order: clearing all of it
        // each time it filled would have every big document read again.)
        while !c.map.is_empty() && (c.map.len() >= Self::MAX || c.bytes + cost > self.max_bytes) {
            let victim = c.map.keys().next().cloned().expect("not empty");
            if let Some((_, _, gone)) = c.map.remove(&victim) {
                c.bytes -= gone;
            }
        }
        c.bytes += cost;
        c.map.insert(id.to_string(), (version, value, cost));
    }

    /// Keeps a document this domain wrote.
    fn put_written(&self, id: &str, version: Version, doc: Arc<Value>) {
        let cost = crate::memory::value_cost(&doc);
        self.put(&self.docs, id, version, doc, cost);
    }
}

impl Drop for Domain {
    /// Pending changes are committed when the last handle goes, as closing
    /// an HDF5 file flushes it. A failure here has no caller to tell: it is
    /// printed.
    fn drop(&mut self) {
        if self.journal.is_some() && !self.readonly && !*self.closed_failing.get_mut() {
            if let Err(e) = self.flush() {
                eprintln!(
                    "h5lake: could not write pending changes to {}: {e}",
                    self.location
                );
            }
        }
    }
}

impl std::fmt::Debug for Domain {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Domain")
            .field("location", &self.location)
            .field("root", &self.root_id)
            .finish()
    }
}

impl Domain {
    /// Opens or creates the domain at a local path (see [`resolve_local`]).
    ///
    /// # Errors
    /// Missing store for `r`/`r+`, existing store for `w-`, a path that is
    /// not a store, I/O trouble.
    pub fn open_local(path: &Path, mode: OpenMode) -> Result<Self> {
        Self::open_local_with(path, mode, &DomainOptions::default())
    }

    /// [`Domain::open_local`] with options.
    ///
    /// # Errors
    /// As [`Domain::open_local`].
    pub fn open_local_with(path: &Path, mode: OpenMode, opts: &DomainOptions) -> Result<Self> {
        if mode == OpenMode::Truncate {
            replace_empty_file(path)?;
        }
        let (bucket, domain_path) = resolve_local(path)?;
        let display = path.display().to_string();
        let creating = matches!(
            mode,
            OpenMode::Truncate | OpenMode::CreateExclusive | OpenMode::Append
        );
        if creating && !bucket.join(domain_key_of(&domain_path)).is_file() {
            let abs = bucket.join(&domain_path);
            if let Some(outer) = store_around(&abs) {
                return Err(EngineError::Invalid(format!(
                    "{display} is inside the store {}; give a path outside any store (a \
                     group of that store is made with create_group)",
                    outer.display()
                )));
            }
        }
        let store: Arc<dyn Store> = if bucket.is_dir() {
            Arc::new(LocalStore::open(&bucket)?)
        } else if creating {
            Arc::new(LocalStore::create(&bucket)?)
        } else {
            return Err(EngineError::StoreNotFound(format!(
                "Unable to open file: no h5lake store at {display} (use mode 'w' or 'a' to create one)"
            )));
        };
        let makes_a_store = matches!(
            mode,
            OpenMode::Truncate | OpenMode::Append | OpenMode::CreateExclusive
        );
        if domain_path.is_empty() && makes_a_store && !store.exists(".domain.json")? {
            // Refuse to take over a directory that holds something else.
            let (keys, dirs) = store.list_dir("")?;
            if !keys.is_empty() || !dirs.is_empty() {
                return Err(EngineError::NotAStore(format!(
                    "{display} is a non-empty directory that is not an h5lake store; refusing to make it one"
                )));
            }
        }
        let mut dom = Self::open_with(store, &domain_path, mode, display, opts)?;
        // Relative `file_uri`s of linked datasets name files below the
        // bucket's parent, as HSDS's `root_dir` does.
        if dom.linked_files.root_dir.is_none() {
            dom.linked_files.root_dir = bucket.parent().map(Path::to_path_buf);
        }
        Ok(dom)
    }

    /// Opens or creates the domain a location names: `s3://bucket/path/name.h5`
    /// is the HSDS domain `path/name.h5` of a store rooted at the bucket
    /// (`<bucket>/path/name.h5/.domain.json`, objects under `db/` at the
    /// bucket root, as HSDS lays them out; S3 settings from the AWS
    /// environment); anything else is a local path ([`Domain::open_local_with`]).
    ///
    /// # Errors
    /// As [`Domain::open_local`]; for S3 also a missing bucket, unusable
    /// configuration (no credentials, unreachable endpoint).
    pub fn open_url_with(url: &str, mode: OpenMode, opts: &DomainOptions) -> Result<Self> {
        let Some(rest) = url.strip_prefix("s3://") else {
            return Self::open_local_with(Path::new(url), mode, opts);
        };
        let (bucket, domain_path) = rest.split_once('/').unwrap_or((rest, ""));
        let domain_path = domain_path.trim_matches('/');
        // The bucket must exist; whether the domain does is the mode's business.
        let store = h5lake_store::open_url(&format!("s3://{bucket}"), true)?;
        let prefix = s3_store_prefix(&*store, domain_path)?;
        if prefix.is_empty() {
            return Self::open_with(store, domain_path, mode, url.to_string(), opts);
        }
        let store = h5lake_store::open_url(&format!("s3://{bucket}/{prefix}"), true)?;
        let inner = &domain_path[prefix.len() + 1..];
        Self::open_with(store, inner, mode, url.to_string(), opts)
    }

    /// Opens or creates the domain `domain_path` ("" = the bucket's own
    /// top-level domain) in `store`.
    ///
    /// # Errors
    /// As [`Domain::open_local`].
    pub fn open(
        store: Arc<dyn Store>,
        domain_path: &str,
        mode: OpenMode,
        location: String,
    ) -> Result<Self> {
        Self::open_with(
            store,
            domain_path,
            mode,
            location,
            &DomainOptions::default(),
        )
    }

    /// [`Domain::open`] with options.
    ///
    /// # Errors
    /// As [`Domain::open_local`].
    pub fn open_with(
        store: Arc<dyn Store>,
        domain_path: &str,
        mode: OpenMode,
        location: String,
        opts: &DomainOptions,
    ) -> Result<Self> {
        let domain_path = domain_path.trim_matches('/');
        if domain_path.split('/').next() == Some("db") && mode != OpenMode::Read {
            // HSDS's layout keeps every domain's objects under the bucket's
            // db/: a domain there would sit among (and be removed with)
            // another store's objects.
            return Err(EngineError::Invalid(format!(
                "{location}: db/ holds the bucket's objects (HSDS's layout); name the store \
                 otherwise"
            )));
        }
        let domain_key = domain_key_of(domain_path);
        let existing = store.get(&domain_key)?;
        let existing = match existing {
            Some(b) => {
                let v = parse_doc(&b, &domain_key)?;
                match v.get("root").and_then(Value::as_str) {
                    Some(r) => Some(r.to_string()),
                    None => {
                        return Err(EngineError::NotAStore(format!(
                            "{location} is a folder, not a domain"
                        )));
                    }
                }
            }
            None => None,
        };
        let policy = opts
            .link_policy
            .clone()
            .unwrap_or_else(|| LinkPolicy::for_store_at(&location, opts.allow_local_links));
        let linked_files = crate::linked::LinkedFiles::new(policy, opts.link_base.clone());
        let mut dom = Domain {
            store,
            cache: ChunkCache::new(opts.chunk_cache_bytes),
            domain_key,
            root_id: String::new(),
            readonly: mode == OpenMode::Read,
            location,
            linked_files,
            docs: opts.shared_docs.as_ref().map_or_else(
                || Arc::new(DocCache::new(opts.doc_cache_bytes)),
                |d| d.0.clone(),
            ),
            virtual_stores: Default::default(),
            printf_seen: Default::default(),
            relinked: Default::default(),
            journal: None,
            max_doc_bytes: opts.max_doc_bytes,
            extents_seen: Default::default(),
            closed_failing: Default::default(),
        };
        let journaled = opts.durability == Durability::AtFlush;
        let attach = move |mut dom: Domain| -> Result<Domain> {
            if journaled {
                let j = Journal::shared(dom.store.clone(), &dom.root_id);
                dom.store = j.clone();
                dom.journal = Some(j);
            } else if let Some(j) = Journal::existing(&*dom.store, &dom.root_id) {
                // This process has changes pending on the domain (an open
                // File): a handle that reads the store itself sees them.
                j.commit()?;
            }
            Ok(dom)
        };
        match (mode, existing) {
            (OpenMode::Read | OpenMode::ReadWrite | OpenMode::Append, Some(root)) => {
                dom.root_id = root;
                attach(dom)
            }
            (OpenMode::Read | OpenMode::ReadWrite, None) => Err(EngineError::StoreNotFound(format!(
                "Unable to open file: no h5lake store at {} (use mode 'w' or 'a' to create one)",
                dom.location
            ))),
            (OpenMode::CreateExclusive, Some(_)) => Err(EngineError::StoreExists(format!(
                "Unable to create file: {} already exists (mode 'w-'/'x' never overwrites; use 'w' to replace it)",
                dom.location
            ))),
            (OpenMode::Truncate, Some(root)) => {
                dom.store.delete(&dom.domain_key)?;
                dom.store.delete_prefix(&ids::domain_db_prefix(&root)?)?;
                dom.create(opts)?;
                attach(dom)
            }
            (_, None) => {
                dom.create(opts)?;
                attach(dom)
            }
        }
    }

    fn create(&mut self, opts: &DomainOptions) -> Result<()> {
        let root = match &opts.root_id {
            // Keys are case-sensitive: upper-case hex would alias a domain.
            Some(id) if ids::is_root_id(id) && !id.chars().any(|c| c.is_ascii_uppercase()) => {
                id.clone()
            }
            Some(id) => {
                return Err(EngineError::Invalid(format!(
                    "{id:?} is not a root group id"
                )))
            }
            None => ids::new_root_id(),
        };
        let t = now();
        let group = json!({
            "id": root, "root": root, "created": t, "lastModified": t,
            "links": {}, "attributes": {}, "creationProperties": opts.root_creation_props,
        });
        self.put_new(&ids::doc_key(&root)?, &group)?;
        let owner = opts.owner.clone().unwrap_or_else(default_owner);
        let mut acls = Map::new();
        acls.insert(
            owner.clone(),
            json!({"create": true, "read": true, "update": true, "delete": true, "readACL": true, "updateACL": true}),
        );
        let domain =
            json!({"root": root, "owner": owner, "acls": acls, "created": t, "lastModified": t});
        match self
            .store
            .put_if_absent(&self.domain_key, &to_bytes(&domain))?
        {
            PutOutcome::Written(_) => {
                self.root_id = root;
                Ok(())
            }
            PutOutcome::Conflict => {
                self.store.delete(&ids::doc_key(&root)?)?;
                Err(EngineError::StoreExists(format!(
                    "Unable to create file: {} was created concurrently",
                    self.location
                )))
            }
        }
    }

    /// Deletes the whole domain: every object under its `db/` prefix, then
    /// its `.domain.json` (in that order, so that a crash in between leaves
    /// a domain that still opens, just emptied, rather than orphaned objects
    /// no domain names). What a local store's `rm -r` does for a directory,
    /// for a domain inside a bucket.
    ///
    /// # Errors
    /// A read-only domain; I/O trouble.
    pub fn delete_domain(self) -> Result<()> {
        self.check_writable()?;
        if let Some(j) = &self.journal {
            j.discard();
        }
        self.store
            .delete_prefix(&ids::domain_db_prefix(&self.root_id)?)?;
        self.store.delete(&self.domain_key)?;
        Ok(())
    }

    /// Renames this domain to `name` in the same folder: the objects are
    /// keyed by the root's id, not by the path, so writing the other
    /// `.domain.json` is the whole move, and readers see the old domain
    /// there or the whole new one. An existing domain called `name` is
    /// replaced only with `replace`; its root id is returned so that the
    /// caller can delete its objects.
    ///
    /// # Errors
    /// [`EngineError::StoreExists`] if a domain is there (without `replace`)
    /// or one appeared or changed meanwhile; I/O trouble.
    pub fn publish_as(self, name: &str, replace: bool) -> Result<Option<String>> {
        self.check_writable()?;
        self.flush()?;
        let doc = to_bytes(&self.domain_doc()?);
        let own_path = self
            .domain_key
            .trim_end_matches(".domain.json")
            .trim_end_matches('/');
        let domain_path = match own_path.rsplit_once('/') {
            Some((folder, _)) => format!("{folder}/{name}"),
            None => name.to_string(),
        };
        let key = domain_key_of(&domain_path);
        let existing = self.store.get_versioned(&key)?;
        let mut old_root = None;
        let outcome = match &existing {
            None => self.store.put_if_absent(&key, &doc)?,
            Some(_) if !replace => PutOutcome::Conflict,
            Some(v) => {
                let old = parse_doc(&v.data, &key)?;
                old_root = old.get("root").and_then(Value::as_str).map(str::to_string);
                if old_root.is_none() {
                    return Err(EngineError::NotAStore(format!(
                        "{domain_path} is a folder; refusing to replace it with a domain"
                    )));
                }
                self.store.put_if_version(&key, &doc, &v.version)?
            }
        };
        if outcome == PutOutcome::Conflict {
            return Err(EngineError::StoreExists(format!(
                "{domain_path} already exists or was changed meanwhile; nothing was replaced"
            )));
        }
        self.store.delete(&self.domain_key)?;
        Ok(old_root.filter(|r| *r != self.root_id))
    }

    /// The domain's stored objects with their sizes in bytes: its
    /// `.domain.json`, then everything under its `db/` prefix, by key.
    ///
    /// # Errors
    /// I/O trouble.
    pub fn stored_sizes(&self) -> Result<Vec<(String, u64)>> {
        let mut out = Vec::new();
        if let Some(doc) = self.store.get(&self.domain_key)? {
            out.push((self.domain_key.clone(), doc.len() as u64));
        }
        out.extend(
            self.store
                .list_sizes(&ids::domain_db_prefix(&self.root_id)?)?,
        );
        Ok(out)
    }

    /// Sets the decoded-chunk cache budget in bytes (0 turns caching off).
    pub fn set_chunk_cache_bytes(&mut self, bytes: usize) {
        self.cache = ChunkCache::new(bytes);
    }

    /// The store underneath.
    pub fn store(&self) -> &Arc<dyn Store> {
        &self.store
    }

    /// The root group's id.
    pub fn root_id(&self) -> &str {
        &self.root_id
    }

    /// Claims `n` consecutive numbers of the domain's counter `name`, the
    /// first at least `at_least`, and returns the first: numbers no two
    /// writers may share (netCDF-4's dimension ids, which are the file's
    /// and not a group's), handed out to writers in threads, processes or
    /// on other machines alike. The counter is an object of h5lake's own
    /// beside the domain's objects, moved on by a conditional put retried
    /// on conflict; it is made durable at once, whatever the domain's
    /// durability.
    ///
    /// # Errors
    /// A read-only domain; a name that is not `[a-z0-9_-]+`; a counter
    /// object that holds no number; I/O trouble.
    pub fn claim_numbers(&self, name: &str, at_least: u64, n: u64) -> Result<u64> {
        self.check_writable()?;
        if name.is_empty()
            || !name
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'_')
        {
            return Err(EngineError::Invalid(format!(
                "counter name {name:?} must be lowercase letters, digits, '-' or '_'"
            )));
        }
        let key = format!(
            "db/{}/.h5lake/counters/{name}",
            ids::parse_id(&self.root_id)?.domain_part
        );
        let past = |first: u64| {
            first.checked_add(n).ok_or_else(|| {
                EngineError::Invalid(format!("counter {name} cannot go past {}", u64::MAX))
            })
        };
        for attempt in 0u32.. {
            let outcome = match self.store.get_versioned(&key)? {
                None => {
                    let first = at_least;
                    (
                        first,
                        self.store
                            .put_if_absent(&key, past(first)?.to_string().as_bytes())?,
                    )
                }
                Some(cur) => {
                    let next: u64 = std::str::from_utf8(&cur.data)
                        .ok()
                        .and_then(|t| t.trim().parse().ok())
                        .ok_or_else(|| {
                            EngineError::Corrupt(format!("counter {key} holds no number"))
                        })?;
                    let first = next.max(at_least);
                    let written = self.store.put_if_version(
                        &key,
                        past(first)?.to_string().as_bytes(),
                        &cur.version,
                    )?;
                    (first, written)
                }
            };
            if let (first, PutOutcome::Written(_)) = outcome {
                return Ok(first);
            }
            backoff(attempt);
        }
        unreachable!("the retry loop only ends by returning")
    }

    /// Whether the domain was opened read-only.
    pub fn readonly(&self) -> bool {
        self.readonly
    }

    /// Where the domain lives, for messages.
    pub fn location(&self) -> &str {
        &self.location
    }

    /// The `.domain.json` document.
    ///
    /// # Errors
    /// I/O trouble; a vanished domain.
    pub fn domain_doc(&self) -> Result<Value> {
        let b = self.store.get(&self.domain_key)?.ok_or_else(|| {
            EngineError::NotFound(format!("domain {} was deleted", self.location))
        })?;
        parse_doc(&b, &self.domain_key)
    }

    pub(crate) fn check_writable(&self) -> Result<()> {
        if self.readonly {
            return Err(EngineError::ReadOnly(format!(
                "{} is open read-only (mode 'r'); reopen it with 'r+' or 'a' to change it",
                self.location
            )));
        }
        Ok(())
    }

    fn check_same_domain(&self, id: &str) -> Result<()> {
        let p = ids::parse_id(id)?;
        if Some(p.domain_part) != self.root_id.get(2..19) {
            return Err(EngineError::NotFound(format!(
                "object {id} does not belong to this domain"
            )));
        }
        Ok(())
    }

    pub(crate) fn put_new(&self, key: &str, doc: &Value) -> Result<()> {
        match self.store.put_if_absent(key, &to_bytes(doc))? {
            PutOutcome::Written(_) => Ok(()),
            PutOutcome::Conflict => Err(EngineError::AlreadyExists(format!(
                "object {key} already exists"
            ))),
        }
    }

    /// An object's document.
    ///
    /// # Errors
    /// [`EngineError::NotFound`] for unknown ids.
    pub fn get_doc(&self, id: &str) -> Result<Value> {
        Ok((*self.doc_versioned(id)?.1).clone())
    }

    /// Whether an object keeps its links and attributes in creation order
    /// (h5py's `track_order`), read without copying its document.
    ///
    /// # Errors
    /// [`EngineError::NotFound`] for unknown ids.
    pub fn tracks_creation_order(&self, id: &str) -> Result<bool> {
        Ok(keeps_creation_order(&self.doc_versioned(id)?.1))
    }

    /// The document with the version it was read at, from the cache when
    /// the store confirms that version is current; of the group it was
    /// merged into, for a group merged into another writer's.
    fn doc_versioned(&self, id: &str) -> Result<(Version, Arc<Value>)> {
        let mut id = std::borrow::Cow::Borrowed(id);
        for _ in 0..MAX_MERGE_HOPS {
            let (version, doc) = self.doc_versioned_here(&id)?;
            match merged_into(&id, &doc) {
                Some(theirs) => id = std::borrow::Cow::Owned(theirs),
                None => return Ok((version, doc)),
            }
        }
        Err(too_many_merges(&id))
    }

    /// [`Domain::doc_versioned`] of this very object (a merged group's own
    /// document, its mark included).
    fn doc_versioned_here(&self, id: &str) -> Result<(Version, Arc<Value>)> {
        self.check_same_domain(id)?;
        let not_found = || EngineError::NotFound(format!("object {id} not found"));
        if let Some(j) = &self.journal {
            match j.pending_doc(id, ids::object_prefix(id).ok().as_deref()) {
                PendingLookup::Found(v, doc) => return Ok((v, doc)),
                PendingLookup::Deleted => return Err(not_found()),
                PendingLookup::NotPending => {}
            }
        }
        self.stored_doc(id)
    }

    /// [`Domain::doc_versioned`] from the store (through the cache).
    fn stored_doc(&self, id: &str) -> Result<(Version, Arc<Value>)> {
        let key = ids::doc_key(id)?;
        let not_found = || EngineError::NotFound(format!("object {id} not found"));
        let version = self.store.version(&key)?.ok_or_else(not_found)?;
        if let Some((doc, cost)) = DocCache::get(&self.docs.docs, id, &version) {
            crate::memory::hold(&key, cost)?;
            return Ok((version, doc));
        }
        let cur = self.store.get_versioned(&key)?.ok_or_else(not_found)?;
        // (Asked before the parse, which is what costs.)
        let cost = crate::memory::json_cost(&cur.data);
        crate::memory::hold(&key, cost)?;
        let doc = Arc::new(parse_doc(&cur.data, &key)?);
        self.docs
            .put(&self.docs.docs, id, cur.version.clone(), doc.clone(), cost);
        Ok((cur.version, doc))
    }

    /// The parsed dataset document, cached like [`Domain::get_doc`].
    pub(crate) fn cached_meta(&self, id: &str) -> Result<Arc<crate::dataset::DatasetMeta>> {
        let key = ids::doc_key(id)?;
        if let Some(version) = self.store.version(&key)? {
            if let Some((m, _)) = DocCache::get(&self.docs.metas, id, &version) {
                return Ok(m);
            }
        }
        let (version, doc) = self.doc_versioned(id)?;
        let m = Arc::new(crate::dataset::DatasetMeta::from_doc(&doc)?);
        // (Bounded by their count: a dataset's description is small.)
        self.docs.put(&self.docs.metas, id, version, m.clone(), 0);
        Ok(m)
    }

    /// Applies `f` to the object's document and commits it with a conditional
    /// put, re-reading and re-applying on conflict. `f` may run several times,
    /// and must leave the document as it found it when it fails (with
    /// [`Durability::AtFlush`] it edits the pending document in place).
    ///
    /// # Errors
    /// Whatever `f` returns; unknown ids; I/O trouble.
    pub fn update_doc<T>(&self, id: &str, f: impl FnMut(&mut Value) -> Result<T>) -> Result<T> {
        self.edit_doc(id, Touch::Unknown, f)
    }

    /// [`Domain::update_doc`] for a change of the named members of a
    /// document's `links` or `attributes` only.
    fn update_members<T>(
        &self,
        id: &str,
        section: &'static str,
        names: &[String],
        f: impl FnMut(&mut Value) -> Result<T>,
    ) -> Result<T> {
        self.edit_doc(id, Touch::Members(section, names), f)
    }

    /// [`Domain::update_doc`] for a change of the named top-level keys of
    /// a document only (say, `shape`).
    pub(crate) fn update_keys<T>(
        &self,
        id: &str,
        keys: &[&str],
        f: impl FnMut(&mut Value) -> Result<T>,
    ) -> Result<T> {
        self.edit_doc(id, Touch::Keys(keys), f)
    }

    /// [`Domain::update_keys`] for a change computed from what the store
    /// holds that must reach it at once, whatever the domain's durability:
    /// another writer may make the same change at the same moment (rows
    /// claimed at a table's end), and a pending copy would let both claim
    /// the same rows.
    pub(crate) fn update_keys_in_store<T>(
        &self,
        id: &str,
        keys: &[&str],
        mut f: impl FnMut(&mut Value) -> Result<T>,
    ) -> Result<T> {
        let Some(j) = &self.journal else {
            return self.update_keys(id, keys, f);
        };
        self.check_writable()?;
        self.check_same_domain(id)?;
        let key = ids::doc_key(id)?;
        let prefix = ids::object_prefix(id).ok();
        let (out, written) = j.edit_in_store(id, &key, prefix.as_deref(), |doc| {
            let out = f(doc)?;
            doc["lastModified"] = json!(now());
            Ok(out)
        })?;
        if let Some((version, doc)) = written {
            self.docs.put_written(id, version, doc);
        }
        Ok(out)
    }

    fn edit_doc<T>(
        &self,
        id: &str,
        touch: Touch<'_>,
        mut f: impl FnMut(&mut Value) -> Result<T>,
    ) -> Result<T> {
        // (Borrowed: every metadata change comes this way.)
        let mut id = std::borrow::Cow::Borrowed(id);
        for _ in 0..MAX_MERGE_HOPS {
            // (A group merged into another writer's is edited there.)
            match self.edit_doc_here(&id, touch, &mut f)? {
                Edit::Done(out) => return Ok(out),
                Edit::MergedInto(theirs) => id = std::borrow::Cow::Owned(theirs),
            }
        }
        Err(too_many_merges(&id))
    }

    /// [`Domain::edit_doc`] of this very object, unless it is a group
    /// merged into another.
    fn edit_doc_here<T>(
        &self,
        id: &str,
        touch: Touch<'_>,
        f: &mut impl FnMut(&mut Value) -> Result<T>,
    ) -> Result<Edit<T>> {
        self.check_writable()?;
        self.check_same_domain(id)?;
        let key = ids::doc_key(id)?;
        if let Some(j) = &self.journal {
            let prefix = ids::object_prefix(id).ok();
            let merged = std::cell::RefCell::new(None);
            let base = || {
                // The journal edits this document in place from now on:
                // the cache lets go of it, so that it is not copied.
                let got = self.stored_doc(id)?;
                if let Some(theirs) = merged_into(id, &got.1) {
                    *merged.borrow_mut() = Some(theirs);
                    return Err(EngineError::NotFound(format!("group {id} was merged")));
                }
                DocCache::forget(&self.docs.docs, id);
                Ok(got)
            };
            let edited = j.edit(id, &key, prefix.as_deref(), touch, base, |doc| {
                let out = f(doc)?;
                doc["lastModified"] = json!(now());
                Ok(out)
            });
            if let Some(theirs) = merged.into_inner() {
                return Ok(Edit::MergedInto(theirs));
            }
            let out = edited?;
            self.commit_if_over_budget()?;
            return Ok(Edit::Done(out));
        }
        for attempt in 0u32.. {
            // The parsed document of the version the store has now (from the
            // cache when it is the one this domain last wrote or read): the
            // conditional put below is what makes the change safe.
            let (version, cur) = self.doc_versioned_here(id)?;
            if let Some(theirs) = merged_into(id, &cur) {
                return Ok(Edit::MergedInto(theirs));
            }
            let mut doc = (*cur).clone();
            let out = f(&mut doc)?;
            doc["lastModified"] = json!(now());
            self.check_doc_size(id, &doc, &cur)?;
            drop(cur);
            let text = to_bytes(&doc);
            match self.store.put_if_version(&key, &text, &version)? {
                PutOutcome::Written(written) => {
                    self.docs.put_written(id, written, Arc::new(doc));
                    return Ok(Edit::Done(out));
                }
                PutOutcome::Conflict => backoff(attempt),
            }
        }
        unreachable!("the retry loop only ends by returning")
    }

    /// Refuses an edit that grows the document of `id` (to `after`) past
    /// [`DomainOptions::max_doc_bytes`] of memory parsed (one that shrinks
    /// a document already past it goes).
    fn check_doc_size(&self, id: &str, after: &Value, before: &Value) -> Result<()> {
        let Some(max) = self.max_doc_bytes else {
            return Ok(());
        };
        let cost = crate::memory::value_cost(after);
        if cost <= max || cost <= crate::memory::value_cost(before) {
            return Ok(());
        }
        Err(EngineError::TooLarge(format!(
            "this change would make the document of {id} take {cost} bytes of memory, past \
             the {max} bytes allowed for one object: keep big values in datasets, or spread \
             links and attributes over more groups"
        )))
    }

    fn new_object(&self, kind: ObjKind, id: Option<&str>, mut doc: Value) -> Result<String> {
        self.check_writable()?;
        let id = match id {
            Some(id) => {
                let p = ids::parse_id(id)
                    .map_err(|_| EngineError::Invalid(format!("invalid object id {id:?}")))?;
                if p.kind != kind
                    || ids::is_root_id(id)
                    || id[2..].chars().any(|c| c.is_ascii_uppercase())
                {
                    return Err(EngineError::Invalid(format!(
                        "id {id:?} does not name a new {kind:?}"
                    )));
                }
                if Some(p.domain_part) != self.root_id.get(2..19) {
                    return Err(EngineError::Invalid(format!(
                        "id {id:?} is not valid for root {}",
                        self.root_id
                    )));
                }
                id.to_string()
            }
            None => ids::new_id(kind, &self.root_id),
        };
        let t = now();
        doc["id"] = json!(id);
        doc["root"] = json!(self.root_id);
        doc["created"] = json!(t);
        doc["lastModified"] = json!(t);
        if doc.get("attributes").is_none() {
            doc["attributes"] = json!({});
        }
        let key = ids::doc_key(&id)?;
        if let Some(j) = &self.journal {
            j.create(&id, key, ids::object_prefix(&id)?, doc);
            self.commit_if_over_budget()?;
        } else {
            self.put_new(&key, &doc)?;
        }
        Ok(id)
    }

    /// Makes every pending metadata change durable (see
    /// [`Durability::AtFlush`]); nothing to do for a domain whose changes
    /// are durable at once.
    ///
    /// # Errors
    /// I/O trouble (what was not written stays pending, and the next flush
    /// tries again); a link name another writer made too.
    pub fn flush(&self) -> Result<()> {
        let Some(j) = &self.journal else {
            return Ok(());
        };
        // The documents written, edits of existing ones last: those (a
        // big group's, say) are kept parsed; a flood of new objects' is
        // not let push them out of the cache.
        for (id, version, doc) in j.commit()?.into_iter().rev().take(DocCache::MAX / 4) {
            if ids::parse_id(&id).is_ok() {
                self.docs.put_written(&id, version, doc);
            }
        }
        Ok(())
    }

    /// Writes pending changes as the handle is let go. When they cannot be
    /// written the error says so, and nothing is tried again as the handle
    /// goes (its drop would wait out the same failure and print it).
    ///
    /// # Errors
    /// As [`Domain::flush`].
    pub fn close(&self) -> Result<()> {
        let flushed = self.flush();
        if flushed.is_err() {
            self.closed_failing
                .store(true, std::sync::atomic::Ordering::Relaxed);
        }
        flushed
    }

    /// Writes what every domain of this process has pending (changes
    /// kept for the flush), from a thread of its own: for a front end to
    /// call when its program ends without closing what it opened (the
    /// VOL connector's exit handler).
    ///
    /// # Errors
    /// The first commit that failed (the others are still tried).
    pub fn flush_all_pending() -> Result<()> {
        crate::journal::Journal::commit_all()
    }

    /// When metadata changes become durable.
    pub fn durability(&self) -> Durability {
        if self.journal.is_some() {
            Durability::AtFlush
        } else {
            Durability::EachCall
        }
    }

    fn commit_if_over_budget(&self) -> Result<()> {
        match &self.journal {
            Some(j) if j.over_budget() => self.flush(),
            _ => Ok(()),
        }
    }

    /// Creates an unlinked group.
    ///
    /// # Errors
    /// Read-only domain; I/O trouble.
    pub fn create_group(&self, creation_props: Value) -> Result<String> {
        self.create_group_with_id(None, creation_props)
    }

    /// [`Domain::create_group`] with a caller-chosen id (HSDS clients pick
    /// ids so that they can batch creations).
    ///
    /// # Errors
    /// An id of another kind or domain, or one that exists; as [`Domain::create_group`].
    pub fn create_group_with_id(&self, id: Option<&str>, creation_props: Value) -> Result<String> {
        self.new_object(
            ObjKind::Group,
            id,
            json!({"links": {}, "attributes": {}, "creationProperties": creation_props}),
        )
    }

    /// Creates an unlinked committed datatype.
    ///
    /// # Errors
    /// Invalid type JSON; read-only domain.
    pub fn create_datatype(&self, type_json: Value) -> Result<String> {
        self.create_datatype_with_id(None, type_json)
    }

    /// [`Domain::create_datatype`] with a caller-chosen id.
    ///
    /// # Errors
    /// As [`Domain::create_group_with_id`] and [`Domain::create_datatype`].
    pub fn create_datatype_with_id(&self, id: Option<&str>, type_json: Value) -> Result<String> {
        h5lake_types::Datatype::from_json(&type_json)?;
        self.new_object(ObjKind::Datatype, id, json!({"type": type_json}))
    }

    pub(crate) fn new_dataset_doc(&self, id: Option<&str>, doc: Value) -> Result<String> {
        self.new_object(ObjKind::Dataset, id, doc)
    }

    /// Removes an object's document and everything stored under it (chunks).
    /// Links pointing at it are not touched.
    ///
    /// # Errors
    /// The root group; read-only domain; I/O trouble.
    pub fn delete_object(&self, id: &str) -> Result<()> {
        self.check_writable()?;
        self.check_same_domain(id)?;
        if ids::is_root_id(id) {
            return Err(EngineError::Invalid(
                "the root group cannot be deleted".into(),
            ));
        }
        self.store.delete_prefix(&ids::object_prefix(id)?)?;
        Ok(())
    }

    // ---- links ---------------------------------------------------------------

    /// Adds a link to a group.
    ///
    /// # Errors
    /// An existing name ([`EngineError::AlreadyExists`]); a bad name or link.
    pub fn link_create(&self, group_id: &str, name: &str, link: Value) -> Result<()> {
        self.links_create(group_id, vec![(name.to_string(), link)], false)
    }

    /// Adds several links to a group in one document update, so that a
    /// batch costs one write however many links it holds. With `replace`,
    /// existing names are overwritten; otherwise any existing name fails the
    /// whole batch and nothing is written.
    ///
    /// # Errors
    /// As [`Domain::link_create`].
    /// The rule every file or store this domain's links lead to must pass
    /// (external links are followed by the front ends, which ask it).
    pub fn link_policy(&self) -> &LinkPolicy {
        &self.linked_files.policy
    }

    /// The directory relative `file_uri`s of linked datasets are found
    /// under (HSDS's `root_dir`: a local bucket's parent), if any.
    pub fn linked_root_dir(&self) -> Option<&Path> {
        self.linked_files.root_dir.as_deref()
    }

    /// Checks, without writing anything, that `links_create(group_id,
    /// [(name, …)], false)` could add `name`: a valid name, a group of this
    /// domain, no link of that name yet. What lets a request that makes an
    /// object and links it fail before the object is made.
    ///
    /// # Errors
    /// As [`Domain::links_create`] would fail for them.
    pub fn check_new_link(&self, group_id: &str, name: &str) -> Result<()> {
        check_name(name, "link")?;
        if !group_id.starts_with("g-") {
            return Err(EngineError::Invalid(format!(
                "links are made in groups, and {group_id} is not one"
            )));
        }
        let (_, doc) = self.doc_versioned(group_id)?;
        if doc.get("links").and_then(|l| l.get(name)).is_some() {
            return Err(EngineError::AlreadyExists(format!(
                "Unable to create link (name already exists): {name:?}"
            )));
        }
        Ok(())
    }

    /// Checks, without writing anything, that links of these names and
    /// descriptions could be made by [`Domain::links_create`] (whatever
    /// their group holds): valid names, well-formed links, hard links to
    /// objects of this domain.
    ///
    /// # Errors
    /// As [`Domain::links_create`] would refuse them.
    pub fn check_links<'a>(
        &self,
        items: impl IntoIterator<Item = (&'a str, &'a Value)>,
    ) -> Result<()> {
        for (name, link) in items {
            check_name(name, "link")?;
            check_link(link)?;
            if let Some(target) = link.get("id").and_then(Value::as_str) {
                ids::parse_id(target)?;
                // As in HDF5, a hard link stays inside its file: one that
                // named another domain's object could never be followed.
                if self.check_same_domain(target).is_err() {
                    return Err(EngineError::Invalid(format!(
                        "a hard link cannot reach {target}, an object of another domain \
                         (use an external link)"
                    )));
                }
            }
        }
        Ok(())
    }

    pub fn links_create(
        &self,
        group_id: &str,
        items: Vec<(String, Value)>,
        replace: bool,
    ) -> Result<()> {
        let t = now();
        self.check_links(items.iter().map(|(n, l)| (n.as_str(), l)))?;
        let mut checked = Vec::with_capacity(items.len());
        for (name, mut link) in items {
            if link.get("created").and_then(Value::as_f64).is_none() {
                link["created"] = json!(t);
            }
            checked.push((name, link));
        }
        let names: Vec<String> = checked.iter().map(|(n, _)| n.clone()).collect();
        self.update_members(group_id, "links", &names, |doc| {
            let ordered = keeps_creation_order(doc);
            let links = member_map(doc, "links", group_id)?;
            if !replace {
                if let Some((name, _)) = checked.iter().find(|(n, _)| links.contains_key(n)) {
                    return Err(EngineError::AlreadyExists(format!(
                        "Unable to create link (name already exists): {name:?}"
                    )));
                }
            }
            for (name, link) in &checked {
                remove_member(links, name, ordered);
                links.insert(name.clone(), link.clone());
            }
            Ok(())
        })
    }

    /// Walks `path` (absolute, or relative to the group `start`) along hard
    /// links, and soft links when `follow_soft` (a relative target from the
    /// group holding the link), to where it ends: the object, a missing
    /// name, a soft link not to be followed, an external link (for the
    /// caller to follow or refuse), or a cycle of soft links.
    ///
    /// # Errors
    /// I/O trouble; an unknown start group.
    pub fn walk_path(&self, start: &str, path: &str, follow_soft: bool) -> Result<PathEnd> {
        let steps = |p: &str| -> Vec<String> {
            p.split('/')
                .filter(|p| !p.is_empty())
                .rev()
                .map(str::to_string)
                .collect()
        };
        let mut id = if path.starts_with('/') {
            self.root_id().to_string()
        } else {
            start.to_string()
        };
        let mut todo = steps(path);
        let mut hops = 0;
        let mut walked = 0;
        while let Some(name) = todo.pop() {
            // (Soft links of long paths through a group linked to itself
            // would otherwise walk millions of names for one request.)
            walked += 1;
            if walked > MAX_PATH_STEPS {
                return Ok(PathEnd::TooManyLinks);
            }
            if !id.starts_with("g-") {
                return Ok(PathEnd::Missing);
            }
            let link = match self.link_get(&id, &name) {
                Ok(l) => l,
                Err(EngineError::NotFound(_)) => return Ok(PathEnd::Missing),
                Err(e) => return Err(e),
            };
            let text = |k: &str| link.get(k).and_then(Value::as_str).unwrap_or_default();
            match text("class") {
                "H5L_TYPE_HARD" => id = text("id").to_string(),
                "H5L_TYPE_SOFT" if follow_soft => {
                    hops += 1;
                    if hops > MAX_SOFT_LINKS {
                        return Ok(PathEnd::TooManyLinks);
                    }
                    let target = text("h5path");
                    if target.starts_with('/') {
                        id = self.root_id().to_string();
                    }
                    todo.extend(steps(target));
                }
                "H5L_TYPE_SOFT" => return Ok(PathEnd::SoftLink(name)),
                _ => {
                    let file = match text("h5domain") {
                        "" => text("file"),
                        f => f,
                    };
                    let rest: Vec<&str> = todo.iter().rev().map(String::as_str).collect();
                    return Ok(PathEnd::ExternalLink {
                        file: file.to_string(),
                        target: text("h5path").to_string(),
                        rest: rest.join("/"),
                        name,
                    });
                }
            }
        }
        Ok(PathEnd::Found(id))
    }

    /// Renames a link within its group in one document update (HDF5's
    /// `H5Lmove` inside a group): atomic, and the object it leads to is
    /// never without a link. The link is made anew, so it takes the last
    /// place in creation order and a new creation time.
    ///
    /// # Errors
    /// [`EngineError::NotFound`] without a link `old`;
    /// [`EngineError::AlreadyExists`] when `new` is taken; a bad name.
    pub fn link_rename(&self, group_id: &str, old: &str, new: &str) -> Result<()> {
        check_name(new, "link")?;
        if old == new {
            return self.link_get(group_id, old).map(drop);
        }
        let t = now();
        let names = [old.to_string(), new.to_string()];
        self.update_members(group_id, "links", &names, |doc| {
            let ordered = keeps_creation_order(doc);
            let links = member_map(doc, "links", group_id)?;
            if links.contains_key(new) {
                return Err(EngineError::AlreadyExists(format!(
                    "Unable to move link (name already exists): {new:?}"
                )));
            }
            let mut link = remove_member(links, old, ordered).ok_or_else(|| {
                EngineError::NotFound(format!("Unable to move link {old:?} (no such link)"))
            })?;
            link["created"] = json!(t);
            links.insert(new.to_string(), link);
            Ok(())
        })
    }

    /// Moves a link to another group of this domain (HDF5's `H5Lmove`
    /// between groups). The new link is made before the old one is
    /// removed, so a crash between the two leaves the object linked from
    /// both, never from neither. The old link is removed only if it still
    /// leads where it led when the move began: when another writer moved,
    /// deleted or replaced it meanwhile, the new link is taken back and the
    /// move fails. (With deferred durability the same rules are kept at
    /// the commit, against what other writers committed meanwhile.)
    ///
    /// # Errors
    /// [`EngineError::NotFound`] without a link `old`;
    /// [`EngineError::AlreadyExists`] when `new` is taken or the link was
    /// changed meanwhile; a bad name.
    pub fn link_move(&self, from: &str, old: &str, to: &str, new: &str) -> Result<()> {
        if from == to {
            return self.link_rename(from, old, new);
        }
        let link = self.link_get(from, old)?;
        let moved_group = hard_link_target(&link)
            .filter(|i| i.starts_with("g-"))
            .map(str::to_string);
        let inside = |d: &Self| match &moved_group {
            Some(g) => move_may_detach(g, to, d.root_id(), |id| match d.doc_versioned(id) {
                Ok((_, doc)) => Ok(Some(doc)),
                Err(EngineError::NotFound(_)) => Ok(None),
                Err(e) => Err(e),
            }),
            None => Ok(false),
        };
        let refused_inside = || {
            EngineError::Invalid(format!(
                "Unable to move link {old:?}: its destination is inside the group it leads \
                 to, which would leave that group out of the tree; it was not moved"
            ))
        };
        if inside(self)? {
            return Err(refused_inside());
        }
        self.links_create(to, vec![(new.to_string(), link_target(&link))], false)?;
        // Asked again once the new link is in: of two writers moving two
        // groups each into the other, at least one sees the other's link
        // here and takes its own back.
        let removed = if inside(self)? {
            Err(refused_inside())
        } else {
            let names = [old.to_string()];
            self.update_members(from, "links", &names, |doc| {
                let ordered = keeps_creation_order(doc);
                let links = member_map(doc, "links", from)?;
                if !links.get(old).is_some_and(|l| same_link_target(l, &link)) {
                    return Err(EngineError::AlreadyExists(format!(
                        "Unable to move link {old:?}: another writer moved, deleted or replaced \
                     it meanwhile; it was not moved"
                    )));
                }
                remove_member(links, old, ordered);
                Ok(())
            })
        };
        if let Err(e) = removed {
            let names = [new.to_string()];
            self.update_members(to, "links", &names, |doc| {
                let ordered = keeps_creation_order(doc);
                let links = member_map(doc, "links", to)?;
                if links.get(new).is_some_and(|l| same_link_target(l, &link)) {
                    remove_member(links, new, ordered);
                }
                Ok(())
            })?;
            return Err(e);
        }
        Ok(())
    }

    /// The extent of dataset `id` as this handle's front end last saw it:
    /// `current` (the extent in the store now) the first time, then the
    /// same until [`Domain::see_extent`]. HDF5's handles keep a dataset's
    /// dataspace from its open until a refresh or their own resize, and
    /// programs size buffers from it: another process growing the dataset
    /// meanwhile must not grow what a read of "all of it" writes.
    pub fn extent_seen(&self, id: &str, current: &[u64]) -> Vec<u64> {
        let mut seen = self.extents_seen.lock().unwrap_or_else(|e| e.into_inner());
        seen.entry(id.to_string())
            .or_insert_with(|| current.to_vec())
            .clone()
    }

    /// Makes `dims` the extent of dataset `id` this handle sees (after
    /// its own resize, or a refresh).
    pub fn see_extent(&self, id: &str, dims: &[u64]) {
        let mut seen = self.extents_seen.lock().unwrap_or_else(|e| e.into_inner());
        seen.insert(id.to_string(), dims.to_vec());
    }

    /// One link of a group.
    ///
    /// # Errors
    /// [`EngineError::NotFound`] if the group has no such link.
    pub fn link_get(&self, group_id: &str, name: &str) -> Result<Value> {
        let doc = self.doc_versioned(group_id)?.1;
        member_ref(&doc, "links", group_id)?
            .and_then(|links| links.get(name))
            .cloned()
            .ok_or_else(|| {
                EngineError::NotFound(format!("Unable to find link {name:?} (no such link)"))
            })
    }

    /// Removes a link.
    ///
    /// # Errors
    /// [`EngineError::NotFound`] if the group has no such link.
    pub fn link_delete(&self, group_id: &str, name: &str) -> Result<()> {
        self.links_delete(group_id, &[name.to_string()])
    }

    /// Removes several links in one document update; a missing name fails
    /// the whole batch and nothing is removed.
    ///
    /// # Errors
    /// As [`Domain::link_delete`].
    pub fn links_delete(&self, group_id: &str, names: &[String]) -> Result<()> {
        let targets = self.update_members(group_id, "links", names, |doc| {
            let ordered = keeps_creation_order(doc);
            let links = member_map(doc, "links", group_id)?;
            if let Some(name) = names.iter().find(|n| !links.contains_key(*n)) {
                return Err(EngineError::NotFound(format!(
                    "Unable to delete link {name:?} (no such link)"
                )));
            }
            let mut targets = Vec::new();
            for name in names {
                let Some(link) = remove_member(links, name, ordered) else {
                    continue;
                };
                if let Some(id) = hard_link_target(&link) {
                    targets.push(id.to_string());
                }
            }
            Ok(targets)
        })?;
        for id in targets {
            self.mark_maybe_unlinked(&id)?;
        }
        Ok(())
    }

    /// Notes on an object that a hard link to it was removed. HDF5 frees an
    /// object with its last link, so a reference to it fails from then on;
    /// h5lake keeps the object (as HSDS does: other writers may still link
    /// it by id) and asks [`Domain::check_linked`] when a reference is
    /// followed. The mark only says "look before trusting a reference".
    fn mark_maybe_unlinked(&self, id: &str) -> Result<()> {
        if ids::is_root_id(id) || self.check_same_domain(id).is_err() {
            return Ok(());
        }
        match self.update_keys(id, &["h5lake"], |doc| {
            if !doc.get("h5lake").is_some_and(Value::is_object) {
                doc["h5lake"] = json!({});
            }
            doc["h5lake"]["unlinked"] = json!(true);
            Ok(())
        }) {
            Err(EngineError::NotFound(_)) => Ok(()),
            other => other,
        }
    }

    /// Whether a reference to `id` still leads somewhere, as HDF5 sees it:
    /// the object exists and, if one of its hard links was ever removed,
    /// some group still holds a hard link to it (found by walking the
    /// domain's groups from the root, which happens only for such objects).
    ///
    /// # Errors
    /// [`EngineError::NotFound`] when the object is gone or no link leads
    /// to it any more.
    pub fn check_linked(&self, id: &str) -> Result<()> {
        // Every reference followed comes here: look at the cached document,
        // don't copy it.
        let (_, doc) = self.doc_versioned(id)?;
        if doc.pointer("/h5lake/unlinked") != Some(&Value::Bool(true)) || ids::is_root_id(id) {
            return Ok(());
        }
        let mut seen = std::collections::HashSet::from([self.root_id.clone()]);
        let mut todo = vec![self.root_id.clone()];
        while let Some(g) = todo.pop() {
            for (_, link) in self.links(&g)? {
                let Some(t) = hard_link_target(&link) else {
                    continue;
                };
                if t == id {
                    if !self.readonly() {
                        // Linked again (a move, a new hard link): forget the mark.
                        self.update_keys(id, &["h5lake"], |doc| {
                            if let Some(m) = doc.get_mut("h5lake").and_then(Value::as_object_mut) {
                                m.remove("unlinked");
                            }
                            Ok(())
                        })?;
                    }
                    return Ok(());
                }
                if t.starts_with("g-") && seen.insert(t.to_string()) {
                    todo.push(t.to_string());
                }
            }
        }
        Err(EngineError::NotFound(format!(
            "object {id} has been deleted (no link leads to it)"
        )))
    }

    /// All links of a group in creation order.
    ///
    /// # Errors
    /// Unknown group.
    pub fn links(&self, group_id: &str) -> Result<Vec<(String, Value)>> {
        let doc = self.doc_versioned(group_id)?.1;
        Ok(member_ref(&doc, "links", group_id)?
            .map(|links| links.iter().map(|(k, v)| (k.clone(), v.clone())).collect())
            .unwrap_or_default())
    }

    /// The names of a group's links in creation order.
    ///
    /// # Errors
    /// Unknown group.
    pub fn link_names(&self, group_id: &str) -> Result<Vec<String>> {
        let doc = self.doc_versioned(group_id)?.1;
        Ok(member_ref(&doc, "links", group_id)?
            .map(|links| links.keys().cloned().collect())
            .unwrap_or_default())
    }

    // ---- attributes ----------------------------------------------------------

    /// Creates (or with `overwrite`, replaces) an attribute.
    ///
    /// # Errors
    /// Existing name without `overwrite`; invalid type, shape or value.
    pub fn attr_create(
        &self,
        obj_id: &str,
        name: &str,
        attr: Value,
        overwrite: bool,
    ) -> Result<()> {
        self.attrs_create(obj_id, vec![(name.to_string(), attr)], overwrite)
    }

    /// Creates several attributes of one object in one document update; an
    /// existing name without `overwrite` fails the whole batch.
    ///
    /// # Errors
    /// As [`Domain::attr_create`].
    pub fn attrs_create(
        &self,
        obj_id: &str,
        items: Vec<(String, Value)>,
        overwrite: bool,
    ) -> Result<()> {
        let t = now();
        check_attrs(items.iter().map(|(n, a)| (n.as_str(), a)))?;
        let mut checked = Vec::with_capacity(items.len());
        for (name, mut attr) in items {
            if attr.get("created").and_then(Value::as_f64).is_none() {
                attr["created"] = json!(t);
            }
            checked.push((name, attr));
        }
        let names: Vec<String> = checked.iter().map(|(n, _)| n.clone()).collect();
        self.update_members(obj_id, "attributes", &names, |doc| {
            let ordered = keeps_creation_order(doc);
            let attrs = member_map(doc, "attributes", obj_id)?;
            if !overwrite {
                if let Some((name, _)) = checked.iter().find(|(n, _)| attrs.contains_key(n)) {
                    return Err(EngineError::AlreadyExists(format!(
                        "Unable to create attribute (name already exists): {name:?}"
                    )));
                }
            }
            for (name, attr) in &checked {
                remove_member(attrs, name, ordered);
                attrs.insert(name.clone(), attr.clone());
            }
            Ok(())
        })
    }

    /// One attribute.
    ///
    /// # Errors
    /// [`EngineError::NotFound`] if missing.
    pub fn attr_get(&self, obj_id: &str, name: &str) -> Result<Value> {
        let doc = self.doc_versioned(obj_id)?.1;
        member_ref(&doc, "attributes", obj_id)?
            .and_then(|attrs| attrs.get(name))
            .cloned()
            .ok_or_else(|| {
                EngineError::NotFound(format!(
                    "Can't open attribute (can't locate attribute: {name:?})"
                ))
            })
    }

    /// Removes an attribute.
    ///
    /// # Errors
    /// [`EngineError::NotFound`] if missing.
    pub fn attr_delete(&self, obj_id: &str, name: &str) -> Result<()> {
        self.attrs_delete(obj_id, &[name.to_string()])
    }

    /// Removes several attributes in one document update; a missing name
    /// fails the whole batch and nothing is removed.
    ///
    /// # Errors
    /// As [`Domain::attr_delete`].
    pub fn attrs_delete(&self, obj_id: &str, names: &[String]) -> Result<()> {
        self.update_members(obj_id, "attributes", names, |doc| {
            let ordered = keeps_creation_order(doc);
            let attrs = member_map(doc, "attributes", obj_id)?;
            if let Some(name) = names.iter().find(|n| !attrs.contains_key(*n)) {
                return Err(EngineError::NotFound(format!(
                    "Can't delete attribute (can't locate attribute: {name:?})"
                )));
            }
            for name in names {
                remove_member(attrs, name, ordered);
            }
            Ok(())
        })
    }

    /// Attribute names in creation order.
    ///
    /// # Errors
    /// Unknown object.
    pub fn attr_names(&self, obj_id: &str) -> Result<Vec<String>> {
        let doc = self.doc_versioned(obj_id)?.1;
        Ok(member_ref(&doc, "attributes", obj_id)?
            .map(|attrs| attrs.keys().cloned().collect())
            .unwrap_or_default())
    }
}

/// Checks, without writing anything, that attributes of these names and
/// descriptions could be made by [`Domain::attrs_create`] on any object:
/// valid names, a type and a shape each.
///
/// # Errors
/// As [`Domain::attrs_create`] would refuse them.
pub fn check_attrs<'a>(items: impl IntoIterator<Item = (&'a str, &'a Value)>) -> Result<()> {
    for (name, attr) in items {
        if name.is_empty() || name.contains('\0') {
            return Err(EngineError::Invalid(format!(
                "invalid attribute name {name:?}: names are non-empty and contain no NUL"
            )));
        }
        let ty = attr
            .get("type")
            .ok_or_else(|| EngineError::Invalid("attribute without type".into()))?;
        if !ty.as_str().is_some_and(|s| s.starts_with("t-")) {
            h5lake_types::Datatype::from_json(ty)?;
        }
        h5lake_types::Shape::from_json(
            attr.get("shape")
                .ok_or_else(|| EngineError::Invalid("attribute without shape".into()))?,
        )?;
    }
    Ok(())
}

/// Most groups one merged group leads through (each merged into the next).
const MAX_MERGE_HOPS: usize = 32;

/// The error for a chain of merged groups past [`MAX_MERGE_HOPS`] (a
/// damaged store: each merge leads to a group made earlier).
fn too_many_merges(id: &str) -> EngineError {
    EngineError::Corrupt(format!(
        "group {id}: merged into other groups more than {MAX_MERGE_HOPS} times"
    ))
}

/// What an edit of one document came to.
enum Edit<T> {
    Done(T),
    /// The document is of a group merged into this one: edit that.
    MergedInto(String),
}

/// The group a group's document says it was merged into (a group two
/// writers made under one name, see the journal's `merge_new_group`).
fn merged_into(id: &str, doc: &Value) -> Option<String> {
    if !id.starts_with("g-") {
        return None;
    }
    doc.get("h5lake")?
        .get(crate::journal::MERGED_INTO)?
        .as_str()
        .filter(|theirs| *theirs != id && theirs.starts_with("g-"))
        .map(str::to_string)
}

pub(crate) fn to_bytes(v: &Value) -> Vec<u8> {
    serde_json::to_vec(v).expect("JSON values always serialize")
}

/// Exponential-ish backoff with jitter for conflicting conditional writes.
pub(crate) fn backoff(attempt: u32) {
    use rand::Rng;
    if attempt < 2 {
        std::thread::yield_now();
        return;
    }
    let cap = 1u64 << attempt.min(10);
    // (From the OS: forked writers must not retry in step.)
    let micros = rand::rngs::OsRng.gen_range(0..cap * 50);
    std::thread::sleep(std::time::Duration::from_micros(micros));
}

/// Whether an object keeps its links and attributes in creation order
/// (h5py's `track_order`): only then does their order in the document
/// mean anything; otherwise they are listed by name.
fn keeps_creation_order(doc: &Value) -> bool {
    doc.get("creationProperties").is_some_and(|cp| {
        ["CreateOrder", "track_order"].iter().any(|k| {
            cp.get(*k)
                .is_some_and(|v| v.as_bool() == Some(true) || v.as_u64().is_some_and(|n| n != 0))
        })
    })
}

/// Removes a member, keeping the others' order when it means something
/// (a shift, which costs the size of the map), or in constant time.
fn remove_member(map: &mut Map<String, Value>, name: &str, ordered: bool) -> Option<Value> {
    if ordered {
        map.shift_remove(name)
    } else {
        map.swap_remove(name)
    }
}

fn member_map<'a>(doc: &'a mut Value, key: &str, id: &str) -> Result<&'a mut Map<String, Value>> {
    if member_ref(doc, key, id)?.is_none() {
        doc[key] = json!({});
    }
    doc.get_mut(key)
        .and_then(Value::as_object_mut)
        .ok_or_else(|| not_a_map(key, id))
}

/// The `key` member map of a document, to read (`None`: it has none yet).
/// Lookups go through this rather than a copy of the cached document: a
/// group of many links would be copied whole for every name looked up.
fn member_ref<'a>(doc: &'a Value, key: &str, id: &str) -> Result<Option<&'a Map<String, Value>>> {
    match doc.get(key) {
        None if key == "links" && !id.starts_with("g-") => Err(EngineError::WrongType(format!(
            "object {id} is not a group"
        ))),
        None => Ok(None),
        Some(v) => v.as_object().map(Some).ok_or_else(|| not_a_map(key, id)),
    }
}

fn not_a_map(key: &str, id: &str) -> EngineError {
    EngineError::Corrupt(format!("{key} of {id} is not a JSON object"))
}

fn check_name(name: &str, what: &str) -> Result<()> {
    // (HDF5's names are C strings: a NUL would cut them short.)
    if name.is_empty() || name.contains(['/', '\0']) || name == "." || name == ".." {
        return Err(EngineError::Invalid(format!(
            "invalid {what} name {name:?}: names are non-empty and contain no '/' or NUL"
        )));
    }
    Ok(())
}

fn check_link(link: &Value) -> Result<()> {
    let class = link.get("class").and_then(Value::as_str).unwrap_or("");
    let has = |k: &str| link.get(k).and_then(Value::as_str).is_some();
    let ok = match class {
        "H5L_TYPE_HARD" => has("id"),
        "H5L_TYPE_SOFT" => has("h5path"),
        "H5L_TYPE_EXTERNAL" => has("h5path") && has("h5domain"),
        _ => false,
    };
    if ok {
        Ok(())
    } else {
        Err(EngineError::Invalid(format!("invalid link {link}")))
    }
}

/// Where a link leads: the link without what says when or under which
/// name it was made.
pub(crate) fn link_target(link: &Value) -> Value {
    let mut v = link.clone();
    if let Some(m) = v.as_object_mut() {
        m.remove("created");
        m.remove("title");
    }
    v
}

/// Whether two links lead to the same place.
pub(crate) fn same_link_target(a: &Value, b: &Value) -> bool {
    link_target(a) == link_target(b)
}

/// Whether moving group `moved` into group `dest` may leave it out of the
/// tree of the root group `root`: `dest` is below `moved` (reached from it
/// through hard links, not through the root: a link back up to the root
/// is no way down). Reads each group's document with `doc` (`None`: no
/// longer there).
///
/// It costs a walk of `moved`'s subgroups. It does not ask whether `dest`
/// hangs elsewhere in the tree too (a group `moved` links to sideways):
/// that would take a walk of the whole tree, and would not keep two
/// writers from moving two groups each into the other, each seeing the
/// other's old link still in place. This look does: each writer asks it
/// again once its new link is in, and of two such moves at least one then
/// sees the other's new link.
///
/// # Errors
/// Whatever `doc` returns.
pub(crate) fn move_may_detach(
    moved: &str,
    dest: &str,
    root: &str,
    mut doc: impl FnMut(&str) -> Result<Option<Arc<Value>>>,
) -> Result<bool> {
    group_reaches(moved, dest, root, &mut doc)
}

/// Whether group `target` is reachable from group `from` through hard
/// links (`from` itself included) without passing through group `avoid`.
fn group_reaches(
    from: &str,
    target: &str,
    avoid: &str,
    doc: &mut impl FnMut(&str) -> Result<Option<Arc<Value>>>,
) -> Result<bool> {
    let mut seen: HashSet<String> = HashSet::from([from.to_string(), avoid.to_string()]);
    let mut todo = vec![from.to_string()];
    while let Some(id) = todo.pop() {
        if id == target {
            return Ok(true);
        }
        let Some(d) = doc(&id)? else { continue };
        let Some(links) = d.get("links").and_then(Value::as_object) else {
            continue;
        };
        for l in links.values() {
            if let Some(next) = hard_link_target(l).filter(|i| i.starts_with("g-")) {
                if seen.insert(next.to_string()) {
                    todo.push(next.to_string());
                }
            }
        }
    }
    Ok(false)
}

pub(crate) fn hard_link_target(link: &Value) -> Option<&str> {
    let class = link.get("class").and_then(Value::as_str);
    if class.is_some_and(|c| c != "H5L_TYPE_HARD") {
        return None;
    }
    link.get("id").and_then(Value::as_str)
}
