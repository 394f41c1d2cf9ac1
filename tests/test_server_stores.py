"""``h5lake serve`` of stores made by ``h5lake.File`` and ``h5lake load``
(each its own bucket, with its own ``db/``): the store itself as the root,
or a directory holding stores (issue 19, item 8)."""

import numpy as np
import pytest

import h5lake
from servers import Server

h5pyd = pytest.importorskip("h5pyd")
h5py = pytest.importorskip("h5py")


def hfile(server, domain, mode="r"):
    return h5pyd.File(domain, mode, endpoint=server.endpoint, username="admin", password="admin")


@pytest.fixture(scope="module")
def stores(tmp_path_factory):
    top = tmp_path_factory.mktemp("stores")
    with h5lake.File(top / "sample.h5l", "w") as f:
        f["x"] = np.arange(12).reshape(3, 4)
        f.attrs["title"] = "sample"
        f.create_group("g")["y"] = np.linspace(0, 1, 5)
    src = top / "src.h5"
    with h5py.File(src, "w") as f:
        f.create_dataset("z", data=np.arange(100.0), chunks=(10,), compression="gzip")
    (top / "sub").mkdir()
    h5lake.load(src, top / "sub" / "loaded.h5l")
    src.unlink()
    return top


def check_sample(server, domain):
    with hfile(server, domain) as f:
        np.testing.assert_array_equal(f["x"][...], np.arange(12).reshape(3, 4))
        np.testing.assert_array_equal(f["g/y"][...], np.linspace(0, 1, 5))
        assert f.attrs["title"] == "sample"


def test_a_directory_of_stores(stores):
    s = Server(stores)
    try:
        st, _, rsp = s.request("GET", "/domains")
        assert st == 200
        names = [d["name"] for d in rsp["domains"]]
        assert "/sample.h5l" in names, names
        check_sample(s, "/sample.h5l")
        with hfile(s, "/sub/loaded.h5l") as f:
            np.testing.assert_array_equal(f["z"][...], np.arange(100.0))
        # writes through the server land in the store, where h5lake reads them
        with hfile(s, "/sample.h5l", "a") as f:
            f["w"] = np.arange(3)
        with h5lake.File(stores / "sample.h5l", "r") as f:
            np.testing.assert_array_equal(f["w"][...], np.arange(3))
    finally:
        s.stop()


def test_a_store_as_the_root(stores):
    s = Server(stores / "sample.h5l")
    try:
        st, _, rsp = s.request("GET", "/domains")
        assert st == 200 and [d["name"] for d in rsp["domains"]] == ["/sample.h5l"], rsp
        check_sample(s, "/sample.h5l")
        st, _, rsp = s.request("GET", "/", params={"domain": "/sample.h5l", "verbose": 1})
        assert st == 200 and rsp["num_datasets"] == 3, rsp
    finally:
        s.stop()
