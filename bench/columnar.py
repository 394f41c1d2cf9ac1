#!/usr/bin/env python3
"""Columnar tables (issue 20): VPIC-like particles (x, y, z, px, py, pz
float32; id1, id2 int32) stored as

  h5py compound     one compound dataset in an HDF5 file
  h5py 8 datasets   one 1-D dataset per field
  h5lake row        one compound dataset, row layout
  h5lake columnar   layout="columnar" (no compression, and zstd level 3)
  parquet           one Parquet file written by pyarrow (none, and zstd)

all with the same rows per chunk / row group, side by side in one run.
Timed (median of --runs, each after dropping the page cache when root
may, else after one untimed warm-up pass): write, read everything, read 3
of 8 fields, to_arrow / to_pandas against pyarrow / pandas reading the
Parquet file, and DuckDB's `SELECT avg(x) … WHERE id1 < N/100` over
`parquet_files()` against DuckDB over the one file. Every read is compared
with the data written; a mismatch aborts the run. Writes RESULTS-columnar.md.

Usage:  python3 bench/columnar.py                  # 16 M particles, 3 runs
        python3 bench/columnar.py --particles 2000000 --runs 1
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

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)

import run as base  # noqa: E402
from run import CacheDropper, make_particles, log  # noqa: E402

import duckdb  # noqa: E402
import h5py  # noqa: E402
import pandas as pd  # noqa: E402
import pyarrow as pa  # noqa: E402
import pyarrow.parquet as pq  # noqa: E402

import h5lake  # noqa: E402

FIELDS = ["x", "y", "z", "px", "py", "pz", "id1", "id2"]
THREE = ["x", "y", "z"]


def records(cols):
    dt = np.dtype([(k, cols[k].dtype) for k in FIELDS])
    rec = np.empty(len(cols["x"]), dt)
    for k in FIELDS:
        rec[k] = cols[k]
    return rec


class Case:
    """One way of storing the table: write, read all, read three fields."""

    def __init__(self, name, write, read_all, read3):
        self.name, self.write, self.read_all, self.read3 = name, write, read_all, read3


def cases(tmp, chunk):
    p = lambda name: os.path.join(tmp, name)  # noqa: E731
    out = []

    def h5_compound(mod, path, **kw):
        def write(rec):
            with mod.File(path, "w") as f:
                f.create_dataset("particles", data=rec, chunks=(chunk,), **kw)

        def read_all():
            with mod.File(path, "r") as f:
                return f["particles"][...]

        def read3():
            with mod.File(path, "r") as f:
                return f["particles"].fields(THREE)[...]
        return write, read_all, read3

    out.append(Case("h5py compound", *h5_compound(h5py, p("c.h5"))))

    def h5py_8_write(rec):
        with h5py.File(p("8.h5"), "w") as f:
            for k in FIELDS:
                f.create_dataset(k, data=rec[k], chunks=(chunk,))

    def h5py_8_read(names):
        with h5py.File(p("8.h5"), "r") as f:
            return {k: f[k][...] for k in names}
    out.append(Case("h5py 8 datasets", h5py_8_write, lambda: h5py_8_read(FIELDS),
                    lambda: h5py_8_read(THREE)))
    out.append(Case("h5lake row", *h5_compound(h5lake, p("row.h5l"))))
    out.append(Case("h5lake columnar", *h5_compound(h5lake, p("col.h5l"), layout="columnar")))
    out.append(Case("h5lake columnar zstd", *h5_compound(h5lake, p("colz.h5l"), layout="columnar",
                                                         compression="zstd")))

    def parquet(path, codec):
        def write(rec):
            table = pa.table({k: rec[k] for k in FIELDS})
            pq.write_table(table, path, compression=codec, row_group_size=chunk)
        return (write, lambda: pq.read_table(path), lambda: pq.read_table(path, columns=THREE))
    out.append(Case("parquet", *parquet(p("t.parquet"), "none")))
    out.append(Case("parquet zstd", *parquet(p("tz.parquet"), "zstd")))
    return out


def check(got, rec, names):
    """``got`` (numpy records, a dict of arrays or an Arrow table) holds
    ``rec``'s fields ``names``."""
    for k in names:
        col = got[k]
        if isinstance(col, (pa.ChunkedArray, pa.Array)):
            col = col.to_numpy()
        if not np.array_equal(np.asarray(col), rec[k]):
            raise SystemExit(f"MISMATCH in field {k}")


def median_time(fn, runs, dropper, warm):
    times, out = [], None
    for _ in range(runs):
        if warm:
            fn()
        else:
            dropper()
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--particles", type=int, default=16_000_000)
    ap.add_argument("--chunk", type=int, default=1 << 20, help="rows per chunk / row group")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--out", default=os.path.join(HERE, "RESULTS-columnar.md"))
    ap.add_argument("--load-gib", type=float, default=1.0,
                    help="size of the 8-file Parquet set the load is timed on (0: skip)")
    args = ap.parse_args()
    n, chunk, runs = args.particles, args.chunk, args.runs
    dropper = CacheDropper(True)
    rec = records(make_particles(n))
    tmp = tempfile.mkdtemp(prefix="h5lake-columnar-bench-")
    rows = {}
    try:
        all_cases = cases(tmp, chunk)
        for c in all_cases:
            log(f"{c.name}: write")
            w = []
            for _ in range(runs):
                t0 = time.perf_counter()
                c.write(rec)
                w.append(time.perf_counter() - t0)
            r = {"write": statistics.median(w)}
            for temp in ("cold", "warm"):
                if temp == "cold" and not dropper.works:
                    continue
                t, got = median_time(c.read_all, runs, dropper, temp == "warm")
                check(got, rec, FIELDS)
                r[f"read all ({temp})"] = t
                t, got = median_time(c.read3, runs, dropper, temp == "warm")
                check(got, rec, THREE)
                r[f"read 3 of 8 ({temp})"] = t
            rows[c.name] = r
        # Arrow and pandas out, and DuckDB, against the Parquet file
        extra = {}
        col_path = os.path.join(tmp, "col.h5l")
        pq_path = os.path.join(tmp, "t.parquet")

        def h5lake_arrow():
            with h5lake.File(col_path, "r") as f:
                return f["particles"].to_arrow()

        def h5lake_pandas():
            with h5lake.File(col_path, "r") as f:
                return f["particles"].to_pandas()
        with h5lake.File(col_path, "r") as f:
            files = f["particles"].parquet_files()
        limit = n // 100
        q = "SELECT avg(x) FROM read_parquet({}) WHERE id1 < %d" % limit
        want = float(rec["x"][rec["id1"] < limit].astype("f8").mean())
        for temp in ("warm",):
            pairs = {
                "to_arrow() vs pyarrow.parquet.read_table": (h5lake_arrow, lambda: pq.read_table(pq_path)),
                "to_pandas() vs pandas.read_parquet": (h5lake_pandas, lambda: pd.read_parquet(pq_path)),
                "DuckDB avg(x) WHERE id1 < N/100: parquet_files() vs the one file": (
                    lambda: duckdb.sql(q.format(files)).fetchall(),
                    lambda: duckdb.sql(q.format([pq_path])).fetchall()),
            }
            for label, (ours, theirs) in pairs.items():
                t_ours, got = median_time(ours, runs, dropper, True)
                t_theirs, _ = median_time(theirs, runs, dropper, True)
                if label.startswith("DuckDB"):
                    if abs(got[0][0] - want) > 1e-3 * abs(want):
                        raise SystemExit(f"MISMATCH in DuckDB answer {got} vs {want}")
                elif label.startswith("to_arrow"):
                    check(got, rec, FIELDS)
                else:
                    check(got, rec, FIELDS)
                extra[label] = (t_ours, t_theirs)
        text = text_table(tmp, chunk, runs)
        loads = load_set(tmp, args.load_gib, runs, dropper) if args.load_gib > 0 else {}
        sizes = {c: base.du(os.path.join(tmp, p)) for c, p in (
            ("h5py compound", "c.h5"), ("h5py 8 datasets", "8.h5"), ("h5lake row", "row.h5l"),
            ("h5lake columnar", "col.h5l"), ("h5lake columnar zstd", "colz.h5l"),
            ("parquet", "t.parquet"), ("parquet zstd", "tz.parquet"))}
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    write_report(args, rows, extra, sizes, dropper, loads, text)


def load_set(tmp, gib, runs, dropper):
    """Parquet files in: 8 files written by pyarrow (row groups of 1 Mi
    rows), loaded with ``--link`` and by copy, against pyarrow reading them
    and writing them again. Every load is checked against the files."""
    per = int(gib * 2**30 / 32 / 8)
    src = os.path.join(tmp, "set")
    os.mkdir(src)
    first = None
    for i in range(8):
        t = pa.table(make_particles(per, seed=10 + i))
        if first is None:
            first = t
        pq.write_table(t, os.path.join(src, f"part-{i}.parquet"), row_group_size=1 << 20,
                       compression="none")
    nbytes = sum(os.path.getsize(os.path.join(src, f)) for f in os.listdir(src))
    log(f"Parquet set: 8 files, {nbytes / 2**30:.2f} GiB")

    def link():
        dest = os.path.join(tmp, "linked.h5l")
        shutil.rmtree(dest, ignore_errors=True)
        h5lake.load(src, dest, link=True, name="p")
        return dest

    def copy():
        dest = os.path.join(tmp, "copied.h5l")
        shutil.rmtree(dest, ignore_errors=True)
        h5lake.load(src, dest, name="p", chunks=1 << 20)
        return dest

    def rewrite():
        out = os.path.join(tmp, "rewritten")
        shutil.rmtree(out, ignore_errors=True)
        os.mkdir(out)
        for f in sorted(os.listdir(src)):
            pq.write_table(pq.read_table(os.path.join(src, f)), os.path.join(out, f),
                           row_group_size=1 << 20, compression="none")
        return out

    out = {}
    for label, fn in (("load --link", link), ("load (copy)", copy),
                      ("pyarrow read_table + write_table", rewrite)):
        t, dest = median_time(fn, runs, dropper, False)
        out[label] = t
        if dest.endswith(".h5l"):
            with h5lake.File(dest, "r") as f:
                d = f["p"]
                if d.shape != (8 * per,):
                    raise SystemExit(f"MISMATCH: {label} made {d.shape} rows")
                got = d.fields(["x", "id2"])[: first.num_rows]
                if not (np.array_equal(got["x"], first["x"].to_numpy())
                        and np.array_equal(got["id2"], first["id2"].to_numpy())):
                    raise SystemExit(f"MISMATCH in the rows of {label}")
    out["size"] = nbytes
    shutil.rmtree(src, ignore_errors=True)
    return out


TEXT_ROWS = 4 << 20


def text_table(tmp, chunk, runs):
    """Reads of a table with a fixed-length string member, (id i8, name S16,
    v f4), warm: h5py compound against h5lake's row and columnar layouts.
    Returns {storage: {operation: seconds}}."""
    log("table with a text member")
    dt = np.dtype([("id", "<i8"), ("name", "S16"), ("v", "<f4")])
    rec = np.zeros(TEXT_ROWS, dt)
    rec["id"] = np.arange(TEXT_ROWS)
    rec["name"] = np.char.add(b"run-", np.char.mod("%d", np.arange(TEXT_ROWS) % 99991).astype("S"))
    rec["v"] = np.random.default_rng(1).random(TEXT_ROWS, dtype="f4")
    opens = {
        "h5py compound": (h5py.File, os.path.join(tmp, "text.h5"), {}),
        "h5lake row": (h5lake.File, os.path.join(tmp, "text-row.h5l"), {}),
        "h5lake columnar": (h5lake.File, os.path.join(tmp, "text-col.h5l"), {"layout": "columnar"}),
    }
    at = TEXT_ROWS // 2 + 12345
    ops = {"one row": np.s_[at:at + 1], "1000 rows": np.s_[at:at + 1000], "read all": np.s_[...]}
    out = {}
    for name, (opener, path, kw) in opens.items():
        with opener(path, "w") as f:
            f.create_dataset("t", data=rec, chunks=(chunk,), **kw)
        out[name] = {}
        with opener(path, "r") as f:
            d = f["t"]
            for op, sel in ops.items():
                if not np.array_equal(d[sel], rec[sel]):
                    raise SystemExit(f"MISMATCH in {name} {op}")
                ts = []
                for _ in range(runs if op == "read all" else max(runs, 21)):
                    t0 = time.perf_counter()
                    d[sel]
                    ts.append(time.perf_counter() - t0)
                out[name][op] = statistics.median(ts)
    return out


def write_report(args, rows, extra, sizes, dropper, loads, text):
    ops = [k for k in next(iter(rows.values()))]
    lines = ["# Columnar tables: h5lake against h5py and Parquet", "",
             f"{datetime.date.today()}, {platform.node()}: {base.cpu_model()}, {os.cpu_count()} cores, "
             f"{base.mem_total_gib():.0f} GiB; Python {platform.python_version()}, h5py {h5py.__version__}, "
             f"pyarrow {pa.__version__}, pandas {pd.__version__}, duckdb {duckdb.__version__}. "
             f"Page cache: {dropper.note}.", "",
             f"{args.particles:,} VPIC-like particles (8 fields of 4 bytes: "
             f"{args.particles * 32 / 2**20:.0f} MiB), {args.chunk:,} rows per chunk or row group; "
             f"median of {args.runs} runs. Command: `python3 bench/columnar.py"
             + (f" --particles {args.particles}" if args.particles != 16_000_000 else "") + "`.", "",
             "Seconds (lower is better), and in brackets h5py compound's time divided by this one "
             "(above 1: faster than h5py compound):", "",
             "| storage | size MiB | " + " | ".join(ops) + " |",
             "|---|---:|" + "---:|" * len(ops)]
    ref = rows["h5py compound"]
    for name, r in rows.items():
        cells = [f"{r[o]:.3f} ({ref[o] / r[o]:.2f}×)" for o in ops]
        lines.append(f"| {name} | {sizes[name] / 2**20:.0f} | " + " | ".join(cells) + " |")
    lines += ["", "Against the same data as one Parquet file (warm; ratio = theirs / ours, "
              "above 1: h5lake faster):", "",
              "| operation | h5lake s | theirs s | ratio |", "|---|---:|---:|---:|"]
    for label, (ours, theirs) in extra.items():
        lines.append(f"| {label} | {ours:.3f} | {theirs:.3f} | {theirs / ours:.2f} |")
    col, pqn = rows["h5lake columnar"], rows["parquet"]
    colz, pqz = rows["h5lake columnar zstd"], rows["parquet zstd"]
    t = "warm"
    lines += ["", "Issue 20's targets (warm):", "",
              f"- read 3 of 8, columnar vs h5py compound: {ref[f'read 3 of 8 ({t})'] / col[f'read 3 of 8 ({t})']:.2f}× "
              "(target ≥ 3)",
              f"- read 3 of 8, columnar vs pyarrow on the same codec: none "
              f"{pqn[f'read 3 of 8 ({t})'] / col[f'read 3 of 8 ({t})']:.2f}×, zstd "
              f"{pqz[f'read 3 of 8 ({t})'] / colz[f'read 3 of 8 ({t})']:.2f}× (target ≥ 1)",
              f"- full read, columnar vs h5py compound: {ref[f'read all ({t})'] / col[f'read all ({t})']:.2f}× "
              "(target ≥ 1.5)",
              f"- write, columnar vs h5py compound: {ref['write'] / col['write']:.2f}×; vs pyarrow: none "
              f"{pqn['write'] / col['write']:.2f}×, zstd {pqz['write'] / colz['write']:.2f}× "
              "(targets ≥ 1.5 and ≥ 1)", ""]
    if text:
        tops = list(next(iter(text.values())))
        lines += [f"A table with a text member, (id i8, name S16, v f4), {TEXT_ROWS:,} rows, "
                  f"{args.chunk:,} rows per chunk; warm, milliseconds, and in brackets h5py "
                  "compound's time divided by this one:", "",
                  "| storage | " + " | ".join(tops) + " |", "|---|" + "---:|" * len(tops)]
        tref = text["h5py compound"]
        for name, r in text.items():
            lines.append(f"| {name} | " + " | ".join(
                f"{r[o] * 1e3:.3f} ({tref[o] / r[o]:.2f}×)" for o in tops) + " |")
        lines.append("")
    if loads:
        lines += [f"Parquet in: 8 files of {loads['size'] / 2**30:.2f} GiB in all (pyarrow, row groups "
                  "of 1 Mi rows, no compression); seconds, median, cold cache where it can be dropped:", "",
                  "| operation | s |", "|---|---:|"]
        lines += [f"| {k} | {v:.3f} |" for k, v in loads.items() if k != "size"]
        lines += ["", f"- load --link: {loads['load --link']:.3f} s (target < 1 s)",
                  f"- copy load vs pyarrow read + write of the same files: "
                  f"{loads['pyarrow read_table + write_table'] / loads['load (copy)']:.2f}× (target ≥ 1)", ""]
    with open(args.out, "w") as f:
        f.write("\n".join(lines))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
