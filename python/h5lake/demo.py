"""A two-minute tour of h5lake: ``python -m h5lake.demo [DIR]``.

Creates a store (a directory in the HSDS object-store layout), writes groups,
attributes and chunked, compressed datasets with the h5py API, reads them
back, and shows what landed on disk.
"""

from __future__ import annotations

import os
import sys
import tempfile

import numpy as np

import h5lake


def main(argv: list[str]) -> int:
    if len(argv) > 1:
        return tour(argv[1])
    # Without a DIR the tour is shown and then cleaned up.
    with tempfile.TemporaryDirectory(prefix="h5lake-demo-") as where:
        return tour(where)


def tour(where: str) -> int:
    path = os.path.join(where, "tour.h5l")
    print(f"h5lake {h5lake.__version__}: writing {path}")

    with h5lake.File(path, "w") as f:
        f.attrs["title"] = "h5lake tour"
        run = f.create_group("experiment/run1")
        run.attrs["temperature_K"] = 293.15
        img = run.create_dataset(
            "images", shape=(8, 256, 256), dtype="f4", chunks=(1, 256, 256), compression="gzip", shuffle=True
        )
        img[...] = np.random.default_rng(0).random((8, 256, 256), dtype="f4")
        run["counts"] = np.arange(1000, dtype="i8")
        names = run.create_dataset("names", (3,), dtype=h5lake.string_dtype())
        names[...] = ["alpha", "béta", "gamma"]

    with h5lake.File(path, "r") as f:
        def show(name, obj):
            kind = "group" if isinstance(obj, h5lake.Group) else f"dataset {obj.shape} {obj.dtype}"
            print(f"  /{name}: {kind}")

        f.visititems(show)
        img = f["experiment/run1/images"]
        print("  images[3, :2, :4] =", np.round(img[3, :2, :4].astype("f8"), 3).tolist())
        print("  images.chunks =", img.chunks, "compression =", img.compression)
        print("  names =", f["experiment/run1/names"].asstr()[...].tolist())
        print("  title =", f.attrs["title"])

    nfiles = sum(len(files) for _, _, files in os.walk(path))
    print(f"  on disk: {nfiles} objects (JSON metadata + one object per chunk) under {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
