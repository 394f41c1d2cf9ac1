#!/usr/bin/env python3
"""Side-by-side throughput benchmark: h5lake vs h5py vs zarr-python 3.

One process measures all three libraries on the same data, interleaving the
libraries within each run (the starting library rotates from run to run) so
that background load on a shared machine hits everyone alike.  Every timed
operation is end to end from Python (open/create ... close) with
``time.perf_counter``; throughput is reported in MB/s (1 MB = 10**6 bytes) of
*logical* (uncompressed, in-memory) bytes.  The OS page cache is dropped
between the write and each read when the process may write
``/proc/sys/vm/drop_caches`` (root); otherwise reads are warm-cache and
RESULTS.md says so.

Cases (``--only`` takes a comma-separated list of names or prefixes):

  memcpy              numpy copy of the 2-D array into a preallocated buffer
  array-none          2-D float32, 512x512 chunks (1 MiB), no filters
  array-gzip          same, shuffle + gzip level 4
  array-zstd          same, zstd level 3 (no shuffle)
  particles-1d        VPIC-IO-like: 8 x 1-D datasets, 1 Mi elements/chunk
  particles-compound  VPIC-IO-like: 1 compound dataset, 128 Ki elements/chunk

Usage:  python3 bench/run.py --size-mb 1024
        python3 bench/run.py --size-mb 256 --particles 4000000 --runs 3
        python3 bench/run.py --only array-gzip,memcpy --runs 5
"""

import argparse
import datetime
import os
import platform
import shutil
import statistics
import sys
import tempfile
import time
import traceback
import warnings

import numpy as np

warnings.filterwarnings("ignore")  # zarr warns about numcodecs/structured dtypes

import h5py  # noqa: E402
import zarr  # noqa: E402
import zarr.codecs as zc  # noqa: E402
from zarr.storage import LocalStore  # noqa: E402

import h5lake  # noqa: E402

try:
    import hdf5plugin  # noqa: F401  (registers the zstd filter with h5py)
    HAVE_HDF5PLUGIN = True
except Exception:  # pragma: no cover
    HAVE_HDF5PLUGIN = False

HERE = os.path.dirname(os.path.abspath(__file__))
LIBS = ("h5lake", "h5py", "zarr")
CHUNK2D = (512, 512)
PARTICLE_CHUNK_1D = 1 << 20          # 1 Mi elements = 4 MiB for 4-byte props
PARTICLE_CHUNK_COMPOUND = 1 << 17    # 128 Ki elements x 32 B = 4 MiB
PROPS = [("x", "<f4"), ("y", "<f4"), ("z", "<f4"),
         ("px", "<f4"), ("py", "<f4"), ("pz", "<f4"),
         ("id1", "<i4"), ("id2", "<i4")]
PART_DTYPE = np.dtype(PROPS)
XYZ = ["x", "y", "z"]


def log(*a):
    print(*a, flush=True)


# --------------------------------------------------------------------------
# environment

def cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def mem_total_gib():
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemTotal"):
                    return int(line.split()[1]) / 2**20
    except OSError:
        pass
    return float("nan")


def cached_kib():
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith("Cached:"):
                return int(line.split()[1])
    return -1


class CacheDropper:
    """sync + echo 3 > /proc/sys/vm/drop_caches, if permitted."""

    def __init__(self, enabled=True):
        self.works = False
        self.note = "disabled with --no-drop-caches: reads are warm-cache"
        if not enabled:
            return
        before = cached_kib()
        try:
            self._drop()
            after = cached_kib()
            self.works = True
            self.note = ("works (running as root; page cache 'Cached:' went "
                         "%d MiB -> %d MiB on the start-up probe): reads are cold-cache"
                         % (before // 1024, after // 1024))
        except OSError as exc:
            self.note = "NOT possible (%s): reads are warm-cache" % exc

    @staticmethod
    def _drop():
        # Pages a process maps stay in the page cache when it is dropped:
        # h5lake's kept mappings of chunk objects go first, as a fresh
        # process would have none.
        try:
            from h5lake import _core
            _core.release_mappings()
        except (ImportError, AttributeError):
            pass
        os.sync()
        with open("/proc/sys/vm/drop_caches", "w") as f:
            f.write("3\n")

    def __call__(self):
        if self.works:
            self._drop()
        else:
            os.sync()


def du(path):
    if os.path.isfile(path):
        return os.path.getsize(path)
    total = 0
    for root, _dirs, files in os.walk(path):
        for name in files:
            try:
                total += os.path.getsize(os.path.join(root, name))
            except OSError:
                pass
    return total


def rm(path):
    if os.path.isdir(path):
        shutil.rmtree(path, ignore_errors=True)
    elif os.path.exists(path):
        os.remove(path)


# --------------------------------------------------------------------------
# data

def array_shape(size_mb):
    n = size_mb * 2**20 // 4
    side = max(512, int(n ** 0.5) // 512 * 512)
    rows = max(512, n // side // 512 * 512)
    return rows, side


def make_field(shape, seed=0):
    """Smooth 2-D field (a few waves + gradient) plus small Gaussian noise.

    Realistically compressible: sign/exponent/high mantissa bytes are very
    regular, the low mantissa bytes are noisy.  Not random bytes, not zeros.
    """
    rows, cols = shape
    rng = np.random.default_rng(seed)
    out = np.empty(shape, dtype=np.float32)
    x = np.linspace(0, 6 * np.pi, cols, dtype=np.float32)
    sx, cx = np.sin(x), np.cos(0.5 * x)
    step = 1024
    for r0 in range(0, rows, step):
        r1 = min(rows, r0 + step)
        y = np.linspace(0, 4 * np.pi, rows, dtype=np.float32)[r0:r1, None]
        blk = 280.0 + 25.0 * np.cos(y) * sx + 8.0 * np.sin(1.7 * y) * cx
        blk += 0.02 * np.float32(r0) / rows
        blk += rng.standard_normal((r1 - r0, cols), dtype=np.float32) * np.float32(0.05)
        out[r0:r1] = blk
    return out


def make_particles(n, seed=1):
    """VPIC-like: positions uniform in a box, momenta Maxwellian, ids."""
    rng = np.random.default_rng(seed)
    cols = {
        "x": rng.random(n, dtype=np.float32) * np.float32(100.0),
        "y": rng.random(n, dtype=np.float32) * np.float32(100.0),
        "z": rng.random(n, dtype=np.float32) * np.float32(100.0),
        "px": rng.standard_normal(n, dtype=np.float32),
        "py": rng.standard_normal(n, dtype=np.float32),
        "pz": rng.standard_normal(n, dtype=np.float32),
        "id1": np.arange(n, dtype=np.int32),
        "id2": rng.integers(0, 2**20, n, dtype=np.int32),
    }
    return cols


# --------------------------------------------------------------------------
# per-library operations.  Each returns nothing for writes and the data read
# for reads; the caller times them.

FILTERS = {
    # name: (h5lake/h5py kwargs, zarr compressors, description)
    "none": "no filters",
    "gzip": "shuffle + gzip level 4 (zarr: numcodecs Shuffle + GzipCodec(level=4))",
    "zstd": "zstd level 3, no shuffle (h5py via hdf5plugin filter 32015; zarr: ZstdCodec(level=3))",
}


def h5_filter_kwargs(lib, filt):
    if filt == "none":
        return {}
    if filt == "gzip":
        return dict(compression="gzip", compression_opts=4, shuffle=True)
    if filt == "zstd":
        if lib == "h5lake":
            return dict(compression="zstd", compression_opts=3)
        if not HAVE_HDF5PLUGIN:
            raise NotAvailable("h5py has no zstd without hdf5plugin")
        return dict(hdf5plugin.Zstd(clevel=3))
    raise ValueError(filt)


def zarr_compressors(filt):
    if filt == "none":
        return None
    if filt == "gzip":
        return [zc.Shuffle(), zc.GzipCodec(level=4)]
    if filt == "zstd":
        return [zc.ZstdCodec(level=3)]
    raise ValueError(filt)


class NotAvailable(Exception):
    pass


def h5mod(lib):
    return h5lake if lib == "h5lake" else h5py


# --- 2-D array

def array_write(lib, path, arr, filt):
    if lib == "zarr":
        z = zarr.create_array(store=LocalStore(path), shape=arr.shape, chunks=CHUNK2D,
                              dtype=arr.dtype, compressors=zarr_compressors(filt),
                              filters=None, fill_value=0, zarr_format=3, overwrite=True)
        z[...] = arr
        return
    kw = h5_filter_kwargs(lib, filt)
    with h5mod(lib).File(path, "w") as f:
        d = f.create_dataset("data", shape=arr.shape, dtype=arr.dtype, chunks=CHUNK2D, **kw)
        d[...] = arr


def array_read(lib, path):
    if lib == "zarr":
        return zarr.open_array(LocalStore(path, read_only=True), mode="r")[...]
    with h5mod(lib).File(path, "r") as f:
        return f["data"][...]


# --- particles, 8 x 1-D

def p1d_write(lib, path, cols):
    n = len(cols["x"])
    if lib == "zarr":
        g = zarr.open_group(LocalStore(path), mode="w", zarr_format=3)
        for name, dt in PROPS:
            z = g.create_array(name, shape=(n,), chunks=(min(PARTICLE_CHUNK_1D, n),), dtype=dt,
                               compressors=None, filters=None, fill_value=0)
            z[...] = cols[name]
        return
    with h5mod(lib).File(path, "w") as f:
        for name, dt in PROPS:
            d = f.create_dataset(name, shape=(n,), dtype=dt, chunks=(min(PARTICLE_CHUNK_1D, n),))
            d[...] = cols[name]


def p1d_read(lib, path, names):
    if lib == "zarr":
        g = zarr.open_group(LocalStore(path, read_only=True), mode="r")
        return {nm: g[nm][...] for nm in names}
    with h5mod(lib).File(path, "r") as f:
        return {nm: f[nm][...] for nm in names}


# --- particles, compound

def pc_write(lib, path, rec):
    n = rec.shape[0]
    if lib == "zarr":
        z = zarr.create_array(store=LocalStore(path), shape=(n,), chunks=(min(PARTICLE_CHUNK_COMPOUND, n),),
                              dtype=rec.dtype, compressors=None, filters=None,
                              zarr_format=3, overwrite=True)
        z[...] = rec
        return
    with h5mod(lib).File(path, "w") as f:
        d = f.create_dataset("particles", shape=(n,), dtype=rec.dtype,
                             chunks=(min(PARTICLE_CHUNK_COMPOUND, n),))
        d[...] = rec


def pc_read(lib, path, names=None):
    if lib == "zarr":
        z = zarr.open_array(LocalStore(path, read_only=True), mode="r")
        full = z[...]
        # zarr 3.1's get_basic_selection(fields=...) raises TypeError on
        # structured arrays, so read everything and select the fields.
        return full if names is None else full[names]
    with h5mod(lib).File(path, "r") as f:
        d = f["particles"]
        if names is None:
            return d[...]
        return d.fields(names)[:]


# --------------------------------------------------------------------------
# verification (outside the timed region, first run only)

def same(a, b):
    a = np.asarray(a)
    b = np.asarray(b)
    if a.shape != b.shape:
        return False
    if a.dtype.names:
        return all(np.array_equal(a[n], b[n]) for n in b.dtype.names)
    return np.array_equal(a, b)


def check_dict(got, cols):
    return set(got) and all(same(got[k], cols[k]) for k in got)


# --------------------------------------------------------------------------
# runner

class Result:
    def __init__(self):
        self.times = {}      # (op, lib) -> [seconds]
        self.logical = {}    # op -> bytes
        self.errors = {}     # (op, lib) -> str
        self.disk = {}       # lib -> bytes on disk
        self.note = ""


def timed(fn, *a):
    t0 = time.perf_counter()
    out = fn(*a)
    return time.perf_counter() - t0, out


def run_lib_ops(res, lib, ops, run_idx, dropper):
    """ops: list of (op name, callable, verifier or None). First op is the write.

    If the write fails, the reads are skipped (recorded as errors)."""
    for op, fn, verify in ops:
        key = (op, lib)
        if key in res.errors:
            continue
        if op != "write":
            dropper()
            if not dropper.works:
                # Warm means warm for every library alike: one untimed pass,
                # so the timed read finds the data in the page cache and the
                # process's memory settled. (Right after a big write, fresh
                # transparent huge pages for numpy's output arrays come slowly,
                # and whichever library reads first would pay for that.)
                try:
                    fn()
                except Exception:
                    pass    # the timed call below records the error
        try:
            dt, out = timed(fn)
        except NotAvailable as exc:
            res.errors[key] = "n/a: %s" % exc
            if op == "write":
                for op2, _, _ in ops[1:]:
                    res.errors[(op2, lib)] = "n/a: %s" % exc
                return
            continue
        except Exception as exc:
            tb = traceback.format_exc(limit=3)
            res.errors[key] = "%s: %s" % (type(exc).__name__, exc)
            log("    !! %s %s failed: %s\n%s" % (lib, op, exc, tb))
            if op == "write":
                for op2, _, _ in ops[1:]:
                    res.errors[(op2, lib)] = "skipped: write failed"
                return
            continue
        if run_idx == 0 and verify is not None:
            ok = verify(out)
            if not ok:
                res.errors[key] = "WRONG DATA read back (timing discarded)"
                log("    !! %s %s: data mismatch" % (lib, op))
                continue
        del out
        res.times.setdefault(key, []).append(dt)
        log("    run %d %-7s %-10s %8.3f s" % (run_idx + 1, lib, op, dt))


def rotated(run_idx):
    k = run_idx % len(LIBS)
    return LIBS[k:] + LIBS[:k]


def ensure_space(tmp, need):
    free = shutil.disk_usage(tmp).free
    if free < need:
        raise RuntimeError("not enough disk space in %s: %.1f GB free, need %.1f GB"
                           % (tmp, free / 1e9, need / 1e9))


def case_array(filt, arr, args, tmp, dropper):
    res = Result()
    nbytes = arr.nbytes
    res.logical = {"write": nbytes, "read": nbytes}
    res.note = FILTERS[filt]
    ensure_space(tmp, 2 * nbytes + 2**30)
    for r in range(args.runs):
        for lib in rotated(r):
            path = os.path.join(tmp, "%s-%s-%d.%s" % (lib, filt, r,
                                {"h5lake": "h5l", "h5py": "h5", "zarr": "zarr"}[lib]))
            ops = [
                ("write", lambda: array_write(lib, path, arr, filt), None),
                ("read", lambda: array_read(lib, path), lambda out: same(out, arr)),
            ]
            _run_all(res, lib, ops, r, dropper, path)
    return res


def case_particles_1d(cols, args, tmp, dropper):
    res = Result()
    n = len(cols["x"])
    res.logical = {"write": 32 * n, "read": 32 * n, "read x,y,z": 12 * n}
    res.note = "8 one-dimensional datasets, %d elements/chunk, no filters" % PARTICLE_CHUNK_1D
    ensure_space(tmp, 2 * 32 * n + 2**30)
    all_names = [p for p, _ in PROPS]
    for r in range(args.runs):
        for lib in rotated(r):
            path = os.path.join(tmp, "%s-p1d-%d" % (lib, r))
            ops = [
                ("write", lambda: p1d_write(lib, path, cols), None),
                ("read", lambda: p1d_read(lib, path, all_names), lambda o: check_dict(o, cols)),
                ("read x,y,z", lambda: p1d_read(lib, path, XYZ), lambda o: check_dict(o, cols)),
            ]
            _run_all(res, lib, ops, r, dropper, path)
    return res


def case_particles_compound(rec, args, tmp, dropper):
    res = Result()
    n = rec.shape[0]
    res.logical = {"write": 32 * n, "read": 32 * n, "read x,y,z": 12 * n}
    res.note = ("one compound dataset (8 fields, 32 B/element), %d elements/chunk "
                "(4 MiB), no filters; 3-field read = `dset.fields(['x','y','z'])[:]` "
                "(zarr: full read then `arr[['x','y','z']]`)" % PARTICLE_CHUNK_COMPOUND)
    ensure_space(tmp, 2 * 32 * n + 2**30)
    for r in range(args.runs):
        for lib in rotated(r):
            path = os.path.join(tmp, "%s-pc-%d" % (lib, r))
            ops = [
                ("write", lambda: pc_write(lib, path, rec), None),
                ("read", lambda: pc_read(lib, path), lambda o: same(o, rec)),
                ("read x,y,z", lambda: pc_read(lib, path, XYZ), lambda o: same(o, rec[XYZ])),
            ]
            _run_all(res, lib, ops, r, dropper, path)
    return res


def _run_all(res, lib, ops, r, dropper, path):
    run_lib_ops(res, lib, ops[:1], r, dropper)
    if os.path.exists(path):
        res.disk[lib] = du(path)
    if ("write", lib) not in res.errors:
        run_lib_ops(res, lib, ops[1:], r, dropper)
    else:
        for op, _, _ in ops[1:]:
            res.errors.setdefault((op, lib), "skipped: write failed")
    rm(path)


def case_memcpy(arr, args):
    buf = np.empty_like(arr)
    np.copyto(buf, arr)  # fault the pages in, untimed
    times = []
    for _ in range(max(args.runs, 3)):
        t0 = time.perf_counter()
        np.copyto(buf, arr)
        times.append(time.perf_counter() - t0)
    del buf
    return times


def case_rawfile(arr, args, tmp, dropper):
    """Plain-file reference: arr.tofile / np.fromfile of one contiguous file.

    Not a target, only context: it shows what the disk + page cache deliver
    to a single thread with no format at all."""
    path = os.path.join(tmp, "raw.bin")
    wt, rt = [], []
    for _ in range(args.runs):
        t0 = time.perf_counter()
        arr.tofile(path)
        wt.append(time.perf_counter() - t0)
        dropper()
        t0 = time.perf_counter()
        out = np.fromfile(path, dtype=arr.dtype)
        rt.append(time.perf_counter() - t0)
        del out
        rm(path)
    return wt, rt


# --------------------------------------------------------------------------
# report

def mbps(nbytes, t):
    return nbytes / t / 1e6


def fmt(x, nd=0):
    return ("%." + str(nd) + "f") % x


def targets_for(case, op):
    """List of (label, kind, threshold) applying to (case, op)."""
    t = []
    if case == "array-gzip" and op == "write":
        t.append(("≥3× h5py", "h5py", 3.0))
    if case in ("array-gzip", "array-zstd") and op.startswith("read"):
        t.append(("≥2× h5py", "h5py", 2.0))
    if case in ("array-none", "particles-1d", "particles-compound") and op.startswith("read"):
        t.append(("≥1.5× h5py", "h5py", 1.5))
    if case == "array-none" and op == "read":
        t.append(("≥40% memcpy", "memcpy", 0.40))
    t.append(("≥1.5× zarr", "zarr", 1.5))
    return t


def write_report(path, env, results, memcpy_times, rawfile_times, arr_nbytes, args, started, finished):
    L = []
    L.append("# h5lake vs h5py vs zarr-python 3 — throughput\n")
    L.append("Generated by `bench/run.py` (%s). Command: `%s`\n"
             % (finished.strftime("%Y-%m-%d %H:%M"), " ".join(["python3", "bench/run.py"] + sys.argv[1:])))
    L.append("## Machine and software\n")
    for k, v in env:
        if k.startswith("_"):
            continue
        L.append("- **%s**: %s" % (k, v))
    L.append("")
    L.append("## Method\n")
    L.append("- Median of %d runs per case and library; MB/s = 10^6 bytes of *logical* "
             "(uncompressed, in-memory) data per second. Ratios are h5lake MB/s ÷ peer MB/s "
             "(> 1 means h5lake is faster)." % args.runs)
    L.append("- Each timing is end to end from Python with `time.perf_counter`: write = create "
             "file/store + create dataset(s) + `dset[...] = arr` + close; read = open + "
             "`dset[...]` (new array) + close. No fsync in any library: writes end in the page "
             "cache, as h5py users see them.")
    if dropped_ok(env):
        L.append("- Page cache: %s. It is dropped (`sync; echo 3 > /proc/sys/vm/drop_caches`) "
                 "before every read, so reads include the disk (a virtual disk here) and "
                 "cold directory lookups." % env_dict(env)["Page-cache drop"])
    else:
        L.append("- Page cache: %s (only `sync` between write and read), and each timed "
                 "read follows one untimed read of the same data, so every library starts "
                 "warm (page cache and process memory alike)." % env_dict(env)["Page-cache drop"])
    L.append("- Every read returns a freshly allocated numpy array, so it also pays the "
             "page faults of a new buffer, which the memcpy baseline (preallocated) does not.")
    L.append("- Within a run the libraries are interleaved and the starting library rotates "
             "from run to run; the first run verifies every read against the source data "
             "(outside the timed region).")
    L.append("- 2-D array: float32 %s (%.0f MiB), chunks 512×512 (1 MiB); data = smooth "
             "waves + Gaussian noise (σ=0.05 on values ≈ 280), i.e. compressible like real "
             "simulation output, not random bytes or zeros." % (env_dict(env)["_shape"], arr_nbytes / 2**20))
    L.append("- Particles: %d particles × 8 properties (x y z px py pz float32, id1 id2 int32) "
             "= %.0f MiB; x,y,z uniform, momenta normal, id1 = arange, id2 random."
             % (args.particles, 32 * args.particles / 2**20))
    L.append("- h5py is single-threaded (libhdf5); zarr-python uses its default config "
             "(async concurrency %s, codecs in a thread pool); h5lake uses its default "
             "(Rust engine, parallel chunk I/O + codecs)." % zarr.config.get("async.concurrency"))
    L.append("- The machine has %d cores; anything else running competes with the multi-threaded "
             "libraries (h5lake, zarr) most, so load averages are listed per case." % os.cpu_count())
    L.append("")

    L.append("## Results\n")
    if memcpy_times:
        mc = mbps(arr_nbytes, statistics.median(memcpy_times))
        L.append("Physical limit, `memcpy` (numpy `copyto` of the %.0f MiB array into a "
                 "preallocated buffer, single thread): **%s MB/s** (runs: %s s).\n"
                 % (arr_nbytes / 2**20, fmt(mc), ", ".join("%.3f" % t for t in memcpy_times)))
    else:
        mc = None
    if rawfile_times:
        wt, rt = rawfile_times
        L.append("Context only (not a target): one plain file, `arr.tofile` → %s MB/s, "
                 "%s `np.fromfile` → %s MB/s (single thread, no format).\n"
                 % (fmt(mbps(arr_nbytes, statistics.median(wt))),
                    "cold" if dropped_ok(env) else "warm",
                    fmt(mbps(arr_nbytes, statistics.median(rt)))))

    L.append("| case | op | h5lake MB/s | h5py MB/s | zarr MB/s | h5lake/h5py | h5lake/zarr | targets |")
    L.append("|---|---|---:|---:|---:|---:|---:|---|")
    misses = []
    for case, res in results.items():
        for op in res.logical:
            med = {}
            cell = {}
            for lib in LIBS:
                key = (op, lib)
                if key in res.errors:
                    cell[lib] = "n/a" if res.errors[key].startswith("n/a") else "ERROR"
                elif key in res.times:
                    med[lib] = mbps(res.logical[op], statistics.median(res.times[key]))
                    cell[lib] = fmt(med[lib])
                else:
                    cell[lib] = "—"
            ratios = {}
            for peer in ("h5py", "zarr"):
                if "h5lake" in med and peer in med:
                    ratios[peer] = med["h5lake"] / med[peer]
            if mc and "h5lake" in med:
                ratios["memcpy"] = med["h5lake"] / mc
            tcells = []
            for label, kind, thr in targets_for(case, op):
                if kind in ratios:
                    ok = ratios[kind] >= thr
                    extra = " (%.0f%%)" % (100 * ratios[kind]) if kind == "memcpy" else ""
                    tcells.append("%s %s%s" % (label, "✅" if ok else "❌", extra))
                    if not ok:
                        misses.append("%s %s: %s, got %.2f" % (case, op, label,
                                                                 ratios[kind]))
                else:
                    tcells.append("%s ?" % label)
            L.append("| %s | %s | %s | %s | %s | %s | %s | %s |" % (
                case, op, cell["h5lake"], cell["h5py"], cell["zarr"],
                fmt(ratios["h5py"], 2) + "×" if "h5py" in ratios else "—",
                fmt(ratios["zarr"], 2) + "×" if "zarr" in ratios else "—",
                "; ".join(tcells)))
    L.append("")
    L.append("Targets (from the issue): gzip write ≥ 3× h5py; compressed reads ≥ 2× h5py; "
             "uncompressed read ≥ 1.5× h5py and ≥ 40% of memcpy; ≥ 1.5× zarr-python in every "
             "case. ✅ met, ❌ missed, ? not measurable.\n")
    if misses:
        L.append("Missed targets in this run: " + "; ".join(misses) + ".\n")

    L.append("## Size on disk (last run)\n")
    L.append("| case | logical MiB | h5lake MiB | h5py MiB | zarr MiB | ratio h5lake / h5py / zarr |")
    L.append("|---|---:|---:|---:|---:|---|")
    for case, res in results.items():
        lg = res.logical["write"]
        cells = [fmt(res.disk[lib] / 2**20, 1) if lib in res.disk else "—" for lib in LIBS]
        rat = " / ".join(fmt(lg / res.disk[lib], 2) if res.disk.get(lib) else "—" for lib in LIBS)
        L.append("| %s | %.0f | %s | %s | %s | %s |" % (case, lg / 2**20, *cells, rat))
    L.append("")

    errs = [(case, op, lib, msg) for case, res in results.items()
            for (op, lib), msg in sorted(res.errors.items())]
    L.append("## Errors and unavailable combinations\n")
    if errs:
        for case, op, lib, msg in errs:
            L.append("- %s / %s / %s: `%s`" % (case, op, lib, msg.replace("`", "'")))
    else:
        L.append("- none")
    L.append("")

    L.append("## Case details and raw timings (seconds, in run order)\n")
    for case, res in results.items():
        L.append("**%s** — %s. Load average at start of case: %s.\n" % (case, res.note, res.load))
        for op in res.logical:
            parts = []
            for lib in LIBS:
                ts = res.times.get((op, lib))
                if ts:
                    parts.append("%s [%s]" % (lib, ", ".join("%.3f" % t for t in ts)))
            L.append("- %s (%.0f MiB): %s" % (op, res.logical[op] / 2**20, "; ".join(parts) or "—"))
        L.append("")
    L.append("Started %s, finished %s (wall %.0f s).\n" % (
        started.strftime("%Y-%m-%d %H:%M:%S"), finished.strftime("%Y-%m-%d %H:%M:%S"),
        (finished - started).total_seconds()))
    with open(path, "w") as f:
        f.write("\n".join(L))


def env_dict(env):
    return dict(env)


def dropped_ok(env):
    return env_dict(env)["Page-cache drop"].startswith("works")


# --------------------------------------------------------------------------

ALL_CASES = ["memcpy", "array-none", "array-gzip", "array-zstd",
             "particles-1d", "particles-compound"]


def select_cases(only):
    if not only:
        return list(ALL_CASES)
    want = []
    for tok in only.split(","):
        tok = tok.strip()
        hits = [c for c in ALL_CASES if c == tok or c.startswith(tok)]
        if not hits:
            raise SystemExit("unknown case %r; choose from %s" % (tok, ", ".join(ALL_CASES)))
        want += [h for h in hits if h not in want]
    return [c for c in ALL_CASES if c in want]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--size-mb", type=int, default=1024, help="2-D array size in MiB (default 1024)")
    ap.add_argument("--particles", type=int, default=16 * 2**20,
                    help="number of particles (default 16 Mi)")
    ap.add_argument("--runs", type=int, default=3, help="runs per case (median reported; default 3)")
    ap.add_argument("--only", default=None,
                    help="comma-separated case names or prefixes: " + ", ".join(ALL_CASES))
    ap.add_argument("--tmp", default="/tmp", help="parent of the temporary directory")
    ap.add_argument("--out", default=os.path.join(HERE, "RESULTS.md"))
    ap.add_argument("--no-drop-caches", action="store_true")
    args = ap.parse_args()
    if args.runs < 1:
        raise SystemExit("--runs must be >= 1")
    cases = select_cases(args.only)

    started = datetime.datetime.now()
    dropper = CacheDropper(not args.no_drop_caches)
    log("page-cache drop:", dropper.note)

    shape = array_shape(args.size_mb)
    env = [
        ("Date", started.strftime("%Y-%m-%d %H:%M %Z").strip()),
        ("CPU", "%s — %d logical cores (os.cpu_count), %s usable by this process"
         % (cpu_model(), os.cpu_count(), len(os.sched_getaffinity(0)))),
        ("RAM", "%.1f GiB" % mem_total_gib()),
        ("OS", "%s %s" % (platform.system(), platform.release())),
        ("Python", platform.python_version()),
        ("h5lake", "%s (%s)" % (getattr(h5lake, "__version__", "?"), os.path.dirname(h5lake.__file__))),
        ("h5py", "%s, libhdf5 %s" % (h5py.version.version, h5py.version.hdf5_version)),
        ("hdf5plugin", hdf5plugin.version if HAVE_HDF5PLUGIN else "not installed (h5py zstd n/a)"),
        ("zarr", zarr.__version__),
        ("numcodecs", __import__("numcodecs").__version__),
        ("numpy", np.__version__),
        ("Temp dir filesystem", "%s (free %.0f GB at start)" % (args.tmp, shutil.disk_usage(args.tmp).free / 1e9)),
        ("Page-cache drop", dropper.note),
        ("Load average at start", "%.2f %.2f %.2f" % os.getloadavg()),
        ("_shape", "%d×%d" % shape),
    ]

    tmp = tempfile.mkdtemp(prefix="h5lake-bench-", dir=args.tmp)
    log("temp dir:", tmp)
    results = {}
    memcpy_times = None
    rawfile_times = None
    arr = None
    parts = None
    try:
        need_arr = any(c.startswith("array") or c == "memcpy" for c in cases)
        if need_arr:
            log("generating %d×%d float32 field (%.0f MiB) ..." % (shape[0], shape[1], shape[0] * shape[1] * 4 / 2**20))
            arr = make_field(shape)
        for case in cases:
            la = "%.2f %.2f %.2f" % os.getloadavg()
            log("\n== %s (load %s)" % (case, la))
            case_dir = tempfile.mkdtemp(prefix=case + "-", dir=tmp)
            try:
                if case == "memcpy":
                    memcpy_times = case_memcpy(arr, args)
                    log("    memcpy median %.0f MB/s" % mbps(arr.nbytes, statistics.median(memcpy_times)))
                    rawfile_times = case_rawfile(arr, args, case_dir, dropper)
                    log("    raw file write/read median %.0f / %.0f MB/s" % tuple(
                        mbps(arr.nbytes, statistics.median(t)) for t in rawfile_times))
                    continue
                if case.startswith("array-"):
                    res = case_array(case.split("-", 1)[1], arr, args, case_dir, dropper)
                elif case == "particles-1d":
                    if parts is None:
                        parts = make_particles(args.particles)
                    res = case_particles_1d(parts, args, case_dir, dropper)
                elif case == "particles-compound":
                    if parts is None:
                        parts = make_particles(args.particles)
                    rec = np.empty(args.particles, dtype=PART_DTYPE)
                    for name, _ in PROPS:
                        rec[name] = parts[name]
                    res = case_particles_compound(rec, args, case_dir, dropper)
                    del rec
                res.load = la
                results[case] = res
            finally:
                shutil.rmtree(case_dir, ignore_errors=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

    env.append(("Load average at end", "%.2f %.2f %.2f" % os.getloadavg()))
    finished = datetime.datetime.now()
    env_out = [e for e in env if not e[0].startswith("_")]
    env_out.append(("_shape", env_dict(env)["_shape"]))
    write_report(args.out, env_out, results, memcpy_times, rawfile_times,
                 arr.nbytes if arr is not None else args.size_mb * 2**20, args, started, finished)
    log("\nwrote", args.out)


if __name__ == "__main__":
    main()
