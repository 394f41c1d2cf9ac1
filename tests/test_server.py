"""``h5lake serve`` against h5pyd, the HSDS command-line tools and raw HTTP:
what h5pyd writes through the server, h5lake reads from the store directly
(and the other way round)."""

import os
import subprocess
import sys

import numpy as np
import pytest

import h5lake
from servers import Server

h5pyd = pytest.importorskip("h5pyd")

USER = "test_user1"
PW = "test"


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    root = tmp_path_factory.mktemp("srv") / "bucket"
    s = Server(root)
    assert s.request("PUT", "/", {"folder": 1}, params={"domain": "/home/"})[0] == 201
    status = s.request("PUT", "/", {"folder": 1, "owner": USER}, params={"domain": f"/home/{USER}/"})[0]
    assert status == 201
    yield s
    s.stop()


_counter = iter(range(10**6))


@pytest.fixture
def domain(server):
    return f"/home/{USER}/t{next(_counter)}.h5"


def hfile(server, domain, mode, user=USER, password=PW):
    return h5pyd.File(domain, mode, endpoint=server.endpoint, username=user, password=password)


def local(server, domain):
    """The same domain opened straight from the store directory."""
    return h5lake.File(os.path.join(server.root, domain.lstrip("/")), "r")


def test_end_to_end(server, domain):
    data = np.arange(60, dtype="i4").reshape(6, 10)
    with hfile(server, domain, "w") as f:
        g = f.create_group("g1")
        g.attrs["n"] = 5
        g.attrs["s"] = "hello"
        f.create_dataset("g1/x", data=data)
        big = f.create_dataset("big", shape=(100, 50), dtype="f8", chunks=(10, 50),
                               compression="gzip", maxshape=(None, 50))
        big[:] = np.arange(5000, dtype="f8").reshape(100, 50)
        f["soft"] = h5pyd.SoftLink("/g1/x")
    with hfile(server, domain, "r") as f:
        assert sorted(f) == ["big", "g1", "soft"]
        assert f["g1"].attrs["n"] == 5 and f["g1"].attrs["s"] == "hello"
        np.testing.assert_array_equal(f["g1/x"][1:3, ::2], data[1:3, ::2])
        assert f["big"].chunks == (10, 50) and f["big"].compression == "gzip"
        np.testing.assert_array_equal(f["soft"][...], data)
    with local(server, domain) as f:
        np.testing.assert_array_equal(f["g1/x"][...], data)
        np.testing.assert_array_equal(f["big"][...], np.arange(5000, dtype="f8").reshape(100, 50))
        assert f["g1"].attrs["n"] == 5 and f["g1"].attrs["s"] == "hello"
        assert f["big"].compression == "gzip"
