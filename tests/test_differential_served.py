"""The differential suite once more, through h5pyd: h5pyd talking to a real
HSDS is the reference, h5pyd talking to `h5lake serve` must give the same
values, object kinds, names and exception classes in every operation.

(h5pyd itself differs from h5py in many places — ~half of these operations
give other results through h5pyd than through h5py, with HSDS as well as
with h5lake — which is why the reference here is HSDS, not h5py.)
"""

import uuid

import pytest

import hsds_server
import servers
from diffutil import assert_same, run
from test_differential import *  # noqa: F401,F403  (the same tests, on the pair below)

h5pyd = pytest.importorskip("h5pyd")

pytestmark = pytest.mark.skipif(not hsds_server.available(),
                                reason="HSDS not installed (pip install hsds h5pyd)")

USER, PASSWORD = "test_user1", "test"


class _ServerLib:
    """h5pyd bound to one server, shaped like the module a Side uses."""

    __name__ = "h5pyd"

    def __init__(self, endpoint):
        self._kw = dict(endpoint=endpoint, username=USER, password=PASSWORD)

    def __getattr__(self, name):
        return getattr(h5pyd, name)

    def File(self, name, mode="r", **kw):   # noqa: N802 (h5py's name)
        return h5pyd.File(name, mode, **self._kw, **kw)


class _ServerSide:
    """A Side whose files are domains ``/home/test_user1/<unique>_<name>.h5``."""

    def __init__(self, endpoint, label):
        self.lib = _ServerLib(endpoint)
        self.name = label
        self.prefix = f"/home/{USER}/{uuid.uuid4().hex[:10]}"
        self._f = None
        self._opened = []

    def path(self, name="t"):
        return f"{self.prefix}_{name}.h5"

    def open(self, name="t", mode="r", **kw):
        fh = self.lib.File(self.path(name), mode, **kw)
        self._opened.append(fh)
        return fh

    @property
    def f(self):
        if self._f is None:
            self._f = self.open("t", "w")
        return self._f

    def reopen(self, mode="r"):
        if self._f is not None:
            self._f.close()
        self._f = self.open("t", mode)
        return self._f

    def close_all(self):
        for fh in self._opened:
            try:
                fh.close()
            except Exception:  # noqa: BLE001
                pass


class _ServedPair:
    def __init__(self, hsds_endpoint, h5lake_endpoint):
        self.h = _ServerSide(hsds_endpoint, "HSDS")
        self.l = _ServerSide(h5lake_endpoint, "h5lake serve")

    def both(self, op, raises=None, where=None):
        # `raises` states what h5py does; the reference here is h5pyd+HSDS,
        # which may differ, so it is not checked.
        del raises
        rh = run(op, self.h)
        rl = run(op, self.l)
        assert_same(rh, rl, where or getattr(op, "__name__", "op"))
        return rh

    def close(self):
        self.h.close_all()
        self.l.close_all()


@pytest.fixture(scope="module")
def endpoints(tmp_path_factory):
    root = tmp_path_factory.mktemp("served")
    hs = hsds_server.HsdsServer(root / "hsds").start()
    try:
        hs.make_folder("/home/")
        hs.make_folder(f"/home/{USER}/", owner=USER)
        with servers.running(root / "h5lake" / "bucket") as eps:
            h5pyd.Folder("/home/", mode="w", endpoint=eps[0], username="admin", password="admin").close()
            h5pyd.Folder(f"/home/{USER}/", mode="w", endpoint=eps[0], username="admin",
                         password="admin", owner=USER).close()
            yield hs.endpoint, eps[0]
    finally:
        hs.stop()


@pytest.fixture
def pair(endpoints):
    p = _ServedPair(*endpoints)
    yield p
    p.close()

