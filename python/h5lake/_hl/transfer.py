"""Real HDF5 files in and out: ``load`` (copy, or link to the file's chunks)
and ``get``. The work runs in Rust (``h5lake-hdf5``) with the GIL released;
Ctrl-C stops it and nothing is left at the destination."""

import json
import os

from .. import _core


def load(src, dest, *, link=False, hyperchunk=None, keep_chunks=False, force=False,
         progress=False):
    """Load the HDF5 file ``src`` into a new h5lake store at ``dest``.

    ``link=True`` copies only metadata: datasets point at the byte ranges of
    their chunks inside ``src``, which must then stay where it is.
    ``hyperchunk`` (bytes; link mode) groups adjacent source chunks into
    logical chunks of about that size (default 4 MiB, 0 = off).
    ``keep_chunks=True`` (copy mode) stores each chunk's bytes exactly as the
    file holds them instead of re-encoding them the way HSDS stores chunks:
    several times faster; h5lake reads the store, a real HSDS server cannot.
    An existing ``dest`` is replaced only with ``force=True``.

    Returns a report: counts of groups, datasets, datatypes, attributes,
    links, linked datasets, chunks and bytes copied, and ``skipped`` (what
    could not be loaded, and why).
    """
    if hyperchunk is not None and int(hyperchunk) < 0:
        raise ValueError("hyperchunk must be a size in bytes (0 turns it off)")
    report = _core.load_hdf5(os.fspath(src), os.fspath(dest), bool(link),
                             None if hyperchunk is None else int(hyperchunk),
                             bool(force), bool(progress), bool(keep_chunks))
    return json.loads(report)


def get(src, dest, *, force=False, progress=False, allow_local_links=None):
    """Write the h5lake store ``src`` out as the HDF5 file ``dest`` (which
    h5py and the HDF5 tools read). An existing ``dest`` is replaced only with
    ``force=True``. A store in a bucket may follow links to local files
    only with ``allow_local_links=True`` (default: ``H5LAKE_ALLOW_LOCAL_LINKS=1``).
    Returns a report like :func:`load`'s."""
    if allow_local_links is None:
        allow_local_links = os.environ.get("H5LAKE_ALLOW_LOCAL_LINKS") == "1"
    report = _core.get_hdf5(os.fspath(src), os.fspath(dest), bool(force), bool(progress),
                            bool(allow_local_links))
    return json.loads(report)


def is_hdf5(path):
    """Whether ``path`` is an HDF5 file (it carries the HDF5 signature)."""
    return _core.is_hdf5(os.fspath(path))
