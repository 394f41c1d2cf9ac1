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
        from .h5t import check_vlen_dtype
        base = check_vlen_dtype(dt)
        if base is str:                 # UTF-8 text: Arrow strings
            return pa.array([x.decode("utf-8") if isinstance(x, bytes) else x for x in a],
                            pa.string())
        if base is bytes:
            return pa.array([bytes(x) for x in a], pa.binary())
        return pa.array([np.asarray(x).tolist() for x in a])
    if not dt.isnative:                 # Arrow is little-endian
        a = a.astype(dt.newbyteorder("="))
    return pa.array(np.ascontiguousarray(a))


def to_arrow(dset, sel=None, fields=None):
    """See :meth:`h5lake.Dataset.to_arrow`."""
    pa = _pa()
    if isinstance(fields, str):
        fields = [fields]
    src = dset.fields(fields) if fields is not None else dset
    data = src[()] if sel is None else src[sel]
    data = np.asarray(data)
    flat = data.reshape(-1)
    if flat.dtype.names is None:
        if src.dtype.kind == "O":        # keep what kind of strings they are
            flat = flat.astype(src.dtype)
        return pa.table({"value": _column(pa, flat)})
    return pa.table({name: _column(pa, np.ascontiguousarray(flat[name])) for name in flat.dtype.names})


def group_to_arrow(group, sel=None, names=None):
    """See :meth:`h5lake.Group.to_arrow`."""
    from .dataset import Dataset
    pa = _pa()
    if names is None:
        names = [k for k in group if isinstance(group.get(k), Dataset)]
    columns, length = {}, None
    for name in names:
        d = group[name]
        if not isinstance(d, Dataset) or d.ndim != 1:
            raise ValueError(f"{group.name}/{name} is not a 1-D dataset: a group's table has "
                             "one 1-D dataset per column")
        if length is not None and d.shape[0] != length:
            raise ValueError(f"{group.name}/{name} has {d.shape[0]} rows, the others {length}: "
                             "the columns of a table have one length")
        length = d.shape[0]
        data = np.asarray(d[()] if sel is None else d[sel]).reshape(-1)
        if d.dtype.kind == "O":          # keep what kind of strings they are
            data = data.astype(d.dtype)
        columns[name] = _column(pa, data)
    return pa.table(columns)
