"""Many writers at once through `h5lake serve`: 8 client processes write
disjoint and overlapping selections of one dataset, extend another, and add
links and attributes to one group, at the same time — through one server,
and through two servers on one store. Every acknowledged write must be there
afterwards (checked through the server and straight from the store)."""

import base64
import json
import multiprocessing as mp
import os

import numpy as np
import pytest
import requests

import h5lake
import servers

WRITERS = 8
ROWS, COLS = 64, 1000
DOMAIN = "/home/test_user1/conc.h5"
USER = ("test_user1", "test")


def _hdr(binary=False):
    token = base64.b64encode(f"{USER[0]}:{USER[1]}".encode()).decode()
    h = {"Authorization": f"Basic {token}"}
    if binary:
        h["Content-Type"] = "application/octet-stream"
    return h


def _ok(rsp, what):
    assert rsp.status_code < 300, f"{what}: {rsp.status_code} {rsp.text[:300]}"
    return rsp


def _writer(args):
    """One client: returns what the servers acknowledged."""
    k, endpoint, ids = args
    s = requests.Session()
    p = {"domain": DOMAIN}
    acked = {"extend": [], "links": [], "attrs": []}
    # Disjoint rows (every chunk is shared with other writers' rows).
    rows = np.full((8, COLS), k + 1, np.int32)
    _ok(s.put(f"{endpoint}/datasets/{ids['grid']}/value", params=dict(p, select=f"[{8 * k}:{8 * k + 8},:]"),
              data=rows.tobytes(), headers=_hdr(True)), "rows")
    # Overlapping: a band of columns across every writer's rows.
    band = np.full((ROWS, 10), 100 + k, np.int32)
    c0 = 100 * k + 50
    _ok(s.put(f"{endpoint}/datasets/{ids['grid']}/value", params=dict(p, select=f"[:,{c0}:{c0 + 10}]"),
              data=band.tobytes(), headers=_hdr(True)), "band")
    for i in range(5):
        # Atomic append: the server says which rows are ours.
        r = _ok(s.put(f"{endpoint}/datasets/{ids['log']}/shape", params=p,
                      json={"extend": 2, "extend_dim": 0}, headers=_hdr()), "extend").json()
        lo, hi = (int(x) for x in r["selection"].strip("[]").split(":")[:2])
        _ok(s.put(f"{endpoint}/datasets/{ids['log']}/value", params=dict(p, select=f"[{lo}:{hi}]"),
                  data=np.full(hi - lo, k + 1, np.int64).tobytes(), headers=_hdr(True)), "log write")
        acked["extend"].append((lo, hi))
        name = f"w{k}_{i}"
        _ok(s.put(f"{endpoint}/groups/{ids['g']}/links/{name}", params=p,
                  json={"h5path": f"/target/{name}"}, headers=_hdr()), "link")
        acked["links"].append(name)
        _ok(s.put(f"{endpoint}/groups/{ids['g']}/attributes/{name}", params=p,
                  json={"type": "H5T_STD_I32LE", "shape": [], "value": k * 10 + i}, headers=_hdr()), "attr")
        acked["attrs"].append((name, k * 10 + i))
    return k, acked


def _setup(endpoint):
    h5pyd = pytest.importorskip("h5pyd")
    admin = dict(endpoint=endpoint, username="admin", password="admin")
    h5pyd.Folder("/home/", mode="w", **admin).close()
    h5pyd.Folder("/home/test_user1/", mode="w", owner=USER[0], **admin).close()
    kw = dict(endpoint=endpoint, username=USER[0], password=USER[1])
    with h5pyd.File(DOMAIN, "w", **kw) as f:
        f.create_dataset("grid", (ROWS, COLS), dtype="i4", chunks=(16, 250))
        f.create_dataset("log", (0,), maxshape=(None,), dtype="i8", chunks=(16,))
        f.create_group("g")
        return {"grid": f["grid"].id.id, "log": f["log"].id.id, "g": f["g"].id.id}


def _run(endpoints):
    ids = _setup(endpoints[0])
    jobs = [(k, endpoints[k % len(endpoints)], ids) for k in range(WRITERS)]
    with mp.get_context("spawn").Pool(WRITERS) as pool:
        results = dict(pool.map(_writer, jobs))
    return ids, results


def _check(f, results):
    grid = f["grid"][()]
    for k in range(WRITERS):
        mine = grid[8 * k:8 * k + 8]
        c0 = [100 * j + 50 for j in range(WRITERS)]
        in_band = np.zeros(COLS, bool)
        for c in c0:
            in_band[c:c + 10] = True
        assert (mine[:, ~in_band] == k + 1).all(), f"writer {k}'s rows lost"
        for j, c in enumerate(c0):
            vals = mine[:, c:c + 10]
            assert np.isin(vals, [k + 1, 100 + j]).all(), f"band {j} over writer {k}: {np.unique(vals)}"
    log = f["log"][()]
    assert log.shape == (WRITERS * 10,), f"extends lost: shape {log.shape}"
    for k, acked in results.items():
        for lo, hi in acked["extend"]:
            assert (log[lo:hi] == k + 1).all(), f"writer {k}'s appended rows {lo}:{hi} hold {log[lo:hi]}"
    g = f["g"]
    names = set(g.attrs.keys())
    links = set(g.keys())
    for k, acked in results.items():
        for name in acked["links"]:
            assert name in links, f"link {name} lost"
        for name, v in acked["attrs"]:
            assert name in names, f"attribute {name} lost"
            assert int(g.attrs[name]) == v


@pytest.mark.parametrize("n_servers", [1, 2])
def test_eight_writers(tmp_path, n_servers):
    root = tmp_path / "bucket"
    with servers.running(root, count=n_servers) as eps:
        ids, results = _run(eps)
        h5pyd = pytest.importorskip("h5pyd")
        with h5pyd.File(DOMAIN, "r", endpoint=eps[-1], username=USER[0], password=USER[1]) as f:
            _check_h5pyd(f, results)
    with h5lake.File(str(root / DOMAIN.lstrip("/")), "r") as f:
        _check(f, results)


def _check_h5pyd(f, results):
    g = f["g"]
    links = set(g)
    for k, acked in results.items():
        for name in acked["links"]:
            assert name in links, f"link {name} lost (seen through the server)"
    assert f["log"].shape == (WRITERS * 10,)
