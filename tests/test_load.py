"""`h5lake.load` (copy and link mode) and `h5lake.get` on real HDF5 files
written by libhdf5, compared object by object and value by value with
h5py's reading of the same file."""

import json
import os
import shutil
import glob

import numpy as np
import pytest

import h5lake
from diffutil import assert_same
import h5files

h5py = pytest.importorskip("h5py")


def _walk(h5obj, lakeobj, where="/", lib=h5lake):
    """Asserts that an h5py group and an h5lake group hold the same tree:
    link kinds and targets, attributes, dataset types, shapes, layouts,
    filters, fill values and values."""
    assert sorted(h5obj.keys()) == sorted(lakeobj.keys()), where
    _same_attrs(h5obj, lakeobj, where)
    for name in h5obj:
        path = f"{where.rstrip('/')}/{name}"
        hl = h5obj.get(name, getlink=True)
        ll = lakeobj.get(name, getlink=True)
        assert type(hl).__name__ == type(ll).__name__, path
        if isinstance(hl, h5py.SoftLink):
            assert hl.path == ll.path, path
            continue
        if isinstance(hl, h5py.ExternalLink):
            assert (hl.filename, hl.path) == (ll.filename, ll.path), path
            continue
        h, l = h5obj[name], lakeobj[name]
        if isinstance(h, h5py.Group):
            assert isinstance(l, lib.Group), path
            if path.count("/loop") < 1:
                _walk(h, l, path, lib)
        elif isinstance(h, h5py.Dataset):
            _same_dataset(h, l, path, lib)
        else:
            assert isinstance(l, lib.Datatype), path
            assert h.dtype == l.dtype, path
            _same_attrs(h, l, path)


def _same_attrs(h, l, where):
    assert sorted(h.attrs.keys()) == sorted(l.attrs.keys()), where
    for k in h.attrs:
        assert_same(h.attrs[k], l.attrs[k], f"{where} attr {k}")


def _packed(dt):
    """A compound dtype without padding: h5lake stores compound members
    packed, as HSDS does, so a padded HDF5 type comes back packed."""
    if dt.names is None:
        return dt
    return np.dtype([(n, _packed(dt.fields[n][0])) for n in dt.names])


def _same_dataset(h, l, path, lib=h5lake):
    assert isinstance(l, lib.Dataset), path
    assert l.dtype == _packed(h.dtype), path
    assert l.shape == h.shape, path
    assert l.maxshape == h.maxshape, path
    assert l.compression == h.compression, path
    assert l.compression_opts == h.compression_opts, path
    assert l.shuffle == h.shuffle, path
    assert l.fletcher32 == h.fletcher32, path
    if h.chunks is not None:
        assert l.chunks is not None, path
    if h.fillvalue is not None and h.dtype.kind not in "OV":
        assert_same(h.fillvalue, l.fillvalue, f"{path} fillvalue")
    _same_attrs(h, l, path)
    if h.shape is None:
        return
    hv = h[()]
    if h.dtype != l.dtype:
        hv = np.asarray(hv).astype(l.dtype)
    assert_same(hv, l[()], path)


@pytest.fixture(scope="module")
def everything(tmp_path_factory):
    return h5files.write_everything(str(tmp_path_factory.mktemp("src") / "everything.h5"))


@pytest.mark.parametrize("link,keep", [(False, False), (False, True), (True, False)],
                         ids=["copy", "copy-keep-chunks", "link"])
def test_load_round_trips_every_object(everything, tmp_path, link, keep):
    dest = tmp_path / "loaded.h5l"
    report = h5lake.load(everything, dest, link=link, keep_chunks=keep)
    assert report["datasets"] >= 20 and report["groups"] == 4
    assert report["skipped"] == []
    with h5py.File(everything, "r") as h, h5lake.File(dest, "r") as l:
        _walk(h, l)
        # One object behind two hard links, and a cycle back to /grp.
        assert l["grp/gzip"].id == l["grp/hard_again"].id
        assert l["grp/sub/loop"].id == l["grp"].id
    if link:
        assert report["linked_datasets"] >= 5
    else:
        assert report["linked_datasets"] == 0 and report["chunks"] > 0
    # Chunk bytes: the file's own (libhdf5 layout) only when asked for.
    formats = {json.loads(open(p).read()).get("h5lake", {}).get("chunkFormat")
               for p in glob.glob(str(dest / "db/*/d/*/.dataset.json"))}
    assert ("hdf5" in formats) == keep, formats
    with h5lake.File(dest, "r+") as l:   # and they stay writable
        l["grp/gzip"][1, 1:4] = [5, 6, 7]
        assert l["grp/gzip"][1, 1:4].tolist() == [5, 6, 7]


@pytest.mark.parametrize("link", [False, True], ids=["copy", "link"])
def test_load_then_get_gives_an_equal_hdf5_file(everything, tmp_path, link):
    store = tmp_path / "s.h5l"
    h5lake.load(everything, store, link=link)
    out = tmp_path / "back.h5"
    report = h5lake.get(store, out)
    assert report["skipped"] == []
    with h5py.File(everything, "r") as h, h5py.File(out, "r") as back:
        _walk(h, back, lib=h5py)
        assert back["grp/gzip"].chunks == h["grp/gzip"].chunks or link
        assert back["grp/gzip"].id == back["grp/hard_again"].id
        assert back["compact"].id.get_create_plist().get_layout() == h5py.h5d.COMPACT
    with pytest.raises(FileExistsError):
        h5lake.get(store, out)
    h5lake.get(store, out, force=True)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["back.h5", "s.h5l"]


def test_link_mode_reads_from_the_source_file(everything, tmp_path):
    src = tmp_path / "moved.h5"
    shutil.copy(everything, src)
    dest = tmp_path / "linked.h5l"
    h5lake.load(src, dest, link=True, hyperchunk=0)
    chunk_files = [p for p in glob.glob(str(dest / "db/**/*"), recursive=True)
                   if os.path.isfile(p) and not os.path.basename(p).startswith(".")]
    with h5lake.File(dest, "r") as l, h5py.File(src, "r") as h:
        np.testing.assert_array_equal(l["grp/gzip"][...], h["grp/gzip"][...])
    # Chunked data stayed in the source: the only chunk objects are the
    # copied variable-length, compact and padded-compound datasets.
    assert len(chunk_files) < 12, chunk_files
    os.remove(src)
    with h5lake.File(dest, "r") as l:
        with pytest.raises((OSError, KeyError)):
            l["grp/gzip"][...]


def test_link_mode_writes_are_copy_on_write(everything, tmp_path):
    dest = tmp_path / "cow.h5l"
    h5lake.load(everything, dest, link=True)
    before = h5py.File(everything, "r")["grp/gzip"][...]
    with h5lake.File(dest, "r+") as l:
        l["grp/gzip"][0, :5] = -7
        got = l["grp/gzip"][...]
    expected = before.copy()
    expected[0, :5] = -7
    np.testing.assert_array_equal(got, expected)
    # The source file is untouched.
    np.testing.assert_array_equal(h5py.File(everything, "r")["grp/gzip"][...], before)


@pytest.mark.parametrize("hyperchunk", [0, 30_000, 200_000, None])
def test_hyperchunks_read_the_same_values(tmp_path, hyperchunk):
    src = h5files.write_many_small_chunks(str(tmp_path / "small.h5"), n_datasets=3,
                                          rows=50_000, chunk=1_000)
    with h5py.File(src, "a") as f:
        f.create_dataset("grid", data=np.arange(300 * 70, dtype="i4").reshape(300, 70),
                         chunks=(7, 9), compression="gzip")
    dest = tmp_path / "hyper.h5l"
    h5lake.load(src, dest, link=True, hyperchunk=hyperchunk)
    with h5py.File(src, "r") as h, h5lake.File(dest, "r") as l:
        for name in ("gt0/heights_0", "gt1/time_1", "grid"):
            np.testing.assert_array_equal(l[name][...], h[name][...])
        np.testing.assert_array_equal(l["gt0/heights_0"][12_345:23_456:3],
                                      h["gt0/heights_0"][12_345:23_456:3])
        np.testing.assert_array_equal(l["grid"][5:250:7, 3:66], h["grid"][5:250:7, 3:66])
        # Users see the file's chunks, as h5py shows them: hyper-chunks
        # (what is read at a time) are a detail of the stored layout.
        for name in ("gt0/heights_0", "grid"):
            assert l[name].chunks == h[name].chunks
            assert list(l[name].iter_chunks()) == list(h[name].iter_chunks())
            part = np.s_[3:40] if name != "grid" else np.s_[3:40, 10:30]
            assert list(l[name].iter_chunks(part)) == list(h[name].iter_chunks(part))
        if hyperchunk == 200_000:
            layout = l["gt0/heights_0"]._doc["creationProperties"]["layout"]
            assert layout["dims"] == [25_000] and layout["hyper_dims"] == [1_000]
            assert l["grid"]._doc["creationProperties"]["layout"]["dims"][1] == 72
    verbose = h5lake.ls(dest, "grid", verbose=True)
    assert any("Chunks:     {7, 9}" in line for line in verbose), verbose


def test_files_shipped_with_h5py(tmp_path):
    files = glob.glob(os.path.join(os.path.dirname(h5py.__file__), "tests", "data_files", "*.h5"))
    assert files
    for i, src in enumerate(files):
        for link in (False, True):
            dest = tmp_path / f"{i}-{link}.h5l"
            h5lake.load(src, dest, link=link)
            with h5py.File(src, "r") as h, h5lake.File(dest, "r") as l:
                _walk(h, l)


def test_not_hdf5_truncated_and_missing(tmp_path, everything):
    text = tmp_path / "notes.h5"
    text.write_text("just text\n")
    with pytest.raises(OSError, match="not an HDF5 file"):
        h5lake.load(text, tmp_path / "a.h5l")
    cut = tmp_path / "cut.h5"
    cut.write_bytes(open(everything, "rb").read()[:3000])
    with pytest.raises(OSError, match="truncated or damaged"):
        h5lake.load(cut, tmp_path / "b.h5l")
    with pytest.raises(FileNotFoundError):
        h5lake.load(tmp_path / "nope.h5", tmp_path / "c.h5l")
    assert sorted(os.listdir(tmp_path)) == ["cut.h5", "notes.h5"]


def test_unsupported_filter_is_named_and_nothing_is_left(tmp_path):
    pytest.importorskip("hdf5plugin")
    src = h5files.write_unsupported_filter(str(tmp_path / "bs.h5"))
    for link in (False, True):
        with pytest.raises(OSError, match="bitshuffle"):
            h5lake.load(src, tmp_path / "out.h5l", link=link)
    assert os.listdir(tmp_path) == ["bs.h5"]


def test_references_are_skipped_and_reported(tmp_path):
    src = tmp_path / "scales.h5"
    with h5py.File(src, "w") as f:
        f["time"] = np.arange(10.0)
        f["temp"] = np.arange(50.0).reshape(10, 5)
        f["time"].make_scale("time")
        f["temp"].dims[0].attach_scale(f["time"])
        f["ref"] = f["temp"].ref
    with pytest.raises(h5lake.IncompleteConversion, match="3 objects or parts") as e:
        h5lake.load(src, tmp_path / "s.h5l")
    assert e.value.report["skipped"]
    report = h5lake.load(src, tmp_path / "s.h5l", force=True, skip_unsupported=True)
    assert len(report["skipped"]) == 3, report["skipped"]
    skipped = " ".join(report["skipped"])
    assert "/ref" in skipped and "DIMENSION_LIST" in skipped and "REFERENCE_LIST" in skipped
    with h5lake.File(tmp_path / "s.h5l", "r") as l:
        assert "ref" not in l
        np.testing.assert_array_equal(l["temp"][...], np.arange(50.0).reshape(10, 5))
        with h5py.File(src, "r") as h:
            assert_same(h["time"].attrs["CLASS"], l["time"].attrs["CLASS"], "CLASS")


@pytest.mark.parametrize("link", [False, True], ids=["copy", "link"])
def test_scaleoffset_and_szip_load_and_come_back(tmp_path, link):
    """Chunks libhdf5 coded with scale-offset and szip decode in h5lake
    (copied: re-coded by h5lake; linked: read in place), and `get` writes
    a file libhdf5 reads back to the same values."""
    src = tmp_path / "so.h5"
    rng = np.random.default_rng(3)
    data = {
        "int_auto": (rng.integers(-500, 3000, (60, 70)).astype("i4"), dict(scaleoffset=True)),
        "int_bits": (rng.integers(0, 4000, (60, 70)).astype(">u2"), dict(scaleoffset=12)),
        "float": ((rng.random((60, 70)) - 0.5) * 1e4, dict(scaleoffset=3)),
        "fill": (np.full((60, 70), 7, "i8"), dict(scaleoffset=0, fillvalue=7)),
        "szip_nn": (np.arange(4200, dtype="<i2").reshape(60, 70), dict(compression="szip")),
        "szip_ec": (rng.random((60, 70)), dict(compression="szip", compression_opts=("ec", 16))),
        "szip_be": (np.arange(4200, dtype=">i4").reshape(60, 70) * 3,
                    dict(compression="szip", shuffle=True)),
    }
    with h5py.File(src, "w") as f:
        for name, (arr, kw) in data.items():
            f.create_dataset(name, data=arr, chunks=(16, 25), **kw)
    with h5py.File(src, "r") as f:
        expect = {name: f[name][...] for name in data}  # what libhdf5 decodes
    h5lake.load(src, tmp_path / "s.h5l", link=link)
    with h5lake.File(tmp_path / "s.h5l", "r") as l:
        for name in data:
            np.testing.assert_array_equal(l[name][...], expect[name], err_msg=name)
            assert l[name].dtype == expect[name].dtype
        assert l["float"].scaleoffset == 3 and l["szip_ec"].compression_opts == ("ec", 16)
    h5lake.get(tmp_path / "s.h5l", tmp_path / "back.h5")
    with h5py.File(tmp_path / "back.h5", "r") as f:
        for name in data:
            np.testing.assert_array_equal(f[name][...], expect[name], err_msg=name)
        assert f["int_bits"].scaleoffset == 12 and f["szip_nn"].compression == "szip"


@pytest.mark.parametrize("link", [False, True], ids=["copy", "link"])
def test_plugin_filters(tmp_path, link):
    """zstd, lz4 and Blosc chunks as hdf5plugin writes them; codecs h5lake
    lacks (bitshuffle, blosclz) are refused at load time, named."""
    hdf5plugin = pytest.importorskip("hdf5plugin")
    data = (np.arange(100_000, dtype="f4") % 977).reshape(100, 1000)
    src = tmp_path / "plugins.h5"
    with h5py.File(src, "w") as f:
        f.create_dataset("zstd", data=data, chunks=(10, 100), **hdf5plugin.Zstd(clevel=3))
        f.create_dataset("lz4", data=data, chunks=(10, 100), **hdf5plugin.LZ4())
        for cname in ("lz4", "lz4hc", "zlib", "zstd"):
            f.create_dataset("blosc_" + cname, data=data, chunks=(10, 100),
                             **hdf5plugin.Blosc(cname=cname, clevel=5))
    dest = tmp_path / "plugins.h5l"
    h5lake.load(src, dest, link=link)
    with h5lake.File(dest, "r") as l:
        for name in ("zstd", "lz4", "blosc_lz4", "blosc_lz4hc", "blosc_zlib", "blosc_zstd"):
            np.testing.assert_array_equal(l[name][...], data, err_msg=name)
            np.testing.assert_array_equal(l[name][3:77:5, 17:900:13], data[3:77:5, 17:900:13])
    for bad, kw in (("blosclz", hdf5plugin.Blosc(cname="blosclz")),
                    ("bitshuffle", hdf5plugin.Blosc(cname="lz4", shuffle=hdf5plugin.Blosc.BITSHUFFLE))):
        src2 = tmp_path / f"{bad}.h5"
        with h5py.File(src2, "w") as f:
            f.create_dataset("x", data=data, chunks=(10, 100), **kw)
        with pytest.raises(OSError, match=bad):
            h5lake.load(src2, tmp_path / f"{bad}.h5l", link=link)
        assert not (tmp_path / f"{bad}.h5l").exists()


def test_existing_destination_needs_force(tmp_path, everything):
    dest = tmp_path / "d.h5l"
    h5lake.load(everything, dest)
    with h5lake.File(dest, "r+") as f:
        f["marker"] = 1
    with pytest.raises(FileExistsError, match="force"):
        h5lake.load(everything, dest)
    with h5lake.File(dest, "r") as f:
        assert "marker" in f
    h5lake.load(everything, dest, force=True)
    with h5lake.File(dest, "r") as f:
        assert "marker" not in f and "grp" in f
    plain = tmp_path / "somedir"
    plain.mkdir()
    (plain / "keep.txt").write_text("x")
    with pytest.raises(FileExistsError):
        h5lake.load(everything, plain, force=True)
    assert (plain / "keep.txt").exists()


def test_cli_load_and_ls(tmp_path, everything, capsys):
    from h5lake.cli import main
    dest = tmp_path / "cli.h5l"
    assert main(["load", "--link", "--hyperchunk", "1M", "-q", everything, str(dest)]) == 0
    assert main(["ls", "-r", str(dest)]) == 0
    out = capsys.readouterr().out
    assert "gzip" in out and "Soft Link {/grp/gzip}" in out
    assert main(["load", "-q", everything, str(dest)]) == 2
    assert "force" in capsys.readouterr().err
    assert main(["diff", everything, str(dest)]) == 0


def test_ls_lists_an_hdf5_file(tmp_path, everything, capsys):
    from h5lake.cli import main
    assert main(["ls", "-r", everything + "/grp"]) == 0
    out = capsys.readouterr().out
    assert "gzip" in out and "Dataset {37, 53}" in out and "sub" in out
