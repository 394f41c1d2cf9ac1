"""Differential tests: the same operations on h5py (a real HDF5 file) and on
h5lake (a store directory), comparing values (incl. dtype and shape), object
kinds, names, key order and the class of every raised exception.

Each operation is a function of a ``Side`` (``s.lib`` is h5py or h5lake,
``s.f`` the side's main file, ``s.path(name)`` a path in the side's own
directory); ``pair.both(op, raises=...)`` runs it on both and compares.
``raises=None`` means h5py must succeed, a class means h5py must raise it
(so a broken test cannot pass vacuously), ``any`` means "whatever h5py does".
"""

import numpy as np
import pytest

from diffutil import Raised, h5py

pytestmark = pytest.mark.skipif(h5py is None, reason="h5py not installed")


def dump(obj):
    """A library-neutral description of a group tree / dataset, in iteration order."""
    out = []

    def attrs(o):
        return {k: o.attrs[k] for k in o.attrs}

    def rec(g):
        for name, child in g.items():
            if child is None:
                out.append((name, "dangling"))
            elif hasattr(child, "shape"):
                out.append((child.name, "dataset", child.dtype, child.shape,
                            child[()], child.chunks, child.compression,
                            child.maxshape, attrs(child)))
            else:
                out.append((child.name, "group", attrs(child)))
                rec(child)

    if hasattr(obj, "shape"):
        return (obj.name, obj.dtype, obj.shape, obj[()], attrs(obj))
    out.append((obj.name, "group", attrs(obj)))
    rec(obj)
    return out


def props(d):
    return dict(shape=d.shape, dtype=d.dtype, size=d.size, ndim=d.ndim, nbytes=d.nbytes,
                chunks=d.chunks, compression=d.compression,
                compression_opts=d.compression_opts, shuffle=d.shuffle,
                fletcher32=d.fletcher32, maxshape=d.maxshape, fillvalue=d.fillvalue)


# ===========================================================================
# files
# ===========================================================================

def test_open_missing(pair):
    pair.both(lambda s: s.lib.File(s.path("missing"), "r"), raises=FileNotFoundError)
    pair.both(lambda s: s.lib.File(s.path("missing"), "r+"), raises=FileNotFoundError)


def test_file_modes(pair):
    b = pair.both

    def create(s):
        with s.lib.File(s.path("m"), "w-") as f:
            f["d"] = np.arange(3)
            f.attrs["a"] = 1
            return f.mode, f.filename == s.path("m"), bool(f)
    b(create)
    b(lambda s: s.lib.File(s.path("m"), "w-"), raises=FileExistsError)
    b(lambda s: s.lib.File(s.path("m"), "x"), raises=FileExistsError)

    def read(s):
        with s.lib.File(s.path("m"), "r") as f:
            return f.mode, list(f), f["d"][()], f.attrs["a"]
    b(read)

    def ro_create_group(s):
        with s.lib.File(s.path("m"), "r") as f:
            f.create_group("g")
    b(ro_create_group, raises=Exception)

    def ro_write_data(s):
        with s.lib.File(s.path("m"), "r") as f:
            f["d"][0] = 5
    b(ro_write_data, raises=Exception)

    def ro_set_attr(s):
        with s.lib.File(s.path("m"), "r") as f:
            f.attrs["b"] = 2
    b(ro_set_attr, raises=Exception)

    def rplus(s):
        with s.lib.File(s.path("m"), "r+") as f:
            f["d"][0] = 10
            f.create_group("g")
            mode = f.mode
        with s.lib.File(s.path("m"), "r") as f:
            return mode, list(f), f["d"][()]
    b(rplus)

    def append_existing(s):
        with s.lib.File(s.path("m"), "a") as f:
            f["e"] = [1.5]
            mode = f.mode
        with s.lib.File(s.path("m"), "r") as f:
            return mode, list(f), f["d"][()], f["e"][()]
    b(append_existing)

    def append_missing(s):
        with s.lib.File(s.path("new"), "a") as f:
            f["x"] = 1
            mode = f.mode
        with s.lib.File(s.path("new"), "r") as f:
            return mode, list(f), f["x"][()]
    b(append_missing)

    def truncate(s):
        with s.lib.File(s.path("m"), "w") as f:
            first = list(f), list(f.attrs)
            f["z"] = np.zeros(2)
        with s.lib.File(s.path("m")) as f:  # default mode 'r'
            return first, list(f), f.mode
    b(truncate)

    def x_new(s):
        with s.lib.File(s.path("xx"), "x") as f:
            return f.mode, len(f)
    b(x_new)

    b(lambda s: s.lib.File(s.path("m"), "bogus"), raises=ValueError)


def test_close_flush_context(pair):
    b = pair.both

    def op(s):
        f = s.lib.File(s.path("c"), "w")
        d = f.create_dataset("d", data=np.arange(4))
        g = f.create_group("g")
        f.flush()
        alive = bool(f), bool(d), bool(g)
        fname = f.filename == s.path("c")
        f.close()
        f.close()  # closing twice is fine
        return alive, fname, bool(f), bool(d), bool(g)
    b(op)

    def use_closed(s):
        f = s.lib.File(s.path("c2"), "w")
        f["d"] = [1]
        f.close()
        return f["d"]
    b(use_closed, raises=Exception)

    def read_closed_dataset(s):
        f = s.lib.File(s.path("c3"), "w")
        d = f.create_dataset("d", data=[1, 2])
        f.close()
        return d[()]
    b(read_closed_dataset, raises=Exception)

    def ctx(s):
        with s.lib.File(s.path("c4"), "w") as f:
            f["v"] = np.arange(5, dtype="i2")
            f.flush()
            inside = bool(f)
        after = bool(f)
        with s.lib.File(s.path("c4"), "r") as f2:
            return inside, after, f2["v"][()]
    b(ctx)

    def ctx_exception(s):
        try:
            with s.lib.File(s.path("c5"), "w") as f:
                f["v"] = [7]
                raise RuntimeError("boom")
        except RuntimeError:
            pass
        with s.lib.File(s.path("c5"), "r") as f2:
            return bool(f), f2["v"][()]
    b(ctx_exception)


# ===========================================================================
# groups
# ===========================================================================

def test_create_require_group(pair):
    b = pair.both

    def op(s):
        f = s.f
        g = f.create_group("a/b/c")
        return [g.name, "a" in f, "a/b" in f, "a/b/c" in f, "/a/b" in f, "a/x" in f,
                "a/x/y" in f, f.require_group("a/b").name, f["a/b/c"].name,
                f["a"]["b/c"].name, f["a/b"]["c"].name, f["/a/b/c"].name,
                isinstance(g, s.lib.Group), f["a/b"].parent.name, g.file == f]
    b(op)
    b(lambda s: s.f.create_group("a"), raises=ValueError)
    b(lambda s: s.f.create_group("a/b/c"), raises=ValueError)
    b(lambda s: s.f.require_group("a/b/c/d").name)
    b(lambda s: s.f.require_group("new").name)
    b(lambda s: s.f.create_dataset("ds", data=1).name)
    b(lambda s: s.f.require_group("ds"), raises=TypeError)
    b(lambda s: s.f.create_group("ds/x"), raises=Exception)
    b(lambda s: s.f["nope"], raises=KeyError)
    b(lambda s: s.f["a/nope/c"], raises=KeyError)
    b(lambda s: s.f["a"]["/a/b"].name)      # absolute path from a subgroup
    b(lambda s: s.f["a/b"]["."].name)
    b(lambda s: s.f["/"].name)
    b(lambda s: list(s.f["a/b/c"]))


NAMES = ["b", "a", "C", "_z", "10", "9", "aa", "A", "zz", "a b"]


def test_keys_order_len_iteration(pair):
    b = pair.both

    def build(s):
        g = s.f.create_group("g")
        for i, n in enumerate(NAMES):
            if i % 2:
                g.create_group(n)
            else:
                g[n] = np.int32(i)
        return len(g)
    b(build)
    b(lambda s: list(s.f["g"].keys()))
    b(lambda s: list(s.f["g"]))
    b(lambda s: [v.name for v in s.f["g"].values()])
    b(lambda s: [(k, v.name) for k, v in s.f["g"].items()])
    b(lambda s: list(reversed(s.f["g"])))
    b(lambda s: (len(s.f), len(s.f["g"]), len(s.f["g/a"])))
    b(lambda s: sorted(s.f["g"].keys()) == sorted(NAMES))
    b(lambda s: ["a" in s.f["g"], "nope" in s.f["g"], "a b" in s.f["g"], "g/a" in s.f])
    b(lambda s: s.f["g"]["b"][()])


def test_mapping_views(pair):
    """keys/values/items as h5py gives them: shown as a list, reversible,
    a dangling link None among the values; '' is no member."""
    b = pair.both

    def build(s):
        m = s.f.create_group("m")
        for n in ("a", "b", "c"):
            m.create_group(n)
        m["x"] = s.lib.SoftLink("/mongoose")
        m.attrs["p"] = 1
        m.attrs["q"] = 2
    b(build)
    # (Through h5pyd the attributes' view shows an address: not compared.)
    b(lambda s: str(s.f["m"].keys()))
    b(lambda s: list(reversed(s.f["m"].keys())))
    b(lambda s: [None if v is None else v.name for v in s.f["m"].values()])
    b(lambda s: [None if v is None else v.name for v in reversed(s.f["m"].values())])
    b(lambda s: [(k, None if v is None else v.name) for k, v in s.f["m"].items()])
    b(lambda s: [(k, None if v is None else v.name) for k, v in reversed(s.f["m"].items())])
    b(lambda s: (s.f["m/a"] in s.f["m"].values(), None in s.f["m"].values(),
                 ("x", None) in s.f["m"].items(), ("a", s.f["m/a"]) in s.f["m"].items(),
                 ("nope", None) in s.f["m"].items()))
    b(lambda s: (list(s.f["m"].attrs.keys()), list(s.f["m"].attrs.values()),
                 list(s.f["m"].attrs.items()), ("p", 1) in s.f["m"].attrs.items()))
    b(lambda s: ("" in s.f, b"" in s.f, "." in s.f, "/" in s.f))


def test_read_only_deletes_raise_key_error(pair):
    b = pair.both

    def build(s):
        s.f.create_group("g")
        s.f.attrs["a"] = 1
        s.reopen("r")
    b(build)
    b(lambda s: s.f.__delitem__("g"), raises=KeyError)
    b(lambda s: s.f.attrs.__delitem__("a"), raises=KeyError)
    b(lambda s: ("g" in s.f, "a" in s.f.attrs))


def test_anonymous_group(pair):
    b = pair.both

    def op(s):
        g = s.f.create_group(None)
        before = g.name
        g.attrs["k"] = 3
        g.create_group("sub")
        s.f["named"] = g
        return before, g.name, s.f["named"].name, s.f["named"].attrs["k"], list(s.f["named"])
    b(op)
    b(lambda s: s.f.create_group(None).parent, raises=ValueError)

    def dataset(s):
        d = s.f.create_dataset(None, data=np.arange(3))
        before = d.name
        s.f["g/d"] = d
        return before, d.name, d[()]
    b(dataset)


def test_a_number_is_no_compound_fill_value(pair):
    dt = np.dtype([("a", "i4"), ("b", "f4")])
    pair.both(lambda s: s.f.create_dataset("x", (4,), dtype=dt, fillvalue=42), raises=ValueError)
    pair.both(lambda s: "x" in s.f)
    pair.both(lambda s: s.f.create_dataset("y", (2,), dtype=dt, fillvalue=np.array((1, 2.5), dt))[...])


def test_track_order(pair):
    b = pair.both

    def op(s):
        g = s.f.create_group("t", track_order=True)
        for n in ["z", "a", "m", "B", "1"]:
            g.create_group(n)
        g["c"] = 1
        g2 = s.f.create_group("u", track_order=False)
        for n in ["z", "a", "m"]:
            g2.create_group(n)
        return list(g), list(g2)
    b(op)

    def file_order(s):
        with s.lib.File(s.path("to"), "w", track_order=True) as f:
            for n in ["z", "a", "m"]:
                f[n] = 1
            f.attrs["z"] = 1
            f.attrs["a"] = 2
        with s.lib.File(s.path("to"), "r") as f:
            return list(f), list(f.attrs)
    b(file_order)

    def intermediate_groups_track_as_their_parent(s):
        out = []
        for tof in (True, False):
            with s.lib.File(s.path(f"im{tof}"), "w", track_order=tof) as f:
                f.create_group("b/y")
                f.create_group("b/x")
                f.create_group("d/y", track_order=True)
                f.create_group("d/x")
                f.create_dataset("e/y", data=1)
                f.create_dataset("e/x", data=1)
                f["s/y"] = 1
                f["s/x"] = s.lib.SoftLink("/b")
                t = f["t"] if "t" in f else f.create_group("t", track_order=True)
                t.create_group("n/z")
                t["n"].create_group("a")
                out.append((list(f["b"]), list(f["d"]), list(f["e"]), list(f["s"]),
                            list(t["n"])))
        return out
    b(intermediate_groups_track_as_their_parent)

    def reopen(s):
        s.reopen("r")
        return list(s.f["t"]), list(s.f["u"])
    b(reopen)


def test_get(pair):
    b = pair.both

    def build(s):
        f = s.f
        f.create_group("g")
        f["d"] = np.arange(3)
        f["soft"] = s.lib.SoftLink("/g")
        f["dangling"] = s.lib.SoftLink("/missing")
        f["hard"] = f["d"]
        other = s.path("other")
        with s.lib.File(other, "w") as o:
            o["data"] = np.arange(4.0)
        f["ext"] = s.lib.ExternalLink(other, "/data")
    b(build)
    for name in ["g", "d", "soft", "dangling", "hard", "ext", "missing"]:
        b(lambda s: s.f.get(name), where=f"get({name})")
        b(lambda s: s.f.get(name, "dflt"), where=f"get({name}, dflt)")
        b(lambda s: s.f.get(name, getclass=True), raises=any, where=f"getclass({name})")
        b(lambda s: s.f.get(name, getlink=True), where=f"getlink({name})")
        b(lambda s: s.f.get(name, getclass=True, getlink=True), where=f"getclass+link({name})")
    b(lambda s: s.f.get("g/nope/x"))
    for name in ["/", "."]:
        b(lambda s: s.f.get(name, getlink=True), raises=RuntimeError, where=f"getlink({name})")
        b(lambda s: s.f["g"].get(name, getlink=True), raises=RuntimeError, where=f"getlink({name})")
    b(lambda s: s.f[""], raises=KeyError)
    b(lambda s: s.f.get(""))


def test_delete(pair):
    b = pair.both

    def build(s):
        s.f.create_group("a/b/c")
        s.f["a/d"] = [1, 2]
        s.f["x"] = 1
        del s.f["a/b"]
        del s.f["x"]
        return list(s.f), list(s.f["a"]), "a/b" in s.f, "a/b/c" in s.f
    b(build)
    b(lambda s: s.f.__delitem__("x"), raises=KeyError)
    b(lambda s: s.f.__delitem__("a/nope/z"), raises=KeyError)
    b(lambda s: s.f["a/b"], raises=KeyError)

    def recreate(s):
        s.f.create_group("a/b")
        s.f["x"] = [3.0]
        return list(s.f["a/b"]), s.f["x"][()]
    b(recreate)

    def delete_one_hard_link(s):
        s.f["y"] = s.f["x"]
        del s.f["x"]
        return s.f["y"][()], "x" in s.f
    b(delete_one_hard_link)


def test_move(pair):
    b = pair.both

    def build(s):
        s.f.create_group("a/b")
        s.f["a/b/d"] = np.arange(3)
        s.f["a/b"].attrs["k"] = "v"
        s.f.create_group("z")
        s.f.move("a/b", "z/b2")
        return dump(s.f)
    b(build)
    b(lambda s: s.f.move("nope", "q"), raises=Exception)
    b(lambda s: s.f.move("z/b2", "z"), raises=Exception)   # destination exists

    def rename_dataset(s):
        s.f.move("z/b2/d", "top")
        g = s.f["z"]
        g.move("b2", "b3")                             # relative to the group
        return dump(s.f)
    b(rename_dataset)
    b(lambda s: s.f.move("top", "missing_parent/x"), raises=any)

    def handles_follow_their_objects(s):
        # (libhdf5 renames the handles of the object moved; those of its
        # members keep their old path there, which h5lake renames too:
        # test_api_smoke.)
        s.f["h/i/d"] = np.arange(2)
        g, top = s.f["h/i"], s.f["h"]
        s.f.move("h/i", "moved")
        s.f.move("h", "hh")
        return g.name, top.name, g.parent.name
    b(handles_follow_their_objects)


def test_copy_within_file(pair):
    b = pair.both

    def build(s):
        f = s.f
        d = f.create_dataset("src/d", data=np.arange(12.0).reshape(3, 4), chunks=(2, 2),
                             compression="gzip")
        d.attrs["units"] = "m"
        d.attrs["scale"] = np.array([1, 2])
        f["src/sub/e"] = np.array([b"ab", b"c"])
        f["src/sub"].attrs["n"] = 5
        f["src"].attrs["top"] = 1.5
        f.create_group("dst")
        f.copy("src/d", "d_copy")
        f.copy(f["src/d"], f["dst"])           # into a group, same name
        f.copy("src", "src_copy")              # recursive
        f.copy(f["src"], f["dst"], name="renamed")
        return dump(f)
    b(build)
    b(lambda s: s.f.copy("src/d", "d_copy"), raises=Exception)  # exists
    b(lambda s: s.f.copy("nope", "x"), raises=Exception)   # h5py: RuntimeError

    def independent(s):
        s.f["d_copy"][0, 0] = -1
        s.f["d_copy"].attrs["units"] = "km"
        return s.f["src/d"][0, 0], s.f["src/d"].attrs["units"], s.f["d_copy"][0, 0]
    b(independent)

    def shallow(s):
        s.f.copy("src", "shallow", shallow=True)
        return dump(s.f["shallow"]), list(s.f["shallow/sub"])
    b(shallow)

    def without_attrs(s):
        s.f.copy("src", "noattrs", without_attrs=True)
        return dump(s.f["noattrs"])
    b(without_attrs)


def test_copy_between_files(pair):
    b = pair.both

    def op(s):
        f = s.f
        f.create_dataset("g/d", data=np.arange(6, dtype="i2"), maxshape=(None,), chunks=(4,),
                         fillvalue=-7)
        f["g/d"].attrs["a"] = [1.0, 2.0]
        f["g/h/s"] = s.lib.SoftLink("/g/d")
        f["g/h"].attrs["x"] = "y"
        with s.lib.File(s.path("second"), "w") as f2:
            f.copy(f["g"], f2)
            f.copy("g/d", f2, name="dd")
            f2.create_group("into")
            f.copy(f["g/h"], f2["into"])
            f2["dd"].resize((8,))
            return dump(f2), f2["g/h"].get("s", getlink=True), f2["dd"].fillvalue
    b(op)

    def reverse(s):
        with s.lib.File(s.path("second"), "r") as f2:
            f2.copy("g", s.f, name="back")
            f2.copy(f2["dd"], s.f["back"])
        return dump(s.f["back"])
    b(reverse)


def test_visit(pair):
    b = pair.both

    def build(s):
        f = s.f
        f.create_group("b/y")
        f.create_group("a/x/deep")
        f["a/x/deep/d"] = 1
        f["b/c"] = [1, 2]
        f["a/z"] = np.zeros(2)
        f["sl"] = s.lib.SoftLink("/a")
    b(build)

    def visit_names(s):
        names = []
        assert s.f.visit(names.append) is None
        return names
    b(visit_names)

    def visititems(s):
        out = []
        s.f.visititems(lambda n, o: out.append((n, o)))
        return out
    b(visititems)

    def subgroup(s):
        out = []
        s.f["a"].visititems(lambda n, o: out.append((n, o.name)))
        return out
    b(subgroup)

    def stop_early(s):
        seen = []

        def fn(name):
            seen.append(name)
            if name == "a/x":
                return "found " + name
        return s.f.visit(fn), seen
    b(stop_early)

    def stop_early_items(s):
        return s.f.visititems(lambda n, o: n if hasattr(o, "shape") else None)
    b(stop_early_items)


def test_visit_links(pair):
    b = pair.both

    def build(s):
        s.f.create_group("g/h")
        s.f["g/d"] = 1
        s.f["g/sl"] = s.lib.SoftLink("/g/h")
        out = []
        s.f.visit_links(out.append)
        items = []
        s.f.visititems_links(lambda n, l: items.append((n, l)))
        return out, items
    b(build)


def test_visit_hard_link_alias(pair):
    """HDF5 visits each object once: a second hard link to a visited object is skipped."""
    def op(s):
        s.f.create_group("a")
        s.f["a/d"] = [1]
        s.f["b"] = s.f["a/d"]
        s.f["c"] = s.f["a"]
        names = []
        s.f.visit(names.append)
        return names
    pair.both(op)


def test_hard_links(pair):
    b = pair.both

    def op(s):
        f = s.f
        f["y"] = np.arange(4)
        f["x"] = f["y"]
        f.create_group("g")
        f["g2"] = f["g"]
        f["x"][0] = 100
        f["y"].attrs["a"] = 1
        f["g2"]["child"] = 3.0
        return (f["y"][()], dict(f["x"].attrs), list(f["g"]), f["x"] == f["y"],
                f["g"] == f["g2"], f["x"] == f["g"], f["x"].name, f["g2/child"].name)
    b(op)
    b(lambda s: s.f.__setitem__("x", s.f["y"]), raises=Exception)   # name exists

    def reopened(s):
        s.reopen("r+")
        return s.f["x"][()], s.f["g/child"][()]
    b(reopened)


def test_soft_links(pair):
    b = pair.both

    def op(s):
        f = s.f
        f.create_group("a/b")
        f["a/b/d"] = np.arange(3)
        f["abs"] = s.lib.SoftLink("/a/b")
        f["a/rel"] = s.lib.SoftLink("b/d")
        f["chain"] = s.lib.SoftLink("/abs")
        f["dangling"] = s.lib.SoftLink("/nothing/here")
        return (f["abs"].name, f["abs/d"][()], f["a/rel"][()], f["chain/d"][()],
                "dangling" in f, "abs" in f, list(f), f.get("dangling"),
                f.get("abs", getlink=True).path, f["abs"] == f["a/b"])
    b(op)
    b(lambda s: s.f["dangling"], raises=KeyError)
    b(lambda s: s.f["dangling/x"], raises=KeyError)

    def fix_dangling(s):
        s.f.create_group("nothing/here")
        s.f["nothing/here"].attrs["ok"] = True
        return s.f["dangling"].attrs["ok"], "dangling" in s.f
    b(fix_dangling)

    def delete_link_not_target(s):
        del s.f["abs"]
        return list(s.f["a/b"]), "abs" in s.f
    b(delete_link_not_target)

    # a loop of links is an error, not an absent member (get gave None)
    b(lambda s: s.f.__setitem__("loop", s.lib.SoftLink("/loop")))
    b(lambda s: s.f.get("loop"), raises=RuntimeError)
    b(lambda s: list(s.f.values()), raises=RuntimeError)
    b(lambda s: s.f.get("loop", getlink=True).path)


def test_external_links(pair):
    b = pair.both

    def op(s):
        other = s.path("other")
        with s.lib.File(other, "w") as o:
            o.create_group("grp/sub")
            o["data"] = np.arange(5.0)
            o["data"].attrs["u"] = "s"
        f = s.f
        f["ext"] = s.lib.ExternalLink(other, "/data")
        f["extg"] = s.lib.ExternalLink(other, "/grp")
        f["missing_obj"] = s.lib.ExternalLink(other, "/nope")
        f["missing_file"] = s.lib.ExternalLink(s.path("nofile"), "/data")
        lk = f.get("ext", getlink=True)
        return (f["ext"][()], f["ext"].attrs["u"], list(f["extg"]), f["extg/sub"].name,
                lk.path, lk.filename == other, "ext" in f, "missing_obj" in f,
                "missing_file" in f, f.get("missing_file", getclass=True, getlink=True))
    b(op)
    b(lambda s: s.f["missing_obj"], raises=KeyError)
    b(lambda s: s.f["missing_file"], raises=KeyError)
    b(lambda s: s.f.get("missing_file"))


# ===========================================================================
# datasets: creation and properties
# ===========================================================================

CREATE_CASES = {
    "contiguous": dict(shape=(4, 5), dtype="f4"),
    "data_only": dict(data=np.arange(20, dtype="i2").reshape(4, 5)),
    "chunks_tuple": dict(shape=(10, 7), dtype="i4", chunks=(3, 4)),
    "chunks_true": dict(shape=(100, 60), dtype="f8", chunks=True),
    "chunks_none": dict(shape=(10,), dtype="u1", chunks=None),
    "maxshape_none": dict(shape=(5, 3), dtype="i8", maxshape=(None, 3), chunks=(2, 3)),
    "maxshape_fixed": dict(shape=(5,), dtype="i8", maxshape=(9,), chunks=(2,)),
    "maxshape_auto_chunks": dict(shape=(50, 4), dtype="f4", maxshape=(None, None)),
    "gzip": dict(data=np.arange(1000.0).reshape(25, 40), compression="gzip", chunks=(5, 8)),
    "gzip_level": dict(data=np.arange(1000).reshape(25, 40), compression="gzip",
                       compression_opts=9, chunks=(10, 10)),
    "gzip_int_level": dict(data=np.arange(100), compression=4, chunks=(10,)),
    "gzip_auto_chunks": dict(data=np.arange(300).reshape(30, 10), compression="gzip"),
    "shuffle": dict(data=np.arange(100, dtype="i4"), shuffle=True, chunks=(30,)),
    "shuffle_gzip": dict(data=np.arange(100, dtype="i4"), shuffle=True, compression="gzip",
                         compression_opts=1, chunks=(30,)),
    "fletcher32": dict(data=np.arange(64, dtype="u2"), fletcher32=True, chunks=(16,)),
    "lzf": dict(data=np.arange(1000.0).reshape(25, 40), compression="lzf", chunks=(5, 8)),
    "shuffle_lzf": dict(data=np.arange(300, dtype="i4") // 7, compression="lzf", shuffle=True,
                        chunks=(64,)),
    # lzf after a filter that shrinks the chunk, and over variable-length
    # values: chunks were written that could not be read back
    "scaleoffset_lzf": dict(data=np.arange(100, dtype="i4"), scaleoffset=0, compression="lzf",
                            chunks=(100,)),
    "scaleoffset_shuffle_lzf": dict(data=np.arange(3000, dtype="u8") % 9, scaleoffset=0,
                                    compression="lzf", shuffle=True, chunks=(512,)),
    "vlen_lzf": dict(data=np.array([b"ab", b"cde"] * 5, dtype=object), chunks=(4,),
                     dtype=h5py.string_dtype("ascii"), compression="lzf"),
    "vlen_str_gzip_shuffle": dict(data=np.array(["x\u00e9", "", "long" * 30] * 7, dtype=object),
                                  dtype=h5py.string_dtype(), chunks=(5,), compression="gzip",
                                  shuffle=True),
    "all_filters": dict(data=np.arange(64, dtype="f4"), fletcher32=True, shuffle=True,
                        compression="gzip", chunks=(10,)),
    "scaleoffset_int": dict(data=np.arange(-300, 900, dtype="i4").reshape(30, 40) * 3,
                            scaleoffset=True, chunks=(7, 9)),
    "scaleoffset_int_fill": dict(data=np.repeat(np.arange(50, dtype="u2"), 4), scaleoffset=0,
                                 fillvalue=9, chunks=(33,)),
    "scaleoffset_shuffle_gzip": dict(data=np.arange(4000, dtype="i8") % 77, scaleoffset=True,
                                     shuffle=True, compression="gzip", chunks=(512,)),
    "szip": dict(data=np.arange(1000, dtype="i2").reshape(25, 40), compression="szip",
                 chunks=(5, 8)),
    "szip_ec_32": dict(data=np.arange(3000, dtype=">f4") / 7, compression="szip",
                       compression_opts=("ec", 16), chunks=(500,)),
    "szip_64_fletcher32": dict(data=np.arange(2500, dtype="f8") ** 2, compression="szip",
                               fletcher32=True, chunks=(50, 50), shape=(50, 50)),
    "fillvalue_int": dict(shape=(6,), dtype="i4", fillvalue=42),
    "fillvalue_float_chunked": dict(shape=(3, 3), dtype="f4", fillvalue=-1.5, chunks=(2, 2)),
    "fillvalue_nan": dict(shape=(3,), dtype="f8", fillvalue=np.nan, chunks=(2,)),
    "fillvalue_vlen_str": dict(shape=(4,), dtype=h5py.string_dtype(), fillvalue="b\u00e1r", chunks=(2,)),
    "fillvalue_vlen_bytes": dict(shape=(3,), dtype=h5py.string_dtype("ascii"), fillvalue=b"bar"),
    "fillvalue_vlen_seq_default": dict(shape=(3,), dtype=h5py.vlen_dtype("i4"), chunks=(2,)),
    # h5py's default fill of variable-length members, nested ones too: None
    "fillvalue_compound_objects": dict(shape=(3,), dtype=np.dtype(
        [("a", "i4"), ("s", h5py.string_dtype()), ("n", [("t", h5py.string_dtype())])])),
    "fill_time_never": dict(shape=(4,), dtype="f4", fillvalue=4.0, fill_time="never", chunks=(2,)),
    "fill_time_alloc": dict(shape=(4,), dtype="i2", fillvalue=3, fill_time="alloc"),
    "scalar_shape": dict(shape=(), dtype="i4"),
    "long_double": dict(data=np.arange(10, dtype=np.longdouble) / 3, chunks=(4,),
                        fillvalue=np.longdouble(1) / 3, maxshape=(None,)),
    "complex_long_double": dict(data=(np.arange(4) + 1j / 3).astype(np.clongdouble)),
    "scalar_data": dict(data=np.float32(2.5)),
    "empty_extent": dict(shape=(0,), dtype="f4", maxshape=(None,)),
    "zero_dim2": dict(shape=(3, 0), dtype="i2"),
    "list_data": dict(data=[[1, 2], [3, 4]]),
    "data_and_dtype": dict(data=np.arange(5), dtype="f4"),
    "data_shape_reshape": dict(data=np.arange(6), shape=(2, 3)),
    "int_shape": dict(shape=5, dtype="i1"),
    "default_dtype": dict(shape=(2,)),
    "lzf_like_none_compression": dict(shape=(4,), dtype="i4", compression=None),
}


@pytest.mark.parametrize("case", sorted(CREATE_CASES))
def test_create_dataset(pair, case):
    kw = CREATE_CASES[case]

    def op(s):
        d = s.f.create_dataset("d", **kw)
        return props(d), d[()], isinstance(d, s.lib.Dataset), d.name
    pair.both(op)

    def reopened(s):
        s.reopen("r")
        d = s.f["d"]
        return props(d), d[()]
    pair.both(reopened)


LOSSY_CASES = {
    "float_dscale": dict(data=(np.random.default_rng(5).random((40, 50)) - 0.5) * 1e4,
                         scaleoffset=3, chunks=(16, 16)),
    "float32_be": dict(data=np.linspace(-2, 2, 700, dtype=">f4"), scaleoffset=2, chunks=(64,)),
    "int_minbits": dict(data=np.random.default_rng(6).integers(0, 2 ** 12, 900), scaleoffset=10,
                        chunks=(300,)),
}


@pytest.mark.parametrize("case", sorted(LOSSY_CASES))
def test_lossy_scaleoffset(pair, case):
    """Scale-offset loses what HDF5 loses: the values read back after
    reopening (h5py shows the exact ones from its chunk cache until then)
    are the very ones libhdf5 gives."""
    def op(s):
        s.f.create_dataset("d", **LOSSY_CASES[case])
        s.reopen("r")
        d = s.f["d"]
        return props(d), d[()]
    pair.both(op)


BAD_CREATE = {
    "no_shape_no_data": (dict(dtype="i4"), any),   # h5py: a null dataspace
    "shape_mismatch": (dict(shape=(3,), data=np.arange(4)), ValueError),
    "chunks_too_big_for_maxshape": (dict(shape=(4,), dtype="i4", chunks=(8,), maxshape=(4,)), ValueError),
    "chunks_rank": (dict(shape=(4, 4), dtype="i4", chunks=(2,)), ValueError),
    "maxshape_smaller": (dict(shape=(4,), dtype="i4", maxshape=(2,)), ValueError),
    "maxshape_rank": (dict(shape=(4,), dtype="i4", maxshape=(4, 4)), ValueError),
    "bad_compression": (dict(shape=(4,), dtype="i4", compression="nosuch"), ValueError),
    "gzip_level_range": (dict(shape=(4,), dtype="i4", compression="gzip", compression_opts=10), ValueError),
    "lzf_options": (dict(shape=(4,), dtype="i4", compression="lzf", compression_opts=2), ValueError),
    "scalar_chunks": (dict(shape=(), dtype="i4", chunks=(1,)), TypeError),
    "scaleoffset_float_true": (dict(shape=(4,), dtype="f8", scaleoffset=True), ValueError),
    "scaleoffset_negative": (dict(shape=(4,), dtype="f8", scaleoffset=-0.1), ValueError),
    "scaleoffset_bool": (dict(shape=(4,), dtype=bool, scaleoffset=True), TypeError),
    "scaleoffset_fletcher32": (dict(shape=(4,), dtype="i4", scaleoffset=True, fletcher32=True),
                               ValueError),
    "fletcher32_vlen_str": (dict(shape=(3,), dtype=h5py.string_dtype(), chunks=(2,),
                                 fletcher32=True), ValueError),
    "fletcher32_vlen_seq": (dict(shape=(3,), dtype=h5py.vlen_dtype("i4"), fletcher32=True,
                                 compression="gzip"), ValueError),
    "szip_odd_pixels": (dict(shape=(40,), dtype="i4", compression="szip",
                             compression_opts=("nn", 7)), ValueError),
    "scalar_compression": (dict(data=1, compression="gzip"), TypeError),
    "bad_dtype": (dict(shape=(2,), dtype="not-a-dtype"), TypeError),
    "bad_fill_time": (dict(shape=(2,), dtype="f4", fill_time="sometimes"), ValueError),
    "fill_time_not_str": (dict(shape=(2,), dtype="f4", fill_time=2), ValueError),
}


@pytest.mark.parametrize("case", sorted(BAD_CREATE))
def test_create_dataset_errors(pair, case):
    kw, exc = BAD_CREATE[case]
    pair.both(lambda s: s.f.create_dataset("d", **kw), raises=exc)
    pair.both(lambda s: "d" in s.f)


def test_create_dataset_name_exists(pair):
    pair.both(lambda s: s.f.create_dataset("d", (2,)).shape)
    pair.both(lambda s: s.f.create_dataset("d", (2,)), raises=ValueError)
    pair.both(lambda s: s.f.create_group("d"), raises=ValueError)
    pair.both(lambda s: s.f.__setitem__("d", [1]), raises=Exception)
    pair.both(lambda s: s.f.create_dataset("g/h/d", data=[1]).name)   # intermediates
    # a name ending in "/" names nothing (h5lake made the dataset "c")
    pair.both(lambda s: s.f.create_dataset("c/", (3,), "i4"), raises=ValueError)
    pair.both(lambda s: s.f.require_dataset("c2/", (3,), "i4"), raises=ValueError)


@pytest.mark.parametrize("codec", ["zstd", "lz4", "blosc"])
def test_plugin_codecs_values(pair, codec):
    """No h5py equivalent without hdf5plugin: compare values with an uncompressed h5py dataset."""
    data = (np.arange(2000, dtype="i4").reshape(40, 50) * 7) % 97

    def op(s):
        if s.lib is h5py:
            d = s.f.create_dataset("d", data=data, chunks=(16, 16))
        else:
            d = s.f.create_dataset("d", data=data, chunks=(16, 16), compression=codec)
            assert d.compression == codec
        d[3:7, 10:30] = -5
        return d[()], d[::3, 5], d.shape, d.dtype, d.chunks
    pair.both(op)

    def reopened(s):
        s.reopen("r")
        return s.f["d"][()]
    pair.both(reopened)


def test_setitem_creates_dataset(pair):
    b = pair.both
    cases = {
        "arr": np.arange(6, dtype="u2").reshape(2, 3),
        "lst": [1, 2, 3],
        "lstf": [1.0, 2.5],
        "int": 7,
        "float": 3.0,
        "bool": True,
        "np_scalar": np.int8(-4),
        "str": "hello",
        "bytes": b"raw",
        "strlist": ["a", "bcd"],
        "nested": [[1, 2], [3, 4]],
    }
    for name, v in cases.items():
        def op(s, name=name, v=v):
            s.f[name] = v
            d = s.f[name]
            return d.dtype, d.shape, d[()], d.chunks, s.lib.check_string_dtype(d.dtype)
        b(op, where=name)


def test_require_dataset(pair):
    b = pair.both
    b(lambda s: s.f.create_dataset("d", (3, 4), "i4", data=np.ones((3, 4))).shape)
    b(lambda s: s.f.require_dataset("d", (3, 4), "i4")[()])
    b(lambda s: s.f.require_dataset("d", (3, 4), "i2").dtype)             # castable
    b(lambda s: s.f.require_dataset("d", (3, 4), "i8"), raises=TypeError)   # not castable
    b(lambda s: s.f.require_dataset("d", (3, 4), "f8"), raises=TypeError)
    b(lambda s: s.f.require_dataset("d", (3, 4), "i2", exact=True), raises=TypeError)
    b(lambda s: s.f.require_dataset("d", (3, 4), "i4", exact=True).dtype)
    b(lambda s: s.f.require_dataset("d", (4, 3), "i4"), raises=TypeError)
    b(lambda s: s.f.require_dataset("d", (12,), "i4"), raises=TypeError)
    b(lambda s: s.f.create_group("g").name)
    b(lambda s: s.f.require_dataset("g", (3, 4), "i4"), raises=TypeError)

    def creates(s):
        d = s.f.require_dataset("new", (5,), "f4", fillvalue=2, chunks=(2,))
        return props(d), d[()]
    b(creates)

    def maxshape(s):
        s.f.create_dataset("m", (2,), "i4", maxshape=(None,))
        s.f["m"].resize((6,))
        return s.f.require_dataset("m", (6,), "i4").shape, s.f.require_dataset("m", (6,), "i4", maxshape=(None,)).shape
    b(maxshape)


def test_create_dataset_like(pair):
    b = pair.both

    def op(s):
        src = s.f.create_dataset("src", data=np.arange(20.0).reshape(4, 5), chunks=(2, 5),
                                 maxshape=(None, 5), compression="gzip", compression_opts=3,
                                 shuffle=True, fillvalue=-9.0)
        src.attrs["a"] = 1
        like = s.f.create_dataset_like("like", src)
        like2 = s.f.create_dataset_like("like2", src, shape=(2, 5), dtype="f4")
        plain = s.f.create_dataset("plain", data=np.arange(3, dtype="u1"))
        like3 = s.f.create_dataset_like("like3", plain)
        return (props(like), like[()], list(like.attrs), props(like2), like2[()],
                props(like3), like3[()])
    b(op)


def test_resize(pair):
    b = pair.both

    def build(s):
        s.f.create_dataset("c", data=np.arange(4))
        d = s.f.create_dataset("r", data=np.arange(12, dtype="i4").reshape(3, 4), chunks=(2, 3),
                               maxshape=(None, 6), fillvalue=-1)
        d.resize((5, 6))
        return d.shape, d[()]
    b(build)
    b(lambda s: s.f["c"].resize((8,)), raises=TypeError)
    b(lambda s: s.f["r"].resize((5, 7)), raises=Exception)     # beyond maxshape: h5py RuntimeError
    b(lambda s: s.f["r"].resize((5,)), raises=Exception)          # wrong rank
    b(lambda s: s.f["r"].resize(4, axis=2), raises=ValueError)     # bad axis

    def shrink_grow(s):
        d = s.f["r"]
        d[...] = 7
        d.resize((1, 2))
        mid = d[()]
        d.resize(4, axis=0)
        d.resize(5, axis=1)
        return mid, d[()], d.shape, len(d)
    b(shrink_grow)

    def to_zero_and_back(s):
        d = s.f.create_dataset("z", data=np.arange(5.0), maxshape=(None,), chunks=(2,),
                               fillvalue=0.5)
        d.resize((0,))
        empty = d[()]
        d.resize((3,))
        return empty, d[()]
    b(to_zero_and_back)

    def reopened(s):
        s.reopen("r")
        return s.f["r"][()], s.f["r"].shape, s.f["z"][()]
    b(reopened)


@pytest.mark.parametrize("layout", [None, "columnar"])
def test_shrink_and_grow_variable_length_elements(pair, layout):
    """Elements cut off by a shrink read as the fill value when the dataset
    grows again, for variable-length strings and compounds holding them."""
    extra = {} if layout is None else {"layout": layout}

    def run(s):
        out = []
        if layout is None:
            d = s.f.create_dataset("s", shape=(5,), maxshape=(None,), chunks=(2,),
                                   dtype=s.lib.string_dtype())
            d[...] = ["a", "b", "c", "d", "e"]
            d.resize((3,))
            d.resize((5,))
            out.append(d[...])
        dt = np.dtype([("x", "f4"), ("v", s.lib.string_dtype())])
        for shape, chunks in (((5,), (2,)), ((4, 4), (2, 2))):
            name = "c%d" % len(shape)
            c = s.f.create_dataset(name, shape=shape, maxshape=(None,) * len(shape),
                                   chunks=chunks, dtype=dt, **(extra if s.lib is not h5py else {}))
            whole = np.empty(shape, dt)
            whole["x"] = np.arange(np.prod(shape), dtype="f4").reshape(shape) + 1
            whole["v"] = np.full(shape, "t", dtype=object)
            c[...] = whole
            c.resize(tuple(n - 1 for n in shape))
            c.resize(shape)
            out.append((c["x"], [v for v in c["v"].ravel()]))
        return out
    pair.both(run)


def test_len_and_array(pair):
    b = pair.both

    def build(s):
        s.f["scalar"] = 5
        s.f["v"] = np.arange(7.0)
        s.f["m"] = np.arange(12).reshape(3, 4)
        s.f.create_dataset("big", (2**20, 2), "u1")
    b(build)
    b(lambda s: len(s.f["scalar"]), raises=TypeError)
    b(lambda s: (len(s.f["v"]), len(s.f["m"]), s.f["big"].len(), len(s.f["big"])))
    b(lambda s: (np.asarray(s.f["v"]), np.asarray(s.f["m"]), np.asarray(s.f["scalar"])))
    b(lambda s: np.asarray(s.f["m"], dtype="f4"))
    b(lambda s: np.array(s.f["m"]) + 1)
    b(lambda s: [row for row in s.f["m"]])
    b(lambda s: list(s.f["scalar"]), raises=TypeError)


def test_read_direct_write_direct(pair):
    b = pair.both

    def op(s):
        d = s.f.create_dataset("d", data=np.arange(24, dtype="f8").reshape(4, 6), chunks=(3, 3))
        dest = np.full((5, 5), -1.0)
        d.read_direct(dest, np.s_[1:3, 2:5], np.s_[0:2, 1:4])
        full = np.zeros((4, 6))
        d.read_direct(full)
        src = np.arange(100.0, 110.0).reshape(2, 5)
        d.write_direct(src, np.s_[0, 1:4], np.s_[3, 0:3])
        d.write_direct(np.full((4, 6), 2.0), np.s_[0:1, :], np.s_[0:1, :])
        return dest, full, d[()]
    b(op)

    def runs_inside_a_larger_buffer(s):
        # slab after slab into one buffer, as BD-CATS reads: each
        # destination is one gap-free run in the middle of it
        d = s.f["d"]
        rows = np.full((7, 6), -1.0)
        d.read_direct(rows, np.s_[1:3], np.s_[4:6])
        flat = np.full(40, -1.0)
        d.read_direct(flat, np.s_[2, :], np.s_[9:15])
        rec = np.dtype([("a", "<i4"), ("b", "<f8")])
        c = s.f.create_dataset("c", data=np.array([(i, i / 2) for i in range(9)], dtype=rec),
                               chunks=(4,))
        table = np.zeros(12, dtype=rec)
        c.read_direct(table, np.s_[3:8], np.s_[6:11])
        return rows, flat, table
    b(runs_inside_a_larger_buffer)

    def variable_length_into_one_element(s):
        # (h5lake stored a 0-d array in the object slot)
        out = []
        for dt, v in ((s.lib.string_dtype(), "abc"), (s.lib.string_dtype("ascii"), b"xy"),
                      (s.lib.vlen_dtype("i4"), np.arange(3, dtype="i4"))):
            one = np.empty((), dtype=object)
            one[()] = v
            d = s.f.create_dataset(f"v{len(out)}", data=one, dtype=dt)
            dest = np.zeros((), dtype=d.dtype)
            d.read_direct(dest)
            many = s.f.create_dataset(f"m{len(out)}", shape=(5,), dtype=dt)
            many[3] = v
            dest2 = np.zeros((), dtype=d.dtype)
            many.read_direct(dest2, np.s_[-2])
            out.append((type(dest[()]).__name__, type(dest2[()]).__name__,
                        str(dest[()]), str(dest2[()])))
        return out
    b(variable_length_into_one_element)

    def wrong_dtype_dest(s):
        dest = np.zeros((4, 6), dtype="i4")
        s.f["d"].read_direct(dest)
        return dest
    b(wrong_dtype_dest)

    def bad_shapes(s):
        dest = np.zeros((2, 2))
        s.f["d"].read_direct(dest, np.s_[0:3, 0:3])
    b(bad_shapes, raises=Exception)

    def non_contiguous(s):
        dest = np.zeros((6, 4)).T
        s.f["d"].read_direct(dest)
    b(non_contiguous, raises=TypeError)


def test_iter_chunks(pair):
    b = pair.both

    def build(s):
        s.f.create_dataset("d", data=np.arange(70).reshape(7, 10), chunks=(3, 4))
        s.f.create_dataset("c", data=np.arange(5))
    b(build)
    b(lambda s: list(s.f["d"].iter_chunks()))
    b(lambda s: list(s.f["d"].iter_chunks(np.s_[1:6, 3:9])))
    b(lambda s: [s.f["d"][sl] for sl in s.f["d"].iter_chunks(np.s_[2:5, :])])
    b(lambda s: list(s.f["c"].iter_chunks()), raises=TypeError)


def test_astype_fields_asstr(pair):
    b = pair.both
    ct = np.dtype([("x", "<f4"), ("y", "<i2"), ("z", "S3")])

    def build(s):
        s.f["i"] = np.arange(6, dtype="i4").reshape(2, 3)
        a = np.zeros(4, ct)
        a["x"] = [1.5, 2.5, 3.5, 4.5]
        a["y"] = [1, -2, 3, -4]
        a["z"] = [b"a", b"bb", b"ccc", b""]
        s.f["c"] = a
        s.f.create_dataset("vs", data=["alpha", "béta", ""], dtype=s.lib.string_dtype())
        s.f.create_dataset("fs", data=np.array([b"ab", b"cde"], dtype="S4"))
        s.f.create_dataset("vb", data=[b"x", b"yz"], dtype=s.lib.string_dtype("ascii"))
    b(build)
    b(lambda s: s.f["i"].astype("f8")[()])
    b(lambda s: s.f["i"].astype("i1")[1, 1:])
    b(lambda s: s.f["i"].astype("f4")[0])
    b(lambda s: np.asarray(s.f["i"].astype("u2")))
    b(lambda s: (s.f["i"].astype("f4").dtype, len(s.f["i"].astype("f4"))))
    b(lambda s: s.f["c"].fields("x")[()])
    b(lambda s: s.f["c"].fields(["y", "x"])[1:3])
    b(lambda s: s.f["c"].fields(["z"])[()])
    b(lambda s: s.f["c"]["y"])
    b(lambda s: s.f["c"][1:3, "x"])
    b(lambda s: s.f["c"]["x", 2])
    b(lambda s: s.f["c"].fields("nope")[()], raises=Exception)
    b(lambda s: s.f["vs"][()])
    b(lambda s: s.f["vs"].asstr()[()])
    b(lambda s: s.f["vs"].asstr()[1])
    b(lambda s: s.f["vs"][1])
    b(lambda s: s.f["vs"].asstr("latin-1", "replace")[1:])
    b(lambda s: s.f["fs"].asstr()[()])
    b(lambda s: s.f["vb"].asstr()[()])
    b(lambda s: s.f["vb"][()])
    b(lambda s: s.f["i"].asstr(), raises=TypeError)

    def write_field(s):
        s.f["c"]["y"] = np.array([9, 8, 7, 6], dtype="i2")
        return s.f["c"][()]
    b(write_field, raises=any)


# ===========================================================================
# selections
# ===========================================================================

D1 = np.arange(10, dtype="i4") * 3
D3 = np.arange(4 * 5 * 6, dtype="f8").reshape(4, 5, 6)
MASK1 = D1 % 2 == 0
MASK3 = (D3.astype(int) % 7) == 0

SEL1 = {
    "int0": 0, "int_neg": -1, "int_neg_last": -10, "int_oob": 10, "int_neg_oob": -11,
    "all": slice(None), "step": slice(2, 8, 3), "neg_start": slice(-3, None),
    "neg_stop": slice(1, -2), "neg_both": slice(-8, -2, 2), "empty_slice": slice(5, 2),
    "beyond": slice(8, 30), "far_beyond": slice(20, 30), "big_step": slice(None, None, 20),
    "neg_step": slice(None, None, -1), "zero_step": slice(None, None, 0),
    "list": [1, 3, 5], "list_single": [4], "list_empty": [], "nparray": np.array([0, 9]),
    "list_unsorted": [5, 3], "list_dup": [1, 1], "list_neg": [-1], "list_oob": [3, 10],
    "mask": MASK1, "mask_none": np.zeros(10, bool), "mask_short": np.ones(4, bool),
    "ellipsis": Ellipsis, "unit": (), "too_many": (0, 0), "slice_ellipsis": (Ellipsis, slice(1, 3)),
    "np_int": np.int64(3), "float": 1.5, "str_field": "x",
}

SEL3 = {
    "ints": (1, 2, 3), "neg_ints": (-1, -5, -6), "one_int": 2, "int_slice_int": (-1, slice(None), 2),
    "ellipsis_last": (Ellipsis, 0), "ellipsis_first": (0, Ellipsis), "ellipsis_mid": (1, Ellipsis, 2),
    "two_ellipsis": (Ellipsis, 0, Ellipsis),
    "slices_steps": (slice(0, 4, 2), slice(None, None, 3), slice(1, None, 4)),
    "list_mid": (slice(None), [0, 2, 4], slice(1, 5)), "list_first": ([0, 3], 1),
    "list_last": (Ellipsis, [1, 5]), "list_and_int": (2, [0, 1, 4], 3),
    "two_lists": ([0, 1], [0, 1]), "mask_full": MASK3,
    "mask_axis": (slice(None), np.array([True, False, True, False, True]), 0),
    "mask_axis_wrong_len": (np.array([True, False]),),
    "too_many": (0, 0, 0, 0), "oob_mid": (0, 5, 0), "empty_mid": (slice(None), slice(3, 3), 0),
    "neg_step": (0, slice(None, None, -1)), "unit": (), "ellipsis": Ellipsis,
    "partial": (slice(1, 3),), "unsorted_list": (slice(None), [3, 1]),
}

SEL0 = {"unit": (), "ellipsis": Ellipsis, "int": 0, "slice": slice(None), "list": [0],
        "two": (Ellipsis, Ellipsis)}

SELECTION_CASES = ([("d1", k) for k in SEL1] + [("d3", k) for k in SEL3]
                   + [("d0", k) for k in SEL0])
SELS = {"d1": SEL1, "d3": SEL3, "d0": SEL0}


def _make_sel_dsets(s):
    s.f.create_dataset("d1", data=D1, chunks=(3,))
    s.f.create_dataset("d3", data=D3, chunks=(3, 2, 4))
    s.f.create_dataset("d0", data=np.int16(42))
    s.f.create_dataset("d3c", data=D3)  # contiguous


@pytest.mark.parametrize("dset,key", SELECTION_CASES, ids=[f"{a}-{b}" for a, b in SELECTION_CASES])
def test_selection(pair, dset, key):
    sel = SELS[dset][key]
    b = pair.both
    b(_make_sel_dsets)
    # read
    r = b(lambda s: s.f[dset][sel], raises=any, where="read")
    if dset == "d3":
        b(lambda s: s.f["d3c"][sel], raises=any, where="read contiguous")
    # write a scalar (broadcast)
    b(lambda s: s.f[dset].__setitem__(sel, 99), raises=any, where="write scalar")
    b(lambda s: s.f[dset][()], where="after scalar write")
    if isinstance(r, Raised):
        return
    shape = np.shape(r)
    # write an array of the selected shape
    val = (np.arange(int(np.prod(shape))) + 1000).reshape(shape)
    b(lambda s: s.f[dset].__setitem__(sel, val), where="write array")
    b(lambda s: s.f[dset][()], where="after array write")
    if dset == "d3":
        b(lambda s: s.f["d3c"].__setitem__(sel, val), where="write array contiguous")
        b(lambda s: s.f["d3c"][()], where="after contiguous write")
    # shape-mismatched writes
    bad = np.ones(tuple(n + 1 for n in shape) or (2,))
    b(lambda s: s.f[dset].__setitem__(sel, bad), raises=any, where="write wrong shape")
    if len(shape) >= 1 and shape[-1] > 1:
        row = np.arange(shape[-1]) - 50   # broadcast a row
        b(lambda s: s.f[dset].__setitem__(sel, row), raises=any, where="write row broadcast")
        b(lambda s: s.f[dset][()], where="after row write")


def test_selection_writes_persist(pair):
    def op(s):
        _make_sel_dsets(s)
        s.f["d3"][1:3, ::2, -2:] = -1
        s.f["d3"][..., 0] = -2
        s.f["d1"][[0, 4, 8]] = [-1, -2, -3]
        s.f["d1"][MASK1 & (D1 > 10)] = 0
        s.f["d0"][()] = 7
        s.reopen("r")
        return s.f["d3"][()], s.f["d1"][()], s.f["d0"][()]
    pair.both(op)


# ===========================================================================
# attributes
# ===========================================================================

ATTR_VALUES = {
    "int": 1, "neg_int": -(2**40), "float": 1.5, "bool": True, "np_bool": np.bool_(False),
    "np_int8": np.int8(-3), "np_uint64": np.uint64(2**63 + 5), "np_float32": np.float32(2.25),
    "np_float16": np.float16(0.5), "complex": 1 + 2j, "np_complex64": np.complex64(3 - 1j),
    "long_double": np.longdouble(1) / 3, "arr_long_double": np.array([0.5, 1], np.longdouble) / 3,
    "clongdouble": np.clongdouble(1 / np.longdouble(3) + 2j),
    "arr_int": np.array([1, 2, 3]), "arr_2d": np.array([[1.0, 2.0], [3.0, 4.0]], dtype="f4"),
    "arr_bool": np.array([True, False]), "arr_be": np.array([1, 256], dtype=">i4"),
    "arr_empty": np.array([], dtype="f8"), "list_int": [4, 5, 6], "list_float": [1.0, 2],
    "str": "hello", "str_unicode": "héllo ✓", "str_empty": "", "bytes": b"raw\x01",
    "list_str": ["a", "bc", ""], "arr_bytes": np.array([b"a", b"bcd"]),
    "np_bytes": np.bytes_(b"xyz"), "np_str_arr": np.array(["uni", "code"]),
    "compound": np.array([(1, 2.0)], dtype=[("a", "i4"), ("b", "f8")])[0],
    "compound_arr": np.array([(1, 2.0), (3, 4.0)], dtype=[("a", "i4"), ("b", "f8")]),
    "opaque": np.void(b"\x01\x02\x03\x04"),
}


ATTR_RAISES = {"np_str_arr": TypeError}   # h5py: no conversion path for <U


@pytest.mark.parametrize("obj", ["file", "group", "dataset"])
def test_attr_values(pair, obj):
    def target(s):
        if obj == "file":
            return s.f
        if obj == "group":
            return s.f.require_group("g")
        if "d" not in s.f:
            s.f["d"] = np.arange(3)
        return s.f["d"]

    for name, v in ATTR_VALUES.items():
        def op(s, name=name, v=v):
            t = target(s)
            t.attrs[name] = v
            got = t.attrs[name]
            return got, type(got), getattr(got, "dtype", None)
        pair.both(op, raises=ATTR_RAISES.get(name), where=f"attr {name}")

    def reopened(s):
        s.reopen("r")
        t = target(s)
        return {k: t.attrs[k] for k in t.attrs}
    pair.both(reopened)
    pair.both(lambda s: list(target(s).attrs))


def test_attr_manager(pair):
    b = pair.both

    def build(s):
        a = s.f.create_group("g").attrs
        for i, n in enumerate(["zeta", "alpha", "Mid", "10", "9", "b c"]):
            a[n] = i
        return list(a), list(a.keys()), list(a.values()), list(a.items()), len(a)
    b(build)
    b(lambda s: ("alpha" in s.f["g"].attrs, "nope" in s.f["g"].attrs))
    b(lambda s: s.f["g"].attrs["nope"], raises=KeyError)
    b(lambda s: s.f["g"].attrs.get("nope", "dflt"))
    b(lambda s: s.f["g"].attrs.get("zeta"))

    def delete(s):
        a = s.f["g"].attrs
        del a["alpha"]
        return list(a), "alpha" in a, len(a)
    b(delete)
    b(lambda s: s.f["g"].attrs.__delitem__("alpha"), raises=KeyError)

    def overwrite(s):
        a = s.f["g"].attrs
        a["zeta"] = "now a string"
        a["Mid"] = np.arange(3.0)
        return a["zeta"], a["Mid"], list(a)
    b(overwrite)

    def create(s):
        a = s.f["g"].attrs
        a.create("c1", data=np.arange(4), shape=(2, 2), dtype="f4")
        a.create("c2", data=np.zeros(3), shape=(3,), dtype="i2")
        a.create("c3", data=5, dtype="u1")
        a.create("c4", data=["x", "yy"], dtype=s.lib.string_dtype())
        a.create("c5", data=[1.5, 2.5])
        return [(k, a[k], a[k].dtype if hasattr(a[k], "dtype") else type(a[k])) for k in
                ("c1", "c2", "c3", "c4", "c5")]
    b(create)
    b(lambda s: s.f["g"].attrs.create("bad", data=np.arange(5), shape=(2, 2)), raises=ValueError)
    b(lambda s: s.f["g"].attrs.create("nodata", data=None, shape=(3,), dtype="i2"), raises=any)

    def modify(s):
        a = s.f["g"].attrs
        a["m"] = np.int16(1)
        a.modify("m", 300)            # keeps the existing type and shape
        a.modify("new", 2.5)          # creates
        a["arr"] = np.arange(3, dtype="i4")
        a.modify("arr", [7, 8, 9])
        return a["m"], a["new"], a["arr"]
    b(modify)
    b(lambda s: s.f["g"].attrs.modify("arr", [1, 2]), raises=any)

    def tracked(s):
        g = s.f.create_group("t", track_order=True)
        for n in ["zeta", "alpha", "Mid"]:
            g.attrs[n] = n
        d = s.f.create_dataset("td", data=1, track_order=True)
        for n in ["q", "b", "x"]:
            d.attrs[n] = 0
        return list(g.attrs), list(d.attrs)
    b(tracked)


def test_attr_errors(pair):
    b = pair.both
    b(lambda s: s.f.attrs["missing"], raises=KeyError)
    b(lambda s: s.f.attrs.__delitem__("missing"), raises=KeyError)
    b(lambda s: s.f.attrs.__setitem__("obj", object()), raises=TypeError)
    b(lambda s: s.f.attrs.__setitem__("ragged", [[1, 2], [3]]), raises=ValueError)
    b(lambda s: len(s.f.attrs))


# ===========================================================================
# types
# ===========================================================================

def _rng():
    return np.random.default_rng(1234)


def _numeric(dt):
    r = _rng()
    dt = np.dtype(dt)
    if dt.kind == "b":
        return r.integers(0, 2, 12).astype(bool)
    if dt.kind in "iu":
        info = np.iinfo(dt)
        return np.concatenate([[info.min, info.max, 0, 1],
                               r.integers(info.min, info.max, 8, dtype=dt.newbyteorder("="))]).astype(dt)
    if dt.kind == "f":
        return np.array([0.0, -0.0, 1.5, -2.25, np.inf, -np.inf, 1e-3, 65504, 3, 4, 5, 6],
                        dtype=dt)
    if dt.kind == "c":
        return (np.arange(12) + 1j * np.arange(12)[::-1]).astype(dt)
    raise AssertionError(dt)


NUMERIC = ["bool", "i1", "i2", "i4", "i8", "u1", "u2", "u4", "u8", "f2", "f4", "f8",
           "c8", "c16", ">i4", ">f8", ">u2", ">c8"]


@pytest.mark.parametrize("dt", NUMERIC)
def test_numeric_types(pair, dt):
    data = _numeric(dt)

    def op(s):
        d = s.f.create_dataset("d", data=data, chunks=(5,))
        d2 = s.f.create_dataset("e", shape=(4,), dtype=dt)
        d2[1:3] = data[:2]
        s.f.attrs["a"] = data[:3]
        s.f.attrs["s"] = data[0]
        return d.dtype, d[()], d[3], d[::4], d2[()], s.f.attrs["a"], s.f.attrs["s"], d.fillvalue
    pair.both(op)

    def reopened(s):
        s.reopen("r")
        return s.f["d"].dtype, s.f["d"][()], s.f["e"][()], s.f.attrs["a"]
    pair.both(reopened)


def test_nan_values(pair):
    data = np.array([np.nan, 1.0, -np.nan], dtype="f4")

    def op(s):
        s.f["n"] = data
        s.f.attrs["n"] = np.float64(np.nan)
        return s.f["n"][()], s.f.attrs["n"]
    pair.both(op)


def _vlen_compare(s, name):
    d = s.f[name]
    return (d.dtype, s.lib.check_string_dtype(d.dtype), s.lib.check_vlen_dtype(d.dtype),
            d[()], d[0], d.shape)


def test_string_types(pair):
    b = pair.both

    def fixed(s):
        d = s.f.create_dataset("S10", data=np.array([b"hello", b"", b"0123456789"], dtype="S10"))
        d2 = s.f.create_dataset("S3w", (2,), dtype="S3")
        d2[0] = b"abcdef"   # truncated
        d2[1] = "xy"
        return d.dtype, d[()], d[2], d2[()], s.lib.check_string_dtype(d.dtype).encoding
    b(fixed, raises=any)

    def vlen_str(s):
        d = s.f.create_dataset("vs", (4,), dtype=s.lib.string_dtype())
        d[...] = ["alpha", "béta", "", "a much longer string of text" * 10]
        d[1] = "changed ✓"
        return _vlen_compare(s, "vs"), d.asstr()[()]
    b(vlen_str)

    def vlen_str_2d(s):
        d = s.f.create_dataset("vs2", data=np.array([["a", "bb"], ["ccc", ""]], dtype=object),
                               dtype=s.lib.string_dtype(), chunks=(1, 2))
        return _vlen_compare(s, "vs2"), d[:, 1], d[1, 0]
    b(vlen_str_2d)

    def vlen_bytes(s):
        d = s.f.create_dataset("vb", data=[b"x", b"", b"\x7fyz"], dtype=s.lib.string_dtype("ascii"))
        return _vlen_compare(s, "vb"), s.lib.check_string_dtype(d.dtype).encoding
    b(vlen_bytes)

    def fixed_utf8(s):
        d = s.f.create_dataset("fu", (2,), dtype=s.lib.string_dtype("utf-8", 4))
        return d.dtype, d[()], s.lib.check_string_dtype(d.dtype)
    b(fixed_utf8)

    def scalar_vlen(s):
        d = s.f.create_dataset("sv", data="just one", dtype=s.lib.string_dtype())
        return d[()], d.shape, d.asstr()[()]
    b(scalar_vlen)

    def reopened(s):
        s.reopen("r")
        return [_vlen_compare(s, n) for n in ("vs", "vs2", "vb")], s.f["sv"][()]
    b(reopened)


def test_vlen_sequences(pair):
    b = pair.both

    def op(s):
        dt = s.lib.vlen_dtype(np.int32)
        d = s.f.create_dataset("v", (4,), dtype=dt)
        d[0] = np.array([1, 2, 3], dtype="i4")
        d[1] = np.arange(10, dtype="i4")
        d[3] = [7]
        return (d.dtype, s.lib.check_vlen_dtype(d.dtype), [np.asarray(x) for x in d[()]],
                d[1], d[2])
    b(op)

    def floats(s):
        dt = s.lib.vlen_dtype(np.dtype("f8"))
        arr = np.empty(3, dtype=object)
        arr[0] = np.array([1.5])
        arr[1] = np.array([], dtype="f8")
        arr[2] = np.arange(5.0)
        d = s.f.create_dataset("vf", data=arr, dtype=dt)
        return list(d[()]), d[2]
    b(floats)

    def reopened(s):
        s.reopen("r")
        return list(s.f["v"][()]), list(s.f["vf"][()])
    b(reopened)


def test_compound_types(pair):
    b = pair.both
    inner = np.dtype([("a", "<i2"), ("b", "<f4")])
    nested = np.dtype([("id", "<i8"), ("pos", "<f4", (3,)), ("inner", inner),
                       ("tag", "S4"), ("flags", "u1", (2, 2))])

    def op(s):
        a = np.zeros(5, nested)
        a["id"] = np.arange(5) * 11
        a["pos"] = np.arange(15).reshape(5, 3)
        a["inner"]["a"] = [-1, -2, -3, -4, -5]
        a["inner"]["b"] = 0.5
        a["tag"] = [b"t0", b"t1", b"t2", b"t3", b"t4"]
        a["flags"] = np.arange(20).reshape(5, 2, 2)
        d = s.f.create_dataset("c", data=a, chunks=(2,))
        d[1] = a[4]
        s.f.attrs["c"] = a[:2]
        return d.dtype, d[()], d[3], d["pos"], d["inner"], s.f.attrs["c"], d.fillvalue
    b(op)

    def be_members(s):
        dt = np.dtype([("x", ">i4"), ("y", ">f8")])
        a = np.array([(1, 2.0), (-3, 4.5)], dtype=dt)
        d = s.f.create_dataset("be", data=a)
        return d.dtype, d[()]
    b(be_members)

    def reopened(s):
        s.reopen("r")
        return s.f["c"].dtype, s.f["c"][()], s.f["be"][()]
    b(reopened)


def _plain(x):
    """Nested lists of Python values (records hold arrays inside object
    members, which array comparison cannot take)."""
    if isinstance(x, np.ndarray):
        return [_plain(e) for e in x] if x.ndim else _plain(x[()])
    if isinstance(x, (np.void, tuple, list)):
        return [_plain(e) for e in x]
    if isinstance(x, np.generic):
        return x.item()
    return x


def test_compound_with_variable_length_members(pair):
    """Table-like compounds whose members are vlen strings and sequences
    (stored as HSDS records)."""
    b = pair.both

    def dtypes(lib):
        row = np.dtype([("id", "<i4"), ("name", lib.string_dtype()), ("hits", lib.vlen_dtype("i2")),
                        ("tags", lib.string_dtype("ascii"), (2,)), ("w", "<f8")])
        return row, np.dtype([("label", lib.string_dtype()), ("row", row)])

    def op(s):
        row, outer = dtypes(s.lib)
        d = s.f.create_dataset("t", (5,), dtype=row, chunks=(2,))
        d[0] = (1, "h\u00e9llo", np.array([1, 2], "i2"), [b"p", b"q"], 0.5)
        d[3] = (4, b"x", np.array([], "i2"), [b"", b"zz"], -1.0)
        d[1:3] = np.array([(2, "two", np.arange(3, dtype="i2"), [b"a", b"b"], 2.0),
                           (3, "", np.array([9], "i2"), [b"c", b""], 3.0)], dtype=row)
        n = s.f.create_dataset("n", data=np.array([("first", d[0]), ("second", d[2])], dtype=outer))
        s.f.attrs["row"] = d[:2]
        return (d.dtype, n.dtype, _plain((d[()], d[3], d["name"], d["hits"], d[[0, 4]], d[1:4:2],
                                          n[()], s.f.attrs["row"])))
    b(op)

    def reopened(s):
        s.reopen("r")
        return _plain((s.f["t"][()], s.f["n"][()])), s.f["t"].dtype
    b(reopened)


def test_enum_types(pair):
    b = pair.both

    def op(s):
        dt = s.lib.enum_dtype({"RED": 0, "GREEN": 1, "BLUE": 42}, basetype="i1")
        d = s.f.create_dataset("e", data=np.array([0, 1, 42, 1], dtype="i1"), dtype=dt)
        s.f.attrs.create("ea", 42, dtype=dt)
        ea = s.f.attrs["ea"]
        return (d.dtype, sorted(s.lib.check_enum_dtype(d.dtype).items()), d[()],
                sorted((s.lib.check_enum_dtype(ea.dtype) or {}).items()), ea)
    b(op)

    def big(s):
        dt = s.lib.enum_dtype({"A": 1, "B": 70000}, basetype=np.uint32)
        d = s.f.create_dataset("e2", (3,), dtype=dt)
        d[0] = 70000
        return sorted(s.lib.check_enum_dtype(d.dtype).items()), d[()]
    b(big)

    def reopened(s):
        s.reopen("r")
        return sorted(s.lib.check_enum_dtype(s.f["e"].dtype).items()), s.f["e"][()], s.f["e"].dtype
    b(reopened)


def test_opaque_types(pair):
    b = pair.both

    def op(s):
        data = np.frombuffer(bytes(range(32)), dtype="V8")
        d = s.f.create_dataset("o", data=data)
        d2 = s.f.create_dataset("o2", (2,), dtype=np.dtype("V8"))
        d2[1] = np.void(b"ABCDEFGH")
        return d.dtype, d[()], d[1], d2[()], s.lib.check_opaque_dtype(d.dtype)
    b(op)

    def reopened(s):
        s.reopen("r")
        return s.f["o"].dtype, s.f["o"][()], s.f["o2"][()]
    b(reopened)


def test_empty_and_null(pair):
    b = pair.both

    def op(s):
        d = s.f.create_dataset("null", dtype="f4", data=s.lib.Empty("f4"))
        s.f.attrs["empty"] = s.lib.Empty("i4")
        return (d.shape, d.dtype, d.size, type(d[()]).__name__, d[()].dtype,
                type(s.f.attrs["empty"]).__name__, s.f.attrs["empty"].dtype)
    b(op)


def test_write_conversion(pair):
    """Writes convert to the dataset's type the way HDF5 does (incl. saturation)."""
    b = pair.both

    def op(s):
        f = s.f
        i = f.create_dataset("i", (6,), "i4")
        i[...] = np.array([1.7, -2.2, 0.5, -0.5, 3e9, -3e9])
        u = f.create_dataset("u", (4,), "u1")
        u[...] = np.array([300, -5, 255, 7], dtype="i4")
        fl = f.create_dataset("f", (3,), "f4")
        fl[...] = np.array([1, 2**24 + 1, -7], dtype="i8")
        be = f.create_dataset("be", (3,), ">i2")
        be[...] = [1, -2, 258]
        h = f.create_dataset("h", (2,), "f2")
        h[...] = [1e6, 0.1]
        return i[()], u[()], fl[()], be[()], h[()]
    b(op)

    def read_as(s):
        d = s.f["be"]
        out = np.zeros(3, "<i8")
        d.read_direct(out)
        return d.astype("<f4")[()], out
    b(read_as)


def test_object_references(pair):
    """h5py's object references: ``obj.ref``, ``ref_dtype`` datasets and
    attributes, ``f[ref]`` (named by a path that leads there, None for an
    anonymous object), null references."""
    def names(s, refs):
        return [s.f[r].name if r else None for r in refs]

    def make(s):
        lib = s.lib
        g = s.f.create_group("g/sub")
        d = s.f.create_dataset("d", data=np.arange(3))
        anon = s.f.create_dataset(None, data=[7])
        refs = s.f.create_dataset("refs", shape=(4,), dtype=lib.ref_dtype)
        refs[:3] = [s.f.ref, g.ref, d.ref]
        s.f["guessed"] = [d.ref, anon.ref]
        s.f.attrs["one"] = g.ref
        s.f.attrs["two"] = [d.ref, s.f.ref]
        got = refs[...]
        return (names(s, got), bool(got[3]), repr(got[3]), lib.check_ref_dtype(refs.dtype) is lib.Reference,
                lib.special_dtype(ref=lib.Reference) == lib.ref_dtype, s.f["guessed"].dtype,
                s.f[s.f["guessed"][1]][...].tolist(), names(s, [s.f.attrs["one"]]),
                names(s, s.f.attrs["two"]))
    pair.both(make)

    def reopened(s):
        s.reopen("r")
        # (the anonymous dataset is gone natively once the file closed: no link kept it)
        return (names(s, s.f["refs"][...]), names(s, s.f["guessed"][:1]),
                s.f["refs"][1:3].shape, names(s, [s.f.attrs["one"]]), repr(s.f.attrs["two"][0]))
    pair.both(reopened)

    def null_deref(s):
        return s.f[s.f["refs"][3]]
    pair.both(null_deref, raises=ValueError)

    def deleted_and_moved(s):
        s.reopen("a")
        s.gone = s.f.create_group("gone").ref
        moving = s.f.create_group("moving").ref
        twice = s.f.create_group("twice").ref
        s.f["twice2"] = s.f["twice"]
        del s.f["gone"]
        s.f.move("moving", "moved")
        del s.f["twice"]
        return s.f[moving].name, s.f[twice].name
    pair.both(deleted_and_moved)

    def dangling(s):
        # a reference to an object whose last link is gone no longer opens
        return s.f[s.gone]
    pair.both(dangling, raises=KeyError)

    def still_followed(s):
        return names(s, [s.f["moved"].ref, s.f["twice2"].ref])
    pair.both(still_followed)

    def wrong_element(s):
        s.reopen("a")
        s.f["refs"][0] = "not a reference"
    pair.both(wrong_element, raises=TypeError)

    def still_there(s):
        return [s.f[r].name for r in s.f["refs"][:3]]
    pair.both(still_there)
