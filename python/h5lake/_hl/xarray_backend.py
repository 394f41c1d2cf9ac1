"""xarray backend: ``xarray.open_dataset(store, engine="h5lake")`` and
``h5lake.to_h5lake(ds, store)``.

An h5lake store holds the HDF5 data model, so a netCDF-4 file copied or
linked into one (``h5lake load``) keeps netCDF-4's HDF5 encoding intact:
dimensions are HDF5 dimension scales (``CLASS``/``NAME``/``REFERENCE_LIST``
on the scale, ``DIMENSION_LIST`` on each variable, as H5DS stores them;
see ``dims.py``), a dimension without a coordinate variable is a scale
whose ``NAME`` starts with "This is a netCDF dimension but not a netCDF
variable.", ``_Netcdf4Dimid``/``_Netcdf4Coordinates`` number dimensions, an
unlimited dimension is a scale of maxshape ``(None,)``, a variable named
like a dimension without being its coordinate variable is stored as
``_nc4_non_coord_<name>``, and strings are HDF5 variable-length strings
(or ``S1`` character arrays). This module reads that encoding the way
netCDF-C and h5netcdf do, so that ``engine="h5lake"`` gives what
``engine="h5netcdf"`` gives on the original file, and writes it the way
they do, so that a store written by :func:`to_h5lake` and exported with
``h5lake get`` is a netCDF-4 file that netCDF-C reads.

The CF conventions (masking, scaling, times, character arrays, the
``coordinates`` attribute) are xarray's business: the store below hands
xarray raw variables and attributes, and xarray's own encoder/decoder does
the rest, exactly as for its netCDF backends.

Reading is lazy: opening reads metadata (links, attributes, shapes) only;
values are read when xarray indexes a variable, one selection per read,
through :class:`H5LakeArrayWrapper` (picklable, so dask and
``dask.distributed`` workers reopen the store themselves).
"""

from __future__ import annotations

import numbers
import os
import posixpath
import warnings
from collections import Counter

import numpy as np

from xarray import conventions
from xarray.backends.common import (
    ArrayWriter,
    BackendArray,
    BackendEntrypoint,
    WritableCFDataStore,
)
from xarray.backends.file_manager import CachingFileManager
from xarray.backends.store import StoreBackendEntrypoint
from xarray.coding.strings import (
    CharacterArrayCoder,
    EncodedStringCoder,
    create_vlen_dtype,
    is_unicode_dtype,
)
from xarray.core import indexing
from xarray.core.utils import FrozenDict
from xarray.core.variable import Variable

from . import h5t
from .dataset import Dataset as _H5Dataset
from .group import Group as _H5Group

__all__ = ["H5LakeBackendEntrypoint", "H5LakeStore", "H5LakeArrayWrapper", "to_h5lake"]

# The NAME netCDF-C gives the scale of a dimension that has no coordinate
# variable (followed by the length, "%10d"): such a dataset is a dimension,
# not a variable.
NOT_A_VARIABLE = b"This is a netCDF dimension but not a netCDF variable."
# netCDF-C's HDF5 name for a variable that is named like a dimension of its
# group without being that dimension's coordinate variable.
NON_COORD_PREFIX = "_nc4_non_coord_"
# Attributes that carry netCDF-4's HDF5 encoding, not user metadata
# (netCDF-C and h5netcdf hide the same ones).
HIDDEN_ATTRS = frozenset((
    "REFERENCE_LIST", "CLASS", "DIMENSION_LIST", "NAME", "_Netcdf4Dimid",
    "_Netcdf4Coordinates", "_nc3_strict", "_NCProperties",
))
_PHONY_MODES = ("access", "sort")


def _posix_group(group):
    """``group`` ("a/b", "/a/b", None) as an absolute HDF5 path."""
    if group is None or group in ("", "/"):
        return "/"
    if not isinstance(group, str):
        raise ValueError(f"group must be a string or None, not {group!r}")
    return "/" + group.strip("/")


def _c_string(value):
    """A fixed-length string attribute as C reads it (up to the first NUL)."""
    if isinstance(value, np.ndarray):
        value = value.reshape(-1)[0] if value.size else b""
    if isinstance(value, str):
        value = value.encode("utf-8", "surrogateescape")
    return bytes(value).split(b"\0", 1)[0]


def _is_scale(attrs, names):
    # H5DSis_scale compares the CLASS value with "DIMENSION_SCALE" only.
    return "CLASS" in names and _c_string(attrs["CLASS"]) == b"DIMENSION_SCALE"


# ---------------------------------------------------------------------------
# attributes: HDF5 values -> what netCDF readers return
# ---------------------------------------------------------------------------

def _nc_attr_value(attrs, name):
    """An attribute as netCDF-4 readers (netCDF4-python, h5netcdf) return
    it: fixed-length strings decoded, arrays of strings as lists, a
    one-element array as its element, an empty (null dataspace) attribute
    as an empty array (``b""`` for an empty character attribute)."""
    # The stored document, not just the value: a fixed-length string's
    # declared length decides how netCDF reads it, and the value loses it.
    doc = attrs._get_doc(name)
    value = h5t.attr_value_from_json(doc)
    dtype = h5t.hsds_to_dtype(doc["type"])
    sinfo = h5t.check_string_dtype(dtype)
    if isinstance(value, h5t.Empty):
        if sinfo is not None and sinfo.length == 1:
            return b""
        return np.array([], dtype=dtype)
    if sinfo is not None:
        if sinfo.length is not None and sinfo.length > 1:
            # fixed-length strings are netCDF text; "S1" arrays stay bytes
            # (they are character arrays, as in netCDF4-python)
            if np.isscalar(value):
                value = value.decode(sinfo.encoding, "surrogateescape")
            else:
                value = [b.decode(sinfo.encoding, "surrogateescape") for b in np.asarray(value).flat]
        elif not np.isscalar(value):
            value = np.asarray(value).tolist()
    if not np.isscalar(value) and len(value) == 1:
        return value[0]
    return value


def _read_attributes(obj, creation_order=False):
    """User attributes of an h5lake object, as xarray's netCDF backends
    hand them to the CF decoder: bytes decoded as UTF-8 (not ``_FillValue``
    or ``missing_value``, whose type must stay the variable's).

    ``creation_order``: list them in stored order, which is creation order,
    even where the object does not say it tracks that order (``h5lake
    load`` keeps the order but not the file's tracking flag)."""
    attrs = obj.attrs
    out = {}
    for name in (obj._fs.raw.attr_names(obj._oid) if creation_order else attrs):
        if name in HIDDEN_ATTRS:
            continue
        value = _nc_attr_value(attrs, name)
        if name not in ("_FillValue", "missing_value") and isinstance(value, bytes):
            try:
                value = value.decode("utf-8")
            except UnicodeDecodeError:
                warnings.warn(f"'utf-8' codec can't decode bytes for attribute {name!r} of "
                              f"{obj.name!r}, returning bytes undecoded.", UnicodeWarning,
                              stacklevel=4)
        out[name] = value
    return out


# ---------------------------------------------------------------------------
# the netCDF-4 view of an HDF5 group (metadata only, no values)
# ---------------------------------------------------------------------------

class _Dim:
    """A netCDF dimension: a dimension scale, or a phony dimension (an axis
    of a dataset without scales, named ``phony_dim_N`` as netCDF-C and
    h5netcdf do)."""

    def __init__(self, name, size, unlimited=False, dimid=None, path=None, ref=None):
        self.name = name
        self.scale_size = size          # the scale's own length
        self.unlimited = unlimited
        self.dimid = dimid
        self.path = path                # the scale's HDF5 path (None: phony)
        self.ref = ref                  # reference to the scale (None: phony)
        self._size = None if unlimited else size

    @property
    def phony(self):
        return self.path is None

    def size(self, root):
        """The dimension's length. An unlimited dimension is as long as its
        longest variable (netCDF-C and h5netcdf look through the scale's
        REFERENCE_LIST), which may be longer than the scale itself."""
        if self._size is None:
            size = self.scale_size
            scale = root[self.path]
            if "REFERENCE_LIST" in scale.attrs:
                for ref, axis in scale.attrs["REFERENCE_LIST"]:
                    try:
                        shape = root[ref].shape
                    except (KeyError, ValueError):
                        continue        # a dangling reference names nothing
                    if shape is not None and int(axis) < len(shape):
                        size = max(size, shape[int(axis)])
            self._size = size
        return self._size


class _Var:
    """A netCDF variable: a dataset of the group, by its netCDF name."""

    def __init__(self, name, path, shape, dtype, attr_names, is_scale):
        self.name = name                # netCDF name (prefix removed)
        self.path = path                # HDF5 path
        self.h5shape = shape
        self.dtype = dtype
        self.attr_names = attr_names
        self.is_scale = is_scale
        self.dims = None                # resolved lazily (needs the whole scope)


class _GroupView:
    """Dimensions, variables and subgroups of one HDF5 group as netCDF-4
    readers see them (netCDF-C's rules, in h5netcdf's reading of them):
    built once from metadata, kept for the life of the opened store (a
    dataset xarray has opened cannot follow changes to its file either)."""

    def __init__(self, layout, root, path, parent):
        self.path = path
        self.parent = parent
        self.dims = {}
        self.vars = {}
        self.groups = []
        group = root[path]
        unlabeled_shapes = Counter()
        for name in group:
            try:
                obj = group[name]
            except (KeyError, OSError, ValueError) as e:
                # a dangling soft or external link: the rest of the group
                # is still readable, and the warning says what is missing
                warnings.warn(f"{posixpath.join(path, name)}: link not followed ({e}); "
                              "left out of the dataset", RuntimeWarning, stacklevel=2)
                continue
            if isinstance(obj, _H5Group):
                self.groups.append(name)
                continue
            if not isinstance(obj, _H5Dataset):
                continue                # committed datatypes: not variables
            attrs = obj.attrs
            names = list(attrs)
            is_scale = _is_scale(attrs, names)
            if is_scale:
                shape = obj.shape or (0,)
                dimid = int(np.asarray(attrs["_Netcdf4Dimid"]).reshape(-1)[0]) \
                    if "_Netcdf4Dimid" in names else layout.fallback_dimid()
                self.dims[name] = _Dim(name, shape[0], unlimited=(obj.maxshape or ())[:1] == (None,),
                                       dimid=dimid, path=obj.name, ref=obj.ref)
                layout.dims_seen += 1
                if "NAME" in names and NOT_A_VARIABLE in _c_string(attrs["NAME"]):
                    continue            # a dimension, not a variable
            elif obj.shape and not self._labeled_axes(attrs, names):
                # every axis without a scale: its axes become phony
                # dimensions, as many of each length as one variable needs
                unlabeled_shapes |= Counter(obj.shape)
            vname = name[len(NON_COORD_PREFIX):] if name.startswith(NON_COORD_PREFIX) else name
            self.vars[vname] = _Var(vname, obj.name, obj.shape, obj.dtype, names, is_scale)
        # Phony dimensions (h5netcdf's algorithm):
        # per length, as many as the variable needing the most of them,
        # less the scales of that length this group already has.
        labeled = Counter(None if d.unlimited else d.scale_size for d in self.dims.values())
        for size, count in unlabeled_shapes.items():
            for _ in range(labeled[size], count):
                name = f"phony_dim_{layout.phony_number()}"
                self.dims[name] = _Dim(name, size)

    @staticmethod
    def _labeled_axes(attrs, names):
        """Whether ``DIMENSION_LIST`` gives any axis a scale."""
        if "DIMENSION_LIST" not in names:
            return False
        return any(len(row) for row in attrs["DIMENSION_LIST"])

    # -- scope -------------------------------------------------------------
    def chain(self):
        """This group's view and its ancestors', innermost first."""
        view = self
        while view is not None:
            yield view
            view = view.parent

    def find_dim(self, name):
        for view in self.chain():
            if name in view.dims:
                return view.dims[name]
        return None

    def all_dims(self):
        """Every dimension visible here, inner groups hiding outer ones."""
        dims = {}
        for view in reversed(list(self.chain())):
            dims.update(view.dims)
        return dims

    # -- variables ---------------------------------------------------------
    def var_dims(self, root, var):
        """The netCDF dimensions of ``var`` (netCDF-C's rules, in h5netcdf's
        order): a scale with ``_Netcdf4Coordinates`` (a coordinate
        variable, possibly a 2-D character one) names its dimensions by
        id; otherwise ``DIMENSION_LIST`` names them by the last scale
        attached to each axis; a 1-D dataset named like a dimension is that
        dimension's; any other axis is a phony dimension."""
        if var.dims is not None:
            return var.dims
        dset = root[var.path]
        if var.is_scale and "_Netcdf4Coordinates" in var.attr_names:
            by_id = {d.dimid: d.name for d in self.all_dims().values() if not d.phony}
            ids = np.asarray(dset.attrs["_Netcdf4Coordinates"]).reshape(-1)
            try:
                var.dims = tuple(by_id[int(i)] for i in ids)
            except KeyError as e:
                raise ValueError(f"{var.path}: _Netcdf4Coordinates names dimension id {e} "
                                 "that no dimension scale in scope has") from None
            return var.dims
        if "DIMENSION_LIST" in var.attr_names:
            rows = list(dset.attrs["DIMENSION_LIST"])
            filled = [len(r) > 0 for r in rows]
            if all(filled) and len(rows) == len(var.h5shape):
                # more than one scale on an axis: the last one wins, as in
                # netCDF-C and netCDF4-python
                var.dims = tuple(self._scale_name(root, r[-1], var) for r in rows)
                return var.dims
            if any(filled):
                raise ValueError(f"malformed variable {var.path}: some of its axes have "
                                 "dimension scales and some do not")
        base = var.path.rsplit("/", 1)[-1]
        if len(var.h5shape or ()) == 1 and self.find_dim(base) is not None:
            var.dims = (base,)
            return var.dims
        dims = []
        used = Counter()
        for axis, size in enumerate(var.h5shape or ()):
            # phony dimensions live in the variable's own group
            same = [d.name for d in self.dims.values() if d.scale_size == size]
            if used[size] >= len(same):
                # only a multi-dimensional scale without _Netcdf4Coordinates
                # gets here: netCDF-C cannot name its axes either
                raise ValueError(f"{var.path}: no dimension for axis {axis} (a dimension scale of "
                                 f"rank {len(var.h5shape)} without _Netcdf4Coordinates)")
            dims.append(same[used[size]])
            used[size] += 1
        var.dims = tuple(dims)
        return var.dims

    def _scale_name(self, root, ref, var):
        for view in self.chain():
            for d in view.dims.values():
                if d.ref is not None and d.ref == ref:
                    return d.name
        try:
            return root[ref].name.rsplit("/", 1)[-1]
        except (KeyError, ValueError):
            # HDF5 copies references as they are: a variable copied to
            # another store without the scales it uses points at nothing.
            raise ValueError(f"{var.path}: its DIMENSION_LIST names a dimension scale that is "
                             "not in this store (was it copied without the group that defines "
                             "its dimensions?)") from None

    def dim_size(self, root, name, fallback):
        d = self.find_dim(name)
        return fallback if d is None else d.size(root)


class _Layout:
    """The netCDF-4 views of one opened store's groups, with the numbering
    that spans groups: phony dimension names and dimension ids.

    Phony dimensions are named as h5netcdf names them (what xarray's
    ``engine="h5netcdf"`` shows): ``phony_dims="access"`` numbers them in
    the order groups are opened, ``"sort"`` walks the whole file first and
    numbers them after the dimensions that precede them in it. (netCDF-C
    numbers them differently again: a group's after its subgroups'.)
    Groups are walked in the store's link order."""

    def __init__(self, phony_dims="access"):
        if phony_dims not in _PHONY_MODES:
            raise ValueError(f"unknown value {phony_dims!r} for phony_dims: use 'access' or 'sort' "
                             "(h5netcdf's two namings)")
        self.phony_dims = phony_dims
        self.next_dimid = None          # writing: the next free dimension id
        self.netcdf4 = None             # whether the file says it is netCDF-4
        self.views = {}
        self.phony_count = 0
        self.dims_seen = 0
        self._fallback = -1
        self._walked = False

    def fallback_dimid(self):
        # a scale without _Netcdf4Dimid gets the next id (h5netcdf's rule)
        self._fallback += 1
        return self._fallback

    def phony_number(self):
        if self.phony_dims == "sort":
            n = self.dims_seen
            self.dims_seen += 1
        else:
            n = self.phony_count
        self.phony_count += 1
        return n

    def creation_order(self, root):
        """netCDF-4 files list attributes in creation order (netCDF-C tracks
        it on every object); an HDF5 file that does not track it lists them
        by name. ``_NCProperties`` on the root group marks netCDF-4."""
        if self.netcdf4 is None:
            self.netcdf4 = "_NCProperties" in root.attrs
        return self.netcdf4

    def view(self, root, path):
        if self.phony_dims == "sort" and not self._walked:
            self._walked = True
            self._walk(root, "/")
        if path in self.views:
            return self.views[path]
        parent = None if path == "/" else self.view(root, posixpath.dirname(path))
        if path != "/" and path.rsplit("/", 1)[-1] not in parent.groups:
            raise OSError(f"group not found: {path}")
        view = self.views[path] = _GroupView(self, root, path, parent)
        return view

    def _walk(self, root, path):
        view = self.view(root, path)
        for name in view.groups:
            self._walk(root, posixpath.join(path, name))

    def forget(self):
        """Drop the views (after writing: they describe the old content)."""
        self.views.clear()


# ---------------------------------------------------------------------------
# lazy variable data
# ---------------------------------------------------------------------------

class H5LakeArrayWrapper(BackendArray):
    """One netCDF variable's values, read on demand.

    Holds the store (whose file manager pickles as the path and reopens)
    and the variable's HDF5 path, never an open handle, so it can be sent
    to dask workers. ``shape`` is the netCDF shape: along an unlimited
    dimension a variable may be shorter than its dimension, and the rest
    reads as the fill value (as netCDF-C and h5netcdf do)."""

    def __init__(self, datastore, path, shape, dtype, vlen_str=False):
        self.datastore = datastore
        self.path = path
        self.shape = tuple(shape)
        self.dtype = dtype
        self.vlen_str = vlen_str
        self._handle = None             # (root, dataset) of the last access

    def __getstate__(self):
        # The receiver reopens the store: what this process has pending
        # there (variables just defined) must be in it.
        root = self.datastore._manager.acquire()
        if root.mode != 'r':
            root.flush()
        state = self.__dict__.copy()
        state["_handle"] = None         # an open handle is the receiver's to make
        return state

    def get_array(self):
        root = self.datastore._manager.acquire()
        handle = self._handle
        if handle is None or handle[0] is not root:
            # A reopened file gives new handles; look the dataset up again.
            handle = self._handle = (root, root[self.path])
        return handle[1]

    def __getitem__(self, key):
        # h5lake takes integers, slices and one increasing index list per
        # selection, as h5py does: xarray splits anything else.
        return indexing.explicit_indexing_adapter(
            key, self.shape, indexing.IndexingSupport.OUTER_1VECTOR, self._getitem)

    def _getitem(self, key):
        dset = self.get_array()
        source = dset.asstr() if self.vlen_str else dset
        h5shape = dset.shape or ()
        if tuple(h5shape) == self.shape:
            # strings stay Python objects, as xarray expects of vlen data
            return np.asarray(source[key], dtype=object if self.vlen_str else None)
        return self._padded(dset, source, key, h5shape)

    def _padded(self, dset, source, key, h5shape):
        """Read ``key`` of a variable shorter than its netCDF shape: the
        stored part from the dataset, the rest as its fill value."""
        inner, place, out_shape, empty = [], [], [], False
        for k, n, stored in zip(key, self.shape, h5shape):
            if isinstance(k, (int, np.integer)):
                if k >= stored:
                    empty = True        # the whole selection is past the data
                inner.append(k)
                continue
            idx = np.arange(n)[k]       # increasing: slices step > 0, sorted lists
            m = int(np.searchsorted(idx, stored))
            out_shape.append(len(idx))
            place.append(slice(0, m))
            empty = empty or m == 0
            if isinstance(k, slice):
                inner.append(slice(int(idx[0]), int(idx[m - 1]) + 1, k.step or 1) if m else k)
            else:
                inner.append(idx[:m])
        fill = "" if self.vlen_str else dset.fillvalue
        out = np.full(out_shape, fill, dtype=object if self.vlen_str else dset.dtype)
        if not empty:
            out[tuple(place)] = source[tuple(inner)]
        return out

    def __setitem__(self, key, value):
        dset = self.get_array()
        dset[key] = value


# ---------------------------------------------------------------------------
# the data store
# ---------------------------------------------------------------------------

def _open_file(path, mode, **kwargs):
    from .files import File
    return File(path, mode, track_order=True if mode != "r" else None, **kwargs)


def _looks_like_store(path):
    return os.path.isdir(path) and os.path.exists(os.path.join(path, ".domain.json"))


class H5LakeStore(WritableCFDataStore):
    """An xarray data store over one group of an h5lake store: reads
    netCDF-4 as netCDF-C does, writes it as netCDF-C does.

    ``H5LakeStore.open(path, mode, group=...)`` opens it; ``path`` is a
    store directory or an ``s3://`` URL."""

    def __init__(self, manager, group=None, mode="r", layout=None):
        self._manager = manager
        self._group = _posix_group(group)
        self._mode = mode
        self._layout = layout if layout is not None else _Layout()
        # pending writes: dimensions whose coordinate variable makes the
        # scale, and variables whose scales are attached once all exist
        self._coord_names = set()
        self._coord_dims = {}
        self._written = []

    @classmethod
    def open(cls, filename, mode="r", group=None, phony_dims="access", file_kwargs=None):
        if mode not in ("r", "r+", "a", "w", "w-", "x"):
            raise ValueError(f"invalid mode {mode!r}: use 'r', 'r+', 'a', 'w', 'w-' or 'x'")
        filename = os.fspath(filename)
        manager = CachingFileManager(_open_file, filename, mode=mode, kwargs=file_kwargs or {})
        store = cls(manager, group=group, mode=mode, layout=_Layout(phony_dims))
        try:
            store._acquire()            # fail now, with the reason, not at first read
        except Exception:
            manager.close()
            raise
        return store

    def get_child_store(self, group):
        return type(self)(self._manager, group=posixpath.join(self._group, group),
                          mode=self._mode, layout=self._layout)

    def _acquire(self):
        root = self._manager.acquire()
        if self._group == "/":
            return root
        if self._mode == "r":
            if self._group not in root or not isinstance(root[self._group], _H5Group):
                raise OSError(f"group not found: {self._group} in {root.filename}")
            return root[self._group]
        group = root
        for part in self._group.strip("/").split("/"):
            if part not in group:
                # netCDF-4 groups keep their members in creation order
                group.create_group(part, track_order=True)
                self._layout.forget()   # the cached views do not list it
            group = group[part]
        return group

    @property
    def ds(self):
        return self._acquire()

    def _view(self, path=None):
        if self._mode != "r":
            self._acquire()             # creates the group when writing
        root = self._manager.acquire()
        return root, self._layout.view(root, path or self._group)

    # -- reading -----------------------------------------------------------
    def open_store_variable(self, root, view, var):
        dims = view.var_dims(root, var)
        shape = tuple(view.dim_size(root, d, n) for d, n in zip(dims, var.h5shape or ()))
        dset = root[var.path]
        sinfo = h5t.check_string_dtype(var.dtype)
        vlen_str = sinfo is not None and sinfo.length is None
        dtype = create_vlen_dtype(str) if vlen_str else var.dtype
        data = indexing.LazilyIndexedArray(
            H5LakeArrayWrapper(self, var.path, shape, dtype, vlen_str=vlen_str))
        attrs = _read_attributes(dset, self._layout.creation_order(root))

        encoding = {}
        vlen = h5t.check_vlen_dtype(var.dtype)
        encoding["dtype"] = str if vlen is str else var.dtype
        chunks = dset.chunks if shape else None
        if chunks:
            encoding["contiguous"] = False
            encoding["chunksizes"] = chunks
            # chunks={} in open_dataset: dask chunks follow storage chunks
            encoding["preferred_chunks"] = dict(zip(dims, chunks))
        else:
            encoding["contiguous"] = True
            encoding["chunksizes"] = None
        # netCDF4-python's filters() flags, then h5py's names
        encoding.update({"zlib": False, "szip": False, "bzip2": False, "blosc": False,
                         "zstd": False, "shuffle": dset.shuffle, "fletcher32": dset.fletcher32})
        compression = dset.compression
        if compression == "gzip":
            encoding["zlib"] = True
            encoding["complevel"] = dset.compression_opts
        elif compression is not None:
            if compression in ("szip", "bzip2", "blosc", "zstd"):
                encoding[compression] = True
            encoding["compression"] = compression
            encoding["compression_opts"] = dset.compression_opts
        encoding["source"] = root.filename
        encoding["original_shape"] = shape
        return Variable(dims, data, attrs, encoding)

    def get_variables(self):
        root, view = self._view()
        return FrozenDict((name, self.open_store_variable(root, view, var))
                          for name, var in view.vars.items())

    def get_attrs(self):
        root = self._manager.acquire()
        return FrozenDict(_read_attributes(self.ds, self._layout.creation_order(root)))

    def get_dimensions(self):
        root, view = self._view()
        return FrozenDict((name, d.size(root)) for name, d in view.dims.items())

    def get_parent_dimensions(self):
        root, view = self._view()
        dims = {}
        for v in reversed(list(view.chain())[1:]):
            dims.update((name, d.size(root)) for name, d in v.dims.items())
        return FrozenDict(dims)

    def get_encoding(self):
        root, view = self._view()
        return {"unlimited_dims": {name for name, d in view.dims.items() if d.unlimited}}

    def subgroups(self):
        """Paths of this group's subgroups, depth first (each before its own)."""
        root, view = self._view()
        out = []
        for name in view.groups:
            path = posixpath.join(self._group, name)
            out.append(path)
            out.extend(self.get_child_store(name).subgroups())
        return out

    # -- writing -----------------------------------------------------------
    def store(self, variables, attributes, check_encoding_set=frozenset(), writer=None,
              unlimited_dims=None):
        try:
            super().store(variables, attributes, check_encoding_set, writer, unlimited_dims)
            self._attach_scales()
        finally:
            self._layout.forget()

    def encode_variable(self, variable, name=None):
        # Unicode as variable-length strings unless encoded as characters,
        # bytes as character arrays (netCDF-4's mapping, xarray's coders).
        for coder in (EncodedStringCoder(allows_unicode=True), CharacterArrayCoder()):
            variable = coder.encode(variable, name=name)
        return variable

    def set_attribute(self, key, value):
        _write_attribute(self.ds, key, value)

    def set_dimensions(self, variables, unlimited_dims=None):
        # A dimension whose coordinate variable is among ``variables`` gets
        # that variable as its scale (made when the variable is); the others
        # get a NOT_A_VARIABLE scale now.
        self._coord_dims = {}
        self._coord_names = {name for name, v in variables.items() if v.dims and v.dims[0] == name}
        super().set_dimensions(variables, unlimited_dims=unlimited_dims)

    def set_dimension(self, name, length, is_unlimited=False):
        _check_name(name, "dimension")
        group = self.ds
        root, view = self._view()
        dimid = self._next_dimid(root)
        if name in self._coord_names:
            self._coord_dims[name] = (length, is_unlimited, dimid)
            return
        if name in group:
            raise ValueError(f"cannot create dimension {name!r} in {group.name}: the name is taken")
        scale = group.create_dataset(name, shape=(length,), dtype=">f4",
                                     maxshape=(None,) if is_unlimited else None,
                                     chunks=True if is_unlimited else None, track_order=True)
        scale.attrs.create("_Netcdf4Dimid", np.int32(dimid))
        scale.make_scale(NOT_A_VARIABLE.decode() + f"{length:10}")
        view.dims[name] = _Dim(name, length, is_unlimited, dimid, scale.name, scale.ref)

    def _next_dimid(self, root):
        """netCDF-C numbers dimensions across the whole file, in the order
        they are defined: past the largest id in the file, and never one
        another writer of the store has taken meanwhile (writers of
        different groups at once would otherwise number their new
        dimensions alike, and netCDF-C would give one group's variables
        another's dimensions)."""
        layout = self._layout
        if layout.next_dimid is None:
            top = -1

            def visit(_name, obj):
                nonlocal top
                if isinstance(obj, _H5Dataset) and "_Netcdf4Dimid" in obj.attrs:
                    top = max(top, int(np.asarray(obj.attrs["_Netcdf4Dimid"]).reshape(-1)[0]))
            root.visititems(visit)
            layout.next_dimid = top + 1
        dimid = root._fs.raw.claim_numbers("netcdf4-dimid", layout.next_dimid, 1)
        layout.next_dimid = dimid + 1
        return dimid

    def prepare_variable(self, name, variable, check_encoding=False, unlimited_dims=None):
        _check_name(name, "variable")
        group = self.ds
        root, view = self._view()
        unlimited = set(unlimited_dims or ()) | {
            n for n, d in view.all_dims().items() if d.unlimited}
        attrs = dict(variable.attrs)
        fillvalue = attrs.pop("_FillValue", None)
        dtype = _nc4_dtype(variable)
        encoding = _variable_encoding(variable, check_encoding, unlimited)
        dims = variable.dims
        is_coord = bool(dims) and dims[0] == name
        reattach = ()
        if is_coord and name not in self._coord_dims:
            existing = view.dims.get(name)
            if existing is not None and existing.path is not None and \
                    NOT_A_VARIABLE in _c_string(root[existing.path].attrs.get("NAME", b"")):
                # the dimension exists (mode="a") without a coordinate
                # variable: this variable becomes its scale
                reattach = self._drop_phantom(root, group, existing)
                self._coord_dims[name] = (existing.scale_size, existing.unlimited, existing.dimid)
            else:
                is_coord = False
        h5name = name
        if not is_coord and name in view.dims:
            h5name = NON_COORD_PREFIX + name
        if h5name in group:
            existing = group[h5name]
            new = np.dtype(dtype)
            same = (isinstance(existing, _H5Dataset) and existing.shape == variable.shape
                    and (existing.dtype == new
                         or existing.dtype.kind in "biuf" and new.kind in "biuf"))
            if self._mode in ("a", "r+") and same:
                # As netCDF-4's append (to_netcdf(mode="a")): the variable is
                # written over in place (numbers converted to its type) and
                # its attributes set again.
                for key, value in attrs.items():
                    _write_attribute(existing, key, value)
                return H5LakeArrayWrapper(self, existing.name, existing.shape,
                                          existing.dtype), variable.data
            raise ValueError(f"cannot write variable {name!r} in {group.name}: one of that name "
                             f"exists with shape {getattr(existing, 'shape', None)} and type "
                             f"{getattr(existing, 'dtype', None)}, this one {variable.shape} "
                             f"{np.dtype(dtype)} (write with mode='w' to replace the store)")

        shape = variable.shape
        maxshape = tuple(None if d in unlimited else n for d, n in zip(dims, shape))
        kwargs = {}
        if shape:
            kwargs.update(encoding)
            if None in maxshape:
                kwargs["maxshape"] = maxshape
                kwargs.setdefault("chunks", True)
            if kwargs.get("chunks") is not None and kwargs["chunks"] is not True:
                kwargs["chunks"] = tuple(int(c) for c in kwargs["chunks"])
        if fillvalue is not None and h5t.check_string_dtype(np.dtype(dtype)) is None:
            kwargs["fillvalue"] = np.array(fillvalue).astype(dtype)[()]
        dset = group.create_dataset(h5name, shape=shape, dtype=dtype, track_order=True, **kwargs)

        if is_coord:
            length, is_unlimited, dimid = self._coord_dims.pop(name)
            dset.attrs.create("_Netcdf4Dimid", np.int32(dimid))
            dset.make_scale(name)
            view.dims[name] = _Dim(name, shape[0], is_unlimited, dimid, dset.name, dset.ref)
            for ref, axis in reattach:
                root[ref].dims[axis].attach_scale(dset)
        if dims:
            # a scale takes no scales of its own (H5DS): a coordinate
            # variable gets only _Netcdf4Coordinates
            self._written.append((dset.name, dims, not is_coord))
        if fillvalue is not None:
            if h5t.check_string_dtype(np.dtype(dtype)) is not None:
                _write_attribute(dset, "_FillValue", fillvalue)
            else:
                dset.attrs.create("_FillValue", np.atleast_1d(np.array(fillvalue).astype(dtype)))
        for key, value in attrs.items():
            _write_attribute(dset, key, value)
        return H5LakeArrayWrapper(self, dset.name, shape, dset.dtype), variable.data

    @staticmethod
    def _drop_phantom(root, group, dim):
        """Remove a dimension's NOT_A_VARIABLE scale (netCDF-C and h5netcdf
        do the same when a coordinate variable is added for an existing
        dimension); returns the (dataset, axis) pairs it was attached to."""
        scale = root[dim.path]
        refs = [(r, int(a)) for r, a in scale.attrs.get("REFERENCE_LIST", [])]
        for ref, axis in refs:
            root[ref].dims[axis].detach_scale(scale)
        del group[dim.name]
        return refs

    def _attach_scales(self):
        """Attach each variable's dimension scales and write its
        ``_Netcdf4Coordinates`` (done once every scale of the group exists:
        a coordinate variable may come after the variables that use it)."""
        root, view = self._view()
        written, self._written = self._written, []
        for path, dims, attach in written:
            dset = root[path]
            found = [view.find_dim(d) for d in dims]
            missing = [d for d, f in zip(dims, found) if f is None or f.phony]
            if missing:
                raise ValueError(f"{path}: no dimension scale for {missing}")
            dset.attrs.create("_Netcdf4Coordinates",
                              np.array([f.dimid for f in found], dtype=np.int32))
            if attach:
                for axis, f in enumerate(found):
                    dset.dims[axis].attach_scale(root[f.path])

    def sync(self):
        pass                            # every h5lake write is durable when it returns

    def close(self, **kwargs):
        self._manager.close(**kwargs)


# -- write helpers ------------------------------------------------------------

def _check_name(name, what):
    if not isinstance(name, str) or not name:
        raise ValueError(f"invalid {what} name {name!r}: netCDF names are non-empty strings")
    if "/" in name:
        raise ValueError(f"invalid {what} name {name!r}: '/' separates groups in HDF5 paths")


def _nc4_dtype(variable):
    """The HDF5 dtype of an encoded variable (netCDF-4's types: no bool,
    no complex)."""
    enc_dtype = variable.encoding.pop("dtype", None)
    if enc_dtype is str or is_unicode_dtype(variable.dtype):
        return h5t.string_dtype()
    if variable.dtype.kind == "O" and h5t.check_vlen_dtype(variable.dtype) is str:
        return h5t.string_dtype()
    if variable.dtype.kind in "iufS":
        dtype = variable.dtype
        endian = variable.encoding.get("endian")
        if endian is not None:
            order = {"little": "<", "big": ">", "native": "="}.get(endian)
            if order is None:
                raise ValueError(f"invalid endian encoding {endian!r}: use 'little', 'big' "
                                 "or 'native'")
            if dtype.itemsize > 1:
                dtype = dtype.newbyteorder(order)
        return dtype
    raise ValueError(f"unsupported dtype for a netCDF-4 variable: {variable.dtype} (netCDF-4 "
                     "has integers, floats and strings; xarray encodes bool and datetimes)")


_VALID_ENCODINGS = frozenset((
    "zlib", "szip", "bzip2", "blosc", "zstd", "complevel", "compression", "compression_opts",
    "fletcher32", "contiguous", "chunksizes", "shuffle", "_FillValue", "dtype", "endian",
))


def _variable_encoding(variable, check, unlimited):
    """create_dataset keywords from a variable's netCDF encoding. Encodings
    the user passed (``check``) are validated; ones that came from reading
    a file are kept where they still fit (xarray's rule for its netCDF
    backends) and dropped where they do not."""
    encoding = dict(variable.encoding)
    for k in ("source", "original_shape", "preferred_chunks", "coordinates"):
        encoding.pop(k, None)
    if check:
        invalid = sorted(set(encoding) - _VALID_ENCODINGS)
        if invalid:
            raise ValueError(f"unexpected encoding parameters for the 'h5lake' backend: "
                             f"{invalid}. Valid encodings are: {sorted(_VALID_ENCODINGS)}")
    else:
        encoding = {k: v for k, v in encoding.items() if k in _VALID_ENCODINGS}
        chunks = encoding.get("chunksizes")
        if chunks is not None and any(
                c > n and d not in unlimited for c, n, d in zip(chunks, variable.shape, variable.dims)):
            del encoding["chunksizes"]   # from a file where the dimension was unlimited
        if any(d in unlimited for d in variable.dims):
            encoding.pop("contiguous", None)

    compression = None
    for flag in ("zlib", "szip", "bzip2", "blosc", "zstd"):
        if encoding.pop(flag, False):
            compression = "gzip" if flag == "zlib" else flag
    if compression is not None and encoding.get("compression") is None:
        encoding["compression"] = compression
    if encoding.get("compression") == "zlib":
        encoding["compression"] = "gzip"
    complevel = encoding.pop("complevel", None)
    if complevel is not None and encoding.get("compression") is not None:
        if check and encoding.get("compression_opts") not in (None, complevel):
            raise ValueError("'complevel' and 'compression_opts' encodings mismatch")
        encoding.setdefault("compression_opts", complevel)

    kwargs = {}
    if encoding.get("compression") is not None:
        kwargs["compression"] = encoding["compression"]
        if encoding.get("compression_opts") is not None:
            kwargs["compression_opts"] = encoding["compression_opts"]
    for k in ("shuffle", "fletcher32"):
        if encoding.get(k):
            kwargs[k] = True
    contiguous = encoding.get("contiguous", False)
    chunks = encoding.get("chunksizes")
    if contiguous:
        if check and chunks is not None:
            raise ValueError("encoding contiguous=True and chunksizes are exclusive")
        if any(d in unlimited for d in variable.dims):
            raise ValueError(f"a variable along an unlimited dimension cannot be contiguous: "
                             f"{variable.dims}")
    elif chunks is not None:
        kwargs["chunks"] = tuple(chunks)
    return kwargs


def _write_attribute(obj, key, value):
    """An attribute as netCDF-C writes it: numbers as one-element arrays,
    text as strings, lists as arrays."""
    if key in HIDDEN_ATTRS:
        raise ValueError(f"cannot write attribute {key!r}: the name is reserved for netCDF-4's "
                         "HDF5 encoding")
    if not isinstance(key, str) or not key:
        raise ValueError(f"invalid attribute name {key!r}: netCDF names are non-empty strings")
    if isinstance(value, (bool, np.bool_)):
        raise TypeError(f"invalid value for attribute {key!r}: {value!r} (netCDF-4 has no "
                        "boolean type; store it as an integer)")
    if isinstance(value, str):
        obj.attrs.create(key, value, dtype=h5t.string_dtype())
        return
    if isinstance(value, bytes):
        obj.attrs[key] = np.bytes_(value)
        return
    arr = np.asarray(value)
    if arr.dtype.kind == "U":
        obj.attrs.create(key, arr.astype(object), dtype=h5t.string_dtype())
        return
    if arr.dtype.kind == "O" and arr.size and all(isinstance(v, str) for v in arr.flat):
        obj.attrs.create(key, arr, dtype=h5t.string_dtype())
        return
    if arr.dtype.kind not in "iufS":
        raise TypeError(f"invalid value for attribute {key!r}: {value!r} (netCDF attributes "
                        "are numbers, strings or arrays of them)")
    if arr.ndim == 0 and arr.dtype.kind != "S":
        arr = arr.reshape(1)
    obj.attrs[key] = arr


# ---------------------------------------------------------------------------
# writing: to_h5lake
# ---------------------------------------------------------------------------

def _dump(dataset, store, encoding, unlimited_dims, writer):
    """xarray's dump_to_store: coordinates become the ``coordinates``
    attribute, the CF encoder runs in ``store.store``."""
    variables, attrs = conventions.encode_dataset_coordinates(dataset)
    check = set()
    for name, enc in (encoding or {}).items():
        variables[name].encoding = dict(enc)
        check.add(name)
    store.store(variables, attrs, check, writer, unlimited_dims=unlimited_dims)


def _check_attrs(dataset):
    """Refuse what netCDF cannot store before anything is written (xarray's
    rules for its netCDF writers)."""
    valid = (str, bytes, numbers.Number, np.ndarray, np.number, list, tuple)
    for where, attrs in [("the dataset", dataset.attrs)] + [
            (f"variable {k!r}", v.attrs) for k, v in dataset.variables.items()]:
        for key, value in attrs.items():
            if not isinstance(key, str) or not key:
                raise ValueError(f"invalid attribute name {key!r} on {where}: netCDF names are "
                                 "non-empty strings")
            if isinstance(value, (bool, np.bool_)):
                raise TypeError(f"invalid value for attribute {key!r} on {where}: {value!r} "
                                "(netCDF-4 has no boolean type)")
            if not isinstance(value, valid):
                raise TypeError(f"invalid value for attribute {key!r} on {where}: {value!r} "
                                "(netCDF attributes are numbers, strings or lists/arrays of them)")
    for name in dataset.variables:
        _check_name(name, "variable")


def to_h5lake(dataset, path, mode="w", group=None, encoding=None, unlimited_dims=None):
    """Write an ``xarray.Dataset`` (or ``DataTree``) into an h5lake store
    as netCDF-4 (what ``Dataset.to_netcdf`` writes, in the store's HDF5
    model): read it back with ``xarray.open_dataset(path, engine="h5lake")``,
    or export it with ``h5lake.get(path, "out.nc")`` for any netCDF-4 reader.

    ``mode``: ``"w"`` create (replacing an existing store), ``"w-"``/``"x"``
    create (fail if it exists), ``"a"``/``"r+"`` add to an existing store
    (new groups or variables; an existing variable of the same shape and type
    is written over in place, as ``to_netcdf(mode="a")`` does).
    ``group``: the group to write into (created as needed). ``encoding``:
    per-variable netCDF encodings as for ``to_netcdf`` (``dtype``,
    ``_FillValue``, ``scale_factor``, ``add_offset``, ``units``,
    ``calendar``, ``zlib``/``complevel``, ``compression``, ``shuffle``,
    ``fletcher32``, ``chunksizes``, ``contiguous``); for a DataTree, a dict
    of those per group path. ``unlimited_dims``: dimensions to make
    unlimited (default: ``dataset.encoding["unlimited_dims"]``); for a
    DataTree, per group path. Dask-backed variables are written chunk by
    chunk by dask (threads, processes or a distributed cluster)."""
    from xarray import DataTree, Dataset

    if isinstance(dataset, DataTree):
        items = [(node.path, node.to_dataset(inherit=False)) for node in dataset.subtree]
        encodings = encoding or {}
        unknown = set(encodings) - {p for p, _ in items}
        if unknown:
            raise ValueError(f"encoding given for groups that are not in the tree: {sorted(unknown)}")
        unlimited = unlimited_dims or {}
        jobs = [(posixpath.join(_posix_group(group), p.lstrip("/")) if p != "/" else _posix_group(group),
                 ds, encodings.get(p), unlimited.get(p)) for p, ds in items]
    elif isinstance(dataset, Dataset):
        jobs = [(_posix_group(group), dataset, encoding, unlimited_dims)]
    else:
        raise TypeError(f"to_h5lake writes an xarray Dataset or DataTree, not {type(dataset).__name__}")
    if mode not in ("w", "w-", "x", "a", "r+"):
        raise ValueError(f"invalid mode {mode!r}: use 'w', 'w-', 'x', 'a' or 'r+'")
    if mode in ("w-", "x") and os.path.exists(os.fspath(path)):
        raise FileExistsError(f"{os.fspath(path)} exists (mode={mode!r} never replaces a store)")

    for _, ds, enc, _ in jobs:
        _check_attrs(ds)
        for name in enc or {}:
            if name not in ds.variables:
                raise ValueError(f"encoding given for {name!r}, which is not a variable of the "
                                 "dataset")
    from .base import NewStoreOrNothing
    with NewStoreOrNothing(path):
        _write_jobs(path, mode, jobs)


def _write_jobs(path, mode, jobs):
    store = H5LakeStore.open(path, mode="w" if mode in ("w-", "x") else mode)
    try:
        fresh = mode in ("w", "w-", "x")
        if fresh:
            # netCDF-C's provenance attribute: marks the file as netCDF-4
            from .. import __version__
            props = f"version=2,h5lake={__version__}"
            store.ds.attrs.create("_NCProperties", np.bytes_(props.encode("ascii")))
        writer = ArrayWriter()
        for gpath, ds, enc, unlim in jobs:
            child = store if gpath == "/" else store.get_child_store(gpath)
            if unlim is None:
                unlim = ds.encoding.get("unlimited_dims", None)
            if isinstance(unlim, str):
                unlim = [unlim]
            unlim = [d for d in (unlim or ()) if d in ds.dims]
            _dump(ds, child, enc, unlim, writer)
        writer.sync()
    finally:
        store.close()


# ---------------------------------------------------------------------------
# the entry point
# ---------------------------------------------------------------------------

class H5LakeBackendEntrypoint(BackendEntrypoint):
    """xarray's ``engine="h5lake"``: netCDF-4 (and plain HDF5) in an h5lake
    store — a local store directory or an ``s3://`` URL.

    ``group``: the group to open ("a/b"); ``phony_dims``: how axes
    without dimension scales are named, ``"access"`` or ``"sort"``, as in
    ``engine="h5netcdf"``."""

    description = "Open netCDF-4 and HDF5 data in h5lake stores (local directories or S3)"
    open_dataset_parameters = (
        "filename_or_obj", "mask_and_scale", "decode_times", "concat_characters",
        "decode_coords", "drop_variables", "use_cftime", "decode_timedelta", "group",
        "phony_dims",
    )
    supports_groups = True

    def guess_can_open(self, filename_or_obj):
        if isinstance(filename_or_obj, os.PathLike):
            filename_or_obj = os.fspath(filename_or_obj)
        if not isinstance(filename_or_obj, str):
            return False
        return filename_or_obj.rstrip("/").endswith(".h5l") or _looks_like_store(filename_or_obj)

    def open_dataset(self, filename_or_obj, *, mask_and_scale=True, decode_times=True,
                     concat_characters=True, decode_coords=True, drop_variables=None,
                     use_cftime=None, decode_timedelta=None, group=None, phony_dims="access"):
        store = H5LakeStore.open(filename_or_obj, mode="r", group=group, phony_dims=phony_dims)
        try:
            return StoreBackendEntrypoint().open_dataset(
                store, mask_and_scale=mask_and_scale, decode_times=decode_times,
                concat_characters=concat_characters, decode_coords=decode_coords,
                drop_variables=drop_variables, use_cftime=use_cftime,
                decode_timedelta=decode_timedelta)
        except Exception:
            store.close()
            raise

    def open_groups_as_dict(self, filename_or_obj, *, mask_and_scale=True, decode_times=True,
                            concat_characters=True, decode_coords=True, drop_variables=None,
                            use_cftime=None, decode_timedelta=None, group=None,
                            phony_dims="access", **kwargs):
        if kwargs:
            raise TypeError(f"unexpected keyword arguments for engine='h5lake': {sorted(kwargs)}")
        store = H5LakeStore.open(filename_or_obj, mode="r", group=group, phony_dims=phony_dims)
        base = store._group
        out = {}
        try:
            for path in [base] + store.subgroups():
                child = store if path == base else type(store)(
                    store._manager, group=path, mode="r", layout=store._layout)
                ds = StoreBackendEntrypoint().open_dataset(
                    child, mask_and_scale=mask_and_scale, decode_times=decode_times,
                    concat_characters=concat_characters, decode_coords=decode_coords,
                    drop_variables=drop_variables, use_cftime=use_cftime,
                    decode_timedelta=decode_timedelta)
                out["/" if path == base else "/" + posixpath.relpath(path, base)] = ds
        except Exception:
            store.close()
            raise
        return out

    def open_datatree(self, filename_or_obj, **kwargs):
        from xarray.backends.common import datatree_from_dict_with_io_cleanup
        return datatree_from_dict_with_io_cleanup(self.open_groups_as_dict(filename_or_obj, **kwargs))
