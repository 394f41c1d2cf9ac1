"""Real HDF5 files in and out: ``load`` (copy, or link to the file's chunks)
and ``get``. The work runs in Rust (``h5lake-hdf5``) with the GIL released;
Ctrl-C stops it and nothing is left at the destination."""

import json
import os

from .. import _core


class IncompleteConversion(RuntimeError):
    """A ``load`` or ``get`` that could not carry everything: the
    destination holds the rest, ``report["skipped"]`` names what is
    missing. Pass ``skip_unsupported=True`` to accept that."""

    def __init__(self, what, dest, report):
        self.report = report
        items = report["skipped"]
        listed = "; ".join(items[:5]) + (f"; and {len(items) - 5} more" if len(items) > 5 else "")
        super().__init__(
            f"{what} incomplete: {len(items)} object{'s' if len(items) != 1 else ''} or "
            f"part{'s' if len(items) != 1 else ''} not carried over ({listed}); {dest} holds "
            "everything else. Pass skip_unsupported=True (CLI: --skip-unsupported) to accept that")


def _checked(what, dest, report, skip_unsupported):
    report = json.loads(report)
    if report["skipped"] and not skip_unsupported:
        raise IncompleteConversion(what, os.fspath(dest), report)
    return report


def load(src, dest, *, link=False, hyperchunk=None, keep_chunks=False, force=False,
         progress=False, skip_unsupported=False):
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
    could not be loaded, and why; ``skipped_objects`` has each as a dict of
    ``path``, ``part`` and ``reason``). If anything was skipped, raises
    :class:`IncompleteConversion` (carrying the report) unless
    ``skip_unsupported=True``.
    """
    if hyperchunk is not None and int(hyperchunk) < 0:
        raise ValueError("hyperchunk must be a size in bytes (0 turns it off)")
    report = _core.load_hdf5(os.fspath(src), os.fspath(dest), bool(link),
                             None if hyperchunk is None else int(hyperchunk),
                             bool(force), bool(progress), bool(keep_chunks))
    return _checked(f"load of {os.fspath(src)}", dest, report, skip_unsupported)


def get(src, dest, *, force=False, progress=False, allow_local_links=None,
        skip_unsupported=False):
    """Write the h5lake store ``src`` out as the HDF5 file ``dest`` (which
    h5py and the HDF5 tools read). An existing ``dest`` is replaced only with
    ``force=True``. A store in a bucket may follow links to local files
    only with ``allow_local_links=True`` (default: ``H5LAKE_ALLOW_LOCAL_LINKS=1``).
    Returns a report like :func:`load`'s, and raises
    :class:`IncompleteConversion` as it does."""
    if allow_local_links is None:
        allow_local_links = os.environ.get("H5LAKE_ALLOW_LOCAL_LINKS") == "1"
    report = _core.get_hdf5(os.fspath(src), os.fspath(dest), bool(force), bool(progress),
                            bool(allow_local_links))
    return _checked(f"get of {os.fspath(src)}", dest, report, skip_unsupported)


def is_hdf5(path):
    """Whether ``path`` is an HDF5 file (it carries the HDF5 signature)."""
    return _core.is_hdf5(os.fspath(path))
