//! `load`: an HDF5 file into a new h5lake store.
//!
//! Two passes. The first walks the file with the library (serial: libhdf5
//! is single-threaded) and writes every group, link, attribute, committed
//! datatype and dataset document, collecting where each dataset's chunks
//! sit in the file. The second moves chunk bytes: plain `pread`s of the
//! file (no library call, so in parallel), decoded with h5lake's codecs in
//! libhdf5's byte layout and stored re-encoded as HSDS chunks. In link mode
//! the second pass does not run for datasets that can point at the file.
//!
//! Values holding object references are read between the two: a
//! reference names its target by the target's h5lake id, known once every
//! object is loaded.

use std::collections::HashMap;
use std::ffi::c_void;
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use h5lake_codecs::{ChunkFormat, Pipeline};
use h5lake_engine::linked::contiguous_chunk_dims;
use h5lake_engine::{DatasetMeta, Domain, OpenMode, Selection};
use h5lake_types::Datatype;
use hdf5_sys::h5d::{H5D_layout_t, H5Dget_create_plist, H5Dget_space, H5Dget_type};
use hdf5_sys::h5i::hid_t;
use hdf5_sys::h5l::{H5L_info2_t, H5L_type_t};
use hdf5_sys::h5o::{H5O_info2_t, H5O_type_t};
use hdf5_sys::h5p::H5P_DEFAULT;
use rayon::prelude::*;
use serde_json::{json, Map, Value};

use crate::attrs::{attribute_json, fill_value_json, read_values, shape_json, Values};
use crate::h5::{self, check, check_id, cstr, lib, Hid, StoredChunk};
use crate::memory::{converts, has_refs, RefConv, RefKind};
use crate::types::{from_hdf5, type_json, Repack, REF_BYTES};
use crate::virtual_layout;
use crate::{source, Hdf5Error, Result};

/// Default size of a logical chunk in link mode (decoded bytes).
const DEFAULT_HYPERCHUNK: u64 = 4 << 20;
/// Datasets with at most this many chunks keep their chunk map inline in
/// the layout (as hsload does for small ones); others get a chunk table.
const INLINE_CHUNK_LIMIT: usize = 64;
/// Size of the pieces a contiguous dataset is copied in.
const SLAB_BYTES: u64 = 16 << 20;

/// How to load.
#[derive(Clone, Debug, Default)]
pub struct LoadOptions {
    /// Point datasets at the file's chunks instead of copying them.
    pub link: bool,
    /// In link mode, group adjacent source chunks into logical chunks of
    /// about this many bytes (`None` = 4 MiB, `Some(0)` = one per chunk).
    pub hyperchunk: Option<u64>,
    /// Copy mode: store chunk bytes exactly as the file holds them
    /// (libhdf5's layout, marked `"h5lake": {"chunkFormat": "hdf5"}`)
    /// instead of re-encoding them as HSDS does. Several times faster;
    /// h5lake reads such stores, a real HSDS server does not.
    pub keep_chunks: bool,
    /// Replace an existing destination store.
    pub force: bool,
    /// Draw a progress bar on stderr.
    pub progress: bool,
    /// Copy mode: store compound datasets of fixed-size members columnar
    /// (each chunk one Parquet object; contiguous ones chunked by rows).
    pub columnar: bool,
    /// Link mode: a chunked dataset under a filter h5lake cannot apply is
    /// linked all the same, its values unreadable (named in the report as
    /// a part of it), as h5py without the filter's plugin lists it;
    /// otherwise it is left out.
    pub keep_undecodable: bool,
}

/// Rows per chunk of a contiguous compound dataset stored columnar: about
/// this many bytes.
const COLUMNAR_CHUNK_BYTES: u64 = 16 << 20;

/// What a load did.
#[derive(Clone, Debug, Default)]
pub struct LoadReport {
    pub groups: usize,
    pub datasets: usize,
    pub datatypes: usize,
    pub attributes: usize,
    pub links: usize,
    /// Datasets left pointing at the source file.
    pub linked_datasets: usize,
    /// Chunks copied.
    pub chunks: u64,
    /// Bytes of chunk data read from the source.
    pub bytes: u64,
    /// What was not loaded, and why.
    pub skipped: Vec<crate::Skipped>,
    /// What was loaded otherwise than asked (a compound kept in rows by
    /// `--columnar`, a filter left to Parquet), for the user to read.
    pub notes: Vec<String>,
}

/// Loads the HDF5 file `src` into a new h5lake store at `dest`.
///
/// # Errors
/// A missing, non-HDF5 or damaged source; an existing destination without
/// `force`; a filter or type h5lake cannot store (named); I/O trouble.
/// Nothing is left at `dest` on failure.
pub fn load(src: &Path, dest: &Path, opts: &LoadOptions) -> Result<LoadReport> {
    if let Some(url) = dest.to_str().filter(|d| d.starts_with("s3://")) {
        return load_to_bucket(src, url, opts);
    }
    let file = source::open(src)?;
    let src_abs = src.canonicalize()?;
    let replace = check_destination(dest, opts.force)?;
    let uri = link_uri(&src_abs, dest)?;
    let tmp = temp_sibling(dest)?;
    let result = Domain::open_local(&tmp, OpenMode::Truncate)
        .map_err(Hdf5Error::from)
        .and_then(|dom| load_into(&dom, &file, src_abs, uri, opts, Some(dest)));
    match result {
        Ok(report) => {
            if replace {
                remove_existing(dest)?;
            }
            std::fs::rename(&tmp, dest)?;
            Ok(report)
        }
        Err(e) => {
            let _ = std::fs::remove_dir_all(&tmp);
            Err(e)
        }
    }
}

/// Links the dataset at `path` of the HDF5 file `src` into the open domain
/// `dom` as an anonymous dataset (named by no link; its metadata copied,
/// its values left in the file, as `load --link` leaves them), for a
/// virtual dataset to map. Returns the new dataset's id.
///
/// # Errors
/// A file that is missing or not HDF5, no dataset at `path`, a dataset
/// h5lake cannot link (its reason); store trouble.
pub fn link_dataset(dom: &Domain, src: &Path, path: &str) -> Result<String> {
    let opts = LoadOptions {
        link: true,
        ..LoadOptions::default()
    };
    let src_abs = src.canonicalize()?;
    let uri = src_abs.to_string_lossy().into_owned();
    Ok(add_dataset(dom, src, path, &opts, uri, 1)?.0)
}

/// Virtual datasets whose sources are virtual datasets, at most this many
/// levels deep (a cycle of files mapping each other ends there).
const MAX_VIRTUAL_DEPTH: u32 = 16;

thread_local! {
    /// The datasets being linked on this thread, outermost first.
    static ON_THE_WAY: std::cell::RefCell<Vec<(PathBuf, String)>> =
        const { std::cell::RefCell::new(Vec::new()) };
}

/// A dataset being linked, on [`ON_THE_WAY`] until dropped.
struct OnTheWay;

impl OnTheWay {
    /// `None` when `at` is already on the way (a cycle).
    fn enter(at: (PathBuf, String)) -> Option<Self> {
        ON_THE_WAY.with(|w| {
            let mut w = w.borrow_mut();
            if w.contains(&at) {
                return None;
            }
            w.push(at);
            Some(OnTheWay)
        })
    }
}

impl Drop for OnTheWay {
    fn drop(&mut self) {
        ON_THE_WAY.with(|w| {
            w.borrow_mut().pop();
        });
    }
}

/// Lets virtual datasets of every domain in this process link their HDF5
/// sources again when those files change (see
/// [`h5lake_engine::hdf5_sources`]).
pub fn register_source_linker() {
    h5lake_engine::hdf5_sources::set_hdf5_linker(|dom, src, path| {
        link_dataset(dom, src, path).map_err(|e| e.to_string())
    });
}

/// Loads the dataset at `path` of the HDF5 file `src` into `dom` as an
/// anonymous dataset, linked or copied as `opts` say (a linked one names
/// the file as `uri`). A virtual dataset brings its own sources along,
/// `depth` levels below the virtual dataset that maps it.
fn add_dataset(
    dom: &Domain,
    src: &Path,
    path: &str,
    opts: &LoadOptions,
    uri: String,
    depth: u32,
) -> Result<(String, LoadReport)> {
    // (Virtual datasets that lead back to one on the way: refused at once,
    // rather than followed to the depth limit along every branch.)
    let here = (
        src.canonicalize().unwrap_or_else(|_| src.to_path_buf()),
        path.trim_start_matches('/').to_string(),
    );
    let _on_the_way = OnTheWay::enter(here).ok_or_else(|| {
        Hdf5Error::Unsupported(format!(
            "{path} of {} is reached again through its own virtual sources",
            src.display()
        ))
    })?;
    if depth > MAX_VIRTUAL_DEPTH {
        return Err(Hdf5Error::Unsupported(format!(
            "{path} of {}: virtual datasets nested more than {MAX_VIRTUAL_DEPTH} deep \
             (do its sources lead back to it?)",
            src.display()
        )));
    }
    // Every file a dataset's values are reached through (an external link's
    // target, a nested virtual dataset's sources) is one the domain's link
    // policy must allow: a server never opens what its operator did not.
    dom.link_policy()
        .check(&src.to_string_lossy(), None)
        .map_err(Hdf5Error::from)?;
    let file = source::open(src)?;
    let mut loader = Loader::new(dom, file.id(), src.canonicalize()?, uri, opts);
    loader.depth = depth;
    let cpath = cstr(path)?;
    let d = lib(|| unsafe { hdf5_sys::h5d::H5Dopen2(file.id(), cpath.as_ptr(), H5P_DEFAULT) });
    if d < 0 {
        return Err(Hdf5Error::SourceNotFound(format!(
            "{} has no dataset {path}",
            src.display()
        )));
    }
    let d = Hid(d);
    // Reached through an external link, the dataset's values are in the
    // link's target file: that file is the one to link.
    if let Some(other) = crate::h5::file_name_of(d.id()) {
        let here = src.canonicalize()?;
        // (Never linked to `src` at the other file's offsets: a target that
        // cannot be found from here is refused by name.)
        let other = Path::new(&other).canonicalize().map_err(|e| {
            Hdf5Error::SourceNotFound(format!(
                "{path} of {} is in {other} (through an external link), which cannot be \
                 opened from here: {e}",
                src.display()
            ))
        })?;
        if other != here {
            let inner = crate::h5::path_of(d.id()).unwrap_or_else(|| path.to_string());
            drop(d);
            drop(loader);
            drop(file);
            let uri = other.to_string_lossy().into_owned();
            return add_dataset(dom, &other, &inner, opts, uri, depth);
        }
    }
    let id = loader.dataset(d.id(), path)?.ok_or_else(|| {
        Hdf5Error::Unsupported(
            loader
                .report
                .skipped
                .first()
                .map_or_else(|| format!("{path} cannot be linked"), |s| s.to_string()),
        )
    })?;
    // A source's attributes are no one's to see (it is anonymous), and
    // those holding references (the dimension scales of every netCDF-4
    // variable) name objects not loaded: not read.
    loader
        .pending
        .retain(|p| !matches!(p, Pending::Attr { .. }));
    let (token, _) = token_of(d.id())?;
    loader.seen.insert(token, id.clone());
    loader.read_references()?;
    loader.name_committed_types()?;
    loader.move_chunks()?;
    Ok((id, loader.report))
}

/// `map` reordered as `names` lists its keys (those it does not list last,
/// in the order they were).
fn in_order_of(map: &mut Map<String, Value>, names: &[String]) {
    let rank: HashMap<&str, usize> = names
        .iter()
        .enumerate()
        .map(|(i, n)| (n.as_str(), i))
        .collect();
    let mut entries: Vec<(String, Value)> = std::mem::take(map).into_iter().collect();
    entries.sort_by_key(|(k, _)| rank.get(k.as_str()).copied().unwrap_or(usize::MAX));
    map.extend(entries);
}

/// An HDF5 file opened in place, read-only: its groups, attributes and
/// dataset descriptions are loaded into a store held in memory, and its
/// values stay in the file, read from it as `load --link` stores read them.
/// This is what lets `h5lake.File("data.h5")` open a file as h5py does.
/// Datasets a linked store cannot point at (converted types, compact
/// layouts) have their values copied into memory.
///
/// The report's `skipped` names what could not be represented; the caller
/// decides how loudly to say so.
///
/// # Errors
/// A missing, non-HDF5 or damaged file; I/O trouble.
pub fn open_in_place(src: &Path, chunk_cache_bytes: usize) -> Result<(Domain, LoadReport)> {
    let file = source::open(src)?;
    let src_abs = src.canonicalize()?;
    let uri = src_abs.to_string_lossy().into_owned();
    let store: std::sync::Arc<dyn h5lake_store::Store> =
        std::sync::Arc::new(h5lake_store::MemoryStore::new());
    let location = src.to_string_lossy().into_owned();
    // The user named this file in their own process: its external links
    // and virtual sources lead where the user's own reads may go.
    let opts = h5lake_engine::DomainOptions {
        link_policy: Some(h5lake_engine::LinkPolicy::trusting()),
        chunk_cache_bytes,
        ..Default::default()
    };
    let building = Domain::open_with(
        store.clone(),
        "",
        OpenMode::Truncate,
        location.clone(),
        &opts,
    )?;
    let link = LoadOptions {
        link: true,
        keep_undecodable: true,
        ..LoadOptions::default()
    };
    let report = load_into(&building, &file, src_abs, uri, &link, None)?;
    building.flush()?;
    drop(building);
    let dom = Domain::open_with(store, "", OpenMode::Read, location, &opts)?;
    Ok((dom, report))
}

/// Loads the open file into `dom` (a fresh domain).
fn load_into(
    dom: &Domain,
    file: &Hid,
    src: PathBuf,
    uri: String,
    opts: &LoadOptions,
    dest: Option<&Path>,
) -> Result<LoadReport> {
    let mut loader = Loader::new(dom, file.id(), src, uri, opts);
    loader.dest = dest.map(Path::to_path_buf);
    loader.run(file.id())?;
    Ok(loader.report)
}

/// [`load`] into an object store (`s3://bucket/path`). There is no directory
/// to rename, but a domain is only its `.domain.json` naming a root group
/// (the objects are keyed by the root's id, not by the path), so the load is
/// built under a hidden sibling name and then published by writing the
/// final `.domain.json`: readers see the old domain or the whole new one.
fn load_to_bucket(src: &Path, url: &str, opts: &LoadOptions) -> Result<LoadReport> {
    if opts.link {
        return Err(Hdf5Error::Unsupported(
            "--link into an object store: its readers could not reach a local source file; load a copy (without --link)".into(),
        ));
    }
    let file = source::open(src)?;
    let src_abs = src.canonicalize()?;
    let in_bucket = url["s3://".len()..]
        .split_once('/')
        .map_or("", |(_, p)| p.trim_matches('/'));
    let Some((dir, name)) = url
        .trim_end_matches('/')
        .rsplit_once('/')
        .filter(|_| !in_bucket.is_empty())
    else {
        return Err(Hdf5Error::Unsupported(format!(
            "{url}: name a domain inside the bucket (s3://bucket/path/name.h5)"
        )));
    };
    match Domain::open_url_with(url, OpenMode::Read, &Default::default()) {
        Ok(_) if !opts.force => {
            return Err(Hdf5Error::DestinationExists(format!(
                "{url} already exists; pass --force (force=True) to replace it"
            )))
        }
        Ok(_) | Err(h5lake_engine::EngineError::StoreNotFound(_)) => {}
        Err(h5lake_engine::EngineError::NotAStore(m)) => {
            return Err(Hdf5Error::DestinationExists(m))
        }
        Err(e) => return Err(e.into()),
    }
    let tmp_url = format!("{dir}/.{name}.partial-{}", std::process::id());
    let dom = Domain::open_url_with(&tmp_url, OpenMode::Truncate, &Default::default())?;
    let uri = src_abs.to_string_lossy().into_owned();
    let result = load_into(&dom, &file, src_abs, uri, opts, None);
    match result {
        Ok(report) => {
            let store = dom.store().clone();
            if let Some(old_root) = dom.publish_as(name, opts.force)? {
                store.delete_prefix(&h5lake_engine::ids::domain_db_prefix(&old_root)?)?;
            }
            Ok(report)
        }
        Err(e) => {
            if let Err(left) = dom.delete_domain() {
                // (The store that failed the load can fail its removal too:
                // said, with what to do once it answers again.)
                eprintln!(
                    "h5lake load: the partial copy {tmp_url} could not be removed ({left}); \
                     remove it with: h5lake rm -r {tmp_url}"
                );
            }
            Err(e)
        }
    }
}

/// How linked datasets name their source: relative to the directory that
/// holds the bucket when the store is a domain inside an HSDS bucket and the
/// source sits below that directory (so HSDS, whose POSIX storage resolves
/// `bucket/key` paths against its `root_dir`, reads the same bytes), else
/// the absolute path.
fn link_uri(src_abs: &Path, dest: &Path) -> Result<String> {
    let (bucket, domain_path) = h5lake_engine::domain::resolve_local(dest)?;
    if !domain_path.is_empty() {
        if let Some(rel) = bucket
            .parent()
            .and_then(|root| src_abs.strip_prefix(root).ok())
        {
            return Ok(rel.to_string_lossy().into_owned());
        }
    }
    Ok(src_abs.to_string_lossy().into_owned())
}

/// Whether an existing `dest` is to be replaced.
fn check_destination(dest: &Path, force: bool) -> Result<bool> {
    if !dest.exists() {
        return Ok(false);
    }
    if !force {
        return Err(Hdf5Error::DestinationExists(format!(
            "{} already exists; pass --force (force=True) to replace it",
            dest.display()
        )));
    }
    if dest.is_dir() && !dest.join(".domain.json").exists() {
        return Err(Hdf5Error::DestinationExists(format!(
            "{} is a directory that is not an h5lake store; refusing to replace it",
            dest.display()
        )));
    }
    Ok(true)
}

/// Refuses a destination inside a store: a store made there would hide
/// the store's group of that name, and a file would sit among its objects.
pub(crate) fn outside_stores(dest: &Path) -> Result<()> {
    let abs = h5lake_engine::domain::lexically_absolute(dest)?;
    match h5lake_engine::domain::store_around(&abs) {
        Some(store) => Err(Hdf5Error::Unsupported(format!(
            "{} is inside the store {}; give a path outside any store",
            dest.display(),
            store.display()
        ))),
        None => Ok(()),
    }
}

fn remove_existing(dest: &Path) -> Result<()> {
    if dest.is_dir() {
        std::fs::remove_dir_all(dest)?;
    } else {
        std::fs::remove_file(dest)?;
    }
    Ok(())
}

/// A fresh path next to `dest` to build into, so that the final rename is
/// atomic and a failure leaves nothing at `dest`.
pub(crate) fn temp_sibling(dest: &Path) -> Result<PathBuf> {
    outside_stores(dest)?;
    let name = dest
        .file_name()
        .ok_or_else(|| Hdf5Error::Unsupported(format!("{} has no file name", dest.display())))?;
    let parent = match dest.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    if !parent.is_dir() {
        return Err(Hdf5Error::SourceNotFound(format!(
            "{}: the destination's directory does not exist",
            parent.display()
        )));
    }
    let tmp = parent.join(format!(
        ".{}.partial-{}",
        name.to_string_lossy(),
        std::process::id()
    ));
    if tmp.exists() {
        remove_existing(&tmp)?;
    }
    Ok(tmp)
}

/// Chunk bytes still to move for one dataset.
// One job per dataset, held in a Vec for the second pass: the size of the
// bigger variant costs nothing worth a Box.
#[allow(clippy::large_enum_variant)]
enum Job {
    /// Chunks of a chunked dataset, same chunk shape on both sides.
    Chunks {
        path: String,
        meta: DatasetMeta,
        chunks: Vec<StoredChunk>,
        source: Pipeline,
        repack: Option<Repack>,
        /// Store the file's bytes as they are (see [`LoadOptions::keep_chunks`]).
        verbatim: bool,
    },
    /// A contiguous dataset's one byte range, copied in slabs of rows.
    Contiguous {
        id: String,
        dims: Vec<u64>,
        addr: u64,
        repack: Option<Repack>,
        file_elem: usize,
    },
}

/// Values holding object references, read once every object is loaded.
enum Pending {
    /// An attribute of the object at `path`.
    Attr { path: String, name: String },
    /// The values of the dataset at `path`, stored as `id`.
    Values {
        path: String,
        id: String,
        dt: Datatype,
        tjson: Value,
        dims: Vec<u64>,
    },
}

/// Object references of the source file in their stored form (see
/// `crate::memory`): the target's collection and h5lake id.
struct RefReader<'s> {
    file: hid_t,
    seen: &'s HashMap<[u8; 16], String>,
    /// The target of each `hobj_ref_t` met.
    targets: HashMap<u64, Target>,
    /// References to objects that were not loaded, read as null ones.
    missing: usize,
    /// References to attributes and regions, read as null ones.
    not_objects: usize,
}

/// What a reference points at.
#[derive(Clone)]
enum Target {
    /// A loaded object, or nothing (a null or dangling reference): the
    /// stored form.
    Stored(Vec<u8>),
    /// An object that was not loaded.
    NotLoaded,
    /// An attribute or a region (HDF5's current references).
    NotAnObject,
}

impl<'s> RefReader<'s> {
    fn new(file: hid_t, seen: &'s HashMap<[u8; 16], String>) -> Self {
        RefReader {
            file,
            seen,
            targets: HashMap::new(),
            missing: 0,
            not_objects: 0,
        }
    }

    /// What was read as null since the last call, if anything.
    fn lost(&mut self) -> Option<String> {
        let (missing, not_objects) = (self.missing, self.not_objects);
        self.missing = 0;
        self.not_objects = 0;
        match (missing, not_objects) {
            (0, 0) => None,
            (m, 0) => Some(format!(
                "{m} object references to objects h5lake did not load, read as null references"
            )),
            (0, n) => Some(format!(
                "{n} references to attributes or regions, read as null references"
            )),
            (m, n) => Some(format!(
                "{m} references to objects h5lake did not load and {n} to attributes or regions, read as null references"
            )),
        }
    }

    /// The stored form of one reference: the bytes of an `H5R_ref_t`
    /// (`current_api`) or of an `hobj_ref_t`.
    fn stored(&mut self, kind: RefKind, r: &[u8]) -> Result<Vec<u8>> {
        if kind == RefKind::Region {
            return self.region(r);
        }
        let current_api = kind == RefKind::Current;
        let target = if current_api {
            referenced(self.file, self.seen, true, r)?
        } else {
            let addr =
                hdf5_sys::h5r::hobj_ref_t::from_ne_bytes(r.try_into().map_err(|_| {
                    Hdf5Error::Library("an object reference of another size".into())
                })?);
            match self.targets.get(&addr) {
                Some(t) => t.clone(),
                None => {
                    let t = referenced(self.file, self.seen, false, r)?;
                    self.targets.insert(addr, t.clone());
                    t
                }
            }
        };
        match target {
            Target::Stored(b) => return Ok(b),
            Target::NotLoaded => self.missing += 1,
            Target::NotAnObject => self.not_objects += 1,
        }
        Ok(vec![0u8; REF_BYTES])
    }
}

impl RefReader<'_> {
    /// The stored form of a `hdset_reg_ref_t`: h5json's JSON text naming
    /// the dataset by its h5lake id and spelling the selection out (empty
    /// for a null or dangling reference, and for one to a dataset that was
    /// not loaded, which is counted).
    fn region(&mut self, r: &[u8]) -> Result<Vec<u8>> {
        if r.iter().all(|&b| b == 0) {
            return Ok(Vec::new());
        }
        let region = hdf5_sys::h5r::H5R_type_t::H5R_DATASET_REGION1;
        let dset = lib(|| unsafe {
            hdf5_sys::h5r::H5Rdereference2(self.file, H5P_DEFAULT, region, r.as_ptr().cast())
        });
        if dset < 0 {
            return Ok(Vec::new());
        }
        let dset = Hid(dset);
        let (token, _) = token_of(dset.id())?;
        let Some(id) = self.seen.get(&token) else {
            self.missing += 1;
            return Ok(Vec::new());
        };
        let space = check_id(
            lib(|| unsafe { hdf5_sys::h5r::H5Rget_region(self.file, region, r.as_ptr().cast()) }),
            "reading a region reference",
        )?;
        let mut sel = crate::regions::selection_json(space.id())?;
        sel["id"] = json!(id);
        Ok(h5lake_types::region_ref_bytes(&sel)?)
    }
}

/// The target of `r` (an `H5R_ref_t` when `current_api`, else an
/// `hobj_ref_t`).
fn referenced(
    file: hid_t,
    seen: &HashMap<[u8; 16], String>,
    current_api: bool,
    r: &[u8],
) -> Result<Target> {
    let obj = if r.iter().all(|&b| b == 0) {
        // The library's null reference, in either form.
        -1
    } else if current_api {
        // SAFETY: `r` holds an H5R_ref_t the library read (unaligned).
        let r = unsafe {
            r.as_ptr()
                .cast::<hdf5_sys::h5r::H5R_ref_t>()
                .read_unaligned()
        };
        match lib(|| unsafe { hdf5_sys::h5r::H5Rget_type(&r) }) {
            hdf5_sys::h5r::H5R_type_t::H5R_OBJECT2 => {
                lib(|| unsafe { hdf5_sys::h5r::H5Ropen_object(&r, H5P_DEFAULT, H5P_DEFAULT) })
            }
            hdf5_sys::h5r::H5R_type_t::H5R_BADTYPE => -1,
            _ => return Ok(Target::NotAnObject),
        }
    } else {
        lib(|| unsafe {
            hdf5_sys::h5r::H5Rdereference2(
                file,
                H5P_DEFAULT,
                hdf5_sys::h5r::H5R_type_t::H5R_OBJECT1,
                r.as_ptr().cast(),
            )
        })
    };
    if obj < 0 {
        // Null or dangling: h5py reads it as a reference to nothing either.
        return Ok(Target::Stored(vec![0u8; REF_BYTES]));
    }
    let obj = Hid(obj);
    let (token, _) = token_of(obj.id())?;
    let Some(id) = seen.get(&token) else {
        return Ok(Target::NotLoaded);
    };
    let collection = match id.get(..2) {
        Some("g-") => "groups",
        Some("t-") => "datatypes",
        _ => "datasets",
    };
    let mut out = format!("{collection}/{id}").into_bytes();
    if out.len() > REF_BYTES {
        return Err(Hdf5Error::Library(format!(
            "an object id too long to reference: {id}"
        )));
    }
    out.resize(REF_BYTES, 0);
    Ok(Target::Stored(out))
}

struct Loader<'a> {
    dom: &'a Domain,
    /// The source file.
    file: hid_t,
    src: PathBuf,
    /// The source as linked datasets name it (see [`link_uri`]).
    uri: String,
    /// The source's size and modification time, kept in each linked
    /// layout so that reads of a file changed since are refused.
    stamp: Value,
    opts: &'a LoadOptions,
    report: LoadReport,
    /// Object token in the file → h5lake id, so that an object reached by
    /// several hard links is loaded once.
    seen: HashMap<[u8; 16], String>,
    jobs: Vec<Job>,
    pending: Vec<Pending>,
    /// The store being made, when it is a local path (linked datasets of
    /// other files name them relative to it, as [`link_uri`] says).
    dest: Option<PathBuf>,
    /// How many virtual datasets deep this load is: 0 for a whole file,
    /// 1 for one dataset a virtual dataset maps, more for the sources of a
    /// virtual dataset that is itself a source.
    depth: u32,
    /// Sources of virtual datasets in other files, loaded once each:
    /// (file, dataset path) → the anonymous dataset (`None`: missing).
    virtual_sources: HashMap<(PathBuf, String), Option<String>>,
    /// Datasets whose type is a committed datatype of the file, with that
    /// datatype's token: the dataset's type names it once it is loaded
    /// (see [`Loader::name_committed_types`]).
    committed_uses: Vec<(String, [u8; 16])>,
}

impl<'a> Loader<'a> {
    fn new(dom: &'a Domain, file: hid_t, src: PathBuf, uri: String, opts: &'a LoadOptions) -> Self {
        let stamp = std::fs::metadata(&src)
            .map(|m| h5lake_engine::linked::stamp_json(h5lake_engine::linked::file_stamp(&m)))
            .unwrap_or(Value::Null);
        Loader {
            dom,
            file,
            src,
            uri,
            stamp,
            opts,
            report: LoadReport::default(),
            seen: HashMap::new(),
            jobs: Vec::new(),
            pending: Vec::new(),
            dest: None,
            depth: 0,
            virtual_sources: HashMap::new(),
            committed_uses: Vec::new(),
        }
    }
}

fn token_of(obj: hid_t) -> Result<([u8; 16], H5O_type_t)> {
    let mut info: H5O_info2_t = unsafe { std::mem::zeroed() };
    check(
        lib(|| unsafe {
            hdf5_sys::h5o::H5Oget_info3(obj, &mut info, hdf5_sys::h5o::H5O_INFO_BASIC)
        }),
        "reading object info",
    )?;
    // SAFETY: a token is 16 opaque bytes.
    let token: [u8; 16] = unsafe { std::mem::transmute(info.token) };
    Ok((token, info.type_))
}

fn child_path(parent: &str, name: &str) -> String {
    if parent == "/" {
        format!("/{name}")
    } else {
        format!("{parent}/{name}")
    }
}

impl Loader<'_> {
    fn run(&mut self, file: hid_t) -> Result<()> {
        let root = check_id(
            lib(|| unsafe { hdf5_sys::h5g::H5Gopen2(file, c"/".as_ptr(), H5P_DEFAULT) }),
            "opening the root group",
        )?;
        let (token, _) = token_of(root.id())?;
        let root_id = self.dom.root_id().to_string();
        self.seen.insert(token, root_id.clone());
        if let Some(lost) = crate::userblock::keep(file, &self.src, self.dom, &root_id)? {
            self.report
                .skipped
                .push(crate::Skipped::part("/", "user block", lost));
        }
        self.group(root.id(), &root_id, "/")?;
        self.read_references()?;
        self.name_committed_types()?;
        self.move_chunks()
    }

    /// Notes the dataset `d` (loaded as `id`) when its type is a
    /// committed datatype, as HDF5 links them.
    fn note_committed_type(&mut self, d: hid_t, id: &str) -> Result<()> {
        let ft = check_id(
            lib(|| unsafe { H5Dget_type(d) }),
            "reading a dataset's type",
        )?;
        if check(
            lib(|| unsafe { hdf5_sys::h5t::H5Tcommitted(ft.id()) }),
            "reading a dataset's type",
        )? > 0
        {
            let (token, _) = token_of(ft.id())?;
            self.committed_uses.push((id.to_string(), token));
        }
        Ok(())
    }

    /// Names in each dataset's type the committed datatype it was made
    /// with (`"id"`, as HSDS gives it), now that every datatype is loaded;
    /// one that was not loaded (left out) is not named.
    fn name_committed_types(&mut self) -> Result<()> {
        for (did, token) in std::mem::take(&mut self.committed_uses) {
            let Some(tid) = self.seen.get(&token).filter(|t| t.starts_with("t-")) else {
                continue;
            };
            self.dom.update_doc(&did, |doc| {
                if let Some(t) = doc.get_mut("type").and_then(Value::as_object_mut) {
                    t.insert("id".into(), json!(tid));
                }
                Ok(())
            })?;
        }
        Ok(())
    }

    /// `r`'s value, or `None` when h5lake cannot hold what it reads: the
    /// object at `path` is then named in the report as left out (`what`
    /// is not supported, and why).
    fn or_skip<T>(&mut self, path: &str, what: &str, r: Result<T>) -> Result<Option<T>> {
        match r {
            Ok(v) => Ok(Some(v)),
            Err(Hdf5Error::Unsupported(why)) => {
                self.report.skipped.push(crate::Skipped::object(
                    path,
                    format!("{what} not supported ({why})"),
                ));
                Ok(None)
            }
            Err(e) => Err(e),
        }
    }

    /// Reads the values left for when every object is loaded (`pending`).
    fn read_references(&mut self) -> Result<()> {
        let mut refs = RefReader::new(self.file, &self.seen);
        for p in std::mem::take(&mut self.pending) {
            let path = match &p {
                Pending::Attr { path, .. } | Pending::Values { path, .. } => path.clone(),
            };
            let cpath = cstr(&path)?;
            let obj = check_id(
                lib(|| unsafe { hdf5_sys::h5o::H5Oopen(self.file, cpath.as_ptr(), H5P_DEFAULT) }),
                &format!("opening {path}"),
            )?;
            let part = match p {
                Pending::Attr { name, .. } => {
                    let part = format!("attribute {name:?}");
                    let (token, _) = token_of(obj.id())?;
                    let id = refs
                        .seen
                        .get(&token)
                        .cloned()
                        .ok_or_else(|| Hdf5Error::Library(format!("{path} was not loaded")))?;
                    match attribute_json(obj.id(), &name, Some(&mut |c, r| refs.stored(c, r))) {
                        Ok(a) => {
                            // Read last, but listed where the file lists it
                            // (the dimension list of a netCDF-4 variable sits
                            // among its attributes in creation order).
                            let order = h5::attr_names(obj.id())?;
                            self.dom.update_doc(&id, |doc| {
                                doc["attributes"][&name] = a.clone().unwrap_or_default();
                                if let Some(attrs) = doc["attributes"].as_object_mut() {
                                    in_order_of(attrs, &order);
                                }
                                Ok(())
                            })?;
                            self.report.attributes += 1;
                        }
                        Err(Hdf5Error::Unsupported(why)) => {
                            self.report
                                .skipped
                                .push(crate::Skipped::part(&path, part, why));
                            refs.lost();
                            continue;
                        }
                        Err(e) => return Err(e),
                    }
                    part
                }
                Pending::Values {
                    id,
                    dt,
                    tjson,
                    dims,
                    ..
                } => {
                    self.report.bytes += copy_through_library(
                        self.dom,
                        obj.id(),
                        &id,
                        &dt,
                        &tjson,
                        &dims,
                        &mut |c, r| refs.stored(c, r),
                    )?;
                    "values".to_string()
                }
            };
            if let Some(why) = refs.lost() {
                self.report
                    .skipped
                    .push(crate::Skipped::part(&path, part, why));
            }
        }
        Ok(())
    }

    /// Attributes of an object; those h5lake cannot hold are reported,
    /// those holding object references left for later (`pending`).
    fn attributes(&mut self, obj: hid_t, path: &str) -> Result<Map<String, Value>> {
        let mut out = Map::new();
        for name in h5::attr_names(obj)? {
            match attribute_json(obj, &name, None) {
                Ok(Some(a)) => {
                    out.insert(name, a);
                    self.report.attributes += 1;
                }
                Ok(None) => self.pending.push(Pending::Attr {
                    path: path.to_string(),
                    name,
                }),
                Err(Hdf5Error::Unsupported(why)) => self.report.skipped.push(crate::Skipped::part(
                    path,
                    format!("attribute {name:?}"),
                    why,
                )),
                Err(e) => return Err(e),
            }
        }
        Ok(out)
    }

    fn group(&mut self, gid: hid_t, id: &str, path: &str) -> Result<()> {
        self.report.groups += 1;
        let attrs = self.attributes(gid, path)?;
        let mut links = Map::new();
        for name in h5::link_names(gid)? {
            let cname = cstr(&name)?;
            let mut info = H5L_info2_t::default();
            check(
                lib(|| unsafe {
                    hdf5_sys::h5l::H5Lget_info2(gid, cname.as_ptr(), &mut info, H5P_DEFAULT)
                }),
                "reading a link",
            )?;
            let cpath = child_path(path, &name);
            let link = match info.type_ {
                H5L_type_t::H5L_TYPE_HARD => match self.hard_link_target(gid, &cname, &cpath)? {
                    Some(target) => json!({"class": "H5L_TYPE_HARD", "id": target}),
                    None => continue,
                },
                H5L_type_t::H5L_TYPE_SOFT => {
                    let target = link_value(gid, &cname, &mut info)?;
                    let target = String::from_utf8_lossy(
                        target.split(|&b| b == 0).next().unwrap_or_default(),
                    )
                    .into_owned();
                    json!({"class": "H5L_TYPE_SOFT", "h5path": target})
                }
                H5L_type_t::H5L_TYPE_EXTERNAL => {
                    let raw = link_value(gid, &cname, &mut info)?;
                    let (file, obj) = unpack_external(&raw)?;
                    json!({"class": "H5L_TYPE_EXTERNAL", "h5domain": file, "h5path": obj})
                }
                _ => {
                    self.report.skipped.push(crate::Skipped::object(
                        &cpath,
                        "a link of a user-defined class",
                    ));
                    continue;
                }
            };
            let mut link = link;
            link["created"] = json!(h5lake_engine::domain::now());
            links.insert(name, link);
            self.report.links += 1;
        }
        // Listed in creation order where the file keeps it (above), and
        // marked so that h5lake keeps listing them that way.
        let ordered = h5::tracks_creation_order(gid, true)?;
        self.dom.update_doc(id, |doc| {
            doc["links"] = Value::Object(links.clone());
            doc["attributes"] = Value::Object(attrs.clone());
            if ordered {
                if !doc.get("creationProperties").is_some_and(Value::is_object) {
                    doc["creationProperties"] = json!({});
                }
                doc["creationProperties"]["CreateOrder"] = json!(1);
            }
            Ok(())
        })?;
        Ok(())
    }

    /// The h5lake id of a hard link's target, loading the object the first
    /// time it is reached. `None` when the object was skipped.
    fn hard_link_target(
        &mut self,
        gid: hid_t,
        cname: &std::ffi::CStr,
        path: &str,
    ) -> Result<Option<String>> {
        let obj = check_id(
            lib(|| unsafe { hdf5_sys::h5o::H5Oopen(gid, cname.as_ptr(), H5P_DEFAULT) }),
            &format!("opening {path}"),
        )?;
        let (token, kind) = token_of(obj.id())?;
        if let Some(id) = self.seen.get(&token) {
            return Ok(Some(id.clone()));
        }
        let id = match kind {
            H5O_type_t::H5O_TYPE_GROUP => {
                let id = self.dom.create_group(json!({}))?;
                // Recorded before descending, so that a cycle links back.
                self.seen.insert(token, id.clone());
                self.group(obj.id(), &id, path)?;
                id
            }
            H5O_type_t::H5O_TYPE_DATASET => match self.dataset(obj.id(), path)? {
                Some(id) => {
                    self.note_committed_type(obj.id(), &id)?;
                    id
                }
                None => return Ok(None),
            },
            H5O_type_t::H5O_TYPE_NAMED_DATATYPE => {
                let dt = from_hdf5(obj.id())?;
                let id = self.dom.create_datatype(type_json(obj.id(), &dt)?)?;
                let attrs = self.attributes(obj.id(), path)?;
                self.set_attributes(&id, attrs)?;
                self.report.datatypes += 1;
                id
            }
            _ => {
                self.report
                    .skipped
                    .push(crate::Skipped::object(path, "an object of unknown kind"));
                return Ok(None);
            }
        };
        self.seen.insert(token, id.clone());
        Ok(Some(id))
    }

    fn set_attributes(&self, id: &str, attrs: Map<String, Value>) -> Result<()> {
        if attrs.is_empty() {
            return Ok(());
        }
        self.dom.update_doc(id, |doc| {
            doc["attributes"] = Value::Object(attrs.clone());
            Ok(())
        })?;
        Ok(())
    }

    /// Loads a dataset; `None` (reported in `skipped`) when its type is one
    /// h5lake cannot hold, such as references.
    fn dataset(&mut self, d: hid_t, path: &str) -> Result<Option<String>> {
        if h5lake_engine::cancel::is_set(&h5lake_engine::cancel::current()) {
            return Err(h5lake_engine::EngineError::Interrupted.into());
        }
        let ft = check_id(
            lib(|| unsafe { H5Dget_type(d) }),
            "reading a dataset's type",
        )?;
        let Some(dt) = self.or_skip(path, "its type is", from_hdf5(ft.id()))? else {
            return Ok(None);
        };
        let tjson = type_json(ft.id(), &dt)?;
        let space = check_id(
            lib(|| unsafe { H5Dget_space(d) }),
            "reading a dataset's shape",
        )?;
        let (shape, dims, _) = shape_json(space.id())?;
        let dcpl = check_id(
            lib(|| unsafe { H5Dget_create_plist(d) }),
            "reading creation properties",
        )?;
        let layout = lib(|| unsafe { hdf5_sys::h5p::H5Pget_layout(dcpl.id()) });
        let external = lib(|| unsafe { hdf5_sys::h5p::H5Pget_external_count(dcpl.id()) });
        // Layouts and filters h5lake cannot hold leave the dataset out,
        // named in the report (the load is then incomplete).
        let skip = |why: String| crate::Skipped::object(path, why);
        if external > 0 {
            self.report.skipped.push(skip(
                "it keeps its data in external files (external storage), which h5lake cannot load"
                    .into(),
            ));
            return Ok(None);
        }
        let filters = filter_entries(dcpl.id(), path)?;
        // Why the values cannot be read, when h5lake cannot apply a filter.
        let mut undecodable = None;
        let pipeline = match Pipeline::from_hsds_json(&Value::Array(filters.clone())) {
            Ok(p) => p,
            Err(e) if self.opts.keep_undecodable && self.opts.link => {
                undecodable = Some(format!("its filters: {e}"));
                Pipeline::described(&Value::Array(filters.clone()))?
            }
            Err(e) => {
                self.report.skipped.push(skip(format!("its filters: {e}")));
                return Ok(None);
            }
        };
        let mut cprops = json!({});
        if !filters.is_empty() {
            cprops["filters"] = pipeline.to_hsds_json();
        }
        if h5::tracks_creation_order(d, false)? {
            // (Its attributes, in creation order: kept so.)
            cprops["CreateOrder"] = json!(1);
        }
        let mut refs = RefReader::new(self.file, &self.seen);
        let fill = fill_value_json(dcpl.id(), &dt, &tjson, &mut |c, r| refs.stored(c, r))?;
        if let Some(why) = refs.lost() {
            self.report
                .skipped
                .push(crate::Skipped::part(path, "fill value", why));
        }
        if let Some(fill) = fill {
            cprops["fillValue"] = fill;
        }
        // When the fill value is written, and when space is allocated, as
        // the file's dataset says (get writes them back; they were lost).
        fill_and_alloc_times(dcpl.id(), layout, &mut cprops)?;
        if layout == H5D_layout_t::H5D_VIRTUAL {
            let attrs = self.attributes(d, path)?;
            let Some(id) = self.virtual_dataset(dcpl.id(), path, &tjson, shape, cprops)? else {
                return Ok(None);
            };
            self.report.datasets += 1;
            self.set_attributes(&id, attrs)?;
            return Ok(Some(id));
        }
        // Elements h5lake stores otherwise than the file: read through the
        // library, never copied or linked byte for byte.
        let partial = crate::types::has_partial_integers(ft.id())?;
        if partial {
            // (Said, not silent: the values are kept, the narrower type is not.)
            self.report.notes.push(format!(
                "{path}: integers of fewer bits than their size (HDF5's precision and offset) \
                 are stored at their full size; the values are the same"
            ));
        }
        let converted = converts(&dt) || partial;
        let repack = if converted {
            None
        } else {
            Repack::of(ft.id())?
        };
        let chunk_dims = match layout {
            H5D_layout_t::H5D_CHUNKED => {
                let mut c = vec![0u64; dims.len()];
                check(
                    lib(|| unsafe {
                        hdf5_sys::h5p::H5Pget_chunk(dcpl.id(), dims.len() as i32, c.as_mut_ptr())
                    }),
                    "reading chunk dims",
                )?;
                Some(c)
            }
            _ => None,
        };
        let attrs = self.attributes(d, path)?;
        self.report.datasets += 1;
        let es = dt.fixed_size().unwrap_or(0);
        let linkable = self.opts.link && !converted && repack.is_none() && es > 0;
        // Columnar: a compound whose members Parquet columns hold, copied
        // (never linked), chunked; the source's compressor kept where
        // Parquet has it (gzip, zstd, lz4), other filters left to Parquet's
        // own encodings.
        let columnar = self.opts.columnar
            && !self.opts.link
            && matches!(dt, Datatype::Compound { .. })
            && !dims.is_empty()
            && h5lake_columnar::check_type(&dt).is_ok();
        if self.opts.columnar && matches!(dt, Datatype::Compound { .. }) && !columnar {
            let why = match h5lake_columnar::check_type(&dt) {
                Err(e) => e.to_string(),
                Ok(()) if dims.is_empty() => "a scalar has no rows to hold in columns".into(),
                Ok(()) => "linked datasets keep the file's own layout".into(),
            };
            self.report
                .notes
                .push(format!("{path}: kept in row layout, not columnar: {why}"));
        }
        let chunk_dims = if columnar {
            let mut c = chunk_dims.unwrap_or_else(|| {
                let rows = (COLUMNAR_CHUNK_BYTES / (es.max(1) as u64)).max(1);
                let mut c = dims.clone();
                c[0] = c[0].clamp(1, rows);
                c.iter_mut().skip(1).for_each(|d| *d = (*d).max(1));
                c
            });
            c.iter_mut().for_each(|d| *d = (*d).max(1));
            cprops["h5lake"] = json!({"chunkFormat": "parquet"});
            if let Some(filters) = cprops.get("filters").and_then(Value::as_array) {
                let (kept, left): (Vec<Value>, Vec<Value>) =
                    filters.iter().cloned().partition(|f| {
                        h5lake_columnar::Compression::from_filters(&json!([f]))
                            .is_ok_and(|c| c != h5lake_columnar::Compression::None)
                    });
                // (Shuffling is what Parquet's encodings do anyway.)
                let named: Vec<&str> = left
                    .iter()
                    .filter_map(|f| f.get("class").and_then(Value::as_str))
                    .filter(|c| *c != "H5Z_FILTER_SHUFFLE")
                    .collect();
                if !named.is_empty() {
                    self.report.notes.push(format!(
                        "{path}: stored columnar without {} (a Parquet chunk keeps only a \
                         compressor, as Parquet's own codec)",
                        named.join(", ")
                    ));
                }
                cprops["filters"] = json!(kept);
            }
            Some(c)
        } else {
            chunk_dims
        };

        let id = if let Some(chunk) = chunk_dims {
            let chunks = if layout == H5D_layout_t::H5D_CHUNKED {
                h5::stored_chunks(d, dims.len())?
            } else {
                Vec::new() // a contiguous compound stored columnar: copied by rows
            };
            let masked = chunks.iter().any(|c| c.filter_mask != 0);
            // A codec h5lake lacks inside a Blosc frame (snappy, Blosc's own
            // bitshuffle): this dataset is named as not carried, the file's
            // others are (it failed the whole file). (Values converted on
            // the way are read through libhdf5, which may have the codec.)
            if !masked && !converted && undecodable.is_none() {
                match check_decodable(&self.src, &pipeline, &chunks, &chunk, es, path) {
                    Err(Hdf5Error::Unsupported(why)) if self.opts.keep_undecodable => {
                        undecodable = Some(format!("its filters are not supported ({why})"));
                    }
                    decodable => {
                        if self.or_skip(path, "its filters are", decodable)?.is_none() {
                            return Ok(None);
                        }
                    }
                }
            }
            if let Some(why) = undecodable {
                // Linked, its chunks read by h5lake (which then fails naming
                // the filter); anything read through the library instead
                // would fail now, so such a dataset is left out.
                if !linkable || masked {
                    self.report.skipped.push(skip(why));
                    return Ok(None);
                }
                self.report
                    .skipped
                    .push(crate::Skipped::part(path, "values", why));
            }
            if linkable && !masked {
                self.report.linked_datasets += 1;
                self.report.bytes += chunks.iter().map(|c| c.size).sum::<u64>();
                self.linked_chunked(&dt, &tjson, shape, cprops, &dims, &chunk, &chunks)?
            } else {
                cprops["layout"] = json!({"class": "H5D_CHUNKED", "dims": chunk});
                let id = self.dom.create_dataset(tjson.clone(), shape, cprops)?;
                if converted || (columnar && layout != H5D_layout_t::H5D_CHUNKED) {
                    self.copy_values(d, path, &id, &dt, &tjson, &dims)?;
                } else if !chunks.is_empty() {
                    let verbatim = self.opts.keep_chunks
                        && !columnar
                        && repack.is_none()
                        && !masked
                        && !pipeline.is_empty();
                    if verbatim {
                        self.dom.update_doc(&id, |doc| {
                            doc["h5lake"] = json!({"chunkFormat": "hdf5"});
                            Ok(())
                        })?;
                    }
                    let meta = self.dom.dataset_meta(&id)?;
                    self.jobs.push(Job::Chunks {
                        path: path.to_string(),
                        meta,
                        chunks,
                        source: pipeline,
                        repack,
                        verbatim,
                    });
                }
                id
            }
        } else {
            let class = if layout == H5D_layout_t::H5D_COMPACT {
                "H5D_COMPACT"
            } else {
                "H5D_CONTIGUOUS"
            };
            let addr = lib(|| unsafe { hdf5_sys::h5d::H5Dget_offset(d) });
            // (In a file with a user block libhdf5 adds the block's size to
            // "no address" too: what was never written is known by its
            // space status, not by the offset.)
            let mut status = hdf5_sys::h5d::H5D_space_status_t::H5D_SPACE_STATUS_ERROR;
            let known = lib(|| unsafe { hdf5_sys::h5d::H5Dget_space_status(d, &mut status) });
            let allocated = addr != hdf5_sys::h5::HADDR_UNDEF
                && known >= 0
                && status != hdf5_sys::h5d::H5D_space_status_t::H5D_SPACE_STATUS_NOT_ALLOCATED;
            let simple = !dims.is_empty() && shape["class"] == "H5S_SIMPLE";
            if linkable && allocated && simple && class == "H5D_CONTIGUOUS" {
                let size = lib(|| unsafe { hdf5_sys::h5d::H5Dget_storage_size(d) });
                self.report.linked_datasets += 1;
                self.report.bytes += size;
                let target = self
                    .opts
                    .hyperchunk
                    .filter(|&h| h > 0)
                    .unwrap_or(DEFAULT_HYPERCHUNK);
                cprops["layout"] = json!({
                    "class": "H5D_CONTIGUOUS_REF",
                    "file_uri": self.uri,
                    "h5lake_stamp": self.stamp,
                    "offset": addr,
                    "size": size,
                    "dims": contiguous_chunk_dims(&dims, es as u64, target),
                });
                self.dom.create_dataset(tjson.clone(), shape, cprops)?
            } else {
                cprops["layout"] = json!({"class": class});
                let id = self
                    .dom
                    .create_dataset(tjson.clone(), shape.clone(), cprops)?;
                let is_null = shape["class"] == "H5S_NULL";
                if converted || class == "H5D_COMPACT" || dims.is_empty() {
                    if !is_null {
                        self.copy_values(d, path, &id, &dt, &tjson, &dims)?;
                    }
                } else if allocated {
                    self.jobs.push(Job::Contiguous {
                        id: id.clone(),
                        dims: dims.clone(),
                        addr,
                        file_elem: repack.as_ref().map_or(es, |r| r.file_elem),
                        repack,
                    });
                }
                id
            }
        };
        self.set_attributes(&id, attrs)?;
        Ok(Some(id))
    }

    /// Creates a virtual dataset with the mappings of `dcpl`: sources in
    /// this file by path, sources in other files loaded (linked or copied,
    /// as the whole load is) as anonymous datasets; a missing source is
    /// named in the report and reads as fill, as in HDF5. `None` (named in
    /// the report) when a mapping is of a kind h5lake cannot hold.
    fn virtual_dataset(
        &mut self,
        dcpl: hid_t,
        path: &str,
        tjson: &Value,
        shape: Value,
        mut cprops: Value,
    ) -> Result<Option<String>> {
        let skip = |why: String| crate::Skipped::object(path, why);
        let raw = match virtual_layout::read_mappings(dcpl)? {
            Ok(raw) => raw,
            Err(why) => {
                self.report.skipped.push(skip(format!(
                    "a virtual dataset with {why}, which h5lake cannot load yet"
                )));
                return Ok(None);
            }
        };
        let mut mappings = Vec::with_capacity(raw.len());
        for m in raw {
            if m.printf && m.file == "." {
                // A series of this file's datasets ("d%b"): of the store.
                mappings.push(json!({"store": null, "path": m.dataset, "printf": true,
                                     "src": m.ssel, "dst": m.vsel}));
                continue;
            }
            if m.printf {
                // A series of files, linked as each is read (none is
                // copied: there is no end to it), looked for as libhdf5
                // looks for them.
                let file = if Path::new(&m.file).is_absolute() {
                    PathBuf::from(&m.file)
                } else {
                    self.relative_to_source(&m.file)
                };
                mappings.push(json!({"store": null, "file": file, "file_name": m.file,
                                     "path": m.dataset, "printf": true,
                                     "src": m.ssel, "dst": m.vsel}));
                continue;
            }
            let file = self.virtual_source_file(&m.file);
            // (A source in the same file is a dataset of the store being
            // loaded, except when this virtual dataset is itself a source,
            // loaded alone: its file's datasets are then linked too.)
            let (entry, dims) = if self.depth == 0 && file.as_deref() == Some(self.src.as_path()) {
                let dims = self.own_extent(&m.dataset)?;
                (json!({"store": null, "path": m.dataset}), dims)
            } else {
                let file = file.unwrap_or_else(|| self.relative_to_source(&m.file));
                let id = self.virtual_source(&file, &m.dataset, path)?;
                let dims = match &id {
                    Some(id) => Some(self.dom.dataset_meta(id)?.dims.clone()),
                    None => None,
                };
                let mut entry = json!({"store": null, "file": file, "id": id, "path": m.dataset});
                // The name as the file gives it (relative ones are found when
                // read, as libhdf5 finds them), for a copy to give back.
                if Path::new(&m.file) != file.as_path() {
                    entry["file_name"] = json!(m.file);
                }
                (entry, dims)
            };
            // A whole source is of the extent the source has now; one whose
            // extent does not match the mapping now (a source being
            // appended to) is mapped at the mapping's own extent, as a
            // store maps it (read as fill where the source is shorter),
            // rather than leaving the whole dataset out.
            let pieces = match m.pieces(dims.as_deref()).or_else(|why| {
                m.pieces(None).inspect(|_| {
                    self.report.notes.push(format!(
                        "{path}: the source {}:{} does not match its mapping ({why}); it is read \
                         at the mapping's extent (libhdf5 refuses the read)",
                        m.file, m.dataset
                    ));
                })
            }) {
                Ok(p) => p,
                Err(why) => {
                    self.report.skipped.push(skip(format!(
                        "a virtual dataset whose mapping from {}:{} cannot be paired: {why}",
                        m.file, m.dataset
                    )));
                    return Ok(None);
                }
            };
            for (dst, src) in pieces {
                let mut e = entry.clone();
                e["src"] = json!(src);
                e["dst"] = json!(dst);
                mappings.push(e);
            }
        }
        cprops["h5lake"] = json!({ "virtual": mappings });
        match self.dom.create_dataset(tjson.clone(), shape, cprops) {
            Ok(id) => Ok(Some(id)),
            Err(h5lake_engine::EngineError::Invalid(why)) => {
                self.report.skipped.push(skip(why));
                Ok(None)
            }
            Err(e) => Err(e.into()),
        }
    }

    /// The file a virtual mapping names, found as libhdf5 finds it: `"."`
    /// is this file; an absolute name is itself; a relative one is looked
    /// for under `$HDF5_VDS_PREFIX`, beside this file, then in the working
    /// directory. `None` when no such file exists.
    fn virtual_source_file(&self, name: &str) -> Option<PathBuf> {
        if name == "." {
            return Some(self.src.clone());
        }
        let given = Path::new(name);
        let mut tries = Vec::new();
        if given.is_absolute() {
            tries.push(given.to_path_buf());
        } else {
            if let Some(prefix) = std::env::var_os("HDF5_VDS_PREFIX").filter(|p| !p.is_empty()) {
                tries.push(Path::new(&prefix).join(given));
            }
            tries.push(self.relative_to_source(name));
            tries.push(given.to_path_buf());
        }
        tries
            .into_iter()
            .find(|p| p.is_file())
            .and_then(|p| p.canonicalize().ok())
    }

    /// The extent of the dataset at `path` of this file, if there is one.
    fn own_extent(&self, path: &str) -> Result<Option<Vec<u64>>> {
        let cpath = cstr(path)?;
        let d = lib(|| unsafe { hdf5_sys::h5d::H5Dopen2(self.file, cpath.as_ptr(), H5P_DEFAULT) });
        if d < 0 {
            return Ok(None);
        }
        let d = Hid(d);
        let space = check_id(
            lib(|| unsafe { H5Dget_space(d.id()) }),
            "reading a dataset's shape",
        )?;
        Ok(Some(h5::space_dims(space.id())?.0))
    }

    /// `name` beside the source file.
    fn relative_to_source(&self, name: &str) -> PathBuf {
        self.src
            .parent()
            .map_or_else(|| PathBuf::from(name), |dir| dir.join(name))
    }

    /// The anonymous dataset holding the source `dataset` of the HDF5
    /// `file` of a mapping of the virtual dataset at `vpath`, loaded on
    /// first use; `None`, named in the report, when it cannot be.
    fn virtual_source(
        &mut self,
        file: &Path,
        dataset: &str,
        vpath: &str,
    ) -> Result<Option<String>> {
        let key = (file.to_path_buf(), dataset.to_string());
        if let Some(id) = self.virtual_sources.get(&key) {
            return Ok(id.clone());
        }
        let part = format!("virtual source {}:{dataset}", file.display());
        let id = if !file.is_file() {
            self.report.skipped.push(crate::Skipped::part(
                vpath,
                part,
                "no such file (its part reads as the fill value)",
            ));
            None
        } else {
            let opts = LoadOptions {
                progress: false,
                ..self.opts.clone()
            };
            let uri = match &self.dest {
                Some(dest) => link_uri(file, dest)?,
                None => file.to_string_lossy().into_owned(),
            };
            match add_dataset(self.dom, file, dataset, &opts, uri, self.depth + 1) {
                Ok((id, report)) => {
                    self.report.linked_datasets += report.linked_datasets;
                    self.report.chunks += report.chunks;
                    self.report.bytes += report.bytes;
                    self.report
                        .skipped
                        .extend(report.skipped.into_iter().map(|s| crate::Skipped {
                            path: format!("{}:{}", file.display(), s.path),
                            ..s
                        }));
                    Some(id)
                }
                Err(
                    Hdf5Error::SourceNotFound(why)
                    | Hdf5Error::Unsupported(why)
                    | Hdf5Error::NotHdf5(why),
                ) => {
                    self.report.skipped.push(crate::Skipped::part(
                        vpath,
                        part,
                        format!("{why} (its part reads as the fill value)"),
                    ));
                    None
                }
                Err(e) => return Err(e),
            }
        };
        self.virtual_sources.insert(key, id.clone());
        Ok(id)
    }

    /// Creates a dataset whose chunks stay in the source file: the chunk
    /// map inline for few chunks, else a chunk table; adjacent source chunks
    /// grouped into logical chunks of about the hyper-chunk size.
    #[allow(clippy::too_many_arguments)]
    fn linked_chunked(
        &mut self,
        dt: &Datatype,
        tjson: &Value,
        shape: Value,
        mut cprops: Value,
        dims: &[u64],
        sub: &[u64],
        chunks: &[StoredChunk],
    ) -> Result<String> {
        let es = dt.fixed_size().unwrap_or(1) as u64;
        let target = self.opts.hyperchunk.unwrap_or(DEFAULT_HYPERCHUNK);
        let factors = hyper_factors(dims, sub, es, target);
        let logical: Vec<u64> = sub.iter().zip(&factors).map(|(s, f)| s * f).collect();
        let per: u64 = factors.iter().product();
        let uri = &self.uri;
        if per == 1 && chunks.len() <= INLINE_CHUNK_LIMIT {
            // Few chunks and no grouping: the map goes in the layout.
            let mut map = Map::new();
            for c in chunks {
                let key: Vec<String> = c
                    .offset
                    .iter()
                    .zip(sub)
                    .map(|(o, s)| (o / s).to_string())
                    .collect();
                map.insert(key.join("_"), json!([c.addr, c.size]));
            }
            cprops["layout"] = json!({
                "class": "H5D_CHUNKED_REF", "file_uri": uri, "dims": logical, "chunks": map,
                "h5lake_stamp": self.stamp,
            });
            return Ok(self.dom.create_dataset(tjson.clone(), shape, cprops)?);
        }
        // HSDS's chunk table: one {offset, size} record per source chunk, in
        // the grid of source chunks, whatever the logical (hyper) chunk is.
        let grid: Vec<u64> = dims
            .iter()
            .zip(sub)
            .map(|(d, s)| d.div_ceil(*s).max(1))
            .collect();
        let mut table = vec![0u8; grid.iter().product::<u64>() as usize * 12];
        let gs = h5lake_engine::planner::strides(&grid);
        for c in chunks {
            let cell: u64 = c
                .offset
                .iter()
                .zip(sub)
                .zip(&gs)
                .map(|((o, s), g)| o / s * g)
                .sum();
            let rec = &mut table[cell as usize * 12..cell as usize * 12 + 12];
            rec[..8].copy_from_slice(&c.addr.to_le_bytes());
            let size = u32::try_from(c.size)
                .map_err(|_| Hdf5Error::Unsupported("a source chunk of 4 GiB or more".into()))?;
            rec[8..].copy_from_slice(&size.to_le_bytes());
        }
        let table_type = json!({"class": "H5T_COMPOUND", "fields": [
            {"name": "offset", "type": "H5T_STD_I64LE"},
            {"name": "size", "type": "H5T_STD_I32LE"},
        ]});
        let table_id = self.dom.create_dataset(
            table_type,
            json!({"class": "H5S_SIMPLE", "dims": grid}),
            json!({"layout": {"class": "H5D_CONTIGUOUS"}}),
        )?;
        self.dom.write(&table_id, &Selection::all(&grid), &table)?;
        let mut layout = json!({
            "class": "H5D_CHUNKED_REF_INDIRECT", "file_uri": uri, "dims": logical,
            "h5lake_stamp": self.stamp,
            "chunk_table": table_id,
        });
        if per > 1 {
            layout["hyper_dims"] = json!(sub);
        }
        cprops["layout"] = layout;
        Ok(self.dom.create_dataset(tjson.clone(), shape, cprops)?)
    }

    /// Copies a dataset's values through the library now, or once every
    /// object is loaded when they hold object references.
    fn copy_values(
        &mut self,
        d: hid_t,
        path: &str,
        id: &str,
        dt: &Datatype,
        tjson: &Value,
        dims: &[u64],
    ) -> Result<()> {
        if has_refs(dt) {
            self.pending.push(Pending::Values {
                path: path.to_string(),
                id: id.to_string(),
                dt: dt.clone(),
                tjson: tjson.clone(),
                dims: dims.to_vec(),
            });
            return Ok(());
        }
        self.report.bytes += copy_through_library(
            self.dom,
            d,
            id,
            dt,
            tjson,
            dims,
            &mut crate::memory::no_refs,
        )?;
        Ok(())
    }

    /// The second pass: chunk bytes from the file to the store, in parallel.
    fn move_chunks(&mut self) -> Result<()> {
        let jobs = std::mem::take(&mut self.jobs);
        if jobs.is_empty() {
            return Ok(());
        }
        let file = File::open(&self.src)?;
        // (job, piece) pairs: a chunk of a chunked dataset or a slab of a
        // contiguous one.
        let mut tasks: Vec<(usize, usize)> = Vec::new();
        let mut total = 0u64;
        for (j, job) in jobs.iter().enumerate() {
            match job {
                Job::Chunks { chunks, .. } => {
                    tasks.extend((0..chunks.len()).map(|k| (j, k)));
                    total += chunks.iter().map(|c| c.size).sum::<u64>();
                }
                Job::Contiguous {
                    dims, file_elem, ..
                } => {
                    let (rows, _) = slab_rows(dims, *file_elem as u64);
                    tasks.extend((0..dims[0].div_ceil(rows) as usize).map(|k| (j, k)));
                    total += dims.iter().product::<u64>() * *file_elem as u64;
                }
            }
        }
        let bar = h5lake_engine::progress::bar(
            self.opts.progress,
            total,
            "loading",
            "{bytes}/{total_bytes} {bytes_per_sec}",
        );
        let copied = AtomicU64::new(0);
        let chunks_done = AtomicU64::new(0);
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(io_threads())
            .build()
            .map_err(|e| Hdf5Error::Io(std::io::Error::other(e)))?;
        let dom = self.dom;
        let cancel = h5lake_engine::cancel::current();
        pool.install(|| {
            tasks.par_iter().try_for_each(|&(j, k)| -> Result<()> {
                if h5lake_engine::cancel::is_set(&cancel) {
                    return Err(h5lake_engine::EngineError::Interrupted.into());
                }
                let n = match &jobs[j] {
                    Job::Chunks {
                        path,
                        meta,
                        chunks,
                        source,
                        repack,
                        verbatim,
                    } => {
                        let c = &chunks[k];
                        copy_chunk(dom, &file, meta, c, source, repack.as_ref(), *verbatim)
                            .map_err(|e| match e {
                                Hdf5Error::Codec(e) => {
                                    Hdf5Error::Unsupported(format!("dataset {path}: {e}"))
                                }
                                e => e,
                            })?;
                        chunks_done.fetch_add(1, Ordering::Relaxed);
                        c.size
                    }
                    Job::Contiguous {
                        id,
                        dims,
                        addr,
                        repack,
                        file_elem,
                    } => copy_slab(dom, &file, id, dims, *addr, *file_elem, repack.as_ref(), k)?,
                };
                copied.fetch_add(n, Ordering::Relaxed);
                bar.inc(n);
                Ok(())
            })
        })?;
        bar.finish_and_clear();
        self.report.bytes += copied.into_inner();
        self.report.chunks += chunks_done.into_inner();
        Ok(())
    }
}

/// Copies a dataset's values through the library (variable-length,
/// compact and scalar datasets, and those holding references: `refs`
/// converts them), in slabs of rows; returns the bytes read.
fn copy_through_library(
    dom: &Domain,
    d: hid_t,
    id: &str,
    dt: &Datatype,
    tjson: &Value,
    dims: &[u64],
    refs: &mut RefConv,
) -> Result<u64> {
    let rank = dims.len();
    let all: Vec<u64> = if rank == 0 { vec![1] } else { dims.to_vec() };
    let row_elems: u64 = all[1..].iter().product::<u64>().max(1);
    let es = dt.fixed_size().unwrap_or(64) as u64;
    let rows_per = (SLAB_BYTES / (row_elems * es).max(1)).max(1);
    let mut start = 0u64;
    let mut bytes = 0u64;
    while start < all[0] {
        let count = rows_per.min(all[0] - start);
        let mut lo = vec![0u64; all.len()];
        lo[0] = start;
        let mut cnt = all.clone();
        cnt[0] = count;
        let n = (count * row_elems) as usize;
        let values = if rank == 0 {
            read_values(
                dt,
                tjson,
                1,
                |mem, buf| unsafe {
                    hdf5_sys::h5d::H5Dread(d, mem, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT, buf)
                },
                refs,
            )?
        } else {
            let fspace = check_id(lib(|| unsafe { H5Dget_space(d) }), "reading a dataspace")?;
            check(
                lib(|| unsafe {
                    hdf5_sys::h5s::H5Sselect_hyperslab(
                        fspace.id(),
                        hdf5_sys::h5s::H5S_seloper_t::H5S_SELECT_SET,
                        lo.as_ptr(),
                        std::ptr::null(),
                        cnt.as_ptr(),
                        std::ptr::null(),
                    )
                }),
                "selecting rows",
            )?;
            let mspace = check_id(
                lib(|| unsafe {
                    hdf5_sys::h5s::H5Screate_simple(1, [n as u64].as_ptr(), std::ptr::null())
                }),
                "creating a dataspace",
            )?;
            read_values(
                dt,
                tjson,
                n,
                |mem, buf| unsafe {
                    hdf5_sys::h5d::H5Dread(d, mem, mspace.id(), fspace.id(), H5P_DEFAULT, buf)
                },
                refs,
            )?
        };
        let sel = if rank == 0 {
            Selection::all(&[1])
        } else {
            // (start, count, step) per dimension.
            let s: Vec<(u64, u64, u64)> = lo.iter().zip(&cnt).map(|(&l, &c)| (l, c, 1)).collect();
            Selection::from_slices(&s)
        };
        match values {
            Values::Fixed(buf) => dom.write(id, &sel, &buf)?,
            Values::Variable(items) => dom.write_vlen(id, &sel, &items)?,
        }
        bytes += n as u64 * es;
        start += count;
    }
    Ok(bytes)
}

fn io_threads() -> usize {
    let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
    std::env::var("H5LAKE_THREADS")
        .ok()
        .and_then(|v| v.parse().ok())
        .filter(|&n: &usize| n > 0)
        .unwrap_or((cores * 4).clamp(8, 64))
}

/// One source chunk: read, decode (skipping the filters its mask says were
/// not applied), repack, store; or store it as read (`verbatim`).
fn copy_chunk(
    dom: &Domain,
    file: &File,
    meta: &DatasetMeta,
    c: &StoredChunk,
    source: &Pipeline,
    repack: Option<&Repack>,
    verbatim: bool,
) -> Result<()> {
    let mut buf = vec![0u8; c.size as usize];
    file.read_exact_at(&mut buf, c.addr)?;
    let coords: Vec<u64> = c
        .offset
        .iter()
        .zip(&meta.chunk)
        .map(|(o, k)| o / k)
        .collect();
    if verbatim {
        dom.create_chunk(meta, &coords, buf, false)?;
        return Ok(());
    }
    let file_elem = repack.map_or(meta.dtype.fixed_size().unwrap_or(0), |r| r.file_elem);
    let elems: u64 = meta.chunk.iter().product();
    let raw = if source.is_empty() {
        buf
    } else {
        let applied = Pipeline::new(
            source
                .filters
                .iter()
                .enumerate()
                .filter(|(i, _)| c.filter_mask & (1 << i) == 0)
                .map(|(_, f)| f.clone())
                .collect(),
        );
        applied.decode_as(
            &buf,
            file_elem,
            Some(elems as usize * file_elem),
            ChunkFormat::Hdf5,
        )?
    };
    let raw = match repack {
        Some(r) => r.pack(&raw),
        None => raw,
    };
    dom.create_chunk(meta, &coords, raw, true)?;
    Ok(())
}

/// Records a dataset creation list's fill time and allocation time in
/// HSDS's creation properties where they are not HDF5's defaults for its
/// layout.
fn fill_and_alloc_times(dcpl: hid_t, layout: H5D_layout_t, cprops: &mut Value) -> Result<()> {
    use hdf5_sys::h5d::{H5D_alloc_time_t, H5D_fill_time_t};
    let mut fill_time = H5D_fill_time_t::H5D_FILL_TIME_IFSET;
    check(
        lib(|| unsafe { hdf5_sys::h5p::H5Pget_fill_time(dcpl, &mut fill_time) }),
        "reading a dataset's fill time",
    )?;
    match fill_time {
        H5D_fill_time_t::H5D_FILL_TIME_NEVER => cprops["fillTime"] = json!("H5D_FILL_TIME_NEVER"),
        H5D_fill_time_t::H5D_FILL_TIME_ALLOC => cprops["fillTime"] = json!("H5D_FILL_TIME_ALLOC"),
        _ => {}
    }
    let mut alloc = H5D_alloc_time_t::H5D_ALLOC_TIME_DEFAULT;
    check(
        lib(|| unsafe { hdf5_sys::h5p::H5Pget_alloc_time(dcpl, &mut alloc) }),
        "reading a dataset's allocation time",
    )?;
    let default = match layout {
        H5D_layout_t::H5D_COMPACT => H5D_alloc_time_t::H5D_ALLOC_TIME_EARLY,
        H5D_layout_t::H5D_CONTIGUOUS => H5D_alloc_time_t::H5D_ALLOC_TIME_LATE,
        _ => H5D_alloc_time_t::H5D_ALLOC_TIME_INCR,
    };
    if alloc != default {
        let name = match alloc {
            H5D_alloc_time_t::H5D_ALLOC_TIME_EARLY => Some("H5D_ALLOC_TIME_EARLY"),
            H5D_alloc_time_t::H5D_ALLOC_TIME_LATE => Some("H5D_ALLOC_TIME_LATE"),
            H5D_alloc_time_t::H5D_ALLOC_TIME_INCR => Some("H5D_ALLOC_TIME_INCR"),
            _ => None,
        };
        if let Some(name) = name {
            cprops["allocTime"] = json!(name);
        }
    }
    Ok(())
}

/// In link mode chunks are decoded only when read, so a codec h5lake lacks
/// would surface long after the load. A Blosc frame names its inner codec
/// only in its bytes: decode one chunk now to find out.
fn check_decodable(
    src: &Path,
    pipeline: &Pipeline,
    chunks: &[StoredChunk],
    chunk: &[u64],
    elem: usize,
    path: &str,
) -> Result<()> {
    let blosc = pipeline
        .filters
        .iter()
        .any(|f| matches!(f, h5lake_codecs::Filter::Blosc { .. }));
    let Some(first) = chunks.first().filter(|_| blosc) else {
        return Ok(());
    };
    let mut buf = vec![0u8; first.size as usize];
    File::open(src)?.read_exact_at(&mut buf, first.addr)?;
    let n = chunk.iter().product::<u64>() as usize * elem;
    pipeline
        .decode_as(&buf, elem, Some(n), ChunkFormat::Hdf5)
        .map_err(|e| Hdf5Error::Unsupported(format!("dataset {path}: {e}")))?;
    Ok(())
}

/// Rows per slab of a contiguous dataset, and the bytes of one row.
fn slab_rows(dims: &[u64], elem: u64) -> (u64, u64) {
    let row = dims[1..].iter().product::<u64>() * elem;
    ((SLAB_BYTES / row.max(1)).max(1), row)
}

/// Slab `k` of a contiguous dataset: one read, one engine write.
#[allow(clippy::too_many_arguments)]
fn copy_slab(
    dom: &Domain,
    file: &File,
    id: &str,
    dims: &[u64],
    addr: u64,
    file_elem: usize,
    repack: Option<&Repack>,
    k: usize,
) -> Result<u64> {
    let (rows, row_bytes) = slab_rows(dims, file_elem as u64);
    let start = k as u64 * rows;
    let count = rows.min(dims[0] - start);
    let mut buf = vec![0u8; (count * row_bytes) as usize];
    file.read_exact_at(&mut buf, addr + start * row_bytes)?;
    let n = buf.len() as u64;
    let data = match repack {
        Some(r) => r.pack(&buf),
        None => buf,
    };
    let mut s: Vec<(u64, u64, u64)> = dims.iter().map(|&d| (0, d, 1)).collect();
    // (start, count, step)
    s[0] = (start, count, 1);
    dom.write(id, &Selection::from_slices(&s), &data)?;
    Ok(n)
}

/// How many source chunks to group along each dimension: from the last
/// dimension (adjacent in the file) to the first, up to about `target`
/// decoded bytes per logical chunk.
fn hyper_factors(dims: &[u64], sub: &[u64], elem: u64, target: u64) -> Vec<u64> {
    let mut f = vec![1u64; dims.len()];
    let mut bytes = sub.iter().product::<u64>() * elem;
    for d in (0..dims.len()).rev() {
        let along = dims[d].div_ceil(sub[d]).max(1);
        let want = (target / bytes.max(1)).max(1);
        f[d] = along.min(want);
        bytes *= f[d];
        if f[d] < along {
            break;
        }
    }
    f
}

/// The raw value of a soft or external link.
fn link_value(gid: hid_t, cname: &std::ffi::CStr, info: &mut H5L_info2_t) -> Result<Vec<u8>> {
    let size = unsafe { *info.u.val_size() };
    let mut buf = vec![0u8; size];
    check(
        lib(|| unsafe {
            hdf5_sys::h5l::H5Lget_val(
                gid,
                cname.as_ptr(),
                buf.as_mut_ptr().cast::<c_void>(),
                size,
                H5P_DEFAULT,
            )
        }),
        "reading a link's value",
    )?;
    Ok(buf)
}

fn unpack_external(raw: &[u8]) -> Result<(String, String)> {
    let mut flags = 0u32;
    let mut file: *const std::ffi::c_char = std::ptr::null();
    let mut obj: *const std::ffi::c_char = std::ptr::null();
    check(
        lib(|| unsafe {
            hdf5_sys::h5l::H5Lunpack_elink_val(
                raw.as_ptr().cast(),
                raw.len(),
                &mut flags,
                &mut file,
                &mut obj,
            )
        }),
        "reading an external link",
    )?;
    // SAFETY: both point into `raw`, NUL-terminated.
    let s = |p: *const std::ffi::c_char| {
        unsafe { std::ffi::CStr::from_ptr(p) }
            .to_string_lossy()
            .into_owned()
    };
    Ok((s(file), s(obj)))
}

/// A dataset's filters as HSDS filter entries.
fn filter_entries(dcpl: hid_t, path: &str) -> Result<Vec<Value>> {
    let n = check(
        lib(|| unsafe { hdf5_sys::h5p::H5Pget_nfilters(dcpl) }),
        "reading filters",
    )? as u32;
    let mut out = Vec::with_capacity(n as usize);
    for i in 0..n {
        let mut flags = 0u32;
        let mut cd = [0u32; 32];
        let mut ncd: usize = cd.len();
        let mut name = [0 as std::ffi::c_char; 128];
        let mut config = 0u32;
        let id = lib(|| unsafe {
            hdf5_sys::h5p::H5Pget_filter2(
                dcpl,
                i,
                &mut flags,
                &mut ncd,
                cd.as_mut_ptr(),
                name.len(),
                name.as_mut_ptr(),
                &mut config,
            )
        });
        if id < 0 {
            return Err(Hdf5Error::Library(format!("{path}: reading filter {i}")));
        }
        let cd = &cd[..ncd.min(cd.len())];
        let label = unsafe { std::ffi::CStr::from_ptr(name.as_ptr()) }
            .to_string_lossy()
            .into_owned();
        out.push(h5lake_codecs::hdf5_filter_json(id as u64, cd, &label));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hyper_factors_grow_from_the_last_dimension() {
        // 1-D: 80 KB chunks of f64 grouped to about 4 MiB.
        assert_eq!(
            hyper_factors(&[10_000_000], &[10_000], 8, 4 << 20),
            vec![52]
        );
        // Never more than the chunks there are.
        assert_eq!(hyper_factors(&[30_000], &[10_000], 8, 4 << 20), vec![3]);
        // 2-D: whole rows of chunks first, then more rows.
        assert_eq!(
            hyper_factors(&[1000, 1000], &[100, 100], 4, 400_000),
            vec![1, 10]
        );
        assert_eq!(
            hyper_factors(&[1000, 1000], &[100, 100], 4, 800_000),
            vec![2, 10]
        );
        assert_eq!(hyper_factors(&[100], &[10], 8, 0), vec![1]);
    }
}
