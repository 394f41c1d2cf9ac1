"""Columnar datasets under pressure (issue 20): random selections against
h5py, what a read of some fields costs in bytes, writers racing on one
chunk, and a writer killed mid-write."""

import os
import signal
import subprocess
import sys
import textwrap
import threading
import time

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import h5lake
from diffutil import Raised, h5py
from test_selection_props import SETTINGS, _run, cases, check

pytestmark = pytest.mark.skipif(h5py is None, reason="h5py not installed")


def compound_of(dtype):
    return np.dtype([("a", dtype), ("b", "<f4"), ("s", "S3"), ("n", [("p", "<i2"), ("q", "u1")])])


def compound_data(shape, dtype, seed):
    rng = np.random.default_rng(seed)
    dt = compound_of(dtype)
    out = np.zeros(shape, dt)
    base = np.dtype(dtype)
    if base.kind == "c":
        out["a"] = rng.integers(-100, 100, shape) + 1j * rng.integers(-100, 100, shape)
    elif base.kind == "u":
        out["a"] = rng.integers(0, 255, shape)
    else:
        out["a"] = rng.integers(-1000, 1000, shape)
    out["b"] = rng.standard_normal(shape)
    out["s"] = rng.choice([b"", b"a", b"xyz", b"q\x00"], shape)
    out["n"]["p"] = rng.integers(-300, 300, shape)
    out["n"]["q"] = rng.integers(0, 255, shape)
    return out


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("colprops")
    hf = h5py.File(d / "p.h5", "w")
    lf = h5lake.File(d / "p.h5l", "w")
    yield hf, lf
    hf.close()
    lf.close()


_names = iter(range(10**9))

FIELD_SETS = [["a"], ["b", "a"], ["n"], ["s", "b"], ["a", "b", "s", "n"]]


def make(files, shape, chunks, dtype, seed, compression):
    hf, lf = files
    name = "d%d" % next(_names)
    data = compound_data(shape, dtype, seed)
    chunks = chunks or shape
    hd = hf.create_dataset(name, data=data, chunks=chunks)
    ld = lf.create_dataset(name, data=data, chunks=chunks, layout="columnar",
                           compression=compression)
    assert ld.is_columnar
    return hd, ld


@settings(max_examples=150, **SETTINGS)
@given(cases(), st.sampled_from([None, "zstd"]), st.sampled_from(FIELD_SETS))
def test_columnar_reads_match_h5py(files, case, compression, names):
    shape, chunks, dtype, seed, sel = case
    hd, ld = make(files, shape, chunks, dtype, seed, compression)
    where = f"{sel!r} of {shape} chunks={chunks} {dtype} {compression}"
    check(_run(lambda d: d[sel], hd), _run(lambda d: d[sel], ld), f"read {where}")
    check(_run(lambda d: d.fields(names)[sel], hd), _run(lambda d: d.fields(names)[sel], ld),
          f"read {names} {where}")


@settings(max_examples=150, **SETTINGS)
@given(cases(), st.sampled_from([None, "zstd"]))
def test_columnar_writes_match_h5py(files, case, compression):
    shape, chunks, dtype, seed, sel = case
    hd, ld = make(files, shape, chunks, dtype, seed, compression)
    target = _run(lambda d: d[sel], hd)
    if not isinstance(target, Raised):
        value = compound_data(np.shape(target), dtype, seed + 1)
        check(_run(lambda d: d.__setitem__(sel, value), hd),
              _run(lambda d: d.__setitem__(sel, value), ld), f"write {sel!r}")
    check(hd[()], ld[()], f"after writing {sel!r} of {shape} chunks={chunks} {dtype}")


def rchar():
    """Bytes this process has read through read/pread calls so far."""
    with open("/proc/self/io") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("rchar:"))


def test_some_fields_read_only_their_columns(tmp_path):
    """A read of one field of eight reads about an eighth of the chunk
    objects (their footers and that column), not the whole objects."""
    n = 200_000
    dt = np.dtype([(k, "<f8") for k in "abcdefgh"])
    data = np.zeros(n, dt)
    rng = np.random.default_rng(1)
    for k in "abcdefgh":
        data[k] = rng.standard_normal(n)
    path = tmp_path / "t.h5l"
    with h5lake.File(path, "w") as f:
        f.create_dataset("t", data=data, chunks=(50_000,), layout="columnar")
    stored = sum(os.path.getsize(p) for p in h5lake.File(path, "r")["t"].parquet_files())
    # the counter sees reads of the chunk objects
    before = rchar()
    for p in h5lake.File(path, "r")["t"].parquet_files():
        with open(p, "rb") as fh:
            fh.read()
    assert rchar() - before >= stored
    with h5lake.File(path, "r") as f:
        d = f["t"]
        before = rchar()
        got = d.fields(["c"])[...]
        one = rchar() - before
        whole = d[...]      # (big ranges are mapped, not read: not counted)
    np.testing.assert_array_equal(got["c"], data["c"])
    np.testing.assert_array_equal(whole, data)
    # the column's ~400 KB a chunk are read (counted), the other seven not
    assert stored / 8 * 0.9 < one < stored / 8 + 300_000, (one, stored)


def test_columnar_fields_on_s3(s3_root):
    """On S3 a read of some fields takes ranged GETs of their columns and
    gives what the whole read gives."""
    n = 30_000
    dt = np.dtype([("x", "<f4"), ("y", ">f8"), ("id", "<i8"), ("tag", "S4")])
    data = np.zeros(n, dt)
    data["x"] = np.arange(n) * 0.5
    data["y"] = -np.arange(n)
    data["id"] = np.arange(n) * 3
    data["tag"] = [b"t%d" % (i % 9) for i in range(n)]
    url = f"{s3_root}/t.h5l"
    with h5lake.File(url, "w") as f:
        f.create_dataset("t", data=data, chunks=(4096,), layout="columnar", compression="zstd")
    with h5lake.File(url, "r") as f:
        d = f["t"]
        np.testing.assert_array_equal(d[...], data)
        two = d.fields(["id", "x"])[...]
        assert two.dtype.names == ("id", "x")
        np.testing.assert_array_equal(two["id"], data["id"])
        np.testing.assert_array_equal(two["x"], data["x"])
        np.testing.assert_array_equal(d.fields("tag")[100:9000:7], data["tag"][100:9000:7])
        np.testing.assert_array_equal(d["y"], data["y"])


def test_racing_writers_on_one_chunk_lose_nothing(tmp_path):
    """Threads and processes writing different rows of the same columnar
    chunks: every row written is there at the end."""
    path = tmp_path / "race.h5l"
    dt = np.dtype([("i", "<i8"), ("v", "<f4")])
    n, writers = 240, 4
    with h5lake.File(path, "w") as f:
        f.create_dataset("t", (n,), dt, chunks=(60,), layout="columnar",
                         fillvalue=np.array((-1, -1.0), dt))

    def write(w):
        with h5lake.File(path, "a") as f:
            d = f["t"]
            for i in range(w, n, writers):
                d[i] = (i, i / 2)

    threads = [threading.Thread(target=write, args=(w,)) for w in range(writers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    with h5lake.File(path, "r") as f:
        got = f["t"][...]
    np.testing.assert_array_equal(got["i"], np.arange(n))
    np.testing.assert_array_equal(got["v"], np.arange(n) / 2)

    child = textwrap.dedent("""
        import sys, numpy as np, h5lake
        path, w, writers, n = sys.argv[1], *map(int, sys.argv[2:])
        with h5lake.File(path, "a") as f:
            d = f["t"]
            for i in range(w, n, writers):
                d[i] = (-i, i)
    """)
    procs = [subprocess.Popen([sys.executable, "-c", child, str(path), str(w), str(writers), str(n)])
             for w in range(writers)]
    assert [p.wait(timeout=120) for p in procs] == [0] * writers
    with h5lake.File(path, "r") as f:
        got = f["t"][...]
    np.testing.assert_array_equal(got["i"], -np.arange(n))
    np.testing.assert_array_equal(got["v"], np.arange(n))


CHILD = textwrap.dedent("""
    import sys
    import numpy as np
    import h5lake
    dt = np.dtype([("i", "<i8"), ("x", "<f8"), ("s", "S6")])
    f = h5lake.File(sys.argv[1], "a", durable=True)
    t = f.require_dataset("t", (0,), dt, maxshape=(None,), chunks=(7,), layout="columnar",
                          compression="zstd")
    print("ready", flush=True)
    i = t.shape[0]
    while True:
        t.resize((i + 1,))
        t[i] = (i, i * 0.25, b"r%d" % i)
        print("row", i, flush=True)
        if i % 5 == 0:
            t[i // 2] = (i // 2, i // 2 * 0.25, b"r%d" % (i // 2))   # rewrite an older row
        i += 1
""")


@pytest.mark.parametrize("n_acks", [5, 60])
def test_kill9_during_columnar_writes_loses_nothing(tmp_path, n_acks):
    path = str(tmp_path / "crash.h5l")
    proc = subprocess.Popen([sys.executable, "-c", CHILD, path], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    rows, deadline = [], time.monotonic() + 120
    try:
        while len(rows) < n_acks:
            line = proc.stdout.readline()
            if not line:
                pytest.fail(f"child exited early: {proc.stderr.read()}")
            if line.startswith("row"):
                rows.append(int(line.split()[1]))
            assert time.monotonic() < deadline
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        rows += [int(x.split()[1]) for x in proc.stdout.read().splitlines() if x.startswith("row")]
        proc.stdout.close()
        proc.stderr.close()
    with h5lake.File(path, "r") as f:
        t = f["t"]
        assert t.is_columnar and t.shape[0] >= max(rows) + 1
        got = t[: max(rows) + 1]
        for i in rows:
            assert tuple(got[i]) == (i, i * 0.25, b"r%d" % i), i
    with h5lake.File(path, "a") as f:               # still writable
        t = f["t"]
        t.resize((t.shape[0] + 1,))
        t[-1] = (7, 7.0, b"after")
    with h5lake.File(path, "r") as f:
        assert tuple(f["t"][-1]) == (7, 7.0, b"after")
