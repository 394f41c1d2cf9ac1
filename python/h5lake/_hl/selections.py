"""Selections: an index expression + a dataset shape -> what the engine reads.

Every index on a Dataset goes through :func:`select`, which returns one of

* :class:`SimpleSelection` – ints, slices (step >= 1) and Ellipsis; supports
  broadcasting on write (h5py's rules);
* :class:`FancySelection` – as simple, plus ONE increasing index list (or
  1-D boolean array, datasets of rank >= 2 only) on one axis; no
  broadcasting;
* :class:`PointSelection` – a boolean mask of the full dataset shape
  (1-D result, read/written with the engine's point calls);
* :class:`ScalarSelection` – ``()``/``...`` on a scalar dataset.

``engine_sel`` is the selection list of ``_core`` (one ``(start, count,
step)`` tuple or int64 index array per dimension), ``mshape`` the shape of
the block the engine fills, ``array_shape`` what the user gets (integer-
indexed axes dropped).  Validation mirrors h5py's exception types and
messages, and always happens before the engine is called.
"""

from __future__ import annotations

import numpy as np

from .base import product


class Selection:
    """Base class."""

    shape = ()
    mshape = ()
    array_shape = ()

    @property
    def nselect(self):
        return product(self.mshape)

    def expand_shape(self, source_shape):
        if product(source_shape) != self.nselect:
            raise TypeError("Broadcasting is not supported for point-wise selections")
        return source_shape

    def broadcast_value(self, val):
        """Reshape/broadcast ``val`` (ndarray) to ``mshape`` for writing."""
        eshape = self.expand_shape(val.shape)
        return val.reshape(eshape)

    def check_extent(self, writing=False):
        """Raise OSError if the selection reaches beyond the dataset (only
        possible for index lists, see :class:`FancySelection`); called just
        before the engine reads or writes, as HDF5 fails at that point."""


class ScalarSelection(Selection):
    """The whole of a scalar dataset (``()`` or ``...``)."""

    def __init__(self, ellipsis):
        self.shape = ()
        self.mshape = ()
        # ``dset[...]`` gives a 0-d array, ``dset[()]`` a numpy scalar
        self.array_shape = () if ellipsis else None
        self.engine_sel = []

    def expand_shape(self, source_shape):
        if product(source_shape) != 1:
            raise TypeError("Can't broadcast %s -> %s" % (source_shape, ()))
        return ()


class NoSelection(Selection):
    """None of a scalar dataset (a region reference that selects nothing
    of one): reads as ``Empty``."""

    def __init__(self):
        self.shape = ()
        self.mshape = (0,)
        self.array_shape = None


class SimpleSelection(Selection):
    """Regular hyperslab made of ints and slices."""

    def __init__(self, shape, start=None, count=None, step=None, scalar=None):
        self.shape = tuple(shape)
        rank = len(self.shape)
        self.start = tuple(start) if start is not None else (0,) * rank
        self.count = tuple(count) if count is not None else self.shape
        self.step = tuple(step) if step is not None else (1,) * rank
        self.scalar = tuple(scalar) if scalar is not None else (False,) * rank
        self.mshape = self.count
        self.array_shape = tuple(c for c, s in zip(self.count, self.scalar) if not s)

    @property
    def engine_sel(self):
        return [(int(a), int(c), int(s)) for a, c, s in zip(self.start, self.count, self.step)]

    def expand_shape(self, source_shape):
        """h5py's rule: align trailing dims, skip integer-indexed axes,
        source dims must equal the selected count or be 1."""
        count, scalar = self.count, self.scalar
        rank = len(count)
        remaining = list(source_shape)
        eshape = []
        for idx in range(1, rank + 1):
            if len(remaining) == 0 or scalar[-idx]:
                eshape.append(1)
            else:
                t = remaining.pop()
                if t == 1 or count[-idx] == t:
                    eshape.append(t)
                else:
                    raise TypeError("Can't broadcast %s -> %s" % (tuple(source_shape), self.array_shape))
        if any(n > 1 for n in remaining):
            raise TypeError("Can't broadcast %s -> %s" % (tuple(source_shape), self.array_shape))
        return tuple(eshape[::-1])

    def broadcast_value(self, val):
        eshape = self.expand_shape(val.shape)
        val = val.reshape(eshape)
        if eshape != tuple(self.mshape):
            val = np.broadcast_to(val, self.mshape)
        return val


class _IndexListSelection(SimpleSelection):
    """A simple selection with index lists on some axes: no broadcasting."""

    def expand_shape(self, source_shape):
        if tuple(source_shape) != tuple(self.array_shape):
            # h5py tolerates extra leading length-1 axes only for simple selections
            raise TypeError("Broadcasting is not supported for complex selections")
        return tuple(self.mshape)

    def broadcast_value(self, val):
        return val.reshape(self.expand_shape(val.shape))


class FancySelection(_IndexListSelection):
    """Simple selection with one axis given as a list of increasing indices."""

    def __init__(self, shape, start, count, step, scalar, axis, indices):
        super().__init__(shape, start, count, step, scalar)
        self.axis = axis
        self.indices = indices
        # h5py's bounds check lets an index equal to the axis length through
        # (``a > l``); HDF5 then refuses the read/write with an OSError.
        n = self.shape[axis]
        self.beyond = bool(len(indices)) and int(indices[-1]) >= n

    def check_extent(self, writing=False):
        if self.beyond:
            raise OSError("Can't %s data (selection + offset not within extent for file dataspace)"
                          % ('write' if writing else 'read'))

    @property
    def engine_sel(self):
        sel = []
        for i, (a, c, s) in enumerate(zip(self.start, self.count, self.step)):
            if i == self.axis:
                sel.append(self.indices)
            else:
                sel.append((int(a), int(c), int(s)))
        return sel


class ListSelection(_IndexListSelection):
    """Simple selection with some axes given as increasing index lists (the
    blocks of ``MultiBlockSlice``s, and at most one fancy index list)."""

    def __init__(self, shape, start, count, step, scalar, lists):
        super().__init__(shape, start, count, step, scalar)
        self.lists = lists

    def check_extent(self, writing=False):
        for axis, idx in self.lists.items():
            if len(idx) and int(idx[-1]) >= self.shape[axis]:
                raise OSError("Can't %s data (selection + offset not within extent for file "
                              "dataspace)" % ('write' if writing else 'read'))

    @property
    def engine_sel(self):
        return [self.lists[i] if i in self.lists else (int(a), int(c), int(s))
                for i, (a, c, s) in enumerate(zip(self.start, self.count, self.step))]


class PointSelection(Selection):
    """Point-wise selection from a boolean mask of the full shape."""

    def __init__(self, shape, points):
        self.shape = tuple(shape)
        self.points = np.ascontiguousarray(points, dtype=np.int64).reshape(-1, len(self.shape))
        self.mshape = (len(self.points),)
        self.array_shape = self.mshape

    @classmethod
    def from_mask(cls, mask):
        return cls(mask.shape, np.transpose(mask.nonzero()))

    def broadcast_value(self, val):
        return val.reshape(self.expand_shape(val.shape))


# ---------------------------------------------------------------------------

def _is_int(arg):
    """What h5py takes as one index (``operator.index`` works): Python ints
    and bools, numpy integers, 0-d integer arrays -- not numpy bools."""
    if isinstance(arg, (bool, int, np.integer)):
        return True
    if isinstance(arg, np.ndarray) and arg.ndim == 0 and arg.dtype.kind in 'iu':
        return True
    return False


def _fancy_indices(arg, length, rank):
    """Increasing int64 indices for a list / int array / 1-D bool array on
    one axis (h5py's rules, checks in its order)."""
    if isinstance(arg, np.ndarray):
        if arg.ndim != 1:
            raise TypeError("Only 1D arrays allowed for fancy indexing")
        arr = arg
    else:
        arr = np.asarray(arg)
        if arr.ndim != 1:
            raise TypeError("Selection can't process %r" % (arg,))
        if arr.size == 0:
            arr = arr.astype(np.intp)           # asarray([]) is float
    if arr.dtype.kind == 'b':
        if rank == 1:
            # h5py: a 1-D mask on a 1-D dataset must be the only argument
            # (then it is a point selection)
            raise TypeError("Use other code for boolean selection on 1D dataset")
        if arr.shape[0] != length:
            raise TypeError("boolean index did not match indexed array")
        arr = np.nonzero(arr)[0]
    if arr.dtype.kind not in 'iu':
        raise TypeError("Indexing arrays must have integer dtypes")
    return arr


def _check_fancy(arr, length):
    """Bounds (IndexError) and order (TypeError) of index list ``arr``;
    returns C-contiguous int64 indices.  An index equal to ``length`` passes
    (as in h5py; the I/O fails later, see FancySelection.check_extent)."""
    if arr.size == 0:
        return np.zeros((0,), dtype=np.int64)
    if arr.dtype.kind == 'u' and arr.max() > length:
        idx = None
    else:
        idx = arr.astype(np.int64)
        if idx.min() < 0:
            idx = np.where(idx < 0, idx + length, idx)
    if idx is None or idx.min() < 0 or idx.max() > length:
        if length == 0:
            raise IndexError("Fancy indexing out of range for empty dimension")
        raise IndexError("Fancy indexing out of range for (0-%d)" % (length - 1))
    if np.any(np.diff(idx) <= 0):
        raise TypeError("Indexing elements must be in increasing order")
    return np.ascontiguousarray(idx)


class MultiBlockSlice:
    """A regular hyperslab along one axis, as h5py's ``MultiBlockSlice``:
    ``count`` blocks of ``block`` elements, ``stride`` apart, from
    ``start`` (``count=None``: as many whole blocks as fit). Selects the
    blocks' elements in order: ``dset[MultiBlockSlice(start=1, stride=5,
    count=2, block=4)]`` reads elements 1-4 and 6-9. The arguments come in
    h5py's order: start, stride, count, block."""

    def __init__(self, start=0, stride=1, count=None, block=1):
        if start < 0:
            raise ValueError("Start can't be negative")
        if stride < 1 or block < 1 or (count is not None and count < 1):
            raise ValueError("Stride, count and block can't be 0")
        if block > stride:
            raise ValueError("Blocks will overlap if block > stride")
        self.start, self.count, self.stride, self.block = start, count, stride, block

    def indices(self, length):
        """``(start, stride, count, block)`` on an axis of ``length``
        (ValueError when the blocks do not fit)."""
        start, stride, block = self.start, self.stride, self.block
        if self.count is None:
            count = (length - start - block) // stride + 1
            if count < 1:
                raise ValueError("No full blocks can fit in axis of length %d" % length)
        else:
            count = self.count
            end = start + stride * (count - 1) + block
            if end > length:
                raise ValueError("%d blocks of %d, %d apart from %d, end at %d, "
                                 "past the axis of length %d"
                                 % (count, block, stride, start, end, length))
        return start, stride, count, block

    def positions(self, length):
        """The selected indices, increasing."""
        start, stride, count, block = self.indices(length)
        base = start + stride * np.arange(count, dtype=np.int64)
        return (base[:, None] + np.arange(block, dtype=np.int64)).reshape(-1)

    def __repr__(self):
        return "%s(start=%s, count=%s, stride=%s, block=%s)" % (
            type(self).__name__, self.start, self.count, self.stride, self.block)


def select(shape, args, dataset=None):
    """Turn ``args`` (what ``__getitem__`` received, field names removed)
    into a Selection on a dataset of ``shape``; a region reference needs
    the ``dataset`` it is applied to (h5py's signature)."""
    if not isinstance(args, tuple):
        args = (args,)
    shape = tuple(shape)
    from .h5t import RegionReference
    if len(args) == 1 and isinstance(args[0], RegionReference):
        if dataset is None:
            raise TypeError("Cannot apply a region reference without a dataset")
        from .regions import selection_of
        return selection_of(shape, args[0])

    if any(a is None for a in args):
        raise TypeError("Indexing with None (or np.newaxis) is not supported")

    if len(args) == 1:
        arg = args[0]
        if isinstance(arg, Selection):
            if arg.shape != shape:
                raise TypeError("Mismatched selection shape")
            return arg
        if isinstance(arg, np.ndarray) and arg.dtype.kind == 'b':
            if arg.shape == shape:
                return PointSelection.from_mask(arg)
            if arg.shape != shape[:1]:
                raise TypeError("Boolean indexing array has incompatible shape")

    rank = len(shape)
    if rank == 0:
        if args == () or (len(args) == 1 and args[0] is Ellipsis):
            return ScalarSelection(ellipsis=(args != ()))
        raise ValueError("Illegal slicing argument for scalar dataspace")

    # expand the Ellipsis
    n_ell = sum(1 for a in args if a is Ellipsis)
    if n_ell > 1:
        raise ValueError("Only one ellipsis may be used.")
    n_real = len(args) - n_ell
    if n_real > rank:
        raise ValueError("%d indexing arguments for %d dimensions" % (n_real, rank))
    if n_ell:
        i = next(i for i, a in enumerate(args) if a is Ellipsis)
        args = args[:i] + (slice(None),) * (rank - n_real) + args[i + 1:]
    else:
        args = args + (slice(None),) * (rank - n_real)

    start, count, step, scalar = [], [], [], []
    fancy_axis = None
    fancy_idx = None
    blocks = {}
    for dim, (arg, length) in enumerate(zip(args, shape)):
        if isinstance(arg, slice):
            if arg.step is not None:
                st = int(arg.step)
                if st == 0:
                    raise ValueError("slice step cannot be zero")
                if st < 0:
                    raise ValueError("Step must be >= 1 (got %d)" % st)
            a, b, s = arg.indices(length)
            n = len(range(a, b, s))
            start.append(a if n else 0)
            count.append(n)
            step.append(s)
            scalar.append(False)
        elif _is_int(arg):
            i = int(arg)
            if length == 0:
                raise IndexError("Index (%d) out of range for empty dimension" % i)
            if i < 0:
                i += length
            if not 0 <= i < length:
                raise IndexError("Index (%d) out of range for (0-%d)" % (i, length - 1))
            start.append(i)
            count.append(1)
            step.append(1)
            scalar.append(True)
        elif isinstance(arg, MultiBlockSlice):
            idx = arg.positions(length)
            blocks[dim] = idx
            start.append(0)
            count.append(len(idx))
            step.append(1)
            scalar.append(False)
        else:
            arr = _fancy_indices(arg, length, rank)
            if fancy_axis is not None:
                raise TypeError("Only one indexing vector or array is currently allowed for fancy indexing")
            idx = _check_fancy(arr, length)
            fancy_axis, fancy_idx = dim, idx
            start.append(0)
            count.append(len(idx))
            step.append(1)
            scalar.append(False)

    if blocks:
        if fancy_axis is not None:
            blocks[fancy_axis] = fancy_idx
        return ListSelection(shape, start, count, step, scalar, blocks)
    if fancy_axis is not None:
        return FancySelection(shape, start, count, step, scalar, fancy_axis, fancy_idx)
    return SimpleSelection(shape, start, count, step, scalar)
