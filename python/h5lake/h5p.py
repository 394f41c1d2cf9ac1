"""Property lists as h5py's low-level ``h5p`` module gives them, the part
code reads: a dataset's creation property list (``dset.id.get_create_plist()``)
answering its layout, chunk shape, fill value and fill time from the
dataset's ``creationProperties``; file and dataset access lists
(``f.id.get_access_plist()``, ``dset.id.get_access_plist()``) answering
what the file or dataset was opened with."""

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

    def get_obj_track_times(self):
        """Whether the dataset was made with ``track_times=True``."""
        return bool(self._cp.get("trackTimes"))

    def get_fill_value(self, value):
        """Writes the fill value into ``value`` (a 0-d or 1-element array),
        converted to its dtype."""
        value[...] = np.asarray(self._dset.fillvalue).astype(value.dtype)


# -- access property lists ----------------------------------------------------
#
# A store has no HDF5 chunk cache, file locks or driver: these lists hold
# what a program set (through File()/create_dataset() keywords or a list of
# its own) and answer it back, as HDF5's do.

#: HDF5's dataset chunk cache as h5py opens files: slots, bytes, w0.
DEFAULT_CHUNK_CACHE = (8191, 8 << 20, 0.75)

_LOCKING = {None: (1, 1), True: (1, 0), 'true': (1, 0), False: (0, 0), 'false': (0, 0),
            'best-effort': (1, 1)}


def locking_props(locking):
    """``(use_file_locking, ignore_when_disabled)`` for h5py's ``locking=``."""
    try:
        return _LOCKING[locking]
    except (KeyError, TypeError):
        raise ValueError("Unsupported locking value: %r" % (locking,)) from None


class PropFAID:
    """A file's access properties (h5py's ``PropFAID``): the chunk cache
    and file locking the file was opened with."""

    def __init__(self, cache=DEFAULT_CHUNK_CACHE, locking=(1, 1)):
        self._cache = tuple(cache)
        self._locking = tuple(locking)

    def get_cache(self):
        """``(mdc_nelmts, rdcc_nslots, rdcc_nbytes, rdcc_w0)``."""
        return (0,) + self._cache

    def set_cache(self, mdc_nelmts, rdcc_nslots, rdcc_nbytes, rdcc_w0):
        self._cache = (int(rdcc_nslots), int(rdcc_nbytes), float(rdcc_w0))

    def get_file_locking(self):
        """``(use_file_locking, ignore_when_disabled)`` as 0/1."""
        return self._locking

    def set_file_locking(self, use_file_locking, ignore_when_disabled):
        self._locking = (int(bool(use_file_locking)), int(bool(ignore_when_disabled)))


class PropDAID:
    """A dataset's access properties (h5py's ``PropDAID``): its chunk cache
    settings and the prefixes its virtual and external sources are found
    under."""

    def __init__(self, chunk_cache=DEFAULT_CHUNK_CACHE, virtual_prefix=b'', efile_prefix=b''):
        self._chunk_cache = tuple(chunk_cache)
        self._virtual_prefix = _bytes(virtual_prefix)
        self._efile_prefix = _bytes(efile_prefix)

    def get_chunk_cache(self):
        """``(rdcc_nslots, rdcc_nbytes, rdcc_w0)``."""
        return self._chunk_cache

    def set_chunk_cache(self, rdcc_nslots, rdcc_nbytes, rdcc_w0):
        self._chunk_cache = (int(rdcc_nslots), int(rdcc_nbytes), float(rdcc_w0))

    def get_virtual_prefix(self):
        return self._virtual_prefix

    def set_virtual_prefix(self, prefix):
        self._virtual_prefix = _bytes(prefix)

    def get_efile_prefix(self):
        return self._efile_prefix

    def set_efile_prefix(self, prefix):
        self._efile_prefix = _bytes(prefix)


def _bytes(v):
    if v is None:
        return b''
    return v.encode('utf-8') if isinstance(v, str) else bytes(v)


class PropClassID:
    """A property list class (h5py's ``h5p.DATASET_ACCESS``...)."""

    def __init__(self, name, make):
        self.name = name
        self._make = make

    def __repr__(self):
        return f"<h5lake h5p class {self.name}>"


FILE_ACCESS = PropClassID("FILE_ACCESS", PropFAID)
DATASET_ACCESS = PropClassID("DATASET_ACCESS", PropDAID)


def create(cls):
    """A new property list of class ``cls`` (``FILE_ACCESS`` or
    ``DATASET_ACCESS``), holding HDF5's defaults."""
    if not isinstance(cls, PropClassID):
        raise TypeError("h5p.create takes a property list class such as h5p.DATASET_ACCESS")
    return cls._make()
