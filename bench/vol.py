"""VPIC-IO-like writes and BD-CATS-like reads through h5py: a native HDF5
file, h5py through the h5lake VOL connector, and the h5lake Python API —
side by side, in one run, on the same data.

VPIC-IO writes 8 particle properties (float32) of N particles; BD-CATS reads
them back in partitions (here: 8 contiguous slabs per property) into buffers
it allocated once, as the C program does with H5Dread (`read_direct` here).
Each is run with the properties as 8 datasets and as one compound dataset,
and with the 8 datasets gzip-compressed (level 1, shuffled). One more row
reads the 8 datasets by slicing (`d[lo:hi]`), which makes each library
allocate a fresh array per read: h5py zero-fills it, the h5lake API does not.

    python3 bench/vol.py [--particles 16777216] [--runs 5] [--out bench/RESULTS-vol.md]

The connector is built with `cargo build --release -p h5lake-vol` (done here
unless --plugin-dir is given). Each measurement runs in a fresh process
(the connector is chosen by environment variables at HDF5's start-up); the
time is taken inside it, around the HDF5 calls only.
"""

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PROPS = ["x", "y", "z", "px", "py", "pz", "id1", "id2"]

# The body run in each measuring process: `lib` is h5py or h5lake, `p` the
# path, `n` the particle count, `case` which layout, `op` write or read.
WORKER = textwrap.dedent('''
    import json, sys, time
    import numpy as np
    lib_name, p, n, case, op = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4], sys.argv[5]
    lib = __import__(lib_name)
    PROPS = %r
    rng = np.random.default_rng(7)
    chunk = 1 << 20
    kw = dict(compression="gzip", compression_opts=1, shuffle=True) if case == "gzip" else {}
    if op == "write":
        cols = {k: rng.standard_normal(n, dtype="f4") for k in PROPS}
        if case == "compound":
            table = np.empty(n, dtype=[(k, "f4") for k in PROPS])
            for k in PROPS:
                table[k] = cols[k]
        t = time.perf_counter()
        with lib.File(p, "w") as f:
            if case == "compound":
                d = f.create_dataset("particles", shape=(n,), dtype=table.dtype, chunks=(chunk // 8,))
                d[...] = table
            else:
                g = f.create_group("Step#0")
                for k in PROPS:
                    d = g.create_dataset(k, shape=(n,), dtype="f4", chunks=(chunk,), **kw)
                    d[...] = cols[k]
        dt = time.perf_counter() - t
    elif op == "read":
        parts = 8
        if case == "compound":
            bufs = [np.empty(n // parts + 1, dtype=[(k, "f4") for k in PROPS]) for _ in range(parts)]
        else:
            bufs = [{k: np.empty(n // parts + 1, "f4") for k in PROPS} for _ in range(parts)]
        for b in bufs:  # touched once, as a program's buffers are by its first read
            for a in (b.values() if isinstance(b, dict) else [b]):
                a[...] = 0
        t = time.perf_counter()
        total = 0.0
        with lib.File(p, "r") as f:
            for i in range(parts):
                lo, hi = n * i // parts, n * (i + 1) // parts
                if case == "compound":
                    f["particles"].read_direct(bufs[i], np.s_[lo:hi], np.s_[0:hi - lo])
                    total += float(bufs[i]["x"][0])
                else:
                    for k in PROPS:
                        f["Step#0"][k].read_direct(bufs[i][k], np.s_[lo:hi], np.s_[0:hi - lo])
                        total += float(bufs[i][k][0])
        dt = time.perf_counter() - t
    else:  # "read, slicing": a fresh array per read
        t = time.perf_counter()
        total = 0.0
        parts = 8
        with lib.File(p, "r") as f:
            for i in range(parts):
                lo, hi = n * i // parts, n * (i + 1) // parts
                for k in PROPS:
                    total += float(f["Step#0"][k][lo:hi][0])
        dt = time.perf_counter() - t
    print(json.dumps({"seconds": dt}))
''' % PROPS)


def build_plugin():
    subprocess.run(["cargo", "build", "--release", "-q", "-p", "h5lake-vol"], cwd=ROOT, check=True)
    target = os.environ.get("CARGO_TARGET_DIR", os.path.join(ROOT, "target"))
    d = tempfile.mkdtemp(prefix="h5lake-vol-")
    shutil.copy(os.path.join(target, "release", "libh5lake_vol.so"), d)
    return d


def measure(kind, path, n, case, op, plugin_dir):
    env = {k: v for k, v in os.environ.items() if k not in ("HDF5_VOL_CONNECTOR", "HDF5_PLUGIN_PATH")}
    lib = "h5lake" if kind == "h5lake API" else "h5py"
    if kind == "h5py + connector":
        env.update(HDF5_PLUGIN_PATH=plugin_dir, HDF5_VOL_CONNECTOR="h5lake")
    r = subprocess.run([sys.executable, "-c", WORKER, lib, path, str(n), case, op],
                       env=env, capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError("%s %s %s failed: %s" % (kind, case, op, r.stderr[-2000:]))
    return json.loads(r.stdout.strip().splitlines()[-1])["seconds"]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--particles", type=int, default=16 << 20)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--plugin-dir")
    ap.add_argument("--dir", default=None, help="where the files go (default: a temporary directory)")
    ap.add_argument("--out", default=os.path.join(ROOT, "bench", "RESULTS-vol.md"))
    args = ap.parse_args()
    plugin_dir = args.plugin_dir or build_plugin()
    work = tempfile.mkdtemp(dir=args.dir, prefix="h5lake-vol-bench-")
    n = args.particles
    mb = n * len(PROPS) * 4 / 1e6
    kinds = ["native h5py", "h5py + connector", "h5lake API"]
    rows = []
    try:
        for case in ("datasets", "compound", "gzip"):
            ops = ("write", "read", "read, slicing") if case == "datasets" else ("write", "read")
            for op in ops:
                runs = {kind: [] for kind in kinds}
                # Kinds take turns within each run, so that a slow moment of
                # the machine does not land on one kind only.
                for _ in range(args.runs):
                    for kind in kinds:
                        path = os.path.join(work, "%s-%s.%s" % (
                            case, kind.replace(" ", "_").replace("+", ""),
                            "h5" if kind == "native h5py" else "h5l"))
                        if op == "write":
                            if os.path.isdir(path):
                                shutil.rmtree(path)
                            elif os.path.exists(path):
                                os.remove(path)
                        runs[kind].append(measure(kind, path, n, case, op, plugin_dir))
                times = {kind: statistics.median(r) for kind, r in runs.items()}
                for kind in kinds:
                    print("%-9s %-13s %-17s %.3f s" % (case, op, kind, times[kind]), flush=True)
                rows.append((case, op, times))
    finally:
        shutil.rmtree(work, ignore_errors=True)

    lines = ["# HDF5 programs through the h5lake VOL connector", "",
             "Run %s UTC on %s: %d cores, Python %s; %d particles x 8 float32 properties (%.0f MB); "
             "median of %d; files in a temporary directory on local disk (warm page cache). "
             "Command: `python3 bench/vol.py%s`." % (
                 time.strftime("%Y-%m-%d %H:%M", time.gmtime()), platform.node(), os.cpu_count(),
                 platform.python_version(), n, mb, args.runs,
                 "" if n == 16 << 20 else " --particles %d" % n), "",
             "VPIC-IO-like write (8 properties, 1 Mi-element chunks) and BD-CATS-like read "
             "(each property in 8 slabs, read into buffers allocated once, as BD-CATS does with "
             "H5Dread: `read_direct`). *datasets*: one dataset per property; *compound*: one "
             "dataset of 8 fields; *gzip*: datasets, gzip level 1 + shuffle. *read, slicing*: "
             "the same reads as `d[lo:hi]`, a fresh array each (h5py zero-fills it, natively "
             "too; the h5lake API does not).", "",
             "| case | op | native h5py | h5py + connector | h5lake API | connector ÷ API (time, target ≤ 1.3) | native ÷ connector (time) |",
             "|---|---|---:|---:|---:|---:|---:|"]
    for case, op, t in rows:
        rate = lambda s: "%.2f s (%.0f MB/s)" % (s, mb / s)
        lines.append("| %s | %s | %s | %s | %s | %.2f | %.2f |" % (
            case, op, rate(t["native h5py"]), rate(t["h5py + connector"]), rate(t["h5lake API"]),
            t["h5py + connector"] / t["h5lake API"], t["native h5py"] / t["h5py + connector"]))
    with open(args.out, "w") as f:
        f.write("\n".join(lines) + "\n")
    print("wrote", args.out)


if __name__ == "__main__":
    main()
