"""Big reads write into pages earlier reads' arrays left (the pool behind
``_core.pooled_empty``): the arrays are ordinary NumPy arrays, values are
never mixed up between them, and the pool keeps no more than its cap."""

import os
import pickle
import subprocess
import sys
import threading

import numpy as np
import pytest

import h5lake
from h5lake import _core

MB = 1 << 20


def test_a_freed_big_read_is_reused_by_the_next(tmp_path):
    n = 3 * MB
    with h5lake.File(tmp_path / "s.h5l", "w") as f:
        dt = np.dtype([("x", "<f4"), ("id", "<i4")])
        a = np.zeros(n, dt)
        a["x"] = np.arange(n)
        a["id"] = -np.arange(n)
        for layout in ("columnar", "row"):
            f.create_dataset(layout, data=a, chunks=(MB,),
                             layout=layout if layout == "columnar" else None)
        for layout in ("columnar", "row"):
            d = f[layout]
            first = d[...]
            assert np.array_equal(first, a)
            live, _idle, cap = _core.pool_state()
            assert cap > 0 and live >= a.nbytes
            del first
            _live, idle, _cap = _core.pool_state()
            assert idle >= a.nbytes
            # The next read takes those pages (no longer idle) and holds
            # its own values, not the last read's.
            second = d[MB:]
            assert _core.pool_state()[1] < idle
            assert np.array_equal(second, a[MB:])
            fields = d.fields(["id"])[...]
            assert np.array_equal(fields["id"], a["id"])
            del second, fields


def test_pooled_arrays_are_ordinary_numpy_arrays():
    a = _core.pooled_empty((8 * MB,), "u1")
    assert a.flags.owndata and a.flags.writeable and a.flags.c_contiguous
    a[:] = 7
    # NumPy's resize reallocates through the pool's handler.
    a.resize((16 * MB,), refcheck=False)
    assert (a[:8 * MB] == 7).all() and (a[8 * MB:] == 0).all()
    a.resize((MB // 2,), refcheck=False)
    assert (a == 7).all()
    b = pickle.loads(pickle.dumps(a))
    assert np.array_equal(a, b)
    small = _core.pooled_empty((10,), "f8")      # below the pool's size
    assert small.shape == (10,) and small.dtype == np.float64
    # Arrays freed in other threads go back safely.
    arrays = [_core.pooled_empty((5 * MB,), "u1") for _ in range(8)]
    for x in arrays:
        x[:] = 1

    def drop(i):
        arrays[i] = None
    threads = [threading.Thread(target=drop, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    live, idle, cap = _core.pool_state()
    assert idle <= cap


@pytest.mark.parametrize("setting, cap", [("0", 0), ("64M", 64 * MB), ("1G", 1 << 30)])
def test_the_pool_is_set_by_the_environment(setting, cap):
    code = ("import numpy as np; from h5lake import _core;"
            "a = _core.pooled_empty((32 << 20,), 'u1'); a[:] = 1;"
            "name = np._core.multiarray.get_handler_name(a); del a;"
            "print(_core.pool_state()[1:], name)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env={**os.environ, "H5LAKE_READ_POOL": setting}).stdout.split(")")
    idle, kept = eval(out[0] + ")")
    assert kept == cap
    # Nothing kept past the cap; with the pool off, NumPy's own allocator.
    assert idle == (0 if cap < (32 << 20) else 32 << 20)
    assert ("default_allocator" in out[1]) == (cap == 0)


def test_a_forked_child_gives_idle_pages_back_too():
    """The pool's sweeper thread does not survive fork: a child starts its
    own, so its idle pages still go back after the idle time."""
    code = ("import os, time, sys; from h5lake import _core;"
            "a = _core.pooled_empty((64 << 20,), 'u1'); a[:] = 1; del a;"
            "pid = os.fork()\n"
            "if pid == 0:\n"
            "    b = _core.pooled_empty((256 << 20,), 'u1'); b[:] = 1; del b\n"
            "    time.sleep(8); os._exit(0 if _core.pool_state()[1] == 0 else 1)\n"
            "_, status = os.waitpid(pid, 0); sys.exit(os.waitstatus_to_exitcode(status))")
    assert subprocess.run([sys.executable, "-c", code], timeout=60).returncode == 0


def test_a_setting_that_is_not_a_size_turns_the_pool_off_and_says_so():
    code = "from h5lake import _core; print(_core.pool_state()[2])"
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                       env={**os.environ, "H5LAKE_READ_POOL": "lots"})
    assert r.stdout.strip() == "0" and "is not a size" in r.stderr, (r.stdout, r.stderr)
