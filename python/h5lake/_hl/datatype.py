"""Committed (named) datatypes (h5py's ``Datatype``)."""

from __future__ import annotations

import posixpath

from . import h5t
from .base import HLObject


class Datatype(HLObject):
    """A datatype stored in the file as an object of its own."""

    _ID_KIND = 't'

    @property
    def dtype(self):
        """The numpy dtype this named type describes."""
        return h5t.hsds_to_dtype(self._fs.doc(self._oid)['type'])

    def __repr__(self):
        if not self._fs.valid:
            return "<Closed HDF5 named type>"
        if self._name is None:
            namestr = "(anonymous)"
        else:
            namestr = '"%s"' % (posixpath.basename(posixpath.normpath(self._name)) or '/')
        return '<HDF5 named type %s (dtype %s)>' % (namestr, self.dtype.str)
