"""Dataset creation properties: h5py's argument rules -> HSDS JSON, and back.

``generate_dcpl`` validates ``create_dataset``'s storage arguments exactly as
h5py does (same exception types, and messages where practical) and returns
the HSDS ``creationProperties`` document; ``dcpl_properties`` reads such a
document (ours or HSDS's) back into what ``Dataset.chunks``,
``.compression`` etc. report.

Filter JSON forms (HSDS's ``creationProperties.filters`` entries), in the
HDF5/h5py pipeline order shuffle -> compression -> fletcher32::

    {"class": "H5Z_FILTER_SHUFFLE", "id": 2, "name": "shuffle"}
    {"class": "H5Z_FILTER_DEFLATE", "id": 1, "name": "gzip", "level": N}
    {"class": "H5Z_FILTER_ZSTD", "id": 32015, "name": "zstd", "level": N}
    {"class": "H5Z_FILTER_LZ4", "id": 32004, "name": "lz4"}
    {"class": "H5Z_FILTER_LZF", "id": 32000, "name": "lzf"}
    {"class": "H5Z_FILTER_BLOSC", "id": 32001, "name": "blosc",
     "compressor": "lz4", "level": 5, "shuffle": 1}
    {"class": "H5Z_FILTER_FLETCHER32", "id": 3, "name": "fletcher32"}

The deflate entry is named "gzip" because that is what HSDS writes (see the
HSDS fixture; HSDS maps "deflate" to "gzip" on input).  Readers should match
filters on ``class`` (or ``id``), not on ``name``.
"""

import math
import operator

import numpy as np

from . import h5t

__all__ = ["guess_chunk", "generate_dcpl", "dcpl_properties",
           "DEFAULT_GZIP", "DEFAULT_ZSTD", "DEFAULT_BLOSC"]

DEFAULT_GZIP = 4
DEFAULT_ZSTD = 3
DEFAULT_BLOSC = ("lz4", 5, 1)  # (compressor, level, shuffle)

BLOSC_COMPRESSORS = ("blosclz", "lz4", "lz4hc", "snappy", "zlib", "zstd")

# hdf5plugin-style registered filter ids accepted as ``compression=``
#: The filters h5py names that h5lake writes and reads (h5py's
#: ``h5py.filters.encode``/``decode``); h5lake also has zstd, lz4, blosc
#: and bitshuffle.
encode = ("gzip", "szip", "lzf", "shuffle", "fletcher32", "scaleoffset")
decode = encode

_FILTER_IDS = {1: "gzip", 4: "szip", 32015: "zstd", 32004: "lz4", 32001: "blosc", 32000: "lzf",
               32008: "bitshuffle"}

_SHUFFLE = {"class": "H5Z_FILTER_SHUFFLE", "id": 2, "name": "shuffle"}
_FLETCHER32 = {"class": "H5Z_FILTER_FLETCHER32", "id": 3, "name": "fletcher32"}

# Sizes of h5py's chunk heuristic (bytes), inherited from PyTables.
CHUNK_BASE = 16 * 1024
CHUNK_MIN = 8 * 1024
CHUNK_MAX = 1024 * 1024


def guess_chunk(shape, maxshape, typesize):
    """Chunk shape for a dataset (h5py's heuristic; same results).

    The target chunk size grows with the dataset size (PyTables' rule: 16 KiB
    times 2**log10(size in MiB), clamped to 8 KiB..1 MiB). Axes are halved in
    turn, first axis first, until the chunk is under the target or within 50%
    of it, and below 1 MiB. ``maxshape`` is unused, as in h5py; zero-length
    axes count as 1024 so an empty extendable dataset gets useful chunks.
    """
    if len(shape) == 0:
        raise ValueError("Chunks not allowed for scalar datasets.")
    dims = [float(1024 if d == 0 else d) for d in shape]
    if not all(math.isfinite(d) for d in dims):
        raise ValueError("Illegal value in chunk tuple")

    def count():
        n = 1
        for d in dims:
            n *= d
        return n

    def nbytes():
        return count() * typesize

    # np.log10 rather than math.log10 so the float result agrees bit for bit.
    target = CHUNK_BASE * (2 ** np.log10(nbytes() / (1024.0 * 1024)))
    target = min(max(target, CHUNK_MIN), CHUNK_MAX)

    axis = 0
    while True:
        size = nbytes()
        small_enough = size < target or abs(size - target) / target < 0.5
        if small_enough and size < CHUNK_MAX:
            break
        if count() == 1:  # every axis is 1: one element exceeds CHUNK_MAX
            break
        i = axis % len(dims)
        dims[i] = math.ceil(dims[i] / 2.0)
        axis += 1
    return tuple(int(d) for d in dims)


def _check_rank(tpl, name, rank):
    """h5py's rank check on ``chunks``/``maxshape`` (None/True pass)."""
    if tpl is None or tpl is True:
        return
    try:
        tpl = tuple(tpl)
    except TypeError as exc:
        raise TypeError("%r argument must be None or a sequence object" % name) from exc
    if len(tpl) != rank:
        raise ValueError("%r must have same rank as dataset shape" % name)


def _blosc_opts(opts):
    """Normalise blosc options to (compressor, level, shuffle)."""
    if opts is None:
        return DEFAULT_BLOSC
    if isinstance(opts, dict):
        cname = opts.get("compressor", opts.get("cname", DEFAULT_BLOSC[0]))
        level = opts.get("level", opts.get("clevel", DEFAULT_BLOSC[1]))
        shuffle = opts.get("shuffle", DEFAULT_BLOSC[2])
    else:
        try:
            cname, level, shuffle = opts
        except (TypeError, ValueError) as exc:
            raise TypeError("Blosc options must be a dict or a (compressor, level, "
                            "shuffle) tuple, not %r" % (opts,)) from exc
    if cname not in BLOSC_COMPRESSORS:
        raise ValueError("Blosc compressor must be one of %s, not %r"
                         % (", ".join(BLOSC_COMPRESSORS), cname))
    if isinstance(level, bool) or level not in range(10):
        raise ValueError("Blosc level must be an integer from 0-9, not %r" % (level,))
    if shuffle not in (0, 1, 2):
        raise ValueError("Blosc shuffle must be 0 (none), 1 (byte) or 2 (bit), not %r"
                         % (shuffle,))
    return (str(cname), int(level), int(shuffle))


_SZIP_CODINGS = {"ec": "H5_SZIP_EC_OPTION_MASK", "nn": "H5_SZIP_NN_OPTION_MASK"}
DEFAULT_SZIP = ("nn", 8)


def _szip_opts(opts):
    """h5py's checks on szip's ``compression_opts``: (method, pixels per block)."""
    if opts is None:
        return DEFAULT_SZIP
    err = "SZIP options must be a 2-tuple ('ec'|'nn', even integer 0-32)"
    try:
        method, pixels = opts
    except TypeError as exc:
        raise TypeError(err) from exc
    if method not in _SZIP_CODINGS:
        raise ValueError(err)
    if not (0 < pixels <= 32 and pixels % 2 == 0):
        raise ValueError(err)
    return method, int(pixels)


def _scaleoffset_filter(scaleoffset, dtype, fletcher32):
    """h5py's checks on ``scaleoffset``; the HSDS filter entry."""
    if scaleoffset < 0:
        raise ValueError("scale factor must be >= 0")
    if dtype.kind == "f":
        if scaleoffset is True:
            raise ValueError("integer scaleoffset must be provided for "
                             "floating point types")
        scale_type = "H5Z_SO_FLOAT_DSCALE"
    elif dtype.kind in ("u", "i"):
        scale_type = "H5Z_SO_INT"
        if scaleoffset is True:
            scaleoffset = 0  # HDF5 then picks the bits each chunk needs
    else:
        raise TypeError("scale/offset filter only supported for integer "
                        "and floating-point types")
    if fletcher32:
        # a checksum taken before a lossy filter would never verify
        raise ValueError("fletcher32 cannot be used with potentially lossy"
                         " scale/offset filter")
    return {"class": "H5Z_FILTER_SCALEOFFSET", "id": 6, "name": "scaleoffset",
            "scaleType": scale_type, "scaleOffset": int(scaleoffset)}


def _compression_filter(compression, opts):
    """Validate ``compression``/``compression_opts``; the HSDS filter entry."""
    if compression == "szip":
        method, pixels = _szip_opts(opts)
        return {"class": "H5Z_FILTER_SZIP", "id": 4, "name": "szip",
                "coding": _SZIP_CODINGS[method], "pixelsPerBlock": pixels}
    if compression == "lzf":
        if opts is not None:
            raise ValueError("LZF compression filter accepts no options")
        return {"class": "H5Z_FILTER_LZF", "id": 32000, "name": "lzf"}
    if compression == "gzip":
        if opts is None:
            level = DEFAULT_GZIP
        elif opts in range(10):
            level = int(opts)
        else:
            raise ValueError("GZIP setting must be an integer from 0-9, not %r" % (opts,))
        return {"class": "H5Z_FILTER_DEFLATE", "id": 1, "name": "gzip", "level": level}
    if compression == "zstd":
        if opts is None:
            level = DEFAULT_ZSTD
        elif not isinstance(opts, bool) and opts in range(1, 23):
            level = int(opts)
        else:
            raise ValueError("ZSTD level must be an integer from 1-22, not %r" % (opts,))
        return {"class": "H5Z_FILTER_ZSTD", "id": 32015, "name": "zstd", "level": level}
    if compression == "lz4":
        if opts not in (None, 0, ()):
            raise ValueError("LZ4 compression filter accepts no options")
        return {"class": "H5Z_FILTER_LZ4", "id": 32004, "name": "lz4"}
    if compression == "blosc":
        cname, level, shuffle = _blosc_opts(opts)
        return {"class": "H5Z_FILTER_BLOSC", "id": 32001, "name": "blosc",
                "compressor": cname, "level": level, "shuffle": shuffle}
    if compression == "bitshuffle":
        return _bitshuffle_filter(opts)
    if isinstance(compression, int) and not isinstance(compression, bool):
        if not 0 <= compression <= 65535:
            raise ValueError("Invalid filter identifier: %s (filter numbers are 0-65535)"
                             % compression)
        raise ValueError("Unknown compression filter number: %s" % compression)
    raise ValueError('Compression filter "%s" is unavailable' % (compression,))


def _bitshuffle_filter(opts):
    """The bitshuffle filter (32008) from its options as hdf5plugin and the
    plugin take them: ``(block_size, compression[, level])`` (block size in
    elements, 0 for the default; compression 0 none, 2 LZ4, 3 zstd), or the
    plugin's full client data with three leading slots it fills itself."""
    opts = tuple(int(o) for o in (opts or ()))
    if len(opts) > 3:
        opts = opts[3:]
    block, comp, level = (opts + (0, 0, 0))[:3]
    if block < 0 or block % 8:
        raise ValueError("bitshuffle block size must be a multiple of 8 elements, not %d" % block)
    if comp not in (0, 2, 3):
        raise ValueError("bitshuffle compression must be 0 (none), 2 (lz4) or 3 (zstd), not %d"
                         % comp)
    entry = {"class": "H5Z_FILTER_BITSHUFFLE", "id": 32008, "name": "bitshuffle",
             "block_size": block, "compression": comp}
    if comp == 3:
        entry["level"] = level
    return entry


def _chunk_tuple(chunks):
    """h5py/HDF5's checks on an explicit chunk shape."""
    if not isinstance(chunks, tuple):
        raise ValueError("chunksize must be a tuple.")
    out = []
    for c in chunks:
        c = int(operator.index(c) if not isinstance(c, float) else c)
        if c < 0:
            raise OverflowError("can't convert negative value to hsize_t")
        if c == 0:
            raise ValueError("All chunk dimensions must be positive")
        out.append(c)
    return out


def generate_dcpl(shape, dtype, chunks=None, compression=None, compression_opts=None,
                  shuffle=None, fletcher32=None, maxshape=None, scaleoffset=None,
                  fillvalue=None, track_times=None):
    """HSDS ``creationProperties`` for ``create_dataset``'s storage arguments.

    ``shape`` is a tuple (``()`` scalar, ``None`` empty/H5S_NULL). Chunking
    follows h5py: explicit ``chunks``; ``chunks=True`` or any of compression,
    shuffle, fletcher32, maxshape -> ``guess_chunk``; otherwise contiguous.
    """
    if shape is not None:
        shape = (shape,) if isinstance(shape, int) else tuple(shape)
    dtype = np.dtype(dtype) if dtype is not None else np.dtype("=f4")
    if isinstance(maxshape, int) and not isinstance(maxshape, bool):
        maxshape = (maxshape,)
    if isinstance(chunks, int) and not isinstance(chunks, bool):
        chunks = (chunks,)

    # Before anything else h5py rejects chunks bigger than (max)shape.
    limit = maxshape if maxshape is not None else shape
    if isinstance(chunks, tuple) and isinstance(limit, tuple) and any(
            c > d for d, c in zip(limit, chunks) if d is not None):
        raise ValueError("Chunk shape must not be greater than data shape in any "
                         "dimension. {} is not compatible with {}".format(chunks, shape))

    if any((compression, shuffle, fletcher32, maxshape, scaleoffset)) and chunks is False:
        raise ValueError("Chunked format required for given storage options")

    if compression is True:
        if compression_opts is None:
            compression_opts = DEFAULT_GZIP
        compression = "gzip"
    from . import dataset as _dataset  # h5py's switch lives there (tests patch it)
    if (not isinstance(compression, bool) and isinstance(compression, int)
            and compression in _dataset._LEGACY_GZIP_COMPRESSION_VALS):
        if compression_opts is not None:
            raise TypeError("Conflict in compression options")
        compression_opts = compression
        compression = "gzip"
    if isinstance(compression, int) and not isinstance(compression, bool) \
            and compression in _FILTER_IDS:
        compression = _FILTER_IDS[compression]
        # A filter given by number takes its options as the filter's
        # values (h5py passes them on as cd_values): one value is a level.
        if isinstance(compression_opts, tuple) and len(compression_opts) == 1 \
                and compression in ("gzip", "zstd"):
            compression_opts = compression_opts[0]

    if shape is None or shape == ():
        kind = "Empty" if shape is None else "Scalar"
        if any((chunks, compression, compression_opts, shuffle, fletcher32,
                scaleoffset is not None)):
            raise TypeError("%s datasets don't support chunk/filter options" % kind)
        if maxshape and maxshape != ():
            raise TypeError("%s datasets cannot be extended" % kind)
        props = {"layout": {"class": "H5D_CONTIGUOUS"}}
        _finish(props, dtype, fillvalue, track_times)
        return props

    _check_rank(chunks, "chunks", len(shape))
    _check_rank(maxshape, "maxshape", len(shape))

    comp_filter = None
    if compression is not None:
        comp_filter = _compression_filter(compression, compression_opts)
    elif compression_opts is not None:
        raise TypeError("Compression method must be specified")

    so_filter = None
    if scaleoffset is not None:
        so_filter = _scaleoffset_filter(scaleoffset, dtype, fletcher32)

    if maxshape is True:
        # h5py passes True on to the dataspace, which refuses it
        raise ValueError("Maxdims is smaller than dims (maxdims is smaller than dims)")
    if maxshape is not None:
        maxshape = tuple(maxshape)
        if any(m is not None and m < s for s, m in zip(shape, maxshape)):
            raise ValueError("Maxdims is smaller than dims (maxdims is smaller than dims)")

    if chunks is True or (chunks is None and any(
            (shuffle, fletcher32, compression, maxshape, scaleoffset is not None))):
        layout = {"class": "H5D_CHUNKED",
                  "dims": list(guess_chunk(shape, maxshape, dtype.itemsize))}
    elif chunks is not None and chunks is not False:
        dims = _chunk_tuple(chunks)
        if maxshape is not None and any(
                m is not None and c > m for c, m in zip(dims, maxshape)):
            raise ValueError("Chunk size must be <= maximum dimension size for "
                             "fixed-sized dimensions")
        layout = {"class": "H5D_CHUNKED", "dims": dims}
    else:
        layout = {"class": "H5D_CONTIGUOUS"}

    props = {"layout": layout}
    filters = []
    if so_filter is not None:  # h5py's order: before shuffle and compression
        filters.append(so_filter)
    if shuffle:
        filters.append(dict(_SHUFFLE))
    if comp_filter is not None:
        filters.append(comp_filter)
    if fletcher32:
        if dtype is not None and np.dtype(dtype).kind == "O":
            # (libhdf5 refuses a checksum over variable-length elements.)
            raise ValueError("Unable to synchronously create dataset (not suitable for filters)")
        filters.append(dict(_FLETCHER32))
    if filters:
        props["filters"] = filters
    _finish(props, dtype, fillvalue, track_times)
    return props


def _finish(props, dtype, fillvalue, track_times):
    if track_times not in (None, True, False):
        raise TypeError("track_times must be either True or False")
    if track_times:
        # kept so that HDF5 programs (the VOL connector) see the object's times
        props["trackTimes"] = True
    if fillvalue is not None:
        props["fillValue"] = _fill_json(fillvalue, dtype)


def _compound_value(value, dtype):
    """Whether ``value`` is one element of a compound: a structured scalar
    or array element, or a tuple of as many members."""
    if isinstance(value, tuple):
        return len(value) == len(dtype.names)
    return getattr(np.asarray(value).dtype, "names", None) is not None


def _fill_json(fillvalue, dtype):
    """JSON of the fill value converted to the dataset's dtype."""
    base = dtype.subdtype[0] if dtype.subdtype is not None else dtype
    info = h5t.check_string_dtype(base)
    if info is not None and isinstance(fillvalue, str):
        fillvalue = fillvalue.encode(info.encoding) if info.length is not None else fillvalue
    if h5t.is_vlen(base):
        arr = np.empty((), dtype=base)
        arr[()] = fillvalue
    else:
        if dtype.names is not None and not _compound_value(fillvalue, dtype):
            # NumPy would repeat a plain number into every member; HDF5 (and
            # h5py) has no conversion from a number to a compound.
            raise ValueError(f"Fill value {fillvalue!r} is not a value of the compound type "
                             f"{dtype} (give a structured scalar or a tuple of its members)")
        if isinstance(fillvalue, str) and dtype.kind in "biufc":
            # (HDF5 has no conversion from text to a number.)
            raise TypeError(f"No conversion path for dtype: {np.asarray(fillvalue).dtype!r}")
        if dtype.kind in "iu" and isinstance(fillvalue, (int, np.integer)) \
                and not isinstance(fillvalue, bool):
            # HDF5 converts an integer out of the type's range to its
            # nearest end, as h5py stores fillvalue=300 in uint8 as 255.
            lim = np.iinfo(dtype)
            fillvalue = min(max(int(fillvalue), lim.min), lim.max)
        arr = np.asarray(fillvalue, dtype=dtype)
        if dtype.subdtype is None and arr.shape != ():
            raise ValueError("Fill value must be a single element of the dataset's dtype")
    return h5t.value_to_json(arr)


# ---------------------------------------------------------------------------

_COMPRESSION_BY_CLASS = {
    "H5Z_FILTER_DEFLATE": "gzip",
    "H5Z_FILTER_ZSTD": "zstd",
    "H5Z_FILTER_LZ4": "lz4",
    "H5Z_FILTER_BLOSC": "blosc",
    "H5Z_FILTER_LZF": "lzf",
    "H5Z_FILTER_SZIP": "szip",
    "H5Z_FILTER_SNAPPY": "snappy",      # (columnar datasets only: Parquet's codec)
}
_CLASS_BY_ID = {1: "H5Z_FILTER_DEFLATE", 2: "H5Z_FILTER_SHUFFLE", 3: "H5Z_FILTER_FLETCHER32",
                4: "H5Z_FILTER_SZIP", 5: "H5Z_FILTER_NBIT", 6: "H5Z_FILTER_SCALEOFFSET",
                32000: "H5Z_FILTER_LZF", 32001: "H5Z_FILTER_BLOSC", 32004: "H5Z_FILTER_LZ4",
                32003: "H5Z_FILTER_SNAPPY", 32008: "H5Z_FILTER_BITSHUFFLE",
                32015: "H5Z_FILTER_ZSTD"}
_ID_BY_CLASS = {c: i for i, c in _CLASS_BY_ID.items()}
# The names HDF5 registers its own filters under (what h5py's filter_names
# reports), and short names for the plugins'.
_NAME_BY_CLASS = {"H5Z_FILTER_DEFLATE": "deflate", "H5Z_FILTER_SHUFFLE": "shuffle",
                  "H5Z_FILTER_FLETCHER32": "fletcher32", "H5Z_FILTER_SZIP": "szip",
                  "H5Z_FILTER_NBIT": "nbit", "H5Z_FILTER_SCALEOFFSET": "scaleoffset",
                  "H5Z_FILTER_LZF": "lzf", "H5Z_FILTER_BLOSC": "blosc", "H5Z_FILTER_LZ4": "lz4",
                  "H5Z_FILTER_BITSHUFFLE": "bitshuffle", "H5Z_FILTER_ZSTD": "zstd",
                  "H5Z_FILTER_SNAPPY": "snappy"}


def _filter_class(f):
    if isinstance(f, str):  # HSDS also accepts bare names
        return {"gzip": "H5Z_FILTER_DEFLATE", "deflate": "H5Z_FILTER_DEFLATE"}.get(
            f, "H5Z_FILTER_" + f.upper())
    if isinstance(f, int):
        return _CLASS_BY_ID.get(f, "H5Z_FILTER_USER")
    cls = f.get("class")
    if cls in (None, "H5Z_FILTER_USER") and "id" in f:
        return _CLASS_BY_ID.get(f["id"], "H5Z_FILTER_USER")
    return cls


def dcpl_properties(creation_props):
    """What h5py's Dataset reports for an HSDS ``creationProperties``:
    ``chunks``, ``compression``, ``compression_opts``, ``shuffle``,
    ``fletcher32``, ``scaleoffset``."""
    cp = creation_props or {}
    layout = cp.get("layout") or {}
    chunks = None
    if layout.get("class") in ("H5D_CHUNKED", "H5D_CHUNKED_REF", "H5D_CHUNKED_REF_INDIRECT"):
        # A linked dataset reads several of its file's chunks at a time
        # (`dims`, the hyper-chunk), but its chunks are the file's own
        # (`hyper_dims`): what h5py reports for the file.
        dims = layout.get("hyper_dims") or layout.get("dims")
        if dims is not None:
            chunks = tuple(int(d) for d in dims)
    out = {"chunks": chunks, "compression": None, "compression_opts": None,
           "shuffle": False, "fletcher32": False, "scaleoffset": None,
           "filter_ids": [], "filter_names": []}
    for f in cp.get("filters") or []:
        cls = _filter_class(f)
        fd = f if isinstance(f, dict) else {}
        fid = fd.get("id", f if isinstance(f, int) else _ID_BY_CLASS.get(cls))
        if fid is not None:
            out["filter_ids"].append(int(fid))
            out["filter_names"].append(_NAME_BY_CLASS.get(cls) or str(fd.get("name", fid)))
        if cls == "H5Z_FILTER_SHUFFLE":
            out["shuffle"] = True
        elif cls == "H5Z_FILTER_FLETCHER32":
            out["fletcher32"] = True
        elif cls == "H5Z_FILTER_SCALEOFFSET":
            out["scaleoffset"] = fd.get("scaleOffset")
        elif cls in _COMPRESSION_BY_CLASS:
            name = _COMPRESSION_BY_CLASS[cls]
            out["compression"] = name
            if name == "gzip":
                out["compression_opts"] = int(fd.get("level", DEFAULT_GZIP))
            elif name == "zstd":
                out["compression_opts"] = int(fd.get("level", DEFAULT_ZSTD))
            elif name == "szip":
                method = "ec" if fd.get("coding") == _SZIP_CODINGS["ec"] else "nn"
                out["compression_opts"] = (method, int(fd.get("pixelsPerBlock",
                                                                DEFAULT_SZIP[1])))
            elif name == "blosc":
                # ours carry "compressor"; HSDS names the blosc compressor in
                # "name" ("blosclz", "lz4", ...)
                cname = fd.get("compressor")
                if cname is None:
                    cname = fd.get("name") if fd.get("name") in BLOSC_COMPRESSORS \
                        else DEFAULT_BLOSC[0]
                out["compression_opts"] = (cname, int(fd.get("level", DEFAULT_BLOSC[1])),
                                           int(fd.get("shuffle", DEFAULT_BLOSC[2])))
        elif cls is not None and out["compression"] is None:
            out["compression"] = "unknown"  # h5py's word for a plugin filter
    return out
