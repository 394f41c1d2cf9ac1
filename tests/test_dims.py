"""Dimension scales (``dset.dims``, ``make_scale``, ``is_scale``) against
h5py on real HDF5 files: the same steps run on both, and everything one can
observe must agree -- results, exception types, labels, scale names, which
scales are attached to which dimension in which order, the dimension-scale
attributes themselves -- also after reopening. The attribute *types* are
compared on HDF5 files: an h5lake store exported with ``h5lake.get`` must
carry exactly what HDF5's H5DS library writes, and HDF5 itself must be able
to go on attaching and detaching scales in it.
"""

import warnings

import numpy as np
import pytest

import h5lake

h5py = pytest.importorskip("h5py")

NAMES = ["data", "cube", "x", "y", "z", "w", "plain", "scalar", "q"]
DIM_ATTRS = ("CLASS", "NAME", "REFERENCE_LIST", "DIMENSION_LIST", "DIMENSION_LABELS")


def populate(f):
    f.create_dataset("data", data=np.zeros((3, 4), "f4"))
    f.create_dataset("cube", data=np.zeros((2, 3, 4), "i2"))
    f.create_dataset("x", data=np.arange(3.0))
    for n in ("y", "z", "w", "plain", "q"):
        f.create_dataset(n, data=np.arange(4.0))
    f.create_dataset("scalar", data=1.5)
    f.create_group("grp")


def _set(obj, attr, value):
    setattr(obj, attr, value)


# Each step: (description, fn(f) -> comparable result). Both libraries run
# the same list; a step that raises is recorded by its exception type.
STEPS = [
    ("rank", lambda f: (len(f["data"].dims), len(f["cube"].dims), len(f["scalar"].dims))),
    ("scalar has no dimension 0", lambda f: f["scalar"].dims[0]),
    ("index past rank", lambda f: f["data"].dims[2]),
    ("index by name", lambda f: f["data"].dims["a"]),
    ("negative dimension", lambda f: f["data"].dims[-1].label),
    ("unset label", lambda f: f["data"].dims[0].label),
    ("no scales yet", lambda f: (len(f["data"].dims[0]), f["data"].dims[0].keys(),
                                 f["data"].dims[0].items())),
    ("index a dimension without scales", lambda f: f["data"].dims[0][0]),
    ("name in a dimension without scales", lambda f: f["data"].dims[0]["x"]),
    ("not a scale yet", lambda f: f["x"].is_scale),
    ("make scales", lambda f: (f["x"].make_scale("x"), f["y"].make_scale(),
                               f["z"].make_scale("zed"))),
    ("are scales", lambda f: [f[n].is_scale for n in ("x", "y", "z", "w")]),
    ("attach", lambda f: f["data"].dims[0].attach_scale(f["x"])),
    ("attach three", lambda f: [f["data"].dims[1].attach_scale(f[n]) for n in ("y", "z", "w")]),
    ("attaching a non-scale made it one", lambda f: f["w"].is_scale),
    ("attach again (no duplicate)", lambda f: f["data"].dims[1].attach_scale(f["z"])),
    ("keys, values, items", lambda f: (f["data"].dims[1].keys(),
                                       [v.name for v in f["data"].dims[1].values()],
                                       [(k, v.name) for k, v in f["data"].dims[1].items()],
                                       len(f["data"].dims[1]), list(f["data"].dims[1]))),
    ("index by position", lambda f: (f["data"].dims[1][0].name, f["data"].dims[1][-1].name,
                                     f["data"].dims[1][1].name)),
    ("index past the scales", lambda f: f["data"].dims[1][7]),
    ("index by name", lambda f: (f["data"].dims[1]["zed"].name, f["data"].dims[1][""].name,
                                 f["data"].dims[1][b"zed"].name)),
    ("unknown name", lambda f: f["data"].dims[1]["nope"]),
    ("detach (last takes its place)", lambda f: (f["data"].dims[1].detach_scale(f["y"]),
                                                 f["data"].dims[1].keys())),
    ("detach again", lambda f: f["data"].dims[1].detach_scale(f["y"])),
    ("detach a never-attached dataset", lambda f: f["data"].dims[0].detach_scale(f["plain"])),
    ("detach from a dataset without scales", lambda f: f["cube"].dims[0].detach_scale(f["x"])),
    ("attach to itself", lambda f: f["data"].dims[0].attach_scale(f["data"])),
    ("detach from itself", lambda f: f["data"].dims[0].detach_scale(f["data"])),
    ("attach to a scale", lambda f: f["x"].dims[0].attach_scale(f["y"])),
    ("attach a group", lambda f: f["data"].dims[0].attach_scale(f["grp"])),
    ("one scale on two dimensions", lambda f: (f["cube"].dims[0].attach_scale(f["x"]),
                                               f["cube"].dims[2].attach_scale(f["x"]),
                                               f["cube"].dims[2].attach_scale(f["z"]))),
    ("detach it from one", lambda f: (f["cube"].dims[2].detach_scale(f["x"]),
                                      [d.keys() for d in f["cube"].dims])),
    ("a dataset with scales", lambda f: f["plain"].dims[0].attach_scale(f["z"])),
    ("cannot be attached", lambda f: f["data"].dims[1].attach_scale(f["plain"])),
    ("cannot be made a scale", lambda f: f["plain"].make_scale("p")),
    ("labels", lambda f: (_set(f["data"].dims[1], "label", "lon"),
                          _set(f["data"].dims[0], "label", b"lat"),
                          _set(f["cube"].dims[2], "label", "\u00e9t\u00e9"),
                          _set(f["x"].dims[0], "label", "on a scale"),
                          [d.label for d in f["data"].dims], [d.label for d in f["cube"].dims],
                          f["x"].dims[0].label)),
    ("relabel", lambda f: (_set(f["data"].dims[1], "label", "longitude"),
                           [d.label for d in f["data"].dims])),
    ("label must be a string", lambda f: _set(f["data"].dims[0], "label", 5)),
    ("name must be a string", lambda f: f["x"].make_scale(3)),
    ("rename a scale", lambda f: (f["x"].make_scale("ex"), f["data"].dims[0].keys(),
                                  f["data"].dims[0]["ex"].name)),
    ("non-ASCII scale name", lambda f: (f["y"].make_scale("\u00f1"), f["cube"].dims[1].attach_scale(f["y"]),
                                        f["cube"].dims[1].keys())),
    ("a scalar scale", lambda f: (f["scalar"].make_scale("s"), f["data"].dims[0].attach_scale(f["scalar"]),
                                  f["data"].dims[0].keys())),
    ("dimension equality", lambda f: (f["data"].dims[0] == f["data"].dims[0],
                                      f["data"].dims[0] == f["data"].dims[1],
                                      0 in f["data"].dims)),
    ("iterate dimensions", lambda f: [(d.label, d.keys()) for d in f["data"].dims]),
    ("detach all of dimension 0", lambda f: (f["data"].dims[0].detach_scale(f["x"]),
                                             f["data"].dims[0].detach_scale(f["scalar"]),
                                             "DIMENSION_LIST" in f["data"].attrs)),
    ("detach the last", lambda f: ([f["data"].dims[1].detach_scale(f[n]) for n in ("z", "w")],
                                   "DIMENSION_LIST" in f["data"].attrs,
                                   "REFERENCE_LIST" in f["w"].attrs, f["w"].is_scale)),
    ("a former data set may become a scale", lambda f: (f["data"].make_scale("d"), f["data"].is_scale)),
]


def run_steps(f, steps=STEPS):
    log = []
    for desc, fn in steps:
        try:
            log.append((desc, "ok", fn(f)))
        except Exception as e:
            log.append((desc, "raised", type(e).__name__))
    return log


def observed_dims(d):
    return (d.is_scale, [(dim.label, len(dim), dim.keys(), [v.name for v in dim.values()])
                         for dim in d.dims])


def observed(f):
    """What h5py-level code sees of the dimension scales in ``f``."""
    return {n: observed_dims(f[n]) for n in NAMES}


def stored_attrs(f, names=NAMES):
    """The dimension-scale attributes, references as paths."""
    out = {}
    for n in names:
        a = f[n].attrs
        entry = {}
        for k in DIM_ATTRS:
            if k not in a:
                continue
            v = a[k]
            if k == "DIMENSION_LIST":
                v = [[f[r].name for r in row] for row in v]
            elif k == "REFERENCE_LIST":
                v = [(f[r["dataset"]].name, int(r["dimension"])) for r in v]
            elif k == "DIMENSION_LABELS":
                v = [str(s) for s in v]
            else:
                v = bytes(v)
            entry[k] = v
        out[n] = entry
    return out


stored = stored_attrs


@pytest.fixture
def both(tmp_path):
    """The same steps on an HDF5 file (h5py) and an h5lake store."""
    paths = (str(tmp_path / "ref.h5"), str(tmp_path / "lake.h5l"))
    with h5py.File(paths[0], "w") as hf, h5lake.File(paths[1], "w") as lf:
        populate(hf)
        populate(lf)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            yield hf, lf, paths


def test_steps_match_h5py(both):
    hf, lf, _ = both
    want, got = run_steps(hf), run_steps(lf)
    for w, g in zip(want, got):
        assert g == w, w[0]
    assert observed(lf) == observed(hf)
    assert stored(lf) == stored(hf)


def test_persists_across_reopen(both):
    hf, lf, (hpath, lpath) = both
    run_steps(hf)
    run_steps(lf)
    want_obs, want_stored = observed(hf), stored(hf)
    hf.close()
    lf.close()
    with h5py.File(hpath, "r") as hf2, h5lake.File(lpath, "r") as lf2:
        assert observed(hf2) == want_obs
        assert observed(lf2) == want_obs
        assert stored(lf2) == want_stored
        # Read-only: every change refused as h5py refuses it.
        for f in (hf2, lf2):
            for fn in (lambda: f["cube"].dims[1].attach_scale(f["z"]),
                       lambda: f["cube"].dims[0].detach_scale(f["x"]),
                       lambda: _set(f["cube"].dims[0], "label", "t"),
                       lambda: f["q"].make_scale("q")):
                with pytest.raises(RuntimeError):
                    fn()
        assert observed(lf2) == want_obs


def test_create_scale_is_deprecated(both):
    hf, lf, _ = both
    for f in (hf, lf):
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            f["data"].dims.create_scale(f["q"], "made")
        assert len(w) == 1 and issubclass(w[0].category, UserWarning)
        assert "deprecated" in str(w[0].message) and "make_scale" in str(w[0].message)
        assert f["q"].is_scale
        f["data"].dims[0].attach_scale(f["q"])
        assert f["data"].dims[0].keys() == ["made"]


def test_repr(both):
    _, lf, _ = both
    lf["x"].make_scale("x")
    lf["data"].dims[0].attach_scale(lf["x"])
    lf["data"].dims[0].label = "lat"
    assert repr(lf["data"].dims).startswith("<Dimensions of HDF5 object at ")
    assert repr(lf["data"].dims[0]).startswith('<"lat" dimension 0 of HDF5 dataset at ')


CLASS_VALUES = [np.bytes_(b"DIMENSION_SCALE"), "DIMENSION_SCALE", np.bytes_(b"IMAGE"),
                np.array(b"DIMENSION_SCALE", dtype="S16"), 7,
                np.array(b"DIM", dtype="S16")]


def test_class_attribute_rules(tmp_path):
    # H5DSis_scale: CLASS must be a null-terminated string of 16 bytes
    # starting like "DIMENSION_SCALE"; what users write by hand as CLASS
    # does not count. Attaching such a dataset as a scale rewrites CLASS.
    # (One attribute write per dataset, and the attached state compared
    # after reopening: HDF5 2.0's H5DSis_scale leaves a CLASS it rejects
    # open, so h5py shows stale attributes until the file is closed.)
    results = []
    for lib, path in ((h5py, tmp_path / "c.h5"), (h5lake, tmp_path / "c.h5l")):
        with lib.File(str(path), "w") as f:
            f.create_dataset("data", data=np.zeros((3, len(CLASS_VALUES))))
            found = []
            for i, v in enumerate(CLASS_VALUES):
                q = f.create_dataset(f"q{i}", data=np.zeros(3))
                q.attrs["CLASS"] = v
                found.append(q.is_scale)
            f.create_dataset("nameless", data=np.zeros(3))
        with lib.File(str(path), "r+") as f:
            for i in range(len(CLASS_VALUES)):
                f["data"].dims[1].attach_scale(f[f"q{i}"])
            f["data"].dims[0].attach_scale(f["nameless"])
        with lib.File(str(path), "r") as f:
            after = [(f[f"q{i}"].is_scale, bytes(f[f"q{i}"].attrs["CLASS"]))
                     for i in range(len(CLASS_VALUES))]
            results.append((found, after, observed_dims(f["data"]), stored_attrs(f, ["data"])))
    assert results[1] == results[0]
    assert results[0][0] == [False, False, False, False, False, False]
    assert results[0][1] == [(True, b"DIMENSION_SCALE")] * len(CLASS_VALUES)


def test_class_prefix_quirk(tmp_path):
    # Null-terminated CLASS strings (which h5py's attrs cannot write) made
    # with HDF5's own API, loaded into h5lake: H5DSis_scale takes a 16-byte
    # CLASS that is a prefix of "DIMENSION_SCALE" (the empty one too).
    cases = {"full": (b"DIMENSION_SCALE", 16), "prefix": (b"DIM", 16), "empty": (b"", 16),
             "other": (b"IMAGE", 16), "longer type": (b"DIMENSION_SCALE", 17),
             "shorter type": (b"DIMENSION_SCAL", 15)}
    src, dst = str(tmp_path / "q.h5"), str(tmp_path / "q.h5l")
    with h5py.File(src, "w") as f:
        for name, (value, size) in cases.items():
            q = f.create_dataset(name, data=np.zeros(2))
            tid = h5py.h5t.C_S1.copy()
            tid.set_size(size)
            tid.set_strpad(h5py.h5t.STR_NULLTERM)
            aid = h5py.h5a.create(q.id, b"CLASS", tid, h5py.h5s.create(h5py.h5s.SCALAR))
            aid.write(np.array(value, dtype=f"S{size}"), mtype=tid)
        # (HDF5 2.0's H5DSis_scale frees twice -- aborts -- on a 16-byte
        # CLASS that is no prefix; it means "not a scale" there)
        want = {name: f[name].is_scale for name in cases if name != "other"}
    want["other"] = False
    assert want == {"full": True, "prefix": True, "empty": True, "other": False,
                    "longer type": False, "shorter type": False}
    h5lake.load(src, dst)
    with h5lake.File(dst, "r") as f:
        assert {name: f[name].is_scale for name in cases} == want


# -- the bytes on disk: export to HDF5 -----------------------------------------

def type_sig(t):
    """An HDF5 type, as far as H5DS and netCDF-4 care."""
    cls = t.get_class()
    if cls == h5py.h5t.STRING:
        var = t.is_variable_str()
        return ("string", var, t.get_cset(), t.get_strpad(), None if var else t.get_size())
    if cls == h5py.h5t.COMPOUND:
        return ("compound", t.get_size(),
                [(t.get_member_name(i), t.get_member_offset(i), type_sig(t.get_member_type(i)))
                 for i in range(t.get_nmembers())])
    if cls == h5py.h5t.VLEN:
        return ("vlen", type_sig(t.get_super()))
    if cls == h5py.h5t.REFERENCE:
        return ("objref" if t.equal(h5py.h5t.STD_REF_OBJ) else "other reference", t.get_size())
    if cls == h5py.h5t.INTEGER:
        return ("int", t.get_size(), t.get_sign(), t.get_order())
    return (cls, t.get_size())


def attr_types(path):
    out = {}
    with h5py.File(path, "r") as f:
        for n in NAMES:
            for k in DIM_ATTRS:
                if k in f[n].attrs:
                    aid = f[n].attrs.get_id(k)
                    out[n, k] = (type_sig(aid.get_type()), aid.shape)
    return out


def test_export_writes_what_h5ds_writes(both, tmp_path):
    hf, lf, (hpath, lpath) = both
    run_steps(hf)
    run_steps(lf)
    want_obs, want_stored = observed(hf), stored(hf)
    hf.close()
    lf.close()
    out = str(tmp_path / "exported.h5")
    h5lake.get(lpath, out)
    want_types = attr_types(hpath)
    assert want_types          # the scenario leaves scales behind
    assert attr_types(out) == want_types
    with h5py.File(out, "r") as g:
        assert observed(g) == want_obs
        assert stored(g) == want_stored


def test_hdf5_continues_an_exported_store(tmp_path):
    # HDF5's own H5DS edits what h5lake wrote, and h5lake reads the result.
    lpath, out = str(tmp_path / "a.h5l"), str(tmp_path / "a.h5")
    with h5lake.File(lpath, "w") as f:
        populate(f)
        f["x"].make_scale("x")
        for n in ("y", "z"):
            f["data"].dims[1].attach_scale(f[n])
        f["data"].dims[0].attach_scale(f["x"])
        f["data"].dims[0].label = "lat"
    h5lake.get(lpath, out)
    with h5py.File(out, "r+") as g:
        g["data"].dims[1].detach_scale(g["y"])
        g["data"].dims[1].attach_scale(g["w"])
        g["cube"].dims[0].attach_scale(g["y"])
        g["data"].dims[1].label = "lon"
        want = observed(g), stored(g)
    back = str(tmp_path / "b.h5l")
    h5lake.load(out, back)
    with h5lake.File(back, "r+") as f:
        assert (observed(f), stored(f)) == want
        # and h5lake goes on from there
        f["data"].dims[1].detach_scale(f["z"])
        assert f["data"].dims[1].keys() == [""]
        assert [v.name for v in f["data"].dims[1].values()] == ["/w"]


def test_load_a_file_h5py_made(tmp_path):
    src, dst = str(tmp_path / "src.h5"), str(tmp_path / "src.h5l")
    with h5py.File(src, "w") as hf:
        populate(hf)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            run_steps(hf)
        want = observed(hf), stored(hf)
    h5lake.load(src, dst)
    with h5lake.File(dst, "r") as lf:
        assert (observed(lf), stored(lf)) == want


def test_scale_in_another_file(tmp_path):
    with h5lake.File(str(tmp_path / "a.h5l"), "w") as a, h5lake.File(str(tmp_path / "b.h5l"), "w") as b:
        a["d"] = np.zeros(3)
        b["s"] = np.arange(3)
        b["s"].make_scale("s")
        with pytest.raises(ValueError, match="another file"):
            a["d"].dims[0].attach_scale(b["s"])
        assert "DIMENSION_LIST" not in a["d"].attrs


def test_closed(both):
    _, lf, _ = both
    d = lf["data"]
    dims = d.dims
    lf.close()
    assert repr(dims) == "<Dimensions of closed HDF5 dataset>"
    with pytest.raises(ValueError):
        len(dims)
