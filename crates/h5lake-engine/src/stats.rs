//! Per-chunk statistics kept beside the chunks, and the queries and
//! aggregates they answer (the storage side of `h5lake-query`).
//!
//! Where: the record of chunk `i_j` of a dataset is the object
//! `<dataset prefix>.h5lake/stats/i_j`, under the dataset's own prefix so
//! that deleting the dataset (by h5lake or by HSDS, which removes the
//! prefix) takes it along, and at a depth HSDS's key parser rejects, so
//! HSDS's chunk listings and scans skip it.
//!
//! A dataset written whole before its first commit (the journal's case:
//! many small datasets made at once) keeps its chunks' records in its own
//! document instead, under `h5lake.chunk_stats`, which saves the store one
//! object per chunk. A record object, when there is one, comes first.
//!
//! Records of many chunks are also gathered into summaries,
//! `<dataset prefix>.h5lake/summary/<k>`, one per run of 256 values of the
//! first chunk coordinate (`k` = that coordinate / 256), so that a query or
//! an aggregate reads one object per shard instead of one per chunk (on S3,
//! one GET instead of hundreds). A summary is only a copy: each entry is
//! trusted on the same terms as a record object (below), so one that is
//! missing, stale or lost to a concurrent writer costs a read, never a
//! wrong answer. Commits of deferred metadata bring the summaries of the
//! records they wrote up to date; `build_stats` rebuilds them whole.
//!
//! Why a record can be trusted: it names the version of the chunk object
//! it was computed from and the extent it was computed over. A writer
//! stores the chunk, then the record of exactly what it stored. A reader
//! uses a record only when both still match the chunk; otherwise (a crash
//! between the two puts, two writers whose records landed in the other
//! order, an in-place patch, a resize, a chunk HSDS wrote) it recomputes
//! the record from the chunk and stores it back unless a writer got there
//! first. So statistics can be missing or stale, and then cost a read, but
//! a query never trusts bounds that do not cover the chunk.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use h5lake_query::{eval, expr, leaves, ChunkFunction, ChunkRecord, FnState, Leaf, LeafStats};
use h5lake_store::{PutOutcome, Version};
use h5lake_types::{Datatype, DimSel, Selection};
use serde_json::Value;

use crate::dataset::{chunk_coords_of, for_each_task, DatasetMeta, Projection};
use crate::domain::Domain;
use crate::error::{EngineError, Result};

/// Chunk functions a dataset may have, and characters of their
/// expressions in all.
const MAX_CHUNK_FUNCTIONS: usize = 64;
const MAX_CHUNK_FUNCTION_TEXT: usize = 16 << 10;

/// Where records live, under a dataset's prefix.
const STATS_DIR: &str = ".h5lake/stats/";
/// Where summaries of records live, under a dataset's prefix.
const SUMMARY_DIR: &str = ".h5lake/summary/";
/// A summary holds the records of chunks whose first coordinate shares
/// all but these low bits.
const SHARD_BITS: u32 = 8;
/// Tries at a summary's conditional put before leaving it to the next
/// commit (it is a copy; nothing is lost).
const SUMMARY_TRIES: usize = 8;
/// Where a dataset document keeps records of chunks written with it, by
/// chunk name.
const IN_DOC: &str = "chunk_stats";
/// Records of one dataset kept in its document at most this big; more go
/// to record objects.
pub(crate) const IN_DOC_BUDGET: usize = 4096;

/// What statistics a dataset keeps: its numeric leaves, and the chunk
/// functions declared at creation.
#[derive(Debug)]
pub struct StatsPlan {
    pub leaves: Vec<Leaf>,
    pub functions: Vec<ChunkFunction>,
    /// Records the document keeps, by chunk name (as stored).
    in_doc: HashMap<String, Vec<u8>>,
}

impl From<h5lake_query::QueryError> for EngineError {
    fn from(e: h5lake_query::QueryError) -> Self {
        match e {
            h5lake_query::QueryError::Corrupt(m) => EngineError::Corrupt(m),
            other => EngineError::Invalid(other.to_string()),
        }
    }
}

/// The members statistics are kept on of a compound with members of
/// variable length (strings, sequences): its fixed-size members, read into
/// rows of their own (of a columnar dataset just their columns). `None`
/// for any other type (a fixed-size type keeps statistics of itself).
pub(crate) fn fixed_members(dtype: &Datatype) -> Option<Vec<String>> {
    let Datatype::Compound { fields, .. } = dtype else {
        return None;
    };
    if dtype.fixed_size().is_some() {
        return None;
    }
    let names: Vec<String> = fields
        .iter()
        .filter(|f| f.dtype.fixed_size().is_some())
        .map(|f| f.name.clone())
        .collect();
    (!names.is_empty()).then_some(names)
}

/// The compound of the members `names` of `dtype`, packed, in that order.
pub(crate) fn members_type(dtype: &Datatype, names: &[String]) -> Result<Datatype> {
    let members: Vec<Value> = crate::dataset::named_members(dtype, names)?
        .iter()
        .map(|f| serde_json::json!({"name": f.name, "type": f.dtype.to_json()}))
        .collect();
    Ok(Datatype::from_json(
        &serde_json::json!({"class": "H5T_COMPOUND", "fields": members}),
    )?)
}

impl StatsPlan {
    /// The plan of a dataset of type `dtype`: of [`StatsPlan::of_doc`],
    /// over the fixed-size members of a compound that also has members of
    /// variable length.
    ///
    /// # Errors
    /// As [`StatsPlan::of_doc`].
    pub fn of_dataset(doc: &Value, dtype: &Datatype) -> Result<Option<Arc<Self>>> {
        match fixed_members(dtype) {
            Some(names) => Self::of_doc(doc, &members_type(dtype, &names)?),
            None => Self::of_doc(doc, dtype),
        }
    }

    /// Checks a new dataset's chunk functions: every write evaluates them
    /// all over the chunks it writes, so their number and size bound what a
    /// write may cost. (Checked when a dataset is made, never when one is
    /// opened: datasets made before the limit still open.)
    ///
    /// # Errors
    /// More than [`MAX_CHUNK_FUNCTIONS`], or more text than
    /// [`MAX_CHUNK_FUNCTION_TEXT`] in all.
    pub fn check_new_functions(doc: &Value) -> Result<()> {
        let Some(fns) = doc
            .pointer("/h5lake/stats/functions")
            .and_then(Value::as_object)
        else {
            return Ok(());
        };
        let text: usize = fns.values().filter_map(Value::as_str).map(str::len).sum();
        if fns.len() > MAX_CHUNK_FUNCTIONS || text > MAX_CHUNK_FUNCTION_TEXT {
            return Err(EngineError::Invalid(format!(
                "at most {MAX_CHUNK_FUNCTIONS} chunk functions of {MAX_CHUNK_FUNCTION_TEXT} \
                 characters in all"
            )));
        }
        Ok(())
    }

    /// The plan a dataset document declares under `h5lake.stats`: absent
    /// or `true` — statistics of every numeric leaf; `false` — none; an
    /// object `{"functions": {name: expression}}` — those chunk functions
    /// too. `None` when there is nothing to keep.
    ///
    /// # Errors
    /// A malformed setting; a function that does not parse.
    pub fn of_doc(doc: &Value, dtype: &Datatype) -> Result<Option<Arc<Self>>> {
        let setting = doc.pointer("/h5lake/stats");
        if matches!(setting, Some(Value::Bool(false))) || dtype.fixed_size().is_none() {
            return Ok(None);
        }
        let leaves = leaves(dtype);
        let mut functions = Vec::new();
        match setting {
            None | Some(Value::Bool(true)) => {}
            Some(Value::Object(o)) => {
                if let Some(k) = o.keys().find(|k| *k != "functions") {
                    return Err(EngineError::Invalid(format!(
                        "unknown statistics setting {k:?} (there is \"functions\")"
                    )));
                }
                let fns = match o.get("functions") {
                    None => None,
                    Some(Value::Object(f)) => Some(f),
                    Some(_) => {
                        return Err(EngineError::Invalid(
                            "statistics \"functions\" maps names to expressions".into(),
                        ))
                    }
                };
                for (name, text) in fns.into_iter().flatten() {
                    let text = text.as_str().ok_or_else(|| {
                        EngineError::Invalid(format!("chunk function {name:?} is not a string"))
                    })?;
                    functions.push(ChunkFunction::parse(name, text, &leaves)?);
                }
            }
            Some(other) => {
                return Err(EngineError::Invalid(format!(
                    "stats is true, false, or {{\"functions\": {{…}}}}, not {other}"
                )))
            }
        }
        if leaves.is_empty() && functions.is_empty() {
            return Ok(None);
        }
        let in_doc = doc
            .get("h5lake")
            .and_then(|h| h.get(IN_DOC))
            .and_then(Value::as_object)
            .map(|o| {
                o.iter()
                    .map(|(k, v)| (k.clone(), crate::domain::to_bytes(v)))
                    .collect()
            })
            .unwrap_or_default();
        Ok(Some(Arc::new(Self {
            leaves,
            functions,
            in_doc,
        })))
    }

    /// The leaves' names, in order.
    pub(crate) fn leaf_names(&self) -> Vec<&str> {
        self.leaves.iter().map(|l| l.name.as_str()).collect()
    }

    /// Puts each leaf's null count (in leaf order) into `rec`.
    pub(crate) fn set_nulls(&self, rec: &mut ChunkRecord, nulls: &[u64]) {
        for (s, &n) in rec.leaves.iter_mut().zip(nulls) {
            s.null_count = n;
        }
    }

    /// A record of the elements of `raw` (a decoded chunk) inside the
    /// extent, for chunk version `version`.
    fn record(&self, m: &DatasetMeta, coords: &[u64], raw: &[u8], version: &str) -> ChunkRecord {
        let live = live(m, coords);
        let runs = h5lake_query::live_runs(&m.chunk, &live);
        let size = m.elem_size();
        let rows = eval::Rows {
            data: raw,
            size,
            runs: &runs,
        };
        ChunkRecord {
            version: version.to_string(),
            live,
            leaves: h5lake_query::stats::compute(&self.leaves, raw, size, &runs),
            functions: self
                .functions
                .iter()
                .map(|f| f.compute(&self.leaves, rows))
                .collect(),
        }
    }
}

/// How many of a chunk's indices along each dimension lie inside the
/// dataset's extent.
fn live(m: &DatasetMeta, coords: &[u64]) -> Vec<u64> {
    coords
        .iter()
        .zip(&m.chunk)
        .zip(&m.dims)
        .map(|((&c, &n), &d)| d.saturating_sub(c.saturating_mul(n)).min(n))
        .collect()
}

/// Whether a key is a chunk's statistics record.
pub(crate) fn is_record_key(key: &str) -> bool {
    key.contains("/.h5lake/stats/")
}

/// Whether a key under a dataset holds h5lake's own metadata (statistics
/// records and their summaries), not a chunk.
pub fn is_own_metadata_key(key: &str) -> bool {
    key.contains("/.h5lake/")
}

/// Puts the record stored under `record_key` into a new dataset's
/// document (see the module docs); `false` when `record` is not JSON.
pub(crate) fn keep_in_doc(doc: &mut Value, record_key: &str, record: &[u8]) -> bool {
    let Ok(rec) = serde_json::from_slice::<Value>(record) else {
        return false;
    };
    let Some(doc) = doc.as_object_mut() else {
        return false;
    };
    let h5lake = doc
        .entry("h5lake")
        .or_insert_with(|| Value::Object(serde_json::Map::new()));
    let Some(h5lake) = h5lake.as_object_mut() else {
        return false;
    };
    let records = h5lake
        .entry(IN_DOC)
        .or_insert_with(|| Value::Object(serde_json::Map::new()));
    let Some(records) = records.as_object_mut() else {
        return false;
    };
    let name = record_key.rsplit('/').next().unwrap_or(record_key);
    records.insert(name.to_string(), rec);
    true
}

/// A record naming a chunk version in `versions` (pending versions of
/// chunks just written to the store) rewritten to name the version the
/// store gave the chunk, so that it stays trusted; `None` when it names
/// none of them.
pub(crate) fn relabel_record(
    bytes: &[u8],
    versions: &std::collections::HashMap<String, Version>,
) -> Option<Vec<u8>> {
    let mut v: Value = serde_json::from_slice(bytes).ok()?;
    let new = versions.get(v.get("version")?.as_str()?)?;
    v["version"] = Value::String(new.0.clone());
    serde_json::to_vec(&v).ok()
}

fn stats_key(m: &DatasetMeta, coords: &[u64]) -> String {
    crate::ids::chunk_key(&format!("{}{STATS_DIR}", m.prefix), coords)
}

/// The summary holding the record of the chunk whose first coordinate is
/// `first`, under dataset prefix `prefix`.
fn summary_key(prefix: &str, first: u64) -> String {
    format!("{prefix}{SUMMARY_DIR}{}", first >> SHARD_BITS)
}

/// The summary key and chunk name of a record key.
fn summary_place(record_key: &str) -> Option<(String, &str)> {
    let at = record_key.find(STATS_DIR)?;
    let name = &record_key[at + STATS_DIR.len()..];
    let first: u64 = name.split('_').next()?.parse().ok()?;
    Some((summary_key(&record_key[..at], first), name))
}

/// Brings summaries up to date with `records` ((record key, record as
/// stored) pairs just written): each summary touched is read, the records
/// put in, and written back only if no one changed it meanwhile (else
/// again). `only_if`: skip the records of a dataset prefix for which it
/// answers false (a dataset deleted meanwhile, whose prefix must stay
/// empty).
///
/// # Errors
/// I/O trouble (a summary that keeps changing under us is left as it is).
pub(crate) fn summarise(
    store: &dyn h5lake_store::Store,
    records: &[(String, Vec<u8>)],
    only_if: impl Fn(&str) -> bool,
) -> h5lake_store::Result<()> {
    let mut by_summary: HashMap<String, Vec<(&str, Value)>> = HashMap::new();
    for (key, bytes) in records {
        let Some((skey, name)) = summary_place(key) else {
            continue;
        };
        let Ok(rec) = serde_json::from_slice::<Value>(bytes) else {
            continue;
        };
        by_summary.entry(skey).or_default().push((name, rec));
    }
    for (skey, recs) in by_summary {
        if !only_if(&skey[..skey.find(SUMMARY_DIR).unwrap_or(0)]) {
            continue;
        }
        for _ in 0..SUMMARY_TRIES {
            let kept = store.get_versioned(&skey)?;
            let mut all = kept
                .as_ref()
                .and_then(|k| {
                    serde_json::from_slice::<serde_json::Map<String, Value>>(&k.data).ok()
                })
                .unwrap_or_default();
            for (name, rec) in &recs {
                all.insert((*name).to_string(), rec.clone());
            }
            let bytes = crate::domain::to_bytes(&Value::Object(all));
            let done = match &kept {
                Some(k) => store.put_if_version(&skey, &bytes, &k.version)?,
                None => store.put_if_absent(&skey, &bytes)?,
            };
            if matches!(done, PutOutcome::Written(_)) {
                break;
            }
        }
    }
    Ok(())
}

/// The summaries of one dataset, read as they are first needed.
struct Summaries<'a> {
    store: &'a dyn h5lake_store::Store,
    prefix: &'a str,
    shards: Mutex<HashMap<u64, Arc<serde_json::Map<String, Value>>>>,
    /// The dataset's objects' versions from one listing, where the store
    /// lists them (S3): a record is checked against these rather than by
    /// one request per chunk.
    versions: Option<HashMap<String, Version>>,
}

/// Chunks checked at once from which listing the dataset's objects (one
/// request per thousand) beats asking each chunk's version.
const LIST_VERSIONS_FROM: usize = 32;

impl<'a> Summaries<'a> {
    fn of(store: &'a dyn h5lake_store::Store, m: &'a DatasetMeta) -> Self {
        Self {
            store,
            prefix: &m.prefix,
            shards: Mutex::new(HashMap::new()),
            versions: None,
        }
    }

    /// [`Summaries::of`] for checking the records of `chunks` chunks,
    /// against the versions of `listed` where its listing gave them.
    fn for_chunks(
        store: &'a dyn h5lake_store::Store,
        m: &'a DatasetMeta,
        chunks: usize,
        listed: Option<HashMap<String, Version>>,
    ) -> Result<Self> {
        let mut sums = Self::of(store, m);
        sums.versions = match listed {
            Some(v) => Some(v),
            None if chunks >= LIST_VERSIONS_FROM => store
                .list_versions(&m.prefix)?
                .map(|v| v.into_iter().collect()),
            None => None,
        };
        Ok(sums)
    }

    /// The version of the object `key` now: from the listing when there is
    /// one (absent from it: not stored), else asked of the store.
    fn version(&self, key: &str) -> Result<Option<Version>> {
        match &self.versions {
            Some(listed) => Ok(listed.get(key).cloned()),
            None => Ok(self.store.version(key)?),
        }
    }

    /// The summary that would hold the record of the chunk at `coords`
    /// (empty when there is none).
    fn holding(&self, coords: &[u64]) -> Result<Arc<serde_json::Map<String, Value>>> {
        let Some(&first) = coords.first() else {
            return Ok(Arc::default());
        };
        let shard = first >> SHARD_BITS;
        let mut shards = self.shards.lock().unwrap_or_else(|e| e.into_inner());
        let all = match shards.get(&shard) {
            Some(a) => a.clone(),
            None => {
                let a = Arc::new(
                    self.store
                        .get(&summary_key(self.prefix, first))?
                        .and_then(|b| {
                            serde_json::from_slice::<serde_json::Map<String, Value>>(&b).ok()
                        })
                        .unwrap_or_default(),
                );
                shards.insert(shard, a.clone());
                a
            }
        };
        drop(shards);
        Ok(all)
    }
}

/// The chunks of a dataset that may hold data (in C order), with their
/// objects' versions where the listing that found them gave those (S3):
/// one listing, not one for the chunks and one for their versions.
struct WithData {
    coords: Vec<Vec<u64>>,
    versions: Option<HashMap<String, Version>>,
}

impl WithData {
    fn unversioned(coords: Vec<Vec<u64>>) -> Self {
        Self {
            coords,
            versions: None,
        }
    }

    /// Only the chunks that reach into `region`.
    fn inside(mut self, m: &DatasetMeta, region: &Region) -> Self {
        self.coords
            .retain(|c| !overlap(m, c, region).iter().any(|(a, b)| a >= b));
        self
    }
}

/// A box of a dataset: `[lo, hi)` along each dimension.
pub type Region = Vec<(u64, u64)>;

/// Statistics over a selection, per leaf and per chunk function, with how
/// much data was read to get them.
#[derive(Debug)]
pub struct Aggregate {
    pub leaves: Vec<LeafStats>,
    pub functions: Vec<FnState>,
    /// Chunks whose data had to be read (partly covered, or without a
    /// record that still describes them).
    pub chunks_read: usize,
    /// Chunks answered from their records alone.
    pub chunks_from_stats: usize,
}

/// One stored chunk's statistics, for the per-chunk table.
#[derive(Debug)]
pub struct ChunkStats {
    pub coords: Vec<u64>,
    pub record: ChunkRecord,
}

/// Bounds on a query's answer and on the work it may take.
#[derive(Clone, Debug, Default)]
pub struct QueryLimits {
    /// Stop after this many matches (the first ones in C order).
    pub max_matches: Option<usize>,
    /// Fail with [`EngineError::TooLarge`] rather than hold more than
    /// this many bytes of matches.
    pub max_bytes: Option<usize>,
    /// Fail with [`EngineError::TooLarge`] rather than go on past this
    /// moment (a server's time limit).
    pub deadline: Option<std::time::Instant>,
    /// Stop as soon as this is set (a server's client went away).
    pub cancel: Option<Arc<std::sync::atomic::AtomicBool>>,
}

impl QueryLimits {
    /// An error if the query must stop now.
    fn check_time(&self) -> Result<()> {
        if self
            .cancel
            .as_ref()
            .is_some_and(|c| c.load(std::sync::atomic::Ordering::Relaxed))
        {
            return Err(EngineError::TooLarge("the query was cancelled".into()));
        }
        if self
            .deadline
            .is_some_and(|d| std::time::Instant::now() >= d)
        {
            return Err(EngineError::TooLarge(
                "the query ran past its time limit; narrow the selection or the condition, or set a limit"
                    .into(),
            ));
        }
        Ok(())
    }
}

/// Chunks of a virtual dataset a scan lists (those its mappings reach),
/// at most; past it the scan is refused rather than listed.
const MAX_LISTED_VIRTUAL_CHUNKS: usize = 1 << 22;

/// The chunks of virtual dataset `m` inside `region` that any mapping
/// reaches, in C order: the others hold nothing but the fill value.
fn virtual_chunks(m: &DatasetMeta, region: &Region) -> Result<Vec<Vec<u64>>> {
    let vm = m.virtual_map.as_ref().expect("a virtual dataset");
    let mut found = std::collections::BTreeSet::new();
    for mp in &vm.mappings {
        let reach: Region = mp
            .dst
            .iter()
            .zip(region)
            .zip(&m.dims)
            .map(|((r, &(a, b)), &d)| {
                let hi = if r.is_unlimited() { d } else { r.reach() };
                (r.start.max(a), hi.min(b).min(d))
            })
            .collect();
        let grid = Grid::new(m, &reach);
        if grid.len.saturating_add(found.len()) > MAX_LISTED_VIRTUAL_CHUNKS {
            return Err(EngineError::TooLarge(format!(
                "the selection reaches more than {MAX_LISTED_VIRTUAL_CHUNKS} chunks of this virtual dataset's sources; narrow it"
            )));
        }
        found.extend((0..grid.len).map(|i| grid.get(i)));
    }
    Ok(found.into_iter().collect())
}

/// Matches a chunk's scan finds before it counts them towards a query's
/// byte limit (with every other chunk's, at once).
const COUNTED_MATCHES: usize = 4096;

/// The error of a query that matches more than `max` bytes.
fn too_many(max: Option<usize>) -> EngineError {
    EngineError::TooLarge(format!(
        "the query matches more than {} bytes; narrow the selection or the condition, or set a limit",
        max.unwrap_or(0)
    ))
}

/// Chunks a query reads at once; with a match limit on a 1-D dataset it
/// stops after the first batch that reaches it.
/// So with a limit of n matches, a query holds at most
/// (`QUERY_BATCH` + 1) × n matches at once.
pub const QUERY_BATCH: usize = 32;

/// The elements a query matched, in C order of their coordinates.
#[derive(Debug, Default)]
pub struct QueryMatches {
    /// `rank` coordinates per match.
    pub coords: Vec<u64>,
    /// One element (the dataset's type) per match.
    pub elements: Vec<u8>,
    pub chunks_read: usize,
    pub chunks_skipped: usize,
}

impl Domain {
    /// The record of a chunk about to be written as `raw` (decoded
    /// bytes), to be stored with [`Domain::store_stats`] once the chunk
    /// is; `None` for datasets without statistics.
    pub(crate) fn prepare_stats(
        &self,
        m: &DatasetMeta,
        coords: &[u64],
        raw: &[u8],
    ) -> Option<ChunkRecord> {
        let plan = m.stats.as_ref()?;
        if raw.len() != m.chunk_elems() * m.elem_size() {
            return None;
        }
        if m.pipeline.is_lossy() {
            // The record describes the values as they will read back, not
            // as the caller gave them.
            let key = m.key(coords);
            let back = m.encode(raw, &key).and_then(|e| m.decode_stored(&e)).ok()?;
            return Some(plan.record(m, coords, &back, ""));
        }
        Some(plan.record(m, coords, raw, ""))
    }

    /// Stores `rec` as the record of the chunk at `coords`, now at
    /// `version`.
    ///
    /// # Errors
    /// I/O trouble storing the record.
    pub(crate) fn store_stats(
        &self,
        m: &DatasetMeta,
        coords: &[u64],
        rec: Option<ChunkRecord>,
        version: &Version,
    ) -> Result<()> {
        let (Some(plan), Some(mut rec)) = (&m.stats, rec) else {
            return Ok(());
        };
        rec.version.clone_from(&version.0);
        self.store().put(
            &stats_key(m, coords),
            &rec.to_bytes(&plan.leaves, &plan.functions),
        )?;
        Ok(())
    }

    /// The record of a stored chunk that describes it as it is now,
    /// recomputed (and stored back) when the kept one does not. `None`:
    /// the chunk is not stored.
    ///
    /// `upgrade`: a record lacking what this version keeps (bounds of text,
    /// which records made before them only count) is made anew too.
    fn current_record(
        &self,
        m: &DatasetMeta,
        plan: &StatsPlan,
        coords: &[u64],
        sums: &Summaries<'_>,
        upgrade: bool,
    ) -> Result<Option<(ChunkRecord, bool)>> {
        let store = self.store();
        let key = m.key(coords);
        let skey = stats_key(m, coords);
        // A chunk of a linked dataset that was never written through
        // h5lake lies in its source file: its record stands while no
        // chunk object replaces it and the file is as it was.
        let current = match (sums.version(&key)?, &m.link) {
            (Some(v), _) => v,
            (None, Some(link)) => self.linked_chunk_version(m, link, coords)?,
            (None, None) => return Ok(None),
        };
        let want_live = live(m, coords);
        let name = skey.rsplit('/').next().unwrap_or_default();
        // A record (parsed or not) that describes the chunk as it is now.
        let current_one = |rec: h5lake_query::Result<ChunkRecord>| {
            rec.ok()
                .filter(|r| r.version == current.0 && r.live == want_live)
                .map(|r| (r, false))
        };
        // One that lacks what this version keeps (text bounds) is used only
        // when no other place has a whole one, and never when upgrading.
        let mut partial = None;
        let mut whole = |found: (ChunkRecord, bool)| {
            if found.0.bounds_text(&plan.leaves) {
                return Some(found);
            }
            partial.get_or_insert(found);
            None
        };
        let from_bytes = |b: &[u8]| ChunkRecord::from_bytes(b, &plan.leaves, &plan.functions);
        // A record in the dataset's document that describes the chunk as it
        // is now is the chunk's statistics, whatever else is kept: no need
        // to look for a record object; nor when its summary has one.
        if let Some(found) = plan
            .in_doc
            .get(name)
            .and_then(|b| current_one(from_bytes(b)))
            .and_then(&mut whole)
        {
            return Ok(Some(found));
        }
        let summarised = sums.holding(coords)?;
        if let Some(found) = summarised
            .get(name)
            .and_then(|v| current_one(ChunkRecord::from_json(v, &plan.leaves, &plan.functions)))
            .and_then(&mut whole)
        {
            return Ok(Some(found));
        }
        let kept = store.get_versioned(&skey)?;
        let stored = match &kept {
            Some(k) => Some(&k.data[..]),
            None => plan.in_doc.get(name).map(Vec::as_slice),
        };
        if let Some(found) = stored
            .and_then(|b| current_one(from_bytes(b)))
            .and_then(&mut whole)
        {
            return Ok(Some(found));
        }
        drop(whole);
        if let Some(found) = partial.filter(|_| !upgrade) {
            return Ok(Some(found));
        }
        let Some((version, data, nulls)) = self.chunk_for_record(m, plan, &key, coords, None)?
        else {
            return Ok(None);
        };
        let mut rec = plan.record(m, coords, &data, &version.0);
        if let Some(nulls) = nulls {
            plan.set_nulls(&mut rec, &nulls);
        }
        if self.check_writable().is_ok() {
            let bytes = rec.to_bytes(&plan.leaves, &plan.functions);
            // A writer that stored a newer record meanwhile wins.
            let _: PutOutcome = match &kept {
                Some(k) => store.put_if_version(&skey, &bytes, &k.version)?,
                None => store.put_if_absent(&skey, &bytes)?,
            };
        }
        Ok(Some((rec, true)))
    }

    /// A chunk to compute statistics of: its version, decoded bytes, and
    /// (for a columnar chunk or one linked from Parquet files, which may
    /// hold nulls) how many elements are null at each leaf, in all of the
    /// chunk or in `runs` ((first, count) pairs of its elements).
    fn chunk_for_record(
        &self,
        m: &DatasetMeta,
        plan: &StatsPlan,
        key: &str,
        coords: &[u64],
        runs: Option<&[(usize, usize)]>,
    ) -> Result<Option<(Version, bytes::Bytes, Option<Vec<u64>>)>> {
        let names = plan.leaf_names();
        let all = [(0, m.chunk_elems())];
        if m.is_columnar() {
            if let Some(v) = self.store().get_versioned(key)? {
                // The counts and the rows from the same bytes: of the whole
                // chunk from its footer, of some rows from its columns.
                let footer = h5lake_columnar::Footer::of_whole(&v.data)?;
                let nulls = match runs {
                    None => footer.null_counts(&names)?,
                    Some(runs) => {
                        let rows = usize::try_from(footer.rows()).unwrap_or(0);
                        let parts = h5lake_columnar::Parts::whole(v.data.clone());
                        let batch = footer.read_batch(&m.dtype, &parts, 0..rows)?;
                        h5lake_columnar::null_counts_in(&batch, &names, runs)
                    }
                };
                return Ok(Some((v.version, m.decode(v.data)?, Some(nulls))));
            }
        }
        if let Some(src) = m.link.as_ref().and_then(|l| l.parquet_source()) {
            if coords.len() == 1 && self.store().version(key)?.is_none() {
                // Taken before the rows are read: a file rewritten between
                // the two leaves a record that is not trusted again.
                let version = Version(self.parquet_chunk_version(m, src, coords[0])?);
                return Ok(self
                    .parquet_chunk_counting(m, src, coords[0], &names, runs.unwrap_or(&all))?
                    .map(|(rows, nulls)| (version, bytes::Bytes::from(rows), Some(nulls))));
            }
        }
        Ok(self
            .load_chunk_versioned(m, key, false)?
            .map(|(v, d)| (v, d, None)))
    }

    /// The version of a chunk of a linked dataset that lies in its source
    /// (no chunk object replaces it): that of a Parquet source's files as
    /// they are now; an HDF5 file's is checked unchanged since it was
    /// linked, as a read checks it.
    ///
    /// # Errors
    /// As a read of the chunk: the source changed, went missing or is refused.
    fn linked_chunk_version(
        &self,
        m: &DatasetMeta,
        link: &crate::linked::LinkedLayout,
        coords: &[u64],
    ) -> Result<Version> {
        if let Some(src) = link.parquet_source() {
            return Ok(Version(self.parquet_chunk_version(m, src, coords[0])?));
        }
        self.linked_files.get_checked(link)?;
        Ok(Version(crate::dataset::LINKED_VERSION.into()))
    }

    /// Every stored chunk's statistics, in chunk order.
    ///
    /// # Errors
    /// Unknown dataset; a dataset without statistics; I/O trouble.
    pub fn chunk_stats(
        &self,
        id: &str,
    ) -> Result<(Arc<DatasetMeta>, Arc<StatsPlan>, Vec<ChunkStats>)> {
        let m = Arc::new(self.dataset(id)?.stats_view()?);
        not_virtual(&m)?;
        let plan = plan_of(&m)?;
        let WithData { coords, versions } = self.chunks_with_data(&m)?;
        let sums = Summaries::for_chunks(self.store().as_ref(), &m, coords.len(), versions)?;
        let out = Mutex::new(Vec::with_capacity(coords.len()));
        for_each_task(coords.len(), false, |i| {
            let Some((rec, _)) = self.current_record(&m, &plan, &coords[i], &sums, false)? else {
                return Ok(());
            };
            out.lock()
                .unwrap_or_else(|e| e.into_inner())
                .push(ChunkStats {
                    coords: coords[i].clone(),
                    record: rec,
                });
            Ok(())
        })?;
        let mut out = out.into_inner().unwrap_or_else(|e| e.into_inner());
        out.sort_by(|a, b| a.coords.cmp(&b.coords));
        Ok((m, plan, out))
    }

    /// Makes the records of `ids`' chunks current: computes (in
    /// parallel) and stores those missing or stale — data written before
    /// statistics, by HSDS, or linked from a file — with a progress bar
    /// over the chunks when `progress`. Returns (chunks seen, records
    /// computed).
    ///
    /// # Errors
    /// Unknown dataset; one without statistics; a read-only store; I/O
    /// trouble.
    pub fn build_stats(&self, ids: &[String], progress: bool) -> Result<(usize, usize)> {
        self.check_writable()?;
        let mut work = Vec::new();
        let mut metas = Vec::new();
        let mut listed = Vec::new();
        for id in ids {
            let m = Arc::new(self.dataset(id)?.stats_view()?);
            not_virtual(&m)?;
            let plan = plan_of(&m)?;
            let with_data = self.chunks_with_data(&m)?;
            for c in with_data.coords {
                work.push((metas.len(), plan.clone(), c));
            }
            listed.push(with_data.versions);
            metas.push(m);
        }
        let sums = metas
            .iter()
            .zip(listed)
            .map(|(m, versions)| Summaries::for_chunks(self.store().as_ref(), m, 0, versions))
            .collect::<Result<Vec<Summaries>>>()?;
        let bar = crate::progress::bar(
            progress,
            work.len() as u64,
            "statistics",
            "{pos}/{len} chunks {per_sec}",
        );
        let computed = std::sync::atomic::AtomicUsize::new(0);
        for_each_task(work.len(), false, |i| {
            let (at, plan, c) = &work[i];
            if let Some((_, true)) = self.current_record(&metas[*at], plan, c, &sums[*at], true)? {
                computed.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            }
            bar.inc(1);
            Ok(())
        })?;
        bar.finish_and_clear();
        drop(sums);
        for m in &metas {
            self.rebuild_summaries(m)?;
        }
        Ok((work.len(), computed.into_inner()))
    }

    /// Writes a dataset's summaries afresh from its record objects.
    fn rebuild_summaries(&self, m: &DatasetMeta) -> Result<()> {
        let store = self.store();
        let keys = store.list_prefix(&format!("{}{STATS_DIR}", m.prefix))?;
        let mut records = Vec::with_capacity(keys.len());
        for (k, v) in keys.iter().zip(store.get_many(&keys)?) {
            if let Some(v) = v {
                records.push((k.clone(), v.data.to_vec()));
            }
        }
        summarise(store.as_ref(), &records, |_| true)?;
        Ok(())
    }

    /// The chunks that may hold data: the stored ones, or for a linked
    /// dataset every chunk of the extent.
    fn chunks_with_data(&self, m: &DatasetMeta) -> Result<WithData> {
        if m.link.is_some() {
            let full: Region = m.dims.iter().map(|&d| (0, d)).collect();
            return Ok(WithData::unversioned(Grid::new(m, &full).all()));
        }
        let (stored, versions) = match self.store().list_versions(&m.prefix)? {
            Some(listed) => {
                let coords = listed
                    .iter()
                    .filter_map(|(k, _)| chunk_coords_of(m, k))
                    .collect();
                (coords, Some(listed.into_iter().collect()))
            }
            None => (self.stored_chunk_coords(m)?, None),
        };
        let mut coords: Vec<Vec<u64>> = stored
            .into_iter()
            .filter(|c: &Vec<u64>| live(m, c).iter().all(|&l| l > 0))
            .collect();
        coords.sort_unstable();
        Ok(WithData { coords, versions })
    }

    /// Statistics of the elements in `region` (the whole extent when
    /// `None`): chunks wholly inside it from their records, the others by
    /// reading them; elements of chunks never written count as the fill
    /// value.
    ///
    /// # Errors
    /// Unknown dataset; a type without numbers; a region outside the
    /// extent; I/O trouble.
    pub fn aggregate(
        &self,
        id: &str,
        region: Option<&Region>,
    ) -> Result<(Arc<StatsPlan>, Aggregate)> {
        let (m, is_virtual) = scan_view(self.dataset(id)?)?;
        let plan = match &m.stats {
            Some(p) => p.clone(),
            None => adhoc_plan(&m)?,
        };
        let region = check_region(&m, region)?;
        let total: u64 = region.iter().map(|(a, b)| b - a).product();
        // (A virtual dataset's chunks that its mappings reach are read,
        // from its sources; the rest hold the fill value.)
        let WithData {
            coords: chunks,
            versions,
        } = if is_virtual {
            WithData::unversioned(virtual_chunks(&m, &region)?)
        } else {
            self.chunks_with_data(&m)?.inside(&m, &region)
        };
        let acc = Mutex::new((
            plan.leaves
                .iter()
                .map(|l| LeafStats::empty(l.is_float()))
                .collect::<Vec<_>>(),
            plan.functions
                .iter()
                .map(ChunkFunction::empty)
                .collect::<Vec<_>>(),
            0u64,
            0usize,
            0usize,
        ));
        let keeps = m.stats.is_some();
        let sums = Summaries::for_chunks(self.store().as_ref(), &m, chunks.len(), versions)?;
        for_each_task(chunks.len(), false, |i| {
            let c = &chunks[i];
            let ov = overlap(&m, c, &region);
            let lv = live(&m, c);
            let whole = ov.iter().zip(&lv).all(|((a, b), l)| a == &0 && b == l);
            let (leaf_stats, fn_states, n, read) = if whole && keeps && !is_virtual {
                match self.current_record(&m, &plan, c, &sums, false)? {
                    Some((r, read)) => {
                        let n = r
                            .leaves
                            .first()
                            .map_or_else(|| lv.iter().product(), |s| s.count);
                        (r.leaves, r.functions, n, read)
                    }
                    None => return Ok(()),
                }
            } else {
                let runs = box_runs(&m.chunk, &ov);
                let (data, nulls) = if is_virtual {
                    (bytes::Bytes::from(self.virtual_chunk(&m, c, &ov)?), None)
                } else {
                    match self.chunk_for_record(&m, &plan, &m.key(c), c, Some(&runs))? {
                        Some((_, data, nulls)) => (data, nulls),
                        None => return Ok(()),
                    }
                };
                let rows = eval::Rows {
                    data: &data,
                    size: m.elem_size(),
                    runs: &runs,
                };
                let n = rows.len() as u64;
                let mut leaves =
                    h5lake_query::stats::compute(&plan.leaves, &data, m.elem_size(), &runs);
                for (s, k) in leaves.iter_mut().zip(nulls.unwrap_or_default()) {
                    s.null_count = k;
                }
                (
                    leaves,
                    plan.functions
                        .iter()
                        .map(|f| f.compute(&plan.leaves, rows))
                        .collect(),
                    n,
                    true,
                )
            };
            let mut a = acc.lock().unwrap_or_else(|e| e.into_inner());
            for (dst, s) in a.0.iter_mut().zip(&leaf_stats) {
                dst.merge(s);
            }
            for ((dst, s), f) in a.1.iter_mut().zip(&fn_states).zip(&plan.functions) {
                f.merge(dst, s);
            }
            a.2 += n;
            if read {
                a.3 += 1;
            } else {
                a.4 += 1;
            }
            Ok(())
        })?;
        let (mut leaf_stats, mut fn_states, covered, read, from_stats) =
            acc.into_inner().unwrap_or_else(|e| e.into_inner());
        let unwritten = total.saturating_sub(covered);
        if unwritten > 0 {
            for (dst, l) in leaf_stats.iter_mut().zip(&plan.leaves) {
                dst.merge(&LeafStats::repeated(l, &m.fill, unwritten));
            }
            for (dst, f) in fn_states.iter_mut().zip(&plan.functions) {
                f.merge(dst, &f.repeated(&plan.leaves, &m.fill, unwritten));
            }
        }
        Ok((
            plan,
            Aggregate {
                leaves: leaf_stats,
                functions: fn_states,
                chunks_read: read,
                chunks_from_stats: from_stats,
            },
        ))
    }

    /// The elements of `region` (the whole extent when `None`) for which
    /// `condition` holds, in C order; at most `limit` of them. Chunks
    /// whose statistics rule the condition out are not read. A virtual
    /// dataset keeps no statistics: its chunks are read from its sources,
    /// every one the region reaches.
    ///
    /// # Errors
    /// Unknown dataset; a bad condition (with its position); I/O trouble.
    pub fn query(
        &self,
        id: &str,
        condition: &str,
        region: Option<&Region>,
        fields: Option<&[String]>,
        limits: QueryLimits,
    ) -> Result<QueryMatches> {
        let (m, is_virtual) = scan_view(self.dataset(id)?)?;
        let plan = match &m.stats {
            Some(p) => p.clone(),
            None => adhoc_plan(&m)?,
        };
        let node = expr::parse_condition(condition, &plan.leaves)?;
        let region = check_region(&m, region)?;
        let size = m.elem_size();
        let scan = Scan::new(&m, &plan, &node, condition, fields)?;
        let out_size = scan.out.out_size;
        // Elements never written read as the fill value: if it matches,
        // every chunk of the region may hold matches.
        let one = [(0usize, 1usize)];
        let fill_matches = eval::eval(
            &node,
            &plan.leaves,
            eval::Rows {
                data: &m.fill,
                size,
                runs: &one,
            },
        )
        .into_mask(1)[0];
        let per_match = out_size + 8 * m.dims.len();
        // The chunks that hold values of their own, inside the region:
        // stored ones, or of a virtual dataset those its mappings reach; the
        // others hold the fill value alone.
        let with_data = || -> Result<WithData> {
            if is_virtual {
                return Ok(WithData::unversioned(virtual_chunks(&m, &region)?));
            }
            Ok(self.chunks_with_data(&m)?.inside(&m, &region))
        };
        // Of a virtual dataset whose fill value matches: the chunks read
        // from its sources (the others are answered as fill, unread).
        let mut mapped: Option<std::collections::HashSet<Vec<u64>>> = None;
        let mut versions = None;
        let chunks = if fill_matches {
            if limits.max_matches.is_none() || is_virtual {
                let WithData {
                    coords: listed,
                    versions: v,
                } = with_data()?;
                versions = v;
                if limits.max_matches.is_none() {
                    // Every element of the region outside those chunks
                    // matches: an answer that cannot fit is refused before
                    // any is read.
                    let in_region = |c: &Vec<u64>| -> u64 {
                        overlap(&m, c, &region)
                            .iter()
                            .map(|(a, b)| b.saturating_sub(*a))
                            .product()
                    };
                    let stored: u64 = listed.iter().map(in_region).sum();
                    let total: u64 = region.iter().map(|(a, b)| b - a).product();
                    let at_least = total.saturating_sub(stored);
                    if limits
                        .max_bytes
                        .is_some_and(|max| at_least.saturating_mul(per_match as u64) > max as u64)
                    {
                        return Err(too_many(limits.max_bytes));
                    }
                }
                mapped = is_virtual.then(|| listed.into_iter().collect());
            }
            Chunks::Grid(Grid::new(&m, &region))
        } else {
            let listed = with_data()?;
            versions = listed.versions;
            Chunks::Listed(listed.coords)
        };
        let keeps = m.stats.is_some();
        let sums = Summaries::for_chunks(self.store().as_ref(), &m, chunks.len(), versions)?;
        let found = Mutex::new((Vec::new(), 0usize, 0usize));
        let strides = dims_strides(&m.dims);
        let held = std::sync::atomic::AtomicUsize::new(0);
        // With a match limit, chunks are read a batch at a time in C order
        // and what was found is cut back to the first matches after each
        // batch: what is held stays near the answer's size, and the reading
        // stops once no chunk left can hold an earlier match.
        let batch = if limits.max_matches.is_some() {
            QUERY_BATCH
        } else {
            chunks.len().max(1)
        };
        let task = |i: usize| -> Result<()> {
            limits.check_time()?;
            let c = &chunks.get(i);
            if keeps {
                if let Some((rec, _)) = self.current_record(&m, &plan, c, &sums, false)? {
                    let refs: Vec<Option<&LeafStats>> = rec.leaves.iter().map(Some).collect();
                    if !eval::may_match(&node, &plan.leaves, &refs) {
                        found.lock().unwrap_or_else(|e| e.into_inner()).2 += 1;
                        return Ok(());
                    }
                }
            }
            let ov = overlap(&m, c, &region);
            let runs = box_runs(&m.chunk, &ov);
            let origin: Vec<u64> = c.iter().zip(&m.chunk).map(|(a, b)| a * b).collect();
            // The chunk's matches: their dataset-wide C-order indexes
            // (ascending within the chunk) and their elements.
            // (At most the limit of them: past a chunk's first n matches
            // none can be in the answer; and no more than the byte limit
            // allows, counted with every other chunk's as they are found, a
            // stretch of matches at a time.)
            let cap = limits.max_matches.unwrap_or(usize::MAX);
            let tally = |n: usize| -> Result<()> {
                let bytes = n * per_match;
                let total = held.fetch_add(bytes, std::sync::atomic::Ordering::Relaxed) + bytes;
                match limits.max_bytes {
                    Some(max) if total > max => Err(too_many(limits.max_bytes)),
                    _ => Ok(()),
                }
            };
            // `data`: the chunk's elements, or `None` for a chunk never
            // written, whose elements are all the fill value (which matches:
            // every element is a match, none is evaluated).
            let hits_in = |data: Option<&[u8]>| -> Result<Hits> {
                let mask = data.map(|data| {
                    let rows = eval::Rows {
                        data,
                        size: scan.size,
                        runs: &runs,
                    };
                    eval::mask(&scan.node, &scan.leaves, rows)
                });
                let fill: &[u8] = scan.columns.as_ref().map_or(&m.fill, |r| &r.fill);
                let mut hits = Hits::default();
                let mut tallied = 0;
                let mut k = 0;
                'runs: for &(first, count) in &runs {
                    for j in 0..count {
                        if mask.as_ref().is_none_or(|mask| mask[k + j]) {
                            if hits.index.len() == cap {
                                break 'runs;
                            }
                            if hits.index.len() - tallied == COUNTED_MATCHES {
                                tally(COUNTED_MATCHES)?;
                                tallied += COUNTED_MATCHES;
                            }
                            let e = first + j;
                            hits.index
                                .push(global_index(e as u64, &m.chunk, &origin, &strides));
                            let elem = match data {
                                Some(d) => &d[e * scan.size..(e + 1) * scan.size],
                                None => fill,
                            };
                            scan.out.append(elem, &mut hits.elements);
                        }
                    }
                    k += count;
                }
                tally(hits.index.len() - tallied)?;
                Ok(hits)
            };
            let hits = if mapped.as_ref().is_some_and(|s| !s.contains(c)) {
                // (A virtual chunk no mapping reaches: all fill, which matches.)
                hits_in(None)?
            } else if is_virtual {
                hits_in(Some(&self.virtual_chunk(&m, c, &ov)?))?
            } else if let Some(read) = &scan.columns {
                // Only the columns the condition and the answer need.
                let mut hits = None;
                let stored = self.with_columnar_chunk(read, &m.key(c), None, None, |d| {
                    hits = Some(hits_in(Some(d)))
                })?;
                match hits {
                    Some(h) if stored => h?,
                    _ if fill_matches => hits_in(None)?,
                    _ => return Ok(()),
                }
            } else {
                match self.load_chunk_versioned(&m, &m.key(c), false)? {
                    Some((_, d)) => hits_in(Some(&d))?,
                    None if fill_matches => hits_in(None)?,
                    None => return Ok(()),
                }
            };
            let mut f = found.lock().unwrap_or_else(|e| e.into_inner());
            f.0.push(hits);
            f.1 += 1;
            Ok(())
        };
        for start in (0..chunks.len()).step_by(batch) {
            let end = (start + batch).min(chunks.len());
            for_each_task(end - start, false, |i| task(start + i))?;
            let Some(n) = limits.max_matches else {
                continue;
            };
            let mut f = found.lock().unwrap_or_else(|e| e.into_inner());
            let first = first_matches(std::mem::take(&mut f.0), n, out_size);
            held.store(
                first.index.len() * per_match,
                std::sync::atomic::Ordering::Relaxed,
            );
            // A chunk's first element comes later in C order the later the
            // chunk is: once the n-th match is before the next chunk's
            // first element, no chunk left can change the answer.
            let done = first.index.len() >= n
                && end < chunks.len()
                && first.index.last().is_some_and(|&last| {
                    last < first_index_in(&chunks.get(end), &m.chunk, &region, &strides)
                });
            f.0.push(first);
            if done {
                break;
            }
        }
        let (mut groups, read, skipped) = found.into_inner().unwrap_or_else(|e| e.into_inner());
        groups.retain(|h: &Hits| !h.index.is_empty());
        // Along one dimension the chunks' matches do not interleave: the
        // groups in order of their first index are the answer in order.
        // Otherwise (rows of an N-D dataset cross chunks) sort matches.
        let mut order: Vec<(u64, usize, usize)> = Vec::new();
        if m.dims.len() == 1 {
            groups.sort_unstable_by_key(|h| h.index[0]);
        } else {
            for (gi, h) in groups.iter().enumerate() {
                order.extend(h.index.iter().enumerate().map(|(j, &g)| (g, gi, j)));
            }
            order.sort_unstable();
        }
        let total: usize = groups.iter().map(|h| h.index.len()).sum();
        let n = limits.max_matches.map_or(total, |n| n.min(total));
        let mut out = QueryMatches {
            chunks_read: read,
            chunks_skipped: skipped,
            ..Default::default()
        };
        out.elements.reserve(n * out_size);
        out.coords.reserve(n * m.dims.len());
        let mut emit = |g: u64, h: &Hits, j: usize| {
            out.coords.extend(unravel(g, &m.dims));
            out.elements
                .extend_from_slice(&h.elements[j * out_size..(j + 1) * out_size]);
        };
        if m.dims.len() == 1 {
            for (h, j) in groups
                .iter()
                .flat_map(|h| (0..h.index.len()).map(move |j| (h, j)))
                .take(n)
            {
                emit(h.index[j], h, j);
            }
        } else {
            for &(g, gi, j) in order.iter().take(n) {
                emit(g, &groups[gi], j);
            }
        }
        Ok(out)
    }
}

/// What a query reads of each chunk and answers of each match.
struct Scan {
    /// Of a columnar dataset whose condition and answer need only some of
    /// its members: the dataset as if it held just those (read instead).
    columns: Option<DatasetMeta>,
    /// The condition over the members read, their leaves, element size.
    node: expr::Node,
    leaves: Vec<Leaf>,
    size: usize,
    /// Which bytes of a read element make up an answered one.
    out: Projection,
}

impl Scan {
    fn new(
        m: &DatasetMeta,
        plan: &StatsPlan,
        node: &expr::Node,
        condition: &str,
        fields: Option<&[String]>,
    ) -> Result<Self> {
        let whole = |out| Scan {
            columns: None,
            node: node.clone(),
            leaves: plan.leaves.clone(),
            size: m.elem_size(),
            out,
        };
        let Datatype::Compound {
            fields: members, ..
        } = &m.dtype
        else {
            return Ok(whole(Projection::new(&m.dtype, fields)?));
        };
        if !m.is_columnar() || m.link.is_some() {
            return Ok(whole(Projection::new(&m.dtype, fields)?));
        }
        let used: Vec<usize> = node
            .leaves_used()
            .iter()
            .map(|&i| plan.leaves[i].offset)
            .collect();
        let names: Vec<String> = members
            .iter()
            .filter(|f| {
                let end = f.offset + f.dtype.fixed_size().unwrap_or(0);
                used.iter().any(|&o| (f.offset..end).contains(&o))
                    || fields.map_or(true, |n| n.contains(&f.name))
            })
            .map(|f| f.name.clone())
            .collect();
        if names.len() == members.len() || names.is_empty() {
            return Ok(whole(Projection::new(&m.dtype, fields)?));
        }
        let read = m.projected(&names)?;
        let leaves = leaves(&read.dtype);
        Ok(Scan {
            node: expr::parse_condition(condition, &leaves)?,
            leaves,
            size: read.elem_size(),
            out: Projection::new(&read.dtype, fields)?,
            columns: Some(read),
        })
    }
}

impl Domain {
    /// The part `part` (chunk-local bounds) of chunk `c` of the virtual
    /// dataset `m`, read from its sources into a buffer laid out as a
    /// stored chunk (the rest holds the fill value), for a query to scan.
    fn virtual_chunk(&self, m: &DatasetMeta, c: &[u64], part: &Region) -> Result<Vec<u8>> {
        let es = m.elem_size();
        let mut chunk = m.fill_chunk();
        let sel = Selection::Orthogonal(
            c.iter()
                .zip(&m.chunk)
                .zip(part)
                .map(|((&ci, &n), &(a, b))| DimSel::Slice {
                    start: ci * n + a,
                    count: b - a,
                    step: 1,
                })
                .collect(),
        );
        let mut read = vec![0u8; sel.num_elements() as usize * es];
        self.read_with(m, &sel, None, &mut read, true)?;
        // (The part's runs in the chunk come in the part's C order, which
        // is the order it was read in.)
        let mut at = 0;
        for (first, n) in box_runs(&m.chunk, part) {
            chunk[first * es..(first + n) * es].copy_from_slice(&read[at..at + n * es]);
            at += n * es;
        }
        Ok(chunk)
    }
}

/// `m` as queries and aggregates see it (its members of fixed size), and
/// whether it is virtual (its chunks then read from its sources; one with
/// members of variable length cannot be).
fn scan_view(m: Arc<DatasetMeta>) -> Result<(Arc<DatasetMeta>, bool)> {
    let is_virtual = m.virtual_map.is_some();
    if is_virtual && m.dtype.fixed_size().is_none() {
        return Err(EngineError::WrongType(format!(
            "{}: a virtual dataset with members of variable length cannot be queried \
             (query its sources, or read it)",
            m.id
        )));
    }
    Ok((Arc::new(m.stats_view()?), is_virtual))
}

/// Statistics are kept per stored chunk, which a virtual dataset has none
/// of.
fn not_virtual(m: &DatasetMeta) -> Result<()> {
    if m.virtual_map.is_some() {
        return Err(EngineError::WrongType(format!(
            "{} is a virtual dataset: it keeps no statistics and answers no queries of its own \
             (read it, or query its sources)",
            m.id
        )));
    }
    Ok(())
}

/// One chunk's matches.
#[derive(Default)]
struct Hits {
    index: Vec<u64>,
    elements: Vec<u8>,
}

/// Checks that `condition` is a condition over `m`'s fields (what
/// [`Domain::query`] answers), before any data is read.
///
/// # Errors
/// A bad condition, with its position; a type that holds no fields to
/// compare.
pub fn check_condition(m: &DatasetMeta, condition: &str) -> Result<()> {
    let plan = match &m.stats {
        Some(p) => p.clone(),
        None => adhoc_plan(&m.stats_view()?)?,
    };
    expr::parse_condition(condition, &plan.leaves)?;
    Ok(())
}

/// The plan of a dataset that keeps no statistics: its leaves, for
/// queries and aggregates that read everything.
fn adhoc_plan(m: &DatasetMeta) -> Result<Arc<StatsPlan>> {
    if m.dtype.fixed_size().is_none() {
        return Err(EngineError::WrongType(
            "queries and statistics need numbers: a type of fixed size, or a compound with \
             members of fixed size"
                .into(),
        ));
    }
    Ok(Arc::new(StatsPlan {
        leaves: leaves(&m.dtype),
        functions: Vec::new(),
        in_doc: HashMap::new(),
    }))
}

fn plan_of(m: &DatasetMeta) -> Result<Arc<StatsPlan>> {
    m.stats.clone().ok_or_else(|| {
        EngineError::WrongType(format!(
            "dataset {} keeps no statistics (created with stats=False, or of a type without numbers)",
            m.id
        ))
    })
}

/// `region` checked against the extent, or the whole extent.
fn check_region(m: &DatasetMeta, region: Option<&Region>) -> Result<Region> {
    let Some(r) = region else {
        return Ok(m.dims.iter().map(|&d| (0, d)).collect());
    };
    if r.len() != m.dims.len() || r.iter().zip(&m.dims).any(|((a, b), &d)| a > b || *b > d) {
        return Err(EngineError::Invalid(format!(
            "selection {r:?} is not inside the extent {:?}",
            m.dims
        )));
    }
    Ok(r.clone())
}

/// The chunk-local box of chunk `c` that is inside both `region` and the
/// extent.
fn overlap(m: &DatasetMeta, c: &[u64], region: &Region) -> Region {
    c.iter()
        .zip(&m.chunk)
        .zip(region)
        .map(|((&ci, &n), &(lo, hi))| {
            let start = ci * n;
            let a = lo.max(start) - start;
            let b = hi.min(start + n).saturating_sub(start);
            (a.min(b), b)
        })
        .collect()
}

/// Chunks to visit: a list, or every chunk overlapping a region (not
/// held as a list: a sparse dataset's region can span very many).
enum Chunks {
    Listed(Vec<Vec<u64>>),
    Grid(Grid),
}

impl Chunks {
    fn len(&self) -> usize {
        match self {
            Chunks::Listed(l) => l.len(),
            Chunks::Grid(g) => g.len,
        }
    }

    fn get(&self, i: usize) -> Vec<u64> {
        match self {
            Chunks::Listed(l) => l[i].clone(),
            Chunks::Grid(g) => g.get(i),
        }
    }
}

/// The chunks overlapping a region, numbered in C order.
struct Grid {
    /// Per dimension, the first chunk index and how many.
    ranges: Vec<(u64, u64)>,
    len: usize,
}

impl Grid {
    fn new(m: &DatasetMeta, region: &Region) -> Self {
        if region.iter().any(|(a, b)| a >= b) {
            return Self {
                ranges: Vec::new(),
                len: 0,
            };
        }
        let ranges: Vec<(u64, u64)> = region
            .iter()
            .zip(&m.chunk)
            .map(|(&(a, b), &n)| (a / n, (b - 1) / n + 1 - a / n))
            .collect();
        let len = ranges
            .iter()
            .try_fold(1usize, |acc, r| acc.checked_mul(usize::try_from(r.1).ok()?))
            .unwrap_or(usize::MAX);
        Self { ranges, len }
    }

    fn get(&self, mut i: usize) -> Vec<u64> {
        let mut out = vec![0; self.ranges.len()];
        for d in (0..self.ranges.len()).rev() {
            let n = self.ranges[d].1 as usize;
            out[d] = self.ranges[d].0 + (i % n) as u64;
            i /= n;
        }
        out
    }

    fn all(&self) -> Vec<Vec<u64>> {
        (0..self.len).map(|i| self.get(i)).collect()
    }
}

/// The runs of a chunk (dimensions `chunk`) inside the chunk-local box `b`.
fn box_runs(chunk: &[u64], b: &Region) -> Vec<(usize, usize)> {
    let lo: Vec<u64> = b.iter().map(|r| r.0).collect();
    let count: Vec<u64> = b.iter().map(|r| r.1 - r.0).collect();
    let strides = dims_strides(chunk);
    let offset: u64 = lo.iter().zip(&strides).map(|(a, s)| a * s).sum();
    h5lake_query::live_runs(chunk, &count)
        .into_iter()
        .map(|(start, n)| (start + offset as usize, n))
        .collect()
}

fn dims_strides(dims: &[u64]) -> Vec<u64> {
    let mut s = vec![1u64; dims.len()];
    for d in (0..dims.len().saturating_sub(1)).rev() {
        s[d] = s[d + 1] * dims[d + 1].max(1);
    }
    s
}

/// The first `n` matches of `groups` in C order, as one group.
fn first_matches(groups: Vec<Hits>, n: usize, out_size: usize) -> Hits {
    let mut order: Vec<(u64, usize, usize)> = groups
        .iter()
        .enumerate()
        .flat_map(|(gi, h)| h.index.iter().enumerate().map(move |(j, &g)| (g, gi, j)))
        .collect();
    order.sort_unstable();
    order.truncate(n);
    let mut out = Hits::default();
    for (g, gi, j) in order {
        out.index.push(g);
        out.elements
            .extend_from_slice(&groups[gi].elements[j * out_size..(j + 1) * out_size]);
    }
    out
}

/// The C-order index of the first element of the chunk at `coords` that
/// lies in `region`.
fn first_index_in(coords: &[u64], chunk: &[u64], region: &Region, strides: &[u64]) -> u64 {
    coords
        .iter()
        .zip(chunk)
        .zip(region)
        .zip(strides)
        .map(|(((&c, &n), &(lo, _)), &s)| (c * n).max(lo) * s)
        .sum()
}

/// The dataset-wide C-order index of element `e` of the chunk at `origin`.
fn global_index(e: u64, chunk: &[u64], origin: &[u64], strides: &[u64]) -> u64 {
    let mut rest = e;
    let mut g = 0;
    for d in (0..chunk.len()).rev() {
        let i = rest % chunk[d];
        rest /= chunk[d];
        g += (origin[d] + i) * strides[d];
    }
    g
}

fn unravel(mut g: u64, dims: &[u64]) -> Vec<u64> {
    let mut out = vec![0; dims.len()];
    for d in (0..dims.len()).rev() {
        out[d] = g % dims[d].max(1);
        g /= dims[d].max(1);
    }
    out
}

/// An aggregate as JSON: per field its statistics (`count`, `nan_count`,
/// `min`, `max`, `sum`, `mean`), per chunk function its value, and how
/// many chunks were read or answered from statistics.
pub fn aggregate_json(plan: &StatsPlan, a: &Aggregate) -> Value {
    let mut fields = serde_json::Map::new();
    for (l, s) in plan.leaves.iter().zip(&a.leaves) {
        let mut v = s.to_json();
        if l.is_text() {
            // Text has bounds and counts, no sum or mean.
            v["sum"] = Value::Null;
            v["mean"] = Value::Null;
            fields.insert(l.name.clone(), v);
            continue;
        }
        v["mean"] = s.mean().map_or(Value::Null, |x| {
            if x.is_finite() {
                serde_json::json!(x)
            } else {
                serde_json::json!(if x.is_nan() {
                    "nan"
                } else if x > 0.0 {
                    "inf"
                } else {
                    "-inf"
                })
            }
        });
        fields.insert(l.name.clone(), v);
    }
    let mut fns = serde_json::Map::new();
    for (f, s) in plan.functions.iter().zip(&a.functions) {
        fns.insert(f.name.clone(), f.value(s));
    }
    serde_json::json!({
        "fields": fields,
        "functions": fns,
        "chunks_read": a.chunks_read,
        "chunks_from_stats": a.chunks_from_stats,
    })
}

/// The per-chunk table as JSON: for each stored chunk its coordinates,
/// first element and extent, per field its statistics, per chunk function
/// its value.
pub fn chunk_stats_json(plan: &StatsPlan, m: &DatasetMeta, chunks: &[ChunkStats]) -> Value {
    let rows: Vec<Value> = chunks
        .iter()
        .map(|c| {
            let mut fields = serde_json::Map::new();
            for (l, s) in plan.leaves.iter().zip(&c.record.leaves) {
                fields.insert(l.name.clone(), s.to_json());
            }
            let mut fns = serde_json::Map::new();
            for (f, s) in plan.functions.iter().zip(&c.record.functions) {
                fns.insert(f.name.clone(), f.value(s));
            }
            let start: Vec<u64> = c.coords.iter().zip(&m.chunk).map(|(a, b)| a * b).collect();
            serde_json::json!({
                "chunk": c.coords,
                "start": start,
                "shape": c.record.live,
                "fields": fields,
                "functions": fns,
            })
        })
        .collect();
    serde_json::json!({
        "fields": plan.leaves.iter().map(|l| l.name.clone()).collect::<Vec<_>>(),
        "functions": plan.functions.iter().map(|f| serde_json::json!({"name": f.name, "expression": f.text})).collect::<Vec<_>>(),
        "chunks": rows,
    })
}
