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


def test_types_selections_and_reopen(server, domain):
    cdt = np.dtype([("a", "<i4"), ("b", "<f8"), ("c", "S4")])
    comp = np.zeros(8, dtype=cdt)
    comp["a"] = np.arange(8)
    comp["b"] = np.arange(8) * 0.5
    comp["c"] = [b"x%d" % i for i in range(8)]
    words = ["alpha", "beta", "", "gamma δ"]
    with hfile(server, domain, "w") as f:
        f.create_dataset("comp", data=comp)
        f.create_dataset("vstr", data=words, dtype=h5pyd.string_dtype())
        f.create_dataset("fstr", data=np.array([b"ab", b"cde"], dtype="S3"))
        f.create_dataset("ext", data=np.arange(10, dtype="i8"), maxshape=(None,), chunks=(4,))
        f.create_dataset("scalar", data=3.5)
        f.create_dataset("pts", data=np.arange(100, dtype="u2").reshape(10, 10), chunks=(3, 3))
    with hfile(server, domain, "a") as f:
        f["ext"].resize((15,))
        f["ext"][10:15] = np.arange(100, 105)
        f["pts"][[1, 4, 7], 2] = np.array([901, 904, 907], dtype="u2")
    with hfile(server, domain, "r") as f:
        np.testing.assert_array_equal(f["comp"][...], comp)
        np.testing.assert_array_equal(f["comp"][2:5]["b"], comp[2:5]["b"])
        assert [s.decode() if isinstance(s, bytes) else s for s in f["vstr"][...]] == words
        assert list(f["fstr"][...]) == [b"ab", b"cde"]
        assert f["ext"].shape == (15,)
        np.testing.assert_array_equal(f["ext"][8:15], [8, 9, 100, 101, 102, 103, 104])
        assert f["scalar"][()] == 3.5
        np.testing.assert_array_equal(f["pts"][[1, 4, 7], 2], [901, 904, 907])
        np.testing.assert_array_equal(f["pts"][2:9:3, [0, 5]], np.arange(100).reshape(10, 10)[2:9:3][:, [0, 5]])
    with local(server, domain) as f:
        np.testing.assert_array_equal(f["comp"][...], comp)
        assert [s.decode() for s in f["vstr"][...]] == words
        np.testing.assert_array_equal(f["ext"][...], list(range(10)) + list(range(100, 105)))
        assert f["pts"][4, 2] == 904


def test_hs_tools(server, tmp_path):
    import shutil
    h5py = pytest.importorskip("h5py")
    tools = {t: shutil.which(t) for t in ("hsinfo", "hsls", "hstouch", "hsload", "hsget", "hsacl")}
    if not all(tools.values()):
        pytest.skip("the HSDS command-line tools are not installed")
    src = tmp_path / "src.h5"
    with h5py.File(src, "w") as f:
        f.create_dataset("a/b", data=np.arange(1000.0).reshape(10, 100), chunks=(5, 50),
                         compression="gzip")
        f["a"].attrs["x"] = [1, 2, 3]
        f.create_dataset("s", data=["x", "yy"], dtype=h5py.string_dtype())
    env = dict(os.environ, HS_ENDPOINT=server.endpoint, HS_USERNAME=USER, HS_PASSWORD=PW)
    folder = f"/home/{USER}/tools/"

    def run(*args):
        r = subprocess.run([tools[args[0]], *args[1:]], env=env, capture_output=True, text=True,
                           timeout=60)
        assert r.returncode == 0, (args, r.stdout, r.stderr)
        return r.stdout

    assert "server state: READY" in run("hsinfo")
    run("hstouch", folder)
    run("hstouch", folder + "empty.h5")
    run("hsload", str(src), folder)
    listing = run("hsls", "-r", folder + "src.h5")
    assert "/a/b Dataset {10, 100}" in listing
    assert "src.h5" in run("hsls", folder) and "empty.h5" in run("hsls", folder)
    out = tmp_path / "out.h5"
    run("hsget", folder + "src.h5", str(out))
    with h5py.File(out, "r") as f:
        np.testing.assert_array_equal(f["a/b"][...], np.arange(1000.0).reshape(10, 100))
        assert list(f["a"].attrs["x"]) == [1, 2, 3]
    run("hsacl", folder + "src.h5", "+r", "test_user2")
    acls = run("hsacl", folder + "src.h5")
    assert "test_user2" in acls
    # the loaded domain reads the same from the store directory
    with local(server, folder + "src.h5") as f:
        np.testing.assert_array_equal(f["a/b"][3], np.arange(300.0, 400.0))
        assert [s.decode() for s in f["s"][...]] == ["x", "yy"]


def test_auth_and_acls(server, domain):
    with hfile(server, domain, "w") as f:
        f.create_dataset("x", data=np.arange(4))
    params = {"domain": domain}
    assert server.request("GET", "/", params=params, user=None)[0] == 401
    assert server.request("GET", "/", params=params, user="nobody")[0] == 401
    # another user: the domain is private
    status, _, body = server.request("GET", "/", params=params, user="test_user2")
    assert status == 403 and "error" in body
    with pytest.raises(OSError):
        hfile(server, domain, "r", user="test_user2", password="test")
    # a wrong password
    with pytest.raises(OSError):
        hfile(server, domain, "r", password="wrong")
    # grant read: now test_user2 reads but cannot write
    status = server.request("PUT", f"/acls/test_user2", {"read": True}, params=params, user=USER)[0]
    assert status == 201
    with hfile(server, domain, "r", user="test_user2", password="test") as f:
        np.testing.assert_array_equal(f["x"][...], np.arange(4))
    with pytest.raises(OSError):
        hfile(server, domain, "a", user="test_user2", password="test")
    status, _, body = server.request("GET", "/acls", params=params, user=USER)
    assert status == 200 and {a["userName"] for a in body["acls"]} == {USER, "test_user2"}
    assert server.request("GET", "/acls", params=params, user="test_user2")[0] == 403
    # only the admin creates top-level folders; the admin may do anything
    assert server.request("PUT", "/", {"folder": 1}, params={"domain": "/top/"}, user=USER)[0] == 403
    assert server.request("GET", "/", params=params, user="admin")[0] == 200
    assert server.request("DELETE", "/", params=params, user="test_user2")[0] == 403


def test_noauth(tmp_path):
    s = Server(tmp_path / "b", allow_noauth=True)
    try:
        assert s.request("PUT", "/", {"folder": 1}, params={"domain": "/pub/"})[0] == 201
        assert s.request("PUT", "/", params={"domain": "/pub/f.h5"})[0] == 201
        # anonymous requests act as "default": folders are world-readable...
        assert s.request("GET", "/", params={"domain": "/pub/"}, user=None)[0] == 200
        # ...domains are not, and nobody anonymous creates anything
        assert s.request("GET", "/", params={"domain": "/pub/f.h5"}, user=None)[0] == 403
        assert s.request("PUT", "/", params={"domain": "/pub/g.h5"}, user=None)[0] in (401, 403)
    finally:
        s.stop()


def test_bad_input(server, domain):
    with hfile(server, domain, "w") as f:
        f.create_dataset("x", data=np.arange(20, dtype="i4").reshape(4, 5))
        gid = f.id.id
    with hfile(server, domain, "r") as f:
        did = f["x"].id.id
    p = {"domain": domain}

    def req(method, path, body=None, params=None, **kw):
        status, _, rsp = server.request(method, path, body, params=dict(p, **(params or {})),
                                        user=USER, **kw)
        return status, rsp

    for sel in ["[0:5,0:5]", "[0:2]", "[a:b,0:1]", "[3:1,0:1]", "[0:2:0,0:1]", "[[2,1],0:1]",
                "[-1:2,0:1]", "0:2,0:1", "[" * 50]:
        status, rsp = req("GET", f"/datasets/{did}/value", params={"select": sel})
        assert status == 400, (sel, status)
        assert "error" in rsp
    assert req("GET", f"/datasets/d-00000000-00000000-0000-000000-000000/value")[0] in (400, 404)
    assert req("GET", f"/datasets/nonsense/value")[0] == 400
    assert req("GET", f"/groups/{did}")[0] == 400
    assert req("GET", "/", params={"domain": "/home/../etc"})[0] == 400
    assert req("GET", "/", params={"domain": "/db/x"})[0] == 400
    assert req("GET", "/", params={"domain": "relative/path"})[0] == 400
    assert req("GET", "/", params={"domain": "/home/test_user1/missing.h5"})[0] == 404
    # malformed bodies: nothing is created
    headers = {"Content-Type": "application/json"}
    assert req("POST", "/groups", b"{not json", headers=headers)[0] == 400
    assert req("POST", "/datasets", {"type": "H5T_NOPE", "shape": [3]})[0] == 400
    assert req("POST", "/datasets", {"type": "H5T_STD_I32LE", "shape": [2**40, 2**40]})[0] == 400
    assert req("POST", "/datasets", {"type": "H5T_STD_I32LE", "shape": [-3]})[0] == 400
    assert req("POST", "/datasets", {"type": "H5T_STD_I32LE", "shape": [2**40], "creationProperties": {
        "layout": {"class": "H5D_CHUNKED", "dims": [2**40]}}})[0] == 400
    assert req("POST", "/datasets", [1, 2])[0] == 400
    assert req("PUT", f"/groups/{gid}/links/bad", {"nothing": 1})[0] == 400
    assert req("PUT", f"/groups/{gid}/attributes/a", {"type": "H5T_STD_I32LE", "shape": [2],
                                                       "value": [1, "x"]})[0] == 400
    assert req("PUT", f"/groups/{gid}/attributes/a", {"type": "H5T_STD_I32LE", "shape": [2],
                                                       "value": [1, 2, 3]})[0] == 400
    # binary writes of the wrong length, and JSON where binary is expected
    octet = {"Content-Type": "application/octet-stream"}
    assert req("PUT", f"/datasets/{did}/value", b"\0" * 7, headers=octet)[0] == 400
    assert req("PUT", f"/datasets/{did}/value", b"\0" * 84, headers=octet)[0] == 400
    assert req("POST", "/groups", b"\0\0", headers=octet)[0] == 415
    assert req("POST", f"/datasets/{did}/value", b"\0" * 12, headers=octet)[0] == 400
    assert req("POST", f"/datasets/{did}/value", {"points": [[9, 9]]})[0] == 400
    assert req("PUT", f"/datasets/{did}/shape", {"shape": [8, 5]})[0] == 400
    assert req("GET", "/no/such/endpoint")[0] == 404
    # the server is still up and nothing changed
    with hfile(server, domain, "r") as f:
        assert list(f) == ["x"] and list(f.attrs) == []
        np.testing.assert_array_equal(f["x"][...], np.arange(20).reshape(4, 5))


def test_batch_creation(server, domain):
    """10,000 groups with links and attributes in a handful of requests."""
    import time
    with hfile(server, domain, "w") as f:
        root = f.id.id
    n = 10000
    prefix = root[2:19]
    ids = [f"g-{prefix}-{i:04x}-{i:06x}-{i:06x}" for i in range(1, n + 1)]
    p = {"domain": domain}
    t0 = time.time()
    for start in range(0, n, 2500):
        items = [{"id": gid, "link": {"id": root, "name": f"g{i}"}}
                 for i, gid in enumerate(ids[start:start + 2500], start)]
        status, _, rsp = server.request("POST", "/groups", items, params=p, user=USER)
        assert status == 201 and len(rsp["objects"]) == len(items)
    attrs = {gid: {"attributes": {"n": {"type": "H5T_STD_I32LE", "shape": [], "value": i}}}
             for i, gid in enumerate(ids)}
    status = server.request("PUT", f"/groups/{root}/attributes", {"obj_ids": attrs}, params=p,
                            user=USER)[0]
    assert status == 201
    status = server.request("PUT", f"/groups/{root}/links", {"grp_ids": {ids[0]: {"links": {
        "up": {"id": root}, "soft": {"h5path": "/g5"}}}}}, params=p, user=USER)[0]
    assert status == 201
    assert time.time() - t0 < 60
    with local(server, domain) as f:
        assert len(f) == n
        assert f["g1234"].attrs["n"] == 1234
        assert f["g0/up/g7"].attrs["n"] == 7


def test_big_binary_streams(server, domain):
    """200 MB in and out through raw HTTP without the server holding it all."""
    with hfile(server, domain, "w") as f:
        f.create_dataset("big", shape=(25_000, 1000), dtype="f8", chunks=(1000, 1000))
        did = f["big"].id.id
    data = np.arange(25_000 * 1000, dtype="f8")
    payload = data.tobytes()
    before = server.rss_kb()
    import http.client
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=300)
    import base64
    auth = "Basic " + base64.b64encode(f"{USER}:{PW}".encode()).decode()

    def chunks():
        view = memoryview(payload)
        for i in range(0, len(view), 1 << 20):
            yield bytes(view[i:i + (1 << 20)])

    from urllib.parse import quote
    path = f"/datasets/{did}/value?domain={quote(domain)}"
    conn.request("PUT", path, body=chunks(), headers={
        "Authorization": auth, "Content-Type": "application/octet-stream",
        "Content-Length": str(len(payload))})
    rsp = conn.getresponse()
    rsp.read()
    assert rsp.status == 200
    peak_write = server.rss_kb()
    conn.request("GET", path, headers={"Authorization": auth, "Accept": "application/octet-stream"})
    rsp = conn.getresponse()
    assert rsp.status == 200
    got = bytearray()
    peak_read = 0
    while True:
        piece = rsp.read(8 << 20)
        if not piece:
            break
        got += piece
        peak_read = max(peak_read, server.rss_kb())
    conn.close()
    assert bytes(got) == payload
    growth_mb = (max(peak_write, peak_read) - before) / 1024
    print(f"server RSS growth: {growth_mb:.0f} MB (write {(peak_write - before) / 1024:.0f}, read {(peak_read - before) / 1024:.0f})")
    assert growth_mb < 100, f"server RSS grew by {growth_mb:.0f} MB"
    del payload, got
    with local(server, domain) as f:
        np.testing.assert_array_equal(f["big"][24_999], data[-1000:])


def test_reused_answer_buffers_hold_only_their_answer(server, domain):
    """Binary answers are built in reused buffers: an answer over chunks never
    written holds the fill value, not bytes of an earlier answer, whether it
    is one slab, a part of one, or streamed in several."""
    import base64
    import http.client
    from urllib.parse import quote
    auth = "Basic " + base64.b64encode(f"{USER}:{PW}".encode()).decode()
    rows = 6000   # 6000 x 1000 x 8 bytes = 48 MB: six 8 MiB slabs
    with hfile(server, domain, "w") as f:
        full = f.create_dataset("full", shape=(rows, 1000), dtype="f8", chunks=(500, 1000))
        full[...] = np.random.default_rng(3).random((rows, 1000))
        f.create_dataset("empty", shape=(rows, 1000), dtype="f8", chunks=(500, 1000),
                         fillvalue=-1.5)
        ids = {k: f[k].id.id for k in ("full", "empty")}
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=300)

    def get(name, stop):
        path = f"/datasets/{ids[name]}/value?domain={quote(domain)}&select=[0:{stop},0:1000]"
        conn.request("GET", path, headers={"Authorization": auth,
                                           "Accept": "application/octet-stream"})
        rsp = conn.getresponse()
        body = rsp.read()
        assert rsp.status == 200, body[:200]
        return np.frombuffer(body, dtype="f8")

    for stop in (rows, 1000, 300):   # streamed; one whole slab; a quarter slab
        assert (get("full", stop) != -1.5).all()
        got = get("empty", stop)
        assert got.size == stop * 1000
        assert (got == -1.5).all(), f"{stop} rows: {np.count_nonzero(got != -1.5)} stale values"
    conn.close()


def test_deletes_datatypes_external_links(server, domain):
    with hfile(server, domain, "w") as f:
        f["dt"] = np.dtype([("x", "<f4"), ("y", "<i2")])
        f.create_dataset("a", data=np.arange(3))
        f.create_dataset("b", data=np.arange(4))
        f.attrs["keep"] = 1
        f.attrs["drop"] = np.arange(3, dtype="f4")
        f["ext"] = h5pyd.ExternalLink("/home/other.h5", "/x")
        f["hard"] = f["a"]
    with hfile(server, domain, "a") as f:
        # h5pyd 1.0.0 sends deletions of links and attributes it loaded only
        # after its first flush of the session (before that it takes them for
        # its own unsent creations)
        f.flush()
        del f["b"]
        del f.attrs["drop"]
        f["a"].attrs["new"] = "text"
    with hfile(server, domain, "r") as f:
        assert sorted(f) == ["a", "dt", "ext", "hard"]
        assert list(f.attrs) == ["keep"]
        assert f["a"].attrs["new"] == "text"
        assert f["dt"].dtype.names == ("x", "y")
        link = f.get("ext", getlink=True)
        assert isinstance(link, h5pyd.ExternalLink) and link.path == "/x"
    with local(server, domain) as f:
        assert sorted(f) == ["a", "dt", "ext", "hard"]
        assert f["dt"].dtype.names == ("x", "y")
        np.testing.assert_array_equal(f["hard"][...], np.arange(3))
        assert f.get("ext", getlink=True).filename == "/home/other.h5"


def test_h5lake_store_served(server):
    """A domain written by h5lake directly is served to h5pyd."""
    path = os.path.join(server.root, "home", USER, "direct.h5")
    with h5lake.File(path, "w") as f:
        f.create_dataset("d", data=np.arange(12, dtype="i2").reshape(3, 4), chunks=(2, 2),
                         compression="gzip")
        f["d"].attrs["unit"] = "m"
        f.create_group("g").create_dataset("s", data=["a", "bc"], dtype=h5lake.string_dtype())
    # h5lake stamps the owner with $USER; hand it to the test user as an admin would
    status = server.request("PUT", f"/acls/{USER}", {k: True for k in (
        "create", "read", "update", "delete", "readACL", "updateACL")},
        params={"domain": f"/home/{USER}/direct.h5"}, user="admin")[0]
    assert status == 201
    with hfile(server, f"/home/{USER}/direct.h5", "r") as f:
        np.testing.assert_array_equal(f["d"][1:, 1:3], np.arange(12).reshape(3, 4)[1:, 1:3])
        assert f["d"].attrs["unit"] == "m"
        assert [s.decode() if isinstance(s, bytes) else s for s in f["g/s"][...]] == ["a", "bc"]


def test_raw_api(server, domain):
    """The endpoints h5pyd does not exercise, through raw HTTP."""
    p = {"domain": domain}

    def req(method, path, body=None, params=None, **kw):
        status, _, rsp = server.request(method, path, body, params=dict(p, **(params or {})),
                                        user=USER, **kw)
        return status, rsp

    status, dom = req("PUT", "/")
    assert status == 201 and dom["class"] == "domain"
    root = dom["root"]
    status, rsp = req("POST", "/datasets", {"type": "H5T_STD_I32LE", "shape": [4, 3],
                                            "maxdims": [0, 3], "value": [[i] * 3 for i in range(4)],
                                            "link": {"id": root, "name": "d"}})
    assert status == 201
    did = rsp["id"]
    assert rsp["creationProperties"]["layout"]["class"] == "H5D_CHUNKED"   # resizable: chunked
    assert req("GET", f"/datasets/{did}/type")[1]["type"]["base"] == "H5T_STD_I32LE"
    assert req("GET", f"/datasets/{did}/shape")[1]["shape"]["maxdims"] == ["H5S_UNLIMITED", 3]
    assert req("GET", f"/datasets/{did}/value", params={"select": "[1:3,0:2]"})[1]["value"] == [[1, 1], [2, 2]]
    assert req("PUT", f"/datasets/{did}/value", {"value": [7, 8], "start": [0, 1], "stop": [1, 3]})[0] == 200
    assert req("POST", f"/datasets/{did}/value", {"points": [[0, 2], [3, 0]]})[1]["value"] == [8, 3]
    status, rsp = req("PUT", f"/datasets/{did}/shape", {"extend": 2, "extend_dim": 0})
    assert status == 201 and rsp["selection"] == "[4:6,0:3]"
    assert req("GET", f"/datasets/{did}/value", params={"select": "[5,0:3]"})[1]["value"] == [[0, 0, 0]]
    assert req("GET", f"/datasets/{did}/value", params={"select": "[1,0:3]", "reduce_dim": 1})[1]["value"] == [1, 1, 1]
    # committed types, multi-link and multi-attribute forms
    status, rsp = req("POST", "/datatypes", {"type": "H5T_IEEE_F64LE", "link": {"id": root, "name": "t"}})
    assert status == 201
    tid = rsp["id"]
    status, rsp = req("POST", "/groups", {"link": {"id": root, "name": "g"},
                                          "attributes": {"a": {"type": tid, "shape": [2], "value": [1.5, 2.5]}}})
    assert status == 201
    gid = rsp["id"]
    assert req("GET", f"/groups/{gid}/attributes/a")[1]["type"]["id"] == tid
    assert req("PUT", f"/groups/{gid}/links", {"links": {"s": {"h5path": "/d"}, "h": {"id": did}}})[0] == 201
    assert [l["title"] for l in req("GET", f"/groups/{gid}/links")[1]["links"]] == ["h", "s"]
    assert req("GET", f"/groups/{gid}/links/h")[1]["link"]["collection"] == "datasets"
    assert len(req("POST", f"/groups/{gid}/links", {"titles": ["s"]})[1]["links"]) == 1
    assert req("PUT", f"/groups/{gid}/links/h", {"id": did})[0] == 200      # same again: fine
    assert req("PUT", f"/groups/{gid}/links/h", {"id": gid})[0] == 409      # different: conflict
    assert req("DELETE", f"/groups/{gid}/links", params={"titles": "s/h"})[0] == 200
    assert req("GET", f"/groups/{gid}/links")[1]["links"] == []
    assert req("PUT", f"/datasets/{did}/attributes", {"attributes": {
        "x": {"type": "H5T_STD_U8LE", "shape": [3], "value": "AQID", "encoding": "base64"},
        "y": {"type": {"class": "H5T_STRING", "charSet": "H5T_CSET_UTF8", "strPad": "H5T_STR_NULLTERM",
                       "length": "H5T_VARIABLE"}, "shape": "H5S_SCALAR", "value": "hi"}}})[0] == 201
    assert req("GET", f"/datasets/{did}/attributes/x/value")[1]["value"] == [1, 2, 3]
    assert req("PUT", f"/datasets/{did}/attributes/x/value", {"value": [4, 5, 6]})[0] == 200
    names = [a["name"] for a in req("POST", f"/datasets/{did}/attributes", {"attr_names": ["x", "y"]})[1]["attributes"]]
    assert names == ["x", "y"]
    assert req("GET", f"/datasets/{did}/attributes", params={"IncludeData": 1})[1]["attributes"][0]["value"] == [4, 5, 6]
    assert req("DELETE", f"/datasets/{did}/attributes", params={"attr_names": "x|y", "separator": "|"})[0] == 200
    assert req("GET", "/groups")[1]["groups"] == [gid]
    assert req("GET", "/datatypes")[1]["datatypes"] == [tid]
    assert req("GET", "/datasets")[1]["datasets"] == [did]
    assert req("DELETE", f"/groups/{root}")[0] == 403
    # compound fields, binary both ways
    ctype = {"class": "H5T_COMPOUND", "fields": [
        {"name": "a", "type": "H5T_STD_I16LE"}, {"name": "b", "type": "H5T_IEEE_F64LE"}]}
    status, rsp = req("POST", "/datasets", {"type": ctype, "shape": [5],
                                            "link": {"id": root, "name": "c"}})
    assert status == 201
    cid = rsp["id"]
    octet = {"Content-Type": "application/octet-stream"}
    b = np.arange(5, dtype="<f8") + 0.5
    assert req("PUT", f"/datasets/{cid}/value", b.tobytes(), params={"fields": "b"}, headers=octet)[0] == 200
    a = np.array([7, 8], dtype="<i2")
    assert req("PUT", f"/datasets/{cid}/value", a.tobytes(), params={"fields": "a", "select": "[1:3]"},
               headers=octet)[0] == 200
    status, _, raw = server.request("GET", f"/datasets/{cid}/value", params=dict(p, fields="b:a"), user=USER,
                                    headers={"Accept": "application/octet-stream"}, raw=True)
    got = np.frombuffer(raw, dtype=[("b", "<f8"), ("a", "<i2")])
    np.testing.assert_array_equal(got["b"], b)
    np.testing.assert_array_equal(got["a"], [0, 7, 8, 0, 0])
    assert req("GET", f"/datasets/{cid}/value", params={"fields": "a"})[1]["value"] == [[0], [7], [8], [0], [0]]
    assert req("GET", f"/datasets/{cid}/value", params={"fields": "zz"})[0] == 400
    with local(server, domain) as f:
        np.testing.assert_array_equal(f["d"][...], [[0, 7, 8], [1, 1, 1], [2, 2, 2], [3, 3, 3], [0, 0, 0], [0, 0, 0]])
        np.testing.assert_array_equal(f["g"].attrs["a"], [1.5, 2.5])
    assert req("DELETE", "/")[0] == 200
    assert req("GET", "/")[0] == 410            # gone, as HSDS says of what it deleted
    assert not os.path.exists(os.path.join(server.root, domain.lstrip("/")))


def test_two_servers_share_a_store(server, domain):
    """Servers keep no state of their own: what one writes, the other serves."""
    other = Server(server.root)
    try:
        with hfile(server, domain, "w") as f:
            f.create_dataset("x", data=np.arange(10), chunks=(5,), maxshape=(None,))
        with h5pyd.File(domain, "a", endpoint=other.endpoint, username=USER, password=PW) as f:
            f["x"].resize((12,))
            f["x"][10:] = [10, 11]
            f.attrs["via"] = "other"
        with hfile(server, domain, "r") as f:
            np.testing.assert_array_equal(f["x"][...], np.arange(12))
            assert f.attrs["via"] == "other"
    finally:
        other.stop()


def test_garbage_never_kills_the_server(server, domain):
    import random
    rnd = random.Random(7)
    paths = ["/", "/domains", "/groups", "/datasets", "/acls", "/groups/g-1/links",
             "/datasets/d-0/value", "/info"]
    for _ in range(200):
        path = rnd.choice(paths)
        body = bytes(rnd.randrange(256) for _ in range(rnd.randrange(40)))
        method = rnd.choice(["GET", "PUT", "POST", "DELETE"])
        ctype = rnd.choice(["application/json", "application/octet-stream", "text/plain"])
        params = {"domain": rnd.choice([domain, "/", "//", "/x/../y", "\u2603", ""]),
                  "select": rnd.choice(["[", "[0:1]", "[::]", "[9999999999999999999999]", ""])}
        status = server.request(method, path, body if method != "GET" else None, params=params,
                                user=USER, headers={"Content-Type": ctype})[0]
        assert 200 <= status < 500, (method, path, params, status)
    assert server.request("GET", "/about", user=None)[0] == 200


def _fixture_dir():
    return os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "hsds-store", "hsdstest")


def test_serves_a_store_hsds_wrote(tmp_path):
    """h5pyd reads through h5lake serve exactly what h5lake reads directly
    from a bucket real HSDS 1.0.2 wrote."""
    import shutil
    src = _fixture_dir()
    root = tmp_path / "hsdstest"
    shutil.copytree(src, root)
    s = Server(root)
    domain = "/home/test_user1/fixture.h5"
    try:
        with hfile(s, domain, "r") as hf, h5lake.File(str(root / domain.lstrip("/")), "r") as lf:
            seen = []

            def text(a):
                a = np.asarray(a, dtype=object)
                return np.vectorize(lambda x: x.decode() if isinstance(x, bytes) else str(x),
                                    otypes=[object])(a) if a.size else a

            def compare(name, obj):
                seen.append(name)
                other = lf[name]
                assert sorted(obj.attrs) == sorted(other.attrs), name
                for k in obj.attrs:
                    a, b = np.asarray(obj.attrs[k]), np.asarray(other.attrs[k])
                    if a.dtype.kind in "OSU":
                        a, b = text(a), text(b)
                    np.testing.assert_array_equal(a, b, err_msg=f"{name}@{k}")
                if isinstance(obj, h5pyd.Dataset):
                    assert obj.shape == other.shape and obj.dtype == other.dtype, name
                    a, b = obj[()], other[()]
                    if obj.dtype.kind == "O":
                        a, b = text(a), text(b)
                    np.testing.assert_array_equal(a, b, err_msg=name)

            hf.visititems(compare)
            assert len(seen) >= 8
    finally:
        s.stop()


def test_cli_serve(tmp_path):
    s = Server(tmp_path / "b")
    s.stop()
    assert s.proc.returncode == 0          # SIGTERM stops it cleanly
    r = subprocess.run([sys.executable, "-m", "h5lake", "serve", "--root", str(tmp_path / "c")],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and "--password-file" in r.stderr
    r = subprocess.run([sys.executable, "-m", "h5lake", "serve", "--help"], capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 0 and "HSDS" in r.stdout and "--allow-noauth" in r.stdout


def test_concurrent_writers_lose_nothing(server, domain):
    """Writers on two servers updating rows of the same chunks at once."""
    from concurrent.futures import ThreadPoolExecutor
    from urllib.parse import quote
    other = Server(server.root)
    try:
        with hfile(server, domain, "w") as f:
            f.create_dataset("x", shape=(64, 8), dtype="i4", chunks=(16, 8))
            f.attrs["n"] = 0
            did, root = f["x"].id.id, f.id.id

        def write_row(i):
            srv = (server, other)[i % 2]
            row = np.full(8, i + 1, dtype="<i4").tobytes()
            status = srv.request("PUT", f"/datasets/{did}/value", row,
                                 params={"domain": domain, "select": f"[{i}:{i + 1},0:8]"},
                                 user=USER, headers={"Content-Type": "application/octet-stream"})[0]
            assert status == 200
            status = srv.request("PUT", f"/groups/{root}/attributes/a{i}",
                                 {"type": "H5T_STD_I32LE", "shape": "H5S_SCALAR", "value": i},
                                 params={"domain": domain}, user=USER)[0]
            assert status == 201

        with ThreadPoolExecutor(8) as ex:
            list(ex.map(write_row, range(64)))
        with local(server, domain) as f:
            np.testing.assert_array_equal(f["x"][...], np.repeat(np.arange(1, 65), 8).reshape(64, 8))
            assert len(f.attrs) == 65
    finally:
        other.stop()


def test_track_order(server, domain):
    with h5pyd.File(domain, "w", endpoint=server.endpoint, username=USER, password=PW,
                    track_order=True) as f:
        for name in ["z", "a", "m"]:
            f.create_group(name)
    with hfile(server, domain, "r") as f:
        assert list(f) == ["z", "a", "m"]
    with local(server, domain) as f:
        assert list(f) == ["z", "a", "m"]


def test_getobjs(server, domain):
    """`getobjs`: the whole tree in the domain request."""
    with hfile(server, domain, "w") as f:
        f.create_group("a/b")
        f["a"].attrs["x"] = 1
        f.create_dataset("a/d", data=np.arange(3))
    status, _, rsp = server.request("GET", "/", params={"domain": domain, "getobjs": 1}, user=USER)
    assert status == 200 and len(rsp["domain_objs"]) == 4
    with h5pyd.File(domain, "r", endpoint=server.endpoint, username=USER, password=PW,
                    getobjs=True) as f:
        assert f["a"].attrs["x"] == 1 and list(f["a"]) == ["b", "d"]
        np.testing.assert_array_equal(f["a/d"][...], np.arange(3))


def test_table_queries(server, domain):
    """h5pyd's Table.read_where runs as a server-side query."""
    dt = np.dtype([("temp", "<f8"), ("n", "<i4"), ("station", "S4")])
    rows = np.zeros(1000, dtype=dt)
    rows["temp"] = np.arange(1000) * 0.1
    rows["n"] = np.arange(1000) % 7
    rows["station"] = [b"KSEA" if i % 3 == 0 else b"KPDX" for i in range(1000)]
    with hfile(server, domain, "w") as f:
        f.create_table("t", data=rows, dtype=dt)
    with hfile(server, domain, "r") as f:
        t = f["t"]
        got = np.array(list(t.read_where("(temp > 50) & (n == 3)")), dtype=dt)
        want = rows[(rows["temp"] > 50) & (rows["n"] == 3)]
        np.testing.assert_array_equal(got, want)
        got = np.array(list(t.read_where("station == b'KSEA'", limit=5)), dtype=dt)
        np.testing.assert_array_equal(got, rows[rows["station"] == b"KSEA"][:5])
        did = t.id.id
    status, _, rsp = server.request("GET", f"/datasets/{did}/value", user=USER, params={
        "domain": domain, "query": "n == 6", "select": "[0:20]", "fields": "n"})
    assert status == 200 and rsp["index"] == [6, 13] and rsp["value"] == [[6], [6]]
    for bad in ["n ==", "nope > 1", "temp > 'x'", "((n > 1)"]:
        status = server.request("GET", f"/datasets/{did}/value", user=USER,
                                params={"domain": domain, "query": bad})[0]
        assert status == 400, bad
