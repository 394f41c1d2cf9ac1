"""What h5lake writes on disk is HSDS's object-store schema v2: the keys,
the JSON documents and the chunk bytes HSDS itself writes (checked against
the codec HSDS uses, numcodecs' Blosc, and against the HSDS-written fixture)."""

import json
import pathlib

import numpy as np
import pytest

import h5lake

FIXTURE = pathlib.Path(__file__).resolve().parent / "data/hsds-store/hsdstest"


def _domain(path):
    dom = json.loads((path / ".domain.json").read_text())
    root = dom["root"]
    return dom, root, path / "db" / root[2:19]


def _dataset_dir(db, dset_id):
    return db / "d" / dset_id[20:]


def test_keys_and_documents(tmp_path):
    p = tmp_path / "s.h5l"
    with h5lake.File(p, "w") as f:
        g = f.create_group("g")
        d = g.create_dataset("x", data=np.arange(12, dtype="<i4").reshape(3, 4), chunks=(2, 4))
        g.attrs["a"] = 1.5
    dom, root, db = _domain(p)
    assert set(dom) >= {"root", "owner", "acls", "created", "lastModified"}
    # The root group's last 16 hex digits are its first 16 each rotated by 8.
    first, last = root[2:19].replace("-", ""), root[20:].replace("-", "")
    assert last == "".join("%x" % ((int(c, 16) + 8) % 16) for c in first)
    rootdoc = json.loads((db / ".group.json").read_text())
    gid = rootdoc["links"]["g"]["id"]
    assert rootdoc["links"]["g"]["class"] == "H5L_TYPE_HARD"
    assert gid[2:19] == root[2:19], "objects share the domain's first 16 hex digits"
    gdoc = json.loads((db / "g" / gid[20:] / ".group.json").read_text())
    assert gdoc["attributes"]["a"]["type"] == {"class": "H5T_FLOAT", "base": "H5T_IEEE_F64LE"}
    assert gdoc["attributes"]["a"]["shape"] == {"class": "H5S_SCALAR"}
    assert gdoc["attributes"]["a"]["value"] == 1.5
    did = gdoc["links"]["x"]["id"]
    ddir = _dataset_dir(db, did)
    ddoc = json.loads((ddir / ".dataset.json").read_text())
    assert ddoc["type"] == {"class": "H5T_INTEGER", "base": "H5T_STD_I32LE"}
    assert ddoc["shape"]["dims"] == [3, 4]
    assert ddoc["creationProperties"]["layout"] == {"class": "H5D_CHUNKED", "dims": [2, 4]}
    chunks = sorted(x.name for x in ddir.iterdir() if not x.name.startswith("."))
    assert chunks == ["0_0", "1_0"]
    # Unfiltered chunks are the C-order element bytes; edge chunks are full size.
    assert (ddir / "0_0").read_bytes() == np.arange(8, dtype="<i4").tobytes()
    assert (ddir / "1_0").read_bytes() == np.r_[np.arange(8, 12), np.zeros(4)].astype("<i4").tobytes()


def test_compressed_chunks_are_what_hsds_writes(tmp_path):
    numcodecs = pytest.importorskip("numcodecs")
    p = tmp_path / "c.h5l"
    data = (np.sin(np.arange(4096, dtype="f4") / 50) * 1000).astype("<f4")
    with h5lake.File(p, "w") as f:
        f.create_dataset("gz", data=data, chunks=(1024,), compression="gzip", compression_opts=5, shuffle=True)
        f.create_dataset("zs", data=data, chunks=(1024,), compression="zstd")
    dom, root, db = _domain(p)
    links = json.loads((db / ".group.json").read_text())["links"]
    for name in ("gz", "zs"):
        ddir = _dataset_dir(db, links[name]["id"])
        for k in range(4):
            stored = (ddir / str(k)).read_bytes()
            assert stored[:2] == b"\x02\x01", "a Blosc frame, as HSDS stores compressed chunks"
            raw = numcodecs.Blosc().decode(stored)
            assert np.frombuffer(raw, "<f4").tolist() == data[k * 1024:(k + 1) * 1024].tolist()


def test_vlen_chunks_have_length_prefixes(tmp_path):
    p = tmp_path / "v.h5l"
    with h5lake.File(p, "w") as f:
        f.create_dataset("s", data=np.array(["a", "béta", ""], dtype=object), dtype=h5lake.string_dtype())
    dom, root, db = _domain(p)
    did = json.loads((db / ".group.json").read_text())["links"]["s"]["id"]
    raw = (_dataset_dir(db, did) / "0").read_bytes()
    want = b"".join(len(s).to_bytes(4, "little") + s for s in (b"a", "béta".encode(), b""))
    assert raw == want


def test_documents_match_hsds_forms():
    f = h5lake.File(FIXTURE / "home/test_user1/fixture.h5", "r")
    frames = f["instrument/detector/frames"]
    assert (frames.compression, frames.compression_opts, frames.shuffle) == ("gzip", 6, True)
    assert frames[4, 63, 47] == (64 * 48 * 5 - 1) % 65536
