#!/usr/bin/env python3
"""Real HDF5 files in h5lake: `h5lake.load` (copy and link mode) and reading
a loaded ICESat-2-like file, side by side with h5py (and zarr for the load).

Companion of run.py (same machine probe, cache dropping, timing and number
formatting, imported from there); writes RESULTS-hdf5.md.  Everything is
timed end to end from Python with ``time.perf_counter``.  When the process
may write /proc/sys/vm/drop_caches (root) the page cache is dropped before
every timed load and every cold read.

Cases (``--only`` takes a comma-separated list):

  load    a ~2 GiB (logical) 2-D float32 file, 1 MiB chunks, shuffle+gzip 4,
          written by h5py.  Timed: h5lake.load (copy), h5lake.load(link=True),
          h5py copying every top-level object into a new file (raw chunk
          copy), h5py -> zarr v3 conversion (Shuffle + GzipCodec(4)), and a
          plain `cp` of the file for context.
  icesat  ~500 1-D datasets in 6 beam groups (gt1l ... gt3r), f8/f4/i8,
          ~80 KB chunks, shuffle+gzip 6, ~1 GiB logical.  Loaded as h5lake
          copy, link without hyper-chunks and link with (default) hyper-chunks
          (load times reported), then timed: open, read the same 10% row
          range of 20 random datasets, close -- h5py on the file vs the three
          stores, cold (caches dropped) and warm (second pass).  Every read is
          compared with h5py's values; a mismatch aborts the run.

Usage:  python3 bench/hdf5_io.py                       # defaults, ~5 min on 2 cores
        python3 bench/hdf5_io.py --load-mb 256 --icesat-mb 128 --icesat-datasets 100 --runs 1
        python3 bench/hdf5_io.py --only icesat --runs 5
"""

import argparse
import datetime
import inspect
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import traceback

import numpy as np

# run.py sits next to this file; `python3 bench/hdf5_io.py` already puts the
# directory on sys.path, this also covers running it from elsewhere.
HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)

import run as base  # noqa: E402  (also imports h5py, zarr, h5lake, silences zarr warnings)
from run import CacheDropper, du, rm, mbps, fmt, timed  # noqa: E402

import h5py  # noqa: E402
import zarr  # noqa: E402
from zarr.storage import LocalStore  # noqa: E402

import h5lake  # noqa: E402

# load(keep_chunks=True) (copy mode storing the file's chunk bytes as they
# are, no re-encoding) is newer than load() itself: time it when present.
try:
    HAVE_KEEP = "keep_chunks" in inspect.signature(h5lake.load).parameters
except (TypeError, ValueError):
    HAVE_KEEP = False

LOAD_CHUNK = (512, 512)               # float32: 1 MiB per chunk
ICESAT_CHUNK_BYTES = 80_000           # ~80 KB chunks: 10 000 x 8 B, 20 000 x 4 B
ICESAT_GZIP = 6
BEAMS = ["gt1l", "gt1r", "gt2l", "gt2r", "gt3l", "gt3r"]
SEGMENT_RATIO = 20                    # segment-rate datasets are this much shorter
PICKS = 20                            # datasets read per timed ICESat read
ROW_FRACTION = 0.10                   # ... each this fraction of its rows
SEED = 20240515

# ATL03-flavoured names; beyond the list, numbered auxiliary variables.
HEIGHTS_NAMES = ["delta_time", "h_ph", "lat_ph", "lon_ph", "dist_ph_across",
                 "dist_ph_along", "pce_mframe_cnt", "ph_id_channel", "ph_id_count",
                 "ph_id_pulse", "quality_ph", "weight_ph"]
SEGMENT_NAMES = ["delta_time", "reference_photon_lat", "reference_photon_lon",
                 "segment_id", "segment_length", "altitude_sc", "bounce_time_offset",
                 "full_sat_fract", "near_sat_fract", "ph_index_beg", "pitch",
                 "podppd_flag", "ref_azimuth", "ref_elev", "roll", "segment_dist_x",
                 "segment_ph_cnt", "sigma_across", "sigma_along", "sigma_h",
                 "solar_azimuth", "solar_elevation", "surf_type", "tx_pulse_energy",
                 "velocity_sc", "yaw", "dac", "dem_h", "geoid", "tide_earth",
                 "tide_load", "tide_ocean", "tide_pole"]
# f8 40 %, f4 35 %, i8 25 % (in a fixed rotation, so every group mixes them)
DTYPE_CYCLE = ["<f8", "<f4", "<i8", "<f8", "<f4", "<f8", "<i8", "<f4", "<f8", "<f4",
               "<f8", "<i8", "<f8", "<f4", "<f8", "<i8", "<f4", "<f8", "<f4", "<i8"]


def log(*a):
    print(*a, file=sys.stderr, flush=True)


class Mismatch(SystemExit):
    """Wrong values read back: the run stops (exit status 3) -- a benchmark
    of a reader that returns wrong data is meaningless."""

    def __init__(self, msg):
        log("\n!!!!!!!! DATA MISMATCH: %s !!!!!!!!\n" % msg)
        super().__init__(3)


def check_equal(what, got, ref):
    got = np.asarray(got)
    if got.dtype != ref.dtype or got.shape != ref.shape or not np.array_equal(got, ref):
        raise Mismatch("%s: got %s %s, h5py has %s %s%s" % (
            what, got.dtype, got.shape, ref.dtype, ref.shape,
            "" if got.shape != ref.shape else
            " (%d of %d elements differ)" % (int(np.count_nonzero(got != ref)), ref.size)))


def median(xs):
    return statistics.median(xs) if xs else float("nan")


def count_files(path):
    if os.path.isfile(path):
        return 1
    return sum(len(files) for _r, _d, files in os.walk(path))


def h5_logical_bytes(path):
    """Sum of every dataset's in-memory size (what a full read returns)."""
    total = [0]

    def visit(_name, obj):
        if isinstance(obj, h5py.Dataset) and obj.shape is not None:
            total[0] += obj.size * obj.dtype.itemsize
    with h5py.File(path, "r") as f:
        f.visititems(visit)
    return total[0]


def h5_datasets(path):
    out = []
    with h5py.File(path, "r") as f:
        f.visititems(lambda n, o: out.append(n) if isinstance(o, h5py.Dataset) else None)
    return out


# --------------------------------------------------------------------------
# timed operations: each runs one whole user-level action and returns what
# the caller needs for verification.

class Op:
    """One timed operation with its samples (seconds) or its error."""

    def __init__(self, name, fn):
        self.name = name
        self.fn = fn          # fn(run_index) -> anything
        self.times = []
        self.error = None
        self.extra = {}       # per-op facts for the report (sizes, load report)


def run_op(op, r, dropper):
    """Drop caches, time op.fn(r). An exception is recorded, not raised
    (peers may lack a feature); Mismatch always propagates."""
    if op.error:
        return None
    dropper()
    try:
        dt, out = timed(op.fn, r)
    except Mismatch:
        raise
    except Exception as exc:
        op.error = "%s: %s" % (type(exc).__name__, exc)
        log("    !! %s failed: %s\n%s" % (op.name, exc, traceback.format_exc(limit=4)))
        return None
    op.times.append(dt)
    log("    run %d  %-22s %8.3f s" % (r + 1, op.name, dt))
    return out


def rotate(seq, r):
    k = r % len(seq)
    return seq[k:] + seq[:k]


# --------------------------------------------------------------------------
# case 1: load a big 2-D file

def make_load_source(path, size_mb):
    """h5py writes a realistic gridded product: one big 2-D float32 field
    (run.py's smooth waves + noise, ~2x with shuffle+gzip 4), coordinates,
    a small flag dataset and attributes."""
    shape = base.array_shape(size_mb)
    log("  generating %d x %d float32 field (%.0f MiB) ..." % (shape[0], shape[1],
                                                              shape[0] * shape[1] * 4 / 2**20))
    arr = base.make_field(shape)
    log("  writing it with h5py (shuffle + gzip 4, %dx%d chunks) ..." % LOAD_CHUNK)
    gz = dict(compression="gzip", compression_opts=4, shuffle=True)
    t0 = time.perf_counter()
    with h5py.File(path, "w") as f:
        f.attrs["title"] = "synthetic surface temperature"
        f.attrs["institution"] = "h5lake bench"
        f.attrs["history"] = "bench/hdf5_io.py"
        d = f.create_dataset("temperature", data=arr, chunks=LOAD_CHUNK, **gz)
        d.attrs["units"] = "K"
        d.attrs["long_name"] = "surface temperature"
        d.attrs["_FillValue"] = np.float32(-9999)
        f.create_dataset("y", data=np.linspace(-90, 90, shape[0]), chunks=True, **gz)
        f.create_dataset("x", data=np.linspace(-180, 180, shape[1]), chunks=True, **gz)
        g = f.create_group("metadata")
        g.attrs["platform"] = "model"
        g.create_dataset("quality_flag", data=(arr[::64, ::64] > 280).astype(np.int8),
                         chunks=True, **gz)
    log("  written in %.1f s" % (time.perf_counter() - t0))
    del arr


def h5py_copy(src, dst):
    """What an h5py user does to copy a file: H5Ocopy of every top-level
    object (chunks are copied raw, not decoded) plus the root attributes."""
    with h5py.File(src, "r") as s, h5py.File(dst, "w") as d:
        for k, v in s.attrs.items():
            d.attrs[k] = v
        for name in s:
            s.copy(s[name], d, name=name)


def h5py_to_zarr(src, dst, block_bytes=64 << 20):
    """h5py -> zarr v3 conversion as a user would write it: same tree, same
    chunks, Shuffle + GzipCodec at the source's gzip level (the codecs run.py
    uses for zarr's gzip case), copied in blocks of whole chunk rows so every
    zarr write is a batch of complete chunks."""
    root = zarr.open_group(LocalStore(dst), mode="w", zarr_format=3)

    def attrs_of(obj):
        return {k: (v.item() if isinstance(v, np.generic) else
                    v.tolist() if isinstance(v, np.ndarray) else v)
                for k, v in obj.attrs.items()}

    with h5py.File(src, "r") as s:
        root.attrs.update(attrs_of(s))

        def visit(name, obj):
            if isinstance(obj, h5py.Group):
                g = root.create_group(name)
                g.attrs.update(attrs_of(obj))
                return
            level = obj.compression_opts if obj.compression == "gzip" else 4
            comp = [zarr.codecs.Shuffle(), zarr.codecs.GzipCodec(level=level)] if obj.shuffle \
                else [zarr.codecs.GzipCodec(level=level)]
            z = root.create_array(name, shape=obj.shape, chunks=obj.chunks, dtype=obj.dtype,
                                  compressors=comp, filters=None, fill_value=0)
            z.attrs.update(attrs_of(obj))
            if obj.ndim == 0:
                z[...] = obj[()]
                return
            row_bytes = obj.dtype.itemsize * int(np.prod(obj.shape[1:], dtype=np.int64))
            rows = max(obj.chunks[0], block_bytes // max(row_bytes, 1) // obj.chunks[0] * obj.chunks[0])
            for r0 in range(0, obj.shape[0], rows):
                z[r0:r0 + rows] = obj[r0:r0 + rows]
        s.visititems(visit)


def verify_load(kind, path, src, ref, full):
    """Compare what was loaded/converted with h5py's reading of the source.
    ``full``: every dataset entirely; else every small dataset plus three
    chunk-row bands (first, middle, last) of the big one."""
    t0 = time.perf_counter()
    names = list(ref)
    if kind == "zarr":
        g = zarr.open_group(LocalStore(path, read_only=True), mode="r")
        get = lambda n, sl: g[n][sl]  # noqa: E731
        close = lambda: None  # noqa: E731
    else:
        f = (h5lake if kind == "h5lake" else h5py).File(path, "r")
        get = lambda n, sl: f[n][sl]  # noqa: E731
        close = f.close
    try:
        for n in names:
            a = ref[n]
            if full or a.nbytes < 64 << 20 or a.ndim == 0:
                check_equal("%s %s" % (path, n), get(n, ()), a)
                continue
            band = LOAD_CHUNK[0]
            for r0 in (0, (a.shape[0] // 2) // band * band, max(0, a.shape[0] - band)):
                sl = np.s_[r0:r0 + band]
                check_equal("%s %s[%d:%d]" % (path, n, r0, r0 + band), get(n, sl), a[sl])
    finally:
        close()
    log("    verified %s (%s) in %.1f s" % (os.path.basename(path), "all values" if full else "sampled",
                                             time.perf_counter() - t0))


def case_load(args, tmp, dropper):
    src = os.path.join(tmp, "field.h5")
    make_load_source(src, args.load_mb)
    logical = h5_logical_bytes(src)
    ondisk = os.path.getsize(src)
    log("  source: %.0f MiB logical, %.0f MiB on disk (%.2fx)"
        % (logical / 2**20, ondisk / 2**20, logical / ondisk))
    base.ensure_space(tmp, 3 * ondisk + 2**30)

    log("  reading the reference values with h5py ...")
    ref = {}
    with h5py.File(src, "r") as f:
        for n in h5_datasets(src):
            ref[n] = f[n][()]

    def out_path(tag, r):
        return os.path.join(tmp, "%s-%d" % (tag, r))

    def h5lake_copy(r):
        return h5lake.load(src, out_path("copy.h5l", r))

    def h5lake_keep(r):
        return h5lake.load(src, out_path("keep.h5l", r), keep_chunks=True)

    def h5lake_link(r):
        return h5lake.load(src, out_path("link.h5l", r), link=True)

    def py_copy(r):
        h5py_copy(src, out_path("h5pycopy.h5", r))

    def to_zarr(r):
        h5py_to_zarr(src, out_path("conv.zarr", r))

    def cp(r):
        shutil.copyfile(src, out_path("cp.h5", r))

    ops = [Op("h5lake load (copy)", h5lake_copy)]
    if HAVE_KEEP:
        ops.append(Op("h5lake load (copy, keep_chunks)", h5lake_keep))
    ops += [Op("h5lake load (link)", h5lake_link),
           Op("h5py copy", py_copy),
           Op("h5py → zarr", to_zarr),
           Op("cp (plain file copy)", cp)]
    tags = {"h5lake load (copy)": ("copy.h5l", "h5lake"), "h5lake load (link)": ("link.h5l", "h5lake"),
            "h5lake load (copy, keep_chunks)": ("keep.h5l", "h5lake"),
            "h5py copy": ("h5pycopy.h5", "h5py"), "h5py → zarr": ("conv.zarr", "zarr"),
            "cp (plain file copy)": ("cp.h5", "h5py")}
    for r in range(args.runs):
        log("  -- run %d/%d" % (r + 1, args.runs))
        for op in rotate(ops, r):
            out = run_op(op, r, dropper)
            tag, kind = tags[op.name]
            path = out_path(tag, r)
            if op.error:
                rm(path)
                continue
            op.extra["size"] = du(path)
            op.extra["files"] = count_files(path)
            if isinstance(out, dict):
                op.extra["report"] = out
                if out.get("skipped"):
                    log("    !! %s skipped: %s" % (op.name, out["skipped"]))
            if r == 0:
                # Outside the timed region.  The h5lake stores (what is
                # under test) are checked completely, the peers sampled.
                verify_load(kind, path, src, ref, full=kind == "h5lake")
            rm(path)
    del ref
    rm(src)
    return dict(ops=ops, logical=logical, ondisk=ondisk, shape=base.array_shape(args.load_mb))


# --------------------------------------------------------------------------
# case 2: ICESat-2-like file

def icesat_plan(n_datasets, total_mb):
    """[(path, dtype, length, chunk_elems)]: per beam a third of the datasets
    photon-rate (heights/, long) and the rest segment-rate (geolocation/ and
    geophys_corr/, SEGMENT_RATIO times shorter), lengths scaled so the total
    logical size is about total_mb MiB."""
    specs = []
    for i in range(n_datasets):
        beam = BEAMS[i % len(BEAMS)]
        k = i // len(BEAMS)                   # index within the beam
        dt = DTYPE_CYCLE[i % len(DTYPE_CYCLE)]
        if k % 3 == 0:
            j = k // 3
            grp, photon = "heights", True
            name = HEIGHTS_NAMES[j] if j < len(HEIGHTS_NAMES) else "aux_%03d" % j
        else:
            j = k - k // 3 - 1                # 0, 1, 2, ... over the segment-rate ones
            grp, photon = ("geolocation", "geophys_corr")[j % 2], False
            name = SEGMENT_NAMES[j] if j < len(SEGMENT_NAMES) else "aux_%03d" % j
        specs.append(("%s/%s/%s" % (beam, grp, name), dt, photon))
    weight = sum(np.dtype(dt).itemsize * (1.0 if ph else 1.0 / SEGMENT_RATIO) for _, dt, ph in specs)
    n_photon = int(total_mb * 2**20 / weight)
    out = []
    for path, dt, photon in specs:
        n = n_photon if photon else max(1, n_photon // SEGMENT_RATIO)
        ce = min(n, ICESAT_CHUNK_BYTES // np.dtype(dt).itemsize)
        out.append((path, dt, n, ce))
    return out


def icesat_values(idx, path, dt, n, rng):
    """Along-track values that compress like real ones (2-4x with
    shuffle+gzip): smooth signals with sensor-like noise, monotonic times
    and counters, small categorical integers."""
    leaf = path.rsplit("/", 1)[1]
    t = np.arange(n, dtype=np.float64)
    if dt == "<i8":
        if "cnt" in leaf or "id" in leaf or "index" in leaf or idx % 2:
            return np.cumsum(rng.integers(0, 4, n, dtype=np.int64)) + 10**6 * (idx % 7)
        return rng.integers(0, 5, n, dtype=np.int64)
    if "delta_time" in leaf and dt == "<f8":
        # (a float32 delta_time would be one constant value at 4.1e7)
        return 4.1e7 + t * 1e-4 + rng.normal(0, 2e-6, n)
    phase = (idx % 13) * 0.37
    smooth = np.sin(t * 2e-5 + phase) * 50 + np.sin(t * 3e-4 + 2 * phase) * 5
    if dt == "<f8":
        return (60.0 + (idx % 5) * 0.5 + smooth * 1e-2 + rng.normal(0, 1e-5, n)).astype(np.float64)
    return (400.0 + smooth + rng.normal(0, 0.4, n)).astype(np.float32)


ICESAT_ATTRS = {"units": "meters", "contentType": "physicalMeasurement",
                "description": "synthetic along-track variable (bench)",
                "source": "bench/hdf5_io.py", "coordinates": "delta_time lat_ph lon_ph"}


def make_icesat_source(path, plan, layout):
    """h5py writes the plan.  layout 'sequential' writes dataset after
    dataset, so each dataset's chunks sit next to each other in the file;
    'interleaved' writes all datasets block by block (like a producer
    appending along time), so chunks of different datasets alternate."""
    gz = dict(compression="gzip", compression_opts=ICESAT_GZIP, shuffle=True)
    t0 = time.perf_counter()
    # Without a chunk cache every chunk gets its file space when it is
    # written; with one, libhdf5 would hold each dataset's chunks back and
    # write them together, undoing the interleaving.
    cache = dict(rdcc_nbytes=0) if layout == "interleaved" else {}
    with h5py.File(path, "w", **cache) as f:
        f.attrs["short_name"] = "ATL03-like"
        f.attrs["title"] = "synthetic ICESat-2-like granule (bench)"
        for b in BEAMS:
            g = f.require_group(b)
            g.attrs["atlas_beam_type"] = "strong" if b.endswith("l") else "weak"
            g.attrs["atlas_spot_number"] = str(BEAMS.index(b) + 1)
        dsets = []
        for i, (p, dt, n, ce) in enumerate(plan):
            d = f.create_dataset(p, shape=(n,), dtype=dt, chunks=(ce,), **gz)
            for k, v in ICESAT_ATTRS.items():
                d.attrs[k] = v
            d.attrs["long_name"] = p.rsplit("/", 1)[1]
            dsets.append(d)
            if layout == "sequential":
                d[...] = icesat_values(i, p, dt, n, np.random.default_rng(SEED + i))
        if layout == "interleaved":
            vals = [icesat_values(i, p, dt, n, np.random.default_rng(SEED + i))
                    for i, (p, dt, n, ce) in enumerate(plan)]
            nblocks = max(n // ce for _p, _dt, n, ce in plan) or 1
            for blk in range(nblocks + 1):
                for (p, dt, n, ce), d, v in zip(plan, dsets, vals):
                    nch = -(-n // ce)
                    per = -(-nch // (nblocks + 1))
                    a, b = blk * per * ce, min(n, (blk + 1) * per * ce)
                    if a < b:
                        d[a:b] = v[a:b]
    log("  written in %.1f s" % (time.perf_counter() - t0))


def icesat_picks(plan):
    """PICKS datasets (fixed seed) and the same relative row range in each:
    ROW_FRACTION of the rows from one random offset."""
    rng = np.random.default_rng(SEED)
    idx = sorted(rng.choice(len(plan), size=min(PICKS, len(plan)), replace=False))
    frac = float(rng.uniform(0, 1 - ROW_FRACTION))
    picks = []
    for i in idx:
        p, _dt, n, _ce = plan[i]
        a = int(frac * n)
        picks.append((p, a, min(n, a + max(1, int(ROW_FRACTION * n)))))
    return picks, frac


def icesat_read(mod, path, picks, phases):
    """The timed user action; ``phases`` gets open/read/close seconds."""
    t0 = time.perf_counter()
    f = mod.File(path, "r")
    t1 = time.perf_counter()
    out = {}
    try:
        for name, a, b in picks:
            out[name] = f[name][a:b]
    finally:
        t2 = time.perf_counter()
        f.close()
        t3 = time.perf_counter()
    phases.append((t1 - t0, t2 - t1, t3 - t2))
    return out


def case_icesat(args, tmp, dropper):
    plan = icesat_plan(args.icesat_datasets, args.icesat_mb)
    src = os.path.join(tmp, "icesat.h5")
    log("  writing %d datasets with h5py (%s layout, shuffle + gzip %d, ~%d KB chunks) ..."
        % (len(plan), args.icesat_layout, ICESAT_GZIP, ICESAT_CHUNK_BYTES // 1000))
    make_icesat_source(src, plan, args.icesat_layout)
    logical = h5_logical_bytes(src)
    ondisk = os.path.getsize(src)
    nchunks = sum(-(-n // ce) for _p, _dt, n, ce in plan)
    log("  source: %.0f MiB logical, %.0f MiB on disk (%.2fx), %d chunks"
        % (logical / 2**20, ondisk / 2**20, logical / ondisk, nchunks))
    base.ensure_space(tmp, 3 * ondisk + 2**30)

    # reader name -> (store path, load() keywords, load operation name)
    variants = {"h5lake copy": ("copy.h5l", {}, "h5lake load (copy)"),
                "h5lake copy+keep": ("keep.h5l", dict(keep_chunks=True),
                                     "h5lake load (copy, keep_chunks)"),
                "h5lake link": ("link.h5l", dict(link=True, hyperchunk=0), "h5lake load (link)"),
                "h5lake link+hyper": ("hyper.h5l", dict(link=True), "h5lake load (link+hyper)")}
    if not HAVE_KEEP:
        del variants["h5lake copy+keep"]
    stores = {k: os.path.join(tmp, v[0]) for k, v in variants.items()}
    h5copy = os.path.join(tmp, "h5pycopy.h5")
    # (op, output path): each output is removed before its timed load, not inside it
    loads = [(Op(variants[k][2],
                 lambda _r, k=k: h5lake.load(src, stores[k], **variants[k][1])), stores[k])
             for k in stores]
    loads.append((Op("h5py copy", lambda _r: h5py_copy(src, h5copy)), h5copy))
    log("  loads")
    for r in range(args.runs):
        for op, path in rotate(loads, r):
            rm(path)
            out = run_op(op, r, dropper)
            if isinstance(out, dict):
                op.extra["report"] = out
                if out.get("skipped"):
                    log("    !! %s skipped: %s" % (op.name, out["skipped"]))
    for op, path in loads:
        if not op.error:
            op.extra["size"] = du(path)
            op.extra["files"] = count_files(path)
    rm(h5copy)
    failed = {k for (op, _p), k in zip(loads, stores) if op.error}
    loads = [op for op, _p in loads]

    picks, frac = icesat_picks(plan)
    log("  reference read with h5py: %d datasets, rows at %.1f%% .. +%d%% of each"
        % (len(picks), 100 * frac, 100 * ROW_FRACTION))
    ref = icesat_read(h5py, src, picks, [])
    nbytes = sum(a.nbytes for a in ref.values())
    # The loads just wrote (and the cleanup deleted) hundreds of MB and
    # thousands of files; let that writeback finish before timing reads of a
    # few MB, which it would otherwise disturb.
    os.sync()
    time.sleep(3)

    readers = [("h5py", h5py, src)] + [(k, h5lake, v) for k, v in stores.items() if k not in failed]
    reads = {name: dict(cold=[], warm=[], cold_phases=[], warm_phases=[]) for name, _m, _p in readers}
    log("  reads (%d KiB per read, %d cold+warm pairs per reader per run)"
        % (nbytes // 1024, args.read_repeats))
    for r in range(args.runs):
        # A read takes tens of milliseconds, so one sample is at the mercy of
        # a single scheduler hiccup: each run takes read_repeats cold+warm
        # pairs per reader, readers interleaved, and the report gives the
        # median over all of them.
        for rep in range(args.read_repeats):
            for name, mod, path in rotate(readers, r + rep):
                rec = reads[name]
                for temp in ("cold", "warm"):
                    if temp == "cold":
                        dropper()
                    t, out = timed(icesat_read, mod, path, picks, rec[temp + "_phases"])
                    # abort loudly on any difference from h5py's values
                    for pname, a, b in picks:
                        check_equal("%s %s[%d:%d] (%s read)" % (name, pname, a, b, temp),
                                    out[pname], ref[pname])
                    rec[temp].append(t)
        log("    run %d  " % (r + 1) + "  ".join(
            "%s %.1f/%.1f ms" % (name, 1e3 * median(v["cold"][-args.read_repeats:]),
                                 1e3 * median(v["warm"][-args.read_repeats:]))
            for name, v in reads.items()) + "  (cold/warm medians)")
    rm(src)
    for p in stores.values():
        rm(p)
    return dict(loads=loads, reads=reads, logical=logical, ondisk=ondisk, nchunks=nchunks,
                plan=plan, picks=picks, frac=frac, nbytes=nbytes)


# --------------------------------------------------------------------------
# report

def environment(args, dropper):
    return [
        ("CPU", "%s — %d logical cores (os.cpu_count), %d usable by this process"
         % (base.cpu_model(), os.cpu_count(), len(os.sched_getaffinity(0)))),
        ("RAM", "%.1f GiB" % base.mem_total_gib()),
        ("OS", "%s %s" % (platform.system(), platform.release())),
        ("Python", platform.python_version()),
        ("h5lake", "%s (%s)" % (getattr(h5lake, "__version__", "?"), os.path.dirname(h5lake.__file__))),
        ("h5py", "%s, libhdf5 %s" % (h5py.version.version, h5py.version.hdf5_version)),
        ("zarr", zarr.__version__),
        ("numcodecs", __import__("numcodecs").__version__),
        ("numpy", np.__version__),
        ("Scratch filesystem", "%s, %s (free %.0f GB at start)" % (
            args.tmp, fs_type(args.tmp), shutil.disk_usage(args.tmp).free / 1e9)),
        ("Page-cache drop", dropper.note),
        ("Load average at start", "%.2f %.2f %.2f" % os.getloadavg()),
    ]


def fs_type(path):
    try:
        return subprocess.run(["stat", "-f", "-c", "%T", path], capture_output=True,
                              text=True, check=True).stdout.strip()
    except Exception:
        return "?"


def sec(ts):
    return ", ".join("%.3f" % t for t in ts)


def mib(n):
    return "%.0f" % (n / 2**20)


def report_load(L, res, cold):
    ops = res["ops"]
    logical, ondisk = res["logical"], res["ondisk"]
    L.append("## 1. Loading a big HDF5 file\n")
    L.append("Source: written by h5py — `temperature` float32 %d×%d, chunks %d×%d (1 MiB), "
             "shuffle + gzip 4, plus `x`, `y`, `metadata/quality_flag` and attributes: "
             "**%s MiB logical, %s MiB on disk** (%.2f× compression). MB/s = 10^6 bytes of "
             "source data per second, counted both ways. Speed ratios are h5py-copy time ÷ "
             "this time (> 1 = faster than h5py's copy). %s\n"
             % (res["shape"][0], res["shape"][1], LOAD_CHUNK[0], LOAD_CHUNK[1],
                mib(logical), mib(ondisk), logical / ondisk,
                "Page cache dropped before every timed operation (cold source)." if cold
                else "Page cache NOT dropped: the source may be warm."))
    L.append("Load average: %s at start, %s at end.\n" % res["load_avg"])
    ref = next((op for op in ops if op.name == "h5py copy" and op.times), None)
    t_ref = median(ref.times) if ref else None
    L.append("| operation | median s | MB/s logical | MB/s on disk | vs h5py copy | output MiB | files |")
    L.append("|---|---:|---:|---:|---:|---:|---:|")
    for op in ops:
        if op.error:
            L.append("| %s | ERROR | | | | | |" % op.name)
            continue
        t = median(op.times)
        L.append("| %s | %.2f | %s | %s | %s | %.1f | %d |" % (
            op.name, t, fmt(mbps(logical, t)), fmt(mbps(ondisk, t)),
            "%.2f×" % (t_ref / t) if t_ref else "—",
            op.extra.get("size", 0) / 2**20, op.extra.get("files", 0)))
    L.append("")
    L.append("- h5lake load (copy): every chunk read with `pread`, decoded and re-encoded "
             "(same shuffle + gzip 4) into the store; (link): metadata only, datasets "
             "point at the source's chunk byte ranges (default 4 MiB hyper-chunks); "
             "(copy, keep_chunks): `load(keep_chunks=True)`, copy mode storing each chunk's "
             "bytes as the file holds them (no decode/encode; h5lake reads such a store, an "
             "HSDS server does not).")
    L.append("- h5py copy: `src.copy(obj, dst)` for every top-level object + root attributes "
             "(H5Ocopy copies chunks raw, no decode/encode).")
    L.append("- h5py → zarr: read with h5py in blocks of whole chunk rows (≥ 64 MiB), write a "
             "zarr v3 group/arrays with the same chunks and `Shuffle` + `GzipCodec(level=4)` "
             "(zarr-python's default async concurrency).")
    L.append("- cp: `shutil.copyfile` of the source file (the kernel's copy_file_range/sendfile) — "
             "context: the bytes moved with no format at all; it is not a hard floor (H5Ocopy, "
             "reading with `pread` and writing into the page cache, came out faster here).")
    L.append("- No fsync anywhere: a timed copy ends with its output in the page cache "
             "(the sync of the next cache drop is outside the timing).")
    for op in ops:
        rep = op.extra.get("report")
        if rep:
            L.append("- `%s` report: %s" % (op.name, ", ".join(
                "%s=%s" % (k, v) for k, v in rep.items() if k != "skipped")
                + (", skipped=%s" % rep["skipped"] if rep.get("skipped") else "")))
    L.append("")


def targets_icesat(cold_or_warm, med):
    """(label, ratio, ok) for the two targets (time ratios, ≤ 1.5)."""
    out = []
    pairs = [("link+hyper ≤ 1.5× h5lake copy", "h5lake link+hyper", "h5lake copy"),
             ("h5lake copy ≤ 1.5× h5py", "h5lake copy", "h5py")]
    for label, a, b in pairs:
        if a in med and b in med:
            ratio = med[a] / med[b]
            out.append((label + " (" + cold_or_warm + ")", ratio, ratio <= 1.5))
        else:
            out.append((label + " (" + cold_or_warm + ")", None, None))
    return out


def report_icesat(L, res, args, cold):
    loads, reads = res["loads"], res["reads"]
    logical, ondisk = res["logical"], res["ondisk"]
    plan = res["plan"]
    nds = len(plan)
    dts = {}
    for _p, dt, _n, _ce in plan:
        dts[dt] = dts.get(dt, 0) + 1
    L.append("## 2. ICESat-2-like file: load, then read a selection\n")
    L.append("Source: written by h5py (%s layout) — %d 1-D datasets in 6 beam groups "
             "(gt1l … gt3r, each with `heights/` photon-rate and `geolocation/`, "
             "`geophys_corr/` segment-rate datasets %d× shorter), dtypes %s, ~80 KB chunks "
             "(10 000 × 8 B, 20 000 × 4 B), shuffle + gzip %d, 6 string attributes per dataset: "
             "**%s MiB logical, %s MiB on disk** (%.2f×), %d chunks.\n"
             % (args.icesat_layout, nds, SEGMENT_RATIO,
                ", ".join("%s ×%d" % (np.dtype(k).name, v) for k, v in sorted(dts.items())),
                ICESAT_GZIP, mib(logical), mib(ondisk), logical / ondisk, res["nchunks"]))
    L.append("Load average: %s at start, %s at end.\n" % res["load_avg"])
    L.append("### Loads\n")
    ref = next((op for op in loads if op.name == "h5py copy" and op.times), None)
    t_ref = median(ref.times) if ref else None
    L.append("| operation | median s | MB/s logical | MB/s on disk | vs h5py copy | output MiB | files |")
    L.append("|---|---:|---:|---:|---:|---:|---:|")
    for op in loads:
        if op.error:
            L.append("| %s | ERROR | | | | | |" % op.name)
            continue
        t = median(op.times)
        L.append("| %s | %.2f | %s | %s | %s | %s | %d |" % (
            op.name, t, fmt(mbps(logical, t)), fmt(mbps(ondisk, t)),
            "%.2f×" % (t_ref / t) if t_ref else "—",
            "%.1f" % (op.extra.get("size", 0) / 2**20), op.extra.get("files", 0)))
    L.append("")
    L.append("(copy, keep_chunks) = `load(keep_chunks=True)`: chunk bytes stored as the file "
             "holds them (read as the `h5lake copy+keep` store below); "
             "(link) = `load(link=True, hyperchunk=0)`: one logical chunk per source chunk; "
             "(link+hyper) = `load(link=True)`: default 4 MiB hyper-chunks. %s\n"
             % ("Cold source before every load." if cold else "Caches not dropped."))
    L.append("### Reading a selection\n")
    L.append("Timed: `File(path, 'r')`, then `f[name][a:b]` for %d datasets picked at random "
             "(seed %d) with the same row range in each — %d%% of its rows starting at %.1f%% — "
             "%.0f KiB in all, then `close()`. Cold = page cache dropped just before; warm = "
             "the same read again right after (new `File` object). Every read is compared "
             "with h5py's values (`np.array_equal`, dtype and shape): all matched. Time ratios "
             "are this time ÷ h5py's (< 1 = faster than h5py).\n"
             % (len(res["picks"]), SEED, 100 * ROW_FRACTION, 100 * res["frac"], res["nbytes"] / 1024))
    med = {k: {n: median(v[k]) for n, v in reads.items() if v[k]} for k in ("cold", "warm")}
    first = "cold" if cold else "first"
    L.append("| reader | %s ms | %s p25–p75 ms | warm ms | %s MB/s | warm MB/s | %s ÷ h5py | warm ÷ h5py |"
             % ((first,) * 4))
    L.append("|---|---:|---:|---:|---:|---:|---:|---:|")
    for name in reads:
        c, w = med["cold"].get(name), med["warm"].get(name)
        q = statistics.quantiles(reads[name]["cold"], n=4) if len(reads[name]["cold"]) > 1 \
            else [c, c, c]
        L.append("| %s | %.1f | %.0f–%.0f | %.1f | %s | %s | %.2f | %.2f |" % (
            name, 1e3 * c, 1e3 * q[0], 1e3 * q[2], 1e3 * w, fmt(mbps(res["nbytes"], c), 1),
            fmt(mbps(res["nbytes"], w), 1), c / med["cold"]["h5py"], w / med["warm"]["h5py"]))
    L.append("")
    L.append("**Targets** (time ratios):\n")
    misses = []
    for temp in ("cold", "warm"):
        for label, ratio, ok in targets_icesat(temp, med[temp]):
            if ratio is None:
                L.append("- %s: ? (not measured)" % label)
                continue
            L.append("- %s: %.2f → %s" % (label, ratio, "✅ met" if ok else "❌ missed"))
            if not ok:
                misses.append(label)
    L.append("")
    L.append("Where the time goes (median seconds of open / reads / close, cold):\n")
    L.append("| reader | open | 20 reads | close |")
    L.append("|---|---:|---:|---:|")
    for name, v in reads.items():
        ph = v["cold_phases"]
        if ph:
            L.append("| %s | %.4f | %.4f | %.4f |" % (name, *(median([p[i] for p in ph]) for i in range(3))))
    L.append("")
    L.append("Selection: " + ", ".join("`%s[%d:%d]`" % p for p in res["picks"]) + ".\n")
    for op in loads:
        rep = op.extra.get("report")
        if rep:
            L.append("- `%s` report: %s" % (op.name, ", ".join(
                "%s=%s" % (k, v) for k, v in rep.items() if k != "skipped")
                + (", skipped=%s" % rep["skipped"] if rep.get("skipped") else "")))
    L.append("")
    return misses


def write_report(path, env, results, args, started, finished, cold):
    L = ["# h5lake with real HDF5 files — load and read\n"]
    L.append("Generated by `bench/hdf5_io.py` (%s). Command: `%s`\n" % (
        finished.strftime("%Y-%m-%d %H:%M"), " ".join(["python3", "bench/hdf5_io.py"] + sys.argv[1:])))
    L.append("## Machine and software\n")
    for k, v in env:
        L.append("- **%s**: %s" % (k, v))
    L.append("")
    L.append("Median of %d runs (ICESat reads: of %d runs × %d repeats); operations are "
             "interleaved and the starting one rotates from run to run. Timings are end to "
             "end from Python (`time.perf_counter`). "
             "1 MB = 10^6 bytes. h5py/libhdf5 is single-threaded; h5lake uses its defaults "
             "(parallel chunk I/O and codecs); zarr-python its default async concurrency. "
             "Load average (1/5/15 min) at the start and end of each case is listed with "
             "it: the machine is shared, and other work slows the multi-threaded h5lake "
             "most.\n" % (args.runs, args.runs, args.read_repeats))
    misses = []
    if "load" in results:
        report_load(L, results["load"], cold)
    if "icesat" in results:
        misses += report_icesat(L, results["icesat"], args, cold)
        L.append("Missed targets: %s.\n" % ("; ".join(misses) if misses else "none"))
    L.append("## Raw timings (seconds, in run order)\n")
    for case, res in results.items():
        for op in res.get("ops", []) + res.get("loads", []):
            L.append("- %s / %s: %s" % (case, op.name, op.error or sec(op.times)))
        for name, v in res.get("reads", {}).items():
            L.append("- %s / read %s: cold [%s]; warm [%s]" % (case, name, sec(v["cold"]), sec(v["warm"])))
    L.append("")
    L.append("Started %s, finished %s (wall %.0f s).\n" % (
        started.strftime("%Y-%m-%d %H:%M:%S"), finished.strftime("%Y-%m-%d %H:%M:%S"),
        (finished - started).total_seconds()))
    with open(path, "w") as f:
        f.write("\n".join(L))


# --------------------------------------------------------------------------

CASES = ["load", "icesat"]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--load-mb", type=int, default=2048,
                    help="logical size of the 2-D file to load, MiB (default 2048)")
    ap.add_argument("--icesat-mb", type=int, default=1024,
                    help="logical size of the ICESat-2-like file, MiB (default 1024)")
    ap.add_argument("--icesat-datasets", type=int, default=500,
                    help="number of 1-D datasets in it (default 500)")
    ap.add_argument("--icesat-layout", choices=["sequential", "interleaved"], default="sequential",
                    help="chunk placement in the ICESat-2-like file (default sequential)")
    ap.add_argument("--runs", type=int, default=3, help="runs per operation (median; default 3)")
    ap.add_argument("--read-repeats", type=int, default=9,
                    help="ICESat reads: cold+warm pairs per reader in each run (default 9)")
    ap.add_argument("--only", default=None, help="comma-separated: " + ", ".join(CASES))
    ap.add_argument("--tmp", default="/tmp", help="parent of the scratch directory (removed afterwards)")
    ap.add_argument("--out", default=os.path.join(HERE, "RESULTS-hdf5.md"), help="report file (default bench/RESULTS-hdf5.md)")
    ap.add_argument("--no-drop-caches", action="store_true")
    args = ap.parse_args()
    if args.runs < 1 or args.read_repeats < 1:
        raise SystemExit("--runs and --read-repeats must be >= 1")
    cases = CASES if not args.only else [c.strip() for c in args.only.split(",") if c.strip()]
    for c in cases:
        if c not in CASES:
            raise SystemExit("unknown case %r; choose from %s" % (c, ", ".join(CASES)))
    if args.icesat_datasets < PICKS:
        raise SystemExit("--icesat-datasets must be at least %d" % PICKS)

    started = datetime.datetime.now()
    dropper = CacheDropper(not args.no_drop_caches)
    log("page-cache drop:", dropper.note)
    env = environment(args, dropper)
    tmp = tempfile.mkdtemp(prefix="h5lake-hdf5-bench-", dir=args.tmp)
    log("scratch dir:", tmp)
    results = {}
    try:
        for case in CASES:
            if case not in cases:
                continue
            la = "%.2f %.2f %.2f" % os.getloadavg()
            log("\n== %s (load average %s)" % (case, la))
            t0 = time.perf_counter()
            case_dir = tempfile.mkdtemp(prefix=case + "-", dir=tmp)
            try:
                results[case] = (case_load if case == "load" else case_icesat)(args, case_dir, dropper)
                results[case]["load_avg"] = (la, "%.2f %.2f %.2f" % os.getloadavg())
            finally:
                shutil.rmtree(case_dir, ignore_errors=True)
            log("== %s done in %.0f s" % (case, time.perf_counter() - t0))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    env.append(("Load average at end", "%.2f %.2f %.2f" % os.getloadavg()))
    write_report(args.out, env, results, args, started, datetime.datetime.now(), dropper.works)
    log("\nwrote", args.out)


if __name__ == "__main__":
    main()
