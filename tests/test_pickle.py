"""Pickling h5lake objects and handing them to other processes.

A File, Group or Dataset pickles as (store location, object, mode) and is
reopened by the receiver: read-only by default; writable only through
``obj.picklable(writable=True)``. Checked with ``pickle`` directly and with
real process pools (multiprocessing Pool/Process and ProcessPoolExecutor,
both spawn and fork), on a local store and on S3.
"""

import concurrent.futures
import copy
import multiprocessing
import os
import pickle

import numpy as np
import pytest

import h5lake

START_METHODS = [m for m in ("spawn", "fork") if m in multiprocessing.get_all_start_methods()]


# -- what the child processes run (module level: spawn imports this module) ----

def read_all(dset):
    """The dataset's contents, and what the child saw of its handle."""
    return dset[()], dset.name, dset.file.mode, dset.file.filename


def read_member(group, name):
    return group[name][()]


def write_row(dset, row, value):
    dset[row] = value
    return dset.file.mode


def try_write(dset):
    try:
        dset[0] = -1
    except Exception as e:       # what a read-only handle does on a write
        return type(e).__name__
    return "written"


def describe(obj):
    return type(obj).__name__, obj.name, sorted(obj.keys()) if hasattr(obj, "keys") else None


def roundtrip(obj):
    return pickle.loads(pickle.dumps(obj))


# -- a small store --------------------------------------------------------------

DATA = np.arange(60, dtype="f8").reshape(6, 10)
LABELS = np.array([b"alpha", b"beta", b"gamma"])


def make_store(location):
    with h5lake.File(location, "w") as f:
        g = f.create_group("grp/sub")
        d = g.create_dataset("data", data=DATA, chunks=(2, 5), compression="gzip")
        d.attrs["units"] = "m"
        f["labels"] = LABELS
        f["grp/t"] = np.dtype("<i2")       # a committed datatype
    return location


@pytest.fixture
def store(tmp_path):
    return make_store(str(tmp_path / "run.h5l"))


# -- pickle.dumps / loads ------------------------------------------------------

def test_read_only_objects_roundtrip(store):
    with h5lake.File(store, "r") as f:
        d = f["grp/sub/data"]
        d2 = roundtrip(d)
        assert isinstance(d2, h5lake.Dataset)
        assert d2.name == "/grp/sub/data"
        np.testing.assert_array_equal(d2[()], DATA)
        np.testing.assert_array_equal(d2[1:3, ::2], DATA[1:3, ::2])
        assert d2.attrs["units"] == "m"
        assert d2 == d                      # the same object (same id), another handle
        assert d2.file.mode == "r"
        assert d2.file.filename == os.path.abspath(store)

        g2 = roundtrip(f["grp"])
        assert isinstance(g2, h5lake.Group) and not isinstance(g2, h5lake.File)
        assert g2.name == "/grp" and sorted(g2) == ["sub", "t"]
        np.testing.assert_array_equal(g2["sub/data"][()], DATA)

        f2 = roundtrip(f)
        assert isinstance(f2, h5lake.File) and f2.mode == "r"
        np.testing.assert_array_equal(f2["labels"][()], LABELS)

        t2 = roundtrip(f["grp/t"])
        assert isinstance(t2, h5lake.Datatype) and t2.dtype == np.dtype("<i2")

        # Several objects in one pickle, and an object opened by reference
        # (its name is found again by the receiver).
        objs = roundtrip([f["labels"], f[d.ref]])
        np.testing.assert_array_equal(objs[0][()], LABELS)
        assert objs[1].name == "/grp/sub/data"

        # The receiver's handle is independent: closing it leaves ours open.
        f2.close()
        np.testing.assert_array_equal(d[0], DATA[0])


def test_receiver_is_read_only(store):
    with h5lake.File(store, "r") as f:
        d2 = roundtrip(f["grp/sub/data"])
    assert try_write(d2) != "written"
    np.testing.assert_array_equal(d2[()], DATA)


@pytest.mark.parametrize("mode", ["r+", "a", "w"])
def test_writable_objects_refuse(tmp_path, mode):
    path = str(tmp_path / "w.h5l")
    make_store(path)
    with h5lake.File(path, mode) as f:
        if mode == "w":
            f["grp/sub/data"] = DATA
        for obj in (f, f["grp"], f["grp/sub/data"]):
            with pytest.raises(TypeError, match=r"open for writing.*picklable\(writable=True\)"):
                pickle.dumps(obj)


def test_picklable_read_only_from_writable_file(store):
    with h5lake.File(store, "r+") as f:
        d2 = roundtrip(f["grp/sub/data"].picklable())
        assert d2.file.mode == "r"
        assert try_write(d2) != "written"
        np.testing.assert_array_equal(d2[()], DATA)


def test_picklable_writable(store):
    with h5lake.File(store, "r+") as f:
        d = f["grp/sub/data"]
        h = d.picklable(writable=True)
        # The handle is the dataset itself, usable here too.
        assert h == d and isinstance(h, h5lake.Dataset)
        np.testing.assert_array_equal(h[0], DATA[0])
        d2 = roundtrip(h)
        assert d2.file.mode == "r+"
        d2[0] = 7.0
        np.testing.assert_array_equal(d[0], np.full(10, 7.0))
        # Sent writable by choice, the unpickled handle may be passed on as
        # it came (dask rebuilds the objects of its graphs and sends them).
        assert roundtrip(d2).file.mode == "r+"
        # Its file, a handle of its own, was not chosen: it refuses.
        with pytest.raises(TypeError, match="open for writing"):
            pickle.dumps(d2.file)
        # 'w' is never replayed: reopening writable does not truncate.
        f2 = roundtrip(f.picklable(writable=True))
        assert f2.mode == "r+" and "labels" in f2


def test_picklable_writable_of_read_only_file(store):
    with h5lake.File(store, "r") as f:
        with pytest.raises(ValueError, match="read-only"):
            f["grp/sub/data"].picklable(writable=True)


def test_closed_objects_refuse(store):
    f = h5lake.File(store, "r")
    d, g = f["grp/sub/data"], f["grp"]
    h = f["labels"].picklable()
    f.close()
    for obj in (f, g, d, h):
        with pytest.raises(TypeError, match="closed"):
            pickle.dumps(obj)
    with pytest.raises(ValueError):
        d.picklable()


def test_unpickled_by_identity_not_by_path(store):
    # Like an open handle, a pickled object is that object: unlinking it and
    # putting another at its path does not change what the pickle names.
    with h5lake.File(store, "r") as f:
        blob = pickle.dumps(f["labels"])
    with h5lake.File(store, "r+") as f:
        del f["labels"]
        f.create_dataset("labels", data=[1, 2])
    np.testing.assert_array_equal(pickle.loads(blob)[()], LABELS)


def test_object_gone_before_unpickling(store):
    with h5lake.File(store, "r") as f:
        blob = pickle.dumps(f["labels"])
    make_store(store)                 # truncated and made again: new objects
    with pytest.raises(KeyError, match="no longer"):
        pickle.loads(blob)


def test_relative_path_and_other_cwd(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    make_store("rel.h5l")
    with h5lake.File("rel.h5l", "r") as f:
        blob = pickle.dumps(f["grp/sub/data"])
    other = tmp_path / "elsewhere"
    other.mkdir()
    monkeypatch.chdir(other)
    d = pickle.loads(blob)
    np.testing.assert_array_equal(d[()], DATA)
    assert d.file.filename == str(tmp_path / "rel.h5l")


def test_anonymous_dataset(store):
    with h5lake.File(store, "r+") as f:
        anon = f.create_dataset(None, data=np.arange(5))
        d2 = roundtrip(anon.picklable())
        assert d2.name is None
        np.testing.assert_array_equal(d2[()], np.arange(5))


def test_object_through_external_link(tmp_path, store):
    other = str(tmp_path / "other.h5l")
    with h5lake.File(other, "w") as f:
        f["x"] = np.arange(4)
    with h5lake.File(store, "r+") as f:
        f["ext"] = h5lake.ExternalLink(other, "/x")
    with h5lake.File(store, "r") as f:
        x = f["ext"]
        x2 = roundtrip(x)
        np.testing.assert_array_equal(x2[()], np.arange(4))
        assert x2.file.filename == os.path.abspath(other)


def test_copy_is_refused(store):
    with h5lake.File(store, "r") as f:
        with pytest.raises(TypeError, match="cannot be copied"):
            copy.copy(f["grp"])
        with pytest.raises(TypeError, match="cannot be copied"):
            copy.deepcopy(f["grp/sub/data"])


# -- real process pools ---------------------------------------------------------

@pytest.mark.parametrize("method", START_METHODS)
def test_multiprocessing_pool(store, method):
    ctx = multiprocessing.get_context(method)
    with h5lake.File(store, "r") as f:
        dsets = [f["grp/sub/data"], f["labels"]]
        with ctx.Pool(2) as pool:
            out = pool.map(read_all, dsets)
            members = pool.starmap(read_member, [(f["grp"], "sub/data"), (f, "labels")])
            kinds = pool.map(describe, [f, f["grp"]])
    np.testing.assert_array_equal(out[0][0], DATA)
    np.testing.assert_array_equal(out[1][0], LABELS)
    assert [o[1:] for o in out] == [("/grp/sub/data", "r", os.path.abspath(store)),
                                     ("/labels", "r", os.path.abspath(store))]
    np.testing.assert_array_equal(members[0], DATA)
    np.testing.assert_array_equal(members[1], LABELS)
    assert kinds == [("File", "/", ["grp", "labels"]), ("Group", "/grp", ["sub", "t"])]


@pytest.mark.parametrize("method", START_METHODS)
def test_multiprocessing_process_spawned_or_forked(store, method):
    ctx = multiprocessing.get_context(method)
    with h5lake.File(store, "r+") as f:
        d = f["grp/sub/data"]
        p = ctx.Process(target=write_row, args=(d.picklable(writable=True), 5, 42.0))
        p.start()
        p.join(120)
        assert p.exitcode == 0
        np.testing.assert_array_equal(d[5], np.full(10, 42.0))


@pytest.mark.parametrize("method", START_METHODS)
def test_process_pool_executor(store, method):
    ctx = multiprocessing.get_context(method)
    with h5lake.File(store, "r") as f:
        d = f["grp/sub/data"]
        with concurrent.futures.ProcessPoolExecutor(2, mp_context=ctx) as ex:
            results = list(ex.map(read_all, [d, d, f["labels"]]))
            refused = ex.submit(try_write, d).result()
    for r in results[:2]:
        np.testing.assert_array_equal(r[0], DATA)
        assert r[2] == "r"
    np.testing.assert_array_equal(results[2][0], LABELS)
    assert refused != "written"


@pytest.mark.parametrize("method", START_METHODS)
def test_process_pool_writes_when_asked(store, method):
    ctx = multiprocessing.get_context(method)
    with h5lake.File(store, "r+") as f:
        d = f["grp/sub/data"]
        with concurrent.futures.ProcessPoolExecutor(2, mp_context=ctx) as ex:
            # Refused before anything reaches a child...
            with pytest.raises(TypeError, match="picklable"):
                ex.submit(write_row, d, 0, 1.0).result()
            # ...and written by the children when asked for explicitly.
            h = d.picklable(writable=True)
            modes = list(ex.map(write_row, [h] * 6, range(6), [float(100 + i) for i in range(6)]))
        assert modes == ["r+"] * 6
        np.testing.assert_array_equal(d[:, 0], np.arange(100.0, 106.0))


# -- S3 ---------------------------------------------------------------------------

def test_s3_pickle_and_pools(s3_root):
    url = make_store(f"{s3_root}/run.h5")
    with h5lake.File(url, "r") as f:
        d = f["grp/sub/data"]
        d2 = roundtrip(d)
        assert d2.file.filename == url
        np.testing.assert_array_equal(d2[()], DATA)
        for method in START_METHODS:
            ctx = multiprocessing.get_context(method)
            with concurrent.futures.ProcessPoolExecutor(2, mp_context=ctx) as ex:
                out = list(ex.map(read_all, [d, f["labels"]]))
            np.testing.assert_array_equal(out[0][0], DATA)
            np.testing.assert_array_equal(out[1][0], LABELS)
            assert out[0][1:] == ("/grp/sub/data", "r", url)


def test_s3_writable_when_asked(s3_root):
    url = make_store(f"{s3_root}/w.h5")
    with h5lake.File(url, "r+") as f:
        d = f["grp/sub/data"]
        with pytest.raises(TypeError, match="open for writing"):
            pickle.dumps(d)
        ctx = multiprocessing.get_context(START_METHODS[0])
        with concurrent.futures.ProcessPoolExecutor(2, mp_context=ctx) as ex:
            h = d.picklable(writable=True)
            list(ex.map(write_row, [h, h], [2, 3], [5.0, 6.0]))
    with h5lake.File(url, "r") as f:
        got = f["grp/sub/data"][()]
    want = DATA.copy()
    want[2], want[3] = 5.0, 6.0
    np.testing.assert_array_equal(got, want)


def test_objects_of_an_hdf5_file_opened_in_place_pickle_by_path(tmp_path):
    """An HDF5 file opened in place gets new object ids each time it opens:
    its groups and datasets go to another process by path."""
    h5py = pytest.importorskip("h5py")
    path = tmp_path / "f.h5"
    with h5py.File(path, "w") as f:
        f["x"] = np.arange(7)
        f.create_group("g")["y"] = np.ones(3)
    with h5lake.File(path, "r") as f:
        for name in ("x", "g/y"):
            with concurrent.futures.ProcessPoolExecutor(1) as pool:
                got, seen, mode, _ = pool.submit(read_all, f[name]).result()
            np.testing.assert_array_equal(got, f[name][()])
            assert (seen, mode) == ("/" + name, "r")
        assert list(pickle.loads(pickle.dumps(f["g"]))) == ["y"]


def test_an_object_moved_since_it_was_pickled_is_named_where_it_is(tmp_path):
    path = tmp_path / "m.h5l"
    with h5lake.File(path, "w") as f:
        f.create_dataset("g/d", data=np.arange(3))
    with h5lake.File(path, "r") as f:
        sent = pickle.dumps(f["g/d"])
    with h5lake.File(path, "a") as f:
        f.move("g", "g2")
    got = pickle.loads(sent)
    assert got.name == "/g2/d"
    np.testing.assert_array_equal(got[()], np.arange(3))
