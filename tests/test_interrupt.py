"""Ctrl-C stops a long read or write promptly, with KeyboardInterrupt, and the
store stays readable (every chunk written before the interrupt is whole).

Each scenario runs in a child process that the test interrupts with SIGINT.
The tests hold on a busy machine:

* The signal is sent once the child is known to be *inside* the work (a
  chunk of the long write is stored; the read loop has done a read), not
  after a fixed sleep that a slow machine can outrun or undershoot.
* The work lasts far longer than the test waits for it to stop, so the child
  can only report "finished" (or still be running) if the interrupt was lost.
* Every wait is bounded, and a child still running at the end is killed.
* The child installs Python's own Ctrl-C handler. A process started as a
  background job of a non-interactive shell (a CI runner's ``cmd &``) has
  SIGINT *ignored*, its children inherit that, and then Python rightly never
  raises KeyboardInterrupt: the child finishes ("finished 3.99", exit 0) and
  a read loop runs on. That is how a CI run on a busy machine lost its
  Ctrl-Cs; ``test_ctrl_c_under_load`` runs children that inherit an ignored
  SIGINT, with both cores busy.
"""

import os
import queue
import signal
import subprocess
import sys
import textwrap
import threading
import time

import numpy as np
import pytest

import h5lake

CHILD = textwrap.dedent("""
    import signal, sys, time, numpy as np, h5lake
    # Python's Ctrl-C handler whatever this process inherited (see the docstring).
    signal.signal(signal.SIGINT, signal.default_int_handler)
    path, op, budget = sys.argv[1], sys.argv[2], float(sys.argv[3])
    f = h5lake.File(path, "a")
    d = f["big"]
    data = np.random.default_rng(0).random(d.shape) if op == "write" else None
    t = time.perf_counter()
    try:
        # From here on a Ctrl-C must end in the except clause below.
        print("ready", flush=True)
        if op == "write":
            d[...] = data           # one call, many seconds of zstd-19
        else:
            # Big reads (the helper-thread path) or 1-element ones (the
            # fast path), for far longer than the test waits.
            read = (lambda: d[...]) if op == "read" else (lambda: d[7, 9])
            read()
            print("inside", flush=True)
            while time.perf_counter() - t < budget:
                read()
    except KeyboardInterrupt:
        print("interrupted %.2f" % (time.perf_counter() - t), flush=True)
        sys.exit(3)
    print("finished %.2f" % (time.perf_counter() - t), flush=True)
""")

# The children's chunk pool, whatever the machine (the default on 2 cores): a
# many-core machine must not finish the long write before the signal lands.
CHILD_THREADS = "8"
# The child's reads go on this long; the test never waits that long.
BUDGET = 600.0
# Bound on the child getting ready (imports, 128 MiB of random numbers) and
# into its work, on a loaded machine.
START_TIMEOUT = 120.0
# Bound on the child exiting after the signal: far beyond "promptly" (which
# each test asserts), short of the work's length.
STOP_TIMEOUT = 60.0


def _lines(stream):
    """The lines of `stream`, as a queue a reader thread fills (None at EOF):
    reads with a timeout."""
    q = queue.Queue()

    def pump():
        for line in stream:
            q.put(line.strip())
        q.put(None)

    threading.Thread(target=pump, daemon=True).start()
    return q


def _next_line(lines, child, what):
    try:
        line = lines.get(timeout=START_TIMEOUT)
    except queue.Empty:
        line = f"nothing within {START_TIMEOUT:.0f}s"
    if line != what:
        child.kill()
        child.wait(timeout=30)
        pytest.fail(f"expected {what!r} from the child, got {line!r}; stderr:\n{child.stderr.read()[-2000:]}")


def _wait_for_chunks(path, child, lines):
    """Until the child's write has stored a chunk (so it is inside the call)."""
    deadline = time.monotonic() + START_TIMEOUT
    with h5lake.File(path, "r") as f:
        d = f["big"]
        while d._fs.raw.dataset_chunk_count(d._oid) == 0:
            assert child.poll() is None, ("the child exited before writing", lines.queue)
            assert time.monotonic() < deadline, "the child stored no chunk in time"
            time.sleep(0.005)


def _interrupt(path, op, delay=0.0, inherit_ignored=False):
    """Runs the child, sends SIGINT once it is inside its work (plus `delay`
    seconds), and returns (exit code, last line, seconds from the signal to
    the child's exit). `inherit_ignored`: the child starts with SIGINT
    ignored, as a background job's children do."""
    old = signal.signal(signal.SIGINT, signal.SIG_IGN) if inherit_ignored else None
    try:
        child = subprocess.Popen([sys.executable, "-c", CHILD, str(path), op, str(BUDGET)],
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                 env={**os.environ, "H5LAKE_THREADS": CHILD_THREADS})
    finally:
        if inherit_ignored:
            signal.signal(signal.SIGINT, old)
    try:
        lines = _lines(child.stdout)
        _next_line(lines, child, "ready")
        if op == "write":
            _wait_for_chunks(path, child, lines)
        else:
            _next_line(lines, child, "inside")
        time.sleep(delay)
        t = time.perf_counter()
        child.send_signal(signal.SIGINT)
        try:
            child.wait(timeout=STOP_TIMEOUT)
        except subprocess.TimeoutExpired:
            pass
        if child.poll() is None:
            pytest.fail(f"the interrupt was lost: the child ran on {STOP_TIMEOUT:.0f}s after SIGINT")
        dt = time.perf_counter() - t
        try:
            out = lines.get(timeout=10)
        except queue.Empty:
            out = None
        return child.returncode, out or child.stderr.read().strip()[-2000:], dt
    finally:
        if child.poll() is None:
            child.kill()
            child.wait(timeout=30)
        child.stdout.close()
        child.stderr.close()


def _make_write_target(path):
    with h5lake.File(path, "w") as f:
        # 128 MiB of random doubles at zstd 19: one write call takes seconds
        # (minutes on a loaded machine); the signal comes once one chunk is
        # stored, so finishing early means it was interrupted.
        f.create_dataset("big", shape=(2048, 8192), dtype="f8", chunks=(256, 256), compression="zstd",
                         compression_opts=19)


def _check_write_interrupted(path, code, out, dt, bound):
    assert code == 3 and out.startswith("interrupted"), (code, out)
    assert dt < bound, f"took {dt:.2f}s to stop: the call was not interrupted, it ran to its end"
    with h5lake.File(path, "r") as f:
        d = f["big"]
        v = d[...]
        assert v.shape == d.shape and np.isfinite(v).all()
        # Some chunks made it, some did not: each is whole (random data) or fill (0).
        blocks = v.reshape(8, 256, 32, 256).swapaxes(1, 2).reshape(256, -1)
        written = (blocks != 0).all(axis=1)
        assert ((blocks == 0).all(axis=1) | written).all(), "a torn chunk"
        assert 0 < written.sum() < 256


def _make_read_source(path):
    with h5lake.File(path, "w") as f:
        # 64 MiB per read: above the size from which reads are stopped while
        # they run.
        f.create_dataset("big", data=np.ones((2048, 4096)), chunks=(256, 512), compression="gzip")


def test_ctrl_c_stops_one_long_write_promptly(tmp_path):
    path = tmp_path / "big.h5l"
    _make_write_target(path)
    code, out, dt = _interrupt(path, "write")
    _check_write_interrupted(path, code, out, dt, 3)


@pytest.mark.parametrize("op", ["read", "small"])
def test_ctrl_c_stops_a_read_loop(tmp_path, op):
    """Big reads (stopped while they run) and 1-element ones (the fast path:
    a signal during one is raised as it returns)."""
    path = tmp_path / "r.h5l"
    _make_read_source(path)
    code, out, dt = _interrupt(path, op)
    assert code == 3 and out.startswith("interrupted"), (code, out)
    assert dt < 5


def _busy():
    """A process that keeps one core busy (and exits by itself after a while,
    should the test's cleanup never run)."""
    return subprocess.Popen([sys.executable, "-c",
                             "import time\nt = time.monotonic()\nwhile time.monotonic() - t < 900: pass"])


def test_ctrl_c_under_load(tmp_path):
    """The scenarios above, several times each at different moments, while
    two busy loops load the CPUs and with SIGINT ignored in what the children
    inherit (as under a CI runner's background job)."""
    wpath, rpath = tmp_path / "w.h5l", tmp_path / "r.h5l"
    _make_read_source(rpath)
    hogs = [_busy(), _busy()]
    try:
        for delay in (0.0, 0.05, 0.25):
            _make_write_target(wpath)
            code, out, dt = _interrupt(wpath, "write", delay, inherit_ignored=True)
            _check_write_interrupted(wpath, code, out, dt, 3)
            for op in ("read", "small"):
                code, out, dt = _interrupt(rpath, op, delay, inherit_ignored=True)
                assert code == 3 and out.startswith("interrupted"), (op, delay, code, out)
                assert dt < 5, (op, delay, dt)
    finally:
        for h in hogs:
            h.kill()
            h.wait(timeout=30)
