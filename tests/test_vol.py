"""The HDF5 VOL connector (crates/h5lake-vol): unmodified h5py, with only
HDF5_PLUGIN_PATH and HDF5_VOL_CONNECTOR set, reads and writes h5lake
stores; the same h5py code on a native HDF5 file is the reference."""

import json
import os
import shutil
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import h5lake

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.fixture(scope="session")
def plugin_dir(tmp_path_factory):
    """A directory holding only the connector, freshly built."""
    out = subprocess.run(
        ["cargo", "build", "-q", "-p", "h5lake-vol", "--message-format=json"],
        cwd=ROOT, check=True, capture_output=True, text=True).stdout
    libs = [f for line in out.splitlines() if line.startswith("{")
            for f in json.loads(line).get("filenames", []) if f.endswith("libh5lake_vol.so")]
    assert libs, "cargo built no libh5lake_vol.so"
    d = tmp_path_factory.mktemp("vol-plugin")
    shutil.copy(libs[-1], d)
    return str(d)


def run_h5py(code, path, plugin_dir=None):
    """Runs ``code`` (h5py, ``p`` = the file name) in a fresh interpreter —
    through the connector when ``plugin_dir`` is given — and returns what
    it printed as JSON."""
    env = dict(os.environ)
    env.pop("HDF5_VOL_CONNECTOR", None)
    if plugin_dir:
        env.update(HDF5_PLUGIN_PATH=plugin_dir, HDF5_VOL_CONNECTOR="h5lake")
    prog = "import json, numpy as np, h5py\np = %r\nout = {}\n%s\nprint(json.dumps(out))\n" % (
        path, textwrap.dedent(code))
    r = subprocess.run([sys.executable, "-c", prog], env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr[-3000:]
    return json.loads(r.stdout.strip().splitlines()[-1])


WRITE_READ = """
with h5py.File(p, "w") as f:
    f.create_group("g/sub")
    d = f.create_dataset("g/d", data=np.arange(20, dtype="f4").reshape(4, 5), chunks=(2, 5))
    d[1:3, 1:4] = -1
    f.create_dataset("c", shape=(6,), dtype=[("a", "<i4"), ("b", "<f8")], chunks=(4,))
    f["c"][2:5] = np.array([(1, 1.5), (2, 2.5), (3, 3.5)], dtype=f["c"].dtype)
    f.create_dataset("big_endian", data=np.arange(5, dtype=">i2"))
    f.create_dataset("filled", shape=(3, 3), dtype="i4", fillvalue=7, chunks=(2, 2))
    f.create_dataset("grow", shape=(2,), maxshape=(None,), dtype="u1", chunks=(2,))
    f["grow"].resize((5,))
    f["grow"][2:] = [7, 8, 9]
with h5py.File(p, "r") as f:
    d = f["g/d"]
    out["shape"], out["chunks"], out["dtype"] = list(d.shape), list(d.chunks), str(d.dtype)
    out["all"] = d[...].tolist()
    out["strided"] = d[::2, 1::2].tolist()
    out["fancy"] = d[[0, 3], 2].tolist()
    out["as_f8"] = d.astype("f8")[1].tolist()
    out["c"] = [[int(r[0]), float(r[1])] for r in f["c"][...]]
    out["c_a"] = f["c"]["a"].tolist()
    out["be"] = f["big_endian"][...].tolist()
    out["be_dtype"] = str(f["big_endian"].dtype)
    out["filled"] = f["filled"][...].tolist()
    out["fillvalue"] = int(f["filled"].fillvalue)
    out["grow"] = f["grow"][...].tolist()
    out["maxshape"] = list(f["grow"].maxshape)
    out["in"] = ["g" in f, "nope" in f]
    try:
        f["missing"]
        out["missing"] = "no error"
    except KeyError:
        out["missing"] = "KeyError"
"""


def test_h5py_through_the_connector_matches_native(plugin_dir, tmp_path):
    native = run_h5py(WRITE_READ, str(tmp_path / "native.h5"))
    lake = run_h5py(WRITE_READ, str(tmp_path / "lake.h5l"), plugin_dir)
    assert lake == native
    # What h5py wrote through the connector is an h5lake store.
    with h5lake.File(tmp_path / "lake.h5l", "r") as f:
        assert sorted(f["g"]) == ["d", "sub"]
        np.testing.assert_array_equal(f["g/d"][...], np.array(native["all"], dtype="f4"))
        assert f["g/d"].chunks == (2, 5)
        assert f["filled"].fillvalue == 7


def test_h5py_reads_what_h5lake_wrote(plugin_dir, tmp_path):
    p = tmp_path / "made.h5l"
    a = np.random.default_rng(3).standard_normal((50, 40)).astype("f8")
    with h5lake.File(p, "w") as f:
        f.create_dataset("x/y", data=a, chunks=(16, 16), compression="gzip")
        f["ints"] = np.arange(12, dtype="i8").reshape(3, 4)
    got = run_h5py("""
        with h5py.File(p, "r") as f:
            out["y"] = f["x/y"][5:45:3, ::7].tolist()
            out["ints"] = f["ints"][...].tolist()
            out["mode"] = f.mode
        with h5py.File(p, "r+") as f:
            f["ints"][0, :] = -1
    """, str(p), plugin_dir)
    np.testing.assert_array_equal(np.array(got["y"]), a[5:45:3, ::7])
    assert got["ints"] == np.arange(12).reshape(3, 4).tolist()
    assert got["mode"] == "r"
    with h5lake.File(p, "r") as f:
        assert f["ints"][0].tolist() == [-1, -1, -1, -1]


def test_unsupported_calls_fail_with_an_hdf5_error(plugin_dir, tmp_path):
    got = run_h5py("""
        with h5py.File(p, "w") as f:
            f.create_group("g")
            try:
                f["g"].attrs["a"] = 1
                out["attrs"] = "no error"
            except Exception as e:
                out["attrs"] = type(e).__name__
    """, str(tmp_path / "u.h5l"), plugin_dir)
    assert got["attrs"] != "no error"
