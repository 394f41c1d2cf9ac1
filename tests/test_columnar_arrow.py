"""Tables in and out through Arrow (issue 20): ``create_dataset(data=<table>)``
from pyarrow, pandas, Polars and record batch streams, ``append``, and
``to_arrow`` straight from the chunks' columns — nulls kept, agreeing with
the HDF5-shaped reads and with what other tools read of the chunk files."""

import multiprocessing
import threading

import numpy as np
import pytest

import h5lake

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")
h5py = pytest.importorskip("h5py")


def sample_table(n=50, seed=0):
    rng = np.random.default_rng(seed)
    mask = rng.random(n) < 0.2
    return pa.table({
        "f64": pa.array(rng.standard_normal(n), mask=mask),
        "i32": pa.array(rng.integers(-100, 100, n, dtype=np.int32)),
        "u8": pa.array(rng.integers(0, 255, n, dtype=np.uint8), mask=mask[::-1].copy()),
        "flag": pa.array([None if i % 11 == 0 else bool(i % 2) for i in range(n)]),
        "name": pa.array([None if i % 7 == 0 else f"row {i}" for i in range(n)]),
        "blob": pa.array([bytes([i % 256]) * (i % 4) for i in range(n)], pa.binary()),
        "code": pa.array([b"%03d" % (i % 1000) for i in range(n)], pa.binary(3)),
        "when": pa.array(np.arange(n) * 1000, pa.timestamp("ms", tz="UTC")),
        "day": pa.array(np.arange(n, dtype=np.int32), pa.date32()),
        "pos": pa.array([{"a": i, "b": float(i) / 2} for i in range(n)],
                        pa.struct([("a", pa.int16()), ("b", pa.float32())])),
        "vec": pa.array([[i, i + 1, i + 2] for i in range(n)], pa.list_(pa.int64(), 3)),
        "hits": pa.array([list(range(i % 5)) for i in range(n)], pa.list_(pa.int32())),
        "cat": pa.array([["x", "y", "z"][i % 3] for i in range(n)]).dictionary_encode(),
    })


def expected(t):
    """``t`` as h5lake gives it back: dictionary columns decoded."""
    cols = []
    for c in t.columns:
        cols.append(c.cast(c.type.value_type) if pa.types.is_dictionary(c.type) else c)
    return pa.table(cols, names=t.column_names)


def same(got, want):
    assert got.column_names == want.column_names
    for name in want.column_names:
        g, w = got.column(name).combine_chunks(), want.column(name).combine_chunks()
        assert g.type == w.type, (name, g.type, w.type)
        assert g.to_pylist() == w.to_pylist(), name


@pytest.mark.parametrize("compression", [None, "zstd"])
def test_table_in_and_out_with_nulls(tmp_path, compression):
    t = sample_table(50)
    with h5lake.File(tmp_path / "s.h5l", "w") as f:
        d = f.create_dataset("t", data=t, chunks=(16,), compression=compression)
        assert d.is_columnar and d.shape == (50,) and d.maxshape == (None,)
        same(d.to_arrow(), expected(t))
        same(d.to_arrow(np.s_[5:37]), expected(t.slice(5, 32)))
        same(d.to_arrow(fields=["name", "f64"]), expected(t.select(["name", "f64"])))
        # HDF5-shaped reads: a null reads as the fill value (zero, empty).
        rows = d[...]
        f64 = t.column("f64").to_numpy(zero_copy_only=False)
        np.testing.assert_array_equal(rows["f64"], np.where(np.isnan(f64), 0, f64))
        assert rows["name"][7] in (b"", "")
        assert rows["name"][8] in (b"row 8", "row 8")
        np.testing.assert_array_equal(rows["i32"], t.column("i32").to_numpy())
        # The chunk files hold the nulls too, as other tools read them.
        files = d.parquet_files()
        back = pa.concat_tables([pq.read_table(p) for p in files])
        assert back.num_rows == 50
        assert back.column("f64").null_count == t.column("f64").null_count
        assert back.column("name").to_pylist() == t.column("name").to_pylist()
    with h5lake.File(tmp_path / "s.h5l", "r") as f:      # the same after reopening
        same(f["t"].to_arrow(), expected(t))


def test_to_arrow_from_columns_equals_the_row_path(tmp_path, monkeypatch):
    """For a table made through HDF5 calls, to_arrow from the columns gives
    what converting the NumPy rows gives."""
    dt = np.dtype([("x", "<f4"), ("y", ">f8"), ("id", "<i8"), ("flag", "?"), ("tag", "S4"),
                   ("v", "<u2", (2, 3)), ("inner", [("a", "<i2"), ("b", "<f2")])])
    a = np.zeros(100, dt)
    a["x"] = np.arange(100) / 3
    a["y"] = -np.arange(100)
    a["id"] = np.arange(100) * 7
    a["flag"] = np.arange(100) % 3 == 0
    a["tag"] = [b"t%d" % (i % 13) for i in range(100)]
    a["v"] = np.arange(600).reshape(100, 2, 3)
    a["inner"]["a"] = np.arange(100) - 50
    a["inner"]["b"] = np.arange(100) / 4
    with h5lake.File(tmp_path / "s.h5l", "w") as f:
        d = f.create_dataset("t", data=a, chunks=(30,), layout="columnar", maxshape=(None,))
        d.resize((110,))                      # rows never written: fill value
        fast = d.to_arrow()
        picked = d.to_arrow(np.arange(0, 110, 3))    # rows picked from the run holding them
        same(picked, fast.take(list(range(0, 110, 3))))
        # the row path (through NumPy, as for selections spread too thin)
        # agrees with the columns
        monkeypatch.setattr(h5lake._hl.table, "_picked_rows", lambda dset, sel: None)
        slow = d.to_arrow(np.arange(110))
        same(fast, slow)
        same(d.to_arrow(np.s_[10:95], fields="tag"), d.to_arrow(np.arange(10, 95), fields="tag"))


def test_streams_pandas_and_polars(tmp_path):
    pd = pytest.importorskip("pandas")
    pl = pytest.importorskip("polars")
    t = sample_table(40).drop_columns(["cat"])
    batches = t.to_batches(max_chunksize=7)
    reader = pa.RecordBatchReader.from_batches(t.schema, iter(batches))
    df = pd.DataFrame({"a": np.arange(10.0), "b": [f"s{i}" for i in range(10)]})
    with h5lake.File(tmp_path / "s.h5l", "w") as f:
        r = f.create_dataset("from_reader", data=reader, chunks=(16,))
        assert r.shape == (40,)
        same(r.to_arrow(), t)
        p = f.create_dataset("from_pandas", data=df)
        assert p.to_pandas().equals(df)
        q = f.create_dataset("from_polars", data=pl.from_pandas(df))
        assert q.to_polars().equals(pl.from_pandas(df))


def test_append(tmp_path):
    pd = pytest.importorskip("pandas")
    t = sample_table(30)
    with h5lake.File(tmp_path / "s.h5l", "w") as f:
        d = f.create_dataset("t", data=t.slice(0, 10), chunks=(8,))
        assert d.append(t.slice(10, 15)) == 15
        assert d.append(pa.RecordBatchReader.from_batches(t.schema, t.slice(25).to_batches(2))) == 5
        assert d.shape == (30,)
        same(d.to_arrow(), expected(t))
        # Timestamps given in another unit land in the table's own.
        small = pd.DataFrame({"x": [1.0], "when": pd.to_datetime(["2021-05-01T00:00:00Z"])})
        e = f.create_dataset("e", data=pa.table({"x": [0.5], "when": pa.array([0], pa.timestamp("ms"))}))
        e.append(pa.Table.from_pandas(small, preserve_index=False).cast(
            pa.schema([("x", pa.float64()), ("when", pa.timestamp("ns"))])))
        assert e.to_arrow().column("when").to_pylist()[1].year == 2021
        # Columns that are not the members: refused, nothing written.
        with pytest.raises((ValueError, TypeError), match="columns"):
            d.append(pa.table({"nope": [1]}))
        assert d.shape == (30,)
        # Row layout compound datasets and NumPy rows append too.
        rows = np.zeros(3, [("i", "<i4"), ("x", "<f8")])
        rows["i"] = [1, 2, 3]
        g = f.create_dataset("g", data=rows, maxshape=(None,), chunks=(2,))
        assert g.append(pa.table({"i": pa.array([4], pa.int32()), "x": [0.25]})) == 1
        assert g.append(rows[:2]) == 2
        np.testing.assert_array_equal(g["i"], [1, 2, 3, 4, 1, 2])
        with pytest.raises(TypeError):
            f.create_dataset("fixed", data=rows).append(rows)


@pytest.mark.parametrize("layout", [None, "columnar"])
def test_append_refuses_values_its_members_cannot_hold(tmp_path, layout):
    """A value that does not survive the cast to its member (text into a
    number, an integer out of range, a fraction into an integer) is refused
    as pyarrow's safe cast refuses it: nothing appended, never nulls or
    wrapped numbers."""
    with h5lake.File(tmp_path / "s.h5l", "w") as f:
        d = f.create_dataset("t", shape=(1,), maxshape=(None,), chunks=(4,),
                             dtype=[("x", "f4"), ("id", "i2")],
                             **({"layout": layout} if layout else {}))
        d[0] = (1.0, 1)
        for bad in (pa.table({"x": pa.array(["abc"]), "id": pa.array([1])}),
                    pa.table({"x": pa.array([2.0]), "id": pa.array([100000])}),
                    pa.table({"x": pa.array([2.0]), "id": pa.array([1.5])})):
            with pytest.raises(ValueError):
                d.append(bad)
            assert d.shape == (1,)
        # What does survive the cast goes in.
        assert d.append(pa.table({"x": pa.array([2.5]), "id": pa.array([7.0])})) == 1
        assert d[1].tolist() == (2.5, 7)


@pytest.mark.parametrize("layout", [None, "columnar"])
def test_text_appended_to_a_fixed_length_member_must_fit_it(tmp_path, layout):
    """A value longer than its fixed-length string member was kept whole in
    the table's Parquet (what other tools and to_arrow saw) while HDF5 reads
    gave its first bytes; an integer was stored as its raw bytes. Both are
    refused, with nothing appended; text that fits goes in, trailing NULs
    as padding."""
    with h5lake.File(tmp_path / "s.h5l", "w") as f:
        d = f.create_dataset("t", shape=(0,), maxshape=(None,), chunks=(4,),
                             dtype=[("a", "i4"), ("s", "S3")],
                             **({"layout": layout} if layout else {}))
        for bad, why in ((pa.array([b"toolong"]), "7 bytes"),
                         (pa.array([b"abcd"], pa.binary(4)), "4 bytes"),
                         (pa.array(["\u00e9t\u00e9"]), "5 bytes"),
                         (pa.array([123]), "not text"),
                         (pa.array([1.5]), "not text")):
            with pytest.raises(ValueError, match=why):
                d.append(pa.table({"a": pa.array([1], pa.int32()), "s": bad}))
            assert d.shape == (0,)
        ok = pa.table({"a": pa.array([1, 2, 3, 4], pa.int32()),
                       "s": pa.array([b"abc", b"x\0\0\0", None, "\u00e9"], pa.binary())})
        assert d.append(ok) == 4
        assert d["s"].tolist() == [b"abc", b"x", b"", "\u00e9".encode()]
        # (a row table holds no nulls: the fill value)
        assert d.to_arrow()["s"].to_pylist() == [b"abc", b"x", None if layout else b"",
                                                 "\u00e9".encode()]
        if layout:
            [part] = d.parquet_files()
            assert pq.read_table(part)["s"].to_pylist() == [b"abc", b"x", None,
                                                            "\u00e9".encode()]


def test_append_matches_the_fields_of_an_array_by_name(tmp_path):
    with h5lake.File(tmp_path / "s.h5l", "w") as f:
        d = f.create_dataset("t", shape=(1,), maxshape=(None,), chunks=(4,),
                             dtype=[("x", "f4"), ("id", "i4")])
        src = np.array([(1, 2.5)], [("id", "i4"), ("x", "f4")])
        d[0:1] = src
        d.append(src)
        assert d[()].tolist() == [(2.5, 1), (2.5, 1)]
        with pytest.raises(ValueError, match="fields"):
            d.append(np.array([(1, 2.5)], [("a", "i4"), ("b", "f4")]))
        assert d.shape == (2,)


def test_concurrent_appends_lose_nothing(tmp_path):
    path = tmp_path / "s.h5l"
    with h5lake.File(path, "w") as f:
        f.create_dataset("t", data=pa.table({"w": pa.array([], pa.int32()), "i": pa.array([], pa.int64())}),
                         chunks=(10,))

    def work(w):
        with h5lake.File(path, "a") as f:
            d = f["t"]
            for k in range(6):
                d.append(pa.table({"w": pa.array([w] * 3, pa.int32()),
                                   "i": pa.array([k * 3, k * 3 + 1, k * 3 + 2])}))

    threads = [threading.Thread(target=work, args=(w,)) for w in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    with h5lake.File(path, "r") as f:
        got = f["t"].to_arrow().to_pylist()
    assert len(got) == 4 * 6 * 3
    assert sorted((r["w"], r["i"]) for r in got) == sorted((w, i) for w in range(4) for i in range(18))


def _append_rows_in_a_process(path, w, batches, ready, go, how="arrow"):
    import h5lake
    import numpy as np
    import pyarrow as pa
    with h5lake.File(path, "a") as f:
        d = f["t"]
        ready.release()
        go.wait(60)
        for k in range(batches):
            if how == "arrow":
                d.append(pa.table({"w": pa.array([w] * 3, pa.int32()),
                                   "i": pa.array([k * 3, k * 3 + 1, k * 3 + 2])}))
            else:
                # One row at a time through the HDF5-shaped write: another
                # writer may grow the extent and fill this row's chunk
                # between this one's extend and its write.
                for i in range(k * 3, k * 3 + 3):
                    d.append(np.array([(w, i)], d.dtype))


@pytest.mark.parametrize("how", ["arrow", "numpy"])
def test_appends_from_processes_lose_nothing(tmp_path, how):
    """Each process keeps its metadata changes until it closes the file;
    an append must still claim its rows in the store at once, or two
    processes write the same rows and the later extent hides the other's."""
    path = str(tmp_path / "s.h5l")
    with h5lake.File(path, "w") as f:
        f.create_dataset("t", data=pa.table({"w": pa.array([], pa.int32()), "i": pa.array([], pa.int64())}),
                         chunks=(10,) if how == "arrow" else (3,))
    ctx = multiprocessing.get_context("spawn")
    ready, go = ctx.Semaphore(0), ctx.Event()
    procs = [ctx.Process(target=_append_rows_in_a_process, args=(path, w, 8, ready, go, how))
             for w in range(3)]
    for p in procs:
        p.start()
    for _ in procs:
        assert ready.acquire(timeout=60)
    go.set()
    for p in procs:
        p.join(120)
        assert p.exitcode == 0
    with h5lake.File(path, "r") as f:
        got = f["t"].to_arrow().to_pylist()
    assert sorted((r["w"], r["i"]) for r in got) == sorted((w, i) for w in range(3) for i in range(24))


def test_appends_claim_their_rows_in_the_store_at_once(tmp_path):
    """Two handles on one store by two names keep their pending changes
    apart, as two processes do: each append must still claim rows no
    other writer has, in the store, before it writes them."""
    path = tmp_path / "s.h5l"
    with h5lake.File(path, "w") as f:
        f.create_dataset("t", data=pa.table({"w": pa.array([], pa.int32())}), chunks=(10,))
        f.create_dataset("r", shape=(0,), maxshape=(None,), dtype=[("w", "i4")], chunks=(10,))
    (tmp_path / "alias.h5l").symlink_to(path)
    a = h5lake.File(path, "a")
    b = h5lake.File(tmp_path / "alias.h5l", "a")
    for name in ("t", "r"):
        # Each writer has a change of its own pending on the dataset.
        a[name].attrs["a"] = 1
        b[name].attrs["b"] = 2
        for k in range(4):
            for w, f in ((1, a), (2, b)):
                rows = pa.table({"w": pa.array([w * 10 + k] * 3, pa.int32())})
                f[name].append(rows if name == "t" else np.array([(w * 10 + k,)] * 3, f[name].dtype))
    a.close()
    b.close()
    with h5lake.File(path, "r") as f:
        for name in ("t", "r"):
            assert sorted(f[name]["w"].tolist()) == sorted(w * 10 + k for w in (1, 2) for k in range(4) for _ in range(3))
            assert dict(f[name].attrs) == {"a": 1, "b": 2}


def test_what_a_table_cannot_hold_is_refused(tmp_path):
    with h5lake.File(tmp_path / "s.h5l", "w") as f:
        with pytest.raises(ValueError, match="m"):
            f.create_dataset("m", data=pa.table({"m": pa.array([{"a": 1}], pa.map_(pa.string(), pa.int32()))}))
        assert "m" not in f
        with pytest.raises(TypeError, match="shape"):
            f.create_dataset("s", data=pa.table({"a": [1]}), shape=(5,))
        assert "s" not in f


def test_the_server_streams_arrow(tmp_path):
    """``Accept: application/vnd.apache.arrow.stream`` on a value read gives
    an Arrow IPC stream of the selection (``select=``, ``fields=``): a run
    of rows of a columnar table with its nulls; any other selection or
    dataset from its elements."""
    from servers import Server
    t = sample_table(300).drop_columns(["cat"])
    root = tmp_path / "root"
    root.mkdir()
    with h5lake.File(root / "t.h5l", "w") as f:
        d = f.create_dataset("t", data=t, chunks=(64,))
        rows = np.zeros(50, [("a", "<i4"), ("b", ">f8"), ("tag", "S3")])
        rows["a"] = np.arange(50)
        rows["b"] = np.arange(50) / 4
        rows["tag"] = [b"k%d" % (i % 10) for i in range(50)]
        r = f.create_dataset("rows", data=rows, chunks=(16,))
        plain = f.create_dataset("plain", data=np.arange(24.0).reshape(4, 6))
        ids = {"t": d._oid, "rows": r._oid, "plain": plain._oid}
    s = Server(root)
    arrow = {"Accept": "application/vnd.apache.arrow.stream"}

    def get(name, **params):
        status, hdrs, body = s.request("GET", f"/datasets/{ids[name]}/value",
                                       params={"domain": "/t.h5l", **params}, headers=arrow, raw=True)
        assert status == 200, body
        assert hdrs["Content-Type"] == "application/vnd.apache.arrow.stream"
        return pa.ipc.open_stream(body).read_all()

    try:
        same(get("t"), t)
        same(get("t", select="[10:250]"), t.slice(10, 240))
        same(get("t", select="[10:250]", fields="name:f64"), t.slice(10, 240).select(["name", "f64"]))
        got = get("t", select="[0:300:7]", fields="i32")     # every 7th of a run
        assert got.column("i32").to_pylist() == t.column("i32").to_pylist()[::7]
        got = get("t", select="[1:300:3]", fields="f64:u8")  # nulls kept, as to_arrow() keeps them
        same(got, t.select(["f64", "u8"]).take(list(range(1, 300, 3))))
        got = get("rows", select="[3:40]")
        assert got.column("a").to_pylist() == list(range(3, 40))
        assert got.column("b").to_pylist() == [i / 4 for i in range(3, 40)]
        assert got.column("tag").to_pylist() == [b"k%d" % (i % 10) for i in range(3, 40)]
        got = get("plain", select="[1:3,2:5]")
        assert got.column_names == ["value"]
        assert got.column("value").to_pylist() == [8.0, 9.0, 10.0, 14.0, 15.0, 16.0]
        assert get("t", select="[5:5]").num_rows == 0
    finally:
        s.stop()


@pytest.mark.parametrize("layout", ["columnar", None])
def test_an_edit_keeps_the_nulls_it_does_not_write(tmp_path, layout):
    """HDF5-shaped writes carry values only: a write of some rows, some
    points or one member of a columnar chunk keeps the nulls of everything
    else in it, as DuckDB counts them; a shrink and a NumPy append too."""
    duckdb = pytest.importorskip("duckdb")
    t = pa.table({"x": pa.array([1, None, 3, None, 5, None], pa.int32()),
                  "y": pa.array([None, 1.5, None, 2.5, None, 3.5])})
    with h5lake.File(tmp_path / "e.h5l", "w") as f:
        d = f.create_dataset("t", data=t, chunks=(8,), maxshape=(None,))
        if layout is None:          # the same edits of a row-layout table: values only
            d = f.create_dataset("r", data=d[...], chunks=(8,), maxshape=(None,))
        d[1] = (42, 9.0)                                  # one row, both members
        d["y", 2:4] = np.array([7.0, 8.0])                # one member of two rows
        d[[4]] = np.array([(0, 0.0)], d.dtype)            # a point, written with the fill
        if layout is None:
            assert d[...].tolist() == [(1, 0.0), (42, 9.0), (3, 7.0), (0, 8.0), (0, 0.0),
                                       (0, 3.5)]
            return
        got = d.to_arrow().to_pydict()
        assert got == {"x": [1, 42, 3, None, 0, None], "y": [None, 9.0, 7.0, 8.0, 0.0, 3.5]}
        files = d.parquet_files()
        assert duckdb.sql(f"SELECT count(x), count(y) FROM read_parquet({files})").fetchall() \
            == [(4, 5)]
        d.resize((4,))
        d.append(np.array([(7, 7.5)], d.dtype))
        assert d.to_arrow().to_pydict() == {"x": [1, 42, 3, None, 7], "y": [None, 9.0, 7.0, 8.0, 7.5]}


@pytest.mark.parametrize("layout", ["columnar", None])
def test_writers_of_different_members_of_the_same_rows_lose_nothing(tmp_path, layout):
    dt = np.dtype([("a", "i4"), ("b", "f8"), ("c", "i2")])
    kw = {"layout": layout} if layout else {}
    with h5lake.File(tmp_path / "w.h5l", "w") as f:
        d = f.create_dataset("t", shape=(64,), dtype=dt, chunks=(64,), **kw)

        def writer(name, base):
            for k in range(32):
                d[name, 2 * k:2 * k + 2] = np.array([base + k, base + k])

        threads = [threading.Thread(target=writer, args=(n, b))
                   for n, b in (("a", 1000), ("b", 2000), ("c", 3000))]
        for th in threads:
            th.start()
        for th in threads:
            th.join()
        got = d[...]
        want = np.repeat(np.arange(32), 2)
        for n, b in (("a", 1000), ("b", 2000), ("c", 3000)):
            np.testing.assert_array_equal(got[n], want + b, err_msg=n)


def test_an_edit_keeps_the_nulls_inside_struct_members(tmp_path):
    """Nulls of a struct member's own members, and of the struct as a
    whole, stay through writes of other members and rows; what a write
    reaches holds a value."""
    st = pa.struct([("a", pa.int16()), ("b", pa.float32()),
                    ("c", pa.struct([("u", pa.int8()), ("v", pa.float64())]))])
    s = pa.array([{"a": 1, "b": None, "c": {"u": None, "v": 1.0}},
                  None,
                  {"a": None, "b": 2.5, "c": None},
                  {"a": 4, "b": 4.5, "c": {"u": 4, "v": None}}], st)
    t = pa.table({"x": pa.array([1, 2, 3, 4], pa.int32()), "s": s})
    with h5lake.File(tmp_path / "n.h5l", "w") as f:
        d = f.create_dataset("t", data=t, chunks=(4,))
        assert d.to_arrow().to_pylist() == t.to_pylist()
        d["x", 3] = 40
        want = t.to_pylist()
        want[3]["x"] = 40
        assert d.to_arrow().to_pylist() == want
        d[0] = (9, (9, 9.5, (9, 9.0)))              # row 0 whole: no nulls left in it
        want[0] = {"x": 9, "s": {"a": 9, "b": 9.5, "c": {"u": 9, "v": 9.0}}}
        assert d.to_arrow().to_pylist() == want
        d[[2]] = d[[2]]                             # a point write of row 2 as read
        want[2] = {"x": 3, "s": {"a": 0, "b": 2.5, "c": {"u": 0, "v": 0.0}}}
        assert d.to_arrow().to_pylist() == want
        assert d.to_arrow().column("s").to_pylist()[1] is None


@pytest.mark.parametrize("text", [False, True])
def test_an_edit_keeps_the_nulls_of_array_items(tmp_path, text):
    """The items of an array member hold their own nulls; a write of
    another member keeps them, a write of the array replaces them (also in
    a table whose rows are written whole, with a text member)."""
    cols = {"x": pa.array([1, 2, 3, 4], pa.int32()),
            "l": pa.array([[1, None, 3], None, [None, None, 6], [10, None, 12]],
                          pa.list_(pa.int32(), 3))}
    if text:
        cols["s"] = pa.array(["a", None, "c", "d"])
    t = pa.table(cols)
    with h5lake.File(tmp_path / "l.h5l", "w") as f:
        d = f.create_dataset("t", data=t, chunks=(4,))
        d["x", 0] = 7
        want = t.to_pylist()
        want[0]["x"] = 7
        assert d.to_arrow().to_pylist() == want
        # (Only the last row's items hold a null: kept too.)
        d["l", 2] = np.array([4, 5, 6], "i4")
        d["x", 1] = 8
        want[2]["l"], want[1]["x"] = [4, 5, 6], 8
        assert d.to_arrow().to_pylist() == want


def test_a_table_with_lists_of_lists_and_text_reads_and_keeps_its_nulls(tmp_path):
    """Arrays of arrays in a table whose rows are records (a text member):
    read as numpy arrays of the whole shape, and their items' nulls kept
    through an edit of another member."""
    ll = pa.array([[[1, None], [None, 4]], [[5, 6], [7, 8]], None, [[None, None], [1, 1]]],
                  pa.list_(pa.list_(pa.int8(), 2), 2))
    t = pa.table({"x": pa.array([1, 2, 3, 4], pa.int32()), "ll": ll,
                  "s": pa.array(["a", None, "c", "d"])})
    with h5lake.File(tmp_path / "ll.h5l", "w") as f:
        d = f.create_dataset("t", data=t, chunks=(4,))
        assert d[()]["ll"].tolist() == [[[1, 0], [0, 4]], [[5, 6], [7, 8]], [[0, 0], [0, 0]],
                                         [[0, 0], [1, 1]]]
        d["x", 1] = 20
        want = t.to_pylist()
        want[1]["x"] = 20
        assert d.to_arrow().to_pylist() == want


def test_a_copied_table_keeps_its_nulls_and_diff_compares_them(tmp_path):
    import subprocess
    import sys
    t = pa.table({"x": pa.array([1, None, 3], pa.int32()), "s": pa.array(["a", None, "c"])})
    src = tmp_path / "src.h5l"
    with h5lake.File(src, "w") as f:
        f.create_dataset("t", data=t)
        f.copy("t", "py_copy")
    r = subprocess.run([sys.executable, "-m", "h5lake", "cp", f"{src}/t", f"{src}/cli_copy"],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    with h5lake.File(src, "a") as f:
        for name in ("py_copy", "cli_copy"):
            assert f[name].is_columnar
            assert f[name].to_arrow().to_pydict() == t.to_pydict(), name
        f["t"][1] = (0, b"z")                 # the nulls of row 1: x stays one, s is one no more
    r = subprocess.run([sys.executable, "-m", "h5lake", "diff", f"{src}/t", f"{src}/py_copy"],
                       capture_output=True, text=True)
    assert r.returncode == 1 and "in nulls" in r.stdout, r.stdout + r.stderr


def test_an_edit_of_a_table_with_text_keeps_the_other_rows_nulls(tmp_path):
    t = pa.table({"x": pa.array([1, None, 3, None], pa.int32()),
                  "s": pa.array([None, "b", None, "d"])})
    with h5lake.File(tmp_path / "v.h5l", "w") as f:
        d = f.create_dataset("t", data=t, chunks=(4,))
        d[1] = (5, "B")
        assert d.to_arrow().to_pydict() == {"x": [1, 5, 3, None], "s": [None, "B", None, "d"]}
        d["s", 3] = "D"                 # one member of a row: its other member's null stays
        d["x", 0] = 7
        assert d.to_arrow().to_pydict() == {"x": [7, 5, 3, None], "s": [None, "B", None, "D"]}


def test_writing_the_fill_value_into_a_null_of_a_table_with_text_writes_it(tmp_path):
    """A value written that equals the fill value is still a value: the
    member named (or every member, for whole rows) is no longer null."""
    t = pa.table({"x": pa.array([None, None, None, 4], pa.int32()),
                  "s": pa.array([None, None, "c", None])})
    with h5lake.File(tmp_path / "v.h5l", "w") as f:
        d = f.create_dataset("t", data=t, chunks=(4,))
        d["x", 0] = 0                   # the fill value, by member
        d[1] = (0, "")                  # the fill value, whole row
        d[np.array([False, False, False, True])] = (4, "")   # points, whole row
        assert d.to_arrow().to_pydict() == {"x": [0, 0, None, 4], "s": [None, "", "c", ""]}


def test_a_grown_table_shows_other_tools_every_row(tmp_path):
    """The chunk that was a table's last holds the rows it had; grown, it is
    stored again with the new rows (as the fill value), nulls kept, so that
    DuckDB counts the rows h5lake reads."""
    duckdb = pytest.importorskip("duckdb")
    t = pa.table({"a": pa.array([1, None, 3, 4, 5, None], pa.int32()),
                  "s": pa.array(["x", None, "z", "w", None, "v"])})
    with h5lake.File(tmp_path / "g.h5l", "w") as f:
        d = f.create_dataset("t", data=t, chunks=(4,), maxshape=(None,))
        d.resize((10,))
        d[9] = (5, "q")
        files = d.parquet_files()
        got = duckdb.sql(f"SELECT count(*), count(a), count(*) FILTER (WHERE a = 0) "
                         f"FROM read_parquet({files})").fetchall()
        assert got == [(10, 8, 3)], got
        assert d.to_arrow().column("a").to_pylist() == [1, None, 3, 4, 5, None, 0, 0, 0, 5]


def test_two_columns_of_one_name_are_named_as_such(tmp_path):
    import subprocess
    import sys
    t = pa.Table.from_arrays([pa.array([1, 2]), pa.array([3, 4])], names=["a", "a"])
    with h5lake.File(tmp_path / "d.h5l", "w") as f:
        with pytest.raises(ValueError, match='two columns are named "a"'):
            f.create_dataset("t", data=t)
        assert "t" not in f
    pq.write_table(t, tmp_path / "dup.parquet")
    r = subprocess.run([sys.executable, "-m", "h5lake", "load", str(tmp_path / "dup.parquet"),
                        str(tmp_path / "dup.h5l")], capture_output=True, text=True)
    assert r.returncode == 2 and "two columns are named" in r.stderr and "corrupt" not in r.stderr
    assert not (tmp_path / "dup.h5l").exists()


# --- what a user audit of tables found (each failed before its fix) ---

@pytest.mark.parametrize("layout", [None, "columnar"])
def test_structured_write_converts_members_by_name(tmp_path, layout):
    """As HDF5 converts compounds: members the value lacks keep what they
    hold; a value with none of the members is refused, nothing written."""
    import h5py
    dt = np.dtype([("x", "<f8"), ("y", "<i4")])
    start = np.array([(1.5, 1), (2.5, 2), (3.5, 3)], dt)
    kw = {} if layout is None else {"layout": layout}
    with h5lake.File(tmp_path / "a.h5l", "w") as f, h5py.File(tmp_path / "a.h5", "w") as g:
        d = f.create_dataset("t", data=start, chunks=(2,), **kw)
        e = g.create_dataset("t", data=start, chunks=(2,))
        for x in (d, e):
            x[2] = np.array((7,), dtype=[("x", "<i8")])
            x[0:2] = np.array([(9,), (8,)], dtype=[("y", "<i8")])
        assert d[...].tolist() == e[...].tolist() == [(1.5, 9), (2.5, 8), (7.0, 3)]
        with pytest.raises(ValueError):
            e[0:2] = np.array([(7, 8)] * 2, dtype=[("X", "<i8"), ("Y", "<i4")])
        with pytest.raises(ValueError, match="nothing written"):
            d[0:2] = np.array([(7, 8)] * 2, dtype=[("X", "<i8"), ("Y", "<i4")])
        assert d[...].tolist() == e[...].tolist()


def test_append_of_nulls_to_a_row_table_writes_the_fill_value(tmp_path):
    dt = np.dtype([("i", "<i8"), ("s", "S4"), ("f", "<f4")])
    fill = np.array((-1, b"fill", 9.5), dt)
    with h5lake.File(tmp_path / "a.h5l", "w") as f:
        d = f.create_dataset("t", shape=(0,), maxshape=(None,), dtype=dt, chunks=(4,),
                             fillvalue=fill)
        d.append(pa.table({"i": pa.array([None, 5], pa.int64()),
                           "s": pa.array([None, b"ab"], pa.binary()),
                           "f": pa.array([None, 2.0], pa.float32())}))
        assert d[...].tolist() == [(-1, b"fill", 9.5), (5, b"ab", 2.0)]


def test_to_arrow_of_single_rows_keeps_nulls(tmp_path):
    with h5lake.File(tmp_path / "a.h5l", "w") as f:
        d = f.create_dataset("t", data=pa.table({"i": pa.array([1, None, 3]),
                                                 "s": pa.array(["a", None, "c"])}))
        none = [{"i": None, "s": None}]
        assert d.to_arrow(1).to_pylist() == none
        assert d.to_arrow(np.int64(-2)).to_pylist() == none
        assert d.to_arrow([-2]).to_pylist() == none
        assert d.to_arrow([0, -2]).to_pylist() == [{"i": 1, "s": "a"}] + none
        assert d.to_arrow(-1).to_pylist() == [{"i": 3, "s": "c"}]
        with pytest.raises(IndexError):
            d.to_arrow(3)
        g = f.require_group("g")
        g["t"] = d
        assert f["g"].to_arrow().column("t").to_pylist()[1] == {"i": None, "s": None}


def test_stats_keep_null_counts_after_a_write_by_member(tmp_path):
    with h5lake.File(tmp_path / "a.h5l", "w") as f:
        d = f.create_dataset("t", data=pa.table({"i": pa.array([None, 2, 3, 4])}),
                             chunks=(4,), maxshape=(None,))
        assert d.stats(field="i")["null_count"] == 1
        d["i", 3] = 40
        assert d.stats(field="i")["null_count"] == 1
        assert d.to_arrow().column("i").to_pylist() == [None, 2, 3, 40]
        e = f.create_dataset("u", shape=(0,), maxshape=(None,), chunks=(4,),
                             dtype=np.dtype([("i", "<i8")]), layout="columnar")
        e.append(pa.table({"i": pa.array([None, 2, 3], pa.int64())}))
        e.resize((10,))
        assert e.stats(field="i")["null_count"] == 1


def test_structured_write_converts_nested_members_by_name(tmp_path):
    import h5py
    inner = np.dtype([("p", "i4"), ("q", "f8")])
    dt = np.dtype([("a", "i4"), ("b", "f8"), ("c", inner)])
    start = np.array([(1, .5, (10, 7.)), (2, 1.5, (20, 8.))], dt)
    values = [np.array([(5, (7.5,)), (6, (8.5,))], dtype=[("a", "i4"), ("c", [("q", "f4")])]),
              np.array([(9, 1.0, (30,))], dtype=[("a", "i4"), ("b", "f8"), ("c", [("p", "i8")])])]
    for layout in (None, "columnar"):
        kw = {} if layout is None else {"layout": layout}
        with h5lake.File(tmp_path / "a.h5l", "w") as f, h5py.File(tmp_path / "a.h5", "w") as g:
            d = f.create_dataset("t", data=start, chunks=(2,), **kw)
            e = g.create_dataset("t", data=start, chunks=(2,))
            for x in (d, e):
                x[0:2] = values[0]
                x[1:2] = values[1]
            assert d[...].tolist() == e[...].tolist() == [(5, .5, (10, 7.5)), (9, 1.0, (30, 8.5))]
            with pytest.raises(TypeError):
                e[0:2] = np.array([(7,), (8,), (9,)], dtype=[("a", "i2")])
            with pytest.raises(TypeError):
                d[0:2] = np.array([(7,), (8,), (9,)], dtype=[("a", "i2")])


def test_appending_a_table_is_all_or_nothing(tmp_path):
    with h5lake.File(tmp_path / "a.h5l", "w") as f:
        e = f.create_dataset("u", data=pa.table({"i": pa.array([1], pa.int8())}), chunks=(2,),
                             maxshape=(None,))
        s = pa.schema([("i", pa.int64())])
        many = pa.Table.from_batches([pa.record_batch([pa.array([5, 6, 7])], schema=s),
                                      pa.record_batch([pa.array([1000])], schema=s)])
        with pytest.raises(ValueError):
            e.append(many)
        assert e[...]["i"].tolist() == [1]
        g = f.create_dataset("g", data=pa.table({"i": pa.array([1], pa.int8())}), chunks=(2,),
                             maxshape=(4,))
        with pytest.raises(ValueError, match="maximum 4"):
            g.append(pa.table({"i": pa.array([2, 3, 4, 5], pa.int8())}))
        assert g[...]["i"].tolist() == [1]
        # A stream that outgrows the extent says what it appended.
        t = pa.schema([("i", pa.int8())])
        stream = pa.RecordBatchReader.from_batches(
            t, (pa.record_batch([pa.array([k, k, k], pa.int8())], schema=t) for k in range(4)))
        with pytest.raises(ValueError, match="maximum 4.*the 3 rows of the stream"):
            g.append(stream)


@pytest.mark.parametrize("layout", [None, "columnar"])
def test_a_failed_append_leaves_the_table_as_it_was(tmp_path, layout):
    dt = np.dtype([("i", "i4"), ("s", h5lake.string_dtype())])
    kw = {} if layout is None else {"layout": layout}
    with h5lake.File(tmp_path / "a.h5l", "w") as f:
        d = f.create_dataset("t", data=np.array([(1, "a")], dt), maxshape=(None,),
                             chunks=(2,), **kw)
        with pytest.raises(TypeError):
            d.append(np.array([(2, "b"), (3, None)], dt))
        assert d.shape == (1,)
        assert d[...].tolist() == [(1, b"a")]


def test_a_stream_failing_part_way_says_what_it_appended(tmp_path):
    s = pa.schema([("i", pa.int32())])

    def batches():
        yield pa.record_batch([pa.array([4, 5, 6], pa.int32())], schema=s)
        yield pa.record_batch([pa.array([7], pa.int32())], schema=s)
        raise RuntimeError("source failed")
    with h5lake.File(tmp_path / "a.h5l", "w") as f:
        d = f.create_dataset("t", data=pa.table({"i": pa.array([1], pa.int32())}),
                             chunks=(2,), maxshape=(None,))
        with pytest.raises(ValueError, match="(?s)source failed.*the 3 rows of the stream"):
            d.append(pa.RecordBatchReader.from_batches(s, batches()))
        assert d[...]["i"].tolist() == [1, 4, 5, 6]


@pytest.mark.parametrize("layout", [None, "columnar"])
def test_nan_of_a_pandas_frame_stays_nan(tmp_path, layout):
    """pyarrow makes a float column's NaN a null, which HDF5 reads and
    statistics showed as the fill value (0.0): mean 1.33 where pandas says
    2.0. NaN stays NaN; a null of pandas' nullable types stays a null."""
    pd = pytest.importorskip("pandas")
    df = pd.DataFrame({"x": [1.0, np.nan, 3.0], "k": [1, 2, 3],
                       "y": pd.array([0.5, None, 2.0], dtype="Float64")})
    kw = {"layout": layout} if layout else {}
    with h5lake.File(tmp_path / "p.h5l", "w") as f:
        t = f.create_dataset("t", data=df, maxshape=(None,), **kw)
        t.append(df)
        x = t["x"]
        assert np.isnan(x[[1, 4]]).all() and x[[0, 2, 3, 5]].tolist() == [1, 3, 1, 3]
        assert np.isnan(t.max("x")) and t.count("x") == 4      # as numpy
        assert t.to_arrow()["y"].null_count == 2
        back = t.to_pandas()
        assert back["x"].isna().tolist() == [False, True, False] * 2
    h5lake.get(tmp_path / "p.h5l", tmp_path / "p.h5")
    with h5py.File(tmp_path / "p.h5") as h:
        assert np.isnan(h["t"]["x"][1])


def test_a_pandas_frame_never_stores_its_index(tmp_path):
    pd = pytest.importorskip("pandas")
    df = pd.DataFrame({"a": [1, 5, 3, 4], "b": [.1, .2, .3, .4]})
    with h5lake.File(tmp_path / "a.h5l", "w") as f:
        d = f.create_dataset("t", data=df, maxshape=(None,))
        assert f.create_dataset("u", data=df.sort_values("a")).dtype.names == ("a", "b")
        d.append(df.sort_values("a"))
        assert d["a"].tolist() == [1, 5, 3, 4, 1, 3, 4, 5]


def test_a_nul_in_loaded_bytes_does_not_block_writes_of_other_members(tmp_path):
    with h5lake.File(tmp_path / "a.h5l", "w") as f:
        d = f.create_dataset("t", data=pa.table({"i": pa.array([1, 2], pa.int8()),
                                                 "h": pa.array([b"\x00\x01", b"ok"], pa.binary())}))
        d["i"] = np.zeros(2, "i1")
        assert d.to_arrow().to_pylist() == [{"i": 0, "h": b"\x00\x01"}, {"i": 0, "h": b"ok"}]
        with pytest.raises(ValueError, match="NUL"):
            d["h", 1] = b"a\x00b"


def test_booleans_are_parquet_booleans_for_other_tools(tmp_path):
    duckdb = pytest.importorskip("duckdb")
    pl = pytest.importorskip("polars")
    with h5lake.File(tmp_path / "a.h5l", "w") as f:
        d = f.create_dataset("t", data=pa.table({"b": [True, False, None, True], "i": [1, 2, 3, 4]}))
        e = f.create_dataset("u", data=np.array([(True, 1.5), (False, 2.5)],
                                                dtype=[("b", "?"), ("x", "f8")]),
                             layout="columnar", chunks=(2,), maxshape=(None,))
        files = d.parquet_files()
        assert pq.read_schema(files[0]).field("b").type == pa.bool_()
        assert duckdb.sql(f"SELECT typeof(b), count(*) FROM read_parquet({files}) WHERE b "
                          "GROUP BY 1").fetchall() == [("BOOLEAN", 2)]
        assert pl.scan_parquet(files).filter(pl.col("b")).collect()["i"].to_list() == [1, 4]
        assert pl.read_parquet(e.parquet_files())["b"].to_list() == [True, False]
        assert d.to_arrow().column("b").to_pylist() == [True, False, None, True]
        assert d["b"].tolist() == [True, False, False, True]
        # Chunks written before booleans were stored so (int8) still read.
        old = pa.table({"b": pa.array([0, 1], pa.int8()), "x": [7.0, 8.0]})
        pq.write_table(old, e.parquet_files()[0], use_dictionary=False)
        e.append(np.array([(True, 9.0)], e.dtype))
        assert e[...].tolist() == [(False, 7.0), (True, 8.0), (True, 9.0)]
        assert e.to_arrow().column("b").to_pylist() == [False, True, True]
        assert e.read_where("b")["x"].tolist() == [8.0, 9.0]


def test_fixed_length_strings_keep_their_inner_nuls_in_arrow(tmp_path):
    # From an audit: pyarrow's conversion of NumPy's fixed-length strings
    # ends each value at its first NUL; h5py and NumPy keep those inside
    # (and drop trailing ones).
    a = np.array([(b"x\x00y", 1), (b"ab", 2), (b"", 3), (b"\x00\x00z", 4)],
                 [("s", "S5"), ("i", "i4")])
    want = [b"x\x00y", b"ab", b"", b"\x00\x00z"]
    with h5lake.File(tmp_path / "r.h5l", "w") as f:
        r = f.create_dataset("row", data=a, chunks=(2,))
        assert r.to_arrow()["s"].to_pylist() == want
        assert r.to_pandas()["s"].tolist() == want
        plain = f.create_dataset("plain", data=a["s"])
        assert plain.to_arrow()["value"].to_pylist() == want
        b = np.zeros(200_000, a.dtype)
        b["s"] = b"x\x00y"
        c = f.create_dataset("col", data=b, chunks=(100_000,), layout="columnar")
        assert c.to_arrow(np.array([0, 150_000]))["s"].to_pylist() == [b"x\x00y"] * 2


def test_integers_with_nulls_reach_pandas_exact(tmp_path):
    # From an audit: to_pandas() made integer columns holding nulls float64
    # (2**53 + 1 came back as 2**53), booleans objects.
    pd = pytest.importorskip("pandas")
    df = pd.DataFrame({"a": pd.array([2**53 + 1, None, 2**63 - 1], dtype="Int64"),
                       "b": pd.array([True, None, False], dtype="boolean"),
                       "c": np.array([1, 2, 3], dtype="u2")})
    with h5lake.File(tmp_path / "c.h5l", "w") as f:
        back = f.create_dataset("t", data=df).to_pandas()
    assert back["a"].dtype == "Int64" and back["a"].tolist()[::2] == [2**53 + 1, 2**63 - 1]
    assert back["a"].isna().tolist() == [False, True, False]
    assert back["b"].dtype == "boolean" and back["b"].isna().tolist() == [False, True, False]
    assert back["c"].dtype == np.dtype("u2")


@pytest.mark.parametrize("layout", ["columnar", None])
def test_an_appended_float_past_a_narrower_members_range_is_refused(tmp_path, layout):
    # From an audit: 1e300 appended to a float32 column was stored as
    # infinity, where 300 appended to an int8 one is refused.
    with h5lake.File(tmp_path / "f.h5l", "w") as f:
        d = f.create_dataset("t", shape=(1,), maxshape=(None,), chunks=(4,),
                             dtype=[("x", "<f4"), ("h", "<f2")], layout=layout)
        d[0] = (1.0, 1.0)
        for bad in ({"x": [2.0, 1e300], "h": [1.0, 1.0]}, {"x": [2.0, 3.0], "h": [1.0, 7e4]}):
            with pytest.raises(ValueError, match="range"):
                d.append(pa.table(bad))
        assert d.shape == (1,)
        d.append(pa.table({"x": [2.0, float("inf")], "h": [1.0, float("nan")]}))
        assert d.shape == (3,) and np.isinf(d[2]["x"]) and np.isnan(d[2]["h"])


@pytest.mark.parametrize("layout", [None, "columnar"])
def test_every_type_converts_as_the_columnar_layout_keeps_it(tmp_path, layout):
    """to_arrow() of the row layout gives the Arrow types a columnar table
    keeps (complex as (r, i) structs, opaque bytes, sequences of their own
    item type); of dtypes no table holds, a table all the same."""
    pa = pytest.importorskip("pyarrow")
    cv = np.dtype([("k", "i4"), ("z", "c16"), ("v", h5lake.vlen_dtype("f4")), ("o", "V3")])
    rows = np.zeros(3, cv)
    rows["k"] = [1, 2, 3]
    rows["z"] = [1 + 2j, -3j, 0]
    rows["v"] = [np.array([1.5], "f4"), np.array([], "f4"), np.array([2, 3], "f4")]
    rows["o"] = [b"abc", b"\0\1\2", b"xyz"]
    with h5lake.File(tmp_path / "t.h5l", "w") as f:
        t = f.create_dataset("t", data=rows, chunks=(2,), layout=layout).to_arrow()
        assert t.schema.field("z").type == pa.struct([("r", pa.float64()), ("i", pa.float64())])
        assert t.schema.field("v").type.value_type == pa.float32()
        assert t.schema.field("o").type == pa.binary(3)
        assert t.column("z").to_pylist() == [{"r": 1, "i": 2}, {"r": 0, "i": -3}, {"r": 0, "i": 0}]
        assert t.column("v").to_pylist() == [[1.5], [], [2, 3]]
        assert t.column("o").to_pylist() == [b"abc", b"\0\1\2", b"xyz"]
        if layout is not None:
            return
        f["c8"] = np.array([1 + 2j], "c8")
        assert f["c8"].to_arrow().column("value").to_pylist() == [{"r": 1, "i": 2}]
        for t in ("i4", "i2", "u1", "f4"):
            d = f.create_dataset("v" + t, (2,), h5lake.vlen_dtype(t))
            d[0] = [1, 2]
            got = d.to_arrow().column("value")
            assert got.type.value_type == pa.from_numpy_dtype(np.dtype(t)), t
            assert got.to_pylist() == [[1, 2], []]
        f["ld"] = np.array([1.5], np.longdouble)
        assert f["ld"].to_arrow().column("value").to_pylist() == [np.array(1.5, np.longdouble).tobytes()]
        f["refs"] = np.array([f["c8"].ref, h5lake.Reference()], dtype=h5lake.ref_dtype)
        refs = f["refs"].to_arrow().column("value").to_pylist()
        assert refs[1] is None and f[h5lake.Reference._from_stored(refs[0])] == f["c8"]
        f["empty"] = h5lake.Empty("f4")
        e = f["empty"].to_arrow()
        assert e.num_rows == 0 and e.schema.field("value").type == pa.float32()


@pytest.mark.parametrize("layout", [None, "columnar"])
def test_append_matches_columns_by_name_in_either_layout(tmp_path, layout):
    pd = pytest.importorskip("pandas")
    pa = pytest.importorskip("pyarrow")
    dt = np.dtype([("i", "i4"), ("f", "f8")])
    with h5lake.File(tmp_path / "t.h5l", "w") as f:
        d = f.create_dataset("t", (0,), dt, maxshape=(None,), chunks=(4,), layout=layout)
        d.append(pd.DataFrame({"f": [1.5], "i": [3]}))
        d.append(pa.table({"f": [2.5], "i": pa.array([4], pa.int32())}).to_reader())
        assert d[()].tolist() == [(3, 1.5), (4, 2.5)]
        with pytest.raises(ValueError):
            d.append(pd.DataFrame({"f": [1.5], "j": [3]}))
        assert d.shape == (2,)
