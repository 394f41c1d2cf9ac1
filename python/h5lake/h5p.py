"""Property lists as h5py's low-level ``h5p`` module gives them, the part
code reads: a dataset's creation property list (``dset.id.get_create_plist()``)
answering its layout, chunk shape, fill value and fill time from the
dataset's ``creationProperties``."""

import numpy as np

from . import h5d as _h5d

_LAYOUTS = {"H5D_COMPACT": _h5d.COMPACT, "H5D_CONTIGUOUS": _h5d.CONTIGUOUS,
            "H5D_CHUNKED": _h5d.CHUNKED, "H5D_VIRTUAL": _h5d.VIRTUAL}
_FILL_TIMES = {"H5D_FILL_TIME_ALLOC": _h5d.FILL_TIME_ALLOC,
               "H5D_FILL_TIME_NEVER": _h5d.FILL_TIME_NEVER,
               "H5D_FILL_TIME_IFSET": _h5d.FILL_TIME_IFSET}


class PropDCID:
    """A dataset's creation properties (h5py's ``PropDCID``, read-only)."""

    def __init__(self, dset):
        self._dset = dset
        self._cp = dset._doc.get("creationProperties") or {}

    def get_layout(self):
        """``h5d.CHUNKED``, ``CONTIGUOUS``, ``COMPACT`` or ``VIRTUAL``."""
        if self._dset.is_virtual:
            return _h5d.VIRTUAL
        cls = (self._cp.get("layout") or {}).get("class", "H5D_CONTIGUOUS")
        return _LAYOUTS.get(cls, _h5d.CHUNKED if cls.startswith("H5D_CHUNKED") else _h5d.CONTIGUOUS)

    def get_chunk(self):
        """The chunk shape of a chunked dataset."""
        chunks = self._dset.chunks
        if chunks is None:
            raise ValueError("Not a chunked layout (can't get chunk size)")
        return tuple(chunks)

    def get_fill_time(self):
        """When unwritten elements get the fill value (``h5d.FILL_TIME_*``;
        ``IFSET`` unless the dataset was made with another)."""
        return _FILL_TIMES.get(self._cp.get("fillTime"), _h5d.FILL_TIME_IFSET)

    def fill_value_defined(self):
        """``h5d.FILL_VALUE_USER_DEFINED`` when the dataset was given one,
        else ``FILL_VALUE_DEFAULT`` (zero)."""
        if self._cp.get("fillValue") is not None:
            return _h5d.FILL_VALUE_USER_DEFINED
        return _h5d.FILL_VALUE_DEFAULT

    def get_fill_value(self, value):
        """Writes the fill value into ``value`` (a 0-d or 1-element array),
        converted to its dtype."""
        value[...] = np.asarray(self._dset.fillvalue).astype(value.dtype)
