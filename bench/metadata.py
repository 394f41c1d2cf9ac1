"""Metadata operations, h5lake (local store) vs h5py (an HDF5 file), side by
side in one run (issue 24).

    python3 bench/metadata.py [--runs 3] [--sizes 100,1000,5000] [--ops 200]
                              [--out bench/RESULTS-metadata.md]

Two tables:
- the issue's script: in one file, create 1000 small datasets in the root
  group, then write 500 attributes to it, then create 1000 groups in it,
  then rename and delete 1000 links (timed each, from Python, file open to
  the operation's end; the close is timed on its own);
- the cost of one operation against the size of the group: a group holding
  `size` members already gets `--ops` more datasets, attributes, groups and
  renames, timed per operation, so that a cost that grows with the group
  shows.

Median of `--runs` runs; libraries interleaved, rotating who goes first;
each run in a fresh scratch directory; no fsync on either side.
"""

import argparse
import os
import platform
import shutil
import statistics
import sys
import tempfile
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def libs():
    import h5py
    import h5lake
    return {"h5py": (h5py, ".h5"), "h5lake": (h5lake, ".h5l")}


def script(mod, path):
    """The issue's sequence; seconds per step."""
    out = {}
    data = np.arange(4)
    t0 = time.perf_counter()
    f = mod.File(path, "w")
    t = time.perf_counter()
    for i in range(1000):
        f.create_dataset(f"d{i}", data=data)
    out["create 1000 datasets"] = time.perf_counter() - t
    t = time.perf_counter()
    for i in range(500):
        f.attrs[f"a{i}"] = i
    out["write 500 attributes"] = time.perf_counter() - t
    t = time.perf_counter()
    for i in range(1000):
        f.create_group(f"g{i}")
    out["create 1000 groups"] = time.perf_counter() - t
    t = time.perf_counter()
    for i in range(1000):
        f.move(f"g{i}", f"h{i}")
    out["rename 1000 links"] = time.perf_counter() - t
    t = time.perf_counter()
    for i in range(1000):
        del f[f"h{i}"]
    out["delete 1000 links"] = time.perf_counter() - t
    t = time.perf_counter()
    f.close()
    out["close"] = time.perf_counter() - t
    out["all"] = time.perf_counter() - t0
    return out


def per_op(mod, path, size, ops):
    """Seconds per operation on a group that already holds `size` members."""
    data = np.arange(4)
    out = {}
    with mod.File(path, "w") as f:
        g = f.create_group("big")
        for i in range(size):
            g.create_group(f"m{i}")
        t = time.perf_counter()
        for i in range(ops):
            g.create_dataset(f"d{i}", data=data)
        out["create a dataset"] = (time.perf_counter() - t) / ops
        t = time.perf_counter()
        for i in range(ops):
            g.attrs[f"a{i}"] = i
        out["write an attribute"] = (time.perf_counter() - t) / ops
        t = time.perf_counter()
        for i in range(ops):
            g.create_group(f"n{i}")
        out["create a group"] = (time.perf_counter() - t) / ops
        t = time.perf_counter()
        for i in range(ops):
            g.move(f"n{i}", f"o{i}")
        out["rename a link"] = (time.perf_counter() - t) / ops
    return out


def median_runs(fn, runs, scratch):
    results = {name: [] for name in libs()}
    for r in range(runs):
        order = list(libs().items())
        order = order[r % len(order):] + order[:r % len(order)]
        for name, (mod, ext) in order:
            d = tempfile.mkdtemp(dir=scratch)
            try:
                results[name].append(fn(mod, os.path.join(d, "m" + ext)))
            finally:
                shutil.rmtree(d, ignore_errors=True)
    return {name: {k: statistics.median(r[k] for r in rs) for k in rs[0]}
            for name, rs in results.items()}


def fmt_time(s):
    return f"{s * 1e3:.1f} ms" if s >= 1e-3 else f"{s * 1e6:.0f} µs"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--sizes", default="100,1000,5000")
    ap.add_argument("--ops", type=int, default=200)
    ap.add_argument("--tmp", default=None)
    ap.add_argument("--out", default=os.path.join(ROOT, "bench", "RESULTS-metadata.md"))
    args = ap.parse_args()
    scratch = tempfile.mkdtemp(prefix="h5lake-meta-", dir=args.tmp)
    try:
        s = median_runs(script, args.runs, scratch)
        sizes = [int(x) for x in args.sizes.split(",")]
        grow = {size: median_runs(lambda m, p: per_op(m, p, size, args.ops), args.runs, scratch)
                for size in sizes}
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    import h5py
    import h5lake
    lines = ["# Metadata operations: h5lake vs h5py", "",
             f"`python3 bench/metadata.py --runs {args.runs} --sizes {args.sizes} --ops {args.ops}`"
             f" on {platform.machine()}, {os.cpu_count()} cores, Python "
             f"{platform.python_version()}; h5py {h5py.__version__}, h5lake "
             f"{h5lake.__version__}. Median of {args.runs} runs; local store vs an HDF5 "
             "file; no fsync. Target (issue 24): h5lake ≤ 1.5× h5py.", "",
             "## The issue's script (one file, in order)", "",
             "| step | h5py | h5lake | h5lake / h5py |", "|---|---:|---:|---:|"]
    for k in s["h5py"]:
        a, b = s["h5py"][k], s["h5lake"][k]
        lines.append(f"| {k} | {fmt_time(a)} | {fmt_time(b)} | {b / a:.1f}× |")
    lines += ["", "## One operation on a group of a given size", "",
              "| operation | members | h5py | h5lake | h5lake / h5py |",
              "|---|---:|---:|---:|---:|"]
    for size, r in grow.items():
        for k in r["h5py"]:
            a, b = r["h5py"][k], r["h5lake"][k]
            lines.append(f"| {k} | {size} | {fmt_time(a)} | {fmt_time(b)} | {b / a:.1f}× |")
    text = "\n".join(lines) + "\n"
    with open(args.out, "w") as f:
        f.write(text)
    print(text)


if __name__ == "__main__":
    sys.exit(main())
