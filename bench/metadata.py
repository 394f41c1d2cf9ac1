"""Metadata operations, h5lake (local store) vs h5py (an HDF5 file) and
h5py through the h5lake VOL connector, side by side in one run (issue 24).

    python3 bench/metadata.py [--runs 3] [--sizes 100,10000,100000] [--ops 200]
                              [--plugin-dir DIR] [--out bench/RESULTS-metadata.md]

Two tables:
- the issue's script: in one file, create 1000 small datasets in the root
  group, then write 500 attributes to it, then create 1000 groups in it,
  then rename and delete 1000 links (timed each, from Python, file open to
  the operation's end; the close, which writes h5lake's pending changes to
  the store, is timed on its own). Also h5lake with `durable=True`, each
  change in the store before its call returns;
- the cost of one operation against the size of the group: a group holding
  `size` members already gets `--ops` more datasets, attributes, groups and
  renames, timed per operation, so that a cost that grows with the group
  shows; then the close.

Each measurement runs in a fresh process (the connector is chosen by
environment variables at HDF5's start-up). Median of `--runs` runs;
libraries interleaved, rotating who goes first; each run in a fresh
scratch directory; no fsync on any side.
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
sys.path.insert(0, os.path.join(ROOT, "bench"))
from vol import build_plugin  # noqa: E402  (the connector, built as bench/vol.py builds it)

WORKER = textwrap.dedent('''
    import json, os, sys, time
    import numpy as np
    lib_name, path, what, size, ops, durable = sys.argv[1:7]
    size, ops, durable = int(size), int(ops), durable == "1"
    mod = __import__(lib_name)
    kw = {"durable": True} if durable else {}
    data = np.arange(4)
    out = {}
    if what == "script":
        t0 = time.perf_counter()
        f = mod.File(path, "w", **kw)
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
        if path.endswith(".h5l") and os.path.isdir(path):
            # The floor under the close on this disk: as many directories
            # and small files, made with bare system calls on one thread.
            dirs = files = 0
            for _, ds, fs in os.walk(path):
                dirs, files = dirs + len(ds), files + len(fs)
            bare = path + ".bare"
            os.mkdir(bare)
            t = time.perf_counter()
            for i in range(dirs):
                os.mkdir(f"{bare}/{i}")
            for j in range(files):
                fd = os.open(f"{bare}/{j % max(dirs, 1)}/{j}", os.O_WRONLY | os.O_CREAT | os.O_EXCL)
                os.write(fd, b"{}")
                os.close(fd)
            out["bare"] = time.perf_counter() - t
            out["objects"] = dirs + files
    else:
        f = mod.File(path, "w", **kw)
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
        t = time.perf_counter()
        for i in range(ops):
            del g[f"o{i}"]
        out["delete a link"] = (time.perf_counter() - t) / ops
        t = time.perf_counter()
        f.close()
        out["close (whole file)"] = time.perf_counter() - t
    print(json.dumps(out))
''')

# name -> (module, file suffix, durable, through the connector)
KINDS = {
    "h5py": ("h5py", ".h5", False, False),
    "h5lake": ("h5lake", ".h5l", False, False),
    "h5lake durable": ("h5lake", ".h5l", True, False),
    "h5py + connector": ("h5py", ".h5l", False, True),
}


def measure(kind, path, what, size, ops, plugin_dir):
    mod, _, durable, vol = KINDS[kind]
    env = {k: v for k, v in os.environ.items() if k not in ("HDF5_VOL_CONNECTOR", "HDF5_PLUGIN_PATH")}
    if vol:
        env.update(HDF5_PLUGIN_PATH=plugin_dir, HDF5_VOL_CONNECTOR="h5lake")
    r = subprocess.run([sys.executable, "-c", WORKER, mod, path, what, str(size), str(ops),
                        "1" if durable else "0"], env=env, capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError("%s %s failed: %s" % (kind, what, r.stderr[-2000:]))
    return json.loads(r.stdout.strip().splitlines()[-1])


def median_runs(kinds, what, size, ops, runs, scratch, plugin_dir):
    results = {k: [] for k in kinds}
    for r in range(runs):
        order = kinds[r % len(kinds):] + kinds[:r % len(kinds)]
        for kind in order:
            # Runs are kept until the end: on an ext4 without a journal
            # (this VM's), creating files just after deleting thousands
            # skips over every inode freed in the last 30 s, which would
            # charge one run for the clean-up of the one before it.
            d = tempfile.mkdtemp(dir=scratch)
            # No run inherits the writeback of the one before it.
            os.sync()
            path = os.path.join(d, "m" + KINDS[kind][1])
            results[kind].append(measure(kind, path, what, size, ops, plugin_dir))
    return {k: {m: statistics.median(r[m] for r in rs) for m in rs[0]}
            for k, rs in results.items()}


def fs_type(path):
    """The type of the filesystem holding `path`, as `df` names it."""
    r = subprocess.run(["df", "--output=fstype", path], capture_output=True, text=True)
    lines = r.stdout.split()
    return lines[-1] if r.returncode == 0 and len(lines) > 1 else "an unknown filesystem"


def fmt_time(s):
    return f"{s * 1e3:.1f} ms" if s >= 1e-3 else f"{s * 1e6:.0f} µs"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--sizes", default="100,10000,100000")
    ap.add_argument("--ops", type=int, default=200)
    ap.add_argument("--tmp", default=None)
    ap.add_argument("--settle", type=float, default=35.0,
                    help="seconds to wait before the first measurement")
    ap.add_argument("--plugin-dir")
    ap.add_argument("--out", default=os.path.join(ROOT, "bench", "RESULTS-metadata.md"))
    args = ap.parse_args()
    plugin_dir = args.plugin_dir or build_plugin()
    scratch = tempfile.mkdtemp(prefix="h5lake-meta-", dir=args.tmp)
    fs = fs_type(scratch)
    script_kinds = ["h5py", "h5lake", "h5lake durable", "h5py + connector"]
    grow_kinds = ["h5py", "h5lake", "h5py + connector"]
    try:
        # On an ext4 without a journal (this VM's) a new file skips over
        # every inode freed in the last 30 s. Durable runs free one per
        # document rewrite, thousands, so they go last, after a quiet spell
        # at the start lets what ran before the bench age out.
        time.sleep(args.settle)
        s = median_runs(script_kinds[:2] + script_kinds[3:], "script", 0, 0, args.runs, scratch,
                        plugin_dir)
        sizes = [int(x) for x in args.sizes.split(",")]
        grow = {size: median_runs(grow_kinds, "grow", size, args.ops, args.runs, scratch, plugin_dir)
                for size in sizes}
        s.update(median_runs(["h5lake durable"], "script", 0, 0, args.runs, scratch, plugin_dir))
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    import h5py
    import h5lake
    lines = ["# Metadata operations: h5lake vs h5py", "",
             f"`python3 bench/metadata.py --runs {args.runs} --sizes {args.sizes} --ops {args.ops}`"
             f" on {platform.machine()}, {os.cpu_count()} cores, Python "
             f"{platform.python_version()}; h5py {h5py.__version__} (HDF5 {h5py.version.hdf5_version}), "
             f"h5lake {h5lake.__version__}. Median of {args.runs} runs, each in a fresh process; "
             "local store vs an HDF5 file; no fsync. Target (issue 24): h5lake ≤ 1.5× h5py, "
             "through the connector ≤ 2×.", "",
             "h5lake writes metadata changes and small chunks of new datasets at `flush()`/`close()` "
             "(as HDF5 writes its metadata cache); `durable=True` writes each before its call returns. "
             "The close is where h5lake's writes happen: a file per group and per dataset and one "
             "per chunk (HSDS's layout), against HDF5's one file.", "",
             f"Scratch directory on {fs}.", "",
             "## The issue's script (one file, in order)", "",
             "| step | " + " | ".join(script_kinds) + " | h5lake / h5py | durable / h5py | connector / h5py |",
             "|---|" + "---:|" * (len(script_kinds) + 3)]
    for k in s["h5py"]:
        if k in ("bare", "objects"):
            continue
        vals = [s[kind][k] for kind in script_kinds]
        base = vals[0]
        lines.append(f"| {k} | " + " | ".join(fmt_time(v) for v in vals) + " | "
                     + " | ".join(f"{v / base:.1f}×" for v in vals[1:]) + " |")
    for kind in script_kinds:
        if "bare" in s[kind]:
            lines.append(f"\n{kind}: the store holds {s[kind]['objects']:.0f} directories and files "
                         f"after the close; making as many with bare system calls, on one thread, "
                         f"right after it took {fmt_time(s[kind]['bare'])} (the disk's floor).")
    lines += ["", "## One operation on a group of a given size", "",
              "| operation | members | " + " | ".join(grow_kinds) + " | h5lake / h5py | connector / h5py |",
              "|---|---:|" + "---:|" * (len(grow_kinds) + 2)]
    for size, r in grow.items():
        for k in r["h5py"]:
            vals = [r[kind][k] for kind in grow_kinds]
            base = vals[0]
            lines.append(f"| {k} | {size} | " + " | ".join(fmt_time(v) for v in vals) + " | "
                         + " | ".join(f"{v / base:.1f}×" for v in vals[1:]) + " |")
    text = "\n".join(lines) + "\n"
    with open(args.out, "w") as f:
        f.write(text)
    print(text)


if __name__ == "__main__":
    sys.exit(main())
