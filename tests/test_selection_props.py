"""Property tests of selections: random shapes (rank 1-3, small extents incl.
1), random chunk shapes and dtypes, random selections (ints, slices with
random start/stop/step incl. negative and out-of-range bounds, Ellipsis, one
index list, boolean masks). For each, the same array goes to h5py and to
h5lake; reads through the selection, writes through it, and then the whole
arrays must agree — and where h5py raises, h5lake must raise the same class.
"""

import itertools
import os
import tempfile

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import h5lake
from diffutil import Raised, assert_same, h5py

pytestmark = pytest.mark.skipif(h5py is None, reason="h5py not installed")

DTYPES = ["<i4", "<f8", "u1", ">i2", "<c8"]
_counter = itertools.count()


@pytest.fixture(scope="module")
def files():
    with tempfile.TemporaryDirectory() as d:
        hf = h5py.File(os.path.join(d, "p.h5"), "w")
        lf = h5lake.File(os.path.join(d, "p.h5l"), "w")
        yield hf, lf
        hf.close()
        lf.close()


def _slice(n):
    bound = st.one_of(st.none(), st.integers(-n - 2, n + 2))
    step = st.one_of(st.none(), st.integers(1, 4))
    return st.builds(slice, bound, bound, step)


@st.composite
def cases(draw, allow_bad_step=False):
    rank = draw(st.integers(1, 3))
    shape = tuple(draw(st.integers(1, 6)) for _ in range(rank))
    chunks = tuple(draw(st.integers(1, n)) for n in shape)
    if draw(st.booleans()):
        chunks = None           # contiguous
    dtype = draw(st.sampled_from(DTYPES))
    seed = draw(st.integers(0, 2**32 - 1))

    kind = draw(st.sampled_from(["basic", "basic", "basic", "list", "axis_mask", "full_mask"]))
    if kind == "full_mask":
        mask = np.array(draw(st.lists(st.booleans(), min_size=int(np.prod(shape)),
                                      max_size=int(np.prod(shape))))).reshape(shape)
        return shape, chunks, dtype, seed, mask
    sel = []
    for n in shape:
        if draw(st.booleans()):
            sel.append(draw(st.integers(-n, n - 1)))
        else:
            sel.append(draw(_slice(n)))
    if kind in ("list", "axis_mask"):
        ax = draw(st.integers(0, rank - 1))
        n = shape[ax]
        if kind == "list":
            idx = sorted(draw(st.sets(st.integers(0, n - 1), min_size=1, max_size=n)))
            sel[ax] = draw(st.sampled_from([idx, np.array(idx, dtype=np.int64)]))
        else:
            sel[ax] = np.array(draw(st.lists(st.booleans(), min_size=n, max_size=n)))
    # Ellipsis replacing a run of whole axes (or added at an end), or fewer
    # indices than axes.
    how = draw(st.sampled_from(["none", "none", "ellipsis", "truncate"]))
    if how == "ellipsis":
        i = draw(st.integers(0, rank))
        j = draw(st.integers(i, rank))
        sel = sel[:i] + [Ellipsis] + sel[j:]
    elif how == "truncate":
        sel = sel[:draw(st.integers(0, rank))]
    if allow_bad_step and draw(st.integers(0, 9)) == 0 and sel:
        k = draw(st.integers(0, len(sel) - 1))
        if sel[k] is not Ellipsis:
            sel[k] = slice(None, None, -1)
    if len(sel) == 1 and draw(st.booleans()):
        return shape, chunks, dtype, seed, sel[0]
    return shape, chunks, dtype, seed, tuple(sel)


def _data(shape, dtype, rng):
    dt = np.dtype(dtype)
    if dt.kind == "c":
        return (rng.integers(-100, 100, shape) + 1j * rng.integers(-100, 100, shape)).astype(dt)
    if dt.kind == "u":
        return rng.integers(0, 255, shape).astype(dt)
    return rng.integers(-1000, 1000, shape).astype(dt)


def check(rh, rl, where):
    """assert_same; in survey mode (H5LAKE_DIFF_SOFT=1) print divergences and go on."""
    try:
        assert_same(rh, rl, where)
    except AssertionError as e:
        if not os.environ.get("H5LAKE_DIFF_SOFT"):
            raise
        print("DIVERGENCE", str(e).replace("\n", " ")[:300])


def _run(fn, obj):
    try:
        return fn(obj)
    except Exception as e:  # noqa: BLE001
        return Raised(e)


def _make(files, shape, chunks, dtype, data):
    hf, lf = files
    name = "d%d" % next(_counter)
    hd = hf.create_dataset(name, data=data, chunks=chunks)
    ld = lf.create_dataset(name, data=data, chunks=chunks)
    return hd, ld


SETTINGS = dict(deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                      HealthCheck.data_too_large])


@settings(max_examples=400, **SETTINGS)
@given(cases(allow_bad_step=True))
def test_read_selection(files, case):
    shape, chunks, dtype, seed, sel = case
    data = _data(shape, dtype, np.random.default_rng(seed))
    hd, ld = _make(files, shape, chunks, dtype, data)
    rh = _run(lambda d: d[sel], hd)
    rl = _run(lambda d: d[sel], ld)
    check(rh, rl, f"read {sel!r} of {shape} chunks={chunks} {dtype}")


@settings(max_examples=400, **SETTINGS)
@given(cases(), st.booleans())
def test_write_selection(files, case, scalar):
    shape, chunks, dtype, seed, sel = case
    rng = np.random.default_rng(seed)
    data = _data(shape, dtype, rng)
    hd, ld = _make(files, shape, chunks, dtype, data)
    rh = _run(lambda d: d[sel], hd)
    if isinstance(rh, Raised):
        return
    if scalar:
        val = _data((), dtype, rng)
    else:
        val = _data(np.shape(rh), dtype, rng)
    wh = _run(lambda d: d.__setitem__(sel, val), hd)
    wl = _run(lambda d: d.__setitem__(sel, val), ld)
    check(wh, wl, f"write {sel!r} of {shape} chunks={chunks} {dtype} scalar={scalar}")
    check(hd[()], ld[()], f"after write {sel!r} of {shape} chunks={chunks} {dtype}")
    # a second read through the selection must agree too
    check(_run(lambda d: d[sel], hd), _run(lambda d: d[sel], ld), "re-read")


@settings(max_examples=100, **SETTINGS)
@given(cases(), st.integers(0, 2**32 - 1))
def test_read_after_resize(files, case, seed):
    """Grow/shrink a chunked dataset, then read a selection: fill values must show."""
    shape, chunks, dtype, _, sel = case
    rng = np.random.default_rng(seed)
    hf, lf = files
    name = "r%d" % next(_counter)
    chunks = chunks or tuple(1 for _ in shape)
    data = _data(shape, dtype, rng)
    kw = dict(data=data, chunks=chunks, maxshape=tuple(None for _ in shape),
              fillvalue=np.array(7, dtype=dtype)[()])
    hd = hf.create_dataset(name, **kw)
    ld = lf.create_dataset(name, **kw)
    new = tuple(int(x) for x in rng.integers(0, 8, len(shape)))
    mid = tuple(int(x) for x in rng.integers(0, 8, len(shape)))
    for d in (hd, ld):
        d.resize(mid)
        d.resize(new)
    check(hd[()], ld[()], f"resize {shape}->{mid}->{new}")
    check(_run(lambda d: d[sel], hd), _run(lambda d: d[sel], ld), f"read {sel!r}")
