"""Datasets (h5py's ``_hl/dataset.py``).

Data path: fixed-size types never go element by element through Python.
A read allocates the output in the STORED (packed) dtype, hands the whole
selection to ``RawFile.dataset_read`` (Rust releases the GIL, plans chunks,
decodes in parallel and scatters into the buffer), then drops the integer-
indexed axes.  A write converts/broadcasts the value once with numpy and
hands one C-contiguous buffer to ``dataset_write``.  Variable-length types
(vlen strings and sequences at the top level) go through the ``*_vlen``
calls as lists of bytes.
"""

from __future__ import annotations

import json
import platform
import posixpath
import sys
import warnings

import numpy as np

from .. import _core
from ..h5py_warnings import H5pyDeprecationWarning
from . import filters, h5t, records
from . import selections as sel
from .base import (ClosedRuntimeError, HLObject, array_for_new_object, find_item_type,
                   ENGINE_ERRORS, join_name, named, product)

Empty = h5t.Empty

# Slab size used when copying whole datasets (Group.copy)
_COPY_SLAB_BYTES = 64 * 1024 * 1024

#: A bare 0-9 as ``compression=`` means gzip at that level (h5py's legacy
#: rule, and its name for it).
_LEGACY_GZIP_COMPRESSION_VALS = frozenset(range(10))


class H5LakeDeprecationWarning(H5pyDeprecationWarning):
    """h5lake's deprecations: an ``H5pyDeprecationWarning``, so filters
    written for h5py's catch them too."""


class _ResizeError(ValueError, RuntimeError):
    """Resize beyond maxshape: h5py raises RuntimeError, the engine contract
    says ValueError; this is both."""


# ---------------------------------------------------------------------------
# creation
# ---------------------------------------------------------------------------

class _DsetPlan:
    """A validated dataset creation: nothing is written until :meth:`create`."""

    def __init__(self, type_doc, shape, maxshape, dcpl, dtype, payload, committed=None):
        self.type_doc = type_doc
        self.shape = shape
        self.maxshape = maxshape
        self.dcpl = dcpl
        self.dtype = dtype
        self.payload = payload      # None, ndarray in stored dtype, or list of bytes (vlen)
        # The committed datatype given as the type: (its file state, id).
        self.committed = committed

    def create(self, parent, base):
        fs = parent._fs
        raw = fs.raw
        type_doc = self.type_doc
        if self.committed is not None and self.committed[0].abspath == fs.abspath \
                and isinstance(type_doc, dict):
            # Made with a committed datatype of this file: the type names
            # it, as HDF5 links the two (and HSDS's type gives its id).
            type_doc = dict(type_doc, id=self.committed[1])
        did = raw.create_dataset(json.dumps(type_doc),
                                 json.dumps(h5t.shape_json(self.shape, self.maxshape)),
                                 json.dumps(self.dcpl))
        try:
            if self.payload is not None and self.shape is not None and product(self.shape) > 0:
                selection = [(0, int(n), 1) for n in self.shape]
                if isinstance(self.payload, list):
                    raw.dataset_write_vlen(did, selection, self.payload)
                else:
                    raw.dataset_write(did, selection, self.payload)
            if base is not None:
                raw.link_create(parent._oid, base, json.dumps({"class": "H5L_TYPE_HARD", "id": did}))
        except BaseException:
            raw.delete_object(did)
            raise
        return Dataset(fs, did, join_name(parent._name, base) if base is not None else None)


def prepare_dset(shape=None, dtype=None, data=None, chunks=None, compression=None,
                 shuffle=None, fletcher32=None, maxshape=None, compression_opts=None,
                 fillvalue=None, scaleoffset=None, track_times=False, external=None,
                 track_order=None, dcpl=None, dapl=None, efile_prefix=None,
                 virtual_prefix=None, allow_unknown_filter=False, rdcc_nslots=None,
                 rdcc_nbytes=None, rdcc_w0=None, *, fill_time=None, layout=None, stats=None):
    """Validate create_dataset arguments (h5py's make_new_dset rules) and
    convert the data; returns a :class:`_DsetPlan`.

    ``layout="columnar"`` (h5lake's own) stores each chunk of a compound
    dataset as one Parquet object, one column per member."""
    from .datatype import Datatype

    if layout not in (None, "columnar"):
        raise ValueError(f"layout must be 'columnar' or None (row layout), not {layout!r}")

    if data is not None and not isinstance(data, Empty):
        spec = dtype.dtype if isinstance(dtype, Datatype) else dtype
        data = array_for_new_object(data, specified_dtype=spec)

    if shape is None:
        if data is None:
            if dtype is None:
                raise TypeError("One of data, shape or dtype must be specified")
            data = Empty(dtype.dtype if isinstance(dtype, Datatype) else dtype)
        shape = data.shape
    else:
        shape = (shape,) if isinstance(shape, (int, np.integer)) else tuple(int(s) for s in shape)
        if any(s < 0 for s in shape):
            raise OverflowError("can't convert negative value to hsize_t")
        if data is not None and not isinstance(data, Empty) and product(shape) != product(data.shape):
            raise ValueError("Shape tuple is incompatible with data")

    if isinstance(maxshape, (int, np.integer)) and not isinstance(maxshape, bool):
        maxshape = (int(maxshape),)
    if maxshape is not None and maxshape is not True:
        maxshape = tuple(maxshape)

    committed = None
    if isinstance(dtype, Datatype):
        committed = (dtype._fs, dtype._oid)
        dtype = dtype.dtype
    elif dtype is None and data is None:
        warnings.warn(
            "Creating a dataset without passing data or dtype is deprecated. "
            "Pass an explicit dtype. Using dtype='f4' will keep the "
            "current default behaviour.", H5LakeDeprecationWarning, stacklevel=3)
        dtype = np.dtype("=f4")
    elif dtype is None:
        dtype = data.dtype
    else:
        dtype = np.dtype(dtype)
    if dtype.itemsize == 0 and dtype.kind in "SUV" and dtype.names is None:
        # ('S', bytes, np.void: no size given.)
        raise ValueError("Size must be positive (size must be positive)")

    if track_times is None:
        track_times = False
    if track_times not in (True, False):
        raise TypeError("track_times must be either True or False")
    if track_order not in (None, True, False):
        raise TypeError("track_order must be either True or False")
    from .config import default_track_order
    track_order = default_track_order(track_order)
    if external:
        raise TypeError("external storage is not supported by h5lake")

    if isinstance(data, Empty):
        shape = None
    if shape is not None and maxshape is not None and maxshape is not True \
            and len(maxshape) != len(shape):
        raise ValueError("'maxshape' must have same rank as dataset shape")

    snappy = layout == "columnar" and compression == "snappy"
    if snappy:
        # Parquet's own codec (HDF5 has no snappy filter): given to the
        # columnar chunks by name, with no options.
        if compression_opts is not None:
            raise ValueError("snappy compression accepts no options")
        compression = None
        chunks = True if chunks is None else chunks
    props = filters.generate_dcpl(shape, dtype, chunks, compression, compression_opts,
                                  shuffle, fletcher32, maxshape, scaleoffset, fillvalue,
                                  track_times)
    if layout == "columnar":
        if dtype.names is None:
            raise TypeError(f"a columnar dataset holds a compound type (one column per member), "
                            f"not {dtype}")
        if shape is None:
            raise TypeError("a columnar dataset needs a shape")
        if chunks is None or chunks is False:
            props = filters.generate_dcpl(shape, dtype, True, compression, compression_opts,
                                          shuffle, fletcher32, maxshape, scaleoffset, fillvalue,
                                          track_times)
        props["h5lake"] = {"chunkFormat": "parquet"}
        if snappy:
            props.setdefault("filters", []).append({"class": "H5Z_FILTER_SNAPPY", "id": 32003,
                                                    "name": "snappy"})
    from .query import stats_setting
    setting = stats_setting(stats)
    if setting is not None:
        props.setdefault("h5lake", {})["stats"] = setting
    if track_order:
        props["CreateOrder"] = 1
    if fill_time is not None:
        # h5py's names; stored as HSDS's creation property, read back by the
        # connector's creation property lists. "never": unwritten elements
        # are undefined (h5lake reads them as zero), not the fill value.
        times = {"ifset": None, "alloc": "H5D_FILL_TIME_ALLOC", "never": "H5D_FILL_TIME_NEVER"}
        if not isinstance(fill_time, str) or fill_time not in times:
            raise ValueError("fill_time must be one of the following choices: 'alloc', 'never' or 'ifset', "
                             "but it is %s." % fill_time)
        if times[fill_time]:
            props["fillTime"] = times[fill_time]
    type_doc = h5t.dtype_to_hsds(dtype)     # TypeError for dtypes HDF5 cannot hold

    payload = None
    if data is not None and not isinstance(data, Empty) and shape is not None:
        if data.shape != shape:
            data = data.reshape(shape)
        payload = _convert_for_write(data, dtype)
    return _DsetPlan(type_doc, shape, maxshape, props, dtype, payload, committed)


# ---------------------------------------------------------------------------
# value conversion helpers
# ---------------------------------------------------------------------------

def _stored_dtype(dtype):
    """The dtype of the bytes the engine reads and writes for ``dtype``:
    compounds packed, object references (also as compound members) as
    HSDS's NUL-padded ids."""
    if h5t.is_ref(dtype):
        return np.dtype("S%d" % h5t._REF_BYTES)
    if dtype.names is not None and _holds_refs(dtype):
        return np.dtype([(n, _stored_dtype(dtype.fields[n][0])) for n in dtype.names])
    if dtype.subdtype is not None and _holds_refs(dtype):
        return np.dtype((_stored_dtype(dtype.subdtype[0]), dtype.subdtype[1]))
    return h5t.packed_dtype(dtype)


def _holds_refs(dtype):
    """Whether an object reference is a member of ``dtype`` (at any depth)."""
    if h5t.is_ref(dtype):
        return True
    if dtype.names is not None:
        return any(_holds_refs(dtype.fields[n][0]) for n in dtype.names)
    return dtype.subdtype is not None and _holds_refs(dtype.subdtype[0])


def _engine_buffer(arr, mshape, stored):
    """View of ``arr`` (shape ``mshape`` + array-dtype axes) the engine can
    take: for a top-level array type, one opaque element of the type's size
    per selected point (numpy folds array dtypes into the shape)."""
    if stored.subdtype is None:
        return arr
    vt = np.dtype((np.void, stored.itemsize))
    return arr.reshape(tuple(mshape) + (-1,)).view(vt).reshape(tuple(mshape))


def _objects_to_none(arr):
    """Sets the object members (references, variable-length values) of
    the compound array ``arr``, nested ones too, to None: h5py's default
    fill for them (numpy's zeros hold 0 there)."""
    for n in arr.dtype.names or ():
        sub = arr[n]
        if sub.dtype.names is not None:
            _objects_to_none(sub)
        elif sub.dtype.kind == "O":
            arr[n] = None


def _vlen_kind(dtype):
    """'str' (strings and bytes), 'regref' (region references, stored as
    h5json's text) or the base dtype for top-level vlen types, else None."""
    if h5t.is_regionref(dtype):
        return 'regref'
    if not h5t.is_vlen(dtype):
        return None
    v = h5t.check_vlen_dtype(dtype)
    if v is str or v is bytes:
        return 'str'
    return np.dtype(v)


def _member_regionref(dtype):
    """The name of a member of compound ``dtype`` that is, or holds (nested
    compounds), region references; None if none does."""
    for name in dtype.names or ():
        sub = dtype.fields[name][0]
        if h5t.is_regionref(sub.base) or (sub.base.names and _member_regionref(sub.base)):
            return name
    return None


def _uses_records(dtype):
    """Whether elements of ``dtype`` are stored as records (see records.py):
    compounds with variable-length members, sequences of such."""
    if dtype.names is not None:
        return h5t.has_vlen(dtype)
    kind = _vlen_kind(dtype)
    return kind is not None and kind not in ('str', 'regref') and h5t.has_vlen(kind)


def _encode_records(val, dtype, kept=()):
    values = records.encode(val, dtype, kept)
    if dtype.names is None:       # a top-level sequence: the engine keeps its payload only
        values = [v[4:] for v in values]
    return values


def _decode_records(values, dtype, shape):
    if dtype.names is None:
        values = [len(v).to_bytes(4, "little") + v for v in values]
    return records.decode(values, dtype, shape)


def _encode_vlen(val, dtype):
    """Object array of Python values -> list of bytes (C order)."""
    kind = _vlen_kind(dtype)
    out = []
    if kind == 'str':
        info = h5t.check_string_dtype(dtype)
        enc = 'utf-8' if info is None or info.encoding == 'utf-8' else 'ascii'
        for x in val.reshape(-1):
            if isinstance(x, bytes):
                out.append(bytes(x))
            elif isinstance(x, str):
                out.append(x.encode('utf-8' if enc == 'utf-8' else 'ascii', 'surrogateescape'))
            elif isinstance(x, np.ndarray) and x.dtype.kind in 'SU' and x.ndim == 0:
                x = x[()]
                out.append(x if isinstance(x, bytes) else str(x).encode('utf-8'))
            else:
                raise TypeError("Can't implicitly convert non-string objects to strings")
            if b'\0' in out[-1]:
                # (As h5py: an HDF5 variable-length string ends at its first NUL.)
                raise ValueError("VLEN strings do not support embedded NULLs")
    elif kind == 'regref':
        for x in val.reshape(-1):
            if x is not None and not isinstance(x, h5t.RegionReference):
                raise TypeError("Can't convert incompatible object to HDF5 region reference")
            stored = x._stored() if x is not None else None
            out.append(json.dumps(stored).encode('ascii') if stored is not None else b'')
    elif h5t.is_ref(kind):
        # Sequences of object references: each as its stored bytes (the
        # objects' ids), never the Python objects' addresses.
        for x in val.reshape(-1):
            out.append(b'' if x is None else
                       h5t.refs_to_stored(np.asarray(x, dtype=object).reshape(-1)).tobytes())
    else:
        for x in val.reshape(-1):
            if x is None:
                out.append(b'')
            else:
                out.append(np.ascontiguousarray(x, dtype=kind).reshape(-1).tobytes())
    return out


def _decode_vlen(values, dtype, shape):
    """List of bytes from the engine -> object array as h5py returns it
    (its dtype the dataset's, vlen metadata and all, as h5py 3's reads)."""
    kind = _vlen_kind(dtype)
    arr = np.empty(len(values), dtype=dtype)
    if kind == 'str':
        arr[:] = values if values else []
    elif kind == 'regref':
        for i, b in enumerate(values):
            arr[i] = h5t.RegionReference._from_stored(bytes(b))
    elif h5t.is_ref(kind):
        for i, b in enumerate(values):
            refs = h5t.refs_from_stored(np.frombuffer(b, dtype="S%d" % h5t._REF_BYTES))
            arr[i] = np.asarray(refs, dtype=kind)
    else:
        for i, b in enumerate(values):
            arr[i] = np.frombuffer(b, dtype=kind).copy()
    return arr.reshape(shape)


# HDF5's conversion of numeric values (what h5py gets when it hands an ndarray
# of another type to H5Dwrite / H5Dread / H5Awrite), vectorised:
#
# * integer -> integer saturates at the target's bounds -- except that, when
#   exactly one side is in native byte order, HDF5 reinterprets same-size
#   signed <-> unsigned values (-1 -> 65535);
# * float -> integer truncates toward zero and saturates (+-inf too).  Native
#   types go through HDF5's "hard" converters: a range check against the
#   bounds cast to the source type, then C's cast, so NaN, and a value equal
#   to a bound that rounded outward (2.0**63 -> int64), get what the cast
#   instruction gives -- we reproduce x86-64 (elsewhere: saturate, NaN -> 0);
#   float16 into an integer type wider than its range is not checked at all
#   (numpy's cast is the same C cast).  Non-native sides ("soft" converter):
#   saturation, NaN -> 0;
# * float/integer -> narrower float: beyond the target's max -> +-inf (numpy
#   would round values just above max down to max);
# * real <-> complex, float -> bool, string <-> number, object -> number: no
#   conversion path (OSError, as h5py raises from H5Dwrite); numpy unicode
#   sources: TypeError (h5py cannot make an HDF5 type for them).

_X86 = platform.machine().lower() in ('x86_64', 'amd64', 'i386', 'i686', 'x86')
_NUMERIC = 'biufc'


def _no_path(src, dst, what='write'):
    """Raise like h5py when HDF5 has no conversion from ``src`` to ``dst``."""
    sk, dk = src.kind, dst.kind
    if sk == 'U':
        raise TypeError("No conversion path for dtype: %r" % (src,))
    if dk not in _NUMERIC and sk not in _NUMERIC and sk + dk not in ('OS', 'SV', 'VS'):
        return
    bad = ((sk == 'c') != (dk == 'c') and sk in _NUMERIC and dk in _NUMERIC) \
        or (dk == 'b' and sk in 'fc') or (sk == 'O' and dk == 'S') \
        or (sk + dk in ('SV', 'VS')) \
        or (sk in 'OSV' and dk in _NUMERIC) or (dk in 'SV' and sk in _NUMERIC)
    if bad:
        raise OSError("Can't %s data (no appropriate function for conversion path)" % what)


def _float_to_int(val, dt):
    info = np.iinfo(dt)
    ftype = val.dtype.type
    hard = val.dtype.isnative and dt.isnative
    with np.errstate(invalid='ignore', over='ignore'):
        out = val.astype(dt)
        if val.size == 0:
            return out
        if hard and val.dtype.itemsize == 2 and float(np.finfo(val.dtype).max) <= info.max:
            return out                         # HDF5 checks nothing: C's cast
        mn, mx = val.min(), val.max()          # NaN anywhere: both NaN
        if float(mn) >= float(info.min) and float(mx) < float(info.max + 1):
            return out                         # everything fits: plain truncation
        if hard:
            hi = val > ftype(info.max)         # C: *s > (ST)D_MAX
            lo = val < ftype(info.min)
        else:
            hi = val >= float(info.max + 1)
            lo = val < float(info.min)
        v = val if val.dtype.itemsize >= 8 else val.astype(np.float64)
        fits = (v >= float(info.min)) & (v < float(info.max + 1))
    if hi.any():
        out[hi] = info.max
    if lo.any():
        out[lo] = info.min
    ub = ~(fits | hi | lo)                      # NaN, or a bound that rounded outward
    if ub.any():
        nan = np.isnan(val)
        if hard and _X86:
            # cvttsd2si's "integer indefinite" (0x80...0) seen through the cast
            if info.min < 0 and dt.itemsize >= 4:
                out[ub] = info.min
            else:
                out[ub] = 0
                if dt.itemsize == 8:            # uint64: NaN takes the < 2**63 path
                    out[ub & nan] = 1 << 63
        else:
            out[ub & ~nan & (v > 0)] = info.max
            out[ub & ~nan & (v < 0)] = info.min
            out[ub & nan] = 0
    return out


def _to_narrower_float(val, dt):
    """Cast to float ``dt``; values beyond its max become +-inf (HDF5)."""
    fmax = np.finfo(dt).max
    with np.errstate(over='ignore', invalid='ignore'):
        out = val.astype(dt)
        if val.dtype.kind in 'iu' and np.iinfo(val.dtype).max <= fmax:
            return out                         # no integer of this type overflows
        if val.size == 0 or (val.dtype.kind != 'c' and -fmax <= val.min() and val.max() <= fmax):
            return out                         # nothing beyond the target's range
        if val.dtype.kind == 'c':
            for part_in, part_out in ((val.real, out.real), (val.imag, out.imag)):
                part_out[part_in > fmax] = np.inf
                part_out[part_in < -fmax] = -np.inf
        else:
            out[val > fmax] = np.inf
            out[val < -fmax] = -np.inf
    return out


def _complex_as_struct(dt):
    """HDF5 (and h5py) see a complex number as the compound {r, i}."""
    part = np.dtype('f%d' % (dt.itemsize // 2)).newbyteorder(dt.byteorder)
    return np.dtype([('r', part), ('i', part)])


def _hdf5_cast(val, dt, what='write'):
    """``val`` (ndarray) converted to ``dt`` as HDF5 converts on write (or
    read).  Same dtype: returned as is (no copy)."""
    src = val.dtype
    if src == dt and src.metadata == dt.metadata:
        return val
    if dt.names is not None and src.kind == 'c':
        val = np.ascontiguousarray(val).view(_complex_as_struct(src))
        src = val.dtype
    elif src.names is not None and dt.kind == 'c':
        return _struct_to_stored(val, _complex_as_struct(dt), what).view(dt)
    _no_path(src, dt, what)
    sk, dk = src.kind, dt.kind
    if dt.names is not None and src.names is not None:
        return _struct_to_stored(val, dt, what)
    if sk not in _NUMERIC or dk not in _NUMERIC or sk == 'b' or np.can_cast(src, dt, 'safe'):
        return val.astype(dt)
    if dk in 'iu':
        if sk == 'f':
            return _float_to_int(val, dt)
        if src.itemsize == dt.itemsize and src.isnative != dt.isnative:
            return val.astype(dt)               # HDF5's byte-swapping converter: reinterpreted
        sinfo, dinfo = np.iinfo(src), np.iinfo(dt)
        lo, hi = max(sinfo.min, dinfo.min), min(sinfo.max, dinfo.max)
        if (lo > sinfo.min or hi < sinfo.max) and val.size and \
                (int(val.min()) < lo or int(val.max()) > hi):
            val = np.clip(val, src.type(lo), src.type(hi))
        return val.astype(dt)
    if dk in 'fc':
        return _to_narrower_float(val, dt)
    return val.astype(dt)


def _struct_to_stored(val, stored, what='write'):
    """Convert a structured array to ``stored`` matching fields by NAME
    (numpy would match by position; HDF5 converts by name), each field
    with HDF5's rules."""
    out = np.zeros(val.shape, dtype=stored)
    for n in stored.names:
        if n in val.dtype.names:
            out[n] = _field_to_stored(val[n], stored.fields[n][0], what)
    return out


def _covers(stored, given):
    """Whether the compound type ``given`` has every member of ``stored``,
    the members of nested compounds too."""
    for n in stored.names:
        if n not in given.names:
            return False
        s, g = stored.fields[n][0], given.fields[n][0]
        if s.names is not None and g.names is not None and not _covers(s, g):
            return False
    return True


def _assign_members(target, val, names):
    """Writes the members ``names`` of the structured ``val`` into
    ``target`` by name, as HDF5 converts compounds: a nested compound
    member by member, and what ``val`` lacks keeps what ``target`` holds.
    ``val`` is broadcast to ``target``'s shape (TypeError if it cannot)."""
    try:
        fits = np.broadcast_shapes(val.shape, target.shape) == target.shape
    except ValueError:
        fits = False
    if not fits:
        raise TypeError("Can't broadcast %s -> %s" % (val.shape, target.shape))
    for n in names:
        fdt = target.dtype.fields[n][0]
        v = val[n]
        if fdt.names is not None and v.dtype.names is not None:
            _assign_members(target[n], v, [x for x in v.dtype.names if x in fdt.names])
        else:
            target[n] = _field_to_stored(v, fdt)


def _field_to_stored(v, fdt, what='write'):
    """One member's values ``v`` as the member type ``fdt`` holds them."""
    if h5t.is_ref(fdt) and v.dtype.kind == 'S':
        return h5t.refs_from_stored(v)                      # read: ids -> References
    if h5t.is_ref(v.dtype) and fdt.kind == 'S':
        return h5t.refs_to_stored(v)                        # write: References -> ids
    if fdt.subdtype is not None and v.dtype.subdtype is None and \
            v.shape[v.ndim - len(fdt.shape):] == fdt.shape:
        return _hdf5_cast(v, fdt.base, what)
    if fdt.subdtype is None:
        return _hdf5_cast(v, fdt, what)
    return v


def _to_stored(val, stored):
    if val.dtype == stored:
        return val
    if val.dtype.kind == 'O' and stored.kind == 'S' and stored.itemsize == h5t._REF_BYTES \
            and all(isinstance(x, h5t.Reference) for x in val.reshape(-1)):
        return h5t.refs_to_stored(val)
    if val.dtype.names is not None and stored.names is not None:
        return _struct_to_stored(val, stored)
    return _hdf5_cast(val, stored)


def _convert_for_write(data, dtype):
    """Whole-dataset payload for creation: list of bytes or stored array."""
    if data.dtype.kind == 'U':
        # h5py has no HDF5 type for numpy unicode arrays (whatever the dtype)
        raise TypeError("No conversion path for dtype: %r" % (data.dtype,))
    if _uses_records(dtype):
        return _encode_records(data, dtype)
    if _vlen_kind(dtype) is not None:
        if _vlen_kind(dtype) == 'str':
            obj = np.asarray(data, dtype=object)
        else:
            obj = data if data.dtype.kind == 'O' else _pack_vlen_seq(data, dtype)
        return _encode_vlen(obj, dtype)
    if h5t.has_vlen(dtype):
        raise TypeError("h5lake cannot write array types with variable-length members yet")
    stored = _stored_dtype(dtype)
    if data.dtype.kind == 'O' and dtype.kind == 'S':
        # h5py made the str/bytes objects a vlen string: HDF5 can't convert
        # that to a fixed-length string
        raise OSError("Can't write data (no appropriate function for conversion path)")
    if dtype.subdtype is not None:
        base_arr = np.ascontiguousarray(data, dtype=stored.subdtype[0])
        mshape = base_arr.shape[:base_arr.ndim - len(stored.subdtype[1])]
        return _engine_buffer(base_arr, mshape, stored)
    return np.ascontiguousarray(_to_stored(data, stored))


def _encode_fixed_strings(val, dtype):
    info = h5t.check_string_dtype(dtype)
    enc = info.encoding if info is not None else 'ascii'
    arr = np.asarray(val, dtype=object)
    flat = [x.encode(enc) if isinstance(x, str) else x for x in arr.reshape(-1)]
    return np.array(flat, dtype=dtype).reshape(arr.shape)


def _pack_vlen_seq(val, dtype):
    """h5py's preparation of values for vlen-sequence datasets."""
    base = np.dtype(h5t.check_vlen_dtype(dtype))
    try:
        arr = np.asarray(val, dtype=base)
    except (ValueError, TypeError):
        try:
            arr = np.empty(len(val), dtype=object)
            arr[:] = [np.asarray(x, dtype=base) for x in val]
            return arr
        except (ValueError, TypeError):
            return np.asarray(val, dtype=object)
    if arr.ndim > 1:
        tmp = np.empty(arr.shape[:-1], dtype=object)
        flat = arr.reshape((product(arr.shape[:-1]), arr.shape[-1]))
        tmp.reshape(-1)[:] = [row for row in flat] if len(flat) else []
        return tmp
    tmp = np.empty((1,), dtype=object)
    tmp[0] = arr
    return tmp


# ---------------------------------------------------------------------------
# views
# ---------------------------------------------------------------------------

class AbstractView:
    def __init__(self, dset):
        self._dset = dset

    def __len__(self):
        return len(self._dset)

    @property
    def ndim(self):
        return self._dset.ndim

    @property
    def shape(self):
        return self._dset.shape

    @property
    def size(self):
        return self._dset.size

    def __array__(self, dtype=None, copy=None):
        if copy is False:
            raise ValueError(
                f"{self.__class__.__name__}.__array__ received {copy=} "
                "but memory allocation cannot be avoided on read")
        return np.asarray(self[()], dtype=dtype or self.dtype)


class AsTypeView(AbstractView):
    """Wrapper to convert data on reading from a dataset."""

    def __init__(self, dset, dtype):
        super().__init__(dset)
        self._dtype = dtype

    @property
    def dtype(self):
        return self._dtype

    def __getitem__(self, idx):
        return self._dset.__getitem__(idx, new_dtype=self._dtype)

    def __array__(self, dtype=None, copy=None):
        return self._dset.__array__(dtype or self._dtype, copy)


class AsStrView(AbstractView):
    """Wrapper to decode strings on reading the dataset."""

    def __init__(self, dset, encoding, errors='strict'):
        super().__init__(dset)
        self.encoding = encoding
        self.errors = errors

    @property
    def dtype(self):
        return np.dtype(object)

    def __getitem__(self, idx):
        bytes_arr = self._dset[idx]
        if np.isscalar(bytes_arr):
            return bytes_arr.decode(self.encoding, self.errors)
        return np.array([b.decode(self.encoding, self.errors) for b in bytes_arr.flat],
                        dtype=object).reshape(bytes_arr.shape)


class FieldsView(AbstractView):
    """Wrapper to extract named fields from a dataset with a struct dtype."""

    def __init__(self, dset, prior_dtype, names):
        super().__init__(dset)
        if isinstance(names, str):
            self.extract_field = names
            names = [names]
        else:
            self.extract_field = None
        self.read_dtype = readtime_dtype(prior_dtype, names)

    @property
    def dtype(self):
        t = self.read_dtype
        if self.extract_field is not None:
            t = t[self.extract_field]
        return t

    def __getitem__(self, idx):
        data = self._dset.__getitem__(idx, new_dtype=self.read_dtype)
        if self.extract_field is not None:
            data = data[self.extract_field]
        return data


def readtime_dtype(basetype, names):
    """A compound dtype with a subset of the available fields."""
    if basetype.names is None:
        raise ValueError("Field names only allowed for compound types")
    for name in names:
        if name not in basetype.names:
            raise ValueError("Field %s does not appear in this type." % name)
    return np.dtype([(name, basetype.fields[name][0]) for name in names])


# ---------------------------------------------------------------------------
# chunk iteration
# ---------------------------------------------------------------------------

class ChunkIterator:
    """Yields, for each chunk meeting the selection, the tuple of slices of
    their intersection (h5py semantics: selection given as slices/ints with
    no step honoured)."""

    def __init__(self, dset, source_sel=None):
        self._shape = dset.shape
        rank = len(self._shape)
        if not dset.chunks:
            raise TypeError("Chunked dataset required")
        self._layout = dset.chunks
        if source_sel is None:
            self._sel = tuple(slice(0, self._shape[d]) for d in range(rank))
        else:
            if isinstance(source_sel, (slice, int, np.integer)):
                s_list = [source_sel]
            else:
                s_list = list(source_sel)
            if len(s_list) != rank:
                raise ValueError("Invalid selection - selection region must have same rank as dataset")
            out = []
            for d, s in enumerate(s_list):
                if isinstance(s, (int, np.integer)):
                    out.append(slice(int(s), int(s) + 1, None))
                elif isinstance(s, slice):
                    out.append(slice(s.start or 0, s.stop or self._shape[d], s.step))
                else:
                    raise AssertionError(f'{s}: Selection object must be a slice or integer')
            self._sel = tuple(out)
        self._idx = []
        for d in range(rank):
            s = self._sel[d]
            if s.start < 0 or s.stop > self._shape[d] or s.stop <= s.start:
                raise ValueError("Invalid selection - selection region must be within dataset space")
            self._idx.append(s.start // self._layout[d])

    def __iter__(self):
        return self

    def __next__(self):
        rank = len(self._shape)
        if rank == 0 or self._idx[0] * self._layout[0] >= self._sel[0].stop:
            raise StopIteration()
        slices = []
        for d in range(rank):
            s = self._sel[d]
            start = max(self._idx[d] * self._layout[d], s.start)
            stop = min((self._idx[d] + 1) * self._layout[d], s.stop)
            slices.append(slice(start, stop, 1))
        d = rank - 1
        while d >= 0:
            s = self._sel[d]
            self._idx[d] += 1
            if self._idx[d] * self._layout[d] < s.stop:
                return tuple(slices)
            if d > 0:
                self._idx[d] = s.start // self._layout[d]
            d -= 1
        return tuple(slices)


def _numpy_index(selection):
    """A numpy index addressing the same elements of an array (keeping every
    axis, shape == selection.mshape), for read_direct/write_direct."""
    if isinstance(selection, sel.PointSelection):
        return tuple(selection.points.T)
    if isinstance(selection, sel.ScalarSelection):
        return ()
    idx = []
    for d, (a, c, s) in enumerate(zip(selection.start, selection.count, selection.step)):
        if isinstance(selection, sel.FancySelection) and d == selection.axis:
            idx.append(selection.indices)
        elif isinstance(selection, sel.ListSelection) and d in selection.lists:
            idx.append(selection.lists[d])
        else:
            idx.append(slice(a, a + c * s, s) if c else slice(0, 0))
    return tuple(idx)


class _DirectReader:
    __slots__ = ("_dset",)

    def __init__(self, dset):
        self._dset = dset

    def read(self, args):
        return self._dset[args]


# ---------------------------------------------------------------------------
# Dataset
# ---------------------------------------------------------------------------


def _output(shape, dtype):
    """An array for a read to fill: big ones from the pool of pages earlier
    reads' arrays left (no page faults, no zeroing by the kernel)."""
    if np.dtype(dtype).itemsize * int(np.prod(shape, dtype=np.int64)) >= _core.POOLED_MIN_BYTES:
        return _core.pooled_empty(shape, dtype)
    return np.empty(shape, dtype)


def _positional(method, args, ours, pytables, given):
    """``given`` (the keyword arguments) with ``method``'s positional
    arguments after the condition put in: named ``ours``, or in PyTables'
    order ``pytables`` (``condvars`` first) when the first is a dict or
    there are more than ``ours`` holds."""
    names = pytables if args and (isinstance(args[0], dict) or len(args) > len(ours)) else ours
    if len(args) > len(names):
        raise TypeError(f"{method}() takes at most {len(names) + 1} positional arguments "
                        f"({len(args) + 1} given)")
    return {**given, **dict(zip(names, args))}


class Dataset(HLObject):
    """An HDF5 dataset."""

    _ID_KIND = 'd'

    # -- metadata ----------------------------------------------------------
    @property
    def _doc(self):
        return self._fs.doc(self._oid)

    @property
    def _props(self):
        self._fs.check()
        p = self.__dict__.get('_props_cache')
        if p is None:
            p = filters.dcpl_properties(self._doc.get('creationProperties') or {})
            self.__dict__['_props_cache'] = p
        return p

    @property
    def dtype(self):
        """Numpy dtype representing the datatype."""
        self._fs.check()
        dt = self.__dict__.get('_dtype_cache')
        if dt is None:
            dt = h5t.hsds_to_dtype(self._doc['type'])
            self.__dict__['_dtype_cache'] = dt
        return dt

    @property
    def _stored(self):
        return _stored_dtype(self.dtype)

    @property
    def _space_padded(self):
        """Where the type holds fixed strings padded with spaces (read and
        written as libhdf5 converts them for h5py): see
        ``h5t.space_padded_parts``."""
        return h5t.space_padded_parts(self._doc['type'])

    @property
    def shape(self):
        """Numpy-style shape tuple (None for an empty dataset)."""
        self._fs.check(ClosedRuntimeError)      # h5py: "Unable to get dataspace"
        shp = self._doc['shape']
        cls = shp.get('class')
        if cls == 'H5S_NULL':
            return None
        if cls == 'H5S_SCALAR':
            return ()
        if self._unlimited_virtual:
            return tuple(self._fs.raw.dataset_dims(self._oid))
        return tuple(int(x) for x in shp['dims'])

    @property
    def _unlimited_virtual(self):
        u = self.__dict__.get('_unlimited_virtual_cache')
        if u is None:
            from . import vds
            u = self.__dict__['_unlimited_virtual_cache'] = vds.is_unlimited(self)
        return u

    @shape.setter
    def shape(self, shape):
        self.resize(shape)

    @property
    def _is_empty(self):
        return self._doc['shape'].get('class') == 'H5S_NULL'

    @property
    def size(self):
        shape = self.shape
        if shape is None:
            return None
        return product(shape)

    @property
    def ndim(self):
        shape = self.shape
        return 0 if shape is None else len(shape)

    @property
    def nbytes(self):
        size = self.size
        if size is None:
            return 0
        return self.dtype.itemsize * size

    @property
    def maxshape(self):
        """Shape up to which this dataset can be resized (None = unlimited)."""
        self._fs.check(ClosedRuntimeError)
        shp = self._doc['shape']
        cls = shp.get('class')
        if cls == 'H5S_NULL':
            return None
        if cls == 'H5S_SCALAR':
            return ()
        maxdims = shp.get('maxdims')
        if maxdims is None:
            return tuple(int(x) for x in shp['dims'])
        return tuple(None if (m == 'H5S_UNLIMITED' or m == 0 and d != 0) else int(m)
                     for m, d in zip(maxdims, shp['dims']))

    @property
    def chunks(self):
        # (A virtual dataset has the virtual layout, not a chunked one, as
        # in h5py; h5lake reads it by chunks of its own all the same.)
        if self.is_virtual:
            return None
        return self._props['chunks']

    @property
    def compression(self):
        return self._props['compression']

    @property
    def compression_opts(self):
        return self._props['compression_opts']

    @property
    def shuffle(self):
        return self._props['shuffle']

    @property
    def filter_ids(self):
        """Numbers of the HDF5 filters of the dataset, in pipeline order."""
        return tuple(self._props['filter_ids'])

    @property
    def filter_names(self):
        """Names of the filters of the dataset, in pipeline order (HDF5's
        names for its own: ``deflate`` for gzip)."""
        return tuple(self._props['filter_names'])

    @property
    def fletcher32(self):
        return self._props['fletcher32']

    @property
    def scaleoffset(self):
        return self._props['scaleoffset']

    @property
    def external(self):
        return None

    @property
    def is_virtual(self):
        """Whether the elements are other datasets' (a virtual dataset)."""
        return "virtual" in (self._doc.get("h5lake") or {})

    def virtual_sources(self):
        """The mappings of a virtual dataset, as h5py's ``VDSmap``
        (vspace, file_name, dset_name, src_space); file_name ``"."`` is
        this store. RuntimeError for a dataset that is not virtual."""
        if not self.is_virtual:
            raise RuntimeError("Not a virtual dataset")
        from . import vds
        return vds.virtual_sources(self)

    @property
    def is_columnar(self):
        """Whether each chunk is stored as a Parquet object (``layout="columnar"``)."""
        return (self._doc.get("h5lake") or {}).get("chunkFormat") == "parquet"

    def parquet_files(self, padded=False):
        """The Parquet objects of a columnar dataset (local paths, or
        ``s3://`` URLs), in chunk order: DuckDB's ``read_parquet``, Polars'
        ``scan_parquet`` and ``pyarrow.dataset.dataset`` query them as they
        are. Chunks never written have no object (they read as the fill
        value through h5lake).

        A dataset of more than one dimension whose extent is not a whole
        number of chunks keeps its edge chunks whole: their rows beyond the
        extent hold the fill value, and other tools would count them as
        rows. It is refused (ValueError) unless ``padded=True`` asks for the
        files as they are; a 1-D dataset's last chunk holds only its rows.

        What other tools would read otherwise than h5lake is said in a
        ``UserWarning``: chunks never written (no object: their rows are
        absent, where h5lake reads the fill value) and, of more than one
        dimension, elements in chunk order rather than C order. (A chunk
        written before the dataset grew keeps only the rows it had then;
        its later rows read as fill through h5lake.)"""
        if not self.is_columnar:
            raise TypeError(f"{self.name} is not a columnar dataset (create it with layout='columnar')")
        if not padded and self.ndim > 1 and any(n % c for n, c in zip(self.shape, self.chunks)):
            raise ValueError(
                f"{self.name}: its edge chunks hold rows beyond the extent {self.shape} (chunks "
                f"{self.chunks}), which DuckDB, Polars and pyarrow would read as rows; read it "
                "through h5lake (to_arrow), choose chunks that divide the extent, or pass "
                "padded=True to list the files anyway")
        files = self._fs.raw.dataset_chunk_objects(self._oid)
        if "parquetSource" not in (self._doc.get("h5lake") or {}):
            self._warn_what_other_tools_read(len(files))
        return files

    def _warn_what_other_tools_read(self, stored):
        """Says where DuckDB, Polars and pyarrow reading the chunk objects
        would see other rows than h5lake reads."""
        import warnings
        said = []
        grid = [-(-n // c) for n, c in zip(self.shape, self.chunks)]
        total = int(np.prod(grid)) if grid else 1
        if stored < total and self.size:
            said.append(f"{total - stored} of its {total} chunks were never written: other "
                        "tools see none of their rows, which h5lake reads as the fill value")
        if self.ndim > 1 and any(g > 1 for g in grid[1:]):
            said.append(f"its elements are listed chunk by chunk (chunks {self.chunks}), not "
                        "in C order as h5lake reads them")
        if said:
            warnings.warn(f"{self.name}: " + "; ".join(said) + " (to_arrow() reads it as h5lake "
                          "does)", UserWarning, stacklevel=3)

    def __dask_tokenize__(self):
        # (dask would otherwise name arrays from this handle's pickle, the
        # same whatever the values are now.)
        from . import daskio
        return daskio.dask_token()

    def to_dask(self, chunks=None, name=None):
        """This dataset as a lazy ``dask.array.Array``, in blocks of whole
        storage chunks (``chunks`` to choose others). It works on
        ``dask.distributed`` clusters: each worker reopens the store
        read-only."""
        from . import daskio
        return daskio.to_dask(self, chunks, name)

    def to_arrow(self, sel=None, fields=None, where=None, *, condvars=None):
        """The selection ``sel`` (an index expression, default everything)
        of the members ``fields`` (default all) as a ``pyarrow.Table``: one
        column per member for a compound dataset, one column ``value`` for
        any other; rows in C order of the selected elements. With ``where``
        (a condition, as for :meth:`read_where`, its variables from
        ``condvars`` or the caller's; ``sel`` then a box), only the elements
        where it holds, from the chunks that can hold them."""
        return self._to_arrow(sel, fields, where, condvars, sys._getframe(1))

    def _to_arrow(self, sel, fields, where, condvars, frame):
        from . import query, table
        if where is not None:
            where = query.bind(self, where, condvars, frame)
        return table.to_arrow(self, sel, fields, where)

    def append(self, data):
        """Appends rows to this 1-D resizable dataset and returns how many:
        ``data`` is a table (``pyarrow.Table``, ``RecordBatch``,
        ``RecordBatchReader``, ``pandas.DataFrame``, Polars, anything with
        ``__arrow_c_stream__``) whose columns are the members (matched by
        name, in any order), or an array of the dataset's type. The rows are claimed at
        the dataset's end in one step, so concurrent appenders never
        overwrite each other, and written after: a reader at that moment
        may see the new length with the fill value in rows not written yet.
        A columnar dataset keeps the table's nulls."""
        from . import table
        return table.append(self, data)

    # -- statistics and queries (see query.py) -------------------------------
    def stats(self, sel=None, field=None):
        """Statistics kept per chunk. Without arguments: a ``pyarrow.Table``
        with a row per stored chunk (coordinates, extent, and per numeric
        field its min, max, count, NaN count and sum; each chunk function's
        value). With ``sel`` (a box of slices) or ``field``: the statistics
        over that selection, from the records of the chunks it covers whole
        and the data of those it covers in part — for one field a dict
        (``count nan_count min max sum mean``; min/max/sum/mean skip NaN),
        otherwise ``{"fields": {...}, "functions": {...}, ...}``."""
        from . import query
        if sel is None and field is None:
            return query.chunk_table(self)
        agg = query.aggregate(self, sel)
        if field is None:
            return agg
        name = query._leaf(self, field)
        if name not in agg["fields"]:
            raise ValueError(f"no numeric field {name!r}; the numeric fields are "
                             f"{', '.join(agg['fields']) or 'none'}")
        return agg["fields"][name]

    def min(self, field=None, sel=None, **numpy_args):
        """Smallest value of ``field`` over ``sel`` (everything by default),
        from statistics where chunks are covered whole; NaN if any value is
        NaN (as ``numpy.min``). ``numpy.min(dset, ...)`` calls this with
        NumPy's arguments (``axis``, ``out``, ...): it is then NumPy's
        reduction of the values read, as for an array."""
        return self._aggregate("min", field, sel, numpy_args)

    def max(self, field=None, sel=None, **numpy_args):
        """Largest value of ``field`` over ``sel`` (see :meth:`min`)."""
        return self._aggregate("max", field, sel, numpy_args)

    def sum(self, field=None, sel=None, **numpy_args):
        """Sum of ``field`` over ``sel`` (see :meth:`min`)."""
        return self._aggregate("sum", field, sel, numpy_args)

    def mean(self, field=None, sel=None, **numpy_args):
        """Mean of ``field`` over ``sel`` (see :meth:`min`)."""
        return self._aggregate("mean", field, sel, numpy_args)

    def _aggregate(self, op, field, sel, numpy_args):
        from . import query
        if numpy_args:
            # Called by NumPy (np.sum(dset), np.max(dset, axis=0), ...): the
            # values read, reduced by NumPy, so that its types, overflow,
            # empty and complex rules hold exactly as for an array. The
            # methods called on the dataset answer from statistics.
            values = self[()] if sel is None else self[sel]
            if field is not None:
                values = values[field]
            given = {k: v for k, v in numpy_args.items() if v is not None}
            return getattr(np, op)(values, **given)
        return query.field_stat(self, op, field, sel)

    def count(self, field=None, sel=None):
        """Number of values of ``field`` in ``sel`` other than NaN."""
        from . import query
        return query.field_stat(self, "count", field, sel)

    def read_where(self, condition, *args, fields=None, sel=None, condvars=None, field=None,
                   start=None, stop=None, step=None):
        """The elements where ``condition`` holds (PyTables' name), in C
        order, as an array of the dataset's type (or of ``fields``; one
        field's values for ``field=``). Only chunks whose statistics allow
        a match are read.

        As in PyTables, a name in ``condition`` that is no field takes its
        value from ``condvars`` (a dict), else from the caller's variables;
        ``start``/``stop``/``step`` limit a 1-D dataset's rows (``sel=``
        takes a box of any rank instead). Positional arguments after
        ``condition`` are ``fields, sel``, or PyTables' ``condvars, field,
        start, stop, step`` when the first is a dict (or there are more
        than two)."""
        from . import query
        o = _positional("read_where", args, ("fields", "sel"),
                        ("condvars", "field", "start", "stop", "step"),
                        dict(fields=fields, sel=sel, condvars=condvars, field=field,
                             start=start, stop=stop, step=step))
        fields, sel, condvars, field = o["fields"], o["sel"], o["condvars"], o["field"]
        start, stop, step = o["start"], o["stop"], o["step"]
        if field is not None:
            if fields is not None:
                raise TypeError("give fields= or field=, not both")
            fields = field
        cond = query.bind(self, condition, condvars, sys._getframe(1))
        sel, keep = query.rows_of(self, sel, start, stop, step)
        return query.read_where(self, cond, fields, sel, keep)

    def get_where_list(self, condition, *args, sel=None, condvars=None, sort=False,
                       start=None, stop=None, step=None):
        """Coordinates of the elements where ``condition`` holds: row
        numbers for a 1-D dataset, an ``(n, rank)`` array otherwise (in C
        order, so already sorted). ``condvars``, ``start``/``stop``/``step``
        as for :meth:`read_where`; positional arguments are ``sel``, or
        PyTables' ``condvars, sort, start, stop, step``."""
        from . import query
        o = _positional("get_where_list", args, ("sel",),
                        ("condvars", "sort", "start", "stop", "step"),
                        dict(sel=sel, condvars=condvars, start=start, stop=stop, step=step))
        sel, condvars, start, stop, step = (o[k] for k in ("sel", "condvars", "start", "stop",
                                                             "step"))
        cond = query.bind(self, condition, condvars, sys._getframe(1))
        sel, keep = query.rows_of(self, sel, start, stop, step)
        return query.get_where_list(self, cond, sel, keep)

    def where(self, condition, *args, sel=None, condvars=None, start=None, stop=None,
              step=None):
        """Iterator over the elements where ``condition`` holds, in C order
        (``condvars``, ``start``/``stop``/``step`` as for :meth:`read_where`;
        positional arguments are ``sel``, or PyTables' ``condvars, start,
        stop, step``)."""
        from . import query
        o = _positional("where", args, ("sel",), ("condvars", "start", "stop", "step"),
                        dict(sel=sel, condvars=condvars, start=start, stop=stop, step=step))
        sel, condvars, start, stop, step = (o[k] for k in ("sel", "condvars", "start", "stop",
                                                             "step"))
        cond = query.bind(self, condition, condvars, sys._getframe(1))
        sel, keep = query.rows_of(self, sel, start, stop, step)
        return query.where(self, cond, sel, keep)

    def to_pandas(self, sel=None, fields=None, where=None, *, condvars=None):
        """:meth:`to_arrow` as a ``pandas.DataFrame``; integer and boolean
        columns holding nulls (of a columnar table) as pandas' nullable
        types, so that their values stay exact."""
        from . import table
        return table.to_pandas(self._to_arrow(sel, fields, where, condvars, sys._getframe(1)))

    def to_polars(self, sel=None, fields=None, where=None, *, condvars=None):
        """:meth:`to_arrow` as a ``polars.DataFrame``."""
        import polars
        return polars.from_arrow(self._to_arrow(sel, fields, where, condvars, sys._getframe(1)))

    @property
    def _fast_reader(self):
        """h5py's internal reader, which its own tests read through too:
        h5lake has one read path, so ``_fast_reader.read(args)`` is
        ``self[args]``."""
        return _DirectReader(self)

    @property
    def fillvalue(self):
        """Fill value for this dataset (0 by default)."""
        dt = self.dtype
        cp = self._doc.get('creationProperties') or {}
        fv = cp.get('fillValue')
        if fv is not None and cp.get('fillValue_encoding') == 'base64':
            # HSDS's form: the element's own bytes.
            import base64
            return np.frombuffer(base64.b64decode(fv), dtype=dt)[0]
        if fv is not None:
            try:
                arr = h5t.json_to_value(fv, dt, ())
                value = arr.reshape(-1)[0] if dt.subdtype is None else arr
                if isinstance(value, str):     # h5py gives a string fill value as its bytes
                    return value.encode("utf-8")
                return value
            except (ValueError, TypeError):
                pass
        if h5t.is_vlen(dt):
            # (h5py: an empty string for strings, None for sequences)
            return b'' if _vlen_kind(dt) == 'str' else None
        if h5t.is_ref(dt) or h5t.is_regionref(dt):
            return None                   # (h5py: no reference)
        zero = np.zeros((1,), dtype=dt)
        _objects_to_none(zero)
        return zero[0]

    @property
    def dims(self):
        """The dimensions of this dataset: labels and attached dimension
        scales (an h5py-like ``DimensionManager``, see dims.py)."""
        from .dims import DimensionManager
        return DimensionManager(self)

    # -- sizing -----------------------------------------------------------------
    def resize(self, size, axis=None):
        """Resize the dataset, or the given axis (chunked datasets only)."""
        self._fs.check()
        if self.chunks is None:
            raise TypeError("Only chunked datasets can be resized")
        rank = self.ndim
        if axis is not None:
            if not (0 <= axis < rank):
                raise ValueError("Invalid axis (0 to %s allowed)" % (rank - 1))
            try:
                newlen = int(size)
            except TypeError:
                raise TypeError("Argument must be a single int if axis is specified") from None
            size = list(self.shape)
            size[axis] = newlen
        size = tuple(int(s) for s in size)
        if len(size) != rank:
            raise TypeError("New shape length (%d) must match dataset rank (%d)" % (len(size), rank))
        if any(n < 0 for n in size):
            raise OverflowError("can't convert negative value to hsize_t")
        for n, m in zip(size, self.maxshape):
            if m is not None and n > m:
                raise _ResizeError("Unable to change a dataset's dimensions (dimension cannot "
                                 "exceed the existing maximal size (new: %d max: %s))" % (n, m))
        # (RuntimeError, as h5py raises it for a file opened read-only.)
        self._fs.check_writable(RuntimeError,
                                "Unable to synchronously change a dataset's dimensions")
        try:
            self._fs.raw.dataset_resize(self._oid, list(size))
        finally:
            self._fs.forget(self._oid)

    def __len__(self):
        return self.len()

    def len(self):
        shape = self.shape
        if shape is None:
            raise TypeError("object of type 'NoneType' has no len()")
        if len(shape) == 0:
            raise TypeError("Attempt to take len() of scalar dataset")
        return shape[0]

    def __iter__(self):
        shape = self.shape
        if not shape:
            raise TypeError("Can't iterate over a scalar dataset")
        for i in range(shape[0]):
            yield self[i]

    def iter_chunks(self, sel=None):
        """Iterator of slice tuples, one per chunk meeting ``sel``."""
        return ChunkIterator(self, sel)

    # -- views ----------------------------------------------------------------
    def astype(self, dtype):
        dtype = np.dtype(dtype)
        if dtype == self.dtype:
            return self
        if dtype.kind == "U":
            # (h5py's answer: HDF5 has no type for numpy's UCS-4 strings;
            # .asstr() decodes by the dataset's own encoding.)
            raise TypeError(f"No conversion path for dtype: {dtype!r} (use .asstr() to read "
                            "text as str)")
        if dtype.kind == "T" and h5t.check_string_dtype(self.dtype) is None:
            raise TypeError(f"dset.astype({dtype}) can only be used on datasets with "
                            "an HDF5 string datatype")
        return AsTypeView(self, dtype)

    def asstr(self, encoding=None, errors='strict'):
        info = h5t.check_string_dtype(self.dtype)
        if info is None:
            raise TypeError("dset.asstr() can only be used on datasets with "
                            "an HDF5 string datatype")
        if encoding is None:
            encoding = info.encoding
        return AsStrView(self, encoding, errors=errors)

    @property
    def id(self):
        """The dataset's id, with HDF5's chunk queries (``get_num_chunks``,
        ``get_chunk_info``, ``chunk_iter``, ``read_direct_chunk``...)."""
        from .base import DatasetID
        return DatasetID(self._fs, self._oid)

    @property
    def regionref(self):
        """Region references to selections of this dataset:
        ``dset.regionref[0:10, ::2]`` (h5py's); ``dset[ref]`` reads one."""
        from .regions import RegionRefProxy
        return RegionRefProxy(self)

    def fields(self, names, *, _prior_dtype=None):
        if _prior_dtype is None:
            _prior_dtype = self.dtype
        return FieldsView(self, _prior_dtype, names)

    # -- reading ----------------------------------------------------------------
    def __getitem__(self, args, new_dtype=None):
        """Read a selection (ints, slices, Ellipsis, one increasing index
        list, boolean mask, compound field names)."""
        self._fs.check(ClosedRuntimeError)
        args = args if isinstance(args, tuple) else (args,)
        if any(a is None for a in args):
            raise TypeError("Indexing with None (or np.newaxis) is not supported")

        if self._is_empty:
            if args == () or (len(args) == 1 and args[0] is Ellipsis):
                return Empty(self.dtype)
            raise ValueError("Empty datasets cannot be sliced")

        names = tuple(x for x in args if isinstance(x, str))
        if names:
            if len(names) == 1:
                names = names[0]
            args = tuple(x for x in args if not isinstance(x, str))
            return self.fields(names, _prior_dtype=new_dtype)[args]

        shape = self.shape
        native = False
        if new_dtype is None:
            new_dtype = self.dtype
            # h5py's fast reader (plain int/float types, non-scalar space)
            # gives native-order arrays even where the dataset's dtype names
            # its byte order explicitly (floats: dtype('<f4') -> float32)
            native = shape != () and new_dtype.kind == 'f' and new_dtype.isnative
        if product(shape) == 0 and shape != () and (
                args == () or (len(args) == 1 and args[0] is Ellipsis)):
            return np.zeros(shape, dtype=np.dtype(new_dtype.char) if native else new_dtype)

        if len(args) == 1 and isinstance(args[0], h5t.RegionReference):
            from . import regions
            return regions.read(self, args[0], new_dtype)
        if shape == () and not (args == () or (len(args) == 1 and args[0] is Ellipsis)):
            raise ValueError("Illegal slicing argument for scalar dataspace")
        selection = sel.select(shape, args)
        if native and not isinstance(selection, sel.PointSelection):
            new_dtype = np.dtype(new_dtype.char)     # (masks take h5py's slow path)
        arr = self._read_selection(selection, new_dtype)
        if isinstance(selection, sel.ScalarSelection):
            if selection.array_shape is None and arr.shape == ():
                return arr[()]
            return arr
        if arr.shape == ():
            return arr[()]
        return arr

    def _read_selection(self, selection, new_dtype):
        """ndarray of shape ``selection.array_shape`` (+ array-dtype axes)."""
        # (try, not a context manager: this is every read's path.)
        try:
            return self._read_selection_as_named(selection, new_dtype)
        except ENGINE_ERRORS as e:
            member = _member_regionref(self.dtype)
            if member is not None and "read_vlen" in str(e):
                raise TypeError(f"{self.name}: member {member!r} holds region references, which "
                                "h5lake cannot read inside a compound yet (h5py reads them)") from e
            raise named(self, e) from None

    def _read_selection_as_named(self, selection, new_dtype):
        if self.is_virtual:
            from . import vds
            vds.warn_problems(self)
        dtype = self.dtype
        raw = self._fs.raw
        ashape = tuple(selection.array_shape or ())
        if _uses_records(dtype):
            if selection.nselect == 0:
                arr = np.empty(ashape, dtype=dtype)
            elif isinstance(selection, sel.PointSelection):
                values = raw.dataset_read_points_vlen(self._oid, _points_i64(selection))
                arr = _decode_records(values, dtype, ashape)
            else:
                selection.check_extent()
                values = raw.dataset_read_vlen(self._oid, selection.engine_sel)
                arr = _decode_records(values, dtype, ashape)
            if new_dtype != dtype:
                nd = np.dtype(new_dtype)
                if nd.names is not None and set(nd.names) <= set(dtype.names or ()):
                    out = np.empty(arr.shape, dtype=nd)
                    for n in nd.names:
                        out[n] = arr[n]
                    arr = out
                else:
                    arr = arr.astype(new_dtype)
            return arr
        if _vlen_kind(dtype) is not None:
            if selection.nselect == 0:
                arr = np.empty(ashape, dtype=dtype)
            elif isinstance(selection, sel.PointSelection):
                arr = self._read_vlen_points(selection)
            else:
                selection.check_extent()
                values = raw.dataset_read_vlen(self._oid, selection.engine_sel)
                arr = _decode_vlen(values, dtype, ashape)
            if new_dtype != dtype:
                if _vlen_kind(dtype) == 'str' and np.dtype(new_dtype).kind not in 'OSUV':
                    # (HDF5 has no conversion from strings to numbers.)
                    raise TypeError("Operation not defined for data type class (operation not "
                                    "defined for data type class)")
                if np.dtype(new_dtype).kind == 'O':
                    arr = arr.astype(new_dtype)
                else:
                    arr = np.asarray(arr.tolist() if arr.ndim else arr[()], dtype=new_dtype).reshape(ashape)
            return arr

        if h5t.has_vlen(dtype):
            raise TypeError("h5lake cannot read array types with variable-length members yet")

        stored = self._stored
        sub = dtype.shape                         # array dtypes fold into the shape
        if selection.nselect == 0:
            return np.zeros(ashape, dtype=new_dtype)
        selection.check_extent()
        nd = np.dtype(new_dtype)
        if nd.names is not None and stored.names is not None and nd.names != stored.names \
                and set(nd.names) <= set(stored.names):
            # A subset of the members: the engine copies only their bytes.
            fields = list(nd.names)
            out = _output(selection.mshape, np.dtype([(n, stored.fields[n][0]) for n in fields]))
            if isinstance(selection, sel.PointSelection):
                raw.dataset_read_points(self._oid, _points_i64(selection), out, fields)
            else:
                raw.dataset_read(self._oid, selection.engine_sel, out, fields)
            out = h5t.unpad_spaces(out.reshape(ashape), self._space_padded)
            return self._convert_read(out, new_dtype)
        out = _output(selection.mshape, stored)
        buf = _engine_buffer(out, selection.mshape, stored)
        if isinstance(selection, sel.PointSelection):
            raw.dataset_read_points(self._oid, selection.points, buf)
        else:
            raw.dataset_read(self._oid, selection.engine_sel, buf)
        out = h5t.unpad_spaces(out.reshape(ashape + sub), self._space_padded)
        return self._convert_read(out, new_dtype)

    def _convert_read(self, out, new_dtype):
        new_dtype = np.dtype(new_dtype)
        src = out.dtype
        if h5t.is_ref(new_dtype) and h5t.is_ref(self.dtype):
            return h5t.refs_from_stored(out)
        if new_dtype == src and new_dtype.metadata == src.metadata:
            # same type; a byte-order spelling change ('<f4' -> 'f4') is a free view
            return out if new_dtype.byteorder == src.byteorder else out.view(new_dtype)
        if new_dtype.subdtype is not None and new_dtype.subdtype[0] == src:
            return out
        if new_dtype.kind == 'O' and h5t.check_string_dtype(new_dtype) is not None and src.kind == 'S':
            res = np.empty(out.shape, dtype=new_dtype)
            res.reshape(-1)[:] = [bytes(x) for x in out.reshape(-1)] if out.size else []
            return res
        # HDF5's conversion (saturating; compounds by field name)
        if new_dtype.subdtype is not None:
            return _hdf5_cast(out, new_dtype.subdtype[0], 'read')
        return _hdf5_cast(out, new_dtype, 'read')

    def _read_vlen_points(self, selection):
        values = self._fs.raw.dataset_read_points_vlen(self._oid, _points_i64(selection))
        return _decode_vlen(values, self.dtype, (len(values),))

    # -- writing ---------------------------------------------------------------------
    def __setitem__(self, args, val):
        """Write to a selection; numpy broadcasting for simple selections."""
        self._fs.check_writable(OSError, "Can't write data")
        args = args if isinstance(args, tuple) else (args,)
        names = tuple(x for x in args if isinstance(x, str))
        args = tuple(x for x in args if not isinstance(x, str))
        dtype = self.dtype
        if self._is_empty:
            raise OSError("Can't synchronously write data (src and dest dataspaces have "
                          "different number of elements selected)")

        member = _member_regionref(dtype)
        if member is not None and (not names or member in names):
            raise TypeError(f"{self.name}: member {member!r} holds region references, which "
                            "h5lake cannot write inside a compound yet; keep region references "
                            "in a dataset of their own (dtype=h5lake.regionref_dtype)")
        if names:
            return self._write_fields(args, names, val)

        if isinstance(val, np.void) and val.dtype.names is not None:
            val = np.asarray(val)       # one structured element: a 0-d array
        if dtype.names is not None and isinstance(val, np.ndarray) and val.dtype.names is not None:
            # HDF5 converts compounds member by member, by name: members the
            # value does not have keep what they hold, and a value with none
            # of the dataset's members is refused (never written as zeros).
            given = tuple(n for n in dtype.names if n in val.dtype.names)
            if not given:
                raise ValueError("none of the value's fields (%s) is a member of the dataset "
                                 "(%s); nothing written" % (", ".join(val.dtype.names),
                                                            ", ".join(dtype.names)))
            if not _covers(dtype, val.dtype):
                return self._write_fields(args, given, val)

        if _uses_records(dtype) or _vlen_kind(dtype) is not None:
            # (Whole elements: every member is given.)
            return self._write_vlen(args, val, list(dtype.names) if dtype.names else None)

        if h5t.has_vlen(dtype):
            raise TypeError("h5lake cannot write array types with variable-length members yet")
        return self._write_fixed(args, val)

    def _vlen_encoder(self, val, members=None):
        """``val`` as an array of this dataset's variable-length elements,
        and the function that encodes a block of it for the engine
        (``members``: the compound members the caller gives; the others
        hold what was read from the dataset)."""
        dtype = self.dtype
        vkind = _vlen_kind(dtype)
        if _uses_records(dtype):
            if not isinstance(val, np.ndarray) or val.dtype != dtype:
                val = np.asarray(val, dtype=dtype)
            kept = () if members is None or dtype.names is None else \
                tuple(n for n in dtype.names if n not in members)
            return val, lambda block: _encode_records(block, dtype, kept)
        if vkind in ('str', 'regref'):
            val = np.asarray(val, dtype=object) if not (
                isinstance(val, np.ndarray) and val.dtype.kind == 'O') else val
        elif not (isinstance(val, np.ndarray) and val.dtype.kind == 'O'):
            val = _pack_vlen_seq(val, dtype)
        return val, lambda block: _encode_vlen(np.ascontiguousarray(block, dtype=object), dtype)

    def _one_sequence(self, val, selection):
        """``val`` as one element where it is the sequence of the one element
        of a dataset of sequences ``selection`` picks (h5py's reading of
        ``d[i] = [...]``, sequences of strings too)."""
        kind = _vlen_kind(self.dtype)
        if not isinstance(kind, np.dtype) or self.dtype.names is not None \
                or selection.array_shape != ():
            return val
        if isinstance(val, np.ndarray) and val.dtype.kind == 'O' and val.ndim == 0:
            return val
        try:
            seq = np.asarray(val, dtype=kind)
        except (TypeError, ValueError):
            return val
        if seq.ndim != 1:
            return val
        one = np.empty((), dtype=object)
        one[()] = seq
        return one

    def _write_vlen(self, args, val, members):
        """Writes variable-length elements (or elements with variable-length
        members), one encoded element each; ``members``: the compound
        members the caller gives (a columnar table's nulls of them are
        written, of the others kept)."""
        selection = sel.select(self.shape, args)
        val, encode = self._vlen_encoder(self._one_sequence(val, selection), members)
        if val.shape == () and selection.array_shape not in ((), None):
            val = np.broadcast_to(val, self._scalar_block_shape(selection))
        selection.expand_shape(val.shape)       # TypeError if it can't broadcast
        if selection.nselect == 0:
            return
        selection.check_extent(writing=True)
        values = encode(selection.broadcast_value(val))
        if isinstance(selection, sel.PointSelection):
            self._fs.raw.dataset_write_points_vlen(self._oid, _points_i64(selection), values,
                                                   members)
        else:
            self._fs.raw.dataset_write_vlen(self._oid, selection.engine_sel, values, members)

    def _write_fixed(self, args, val):
        """Writes elements of a fixed size."""
        dtype = self.dtype

        stored = self._stored
        if dtype.kind == 'V' and dtype.subdtype is None and \
                (not isinstance(val, np.ndarray) or val.dtype.kind != 'V'):
            val = np.asarray(val, dtype=dtype, order='C')
        elif dtype.kind == 'S' and find_item_type(val) is str and \
                getattr(h5t.check_string_dtype(dtype), 'encoding', None) == 'utf-8':
            # h5py encodes str for fixed UTF-8 only; ascii goes through numpy
            val = _encode_fixed_strings(val, dtype)
        else:
            dt = None if isinstance(val, np.ndarray) else dtype.base
            val = np.asarray(val, order='C', dtype=dt)
            if h5t.is_ref(dtype):
                val = h5t.refs_to_stored(val)

        if dtype.subdtype is not None:
            shp = dtype.subdtype[1]
            valshp = val.shape[-len(shp):] if val.ndim >= len(shp) else val.shape
            if valshp != shp:
                raise TypeError("When writing to array types, last N dimensions have to match "
                                "(got %s, but should be %s)" % (valshp, shp))
            mshape = val.shape[0:len(val.shape) - len(shp)]
        else:
            mshape = val.shape

        selection = sel.select(self.shape, args)
        self._write_selection(selection, val, mshape)

    def _scalar_block_shape(self, selection):
        """Shape a scalar is broadcast to before writing (h5py's rule): the
        whole selection when it fits in one chunk, else one row along the
        last axis -- which then only broadcasts through simple selections
        (index lists and per-axis masks refuse it: TypeError)."""
        ashape = tuple(selection.array_shape)
        chunks = self.chunks
        if chunks and product(chunks) >= product(ashape):
            return ashape
        return ashape[-1:]

    def _write_selection(self, selection, val, mshape, fields=None):
        dtype = self.dtype
        stored = self._stored
        raw = self._fs.raw
        sub = dtype.shape
        if mshape == () and selection.array_shape not in ((), None):
            if sub:
                raise TypeError("Scalar broadcasting is not supported for array dtypes")
            val = np.broadcast_to(val, self._scalar_block_shape(selection))
            mshape = val.shape
        selection.expand_shape(mshape)              # TypeError if it can't broadcast
        if selection.nselect == 0:
            return
        selection.check_extent(writing=True)
        # convert the (small) value once, then broadcast
        if sub:
            conv = _hdf5_cast(np.asarray(val), stored.subdtype[0])
            eshape = selection.expand_shape(mshape)
            conv = conv.reshape(tuple(eshape) + sub)
            target = tuple(selection.mshape) + sub
            if conv.shape != target:
                conv = np.broadcast_to(conv, target)
        else:
            conv = h5t.pad_spaces(_to_stored(val, stored), self._space_padded)
            conv = selection.broadcast_value(conv)
        buf = _engine_buffer(np.ascontiguousarray(conv), selection.mshape, stored)
        if isinstance(selection, sel.PointSelection):
            raw.dataset_write_points(self._oid, selection.points, buf, fields)
        else:
            raw.dataset_write(self._oid, selection.engine_sel, buf, fields)

    def _write_fields(self, args, names, val):
        """Field-name write: read-modify-write of the selected region."""
        dtype = self.dtype
        if dtype.fields is None:
            raise TypeError("Illegal slicing argument (not a compound dataset)")
        mismatch = [x for x in names if x not in dtype.fields]
        if mismatch:
            if len(names) == 1 and not (isinstance(val, np.ndarray) and val.dtype.names):
                raise ValueError("No such field for indexing: %s" % names[0])
            mismatch = ", ".join('"%s"' % x for x in mismatch)
            raise ValueError("Illegal slicing argument (fields %s not in dataset type)" % mismatch)
        selection = sel.select(self.shape, args)
        if selection.nselect == 0:
            return
        current = self._read_selection(selection, self._stored)
        if isinstance(val, np.ndarray) and val.dtype.names is not None \
                and any(x in names for x in val.dtype.names):
            # (Members given by name; a compound value of one member of
            # compound type is that member's value, below.)
            _assign_members(current, val, [x for x in val.dtype.names if x in names])
        elif len(names) == 1:
            fdt = dtype.fields[names[0]][0]
            v = np.asarray(val, dtype=fdt.base)
            target = current[names[0]]
            if v.shape != target.shape:
                try:
                    v = np.broadcast_to(v, target.shape)
                except ValueError:
                    raise TypeError("Can't broadcast %s -> %s" % (v.shape, target.shape)) from None
            current[names[0]] = v
        else:
            v = np.asarray(val, dtype=dtype)
            for n in names:
                current[n] = v[n]
        if _uses_records(dtype) or _vlen_kind(dtype) is not None:
            # Elements with variable-length members are written whole,
            # encoded; only the members named count as written.
            self._write_vlen(args, current, list(names))
            return
        # (Only the members named are written: the others keep what they
        # hold now, even if another writer changed them since the read
        # above, and a columnar table keeps their nulls.)
        self._write_selection(selection, current, current.shape[:current.ndim - len(dtype.shape)],
                              fields=list(names))

    # -- direct I/O -------------------------------------------------------------
    def read_direct(self, dest, source_sel=None, dest_sel=None):
        """Read into an existing numpy array (selections from ``np.s_``).

        As in h5py, ``dest`` must be a C-contiguous, writable ndarray
        (TypeError otherwise); the data are converted to its dtype.
        """
        self._fs.check(ClosedRuntimeError)
        if self._is_empty:
            raise TypeError("Empty datasets have no numpy representation")
        shape = self.shape
        dshape = dest.shape          # AttributeError for non-arrays, as in h5py
        ssel = sel.select(shape, ()) if source_sel is None else sel.select(shape, source_sel)
        dsel = sel.select(dshape, ()) if dest_sel is None else sel.select(dshape, dest_sel)
        src_shape = tuple(ssel.array_shape or ())
        dsel.expand_shape(src_shape)             # TypeError if it can't broadcast
        if not (isinstance(dest, np.ndarray) and dest.flags.c_contiguous and dest.flags.writeable):
            raise TypeError("Array must be C-contiguous and writable")
        if ssel.nselect == 0:
            return
        ssel.check_extent()
        if self.is_virtual:
            from . import vds
            vds.warn_problems(self)
        target = self._direct_target(dest, ssel, dsel)
        if target is not None:
            # fast path: let the engine scatter straight into the caller's buffer
            self._fs.raw.dataset_read(self._oid, ssel.engine_sel, target)
            return
        data = self._read_selection(ssel, dest.dtype)
        data = np.asarray(data).reshape(src_shape)
        block = dsel.broadcast_value(data)
        if isinstance(dsel, sel.PointSelection):
            block = block.reshape(-1)
        else:
            block = block.reshape(dsel.mshape)
            if block.shape == ():
                # (Into an object slot a 0-d array would go as an array.)
                block = block[()]
        dest[_numpy_index(dsel)] = block

    def _direct_target(self, dest, ssel, dsel):
        """The part of ``dest`` that ``dsel`` selects, when the engine can
        write the source selection's elements straight into it: same
        element type, no broadcasting, and one gap-free run of ``dest``
        (a program reading slab after slab into a buffer a little larger
        than each slab selects such a run). ``None`` otherwise."""
        if (dest.dtype != self._stored or h5t.has_vlen(self.dtype) or self._space_padded
                or isinstance(ssel, sel.PointSelection)
                or isinstance(dsel, (sel.PointSelection, sel.FancySelection,
                                     sel.ListSelection))):
            return None
        index = _numpy_index(dsel)
        view = dest[index] if index != () else dest
        per_element = int(np.prod(self.dtype.shape, dtype=np.int64))
        if not view.flags.c_contiguous or view.size != ssel.nselect * per_element:
            return None
        return view

    def write_direct(self, source, source_sel=None, dest_sel=None):
        """Write from a numpy array (selections from ``np.s_``).

        As in h5py, ``source`` must be a C-contiguous ndarray (TypeError
        otherwise); values are converted to the dataset's type as HDF5 does.
        """
        self._fs.check_writable(OSError, "Can't write data", closed=ClosedRuntimeError)
        if self._is_empty:
            # (TypeError here, as h5py's write_direct raises; OSError from
            # item assignment.)
            raise TypeError("Empty datasets cannot be written to")
        sshape = source.shape        # AttributeError for non-arrays, as in h5py
        ssel = sel.select(sshape, ()) if source_sel is None else sel.select(sshape, source_sel)
        dsel = sel.select(self.shape, ()) if dest_sel is None else sel.select(self.shape, dest_sel)
        src_shape = tuple(ssel.array_shape or ())
        dsel.expand_shape(src_shape)             # TypeError if it can't broadcast
        if not (isinstance(source, np.ndarray) and source.flags.c_contiguous):
            raise TypeError("Array must be C-contiguous")
        data = source[_numpy_index(ssel)]
        data = np.asarray(data).reshape(src_shape)
        if _vlen_kind(self.dtype) is not None or self.dtype.names is not None:
            args = dest_sel if dest_sel is not None else ()
            self[args] = data
            return
        self._write_selection(dsel, data, data.shape)

    def __array__(self, dtype=None, copy=None):
        """The whole dataset as a numpy array."""
        if copy is False:
            raise ValueError(f"Dataset.__array__ received {copy=} "
                             "but memory allocation cannot be avoided on read")
        arr = np.zeros(self.shape, dtype=self.dtype if dtype is None else dtype)
        if self.size == 0:
            return arr
        self.read_direct(arr)
        return arr

    # -- misc -----------------------------------------------------------------------
    def refresh(self):
        self._fs.check()
        self._fs.forget(self._oid)

    def flush(self):
        self._fs.check()
        self._fs.raw.flush()

    def make_scale(self, name=''):
        """Make this dataset a dimension scale (named ``name``), to attach
        to dimensions of other datasets: ``other.dims[0].attach_scale(ds)``."""
        from . import dims
        dims.set_scale(self, name)

    @property
    def is_scale(self):
        """Whether this dataset is a dimension scale."""
        from . import dims
        return dims.is_scale(self)

    def __bool__(self):
        return self._fs.valid

    def __eq__(self, other):
        return HLObject.__eq__(self, other)

    def __ne__(self, other):
        return HLObject.__ne__(self, other)

    __hash__ = HLObject.__hash__

    def __repr__(self):
        if not self._fs.valid:
            return "<Closed HDF5 dataset>"
        if self._name is None:
            name = "(anonymous)"
        else:
            name = '"%s"' % (posixpath.basename(posixpath.normpath(self._name)))
        return '<HDF5 dataset %s: shape %s, type "%s">' % (name, self.shape, self.dtype.str)


def _points_i64(selection):
    """The point coordinates as the engine takes them: C-contiguous int64 (n, rank)."""
    return np.ascontiguousarray(selection.points, dtype=np.int64)
