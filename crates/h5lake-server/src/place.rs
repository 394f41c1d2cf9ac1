//! Where a domain lives. An HSDS bucket keeps every domain's objects under
//! its one `db/`; a store made by `h5lake.File(…)` or `h5lake load` is a
//! bucket of its own (its own `.domain.json` at the top and its own `db/`).
//! The server serves both, and directories holding either:
//!
//! - `--root BUCKET`: domain `/home/u/f.h5` is `BUCKET/home/u/f.h5`;
//! - `--root DIR` where `DIR/run.h5l` (at any depth) is a store: that store
//!   is domain `/run.h5l` (`/sub/run.h5l`), read from its own `db/`;
//! - `--root run.h5l` (a store itself): it is domain `/run.h5l`.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use h5lake_store::{LocalStore, Store};
use serde_json::Value;

use crate::error::Result;

/// A domain's store and its path in that store (`""` for the store's own
/// top-level domain).
pub(crate) struct Place {
    pub store: Arc<dyn Store>,
    pub path: String,
}

/// Finds the store of each domain (see the module doc).
pub(crate) struct Places {
    root_store: Arc<dyn Store>,
    /// The root directory, for a store on local disk.
    root_dir: Option<PathBuf>,
    /// The root's name when the root is itself a store.
    top_name: Option<String>,
    /// Stores found inside the root, by their path in it.
    nested: Mutex<HashMap<String, Arc<dyn Store>>>,
}

impl Places {
    pub fn new(root_store: Arc<dyn Store>, root: &str) -> Self {
        let root_dir = (!root.contains("://"))
            .then(|| Path::new(root).canonicalize().ok())
            .flatten();
        let top_name = root_dir
            .as_ref()
            .filter(|d| is_store_dir(d))
            .and_then(|d| d.file_name())
            .and_then(|n| n.to_str())
            .map(str::to_string);
        Places {
            root_store,
            root_dir,
            top_name,
            nested: Mutex::default(),
        }
    }

    /// The name under which a root that is itself a store is served.
    pub fn top_name(&self) -> Option<&str> {
        self.top_name.as_deref()
    }

    /// Where `domain` (`/a/b`, checked by `domain_path`) lives.
    ///
    /// # Errors
    /// A store found inside the root that cannot be opened.
    pub fn place(&self, domain: &str) -> Result<Place> {
        let segs: Vec<&str> = domain.split('/').filter(|s| !s.is_empty()).collect();
        if let (Some(top), Some(first)) = (&self.top_name, segs.first()) {
            if first == top {
                return Ok(Place {
                    store: self.root_store.clone(),
                    path: segs[1..].join("/"),
                });
            }
        }
        if self.root_dir.is_some() {
            for k in 1..=segs.len() {
                if let Some(store) = self.nested_store(&segs[..k].join("/"))? {
                    return Ok(Place {
                        store,
                        path: segs[k..].join("/"),
                    });
                }
            }
        }
        Ok(Place {
            store: self.root_store.clone(),
            path: segs.join("/"),
        })
    }

    /// The store at `prefix` inside the root, if that directory is one.
    fn nested_store(&self, prefix: &str) -> Result<Option<Arc<dyn Store>>> {
        let Some(root) = &self.root_dir else {
            return Ok(None);
        };
        let mut known = self.nested.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(s) = known.get(prefix) {
            return Ok(Some(s.clone()));
        }
        let dir = root.join(prefix);
        // One stat for every level of every request: most end here.
        if !dir.join("db").is_dir() || !is_store_dir(&dir) {
            return Ok(None);
        }
        let store: Arc<dyn Store> = Arc::new(LocalStore::open(&dir)?);
        known.insert(prefix.to_string(), store.clone());
        Ok(Some(store))
    }
}

/// Whether `dir` is a self-contained store: its `.domain.json` names a root
/// group whose objects are in its own `db/`. (A folder of an HSDS bucket
/// may hold a directory called `db` — a domain of that name — but never
/// the objects of its own root group.)
fn is_store_dir(dir: &Path) -> bool {
    let Ok(bytes) = std::fs::read(dir.join(".domain.json")) else {
        return false;
    };
    let Ok(doc) = h5lake_engine::json::parse_doc(&bytes, ".domain.json") else {
        return false;
    };
    let Some(root) = doc.get("root").and_then(Value::as_str) else {
        return false;
    };
    h5lake_engine::ids::domain_db_prefix(root)
        .map(|prefix| dir.join(prefix.trim_end_matches('/')).is_dir())
        .unwrap_or(false)
}
