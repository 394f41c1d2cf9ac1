"""Virtual datasets (issue 22): h5py's VirtualLayout / VirtualSource /
create_virtual_dataset, read in parallel from sources in the same store and
in other stores, differential against h5py's virtual datasets over the same
data in HDF5 files."""

import os
import shutil
import warnings

import h5py
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import h5lake


def both(tmp, build):
    """Runs ``build(mod, ext, root)`` for h5lake (stores) and h5py (HDF5
    files) in sibling directories; returns the two virtual datasets, h5lake's
    first."""
    out = []
    for mod, ext in ((h5lake, "h5l"), (h5py, "h5")):
        root = tmp / ext
        root.mkdir(exist_ok=True)
        out.append(build(mod, ext, root))
    return out


def sources(mod, ext, root, n, shape, dtype="i8", seed=0):
    rng = np.random.default_rng(seed)
    data = []
    for k in range(n):
        a = rng.integers(-1000, 1000, shape).astype(dtype)
        with mod.File(str(root / f"src{k}.{ext}"), "w") as f:
            f.create_dataset("data", data=a, chunks=tuple(max(1, s // 3) for s in shape))
        data.append(a)
    return data


SELECTIONS = [np.s_[...], np.s_[1:3, 5:50:3], np.s_[2], np.s_[:, 7], np.s_[[0, 2], 10:20],
              np.s_[3, ::-1][:1], np.s_[-1, -5:], np.s_[1:4:2, 99]]


def test_stacked_sources_in_other_stores_read_as_h5py_does(tmp_path):
    def build(mod, ext, root):
        sources(mod, ext, root, 4, (100,))
        layout = mod.VirtualLayout(shape=(4, 100), dtype="i8")
        for k in range(4):
            layout[k] = mod.VirtualSource(str(root / f"src{k}.{ext}"), "data", shape=(100,))
        f = mod.File(str(root / f"vds.{ext}"), "w")
        f.create_virtual_dataset("vdata", layout, fillvalue=-5)
        return f["vdata"]

    a, b = both(tmp_path, build)
    assert a.is_virtual and b.is_virtual
    assert a.shape == b.shape and a.dtype == b.dtype and a.fillvalue == b.fillvalue
    for s in SELECTIONS:
        np.testing.assert_array_equal(a[s], b[s], err_msg=str(s))
    maps = a.virtual_sources()
    # (Named as given, "data", as h5py gives it back.)
    assert [m.dset_name for m in maps] == [m.dset_name for m in b.virtual_sources()] == ["data"] * 4
    out = np.zeros((2, 100), "i8")
    a.read_direct(out, np.s_[1:3])
    np.testing.assert_array_equal(out, b[1:3])
    # (As libhdf5 reads a selection back from a file: adjacent blocks as one.)
    name = b.file.filename
    b.file.close()
    with h5py.File(name, "r") as reopened:
        theirs = reopened["vdata"].virtual_sources()[2]
        assert maps[2].vspace.get_regular_hyperslab() == theirs.vspace.get_regular_hyperslab() \
            == ((2, 0), (1, 1), (1, 1), (1, 100))
        assert maps[2].vspace.get_simple_extent_dims() == theirs.vspace.get_simple_extent_dims()
        assert maps[2].src_space.shape == (100,)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(n=st.integers(1, 4), length=st.integers(3, 40), gap=st.integers(0, 5),
       step=st.integers(1, 3), same_store=st.booleans(), seed=st.integers(0, 3),
       sel=st.tuples(st.integers(0, 200), st.integers(0, 200), st.integers(1, 4)),
       points=st.lists(st.integers(0, 400), max_size=6, unique=True))
def test_mappings_with_steps_gaps_and_partial_sources(tmp_path_factory, n, length, gap, step,
                                                      same_store, seed, sel, points):
    """Sources mapped with gaps between them (fill), every other element
    (interleaved mappings), and only part of each source."""
    tmp = tmp_path_factory.mktemp("v")
    total = n * (length + gap) * step

    def build(mod, ext, root):
        rng = np.random.default_rng(seed)
        vpath = str(root / f"vds.{ext}")
        f = mod.File(vpath, "w")
        layout = mod.VirtualLayout(shape=(total,), dtype="f4")
        for k in range(n):
            a = rng.random(length + 3).astype("f4")
            if same_store:
                f.create_dataset(f"s{k}", data=a, chunks=(4,))
                src = mod.VirtualSource(".", f"s{k}", shape=a.shape)
            else:
                with mod.File(str(root / f"s{k}.{ext}"), "w") as g:
                    g.create_dataset("d", data=a, chunks=(5,))
                src = mod.VirtualSource(str(root / f"s{k}.{ext}"), "d", shape=a.shape)
            first = k * (length + gap) * step
            layout[first:first + length * step:step] = src[1:1 + length]
        f.create_virtual_dataset("v", layout, fillvalue=np.float32(-1.5))
        return f["v"]

    a, b = both(tmp, build)
    full = b[...]
    np.testing.assert_array_equal(a[...], full)
    lo, hi, st_ = sel
    np.testing.assert_array_equal(a[lo:hi:st_], b[lo:hi:st_])
    # (libhdf5 reads no point selections of a virtual dataset: compare with
    # its full read.)
    idx = sorted(p for p in points if p < total)
    np.testing.assert_array_equal(a[idx], full[idx])
    mask = np.zeros(total, bool)
    mask[idx] = True
    np.testing.assert_array_equal(a[mask], full[mask])


def test_missing_and_truncated_sources_read_as_fill_and_are_named(tmp_path):
    """64 sources, three of them missing or shorter than mapped: their parts
    read as the fill value, as h5py reads missing ones, and a warning names
    them. (libhdf5 fails the whole read over a source shorter than its
    mapping; h5lake fills the rest, so h5py's copy of source 40 is whole.)"""
    def build(mod, ext, root):
        for k in range(64):
            with mod.File(str(root / f"s{k}.{ext}"), "w") as f:
                f["d"] = np.full(50 if k != 40 or mod is h5py else 20, k, "i4")
        for k in (7, 23):
            p = root / f"s{k}.{ext}"
            shutil.rmtree(p) if p.is_dir() else os.remove(p)
        layout = mod.VirtualLayout(shape=(64 * 50,), dtype="i4")
        for k in range(64):
            layout[k * 50:(k + 1) * 50] = mod.VirtualSource(str(root / f"s{k}.{ext}"), "d", shape=(50,))
        f = mod.File(str(root / f"vds.{ext}"), "w")
        f.create_virtual_dataset("v", layout, fillvalue=-1)
        return f["v"]

    a, b = both(tmp_path, build)
    with pytest.warns(h5lake.VirtualSourceWarning) as w:
        got = a[...]
    want = b[...]
    want[40 * 50 + 20:41 * 50] = -1
    np.testing.assert_array_equal(got, want)
    text = str(w[0].message)
    assert "3 of 64" in text and "s7.h5l" in text and "s23.h5l" in text and "s40.h5l" in text
    assert (got[7 * 50:8 * 50] == -1).all() and (got[40 * 50 + 20:41 * 50] == -1).all()


def test_compound_fields_and_2d_blocks(tmp_path):
    dt = np.dtype([("x", "<f8"), ("id", "<i4")])

    def build(mod, ext, root):
        f = mod.File(str(root / f"vds.{ext}"), "w")
        layout = mod.VirtualLayout(shape=(6, 8), dtype=dt)
        for k in range(4):
            a = np.zeros((3, 4), dt)
            a["x"] = np.arange(12).reshape(3, 4) + 100 * k
            a["id"] = k
            f.create_dataset(f"tile{k}", data=a)
            layout[(k // 2) * 3:(k // 2) * 3 + 3, (k % 2) * 4:(k % 2) * 4 + 4] = \
                mod.VirtualSource(f[f"tile{k}"])
        f.create_virtual_dataset("mosaic", layout)
        return f["mosaic"]

    a, b = both(tmp_path, build)
    np.testing.assert_array_equal(a[...], b[...])
    np.testing.assert_array_equal(a["x"], b["x"])
    np.testing.assert_array_equal(a[2:5, 3:6]["id"], b[2:5, 3:6]["id"])


def test_queries_and_aggregates_read_the_sources(tmp_path):
    """A virtual dataset keeps no statistics, but its sources' values are
    queried and aggregated as a stored dataset's are (every chunk read, from
    the sources): read_where, get_where_list, where and min/max/sum/mean/
    count over all or a selection equal numpy's over the values read,
    unmapped parts counting as the fill value; the per-chunk table stays
    refused (there are no records)."""
    dt = np.dtype([("t", "<i8"), ("value", "<f4")])
    rng = np.random.default_rng(7)

    def part(n, t0):
        a = np.zeros(n, dt)
        a["t"] = np.arange(t0, t0 + n)
        a["value"] = rng.normal(size=n).astype("f4")
        return a

    parts = [part(300, 0), part(500, 1000), part(200, 5000)]
    with h5py.File(tmp_path / "one.h5", "w") as f:          # linked HDF5 file
        f.create_dataset("d", data=parts[0], chunks=(64,))
    with h5lake.File(str(tmp_path / "two.h5l"), "w") as f:   # another store
        f.create_dataset("d", data=parts[1], chunks=(128,))
    fill = np.zeros((), dt)
    fill["t"], fill["value"] = -1, 9.5
    with h5lake.File(str(tmp_path / "v.h5l"), "w") as f:
        f.create_dataset("d", data=parts[2])                 # its own store
        layout = h5lake.VirtualLayout(shape=(1100,), dtype=dt)
        layout[0:300] = h5lake.VirtualSource(str(tmp_path / "one.h5"), "d", shape=(300,))
        layout[300:800] = h5lake.VirtualSource(str(tmp_path / "two.h5l"), "d", shape=(500,))
        layout[850:1050] = h5lake.VirtualSource(f["d"])      # 800:850 and 1050: unmapped
        v = f.create_virtual_dataset("v", layout, fillvalue=fill)
        every = v[...]
        assert (every["t"][800:850] == -1).all()
        for cond, mask in (("value > 1.5", every["value"] > 1.5),
                           ("(t >= 1200) & (t < 5100)", (every["t"] >= 1200) & (every["t"] < 5100)),
                           ("value == 9.5", every["value"] == 9.5)):
            np.testing.assert_array_equal(v.read_where(cond), every[mask])
            np.testing.assert_array_equal(v.get_where_list(cond).ravel(), np.nonzero(mask)[0])
            assert [r["t"] for r in v.where(cond)] == list(every["t"][mask])
        sel = np.s_[250:900]
        np.testing.assert_array_equal(v.read_where("value < 0", sel=sel),
                                      every[250:900][every["value"][250:900] < 0])
        for op in ("min", "max", "sum", "mean"):
            np.testing.assert_allclose(getattr(v, op)("value"),
                                       getattr(np, op)(every["value"].astype("f8")), rtol=1e-6)
            np.testing.assert_allclose(getattr(v, op)("t", sel=sel),
                                       getattr(np, op)(every["t"][250:900]), rtol=1e-12)
        assert v.count("t") == 1100
        with pytest.raises(TypeError, match="virtual"):
            v.stats()


def test_bad_layouts_and_writes_are_refused(tmp_path):
    with h5lake.File(str(tmp_path / "v.h5l"), "w") as f:
        f["a"] = np.arange(10)
        layout = h5lake.VirtualLayout(shape=(20,), dtype="i8")
        with pytest.raises(ValueError, match="different number"):
            layout[0:5] = h5lake.VirtualSource(f["a"])
        with pytest.raises(IndexError):
            layout[30] = h5lake.VirtualSource(f["a"])[0]
        layout[0:10] = h5lake.VirtualSource(f["a"])
        v = f.create_virtual_dataset("v", layout, fillvalue=7)
        np.testing.assert_array_equal(v[...], np.r_[np.arange(10), np.full(10, 7)])
        assert f["a"].is_virtual is False
        with pytest.raises(RuntimeError):
            f["a"].virtual_sources()
        with pytest.raises(OSError, match="unmapped"):
            v[15] = 1                          # no mapping covers it, as in h5py
        v[0] = 1                               # written through to a[0]
        assert f["a"][0] == 1
        with pytest.raises(TypeError):
            v.resize((30,))
        # A source of a type that does not convert to the layout's.
        f["b"] = np.array([b"x"] * 10)
        bad = h5lake.VirtualLayout(shape=(10,), dtype="i8")
        bad[:] = h5lake.VirtualSource(".", "b", shape=(10,))
        w = f.create_virtual_dataset("w", bad)
        with pytest.raises(TypeError, match="numeric types only"):
            w[...]
        with pytest.raises(TypeError, match="numeric types only"):
            bad[:] = h5lake.VirtualSource(f["b"])
            f.create_virtual_dataset("w2", bad)
        # A larger maximum extent is kept, as HDF5 keeps it.
        u = f.create_virtual_dataset("u", h5lake.VirtualLayout((10,), "i8", maxshape=(None,)))
        assert u.maxshape == (None,) and u.is_virtual and u.virtual_sources() == []
        # The virtual layout, as in h5py: not chunked.
        assert v.chunks is None
        with pytest.raises(TypeError):
            list(v.iter_chunks())
        # An unlimited virtual selection needs an unlimited source one.
        unlimited = h5lake.VirtualLayout((10,), "i8", maxshape=(None,))
        with pytest.raises(ValueError, match="differ in shape"):
            unlimited[:h5lake.UNLIMITED] = h5lake.VirtualSource(f["a"])


def test_sources_of_other_numeric_types_convert_as_in_hdf5(tmp_path):
    # Integers that do not fit clamp, floats truncate, byte orders swap,
    # float16 widens: as libhdf5 converts on read. (NaN to an integer is
    # undefined in C, and libhdf5 gives what the CPU gives — on x86 the
    # least 32- or 64-bit integer, 2**63 for uint64; h5lake too.)
    values = {"f8": np.array([-3.7, np.nan, 1e12, np.inf, -1e12, 0.49]),
              ">i8": np.array([-300, 5, 2**40, 127, -128, 0]),
              "u2": np.array([0, 65535, 128, 7, 300, 1]),
              # (Negative: libhdf5 2.0 wraps float16 to unsigned, -2.25 to
              # 2**32 - 2, where it clamps other floats to 0 as h5lake does.)
              "f2": np.array([1.5, 2.25, 65504, 0.1, -0.0, 3])}

    def build(mod, ext, root):
        f = mod.File(str(root / f"conv.{ext}"), "w")
        for t, v in values.items():
            f.create_dataset(t.strip("><"), data=v.astype(t))
        for target in ("i1", "u4", "f4", ">f8", "i8", "i4", ">i4"):
            layout = mod.VirtualLayout(shape=(len(values), 6), dtype=target)
            for k, t in enumerate(values):
                layout[k] = mod.VirtualSource(".", t.strip("><"), shape=(6,))
            f.create_virtual_dataset("as_" + target.replace(">", "be_"), layout, fillvalue=9)
        return f

    fa, fb = both(tmp_path, build)
    with fa, fb:
        for name in fb:
            if name.startswith("as_"):
                a, b = fa[name], fb[name]
                assert a.dtype == b.dtype, name
                np.testing.assert_array_equal(a[...], b[...], err_msg=name)
                np.testing.assert_array_equal(a[1:3, ::2], b[1:3, ::2], err_msg=name)
                np.testing.assert_array_equal(a[[0, 3], 2], b[[0, 3], 2], err_msg=name)
    with h5lake.File(str(tmp_path / "h5l" / "conv.h5l"), "a") as f:
        f["f8"][3] = np.nan
        assert np.isnan(f["as_f4"][0, 3])


def test_relative_sources_are_found_as_libhdf5_finds_them(tmp_path, monkeypatch):
    # Sources named by relative paths are kept so and found when read:
    # under $HDF5_VDS_PREFIX, else beside the store; so a directory of
    # stores moves whole, and a source made later is read once it exists.
    d = tmp_path / "a"
    d.mkdir()
    for k in range(2):
        with h5lake.File(str(d / f"s{k}.h5l"), "w") as f:
            f["x"] = np.arange(5) + 10 * k
    monkeypatch.chdir(d)
    with h5lake.File("v.h5l", "w") as f:
        layout = h5lake.VirtualLayout((3, 5), "i8")
        for k, name in enumerate(["s0.h5l", "./s1.h5l", "later.h5l"]):
            layout[k] = h5lake.VirtualSource(name, "x", shape=(5,))
        f.create_virtual_dataset("v", layout, fillvalue=-1)
        assert [m.file_name for m in f["v"].virtual_sources()] == ["s0.h5l", "./s1.h5l", "later.h5l"]
    monkeypatch.chdir(tmp_path)
    shutil.move(str(d), str(tmp_path / "b"))
    want = np.array([np.arange(5), np.arange(5) + 10, np.full(5, -1)])
    with h5lake.File(str(tmp_path / "b" / "v.h5l"), "r") as f:
        with pytest.warns(h5lake.VirtualSourceWarning, match="later.h5l"):
            np.testing.assert_array_equal(f["v"][...], want)
    with h5lake.File(str(tmp_path / "b" / "later.h5l"), "w") as f:
        f["x"] = np.arange(5) * 7
    want[2] = np.arange(5) * 7
    with h5lake.File(str(tmp_path / "b" / "v.h5l"), "r") as f:
        np.testing.assert_array_equal(f["v"][...], want)
    # A directory of $HDF5_VDS_PREFIX holding the source comes first.
    (tmp_path / "prefix").mkdir()
    with h5lake.File(str(tmp_path / "prefix" / "s0.h5l"), "w") as f:
        f["x"] = -np.arange(5)
    monkeypatch.setenv("HDF5_VDS_PREFIX", f"{tmp_path / 'none'}:{tmp_path / 'prefix'}")
    want[0] = -np.arange(5)
    with h5lake.File(str(tmp_path / "b" / "v.h5l"), "r") as f:
        np.testing.assert_array_equal(f["v"][...], want)


def test_unlimited_axis_as_in_h5pys_own_test(tmp_path):
    # h5py's VDSUnlimitedTestCase, with the store copied as h5py copies its
    # file; run on h5py too, so the two must agree step by step.
    for mod, ext in ((h5lake, "h5l"), (h5py, "h5")):
        path = str(tmp_path / f"resize.{ext}")
        with mod.File(path, "w") as f:
            source = f.create_dataset("source", data=np.arange(20), shape=(10, 2),
                                      maxshape=(None, 2), chunks=(10, 1), fillvalue=-1)
            layout = mod.VirtualLayout((10, 1), int, maxshape=(None, 1))
            layout[:mod.UNLIMITED, 0] = mod.VirtualSource(source)[:mod.UNLIMITED, 1]
            f.create_virtual_dataset("virtual", layout)
        copy = str(tmp_path / f"resize2.{ext}")
        (shutil.copytree if ext == "h5l" else shutil.copyfile)(path, copy)
        comp1 = np.arange(1, 20, 2).reshape(10, 1)
        with mod.File(copy, "a") as f:
            source, virtual = f["source"], f["virtual"]
            np.testing.assert_array_equal(comp1, virtual)
            source.resize(20, axis=0)
            assert virtual.shape == (20, 1), mod
            np.testing.assert_array_equal(np.vstack((comp1, np.full((10, 1), -1))), virtual)
            source[10:, 1] = np.zeros((10,), dtype=int)
            np.testing.assert_array_equal(np.vstack((comp1, np.zeros((10, 1)))), virtual)
            (m,) = virtual.virtual_sources()
            assert m.vspace.get_regular_hyperslab()[2] == (mod.UNLIMITED, 1)
            assert m.src_space.get_regular_hyperslab()[:3] == ((0, 1), (1, 1), (mod.UNLIMITED, 1))


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(lengths=st.lists(st.integers(0, 9), min_size=2, max_size=2),
       growth=st.lists(st.lists(st.integers(0, 12), min_size=2, max_size=2), max_size=3),
       start=st.integers(0, 3), floor=st.integers(6, 14), step=st.integers(1, 3))
def test_unlimited_interleaved_sources_follow_their_extents(tmp_path_factory, lengths, growth,
                                                            start, floor, step):
    # Two growing sources (in other files and stores) interleaved without
    # end with a bounded mapping that sets a least extent, read after each
    # change of the sources' extents, as libhdf5 reads them. (The mappings
    # do not overlap: where they do, libhdf5 counts elements twice and
    # leaves what no mapping covers unwritten instead of filling it.)
    tmp = tmp_path_factory.mktemp("unlim")

    def build(mod, ext, root):
        for k, n in enumerate(lengths):
            with mod.File(str(root / f"s{k}.{ext}"), "w") as f:
                f.create_dataset("d", data=np.arange(n) + 100 * k, maxshape=(None,), chunks=(4,))
        f = mod.File(str(root / f"v.{ext}"), "w")
        fixed = range(start + 2, floor, 3)
        f["fixed"] = np.arange(len(fixed)) - 50
        layout = mod.VirtualLayout((floor,), "i8", maxshape=(None,))
        layout[fixed.start:fixed.stop:3] = mod.VirtualSource(f["fixed"])
        for k in range(2):
            # (The shape given only frames the selection, as in h5py.)
            src = mod.VirtualSource(str(root / f"s{k}.{ext}"), "d", shape=(16,), maxshape=(None,))
            layout[start + k:mod.UNLIMITED:3] = src[step - 1:mod.UNLIMITED:step]
        f.create_virtual_dataset("v", layout, fillvalue=-3)
        return f

    fa, fb = both(tmp, build)
    try:
        for sizes in [lengths] + growth:
            for f, mod, ext in ((fa, h5lake, "h5l"), (fb, h5py, "h5")):
                for k, n in enumerate(sizes):
                    with mod.File(str(tmp / ext / f"s{k}.{ext}"), "a") as s:
                        old = s["d"].shape[0]
                        s["d"].resize((n,))
                        if n > old:
                            s["d"][old:] = np.arange(old, n) + 100 * k
            b = fb["v"][...]
            a = fa["v"][...]
            assert fa["v"].shape == fb["v"].shape, sizes
            np.testing.assert_array_equal(a, b, err_msg=str(sizes))
    finally:
        fa.close()
        fb.close()


def test_virtual_datasets_on_s3(s3_root):
    root = s3_root.rstrip("/")
    data = []
    for k in range(3):
        with h5lake.File(f"{root}/src{k}.h5l", "w") as f:
            f.create_dataset("d", data=np.arange(30) * (k + 1), chunks=(7,))
        data.append(np.arange(30) * (k + 1))
    layout = h5lake.VirtualLayout(shape=(3, 30), dtype="i8")
    for k in range(3):
        layout[k] = h5lake.VirtualSource(f"{root}/src{k}.h5l", "d", shape=(30,))
    with h5lake.File(f"{root}/vds.h5l", "w") as f:
        f.create_virtual_dataset("v", layout)
    with h5lake.File(f"{root}/vds.h5l", "r") as f:
        np.testing.assert_array_equal(f["v"][...], np.stack(data))
        np.testing.assert_array_equal(f["v"][1:, 5:9], np.stack(data)[1:, 5:9])


def test_the_server_reads_virtual_datasets_and_opens_no_store_a_client_names(tmp_path):
    from servers import Server
    user = "test_user1"
    s = Server(tmp_path / "bucket")
    try:
        assert s.request("PUT", "/", {"folder": 1}, params={"domain": "/home/"})[0] == 201
        assert s.request("PUT", "/", {"folder": 1, "owner": user},
                         params={"domain": f"/home/{user}/"})[0] == 201
        domain = f"/home/{user}/v.h5"
        status, _, rsp = s.request("PUT", "/", {}, user=user, params={"domain": domain})
        assert status == 201, rsp
        root = rsp["root"]
        i8 = {"class": "H5T_INTEGER", "base": "H5T_STD_I64LE"}
        status, _, rsp = s.request("POST", "/datasets", {"type": i8, "shape": [10]}, user=user,
                                   params={"domain": domain})
        src = rsp["id"]
        assert s.request("PUT", f"/datasets/{src}/value", {"value": list(range(10))}, user=user,
                         params={"domain": domain})[0] == 200
        assert s.request("PUT", f"/groups/{root}/links/src", {"id": src}, user=user,
                         params={"domain": domain})[0] == 201

        def virtual(store):
            return {"type": i8, "shape": [12], "creationProperties": {"h5lake": {"virtual": [
                {"store": store, "path": "/src", "src": [[0, 1, 10]], "dst": [[1, 1, 10]]}]},
                "fillValue": -1}}

        status, _, rsp = s.request("POST", "/datasets", virtual(None), user=user,
                                   params={"domain": domain})
        assert status == 201, rsp
        vid = rsp["id"]
        status, _, rsp = s.request("GET", f"/datasets/{vid}/value", user=user,
                                   params={"domain": domain})
        assert status == 200 and rsp["value"] == [-1] + list(range(10)) + [-1]
        # A store the client names on the server's disk is refused, not opened.
        other = tmp_path / "elsewhere.h5l"
        with h5lake.File(str(other), "w") as f:
            f["src"] = np.arange(10)
        for store in (str(other), "/etc"):
            status, _, rsp = s.request("POST", "/datasets", virtual(store), user=user,
                                       params={"domain": domain})
            assert status in (400, 403), (store, status, rsp)
    finally:
        s.stop()


def _runs_on_disk(root, sizes, cols=4, missing_in=()):
    """HDF5 files run-<k>.h5 (gzip chunks) holding /entry/data of sizes[k] rows."""
    parts = []
    for k, n in enumerate(sizes):
        a = np.arange(n * cols, dtype="f8").reshape(n, cols) + 1000 * k
        with h5py.File(root / f"run-{k + 1}.h5", "w") as f:
            if k in missing_in:
                f.create_dataset("entry/other", data=a)
            else:
                f.create_dataset("entry/data", data=a, chunks=(max(1, n // 2), cols),
                                 compression="gzip")
        parts.append(a)
    return parts


def test_hdf5_files_as_sources_are_linked_not_copied(tmp_path):
    sizes = [30, 7, 12, 40, 3, 25, 9, 11, 50, 2, 18]    # run-1 .. run-11
    parts = _runs_on_disk(tmp_path, sizes)
    store = tmp_path / "runs.h5l"
    report = h5lake.concat(str(tmp_path / "run-*.h5"), str(store), path="/entry/data")
    assert report["sources"] == 11 and report["missing"] == [] and report["shape"] == (sum(sizes), 4)
    want = np.concatenate(parts)      # natural order: run-2 before run-10
    with h5lake.File(str(store), "r") as f:
        d = f["/entry/data"]
        assert d.is_virtual
        np.testing.assert_array_equal(d[...], want)
        np.testing.assert_array_equal(d[25:140:3, 1:3], want[25:140:3, 1:3])
        assert [m.file_name for m in d.virtual_sources()][:2] == [
            str(tmp_path / "run-1.h5"), str(tmp_path / "run-2.h5")]
    data_bytes = sum(os.path.getsize(tmp_path / f"run-{k + 1}.h5") for k in range(len(sizes)))
    stored = sum(os.path.getsize(os.path.join(r, n)) for r, _, ns in os.walk(store) for n in ns)
    assert stored < data_bytes, (stored, data_bytes)
    # The same files through a VirtualLayout, against h5py's virtual dataset.
    layout_a = h5lake.VirtualLayout(shape=(3, 12, 4), dtype="f8")
    layout_b = h5py.VirtualLayout(shape=(3, 12, 4), dtype="f8")
    for i, k in enumerate((0, 2, 3)):
        for mod, layout in ((h5lake, layout_a), (h5py, layout_b)):
            layout[i] = mod.VirtualSource(str(tmp_path / f"run-{k + 1}.h5"), "entry/data",
                                          shape=(sizes[k], 4))[:12]
    with h5lake.File(str(tmp_path / "v.h5l"), "w") as fa:
        fa.create_virtual_dataset("v", layout_a)
    with h5py.File(tmp_path / "v.h5", "w") as fb:
        fb.create_virtual_dataset("v", layout_b)
    # (h5py's reads open the sources with the file's own access, writing,
    # which touches them: h5lake then links them again.)
    with h5lake.File(str(tmp_path / "v.h5l"), "r") as fa, h5py.File(tmp_path / "v.h5", "r") as fb:
        a, b = fa["v"], fb["v"]
        np.testing.assert_array_equal(a[...], b[...])
        np.testing.assert_array_equal(a[1:, 3:9:2, 2], b[1:, 3:9:2, 2])


def test_load_link_concat_on_the_command_line(tmp_path):
    import subprocess
    import sys
    sizes = [5, 8, 6]
    parts = _runs_on_disk(tmp_path, sizes)
    out = tmp_path / "runs.h5l"
    r = subprocess.run([sys.executable, "-m", "h5lake", "load", "--link", "--concat", "/entry/data",
                        str(tmp_path / "run-*.h5"), str(out)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    with h5lake.File(str(out), "r") as f:
        np.testing.assert_array_equal(f["entry/data"][...], np.concatenate(parts))
    # A file without the dataset is left out (it has no rows to give): the
    # load names it and exits 3 (incomplete) unless that is accepted.
    (tmp_path / "b").mkdir()
    _runs_on_disk(tmp_path / "b", sizes, missing_in=(1,))
    r = subprocess.run([sys.executable, "-m", "h5lake", "load", "--link", "--concat", "/entry/data",
                        str(tmp_path / "b" / "run-*.h5"), str(tmp_path / "b.h5l")],
                       capture_output=True, text=True)
    assert r.returncode == 3 and "left out: " in r.stderr and "run-2.h5" in r.stderr, r.stderr
    assert "[Errno" not in r.stderr and "reads as fill" not in r.stderr, r.stderr
    # From Python, the same gap is a warning naming the file.
    with pytest.warns(h5lake.VirtualSourceWarning, match="run-2.h5"):
        report = h5lake.concat(str(tmp_path / "b" / "run-*.h5"), str(tmp_path / "b2.h5l"),
                               path="/entry/data")
    assert len(report["left_out"]) == 1 and report["missing"] == []
    r = subprocess.run([sys.executable, "-m", "h5lake", "load", "--concat", "/entry/data",
                        str(tmp_path / "run-*.h5"), str(tmp_path / "c.h5l")],
                       capture_output=True, text=True)
    assert r.returncode == 2 and "--link" in r.stderr


def test_concat_of_stores_and_of_datasets(tmp_path):
    parts = []
    for k in range(5):
        a = np.arange(12 * (k + 1), dtype="i2").reshape(-1, 3, 4) + k
        with h5lake.File(str(tmp_path / f"s{k}.h5l"), "w") as f:
            f.create_dataset("g/x", data=a, chunks=(1, 3, 2))
        parts.append(a)
    report = h5lake.concat([str(tmp_path / f"s{k}.h5l") for k in range(5)], str(tmp_path / "all.h5l"),
                           path="/g/x")
    assert report["missing"] == [] and report["shape"] == (15, 3, 4)
    with h5lake.File(str(tmp_path / "all.h5l"), "r") as f:
        np.testing.assert_array_equal(f["g/x"][...], np.concatenate(parts))
    # Sources that do not fit: refused, and the store it would have made is
    # not left behind.
    with pytest.raises(ValueError):
        h5lake.concat([str(tmp_path / "s0.h5l"), str(tmp_path / "s1.h5l")],
                      str(tmp_path / "bad.h5l"), path="/g/x", axis=2)
    assert not (tmp_path / "bad.h5l").exists()
    # Open datasets, along another axis, into an open group.
    files = [h5lake.File(str(tmp_path / f"s{k}.h5l"), "r") for k in (0, 0, 0)]
    with h5lake.File(str(tmp_path / "b.h5l"), "w") as out:
        d = h5lake.concat([f["g/x"] for f in files], out, axis=-1, name="wide")
        np.testing.assert_array_equal(d[...], np.concatenate([parts[0]] * 3, axis=-1))
        with pytest.raises(ValueError, match="off axis"):
            h5lake.concat([files[0]["g/x"], h5lake.File(str(tmp_path / "s1.h5l"))["g/x"]], out,
                          axis=2, name="bad")
    for f in files:
        f.close()


def test_parquet_files_as_sources(tmp_path):
    """Parquet files' tables are sources too (linked: rows stay in the
    files): concatenated into one table linked to them all (nulls kept), or
    mapped by slices into a virtual dataset; a field read reads that
    column; a missing file reads as fill."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    rng = np.random.default_rng(3)
    tables = []
    for k, n in enumerate((50, 7, 120)):
        x = pa.array(rng.normal(size=n).astype("f4"), mask=np.arange(n) % 11 == 3)
        t = pa.table({"x": x, "id": np.arange(n, dtype="i8") + 1000 * k})
        pq.write_table(t, tmp_path / f"part-{k}.parquet", row_group_size=32)
        tables.append(t)
    whole = pa.concat_tables(tables)
    report = h5lake.concat(str(tmp_path / "part-*.parquet"), str(tmp_path / "all.h5l"))
    assert report["name"] == "/part-0" and report["shape"] == (177,) and report["missing"] == []
    with h5lake.File(str(tmp_path / "all.h5l"), "r") as f:
        d = f["part-0"]
        assert d.dtype.names == ("x", "id")
        # (A null reads as the fill value through the HDF5-shaped API.)
        np.testing.assert_array_equal(d["x"], whole["x"].fill_null(0).to_numpy())
        np.testing.assert_array_equal(d[40:60]["id"], whole["id"].to_numpy()[40:60])
        assert d.to_arrow().equals(whole)
        assert d.parquet_files() == [str(tmp_path / f"part-{k}.parquet") for k in range(3)]
    # Mapped by hand: every other row of one file, and a file not there.
    with h5lake.File(str(tmp_path / "v.h5l"), "w") as f:
        dt = np.dtype([("x", "<f4"), ("id", "<i8")])
        layout = h5lake.VirtualLayout((35,), dt)
        layout[:25] = h5lake.VirtualSource(str(tmp_path / "part-0.parquet"), "t", shape=(50,), dtype=dt)[::2]
        layout[25:] = h5lake.VirtualSource(str(tmp_path / "gone.parquet"), "t", shape=(10,), dtype=dt)
        fill = np.array((-1.0, -1), dt)
        d = f.create_virtual_dataset("v", layout, fillvalue=fill)
        with pytest.warns(h5lake.VirtualSourceWarning, match="gone.parquet"):
            got = d[...]
        np.testing.assert_array_equal(got["id"][:25], np.arange(0, 50, 2))
        assert (got[25:] == fill).all()


def test_virtual_source_parts_have_h5py_shapes_and_build_virtual_dataset(tmp_path):
    vs = h5lake.VirtualSource("s.h5l", "data", shape=(20, 30, 30), maxshape=(None, 30, 30))
    assert vs.shape == (20, 30, 30)
    assert vs[5:10].shape == (5, 30, 30)
    assert vs[5].shape == (30, 30)
    assert vs[..., 2:8:3].shape == (20, 30, 2)
    assert vs[-3:, 4].shape == (3, 30)
    with pytest.raises(RuntimeError):
        vs[5:10][:, :4]
    assert h5lake.VirtualSource("s.h5l", "data", 20, maxshape=30).maxshape == (30,)
    layout = h5lake.VirtualLayout((4, 100), "i4", maxshape=(4, None))
    with pytest.raises(ValueError, match="different number"):
        layout[0, :49] = h5lake.VirtualSource("s.h5l", "data", shape=(100,))[0:100:2]
    with h5lake.File(str(tmp_path / "v.h5l"), "w") as f:
        f["src"] = np.arange(10, dtype="i4")
        with f.build_virtual_dataset("v", (2, 5), "i4", fillvalue=-1) as layout:
            layout[1] = h5lake.VirtualSource(f["src"])[0:5]
        np.testing.assert_array_equal(f["v"][...], [[-1] * 5, [0, 1, 2, 3, 4]])
        with f.build_virtual_dataset("empty", (3,), "i4"):
            pass
        assert f["empty"].is_virtual and f["empty"].virtual_sources() == []


def test_a_source_file_named_relatively_keeps_its_name(tmp_path, monkeypatch):
    import h5py
    monkeypatch.chdir(tmp_path)
    with h5py.File("s0.h5", "w") as f:
        f["data"] = np.arange(10)
    with h5lake.File("v.h5l", "w") as f:
        layout = h5lake.VirtualLayout((10,), "i8")
        layout[:] = h5lake.VirtualSource("s0.h5", "data", shape=(10,))
        d = f.create_virtual_dataset("v", layout)
        assert [m.file_name for m in d.virtual_sources()] == ["s0.h5"]
        np.testing.assert_array_equal(d[...], np.arange(10))


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(picked=st.lists(st.integers(0, 39), min_size=1, max_size=12, unique=True),
       from_list=st.booleans(), seed=st.integers(0, 3))
def test_lists_of_indices_map_as_h5py_maps_them(tmp_path_factory, picked, from_list, seed):
    """Irregular hyperslabs (h5py's ``layout[[3, 6, 20]] = ...`` and
    ``vsource[[0, 1, 4]]``), on either side or both, in 1-D and along one
    axis of 2-D mappings: the same values as h5py's virtual datasets."""
    tmp = tmp_path_factory.mktemp("v")
    inds = sorted(picked)
    k = len(inds)
    rng = np.random.default_rng(seed)
    # Where the source's elements come from: a list of its own, or a slice.
    src_inds = sorted(rng.choice(50, k, replace=False).tolist()) if from_list else None

    def build(mod, ext, root):
        sources(mod, ext, root, 1, (50,), seed=seed)
        sources(mod, ext, root / "..", 0, (50,))
        with mod.File(str(root / f"grid.{ext}"), "w") as f:
            f.create_dataset("data", data=np.arange(6 * 50).reshape(6, 50))
        vs = mod.VirtualSource(str(root / f"src0.{ext}"), "data", shape=(50,))
        grid = mod.VirtualSource(str(root / f"grid.{ext}"), "data", shape=(6, 50))
        layout = mod.VirtualLayout(shape=(40,), dtype="i8")
        layout[inds] = vs[src_inds] if from_list else vs[5:5 + k]
        layout2 = mod.VirtualLayout(shape=(3, 40), dtype="i8")
        layout2[1:3, inds] = grid[1:3, src_inds] if from_list else grid[2:4, 10:10 + k]
        f = mod.File(str(root / f"vds.{ext}"), "w")
        f.create_virtual_dataset("one", layout, fillvalue=-7)
        f.create_virtual_dataset("two", layout2, fillvalue=-3)
        return f

    a, b = both(tmp, build)
    for name in ("one", "two"):
        np.testing.assert_array_equal(a[name][()], b[name][()], err_msg=name)


def test_lists_of_indices_out_of_order_or_range_are_refused_as_h5py_refuses(tmp_path):
    layout = h5lake.VirtualLayout(shape=(10,), dtype="i4")
    vs = h5lake.VirtualSource(str(tmp_path / "s.h5l"), "data", shape=(10,))
    with pytest.raises(TypeError, match="increasing order"):
        layout[[3, 1]] = vs[0:2]
    with pytest.raises(IndexError):
        layout[[3, 10]] = vs[0:2]
    with pytest.raises(ValueError, match="different number"):
        layout[[1, 2, 3]] = vs[0:2]
    # A boolean mask selects where it is true.
    layout[np.arange(10) % 3 == 0] = vs[[0, 2, 4, 6]]
    assert len(layout.sources) == 1


def test_multi_block_slices_map_as_in_h5py(tmp_path):
    def build(mod, ext, root):
        with mod.File(str(root / f"src.{ext}"), "w") as f:
            f["a"] = np.arange(40.0).reshape(2, 20)
        vs = mod.VirtualSource(str(root / f"src.{ext}"), "a", shape=(2, 20))
        lay = mod.VirtualLayout((2, 12), "f8")
        lay[:, mod.MultiBlockSlice(start=0, stride=4, count=3, block=2)] = \
            vs[:, mod.MultiBlockSlice(start=1, stride=5, count=2, block=3)]
        f = mod.File(str(root / f"v.{ext}"), "w")
        f.create_virtual_dataset("v", lay, fillvalue=-1)
        return f["v"]

    a, b = both(tmp_path, build)
    np.testing.assert_array_equal(a[()], b[()])


@pytest.mark.parametrize("case", range(5))
def test_selections_of_other_shapes_pair_element_by_element_as_in_h5py(tmp_path, case):
    """HDF5 pairs a mapping's two selections element by element in C order
    whatever their shapes; h5lake cuts them into rows to do the same."""
    def build(mod, ext, root):
        with mod.File(str(root / f"s.{ext}"), "w") as f:
            f["a"] = np.arange(30.0)
            f["g"] = np.arange(24.0).reshape(4, 6)
        vs = mod.VirtualSource(str(root / f"s.{ext}"), "a", shape=(30,))
        g = mod.VirtualSource(str(root / f"s.{ext}"), "g", shape=(4, 6))
        shape, key, src = [
            ((2, 5), np.s_[:, :], vs[0:10]),
            ((3, 4), np.s_[:, :], vs[[1, 2, 3, 5, 6, 7, 9, 10, 11, 12, 15, 19]]),
            ((12,), np.s_[:], g[1:3, :]),
            ((3, 4), np.s_[:, 1:4], g[0:3, 1:4]),
            ((2, 3, 2), np.s_[...], g[1:4:2, ::1]),
        ][case]
        lay = mod.VirtualLayout(shape, "f8")
        lay[key] = src
        f = mod.File(str(root / f"v.{ext}"), "w")
        f.create_virtual_dataset("v", lay, fillvalue=-1)
        return f["v"]

    a, b = both(tmp_path, build)
    np.testing.assert_array_equal(a[()], b[()])


def test_parquet_files_with_text_columns_concatenate_into_one_linked_table(tmp_path):
    """A virtual dataset holds fixed-size elements only; Parquet files with
    text (or list) columns become one table linked to all of them, rows in
    order, text and nulls as pyarrow reads them."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    tables = []
    for k in range(3):
        t = pa.table({"id": pa.array(np.arange(4) + 10 * k),
                      "name": pa.array([f"r{k}-{j}" for j in range(3)] + [None]),
                      "v": pa.array([1.5 * k, None, 2.0, 3.0])})
        pq.write_table(t, tmp_path / f"part-{k}.parquet")
        tables.append(t)
    report = h5lake.concat(str(tmp_path / "part-*.parquet"), str(tmp_path / "c.h5l"))
    assert report["shape"] == (12,) and report["missing"] == []
    with h5lake.File(tmp_path / "c.h5l", "r") as f:
        d = f[report["name"]]
        assert d.to_arrow().equals(pa.concat_tables(tables))
        assert d["id"].tolist() == [j + 10 * k for k in range(3) for j in range(4)]
        assert d.parquet_files() == [str(tmp_path / f"part-{k}.parquet") for k in range(3)]


def test_a_parquet_file_that_cannot_be_read_is_named_not_dropped_quietly(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq
    pq.write_table(pa.table({"id": [1, 2], "name": ["a", "b"]}), tmp_path / "part-0.parquet")
    (tmp_path / "part-1.parquet").write_bytes(b"not a parquet file")
    with pytest.warns(h5lake.VirtualSourceWarning, match="part-1.parquet"):
        report = h5lake.concat(str(tmp_path / "part-*.parquet"), str(tmp_path / "c.h5l"))
    assert report["shape"] == (2,)
    assert len(report["left_out"]) == 1 and "part-1.parquet" in report["left_out"][0]


def test_writes_through_a_virtual_dataset_reach_its_sources_as_in_h5py(tmp_path):
    got = {}
    for mod, name in ((h5py, "w.h5"), (h5lake, "w.h5l")):
        with mod.File(str(tmp_path / name), "w") as f:
            a = f.create_dataset("a", data=np.zeros((4, 5), "i4"))
            b = f.create_dataset("b", data=np.zeros(10, "i4"))
            lay = mod.VirtualLayout((3, 10), "i4")
            lay[0, :5] = mod.VirtualSource(a)[1]
            lay[0, 5:] = mod.VirtualSource(a)[2]
            lay[1] = mod.VirtualSource(b)
            lay[2, :5] = mod.VirtualSource(a)[3]
            lay[2, 5:] = mod.VirtualSource(a)[0]
            v = f.create_virtual_dataset("v", lay, fillvalue=-1)
            v[...] = np.arange(30, dtype="i4").reshape(3, 10)
            v[1, 2:7:2] = np.array([100, 200, 300], "i4")
            v[0:3:2, 3:7] = np.full((2, 4), 7, "i4")
            got[mod] = (f["a"][()], f["b"][()], v[()])
            gap = mod.VirtualLayout((4,), "i4")
            gap[:2] = mod.VirtualSource(b)[:2]
            g = f.create_virtual_dataset("gap", gap, fillvalue=0)
            with pytest.raises(OSError):
                g[...] = np.ones(4, "i4")      # elements 2 and 3 are unmapped
            assert f["b"][:2].tolist() == list(got[mod][1][:2])   # nothing written
            # (From an audit: h5lake wrote elements two mappings cover to
            # both sources; libhdf5 refuses such a write, as it counts them
            # twice. A write that reaches none of them goes.)
            twice = mod.VirtualLayout((6,), "i4")
            twice[0:4] = mod.VirtualSource(b)[0:4]
            twice[2:6] = mod.VirtualSource(b)[6:10]
            t = f.create_virtual_dataset("twice", twice, fillvalue=0)
            before = f["b"][()]
            with pytest.raises(OSError):
                t[...] = np.arange(6, dtype="i4")
            with pytest.raises(OSError):
                t[[1, 3]] = np.array([5, 5], "i4")
            np.testing.assert_array_equal(f["b"][()], before)
            t[0:2] = np.array([-5, -6], "i4")
            assert f["b"][:2].tolist() == [-5, -6]
            f["b"][:2] = before[:2]
    for x, y in zip(got[h5py], got[h5lake]):
        np.testing.assert_array_equal(y, x)


def test_points_are_written_through_a_virtual_dataset_to_its_sources(tmp_path):
    """A point selection (a boolean mask) written through a virtual
    dataset reaches each point's source element, converted to the
    source's type; one point that no mapping covers refuses the whole
    write. (libhdf5 2.0 itself mixes up the values of such a write: the
    test checks numpy's order, C order of the points.)"""
    with h5lake.File(tmp_path / "p.h5l", "w") as f:
        f["a"] = np.arange(6, dtype="i4")
        f["b"] = np.arange(6, dtype="f8") + 100
        lay = h5lake.VirtualLayout((2, 6), "i4")
        lay[0] = h5lake.VirtualSource(f["a"])
        lay[1, ::2] = h5lake.VirtualSource(f["b"])[:3]
        v = f.create_virtual_dataset("v", lay, fillvalue=-1)
        mask = np.zeros((2, 6), bool)
        mask[0, 1] = mask[0, 5] = mask[1, 2] = True
        v[mask] = np.array([11, 22, 33])
        assert f["a"][()].tolist() == [0, 11, 2, 3, 4, 22]
        assert f["b"][()].tolist() == [100, 33, 102, 103, 104, 105]
        bad = mask.copy()
        bad[1, 1] = True                       # not mapped
        with pytest.raises(OSError, match="no mapping covers"):
            v[bad] = np.array([1, 2, 3, 4])
        assert f["a"][()].tolist() == [0, 11, 2, 3, 4, 22]
        assert v[()].tolist() == [[0, 11, 2, 3, 4, 22], [100, -1, 33, -1, 102, -1]]


def test_an_unlimited_mapping_keeps_its_start_in_a_layout_that_grows(tmp_path):
    """From an audit: layout[2:UNLIMITED] over a layout of extent 0 was
    stored from 0 (the start clamped to the extent), so values read two
    rows early; interleaved frames (k::3) all landed on rows 0, 3, 6..."""
    src = str(tmp_path / "g0.h5")
    with h5py.File(src, "w") as f:
        f.create_dataset("d", data=np.arange(10, dtype="i4"), maxshape=(None,), chunks=(4,))
        f.create_dataset("m", data=np.arange(12, dtype="f4").reshape(3, 4), maxshape=(None, 4),
                         chunks=(2, 4))
    U = h5lake.UNLIMITED
    with h5lake.File(str(tmp_path / "st.h5l"), "w") as f:
        layout = h5lake.VirtualLayout(shape=(0,), dtype="i4", maxshape=(None,))
        layout[2:U] = h5lake.VirtualSource(src, "d", shape=(10,), maxshape=(None,))[0:U]
        f.create_virtual_dataset("off", layout, fillvalue=-1)
        layout = h5lake.VirtualLayout(shape=(0, 4), dtype="f4", maxshape=(None, 4))
        layout[1:U:3, :] = h5lake.VirtualSource(src, "m", shape=(3, 4), maxshape=(None, 4))[0:U, :]
        f.create_virtual_dataset("inter", layout, fillvalue=-1)
    with h5lake.File(str(tmp_path / "st.h5l"), "r") as f:
        assert f["off"][()].tolist() == [-1, -1] + list(range(10))
        assert f["inter"][:, 0].tolist() == [-1, 0, -1, -1, 4, -1, -1, 8]


def test_a_copied_virtual_dataset_stays_virtual_as_in_h5py(tmp_path):
    """From an audit: Group.copy made a virtual dataset a plain one holding
    the values of the moment, so the copy went stale when its sources
    changed. H5Ocopy keeps the mappings (a source in "this file" is then
    the copy's file)."""
    got = {}
    for mod, ext in ((h5py, "h5"), (h5lake, "h5l")):
        with mod.File(str(tmp_path / f"v.{ext}"), "w") as f, \
                mod.File(str(tmp_path / f"other.{ext}"), "w") as o:
            f["a"] = np.arange(5.0)
            o["a"] = np.arange(5.0) + 50
            lay = mod.VirtualLayout((2, 5), "f8")
            lay[0] = mod.VirtualSource(f["a"])
            lay[1, 1:4] = mod.VirtualSource(f["a"])[::2]
            f.create_virtual_dataset("v", lay, fillvalue=-1)
            f.copy("v", "w")
            f.copy(f["v"], o, "w")
            f["a"][...] = 100.0
            got[mod] = [(d.is_virtual, d[()]) for d in (f["w"], o["w"])]
    for (va, a), (vb, b) in zip(got[h5py], got[h5lake]):
        assert va and vb
        np.testing.assert_array_equal(b, a)
