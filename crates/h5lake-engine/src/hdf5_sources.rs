//! HDF5 files as virtual datasets' sources, read as libhdf5 reads them:
//! as they are now, not as they were when the mapping was made.
//!
//! A mapping onto a dataset of an HDF5 file keeps an anonymous dataset
//! linked to that file (its chunk index copied, its values left in the
//! file). When the file has changed since (rewritten, grown, a source that
//! was missing has appeared), that link no longer says where the values
//! are, so the dataset is linked again from the file as it is now. The new
//! link is kept in memory for this open store (never written back: the
//! store may be read-only, and the file may change again), and made again
//! whenever the file's size or modification time moves.
//!
//! The engine cannot read HDF5 files itself; the crate that can registers
//! a [`Hdf5Linker`] once per process ([`set_hdf5_linker`]). Without one,
//! a changed file is refused as before.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};

use crate::dataset::DatasetMeta;
use crate::domain::{Domain, DomainOptions, OpenMode};
use crate::link_policy::LinkTarget;
use crate::linked::{file_stamp, FileStamp};
use crate::Result;

/// Links the dataset `path` of the HDF5 file `file` into `dom` as an
/// anonymous dataset and returns its id, or says why it cannot.
pub type Hdf5Linker =
    fn(dom: &Domain, file: &Path, path: &str) -> std::result::Result<String, String>;

static LINKER: OnceLock<Hdf5Linker> = OnceLock::new();

/// Registers the function that links HDF5 files' datasets (once per
/// process; later calls are ignored).
pub fn set_hdf5_linker(linker: Hdf5Linker) {
    let _ = LINKER.set(linker);
}

/// A dataset linked again from its file: where it now lives, or why it
/// could not be linked, as of the file's stamp then.
#[derive(Clone)]
struct Relinked {
    stamp: FileStamp,
    found: std::result::Result<(Arc<Domain>, Arc<DatasetMeta>), String>,
}

/// The datasets of HDF5 files linked again by this domain, by file and
/// dataset path.
#[derive(Default)]
pub(crate) struct RelinkedSources(Mutex<HashMap<(PathBuf, String), Relinked>>);

/// What became of an HDF5 source looked at now.
pub(crate) enum Current {
    /// The stored link still holds (or no newer one can be made).
    Stored,
    /// The file is gone: the source reads as fill.
    Missing(String),
    /// Linked again from the file as it is now.
    Relinked(Arc<Domain>, Arc<DatasetMeta>),
    /// The file as it is now holds no dataset there that can be linked.
    Unlinkable(String),
}

/// The stamp of the file a linked dataset's values are in, now; `None`
/// when it is not a local file this domain may read, or is gone.
fn linked_file_now(home: &Domain, src: &DatasetMeta) -> Option<(PathBuf, Option<FileStamp>)> {
    let link = src.link.as_ref()?;
    match home.linked_files.target(&link.file_uri) {
        Ok(LinkTarget::Local(p)) => {
            let now = std::fs::metadata(&p).ok().map(|m| file_stamp(&m));
            Some((p, now))
        }
        _ => None,
    }
}

impl Domain {
    /// The source a mapping onto the dataset `path` of the HDF5 file
    /// `file` reads from now. `stored` is the dataset linked when the
    /// mapping was made (`None` when the file or dataset was missing then).
    pub(crate) fn hdf5_source_now(
        &self,
        file: &str,
        path: &str,
        stored: Option<&DatasetMeta>,
    ) -> Result<Current> {
        if let Some(src) = stored {
            match linked_file_now(self, src) {
                // (Not a file we can look at: read as stored, which checks it.)
                None => return Ok(Current::Stored),
                Some((p, None)) => {
                    return Ok(Current::Missing(format!("{} is missing", p.display())))
                }
                Some((p, Some(now))) => {
                    let unchanged = src
                        .link
                        .as_ref()
                        .is_none_or(|l| l.stamp.is_none_or(|s| s == now));
                    // Values in the mapping's own file: its stamp says all.
                    // In another (reached through an external link): the
                    // mapping's file may have changed where its link leads,
                    // so it is linked again, once per change of either.
                    let own = match self.linked_files.target(file) {
                        Ok(LinkTarget::Local(f)) => same_file(&f, &p),
                        _ => true,
                    };
                    if unchanged && own {
                        return Ok(Current::Stored);
                    }
                }
            }
        }
        let Some(linker) = LINKER.get() else {
            return Ok(Current::Stored);
        };
        // The mapping's file, checked against the policy as any link is.
        let LinkTarget::Local(file) = self.linked_files.target(file)? else {
            return Ok(Current::Stored);
        };
        let Ok(meta) = std::fs::metadata(&file) else {
            return Ok(if stored.is_some() {
                Current::Missing(format!("{} is missing", file.display()))
            } else {
                Current::Stored
            });
        };
        let stamp = file_stamp(&meta);
        let key = (file.clone(), path.to_string());
        let known = self
            .relinked
            .0
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(&key)
            .cloned();
        if let Some(r) = known {
            // Fresh while the file and (through an external link) the file
            // its values are in have not moved since.
            let fresh = r.stamp == stamp
                && r.found.as_ref().map_or(true, |(dom, src)| {
                    linked_file_now(dom, src).is_none_or(|(_, now)| {
                        src.link
                            .as_ref()
                            .and_then(|l| l.stamp)
                            .is_none_or(|s| Some(s) == now)
                    })
                });
            if fresh {
                return Ok(to_current(r.found));
            }
        }
        let found = self.relink(linker, &file, path);
        self.relinked
            .0
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(
                key,
                Relinked {
                    stamp,
                    found: found.clone(),
                },
            );
        Ok(to_current(found))
    }

    /// Links `path` of `file` again, into a scratch store of its own that
    /// follows this domain's link policy.
    fn relink(
        &self,
        linker: &Hdf5Linker,
        file: &Path,
        path: &str,
    ) -> std::result::Result<(Arc<Domain>, Arc<DatasetMeta>), String> {
        let opts = DomainOptions {
            link_policy: Some(self.link_policy().clone()),
            ..DomainOptions::default()
        };
        let scratch = Domain::open_with(
            Arc::new(h5lake_store::MemoryStore::new()),
            "",
            OpenMode::Truncate,
            format!("{} (linked again)", file.display()),
            &opts,
        )
        .map_err(|e| e.to_string())?;
        let id = linker(&scratch, file, path)?;
        let src = scratch.dataset(&id).map_err(|e| e.to_string())?;
        Ok((Arc::new(scratch), src))
    }
}

/// Whether the paths `a` and `b` name one file.
pub(crate) fn same_file(a: impl AsRef<Path>, b: impl AsRef<Path>) -> bool {
    let (a, b) = (a.as_ref(), b.as_ref());
    match (a.canonicalize(), b.canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => a == b,
    }
}

fn to_current(found: std::result::Result<(Arc<Domain>, Arc<DatasetMeta>), String>) -> Current {
    match found {
        Ok((dom, src)) => Current::Relinked(dom, src),
        Err(why) => Current::Unlinkable(why),
    }
}
