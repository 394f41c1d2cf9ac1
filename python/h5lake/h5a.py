"""Attributes as h5py's low-level ``h5a`` module reaches them: ``open`` an
attribute of an object by name, giving an ``AttrID`` with its name, shape,
type and value; ``create`` one from a type object and a dataspace."""

import json

from ._hl.base import to_str_name


class AttrID:
    """One attribute of an object (h5py's ``AttrID``)."""

    def __init__(self, fs, oid, name):
        self._fs = fs
        self._oid = oid
        self._name = to_str_name(name)

    def _doc(self):
        self._fs.check()
        try:
            return json.loads(self._fs.raw.attr_get(self._oid, self._name))
        except KeyError:
            raise KeyError("Unable to open attribute (can't locate attribute: %r)"
                           % self._name) from None

    @property
    def valid(self):
        return self._fs.valid

    @property
    def name(self):
        return self._name.encode()

    @property
    def shape(self):
        """The attribute's shape; None for a null dataspace."""
        shape = self._doc().get("shape") or {}
        if shape.get("class") == "H5S_NULL":
            return None
        return tuple(int(d) for d in shape.get("dims") or ())

    @property
    def dtype(self):
        from ._hl.h5t import hsds_to_dtype
        return hsds_to_dtype(self._doc()["type"])

    def get_type(self):
        from .h5t import _type_object
        return _type_object(self._doc()["type"])

    def get_storage_size(self):
        from ._hl.base import product
        shape = self.shape
        return 0 if shape is None else product(shape) * self.dtype.itemsize


def open(loc, name):
    """The attribute ``name`` of the object ``loc`` (an object or its ``.id``)."""
    oid = getattr(loc, "id", loc)
    attr = AttrID(oid._fs, oid._oid, name)
    attr._doc()
    return attr


def create(loc, name, tid, space, acpl=None, aapl=None):
    """Creates the attribute ``name`` of the object ``loc`` (an object or
    its ``.id``) of type ``tid`` over ``space`` (``h5s.NULL`` makes an empty
    one), its elements zero as HDF5 makes them; fails if it exists."""
    import numpy as np
    from . import h5s
    from ._hl.h5t import attr_json
    oid = getattr(loc, "id", loc)
    oid._fs.check_writable(ValueError, "Unable to create attribute")
    kind = space.get_simple_extent_type()
    if kind == h5s.NULL:
        doc = {"type": tid.hsds_json, "shape": {"class": "H5S_NULL"}, "value": None}
    else:
        shape = () if kind == h5s.SCALAR else tuple(space.get_simple_extent_dims())
        doc = attr_json(np.zeros(shape, tid.dtype), tid.dtype)
        doc["type"] = tid.hsds_json
    name = to_str_name(name)
    oid._fs.raw.attr_create(oid._oid, name, json.dumps(doc), False)
    return AttrID(oid._fs, oid._oid, name)
