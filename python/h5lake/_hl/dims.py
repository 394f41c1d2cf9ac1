"""Dimension scales (h5py's ``_hl/dims.py``): ``dset.dims``.

The storage is exactly what HDF5's dimension-scale library (H5DS) writes,
so that a store exported with ``h5lake get`` is read as dimension scales
by h5py, netCDF-4 and every other H5DS user, and a file H5DS wrote reads
here after ``h5lake load``:

* the scale: ``CLASS`` = ``"DIMENSION_SCALE"`` (fixed-length ASCII string
  of 16 bytes, null-terminated), ``NAME`` (fixed-length ASCII, length of
  the name + 1, null-terminated; ``make_scale`` always writes it, ``''``
  included, as h5py does), and ``REFERENCE_LIST``: one row per attachment,
  compound ``{dataset: object reference, dimension: uint32}`` laid out as
  H5DS's C struct (offsets 0 and 8, 16 bytes);
* the dataset: ``DIMENSION_LIST``, shape ``(rank,)``, each element a
  variable-length sequence of object references to the scales of that
  dimension; ``DIMENSION_LABELS``, shape ``(rank,)``, variable-length ASCII
  strings.

The functions below follow HDF5's H5DS.c step by step (the checks, their
order, the order of references after a detach, and the quirks: attaching a
scale twice to one dimension adds a second ``REFERENCE_LIST`` row but no
second ``DIMENSION_LIST`` entry; ``H5DSis_scale`` compares only a prefix of
``CLASS``), because h5py shows whatever H5DS does. Where H5DS fails with a
bare FAIL, h5py raises ``RuntimeError``; so do we, with a message that
says why.
"""

from __future__ import annotations

import json
import operator
import warnings

import numpy as np

from . import h5t
from .base import BY_REFERENCE

# Names and values fixed by the HDF5 dimension-scale specification.
_CLASS_VALUE = b"DIMENSION_SCALE"
_RESERVED_CLASSES = (b"IMAGE", b"PALETTE", b"TABLE")   # H5IM/H5TB datasets take no scales

_REF_OBJ = {"class": "H5T_REFERENCE", "base": "H5T_STD_REF_OBJ"}
_DIMENSION_LIST_TYPE = {"class": "H5T_VLEN", "base": _REF_OBJ}
# H5DS's ds_list_t {hobj_ref_t ref; unsigned int dim_idx;}: HDF5 2.0
# declares the member H5T_NATIVE_UINT (h5py reads it as '<u4'); the layout
# (offsets, padded size) is kept so that an export writes the same struct.
_REFERENCE_LIST_TYPE = {
    "class": "H5T_COMPOUND",
    "fields": [{"name": "dataset", "type": _REF_OBJ},
               {"name": "dimension", "type": {"class": "H5T_INTEGER", "base": "H5T_STD_U32LE"}}],
    "h5lake": {"offsets": [0, 8], "size": 16},
}
_LABELS_TYPE = {"class": "H5T_STRING", "charSet": "H5T_CSET_ASCII",
                "strPad": "H5T_STR_NULLTERM", "length": "H5T_VARIABLE"}


def _c_string_type(nbytes):
    """H5LT_set_attribute_string's type: fixed-length ASCII of the string's
    length + 1, null-terminated."""
    return {"class": "H5T_STRING", "charSet": "H5T_CSET_ASCII",
            "strPad": "H5T_STR_NULLTERM", "length": nbytes + 1}


def _simple(n):
    return {"class": "H5S_SIMPLE", "dims": [n]}


# ---------------------------------------------------------------------------
# attribute documents
# ---------------------------------------------------------------------------

def _attr(obj, name):
    """The attribute document of ``obj`` named ``name``, or None."""
    try:
        return json.loads(obj._fs.raw.attr_get(obj._oid, name))
    except KeyError:
        return None


def _put(obj, name, type_doc, shape_doc, value):
    obj._fs.raw.attr_create(obj._oid, name,
                            json.dumps({"type": type_doc, "shape": shape_doc, "value": value}), True)


def _delete(obj, name):
    obj._fs.raw.attr_delete(obj._oid, name)


def _c_string(v):
    """A stored string element as the bytes a C reader sees: up to the
    first NUL (HDF5's strings reach C as ``char *``)."""
    b = v if isinstance(v, bytes) else h5t._bytes_from_json(v)
    return b.split(b"\0", 1)[0]


def _as_name_bytes(val):
    """h5py's ``_e``: names and labels go to HDF5 as UTF-8 bytes; a C
    string ends at its first NUL."""
    if isinstance(val, str):
        val = val.encode("utf-8")
    elif not isinstance(val, bytes):
        raise TypeError("A name should be string or bytes, not %s" % type(val))
    return val.split(b"\0", 1)[0]


def _as_name_str(b):
    """h5py's ``_d``: UTF-8 bytes come back as str (bytes that are not
    UTF-8 stay bytes)."""
    try:
        return b.decode("utf-8")
    except UnicodeDecodeError:
        return b


def _oid_of(stored):
    return h5t.Reference._from_stored(stored)._id


def _ref(oid):
    return h5t.Reference(oid)._stored()


def _rank(dset):
    shape = dset.shape
    return 0 if shape is None else len(shape)


def _dimension_list(dset, rank):
    """DIMENSION_LIST as ``rank`` lists of scale ids, or None when absent."""
    doc = _attr(dset, "DIMENSION_LIST")
    if doc is None:
        return None
    rows = [[_oid_of(r) for r in (row or [])] for row in (doc.get("value") or [])]
    rows += [[] for _ in range(rank - len(rows))]
    return rows


def _write_dimension_list(dset, rows):
    _put(dset, "DIMENSION_LIST", _DIMENSION_LIST_TYPE, _simple(len(rows)),
         [[_ref(o) for o in row] for row in rows])


def _reference_list(scale):
    """REFERENCE_LIST as ``[(dataset id, dimension), ...]``, or None."""
    doc = _attr(scale, "REFERENCE_LIST")
    if doc is None:
        return None
    return [(_oid_of(r[0]), int(r[1])) for r in (doc.get("value") or [])]


def _write_reference_list(scale, rows):
    _put(scale, "REFERENCE_LIST", _REFERENCE_LIST_TYPE, _simple(len(rows)),
         [[_ref(o), d] for o, d in rows])


def _class_string(dset):
    """``(is a string, null-terminated, size, C value)`` of the CLASS
    attribute, or None when there is none."""
    doc = _attr(dset, "CLASS")
    if doc is None:
        return None
    t = doc.get("type") or {}
    if t.get("class") != "H5T_STRING":
        return (False, False, None, b"")
    value = doc.get("value")
    if isinstance(value, list):         # an array attribute: HDF5 reads its first element
        value = value[0] if value else ""
    # (no strPad: HSDS's default, NULLPAD, as h5lake-types reads it)
    return (True, t.get("strPad", "H5T_STR_NULLPAD") == "H5T_STR_NULLTERM",
            t.get("length"), _c_string(value if value is not None else ""))


def _prefix_equal(buf, word):
    """H5DS's ``strncmp(buf, word, MIN(strlen(word), strlen(buf))) == 0``:
    true when the shorter of the two is a prefix of the other."""
    n = min(len(word), len(buf))
    return buf[:n] == word[:n]


# ---------------------------------------------------------------------------
# H5DS operations
# ---------------------------------------------------------------------------

def is_scale(dset):
    """H5DSis_scale: CLASS is a null-terminated string of exactly 16 bytes
    whose value is (a prefix of) "DIMENSION_SCALE"."""
    dset._fs.check()
    cls = _class_string(dset)
    if cls is None:
        return False
    is_str, nullterm, size, value = cls
    # A variable-length string has HDF5 size 8 (a pointer), never 16.
    return is_str and nullterm and size == 16 and _prefix_equal(value, _CLASS_VALUE)


def _is_reserved(dset, what):
    """H5DS_is_reserved: an image, palette or table takes no scales; a CLASS
    that is not a null-terminated string makes H5DS fail outright."""
    cls = _class_string(dset)
    if cls is None:
        return False
    is_str, nullterm, size, value = cls
    if not (is_str and nullterm):
        raise RuntimeError(f"Unable to {what} (the dataset's CLASS attribute is not a "
                           "null-terminated string)")
    if size == "H5T_VARIABLE":
        # HDF5 compares the bytes of the string's pointer, which never
        # spell a class name: a variable-length CLASS is never reserved.
        return False
    return any(_prefix_equal(value, c) for c in _RESERVED_CLASSES)


def _writable(dset, what):
    # h5py: HDF5 refuses the attribute write, H5DS returns FAIL -> RuntimeError.
    dset._fs.check()
    dset._fs.check_writable(RuntimeError, f"Unable to {what}")


def _set_class(dset):
    _put(dset, "CLASS", _c_string_type(len(_CLASS_VALUE)), {"class": "H5S_SCALAR"},
         _CLASS_VALUE.decode("ascii"))


def set_scale(dset, name):
    """H5DSset_scale (``Dataset.make_scale``): CLASS, and NAME (always
    written, even when empty, as h5py passes ``''`` rather than NULL)."""
    name = _as_name_bytes(name)
    _writable(dset, "make a dimension scale")
    if _attr(dset, "DIMENSION_LIST") is not None:
        raise RuntimeError("Unable to make a dimension scale (the dataset has dimension "
                           "scales attached; a dimension scale cannot have scales)")
    _set_class(dset)
    _put(dset, "NAME", _c_string_type(len(name)), {"class": "H5S_SCALAR"},
         h5t._bytes_to_json(name))


def _check_pair(dset, scale, what):
    from .dataset import Dataset
    if not isinstance(scale, Dataset):
        raise TypeError("a dimension scale must be a Dataset, not %s" % type(scale).__name__)
    scale._fs.check()
    if is_scale(dset):
        raise RuntimeError(f"Unable to {what} (the dataset is itself a dimension scale; "
                           "a dimension scale cannot have scales)")
    if scale._oid == dset._oid:
        raise RuntimeError(f"Unable to {what} (a dataset cannot be a dimension scale of itself)")
    if scale._fs.raw.root_id != dset._fs.raw.root_id:
        # HDF5 object references name objects of their own file only.
        raise ValueError(f"Unable to {what} (the scale is in another file; a dimension "
                         "scale must be in the same file as the dataset)")


def _check_index(dset, idx, rank, what):
    if idx >= rank:
        raise RuntimeError(f"Unable to {what} (dimension {idx} out of range for "
                           f"a dataset of rank {rank})")


def attach_scale(dset, scale, idx):
    """H5DSattach_scale: append ``scale`` to DIMENSION_LIST[idx] of ``dset``
    (unless there already), append ``(dset, idx)`` to the scale's
    REFERENCE_LIST (always, as H5DS does), make ``scale`` a scale (CLASS
    written afresh) if it is not one.

    (HDF5 itself shows the old CLASS until the file is reopened when the
    scale had another one: H5DSis_scale leaves that attribute open. What
    it stores is the new CLASS, which is what we write.)"""
    what = "attach dimension scale"
    _check_pair(dset, scale, what)
    _writable(dset, what)
    _writable(scale, what)
    if _attr(scale, "DIMENSION_LIST") is not None:
        raise RuntimeError(f"Unable to {what} (the scale has dimension scales of its own)")
    if _is_reserved(dset, what):
        raise RuntimeError(f"Unable to {what} (the dataset is an image, palette or table)")
    rank = max(_rank(dset), 1)        # H5DS: a scalar dataset has one dimension
    _check_index(dset, idx, rank, what)

    rows = _dimension_list(dset, rank) or [[] for _ in range(rank)]
    if scale._oid not in rows[idx]:
        rows[idx].append(scale._oid)
    _write_dimension_list(dset, rows)

    refs = _reference_list(scale) or []
    refs.append((dset._oid, idx))
    _write_reference_list(scale, refs)

    if not is_scale(scale):
        _set_class(scale)


def detach_scale(dset, scale, idx):
    """H5DSdetach_scale: remove ``scale`` from DIMENSION_LIST[idx] (the last
    entry takes its place; the attribute goes when no dimension has scales
    left) and one ``(dset, idx)`` row from the scale's REFERENCE_LIST (the
    last row takes its place; the attribute goes when empty)."""
    what = "detach dimension scale"
    _check_pair(dset, scale, what)
    _writable(dset, what)
    _writable(scale, what)
    rank = _rank(dset)
    rows = _dimension_list(dset, rank)
    if rows is None:
        raise RuntimeError(f"Unable to {what} (the dataset has no dimension scales)")
    _check_index(dset, idx, rank, what)
    refs = _reference_list(scale)
    if refs is None:
        raise RuntimeError(f"Unable to {what} (the scale is attached to no dataset)")

    row = rows[idx]
    if scale._oid not in row:
        raise RuntimeError(f"Unable to {what} (the scale is not attached to dimension {idx})")
    j = row.index(scale._oid)
    row[j] = row[-1]
    row.pop()
    if any(rows):
        _write_dimension_list(dset, rows)
    else:
        _delete(dset, "DIMENSION_LIST")

    # H5DS changes DIMENSION_LIST before it looks in REFERENCE_LIST, and
    # fails here (DIMENSION_LIST already changed) if the row is missing.
    for i, (oid, dim) in enumerate(refs):
        if dim == idx and oid == dset._oid:
            refs[i] = refs[-1]
            refs.pop()
            break
    else:
        raise RuntimeError(f"Unable to {what} (the scale's REFERENCE_LIST does not name "
                           f"dimension {idx} of the dataset)")
    _delete(scale, "REFERENCE_LIST")
    if refs:
        _write_reference_list(scale, refs)


def num_scales(dset, idx):
    """H5DSget_num_scales."""
    dset._fs.check()
    rank = _rank(dset)
    _check_index(dset, idx, rank, "count dimension scales")
    rows = _dimension_list(dset, rank)
    return 0 if rows is None else len(rows[idx])


def scales(dset, idx):
    """The scales attached to dimension ``idx``, in order (H5DSiterate_scales
    from index 0, as h5py calls it: that fails when there are none)."""
    from .group import _make_object
    n = num_scales(dset, idx)
    if n == 0:
        raise RuntimeError(f"Unable to iterate dimension scales (dimension {idx} "
                           "has no scales attached)")
    fs = dset._fs
    out = []
    for oid in _dimension_list(dset, _rank(dset))[idx]:
        try:
            fs.doc(oid)
        except KeyError:
            raise RuntimeError(f"Unable to iterate dimension scales (dimension {idx} names "
                               f"a scale that no longer exists: {oid})") from None
        out.append(_make_object(fs, oid, BY_REFERENCE))
    return out


def scale_name(scale):
    """H5DSget_scale_name, as bytes: NAME up to its first NUL; ``b''`` when
    there is no NAME. Fails when ``scale`` is not a dimension scale."""
    if not is_scale(scale):
        raise RuntimeError("Unable to get the dimension scale name (%s is not a dimension "
                           "scale)" % (scale.name or "the dataset"))
    doc = _attr(scale, "NAME")
    if doc is None:
        return b""
    value = doc.get("value")
    if isinstance(value, list):
        value = value[0] if value else ""
    return _c_string(value if value is not None else "")


def get_label(dset, idx):
    """H5DSget_label, as bytes (``b''`` when unset)."""
    dset._fs.check()
    rank = _rank(dset)
    _check_index(dset, idx, rank, "get the dimension label")
    doc = _attr(dset, "DIMENSION_LABELS")
    if doc is None:
        return b""
    values = doc.get("value") or []
    if not isinstance(values, list):
        values = [values]
    v = values[idx] if idx < len(values) else None
    return b"" if v is None else _c_string(v)


def set_label(dset, idx, label):
    """H5DSset_label: DIMENSION_LABELS[idx] = label (the attribute made on
    first use, every other label empty)."""
    label = _as_name_bytes(label)
    what = "set the dimension label"
    _writable(dset, what)
    rank = _rank(dset)
    _check_index(dset, idx, rank, what)
    doc = _attr(dset, "DIMENSION_LABELS")
    labels = [b""] * rank
    type_doc = _LABELS_TYPE
    if doc is not None:
        old = doc.get("value") or []
        if not isinstance(old, list):
            old = [old]
        for i, v in enumerate(old[:rank]):
            labels[i] = b"" if v is None else _c_string(v)
        # H5DS rewrites the attribute with its own type; keep a
        # variable-length one (UTF-8 or ASCII) as it was.
        t = doc.get("type") or {}
        if t.get("class") == "H5T_STRING" and t.get("length") == "H5T_VARIABLE":
            type_doc = t
    labels[idx] = label
    _put(dset, "DIMENSION_LABELS", type_doc, _simple(rank), [h5t._bytes_to_json(b) for b in labels])


# ---------------------------------------------------------------------------
# the h5py classes
# ---------------------------------------------------------------------------

class DimensionProxy:
    """One dimension of a dataset: its label and the scales attached to it
    (h5py's ``DimensionProxy``)."""

    def __init__(self, dset, dimension):
        self._dset = dset
        self._dimension = dimension

    @property
    def _idx(self):
        # h5py hands the index to H5DS as an unsigned int.
        if self._dimension < 0:
            raise OverflowError("can't convert negative value to unsigned int")
        return self._dimension

    @property
    def label(self):
        """Get or set the dimension label ('' when unset)."""
        return _as_name_str(get_label(self._dset, self._idx))

    @label.setter
    def label(self, val):
        set_label(self._dset, self._idx, val)

    def __hash__(self):
        return hash((type(self), self._dset._oid, self._dimension))

    def __eq__(self, other):
        return hash(self) == hash(other)

    def __iter__(self):
        yield from self.keys()

    def __len__(self):
        return num_scales(self._dset, self._idx)

    def __getitem__(self, item):
        # h5py: ints index, anything else is a name (numpy integers index
        # here too; h5py 3 fails on them with a SystemError).
        if isinstance(item, (int, np.integer)):
            return scales(self._dset, self._idx)[item]
        want = _as_name_bytes(item)
        for s in scales(self._dset, self._idx):
            if scale_name(s) == want:
                return s
        raise KeyError(item)

    def attach_scale(self, dset):
        """Attach a scale (a Dataset) to this dimension."""
        attach_scale(self._dset, dset, self._idx)

    def detach_scale(self, dset):
        """Remove a scale (a Dataset) from this dimension."""
        detach_scale(self._dset, dset, self._idx)

    def items(self):
        """List of (name, Dataset) pairs of the scales on this dimension."""
        if len(self) == 0:
            return []
        return [(_as_name_str(scale_name(s)), s) for s in scales(self._dset, self._idx)]

    def keys(self):
        """List of the names of the scales on this dimension."""
        return [k for k, _ in self.items()]

    def values(self):
        """List of the scales (Datasets) on this dimension."""
        return [v for _, v in self.items()]

    def __repr__(self):
        if not self._dset._fs.valid:
            return "<Dimension of closed HDF5 dataset>"
        return '<"%s" dimension %d of HDF5 dataset at %s>' % (self.label, self._dimension,
                                                             id(self._dset))


class DimensionManager:
    """The dimensions of a dataset, ``dset.dims`` (h5py's ``DimensionManager``)."""

    def __init__(self, parent):
        self._dset = parent

    def __getitem__(self, index):
        index = operator.index(index)
        if index > len(self) - 1:
            raise IndexError("Index out of range")
        return DimensionProxy(self._dset, index)

    def __len__(self):
        """Number of dimensions (the dataset's rank)."""
        self._dset._fs.check()
        return _rank(self._dset)

    def __iter__(self):
        for i in range(len(self)):
            yield self[i]

    def __repr__(self):
        if not self._dset._fs.valid:
            return "<Dimensions of closed HDF5 dataset>"
        return "<Dimensions of HDF5 object at %s>" % id(self._dset)

    def create_scale(self, dset, name=''):
        """Make ``dset`` a dimension scale named ``name`` (deprecated, as in
        h5py: use ``dset.make_scale(name)``)."""
        from .dataset import H5LakeDeprecationWarning
        warnings.warn("other_ds.dims.create_scale(ds, name) is deprecated. "
                      "Use ds.make_scale(name) instead.",
                      H5LakeDeprecationWarning, stacklevel=2)
        dset.make_scale(name)
