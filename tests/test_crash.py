"""Nothing acknowledged is lost with ``durable=True`` (each call's change is
in the store when it returns; the default mode, durable at flush/close, is
tested in test_durability.py): a child process writes to a store through
h5lake (dataset rows into fixed and growing datasets, groups, attributes),
printing an acknowledgement after each call returns; the parent SIGKILLs it
after N acknowledgements. The store must then open read-only with every
acknowledged item present and correct, and still be writable."""

import os
import signal
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

import h5lake

W = 6          # row width
CAP = 100000   # rows in the fixed-size dataset

CHILD = textwrap.dedent("""
    import sys
    import numpy as np
    import h5lake

    path, W, CAP = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    f = h5lake.File(path, "a", durable=True)
    rows = f.require_dataset("rows", (CAP, W), "i8", chunks=(4, W), fillvalue=-1)
    if "log" not in f:
        f.create_dataset("log", (0,), "f8", maxshape=(None,), chunks=(5,),
                         compression="gzip")
    log = f["log"]
    print("ready", flush=True)
    i = 0
    while True:
        rows[i] = np.arange(W) + i * 1000
        print("row", i, flush=True)
        log.resize((i + 1,))
        log[i] = i / 4
        print("log", i, flush=True)
        if i % 3 == 0:
            g = f.require_group("groups/g%d" % i)
            print("group", i, flush=True)
            g.attrs["i"] = i
            g.attrs["s"] = "text %d" % i
            print("gattr", i, flush=True)
        f.attrs["last"] = i
        f["rows"].attrs["a%d" % i] = np.arange(i % 5 + 1)
        print("attr", i, flush=True)
        i += 1
""")


def _run_and_kill(path, n_acks):
    """Start the child, read until ``n_acks`` acknowledgements, SIGKILL it;
    returns the acknowledgements as (kind, i) pairs."""
    proc = subprocess.Popen([sys.executable, "-c", CHILD, path, str(W), str(CAP)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    acks = []
    deadline = time.monotonic() + 120
    try:
        while len(acks) < n_acks:
            line = proc.stdout.readline()
            if not line:
                err = proc.stderr.read()
                pytest.fail(f"child exited early (rc={proc.poll()}) after {len(acks)} acks:\n{err}")
            parts = line.split()
            if parts[0] != "ready":
                acks.append((parts[0], int(parts[1])))
            assert time.monotonic() < deadline, "child too slow"
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        # anything already printed (and so acknowledged) counts too
        rest = proc.stdout.read()
        proc.stdout.close()
        proc.stderr.close()
    assert proc.returncode == -signal.SIGKILL
    for line in rest.splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[0] != "ready":
            acks.append((parts[0], int(parts[1])))
    return acks


def _check(f, acks, base_rows=()):
    rows = f["rows"]
    log = f["log"]
    done = {}
    for kind, i in acks:
        done.setdefault(kind, set()).add(i)
    rows_done = done.get("row", set()) | set(base_rows)
    assert rows_done, "no acknowledged rows"
    got = rows[:max(rows_done) + 1]
    for i in rows_done:
        np.testing.assert_array_equal(got[i], np.arange(W) + i * 1000, err_msg=f"row {i}")
    for i in done.get("log", ()):
        assert log.shape[0] > i, f"log shape {log.shape} lost acknowledged element {i}"
        assert log[i] == i / 4, f"log[{i}]"
    for i in done.get("group", ()):
        assert f"groups/g{i}" in f, f"group g{i} lost"
    for i in done.get("gattr", ()):
        g = f[f"groups/g{i}"]
        assert g.attrs["i"] == i
        assert g.attrs["s"] == f"text {i}"
    attr_done = done.get("attr", set())
    if attr_done:
        assert f.attrs["last"] >= max(attr_done)
        for i in attr_done:
            np.testing.assert_array_equal(rows.attrs[f"a{i}"], np.arange(i % 5 + 1))
    # Rows beyond the acknowledged ones are either the fill value or the
    # complete row being written at the kill (never a torn mixture).
    hi = max(rows_done) + 1
    nxt = rows[hi]
    assert (nxt == -1).all() or (nxt == np.arange(W) + hi * 1000).all(), nxt
    assert (rows[hi + 1:hi + 9] == -1).all()


@pytest.mark.parametrize("n_acks", [7, 45, 400])
def test_kill9_loses_nothing_acknowledged(tmp_path, n_acks):
    path = str(tmp_path / "crash.h5l")
    acks = _run_and_kill(path, n_acks)
    assert len(acks) >= n_acks

    with h5lake.File(path, "r") as f:
        _check(f, acks)

    # still writable after the crash
    with h5lake.File(path, "a") as f:
        rows = f["rows"]
        top = max(i for k, i in acks if k == "row")
        rows[top + 1] = np.full(W, 7)
        f["log"].resize((f["log"].shape[0] + 2,))
        f.create_group("after_crash").attrs["ok"] = True
        f.attrs["last"] = -5
    with h5lake.File(path, "r") as f:
        got = f["rows"][:top + 2]
        for i in {i for k, i in acks if k == "row"}:
            np.testing.assert_array_equal(got[i], np.arange(W) + i * 1000)
        np.testing.assert_array_equal(got[top + 1], np.full(W, 7))
        assert f["after_crash"].attrs["ok"]
        assert f.attrs["last"] == -5


def test_second_crash_after_reopen(tmp_path):
    """Crash, reopen in the child ('a' mode), crash again: both sessions' work survives."""
    path = str(tmp_path / "crash2.h5l")
    first = _run_and_kill(path, 20)
    with h5lake.File(path, "r") as f:
        _check(f, first)
    # the second child starts again at i=0 and rewrites rows/log with the same values
    second = _run_and_kill(path, 30)
    with h5lake.File(path, "r") as f:
        _check(f, second, base_rows=[i for k, i in first if k == "row"])
