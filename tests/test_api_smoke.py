"""End-to-end smoke tests of the h5py-shaped API (h5lake._hl) over the engine.

Where h5py is installed, behaviour is compared with it directly (same
operations on an .h5 file and on an h5lake store).
"""

import os

import numpy as np
import pytest

pytest.importorskip("h5lake._core")

import h5lake  # noqa: E402

try:
    import h5py
except ImportError:  # pragma: no cover
    h5py = None

needs_h5py = pytest.mark.skipif(h5py is None, reason="h5py not installed")


@pytest.fixture
def f(tmp_path):
    with h5lake.File(str(tmp_path / "t.h5l"), "w") as fh:
        yield fh


@pytest.fixture
def pair(tmp_path):
    """(h5lake file, h5py file) for differential checks."""
    if h5py is None:
        pytest.skip("h5py not installed")
    a = h5lake.File(str(tmp_path / "t.h5l"), "w")
    b = h5py.File(str(tmp_path / "t.h5"), "w")
    yield a, b
    a.close()
    b.close()


def outcome(fn):
    """Value or exception type of ``fn()``, comparable across libraries."""
    try:
        r = fn()
    except Exception as e:  # noqa: BLE001
        return ("raises", type(e))
    if isinstance(r, np.ndarray):
        return ("array", r.dtype, r.shape, r.tolist())
    if isinstance(r, np.generic):
        return ("scalar", type(r), r.item() if r.dtype.kind != "V" else r.tolist())
    return ("value", r)


# ---------------------------------------------------------------------------
# files
# ---------------------------------------------------------------------------

def test_file_modes(tmp_path):
    p = str(tmp_path / "m.h5l")
    with pytest.raises(FileNotFoundError):
        h5lake.File(p, "r")
    with pytest.raises(ValueError):
        h5lake.File(p, "q")
    with h5lake.File(p, "w") as fh:
        assert fh.mode == "r+"
        assert fh.name == "/"
        assert fh.file == fh
        assert fh.filename == p
        assert repr(fh) == '<HDF5 file "m.h5l" (mode r+)>'
        fh["x"] = np.arange(3)
    for m in ("w-", "x"):
        with pytest.raises(FileExistsError):
            h5lake.File(p, m)
    with h5lake.File(p) as fh:
        assert fh.mode == "r"
        np.testing.assert_array_equal(fh["x"][:], [0, 1, 2])
        with pytest.raises(ValueError):
            fh.create_group("g")
        with pytest.raises(OSError):
            fh["x"][0] = 5
        with pytest.raises(OSError):
            fh.attrs["a"] = 1
    with h5lake.File(p, "a") as fh:
        assert fh.mode == "r+"
        assert list(fh) == ["x"]


def test_close_invalidates(tmp_path):
    fh = h5lake.File(str(tmp_path / "c.h5l"), "w")
    d = fh.create_dataset("d", data=[1, 2])
    g = fh.create_group("g")
    fh.close()
    fh.close()  # idempotent
    assert not fh and not d and not g
    assert repr(fh) == "<Closed HDF5 file>"
    assert repr(d) == "<Closed HDF5 dataset>"
    assert repr(g) == "<Closed HDF5 group>"
    with pytest.raises(ValueError):
        d[0]
    with pytest.raises(ValueError):
        fh["d"]
    with pytest.raises(ValueError):
        fh.mode


# ---------------------------------------------------------------------------
# groups & links
# ---------------------------------------------------------------------------

def test_groups_and_paths(f):
    g = f.create_group("a/b/c")
    assert g.name == "/a/b/c"
    assert f["a"]["b/c"] == g
    assert f["/a/b"].parent.name == "/a"
    assert f["."] == f["/"]
    assert "a/b" in f and "a/x" not in f and "x/y" not in f and "/" in f
    with pytest.raises(ValueError):
        f.create_group("a/b")
    with pytest.raises(KeyError):
        f["a/.."]
    with pytest.raises(KeyError):
        f["nope"]
    with pytest.raises(TypeError):
        f[1]
    assert f.require_group("a/b") == f["a/b"]
    f.create_dataset("a/d", data=1)
    with pytest.raises(TypeError):
        f.require_group("a/d")
    assert repr(f["a"]) == '<HDF5 group "/a" (2 members)>'


def test_order(f):
    for n in ("zz", "aa", "mm"):
        f.create_group(n)
    assert list(f) == ["aa", "mm", "zz"]
    g = f.create_group("t", track_order=True)
    for n in ("zz", "aa", "mm"):
        g.create_group(n)
        g.attrs[n] = 1
    assert list(g) == ["zz", "aa", "mm"]
    assert list(g.attrs) == ["zz", "aa", "mm"]
    for n in ("zz", "aa"):
        f.attrs[n] = 1
    assert list(f.attrs) == ["aa", "zz"]


def test_links(f):
    d = f.create_dataset("g/d", data=np.arange(3))
    f["hard"] = d
    assert f["hard"] == d
    assert f["hard"].name == "/hard"
    f["soft"] = h5lake.SoftLink("/g/d")
    assert f["soft"].name == "/soft"
    np.testing.assert_array_equal(f["soft"][:], [0, 1, 2])
    f["g/rel"] = h5lake.SoftLink("d")
    np.testing.assert_array_equal(f["g/rel"][:], [0, 1, 2])
    f["dangling"] = h5lake.SoftLink("/nothere")
    assert "dangling" in f
    with pytest.raises(KeyError):
        f["dangling"]
    assert f.get("dangling") is None
    lk = f.get("soft", getlink=True)
    assert isinstance(lk, h5lake.SoftLink) and lk.path == "/g/d"
    assert f.get("soft", getclass=True, getlink=True) is h5lake.SoftLink
    assert isinstance(f.get("hard", getlink=True), h5lake.HardLink)
    assert f.get("hard", getclass=True) is h5lake.Dataset
    assert f.get("g", getclass=True) is h5lake.Group
    assert f.get("nope", 5) == 5
    with pytest.raises(OSError):
        f["hard"] = d
    del f["hard"]
    assert "hard" not in f
    with pytest.raises(KeyError):
        del f["hard"]


def test_external_link(tmp_path):
    with h5lake.File(str(tmp_path / "other.h5l"), "w") as o:
        o.create_dataset("grp/x", data=np.arange(4))
    with h5lake.File(str(tmp_path / "main.h5l"), "w") as fh:
        fh["ext"] = h5lake.ExternalLink("other.h5l", "/grp")
        lk = fh.get("ext", getlink=True)
        assert (lk.filename, lk.path) == ("other.h5l", "/grp")
        np.testing.assert_array_equal(fh["ext/x"][:], np.arange(4))
        assert fh["ext/x"].name == "/grp/x"
        fh["ext/x"][0] = 9
        fh["bad"] = h5lake.ExternalLink("missing.h5l", "/x")
        with pytest.raises(KeyError):
            fh["bad"]
    with h5lake.File(str(tmp_path / "other.h5l"), "r") as o:
        assert o["grp/x"][0] == 9


def test_move_copy_visit(f):
    f.create_dataset("a/b/d", data=[1, 2, 3])
    f["a"].attrs["k"] = "v"
    f.move("a/b", "a/c")
    assert list(f["a"]) == ["c"]
    with pytest.raises(ValueError):
        f.move("nope", "x")
    f.create_group("z")
    with pytest.raises(ValueError):
        f.move("z", "a")
    f.copy("a", "a2")
    np.testing.assert_array_equal(f["a2/c/d"][:], [1, 2, 3])
    assert f["a2"].attrs["k"] == "v"
    f.copy(f["a/c/d"], f["z"])
    assert "z/d" in f
    f.copy("a", f["z"], name="named", without_attrs=True)
    assert len(f["z/named"].attrs) == 0
    with pytest.raises(RuntimeError):
        f.copy("a", "a2")
    f["hl"] = f["a"]
    names = []
    f.visit(names.append)
    assert names == ["a", "a/c", "a/c/d", "a2", "a2/c", "a2/c/d",
                     "z", "z/d", "z/named", "z/named/c", "z/named/c/d"]
    items = []
    f.visititems(lambda n, o: items.append(o.name))
    assert items[0] == "/a"
    assert f.visit(lambda n: n if n.endswith("d") else None) == "a/c/d"


def test_copy_between_files(tmp_path, f):
    f.create_dataset("g/big", data=np.arange(1000).reshape(100, 10), chunks=(7, 10))
    f["g/s"] = h5lake.SoftLink("/g/big")
    with h5lake.File(str(tmp_path / "dest.h5l"), "w") as g:
        f.copy(f["g"], g)
        np.testing.assert_array_equal(g["g/big"][:], np.arange(1000).reshape(100, 10))
        assert g["g/big"].chunks == (7, 10)
        assert g.get("g/s", getlink=True).path == "/g/big"


# ---------------------------------------------------------------------------
# datasets
# ---------------------------------------------------------------------------

def test_dataset_basics(f):
    d = f.create_dataset("x", data=np.arange(12).reshape(3, 4))
    assert d.shape == (3, 4) and d.ndim == 2 and d.size == 12 and d.nbytes == 96
    assert d.dtype == np.dtype("<i8") and d.chunks is None and d.maxshape == (3, 4)
    assert repr(d) == '<HDF5 dataset "x": shape (3, 4), type "<i8">'
    assert len(d) == 3
    assert d.fillvalue == 0
    np.testing.assert_array_equal(np.asarray(d), np.arange(12).reshape(3, 4))
    with pytest.raises(ValueError):
        d.__array__(copy=False)
    s = f.create_dataset("s", data=5.5)
    assert s[()] == 5.5 and isinstance(s[()], np.float64)
    assert s.shape == () and s[...].shape == ()
    with pytest.raises(TypeError):
        len(s)
    e = f.create_dataset("e", data=h5lake.Empty("f4"))
    assert e.shape is None and isinstance(e[()], h5lake.Empty)
    anon = f.create_dataset(None, data=[1, 2])
    assert anon.name is None and repr(anon).startswith("<HDF5 dataset (anonymous)")


@needs_h5py
@pytest.mark.parametrize("idx", [
    (), Ellipsis, 0, -1, 10, -11, slice(None), slice(2, 8, 3), slice(5, 2), slice(20, 30),
    slice(None, None, -1), [1, 3], [3, 1], [1, 1], [], np.array([0, 9]),
    (Ellipsis, Ellipsis), (1, 2), 1.5, None, np.arange(10) > 4, np.array([True, False]),
])
def test_read_selection_1d(pair, idx):
    a, b = pair
    data = np.arange(10)
    da = a.create_dataset("x", data=data)
    db = b.create_dataset("x", data=data)
    assert outcome(lambda: da[idx]) == outcome(lambda: db[idx])


@needs_h5py
@pytest.mark.parametrize("idx", [
    (1, 2), (slice(None), 1), (Ellipsis, 2), ([0, 2], 1), (1, [0, 2]), (slice(1, None), [0, 3]),
    ([0, 1], [0, 1]), np.s_[::2, 1:3], "__mask__", np.array([True, False, True]),
    (slice(None), np.array([True, False, True, False])), (0, 0, 0),
])
def test_read_selection_2d(pair, idx):
    a, b = pair
    data = np.arange(12).reshape(3, 4)
    da = a.create_dataset("x", data=data)
    db = b.create_dataset("x", data=data)
    if isinstance(idx, str):
        idx = data % 3 == 0
    assert outcome(lambda: da[idx]) == outcome(lambda: db[idx])


@needs_h5py
@pytest.mark.parametrize("idx,val", [
    (np.s_[0:4], np.arange(3)),
    (np.s_[0:4], np.arange(4)),
    (np.s_[0:4], np.arange(4).reshape(1, 4)),
    (np.s_[:], 7),
    (np.s_[[1, 3]], [10, 30]),
    (np.s_[[1, 3]], 5),
    (np.s_[5:5], []),
    (np.s_[2], 2.7),
    (np.s_[0], "x"),
])
def test_write_1d(pair, idx, val):
    a, b = pair
    da = a.create_dataset("x", data=np.arange(10))
    db = b.create_dataset("x", data=np.arange(10))
    ra = outcome(lambda: da.__setitem__(idx, val))
    rb = outcome(lambda: db.__setitem__(idx, val))
    assert ra == rb
    np.testing.assert_array_equal(da[:], db[:])


@needs_h5py
def test_write_2d_broadcast(pair):
    a, b = pair
    for lib in pair:
        d = lib.create_dataset("x", data=np.zeros((3, 4), "i4"))
        d[:] = [1, 2, 3, 4]
        d[:, 0] = [7, 8, 9]
        d[1] = np.arange(4)[None, :]
        d[d[:] > 7] = 0
        lib.create_dataset("y", data=np.zeros((3, 4)))
    np.testing.assert_array_equal(a["x"][:], b["x"][:])
    for val in (np.arange(8).reshape(2, 4), [[1], [2]], np.ones((3, 5))):
        assert outcome(lambda: a["y"].__setitem__(np.s_[0:2], val)) == \
            outcome(lambda: b["y"].__setitem__(np.s_[0:2], val))
    np.testing.assert_array_equal(a["y"][:], b["y"][:])


def test_resize_and_chunks(f):
    c = f.create_dataset("c", (10,), "i4", chunks=(3,), maxshape=(None,), fillvalue=-1)
    assert c.maxshape == (None,) and c.chunks == (3,)
    np.testing.assert_array_equal(c[:], [-1] * 10)
    c[:] = np.arange(10)
    c.resize((13,))
    np.testing.assert_array_equal(c[:], list(range(10)) + [-1] * 3)
    c.resize(5, axis=0)
    c.resize(8, axis=0)
    np.testing.assert_array_equal(c[:], list(range(5)) + [-1] * 3)
    with pytest.raises(TypeError):
        f.create_dataset("n", data=[1]).resize((2,))
    m = f.create_dataset("m", (2,), "i4", maxshape=(4,))
    with pytest.raises(ValueError):
        m.resize((5,))
    assert m.shape == (2,)
    ic = f.create_dataset("ic", (10, 7), "i4", chunks=(4, 3))
    assert list(ic.iter_chunks(np.s_[1:6, 2])) == [
        (slice(1, 4, 1), slice(2, 3, 1)), (slice(4, 6, 1), slice(2, 3, 1))]
    assert len(list(ic.iter_chunks())) == 9
    with pytest.raises(TypeError):
        list(f["n"].iter_chunks())


def test_create_dataset_options(f):
    d = f.create_dataset("z", (100, 100), "f4", compression="gzip", shuffle=True)
    assert d.compression == "gzip" and d.compression_opts == 4 and d.shuffle and d.chunks
    with pytest.raises(ValueError):
        f.create_dataset("z", (1,), "i4")
    with pytest.raises(TypeError):
        f.create_dataset("q")
    with pytest.raises(ValueError):
        f.create_dataset("q", shape=(3,), data=[1, 2])
    np.testing.assert_array_equal(f.create_dataset("q2", shape=(2, 2), data=[1, 2, 3, 4])[:],
                                  [[1, 2], [3, 4]])
    with pytest.raises(ValueError):
        f.create_dataset("cc", (3,), "i4", chunks=(5,))
    assert "cc" not in f
    f.create_dataset("r", (3,), "i4", maxshape=(None,))
    with pytest.raises(TypeError):
        f.require_dataset("r", (5,), "i4")
    with pytest.raises(TypeError):
        f.require_dataset("r", (3,), "f8")
    assert f.require_dataset("r", (3,), "i2") == f["r"]
    with pytest.raises(TypeError):
        f.require_dataset("r", (3,), "i2", exact=True)
    like = f.create_dataset_like("like", d)
    assert like.shape == d.shape and like.compression == "gzip"


def test_strings(f):
    v = f.create_dataset("v", data=["a", "bcd"])
    assert v.dtype.kind == "O" and h5lake.check_string_dtype(v.dtype).encoding == "utf-8"
    assert v[0] == b"a"
    np.testing.assert_array_equal(v[:], np.array([b"a", b"bcd"], dtype=object))
    assert v.asstr()[1] == "bcd"
    v[0] = "héllo"
    assert v.asstr()[0] == "héllo"
    with pytest.raises(TypeError):
        v[0] = 5
    with pytest.raises(TypeError):
        f.create_dataset("x", data=[1]).asstr()
    fs = f.create_dataset("fs", data=np.array([b"ab", b"c"]))
    assert fs.dtype == np.dtype("S2") and fs[0] == b"ab"
    assert list(fs.asstr()[:]) == ["ab", "c"]
    sc = f.create_dataset("sc", data="hello")
    assert sc[()] == b"hello"


def test_vlen_sequences(f):
    vs = f.create_dataset("vs", (3,), dtype=h5lake.vlen_dtype("i4"))
    vs[0] = [1, 2, 3]
    np.testing.assert_array_equal(vs[0], [1, 2, 3])
    assert vs[1].dtype == np.int32 and len(vs[1]) == 0


def test_compound(f):
    dt = np.dtype([("x", "i4"), ("y", "f8")])
    c = f.create_dataset("c", data=np.array([(1, 2.0), (3, 4.0)], dtype=dt))
    np.testing.assert_array_equal(c["x"], [1, 3])
    assert c[0, "y"] == 2.0
    np.testing.assert_array_equal(c.fields("y")[:], [2.0, 4.0])
    with pytest.raises(ValueError):
        c["nope"]
    c["x"] = [7, 8]
    c[0, "y"] = 9.5
    assert c[:].tolist() == [(7, 9.5), (8, 4.0)]


def test_astype_and_direct(f):
    d = f.create_dataset("m", data=np.arange(20).reshape(4, 5))
    a = d.astype("f4")[1:3]
    assert a.dtype == np.float32 and a.shape == (2, 5)
    assert np.asarray(d.astype("i2")).dtype == np.int16
    out = np.zeros((3, 3), "i8")
    d.read_direct(out, np.s_[1:3, 2:4], np.s_[0:2, 0:2])
    np.testing.assert_array_equal(out[:2, :2], [[7, 8], [12, 13]])
    full = np.empty((4, 5), "i8")
    d.read_direct(full)
    np.testing.assert_array_equal(full, np.arange(20).reshape(4, 5))
    d.write_direct(np.full((2, 2), 7), None, np.s_[0:2, 0:2])
    np.testing.assert_array_equal(d[:2, :2], [[7, 7], [7, 7]])


def test_attrs(f):
    a = f.attrs
    a["i"] = 1
    a["l"] = [1, 2]
    a["s"] = "hello"
    assert a["i"] == 1 and isinstance(a["i"], np.int64)
    assert a["s"] == "hello"
    np.testing.assert_array_equal(a["l"], [1, 2])
    assert "i" in a and "x" not in a and len(a) == 3
    with pytest.raises(KeyError):
        a["x"]
    with pytest.raises(KeyError):
        del a["x"]
    a.create("c", data=np.arange(6), shape=(2, 3))
    assert a["c"].shape == (2, 3)
    with pytest.raises(ValueError):
        a.create("c2", data=np.arange(6), shape=(4,))
    assert "c2" not in a
    a.create("f", data=[1, 2], dtype="f4")
    a.modify("f", [5, 6])
    assert a["f"].dtype == np.float32 and a["f"].tolist() == [5.0, 6.0]
    with pytest.raises(TypeError):
        a.modify("f", [1, 2, 3])
    a["e"] = h5lake.Empty("f4")
    assert isinstance(a["e"], h5lake.Empty)
    with pytest.raises(TypeError):
        a["n"] = None
    del a["i"]
    assert "i" not in a
    d = f.create_dataset("d", data=[1])
    d.attrs["units"] = "m"
    assert dict(d.attrs) == {"units": "m"}


def test_committed_datatype(f):
    f["t"] = np.dtype("i2")
    t = f["t"]
    assert isinstance(t, h5lake.Datatype) and t.dtype == np.dtype("i2")
    assert repr(t) == '<HDF5 named type "t" (dtype <i2)>'
    d = f.create_dataset("d", (2,), dtype=t)
    assert d.dtype == np.dtype("i2")
    # Linked to the committed type, as h5py's: its type is that datatype.
    assert d.id.get_type().committed() and d.id.get_type() == t.id
    assert not f.create_dataset("plain", (2,), dtype="i2").id.get_type().committed()


def test_rejected_calls_write_nothing(f):
    with pytest.raises(TypeError):
        f.create_dataset("u", data=np.array(["a"]))      # numpy U has no HDF5 type
    assert "u" not in f
    with pytest.raises(ValueError):
        f.create_dataset("n1/n2", (3,), "i4", chunks=(5,))
    assert "n1" not in f
    d = f.create_dataset("x", data=np.arange(4))
    with pytest.raises(TypeError):
        d[0:4] = np.arange(3)
    np.testing.assert_array_equal(d[:], np.arange(4))
    with pytest.raises(ValueError):
        d[0] = "x"
    np.testing.assert_array_equal(d[:], np.arange(4))


def test_reopen_persists(tmp_path):
    p = str(tmp_path / "p.h5l")
    with h5lake.File(p, "w") as fh:
        fh.create_dataset("g/d", data=np.arange(6, dtype=">i4").reshape(2, 3), chunks=(1, 3))
        fh["g"].attrs["a"] = 1.5
        fh["g/s"] = h5lake.SoftLink("/g/d")
    with h5lake.File(p, "r") as fh:
        d = fh["g/d"]
        assert d.dtype == np.dtype(">i4") and d.chunks == (1, 3)
        np.testing.assert_array_equal(d[:], np.arange(6).reshape(2, 3))
        assert fh["g"].attrs["a"] == 1.5
        np.testing.assert_array_equal(fh["g/s"][1], [3, 4, 5])
    assert os.path.exists(p)


def test_handles_opened_before_a_move_give_the_new_path(tmp_path):
    with h5lake.File(tmp_path / "m.h5l", "w") as f:
        f["h/i/d"] = np.arange(2)
        d, g = f["h/i/d"], f["h/i"]
        f.move("h/i", "moved")
        f["moved"].move("d", "d2")
        f.move("h", "hh")
        assert (d.name, g.name, d.parent.name) == ("/moved/d2", "/moved", "/moved")
        f["h2"] = np.arange(1)                      # made after the moves: not renamed
        assert f["h2"].name == "/h2"


@pytest.mark.parametrize("mode", ["w-", "x"])
def test_exclusive_create_over_any_existing_file_raises_file_exists(tmp_path, mode):
    plain = tmp_path / "notes.txt"
    plain.write_text("keep me")
    with pytest.raises(FileExistsError):
        h5lake.File(plain, mode)
    assert plain.read_text() == "keep me"
    dangling = tmp_path / "gone"
    os.symlink(tmp_path / "nowhere", dangling)
    with pytest.raises(FileExistsError):
        h5lake.File(dangling, mode)
    assert not (tmp_path / "nowhere").exists()


def test_a_copy_into_another_store_has_null_references_as_h5py_gives(tmp_path):
    """What a reference names stays behind in the source store, so the
    copy's references are null (as h5py copies into another file), never
    ids that lead nowhere or to another object there."""
    with h5lake.File(tmp_path / "src.h5l", "w") as f, h5lake.File(tmp_path / "dst.h5l", "w") as g:
        x = f.create_dataset("x", data=np.arange(3.0))
        x.make_scale("x")
        d = f.create_dataset("d", data=np.arange(3.0))
        d.dims[0].attach_scale(x)
        f.create_dataset("refs", data=np.array([x.ref, d.ref], dtype=h5lake.ref_dtype))
        f.copy("d", g)
        f.copy("refs", g)
        f.copy("refs", "refs_here")                 # within a store: references kept
        assert [bool(r) for r in g["refs"][()]] == [False, False]
        assert not g["d"].attrs["DIMENSION_LIST"][0][0]
        assert [f[r].name for r in f["refs_here"][()]] == ["/x", "/d"]


def test_handles_of_objects_deleted_or_moved_around_give_where_they_are(tmp_path):
    """A handle opened by reference, then a chain of moves; a handle whose
    object was unlinked (its path since taken by another): each names
    where its own object is, or None, as libhdf5 names them."""
    with h5lake.File(tmp_path / "n.h5l", "w") as f:
        f["a"], f["b"] = np.arange(1), np.arange(2)
        by_ref = f[f["b"].ref]
        f.move("a", "c")
        f.move("b", "a")
        assert by_ref.name == "/a" and len(by_ref) == 2
        h = f["c"]
        del f["c"]
        assert h.name is None
        f["c"] = np.arange(3)
        f.move("c", "d")
        assert h.name is None and f["d"].name == "/d"


def test_a_member_of_compound_type_is_written_by_name(tmp_path):
    """d["ls", 0] = v where member ls is an array of compounds writes it
    (it wrote nothing and raised nothing: v's own member names matched
    none of the dataset's)."""
    item = np.dtype([("a", "i2"), ("b", "f8")])
    dt = np.dtype([("x", "i4"), ("ls", item, (2,)), ("one", item)])
    with h5lake.File(tmp_path / "c.h5l", "w") as f:
        d = f.create_dataset("t", data=np.zeros(2, dt))
        d["ls", 0] = np.array([(9, 9.5), (10, 10.5)], item)
        d["one", 1] = np.array((7, 7.5), item)
        got = d[()]
        assert got["ls"][0].tolist() == [(9, 9.5), (10, 10.5)]
        assert got["ls"][1].tolist() == [(0, 0.0), (0, 0.0)]
        assert got["one"].tolist() == [(0, 0.0), (7, 7.5)]


def test_sequences_of_references_are_written_read_and_copied(tmp_path):
    """A dataset of variable-length sequences of object references holds
    the objects' ids (it stored the Python objects' addresses and could
    not be read back); a copy into another store has them null."""
    with h5lake.File(tmp_path / "a.h5l", "w") as a, h5lake.File(tmp_path / "b.h5l", "w") as b:
        x, y = a.create_dataset("x", data=np.arange(4.0)), a.create_dataset("y", data=[1])
        va = np.empty(2, object)
        va[0] = np.array([x.ref, y.ref], dtype=h5lake.ref_dtype)
        va[1] = np.array([y.ref], dtype=h5lake.ref_dtype)
        a.create_dataset("v", data=va, dtype=h5lake.vlen_dtype(h5lake.ref_dtype))
        got = a["v"][()]
        assert [[a[r].name for r in row] for row in got] == [["/x", "/y"], ["/y"]]
        a.copy("v", "here")
        assert [a[r].name for r in a["here"][0]] == ["/x", "/y"]
        a.copy("v", b)
        assert [[bool(r) for r in row] for row in b["v"][()]] == [[False, False], [False]]
