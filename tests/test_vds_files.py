"""HDF5 virtual datasets through `h5lake load` and `h5lake get` (issue 22):
a VDS written by libhdf5 (h5py) loads as a virtual dataset — its sources
in the same file by path, those in other files linked or copied as the load
is — and `get` writes it back as a real HDF5 VDS. Compared element for
element with what libhdf5 reads from the original file."""

import os
import subprocess
import sys
import warnings

import h5py
import numpy as np
import pytest

import h5lake

N = 40


def _hyperslab(space, start, stride, count, block):
    space.select_hyperslab(tuple(start), tuple(count), tuple(stride), tuple(block))
    return space


def write_vds(root, missing=False):
    """A file holding a VDS over a dataset of its own (mapped with gapped
    blocks), two datasets in other files (one of them 2-D, mapped by a
    column) and, with ``missing``, a file that does not exist."""
    rng = np.random.default_rng(1)
    own = rng.integers(-500, 500, 2 * N).astype("i4")
    ext = [rng.integers(-500, 500, N).astype("i4"), rng.integers(-500, 500, (N, 3)).astype("i4")]
    with h5py.File(root / "a.h5", "w") as f:
        f.create_dataset("b.h5", data=ext[0])  # a dataset named like a file, for confusion
    with h5py.File(root / "b.h5", "w") as f:
        f.create_dataset("x/data", data=ext[0], chunks=(7,), compression="gzip")
    with h5py.File(root / "c.h5", "w") as f:
        f.create_dataset("data", data=ext[1])
    with h5py.File(root / "vds.h5", "w") as f:
        f.create_dataset("own", data=own)
        f.attrs["title"] = "virtual"
        layout = h5py.VirtualLayout(shape=(4, N), dtype="i4")
        layout[0] = h5py.VirtualSource(".", "own", shape=(2 * N,))[::2]
        layout[1] = h5py.VirtualSource("b.h5", "/x/data", shape=(N,))
        layout[2, : N // 2] = h5py.VirtualSource(str(root / "c.h5"), "data", shape=(N, 3))[: N // 2, 1]
        if missing:
            layout[3] = h5py.VirtualSource("gone.h5", "data", shape=(N,))
        d = f.create_virtual_dataset("vdata", layout, fillvalue=-7)
        d.attrs["units"] = "counts"
        # Gapped blocks on both sides, through the low-level API: blocks of
        # 3 every 5 of the virtual row 3 from blocks of 3 every 4 of own.
        dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
        vspace = _hyperslab(h5py.h5s.create_simple((N,)), (1,), (5,), (7,), (3,))
        sspace = _hyperslab(h5py.h5s.create_simple((2 * N,)), (2,), (4,), (7,), (3,))
        dcpl.set_virtual(vspace, b".", b"/own", sspace)
        dcpl.set_fill_value(np.array(-9, "i4"))
        h5py.h5d.create(f.id, b"blocks", h5py.h5t.STD_I32LE, h5py.h5s.create_simple((N,)),
                        dcpl=dcpl)
    return root / "vds.h5"


def _same_values(store, h5file, names=("vdata", "blocks", "own")):
    with h5lake.File(str(store), "r") as f, h5py.File(h5file, "r") as g:
        for name in names:
            assert f[name].is_virtual == g[name].is_virtual, name
            assert f[name].fillvalue == g[name].fillvalue, name
            np.testing.assert_array_equal(f[name][...], g[name][...], err_msg=name)
            for s in (np.s_[1:3, 5:30:3], np.s_[3], np.s_[:, 11], np.s_[[0, 2, 3], 9:17]):
                if f[name].ndim == 2:
                    np.testing.assert_array_equal(f[name][s], g[name][s], err_msg=f"{name} {s}")


@pytest.mark.parametrize("link", [False, True])
def test_load_keeps_virtual_datasets_of_hdf5_files(tmp_path, link):
    src = write_vds(tmp_path)
    store = tmp_path / "vds.h5l"
    report = h5lake.load(str(src), str(store), link=link)
    assert report["skipped"] == []
    _same_values(store, src)
    with h5lake.File(str(store), "r") as f:
        d = f["vdata"]
        assert d.attrs["units"] == "counts" and f.attrs["title"] == "virtual"
        files = [m.file_name for m in d.virtual_sources()]
        # The names as the file gives them (h5py's), relative ones kept.
        with h5py.File(src, "r") as g:
            assert files == [m.file_name for m in g["vdata"].virtual_sources()]
        assert files[:2] == [".", "b.h5"]
        assert [m.dset_name for m in d.virtual_sources()] == ["/own", "/x/data", "/data"]
        # The gapped blocks are kept as HDF5 states them.
        (m,) = f["blocks"].virtual_sources()
        assert m.vspace.get_regular_hyperslab() == ((1,), (5,), (7,), (3,))
        assert m.src_space.get_regular_hyperslab() == ((2,), (4,), (7,), (3,))
    # Copied sources no longer need their files; linked ones do, and read
    # as fill without them (named in a warning), as libhdf5 reads them.
    os.rename(tmp_path / "b.h5", tmp_path / "b.moved")
    with h5lake.File(str(store), "r") as f:
        if link:
            with pytest.warns(UserWarning, match="b.h5 is missing"):
                np.testing.assert_array_equal(f["vdata"][1], np.full(N, -7))
        else:
            os.rename(tmp_path / "b.moved", tmp_path / "b.h5")
            want = f["vdata"][...]
            os.rename(tmp_path / "b.h5", tmp_path / "b.moved")
            np.testing.assert_array_equal(f["vdata"][...], want)


def test_get_writes_virtual_datasets_back_as_hdf5_ones(tmp_path):
    src = write_vds(tmp_path)
    store = tmp_path / "vds.h5l"
    h5lake.load(str(src), str(store), link=True)
    out = tmp_path / "out" / "back.h5"
    out.parent.mkdir()
    report = h5lake.get(str(store), str(out))
    assert report["skipped"] == [] and report["notes"] == []
    _same_values(store, out)
    with h5py.File(out, "r") as g:
        maps = g["vdata"].virtual_sources()
        assert [m.file_name for m in maps] == [".", str(tmp_path / "b.h5"), str(tmp_path / "c.h5")]
        (m,) = g["blocks"].virtual_sources()
        assert m.vspace.get_regular_hyperslab() == ((1,), (5,), (7,), (3,))
        assert g["vdata"].attrs["units"] == "counts"
    # Beside the sources, a relative name still leads to its file: kept as
    # the original file gave it.
    h5lake.get(str(store), str(tmp_path / "beside.h5"))
    _same_values(store, tmp_path / "beside.h5")
    with h5py.File(tmp_path / "beside.h5", "r") as g, h5py.File(src, "r") as o:
        assert [m.file_name for m in g["vdata"].virtual_sources()] == \
            [m.file_name for m in o["vdata"].virtual_sources()]


def test_missing_sources_are_named_and_read_as_fill(tmp_path):
    src = write_vds(tmp_path, missing=True)
    store = tmp_path / "vds.h5l"
    with pytest.raises(h5lake.IncompleteConversion, match="gone.h5"):
        h5lake.load(str(src), str(store))
    # Accepted, the rest is there and the gap reads as HDF5 reads it.
    report = h5lake.load(str(src), str(store), force=True, skip_unsupported=True)
    assert len(report["skipped"]) == 1 and "no such file" in report["skipped"][0]
    with pytest.warns(h5lake.VirtualSourceWarning, match="gone.h5"):
        _same_values(store, src, names=("vdata",))
    r = subprocess.run([sys.executable, "-m", "h5lake", "load", str(src), str(tmp_path / "cli.h5l")],
                       capture_output=True, text=True)
    assert r.returncode != 0 and "gone.h5" in r.stderr


def write_irregular_vds(root):
    """A file whose virtual datasets map irregular hyperslabs (unions of
    regular ones): h5py's lists of indices on either side, and a union of
    boxes of a 2-D dataset from a 1-D one."""
    with h5py.File(root / "src.h5", "w") as f:
        f["a"] = np.arange(10, dtype="i4") * 10
    with h5py.File(root / "irregular.h5", "w") as f:
        f.create_dataset("own", data=np.arange(12, dtype="i4") + 500)
        # A union of two hyperslabs of the virtual side.
        dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
        vspace = h5py.h5s.create_simple((10,))
        vspace.select_hyperslab((0,), (2,))
        vspace.select_hyperslab((5,), (3,), op=h5py.h5s.SELECT_OR)
        sspace = h5py.h5s.create_simple((12,))
        sspace.select_hyperslab((0,), (5,))
        dcpl.set_virtual(vspace, b".", b"own", sspace)
        h5py.h5d.create(f.id, b"irregular", h5py.h5t.STD_I32LE, h5py.h5s.create_simple((10,)),
                        dcpl=dcpl)
        # Two boxes of a 4 x 7 extent sharing a row, from 12 elements in a row.
        dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
        vspace = h5py.h5s.create_simple((4, 7))
        vspace.select_hyperslab((0, 0), (2, 3))
        vspace.select_hyperslab((1, 4), (3, 2), op=h5py.h5s.SELECT_OR)
        dcpl.set_virtual(vspace, b".", b"own", h5py.h5s.create_simple((12,)))
        dcpl.set_fill_value(np.array(-2, "i4"))
        h5py.h5d.create(f.id, b"union", h5py.h5t.STD_I32LE, h5py.h5s.create_simple((4, 7)),
                        dcpl=dcpl)
        lay = h5py.VirtualLayout((100,), "i4")
        lay[[3, 6, 20, 25, 33, 47, 70, 75, 96, 98]] = h5py.VirtualSource("src.h5", "a", shape=(10,))
        f.create_virtual_dataset("scattered", lay, fillvalue=-5)
        lay = h5py.VirtualLayout((6,), "i4")
        lay[1:] = h5py.VirtualSource("src.h5", "a", shape=(10,))[[0, 1, 4, 5, 8]]
        f.create_virtual_dataset("picked", lay, fillvalue=-3)
    return root / "irregular.h5"


@pytest.mark.parametrize("link", [False, True])
def test_irregular_mappings_load_and_come_back_as_hdf5_reads_them(tmp_path, link):
    """Mappings of irregular hyperslabs load as the regular mappings that
    pair the same elements (before, `load` refused them), read as libhdf5
    reads the file, and `get` writes them back so that libhdf5 reads the
    same values."""
    src = write_irregular_vds(tmp_path)
    names = ("irregular", "union", "scattered", "picked")
    store = tmp_path / "irr.h5l"
    report = h5lake.load(str(src), str(store), link=link)
    assert report["skipped"] == []
    with h5lake.File(str(store), "r") as f, h5py.File(src, "r") as g:
        for name in names:
            assert f[name].is_virtual, name
            np.testing.assert_array_equal(f[name][...], g[name][...], err_msg=name)
        np.testing.assert_array_equal(f["union"][1:3, 2:6], g["union"][1:3, 2:6])
        assert f["picked"][...].tolist() == [-3, 0, 10, 40, 50, 80]
    back = tmp_path / "back.h5"
    assert h5lake.get(str(store), str(back))["skipped"] == []
    with h5py.File(back, "r") as b, h5py.File(src, "r") as g:
        for name in names:
            assert b[name].is_virtual, name
            np.testing.assert_array_equal(b[name][...], g[name][...], err_msg=name)


def _printf_part(root, b):
    with h5py.File(root / f"part-{b}.h5", "w") as f:
        f.create_dataset("own", data=np.arange(5, dtype="i4") + 100 * b)


def write_printf_vds(root):
    """A file whose virtual datasets map printf-style series of files
    (``%b``: block b from the file numbered b): one named relatively, one
    absolutely with gapped blocks in a 2-D dataset."""
    for b in range(3):
        _printf_part(root, b)
    u = h5py.h5s.UNLIMITED
    with h5py.File(root / "printf.h5", "w") as f:
        f.create_dataset("plain", data=np.arange(3))
        dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
        vspace = _unlimited(h5py.h5s.create_simple((0,), (u,)), 0, 5, 5)
        dcpl.set_virtual(vspace, b"part-%b.h5", b"own", h5py.h5s.create_simple((5,)))
        dcpl.set_fill_value(np.array(-1, "i4"))
        h5py.h5d.create(f.id, b"printf", h5py.h5t.STD_I32LE,
                        h5py.h5s.create_simple((0,), (u,)), dcpl=dcpl)
        dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
        vspace = _hyperslab(h5py.h5s.create_simple((2, 0), (2, u)), (1, 1), (1, 3), (1, u), (1, 2))
        sspace = _hyperslab(h5py.h5s.create_simple((5,)), (0,), (1,), (1,), (2,))
        dcpl.set_virtual(vspace, str(root / "part-%b.h5").encode(), b"/own", sspace)
        dcpl.set_fill_value(np.array(-7, "i4"))
        h5py.h5d.create(f.id, b"gapped", h5py.h5t.STD_I32LE,
                        h5py.h5s.create_simple((2, 0), (2, u)), dcpl=dcpl)
        # A series of this file's own datasets, named "d%b".
        for b in range(2):
            f[f"d{b}"] = np.arange(4, dtype="i4") + 1000 * b
        dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
        vspace = _unlimited(h5py.h5s.create_simple((0,), (u,)), 0, 4, 4)
        dcpl.set_virtual(vspace, b".", b"d%b", h5py.h5s.create_simple((4,)))
        h5py.h5d.create(f.id, b"own", h5py.h5t.STD_I32LE,
                        h5py.h5s.create_simple((0,), (u,)), dcpl=dcpl)
        # A series none of whose files exist.
        dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
        vspace = _unlimited(h5py.h5s.create_simple((0,), (u,)), 0, 4, 4)
        dcpl.set_virtual(vspace, b"none-%b.h5", b"x", h5py.h5s.create_simple((4,)))
        h5py.h5d.create(f.id, b"none", h5py.h5t.STD_I32LE,
                        h5py.h5s.create_simple((0,), (u,)), dcpl=dcpl)
        # A box mapped from a whole source of another shape (not printf).
        lay = h5py.VirtualLayout((3, 8), "i4")
        lay[1:3, 1:7] = h5py.VirtualSource(str(root / "flat12.h5"), "a", shape=(12,))
        f.create_virtual_dataset("reshaped", lay, fillvalue=-3)
    with h5py.File(root / "flat12.h5", "w") as g:
        g["a"] = np.arange(12, dtype="i4") + 500
    return root / "printf.h5"


@pytest.mark.parametrize("link", [False, True])
def test_printf_style_sources_load_and_come_back(tmp_path, link):
    """Virtual datasets over printf-style series of files load as such
    (before, `load` refused them): their extent follows the files there
    when read (up to the first missing, as libhdf5's default view), and
    `get` writes them back with the names as HDF5 states them."""
    src = write_printf_vds(tmp_path)
    store = tmp_path / "p.h5l"
    assert h5lake.load(str(src), str(store), link=link)["skipped"] == []

    def same(path):
        with h5lake.File(str(store), "r") as f, h5py.File(path, "r") as g:
            for name in ("printf", "gapped", "own", "none", "reshaped"):
                assert f[name].is_virtual and f[name].shape == g[name].shape, name
                np.testing.assert_array_equal(f[name][...], g[name][...], err_msg=name)
            return f["printf"].shape

    assert same(src) == (15,)
    _printf_part(tmp_path, 3)
    _printf_part(tmp_path, 5)                    # after a gap: not reached
    assert same(src) == (20,)
    back = tmp_path / "back.h5"
    assert h5lake.get(str(store), str(back))["skipped"] == []
    _printf_part(tmp_path, 4)
    assert same(src) == (30,)
    with h5py.File(back, "r") as b, h5py.File(src, "r") as g:
        for name in ("printf", "gapped", "own", "none", "reshaped"):
            np.testing.assert_array_equal(b[name][...], g[name][...], err_msg=name)
        (m,) = b["printf"].virtual_sources()
        assert (m.file_name, m.dset_name) == ("part-%b.h5", "/own")
        assert m.vspace.get_regular_hyperslab() == ((0,), (5,), (h5py.h5s.UNLIMITED,), (5,))


def test_get_writes_the_values_of_virtual_datasets_over_other_stores(tmp_path):
    """A virtual dataset whose sources are in another store (which an HDF5
    file cannot name) is written by `get` with its values, unlimited ones
    at the extent their sources give them now (before, an unlimited one
    came out as all fill)."""
    with h5lake.File(tmp_path / "src.h5l", "w") as s:
        s.create_dataset("log", data=np.arange(7, dtype="i4"), maxshape=(None,), chunks=(3,))
        s.create_dataset("fixed", data=np.arange(5, dtype="i4") * 10)
    with h5lake.File(tmp_path / "v.h5l", "w") as f:
        grow = h5lake.VirtualLayout((0,), "i4", maxshape=(None,))
        grow[0:h5lake.UNLIMITED] = h5lake.VirtualSource(str(tmp_path / "src.h5l"), "log",
                                                        shape=(7,), maxshape=(None,))[0:h5lake.UNLIMITED]
        f.create_virtual_dataset("grow", grow, fillvalue=-1)
        fixed = h5lake.VirtualLayout((6,), "i4")
        fixed[1:] = h5lake.VirtualSource(str(tmp_path / "src.h5l"), "fixed", shape=(5,))
        f.create_virtual_dataset("fixed", fixed, fillvalue=-1)
    out = tmp_path / "out.h5"
    report = h5lake.get(str(tmp_path / "v.h5l"), str(out))
    assert report["skipped"] == [] and len(report["notes"]) == 2
    with h5py.File(out, "r") as g:
        assert g["grow"][...].tolist() == list(range(7))
        assert g["fixed"][...].tolist() == [-1, 0, 10, 20, 30, 40]


def _unlimited(space, start, stride, block):
    return _hyperslab(space, (start,), (stride,), (h5py.h5s.UNLIMITED,), (block,))


def write_unlimited_vds(root):
    """A file with a VDS of unlimited mappings (through h5py's low-level
    API): gapped blocks of the file's own resizable dataset ``own``, and a
    resizable dataset of another file, interleaved with them."""
    with h5py.File(root / "other.h5", "w") as f:
        f.create_dataset("data", data=np.arange(100, 111, dtype="i4"), maxshape=(None,),
                         chunks=(4,))
    with h5py.File(root / "grow.h5", "w") as f:
        f.create_dataset("own", data=-np.arange(1, 14, dtype="i4"), maxshape=(None,), chunks=(5,))
        dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
        u = h5py.h5s.UNLIMITED
        # Blocks of 2 every 5 in the VDS from blocks of 3 every 4 of own.
        dcpl.set_virtual(_unlimited(h5py.h5s.create_simple((1,), (u,)), 0, 5, 2), b".", b"/own",
                         _unlimited(h5py.h5s.create_simple((13,), (u,)), 1, 4, 3))
        # One element every 5 (from index 3) from all of other.h5's data.
        dcpl.set_virtual(_unlimited(h5py.h5s.create_simple((1,), (u,)), 3, 5, 1), b"other.h5",
                         b"/data", _unlimited(h5py.h5s.create_simple((11,), (u,)), 0, 1, 1))
        dcpl.set_fill_value(np.array(7, "i4"))
        h5py.h5d.create(f.id, b"vds", h5py.h5t.STD_I32LE, h5py.h5s.create_simple((1,), (u,)),
                        dcpl=dcpl)
    return root / "grow.h5"


def _grow(f, name, n):
    d = f[name]
    old = d.shape[0]
    d.resize((n,))
    if n > old:
        d[old:] = np.arange(1000 + old, 1000 + n, dtype="i4")


@pytest.mark.parametrize("link", [False, True])
def test_unlimited_mappings_load_follow_their_sources_and_come_back(tmp_path, link):
    src = write_unlimited_vds(tmp_path)
    with h5py.File(src, "r") as g:
        want = g["vds"][...]
        assert len(want) > 1
    store = tmp_path / "grow.h5l"
    report = h5lake.load(str(src), str(store), link=link)
    assert report["skipped"] == []
    with h5lake.File(str(store), "r") as f:
        d = f["vds"]
        assert d.maxshape == (None,) and d.shape == want.shape
        np.testing.assert_array_equal(d[...], want)
        np.testing.assert_array_equal(d[3:40:4], want[3:40:4])
        m = d.virtual_sources()[0]
        assert m.vspace.get_regular_hyperslab() == ((0,), (5,), (h5lake.UNLIMITED,), (2,))
    # The same growth and shrinkage of the store's own source and of the
    # HDF5 file's: the extent follows, as libhdf5's does. (A linked dataset
    # keeps the extent it was linked with: it cannot be resized.)
    for n in () if link else (14, 15, 30, 8, 1, 23):
        with h5py.File(src, "a") as g:
            _grow(g, "own", n)
            want = g["vds"][...]
        with h5lake.File(str(store), "a") as f:
            _grow(f, "own", n)
            d = f["vds"]
            assert d.shape == want.shape, n
            np.testing.assert_array_equal(d[...], want, err_msg=str(n))
    # And back to HDF5: a VDS with the same unlimited mappings.
    out = tmp_path / "back" / "grow.h5"
    out.parent.mkdir()
    report = h5lake.get(str(store), str(out))
    assert report["skipped"] == [] and report["notes"] == []
    with h5py.File(out, "r") as g:
        assert g["vds"].is_virtual and g["vds"].maxshape == (None,)
        np.testing.assert_array_equal(g["vds"][...], want)
        counts = [m.vspace.get_regular_hyperslab()[2] for m in g["vds"].virtual_sources()]
        assert counts == [(h5py.h5s.UNLIMITED,)] * 2


def test_get_of_a_virtual_dataset_over_other_stores_writes_its_values(tmp_path):
    with h5lake.File(str(tmp_path / "src.h5l"), "w") as f:
        f["data"] = np.arange(12.0)
    with h5lake.File(str(tmp_path / "v.h5l"), "w") as f:
        f["here"] = np.arange(5.0)
        layout = h5lake.VirtualLayout(shape=(17,), dtype="f8")
        layout[:12] = h5lake.VirtualSource(str(tmp_path / "src.h5l"), "data", shape=(12,))
        layout[12:] = h5lake.VirtualSource(".", "here", shape=(5,))
        f.create_virtual_dataset("v", layout)
    report = h5lake.get(str(tmp_path / "v.h5l"), str(tmp_path / "v.h5"))
    assert report["skipped"] == []
    (note,) = report["notes"]
    assert note.startswith("/v:") and "written with its values" in note
    with h5py.File(tmp_path / "v.h5", "r") as g:
        assert not g["v"].is_virtual
        np.testing.assert_array_equal(g["v"][...], np.r_[np.arange(12.0), np.arange(5.0)])
    # Sources in the store itself only: a real VDS over the written file.
    with h5lake.File(str(tmp_path / "v.h5l"), "a") as f:
        layout = h5lake.VirtualLayout(shape=(10,), dtype="f8")
        layout[::2] = h5lake.VirtualSource(".", "here", shape=(5,))
        f.create_virtual_dataset("w", layout, fillvalue=0.5)
    h5lake.get(str(tmp_path / "v.h5l"), str(tmp_path / "w.h5"))
    with h5py.File(tmp_path / "w.h5", "r") as g:
        assert g["w"].is_virtual
        np.testing.assert_array_equal(g["w"][...], [0, .5, 1, .5, 2, .5, 3, .5, 4, .5])


def test_sources_behind_external_links_read_from_the_linked_file(tmp_path):
    """A detector's master files: each names its data through an HDF5
    external link. The values are those of the data files, as h5py reads
    them through its own virtual dataset."""
    for i in range(2):
        with h5py.File(tmp_path / f"data_{i}.h5", "w") as g:
            g["d"] = np.full((2, 3), i + 1, "u2")
        with h5py.File(tmp_path / f"master_{i}.h5", "w") as g:
            g["pad"] = np.zeros(500, "u2")
            g["entry/data"] = h5py.ExternalLink(f"data_{i}.h5", "/d")
    h5lake.concat(str(tmp_path / "master_*.h5"), str(tmp_path / "runs.h5l"), path="/entry/data")
    with h5lake.File(tmp_path / "runs.h5l", "r") as f:
        got = f["entry/data"][()]
    np.testing.assert_array_equal(got, np.repeat(np.array([1, 2], "u2"), 6).reshape(4, 3))


def _vds_both(tmp_path, build):
    """``build(mod, f)`` run against h5py (an HDF5 file) and h5lake (a
    store) in ``tmp_path``; returns the two paths."""
    paths = {}
    for mod, ext in ((h5py, "h5"), (h5lake, "h5l")):
        paths[mod] = str(tmp_path / f"v.{ext}")
        with mod.File(paths[mod], "w") as f:
            build(mod, f)
    return paths


def _read_both(paths, name="v"):
    got = {}
    for mod, p in paths.items():
        with mod.File(p, "r") as f:
            got[mod] = (f[name].shape, f[name][()])
    assert got[h5lake][0] == got[h5py][0]
    np.testing.assert_array_equal(got[h5lake][1], got[h5py][1])
    return got[h5lake][1]


def test_a_source_file_rewritten_since_reads_its_new_contents_as_libhdf5_does(tmp_path):
    """An HDF5 source rewritten after the mapping was made (other offsets,
    other values) reads as it is now, as h5py reads it, never as the old
    offsets' bytes. One deleted reads as fill, with a warning naming it."""
    a = tmp_path / "a.h5"
    with h5py.File(a, "w") as g:
        g["x"] = np.array([1, 2, 3], "i4")

    def build(mod, f):
        lay = mod.VirtualLayout((6,), "i4")
        lay[:3] = mod.VirtualSource(str(a), "x", shape=(3,))
        lay[3:] = mod.VirtualSource(str(a), "x", shape=(3,))
        f.create_virtual_dataset("v", lay, fillvalue=-1)

    paths = _vds_both(tmp_path, build)
    np.testing.assert_array_equal(_read_both(paths), [1, 2, 3, 1, 2, 3])
    with h5lake.File(paths[h5lake], "r") as f:
        v = f["v"]
        with h5py.File(a, "w") as g:      # rewritten while the store is open
            g["pad"] = np.arange(1000, dtype="i4")
            g["x"] = np.array([7, 8, 9], "i4")
        np.testing.assert_array_equal(v[()], [7, 8, 9, 7, 8, 9])
        with h5py.File(a, "a") as g:      # and again, in place
            g["x"][1] = 80
        os.utime(a, ns=(os.stat(a).st_atime_ns, os.stat(a).st_mtime_ns + 10**9))
        np.testing.assert_array_equal(v[()], [7, 80, 9, 7, 80, 9])
    np.testing.assert_array_equal(_read_both(paths), [7, 80, 9, 7, 80, 9])
    with h5py.File(a, "w") as g:          # the dataset gone from the file
        g["y"] = np.array([1, 2, 3], "i4")
    with h5lake.File(paths[h5lake], "r") as f:
        with pytest.warns(UserWarning, match="a.h5 has no dataset /x"):
            np.testing.assert_array_equal(f["v"][()], [-1] * 6)
    os.remove(a)
    with h5lake.File(paths[h5lake], "r") as f:
        with pytest.warns(UserWarning, match="a.h5 is missing"):
            np.testing.assert_array_equal(f["v"][()], [-1] * 6)


def test_an_unlimited_mapping_follows_an_hdf5_source_as_it_grows(tmp_path):
    a = tmp_path / "grow.h5"
    with h5py.File(a, "w") as g:
        g.create_dataset("x", data=np.arange(5, dtype="f8"), maxshape=(None,), chunks=(4,))

    def build(mod, f):
        lay = mod.VirtualLayout((5,), "f8", maxshape=(None,))
        lay[:mod.h5s.UNLIMITED] = mod.VirtualSource(str(a), "x", shape=(5,),
                                                   maxshape=(None,))[:mod.h5s.UNLIMITED]
        f.create_virtual_dataset("v", lay, fillvalue=np.nan)

    paths = _vds_both(tmp_path, build)
    np.testing.assert_array_equal(_read_both(paths), np.arange(5.0))
    for n in (13, 30):
        with h5py.File(a, "a") as g:
            g["x"].resize((n,))
            g["x"][:] = np.arange(n) * 2.0
        np.testing.assert_array_equal(_read_both(paths), np.arange(n) * 2.0)


def test_a_source_file_that_appears_after_the_mapping_is_read_once_it_exists(tmp_path):
    late = tmp_path / "late.h5"

    def build(mod, f):
        lay = mod.VirtualLayout((2, 3), "i2")
        lay[0] = mod.VirtualSource(str(late), "d", shape=(3,))
        f.create_virtual_dataset("v", lay, fillvalue=5)

    with pytest.warns(UserWarning, match="did not exist"):
        paths = _vds_both(tmp_path, build)
        np.testing.assert_array_equal(_read_both(paths), [[5, 5, 5]] * 2)
    with h5py.File(late, "w") as g:
        g["d"] = np.array([-1, -2, -3], "i2")
    np.testing.assert_array_equal(_read_both(paths), [[-1, -2, -3], [5, 5, 5]])


def test_load_link_refuses_a_file_changed_since(tmp_path):
    src = tmp_path / "s.h5"
    with h5py.File(src, "w") as g:
        g.create_dataset("c", data=np.arange(100.0), chunks=(10,))
        g["flat"] = np.arange(5)
    subprocess.run([sys.executable, "-m", "h5lake", "load", "--link", str(src),
                    str(tmp_path / "s.h5l")], check=True, capture_output=True)
    with h5lake.File(tmp_path / "s.h5l", "r") as f:
        np.testing.assert_array_equal(f["c"][()], np.arange(100.0))
    with h5py.File(src, "a") as g:
        g["c"][0] = -1.0          # same size, later mtime
    os.utime(src, ns=(os.stat(src).st_atime_ns, os.stat(src).st_mtime_ns + 10**9))
    with h5lake.File(tmp_path / "s.h5l", "r") as f:
        for name in ("c", "flat"):
            with pytest.raises(OSError, match="changed since it was linked"):
                f[name][()]


def test_relative_source_names_are_found_beside_the_store_as_libhdf5_finds_them(tmp_path,
                                                                               monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "sub").mkdir()
    for mod, ext in ((h5py, "h5"), (h5lake, "h5l")):
        with h5py.File(tmp_path / "sub" / "a.h5", "w") as g:
            g["x"] = np.arange(4, dtype="i4") + 1
        with mod.File(str(tmp_path / "sub" / f"v.{ext}"), "w") as f:
            lay = mod.VirtualLayout((4,), "i4")
            lay[:] = mod.VirtualSource("a.h5", "x", shape=(4,))
            f.create_virtual_dataset("v", lay, fillvalue=-1)
        with mod.File(str(tmp_path / "sub" / f"v.{ext}"), "r") as f:
            np.testing.assert_array_equal(f["v"][()], [1, 2, 3, 4], err_msg=ext)


def test_a_folder_of_sources_moved_with_its_virtual_dataset_is_found_as_libhdf5_finds_it(
        tmp_path, monkeypatch):
    """Relative source names are looked for at each read, as libhdf5 looks
    for them: under $HDF5_VDS_PREFIX as it is then, else beside the store."""
    import shutil
    (tmp_path / "proj").mkdir()
    monkeypatch.chdir(tmp_path / "proj")

    def build(mod, f):
        lay = mod.VirtualLayout((2, 4), "i4")
        lay[0] = mod.VirtualSource("a.h5", "x", shape=(4,))
        lay[1] = mod.VirtualSource("b.h5", "x", shape=(4,))
        f.create_virtual_dataset("v", lay, fillvalue=-1)

    for name, base in (("a.h5", 10), ("b.h5", 20)):
        with h5py.File(tmp_path / "proj" / name, "w") as g:
            g["x"] = np.arange(4, dtype="i4") + base
    _vds_both(tmp_path / "proj", build)
    monkeypatch.chdir(tmp_path)
    shutil.move(tmp_path / "proj", tmp_path / "moved")
    moved = {h5py: str(tmp_path / "moved" / "v.h5"), h5lake: str(tmp_path / "moved" / "v.h5l")}
    np.testing.assert_array_equal(_read_both(moved), [[10, 11, 12, 13], [20, 21, 22, 23]])
    # Another copy of b.h5 under the prefix, set after the mapping was made.
    (tmp_path / "pre").mkdir()
    with h5py.File(tmp_path / "pre" / "b.h5", "w") as g:
        g["x"] = np.arange(4, dtype="i4") + 90
    monkeypatch.setenv("HDF5_VDS_PREFIX", str(tmp_path / "pre"))
    np.testing.assert_array_equal(_read_both(moved), [[10, 11, 12, 13], [90, 91, 92, 93]])


def test_sources_that_are_virtual_datasets_read_as_libhdf5_reads_them(tmp_path):
    """A virtual dataset of an HDF5 file as a source (a NeXus master file
    whose data is a VDS over frame files, concatenated), and a virtual
    dataset of a store as a source: read as h5py reads them."""
    with h5py.File(tmp_path / "frames.h5", "w") as g:
        g["f"] = np.arange(12, dtype="i4").reshape(6, 2)
        g["own"] = np.array([[100, 101]], "i4")
    with h5py.File(tmp_path / "master.h5", "w") as g:
        lay = h5py.VirtualLayout((4, 2), "i4")
        lay[:3] = h5py.VirtualSource("frames.h5", "f", shape=(6, 2))[::2]
        lay[3] = h5py.VirtualSource(".", "local", shape=(1, 2))[0]
        g["local"] = np.array([[7, 8]], "i4")
        g.create_virtual_dataset("entry/data", lay, fillvalue=-1)

    def build(mod, f):
        lay = mod.VirtualLayout((2, 4, 2), "i4")
        lay[0] = mod.VirtualSource(str(tmp_path / "master.h5"), "entry/data", shape=(4, 2))
        lay[1, 1:] = mod.VirtualSource(str(tmp_path / "master.h5"), "entry/data",
                                       shape=(4, 2))[:3]
        f.create_virtual_dataset("v", lay, fillvalue=-5)
        f["plain"] = np.arange(6, dtype="i4")
        inner = mod.VirtualLayout((3,), "i4")
        inner[:] = mod.VirtualSource(f["plain"])[::2]
        f.create_virtual_dataset("inner", inner, fillvalue=0)
        outer = mod.VirtualLayout((2,), "i4")
        outer[:] = mod.VirtualSource(f["inner"])[1:]
        f.create_virtual_dataset("outer", outer, fillvalue=0)

    paths = _vds_both(tmp_path, build)
    got = _read_both(paths)
    assert got[0, 3].tolist() == [7, 8] and got[1, 1].tolist() == [0, 1]
    assert _read_both(paths, "outer").tolist() == [2, 4]
    # The frames rewritten: read as they are now, through both levels.
    with h5py.File(tmp_path / "frames.h5", "a") as g:
        g["f"][...] = -g["f"][...]
    assert _read_both(paths)[0, 1].tolist() == [-4, -5]


def test_virtual_datasets_that_map_each_other_end_in_an_error_not_a_hang(tmp_path):
    for me, other in (("a", "b"), ("b", "a")):
        with h5lake.File(tmp_path / f"{me}.h5l", "w") as f:
            lay = h5lake.VirtualLayout((3,), "f8")
            lay[:] = h5lake.VirtualSource(str(tmp_path / f"{other}.h5l"), "v", shape=(3,))
            f.create_virtual_dataset("v", lay, fillvalue=1.5)
    with h5lake.File(tmp_path / "a.h5l", "r") as f:
        with pytest.raises(ValueError, match="nested more than"):
            f["v"][()]


def test_concat_leaves_out_runs_with_no_rows(tmp_path):
    for i, n in enumerate([3, 0, 2]):
        with h5py.File(tmp_path / f"run-{i}.h5", "w") as g:
            g.create_dataset("d", data=np.arange(n * 2).reshape(n, 2) + 10 * i, maxshape=(None, 2))
    report = h5lake.concat(str(tmp_path / "run-*.h5"), str(tmp_path / "c.h5l"), path="/d")
    assert report["shape"] == (5, 2)
    with h5lake.File(tmp_path / "c.h5l", "r") as f:
        assert f["d"][()].tolist() == [[0, 1], [2, 3], [4, 5], [20, 21], [22, 23]]
    assert h5lake.VirtualSource("x.h5", "d", shape=(0, 3)).shape == (0, 3)


def test_a_source_reached_through_an_external_link_follows_its_file(tmp_path):
    """The mapping's file is what is read as it is now: rewritten so that
    the linked name is a dataset of its own, it is read there, as h5py
    reads it."""
    a, b = tmp_path / "a.h5", tmp_path / "b.h5"
    with h5py.File(b, "w") as f:
        f["x"] = np.arange(4, dtype="i4") + 100
    with h5py.File(a, "w") as f:
        f["d"] = h5py.ExternalLink(str(b), "/x")

    def build(mod, f):
        lay = mod.VirtualLayout((4,), "i4")
        lay[:] = mod.VirtualSource(str(a), "d", shape=(4,))
        f.create_virtual_dataset("v", lay, fillvalue=-1)

    paths = _vds_both(tmp_path, build)
    assert _read_both(paths).tolist() == [100, 101, 102, 103]
    with h5py.File(a, "w") as f:
        f["d"] = np.arange(4, dtype="i4") + 500
    assert _read_both(paths).tolist() == [500, 501, 502, 503]


def test_hdf5_virtual_datasets_that_map_each_other_end_promptly(tmp_path):
    import time
    import warnings
    a, b = tmp_path / "a.h5", tmp_path / "b.h5"
    for here, there, mine, theirs in ((a, b, "v", "w"), (b, a, "w", "v")):
        with h5py.File(here, "w") as f:
            for i in range(3):
                lay = h5py.VirtualLayout((3,), "i4")
                for j in range(3):
                    lay[j] = h5py.VirtualSource(str(there), f"{theirs}{j}", shape=(3,))[j]
                f.create_virtual_dataset(f"{mine}{i}", lay, fillvalue=-1)
    t0 = time.monotonic()
    with h5lake.File(tmp_path / "s.h5l", "w") as f:
        lay = h5lake.VirtualLayout((3,), "i4")
        lay[:] = h5lake.VirtualSource(str(a), "v0", shape=(3,))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            f.create_virtual_dataset("v", lay, fillvalue=-1)
            try:
                f["v"][()]
            except (ValueError, OSError):
                pass
    assert time.monotonic() - t0 < 20


def test_writes_through_a_mapping_onto_another_file_are_refused_by_name(tmp_path):
    """h5lake never writes an HDF5 file or another store through a mapping:
    such a write raises, names the source, and changes nothing."""
    src = tmp_path / "src.h5"
    with h5py.File(src, "w") as g:
        g["x"] = np.arange(4, dtype="i4")
    before = src.read_bytes()
    with h5lake.File(tmp_path / "other.h5l", "w") as o:
        o["y"] = np.arange(4, dtype="i4")
    with h5lake.File(tmp_path / "v.h5l", "w") as f:
        for name, source in (("h", h5lake.VirtualSource(str(src), "x", shape=(4,))),
                             ("s", h5lake.VirtualSource(str(tmp_path / "other.h5l"), "y",
                                                        shape=(4,)))):
            lay = h5lake.VirtualLayout((4,), "i4")
            lay[:] = source
            v = f.create_virtual_dataset(name, lay, fillvalue=-1)
            with pytest.raises(OSError, match="another store or file|linked"):
                v[...] = np.full(4, 9, "i4")
            assert v[()].tolist() == [0, 1, 2, 3]
    assert src.read_bytes() == before
    with h5lake.File(tmp_path / "other.h5l", "r") as o:
        assert o["y"][()].tolist() == [0, 1, 2, 3]


def test_a_source_given_as_a_dataset_of_an_hdf5_file_opened_in_place(tmp_path):
    """h5lake.File("x.h5")["d"] as a VirtualSource (and in concat) maps the
    file's dataset, as h5py.VirtualSource of an h5py dataset does."""
    src = tmp_path / "src.h5"
    with h5py.File(src, "w") as f:
        f["d"] = np.arange(10.0)
    with h5lake.File(src, "r") as fin, h5lake.File(tmp_path / "v.h5l", "w") as f:
        lay = h5lake.VirtualLayout((2, 10), "f8")
        lay[0] = h5lake.VirtualSource(fin["d"])
        lay[1, ::2] = h5lake.VirtualSource(fin["d"])[1::2]
        f.create_virtual_dataset("v", lay, fillvalue=-1)
        parts = [h5lake.File(src, "r")["d"] for _ in range(2)]
        h5lake.concat(parts, f, name="c")
        want = np.array([np.arange(10.0), [1, -1, 3, -1, 5, -1, 7, -1, 9, -1]])
        np.testing.assert_array_equal(f["v"][()], want)
        np.testing.assert_array_equal(f["c"][()], np.tile(np.arange(10.0), 2))
        assert [s.file_name for s in f["v"].virtual_sources()] == [str(src)] * 2
        with h5py.File(src, "r") as h:          # an h5py dataset, as code moving from h5py has
            lay = h5lake.VirtualLayout((10,), "f8")
            lay[:] = h5lake.VirtualSource(h["d"])
        f.create_virtual_dataset("from_h5py", lay, fillvalue=-1)
        np.testing.assert_array_equal(f["from_h5py"][()], np.arange(10.0))


def test_a_failed_concat_into_an_existing_store_leaves_nothing(tmp_path):
    for k, dt in enumerate(("f4", "f4", "f8")):
        with h5py.File(tmp_path / f"c{k}.h5", "w") as f:
            f["x"] = np.zeros((2, 3), dt)
    store = tmp_path / "keep.h5l"
    with h5lake.File(store, "w") as f:
        f["keep"] = np.arange(3)

    def files():
        return sorted(str(p.relative_to(store)) for p in store.rglob("*") if p.is_file())
    before = files()
    with pytest.raises(TypeError, match="float64"):
        h5lake.concat(str(tmp_path / "c*.h5"), str(store), path="x")
    with h5lake.File(store, "a") as f:
        with pytest.raises(TypeError):
            h5lake.concat(str(tmp_path / "c*.h5"), f, path="x", name="cc")
    assert files() == before


def test_a_source_found_through_the_prefix_at_load_is_looked_for_again(tmp_path, monkeypatch):
    """A relative source found under $HDF5_VDS_PREFIX when the file was
    loaded is not remembered there: read with the prefix unset, it is
    missing (fill), as h5py reads the original file."""
    (tmp_path / "pre").mkdir()
    (tmp_path / "v").mkdir()
    with h5py.File(tmp_path / "pre" / "p.h5", "w") as g:
        g["d"] = np.arange(5) * 10
    with h5py.File(tmp_path / "v" / "v.h5", "w") as g:
        lay = h5py.VirtualLayout((5,), "i8")
        lay[:] = h5py.VirtualSource("p.h5", "d", shape=(5,))
        g.create_virtual_dataset("v", lay, fillvalue=-1)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HDF5_VDS_PREFIX", str(tmp_path / "pre"))
    h5lake.load(str(tmp_path / "v" / "v.h5"), str(tmp_path / "v" / "v.h5l"), link=True)
    with h5lake.File(tmp_path / "v" / "v.h5l", "r") as f:
        assert f["v"][()].tolist() == [0, 10, 20, 30, 40]
    monkeypatch.delenv("HDF5_VDS_PREFIX")
    for mod, name in ((h5py, "v.h5"), (h5lake, "v.h5l")):
        with mod.File(tmp_path / "v" / name, "r") as f, warnings.catch_warnings():
            warnings.simplefilter("ignore")
            assert f["v"][()].tolist() == [-1] * 5, mod


@pytest.mark.parametrize("link", [False, True])
def test_virtual_datasets_of_variable_length_values_read_as_h5py_reads_them(tmp_path, link):
    """Strings and sequences of variable length: an HDF5 file's virtual
    dataset over them opens in place, loads (copy and link) and comes back
    from get as one, each equal to h5py's reading; a store's own reads
    points, fills what no source covers and a missing source, and writes
    through it to its sources."""
    seq = h5py.vlen_dtype(np.dtype("i4"))
    with h5py.File(tmp_path / "src.h5", "w") as f:
        f["s"] = np.array(["alpha", "beta", "gamma"], dtype=h5py.string_dtype())
        q = f.create_dataset("q", (3,), dtype=seq)
        for i in range(3):
            q[i] = np.arange(i + 1, dtype="i4")
    with h5py.File(tmp_path / "v.h5", "w") as f:
        lay = h5py.VirtualLayout((2, 3), h5py.string_dtype())
        lay[0] = h5py.VirtualSource("src.h5", "s", shape=(3,))
        lay[1, :2] = h5py.VirtualSource("src.h5", "s", shape=(3,))[1:]
        f.create_virtual_dataset("s", lay)
        lay = h5py.VirtualLayout((4,), seq)
        lay[1:] = h5py.VirtualSource("src.h5", "q", shape=(3,))
        f.create_virtual_dataset("q", lay)
    store, back = tmp_path / "v.h5l", tmp_path / "back.h5"
    h5lake.load(str(tmp_path / "v.h5"), str(store), link=link)
    h5lake.get(str(store), str(back))
    with h5py.File(tmp_path / "v.h5", "r") as h:
        want_s, want_q = h["s"][()], [x.tolist() for x in h["q"][()]]
    for where, mod in ((tmp_path / "v.h5", h5lake), (store, h5lake), (back, h5py)):
        with mod.File(where, "r") as f:
            assert f["s"].is_virtual, where
            np.testing.assert_array_equal(f["s"][()], want_s)
            assert [x.tolist() for x in f["q"][()]] == want_q, where
    with h5lake.File(store, "a") as f:
        np.testing.assert_array_equal(f["s"][[0, 1], 1], want_s[[0, 1], 1])
        lay = h5lake.VirtualLayout((5,), h5lake.string_dtype())
        lay[:2] = h5lake.VirtualSource(".", "missing", shape=(2,))
        lay[2:4] = h5lake.VirtualSource(f["s"])[0, 1:]
        v = f.create_virtual_dataset("mine", lay, fillvalue="")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            assert v[()].tolist() == [b"", b"", b"beta", b"gamma", b""]
        # Writes go to the sources in the store (points and slices alike).
        f["plain"] = np.array(["p", "q", "r"], dtype=h5lake.string_dtype())
        lay = h5lake.VirtualLayout((4,), h5lake.string_dtype())
        lay[1:] = h5lake.VirtualSource(f["plain"])
        w = f.create_virtual_dataset("w", lay, fillvalue="")
        w[1:3] = np.array(["P", "Q"], dtype=object)
        w[np.array([False, False, False, True])] = np.array(["R"], dtype=object)
        assert f["plain"][()].tolist() == [b"P", b"Q", b"R"]
        with pytest.raises(OSError, match="no mapping covers"):
            w[0:2] = np.array(["x", "y"], dtype=object)
        assert f["plain"][()].tolist() == [b"P", b"Q", b"R"]


def test_sources_with_dimension_scales_attached_read_their_values(tmp_path):
    """Every netCDF-4 variable has dimension scales attached: references in
    its attributes. As virtual sources, concatenated, or behind an HDF5
    file's own virtual dataset, their values are read, not the fill."""
    want = []
    for k in range(2):
        with h5py.File(tmp_path / f"run-{k}.h5", "w") as f:
            f["x"] = np.arange(4.0)
            f["x"].make_scale("x")
            f["data"] = np.arange(4) + 10 * (k + 1)
            f["data"].dims[0].attach_scale(f["x"])
            want.append(f["data"][()])
    want = np.stack(want)
    for mod, name in ((h5py, "vds.h5"), (h5lake, "vds.h5l")):
        with mod.File(tmp_path / name, "w") as f:
            layout = mod.VirtualLayout((2, 4), "i8")
            for k in range(2):
                layout[k] = mod.VirtualSource(str(tmp_path / f"run-{k}.h5"), "data", shape=(4,))
            f.create_virtual_dataset("all", layout, fillvalue=-1)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with h5lake.File(tmp_path / "vds.h5l", "r") as f:
            np.testing.assert_array_equal(f["all"][()], want)
        with h5lake.File(tmp_path / "vds.h5", "r") as f:      # an HDF5 file's own VDS
            np.testing.assert_array_equal(f["all"][()], want)
    h5lake.concat(sorted(str(p) for p in tmp_path.glob("run-*.h5")), tmp_path / "c.h5l",
                  path="data")
    with h5lake.File(tmp_path / "c.h5l", "r") as f:
        np.testing.assert_array_equal(f["data"][()], want.reshape(-1))


def test_a_source_named_as_no_store_is_an_hdf5_file_to_come(tmp_path):
    """Before it exists, a source is taken for an HDF5 file whatever its
    name (NeXus's .nxs, .cxi), as libhdf5 takes it: once written, it is
    read."""
    with h5lake.File(tmp_path / "v.h5l", "w") as f:
        layout = h5lake.VirtualLayout((2, 3), "i4")
        for k, name in enumerate(("scan_0001.nxs", "frames.cxi")):
            layout[k] = h5lake.VirtualSource(str(tmp_path / name), "data", shape=(3,))
        f.create_virtual_dataset("v", layout, fillvalue=-1)
    with pytest.warns(h5lake.VirtualSourceWarning):
        with h5lake.File(tmp_path / "v.h5l", "r") as f:
            assert f["v"][()].tolist() == [[-1] * 3] * 2
    for k, name in enumerate(("scan_0001.nxs", "frames.cxi")):
        with h5py.File(tmp_path / name, "w") as f:
            f["data"] = np.arange(3, dtype="i4") + 10 * k
    with h5lake.File(tmp_path / "v.h5l", "r") as f:
        assert f["v"][()].tolist() == [[0, 1, 2], [10, 11, 12]]


def test_an_enum_source_reads_as_its_integers_as_libhdf5_converts_it(tmp_path):
    """h5py's booleans (an enum) under an integer virtual dataset: read as
    0/1, as libhdf5 reads them, not refused."""
    with h5py.File(tmp_path / "good.h5", "w") as f:
        f["m"] = np.array([1, 0, 1, 1], "i1")
    with h5py.File(tmp_path / "bool.h5", "w") as f:
        f["m"] = np.array([True, False, False, True])
    got = {}
    for mod, name in ((h5py, "ref.h5"), (h5lake, "v.h5l")):
        with mod.File(tmp_path / name, "w") as f:
            layout = mod.VirtualLayout((2, 4), "i1")
            layout[0] = mod.VirtualSource(str(tmp_path / "good.h5"), "m", shape=(4,))
            layout[1] = mod.VirtualSource(str(tmp_path / "bool.h5"), "m", shape=(4,))
            f.create_virtual_dataset("mask", layout)
        with mod.File(tmp_path / name, "r") as f:
            got[mod] = (f["mask"][()].tolist(), f["mask"][1].tolist())
    assert got[h5lake] == got[h5py] == ([[1, 0, 1, 1], [1, 0, 0, 1]], [1, 0, 0, 1])


def test_a_source_of_a_type_not_converted_fails_only_the_reads_reaching_it(tmp_path):
    """As in libhdf5: a read of the other sources' parts is served; one
    reaching the source that cannot be converted fails, naming it."""
    with h5py.File(tmp_path / "good.h5", "w") as f:
        f["m"] = np.array([1, 0, 1, 1], "i1")
    with h5py.File(tmp_path / "text.h5", "w") as f:
        f["m"] = np.array([b"ab", b"cd", b"ef", b"gh"], "S2")
    with h5lake.File(tmp_path / "v.h5l", "w") as f:
        layout = h5lake.VirtualLayout((2, 4), "i1")
        layout[0] = h5lake.VirtualSource(str(tmp_path / "good.h5"), "m", shape=(4,))
        layout[1] = h5lake.VirtualSource(str(tmp_path / "text.h5"), "m", shape=(4,))
        f.create_virtual_dataset("mask", layout)
    with h5lake.File(tmp_path / "v.h5l", "r") as f:
        d = f["mask"]
        with pytest.warns(h5lake.VirtualSourceWarning, match="H5T_STRING"):
            assert d[0].tolist() == [1, 0, 1, 1]
        with pytest.raises(TypeError, match="H5T_STRING"):
            d[()]


def test_a_source_whose_extent_does_not_match_its_mapping_keeps_the_dataset_in_place(tmp_path):
    """From an audit: an HDF5 file opened in place left out the whole
    virtual dataset (KeyError) when a source's extent differed from its
    mapping (a source being appended to); h5py lists it. It is read at the
    mapping's extent, as a store reads it, and the load says so."""
    import warnings
    for name, n in (("small", 4), ("big", 14)):
        with h5py.File(tmp_path / f"{name}.h5", "w") as f:
            f["d"] = np.arange(n, dtype="i4")
    ref = tmp_path / "ref.h5"
    with h5py.File(ref, "w") as f:
        for name in ("small", "big"):
            layout = h5py.VirtualLayout(shape=(10,), dtype="i4")
            layout[:] = h5py.VirtualSource(str(tmp_path / f"{name}.h5"), "d", shape=(10,))
            f.create_virtual_dataset(name, layout, fillvalue=-7)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with h5lake.File(ref, "r") as f:
            assert sorted(f) == ["big", "small"]
            assert f["small"][()].tolist() == [0, 1, 2, 3] + [-7] * 6
            assert f["big"][()].tolist() == list(range(10))
    report = h5lake.load(ref, tmp_path / "ref.h5l", link=True)
    assert sum("does not match its mapping" in n for n in report["notes"]) == 2, report["notes"]
