//! An in-process store: the reference semantics for the trait, and a fast
//! backend for tests and scratch files.
//!
//! Versions come from one process-wide counter rather than a per-store one,
//! so a version read from one store can never accidentally match an object
//! in another (a cheap guard against mixing up handles).

use std::collections::BTreeMap;
use std::ops::Bound;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{PoisonError, RwLock, RwLockReadGuard, RwLockWriteGuard};

use bytes::Bytes;

use crate::{
    check_patch, validate_key, validate_prefix, ListableStore, PutOutcome, ReadableStore, Result,
    Store, StoreError, Version, Versioned, WritableStore,
};

static NEXT_VERSION: AtomicU64 = AtomicU64::new(1);

fn next_version() -> u64 {
    NEXT_VERSION.fetch_add(1, Ordering::Relaxed)
}

fn version_tag(n: u64) -> Version {
    Version(format!("m{n:x}"))
}

type Map = BTreeMap<String, (Bytes, u64)>;

/// A [`Store`] held in memory; every operation is atomic because it runs
/// under one lock.
#[derive(Debug, Default)]
pub struct MemoryStore {
    map: RwLock<Map>,
}

impl MemoryStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    // A panic while holding the lock cannot leave the map half-updated (every
    // mutation is a single insert/remove), so a poisoned lock is still sound.
    fn read(&self) -> RwLockReadGuard<'_, Map> {
        self.map.read().unwrap_or_else(PoisonError::into_inner)
    }

    fn write(&self) -> RwLockWriteGuard<'_, Map> {
        self.map.write().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Keys of `map` starting with `prefix`, in order.
fn with_prefix<'a>(map: &'a Map, prefix: &'a str) -> impl Iterator<Item = &'a String> + 'a {
    map.range::<str, _>((Bound::Included(prefix), Bound::Unbounded))
        .map(|(k, _)| k)
        .take_while(move |k| k.starts_with(prefix))
}

impl ReadableStore for MemoryStore {
    fn get(&self, key: &str) -> Result<Option<Bytes>> {
        validate_key(key)?;
        Ok(self.read().get(key).map(|(data, _)| data.clone()))
    }

    fn get_versioned(&self, key: &str) -> Result<Option<Versioned>> {
        validate_key(key)?;
        Ok(self.read().get(key).map(|(data, v)| Versioned {
            data: data.clone(),
            version: version_tag(*v),
        }))
    }

    fn get_range(&self, key: &str, offset: u64, len: u64) -> Result<Option<Bytes>> {
        validate_key(key)?;
        Ok(self.read().get(key).map(|(data, _)| {
            let size = data.len() as u64;
            let start = offset.min(size);
            let end = offset.saturating_add(len).min(size);
            data.slice(start as usize..end as usize)
        }))
    }

    fn exists(&self, key: &str) -> Result<bool> {
        validate_key(key)?;
        Ok(self.read().contains_key(key))
    }

    fn version(&self, key: &str) -> Result<Option<Version>> {
        validate_key(key)?;
        Ok(self.read().get(key).map(|(_, v)| version_tag(*v)))
    }
}

impl WritableStore for MemoryStore {
    fn put(&self, key: &str, data: &[u8]) -> Result<Version> {
        validate_key(key)?;
        let bytes = Bytes::copy_from_slice(data);
        let mut map = self.write();
        let v = next_version();
        map.insert(key.to_string(), (bytes, v));
        Ok(version_tag(v))
    }

    fn put_if_absent(&self, key: &str, data: &[u8]) -> Result<PutOutcome> {
        validate_key(key)?;
        let bytes = Bytes::copy_from_slice(data);
        let mut map = self.write();
        if map.contains_key(key) {
            return Ok(PutOutcome::Conflict);
        }
        let v = next_version();
        map.insert(key.to_string(), (bytes, v));
        Ok(PutOutcome::Written(version_tag(v)))
    }

    fn put_if_version(&self, key: &str, data: &[u8], expected: &Version) -> Result<PutOutcome> {
        validate_key(key)?;
        let bytes = Bytes::copy_from_slice(data);
        let mut map = self.write();
        match map.get_mut(key) {
            Some(slot) if version_tag(slot.1) == *expected => {
                let v = next_version();
                *slot = (bytes, v);
                Ok(PutOutcome::Written(version_tag(v)))
            }
            _ => Ok(PutOutcome::Conflict),
        }
    }

    fn patch(&self, key: &str, len: u64, edits: &[(u64, &[u8])]) -> Result<Option<Version>> {
        validate_key(key)?;
        check_patch(key, len, edits)?;
        let mut map = self.write();
        let Some(slot) = map.get_mut(key).filter(|slot| slot.0.len() as u64 == len) else {
            return Ok(None);
        };
        let mut data = std::mem::take(&mut slot.0)
            .try_into_mut()
            .map_or_else(|b| b.to_vec(), Vec::from);
        for (offset, bytes) in edits {
            let at = *offset as usize;
            data[at..at + bytes.len()].copy_from_slice(bytes);
        }
        let v = next_version();
        *slot = (Bytes::from(data), v);
        Ok(Some(version_tag(v)))
    }

    fn delete(&self, key: &str) -> Result<()> {
        validate_key(key)?;
        self.write().remove(key);
        Ok(())
    }

    fn delete_prefix(&self, prefix: &str) -> Result<()> {
        validate_prefix(prefix)?;
        let mut map = self.write();
        let doomed: Vec<String> = with_prefix(&map, prefix).cloned().collect();
        for k in doomed {
            map.remove(&k);
        }
        Ok(())
    }
}

impl ListableStore for MemoryStore {
    fn list_prefix(&self, prefix: &str) -> Result<Vec<String>> {
        validate_prefix(prefix)?;
        Ok(with_prefix(&self.read(), prefix).cloned().collect())
    }

    fn list_dir(&self, prefix: &str) -> Result<(Vec<String>, Vec<String>)> {
        if !prefix.is_empty() && !prefix.ends_with('/') {
            return Err(StoreError::InvalidKey {
                key: prefix.to_string(),
                reason: "list_dir needs an empty or '/'-terminated prefix".into(),
            });
        }
        validate_prefix(prefix)?;
        let map = self.read();
        let mut keys = Vec::new();
        let mut dirs: Vec<String> = Vec::new();
        for k in with_prefix(&map, prefix) {
            match k[prefix.len()..].find('/') {
                None => keys.push(k.clone()),
                Some(i) => {
                    let d = &k[..prefix.len() + i + 1];
                    // Keys sharing a directory prefix are contiguous in sorted
                    // order, so comparing with the last one dedupes.
                    if dirs.last().map(String::as_str) != Some(d) {
                        dirs.push(d.to_string());
                    }
                }
            }
        }
        Ok((keys, dirs))
    }
}

impl Store for MemoryStore {
    fn location(&self) -> String {
        "memory://".to_string()
    }
}
