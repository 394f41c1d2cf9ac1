//! An h5lake store → a new HDF5 file (`h5lake get`).
//!
//! The tree is walked from the root group in link (creation) order. Every
//! object is created once, at the first path that reaches it; later hard
//! links to it become HDF5 hard links, so the file has the store's object
//! graph, not copies.
//!
//! Chunked datasets are written chunk by chunk with `H5Dwrite_chunk`: each
//! stored chunk is put into libhdf5's byte layout (used as stored when it is
//! already in that layout, else decoded and re-encoded) on all cores, and the
//! writes, which must hold the library lock, run one after the other while
//! the next chunks are being encoded. Chunks never written to the store are
//! not written to the file either: both read them as the fill value. This
//! also means filters libhdf5 does not have (zstd, lz4, blosc) need no plugin
//! to write; they are declared optional so that libhdf5 accepts them, and
//! h5py with hdf5plugin reads them.
//!
//! Everything else (contiguous, compact, variable-length data) goes through
//! `H5Dwrite` in slabs of at most [`SLAB_BYTES`].
//!
//! Attributes and dataset values holding object references are written
//! last ([`Deferred`]): a reference is made from its target's place in
//! the file, so every object must exist first.

use std::collections::{HashMap, HashSet};
use std::ffi::{c_void, CString};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use h5lake_codecs::{ChunkFormat, CodecError, Filter};
use h5lake_engine::{ids, DatasetMeta, Domain, EngineError, OpenMode};
use h5lake_types::{
    element_to_json, json_to_element, Datatype, Selection, Shape, StrPad, UNLIMITED,
};
use hdf5_sys::h5::hsize_t;
use hdf5_sys::h5i::hid_t;
use hdf5_sys::{h5a, h5d, h5f, h5g, h5l, h5o, h5p, h5r, h5s, h5t};
use indicatif::{ProgressBar, ProgressStyle};
use rayon::prelude::*;
use serde_json::Value;

use crate::h5::{check, check_id, cstr, lib, plist, Hid};
use crate::memory::{converts, has_refs, no_refs, to_memory, MemBuf, RefConv, RefKind};
use crate::types::{self, Repack};
use crate::virtual_layout;
use crate::{Hdf5Error, Result};

/// Largest slab read from the store and handed to `H5Dwrite` at once.
const SLAB_BYTES: u64 = 64 << 20;
/// Datasets asking for the compact layout fall back to contiguous above
/// this size (libhdf5 keeps compact data in the object header, < 64 KiB).
const MAX_COMPACT_BYTES: u64 = 60 << 10;

/// How [`get()`] behaves.
#[derive(Clone, Debug, Default)]
pub struct GetOptions {
    /// Replace the destination if it exists.
    pub force: bool,
    /// Show a progress bar over the data bytes on stderr (hidden when
    /// stderr is not a terminal).
    pub progress: bool,
    /// Let a store in a bucket link to local files (see
    /// [`h5lake_engine::LinkPolicy::for_remote_store`]).
    pub allow_local_links: bool,
}

/// What [`get()`] wrote.
#[derive(Clone, Debug, Default)]
pub struct GetReport {
    /// Groups, the root group included.
    pub groups: usize,
    pub datasets: usize,
    /// Committed (named) datatypes.
    pub datatypes: usize,
    /// Attributes of all objects.
    pub attributes: usize,
    /// Link entries in groups: hard (including the one that created each
    /// object), soft and external.
    pub links: usize,
    /// Chunks written to chunked datasets.
    pub chunks: u64,
    /// Data bytes written (element bytes inside the datasets' extents, and
    /// the bytes of variable-length elements).
    pub bytes: u64,
    /// `"path: reason"` for everything that could not be written (a
    /// region reference type, a dangling hard link, an unknown filter, ...).
    pub skipped: Vec<crate::Skipped>,
    /// What was written otherwise than stored, nothing lost (a virtual
    /// dataset whose sources an HDF5 file cannot name, written with its
    /// values).
    pub notes: Vec<String>,
}

/// Writes the h5lake store at `src` as a new HDF5 file at `dest`.
///
/// The file is written next to `dest` under a temporary name and renamed
/// into place at the end; on any error the temporary file is removed, so
/// `dest` is either the complete file or untouched.
///
/// # Errors
/// [`Hdf5Error::DestinationExists`] when `dest` exists and `opts.force` is
/// not set; the engine's errors for a missing or unreadable store; library
/// and I/O failures. Objects HDF5 cannot hold are not errors: they are
/// listed in [`GetReport::skipped`].
pub fn get(src: &Path, dest: &Path, opts: &GetOptions) -> Result<GetReport> {
    let mut open_opts = h5lake_engine::DomainOptions::default();
    open_opts.allow_local_links |= opts.allow_local_links;
    let mut dom = Domain::open_url_with(&src.to_string_lossy(), OpenMode::Read, &open_opts)?;
    // Every chunk is read once: a cache would only cost memory.
    dom.set_chunk_cache_bytes(0);
    if let Ok(md) = std::fs::symlink_metadata(dest) {
        if !opts.force {
            return Err(Hdf5Error::DestinationExists(format!(
                "{} already exists; pass --force to overwrite it",
                dest.display()
            )));
        }
        if md.is_dir() {
            return Err(Hdf5Error::DestinationExists(format!(
                "{} is a directory; refusing to replace it with a file",
                dest.display()
            )));
        }
    }
    crate::load::outside_stores(dest)?;
    let tmp = TempFile::new(dest)?;
    if let Some(dir) = tmp.path.parent().filter(|d| !d.is_dir()) {
        return Err(Hdf5Error::Io(std::io::Error::new(
            std::io::ErrorKind::NotFound,
            format!(
                "cannot write {}: the directory {} does not exist",
                dest.display(),
                dir.display()
            ),
        )));
    }
    let report = Exporter::new(&dom, opts).run(&tmp.path, dest)?;
    std::fs::rename(&tmp.path, dest)?;
    tmp.keep();
    Ok(report)
}

/// The temporary output file, removed on drop unless kept.
struct TempFile {
    path: PathBuf,
    keep: bool,
}

impl TempFile {
    fn new(dest: &Path) -> Result<Self> {
        let name = dest.file_name().ok_or_else(|| {
            Hdf5Error::Io(std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                format!("{} does not name a file", dest.display()),
            ))
        })?;
        let dir = match dest.parent() {
            Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
            _ => PathBuf::from("."),
        };
        let path = dir.join(format!(
            ".{}.tmp-{}",
            name.to_string_lossy(),
            std::process::id()
        ));
        Ok(TempFile { path, keep: false })
    }

    fn keep(mut self) {
        self.keep = true;
    }
}

impl Drop for TempFile {
    fn drop(&mut self) {
        if !self.keep {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

/// Why one object was not written: something HDF5 or this writer cannot
/// represent (reported, the export goes on) or a real failure (the export
/// stops).
enum Fail {
    Skip(String),
    Err(Hdf5Error),
}

type Step<T> = std::result::Result<T, Fail>;

impl From<Hdf5Error> for Fail {
    fn from(e: Hdf5Error) -> Self {
        match e {
            Hdf5Error::Unsupported(m) => Fail::Skip(m),
            Hdf5Error::Types(t) => Fail::Skip(t.to_string()),
            Hdf5Error::Engine(EngineError::Types(t)) => Fail::Skip(t.to_string()),
            Hdf5Error::Engine(EngineError::Codec(c @ CodecError::Unsupported(_)))
            | Hdf5Error::Codec(c @ CodecError::Unsupported(_)) => {
                Fail::Skip(format!("unsupported filter: {c}"))
            }
            other => Fail::Err(other),
        }
    }
}

impl From<EngineError> for Fail {
    fn from(e: EngineError) -> Self {
        Hdf5Error::from(e).into()
    }
}

fn skip<T>(why: impl Into<String>) -> Step<T> {
    Err(Fail::Skip(why.into()))
}

/// What the scan found about one object.
struct Planned {
    doc: Value,
}

struct Exporter<'a> {
    dom: &'a Domain,
    report: GetReport,
    pb: ProgressBar,
    /// Documents of every object reachable from the root, by id.
    objects: HashMap<String, Planned>,
    /// Where each object was first reached (where it is created).
    first_path: HashMap<String, String>,
    /// Objects created in the file, by id → their path.
    created: HashMap<String, String>,
    /// Objects that could not be created (later links to them are skipped).
    failed: HashSet<String>,
    /// Committed datatypes created so far, by id.
    committed: HashMap<String, Hid>,
    /// Total data bytes (for the progress bar).
    total_bytes: u64,
    /// Attributes and dataset values holding object references, written
    /// once every object exists (a reference is made from its target's
    /// place in the file).
    deferred: Vec<Deferred>,
    /// The directory of the file being written (what relative names of
    /// virtual source files are found from).
    dest_dir: PathBuf,
}

/// What is written once every object exists.
enum Deferred {
    /// The attribute `name` (its document `attr`) of the object at `path`.
    Attr {
        path: String,
        name: String,
        attr: Value,
    },
    /// The values of the dataset `id` (document `doc`) created at `path`.
    Values {
        path: String,
        id: String,
        doc: Value,
    },
}

/// Object references in the file being written (see `crate::memory`):
/// the `hobj_ref_t` or `H5R_ref_t` of each stored reference's target.
struct RefWriter {
    file: hid_t,
    /// Objects created in the file, by id → their path.
    created: HashMap<String, String>,
    /// The references made so far, by target id: `hobj_ref_t`s, and
    /// `H5R_ref_t`s (which hold the file open until destroyed).
    old: HashMap<String, h5r::hobj_ref_t>,
    current: HashMap<String, h5r::H5R_ref_t>,
    /// References to objects not in the file, written as null ones.
    missing: usize,
}

impl Drop for RefWriter {
    fn drop(&mut self) {
        for r in self.current.values_mut() {
            lib(|| unsafe { h5r::H5Rdestroy(r) });
        }
    }
}

/// The bytes of a value as the library takes it in memory.
fn bytes_of_value<T: Copy>(v: T) -> Vec<u8> {
    let mut b = vec![0u8; std::mem::size_of::<T>()];
    // SAFETY: `b` has room for one T; written unaligned.
    unsafe { b.as_mut_ptr().cast::<T>().write_unaligned(v) };
    b
}

impl RefWriter {
    fn new(file: hid_t, created: HashMap<String, String>) -> Self {
        RefWriter {
            file,
            created,
            old: HashMap::new(),
            current: HashMap::new(),
            missing: 0,
        }
    }

    /// The `H5R_ref_t` (`current_api`) or `hobj_ref_t` (their bytes) of
    /// one stored reference (the target's collection and id,
    /// `datasets/d-…`, NUL-padded; empty for a null reference).
    fn address(&mut self, kind: RefKind, stored: &[u8]) -> Result<Vec<u8>> {
        if kind == RefKind::Region {
            return self.region(stored);
        }
        let current_api = kind == RefKind::Current;
        let null = || {
            if current_api {
                bytes_of_value(h5r::H5R_ref_t::default())
            } else {
                bytes_of_value::<h5r::hobj_ref_t>(0)
            }
        };
        let end = stored.iter().position(|&b| b == 0).unwrap_or(stored.len());
        let text = String::from_utf8_lossy(&stored[..end]);
        let id = text.rsplit('/').next().unwrap_or_default();
        if id.is_empty() {
            return Ok(null());
        }
        let Some(path) = self.created.get(id) else {
            self.missing += 1;
            return Ok(null());
        };
        if current_api {
            if let Some(r) = self.current.get(id) {
                return Ok(bytes_of_value(*r));
            }
        } else if let Some(r) = self.old.get(id) {
            return Ok(bytes_of_value(*r));
        }
        let cpath = cstr(path)?;
        let what = format!("making a reference to {path}");
        if current_api {
            let mut r = h5r::H5R_ref_t::default();
            check(
                lib(|| unsafe {
                    h5r::H5Rcreate_object(self.file, cpath.as_ptr(), h5p::H5P_DEFAULT, &mut r)
                }),
                &what,
            )?;
            self.current.insert(id.to_string(), r);
            return Ok(bytes_of_value(r));
        }
        let mut r: h5r::hobj_ref_t = 0;
        check(
            lib(|| unsafe {
                h5r::H5Rcreate(
                    (&mut r as *mut h5r::hobj_ref_t).cast(),
                    self.file,
                    cpath.as_ptr(),
                    h5r::H5R_type_t::H5R_OBJECT1,
                    -1,
                )
            }),
            &what,
        )?;
        self.old.insert(id.to_string(), r);
        Ok(bytes_of_value(r))
    }

    /// The `hdset_reg_ref_t` (its bytes) of one stored region reference
    /// (h5json's JSON text; empty for a null reference).
    fn region(&mut self, stored: &[u8]) -> Result<Vec<u8>> {
        let mut r: h5r::hdset_reg_ref_t = [0; 12];
        if stored.is_empty() {
            return Ok(r.to_vec());
        }
        let sel = h5lake_types::region_ref_json(stored)?;
        let id = sel
            .get("id")
            .and_then(Value::as_str)
            .and_then(|i| i.rsplit('/').next())
            .unwrap_or_default();
        let Some(path) = self.created.get(id) else {
            self.missing += 1;
            return Ok(r.to_vec());
        };
        let cpath = cstr(path)?;
        let what = format!("making a region reference to {path}");
        let dset = check_id(
            lib(|| unsafe { h5d::H5Dopen2(self.file, cpath.as_ptr(), h5p::H5P_DEFAULT) }),
            &what,
        )?;
        let space = check_id(lib(|| unsafe { h5d::H5Dget_space(dset.id()) }), &what)?;
        crate::regions::select(space.id(), &sel)?;
        check(
            lib(|| unsafe {
                h5r::H5Rcreate(
                    r.as_mut_ptr().cast(),
                    self.file,
                    cpath.as_ptr(),
                    h5r::H5R_type_t::H5R_DATASET_REGION1,
                    space.id(),
                )
            }),
            &what,
        )?;
        Ok(r.to_vec())
    }

    /// Reports the references of `part` of the object at `path` that had
    /// no target, if any.
    fn report_missing(&mut self, path: &str, part: String, skipped: &mut Vec<crate::Skipped>) {
        if self.missing > 0 {
            skipped.push(crate::Skipped::part(
                path,
                part,
                format!(
                    "{} object references to objects not in the file, written as null references",
                    self.missing
                ),
            ));
            self.missing = 0;
        }
    }
}

impl<'a> Exporter<'a> {
    fn new(dom: &'a Domain, opts: &GetOptions) -> Self {
        let pb = if opts.progress {
            let pb = ProgressBar::new(0);
            if let Ok(style) = ProgressStyle::with_template(
                "{spinner} [{elapsed_precise}] {wide_bar} {bytes}/{total_bytes} ({binary_bytes_per_sec}, {eta})",
            ) {
                pb.set_style(style);
            }
            pb
        } else {
            ProgressBar::hidden()
        };
        Exporter {
            dom,
            report: GetReport::default(),
            pb,
            objects: HashMap::new(),
            first_path: HashMap::new(),
            created: HashMap::new(),
            failed: HashSet::new(),
            committed: HashMap::new(),
            total_bytes: 0,
            deferred: Vec::new(),
            dest_dir: PathBuf::new(),
        }
    }

    fn run(mut self, path: &Path, dest: &Path) -> Result<GetReport> {
        self.dest_dir = path.parent().map(Path::to_path_buf).unwrap_or_default();
        let root = self.dom.root_id().to_string();
        self.scan(&root, "/")?;
        self.refuse_own_source(dest)?;
        self.pb.set_length(self.total_bytes);

        // (A store whose objects are gone, its root group's document with
        // them, has nothing to export: said, not a panic.)
        let root_doc = match self.objects.get(&root) {
            Some(p) => p.doc.clone(),
            None => {
                return Err(EngineError::NotFound(format!(
                    "the store's root group {root} is missing: the store is damaged"
                ))
                .into())
            }
        };
        let track = tracks_order(&root_doc);
        let fcpl = plist(h5p::H5P_CLS_FILE_CREATE)?;
        if track {
            set_creation_order(fcpl.id(), true)?;
        }
        let userblock = crate::userblock::of_root(&root_doc);
        if let Some(bytes) = &userblock {
            check(
                lib(|| unsafe { h5p::H5Pset_userblock(fcpl.id(), bytes.len() as u64) }),
                "setting the file's user block",
            )?;
        }
        let fapl = crate::h5::native_fapl()?;
        check(
            lib(|| unsafe {
                // The 1.8 format: large attributes (dense storage) and
                // creation order; read by every HDF5 since 1.8.
                h5p::H5Pset_libver_bounds(
                    fapl.id(),
                    h5f::H5F_libver_t::H5F_LIBVER_V18,
                    h5f::H5F_LIBVER_LATEST,
                )
            }),
            "setting the file format version",
        )?;
        check(
            lib(|| unsafe {
                h5p::H5Pset_fclose_degree(fapl.id(), h5f::H5F_close_degree_t::H5F_CLOSE_STRONG)
            }),
            "setting the file close degree",
        )?;
        let cpath = cstr(&path.to_string_lossy())?;
        let mut file = check_id(
            lib(|| unsafe {
                h5f::H5Fcreate(cpath.as_ptr(), h5f::H5F_ACC_TRUNC, fcpl.id(), fapl.id())
            }),
            &format!("creating {}", path.display()),
        )?;
        let result = (|| -> Result<()> {
            let slash = cstr("/")?;
            let rootg = check_id(
                lib(|| unsafe { h5g::H5Gopen2(file.id(), slash.as_ptr(), h5p::H5P_DEFAULT) }),
                "opening the root group",
            )?;
            self.report.groups += 1;
            self.created.insert(root.clone(), "/".into());
            self.write_attrs(rootg.id(), "/", &root_doc)?;
            self.export_group(file.id(), rootg.id(), &root, "/")?;
            drop(rootg);
            self.write_deferred(file.id())
        })();
        self.committed.clear();
        let closed = check(
            lib(|| unsafe { h5f::H5Fclose(file.id()) }),
            &format!("closing {}", path.display()),
        );
        file.0 = -1;
        self.pb.finish_and_clear();
        result?;
        closed?;
        if let Some(bytes) = userblock {
            // HDF5 leaves the user block zeroed: it holds what the loaded
            // file's held (a MATLAB v7.3 header, say).
            std::fs::OpenOptions::new()
                .write(true)
                .open(path)?
                .write_all_at(&bytes, 0)?;
        }
        Ok(self.report)
    }

    /// Refuses to write over an HDF5 file the store's datasets read their
    /// values from (`load --link`, or a virtual dataset's source): replaced,
    /// it would leave the store unreadable ("the linked file changed").
    fn refuse_own_source(&self, dest: &Path) -> Result<()> {
        let Ok(dest) = std::fs::canonicalize(dest) else {
            return Ok(());
        };
        let base = self.dest_dir.clone();
        // (Relative names are found where load resolves them: under the
        // bucket's parent.)
        let root_dir = self.dom.linked_root_dir().map(Path::to_path_buf);
        let names = |doc: &Value| -> Vec<String> {
            let cp = &doc["creationProperties"];
            let mut out: Vec<String> = cp
                .pointer("/layout/file_uri")
                .and_then(Value::as_str)
                .map(str::to_string)
                .into_iter()
                .collect();
            if let Some(maps) = cp.pointer("/h5lake/virtual").and_then(Value::as_array) {
                out.extend(
                    maps.iter()
                        .filter_map(|m| m.get("file")?.as_str().map(str::to_string)),
                );
            }
            out
        };
        for planned in self.objects.values() {
            for name in names(&planned.doc) {
                let p = Path::new(&name);
                let candidates = if p.is_absolute() {
                    vec![p.to_path_buf()]
                } else {
                    let beside = root_dir.as_ref().map(|d| d.join(p));
                    [beside, Some(base.join(p))].into_iter().flatten().collect()
                };
                if candidates
                    .iter()
                    .any(|c| std::fs::canonicalize(c).is_ok_and(|c| c == dest))
                {
                    return Err(Hdf5Error::DestinationExists(format!(
                        "{} holds values the store reads (linked with load --link, or a \
                         virtual dataset's source): writing over it would leave the store \
                         unreadable; write to another file",
                        dest.display()
                    )));
                }
            }
        }
        Ok(())
    }

    /// Reads the document of every reachable object, depth first in link
    /// order, noting where each is first reached and how many bytes of data
    /// there are.
    fn scan(&mut self, id: &str, path: &str) -> Result<()> {
        if self.objects.contains_key(id) {
            return Ok(());
        }
        let doc = match self.dom.get_doc(id) {
            Ok(d) => d,
            // A dangling hard link: reported when the link is written.
            Err(EngineError::NotFound(_)) => return Ok(()),
            Err(e) => return Err(e.into()),
        };
        if id.starts_with("d-") {
            if let Ok(meta) = DatasetMeta::from_doc(&resolved_doc(self.dom, &doc)) {
                if let Some(es) = meta.dtype.fixed_size() {
                    if meta.shape != Shape::Null {
                        self.total_bytes += meta.shape.num_elements() * es as u64;
                    }
                }
            }
        }
        let links = if id.starts_with("g-") {
            doc.get("links")
                .and_then(Value::as_object)
                .map(|m| {
                    m.iter()
                        .filter(|(_, l)| {
                            l.get("class").and_then(Value::as_str) == Some("H5L_TYPE_HARD")
                        })
                        .filter_map(|(n, l)| Some((n.clone(), l.get("id")?.as_str()?.to_string())))
                        .collect::<Vec<_>>()
                })
                .unwrap_or_default()
        } else {
            Vec::new()
        };
        self.first_path.insert(id.to_string(), path.to_string());
        self.objects.insert(id.to_string(), Planned { doc });
        for (name, target) in links {
            self.scan(&target, &join(path, &name))?;
        }
        Ok(())
    }

    fn export_group(&mut self, file: hid_t, gid: hid_t, group_id: &str, path: &str) -> Result<()> {
        let links: Vec<(String, Value)> = self.objects[group_id]
            .doc
            .get("links")
            .and_then(Value::as_object)
            .map(|m| m.iter().map(|(k, v)| (k.clone(), v.clone())).collect())
            .unwrap_or_default();
        for (name, link) in links {
            let child = join(path, &name);
            match self.export_link(file, gid, &name, &child, &link) {
                Ok(()) => {}
                Err(Fail::Skip(why)) => self
                    .report
                    .skipped
                    .push(crate::Skipped::object(&child, why)),
                Err(Fail::Err(e)) => return Err(e),
            }
        }
        Ok(())
    }

    fn export_link(
        &mut self,
        file: hid_t,
        gid: hid_t,
        name: &str,
        path: &str,
        link: &Value,
    ) -> Step<()> {
        let cname = cstr(name)?;
        let lcpl = link_plist()?;
        let field = |k: &str| link.get(k).and_then(Value::as_str);
        match field("class").unwrap_or("") {
            "H5L_TYPE_SOFT" => {
                let target = cstr(field("h5path").unwrap_or(""))?;
                check(
                    lib(|| unsafe {
                        h5l::H5Lcreate_soft(
                            target.as_ptr(),
                            gid,
                            cname.as_ptr(),
                            lcpl.id(),
                            h5p::H5P_DEFAULT,
                        )
                    }),
                    &format!("creating the soft link {path}"),
                )?;
            }
            "H5L_TYPE_EXTERNAL" => {
                let target_file = cstr(field("h5domain").unwrap_or(""))?;
                let target = cstr(field("h5path").unwrap_or("/"))?;
                check(
                    lib(|| unsafe {
                        h5l::H5Lcreate_external(
                            target_file.as_ptr(),
                            target.as_ptr(),
                            gid,
                            cname.as_ptr(),
                            lcpl.id(),
                            h5p::H5P_DEFAULT,
                        )
                    }),
                    &format!("creating the external link {path}"),
                )?;
            }
            "H5L_TYPE_HARD" => {
                let Some(id) = field("id") else {
                    return skip("hard link without a target id");
                };
                if let Some(first) = self.created.get(id) {
                    if first != path {
                        let src = cstr(first)?;
                        check(
                            lib(|| unsafe {
                                h5l::H5Lcreate_hard(
                                    file,
                                    src.as_ptr(),
                                    gid,
                                    cname.as_ptr(),
                                    lcpl.id(),
                                    h5p::H5P_DEFAULT,
                                )
                            }),
                            &format!("creating the hard link {path}"),
                        )?;
                    }
                } else if self.failed.contains(id) {
                    let first = self.first_path.get(id).cloned().unwrap_or_default();
                    return skip(format!("hard link to {first}, which could not be written"));
                } else if !self.objects.contains_key(id) {
                    return skip(format!("hard link to object {id}, which does not exist"));
                } else {
                    let made = self.create_object(file, gid, &cname, lcpl.id(), id, path);
                    if made.is_err() {
                        self.failed.insert(id.to_string());
                    }
                    made?;
                }
            }
            other => return skip(format!("unknown link class {other:?}")),
        }
        self.report.links += 1;
        Ok(())
    }

    /// Creates the object `id` as `name` in `gid` (its attributes, its data,
    /// and for groups everything below). Only what happens before the object
    /// exists may be a [`Fail::Skip`]: after that every failure is an error,
    /// so no half-written object is ever reported as skipped.
    fn create_object(
        &mut self,
        file: hid_t,
        gid: hid_t,
        name: &CString,
        lcpl: hid_t,
        id: &str,
        path: &str,
    ) -> Step<()> {
        let doc = self.objects[id].doc.clone();
        match id.get(..2) {
            Some("g-") => {
                let gcpl = plist(h5p::H5P_CLS_GROUP_CREATE)?;
                if tracks_order(&doc) {
                    set_creation_order(gcpl.id(), true)?;
                }
                let g = check_id(
                    lib(|| unsafe {
                        h5g::H5Gcreate2(gid, name.as_ptr(), lcpl, gcpl.id(), h5p::H5P_DEFAULT)
                    }),
                    &format!("creating the group {path}"),
                )?;
                self.created.insert(id.to_string(), path.to_string());
                self.report.groups += 1;
                self.write_attrs(g.id(), path, &doc).map_err(Fail::Err)?;
                self.export_group(file, g.id(), id, path)
                    .map_err(Fail::Err)?;
            }
            Some("t-") => {
                let dt = committed_dtype(&doc)?;
                let t = types::file_type(&dt, &doc["type"])?;
                check(
                    lib(|| unsafe {
                        h5t::H5Tcommit2(
                            gid,
                            name.as_ptr(),
                            t.id(),
                            lcpl,
                            h5p::H5P_DEFAULT,
                            h5p::H5P_DEFAULT,
                        )
                    }),
                    &format!("committing the datatype {path}"),
                )?;
                self.created.insert(id.to_string(), path.to_string());
                self.report.datatypes += 1;
                let h = t.id();
                self.committed.insert(id.to_string(), t);
                self.write_attrs(h, path, &doc).map_err(Fail::Err)?;
            }
            Some("d-") => {
                let d = self.create_dataset(gid, name, lcpl, id, path, &doc)?;
                self.created.insert(id.to_string(), path.to_string());
                self.report.datasets += 1;
                self.write_attrs(d.id(), path, &doc).map_err(Fail::Err)?;
            }
            _ => return skip(format!("object {id} of unknown kind")),
        }
        Ok(())
    }

    /// The committed datatype `tid` as a handle: the one created already,
    /// or committed now at its place when its group exists, or (when it
    /// lives in a group not written yet) `None`: the caller then uses a
    /// transient copy.
    fn committed_handle(&mut self, file: hid_t, tid: &str) -> Step<Option<hid_t>> {
        if let Some(h) = self.committed.get(tid) {
            return Ok(Some(h.id()));
        }
        if self.failed.contains(tid) {
            return Ok(None);
        }
        let (Some(planned), Some(path)) = (self.objects.get(tid), self.first_path.get(tid)) else {
            return Ok(None);
        };
        let doc = planned.doc.clone();
        let path = path.clone();
        let (parent, name) = match path.rsplit_once('/') {
            Some(("", n)) => ("/".to_string(), n.to_string()),
            Some((p, n)) => (p.to_string(), n.to_string()),
            None => return Ok(None),
        };
        if !self.created.values().any(|p| *p == parent) {
            return Ok(None);
        }
        let dt = committed_dtype(&doc)?;
        let t = types::file_type(&dt, &doc["type"])?;
        let cparent = cstr(&parent)?;
        let cname = cstr(&name)?;
        let lcpl = link_plist()?;
        let g = check_id(
            lib(|| unsafe { h5g::H5Gopen2(file, cparent.as_ptr(), h5p::H5P_DEFAULT) }),
            &format!("opening {parent}"),
        )?;
        check(
            lib(|| unsafe {
                h5t::H5Tcommit2(
                    g.id(),
                    cname.as_ptr(),
                    t.id(),
                    lcpl.id(),
                    h5p::H5P_DEFAULT,
                    h5p::H5P_DEFAULT,
                )
            }),
            &format!("committing the datatype {path}"),
        )?;
        // The link is counted when the walk reaches it.
        self.report.datatypes += 1;
        self.created.insert(tid.to_string(), path.clone());
        let h = t.id();
        // Registered before its attributes, which may use it themselves.
        self.committed.insert(tid.to_string(), t);
        self.write_attrs(h, &path, &doc).map_err(Fail::Err)?;
        Ok(Some(h))
    }

    /// The file datatype for a type in a document: the committed type it
    /// names (by `"t-…"` id, or an `id` key in the type object), else a new
    /// transient type; with the datatype and its JSON (the committed type's
    /// for an id).
    fn type_handle(&mut self, file: hid_t, t: &Value) -> Step<(Datatype, Value, TypeHandle)> {
        let tid = match t {
            Value::String(s) if s.starts_with("t-") => Some(s.clone()),
            Value::Object(m) => m
                .get("id")
                .and_then(Value::as_str)
                .filter(|s| s.starts_with("t-"))
                .map(str::to_string),
            _ => None,
        };
        let (dt, json) = match (&tid, t) {
            (Some(tid), Value::String(_)) => {
                let doc = match self.objects.get(tid) {
                    Some(p) => p.doc.clone(),
                    None => self.dom.get_doc(tid)?,
                };
                (committed_dtype(&doc)?, doc["type"].clone())
            }
            _ => (Datatype::from_json(t).map_err(Hdf5Error::from)?, t.clone()),
        };
        if let Some(tid) = tid {
            if let Some(h) = self.committed_handle(file, &tid)? {
                return Ok((dt, json, TypeHandle::Borrowed(h)));
            }
        }
        let h = types::file_type(&dt, &json)?;
        Ok((dt, json, TypeHandle::Owned(h)))
    }

    /// Writes what holds object references ([`Deferred`]).
    fn write_deferred(&mut self, file: hid_t) -> Result<()> {
        let mut refs = RefWriter::new(file, self.created.clone());
        for d in std::mem::take(&mut self.deferred) {
            match d {
                Deferred::Attr { path, name, attr } => {
                    let cpath = cstr(&path)?;
                    let obj = check_id(
                        lib(|| unsafe { h5o::H5Oopen(file, cpath.as_ptr(), h5p::H5P_DEFAULT) }),
                        &format!("opening {path}"),
                    )?;
                    let part = format!("attribute {name:?}");
                    match self.write_attr(
                        file,
                        obj.id(),
                        &name,
                        &attr,
                        &mut |c, r| refs.address(c, r),
                        true,
                    ) {
                        Ok(()) => self.report.attributes += 1,
                        Err(Fail::Skip(why)) => {
                            self.report
                                .skipped
                                .push(crate::Skipped::part(&path, part, why));
                            refs.missing = 0;
                            continue;
                        }
                        Err(Fail::Err(e)) => return Err(e),
                    }
                    refs.report_missing(&path, part, &mut self.report.skipped);
                }
                Deferred::Values { path, id, doc } => {
                    let cpath = cstr(&path)?;
                    let dset = check_id(
                        lib(|| unsafe { h5d::H5Dopen2(file, cpath.as_ptr(), h5p::H5P_DEFAULT) }),
                        &format!("opening {path}"),
                    )?;
                    let resolved = resolved_doc(self.dom, &doc);
                    let meta = DatasetMeta::from_doc(&resolved)?;
                    let mtype = types::memory_type(&meta.dtype, &resolved["type"])?;
                    let mut w = DataWriter {
                        dom: self.dom,
                        meta: &meta,
                        id: &id,
                        dset: dset.id(),
                        mtype: mtype.id(),
                        repack: None,
                        pb: &self.pb,
                        chunks: 0,
                        bytes: 0,
                    };
                    let conv = &mut |c: RefKind, r: &[u8]| refs.address(c, r);
                    match plan_layout(&doc, &meta) {
                        Layout::Chunked { .. } => w.write_chunk_regions(conv)?,
                        Layout::Contiguous | Layout::Compact => w.write_slabs(conv)?,
                    }
                    self.report.chunks += w.chunks;
                    self.report.bytes += w.bytes;
                    refs.report_missing(&path, "values".into(), &mut self.report.skipped);
                }
            }
        }
        Ok(())
    }

    /// Whether an attribute's values hold object references.
    fn holds_refs(&mut self, file: hid_t, a: &Value) -> bool {
        a.get("type")
            .and_then(|t| self.type_handle(file, t).ok())
            .is_some_and(|(dt, ..)| has_refs(&dt))
    }

    fn write_attrs(&mut self, obj: hid_t, path: &str, doc: &Value) -> Result<()> {
        let Some(attrs) = doc.get("attributes").and_then(Value::as_object) else {
            return Ok(());
        };
        let file = lib(|| unsafe { hdf5_sys::h5i::H5Iget_file_id(obj) });
        let file = check_id(file, "finding an object's file")?;
        for (name, a) in attrs {
            if self.holds_refs(file.id(), a) {
                // Made now, in its place among the others (netCDF-4's
                // DIMENSION_LIST stays where it was in creation order); its
                // references are written once the objects they name are.
                let mut empty = a.clone();
                if let Some(m) = empty.as_object_mut() {
                    m.remove("value");
                }
                match self.write_attr(file.id(), obj, name, &empty, &mut no_refs, false) {
                    Ok(()) => self.deferred.push(Deferred::Attr {
                        path: path.to_string(),
                        name: name.clone(),
                        attr: a.clone(),
                    }),
                    Err(Fail::Skip(why)) => self.report.skipped.push(crate::Skipped::part(
                        path,
                        format!("attribute {name:?}"),
                        why,
                    )),
                    Err(Fail::Err(e)) => return Err(e),
                }
                continue;
            }
            match self.write_attr(file.id(), obj, name, a, &mut no_refs, false) {
                Ok(()) => self.report.attributes += 1,
                Err(Fail::Skip(why)) => self.report.skipped.push(crate::Skipped::part(
                    path,
                    format!("attribute {name:?}"),
                    why,
                )),
                Err(Fail::Err(e)) => return Err(e),
            }
        }
        Ok(())
    }

    /// Writes one attribute (`refs` makes its object references); `made`:
    /// into the attribute made already without its value (removed again
    /// when the value cannot be written).
    fn write_attr(
        &mut self,
        file: hid_t,
        obj: hid_t,
        name: &str,
        a: &Value,
        refs: &mut RefConv,
        made: bool,
    ) -> Step<()> {
        let t = a
            .get("type")
            .ok_or_else(|| Fail::Skip("attribute without a type".into()))?;
        let shape = Shape::from_json(
            a.get("shape")
                .ok_or_else(|| Fail::Skip("attribute without a shape".into()))?,
        )
        .map_err(Hdf5Error::from)?;
        let (dt, tjson, ftype) = self.type_handle(file, t)?;
        let (space, rank) = dataspace(&shape)?;
        let n = match &shape {
            Shape::Null => 0,
            other => other.num_elements(),
        };
        let value = a.get("value").filter(|v| !v.is_null());
        let cname = cstr(name)?;
        // Encode before creating, so that a value we cannot write leaves no
        // half-made attribute behind.
        let encoded = (|| -> Step<Option<_>> {
            match value {
                Some(v) if n > 0 => {
                    let mut flat = Vec::new();
                    flatten_depth(v, rank, &mut flat);
                    if flat.len() as u64 != n {
                        return skip(format!(
                            "the value has {} elements but the shape {} needs {n}",
                            flat.len(),
                            shape.to_json()
                        ));
                    }
                    Ok(Some(encode_values(&dt, &flat, refs)?))
                }
                _ => Ok(None),
            }
        })();
        let data = match encoded {
            Err(Fail::Skip(why)) if made => {
                lib(|| unsafe { h5a::H5Adelete(obj, cname.as_ptr()) });
                return skip(why);
            }
            other => other?,
        };
        let attr = if made {
            check_id(
                lib(|| unsafe { h5a::H5Aopen(obj, cname.as_ptr(), h5p::H5P_DEFAULT) }),
                &format!("opening the attribute {name:?}"),
            )?
        } else {
            self.create_attr(obj, name, &cname, ftype.id(), space.id())?
        };
        if let Some(data) = data {
            let mem = types::memory_type(&dt, &tjson)?;
            data.with_ptr(|p| {
                check(
                    lib(|| unsafe { h5a::H5Awrite(attr.id(), mem.id(), p) }),
                    &format!("writing the attribute {name:?}"),
                )
            })?;
        }
        Ok(())
    }

    /// A new attribute `name` of `obj`, of type `ftype` and dataspace `space`.
    fn create_attr(
        &self,
        obj: hid_t,
        name: &str,
        cname: &CString,
        ftype: hid_t,
        space: hid_t,
    ) -> Result<Hid> {
        let acpl = plist(h5p::H5P_CLS_ATTRIBUTE_CREATE)?;
        if !name.is_ascii() {
            check(
                lib(|| unsafe {
                    h5p::H5Pset_char_encoding(acpl.id(), h5t::H5T_cset_t::H5T_CSET_UTF8)
                }),
                "setting the attribute name encoding",
            )?;
        }
        check_id(
            lib(|| unsafe {
                h5a::H5Acreate2(
                    obj,
                    cname.as_ptr(),
                    ftype,
                    space,
                    acpl.id(),
                    h5p::H5P_DEFAULT,
                )
            }),
            &format!("creating the attribute {name:?}"),
        )
    }

    fn create_dataset(
        &mut self,
        gid: hid_t,
        name: &CString,
        lcpl: hid_t,
        id: &str,
        path: &str,
        doc: &Value,
    ) -> Step<Hid> {
        let file = check_id(
            lib(|| unsafe { hdf5_sys::h5i::H5Iget_file_id(gid) }),
            "finding the file",
        )?;
        let (_, tjson, ftype) = self.type_handle(
            file.id(),
            doc.get("type")
                .ok_or_else(|| Fail::Skip("dataset without a type".into()))?,
        )?;
        let meta = DatasetMeta::from_doc(&resolved_doc(self.dom, doc))?;
        let mtype = types::memory_type(&meta.dtype, &tjson)?;
        // Fixed-size elements laid out otherwise in the file than in the
        // store (padded compounds): chunks written directly are laid out
        // as in the file first.
        let repack = if converts(&meta.dtype) {
            None
        } else {
            Repack::of(ftype.id())?
        };
        let file_es = repack
            .as_ref()
            .map_or(meta.dtype.filter_elem_size(), |r| r.file_elem);
        let cprops = doc
            .get("creationProperties")
            .cloned()
            .unwrap_or(Value::Null);
        // A virtual dataset stays one where HDF5 can name its sources.
        let mappings = match &meta.virtual_map {
            Some(vm) => {
                let m = hdf5_mappings(self.dom, &vm.to_json(), &self.dest_dir)?;
                if m.is_none() {
                    self.report.notes.push(format!(
                        "{path}: a virtual dataset with sources an HDF5 file cannot name (in \
                         other h5lake stores, or in HDF5 files no longer there): written with \
                         its values"
                    ));
                }
                m
            }
            None => None,
        };
        let mut meta = meta;
        if mappings.is_none() && meta.virtual_map.as_ref().is_some_and(|vm| vm.unlimited) {
            // Written with its values, an unlimited virtual dataset has the
            // extent its sources give it now.
            let live = self.dom.dataset(id)?;
            meta.dims.clone_from(&live.dims);
            meta.shape = live.shape.clone();
        }
        let layout = plan_layout(doc, &meta);
        // Data read through the engine needs a document the engine can parse
        // (it does not resolve a type given as a bare committed-type id).
        let reads_stored_chunks =
            matches!(layout, Layout::Chunked { direct: true, .. }) && meta.link.is_none();
        if !reads_stored_chunks && meta.shape != Shape::Null {
            if let Err(e) = self.dom.dataset_meta(id) {
                return match Fail::from(e) {
                    Fail::Skip(why) => skip(format!("the engine cannot read this dataset: {why}")),
                    err => Err(err),
                };
            }
        }
        let (space, _) = dataspace(&meta.shape)?;

        let dcpl = plist(h5p::H5P_CLS_DATASET_CREATE)?;
        let what = "setting up the dataset's creation properties";
        check(
            lib(|| unsafe { h5p::H5Pset_obj_track_times(dcpl.id(), 0) }),
            what,
        )?;
        if tracks_order(doc) {
            let flags = h5p::H5P_CRT_ORDER_TRACKED | h5p::H5P_CRT_ORDER_INDEXED;
            check(
                lib(|| unsafe { h5p::H5Pset_attr_creation_order(dcpl.id(), flags) }),
                what,
            )?;
        }
        match &layout {
            _ if mappings.is_some() => {}
            Layout::Compact => {
                check(
                    lib(|| unsafe {
                        h5p::H5Pset_layout(dcpl.id(), h5d::H5D_layout_t::H5D_COMPACT)
                    }),
                    what,
                )?;
            }
            Layout::Contiguous => {
                check(
                    lib(|| unsafe {
                        h5p::H5Pset_layout(dcpl.id(), h5d::H5D_layout_t::H5D_CONTIGUOUS)
                    }),
                    what,
                )?;
            }
            Layout::Chunked { chunk, .. } => {
                check(
                    lib(|| unsafe {
                        h5p::H5Pset_chunk(dcpl.id(), chunk.len() as i32, chunk.as_ptr())
                    }),
                    what,
                )?;
                let chunk_bytes = chunk.iter().product::<u64>() * file_es as u64;
                set_filters(dcpl.id(), &meta, file_es, chunk_bytes)?;
            }
        }
        if let Some(m) = &mappings {
            virtual_layout::set_mappings(dcpl.id(), &meta.dims, m)?;
        }
        let filtered = matches!(layout, Layout::Chunked { .. }) && !meta.pipeline.is_empty();
        // Fill value (and when it is written), as the document says.
        // A base64-encoded fill is the element's bytes: back to its JSON form.
        let fill = match cprops.get("fillValue_encoding") {
            Some(Value::Null) | None => cprops.get("fillValue").filter(|v| !v.is_null()).cloned(),
            Some(_) => h5lake_types::declared_fill(&meta.dtype, &cprops)
                .and_then(|b| b.map(|b| element_to_json(&meta.dtype, &b)).transpose())
                .map_err(|e| Fail::Skip(e.to_string()))?,
        };
        if let Some(fv) = &fill {
            // References to objects created by now (a later one is null).
            let created = if has_refs(&meta.dtype) {
                self.created.clone()
            } else {
                HashMap::new()
            };
            let mut refs = RefWriter::new(file.id(), created);
            match encode_values(&meta.dtype, &[fv], &mut |c, r| refs.address(c, r)) {
                Ok(data) => {
                    data.with_ptr(|p| {
                        check(
                            lib(|| unsafe { h5p::H5Pset_fill_value(dcpl.id(), mtype.id(), p) }),
                            "setting the fill value",
                        )
                    })?;
                }
                Err(Fail::Skip(why)) => self.report.skipped.push(crate::Skipped::part(
                    path,
                    format!("fill value {fv}"),
                    why,
                )),
                Err(e) => return Err(e),
            }
            refs.report_missing(path, "fill value".into(), &mut self.report.skipped);
        }
        let fill_time = match cprops.get("fillTime").and_then(Value::as_str) {
            Some("H5D_FILL_TIME_ALLOC") => Some(h5d::H5D_fill_time_t::H5D_FILL_TIME_ALLOC),
            // libhdf5 refuses "never" for filtered datasets.
            Some("H5D_FILL_TIME_NEVER") if !filtered => {
                Some(h5d::H5D_fill_time_t::H5D_FILL_TIME_NEVER)
            }
            Some("H5D_FILL_TIME_IFSET") => Some(h5d::H5D_fill_time_t::H5D_FILL_TIME_IFSET),
            _ => None,
        };
        if let Some(ft) = fill_time {
            check(
                lib(|| unsafe { h5p::H5Pset_fill_time(dcpl.id(), ft) }),
                what,
            )?;
        }
        let alloc_time = match cprops.get("allocTime").and_then(Value::as_str) {
            Some("H5D_ALLOC_TIME_EARLY") => Some(h5d::H5D_alloc_time_t::H5D_ALLOC_TIME_EARLY),
            Some("H5D_ALLOC_TIME_LATE") => Some(h5d::H5D_alloc_time_t::H5D_ALLOC_TIME_LATE),
            Some("H5D_ALLOC_TIME_INCR") => Some(h5d::H5D_alloc_time_t::H5D_ALLOC_TIME_INCR),
            _ => None,
        };
        if let (Some(at), false) = (
            alloc_time,
            matches!(layout, Layout::Compact) || mappings.is_some(),
        ) {
            check(
                lib(|| unsafe { h5p::H5Pset_alloc_time(dcpl.id(), at) }),
                what,
            )?;
        }

        let dset = check_id(
            lib(|| unsafe {
                h5d::H5Dcreate2(
                    gid,
                    name.as_ptr(),
                    ftype.id(),
                    space.id(),
                    lcpl,
                    dcpl.id(),
                    h5p::H5P_DEFAULT,
                )
            }),
            &format!("creating the dataset {path}"),
        )?;
        if mappings.is_some() {
            // (Its values are its sources'.)
            return Ok(dset);
        }
        if let Some(why) = meta.pipeline.unavailable() {
            // Under a filter h5lake has no codec for, chunks are carried
            // only as libhdf5 coded them (an HDF5-layout store's, copied
            // as they are); others cannot be read to be written. The
            // dataset itself (shape, type, filters, attributes) is made.
            let verbatim = reads_stored_chunks && meta.format == ChunkFormat::Hdf5;
            if !verbatim {
                self.report.skipped.push(crate::Skipped::part(
                    path,
                    "values",
                    format!("unsupported filter: {why} (h5lake cannot decode its chunks)"),
                ));
                return Ok(dset);
            }
        }
        if has_refs(&meta.dtype) {
            // Written once every object it may reference exists.
            self.deferred.push(Deferred::Values {
                path: path.to_string(),
                id: id.to_string(),
                doc: doc.clone(),
            });
            return Ok(dset);
        }
        let mut w = DataWriter {
            dom: self.dom,
            meta: &meta,
            id,
            dset: dset.id(),
            mtype: mtype.id(),
            repack: repack.as_ref(),
            pb: &self.pb,
            chunks: 0,
            bytes: 0,
        };
        let written = match &layout {
            Layout::Chunked { direct: true, .. } => w.write_chunks_direct(),
            Layout::Chunked { direct: false, .. } => w.write_chunk_regions(&mut no_refs),
            Layout::Contiguous | Layout::Compact => w.write_slabs(&mut no_refs),
        };
        let (chunks, bytes) = (w.chunks, w.bytes);
        // The dataset exists now: any failure is a real one.
        written.map_err(Fail::Err)?;
        self.report.chunks += chunks;
        self.report.bytes += bytes;
        Ok(dset)
    }
}

/// A datatype handle that is either ours or a committed type's.
enum TypeHandle {
    Owned(Hid),
    Borrowed(hid_t),
}

impl TypeHandle {
    fn id(&self) -> hid_t {
        match self {
            TypeHandle::Owned(h) => h.id(),
            TypeHandle::Borrowed(h) => *h,
        }
    }
}

/// The stored mappings of a virtual dataset as HDF5's, each with its
/// source's extent where known; `None` when a source is in another h5lake
/// store (an HDF5 file cannot name one) or in an HDF5 file no longer there.
fn hdf5_mappings(
    dom: &Domain,
    stored: &Value,
    dest_dir: &Path,
) -> Result<Option<Vec<(virtual_layout::RawMapping, Vec<u64>)>>> {
    let mut out = Vec::new();
    for mp in stored.as_array().into_iter().flatten() {
        if !mp["store"].is_null() {
            return Ok(None);
        }
        let path = mp["path"].as_str().unwrap_or("/").to_string();
        let runs = |k: &str| mp[k].as_array().cloned().unwrap_or_default();
        if mp["printf"].as_bool() == Some(true) {
            // A series of HDF5 files: named as stated (each is looked for
            // when read, as libhdf5 looks for it).
            // (Neither: a series of the store's own datasets, ".".)
            let file = mp["file_name"]
                .as_str()
                .or(mp["file"].as_str())
                .unwrap_or(".");
            let reach = runs("src")
                .iter()
                .map(|r| h5lake_engine::virtual_ds::Run::of_json(r).map_or(1, |r| r.reach()))
                .collect();
            out.push((
                virtual_layout::RawMapping {
                    file: file.to_string(),
                    dataset: path,
                    vsel: runs("dst"),
                    ssel: Some(runs("src")),
                    velements: None,
                    printf: true,
                },
                reach,
            ));
            continue;
        }
        let printf = false;
        // Sources in this store are written to the same file ("."); those
        // in HDF5 files stay there.
        let (file, id) = match mp["file"].as_str() {
            // (A file gone since: the values, copied or not, are written.)
            Some(f) if !Path::new(f).is_file() => return Ok(None),
            // The name the mapping was given when it still leads to the
            // file from beside the copy (as libhdf5 looks for a relative
            // one), else the file's path.
            Some(f) => {
                let given = mp["file_name"].as_str().filter(|n| {
                    let same = |p: &Path| p.canonicalize().ok();
                    same(&dest_dir.join(n)).is_some_and(|p| Some(p) == same(Path::new(f)))
                });
                (
                    given.unwrap_or(f).to_string(),
                    mp["id"].as_str().map(str::to_string),
                )
            }
            None => (".".to_string(), dom.resolve_path(&path)?),
        };
        let dims = match id {
            Some(id) => dom
                .dataset_meta(&id)
                .map(|m| m.dims.clone())
                .unwrap_or_default(),
            None => Vec::new(),
        };
        out.push((
            virtual_layout::RawMapping {
                file,
                dataset: path,
                vsel: runs("dst"),
                ssel: Some(runs("src")),
                velements: None,
                printf,
            },
            dims,
        ));
    }
    Ok(Some(out))
}

/// How a dataset is laid out in the file.
enum Layout {
    Contiguous,
    Compact,
    /// `direct`: the file's chunks are the store's chunks, written with
    /// `H5Dwrite_chunk`; otherwise the data goes through `H5Dwrite`.
    Chunked {
        chunk: Vec<u64>,
        direct: bool,
    },
}

fn plan_layout(doc: &Value, meta: &DatasetMeta) -> Layout {
    let requested = doc
        .pointer("/creationProperties/layout/class")
        .and_then(Value::as_str)
        .unwrap_or("H5D_CONTIGUOUS");
    let Shape::Simple { dims, .. } = &meta.shape else {
        return if requested == "H5D_COMPACT" {
            Layout::Compact
        } else {
            Layout::Contiguous
        };
    };
    let maxdims = meta.shape.maxdims();
    let resizable = maxdims != *dims;
    let chunked = if meta.link.is_some() {
        requested != "H5D_CONTIGUOUS_REF"
    } else {
        // HSDS keeps contiguous datasets chunked too (a top-level `layout`):
        // what the user asked for is in the creation properties.
        (meta.chunked && !matches!(requested, "H5D_CONTIGUOUS" | "H5D_COMPACT"))
            || resizable
            || !meta.pipeline.is_empty()
    };
    if !chunked {
        let es = meta.dtype.fixed_size().unwrap_or(16) as u64;
        if requested == "H5D_COMPACT" && meta.shape.num_elements() * es <= MAX_COMPACT_BYTES {
            return Layout::Compact;
        }
        return Layout::Contiguous;
    }
    // A linked dataset read in hyper-chunks: the file gets the source
    // file's chunks back (a lossy filter such as scale-offset would code
    // other chunks to other values), written through H5Dwrite.
    let source_chunk: Option<Vec<u64>> = meta.link.as_ref().and_then(|_| {
        doc.pointer("/creationProperties/layout/hyper_dims")?
            .as_array()?
            .iter()
            .map(Value::as_u64)
            .collect()
    });
    if let Some(sc) = source_chunk.filter(|sc| sc.len() == dims.len() && *sc != meta.chunk) {
        if sc
            .iter()
            .zip(&maxdims)
            .all(|(&c, &m)| c > 0 && (m == UNLIMITED || c <= m))
        {
            return Layout::Chunked {
                chunk: sc,
                direct: false,
            };
        }
    }
    // libhdf5 wants chunk dims no larger than fixed maximum dims (a store's
    // hyper-chunks may be): then the file gets other chunks than the store.
    let fits = meta
        .chunk
        .iter()
        .zip(&maxdims)
        .all(|(&c, &m)| c > 0 && (m == UNLIMITED || c <= m));
    // (A virtual dataset written with its values has no chunks of its own:
    // HSDS's guess of about 1 MiB.)
    let own = if meta.virtual_map.is_some() {
        let es = meta.dtype.fixed_size().unwrap_or(16) as u64;
        h5lake_types::guess_chunks(dims, es)
    } else {
        meta.chunk.clone()
    };
    let chunk: Vec<u64> = own
        .iter()
        .zip(&maxdims)
        .map(|(&c, &m)| {
            if m == UNLIMITED {
                c.max(1)
            } else {
                c.clamp(1, m.max(1))
            }
        })
        .collect();
    Layout::Chunked {
        chunk,
        direct: fits && !converts(&meta.dtype) && meta.virtual_map.is_none(),
    }
}

/// Adds the dataset's filters to a dcpl in pipeline order (`elem`: the
/// size of the file's elements, which filters such as shuffle work on).
fn set_filters(dcpl: hid_t, meta: &DatasetMeta, elem: usize, chunk_bytes: u64) -> Step<()> {
    let what = "adding a filter";
    let optional = hdf5_sys::h5z::H5Z_FLAG_OPTIONAL;
    for f in &meta.pipeline.filters {
        if f.id() == 0 {
            // (An entry naming no filter id: nothing HDF5 could record.)
            continue;
        }
        let status = match f {
            Filter::Deflate { level } => lib(|| unsafe { h5p::H5Pset_deflate(dcpl, *level) }),
            Filter::Shuffle => lib(|| unsafe { h5p::H5Pset_shuffle(dcpl) }),
            Filter::Fletcher32 => lib(|| unsafe { h5p::H5Pset_fletcher32(dcpl) }),
            _ => {
                let cd = f.hdf5_client_data(elem, chunk_bytes);
                lib(|| unsafe {
                    h5p::H5Pset_filter(dcpl, f.id() as i32, optional, cd.len(), cd.as_ptr())
                })
            }
        };
        check(status, what)?;
    }
    Ok(())
}

/// A chunk ready for `H5Dwrite_chunk`: its element offset, its filtered
/// bytes and the number of in-extent data bytes it holds.
type EncodedChunk = (Vec<u64>, Vec<u8>, u64);

/// Moves one dataset's data from the store into the file.
struct DataWriter<'d> {
    dom: &'d Domain,
    meta: &'d DatasetMeta,
    id: &'d str,
    dset: hid_t,
    /// The memory type of the store's elements.
    mtype: hid_t,
    /// From the store's packed elements to the file's layout, when they
    /// differ.
    repack: Option<&'d Repack>,
    pb: &'d ProgressBar,
    chunks: u64,
    bytes: u64,
}

/// One block of data for `H5Dwrite`: a hyperslab and its elements.
struct Block {
    start: Vec<u64>,
    count: Vec<u64>,
    data: BlockData,
}

enum BlockData {
    Fixed(Vec<u8>),
    Vlen(Vec<Vec<u8>>),
}

impl BlockData {
    fn logical_bytes(&self) -> u64 {
        match self {
            BlockData::Fixed(b) => b.len() as u64,
            BlockData::Vlen(v) => v.iter().map(|e| e.len() as u64).sum(),
        }
    }
}

impl DataWriter<'_> {
    fn es(&self) -> usize {
        self.meta.dtype.fixed_size().unwrap_or(0)
    }

    /// Chunk coordinates of the chunks stored for this dataset (inside the
    /// extent), or for a dataset linked to another file every chunk
    /// position.
    fn chunk_positions(&self) -> Result<Vec<Vec<u64>>> {
        let m = self.meta;
        let dims = &m.dims;
        if dims.contains(&0) {
            return Ok(Vec::new());
        }
        let grid: Vec<u64> = dims
            .iter()
            .zip(&m.chunk)
            .map(|(d, c)| d.div_ceil(*c))
            .collect();
        // (Linked and virtual datasets have their values elsewhere: every
        // chunk of the extent is read.)
        if m.link.is_some() || m.virtual_map.is_some() {
            return Ok(odometer(&grid));
        }
        let prefix = ids::object_prefix(&m.id)?;
        let (keys, _) = self.dom.store().list_dir(&prefix)?;
        let mut out: Vec<Vec<u64>> = keys
            .iter()
            .filter_map(|k| parse_chunk_name(k.strip_prefix(&prefix)?, dims.len()))
            .filter(|c| c.iter().zip(&grid).all(|(i, g)| i < g))
            .collect();
        out.sort();
        Ok(out)
    }

    /// The in-extent box of a chunk: (start, count).
    fn chunk_box(&self, coords: &[u64]) -> (Vec<u64>, Vec<u64>) {
        let m = self.meta;
        let start: Vec<u64> = coords.iter().zip(&m.chunk).map(|(i, c)| i * c).collect();
        let count = start
            .iter()
            .zip(&m.chunk)
            .zip(&m.dims)
            .map(|((s, c), d)| (*c).min(d - s))
            .collect();
        (start, count)
    }

    /// Chunked datasets whose file chunks are the store's chunks: each
    /// chunk in libhdf5's filtered form, written with `H5Dwrite_chunk`.
    fn write_chunks_direct(&mut self) -> Result<()> {
        let m = self.meta;
        let positions = self.chunk_positions()?;
        let es = self.es();
        let fes = m.dtype.filter_elem_size();
        let chunk_bytes = m.chunk.iter().product::<u64>() as usize * es;
        let dom = self.dom;
        let id = self.id;
        let this = &*self;
        let repack = self.repack;
        let produce = |i: usize| -> Result<Option<EncodedChunk>> {
            let coords = &positions[i];
            let (start, count) = this.chunk_box(coords);
            let logical = count.iter().product::<u64>() * es as u64;
            let raw = if m.link.is_none() {
                let key = ids::chunk_key(&ids::object_prefix(&m.id)?, coords);
                let Some(stored) = dom.store().get(&key)? else {
                    return Ok(None);
                };
                // Already in libhdf5's layout: used as stored.
                if repack.is_none()
                    && !m.is_columnar()
                    && ((m.pipeline.is_empty() && stored.len() == chunk_bytes)
                        || (!m.pipeline.is_empty()
                            && (m.format == ChunkFormat::Hdf5
                                || m.pipeline.keeps_hdf5_layout()
                                    && m.pipeline.unavailable().is_none())))
                {
                    return Ok(Some((start, stored.to_vec(), logical)));
                }
                let raw = m.codec.decode(&stored, Some(chunk_bytes))?;
                if raw.len() != chunk_bytes {
                    return Err(EngineError::Corrupt(format!(
                        "chunk {key} holds {} bytes, expected {chunk_bytes}",
                        raw.len()
                    ))
                    .into());
                }
                raw
            } else {
                let mut part = vec![0u8; logical as usize];
                let sel = Selection::from_slices(
                    &start
                        .iter()
                        .zip(&count)
                        .map(|(&s, &c)| (s, c, 1))
                        .collect::<Vec<_>>(),
                );
                dom.read(id, &sel, &mut part)?;
                let mut raw = fill_chunk(m);
                if raw.len() == part.len() {
                    raw = part;
                } else {
                    place_box(&mut raw, &m.chunk, &part, &count, es);
                }
                // Missing in the source too: leave it to the fill value.
                if raw == fill_chunk(m) {
                    return Ok(None);
                }
                raw
            };
            let enc = match repack {
                Some(r) => m
                    .pipeline
                    .encode_as(r.unpack(&raw), r.file_elem, ChunkFormat::Hdf5)?,
                None => m.pipeline.encode_as(raw, fes, ChunkFormat::Hdf5)?,
            };
            Ok(Some((start, enc, logical)))
        };
        let dset = self.dset;
        let pb = self.pb;
        let (mut chunks, mut bytes) = (0u64, 0u64);
        pipelined(positions.len(), true, produce, |(start, enc, logical)| {
            check(
                lib(|| unsafe {
                    h5d::H5Dwrite_chunk(
                        dset,
                        h5p::H5P_DEFAULT,
                        0,
                        start.as_ptr(),
                        enc.len(),
                        enc.as_ptr().cast(),
                    )
                }),
                "writing a chunk",
            )?;
            chunks += 1;
            bytes += logical;
            pb.inc(logical);
            Ok(())
        })?;
        self.chunks += chunks;
        self.bytes += bytes;
        Ok(())
    }

    /// Chunked datasets written through `H5Dwrite` (variable-length types,
    /// references, or chunk shapes libhdf5 would not take): one block per
    /// stored chunk (`refs` makes the references).
    fn write_chunk_regions(&mut self, refs: &mut RefConv) -> Result<()> {
        let positions = self.chunk_positions()?;
        let boxes: Vec<(Vec<u64>, Vec<u64>)> =
            positions.iter().map(|c| self.chunk_box(c)).collect();
        let n = boxes.len() as u64;
        self.write_blocks(boxes, true, refs)?;
        self.chunks += n;
        Ok(())
    }

    /// Contiguous and compact datasets: slabs of at most [`SLAB_BYTES`]
    /// (`refs` makes the references).
    fn write_slabs(&mut self, refs: &mut RefConv) -> Result<()> {
        let m = self.meta;
        match m.shape {
            Shape::Null => Ok(()),
            Shape::Scalar => self.write_blocks(vec![(vec![0], vec![1])], false, refs),
            Shape::Simple { ref dims, .. } => {
                if dims.contains(&0) {
                    return Ok(());
                }
                // Variable-length elements: budget 64 bytes each.
                let es = m.dtype.fixed_size().unwrap_or(64) as u64;
                self.write_blocks(slabs(dims, es, SLAB_BYTES), false, refs)
            }
        }
    }

    /// Reads each (start, count) box through the engine (in parallel when
    /// `parallel`, else one box ahead of the writes) and `H5Dwrite`s it.
    fn write_blocks(
        &mut self,
        boxes: Vec<(Vec<u64>, Vec<u64>)>,
        parallel: bool,
        refs: &mut RefConv,
    ) -> Result<()> {
        let m = self.meta;
        let dom = self.dom;
        let id = self.id;
        let es = self.es();
        let produce = |i: usize| -> Result<Option<Block>> {
            let (start, count) = &boxes[i];
            let sel = Selection::from_slices(
                &start
                    .iter()
                    .zip(count)
                    .map(|(&s, &c)| (s, c, 1))
                    .collect::<Vec<_>>(),
            );
            let data = if m.dtype.is_variable() {
                BlockData::Vlen(dom.read_vlen(id, &sel)?)
            } else {
                let mut buf = vec![0u8; count.iter().product::<u64>() as usize * es];
                dom.read(id, &sel, &mut buf)?;
                BlockData::Fixed(buf)
            };
            Ok(Some(Block {
                start: start.clone(),
                count: count.clone(),
                data,
            }))
        };
        let scalar = m.shape == Shape::Scalar;
        let (dset, mtype, pb) = (self.dset, self.mtype, self.pb);
        let mut bytes = 0u64;
        pipelined(boxes.len(), parallel, produce, |b: Block| {
            let logical = b.data.logical_bytes();
            let data = match b.data {
                BlockData::Fixed(v) if converts(&m.dtype) => {
                    let elems: Vec<&[u8]> = v.chunks(es.max(1)).collect();
                    Encoded::Variable(to_memory(&m.dtype, &elems, refs)?)
                }
                BlockData::Fixed(v) => Encoded::Fixed(v),
                BlockData::Vlen(v) => Encoded::Variable(to_memory(&m.dtype, &v, refs)?),
            };
            if scalar {
                data.with_ptr(|p| {
                    check(
                        lib(|| unsafe {
                            h5d::H5Dwrite(
                                dset,
                                mtype,
                                h5s::H5S_ALL,
                                h5s::H5S_ALL,
                                h5p::H5P_DEFAULT,
                                p,
                            )
                        }),
                        "writing a dataset",
                    )
                })?;
            } else {
                let mspace = check_id(
                    lib(|| unsafe {
                        h5s::H5Screate_simple(
                            b.count.len() as i32,
                            b.count.as_ptr(),
                            std::ptr::null(),
                        )
                    }),
                    "creating a dataspace",
                )?;
                let fspace = check_id(
                    lib(|| unsafe { h5d::H5Dget_space(dset) }),
                    "reading a dataset's dataspace",
                )?;
                check(
                    lib(|| unsafe {
                        h5s::H5Sselect_hyperslab(
                            fspace.id(),
                            h5s::H5S_seloper_t::H5S_SELECT_SET,
                            b.start.as_ptr(),
                            std::ptr::null(),
                            b.count.as_ptr(),
                            std::ptr::null(),
                        )
                    }),
                    "selecting a hyperslab",
                )?;
                data.with_ptr(|p| {
                    check(
                        lib(|| unsafe {
                            h5d::H5Dwrite(
                                dset,
                                mtype,
                                mspace.id(),
                                fspace.id(),
                                h5p::H5P_DEFAULT,
                                p,
                            )
                        }),
                        "writing a dataset",
                    )
                })?;
            }
            bytes += logical;
            if m.dtype.is_variable() {
                pb.inc_length(logical);
            }
            pb.inc(logical);
            Ok(())
        })?;
        self.bytes += bytes;
        Ok(())
    }
}

/// Runs `produce(0..n)` on other threads (in parallel on rayon's pool, or
/// in order one item ahead) while `consume` takes the results on this
/// thread, which is where the HDF5 calls are made. The first error stops
/// both sides.
fn pipelined<T, P, C>(n: usize, parallel: bool, produce: P, mut consume: C) -> Result<()>
where
    T: Send,
    P: Fn(usize) -> Result<Option<T>> + Sync,
    C: FnMut(T) -> Result<()>,
{
    if n == 0 {
        return Ok(());
    }
    let cap = if parallel {
        2 * rayon::current_num_threads()
    } else {
        1
    };
    // Ctrl-C from the Python side sets the calling thread's cancel flag;
    // the producers run elsewhere, so they carry it along.
    let cancel = h5lake_engine::cancel::current();
    std::thread::scope(|s| {
        let (tx, rx) = std::sync::mpsc::sync_channel::<Result<T>>(cap);
        let produce = &produce;
        let cancel = &cancel;
        s.spawn(move || {
            let send = |tx: &mut std::sync::mpsc::SyncSender<Result<T>>,
                        i: usize|
             -> std::result::Result<(), ()> {
                let item = if h5lake_engine::cancel::is_set(cancel) {
                    Err(h5lake_engine::EngineError::Interrupted.into())
                } else {
                    produce(i)
                };
                match item {
                    Ok(None) => Ok(()),
                    Ok(Some(t)) => tx.send(Ok(t)).map_err(|_| ()),
                    Err(e) => {
                        let _ = tx.send(Err(e));
                        Err(())
                    }
                }
            };
            if parallel {
                let _ = (0..n).into_par_iter().try_for_each_with(tx, send);
            } else {
                let mut tx = tx;
                for i in 0..n {
                    if send(&mut tx, i).is_err() {
                        break;
                    }
                }
            }
        });
        // Returning (early on error) drops `rx`, which makes the producer's
        // next send fail and stops it before the scope joins it.
        for item in rx {
            consume(item?)?;
        }
        Ok(())
    })
}

/// Element bytes ready for `H5Dwrite`/`H5Awrite`/`H5Pset_fill_value`, in
/// the memory type of the store's elements ([`types::memory_type`]).
enum Encoded {
    Fixed(Vec<u8>),
    Variable(MemBuf),
}

impl Encoded {
    fn with_ptr<T>(&self, f: impl FnOnce(*const c_void) -> T) -> T {
        match self {
            Encoded::Fixed(b) => f(b.as_ptr().cast()),
            Encoded::Variable(m) => f(m.bytes.as_ptr().cast()),
        }
    }
}

/// Encodes JSON values (one per element) for a dataset or attribute of
/// type `dt` (`refs` makes object references).
fn encode_values(dt: &Datatype, values: &[&Value], refs: &mut RefConv) -> Step<Encoded> {
    if converts(dt) {
        let elems = values
            .iter()
            .map(|v| {
                if dt.is_variable() {
                    h5lake_types::vlen_element(dt, v)
                } else {
                    json_to_element(dt, v)
                }
            })
            .collect::<std::result::Result<Vec<_>, _>>()
            .map_err(Hdf5Error::from)?;
        return Ok(Encoded::Variable(to_memory(dt, &elems, refs)?));
    }
    let mut out = Vec::with_capacity(values.len() * dt.fixed_size().unwrap_or(0));
    for v in values {
        encode_elem(dt, v, &mut out).map_err(Fail::Skip)?;
    }
    Ok(Encoded::Fixed(out))
}

/// One fixed-size element from its HSDS JSON value (packed, as h5lake
/// stores it). Strings and opaque bytes may be text or `{"base64": ...}`.
fn encode_elem(dt: &Datatype, v: &Value, out: &mut Vec<u8>) -> std::result::Result<(), String> {
    match dt {
        Datatype::String {
            length: Some(n),
            pad,
            ..
        } => {
            let b = h5lake_types::bytes_of(v).ok_or_else(|| format!("{v} is not a string"))?;
            if b.len() > *n {
                return Err(format!(
                    "a string of {} bytes does not fit a {n}-byte string type",
                    b.len()
                ));
            }
            out.extend_from_slice(&b);
            let padding = if *pad == StrPad::SpacePad { b' ' } else { 0 };
            out.resize(out.len() + n - b.len(), padding);
        }
        Datatype::Opaque { size, .. } => {
            let b = match v {
                Value::Array(_) => {
                    let mut flat = Vec::new();
                    flatten_depth(v, usize::MAX, &mut flat);
                    flat.iter()
                        .map(|x| x.as_u64().filter(|&x| x < 256).map(|x| x as u8))
                        .collect::<Option<Vec<u8>>>()
                        .ok_or_else(|| format!("{v} is not a list of bytes"))?
                }
                other => h5lake_types::bytes_of(other)
                    .ok_or_else(|| format!("{v} is not opaque bytes"))?,
            };
            if b.len() != *size {
                return Err(format!("{} bytes for a {size}-byte opaque type", b.len()));
            }
            out.extend_from_slice(&b);
        }
        Datatype::Compound { fields, .. } => match v {
            Value::Array(items) if items.len() == fields.len() => {
                for (f, item) in fields.iter().zip(items) {
                    encode_elem(&f.dtype, item, out)?;
                }
            }
            Value::Object(m) => {
                for f in fields {
                    let item = m
                        .get(&f.name)
                        .ok_or_else(|| format!("no value for the member {:?}", f.name))?;
                    encode_elem(&f.dtype, item, out)?;
                }
            }
            other => return Err(format!("{other} is not a compound value")),
        },
        Datatype::Array { base, dims } => {
            let n: u64 = dims.iter().product();
            let mut flat = Vec::new();
            flatten_depth(v, dims.len(), &mut flat);
            if flat.len() as u64 != n {
                return Err(format!("{v} does not have the array type's {n} elements"));
            }
            for item in flat {
                encode_elem(base, item, out)?;
            }
        }
        _ => out.extend(json_to_element(dt, v).map_err(|e| e.to_string())?),
    }
    Ok(())
}

/// The values of `v` at `depth` levels of list nesting (a value that is not
/// a list where one is expected counts as one element).
fn flatten_depth<'v>(v: &'v Value, depth: usize, out: &mut Vec<&'v Value>) {
    match v {
        Value::Array(items) if depth > 0 => {
            for x in items {
                flatten_depth(x, depth - 1, out);
            }
        }
        other => out.push(other),
    }
}

/// The dataset's document with a committed type (`"t-…"`) replaced by the
/// type it names, so that the engine can parse it.
fn resolved_doc(dom: &Domain, doc: &Value) -> Value {
    match doc.get("type").and_then(Value::as_str) {
        Some(t) if t.starts_with("t-") => {
            let mut d = doc.clone();
            if let Ok(tdoc) = dom.get_doc(t) {
                if let Some(tt) = tdoc.get("type") {
                    d["type"] = tt.clone();
                }
            }
            d
        }
        _ => doc.clone(),
    }
}

fn committed_dtype(doc: &Value) -> Step<Datatype> {
    let t = doc
        .get("type")
        .ok_or_else(|| Fail::Skip("committed datatype without a type".into()))?;
    Ok(Datatype::from_json(t).map_err(Hdf5Error::from)?)
}

/// Whether a document asks for tracked creation order (h5py's
/// `track_order`).
fn tracks_order(doc: &Value) -> bool {
    let Some(cp) = doc.get("creationProperties") else {
        return false;
    };
    ["CreateOrder", "track_order"]
        .iter()
        .any(|k| match cp.get(*k) {
            Some(Value::Bool(b)) => *b,
            Some(Value::Number(n)) => n.as_i64().is_some_and(|i| i != 0),
            _ => false,
        })
}

fn set_creation_order(plist: hid_t, links: bool) -> Result<()> {
    let flags = h5p::H5P_CRT_ORDER_TRACKED | h5p::H5P_CRT_ORDER_INDEXED;
    if links {
        check(
            lib(|| unsafe { h5p::H5Pset_link_creation_order(plist, flags) }),
            "tracking link creation order",
        )?;
    }
    check(
        lib(|| unsafe { h5p::H5Pset_attr_creation_order(plist, flags) }),
        "tracking attribute creation order",
    )?;
    Ok(())
}

/// A link creation property list with UTF-8 names (as h5py makes them).
fn link_plist() -> Result<Hid> {
    let lcpl = plist(h5p::H5P_CLS_LINK_CREATE)?;
    check(
        lib(|| unsafe { h5p::H5Pset_char_encoding(lcpl.id(), h5t::H5T_cset_t::H5T_CSET_UTF8) }),
        "setting the link name encoding",
    )?;
    Ok(lcpl)
}

/// The dataspace of a shape, and the number of list levels of its values.
fn dataspace(shape: &Shape) -> Result<(Hid, usize)> {
    let what = "creating a dataspace";
    Ok(match shape {
        Shape::Null => (
            check_id(
                lib(|| unsafe { h5s::H5Screate(h5s::H5S_class_t::H5S_NULL) }),
                what,
            )?,
            0,
        ),
        Shape::Simple { dims, .. } if !dims.is_empty() => {
            let max: Vec<hsize_t> = shape
                .maxdims()
                .iter()
                .map(|&m| {
                    if m == UNLIMITED {
                        h5s::H5S_UNLIMITED
                    } else {
                        m
                    }
                })
                .collect();
            (
                check_id(
                    lib(|| unsafe {
                        h5s::H5Screate_simple(dims.len() as i32, dims.as_ptr(), max.as_ptr())
                    }),
                    what,
                )?,
                dims.len(),
            )
        }
        _ => (
            check_id(
                lib(|| unsafe { h5s::H5Screate(h5s::H5S_class_t::H5S_SCALAR) }),
                what,
            )?,
            0,
        ),
    })
}

/// A whole chunk of the fill value.
fn fill_chunk(m: &DatasetMeta) -> Vec<u8> {
    let n = m.chunk.iter().product::<u64>() as usize;
    if m.fill.iter().all(|&b| b == 0) {
        vec![0; n * m.fill.len()]
    } else {
        m.fill.repeat(n)
    }
}

/// Copies a C-order box of shape `count` into the corner of a C-order
/// chunk of shape `chunk`.
fn place_box(dst: &mut [u8], chunk: &[u64], src: &[u8], count: &[u64], es: usize) {
    let rank = chunk.len();
    if rank == 0 || count.contains(&0) {
        return;
    }
    let row = count[rank - 1] as usize * es;
    let rows: u64 = count[..rank - 1].iter().product();
    let mut idx = vec![0u64; rank - 1];
    for r in 0..rows as usize {
        let mut off = 0u64;
        for d in 0..rank - 1 {
            off = off * chunk[d] + idx[d];
        }
        let off = (off * chunk[rank - 1]) as usize * es;
        dst[off..off + row].copy_from_slice(&src[r * row..(r + 1) * row]);
        for d in (0..rank - 1).rev() {
            idx[d] += 1;
            if idx[d] < count[d] {
                break;
            }
            idx[d] = 0;
        }
    }
}

/// Every coordinate of a grid, C order.
fn odometer(grid: &[u64]) -> Vec<Vec<u64>> {
    if grid.contains(&0) {
        return Vec::new();
    }
    let total: u64 = grid.iter().product();
    let mut out = Vec::with_capacity(total as usize);
    let mut idx = vec![0u64; grid.len()];
    for _ in 0..total {
        out.push(idx.clone());
        for d in (0..grid.len()).rev() {
            idx[d] += 1;
            if idx[d] < grid[d] {
                break;
            }
            idx[d] = 0;
        }
    }
    out
}

/// (start, count) boxes covering `dims` in C order, each at most `budget`
/// bytes unless one element row of the innermost split axis is larger.
fn slabs(dims: &[u64], es: u64, budget: u64) -> Vec<(Vec<u64>, Vec<u64>)> {
    let mut block = dims.to_vec();
    for axis in 0..dims.len() {
        let inner = block[axis + 1..].iter().product::<u64>() * es;
        block[axis] = (budget / inner.max(1)).clamp(1, dims[axis].max(1));
        if inner <= budget {
            break;
        }
    }
    let counts: Vec<u64> = dims
        .iter()
        .zip(&block)
        .map(|(d, b)| d.div_ceil(*b))
        .collect();
    odometer(&counts)
        .into_iter()
        .map(|corner| {
            let start: Vec<u64> = corner.iter().zip(&block).map(|(i, b)| i * b).collect();
            let count = start
                .iter()
                .zip(&block)
                .zip(dims)
                .map(|((s, b), d)| (*b).min(d - s))
                .collect();
            (start, count)
        })
        .collect()
}

fn parse_chunk_name(name: &str, rank: usize) -> Option<Vec<u64>> {
    let v: Option<Vec<u64>> = name.split('_').map(|p| p.parse().ok()).collect();
    v.filter(|v| v.len() == rank)
}

fn join(parent: &str, name: &str) -> String {
    if parent == "/" {
        format!("/{name}")
    } else {
        format!("{parent}/{name}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slabs_cover_the_extent() {
        let s = slabs(&[10, 4], 8, 100);
        // 100 bytes hold 3 rows of 32 bytes.
        assert_eq!(s.len(), 4);
        assert_eq!(s[0], (vec![0, 0], vec![3, 4]));
        assert_eq!(s[3], (vec![9, 0], vec![1, 4]));
        let s = slabs(&[2, 100], 8, 100);
        assert_eq!(s[0], (vec![0, 0], vec![1, 12]));
        let total: u64 = s.iter().map(|(_, c)| c.iter().product::<u64>()).sum();
        assert_eq!(total, 200);
    }

    #[test]
    fn boxes_land_in_the_chunk_corner() {
        let mut dst = vec![0u8; 12];
        place_box(&mut dst, &[3, 4], &[1, 2, 3, 4], &[2, 2], 1);
        assert_eq!(dst, vec![1, 2, 0, 0, 3, 4, 0, 0, 0, 0, 0, 0]);
    }
}
