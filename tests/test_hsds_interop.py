"""Interop with a real HSDS (PyPI ``hsds`` 1.0.2, started here on 127.0.0.1):
a domain h5lake wrote is served by HSDS and read back through h5pyd, and a
domain written through HSDS is read by h5lake straight from the bucket
directory. Values are compared element by element."""

import os

import numpy as np
import pytest

import h5lake
import hsds_server

h5pyd = pytest.importorskip("h5pyd")

pytestmark = pytest.mark.skipif(not hsds_server.available(),
                                reason="HSDS not installed (pip install hsds h5pyd)")

PT = np.dtype([("x", "<f4"), ("id", "<i8"), ("flags", "u1", (3,))])


@pytest.fixture(scope="module")
def hsds(tmp_path_factory):
    srv = hsds_server.HsdsServer(tmp_path_factory.mktemp("hsds-root"))
    srv.start()
    srv.make_folder("/home/")
    srv.make_folder("/home/test_user1/", owner="test_user1")
    yield srv
    srv.stop()


def _particles(n):
    a = np.zeros(n, dtype=PT)
    a["x"] = np.arange(n) * 0.5
    a["id"] = np.arange(n) * 7
    a["flags"] = [1, 2, 3]
    return a


def _write_content(f, lib):
    """The same tree through either API."""
    f.attrs["title"] = "interop"
    f.attrs["scales"] = np.array([0.5, 1.5])
    g = f.create_group("inst/det")
    g.attrs["units"] = "counts"
    f.create_dataset("inst/det/frames", data=np.arange(5 * 40 * 30, dtype=np.uint16).reshape(5, 40, 30),
                     chunks=(1, 16, 16), compression="gzip", shuffle=True)
    d = f.create_dataset("grid", data=np.linspace(0, 1, 20 * 30, dtype=np.float32).reshape(20, 30),
                         chunks=(8, 16), maxshape=(None, 30), fillvalue=-1.0)
    d.resize((26, 30))
    f.create_dataset("particles", data=_particles(300), chunks=(64,))
    s = f.create_dataset("names", (3,), dtype=lib.string_dtype())
    s[...] = ["alpha", "béta", "a longer string"]
    f.create_dataset("scalar", data=np.float64(3.25))
    row = np.dtype([("id", "<i4"), ("name", lib.string_dtype()), ("hits", lib.vlen_dtype(np.dtype("<i2")))])
    t = f.create_dataset("table", (3,), dtype=row, chunks=(2,))
    t[0] = (1, "alpha", np.array([1, 2], "<i2"))
    t[2] = (3, "\u03b3", np.array([7], "<i2"))
    f["soft"] = lib.SoftLink("/grid")
    f["hard"] = f["grid"]


def _check_content(f):
    assert sorted(f) == ["grid", "hard", "inst", "names", "particles", "scalar", "soft", "table"]
    assert f.attrs["title"] == "interop"
    np.testing.assert_array_equal(f.attrs["scales"], [0.5, 1.5])
    assert f["inst/det"].attrs["units"] == "counts"
    fr = f["inst/det/frames"]
    assert fr.chunks == (1, 16, 16) and fr.compression == "gzip"
    np.testing.assert_array_equal(fr[()], np.arange(5 * 40 * 30, dtype=np.uint16).reshape(5, 40, 30))
    np.testing.assert_array_equal(fr[2, 3:37:4, ::7], np.arange(5 * 40 * 30).reshape(5, 40, 30)[2, 3:37:4, ::7])
    grid = f["grid"]
    assert grid.shape == (26, 30) and grid.maxshape == (None, 30)
    want = np.full((26, 30), -1.0, np.float32)
    want[:20] = np.linspace(0, 1, 20 * 30, dtype=np.float32).reshape(20, 30)
    np.testing.assert_array_equal(grid[()], want)
    np.testing.assert_array_equal(f["soft"][()], want)
    np.testing.assert_array_equal(f["hard"][()], want)
    got = f["particles"][()]
    assert got.dtype == PT
    np.testing.assert_array_equal(got, _particles(300))
    names = [n.decode() if isinstance(n, bytes) else n for n in f["names"][()]]
    assert names == ["alpha", "béta", "a longer string"]
    assert f["scalar"][()] == 3.25
    # compound members of variable length (HSDS's record form in the chunks)
    rows = f["table"][()]
    assert [int(r[0]) for r in rows] == [1, 0, 3]
    assert [r[1].decode() if isinstance(r[1], bytes) else r[1] for r in rows] == ["alpha", "", "\u03b3"]
    # (h5pyd gives an empty sequence as the int 0)
    assert [[] if isinstance(r[2], int) else list(r[2]) for r in rows] == [[1, 2], [], [7]]


def test_hsds_serves_what_h5lake_wrote(hsds):
    path = os.path.join(hsds.bucket_dir, "home/test_user1/from_h5lake.h5")
    with h5lake.File(path, "w") as f:
        _write_content(f, h5lake)
    # HSDS's ACLs: h5lake made the current user the owner; hand it to test_user1.
    with h5lake.File(path, "r") as f:
        assert f.filename
    with h5pyd.File("/home/test_user1/from_h5lake.h5", "r", **hsds.h5pyd_kwargs("admin")) as f:
        _check_content(f)


def test_h5lake_reads_what_hsds_wrote(hsds):
    with h5pyd.File("/home/test_user1/from_hsds.h5", "w", **hsds.h5pyd_kwargs()) as f:
        _write_content(f, h5pyd)
    hsds.flush("/home/test_user1/from_hsds.h5")
    hsds.stop()     # h5lake changes it below; HSDS must not serve a stale cache
    try:
        path = os.path.join(hsds.bucket_dir, "home/test_user1/from_hsds.h5")
        with h5lake.File(path, "r") as f:
            _check_content(f)
        # h5lake can change it, and HSDS reads the change.
        with h5lake.File(path, "r+") as f:
            f["grid"][0, :5] = 9.0
            f.attrs["edited_by"] = "h5lake"
    finally:
        hsds.start()
    with h5pyd.File("/home/test_user1/from_hsds.h5", "r", **hsds.h5pyd_kwargs()) as f:
        assert f.attrs["edited_by"] == "h5lake"
        np.testing.assert_array_equal(f["grid"][0, :6], [9, 9, 9, 9, 9, f["grid"][0, 5]])


def test_hsds_reads_a_linked_load(hsds, tmp_path):
    """``h5lake load --link`` with hyper-chunks writes HSDS's chunk-table
    layout; HSDS resolves ``file_uri`` relative to its root directory."""
    h5py = pytest.importorskip("h5py")
    src_rel = "hsdstest/files/src.h5"
    src = os.path.join(hsds.root_dir, src_rel)
    os.makedirs(os.path.dirname(src), exist_ok=True)
    data = np.arange(60_000, dtype=np.float64)
    with h5py.File(src, "w") as f:
        f.create_dataset("x", data=data, chunks=(1000,), compression="gzip")
    dest = os.path.join(hsds.bucket_dir, "home/test_user1/linked.h5")
    h5lake.load(src, dest, link=True, hyperchunk=16000)
    with h5lake.File(dest, "r") as f:
        np.testing.assert_array_equal(f["x"][()], data)
    with h5pyd.File("/home/test_user1/linked.h5", "r", **hsds.h5pyd_kwargs("admin")) as f:
        np.testing.assert_array_equal(f["x"][1234:56789:3], data[1234:56789:3])
