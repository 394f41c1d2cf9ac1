//! A memory store for tests that behaves, in one respect, like another
//! backend: batched reads as S3 asks for them, or slow unpublished writes.

// Each test binary that includes this module uses a part of it.
#![allow(dead_code)]

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use h5lake_store::{
    ListableStore, MemoryStore, OpenObject, PutOutcome, ReadableStore, Result, Store, Version,
    Versioned, WholeObject, WritableStore,
};

#[derive(Default)]
pub struct TestStore {
    inner: MemoryStore,
    /// Ask for batched reads, as S3 does.
    batching: bool,
    /// How long each unpublished write (`put_fresh`) takes.
    fresh_delay: Duration,
    /// Unpublished writes fail, as on a full disk.
    fresh_fails: bool,
    /// How long a listing takes after it has read what the store holds
    /// (what a listing of many keys on S3 costs).
    list_delay: Duration,
    /// Batched reads made.
    batches: AtomicUsize,
    /// Bytes read from objects opened to be read in parts (tails included).
    part_bytes: Arc<AtomicUsize>,
    /// Bytes of whole objects read.
    whole_bytes: AtomicUsize,
    /// List keys with their versions, as S3 does.
    lists_versions: bool,
    /// Versions of chunk objects asked one by one.
    chunk_versions_asked: AtomicUsize,
    /// Listings made (of keys, of keys with versions, of a directory).
    listings: AtomicUsize,
    /// Run once after the first conditional put of a key ending so: what
    /// another writer does at that moment.
    after_put: std::sync::Mutex<Option<(String, Box<dyn FnOnce() + Send>)>>,
    /// Run after every conditional put that lands (a check of what the
    /// store holds at each moment a crash could stop a commit).
    after_each_put: std::sync::Mutex<Option<Arc<dyn Fn(&str) + Send + Sync>>>,
}

impl TestStore {
    /// One that asks for batched reads and counts them.
    pub fn batching() -> Self {
        Self {
            batching: true,
            ..Self::default()
        }
    }

    /// One whose unpublished writes (what early chunk batches use) take
    /// `delay` each.
    pub fn slow_fresh(delay: Duration) -> Self {
        Self {
            fresh_delay: delay,
            ..Self::default()
        }
    }

    /// One whose unpublished writes take `fresh` each and whose listings
    /// take `list` after they read the store.
    pub fn slow_fresh_and_lists(fresh: Duration, list: Duration) -> Self {
        Self {
            fresh_delay: fresh,
            list_delay: list,
            ..Self::default()
        }
    }

    /// One whose unpublished writes fail.
    pub fn failing_fresh() -> Self {
        Self {
            fresh_fails: true,
            ..Self::default()
        }
    }

    /// One that lists keys with their versions, as S3 does.
    pub fn listing_versions() -> Self {
        Self {
            lists_versions: true,
            ..Self::default()
        }
    }

    /// Versions of chunk objects (not documents or statistics) asked one
    /// key at a time.
    pub fn chunk_versions_asked(&self) -> usize {
        self.chunk_versions_asked.load(Ordering::Relaxed)
    }

    /// Listings made so far (each one request or more on S3).
    pub fn listings(&self) -> usize {
        self.listings.load(Ordering::Relaxed)
    }

    /// Runs `f` once, right after the first conditional put of a key
    /// ending with `key_end` lands.
    pub fn after_put(&self, key_end: &str, f: impl FnOnce() + Send + 'static) {
        *self.after_put.lock().unwrap() = Some((key_end.to_string(), Box::new(f)));
    }

    /// Runs `f` after every conditional put that lands, with its key.
    pub fn after_each_put(&self, f: impl Fn(&str) + Send + Sync + 'static) {
        *self.after_each_put.lock().unwrap() = Some(Arc::new(f));
    }

    pub fn batches(&self) -> usize {
        self.batches.load(Ordering::Relaxed)
    }

    /// Bytes read so far: of objects opened to be read in parts, and of
    /// whole objects.
    pub fn bytes_read(&self) -> usize {
        self.part_bytes.load(Ordering::Relaxed) + self.whole_bytes.load(Ordering::Relaxed)
    }
}

/// An object read in parts, counting the bytes it hands out.
struct Counted {
    inner: WholeObject,
    bytes: Arc<AtomicUsize>,
}

impl OpenObject for Counted {
    fn len(&self) -> u64 {
        self.inner.len()
    }
    fn version(&self) -> &Version {
        self.inner.version()
    }
    fn tail(&self) -> &Bytes {
        self.inner.tail()
    }
    fn read_ranges(&self, ranges: &[std::ops::Range<u64>]) -> Result<Vec<Bytes>> {
        let parts = self.inner.read_ranges(ranges)?;
        let n: usize = parts.iter().map(Bytes::len).sum();
        self.bytes.fetch_add(n, Ordering::Relaxed);
        Ok(parts)
    }
}

impl ReadableStore for TestStore {
    fn get(&self, key: &str) -> Result<Option<Bytes>> {
        let got = self.inner.get(key)?;
        if let Some(b) = &got {
            self.whole_bytes.fetch_add(b.len(), Ordering::Relaxed);
        }
        Ok(got)
    }
    fn get_versioned(&self, key: &str) -> Result<Option<Versioned>> {
        let got = self.inner.get_versioned(key)?;
        if let Some(v) = &got {
            self.whole_bytes.fetch_add(v.data.len(), Ordering::Relaxed);
        }
        Ok(got)
    }
    fn get_range(&self, key: &str, offset: u64, len: u64) -> Result<Option<Bytes>> {
        self.inner.get_range(key, offset, len)
    }
    // A real store answers a version from the object's metadata (a `stat`,
    // a HEAD); the default would count the whole object as read.
    fn version(&self, key: &str) -> Result<Option<Version>> {
        if !key.ends_with(".json") && !key.contains("/.h5lake/") {
            self.chunk_versions_asked.fetch_add(1, Ordering::Relaxed);
        }
        self.inner.version(key)
    }
    fn get_many(&self, keys: &[String]) -> Result<Vec<Option<Versioned>>> {
        self.batches.fetch_add(1, Ordering::Relaxed);
        self.inner.get_many(keys)
    }
    fn prefers_batching(&self) -> bool {
        self.batching
    }
    fn open_object(&self, key: &str, tail: u64) -> Result<Option<Box<dyn OpenObject + '_>>> {
        Ok(self.inner.get_versioned(key)?.map(|v| {
            let inner = WholeObject::new(v.data, v.version, tail);
            self.part_bytes
                .fetch_add(inner.tail().len(), Ordering::Relaxed);
            Box::new(Counted {
                inner,
                bytes: self.part_bytes.clone(),
            }) as Box<dyn OpenObject + '_>
        }))
    }
}

impl WritableStore for TestStore {
    fn put(&self, key: &str, data: &[u8]) -> Result<Version> {
        self.inner.put(key, data)
    }
    fn put_if_absent(&self, key: &str, data: &[u8]) -> Result<PutOutcome> {
        self.inner.put_if_absent(key, data)
    }
    fn put_fresh(&self, key: &str, data: &[u8]) -> Result<PutOutcome> {
        std::thread::sleep(self.fresh_delay);
        if self.fresh_fails {
            return Err(h5lake_store::StoreError::Io {
                path: key.to_string(),
                source: std::io::Error::other("no space left (test)"),
            });
        }
        self.inner.put_fresh(key, data)
    }
    fn put_if_version(&self, key: &str, data: &[u8], expected: &Version) -> Result<PutOutcome> {
        let out = self.inner.put_if_version(key, data, expected)?;
        if matches!(out, PutOutcome::Written(_)) {
            let hook = {
                let mut h = self.after_put.lock().unwrap();
                if h.as_ref()
                    .is_some_and(|(end, _)| key.ends_with(end.as_str()))
                {
                    h.take()
                } else {
                    None
                }
            };
            if let Some((_, f)) = hook {
                f();
            }
            let each = self.after_each_put.lock().unwrap().clone();
            if let Some(f) = each {
                f(key);
            }
        }
        Ok(out)
    }
    fn delete(&self, key: &str) -> Result<()> {
        self.inner.delete(key)
    }
    fn delete_prefix(&self, prefix: &str) -> Result<()> {
        self.inner.delete_prefix(prefix)
    }
}

impl ListableStore for TestStore {
    fn list_prefix(&self, prefix: &str) -> Result<Vec<String>> {
        self.listings.fetch_add(1, Ordering::Relaxed);
        let got = self.inner.list_prefix(prefix);
        std::thread::sleep(self.list_delay);
        got
    }
    fn list_dir(&self, prefix: &str) -> Result<(Vec<String>, Vec<String>)> {
        self.listings.fetch_add(1, Ordering::Relaxed);
        let got = self.inner.list_dir(prefix);
        std::thread::sleep(self.list_delay);
        got
    }
    fn list_versions(&self, prefix: &str) -> Result<Option<Vec<(String, Version)>>> {
        if !self.lists_versions {
            return Ok(None);
        }
        self.listings.fetch_add(1, Ordering::Relaxed);
        let mut out = Vec::new();
        for key in self.inner.list_prefix(prefix)? {
            if let Some(v) = self.inner.version(&key)? {
                out.push((key, v));
            }
        }
        Ok(Some(out))
    }
}

impl Store for TestStore {
    fn location(&self) -> String {
        format!("test-memory://{:p}", self)
    }
}
