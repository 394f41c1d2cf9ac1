"""SWMR as h5py users write it: a writer switches ``swmr_mode`` on and
flushes as it goes; a reader in another process opened with ``swmr=True``
sees what was flushed once it refreshes the dataset."""

import subprocess
import sys

import numpy as np
import pytest

import h5lake

READER = """
import sys
import h5lake
f = h5lake.File(sys.argv[1], "r", libver="latest", swmr=True)
d = f["x"]
print(f.swmr_mode, d.shape, flush=True)
for _ in sys.stdin:
    d.refresh()
    print(d.shape, float(d[...].sum()), flush=True)
"""


def test_a_reader_sees_what_the_writer_flushed(tmp_path):
    path = str(tmp_path / "s.h5l")
    with h5lake.File(path, "w", libver="latest") as w:
        d = w.create_dataset("x", (0,), "f8", maxshape=(None,), chunks=(10,))
        g = w.create_group("g")
        assert w.swmr_mode is False and g.file.swmr_mode is False
        w.swmr_mode = True
        assert w.swmr_mode is True and g.file.swmr_mode is True and w.mode == g.file.mode == "r+"
        reader = subprocess.Popen([sys.executable, "-c", READER, path], stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, text=True)
        try:
            assert reader.stdout.readline().split() == ["True", "(0,)"]
            total = 0.0
            for k in range(3):
                d.resize((d.shape[0] + 5,))
                d[-5:] = k + 1
                total += 5 * (k + 1)
                d.flush()
                reader.stdin.write("refresh\n")
                reader.stdin.flush()
                assert reader.stdout.readline().strip() == f"({5 * (k + 1)},) {total}"
        finally:
            reader.stdin.close()
            reader.wait(60)
        assert reader.returncode == 0
        with pytest.raises(ValueError, match="switch SWMR mode off"):
            w.swmr_mode = False
    with h5lake.File(path, "r") as f:
        assert f.swmr_mode is False
        with pytest.raises(ValueError, match="no write intent"):
            f.swmr_mode = True
        np.testing.assert_array_equal(f["x"][...], np.repeat([1.0, 2.0, 3.0], 5))
