"""What HSDS clients rely on of the REST API, beyond h5pyd's everyday calls
(issue 23): each behaviour HSDS's own integration tests found missing,
written down here as a test of its own."""

import json

import numpy as np
import pytest

from servers import USERS, with_homes

USER = "test_user1"


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    s = with_homes(tmp_path_factory.mktemp("srv") / "bucket", USER)
    yield s
    s.stop()


_counter = iter(range(10**6))


@pytest.fixture
def api(server):
    """``call(method, path, body=None, **params)`` on a fresh domain of
    test_user1: (status, body); ``call.root`` is its root group."""
    domain = f"/home/{USER}/s{next(_counter)}.h5"

    def call(method, path, body=None, headers=None, **params):
        status, hdrs, out = server.request(method, path, body, user=USER, headers=headers,
                                           params={"domain": domain, **params})
        call.headers = hdrs
        return status, out

    status, out = call("PUT", "/")
    assert status == 201
    call.root = out["root"]
    call.domain = domain
    return call


def test_json_answers_say_their_charset(api):
    assert api("GET", "/")[0] == 200
    assert api.headers["Content-Type"] == "application/json; charset=utf-8"


def test_deleted_things_are_gone_not_missing(api):
    s, g = api("POST", "/groups")
    gid = g["id"]
    assert api("PUT", f"/groups/{api.root}/links/a", {"id": gid})[0] == 201
    assert api("PUT", f"/groups/{gid}/attributes/x", {"type": "H5T_STD_I32LE", "value": 1})[0] == 201
    # A link or attribute deleted: 410; one never made: 404.
    assert api("DELETE", f"/groups/{api.root}/links/a")[0] == 200
    assert api("GET", f"/groups/{api.root}/links/a")[0] == 410
    assert api("GET", f"/groups/{api.root}/links/never")[0] == 404
    assert api("DELETE", f"/groups/{gid}/attributes", attr_names="x")[0] == 200
    assert api("GET", f"/groups/{gid}/attributes/x")[0] == 410
    # Made again, it is there; a write naming it is no read of the deleted.
    assert api("PUT", f"/groups/{api.root}/links/a", {"id": gid})[0] == 201
    assert api("GET", f"/groups/{api.root}/links/a")[0] == 200
    assert api("DELETE", f"/groups/{gid}")[0] == 200
    assert api("GET", f"/groups/{gid}")[0] == 410
    assert api("DELETE", "/")[0] == 200
    assert api("GET", "/")[0] == 410


def test_ids_of_another_layout_are_not_found_and_garbage_is_bad(api):
    assert api("GET", "/groups/foobar")[0] == 400
    assert api("GET", "/groups/g-1b4e28ba-2fa1-11d2-883f-0016d3cca427")[0] == 404
    assert api("PUT", f"/groups/{api.root}/links/x",
               {"id": "g-1b4e28ba-2fa1-11d2-883f-0016d3cca427"})[0] == 404


def test_objects_are_found_by_h5path(api):
    s, d = api("POST", "/datasets", {"type": "H5T_STD_I32LE", "shape": [3],
                                     "h5path": "/g1/d", })
    assert s == 404                                   # no /g1 yet
    s, d = api("POST", "/datasets", {"type": "H5T_STD_I32LE", "shape": [3], "h5path": "/g1/d"},
               implicit=1)
    assert s == 201
    s, g1 = api("GET", "/groups/", h5path="/g1")
    assert s == 200 and g1["linkCount"] == 1
    assert api("GET", "/datasets/", h5path="/g1/d")[1]["id"] == d["id"]
    assert api("GET", "/datasets", h5path="d", grpid=g1["id"])[1]["id"] == d["id"]
    assert api("GET", "/", h5path="d", parent_id=g1["id"])[1]["class"] == "dataset"
    s, root = api("GET", "/", h5path="/")
    assert root["id"] == api.root and root["class"] == "group"
    assert api("GET", "/datasets/", h5path="/g1")[0] == 404      # a group, not a dataset
    assert api("GET", "/datasets/", h5path="d")[0] == 400        # relative, from where?
    assert api("GET", "/datasets/", h5path="/g1/nope")[0] == 404
    # Soft links are followed on the way when asked to (else 400).
    assert api("PUT", f"/groups/{api.root}/links/soft", {"h5path": "/g1"})[0] == 201
    assert api("GET", "/datasets/", h5path="/soft/d")[0] == 400
    assert api("GET", "/datasets/", h5path="/soft/d", follow_soft_links=1)[1]["id"] == d["id"]
    # Where an object is, by its paths.
    assert api("GET", f"/datasets/{d['id']}", getalias=1)[1]["alias"] == ["/g1/d"]
    assert api("GET", f"/groups/{api.root}", getalias=1)[1]["alias"] == ["/"]
    s, anon = api("POST", "/groups")
    assert api("GET", f"/groups/{anon['id']}", getalias=1)[1]["alias"] == []


def test_attributes_sent_again_are_ok_not_conflicts(api):
    a = {"type": "H5T_STD_I32LE", "shape": [2], "value": [1, 2]}
    path = f"/groups/{api.root}/attributes/a"
    assert api("PUT", path, a)[0] == 201
    assert api("PUT", path, a)[0] == 200                 # the same again
    assert api("PUT", path, dict(a, value=[3, 4]))[0] == 409
    assert api("PUT", path, dict(a, value=[3, 4]), replace=1)[0] == 200
    assert api("GET", path)[1]["value"] == [3, 4]
    s, out = api("GET", path)
    assert [h["rel"] for h in out["hrefs"]] == ["self", "owner", "root"]
    batch = {"attributes": {"b": a, "c": a}}
    assert api("PUT", f"/groups/{api.root}/attributes", batch)[0] == 201
    assert api("PUT", f"/groups/{api.root}/attributes", batch)[0] == 200
    listed = api("GET", f"/groups/{api.root}/attributes")[1]["attributes"]
    assert all("href" in item for item in listed)
    # A null dataspace holds no value to read.
    assert api("PUT", f"/groups/{api.root}/attributes/n",
               {"type": "H5T_STD_I32LE", "shape": "H5S_NULL"})[0] == 201
    assert api("GET", f"/groups/{api.root}/attributes/n/value")[0] == 400


def test_extents_past_the_maximum_conflict_and_append_adds_rows(api):
    s, d = api("POST", "/datasets", {"type": "H5T_STD_I32LE", "shape": [5], "maxdims": [8]})
    did = d["id"]
    assert api("PUT", f"/datasets/{did}/shape", {"shape": [9]})[0] == 409
    assert api("PUT", f"/datasets/{did}/shape", {"extend": 4})[0] == 409
    assert api("PUT", f"/datasets/{did}/value", {"value": [1, 2, 3], "append": 3})[0] == 200
    assert api("GET", f"/datasets/{did}/shape")[1]["shape"]["dims"] == [8]
    assert api("GET", f"/datasets/{did}/value")[1]["value"] == [0, 0, 0, 0, 0, 1, 2, 3]
    assert api("PUT", f"/datasets/{did}/value", {"value": [4], "append": 1})[0] == 409
    # Unlimited (maxdims 0, as HSDS spells it), binary, along a chosen axis.
    s, u = api("POST", "/datasets", {"type": "H5T_STD_I32LE", "shape": [2, 0], "maxdims": [2, 0]})
    body = np.arange(6, dtype="<i4").tobytes()
    assert api("PUT", f"/datasets/{u['id']}/value", body, append=3, append_dim=1,
               headers={"Content-Type": "application/octet-stream"})[0] == 200
    assert api("GET", f"/datasets/{u['id']}/value")[1]["value"] == [[0, 1, 2], [3, 4, 5]]


def test_a_maximum_extent_given_makes_a_dataset_that_shrinks_and_grows_back(api):
    s, d = api("POST", "/datasets", {"type": "H5T_STD_I32LE", "shape": 10, "maxdims": 10,
                                     "creationProperties": {"fillValue": 42}})
    did = d["id"]
    assert api("PUT", f"/datasets/{did}/value", {"value": list(range(10))})[0] == 200
    assert api("PUT", f"/datasets/{did}/shape", {"shape": 5})[0] == 201
    assert api("PUT", f"/datasets/{did}/shape", {"shape": 10})[0] == 201
    assert api("GET", f"/datasets/{did}/value")[1]["value"] == [0, 1, 2, 3, 4] + [42] * 5


def test_one_element_broadcasts_and_verbose_counts_chunks(api):
    s, d = api("POST", "/datasets", {"type": "H5T_STD_I32LE", "shape": [10]})
    did = d["id"]
    assert api("PUT", f"/datasets/{did}/value", {"value": [42]}, element_count=1)[0] == 200
    assert api("GET", f"/datasets/{did}/value")[1]["value"] == [42] * 10
    out = api("GET", f"/datasets/{did}", verbose=1)[1]
    assert out["num_chunks"] == 1 and out["allocated_size"] == 40


def test_selections_and_values_in_hsds_json_forms(api):
    s, d = api("POST", "/datasets", {"type": "H5T_STD_I32LE", "shape": [6, 8]})
    did = d["id"]
    # A flat list fills an N-d selection in C order.
    body = {"start": [0, 1], "stop": [4, 8], "step": [2, 3], "value": [1, 2, 3, 4, 5, 6]}
    assert api("PUT", f"/datasets/{did}/value", body)[0] == 200
    got = np.array(api("GET", f"/datasets/{did}/value")[1]["value"])
    assert got[0:4:2, 1:8:3].tolist() == [[1, 2, 3], [4, 5, 6]]
    # select as a JSON list: coordinates per dimension, or an index (which,
    # as in HSDS's select strings, keeps its dimension).
    s, out = api("POST", f"/datasets/{did}/value", {"select": [[0, 2], 4]})
    assert s == 200 and out["value"] == [[2], [5]]
    assert out == api("GET", f"/datasets/{did}/value", select="[[0,2],4]")[1]


def test_domain_answers(server, api):
    s, out = api("PUT", "/", domain=api.domain + "x", getdnids=1)
    assert s == 201 and "acls" in out and len(out["dn_ids"]) >= 1
    # No domain: the top level's domains.
    status, _, top = server.request("GET", "/", user=USER)
    assert status == 200 and any(d["name"] == "/home" for d in top["domains"])
    assert api("GET", "/", bucket="bad/bucket")[0] == 400


def test_links_of_several_groups_in_one_request(api):
    s, g = api("POST", "/groups", {"link": {"id": api.root, "name": "g"}})
    for gid in (api.root, g["id"]):
        assert api("PUT", f"/groups/{gid}/links/l1", {"h5path": "/x"})[0] == 201
        assert api("PUT", f"/groups/{gid}/links/l2", {"h5path": "/y"})[0] == 201
    s, out = api("POST", f"/groups/{api.root}/links", {"grp_ids": [api.root, g["id"]],
                                                       "titles": ["l1", "g"]})
    assert s == 200
    assert [l["title"] for l in out["links"][api.root]] == ["l1", "g"]
    assert [l["title"] for l in out["links"][g["id"]]] == ["l1"]
    listed = api("GET", f"/groups/{api.root}/links")[1]["links"]
    hard = [l for l in listed if l["class"] == "H5L_TYPE_HARD"]
    assert hard[0]["href"] == f"/groups/{g['id']}" and hard[0]["collection"] == "groups"


def test_link_paging_markers_and_domain_details(api):
    for name in ("a", "b", "c"):
        assert api("PUT", f"/groups/{api.root}/links/{name}", {"h5path": "/x"})[0] == 201
    got = api("GET", f"/groups/{api.root}/links", Marker="a", Limit=1)[1]["links"]
    assert [l["title"] for l in got] == ["b"]
    assert api("GET", f"/groups/{api.root}/links", Marker="nope")[0] == 404
    out = api("GET", "/", getdnids=1)[1]
    assert out["dn_ids"] and {"lz4hc", "zstd", "gzip", "blosclz", "lz4"} <= set(out["compressors"])


def test_non_finite_floats_as_hsds_writes_them(server, api):
    """Bare NaN/Infinity (Python's json reads them), ``null`` with
    ignore_nan=1, and a NaN fill value as the text "nan" there."""
    assert api("PUT", f"/groups/{api.root}/attributes/a",
               {"type": "H5T_IEEE_F32LE", "shape": 3, "value": ["NaN", 1.5, "-Infinity"]})[0] == 201
    status, _, raw = server.request("GET", f"/groups/{api.root}/attributes/a", user=USER,
                                    params={"domain": api.domain}, raw=True)
    assert status == 200 and b"[NaN,1.5,-Infinity]" in raw
    for suffix, params in (("/a", {}), ("/a/value", {}), ("", {"IncludeData": 1})):
        s, out = api("GET", f"/groups/{api.root}/attributes{suffix}", **params)
        value = out["attributes"][0]["value"] if "attributes" in out else out["value"]
        assert np.isnan(value[0]) and value[1] == 1.5 and value[2] == -np.inf
        s, out = api("GET", f"/groups/{api.root}/attributes{suffix}", ignore_nan=1, **params)
        value = out["attributes"][0]["value"] if "attributes" in out else out["value"]
        assert value == [None, 1.5, None]
    # A string that reads "NaN" stays a string.
    assert api("PUT", f"/groups/{api.root}/attributes/s", {"type": {
        "class": "H5T_STRING", "charSet": "H5T_CSET_ASCII", "strPad": "H5T_STR_NULLPAD",
        "length": 3}, "shape": 1, "value": ["NaN"]})[0] == 201
    assert api("GET", f"/groups/{api.root}/attributes/s")[1]["value"] == ["NaN"]
    s, d = api("POST", "/datasets", {"type": "H5T_IEEE_F64LE", "shape": [4],
                                     "creationProperties": {"fillValue": "NaN"}})
    out = api("GET", f"/datasets/{d['id']}")[1]
    assert np.isnan(out["creationProperties"]["fillValue"])
    out = api("GET", f"/datasets/{d['id']}", ignore_nan=1)[1]
    assert out["creationProperties"]["fillValue"] == "nan"
    assert all(np.isnan(api("GET", f"/datasets/{d['id']}/value")[1]["value"]))
    assert api("GET", f"/datasets/{d['id']}/value", ignore_nan=1)[1]["value"] == [None] * 4


def test_fill_values_given_as_base64_bytes(api):
    fill = np.float32(2.5).tobytes()
    import base64
    b64 = base64.b64encode(fill).decode()
    s, d = api("POST", "/datasets", {"type": "H5T_IEEE_F32LE", "shape": [3], "creationProperties": {
        "fillValue": b64, "fillValue_encoding": "base64"}})
    assert s == 201
    cp = api("GET", f"/datasets/{d['id']}")[1]["creationProperties"]
    assert cp["fillValue"] == b64 and cp["fillValue_encoding"] == "base64"
    assert api("GET", f"/datasets/{d['id']}/value")[1]["value"] == [2.5] * 3
    bad = base64.b64encode(b"12345").decode()
    assert api("POST", "/datasets", {"type": "H5T_IEEE_F32LE", "shape": [3], "creationProperties": {
        "fillValue": bad, "fillValue_encoding": "base64"}})[0] == 400


def test_attribute_values_as_base64_and_as_typed(api):
    import base64
    arr = np.array([2, 3, 5], np.int32)
    assert api("PUT", f"/groups/{api.root}/attributes/i", {"type": "H5T_STD_I32LE", "shape": 3,
               "value": base64.b64encode(arr.tobytes()).decode(), "encoding": "base64"})[0] == 201
    out = api("GET", f"/groups/{api.root}/attributes/i")[1]
    assert out["value"] == [2, 3, 5] and "encoding" not in out
    out = api("GET", f"/groups/{api.root}/attributes/i", encoding="base64")[1]
    assert out["encoding"] == "base64" and base64.b64decode(out["value"]) == arr.tobytes()
    # Bytes that are not UTF-8 come back as base64 of the attribute's bytes.
    t = {"class": "H5T_STRING", "charSet": "H5T_CSET_UTF8", "strPad": "H5T_STR_NULLTERM",
         "length": 2}
    assert api("PUT", f"/groups/{api.root}/attributes/b", {"type": t,
               "shape": {"class": "H5S_SCALAR"}})[0] == 201
    assert api("PUT", f"/groups/{api.root}/attributes/b/value", b"\xfe\xff",
               headers={"Content-Type": "application/octet-stream"})[0] == 200
    out = api("GET", f"/groups/{api.root}/attributes/b")[1]
    assert out["encoding"] == "base64" and out["value"] == "/v8="
    # Single-precision values read back as typed, not widened.
    assert api("PUT", f"/groups/{api.root}/attributes/c", {"type": {
        "class": "H5T_COMPOUND", "fields": [{"name": "a", "type": "H5T_STD_I32LE"},
                                            {"name": "b", "type": "H5T_IEEE_F32LE"}]},
        "value": [42, 0.42]})[0] == 201
    assert api("GET", f"/groups/{api.root}/attributes/c")[1]["value"] == [42, 0.42]


def test_fixed_length_text_is_cut_to_its_length(api):
    t = {"class": "H5T_STRING", "charSet": "H5T_CSET_ASCII", "strPad": "H5T_STR_NULLPAD",
         "length": 7}
    s, d = api("POST", "/datasets", {"type": t, "shape": 3})
    assert api("PUT", f"/datasets/{d['id']}/value", {"value": ["123456", "1234567",
                                                                "123456789"]})[0] == 200
    assert api("GET", f"/datasets/{d['id']}/value")[1]["value"] == ["123456", "1234567",
                                                                    "1234567"]


def test_linked_domains_share_a_root(server, api):
    s, out = api("PUT", "/", {"linked_domain": api.domain}, domain=api.domain + ".link")
    assert s == 201 and out["root"] == api.root
    # Deleting the first with keep_root leaves the objects to the second.
    assert api("DELETE", "/", {"keep_root": 1})[0] == 200
    assert api("GET", f"/groups/{api.root}", domain=api.domain + ".link")[0] == 200
    # Linking needs read access to the target.
    server.request("PUT", "/", {"folder": 1, "owner": "test_user2"},
                   params={"domain": "/home/test_user2/"})
    status = server.request("PUT", "/", {"linked_domain": api.domain + ".link"},
                            user="test_user2",
                            params={"domain": "/home/test_user2/steal.h5"})[0]
    assert status == 403
    # A flush asked for node ids answers with them.
    s, out = api("PUT", "/", flush=1, getdnids=1, domain=api.domain + ".link")
    assert s == 200 and out["dn_ids"]


def test_external_links_followed_when_asked(server, api):
    s, other = api("PUT", "/", domain=api.domain + ".ext")
    s, g = api("POST", "/groups", {"link": {"id": other["root"], "name": "g"}},
               domain=api.domain + ".ext")
    for name, domain in (("e", api.domain + ".ext"), ("f", "hdf5:/" + api.domain + ".ext")):
        assert api("PUT", f"/groups/{api.root}/links/{name}",
                   {"h5path": "/g", "h5domain": domain})[0] == 201
        assert api("GET", "/", h5path=f"/{name}")[0] == 400
        s, out = api("GET", "/", h5path=f"/{name}", follow_external_links=1)
        assert s == 200 and out["id"] == g["id"] and out["domain"] == api.domain + ".ext"
    # Only where the caller may read.
    s = server.request("PUT", "/", params={"domain": "/home/private.h5"})[0]
    assert s == 201
    assert api("PUT", f"/groups/{api.root}/links/p", {"h5path": "/", "h5domain": "/home/private.h5"})[0] \
        == 201
    assert api("GET", "/", h5path="/p", follow_external_links=1)[0] == 403


def test_links_listed_by_post_page_like_get(api):
    for name in ("c", "a", "b"):
        assert api("PUT", f"/groups/{api.root}/links/{name}", {"h5path": "/x"})[0] == 201
    s, out = api("POST", f"/groups/{api.root}/links", {"grp_ids": [api.root]}, Limit=2)
    assert [l["title"] for l in out["links"]] == ["a", "b"]
    s, out = api("POST", f"/groups/{api.root}/links", {"grp_ids": [api.root]}, CreateOrder=1)
    assert [l["title"] for l in out["links"]] == ["c", "a", "b"]


def test_acl_entries_set_through_acls_name_their_domain(api):
    assert api("PUT", "/acls/test_user2", {"read": True})[0] == 201
    out = api("GET", "/acls/test_user2")[1]["acl"]
    assert out["read"] is True and out["domain"] == api.domain
    assert "domain" not in api("GET", f"/acls/{USER}")[1]["acl"]


def test_bitshuffle_datasets(api):
    for filters in ([{"class": "H5Z_FILTER_BITSHUFFLE", "id": 32008, "name": "bitshuffle"}],
                    [{"class": "H5Z_FILTER_BITSHUFFLE", "id": 32008, "name": "bitshuffle"},
                     {"class": "H5Z_FILTER_DEFLATE", "id": 1, "level": 5}]):
        s, d = api("POST", "/datasets", {"type": "H5T_STD_I32LE", "shape": [100, 30],
                                         "creationProperties": {"filters": filters}})
        assert s == 201
        values = (np.arange(3000, dtype=np.int32).reshape(100, 30) // 7).tolist()
        assert api("PUT", f"/datasets/{d['id']}/value", {"value": values})[0] == 200
        assert api("GET", f"/datasets/{d['id']}/value")[1]["value"] == values


def test_fields_named_in_the_body_of_value_requests(api):
    t = {"class": "H5T_COMPOUND", "fields": [{"name": n, "type": "H5T_STD_I32LE"}
                                             for n in ("a", "b")]}
    s, d = api("POST", "/datasets", {"type": t, "shape": 5})
    # One member's values, given bare, in the body's `fields`.
    assert api("PUT", f"/datasets/{d['id']}/value", {"value": [1, 2, 3, 4, 5], "fields": "b"})[0] == 200
    s, out = api("POST", f"/datasets/{d['id']}/value", {"points": [1, 3], "fields": "b"})
    assert s == 200 and out["value"] == [[2], [4]]
    assert api("GET", f"/datasets/{d['id']}/value")[1]["value"] == [[0, i] for i in range(1, 6)]
    assert api("PUT", f"/datasets/{d['id']}/value", {"value": [1], "fields": 3})[0] == 400


def test_soft_links_relative_and_cyclic_in_h5path_walks(api):
    s, g = api("POST", "/groups", {"link": {"id": api.root, "name": "g"}})
    s, d = api("POST", "/datasets", {"type": "H5T_STD_I32LE", "shape": [2],
                                     "link": {"id": g["id"], "name": "d"}})
    # A relative target is read from the group holding the link.
    assert api("PUT", f"/groups/{g['id']}/links/rel", {"h5path": "d"})[0] == 201
    s, out = api("GET", "/", h5path="/g/rel", follow_soft_links=1)
    assert s == 200 and out["id"] == d["id"]
    # A cycle of soft links is a 400 that says so, not a hang or a 500.
    assert api("PUT", f"/groups/{api.root}/links/a", {"h5path": "/b"})[0] == 201
    assert api("PUT", f"/groups/{api.root}/links/b", {"h5path": "/a"})[0] == 201
    s, out = api("GET", "/", h5path="/a/x", follow_soft_links=1)
    assert s == 400 and "cycle" in json.dumps(out)


def test_every_advertised_compressor_makes_a_dataset_that_names_its_filter(api):
    """HSDS's `compressors` are names a dataset can be made with; each
    dataset's filter comes back with class, id and name (h5pyd reads all
    three), named as given (deflate as HSDS names it, gzip)."""
    compressors = api("GET", "/")[1]["compressors"]
    assert len(compressors) >= 5
    data = np.arange(3200, dtype="<f4").reshape(40, 80)
    for name in compressors:
        status, out = api("POST", "/datasets", {"type": "H5T_IEEE_F32LE", "shape": [40, 80],
                                                "creationProperties": {"filters": [name]}})
        assert status == 201, (name, out)
        got = api("GET", f"/datasets/{out['id']}")[1]
        assert got["creationProperties"]["layout"]["class"] == "H5D_CHUNKED"
        (entry,) = got["creationProperties"]["filters"]
        assert {"class", "id", "name"} <= set(entry), entry
        assert entry["name"] == ("gzip" if name == "deflate" else name)
        assert api("PUT", f"/datasets/{out['id']}/value", {"value": data.tolist()})[0] == 200
        assert api("GET", f"/datasets/{out['id']}/value")[1]["value"] == data.tolist()


def test_filter_entries_are_completed_as_hsds_completes_them(server, api):
    """h5pyd 0.24 sends `{"class": "H5Z_FILTER_DEFLATE", "id": 1, "level":
    6}` (no name); other clients a user class by name, or a bare name.
    h5pyd 1.0 reads `dset.compression` from the entries' class, id and
    name, and failed on such datasets (KeyError)."""
    h5pyd = pytest.importorskip("h5pyd")
    made = {
        "old": [{"class": "H5Z_FILTER_SHUFFLE", "id": 2},
                {"class": "H5Z_FILTER_DEFLATE", "id": 1, "level": 6}],
        "user": [{"class": "H5Z_FILTER_USER", "name": "lz4"}],
        "bare": ["shuffle", "gzip"],
    }
    for link, filters in made.items():
        status, out = api("POST", "/datasets", {
            "type": "H5T_STD_I32LE", "shape": [100],
            "creationProperties": {"filters": filters,
                                   "layout": {"class": "H5D_CHUNKED", "dims": [10]}},
            "link": {"id": api.root, "name": link}})
        assert status == 201, (link, out)
    status, out = api("POST", "/datasets", {
        "type": "H5T_STD_I32LE", "shape": [100],
        "creationProperties": {"filters": [{"class": "H5Z_FILTER_DEFLATE", "id": 32015}]}})
    assert status == 400 and "H5Z_FILTER_DEFLATE" in out["message"]
    with h5pyd.File(api.domain, "r", endpoint=server.endpoint, username=USER,
                    password=USERS[USER]) as f:
        assert (f["old"].compression, f["old"].compression_opts, f["old"].shuffle) == \
            ("gzip", 6, True)
        # (h5pyd counts only HDF5's own classes as compression; it reads the
        # entry without failing, which is what it could not do before.)
        assert f["user"].compression in ("lz4", None)
        assert (f["bare"].compression, f["bare"].shuffle) == ("gzip", True)
    (user,) = api("GET", f"/datasets/{out_id(api, 'user')}")[1]["creationProperties"]["filters"]
    assert user == {"class": "H5Z_FILTER_USER", "name": "lz4", "id": 32004}


def out_id(api, link):
    return api("GET", f"/groups/{api.root}/links/{link}")[1]["link"]["id"]


def test_domain_listings_take_the_header_patterns_and_queries(server):
    """`GET /domains` as HSDS answers it: the folder from the X-Hdf-domain
    header too, shell bracket sets in `pattern`, and `query` over each
    domain's scalar root attributes (hsls --query, Folder(query=)); a
    domain the caller may not read never matches a query."""
    folder = f"/home/{USER}/q{next(_counter)}/"
    assert server.request("PUT", "/", {"folder": 1}, user=USER, params={"domain": folder})[0] == 201
    for i in range(5):
        domain = f"{folder}d{i}.h5"
        status, _, out = server.request("PUT", "/", user=USER, params={"domain": domain})
        assert status == 201
        root = out["root"]
        for name, t, v in (("attr1", "H5T_STD_I32LE", i * 3), ("ratio", "H5T_IEEE_F64LE", i / 2),
                           ("attr2", {"class": "H5T_STRING", "charSet": "H5T_CSET_UTF8",
                                      "strPad": "H5T_STR_NULLTERM", "length": "H5T_VARIABLE"},
                            f"A{i:07d}")):
            assert server.request("PUT", f"/groups/{root}/attributes/{name}",
                                  {"type": t, "value": v}, user=USER,
                                  params={"domain": domain})[0] == 201
    # Another user's domain in the folder, with matching attributes: not theirs to query.
    other = f"{folder}theirs.h5"
    status, _, out = server.request("PUT", "/", {"owner": "test_user2"}, user="admin",
                                    params={"domain": other})
    assert status == 201
    assert server.request("PUT", f"/groups/{out['root']}/attributes/attr1",
                          {"type": "H5T_STD_I32LE", "value": 100}, params={"domain": other})[0] == 201
    no = {k: False for k in ("create", "read", "update", "delete", "readACL", "updateACL")}
    assert server.request("PUT", f"/acls/{USER}", no, params={"domain": other})[0] in (200, 201)
    assert server.request("GET", "/", user=USER, params={"domain": other})[0] == 403

    def names(**params):
        status, _, out = server.request("GET", "/domains", user=USER, params=params,
                                        headers={"X-Hdf-domain": folder})
        assert status == 200, out
        return [d["name"].rsplit("/", 1)[1] for d in out["domains"]]

    assert names() == ["d0.h5", "d1.h5", "d2.h5", "d3.h5", "d4.h5", "theirs.h5"]
    assert names(pattern="d[1-3].h5") == ["d1.h5", "d2.h5", "d3.h5"]
    assert names(pattern="d[!1-3].h5") == ["d0.h5", "d4.h5"]
    assert names(query="attr1 > 7") == ["d3.h5", "d4.h5"]
    assert names(query="attr1 > 2 AND attr2 != 'A0000004'") == ["d1.h5", "d2.h5", "d3.h5"]
    assert names(query="(ratio == 0.5) | (attr2 == 'A0000003')") == ["d1.h5", "d3.h5"]
    assert names(query="missing > 1") == []
    assert names(query="attr1 > 0", Limit=2) == ["d1.h5", "d2.h5"]
    status, _, out = server.request("GET", "/domains", user=USER, params={"query": "attr1 >"},
                                    headers={"X-Hdf-domain": folder})
    assert status == 400 and "query" in out["message"]
    assert server.request("GET", "/domains", user=USER, params={"pattern": "d[1"},
                          headers={"X-Hdf-domain": folder})[0] == 400
    # Entries the caller may not read still say whose they are (hsls reads
    # every entry's owner), not what they hold.
    status, _, out = server.request("GET", "/domains", user=USER, params={"domain": folder})
    theirs = [d for d in out["domains"] if d["name"].endswith("theirs.h5")][0]
    assert theirs["owner"] == "test_user2" and "lastModified" in theirs and "root" not in theirs


def test_datasets_made_without_a_layout_are_laid_out_and_reported_as_hsds_does(api):
    """No layout given: chunks of 1-4 MiB from a megabyte up (and for
    resizable or filtered datasets), reported as stored; smaller ones
    contiguous, said so. An initializer h5lake would not run is refused."""
    def layout(body):
        status, out = api("POST", "/datasets", body)
        assert status == 201, out
        got = api("GET", f"/datasets/{out['id']}")[1]
        assert got["layout"] == got["creationProperties"]["layout"]
        return got["layout"]

    big = layout({"type": "H5T_IEEE_F32LE", "shape": [50000, 80000]})
    assert big["class"] == "H5D_CHUNKED"
    size = 4 * np.prod(big["dims"])
    assert (1 << 19) <= size <= (4 << 20) and all(c < d for c, d in zip(big["dims"], [50000, 80000]))
    assert layout({"type": "H5T_IEEE_F32LE", "shape": [10, 10]}) == {"class": "H5D_CONTIGUOUS"}
    assert layout({"type": "H5T_STD_I8LE", "shape": [1 << 20]})["class"] == "H5D_CHUNKED"
    # An empty extendible dataset gets chunks that appends fill by the megabyte.
    assert layout({"type": "H5T_STD_I64LE", "shape": [0], "maxdims": [0]}) == \
        {"class": "H5D_CHUNKED", "dims": [131072]}
    assert layout({"type": "H5T_STD_I8LE", "shape": [10], "maxdims": [10]}) == \
        {"class": "H5D_CHUNKED", "dims": [10]}
    assert layout({"type": "H5T_STD_I8LE"}) == {"class": "H5D_CONTIGUOUS"}
    status, out = api("POST", "/datasets", {
        "type": "H5T_STD_I32LE", "shape": [100],
        "creationProperties": {"initializer": ["arange", "--start=0", "--step=1"]}})
    assert status == 501 and "initializer" in out["message"]


def test_putting_links_again_is_200_and_other_targets_conflict(api):
    links = {"s": {"h5path": "/x"}, "e": {"h5path": "/y", "h5domain": "/other.h5"}}
    assert api("PUT", f"/groups/{api.root}/links", {"links": links})[0] == 201
    assert api("PUT", f"/groups/{api.root}/links", {"links": links})[0] == 200
    more = dict(links, n={"h5path": "/z"})
    assert api("PUT", f"/groups/{api.root}/links", {"links": more})[0] == 201
    status, out = api("PUT", f"/groups/{api.root}/links",
                      {"links": {"s": {"h5path": "/elsewhere"}, "m": {"h5path": "/m"}}})
    assert status == 409 and "s" in out["message"]
    names = [l["title"] for l in api("GET", f"/groups/{api.root}/links")[1]["links"]]
    assert sorted(names) == ["e", "n", "s"]
    assert api("GET", f"/groups/{api.root}/links/s")[1]["link"]["h5path"] == "/x"


def test_a_clients_link_times_are_kept_only_near_the_servers_clock(api):
    """h5pyd 1.0 sends each new link with the client's own `created`;
    HSDS keeps it within 300 s of its clock and takes its own otherwise."""
    import time
    near = time.time() - 10
    body = {"links": {"near": {"h5path": "/a", "created": near},
                      "far": {"h5path": "/b", "created": 999}}}
    assert api("PUT", f"/groups/{api.root}/links", body)[0] == 201
    got = {l["title"]: l["created"] for l in api("GET", f"/groups/{api.root}/links")[1]["links"]}
    assert abs(got["near"] - near) < 1e-3
    assert abs(got["far"] - time.time()) < 60


def test_hsds_1_0_answer_details(api):
    """What HSDS 1.0's own tests read: a dataset type's three hrefs, where
    a hard link leads (`target`), and 400 for a POST of an id already made."""
    status, d = api("POST", "/datasets", {"type": "H5T_IEEE_F32LE"})
    assert status == 201
    hrefs = api("GET", f"/datasets/{d['id']}/type")[1]["hrefs"]
    assert [h["rel"] for h in hrefs] == ["self", "owner", "root"]
    assert api("PUT", f"/groups/{api.root}/links/d", {"id": d["id"]})[0] == 201
    (link,) = api("GET", f"/groups/{api.root}/links")[1]["links"]
    assert link["target"] == f"/datasets/{d['id']}" and link["collection"] == "datasets"
    status, out = api("POST", "/datasets", {"type": "H5T_IEEE_F32LE", "id": d["id"]})
    assert status == 400 and "already exists" in out["message"] and ".json" not in out["message"]
    status, g = api("POST", "/groups")
    assert api("POST", "/groups", {"id": g["id"]})[0] == 400
