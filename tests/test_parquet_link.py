"""Parquet files linked, not copied (issue 20): `h5lake load --link
data.parquet STORE` makes a 1-D compound dataset whose rows are read from
the files' row groups where they lie (local files and s3:// objects). The
linked dataset must read exactly as a copy-loaded one does, selection by
selection; the store holds metadata only; the sources stay untouched."""

import datetime
import hashlib
import os
import subprocess
import sys

import numpy as np
import pytest

import h5lake

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")


def sample(n, start=0):
    ids = np.arange(start, start + n)
    return pa.table({
        "i4": pa.array(ids.astype("i4")),
        "u16": pa.array((ids % 60000).astype("u2")),
        "f8": pa.array(ids * 0.25),
        "f4n": pa.array([None if i % 7 == 0 else float(i) for i in ids], pa.float32()),
        "ok": pa.array(ids % 3 == 0),
        "name": pa.array([None if i % 11 == 0 else "n%d" % i for i in ids]),
        "code": pa.array([b"c%03d" % (i % 1000) for i in ids], pa.binary(4)),
        "when": pa.array([datetime.datetime(2024, 1, 1) + datetime.timedelta(seconds=int(i))
                          for i in ids], pa.timestamp("ms")),
        "pos": pa.array([{"x": float(i), "y": -float(i)} for i in ids]),
        "hits": pa.array([list(range(i % 4)) for i in ids], pa.list_(pa.int32())),
        "cat": pa.array([("red", "green", "blue")[i % 3] for i in ids]).dictionary_encode(),
    })


def digest(path):
    return hashlib.sha256(open(path, "rb").read()).hexdigest(), os.stat(path).st_mtime_ns


def same(a, b):
    """Structured arrays equal member by member (variable-length members
    element by element)."""
    assert a.dtype == b.dtype and a.shape == b.shape
    for name in a.dtype.names:
        x, y = a[name], b[name]
        if x.dtype.names:
            same(x, y)
        elif x.dtype.hasobject:
            assert all(np.array_equal(u, v) for u, v in zip(x.ravel(), y.ravel())), name
        else:
            np.testing.assert_array_equal(x, y, err_msg=name)
    return True


def store_bytes(path):
    return sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(path) for f in fs)


@pytest.fixture
def files(tmp_path):
    """Three files of one schema: row groups of 500 rows, each file's last
    one shorter, so that chunks of 500 rows straddle row groups."""
    src = tmp_path / "src"
    src.mkdir()
    start = 0
    tables = []
    for i, n in enumerate((1200, 500, 777)):
        t = sample(n, start)
        pq.write_table(t, src / f"part-{i}.parquet", row_group_size=500)
        tables.append(t)
        start += n
    return src, pa.concat_tables(tables)


def test_linked_reads_equal_the_copy(tmp_path, files):
    src, table = files
    before = {p: digest(src / p) for p in os.listdir(src)}
    report = h5lake.load(src, tmp_path / "link.h5l", link=True, name="events")
    assert report["rows"] == table.num_rows and report["linked_datasets"] == 1
    h5lake.load(src, tmp_path / "copy.h5l", name="events", chunks=500)
    # metadata only: far smaller than the data
    assert store_bytes(tmp_path / "link.h5l") < 20_000 < store_bytes(tmp_path / "copy.h5l")
    with h5lake.File(tmp_path / "link.h5l", "r") as fl, h5lake.File(tmp_path / "copy.h5l", "r") as fc:
        dl, dc = fl["events"], fc["events"]
        assert dl.shape == dc.shape == (table.num_rows,)
        assert dl.dtype == dc.dtype
        assert dl.chunks == (500,)
        assert dl.attrs["arrow_types"] == dc.attrs["arrow_types"]
        for sel in (np.s_[...], np.s_[0:10], np.s_[490:1210], np.s_[1150:1750:3],
                    np.s_[-5:], np.s_[[3, 700, 1199, 1200, 2476]], np.s_[2000:2000]):
            assert same(dl[sel], dc[sel]), sel
        for fields in (["f8"], ["i4", "name"], ["pos", "code"]):
            a, b = dl.fields(fields)[100:2400], dc.fields(fields)[100:2400]
            if a.dtype.names:
                assert same(a, b)
            else:
                assert list(a) == list(b)
        # Arrow gives the files' values back, nulls included, types noted
        got = dl.to_arrow()
        assert got.column("f4n").to_pylist() == table.column("f4n").to_pylist()
        assert got.column("name").to_pylist() == table.column("name").to_pylist()
        assert got.column("when").to_pylist() == table.column("when").to_pylist()
        assert got.column("hits").to_pylist() == table.column("hits").to_pylist()
        part = dl.to_arrow(np.s_[480:1730], fields=["i4", "f4n"])
        assert part.column("i4").to_pylist() == table.column("i4").to_pylist()[480:1730]
        assert part.column("f4n").to_pylist() == table.column("f4n").to_pylist()[480:1730]
        assert dl.to_pandas(np.s_[:20])["i4"].tolist() == list(range(20))
        # the table's data are the source files themselves
        assert [os.path.basename(p) for p in dl.parquet_files()] == \
            ["part-0.parquet", "part-1.parquet", "part-2.parquet"]
    assert {p: digest(src / p) for p in os.listdir(src)} == before


def test_other_tools_read_the_linked_files(tmp_path, files):
    duckdb = pytest.importorskip("duckdb")
    src, table = files
    h5lake.load(sorted(src.glob("*.parquet")), tmp_path / "t.h5l", link=True, name="t")
    with h5lake.File(tmp_path / "t.h5l", "r") as f:
        d = f["t"]
        got = duckdb.sql(f"SELECT sum(i4) AS s FROM read_parquet({d.parquet_files()!r})").fetchall()[0][0]
        assert got == int(d.fields("i4")[...].sum())


def test_linked_is_read_only(tmp_path, files):
    src, table = files
    h5lake.load(src, tmp_path / "t.h5l", link=True, name="t")
    with h5lake.File(tmp_path / "t.h5l", "a") as f:
        d = f["t"]
        before = d[:5]
        with pytest.raises(OSError, match="read-only"):
            d[0:2] = d[2:4]
        with pytest.raises((TypeError, OSError)):
            d.resize((10,))
        with pytest.raises(OSError, match="read-only"):
            d.append(table.slice(0, 3))
        assert same(d[:5], before)
        d.attrs["note"] = "attributes are h5lake's own"
    with h5lake.File(tmp_path / "t.h5l", "r") as f:
        assert f["t"].attrs["note"] == "attributes are h5lake's own"


def test_a_changed_source_is_named(tmp_path, files):
    src, _ = files
    h5lake.load(src / "part-1.parquet", tmp_path / "t.h5l", link=True)
    pq.write_table(sample(10), src / "part-1.parquet")
    with h5lake.File(tmp_path / "t.h5l", "r") as f:
        with pytest.raises(OSError, match="part-1.parquet.*(replaced|changed)"):
            f["part-1"][...]
    os.remove(src / "part-1.parquet")
    with h5lake.File(tmp_path / "t.h5l", "r") as f:
        with pytest.raises((FileNotFoundError, KeyError, OSError), match="part-1.parquet"):
            f["part-1"][...]


def _rows(n, start, note):
    """A table of ``n`` rows whose first ``note`` is ``note`` characters long."""
    return pa.table({"x": pa.array(range(start, start + n), pa.int64()),
                     "note": pa.array(["p" * note] + [""] * (n - 1))})


def _parquet_bytes(table):
    import io
    buf = io.BytesIO()
    # (Plain pages, no statistics: the file grows by a byte a character.)
    pq.write_table(table, buf, row_group_size=4, compression="none", use_dictionary=False,
                   write_statistics=False)
    return buf.getvalue()


def _linked_with_statistics(tmp_path, note):
    """A Parquet file of rows 0..9 linked as dataset ``one`` of a store,
    with a statistics record of its chunk kept: (file, store)."""
    src = tmp_path / "one.parquet"
    src.write_bytes(_parquet_bytes(_rows(10, 0, note)))
    store = tmp_path / "one.h5l"
    h5lake.load(src, store, link=True)
    with h5lake.File(store, "a") as f:
        assert f["one"].max("x") == 9
    return src, store


@pytest.mark.parametrize("rows", [7, 13])
def test_a_source_replaced_by_one_of_the_same_size_is_named(tmp_path, rows):
    """A linked file replaced by one of the same length holding other rows
    was read as if it held the linked ones (13 rows: the first 10 read, no
    error) or made max() panic (7 rows: a PanicException, which `except
    Exception` does not catch); both are refused as replaced."""
    src, store = _linked_with_statistics(tmp_path, 2000)
    size = os.path.getsize(src)
    data = next(d for d in (_parquet_bytes(_rows(rows, 1000, k)) for k in range(4000))
                if len(d) >= size)
    assert len(data) == size
    src.write_bytes(data)
    with h5lake.File(store, "r") as f:
        d = f["one"]
        for what in (lambda: d[...], lambda: d.max("x"), lambda: d.read_where("x > 5"),
                     lambda: d.to_arrow()):
            with pytest.raises(OSError, match="one.parquet.*(replaced|changed)"):
                what()


def test_statistics_of_a_source_rewritten_keeping_its_length_and_time_are_not_used(tmp_path):
    """A file rewritten with its length, row groups and modification time
    kept (cp -p, rsync -t) left max() and pruned queries answering from
    the old values (max 9 for rows 300..309, read_where("x > 200") empty)."""
    src, store = _linked_with_statistics(tmp_path, 100)
    before = os.stat(src)
    src.write_bytes(_parquet_bytes(_rows(10, 300, 100)))
    os.utime(src, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert os.path.getsize(src) == before.st_size
    with h5lake.File(store, "r") as f:
        d = f["one"]
        assert d.max("x") == 309 and d.sum("x") == sum(range(300, 310))
        assert d.read_where("x > 200")["x"].tolist() == list(range(300, 310))


def test_bad_inputs_write_nothing(tmp_path, files):
    src, _ = files
    (tmp_path / "junk.parquet").write_bytes(b"PAR1 this is not parquet at all PAR1")
    with pytest.raises(ValueError, match="junk.parquet"):
        h5lake.load(tmp_path / "junk.parquet", tmp_path / "a.h5l", link=True)
    assert not (tmp_path / "a.h5l").exists()
    pq.write_table(pa.table({"other": [1, 2]}), tmp_path / "other.parquet")
    with pytest.raises(ValueError, match="another schema"):
        h5lake.load([src / "part-0.parquet", tmp_path / "other.parquet"], tmp_path / "b.h5l", link=True)
    assert not (tmp_path / "b.h5l").exists()
    pq.write_table(pa.table({"m": pa.array([[("k", 1)]], pa.map_(pa.string(), pa.int64()))}),
                   tmp_path / "map.parquet")
    with pytest.raises(ValueError, match="'?m'?"):
        h5lake.load(tmp_path / "map.parquet", tmp_path / "c.h5l", link=True)
    assert not (tmp_path / "c.h5l").exists()
    with pytest.raises(ValueError, match="compression"):
        h5lake.load(src, tmp_path / "d.h5l", link=True, compression="zstd")


def test_an_empty_parquet_file_links_and_copies(tmp_path):
    pq.write_table(pa.table({"x": pa.array([], pa.float64()), "n": pa.array([], pa.int32())}),
                   tmp_path / "empty.parquet")
    for link in (True, False):
        dest = tmp_path / f"e{int(link)}.h5l"
        h5lake.load(tmp_path / "empty.parquet", dest, link=link)
        with h5lake.File(dest, "r") as f:
            d = f["empty"]
            assert d.shape == (0,) and d.dtype.names == ("x", "n")
            assert d.to_arrow().num_rows == 0


def test_cli_links(tmp_path, files):
    src, table = files
    r = subprocess.run([sys.executable, "-m", "h5lake", "load", "--link", "--name", "runs/all",
                        str(src / "part-*.parquet"), str(tmp_path / "t.h5l")],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert "linked 1 datasets" in r.stderr
    with h5lake.File(tmp_path / "t.h5l", "r") as f:
        assert f["runs/all"].fields("i4")[...].tolist() == table.column("i4").to_pylist()
    r = subprocess.run([sys.executable, "-m", "h5lake", "ls", "-v", str(tmp_path / "t.h5l") + "/runs"],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr


def test_s3_sources(tmp_path, files, s3_bucket, s3_root):
    import boto3
    src, table = files
    s3 = boto3.client("s3", endpoint_url=os.environ["AWS_ENDPOINT_URL"])
    prefix = s3_root.split("/", 3)[3]
    urls = []
    for name in sorted(os.listdir(src)):
        s3.upload_file(str(src / name), s3_bucket, f"{prefix}/src/{name}")
        urls.append(f"s3://{s3_bucket}/{prefix}/src/{name}")
    h5lake.load(urls, tmp_path / "t.h5l", link=True, name="t")
    h5lake.load(src, tmp_path / "copy.h5l", name="t")
    with h5lake.File(tmp_path / "t.h5l", "r") as f, h5lake.File(tmp_path / "copy.h5l", "r") as c:
        d = f["t"]
        assert d.parquet_files() == urls
        assert same(d[...], c["t"][...])
        assert d.fields(["f8"])[1000:1300].tolist() == c["t"].fields(["f8"])[1000:1300].tolist()
        assert d.to_arrow(fields=["name"]).column("name").to_pylist() == table.column("name").to_pylist()


def test_linked_decimals_and_dictionaries(tmp_path):
    """Decimal columns (plain and dictionary-encoded) read through a link
    as through a copy: unscaled integers in HDF5-shaped reads, decimals with
    their nulls from to_arrow."""
    import decimal
    vals = [None if i % 5 == 0 else decimal.Decimal(i * 7 - 300).scaleb(-2) for i in range(60)]
    t = pa.table({"price": pa.array(vals, pa.decimal128(9, 2)),
                  "code": pa.array([decimal.Decimal(i % 3).scaleb(-1) for i in range(60)],
                                   pa.decimal128(4, 1)).dictionary_encode()})
    pq.write_table(t, tmp_path / "d.parquet", row_group_size=25)
    h5lake.load(tmp_path / "d.parquet", tmp_path / "l.h5l", link=True)
    h5lake.load(tmp_path / "d.parquet", tmp_path / "c.h5l")
    with h5lake.File(tmp_path / "l.h5l", "r") as fl, h5lake.File(tmp_path / "c.h5l", "r") as fc:
        assert same(fl["d"][...], fc["d"][...])
        got = fl["d"].to_arrow()
        assert got.column("price").to_pylist() == vals
        assert got.column("price").type == pa.decimal128(9, 2)
        assert got.column("code").to_pylist() == t.column("code").cast(pa.decimal128(4, 1)).to_pylist()


def test_options_of_the_other_kind_of_input_are_refused(tmp_path, files):
    """load's options apply to HDF5 files or to Parquet files; given for the
    other kind they fail by name (never silently ignored), nothing made."""
    h5py = pytest.importorskip("h5py")
    src, _ = files
    for kw in ({"hyperchunk": 1 << 20}, {"keep_chunks": True}):
        with pytest.raises(ValueError, match=next(iter(kw))):
            h5lake.load(src, tmp_path / "p.h5l", link=True, **kw)
        assert not (tmp_path / "p.h5l").exists()
    with h5py.File(tmp_path / "f.h5", "w") as f:
        f["x"] = np.arange(4)
    for kw in ({"name": "x"}, {"chunks": 10}, {"compression": "zstd"}):
        with pytest.raises(ValueError, match=next(iter(kw))):
            h5lake.load(tmp_path / "f.h5", tmp_path / "h.h5l", **kw)
        assert not (tmp_path / "h.h5l").exists()
    r = subprocess.run([sys.executable, "-m", "h5lake", "load", "--keep-chunks", str(src),
                        str(tmp_path / "c.h5l")], capture_output=True, text=True)
    assert r.returncode == 2 and "keep_chunks" in r.stderr, (r.returncode, r.stderr)
    assert not (tmp_path / "c.h5l").exists()
