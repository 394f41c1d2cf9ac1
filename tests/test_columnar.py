"""Columnar datasets (issue 20): compound datasets whose chunks are Parquet
objects. Every read and write gives what the row layout and h5py give, and
DuckDB, Polars and pyarrow read the chunk objects directly."""

import os

import numpy as np
import pytest

import h5lake

h5py = pytest.importorskip("h5py")
pa = pytest.importorskip("pyarrow")

DT = np.dtype([("x", "<f4"), ("y", ">f8"), ("id", "<i8"), ("flag", "u1"),
               ("tag", "S4"), ("v", "<u2", (2, 3)),
               ("inner", [("a", "<i2"), ("b", "<f2")])])


def table(n, seed=0):
    rng = np.random.default_rng(seed)
    a = np.zeros(n, DT)
    a["x"] = rng.standard_normal(n)
    a["y"] = rng.standard_normal(n)
    a["id"] = np.arange(n) + 1000 * seed
    a["flag"] = rng.integers(0, 2, n)
    a["tag"] = [b"t%d" % (i % 7) for i in range(n)]
    a["v"] = rng.integers(0, 60000, (n, 2, 3))
    a["inner"]["a"] = rng.integers(-300, 300, n)
    a["inner"]["b"] = rng.standard_normal(n)
    return a


READS = [(), np.s_[...], np.s_[5:17], np.s_[::7], np.s_[[1, 4, 9]], np.s_[3],
         np.s_[-5:], np.s_[2:40:3]]
WRITES = [(np.s_[0:10], 1), (np.s_[95:130], 2), (np.s_[7], 3), (np.s_[200:260:4], 4)]


@pytest.mark.parametrize("compression", [None, "gzip", "zstd", "lz4", "snappy"])
def test_columnar_matches_row_layout_and_h5py(tmp_path, compression):
    n = 300
    a = table(n)
    with h5py.File(tmp_path / "ref.h5", "w") as ref, h5lake.File(tmp_path / "s.h5l", "w") as f:
        r = ref.create_dataset("t", data=a, chunks=(64,), maxshape=(None,), fillvalue=np.zeros((), DT))
        row = f.create_dataset("row", data=a, chunks=(64,), maxshape=(None,))
        col = f.create_dataset("col", data=a, chunks=(64,), maxshape=(None,), layout="columnar",
                               compression=compression)
        assert col.is_columnar and not row.is_columnar
        assert col.chunks == (64,) and col.compression == compression
        for sel, seed in WRITES:
            part = table(len(np.arange(n)[sel].reshape(-1)), seed)
            if np.ndim(np.arange(n)[sel]) == 0:
                part = part[0]
            for d in (r, row, col):
                d[sel] = part
        for sel in READS:
            np.testing.assert_array_equal(col[sel], r[sel])
            np.testing.assert_array_equal(col[sel], row[sel])
        for names in (["x"], ["id", "v"], ["inner", "tag"]):
            np.testing.assert_array_equal(col.fields(names)[...], r.fields(names)[...])
        np.testing.assert_array_equal(col["y"], r["y"])
        for d in (r, row, col):
            d.resize((400,))
        np.testing.assert_array_equal(col[...], r[...])
    with h5lake.File(tmp_path / "s.h5l", "r") as f:          # kept as it was made
        assert f["col"].is_columnar
        np.testing.assert_array_equal(f["col"][...], f["row"][...])


def test_other_tools_read_the_chunk_objects(tmp_path):
    duckdb = pytest.importorskip("duckdb")
    pl = pytest.importorskip("polars")
    import pyarrow.dataset as ds
    import pyarrow.parquet as pq
    a = table(1000)
    with h5lake.File(tmp_path / "s.h5l", "w") as f:
        d = f.create_dataset("t", data=a, chunks=(250,), maxshape=(None,), layout="columnar",
                             compression="zstd")
        d[100:110] = table(10, 5)
        d.resize((1100,))
        d[1000:] = table(100, 7)
        files = d.parquet_files()
        assert len(files) == 5 and all(p.startswith(str(tmp_path)) for p in files)
        want = d[...]
        for p, rows in zip(files, [250, 250, 250, 250, 100]):
            meta = pq.ParquetFile(p).metadata
            # the last chunk holds the table's rows only, no padding
            assert meta.num_row_groups == 1 and meta.num_rows == rows
            assert meta.row_group(0).column(0).compression == "ZSTD"
        got = pq.read_table(files)
        np.testing.assert_array_equal(got["id"].to_numpy(), want["id"])
        np.testing.assert_array_equal(got["inner"].combine_chunks().field("a").to_numpy(),
                                      want["inner"]["a"])
        (rows, total, mean_x), = duckdb.sql(
            f"SELECT count(*), sum(id), avg(x) FROM read_parquet({files})").fetchall()
        assert rows == 1100 and total == int(want["id"].sum())
        assert abs(mean_x - float(want["x"].astype("f8").mean())) < 1e-6
        lazy = pl.scan_parquet(files).filter(pl.col("flag") == 1).select(pl.col("id").count()).collect()
        assert lazy.item() == int((want["flag"] == 1).sum())
        assert ds.dataset(files, format="parquet").count_rows() == 1100
        # shrinking stores the cut chunk again, with the rows left
        d.resize((1030,))
        assert pq.read_table(d.parquet_files()).num_rows == 1030
        d.resize((1100,))
        np.testing.assert_array_equal(d[1030:]["id"], np.zeros(70, "i8"))   # regrown: fill
        with pytest.raises(TypeError, match="not a columnar dataset"):
            f.create_dataset("plain", data=a).parquet_files()


def test_pyarrow_skips_chunk_objects_by_their_float_bounds(tmp_path):
    """pyarrow reads the float columns' min/max (not just the integers'),
    so its filters skip the chunk objects that cannot match."""
    import pyarrow.compute as pc
    import pyarrow.dataset as ds
    import pyarrow.parquet as pq
    a = table(1000)
    a["x"] = np.arange(1000, dtype="f4")          # chunk k holds 250k .. 250k+249
    a["y"] = -np.arange(1000, dtype="f8")
    with h5lake.File(tmp_path / "s.h5l", "w") as f:
        files = f.create_dataset("t", data=a, chunks=(250,), layout="columnar").parquet_files()
    for k, p in enumerate(files):
        stats = pq.ParquetFile(p).metadata.row_group(0).column(0).statistics
        assert stats.has_min_max and (stats.min, stats.max) == (250 * k, 250 * k + 249)
    frags = list(ds.dataset(files, format="parquet").get_fragments())
    kept = [fr.subset(pc.field("x") >= 600).num_row_groups for fr in frags]
    assert kept == [0, 0, 1, 1]
    kept = [fr.subset(pc.field("y") > -100.5).num_row_groups for fr in frags]
    assert kept == [1, 0, 0, 0]
    # A chunk with NaNs keeps its float bounds from pyarrow: it would prune
    # on them for filters a NaN passes, and lose those rows.
    b = table(500)
    b["x"] = 1.0
    b["x"][::2] = np.nan
    with h5lake.File(tmp_path / "n.h5l", "w") as f:
        files = f.create_dataset("t", data=b, chunks=(250,), layout="columnar").parquet_files()
    got = ds.dataset(files, format="parquet")
    assert got.to_table(filter=pc.is_nan(pc.field("x"))).num_rows == 250
    assert got.to_table(filter=pc.field("x") != 1).num_rows == 250
    assert got.to_table(filter=~(pc.field("x") == 1)).num_rows == 250


def test_copies_keep_the_columnar_layout_and_chunk_functions(tmp_path):
    pq = pytest.importorskip("pyarrow.parquet")
    a = table(40)
    with h5lake.File(tmp_path / "a.h5l", "w") as f, h5lake.File(tmp_path / "b.h5l", "w") as g:
        d = f.create_dataset("t", data=a, chunks=(16,), layout="columnar",
                             stats={"top": "max(x)"})
        f.copy("t", "same")
        f.copy(d, g, "other")
        for c in (f["same"], g["other"]):
            assert c.is_columnar
            assert pq.read_table(c.parquet_files()).num_rows == 40
            np.testing.assert_array_equal(c[...], a)
            assert c.stats().column("top").to_pylist() == d.stats().column("top").to_pylist()


def test_other_tools_compare_fixed_length_strings_by_their_text(tmp_path):
    duckdb = pytest.importorskip("duckdb")
    pl = pytest.importorskip("polars")
    a = np.array([(b"alpha", 1.0), (b"be", 2.0), (b"alpha", 3.0)], [("name", "S8"), ("v", "f4")])
    with h5lake.File(tmp_path / "s.h5l", "w") as f:
        d = f.create_dataset("t", data=a, chunks=(2,), layout="columnar")
        files = d.parquet_files()
        got = duckdb.sql(f"select sum(v) from read_parquet({files!r}) "
                         "where name = 'alpha'::BLOB").fetchall()[0][0]
        assert got == 4.0
        assert pl.scan_parquet(files).filter(pl.col("name") == b"be").collect()["v"].to_list() == [2.0]
        np.testing.assert_array_equal(d[...], a)
        assert d.to_arrow()["name"].to_pylist() == [b"alpha", b"be", b"alpha"]


def test_parquet_files_of_more_dimensions_never_show_padding_as_rows(tmp_path):
    duckdb = pytest.importorskip("duckdb")
    pq = pytest.importorskip("pyarrow.parquet")
    a = np.zeros((3, 3), [("v", "i4")])
    a["v"] = np.arange(1, 10).reshape(3, 3)
    with h5lake.File(tmp_path / "s.h5l", "w") as f:
        cut = f.create_dataset("cut", data=a, chunks=(2, 2), layout="columnar")
        with pytest.raises(ValueError, match="padded=True"):
            cut.parquet_files()
        # Asked for, the edge chunks come whole (their padding rows too).
        assert pq.read_table(cut.parquet_files(padded=True)).num_rows == 16
        whole = f.create_dataset("whole", data=np.tile(a, (2, 2)), chunks=(3, 2), layout="columnar")
        with pytest.warns(UserWarning, match="chunk by chunk"):
            files = whole.parquet_files()
        count, mean = duckdb.sql(f"select count(*), avg(v) from read_parquet({files!r})").fetchall()[0]
        assert (count, mean) == (36, 5.0)


def test_parquet_files_say_where_other_tools_read_other_rows(tmp_path, recwarn):
    """From an audit: DuckDB counted 8 rows of a 12-row table whose middle
    chunk was never written, and read a 2-D table in chunk order, with no
    word of either."""
    duckdb = pytest.importorskip("duckdb")
    row = np.dtype([("x", "i4")])
    with h5lake.File(tmp_path / "s.h5l", "w") as f:
        d = f.create_dataset("holes", shape=(12,), dtype=row, chunks=(4,), layout="columnar")
        d[0] = (1,)
        d[11] = (2,)
        with pytest.warns(UserWarning, match="1 of its 3 chunks were never written"):
            files = d.parquet_files()
        assert duckdb.sql(f"select count(*) from read_parquet({files!r})").fetchall()[0][0] == 8
        d[5] = (3,)
        recwarn.clear()
        assert len(d.parquet_files()) == 3 and not recwarn.list     # whole now: no word
        rows = f.create_dataset("rows", data=np.zeros((4, 3), row), chunks=(2, 3),
                                layout="columnar")
        assert len(rows.parquet_files()) == 2 and not recwarn.list  # whole rows: C order
        grid = f.create_dataset("grid", data=np.zeros((4, 4), row), chunks=(2, 2),
                                layout="columnar")
        with pytest.warns(UserWarning, match="chunk by chunk"):
            grid.parquet_files()


def test_to_arrow_pandas_polars(tmp_path):
    a = table(50)
    with h5lake.File(tmp_path / "s.h5l", "w") as f:
        for name, kw in (("col", {"layout": "columnar", "chunks": (16,)}), ("row", {})):
            d = f.create_dataset(name, data=a, **kw)
            t = d.to_arrow()
            assert t.column_names == list(DT.names)
            assert t.num_rows == 50
            np.testing.assert_array_equal(t["id"].to_numpy(), a["id"])
            assert t["v"].type == pa.list_(pa.uint16(), 6)
            assert t["inner"].type == pa.struct([("a", pa.int16()), ("b", pa.float16())])
            part = d.to_arrow(np.s_[10:20], fields=["x", "tag"])
            assert part.column_names == ["x", "tag"]
            np.testing.assert_array_equal(part["x"].to_numpy(), a["x"][10:20])
            assert part["tag"].to_pylist() == list(a["tag"][10:20])
            df = d.to_pandas(fields="id")
            assert list(df.columns) == ["id"] and df["id"].tolist() == a["id"].tolist()
        f["plain"] = np.arange(6.0).reshape(2, 3)
        assert f["plain"].to_arrow()["value"].to_pylist() == [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]
        pl = pytest.importorskip("polars")
        assert f["col"].to_polars().shape == (50, len(DT.names))
        assert isinstance(f["col"].to_polars(), pl.DataFrame)


def test_what_columnar_cannot_hold_is_refused(tmp_path):
    with h5lake.File(tmp_path / "s.h5l", "w") as f:
        with pytest.raises(TypeError, match="compound"):
            f.create_dataset("a", data=np.arange(4), layout="columnar")
        nested = np.dtype([("inner", [("s", h5py.string_dtype()), ("x", "i4")])])
        with pytest.raises(ValueError, match="variable-length strings and sequences inside nested"):
            f.create_dataset("b", shape=(4,), dtype=nested, layout="columnar")
        with pytest.raises(ValueError, match="gzip, zstd, lz4 or snappy"):
            f.create_dataset("c", data=table(4), layout="columnar", compression="lzf")
        with pytest.raises(ValueError, match="layout"):
            f.create_dataset("d", data=table(4), layout="rows")
        assert list(f) == []                   # nothing half-made


def test_columnar_through_get_diff_and_the_server(tmp_path):
    """The other front ends read a columnar dataset through the engine:
    `get` writes the values to HDF5, `diff` compares it with its row-layout
    twin, and the REST server answers h5pyd with the same values."""
    a = table(120)
    with h5lake.File(tmp_path / "s.h5l", "w") as f:
        f.create_dataset("col", data=a, chunks=(50,), layout="columnar", compression="gzip")
        f.create_dataset("row", data=a, chunks=(50,), compression="gzip")
    assert h5lake.get(tmp_path / "s.h5l", tmp_path / "out.h5")["skipped"] == []
    with h5py.File(tmp_path / "out.h5", "r") as h:
        np.testing.assert_array_equal(h["col"][...], a)
        assert h["col"].compression == "gzip"
    assert h5lake.diff(f"{tmp_path}/s.h5l/col", f"{tmp_path}/s.h5l/row") == []
    h5pyd = pytest.importorskip("h5pyd")
    from servers import Server
    s = Server(tmp_path / "s.h5l")
    try:
        with h5pyd.File("/s.h5l", "r", endpoint=s.endpoint, username="admin", password="admin") as f:
            got = f["col"][10:30]
            for name in ("x", "id", "tag"):
                np.testing.assert_array_equal(got[name], a[10:30][name])
    finally:
        s.stop()


def test_string_and_sequence_columns(tmp_path):
    """The most common table: string columns (variable-length UTF-8 and
    bytes) and variable-length sequences, as Parquet string, binary and
    list columns."""
    duckdb = pytest.importorskip("duckdb")
    dt = np.dtype([("name", h5py.string_dtype()), ("id", "<i4"),
                   ("raw", h5py.string_dtype("ascii")), ("hits", h5py.vlen_dtype("f8"))])
    n = 90
    a = np.empty(n, dt)
    a["name"] = ["é%d" % (i % 11) * (i % 3) for i in range(n)]
    a["id"] = np.arange(n)
    a["raw"] = [b"x" * (i % 4) for i in range(n)]
    a["hits"] = [np.arange(i % 5, dtype="f8") / 2 for i in range(n)]
    def rows(d, sel=np.s_[...]):
        v = d[sel]
        return [(x["name"].decode() if isinstance(x["name"], bytes) else x["name"], int(x["id"]),
                 bytes(x["raw"]), list(x["hits"])) for x in np.atleast_1d(v)]
    with h5py.File(tmp_path / "ref.h5", "w") as ref, h5lake.File(tmp_path / "s.h5l", "w") as f:
        r = ref.create_dataset("t", data=a, chunks=(32,), maxshape=(None,))
        col = f.create_dataset("t", data=a, chunks=(32,), maxshape=(None,), layout="columnar")
        for d in (r, col):
            d[10:13] = a[50:53]
            d.resize((100,))
        for sel in (np.s_[...], np.s_[5:40:3], np.s_[[2, 60, 99]]):
            assert rows(col, sel) == rows(r, sel)
        files = col.parquet_files()
        (names, total), = duckdb.sql(
            f"SELECT count(DISTINCT name), sum(len(hits)) FROM read_parquet({files}) WHERE id < 90"
        ).fetchall()
        want = r[...][:90]
        assert names == len({x for x in want["name"]})
        assert total == sum(len(h) for h in want["hits"])
        t = col.to_arrow(fields=["name", "id"])
        assert t["name"].type == pa.string()
        assert [x.decode() for x in r["name"][:5]] == t["name"].to_pylist()[:5]


def test_hdf5_compound_datasets_load_columnar(tmp_path):
    """`load --columnar`: an HDF5 file's compound datasets (chunked or
    contiguous, filtered or not, with string members) become columnar; the
    rest load as always; `get` writes the same values back."""
    src = tmp_path / "in.h5"
    a = table(500)
    strs = np.array([(i, "s%d" % i) for i in range(40)],
                    dtype=[("n", "i4"), ("s", h5py.string_dtype())])
    with h5py.File(src, "w") as f:
        f.create_dataset("chunked", data=a, chunks=(128,), compression="gzip", shuffle=True)
        f.create_dataset("contiguous", data=a[:77])
        f.create_dataset("strings", data=strs, chunks=(16,))
        f["plain"] = np.arange(10)
    rc = __import__("h5lake.cli", fromlist=["main"]).main(
        ["load", "-q", "--columnar", str(src), str(tmp_path / "s.h5l")])
    assert rc == 0
    with h5lake.File(tmp_path / "s.h5l", "r") as f, h5py.File(src, "r") as h:
        for name in ("chunked", "contiguous", "strings"):
            assert f[name].is_columnar, name
            np.testing.assert_array_equal(f[name][...], h[name][...])
        assert f["chunked"].compression == "gzip" and f["chunked"].chunks == (128,)
        assert not f["plain"].is_columnar
        assert len(f["chunked"].parquet_files()) == 4
    h5lake.get(tmp_path / "s.h5l", tmp_path / "back.h5")
    with h5py.File(tmp_path / "back.h5", "r") as b, h5py.File(src, "r") as h:
        for name in ("chunked", "contiguous", "strings", "plain"):
            np.testing.assert_array_equal(b[name][...], h[name][...])


@pytest.mark.parametrize("layout", [None, "columnar"])
def test_a_damaged_chunk_is_named_with_its_dataset(tmp_path, layout):
    with h5lake.File(tmp_path / "s.h5l", "w") as f:
        d = f.create_dataset("g/t", data=table(20), chunks=(10,), compression="gzip",
                             **({"layout": layout} if layout else {}))
    import glob
    (path,) = glob.glob(str(tmp_path / "s.h5l" / "db" / "*" / "d" / "*" / "1"))
    with open(path, "r+b") as fh:
        fh.truncate(os.path.getsize(path) // 2)
    with h5lake.File(tmp_path / "s.h5l", "r") as f:
        np.testing.assert_array_equal(f["g/t"][:10], table(20)[:10])
        with pytest.raises(OSError, match=r"chunk 1 of dataset /g/t"):
            f["g/t"][...]


def test_load_columnar_says_what_it_did_not_make_columnar(tmp_path, capsys):
    src = tmp_path / "in.h5"
    nested = np.dtype([("n", "i4"), ("inner", [("s", h5py.string_dtype())])])
    with h5py.File(src, "w") as f:
        rows = np.zeros(4, nested)
        rows["inner"]["s"] = ["a", "b", "c", "d"]
        f.create_dataset("nested", data=rows, chunks=(2,))
        f.create_dataset("summed", data=table(10), chunks=(5,), fletcher32=True)
    rc = __import__("h5lake.cli", fromlist=["main"]).main(
        ["load", "-q", "--columnar", str(src), str(tmp_path / "s.h5l")])
    assert rc == 0
    err = capsys.readouterr().err
    assert "/nested: kept in row layout" in err
    assert "/summed: stored columnar without H5Z_FILTER_FLETCHER32" in err
    with h5lake.File(tmp_path / "s.h5l", "r") as f:
        assert not f["nested"].is_columnar and f["summed"].is_columnar


def test_an_anndata_frame_as_a_table(tmp_path):
    """AnnData's obs as AnnData writes it (written here with h5py, in
    AnnData's on-disk form): the index, categorical and nullable columns,
    in its column order; other members are named in a warning."""
    pd = pytest.importorskip("pandas")
    path = tmp_path / "ad.h5"
    with h5py.File(path, "w") as f:
        obs = f.create_group("obs")
        obs.attrs.update({"encoding-type": "dataframe", "encoding-version": "0.2.0",
                          "_index": "_index", "column-order": ["cell_type", "n_genes", "ok"]})
        obs["_index"] = np.array(["c1", "c2", "c3", "c4"], dtype=h5py.string_dtype())
        obs["n_genes"] = np.array([10, 20, 30, 40])
        ct = obs.create_group("cell_type")
        ct.attrs.update({"encoding-type": "categorical", "encoding-version": "0.2.0",
                         "ordered": False})
        ct["categories"] = np.array(["B", "T"], dtype=h5py.string_dtype())
        ct["codes"] = np.array([1, 0, -1, 1], dtype="i1")
        ok = obs.create_group("ok")
        ok.attrs.update({"encoding-type": "nullable-boolean", "encoding-version": "0.1.0"})
        ok["values"] = np.array([True, False, True, True])
        ok["mask"] = np.array([False, False, True, False])
    with h5lake.File(path, "r") as f:
        frame = f["obs"].to_pandas()
        assert list(frame.index) == ["c1", "c2", "c3", "c4"]
        assert list(frame.columns) == ["cell_type", "n_genes", "ok"]
        assert isinstance(frame["cell_type"].dtype, pd.CategoricalDtype)
        assert frame["cell_type"].tolist()[:2] == ["T", "B"] and pd.isna(frame["cell_type"].iloc[2])
        assert frame["ok"].tolist()[:2] == [True, False] and pd.isna(frame["ok"].tolist()[2])
        assert frame["n_genes"].tolist() == [10, 20, 30, 40]
    with h5lake.File(tmp_path / "s.h5l", "w") as f:
        g = f.create_group("plain")
        g["n"] = np.arange(3)
        g.create_group("nested")
        with pytest.warns(UserWarning, match="nested"):
            assert g.to_arrow().column_names == ["n"]


def test_a_group_of_columns_as_a_table(tmp_path):
    """The column-group pattern (AnnData's obs, one 1-D dataset per column)
    converts as a compound dataset does."""
    with h5lake.File(tmp_path / "s.h5l", "w") as f:
        g = f.create_group("obs")
        g["n"] = np.arange(5)
        g["x"] = np.linspace(0, 1, 5)
        g["label"] = np.array(["a", "bb", "c", "d", "e"], dtype=h5py.string_dtype())
        t = g.to_arrow()
        assert t.column_names == ["label", "n", "x"]
        assert t["label"].to_pylist() == ["a", "bb", "c", "d", "e"]
        assert g.to_arrow(np.s_[1:3], names=["x", "n"]).to_pydict() == {"x": [0.25, 0.5], "n": [1, 2]}
        assert list(g.to_pandas()["n"]) == [0, 1, 2, 3, 4]
        g["short"] = np.arange(3)
        with pytest.raises(ValueError, match="one length"):
            g.to_arrow()
        assert f["obs/label"].to_arrow()["value"].to_pylist() == ["a", "bb", "c", "d", "e"]
        g["grid"] = np.zeros((5, 2))
        with pytest.raises(ValueError, match="not a 1-D dataset"):
            g.to_arrow(names=["n", "grid"])
