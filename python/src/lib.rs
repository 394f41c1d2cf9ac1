//! `h5lake._core`: thin Python bindings over the engine.
//!
//! One `Raw*` class per engine object, JSON text for documents, whole
//! selections per call, and the GIL released around every blocking call.
//! Engine errors become Python exceptions in exactly one place
//! ([`to_py_err`]).

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, RwLock};

/// Data calls at least this large are stopped by Ctrl-C while they run (see
/// [`interruptible`]); smaller ones finish too fast to need a helper thread,
/// and a Ctrl-C during one is raised as soon as it returns (see
/// [`RawFile::run_interruptible`]).
const INTERRUPTIBLE_BYTES: usize = 16 << 20;

use h5lake_engine::{Domain, DomainOptions, Durability, EngineError, OpenMode};

#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;
use h5lake_hdf5::Hdf5Error;
use h5lake_types::{DimSel, Selection};
use pyo3::exceptions::{
    PyFileExistsError, PyFileNotFoundError, PyKeyError, PyKeyboardInterrupt, PyOSError,
    PyPermissionError, PyTypeError, PyValueError,
};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyList, PyTuple};
use serde_json::Value;

fn to_py_err(e: EngineError) -> PyErr {
    use h5lake_store::StoreError;
    use h5lake_types::TypeError as TE;
    let msg = e.to_string();
    match e {
        EngineError::NotFound(_) => PyKeyError::new_err(msg),
        EngineError::LinkRefused(_) => PyPermissionError::new_err(msg),
        EngineError::Interrupted => PyKeyboardInterrupt::new_err(msg),
        EngineError::StoreNotFound(_) => PyFileNotFoundError::new_err((2, msg)),
        EngineError::AlreadyExists(_) | EngineError::Invalid(_) | EngineError::TooLarge(_) => {
            PyValueError::new_err(msg)
        }
        EngineError::StoreExists(_) => PyFileExistsError::new_err((17, msg)),
        EngineError::WrongType(_) => PyTypeError::new_err(msg),
        EngineError::Types(TE::InvalidType(_) | TE::UnsupportedType(_)) => {
            PyTypeError::new_err(msg)
        }
        EngineError::Types(_) => PyValueError::new_err(msg),
        EngineError::Store(StoreError::NotFound(_)) => PyFileNotFoundError::new_err((2, msg)),
        EngineError::Store(StoreError::PermissionDenied(_)) => PyPermissionError::new_err(msg),
        EngineError::Store(StoreError::InvalidKey { .. }) => PyValueError::new_err(msg),
        _ => PyOSError::new_err(msg),
    }
}

fn parse_json(s: &str, what: &str) -> PyResult<Value> {
    serde_json::from_str(s).map_err(|e| PyValueError::new_err(format!("invalid {what} JSON: {e}")))
}

/// A contiguous buffer of any numpy dtype, seen as bytes.
struct RawBuffer {
    view: Box<pyo3::ffi::Py_buffer>,
}

impl RawBuffer {
    fn get(obj: &Bound<'_, PyAny>, writable: bool) -> PyResult<Self> {
        let mut view = Box::new(unsafe { std::mem::zeroed::<pyo3::ffi::Py_buffer>() });
        let flags = pyo3::ffi::PyBUF_C_CONTIGUOUS
            | if writable {
                pyo3::ffi::PyBUF_WRITABLE
            } else {
                0
            };
        // SAFETY: `view` is a valid, zeroed Py_buffer that lives in a Box.
        let rc = unsafe { pyo3::ffi::PyObject_GetBuffer(obj.as_ptr(), &mut *view, flags) };
        if rc != 0 {
            return Err(PyErr::take(obj.py()).unwrap_or_else(|| {
                PyTypeError::new_err("expected a C-contiguous buffer (numpy array)")
            }));
        }
        Ok(RawBuffer { view })
    }

    fn len(&self) -> usize {
        self.view.len as usize
    }

    fn ptr(&self) -> *mut u8 {
        self.view.buf.cast()
    }
}

impl Drop for RawBuffer {
    fn drop(&mut self) {
        // SAFETY: the view was filled by PyObject_GetBuffer; releasing needs the GIL.
        Python::with_gil(|_| unsafe { pyo3::ffi::PyBuffer_Release(&mut *self.view) });
    }
}

fn extract_selection(sel: &Bound<'_, PyAny>) -> PyResult<Selection> {
    let mut dims = Vec::new();
    for item in sel.try_iter()? {
        let item = item?;
        if let Ok(t) = item.downcast::<PyTuple>() {
            let (start, count, step): (u64, u64, u64) = t.extract()?;
            dims.push(DimSel::Slice { start, count, step });
        } else {
            let v: Vec<i64> = if let Ok(b) = pyo3::buffer::PyBuffer::<i64>::get(&item) {
                b.to_vec(item.py())?
            } else {
                item.extract()?
            };
            let v = v
                .into_iter()
                .map(|i| {
                    u64::try_from(i)
                        .map_err(|_| PyValueError::new_err("negative index in selection"))
                })
                .collect::<PyResult<Vec<_>>>()?;
            dims.push(DimSel::Indices(v));
        }
    }
    Ok(Selection::Orthogonal(dims))
}

fn extract_points(points: &Bound<'_, PyAny>, rank: usize) -> PyResult<Selection> {
    let b = pyo3::buffer::PyBuffer::<i64>::get(points)?;
    let v = b.to_vec(points.py())?;
    let coords = v
        .into_iter()
        .map(|i| {
            u64::try_from(i)
                .map_err(|_| PyValueError::new_err("negative coordinate in point selection"))
        })
        .collect::<PyResult<Vec<_>>>()?;
    Ok(Selection::Points { rank, coords })
}

/// Bytes a variable-length read moves, for [`RawFile::run_interruptible`]:
/// at least a heap reference (16 bytes, as HDF5 stores them) per element;
/// the values themselves are not known before the read.
fn vlen_read_bytes(sel: &Selection) -> usize {
    usize::try_from(sel.num_elements())
        .unwrap_or(usize::MAX)
        .saturating_mul(16)
}

/// Bytes a variable-length write moves: its values and a heap reference each.
fn vlen_write_bytes(values: &[Vec<u8>]) -> usize {
    values.iter().map(|v| v.len().saturating_add(16)).sum()
}

/// (chunk coordinates, stored bytes, byte offset in an HDF5 file opened in
/// place).
type StoredChunk = (Vec<u64>, u64, Option<u64>);

/// An open h5lake store (an HSDS domain).
#[pyclass(module = "h5lake._core", frozen)]
struct RawFile {
    dom: RwLock<Option<Arc<Domain>>>,
    path: String,
    readonly: bool,
    /// What opening an HDF5 file in place left out.
    skipped: Vec<h5lake_hdf5::Skipped>,
    /// The HDF5 file (canonical path, as its linked datasets name it) this
    /// opened in place; its datasets' chunks are that file's own.
    in_place: Option<String>,
}

impl RawFile {
    /// Whether dataset `dset_id` reads the chunks of the HDF5 file this
    /// opened in place (so that HDF5's chunk queries answer with them).
    fn is_in_place(&self, d: &Domain, dset_id: &str) -> h5lake_engine::Result<bool> {
        let Some(file) = &self.in_place else {
            return Ok(false);
        };
        Ok(d.dataset(dset_id)?
            .link
            .as_ref()
            .is_some_and(|l| &l.file_uri == file))
    }

    /// The chunks of a dataset whose values are an HDF5 file's chunks (a
    /// file opened in place, or a store's dataset made by `load --link`),
    /// as HDF5's chunk queries give them for that file: (coordinates, byte
    /// offset in the file, size). `None` for a dataset holding chunks of its
    /// own or linked otherwise.
    ///
    /// # Errors
    /// A linked dataset written to since it was linked: its values are then
    /// the file's chunks and the store's (hyper-chunk sized) ones, which no
    /// one list of HDF5's chunks describes.
    fn hdf5_source_chunks(
        &self,
        d: &Domain,
        dset_id: &str,
    ) -> h5lake_engine::Result<Option<Vec<h5lake_engine::linked::SourceChunk>>> {
        let Some(chunks) = d.linked_source_chunks(dset_id)? else {
            return Ok(None);
        };
        if !self.is_in_place(d, dset_id)? && !d.stored_chunks(dset_id)?.is_empty() {
            return Err(h5lake_engine::EngineError::WrongType(
                "HDF5's chunk queries and direct chunk reads are not answered for this dataset: \
                 it is linked to an HDF5 file's chunks and was written to since, so its values \
                 are partly in the store (read the data, or `h5lake get` it to an HDF5 file)"
                    .into(),
            ));
        }
        Ok(Some(chunks))
    }

    /// An HDF5 file opened in place, read-only (h5py's default mode). h5lake
    /// writes stores, not HDF5 files: every writing mode is refused rather
    /// than turning the file into something else.
    fn open_hdf5_file(
        py: Python<'_>,
        path: PathBuf,
        mode: OpenMode,
        chunk_cache_bytes: usize,
    ) -> PyResult<Self> {
        if mode != OpenMode::Read {
            return Err(PyOSError::new_err(format!(
                "{} is an HDF5 file: h5lake opens HDF5 files read-only (mode 'r'); to change it, \
                 bring it into a store with `h5lake load {0} STORE` and open the store",
                path.display()
            )));
        }
        let (dom, report) = interruptible(
            py,
            || h5lake_hdf5::open_in_place(&path, chunk_cache_bytes),
            hdf5_err,
        )?;
        let in_place = path
            .canonicalize()
            .ok()
            .map(|p| p.to_string_lossy().into_owned());
        Ok(RawFile {
            dom: RwLock::new(Some(Arc::new(dom))),
            path: path.to_string_lossy().into_owned(),
            readonly: true,
            skipped: report.skipped,
            in_place,
        })
    }

    fn dom(&self) -> PyResult<Arc<Domain>> {
        self.dom
            .read()
            .expect("lock poisoned")
            .clone()
            .ok_or_else(|| {
                PyValueError::new_err("Not a location (invalid file ID): the file is closed")
            })
    }

    fn run<T: Send>(
        &self,
        py: Python<'_>,
        f: impl FnOnce(&Domain) -> h5lake_engine::Result<T> + Send,
    ) -> PyResult<T> {
        let dom = self.dom()?;
        py.allow_threads(|| f(&dom)).map_err(to_py_err)
    }

    /// A point selection over the dataset's rank.
    fn points_selection(
        &self,
        py: Python<'_>,
        dset_id: &str,
        points: &Bound<'_, PyAny>,
    ) -> PyResult<Selection> {
        let rank = self.run(py, |d| d.dataset(dset_id))?.dims.len();
        extract_points(points, rank)
    }

    fn read_into(
        &self,
        py: Python<'_>,
        dset_id: &str,
        sel: &Selection,
        out: &Bound<'_, PyAny>,
        fields: Option<&[String]>,
    ) -> PyResult<()> {
        let buf = RawBuffer::get(out, true)?;
        // SAFETY: the buffer stays exported (and so alive and pinned) until
        // `buf` drops after the call.
        let slice = unsafe { std::slice::from_raw_parts_mut(buf.ptr(), buf.len()) };
        self.run_interruptible(py, slice.len(), |d| {
            d.read_fields(dset_id, sel, fields, slice)
        })
    }

    /// Writes `data` (whole elements) to `sel`: only members `fields` of
    /// each element when named.
    fn write_from(
        &self,
        py: Python<'_>,
        dset_id: &str,
        sel: &Selection,
        data: &Bound<'_, PyAny>,
        fields: Option<&[String]>,
    ) -> PyResult<()> {
        let buf = RawBuffer::get(data, false)?;
        // SAFETY: as in read_into; the data is only read.
        let slice = unsafe { std::slice::from_raw_parts(buf.ptr().cast_const(), buf.len()) };
        self.run_interruptible(py, slice.len(), |d| match fields {
            Some(names) => d.write_fields(dset_id, sel, names, slice),
            None => d.write(dset_id, sel, slice),
        })
    }

    /// Like [`RawFile::run`], for data calls: a Ctrl-C that arrives at any
    /// moment of the call ends it with KeyboardInterrupt. A call moving
    /// `nbytes` or more is stopped while it runs (see [`interruptible`]); a
    /// smaller one runs on this thread without a helper, and a signal that
    /// came before or during it is raised by the call itself rather than
    /// left pending for whatever Python code runs next. A check costs next
    /// to nothing when no signal is pending (an atomic load).
    fn run_interruptible<T: Send>(
        &self,
        py: Python<'_>,
        nbytes: usize,
        f: impl FnOnce(&Domain) -> h5lake_engine::Result<T> + Send,
    ) -> PyResult<T> {
        let dom = self.dom()?;
        if nbytes >= INTERRUPTIBLE_BYTES {
            return interruptible(py, || f(&dom), to_py_err);
        }
        // Came before the call: do not start it.
        py.check_signals()?;
        let result = py.allow_threads(|| f(&dom));
        // Came during it: the signal wins over the call's own outcome, as
        // in `interruptible`.
        py.check_signals()?;
        result.map_err(to_py_err)
    }
}

/// Runs `f` without the GIL so that Ctrl-C can stop it: the work runs on a
/// helper thread while this thread (which, if it is Python's main thread,
/// is the one that sees signals) checks for them every few milliseconds and
/// cancels the call through [`h5lake_engine::cancel`].
///
/// A signal is looked for before the work starts, on every tick while it
/// runs, and once more after it ends (it may have come after the last tick,
/// or while the worker was finishing); whichever look takes it, the call
/// raises it, even if the work completed. `check_signals` consumes the
/// signal, so a taken signal must never be dropped: nobody else would raise
/// it.
fn interruptible<T: Send, E: Send>(
    py: Python<'_>,
    f: impl FnOnce() -> Result<T, E> + Send,
    to_err: impl FnOnce(E) -> PyErr,
) -> PyResult<T> {
    // A Ctrl-C that came before the call (while its arguments were
    // converted, say): do not start work that would only be cancelled.
    py.check_signals()?;
    let flag = Arc::new(AtomicBool::new(false));
    let mut signal: Option<PyErr> = None;
    let result = py.allow_threads(|| {
        std::thread::scope(|scope| {
            // The worker says when it is done, so the call returns at once
            // rather than at the next tick of the signal check.
            let (done, finished) = std::sync::mpsc::channel::<()>();
            let cancel = flag.clone();
            let worker = scope.spawn(move || {
                let out = h5lake_engine::cancel::with_cancel(cancel, f);
                let _ = done.send(());
                out
            });
            while let Err(std::sync::mpsc::RecvTimeoutError::Timeout) =
                finished.recv_timeout(std::time::Duration::from_millis(20))
            {
                if signal.is_none() {
                    if let Err(e) = Python::with_gil(|py| py.check_signals()) {
                        flag.store(true, Ordering::Relaxed);
                        signal = Some(e);
                    }
                }
            }
            worker.join().expect("h5lake call panicked")
        })
    });
    // The last look: a signal that came after the last tick (or before the
    // first one, when the work took less than a tick) ends the call here
    // rather than at some later point of the caller's code.
    if signal.is_none() {
        signal = py.check_signals().err();
    }
    match (result, signal) {
        (_, Some(e)) => Err(e),
        (r, None) => r.map_err(to_err),
    }
}

/// Errors of loading and exporting HDF5 files, as an h5py user expects them.
fn hdf5_err(e: Hdf5Error) -> PyErr {
    let msg = e.to_string();
    match e {
        Hdf5Error::Engine(e) => to_py_err(e),
        Hdf5Error::SourceNotFound(_) => PyFileNotFoundError::new_err((2, msg)),
        Hdf5Error::DestinationExists(_) => PyFileExistsError::new_err((17, msg)),
        _ => PyOSError::new_err(msg),
    }
}

/// Loads an HDF5 file into a new h5lake store; returns the report as JSON.
#[pyfunction]
#[pyo3(signature = (src, dest, link=false, hyperchunk=None, force=false, progress=false, keep_chunks=false, columnar=false))]
#[allow(clippy::too_many_arguments)]
fn load_hdf5(
    py: Python<'_>,
    src: PathBuf,
    dest: PathBuf,
    link: bool,
    hyperchunk: Option<u64>,
    force: bool,
    progress: bool,
    keep_chunks: bool,
    columnar: bool,
) -> PyResult<String> {
    let opts = h5lake_hdf5::LoadOptions {
        link,
        hyperchunk,
        keep_chunks,
        force,
        progress,
        columnar,
        keep_undecodable: false,
    };
    let r = interruptible(py, || h5lake_hdf5::load(&src, &dest, &opts), hdf5_err)?;
    Ok(serde_json::json!({
        "groups": r.groups, "datasets": r.datasets, "datatypes": r.datatypes,
        "attributes": r.attributes, "links": r.links, "linked_datasets": r.linked_datasets,
        "chunks": r.chunks, "bytes": r.bytes, "skipped": skipped_texts(&r.skipped), "skipped_objects": skipped_json(&r.skipped),
        "notes": r.notes,
    })
    .to_string())
}

/// Why a Parquet load failed: the input (a column type, a schema
/// mismatch, a bad file: nothing written) or the store.
enum ParquetLoadError {
    Input(h5lake_columnar::ColumnarError),
    Store(EngineError),
}

impl From<EngineError> for ParquetLoadError {
    fn from(e: EngineError) -> Self {
        ParquetLoadError::Store(e)
    }
}

impl From<h5lake_columnar::ColumnarError> for ParquetLoadError {
    fn from(e: h5lake_columnar::ColumnarError) -> Self {
        ParquetLoadError::Input(e)
    }
}

fn parquet_err(e: ParquetLoadError) -> PyErr {
    match e {
        ParquetLoadError::Input(h5lake_columnar::ColumnarError::Unsupported(m)) => {
            PyValueError::new_err(m)
        }
        ParquetLoadError::Input(e) => PyOSError::new_err(e.to_string()),
        ParquetLoadError::Store(e) => to_py_err(e),
    }
}

/// Makes the groups `segments` (a path below the root, in a new store)
/// and returns the id of the last (the root's without segments).
fn make_groups(dom: &Domain, segments: &[String]) -> Result<String, EngineError> {
    let mut parent = dom.root_id().to_string();
    for seg in segments {
        let g = dom.create_group(serde_json::json!({}))?;
        dom.link_create(
            &parent,
            seg,
            serde_json::json!({"class": "H5L_TYPE_HARD", "id": g}),
        )?;
        parent = g;
    }
    Ok(parent)
}

/// The path segments of a dataset name.
fn name_segments(name: &str) -> PyResult<Vec<String>> {
    let segments: Vec<String> = name
        .split('/')
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect();
    if segments.is_empty() {
        return Err(PyValueError::new_err("the dataset needs a name"));
    }
    Ok(segments)
}

/// Links Parquet files (local paths or `s3://` URLs; one schema, in the
/// order given) into a new store at `dest` as one 1-D compound dataset at
/// `name` whose rows are theirs, read where they are: nothing is copied
/// (`chunk_rows`: rows per chunk, default the first row group's). Every
/// footer is read and every column mapped before anything is written.
/// Returns the report as JSON.
#[pyfunction]
#[pyo3(signature = (srcs, dest, name, chunk_rows=None, force=false))]
fn link_parquet(
    py: Python<'_>,
    srcs: Vec<String>,
    dest: String,
    name: String,
    chunk_rows: Option<u64>,
    force: bool,
) -> PyResult<String> {
    let segments = name_segments(&name)?;
    let mode = if force {
        OpenMode::Truncate
    } else {
        OpenMode::CreateExclusive
    };
    // Every footer is read (under the policy the new store will have)
    // before the store is made, so that a bad input leaves nothing behind.
    let opts = DomainOptions::default();
    let policy = h5lake_engine::LinkPolicy::for_store_at(&dest, opts.allow_local_links);
    let plan = py
        .allow_threads(|| h5lake_engine::parquet_link::plan_parquet_link(&srcs, policy))
        .map_err(to_py_err)?;
    let dom = py
        .allow_threads(|| Domain::open_url_with(&dest, mode, &opts))
        .map_err(to_py_err)?;
    let result = py.allow_threads(|| -> Result<(), EngineError> {
        let id = dom.link_parquet_dataset(&plan, chunk_rows)?;
        let parent = make_groups(&dom, &segments[..segments.len() - 1])?;
        dom.link_create(
            &parent,
            &segments[segments.len() - 1],
            serde_json::json!({"class": "H5L_TYPE_HARD", "id": id}),
        )
    });
    if let Err(e) = result {
        let _ = py.allow_threads(|| dom.delete_domain());
        return Err(to_py_err(e));
    }
    Ok(serde_json::json!({
        "datasets": 1, "rows": plan.rows, "files": srcs.len(), "linked_datasets": 1,
        "arrow_types": Value::Object(plan.table.arrow_types().clone()),
        "skipped": [], "skipped_objects": [],
    })
    .to_string())
}

/// Loads Parquet files (one schema, in the order given) into a new store at
/// `dest` as one 1-D columnar compound dataset at `name` (`filters_json`:
/// its compression; `chunk_rows`: rows per chunk, default about 16 MiB of
/// rows). Every column is mapped before anything is written; a load that
/// fails later removes the store it made. Returns the report as JSON.
#[pyfunction]
#[pyo3(signature = (srcs, dest, name, filters_json="[]", chunk_rows=None, force=false))]
fn load_parquet(
    py: Python<'_>,
    srcs: Vec<PathBuf>,
    dest: String,
    name: String,
    filters_json: &str,
    chunk_rows: Option<u64>,
    force: bool,
) -> PyResult<String> {
    let filters = parse_json(filters_json, "filters")?;
    let input = py
        .allow_threads(|| h5lake_columnar::ParquetInput::open(&srcs))
        .map_err(|e| parquet_err(e.into()))?;
    let segments = name_segments(&name)?;
    let mode = if force {
        OpenMode::Truncate
    } else {
        OpenMode::CreateExclusive
    };
    let dom = py
        .allow_threads(|| Domain::open_url_with(&dest, mode, &DomainOptions::default()))
        .map_err(to_py_err)?;
    let rows = input.num_rows();
    let result = interruptible(
        py,
        || -> Result<u64, ParquetLoadError> {
            let dtype = input.dtype();
            let row_bytes = dtype.fixed_size().unwrap_or(64).max(1) as u64;
            let chunk = chunk_rows
                .unwrap_or((16 << 20) / row_bytes)
                .clamp(1, rows.max(1));
            let mut cprops = serde_json::json!({
                "layout": {"class": "H5D_CHUNKED", "dims": [chunk]},
                "h5lake": {"chunkFormat": "parquet"},
            });
            if filters.as_array().is_some_and(|f| !f.is_empty()) {
                cprops["filters"] = filters.clone();
            }
            let id = dom.create_dataset(
                dtype.to_json(),
                serde_json::json!({"class": "H5S_SIMPLE", "dims": [rows], "maxdims": ["H5S_UNLIMITED"]}),
                cprops,
            )?;
            dom.note_arrow_types(&id, input.arrow_types())?;
            let parent = make_groups(&dom, &segments[..segments.len() - 1])?;
            // Whole chunks at a time, nulls kept (they read as the fill
            // value through HDF5-shaped reads, as nulls through to_arrow).
            // An input error stays an input error (ValueError, nothing kept).
            let mut bad_input = None;
            let batches = input.record_batches().map(|b| {
                b.map_err(|e| {
                    let msg = e.to_string();
                    bad_input = Some(e);
                    EngineError::Invalid(msg)
                })
            });
            let written = dom.write_batches(&id, batches, Some(0));
            if let Some(e) = bad_input {
                return Err(ParquetLoadError::Input(e));
            }
            let at = written?;
            dom.link_create(
                &parent,
                &segments[segments.len() - 1],
                serde_json::json!({"class": "H5L_TYPE_HARD", "id": id}),
            )?;
            Ok(at)
        },
        parquet_err,
    );
    match result {
        Ok(written) => Ok(serde_json::json!({
            "datasets": 1, "rows": written, "files": srcs.len(),
            "arrow_types": serde_json::Value::Object(input.arrow_types().clone()),
            "skipped": [], "skipped_objects": [],
        })
        .to_string()),
        Err(e) => {
            // nothing half-made: the store this load made goes
            let _ = py.allow_threads(|| dom.delete_domain());
            Err(e)
        }
    }
}

fn skipped_texts(items: &[h5lake_hdf5::Skipped]) -> Vec<String> {
    items.iter().map(ToString::to_string).collect()
}

/// What a conversion left out, as `{"path", "part", "reason", "text"}`
/// objects (`part` is null when the whole object was left out).
fn skipped_json(items: &[h5lake_hdf5::Skipped]) -> Value {
    Value::Array(
        items
            .iter()
            .map(|s| {
                serde_json::json!({"path": s.path, "part": s.part, "reason": s.reason,
                                   "text": s.to_string()})
            })
            .collect(),
    )
}

/// Writes an h5lake store out as an HDF5 file; returns the report as JSON.
#[pyfunction]
#[pyo3(signature = (src, dest, force=false, progress=false, allow_local_links=false))]
fn get_hdf5(
    py: Python<'_>,
    src: PathBuf,
    dest: PathBuf,
    force: bool,
    progress: bool,
    allow_local_links: bool,
) -> PyResult<String> {
    let opts = h5lake_hdf5::GetOptions {
        force,
        progress,
        allow_local_links,
    };
    let r = interruptible(py, || h5lake_hdf5::get(&src, &dest, &opts), hdf5_err)?;
    Ok(serde_json::json!({
        "groups": r.groups, "datasets": r.datasets, "datatypes": r.datatypes,
        "attributes": r.attributes, "links": r.links, "chunks": r.chunks,
        "bytes": r.bytes, "skipped": skipped_texts(&r.skipped), "skipped_objects": skipped_json(&r.skipped),
        "notes": r.notes,
    })
    .to_string())
}

/// Applies the server settings named in `opts` (`link_roots`,
/// `link_buckets`: lists; sizes in bytes; times in seconds) to `cfg`.
fn server_options(cfg: &mut h5lake_server::ServerConfig, opts: &Value) -> PyResult<()> {
    let Some(map) = opts.as_object() else {
        return Err(PyValueError::new_err(
            "server options must be a JSON object",
        ));
    };
    let bad = |k: &str| PyValueError::new_err(format!("invalid value for server option {k}"));
    for (k, v) in map {
        let size = || v.as_u64().map(|n| n as usize).ok_or_else(|| bad(k));
        let strings = || -> PyResult<Vec<String>> {
            v.as_array()
                .ok_or_else(|| bad(k))?
                .iter()
                .map(|x| x.as_str().map(str::to_string).ok_or_else(|| bad(k)))
                .collect()
        };
        let seconds = || {
            v.as_f64()
                .filter(|s| s.is_finite() && *s > 0.0)
                .map(std::time::Duration::from_secs_f64)
                .ok_or_else(|| bad(k))
        };
        match k.as_str() {
            "link_roots" => cfg.link_roots = strings()?.into_iter().map(PathBuf::from).collect(),
            "link_buckets" => cfg.link_buckets = strings()?,
            "memory_budget_bytes" => cfg.memory_budget_bytes = size()?,
            "max_json_elements" => cfg.max_json_elements = size()?,
            "max_chunks_per_write" => cfg.max_chunks_per_write = size()?,
            "max_request_bytes" => cfg.max_request_bytes = size()?,
            "max_document_bytes" => cfg.max_document_bytes = size()?,
            "header_timeout" => cfg.header_timeout = seconds()?,
            "idle_timeout" => cfg.idle_timeout = seconds()?,
            "max_connections_per_client" => cfg.max_connections_per_client = size()?,
            "max_connections" => cfg.max_connections = size()?,
            other => {
                return Err(PyValueError::new_err(format!(
                    "unknown server option {other:?}"
                )));
            }
        }
    }
    Ok(())
}

/// Serves the store at `root` over the HSDS REST API until Ctrl-C (or any
/// signal whose Python handler raises). `on_ready(url)` is called once the
/// port is bound. `options_json` holds the operator's settings beyond the
/// common ones (see [`server_options`]).
#[pyfunction]
#[pyo3(signature = (root, host="127.0.0.1".to_string(), port=5101, password_file=None, allow_noauth=false, on_ready=None, options_json="{}"))]
#[allow(clippy::too_many_arguments)]
fn serve(
    py: Python<'_>,
    root: String,
    host: String,
    port: u16,
    password_file: Option<PathBuf>,
    allow_noauth: bool,
    on_ready: Option<PyObject>,
    options_json: &str,
) -> PyResult<()> {
    let mut cfg = h5lake_server::ServerConfig {
        root,
        host,
        port,
        password_file,
        allow_noauth,
        ..Default::default()
    };
    server_options(&mut cfg, &parse_json(options_json, "server options")?)?;
    cfg.hdf5_linker = Some(h5lake_server::Hdf5Linker(Arc::new(|src, dest| {
        let opts = h5lake_hdf5::LoadOptions {
            link: true,
            // (Clients see such a dataset and get an error naming the
            // filter when they read it.)
            keep_undecodable: true,
            ..Default::default()
        };
        let report = h5lake_hdf5::load(src, dest, &opts).map_err(|e| e.to_string())?;
        // Served all the same: what the file holds that h5lake cannot read
        // is named to the operator (clients see those objects missing).
        for s in &report.skipped {
            eprintln!("warning: serving {} without {s}", src.display());
        }
        Ok(())
    })));
    let stop = Arc::new(AtomicBool::new(false));
    let (ready_tx, ready_rx) = std::sync::mpsc::channel();
    let (result, raised) = py.allow_threads(move || {
        let mut raised: Option<PyErr> = None;
        let result = std::thread::scope(|scope| {
            let flag = stop.clone();
            let worker = scope.spawn(move || {
                h5lake_server::run_blocking(cfg, flag, |addr| {
                    let _ = ready_tx.send(addr);
                })
            });
            // This thread keeps Python responsive: it announces the address
            // and turns a pending signal into a graceful stop.
            while !worker.is_finished() {
                std::thread::sleep(std::time::Duration::from_millis(50));
                if raised.is_some() {
                    continue;
                }
                Python::with_gil(|py| {
                    if let (Ok(addr), Some(cb)) = (ready_rx.try_recv(), on_ready.as_ref()) {
                        if let Err(e) = cb.call1(py, (format!("http://{addr}"),)) {
                            raised = Some(e);
                        }
                    }
                    if raised.is_none() {
                        if let Err(e) = py.check_signals() {
                            raised = Some(e);
                        }
                    }
                });
                if raised.is_some() {
                    stop.store(true, Ordering::Relaxed);
                }
            }
            worker.join().expect("the server thread panicked")
        });
        (result, raised)
    });
    match (result, raised) {
        (_, Some(e)) => Err(e),
        (Ok(()), None) => Ok(()),
        (Err(e), None) => Err(PyOSError::new_err(e.to_string())),
    }
}

/// Whether a path is an HDF5 file (by its signature).
#[pyfunction]
fn is_hdf5(path: PathBuf) -> bool {
    h5lake_hdf5::is_hdf5(&path)
}

/// The version of the HDF5 library h5lake reads and writes HDF5 files with.
#[pyfunction]
fn hdf5_version() -> (u32, u32, u32) {
    h5lake_hdf5::hdf5_version()
}

#[pymethods]
impl RawFile {
    #[new]
    #[pyo3(signature = (path, mode, root_creation_props_json = "{}", chunk_cache_bytes = None, allow_local_links = false, durable = false))]
    fn new(
        py: Python<'_>,
        path: PathBuf,
        mode: &str,
        root_creation_props_json: &str,
        chunk_cache_bytes: Option<usize>,
        allow_local_links: bool,
        durable: bool,
    ) -> PyResult<Self> {
        let m = OpenMode::parse(mode).map_err(to_py_err)?;
        let mut opts = DomainOptions {
            root_creation_props: parse_json(root_creation_props_json, "root creation properties")?,
            durability: if durable {
                Durability::EachCall
            } else {
                Durability::AtFlush
            },
            ..DomainOptions::default()
        };
        opts.allow_local_links |= allow_local_links;
        if let Some(n) = chunk_cache_bytes {
            opts.chunk_cache_bytes = n;
        }
        // `s3://bucket/path` URLs, or local paths (kept as paths: a local
        // name need not be UTF-8).
        let url = path.to_str().filter(|p| p.contains("://"));
        if url.is_none() && path.is_file() && h5lake_hdf5::is_hdf5(&path) {
            return Self::open_hdf5_file(py, path, m, opts.chunk_cache_bytes);
        }
        let dom = py
            .allow_threads(|| match url {
                Some(url) => Domain::open_url_with(url, m, &opts),
                None => Domain::open_local_with(&path, m, &opts),
            })
            .map_err(to_py_err)?;
        Ok(RawFile {
            dom: RwLock::new(Some(Arc::new(dom))),
            path: path.to_string_lossy().into_owned(),
            readonly: m == OpenMode::Read,
            skipped: Vec::new(),
            in_place: None,
        })
    }

    /// What opening an HDF5 file in place could not represent (empty for
    /// stores), as `(path, part, reason, sentence)`; `part` is None when
    /// the whole object was left out.
    #[getter]
    fn skipped(&self) -> Vec<(String, Option<String>, String, String)> {
        self.skipped
            .iter()
            .map(|s| {
                (
                    s.path.clone(),
                    s.part.clone(),
                    s.reason.clone(),
                    s.to_string(),
                )
            })
            .collect()
    }

    #[getter]
    fn path(&self) -> &str {
        &self.path
    }

    #[getter]
    fn root_id(&self) -> PyResult<String> {
        Ok(self.dom()?.root_id().to_string())
    }

    #[getter]
    fn readonly(&self) -> bool {
        self.readonly
    }

    #[getter]
    fn closed(&self) -> bool {
        self.dom.read().expect("lock poisoned").is_none()
    }

    /// Writes pending changes and lets the domain go; raises (and stays
    /// closed) if the changes could not be written.
    fn close(&self, py: Python<'_>) -> PyResult<()> {
        let dom = self.dom.write().expect("lock poisoned").take();
        match dom {
            Some(dom) => py.allow_threads(|| dom.close()).map_err(to_py_err),
            None => Ok(()),
        }
    }

    /// Makes every change so far durable (a no-op for `durable=True`
    /// handles, whose changes are durable when each call returns).
    fn flush(&self, py: Python<'_>) -> PyResult<()> {
        let dom = self.dom()?;
        py.allow_threads(|| dom.flush()).map_err(to_py_err)
    }

    /// Whether each change is durable when its call returns.
    #[getter]
    fn durable(&self) -> PyResult<bool> {
        Ok(self.dom()?.durability() == Durability::EachCall)
    }

    /// `(key, size)` of every stored object of the domain.
    fn stored_sizes(&self, py: Python<'_>) -> PyResult<Vec<(String, u64)>> {
        self.run(py, |d| d.stored_sizes())
    }

    fn domain_json(&self, py: Python<'_>) -> PyResult<String> {
        self.run(py, |d| d.domain_doc()).map(|v| v.to_string())
    }

    fn get_doc(&self, py: Python<'_>, obj_id: &str) -> PyResult<String> {
        self.run(py, |d| d.get_doc(obj_id)).map(|v| v.to_string())
    }

    fn check_linked(&self, py: Python<'_>, obj_id: &str) -> PyResult<()> {
        self.run(py, |d| d.check_linked(obj_id))
    }

    /// Whether this store's link policy lets its links lead to `location`
    /// (a store path or URL); PermissionError if not.
    fn check_link_target(&self, location: &str) -> PyResult<()> {
        let dom = self.dom()?;
        dom.link_policy()
            .check(location, None)
            .map(|_| ())
            .map_err(to_py_err)
    }

    #[pyo3(signature = (creation_props_json = "{}"))]
    fn create_group(&self, py: Python<'_>, creation_props_json: &str) -> PyResult<String> {
        let cp = parse_json(creation_props_json, "creation properties")?;
        self.run(py, |d| d.create_group(cp))
    }

    fn create_dataset(
        &self,
        py: Python<'_>,
        type_json: &str,
        shape_json: &str,
        creation_props_json: &str,
    ) -> PyResult<String> {
        let t = parse_json(type_json, "type")?;
        let s = parse_json(shape_json, "shape")?;
        let cp = parse_json(creation_props_json, "creation properties")?;
        self.run(py, |d| d.create_dataset(t, s, cp))
    }

    fn create_datatype(&self, py: Python<'_>, type_json: &str) -> PyResult<String> {
        let t = parse_json(type_json, "type")?;
        self.run(py, |d| d.create_datatype(t))
    }

    fn delete_object(&self, py: Python<'_>, obj_id: &str) -> PyResult<()> {
        self.run(py, |d| d.delete_object(obj_id))
    }

    fn link_create(
        &self,
        py: Python<'_>,
        group_id: &str,
        name: &str,
        link_json: &str,
    ) -> PyResult<()> {
        let l = parse_json(link_json, "link")?;
        self.run(py, |d| d.link_create(group_id, name, l))
    }

    fn link_get(&self, py: Python<'_>, group_id: &str, name: &str) -> PyResult<String> {
        self.run(py, |d| d.link_get(group_id, name))
            .map(|v| v.to_string())
    }

    fn link_delete(&self, py: Python<'_>, group_id: &str, name: &str) -> PyResult<()> {
        self.run(py, |d| d.link_delete(group_id, name))
    }

    fn link_rename(&self, py: Python<'_>, group_id: &str, old: &str, new: &str) -> PyResult<()> {
        self.run(py, |d| d.link_rename(group_id, old, new))
    }

    fn link_move(
        &self,
        py: Python<'_>,
        from_group: &str,
        old: &str,
        to_group: &str,
        new: &str,
    ) -> PyResult<()> {
        self.run(py, |d| d.link_move(from_group, old, to_group, new))
    }

    fn links(&self, py: Python<'_>, group_id: &str) -> PyResult<Vec<(String, String)>> {
        let l = self.run(py, |d| d.links(group_id))?;
        Ok(l.into_iter().map(|(k, v)| (k, v.to_string())).collect())
    }

    fn link_names(&self, py: Python<'_>, group_id: &str) -> PyResult<Vec<String>> {
        self.run(py, |d| d.link_names(group_id))
    }

    fn attr_create(
        &self,
        py: Python<'_>,
        obj_id: &str,
        name: &str,
        attr_json: &str,
        overwrite: bool,
    ) -> PyResult<()> {
        let a = parse_json(attr_json, "attribute")?;
        self.run(py, |d| d.attr_create(obj_id, name, a, overwrite))
    }

    fn attr_get(&self, py: Python<'_>, obj_id: &str, name: &str) -> PyResult<String> {
        self.run(py, |d| d.attr_get(obj_id, name))
            .map(|v| v.to_string())
    }

    fn attr_delete(&self, py: Python<'_>, obj_id: &str, name: &str) -> PyResult<()> {
        self.run(py, |d| d.attr_delete(obj_id, name))
    }

    fn attr_names(&self, py: Python<'_>, obj_id: &str) -> PyResult<Vec<String>> {
        self.run(py, |d| d.attr_names(obj_id))
    }

    #[pyo3(signature = (dset_id, selection, out, fields = None))]
    fn dataset_read(
        &self,
        py: Python<'_>,
        dset_id: &str,
        selection: &Bound<'_, PyAny>,
        out: &Bound<'_, PyAny>,
        fields: Option<Vec<String>>,
    ) -> PyResult<()> {
        self.read_into(
            py,
            dset_id,
            &extract_selection(selection)?,
            out,
            fields.as_deref(),
        )
    }

    #[pyo3(signature = (dset_id, selection, data, fields = None))]
    fn dataset_write(
        &self,
        py: Python<'_>,
        dset_id: &str,
        selection: &Bound<'_, PyAny>,
        data: &Bound<'_, PyAny>,
        fields: Option<Vec<String>>,
    ) -> PyResult<()> {
        self.write_from(
            py,
            dset_id,
            &extract_selection(selection)?,
            data,
            fields.as_deref(),
        )
    }

    #[pyo3(signature = (dset_id, points, out, fields = None))]
    fn dataset_read_points(
        &self,
        py: Python<'_>,
        dset_id: &str,
        points: &Bound<'_, PyAny>,
        out: &Bound<'_, PyAny>,
        fields: Option<Vec<String>>,
    ) -> PyResult<()> {
        let sel = self.points_selection(py, dset_id, points)?;
        self.read_into(py, dset_id, &sel, out, fields.as_deref())
    }

    #[pyo3(signature = (dset_id, points, data, fields = None))]
    fn dataset_write_points(
        &self,
        py: Python<'_>,
        dset_id: &str,
        points: &Bound<'_, PyAny>,
        data: &Bound<'_, PyAny>,
        fields: Option<Vec<String>>,
    ) -> PyResult<()> {
        let sel = self.points_selection(py, dset_id, points)?;
        self.write_from(py, dset_id, &sel, data, fields.as_deref())
    }

    fn dataset_read_vlen<'py>(
        &self,
        py: Python<'py>,
        dset_id: &str,
        selection: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyList>> {
        let sel = extract_selection(selection)?;
        let vals =
            self.run_interruptible(py, vlen_read_bytes(&sel), |d| d.read_vlen(dset_id, &sel))?;
        PyList::new(py, vals.iter().map(|v| PyBytes::new(py, v)))
    }

    #[pyo3(signature = (dset_id, selection, values, members = None))]
    fn dataset_write_vlen(
        &self,
        py: Python<'_>,
        dset_id: &str,
        selection: &Bound<'_, PyAny>,
        values: Vec<Vec<u8>>,
        members: Option<Vec<String>>,
    ) -> PyResult<()> {
        let sel = extract_selection(selection)?;
        self.run_interruptible(py, vlen_write_bytes(&values), |d| {
            d.write_vlen_members(dset_id, &sel, &values, members.as_deref())
        })
    }

    fn dataset_read_points_vlen<'py>(
        &self,
        py: Python<'py>,
        dset_id: &str,
        points: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyList>> {
        let sel = self.points_selection(py, dset_id, points)?;
        let vals =
            self.run_interruptible(py, vlen_read_bytes(&sel), |d| d.read_vlen(dset_id, &sel))?;
        PyList::new(py, vals.iter().map(|v| PyBytes::new(py, v)))
    }

    #[pyo3(signature = (dset_id, points, values, members = None))]
    fn dataset_write_points_vlen(
        &self,
        py: Python<'_>,
        dset_id: &str,
        points: &Bound<'_, PyAny>,
        values: Vec<Vec<u8>>,
        members: Option<Vec<String>>,
    ) -> PyResult<()> {
        let sel = self.points_selection(py, dset_id, points)?;
        self.run_interruptible(py, vlen_write_bytes(&values), |d| {
            d.write_vlen_members(dset_id, &sel, &values, members.as_deref())
        })
    }

    fn dataset_resize(&self, py: Python<'_>, dset_id: &str, dims: Vec<u64>) -> PyResult<()> {
        self.run(py, |d| d.resize(dset_id, &dims))
    }

    /// Claims `n` numbers of the store's counter `name` (the first at
    /// least `at_least`) that no other writer gets; returns the first.
    fn claim_numbers(&self, py: Python<'_>, name: &str, at_least: u64, n: u64) -> PyResult<u64> {
        self.run(py, |d| d.claim_numbers(name, at_least, n))
    }

    /// Grows a 1-D dataset by `n` rows at once; returns the first new row.
    fn dataset_extend_rows(&self, py: Python<'_>, dset_id: &str, n: u64) -> PyResult<u64> {
        self.run(py, |d| d.extend_rows(dset_id, n))
    }

    fn dataset_chunk_count(&self, py: Python<'_>, dset_id: &str) -> PyResult<usize> {
        self.run(py, |d| d.chunk_count(dset_id))
    }

    /// The dataset's chunks, in order of their coordinates: (chunk
    /// coordinates, stored bytes, byte offset) each (HDF5's chunk
    /// queries). The byte offset is the chunk's in the HDF5 file opened in
    /// place; a store's chunks are objects of their own (None).
    fn dataset_stored_chunks(&self, py: Python<'_>, dset_id: &str) -> PyResult<Vec<StoredChunk>> {
        self.run(py, |d| {
            if let Some(chunks) = self.hdf5_source_chunks(d, dset_id)? {
                return Ok(chunks
                    .into_iter()
                    .map(|(c, o, s)| (c, s, Some(o)))
                    .collect());
            }
            h5lake_engine::check_own_chunks(&*d.dataset(dset_id)?, "list the chunks")?;
            Ok(d.stored_chunks(dset_id)?
                .into_iter()
                .map(|(c, s)| (c, s, None))
                .collect())
        })
    }

    /// Bytes the dataset's own stored objects take, chunked or not (HDF5's
    /// storage size); refused for a dataset whose values are in a file it
    /// is linked to.
    fn dataset_storage_size(&self, py: Python<'_>, dset_id: &str) -> PyResult<u64> {
        self.run(py, |d| {
            if d.dataset(dset_id)?.link.is_some() {
                h5lake_engine::check_own_chunks(&*d.dataset(dset_id)?, "get the storage size")?;
            }
            Ok(d.stored_chunks(dset_id)?.into_iter().map(|(_, s)| s).sum())
        })
    }

    /// The chunk at chunk coordinates `coords` as stored (HDF5's direct
    /// chunk read); None if never written.
    fn dataset_stored_chunk<'py>(
        &self,
        py: Python<'py>,
        dset_id: &str,
        coords: Vec<u64>,
    ) -> PyResult<Option<Bound<'py, PyBytes>>> {
        let got = self.run(py, |d| {
            if self.hdf5_source_chunks(d, dset_id)?.is_some() {
                return d.linked_source_chunk(dset_id, &coords);
            }
            d.stored_chunk(dset_id, &coords)
        })?;
        Ok(got.map(|b| PyBytes::new(py, &b)))
    }

    /// HDF5's direct chunk write: the chunk at chunk coordinates `coords`
    /// from `data`, its bytes as HDF5's filters make them (all applied).
    fn dataset_write_hdf5_chunk(
        &self,
        py: Python<'_>,
        dset_id: &str,
        coords: Vec<u64>,
        data: &[u8],
    ) -> PyResult<()> {
        self.run(py, |d| d.write_hdf5_chunk(dset_id, &coords, data))
    }

    /// The elements of `region` (`[lo, hi)` per dimension; everything by
    /// default) where `condition` holds, in C order: their coordinates
    /// (little-endian u64, rank per match), their bytes, and how many
    /// chunks were read and skipped by their statistics. With `fields`,
    /// each element holds just those members, packed (none: coordinates
    /// only); a columnar dataset's other columns are then not read.
    #[pyo3(signature = (dset_id, condition, region = None, fields = None))]
    fn dataset_query<'py>(
        &self,
        py: Python<'py>,
        dset_id: &str,
        condition: &str,
        region: Option<Vec<(u64, u64)>>,
        fields: Option<Vec<String>>,
    ) -> PyResult<(Bound<'py, PyBytes>, Bound<'py, PyBytes>, usize, usize)> {
        let found = self.run(py, |d| {
            d.query(
                dset_id,
                condition,
                region.as_ref(),
                fields.as_deref(),
                h5lake_engine::stats::QueryLimits::default(),
            )
        })?;
        let coords: Vec<u8> = found.coords.iter().flat_map(|c| c.to_le_bytes()).collect();
        Ok((
            PyBytes::new(py, &coords),
            PyBytes::new(py, &found.elements),
            found.chunks_read,
            found.chunks_skipped,
        ))
    }

    /// Links the dataset at `path` of the HDF5 file `src` into this store
    /// as an anonymous dataset (values left in the file); returns its id.
    fn link_hdf5_dataset(&self, py: Python<'_>, src: PathBuf, path: &str) -> PyResult<String> {
        let dom = self.dom()?;
        interruptible(py, || h5lake_hdf5::link_dataset(&dom, &src, path), hdf5_err)
    }

    /// Links the Parquet files `srcs` (local paths or `s3://` URLs, one
    /// schema) into this store as one anonymous 1-D columnar dataset (rows
    /// left in the files); returns its id.
    fn link_parquet_dataset(&self, py: Python<'_>, srcs: Vec<String>) -> PyResult<String> {
        let dom = self.dom()?;
        py.allow_threads(|| {
            let plan =
                h5lake_engine::parquet_link::plan_parquet_link(&srcs, dom.link_policy().clone())?;
            dom.link_parquet_dataset(&plan, None)
        })
        .map_err(to_py_err)
    }

    /// The dataset's current extent: of a virtual dataset with unlimited
    /// mappings, as its sources' extents make it now.
    fn dataset_dims(&self, py: Python<'_>, dset_id: &str) -> PyResult<Vec<u64>> {
        self.run(py, |d| Ok(d.dataset(dset_id)?.dims.clone()))
    }

    /// Why mappings of a virtual dataset read (partly) as fill: (mapping,
    /// store or None for this one, source path, problem) each.
    fn dataset_virtual_problems(
        &self,
        py: Python<'_>,
        dset_id: &str,
    ) -> PyResult<Vec<(usize, Option<String>, String, String)>> {
        self.run(py, |d| {
            Ok(d.virtual_problems(dset_id)?
                .into_iter()
                .map(|p| (p.mapping, p.store, p.path, p.problem))
                .collect())
        })
    }

    /// Statistics over `region` (everything by default), as JSON.
    #[pyo3(signature = (dset_id, region = None))]
    fn dataset_aggregate(
        &self,
        py: Python<'_>,
        dset_id: &str,
        region: Option<Vec<(u64, u64)>>,
    ) -> PyResult<String> {
        self.run(py, |d| {
            let (plan, agg) = d.aggregate(dset_id, region.as_ref())?;
            Ok(h5lake_engine::stats::aggregate_json(&plan, &agg).to_string())
        })
    }

    /// Computes and keeps missing or stale statistics of the datasets
    /// `ids` (progress bar on stderr when `progress`): (chunks, computed).
    fn dataset_build_stats(
        &self,
        py: Python<'_>,
        ids: Vec<String>,
        progress: bool,
    ) -> PyResult<(usize, usize)> {
        self.run(py, |d| d.build_stats(&ids, progress))
    }

    /// Every stored chunk's statistics, as JSON.
    fn dataset_chunk_stats(&self, py: Python<'_>, dset_id: &str) -> PyResult<String> {
        self.run(py, |d| {
            let (m, plan, chunks) = d.chunk_stats(dset_id)?;
            Ok(h5lake_engine::stats::chunk_stats_json(&plan, &m, &chunks).to_string())
        })
    }

    /// Local paths or `s3://` URLs of the dataset's chunk objects.
    fn dataset_chunk_objects(&self, py: Python<'_>, dset_id: &str) -> PyResult<Vec<String>> {
        self.run(py, |d| d.chunk_objects(dset_id))
    }
}

/// Whether `url` (a path or `s3://bucket/path`) names an existing domain.
#[pyfunction]
fn domain_exists(py: Python<'_>, url: &str) -> PyResult<bool> {
    match py.allow_threads(|| Domain::open_url_with(url, OpenMode::Read, &DomainOptions::default()))
    {
        Ok(_) => Ok(true),
        Err(EngineError::StoreNotFound(_) | EngineError::NotAStore(_)) => Ok(false),
        Err(e) => Err(to_py_err(e)),
    }
}

/// Deletes the domain at `url` with all its objects.
#[pyfunction]
fn delete_domain(py: Python<'_>, url: &str) -> PyResult<()> {
    py.allow_threads(|| {
        Domain::open_url_with(url, OpenMode::ReadWrite, &DomainOptions::default())?.delete_domain()
    })
    .map_err(to_py_err)
}

mod arrow;
mod pool;

/// A progress bar on stderr, drawn as the Rust side draws its own (for
/// long work driven from Python, such as linking many files).
#[pyclass]
struct ProgressBar {
    bar: indicatif::ProgressBar,
}

#[pymethods]
impl ProgressBar {
    #[new]
    fn new(total: u64, label: String, unit: &str) -> Self {
        let bar = h5lake_engine::progress::bar(true, total, "", &format!("{{pos}}/{{len}} {unit}"));
        bar.set_message(label);
        ProgressBar { bar }
    }

    fn inc(&self, n: u64) {
        self.bar.inc(n);
    }

    fn finish(&self) {
        self.bar.finish_and_clear();
    }
}

#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    h5lake_hdf5::register_source_linker();
    m.add_class::<RawFile>()?;
    m.add_class::<ProgressBar>()?;
    m.add_function(wrap_pyfunction!(load_hdf5, m)?)?;
    m.add_function(wrap_pyfunction!(get_hdf5, m)?)?;
    m.add_function(wrap_pyfunction!(is_hdf5, m)?)?;
    m.add_function(wrap_pyfunction!(hdf5_version, m)?)?;
    m.add_function(wrap_pyfunction!(domain_exists, m)?)?;
    m.add_function(wrap_pyfunction!(delete_domain, m)?)?;
    m.add_function(wrap_pyfunction!(serve, m)?)?;
    m.add_function(wrap_pyfunction!(load_parquet, m)?)?;
    m.add_function(wrap_pyfunction!(link_parquet, m)?)?;
    m.add_function(wrap_pyfunction!(arrow::table_type, m)?)?;
    m.add_function(wrap_pyfunction!(arrow::table_read, m)?)?;
    m.add_function(wrap_pyfunction!(arrow::table_write, m)?)?;
    m.add_function(wrap_pyfunction!(arrow::restore_arrow_types, m)?)?;
    m.add_function(wrap_pyfunction!(pool::pooled_empty, m)?)?;
    m.add_function(wrap_pyfunction!(pool::pool_state, m)?)?;
    m.add("POOLED_MIN_BYTES", pool::MIN_POOLED)?;
    m.add_function(wrap_pyfunction!(pool::release_mappings, m)?)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
