"""Datasets as tables: Arrow, pandas and Polars.

A compound dataset is a table whose columns are its members (nested
compounds are struct columns, array members fixed-size lists); any other
dataset is a table of one column, ``value``. Rows are the selected elements
in C order.
"""

import numpy as np


def _pa():
    try:
        import pyarrow
    except ImportError as e:    # pragma: no cover - depends on the installation
        raise ImportError("to_arrow needs pyarrow (pip install pyarrow)") from e
    return pyarrow


def _column(pa, a):
    """One Arrow array of ``a``: its first axis are the rows, further axes
    (a member's array shape) a fixed-size list per row."""
    if a.ndim > 1:
        k = int(np.prod(a.shape[1:]))
        return pa.FixedSizeListArray.from_arrays(_column(pa, a.reshape(-1)), k)
    dt = a.dtype
    if dt.names is not None:
        children = [_column(pa, np.ascontiguousarray(a[name])) for name in dt.names]
        return pa.StructArray.from_arrays(children, names=list(dt.names))
    if dt.kind == "O":
        from .h5t import Reference, RegionReference, check_ref_dtype, check_vlen_dtype
        ref = check_ref_dtype(dt)
        if ref is Reference:            # as a columnar table keeps them: the stored id
            from .h5t import _REF_BYTES
            return pa.array([r._stored().encode().ljust(_REF_BYTES, b"\0") if r else None
                             for r in a],
                            pa.binary(_REF_BYTES))
        if ref is RegionReference:      # h5json's object, as JSON text
            import json
            return pa.array([json.dumps(r._stored()) if r else None for r in a], pa.string())
        base = check_vlen_dtype(dt)
        if base is str:                 # UTF-8 text: Arrow strings
            return pa.array([x.decode("utf-8") if isinstance(x, bytes) else x for x in a],
                            pa.string())
        if base is bytes:
            return pa.array([bytes(x) for x in a], pa.binary())
        return _sequences(pa, a, np.dtype(base) if base is not None else None)
    if dt.kind == "S":
        return _fixed_bytes(pa, a)
    if dt.kind == "V":                  # opaque: its bytes, as a columnar table keeps them
        return pa.array([bytes(x) for x in a], pa.binary(dt.itemsize))
    if dt.kind == "c":                  # as a columnar table keeps them: (r, i) structs
        return pa.StructArray.from_arrays([_column(pa, np.ascontiguousarray(a.real)),
                                           _column(pa, np.ascontiguousarray(a.imag))],
                                          names=["r", "i"])
    if dt.kind == "f" and dt.itemsize > 8:
        # No Arrow float holds a long double: its bytes, as a columnar table keeps it.
        return pa.array([x.tobytes() for x in a], pa.binary(dt.itemsize))
    if not dt.isnative:                 # Arrow is little-endian
        a = a.astype(dt.newbyteorder("="))
    return pa.array(np.ascontiguousarray(a))


def _sequences(pa, a, base):
    """Variable-length sequences as an Arrow list column of their own item
    type (pyarrow's guess from Python values widened int32 to int64)."""
    items = [np.asarray(x, dtype=base) for x in a]
    if base is None:
        base = items[0].dtype if items else np.dtype("f8")
    lengths = np.fromiter((len(x) for x in items), np.int64, len(items))
    offsets = np.zeros(len(items) + 1, np.int64)
    np.cumsum(lengths, out=offsets[1:])
    values = np.concatenate(items) if items else np.zeros(0, base)
    values = _column(pa, np.ascontiguousarray(values.astype(base, copy=False)))
    large = offsets[-1] > np.iinfo(np.int32).max
    cls = pa.LargeListArray if large else pa.ListArray
    return cls.from_arrays(pa.array(offsets if large else offsets.astype(np.int32)), values)


def _fixed_bytes(pa, a):
    """Fixed-length strings as Arrow binary values, as NumPy and h5py read
    them: without their trailing NULs, but with those inside kept
    (pyarrow's own conversion ends each value at its first NUL)."""
    n, width = len(a), a.dtype.itemsize
    if width == 0:
        return pa.array([b""] * n, pa.binary())
    raw = np.ascontiguousarray(a).view(np.uint8).reshape(n, width)
    filled = raw != 0
    lengths = np.where(filled.any(axis=1), width - np.argmax(filled[:, ::-1], axis=1), 0)
    values = raw[np.arange(width) < lengths[:, None]]
    large = values.size > np.iinfo(np.int32).max
    offsets = np.zeros(n + 1, np.int64 if large else np.int32)
    np.cumsum(lengths, out=offsets[1:])
    return pa.Array.from_buffers(pa.large_binary() if large else pa.binary(), n,
                                 [None, pa.py_buffer(offsets), pa.py_buffer(values)])


def to_arrow(dset, sel=None, fields=None, where=None):
    """See :meth:`h5lake.Dataset.to_arrow`."""
    pa = _pa()
    if isinstance(fields, str):
        fields = [fields]
    columnar = dset.ndim == 1 and dset.is_columnar
    if where is not None:
        from . import query
        if not columnar:
            return _records_to_arrow(pa, dset, dset.dtype if fields is None
                                     else dset.fields(fields).dtype,
                                     query.read_where(dset, where, fields, sel))
        picked = query.get_where_list(dset, where, sel)
        return _take_rows(pa, dset, picked, fields)
    rows = _rows(dset, sel) if columnar else None
    if rows is not None:
        return _run(pa, dset, rows[0], rows[1], fields)
    picked = _picked_rows(dset, sel) if columnar else None
    if picked is not None:
        return _take_rows(pa, dset, picked, fields)
    src = dset.fields(fields) if fields is not None else dset
    if dset.shape is None:              # an empty dataspace: a table of no rows
        return _records_to_arrow(pa, dset, src.dtype, np.zeros(0, src.dtype))
    data = src[()] if sel is None else src[sel]
    return _records_to_arrow(pa, dset, src.dtype, np.asarray(data))


def to_pandas(t):
    """The ``pyarrow.Table`` ``t`` as a DataFrame, its integer and boolean
    columns that hold nulls as pandas' nullable types (pyarrow makes them
    float64 with NaN, losing integers past 2**53, or objects)."""
    import pandas as pd
    pa = _pa()
    nullable = {pa.bool_(): pd.BooleanDtype()}
    for bits in (8, 16, 32, 64):
        nullable[getattr(pa, f"int{bits}")()] = getattr(pd, f"Int{bits}Dtype")()
        nullable[getattr(pa, f"uint{bits}")()] = getattr(pd, f"UInt{bits}Dtype")()
    frame = t.to_pandas()
    for i, name in enumerate(t.column_names):
        col = t.column(i)
        if col.null_count and col.type in nullable:
            # (By position: the frame may have an index of its own.)
            frame[name] = col.to_pandas(types_mapper=nullable.get).array
    return frame


def _take_rows(pa, dset, picked, fields):
    """Rows here and there (increasing) of a columnar table: each stretch
    of them that no wide gap breaks is read as the run that holds it, then
    its rows are taken (nulls and types kept as for a run). (One run from
    the first row to the last read the whole table for two matches at its
    ends.) A gap is wide past a chunk and past 1/256 of the whole span, so
    that rows spread over every chunk are still read in a few runs."""
    picked = np.asarray(picked, dtype=np.int64)
    if not len(picked):
        return _run(pa, dset, 0, 0, fields)
    gap = max(int(dset.chunks[0]), int(picked[-1] - picked[0]) // 256, 1)
    cuts = np.flatnonzero(np.diff(picked) > gap) + 1
    parts = []
    for rows in np.split(picked, cuts):
        lo, hi = int(rows[0]), int(rows[-1]) + 1
        parts.append(_run(pa, dset, lo, hi, fields).take(pa.array(rows - lo)))
    return parts[0] if len(parts) == 1 else pa.concat_tables(parts)


def _records_to_arrow(pa, dset, src_dtype, data):
    """A table of the elements ``data`` (any shape, flattened) of ``dset``
    (or of a view of its fields, of type ``src_dtype``)."""
    flat = data.reshape(-1)
    if flat.dtype.names is None:
        if src_dtype.kind == "O":        # keep what kind of strings they are
            flat = flat.astype(src_dtype)
        return pa.table({"value": _column(pa, flat)})
    t = pa.table({name: _column(pa, np.ascontiguousarray(flat[name])) for name in flat.dtype.names})
    return _with_arrow_types(pa, dset, t)


def _text(v):
    return v.decode() if isinstance(v, bytes) else str(v)


def _encoding(obj):
    """AnnData's ``encoding-type`` attribute of ``obj`` (None without one)."""
    v = obj.attrs.get("encoding-type")
    return None if v is None else _text(v)


def _column_names(group):
    """The members of ``group`` that make its table, in order: AnnData's
    ``column-order`` (after the index column its ``_index`` names) when
    the group says it is a dataframe, else its 1-D datasets and the
    column groups AnnData writes (categoricals, nullable arrays); a warning
    names any other member left out."""
    from .dataset import Dataset
    import warnings
    if _encoding(group) == "dataframe" and "column-order" in group.attrs:
        order = [_text(n) for n in np.atleast_1d(group.attrs["column-order"])]
        index = group.attrs.get("_index")
        return ([_text(index)] if index is not None and _text(index) in group else []) + order
    names, left = [], []
    for k in group:
        obj = group.get(k)
        if isinstance(obj, Dataset) or _encoding(obj) in _COLUMN_GROUPS:
            names.append(k)
        else:
            left.append(k)
    if left:
        warnings.warn(f"{group.name}: left out of the table (not a 1-D dataset or a column "
                      f"group): {', '.join(left)}", UserWarning, stacklevel=4)
    return names


# AnnData's encodings of a column held in a group of its own.
_COLUMN_GROUPS = ("categorical", "nullable-integer", "nullable-boolean", "nullable-string-array")


def _group_column(pa, g, sel):
    """An AnnData column group as one Arrow column: a categorical as a
    dictionary column (code -1: null), a nullable array with its mask."""
    kind = _encoding(g)

    def part(name):
        d = g[name]
        return np.asarray(d[()] if sel is None else d[sel]).reshape(-1)
    if kind == "categorical":
        codes = part("codes").astype("i4")
        cats = np.asarray(g["categories"][()]).reshape(-1)
        if cats.dtype.kind == "O":
            cats = cats.astype(g["categories"].dtype)
        ordered = bool(g.attrs.get("ordered", False))
        indices = pa.array(codes, mask=codes < 0, type=pa.int32())
        return pa.DictionaryArray.from_arrays(indices, _column(pa, cats), ordered=ordered)
    values, mask = part("values"), part("mask").astype(bool)
    if values.dtype.kind == "O":
        values = values.astype(g["values"].dtype)
    if values.dtype.kind == "O":
        return pa.array(_column(pa, values).to_pylist(), mask=mask)
    if values.dtype.kind == "S":
        # (Inner NULs kept: see _fixed_bytes.)
        import pyarrow.compute as pc
        return pc.if_else(pa.array(~mask), _fixed_bytes(pa, values), pa.scalar(None, pa.binary()))
    return pa.array(values, mask=mask)


def group_to_arrow(group, sel=None, names=None):
    """See :meth:`h5lake.Group.to_arrow`."""
    from .dataset import Dataset
    pa = _pa()
    if names is None:
        names = _column_names(group)
    columns, length = {}, None
    for name in names:
        d = group[name]
        if not isinstance(d, Dataset) and _encoding(d) in _COLUMN_GROUPS:
            col = _group_column(pa, d, sel)
            rows = len(col)
        elif not isinstance(d, Dataset) or d.ndim != 1:
            raise ValueError(f"{group.name}/{name} is not a 1-D dataset: a group's table has "
                             "one 1-D dataset per column")
        else:
            rows = None
        if rows is None and d.is_columnar:
            # (Straight from the chunks' columns, nulls kept.)
            t = to_arrow(d, sel)
            col = pa.StructArray.from_arrays([c.combine_chunks() for c in t.columns],
                                             fields=list(t.schema))
            rows = len(col)
        if rows is None:
            data = np.asarray(d[()] if sel is None else d[sel]).reshape(-1)
            if d.dtype.kind == "O":          # keep what kind of strings they are
                data = data.astype(d.dtype)
            col = _column(pa, data)
            rows = len(col)
        if length is not None and rows != length:
            raise ValueError(f"{group.name}/{name} has {rows} rows, the others {length}: "
                             "the columns of a table have one length")
        length = rows
        columns[name] = col
    return pa.table(columns)


def group_to_pandas(group, sel=None, names=None):
    """See :meth:`h5lake.Group.to_pandas`: AnnData's index column (the
    group's ``_index`` attribute) becomes the frame's index."""
    frame = to_pandas(group_to_arrow(group, sel, names))
    index = group.attrs.get("_index") if _encoding(group) == "dataframe" else None
    if index is not None and _text(index) in frame.columns:
        frame = frame.set_index(_text(index))
        if frame.index.name == "_index":
            frame.index.name = None
    return frame


class _Stream:
    """An Arrow stream capsule as an object with ``__arrow_c_stream__`` (what
    ``pyarrow.RecordBatchReader.from_stream`` takes)."""

    def __init__(self, capsule):
        self._capsule = capsule

    def __arrow_c_stream__(self, requested_schema=None):
        capsule, self._capsule = self._capsule, None
        if capsule is None:
            raise ValueError("the Arrow stream was already read")
        return capsule


def _run(pa, dset, start, stop, fields):
    """Rows ``start:stop`` of a 1-D columnar dataset straight from the
    chunks' columns, nulls kept, no copy on the way."""
    from .. import _core
    cap = _core.table_read(dset._fs.raw, dset._oid, start, stop,
                           None if fields is None else list(fields),
                           list(_arrow_types(pa, dset)))
    return _with_arrow_types(pa, dset, pa.RecordBatchReader.from_stream(_Stream(cap)).read_all())


# A selection of rows here and there is read as the run that holds them
# when that run is at most this many times longer (or this short).
_SPREAD = 8
_SHORT_RUN = 1 << 16


def _picked_rows(dset, sel):
    """The rows (increasing, each once) a strided slice, an increasing
    index list or a boolean mask picks from a 1-D dataset, when the run
    holding them is not much longer than they are; else None (the
    selection is read the h5py way)."""
    n = dset.shape[0]
    if isinstance(sel, tuple) and len(sel) == 1:
        sel = sel[0]
    if isinstance(sel, slice):
        if sel.step is None or sel.step < 1:
            return None
        idx = np.arange(*sel.indices(n))
    elif isinstance(sel, (list, np.ndarray)):
        arr = np.asarray(sel)
        if arr.ndim != 1:
            return None
        if arr.dtype == bool:
            if len(arr) != n:
                return None
            idx = np.flatnonzero(arr)
        elif arr.dtype.kind in "iu" and len(arr):
            idx = arr.astype(np.int64)
            idx = np.where(idx < 0, idx + n, idx)          # numpy's negative indices
            if idx[0] < 0 or idx[-1] >= n or np.any(np.diff(idx) <= 0):
                return None
        else:
            return None
    else:
        return None
    if len(idx) and idx[-1] - idx[0] + 1 > max(_SPREAD * len(idx), _SHORT_RUN):
        return None
    return idx


def _rows(dset, sel):
    """``(start, stop)`` when ``sel`` selects a run of rows of a 1-D dataset
    (None, ``...``, ``()`` or a slice with step 1); else None."""
    n = dset.shape[0]
    if sel is None or sel is Ellipsis or (isinstance(sel, tuple) and sel in ((), (Ellipsis,))):
        return 0, n
    if isinstance(sel, tuple) and len(sel) == 1:
        sel = sel[0]
    if isinstance(sel, slice) and sel.step in (None, 1):
        start, stop, _ = sel.indices(n)
        return start, max(start, stop)
    if isinstance(sel, (int, np.integer)) and not isinstance(sel, (bool, np.bool_)):
        i = int(sel) + n if sel < 0 else int(sel)
        if not 0 <= i < n:
            raise IndexError(f"Index ({int(sel)}) out of range for (0-{n - 1})")
        return i, i + 1
    return None


def _arrow_types(pa, dset):
    """The Arrow types (by column) a Parquet load kept as integers."""
    if "arrow_types" not in dset.attrs:
        return {}
    import json
    from .transfer import _arrow_type
    return {k: _arrow_type(pa, v) for k, v in json.loads(dset.attrs["arrow_types"]).items()}


def _with_arrow_types(pa, dset, t):
    """``t`` with the columns the dataset's ``arrow_types`` names given
    their Arrow types back (done in Rust, as the server does it)."""
    if "arrow_types" not in dset.attrs:
        return t
    import json
    from .. import _core
    from . import h5t
    cap = _core.restore_arrow_types(t, dset.attrs["arrow_types"],
                                    json.dumps(h5t.dtype_to_hsds(dset.dtype)))
    return pa.RecordBatchReader.from_stream(_Stream(cap)).read_all()


def unscaled(pa, col):
    """The unscaled integers (int64) of the decimal column ``col`` of
    precision up to 18; nulls stay null."""
    chunks = col.chunks if isinstance(col, pa.ChunkedArray) else [col]
    out = []
    for c in chunks:
        width = c.type.byte_width
        words = max(1, width // 8)
        raw = np.frombuffer(c.buffers()[1], "<i4" if width == 4 else "<i8",
                            count=(c.offset + len(c)) * words)
        vals = raw.reshape(-1, words)[c.offset:, 0].astype(np.int64)
        mask = None if not c.null_count else ~c.is_valid().to_numpy(zero_copy_only=False)
        out.append(pa.array(vals, pa.int64(), mask=mask))
    return pa.chunked_array(out, pa.int64())


def _in_member_order(pa, dset, src):
    """``src`` with its columns in the order of ``dset``'s members when they
    are the members in another order (columns are matched by name, in
    either layout); anything else as it is, for the checks that name it."""
    names = list(dset.dtype.names or ())
    have = list(src.schema.names)
    if have == names or sorted(have) != sorted(names):
        return src
    if isinstance(src, pa.Table):
        return src.select(names)
    schema = pa.schema([src.schema.field(n) for n in names], metadata=src.schema.metadata)
    return pa.RecordBatchReader.from_batches(schema, (b.select(names) for b in src))


def _to_members(pa, dset, src, kinds):
    """The table ``src`` ready for ``dset``'s members: columns noted in
    ``arrow_types`` cast to their type (timestamps given in another unit
    land in the table's own, decimals rescaled to its scale); decimal
    columns of no noted decimal type cast by value to the member's number
    type (never their unscaled integers taken as values)."""
    decimals = [f.name for f in src.schema if pa.types.is_decimal(f.type)
                and not pa.types.is_decimal(kinds.get(f.name, pa.null()))]
    if not kinds and not decimals:
        return src
    t = src if isinstance(src, pa.Table) else src.read_all()
    for name, kind in kinds.items():
        if name in t.column_names:
            i = t.column_names.index(name)
            t = t.set_column(i, pa.field(name, kind), t.column(i).cast(kind))
    names = dset.dtype.names or ()
    for name in decimals:
        if name in names and dset.dtype[name].kind in "iuf" and not dset.dtype[name].shape:
            i = t.column_names.index(name)
            kind = pa.from_numpy_dtype(dset.dtype[name].newbyteorder("="))
            t = t.set_column(i, pa.field(name, kind), t.column(i).cast(kind))
    return t


def _from_pandas(frame):
    """A pandas DataFrame as a ``pyarrow.Table``, its float columns' NaN
    kept as NaN: pyarrow makes them nulls, which HDF5 reads, statistics and
    HDF5 files made from the table would show as the fill value. (A null
    of pandas' own nullable types, ``pd.NA``, stays a null.)"""
    pa = _pa()
    t = pa.Table.from_pandas(frame, preserve_index=False)
    for i in range(frame.shape[1]):
        col = frame.iloc[:, i]
        if isinstance(col.dtype, np.dtype) and col.dtype.kind == "f":
            field = t.schema.field(i)
            t = t.set_column(i, field, pa.array(col.to_numpy(), type=field.type))
    return t


def arrow_source(data):
    """``data`` as a ``pyarrow.Table`` or ``RecordBatchReader`` when it is a
    table (pyarrow, pandas, Polars, or anything with ``__arrow_c_stream__``);
    None for anything else (arrays, lists, …)."""
    mod = type(data).__module__.split(".")[0]
    if mod == "pandas" and type(data).__name__ == "Series":
        # (A column, not a table: an array, as h5py stores it.)
        return None
    if mod == "pandas" and type(data).__name__ == "DataFrame":
        # (Before the stream protocol, which pandas has too and which would
        # keep a sorted or filtered frame's index as a column.)
        return _from_pandas(data)
    if mod == "pyarrow" or hasattr(data, "__arrow_c_stream__"):
        pa = _pa()
        if isinstance(data, (pa.Table, pa.RecordBatchReader)):
            return data
        if isinstance(data, pa.RecordBatch):
            return pa.Table.from_batches([data])
        if hasattr(data, "__arrow_c_stream__"):
            try:
                return pa.RecordBatchReader.from_stream(data)
            except pa.ArrowInvalid:
                # A stream of one array (a Polars Series, a chunked array):
                # no table; read as an array.
                return None
        return None
    return None


def _chunk_rows(dtype, rows):
    """Rows per chunk for a table: about 16 MiB of rows, at most the table."""
    per = max(1, (16 << 20) // max(1, dtype.itemsize if dtype.kind != "O" else 64))
    return max(1, min(per, rows)) if rows else per


def create_table(group, name, src, *, chunks=None, maxshape=(None,), compression=None,
                 compression_opts=None, fillvalue=None, **kwds):
    """See :meth:`h5lake.Group.create_dataset` with a table as ``data``."""
    import json
    from .. import _core
    from .h5t import hsds_to_dtype
    pa = _pa()
    layout = kwds.pop("layout", "columnar")
    if layout != "columnar":
        raise ValueError("a table given as data is stored columnar (layout='columnar')")
    for k in ("shape", "dtype"):
        if kwds.get(k) is not None:
            raise TypeError(f"{k} comes from the table's schema: do not pass it with a table")
        kwds.pop(k, None)
    if kwds:
        raise TypeError("unexpected arguments for a table: " + ", ".join(sorted(kwds)))
    type_json, arrow_types = _core.table_type(src.schema)
    dtype = hsds_to_dtype(json.loads(type_json))
    rows = src.num_rows if isinstance(src, pa.Table) else 0
    if isinstance(chunks, int):
        chunks = (chunks,)
    if chunks is None or chunks is True:
        chunks = (_chunk_rows(dtype, rows if rows else 1 << 30),)
    if maxshape is not None and not isinstance(maxshape, tuple):
        maxshape = (maxshape,)
    if isinstance(src, pa.RecordBatchReader) and maxshape != (None,):
        raise ValueError("a stream of record batches makes a resizable table (maxshape=(None,))")
    dset = group.create_dataset(name, shape=(rows,), dtype=dtype, chunks=chunks, maxshape=maxshape,
                                layout="columnar", compression=compression,
                                compression_opts=compression_opts, fillvalue=fillvalue)
    try:
        if json.loads(arrow_types):
            dset.attrs["arrow_types"] = arrow_types
        if isinstance(src, pa.Table):
            _core.table_write(dset._fs.raw, dset._oid, src, 0)
        else:
            _core.table_write(dset._fs.raw, dset._oid, src, None)
    except BaseException:
        # Nothing half-made is left behind.
        if name is not None and name in group:
            del group[name]
        raise
    finally:
        dset._fs.forget(dset._oid)
    return dset


def _rows_by_name(data, dset):
    """``data`` as rows of ``dset``'s type; a structured array's fields are
    matched by name (as a slice assignment matches them), never by place."""
    names = getattr(getattr(data, "dtype", None), "names", None)
    if names is not None and dset.dtype.names is not None:
        if sorted(names) != sorted(dset.dtype.names):
            raise ValueError(f"fields {list(names)} do not match the members "
                             f"{list(dset.dtype.names)} of {dset.name}")
        src = np.asarray(data)
        rows = np.empty(src.shape, dset.dtype)
        for n in dset.dtype.names:
            rows[n] = src[n]
    else:
        rows = np.asarray(data, dtype=dset.dtype)
    return rows.reshape(1) if rows.ndim == 0 else rows


def append(dset, data):
    """See :meth:`h5lake.Dataset.append`."""
    from .. import _core
    if dset.ndim != 1 or dset.chunks is None:
        raise TypeError(f"{dset.name}: rows are appended to a resizable 1-D dataset")
    dset._fs.check_writable(OSError, "Unable to append to the dataset")
    src = arrow_source(data)
    if src is not None:
        src = _in_member_order(_pa(), dset, src)
        # Columns kept as integers take the table's values in their unit.
        src = _to_members(_pa(), dset, src, _arrow_types(_pa(), dset))
    try:
        if src is not None and dset.is_columnar:
            if isinstance(src, _pa().Table):
                # All or nothing: the rows fit the extent and every value
                # casts before the table grows (a stream is written chunk
                # by chunk, each batch cast as it comes).
                if len(src.to_batches()) > 1:
                    src = src.combine_chunks()
                limit = dset.maxshape[0]
                if limit is not None and dset.shape[0] + src.num_rows > limit:
                    # The engine refuses this growth (past the maximum, or
                    # a read-only dataset) before it writes anything; if
                    # another writer shrank the table meanwhile, the rows
                    # claimed are written.
                    start = dset._fs.raw.dataset_extend_rows(dset._oid, src.num_rows)
                    dset._fs.forget(dset._oid)
                    return _core.table_write(dset._fs.raw, dset._oid, src, start)
            return _core.table_write(dset._fs.raw, dset._oid, src, None)
        if src is not None:
            if dset.dtype.names is None:
                raise TypeError(f"{dset.name}: a table is appended to a compound dataset")
            t = src if isinstance(src, _pa().Table) else src.read_all()
            missing = [n for n in dset.dtype.names if n not in t.column_names]
            if missing or len(t.column_names) != len(dset.dtype.names):
                raise ValueError(f"columns {t.column_names} do not match the members "
                                 f"{list(dset.dtype.names)} of {dset.name}")
            # A null reads as the member's fill value, as in a columnar table.
            rows = np.empty(t.num_rows, dset.dtype)
            rows[...] = dset.fillvalue
            for n in dset.dtype.names:
                col = t.column(n)
                if _pa().types.is_decimal(col.type):     # held as its unscaled integers
                    col = unscaled(_pa(), col).fill_null(0)
                member = dset.dtype[n]
                if member.kind in "biuf" and not member.shape and col.type != _pa().null():
                    # pyarrow's safe cast: a value the member cannot hold is
                    # refused, never wrapped, truncated or nulled.
                    try:
                        cast = col.cast(_pa().from_numpy_dtype(member.newbyteorder("=")))
                    except _pa().ArrowInvalid as e:
                        raise ValueError(f"column {n!r} cannot be stored as {member} "
                                         f"in {dset.name}: {e}") from None
                    if member.kind == "f" and _pa().types.is_floating(col.type):
                        # (pyarrow's safe cast takes a value past a narrower
                        # float's range as infinity.)
                        import pyarrow.compute as pc
                        lost = pc.and_(pc.is_finite(col), pc.invert(pc.is_finite(cast)))
                        if pc.any(lost).as_py():
                            row = pc.index(lost, True).as_py()
                            raise ValueError(
                                f"column {n!r} cannot be stored as {member} in {dset.name}: "
                                f"row {row} holds {col[row].as_py()!r}, out of its range")
                    col = cast
                if member.kind == "S" and not member.shape:
                    col = _fixed_text(_pa(), col, member.itemsize, n, dset)
                if col.null_count:
                    valid = col.is_valid().to_numpy(zero_copy_only=False)
                    rows[n][valid] = col.drop_null().to_numpy(zero_copy_only=False)
                else:
                    rows[n] = col.to_numpy(zero_copy_only=False)
        else:
            rows = _rows_by_name(data, dset)
        return _append_rows(dset, rows)
    finally:
        dset._fs.forget(dset._oid)


def _fixed_text(pa, col, width, name, dset):
    """The column ``col`` for a fixed-length string member of ``width``
    bytes, as bytes: text or bytes only, each value at most ``width`` bytes
    without its trailing NULs (refused rather than cut, as a columnar table
    refuses it)."""
    kind = col.type
    if pa.types.is_dictionary(kind):
        col, kind = col.cast(kind.value_type), kind.value_type
    if not (pa.types.is_binary(kind) or pa.types.is_large_binary(kind)
            or pa.types.is_fixed_size_binary(kind) or pa.types.is_string(kind)
            or pa.types.is_large_string(kind) or pa.types.is_null(kind)
            or getattr(pa.types, "is_binary_view", lambda t: False)(kind)
            or getattr(pa.types, "is_string_view", lambda t: False)(kind)):
        raise ValueError(f"column {name!r} cannot be stored as a fixed-length string of "
                         f"{width} bytes in {dset.name}: its values are {kind}, not text or bytes")
    import pyarrow.compute as pc
    if pa.types.is_null(kind):
        return pa.nulls(len(col), pa.binary())
    values = pc.replace_substring_regex(col.cast(pa.binary()), pattern="\x00+$",
                                        replacement="")
    lengths = pc.binary_length(values)
    if len(values) and (pc.max(lengths).as_py() or 0) > width:
        row = pc.index(pc.greater(lengths, width), True).as_py()
        raise ValueError(f"column {name!r} cannot be stored as a fixed-length string of "
                         f"{width} bytes in {dset.name}: row {row} holds "
                         f"{lengths[row].as_py()} bytes")
    return values


def _append_rows(dset, rows):
    """Appends ``rows`` (of ``dset``'s type) through the HDF5-shaped write
    (row layout, or a columnar table given NumPy rows). They are converted
    and encoded first, so that rows that cannot be stored are refused
    before the dataset grows."""
    from .dataset import _uses_records, _vlen_kind, _to_stored
    from . import selections as sel
    vlen = _uses_records(dset.dtype) or _vlen_kind(dset.dtype) is not None
    if vlen:
        rows, encode = dset._vlen_encoder(rows)
        values = encode(rows)
    else:
        rows = _to_stored(rows, dset._stored)
    start = dset._fs.raw.dataset_extend_rows(dset._oid, len(rows))
    dset._fs.forget(dset._oid)
    if not len(rows):
        return 0
    if vlen:
        selection = sel.select(dset.shape, (slice(start, start + len(rows)),))
        dset._fs.raw.dataset_write_vlen(dset._oid, selection.engine_sel, values,
                                        list(dset.dtype.names) if dset.dtype.names else None)
    else:
        dset[start:start + len(rows)] = rows
    return len(rows)
