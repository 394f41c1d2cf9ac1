"""Parquet decimals in and out (issue 20): a decimal column of precision up
to 18 is held as its unscaled integers, its Arrow type in ``arrow_types``,
and comes back from ``to_arrow``, ``to_pandas`` and ``get … out.parquet``
equal to the source; wider decimals are refused by column name, with
advice. And ``h5lake get --format``."""

import decimal
import json
import os

import numpy as np
import pytest

import h5lake
from h5lake import cli

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")

# (name, type, unscaled values as a function of the row number)
COLUMNS = [
    ("price", pa.decimal128(10, 2), lambda i: (i * 7919) % 2_000_000 - 1_000_000),
    ("tiny", pa.decimal128(3, 0), lambda i: i % 1999 - 999),
    ("wide", pa.decimal128(18, 6), lambda i: (-1) ** i * (10 ** 17 + i * 123_456_789)),
    ("rate", pa.decimal128(9, 9), lambda i: (i * 31) % 10 ** 9 - 5 * 10 ** 8),
    ("d256", pa.decimal256(12, 3), lambda i: (i * 104_729) % 10 ** 12 - 5 * 10 ** 11),
]


def dec(unscaled, scale):
    return decimal.Decimal(unscaled).scaleb(-scale)


def decimal_table(n, start=0, nulls=True):
    rows = range(start, start + n)
    cols = {"id": pa.array(list(rows), pa.int64())}
    for name, t, f in COLUMNS:
        cols[name] = pa.array([None if nulls and (i * 13 + len(name)) % 9 == 0 else dec(f(i), t.scale)
                               for i in rows], t)
    return pa.table(cols)


def unscaled(col):
    """The unscaled integers of a decimal column; a null as 0 (the fill
    value, as HDF5-shaped reads give it)."""
    scale = col.type.scale
    return [0 if v is None else int(v.scaleb(scale)) for v in col.to_pylist()]


def filled(t):
    """``t`` as the HDF5-shaped path gives it (``to_arrow`` of a selection
    that is not a run of rows goes through NumPy): a decimal's nulls read
    as the fill value (zero)."""
    cols = [c.fill_null(pa.scalar(decimal.Decimal(0), c.type)).cast(c.type)
            if pa.types.is_decimal(c.type) else c for c in t.columns]
    return pa.table(cols, names=t.column_names)


def same(got, want):
    """Equal tables: names, types and values, nulls included."""
    got = got.combine_chunks()
    want = want.combine_chunks()
    assert got.schema.remove_metadata().equals(want.schema.remove_metadata()), \
        (got.schema, want.schema)
    for name in want.column_names:
        assert got[name].to_pylist() == want[name].to_pylist(), name
    assert got.equals(want)


def test_decimals_load_as_unscaled_integers_and_come_back(tmp_path, monkeypatch):
    t = decimal_table(1000)
    assert t["price"].null_count > 0
    pq.write_table(t, tmp_path / "d.parquet", row_group_size=137)   # several row groups
    report = h5lake.load(tmp_path / "d.parquet", tmp_path / "s.h5l", chunks=300)
    assert report["rows"] == 1000
    with h5lake.File(tmp_path / "s.h5l", "r") as f:
        d = f["d"]
        assert d.is_columnar
        kinds = json.loads(d.attrs["arrow_types"])
        # pyarrow's own names of the types
        assert kinds == {name: str(t[name].type) for name, _, _ in COLUMNS}
        assert kinds["price"] == "decimal128(10, 2)" and kinds["d256"] == "decimal256(12, 3)"
        # HDF5-shaped reads: the unscaled integers, a null as the fill value
        v = d[...]
        for name, _, _ in COLUMNS:
            assert d.dtype[name] == np.dtype("<i8"), name
            assert v[name].tolist() == unscaled(t[name]), name
        np.testing.assert_array_equal(d.fields("price")[10:20], unscaled(t["price"])[10:20])
        # Arrow: the decimals, nulls kept
        same(d.to_arrow(), t)
        same(d.to_arrow(np.s_[250:777]), t.slice(250, 527))
        same(d.to_arrow(fields=["wide", "id"]), t.select(["wide", "id"]))
        # the row path (an index list) agrees
        same(d.to_arrow(np.arange(0, 1000, 3)), t.take(list(range(0, 1000, 3))))
        same(d.to_arrow(np.s_[5:900:7]), t.take(list(range(5, 900, 7))))
        mask = np.arange(1000) % 4 == 1
        same(d.to_arrow(mask), t.filter(pa.array(mask)))
        # rows spread too thin go the h5py way: a null reads as the fill value
        monkeypatch.setattr(h5lake._hl.table, "_SHORT_RUN", 0)
        assert t["price"][10].as_py() is None
        same(d.to_arrow([1, 10, 999]), filled(t.take([1, 10, 999])))
        assert d.to_pandas().equals(t.to_pandas())
    # out as Parquet: the source, types and nulls included
    assert cli.main(["get", "-q", f"{tmp_path}/s.h5l/d", str(tmp_path / "out.parquet")]) == 0
    same(pq.read_table(tmp_path / "out.parquet"), t)
    # without nulls, exactly the source
    exact = decimal_table(300, nulls=False)
    pq.write_table(exact, tmp_path / "e.parquet", row_group_size=70)
    h5lake.load(tmp_path / "e.parquet", tmp_path / "e.h5l", chunks=128)
    h5lake.get(f"{tmp_path}/e.h5l/e", tmp_path / "e-out.parquet")
    same(pq.read_table(tmp_path / "e-out.parquet"), exact)
    with h5lake.File(tmp_path / "e.h5l", "r") as f:
        same(f["e"].to_arrow(), exact)


def test_many_files_and_a_dictionary_of_decimals(tmp_path):
    parts = [decimal_table(200, start) for start in (0, 200, 400)]
    for k, part in enumerate(parts):
        pq.write_table(part, tmp_path / f"part-{k}.parquet", row_group_size=64)
    h5lake.load(str(tmp_path / "part-*.parquet"), tmp_path / "s.h5l", name="all", chunks=128)
    whole = pa.concat_tables(parts)
    with h5lake.File(tmp_path / "s.h5l", "r") as f:
        same(f["all"].to_arrow(), whole)
    codes = pa.array([dec(k % 3 * 250 - 250, 2) for k in range(30)], pa.decimal128(5, 2))
    t = pa.table({"code": codes.dictionary_encode()})
    pq.write_table(t, tmp_path / "dict.parquet")
    h5lake.load(tmp_path / "dict.parquet", tmp_path / "dict.h5l")
    with h5lake.File(tmp_path / "dict.h5l", "r") as f:
        assert f["dict"]["code"].tolist() == [k % 3 * 250 - 250 for k in range(30)]
        same(f["dict"].to_arrow(), pa.table({"code": codes}))


def test_decimal32_and_decimal64(tmp_path):
    if not hasattr(pa, "decimal32"):
        pytest.skip("this pyarrow has no decimal32")
    t = pa.table({
        "d32": pa.array([dec(-12345, 2), None, dec(99999, 2)], pa.decimal32(7, 2)),
        "d64": pa.array([dec(10 ** 15, 4), dec(-1, 4), None], pa.decimal64(16, 4)),
    })
    try:
        pq.write_table(t, tmp_path / "small.parquet")
    except (pa.ArrowNotImplementedError, pa.ArrowInvalid):
        pytest.skip("this pyarrow does not write decimal32 to Parquet")
    h5lake.load(tmp_path / "small.parquet", tmp_path / "s.h5l")
    with h5lake.File(tmp_path / "s.h5l", "r") as f:
        d = f["small"]
        assert d.dtype["d32"] == np.dtype("<i4") and d.dtype["d64"] == np.dtype("<i8")
        assert d["d64"].tolist() == [10 ** 15, -1, 0]
        assert d["d32"].tolist() == [-12345, 0, 99999]
        # the types the file was written with (pyarrow itself reads them
        # back as decimal128 unless told otherwise)
        same(d.to_arrow(), t)
    h5lake.get(f"{tmp_path}/s.h5l/small", tmp_path / "out.parquet")
    back = pq.read_table(tmp_path / "out.parquet")
    assert back["d32"].to_pylist() == t["d32"].to_pylist()
    # straight from Arrow too, decimal32 as int32
    with h5lake.File(tmp_path / "t.h5l", "w") as f:
        d = f.create_dataset("t", data=t)
        assert d.dtype["d32"] == np.dtype("<i4") and d.dtype["d64"] == np.dtype("<i8")
        same(d.to_arrow(), t)


def test_tables_with_decimals_through_arrow(tmp_path):
    """create_dataset(data=<table>) maps decimals as the load does; append
    rescales a table of another scale to the dataset's."""
    t = decimal_table(90)
    with h5lake.File(tmp_path / "s.h5l", "w") as f:
        d = f.create_dataset("t", data=t, chunks=(32,))
        assert json.loads(d.attrs["arrow_types"])["price"] == "decimal128(10, 2)"
        assert d["price"].tolist() == unscaled(t["price"])
        same(d.to_arrow(), t)
        more = decimal_table(10, 90)
        # the same values in another scale and precision: rescaled, exact
        other = more.set_column(1, "price", more["price"].cast(pa.decimal128(14, 4)))
        assert d.append(other) == 10
        same(d.to_arrow(), pa.concat_tables([t, more]))
        # digits the dataset's scale cannot hold: refused, nothing written
        lossy = more.set_column(1, "price", pa.array([dec(1, 3)] * 10, pa.decimal128(10, 3)))
        with pytest.raises(Exception, match="(?i)data loss|rescal|lose"):
            d.append(lossy)
        assert d.shape == (100,)
        # a decimal into a plain number member: by value, not unscaled
        e = f.create_dataset("e", data=pa.table({"x": pa.array([0.5]), "n": pa.array([1])}))
        e.append(pa.table({"x": pa.array([dec(-125, 2)], pa.decimal128(5, 2)),
                           "n": pa.array([dec(700, 2)], pa.decimal128(5, 2))}))
        assert e["x"].tolist() == [0.5, -1.25] and e["n"].tolist() == [1, 7]
        # a row-layout table holding decimals (arrow_types) too
        r = f.create_dataset("r", shape=(0,), maxshape=(None,), chunks=(8,),
                             dtype=np.dtype([("id", "<i8"), ("price", "<i8")]))
        r.attrs["arrow_types"] = json.dumps({"price": "decimal128(10, 2)"})
        small = decimal_table(5).select(["id", "price"])
        assert r.append(small) == 5
        assert r["price"].tolist() == unscaled(small["price"])
        back = r.to_arrow()
        assert back["price"].type == pa.decimal128(10, 2)
        assert unscaled(back["price"]) == unscaled(small["price"])


def test_an_hdf5_round_trip_keeps_the_decimal_type(tmp_path):
    t = decimal_table(50, nulls=False)
    pq.write_table(t, tmp_path / "d.parquet")
    h5lake.load(tmp_path / "d.parquet", tmp_path / "s.h5l", chunks=20)
    h5lake.get(tmp_path / "s.h5l", tmp_path / "d.h5")
    h5lake.load(tmp_path / "d.h5", tmp_path / "rows.h5l")
    with h5lake.File(tmp_path / "rows.h5l", "r") as f:
        d = f["d"]
        assert not d.is_columnar
        same(d.to_arrow(), t)
    h5lake.get(f"{tmp_path}/rows.h5l/d", tmp_path / "again.parquet")
    same(pq.read_table(tmp_path / "again.parquet"), t)


@pytest.mark.parametrize("kind", [pa.decimal128(19, 2), pa.decimal128(38, 10), pa.decimal256(40, 5)])
def test_wide_decimals_are_refused_by_name(tmp_path, capsys, kind):
    t = pa.table({"ok": [1, 2], "amount": pa.array([dec(12345, kind.scale), None], kind)})
    pq.write_table(t, tmp_path / "wide.parquet")
    with pytest.raises(ValueError, match=r'column "amount".*decimal\d+\(%d, %d\)'
                       % (kind.precision, kind.scale)):
        h5lake.load(tmp_path / "wide.parquet", tmp_path / "w.h5l")
    assert not (tmp_path / "w.h5l").exists()
    rc = cli.main(["load", str(tmp_path / "wide.parquet"), str(tmp_path / "w.h5l")])
    err = capsys.readouterr().err
    assert rc == 2 and '"amount"' in err
    # what to do instead
    assert "pa.float64()" in err and "pa.decimal128(18" in err and "pa.string()" in err
    assert not (tmp_path / "w.h5l").exists()
    with h5lake.File(tmp_path / "s.h5l", "w") as f:
        with pytest.raises(ValueError, match='column "amount"'):
            f.create_dataset("t", data=t)
        assert "t" not in f
    # cast as the message says, it loads
    t2 = t.set_column(1, "amount", t["amount"].cast(pa.decimal128(18, kind.scale)))
    pq.write_table(t2, tmp_path / "fits.parquet")
    h5lake.load(tmp_path / "fits.parquet", tmp_path / "fits.h5l")
    with h5lake.File(tmp_path / "fits.h5l", "r") as f:
        same(f["fits"].to_arrow(), t2)


def test_nested_decimals_are_refused_by_name(tmp_path):
    t = pa.table({"s": pa.array([{"d": decimal.Decimal("1.5")}],
                                pa.struct([("d", pa.decimal128(5, 1))]))})
    pq.write_table(t, tmp_path / "n.parquet")
    with pytest.raises(ValueError, match=r'column "s\.d".*inside a struct or list'):
        h5lake.load(tmp_path / "n.parquet", tmp_path / "n.h5l")
    assert not (tmp_path / "n.h5l").exists()


def test_get_format(tmp_path, capsys):
    t = decimal_table(40)
    pq.write_table(t, tmp_path / "d.parquet")
    h5lake.load(tmp_path / "d.parquet", tmp_path / "s.h5l")
    src = f"{tmp_path}/s.h5l/d"
    # a name without .parquet: --format says what to write
    for out in ("table.out", "table"):
        assert cli.main(["get", "-q", "--format", "parquet", src, str(tmp_path / out)]) == 0
        same(pq.read_table(tmp_path / out), t)
    assert cli.main(["get", "-q", "--format", "PARQUET", src, str(tmp_path / "x.parquet")]) == 0
    h5lake.get(src, tmp_path / "api.bin", format="parquet")
    same(pq.read_table(tmp_path / "api.bin"), t)
    # --format hdf5 (or h5): the whole store as an HDF5 file, any name
    for fmt, out in (("hdf5", "whole.h5"), ("h5", "whole.data")):
        assert cli.main(["get", "-q", "--format", fmt, f"{tmp_path}/s.h5l", str(tmp_path / out)]) == 0
        assert h5lake.is_hdf5(tmp_path / out)
    capsys.readouterr()
    # unknown formats, and formats the name contradicts: exit 2, nothing written
    rc = cli.main(["get", "--format", "csv", src, str(tmp_path / "bad.csv")])
    err = capsys.readouterr().err
    assert rc == 2 and "--format" in err and "csv" in err
    for fmt, out in (("parquet", "bad.h5"), ("hdf5", "bad.parquet"), ("h5", "bad.pq")):
        rc = cli.main(["get", "--format", fmt, src, str(tmp_path / out)])
        err = capsys.readouterr().err
        assert rc == 2 and "h5lake get: error:" in err and out in err, err
        assert not (tmp_path / out).exists()
    with pytest.raises(ValueError, match="unknown format 'csv'"):
        h5lake.get(src, tmp_path / "bad.csv", format="csv")
    assert not [p for p in os.listdir(tmp_path) if p.startswith("bad")]


@pytest.mark.parametrize("as_integer", [False, True])
def test_decimals_stored_either_way_and_linked(tmp_path, as_integer):
    """pyarrow stores decimals as fixed-size byte arrays, or (asked to) as
    INT32/INT64; both load, by copy and (where this build has it) linked,
    a linked file's nulls kept."""
    t = decimal_table(400)
    pq.write_table(t, tmp_path / "d.parquet", row_group_size=150,
                   store_decimal_as_integer=as_integer)
    h5lake.load(tmp_path / "d.parquet", tmp_path / "copy.h5l", chunks=128)
    with h5lake.File(tmp_path / "copy.h5l", "r") as f:
        same(f["d"].to_arrow(), t)
    from h5lake import _core
    if not hasattr(_core, "link_parquet"):
        return
    h5lake.load(tmp_path / "d.parquet", tmp_path / "link.h5l", link=True)
    with h5lake.File(tmp_path / "link.h5l", "r") as f:
        d = f["d"]
        for name, _, _ in COLUMNS:
            assert d[name].tolist() == unscaled(t[name]), name
        same(d.to_arrow(), t)
        same(d.to_arrow(np.s_[140:333], fields=["price", "d256"]),
             t.slice(140, 193).select(["price", "d256"]))


def test_values_a_named_type_cannot_hold_are_an_error_not_nulls(tmp_path):
    """From an attacker's audit: arrow_types naming a type too small for
    the stored values answered them as nulls (u64 2**64-1 as decimal128)
    or cut them (0.5 as decimal128(10, 2) gave 0.00), without a word."""
    with h5lake.File(tmp_path / "n.h5l", "w") as f:
        d = f.create_dataset("t", data=np.array([(2**64 - 1, 0.5), (3, 1.0)],
                                                [("u", "<u8"), ("b", "<f8")]), chunks=(2,))
        for kinds in ({"u": "decimal128(38, 0)"}, {"u": "timestamp[ns, tz=UTC]"},
                      {"b": "decimal128(10, 2)"}):
            d.attrs["arrow_types"] = json.dumps(kinds)
            with pytest.raises((ValueError, TypeError), match="does not fit"):
                d.to_arrow()
        del d.attrs["arrow_types"]
        t = d.to_arrow()
        assert t["u"].to_pylist() == [2**64 - 1, 3] and t["b"].to_pylist() == [0.5, 1.0]


def test_a_time_zone_no_reader_takes_is_refused_by_name(tmp_path):
    """A time zone in arrow_types went to pyarrow as given: the table came
    out, and its first conversion to Python failed far from the cause."""
    with h5lake.File(tmp_path / "z.h5l", "w") as f:
        d = f.create_dataset("t", data=np.array([(0,), (86_400_000,)], [("ts", "<i8")]))
        for tz in ("+99:99", "+0530", "Europe Paris"):
            d.attrs["arrow_types"] = json.dumps({"ts": f"timestamp[ms, tz={tz}]"})
            with pytest.raises((ValueError, TypeError), match="unknown Arrow type"):
                d.to_arrow()
        d.attrs["arrow_types"] = json.dumps({"ts": "timestamp[ms, tz=+05:30]"})
        got = d.to_arrow()["ts"]
        assert got.type == pa.timestamp("ms", tz="+05:30")
        assert [v.isoformat() for v in got.to_pylist()] == [
            "1970-01-01T05:30:00+05:30", "1970-01-02T05:30:00+05:30"]
