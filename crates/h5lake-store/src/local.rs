//! A store on a local directory: key `a/b/c` is the file `<root>/a/b/c`.
//!
//! Why it is built this way:
//!
//! * **Atomic writes.** Every write goes to a fresh temp file in the key's own
//!   directory (same filesystem, so `rename` is atomic) and is then published
//!   with `rename` (replace) or `renameat2(RENAME_NOREPLACE)` / `link`
//!   (create-if-absent). A reader therefore opens either the old inode or the
//!   new one, and a crash leaves at worst an orphaned temp file, never a torn
//!   object. Temp files are named `.h5lake-tmp-<hex>.tmp`; listings hide them
//!   and keys of that shape are rejected so the two can never be confused.
//!
//! * **Versions.** Because every write publishes a new inode, the inode number
//!   changes on each write — except when the filesystem recycles a just-freed
//!   inode, which ext4 happily does. To make such an ABA invisible, each write
//!   stamps its temp file's mtime with the current second plus *random*
//!   nanoseconds; the version is `ino-mtime_s-mtime_ns-size`. ctime is
//!   deliberately left out: the kernel bumps it on link/unlink of the temp
//!   name, which would change the version with no write. Versions are read via
//!   `fstat` on the same descriptor the bytes come from, so they always match.
//!
//! * **Conditional replace.** Local filesystems have no compare-and-swap on
//!   content, so `put_if_version` takes an exclusive `flock` on the key's parent
//!   directory, re-reads the version, and renames only if it still matches.
//!   That only works if *every* operation that can replace or remove an
//!   existing key holds the same lock while it does so: `put` (rename) and
//!   `delete` (unlink) do. `put_if_absent` does not need it: its publish step
//!   succeeds only while the key is absent, and a `put_if_version` critical
//!   section only proceeds while the key is present, so they cannot interleave
//!   harmfully. The lock is held only around the rename/unlink — the data is
//!   written beforehand — so writers of many chunks in one directory do not
//!   serialize on I/O. `flock` is per open file description, so it excludes
//!   threads of one process as well as other processes.
//!
//! * **Directories come and go.** `delete` prunes now-empty parent
//!   directories so a deleted tree leaves nothing behind. A writer may lose its
//!   freshly created directory to such a prune before its temp file lands;
//!   that surfaces as `ENOENT` and the writer simply retries. Once the temp file
//!   exists it pins the directory (a non-empty directory cannot be removed).
//!
//! * **Small edits in place.** Rewriting a whole 1 MiB chunk file to change
//!   a 16x16 block of it is most of the cost of a small write. `patch`
//!   instead writes the changed byte ranges into the file where it lies,
//!   holding the directory lock like every other replace, so it is ordered
//!   against them and loses nothing. For atomicity it first writes the edits
//!   to the directory's journal and removes the journal when done; a crashed
//!   patch is finished by the next holder of the lock (see `journal`). What
//!   it gives up: a reader that does not take the lock may see a patch in
//!   flight (part of the edited elements new), as it would in a file being
//!   written. Files with a second name (hard links) or reached through a
//!   symlink are never patched: they are replaced as before.
//!
//! Limitations: a key cannot be both an object and a "directory" (`a` and
//! `a/b`), which S3 would allow; HSDS's layout never needs it. Versions rely on
//! nanosecond mtimes (ext4, xfs, btrfs, tmpfs); on coarser filesystems an
//! inode-reuse ABA becomes possible again.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Read, Write};
use std::ops::Range;
use std::os::unix::fs::{FileExt, MetadataExt, OpenOptionsExt};
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use rand::Rng;

mod journal;

use crate::{
    check_patch, validate_key, validate_prefix, ListableStore, OpenObject, PutOutcome,
    ReadableStore, Result, Store, StoreError, Version, Versioned, WritableStore,
};

const TMP_PREFIX: &str = ".h5lake-tmp-";
const TMP_SUFFIX: &str = ".tmp";

/// How often a write restarts after its directory or temp file vanished under
/// a concurrent delete. Each restart means someone else made progress, so a
/// small bound only guards against pathological churn.
const MAX_ATTEMPTS: usize = 64;

/// Whether a file name is one of our in-flight (or crash-orphaned) temp files.
pub fn is_temp_name(name: &str) -> bool {
    name.starts_with(TMP_PREFIX) && name.ends_with(TMP_SUFFIX)
}

/// Tuning knobs for [`LocalStore`].
#[derive(Clone, Debug, Default)]
pub struct LocalStoreOptions {
    /// `fsync` each temp file before publishing it and the directory after.
    /// Off by default: atomicity (old or new bytes after a process crash) does
    /// not need it; only durability across a *power* loss does, and it costs a
    /// disk flush per object.
    pub sync: bool,
}

/// A [`Store`] on a local directory. Cheap to clone; holds no open files.
#[derive(Clone, Debug)]
pub struct LocalStore {
    root: PathBuf,
    options: LocalStoreOptions,
}

impl LocalStore {
    /// Open a store rooted at `root`, creating the directory if needed
    /// (the embedded default: a path just works).
    ///
    /// # Errors
    /// The directory cannot be created or is not a directory.
    pub fn new(root: impl Into<PathBuf>) -> Result<Self> {
        Self::create(root)
    }

    /// Open an existing store directory.
    ///
    /// # Errors
    /// [`StoreError::NotFound`] if `root` does not exist or is not a directory.
    pub fn open(root: impl Into<PathBuf>) -> Result<Self> {
        let root = root.into();
        match fs::metadata(&root) {
            Ok(m) if m.is_dir() => Ok(Self {
                root,
                options: LocalStoreOptions::default(),
            }),
            Ok(_) => Err(StoreError::NotFound(format!(
                "{} is not a directory",
                root.display()
            ))),
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                Err(StoreError::NotFound(root.display().to_string()))
            }
            Err(e) => Err(io_err(&root, e)),
        }
    }

    /// Create the store directory (and its parents) if missing, then open it.
    ///
    /// # Errors
    /// The directory cannot be created.
    pub fn create(root: impl Into<PathBuf>) -> Result<Self> {
        let root = root.into();
        fs::create_dir_all(&root).map_err(|e| io_err(&root, e))?;
        Self::open(root)
    }

    /// Replace the options (builder style).
    #[must_use]
    pub fn with_options(mut self, options: LocalStoreOptions) -> Self {
        self.options = options;
        self
    }

    /// Turn `fsync` on or off (see [`LocalStoreOptions::sync`]).
    #[must_use]
    pub fn with_sync(mut self, sync: bool) -> Self {
        self.options.sync = sync;
        self
    }

    /// The directory this store lives in.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Remove temp files orphaned by crashed writers. Only files older than
    /// `older_than` are touched, because a younger one may belong to a write
    /// that is still in flight and would then fail.
    ///
    /// Returns how many files were removed.
    ///
    /// # Errors
    /// I/O trouble while walking the tree.
    pub fn remove_stale_temp_files(&self, older_than: Duration) -> Result<usize> {
        let cutoff = SystemTime::now()
            .checked_sub(older_than)
            .unwrap_or(UNIX_EPOCH);
        let mut removed = 0;
        let mut stack = vec![self.root.clone()];
        while let Some(dir) = stack.pop() {
            for entry in read_dir_or_empty(&dir)? {
                let entry = entry.map_err(|e| io_err(&dir, e))?;
                let ft = entry.file_type().map_err(|e| io_err(&entry.path(), e))?;
                let name = entry.file_name();
                if ft.is_dir() {
                    stack.push(entry.path());
                } else if name
                    .to_str()
                    .is_some_and(|n| is_temp_name(n) && n != journal::JOURNAL_NAME)
                {
                    // (A patch journal is not litter: the next writer in its
                    // directory finishes the patch it holds.)
                    let path = entry.path();
                    // Age by ctime: writers stamp temp files with an mtime
                    // up to a second in the future (see `unique_mtime`).
                    let old = fs::symlink_metadata(&path)
                        .map(|m| {
                            UNIX_EPOCH
                                + Duration::new(
                                    m.ctime().max(0) as u64,
                                    m.ctime_nsec().clamp(0, 999_999_999) as u32,
                                )
                        })
                        .map(|t| t <= cutoff)
                        .unwrap_or(false);
                    if old && fs::remove_file(&path).is_ok() {
                        removed += 1;
                    }
                }
            }
        }
        Ok(removed)
    }

    fn check_key(key: &str) -> Result<()> {
        validate_key(key)?;
        if key.split('/').any(is_temp_name) {
            return Err(StoreError::InvalidKey {
                key: key.to_string(),
                reason: "names of the form .h5lake-tmp-*.tmp are reserved for temp files".into(),
            });
        }
        Ok(())
    }

    fn path_of(&self, key: &str) -> PathBuf {
        self.root.join(key)
    }

    /// Parent directory of a validated key's file (the root for top-level keys).
    fn dir_of(&self, key: &str) -> PathBuf {
        match key.rfind('/') {
            Some(i) => self.root.join(&key[..i]),
            None => self.root.clone(),
        }
    }

    /// Write `data` to a new temp file in `dir` and stamp it with a unique
    /// mtime. Returns the temp path and the version the object will have once
    /// published (rename/link keep inode, mtime and size).
    fn write_temp(&self, dir: &Path, data: &[u8]) -> Result<(PathBuf, Version)> {
        let mut last_err = None;
        for _ in 0..MAX_ATTEMPTS {
            let tmp = dir.join(format!(
                "{TMP_PREFIX}{:016x}{TMP_SUFFIX}",
                rand::random::<u64>()
            ));
            let mut file = match create_new_in(dir, &tmp) {
                Ok(f) => f,
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
                    last_err = Some(e);
                    continue;
                }
                Err(e) => return Err(io_err(&tmp, e)),
            };
            return match fill_temp(&mut file, data, self.options.sync) {
                Ok(v) => Ok((tmp, v)),
                Err(e) => {
                    let _ = fs::remove_file(&tmp);
                    Err(io_err(&tmp, e))
                }
            };
        }
        Err(io_err(
            dir,
            last_err.unwrap_or_else(|| io::Error::other("too many retries")),
        ))
    }

    /// Common shape of every write: make a temp file, then `publish` it.
    /// `publish` returns `Ok(None)` when the temp file or its directory
    /// vanished (a concurrent `delete_prefix`), which restarts the write.
    fn write_with<F>(&self, key: &str, data: &[u8], mut publish: F) -> Result<PutOutcome>
    where
        F: FnMut(&Path, &Path, &Path, &Version) -> Result<Option<PutOutcome>>,
    {
        Self::check_key(key)?;
        let dir = self.dir_of(key);
        let target = self.path_of(key);
        for _ in 0..MAX_ATTEMPTS {
            let (tmp, version) = self.write_temp(&dir, data)?;
            let outcome = publish(&dir, &tmp, &target, &version);
            // A successful publish renamed the temp name away (the link
            // fallback removes it itself); on conflict or error it must not
            // linger.
            if !matches!(outcome, Ok(Some(PutOutcome::Written(_)))) {
                let _ = fs::remove_file(&tmp);
            }
            match outcome {
                Ok(Some(o)) => return Ok(o),
                Ok(None) => continue,
                Err(e) => return Err(e),
            }
        }
        Err(io_err(
            &target,
            io::Error::other("write kept racing with deletes; gave up"),
        ))
    }

    /// Publishes `tmp` as `target` (replacing it) while holding the
    /// directory lock. `Ok(None)` when the temp file vanished (a concurrent
    /// `delete_prefix`), which restarts the write.
    fn rename_over(
        &self,
        lock: &DirLock,
        tmp: &Path,
        target: &Path,
        version: &Version,
    ) -> Result<Option<PutOutcome>> {
        match fs::rename(tmp, target) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(io_err(target, e)),
        }
        self.sync_dir(lock)?;
        Ok(Some(PutOutcome::Written(version.clone())))
    }

    fn sync_dir(&self, lock: &DirLock) -> Result<()> {
        if self.options.sync {
            lock.file.sync_all().map_err(|e| io_err(&lock.path, e))?;
        }
        Ok(())
    }

    /// Directory of a prefix to read, if the prefix is well formed.
    fn prefix_dir(&self, prefix: &str) -> Result<(PathBuf, String, String)> {
        validate_prefix(prefix)?;
        let (dir_part, name_part) = match prefix.rfind('/') {
            Some(i) => (&prefix[..=i], &prefix[i + 1..]),
            None => ("", prefix),
        };
        let dir = if dir_part.is_empty() {
            self.root.clone()
        } else {
            self.root.join(dir_part.trim_end_matches('/'))
        };
        Ok((dir, dir_part.to_string(), name_part.to_string()))
    }

    /// Remove empty directories from `dir` upwards, stopping below the root or
    /// at the first one that is not empty (or any other error: best effort).
    fn prune_empty_dirs(&self, mut dir: &Path) {
        while dir != self.root && dir.starts_with(&self.root) {
            if fs::remove_dir(dir).is_err() {
                break;
            }
            match dir.parent() {
                Some(p) => dir = p,
                None => break,
            }
        }
    }

    /// Lock `dir` (`None` if it does not exist) and finish the patch a
    /// crashed writer left there, so that every lock holder starts from
    /// whole edits.
    fn lock_dir(&self, dir: &Path) -> Result<Option<DirLock>> {
        let Some(lock) = DirLock::acquire_existing(dir)? else {
            return Ok(None);
        };
        if let Some(raw) = journal::read_leftover(dir).map_err(|e| io_err(dir, e))? {
            if let Some(j) = journal::decode(&raw) {
                let target = dir.join(&j.name);
                let file = journal::open_target(&target, j.len).map_err(|e| io_err(&target, e))?;
                if let Some((file, _)) = file.filter(|(_, m)| m.ino() == j.ino) {
                    self.finish_edits(&file, &j.edits)
                        .map_err(|e| io_err(&target, e))?;
                }
            }
            journal::retire_leftover(dir, self.options.sync).map_err(|e| io_err(dir, e))?;
        }
        Ok(Some(lock))
    }

    /// Writes `edits` into `file` and gives it a new version.
    fn finish_edits<B: AsRef<[u8]>>(&self, file: &File, edits: &[(u64, B)]) -> io::Result<Version> {
        journal::apply(file, edits)?;
        file.set_modified(unique_mtime())?;
        if self.options.sync {
            file.sync_data()?;
        }
        Ok(version_of(&file.metadata()?))
    }

    /// Delete `names` (files directly in `dir`) under one hold of `dir`'s lock.
    fn delete_in_dir(&self, dir: &Path, names: &[String]) -> Result<()> {
        let Some(lock) = self.lock_dir(dir)? else {
            return Ok(());
        };
        for name in names {
            let path = dir.join(name);
            match fs::remove_file(&path) {
                // (A kept mapping would hold the file's blocks.)
                Ok(()) => crate::mapped::forget(&path),
                Err(e) if is_missing(&e) || e.raw_os_error() == Some(libc::EISDIR) => {}
                Err(e) => return Err(io_err(&path, e)),
            }
        }
        // The idle journal goes too, or an emptied directory could not be
        // pruned (lock_dir has finished any patch it held).
        journal::remove(dir).map_err(|e| io_err(dir, e))?;
        self.sync_dir(&lock)
    }

    /// Open a key's file for reading; `None` if there is no such object.
    fn open_key(&self, key: &str) -> Result<Option<(File, fs::Metadata)>> {
        Self::check_key(key)?;
        let path = self.path_of(key);
        let file = match File::open(&path) {
            Ok(f) => f,
            Err(e) if is_missing(&e) => return Ok(None),
            Err(e) => return Err(io_err(&path, e)),
        };
        let meta = file.metadata().map_err(|e| io_err(&path, e))?;
        if !meta.is_file() {
            // A directory at this path is a prefix, not an object.
            return Ok(None);
        }
        Ok(Some((file, meta)))
    }
}

/// Objects larger than this get a whole-file readahead hint before reading.
const READAHEAD_HINT_BYTES: u64 = 256 << 10;

impl ReadableStore for LocalStore {
    fn version(&self, key: &str) -> Result<Option<Version>> {
        Self::check_key(key)?;
        current_version(&self.path_of(key))
    }

    fn get(&self, key: &str) -> Result<Option<Bytes>> {
        Ok(self.get_versioned(key)?.map(|v| v.data))
    }

    fn get_versioned(&self, key: &str) -> Result<Option<Versioned>> {
        let mut buf = Vec::new();
        Ok(self.get_into(key, &mut buf)?.map(|version| Versioned {
            data: Bytes::from(buf),
            version,
        }))
    }

    fn get_into(&self, key: &str, buf: &mut Vec<u8>) -> Result<Option<Version>> {
        let Some((mut file, meta)) = self.open_key(key)? else {
            return Ok(None);
        };
        if meta.len() > READAHEAD_HINT_BYTES {
            // Ask for the whole object at once: on a cold cache the kernel
            // otherwise reads a large chunk in small readahead steps.
            // SAFETY: a plain advisory syscall on an open descriptor.
            unsafe {
                libc::posix_fadvise(
                    file.as_raw_fd(),
                    0,
                    meta.len() as libc::off_t,
                    libc::POSIX_FADV_WILLNEED,
                )
            };
        }
        buf.clear();
        buf.reserve(meta.len() as usize);
        file.read_to_end(buf)
            .map_err(|e| io_err(&self.path_of(key), e))?;
        Ok(Some(version_of(&meta)))
    }

    fn get_scattered(
        &self,
        key: &str,
        total_len: u64,
        runs: &mut [(u64, &mut [u8])],
    ) -> Result<Option<bool>> {
        let Some((file, meta)) = self.open_key(key)? else {
            return Ok(None);
        };
        if meta.len() != total_len {
            return Ok(Some(false));
        }
        if meta.len() > READAHEAD_HINT_BYTES {
            // SAFETY: a plain advisory syscall on an open descriptor.
            unsafe {
                libc::posix_fadvise(
                    file.as_raw_fd(),
                    0,
                    meta.len() as libc::off_t,
                    libc::POSIX_FADV_WILLNEED,
                )
            };
        }
        let path = self.path_of(key);
        // The kernel copies each run straight to its destination; at most
        // IOV_MAX (1024 on Linux) runs per call.
        for batch in runs.chunks_mut(1024) {
            let mut offset = batch[0].0;
            let mut iov: Vec<libc::iovec> = batch
                .iter_mut()
                .map(|(_, d)| libc::iovec {
                    iov_base: d.as_mut_ptr().cast(),
                    iov_len: d.len(),
                })
                .collect();
            let mut first = 0;
            while first < iov.len() {
                // SAFETY: every iovec points into a live, exclusively borrowed slice.
                let n = unsafe {
                    libc::preadv(
                        file.as_raw_fd(),
                        iov[first..].as_ptr(),
                        (iov.len() - first) as libc::c_int,
                        offset as libc::off_t,
                    )
                };
                if n < 0 {
                    let e = io::Error::last_os_error();
                    if e.kind() == io::ErrorKind::Interrupted {
                        continue;
                    }
                    return Err(io_err(&path, e));
                }
                if n == 0 {
                    // The file shrank under us (it was replaced by a rename,
                    // which keeps our descriptor on the old inode, so this is
                    // truncation in place — not something h5lake does).
                    return Err(io_err(
                        &path,
                        io::Error::new(
                            io::ErrorKind::UnexpectedEof,
                            "object shorter than its size",
                        ),
                    ));
                }
                // Skip the iovecs this call filled; trim a partly filled one.
                let mut n = n as usize;
                offset += n as u64;
                while n > 0 {
                    let v = &mut iov[first];
                    if n >= v.iov_len {
                        n -= v.iov_len;
                        first += 1;
                    } else {
                        // SAFETY: advancing within the same slice.
                        v.iov_base = unsafe { v.iov_base.cast::<u8>().add(n).cast() };
                        v.iov_len -= n;
                        n = 0;
                    }
                }
            }
        }
        Ok(Some(true))
    }

    fn get_range(&self, key: &str, offset: u64, len: u64) -> Result<Option<Bytes>> {
        let Some((file, meta)) = self.open_key(key)? else {
            return Ok(None);
        };
        let end = offset.saturating_add(len).min(meta.len());
        if offset >= end {
            return Ok(Some(Bytes::new()));
        }
        let mut buf = vec![0u8; (end - offset) as usize];
        let mut filled = 0;
        while filled < buf.len() {
            match file.read_at(&mut buf[filled..], offset + filled as u64) {
                Ok(0) => break,
                Ok(n) => filled += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(io_err(&self.path_of(key), e)),
            }
        }
        buf.truncate(filled);
        Ok(Some(Bytes::from(buf)))
    }

    fn open_object(&self, key: &str, tail: u64) -> Result<Option<Box<dyn OpenObject + '_>>> {
        let Some((file, meta)) = self.open_key(key)? else {
            return Ok(None);
        };
        // Every part is read from this descriptor: a put replaces the file
        // by renaming another over it, so what was opened stays readable.
        let object = LocalObject {
            path: self.path_of(key),
            len: meta.len(),
            version: version_of(&meta),
            tail: Bytes::new(),
            file,
        };
        let start = object.len.saturating_sub(tail);
        let tail = object.pread(start..object.len)?;
        Ok(Some(Box::new(LocalObject { tail, ..object })))
    }

    fn exists(&self, key: &str) -> Result<bool> {
        Self::check_key(key)?;
        let path = self.path_of(key);
        match fs::metadata(&path) {
            Ok(m) => Ok(m.is_file()),
            Err(e) if is_missing(&e) => Ok(false),
            Err(e) => Err(io_err(&path, e)),
        }
    }
}

impl WritableStore for LocalStore {
    fn put(&self, key: &str, data: &[u8]) -> Result<Version> {
        let outcome = self.write_with(key, data, |dir, tmp, target, version| {
            let Some(lock) = self.lock_dir(dir)? else {
                return Ok(None);
            };
            self.rename_over(&lock, tmp, target, version)
        })?;
        match outcome {
            PutOutcome::Written(v) => Ok(v),
            PutOutcome::Conflict => unreachable!("unconditional put cannot conflict"),
        }
    }

    fn put_if_absent(&self, key: &str, data: &[u8]) -> Result<PutOutcome> {
        self.write_with(key, data, |dir, tmp, target, version| {
            match publish_no_replace(tmp, target) {
                Ok(()) => {}
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
                    return Ok(Some(PutOutcome::Conflict))
                }
                Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
                Err(e) => return Err(io_err(target, e)),
            }
            if self.options.sync {
                if let Some(dir_file) = DirLock::open(dir)? {
                    dir_file.sync_all().map_err(|e| io_err(dir, e))?;
                }
            }
            Ok(Some(PutOutcome::Written(version.clone())))
        })
    }

    /// Written where it lies: no temp file, rename or directory lock.
    /// Nothing looks for the key yet, so no reader can see it half written,
    /// and a crash mid-way leaves an orphan as a crashed temp file would.
    fn put_fresh(&self, key: &str, data: &[u8]) -> Result<PutOutcome> {
        Self::check_key(key)?;
        let dir = self.dir_of(key);
        let target = self.path_of(key);
        let mut file = match create_new_in(&dir, &target) {
            Ok(f) => f,
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => return Ok(PutOutcome::Conflict),
            Err(e) => return Err(io_err(&target, e)),
        };
        let written = fill_temp(&mut file, data, self.options.sync).and_then(|v| {
            if self.options.sync {
                File::open(&dir)?.sync_all()?;
            }
            Ok(v)
        });
        match written {
            Ok(v) => Ok(PutOutcome::Written(v)),
            Err(e) => {
                let _ = fs::remove_file(&target);
                Err(io_err(&target, e))
            }
        }
    }

    fn put_if_version(&self, key: &str, data: &[u8], expected: &Version) -> Result<PutOutcome> {
        Self::check_key(key)?;
        // Cheap early exit so that losers of a race do not write data only to
        // throw it away; the authoritative check happens under the lock.
        if current_version(&self.path_of(key))?.as_ref() != Some(expected) {
            return Ok(PutOutcome::Conflict);
        }
        self.write_with(key, data, |dir, tmp, target, version| {
            let Some(lock) = self.lock_dir(dir)? else {
                // The directory is gone, so is the key.
                return Ok(Some(PutOutcome::Conflict));
            };
            if current_version(target)?.as_ref() != Some(expected) {
                return Ok(Some(PutOutcome::Conflict));
            }
            self.rename_over(&lock, tmp, target, version)
        })
    }

    fn patch(&self, key: &str, len: u64, edits: &[(u64, &[u8])]) -> Result<Option<Version>> {
        Self::check_key(key)?;
        check_patch(key, len, edits)?;
        let dir = self.dir_of(key);
        let target = self.path_of(key);
        let Some(lock) = self.lock_dir(&dir)? else {
            return Ok(None);
        };
        let Some((file, meta)) =
            journal::open_target(&target, len).map_err(|e| io_err(&target, e))?
        else {
            return Ok(None);
        };
        let ino = meta.ino();
        let name = key.rsplit('/').next().unwrap_or(key);
        let journal = journal::write(
            &dir,
            &journal::encode(name, ino, len, edits),
            self.options.sync,
        )
        .map_err(|e| io_err(&dir, e))?;
        // On failure the journal stays: the next lock holder finishes the
        // edits (a failed write may or may not have happened, as always).
        let version = self
            .finish_edits(&file, edits)
            .map_err(|e| io_err(&target, e))?;
        journal::retire(&journal, self.options.sync).map_err(|e| io_err(&dir, e))?;
        drop(lock);
        Ok(Some(version))
    }

    fn delete(&self, key: &str) -> Result<()> {
        Self::check_key(key)?;
        let dir = self.dir_of(key);
        let name = key.rsplit('/').next().unwrap_or(key).to_string();
        self.delete_in_dir(&dir, &[name])?;
        self.prune_empty_dirs(&dir);
        Ok(())
    }

    fn delete_prefix(&self, prefix: &str) -> Result<()> {
        // Delete key by key (one lock hold per directory) rather than
        // `remove_dir_all`, so each removal is ordered against conditional
        // writers exactly as a single `delete` would be.
        let keys = self.list_prefix(prefix)?;
        let mut i = 0;
        let mut touched_dirs = Vec::new();
        while i < keys.len() {
            let parent = parent_of(&keys[i]);
            let mut names = Vec::new();
            while i < keys.len() && parent_of(&keys[i]) == parent {
                names.push(keys[i][parent.map_or(0, |p| p.len() + 1)..].to_string());
                i += 1;
            }
            let dir = parent.map_or_else(|| self.root.clone(), |p| self.root.join(p));
            self.delete_in_dir(&dir, &names)?;
            touched_dirs.push(dir);
        }
        // A '/'-terminated prefix names a directory subtree: drop it entirely,
        // including empty directories and crash-orphaned temp files, unless a
        // writer is racing us (then whatever it wrote stays).
        if prefix.ends_with('/') {
            let (dir, _, _) = self.prefix_dir(prefix)?;
            remove_subtree_best_effort(&dir);
            touched_dirs.push(dir);
        }
        // Deepest first, so children go before their parents.
        touched_dirs.sort_by_key(|d| std::cmp::Reverse(d.components().count()));
        for dir in &touched_dirs {
            self.prune_empty_dirs(dir);
        }
        Ok(())
    }
}

impl ListableStore for LocalStore {
    fn list_prefix(&self, prefix: &str) -> Result<Vec<String>> {
        let (dir, dir_part, name_part) = self.prefix_dir(prefix)?;
        let mut keys = Vec::new();
        for entry in read_dir_or_empty(&dir)? {
            let entry = entry.map_err(|e| io_err(&dir, e))?;
            let Some(name) = entry.file_name().to_str().map(str::to_string) else {
                continue;
            };
            if !name.starts_with(&name_part) {
                continue;
            }
            let key = format!("{dir_part}{name}");
            match classify(&entry) {
                Kind::Dir => walk_keys(&entry.path(), &format!("{key}/"), &mut keys)?,
                Kind::Key => keys.push(key),
                Kind::Other => {}
            }
        }
        keys.sort_unstable();
        Ok(keys)
    }

    fn list_dir(&self, prefix: &str) -> Result<(Vec<String>, Vec<String>)> {
        if !prefix.is_empty() && !prefix.ends_with('/') {
            return Err(StoreError::InvalidKey {
                key: prefix.to_string(),
                reason: "list_dir needs an empty or '/'-terminated prefix".into(),
            });
        }
        let (dir, dir_part, _) = self.prefix_dir(prefix)?;
        let mut keys = Vec::new();
        let mut dirs = Vec::new();
        for entry in read_dir_or_empty(&dir)? {
            let entry = entry.map_err(|e| io_err(&dir, e))?;
            let Some(name) = entry.file_name().to_str().map(str::to_string) else {
                continue;
            };
            match classify(&entry) {
                // Like S3, a "directory" exists only if some key lives under
                // it; empty leftovers (crash, racing prune) stay invisible.
                Kind::Dir if has_any_key(&entry.path())? => dirs.push(format!("{dir_part}{name}/")),
                Kind::Key => keys.push(format!("{dir_part}{name}")),
                _ => {}
            }
        }
        keys.sort_unstable();
        dirs.sort_unstable();
        Ok((keys, dirs))
    }
}

impl Store for LocalStore {
    fn location(&self) -> String {
        self.root.display().to_string()
    }

    /// Sizes from the files' metadata, without reading them.
    fn list_sizes(&self, prefix: &str) -> Result<Vec<(String, u64)>> {
        let mut out = Vec::new();
        for key in self.list_prefix(prefix)? {
            match fs::metadata(self.path_of(&key)) {
                Ok(m) => out.push((key, m.len())),
                // Deleted since the listing: not part of the usage any more.
                Err(e) if is_missing(&e) => {}
                Err(e) => return Err(io_err(&self.path_of(&key), e)),
            }
        }
        Ok(out)
    }
}

/// Exclusive `flock` on a directory, released when dropped (close).
struct DirLock {
    file: File,
    path: PathBuf,
}

impl DirLock {
    fn open(dir: &Path) -> Result<Option<File>> {
        match OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_DIRECTORY | libc::O_CLOEXEC)
            .open(dir)
        {
            Ok(f) => Ok(Some(f)),
            Err(e) if is_missing(&e) => Ok(None),
            Err(e) => Err(io_err(dir, e)),
        }
    }

    /// Lock `dir`; `None` if it does not exist (any more).
    fn acquire_existing(dir: &Path) -> Result<Option<Self>> {
        for _ in 0..MAX_ATTEMPTS {
            let Some(file) = Self::open(dir)? else {
                return Ok(None);
            };
            loop {
                // SAFETY: flock on a descriptor we own; no memory is involved.
                let rc = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX) };
                if rc == 0 {
                    break;
                }
                let e = io::Error::last_os_error();
                if e.kind() != io::ErrorKind::Interrupted {
                    return Err(io_err(dir, e));
                }
            }
            // The directory may have been pruned and recreated while we
            // waited; a lock on the dead inode would exclude nobody.
            let held = file.metadata().map_err(|e| io_err(dir, e))?;
            match fs::metadata(dir) {
                Ok(now) if now.ino() == held.ino() && now.dev() == held.dev() => {
                    return Ok(Some(Self {
                        file,
                        path: dir.to_path_buf(),
                    }));
                }
                Ok(_) => continue,
                Err(e) if is_missing(&e) => return Ok(None),
                Err(e) => return Err(io_err(dir, e)),
            }
        }
        Err(io_err(
            dir,
            io::Error::other("directory kept being replaced while locking"),
        ))
    }
}

/// Publish `tmp` as `target` only if `target` does not exist. Prefers
/// `renameat2(RENAME_NOREPLACE)` (one atomic step, no second name left
/// behind); falls back to `link` on filesystems or kernels without it.
fn publish_no_replace(tmp: &Path, target: &Path) -> io::Result<()> {
    #[cfg(target_os = "linux")]
    {
        use std::ffi::CString;
        use std::os::unix::ffi::OsStrExt;
        let old = CString::new(tmp.as_os_str().as_bytes())?;
        let new = CString::new(target.as_os_str().as_bytes())?;
        // SAFETY: both pointers are valid NUL-terminated strings for the call.
        let rc = unsafe {
            libc::syscall(
                libc::SYS_renameat2,
                libc::AT_FDCWD,
                old.as_ptr(),
                libc::AT_FDCWD,
                new.as_ptr(),
                libc::RENAME_NOREPLACE,
            )
        };
        if rc == 0 {
            return Ok(());
        }
        let e = io::Error::last_os_error();
        match e.raw_os_error() {
            Some(libc::EINVAL | libc::ENOSYS | libc::EOPNOTSUPP) => {}
            _ => return Err(e),
        }
    }
    link_no_replace(tmp, target)
}

/// The portable create-if-absent: `link` fails if the target exists; the
/// temp name is then removed.
fn link_no_replace(tmp: &Path, target: &Path) -> io::Result<()> {
    fs::hard_link(tmp, target)?;
    let _ = fs::remove_file(tmp);
    Ok(())
}

/// The version of whatever is at `path` now, `None` if nothing (or a directory).
fn current_version(path: &Path) -> Result<Option<Version>> {
    // Follows symlinks like the `open` in `get_versioned`, so both agree.
    match fs::metadata(path) {
        Ok(m) if m.is_file() => Ok(Some(version_of(&m))),
        Ok(_) => Ok(None),
        Err(e) if is_missing(&e) => Ok(None),
        Err(e) => Err(io_err(path, e)),
    }
}

/// Creates `path` (in `dir`), which must not exist, making `dir` and its
/// ancestors when they are missing. The directory usually exists: the file
/// is tried first, which saves a mkdir and a stat on most writes.
fn create_new_in(dir: &Path, path: &Path) -> io::Result<File> {
    let open = || {
        OpenOptions::new()
            .write(true)
            .create_new(true)
            .custom_flags(libc::O_CLOEXEC)
            .open(path)
    };
    let mut last_err = None;
    for _ in 0..MAX_ATTEMPTS {
        match open() {
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                if let Err(e) = fs::create_dir_all(dir) {
                    // A concurrent prune removed an ancestor mid-way
                    // (NotFound), or removed the directory between mkdir's
                    // EEXIST and its is-a-directory check (AlreadyExists):
                    // try again.
                    if !matches!(
                        e.kind(),
                        io::ErrorKind::NotFound | io::ErrorKind::AlreadyExists
                    ) {
                        return Err(e);
                    }
                }
                last_err = Some(e);
            }
            other => return other,
        }
    }
    Err(last_err.unwrap_or_else(|| io::Error::other("too many retries")))
}

fn fill_temp(file: &mut File, data: &[u8], sync: bool) -> io::Result<Version> {
    file.write_all(data)?;
    file.set_modified(unique_mtime())?;
    if sync {
        file.sync_all()?;
    }
    Ok(version_of(&file.metadata()?))
}

/// An object file opened to be read in parts.
struct LocalObject {
    file: File,
    path: PathBuf,
    len: u64,
    version: Version,
    tail: Bytes,
}

impl LocalObject {
    fn clip(&self, range: &Range<u64>) -> Range<u64> {
        let start = range.start.min(self.len);
        start..range.end.min(self.len).max(start)
    }

    fn pread(&self, range: Range<u64>) -> Result<Bytes> {
        let range = self.clip(&range);
        let mut buf = vec![0u8; (range.end - range.start) as usize];
        let filled = self.pread_into(range.start, &mut buf)?;
        buf.truncate(filled);
        Ok(Bytes::from(buf))
    }

    /// Fills `buf` from `start` on; fewer bytes only at the file's end.
    fn pread_into(&self, start: u64, buf: &mut [u8]) -> Result<usize> {
        let mut filled = 0;
        while filled < buf.len() {
            match self.file.read_at(&mut buf[filled..], start + filled as u64) {
                Ok(0) => break,
                Ok(n) => filled += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(io_err(&self.path, e)),
            }
        }
        Ok(filled)
    }
}

impl OpenObject for LocalObject {
    fn len(&self) -> u64 {
        self.len
    }

    fn version(&self) -> &Version {
        &self.version
    }

    fn tail(&self) -> &Bytes {
        &self.tail
    }

    fn read_ranges(&self, ranges: &[Range<u64>]) -> Result<Vec<Bytes>> {
        ranges.iter().map(|r| self.pread(r.clone())).collect()
    }

    /// `ranges` from the object's mapping (pages stay in the page cache:
    /// no copy out of it; the mapping is kept for the next read, see
    /// [`crate::mapped`]); `None` when all are small (the caller reads
    /// them into a buffer it reuses) or the object cannot be mapped. Only
    /// the ranges' pages are brought in, so the columns between two
    /// wanted ones are never read. Chunk objects are replaced by rename,
    /// never truncated in place, so a mapping stays whole.
    fn map_ranges(&self, ranges: &[Range<u64>]) -> Result<Option<Vec<Bytes>>> {
        let clipped: Vec<Range<u64>> = ranges.iter().map(|r| self.clip(r)).collect();
        if clipped.iter().all(|r| r.end - r.start < MIN_MAPPED_BYTES) {
            return Ok(None);
        }
        Ok(crate::mapped::slices(
            &self.path,
            &self.version,
            &self.file,
            self.len,
            &clipped,
        ))
    }

    fn read_ranges_into(&self, ranges: &[Range<u64>], buf: &mut Vec<u8>) -> Result<()> {
        let clipped: Vec<Range<u64>> = ranges.iter().map(|r| self.clip(r)).collect();
        let total: u64 = clipped.iter().map(|r| r.end - r.start).sum();
        let total = usize::try_from(total).map_err(|_| {
            io_err(
                &self.path,
                io::Error::new(io::ErrorKind::OutOfMemory, "ranges too large"),
            )
        })?;
        // Only growth is zeroed: the old bytes are overwritten by the reads.
        buf.resize(total.max(buf.len()), 0);
        buf.truncate(total);
        let mut at = 0;
        for r in clipped {
            let n = (r.end - r.start) as usize;
            let filled = self.pread_into(r.start, &mut buf[at..at + n])?;
            if filled != n {
                return Err(StoreError::Changed(self.path.display().to_string()));
            }
            at += n;
        }
        Ok(())
    }
}

/// Ranges smaller than this are read, not mapped (a mapping costs system
/// calls of its own).
const MIN_MAPPED_BYTES: u64 = 1 << 20;

fn version_of(m: &fs::Metadata) -> Version {
    Version(format!(
        "{:x}-{:x}-{:x}-{:x}",
        m.ino(),
        m.mtime(),
        m.mtime_nsec(),
        m.size()
    ))
}

/// Now, to the second, plus random nanoseconds: distinguishes two writes that
/// land on a recycled inode within one kernel clock tick.
fn unique_mtime() -> SystemTime {
    let secs = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    UNIX_EPOCH + Duration::new(secs, rand::rngs::OsRng.gen_range(0..1_000_000_000))
}

fn parent_of(key: &str) -> Option<&str> {
    key.rfind('/').map(|i| &key[..i])
}

/// "Not there" in all its local spellings: no such file, or some ancestor is a
/// regular file rather than a directory.
fn is_missing(e: &io::Error) -> bool {
    e.kind() == io::ErrorKind::NotFound || e.raw_os_error() == Some(libc::ENOTDIR)
}

fn io_err(path: &Path, e: io::Error) -> StoreError {
    if e.kind() == io::ErrorKind::PermissionDenied {
        StoreError::PermissionDenied(format!("{}: {e}", path.display()))
    } else {
        StoreError::Io {
            path: path.display().to_string(),
            source: e,
        }
    }
}

fn read_dir_or_empty(dir: &Path) -> Result<Box<dyn Iterator<Item = io::Result<fs::DirEntry>>>> {
    match fs::read_dir(dir) {
        Ok(rd) => Ok(Box::new(rd)),
        Err(e) if is_missing(&e) => Ok(Box::new(std::iter::empty())),
        Err(e) => Err(io_err(dir, e)),
    }
}

enum Kind {
    Dir,
    Key,
    Other,
}

fn classify(entry: &fs::DirEntry) -> Kind {
    let Ok(ft) = entry.file_type() else {
        return Kind::Other;
    };
    let name = entry.file_name();
    if ft.is_dir() {
        Kind::Dir
    } else if name.to_str().is_some_and(is_temp_name) {
        Kind::Other
    } else if ft.is_file() || ft.is_symlink() {
        Kind::Key
    } else {
        Kind::Other
    }
}

fn walk_keys(dir: &Path, key_prefix: &str, out: &mut Vec<String>) -> Result<()> {
    for entry in read_dir_or_empty(dir)? {
        let entry = entry.map_err(|e| io_err(dir, e))?;
        let Some(name) = entry.file_name().to_str().map(str::to_string) else {
            continue;
        };
        match classify(&entry) {
            Kind::Dir => walk_keys(&entry.path(), &format!("{key_prefix}{name}/"), out)?,
            Kind::Key => out.push(format!("{key_prefix}{name}")),
            Kind::Other => {}
        }
    }
    Ok(())
}

/// Depth-first search that stops at the first key: usually one `readdir`.
fn has_any_key(dir: &Path) -> Result<bool> {
    let mut subdirs = Vec::new();
    for entry in read_dir_or_empty(dir)? {
        let entry = entry.map_err(|e| io_err(dir, e))?;
        if entry.file_name().to_str().is_none() {
            continue;
        }
        match classify(&entry) {
            Kind::Key => return Ok(true),
            Kind::Dir => subdirs.push(entry.path()),
            Kind::Other => {}
        }
    }
    for sub in subdirs {
        if has_any_key(&sub)? {
            return Ok(true);
        }
    }
    Ok(false)
}

/// Remove temp files and empty directories below (and including) `dir`;
/// anything a concurrent writer published in the meantime is left alone.
fn remove_subtree_best_effort(dir: &Path) {
    let Ok(rd) = fs::read_dir(dir) else { return };
    for entry in rd.flatten() {
        match classify(&entry) {
            Kind::Dir => remove_subtree_best_effort(&entry.path()),
            Kind::Other if entry.file_name().to_str().is_some_and(is_temp_name) => {
                let _ = fs::remove_file(entry.path());
            }
            _ => {}
        }
    }
    let _ = fs::remove_dir(dir);
}

#[cfg(test)]
mod tests {
    /// A big object's mapping is kept for the next read, and dropped when
    /// the object is deleted (it would hold the file's blocks).
    #[test]
    fn mappings_are_kept_between_reads_and_dropped_with_their_object() {
        use crate::{OpenObject, Store};
        let dir = tempfile::tempdir().unwrap();
        let s = LocalStore::new(dir.path()).unwrap();
        let big: Vec<u8> = (0..3_000_000u32).map(|i| (i % 251) as u8).collect();
        s.put("d/big", &big).unwrap();
        let path = s.path_of("d/big");
        let read = || {
            let obj = s.open_object("d/big", 16).unwrap().unwrap();
            obj.map_ranges(&[0..2_000_000]).unwrap().unwrap()
        };
        let first = read();
        assert!(crate::mapped::is_kept(&path));
        assert_eq!(read()[0].as_ref(), first[0].as_ref());
        s.delete("d/big").unwrap();
        assert!(!crate::mapped::is_kept(&path));
        // (Slices still held keep their bytes.)
        assert_eq!(first[0].as_ref(), &big[..2_000_000]);
    }

    use super::*;

    /// ext4/tmpfs take the `renameat2` path, so exercise the fallback directly.
    #[test]
    fn link_fallback_creates_once() {
        let dir = tempfile::tempdir().unwrap();
        let (a, b, target) = (
            dir.path().join("a"),
            dir.path().join("b"),
            dir.path().join("t"),
        );
        fs::write(&a, b"first").unwrap();
        fs::write(&b, b"second").unwrap();
        link_no_replace(&a, &target).unwrap();
        let e = link_no_replace(&b, &target).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::AlreadyExists);
        assert_eq!(fs::read(&target).unwrap(), b"first");
    }

    /// A patch whose writer died after its journal but mid-edits is
    /// finished by the next writer in the directory; a journal cut short
    /// (the writer died writing it) is dropped and the file left alone.
    #[test]
    fn crashed_patch_is_finished_by_the_next_writer() {
        let root = tempfile::tempdir().unwrap();
        let s = LocalStore::new(root.path()).unwrap();
        s.put("d/c", b"0123456789").unwrap();
        let dir = root.path().join("d");
        let (file, meta) = journal::open_target(&dir.join("c"), 10).unwrap().unwrap();
        let ino = meta.ino();
        let edits: [(u64, &[u8]); 2] = [(0, b"AB"), (8, b"YZ")];
        journal::write(&dir, &journal::encode("c", ino, 10, &edits), false).unwrap();
        journal::apply(&file, &edits[..1]).unwrap();
        assert_eq!(s.get("d/c").unwrap().unwrap().as_ref(), b"AB23456789");
        s.put("d/other", b"x").unwrap();
        assert_eq!(s.get("d/c").unwrap().unwrap().as_ref(), b"AB234567YZ");
        assert_eq!(journal::read_leftover(&dir).unwrap(), None);

        let raw = journal::encode("c", ino, 10, &[(4, b"!!".as_slice())]);
        journal::write(&dir, &raw[..raw.len() - 3], false).unwrap();
        s.delete("d/other").unwrap();
        assert_eq!(s.get("d/c").unwrap().unwrap().as_ref(), b"AB234567YZ");
        assert!(!dir.join(journal::JOURNAL_NAME).exists());
        // Stale-temp sweeps leave a journal to the writer who finishes it.
        journal::write(&dir, &raw, false).unwrap();
        assert_eq!(s.remove_stale_temp_files(Duration::ZERO).unwrap(), 0);
        assert_eq!(s.list_prefix("d/").unwrap(), vec!["d/c"]);
    }

    /// Patches reuse one journal file, left empty between them; deleting
    /// the directory's last object removes it, so the directory goes too.
    #[test]
    fn the_journal_stays_idle_between_patches_and_goes_with_its_directory() {
        let root = tempfile::tempdir().unwrap();
        let s = LocalStore::new(root.path()).unwrap();
        s.put("d/c", b"0123456789").unwrap();
        let dir = root.path().join("d");
        for i in 0..3u8 {
            let at = u64::from(i);
            assert!(s
                .patch("d/c", 10, &[(at, b"X".as_slice())])
                .unwrap()
                .is_some());
            let idle = fs::metadata(dir.join(journal::JOURNAL_NAME)).unwrap();
            assert_eq!(idle.len(), 0);
        }
        assert_eq!(s.get("d/c").unwrap().unwrap().as_ref(), b"XXX3456789");
        assert_eq!(s.list_prefix("d/").unwrap(), vec!["d/c"]);
        s.delete("d/c").unwrap();
        assert!(!dir.exists());
    }

    /// A file with a second name, or a symlink, is replaced, not edited.
    #[test]
    fn linked_files_are_not_patched() {
        let root = tempfile::tempdir().unwrap();
        let s = LocalStore::new(root.path()).unwrap();
        s.put("d/c", b"0123456789").unwrap();
        let outside = root.path().join("outside");
        fs::hard_link(root.path().join("d/c"), &outside).unwrap();
        assert_eq!(s.patch("d/c", 10, &[(0, b"X".as_slice())]).unwrap(), None);
        fs::remove_file(&outside).unwrap();
        fs::write(&outside, b"abcdefghij").unwrap();
        std::os::unix::fs::symlink(&outside, root.path().join("d/l")).unwrap();
        assert_eq!(s.patch("d/l", 10, &[(0, b"X".as_slice())]).unwrap(), None);
        assert_eq!(fs::read(&outside).unwrap(), b"abcdefghij");
        assert!(s
            .patch("d/c", 10, &[(0, b"X".as_slice())])
            .unwrap()
            .is_some());
        assert_eq!(s.get("d/c").unwrap().unwrap().as_ref(), b"X123456789");
    }

    #[test]
    fn temp_names() {
        assert!(is_temp_name(".h5lake-tmp-0011223344556677.tmp"));
        assert!(!is_temp_name(".group.json"));
        assert!(!is_temp_name(".h5lake-tmp-x"));
    }
}
