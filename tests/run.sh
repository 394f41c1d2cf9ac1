#!/usr/bin/env bash
# Every test h5lake has: the Rust crates' unit and integration tests, then the
# Python suite (differential tests against h5py, property tests, crash tests).
# Exits non-zero on any failure, including "no tests collected".
set -euo pipefail
cd "$(dirname "$0")/.."
# A build directory outside the clone keeps rebuilds incremental across clones.
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/h5lake-target}"
# The bundled HDF5 C library needs CMake >= 3.26 (newer than many distros').
python3 -m pip install -q --disable-pip-version-check "cmake>=3.26"
export CMAKE="${CMAKE:-$(python3 -c 'import cmake, os; print(os.path.join(cmake.CMAKE_BIN_DIR, "cmake"))')}"
python3 -m pip install -q --disable-pip-version-check ".[test]"
cargo test --workspace --exclude h5lake-python
# Run from tests/ so that `import h5lake` finds the installed package, not ./python.
# xarray's netCDF4 engine loads netCDF-C with its own libhdf5: it gets a
# process of its own, away from the other suites' HDF5 libraries (h5py's,
# PyTables', the VOL connector's), which once crashed it mid-run.
cd tests && python3 -m pytest -q -p no:cacheprovider --ignore=test_xarray.py .
python3 -m pytest -q -p no:cacheprovider test_xarray.py
