"""``h5lake serve`` against a hostile client: requests that try to make the
server read files it must not, crash it, grow its memory past its budget,
hold its connections, leave data behind or leak what other users keep.

Every test asserts the answer's status, that the store is unchanged where
the request had to fail, and that the server is still up; the module ends
by checking that the server's peak resident size stayed within its
configured memory budget."""

import base64
import hashlib
import http.client
import json
import os
import socket
import time

import numpy as np
import pytest

import h5lake
from servers import USERS, Server, with_homes

ALICE, BOB = "test_user1", "test_user2"
BUDGET_MB = 320   # (a quarter of it for the chunk cache: 240 MB for requests, enough for a body of --max-request-size)
# What the server holds outside the budget: its caches of decoded chunks
# (1/16 of 256 MiB per open domain) and documents, and the transient parse
# of a 65,535-member compound type (about 170 MB today: to be budgeted).
UNBUDGETED_MB = 96


def snapshot(root):
    """Every file below ``root`` with a digest of its content."""
    out = {}
    for d, _dirs, files in os.walk(root):
        for name in files:
            p = os.path.join(d, name)
            with open(p, "rb") as f:
                out[os.path.relpath(p, root)] = hashlib.sha1(f.read()).hexdigest()
    return out


@pytest.fixture(scope="module")
def outside(tmp_path_factory):
    """A directory the operator allows links into, beside the store, with a
    file in it, a symlink out of it, and a secret outside it."""
    top = tmp_path_factory.mktemp("hostile")
    allowed = top / "shared"
    allowed.mkdir()
    (allowed / "ok.bin").write_bytes(bytes(range(32)))
    (top / "secret.txt").write_bytes(b"the secret of the host machine!\n")
    os.symlink(top / "secret.txt", allowed / "sneaky.bin")
    return top


@pytest.fixture(scope="module")
def server(outside):
    # the store and its password file sit below the allowed root: they
    # must stay refused all the same
    root = outside / "shared" / "bucket"
    s = Server(root, args=["--link-root", str(outside / "shared"),
                           "--memory-budget", f"{BUDGET_MB}M",
                           "--header-timeout", "1", "--idle-timeout", "2",
                           "--max-connections-per-client", "32"])
    assert s.request("PUT", "/", {"folder": 1}, params={"domain": "/home/"})[0] == 201
    for user in (ALICE, BOB):
        assert s.request("PUT", "/", {"folder": 1, "owner": user},
                         params={"domain": f"/home/{user}/"})[0] == 201
    s.baseline_kb = s.rss_kb()
    yield s
    s.stop()


@pytest.fixture(scope="module")
def closed_server(tmp_path_factory):
    """A server with the default link policy: no link roots at all."""
    top = tmp_path_factory.mktemp("closed")
    s = with_homes(top / "bucket", BOB)
    yield s
    s.stop()


_n = iter(range(10**6))


def new_domain(server, user):
    d = f"/home/{user}/h{next(_n)}.h5"
    st, _, body = server.request("PUT", "/", params={"domain": d}, user=user)
    assert st == 201, body
    return d, body["root"]


def new_dataset(server, domain, body, user=BOB):
    st, _, ds = server.request("POST", "/datasets", body, params={"domain": domain}, user=user)
    assert st == 201, ds
    return ds["id"]


def message(body):
    return body.get("message", "") if isinstance(body, dict) else str(body)


def refused_unchanged(server, method, path, body, params, user, statuses):
    """Sends a request that must fail; checks its status, that it wrote
    nothing and that the server is still up. Returns the answer's body."""
    before = snapshot(server.root)
    st, _, rsp = server.request(method, path, body, params=params, user=user)
    assert st in statuses, (st, rsp)
    assert snapshot(server.root) == before, "a refused request changed the store"
    assert server.alive()
    return rsp


def linked(file_uri, size=32):
    return {"type": "H5T_STD_U8LE", "shape": [size],
            "creationProperties": {"layout": {"class": "H5D_CONTIGUOUS_REF",
                                              "file_uri": file_uri, "offset": 0, "size": size}}}


# ---- 1. the server must not read what a client points it at ----------------

def test_links_to_the_password_file_and_system_files_are_refused(server, closed_server, outside):
    for s in (server, closed_server):
        d, _ = new_domain(s, BOB)
        for uri in (s.passwd, os.path.realpath(s.passwd), "file:///etc/passwd", "/etc/passwd",
                    "file://" + str(outside / "secret.txt"),
                    str(outside / "shared" / ".." / "secret.txt"),
                    str(outside / "shared" / "sneaky.bin"),
                    "s3://somebucket/key.h5", "http://127.0.0.1:1/x"):
            rsp = refused_unchanged(s, "POST", "/datasets", linked(uri), {"domain": d}, BOB,
                                    (400, 403))
            assert "secret" not in json.dumps(rsp) or "refused" in message(rsp)


def test_links_into_the_store_are_refused_even_below_an_allowed_root(server):
    d_alice, _ = new_domain(server, ALICE)
    st, _, ds = server.request("POST", "/datasets", {"type": "H5T_STD_U8LE", "shape": [32]},
                               params={"domain": d_alice}, user=ALICE)
    assert st == 201
    secret = bytes(range(100, 132))
    st, _, _ = server.request("PUT", f"/datasets/{ds['id']}/value", secret,
                              params={"domain": d_alice}, user=ALICE,
                              headers={"Content-Type": "application/octet-stream"})
    assert st == 200
    chunks = [os.path.join(dp, f) for dp, _, fs in os.walk(server.root) for f in fs
              if f == "0" and ds["id"][-6:] in dp]
    assert chunks, "alice's chunk file"
    d_bob, _ = new_domain(server, BOB)
    for uri in (chunks[0], os.path.join(server.root, ".domain.json")):
        refused_unchanged(server, "POST", "/datasets", linked(uri), {"domain": d_bob}, BOB, (403,))


def test_allowed_links_read_their_file(server, outside):
    d, _ = new_domain(server, BOB)
    st, _, ds = server.request("POST", "/datasets", linked(str(outside / "shared" / "ok.bin")),
                               params={"domain": d}, user=BOB)
    assert st == 201, ds
    st, _, v = server.request("GET", f"/datasets/{ds['id']}/value", params={"domain": d}, user=BOB)
    assert st == 200 and v["value"] == list(range(32))


def parquet_linked(uri, rows, size=32):
    return {"type": {"class": "H5T_COMPOUND", "fields": [{"name": "a", "type": "H5T_STD_I64LE"}]},
            "shape": [rows],
            "creationProperties": {
                "layout": {"class": "H5D_CHUNKED", "dims": [rows]},
                "h5lake": {"chunkFormat": "parquet", "parquetSource": {
                    "files": [{"uri": uri, "size": size, "rowGroups": [rows]}]}}}}


def test_parquet_links_follow_the_same_policy(server, closed_server, outside):
    """A dataset linked to Parquet files names paths too: outside the link
    roots it is refused before anything is stored; inside, it reads the
    file's rows."""
    pq = pytest.importorskip("pyarrow.parquet")
    pa = pytest.importorskip("pyarrow")
    for s in (server, closed_server):
        d, _ = new_domain(s, BOB)
        for uri in (s.passwd, "/etc/passwd", str(outside / "secret.txt"),
                    str(outside / "shared" / "sneaky.bin"), "s3://somebucket/t.parquet"):
            refused_unchanged(s, "POST", "/datasets", parquet_linked(uri, 4), {"domain": d}, BOB,
                              (400, 403))
    good = outside / "shared" / "t.parquet"
    pq.write_table(pa.table({"a": pa.array(range(10), pa.int64())}), good)
    d, _ = new_domain(server, BOB)
    body = parquet_linked(str(good), 10, size=os.path.getsize(good))
    # rows that are not the file's are refused too
    bad = json.loads(json.dumps(body))
    bad["shape"] = [11]
    refused_unchanged(server, "POST", "/datasets", bad, {"domain": d}, BOB, (400,))
    did = new_dataset(server, d, body)
    st, _, v = server.request("GET", f"/datasets/{did}/value", params={"domain": d}, user=BOB)
    assert st == 200 and [r[0] for r in v["value"]] == list(range(10)), v
    # and it is read-only
    st, _, rsp = server.request("PUT", f"/datasets/{did}/value", {"value": [[1]] * 10},
                                params={"domain": d}, user=BOB)
    assert 400 <= st < 500 and "read-only" in message(rsp), (st, rsp)
    d_closed, _ = new_domain(closed_server, BOB)
    refused_unchanged(closed_server, "POST", "/datasets", body, {"domain": d_closed}, BOB, (403,))


def test_a_stored_document_pointing_outside_the_policy_reads_as_an_error(server, outside):
    """A store written by someone else (here: the h5lake API, which trusts
    its own user) names the secret; served, it must not read it."""
    d, _ = new_domain(server, BOB)
    with h5lake.File(os.path.join(server.root, d.lstrip("/")), "r+") as f:
        raw = f._fs.raw
        did = raw.create_dataset('"H5T_STD_U8LE"', json.dumps({"class": "H5S_SIMPLE", "dims": [32]}),
                                 json.dumps(linked(str(outside / "secret.txt"))["creationProperties"]))
        raw.link_create(raw.root_id, "leak", json.dumps({"class": "H5L_TYPE_HARD", "id": did}))
        assert bytes(f["leak"][:31]) == b"the secret of the host machine!"
    st, _, v = server.request("GET", f"/datasets/{did}/value", params={"domain": d}, user=BOB)
    assert st == 403, v
    assert "secret of the host" not in json.dumps(v)


def test_a_store_in_a_bucket_links_to_local_files_only_when_the_user_opts_in(s3_root, outside):
    url = f"{s3_root}/linked.h5"
    secret = str(outside / "secret.txt")
    with h5lake.File(url, "w", allow_local_links=True) as f:
        raw = f._fs.raw
        did = raw.create_dataset('"H5T_STD_U8LE"', json.dumps({"class": "H5S_SIMPLE", "dims": [31]}),
                                 json.dumps(linked(secret, 31)["creationProperties"]))
        raw.link_create(raw.root_id, "leak", json.dumps({"class": "H5L_TYPE_HARD", "id": did}))
        f["ext"] = h5lake.ExternalLink(str(outside / "local.h5l"), "/")
    with h5lake.File(outside / "local.h5l", "w") as g:
        g["x"] = 1
    with h5lake.File(url, "r") as f:
        with pytest.raises(PermissionError, match="allow_local_links"):
            f["leak"][...]
        with pytest.raises(KeyError, match="allow_local_links"):
            f["ext"]
    with h5lake.File(url, "r", allow_local_links=True) as f:
        assert bytes(f["leak"][...]) == b"the secret of the host machine!"
        assert f["ext/x"][()] == 1
    # and creating such a link on a bucket store is refused up front
    with h5lake.File(url, "r+") as f:
        with pytest.raises(PermissionError):
            f._fs.raw.create_dataset('"H5T_STD_U8LE"',
                                     json.dumps({"class": "H5S_SIMPLE", "dims": [31]}),
                                     json.dumps(linked(secret, 31)["creationProperties"]))


# ---- 2. no request may crash the server ------------------------------------

def test_huge_ranks_and_element_sizes_are_refused_at_create(server):
    d, _ = new_domain(server, BOB)
    bad = [
        {"type": "H5T_STD_U8LE", "shape": [1] * 100_000},
        {"type": "H5T_STD_U8LE", "shape": [1] * 33},
        {"type": {"class": "H5T_STRING", "charSet": "H5T_CSET_ASCII", "strPad": "H5T_STR_NULLPAD",
                  "length": 2**62}, "shape": [2]},
        {"type": {"class": "H5T_ARRAY", "base": "H5T_STD_U8LE", "dims": [2**40, 2**40]},
         "shape": [1]},
        {"type": {"class": "H5T_ARRAY", "base": "H5T_STD_U8LE", "dims": [1 << 29]}, "shape": [1]},
        {"type": {"class": "H5T_OPAQUE", "size": 2**40}, "shape": [1]},
    ]
    for body in bad:
        rsp = refused_unchanged(server, "POST", "/datasets", body, {"domain": d}, BOB, (400,))
        assert "/" + os.path.basename(server.root) not in message(rsp)
    # attributes too
    st, _, root = server.request("GET", "/", params={"domain": d}, user=BOB)
    refused_unchanged(server, "PUT", f"/groups/{root['root']}/attributes/a",
                      {"type": "H5T_STD_U8LE", "shape": [1] * 1000}, {"domain": d}, BOB, (400,))
    refused_unchanged(server, "PUT", f"/groups/{root['root']}/attributes/a",
                      {"type": "H5T_STD_U8LE", "shape": [1 << 40]}, {"domain": d}, BOB, (400,))


def test_compound_member_limit_and_linear_time(server):
    d, _ = new_domain(server, BOB)
    fields = [{"name": f"f{i}", "type": "H5T_STD_U8LE"} for i in range(65_536)]
    refused_unchanged(server, "POST", "/datasets",
                      {"type": {"class": "H5T_COMPOUND", "fields": fields}, "shape": [1]},
                      {"domain": d}, BOB, (400,))
    t0 = time.time()
    st, _, ds = server.request("POST", "/datasets",
                               {"type": {"class": "H5T_COMPOUND", "fields": fields[:65_535]},
                                "shape": [2]}, params={"domain": d}, user=BOB)
    assert st == 201, ds
    st, _, v = server.request("GET", f"/datasets/{ds['id']}/value", params={"domain": d}, user=BOB,
                              headers={"Accept": "application/octet-stream"}, raw=True)
    assert st == 200 and len(v) == 2 * 65_535
    # quadratic time took minutes here; linear takes well under a second
    assert time.time() - t0 < 30


# ---- 3. memory follows configuration, not the client ----------------------------

def _send_partial(server, method, path, params, user, length, sent=b"", content_type="application/json"):
    """Sends headers announcing ``length`` bytes and only ``sent`` of them;
    returns the status the server answers with without waiting for more."""
    from urllib.parse import urlencode
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=15)
    conn.putrequest(method, path + "?" + urlencode(params))
    token = base64.b64encode(f"{user}:{USERS[user]}".encode()).decode()
    conn.putheader("Authorization", "Basic " + token)
    conn.putheader("Content-Type", content_type)
    conn.putheader("Content-Length", str(length))
    conn.endheaders()
    if sent:
        conn.send(sent)
    rsp = conn.getresponse()
    status, body = rsp.status, rsp.read()
    conn.close()
    return status, body


def test_bodies_are_authorised_before_they_are_read(server):
    d, root = new_domain(server, ALICE)
    ds = server.request("POST", "/datasets", {"type": "H5T_STD_U8LE", "shape": [8]},
                        params={"domain": d}, user=ALICE)[2]
    # bob has no rights on alice's domain: 403 comes back although the 100 MB
    # body never does
    status, body = _send_partial(server, "PUT", f"/datasets/{ds['id']}/value", {"domain": d},
                                 BOB, 100 << 20, b'{"value": [0,')
    assert status == 403, body
    status, body = _send_partial(server, "POST", "/datasets", {"domain": d}, BOB, 100 << 20, b"{")
    assert status == 403, body
    assert server.alive()


def test_huge_json_bodies_are_refused_by_element_count(server):
    d, _ = new_domain(server, BOB)
    did = new_dataset(server, d, {"type": "H5T_STD_U8LE", "shape": [50_000_000]})
    body = b'{"value": [' + b"0," * (50_000_000 - 1) + b"0]}"
    before = snapshot(server.root)
    st, _, rsp = server.request("PUT", f"/datasets/{did}/value", body, params={"domain": d},
                                user=BOB, headers={"Content-Type": "application/json"})
    assert st == 413, rsp
    assert "application/octet-stream" in message(rsp)
    assert snapshot(server.root) == before
    assert server.alive()


def test_json_answers_are_bounded_and_streamed(server):
    d, _ = new_domain(server, BOB)
    did = new_dataset(server, d, {"type": "H5T_STD_U8LE", "shape": [10_000_000]})
    st, _, rsp = server.request("GET", f"/datasets/{did}/value", params={"domain": d}, user=BOB)
    assert st == 413 and "application/octet-stream" in message(rsp), rsp
    # within the element limit, an answer is streamed (in pieces of rows)
    # and is right, here over a 2-D selection
    want = (np.arange(1_000_000) % 251).astype("u1")
    st, _, _ = server.request("PUT", f"/datasets/{did}/value", want.tobytes(),
                              params={"domain": d, "select": "[0:1000000]"}, user=BOB,
                              headers={"Content-Type": "application/octet-stream"})
    assert st == 200
    st, _, rsp = server.request("GET", f"/datasets/{did}/value",
                                params={"domain": d, "select": "[0:1000000]"}, user=BOB)
    assert st == 200
    np.testing.assert_array_equal(np.array(rsp["value"], dtype="u1"), want)
    did2 = new_dataset(server, d, {"type": "H5T_IEEE_F64LE", "shape": [1000, 900]})
    grid = np.arange(900_000, dtype="f8").reshape(1000, 900) / 7
    st, _, _ = server.request("PUT", f"/datasets/{did2}/value", grid.tobytes(), params={"domain": d},
                              user=BOB, headers={"Content-Type": "application/octet-stream"})
    assert st == 200
    st, _, rsp = server.request("GET", f"/datasets/{did2}/value",
                                params={"domain": d, "select": "[1:1000:3,5:900]"}, user=BOB)
    assert st == 200
    np.testing.assert_array_equal(np.array(rsp["value"]), grid[1:1000:3, 5:900])
    # elements are not all that costs: empty rows still make lists, and
    # one array element can hold millions of values
    for body in ({"type": "H5T_STD_U8LE", "shape": [2**40, 0]},
                 {"type": {"class": "H5T_ARRAY", "base": "H5T_STD_U8LE", "dims": [4 << 20]},
                  "shape": [2]}):
        st, _, ds2 = server.request("POST", "/datasets", body, params={"domain": d}, user=BOB)
        assert st == 201, ds2
        st, _, rsp = server.request("GET", f"/datasets/{ds2['id']}/value", params={"domain": d},
                                    user=BOB)
        assert st == 413, rsp
    # points given in the body count too
    pts = np.arange(0, 10_000_000, 4, dtype="<u8").tobytes()
    st, _, rsp = server.request("POST", f"/datasets/{did}/value", pts, params={"domain": d},
                                user=BOB, headers={"Content-Type": "application/octet-stream"})
    assert st == 413, rsp
    assert server.alive()


def test_a_request_bigger_than_the_whole_budget_is_refused(tmp_path):
    s = Server(tmp_path / "bucket", args=["--memory-budget", "64M"])
    try:
        assert s.request("PUT", "/", {"folder": 1}, params={"domain": "/home/"})[0] == 201
        d = "/home/big.h5"
        assert s.request("PUT", "/", params={"domain": d})[0] == 201
        # 40 MiB elements are allowed (under the 128 MiB chunk limit), but
        # streaming them takes two at a time: more than the whole budget
        st, _, ds = s.request("POST", "/datasets",
                              {"type": {"class": "H5T_OPAQUE", "size": 40 << 20}, "shape": [3]},
                              params={"domain": d})
        assert st == 201, ds
        st, _, rsp = s.request("GET", f"/datasets/{ds['id']}/value", params={"domain": d},
                               headers={"Accept": "application/octet-stream"})
        assert st == 413 and "--memory-budget" in message(rsp), rsp
        # as is a JSON body that could parse into more than the budget: the
        # answer comes before the body is sent
        st, rsp = _send_partial(s, "PUT", f"/datasets/{ds['id']}/value", {"domain": d}, "admin",
                                40 << 20, b'{"value": [0,')
        assert st == 413 and b"--memory-budget" in rsp, rsp
        # one element at a time fits
        st, _, v = s.request("GET", f"/datasets/{ds['id']}/value",
                             params={"domain": d, "select": "[1:2]"},
                             headers={"Accept": "application/octet-stream"}, raw=True)
        assert st == 200 and len(v) == 40 << 20
        assert s.alive()
        assert (s.rss_kb("VmHWM")) / 1024 < 64 + 100   # the budget, and the server's own size
    finally:
        s.stop()


def _budgeted_domain(tmp_path, budget):
    """A server with ``--memory-budget budget`` and a new domain in it:
    ``(server, domain)``."""
    s = Server(tmp_path / "bucket", args=["--memory-budget", budget])
    assert s.request("PUT", "/", {"folder": 1}, params={"domain": "/home/"})[0] == 201
    d = "/home/t.h5"
    assert s.request("PUT", "/", params={"domain": d})[0] == 201
    return s, d


def test_decoding_big_chunks_is_held_to_the_budget(tmp_path):
    """A read or write of a few bytes of a compressed chunk holds the whole
    chunk decoded (and, writing, encoded again): that memory is reserved
    from the budget, so a chunk bigger than the budget allows is refused
    (413) instead of being decoded, and one that fits still reads."""
    s, d = _budgeted_domain(tmp_path, "64M")
    try:
        # written through the Python API: a 96 MiB chunk, deflated to ~100 KB
        with h5lake.File(os.path.join(s.root, d.lstrip("/")), "r+") as f:
            f.create_dataset("big", data=np.arange(96 << 20, dtype="u1"),
                             chunks=(96 << 20,), compression="gzip")
            f.create_dataset("small", data=np.arange(1 << 20, dtype="u1"),
                             chunks=(1 << 20,), compression="gzip")
        ids = {}
        for name in ("big", "small"):
            st, _, link = s.request("GET", "/groups/" + s.request(
                "GET", "/", params={"domain": d})[2]["root"] + f"/links/{name}",
                params={"domain": d})
            assert st == 200, link
            ids[name] = link["link"]["id"]
        base = s.rss_kb("VmHWM")
        for method, body, params in (
                ("GET", None, {"select": "[5:9]"}),
                ("PUT", {"value": [1, 2, 3, 4]}, {"select": "[5:9]"}),
                ("POST", {"points": [5, 6]}, {})):
            st, _, rsp = s.request(method, f"/datasets/{ids['big']}/value", body,
                                   params={"domain": d, **params})
            assert st == 413 and "--memory-budget" in message(rsp), (method, st, rsp)
        # (Before, each of these held the 96 MiB chunk decoded, and the
        # write its copy too.)
        assert (s.rss_kb("VmHWM") - base) / 1024 < 48, (s.rss_kb("VmHWM") - base) / 1024
        # nothing was written
        st, _, rsp = s.request("GET", f"/datasets/{ids['small']}/value",
                               params={"domain": d, "select": "[5:9]"})
        assert st == 200 and rsp["value"] == [5, 6, 7, 8], rsp
        with h5lake.File(os.path.join(s.root, d.lstrip("/")), "r") as f:
            assert list(f["big"][5:9]) == [5, 6, 7, 8]
        st, _, rsp = s.request("PUT", f"/datasets/{ids['small']}/value", {"value": [9, 9]},
                               params={"domain": d, "select": "[0:2]"})
        assert st == 200, rsp
        assert s.alive()
    finally:
        s.stop()


def test_arrow_answers_of_text_heavy_tables_hold_what_their_rows_take(tmp_path):
    """An Arrow answer of a table with variable-length members was read in
    parts counted at 64 bytes a row: 96 rows of 1 MiB strings came in one
    part, held about 2.5 times over, under a budget of 128 MiB. Parts are
    now whole chunks, as many as the rows are seen to fit in a slab."""
    pa = pytest.importorskip("pyarrow")
    s, d = _budgeted_domain(tmp_path, "128M")
    try:
        n, size = 96, 1 << 20
        texts = [chr(ord("a") + i % 26) * size for i in range(n)]
        with h5lake.File(os.path.join(s.root, d.lstrip("/")), "r+") as f:
            f.create_dataset("t", data=pa.table({"i": pa.array(range(n), pa.int32()),
                                                  "text": pa.array(texts)}),
                             chunks=(8,), layout="columnar")
        root = s.request("GET", "/", params={"domain": d})[2]["root"]
        did = s.request("GET", f"/groups/{root}/links/t", params={"domain": d})[2]["link"]["id"]
        base = s.rss_kb("VmHWM")
        st, hdrs, body = s.request("GET", f"/datasets/{did}/value", params={"domain": d},
                                   headers={"Accept": "application/vnd.apache.arrow.stream"},
                                   raw=True)
        assert st == 200, body[:300]
        got = pa.ipc.open_stream(body).read_all()
        assert got["i"].to_pylist() == list(range(n))
        assert got["text"].to_pylist() == texts
        del got, body
        # The budget, and what the allocator's threads keep of freed parts
        # (as the module's other bounds allow). Before: 370 MB more than idle.
        assert (s.rss_kb("VmHWM") - base) / 1024 < 128 + 100, (s.rss_kb("VmHWM") - base) / 1024
        assert s.alive()
    finally:
        s.stop()


def test_points_in_a_body_reserve_for_their_own_chunks_only(tmp_path):
    """A POST or PUT of points named in its body reserves the chunks those
    points reach, not also those of the whole dataset (the selection before
    the body is read): before, eight points over a big compressed dataset
    waited 60 s on the request's own reservation, then got 503."""
    s, d = _budgeted_domain(tmp_path, "320M")
    try:
        with h5lake.File(os.path.join(s.root, d.lstrip("/")), "r+") as f:
            f.create_dataset("g", shape=(80 << 20,), dtype="f8", chunks=(1 << 20,),
                             compression="gzip", fillvalue=2.5)
        root = s.request("GET", "/", params={"domain": d})[2]["root"]
        did = s.request("GET", f"/groups/{root}/links/g", params={"domain": d})[2]["link"]["id"]
        points = [k << 20 for k in range(8)]
        t0 = time.time()
        st, _, rsp = s.request("PUT", f"/datasets/{did}/value",
                               {"points": points, "value": [1.0] * 8}, params={"domain": d})
        assert st == 200, rsp
        st, _, rsp = s.request("POST", f"/datasets/{did}/value", {"points": points + [5]},
                               params={"domain": d})
        assert st == 200 and rsp["value"] == [1.0] * 8 + [2.5], rsp
        assert time.time() - t0 < 30
    finally:
        s.stop()


def test_a_write_reaching_too_many_chunks_is_refused_before_anything_is_written(server):
    """A few bytes to a dataset of one-byte chunks would be one stored
    object (and a statistics record) per byte: a write reaching more
    chunks than --max-chunks-per-write (10,000 by default) is refused."""
    d, _ = new_domain(server, BOB)
    ds = new_dataset(server, d, {"type": "H5T_STD_U8LE", "shape": [2**40],
                                 "creationProperties": {"layout": {"class": "H5D_CHUNKED",
                                                                   "dims": [1]}}})
    path, params = f"/datasets/{ds}/value", {"domain": d, "select": "[0:20000]"}
    before = snapshot(server.root)
    # (Refused before the body is read: the answer comes as it is sent.)
    st, rsp = _send_partial(server, "PUT", path, params, BOB, 20000,
                            content_type="application/octet-stream")
    assert st == 413 and b"--max-chunks-per-write" in rsp, (st, rsp)
    st, _, rsp = server.request("PUT", path, {"points": list(range(0, 40000, 2)),
                                              "value": [1] * 20000},
                                params={"domain": d}, user=BOB)
    assert st == 413, (st, rsp)
    assert snapshot(server.root) == before
    # (Strided over chunks: each index its own chunk.)
    st, rsp = _send_partial(server, "PUT", path, {"domain": d, "select": "[0:100010:10]"}, BOB,
                            10001, content_type="application/octet-stream")
    assert st == 413, (st, rsp)
    st, _, _ = server.request("PUT", path, bytes(100),
                              params={"domain": d, "select": "[0:100]"}, user=BOB,
                              headers={"Content-Type": "application/octet-stream"})
    assert st == 200
    # An append reaching too many chunks leaves the extent as it was.
    grow = new_dataset(server, d, {"type": "H5T_STD_U8LE", "shape": [5], "maxdims": [0],
                                   "creationProperties": {"layout": {"class": "H5D_CHUNKED",
                                                                     "dims": [1]}}})
    st, rsp = _send_partial(server, "PUT", f"/datasets/{grow}/value",
                            {"domain": d, "append": 20000}, BOB, 20000,
                            content_type="application/octet-stream")
    assert st == 413 and b"--max-chunks-per-write" in rsp, (st, rsp)
    st, _, got = server.request("GET", f"/datasets/{grow}", params={"domain": d}, user=BOB)
    assert got["shape"]["dims"] == [5], got


def _budgeted_server_with_tiny_chunks(tmp_path, budget, n, props):
    """A server with ``--memory-budget budget`` and a domain holding a
    dataset of ``n`` one-byte chunks (creation properties ``props`` too):
    ``(server, domain, dataset document)``."""
    s, d = _budgeted_domain(tmp_path, budget)
    st, _, ds = s.request("POST", "/datasets", {
        "type": "H5T_STD_U8LE", "shape": [n],
        "creationProperties": {"layout": {"class": "H5D_CHUNKED", "dims": [1]}, **props}},
        params={"domain": d})
    assert st == 201, ds
    return s, d, ds


def test_statistics_of_many_chunks_are_held_to_the_budget(tmp_path):
    """GET /datasets/<id>/stats reserves the memory of its records and
    answer before it computes them: refused when they cannot fit."""
    s, d, ds = _budgeted_server_with_tiny_chunks(tmp_path, "8M", 8000, {})
    try:
        for start in range(0, 8000, 4000):
            st, _, _ = s.request("PUT", f"/datasets/{ds['id']}/value", bytes(range(250)) * 16,
                                 params={"domain": d, "select": f"[{start}:{start + 4000}]"},
                                 headers={"Content-Type": "application/octet-stream"})
            assert st == 200
        st, _, rsp = s.request("GET", f"/datasets/{ds['id']}/stats", params={"domain": d})
        assert st == 413 and "--memory-budget" in message(rsp), (st, rsp)
        st, _, about = s.request("GET", "/", params={"domain": d, "verbose": 1})
        assert st == 200 and about["num_chunks"] == 8000, about    # records are not chunks
        assert about["allocated_bytes"] == 8000 and about["metadata_bytes"] > 0
        assert s.alive()
    finally:
        s.stop()


def test_reads_over_many_tiny_chunks_hold_a_bounded_plan(tmp_path):
    """The engine plans each chunk a read reaches: a binary answer over a
    million one-byte chunks is read a bounded number of chunks at a time,
    and a JSON answer reserves its plan from the budget."""
    s, d, ds = _budgeted_server_with_tiny_chunks(tmp_path, "64M", 1_000_000, {"fillValue": 7})
    try:
        s.request("PUT", f"/datasets/{ds['id']}/value", bytes([1, 2, 3]),
                  params={"domain": d, "select": "[0:3]"},
                  headers={"Content-Type": "application/octet-stream"})
        base = s.rss_kb("VmHWM")
        st, _, v = s.request("GET", f"/datasets/{ds['id']}/value", params={"domain": d},
                             headers={"Accept": "application/octet-stream"}, raw=True)
        assert st == 200 and len(v) == 1_000_000 and v[:4] == bytes([1, 2, 3, 7])
        # (Planned whole, as before, this read held about 95 MB more.)
        assert (s.rss_kb("VmHWM") - base) / 1024 < 40
        assert s.alive()
    finally:
        s.stop()


def test_deletions_of_long_names_are_still_answered_410(server):
    """Deletions are remembered as fixed-size digests (so long names no
    longer grow the server's memory): 410 for what was deleted, 404 for
    what never was, as before."""
    d, root = new_domain(server, BOB)
    name = "n" * 60_000
    for _ in range(2):
        st, _, rsp = server.request("PUT", f"/groups/{root}/links/{name}",
                                    {"h5path": "/nowhere"}, params={"domain": d}, user=BOB)
        assert st == 201, rsp
        st, _, _ = server.request("DELETE", f"/groups/{root}/links/{name}", params={"domain": d},
                                  user=BOB)
        assert st == 200
    st, _, _ = server.request("GET", f"/groups/{root}/links/{name}", params={"domain": d},
                              user=BOB)
    assert st == 410
    st, _, _ = server.request("GET", f"/groups/{root}/links/other", params={"domain": d},
                              user=BOB)
    assert st == 404


# ---- 5. connections time out ------------------------------------------------------

def test_idle_and_slow_connections_are_closed(server):
    socks = []
    for partial in (b"", b"GET /about HTTP/1.1\r\nHost: x\r\n"):
        s = socket.create_connection(("127.0.0.1", server.port), timeout=10)
        s.sendall(partial)
        socks.append(s)
    t0 = time.time()
    for s in socks:
        try:
            data = s.recv(1024)
        except ConnectionResetError:
            data = b""
        # closed (perhaps after a 408), not held open
        assert data == b"" or data.startswith(b"HTTP/1.1 408"), data
        s.close()
    assert time.time() - t0 < 8
    assert server.alive()


def test_connections_per_client_are_capped(server):
    socks = [socket.create_connection(("127.0.0.1", server.port), timeout=10) for _ in range(40)]
    try:
        refused = 0
        for s in socks[32:]:
            try:
                data = s.recv(1024)
                refused += data == b"" or b" 503 " in data.split(b"\r\n")[0]
            except (ConnectionResetError, socket.timeout):
                refused += 1
        assert refused == 8
    finally:
        for s in socks:
            s.close()
    time.sleep(0.5)
    assert server.alive()


# ---- 6. a failed request leaves nothing behind -----------------------------------

def test_failed_creates_leave_no_orphans(server):
    d, root = new_domain(server, BOB)
    other, other_root = new_domain(server, ALICE)
    for body, statuses in (({"link": {"id": root, "name": "q/r"}}, (400,)),
                           ({"h5path": "../../x"}, (400, 404)),
                           ({"link": {"id": other_root, "name": "x"}}, (400, 404)),
                           ({"link": {"id": "g-nonsense", "name": "x"}}, (400, 404))):
        refused_unchanged(server, "POST", "/groups", body, {"domain": d}, BOB, statuses)
    # a batch whose last item fails makes none of its objects
    refused_unchanged(server, "POST", "/groups",
                      [{"link": {"id": root, "name": "a"}}, {"link": {"id": root, "name": "b/c"}}],
                      {"domain": d}, BOB, (400,))
    refused_unchanged(server, "POST", "/groups",
                      [{"link": {"id": root, "name": "a"}}, {"h5path": "/nowhere/x"}],
                      {"domain": d}, BOB, (404,))
    refused_unchanged(server, "POST", "/datasets",
                      {"type": "H5T_STD_U8LE", "shape": [4], "link": {"id": root, "name": "a/b"}},
                      {"domain": d}, BOB, (400,))


# ---- 7. private domains stay private ---------------------------------------------

def test_listing_a_folder_shows_only_what_the_reader_may_read(server):
    d, root = new_domain(server, ALICE)
    st, _, rsp = server.request("GET", "/domains", params={"domain": f"/home/{ALICE}/", "verbose": 1},
                                user=BOB)
    assert st == 200
    mine = [x for x in rsp["domains"] if x["name"] == d]
    # (Whose it is shows, as HSDS lists it; what it holds does not.)
    assert mine and "root" not in mine[0] and "num_datasets" not in mine[0], mine
    assert root not in json.dumps(rsp)
    st, _, rsp = server.request("GET", "/domains", params={"domain": f"/home/{ALICE}/", "verbose": 1},
                                user=ALICE)
    assert root in json.dumps(rsp)


def test_hard_links_to_another_domains_objects_are_refused(server):
    d_a, root_a = new_domain(server, ALICE)
    d_b, root_b = new_domain(server, BOB)
    refused_unchanged(server, "PUT", f"/groups/{root_b}/links/x", {"id": root_a}, {"domain": d_b},
                      BOB, (400,))


# ---- 8. the right codes, and no host details in messages --------------------------

def test_codes_and_messages(server):
    d, root = new_domain(server, BOB)
    long = f"/home/{BOB}/" + "x" * 300
    rsp = refused_unchanged(server, "PUT", "/", None, {"domain": long}, BOB, (400,))
    assert server.root not in message(rsp)
    for filters in ([{"class": "H5Z_FILTER_NOSUCH", "id": 31999}],
                    [{"class": "H5Z_FILTER_DEFLATE", "id": 1, "level": 99}]):
        refused_unchanged(server, "POST", "/datasets",
                          {"type": "H5T_STD_U8LE", "shape": [10],
                           "creationProperties": {"filters": filters,
                                                  "layout": {"class": "H5D_CHUNKED", "dims": [5]}}},
                          {"domain": d}, BOB, (400,))
    # a root id already in use is named as such, not as an existing domain
    st, _, rsp = server.request("PUT", "/", {"root_id": root}, params={"domain": d + "-twin"},
                                user=BOB)
    assert st == 409 and "root id" in message(rsp) and d not in message(rsp), rsp
    # names that are not UTF-8 are refused, not read lossily
    before = snapshot(server.root)
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=15)
    token = base64.b64encode(f"{BOB}:{USERS[BOB]}".encode()).decode()
    conn.request("PUT", f"/?domain=%2Fhome%2F{BOB}%2Fbad%FF.h5", headers={"Authorization": "Basic " + token})
    assert conn.getresponse().status == 400
    conn.close()
    assert snapshot(server.root) == before
    # bad client JSON is a 400 that says so
    st, _, rsp = server.request("POST", "/datasets", b'{"type": ', params={"domain": d}, user=BOB,
                                headers={"Content-Type": "application/json"})
    assert st == 400 and "corrupt" not in message(rsp)


# ---- found by review: more ways one request could bring the server down ------

def test_chunk_table_cycles_and_huge_linked_sizes(server, outside):
    d, _ = new_domain(server, BOB)
    ok_file = str(outside / "shared" / "ok.bin")
    table_type = {"class": "H5T_COMPOUND", "fields": [{"name": "offset", "type": "H5T_STD_I64LE"},
                                                       {"name": "size", "type": "H5T_STD_I32LE"}]}
    table = new_dataset(server, d, {"type": table_type, "shape": [1]})
    linked = new_dataset(server, d, {"type": "H5T_STD_U8LE", "shape": [32], "creationProperties": {
        "layout": {"class": "H5D_CHUNKED_REF_INDIRECT", "file_uri": ok_file, "dims": [32],
                   "chunk_table": table}}})
    assert server.request("DELETE", f"/datasets/{table}", params={"domain": d}, user=BOB)[0] == 200
    # the table's id again, now a linked dataset whose table is the first:
    # reading either would read the other without end
    refused_unchanged(server, "POST", "/datasets", {
        "id": table, "type": table_type, "shape": [1], "creationProperties": {
            "layout": {"class": "H5D_CHUNKED_REF_INDIRECT", "file_uri": ok_file, "dims": [1],
                       "chunk_table": linked}}}, {"domain": d}, BOB, (400,))
    st, _, _ = server.request("GET", f"/datasets/{linked}/value", params={"domain": d}, user=BOB)
    assert st in (404, 500) and server.alive()
    # Entries naming more bytes than a chunk of the dataset can take: the
    # server would allocate them (8 of 1000 MiB for 320 bytes of values).
    for size in (2**45, 1000 << 20, 2 << 20):
        rsp = refused_unchanged(server, "POST", "/datasets", {
            "type": "H5T_STD_I32LE", "shape": [80], "creationProperties": {"layout": {
                "class": "H5D_CHUNKED_REF", "file_uri": ok_file, "dims": [10],
                "chunks": {str(i): [0, size] for i in range(8)}}}}, {"domain": d}, BOB, (400,))
        assert "at most" in message(rsp), rsp
    rsp = refused_unchanged(server, "POST", "/datasets", {
        "type": "H5T_STD_I32LE", "shape": [10], "creationProperties": {"layout": {
            "class": "H5D_CHUNKED_REF", "file_uri": ok_file, "dims": [10],
            "chunks": {"0": [2**64 - 10, 40]}}}}, {"domain": d}, BOB, (400,))
    assert "past the end" in message(rsp), rsp
    # ... or in a chunk table the client wrote: refused when read.
    table = new_dataset(server, d, {"type": table_type, "shape": [8]})
    rec = np.zeros(8, [("offset", "<i8"), ("size", "<i4")])
    rec["size"] = 1000 << 20
    assert server.request("PUT", f"/datasets/{table}/value", rec.tobytes(), params={"domain": d},
                          user=BOB, headers={"Content-Type": "application/octet-stream"})[0] == 200
    claims = new_dataset(server, d, {"type": "H5T_STD_I32LE", "shape": [80], "creationProperties": {
        "layout": {"class": "H5D_CHUNKED_REF_INDIRECT", "file_uri": ok_file, "dims": [10],
                   "chunk_table": table}}})
    before = server.rss_kb()
    st, _, rsp = server.request("GET", f"/datasets/{claims}/value", params={"domain": d}, user=BOB)
    assert st == 500 and server.alive(), rsp
    # A size a chunk can take, past the end of the 32-byte file: refused
    # before it is allocated.
    short = new_dataset(server, d, {"type": "H5T_STD_U8LE", "shape": [60000], "creationProperties": {
        "layout": {"class": "H5D_CHUNKED_REF", "file_uri": ok_file, "dims": [60000],
                   "chunks": {"0": [0, 60000]}}}})
    st, _, rsp = server.request("GET", f"/datasets/{short}/value", params={"domain": d}, user=BOB)
    assert st == 500 and server.alive(), rsp
    assert server.rss_kb() - before < 64 << 10


def test_writes_that_would_expand_past_the_budget(server):
    d, _ = new_domain(server, BOB)
    # one element broadcast over a single row of 2^40 elements
    row = new_dataset(server, d, {"type": "H5T_STD_U8LE", "shape": [1, 2**40],
                                  "creationProperties": {"layout": {"class": "H5D_CHUNKED",
                                                                    "dims": [1, 2**20]}}})
    refused_unchanged(server, "PUT", f"/datasets/{row}/value", {"value": 5},
                      {"domain": d, "select": f"[0:1,0:{2**40}]", "element_count": 1}, BOB, (413,))
    # writing one small field of elements whose other field is 100 MB each
    big = {"class": "H5T_COMPOUND", "fields": [
        {"name": "a", "type": "H5T_STD_U8LE"},
        {"name": "b", "type": {"class": "H5T_ARRAY", "base": "H5T_STD_U8LE", "dims": [10**8]}}]}
    rec = new_dataset(server, d, {"type": big, "shape": [2**23],
                                  "creationProperties": {"layout": {"class": "H5D_CHUNKED",
                                                                    "dims": [1]}}})
    before = snapshot(server.root)
    # (Refused before its body is read: the answer comes as it is sent.)
    st, rsp = _send_partial(server, "PUT", f"/datasets/{rec}/value",
                            {"domain": d, "fields": "a", "select": f"[0:{2**23}]"}, BOB, 2**23,
                            content_type="application/octet-stream")
    assert st == 413, rsp
    assert snapshot(server.root) == before and server.alive()


def test_a_linked_domain_needs_the_right_to_change_and_delete_its_target(server):
    """A linked domain's owner can change and delete the objects it shares:
    read access to the target is not enough (HSDS asks for delete), and
    deleting a linked domain leaves the objects to the target."""
    d, root = new_domain(server, ALICE)
    data = new_dataset(server, d, {"type": "H5T_STD_I32LE", "shape": [4], "value": [1, 2, 3, 4]},
                       user=ALICE)
    assert server.request("PUT", f"/acls/{BOB}", {"read": True}, params={"domain": d},
                          user=ALICE)[0] == 201
    mine = f"/home/{BOB}/link{next(_n)}.h5"
    refused_unchanged(server, "PUT", "/", {"linked_domain": d}, {"domain": mine}, BOB, (403,))
    # Alice links her own domain, then deletes the link: her data stays.
    alias = f"/home/{ALICE}/alias{next(_n)}.h5"
    assert server.request("PUT", "/", {"linked_domain": d}, params={"domain": alias},
                          user=ALICE)[0] == 201
    assert server.request("DELETE", "/", params={"domain": alias}, user=ALICE)[0] == 200
    st, _, body = server.request("GET", f"/datasets/{data}/value", params={"domain": d}, user=ALICE)
    assert st == 200 and body["value"] == [1, 2, 3, 4]


def test_bodies_nested_past_what_documents_can_hold_are_refused(server):
    d, root = new_domain(server, BOB)
    deep = "[" * 120 + "]" * 120
    body = ('{"type": {"class": "H5T_INTEGER", "base": "H5T_STD_I32LE", "junk": %s}, '
            '"shape": [1], "value": [1]}' % deep).encode()
    before = snapshot(server.root)
    st, _, rsp = server.request("PUT", f"/groups/{root}/attributes/evil", body, params={"domain": d},
                                user=BOB, headers={"Content-Type": "application/json"})
    assert st == 400 and "nested" in message(rsp), rsp
    assert snapshot(server.root) == before
    assert server.request("GET", f"/groups/{root}", params={"domain": d}, user=BOB)[0] == 200
    st, hdrs, rsp = server.request("PATCH", f"/groups/{root}", params={"domain": d}, user=BOB)
    assert st == 405 and "PATCH" in message(rsp), rsp


def test_queries_and_arrow_answers_stay_within_the_budget(server):
    d, _ = new_domain(server, BOB)
    n = 8 << 20
    big = new_dataset(server, d, {"type": "H5T_STD_U8LE", "shape": [n], "creationProperties": {
        "layout": {"class": "H5D_CHUNKED", "dims": [n]}}})
    # (Values all over 0..255: no chunk can be skipped by its statistics.)
    st, _, rsp = server.request("PUT", f"/datasets/{big}/value",
                                np.random.default_rng(0).integers(0, 256, n, dtype=np.uint8).tobytes(),
                                params={"domain": d},
                                user=BOB, headers={"Content-Type": "application/octet-stream"})
    assert st == 200, rsp
    # Nested arithmetic over one 8 MiB chunk: evaluated a block of rows at
    # a time, not a column of 16-byte values per operator for the chunk.
    st, _, rsp = server.request("GET", f"/datasets/{big}/value", params={
        "domain": d, "query": "value + (value + (value + (value + value))) == 1001"}, user=BOB)
    assert st == 200 and rsp["value"] == [], rsp
    # An Arrow answer of a table of 2^44 rows: refused, not planned.
    table = new_dataset(server, d, {
        "type": {"class": "H5T_COMPOUND", "fields": [{"name": "x", "type": "H5T_IEEE_F64LE"}]},
        "shape": [2**44], "creationProperties": {"layout": {"class": "H5D_CHUNKED", "dims": [2**20]},
                                                 "h5lake": {"chunkFormat": "parquet"}}})
    st, _, rsp = server.request("GET", f"/datasets/{table}/value", params={"domain": d}, user=BOB,
                                headers={"Accept": "application/vnd.apache.arrow.stream"})
    assert st == 413 and server.alive(), rsp
    # (It was a columnar table, answered from its columns, the path tested.)
    docs = [os.path.join(r, f) for r, _, fs in os.walk(server.root) for f in fs
            if table.split("-", 1)[1][:8] in r and f.endswith(".json")]
    assert any('"parquet"' in open(p).read() for p in docs), docs


def test_variable_length_reads_stop_at_what_the_budget_allows(server):
    """Elements' sizes are known only as they are read: a read of 160
    strings of 2 MiB stops at its share of the budget (413), instead of
    holding them all first (the module's last test checks the peak)."""
    import struct
    d, root = new_domain(server, BOB)
    t = {"class": "H5T_STRING", "charSet": "H5T_CSET_UTF8", "length": "H5T_VARIABLE",
         "strPad": "H5T_STR_NULLTERM"}
    n, size = 160, 2 << 20
    did = new_dataset(server, d, {"type": t, "shape": [n], "creationProperties": {
        "layout": {"class": "H5D_CHUNKED", "dims": [1]}}})
    one = struct.pack("<I", size) + b"x" * size
    for i in range(n):
        st, _, rsp = server.request("PUT", f"/datasets/{did}/value", one,
                                    params={"domain": d, "select": f"[{i}:{i + 1}]"}, user=BOB,
                                    headers={"Content-Type": "application/octet-stream"})
        assert st == 200, rsp
    st, _, rsp = server.request("GET", f"/datasets/{did}/value", params={"domain": d}, user=BOB)
    assert st == 413 and "in parts" in message(rsp), rsp
    st, _, rsp = server.request("GET", f"/datasets/{did}/value", params={"domain": d, "select": "[0:2]"},
                                user=BOB)
    assert st == 200 and [len(v) for v in rsp["value"]] == [size, size]


def test_variable_length_fill_values_and_chunks_are_held_to_a_chunk_s_size(server):
    """A chunk never written reads as its fill value once per element: a
    big variable-length fill over big chunks is refused at create (one
    read of it took 6.5 GB and aborted the server)."""
    d, _ = new_domain(server, BOB)
    seq = {"class": "H5T_VLEN", "base": "H5T_STD_I64LE"}
    st, _, rsp = server.request("POST", "/datasets", {
        "type": seq, "shape": [4 << 13], "creationProperties": {
            "layout": {"class": "H5D_CHUNKED", "dims": [8192]}, "fillValue": [0] * 100_000}},
        params={"domain": d}, user=BOB)
    assert st in (400, 413) and "fill value" in message(rsp) and server.alive(), rsp
    # a small fill over the same chunks is fine, and reads as itself
    did = new_dataset(server, d, {"type": seq, "shape": [4 << 13], "creationProperties": {
        "layout": {"class": "H5D_CHUNKED", "dims": [8192]}, "fillValue": [7, 8]}})
    st, _, rsp = server.request("GET", f"/datasets/{did}/value",
                                params={"domain": d, "select": "[0:2]"}, user=BOB)
    assert st == 200 and rsp["value"] == [[7, 8], [7, 8]], rsp


def test_a_chunk_of_variable_length_values_stops_growing_at_its_limit(tmp_path):
    """Each read or write of a chunk holds it whole: writes that would
    grow a chunk of strings past 128 MiB are refused (413), and it still
    reads. (A server of its own: the chunk held is outside the budget.)"""
    import struct
    s = Server(tmp_path / "bucket")
    try:
        assert s.request("PUT", "/", {"folder": 1}, params={"domain": "/home/"})[0] == 201
        d = "/home/v.h5"
        assert s.request("PUT", "/", params={"domain": d})[0] == 201
        t = {"class": "H5T_STRING", "charSet": "H5T_CSET_ASCII", "length": "H5T_VARIABLE",
             "strPad": "H5T_STR_NULLTERM"}
        st, _, ds = s.request("POST", "/datasets", {"type": t, "shape": [64], "creationProperties": {
            "layout": {"class": "H5D_CHUNKED", "dims": [64]}}}, params={"domain": d})
        assert st == 201, ds
        size = 40 << 20
        one = struct.pack("<I", size) + b"x" * size
        answers = []
        for i in range(4):
            st, _, rsp = s.request("PUT", f"/datasets/{ds['id']}/value", one,
                                   params={"domain": d, "select": f"[{i}:{i + 1}]"},
                                   headers={"Content-Type": "application/octet-stream"})
            answers.append(st)
        assert answers == [200, 200, 200, 413], answers
        st, _, rsp = s.request("GET", f"/datasets/{ds['id']}/value",
                               params={"domain": d, "select": "[3:5]"})
        assert st == 200 and rsp["value"] == ["", ""], rsp
    finally:
        s.stop()


def test_a_query_with_a_limit_over_many_chunks_stops_at_its_first_matches(server):
    """With Limit, a query of an N-D dataset reads chunks in C order and
    stops once no chunk left can hold an earlier match; it keeps no more
    than the answer (a 2^40-chunk grid grew without bound before)."""
    d, _ = new_domain(server, BOB)
    did = new_dataset(server, d, {"type": "H5T_STD_U8LE", "shape": [1 << 20, 1 << 20],
                                  "creationProperties": {"layout": {"class": "H5D_CHUNKED",
                                                                    "dims": [1, 1]}}})
    st, _, rsp = server.request("PUT", f"/datasets/{did}/value", {"value": [[5, 5], [5, 0]]},
                                params={"domain": d, "select": "[0:2,0:2]"}, user=BOB)
    assert st == 200, rsp
    t0 = time.monotonic()
    st, _, rsp = server.request("GET", f"/datasets/{did}/value", params={
        "domain": d, "query": "value == 0", "Limit": "3"}, user=BOB)
    assert st == 200 and rsp["index"] == [[0, 2], [0, 3], [0, 4]], rsp
    st, _, rsp = server.request("GET", f"/datasets/{did}/value", params={
        "domain": d, "query": "value == 5", "Limit": "2"}, user=BOB)
    assert st == 200 and rsp["index"] == [[0, 0], [0, 1]], rsp
    assert time.monotonic() - t0 < 30 and server.alive()


def test_a_query_of_a_huge_virtual_dataset_reads_only_what_its_mappings_reach(server):
    """A virtual dataset of 10^15 elements mapping ten of them: a query
    scanned its whole grid (years of CPU, on after the client left); it
    reads the chunks the mappings reach, and one whose fill value matches
    (so every element may) stops at the server's limits."""
    d, root = new_domain(server, BOB)
    new_dataset(server, d, {"type": "H5T_STD_I32LE", "shape": [10],
                            "link": {"id": root, "name": "src"}})
    st, _, rsp = server.request("PUT", "/datasets/" + server.request(
        "GET", "/", params={"domain": d, "h5path": "/src"}, user=BOB)[2]["id"] + "/value",
        {"value": list(range(10))}, params={"domain": d}, user=BOB)
    assert st == 200, rsp
    vd = new_dataset(server, d, {"type": "H5T_STD_I32LE", "shape": [10**15], "creationProperties": {
        "h5lake": {"virtual": [{"path": "/src", "src": [[0, 1, 10]], "dst": [[10**12, 1, 10]]}]}}})
    t0 = time.monotonic()
    st, _, rsp = server.request("GET", f"/datasets/{vd}/value",
                                params={"domain": d, "query": "value > 6"}, user=BOB)
    assert st == 200 and rsp["index"] == [10**12 + 7, 10**12 + 8, 10**12 + 9], rsp
    st, _, rsp = server.request("GET", f"/datasets/{vd}/value",
                                params={"domain": d, "query": "value > 6", "Limit": "1"}, user=BOB)
    assert st == 200 and rsp["index"] == [10**12 + 7], rsp
    assert time.monotonic() - t0 < 10
    # The fill value (0) matches: 10^15 matches cannot be one answer.
    t0 = time.monotonic()
    st, _, rsp = server.request("GET", f"/datasets/{vd}/value",
                                params={"domain": d, "query": "value < 1"}, user=BOB)
    assert st == 413, (st, rsp)
    st, _, rsp = server.request("GET", f"/datasets/{vd}/value",
                                params={"domain": d, "query": "value < 1", "Limit": "2"}, user=BOB)
    assert st == 200 and rsp["index"] == [0, 1], rsp
    assert time.monotonic() - t0 < 15 and server.alive()


def test_a_query_stops_at_its_limit_inside_a_chunk_of_fill(server):
    """Limit=1 over unwritten 8 MiB chunks whose fill matches built every
    chunk's matches whole before cutting them (3 GB under a 1 GB budget);
    without Limit, an answer that cannot fit is refused before any read."""
    d, _ = new_domain(server, BOB)
    did = new_dataset(server, d, {"type": "H5T_STD_U8LE", "shape": [10**9], "creationProperties": {
        "layout": {"class": "H5D_CHUNKED", "dims": [8 << 20]}}})
    before = server.rss_kb()
    t0 = time.monotonic()
    for _ in range(3):
        st, _, rsp = server.request("GET", f"/datasets/{did}/value",
                                    params={"domain": d, "query": "value < 1", "Limit": "1"}, user=BOB)
        assert st == 200 and rsp["index"] == [0] and rsp["value"] == [0], rsp
    st, _, rsp = server.request("GET", f"/datasets/{did}/value",
                                params={"domain": d, "query": "value < 1"}, user=BOB)
    assert st == 413 and ("narrow" in message(rsp) or "budget" in message(rsp)), (st, rsp)
    assert time.monotonic() - t0 < 10
    assert server.rss_kb() - before < 200 * 1024, "the matches of whole chunks were held"
    assert server.alive()


def test_a_write_of_points_counts_the_chunks_of_its_points(server):
    """Two points of a 10^9 x 10^9 dataset were refused as reaching 10^12
    chunks (the whole dataset was counted): they reach two."""
    d, _ = new_domain(server, BOB)
    did = new_dataset(server, d, {"type": "H5T_STD_I32LE", "shape": [10**9, 10**9],
                                  "maxdims": [0, 0], "creationProperties": {
                                      "layout": {"class": "H5D_CHUNKED", "dims": [1000, 1000]}}})
    pts = [[10**9 - 1, 10**9 - 1], [0, 0]]
    st, _, rsp = server.request("PUT", f"/datasets/{did}/value", {"points": pts, "value": [5, 6]},
                                params={"domain": d}, user=BOB)
    assert st == 200, rsp
    st, _, rsp = server.request("POST", f"/datasets/{did}/value", {"points": pts},
                                params={"domain": d}, user=BOB)
    assert st == 200 and rsp["value"] == [5, 6], rsp


def test_names_with_a_nul_are_refused(server):
    """HDF5's names are C strings: a link or attribute named "\\0" was
    stored, and no HDF5 program could name it."""
    d, root = new_domain(server, BOB)
    refused_unchanged(server, "PUT", f"/groups/{root}/links/%00", {"h5path": "/x"},
                      {"domain": d}, BOB, (400,))
    refused_unchanged(server, "PUT", f"/groups/{root}/links/a%00b", {"h5path": "/x"},
                      {"domain": d}, BOB, (400,))
    refused_unchanged(server, "PUT", f"/groups/{root}/attributes/a%00", {
        "type": "H5T_STD_I32LE", "shape": "H5S_SCALAR", "value": 1}, {"domain": d}, BOB, (400,))


def test_a_path_walk_through_a_group_linked_to_itself_ends_promptly(server):
    """Soft links of long paths through a group linked to itself made one
    GET walk millions of names (minutes of CPU): a walk follows at most a
    few thousand."""
    d, root = new_domain(server, BOB)
    st, _, rsp = server.request("PUT", f"/groups/{root}/links/a", {"id": root},
                                params={"domain": d}, user=BOB)
    assert st == 201, rsp
    for k in range(8):
        st, _, rsp = server.request("PUT", f"/groups/{root}/links/s{k}",
                                    {"h5path": "a/" * 20000 + "s%d" % (k + 1)},
                                    params={"domain": d}, user=BOB)
        assert st == 201, rsp
    t0 = time.monotonic()
    st, _, rsp = server.request("GET", "/", params={"domain": d, "h5path": "/s0",
                                                    "follow_soft_links": 1}, user=BOB)
    assert st == 400 and "walk" in message(rsp), rsp
    assert time.monotonic() - t0 < 10 and server.alive()


def test_virtual_sources_never_lead_outside_the_allowed_files(server, outside):
    """A mapping onto an allowed HDF5 file whose dataset leads elsewhere
    (an external link, or a virtual dataset of its own, to a file outside
    the link root) reads as fill: the file outside is never opened."""
    import h5py
    secret = str(outside / "secret_values.h5")
    with h5py.File(secret, "w") as f:
        sid = h5py.h5s.create_simple((4,))
        dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
        dcpl.set_layout(h5py.h5d.COMPACT)
        h5py.h5d.create(f.id, b"compact", h5py.h5t.STD_I32LE, sid, dcpl=dcpl).write(
            h5py.h5s.ALL, h5py.h5s.ALL, np.array([101, 102, 103, 104], "<i4"))
    front = str(outside / "shared" / "front.h5")
    with h5py.File(front, "w") as f:
        f["e"] = h5py.ExternalLink(secret, "/compact")
        lay = h5py.VirtualLayout((4,), "i4")
        lay[:] = h5py.VirtualSource(secret, "compact", shape=(4,))
        f.create_virtual_dataset("v", lay, fillvalue=0)
    d, _ = new_domain(server, BOB)
    for path in ("/e", "/v"):
        ds = new_dataset(server, d, {"type": "H5T_STD_I32LE", "shape": [4], "creationProperties": {
            "layout": {"class": "H5D_CONTIGUOUS"},
            "h5lake": {"virtual": [{"path": path, "file": front, "src": [[0, 1, 4]],
                                    "dst": [[0, 1, 4]]}]}}})
        st, _, v = server.request("GET", f"/datasets/{ds}/value", params={"domain": d}, user=BOB)
        assert st in (200, 403) and 101 not in (v.get("value") or []), (path, st, v)
    # Naming a file outside in the mapping itself is refused when made.
    refused_unchanged(server, "POST", "/datasets", {
        "type": "H5T_STD_I32LE", "shape": [4], "creationProperties": {
            "layout": {"class": "H5D_CONTIGUOUS"},
            "h5lake": {"virtual": [{"path": "/compact", "file": secret, "src": [[0, 1, 4]],
                                    "dst": [[0, 1, 4]]}]}}}, {"domain": d}, BOB, (403,))


def test_a_linked_domain_cannot_hand_out_rights_its_maker_lacks(server):
    d, root = new_domain(server, ALICE)
    assert server.request("PUT", f"/acls/{BOB}", {"read": True, "update": True, "delete": True},
                          params={"domain": d}, user=ALICE)[0] == 201
    refused_unchanged(server, "PUT", "/", {"linked_domain": d},
                      {"domain": f"/home/{BOB}/l{next(_n)}.h5"}, BOB, (403,))


def test_documents_take_no_huge_names_paths_or_properties(server):
    """Documents are read whole by every request on their object: a body
    cannot store megabytes of names, paths or unknown creation properties
    in one (8 reads of a 90 MB group document held 1.9 GB)."""
    d, root = new_domain(server, BOB)
    big = "A" * (1 << 20)
    rsp = refused_unchanged(server, "POST", "/groups", {"creationProperties": {"junk": big}},
                            {"domain": d}, BOB, (400,))
    assert "at most 65536 bytes" in message(rsp) and len(json.dumps(rsp)) < 4096, rsp
    many = {"creationProperties": {"junk": ["A" * 60000] * 100}}
    refused_unchanged(server, "POST", "/groups", many, {"domain": d}, BOB, (413,))
    refused_unchanged(server, "PUT", f"/groups/{root}/links",
                      {"links": {"B" * (100 << 10): {"h5path": "/x"}}}, {"domain": d}, BOB, (400,))
    refused_unchanged(server, "PUT", f"/groups/{root}/links/k", {"h5path": "C" * (1 << 20)},
                      {"domain": d}, BOB, (400,))
    # Values of any length are data, and stay allowed, in every body shape
    # clients send (h5pyd 1.0 nests attributes under obj_ids).
    text = {"class": "H5T_STRING", "charSet": "H5T_CSET_UTF8", "strPad": "H5T_STR_NULLTERM",
            "length": "H5T_VARIABLE"}
    st, _, rsp = server.request("PUT", f"/groups/{root}/attributes/history",
                                {"type": text, "shape": "H5S_SCALAR", "value": big},
                                params={"domain": d}, user=BOB)
    assert st == 201, rsp
    st, _, rsp = server.request("GET", f"/groups/{root}/attributes/history",
                                params={"domain": d}, user=BOB)
    assert st == 200 and rsp["value"] == big
    nested = {"obj_ids": {root: {"attributes": {
        "notes": {"type": text, "shape": "H5S_SCALAR", "value": big}}}}}
    st, _, rsp = server.request("PUT", f"/groups/{root}/attributes", nested,
                                params={"domain": d}, user=BOB)
    assert st in (200, 201), rsp
    ds = new_dataset(server, d, {"type": "H5T_STD_U8LE", "shape": [300_000]})
    st, _, rsp = server.request("PUT", f"/datasets/{ds}/value",
                                {"points": list(range(300_000)), "value": [7] * 300_000},
                                params={"domain": d}, user=BOB)
    assert st == 200, rsp


def test_error_answers_quote_the_request_in_bounded_length(server):
    d, _ = new_domain(server, BOB)
    ds = new_dataset(server, d, {"type": "H5T_STD_I32LE", "shape": [1]})
    st, _, rsp = server.request("PUT", f"/datasets/{ds}/value", {"value": "A" * (8 << 20)},
                                params={"domain": d}, user=BOB)
    assert st == 400 and len(json.dumps(rsp)) < 8192, (st, len(json.dumps(rsp)))
    assert "bytes more" in message(rsp), message(rsp)[-200:]


def test_arrow_types_cannot_pad_rows_past_their_member(server):
    """``arrow_types`` is an attribute anyone who may write may write; a
    fixed size other than the member's would pad every row to it (4 KB of
    values answered as 2 GB)."""
    d, root = new_domain(server, BOB)
    s4 = {"class": "H5T_STRING", "charSet": "H5T_CSET_ASCII", "strPad": "H5T_STR_NULLPAD",
          "length": 4}
    ds = new_dataset(server, d, {"type": s4, "shape": [1000]})
    assert server.request("PUT", f"/datasets/{ds}/value", {"value": ["ab"] * 1000},
                          params={"domain": d}, user=BOB)[0] == 200
    text = {"class": "H5T_STRING", "charSet": "H5T_CSET_UTF8", "strPad": "H5T_STR_NULLTERM",
            "length": "H5T_VARIABLE"}
    arrow = {"Accept": "application/vnd.apache.arrow.stream"}
    for kept, ok in ((json.dumps({"value": "fixed_size_binary[2000000]"}), False),
                     (json.dumps({"value": "fixed_size_binary[4]"}), True)):
        assert server.request("PUT", f"/datasets/{ds}/attributes/arrow_types",
                              {"type": text, "shape": "H5S_SCALAR", "value": kept},
                              params={"domain": d, "replace": 1}, user=BOB)[0] in (200, 201)
        before = server.rss_kb()
        st, _, rsp = server.request("GET", f"/datasets/{ds}/value", params={"domain": d},
                                    user=BOB, headers=arrow)
        assert (st == 200) == ok and server.alive(), (st, rsp)
        if not ok:
            assert st == 400 and "4 bytes" in message(rsp), rsp
        assert server.rss_kb() - before < 64 << 10


def test_one_body_for_many_targets_is_held_once(server):
    """The same links or attributes for a list of ids were copied once per
    id before anything was checked (a 119 KB body naming 2000 made-up
    groups grew the server by 700 MB under a 256 MB budget)."""
    d, root = new_domain(server, BOB)
    fake = [root[:-6] + "%06x" % i for i in range(2000)]
    before = server.rss_kb()
    links = {f"l{i}": {"id": root} for i in range(600)}
    refused_unchanged(server, "PUT", f"/groups/{root}/links", {"grp_ids": fake, "links": links},
                      {"domain": d}, BOB, (404,))
    attrs = {"a": {"type": "H5T_STD_I32LE", "shape": [20000], "value": [1] * 20000}}
    refused_unchanged(server, "PUT", f"/groups/{root}/attributes",
                      {"obj_ids": fake[:300], "attributes": attrs}, {"domain": d}, BOB, (404,))
    assert (server.rss_kb() - before) / 1024 < 100, (server.rss_kb() - before) / 1024


def test_a_refused_batch_of_links_writes_none_of_them(server):
    """Names and targets were checked group by group as each was written:
    a bad link in a later group answered 400 after the earlier groups had
    their links."""
    d, root = new_domain(server, BOB)
    st, _, g = server.request("POST", "/groups", {"link": {"id": root, "name": "g"}},
                              params={"domain": d}, user=BOB)
    assert st == 201, g
    first, second = sorted([root, g["id"]])
    for bad in ({"a/b": {"id": root}}, {"": {"h5path": "/x"}}, {".": {"h5path": "/x"}},
                {"x": {"id": "g-00000000-0000-0000-0000-000000000000"}}):
        body = {"grp_ids": {first: {"links": {"ok": {"h5path": "/fine"}}},
                            second: {"links": bad}}}
        refused_unchanged(server, "PUT", f"/groups/{root}/links", body, {"domain": d}, BOB,
                          (400, 404))
    # (Attributes alike: one conflicting attribute in a later object.)
    assert server.request("PUT", f"/groups/{second}/attributes/a",
                          {"type": "H5T_STD_I32LE", "value": 1},
                          params={"domain": d}, user=BOB)[0] == 201
    body = {"obj_ids": {first: {"attributes": {"new": {"type": "H5T_STD_I32LE", "value": 2}}},
                        second: {"attributes": {"a": {"type": "H5T_STD_I32LE", "value": 3}}}}}
    refused_unchanged(server, "PUT", f"/groups/{root}/attributes", body, {"domain": d}, BOB,
                      (409,))
    body = {"obj_ids": {first: {"attributes": {"new": {"type": "H5T_STD_I32LE", "value": 2}}},
                        second: {"attributes": {"": {"type": "H5T_STD_I32LE", "value": 3}}}}}
    refused_unchanged(server, "PUT", f"/groups/{root}/attributes", body, {"domain": d}, BOB,
                      (400,))
    # An id listed twice is one target (its second write conflicted with
    # its first, after the first was written).
    for path, body in ((f"/groups/{root}/links",
                        {"grp_ids": [first, first], "links": {"dup": {"h5path": "/d"}}}),
                       (f"/groups/{root}/attributes",
                        {"obj_ids": [first, first],
                         "attributes": {"dup": {"type": "H5T_STD_I32LE", "value": 1}}})):
        st, _, rsp = server.request("PUT", path, body, params={"domain": d}, user=BOB)
        assert st == 201, (path, st, rsp)


def test_a_listing_refused_says_nothing_of_what_it_names(server):
    """GET /domains of a name the caller may not read answered 400 "is a
    domain, not a folder" for a domain (403 for a folder)."""
    d, _ = new_domain(server, BOB)
    st, _, rsp = server.request("GET", "/domains", params={"domain": d}, user=ALICE)
    assert st == 403, (st, rsp)
    assert server.request("GET", "/domains", params={"domain": d}, user=BOB)[0] == 400


def test_zz_peak_memory_stayed_within_the_budget(server):
    """Runs last in the module (pytest keeps file order): the peak resident
    size over all the requests above, less what the server held idle."""
    assert server.alive()
    peak_mb = (server.rss_kb("VmHWM") - server.baseline_kb) / 1024
    assert peak_mb < BUDGET_MB + UNBUDGETED_MB, \
        f"peak {peak_mb:.0f} MB over a budget of {BUDGET_MB} MB (+{UNBUDGETED_MB} MB unbudgeted)"


def test_an_upload_never_waits_on_memory_it_holds_itself(tmp_path):
    """From an audit: a 16 MiB binary write into gzip chunks of 4 MiB, whose
    body and chunk work each fit the budget but not together, waited 60 s
    on its own reservation, then answered 503 "in use by other requests";
    a 4-byte read sent meanwhile waited with it. Now it is refused at once
    (413) when it could never fit, and done when it can."""
    import threading
    gzip4 = {"type": "H5T_STD_U8LE", "shape": [16 << 20], "creationProperties": {
        "layout": {"class": "H5D_CHUNKED", "dims": [4 << 20]},
        "filters": [{"class": "H5Z_FILTER_DEFLATE", "id": 1, "level": 1}]}}
    # (Under 64M it fits now: a streamed upload holds the chunks of one
    # slab at a time, not all its selection reaches.)
    s = with_homes(tmp_path / "small", ALICE, args=["--memory-budget", "32M"])
    try:
        d, _ = new_domain(s, ALICE)
        big = new_dataset(s, d, gzip4, user=ALICE)
        started = time.monotonic()
        st, rsp = _send_partial(s, "PUT", f"/datasets/{big}/value", {"domain": d}, ALICE,
                                16 << 20, content_type="application/octet-stream")
        assert st == 413 and b"--memory-budget" in rsp and time.monotonic() - started < 10, rsp
        assert s.alive()
    finally:
        s.stop()
    s = with_homes(tmp_path / "big", ALICE, args=["--memory-budget", "160M"])
    try:
        d, _ = new_domain(s, ALICE)
        big = new_dataset(s, d, gzip4, user=ALICE)
        small = new_dataset(s, d, {"type": "H5T_STD_U8LE", "shape": [16]}, user=ALICE)
        blob = np.random.default_rng(1).integers(0, 256, 16 << 20, dtype="u1").tobytes()
        seen = {}

        def tiny_read():
            time.sleep(0.3)
            t = time.monotonic()
            st = s.request("GET", f"/datasets/{small}/value",
                           params={"domain": d, "select": "[0:4]"}, user=ALICE)[0]
            seen["read"] = (st, time.monotonic() - t)
        t = threading.Thread(target=tiny_read)
        t.start()
        started = time.monotonic()
        st, _, rsp = s.request("PUT", f"/datasets/{big}/value", blob, params={"domain": d},
                               user=ALICE, headers={"Content-Type": "application/octet-stream"})
        took = time.monotonic() - started
        t.join()
        assert st == 200 and took < 30, (st, rsp, took)
        assert seen["read"][0] == 200 and seen["read"][1] < 20, seen
        st, _, back = s.request("GET", f"/datasets/{big}/value",
                                params={"domain": d, "select": "[0:4096]"}, user=ALICE,
                                headers={"Accept": "application/octet-stream"}, raw=True)
        assert st == 200 and back == blob[:4096]
    finally:
        s.stop()


def test_one_users_unread_answers_cannot_hold_the_whole_budget(tmp_path):
    """From an audit: a user who asked for many big binary reads and never
    read the answers held every slab of the budget; anyone else's 4-byte
    read waited 60 s, then got 503. One user's requests now hold at most
    half the budget: past it theirs are refused at once, and others' go on."""
    s = with_homes(tmp_path / "bucket", ALICE, BOB, args=["--memory-budget", "64M"])
    stalled = []
    try:
        d, _ = new_domain(s, ALICE)
        big = new_dataset(s, d, {"type": "H5T_STD_I32LE", "shape": [6 << 20]}, user=ALICE)
        st, _, rsp = s.request("PUT", f"/datasets/{big}/value",
                               np.arange(6 << 20, dtype="<i4").tobytes(), params={"domain": d},
                               user=ALICE, headers={"Content-Type": "application/octet-stream"})
        assert st == 200, rsp
        token = base64.b64encode(f"{ALICE}:{USERS[ALICE]}".encode()).decode()
        from urllib.parse import quote
        for _ in range(6):
            c = socket.socket()
            c.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
            c.connect(("127.0.0.1", s.port))
            c.sendall((f"GET /datasets/{big}/value?domain={quote(d)} HTTP/1.1\r\nHost: x\r\n"
                       f"Authorization: Basic {token}\r\nAccept: application/octet-stream\r\n\r\n").encode())
            stalled.append(c)
        time.sleep(2)
        # alice's own next big read is refused at once; a small one, and
        # bob's, are answered
        started = time.monotonic()
        st, _, rsp = s.request("GET", f"/datasets/{big}/value", params={"domain": d},
                               user=ALICE, headers={"Accept": "application/octet-stream"}, raw=True)
        assert st == 503 and time.monotonic() - started < 10, (st, rsp[:200])
        d2, _ = new_domain(s, BOB)
        mine = new_dataset(s, d2, {"type": "H5T_STD_U8LE", "shape": [4 << 20]}, user=BOB)
        started = time.monotonic()
        st, _, rsp = s.request("GET", f"/datasets/{mine}/value", params={"domain": d2},
                               user=BOB, headers={"Accept": "application/octet-stream"}, raw=True)
        assert st == 200 and len(rsp) == 4 << 20 and time.monotonic() - started < 10
        assert s.alive()
    finally:
        for c in stalled:
            c.close()
        s.stop()


def test_a_domain_made_again_answers_404_for_what_it_never_had(tmp_path):
    """From an audit: once a domain was deleted, every 404 inside the
    domain made again under its name became 410 "it was deleted"."""
    s = with_homes(tmp_path / "bucket", ALICE)
    try:
        d, root = new_domain(s, ALICE)
        assert s.request("DELETE", "/", params={"domain": d}, user=ALICE)[0] == 200
        assert s.request("GET", "/", params={"domain": d}, user=ALICE)[0] == 410
        st, _, made = s.request("PUT", "/", params={"domain": d}, user=ALICE)
        assert st == 201, made
        root = made["root"]
        for path in (f"/groups/{root}/links/never", f"/groups/{root}/attributes/never",
                     "/datasets/d-00000000-00000000-0000-000000-000000"):
            assert s.request("GET", path, params={"domain": d}, user=ALICE)[0] == 404, path
        # a deletion inside it is still told apart
        g = s.request("POST", "/groups", params={"domain": d}, user=ALICE)[2]["id"]
        assert s.request("PUT", f"/groups/{root}/links/g", {"id": g}, params={"domain": d}, user=ALICE)[0] == 201
        assert s.request("DELETE", f"/groups/{root}/links/g", params={"domain": d}, user=ALICE)[0] == 200
        assert s.request("GET", f"/groups/{root}/links/g", params={"domain": d}, user=ALICE)[0] == 410
    finally:
        s.stop()


def test_an_enum_value_that_does_not_fit_its_base_type_is_refused(server):
    d, _ = new_domain(server, ALICE)
    for mapping in ({"a": 1000}, {"a": -129}):
        st, _, rsp = server.request("POST", "/datasets", {"type": {
            "class": "H5T_ENUM", "base": {"class": "H5T_INTEGER", "base": "H5T_STD_I8LE"},
            "mapping": mapping}, "shape": [2]}, params={"domain": d}, user=ALICE)
        assert st == 400 and "does not fit" in message(rsp), (st, rsp)
    st, _, rsp = server.request("POST", "/datasets", {"type": {
        "class": "H5T_ENUM", "base": {"class": "H5T_INTEGER", "base": "H5T_STD_I8LE"},
        "mapping": {"lo": -128, "hi": 127}}, "shape": [2]}, params={"domain": d}, user=ALICE)
    assert st == 201, rsp


_TEXT = {"class": "H5T_STRING", "charSet": "H5T_CSET_ASCII", "strPad": "H5T_STR_NULLTERM",
         "length": "H5T_VARIABLE"}


def _put_text_attr(s, d, gid, name, size):
    """A variable-length string attribute of ``size`` bytes, its value sent
    as binary (the way past the JSON body's element count)."""
    import struct
    st = s.request("PUT", f"/groups/{gid}/attributes/{name}",
                   {"type": _TEXT, "shape": "H5S_SCALAR", "value": "x"},
                   params={"domain": d}, user=ALICE)[0]
    assert st == 201, st
    return s.request("PUT", f"/groups/{gid}/attributes/{name}/value",
                     struct.pack("<I", size) + b"B" * size, params={"domain": d}, user=ALICE,
                     headers={"Content-Type": "application/octet-stream"})[0]


def test_big_documents_are_capped_and_held_to_the_budget(tmp_path):
    """From an audit: attributes sent as binary grew a group's document
    without bound (40 MB a request), and every request on the group read,
    copied and answered it outside the memory budget: 8 GETs at once took
    4 GB against a budget of 64 MiB. A change may now leave a document of
    at most an eighth of the budget (--max-document-size), and what each
    request reads of documents is held to its memory."""
    import threading
    s = with_homes(tmp_path / "bucket", ALICE, args=["--memory-budget", "64M"])
    try:
        d, root = new_domain(s, ALICE)
        baseline = s.rss_kb()
        assert _put_text_attr(s, d, root, "huge", 12 << 20) == 413
        codes = [_put_text_attr(s, d, root, f"a{i}", 2 << 20) for i in range(5)]
        assert codes[:3] == [200] * 3 and 413 in codes, codes
        names = s.request("GET", f"/groups/{root}/attributes", params={"domain": d},
                          user=ALICE)[2]["attributes"]
        kept = {a["name"] for a in names}
        assert kept >= {"a0", "a1", "a2"} and "huge" in kept, kept
        # (a change that shrinks it goes)
        assert s.request("DELETE", f"/groups/{root}/attributes/a0", params={"domain": d},
                         user=ALICE)[0] == 200
        seen = []

        def get():
            st, _, body = s.request("GET", f"/groups/{root}", params={"domain": d,
                                    "include_attrs": 1}, user=ALICE)
            seen.append((st, len(body.get("attributes", [])) if st == 200 else 0))
        threads = [threading.Thread(target=get) for _ in range(16)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert {st for st, _ in seen} <= {200, 503} and (200, len(kept) - 1) in seen, seen
        # (Before: 16 of these GETs held about 400 MB, each its own copies
        # of the document outside the budget.)
        grew_mb = (s.rss_kb("VmHWM") - baseline) / 1024
        assert grew_mb < 64 + UNBUDGETED_MB, f"grew {grew_mb:.0f} MB over a budget of 64 MB"
        assert s.alive()
    finally:
        s.stop()


def test_a_read_of_many_points_each_in_a_chunk_of_its_own_stays_within_the_budget(tmp_path):
    """From an audit: 2.5 M points (a 40 MB binary body), each in an
    unwritten chunk of its own, took 670 MB against a budget of 200 MB:
    the engine planned every point's chunk at once (some 250 bytes a
    chunk) and that plan was not counted. Points are read in pieces now,
    planned a few words a point, and what they hold is counted."""
    s = with_homes(tmp_path / "bucket", ALICE, args=["--memory-budget", "128M"])
    try:
        d, _ = new_domain(s, ALICE)
        did = new_dataset(s, d, {"type": "H5T_STD_U8LE", "shape": [10**7, 10**7],
                                 "creationProperties": {"layout": {"class": "H5D_CHUNKED",
                                                                   "dims": [1000, 1000]}}},
                          user=ALICE)
        pts = np.random.default_rng(0).integers(0, 10**7, size=(1_200_000, 2)).astype("<u8")
        pts[:2] = [[5, 5], [10**7 - 1, 10**7 - 1]]
        st, _, rsp = s.request("PUT", f"/datasets/{did}/value",
                               {"points": pts[:2].tolist(), "value": [7, 9]},
                               params={"domain": d}, user=ALICE)
        assert st == 200, rsp
        baseline = s.rss_kb()
        st, _, got = s.request("POST", f"/datasets/{did}/value", pts.tobytes(),
                               params={"domain": d}, user=ALICE, raw=True,
                               headers={"Content-Type": "application/octet-stream",
                                        "Accept": "application/octet-stream"})
        assert st == 200, got
        got = np.frombuffer(got, dtype="u1")
        assert len(got) == len(pts) and list(got[:2]) == [7, 9] and not got[2:].any()
        grew_mb = (s.rss_kb("VmHWM") - baseline) / 1024
        assert grew_mb < 128 + UNBUDGETED_MB, f"grew {grew_mb:.0f} MB over a budget of 128 MB"
        assert s.alive()
    finally:
        s.stop()


@pytest.mark.parametrize("limit", ["abc", "-1", "1e3"])
def test_a_limit_that_is_not_a_count_is_refused_on_every_listing(server, limit):
    """From an audit: links, attributes and domain listings ignored a bad
    Limit and answered everything (other listings and queries refused it;
    HSDS refuses it)."""
    d, root = new_domain(server, BOB)
    for path, params in ((f"/groups/{root}/links", {"domain": d}),
                         (f"/groups/{root}/attributes", {"domain": d}),
                         ("/groups", {"domain": d}),
                         ("/domains", {"domain": d.rsplit("/", 1)[0] + "/"})):
        st, _, rsp = server.request("GET", path, params=dict(params, Limit=limit), user=BOB)
        assert st == 400 and "Limit" in message(rsp), (path, st, rsp)


def test_a_json_body_sent_chunked_is_charged_what_such_a_body_may_hold(tmp_path):
    """From an audit: a body without Content-Length was charged as the
    longest body allowed (100 MiB and a value per two bytes: 205 MB), so
    under a budget of 256 MiB even a chunked ``{}`` got 413. Such a body
    may now hold a sixteenth of the budget, and is charged that."""
    s = with_homes(tmp_path / "bucket", ALICE, args=["--memory-budget", "256M"])
    try:
        d, _ = new_domain(s, ALICE)
        conn = http.client.HTTPConnection("127.0.0.1", s.port, timeout=30)
        token = base64.b64encode(f"{ALICE}:{USERS[ALICE]}".encode()).decode()

        def post_chunked(parts):
            conn.request("POST", "/groups?domain=" + d, body=iter(parts), encode_chunked=True,
                         headers={"Authorization": "Basic " + token,
                                  "Content-Type": "application/json"})
            r = conn.getresponse()
            return r.status, json.loads(r.read() or b"{}")
        st, rsp = post_chunked([b"{", b"}"])
        assert st == 201, rsp
        big = [b'{"x": "'] + [b"a" * (1 << 20)] * 17 + [b'"}']
        st, rsp = post_chunked(big)
        assert st == 413 and "Content-Length" in message(rsp), (st, rsp)
        assert s.alive()
    finally:
        s.stop()
