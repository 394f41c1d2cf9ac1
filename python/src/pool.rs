//! Big NumPy arrays that reads fill, from a pool of pages already touched.
//!
//! A fresh NumPy array's pages come from the kernel zeroed on first touch:
//! for a read of hundreds of megabytes, the zeroing costs about as much as
//! the read (two thirds of a warm full read's samples were the kernel's
//! `clear_page`). Reads allocate their output through NumPy's memory
//! handler API (NEP 49) with the handler below: when such an array is
//! freed its pages are kept, up to a cap and for a few seconds, and the
//! next big read of about that size writes into them without a fault.
//! Small arrays, and every other allocation NumPy makes, are left to
//! `malloc`.

use std::collections::HashMap;
use std::ffi::c_void;
use std::sync::{LazyLock, Mutex};
use std::time::{Duration, Instant};

use pyo3::prelude::*;
use pyo3::sync::GILOnceCell;
use pyo3::types::PyCapsule;

/// Arrays smaller than this come from `malloc`: their zeroing is cheap.
pub(crate) const MIN_POOLED: usize = 4 << 20;
/// Blocks are mapped in multiples of this, so near sizes share blocks.
const ROUND: usize = 2 << 20;
/// A block unused this long goes back to the system.
const IDLE: Duration = Duration::from_secs(5);

struct Idle {
    ptr: usize,
    cap: usize,
    since: Instant,
}

struct Pool {
    /// Blocks handed out: address → mapped size.
    live: HashMap<usize, usize>,
    /// Blocks kept for reuse, oldest first.
    idle: Vec<Idle>,
    idle_bytes: usize,
    /// Most bytes kept idle.
    cap: usize,
    /// The process whose sweeper thread runs (a forked child has none).
    sweeper: Option<u32>,
}

static POOL: LazyLock<Mutex<Pool>> = LazyLock::new(|| {
    Mutex::new(Pool {
        live: HashMap::new(),
        idle: Vec::new(),
        idle_bytes: 0,
        cap: configured_cap(),
        sweeper: None,
    })
});

/// `$H5LAKE_READ_POOL` (bytes, with an optional K/M/G suffix; 0 keeps
/// nothing), else an eighth of the machine's memory, at most 2 GiB.
fn configured_cap() -> usize {
    if let Ok(v) = std::env::var("H5LAKE_READ_POOL") {
        let v = v.trim();
        let off = || {
            eprintln!(
                "h5lake: H5LAKE_READ_POOL={v:?} is not a size (512M, 1.5G): the read pool is off"
            );
            0
        };
        let (num, unit) = match v.char_indices().find(|(_, c)| c.is_ascii_alphabetic()) {
            Some((i, _)) => (&v[..i], v[i..].to_ascii_uppercase()),
            None => (v, String::new()),
        };
        let scale: f64 = match unit.trim_end_matches(['B', 'I']) {
            "" => 1.0,
            "K" => 1024.0,
            "M" => 1024.0 * 1024.0,
            "G" => 1024.0 * 1024.0 * 1024.0,
            _ => return off(),
        };
        return match num.trim().parse::<f64>() {
            Ok(n) if n >= 0.0 => (n * scale) as usize,
            _ => off(),
        };
    }
    // SAFETY: sysconf only reads system constants.
    let (pages, size) = unsafe {
        (
            libc::sysconf(libc::_SC_PHYS_PAGES),
            libc::sysconf(libc::_SC_PAGESIZE),
        )
    };
    let total = usize::try_from(pages.max(0))
        .unwrap_or(0)
        .saturating_mul(usize::try_from(size.max(0)).unwrap_or(0));
    (total / 8).min(2 << 30)
}

fn lock() -> std::sync::MutexGuard<'static, Pool> {
    POOL.lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// A new mapping of `cap` bytes (a multiple of [`ROUND`]) starting on a
/// [`ROUND`] boundary, with huge pages asked for as NumPy asks for them
/// for its big arrays: first touches then fault (and zero) 2 MiB at a
/// time instead of 4 KiB.
fn map(cap: usize) -> *mut c_void {
    let Some(len) = cap.checked_add(ROUND) else {
        return std::ptr::null_mut();
    };
    // SAFETY: a new private anonymous mapping; nothing else refers to it.
    let p = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        )
    };
    if p == libc::MAP_FAILED {
        return std::ptr::null_mut();
    }
    let start = p as usize;
    let aligned = start.next_multiple_of(ROUND);
    // SAFETY: the unaligned head and the tail past `cap` are parts of the
    // mapping just made, given back; the rest is advised, never required.
    unsafe {
        if aligned > start {
            libc::munmap(p, aligned - start);
        }
        let tail = start + len - (aligned + cap);
        if tail > 0 {
            libc::munmap((aligned + cap) as *mut c_void, tail);
        }
        libc::madvise(aligned as *mut c_void, cap, libc::MADV_HUGEPAGE);
    }
    aligned as *mut c_void
}

fn unmap(blocks: Vec<(usize, usize)>) {
    for (ptr, cap) in blocks {
        // SAFETY: a mapping of ours that nothing refers to any more.
        unsafe { libc::munmap(ptr as *mut c_void, cap) };
    }
}

/// A block of at least `size` bytes: an idle one not much bigger, else a
/// new mapping (whose pages the kernel zeroes as they are touched).
fn take(size: usize, zeroed: bool) -> *mut c_void {
    if !zeroed {
        let mut p = lock();
        let best = p
            .idle
            .iter()
            .enumerate()
            .filter(|(_, b)| b.cap >= size && b.cap - size <= size / 2)
            .min_by_key(|(_, b)| b.cap)
            .map(|(i, _)| i);
        if let Some(i) = best {
            let b = p.idle.remove(i);
            p.idle_bytes -= b.cap;
            p.live.insert(b.ptr, b.cap);
            return b.ptr as *mut c_void;
        }
    }
    let Some(cap) = size.checked_next_multiple_of(ROUND) else {
        return std::ptr::null_mut();
    };
    let ptr = map(cap);
    if !ptr.is_null() {
        lock().live.insert(ptr as usize, cap);
    }
    ptr
}

/// Keeps the handed-out block `ptr` for reuse, or returns it (and the
/// oldest idle blocks, past the cap) to the system.
fn give_back(ptr: usize, cap: usize) {
    let mut gone = Vec::new();
    {
        let mut p = lock();
        if cap > p.cap {
            gone.push((ptr, cap));
        } else {
            while p.idle_bytes + cap > p.cap {
                let old = p.idle.remove(0);
                p.idle_bytes -= old.cap;
                gone.push((old.ptr, old.cap));
            }
            p.idle.push(Idle {
                ptr,
                cap,
                since: Instant::now(),
            });
            p.idle_bytes += cap;
            let me = std::process::id();
            if p.sweeper != Some(me) {
                p.sweeper = std::thread::Builder::new()
                    .name("h5lake-pool".into())
                    .spawn(sweep)
                    .is_ok()
                    .then_some(me);
            }
        }
    }
    unmap(gone);
}

/// Returns blocks idle for longer than [`IDLE`]; ends when none is left.
fn sweep() {
    loop {
        std::thread::sleep(Duration::from_secs(1));
        let mut gone = Vec::new();
        let done = {
            let mut p = lock();
            let now = Instant::now();
            let mut kept = Vec::with_capacity(p.idle.len());
            for b in std::mem::take(&mut p.idle) {
                if now.duration_since(b.since) > IDLE {
                    gone.push((b.ptr, b.cap));
                } else {
                    kept.push(b);
                }
            }
            p.idle_bytes = kept.iter().map(|b| b.cap).sum();
            p.idle = kept;
            if p.idle.is_empty() {
                p.sweeper = None;
            }
            p.sweeper.is_none()
        };
        unmap(gone);
        if done {
            return;
        }
    }
}

// ---- NumPy's memory handler (NEP 49) ----------------------------------------

extern "C" fn h_malloc(_ctx: *mut c_void, size: usize) -> *mut c_void {
    if size < MIN_POOLED {
        // SAFETY: plain malloc.
        return unsafe { libc::malloc(size.max(1)) };
    }
    take(size, false)
}

extern "C" fn h_calloc(_ctx: *mut c_void, n: usize, elsize: usize) -> *mut c_void {
    let Some(size) = n.checked_mul(elsize) else {
        return std::ptr::null_mut();
    };
    if size < MIN_POOLED {
        // SAFETY: plain calloc.
        return unsafe { libc::calloc(n.max(1), elsize.max(1)) };
    }
    take(size, true)
}

extern "C" fn h_realloc(ctx: *mut c_void, ptr: *mut c_void, size: usize) -> *mut c_void {
    if ptr.is_null() {
        return h_malloc(ctx, size);
    }
    let cap = lock().live.get(&(ptr as usize)).copied();
    let (old, small) = match cap {
        Some(cap) if size <= cap => return ptr,
        Some(cap) => (cap, false),
        // SAFETY: `ptr` came from malloc (not ours): realloc it, or copy
        // out what it holds.
        None if size < MIN_POOLED => return unsafe { libc::realloc(ptr, size.max(1)) },
        None => (unsafe { libc::malloc_usable_size(ptr) }, true),
    };
    let new = h_malloc(ctx, size);
    if !new.is_null() {
        // SAFETY: both blocks hold at least `old.min(size)` bytes and are
        // distinct.
        unsafe { std::ptr::copy_nonoverlapping(ptr as *const u8, new as *mut u8, old.min(size)) };
        if small {
            // SAFETY: from malloc, and no longer used.
            unsafe { libc::free(ptr) };
        } else {
            lock().live.remove(&(ptr as usize));
            give_back(ptr as usize, old);
        }
    }
    new
}

extern "C" fn h_free(_ctx: *mut c_void, ptr: *mut c_void, _size: usize) {
    if ptr.is_null() {
        return;
    }
    let cap = lock().live.remove(&(ptr as usize));
    match cap {
        Some(cap) => give_back(ptr as usize, cap),
        // SAFETY: not ours, so from malloc.
        None => unsafe { libc::free(ptr) },
    }
}

#[repr(C)]
struct Allocator {
    ctx: *mut c_void,
    malloc: extern "C" fn(*mut c_void, usize) -> *mut c_void,
    calloc: extern "C" fn(*mut c_void, usize, usize) -> *mut c_void,
    realloc: extern "C" fn(*mut c_void, *mut c_void, usize) -> *mut c_void,
    free: extern "C" fn(*mut c_void, *mut c_void, usize),
}

/// NumPy's `PyDataMem_Handler`, version 1.
#[repr(C)]
struct Handler {
    name: [u8; 127],
    version: u8,
    allocator: Allocator,
}

// SAFETY: the handler is immutable; its context pointer is unused (null).
unsafe impl Sync for Handler {}

const fn handler_name() -> [u8; 127] {
    let mut name = [0u8; 127];
    let s = b"h5lake_read_pool";
    let mut i = 0;
    while i < s.len() {
        name[i] = s[i];
        i += 1;
    }
    name
}

static HANDLER: Handler = Handler {
    name: handler_name(),
    version: 1,
    allocator: Allocator {
        ctx: std::ptr::null_mut(),
        malloc: h_malloc,
        calloc: h_calloc,
        realloc: h_realloc,
        free: h_free,
    },
};

type SetHandler = unsafe extern "C" fn(*mut pyo3::ffi::PyObject) -> *mut pyo3::ffi::PyObject;

/// NumPy's `PyDataMem_SetHandler` and our handler's capsule; `None` when
/// NumPy has no handler API (before 1.22) or the pool is off.
fn handler(py: Python<'_>) -> Option<&'static (SetHandler, Py<PyCapsule>)> {
    // (A GIL-aware cell: the import below may let the GIL go, and a plain
    // once-lock held across that could deadlock another thread's read.)
    static FOUND: GILOnceCell<Option<(SetHandler, Py<PyCapsule>)>> = GILOnceCell::new();
    FOUND
        .get_or_init(py, || {
            if lock().cap == 0 {
                return None;
            }
            let module = py
                .import("numpy._core._multiarray_umath")
                .or_else(|_| py.import("numpy.core._multiarray_umath"))
                .ok()?;
            let api = module.getattr("_ARRAY_API").ok()?;
            let api = api.downcast::<PyCapsule>().ok()?;
            let version: u32 = py
                .import("numpy")
                .ok()?
                .getattr("__version__")
                .ok()?
                .extract::<String>()
                .ok()?
                .split('.')
                .take(2)
                .map(|p| p.parse::<u32>().unwrap_or(0))
                .fold(0, |acc, p| acc * 1000 + p);
            if version < 1022 {
                return None;
            }
            // SAFETY: NumPy's C API table; entry 304 is PyDataMem_SetHandler
            // from NumPy 1.22 on (checked above), with this signature.
            let set: SetHandler = unsafe {
                let table = api.pointer() as *const *const c_void;
                std::mem::transmute::<*const c_void, SetHandler>(*table.add(304))
            };
            // SAFETY: a capsule of a static handler, named as NumPy wants.
            let capsule = unsafe {
                let raw = pyo3::ffi::PyCapsule_New(
                    &HANDLER as *const Handler as *mut c_void,
                    c"mem_handler".as_ptr(),
                    None,
                );
                Bound::from_owned_ptr_or_opt(py, raw)?
                    .downcast_into::<PyCapsule>()
                    .ok()?
                    .unbind()
            };
            Some((set, capsule))
        })
        .as_ref()
}

/// `numpy.empty(shape, dtype)` whose data comes from the pool (from
/// `malloc` below [`MIN_POOLED`] bytes, or when the pool is off).
#[pyfunction]
pub(crate) fn pooled_empty<'py>(
    py: Python<'py>,
    shape: &Bound<'py, PyAny>,
    dtype: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyAny>> {
    let empty = py.import("numpy")?.getattr("empty")?;
    let Some((set, capsule)) = handler(py) else {
        return empty.call1((shape, dtype));
    };
    // SAFETY: NumPy's own function, given a handler capsule; it returns the
    // handler it replaces (a new reference), which is put back below.
    let old = unsafe { set(capsule.as_ptr()) };
    if old.is_null() {
        return Err(PyErr::fetch(py));
    }
    let out = empty.call1((shape, dtype));
    // SAFETY: as above; `old` is owned here and released after use.
    unsafe {
        let back = set(old);
        pyo3::ffi::Py_DECREF(old);
        if back.is_null() {
            return Err(PyErr::fetch(py));
        }
        pyo3::ffi::Py_DECREF(back);
    }
    out
}

/// (bytes handed out, bytes kept idle, cap) of the pool, for tests.
#[pyfunction]
pub(crate) fn pool_state() -> (usize, usize, usize) {
    let p = lock();
    (p.live.values().sum(), p.idle_bytes, p.cap)
}

/// Drops the mappings of chunk objects kept between reads (see
/// `h5lake_store::mapped`): their pages can then leave the page cache.
#[pyfunction]
pub(crate) fn release_mappings() {
    h5lake_store::mapped::forget_all();
}
