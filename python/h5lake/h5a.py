"""Attributes as h5py's low-level ``h5a`` module reaches them: ``open`` an
attribute of an object by name, giving an ``AttrID`` with its name, shape,
type and value."""

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
