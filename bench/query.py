#!/usr/bin/env python3
"""Queries that skip chunks (issue 21): a time-series table of 32 M rows
(`t` int64 rising with jitter, `sensor` int32 uniform 0-999, `value`
float32 normal, `flag` uint8) stored as

  h5lake row         one compound dataset (statistics kept as written)
  h5lake columnar    layout="columnar"
  PyTables           a Table, no compression; read_where without an index,
                     and with a full CSI index on t
  h5py + numpy       one compound dataset, read whole, masked with numpy
  DuckDB             one Parquet file, row groups of the chunks' size
  HSDS 1.0.2         query= (one REST request over the rows) on 1/8 of
                     them (HSDS scans every chunk; scaled and said so)

side by side in one run, warm cache (each timed after one untimed pass),
median of --runs. Timed: a time range selecting 0.1 % of the rows, `value
> 3.0` (about 0.1 %, anywhere: no chunk can be skipped), the whole
dataset's max(value), and the cost of keeping statistics on write (stats
on vs stats=False, without compression and with gzip). Every answer is
checked against numpy on the data written; a mismatch aborts the run.
Writes RESULTS-query.md.

Usage:  python3 bench/query.py                       # 32 M rows, 3 runs
        python3 bench/query.py --rows 2000000 --runs 1 --no-hsds
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
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "tests"))

import duckdb  # noqa: E402
import h5py  # noqa: E402
import pyarrow as pa  # noqa: E402
import pyarrow.parquet as pq  # noqa: E402
import tables  # noqa: E402

import h5lake  # noqa: E402
from run import du  # noqa: E402

DT = np.dtype([("t", "<i8"), ("sensor", "<i4"), ("value", "<f4"), ("flag", "u1")])


def log(*a):
    print(*a, file=sys.stderr, flush=True)


def make(n, seed=0):
    rng = np.random.default_rng(seed)
    a = np.empty(n, DT)
    a["t"] = np.arange(n, dtype=np.int64) * 10 + rng.integers(0, 10, n)
    a["sensor"] = rng.integers(0, 1000, n, dtype=np.int32)
    a["value"] = rng.standard_normal(n, dtype=np.float32)
    a["flag"] = rng.integers(0, 2, n, dtype=np.uint8)
    return a


def timed(fn, runs):
    fn()        # warm: the page cache and the process's own caches
    times = []
    out = None
    for _ in range(runs):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), out


def check(got, want, what):
    got = np.asarray(got)
    if got.dtype.names:
        ok = len(got) == len(want) and all(np.array_equal(got[k], want[k]) for k in want.dtype.names)
    else:
        ok = np.array_equal(got, want)
    if not ok:
        raise SystemExit(f"{what}: wrong answer ({len(got)} rows, want {len(want)})")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rows", type=int, default=32_000_000)
    ap.add_argument("--chunk", type=int, default=1 << 18, help="rows per chunk / row group")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--no-hsds", action="store_true", help="leave HSDS out")
    ap.add_argument("--tmp", help="where the stores go (default: the system temporary directory)")
    ap.add_argument("--out", default=os.path.join(HERE, "RESULTS-query.md"))
    args = ap.parse_args()
    n, chunk, runs = args.rows, args.chunk, args.runs
    tmp = tempfile.mkdtemp(prefix="h5lake-querybench-", dir=args.tmp)
    p = lambda name: os.path.join(tmp, name)  # noqa: E731
    started = datetime.datetime.now(datetime.timezone.utc)
    log(f"making {n:,} rows")
    a = make(n)
    t0, t1 = int(a["t"][n // 2]), int(a["t"][n // 2]) + n // 100    # 0.1 % of the rows
    range_q = f"(t >= {t0}) & (t < {t1})"
    want_range = a[(a["t"] >= t0) & (a["t"] < t1)]
    want_value = a[a["value"] > 3.0]
    want_max = a["value"].max()
    res = {}
    try:
        # -- writes: the cost of statistics ---------------------------------
        log("writes")
        for codec in (None, "gzip"):
            for stats in (True, False):
                def write(stats=stats, codec=codec):
                    shutil.rmtree(p("w.h5l"), ignore_errors=True)
                    with h5lake.File(p("w.h5l"), "w") as f:
                        f.create_dataset("t", data=a, chunks=(chunk,), compression=codec,
                                         stats=stats)
                res[("write", codec, stats)] = timed(write, runs)[0]
        shutil.rmtree(p("w.h5l"), ignore_errors=True)

        # -- the stores ------------------------------------------------------
        log("stores")
        with h5lake.File(p("row.h5l"), "w") as f:
            f.create_dataset("t", data=a, chunks=(chunk,))
        with h5lake.File(p("col.h5l"), "w") as f:
            f.create_dataset("t", data=a, chunks=(chunk,), layout="columnar")
        with h5py.File(p("c.h5"), "w") as f:
            f.create_dataset("t", data=a, chunks=(chunk,))
        for name, index in (("pt.h5", False), ("ptidx.h5", True)):
            with tables.open_file(p(name), "w") as f:
                t = f.create_table("/", "t", description=DT, expectedrows=n,
                                   chunkshape=(chunk // 16,))
                t.append(a)
                if index:
                    t0i = time.perf_counter()
                    t.cols.t.create_csindex()
                    res["csi build"] = time.perf_counter() - t0i
        pq.write_table(pa.table({k: a[k] for k in DT.names}), p("t.parquet"),
                       row_group_size=chunk, compression="none")

        def h5lake_q(path, cond):
            with h5lake.File(path, "r") as f:
                return f["t"].read_where(cond)

        def h5lake_max(path):
            with h5lake.File(path, "r") as f:
                return f["t"].max("value")

        def pytables_q(path, cond):
            with tables.open_file(path, "r") as f:
                return f.root.t.read_where(cond)

        def h5py_q(mask):
            with h5py.File(p("c.h5"), "r") as f:
                x = f["t"][...]
            return x[mask(x)]

        def h5py_max():
            with h5py.File(p("c.h5"), "r") as f:
                return f["t"]["value"].max()

        con = duckdb.connect()
        src = f"read_parquet('{p('t.parquet')}')"

        def duck(where):
            out = con.sql(f"SELECT * FROM {src} WHERE {where}").arrow()
            # (DuckDB 2 answers a RecordBatchReader, earlier ones a Table.)
            return out.read_all() if hasattr(out, "read_all") else out

        def duck_check(tbl, want, what):
            got = np.empty(tbl.num_rows, DT)
            for k in DT.names:
                got[k] = tbl.column(k).to_numpy()
            check(got, want, what)

        log("queries")
        for label, path in (("h5lake row", p("row.h5l")), ("h5lake columnar", p("col.h5l"))):
            s, got = timed(lambda: h5lake_q(path, range_q), runs)
            check(got, want_range, label)
            res[("range", label)] = s
            s, got = timed(lambda: h5lake_q(path, "value > 3.0"), runs)
            check(got, want_value, label)
            res[("value", label)] = s
            s, got = timed(lambda: h5lake_max(path), runs)
            assert got == want_max, (label, got, want_max)
            res[("max", label)] = s
        for label, path in (("PyTables", p("pt.h5")), ("PyTables + CSI index", p("ptidx.h5"))):
            s, got = timed(lambda: pytables_q(path, f"(t >= {t0}) & (t < {t1})"), runs)
            check(got, want_range, label)
            res[("range", label)] = s
            s, got = timed(lambda: pytables_q(path, "value > 3.0"), runs)
            check(got, want_value, label)
            res[("value", label)] = s
        s, got = timed(lambda: h5py_q(lambda x: (x["t"] >= t0) & (x["t"] < t1)), runs)
        check(got, want_range, "h5py")
        res[("range", "h5py + numpy")] = s
        s, got = timed(lambda: h5py_q(lambda x: x["value"] > 3.0), runs)
        check(got, want_value, "h5py")
        res[("value", "h5py + numpy")] = s
        s, got = timed(h5py_max, runs)
        assert got == want_max
        res[("max", "h5py + numpy")] = s
        s, got = timed(lambda: duck(f"t >= {t0} AND t < {t1}"), runs)
        duck_check(got, want_range, "DuckDB")
        res[("range", "DuckDB")] = s
        s, got = timed(lambda: duck("value > 3.0"), runs)
        duck_check(got, want_value, "DuckDB")
        res[("value", "DuckDB")] = s
        s, got = timed(lambda: con.sql(f"SELECT max(value) FROM {src}").fetchall()[0][0], runs)
        assert np.float32(got) == want_max
        res[("max", "DuckDB")] = s

        hsds_note = "left out (--no-hsds)"
        if not args.no_hsds:
            hsds_note = hsds_queries(a, chunk, runs, tmp, res)
        sizes = {"h5lake row": du(p("row.h5l")), "h5lake columnar": du(p("col.h5l")),
                 "h5py": du(p("c.h5")), "PyTables": du(p("pt.h5")),
                 "PyTables + CSI index": du(p("ptidx.h5")), "Parquet": du(p("t.parquet"))}
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    write_report(args, res, sizes, hsds_note, started, len(want_range), len(want_value))


def hsds_queries(a, chunk, runs, tmp, res):
    """HSDS 1.0.2's query= (one REST request over the selection) on the
    first eighth of the rows (it scans every chunk), its time scaled by 8."""
    import h5pyd
    import hsds_server
    part = a[: len(a) // 8]
    t0, t1 = int(part["t"][len(part) // 2]), int(part["t"][len(part) // 2]) + len(part) // 100
    users = {"admin": "admin"}
    srv = hsds_server.HsdsServer(os.path.join(tmp, "hsds"), users=dict(users))
    try:
        srv.start()
        kw = dict(endpoint=srv.endpoint, username="admin", password="admin")
        for folder in ("/home/", "/home/bench/"):
            h5pyd.Folder(folder, mode="w", **kw).close()
        with h5pyd.File("/home/bench/q.h5", "w", **kw) as f:
            # (HSDS keeps chunks under 4 MiB.)
            hchunk = min(chunk, (4 << 20) // DT.itemsize, len(part))
            d = f.create_dataset("t", shape=(len(part),), dtype=DT, chunks=(hchunk,))
            step = 1 << 20
            for i in range(0, len(part), step):
                d[i:i + step] = part[i:i + step]

        with h5pyd.File("/home/bench/q.h5", "r", **kw) as f:
            did = f["t"].id.id
        import requests
        session = requests.Session()
        session.auth = ("admin", "admin")

        def q(cond):
            # The REST call itself: h5pyd 1.0's read_where stops after the
            # first page of rows with fewer matches than rows.
            r = session.get(f"{srv.endpoint}/datasets/{did}/value",
                            params={"domain": "/home/bench/q.h5", "query": cond,
                                    "select": f"[0:{len(part)}]"},
                            headers={"Accept": "application/json"})
            r.raise_for_status()
            return np.array([tuple(v) for v in r.json()["value"]], dtype=DT)
        wrong = []
        for key, cond, want in (("range", f"(t >= {t0}) & (t < {t1})",
                                 part[(part["t"] >= t0) & (part["t"] < t1)]),
                                ("value", "value > 3.0", part[part["value"] > 3.0])):
            s, got = timed(lambda: q(cond), max(1, runs // 3))
            res[(key, "HSDS 1.0.2 (x8)")] = s * 8
            if len(got) != len(want) or got.tobytes() != want.tobytes():
                # A peer's wrong answer is reported, not hidden or fatal.
                wrong.append(f"`{cond}` answered {len(got):,} rows, numpy {len(want):,}")
        if wrong:
            return ("WRONG ANSWERS from HSDS (times shown anyway): " + "; ".join(wrong)
                    + f"; query= on the first {len(part):,} rows, one request each, chunks of {hchunk:,} rows, times x8")
        return (f"query= on the first {len(part):,} rows, one request each "
                f"(chunks of {hchunk:,} rows), times x8")
    except Exception as e:     # HSDS is an optional peer: say why it is missing
        return f"failed: {type(e).__name__}: {str(e)[:120]}"
    finally:
        srv.stop()


def write_report(args, res, sizes, hsds_note, started, n_range, n_value):
    L = ["# Queries that skip chunks: h5lake against PyTables, h5py, DuckDB and HSDS", ""]
    L.append(f"{started:%Y-%m-%d}, {platform.machine()}, {os.cpu_count()} cores; Python "
             f"{platform.python_version()}, h5py {h5py.__version__}, PyTables {tables.__version__}, "
             f"duckdb {duckdb.__version__}, pyarrow {pa.__version__}.")
    L.append("")
    L.append(f"{args.rows:,} rows (t int64 rising, sensor int32, value float32, flag uint8), "
             f"{args.chunk:,} rows per chunk / row group; warm cache, median of {args.runs}. "
             f"Command: `python3 bench/query.py{'' if args.rows == 32_000_000 else f' --rows {args.rows}'}`.")
    L.append("")
    L.append(f"Seconds (lower is better); ratio = theirs / h5lake row's (above 1: h5lake faster). "
             f"Time range: {n_range:,} rows; value > 3.0: {n_value:,} rows.")
    L.append("")
    L.append("| system | time range | value > 3.0 | max(value) |")
    L.append("|---|---:|---:|---:|")
    systems = ["h5lake row", "h5lake columnar", "PyTables", "PyTables + CSI index", "h5py + numpy",
               "DuckDB", "HSDS 1.0.2 (x8)"]
    for s in systems:
        cells = []
        for q in ("range", "value", "max"):
            v = res.get((q, s))
            if v is None:
                cells.append("—")
                continue
            base = res[(q, "h5lake row")]
            cells.append(f"{v:.4f} ({v / base:.2f}×)" if s != "h5lake row" else f"{v:.4f}")
        L.append(f"| {s} | " + " | ".join(cells) + " |")
    L.append("")
    L.append(f"HSDS: {hsds_note}. PyTables CSI index build: {res.get('csi build', float('nan')):.1f} s.")
    L.append("")
    L.append("Sizes (MiB): " + ", ".join(f"{k} {v / 2**20:.0f}" for k, v in sizes.items()) + ".")
    L.append("")
    L.append("Writes (s), statistics on and off:")
    L.append("")
    L.append("| compression | stats on | stats=False | cost |")
    L.append("|---|---:|---:|---:|")
    for codec in (None, "gzip"):
        on, off = res[("write", codec, True)], res[("write", codec, False)]
        L.append(f"| {codec or 'none'} | {on:.3f} | {off:.3f} | {100 * (on / off - 1):+.1f}% |")
    L.append("")

    def best(q):
        return min(res[(q, "h5lake row")], res[(q, "h5lake columnar")])
    L.append("Issue 21's targets (best h5lake layout; ratio = theirs / ours):")
    L.append("")
    tgt = [
        ("time range vs PyTables without index", "range", "PyTables", 10),
        ("time range vs PyTables with CSI index", "range", "PyTables + CSI index", 1),
        ("time range vs DuckDB", "range", "DuckDB", 1),
        ("value > 3.0 vs PyTables in-kernel", "value", "PyTables", 1),
        ("value > 3.0 vs h5py + numpy", "value", "h5py + numpy", 2),
        ("max(value) vs h5py full read + numpy", "max", "h5py + numpy", 100),
    ]
    for label, q, peer, target in tgt:
        r = res[(q, peer)] / best(q)
        L.append(f"- {label}: {r:.2f}× (target ≥ {target}) {'met' if r >= target else 'MISSED'}")
    for codec, target in ((None, 10), ("gzip", 3)):
        on, off = res[("write", codec, True)], res[("write", codec, False)]
        cost = 100 * (on / off - 1)
        L.append(f"- statistics on write, {codec or 'no compression'}: {cost:+.1f}% "
                 f"(target ≤ {target}%) {'met' if cost <= target else 'MISSED'}")
    L.append("")
    with open(args.out, "w") as f:
        f.write("\n".join(L))
    print("\n".join(L))


if __name__ == "__main__":
    main()
