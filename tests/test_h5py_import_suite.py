"""h5py's own high-level tests with ``import h5py`` bound to h5lake (issue
24): the count of passing tests may not fall below the floor in
h5py_import_floor.txt, which only goes up."""

import pathlib
import subprocess
import sys

HERE = pathlib.Path(__file__).resolve().parent


def test_h5py_tests_pass_with_the_import_changed(tmp_path):
    floor = int((HERE / "h5py_import_floor.txt").read_text().split()[0])
    r = subprocess.run([sys.executable, str(HERE / "h5py_import_suite.py"),
                        "--out", str(tmp_path / "report.md"), "--floor", str(floor)],
                       capture_output=True, text=True, timeout=1800)
    print(r.stdout)
    assert r.returncode == 0, r.stdout + r.stderr + (tmp_path / "report.md").read_text()
