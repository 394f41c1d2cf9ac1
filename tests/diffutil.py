"""Helpers for differential tests: run the same operation on h5py (a real
HDF5 file) and on h5lake (a store directory, or a domain in an S3 bucket)
and check that both agree —
on values (incl. dtype and shape), on object kinds and on the class of any
exception raised."""

from __future__ import annotations

import os

import numpy as np

import h5lake

try:
    import h5py
except ImportError:  # pragma: no cover
    h5py = None

try:   # the client of the served differential tests
    import h5pyd
except ImportError:  # pragma: no cover
    h5pyd = None


class Side:
    """One library's half of a differential test.

    ``lib`` is the module (h5py or h5lake); ``path(name)`` gives a path for
    a file/store called ``name`` in this side's own directory; ``f`` is the
    main file, opened in mode 'w' on first use.
    """

    def __init__(self, lib, root, ext, local=True):
        self.lib = lib
        self.root = root
        self.ext = ext
        self.name = lib.__name__
        if local and "://" not in str(root):    # s3:// roots need no directory
            os.makedirs(root, exist_ok=True)
        self._f = None
        self._opened = []

    def path(self, name="t"):
        return os.path.join(str(self.root), name + self.ext)

    def open(self, name="t", mode="r", **kw):
        fh = self.lib.File(self.path(name), mode, **kw)
        self._opened.append(fh)
        return fh

    @property
    def f(self):
        if self._f is None:
            self._f = self.open("t", "w")
        return self._f

    def reopen(self, mode="r"):
        """Close the main file and open it again (state must survive)."""
        if self._f is not None:
            self._f.close()
        self._f = self.open("t", mode)
        return self._f

    def close_all(self):
        for fh in self._opened:
            try:
                fh.close()
            except Exception:  # noqa: BLE001
                pass


class Raised:
    def __init__(self, exc):
        self.exc = exc
        self.type = type(exc)

    def __repr__(self):
        return f"Raised({self.type.__name__}: {self.exc})"


def run(op, side):
    try:
        return op(side)
    except Exception as e:  # noqa: BLE001
        return Raised(e)


def _kind(x):
    """Library-neutral name of an h5py/h5lake object or class, else None."""
    for lib in (h5py, h5lake, h5pyd):
        if lib is None:
            continue
        for cname in ("File", "Dataset", "Group", "Datatype", "SoftLink",
                      "ExternalLink", "HardLink", "AttributeManager"):
            cls = getattr(lib, cname, None)
            if cls is None:
                continue
            if x is cls:
                return ("class", cname)
            if isinstance(x, cls):
                return ("obj", cname)
    return None


def assert_same(h, l, where="result"):
    """Recursive equality: h from h5py, l from h5lake."""
    if isinstance(h, Raised) or isinstance(l, Raised):
        assert isinstance(h, Raised), f"{where}: h5py returned {h!r} but h5lake raised {l!r}"
        assert isinstance(l, Raised), f"{where}: h5py raised {h!r} but h5lake returned {l!r}"
        assert issubclass(l.type, h.type), (
            f"{where}: exception class differs: h5py {h!r}, h5lake {l!r}")
        return
    kh, kl = _kind(h), _kind(l)
    if kh is not None or kl is not None:
        assert kh == kl, f"{where}: kinds differ: h5py {h!r}, h5lake {l!r}"
        if kh == ("obj", "SoftLink"):
            assert h.path == l.path, f"{where}: SoftLink path {h.path!r} != {l.path!r}"
        elif kh == ("obj", "ExternalLink"):
            assert h.path == l.path, f"{where}: ExternalLink path {h.path!r} != {l.path!r}"
        elif kh is not None and kh[0] == "obj" and kh[1] in ("Dataset", "Group", "File"):
            assert h.name == l.name, f"{where}: name {h.name!r} != {l.name!r}"
        return
    if type(h).__name__ == "Empty" or type(l).__name__ == "Empty":
        assert type(h).__name__ == type(l).__name__ == "Empty", f"{where}: {h!r} != {l!r}"
        assert h.dtype == l.dtype, f"{where}: Empty dtype {h.dtype} != {l.dtype}"
        return
    if isinstance(h, np.ndarray) or isinstance(l, np.ndarray):
        assert isinstance(h, np.ndarray) and isinstance(l, np.ndarray), (
            f"{where}: types differ: h5py {type(h)} {h!r}, h5lake {type(l)} {l!r}")
        assert h.dtype == l.dtype, f"{where}: dtype {h.dtype} != {l.dtype}"
        assert h.shape == l.shape, f"{where}: shape {h.shape} != {l.shape}"
        if h.dtype.kind == "O":
            for i, (a, b) in enumerate(zip(h.ravel().tolist(), l.ravel().tolist())):
                assert_same(a, b, f"{where}[{i}]")
        elif h.dtype.kind == "V" and h.dtype.names is None:
            assert h.tobytes() == l.tobytes(), f"{where}: opaque bytes differ"
        else:
            np.testing.assert_array_equal(l, h, err_msg=where, strict=True)
        return
    if isinstance(h, np.generic) or isinstance(l, np.generic):
        assert type(h) is type(l), f"{where}: scalar types differ: {type(h)} {h!r} vs {type(l)} {l!r}"
        if isinstance(h, np.void):
            assert h.dtype == l.dtype, f"{where}: dtype {h.dtype} != {l.dtype}"
            if h.dtype.names is None:
                assert h.tobytes() == l.tobytes(), f"{where}: {h!r} != {l!r}"
            else:
                # member by member: padding bytes hold whatever the writer left
                for n in h.dtype.names:
                    assert_same(h[n], l[n], f"{where}.{n}")
        else:
            assert h.dtype == l.dtype, f"{where}: dtype {h.dtype} != {l.dtype}"
            np.testing.assert_array_equal(np.asarray(l), np.asarray(h), err_msg=where)
        return
    if isinstance(h, np.dtype) or isinstance(l, np.dtype):
        assert h == l, f"{where}: dtype {h!r} != {l!r}"
        return
    if isinstance(h, tuple) and hasattr(h, "_fields"):   # namedtuple (e.g. string_info)
        assert isinstance(l, tuple) and type(h).__name__ == type(l).__name__, (
            f"{where}: {type(h)} {h!r} != {type(l)} {l!r}")
        assert h._fields == l._fields, f"{where}: fields {h._fields} != {l._fields}"
        assert_same(tuple(h), tuple(l), where)
        return
    if isinstance(h, (list, tuple)):
        assert type(h) is type(l), f"{where}: {type(h)} {h!r} != {type(l)} {l!r}"
        assert len(h) == len(l), f"{where}: length {len(h)} != {len(l)}: {h!r} vs {l!r}"
        for i, (a, b) in enumerate(zip(h, l)):
            assert_same(a, b, f"{where}[{i}]")
        return
    if isinstance(h, dict):
        assert isinstance(l, dict), f"{where}: {h!r} != {l!r}"
        assert list(h) == list(l), f"{where}: keys {list(h)} != {list(l)}"
        for k in h:
            assert_same(h[k], l[k], f"{where}[{k!r}]")
        return
    if isinstance(h, type) and isinstance(l, type):
        assert h is l, f"{where}: {h!r} != {l!r}"
        return
    assert type(h) is type(l), f"{where}: types differ: {type(h)} {h!r} vs {type(l)} {l!r}"
    if isinstance(h, float) and h != h:
        assert l != l, f"{where}: {h!r} != {l!r}"
        return
    assert h == l, f"{where}: h5py {h!r} != h5lake {l!r}"


class Pair:
    """The two sides; ``both(op)`` runs ``op(side)`` on each and compares."""

    def __init__(self, tmp_path, s3_root=None):
        """``s3_root`` (``s3://bucket/prefix``): put the h5lake side there,
        each file the HSDS domain ``prefix/<name>.h5`` of the bucket."""
        self.h = Side(h5py, tmp_path / "h5py", ".h5")
        if s3_root is None:
            self.l = Side(h5lake, tmp_path / "h5lake", ".h5l")
        else:
            self.l = Side(h5lake, s3_root, ".h5")

    def both(self, op, raises=None, where=None):
        """Run ``op`` on both sides and assert they agree.

        ``raises``: None — h5py must succeed (guards the test itself);
        an exception class — h5py must raise it (and h5lake the same class);
        ``any`` — whatever h5py does, h5lake must do the same.
        Returns the h5py result (or the Raised)."""
        rh = run(op, self.h)
        where = where or getattr(op, "__name__", "op")
        if raises is None:
            assert not isinstance(rh, Raised), f"{where}: test bug? h5py raised {rh!r}"
        elif raises is not any:
            assert isinstance(rh, Raised) and issubclass(rh.type, raises), (
                f"{where}: test bug? h5py gave {rh!r}, expected {raises.__name__}")
        rl = run(op, self.l)
        try:
            assert_same(rh, rl, where)
        except AssertionError as e:
            if not os.environ.get("H5LAKE_DIFF_SOFT"):
                raise
            # Survey mode (H5LAKE_DIFF_SOFT=1): report every divergence and go on.
            print(f"DIVERGENCE {os.environ.get('PYTEST_CURRENT_TEST', '').split(' ')[0]}: {e}")
        return rh

    def close(self):
        self.h.close_all()
        self.l.close_all()
