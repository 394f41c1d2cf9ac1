"""h5lake on S3: ``s3://bucket/path/name.h5`` URLs through the Python API
and the tools, against a local S3 server (moto, see s3server.py). The
differential tests also run with the h5lake side on S3 (conftest's ``pair``).
"""

import urllib.parse
import urllib.request
import xml.etree.ElementTree as ET

import numpy as np
import pytest

import h5lake


def bucket_keys(bucket, prefix=""):
    """Every key in the bucket under ``prefix``, asked of the server directly
    (moto needs no signature)."""
    import os
    endpoint = os.environ["AWS_ENDPOINT_URL"]
    keys, token = [], None
    while True:
        q = {"list-type": "2", "prefix": prefix}
        if token:
            q["continuation-token"] = token
        with urllib.request.urlopen(f"{endpoint}/{bucket}?{urllib.parse.urlencode(q)}") as r:
            root = ET.fromstring(r.read())
        ns = {"s3": root.tag.split("}")[0].strip("{")}
        keys += [e.text for e in root.findall("s3:Contents/s3:Key", ns)]
        token_el = root.find("s3:NextContinuationToken", ns)
        if token_el is None:
            return sorted(keys)
        token = token_el.text


def domain_doc(url):
    """The ``.domain.json`` of the domain at ``url``, read with boto3."""
    import json
    import os

    import boto3
    bucket, path = url[len("s3://"):].split("/", 1)
    s3 = boto3.client("s3", endpoint_url=os.environ["AWS_ENDPOINT_URL"])
    return json.loads(s3.get_object(Bucket=bucket, Key=f"{path}/.domain.json")["Body"].read())


def test_layout_is_hsds(s3_bucket, s3_root):
    prefix = s3_root.split("/", 3)[3]
    url = f"{s3_root}/home/user/run.h5"
    with h5lake.File(url, "w") as f:
        assert f.filename == url
        f["x"] = np.arange(10)
        f.attrs["a"] = 1
    keys = bucket_keys(s3_bucket)
    assert f"{prefix}/home/user/run.h5/.domain.json" in keys
    root_docs = [k for k in keys if k.startswith("db/") and k.endswith("/.group.json")]
    assert root_docs, keys
    assert any(k.startswith("db/") and "/d/" in k and k.endswith("/0") for k in keys), keys


def test_modes_follow_h5py(s3_root):
    url = f"{s3_root}/m.h5"
    with pytest.raises(FileNotFoundError):
        h5lake.File(url, "r")
    with pytest.raises(FileNotFoundError):
        h5lake.File(url, "r+")
    with h5lake.File(url, "w-") as f:
        f["a"] = [1, 2, 3]
    with pytest.raises(FileExistsError):
        h5lake.File(url, "w-")
    with pytest.raises(FileExistsError):
        h5lake.File(url, "x")
    with h5lake.File(url, "a") as f:
        f["b"] = 2.5
    with h5lake.File(url, "r") as f:
        assert f.mode == "r"
        assert sorted(f) == ["a", "b"]
        with pytest.raises(ValueError):
            f["c"] = 1
    with h5lake.File(url, "r+") as f:
        del f["b"]
    with h5lake.File(url, "w") as f:         # truncates
        assert list(f) == []
    with h5lake.File(url) as f:
        assert list(f) == []


def test_missing_bucket_says_so(s3_bucket):
    with pytest.raises(FileNotFoundError, match="create it first"):
        h5lake.File("s3://no-such-bucket-h5lake/x.h5", "a")


def test_a_store_among_the_buckets_objects_is_refused(s3_bucket):
    """From an S3 audit: `s3://bucket/db` and stores below it were made
    among the objects (db/) every store of the bucket keeps, and removing
    another store then removed them, silently."""
    for name in ("db", "db/x.h5", "db/g-00000000-0000/y.h5"):
        with pytest.raises(ValueError, match="db/ holds the bucket's objects"):
            h5lake.File(f"s3://{s3_bucket}/{name}", "w")
    with pytest.raises((FileNotFoundError, OSError)):
        h5lake.File(f"s3://{s3_bucket}/db/x.h5", "r")


def test_no_credentials_says_what_to_set(s3_root, monkeypatch):
    monkeypatch.delenv("AWS_ACCESS_KEY_ID")
    monkeypatch.delenv("AWS_SECRET_ACCESS_KEY")
    with pytest.raises(OSError, match="AWS_ACCESS_KEY_ID"):
        h5lake.File(f"{s3_root}/x.h5", "a")


@pytest.mark.parametrize("endpoint", ["127.0.0.1:9000", "s3.amazonaws.com", "http://",
                                      "http://127.0.0.1:99999", "http://a b"])
def test_a_malformed_endpoint_is_an_error_that_names_it(s3_root, monkeypatch, endpoint):
    """From an audit: an endpoint without a scheme, or with a bad port,
    raised a Rust panic (PanicException, which `except Exception` does not
    catch) instead of an error."""
    monkeypatch.setenv("AWS_ENDPOINT_URL", endpoint)
    monkeypatch.delenv("AWS_ENDPOINT_URL_S3", raising=False)
    with pytest.raises(OSError, match="AWS_ENDPOINT_URL"):
        h5lake.File(f"{s3_root}/x.h5", "r")


def test_chunked_reads_and_writes_many_chunks(s3_root):
    # Hundreds of chunks: the batched fetch path, partial chunk updates and
    # compression, compared with numpy.
    data = np.random.default_rng(7).normal(size=(300, 200)).astype("f4")
    with h5lake.File(f"{s3_root}/big.h5", "w") as f:
        d = f.create_dataset("d", data=data, chunks=(10, 20), compression="gzip", shuffle=True)
        np.testing.assert_array_equal(d[...], data)
        np.testing.assert_array_equal(d[5:295:3, 7:190:5], data[5:295:3, 7:190:5])
        d[100:150, 30:40] = -1
        data[100:150, 30:40] = -1
        np.testing.assert_array_equal(d[[1, 50, 120, 299], :], data[[1, 50, 120, 299], :])
        e = f.create_dataset("e", shape=(1000,), chunks=(10,), dtype="i8", fillvalue=-5)
        e[::97] = 3
    with h5lake.File(f"{s3_root}/big.h5", "r", rdcc_nbytes=0) as f:
        np.testing.assert_array_equal(f["d"][...], data)
        want = np.full(1000, -5)
        want[::97] = 3
        np.testing.assert_array_equal(f["e"][...], want)


def test_external_links_resolve_inside_the_bucket(s3_root):
    with h5lake.File(f"{s3_root}/dir/target.h5", "w") as t:
        t["v"] = 42
    with h5lake.File(f"{s3_root}/dir/src.h5", "w") as f:
        f["rel"] = h5lake.ExternalLink("target.h5", "/v")
        f["abs"] = h5lake.ExternalLink(f"{s3_root}/dir/target.h5", "/v")
        assert f["rel"][()] == 42
        assert f["abs"][()] == 42


def test_tools_take_s3_urls(s3_root, tmp_path):
    url = f"{s3_root}/tools.h5"
    with h5lake.File(url, "w") as f:
        g = f.create_group("g")
        g["d"] = np.arange(6).reshape(2, 3)
        f.attrs["title"] = "x"
    local = str(tmp_path / "copy.h5l")
    with h5lake.File(local, "w") as f:
        g = f.create_group("g")
        g["d"] = np.arange(6).reshape(2, 3)
        f.attrs["title"] = "x"
    assert h5lake.ls(url) == ["g  Group"]
    assert h5lake.ls(f"{url}/g") == ["d  Dataset {2, 3}"]
    assert h5lake.diff(url, local) == []
    info, local_info = h5lake.info(url), h5lake.info(local)
    assert info["store"] == url
    for key in ("groups", "datasets", "attributes", "links", "logical_bytes", "chunks", "chunk_bytes"):
        assert info[key] == local_info[key], key
    assert info["metadata_bytes"] > 0
    h5lake.cp(f"{url}/g/d", f"{url}/d2")
    h5lake.mv(f"{url}/d2", f"{url}/d3")
    assert h5lake.ls(url) == ["d3  Dataset {2, 3}", "g   Group"]
    h5lake.rm(f"{url}/d3")
    assert h5lake.diff(url, local) == []
    h5lake.rm(url, recursive=True)
    with pytest.raises(FileNotFoundError):
        h5lake.File(url, "r")
    prefix = s3_root.split("/", 3)[3]
    assert not [k for k in bucket_keys(s3_root.split("/")[2], prefix) if "tools.h5" in k]


def test_load_and_get_through_s3(s3_root, tmp_path):
    """An HDF5 file loaded straight into a bucket and written back out: the
    values survive, a failed or refused load leaves nothing behind, and
    --force replaces the old domain's objects along with its name."""
    h5py = pytest.importorskip("h5py")
    src = tmp_path / "src.h5"
    data = np.arange(20_000, dtype="f8").reshape(200, 100)
    with h5py.File(src, "w") as f:
        f.create_dataset("g/x", data=data, chunks=(50, 50), compression="gzip")
        f["g"].attrs["units"] = "m"
    url = f"{s3_root}/loaded.h5"
    bucket, prefix = s3_root.split("/")[2], s3_root.split("/", 3)[3]
    report = h5lake.load(src, url)
    assert report["datasets"] == 1 and report["chunks"] == 8
    with h5lake.File(url, "r") as f:
        np.testing.assert_array_equal(f["g/x"][()], data)
        assert f["g"].attrs["units"] == "m"
    keys_before = bucket_keys(bucket, prefix)
    assert keys_before == [f"{prefix}/loaded.h5/.domain.json"]   # no leftover .partial- domain
    old_db = f"db/{domain_doc(url)['root'][2:19]}/"
    keys = bucket_keys(bucket, old_db)
    records = [k for k in keys if "/.h5lake/stats/" in k]
    assert len(keys) - len(records) == 1 + 2 + 8   # root, group, dataset + 8 chunks
    assert len(records) == 8                        # and each chunk's statistics
    with pytest.raises(FileExistsError):
        h5lake.load(src, url)
    with pytest.raises(OSError, match="--link"):
        h5lake.load(src, f"{s3_root}/linked.h5", link=True)
    assert bucket_keys(bucket, prefix) == keys_before
    # Replace it: the old objects go too.
    with h5py.File(src, "w") as f:
        f["y"] = np.arange(3)
    h5lake.load(src, url, force=True)
    with h5lake.File(url, "r") as f:
        assert list(f) == ["y"]
    assert bucket_keys(bucket, prefix) == keys_before
    assert bucket_keys(bucket, old_db) == []
    out = tmp_path / "out.h5"
    h5lake.get(url, out)
    with h5py.File(out, "r") as f:
        np.testing.assert_array_equal(f["y"][()], np.arange(3))


def _child_reads(url, q):
    with h5lake.File(url, "r") as f:
        q.put(f["d"][...].tolist())


def test_forked_children_can_use_s3(s3_root):
    # The parent's S3 runtime and chunk thread pool do not survive a fork
    # (no threads); a child must get its own instead of hanging.
    import multiprocessing
    url = f"{s3_root}/fork.h5"
    with h5lake.File(url, "w") as f:
        f.create_dataset("d", data=np.arange(40), chunks=(4,))
        assert f["d"][...].sum() == 780       # the parent has used S3 before forking
    ctx = multiprocessing.get_context("fork")
    q = ctx.Queue()
    p = ctx.Process(target=_child_reads, args=(url, q))
    p.start()
    try:
        assert q.get(timeout=60) == list(range(40))
    finally:
        p.join(30)
        if p.is_alive():
            p.kill()
    assert p.exitcode == 0


def test_two_servers_on_one_bucket(s3_root):
    """`h5lake serve --root s3://…` twice: what one server writes, the other
    serves at once, and h5lake reads it straight from the bucket."""
    h5pyd = pytest.importorskip("h5pyd")
    import servers

    with servers.running(s3_root, count=2) as (a, b):
        admin = dict(username="admin", password="admin")
        h5pyd.Folder("/home/", mode="w", endpoint=a, **admin).close()
        data = np.arange(40_000, dtype="f4").reshape(200, 200)
        with h5pyd.File("/home/shared.h5", "w", endpoint=a, **admin) as f:
            f.create_dataset("x", data=data, chunks=(64, 64), compression="gzip")
            f.attrs["by"] = "server a"
        with h5pyd.File("/home/shared.h5", "r+", endpoint=b, **admin) as f:
            np.testing.assert_array_equal(f["x"][17:150:3, 5:190], data[17:150:3, 5:190])
            assert f.attrs["by"] == "server a"
            f["x"][0, :10] = -1
        with h5pyd.File("/home/shared.h5", "r", endpoint=a, **admin) as f:
            np.testing.assert_array_equal(f["x"][0, :12], [-1] * 10 + [10, 11])
    with h5lake.File(f"{s3_root}/home/shared.h5", "r") as f:
        assert f["x"].compression == "gzip"
        np.testing.assert_array_equal(f["x"][1:], data[1:])
