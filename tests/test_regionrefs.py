"""Region references through the h5lake API (``dset.regionref[...]``,
``dset[ref]``, ``f[ref]``, datasets and attributes of them), against h5py
on the same data and selections; and region references h5py wrote to an
HDF5 file, loaded into a store and read back through the API."""

import numpy as np
import pytest

import h5lake

h5py = pytest.importorskip("h5py")

DATA = np.arange(200 * 150).reshape(200, 150)

SELECTIONS = [
    np.s_[25:35, 10:100:5],      # a regular hyperslab: read in its own shape
    np.s_[...],
    np.s_[3],
    np.s_[:0],                   # nothing
    np.s_[[1, 2, 5], 3:7],       # an index list: a grid all the same
    np.s_[7, [0, 50, 149]],
    np.s_[::2, ::3],             # 2500 blocks, listed one by one
    np.s_[::2, ::2],             # 7500 blocks: stored as HDF5's regular form
    DATA % 997 == 0,             # points, read in a row
]


@pytest.fixture
def both(tmp_path):
    with h5py.File(tmp_path / "ref.h5", "w") as h, h5lake.File(tmp_path / "s.h5l", "w") as s:
        yield [f.create_dataset("x", data=DATA) for f in (h, s)]


@pytest.mark.parametrize("k", range(len(SELECTIONS)))
def test_reads_of_a_region_equal_h5py(both, k):
    h, s = both
    want = [d.regionref[SELECTIONS[k]] for d in (h, s)]
    hv, sv = h[want[0]], s[want[1]]
    assert sv.shape == hv.shape and sv.dtype == hv.dtype
    np.testing.assert_array_equal(sv, hv)
    assert s.regionref.selection(want[1]) == h.regionref.selection(want[0])
    assert s.regionref.shape(want[1]) == h.regionref.shape(want[0]) == DATA.shape
    assert s.file[want[1]].name == h.file[want[0]].name == "/x"
    assert bool(want[1]) and isinstance(want[1], h5lake.RegionReference)


def test_a_region_of_a_scalar_dataset(tmp_path):
    with h5lake.File(tmp_path / "s.h5l", "w") as f:
        d = f.create_dataset("s", data=1.5, dtype="f4")
        assert d[d.regionref[()]] == d[d.regionref[...]] == np.float32(1.5)


def test_regions_kept_in_datasets_and_attributes(tmp_path):
    path = tmp_path / "s.h5l"
    with h5lake.File(path, "w") as f:
        d = f.create_dataset("x", data=DATA)
        f.create_dataset("refs", data=[d.regionref[:-1, 5], d.regionref[1:, 7], d.regionref[::2, ::2]])
        one = f.create_dataset("one", (2,), dtype=h5lake.regionref_dtype)
        one[1] = d.regionref[3, ::7]
        f.attrs["r"] = d.regionref[2:4, 2:4]
        f.attrs["rs"] = [d.regionref[0, 0], d.regionref[DATA > 29990]]
        # An object reference dataset takes no region reference.
        obj = f.create_dataset("obj", (1,), dtype=h5lake.ref_dtype)
        with pytest.raises(TypeError, match="convert"):
            obj[0] = d.regionref[:6]
    with h5lake.File(path, "r") as f:
        d, refs = f["x"], f["refs"]
        assert h5lake.check_ref_dtype(refs.dtype) is h5lake.RegionReference
        assert all(isinstance(r, h5lake.RegionReference) for r in refs[...])
        np.testing.assert_array_equal(d[refs[0]], DATA[:-1, 5:6])
        np.testing.assert_array_equal(d[refs[1]], DATA[1:, 7:8])
        np.testing.assert_array_equal(d[refs[2]], DATA[::2, ::2])
        assert not f["one"][0]           # the null reference
        with pytest.raises(ValueError, match="null"):
            d[f["one"][0]]
        np.testing.assert_array_equal(d[f["one"][1]], DATA[3:4, ::7])
        np.testing.assert_array_equal(d[f.attrs["r"]], DATA[2:4, 2:4])
        np.testing.assert_array_equal(d[f.attrs["rs"][1]], DATA[DATA > 29990])
        assert f.attrs["rs"][0] == d.regionref[0, 0]


def test_blocks_that_make_no_grid_read_in_a_row(tmp_path):
    """A region of overlapping-free blocks that are not every combination
    of their intervals (HDF5 writers make them with H5S_SELECT_OR):
    the selected elements in C order, as h5py reads them."""
    with h5lake.File(tmp_path / "s.h5l", "w") as f:
        d = f.create_dataset("x", data=DATA)
        ref = h5lake.RegionReference(d._oid, {
            "select_type": "H5S_SEL_HYPERSLABS",
            "selection": [[[0, 0], [1, 2]], [[5, 10], [5, 12]]]})
        mask = np.zeros(DATA.shape, bool)
        mask[0:2, 0:3] = True
        mask[5, 10:13] = True
        np.testing.assert_array_equal(d[ref], DATA[mask])
        assert d.regionref.selection(ref) == (9,)
        wrong_rank = h5lake.RegionReference(d._oid, {"select_type": "H5S_SEL_POINTS",
                                                     "selection": [[1]]})
        with pytest.raises(TypeError, match="shape"):
            d[wrong_rank]
        outside = h5lake.RegionReference(d._oid, {"select_type": "H5S_SEL_POINTS",
                                                  "selection": [[1, 150]]})
        with pytest.raises(ValueError, match="outside"):
            d[outside]


def test_region_references_h5py_wrote_load_and_read(tmp_path):
    src = tmp_path / "refs.h5"
    with h5py.File(src, "w") as f:
        d = f.create_dataset("x", data=DATA)
        f.create_dataset("refs", data=[d.regionref[25:35, 10:100:5], d.regionref[DATA % 991 == 0],
                                       d.regionref[3]], dtype=h5py.regionref_dtype)
        want = [d[r] for r in f["refs"][...]]
    h5lake.load(str(src), str(tmp_path / "s.h5l"))
    with h5lake.File(tmp_path / "s.h5l", "r") as f:
        got = [f["x"][r] for r in f["refs"][...]]
    for g, w in zip(got, want):
        assert g.shape == w.shape
        np.testing.assert_array_equal(g, w)


def test_h5r_create_makes_what_h5py_makes(tmp_path):
    """``h5r.create`` from an object id: an object reference, or a region
    of all of a dataset or none of it (a dataspace's ``select_all`` /
    ``select_none``), read back as h5py reads them."""
    with h5py.File(tmp_path / "ref.h5", "w") as h, h5lake.File(tmp_path / "s.h5l", "w") as s:
        got = []
        for lib, f in ((h5py, h), (h5lake, s)):
            d = f.create_dataset("x", data=np.arange(6.0))
            sc = f.create_dataset("s", data=1.5, dtype="f4")
            sid = lib.h5s.create(lib.h5s.SCALAR)
            sid.select_none()
            nothing = sc[lib.h5r.create(sc.id, b".", lib.h5r.DATASET_REGION, sid)]
            sid.select_all()
            everything = sc[lib.h5r.create(sc.id, b".", lib.h5r.DATASET_REGION, sid)]
            whole = d[lib.h5r.create(f.id, b"x", lib.h5r.DATASET_REGION, lib.h5s.create_simple((6,)))]
            with pytest.raises(ValueError, match="Dataspace required"):
                lib.h5r.create(f.id, b"x", lib.h5r.DATASET_REGION)
            obj = f[lib.h5r.create(f.id, b"x", lib.h5r.OBJECT)].name
            with pytest.raises(ValueError):
                f[lib.h5r.Reference()]
            got.append((nothing == lib.Empty(np.dtype("f4")), everything, whole.tolist(), obj))
        assert got[0] == got[1]


def test_region_references_made_here_reach_hdf5_files(tmp_path):
    """``h5lake get`` writes them as HDF5 region references h5py reads,
    listed blocks, HDF5's regular form and points alike."""
    store, out = tmp_path / "s.h5l", tmp_path / "out.h5"
    sels = [np.s_[25:35, 10:100:5], np.s_[::2, ::2], DATA % 997 == 0]
    with h5lake.File(store, "w") as f:
        d = f.create_dataset("x", data=DATA)
        f.create_dataset("refs", data=[d.regionref[s] for s in sels])
    h5lake.get(str(store), str(out))
    with h5py.File(out, "r") as f:
        for ref, s in zip(f["refs"][...], sels):
            got = f["x"][ref]
            np.testing.assert_array_equal(got.reshape(-1), DATA[s].reshape(-1))


def test_region_references_inside_a_compound_are_refused_by_name(tmp_path):
    """Not supported yet (README): writing one said only "variable-length
    data must be written with write_vlen", reading "... read_vlen"."""
    with h5lake.File(tmp_path / "s.h5l", "w") as f:
        d = f.create_dataset("d", data=np.arange(5))
        c = f.create_dataset("c", (3,), dtype=[("r", h5lake.regionref_dtype), ("n", "i4")])
        with pytest.raises(TypeError, match="member 'r' holds region references.*cannot write"):
            c[0] = (d.regionref[1:3], 1)
        with pytest.raises(TypeError, match="member 'r' holds region references.*cannot read"):
            c[1]
