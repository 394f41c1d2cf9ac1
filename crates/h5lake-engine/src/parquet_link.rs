//! Datasets linked to Parquet files (`h5lake load --link data.parquet`):
//! a 1-D compound dataset whose rows are the rows of one or more Parquet
//! files, row group after row group, read where they lie (local files by
//! `pread`, `s3://` objects by ranged GETs) — nothing is copied.
//!
//! The dataset document keeps HSDS's chunked layout (rows per chunk) and
//! names the files under h5lake's own key:
//! `"h5lake": {"chunkFormat": "parquet", "parquetSource": {"files":
//! [{"uri": …, "size": …, "rowGroups": [rows, …]}, …]}}`. Chunk `k` holds
//! rows `k*C .. (k+1)*C` of the files' rows taken in order; when every row
//! group holds `C` rows each chunk is one row group, otherwise a chunk is
//! put together from the parts of the row groups it spans. A read of some
//! members fetches only those columns' byte ranges of those row groups.
//!
//! Such a dataset is read-only: its values are the files' (which stay the
//! source of truth for other tools too, through `parquet_files()`).

use std::collections::HashMap;
use std::ops::Range;
use std::os::unix::fs::FileExt;
use std::sync::{Arc, Mutex};

use arrow_array::RecordBatch;
use bytes::Bytes;
use h5lake_columnar::{conform, table_schema, Footer, FooterRead, Parts, TableSchema, TAIL_BYTES};
use h5lake_store::{ReadableStore, S3Config, S3Store};
use h5lake_types::Datatype;
use serde_json::{json, Value};

use crate::dataset::DatasetMeta;
use crate::link_policy::{LinkPolicy, LinkTarget};
use crate::linked::LinkedFiles;
use crate::pooled::PooledBuf;
use crate::{Domain, EngineError, Result};

/// Parquet footers kept parsed, per domain.
const MAX_CACHED_FOOTERS: usize = 256;

/// One source file.
#[derive(Clone, Debug)]
pub(crate) struct SourceFile {
    pub(crate) uri: String,
    /// Its length when linked: a file of another length was replaced.
    size: u64,
    /// The rows of each of its row groups when linked: a file of the same
    /// length holding others was replaced too (its rows would be read at
    /// places they are not, or the dataset's shape would be wrong).
    row_groups: Vec<u64>,
}

/// One row group, where it sits in the dataset's rows.
#[derive(Clone, Debug)]
struct Group {
    first: u64,
    rows: u64,
    file: usize,
    index: usize,
}

/// The files a Parquet-linked dataset reads, and their row groups in row
/// order.
#[derive(Clone, Debug)]
pub struct ParquetSource {
    pub(crate) files: Vec<SourceFile>,
    groups: Vec<Group>,
    rows: u64,
}

impl ParquetSource {
    /// The source a dataset document names (`/h5lake/parquetSource`), if
    /// any.
    ///
    /// # Errors
    /// A malformed source description.
    pub(crate) fn of_doc(doc: &Value) -> Result<Option<Self>> {
        let Some(v) = doc.pointer("/h5lake/parquetSource") else {
            return Ok(None);
        };
        let bad = |what: &str| EngineError::Corrupt(format!("parquetSource: {what}"));
        let files = v
            .get("files")
            .and_then(Value::as_array)
            .filter(|f| !f.is_empty())
            .ok_or_else(|| bad("needs a list of files"))?;
        let mut source = ParquetSource {
            files: Vec::with_capacity(files.len()),
            groups: Vec::new(),
            rows: 0,
        };
        for (i, f) in files.iter().enumerate() {
            let uri = f.get("uri").and_then(Value::as_str);
            let size = f.get("size").and_then(Value::as_u64);
            let groups = f.get("rowGroups").and_then(Value::as_array);
            let (Some(uri), Some(size), Some(groups)) = (uri, size, groups) else {
                return Err(bad("each file needs uri, size and rowGroups"));
            };
            let row_groups = groups
                .iter()
                .map(|g| g.as_u64().ok_or_else(|| bad("row group sizes are counts")))
                .collect::<Result<Vec<u64>>>()?;
            for (index, &rows) in row_groups.iter().enumerate() {
                if rows == 0 {
                    continue;
                }
                source.groups.push(Group {
                    first: source.rows,
                    rows,
                    file: i,
                    index,
                });
                source.rows = source
                    .rows
                    .checked_add(rows)
                    .ok_or_else(|| bad("more rows than fit a dataset"))?;
            }
            source.files.push(SourceFile {
                uri: uri.to_string(),
                size,
                row_groups,
            });
        }
        Ok(Some(source))
    }

    /// Rows in all the files.
    pub fn rows(&self) -> u64 {
        self.rows
    }

    /// The files' URIs, in order.
    pub fn uris(&self) -> impl Iterator<Item = &str> {
        self.files.iter().map(|f| f.uri.as_str())
    }

    /// The row groups that hold `rows`, each with the part of its own rows
    /// (counted from its first) that lies in `rows`.
    fn pieces(&self, rows: Range<u64>) -> Vec<(&Group, Range<usize>)> {
        let at = self
            .groups
            .partition_point(|g| g.first + g.rows <= rows.start);
        self.groups[at..]
            .iter()
            .take_while(|g| g.first < rows.end)
            .map(|g| {
                let lo = rows.start.max(g.first) - g.first;
                let hi = rows.end.min(g.first + g.rows) - g.first;
                (g, lo as usize..hi as usize)
            })
            .collect()
    }
}

/// What Parquet files hold together, ready to be linked as one dataset.
pub struct ParquetLinkPlan {
    /// How their rows are held (the compound type, Arrow types kept by
    /// name).
    pub table: TableSchema,
    pub rows: u64,
    /// Rows of the first row group: the chunk size that makes each row
    /// group one chunk when the files' row groups are of one size.
    pub group_rows: u64,
    /// The document's `parquetSource`.
    pub source: Value,
}

/// Open source files for Parquet links: footers parsed once (per length
/// and version of the file), buckets connected once.
#[derive(Default)]
pub(crate) struct ParquetFiles {
    footers: Mutex<HashMap<String, (String, Footer)>>,
    buckets: Mutex<HashMap<String, Arc<S3Store>>>,
}

impl ParquetFiles {
    fn cached(&self, uri: &str, version: &str) -> Option<Footer> {
        let footers = self.footers.lock().unwrap_or_else(|e| e.into_inner());
        footers
            .get(uri)
            .filter(|(v, _)| v == version)
            .map(|(_, f)| f.clone())
    }

    fn keep(&self, uri: &str, version: String, footer: &Footer) {
        let mut footers = self.footers.lock().unwrap_or_else(|e| e.into_inner());
        if footers.len() >= MAX_CACHED_FOOTERS {
            footers.clear();
        }
        footers.insert(uri.to_string(), (version, footer.clone()));
    }

    fn bucket(&self, bucket: &str) -> Result<Arc<S3Store>> {
        let mut open = self.buckets.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(s) = open.get(bucket) {
            return Ok(s.clone());
        }
        let store = Arc::new(S3Store::open_with(
            &format!("s3://{bucket}"),
            &S3Config::from_env(),
            true,
        )?);
        open.insert(bucket.to_string(), store.clone());
        Ok(store)
    }
}

/// Reads byte ranges of one version of a source file.
type RangeReader<'a> = dyn Fn(&[Range<u64>]) -> Result<Vec<Bytes>> + 'a;

/// The footer of a file (parsed from its tail, or the cache) and a reader
/// of its byte ranges, handed to `f` with the file's length.
///
/// `linked_as`: the file as it was linked (`None`: a file being linked);
/// one of another length, or whose row groups hold other numbers of rows,
/// is refused as replaced.
fn with_source<T>(
    linked: &LinkedFiles,
    uri: &str,
    linked_as: Option<&SourceFile>,
    f: impl FnOnce(&Footer, u64, &RangeReader<'_>) -> Result<T>,
) -> Result<T> {
    let expect = linked_as.map(|file| file.size);
    let changed = |len: u64| replaced(uri, len, expect.unwrap_or(0));
    let same_rows = |footer: &Footer| -> Result<()> {
        let Some(file) = linked_as else {
            return Ok(());
        };
        let now = footer.row_group_rows();
        if now == file.row_groups {
            return Ok(());
        }
        let (was, is): (u64, u64) = (file.row_groups.iter().sum(), now.iter().sum());
        Err(EngineError::Corrupt(format!(
            "linked Parquet file {uri} holds {is} rows in {} row groups, not the {was} rows in \
             {} it held when linked: it was replaced or changed; link it again",
            now.len(),
            file.row_groups.len()
        )))
    };
    let footer_of = |len: u64, tail: &[u8], read: &RangeReader<'_>| -> Result<Footer> {
        let wrap = |e: h5lake_columnar::ColumnarError| {
            EngineError::Invalid(format!("{uri} is not a readable Parquet file: {e}"))
        };
        match Footer::from_tail(len, tail).map_err(wrap)? {
            FooterRead::Parsed(f) => Ok(f),
            FooterRead::Need(r) => Footer::parse(len, &read(&[r])?[0]).map_err(wrap),
        }
    };
    match linked.target(uri)? {
        LinkTarget::Local(path) => {
            let (file, meta) = open_local(linked, uri, &path, expect)?;
            let len = meta.len();
            // Into one buffer of the thread's, back to it when the caller
            // lets go of the bytes: fresh memory costs a page fault a page,
            // on every chunk.
            let read = |ranges: &[Range<u64>]| -> Result<Vec<Bytes>> {
                let clipped: Vec<Range<u64>> = ranges
                    .iter()
                    .map(|r| r.start.min(len)..r.end.min(len))
                    .collect();
                let total: u64 = clipped.iter().map(|r| r.end - r.start).sum();
                let mut buf = PooledBuf::take(usize::try_from(total).unwrap_or(usize::MAX));
                let mut at = 0usize;
                for r in &clipped {
                    let n = (r.end - r.start) as usize;
                    file.read_exact_at(&mut buf.0[at..at + n], r.start)
                        .map_err(|e| {
                            EngineError::Corrupt(format!(
                                "linked Parquet file {uri}: cannot read bytes {}..{} ({e})",
                                r.start, r.end
                            ))
                        })?;
                    at += n;
                }
                let whole = Bytes::from_owner(buf);
                let mut at = 0usize;
                Ok(clipped
                    .iter()
                    .map(|r| {
                        let n = (r.end - r.start) as usize;
                        at += n;
                        whole.slice(at - n..at)
                    })
                    .collect())
            };
            let version = local_version(&meta);
            let footer = match linked.parquet.cached(uri, &version) {
                Some(f) => f,
                None => {
                    let tail_range = len.saturating_sub(TAIL_BYTES)..len;
                    let tail = read(std::slice::from_ref(&tail_range))?.remove(0);
                    let f = footer_of(len, &tail, &read)?;
                    linked.parquet.keep(uri, version, &f);
                    f
                }
            };
            same_rows(&footer)?;
            f(&footer, len, &read)
        }
        LinkTarget::Object { bucket, key } => {
            let store = linked.parquet.bucket(&bucket)?;
            let obj = store.open_object(&key, TAIL_BYTES)?.ok_or_else(|| {
                EngineError::NotFound(format!("linked Parquet file {uri} does not exist"))
            })?;
            let len = obj.len();
            if expect.is_some_and(|n| n != len) {
                return Err(changed(len));
            }
            let read =
                |ranges: &[Range<u64>]| -> Result<Vec<Bytes>> { Ok(obj.read_ranges(ranges)?) };
            let version = obj.version().0.clone();
            let footer = match linked.parquet.cached(uri, &version) {
                Some(f) => f,
                None => {
                    let f = footer_of(len, obj.tail(), &read)?;
                    linked.parquet.keep(uri, version, &f);
                    f
                }
            };
            same_rows(&footer)?;
            f(&footer, len, &read)
        }
    }
}

/// What a source file is now: its length and modification time (a local
/// file) or its object's version (S3), as reads see it.
///
/// # Errors
/// As a read: a file of another length than `expect` (replaced), a missing
/// one, one the link policy refuses.
fn source_version(linked: &LinkedFiles, uri: &str, expect: u64) -> Result<String> {
    match linked.target(uri)? {
        LinkTarget::Local(path) => {
            let (_, meta) = open_local(linked, uri, &path, Some(expect))?;
            Ok(local_version(&meta))
        }
        LinkTarget::Object { bucket, key } => {
            let store = linked.parquet.bucket(&bucket)?;
            let obj = store.open_object(&key, 0)?.ok_or_else(|| {
                EngineError::NotFound(format!("linked Parquet file {uri} does not exist"))
            })?;
            if obj.len() != expect {
                return Err(replaced(uri, obj.len(), expect));
            }
            Ok(obj.version().0.clone())
        }
    }
}

/// A local source file, open, and what it is now; checked to have the
/// length `expect` it was linked at.
fn open_local(
    linked: &LinkedFiles,
    uri: &str,
    path: &std::path::Path,
    expect: Option<u64>,
) -> Result<(Arc<std::fs::File>, std::fs::Metadata)> {
    let file = linked.get(uri)?;
    let meta = file.metadata().map_err(|e| {
        EngineError::NotFound(format!("linked Parquet file {}: {e}", path.display()))
    })?;
    if let Some(n) = expect.filter(|&n| n != meta.len()) {
        return Err(replaced(uri, meta.len(), n));
    }
    Ok((file, meta))
}

/// The error for a source file of `len` bytes linked at `expect`.
fn replaced(uri: &str, len: u64, expect: u64) -> EngineError {
    EngineError::Corrupt(format!(
        "linked Parquet file {uri} is {len} bytes, not the {expect} it was when linked: it was \
         replaced or changed; link it again"
    ))
}

/// What a local source file is now: its length, modification time and
/// change time. (The change time is the one a program cannot set: a file
/// rewritten with its length and modification time kept, as `cp -p` or
/// `rsync -t` leave it, still reads as another version, so no footer or
/// statistics kept of the old one are used.)
fn local_version(meta: &std::fs::Metadata) -> String {
    use std::os::unix::fs::MetadataExt;
    let modified = meta
        .modified()
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map_or(0, |d| d.as_nanos());
    format!(
        "{}:{modified}:{}.{}",
        meta.len(),
        meta.ctime(),
        meta.ctime_nsec()
    )
}

/// Reads the footers of Parquet files (local paths or `s3://` URLs, in
/// that order), checks they share one schema h5lake can hold, and returns
/// what linking them as one dataset of a store whose links `policy` rules
/// takes. Nothing is written.
///
/// # Errors
/// No files; a file that is missing, not Parquet, or refused by the link
/// policy; files of different schemas; a column type with no HDF5 form
/// (named).
pub fn plan_parquet_link(uris: &[String], policy: LinkPolicy) -> Result<ParquetLinkPlan> {
    let linked = LinkedFiles::new(policy, None);
    let Some(first) = uris.first() else {
        return Err(EngineError::Invalid("no Parquet files given".into()));
    };
    let mut schema = None;
    let mut files = Vec::with_capacity(uris.len());
    let mut rows = 0u64;
    let mut group_rows = 0;
    for uri in uris {
        let (s, len, groups) = with_source(&linked, uri, None, |footer, len, _| {
            Ok((footer.arrow_schema()?, len, footer.row_group_rows()))
        })?;
        match &schema {
            None => schema = Some(s),
            Some(first_schema) if first_schema.fields() != s.fields() => {
                return Err(EngineError::Invalid(format!(
                    "{uri} has another schema than {first} (files linked as one dataset \
                     share one): {s} vs {first_schema}"
                )))
            }
            Some(_) => {}
        }
        if group_rows == 0 {
            group_rows = groups.iter().copied().find(|&n| n > 0).unwrap_or(0);
        }
        rows = groups
            .iter()
            .try_fold(rows, |a, &n| a.checked_add(n))
            .ok_or_else(|| EngineError::Invalid("more rows than fit a dataset".into()))?;
        files.push(json!({"uri": uri, "size": len, "rowGroups": groups}));
    }
    let schema = schema.expect("at least one file");
    let table = TableSchema::of(&schema).map_err(|e| match e {
        h5lake_columnar::ColumnarError::Unsupported(m) if m == "a table without columns" => {
            EngineError::Invalid(format!("{first} has no columns"))
        }
        e => e.into(),
    })?;
    Ok(ParquetLinkPlan {
        table,
        rows,
        group_rows: group_rows.max(1),
        source: json!({ "files": files }),
    })
}

impl Domain {
    /// Links the Parquet files `plan` read as one anonymous (unlinked) 1-D
    /// columnar dataset, read-only, of `chunk_rows` rows per chunk (default:
    /// the first row group's); Arrow types with no HDF5 form of their own
    /// are noted in its `arrow_types` attribute. Returns its id.
    ///
    /// # Errors
    /// A read-only domain; store trouble.
    pub fn link_parquet_dataset(
        &self,
        plan: &ParquetLinkPlan,
        chunk_rows: Option<u64>,
    ) -> Result<String> {
        let rows = plan.rows;
        let chunk = chunk_rows.unwrap_or(plan.group_rows).clamp(1, rows.max(1));
        let id = self.create_dataset(
            plan.table.dtype().to_json(),
            json!({"class": "H5S_SIMPLE", "dims": [rows], "maxdims": [rows]}),
            json!({
                "layout": {"class": "H5D_CHUNKED", "dims": [chunk]},
                "h5lake": {"chunkFormat": "parquet", "parquetSource": plan.source},
            }),
        )?;
        self.note_arrow_types(&id, plan.table.arrow_types())?;
        Ok(id)
    }

    /// Keeps the Arrow types `types` (by column) of the dataset `id` in its
    /// `arrow_types` attribute, for `to_arrow` and `get` to give back.
    ///
    /// # Errors
    /// Store trouble.
    pub fn note_arrow_types(&self, id: &str, types: &serde_json::Map<String, Value>) -> Result<()> {
        if types.is_empty() {
            return Ok(());
        }
        self.attr_create(
            id,
            "arrow_types",
            json!({
                "type": {"class": "H5T_STRING", "charSet": "H5T_CSET_UTF8",
                         "strPad": "H5T_STR_NULLTERM", "length": "H5T_VARIABLE"},
                "shape": {"class": "H5S_SCALAR"},
                "value": Value::Object(types.clone()).to_string(),
            }),
            false,
        )
    }

    /// Rows `rows` of a Parquet-linked dataset, the members of `dtype`
    /// (those of `m` or some of them), as batches of the members' Arrow
    /// types (nulls kept), one per row group they span.
    pub(crate) fn parquet_batches(
        &self,
        m: &DatasetMeta,
        src: &ParquetSource,
        dtype: &Datatype,
        rows: Range<u64>,
    ) -> Result<Vec<RecordBatch>> {
        let schema = table_schema(dtype)?;
        src.pieces(rows)
            .into_iter()
            .map(|(g, part)| {
                let file = &src.files[g.file];
                let batch = with_source(
                    &self.linked_files,
                    &file.uri,
                    Some(file),
                    |footer, len, read| {
                        let ranges = footer.row_group_ranges(dtype, g.index)?;
                        let got = read(&ranges)?;
                        let parts =
                            Parts::new(len, ranges.iter().map(|r| r.start).zip(got).collect());
                        Ok(footer.read_row_group(dtype, &parts, g.index, part.clone())?)
                    },
                )
                .map_err(|e| naming_the_file(e, &file.uri, &m.id))?;
                Ok(conform(&batch, &schema)?)
            })
            .collect()
    }

    /// Decodes chunk `k` of a Parquet-linked dataset (the members of
    /// `m.dtype`, which may be some of the files' columns) into `dst`, the
    /// chunk's place in row layout: each row group's column pages straight
    /// into their rows, no batch in between; rows past the files' end as
    /// the fill value. `Ok(false)` (nothing written) for a chunk wholly
    /// past the files' rows.
    pub(crate) fn parquet_chunk_into(
        &self,
        m: &DatasetMeta,
        src: &ParquetSource,
        k: u64,
        dst: &mut [u8],
    ) -> Result<bool> {
        let c = m.chunk[0];
        let lo = k.saturating_mul(c);
        let hi = lo.saturating_add(c).min(m.dims[0]).min(src.rows);
        if lo >= hi {
            return Ok(false);
        }
        let es = m.elem_size();
        let mut at = 0usize;
        for (g, part) in src.pieces(lo..hi) {
            let file = &src.files[g.file];
            let place = &mut dst[at * es..(at + part.len()) * es];
            with_source(
                &self.linked_files,
                &file.uri,
                Some(file),
                |footer, len, read| {
                    let ranges = footer.row_group_ranges(&m.dtype, g.index)?;
                    let got = read(&ranges)?;
                    let parts = Parts::new(len, ranges.iter().map(|r| r.start).zip(got).collect());
                    Ok(footer.decode_row_group_into(
                        &m.dtype,
                        &parts,
                        g.index,
                        part.clone(),
                        &m.fill,
                        place,
                    )?)
                },
            )
            .map_err(|e| naming_the_file(e, &file.uri, &m.id))?;
            at += part.len();
        }
        let fill = fill_element(m);
        for row in dst[at * es..].chunks_exact_mut(es) {
            row.copy_from_slice(&fill);
        }
        Ok(true)
    }

    /// The version of chunk `k` of a Parquet-linked dataset: that of the
    /// files holding its rows as they are now, so that statistics kept of
    /// the rows are not used once a file is rewritten in place.
    ///
    /// # Errors
    /// As a read of the chunk: a file replaced (of another length), missing
    /// or refused.
    pub(crate) fn parquet_chunk_version(
        &self,
        m: &DatasetMeta,
        src: &ParquetSource,
        k: u64,
    ) -> Result<String> {
        let c = m.chunk[0];
        let lo = k.saturating_mul(c);
        let hi = lo.saturating_add(c).min(m.dims[0]).min(src.rows);
        let mut version = String::from(crate::dataset::LINKED_VERSION);
        let mut last = None;
        for (g, _) in src.pieces(lo..hi) {
            if last.replace(g.file) == Some(g.file) {
                continue;
            }
            let file = &src.files[g.file];
            let v = source_version(&self.linked_files, &file.uri, file.size)
                .map_err(|e| naming_the_file(e, &file.uri, &m.id))?;
            version.push(':');
            version.push_str(&v);
        }
        Ok(version)
    }

    /// Chunk `k` of a Parquet-linked dataset in HSDS's row layout (of
    /// `m.dtype`, which may hold only some members); `None` past its rows.
    pub(crate) fn parquet_chunk(
        &self,
        m: &DatasetMeta,
        src: &ParquetSource,
        k: u64,
    ) -> Result<Option<Vec<u8>>> {
        Ok(self
            .parquet_chunk_counting(m, src, k, &[], &[])?
            .map(|(rows, _)| rows))
    }

    /// As [`Domain::parquet_chunk`], with how many of the chunk's rows in
    /// `runs` ((first, count) pairs) are null at each leaf `names` (see
    /// [`h5lake_columnar::null_counts_in`]).
    pub(crate) fn parquet_chunk_counting(
        &self,
        m: &DatasetMeta,
        src: &ParquetSource,
        k: u64,
        names: &[&str],
        runs: &[(usize, usize)],
    ) -> Result<Option<(Vec<u8>, Vec<u64>)>> {
        let mut nulls = vec![0u64; names.len()];
        let c = m.chunk[0];
        let lo = k.saturating_mul(c);
        let hi = lo.saturating_add(c).min(m.dims[0]).min(src.rows);
        if lo >= hi {
            return Ok(None);
        }
        let mut out = Vec::with_capacity(c as usize * m.dtype.fixed_size().unwrap_or(16));
        let mut at = 0usize;
        for batch in self.parquet_batches(m, src, &m.dtype, lo..hi)? {
            if !names.is_empty() {
                // The runs in this batch's rows.
                let here: Vec<(usize, usize)> = runs
                    .iter()
                    .filter_map(|&(first, count)| {
                        let (a, b) = (first.max(at), (first + count).min(at + batch.num_rows()));
                        (a < b).then(|| (a - at, b - a))
                    })
                    .collect();
                for (n, k) in nulls
                    .iter_mut()
                    .zip(h5lake_columnar::null_counts_in(&batch, names, &here))
                {
                    *n += k;
                }
            }
            at += batch.num_rows();
            h5lake_columnar::batch_rows(
                &m.dtype,
                batch.columns(),
                batch.num_rows(),
                &m.fill,
                &mut out,
            )?;
        }
        if at as u64 != hi - lo {
            // (Never a chunk of fewer rows: its statistics would be taken
            // over rows it does not hold.)
            return Err(EngineError::Corrupt(format!(
                "{}: the linked Parquet files gave {at} rows for chunk {k}, not {}: a file \
                 was replaced or changed; link it again",
                m.id,
                hi - lo
            )));
        }
        // The last chunk's rows past the end read as fill, as any chunk's.
        let fill = fill_element(m);
        for _ in hi - lo..c {
            out.extend_from_slice(&fill);
        }
        Ok(Some((out, nulls)))
    }
}

/// One element of the dataset's fill value (zeros when it has none): what
/// rows past the files' end read as.
fn fill_element(m: &DatasetMeta) -> Vec<u8> {
    if m.fill.is_empty() {
        h5lake_types::record::empty_record(&m.dtype)
    } else {
        m.fill.clone()
    }
}

/// A file's corruption said with the file's name and the dataset linking it.
fn naming_the_file(e: EngineError, uri: &str, id: &str) -> EngineError {
    match e {
        EngineError::Corrupt(msg) if !msg.contains(uri) => {
            EngineError::Corrupt(format!("{uri} (linked by {id}): {msg}"))
        }
        e => e,
    }
}

/// Checks a new dataset that names Parquet files to link: a 1-D,
/// fixed-extent, chunked compound whose rows are the files', every file
/// within the link policy.
pub(crate) fn check_new(
    linked: &LinkedFiles,
    doc: &Value,
    dims: &[u64],
    maxdims: &[u64],
    chunked: bool,
) -> Result<()> {
    let source = ParquetSource::of_doc(doc).map_err(|e| match e {
        EngineError::Corrupt(m) => EngineError::Invalid(m),
        e => e,
    })?;
    let Some(source) = source else {
        return Ok(());
    };
    if crate::chunk_codec::format_name(doc) != Some(crate::chunk_codec::PARQUET) {
        return Err(EngineError::Invalid(
            "a dataset linked to Parquet files has chunkFormat \"parquet\"".into(),
        ));
    }
    // (HSDS writes an unlimited dimension's maximum as 0, so an empty
    // table's fixed extent of 0 rows reads back as unlimited.)
    let fixed = maxdims == dims || dims == [0];
    if dims.len() != 1 || !chunked || !fixed {
        return Err(EngineError::Invalid(
            "a dataset linked to Parquet files is 1-D, chunked and of fixed extent".into(),
        ));
    }
    if source.rows() != dims[0] {
        return Err(EngineError::Invalid(format!(
            "the linked Parquet files hold {} rows, the dataset {}",
            source.rows(),
            dims[0]
        )));
    }
    for uri in source.uris() {
        linked.check(uri)?;
    }
    Ok(())
}
