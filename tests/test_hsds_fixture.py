"""Read the store that real HSDS 1.0.2 wrote (via h5pyd 1.0.0) and check
every value that ``make_fixture.py`` put there."""

import os
from pathlib import Path

import numpy as np
import pytest

import h5lake

# A copy of ../shared/fixtures/hsds-store (written by HSDS 1.0.2 through h5pyd).
FIXTURE_DIR = Path(__file__).resolve().parent / "data/hsds-store"
DOMAIN = FIXTURE_DIR / "hsdstest/home/test_user1/fixture.h5"

PT = np.dtype([("x", "<f4"), ("y", "<f4"), ("z", "<f4"), ("id", "<i8"), ("flags", "u1", (3,))])


@pytest.fixture(scope="module")
def f():
    if not (DOMAIN / ".domain.json").exists():
        pytest.skip(f"HSDS fixture not found at {DOMAIN}")
    with h5lake.File(str(DOMAIN), "r") as fh:
        yield fh


def _snapshot(root):
    out = {}
    for dirpath, _, files in os.walk(root):
        for n in files:
            p = os.path.join(dirpath, n)
            st = os.stat(p)
            out[p] = (st.st_size, st.st_mtime_ns)
    return out


def test_open_readonly_changes_nothing():
    if not (DOMAIN / ".domain.json").exists():
        pytest.skip("HSDS fixture not found")
    before = _snapshot(FIXTURE_DIR / "hsdstest")
    with h5lake.File(str(DOMAIN), "r") as fh:
        assert fh.mode == "r"
        list(fh)
        fh["grid"][()]
        dict(fh.attrs)
    assert _snapshot(FIXTURE_DIR / "hsdstest") == before


def test_root(f):
    assert sorted(f.keys()) == ["be_ints", "ext", "grid", "hard_grid", "instrument",
                                "link_to_grid", "names", "particles", "scalar"]
    assert len(f) == 9
    assert f.name == "/"
    assert isinstance(f["instrument"], h5lake.Group)
    assert list(f["instrument"]) == ["detector"]


def test_root_attrs(f):
    assert sorted(f.attrs) == ["scales", "title", "version"]
    title = f.attrs["title"]
    assert isinstance(title, str)
    assert title == "h5lake interop fixture written by HSDS 1.0.2"
    v = f.attrs["version"]
    assert isinstance(v, np.int32) and v == 3
    s = f.attrs["scales"]
    assert isinstance(s, np.ndarray) and s.dtype == np.float64 and s.shape == (3,)
    np.testing.assert_array_equal(s, [0.5, 1.5, 2.5])


def test_group_attrs(f):
    g = f["instrument/detector"]
    assert g.name == "/instrument/detector"
    assert dict(g.attrs) == {"units": "counts"}
    assert isinstance(g.attrs["units"], str)
    assert sorted(g) == ["frames"]


def test_gzip_3d_frames(f):
    d = f["instrument/detector/frames"]
    expect = np.arange(64 * 48 * 5, dtype=np.uint16).reshape(5, 64, 48)
    assert d.shape == (5, 64, 48)
    assert d.dtype == np.dtype("<u2")
    assert d.chunks == (1, 32, 24)
    assert d.compression == "gzip"
    assert d.compression_opts == 6
    assert d.shuffle is True
    got = d[()]
    assert got.dtype == np.uint16
    np.testing.assert_array_equal(got, expect)
    np.testing.assert_array_equal(d[2, 10:50:3, -5:], expect[2, 10:50:3, -5:])
    np.testing.assert_array_equal(d[:, 31:33, 23:25], expect[:, 31:33, 23:25])  # across chunk edges
    assert d.attrs["exposure_s"] == 0.25
    assert isinstance(d.attrs["exposure_s"], np.float64)


def test_resized_grid_fillvalue(f):
    d = f["grid"]
    base = np.linspace(0, 1, 40 * 30, dtype=np.float32).reshape(40, 30)
    assert d.shape == (48, 30)
    assert d.maxshape == (None, 30)
    assert d.chunks == (16, 16)
    assert d.dtype == np.float32
    assert d.fillvalue == -1.0
    got = d[()]
    np.testing.assert_array_equal(got[:40], base)
    np.testing.assert_array_equal(got[40:], np.full((8, 30), -1.0, np.float32))
    np.testing.assert_array_equal(d[38:42, 14:18], np.concatenate([base[38:40, 14:18],
                                                                  np.full((2, 4), -1, np.float32)]))


def test_compound_particles(f):
    d = f["particles"]
    assert d.shape == (1000,)
    assert d.chunks == (250,)
    assert d.dtype == PT
    a = d[()]
    np.testing.assert_array_equal(a["x"], np.arange(1000, dtype=np.float32))
    np.testing.assert_array_equal(a["y"], -np.arange(1000, dtype=np.float32))
    np.testing.assert_array_equal(a["z"], np.full(1000, 0.5, np.float32))
    np.testing.assert_array_equal(a["id"], np.arange(1000) * 7)
    np.testing.assert_array_equal(a["flags"], np.tile(np.array([1, 2, 3], np.uint8), (1000, 1)))
    np.testing.assert_array_equal(d["id"][249:251], [249 * 7, 250 * 7])
    one = d[999]
    assert one["id"] == 999 * 7 and one["x"] == 999.0


def test_vlen_strings(f):
    d = f["names"]
    assert d.shape == (4,)
    info = h5lake.check_string_dtype(d.dtype)
    assert info is not None and info.encoding == "utf-8" and info.length is None
    expect = ["alpha", "béta", "", "a much longer string of text"]
    raw = d[()]
    assert raw.dtype == object
    assert list(raw) == [s.encode("utf-8") for s in expect]   # h5py returns bytes
    assert list(d.asstr()[()]) == expect
    assert d.asstr()[1] == "béta"


def test_scalar(f):
    d = f["scalar"]
    assert d.shape == ()
    assert d.ndim == 0
    v = d[()]
    assert isinstance(v, np.float64) and v == 3.25
    with pytest.raises(TypeError):
        len(d)


def test_big_endian_ints(f):
    d = f["be_ints"]
    assert d.dtype == np.dtype(">i4")
    assert d.shape == (10,)
    got = d[()]
    assert got.dtype == np.dtype(">i4")
    np.testing.assert_array_equal(got, np.arange(10))
    assert d[-1] == 9


def test_soft_link(f):
    lk = f.get("link_to_grid", getlink=True)
    assert isinstance(lk, h5lake.SoftLink) and lk.path == "/grid"
    assert f.get("link_to_grid", getclass=True) is h5lake.Dataset
    np.testing.assert_array_equal(f["link_to_grid"][()], f["grid"][()])
    assert f["link_to_grid"] == f["grid"]


def test_hard_link(f):
    assert isinstance(f.get("hard_grid", getlink=True), h5lake.HardLink)
    assert isinstance(f.get("grid", getlink=True), h5lake.HardLink)
    assert f["hard_grid"] == f["grid"]
    np.testing.assert_array_equal(f["hard_grid"][()], f["grid"][()])
    assert f["hard_grid"].fillvalue == -1.0


def test_external_link_missing_domain(f):
    lk = f.get("ext", getlink=True)
    assert isinstance(lk, h5lake.ExternalLink)
    assert lk.path == "/data"
    assert lk.filename == "/home/test_user1/other.h5"
    assert f.get("ext", getclass=True, getlink=True) is h5lake.ExternalLink
    with pytest.raises(KeyError):
        f["ext"]
    assert "ext" in f          # h5py: the link exists even though its target does not
    assert f.get("ext") is None


def test_visit(f):
    names = []
    f.visit(names.append)
    # each object once; the external link is not followed
    assert "instrument/detector/frames" in names
    assert "grid" in names and "particles" in names
    assert not any(n.startswith("ext") for n in names)
