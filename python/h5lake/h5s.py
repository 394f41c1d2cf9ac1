"""Dataspaces as h5py's low-level ``h5s`` module has them: the class
constants, and ``create``/``create_simple`` making a ``SpaceID`` that says
its class and extent."""

# Dataspace classes (H5S_class_t).
NO_CLASS = -1
SCALAR = 0
SIMPLE = 1
NULL = 2

#: An unlimited maximum extent (HDF5's ``H5S_UNLIMITED``).
UNLIMITED = 2**64 - 1

# Selection operators and kinds, as h5py names them.
SELECT_NOOP = -1
SELECT_SET = 0
SELECT_OR = 1
SELECT_AND = 2
SELECT_XOR = 3
SELECT_NOTB = 4
SELECT_NOTA = 5
SELECT_APPEND = 6
SELECT_PREPEND = 7
SEL_NONE = 0
SEL_POINTS = 1
SEL_HYPERSLABS = 2
SEL_ALL = 3
SEL_ERROR = -1
SELECT_INVALID = 8


class SpaceID:
    """A dataspace: its class, for a simple one its extent, and whether it
    selects all of its elements or none (what a region reference made
    with ``h5r.create`` takes)."""

    def __init__(self, cls, dims=(), maxdims=None):
        self._cls = cls
        self._dims = tuple(int(d) for d in dims)
        self._maxdims = self._dims if maxdims is None else tuple(int(d) for d in maxdims)
        self._select = SEL_NONE if cls == NULL else SEL_ALL

    def select_all(self):
        self._select = SEL_ALL

    def select_none(self):
        self._select = SEL_NONE

    def get_select_type(self):
        return self._select

    def get_select_npoints(self):
        return self.get_simple_extent_npoints() if self._select == SEL_ALL else 0

    def get_simple_extent_type(self):
        return self._cls

    def get_simple_extent_ndims(self):
        return len(self._dims)

    def get_simple_extent_dims(self, maxdims=False):
        return self._maxdims if maxdims else self._dims

    def get_simple_extent_npoints(self):
        n = 1
        for d in self._dims:
            n *= d
        return 0 if self._cls == NULL else n

    @property
    def shape(self):
        return self._dims


def create(cls):
    """An empty dataspace of class ``SCALAR`` or ``NULL``."""
    if cls not in (SCALAR, NULL):
        raise ValueError("create() makes SCALAR or NULL dataspaces; use create_simple()")
    return SpaceID(cls)


def create_simple(dims, maxdims=None):
    """A simple dataspace of extent ``dims`` (at most ``maxdims``;
    ``UNLIMITED`` or None in it for no limit)."""
    dims = tuple(dims)
    if maxdims is not None:
        maxdims = tuple(UNLIMITED if m is None else m for m in maxdims)
        if len(maxdims) != len(dims):
            raise ValueError("maxdims must have the rank of dims")
        if any(m != UNLIMITED and m < d for d, m in zip(dims, maxdims)):
            raise ValueError("maxdims is smaller than dims")
    return SpaceID(SIMPLE, dims, maxdims)
