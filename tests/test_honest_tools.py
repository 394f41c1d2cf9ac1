"""Tools never call different things equal, never report success for what
they left out, and never leave objects out of a listing (issue 19, items
1-3 and the compression ratio of item 9)."""

import os

import numpy as np
import pytest

h5py = pytest.importorskip("h5py")

import h5lake  # noqa: E402
from h5lake import cli  # noqa: E402



def run(capsys, *argv):
    rc = cli.main([str(a) for a in argv])
    out = capsys.readouterr()
    return rc, out.out.splitlines(), out.err


@pytest.fixture
def files(tmp_path):
    a, b = tmp_path / "a.h5", tmp_path / "b.h5"
    with h5py.File(a, "w") as f:
        f["k"] = np.arange(4)
        # values in a raw file beside it (external storage): a layout
        # h5lake's HDF5 loader cannot read yet
        raw = tmp_path / "t.raw"
        raw.write_bytes(np.arange(4, dtype="<i8").tobytes())
        f.create_dataset("t", (4,), "<i8", external=[(str(raw), 0, 32)])
        f["k"].attrs["fine"] = 1
    with h5py.File(b, "w") as f:
        f["k"] = np.arange(4)
        f["k"].attrs["fine"] = 1
    return a, b


def test_diff_never_calls_unreadable_objects_equal(files, capsys):
    a, b = files
    lines = h5lake.diff(a, b)
    assert any(line.startswith("/t: not compared (A holds") for line in lines), lines
    rc, out, _ = run(capsys, "diff", a, b)
    assert rc == 1 and any("/t" in line for line in out)
    # even against itself: what could not be read was not compared
    assert h5lake.diff(a, a)
    assert run(capsys, "diff", "-q", a, a)[0] == 1
    # the parts that can be read still compare equal
    assert h5lake.diff(f"{a}/k", f"{b}/k") == []


def test_load_and_get_that_leave_data_out_do_not_succeed(files, tmp_path, capsys):
    a, _ = files
    dest = tmp_path / "a.h5l"
    with pytest.raises(h5lake.IncompleteConversion, match="/t"):
        h5lake.load(a, dest)
    rc, _, err = run(capsys, "load", "-f", a, dest)
    assert rc == cli.EXIT_INCOMPLETE and "/t" in err and "incomplete" in err
    rc, _, err = run(capsys, "load", "-f", "--skip-unsupported", a, dest)
    assert rc == 0 and "not copied: /t" in err
    # a round trip that lost /t is not equal to where it came from
    back = tmp_path / "back.h5"
    assert run(capsys, "get", dest, back)[0] == 0          # nothing left out on the way back
    assert any(line.startswith("/t:") for line in h5lake.diff(a, back))
    assert run(capsys, "diff", "-q", a, back)[0] == 1


def test_ls_and_info_show_every_object_of_a_file(files, capsys):
    a, _ = files
    lines = h5lake.ls(a)
    assert any(line.startswith("t ") and "not readable by h5lake" in line for line in lines), lines
    assert any(line.startswith("k ") for line in lines)
    assert any(line.startswith("/t ") for line in h5lake.ls(a, recursive=True))
    summary = h5lake.info(a)
    assert summary["datasets"] == 1 and summary["stored_bytes"] == os.path.getsize(a)
    assert any(line.startswith("/t:") for line in summary["not_readable"])
    rc, out, _ = run(capsys, "info", a)
    assert rc == 0 and any(line.startswith("not readable") and "/t" in line for line in out)
    assert out[0].split() == ["file", os.path.abspath(a)], out[0]      # (it said "store")


def test_compression_ratio_counts_only_what_the_store_holds(tmp_path):
    store = tmp_path / "sparse.h5l"
    with h5lake.File(store, "w") as f:
        d = f.create_dataset("big", shape=(1000, 1000), dtype="f8", chunks=(100, 100),
                             compression="gzip")
        d[:100, :100] = np.random.default_rng(0).random((100, 100))
    summary = h5lake.info(store)
    assert summary["logical_bytes"] == 8_000_000
    assert summary["stored_logical_bytes"] == 80_000
    # random doubles barely compress: the ratio is near 1, not 100 times that
    assert 0.9 < summary["compression_ratio"] < 1.3, summary
    src = tmp_path / "plain.h5"
    with h5py.File(src, "w") as f:
        f.create_dataset("x", data=np.zeros((100, 100)), chunks=(10, 100))
    linked = tmp_path / "linked.h5l"
    h5lake.load(src, linked, link=True)
    summary = h5lake.info(linked)
    assert summary["linked_bytes"] == 80_000 and summary["compression_ratio"] is None
    # Variable-length values count in neither the logical bytes nor the
    # ratio (their chunks made a store of incompressible numbers look 0.6).
    mixed = tmp_path / "mixed.h5l"
    with h5lake.File(mixed, "w") as f:
        f.create_dataset("x", data=np.random.default_rng(1).random(10_000), chunks=(1000,))
        f.create_dataset("s", data=["word %d" % i for i in range(10_000)],
                         dtype=h5lake.string_dtype(), chunks=(1000,))
    summary = h5lake.info(mixed)
    assert summary["logical_bytes"] == 80_000
    assert 0.95 < summary["compression_ratio"] <= 1.0, summary


# ---- item 9: smaller things of the same kind ---------------------------------

def test_a_linked_dataset_whose_file_moved_says_so(tmp_path):
    src = tmp_path / "src.h5"
    with h5py.File(src, "w") as f:
        f["x"] = np.arange(10)
    store = tmp_path / "linked.h5l"
    h5lake.load(src, store, link=True)
    os.rename(src, tmp_path / "moved.h5")
    with h5lake.File(store, "r") as f:
        with pytest.raises(FileNotFoundError, match="src.h5"):
            f["x"][...]


def test_cli_errors_speak_of_commands_not_python_modes(tmp_path, capsys):
    rc, _, err = run(capsys, "get", tmp_path / "missing.h5l", tmp_path / "out.h5")
    assert rc == 2 and "mode 'w'" not in err and "h5lake load" in err, err


def test_ls_of_a_soft_external_or_dangling_link_shows_the_link(tmp_path, capsys):
    store = tmp_path / "links.h5l"
    with h5lake.File(store, "w") as f:
        f["x"] = 1
        f["soft"] = h5lake.SoftLink("/x")
        f["dangling"] = h5lake.SoftLink("/nowhere")
        f["ext"] = h5lake.ExternalLink("other.h5l", "/y")
    assert h5lake.ls(f"{store}/soft") == ["soft  Soft Link {/x}"]
    assert h5lake.ls(f"{store}/dangling") == ["dangling  Soft Link {/nowhere}"]
    rc, out, _ = run(capsys, "ls", f"{store}/ext")
    assert rc == 0 and out == ["ext  External Link {other.h5l//y}"]


def test_ls_verbose_shows_the_root_groups_attributes(tmp_path):
    store = tmp_path / "attrs.h5l"
    with h5lake.File(store, "w") as f:
        f.attrs["title"] = "run 7"
        f["x"] = 1
    lines = h5lake.ls(store, verbose=True)
    assert any("Attribute:  title = 'run 7'" in line for line in lines), lines


def test_append_mode_does_not_take_over_a_directory(tmp_path):
    plain = tmp_path / "plain"
    plain.mkdir()
    (plain / "notes.txt").write_text("mine")
    with pytest.raises(OSError, match="not an h5lake store"):
        h5lake.File(plain, "a")
    assert sorted(os.listdir(plain)) == ["notes.txt"]


def test_the_demo_cleans_up(tmp_path, monkeypatch, capsys):
    from h5lake import demo
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    import tempfile
    monkeypatch.setattr(tempfile, "tempdir", None)
    assert demo.main(["demo"]) == 0
    assert os.listdir(tmp_path) == []


# ---- item 7: external links to HDF5 files --------------------------------------

def test_external_links_to_hdf5_files_are_followed(tmp_path, capsys):
    data = tmp_path / "data.h5"
    with h5py.File(data, "w") as f:
        f.create_dataset("grid", data=np.arange(20.0).reshape(4, 5), chunks=(2, 5))
        f["grid"].attrs["units"] = "K"
    src = tmp_path / "main.h5"
    with h5py.File(src, "w") as f:
        f["ext"] = h5py.ExternalLink("data.h5", "/grid")
    store = tmp_path / "main.h5l"
    h5lake.load(src, store)
    with h5lake.File(store, "r") as f:
        np.testing.assert_array_equal(f["ext"][...], np.arange(20.0).reshape(4, 5))
        assert f["ext"].attrs["units"] == "K"
        assert f["ext"].chunks == (2, 5)
    # a store made by the API links to a file the same way
    with h5lake.File(tmp_path / "api.h5l", "w") as f:
        f["ext"] = h5lake.ExternalLink(str(data), "/grid")
        assert f["ext"][1, 2] == 7.0
        with pytest.raises((OSError, ValueError)):
            f["ext"][0, 0] = 1.0               # the file is read, never written
    with h5py.File(data, "r") as f:
        assert f["grid"][0, 0] == 0.0
    # the CLI follows it as well: diff of the store and the file agrees
    assert h5lake.diff(f"{store}/ext", f"{data}/grid") == []


def test_an_external_link_into_a_partly_readable_file_says_so(files, tmp_path):
    a, _ = files                                   # its /t is an external-storage dataset
    with h5lake.File(tmp_path / "ext.h5l", "w") as f:
        f["ext"] = h5lake.ExternalLink(str(a), "/")
        with pytest.warns(RuntimeWarning, match="/t"):
            assert "k" in f["ext"]


# ---- from an audit of the command line (2026-12-07) ---------------------------

def test_get_refuses_to_write_over_the_file_a_linked_store_reads(tmp_path, capsys):
    """`get -f store.h5l src.h5` of a store loaded with --link wrote over
    src.h5 (exit 0), and the store could no longer be read."""
    src = tmp_path / "src.h5"
    with h5py.File(src, "w") as f:
        f.create_dataset("x", data=np.arange(100), chunks=(10,))
    store = tmp_path / "s.h5l"
    h5lake.load(src, store, link=True)
    before = src.read_bytes()
    rc, _, err = run(capsys, "get", "-f", store, src)
    assert rc == 2 and "reads" in err, err
    assert src.read_bytes() == before
    with h5lake.File(store, "r") as f:
        assert list(f["x"][:3]) == [0, 1, 2]
    assert run(capsys, "get", store, tmp_path / "elsewhere.h5")[0] == 0


def test_get_of_a_store_whose_objects_are_gone_is_an_error_not_a_panic(tmp_path, capsys):
    import shutil
    store = tmp_path / "s.h5l"
    with h5lake.File(store, "w") as f:
        f["x"] = np.arange(3)
    shutil.rmtree(store / "db")
    rc, _, err = run(capsys, "get", store, tmp_path / "out.h5")
    assert rc == 2 and "panicked" not in err and "missing" in err, err


def test_a_codec_h5lake_lacks_inside_blosc_leaves_out_that_dataset_only(tmp_path, capsys):
    """A codec h5lake lacks inside Blosc (its bitshuffle) made the whole
    file unusable: load, ls, info and diff of its other datasets failed.
    PyTables' and pandas' default Blosc (blosclz inside) is read."""
    tables = pytest.importorskip("tables")
    src = tmp_path / "pt.h5"
    with tables.open_file(str(src), "w") as h:
        h.create_carray("/", "carr", obj=np.ones((100, 100)),
                        filters=tables.Filters(complevel=5, complib="blosc:lz4", bitshuffle=True))
        h.create_carray("/", "blosclz", obj=np.arange(10000.0).reshape(100, 100),
                        filters=tables.Filters(complevel=5, complib="blosc"))
        h.create_array("/", "plain", np.arange(3))
    store = tmp_path / "pt.h5l"
    rc, _, err = run(capsys, "load", src, store)
    assert rc == cli.EXIT_INCOMPLETE and "/carr" in err and "bitshuffle" in err, err
    assert "/blosclz" not in err, err
    rc, _, err = run(capsys, "load", "-f", "--skip-unsupported", src, store)
    assert rc == 0, err
    with h5lake.File(store, "r") as f:
        assert sorted(f) == ["blosclz", "plain"] and list(f["plain"][...]) == [0, 1, 2]
        assert (f["blosclz"][...] == np.arange(10000.0).reshape(100, 100)).all()
    rc, out, _ = run(capsys, "ls", src)
    assert rc == 0 and any(line.startswith("carr") for line in out), out
    assert h5lake.diff(f"{src}/plain", f"{src}/plain") == []
    assert any("carr" in line and "not compared" in line for line in h5lake.diff(src, src))


def test_diff_names_a_dataset_it_cannot_read_and_compares_the_rest(tmp_path, capsys):
    """An array of variable-length strings stopped the whole diff (exit 2)."""
    for name, v in (("a", 1), ("b", 2)):
        with h5py.File(tmp_path / f"{name}.h5", "w") as f:
            f.create_dataset("arr", (3,), dtype=np.dtype((h5py.string_dtype(), (2,))))
            f["plain"] = np.arange(3) * v
    rc, out, _ = run(capsys, "diff", tmp_path / "a.h5", tmp_path / "b.h5")
    assert rc == 1, out
    assert any(line.startswith("dataset /arr: not compared") for line in out), out
    assert any(line.startswith("dataset /plain: 2 differences") for line in out), out


def test_diff_tells_string_paddings_apart(tmp_path, capsys):
    """Null-terminated, null-padded and space-padded strings of one length
    are three types (numpy's S10 is all of them): a round trip that lost
    the padding must not be called equal."""
    def make(path, pad):
        with h5py.File(path, "w") as f:
            t = h5py.h5t.C_S1.copy()
            t.set_size(10)
            t.set_strpad(pad)
            space = h5py.h5s.create(h5py.h5s.SCALAR)
            a = h5py.h5a.create(f.id, b"title", t, space)
            a.write(np.array(b"abc", "S10"), mtype=t)
            d = h5py.h5d.create(f.id, b"name", t, h5py.h5s.create_simple((2,)))
            d.write(h5py.h5s.ALL, h5py.h5s.ALL, np.array([b"abc", b"de"], "S10"), mtype=t)
    make(tmp_path / "a.h5", h5py.h5t.STR_NULLTERM)
    make(tmp_path / "same.h5", h5py.h5t.STR_NULLTERM)
    make(tmp_path / "b.h5", h5py.h5t.STR_NULLPAD)
    code, out, _ = run(capsys, "diff", str(tmp_path / "a.h5"), str(tmp_path / "same.h5"))
    assert code == 0, out
    code, out, _ = run(capsys, "diff", str(tmp_path / "a.h5"), str(tmp_path / "b.h5"))
    assert code == 1
    text = "\n".join(out)
    assert "attribute 'title' of /: string padding H5T_STR_NULLTERM != H5T_STR_NULLPAD" in text
    assert "dataset /name: string padding" in text


def test_diff_compares_user_blocks(tmp_path, capsys):
    """`load` and `get` carry a file's user block (a MATLAB v7.3 file's
    header): `diff` must tell a changed one, across files and stores."""
    for name, head in (("a.h5", b"MATLAB 7.3 MAT-file"), ("b.h5", b"MATLAB 7.3 MAT-fils")):
        with h5py.File(tmp_path / name, "w", userblock_size=512) as f:
            f["x"] = np.arange(3)
        with open(tmp_path / name, "r+b") as raw:
            raw.write(head)
    with h5py.File(tmp_path / "none.h5", "w") as f:
        f["x"] = np.arange(3)
    h5lake.load(tmp_path / "a.h5", tmp_path / "a.h5l")
    assert run(capsys, "diff", tmp_path / "a.h5", tmp_path / "a.h5l")[0] == 0
    code, out, _ = run(capsys, "diff", tmp_path / "a.h5l", tmp_path / "b.h5")
    assert code == 1 and out == ["user block: differs from byte 18"]
    code, out, _ = run(capsys, "diff", tmp_path / "a.h5", tmp_path / "none.h5")
    assert code == 1 and out == ["user block: 512 bytes != 0 bytes"]


def test_tools_list_a_dataset_whose_filter_h5lake_lacks_and_never_compare_its_values(
        tmp_path, capsys):
    """A bzip2 dataset of an HDF5 file is listed by ls and info with its
    shape and type, and diff says its values were not compared (it crashed
    on them once the dataset was listed); its attributes still compare."""
    pytest.importorskip("hdf5plugin")
    import h5files
    src = h5files.write_unsupported_filter(str(tmp_path / "bz.h5"))
    with h5py.File(src, "a") as f:
        f["bzipped"].attrs["units"] = "counts"
    other = tmp_path / "other.h5"
    with h5py.File(other, "w") as f:
        f["ok"] = np.arange(10)
        f["bzipped"] = np.arange(1000)
        f["bzipped"].attrs["units"] = "volts"
    rc, out, _ = run(capsys, "ls", "-v", src)
    assert rc == 0
    entry = next(line for line in out if line.startswith("bzipped"))
    assert entry.startswith("bzipped  Dataset {1000}  (values not readable by h5lake:"), entry
    assert "bzip2" in entry, entry
    assert any(line.strip().startswith("Attribute:  units") for line in out), out
    assert not any("Attribute:  " in line and "bzip2" in line for line in out), out
    summary = h5lake.info(src)
    assert summary["datasets"] == 2
    assert any(line.startswith("/bzipped: values:") for line in summary["not_readable"])
    lines = h5lake.diff(src, str(other))
    assert "attribute 'units' of /bzipped: 'counts' != 'volts'" in lines, lines
    assert any(line.startswith("values of /bzipped: not compared (A holds") and "bzip2" in line
               for line in lines), lines
    assert len(lines) == 2, lines
    assert run(capsys, "diff", "-q", src, src)[0] == 1     # never equal, even to itself
    assert h5lake.diff(f"{src}/ok", f"{other}/ok") == []
