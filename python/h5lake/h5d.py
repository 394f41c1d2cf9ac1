"""Datasets as h5py's low-level ``h5d`` module makes them: ``create`` a
dataset from a type object and a dataspace, or ``open`` one, giving its id
(bind it with ``h5lake.Dataset(dsid)``)."""

from collections import namedtuple

from ._hl.base import to_str_name
from . import h5s as _h5s

#: Where a chunk is stored (h5py's ``h5d.StoreInfo``): its first element's
#: coordinates, the filters skipped for it, its byte offset and size. In
#: h5lake a chunk is an object of its own, so its byte offset is 0.
StoreInfo = namedtuple("StoreInfo", ["chunk_offset", "filter_mask", "byte_offset", "size"])

# Layouts, fill times and fill value states, as h5py names them.
COMPACT = 0
CONTIGUOUS = 1
CHUNKED = 2
VIRTUAL = 3
FILL_TIME_ALLOC = 0
FILL_TIME_NEVER = 1
FILL_TIME_IFSET = 2
FILL_VALUE_UNDEFINED = 0
FILL_VALUE_DEFAULT = 1
FILL_VALUE_USER_DEFINED = 2


def create(loc, name, tid, space, dcpl=None, lcpl=None, dapl=None):
    """Creates the dataset ``name`` in the group ``loc`` (a group or its
    ``.id``) of type ``tid`` (an ``h5t`` type object) over ``space`` (an
    ``h5s`` dataspace; ``NULL`` makes an empty one) and returns its id."""
    from ._hl.group import Group
    from ._hl.base import ObjectID
    group = Group(loc) if isinstance(loc, ObjectID) else loc
    kind = space.get_simple_extent_type()
    if kind == _h5s.NULL:
        shape = None
    elif kind == _h5s.SCALAR:
        shape = ()
    else:
        shape = space.get_simple_extent_dims()
        maxshape = tuple(None if m == _h5s.UNLIMITED else m
                         for m in space.get_simple_extent_dims(maxdims=True))
        if maxshape != tuple(shape):
            return group.create_dataset(to_str_name(name), shape=shape, dtype=tid.dtype,
                                        maxshape=maxshape).id
    return group.create_dataset(to_str_name(name), shape=shape, dtype=tid.dtype).id


def open(loc, name, dapl=None):
    """The id of the dataset ``name`` in the group ``loc`` (a group or its
    ``.id``), opened with the access list ``dapl`` when given
    (``h5p.create(h5p.DATASET_ACCESS)``)."""
    from ._hl.group import Group, _note_access
    from ._hl.base import ObjectID
    from ._hl.dataset import Dataset
    group = Group(loc) if isinstance(loc, ObjectID) else loc
    dset = group[to_str_name(name)]
    if not isinstance(dset, Dataset):
        raise TypeError("Unable to open dataset (not a dataset)")
    return _note_access(dset, {"dapl": dapl}).id
