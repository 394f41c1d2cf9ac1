"""The VOL connector configured ``HDF5_VOL_CONNECTOR="h5lake layout=columnar"``:
unmodified h5py writes column stores. Compound datasets created through
HDF5 calls are columnar (each chunk one Parquet object) and read back as
natively; other datasets keep the row layout; a setting the connector does
not know fails naming it."""

import os

import numpy as np
import pytest

import h5lake
from test_vol import (COMMITTED_TYPES, PADDED_COMPOUNDS, VLEN_MEMBERS, WRITE_READ,  # noqa: F401
                      plugin_dir, run_h5py)

pq = pytest.importorskip("pyarrow.parquet")

COLUMNAR = "h5lake layout=columnar"

TABLE_CODE = """
row = np.dtype([("x", "<f4"), ("id", "<i8"), ("name", "S5"), ("v", "<f8", (2,))])
def table(n, k=0):
    a = np.zeros(n, row)
    a["x"] = np.arange(n) * 0.5 + k
    a["id"] = np.arange(n) * 3 + k
    a["name"] = [b"r%d" % (i % 1000) for i in range(n)]
    a["v"] = np.stack([np.arange(n), -np.arange(n)], axis=1)
    return a
"""

TABLES = TABLE_CODE + """
a = table(5000)
with h5py.File(p, "w") as f:
    f["table"] = a                                    # contiguous, h5py's default
    f["table"][10:20] = table(10, 7)
    f["table"][4999] = table(1, 9)[0]
    d = f.create_dataset("chunked", data=table(1000), chunks=(300,), maxshape=(None,),
                         compression="gzip", shuffle=True)
    d.resize((1200,))
    d[1000:] = table(200, 1)
    f.create_dataset("grid", data=table(40 * 30).reshape(40, 30))
    f.create_dataset("empty", shape=(0,), dtype=row)
    f["plain"] = np.arange(12.0).reshape(3, 4)
    f["scalar"] = table(1)[0]
    f.create_dataset("checksummed", data=table(10), chunks=(5,), fletcher32=True)
expected = {"table": a.copy(), "chunked": np.concatenate([table(1000), table(200, 1)]),
            "grid": table(40 * 30).reshape(40, 30)}
expected["table"][10:20] = table(10, 7)
expected["table"][4999] = table(1, 9)[0]
with h5py.File(p, "r") as f:
    out["same"] = {k: bool((f[k][...] == v).all()) for k, v in expected.items()}
    out["fields"] = [f["table"]["id"][10:12].tolist(), f["chunked"][1000:1002, "x"].tolist()]
    out["chunks"] = {k: f[k].chunks for k in ("table", "chunked", "grid", "plain", "checksummed")}
    out["compression"] = f["chunked"].compression
    out["plain"] = f["plain"][...].tolist()
    out["scalar"] = f["scalar"][()]["id"].item()
    out["empty"] = f["empty"].shape
"""


def _table(n, k=0):
    """The table the h5py program writes (the same code, run here)."""
    ns = {"np": np}
    exec(TABLE_CODE, ns)
    return ns["table"](n, k)


def _assert_parquet_equal(files, expected):
    """The Parquet objects, read by pyarrow and concatenated in chunk
    order, hold ``expected``'s rows member by member."""
    t = pq.read_table(files)
    assert t.num_rows == len(expected)
    assert t.column_names == list(expected.dtype.names)
    np.testing.assert_array_equal(t.column("x").to_numpy(), expected["x"])
    np.testing.assert_array_equal(t.column("id").to_numpy(), expected["id"])
    assert [b.rstrip(b"\0") for b in t.column("name").to_pylist()] == expected["name"].tolist()
    assert t.column("v").to_pylist() == expected["v"].tolist()


def test_h5py_writes_column_stores(plugin_dir, tmp_path):
    p = tmp_path / "s.h5l"
    got = run_h5py(TABLES, str(p), plugin_dir, connector=COLUMNAR)
    # Read back through the connector as written; the program sees the
    # layout it asked for (contiguous datasets report no chunks).
    assert got["same"] == {"table": True, "chunked": True, "grid": True}
    assert got["fields"] == [[7, 10], [1.0, 1.5]]
    assert got["chunks"] == {"table": None, "chunked": [300], "grid": None, "plain": None,
                             "checksummed": [5]}
    assert got["compression"] == "gzip"
    assert got["plain"] == np.arange(12.0).reshape(3, 4).tolist()
    assert got["scalar"] == 0 and got["empty"] == [0]

    table = _table(5000)
    table[10:20] = _table(10, 7)
    table[4999] = _table(1, 9)[0]
    chunked = np.concatenate([_table(1000), _table(200, 1)])
    with h5lake.File(p, "r") as f:
        # Compound datasets are columnar; pyarrow reads their chunk objects.
        for name in ("table", "chunked", "grid"):
            assert f[name].is_columnar, name
        files = f["table"].parquet_files()
        assert files and all(os.path.isfile(x) for x in files)
        _assert_parquet_equal(files, table)
        _assert_parquet_equal(f["chunked"].parquet_files(), chunked)
        assert len(f["chunked"].parquet_files()) == 4
        meta = pq.read_metadata(f["chunked"].parquet_files()[0])
        assert meta.row_group(0).column(0).compression == "GZIP"
        np.testing.assert_array_equal(f["grid"][...], _table(40 * 30).reshape(40, 30))
        grid = f["grid"]
        assert pq.read_table(grid.parquet_files(padded=True)).num_rows >= 40 * 30
        if any(n % c for n, c in zip(grid.shape, grid.chunks)):
            with pytest.raises(ValueError, match="padded=True"):
                grid.parquet_files()
        # What the columnar layout cannot hold, or needs not, stays in rows.
        for name in ("plain", "scalar", "empty", "checksummed"):
            assert not f[name].is_columnar, name
        np.testing.assert_array_equal(f["checksummed"][...], _table(10))

    # The default setting (and layout=row) keeps the row layout.
    for connector in ("h5lake", "h5lake layout=row"):
        q = tmp_path / ("r%d.h5l" % len(connector))
        run_h5py(TABLES, str(q), plugin_dir, connector=connector)
        with h5lake.File(q, "r") as f:
            assert not any(f[n].is_columnar for n in ("table", "chunked", "grid"))


@pytest.mark.parametrize("code, columnar", [
    # copies (H5Ocopy) of a columnar dataset are columnar, as HDF5's copy
    # keeps a dataset's layout
    (WRITE_READ, {"c": True, "typed": True, "g_copy/c_copy": True, "g_copy/hard": True}),
    # variable-length strings inside an array member have no Parquet column
    (VLEN_MEMBERS, {"t": False}),
    (PADDED_COMPOUNDS, {"aligned": True, "shuffled": True, "of_named": True}),
    (COMMITTED_TYPES, {"d": True, "plain": True}),
], ids=["write_read", "vlen_members", "padded_compounds", "committed_types"])
def test_columnar_setting_reads_as_native(plugin_dir, tmp_path, code, columnar):
    """test_vol's h5py programs with compound datasets give native HDF5's
    results with the columnar setting too."""
    native = run_h5py(code, str(tmp_path / "native.h5"))
    lake = run_h5py(code, str(tmp_path / "lake.h5l"), plugin_dir, connector=COLUMNAR)
    assert lake == native
    got = {}
    with h5lake.File(tmp_path / "lake.h5l", "r") as f:
        f.visititems(lambda n, o: got.update({n: o.is_columnar})
                     if isinstance(o, h5lake.Dataset) and o.dtype.names else None)
    assert got == columnar


BAD_SETTING = """
import os
try:
    h5py.File(p, "w")
    out["error"] = None
except Exception as e:
    out["error"] = [type(e).__name__, str(e)]
out["made"] = os.path.exists(p)
"""


@pytest.mark.parametrize("connector, named", [
    ("h5lake layout=colunmar", 'unknown layout "colunmar"'),
    ("h5lake chunks=4", 'unknown key "chunks"'),
    ("h5lake columnar", 'setting "columnar" is not key=value'),
])
def test_unknown_setting_fails_naming_it(plugin_dir, tmp_path, connector, named):
    got = run_h5py(BAD_SETTING, str(tmp_path / "s.h5l"), plugin_dir, connector=connector)
    assert got["error"][0] == "OSError"
    assert named in got["error"][1] and "h5lake VOL connector info" in got["error"][1]
    assert not got["made"]


SET_VOL = """
import ctypes, glob, os
libs = glob.glob(os.path.join(os.path.dirname(h5py.__file__), os.pardir, "h5py.libs", "libhdf5-*.so*"))
if not libs:
    out["skip"] = "h5py's wheel has no bundled libhdf5 to call"
else:
    lib = ctypes.CDLL(libs[0])      # the library h5py loaded
    lib.H5VLregister_connector_by_name.restype = ctypes.c_int64
    lib.H5VLregister_connector_by_name.argtypes = [ctypes.c_char_p, ctypes.c_int64]
    lib.H5Pset_vol.argtypes = [ctypes.c_int64, ctypes.c_int64, ctypes.c_void_p]
    vol = lib.H5VLregister_connector_by_name(b"h5lake", 0)
    fapl = h5py.h5p.create(h5py.h5p.FILE_ACCESS)
    assert lib.H5Pset_vol(fapl.id, vol, ctypes.c_char_p(b"layout=columnar")) == 0
    with h5py.File(h5py.h5f.create(p.encode(), h5py.h5f.ACC_TRUNC, fapl=fapl)) as f:
        f["t"] = np.zeros(10, [("a", "<i4"), ("b", "<f8")])
        out["t"] = f["t"]["a"].tolist()
    assert lib.H5Pset_vol(fapl.id, vol, ctypes.c_char_p(b"layout=wide")) == 0
    try:
        h5py.h5f.create((p + "2").encode(), h5py.h5f.ACC_TRUNC, fapl=fapl)
    except OSError as e:
        out["error"] = str(e)
"""


def test_h5pset_vol_takes_the_setting_as_a_string(plugin_dir, tmp_path):
    """A program that sets the connector itself gives the same string as
    the connector's info (``H5Pset_vol(fapl, id, "layout=columnar")``)."""
    p = tmp_path / "s.h5l"
    got = _run_without_connector(SET_VOL, p, dict(HDF5_PLUGIN_PATH=plugin_dir))
    if "skip" in got:
        pytest.skip(got["skip"])
    assert got["t"] == [0] * 10
    assert 'unknown layout "wide"' in got["error"]
    with h5lake.File(p, "r") as f:
        assert f["t"].is_columnar


def _run_without_connector(code, path, env_extra):
    """``run_h5py`` with the plugin on HDF5_PLUGIN_PATH but no default
    connector: the program picks it itself."""
    import json
    import subprocess
    import sys
    import textwrap
    env = dict(os.environ)
    env.pop("HDF5_VOL_CONNECTOR", None)
    env.update(env_extra)
    prog = "import json, numpy as np, h5py\np = %r\nout = {}\n%s\nprint(json.dumps(out))\n" % (
        str(path), textwrap.dedent(code))
    r = subprocess.run([sys.executable, "-c", prog], env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr[-3000:]
    return json.loads(r.stdout.strip().splitlines()[-1])


CHUNK_QUERY = """
with h5py.File(p, "w") as f:
    f.create_dataset("t", data=np.zeros(8, [("a", "i4"), ("b", "f8")]), chunks=(4,))
with h5py.File(p, "r") as f:
    try:
        out["n"] = f["t"].id.get_num_chunks()
    except Exception as e:
        out["n"] = [type(e).__name__, str(e)]
"""


def test_chunk_queries_on_columnar_chunks_fail_naming_why(plugin_dir, tmp_path):
    """A columnar dataset's chunks are Parquet objects, no HDF5 chunks to
    count or address: the query fails saying so, instead of answering
    with sizes of objects no HDF5 reader could use."""
    got = run_h5py(CHUNK_QUERY, str(tmp_path / "s.h5l"), plugin_dir, connector=COLUMNAR)
    assert isinstance(got["n"], list), got
    assert "Parquet" in got["n"][1] or "columnar" in got["n"][1], got
