"""Dataset region references (h5py's ``dset.regionref[...]`` and
``dset[ref]``): a selection of a dataset turned into the form h5json and
HSDS store (``select_type`` and the selection spelled out), and back into
a read.

A read gives what h5py gives: the selection's own shape when it is a grid
(every combination of some indices along each axis: what slices and an
index list make), else the selected elements in a row in C order (points
in their order).
"""

import itertools

import numpy as np

from . import selections as sel
from .base import Empty, product
from .h5t import RegionReference

#: Hyperslabs of more blocks than this are stored as HDF5 describes a
#: regular one (start, stride, count, block), not block by block (as the
#: VOL connector stores them).
MAX_LISTED_BLOCKS = 4096


class RegionRefProxy:
    """``dset.regionref``: ``dset.regionref[sel]`` makes a reference to the
    selection; ``shape(ref)`` and ``selection(ref)`` describe one."""

    def __init__(self, dset):
        self._dset = dset

    def __getitem__(self, args):
        dset = self._dset
        dset._fs.check()
        selection = sel.select(dset.shape, args)
        return RegionReference(dset._oid, stored_selection(selection))

    def shape(self, ref):
        """The shape of the dataset ``ref`` refers to."""
        return self._target(ref).shape

    def selection(self, ref):
        """The shape a read of ``ref`` gives."""
        target = self._target(ref)
        return _Plan(target.shape, ref).out_shape

    def _target(self, ref):
        if not isinstance(ref, RegionReference):
            raise TypeError("Expected a region reference, not %r" % (ref,))
        return self._dset.file[ref]


def stored_selection(selection):
    """h5json's form (without the dataset's id) of a selection."""
    if isinstance(selection, sel.ScalarSelection):
        return {"select_type": "H5S_SEL_ALL"}
    if isinstance(selection, sel.PointSelection):
        if not len(selection.points):
            return {"select_type": "H5S_SEL_NONE"}
        return {"select_type": "H5S_SEL_POINTS", "selection": selection.points.tolist()}
    axes = _axis_indices(selection)
    if any(len(a) == 0 for a in axes):
        return {"select_type": "H5S_SEL_NONE"}
    runs = [_runs(a) for a in axes]
    if product(len(r) for r in runs) > MAX_LISTED_BLOCKS and all(map(_regular, runs)):
        return {"select_type": "H5S_SEL_HYPERSLABS",
                "start": [r[0][0] for r in runs],
                "stride": [r[1][0] - r[0][0] if len(r) > 1 else r[0][1] - r[0][0] + 1
                           for r in runs],
                "count": [len(r) for r in runs],
                "block": [r[0][1] - r[0][0] + 1 for r in runs]}
    blocks = [[[b[0] for b in combo], [b[1] for b in combo]] for combo in itertools.product(*runs)]
    return {"select_type": "H5S_SEL_HYPERSLABS", "selection": blocks}


def read(dset, ref, new_dtype=None):
    """``dset[ref]``: the elements of ``dset`` the region selects."""
    if not ref:
        raise ValueError("Invalid region reference (null)")
    selection = selection_of(dset.shape, ref)
    if isinstance(selection, sel.NoSelection):
        return Empty(np.dtype(new_dtype if new_dtype is not None else dset.dtype))
    if isinstance(selection, sel.ScalarSelection):
        return dset.__getitem__((), new_dtype=new_dtype)
    return dset.__getitem__(selection, new_dtype=new_dtype)


def selection_of(shape, ref):
    """The selection ``ref`` makes on a dataset of ``shape``; TypeError
    when its rank is another."""
    plan = _Plan(shape, ref)
    rank = len(shape)
    if plan.kind == "all":
        return sel.SimpleSelection(shape) if rank else sel.ScalarSelection(ellipsis=False)
    if plan.kind == "none":
        if not rank:
            return sel.NoSelection()
        return sel.SimpleSelection(shape, (0,) * rank, (0,) * rank, (1,) * rank)
    if plan.kind == "points":
        return sel.PointSelection(shape, plan.points)
    if plan.kind == "grid":
        return sel.ListSelection(shape, (0,) * rank, [len(a) for a in plan.axes], (1,) * rank,
                                 (False,) * rank, dict(enumerate(plan.axes)))
    # Blocks that make no grid: their elements in C order.
    return sel.PointSelection(shape, np.argwhere(plan.mask) + plan.lo)


class _Plan:
    """What a stored selection reads on a dataset of ``shape``."""

    def __init__(self, shape, ref):
        s = ref._sel
        kind = s.get("select_type", "H5S_SEL_ALL")
        rank = len(shape)
        self.kind = None
        if kind == "H5S_SEL_ALL":
            self.kind, self.out_shape = "all", tuple(shape)
        elif kind == "H5S_SEL_NONE":
            self.kind, self.out_shape = "none", None if rank == 0 else (0,) * rank
        elif kind == "H5S_SEL_POINTS":
            given = s.get("selection") or []
            if any(len(p) != rank for p in given):
                raise TypeError("Reference shape does not match dataset shape")
            pts = np.asarray(given, dtype=np.int64).reshape(-1, rank or 1)
            self._check(shape, rank, pts.max(axis=0) if len(pts) else None)
            self.kind, self.points, self.out_shape = "points", pts, (len(pts),)
        elif kind == "H5S_SEL_HYPERSLABS":
            self._hyperslabs(shape, s)
        else:
            raise ValueError("Unknown region selection type %r" % (kind,))

    @staticmethod
    def _check(shape, rank, top):
        if rank != len(shape):
            raise TypeError("Reference shape does not match dataset shape")
        if top is not None and any(int(t) >= n for t, n in zip(top, shape)):
            raise ValueError("Region reference selects elements outside the dataset "
                             "(selection + offset not within extent)")

    def _hyperslabs(self, shape, s):
        if "selection" not in s:
            # The regular form: a grid.
            start, stride, count, block = (np.asarray(s[k], dtype=np.int64)
                                           for k in ("start", "stride", "count", "block"))
            axes = [np.concatenate([np.arange(a + k * st, a + k * st + b) for k in range(c)])
                    if c else np.zeros(0, np.int64)
                    for a, st, c, b in zip(start, stride, count, block)]
            self._grid(shape, axes)
            return
        blocks = np.asarray(s["selection"], dtype=np.int64)
        if not len(blocks):
            self.kind, self.out_shape = "none", (0,) * len(shape)
            return
        lo, hi = blocks[:, 0, :], blocks[:, 1, :]
        self._check(shape, blocks.shape[2], hi.max(axis=0))
        # A grid when the blocks are every combination of some intervals
        # along each axis (each block once).
        per_axis = [sorted(set(zip(lo[:, d].tolist(), hi[:, d].tolist())))
                    for d in range(lo.shape[1])]
        combos = {tuple(map(tuple, b.T.tolist())) for b in blocks}
        if len(combos) == len(blocks) == product(len(p) for p in per_axis) and \
                all(_disjoint(p) for p in per_axis):
            self._grid(shape, [np.concatenate([np.arange(a, b + 1) for a, b in p])
                               for p in per_axis])
            return
        box_lo, box_hi = lo.min(axis=0), hi.max(axis=0)
        mask = np.zeros(tuple(box_hi - box_lo + 1), dtype=bool)
        for a, b in zip(lo - box_lo, hi - box_lo):
            mask[tuple(slice(x, y + 1) for x, y in zip(a, b))] = True
        self.kind, self.lo, self.hi, self.mask = "mask", box_lo, box_hi, mask
        self.out_shape = (int(mask.sum()),)

    def _grid(self, shape, axes):
        self._check(shape, len(axes), [a.max() if len(a) else 0 for a in axes])
        self.kind, self.axes = "grid", [np.asarray(a, dtype=np.int64) for a in axes]
        self.out_shape = tuple(len(a) for a in axes)
        if product(self.out_shape) == 0:
            self.kind = "none"


def _axis_indices(selection):
    """The indices a simple selection (slices, ints, index lists) takes
    along each axis."""
    lists = getattr(selection, "lists", {})
    out = []
    for i, (a, c, s) in enumerate(zip(selection.start, selection.count, selection.step)):
        if i in lists:
            out.append(np.asarray(lists[i], dtype=np.int64))
        elif isinstance(selection, sel.FancySelection) and i == selection.axis:
            out.append(np.asarray(selection.indices, dtype=np.int64))
        else:
            out.append(np.arange(a, a + c * s, s, dtype=np.int64))
    return out


def _runs(idx):
    """Increasing indices as runs of consecutive ones: (first, last) pairs."""
    idx = np.asarray(idx, dtype=np.int64)
    breaks = np.nonzero(np.diff(idx) != 1)[0]
    firsts = np.concatenate([[0], breaks + 1])
    lasts = np.concatenate([breaks, [len(idx) - 1]])
    return [(int(idx[f]), int(idx[e])) for f, e in zip(firsts, lasts)]


def _regular(runs):
    """Runs of one length, evenly spaced: HDF5's regular hyperslab."""
    lengths = {b - a for a, b in runs}
    gaps = {runs[k + 1][0] - runs[k][0] for k in range(len(runs) - 1)}
    return len(lengths) == 1 and len(gaps) <= 1


def _disjoint(intervals):
    return all(intervals[k][1] < intervals[k + 1][0] for k in range(len(intervals) - 1))
