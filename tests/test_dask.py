"""dask over h5lake (issue 22): dask.array.from_array and dset.to_dask on a
dask.distributed cluster of worker processes, local and S3 stores; writes
from many workers into one dataset with h5lake.store_dask."""

import numpy as np
import pytest

import h5lake

da = pytest.importorskip("dask.array")
distributed = pytest.importorskip("distributed")


@pytest.fixture(scope="module")
def client():
    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                       host="127.0.0.1", dashboard_address=None)
    c = distributed.Client(cluster)
    try:
        yield c
    finally:
        c.close()
        cluster.close()


def _data(shape=(600, 70), seed=0):
    return np.random.default_rng(seed).integers(-1000, 1000, shape).astype("i8")


@pytest.mark.parametrize("where", ["local", "s3"])
def test_sums_on_a_cluster_of_processes_equal_numpy(client, tmp_path, request, where):
    loc = str(tmp_path / "d.h5l") if where == "local" else request.getfixturevalue("s3_root") + "/d.h5l"
    a = _data()
    with h5lake.File(loc, "w") as f:
        f.create_dataset("x", data=a, chunks=(64, 32))
    if where == "s3":
        # The workers were started before the test S3 server: give them its settings.
        import os
        env = {k: v for k, v in os.environ.items() if k.startswith("AWS_")}
        client.run(lambda e: os.environ.update(e), env)
    with h5lake.File(loc, "r") as f:
        d = f["x"]
        x = da.from_array(d, chunks=d.chunks)
        assert x.sum().compute() == a.sum()
        y = d.to_dask()
        assert y.chunks[1] == (70,) or y.chunksize[1] % 32 == 0
        np.testing.assert_array_equal(y[100:500:7, 3:60].compute(), a[100:500:7, 3:60])
        assert (y.mean(axis=0).compute() == a.mean(axis=0)).all()
    # A handle of a writable file reads through to_dask too (sent read-only).
    with h5lake.File(loc, "r+") as f:
        assert f["x"].to_dask(chunks=(100, 70)).max().compute() == a.max()


def test_writes_from_many_workers_lose_nothing(client, tmp_path):
    loc = str(tmp_path / "w.h5l")
    a = _data((1000, 90), seed=1)
    with h5lake.File(loc, "w") as f:
        d = f.create_dataset("y", shape=a.shape, dtype=a.dtype, chunks=(64, 64), fillvalue=-1)
        # Blocks that cut storage chunks in pieces: several workers write
        # parts of the same chunks at once.
        src = da.from_array(a, chunks=(45, 50))
        h5lake.store_dask(src, d)
    with h5lake.File(loc, "r") as f:
        np.testing.assert_array_equal(f["y"][...], a)
    with h5lake.File(loc, "r") as f:
        with pytest.raises(ValueError):
            h5lake.store_dask(src, f["y"])
    with h5lake.File(loc, "a") as f:
        with pytest.raises(ValueError, match="shape"):
            h5lake.store_dask(da.zeros((3, 3), chunks=2), f["y"])


def test_the_same_dataset_in_other_blocks_is_another_dask_array(tmp_path):
    """Two block sizes of one dataset in one graph: their keys differ."""
    with h5lake.File(tmp_path / "c.h5l", "w") as f:
        f.create_dataset("x", data=np.arange(6000.0).reshape(200, 30), chunks=(50, 30))
    with h5lake.File(tmp_path / "c.h5l", "r") as f:
        x = f["x"]
        a, b = x.to_dask(chunks=(10, 30)), x.to_dask(chunks=(100, 30))
        assert a.name != b.name
        np.testing.assert_array_equal((a - b).compute(scheduler="sync"), np.zeros((200, 30)))


@pytest.mark.parametrize("how", ["to_dask", "from_array"])
def test_a_dask_array_made_after_the_values_changed_has_them(tmp_path, how):
    """dask reuses what it computed for a name it has seen: an array made
    after a write must not share a name with one made before it."""
    p = tmp_path / "c.h5l"
    with h5lake.File(p, "w") as f:
        f.create_dataset("a", data=np.zeros((100, 100)), chunks=(50, 50))

    def array(d):
        return d.to_dask() if how == "to_dask" else da.from_array(d, chunks=(50, 50))

    with h5lake.File(p, "r") as f:
        old = array(f["a"]).persist(scheduler="sync")
    with h5lake.File(p, "r+") as f:
        f["a"][...] = 1.0
    with h5lake.File(p, "r") as f:
        new = array(f["a"])
        assert new.name != old.name
        assert float((new - old).sum().compute(scheduler="sync")) == 10000.0


def test_variable_length_values_read_into_a_dask_array_of_objects(tmp_path):
    """From an audit: to_dask() refused variable-length datasets, which
    dask.array.from_array reads (as object arrays, as from h5py)."""
    path = str(tmp_path / "v.h5l")
    with h5lake.File(path, "w") as f:
        f.create_dataset("s", data=np.array(["a", "bb", "ccc"] * 50, dtype=object),
                         dtype=h5lake.string_dtype(), chunks=(16,))
        v = f.create_dataset("v", shape=(5,), dtype=h5lake.vlen_dtype("i4"))
        v[0], v[3] = np.arange(3), np.arange(2)
    with h5lake.File(path, "r") as f:
        s = f["s"].to_dask(chunks=(40,)).compute()
        assert s.dtype == object and s.tolist() == f["s"][()].tolist()
        v = f["v"].to_dask().compute()
        assert [x.tolist() for x in v] == [[0, 1, 2], [], [], [0, 1], []]


def test_an_empty_dataset_is_an_empty_dask_array(tmp_path):
    """From a review: to_dask() of a dataset of extent 0 raised
    ZeroDivisionError."""
    path = str(tmp_path / "e.h5l")
    with h5lake.File(path, "w") as f:
        f.create_dataset("e", shape=(0, 3), dtype="f4")
        f.create_dataset("c", shape=(0,), maxshape=(None,), dtype="i8", chunks=(4,))
    with h5lake.File(path, "r") as f:
        assert f["e"].to_dask().compute().shape == (0, 3)
        assert f["c"].to_dask().compute().shape == (0,)
