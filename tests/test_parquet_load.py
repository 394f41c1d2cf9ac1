"""Parquet files in (issue 20): `h5lake load data.parquet STORE` makes a
1-D columnar compound dataset whose values are pyarrow's, type by type;
what has no HDF5 form is refused by column name, with nothing written."""

import datetime
import json
import os

import numpy as np
import pytest

import h5lake
from h5lake import cli

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")


def sample(n, start=0):
    ids = np.arange(start, start + n)
    return pa.table({
        "i8": pa.array(ids % 100 - 50, pa.int8()),
        "u64": pa.array(ids * 3, pa.uint64()),
        "f2": pa.array((ids / 4).astype("f2"), pa.float16()),
        "f8": pa.array(ids * 0.5),
        "ok": pa.array(ids % 3 == 0),
        "name": pa.array(["n%d" % i for i in ids]),
        "blob": pa.array([bytes([i % 256]) * (i % 4) for i in ids], pa.binary()),
        "code": pa.array([b"ab%02d" % (i % 100) for i in ids], pa.binary(4)),
        "when": pa.array([datetime.datetime(2024, 1, 1) + datetime.timedelta(seconds=int(i)) for i in ids],
                         pa.timestamp("us")),
        "day": pa.array([datetime.date(2024, 1, 1) + datetime.timedelta(days=int(i % 30)) for i in ids]),
        "pos": pa.array([{"x": float(i), "y": -float(i)} for i in ids]),
        "hits": pa.array([list(range(i % 4)) for i in ids], pa.list_(pa.int32())),
        "vec": pa.array([[i, i + 1, i + 2] for i in ids], pa.list_(pa.float32(), 3)),
        "cat": pa.array(["red", "green", "blue"] * (n // 3) + ["red"] * (n % 3)).dictionary_encode(),
    })


def check(d, t):
    """The dataset holds table ``t``'s values, column by column."""
    v = d[...]
    assert len(v) == t.num_rows
    for col in ("i8", "u64", "f8", "f2"):
        np.testing.assert_array_equal(v[col], t[col].to_numpy())
    assert v["ok"].tolist() == t["ok"].to_pylist()
    assert [x.decode() for x in v["name"]] == t["name"].to_pylist()
    assert [bytes(x) for x in v["blob"]] == t["blob"].to_pylist()
    assert v["code"].tolist() == t["code"].to_pylist()
    assert v["when"].tolist() == t["when"].cast(pa.int64()).to_pylist()
    assert v["day"].tolist() == t["day"].cast(pa.int32()).to_pylist()
    np.testing.assert_array_equal(v["pos"]["x"], [p["x"] for p in t["pos"].to_pylist()])
    assert [list(h) for h in v["hits"]] == t["hits"].to_pylist()
    np.testing.assert_array_equal(v["vec"], np.array(t["vec"].to_pylist(), "f4"))
    assert [x.decode() for x in v["cat"]] == t["cat"].cast(pa.string()).to_pylist()


def test_one_file_and_many(tmp_path):
    t = sample(1000)
    pq.write_table(t, tmp_path / "one.parquet", row_group_size=300)
    report = h5lake.load(tmp_path / "one.parquet", tmp_path / "one.h5l", chunks=256, compression="zstd")
    assert report["rows"] == 1000
    with h5lake.File(tmp_path / "one.h5l", "r") as f:
        d = f["one"]
        assert d.is_columnar and d.chunks == (256,) and d.maxshape == (None,)
        check(d, t)
        import json
        kinds = json.loads(d.attrs["arrow_types"])
        # pyarrow's names of the types kept as their integer storage
        assert kinds == {"when": str(t["when"].type), "day": str(t["day"].type),
                         "code": str(t["code"].type)} \
            == {"when": "timestamp[us]", "day": "date32[day]", "code": "fixed_size_binary[4]"}
        # its chunks are Parquet again, for DuckDB and friends
        back = pq.read_table(d.parquet_files())
        assert back["name"].to_pylist()[:1000] == t["name"].to_pylist()
    # a directory (natural order: part-2 before part-10) and a glob
    parts = tmp_path / "parts"
    parts.mkdir()
    tables = [sample(100, start) for start in (0, 100, 200)]
    for k, tab in zip((1, 2, 10), tables):
        pq.write_table(tab, parts / f"part-{k}.parquet")
    whole = pa.concat_tables(tables)
    for src, dest in ((parts, "dir.h5l"), (str(parts / "part-*.parquet"), "glob.h5l")):
        rc = cli.main(["load", "-q", "--name", "/runs/all", str(src), str(tmp_path / dest)])
        assert rc == 0
        with h5lake.File(tmp_path / dest, "r") as f:
            check(f["runs/all"], whole)


def test_what_cannot_be_loaded_is_named_and_nothing_is_written(tmp_path, capsys):
    bad = pa.table({"ok": [1, 2], "m": pa.array([[("a", 1)], []], pa.map_(pa.string(), pa.int64()))})
    pq.write_table(bad, tmp_path / "map.parquet")
    with pytest.raises(ValueError, match='column "m".*map'):
        h5lake.load(tmp_path / "map.parquet", tmp_path / "m.h5l")
    assert not (tmp_path / "m.h5l").exists()
    pq.write_table(pa.table({"a": [1]}), tmp_path / "a.parquet")
    pq.write_table(pa.table({"b": [1.0]}), tmp_path / "b.parquet")
    with pytest.raises(ValueError, match="another schema"):
        h5lake.load([tmp_path / "a.parquet", tmp_path / "b.parquet"], tmp_path / "ab.h5l")
    assert not (tmp_path / "ab.h5l").exists()
    (tmp_path / "junk.parquet").write_bytes(b"PAR1 not really")
    rc = cli.main(["load", str(tmp_path / "junk.parquet"), str(tmp_path / "j.h5l")])
    assert rc == 2 and "junk.parquet is not a readable Parquet file" in capsys.readouterr().err
    assert not (tmp_path / "j.h5l").exists()
    assert sorted(os.listdir(tmp_path)) == ["a.parquet", "b.parquet", "junk.parquet", "map.parquet"]


def test_parquet_out(tmp_path, capsys):
    """`h5lake get STORE/dset out.parquet`: any dataset as one Parquet table
    that pyarrow reads back with the values (and, for columns a Parquet
    load kept as integers, the Arrow types) it came from."""
    t = sample(700)
    pq.write_table(t, tmp_path / "in.parquet")
    h5lake.load(tmp_path / "in.parquet", tmp_path / "s.h5l", name="/g/t", chunks=200)
    assert cli.main(["get", "-q", f"{tmp_path}/s.h5l/g/t", str(tmp_path / "out.parquet")]) == 0
    back = pq.read_table(tmp_path / "out.parquet")
    assert back.column_names == t.column_names
    for col in ("i8", "u64", "f2", "f8", "ok", "name", "blob", "hits", "when", "day"):
        assert back[col].to_pylist() == t[col].to_pylist(), col
    assert back["when"].type == t["when"].type and back["day"].type == t["day"].type
    assert back["pos"].to_pylist() == t["pos"].to_pylist()
    assert back["vec"].to_pylist() == t["vec"].to_pylist()
    assert back["cat"].to_pylist() == t["cat"].cast(pa.string()).to_pylist()
    # a plain dataset is one column, "value"; a group is refused by name
    with h5lake.File(tmp_path / "s.h5l", "a") as f:
        f["plain"] = np.arange(12.0).reshape(3, 4)
        f["plain"].attrs["units"] = "K"
    report = h5lake.get(f"{tmp_path}/s.h5l/plain", tmp_path / "plain.parquet")
    back = pq.read_table(tmp_path / "plain.parquet")
    assert back["value"].to_pylist() == list(np.arange(12.0))
    # (From an audit: the shape and the attributes were dropped, and the
    # report said "0 attributes". The file's metadata keeps them.)
    kept = json.loads(back.schema.metadata[b"h5lake"])
    assert kept["shape"] == [3, 4] and report["attributes"] == 1
    assert kept["attributes"]["units"]["value"] == "K"
    with pytest.raises(ValueError, match="not a dataset"):
        h5lake.get(f"{tmp_path}/s.h5l/g", tmp_path / "g.parquet")
    with pytest.raises(FileExistsError):
        h5lake.get(f"{tmp_path}/s.h5l/plain", tmp_path / "plain.parquet")
    assert not (tmp_path / "g.parquet").exists()


def test_temporal_values_inside_lists_and_structs_come_back_as_integers(tmp_path):
    """Only top-level columns get their Arrow type back from arrow_types;
    a timestamp inside a list or struct reads as its integer (README)."""
    t = pa.table({
        "l": pa.array([[1000, 2000], []], pa.list_(pa.timestamp("ms"))),
        "s": pa.array([{"t": 5}, {"t": 6}], pa.struct([("t", pa.timestamp("ms"))])),
        "top": pa.array([7, 8], pa.timestamp("us")),
    })
    pq.write_table(t, tmp_path / "n.parquet")
    h5lake.load(tmp_path / "n.parquet", tmp_path / "n.h5l")
    with h5lake.File(tmp_path / "n.h5l", "r") as f:
        got = f["n"].to_arrow()
        assert got.column("top").type == pa.timestamp("us")
        assert got.column("top").to_pylist() == t.column("top").to_pylist()
        assert got.column("l").to_pylist() == [[1000, 2000], []]
        assert got.column("s").to_pylist() == [{"t": 5}, {"t": 6}]


def test_text_holding_a_nul_is_refused_by_get_not_cut(tmp_path, capsys):
    """HDF5's variable-length strings end at their first NUL: a value with
    text after a NUL cannot go to an HDF5 file, so get names it and writes
    nothing (it wrote the text up to the NUL)."""
    src = tmp_path / "nul.parquet"
    pq.write_table(pa.table({"s": ["ok", "a\x00b"]}), src)
    store, out = tmp_path / "nul.h5l", tmp_path / "back.h5"
    h5lake.load(str(src), str(store))
    assert h5lake.File(store)["nul"]["s"].tolist() == [b"ok", b"a\x00b"]
    code = cli.main(["get", str(store), str(out)])
    assert code == 2 and "NUL" in capsys.readouterr().err
    assert not out.exists()
    with h5lake.File(tmp_path / "w.h5l", "w") as f:      # as h5py refuses it
        d = f.create_dataset("s", shape=(1,), dtype=h5lake.string_dtype())
        with pytest.raises(ValueError, match="embedded NULLs"):
            d[0] = "a\x00b"
