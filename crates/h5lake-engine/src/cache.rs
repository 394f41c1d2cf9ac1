//! A byte-budgeted cache of decoded chunks.
//!
//! Entries remember the store version they were decoded from and are only
//! used after the store confirms that version is still current (a `stat` on
//! local disk), so another process's writes are never hidden by the cache;
//! what it saves is the read and the decode.

use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;

use bytes::Bytes;

use h5lake_store::Version;

/// Default budget per open domain.
pub const DEFAULT_CACHE_BYTES: usize = 64 << 20;

struct Entry {
    version: Version,
    data: Bytes,
    /// Generation at insertion; queue slots with an older generation are stale.
    generation: u64,
}

#[derive(Default)]
struct Inner {
    map: HashMap<String, Entry>,
    /// Insertion order for eviction (first in, first out).
    order: VecDeque<(String, u64)>,
    bytes: usize,
    generation: u64,
}

/// Decoded chunks keyed by store key.
pub struct ChunkCache {
    budget: usize,
    inner: Mutex<Inner>,
}

impl ChunkCache {
    /// A cache holding at most `budget` bytes of decoded chunks (0 disables it).
    pub fn new(budget: usize) -> Self {
        ChunkCache {
            budget,
            inner: Mutex::new(Inner::default()),
        }
    }

    /// Whether caching is on.
    pub fn enabled(&self) -> bool {
        self.budget > 0
    }

    /// The budget in bytes.
    pub fn budget(&self) -> usize {
        self.budget
    }

    /// The cached chunk and the version it was decoded from.
    pub fn get(&self, key: &str) -> Option<(Version, Bytes)> {
        let inner = self.inner.lock().expect("cache lock poisoned");
        inner
            .map
            .get(key)
            .map(|e| (e.version.clone(), e.data.clone()))
    }

    /// Remembers a decoded chunk, evicting the oldest entries over budget.
    pub fn insert(&self, key: &str, version: Version, data: Bytes) {
        if data.len() > self.budget / 4 {
            // One chunk must not flush everything else out.
            self.remove(key);
            return;
        }
        let mut inner = self.inner.lock().expect("cache lock poisoned");
        inner.generation += 1;
        let generation = inner.generation;
        inner.bytes += data.len();
        if let Some(old) = inner.map.insert(
            key.to_string(),
            Entry {
                version,
                data,
                generation,
            },
        ) {
            inner.bytes -= old.data.len();
        }
        inner.order.push_back((key.to_string(), generation));
        while inner.bytes > self.budget {
            let Some((k, g)) = inner.order.pop_front() else {
                break;
            };
            if inner.map.get(&k).is_some_and(|e| e.generation == g) {
                let e = inner.map.remove(&k).expect("present");
                inner.bytes -= e.data.len();
            }
        }
        // Keep the queue from growing without bound under rewrites of few keys.
        if inner.order.len() > 4 * inner.map.len() + 64 {
            let Inner { map, order, .. } = &mut *inner;
            order.retain(|(k, g)| map.get(k).is_some_and(|e| e.generation == *g));
        }
    }

    /// Forgets a chunk (after writing or deleting it).
    pub fn remove(&self, key: &str) {
        let mut inner = self.inner.lock().expect("cache lock poisoned");
        if let Some(e) = inner.map.remove(key) {
            inner.bytes -= e.data.len();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn evicts_to_budget_and_forgets() {
        let c = ChunkCache::new(400);
        for i in 0..10 {
            c.insert(
                &format!("k{i}"),
                Version(format!("v{i}")),
                Bytes::from(vec![0u8; 100]),
            );
        }
        let held: Vec<usize> = (0..10)
            .filter(|i| c.get(&format!("k{i}")).is_some())
            .collect();
        assert_eq!(held, vec![6, 7, 8, 9]);
        c.insert("k9", Version("v9b".into()), Bytes::from(vec![1u8; 50]));
        assert_eq!(c.get("k9").unwrap().0, Version("v9b".into()));
        c.remove("k9");
        assert!(c.get("k9").is_none());
        c.insert("big", Version("x".into()), Bytes::from(vec![0u8; 300]));
        assert!(
            c.get("big").is_none(),
            "entries over a quarter of the budget are not kept"
        );
    }
}
