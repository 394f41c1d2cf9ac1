//! Deferred metadata: what a domain opened with [`Durability::AtFlush`]
//! changes stays in memory until the domain is flushed (or closed, or the
//! pending changes pass a budget), then goes to the store in one commit.
//!
//! A metadata change made durable on its own costs a document rewrite and a
//! file replace (or an S3 PUT); a group of many members made that cost grow
//! with every member. Here a change edits the parsed document in place, and
//! the commit writes each changed document once.
//!
//! The journal is also the domain's view of the store ([`Store`] is
//! implemented over the store underneath): reads see the pending state,
//! so a program sees its own changes at once. Other processes see them
//! after the commit, as with an HDF5 file before `flush()`.
//!
//! What is kept here:
//! - new objects' documents, and every small object written under a new
//!   object's key prefix (chunks, statistics): no one else knows a new
//!   object's id, so nothing can conflict with them;
//! - edits of existing documents, each with the version and content it
//!   started from;
//! - deletions of existing objects.
//!
//! Everything else (chunks of existing datasets, big chunks) is written at
//! once, after any pending edit of the same object's document, so that a
//! chunk never lands beyond an extent the store does not have yet.
//!
//! Chunks of new datasets also start for the store before the commit, on a
//! thread of the journal's own, once enough are pending: nothing links to
//! their objects yet, so writing them early changes nothing anyone can see,
//! and the I/O overlaps the program's own work instead of adding to the
//! commit. Their statistics records wait for the commit (see stats).
//!
//! The commit's order keeps a crash at any moment harmless: small objects
//! under new prefixes, then new documents (a group only with links to
//! objects already written; the rest of its links follow as an edit), then
//! edits of existing documents, then deletions. A link never leads to an
//! object that is not in the store, and an object is removed only after the
//! links to it are. An edit that meets another writer's change (its
//! conditional put fails) is merged member by member with what the store
//! has now (three-way, against the version it started from), so that
//! nothing either writer did is lost; the same link name made by both is
//! reported, not overwritten.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::ops::Range;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, Weak};

use bytes::Bytes;
use h5lake_store::{
    ListableStore, OpenObject, PutOutcome, ReadableStore, Store, StoreError, Version, Versioned,
    WholeObject, WritableStore,
};
use serde_json::{Map, Value};

use crate::domain::{hard_link_target, move_may_detach, to_bytes};
use crate::json::parse_doc;
use crate::{EngineError, Result};

/// When a domain's metadata changes become durable.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Durability {
    /// Each change is in the store before the call returns (what the REST
    /// server and the loaders use).
    #[default]
    EachCall,
    /// Changes are kept in memory and committed together at `flush()`,
    /// `close()`, or when pending changes pass the journal's budget (what
    /// h5py does with an HDF5 file's metadata cache).
    AtFlush,
}

/// Objects written under a new prefix at most this big are kept until the
/// commit; bigger ones go to the store at once.
const SMALL_OBJECT: usize = 256 << 10;
/// Pending small objects past this many bytes start a commit.
const BLOB_BUDGET: usize = 64 << 20;
/// Pending documents past this many start a commit.
const DOC_BUDGET: usize = 50_000;
/// Records written straight to the store that are summarised before the
/// commit, so that a long run of writes holds few of them in memory.
const RECORDS_OUT_MAX: usize = 4096;
/// Chunks of new datasets kept since the last early batch that start the
/// next one (see the module docs).
const EARLY_BATCH: usize = 64;
/// Chunks one early batch writes at most, so that a commit waiting for it
/// never waits long.
const EARLY_MAX: usize = 256;

static NEXT_VERSION: AtomicU64 = AtomicU64::new(1);

/// A version tag for pending state: unique in the process, never equal to
/// a store's.
fn pending_version() -> Version {
    Version(format!(
        "journal-{}",
        NEXT_VERSION.fetch_add(1, Ordering::Relaxed)
    ))
}

/// The key prefix of the object a key belongs to (`db/<domain>/<kind>/<id>/`),
/// if it belongs to one (the root group's keys do not: its document sits at
/// the domain's top).
fn object_prefix_of(key: &str) -> Option<&str> {
    let b = key.as_bytes();
    // db/ + 17 + / + kind + / + 18 + /
    const LEN: usize = 3 + 17 + 1 + 1 + 1 + 18 + 1;
    (key.len() >= LEN
        && key.starts_with("db/")
        && b[20] == b'/'
        && matches!(b[21], b'g' | b'd' | b't')
        && b[22] == b'/'
        && b[LEN - 1] == b'/')
        .then(|| &key[..LEN])
}

/// The document key of the object whose key prefix is `prefix`.
fn doc_key_under(prefix: &str) -> String {
    let name = match prefix.as_bytes().get(21) {
        Some(b'd') => ".dataset.json",
        Some(b't') => ".datatype.json",
        _ => ".group.json",
    };
    format!("{prefix}{name}")
}

struct PendingDoc {
    key: String,
    doc: Arc<Value>,
    version: Version,
    /// What this edit started from; `None` for an object created since the
    /// last commit.
    base: Option<Base>,
    kind: char,
}

/// What an edit of a stored document started from, for merging it with
/// another writer's change at the commit.
enum Base {
    /// The whole document as the store had it (an edit of unknown extent).
    Snapshot(Version, Arc<Value>),
    /// The store's version and what the edits touched: no copy of the
    /// document, so that the first change of a big group after a commit
    /// does not cost the group's size.
    Touched(Version, Touched),
}

impl Base {
    fn version(&self) -> &Version {
        match self {
            Base::Snapshot(v, _) | Base::Touched(v, _) => v,
        }
    }
}

/// The members (`links`/`attributes` names, in the order first touched;
/// of a link, its value in the stored document, `None` where it had none)
/// and other top-level keys an edit changed.
#[derive(Default)]
pub(crate) struct Touched {
    members: Vec<(&'static str, String, Option<Value>)>,
    seen: HashSet<(&'static str, String)>,
    keys: HashSet<String>,
}

impl Touched {
    /// Applies `f` to `doc`, noting what `touch` names as changed (with
    /// whether the document had each member before its first change) only
    /// when `f` succeeds: a refused edit changed nothing, and must not
    /// replace another writer's version of those members at the merge.
    fn apply<T>(
        &mut self,
        doc: &mut Value,
        touch: &Touch<'_>,
        f: impl FnOnce(&mut Value) -> Result<T>,
    ) -> Result<T> {
        let mut first = Vec::new();
        if let Touch::Members(section, names) = touch {
            for name in *names {
                if !self.seen.contains(&(*section, name.clone())) {
                    // (An attribute is written whole whatever another
                    // writer did: only a link's stored value is kept.)
                    let had = (*section == "links")
                        .then(|| doc.get(*section).and_then(|m| m.get(name)).cloned())
                        .flatten();
                    first.push((*section, name.clone(), had));
                }
            }
        }
        let out = f(doc)?;
        for (section, name, had) in first {
            if self.seen.insert((section, name.clone())) {
                self.members.push((section, name, had));
            }
        }
        if let Touch::Keys(keys) = touch {
            self.keys.extend(keys.iter().map(|k| (*k).to_string()));
        }
        Ok(out)
    }
}

/// Applies `f` to a pending document, through its [`Touched`] record when
/// it keeps one.
fn apply_edit<T>(
    d: &mut PendingDoc,
    touch: &Touch<'_>,
    f: impl FnOnce(&mut Value) -> Result<T>,
) -> Result<T> {
    let doc = Arc::make_mut(&mut d.doc);
    let out = match &mut d.base {
        Some(Base::Touched(_, t)) => t.apply(doc, touch, f),
        _ => f(doc),
    }?;
    d.version = pending_version();
    Ok(out)
}

/// What an edit will change, so that the journal need not keep a copy of
/// the document to merge it later.
#[derive(Clone, Copy)]
pub(crate) enum Touch<'a> {
    /// These names of the `links` or `attributes` member.
    Members(&'static str, &'a [String]),
    /// These top-level keys.
    Keys(&'a [&'a str]),
    /// Anything.
    Unknown,
}

#[derive(Default)]
struct State {
    /// Pending documents by object id.
    docs: HashMap<String, PendingDoc>,
    /// Their store keys, to serve reads of the keys themselves.
    doc_ids: HashMap<String, String>,
    /// Key prefixes of objects created since the last commit.
    new_prefixes: HashSet<String>,
    /// New prefixes some object was written under directly (too big to keep).
    direct: HashSet<String>,
    /// Small objects under new prefixes.
    blobs: BTreeMap<String, (Bytes, Version)>,
    blob_bytes: usize,
    /// Existing objects deleted, by key prefix, in order.
    deleted: Vec<String>,
    deleted_set: HashSet<String>,
    /// An early batch of chunks is being written (the commit waits for it).
    sending: bool,
    /// Chunks kept since the last early batch started.
    kept_since_batch: usize,
    /// The keys the early batch in flight is writing.
    in_flight: HashSet<String>,
    /// Versions the store gave chunks written early, by the pending
    /// version they had here: their statistics records are relabelled with
    /// them at the commit.
    early: HashMap<String, Version>,
    /// Statistics records written to the store since the last commit (key,
    /// bytes), for the commit to put into their summaries.
    records_out: Vec<(String, Vec<u8>)>,
    /// Counts the moments pending state left for the store (documents
    /// written, chunks of an early batch landed, a commit): a read of the
    /// store merged with the pending state, made across one, could find a
    /// key in neither, or an edit start from a version older than this
    /// process made, so it is made again.
    settled: u64,
}

impl State {
    fn is_empty(&self) -> bool {
        self.docs.is_empty() && self.blobs.is_empty() && self.deleted.is_empty()
    }

    fn is_new(&self, prefix: &str) -> bool {
        self.new_prefixes.contains(prefix)
    }
}

/// What a read of a key finds in the journal.
enum Found {
    /// The key's bytes and version, held here.
    Here(Bytes, Version),
    /// The key is gone (its object was deleted, or it was never written
    /// under a new prefix).
    Absent,
    /// Ask the store.
    Store,
}

/// What [`Journal::pending_doc`] finds.
pub(crate) enum PendingLookup {
    Found(Version, Arc<Value>),
    Deleted,
    NotPending,
}

/// A document the commit wrote, for the domain's cache.
pub(crate) type Written = (String, Version, Arc<Value>);

/// Journals by store location and root group: every handle a process has
/// on one domain shares one, as HDF5 shares one file's cache between the
/// handles a process opens on it.
static OPEN: Mutex<Option<HashMap<String, Weak<Journal>>>> = Mutex::new(None);

pub(crate) struct Journal {
    inner: Arc<dyn Store>,
    /// The domain's root group.
    root_id: String,
    state: Mutex<State>,
    /// Signalled when an early batch ends.
    batch_done: Condvar,
    /// The journal itself, for the thread of an early batch.
    me: Weak<Journal>,
}

impl Journal {
    /// The journal of the domain with root `root_id` in `inner`, shared with
    /// the process's other handles on it.
    pub(crate) fn shared(inner: Arc<dyn Store>, root_id: &str) -> Arc<Journal> {
        let key = format!("{}\u{0}{root_id}", inner.location());
        let mut open = OPEN.lock().unwrap_or_else(|e| e.into_inner());
        let open = open.get_or_insert_with(HashMap::new);
        if let Some(j) = open.get(&key).and_then(Weak::upgrade) {
            return j;
        }
        open.retain(|_, w| w.strong_count() > 0);
        let j = Arc::new_cyclic(|me| Journal {
            inner,
            root_id: root_id.to_string(),
            state: Mutex::default(),
            batch_done: Condvar::new(),
            me: me.clone(),
        });
        open.insert(key, Arc::downgrade(&j));
        j
    }

    /// Commits what every domain of this process has pending, on a thread
    /// of its own: what a program that ends without closing its files
    /// needs written. (At the process's exit its main thread's
    /// thread-locals are gone, and writing touches several.) Every journal
    /// is tried; the first failure is returned.
    pub(crate) fn commit_all() -> Result<()> {
        let all: Vec<Arc<Journal>> = {
            let open = OPEN.lock().unwrap_or_else(|e| e.into_inner());
            open.iter()
                .flat_map(|m| m.values())
                .filter_map(Weak::upgrade)
                .collect()
        };
        if all.is_empty() {
            return Ok(());
        }
        let run = move || {
            let mut first = Ok(());
            for j in all {
                if let Err(e) = j.commit() {
                    if first.is_ok() {
                        first = Err(e);
                    }
                }
            }
            first
        };
        match std::thread::Builder::new()
            .name("h5lake-exit".into())
            .spawn(run)
        {
            Ok(t) => t.join().unwrap_or_else(|_| {
                Err(EngineError::Invalid(
                    "writing pending changes at exit failed".into(),
                ))
            }),
            Err(e) => Err(EngineError::Invalid(format!(
                "could not start a thread to write pending changes: {e}"
            ))),
        }
    }

    /// The journal other handles of this process keep on the domain, if any.
    pub(crate) fn existing(inner: &dyn Store, root_id: &str) -> Option<Arc<Journal>> {
        let key = format!("{}\u{0}{root_id}", inner.location());
        let open = OPEN.lock().unwrap_or_else(|e| e.into_inner());
        open.as_ref()?.get(&key).and_then(Weak::upgrade)
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The lock, once no key `hit` picks is being written by an early
    /// batch. What a write or delete of a key decides under this lock
    /// cannot race with an early write of the same key: a later batch only
    /// takes keys still pending here.
    fn lock_landed(&self, hit: impl Fn(&str) -> bool) -> MutexGuard<'_, State> {
        self.lock_when(|st| !(st.sending && st.in_flight.iter().any(|k| hit(k))))
    }

    /// The lock, once `ready` holds (re-checked as each early batch ends).
    fn lock_when(&self, ready: impl Fn(&State) -> bool) -> MutexGuard<'_, State> {
        let mut st = self.lock();
        while !ready(&st) {
            st = self.batch_done.wait(st).unwrap_or_else(|e| e.into_inner());
        }
        st
    }

    /// The pending document of an object, if it has one.
    pub(crate) fn pending_doc(&self, id: &str, prefix: Option<&str>) -> PendingLookup {
        let st = self.lock();
        if let Some(d) = st.docs.get(id) {
            return PendingLookup::Found(d.version.clone(), d.doc.clone());
        }
        match prefix {
            Some(p) if st.deleted_set.contains(p) => PendingLookup::Deleted,
            _ => PendingLookup::NotPending,
        }
    }

    /// Records a new object's document.
    pub(crate) fn create(&self, id: &str, key: String, prefix: String, doc: Value) {
        let mut st = self.lock();
        st.doc_ids.insert(key.clone(), id.to_string());
        st.new_prefixes.insert(prefix);
        st.docs.insert(
            id.to_string(),
            PendingDoc {
                key,
                doc: Arc::new(doc),
                version: pending_version(),
                base: None,
                kind: id.chars().next().unwrap_or('g'),
            },
        );
    }

    /// Applies `f` to the object's pending document, starting one from
    /// `base` (the store's version) when it has none. `touch` says what `f`
    /// changes. `f` must leave the document as it was when it fails.
    pub(crate) fn edit<T>(
        &self,
        id: &str,
        key: &str,
        prefix: Option<&str>,
        touch: Touch<'_>,
        base: impl Fn() -> Result<(Version, Arc<Value>)>,
        f: impl FnOnce(&mut Value) -> Result<T>,
    ) -> Result<T> {
        let mut seen = {
            let mut st = self.lock();
            if prefix.is_some_and(|p| st.deleted_set.contains(p)) {
                return Err(EngineError::NotFound(format!("object {id} not found")));
            }
            if let Some(d) = st.docs.get_mut(id) {
                let unknown_after_touched =
                    matches!(touch, Touch::Unknown) && matches!(d.base, Some(Base::Touched(..)));
                if !unknown_after_touched {
                    return apply_edit(d, &touch, f);
                }
                // An edit of unknown extent needs the whole stored document
                // to merge with: write what is pending first.
                self.write_out(&mut st, id)?;
            }
            st.settled
        };
        // Read outside the lock: other handles keep working meanwhile. A
        // document this journal wrote meanwhile (another handle's flush)
        // may be newer than what was read: read again, or this edit would
        // start from a version older than one this process made.
        let (mut st, version, doc) = loop {
            let (version, doc) = base()?;
            let st = self.lock();
            if st.docs.contains_key(id) || st.settled == seen {
                break (st, version, doc);
            }
            seen = st.settled;
        };
        let d = st.docs.entry(id.to_string()).or_insert_with(|| {
            let base = match touch {
                Touch::Unknown => Base::Snapshot(version, doc.clone()),
                _ => Base::Touched(version, Touched::default()),
            };
            PendingDoc {
                key: key.to_string(),
                doc,
                version: pending_version(),
                base: Some(base),
                kind: id.chars().next().unwrap_or('g'),
            }
        });
        let out = apply_edit(d, &touch, f);
        st.doc_ids.insert(key.to_string(), id.to_string());
        out
    }

    /// Applies `f` to the object's document in the store itself (a
    /// conditional put, retried on conflict with `f` applied again), for a
    /// change computed from what the document holds that another writer
    /// may make at the same moment: rows claimed at a table's end. A
    /// pending copy would let two writers claim the same rows. A new
    /// object's pending document is changed here instead (no one else
    /// knows it). A pending edit of the document is written first, so that
    /// this journal's view of it is the store's.
    ///
    /// Returns `f`'s result and, when the store was written, the version
    /// and document it holds now.
    pub(crate) fn edit_in_store<T>(
        &self,
        id: &str,
        key: &str,
        prefix: Option<&str>,
        mut f: impl FnMut(&mut Value) -> Result<T>,
    ) -> Result<(T, Option<(Version, Arc<Value>)>)> {
        // The lock is held throughout: no handle of this process starts an
        // edit from the version being replaced.
        let mut st = self.lock();
        if prefix.is_some_and(|p| st.deleted_set.contains(p)) {
            return Err(EngineError::NotFound(format!("object {id} not found")));
        }
        if let Some(d) = st.docs.get_mut(id) {
            if d.base.is_none() {
                return apply_edit(d, &Touch::Unknown, f).map(|out| (out, None));
            }
            self.write_out(&mut st, id)?;
        }
        for attempt in 0u32.. {
            let cur = self
                .inner
                .get_versioned(key)?
                .ok_or_else(|| EngineError::NotFound(format!("object {id} not found")))?;
            let mut doc = parse_doc(&cur.data, key)?;
            let out = f(&mut doc)?;
            if let PutOutcome::Written(v) =
                self.inner
                    .put_if_version(key, &to_bytes(&doc), &cur.version)?
            {
                st.settled += 1;
                return Ok((out, Some((v, Arc::new(doc)))));
            }
            crate::domain::backoff(attempt);
        }
        unreachable!("the retry loop only ends by returning")
    }

    /// Writes the pending edit of `id` to the store (merged with what the
    /// store has now) and forgets it; a link name another writer made too
    /// is an error, after the write.
    fn write_out(&self, st: &mut State, id: &str) -> Result<()> {
        let mut clashes = Vec::new();
        // Links moved out to other groups are removed only at the commit,
        // after their new links (see CrossMove): they stay here for now.
        let later: HashSet<String> = if removed_links(&st.docs[id]).is_empty() {
            HashSet::new()
        } else {
            held_names(&st.docs[id], &cross_moves(&st.docs), id)
                .into_keys()
                .collect()
        };
        let rules = Moves {
            later,
            ..Moves::default()
        };
        let d = st.docs.get(id).expect("pending");
        let edit = write_edit(&*self.inner, id, d, &rules, &HashSet::new(), &mut clashes)?;
        let d = st.docs.remove(id).expect("pending");
        st.doc_ids.remove(&d.key);
        if let (Some(v), false) = (&edit.version, rules.later.is_empty()) {
            let gone: HashSet<&String> = rules.later.iter().filter(|n| !edit.refused(n)).collect();
            if !gone.is_empty() {
                st.doc_ids.insert(d.key.clone(), id.to_string());
                st.docs
                    .insert(id.to_string(), removal_of(&d, v, &edit.doc, &gone));
            }
        }
        st.settled += 1;
        if clashes.is_empty() {
            Ok(())
        } else {
            Err(EngineError::AlreadyExists(clashes.join("; ")))
        }
    }

    /// Whether pending changes have passed the budget.
    pub(crate) fn over_budget(&self) -> bool {
        let st = self.lock();
        st.blob_bytes > BLOB_BUDGET || st.docs.len() > DOC_BUDGET
    }

    /// Forgets everything pending (the domain is being deleted).
    pub(crate) fn discard(&self) {
        let mut st = self.lock();
        // An early batch in flight finds its chunks gone and removes them.
        let sending = st.sending;
        let in_flight = std::mem::take(&mut st.in_flight);
        *st = State::default();
        st.sending = sending;
        st.in_flight = in_flight;
    }

    /// Counts a chunk of a new dataset just kept, and starts an early batch
    /// when enough have gathered and none is running.
    fn kept_chunk(&self, st: &mut State, key: &str) {
        if crate::stats::is_record_key(key) {
            return;
        }
        st.kept_since_batch += 1;
        if st.kept_since_batch < EARLY_BATCH || st.sending {
            return;
        }
        let Some(me) = self.me.upgrade() else {
            return;
        };
        st.kept_since_batch = 0;
        st.sending = true;
        let started = std::thread::Builder::new()
            .name("h5lake-early-chunks".into())
            .spawn(move || me.send_early());
        if started.is_err() {
            // No thread: the commit writes them, as without early batches.
            st.sending = false;
        }
    }

    /// Writes the chunks of new datasets pending now, then drops from the
    /// journal those still as written (a chunk rewritten meanwhile stays,
    /// to replace it at the commit). Writes and deletes of a key in flight
    /// wait for the batch ([`Journal::lock_landed`]), so only a journal
    /// discarded meanwhile leaves chunks behind, which are removed again.
    /// A write that fails leaves its chunk pending: the commit tries again
    /// and reports the error.
    fn send_early(&self) {
        /// Tells the journal the batch ended, however it ends (a panic
        /// included): commits and writes of its keys wait for that.
        struct Ended<'a>(&'a Journal);
        impl Drop for Ended<'_> {
            fn drop(&mut self) {
                let mut st = self.0.lock();
                st.sending = false;
                st.in_flight.clear();
                drop(st);
                self.0.batch_done.notify_all();
            }
        }
        let _ended = Ended(self);
        let batch: Vec<(String, Bytes, Version)> = {
            let mut st = self.lock();
            let batch: Vec<_> = st
                .blobs
                .iter()
                .filter(|(k, _)| !crate::stats::is_record_key(k))
                .take(EARLY_MAX)
                .map(|(k, (b, v))| (k.clone(), b.clone(), v.clone()))
                .collect();
            st.in_flight = batch.iter().map(|(k, _, _)| k.clone()).collect();
            batch
        };
        let put = |(k, b, _): &(String, Bytes, Version)| put_blob(&*self.inner, k, b);
        // One thread beside the program's own, unless each write waits on
        // a round trip (S3): then a few at once.
        let written: Vec<_> = if self.inner.prefers_batching() {
            in_parallel(&batch, put)
        } else {
            batch.iter().map(put).collect()
        };
        let mut orphans = Vec::new();
        {
            let mut st = self.lock();
            for ((key, _, pending), result) in batch.iter().zip(written) {
                let Ok(version) = result else { continue };
                let (Some(prefix), Some((_, now))) = (object_prefix_of(key), st.blobs.get(key))
                else {
                    orphans.push(key);
                    continue;
                };
                if now == pending {
                    let (old, _) = st.blobs.remove(key).expect("present");
                    st.blob_bytes -= old.len();
                }
                let prefix = prefix.to_string();
                st.direct.insert(prefix);
                st.early.insert(pending.0.clone(), version);
            }
            st.settled += 1;
        }
        for key in orphans {
            // Best effort: an orphan under an object nothing links to.
            let _ = self.inner.delete(key);
        }
    }

    fn find(&self, key: &str) -> Found {
        Self::found_in(&self.lock(), key)
    }

    fn found_in(st: &State, key: &str) -> Found {
        if st.is_empty() && st.new_prefixes.is_empty() {
            return Found::Store;
        }
        if let Some(id) = st.doc_ids.get(key) {
            let d = &st.docs[id];
            return Found::Here(Bytes::from(to_bytes(&d.doc)), d.version.clone());
        }
        if let Some((b, v)) = st.blobs.get(key) {
            return Found::Here(b.clone(), v.clone());
        }
        match object_prefix_of(key) {
            Some(p) if st.deleted_set.contains(p) => Found::Absent,
            Some(p) if st.is_new(p) && !st.direct.contains(p) => Found::Absent,
            _ => Found::Store,
        }
    }

    /// Writes every pending change to the store (see the module docs for
    /// the order). Returns the documents written. What was written leaves
    /// the journal as it goes, so a failed commit can be retried.
    ///
    /// # Errors
    /// I/O trouble (what was not written stays pending); a link name made
    /// both here and by another writer since ([`EngineError::AlreadyExists`],
    /// after everything else was written: the other writer's link stays).
    pub(crate) fn commit(&self) -> Result<Vec<Written>> {
        let mut st = self.lock_when(|st| !st.sending);
        if st.is_empty() {
            st.new_prefixes.clear();
            st.direct.clear();
            self.summarise(&mut st, Vec::new())?;
            return Ok(Vec::new());
        }
        let inner = &self.inner;
        st.settled += 1;
        self.forget_unlinked_new(&mut st)?;
        // 1. Small objects under new prefixes: chunks, then the statistics
        // records naming them, relabelled with the versions the store gave
        // the chunks.
        let (records, chunks): (Vec<_>, Vec<_>) = st
            .blobs
            .iter()
            .map(|(k, (b, v))| (k, b, v))
            .partition(|(k, _, _)| crate::stats::is_record_key(k));
        let mut versions: HashMap<String, Version> = in_parallel(&chunks, |(k, b, v)| {
            put_blob(&**inner, k, b).map(|new| (v.0.clone(), new))
        })
        .into_iter()
        .collect::<h5lake_store::Result<_>>()?;
        versions.extend(st.early.iter().map(|(k, v)| (k.clone(), v.clone())));
        // The records of a new dataset's first chunks go into its document
        // while they are few (see stats): one object fewer per chunk.
        let mut in_doc: HashMap<String, Vec<(String, Vec<u8>)>> = HashMap::new();
        let mut as_objects = Vec::new();
        let mut doc_bytes: HashMap<&str, usize> = HashMap::new();
        for (k, b, _) in records {
            let b = crate::stats::relabel_record(b, &versions).unwrap_or_else(|| b.to_vec());
            let owner = object_prefix_of(k)
                .and_then(|p| st.doc_ids.get(&doc_key_under(p)))
                .filter(|id| st.docs.get(*id).is_some_and(|d| d.base.is_none()));
            if let Some(id) = owner {
                let used = doc_bytes.entry(id.as_str()).or_default();
                if *used + b.len() <= crate::stats::IN_DOC_BUDGET {
                    *used += b.len();
                    in_doc.entry(id.clone()).or_default().push((k.clone(), b));
                    continue;
                }
            }
            as_objects.push((k, b));
        }
        in_parallel(&as_objects, |(k, b)| put_blob(&**inner, k, b).map(drop))
            .into_iter()
            .collect::<h5lake_store::Result<()>>()?;
        let mut summarised: Vec<(String, Vec<u8>)> = as_objects
            .into_iter()
            .map(|(k, b)| (k.clone(), b))
            .collect();
        for (id, recs) in in_doc {
            let d = st.docs.get_mut(&id).expect("a pending new dataset");
            let doc = Arc::make_mut(&mut d.doc);
            for (k, b) in recs {
                if !crate::stats::keep_in_doc(doc, &k, &b) {
                    put_blob(&**inner, &k, &b)?;
                    summarised.push((k, b));
                }
            }
        }
        st.blobs.clear();
        st.blob_bytes = 0;
        st.early.clear();
        st.kept_since_batch = 0;
        let news: Vec<String> = st.new_prefixes.drain().collect();
        st.direct.extend(news);

        let moves = cross_moves(&st.docs);
        let (made_in, made_to) = if moves.is_empty() {
            (HashMap::new(), HashMap::new())
        } else {
            (
                links_made(&st.docs, |c| {
                    st.docs.get(c).is_some_and(|c| c.base.is_none())
                }),
                links_made(&st.docs, |c| c.starts_with("g-")),
            )
        };

        // 2. New documents: datatypes, then datasets (they may name a new
        // datatype), then groups, newest first (members are usually made
        // after the group holding them), each group with only the links
        // whose objects are in the store already.
        let mut new_ids: Vec<(char, String)> = st
            .docs
            .iter()
            .filter(|(_, d)| d.base.is_none())
            .map(|(id, d)| (d.kind, id.clone()))
            .collect();
        let rank = |k: char| match k {
            't' => 0,
            'd' => 1,
            _ => 2,
        };
        new_ids.sort_by(|a, b| {
            rank(a.0).cmp(&rank(b.0)).then_with(|| {
                let created = |id: &str| {
                    st.docs[id]
                        .doc
                        .get("created")
                        .and_then(Value::as_f64)
                        .unwrap_or(0.0)
                };
                created(&b.1).total_cmp(&created(&a.1))
            })
        });
        let mut unwritten: HashSet<String> = new_ids.iter().map(|(_, id)| id.clone()).collect();
        let mut written: Vec<Written> = Vec::new();
        let new_groups: HashSet<String> = new_ids
            .iter()
            .filter(|(k, _)| *k == 'g')
            .map(|(_, id)| id.clone())
            .collect();
        let (leaves, groups): (Vec<_>, Vec<_>) = new_ids.into_iter().partition(|(k, _)| *k != 'g');
        for kind in ['t', 'd'] {
            let batch: Vec<&String> = leaves
                .iter()
                .filter(|(k, _)| *k == kind)
                .map(|(_, id)| id)
                .collect();
            let done: Vec<Result<(String, Version)>> = in_parallel(&batch, |id| {
                let d = &st.docs[*id];
                put_new(&**inner, &d.key, &d.doc).map(|v| ((*id).clone(), v))
            });
            for r in done {
                let (id, v) = r?;
                unwritten.remove(&id);
                let d = st.docs.remove(&id).expect("pending");
                st.doc_ids.remove(&d.key);
                written.push((id, v, d.doc));
            }
        }
        // Groups in rounds: each round those whose links lead only to
        // objects written already, together; when none is ready (groups
        // linking each other), all that are left, without those links.
        let mut groups: Vec<String> = groups.into_iter().map(|(_, id)| id).collect();
        while !groups.is_empty() {
            let (ready, rest): (Vec<String>, Vec<String>) = groups
                .iter()
                .cloned()
                .partition(|id| !links_to_any(&st.docs[id].doc, &unwritten));
            let round = if ready.is_empty() {
                rest.clone()
            } else {
                ready
            };
            let done: Vec<Result<(String, Version, Option<Value>)>> = in_parallel(&round, |id| {
                let d = &st.docs[id];
                let stripped = without_links_to(&d.doc, &unwritten);
                put_new(&**inner, &d.key, stripped.as_ref().unwrap_or(&d.doc))
                    .map(|v| (id.clone(), v, stripped))
            });
            for r in done {
                let (id, v, stripped) = r?;
                unwritten.remove(&id);
                match stripped {
                    // The rest of its links go in as an edit, below.
                    Some(s) => {
                        st.docs.get_mut(&id).expect("pending").base =
                            Some(Base::Snapshot(v, Arc::new(s)));
                    }
                    None => {
                        let d = st.docs.remove(&id).expect("pending");
                        st.doc_ids.remove(&d.key);
                        written.push((id, v, d.doc));
                    }
                }
            }
            groups.retain(|id| unwritten.contains(id));
        }

        // 3. Edits of documents the store has, merged on conflict, in two
        // passes where links move between groups (see CrossMove): first
        // every edit with the links moved out left where they are, then
        // their removal, where the new link landed and the old one is still
        // as it was. A crash between leaves an object linked twice, never
        // from nowhere.
        let mut clashes = Vec::new();
        let edited: Vec<String> = st.docs.keys().cloned().collect();
        let mut outcomes: HashMap<String, Edited> = HashMap::new();
        let mut waiting: Vec<MovedOut> = Vec::new();
        let mut merges: Vec<(String, String)> = Vec::new();
        for id in edited {
            let d = st.docs.get(&id).expect("pending");
            let held = held_names(d, &moves, &id);
            let rules = Moves {
                later: held.keys().cloned().collect(),
                ..Moves::default()
            };
            let edit = write_edit(&**inner, &id, d, &rules, &new_groups, &mut clashes)?;
            merges.extend(edit.merges.iter().cloned());
            let d = st.docs.remove(&id).expect("pending");
            st.doc_ids.remove(&d.key);
            if let Some(v) = &edit.version {
                written.push((id.clone(), v.clone(), edit.doc.clone()));
                if !held.is_empty() {
                    waiting.push(MovedOut {
                        id: id.clone(),
                        held,
                        pending: d,
                        version: v.clone(),
                        doc: edit.doc.clone(),
                    });
                }
            }
            outcomes.insert(id, edit);
        }
        // The second writes, a group at a time, each once every name its
        // links moved to has its final link: a name emptied by one move and
        // given to another object by a second is held at its first object
        // until that object's new link is in, and the second object's old
        // link stays until then too.
        let mut temporary: Vec<(String, String, Value, &CrossMove)> = Vec::new();
        while !waiting.is_empty() {
            let ready = waiting.iter().position(|w| {
                moves
                    .iter()
                    .filter(|m| m.from == w.id)
                    .all(|m| !waits_on(m, &waiting, &made_in))
            });
            // None ready: moves in a cycle (two links swapped between
            // groups, say). One group goes first, each object it moves out
            // kept linked under a temporary name until its new link is in.
            let forced = ready.is_none();
            let w = waiting.remove(ready.unwrap_or(0));
            let mine: Vec<&CrossMove> = moves.iter().filter(|m| m.from == w.id).collect();
            let first = outcomes.get(&w.id).expect("written in the first pass");
            let source_refused: Vec<bool> = mine.iter().map(|m| first.refused(&m.old)).collect();
            let (mut go, mut stay, mut early) = (Vec::new(), Vec::new(), Vec::new());
            for (m, refused) in mine.into_iter().zip(source_refused) {
                if refused {
                    // Another writer changed the old link meanwhile: theirs
                    // stays, so the new one goes (reported at the first pass).
                    take_back(&**inner, m)?;
                    written.retain(|(x, _, _)| *x != m.to);
                } else if moves_inside_itself(&**inner, &self.root_id, m, &moves, &made_to)? {
                    // (Another writer moved the group it goes to into the
                    // group it moves: of the two, at least one sees the
                    // other's new link here.)
                    take_back(&**inner, m)?;
                    written.retain(|(x, _, _)| *x != m.to);
                    clashes.push(format!(
                        "Unable to move link {:?} in {} to {:?} in {}: another writer moved the \
                         group it goes to inside the group it moves; it was not moved",
                        m.old, m.from, m.new, m.to
                    ));
                    stay.push(m);
                } else if forced && waits_on(m, &waiting, &made_in) {
                    early.push(m);
                } else if links_landed(&m.to, &m.new, &outcomes, &made_in, &mut HashSet::new()) {
                    go.push(m);
                } else {
                    stay.push(m);
                }
            }
            let going: HashSet<&String> = go.iter().chain(&early).map(|m| &m.old).collect();
            let staying: HashSet<&String> = stay.iter().map(|m| &m.old).collect();
            let names: HashSet<&String> = w
                .held
                .iter()
                .filter(|(_, root)| going.contains(root) || staying.contains(root))
                .map(|(n, _)| n)
                .collect();
            if names.is_empty() {
                continue;
            }
            let mut second = removal_of(&w.pending, &w.version, &w.doc, &names);
            for m in &early {
                let name = format!(
                    "h5lake-moving-{}",
                    hard_link_target(&m.link).unwrap_or_default()
                );
                if let Some(links) = Arc::make_mut(&mut second.doc)
                    .get_mut("links")
                    .and_then(Value::as_object_mut)
                {
                    links.insert(name.clone(), m.link.clone());
                    temporary.push((w.id.clone(), name, m.link.clone(), m));
                }
            }
            let rules = Moves {
                out: names
                    .iter()
                    .filter(|n| going.contains(&w.held[n.as_str()]))
                    .map(|n| (*n).clone())
                    .collect(),
                keep: names
                    .iter()
                    .filter(|n| staying.contains(&w.held[n.as_str()]))
                    .map(|n| (*n).clone())
                    .collect(),
                later: HashSet::new(),
            };
            let edit = write_edit(&**inner, &w.id, &second, &rules, &new_groups, &mut clashes)?;
            merges.extend(edit.merges.iter().cloned());
            for m in go.iter().filter(|m| edit.refused(&m.old)) {
                take_back(&**inner, m)?;
                written.retain(|(x, _, _)| *x != m.to);
            }
            written.retain(|(x, _, _)| *x != w.id);
            if let Some(v) = &edit.version {
                written.push((w.id.clone(), v.clone(), edit.doc.clone()));
            }
            // (Later groups ask whether links made here landed: not if
            // either write refused them.)
            let first = outcomes.remove(&w.id).expect("written in the first pass");
            let refused = match (first.refused, edit.refused) {
                (Some(a), Some(b)) => Some(a.union(&b).cloned().collect()),
                _ => None,
            };
            outcomes.insert(
                w.id,
                Edited {
                    version: edit.version,
                    doc: edit.doc,
                    refused,
                    merges: Vec::new(),
                },
            );
        }
        // The temporary names of a cycle's moves go once their new links
        // are in; an object whose new link could not be made keeps its.
        for (group, name, link, m) in temporary {
            if links_landed(&m.to, &m.new, &outcomes, &made_in, &mut HashSet::new()) {
                remove_link_if(&**inner, &group, &name, &link)?;
                written.retain(|(x, _, _)| *x != group);
            } else {
                clashes.push(format!(
                    "Unable to move link {:?} in {}: its new link {:?} in {} could not be made; \
                     the object stays linked as {name:?}",
                    m.old, m.from, m.new, m.to
                ));
            }
        }

        // New groups another writer made too under the same name: what
        // ours holds goes into theirs (workers that each require_group the
        // same group before either flushed write into one group).
        for (ours, theirs) in merges {
            merge_new_group(&**inner, &ours, &theirs, &new_groups, 0, &mut clashes)?;
            written.retain(|(x, _, _)| *x != theirs);
        }

        // 4. Deletions, once no link leads to the objects.
        while let Some(prefix) = st.deleted.first().cloned() {
            inner.delete_prefix(&prefix)?;
            st.deleted.remove(0);
            st.deleted_set.remove(&prefix);
        }
        st.direct.clear();
        self.summarise(&mut st, summarised)?;
        if clashes.is_empty() {
            Ok(written)
        } else {
            Err(EngineError::AlreadyExists(clashes.join("; ")))
        }
    }

    /// Puts `records` and those written to the store since the last commit
    /// into their summaries (see stats), skipping datasets no longer in the
    /// store.
    fn summarise(&self, st: &mut State, mut records: Vec<(String, Vec<u8>)>) -> Result<()> {
        records.append(&mut st.records_out);
        if records.is_empty() {
            return Ok(());
        }
        Ok(self.summarise_in_store(&records)?)
    }

    /// Puts `records` into their summaries in the store, but for datasets
    /// no longer there (their prefix must stay empty).
    fn summarise_in_store(&self, records: &[(String, Vec<u8>)]) -> h5lake_store::Result<()> {
        let inner = &*self.inner;
        crate::stats::summarise(inner, records, |prefix| {
            inner.exists(&doc_key_under(prefix)).unwrap_or(false)
        })
    }

    /// Notes a statistics record written to the store directly, for the
    /// next commit's summaries; many of them are summarised at once.
    fn wrote_record(&self, key: &str, data: &[u8]) -> h5lake_store::Result<()> {
        if !crate::stats::is_record_key(key) {
            return Ok(());
        }
        let mut st = self.lock();
        st.records_out.push((key.to_string(), data.to_vec()));
        if st.records_out.len() < RECORDS_OUT_MAX {
            return Ok(());
        }
        let records = std::mem::take(&mut st.records_out);
        drop(st);
        self.summarise_in_store(&records)
    }

    /// Drops new objects that lost their last link before ever reaching the
    /// store (HDF5 frees an object with its last link): no pending document
    /// links them, and no committed one can (they were never written).
    fn forget_unlinked_new(&self, st: &mut State) -> Result<()> {
        let unlinked: Vec<String> = st
            .docs
            .iter()
            .filter(|(_, d)| {
                d.base.is_none() && d.doc.pointer("/h5lake/unlinked") == Some(&Value::Bool(true))
            })
            .map(|(id, _)| id.clone())
            .collect();
        if unlinked.is_empty() {
            return Ok(());
        }
        let linked: HashSet<&str> = st
            .docs
            .values()
            .filter_map(|d| d.doc.get("links").and_then(Value::as_object))
            .flat_map(|links| links.values().filter_map(hard_link_target))
            .collect();
        let gone: Vec<String> = unlinked
            .into_iter()
            .filter(|id| !linked.contains(id.as_str()))
            .collect();
        for id in gone {
            let d = st.docs.remove(&id).expect("pending");
            st.doc_ids.remove(&d.key);
            let prefix = d.key[..d.key.rfind('/').map_or(0, |i| i + 1)].to_string();
            let keys: Vec<String> = st
                .blobs
                .range(prefix.clone()..)
                .take_while(|(k, _)| k.starts_with(&prefix))
                .map(|(k, _)| k.clone())
                .collect();
            for k in keys {
                if let Some((old, _)) = st.blobs.remove(&k) {
                    st.blob_bytes -= old.len();
                }
            }
            st.new_prefixes.remove(&prefix);
            if st.direct.remove(&prefix) {
                self.inner.delete_prefix(&prefix)?;
            }
        }
        Ok(())
    }

    /// An engine error where the store's trait wants a store error.
    fn as_store_error(&self, e: EngineError) -> StoreError {
        match e {
            EngineError::Store(s) => s,
            other => StoreError::Remote {
                location: self.inner.location(),
                hint: String::new(),
                source: Box::new(other),
            },
        }
    }

    /// Commits, from inside a store call.
    fn commit_for_store(&self) -> h5lake_store::Result<()> {
        self.commit().map(drop).map_err(|e| self.as_store_error(e))
    }

    /// Writes the pending edit of the object owning `key` (if it has one)
    /// before `key` itself is written to the store.
    fn settle_owner(&self, key: &str) -> h5lake_store::Result<()> {
        let Some(prefix) = object_prefix_of(key) else {
            return Ok(());
        };
        let doc_key = doc_key_under(prefix);
        if doc_key == key {
            return Ok(());
        }
        let mut st = self.lock();
        let Some(id) = st
            .doc_ids
            .get(&doc_key)
            .filter(|id| st.docs.get(*id).is_some_and(|d| d.base.is_some()))
            .cloned()
        else {
            return Ok(());
        };
        self.write_out(&mut st, &id)
            .map_err(|e| self.as_store_error(e))
    }

    /// Whether a write of `key` (of `len` bytes) is kept here.
    fn keeps(st: &State, key: &str, len: usize) -> bool {
        len <= SMALL_OBJECT && object_prefix_of(key).is_some_and(|p| st.is_new(p))
    }

    fn after_write(&self) -> h5lake_store::Result<()> {
        let over = {
            let st = self.lock();
            // Chunks written early leave the byte count; the versions kept
            // for them count as documents do.
            st.blob_bytes > BLOB_BUDGET || st.early.len() > DOC_BUDGET
        };
        if over {
            self.commit_for_store()?;
        }
        Ok(())
    }

    fn merged_keys(st: &State, prefix: &str, inner: Vec<String>) -> Vec<String> {
        let hidden = |k: &str| object_prefix_of(k).is_some_and(|p| st.deleted_set.contains(p));
        let mut keys: Vec<String> = inner.into_iter().filter(|k| !hidden(k)).collect();
        keys.extend(
            st.blobs
                .range(prefix.to_string()..)
                .take_while(|(k, _)| k.starts_with(prefix))
                .map(|(k, _)| k.clone()),
        );
        keys.extend(
            st.docs
                .values()
                .filter(|d| d.base.is_none() && d.key.starts_with(prefix))
                .map(|d| d.key.clone()),
        );
        keys.sort();
        keys.dedup();
        keys
    }
}

/// `f` of every item, on a few threads of its own. Not the engine's rayon
/// pool: a commit can start inside a pool task (a write that passed the
/// budget) while holding the journal's lock, and a pool thread waiting
/// for its jobs would pick up another task that needs the lock.
fn in_parallel<T: Sync, V: Send, E: Send + std::fmt::Display + From<h5lake_store::StoreError>>(
    items: &[T],
    f: impl Fn(&T) -> std::result::Result<V, E> + Sync,
) -> Vec<std::result::Result<V, E>> {
    let threads = std::thread::available_parallelism()
        .map_or(2, |n| n.get())
        .clamp(2, 16);
    // Once one write fails the rest are not tried (each failing one would
    // wait out its retries: with the store gone, a flush of many chunks
    // took minutes to say so); they answer with the first failure.
    // (A flag read before each write; the lock only once one failed.)
    let any_failed = std::sync::atomic::AtomicBool::new(false);
    let failed: std::sync::Mutex<Option<String>> = std::sync::Mutex::new(None);
    let one = |item: &T| {
        if any_failed.load(std::sync::atomic::Ordering::Acquire) {
            let first = failed.lock().unwrap_or_else(|e| e.into_inner()).clone();
            return Err(E::from(h5lake_store::StoreError::Io {
                path: String::new(),
                source: std::io::Error::other(format!(
                    "not written: an earlier write failed ({})",
                    first.unwrap_or_default()
                )),
            }));
        }
        let out = f(item);
        if let Err(e) = &out {
            failed
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .get_or_insert_with(|| e.to_string());
            any_failed.store(true, std::sync::atomic::Ordering::Release);
        }
        out
    };
    if items.len() < 8 {
        return items.iter().map(one).collect();
    }
    let per = items.len().div_ceil(threads);
    std::thread::scope(|s| {
        let handles: Vec<_> = items
            .chunks(per)
            .map(|part| {
                let one = &one;
                s.spawn(move || part.iter().map(one).collect::<Vec<_>>())
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().expect("a commit thread panicked"))
            .collect()
    })
}

/// Writes a small object of a new object (a chunk or a statistics record)
/// kept here. Nothing links to the object yet, so the cheap unpublished
/// write serves; an object found under the key already (written early, or
/// by an earlier commit that failed part-way) is replaced.
fn put_blob(inner: &dyn Store, key: &str, data: &[u8]) -> h5lake_store::Result<Version> {
    match inner.put_fresh(key, data)? {
        PutOutcome::Written(v) => Ok(v),
        PutOutcome::Conflict => inner.put(key, data),
    }
}

/// Writes a new object's document, which nothing links to yet. Atomically
/// all the same (not [`WritableStore::put_fresh`]): tools that scan a store
/// read every document they find, linked or not, and a kill must not leave
/// a torn one for them.
fn put_new(inner: &dyn Store, key: &str, doc: &Value) -> Result<Version> {
    let bytes = to_bytes(doc);
    match inner.put_if_absent(key, &bytes)? {
        PutOutcome::Written(v) => Ok(v),
        PutOutcome::Conflict => match inner.get_versioned(key)? {
            // An earlier commit that failed part-way wrote it.
            Some(found) if found.data.as_ref() == bytes.as_slice() => Ok(found.version),
            _ => Err(EngineError::Corrupt(format!(
                "{key} exists already: two objects were given one id"
            ))),
        },
    }
}

/// Whether a group document has a hard link to one of `ids`.
fn links_to_any(doc: &Value, ids: &HashSet<String>) -> bool {
    doc.get("links")
        .and_then(Value::as_object)
        .is_some_and(|links| {
            links
                .values()
                .filter_map(hard_link_target)
                .any(|t| ids.contains(t))
        })
}

/// The group document without hard links to `unwritten` objects, if it has any.
fn without_links_to(doc: &Value, unwritten: &HashSet<String>) -> Option<Value> {
    let links = doc.get("links")?.as_object()?;
    let leads_out = |l: &Value| hard_link_target(l).is_some_and(|t| unwritten.contains(t));
    if !links.values().any(leads_out) {
        return None;
    }
    let mut out = doc.clone();
    out["links"] = Value::Object(
        links
            .iter()
            .filter(|(_, l)| !leads_out(l))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect(),
    );
    Some(out)
}

/// Writes one pending edit with a conditional put against the version it
/// started from, merging with the store's version on conflict. `None` when
/// the object was deleted by another writer meanwhile (said in `clashes`).
fn write_edit(
    inner: &dyn Store,
    id: &str,
    d: &PendingDoc,
    rules: &Moves,
    new_groups: &HashSet<String>,
    clashes: &mut Vec<String>,
) -> Result<Edited> {
    let base = d.base.as_ref().expect("an edit has a base");
    let mut expected = base.version().clone();
    let mut doc = d.doc.clone();
    let mut found = Vec::new();
    // Links to keep as they are must be merged out of ours before it goes.
    let mut stale = rules.holds_back();
    for attempt in 0u32.. {
        if stale {
            let Some(theirs) = inner.get_versioned(&d.key)? else {
                clashes.push(format!(
                    "object {id} was deleted by another writer; this handle's changes to it were not written"
                ));
                return Ok(Edited {
                    version: None,
                    doc,
                    refused: None,
                    merges: Vec::new(),
                });
            };
            let theirs_doc = parse_doc(&theirs.data, &d.key)?;
            found.clear();
            doc = Arc::new(match base {
                Base::Snapshot(_, b) => merge(b, &d.doc, theirs_doc, rules, &mut found),
                Base::Touched(_, t) => merge_touched(t, &d.doc, theirs_doc, rules, &mut found),
            });
            expected = theirs.version;
        }
        match inner.put_if_version(&d.key, &to_bytes(&doc), &expected)? {
            PutOutcome::Written(v) => {
                let refused = found.iter().map(|(name, _)| name.clone()).collect();
                // (A new group of ours met a group of theirs: merged into
                // theirs after, not reported.)
                let merges: Vec<(String, String)> = found
                    .iter()
                    .filter(|(_, clash)| *clash == Clash::BothMade)
                    .filter_map(|(name, _)| {
                        let ours = hard_link_target(d.doc.get("links")?.get(name)?)?;
                        let theirs = hard_link_target(doc.get("links")?.get(name)?)?;
                        (new_groups.contains(ours) && theirs.starts_with("g-") && ours != theirs)
                            .then(|| (ours.to_string(), theirs.to_string()))
                    })
                    .collect();
                found.retain(|(name, clash)| {
                    *clash != Clash::BothMade
                        || !merges.iter().any(|(ours, _)| {
                            d.doc
                                .get("links")
                                .and_then(|l| l.get(name))
                                .and_then(hard_link_target)
                                == Some(ours.as_str())
                        })
                });
                clashes.extend(found.into_iter().map(|(name, clash)| match clash {
                    Clash::BothMade => format!(
                        "Unable to create link (name already exists): {name:?} in {id} was \
                         created by another writer too; theirs was kept"
                    ),
                    Clash::ChangedMeanwhile => format!(
                        "Unable to change link {name:?} in {id}: another writer deleted, moved \
                         or replaced it since this handle read it; theirs was kept"
                    ),
                    Clash::MoveNotMade => format!(
                        "Unable to move link {name:?} in {id}: another writer made the name it \
                         was moved to meanwhile; the link stays where it was"
                    ),
                }));
                return Ok(Edited {
                    version: Some(v),
                    doc,
                    refused: Some(refused),
                    merges,
                });
            }
            PutOutcome::Conflict => {
                stale = true;
                crate::domain::backoff(attempt);
            }
        }
    }
    unreachable!("the retry loop only ends by returning")
}

/// What [`write_edit`] wrote.
struct Edited {
    /// The version written; `None` when another writer deleted the object.
    version: Option<Version>,
    doc: Arc<Value>,
    /// Link names whose change ours made was not written (another writer's
    /// stays); `None` when none was (the object was deleted).
    refused: Option<HashSet<String>>,
    /// New groups of ours whose names another writer gave groups of
    /// theirs: (ours, theirs), to merge.
    merges: Vec<(String, String)>,
}

impl Edited {
    fn refused(&self, name: &str) -> bool {
        self.refused.as_ref().is_none_or(|r| r.contains(name))
    }
}

/// The links of one document moved to or from other documents in a commit
/// (see [`CrossMove`]).
#[derive(Default)]
struct Moves {
    /// Names moved out: removed only where they are still as they were.
    out: HashSet<String>,
    /// Names moved out whose new link could not be made: left as they are.
    keep: HashSet<String>,
    /// Names moved out whose removal waits for a later write (once the new
    /// links are in): left as they are, but reported (and not removed
    /// later) where another writer changed them meanwhile.
    later: HashSet<String>,
}

impl Moves {
    fn holds_back(&self) -> bool {
        !self.keep.is_empty() || !self.later.is_empty()
    }
}

/// A group whose first write at a commit left the links it moves out to
/// other groups in place: what its second write starts from.
struct MovedOut {
    id: String,
    /// The names held at the first write, each with the name moved out
    /// whose fate it follows (itself, or the held name its object goes to).
    held: HashMap<String, String>,
    /// The pending edit (what ours does to those names).
    pending: PendingDoc,
    /// The version and document the first write left.
    version: Version,
    doc: Arc<Value>,
}

/// A link a commit removes from one group and makes in another (a move
/// between groups, or a new hard link made and the old one removed). The
/// group it goes to is written first, so that a crash between the two
/// writes leaves the object linked twice rather than not at all; the old
/// link is removed only where it is still as it was (another writer who
/// moved or deleted it meanwhile keeps their change, and the new link is
/// taken back), and is kept when the new one could not be made.
struct CrossMove {
    from: String,
    old: String,
    to: String,
    new: String,
    /// The old link as stored.
    link: Value,
    /// The new link as ours makes it (told apart from another writer's
    /// link to the same object by its creation time).
    made: Value,
}

/// The links a pending edit removes, or replaces with a link leading
/// elsewhere: (name, the link as stored).
fn removed_links(d: &PendingDoc) -> Vec<(String, Value)> {
    let ours = d.doc.get("links").and_then(Value::as_object);
    let gone = |n: &str, stored: &Value| {
        ours.and_then(|m| m.get(n))
            .is_none_or(|v| crate::domain::link_target(v) != crate::domain::link_target(stored))
    };
    match &d.base {
        Some(Base::Snapshot(_, b)) => b
            .get("links")
            .and_then(Value::as_object)
            .into_iter()
            .flatten()
            .filter(|(n, v)| gone(n, v))
            .map(|(n, v)| (n.clone(), v.clone()))
            .collect(),
        Some(Base::Touched(_, t)) => t
            .members
            .iter()
            .filter_map(|(section, n, had)| match (section, had) {
                (&"links", Some(h)) if gone(n, h) => Some((n.clone(), h.clone())),
                _ => None,
            })
            .collect(),
        None => Vec::new(),
    }
}

/// The edit that finishes the moves out of `names` in `written`, the
/// document a first pass wrote at `version` (see the commit's moves): each
/// name removed, or given the link ours put in its place.
fn removal_of(
    d: &PendingDoc,
    version: &Version,
    written: &Arc<Value>,
    names: &HashSet<&String>,
) -> PendingDoc {
    let mut doc = (**written).clone();
    let ours = d.doc.get("links").and_then(Value::as_object);
    if let Some(links) = doc.get_mut("links").and_then(Value::as_object_mut) {
        for n in names {
            match ours.and_then(|o| o.get(n.as_str())) {
                Some(v) => {
                    links.insert((*n).clone(), v.clone());
                }
                None => {
                    links.shift_remove(n.as_str());
                }
            }
        }
    }
    PendingDoc {
        key: d.key.clone(),
        doc: Arc::new(doc),
        version: pending_version(),
        base: Some(Base::Snapshot(version.clone(), written.clone())),
        kind: d.kind,
    }
}

/// Whether the link `ours` at `name` of a pending edit is one it made: the
/// stored document had none there, or one leading elsewhere (a name
/// emptied by a move and given to another object).
fn link_made(d: &PendingDoc, name: &str, ours: &Value) -> bool {
    let stored = match &d.base {
        None => return true,
        Some(Base::Snapshot(_, b)) => b.get("links").and_then(|m| m.get(name)),
        Some(Base::Touched(_, t)) => {
            match t
                .members
                .iter()
                .find(|(s, m, _)| *s == "links" && m == name)
            {
                Some((_, _, had)) => had.as_ref(),
                // (Not touched: as stored.)
                None => return false,
            }
        }
    };
    stored.is_none_or(|s| crate::domain::link_target(s) != crate::domain::link_target(ours))
}

/// Where the pending documents make hard links to objects `to` accepts:
/// object id -> (group id, link name). Of new groups, for telling whether
/// a new group a move leads into is itself linked (only new ones: a group
/// the store has is in the tree whatever links this commit makes to it;
/// walking up through those, a link back up to the root made a loop, and
/// moves into the root were judged not made).
fn links_made(
    docs: &HashMap<String, PendingDoc>,
    to: impl Fn(&str) -> bool,
) -> HashMap<String, Vec<(String, String)>> {
    let mut made: HashMap<String, Vec<(String, String)>> = HashMap::new();
    for (id, d) in docs {
        let Some(ours) = d.doc.get("links").and_then(Value::as_object) else {
            continue;
        };
        for (name, link) in ours {
            let new_here = link_made(d, name, link);
            let child = link.get("id").and_then(Value::as_str).filter(|c| to(c));
            if let (true, Some(child)) = (new_here, child) {
                made.entry(child.to_string())
                    .or_default()
                    .push((id.clone(), name.clone()));
            }
        }
    }
    made
}

/// The names of the pending edit `d` of group `id` held at its first write
/// at a commit, each with the name moved out whose fate it follows: the
/// names its `moves` move out, and (in turn) names it empties whose object
/// it gives one of those (a rename within the group into a name moved out:
/// until the name is given up, the object keeps its old one).
fn held_names(d: &PendingDoc, moves: &[CrossMove], id: &str) -> HashMap<String, String> {
    let mut held: HashMap<String, String> = moves
        .iter()
        .filter(|m| m.from == id)
        .map(|m| (m.old.clone(), m.old.clone()))
        .collect();
    if held.is_empty() {
        return held;
    }
    let ours = d.doc.get("links").and_then(Value::as_object);
    let removed = removed_links(d);
    loop {
        let mut grew = false;
        for (n, stored) in &removed {
            if held.contains_key(n) {
                continue;
            }
            let to = crate::domain::link_target(stored);
            let root = held.iter().find_map(|(h, root)| {
                ours.and_then(|o| o.get(h))
                    .filter(|v| crate::domain::link_target(v) == to)
                    .map(|_| root.clone())
            });
            if let Some(root) = root {
                held.insert(n.clone(), root);
                grew = true;
            }
        }
        if !grew {
            return held;
        }
    }
}

/// Whether the new link of the move `m` waits for a second write of
/// another group still `waiting`: its name is held there, or the new group
/// it is in is linked only through such a name.
fn waits_on(
    m: &CrossMove,
    waiting: &[MovedOut],
    made_in: &HashMap<String, Vec<(String, String)>>,
) -> bool {
    let held = |g: &str, n: &str| {
        waiting
            .iter()
            .any(|w| w.id == g && w.id != m.from && w.held.contains_key(n))
            .then_some(true)
    };
    up_new_groups(&m.to, &m.new, made_in, &mut HashSet::new(), &held, false)
}

/// Whether the link `name` made in `group` is in the store: not refused at
/// the group's write, and the group itself reachable when it is new
/// (linked by a link that landed).
fn links_landed(
    group: &str,
    name: &str,
    outcomes: &HashMap<String, Edited>,
    made_in: &HashMap<String, Vec<(String, String)>>,
    seen: &mut HashSet<String>,
) -> bool {
    let refused = |g: &str, n: &str| {
        outcomes
            .get(g)
            .is_some_and(|e| e.refused(n))
            .then_some(false)
    };
    up_new_groups(group, name, made_in, seen, &refused, true)
}

/// Asks `here` of the link `name` of `group`, then of the links the commit
/// made to that group when it is new (`made_in`), and so on up: the first
/// answer `here` gives is the answer; a group the store had (no link made
/// to it) answers `at_stored`, and one reached again (a cycle) `false`.
fn up_new_groups(
    group: &str,
    name: &str,
    made_in: &HashMap<String, Vec<(String, String)>>,
    seen: &mut HashSet<String>,
    here: &dyn Fn(&str, &str) -> Option<bool>,
    at_stored: bool,
) -> bool {
    if let Some(answer) = here(group, name) {
        return answer;
    }
    let Some(parents) = made_in.get(group) else {
        return at_stored;
    };
    if !seen.insert(group.to_string()) {
        return false;
    }
    parents
        .iter()
        .any(|(p, n)| up_new_groups(p, n, made_in, seen, here, at_stored))
}

/// The moves between groups among the pending documents' link changes.
fn cross_moves(docs: &HashMap<String, PendingDoc>) -> Vec<CrossMove> {
    // (Of hard links only: a soft or external link is a path, no object
    // it could leave unlinked, and pairing a deleted one with an unrelated
    // new one to the same path would take the new one back.)
    let hard = |v: &Value| {
        v.get("class")
            .and_then(Value::as_str)
            .is_none_or(|c| c == "H5L_TYPE_HARD")
            && v.get("id").is_some_and(Value::is_string)
    };
    let mut removed: Vec<(&str, String, Value)> = Vec::new();
    for (id, d) in docs {
        removed.extend(
            removed_links(d)
                .into_iter()
                .filter(|(_, v)| hard(v))
                .map(|(n, v)| (id.as_str(), n, v)),
        );
    }
    if removed.is_empty() {
        return Vec::new();
    }
    let key = |v: &Value| crate::domain::link_target(v).to_string();
    let mut wanted: HashMap<String, Vec<usize>> = HashMap::new();
    for (k, (_, _, v)) in removed.iter().enumerate() {
        wanted.entry(key(v)).or_default().push(k);
    }
    // (Most links made in a commit lead to new objects: told apart by
    // their id alone, without writing each out.)
    let hard_ids: HashSet<&str> = removed
        .iter()
        .filter_map(|(_, _, v)| v.get("id").and_then(Value::as_str))
        .collect();
    let mut found: Vec<Option<(String, String, Value)>> = vec![None; removed.len()];
    // (Groups the store has first: a link made there is in the tree, where
    // one made in a new group may not be, and an object linked from both
    // moved to the first.)
    let mut order: Vec<(&String, &PendingDoc)> = docs.iter().collect();
    order.sort_by_key(|(_, d)| d.base.is_none());
    for (id, d) in order {
        let Some(ours) = d.doc.get("links").and_then(Value::as_object) else {
            continue;
        };
        for (n, v) in ours {
            if v.get("id")
                .and_then(Value::as_str)
                .is_some_and(|i| !hard_ids.contains(i))
            {
                continue;
            }
            let Some(ks) = wanted.get(&key(v)) else {
                continue;
            };
            if !link_made(d, n, v) {
                continue;
            }
            for &k in ks {
                if removed[k].0 != id.as_str() && found[k].is_none() {
                    found[k] = Some((id.clone(), n.clone(), v.clone()));
                    break;
                }
            }
        }
    }
    removed
        .into_iter()
        .zip(found)
        .filter_map(|((from, old, link), to)| {
            to.map(|(to, new, made)| CrossMove {
                from: from.to_string(),
                old,
                to,
                new,
                link,
                made,
            })
        })
        .collect()
}

/// The key of h5lake's section of a group merged into another writer's
/// group of the same name, naming that group.
pub(crate) const MERGED_INTO: &str = "mergedInto";

/// Links and attributes of `ours`, a group this commit made, put into
/// `theirs`, the group another writer made under the same name meanwhile
/// (names theirs has too stay theirs, reported; new groups of ours met by
/// groups of theirs again merge in turn).
fn merge_new_group(
    inner: &dyn Store,
    ours: &str,
    theirs: &str,
    new_groups: &HashSet<String>,
    depth: usize,
    clashes: &mut Vec<String>,
) -> Result<()> {
    let ours_key = crate::ids::doc_key(ours)?;
    // Ours is marked as leading to theirs first, by a conditional put: an
    // edit of ours made meanwhile (a handle still naming it, another
    // process given its id) is either in what is merged below or, made
    // after the mark, goes to theirs (see `Domain::merged_into`).
    let mut attempt = 0;
    let mine = loop {
        let Some(cur) = inner.get_versioned(&ours_key)? else {
            return Ok(());
        };
        let mine = parse_doc(&cur.data, &ours_key)?;
        let mut marked = mine.clone();
        if let Some(o) = marked.as_object_mut() {
            o.entry("h5lake")
                .or_insert_with(|| Value::Object(serde_json::Map::new()))
                .as_object_mut()
                .map(|h| h.insert(MERGED_INTO.to_string(), Value::String(theirs.to_string())));
        }
        match inner.put_if_version(&ours_key, &to_bytes(&marked), &cur.version)? {
            PutOutcome::Written(_) => break mine,
            PutOutcome::Conflict => crate::domain::backoff(attempt),
        }
        attempt += 1;
    };
    let key = crate::ids::doc_key(theirs)?;
    let (mut nested, mut kept) = (Vec::new(), Vec::new());
    for attempt in 0u32.. {
        let Some(cur) = inner.get_versioned(&key)? else {
            // (Ours stays, unlinked, as it was: it leads nowhere now.)
            inner.put(&ours_key, &to_bytes(&mine))?;
            clashes.push(format!(
                "group {theirs} was deleted by another writer; what this handle put in its \
                 own group of that name ({ours}) is not linked"
            ));
            return Ok(());
        };
        let mut doc = parse_doc(&cur.data, &key)?;
        let Some(t) = doc.as_object_mut() else {
            return Ok(());
        };
        nested.clear();
        kept.clear();
        for section in ["links", "attributes"] {
            let Some(mine) = mine.get(section).and_then(Value::as_object) else {
                continue;
            };
            let there = section_of(t, section);
            for (name, v) in mine {
                match there.get(name) {
                    None => {
                        there.insert(name.clone(), v.clone());
                    }
                    Some(tv) if crate::domain::same_link_target(tv, v) => {}
                    Some(tv) => match (section, hard_link_target(v), hard_link_target(tv)) {
                        ("links", Some(o), Some(t))
                            if new_groups.contains(o) && t.starts_with("g-") =>
                        {
                            nested.push((o.to_string(), t.to_string()));
                        }
                        _ => kept.push(format!("{section} {name:?}")),
                    },
                }
            }
        }
        match inner.put_if_version(&key, &to_bytes(&doc), &cur.version)? {
            PutOutcome::Written(_) => break,
            PutOutcome::Conflict => crate::domain::backoff(attempt),
        }
    }
    if !kept.is_empty() {
        clashes.push(format!(
            "group {theirs} was made by another writer too, and this handle's group of that \
             name went into it, but for {}: theirs were kept",
            kept.join(", ")
        ));
    }
    if depth < 32 {
        for (o, t) in nested {
            merge_new_group(inner, &o, &t, new_groups, depth + 1, clashes)?;
        }
    }
    Ok(())
}

/// Whether `m` may leave the group it moves out of the tree (see
/// [`move_may_detach`]), in the store as it is now (the commit's new links
/// in) and without the links `moves` (this commit's) take out: when every
/// group this commit links the group from (`made`: the groups a link made
/// to each group leads from) is below it. (Of two new links to one object
/// and an old one gone, either may be the one paired with the removal.)
fn moves_inside_itself(
    inner: &dyn Store,
    root: &str,
    m: &CrossMove,
    moves: &[CrossMove],
    made: &HashMap<String, Vec<(String, String)>>,
) -> Result<bool> {
    let Some(group) = hard_link_target(&m.link).filter(|i| i.starts_with("g-")) else {
        return Ok(false);
    };
    let mut docs: HashMap<String, Option<Arc<Value>>> = HashMap::new();
    let mut doc = |id: &str| -> Result<Option<Arc<Value>>> {
        if let Some(d) = docs.get(id) {
            return Ok(d.clone());
        }
        let key = crate::ids::doc_key(id)?;
        let read = match inner.get(&key)? {
            None => None,
            Some(data) => {
                crate::memory::hold(&key, crate::memory::json_cost(&data))?;
                let mut doc = parse_doc(&data, &key)?;
                if let Some(links) = doc.get_mut("links").and_then(Value::as_object_mut) {
                    for out in moves.iter().filter(|o| o.from == id) {
                        if links.get(&out.old) == Some(&out.link) {
                            links.remove(&out.old);
                        }
                    }
                }
                Some(Arc::new(doc))
            }
        };
        docs.insert(id.to_string(), read.clone());
        Ok(read)
    };
    let froms: Vec<&str> = match made.get(group) {
        Some(links) if !links.is_empty() => links.iter().map(|(g, _)| g.as_str()).collect(),
        _ => vec![m.to.as_str()],
    };
    for from in froms {
        if !move_may_detach(group, from, root, &mut doc)? {
            return Ok(false);
        }
    }
    Ok(true)
}

/// Takes back the link a move made in another group when its old link
/// could not be removed, if it is still as made.
fn take_back(inner: &dyn Store, m: &CrossMove) -> Result<()> {
    remove_link_if(inner, &m.to, &m.new, &m.made)
}

/// Removes the link `name` of `group` if it is still `link` exactly (only
/// ours: another writer's link to the same object, made by the same move
/// of theirs, stays).
fn remove_link_if(inner: &dyn Store, group: &str, name: &str, link: &Value) -> Result<()> {
    let key = crate::ids::doc_key(group)?;
    for attempt in 0u32.. {
        let Some(cur) = inner.get_versioned(&key)? else {
            return Ok(());
        };
        let mut doc = parse_doc(&cur.data, &key)?;
        let Some(links) = doc.get_mut("links").and_then(Value::as_object_mut) else {
            return Ok(());
        };
        if links.get(name) != Some(link) {
            return Ok(());
        }
        links.shift_remove(name);
        match inner.put_if_version(&key, &to_bytes(&doc), &cur.version)? {
            PutOutcome::Written(_) => return Ok(()),
            PutOutcome::Conflict => crate::domain::backoff(attempt),
        }
    }
    unreachable!("the retry loop only ends by returning")
}

/// Why a link of ours was not written at a merge.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Clash {
    /// Both writers made the name, differently.
    BothMade,
    /// Ours deleted, moved or replaced a link another writer changed since.
    ChangedMeanwhile,
    /// Ours moved the link to a name another writer made meanwhile.
    MoveNotMade,
}

/// The link `name` at a merge: its stored value when our edits began
/// (`base`), ours, and the store's now (`theirs`, which is updated). Ours
/// goes in only where theirs is still the stored value (or already ours):
/// otherwise both writers changed the name, and theirs stays, reported.
/// (Removing or replacing a name another writer had re-made lost that
/// writer's link without a word.)
fn merge_link(
    name: &str,
    base: Option<&Value>,
    ours: Option<&Value>,
    theirs: &mut Map<String, Value>,
    clashes: &mut Vec<(String, Clash)>,
) {
    if ours == base || theirs.get(name) == ours {
        return;
    }
    if theirs.get(name) != base {
        let clash = if base.is_none() {
            Clash::BothMade
        } else {
            Clash::ChangedMeanwhile
        };
        clashes.push((name.to_string(), clash));
        return;
    }
    match ours {
        Some(v) => {
            theirs.insert(name.to_string(), v.clone());
        }
        None => {
            theirs.shift_remove(name);
        }
    }
}

/// [`merge_link`] for every link ours touched: `(name, stored value when
/// our edits began, ours)`. A link ours made that leads where a link ours
/// removed led (a move) is not made when another writer changed that
/// link meanwhile (moved, deleted or replaced it): two moves of one link
/// would otherwise leave it under both names.
fn merge_links<'a>(
    touched: impl Iterator<Item = (&'a str, Option<&'a Value>, Option<&'a Value>)> + Clone,
    theirs: &mut Map<String, Value>,
    rules: &Moves,
    clashes: &mut Vec<(String, Clash)>,
) {
    let target = crate::domain::link_target;
    let touched = touched.filter(|(name, base, _)| {
        if rules.keep.contains(*name) {
            clashes.push(((*name).to_string(), Clash::MoveNotMade));
            return false;
        }
        if rules.later.contains(*name) {
            if theirs.get(*name) != *base {
                clashes.push(((*name).to_string(), Clash::ChangedMeanwhile));
            }
            return false;
        }
        true
    });
    let touched: Vec<_> = touched.collect();
    let touched = touched.iter().copied();
    let lost: Vec<(&str, Value)> = touched
        .clone()
        .filter_map(|(name, base, ours)| match (base, ours) {
            (Some(b), None) if theirs.get(name) != Some(b) => Some((name, target(b))),
            _ => None,
        })
        .collect();
    // Where links ours made lead that will not be made (the other writer
    // made the name too): a move there is not made, and its source stays.
    let refused: Vec<Value> = touched
        .clone()
        .filter_map(|(name, base, ours)| match (base, ours) {
            (None, Some(v)) if theirs.get(name).is_some_and(|t| t != v) => Some(target(v)),
            _ => None,
        })
        .collect();
    let before = clashes.len();
    for (name, base, ours) in touched {
        match (base, ours) {
            // A link moved to another group: it goes only if it is still
            // what it was, or the move would leave the object where another
            // writer's move or deletion did not (the other group's link is
            // taken back).
            (Some(b), None) if rules.out.contains(name) && theirs.get(name) != Some(b) => {
                clashes.push((name.to_string(), Clash::ChangedMeanwhile));
                continue;
            }
            (None, Some(v)) => {
                let to = target(v);
                if let Some((from, _)) = lost.iter().find(|(_, t)| *t == to) {
                    clashes.push(((*from).to_string(), Clash::ChangedMeanwhile));
                    continue;
                }
            }
            (Some(b), None) if theirs.get(name) == Some(b) && refused.contains(&target(b)) => {
                clashes.push((name.to_string(), Clash::MoveNotMade));
                continue;
            }
            _ => {}
        }
        merge_link(name, base, ours, theirs, clashes);
    }
    // (A move's source is named once.)
    let mut seen = std::collections::HashSet::new();
    let mut k = before;
    while k < clashes.len() {
        if seen.insert(clashes[k].clone()) {
            k += 1;
        } else {
            clashes.remove(k);
        }
    }
}

/// The document's `links` or `attributes` map, made (empty) when it has
/// none or something else under that key.
fn section_of<'a>(doc: &'a mut Map<String, Value>, key: &str) -> &'a mut Map<String, Value> {
    let v = doc
        .entry(key.to_string())
        .or_insert_with(|| Value::Object(Map::new()));
    if !v.is_object() {
        *v = Value::Object(Map::new());
    }
    v.as_object_mut().expect("made an object")
}

/// Three-way merge of a document: what `ours` changed against `base`,
/// applied to `theirs`. Links and attributes merge name by name (a name
/// both sides created differently stays theirs and is reported for links;
/// an attribute is ours, as writing one replaces it); other members are
/// ours where we changed them.
fn merge(
    base: &Value,
    ours: &Value,
    mut theirs: Value,
    rules: &Moves,
    clashes: &mut Vec<(String, Clash)>,
) -> Value {
    let empty = Map::new();
    let (Some(b), Some(o)) = (base.as_object(), ours.as_object()) else {
        return ours.clone();
    };
    let Some(t) = theirs.as_object_mut() else {
        return ours.clone();
    };
    for (k, ov) in o {
        if k == "links" || k == "attributes" {
            let bm = b.get(k).and_then(Value::as_object).unwrap_or(&empty);
            let om = ov.as_object().unwrap_or(&empty);
            let tm = section_of(t, k);
            if k == "links" {
                let touched = om
                    .iter()
                    .map(|(name, v)| (name.as_str(), bm.get(name), Some(v)))
                    .chain(
                        bm.iter()
                            .filter(|(name, _)| !om.contains_key(*name))
                            .map(|(name, bv)| (name.as_str(), Some(bv), None)),
                    );
                merge_links(touched, tm, rules, clashes);
                continue;
            }
            for (name, v) in om {
                if bm.get(name) != Some(v) {
                    tm.insert(name.clone(), v.clone());
                }
            }
            for name in bm.keys() {
                if !om.contains_key(name) {
                    tm.shift_remove(name);
                }
            }
        } else if b.get(k) != Some(ov) {
            t.insert(k.clone(), ov.clone());
        }
    }
    for k in b.keys() {
        if !o.contains_key(k) {
            t.remove(k);
        }
    }
    theirs
}

/// What `ours` did to the members and keys in `touched`, applied to
/// `theirs` (the store's document now). A link both made differently stays
/// theirs and is reported.
fn merge_touched(
    touched: &Touched,
    ours: &Value,
    mut theirs: Value,
    rules: &Moves,
    clashes: &mut Vec<(String, Clash)>,
) -> Value {
    let Some(t) = theirs.as_object_mut() else {
        return ours.clone();
    };
    let links = touched
        .members
        .iter()
        .filter(|(section, _, _)| *section == "links")
        .map(|(_, name, had)| {
            let mine = ours.get("links").and_then(|m| m.get(name));
            (name.as_str(), had.as_ref(), mine)
        });
    if touched.members.iter().any(|(s, _, _)| *s == "links") {
        merge_links(links, section_of(t, "links"), rules, clashes);
    }
    for (section, name, _) in &touched.members {
        if *section == "links" {
            continue;
        }
        let mine = ours.get(*section).and_then(|m| m.get(name));
        let tm = section_of(t, section);
        match mine {
            Some(v) => {
                tm.insert(name.clone(), v.clone());
            }
            None => {
                tm.shift_remove(name);
            }
        }
    }
    for key in touched
        .keys
        .iter()
        .map(String::as_str)
        .chain(["lastModified"])
    {
        match ours.get(key) {
            Some(v) => {
                t.insert(key.to_string(), v.clone());
            }
            None => {
                t.remove(key);
            }
        }
    }
    theirs
}

fn whole(data: &Bytes, offset: u64, len: u64) -> Bytes {
    let n = data.len() as u64;
    let start = offset.min(n);
    let end = offset.saturating_add(len).min(n);
    data.slice(start as usize..end as usize)
}

impl ReadableStore for Journal {
    fn get(&self, key: &str) -> h5lake_store::Result<Option<Bytes>> {
        match self.find(key) {
            Found::Here(b, _) => Ok(Some(b)),
            Found::Absent => Ok(None),
            Found::Store => self.inner.get(key),
        }
    }

    fn get_versioned(&self, key: &str) -> h5lake_store::Result<Option<Versioned>> {
        match self.find(key) {
            Found::Here(data, version) => Ok(Some(Versioned { data, version })),
            Found::Absent => Ok(None),
            Found::Store => self.inner.get_versioned(key),
        }
    }

    fn get_range(&self, key: &str, offset: u64, len: u64) -> h5lake_store::Result<Option<Bytes>> {
        match self.find(key) {
            Found::Here(b, _) => Ok(Some(whole(&b, offset, len))),
            Found::Absent => Ok(None),
            Found::Store => self.inner.get_range(key, offset, len),
        }
    }

    fn exists(&self, key: &str) -> h5lake_store::Result<bool> {
        match self.find(key) {
            Found::Here(..) => Ok(true),
            Found::Absent => Ok(false),
            Found::Store => self.inner.exists(key),
        }
    }

    fn get_into(&self, key: &str, buf: &mut Vec<u8>) -> h5lake_store::Result<Option<Version>> {
        match self.find(key) {
            Found::Here(b, v) => {
                buf.clear();
                buf.extend_from_slice(&b);
                Ok(Some(v))
            }
            Found::Absent => Ok(None),
            Found::Store => self.inner.get_into(key, buf),
        }
    }

    fn get_scattered(
        &self,
        key: &str,
        total_len: u64,
        runs: &mut [(u64, &mut [u8])],
    ) -> h5lake_store::Result<Option<bool>> {
        match self.find(key) {
            Found::Here(data, _) => Ok(Some(h5lake_store::scatter(&data, total_len, runs))),
            Found::Absent => Ok(None),
            Found::Store => self.inner.get_scattered(key, total_len, runs),
        }
    }

    fn version(&self, key: &str) -> h5lake_store::Result<Option<Version>> {
        match self.find(key) {
            Found::Here(_, v) => Ok(Some(v)),
            Found::Absent => Ok(None),
            Found::Store => self.inner.version(key),
        }
    }

    fn get_many(&self, keys: &[String]) -> h5lake_store::Result<Vec<Option<Versioned>>> {
        let found: Vec<Found> = keys.iter().map(|k| self.find(k)).collect();
        let ask: Vec<String> = keys
            .iter()
            .zip(&found)
            .filter(|(_, f)| matches!(f, Found::Store))
            .map(|(k, _)| k.clone())
            .collect();
        let mut from_store = self.inner.get_many(&ask)?.into_iter();
        Ok(found
            .into_iter()
            .map(|f| match f {
                Found::Here(data, version) => Some(Versioned { data, version }),
                Found::Absent => None,
                Found::Store => from_store.next().flatten(),
            })
            .collect())
    }

    fn get_ranges(
        &self,
        key: &str,
        ranges: &[Range<u64>],
    ) -> h5lake_store::Result<Option<Vec<Bytes>>> {
        match self.find(key) {
            Found::Here(b, _) => Ok(Some(
                ranges
                    .iter()
                    .map(|r| whole(&b, r.start, r.end.saturating_sub(r.start)))
                    .collect(),
            )),
            Found::Absent => Ok(None),
            Found::Store => self.inner.get_ranges(key, ranges),
        }
    }

    fn open_object(
        &self,
        key: &str,
        tail: u64,
    ) -> h5lake_store::Result<Option<Box<dyn OpenObject + '_>>> {
        match self.find(key) {
            Found::Here(b, v) => Ok(Some(Box::new(WholeObject::new(b, v, tail)))),
            Found::Absent => Ok(None),
            Found::Store => self.inner.open_object(key, tail),
        }
    }

    fn prefers_batching(&self) -> bool {
        self.inner.prefers_batching()
    }
}

impl WritableStore for Journal {
    fn put(&self, key: &str, data: &[u8]) -> h5lake_store::Result<Version> {
        {
            let mut st = self.lock_landed(|k| k == key);
            if Self::keeps(&st, key, data.len()) {
                let v = pending_version();
                st.blob_bytes += data.len();
                if let Some((old, _)) = st
                    .blobs
                    .insert(key.to_string(), (Bytes::copy_from_slice(data), v.clone()))
                {
                    st.blob_bytes -= old.len();
                }
                self.kept_chunk(&mut st, key);
                drop(st);
                self.after_write()?;
                return Ok(v);
            }
            if let Some(p) = object_prefix_of(key) {
                if st.is_new(p) {
                    let p = p.to_string();
                    if let Some((old, _)) = st.blobs.remove(key) {
                        st.blob_bytes -= old.len();
                    }
                    st.direct.insert(p);
                }
            }
        }
        self.settle_owner(key)?;
        let v = self.inner.put(key, data)?;
        self.wrote_record(key, data)?;
        Ok(v)
    }

    fn put_if_absent(&self, key: &str, data: &[u8]) -> h5lake_store::Result<PutOutcome> {
        {
            let mut st = self.lock_landed(|k| k == key);
            if st.blobs.contains_key(key) || st.doc_ids.contains_key(key) {
                return Ok(PutOutcome::Conflict);
            }
            let checked_store = object_prefix_of(key).is_some_and(|p| st.direct.contains(p));
            if Self::keeps(&st, key, data.len()) && !checked_store {
                let v = pending_version();
                st.blob_bytes += data.len();
                st.blobs
                    .insert(key.to_string(), (Bytes::copy_from_slice(data), v.clone()));
                self.kept_chunk(&mut st, key);
                drop(st);
                self.after_write()?;
                return Ok(PutOutcome::Written(v));
            }
            if let Some(p) = object_prefix_of(key) {
                if st.is_new(p) {
                    let p = p.to_string();
                    st.direct.insert(p);
                }
            }
        }
        self.settle_owner(key)?;
        let done = self.inner.put_if_absent(key, data)?;
        if matches!(done, PutOutcome::Written(_)) {
            self.wrote_record(key, data)?;
        }
        Ok(done)
    }

    fn put_if_version(
        &self,
        key: &str,
        data: &[u8],
        expected: &Version,
    ) -> h5lake_store::Result<PutOutcome> {
        {
            let mut st = self.lock_landed(|k| k == key);
            if let Some((_, v)) = st.blobs.get(key) {
                if v != expected {
                    return Ok(PutOutcome::Conflict);
                }
                if data.len() <= SMALL_OBJECT {
                    let v = pending_version();
                    let (old, _) = st
                        .blobs
                        .insert(key.to_string(), (Bytes::copy_from_slice(data), v.clone()))
                        .expect("present");
                    st.blob_bytes = st.blob_bytes + data.len() - old.len();
                    drop(st);
                    self.after_write()?;
                    return Ok(PutOutcome::Written(v));
                }
                // Grown too big to keep: to the store, unconditionally (no
                // one else can know this key).
                let (old, _) = st.blobs.remove(key).expect("present");
                st.blob_bytes -= old.len();
                if let Some(p) = object_prefix_of(key) {
                    let p = p.to_string();
                    st.direct.insert(p);
                }
                drop(st);
                return self.inner.put(key, data).map(PutOutcome::Written);
            }
            if st.doc_ids.contains_key(key) {
                return Ok(PutOutcome::Conflict);
            }
            if let Some(p) = object_prefix_of(key) {
                if st.is_new(p) && !st.direct.contains(p) {
                    return Ok(PutOutcome::Conflict);
                }
            }
        }
        self.settle_owner(key)?;
        let done = self.inner.put_if_version(key, data, expected)?;
        if matches!(done, PutOutcome::Written(_)) {
            self.wrote_record(key, data)?;
        }
        Ok(done)
    }

    fn patch(
        &self,
        key: &str,
        len: u64,
        edits: &[(u64, &[u8])],
    ) -> h5lake_store::Result<Option<Version>> {
        {
            let mut st = self.lock_landed(|k| k == key);
            if let Some((data, _)) = st.blobs.get(key) {
                h5lake_store::check_patch(key, len, edits)?;
                if data.len() as u64 != len {
                    return Ok(None);
                }
                let mut copy = data.to_vec();
                for (off, e) in edits {
                    copy[*off as usize..*off as usize + e.len()].copy_from_slice(e);
                }
                let v = pending_version();
                st.blobs
                    .insert(key.to_string(), (Bytes::from(copy), v.clone()));
                return Ok(Some(v));
            }
            if st.doc_ids.contains_key(key) {
                return Ok(None);
            }
        }
        self.settle_owner(key)?;
        self.inner.patch(key, len, edits)
    }

    fn delete(&self, key: &str) -> h5lake_store::Result<()> {
        {
            let mut st = self.lock_landed(|k| k == key);
            if let Some((old, _)) = st.blobs.remove(key) {
                st.blob_bytes -= old.len();
            }
            match object_prefix_of(key) {
                Some(p) if st.is_new(p) && !st.direct.contains(p) => return Ok(()),
                _ => {}
            }
        }
        self.settle_owner(key)?;
        self.inner.delete(key)
    }

    fn delete_prefix(&self, prefix: &str) -> h5lake_store::Result<()> {
        let is_object = object_prefix_of(prefix).is_some_and(|p| p.len() == prefix.len());
        if !is_object {
            self.commit_for_store()?;
            return self.inner.delete_prefix(prefix);
        }
        let mut st = self.lock_landed(|k| k.starts_with(prefix));
        if let Some(id) = st.doc_ids.remove(&doc_key_under(prefix)) {
            st.docs.remove(&id);
        }
        let keys: Vec<String> = st
            .blobs
            .range(prefix.to_string()..)
            .take_while(|(k, _)| k.starts_with(prefix))
            .map(|(k, _)| k.clone())
            .collect();
        for k in keys {
            if let Some((old, _)) = st.blobs.remove(&k) {
                st.blob_bytes -= old.len();
            }
        }
        if st.new_prefixes.remove(prefix) {
            // Never in the store, except what went there directly.
            if st.direct.remove(prefix) {
                drop(st);
                return self.inner.delete_prefix(prefix);
            }
            return Ok(());
        }
        if st.deleted_set.insert(prefix.to_string()) {
            st.deleted.push(prefix.to_string());
        }
        Ok(())
    }
}

impl ListableStore for Journal {
    fn list_prefix(&self, prefix: &str) -> h5lake_store::Result<Vec<String>> {
        self.merged_read(
            || self.inner.list_prefix(prefix),
            |st, inner| Self::merged_keys(st, prefix, inner),
        )
    }

    fn list_dir(&self, prefix: &str) -> h5lake_store::Result<(Vec<String>, Vec<String>)> {
        self.merged_read(
            || self.inner.list_dir(prefix),
            |st, (keys, dirs)| Self::merged_dir(st, prefix, keys, dirs),
        )
    }
}

impl Journal {
    /// `read` of the store, merged by `merge` with the pending state. A
    /// key that left the journal for the store while the store was read
    /// would be in neither: then it is read again (and after a few tries,
    /// with the journal locked, which holds every other handle up).
    fn merged_read<T, U>(
        &self,
        read: impl Fn() -> h5lake_store::Result<T>,
        merge: impl FnOnce(&State, T) -> U,
    ) -> h5lake_store::Result<U> {
        for _ in 0..8 {
            let before = self.lock().settled;
            let got = read()?;
            let st = self.lock();
            if st.settled == before {
                return Ok(merge(&st, got));
            }
        }
        let st = self.lock();
        let got = read()?;
        Ok(merge(&st, got))
    }

    fn merged_dir(
        st: &State,
        prefix: &str,
        keys: Vec<String>,
        dirs: Vec<String>,
    ) -> (Vec<String>, Vec<String>) {
        let hidden = |k: &str| object_prefix_of(k).is_some_and(|p| st.deleted_set.contains(p));
        let mut keys: Vec<String> = keys.into_iter().filter(|k| !hidden(k)).collect();
        let mut dirs: Vec<String> = dirs
            .into_iter()
            .filter(|d| !st.deleted_set.contains(d.as_str()))
            .collect();
        let pending = st
            .blobs
            .range(prefix.to_string()..)
            .take_while(|(k, _)| k.starts_with(prefix))
            .map(|(k, _)| k.as_str())
            .chain(
                st.docs
                    .values()
                    .filter(|d| d.base.is_none() && d.key.starts_with(prefix))
                    .map(|d| d.key.as_str()),
            );
        for k in pending {
            let rest = &k[prefix.len()..];
            match rest.find('/') {
                Some(i) => dirs.push(k[..prefix.len() + i + 1].to_string()),
                None => keys.push(k.to_string()),
            }
        }
        keys.sort();
        keys.dedup();
        dirs.sort();
        dirs.dedup();
        (keys, dirs)
    }
}

impl Store for Journal {
    fn location(&self) -> String {
        self.inner.location()
    }

    fn list_sizes(&self, prefix: &str) -> h5lake_store::Result<Vec<(String, u64)>> {
        self.merged_read(
            || self.inner.list_sizes(prefix),
            |st, stored| {
                let keys =
                    Self::merged_keys(st, prefix, stored.iter().map(|(k, _)| k.clone()).collect());
                let sizes: HashMap<String, u64> = stored.into_iter().collect();
                keys.into_iter()
                    .filter_map(|k| {
                        let size = match Self::found_in(st, &k) {
                            Found::Here(b, _) => Some(b.len() as u64),
                            Found::Absent => None,
                            Found::Store => sizes.get(&k).copied(),
                        };
                        size.map(|s| (k, s))
                    })
                    .collect()
            },
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_after_a_failed_one_are_not_tried() {
        // (With the store gone, each write waited out its retries: a flush
        // of many chunks took minutes to fail.)
        let tried = std::sync::atomic::AtomicUsize::new(0);
        let items: Vec<usize> = (0..64).collect();
        let out: Vec<Result<usize>> = in_parallel(&items, |&i| {
            tried.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            std::thread::sleep(std::time::Duration::from_millis(20));
            Err(EngineError::Invalid(format!("store gone at {i}")))
        });
        assert_eq!(out.len(), items.len());
        // At most one write per thread was under way when the first failed.
        let threads = std::thread::available_parallelism().map_or(2, |n| n.get());
        let tried = tried.into_inner();
        assert!(tried <= threads.clamp(2, 16), "{tried} writes tried");
        for r in &out {
            let e = r.as_ref().unwrap_err().to_string();
            assert!(e.contains("store gone"), "{e}");
        }
    }
    use serde_json::json;

    #[test]
    fn object_prefixes() {
        let k = "db/e5c9a50a-2435de48/d/12ab-34cd56-78ef90/0_1";
        assert_eq!(
            object_prefix_of(k),
            Some("db/e5c9a50a-2435de48/d/12ab-34cd56-78ef90/")
        );
        assert_eq!(object_prefix_of("db/e5c9a50a-2435de48/.group.json"), None);
        assert_eq!(object_prefix_of(".domain.json"), None);
    }

    #[test]
    fn merge_keeps_both_writers_links_and_reports_a_shared_name() {
        let base = json!({"links": {"a": {"id": 1}, "gone": {"id": 2}}, "attributes": {}, "x": 1});
        let ours = json!({"links": {"a": {"id": 1}, "mine": {"id": 3}, "both": {"id": 4}}, "attributes": {"t": 1}, "x": 2});
        let theirs = json!({"links": {"a": {"id": 1}, "gone": {"id": 2}, "theirs": {"id": 5}, "both": {"id": 6}}, "attributes": {"u": 2}, "x": 1});
        let mut clashes = Vec::new();
        let m = merge(&base, &ours, theirs, &Moves::default(), &mut clashes);
        let names: Vec<&String> = m["links"].as_object().unwrap().keys().collect();
        assert_eq!(names, ["a", "theirs", "both", "mine"]);
        assert_eq!(m["links"]["both"]["id"], 6);
        assert_eq!(clashes, [("both".to_string(), Clash::BothMade)]);
        assert_eq!(m["attributes"], json!({"u": 2, "t": 1}));
        assert_eq!(m["x"], 2);
    }

    #[test]
    fn a_link_another_writer_changed_meanwhile_is_theirs_whatever_ours_did() {
        // base: x and y; another writer re-made x and deleted y meanwhile
        let base = json!({"links": {"x": {"id": 1}, "y": {"id": 2}, "z": {"id": 3}}});
        let theirs = json!({"links": {"x": {"id": 9}, "z": {"id": 3}}});
        let cases = [
            // ours deleted x: their new x stays, reported
            (
                json!({"links": {"y": {"id": 2}, "z": {"id": 3}}}),
                json!({"x": {"id": 9}, "z": {"id": 3}}),
                1,
            ),
            // ours moved x to w: the move is not made, their x stays, reported
            (
                json!({"links": {"y": {"id": 2}, "z": {"id": 3}, "w": {"id": 1, "created": 7}}}),
                json!({"x": {"id": 9}, "z": {"id": 3}}),
                1,
            ),
            // ours moved z to w (theirs left z as it was): made
            (
                json!({"links": {"x": {"id": 1}, "y": {"id": 2}, "w": {"id": 3, "created": 7}}}),
                json!({"x": {"id": 9}, "w": {"id": 3, "created": 7}}),
                0,
            ),
            // ours replaced x
            (
                json!({"links": {"x": {"id": 5}, "y": {"id": 2}, "z": {"id": 3}}}),
                json!({"x": {"id": 9}, "z": {"id": 3}}),
                1,
            ),
            // ours deleted y, which they deleted too; and z, which they kept as it was
            (
                json!({"links": {"x": {"id": 1}}}),
                json!({"x": {"id": 9}}),
                0,
            ),
        ];
        // ours moved z to v, a name they made meanwhile: z stays, reported
        let theirs_v =
            json!({"links": {"x": {"id": 1}, "y": {"id": 2}, "z": {"id": 3}, "v": {"id": 8}}});
        let ours_v =
            json!({"links": {"x": {"id": 1}, "y": {"id": 2}, "v": {"id": 3, "created": 7}}});
        let mut clashes = Vec::new();
        let m = merge(
            &base,
            &ours_v,
            theirs_v.clone(),
            &Moves::default(),
            &mut clashes,
        );
        assert_eq!(m["links"], theirs_v["links"]);
        assert_eq!(
            clashes,
            [
                ("v".to_string(), Clash::BothMade),
                ("z".to_string(), Clash::MoveNotMade)
            ]
        );
        for (ours, want, n) in cases {
            let mut clashes = Vec::new();
            let m = merge(
                &base,
                &ours,
                theirs.clone(),
                &Moves::default(),
                &mut clashes,
            );
            assert_eq!(m["links"], want, "{ours}");
            assert_eq!(clashes.len(), n, "{ours}: {clashes:?}");
            assert!(clashes
                .iter()
                .all(|(name, c)| name == "x" && *c == Clash::ChangedMeanwhile));
            // the same through what the edits touched, without a snapshot
            let mut touched = Touched::default();
            for name in ["x", "y", "z", "w"] {
                touched
                    .members
                    .push(("links", name.to_string(), base["links"].get(name).cloned()));
            }
            let mut clashes = Vec::new();
            let m = merge_touched(
                &touched,
                &ours,
                theirs.clone(),
                &Moves::default(),
                &mut clashes,
            );
            assert_eq!(m["links"], want, "touched {ours}");
            assert_eq!(clashes.len(), n, "touched {ours}");
        }
    }
}
