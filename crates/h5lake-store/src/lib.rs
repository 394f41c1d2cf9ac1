//! Object storage for h5lake.
//!
//! A store is a flat key space (`/`-separated keys, no leading slash) of
//! immutable-per-write byte objects, the shape of an S3 bucket. The traits are
//! split by capability (read / write / list) the way zarrs and object_store do;
//! a missing key is `Ok(None)`, never an error, because for chunks "missing"
//! simply means "fill value".
//!
//! Backends: [`LocalStore`] (a directory), [`MemoryStore`], and `S3Store`
//! (S3 and S3-compatible servers; cargo feature `s3`). [`open_url`] picks
//! one from a location string.
//!
//! Consistency contract every backend must honour (checked by [`testsuite`]):
//! - `put` is atomic: a reader sees the old bytes or the new bytes, never a mix;
//!   a crash mid-`put` leaves the old bytes.
//! - `put_if_absent` creates the key only if nobody else did (exactly one of
//!   several racing callers gets `Created`).
//! - `put_if_version` replaces the value only if its current version is the one
//!   the caller read; racing read-modify-write cycles therefore never lose an
//!   update — the loser sees `Conflict` and retries.
//! - `patch`, where a backend offers it (local directories, memory), edits an
//!   object in place in order with every other write of it: no update lost,
//!   and each call's edits land all together (after a crash: when the store
//!   next writes there). Readers may see an edit in flight, as in a file.

use std::ops::Range;
use std::sync::Arc;

use bytes::Bytes;

mod error;
pub mod local;
pub mod mapped;
pub mod memory;
#[cfg(feature = "s3")]
pub mod s3;
pub mod testsuite;

pub use error::StoreError;
pub use local::{LocalStore, LocalStoreOptions};
pub use memory::MemoryStore;
#[cfg(feature = "s3")]
pub use s3::{S3Config, S3Store};

/// Result alias for store operations.
pub type Result<T> = std::result::Result<T, StoreError>;

/// Opaque version tag of a stored object (an ETag on S3; on local disk a
/// token derived from the file's identity). Two reads return equal versions
/// iff no write happened in between.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Version(pub String);

/// Bytes together with the version they were read at.
#[derive(Clone, Debug)]
pub struct Versioned {
    pub data: Bytes,
    pub version: Version,
}

/// Outcome of a conditional write.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PutOutcome {
    /// The write happened; the object now has this version.
    Written(Version),
    /// The precondition failed (key already exists for `put_if_absent`, or its
    /// version moved on / it vanished for `put_if_version`). Nothing was written.
    Conflict,
}

/// One version of an object, read in parts: what a reader needs when where
/// to read depends on what it read first (a Parquet footer, then the
/// columns it names). Every part comes from the version opened, or the read
/// fails with [`StoreError::Changed`] (the caller opens it again).
pub trait OpenObject: Send + Sync {
    /// The object's length in bytes.
    fn len(&self) -> u64;
    /// Whether the object is empty.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// The version opened.
    fn version(&self) -> &Version;
    /// The last bytes of the object (as many as asked for at open, fewer
    /// when the object is shorter), read with the open itself.
    fn tail(&self) -> &Bytes;
    /// The bytes of each range (clipped at the object's end), in order.
    ///
    /// # Errors
    /// [`StoreError::Changed`] when the object was replaced since it was
    /// opened; I/O trouble.
    fn read_ranges(&self, ranges: &[Range<u64>]) -> Result<Vec<Bytes>>;

    /// The bytes of each range without copying them, where the backend
    /// can (a local file mapped into memory); `None` elsewhere (read them
    /// with [`OpenObject::read_ranges_into`]).
    ///
    /// # Errors
    /// As [`OpenObject::read_ranges`].
    fn map_ranges(&self, _ranges: &[Range<u64>]) -> Result<Option<Vec<Bytes>>> {
        Ok(None)
    }

    /// As [`OpenObject::read_ranges`], the bytes of the ranges one after
    /// another in `buf` (replacing its contents, reusing its allocation),
    /// so that a reader going from object to object does not fault in
    /// fresh memory for each.
    ///
    /// # Errors
    /// As [`OpenObject::read_ranges`].
    fn read_ranges_into(&self, ranges: &[Range<u64>], buf: &mut Vec<u8>) -> Result<()> {
        let parts = self.read_ranges(ranges)?;
        buf.clear();
        for p in parts {
            buf.extend_from_slice(&p);
        }
        Ok(())
    }
}

/// An object held whole in memory, as an [`OpenObject`].
pub struct WholeObject {
    data: Bytes,
    version: Version,
    tail: Bytes,
}

impl WholeObject {
    /// `data` as an open object whose tail is its last `tail` bytes.
    pub fn new(data: Bytes, version: Version, tail: u64) -> Self {
        let from = data
            .len()
            .saturating_sub(usize::try_from(tail).unwrap_or(usize::MAX));
        Self {
            tail: data.slice(from..),
            data,
            version,
        }
    }
}

impl OpenObject for WholeObject {
    fn len(&self) -> u64 {
        self.data.len() as u64
    }

    fn version(&self) -> &Version {
        &self.version
    }

    fn tail(&self) -> &Bytes {
        &self.tail
    }

    fn read_ranges(&self, ranges: &[Range<u64>]) -> Result<Vec<Bytes>> {
        let len = self.data.len() as u64;
        Ok(ranges
            .iter()
            .map(|r| {
                let (start, end) = (r.start.min(len), r.end.min(len).max(r.start.min(len)));
                self.data.slice(start as usize..end as usize)
            })
            .collect())
    }
}

/// Reading keys.
pub trait ReadableStore: Send + Sync {
    /// The whole object, or `None` if the key does not exist.
    ///
    /// # Errors
    /// I/O trouble other than "not found".
    fn get(&self, key: &str) -> Result<Option<Bytes>>;

    /// The whole object with its version, or `None` if missing.
    ///
    /// # Errors
    /// I/O trouble other than "not found".
    fn get_versioned(&self, key: &str) -> Result<Option<Versioned>>;

    /// `len` bytes starting at `offset` (fewer if the object is shorter), or
    /// `None` if the key does not exist.
    ///
    /// # Errors
    /// I/O trouble other than "not found".
    fn get_range(&self, key: &str, offset: u64, len: u64) -> Result<Option<Bytes>>;

    /// Whether the key exists.
    ///
    /// # Errors
    /// I/O trouble.
    fn exists(&self, key: &str) -> Result<bool> {
        Ok(self.get_range(key, 0, 0)?.is_some())
    }

    /// Reads the whole object into `buf` (replacing its contents, reusing its
    /// allocation), returning its version, or `None` if missing. Lets a
    /// streaming reader recycle one buffer instead of faulting in fresh
    /// pages for every chunk.
    ///
    /// # Errors
    /// I/O trouble other than "not found".
    fn get_into(&self, key: &str, buf: &mut Vec<u8>) -> Result<Option<Version>> {
        Ok(self.get_versioned(key)?.map(|v| {
            buf.clear();
            buf.extend_from_slice(&v.data);
            v.version
        }))
    }

    /// Reads an object of exactly `total_len` bytes straight into caller
    /// memory: `runs` are (object offset, destination) pairs in increasing,
    /// gap-free offset order that cover the whole object. Returns `None` if
    /// the object is missing and `Some(false)` (nothing meaningful written)
    /// if its size is not `total_len`. Backends that can scatter a read
    /// (local files: `preadv`) save the copy through an intermediate buffer.
    ///
    /// # Errors
    /// I/O trouble other than "not found".
    fn get_scattered(
        &self,
        key: &str,
        total_len: u64,
        runs: &mut [(u64, &mut [u8])],
    ) -> Result<Option<bool>> {
        let Some(data) = self.get(key)? else {
            return Ok(None);
        };
        Ok(Some(scatter(&data, total_len, runs)))
    }

    /// The object's current version without its bytes (`None` if missing):
    /// what a cache asks to learn whether its copy is still current.
    ///
    /// # Errors
    /// I/O trouble other than "not found".
    fn version(&self, key: &str) -> Result<Option<Version>> {
        Ok(self.get_versioned(key)?.map(|v| v.version))
    }

    /// Several whole objects with their versions, in the order of `keys`
    /// (`None` for each missing one). Remote backends keep many requests in
    /// flight; the default reads one after the other.
    ///
    /// # Errors
    /// The first I/O trouble other than "not found"; invalid keys.
    fn get_many(&self, keys: &[String]) -> Result<Vec<Option<Versioned>>> {
        keys.iter().map(|k| self.get_versioned(k)).collect()
    }

    /// Several byte ranges of one object, each clipped at the object's end
    /// like [`ReadableStore::get_range`], or `None` if the object is missing.
    /// Remote backends merge nearby ranges into fewer requests.
    ///
    /// # Errors
    /// I/O trouble other than "not found".
    fn get_ranges(&self, key: &str, ranges: &[Range<u64>]) -> Result<Option<Vec<Bytes>>> {
        get_ranges_one_by_one(self, key, ranges)
    }

    /// Opens the current version of an object to read it in parts, reading
    /// its last `tail` bytes at once; `None` if missing. The default reads
    /// the whole object; backends that read ranges cheaply read only what
    /// is asked for.
    ///
    /// # Errors
    /// I/O trouble other than "not found".
    fn open_object(&self, key: &str, tail: u64) -> Result<Option<Box<dyn OpenObject + '_>>> {
        Ok(self.get_versioned(key)?.map(|v| {
            Box::new(WholeObject::new(v.data, v.version, tail)) as Box<dyn OpenObject + '_>
        }))
    }

    /// Whether callers should gather reads into [`ReadableStore::get_many`] /
    /// [`ReadableStore::get_ranges`] batches: true where each request costs a
    /// network round trip, false where single reads are already cheap (and
    /// the engine's streaming local path is faster).
    fn prefers_batching(&self) -> bool {
        false
    }
}

/// Copies a whole object held in memory into the runs of a
/// [`ReadableStore::get_scattered`] read; false (nothing copied) when it is
/// not `total_len` bytes long.
pub fn scatter(data: &[u8], total_len: u64, runs: &mut [(u64, &mut [u8])]) -> bool {
    if data.len() as u64 != total_len {
        return false;
    }
    for (off, dst) in runs.iter_mut() {
        let off = *off as usize;
        dst.copy_from_slice(&data[off..off + dst.len()]);
    }
    true
}

/// [`ReadableStore::get_ranges`] as single `get_range` calls.
pub(crate) fn get_ranges_one_by_one<S: ReadableStore + ?Sized>(
    s: &S,
    key: &str,
    ranges: &[Range<u64>],
) -> Result<Option<Vec<Bytes>>> {
    let mut out = Vec::with_capacity(ranges.len());
    for r in ranges {
        match s.get_range(key, r.start, r.end.saturating_sub(r.start))? {
            Some(b) => out.push(b),
            None => return Ok(None),
        }
    }
    Ok(Some(out))
}

/// Writing keys. Every call is atomic (see the crate docs).
pub trait WritableStore: Send + Sync {
    /// Create or replace the object.
    ///
    /// # Errors
    /// I/O trouble; an invalid key.
    fn put(&self, key: &str, data: &[u8]) -> Result<Version>;

    /// Create the object only if the key does not exist yet.
    ///
    /// # Errors
    /// I/O trouble; an invalid key.
    fn put_if_absent(&self, key: &str, data: &[u8]) -> Result<PutOutcome>;

    /// Create the object only if the key does not exist yet, where no
    /// reader looks for it until the caller says so (the keys of an object
    /// nothing links to yet). Stores may skip what makes a write atomic to
    /// readers: a crash can leave the object partly written, which is
    /// harmless only because nothing refers to it. The default is
    /// [`put_if_absent`](Self::put_if_absent).
    ///
    /// # Errors
    /// I/O trouble; an invalid key.
    fn put_fresh(&self, key: &str, data: &[u8]) -> Result<PutOutcome> {
        self.put_if_absent(key, data)
    }

    /// Replace the object only if its current version is `expected`.
    ///
    /// # Errors
    /// I/O trouble; an invalid key.
    fn put_if_version(&self, key: &str, data: &[u8], expected: &Version) -> Result<PutOutcome>;

    /// Overwrite byte ranges `(offset, bytes)` of an existing object of
    /// exactly `len` bytes where it lies, without rewriting the rest: the
    /// cheap form of a small edit to a big object. Ordered against every
    /// other write of the key, so no update is lost; the edits of one call
    /// land together or (after a crash) are finished later, never half.
    /// A reader that is not a writer may see part of an edit in flight, as
    /// it would in a file being written.
    ///
    /// `Ok(None)` when nothing was written because the store cannot patch
    /// (the default: object stores replace whole objects), the key is
    /// absent, or the object is not `len` bytes long; the caller then
    /// rewrites the object itself. `Ok(Some(v))`: the object's new version.
    ///
    /// # Errors
    /// I/O trouble; an invalid key; an edit beyond `len`.
    fn patch(&self, key: &str, len: u64, edits: &[(u64, &[u8])]) -> Result<Option<Version>> {
        validate_key(key)?;
        check_patch(key, len, edits)?;
        Ok(None)
    }

    /// Remove the object; removing a missing key is not an error.
    ///
    /// # Errors
    /// I/O trouble.
    fn delete(&self, key: &str) -> Result<()>;

    /// Remove every object whose key starts with `prefix` (a `/`-terminated
    /// "directory" prefix in practice).
    ///
    /// # Errors
    /// I/O trouble.
    fn delete_prefix(&self, prefix: &str) -> Result<()>;
}

/// Listing keys.
pub trait ListableStore: Send + Sync {
    /// Every key starting with `prefix`, recursively, sorted.
    ///
    /// # Errors
    /// I/O trouble.
    fn list_prefix(&self, prefix: &str) -> Result<Vec<String>>;

    /// One level below `prefix` (which is empty or ends in `/`): the keys
    /// directly under it and the child "directories" (each ending in `/`),
    /// both sorted, both as full keys.
    ///
    /// # Errors
    /// I/O trouble.
    fn list_dir(&self, prefix: &str) -> Result<(Vec<String>, Vec<String>)>;

    /// Every key starting with `prefix` with its version, where one
    /// listing gives both (an S3 listing carries ETags): what spares one
    /// request per key when many versions are checked at once. `None`
    /// where asking each key costs no more (local files).
    ///
    /// # Errors
    /// I/O trouble.
    fn list_versions(&self, _prefix: &str) -> Result<Option<Vec<(String, Version)>>> {
        Ok(None)
    }
}

/// A full store: what the engine needs.
pub trait Store: ReadableStore + WritableStore + ListableStore {
    /// Human-readable location (path or URL) for messages.
    fn location(&self) -> String;

    /// Every key starting with `prefix` with its size in bytes, sorted by
    /// key (what a usage summary needs). The default reads each object;
    /// backends that know sizes without reading (S3 listings, local file
    /// metadata) override it.
    ///
    /// # Errors
    /// I/O trouble.
    fn list_sizes(&self, prefix: &str) -> Result<Vec<(String, u64)>> {
        let mut out = Vec::new();
        for key in self.list_prefix(prefix)? {
            // Deleted since the listing: not part of the usage any more.
            if let Some(data) = self.get(&key)? {
                out.push((key, data.len() as u64));
            }
        }
        Ok(out)
    }
}

/// Opens the store a location names: `s3://bucket[/prefix]` (with the
/// `s3` feature; configured from the AWS environment, see
/// [`S3Config::from_env`]) or a local directory path. With `create`, a
/// missing local directory is created (S3 buckets never are); without it the
/// store must exist.
///
/// # Errors
/// [`StoreError::NotFound`] for a missing store; [`StoreError::Config`] for
/// an unusable URL or configuration (e.g. `s3://` without the `s3` feature,
/// missing credentials); I/O or request failures.
pub fn open_url(url: &str, create: bool) -> Result<Arc<dyn Store>> {
    if url.starts_with("s3://") {
        #[cfg(feature = "s3")]
        return Ok(Arc::new(S3Store::open(url, create)?));
        #[cfg(not(feature = "s3"))]
        return Err(StoreError::Config {
            url: url.to_string(),
            reason: "this build of h5lake has no S3 support (cargo feature `s3` of h5lake-store)"
                .into(),
        });
    }
    if let Some((scheme, _)) = url.split_once("://") {
        return Err(StoreError::Config {
            url: url.to_string(),
            reason: format!(
                "unsupported scheme {scheme}:// (use a local path or s3://bucket/path)"
            ),
        });
    }
    Ok(Arc::new(if create {
        LocalStore::create(url)?
    } else {
        LocalStore::open(url)?
    }))
}

/// Checks a key: non-empty, relative, `/`-separated, no empty, `.` or `..`
/// segments. Backends call this so that no key can escape the store root.
///
/// # Errors
/// [`StoreError::InvalidKey`] naming the problem.
pub fn validate_key(key: &str) -> Result<()> {
    let bad = |why: &str| {
        Err(StoreError::InvalidKey {
            key: key.to_string(),
            reason: why.to_string(),
        })
    };
    if key.is_empty() {
        return bad("empty key");
    }
    if key.starts_with('/') {
        return bad("keys are relative (no leading '/')");
    }
    for seg in key.split('/') {
        if seg.is_empty() || seg == "." || seg == ".." {
            return bad("empty, '.' or '..' path segment");
        }
        if seg.contains('\0') {
            return bad("NUL byte");
        }
    }
    Ok(())
}

/// Checks that `edits` stay inside an object of `len` bytes.
///
/// # Errors
/// [`StoreError::InvalidPatch`] naming the first edit that does not.
pub fn check_patch(key: &str, len: u64, edits: &[(u64, &[u8])]) -> Result<()> {
    for (offset, bytes) in edits {
        if offset
            .checked_add(bytes.len() as u64)
            .is_none_or(|end| end > len)
        {
            return Err(StoreError::InvalidPatch {
                key: key.to_string(),
                reason: format!(
                    "{} bytes at offset {offset} reach beyond the object's {len} bytes",
                    bytes.len()
                ),
            });
        }
    }
    Ok(())
}

/// Checks a listing prefix: empty, or a key with an optional trailing `/`.
/// The last segment of a prefix without trailing `/` is only matched as a
/// string, so `.` is allowed there (`db/x/.` finds `.group.json`).
///
/// # Errors
/// [`StoreError::InvalidKey`] for prefixes that could escape the root.
pub fn validate_prefix(prefix: &str) -> Result<()> {
    if prefix.contains('\0') {
        return validate_key(prefix);
    }
    let dir = match prefix.strip_suffix('/') {
        Some(dir) => dir,
        None => prefix.rfind('/').map_or("", |i| &prefix[..i]),
    };
    if dir.is_empty() && !prefix.starts_with('/') {
        return Ok(());
    }
    validate_key(dir).map_err(|_| StoreError::InvalidKey {
        key: prefix.to_string(),
        reason: "prefix directory must be a valid key".into(),
    })
}
