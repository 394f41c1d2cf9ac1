"""``load`` -> ``get`` round trips of HDF5 files that other software wrote:
h5py's own data files, netCDF-4 files (netCDF4-python), PyTables files
(tables, Table/EArray/VLArray/CArray), and the generated file with every
kind of object the tests know (tests/h5files.py).

The rule checked for every file: a load that reports nothing skipped gives
back, after ``get``, every object, attribute, dtype (offsets and itemsize
included) and value h5py reads from the original; a load that cannot do
that raises ``IncompleteConversion`` naming what it left out. Never a
silent loss.

``python3 tests/test_roundtrip_files.py`` writes tests/ROUNDTRIP.md, the
per-file table.
"""

import glob
import os
import sys

import numpy as np
import pytest

h5py = pytest.importorskip("h5py")

import h5lake  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import h5files  # noqa: E402


# ---- the files ----------------------------------------------------------------

def netcdf4_file(path):
    netCDF4 = pytest.importorskip("netCDF4")
    with netCDF4.Dataset(path, "w", format="NETCDF4") as nc:
        nc.title = "a netCDF-4 file"
        nc.createDimension("time", None)
        nc.createDimension("lat", 4)
        t = nc.createVariable("time", "f8", ("time",))
        t.units = "days since 2000-01-01"
        lat = nc.createVariable("lat", "f4", ("lat",))
        lat[:] = np.linspace(-45, 45, 4)
        temp = nc.createVariable("temp", "f4", ("time", "lat"), zlib=True, fill_value=-999.0)
        temp.long_name = "temperature"
        t[:3] = [0.0, 1.0, 2.0]
        temp[:3, :] = np.arange(12, dtype="f4").reshape(3, 4)
        grp = nc.createGroup("forecast")
        grp.createVariable("count", "i4", ())[...] = 7
    return path


def netcdf4_strings_file(path):
    netCDF4 = pytest.importorskip("netCDF4")
    with netCDF4.Dataset(path, "w", format="NETCDF4") as nc:
        nc.createDimension("n", 3)
        names = nc.createVariable("names", str, ("n",))
        names[:] = np.array(["alpha", "beta", "gamma"], dtype=object)
    return path


def pytables_file(path):
    tables = pytest.importorskip("tables")

    class Particle(tables.IsDescription):
        name = tables.StringCol(16)
        idnumber = tables.Int64Col()
        energy = tables.Float64Col()

    with tables.open_file(path, "w", title="a PyTables file") as f:
        g = f.create_group("/", "detector", "Detector information")
        t = f.create_table(g, "readout", Particle, "Readout example")
        row = t.row
        for i in range(20):
            row["name"] = f"Particle: {i:6d}"
            row["idnumber"] = i * (2 ** 34)
            row["energy"] = float(i * i)
            row.append()
        t.flush()
        f.create_array("/", "array", np.arange(30).reshape(5, 6), "a plain array")
        e = f.create_earray("/", "earray", tables.Float32Atom(), (0, 4))
        e.append(np.ones((10, 4), dtype="f4"))
        f.create_carray("/", "carray", tables.Int16Atom(), (40, 40), chunkshape=(10, 10),
                        filters=tables.Filters(complevel=5, complib="zlib"))
        v = f.create_vlarray("/", "vlarray", tables.Int32Atom())
        v.append([1, 2, 3])
        v.append([4])
    return path


def h5py_data_files():
    return sorted(glob.glob(os.path.join(os.path.dirname(h5py.__file__), "tests", "data_files",
                                         "*.h5")))


def _elsewhere(make):
    """``make`` run in a child process: netCDF4 and PyTables bring their
    own libhdf5, and two in one process break h5py's filter plugins."""
    def run(path):
        import subprocess
        subprocess.run([sys.executable, __file__, "--make", make.__name__, path], check=True,
                       timeout=120)
        return path
    run.__name__ = make.__name__
    return run


MADE = {"netcdf4": _elsewhere(netcdf4_file), "netcdf4-strings": _elsewhere(netcdf4_strings_file),
        "pytables": _elsewhere(pytables_file)}
# The generated files of tests/h5files.py (whichever it has).
for _name in ("write_everything", "write_variable_records", "write_padded_compounds",
              "write_long_floats", "write_time_types", "write_references"):
    if hasattr(h5files, _name):
        MADE["h5files." + _name[len("write_"):]] = getattr(h5files, _name)


# ---- comparing through h5py ----------------------------------------------------

def _values_equal(a, b, files=None):
    if isinstance(a, h5py.Reference):   # of two files: the same object, by name
        return isinstance(b, h5py.Reference) and (
            (files[0][a].name if a else None) == (files[1][b].name if b else None))
    a, b = np.asarray(a), np.asarray(b)
    if a.shape != b.shape:
        return False
    if a.dtype.names is not None:
        return all(_values_equal(a[n], b[n], files) for n in a.dtype.names)
    if a.dtype.hasobject or b.dtype.hasobject:
        return all(_values_equal(x, y, files)
                   if isinstance(x, (np.ndarray, h5py.Reference)) else x == y
                   for x, y in zip(a.flat, b.flat))
    if a.dtype.kind in "fc":
        return bool(np.all((a == b) | (np.isnan(a) & np.isnan(b))))
    return bool(np.all(a == b))


def raw_bytes(dset):
    """The elements of ``dset`` as the file stores them."""
    tid = dset.id.get_type()
    buf = np.empty(dset.shape or (), dtype=f"V{tid.get_size()}")
    dset.id.read(h5py.h5s.ALL, h5py.h5s.ALL, buf, mtype=tid)
    return buf.tobytes()


def raw_attr(obj, name):
    """An attribute's HDF5 type and stored bytes."""
    aid = h5py.h5a.open(obj.id, name.encode())
    tid = aid.get_type()
    buf = np.empty(aid.shape or (), dtype=f"V{tid.get_size()}")
    aid.read(buf, mtype=tid)
    return tid, buf.tobytes()


def differences(src, back):
    """What h5py sees differently in ``back`` than in ``src``."""
    out = []
    with h5py.File(src, "r") as a, h5py.File(back, "r") as b:
        def attrs(x, y, path):
            if set(x.attrs) != set(y.attrs):
                out.append(f"{path}: attributes {sorted(x.attrs)} != {sorted(y.attrs)}")
                return
            for k in x.attrs:
                try:
                    va, vb = x.attrs[k], y.attrs[k]
                except (OSError, TypeError, ValueError):
                    # a type numpy has none for: HDF5 types and bytes compared
                    if raw_attr(x, k) != raw_attr(y, k):
                        out.append(f"{path}: attribute {k} differs (as stored)")
                    continue
                if getattr(va, "dtype", None) != getattr(vb, "dtype", None) \
                        or not _values_equal(va, vb, (a, b)):
                    out.append(f"{path}: attribute {k} differs")

        seen = set()

        def walk(x, y, path):
            if x.id in seen:            # a second link to an object (or a cycle)
                return
            seen.add(x.id)
            attrs(x, y, path)
            if isinstance(x, h5py.Group):
                if set(x) != set(y):
                    out.append(f"{path}: members {sorted(x)} != {sorted(y)}")
                for name in sorted(set(x) & set(y)):
                    lx, ly = x.get(name, getlink=True), y.get(name, getlink=True)
                    child = f"{path.rstrip('/')}/{name}"
                    if type(lx) is not type(ly):
                        out.append(f"{child}: link {type(lx).__name__} != {type(ly).__name__}")
                    elif isinstance(lx, h5py.HardLink):
                        walk(x[name], y[name], child)
                    elif vars(lx) != vars(ly):
                        out.append(f"{child}: link target differs")
            elif isinstance(x, h5py.Dataset):
                try:
                    x.dtype
                except (TypeError, ValueError):
                    # a type numpy has none for (quad floats): the HDF5
                    # types must be equal and the stored bytes too
                    if x.id.get_type() != y.id.get_type():
                        out.append(f"{path}: HDF5 type differs")
                    elif x.shape != y.shape or raw_bytes(x) != raw_bytes(y):
                        out.append(f"{path}: values differ")
                    return
                if x.dtype != y.dtype or x.dtype.itemsize != y.dtype.itemsize:
                    out.append(f"{path}: dtype {x.dtype} != {y.dtype}")
                elif x.shape != y.shape:
                    out.append(f"{path}: shape {x.shape} != {y.shape}")
                elif x.shape is not None and not _values_equal(x[()], y[()], (a, b)):
                    out.append(f"{path}: values differ")

        walk(a, b, "/")
    return out


def round_trip(src, tmp):
    """``("exact", [])``, ``("incomplete", skipped)`` or ``("WRONG", diffs)``."""
    store, back = os.path.join(tmp, "rt.h5l"), os.path.join(tmp, "rt.h5")
    try:
        h5lake.load(src, store, force=True)
    except h5lake.IncompleteConversion as e:
        return "incomplete", e.report["skipped"]
    try:
        h5lake.get(store, back, force=True)
    except h5lake.IncompleteConversion as e:
        return "incomplete", e.report["skipped"]
    diffs = differences(src, back)
    return ("WRONG", diffs) if diffs else ("exact", [])


# ---- the tests ----------------------------------------------------------------------

@pytest.mark.parametrize("kind", sorted(MADE))
def test_files_other_software_writes(kind, tmp_path):
    src = MADE[kind](str(tmp_path / f"{kind}.h5"))
    outcome, detail = round_trip(src, str(tmp_path))
    assert outcome != "WRONG", detail


def test_h5pys_data_files(tmp_path):
    files = h5py_data_files()
    assert files
    outcomes = {os.path.basename(f): round_trip(f, str(tmp_path)) for f in files}
    assert not [f for f, (o, _) in outcomes.items() if o == "WRONG"], outcomes
    # these hold nothing h5lake lacks: they must come back exactly
    assert all(o == "exact" for o, _ in outcomes.values()), outcomes


def main():
    import tempfile
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        sources = [(os.path.basename(f), f) for f in h5py_data_files()]
        for kind, make in sorted(MADE.items()):
            sources.append((kind, make(os.path.join(tmp, f"{kind}.h5"))))
        for name, src in sources:
            with tempfile.TemporaryDirectory() as work:
                outcome, detail = round_trip(src, work)
            rows.append((name, outcome, "; ".join(detail) or ""))
    lines = ["# load -> get round trips", "",
             "Written by `python3 tests/test_roundtrip_files.py` (see its docstring).", "",
             "| file | outcome | what is missing or different |", "|---|---|---|"]
    lines += [f"| {n} | {o} | {d.replace('|', '/')} |" for n, o, d in rows]
    with open(os.path.join(HERE, "ROUNDTRIP.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    if sys.argv[1:2] == ["--make"]:
        globals()[sys.argv[2]](sys.argv[3])
    else:
        main()
