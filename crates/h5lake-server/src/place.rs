//! Where a domain lives. An HSDS bucket keeps every domain's objects under
//! its one `db/`; a store made by `h5lake.File(…)` or `h5lake load` is a
//! bucket of its own (its own `.domain.json` at the top and its own `db/`).
//! The server serves both, and directories holding either:
//!
//! - `--root BUCKET`: domain `/home/u/f.h5` is `BUCKET/home/u/f.h5`;
//! - `--root DIR` where `DIR/run.h5l` (at any depth) is a store: that store
//!   is domain `/run.h5l` (`/sub/run.h5l`), read from its own `db/`;
//! - `--root run.h5l` (a store itself): it is domain `/run.h5l`.
//! - `--root DIR` where `DIR/data.h5` is an HDF5 file: domain `/data.h5`
//!   serves it read-only, through a store linked to the file's own bytes
//!   (made on first use, and again when the file changes), so that an
//!   external link of a store to `data.h5` can be followed by clients.
//!   The server opens nothing of the file but its bytes: that store's links
//!   may lead to the one file only.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use h5lake_store::{LocalStore, Store};
use serde_json::Value;

use crate::error::Result;

/// A domain's store and its path in that store (`""` for the store's own
/// top-level domain).
pub(crate) struct Place {
    pub store: Arc<dyn Store>,
    pub path: String,
    /// The HDF5 file a store made to serve it in place reads (its links
    /// may lead there and nowhere else); `None` for every other store.
    pub linked_file: Option<PathBuf>,
}

/// Makes a store at `dest` whose datasets read the HDF5 file `src` in
/// place (`h5lake load --link`). The server crate reads no HDF5 itself:
/// whoever runs it (the CLI) gives this, or HDF5 files are not served.
#[derive(Clone)]
pub struct Hdf5Linker(pub Arc<LinkFn>);

/// `(file, store_dir) -> Ok(())` or what went wrong.
pub type LinkFn = dyn Fn(&Path, &Path) -> std::result::Result<(), String> + Send + Sync;

impl std::fmt::Debug for Hdf5Linker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Hdf5Linker")
    }
}

/// A store found inside the root, and the HDF5 file it serves, if any.
type Found = (Arc<dyn Store>, Option<PathBuf>);

/// A store found inside the root.
struct Nested {
    store: Arc<dyn Store>,
    linked: Option<Linked>,
}

/// A store made to serve an HDF5 file in place.
struct Linked {
    /// The file (canonical).
    file: PathBuf,
    /// Its modification time and length when the store was made.
    stamp: (SystemTime, u64),
    /// The store's directory (removed when replaced or when the server ends).
    dir: PathBuf,
}

/// Finds the store of each domain (see the module doc).
pub(crate) struct Places {
    root_store: Arc<dyn Store>,
    /// The root directory, for a store on local disk.
    root_dir: Option<PathBuf>,
    /// The root's name when the root is itself a store.
    top_name: Option<String>,
    /// Stores found inside the root, by their path in it.
    nested: Mutex<HashMap<String, Nested>>,
    /// HDF5 files that could not be served, with their stamp then.
    failed: Mutex<HashMap<String, ((SystemTime, u64), String)>>,
    linker: Option<Hdf5Linker>,
    /// Where stores serving HDF5 files are made.
    scratch: PathBuf,
    made: AtomicU64,
}

impl Drop for Places {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.scratch);
    }
}

impl Places {
    pub fn new(root_store: Arc<dyn Store>, root: &str, linker: Option<Hdf5Linker>) -> Self {
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
            failed: Mutex::default(),
            linker,
            scratch: std::env::temp_dir().join(format!(
                "h5lake-serve-{}-{:x}",
                std::process::id(),
                SystemTime::now()
                    .duration_since(SystemTime::UNIX_EPOCH)
                    .map_or(0, |d| d.as_nanos())
            )),
            made: AtomicU64::new(0),
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
                    linked_file: None,
                });
            }
        }
        if self.root_dir.is_some() {
            for k in 1..=segs.len() {
                if let Some((store, linked_file)) = self.nested_store(&segs[..k].join("/"))? {
                    return Ok(Place {
                        store,
                        path: segs[k..].join("/"),
                        linked_file,
                    });
                }
            }
        }
        Ok(Place {
            store: self.root_store.clone(),
            path: segs.join("/"),
            linked_file: None,
        })
    }

    /// The store at `prefix` inside the root, if that directory is one (or
    /// that file an HDF5 file, served through a linked store), with the file
    /// a linked store reads.
    fn nested_store(&self, prefix: &str) -> Result<Option<Found>> {
        let Some(root) = &self.root_dir else {
            return Ok(None);
        };
        let path = root.join(prefix);
        let mut known = self.nested.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(n) = known.get(prefix) {
            match &n.linked {
                None => return Ok(Some((n.store.clone(), None))),
                Some(l) if stamp(&l.file) == Some(l.stamp) => {
                    return Ok(Some((n.store.clone(), Some(l.file.clone()))))
                }
                Some(l) => {
                    // the file changed: its store is made again
                    let _ = std::fs::remove_dir_all(&l.dir);
                    known.remove(prefix);
                }
            }
        }
        // One stat for every level of every request: most end here.
        if path.join("db").is_dir() && is_store_dir(&path) {
            let store: Arc<dyn Store> = Arc::new(LocalStore::open(&path)?);
            known.insert(
                prefix.to_string(),
                Nested {
                    store: store.clone(),
                    linked: None,
                },
            );
            return Ok(Some((store, None)));
        }
        let Some(linker) = &self.linker else {
            return Ok(None);
        };
        if !path.is_file() {
            // (Most prefixes are folders: nothing to link, and no walk of
            // the path to resolve it, which made every request on a deep
            // folder cost the square of its depth in system calls.)
            return Ok(None);
        }
        // Linking a file takes as long as its structure is big: other
        // domains' requests do not wait for it.
        drop(known);
        let now = stamp(&path);
        if let Some((at, why)) = self.unservable(prefix) {
            if Some(at) == now {
                return Err(crate::error::ServerError::Internal(why));
            }
        }
        let linked = match self.link_hdf5(linker, root, &path) {
            Ok(Some(linked)) => linked,
            Ok(None) => return Ok(None),
            Err(e) => {
                // (Not tried again until the file changes.)
                if let Some(at) = now {
                    self.failed
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .insert(prefix.to_string(), (at, e.to_string()));
                }
                return Err(e);
            }
        };
        let store: Arc<dyn Store> = Arc::new(LocalStore::open(&linked.dir)?);
        let file = linked.file.clone();
        let mut known = self.nested.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(n) = known.get(prefix) {
            // Another request linked it meanwhile: theirs is served.
            if let Some(l) = n.linked.as_ref().filter(|l| l.stamp == linked.stamp) {
                let _ = std::fs::remove_dir_all(linked.dir.parent().unwrap_or(&linked.dir));
                return Ok(Some((n.store.clone(), Some(l.file.clone()))));
            }
        }
        known.insert(
            prefix.to_string(),
            Nested {
                store: store.clone(),
                linked: Some(linked),
            },
        );
        Ok(Some((store, Some(file))))
    }

    /// Why the HDF5 file of `prefix` could not be served, and its stamp
    /// then.
    fn unservable(&self, prefix: &str) -> Option<((SystemTime, u64), String)> {
        self.failed
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(prefix)
            .cloned()
    }

    /// A read-only store reading the HDF5 file at `path`, if it is one
    /// inside `root` (a symlink leading out of the root is not followed).
    fn link_hdf5(&self, linker: &Hdf5Linker, root: &Path, path: &Path) -> Result<Option<Linked>> {
        let Ok(file) = path.canonicalize() else {
            return Ok(None);
        };
        if !file.starts_with(root) || !is_hdf5_file(&file) {
            return Ok(None);
        }
        let Some(before) = stamp(&file) else {
            return Ok(None);
        };
        let n = self.made.fetch_add(1, Ordering::Relaxed);
        let name = file.file_name().and_then(|n| n.to_str()).unwrap_or("file");
        let dir = self.scratch.join(n.to_string()).join(format!("{name}.h5l"));
        let made = dir
            .parent()
            .map_or(Ok(()), std::fs::create_dir_all)
            .map_err(|e| e.to_string())
            .and_then(|()| (linker.0)(&file, &dir))
            .and_then(|()| read_only(&dir));
        if let Err(e) = made {
            let _ = std::fs::remove_dir_all(dir.parent().unwrap_or(&dir));
            return Err(crate::error::ServerError::Internal(format!(
                "cannot serve the HDF5 file {}: {e}",
                path.display()
            )));
        }
        Ok(Some(Linked {
            file,
            stamp: before,
            dir,
        }))
    }
}

/// A file's modification time and length.
fn stamp(file: &Path) -> Option<(SystemTime, u64)> {
    let m = std::fs::metadata(file).ok()?;
    Some((m.modified().ok()?, m.len()))
}

/// Whether `file` begins with HDF5's signature (at byte 0, or after a user
/// block of 512, 1024, 2048, … bytes).
fn is_hdf5_file(file: &Path) -> bool {
    use std::io::{Read, Seek, SeekFrom};
    const SIGNATURE: &[u8; 8] = b"\x89HDF\r\n\x1a\n";
    let Ok(mut f) = std::fs::File::open(file) else {
        return false;
    };
    let len = f.metadata().map_or(0, |m| m.len());
    let mut at = 0u64;
    while at + 8 <= len {
        let mut buf = [0u8; 8];
        if f.seek(SeekFrom::Start(at)).is_err() || f.read_exact(&mut buf).is_err() {
            return false;
        }
        if &buf == SIGNATURE {
            return true;
        }
        at = if at == 0 { 512 } else { at * 2 };
    }
    false
}

/// Makes a served HDF5 file's store readable by every user and writable by
/// none: the file is the operator's, served as it is.
fn read_only(dir: &Path) -> std::result::Result<(), String> {
    let path = dir.join(".domain.json");
    let bytes = std::fs::read(&path).map_err(|e| e.to_string())?;
    let mut doc: Value = serde_json::from_slice(&bytes).map_err(|e| e.to_string())?;
    doc["acls"] = serde_json::json!({crate::auth::DEFAULT_USER: {
        "create": false, "read": true, "update": false, "delete": false,
        "readACL": true, "updateACL": false}});
    std::fs::write(&path, doc.to_string()).map_err(|e| e.to_string())
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
