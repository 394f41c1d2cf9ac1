"""Attributes (h5py's ``AttributeManager``): a dict-like view of an
object's attributes, values converted through ``h5t.attr_json`` /
``h5t.attr_value_from_json``.

Order: by name (h5py's default), or creation order when the object was
created with ``track_order=True``.
"""

from __future__ import annotations

import json

import numpy as np

from . import h5t
from .base import ClosedKeyError, ClosedRuntimeError, MutableMappingHDF5, product, to_str_name


class AttributeManager(MutableMappingHDF5):
    """Allows dictionary-style access to an HDF5 object's attributes."""

    def __init__(self, parent):
        self._parent = parent
        self._fs = parent._fs
        self._oid = parent._oid

    # -- helpers -----------------------------------------------------------
    @property
    def _raw(self):
        self._fs.check()
        return self._fs.raw

    def _get_doc(self, name):
        name = to_str_name(name)
        self._fs.check(ClosedKeyError)
        try:
            return json.loads(self._raw.attr_get(self._oid, name))
        except KeyError:
            raise KeyError("Unable to open attribute (can't locate attribute: %r)" % name) from None

    def _names(self):
        names = list(self._raw.attr_names(self._oid))
        if not self._parent._track_order():
            names.sort()
        return names

    # -- mapping protocol ---------------------------------------------------
    def __getitem__(self, name):
        doc = self._get_doc(name)
        return h5t.attr_value_from_json(doc)

    def get_id(self, name):
        """The attribute as h5py's low-level ``AttrID`` (see ``h5lake.h5a``)."""
        from .. import h5a
        return h5a.open(self._parent.id, name)

    def __setitem__(self, name, value):
        """Set (create or replace) an attribute; type and shape are guessed
        from the value (use create/modify to control them)."""
        self.create(name, data=value)

    def __delitem__(self, name):
        # A read-only file: KeyError, as h5py gives.
        self._fs.check_writable(KeyError, "Unable to delete attribute")
        name = to_str_name(name)
        try:
            self._raw.attr_delete(self._oid, name)
        except KeyError:
            raise KeyError("Unable to delete attribute (can't locate attribute)") from None

    def __len__(self):
        return len(self._raw.attr_names(self._oid))

    def _ipython_key_completions_(self):
        """Names for IPython's completion of ``obj[...]``, sorted."""
        return sorted(self.keys())

    def __iter__(self):
        yield from self._names()

    def __reversed__(self):
        yield from reversed(list(self._names()))

    def __contains__(self, name):
        try:
            name = to_str_name(name)
        except TypeError:
            return False
        self._fs.check(ClosedRuntimeError)
        return name in self._raw.attr_names(self._oid)

    def __repr__(self):
        if not self._fs.valid:
            return "<Attributes of closed HDF5 object>"
        return "<Attributes of HDF5 object at %s>" % id(self._parent)

    # -- creation ---------------------------------------------------------------
    def create(self, name, data, shape=None, dtype=None):
        """Create a new attribute, overwriting any existing one.

        ``shape`` overrides ``data.shape`` (same number of elements);
        ``dtype`` overrides ``data.dtype``.
        """
        from .datatype import Datatype

        name = to_str_name(name)
        self._fs.check_writable(OSError, "Unable to create attribute", closed=ClosedRuntimeError)
        if name == "":
            raise RuntimeError("Can't synchronously determine if attribute exists by name "
                               "(no attribute name)")

        if isinstance(dtype, Datatype):
            dtype = dtype.dtype

        # h5t.attr_json applies h5py's rules (dtype guess, shape override,
        # array dtypes) and validates before anything is written.
        doc = h5t.attr_json(data, dtype=dtype, shape=shape)
        self._raw.attr_create(self._oid, name, json.dumps(doc), True)

    def modify(self, name, value):
        """Change the value of an attribute while preserving its type and
        shape (creates it when missing)."""
        name = to_str_name(name)
        if name not in self:
            self[name] = value
            return
        self._fs.check_writable(OSError, "Unable to write attribute")
        old = self._get_doc(name)
        shp = old.get('shape') or {}
        if shp.get('class') == 'H5S_NULL':
            raise OSError("Empty attributes can't be modified")
        dims = tuple(shp.get('dims', ())) if shp.get('class') != 'H5S_SCALAR' else ()
        dtype = h5t.hsds_to_dtype(old['type'])

        dt = None if isinstance(value, np.ndarray) else dtype
        value = np.asarray(value, order='C', dtype=dt)
        if value.shape != dims and not (value.size == 1 and product(dims) == 1):
            raise TypeError("Shape of data is incompatible with existing attribute")
        if dtype.subdtype is None:
            # h5py hands the array to H5Awrite: HDF5's conversion (saturating
            # integers, no real <-> complex, ...), not numpy's
            from .dataset import _hdf5_cast
            value = _hdf5_cast(value, dtype).reshape(dims)
        value = h5t.pad_spaces(value, h5t.space_padded_parts(old['type']))
        doc = h5t.attr_json(value, dtype=dtype, shape=dims)
        doc['type'] = old['type']
        doc['shape'] = old['shape']
        self._raw.attr_create(self._oid, name, json.dumps(doc), True)
