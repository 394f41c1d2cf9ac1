"""xarray backend (``engine="h5lake"``) and ``h5lake.to_h5lake``.

The reference is xarray itself: netCDF-4 files written by xarray (engines
netcdf4 and h5netcdf), read back by xarray (both engines), must open
identically (``xarray.testing.assert_identical``) from an h5lake store the
file was loaded into (copied or linked, through the API and the CLI) or
copied to; datasets written with ``to_h5lake`` must read back identically,
also after ``h5lake get`` exports them to a .nc file that netCDF-C
(netCDF4-python) and h5netcdf read.
"""

import os
import shutil
import subprocess
import sys
import warnings

import numpy as np
import pytest

import h5lake

xr = pytest.importorskip("xarray")
pd = pytest.importorskip("pandas")
netCDF4 = pytest.importorskip("netCDF4")
pytest.importorskip("h5netcdf")
h5py = pytest.importorskip("h5py")
cftime = pytest.importorskip("cftime")

from h5lake._hl import dataset as h5lake_dataset  # noqa: E402
from h5lake._hl.xarray_backend import (  # noqa: E402
    H5LakeArrayWrapper,
    H5LakeBackendEntrypoint,
)

# The entry point is registered when the package is installed; before a
# reinstall, xarray takes the class itself.
ENGINE = "h5lake" if "h5lake" in xr.backends.list_engines() else H5LakeBackendEntrypoint
NC_ENGINES = ("netcdf4", "h5netcdf")


# ---------------------------------------------------------------------------
# datasets written by xarray
# ---------------------------------------------------------------------------

def root_dataset():
    """Several dimensions (one unlimited, one without a coordinate
    variable), dimension and non-dimension coordinates, CF encodings
    (packed integers with scale_factor/add_offset/_FillValue and a NaN,
    times with units/calendar, timedeltas, booleans), fixed-length
    (character-array) and variable-length strings, a scalar, attributes of
    every netCDF kind."""
    rng = np.random.default_rng(0)
    temp = (250 + 50 * rng.random((5, 3, 4))).astype("f4")
    temp[0, 0, 0] = np.nan
    ds = xr.Dataset(
        {
            "temp": (("time", "y", "x"), temp, {"units": "K", "long_name": "température"}),
            "counts": (("y", "x"), np.arange(12, dtype="i4").reshape(3, 4),
                       {"flag_values": np.array([0, 1], "i4")}),
            "vname": (("y",), np.array(["a", "ßb", ""], dtype=object)),
            "uname": (("x",), np.array(["ab", "c", "déf", "g"])),
            "fixed": (("x",), np.array([b"ab", b"c", b"", b"xyz"])),
            "flag": (("x",), np.array([True, False, True, True])),
            "dur": (("time",), pd.to_timedelta(np.arange(5), "h")),
            "scalar": ((), 3.5, {"comment": "a scalar"}),
            "sscalar": ((), "a scalar string"),
            "nodim": (("z",), np.arange(6.0)),
            "big": (("y", "x"), np.arange(12, dtype="u8").reshape(3, 4)),
        },
        coords={
            "time": pd.date_range("2000-01-01", periods=5, freq="6h"),
            "y": ("y", [10.0, 20.0, 30.0], {"axis": "Y"}),
            "x": ("x", np.array([b"a", b"bb", b"c", b"dd"])),   # a 2-D char coordinate
            "lat": (("y", "x"), rng.random((3, 4)), {"standard_name": "latitude"}),
            "station": ("y", np.array(["s1", "s2", "s3"], dtype=object)),
        },
        attrs={"title": "test", "n": np.int32(3), "vals": [1.5, 2.5], "names": ["a", "b"],
               "empty": "", "unicode": "µ"},
    )
    ds["temp"].encoding.update(dtype="i2", scale_factor=0.01, add_offset=273.15,
                               _FillValue=-32768, zlib=True, complevel=4, chunksizes=(1, 3, 4))
    ds["fixed"].encoding.update(dtype="S1")
    ds["uname"].encoding.update(dtype="S1", _Encoding="utf-8")
    ds["counts"].encoding.update(_FillValue=-1)
    return ds


def child_dataset():
    """A group: its own dimension and coordinate, one dimension (x) of the
    root group, a cftime calendar."""
    rng = np.random.default_rng(1)
    return xr.Dataset(
        {"v": (("t2", "x"), rng.random((2, 4))),
         "nt": (("t2",), cftime.num2date([0, 31], "days since 2000-01-01", calendar="noleap"))},
        coords={"t2": [1, 2]}, attrs={"where": "child"})


def write_nc(path, engine):
    root_dataset().to_netcdf(path, engine=engine, unlimited_dims=["time"])
    child_dataset().to_netcdf(path, engine=engine, mode="a", group="g/sub")
    return path


@pytest.fixture(scope="module", params=NC_ENGINES)
def nc_file(request, tmp_path_factory):
    """The netCDF-4 file, written by xarray with each of its engines."""
    return write_nc(tmp_path_factory.mktemp("nc") / f"by_{request.param}.nc", request.param)


def open_nc(path, engine, group=None, **kw):
    return xr.open_dataset(path, engine=engine, group=group, **kw)


def assert_same_as_xarray(nc, store, group=None):
    """The store opened with engine="h5lake" is what xarray reads from the
    .nc file, with either of its engines."""
    got = xr.open_dataset(store, engine=ENGINE, group=group)
    for engine in NC_ENGINES:
        with open_nc(nc, engine, group) as ref:
            xr.testing.assert_identical(ref, got)
            if engine == "h5netcdf":
                # encodings too (storage, filters, CF, dtype) but the source
                # path; assert_equal takes NaN fill values as equal
                np.testing.assert_equal(without_source(got.encoding), without_source(ref.encoding))
                for name, var in ref.variables.items():
                    np.testing.assert_equal(without_source(got[name].encoding),
                                            without_source(var.encoding), err_msg=name)
                assert_same_attrs(ref, got)
    return got


def assert_same_attrs(ref, got):
    """Attributes equal in value *and* type (assert_identical takes
    ``array([3])`` for ``3`` and ``b"a"`` for ``"a"``)."""
    for name, var in [(None, ref)] + list(ref.variables.items()):
        other = got if name is None else got[name]
        assert list(var.attrs) == list(other.attrs), name    # in creation order
        for key, value in var.attrs.items():
            assert type(other.attrs[key]) is type(value), (name, key, other.attrs[key], value)
            np.testing.assert_equal(other.attrs[key], value, err_msg=f"{name}: {key}")


def without_source(encoding):
    return {k: v for k, v in encoding.items() if k != "source"}


# ---------------------------------------------------------------------------
# reading: loaded, linked, copied
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("link", [False, True], ids=["copy", "link"])
@pytest.mark.parametrize("group", [None, "g/sub", "/g/sub"])
def test_loaded_file_opens_as_xarray_reads_it(nc_file, tmp_path, link, group):
    store = tmp_path / "s.h5l"
    h5lake.load(str(nc_file), str(store), link=link)
    got = assert_same_as_xarray(nc_file, store, group)
    if group is None:
        assert got.encoding["unlimited_dims"] == {"time"}
        assert got.temp.encoding["zlib"] and got.temp.encoding["complevel"] == 4
        assert got.temp.encoding["chunksizes"] == (1, 3, 4)
        assert got.temp.encoding["dtype"] == np.dtype("i2")
    got.close()


@pytest.mark.parametrize("group", [None, "g/sub"])
def test_netcdf_file_opens_in_place(nc_file, group):
    """engine="h5lake" on the netCDF-4 file itself (no load): read in place."""
    assert_same_as_xarray(nc_file, nc_file, group).close()


def test_cli_load(nc_file, tmp_path):
    store = tmp_path / "cli.h5l"
    done = subprocess.run([sys.executable, "-m", "h5lake", "load", "-q", str(nc_file), str(store)],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert_same_as_xarray(nc_file, store)
    assert_same_as_xarray(nc_file, store, "g/sub")


def test_cp_store_and_group(nc_file, tmp_path):
    store = tmp_path / "s.h5l"
    h5lake.load(str(nc_file), str(store))
    # the whole store
    h5lake.cp(str(store), str(tmp_path / "copy.h5l"))
    assert_same_as_xarray(nc_file, tmp_path / "copy.h5l")
    assert_same_as_xarray(nc_file, tmp_path / "copy.h5l", "g/sub")
    # a group, within the store: its variables keep their dimension scales
    # (HDF5 copies object references as they are)
    h5lake.cp(f"{store}/g", f"{store}/gcopy")
    with open_nc(nc_file, "netcdf4", "g/sub") as ref:
        xr.testing.assert_identical(ref, xr.open_dataset(store, engine=ENGINE, group="gcopy/sub"))


def test_group_copied_to_another_store_says_why_it_cannot_open(nc_file, tmp_path):
    # Copied to another store, the group's DIMENSION_LIST references still
    # name the first store's scales (as HDF5 does with H5Ocopy across files).
    store = tmp_path / "s.h5l"
    h5lake.load(str(nc_file), str(store))
    with h5lake.File(tmp_path / "other.h5l", "w"):
        pass
    h5lake.cp(f"{store}/g", f"{tmp_path / 'other.h5l'}/g")
    with pytest.raises(ValueError, match="not in this store"):
        xr.open_dataset(tmp_path / "other.h5l", engine=ENGINE, group="g/sub")


def test_loaded_variables_keep_file_order(tmp_path):
    nc = write_nc(tmp_path / "o.nc", "netcdf4")
    h5lake.load(str(nc), str(tmp_path / "o.h5l"))
    with open_nc(nc, "netcdf4") as ref:
        got = xr.open_dataset(tmp_path / "o.h5l", engine=ENGINE)
        assert list(got.variables) == list(ref.variables)


def test_datatree(nc_file, tmp_path):
    store = tmp_path / "s.h5l"
    h5lake.load(str(nc_file), str(store))
    for engine in NC_ENGINES:
        ref = xr.open_datatree(nc_file, engine=engine)
        xr.testing.assert_identical(ref, xr.open_datatree(store, engine=ENGINE))
    sub = xr.open_datatree(store, engine=ENGINE, group="g")
    assert set(sub.groups) == {"/", "/sub"}
    xr.testing.assert_identical(sub["sub"].to_dataset(),
                                open_nc(nc_file, "netcdf4", "g/sub"))


def test_s3(nc_file, s3_root):
    url = f"{s3_root}/nc.h5"
    h5lake.load(str(nc_file), url)
    assert_same_as_xarray(nc_file, url)
    assert_same_as_xarray(nc_file, url, "g/sub")
    ds = child_dataset()
    h5lake.to_h5lake(ds, f"{s3_root}/w.h5")
    xr.testing.assert_identical(ds, xr.open_dataset(f"{s3_root}/w.h5", engine=ENGINE))


# ---------------------------------------------------------------------------
# laziness, selections, dask
# ---------------------------------------------------------------------------

@pytest.fixture
def count_reads(monkeypatch):
    """Names of the datasets whose values are read (every value read, the
    string view's included, goes through Dataset.__getitem__)."""
    reads = []
    original = h5lake_dataset.Dataset.__getitem__

    def counting(self, *args, **kwargs):
        reads.append(self.name)
        return original(self, *args, **kwargs)
    monkeypatch.setattr(h5lake_dataset.Dataset, "__getitem__", counting)
    return reads


def test_opening_reads_no_values(tmp_path, count_reads):
    ds = xr.Dataset({"a": (("t", "x"), np.arange(12.0).reshape(3, 4)),
                     "b": (("x",), np.arange(4, dtype="i8"))},
                    coords={"t": [1, 2, 3], "x": [0.5, 1.5, 2.5, 3.5],
                            "aux": (("t",), [7.0, 8.0, 9.0])})
    ds.to_netcdf(tmp_path / "l.nc")
    h5lake.load(str(tmp_path / "l.nc"), str(tmp_path / "l.h5l"))
    count_reads.clear()
    lazy = xr.open_dataset(tmp_path / "l.h5l", engine=ENGINE, create_default_indexes=False)
    assert count_reads == []
    # the values stay in the store until asked for
    wrapper = lazy.a.variable._data
    while not isinstance(wrapper, H5LakeArrayWrapper):
        wrapper = wrapper.array
    assert wrapper.path == "/a"
    assert float(lazy.a[2, 1]) == 9.0
    assert count_reads == ["/a"]
    # xarray's default indexes read the dimension coordinates, nothing else
    count_reads.clear()
    xr.open_dataset(tmp_path / "l.h5l", engine=ENGINE)
    assert sorted(count_reads) == ["/t", "/x"]


def test_lazy_variables_in_the_rich_file(nc_file, tmp_path, count_reads):
    store = tmp_path / "s.h5l"
    h5lake.load(str(nc_file), str(store))
    count_reads.clear()
    ds = xr.open_dataset(store, engine=ENGINE)
    # xarray itself samples times (first/last values), object variables
    # (for cftime) and loads variable-length strings while decoding, for
    # every backend; numeric data variables are left alone.
    assert not {"/temp", "/counts", "/big", "/nodim", "/lat", "/fixed"} & set(count_reads)
    count_reads.clear()
    ds.temp.isel(time=1).values
    assert count_reads == ["/temp"]


@pytest.mark.parametrize("sel", [
    dict(time=[4, 0, 2], x=slice(None, None, 2)),
    dict(time=1, y=[2, 0], x=[3, 1, 1]),
    dict(time=slice(-2, None), y=slice(None, None, -1)),
    dict(x=xr.DataArray([0, 3], dims="p"), y=xr.DataArray([2, 1], dims="p")),
])
def test_selections(nc_file, tmp_path, sel):
    store = tmp_path / "s.h5l"
    h5lake.load(str(nc_file), str(store))
    with open_nc(nc_file, "h5netcdf") as ref:
        xr.testing.assert_identical(ref.isel(sel).load(),
                                    xr.open_dataset(store, engine=ENGINE).isel(sel).load())


def test_chunks_give_dask_arrays(nc_file, tmp_path):
    import dask.array as da
    store = tmp_path / "s.h5l"
    h5lake.load(str(nc_file), str(store))
    ds = xr.open_dataset(store, engine=ENGINE, chunks={})
    assert isinstance(ds.temp.data, da.Array)
    # chunks={} follows the storage chunks
    assert ds.temp.chunks == ((1,) * 5, (3,), (4,))
    assert isinstance(ds.counts.data, da.Array)
    with open_nc(nc_file, "netcdf4") as ref:
        xr.testing.assert_identical(ref, ds.compute())
        xr.testing.assert_identical(
            ref.temp.mean("time"),
            xr.open_dataset(store, engine=ENGINE, chunks={"time": 5}).temp.mean("time").compute())


def test_distributed_read_and_write(nc_file, tmp_path):
    # Workers are other processes: the lazy arrays travel pickled and open
    # the store themselves, for reading and for to_h5lake's writes.
    distributed = pytest.importorskip("distributed")
    store = tmp_path / "s.h5l"
    h5lake.load(str(nc_file), str(store))
    ref = open_nc(nc_file, "netcdf4").load()
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=":0") as cluster, \
            distributed.Client(cluster):
        ds = xr.open_dataset(store, engine=ENGINE, chunks={})
        xr.testing.assert_allclose(ref.temp.mean("time"), ds.temp.mean("time").compute())
        with warnings.catch_warnings():
            # object variables of a dask dataset are computed to pick a
            # type, and xarray says so
            warnings.simplefilter("ignore", category=xr.SerializationWarning)
            h5lake.to_h5lake(ds, tmp_path / "out.h5l")
    xr.testing.assert_identical(ref, xr.open_dataset(tmp_path / "out.h5l", engine=ENGINE))


# ---------------------------------------------------------------------------
# netCDF-4 encodings that xarray's writer does not make
# ---------------------------------------------------------------------------

def test_variables_shorter_than_their_unlimited_dimension(tmp_path):
    nc = tmp_path / "short.nc"
    with netCDF4.Dataset(nc, "w") as d:
        d.createDimension("t", None)
        d.createDimension("n", 2)
        d.createVariable("a", "f8", ("t", "n"))[:] = np.arange(10.0).reshape(5, 2)
        b = d.createVariable("b", "i4", ("t",), fill_value=-1)
        b[0:3] = [1, 2, 3]
        c = d.createVariable("c", "f4", ("n", "t"))
        c[:, 0:2] = [[1, 2], [3, 4]]
    h5lake.load(str(nc), str(tmp_path / "short.h5l"))
    got = xr.open_dataset(tmp_path / "short.h5l", engine=ENGINE)
    # the rest of a short variable reads as its fill value
    np.testing.assert_array_equal(got.b.values, [1, 2, 3, np.nan, np.nan])
    fill = netCDF4.default_fillvals["f4"]
    np.testing.assert_array_equal(got.c.values, [[1, 2, fill, fill, fill], [3, 4, fill, fill, fill]])
    np.testing.assert_array_equal(got.c.isel(t=[1, 3]).values, [[2, fill], [4, fill]])
    assert np.isnan(got.b[4].values)
    with open_nc(nc, "h5netcdf") as ref:
        xr.testing.assert_identical(ref, got)
    # netCDF-C 4.10 reads the short *trailing* axis of c wrongly (values
    # shifted into the wrong row), so only a and b are compared with it
    with open_nc(nc, "netcdf4") as ref:
        xr.testing.assert_identical(ref[["a", "b"]], got[["a", "b"]])


@pytest.mark.parametrize("mode", ["access", "sort"])
@pytest.mark.parametrize("group", [None, "g"])
def test_phony_dims_of_plain_hdf5(tmp_path, mode, group):
    # axes without dimension scales: named as xarray's h5netcdf engine does
    path = tmp_path / "plain.h5"
    with h5py.File(path, "w") as f:
        f["a"] = np.zeros((3, 4))
        f["b"] = np.ones((4, 4))
        f["c"] = np.zeros(3)
        g = f.create_group("g")
        g["d"] = np.zeros((5, 3))
        g.attrs["x"] = 1
        f["s"] = np.arange(3.0)
        f["s"].make_scale("s")
        f["e"] = np.zeros(3)
        f["e"].dims[0].attach_scale(f["s"])
    h5lake.load(str(path), str(tmp_path / "plain.h5l"))
    ref = xr.open_dataset(path, engine="h5netcdf", phony_dims=mode, group=group)
    got = xr.open_dataset(tmp_path / "plain.h5l", engine=ENGINE, phony_dims=mode, group=group)
    xr.testing.assert_identical(ref, got)


def test_attribute_kinds_as_h5netcdf_reads_them(tmp_path):
    # attributes of every HDF5 kind netCDF readers meet: fixed and
    # variable-length strings (arrays of them, one-element arrays), "S1"
    # character arrays, numbers and one-element arrays of them, empty
    # (null dataspace) attributes, bytes that are not UTF-8
    path = tmp_path / "attrs.h5"
    with h5py.File(path, "w") as f:
        f.attrs["root_fixed"] = np.bytes_(b"r")
        a = f.create_dataset("v", data=np.arange(3.0)).attrs
        a["fixed"] = np.bytes_(b"hello")
        a["fixed_arr"] = np.array([b"ab", b"cde"])
        a["s1_arr"] = np.array([b"a", b"b"], dtype="S1")
        a["vlen"] = "vé"
        a["vlen_arr"] = np.array(["x", "yz"], dtype=h5py.string_dtype())
        a["one_str"] = np.array(["only"], dtype=h5py.string_dtype())
        a["one"] = np.array([7], "i2")
        a["arr"] = np.array([1.5, 2.5])
        a["scalar"] = np.float32(2.5)
        a["empty_f"] = h5py.Empty("f8")
        a["empty_s"] = h5py.Empty(h5py.string_dtype("ascii", 1))
        a["not_utf8"] = np.bytes_(b"\xff\xfe")
    h5lake.load(str(path), str(tmp_path / "attrs.h5l"))
    ref = xr.open_dataset(path, engine="h5netcdf", phony_dims="sort")
    got = xr.open_dataset(tmp_path / "attrs.h5l", engine=ENGINE, phony_dims="sort")
    xr.testing.assert_identical(ref, got)
    assert_same_attrs(ref, got)
    assert got.v.attrs["one"] == 7 and got.v.attrs["fixed_arr"] == ["ab", "cde"]


def test_bad_phony_dims():
    with pytest.raises(ValueError, match="phony_dims"):
        H5LakeBackendEntrypoint().open_dataset("nowhere.h5l", phony_dims="bogus")


@pytest.mark.parametrize("engine", NC_ENGINES)
def test_variable_named_like_a_dimension(tmp_path, engine):
    # netCDF-4 stores it as _nc4_non_coord_x; it reads back as "x"
    ds = xr.Dataset({"x": (("y",), [1.0, 2.0]), "v": (("x",), [1, 2, 3])})
    ds.to_netcdf(tmp_path / "n.nc", engine=engine)
    h5lake.load(str(tmp_path / "n.nc"), str(tmp_path / "n.h5l"))
    assert_same_as_xarray(tmp_path / "n.nc", tmp_path / "n.h5l")
    h5lake.to_h5lake(ds, tmp_path / "w.h5l")
    with h5lake.File(tmp_path / "w.h5l") as f:
        assert "_nc4_non_coord_x" in f and f["x"].attrs["NAME"].startswith(
            b"This is a netCDF dimension but not a netCDF variable.")
    xr.testing.assert_identical(ds, xr.open_dataset(tmp_path / "w.h5l", engine=ENGINE))
    h5lake.get(str(tmp_path / "w.h5l"), str(tmp_path / "w.nc"))
    for reader in NC_ENGINES:
        xr.testing.assert_identical(ds, open_nc(tmp_path / "w.nc", reader))


def test_empty_unlimited_dimension(tmp_path):
    ds = xr.Dataset({"v": (("t", "n"), np.zeros((0, 3)))}, coords={"t": np.zeros(0, "i4")})
    ds.to_netcdf(tmp_path / "e.nc", unlimited_dims=["t"])
    h5lake.load(str(tmp_path / "e.nc"), str(tmp_path / "e.h5l"))
    assert_same_as_xarray(tmp_path / "e.nc", tmp_path / "e.h5l")
    h5lake.to_h5lake(ds, tmp_path / "w.h5l", unlimited_dims=["t"])
    got = xr.open_dataset(tmp_path / "w.h5l", engine=ENGINE)
    xr.testing.assert_identical(ds, got)
    assert got.encoding["unlimited_dims"] == {"t"}


# ---------------------------------------------------------------------------
# writing: to_h5lake
# ---------------------------------------------------------------------------

def write_h5lake(path):
    h5lake.to_h5lake(root_dataset(), path, unlimited_dims=["time"])
    h5lake.to_h5lake(child_dataset(), path, mode="a", group="g/sub")


@pytest.mark.parametrize("group", [None, "g/sub"])
def test_to_h5lake_reads_back_as_to_netcdf(tmp_path, group):
    ref_nc = write_nc(tmp_path / "ref.nc", "netcdf4")
    store = tmp_path / "w.h5l"
    write_h5lake(store)
    # back through engine="h5lake", and exported to netCDF-4 for netCDF-C
    # and h5netcdf: what xarray reads from to_netcdf's file
    h5lake.get(str(store), str(tmp_path / "w.nc"))
    with open_nc(ref_nc, "netcdf4", group) as ref:
        xr.testing.assert_identical(ref, xr.open_dataset(store, engine=ENGINE, group=group))
        for engine in NC_ENGINES:
            with open_nc(tmp_path / "w.nc", engine, group) as got:
                xr.testing.assert_identical(ref, got)
    # ... and as netCDF-C sees it: dimensions, the unlimited one, variable
    # order, types and encodings
    with netCDF4.Dataset(tmp_path / "w.nc") as out, netCDF4.Dataset(ref_nc) as ref:
        assert out.data_model == "NETCDF4"
        for a, b in [(out, ref), (out["g/sub"], ref["g/sub"])]:
            assert {k: (len(d), d.isunlimited()) for k, d in a.dimensions.items()} == \
                   {k: (len(d), d.isunlimited()) for k, d in b.dimensions.items()}
            assert list(a.variables) == list(b.variables)
            for name, v in a.variables.items():
                w = b.variables[name]
                assert (v.dimensions, v.dtype) == (w.dimensions, w.dtype), name
                assert v.ncattrs() == w.ncattrs(), name
        assert out["temp"].filters()["zlib"] and out["temp"].filters()["complevel"] == 4
        assert out["temp"].chunking() == [1, 3, 4]


def test_to_h5lake_of_an_opened_file(nc_file, tmp_path):
    # a dataset read from a file carries its encodings; they are kept
    ref = open_nc(nc_file, "netcdf4").load()
    h5lake.to_h5lake(ref, tmp_path / "w.h5l")
    got = xr.open_dataset(tmp_path / "w.h5l", engine=ENGINE)
    xr.testing.assert_identical(ref, got)
    assert got.encoding["unlimited_dims"] == {"time"}
    assert got.temp.encoding["chunksizes"] == (1, 3, 4)
    assert got.temp.encoding["zlib"] and got.temp.encoding["complevel"] == 4
    h5lake.get(str(tmp_path / "w.h5l"), str(tmp_path / "w.nc"))
    xr.testing.assert_identical(ref, open_nc(tmp_path / "w.nc", "netcdf4"))


def test_to_h5lake_datatree(nc_file, tmp_path):
    tree = xr.open_datatree(nc_file, engine="netcdf4").load()
    h5lake.to_h5lake(tree, tmp_path / "t.h5l")
    xr.testing.assert_identical(tree, xr.open_datatree(tmp_path / "t.h5l", engine=ENGINE))
    h5lake.get(str(tmp_path / "t.h5l"), str(tmp_path / "t.nc"))
    xr.testing.assert_identical(tree, xr.open_datatree(tmp_path / "t.nc", engine="netcdf4"))


def test_to_h5lake_dask_dataset(nc_file, tmp_path):
    h5lake.load(str(nc_file), str(tmp_path / "s.h5l"))
    lazy = xr.open_dataset(tmp_path / "s.h5l", engine=ENGINE, chunks={})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", category=xr.SerializationWarning)
        h5lake.to_h5lake(lazy, tmp_path / "w.h5l")
    with open_nc(nc_file, "netcdf4") as ref:
        xr.testing.assert_identical(ref, xr.open_dataset(tmp_path / "w.h5l", engine=ENGINE))


def test_coordinate_added_to_an_existing_dimension(tmp_path):
    # mode="a": the dimension's NOT_A_VARIABLE scale gives way to the
    # coordinate variable, and the variables using it follow
    store = tmp_path / "a.h5l"
    first = xr.Dataset({"v": (("x",), [1.0, 2.0, 3.0])})
    coord = xr.Dataset(coords={"x": [10, 20, 30]})
    h5lake.to_h5lake(first, store)
    h5lake.to_h5lake(coord, store, mode="a")
    got = xr.open_dataset(store, engine=ENGINE)
    xr.testing.assert_identical(xr.merge([first, coord]), got)
    h5lake.get(str(store), str(tmp_path / "a.nc"))
    xr.testing.assert_identical(got, open_nc(tmp_path / "a.nc", "netcdf4"))
    with h5lake.File(store) as f:
        assert f["v"].dims[0][0].name == "/x"


def test_to_h5lake_encoding_argument(tmp_path):
    ds = xr.Dataset({"v": (("t",), np.linspace(0, 1, 100))})
    h5lake.to_h5lake(ds, tmp_path / "e.h5l", encoding={
        "v": {"dtype": "i2", "scale_factor": 0.001, "_FillValue": -1, "chunksizes": (10,),
              "zlib": True, "complevel": 6, "shuffle": True}})
    got = xr.open_dataset(tmp_path / "e.h5l", engine=ENGINE)
    xr.testing.assert_allclose(ds, got, atol=0.0006)
    enc = got.v.encoding
    assert (enc["dtype"], enc["chunksizes"], enc["complevel"], enc["shuffle"]) == \
        (np.dtype("i2"), (10,), 6, True)
    with h5lake.File(tmp_path / "e.h5l") as f:
        assert f["v"].dtype == np.dtype("i2") and f["v"].fillvalue == -1


def test_to_h5lake_errors(tmp_path):
    ds = xr.Dataset({"v": (("t",), [1.0, 2.0])})
    # refused before anything is written
    with pytest.raises(ValueError, match="not a variable"):
        h5lake.to_h5lake(ds, tmp_path / "a.h5l", encoding={"w": {}})
    with pytest.raises(TypeError, match="boolean"):
        h5lake.to_h5lake(ds.assign_attrs(flag=True), tmp_path / "a.h5l")
    with pytest.raises(TypeError, match="invalid value for attribute 'd'"):
        h5lake.to_h5lake(ds.assign_attrs(d={"a": 1}), tmp_path / "a.h5l")
    with pytest.raises(ValueError, match="invalid variable name"):
        h5lake.to_h5lake(ds.rename(v="a/b"), tmp_path / "a.h5l")
    assert not (tmp_path / "a.h5l").exists()
    # refused while writing (as to_netcdf does)
    with pytest.raises(ValueError, match="unexpected encoding parameters.*bogus"):
        h5lake.to_h5lake(ds, tmp_path / "a.h5l", encoding={"v": {"bogus": 1}})
    with pytest.raises(ValueError, match="unsupported dtype"):
        h5lake.to_h5lake(xr.Dataset({"c": (("t",), [1j, 2j])}), tmp_path / "a.h5l")
    with pytest.raises((TypeError, ValueError)):
        h5lake.to_h5lake(ds, tmp_path / "a.h5l", encoding={"v": {"scale_factor": "x"}})
    # A store made by a write that failed is removed again: a retry starts clean.
    assert not (tmp_path / "a.h5l").exists()
    h5lake.to_h5lake(ds, tmp_path / "b.h5l")
    with pytest.raises(FileExistsError):
        h5lake.to_h5lake(ds, tmp_path / "b.h5l", mode="w-")
    # (Appending the same variables writes over them, as to_netcdf does;
    # one of another type is refused.)
    with pytest.raises(ValueError, match="of that name exists"):
        h5lake.to_h5lake(ds.astype("S3"), tmp_path / "b.h5l", mode="a")
    with pytest.raises(TypeError, match="Dataset or DataTree"):
        h5lake.to_h5lake(ds.v, tmp_path / "c.h5l")


def test_open_errors(tmp_path):
    ds = xr.Dataset({"v": (("t",), [1.0, 2.0])})
    (tmp_path / "f.txt").write_text("not netCDF\n")
    with pytest.raises(OSError, match="neither an h5lake store .* nor an HDF5 file"):
        xr.open_dataset(tmp_path / "f.txt", engine=ENGINE)
    h5lake.to_h5lake(ds, tmp_path / "s.h5l")
    with pytest.raises(OSError, match="group not found"):
        xr.open_dataset(tmp_path / "s.h5l", engine=ENGINE, group="nope")


def test_guess_can_open(tmp_path):
    entry = H5LakeBackendEntrypoint()
    xr.Dataset({"v": (("t",), [1.0])}).to_netcdf(tmp_path / "f.nc")
    h5lake.to_h5lake(xr.Dataset({"v": (("t",), [1.0])}), tmp_path / "store")
    assert entry.guess_can_open(str(tmp_path / "store"))
    assert entry.guess_can_open(tmp_path / "new.h5l")
    assert not entry.guess_can_open(str(tmp_path / "f.nc"))
    assert not entry.guess_can_open(b"bytes")


def test_append_writes_over_a_variable_of_the_same_shape_as_netcdf_does(tmp_path):
    ds = xr.Dataset({"t": ("x", np.arange(3.0))}, coords={"x": [10, 20, 30]}, attrs={"a": 1})
    again = xr.Dataset({"t": ("x", np.arange(3.0) * 2)}, coords={"x": [10, 20, 30]})
    again["t"].attrs["units"] = "m"
    nc, lake = tmp_path / "a.nc", tmp_path / "a.h5l"
    ds.to_netcdf(nc, engine="netcdf4")
    again.to_netcdf(nc, mode="a", engine="netcdf4")
    h5lake.to_h5lake(ds, lake)
    h5lake.to_h5lake(again, lake, mode="a")
    with xr.open_dataset(nc, engine="netcdf4") as want, \
            xr.open_dataset(lake, engine="h5lake") as got:
        xr.testing.assert_identical(got.load(), want.load())
    # Numbers of another type are converted to the variable's, as netCDF-4
    # converts them; another shape is refused.
    ints = xr.Dataset({"t": ("x", np.arange(3, dtype="i4") + 7)}, coords={"x": [10, 20, 30]})
    ints.to_netcdf(nc, mode="a", engine="netcdf4")
    h5lake.to_h5lake(ints, lake, mode="a")
    with xr.open_dataset(nc, engine="netcdf4") as want, \
            xr.open_dataset(lake, engine="h5lake") as got:
        xr.testing.assert_identical(got.load(), want.load())
    other = xr.Dataset({"t": ("y", np.arange(4.0))})
    with pytest.raises(ValueError, match="of that name"):
        h5lake.to_h5lake(other, lake, mode="a")


_GROUP_WRITER = """
import os, sys, time
import numpy as np, xarray as xr, h5lake
store, k, go = sys.argv[1], int(sys.argv[2]), sys.argv[3]
while not os.path.exists(go):
    time.sleep(0.001)
ds = xr.Dataset({f"v{k}": (("t", f"x{k}"), np.full((4, k + 2), float(k)))},
                coords={f"x{k}": np.arange(k + 2) * 10 + k})
h5lake.to_h5lake(ds, store, mode="a", group=f"g{k}")
"""


def test_writers_of_groups_at_once_number_their_dimensions_apart(tmp_path):
    """netCDF-4 numbers dimensions across the file: processes adding groups
    to one store at once each took "largest id + 1", and netCDF-C then
    gave one group's variables another group's dimension (wrong shapes,
    values cut off, without a word)."""
    store, go = str(tmp_path / "conc.h5l"), str(tmp_path / "go")
    h5lake.to_h5lake(xr.Dataset(coords={"t": [1, 2, 3, 4]}), store)
    writers = [subprocess.Popen([sys.executable, "-c", _GROUP_WRITER, store, str(k), go])
               for k in range(6)]
    open(go, "w").close()
    assert [w.wait(timeout=300) for w in writers] == [0] * 6
    ids = []
    h5lake.get(store, str(tmp_path / "conc.nc"))
    with h5py.File(tmp_path / "conc.nc") as f:
        f.visititems(lambda n, o: ids.append(int(o.attrs["_Netcdf4Dimid"]))
                     if "_Netcdf4Dimid" in o.attrs else None)
    assert sorted(ids) == list(range(7)), ids
    with netCDF4.Dataset(tmp_path / "conc.nc") as nc:
        for k in range(6):
            v = nc[f"g{k}/v{k}"]
            assert (v.dimensions, v.shape) == (("t", f"x{k}"), (4, k + 2))
            assert (v[:] == k).all() and list(nc[f"g{k}/x{k}"][:]) == list(np.arange(k + 2) * 10 + k)
