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
    filters, fill values and values (object references: their targets)."""
    assert sorted(h5obj.keys()) == sorted(lakeobj.keys()), where
    _same_attrs(h5obj, lakeobj, where, lib)
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
            assert l.dtype == _expected_dtype(h.dtype, lib), path
            _same_attrs(h, l, path, lib)


def _same_attrs(h, l, where, lib=h5lake):
    assert sorted(h.attrs.keys()) == sorted(l.attrs.keys()), where
    files = (h.file, l.file)
    for k in h.attrs:
        hv = h.attrs[k]
        if isinstance(hv, (np.ndarray, np.void)) and hv.dtype.names:
            hv = _as_dtype(hv, _expected_dtype(hv.dtype, lib))
        _same_values(hv, l.attrs[k], f"{where} attr {k}", files)


def _as_dtype(v, dt):
    """An array or compound scalar as read with dtype ``dt``."""
    if v.dtype == dt:
        return v
    if isinstance(v, np.void):
        return np.array(v).astype(dt)[()]
    return v.astype(dt)


def _same_values(h, l, where, files):
    """assert_same, member by member in compounds holding variable-length
    parts (numpy cannot compare such arrays as wholes); object references
    (of two files: ``files``) are the same when their targets' names are."""
    if type(h).__name__ == "Reference":
        assert type(l).__name__ == "Reference", f"{where}: {l!r} is not a reference"
        names = [f[r].name if r else None for f, r in zip(files, (h, l))]
        assert names[0] == names[1], f"{where}: references to {names}"
    elif isinstance(h, (np.ndarray, np.void)) and h.dtype.names and h.dtype.hasobject:
        assert isinstance(l, type(h)) and np.shape(h) == np.shape(l), where
        for n in h.dtype.names:
            _same_values(h[n], l[n], f"{where}.{n}", files)
    elif isinstance(h, np.ndarray) and h.dtype.kind == "O" and np.shape(h) != ():
        assert isinstance(l, np.ndarray) and h.shape == l.shape, where
        assert h.dtype == l.dtype, f"{where}: dtype {h.dtype} != {l.dtype}"
        for i, (a, b) in enumerate(zip(h.ravel(), l.ravel())):
            _same_values(a, b, f"{where}[{i}]", files)
    else:
        assert_same(h, l, where)


def _mem_size(dt):
    """Bytes of an element of ``dt`` as libhdf5 holds it in memory (where a
    variable-length string is a pointer and a sequence a length and a
    pointer)."""
    vlen = h5py.check_vlen_dtype(dt)
    if vlen is not None:
        return 8 if vlen in (str, bytes) else 16
    if dt.names is not None:
        return sum(_mem_size(dt.fields[n][0]) for n in dt.names)
    if dt.subdtype is not None:
        return int(np.prod(dt.subdtype[1])) * _mem_size(dt.subdtype[0])
    return dt.itemsize


def _packed(dt):
    """A compound dtype without padding: h5lake stores compound members
    packed, as HSDS does, so a padded HDF5 type comes back packed (members
    of variable length in libhdf5's memory form, as h5py reads them)."""
    if dt.names is None:
        return dt
    names = list(dt.names)
    formats = [_packed(dt.fields[n][0]) for n in names]
    offsets = np.cumsum([0] + [_mem_size(f) for f in formats])
    return np.dtype({"names": names, "formats": formats,
                     "offsets": [int(o) for o in offsets[:-1]], "itemsize": int(offsets[-1])})


def _expected_dtype(dt, lib):
    """What ``lib`` reads a dtype h5py read as: the same, padded compounds
    too (a store keeps their layout beside its packed chunks), but compounds
    with variable-length members packed."""
    return dt if lib is h5py or not h5lake._hl.h5t.has_vlen(dt) else _packed(dt)


def _same_dataset(h, l, path, lib=h5lake):
    assert isinstance(l, lib.Dataset), path
    assert l.dtype == _expected_dtype(h.dtype, lib), path
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
    _same_attrs(h, l, path, lib)
    if h.shape is None:
        return
    hv = h[()]
    if h.dtype != l.dtype:
        hv = _as_dtype(hv, l.dtype)
    _same_values(hv, l[()], path, (h.file, l.file))


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


def _round_trips(src, tmp_path):
    """Loads ``src`` into a store by copy and by link, and gets each store
    back as an HDF5 file, nothing left out; yields the (store, file) pairs."""
    for link in (False, True):
        mode = "link" if link else "copy"
        store, back = tmp_path / f"{mode}.h5l", tmp_path / f"{mode}.h5"
        report = h5lake.load(src, store, link=link)
        assert report["skipped"] == [], report["skipped"]
        assert h5lake.get(store, back)["skipped"] == []
        yield store, back


def _check_round_trips(src, tmp_path):
    """Every object of ``src`` as h5py reads it: the same through h5lake
    from both stores, and through h5py from the files `get` wrote."""
    for store, back in _round_trips(src, tmp_path):
        with h5py.File(src, "r") as h, h5lake.File(store, "r") as l:
            _walk(h, l)
        with h5py.File(src, "r") as h, h5py.File(back, "r") as b:
            _walk(h, b, lib=h5py)


def _h5type(obj):
    """The HDF5 type of a dataset or committed type (h5py compares them
    with H5Tequal: class, sizes, offsets, character sets, paddings...)."""
    return obj.id if isinstance(obj, h5py.Datatype) else obj.id.get_type()


def test_compounds_with_variable_length_members_round_trip(tmp_path):
    """h5py's tables of numbers and strings, and compounds holding
    sequences, nested compounds and arrays of strings: loaded in both modes
    (copied, as they cannot be linked), read alike, and written back by
    `get` with the same types, layouts and values."""
    src = h5files.write_variable_records(str(tmp_path / "records.h5"))
    _check_round_trips(src, tmp_path)
    names = ("table", "partial", "mixed", "nested", "spread", "scalar", "compact", "types/record")
    for mode in ("copy", "link"):
        with h5py.File(src, "r") as h, h5py.File(tmp_path / f"{mode}.h5", "r") as b:
            for name in names:
                assert _h5type(b[name]) == _h5type(h[name]), (mode, name)
            assert b["table"].chunks == (64,) and b["table"].maxshape == (None,)
            assert b["compact"].id.get_create_plist().get_layout() == h5py.h5d.COMPACT
            member = _h5type(b["mixed"]).get_member_type(1)
            assert member.get_cset() == h5py.h5t.CSET_ASCII and member.is_variable_str()
    with h5lake.File(tmp_path / "link.h5l", "r") as l:
        assert l["table"][3]["s"] == b"row 3 \xc3\xa9"


def test_padded_compounds_keep_their_layout(tmp_path):
    """Compounds with padding, members at chosen offsets, nested, aligned:
    h5lake reads them with the file's layout, and `get` writes it back
    (chunks repacked for the filters, fill value, attribute, committed
    type)."""
    src = h5files.write_padded_compounds(str(tmp_path / "padded.h5"))
    _check_round_trips(src, tmp_path)
    for mode in ("copy", "link"):
        with h5py.File(src, "r") as h, h5py.File(tmp_path / f"{mode}.h5", "r") as b:
            for name in ("padded", "padded_contig", "nested", "aligned", "types/padded"):
                assert _h5type(b[name]) == _h5type(h[name]), (mode, name)
            assert b["nested"].dtype.itemsize == 48
            assert b["nested"].dtype.fields["p"][0].itemsize == 24
            assert_same(h["padded"].fillvalue, b["padded"].fillvalue, "fillvalue")
            assert b.attrs["padded"].dtype == h.attrs["padded"].dtype


def test_long_doubles_and_quad_floats_round_trip(tmp_path):
    """numpy's longdouble (x87 extended precision in 16 bytes) in datasets,
    compounds, complex numbers and attributes, and an IEEE quad dataset:
    kept as laid out, and written back by `get` as the same float types."""
    src = h5files.write_long_floats(str(tmp_path / "long.h5"))
    names = ("ld", "ld_contig", "ld_scalar", "ld_compound", "ld_complex")
    quad = np.empty(6, "V16")
    with h5py.File(src, "r") as h:
        h["quad"].id.read(h5py.h5s.ALL, h5py.h5s.ALL, quad, mtype=_h5type(h["quad"]))
    for store, back in _round_trips(src, tmp_path):
        with h5py.File(src, "r") as h, h5lake.File(store, "r") as l:
            for name in names:
                _same_dataset(h[name], l[name], name)
            _same_attrs(h, l, "/")
            assert l["ld"].dtype == np.longdouble and "quad" in l
        with h5py.File(src, "r") as h, h5py.File(back, "r") as b:
            for name in names:
                _same_dataset(h[name], b[name], name, lib=h5py)
            _same_attrs(h, b, "/", h5py)
            for name in names + ("quad",):
                assert _h5type(b[name]) == _h5type(h[name]), name
            got = np.empty(6, "V16")
            b["quad"].id.read(h5py.h5s.ALL, h5py.h5s.ALL, got, mtype=_h5type(b["quad"]))
            assert got.tobytes() == quad.tobytes()


def test_time_types_are_kept_as_bytes_and_written_back(tmp_path):
    """HDF5's time class has no h5lake (nor numpy) type: its data is kept as
    opaque bytes, the type described beside, and `get` writes the same
    time type and bytes back."""
    src = h5files.write_time_types(str(tmp_path / "time.h5"))

    def raw(ds, size):
        buf = np.empty(ds.shape, f"V{size}")
        ds.id.read(h5py.h5s.ALL, h5py.h5s.ALL, buf, mtype=_h5type(ds))
        return buf.tobytes()

    when = np.int64(1_700_000_000).tobytes()
    for store, back in _round_trips(src, tmp_path):
        with h5py.File(src, "r") as h, h5lake.File(store, "r") as l, \
                h5py.File(back, "r") as b:
            for name, size in (("t32", 4), ("t64be", 8)):
                assert _h5type(h[name]).get_class() == h5py.h5t.TIME
                assert l[name].dtype == np.dtype(f"V{size}")
                assert l[name][...].tobytes() == raw(h[name], size), name
                assert _h5type(b[name]) == _h5type(h[name]), name
                assert raw(b[name], size) == raw(h[name], size), name
            assert b["t64be"].chunks == (3,)
            assert np.asarray(l.attrs["when"]).tobytes() == when
            a = h5py.h5a.open(b.id, b"when")
            assert a.get_type() == h5py.h5t.UNIX_D64LE
            buf = np.empty((), "V8")
            a.read(buf, mtype=a.get_type())
            assert buf.tobytes() == when


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


# ---------------------------------------------------------------------------
# HDF5 files opened in place: h5lake.File("data.h5") reads as h5py does
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("writer", ["everything", "variable_records", "padded_compounds",
                                    "references"])
def test_hdf5_files_open_in_place_as_h5py_reads_them(tmp_path, writer):
    src = str(tmp_path / "f.h5")
    getattr(h5files, f"write_{writer}")(src)
    before = open(src, "rb").read()
    with h5py.File(src, "r") as h, h5lake.File(src) as l:
        assert l.mode == "r" and l.filename == src
        _walk(h, l)
    assert open(src, "rb").read() == before
    assert os.listdir(tmp_path) == ["f.h5"]         # nothing written beside it


def test_files_shipped_with_h5py_open_in_place():
    files = glob.glob(os.path.join(os.path.dirname(h5py.__file__), "tests", "data_files", "*.h5"))
    assert files
    for src in files:
        with h5py.File(src, "r") as h, h5lake.File(src, "r") as l:
            _walk(h, l)


def test_hdf5_files_open_read_only(tmp_path, everything):
    """Every writing mode is refused, naming the way to a writable copy, and
    leaves the file as it was; the read-only handle refuses changes as
    h5py's does."""
    before = open(everything, "rb").read()
    for mode in ("r+", "a", "w"):
        with pytest.raises(OSError, match="read-only.*h5lake load"):
            h5lake.File(everything, mode)
    for mode in ("w-", "x"):                  # as h5py: the file exists
        with pytest.raises(FileExistsError):
            h5lake.File(everything, mode)
    with h5lake.File(everything) as f:
        with pytest.raises(ValueError, match="no write intent"):
            f["new"] = 1
        with pytest.raises((ValueError, OSError)):
            f["contig"][0, 0] = 5
        with pytest.raises((ValueError, OSError, KeyError)):
            f.attrs["title"] = "changed"
        assert f.attrs["title"] == "everything"
    assert open(everything, "rb").read() == before


def test_lzf_chunks_of_any_kind_in_hdf5_files_read_as_h5py_reads_them(tmp_path):
    """lzf (h5py's own compressor) after scale-offset, and over
    variable-length strings: a file holding either failed to open at all,
    or its chunks failed to decode."""
    src = str(tmp_path / "lzf.h5")
    with h5py.File(src, "w") as f:
        f.create_dataset("so", data=np.arange(500, dtype="i4") % 37, chunks=(100,),
                         scaleoffset=0, compression="lzf")
        f.create_dataset("s", data=np.array(["ab", "c\u00e9d", ""] * 40, dtype=object),
                         dtype=h5py.string_dtype(), chunks=(16,), compression="lzf")
        f["ok"] = 1
    with h5py.File(src, "r") as h:
        want = {k: h[k][()] for k in h}
    h5lake.load(src, tmp_path / "copy.h5l")
    for where in (src, tmp_path / "copy.h5l"):
        with h5lake.File(where, "r") as f:
            assert sorted(f) == sorted(want)
            for k, v in want.items():
                np.testing.assert_array_equal(f[k][()], v, err_msg=f"{where} {k}")


def test_hdf5_file_opened_in_place_lists_a_dataset_it_cannot_decode(tmp_path):
    """A dataset under a filter h5lake lacks (bzip2) is listed with its
    shape, type, chunks and attributes, as h5py without the plugin lists
    it; only reading its values fails, naming the filter. (It was left out
    of its group, attributes and all.)"""
    pytest.importorskip("hdf5plugin")
    src = h5files.write_unsupported_filter(str(tmp_path / "bz.h5"))
    with h5py.File(src, "a") as h:
        h["bzipped"].attrs["units"] = "counts"
    with h5py.File(src, "r") as h:
        want = h["bzipped"]
        want = (want.shape, want.dtype, want.chunks, dict(want.attrs))
    with pytest.warns(UserWarning, match="(?s)1 part.*bzipped: values.*bzip2"):
        f = h5lake.File(src)
    with f:
        assert sorted(f) == ["bzipped", "ok"]
        d = f["bzipped"]
        assert (d.shape, d.dtype, d.chunks, dict(d.attrs)) == want
        assert d.compression == "unknown" and d.filter_ids == (307,)     # as h5py says
        for read in (lambda: d[...], lambda: d[5], lambda: d.read_direct(np.empty(1000, int))):
            with pytest.raises(OSError, match="bzip2"):
                read()
        assert f["ok"][...].tolist() == list(range(10))
        assert [(g["path"], g["part"]) for g in f.skipped_objects] == [("/bzipped", "values")]
    import io
    with pytest.warns(UserWarning, match="(?s)1 part.*bzipped.*bzip2"):
        with h5lake.File(io.BytesIO(open(src, "rb").read())) as f:    # a file-like object too
            assert "bzipped" in f and f["bzipped"].attrs["units"] == "counts"


def test_files_that_are_not_stores_or_hdf5(tmp_path, everything):
    text = tmp_path / "notes.txt"
    text.write_text("just text\n")
    with pytest.raises(OSError, match="neither an h5lake store .* nor an HDF5 file"):
        h5lake.File(text)
    cut = tmp_path / "cut.h5"
    cut.write_bytes(open(everything, "rb").read()[:3000])
    with pytest.raises(OSError, match="truncated or damaged"):
        h5lake.File(cut)


def test_diff_follows_references_to_their_targets(tmp_path):
    """Two loads of one file give different object ids: references are the
    same when they lead to the same objects, and differ by where they lead."""
    src = h5files.write_references(str(tmp_path / "refs.h5"))
    h5lake.load(src, tmp_path / "a.h5l")
    h5lake.load(src, tmp_path / "b.h5l")
    assert h5lake.diff(str(tmp_path / "a.h5l"), str(tmp_path / "b.h5l")) == []
    assert h5lake.diff(src, str(tmp_path / "a.h5l")) == []
    other = str(tmp_path / "other.h5")
    with h5py.File(other, "w") as f:
        f["x"], f["y"] = np.arange(10), np.arange(3)
        f["r"] = f["y"].ref
        f.attrs["ra"] = f["y"].ref
        f["rr"] = f["x"].regionref[2:6]
    with h5py.File(str(tmp_path / "mine.h5"), "w") as f:
        f["x"], f["y"] = np.arange(10), np.arange(3)
        f["r"] = f["x"].ref
        f.attrs["ra"] = f["x"].ref
        f["rr"] = f["x"].regionref[2:5]
    lines = h5lake.diff(str(tmp_path / "mine.h5"), other)
    assert lines[:2] == ["attribute 'ra' of /: '/x' != '/y'",
                         "dataset /r: 1 difference (first at (): '/x' != '/y')"]
    assert len(lines) == 3 and lines[2].startswith("dataset /rr: 1 difference")


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


def test_unsupported_filter_is_named_and_the_load_is_incomplete(tmp_path):
    """A dataset whose filter h5lake lacks is left out by name, as every
    object h5lake cannot hold is: the load is incomplete (an error unless
    asked to skip), and the rest of the file is loaded."""
    pytest.importorskip("hdf5plugin")
    src = h5files.write_unsupported_filter(str(tmp_path / "bs.h5"))
    for link in (False, True):
        dest = tmp_path / f"out-{link}.h5l"
        with pytest.raises(h5lake.IncompleteConversion, match="bzip2"):
            h5lake.load(src, dest, link=link)
        report = h5lake.load(src, dest, link=link, force=True, skip_unsupported=True)
        assert len(report["skipped"]) == 1 and "bzip2" in report["skipped"][0]
        with h5lake.File(dest, "r") as f:
            assert "bzipped" not in f
            assert f["ok"][...].tolist() == list(range(10))


def test_object_references_and_dimension_scales_round_trip(tmp_path):
    """Object references (to groups, datasets, committed types, null ones,
    to objects loaded later) in datasets and attributes, and the dimension
    scales made of them: loaded in both modes, read alike, and written back
    by `get` with the same types, so that h5py finds the same scales."""
    src = h5files.write_references(str(tmp_path / "refs.h5"))
    _check_round_trips(src, tmp_path)
    for mode in ("copy", "link"):
        with h5py.File(src, "r") as h, h5py.File(tmp_path / f"{mode}.h5", "r") as b:
            assert b["temp"].dims[0][0].name == "/time" and b["temp"].dims[1][0].name == "/x"
            assert [d.label for d in b["temp"].dims] == ["", "x"]
            assert b["time"].is_scale and list(b["temp"].dims[0].keys()) == ["time"]
            assert h5py.h5ds.is_attached(b["temp"].id, b["time"].id, 0)
            for obj, name in (("temp", "DIMENSION_LIST"), ("time", "REFERENCE_LIST")):
                assert (b[obj].attrs.get_id(name).get_type()
                        == h[obj].attrs.get_id(name).get_type()), name
            assert _h5type(b["refs"]) == _h5type(h["refs"])
            assert b["refs"].chunks == (2,)
    # A compound with a reference member (HDF5's own REFERENCE_LIST type),
    # as a dataset. h5lake's Python API does not read such datasets yet:
    # compared as h5py reads them back.
    src = tmp_path / "table.h5"
    rec = np.dtype([("obj", h5py.ref_dtype), ("n", "<i4")])
    with h5py.File(src, "w") as f:
        f["x"] = np.arange(5)
        f.create_dataset("table", data=np.array([(f["x"].ref, 1), (f.ref, 2)], dtype=rec))
    (tmp_path / "table").mkdir()
    for store, back in _round_trips(src, tmp_path / "table"):
        with h5py.File(src, "r") as h, h5py.File(back, "r") as b:
            _walk(h, b, lib=h5py)
            assert _h5type(b["table"]) == _h5type(h["table"])


def test_datasets_larger_than_a_slab_load_whole(tmp_path):
    """Contiguous data above 16 MiB and variable-length data above 262,144
    elements are copied in several slabs: every slab lands where it
    belongs."""
    src = tmp_path / "large.h5"
    with h5py.File(src, "w") as f:
        f["contig"] = np.arange(2_500_000, dtype="f8").reshape(2_500, 1_000)
        f.create_dataset("words", data=np.array([str(i) for i in range(270_000)], dtype=object),
                         dtype=h5py.string_dtype())
    with h5py.File(src, "r") as h:
        contig, words = h["contig"][...], h["words"][...].astype("S")
    for store, back in _round_trips(src, tmp_path):
        for f in (h5lake.File(store, "r"), h5py.File(back, "r")):
            with f:
                np.testing.assert_array_equal(f["contig"][...], contig)
                np.testing.assert_array_equal(f["words"][...].astype("S"), words)


@pytest.mark.parametrize("link", [False, True], ids=["copy", "link"])
def test_region_references_come_back(tmp_path, link):
    """h5py's region references (H5T_STD_REF_DSETREG) in datasets and
    attributes: `load` keeps each as the dataset and the selection, `get`
    writes real region references that select the same elements."""
    src = tmp_path / "regions.h5"
    with h5py.File(src, "w") as f:
        temp = f.create_dataset("temp", data=np.arange(50.0).reshape(10, 5))
        r = f.create_dataset("rref", (5,), dtype=h5py.regionref_dtype)   # the last stays null
        r[0] = temp.regionref[1:3]
        r[1] = temp.regionref[2:4, 1]
        r[2] = temp.regionref[::3, 1:4]
        r[3] = temp.regionref[...]
        temp.attrs["where"] = temp.regionref[2:4, 1]
        expect = [temp[ref].tolist() for ref in r[:4]]
        expect_where = temp[temp.attrs["where"]].tolist()
    report = h5lake.load(src, tmp_path / "s.h5l", link=link)
    assert report["skipped"] == []
    assert h5lake.get(tmp_path / "s.h5l", tmp_path / "back.h5")["skipped"] == []
    with h5py.File(tmp_path / "back.h5", "r") as f:
        refs = f["rref"][...]
        assert f["rref"].dtype == h5py.regionref_dtype
        assert [f["temp"][ref].tolist() for ref in refs[:4]] == expect
        assert all(f[ref].name == "/temp" for ref in refs[:4])
        assert not refs[4]                                   # null stays null
        where = f["temp"].attrs["where"]
        assert f["temp"][where].tolist() == expect_where == [[11.0], [16.0]]


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
    """zstd, lz4 and Blosc chunks as hdf5plugin writes them (blosclz, Blosc's
    default, too); a dataset with a codec h5lake lacks (Blosc's bitshuffle)
    is named at load time as not carried, and the file's other objects are."""
    hdf5plugin = pytest.importorskip("hdf5plugin")
    data = (np.arange(100_000, dtype="f4") % 977).reshape(100, 1000)
    src = tmp_path / "plugins.h5"
    with h5py.File(src, "w") as f:
        f.create_dataset("zstd", data=data, chunks=(10, 100), **hdf5plugin.Zstd(clevel=3))
        f.create_dataset("lz4", data=data, chunks=(10, 100), **hdf5plugin.LZ4())
        for cname in ("lz4", "lz4hc", "zlib", "zstd", "blosclz"):
            f.create_dataset("blosc_" + cname, data=data, chunks=(10, 100),
                             **hdf5plugin.Blosc(cname=cname, clevel=5))
    dest = tmp_path / "plugins.h5l"
    h5lake.load(src, dest, link=link)
    with h5lake.File(dest, "r") as l:
        for name in ("zstd", "lz4", "blosc_lz4", "blosc_lz4hc", "blosc_zlib", "blosc_zstd",
                     "blosc_blosclz"):
            np.testing.assert_array_equal(l[name][...], data, err_msg=name)
            np.testing.assert_array_equal(l[name][3:77:5, 17:900:13], data[3:77:5, 17:900:13])
    for bad, kw in (("bitshuffle", hdf5plugin.Blosc(cname="lz4", shuffle=hdf5plugin.Blosc.BITSHUFFLE)),):
        src2 = tmp_path / f"{bad}.h5"
        with h5py.File(src2, "w") as f:
            f.create_dataset("x", data=data, chunks=(10, 100), **kw)
            f["kept"] = np.arange(3)
        with pytest.raises(h5lake.IncompleteConversion, match=bad):
            h5lake.load(src2, tmp_path / f"{bad}.h5l", link=link)
        h5lake.load(src2, tmp_path / f"{bad}.h5l", link=link, skip_unsupported=True, force=True)
        with h5lake.File(tmp_path / f"{bad}.h5l", "r") as l:
            assert sorted(l) == ["kept"]


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


@pytest.mark.parametrize("link", [False, True], ids=["copy", "link"])
def test_creation_order_is_kept(tmp_path, link):
    """Groups and datasets whose file tracks creation order (h5py's
    track_order, netCDF-4) list links and attributes in that order after a
    load; others in name order, as h5py lists them."""
    src = tmp_path / "o.h5"
    with h5py.File(src, "w", track_order=True) as f:
        for name in ("zeta", "alpha", "mid"):
            f[name] = np.arange(3)
        g = f.create_group("plain", track_order=False)
        for name in ("b", "a"):
            g[name] = 1
        d = f.create_dataset("attrs", data=[1], track_order=True)
        for name in ("z", "a", "m"):
            d.attrs[name] = 1
        for name in ("z", "a"):
            f.attrs[name] = 1
    with h5py.File(src, "r") as f:
        want = (list(f), list(f["plain"]), list(f["attrs"].attrs), list(f.attrs))
    h5lake.load(src, tmp_path / "o.h5l", link=link)
    with h5lake.File(tmp_path / "o.h5l", "r") as f:
        got = (list(f), list(f["plain"]), list(f["attrs"].attrs), list(f.attrs))
    assert got == want
    assert want[0][:3] == ["zeta", "alpha", "mid"] and want[1] == ["a", "b"]


@pytest.mark.parametrize("link", [False, True])
def test_bitshuffled_files_load_and_come_back(tmp_path, link):
    """hdf5plugin's bitshuffle (LZ4, zstd, none; any block size; partial
    blocks and tails): loaded by copy and by link, read equal to h5py's
    values, and written back by `get` so that h5py (with hdf5plugin) reads
    the same."""
    pytest.importorskip("hdf5plugin")
    src = tmp_path / "bs.h5"
    data = h5files.write_bitshuffled(str(src))
    dest = tmp_path / "bs.h5l"
    h5lake.load(src, dest, link=link)
    with h5lake.File(dest, "r") as f:
        for name, a in data.items():
            np.testing.assert_array_equal(f[name][...], a, err_msg=name)
        np.testing.assert_array_equal(f["<i2_lz4"][7:190:3, 5:70:4], data["<i2_lz4"][7:190:3, 5:70:4])
    back = tmp_path / "back.h5"
    h5lake.get(dest, back)
    with h5py.File(back, "r") as f:
        for name, a in data.items():
            np.testing.assert_array_equal(f[name][...], a, err_msg=name)
            dcpl = f[name].id.get_create_plist()
            assert 32008 in [dcpl.get_filter(i)[0] for i in range(dcpl.get_nfilters())], name


def test_bitshuffle_through_the_python_api(tmp_path):
    """h5py's spelling with hdf5plugin's options makes bitshuffled chunks
    that HDF5 (with the plugin) reads back."""
    hdf5plugin = pytest.importorskip("hdf5plugin")
    a = (np.arange(50_000, dtype="<u2") * 7) % 1000
    with h5lake.File(tmp_path / "a.h5l", "w") as f:
        f.create_dataset("lz4", data=a, chunks=(10_000,), **hdf5plugin.Bitshuffle(cname="lz4"))
        f.create_dataset("plain", data=a, chunks=(10_000,), compression=32008,
                         compression_opts=(0, 0))
        with pytest.raises(ValueError, match="multiple of 8"):
            f.create_dataset("bad", data=a, chunks=(10_000,), compression=32008,
                             compression_opts=(12, 2))
    with h5lake.File(tmp_path / "a.h5l", "r") as f:
        np.testing.assert_array_equal(f["lz4"][...], a)
        np.testing.assert_array_equal(f["plain"][123:45_678], a[123:45_678])
    h5lake.get(tmp_path / "a.h5l", tmp_path / "a.h5")
    with h5py.File(tmp_path / "a.h5", "r") as f:
        np.testing.assert_array_equal(f["lz4"][...], a)
        np.testing.assert_array_equal(f["plain"][...], a)


def test_chunk_queries_of_an_hdf5_file_opened_in_place_are_the_files(tmp_path):
    """``dset.id``'s chunk queries on an HDF5 file opened in place answer
    with the file's own chunks, byte offsets included (what kerchunk
    indexes), for few chunks and for many (a chunk table), as h5py does."""
    src = str(tmp_path / "chunks.h5")
    with h5py.File(src, "w") as f:
        f.create_dataset("few", shape=(100, 100), chunks=(10, 10), dtype="i4", compression="gzip")
        f["few"][:50] = 1
        many = f.create_dataset("many", shape=(120, 120), chunks=(4, 4), dtype="f8")
        many[::3] = 2.5
        f["contig"] = np.arange(10)
    for name in ("few", "many"):
        seen = []
        for lib in (h5py, h5lake):
            with lib.File(src, "r") as f:
                d = f[name].id
                n = d.get_num_chunks()
                infos = [d.get_chunk_info(i) for i in range(n)]
                walked = []
                d.chunk_iter(walked.append)
                assert walked == infos
                seen.append((n, infos, d.get_chunk_info_by_coord(infos[-1].chunk_offset),
                             d.get_storage_size(), d.read_direct_chunk(infos[1].chunk_offset)))
        assert seen[0] == seen[1], name
    with h5py.File(src, "a") as f:
        f.create_dataset("unwritten", (10,), "f4")
    for name in ("contig", "unwritten", "few"):      # contiguous: where its bytes are
        with h5py.File(src, "r") as h, h5lake.File(src, "r") as f:
            assert (f[name].id.get_offset(), f[name].id.get_storage_size()) == \
                (h[name].id.get_offset(), h[name].id.get_storage_size()), name
    with h5lake.File(src, "r") as f:
        assert f["contig"].id.get_offset() > 0
        with pytest.raises(RuntimeError):
            f["contig"].id.get_num_chunks()
    # a store linked to the file answers with the file's chunks (offsets in
    # that file), whether it reads them one by one or in hyper-chunks
    for store, hyper in (("linked.h5l", None), ("hyper.h5l", "64K")):
        h5lake.load(src, tmp_path / store, link=True, hyperchunk=hyper)
        for name in ("few", "many"):
            got = []
            for lib, where in ((h5py, src), (h5lake, tmp_path / store)):
                with lib.File(where, "r") as f:
                    d = f[name].id
                    infos = [d.get_chunk_info(i) for i in range(d.get_num_chunks())]
                    got.append((f[name].chunks, infos, d.get_storage_size(),
                                d.get_chunk_info_by_coord(infos[7].chunk_offset),
                                d.read_direct_chunk(infos[3].chunk_offset)))
            assert got[0] == got[1], (store, name)
    # written to since: its values are partly the store's, which no list of
    # the file's chunks describes
    with h5lake.File(tmp_path / "linked.h5l", "a") as f:
        f["few"][0, 0] = 7
        with pytest.raises(TypeError, match="written to since"):
            f["few"].id.get_num_chunks()
        with pytest.raises(TypeError, match="written to since"):
            f["few"].id.read_direct_chunk((0, 0))


@pytest.mark.parametrize("link", [False, True])
def test_integers_in_part_of_their_bytes_read_as_their_values(tmp_path, link):
    """A 12-bit integer in 16 bits is its 12 bits, sign-extended, as h5py
    reads it: opened in place, loaded (copy and link) and written back."""
    src = h5files.write_partial_integers(str(tmp_path / "p.h5"))
    store, back = str(tmp_path / "p.h5l"), str(tmp_path / "back.h5")
    h5lake.load(src, store, link=link)
    h5lake.get(store, back)
    with h5py.File(src, "r") as h:
        want = {k: h[k][()] for k in h}
        assert want["i12"].tolist() == [-1, 5, -2048, 2047, 0, -7]
        for where in (src, store, back):
            opened = h5py.File(where, "r") if where == back else h5lake.File(where, "r")
            with opened as l:
                for k, v in want.items():
                    np.testing.assert_array_equal(l[k][()], v, err_msg=f"{where} {k}")


def test_datasets_made_with_a_committed_datatype_stay_linked_to_it(tmp_path):
    """h5py's create_dataset(dtype=f["T"]): through load (copy, link),
    opening in place and get, the dataset's type stays that datatype
    (also one the load reaches after the dataset)."""
    src = tmp_path / "c.h5"
    with h5py.File(src, "w") as f:
        f["zz_T"] = np.dtype([("a", "i4"), ("b", "f8")])
        f.create_dataset("z/x", (3,), dtype=f["zz_T"])
        f.create_dataset("y", (3,), dtype=np.dtype([("a", "i4"), ("b", "f8")]))
    for link in (False, True):
        store = tmp_path / f"c{link}.h5l"
        h5lake.load(str(src), str(store), link=link)
        back = tmp_path / f"back{link}.h5"
        h5lake.get(str(store), str(back))
        for where, mod in ((src, h5lake), (store, h5lake), (back, h5py)):
            with mod.File(where, "r") as f:
                assert f["z/x"].id.get_type().committed(), where
                assert f["z/x"].id.get_type() == f["zz_T"].id, where
                assert not f["y"].id.get_type().committed(), where


def test_load_options_of_the_other_mode_are_refused_and_sizes_checked(tmp_path):
    # hyperchunk=True once meant one byte (one element per linked chunk);
    # an option of link mode given to a copy was ignored without a word.
    src = str(tmp_path / "in.h5")
    with h5py.File(src, "w") as f:
        f.create_dataset("flat", data=np.arange(100_000, dtype="f8"))
    dest = tmp_path / "out.h5l"

    def layout(**kw):
        h5lake.load(src, dest, force=True, **kw)
        with h5lake.File(dest, "r") as l:
            np.testing.assert_array_equal(l["flat"][...], np.arange(100_000, dtype="f8"))
            return l["flat"]._doc["creationProperties"]["layout"]

    default = layout(link=True)
    assert layout(link=True, hyperchunk=True)["dims"] == default["dims"]
    assert layout(link=True, hyperchunk="64K")["dims"] == [8192]
    assert layout(link=True, hyperchunk=False)["dims"] == layout(link=True, hyperchunk=0)["dims"]
    for bad, exc in ((1.5, TypeError), ("lots", ValueError), (-1, ValueError), ([4], TypeError)):
        with pytest.raises(exc, match="hyperchunk"):
            h5lake.load(src, dest, force=True, link=True, hyperchunk=bad)
    for kw, word in ((dict(hyperchunk=4 << 20), "hyperchunk"), (dict(keep_chunks=True), "keep_chunks"),
                     (dict(columnar=True), "columnar")):
        mode = dict(link=False) if word == "hyperchunk" else dict(link=True)
        with pytest.raises(ValueError, match=word):
            h5lake.load(src, tmp_path / "never.h5l", **mode, **kw)
        assert not (tmp_path / "never.h5l").exists()


def test_load_then_get_keeps_the_user_block_and_fill_and_allocation_times(tmp_path):
    """From an audit: a MATLAB v7.3 file's user block (its header) came back
    zeroed, fill time "never" came back "if set", early allocation came
    back incremental; get and diff both said all was well."""
    src = tmp_path / "m.mat"
    header = (b"MATLAB 7.3 MAT-file, Platform: GLNXA64, Created on: Mon Dec  7 2026 HDF5 schema 1.00 ."
              .ljust(116, b" ") + bytes(8) + b"\x00\x02IM").ljust(512, b"\x00")
    with h5py.File(src, "w", userblock_size=512) as f:
        f["x"] = np.arange(4.0)
        dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
        dcpl.set_fill_time(h5py.h5d.FILL_TIME_NEVER)
        dcpl.set_alloc_time(h5py.h5d.ALLOC_TIME_EARLY)
        h5py.h5d.create(f.id, b"never", h5py.h5t.NATIVE_INT32, h5py.h5s.create_simple((6,)), dcpl)
    with open(src, "r+b") as fh:
        fh.write(header)
    store, back = tmp_path / "m.h5l", tmp_path / "back.mat"
    h5lake.load(src, store)
    h5lake.get(store, back)
    assert back.read_bytes()[:512] == header
    with h5py.File(back, "r") as f:
        assert f.userblock_size == 512
        np.testing.assert_array_equal(f["x"][...], np.arange(4.0))
        p = f["never"].id.get_create_plist()
        assert p.get_fill_time() == h5py.h5d.FILL_TIME_NEVER
        assert p.get_alloc_time() == h5py.h5d.ALLOC_TIME_EARLY


def test_load_notes_integers_narrower_than_their_size(tmp_path):
    """A 12-bit integer came back as a plain 32-bit one without a word."""
    src = tmp_path / "n.h5"
    # (HDF5 2.0 makes such types only in files of the newer formats.)
    with h5py.File(src, "w", libver=("v110", "latest")) as f:
        t = h5py.h5t.STD_I32LE.copy()
        t.set_precision(12)
        t.set_offset(2)
        d = h5py.h5d.create(f.id, b"n12", t, h5py.h5s.create_simple((4,)))
        d.write(h5py.h5s.ALL, h5py.h5s.ALL, np.array([1, -2, 3, 100], "i4"))
        f["plain"] = np.arange(3)
    report = h5lake.load(src, tmp_path / "n.h5l")
    notes = [n for n in report["notes"] if "fewer bits" in n]
    assert len(notes) == 1 and notes[0].startswith("/n12"), report["notes"]
    with h5lake.File(tmp_path / "n.h5l", "r") as f:
        assert list(f["n12"][...]) == [1, -2, 3, 100]


def test_a_user_block_too_big_to_keep_is_named_not_dropped(tmp_path):
    """A store keeps user blocks up to 64 KiB; a bigger one is named as not
    carried (IncompleteConversion, CLI exit 3), never dropped quietly."""
    src = tmp_path / "big_ub.h5"
    with h5py.File(src, "w", userblock_size=128 << 10) as f:
        f["x"] = np.arange(3)
    with pytest.raises(h5lake.IncompleteConversion, match="user block"):
        h5lake.load(src, tmp_path / "big_ub.h5l")
    report = h5lake.load(src, tmp_path / "big_ub.h5l", skip_unsupported=True, force=True)
    assert any("user block" in str(s) for s in report["skipped"]), report["skipped"]


@pytest.mark.parametrize("source", ["in place", "linked store"])
def test_a_copy_out_of_a_file_holds_its_values_and_no_tie_to_the_file(tmp_path, source):
    # From an audit: copying a chunked dataset of an HDF5 file opened in
    # place (or of a `load --link` store) into a store failed with
    # KeyError, and a contiguous one was copied still naming the file.
    src = str(tmp_path / "src.h5")
    with h5py.File(src, "w") as f:
        f.create_dataset("g/chunked", data=np.arange(100.0).reshape(10, 10),
                         chunks=(3, 4), compression="gzip", shuffle=True)
        f.create_dataset("g/flat", data=np.arange(7, dtype="i2"))
        f["g"].attrs["a"] = 1
    if source == "in place":
        opened = src
    else:
        opened = str(tmp_path / "linked.h5l")
        h5lake.load(src, opened, link=True)
    dest = str(tmp_path / "copy.h5l")
    with h5lake.File(opened, "r") as s, h5lake.File(dest, "w") as d:
        s.copy("g", d)
        s.copy(s["g/chunked"], d, "alone")
    os.rename(src, src + ".gone")
    with h5lake.File(dest, "r") as d:
        for name in ("g/chunked", "alone"):
            c = d[name]
            np.testing.assert_array_equal(c[()], np.arange(100.0).reshape(10, 10))
            assert (c.chunks, c.compression, c.shuffle) == ((3, 4), "gzip", True)
        np.testing.assert_array_equal(d["g/flat"][()], np.arange(7, dtype="i2"))
        assert d["g/flat"].chunks is None and d["g"].attrs["a"] == 1
        for name in ("g/chunked", "g/flat", "alone"):
            layout = d[name]._doc["creationProperties"]["layout"]
            assert "file_uri" not in layout and not layout["class"].endswith(("_REF", "_INDIRECT"))


@pytest.mark.parametrize("how", ["in place", "load", "load --link"])
def test_attributes_holding_references_keep_their_place_in_creation_order(tmp_path, how):
    # From an audit: attributes holding references (the DIMENSION_LIST of
    # every netCDF-4 variable) were read last and listed last.
    src = str(tmp_path / "ord.h5")
    with h5py.File(src, "w", track_order=True) as f:
        t = f.create_dataset("t", data=np.arange(3.0), track_order=True)
        t.make_scale("t")
        e = f.create_dataset("e", data=np.zeros(3), track_order=True)
        e.attrs["zfirst"] = 1
        e.dims[0].attach_scale(t)
        e.attrs["alast"] = 2
        g = f.create_group("g", track_order=True)
        g.attrs["zfirst"] = 1
        g.attrs["ref"] = t.ref
        g.attrs["alast"] = 2
    with h5py.File(src, "r") as f:
        expected = {n: list(f[n].attrs) for n in ("e", "g")}
    assert expected["e"] == ["zfirst", "DIMENSION_LIST", "alast"]
    opened = src
    if how != "in place":
        opened = str(tmp_path / "ord.h5l")
        h5lake.load(src, opened, link=how.endswith("--link"))
    with h5lake.File(opened, "r") as f:
        assert {n: list(f[n].attrs) for n in ("e", "g")} == expected
        assert f[f["g"].attrs["ref"]].name == "/t"
    if how == "load":
        # And back out: `get` made them last (an audit's netCDF-4 file came
        # back with DIMENSION_LIST moved to the end).
        out = str(tmp_path / "back.h5")
        h5lake.get(opened, out)
        with h5py.File(out, "r") as f:
            assert {n: list(f[n].attrs) for n in ("e", "g")} == expected
            assert f[f["g"].attrs["ref"]].name == "/t"
            assert f["e"].dims[0][0].name == "/t"


@pytest.mark.parametrize("link", [False, True])
def test_unwritten_contiguous_datasets_behind_a_user_block_read_as_fill(tmp_path, link):
    """A contiguous dataset never written has no address; in a file with a
    user block (MATLAB's v7.3 files have one) libhdf5 reports the block's
    size added to "no address", which was read as an offset: load copied
    the file's header bytes as data (exit 0), or failed."""
    src = tmp_path / "ub.h5"
    with h5py.File(src, "w", userblock_size=512) as f:
        f.create_dataset("small", shape=(4, 5), dtype="f4", fillvalue=-9.5)
        f.create_dataset("big", shape=(1000,), dtype="i4", fillvalue=7)
        f["written"] = np.arange(6.0)
    with h5lake.File(src, "r") as f:
        assert (f["small"][()] == -9.5).all() and (f["big"][()] == 7).all()
    h5lake.load(src, tmp_path / "s.h5l", link=link)
    h5lake.get(tmp_path / "s.h5l", tmp_path / "out.h5")
    with h5py.File(tmp_path / "out.h5", "r") as g:
        assert (g["small"][()] == -9.5).all() and (g["big"][()] == 7).all()
        assert g["written"][()].tolist() == list(range(6))
