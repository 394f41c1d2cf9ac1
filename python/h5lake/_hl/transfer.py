"""Real HDF5 files in and out: ``load`` (copy, or link to the file's chunks)
and ``get``. The work runs in Rust (``h5lake-hdf5``) with the GIL released;
Ctrl-C stops it and nothing is left at the destination."""

import json
import os

import numpy as np

from .. import _core
from .base import NewStoreOrNothing
from .sizes import size_option


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


PARQUET_ENDINGS = (".parquet", ".parq", ".pq")

# Rows per slab of a Parquet export: about this many bytes.
_PARQUET_SLAB_BYTES = 64 << 20


# Files ``get`` writes as HDF5 by their name (any other name is HDF5 too,
# unless ``format="parquet"``).
HDF5_ENDINGS = (".h5", ".hdf5", ".hdf", ".he5", ".nc", ".nc4")

# The formats ``get`` writes, by the names ``format=`` takes.
_FORMATS = {"parquet": "parquet", "hdf5": "hdf5", "h5": "hdf5"}


def _arrow_type(pa, name):
    """The Arrow type pyarrow names ``name`` (``timestamp[us, tz=UTC]``,
    ``date32[day]``, ``time64[ns]``, ``duration[ms]``, ``decimal128(10, 2)``...)."""
    import re
    d = re.fullmatch(r"(decimal32|decimal64|decimal128|decimal256)\((\d+), (-?\d+)\)", name)
    if d:
        make = getattr(pa, d.group(1), None)
        if make is None:     # pragma: no cover - depends on the pyarrow version
            raise ValueError(f"Arrow type {name} (in arrow_types) needs a newer pyarrow "
                             f"(pyarrow {pa.__version__} has no {d.group(1)})")
        return make(int(d.group(2)), int(d.group(3)))
    m = re.fullmatch(r"(\w+)\[(\w+)(?:, tz=(.+))?\]", name)
    if not m:
        raise ValueError(f"unknown Arrow type name {name!r} in arrow_types")
    kind, unit, tz = m.groups()
    if kind == "fixed_size_binary":
        return pa.binary(int(unit))
    if kind == "timestamp":
        return pa.timestamp(unit, tz=tz)
    makers = {"date32": lambda u: pa.date32(), "date64": lambda u: pa.date64(),
              "time32": pa.time32, "time64": pa.time64, "duration": pa.duration}
    if kind not in makers:
        raise ValueError(f"unknown Arrow type name {name!r} in arrow_types")
    return makers[kind](unit)


def _get_parquet(src, dest, *, force, allow_local_links):
    """See :func:`get` (a dataset to a Parquet file)."""
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError as e:     # pragma: no cover - depends on the installation
        raise ImportError("writing Parquet needs pyarrow (pip install pyarrow)") from e
    from . import table, tools
    from .dataset import Dataset
    from .files import File
    dest = os.fspath(dest)
    if os.path.exists(dest) and not force:
        raise FileExistsError(17, f"{dest} exists (pass force=True, CLI -f, to replace it)")
    root, inner = tools.split_path(src)
    opts = {"allow_local_links": True} if allow_local_links and tools.is_url(root) else {}
    with File(root, "r", **opts) as f:
        obj = f[inner] if inner else f
        if not isinstance(obj, Dataset):
            raise ValueError(f"{os.fspath(src)} is not a dataset: a Parquet file holds one table "
                             "(name a dataset, store/path/to/dataset)")
        # What a table has no place for, the file's metadata keeps (key
        # "h5lake"): the dataset's shape (its rows are its elements in C
        # order) and its attributes, as HSDS's JSON documents.
        names = list(obj.attrs)
        kept = json.dumps({"shape": list(obj.shape) if obj.shape is not None else None,
                           "attributes": {n: obj.attrs._get_doc(n) for n in names}})
        rows = obj.shape[0] if obj.shape else 1
        per = max(1, _PARQUET_SLAB_BYTES // max(1, obj.dtype.itemsize * max(1, obj.size // max(rows, 1))))
        tmp = f"{dest}.tmp-{os.getpid()}"
        writer = None
        written = 0
        try:
            for start in range(0, max(rows, 1), per):
                sel = None if not obj.shape else np.s_[start:start + per]
                t = table.to_arrow(obj, sel)     # columns get their Arrow types back
                t = t.replace_schema_metadata({**(t.schema.metadata or {}),
                                               b"h5lake": kept.encode()})
                if writer is None:
                    writer = pq.ParquetWriter(tmp, t.schema, compression="zstd")
                writer.write_table(t)
                written += t.num_rows
            if writer is not None:
                writer.close()
                writer = None
            os.replace(tmp, dest)
        finally:
            if writer is not None:
                writer.close()
            if os.path.exists(tmp):
                os.remove(tmp)
    return {"groups": 0, "datasets": 1, "attributes": len(names), "links": 0, "rows": written,
            "bytes": os.path.getsize(dest), "skipped": [], "skipped_objects": []}


def parquet_sources(src):
    """The Parquet files ``src`` names, in order — a ``.parquet`` file, a
    directory of them, a glob pattern, or a list of any of those — or
    ``None`` when ``src`` names no Parquet input (an HDF5 file)."""
    import glob
    import re
    if isinstance(src, (list, tuple)):
        files = [f for s in src for f in (parquet_sources(s) or [os.fspath(s)])]
        return files
    src = os.fspath(src)

    def natural(name):
        return [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", name)]
    if os.path.isdir(src) and not os.path.exists(os.path.join(src, ".domain.json")):
        files = sorted(glob.glob(os.path.join(src, "*.parquet")), key=natural)
        return files or None
    if any(c in src for c in "*?[") and not os.path.exists(src):
        files = sorted(glob.glob(src), key=natural)
        if not files:
            raise FileNotFoundError(2, f"no files match {src}")
        return files
    if src.endswith(PARQUET_ENDINGS):
        return [src]
    if src.startswith("s3://"):
        raise ValueError(f"{src}: an s3:// source names Parquet objects (*.parquet, "
                         "loaded with link=True)")
    return None


def load(src, dest, *, link=False, hyperchunk=None, keep_chunks=False, force=False,
         progress=False, skip_unsupported=False, name=None, chunks=None, compression=None,
         columnar=False):
    """Load the HDF5 file ``src`` into a new h5lake store at ``dest``.

    ``src`` may also be Parquet: a ``.parquet`` file, a directory of them,
    a glob pattern or a list, read in that order (a directory or pattern in
    natural sort order of the names) as one 1-D columnar compound dataset
    named ``name`` (default: the first file's stem), with ``chunks`` rows per
    chunk and ``compression`` ("gzip", "zstd", "lz4"). Every column's type is
    checked before anything is written; one with no HDF5 form (maps, unions,
    decimals of precision above 18) fails the load naming the column, and
    nothing is written. Temporal and decimal columns are held as their
    integers (a decimal's unscaled ones), their Arrow types kept in the
    dataset's ``arrow_types`` attribute; ``to_arrow`` and ``get`` give them
    back.

    ``link=True`` copies only metadata: datasets point at the byte ranges of
    their chunks inside ``src``, which must then stay where it is. For
    Parquet (local paths or ``s3://`` URLs) the dataset's rows are read from
    the files' row groups where they lie (only the columns a read asks
    for); ``chunks`` defaults to the first row group's rows, and the
    dataset is read-only.
    ``hyperchunk`` (link mode: bytes, or a size such as ``"4M"``) groups
    adjacent source chunks into logical chunks of about that size (default,
    or ``True``: 4 MiB; ``0`` or ``False``: off).
    ``columnar=True`` (copy mode) stores compound datasets columnar, each
    chunk one Parquet object (see ``create_dataset(layout="columnar")``).
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
    files = parquet_sources(src)
    # Options of one kind of input are refused for the other, never ignored.
    given = {"hyperchunk": hyperchunk is not None, "keep_chunks": keep_chunks}
    if files is None:
        given = {"name": name is not None, "chunks": chunks is not None,
                 "compression": compression is not None}
    wrong = [k for k, v in given.items() if v]
    if wrong:
        kind = "HDF5 files" if files is not None else "Parquet files"
        raise ValueError(f"{', '.join(wrong)} applies to {kind} only, and {os.fspath(src)} is "
                         f"{'Parquet' if files is not None else 'not Parquet'}: drop it")
    if files is not None:
        for f in files:
            if not f.startswith("s3://") and not os.path.isfile(f):
                raise FileNotFoundError(2, f"no such Parquet file: {f}")
        if name is None:
            name = os.path.splitext(os.path.basename(files[0].rstrip("/")))[0]
        if link:
            if compression is not None:
                raise ValueError("link=True keeps the files' own compression: drop compression=")
            with NewStoreOrNothing(dest):
                report = json.loads(_core.link_parquet(
                    [f if f.startswith("s3://") else os.path.abspath(f) for f in files],
                    os.fspath(dest), name, None if chunks is None else int(chunks), bool(force)))
            depth = name.strip("/").count("/") + 1
            report.update(groups=depth - 1, attributes=int(bool(report["arrow_types"])),
                          links=depth, bytes=0, chunks=0)
            return report
        from . import filters
        import numpy as np
        if compression == "snappy":         # Parquet's own codec: no HDF5 filter
            dcpl = {"filters": [{"class": "H5Z_FILTER_SNAPPY", "id": 32003, "name": "snappy"}]}
        else:
            dcpl = filters.generate_dcpl((1,), np.dtype("u1"), (1,), compression, None, None,
                                         None, None, None, None, False)
        with NewStoreOrNothing(dest):
            report = json.loads(_core.load_parquet(
                [os.fspath(f) for f in files], os.fspath(dest), name,
                json.dumps(dcpl.get("filters", [])), None if chunks is None else int(chunks),
                bool(force)))
        depth = name.strip("/").count("/") + 1      # the dataset and the groups above it
        report.update(groups=depth - 1, attributes=int(bool(report["arrow_types"])),
                      links=depth, bytes=0, chunks=0)
        return report
    hyperchunk = size_option("hyperchunk", hyperchunk, default=None)
    # Options of one mode are refused in the other, never ignored.
    wrong = ([("hyperchunk", "link=True")] if hyperchunk is not None and not link else []) + \
        [(k, "a copy (link=False)") for k, v in (("keep_chunks", keep_chunks),
                                                 ("columnar", columnar)) if v and link]
    if wrong:
        raise ValueError("; ".join(f"{k} applies to {mode} only" for k, mode in wrong)
                         + ": drop it or change the mode")
    report = _core.load_hdf5(os.fspath(src), os.fspath(dest), bool(link), hyperchunk,
                             bool(force), bool(progress), bool(keep_chunks), bool(columnar))
    return _checked(f"load of {os.fspath(src)}", dest, report, skip_unsupported)


def _get_format(dest, format):
    """``"parquet"`` or ``"hdf5"``: what ``get`` writes to ``dest`` — the
    ``format`` asked for (checked against the name's extension), else what
    the extension says (``.parquet``, ``.parq``, ``.pq``: Parquet; anything
    else HDF5)."""
    by_name = "parquet" if dest.lower().endswith(PARQUET_ENDINGS) else \
        "hdf5" if dest.lower().endswith(HDF5_ENDINGS) else None
    if format is None:
        return by_name or "hdf5"
    fmt = _FORMATS.get(str(format).lower())
    if fmt is None:
        raise ValueError(f"unknown format {format!r}: get writes parquet or hdf5 (also h5)")
    if by_name is not None and by_name != fmt:
        raise ValueError(f"{dest} is named as a{'n HDF5' if by_name == 'hdf5' else ' Parquet'} "
                         f"file but the format asked for is {fmt}: name it "
                         f"{os.path.splitext(os.path.basename(dest))[0]}"
                         f"{'.parquet' if fmt == 'parquet' else '.h5'}, or leave the format "
                         "out to go by the name")
    return fmt


def get(src, dest, *, force=False, progress=False, allow_local_links=None,
        skip_unsupported=False, format=None):
    """Write the h5lake store ``src`` out as the HDF5 file ``dest`` (which
    h5py and the HDF5 tools read). With ``dest`` a ``.parquet`` file (or
    ``format="parquet"``, whatever ``dest`` is named),
    ``src`` names a dataset in a store (``store/path/to/dset``), written as
    one Parquet table (needs pyarrow): a compound's members are the columns
    (anything else is one column, ``value``), rows in C order, and columns a
    Parquet load kept as integers (``arrow_types``: temporal types, decimals)
    get their Arrow type back. ``format`` is ``"parquet"`` or ``"hdf5"``
    (``"h5"``); default: by the extension of ``dest``, HDF5 unless it is
    ``.parquet``, ``.parq`` or ``.pq``. A format that contradicts the
    extension (``format="parquet"`` for ``out.h5``) raises ValueError.
    An existing ``dest`` is replaced only with
    ``force=True``. A store in a bucket may follow links to local files
    only with ``allow_local_links=True`` (default: ``H5LAKE_ALLOW_LOCAL_LINKS=1``).
    Returns a report like :func:`load`'s, and raises
    :class:`IncompleteConversion` as it does."""
    if allow_local_links is None:
        allow_local_links = os.environ.get("H5LAKE_ALLOW_LOCAL_LINKS") == "1"
    if _get_format(os.fspath(dest), format) == "parquet":
        return _get_parquet(src, dest, force=force, allow_local_links=allow_local_links)
    _whole_store(os.fspath(src))
    report = _core.get_hdf5(os.fspath(src), os.fspath(dest), bool(force), bool(progress),
                            bool(allow_local_links))
    return _checked(f"get of {os.fspath(src)}", dest, report, skip_unsupported)


def _whole_store(src):
    """Refuses a path inside a store as the source of an HDF5 file, saying
    so (it was told there was no store at all)."""
    from .tools import is_store, split_path
    if "://" in src or os.path.isdir(src) and is_store(src):
        return
    try:
        store, inner = split_path(src)
    except (FileNotFoundError, ValueError):
        return          # (no store there at all: said by the get itself)
    if inner:
        raise ValueError(
            f"{src}: an HDF5 file is written of a whole store ({store}), not of /{inner} "
            f"alone: get the whole store, or write that dataset as Parquet (a destination "
            f"ending in .parquet)")


def is_hdf5(path):
    """Whether ``path`` holds HDF5 data h5lake opens: an h5lake store (a
    directory or ``s3://`` URL) or an HDF5 file (it carries the HDF5
    signature). False for what does not exist, as h5py's ``is_hdf5``."""
    path = os.fspath(path)
    if isinstance(path, bytes):
        path = os.fsdecode(path)
    if _core.is_hdf5(path):
        return True
    if "://" not in path and not os.path.isdir(path):
        return False
    try:
        return _core.domain_exists(path)
    except (OSError, ValueError):
        return False
