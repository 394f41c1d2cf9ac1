//! Objects of a local store mapped into memory, the mappings kept between
//! reads.
//!
//! Reading a chunk object's columns through a mapping saves copying them
//! out of the page cache, but mapping and unmapping cost a page-table
//! entry per 4 KiB page: for pages readahead brought in (small folios),
//! that was most of a warm read's time. So an object's mapping is kept for
//! the next read, keyed by its path and version (inode, mtime, size): a
//! replaced object is a new file, and one patched in place (a small edit)
//! has a new mtime, so a kept mapping is never taken for another version
//! (and a private read-only mapping shows the page cache as it is). At most [`MAX_KEPT`] bytes are
//! kept, each for [`IDLE`] after its last use, so that the disk space of a
//! deleted object is not held for long.

use std::collections::HashMap;
use std::fs::File;
use std::ops::Range;
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};
use std::sync::{Arc, LazyLock, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use bytes::Bytes;

use crate::Version;

/// Most bytes of objects kept mapped.
const MAX_KEPT: u64 = 2 << 30;
/// A mapping unused this long is dropped.
const IDLE: Duration = Duration::from_secs(10);

/// A whole file mapped read-only.
pub(crate) struct Mapping {
    base: *mut libc::c_void,
    len: usize,
    /// Ranges already brought in (asking again walks every page's entry).
    populated: Mutex<Vec<Range<usize>>>,
}

// SAFETY: the mapping is read-only and owned; nothing mutates it.
unsafe impl Send for Mapping {}
// SAFETY: as above.
unsafe impl Sync for Mapping {}

impl Mapping {
    /// `None` when the system will not map it (the caller reads instead).
    fn new(file: &File, len: u64) -> Option<Self> {
        let len = usize::try_from(len).ok().filter(|&n| n > 0)?;
        // SAFETY: a fresh private read-only mapping of an open file; the
        // result is checked below.
        let base = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ,
                libc::MAP_PRIVATE,
                file.as_raw_fd(),
                0,
            )
        };
        (base != libc::MAP_FAILED).then(|| Mapping {
            base,
            len,
            populated: Mutex::new(Vec::new()),
        })
    }

    /// Maps in the pages of `range` at once (read from disk if need be),
    /// not one fault at a time; pages already mapped cost a look each.
    /// Only what is asked for: the columns between wanted ones stay out.
    fn populate(&self, range: &Range<usize>) {
        // SAFETY: sysconf has no preconditions.
        let page = usize::try_from(unsafe { libc::sysconf(libc::_SC_PAGESIZE) }).unwrap_or(4096);
        let start = range.start / page * page;
        let end = range.end.min(self.len);
        if start >= end {
            return;
        }
        {
            let mut done = self
                .populated
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            if done.iter().any(|d| d.start <= start && end <= d.end) {
                return;
            }
            // (A chunk object has a few ranges a column each; a list is
            // enough, and bounded.)
            if done.len() >= 256 {
                done.clear();
            }
            done.push(start..end);
        }
        // SAFETY: advice on pages of this mapping only; failure (a kernel
        // older than 5.14 has no MADV_POPULATE_READ) leaves the pages to
        // fault in as they are read.
        unsafe {
            let at = self.base.cast::<u8>().add(start).cast::<libc::c_void>();
            if libc::madvise(at, end - start, libc::MADV_POPULATE_READ) != 0 {
                libc::madvise(at, end - start, libc::MADV_WILLNEED);
            }
        }
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: unmaps exactly what `new` mapped, once.
        unsafe {
            libc::munmap(self.base, self.len);
        }
    }
}

/// Bytes `range` of a kept mapping.
struct Slice {
    map: Arc<Mapping>,
    range: Range<usize>,
}

impl AsRef<[u8]> for Slice {
    fn as_ref(&self) -> &[u8] {
        // SAFETY: `base` maps `len` readable bytes while `map` lives, and
        // `range` lies within them (checked in `slice`).
        unsafe {
            std::slice::from_raw_parts(
                self.map.base.cast::<u8>().add(self.range.start),
                self.range.len(),
            )
        }
    }
}

struct Kept {
    version: Version,
    map: Arc<Mapping>,
    used: Instant,
}

#[derive(Default)]
struct Cache {
    kept: HashMap<PathBuf, Kept>,
    bytes: u64,
    /// The process whose sweeper thread runs (a forked child has none).
    sweeper: Option<u32>,
}

static CACHE: LazyLock<Mutex<Cache>> = LazyLock::new(Mutex::default);

fn cache() -> MutexGuard<'static, Cache> {
    CACHE.lock().unwrap_or_else(PoisonError::into_inner)
}

/// `ranges` of the object at `path` (open as `file`, of `len` bytes, at
/// `version`) from its mapping, kept or made; `None` if it cannot be
/// mapped. Ranges must lie within the object.
pub(crate) fn slices(
    path: &Path,
    version: &Version,
    file: &File,
    len: u64,
    ranges: &[Range<u64>],
) -> Option<Vec<Bytes>> {
    let map = kept(path, version, file, len)?;
    ranges
        .iter()
        .map(|r| {
            let r = usize::try_from(r.start).ok()?..usize::try_from(r.end).ok()?;
            if r.start > r.end || r.end > map.len {
                return None;
            }
            map.populate(&r);
            Some(Bytes::from_owner(Slice {
                map: map.clone(),
                range: r,
            }))
        })
        .collect()
}

impl Cache {
    /// The kept mapping of `path` at `version`; a kept one of another
    /// version (never read again) goes to `gone`.
    fn current(
        &mut self,
        path: &Path,
        version: &Version,
        gone: &mut Vec<Kept>,
    ) -> Option<Arc<Mapping>> {
        if let Some(k) = self.kept.get_mut(path) {
            if &k.version == version {
                k.used = Instant::now();
                return Some(k.map.clone());
            }
        }
        if let Some(old) = self.kept.remove(path) {
            self.bytes -= old.map.len as u64;
            gone.push(old);
        }
        None
    }
}

fn kept(path: &Path, version: &Version, file: &File, len: u64) -> Option<Arc<Mapping>> {
    let mut gone = Vec::new();
    // (Unmapped outside the lock.)
    let found = cache().current(path, version, &mut gone);
    drop(gone);
    if found.is_some() {
        return found;
    }
    let map = Arc::new(Mapping::new(file, len)?);
    if len > MAX_KEPT {
        return Some(map);
    }
    let mut gone = Vec::new();
    let mut c = cache();
    // (Another reader may have mapped it meanwhile: keep one of the two.)
    if let Some(k) = c.current(path, version, &mut gone) {
        return Some(k);
    }
    while c.bytes + len > MAX_KEPT {
        let Some(oldest) = c
            .kept
            .iter()
            .min_by_key(|(_, k)| k.used)
            .map(|(p, _)| p.clone())
        else {
            break;
        };
        let old = c.kept.remove(&oldest).expect("present");
        c.bytes -= old.map.len as u64;
        gone.push(old);
    }
    c.bytes += len;
    c.kept.insert(
        path.to_path_buf(),
        Kept {
            version: version.clone(),
            map: map.clone(),
            used: Instant::now(),
        },
    );
    let me = std::process::id();
    if c.sweeper != Some(me) {
        c.sweeper = std::thread::Builder::new()
            .name("h5lake-mappings".into())
            .spawn(sweep)
            .is_ok()
            .then_some(me);
    }
    drop(c);
    drop(gone);
    Some(map)
}

/// Drops mappings idle for longer than [`IDLE`]; ends when none is left.
fn sweep() {
    loop {
        std::thread::sleep(IDLE / 4);
        let mut gone = Vec::new();
        let done = {
            let mut c = cache();
            let now = Instant::now();
            let idle: Vec<PathBuf> = c
                .kept
                .iter()
                .filter(|(_, k)| now.duration_since(k.used) > IDLE)
                .map(|(p, _)| p.clone())
                .collect();
            for p in idle {
                let old = c.kept.remove(&p).expect("present");
                c.bytes -= old.map.len as u64;
                gone.push(old);
            }
            if c.kept.is_empty() {
                c.sweeper = None;
            }
            c.sweeper.is_none()
        };
        // (Unmapped here, outside the lock; a mapping still read from is
        // unmapped when its last slice goes.)
        drop(gone);
        if done {
            return;
        }
    }
}

/// Drops the kept mapping of `path` (a deleted object); slices still held
/// keep it until they go.
pub(crate) fn forget(path: &Path) {
    let gone = {
        let mut c = cache();
        let old = c.kept.remove(path);
        if let Some(old) = &old {
            c.bytes -= old.map.len as u64;
        }
        old
    };
    drop(gone);
}

/// Drops every kept mapping (slices still held keep theirs until they
/// go): what a new process starts with.
pub fn forget_all() {
    let gone: Vec<Kept> = {
        let mut c = cache();
        c.bytes = 0;
        c.kept.drain().map(|(_, k)| k).collect()
    };
    drop(gone);
}

/// Whether a mapping of `path` is kept, for tests.
pub fn is_kept(path: &Path) -> bool {
    cache().kept.contains_key(path)
}
