#!/usr/bin/env bash
# Regenerates src/sys.rs from the HDF5 2.0.0 headers that hdf5-metno-src
# (=0.10.0, the version the h5py 3.16 wheel bundles) installs while building.
# Needs bindgen-cli (`cargo install bindgen-cli`) and libclang (`pip install
# libclang` has one; point LIBCLANG_PATH at its clang/native directory).
#
# Types and constants are bound statically; functions are bound for dynamic
# loading (`Hdf5Api`): the connector calls the HDF5 library that loaded it,
# which is not on the link line (h5py's wheel bundles a renamed copy).
set -euo pipefail
cd "$(dirname "$0")/.."
target="${CARGO_TARGET_DIR:-$HOME/.cache/h5lake-target}"
inc="${HDF5_INCLUDE:-$(ls -d "$target"/*/build/hdf5-metno-src-*/out/include 2>/dev/null | head -1)}"
[ -f "$inc/H5VLconnector.h" ] || { echo "HDF5 headers not found: build h5lake-hdf5 first or set HDF5_INCLUDE" >&2; exit 1; }
export LIBCLANG_PATH="${LIBCLANG_PATH:-$(python3 -c 'import clang, os; print(os.path.join(os.path.dirname(clang.__file__), "native"))')}"
bindgen bindings/wrapper.h \
    --allowlist-type 'H5.*|hid_t|herr_t|htri_t|hsize_t|hssize_t|haddr_t|hbool_t|hvl_t|hobj_ref_t|hdset_reg_ref_t' \
    --allowlist-var 'H5.*' \
    --blocklist-var '.*_g' \
    --allowlist-function 'H5.*' \
    --blocklist-function 'H5PLget_plugin_.*' \
    --dynamic-loading Hdf5Api \
    --default-enum-style consts \
    --no-doc-comments \
    --use-core \
    --raw-line '#![allow(non_upper_case_globals, non_camel_case_types, non_snake_case, dead_code, clippy::all)]' \
    -o src/sys.rs \
    -- -I"$inc" -I"$(gcc -print-file-name=include)"
echo "wrote src/sys.rs from $inc"
