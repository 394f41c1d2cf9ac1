"""Per-chunk statistics, chunk functions, and queries that skip chunks
(issue 21): every answer equals numpy over a full read, whatever the
chunking, layout, selection, or state the statistics were left in."""

import glob
import json
import math
import os
import re
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import h5lake

TABLE = np.dtype([("t", "<i8"), ("sensor", "<i4"), ("value", "<f4"), ("flag", "u1")])

CONDITIONS = [
    ("t > 50", lambda a: a["t"] > 50),
    ("(t >= 10) & (t < 20)", lambda a: (a["t"] >= 10) & (a["t"] < 20)),
    ("value > 1.5", lambda a: a["value"] > 1.5),
    ("(sensor == 3) | (flag != 0)", lambda a: (a["sensor"] == 3) | (a["flag"] != 0)),
    ("~(value < 0) & (sensor < 5)", lambda a: ~(a["value"] < 0) & (a["sensor"] < 5)),
    ("abs(value) * 2 > t / 10", lambda a: np.abs(a["value"].astype("f8")) * 2 > a["t"] / 10),
    ("0 < sensor <= 4", lambda a: (a["sensor"] > 0) & (a["sensor"] <= 4)),
    ("value != value", lambda a: np.isnan(a["value"])),
    ("t % 7 == 3", lambda a: a["t"] % 7 == 3),
]


def make_table(n, seed=0, nans=True):
    rng = np.random.default_rng(seed)
    a = np.zeros(n, TABLE)
    a["t"] = np.arange(n) + rng.integers(0, 3, n)
    a["sensor"] = rng.integers(0, 10, n)
    a["value"] = rng.normal(size=n).astype("f4")
    if nans and n:
        a["value"][rng.integers(0, n, max(1, n // 20))] = np.nan
    a["flag"] = rng.integers(0, 2, n)
    return a


def same(got, want):
    """Equal element by element, NaNs included (compared as stored bytes)."""
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape, (got.dtype, want.dtype, got.shape, want.shape)
    assert got.tobytes() == want.tobytes(), (got, want)


def chunk_records(path):
    """The statistics records stored as objects of their own."""
    return sorted(glob.glob(os.path.join(path, "**", ".h5lake", "stats", "*"), recursive=True))


def records_kept(path):
    """All statistics records: objects, and those kept in the documents of
    datasets written whole before a flush."""
    in_docs = 0
    for doc in glob.glob(os.path.join(path, "**", ".dataset.json"), recursive=True):
        in_docs += len(json.load(open(doc)).get("h5lake", {}).get("chunk_stats", {}))
    return len(chunk_records(path)) + in_docs


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(n=st.integers(1, 300), chunk=st.integers(1, 64), k=st.integers(0, len(CONDITIONS) - 1),
       columnar=st.booleans(), lo=st.integers(0, 300), span=st.integers(0, 300),
       seed=st.integers(0, 5), fields=st.lists(st.sampled_from(TABLE.names), min_size=1, max_size=4,
                                                 unique=True))
def test_queries_equal_numpy(tmp_path_factory, n, chunk, k, columnar, lo, span, seed, fields):
    path = str(tmp_path_factory.mktemp("q") / "q.h5l")
    a = make_table(n, seed)
    with h5lake.File(path, "w") as f:
        d = f.create_dataset("t", data=a, chunks=(chunk,), maxshape=(None,),
                             layout="columnar" if columnar else None)
        text, fn = CONDITIONS[k]
        mask = fn(a)
        got = d.read_where(text)
        same(got, a[mask])
        np.testing.assert_array_equal(d.get_where_list(text), np.nonzero(mask)[0])
        same(np.array(list(d.where(text)), dtype=TABLE), a[mask])
        # Some fields, in the order asked for (a columnar dataset reads
        # only their columns and the condition's).
        want = np.empty(int(mask.sum()), [(f, TABLE[f]) for f in fields])
        for f in fields:
            want[f] = a[f][mask]
        same(d.read_where(text, fields=fields), want)
        same(d.read_where(text, fields=fields[0]), a[fields[0]][mask])
        # Over a box of rows.
        lo = min(lo, n)
        hi = min(n, lo + span)
        sub = a[lo:hi]
        same(d.read_where(text, sel=np.s_[lo:hi]), sub[fn(sub)])
        np.testing.assert_array_equal(d.get_where_list(text, sel=np.s_[lo:hi]),
                                      lo + np.nonzero(fn(sub))[0])
        # Aggregates equal numpy's, from statistics or data.
        for field in ("t", "sensor", "flag"):
            assert d.min(field) == a[field].min()
            assert d.max(field) == a[field].max()
            assert d.sum(field) == int(a[field].astype(np.int64).sum())
            if hi > lo:
                assert d.max(field, sel=np.s_[lo:hi]) == sub[field].max()
        s = d.stats(field="value")
        finite = a["value"][~np.isnan(a["value"])]
        assert s["nan_count"] == int(np.isnan(a["value"]).sum())
        if len(finite):
            assert s["min"] == finite.min() and s["max"] == finite.max()
            assert math.isclose(s["sum"], float(finite.astype("f8").sum()), rel_tol=1e-9, abs_tol=1e-9)
        assert math.isnan(d.max("value")) == bool(np.isnan(a["value"]).any())


def test_statistics_skip_chunks_and_answer_aggregates_without_reading(tmp_path):
    path = str(tmp_path / "s.h5l")
    a = make_table(10_000, nans=False)
    with h5lake.File(path, "w") as f:
        d = f.create_dataset("t", data=a, chunks=(1000,))
    assert records_kept(path) == 10
    with h5lake.File(path, "r") as f:
        d = f["t"]
        got = d.read_where("(t >= 4000) & (t < 4010)")
        np.testing.assert_array_equal(got, a[(a["t"] >= 4000) & (a["t"] < 4010)])
        # t rises with the row: one chunk (two at a boundary) can match.
        assert d._last_query["chunks_read"] <= 2
        assert d._last_query["chunks_skipped"] >= 8
        agg = d.stats(sel=np.s_[:])
        assert agg["chunks_read"] == 0 and agg["chunks_from_stats"] == 10
        assert d.max("value") == a["value"].max()
        # A box that cuts chunks reads only the two cut ones.
        agg = d.stats(sel=np.s_[500:5500])
        assert agg["chunks_read"] == 2 and agg["chunks_from_stats"] == 4
        assert agg["fields"]["t"]["max"] == a["t"][500:5500].max()
        table = d.stats()
        assert table.num_rows == 10
        assert table.column("t.max").to_pylist() == [int(a["t"][i:i + 1000].max()) for i in range(0, 10_000, 1000)]
        assert table.column("start").to_pylist() == [[i] for i in range(0, 10_000, 1000)]


def test_unwritten_chunks_count_as_the_fill_value(tmp_path):
    with h5lake.File(str(tmp_path / "f.h5l"), "w") as f:
        d = f.create_dataset("x", shape=(100, 100), dtype="f8", chunks=(10, 10), fillvalue=-1.0)
        d[20:30, 40:45] = 7.0
        full = d[...]
        assert d.min() == full.min() == -1.0
        assert d.max() == 7.0
        assert d.sum() == full.sum()
        assert d.count() == 10_000
        np.testing.assert_array_equal(d.get_where_list("value > 0"), np.argwhere(full > 0))
        np.testing.assert_array_equal(d.get_where_list("value < 0", sel=np.s_[15:35, 38:47]),
                                      np.argwhere(full[15:35, 38:47] < 0) + [15, 38])
        np.testing.assert_array_equal(d.read_where("value == -1")[:5], [-1.0] * 5)
        assert len(d.read_where("value == -1")) == 10_000 - 50


def test_records_that_no_longer_describe_a_chunk_are_not_trusted(tmp_path):
    path = str(tmp_path / "r.h5l")
    a = np.arange(1000, dtype="i4")
    # Durable: every record is an object of its own, for the test to
    # tamper with.
    with h5lake.File(path, "w", durable=True) as f:
        d = f.create_dataset("x", data=a, chunks=(100,), maxshape=(None,))
        # Overwrite smaller, in part (an in-place edit) and whole.
        d[5:7] = [-50, -60]
        d[100:200] = np.arange(100, dtype="i4") - 1000
        assert d.min() == -1000
        np.testing.assert_array_equal(d.get_where_list("value < -40"),
                                      np.r_[5, 6, 100:200])
        # Shrink, then grow again: the edge chunk's old elements are gone.
        d.resize((950,))
        assert d.max() == 949
        d.resize((1000,))
        assert d.max() == d[...].max()
        np.testing.assert_array_equal(d.read_where("value > 948"), d[...][d[...] > 948])
    # A record replaced by one with too-narrow bounds, as a crash between
    # the chunk's write and its record's could leave: the version it names
    # is not the chunk's, so it is recomputed.
    rec_path = [p for p in chunk_records(path) if p.endswith("/3")][0]
    rec = json.load(open(rec_path))
    rec["fields"]["value"]["max"] = -1
    rec["fields"]["value"]["min"] = -2
    rec["version"] = "0-0-0-0"
    json.dump(rec, open(rec_path, "w"))
    # And one removed.
    os.remove([p for p in chunk_records(path) if p.endswith("/4")][0])
    with h5lake.File(path, "r") as f:
        d = f["x"]
        np.testing.assert_array_equal(d.get_where_list("(value >= 300) & (value < 302)"), [300, 301])
        assert d.stats(sel=np.s_[:])["chunks_read"] == 2
        np.testing.assert_array_equal(d.get_where_list("value == 450"), [450])
    with h5lake.File(path, "r+") as f:
        # A writable open stores the recomputed records back.
        f["x"].max()
        assert f["x"].stats(sel=np.s_[:])["chunks_read"] == 0


WRITER = r"""
import sys, numpy as np, h5lake
path, k = sys.argv[1], int(sys.argv[2])
with h5lake.File(path, "r+") as f:
    d = f["x"]
    for rep in range(20):
        # Each writer owns every 4th element of each chunk: all writers
        # edit the same chunks at once.
        d[k::4] = np.full(len(range(k, 400, 4)), k * 1000 + rep, dtype="i8")
"""


def test_concurrent_writers_to_the_same_chunks_leave_exact_statistics(tmp_path):
    path = str(tmp_path / "c.h5l")
    with h5lake.File(path, "w") as f:
        f.create_dataset("x", shape=(400,), dtype="i8", chunks=(100,))
    procs = [subprocess.Popen([sys.executable, "-c", WRITER, path, str(k)]) for k in range(4)]
    for p in procs:
        assert p.wait(timeout=120) == 0
    with h5lake.File(path, "r") as f:
        d = f["x"]
        full = d[...]
        assert set(np.unique(full)) == {k * 1000 + 19 for k in range(4)}
        assert d.min() == full.min() and d.max() == full.max() and d.sum() == full.sum()
        for k in range(4):
            np.testing.assert_array_equal(d.get_where_list(f"value == {k * 1000 + 19}"),
                                          np.arange(k, 400, 4))
        table = d.stats()
        for i in range(4):
            assert table.column("value.max")[i].as_py() == full[i * 100:(i + 1) * 100].max()


def test_chunk_functions(tmp_path):
    rng = np.random.default_rng(1)
    dt = np.dtype([("height", "f4"), ("temp", "f4"), ("px", "f4"), ("py", "f4"), ("ok", "?")])
    a = np.zeros(5000, dt)
    for k in ("height", "temp", "px", "py"):
        a[k] = rng.normal(300, 20, 5000) if k == "temp" else rng.normal(size=5000)
    a["ok"] = rng.random(5000) > 0.1
    fns = {"max_wave": "max(abs(height))", "n_hot": "sum(temp > 300)",
           "mean_e": "mean(px*px + py*py)", "n_ok": "count(ok)", "all_ok": "all(ok)",
           "any_cold": "any(temp < 200)", "lowest": "min(height)"}
    with h5lake.File(str(tmp_path / "f.h5l"), "w") as f:
        d = f.create_dataset("w", data=a, chunks=(1000,), stats=fns)
        agg = d.stats(sel=np.s_[:])
        assert agg["chunks_read"] == 0
        v = agg["functions"]
        assert v["max_wave"] == pytest.approx(np.abs(a["height"]).max())
        assert v["n_hot"] == int((a["temp"] > 300).sum())
        e = a["px"].astype("f8") ** 2 + a["py"].astype("f8") ** 2
        assert v["mean_e"] == pytest.approx(e.mean(), rel=1e-9)
        assert v["n_ok"] == int(a["ok"].sum())
        assert v["all_ok"] is False and v["any_cold"] == bool((a["temp"] < 200).any())
        assert v["lowest"] == pytest.approx(a["height"].min())
        # Per chunk, and over a box that cuts chunks.
        table = d.stats()
        assert table.column("n_hot").to_pylist() == [int((a["temp"][i:i + 1000] > 300).sum())
                                                      for i in range(0, 5000, 1000)]
        part = d.stats(sel=np.s_[1500:3500])["functions"]
        assert part["n_hot"] == int((a["temp"][1500:3500] > 300).sum())
        # Bool fields in conditions.
        np.testing.assert_array_equal(d.get_where_list("ok & (height > 2)"),
                                      np.nonzero(a["ok"] & (a["height"] > 2))[0])


@pytest.mark.parametrize("fns, where", [
    ({"bad": "max(abs(height)"}, "position 15"),
    ({"bad": "max(nope)"}, "no field 'nope'".replace("'", '"')),
    ({"bad": "height + 1"}, "position 0"),
    ({"bad": "max(min(height))"}, "inside another reduction"),
    ({"height": "max(height)"}, "name of a field"),
    ({"chunk": "max(height)"}, "taken by the per-chunk table"),
    ({"start": "min(height)"}, "taken by the per-chunk table"),
    ({"bad": ""}, "position 0"),
    ({"bad": "   "}, "position"),
    ({"bad": "max"}, "position 0"),
])
def test_bad_chunk_functions_are_refused_at_create(tmp_path, fns, where):
    with h5lake.File(str(tmp_path / "f.h5l"), "w") as f:
        with pytest.raises(ValueError, match=where):
            f.create_dataset("w", shape=(10,), dtype=[("height", "f4")], stats=fns)
        assert "w" not in f
        with pytest.raises(TypeError):
            f.create_dataset("v", shape=(10,), dtype="f4", stats="yes")


def test_bad_conditions_say_where_and_write_nothing(tmp_path):
    path = str(tmp_path / "b.h5l")
    a = make_table(100)
    with h5lake.File(path, "w") as f:
        f.create_dataset("t", data=a, chunks=(10,))
    before = {p: os.stat(p).st_mtime_ns for p in glob.glob(path + "/**", recursive=True)}
    with h5lake.File(path, "r") as f:
        d = f["t"]
        with pytest.raises(ValueError, match=r'no field "x".*position 0'):
            d.read_where("x > 1")
        with pytest.raises(ValueError, match="position 4"):
            d.read_where("t > )")
        with pytest.raises(ValueError, match="not a condition"):
            d.read_where("t + 1")
        with pytest.raises(ValueError, match="position 10"):
            d.get_where_list("(t > 1) & sensor")
        with pytest.raises(ValueError, match="box"):
            d.read_where("t > 1", sel=np.s_[::2])
        with pytest.raises(ValueError, match="name the field"):
            d.max()
    after = {p: os.stat(p).st_mtime_ns for p in glob.glob(path + "/**", recursive=True)}
    assert before == after


def test_stats_false_keeps_none_and_queries_stay_exact(tmp_path):
    path = str(tmp_path / "n.h5l")
    a = make_table(1000)
    with h5lake.File(path, "w") as f:
        d = f.create_dataset("t", data=a, chunks=(100,), stats=False)
        assert chunk_records(path) == []
        same(d.read_where("sensor == 2"), a[a["sensor"] == 2])
        assert d.max("t") == a["t"].max()
        assert d.stats(sel=np.s_[:])["chunks_read"] == 10
        with pytest.raises(TypeError, match="no statistics"):
            d.stats()


def test_nested_fields_and_n_d(tmp_path):
    dt = np.dtype([("pos", [("x", "<f8"), ("y", ">i2")]), ("id", "<u8")])
    a = np.zeros((20, 30), dt)
    a["pos"]["x"] = np.arange(600).reshape(20, 30) / 7
    a["pos"]["y"] = np.arange(600).reshape(20, 30) % 13
    a["id"] = np.uint64(2**63) + np.arange(600, dtype=np.uint64).reshape(20, 30)
    with h5lake.File(str(tmp_path / "n.h5l"), "w") as f:
        d = f.create_dataset("p", data=a, chunks=(7, 8))
        mask = (a["pos"]["x"] > 50) & (a["pos"]["y"] < 4)
        np.testing.assert_array_equal(d.get_where_list("(pos.x > 50) & (pos.y < 4)"), np.argwhere(mask))
        np.testing.assert_array_equal(d.read_where("(pos.x > 50) & (pos.y < 4)"), a[mask])
        assert d.max("id") == a["id"].max() and d.min("id") == 2**63
        np.testing.assert_array_equal(d.get_where_list(f"id == {2**63 + 599}"), [[19, 29]])
        assert d.max("pos.y", sel=np.s_[3:9, 2:20]) == a["pos"]["y"][3:9, 2:20].max()


def test_statistics_on_s3(s3_root):
    a = make_table(2000, nans=False)
    with h5lake.File(s3_root + "/s.h5l", "w") as f:
        d = f.create_dataset("t", data=a, chunks=(500,))
        np.testing.assert_array_equal(d.read_where("(t >= 600) & (t < 700)"),
                                      a[(a["t"] >= 600) & (a["t"] < 700)])
        assert d._last_query["chunks_skipped"] >= 2
        assert d.stats(sel=np.s_[:])["chunks_read"] == 0
        assert d.max("t") == a["t"].max()


def test_h5pyd_read_where_through_the_server(tmp_path):
    """h5pyd's Table.read_where against h5lake serve equals numpy on the
    same data; the server answers it from the chunks that can match, and
    serves the statistics at /datasets/<id>/stats."""
    h5pyd = pytest.importorskip("h5pyd")
    from servers import Server
    user, pw = "test_user1", "test"
    s = Server(tmp_path / "bucket")
    try:
        assert s.request("PUT", "/", {"folder": 1}, params={"domain": "/home/"})[0] == 201
        assert s.request("PUT", "/", {"folder": 1, "owner": user},
                         params={"domain": f"/home/{user}/"})[0] == 201
        domain = f"/home/{user}/q.h5"
        a = make_table(20_000, nans=False)
        with h5pyd.File(domain, "w", endpoint=s.endpoint, username=user, password=pw) as f:
            f.create_table("t", data=a, dtype=TABLE, chunks=(2000,))
        with h5pyd.File(domain, "r", endpoint=s.endpoint, username=user, password=pw) as f:
            t = f["t"]
            for text, fn in CONDITIONS[:7]:
                got = np.array(list(t.read_where(text)), dtype=TABLE)
                same(got, a[fn(a)])
            got = np.array(list(t.read_where("(t >= 5000) & (t < 5100)", limit=7)), dtype=TABLE)
            same(got, a[(a["t"] >= 5000) & (a["t"] < 5100)][:7])
            did = t.id.id
        # h5pyd reads a table in pages of ~1 MB and took an empty binary
        # page for a failed read: an empty answer comes as JSON. (h5pyd
        # 1.0 also stops at the first page with fewer matches than rows,
        # so only a raw request sees matches past it.)
        b = make_table(150_000, nans=False)
        with h5pyd.File(domain, "a", endpoint=s.endpoint, username=user, password=pw) as f:
            f.create_table("big", data=b, dtype=TABLE, chunks=(10_000,))
            bid = f["big"].id.id
        with h5pyd.File(domain, "r", endpoint=s.endpoint, username=user, password=pw) as f:
            assert len(list(f["big"].read_where("t < 0"))) == 0
            got = np.array(list(f["big"].read_where("t < 300")), dtype=TABLE)
            same(got, b[b["t"] < 300])
        for headers in ({}, {"Accept": "application/octet-stream"}):
            status, _, rsp = s.request("GET", f"/datasets/{bid}/value", user=user, headers=headers,
                                       params={"domain": domain, "select": "[0:150000]",
                                               "query": "(t >= 120000) & (t < 120050)"})
            assert status == 200
            want = np.nonzero((b["t"] >= 120000) & (b["t"] < 120050))[0]
            if headers:
                assert np.frombuffer(rsp if isinstance(rsp, bytes) else bytes(rsp), dtype=TABLE)["t"].tolist() \
                    == b["t"][want].tolist()
            else:
                assert rsp["index"] == want.tolist()
        # fields= picks members of each match, in the order asked for.
        q = {"domain": domain, "query": "(t > 100) & (t < 110)", "fields": "value:t"}
        want = a[(a["t"] > 100) & (a["t"] < 110)]
        status, _, rsp = s.request("GET", f"/datasets/{did}/value", user=user, params=q)
        assert status == 200 and rsp["value"] == [[float(v), int(t)] for v, t in want[["value", "t"]]]
        status, _, rsp = s.request("GET", f"/datasets/{did}/value", user=user, params=q,
                                   headers={"Accept": "application/octet-stream"})
        got = np.frombuffer(bytes(rsp), dtype=[("value", "<f4"), ("t", "<i8")])
        assert got["t"].tolist() == want["t"].tolist() and got["value"].tolist() == want["value"].tolist()
        status, _, rsp = s.request("GET", f"/datasets/{did}/stats", user=user,
                                   params={"domain": domain})
        assert status == 200, rsp
        assert rsp["total"]["fields"]["t"]["max"] == int(a["t"].max())
        assert rsp["total"]["fields"]["sensor"]["sum"] == int(a["sensor"].sum())
        assert [c["fields"]["t"]["min"] for c in rsp["chunks"]] == \
            [int(a["t"][i:i + 2000].min()) for i in range(0, 20_000, 2000)]
        # A selective query reads a chunk or two of ten: the records of all
        # ten are current after the first request, so the answer comes from them.
        assert rsp["total"]["chunks_read"] + rsp["total"]["chunks_from_stats"] == 10
        status, _, rsp = s.request("GET", f"/datasets/{did}/value", user=user, params={
            "domain": domain, "query": "(t > 100) & (t < 105)", "select": "[0:20000]"})
        assert status == 200 and rsp["index"] == list(np.nonzero((a["t"] > 100) & (a["t"] < 105))[0])
        # N-D datasets of any numeric type answer too: index holds each
        # match's coordinates; strided selections keep only their elements.
        g = np.random.default_rng(5).random((50, 40))
        with h5pyd.File(domain, "a", endpoint=s.endpoint, username=user, password=pw) as f:
            f.create_dataset("grid", data=g, chunks=(10, 10))
            gid = f["grid"].id.id
        sub = g[5:45:2, 3:40]
        status, _, rsp = s.request("GET", f"/datasets/{gid}/value", user=user, params={
            "domain": domain, "query": "value > 0.9", "select": "[5:45:2,3:40]"})
        assert status == 200, rsp
        want = [[5 + 2 * i, 3 + j] for i, j in np.argwhere(sub > 0.9)]
        assert rsp["index"] == want
        assert rsp["value"] == [float(g[i, j]) for i, j in want]
        status, _, rsp = s.request("GET", f"/datasets/{gid}/value", user=user, params={
            "domain": domain, "query": "value > 0.9", "select": "[0:50,0:40]", "Limit": "3"})
        assert rsp["index"] == [[int(i), int(j)] for i, j in np.argwhere(g > 0.9)[:3]]
        # Bad conditions are 400s; stats of a missing dataset a 404.
        for bad in ["t >", "nope > 1", "t + 1", "(" * 5000 + "t > 1" + ")" * 5000,
                    "~" * 5000 + "(t > 1)", " | ".join(["t > 1"] * 2000)]:
            assert s.request("GET", f"/datasets/{did}/value", user=user,
                             params={"domain": domain, "query": bad})[0] == 400, bad[:40]
        # A table with a text column: queried on its numbers, answering the
        # fields named, or whole rows (the text read by index).
        vt = np.array([(i, f"row {i}") for i in range(100)],
                      dtype=[("n", "i4"), ("s", h5pyd.string_dtype())])
        with h5pyd.File(domain, "a", endpoint=s.endpoint, username=user, password=pw) as f:
            f.create_dataset("texts", data=vt, chunks=(25,))
            vid = f["texts"].id.id
        status, _, rsp = s.request("GET", f"/datasets/{vid}/value", user=user, params={
            "domain": domain, "query": "n > 95", "fields": "n"})
        assert status == 200 and rsp["index"] == [96, 97, 98, 99], rsp
        status, _, rsp = s.request("GET", f"/datasets/{vid}/value", user=user, params={
            "domain": domain, "query": "n > 95"})
        assert status == 200 and rsp["value"] == [[i, f"row {i}"] for i in range(96, 100)], rsp
        assert s.request("GET", f"/datasets/{did}/stats", user=None, params={"domain": domain})[0] == 401
        assert s.request("GET", f"/datasets/{did}/stats", user="test_user2", params={"domain": domain})[0] == 403
    finally:
        s.stop()


def _cli(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", "h5lake", *args], capture_output=True,
                          text=True, timeout=300, cwd=cwd)


def test_the_command_line(tmp_path):
    import h5py
    import pyarrow.csv as pcsv
    import pyarrow.parquet as pq
    a = make_table(5000, nans=False)
    with h5py.File(tmp_path / "run.h5", "w") as f:
        f.create_dataset("events", data=a, chunks=(500,))
    # Linked: the data stays in the file; its chunks have no records yet.
    r = _cli("load", "--link", "--hyperchunk", "0", "-q", str(tmp_path / "run.h5"),
             str(tmp_path / "run.h5l"))
    assert r.returncode == 0, r.stderr
    store = tmp_path / "run.h5l"
    assert chunk_records(str(store)) == []
    r = _cli("stats", "--build", str(store))
    assert r.returncode == 0, r.stderr
    assert "10 computed" in r.stderr
    assert len(chunk_records(str(store))) == 10
    r = _cli("stats", "--build", "-q", str(store / "events"))
    assert r.returncode == 0 and r.stderr == ""
    # A dataset that keeps no statistics is named, not passed over in silence.
    with h5lake.File(str(store), "r+") as f:
        f.create_dataset("plain", data=np.arange(10), stats=False)
    r = _cli("stats", "--build", "-q", str(store))
    assert r.returncode == 0 and "/plain: created with stats=False" in r.stderr
    r = _cli("stats", "--build", "-q", str(store / "plain"))
    assert r.returncode == 2 and "no statistics" in r.stderr
    with h5lake.File(str(store), "r") as f:
        assert f["events"].stats(sel=np.s_[:])["chunks_read"] == 0
    r = _cli("stats", "--json", str(store / "events"))
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["total"]["fields"]["t"]["max"] == int(a["t"].max())
    assert [c["t.min"] for c in doc["chunks"]] == [int(a["t"][i:i + 500].min()) for i in range(0, 5000, 500)]
    want = a[(a["t"] > 1000) & (a["sensor"] == 7)]
    r = _cli("query", str(store / "events"), "(t > 1000) & (sensor == 7)", "--fields", "t,value",
             "-o", str(tmp_path / "hits.parquet"))
    assert r.returncode == 0, r.stderr
    t = pq.read_table(tmp_path / "hits.parquet")
    assert t.column_names == ["t", "value"]
    np.testing.assert_array_equal(t.column("t").to_numpy(), want["t"])
    r = _cli("query", "-q", "--coords", str(store / "events"), "(t > 1000) & (sensor == 7)")
    assert r.returncode == 0, r.stderr
    import io
    rows = pcsv.read_csv(io.BytesIO(r.stdout.encode()))
    np.testing.assert_array_equal(rows.column("dim0").to_numpy(),
                                  np.nonzero((a["t"] > 1000) & (a["sensor"] == 7))[0])
    for bad, msg in [(["query", str(store / "events"), "t >> 1"], "position"),
                     (["query", str(store / "events"), "nope > 1"], 'no field "nope"'),
                     (["query", str(store), "t > 1"], "name a dataset"),
                     (["query", str(store / "events"), "t > 1", "-o", str(tmp_path / "x.txt")], ".parquet or .csv"),
                     (["stats", str(tmp_path / "missing.h5l")], "no such")]:
        r = _cli(*bad)
        assert r.returncode == 2 and msg in r.stderr, (bad, r.stderr)
    assert not (tmp_path / "x.txt").exists()


def test_query_output_keeps_a_tables_nulls_and_arrow_types(tmp_path):
    """`h5lake query -o x.parquet` of a table loaded from Parquet wrote
    decimals and timestamps as their integers (a decimal 1000 times its
    value) and nulls as 0; to CSV, a list member failed after the header
    was written. The answer is the rows as the table holds them."""
    import decimal
    import pyarrow as pa
    import pyarrow.csv as pcsv
    import pyarrow.parquet as pq
    n = 40
    src = pa.table({
        "id": pa.array(range(n), pa.int64()),
        "ts": pa.array([None if i % 7 == 0 else i * 1_000_000 for i in range(n)],
                       pa.timestamp("us", tz="UTC")),
        "dec": pa.array([None if i % 5 == 0 else decimal.Decimal(i * 37 - 700) / 1000
                         for i in range(n)], pa.decimal128(9, 3)),
        "x": pa.array([None if i % 3 == 0 else i / 4 for i in range(n)], pa.float64()),
        "tags": pa.array([[i, i + 1] if i % 2 else None for i in range(n)], pa.list_(pa.int64())),
    })
    pq.write_table(src, tmp_path / "src.parquet", row_group_size=16)
    r = _cli("load", "-q", str(tmp_path / "src.parquet"), str(tmp_path / "t.h5l"))
    assert r.returncode == 0, r.stderr
    [name] = h5lake.File(str(tmp_path / "t.h5l"), "r").keys()
    want = src.filter(pa.compute.greater(src["id"], 20))
    r = _cli("query", "-q", "--coords", str(tmp_path / "t.h5l" / name), "id > 20",
             "-o", str(tmp_path / "q.parquet"))
    assert r.returncode == 0, r.stderr
    got = pq.read_table(tmp_path / "q.parquet")
    assert got.column_names == ["dim0", *src.column_names]
    assert got["dim0"].to_pylist() == list(range(21, n))
    assert got.drop_columns(["dim0"]).equals(want), got
    r = _cli("query", "-q", str(tmp_path / "t.h5l" / name), "id > 20")
    assert r.returncode == 0, r.stderr
    import io
    rows = pcsv.read_csv(io.BytesIO(r.stdout.encode()))
    assert rows["tags"].to_pylist() == ["" if i % 2 == 0 else f"[{i}, {i + 1}]"
                                        for i in range(21, n)]
    assert rows["x"].null_count == want["x"].null_count


def test_query_to_csv_spreads_nested_and_array_members_over_columns(tmp_path):
    pcsv = pytest.importorskip("pyarrow.csv")
    dt = np.dtype([("id", "i4"), ("pos", [("x", "f8"), ("y", "f8")]), ("v", "i2", (3,))])
    a = np.zeros(6, dt)
    a["id"] = np.arange(6)
    a["pos"]["x"] = np.arange(6) * 0.5
    a["v"] = np.arange(18).reshape(6, 3)
    store = tmp_path / "n.h5l"
    with h5lake.File(str(store), "w") as f:
        f.create_dataset("t", data=a, chunks=(4,))
    r = _cli("query", "-q", str(store / "t"), "id >= 4", "-o", str(tmp_path / "hits.csv"))
    assert r.returncode == 0, r.stderr
    rows = pcsv.read_csv(tmp_path / "hits.csv")
    assert rows.column_names == ["id", "pos.x", "pos.y", "v[0]", "v[1]", "v[2]"]
    assert rows.column("pos.x").to_pylist() == [2.0, 2.5]
    assert rows.column("v[2]").to_pylist() == [14, 17]


KILLED_WRITER = r"""
import sys, numpy as np, h5lake
path = sys.argv[1]
rng = np.random.default_rng(int(sys.argv[2]))
with h5lake.File(path, "r+") as f:
    d = f["x"]
    i = 0
    while True:
        # Whole chunks, parts of chunks, values far outside earlier ranges.
        lo = int(rng.integers(0, 900))
        hi = lo + int(rng.integers(1, 300))
        d[lo:min(hi, 1000)] = rng.normal(0, 10 ** (i % 6), min(hi, 1000) - lo)
        i += 1
        print(i, flush=True)
"""


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_kill9_mid_write_leaves_statistics_that_cover_the_data(tmp_path, seed):
    import signal
    path = str(tmp_path / "k.h5l")
    with h5lake.File(path, "w") as f:
        f.create_dataset("x", shape=(1000,), dtype="f8", chunks=(100,))
    proc = subprocess.Popen([sys.executable, "-c", KILLED_WRITER, path, str(seed)],
                            stdout=subprocess.PIPE, text=True)
    for _ in range(20 + 15 * seed):
        assert proc.stdout.readline(), "the writer died on its own"
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    with h5lake.File(path, "r") as f:
        d = f["x"]
        full = d[...]
        assert d.min() == full.min() and d.max() == full.max()
        for cut in (-100.0, 0.0, 3.0, 1e4):
            np.testing.assert_array_equal(d.get_where_list(f"value > {cut}"),
                                          np.nonzero(full > cut)[0])
        table = d.stats()
        for row in table.to_pylist():
            lo = row["start"][0]
            part = full[lo:lo + 100]
            assert row["value.min"] <= part.min() and row["value.max"] >= part.max()


def test_to_arrow_where(tmp_path):
    import pyarrow as pa
    a = make_table(3000, nans=False)
    with h5lake.File(str(tmp_path / "a.h5l"), "w") as f:
        d = f.create_dataset("t", data=a, chunks=(500,))
        mask = (a["sensor"] == 3) & (a["t"] > 100)
        t = d.to_arrow(where="(sensor == 3) & (t > 100)", fields=["t", "value"])
        assert t.column_names == ["t", "value"]
        np.testing.assert_array_equal(t.column("t").to_numpy(), a["t"][mask])
        np.testing.assert_array_equal(d.to_pandas(where="sensor == 3", sel=np.s_[1000:2000])["t"],
                                      a["t"][1000:2000][a["sensor"][1000:2000] == 3])
        # A columnar table keeps its nulls and Arrow types.
        tbl = pa.table({"x": pa.array([1, None, 3, 4, None, 6], pa.int32()),
                        "y": pa.array([0.5, 1.5, None, 3.5, 4.5, 5.5])})
        c = f.create_dataset("c", data=tbl, chunks=(2,))
        got = c.to_arrow(where="y > 1")
        assert got.schema == tbl.schema
        assert got.to_pylist() == [{"x": None, "y": 1.5}, {"x": 4, "y": 3.5},
                                   {"x": None, "y": 4.5}, {"x": 6, "y": 5.5}]
        assert c.to_arrow(where="x > 100").num_rows == 0
        # Chunks written from Arrow get their records as they are written.
        agg = c.stats(sel=np.s_[:])
        assert agg["chunks_read"] == 0 and agg["chunks_from_stats"] == 3
        assert agg["fields"]["x"]["max"] == 6 and agg["fields"]["y"]["min"] == 0.0   # a null reads as 0
        big = pa.table({"v": pa.array(np.arange(10_000, dtype="i8"))})
        e = f.create_dataset("e", data=big, chunks=(1000,), maxshape=(None,))
        e.append(pa.table({"v": pa.array(np.arange(500, dtype="i8") + 10_000)}))
        agg = e.stats(sel=np.s_[:])
        assert agg["fields"]["v"]["max"] == 10_499 and agg["fields"]["v"]["count"] == 10_500
        assert agg["chunks_from_stats"] >= 10


def test_scalar_and_empty_datasets(tmp_path):
    with h5lake.File(str(tmp_path / "s.h5l"), "w") as f:
        d = f.create_dataset("s", data=np.float64(3.5))
        assert d.max() == d.min() == 3.5 and d.count() == 1
        np.testing.assert_array_equal(d.read_where("value > 1"), [3.5])
        assert d.get_where_list("value > 1").shape == (1, 0)
        assert len(d.read_where("value > 4")) == 0
        e = f.create_dataset("e", shape=(0,), dtype="i4", chunks=(10,), maxshape=(None,))
        assert len(e.read_where("value > 1")) == 0 and e.count() == 0 and e.sum() == 0
        with pytest.raises(ValueError, match="empty"):
            e.max()


def test_text_fields_in_conditions(tmp_path):
    dt = np.dtype([("station", "S4"), ("temp", "<f4")])
    a = np.zeros(1000, dt)
    a["station"] = [b"KSEA" if i % 3 == 0 else b"KPD" for i in range(1000)]
    a["temp"] = np.arange(1000) / 10
    with h5lake.File(str(tmp_path / "t.h5l"), "w") as f:
        d = f.create_dataset("w", data=a, chunks=(100,))
        same(d.read_where("(station == b'KSEA') & (temp > 50)"),
             a[(a["station"] == b"KSEA") & (a["temp"] > 50)])
        same(d.read_where("station != 'KSEA' AND temp < 1"), a[(a["station"] != b"KSEA") & (a["temp"] < 1)])
        with pytest.raises(ValueError, match="compares text with a number"):
            d.read_where("station > 1")
        with pytest.raises(TypeError, match="text"):
            d.max("station")
        table = d.stats()
        assert table.column("station.count").to_pylist() == [100] * 10
        assert d.max("temp") == a["temp"].max()


def test_columnar_queries_read_only_the_columns_they_need(tmp_path):
    pq = pytest.importorskip("pyarrow.parquet")
    path = str(tmp_path / "c.h5l")
    a = make_table(1000, nans=False)
    with h5lake.File(path, "w") as f:
        d = f.create_dataset("t", data=a, chunks=(250,), layout="columnar")
        files = d.parquet_files()
    # Break the page headers of the `sensor` column in every chunk: a read
    # that touches that column fails, one that does not still answers.
    for name in files:
        col = pq.ParquetFile(name).metadata.row_group(0).column(TABLE.names.index("sensor"))
        at = col.dictionary_page_offset or col.data_page_offset
        st = os.stat(name)
        with open(name, "r+b") as fh:
            fh.seek(at)
            fh.write(b"\xff" * 16)
        # (Same version as before, so that the chunks' statistics records
        # still stand and are not recomputed from whole chunks.)
        os.utime(name, ns=(st.st_atime_ns, st.st_mtime_ns))
    with h5lake.File(path, "r") as f:
        d = f["t"]
        mask = a["value"] > 0.5
        same(d.read_where("value > 0.5", fields=["t", "flag"]), a[["t", "flag"]][mask].astype(
            [("t", TABLE["t"]), ("flag", TABLE["flag"])]))
        np.testing.assert_array_equal(d.get_where_list("(t > 100) & (value < 0)"),
                                      np.nonzero((a["t"] > 100) & (a["value"] < 0))[0])
        with pytest.raises(OSError):
            d.read_where("value > 0.5")
        with pytest.raises(OSError):
            d.read_where("sensor > 3", fields=["t"])


def test_null_counts_of_columnar_chunks(tmp_path):
    """Columnar chunks written from Arrow, recomputed from the stored
    Parquet object, and linked from Parquet files all count their nulls
    (nested members too); nulls read, and are bounded, as the fill value."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    rng = np.random.default_rng(3)
    n = 1000
    x = rng.integers(0, 100, n)
    xn = rng.random(n) < 0.2
    sn = rng.random(n) < 0.1
    qn = rng.random(n) < 0.3
    tbl = pa.table({
        "x": pa.array(x, pa.int32(), mask=xn),
        "s": pa.StructArray.from_arrays(
            [pa.array(rng.random(n), mask=qn), pa.array(np.arange(n, dtype="i8"))], ["q", "k"],
            mask=pa.array(sn)),
    })

    def want(lo, hi):
        return {"x": int(xn[lo:hi].sum()), "s.q": int((sn | qn)[lo:hi].sum()),
                "s.k": int(sn[lo:hi].sum())}

    path = tmp_path / "n.h5l"
    with h5lake.File(str(path), "w", durable=True) as f:
        d = f.create_dataset("t", data=tbl, chunks=(250,))
        for row in d.stats().to_pylist():
            lo = row["start"][0]
            assert {k: row[f"{k}.null_count"] for k in ("x", "s.q", "s.k")} == want(lo, lo + 250)
        agg = d.stats(sel=np.s_[:])
        assert agg["chunks_read"] == 0
        assert {k: agg["fields"][k]["null_count"] for k in ("x", "s.q", "s.k")} == want(0, n)
        assert agg["fields"]["x"]["count"] == n and agg["fields"]["x"]["min"] == 0   # null reads as 0
        assert d.stats(sel=np.s_[100:600], field="x")["null_count"] == int(xn[100:600].sum())
        # Rows written through the HDF5-shaped API hold values: no nulls.
        d[0:250] = d[0:250]
        assert d.stats().to_pylist()[0]["x.null_count"] == 0
    # Records gone: recomputed from each stored Parquet chunk's footer.
    for rec in chunk_records(str(path)):
        os.remove(rec)
    with h5lake.File(str(path), "r") as f:
        agg = f["t"].stats(sel=np.s_[:])
        assert agg["chunks_read"] == 4
        assert agg["fields"]["x"]["null_count"] == want(250, n)["x"]
    # Linked from Parquet files: counted from the files' own rows.
    src = tmp_path / "src.parquet"
    pq.write_table(tbl, src, row_group_size=300)
    h5lake.load(src, tmp_path / "l.h5l", link=True, name="t")
    with h5lake.File(str(tmp_path / "l.h5l"), "r") as f:
        d = f["t"]
        agg = d.stats(sel=np.s_[:])
        assert {k: agg["fields"][k]["null_count"] for k in ("x", "s.q", "s.k")} == want(0, n)
        step = d.chunks[0]
        for row in d.stats().to_pylist():
            lo = row["start"][0]
            assert row["x.null_count"] == want(lo, lo + step)["x"]


def test_statistics_under_a_lossy_filter_describe_the_values_as_they_read_back(tmp_path):
    x = np.array([0.004, 0.0041, 1.006, 2.0044] + [5.0] * 4)
    with h5lake.File(str(tmp_path / "s.h5l"), "w") as f:
        d = f.create_dataset("x", data=x, chunks=(4,), scaleoffset=2)
        d[5] = 0.0049
        back = d[...]
        assert not np.array_equal(back, x)      # the filter did drop precision
        assert d.min() == back.min()
        assert d.max() == back.max()
        assert d.sum() == pytest.approx(back.sum())
        np.testing.assert_array_equal(d.get_where_list("value == 0"), np.nonzero(back == 0)[0])


def test_errors_name_datasets_by_path_not_by_internal_id(tmp_path):
    with h5lake.File(str(tmp_path / "n.h5l"), "w") as f:
        plain = f.create_dataset("grp/plain", data=np.arange(10.0), stats=False)
        f["src"] = np.arange(4.0)
        layout = h5lake.VirtualLayout((4,), "f8")
        layout[:] = h5lake.VirtualSource(f["src"])
        v = f.create_virtual_dataset("v", layout)
        for call in (plain.stats, v.stats):
            with pytest.raises((TypeError, ValueError)) as e:
                call()
            assert "d-" not in str(e.value) and ("/grp/plain" in str(e.value) or "/v" in str(e.value))


def test_pytables_arguments_condvars_field_and_row_ranges(tmp_path):
    """PyTables' ways of calling read_where/get_where_list/where: names bound
    from condvars or the caller's variables, field=, start/stop/step; the
    answers equal PyTables' on the same table."""
    tables = pytest.importorskip("tables")
    a = make_table(3000)
    with h5lake.File(str(tmp_path / "p.h5l"), "w") as f, \
            tables.open_file(str(tmp_path / "p.h5"), "w") as pt:
        d = f.create_dataset("t", data=a, chunks=(500,))
        t = pt.create_table("/", "t", obj=a)
        lim = float(np.median(a["value"][~np.isnan(a["value"])]))
        cases = [
            ("value > lim", {"lim": lim}, {}),
            ("(value > lim) & (sensor == s)", {"lim": lim, "s": 7}, {}),
            ("value > lim", {"lim": lim}, {"start": 100, "stop": 2500, "step": 7}),
            ("sensor >= s", {"s": np.int32(5)}, {"stop": 1000}),
        ]
        for cond, cv, rows in cases:
            np.testing.assert_array_equal(d.get_where_list(cond, condvars=cv, **rows),
                                          t.get_where_list(cond, condvars=cv, **rows))
            same(d.read_where(cond, cv, **rows), t.read_where(cond, cv, **rows))
            np.testing.assert_array_equal(d.read_where(cond, condvars=cv, field="value", **rows),
                                          t.read_where(cond, condvars=cv, field="value", **rows))
            assert [r["t"] for r in d.where(cond, condvars=cv, **rows)] == \
                [r["t"] for r in t.where(cond, condvars=cv, **rows)]
        # Without condvars, the caller's variables (as PyTables does).
        s = 3
        np.testing.assert_array_equal(d.get_where_list("sensor == s"), np.nonzero(a["sensor"] == 3)[0])
        with pytest.raises(TypeError, match="number, a bool or a string"):
            d.read_where("value > lim", condvars={"lim": [1, 2]})


def test_the_elements_of_a_plain_dataset_are_named_value_everywhere(tmp_path):
    x = np.arange(100.0)
    with h5lake.File(str(tmp_path / "v.h5l"), "w") as f:
        d = f.create_dataset("x", data=x, chunks=(10,))
        assert d.max("value") == d.max() == 99.0
        assert d.stats(field="value")["sum"] == x.sum()
        with pytest.raises(ValueError, match="no fields"):
            d.max("other")


def test_tables_with_text_columns_keep_statistics_of_their_numbers(tmp_path):
    """A table with string (or other variable-length) columns, stored
    columnar as Parquet loads make it: statistics of its fixed-size
    columns, queries over them, answers whole rows; equal to numpy."""
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    rng = np.random.default_rng(5)
    n = 5000
    t = pa.table({"id": np.arange(n), "x": rng.normal(size=n),
                  "name": [f"star {i}" for i in range(n)],
                  "k": rng.integers(0, 100, n).astype("i4")})
    pq.write_table(t, tmp_path / "cat.parquet", row_group_size=1000)
    h5lake.load(tmp_path / "cat.parquet", tmp_path / "cat.h5l", chunks=1000)
    x, k = t.column("x").to_numpy(), t.column("k").to_numpy()
    with h5lake.File(tmp_path / "cat.h5l", "r") as f:
        d = f["cat"]
        assert d.max("x") == x.max() and d.sum("k") == k.sum()
        assert d.stats(sel=np.s_[:])["chunks_read"] == 0        # records kept at load
        assert d.stats().num_rows == 5
        np.testing.assert_array_equal(d.get_where_list("(x > 2) & (k < 50)"),
                                      np.nonzero((x > 2) & (k < 50))[0])
        rows = d.read_where("x > 2.5")
        assert rows.dtype == d.dtype
        assert [r.decode() if isinstance(r, bytes) else r for r in rows["name"]] == \
            [f"star {i}" for i in np.nonzero(x > 2.5)[0]]
        np.testing.assert_array_equal(d.read_where("x > 2.5", fields=["id"])["id"],
                                      np.nonzero(x > 2.5)[0])
        np.testing.assert_array_equal(d.read_where("k == 3", field="name"), d[...]["name"][k == 3])
    # Written through the API: records computed on first use.
    dt = np.dtype([("v", "f8"), ("s", h5lake.string_dtype())])
    a = np.empty(300, dt)
    a["v"] = rng.normal(size=300)
    a["s"] = [str(i) for i in range(300)]
    with h5lake.File(tmp_path / "w.h5l", "w") as f:
        d = f.create_dataset("t", data=a, chunks=(100,), layout="columnar")
        assert d.min("v") == a["v"].min()
        np.testing.assert_array_equal(d.get_where_list("v < 0"), np.nonzero(a["v"] < 0)[0])
        # In row layout too (as h5py writes tables with string columns).
        row = f.create_dataset("r", data=a, chunks=(100,))
        assert row.max("v") == a["v"].max()
        np.testing.assert_array_equal(row.get_where_list("v < 0"), np.nonzero(a["v"] < 0)[0])
        got = row.read_where("v > 1")
        np.testing.assert_array_equal(got["v"], a["v"][a["v"] > 1])
        assert list(got["s"]) == [x.encode() if isinstance(got["s"][0], bytes) else x
                                  for x in a["s"][a["v"] > 1]]
        assert row.stats(sel=np.s_[:])["chunks_from_stats"] == 3     # stored back on first use


def test_bound_byte_strings_compare_as_numpy_compares_them(tmp_path):
    a = np.array([(b"ab", 1), (b"abc", 2)], [("s", "S4"), ("n", "i4")])
    with h5lake.File(str(tmp_path / "b.h5l"), "w") as f:
        d = f.create_dataset("t", data=a)
        for name in (b"ab", b"ab\0", np.bytes_(b"ab")):
            np.testing.assert_array_equal(d.get_where_list("s == name", condvars={"name": name}),
                                          np.nonzero(a["s"] == name)[0])


@pytest.mark.parametrize("layout", [None, "columnar"])
def test_conditions_on_text_skip_chunks_by_their_bounds(tmp_path, layout):
    """A table kept in order of a text column (a catalogue by station):
    a condition on the text reads only the chunks whose bounds it can
    match, and answers what numpy's mask over the whole read answers."""
    rng = np.random.default_rng(5)
    names = sorted(rng.choice([b"%c%c" % (65 + i, 65 + j) for i in range(26) for j in range(26)],
                              2000))
    dt = np.dtype([("station", "S70"), ("temp", "<f4")])
    a = np.zeros(2000, dt)
    # Long names share their first 64 bytes: bounds are cut, never wrong.
    a["station"] = [b"x" * 64 + n if i >= 1800 else n for i, n in enumerate(names)]
    a["temp"] = rng.normal(size=2000)
    with h5lake.File(tmp_path / "s.h5l", "w") as f:
        d = f.create_dataset("w", data=a, chunks=(100,), layout=layout)
        for cond, mask in [
            ("station == b'KQ'", a["station"] == b"KQ"),
            ("(station >= b'C') & (station < b'D') & (temp > 0)",
             (a["station"] >= b"C") & (a["station"] < b"D") & (a["temp"] > 0)),
            ("~(station > b'B')", ~(a["station"] > b"B")),
            ("station == b'" + "x" * 64 + "ZZ'", a["station"] == b"x" * 64 + b"ZZ"),
            ("station > b'" + "x" * 64 + "A'", a["station"] > b"x" * 64 + b"A"),
        ]:
            same(d.read_where(cond), a[mask])
            np.testing.assert_array_equal(d.get_where_list(cond), np.nonzero(mask)[0])
            touched = {i // 100 for i in np.nonzero(mask)[0]}
            assert d._last_query["chunks_read"] <= len(touched) + 2, (cond, d._last_query)
        table = d.stats()
        lo, hi = table.column("station.min").to_pylist(), table.column("station.max").to_pylist()
        for k in range(20):
            part = a["station"][k * 100:(k + 1) * 100].tolist()
            assert lo[k] <= min(part) and max(part) <= hi[k], k
        assert lo[0] == a["station"][0] and hi[0] == a["station"][99]
        assert len(hi[19]) == 64 and hi[19] > a["station"][-1]
        s = d.stats(np.s_[:1000], field="station")
        assert s["text_min"] == a["station"][0] and s["text_max"] == a["station"][999]
    r = _cli("stats", "--json", str(tmp_path / "s.h5l" / "w"))
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["chunks"][0]["station.min"] == a["station"][0].decode()
    assert doc["total"]["fields"]["station"]["text_min"] == a["station"][0].decode()


def test_text_conditions_compare_bytes_as_numpy_does(tmp_path):
    """Bound byte strings are compared byte for byte (not re-encoded), a
    NUL inside a value is part of it, and literals take Python's escapes."""
    dt = np.dtype([("name", "S8"), ("x", "i4")])
    a = np.array([("café".encode(), 1), ("café".encode("latin-1"), 2), (b"a\0b", 3), (b"a", 4),
                  (b"it's", 5)], dt)
    with h5lake.File(tmp_path / "b.h5l", "w") as f:
        d = f.create_dataset("t", data=a)
        for key in a["name"]:
            np.testing.assert_array_equal(d.get_where_list("name == key"),
                                          np.nonzero(a["name"] == key)[0], err_msg=repr(key))
        assert d.get_where_list(r"name == b'caf\xe9'").tolist() == [1]
        assert d.get_where_list(r"name == b'it\'s'").tolist() == [4]


def test_arithmetic_and_chunk_functions_never_answer_silently_wrong(tmp_path):
    a = np.array([1, 2, 4, np.inf], "f8")
    with h5lake.File(tmp_path / "p.h5l", "w") as f:
        d = f.create_dataset("i", data=np.array([1, 2, 4], "i4"))
        # An integer to a negative power is a fraction (Python's 2 ** -1), never 0.
        assert d.get_where_list("value ** -1 > 0").tolist() == [0, 1, 2]
        assert d.get_where_list("value ** -1 == 0.25").tolist() == [2]
        assert d.get_where_list("value ** 2 == 16").tolist() == [2]
        e = f.create_dataset("f", data=a, stats={"m": "mean(value)", "s": "sum(value)"})
        assert e.stats(sel=np.s_[:])["functions"] == {"m": np.inf, "s": np.inf}
        big = f.create_dataset("big", data=np.array([2**62, 2**62, 2**63 - 1], "i8"), chunks=(2,))
        sums = big.stats().column("value.sum").to_pylist()
        assert [int(v) for v in sums] == [2**63, 2**63 - 1]


def test_query_csv_writes_bytes_that_are_not_utf8_escaped(tmp_path):
    import subprocess
    import sys
    with h5lake.File(tmp_path / "q.h5l", "w") as f:
        f["t"] = np.array([(1, b"caf\xe9")], [("i", "i4"), ("s", "S4")])
    r = subprocess.run([sys.executable, "-m", "h5lake", "query", str(tmp_path / "q.h5l/t"), "i > 0"],
                       capture_output=True)
    assert r.returncode == 0, r.stderr
    assert r.stdout.decode().splitlines() == ['"i","s"', '1,"caf\\xe9"']


def test_powers_of_nan_chunks_are_not_skipped(tmp_path):
    """nan ** 0 and 1 ** nan are 1 (numpy, C): a chunk of nothing but NaN
    can match a condition with a power in it."""
    x = np.array([np.nan] * 4 + [1., 2., 3., 4.])
    with h5lake.File(tmp_path / "s.h5l", "w") as f:
        d = f.create_dataset("a", data=x, chunks=(4,))
        for cond, want in [("value ** 0 == 1", np.arange(8)), ("1 ** value == 1", np.arange(8)),
                           ("value % 2 != value % 2", np.arange(4))]:
            np.testing.assert_array_equal(d.get_where_list(cond), want, cond)


def test_integers_past_i128_go_on_as_floats_never_wrapped(tmp_path):
    t = np.full(100, 1_700_000_000_000_000_000, "i8")
    with h5lake.File(tmp_path / "s.h5l", "w") as f:
        d = f.create_dataset("t", data=t, chunks=(50,), stats={"ss": "sum(value ** 2)"})
        exact = sum(int(v) ** 2 for v in t)          # past 2**127
        got = d.stats(sel=np.s_[:])["functions"]["ss"]
        assert isinstance(got, float) and math.isclose(got, exact, rel_tol=1e-12), got
        b = f.create_dataset("b", data=np.array([2**62, 3], "i8"))
        np.testing.assert_array_equal(b.get_where_list("value * value * value > 0"), [0, 1])
        s = f.create_dataset("s", data=np.array([-19, 2], "i4"))
        np.testing.assert_array_equal(s.get_where_list("value ** 31 < 0"), [0])
        # Below 2**127 they stay exact (numpy would wrap at 64 bits).
        m = f.create_dataset("m", data=np.array([2**63 - 1], "i8"))
        np.testing.assert_array_equal(m.get_where_list("value + 1 > 0"), [0])
        # An expression that could leave i128 for some values of its
        # members' types is computed in floats for all: an element's
        # answer does not depend on the elements chunked with it.
        for chunks in ((1,), (2,)):
            c = f.create_dataset(f"c{chunks[0]}", data=np.array([1, 2**62], "i8"), chunks=chunks)
            for cond in ("value * 2**65 + 1 > value * 2**65", "(value * 2**65 + 1) % 2 == 1"):
                assert list(c.get_where_list(cond)) == [], (chunks, cond)


def test_condvars_override_fields_of_the_same_name_as_in_pytables(tmp_path):
    c = np.zeros(5, [("t", "i8"), ("x", "f8")])
    c["t"] = np.arange(5)
    c["x"] = 10
    x = 100  # noqa: F841  (the caller's variables do not override fields)
    with h5lake.File(tmp_path / "s.h5l", "w") as f:
        d = f.create_dataset("d", data=c)
        np.testing.assert_array_equal(d.get_where_list("t > x", condvars={"x": 2}), [3, 4])
        np.testing.assert_array_equal(d.get_where_list("t > x"), [])
        np.testing.assert_array_equal(d.get_where_list("t < x"), np.arange(5))


def test_query_cli_edges_coords_named_like_fields_empty_answers_and_existing_files(tmp_path):
    pcsv = pytest.importorskip("pyarrow.csv")
    import io
    store = tmp_path / "e.h5l"
    c = np.zeros(4, [("dim0", "i4"), ("x", "f8"), ("arr", "i4", (2,))])
    c["dim0"] = [10, 20, 30, 40]
    c["x"] = [1, 2, 3, 4]
    with h5lake.File(str(store), "w") as f:
        f.create_dataset("t", data=c)
        f.create_dataset("v", data=np.arange(4.0))
        f.create_dataset("nf", data=np.array([np.nan, np.inf, -np.inf, 1.0, 2.0, 3.0]), chunks=(2,))
    # A field named dim0 keeps its values; the coordinates take _dim0.
    r = _cli("query", "-q", str(store / "t"), "x > 2", "--coords")
    assert r.returncode == 0, r.stderr
    rows = pcsv.read_csv(io.BytesIO(r.stdout.encode()))
    assert rows.column("_dim0").to_pylist() == [2, 3] and rows.column("dim0").to_pylist() == [30, 40]
    # Nothing matching is an empty answer, not a crash.
    for argv in (["t", "x > 5"], ["v", "value > 5", "--coords"]):
        r = _cli("query", "-q", str(store / argv[0]), *argv[1:])
        assert r.returncode == 0, (argv, r.stderr)
    r = _cli("query", "-q", str(store / "t"), "x > 5", "-o", str(tmp_path / "none.csv"))
    assert r.returncode == 0 and (tmp_path / "none.csv").exists(), r.stderr
    # An existing output is kept unless --force.
    keep = tmp_path / "keep.csv"
    keep.write_text("precious\n")
    r = _cli("query", "-q", str(store / "t"), "x > 2", "-o", str(keep))
    assert r.returncode == 2 and "--force" in r.stderr and keep.read_text() == "precious\n"
    r = _cli("query", "-q", str(store / "t"), "x > 2", "-o", str(keep), "--force")
    assert r.returncode == 0 and "precious" not in keep.read_text()
    # --json is strict JSON: non-finite values as strings.
    r = _cli("stats", "--json", str(store / "nf"))
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout, parse_constant=lambda t: pytest.fail(f"bare {t} in JSON"))
    assert doc["total"]["fields"]["value"]["max"] == "Infinity"
    r = _cli("query", "-q", str(store / "v"), "value > 1", "--fields", "value")
    assert r.returncode == 0 and r.stdout.split() == ['"value"', '"2.0"', '"3.0"'], r.stderr
    r = _cli("query", str(tmp_path / "e.h5l"), "x > 1")
    assert r.returncode == 2
    with h5lake.File(str(store), "r+") as f:
        f.create_group("grp")
    r = _cli("stats", str(store / "grp"))
    assert r.returncode == 2 and "/grp is a group, not a dataset" in r.stderr, r.stderr


def test_query_and_stats_cli_read_hdf5_files_in_place(tmp_path):
    """`query` and `stats` of a dataset in an HDF5 file answer as of a
    store (they said "load it" while the Python API read the file);
    `stats --build` still needs a store (it writes)."""
    h5py = pytest.importorskip("h5py")
    pcsv = pytest.importorskip("pyarrow.csv")
    import io
    src = tmp_path / "plain.h5"
    c = np.zeros(100, [("t", "i8"), ("x", "f4")])
    c["t"], c["x"] = np.arange(100), np.arange(100) % 7
    with h5py.File(src, "w") as f:
        f.create_dataset("grp/rows", data=c, chunks=(10,), compression="gzip")
    r = _cli("query", "-q", str(src / "grp/rows"), "(x == 6) & (t > 50)")
    assert r.returncode == 0, r.stderr
    got = pcsv.read_csv(io.BytesIO(r.stdout.encode()))
    want = c[(c["x"] == 6) & (c["t"] > 50)]
    assert got.column("t").to_pylist() == want["t"].tolist()
    r = _cli("stats", "--json", str(src / "grp/rows"))
    assert r.returncode == 0, r.stderr
    total = json.loads(r.stdout)["total"]["fields"]
    assert total["t"]["max"] == 99 and total["x"]["sum"] == float(c["x"].sum())
    r = _cli("stats", "--build", str(src))
    assert r.returncode == 2 and "h5lake load" in r.stderr, r.stderr
    assert open(src, "rb").read(8) == b"\x89HDF\r\n\x1a\n"


def test_pytables_positional_forms_and_variables_in_arrow_conditions(tmp_path):
    tables = pytest.importorskip("tables")
    c = np.zeros(50, [("t", "i8"), ("x", "f8")])
    c["t"] = np.arange(50)
    c["x"] = np.arange(50) * 0.5
    with h5lake.File(tmp_path / "s.h5l", "w") as f, \
            tables.open_file(str(tmp_path / "s.h5"), "w") as h:
        d = f.create_dataset("d", data=c, chunks=(10,))
        T = h.create_table("/", "t", c)
        cv = {"lim": 5}
        np.testing.assert_array_equal(d.read_where("t > lim", cv, "x"),
                                      T.read_where("t > lim", cv, "x"))
        np.testing.assert_array_equal(d.read_where("t > lim", cv, "x", 10, 40, 3),
                                      T.read_where("t > lim", cv, "x", 10, 40, 3))
        np.testing.assert_array_equal(d.get_where_list("t > lim", cv, False, 10, 40, 3),
                                      T.get_where_list("t > lim", cv, False, 10, 40, 3))
        assert [r["t"] for r in d.where("t > lim", cv, 10, 20)] == \
            [r["t"] for r in T.where("t > lim", cv, 10, 20)]
        # h5lake's own order still works, and too many arguments are named.
        assert d.read_where("t > 45", ["t"]).dtype.names == ("t",)
        with pytest.raises(TypeError, match="positional"):
            d.where("t > 1", cv, 1, 2, 3, 4)
        # Conditions of to_arrow & co. see the caller's variables, or condvars.
        lim = 47  # noqa: F841
        assert d.to_arrow(where="t > lim")["t"].to_pylist() == [48, 49]
        assert d.to_pandas(where="t > lim", condvars={"lim": 48})["t"].tolist() == [49]
        assert d.to_arrow(where="t > 48", fields=["x"]).column_names == ["x"]


def test_mean_of_nothing_is_nan_with_numpys_warning(tmp_path):
    with h5lake.File(tmp_path / "s.h5l", "w") as f:
        d = f.create_dataset("d", data=np.arange(10.0), chunks=(5,))
        e = f.create_dataset("e", shape=(0,), dtype="f8")
        for v, sel in ((d, np.s_[3:3]), (e, None)):
            with pytest.warns(RuntimeWarning, match="Mean of empty slice"):
                assert math.isnan(v.mean(sel=sel))
            assert v.sum(sel=sel) == 0 and v.count(sel=sel) == 0
            with pytest.raises(ValueError):
                v.min(sel=sel)


def test_astype_to_numpy_unicode_is_refused_as_h5py_refuses_it(tmp_path):
    with h5lake.File(tmp_path / "s.h5l", "w") as f:
        d = f.create_dataset("s", data=["héllo", "x"], dtype=h5lake.string_dtype())
        with pytest.raises(TypeError, match="No conversion path.*asstr"):
            d.astype("U10")[()]
        assert list(d.asstr()[()]) == ["héllo", "x"]


def test_what_keeps_no_statistics_is_named_for_what_it_is(tmp_path):
    with h5lake.File(tmp_path / "s.h5l", "w") as f:
        cx = f.create_dataset("cx", data=np.arange(4) * (1 + 1j))
        t = f.create_dataset("t", data=np.zeros(3, [("a", "i4"), ("arr", "i4", (2,)), ("s", "S4")]))
        ld = f.create_dataset("ld", data=np.zeros(3, np.longdouble))
        for call, msg in [(cx.sum, "complex numbers"), (lambda: t.sum("arr"), "array member"),
                          (lambda: t.sum("nope"), "the numeric fields are a$"),
                          (ld.mean, "keep no statistics")]:
            with pytest.raises(ValueError, match=msg):
                call()


def test_query_csv_prints_floats_as_floats(tmp_path):
    pcsv = pytest.importorskip("pyarrow.csv")
    a = np.zeros(4, [("i", "i4"), ("f", "f8"), ("g", "f4"), ("h", "f2")])
    a["i"] = np.arange(4)
    a["f"] = [23.0, -0.0, 0.5, np.inf]
    a["g"] = [0.1, 2.0, np.nan, 3.0]
    a["h"] = [0.1, 65504, 1.0, -2.0]
    store = tmp_path / "c.h5l"
    with h5lake.File(str(store), "w") as f:
        f.create_dataset("t", data=a)
    r = _cli("query", "-q", str(store / "t"), "i >= 0", "-o", str(tmp_path / "out.csv"))
    assert r.returncode == 0, r.stderr
    text = (tmp_path / "out.csv").read_text().splitlines()
    assert text[1].split(",")[1:] == ['"23.0"', '"0.1"', '"0.099975586"'], text
    rows = pcsv.read_csv(tmp_path / "out.csv")
    # Read back by another tool, the float columns are floats again.
    assert [str(rows.schema.field(n).type) for n in "ifgh"] == ["int64", "double", "double", "double"]
    np.testing.assert_array_equal(rows["f"].to_numpy(), a["f"])
    assert rows["h"].to_numpy().astype("f2").tolist() == a["h"].tolist()


def test_bound_negative_numbers_stay_one_operand_and_numpy_scalars_select(tmp_path):
    """From a user's audit: `lim ** 2` with lim = -3 was bound as -3 ** 2
    (that is -9); a NumPy integer as sel= failed with NumPy's own error."""
    a = np.zeros(11, [("x", "i8"), ("f", "f8")])
    a["x"] = np.arange(11)
    a["f"] = np.arange(11) / 2
    with h5lake.File(tmp_path / "n.h5l", "w") as f:
        d = f.create_dataset("t", data=a, chunks=(3,))
        lim, flim = -3, -1.5
        assert d.get_where_list("x < lim**2").tolist() == list(range(9))
        assert d.get_where_list("x < lim**2", condvars={"lim": np.int64(-3)}).tolist() == list(range(9))
        assert d.get_where_list("f < flim**2").tolist() == [0, 1, 2, 3, 4]
        assert d.get_where_list("x - lim == 3").tolist() == [0]
        s = f.create_dataset("s", data=np.arange(10.0), chunks=(3,))
        for i in (3, np.int64(3), np.array(3)):
            assert s.max(sel=i) == 3.0
        for bad in (np.arange(10) > 4, [1, 2], True):
            with pytest.raises(ValueError, match="box"):
                s.max(sel=bad)
        t = f.create_dataset("names", data=np.array([b"a", b"bb", b"c"]))
        st = t.stats(field="value")
        assert st["count"] == 3 and st["sum"] is None and st["mean"] is None
        assert st["text_min"] == b"a" and st["text_max"] == b"c"


def test_stats_build_bounds_the_text_of_records_made_before_text_was_bounded(tmp_path):
    """Records written before text fields were bounded only count them;
    `stats --build` makes them anew with bounds (queries use them after)."""
    a = np.zeros(400, [("name", "S4"), ("x", "<i4")])
    a["name"] = [b"%03d" % (i // 4) for i in range(400)]
    a["x"] = np.arange(400)
    store = tmp_path / "old.h5l"
    with h5lake.File(store, "w") as f:
        f.create_dataset("t", data=a, chunks=(40,))
    # As an earlier version wrote them: no text bounds anywhere.
    stripped = 0
    for path in store.rglob("*"):
        if path.is_file() and b"text_min" in path.read_bytes():
            text = re.sub(r',?\s*"text_m(in|ax)"\s*:\s*("[0-9a-f]*"|null)', "", path.read_text())
            path.write_text(text)
            stripped += 1
    assert stripped > 0
    with h5lake.File(store, "r") as f:
        d = f["t"]
        assert d.stats().column("name.min").to_pylist() == [None] * 10
        assert d.get_where_list("name == b'050'").tolist() == [200, 201, 202, 203]
        assert d._last_query["chunks_read"] == 10
    r = _cli("stats", "--build", "-q", str(store))
    assert r.returncode == 0, r.stderr
    with h5lake.File(store, "r") as f:
        d = f["t"]
        assert d.stats().column("name.min").to_pylist()[:2] == [b"000", b"010"]
        assert d.get_where_list("name == b'050'").tolist() == [200, 201, 202, 203]
        assert d._last_query["chunks_read"] == 1


@pytest.mark.parametrize("layout", [None, "columnar"])
def test_member_names_holding_dots(tmp_path, layout):
    """A member named ``user.id`` (pandas' json_normalize, Spark) broke the
    statistics calls; beside a nested member of the same path, conditions
    on it silently matched nothing. One name, one member — or an error."""
    kw = {"layout": layout} if layout else {}
    flat = np.array([(1, 2.0), (7, 3.0), (4, 5.0)], [("user.id", "i4"), ("n", "f8")])
    pos = np.dtype([("x", "i4"), ("y", "i4")])
    both = np.array([(1, (5, 50)), (2, (6, 60))], [("p.x", "i4"), ("p", pos)])
    with h5lake.File(str(tmp_path / "d.h5l"), "w") as f:
        d = f.create_dataset("flat", data=flat, chunks=(2,), **kw)
        assert d.max("user.id") == 7 and d.count("user.id") == 3
        assert d.read_where("user.id > 3")["n"].tolist() == [3.0, 5.0]
        assert "user.id.max" in d.stats().column_names
        b = f.create_dataset("both", data=both, chunks=(2,), **kw)
        for cond in ("p.x > 5", "p.x < 5"):
            with pytest.raises(ValueError, match="more than one"):
                b.read_where(cond)
        with pytest.raises(ValueError, match="more than one"):
            b.max("p.x")
        assert b.max("p.y") == 60 and b.read_where("p.y > 55")["p.x"].tolist() == [2]
        assert "p.y.max" in b.stats().column_names


def _build_stats(store):
    subprocess.run([sys.executable, "-m", "h5lake", "stats", "--build", "-q", str(store)],
                   check=True, capture_output=True)


def test_statistics_of_a_linked_hdf5_file_are_not_used_once_it_changed(tmp_path):
    """Records of a `load --link` dataset describe the file as it was; once
    the file changes (here in place, its size unchanged), an aggregate or a
    query must refuse as a read does, not answer from the old values."""
    import h5py
    src = tmp_path / "src.h5"
    with h5py.File(src, "w") as f:
        f.create_dataset("a", data=np.arange(1000.0), chunks=(100,))
    h5lake.load(src, tmp_path / "l.h5l", link=True)
    _build_stats(tmp_path / "l.h5l")
    with h5lake.File(tmp_path / "l.h5l", "r") as f:
        assert f["a"].max() == 999.0 and len(f["a"].get_where_list("value < 0")) == 0
    with h5py.File(src, "a") as f:
        f["a"][:] = -np.arange(1000.0)
    assert os.path.getsize(src) > 0
    with h5lake.File(tmp_path / "l.h5l", "r") as f:
        d = f["a"]
        with pytest.raises(OSError, match="changed since it was linked"):
            d[:3]
        for ask in (d.max, d.sum, lambda: d.get_where_list("value < 0"),
                    lambda: d.stats(field="value")):
            with pytest.raises(OSError, match="changed since it was linked"):
                ask()
    got = _cli("query", str(tmp_path / "l.h5l/a"), "value < 0")
    assert got.returncode != 0 and "changed since it was linked" in got.stderr


def test_statistics_of_a_linked_parquet_file_follow_it_when_rewritten(tmp_path):
    """A Parquet source rewritten in place with as many bytes reads as it is
    now; its statistics must follow (kept ones describe the old rows). One of
    another length is refused by aggregates and queries as by reads."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    def write(values):
        pq.write_table(pa.table({"x": pa.array(values, pa.float64())}), tmp_path / "d.parquet",
                       row_group_size=100, compression="none", use_dictionary=False)

    write([float(k) for k in range(1000)])
    size = os.path.getsize(tmp_path / "d.parquet")
    h5lake.load(tmp_path / "d.parquet", tmp_path / "p.h5l", link=True)
    _build_stats(tmp_path / "p.h5l")
    with h5lake.File(tmp_path / "p.h5l", "r") as f:
        assert f["d"].max("x") == 999.0
    write([-float(k) for k in range(1000)])
    assert os.path.getsize(tmp_path / "d.parquet") == size
    with h5lake.File(tmp_path / "p.h5l", "r") as f:
        d = f["d"]
        x = d[:]["x"]
        assert x.min() == -999.0
        assert d.max("x") == x.max() and d.sum("x") == x.sum()
        assert len(d.get_where_list("x < 0")) == 999
    write([float(k) for k in range(10)])
    with h5lake.File(tmp_path / "p.h5l", "r") as f:
        d = f["d"]
        for ask in (lambda: d[:3], lambda: d.max("x"), lambda: d.get_where_list("x < 0")):
            with pytest.raises(OSError, match="replaced or changed"):
                ask()


def test_h5pyd_read_where_of_a_table_with_text_of_variable_length(tmp_path):
    """A catalogue with a variable-length string column: h5pyd's
    read_where got 400 (the server wanted fixed-size fields= named, which
    read_where cannot send). Whole rows come back, matched on the
    fixed-size members and read by their coordinates."""
    h5pyd = pytest.importorskip("h5pyd")
    from servers import with_homes
    user, pw = "test_user1", "test"
    dt = np.dtype([("id", "<i4"), ("name", h5pyd.string_dtype()), ("mag", "<f8")])
    rows = np.zeros(5000, dt)
    rows["id"] = np.arange(5000)
    rows["name"] = [f"star-{i}" * (1 + i % 3) for i in range(5000)]
    rows["mag"] = (np.arange(5000) % 97) / 10.0
    s = with_homes(tmp_path / "bucket", user)
    try:
        domain = f"/home/{user}/cat.h5"
        with h5pyd.File(domain, "w", endpoint=s.endpoint, username=user, password=pw) as f:
            f.create_table("t", data=rows, dtype=dt, chunks=(1000,))
        with h5pyd.File(domain, "r", endpoint=s.endpoint, username=user, password=pw) as f:
            got = list(f["t"].read_where("(mag > 9.5) & (id < 3000)"))
            want = rows[(rows["mag"] > 9.5) & (rows["id"] < 3000)]
            assert [int(r["id"]) for r in got] == want["id"].tolist()
            assert [r["name"].decode() if isinstance(r["name"], bytes) else r["name"]
                    for r in got] == want["name"].tolist()
            did = f["t"].id.id
        q = {"domain": domain, "query": "id.isin(7, 4001, 12)", "Limit": 2}
        status, _, rsp = s.request("GET", f"/datasets/{did}/value", user=user, params=q)
        assert status == 200 and rsp["index"] == [7, 12]
        assert [v[1] for v in rsp["value"]] == [rows["name"][7], rows["name"][12]]
        status, _, rsp = s.request("GET", f"/datasets/{did}/value", user=user,
                                   params=dict(q, fields="name"))
        assert status == 400 and "fixed-size" in rsp["message"]
        status, _, rsp = s.request("GET", f"/datasets/{did}/value", user=user,
                                   params=dict(q, fields="mag:id"))
        assert status == 200 and rsp["value"] == [[0.7, 7], [1.2, 12]]
    finally:
        s.stop()


def test_a_variable_length_member_in_a_condition_is_said_to_be_unusable(tmp_path):
    """From an S3 audit: `name == "n3"` of a table whose name member is a
    variable-length string said only that there was no field "name"."""
    row = np.dtype([("t", "<i8"), ("name", h5lake.string_dtype())])
    with h5lake.File(tmp_path / "s.h5l", "w") as f:
        d = f.create_dataset("tab", data=np.array([(1, "n1"), (3, "n3")], dtype=row))
        with pytest.raises(ValueError, match=r'no field "name" a condition can use.*'
                                             r'not variable-length strings.*the fields are t'):
            d.read_where('name == "n3"')
