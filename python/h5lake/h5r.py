"""References as h5py's low-level ``h5r`` module has them: the two
reference classes, their type codes, and ``create``, which makes one from
an object id and a path (and, for a region, a dataspace that selects all
of the dataset or none of it)."""

from ._hl.h5t import Reference, RegionReference

OBJECT = 0
DATASET_REGION = 1

__all__ = ["Reference", "RegionReference", "OBJECT", "DATASET_REGION", "create", "get_name",
           "get_obj_type"]


def create(loc, name, ref_type, space=None):
    """A reference to the object at ``name`` (``b'.'``: ``loc`` itself)
    from the object id ``loc``; with ``DATASET_REGION``, to the elements of
    that dataset ``space`` selects (which it needs, as in h5py)."""
    from ._hl.base import BY_REFERENCE
    from ._hl.group import _make_object
    from . import h5s
    name = name.decode("utf-8") if isinstance(name, bytes) else str(name)
    obj = _make_object(loc._fs, loc._oid, BY_REFERENCE)
    if name not in ("", "."):
        obj = obj[name]
    if ref_type == OBJECT:
        return Reference(obj._oid)
    if ref_type != DATASET_REGION:
        raise ValueError("Unknown reference type %r (OBJECT or DATASET_REGION)" % (ref_type,))
    if space is None:
        raise ValueError("Dataspace required for region reference")
    if not obj._oid.startswith("d-"):
        raise TypeError("A region reference is made to a dataset")
    none = space.get_select_type() == h5s.SEL_NONE
    return RegionReference(obj._oid, {"select_type": "H5S_SEL_NONE" if none else "H5S_SEL_ALL"})


def _target(ref, loc):
    """What ``ref`` leads to in the file of the object id ``loc`` (None:
    a null reference, or one to nothing in that file)."""
    from ._hl.base import BY_REFERENCE
    from ._hl.group import _make_object
    if not ref:
        return None
    root = _make_object(loc._fs, loc._fs.raw.root_id, BY_REFERENCE)
    try:
        return root[ref]
    except (KeyError, ValueError):
        return None


def get_name(ref, loc, lapl=None):
    """The path (bytes) of the object ``ref`` leads to, in the file of the
    object id ``loc``; None for a null reference or an object no path
    reaches, as h5py gives."""
    obj = _target(ref, loc)
    name = None if obj is None else obj.name
    return None if name is None else name.encode("utf-8")


def get_obj_type(ref, loc):
    """What ``ref`` leads to: ``h5o``'s type codes (0 a group, 1 a dataset,
    2 a committed datatype); None for a null reference."""
    from ._hl.group import Group
    from ._hl.dataset import Dataset
    obj = _target(ref, loc)
    if obj is None:
        return None
    return 0 if isinstance(obj, Group) else 1 if isinstance(obj, Dataset) else 2
