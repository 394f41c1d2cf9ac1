"""The differential suite once more, through h5pyd: every operation runs on
h5pyd talking to `h5lake serve`, on h5pyd talking to a real HSDS, and on
h5py with a local file. h5lake's answer (values, object kinds, names,
exception classes) must equal HSDS's — or, where HSDS's differs, h5py's.

(h5pyd itself differs from h5py in many places — about half of these
operations give other results through h5pyd than through h5py, with HSDS
as well — which is why HSDS is the first reference, not h5py. The test
counts where h5lake matched h5py instead of HSDS.)
"""

import uuid

import pytest

import hsds_server
import servers
from diffutil import Raised, Side, assert_same, h5py, run
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


class _ServerSide(Side):
    """A Side whose files are domains ``/home/test_user1/<unique>_<name>.h5``."""

    def __init__(self, endpoint, label):
        super().__init__(_ServerLib(endpoint), f"/home/{USER}/{uuid.uuid4().hex[:10]}", ".h5",
                         local=False)
        self.name = label

    def path(self, name="t"):
        return f"{self.root}_{name}{self.ext}"


def _as_h5pyd_reports(native, served):
    """What h5pyd reports for datasets h5py describes in ``native`` (the
    ``props`` dicts inside it), given what it reported in ``served``: h5pyd
    calls scale-offset the compression (h5py: none, or the compressor after
    it; ``props`` has no scale-offset key, so ``served`` says where) and gives szip's options as
    (bits per pixel, pixels per block), h5py as ("nn"|"ec", pixels per block)."""
    if isinstance(native, (tuple, list)) and isinstance(served, (tuple, list)) \
            and len(native) == len(served):
        return type(native)(_as_h5pyd_reports(n, s) for n, s in zip(native, served))
    if isinstance(native, dict) and isinstance(served, dict) \
            and {"compression", "compression_opts", "dtype"} <= native.keys():
        out = dict(native)
        if served.get("compression") == "scaleoffset" and out["compression"] in (None, "lzf"):
            # (also in front of lzf, whose options are none)
            out["compression"] = "scaleoffset"
            out["compression_opts"] = None
        if out["dtype"].kind == "O" and native.get("fillvalue") in (b"", None) \
                and isinstance(served.get("fillvalue"), int) and served["fillvalue"] == 0:
            # (h5pyd gives a variable-length type's default fill value as 0)
            out["fillvalue"] = 0
        if out["compression"] == "szip":
            out["compression_opts"] = (out["dtype"].itemsize * 8, out["compression_opts"][1])
        return out
    return native


BETTER_THAN_HSDS = []   # (test, op) where h5lake matched h5py, not HSDS
BOTH_FAIL = []          # (test, op) where HSDS and h5lake fail and h5py does not


class _ServedPair:
    def __init__(self, hsds_endpoint, h5lake_endpoint, tmp_path, test_name):
        self.h = _ServerSide(hsds_endpoint, "HSDS")
        self.l = _ServerSide(h5lake_endpoint, "h5lake serve")
        self.native = Side(h5py, tmp_path / "h5py", ".h5")
        self.test_name = test_name

    def both(self, op, raises=None, where=None):
        # `raises` states what h5py does; HSDS may differ, so it is not checked.
        del raises
        where = where or getattr(op, "__name__", "op")
        rh = run(op, self.h)
        rl = run(op, self.l)
        rn = run(op, self.native)   # always, so that its state keeps up
        try:
            assert_same(rh, rl, where)
        except AssertionError as vs_hsds:
            if all(isinstance(r, Raised) for r in (rh, rl)) and not isinstance(rn, Raised):
                # HSDS fails where h5py works (an h5pyd or HSDS bug): h5lake
                # failing too, with another exception, is no worse.
                BOTH_FAIL.append((self.test_name, where))
                return rh
            try:
                assert_same(rn, rl, where)
            except AssertionError:
                # HSDS has neither scale-offset nor szip; h5lake has both, and
                # reads back what h5py does, reported the way h5pyd reports.
                try:
                    assert_same(_as_h5pyd_reports(rn, rl), rl, where)
                except AssertionError:
                    raise vs_hsds from None
            BETTER_THAN_HSDS.append((self.test_name, where))
        return rh

    def close(self):
        for side in (self.h, self.l, self.native):
            side.close_all()


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
def pair(endpoints, tmp_path, request):
    p = _ServedPair(*endpoints, tmp_path, request.node.name)
    yield p
    p.close()


@pytest.fixture(scope="module", autouse=True)
def _report_better_than_hsds():
    yield
    if BETTER_THAN_HSDS:
        print(f"\nh5lake serve matched h5py where HSDS did not in {len(BETTER_THAN_HSDS)} "
              f"operation(s): {BETTER_THAN_HSDS}")
    if BOTH_FAIL:
        print(f"\nHSDS and h5lake serve both fail where h5py works in {len(BOTH_FAIL)} "
              f"operation(s): {BOTH_FAIL}")

