"""The ``h5lake`` command line and the functions behind it (h5lake.ls,
info, diff, rm, cp, mv), run through ``h5lake.cli.main`` on stores built
with the Python API; diff is also checked against an independent h5py
comparison of the same data written to real HDF5 files."""

import argparse
import json
import os
import re
import subprocess
import sys

import numpy as np
import pytest

pytest.importorskip("h5lake._core")

import h5lake  # noqa: E402
from h5lake import cli  # noqa: E402
from h5lake._hl.tools import is_hdf5_file  # noqa: E402

try:
    import h5py
except ImportError:  # pragma: no cover
    h5py = None

needs_h5py = pytest.mark.skipif(h5py is None, reason="h5py not installed")
needs_load = pytest.mark.skipif(not hasattr(h5lake, "load"),
                                reason="h5lake.load (HDF5 -> store) is not available yet")


def run(capsys, *argv):
    """(exit status, stdout lines, stderr) of ``h5lake argv...``."""
    rc = cli.main([str(a) for a in argv])
    captured = capsys.readouterr()
    return rc, captured.out.splitlines(), captured.err


# ---------------------------------------------------------------------------
# the sample data: the same content written with h5py or h5lake, with
# variants that each differ from it in one way
# ---------------------------------------------------------------------------

def write_sample(lib, path, variant="same"):
    with lib.File(str(path), "w") as f:
        f.attrs["title"] = "run"
        d = f.create_dataset("g/d", data=np.arange(20.0).reshape(4, 5), chunks=(2, 5),
                             maxshape=(None, 5))
        d.attrs["units"] = "m"
        f["g/i"] = np.arange(6, dtype="i4")
        f["g/s"] = lib.SoftLink("/g/d")
        f["n"] = np.array([1.0, np.nan])
        f["names"] = np.array([b"alpha", b"beta"])
        f.create_dataset("tags", data=np.array(["alpha", "beta"], dtype=object),
                         dtype=lib.string_dtype())
        mutate = VARIANTS[variant][0]
        mutate(f, lib)


def _set(name, index, value):
    def mutate(f, lib):
        f[name][index] = value
    return mutate


def _wider_ints(f, lib):
    del f["g/i"]
    f["g/i"] = np.arange(6, dtype="i8")


def _grow(f, lib):
    f["g/d"].resize((5, 5))


def _new_units(f, lib):
    f["g/d"].attrs["units"] = "s"


def _drop_names(f, lib):
    del f["names"]


def _retarget_soft_link(f, lib):
    del f["g/s"]
    f["g/s"] = lib.SoftLink("/n")


def _names_as_group(f, lib):
    del f["names"]
    f.create_group("names")


# variant: (change made to B, h5lake diff lines for A=same vs B=variant,
#           {path: differing elements} an independent comparison must find)
VARIANTS = {
    "same": (lambda f, lib: None, [], {}),
    "value": (_set("g/d", (1, 2), 99.0),
              ["dataset /g/d: 1 difference (first at (1, 2): 7.0 != 99.0)"], {"/g/d": 1}),
    "values": (_set("g/i", slice(None), [0, 1, 0, 3, 0, 5]),
               ["dataset /g/i: 2 differences (first at (2): 2 != 0)"], {"/g/i": 2}),
    "dtype": (_wider_ints,
              ["dataset /g/i: type <i4 (32-bit little-endian integer) != "
               "<i8 (64-bit little-endian integer)"], {"/g/i": 0}),
    "shape": (_grow, ["dataset /g/d: shape {4/Inf, 5} != {5/Inf, 5}"], {"/g/d": 0}),
    "attr": (_new_units, ["attribute 'units' of /g/d: 'm' != 's'"], {"/g/d": 0}),
    "missing": (_drop_names, ["/names: only in A"], {"/names": 0}),
    "link": (_retarget_soft_link, ["/g/s: Soft Link {/g/d} in A, Soft Link {/n} in B"], {"/g/s": 0}),
    "kind": (_names_as_group, ["/names: dataset in A, group in B"], {"/names": 0}),
    "string": (_set("tags", 1, "x"),
               ["dataset /tags: 1 difference (first at (1): b'beta' != b'x')"], {"/tags": 1}),
}


def members(path, group="/"):
    with h5lake.File(str(path), "r") as f:
        return sorted(f[group])


@pytest.fixture
def sample(tmp_path):
    path = tmp_path / "a.h5l"
    write_sample(h5lake, path)
    return path


@pytest.fixture
def rich(tmp_path):
    """A store with every kind of link and a filtered dataset."""
    path = tmp_path / "r.h5l"
    with h5lake.File(str(path), "w") as f:
        f.attrs["title"] = "run"
        d = f.create_dataset("g/d", shape=(10, 20), dtype="i8", chunks=(4, 4), maxshape=(None, 20),
                             compression="gzip", shuffle=True, fillvalue=-1)
        d.attrs["units"] = "m"
        f["g/s"] = h5lake.SoftLink("/g/d")
        f["g/e"] = h5lake.ExternalLink("other.h5l", "/x")
        f["t"] = np.dtype("<f4")
        f["scalar"] = 1.5
        f.create_group("empty")
    return path


# ---------------------------------------------------------------------------
# ls
# ---------------------------------------------------------------------------

def test_ls_lists_members_like_h5ls(capsys, rich):
    rc, out, err = run(capsys, "ls", rich)
    assert (rc, err) == (0, "")
    assert out == ["empty   Group", "g       Group", "scalar  Dataset {SCALAR}", "t       Type"]


def test_ls_recursive(capsys, rich):
    rc, out, _err = run(capsys, "ls", "-r", rich)
    assert rc == 0
    assert out == [
        "/empty   Group",
        "/g       Group",
        "/g/d     Dataset {10/Inf, 20}",
        "/g/e     External Link {other.h5l//x}",
        "/g/s     Soft Link {/g/d}",
        "/scalar  Dataset {SCALAR}",
        "/t       Type",
    ]


def test_ls_inner_path_and_verbose(capsys, rich):
    rc, out, _err = run(capsys, "ls", "-v", rich / "g")
    assert rc == 0
    assert out == [
        "d  Dataset {10/Inf, 20}",
        "    Type:       <i8 (64-bit little-endian integer)",
        "    Chunks:     {4, 4} 128 bytes",
        "    Filters:    shuffle, gzip (4)",
        "    Fill value: -1",
        "    Attribute:  units = 'm'",
        "e  External Link {other.h5l//x}",
        "s  Soft Link {/g/d}",
    ]


def test_ls_of_a_dataset_and_a_cycle(capsys, rich):
    with h5lake.File(str(rich), "r+") as f:
        f["g/up"] = f
    rc, out, _err = run(capsys, "ls", rich / "g" / "d")
    assert (rc, out) == (0, ["d  Dataset {10/Inf, 20}"])
    assert "/g/up    Group, same as /" in h5lake.ls(rich, recursive=True)


def test_ls_group_argument_is_below_the_path(rich):
    assert h5lake.ls(rich, group="g/d") == ["d  Dataset {10/Inf, 20}"]


def test_ls_missing_paths_exit_2(capsys, rich, tmp_path):
    rc, out, err = run(capsys, "ls", rich / "nope")
    assert (rc, out) == (2, [])
    assert err == f"h5lake ls: error: {rich / 'nope'}: no object /nope in {rich}\n"
    rc, _out, err = run(capsys, "ls", tmp_path / "absent.h5l")
    assert rc == 2 and err.startswith("h5lake ls: error: ") and "no such file" in err
    (tmp_path / "plain").mkdir()
    rc, _out, err = run(capsys, "ls", tmp_path / "plain")
    assert rc == 2 and "not an h5lake store" in err


def test_errors_raise_with_h5lake_debug(monkeypatch, rich):
    monkeypatch.setenv("H5LAKE_DEBUG", "1")
    with pytest.raises(KeyError):
        cli.main(["ls", str(rich / "nope")])


# ---------------------------------------------------------------------------
# info
# ---------------------------------------------------------------------------

def _chunk_files(store):
    """Chunk objects (not documents, nor the statistics records below
    each dataset's .h5lake/)."""
    return [os.path.join(d, n) for d, _s, files in os.walk(store) for n in files
            if not n.endswith(".json") and f"{os.sep}.h5lake" not in d]


def test_info_counts_and_bytes(capsys, tmp_path):
    path = tmp_path / "i.h5l"
    with h5lake.File(str(path), "w") as f:
        f.attrs["a"] = 1
        f.attrs["b"] = 2
        full = f.create_dataset("g/full", data=np.arange(100.0).reshape(10, 10), chunks=(4, 4),
                                compression="gzip")
        full.attrs["c"] = 3
        part = f.create_dataset("g/part", shape=(7,), dtype="i4", chunks=(3,))
        part[0:3] = [1, 2, 3]
        f.create_dataset("unwritten", shape=(5,), dtype="i2", chunks=(5,))
        f["t"] = np.dtype("u1")
        f["g/again"] = full                       # a second hard link: counted once as a dataset
        f["soft"] = h5lake.SoftLink("/g/full")
        f["ext1"] = h5lake.ExternalLink("x.h5l", "/a")
        f["ext2"] = h5lake.ExternalLink("x.h5l", "/b")
    summary = h5lake.info(path)
    files = _chunk_files(path)
    sizes = [os.path.getsize(p) for p in files]
    total = sum(os.path.getsize(os.path.join(d, n)) for d, _s, fs in os.walk(path) for n in fs)
    assert summary["store"] == str(path)
    assert (summary["groups"], summary["datasets"], summary["datatypes"], summary["attributes"]) == (2, 3, 1, 3)
    assert summary["links"] == {"hard": 6, "soft": 1, "external": 2}
    # 3 x 3 chunks of (4, 4) cover (10, 10); one (3,) chunk written of g/part; none of unwritten
    assert summary["chunks"] == len(files) == 9 + 1
    assert summary["chunk_bytes"] == sum(sizes)
    assert summary["stored_bytes"] == total == summary["metadata_bytes"] + summary["chunk_bytes"]
    assert summary["logical_bytes"] == 100 * 8 + 7 * 4 + 5 * 2
    # the ratio counts what the chunks hold: not the rest of g/part, nor unwritten
    assert summary["stored_logical_bytes"] == 100 * 8 + 3 * 4
    assert summary["compression_ratio"] == pytest.approx(summary["stored_logical_bytes"] / sum(sizes))

    rc, out, _err = run(capsys, "info", "--json", path)
    assert rc == 0 and json.loads("\n".join(out)) == summary
    rc, out, _err = run(capsys, "info", path)
    assert rc == 0
    rows = dict(re.split(r"\s{2,}", line, maxsplit=1) for line in out)
    assert rows["chunks"] == "10" and rows["soft links"] == "1"
    assert rows["logical bytes"] == f"{summary['logical_bytes']} (838 B)"
    assert rows["stored logical bytes"] == "812 (812 B)"


def test_info_of_an_empty_store_has_no_ratio(tmp_path):
    path = tmp_path / "e.h5l"
    h5lake.File(str(path), "w").close()
    summary = h5lake.info(path)
    assert (summary["groups"], summary["chunks"], summary["compression_ratio"]) == (1, 0, None)


def test_info_refuses_an_inner_path(capsys, rich):
    rc, _out, err = run(capsys, "info", rich / "g")
    assert rc == 2 and "give the store path" in err


# ---------------------------------------------------------------------------
# diff between stores
# ---------------------------------------------------------------------------

def test_diff_equal_stores(capsys, tmp_path, sample):
    write_sample(h5lake, tmp_path / "b.h5l")
    rc, out, err = run(capsys, "diff", sample, tmp_path / "b.h5l")
    assert (rc, out, err) == (0, [], "")


@pytest.mark.parametrize("variant", [v for v in VARIANTS if v != "same"])
def test_diff_finds_each_kind_of_difference(capsys, tmp_path, sample, variant):
    write_sample(h5lake, tmp_path / "b.h5l", variant)
    rc, out, _err = run(capsys, "diff", sample, tmp_path / "b.h5l")
    assert (rc, out) == (1, VARIANTS[variant][1])
    rc, out, _err = run(capsys, "diff", "-q", sample, tmp_path / "b.h5l")
    assert (rc, out) == (1, [])


def test_diff_tolerances_and_nan(capsys, tmp_path):
    for name, values in (("a", [100.0, np.nan, 1.0]), ("b", [100.001, np.nan, 1.0])):
        with h5lake.File(str(tmp_path / f"{name}.h5l"), "w") as f:
            f["x"] = np.array(values)
    a, b = tmp_path / "a.h5l", tmp_path / "b.h5l"
    assert run(capsys, "diff", a, b)[:2] == (1, ["dataset /x: 1 difference (first at (0): 100.0 != 100.001)"])
    assert run(capsys, "diff", "--rtol", "1e-4", a, b)[:2] == (0, [])
    assert run(capsys, "diff", "--atol", "0.01", a, b)[:2] == (0, [])
    assert run(capsys, "diff", "--atol", "0.0001", a, b)[0] == 1


def test_diff_tolerances_keep_64_bit_integers_exact(capsys, tmp_path):
    """Timestamps in ns 100 apart, and integers at the ends of their
    ranges: a tolerance smaller than the distance does not call them equal
    (np.isclose would, through float64)."""
    cases = {"t": (np.array([1_700_000_000_000_000_000], "i8"), 100),
             "big": (np.array([2**62], "i8"), 1),
             "u": (np.array([2**64 - 2], "u8"), 1),
             "mixed": (np.array([-5], "i8"), 0)}
    for name, sign in (("a", 0), ("b", 1)):
        with h5lake.File(str(tmp_path / f"{name}.h5l"), "w") as f:
            for k, (v, step) in cases.items():
                f[k] = v + sign * step if k != "mixed" else (v if not sign else np.array([3], "u8"))
    a, b = tmp_path / "a.h5l", tmp_path / "b.h5l"
    for tol in (["--atol", "0.5"], ["--rtol", "1e-30"]):
        code, lines = run(capsys, "diff", *tol, a, b)[:2]
        assert code == 1 and len(lines) == 4, (tol, lines)
    code, lines = run(capsys, "diff", "--atol", "100", a, b)[:2]
    assert (code, [line.split(":")[0] for line in lines]) == (1, ["dataset /mixed"])


def test_diff_refuses_tolerances_that_are_not_finite_or_are_negative(capsys, tmp_path):
    """From an audit: with --rtol nan (or --atol nan) integers 0 and 255
    compared equal, exit 0."""
    for name, v in (("a", 0), ("b", 255)):
        with h5lake.File(str(tmp_path / f"{name}.h5l"), "w") as f:
            f["x"] = np.array([v], "u1")
            f.attrs["n"] = np.int64(2**62 + (v > 0))
    a, b = tmp_path / "a.h5l", tmp_path / "b.h5l"
    for flag, value in (("--rtol", "nan"), ("--atol", "nan"), ("--atol", "-1"), ("--atol", "inf"),
                        ("--rtol", "-inf")):
        rc, out, err = run(capsys, "diff", f"{flag}={value}", a, b)
        assert rc == 2 and out == [] and "finite" in err, (flag, value, rc, err)
    with pytest.raises(ValueError, match="finite"):
        h5lake.diff(str(a), str(b), rtol=float("nan"))
    assert run(capsys, "diff", "--atol", "1", a, b)[0] == 1


def test_integer_tolerances_of_mixed_signedness_and_scalars():
    from h5lake._hl.tools import _integers_apart
    u = np.array([0, 2**64 - 1], "u8")
    s = np.array([-1, -2**63], "i8")
    assert _integers_apart(s, u, 0, 5).tolist() == [False, True]
    assert _integers_apart(s, u, 0, 0.5).tolist() == [True, True]
    assert _integers_apart(s, u, 0, 1e30).tolist() == [False, False]
    assert not _integers_apart(np.int64(5), np.int64(6), 0, 1)
    assert _integers_apart(np.int64(5), np.int64(7), 0, 1)


def test_diff_compares_what_a_type_means(capsys, tmp_path):
    """Enums of other members or values, a string attribute of another
    character set, and references in attributes that lead elsewhere are
    differences; empty extents compare without error."""
    on_off = h5lake.enum_dtype({"OFF": 0, "ON": 1}, "u1")
    swapped = h5lake.enum_dtype({"ON": 0, "OFF": 1}, "u1")
    for name, enum, cset, first in (("a", on_off, "utf-8", "x"), ("b", swapped, "ascii", "y")):
        with h5lake.File(str(tmp_path / f"{name}.h5l"), "w") as f:
            f.create_dataset("state", data=np.array([0, 1], "u1"), dtype=enum)
            f.attrs.create("s", "text", dtype=h5lake.string_dtype(cset))
            f["x"], f["y"] = np.arange(2), np.arange(2) + 1
            f.attrs["r"] = f[first].ref
            f["empty"] = np.zeros((3, 0))
    a, b = tmp_path / "a.h5l", tmp_path / "b.h5l"
    code, lines = run(capsys, "diff", a, b)[:2]
    assert code == 1
    assert sorted(line.split(":")[0] for line in lines) == \
        ["attribute 'r' of /", "attribute 's' of /", "dataset /state"], lines
    assert run(capsys, "diff", a, a)[:2] == (0, [])


@pytest.mark.parametrize("layout", [None, "columnar"])
def test_diff_of_compounds_with_variable_length_members(capsys, tmp_path, layout):
    dt = np.dtype([("a", "i4"), ("s", h5lake.vlen_dtype(np.dtype("i4"))),
                   ("t", h5lake.string_dtype())])
    for name, last in (("a", 3), ("b", 4)):
        with h5lake.File(str(tmp_path / f"{name}.h5l"), "w") as f:
            d = f.create_dataset("t", shape=(3,), dtype=dt, chunks=(2,),
                                 **({"layout": layout} if layout else {}))
            d[0] = (1, np.array([1, 2], "i4"), "x")
            d[2] = (2, np.array([1, last], "i4"), "y")
    a, b = tmp_path / "a.h5l", tmp_path / "b.h5l"
    assert run(capsys, "diff", a, a)[:2] == (0, [])
    rc, out, _ = run(capsys, "diff", a, b)
    assert rc == 1 and len(out) == 1 and out[0].startswith("dataset /t: 1 difference (first at (2)")


def test_diff_inner_paths_open_objects_and_verbose(tmp_path, sample):
    write_sample(h5lake, tmp_path / "b.h5l", "values")
    assert h5lake.diff(sample / "g" / "i", tmp_path / "b.h5l" / "g" / "i", verbose=True) == [
        "dataset /g/i: 2 differences (first at (2): 2 != 0)",
        "    at (2): 2 != 0",
        "    at (4): 4 != 0",
    ]
    assert h5lake.diff(sample / "names", sample / "names") == []
    with h5lake.File(str(sample), "r") as fa, h5lake.File(str(tmp_path / "b.h5l"), "r") as fb:
        assert h5lake.diff(fa["g"], fb["g"]) == ["dataset /g/i: 2 differences (first at (2): 2 != 0)"]


def test_diff_reads_in_bounded_slabs(monkeypatch, tmp_path):
    from h5lake._hl import tools
    monkeypatch.setattr(tools, "_SLAB_BYTES", 64)       # 8 float64 per read
    reads = []
    real_read = tools._read
    monkeypatch.setattr(tools, "_read", lambda d, sel: reads.append(sel) or real_read(d, sel))
    for name, value in (("a", 0.0), ("b", 1.0)):
        with h5lake.File(str(tmp_path / f"{name}.h5l"), "w") as f:
            data = np.zeros((6, 20))
            data[5, 19] = value
            data[0, 3] = value
            f["x"] = data
    lines = h5lake.diff(tmp_path / "a.h5l", tmp_path / "b.h5l")
    assert lines == ["dataset /x: 2 differences (first at (0, 3): 0.0 != 1.0)"]
    assert len(reads) == 2 * 6 * 3                          # each row of 20 in 3 blocks of <= 8, per side
    assert all(s[1].stop - s[1].start <= 8 for s in reads)


def test_diff_missing_input_exits_2(capsys, tmp_path, sample):
    rc, out, err = run(capsys, "diff", sample, tmp_path / "nope.h5l")
    assert (rc, out) == (2, [])
    assert err.startswith("h5lake diff: error: ") and "no such file" in err


# ---------------------------------------------------------------------------
# diff against HDF5 files, checked with h5py alone
# ---------------------------------------------------------------------------

def h5py_differences(path_a, path_b):
    """{path: number of differing elements (0 when the difference is not in
    values)} between two HDF5 files, compared with h5py and numpy only."""
    found = {}

    def note(path, count=0):
        found[path] = found.get(path, 0) + count

    def count_unequal(x, y):
        if x.dtype.kind == "O":
            return sum(p != q for p, q in zip(x.flat, y.flat))
        unequal = x != y
        if x.dtype.kind == "f":
            unequal &= ~(np.isnan(x) & np.isnan(y))
        return int(np.count_nonzero(unequal))

    def same_attrs(a, b):
        return set(a.attrs) == set(b.attrs) and all(
            np.array_equal(a.attrs[k], b.attrs[k]) for k in a.attrs)

    def link_of(group, name):
        link = group.get(name, getlink=True)
        return type(link), getattr(link, "path", None), getattr(link, "filename", None)

    def compare(a, b, path):
        if not same_attrs(a, b):
            note(path)
        for name in sorted(set(a) | set(b)):
            child = path.rstrip("/") + "/" + name
            if name not in a or name not in b or link_of(a, name) != link_of(b, name):
                note(child)
            elif isinstance(a.get(name, getlink=True), h5py.HardLink):
                x, y = a[name], b[name]
                if type(x) is not type(y):
                    note(child)
                elif isinstance(x, h5py.Group):
                    compare(x, y, child)
                elif not same_attrs(x, y) or x.dtype != y.dtype or x.shape != y.shape:
                    note(child)
                elif count := count_unequal(x[()], y[()]):
                    note(child, count)

    with h5py.File(path_a, "r") as fa, h5py.File(path_b, "r") as fb:
        compare(fa, fb, "/")
    return found


_LINE = re.compile(r"(?:attribute '[^']*' of |dataset |datatype )?(/[^:]*): (?:(\d+) differences? )?")


def differences_by_path(lines):
    """h5lake.diff's lines as {path: differing elements}, as h5py_differences gives."""
    found = {}
    for line in lines:
        match = _LINE.match(line)
        assert match, line
        found[match[1]] = found.get(match[1], 0) + int(match[2] or 0)
    return found


@needs_h5py
@pytest.mark.parametrize("variant", list(VARIANTS))
def test_independent_h5py_comparison_finds_the_expected_differences(tmp_path, variant):
    write_sample(h5py, tmp_path / "a.h5")
    write_sample(h5py, tmp_path / "b.h5", variant)
    assert h5py_differences(tmp_path / "a.h5", tmp_path / "b.h5") == VARIANTS[variant][2]
    assert differences_by_path(VARIANTS[variant][1]) == VARIANTS[variant][2]


@needs_h5py
@needs_load
@pytest.mark.parametrize("variant", list(VARIANTS))
def test_diff_of_hdf5_files_agrees_with_h5py(tmp_path, variant):
    write_sample(h5py, tmp_path / "a.h5")
    write_sample(h5py, tmp_path / "b.h5", variant)
    write_sample(h5lake, tmp_path / "a.h5l")
    expected = h5py_differences(tmp_path / "a.h5", tmp_path / "b.h5")
    assert differences_by_path(h5lake.diff(tmp_path / "a.h5", tmp_path / "b.h5")) == expected
    assert differences_by_path(h5lake.diff(tmp_path / "a.h5l", tmp_path / "b.h5")) == expected


@needs_h5py
@needs_load
def test_diff_of_hdf5_file_with_userblock_and_inner_path(capsys, tmp_path, sample):
    with h5py.File(tmp_path / "u.h5", "w", userblock_size=1024) as f:
        f["g/d"] = np.arange(20.0).reshape(4, 5)
        f["g/d"].attrs["units"] = "m"
    rc, out, _err = run(capsys, "diff", tmp_path / "u.h5" / "g" / "d", sample / "g" / "d")
    assert (rc, out) == (0, [])
    rc, out, _err = run(capsys, "diff", tmp_path / "u.h5" / "g", sample / "g")
    assert (rc, out) == (1, ["/g/i: only in B", "/g/s: only in B"])


@needs_h5py
def test_hdf5_signature_is_found_after_a_userblock(tmp_path, sample):
    with h5py.File(tmp_path / "u.h5", "w", userblock_size=2048) as f:
        f["x"] = 1
    (tmp_path / "fake.h5").write_bytes(b"\0" * 4096)
    assert is_hdf5_file(tmp_path / "u.h5")
    assert not is_hdf5_file(tmp_path / "fake.h5")
    assert not is_hdf5_file(sample)


# ---------------------------------------------------------------------------
# rm
# ---------------------------------------------------------------------------

def test_rm_store_and_inner_objects(capsys, rich):
    assert run(capsys, "rm", rich / "g" / "s", rich / "empty") == (0, [], "")
    assert members(rich) == ["g", "scalar", "t"] and members(rich, "g") == ["d", "e"]
    rc, _out, err = run(capsys, "rm", rich)
    assert rc == 2 and "whole store" in err and "-r" in err and os.path.isdir(rich)
    assert run(capsys, "rm", "-r", rich)[0] == 0
    assert not rich.exists()


def test_rm_refuses_a_non_empty_group_without_r(capsys, rich):
    rc, _out, err = run(capsys, "rm", rich / "g")
    assert rc == 2 and "use -r" in err
    assert "g" in members(rich)
    assert run(capsys, "rm", "-r", rich / "g")[0] == 0
    assert members(rich) == ["empty", "scalar", "t"]


def test_rm_refuses_dot_and_dotdot(capsys, rich):
    """From an audit: `rm -r STORE/g/..` and `rm -r STORE/.` removed the
    whole store (the path normalised to it)."""
    for path in (f"{rich}/g/..", f"{rich}/.", f"{rich}/g/../", f"{rich}/.."):
        rc, _out, err = run(capsys, "rm", "-r", path)
        assert rc == 2 and "'.' or '..'" in err, (path, err)
    assert members(rich) == ["empty", "g", "scalar", "t"]


def test_rm_of_several_paths_tries_each_and_names_each_failure(capsys, rich):
    """From an audit: with the second of three paths missing, the first
    was removed, the third never tried, and only the missing one named."""
    rc, _out, err = run(capsys, "rm", rich / "empty", rich / "nope", rich / "scalar")
    assert rc == 2 and "nope" in err and "1 of 3 paths were not removed" in err, err
    assert members(rich) == ["g", "t"]


def test_rm_refuses_what_is_not_a_store(capsys, rich, tmp_path):
    plain = tmp_path / "plain"
    plain.mkdir()
    (plain / "keep.txt").write_text("x")
    rc, _out, err = run(capsys, "rm", plain)
    assert rc == 2 and "not an h5lake store" in err
    assert (plain / "keep.txt").exists()
    rc, _out, err = run(capsys, "rm", rich / "db")
    assert rc == 2 and "no object /db" in err
    assert (rich / "db").is_dir()


# ---------------------------------------------------------------------------
# cp, mv
# ---------------------------------------------------------------------------

def test_cp_store(capsys, tmp_path, sample):
    copy = tmp_path / "copy.h5l"
    assert run(capsys, "cp", sample, copy) == (0, [], "")
    assert h5lake.diff(sample, copy) == []
    with h5lake.File(str(copy), "r+") as f:
        f["g/d"][0, 0] = 5
    assert h5lake.diff(sample, copy) != []             # an independent copy

    rc, _out, err = run(capsys, "cp", sample, copy)
    assert rc == 2 and "already exists; use -f" in err
    assert run(capsys, "cp", "-f", sample, copy)[0] == 0
    assert h5lake.diff(sample, copy) == []


def test_cp_force_never_replaces_a_non_store(capsys, tmp_path, sample):
    (tmp_path / "plain").mkdir()
    rc, _out, err = run(capsys, "cp", "-f", sample, tmp_path / "plain")
    assert rc == 2 and "is not an h5lake store" in err


def test_cp_object_between_stores_keeps_layout(capsys, tmp_path, rich):
    other = tmp_path / "o.h5l"
    h5lake.File(str(other), "w").close()
    assert run(capsys, "cp", rich / "g", other)[0] == 0          # into the root, as /g
    assert run(capsys, "cp", rich / "g" / "d", other / "copy")[0] == 0
    with h5lake.File(str(rich), "r") as fa, h5lake.File(str(other), "r") as fb:
        d = fb["copy"]
        assert (d.chunks, d.compression, d.shuffle, d.maxshape, d.fillvalue) == (
            (4, 4), "gzip", True, (None, 20), -1)
        assert h5lake.diff(fa["g"], fb["g"]) == []
    rc, _out, err = run(capsys, "cp", rich / "g" / "d", other / "copy")
    assert rc == 2 and "/copy already exists" in err


def test_cp_object_within_a_store(capsys, sample):
    assert run(capsys, "cp", sample / "g" / "d", sample / "d2")[0] == 0
    assert h5lake.diff(sample / "g" / "d", sample / "d2") == []


def test_mv_store_and_objects(capsys, tmp_path, rich):
    moved = tmp_path / "moved.h5l"
    assert run(capsys, "mv", rich, moved) == (0, [], "")
    assert not rich.exists() and moved.is_dir()
    assert run(capsys, "mv", moved / "scalar", moved / "g")[0] == 0          # into a group
    assert run(capsys, "mv", moved / "t", moved / "new" / "type")[0] == 0    # creating parents
    with h5lake.File(str(moved), "r") as f:
        assert sorted(f) == ["empty", "g", "new"]
        assert f["g/scalar"][()] == 1.5 and isinstance(f["new/type"], h5lake.Datatype)


def test_mv_refusals(capsys, tmp_path, rich, sample):
    rc, _out, err = run(capsys, "mv", rich / "g", sample / "g2")
    assert rc == 2 and "different stores" in err
    rc, _out, err = run(capsys, "mv", rich / "g", rich / "g" / "inner")
    assert rc == 2 and "into itself" in err
    rc, _out, err = run(capsys, "mv", rich, sample)
    assert rc == 2 and "already exists" in err
    rc, _out, err = run(capsys, "mv", rich / "nope", rich / "x")
    assert rc == 2 and f"no object /nope in {rich}" in err
    assert "g" in members(rich) and members(rich, "g") == ["d", "e", "s"]


# ---------------------------------------------------------------------------
# the command line itself
# ---------------------------------------------------------------------------

def test_python_dash_m(rich):
    done = subprocess.run([sys.executable, "-m", "h5lake", "ls", str(rich)],
                          capture_output=True, text=True, check=False)
    assert (done.returncode, done.stderr) == (0, "")
    assert done.stdout.splitlines()[1] == "g       Group"
    done = subprocess.run([sys.executable, "-m", "h5lake", "--version"],
                          capture_output=True, text=True, check=False)
    assert done.stdout.strip() == f"h5lake {h5lake.__version__}"


@pytest.mark.parametrize("command", ["ls", "info", "diff", "rm", "cp", "mv", "load", "get"])
def test_every_command_has_help_with_an_example(capsys, command):
    rc, out, _err = run(capsys, command, "--help")
    assert rc == 0
    assert out[0].startswith(f"usage: h5lake {command}")
    assert "example:" in out and any(line.startswith(f"  h5lake {command} ") for line in out)


def test_usage_errors_exit_2(capsys):
    assert cli.main([]) == 2
    assert cli.main(["frobnicate"]) == 2
    assert "invalid choice: 'frobnicate'" in capsys.readouterr().err
    # An option the command lacks: said with that command's usage (it was
    # the top level's), and an unquoted --concat pattern says to quote it.
    assert cli.main(["ls", "--bogus", "x.h5l"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("usage: h5lake ls") and "unrecognized arguments: --bogus" in err, err
    assert cli.main(["load", "--link", "--concat", "/x", "a.h5", "b.h5", "out.h5l"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("usage: h5lake load") and "quote the file pattern" in err, err


@pytest.mark.parametrize("text, size", [("4M", 4 << 20), ("8MB", 8 << 20), ("512k", 512 << 10),
                                        ("1.5GiB", 3 << 29), ("65536", 65536)])
def test_parse_size(text, size):
    assert cli.parse_size(text) == size


@pytest.mark.parametrize("text", ["", "0", "-4M", "4X", "M"])
def test_parse_size_rejects(text):
    with pytest.raises(argparse.ArgumentTypeError, match="invalid size"):
        cli.parse_size(text)


def test_load_and_get_pass_their_options(capsys, monkeypatch):
    calls = []
    report = dict(groups=1, datasets=2, attributes=0, links=2, linked_datasets=1, bytes=10,
                  skipped=["/r: a reference"])

    def fake(name):
        return lambda *a, **k: calls.append((name, a, k)) or report

    monkeypatch.setattr(h5lake, "load", fake("load"), raising=False)
    monkeypatch.setattr(h5lake, "get", fake("get"), raising=False)
    rc, _out, err = run(capsys, "load", "--link", "--hyperchunk", "4M", "-f", "in.h5", "out.h5l")
    assert rc == cli.EXIT_INCOMPLETE
    assert "warning: not copied: /r: a reference" in err and "linked 1 datasets" in err
    assert "incomplete: 1 object" in err and "--skip-unsupported" in err
    assert run(capsys, "load", "-q", "--skip-unsupported", "in.h5", "out.h5l")[0] == 0
    assert run(capsys, "get", "-q", "--skip-unsupported", "out.h5l", "back.h5")[0] == 0
    report["skipped"] = []
    assert run(capsys, "get", "-q", "out.h5l", "back.h5")[0] == 0
    converted = dict(skip_unsupported=True)
    no_parquet = dict(name=None, chunks=None, compression=None, columnar=False)
    assert calls == [
        ("load", ("in.h5", "out.h5l"), dict(link=True, hyperchunk=4 << 20, keep_chunks=False, force=True, progress=True, **converted, **no_parquet)),
        ("load", ("in.h5", "out.h5l"), dict(link=False, hyperchunk=None, keep_chunks=False, force=False, progress=False, **converted, **no_parquet)),
        ("get", ("out.h5l", "back.h5"), dict(force=False, progress=False, **converted)),
        ("get", ("out.h5l", "back.h5"), dict(force=False, progress=False, **converted)),
    ]
    rc, _out, err = run(capsys, "load", "--hyperchunk", "lots", "in.h5", "out.h5l")
    assert rc == 2 and "invalid size 'lots'" in err


def test_load_errors_are_reported(capsys, monkeypatch):
    def failing_load(*_args, **_kwargs):
        raise FileNotFoundError("in.h5: no such file")
    monkeypatch.setattr(h5lake, "load", failing_load, raising=False)
    assert run(capsys, "load", "in.h5", "out.h5l") == (2, [], "h5lake load: error: in.h5: no such file\n")


@needs_h5py
def test_records_are_copied(capsys, tmp_path):
    """Compounds with variable-length members (h5py's usual table) go
    through load, get and diff like any other dataset."""
    row = np.dtype([("a", "<i4"), ("s", h5lake.string_dtype())])
    src = tmp_path / "rec.h5"
    with h5py.File(src, "w") as f:
        f.create_dataset("rows", data=np.array([(1, "x"), (2, "yz")], dtype=row))
        f["plain"] = [1, 2]
    rc, _, err = run(capsys, "load", src, tmp_path / "rec.h5l")
    assert rc == 0 and "not copied" not in err, err
    rc, _, err = run(capsys, "get", tmp_path / "rec.h5l", tmp_path / "back.h5")
    assert rc == 0 and "not copied" not in err, err
    with h5py.File(tmp_path / "back.h5", "r") as f:
        assert sorted(f) == ["plain", "rows"]
        assert [(a, s.decode()) for a, s in f["rows"][...]] == [(1, "x"), (2, "yz")]
    assert run(capsys, "diff", src, tmp_path / "back.h5")[0] == 0
    # A dataset alone as an HDF5 file: said to take a whole store (it was
    # told there was no store there at all), nothing written.
    rc, _, err = run(capsys, "get", tmp_path / "rec.h5l" / "rows", tmp_path / "one.h5")
    assert rc == 2 and "whole store" in err and ".parquet" in err, err
    assert "no h5lake store" not in err and not (tmp_path / "one.h5").exists()


def test_a_path_inside_an_hdf5_file_where_a_store_is_needed_says_so(capsys, tmp_path):
    """It said "no such file or directory" of a file that is there."""
    src = tmp_path / "f.h5"
    with h5py.File(src, "w") as f:
        f["x"] = [1, 2]
    rc, _out, err = run(capsys, "stats", "--build", f"{src}/x")     # (a write: stores only)
    assert rc == 2 and f"{src} is a file, not an h5lake store" in err, err


def test_output_cut_short_by_its_reader_is_quiet(tmp_path):
    import subprocess
    import sys
    store = tmp_path / "many.h5l"
    with h5lake.File(store, "w") as f:
        for i in range(3000):
            f.create_group(f"g{i:05d}")
    r = subprocess.run(f"{sys.executable} -m h5lake ls {store} | head -1", shell=True,
                       capture_output=True, text=True)
    assert r.stdout == "g00000  Group\n" and "Broken pipe" not in r.stderr, r.stderr


def test_sigterm_during_load_leaves_nothing_behind(tmp_path):
    """From an audit: `timeout`, kill and batch schedulers end a job with
    SIGTERM, which left the load's hidden partial store (hundreds of MB)
    behind for good; Ctrl-C already cleaned it up."""
    import signal
    import time
    src, out = tmp_path / "big.h5", tmp_path / "out.h5l"
    rng = np.random.default_rng(0)
    with h5py.File(src, "w") as f:
        for i in range(12):
            f.create_dataset(f"d{i}", data=rng.random((1024, 1024)), chunks=(64, 1024),
                             compression="gzip", compression_opts=9)
    p = subprocess.Popen([sys.executable, "-m", "h5lake", "load", "-q", str(src), str(out)],
                         stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        while not any(n.startswith(".out.h5l.partial") for n in os.listdir(tmp_path)):
            assert p.poll() is None and time.monotonic() < deadline, "the load never started"
            time.sleep(0.02)
        p.send_signal(signal.SIGTERM)
        _, err = p.communicate(timeout=60)
    finally:
        p.kill()
    assert p.returncode == 143, err
    assert "terminated" in err
    assert sorted(os.listdir(tmp_path)) == ["big.h5"]
    # (The handler is the command's only while it runs: a program calling
    # cli.main keeps its own. From a review.)
    before = signal.getsignal(signal.SIGTERM)
    assert cli.main(["ls", str(src)]) == 0
    assert signal.getsignal(signal.SIGTERM) is before


def test_nothing_is_made_inside_a_store(tmp_path, capsys):
    """From an audit: `load b.h5 s.h5l/grp` made a store inside the store
    (exit 0): `ls s.h5l/grp` then listed it instead of the group, and
    `rm -r s.h5l/grp` removed it and said so while the group stayed.
    `get` wrote its file among the store's objects, and h5lake.File made
    stores there too."""
    store = str(tmp_path / "s.h5l")
    with h5lake.File(store, "w") as f:
        f["grp/x"] = [1, 2, 3]
    with h5py.File(tmp_path / "b.h5", "w") as f:
        f.attrs["other"] = 1
    before = sorted(os.listdir(store))
    for argv in (["load", "-q", str(tmp_path / "b.h5"), store + "/grp"],
                 ["load", "-q", str(tmp_path / "b.h5"), store + "/new.h5l"],
                 ["get", "-q", store, store + "/inside.h5"]):
        code, _, err = run(capsys, *argv)
        assert code == 2 and "is inside the store" in err and "Errno" not in err, (argv, err)
    for name in ("new.h5l", "grp"):
        with pytest.raises(ValueError, match="inside the store"):
            h5lake.File(os.path.join(store, name), "w")
    assert sorted(os.listdir(store)) == before
    with h5lake.File(store, "r") as f:
        assert list(f["grp/x"][()]) == [1, 2, 3]
    # (From a review: a path out of the store through ".." was taken for
    # one inside it.)
    beside = store + "/../beside.h5l"
    assert run(capsys, "load", "-q", str(tmp_path / "b.h5"), beside)[0] == 0
    assert run(capsys, "get", "-q", beside, store + "/../beside.h5")[0] == 0
    with h5lake.File(store + "/../made.h5l", "w") as f:
        f["y"] = 1
    assert sorted(os.listdir(tmp_path)) == ["b.h5", "beside.h5", "beside.h5l", "made.h5l", "s.h5l"]
    assert sorted(os.listdir(store)) == before


def test_s3_errors_say_what_to_set(tmp_path):
    """From an audit: without credentials the error named only a failed
    request to 169.254.169.254 (the EC2 metadata service object_store asks
    for keys), and an endpoint that refused connections was said to have
    taken the request without answering in time."""
    import socket
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    env["AWS_EC2_METADATA_TIMEOUT"] = "1"
    r = subprocess.run([sys.executable, "-m", "h5lake", "ls", "s3://somebucket/run.h5l"],
                       env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 2 and "AWS_ACCESS_KEY_ID" in r.stderr, r.stderr
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env.update(AWS_ENDPOINT_URL=f"http://127.0.0.1:{port}", AWS_ACCESS_KEY_ID="k",
               AWS_SECRET_ACCESS_KEY="s", AWS_DEFAULT_REGION="us-east-1")
    r = subprocess.run([sys.executable, "-m", "h5lake", "ls", "s3://somebucket/run.h5l"],
                       env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 2 and "cannot reach the S3 endpoint" in r.stderr, r.stderr
    assert "did not answer in time" not in r.stderr


def test_errors_name_what_went_wrong(tmp_path, capsys):
    """From an audit: messages that misled or said nothing useful."""
    store = str(tmp_path / "m.h5l")
    with h5lake.File(store, "w") as f:
        f["scalar"] = 3.0
        f["arr"] = [1, 2]
        f.create_dataset("s", data=[b"x"])
    # a scalar's match has no coordinates (it failed reshaping to (1, 1))
    code, out, err = run(capsys, "query", "--coords", store + "/scalar", "value > 0")
    assert code == 0 and out == ['"value"', '"3.0"'], (out, err)
    # a path through a dataset
    code, _, err = run(capsys, "cp", store + "/scalar", store + "/arr/x")
    assert code == 2 and "a name on that path is not a group" in err, err
    # statistics of a dataset that keeps none: named by its path, not its id
    code, _, err = run(capsys, "stats", "--build", store + "/s")
    assert code == 2 and "dataset /s keeps no statistics" in err and "d-" not in err, err
    # an HDF5 file where a store is wanted: how to make one
    with h5py.File(tmp_path / "x.h5", "w") as f:
        f["big"] = [1]
    code, _, err = run(capsys, "cp", str(tmp_path / "x.h5") + "/big", store + "/y")
    assert code == 2 and "h5lake load" in err, err
    # an object whose values h5lake cannot read is there, and said to be so
    tables = pytest.importorskip("tables")
    with tables.open_file(str(tmp_path / "bz.h5"), "w") as t:
        t.create_carray("/", "bz", obj=np.arange(10), filters=tables.Filters(5, "bzip2"))
    code, out, err = run(capsys, "ls", str(tmp_path / "bz.h5") + "/bz")
    assert code == 0 and len(out) == 1 and out[0].startswith("bz  Dataset {10/8192}"), out
    assert "values not readable by h5lake" in out[0] and "bzip2" in out[0], out
    code, out, err = run(capsys, "diff", *[str(tmp_path / "bz.h5") + "/bz"] * 2)
    assert code == 1 and any("values of /bz: not compared" in line and "bzip2" in line
                             for line in out), (out, err)


def test_a_group_is_not_copied_into_itself(tmp_path, capsys):
    """From an audit: `cp -f S/g S/g` copied the group into itself as
    S/g/g, where `mv` refuses (as cp -r refuses a directory into itself)."""
    store = str(tmp_path / "s.h5l")
    with h5lake.File(store, "w") as f:
        f["g/x"] = [1, 2]
    for dst in ("/g", "/g/", "/g/sub"):
        code, _, err = run(capsys, "cp", "-f", store + "/g", store + dst)
        assert code == 2 and "into itself" in err, (dst, err)
    code, _, err = run(capsys, "cp", store + "/g", store + "/h")
    assert code == 0, err
    with h5lake.File(store, "r") as f:
        assert sorted(f) == ["g", "h"] and list(f["g"]) == ["x"] and list(f["h/x"][()]) == [1, 2]


def test_ls_tells_a_compact_dataset_from_a_contiguous_one(tmp_path, capsys):
    src = str(tmp_path / "c.h5")
    with h5py.File(src, "w") as f:
        dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
        dcpl.set_layout(h5py.h5d.COMPACT)
        h5py.h5d.create(f.id, b"compact", h5py.h5t.NATIVE_INT32,
                        h5py.h5s.create_simple((5,)), dcpl=dcpl)
        f["flat"] = np.arange(3)
    h5lake.load(src, str(tmp_path / "c.h5l"))
    for where in (src, str(tmp_path / "c.h5l")):
        code, out, err = run(capsys, "ls", "-v", where + "/compact")
        assert code == 0 and any("none (compact)" in x for x in out), (out, err)
        code, out, _ = run(capsys, "ls", "-v", where + "/flat")
        assert any("none (contiguous)" in x for x in out), out


def test_ls_escapes_control_characters_in_names(tmp_path, capsys):
    """From an audit: a name holding a newline was printed as is, reading
    as two entries (h5ls escapes it)."""
    store = str(tmp_path / "n.h5l")
    with h5lake.File(store, "w") as f:
        f["nl\nname"] = 1
        f["plain é"] = 2
    code, out, _ = run(capsys, "ls", store)
    assert code == 0 and len(out) == 2
    assert out[0].startswith("nl\\nname  ") and out[1].startswith("plain é")
