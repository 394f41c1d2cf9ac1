"""Statistics kept per chunk, and queries answered with them
(``Dataset.stats``, ``min``/``max``/``sum``/``count``/``mean``,
``read_where``, ``get_where_list``, ``where``).

The engine keeps, beside every chunk it writes, the count, NaN count,
bounds and sum of each numeric field (and the values of the dataset's
chunk functions). A query reads only the chunks whose statistics say they
can hold a match; an aggregate over whole chunks reads no data at all.
Conditions are expressions over the fields, written as in PyTables /
numexpr: ``(x > 0.5) & (id1 < 1000)``; comparisons also chain
(``0 < x <= 1``) and bind tighter than ``&``/``|``. A dataset that is not
a compound names its elements ``value``."""

import json
import math
import re

import numpy as np

from . import h5t
from . import selections as sel
from .base import named_in_errors


def stats_setting(stats):
    """The ``h5lake.stats`` creation setting for ``create_dataset(stats=...)``:
    None/True (the default: statistics of every numeric field), False (none),
    or a dict of chunk functions ``{name: "max(abs(height))"}``."""
    if stats is None or stats is True:
        return None
    if stats is False:
        return False
    if isinstance(stats, dict):
        for k, v in stats.items():
            if not isinstance(k, str) or not isinstance(v, str):
                raise TypeError("stats maps function names (str) to expressions (str), "
                                f"e.g. {{'max_wave': 'max(abs(height))'}}; got {k!r}: {v!r}")
        return {"functions": dict(stats)}
    raise TypeError(f"stats must be True, False or a dict of chunk functions, not {stats!r}")


def region(dset, selection):
    """``[lo, hi)`` per dimension for a selection of slices (step 1) and
    integers; None for everything."""
    if isinstance(selection, np.ndarray) and selection.shape == () and selection.dtype.kind in "iu":
        selection = int(selection)
    if isinstance(selection, np.ndarray) or isinstance(selection, (list, bool, np.bool_)):
        raise ValueError("a query's selection is a box: slices without a step, and integers; "
                         f"not {type(selection).__name__} {selection!r:.60}")
    if selection is None or selection is Ellipsis or (isinstance(selection, tuple) and not selection):
        return None
    shape = dset.shape
    if not isinstance(selection, tuple):
        selection = (selection,)
    if any(s is Ellipsis for s in selection):
        i = next(k for k, s in enumerate(selection) if s is Ellipsis)
        fill = (slice(None),) * (len(shape) - len(selection) + 1)
        selection = selection[:i] + fill + selection[i + 1:]
    if len(selection) > len(shape):
        raise ValueError(f"selection {selection!r} has more dimensions than the dataset's {len(shape)}")
    selection = selection + (slice(None),) * (len(shape) - len(selection))
    out = []
    for s, n in zip(selection, shape):
        if isinstance(s, slice):
            lo, hi, step = s.indices(n)
            if step != 1:
                raise ValueError("a query's selection is a box: slices without a step, and integers")
            out.append((lo, max(lo, hi)))
        elif isinstance(s, (int, np.integer)) and not isinstance(s, bool):
            i = int(s) + (n if s < 0 else 0)
            if not 0 <= i < n:
                raise IndexError(f"index {int(s)} is out of range for a dimension of {n}")
            out.append((i, i + 1))
        else:
            raise ValueError("a query's selection is a box: slices without a step, and integers; "
                             f"not {s!r}")
    return out


def _number(v):
    if isinstance(v, str):
        return {"inf": math.inf, "-inf": -math.inf, "nan": math.nan}.get(v, None) \
            if v in ("inf", "-inf", "nan") else int(v)
    return v


def _stat_value(key, v):
    if key in ("text_min", "text_max"):     # bounds on text, its bytes in hex
        return None if v is None else bytes.fromhex(v)
    return _number(v)


def _fields_json(doc):
    return {name: {k: _stat_value(k, v) for k, v in s.items()} for name, s in doc.items()}


def aggregate(dset, selection=None):
    """Statistics of the selection: ``{"fields": {name: {count, nan_count, null_count,
    min, max, sum, mean}}, "functions": {name: value}, "chunks_read": n,
    "chunks_from_stats": n}``."""
    dset._fs.check()
    with named_in_errors(dset):
        doc = json.loads(dset._fs.raw.dataset_aggregate(dset._oid, region(dset, selection)))
    doc["fields"] = _fields_json(doc["fields"])
    doc["functions"] = {k: _number(v) for k, v in doc["functions"].items()}
    return doc


def chunk_table(dset):
    """The per-chunk statistics as a ``pyarrow.Table``: a row per stored
    chunk with its coordinates (``chunk``), first element (``start``) and
    extent (``shape``), then per field ``<field>.min``, ``.max``,
    ``.count``, ``.nan_count``, ``.null_count`` (elements that were null in
    a columnar chunk; they read as the fill value), ``.sum``, then each
    chunk function. A text field has ``.min`` and ``.max`` as bytes
    (trailing NULs dropped): bounds, which for values longer than 64 bytes
    are cut short (``.max`` rounded up; null if it cannot be), and counts."""
    import pyarrow as pa
    dset._fs.check()
    with named_in_errors(dset):
        doc = json.loads(dset._fs.raw.dataset_chunk_stats(dset._oid))
    rows = doc["chunks"]
    dt = dset.dtype
    cols = {
        "chunk": pa.array([r["chunk"] for r in rows], pa.list_(pa.int64())),
        "start": pa.array([r["start"] for r in rows], pa.list_(pa.int64())),
        "shape": pa.array([r["shape"] for r in rows], pa.list_(pa.int64())),
    }
    for name in doc["fields"]:
        kind = _leaf_dtype(dt, name)
        if kind.kind not in "biuf":
            # Text: bounds (as conditions compare it), counts.
            for stat in ("min", "max"):
                vals = [_stat_value(f"text_{stat}", r["fields"][name].get(f"text_{stat}"))
                        for r in rows]
                cols[f"{name}.{stat}"] = pa.array(vals, pa.binary())
            for stat in ("count", "null_count"):
                cols[f"{name}.{stat}"] = pa.array([r["fields"][name][stat] for r in rows], pa.int64())
            continue
        bound_type = pa.float64() if kind.kind == "f" else (
            pa.bool_() if kind.kind == "b" else
            (pa.uint64() if kind.kind == "u" else pa.int64()))
        if kind.kind == "b":
            conv = lambda v: None if v is None else bool(v)  # noqa: E731
        else:
            conv = _number
        for stat, typ in (("min", bound_type), ("max", bound_type), ("count", pa.int64()),
                          ("nan_count", pa.int64()), ("null_count", pa.int64()),
                          ("sum", pa.float64() if kind.kind == "f" else None)):
            vals = [r["fields"][name][stat] for r in rows]
            vals = [conv(v) if stat in ("min", "max") else _number(v) for v in vals]
            cols[f"{name}.{stat}"] = pa.array(vals, typ) if typ is not None else _exact(pa, vals)
    for f in doc["functions"]:
        vals = [_number(r["functions"][f["name"]]) for r in rows]
        cols[f["name"]] = _exact(pa, vals) if all(
            v is None or (isinstance(v, int) and not isinstance(v, bool)) for v in vals) \
            else pa.array(vals)
    return pa.table(cols)


def _exact(pa, ints):
    """A column of integers (sums of a chunk's values, exact) in the
    narrowest Arrow type that holds them all: int64, uint64, a decimal of
    38 digits, else (sums the engine saturated) float64."""
    present = [v for v in ints if v is not None]
    if all(-2**63 <= v < 2**63 for v in present):
        return pa.array(ints, pa.int64())
    if all(0 <= v < 2**64 for v in present):
        return pa.array(ints, pa.uint64())
    if all(abs(v) < 10**38 for v in present):
        import decimal
        return pa.array([None if v is None else decimal.Decimal(v) for v in ints],
                        pa.decimal128(38, 0))
    return pa.array([None if v is None else float(v) for v in ints], pa.float64())


def _leaf_dtype(dt, name):
    if dt.names is None:
        return dt.base
    return _member_dtype(dt, name).base


def _member_paths(dt, path):
    """Every member of the compound ``dt`` that the dotted ``path`` can
    name: a member's own name may hold dots (``user.id``, as pandas'
    ``json_normalize`` names columns), so ``a.b`` is the member ``a.b`` or
    the member ``b`` of ``a``."""
    if dt.names is None:
        return []
    found = [dt[path]] if path in dt.names else []
    at = path.find(".")
    while at > 0:
        head = path[:at]
        if head in dt.names:
            found += _member_paths(dt[head], path[at + 1:])
        at = path.find(".", at + 1)
    return found


def _leaf(dset, field):
    dt = dset.dtype
    if field is None:
        if dt.names is not None:
            raise ValueError(f"{dset.name} is a compound dataset: name the field, "
                             f"one of {', '.join(_numeric_names(dt))}")
        return "value"
    if dt.names is None:
        if field == "value":        # what conditions call the elements
            return field
        raise ValueError(f"{dset.name} has no fields (its elements are named 'value' in conditions)")
    return field


def _member_dtype(dt, path):
    """The type of the member ``path`` (dotted for nested members) of the
    compound ``dt``; None if there is none.

    Raises ValueError when ``path`` names two members (``p.x`` beside a
    member ``x`` of ``p``): statistics and conditions could not tell
    which is meant."""
    found = _member_paths(dt, path)
    if len(found) > 1:
        raise ValueError(f"{path!r} names more than one member (a member whose name holds "
                         f"a dot, and a member of a nested compound): rename one of them")
    return found[0] if found else None


def _numeric_names(dt, prefix=""):
    out = []
    for n in dt.names:
        sub = dt[n]
        if sub.names is not None:
            out += _numeric_names(sub, prefix + n + ".")
        elif sub.kind in "biuf" and sub.shape == ():
            out.append(prefix + n)
    return out


def field_stat(dset, stat, field=None, selection=None):
    """One statistic of one field over a selection, with numpy's meaning:
    ``min``/``max``/``sum``/``mean`` are NaN when a NaN is among the values
    (numpy's ``nanmin`` etc. are ``stats(...)["min"]``); ``count`` is the
    number of values other than NaN."""
    name = _leaf(dset, field)
    dt = dset.dtype
    if dt.names is None and dt.kind == "c":
        raise ValueError(f"{dset.name} holds complex numbers, which keep no statistics: "
                         f"numpy.{stat}(dset) reduces the values read")
    fields = aggregate(dset, selection)["fields"]
    if name not in fields:
        member = _member_dtype(dt, name)
        if member is not None and member.shape != ():
            raise ValueError(f"{name!r} is an array member: statistics are kept of scalar "
                             f"members only (numpy.{stat}(dset[{name!r}]) reduces its values)")
        if dt.names is None:
            raise ValueError(f"{dset.name}: values of type {dt} keep no statistics: "
                             f"numpy.{stat}(dset) reduces the values read")
        numeric = _numeric_names(dt)
        raise ValueError(f"no numeric field {name!r}; the numeric fields are "
                         f"{', '.join(numeric) or 'none'}")
    s = fields[name]
    kind = _leaf_dtype(dset.dtype, name)
    if kind.kind not in "biuf":
        raise TypeError(f"{name!r} is text, not a number: {stat}() needs a numeric field")
    if stat == "count":
        return s["count"] - s["nan_count"]
    if s["count"] == 0:
        if stat == "sum":
            return 0
        if stat == "mean":
            # (numpy's answer and warning for the mean of nothing.)
            import warnings
            warnings.warn("Mean of empty slice.", RuntimeWarning, stacklevel=3)
            return math.nan
        raise ValueError(f"{stat}() of an empty selection")
    if s["nan_count"]:
        return math.nan
    v = s[stat]
    if stat in ("min", "max"):
        return kind.type(v) if kind.kind != "b" else np.bool_(v)
    return v


def _packed(dt, names):
    """``dt`` holding just the members ``names``, packed in that order."""
    return np.dtype([(n, dt.fields[n][0]) for n in names])


def _found(dset, condition, selection, fields=None):
    """(coordinates, values) of the matches; values hold just ``fields``
    (a list of member names) when given, nothing when it is empty."""
    dset._fs.check()
    if not isinstance(condition, str):
        raise TypeError(f"a condition is a string such as '(x > 0.5) & (id < 10)', not {condition!r}")
    variable = [n for n in dset.dtype.names or () if h5t.has_vlen(dset.dtype[n])]
    if variable:
        # A compound with members of variable length is queried on its
        # fixed-size members; rows that need the others are read by their
        # coordinates.
        want = list(dset.dtype.names) if fields is None else list(fields)
        if any(n in variable for n in want):
            coords, _ = _found(dset, condition, selection, [])
            points = sel.PointSelection(dset.shape, coords)
            rows = dset._read_selection(points, dset.dtype) if len(coords) else \
                np.empty(0, dset.dtype)
            return coords, rows if fields is None else rows[want]
    with named_in_errors(dset):
        coords, elems, read, skipped = dset._fs.raw.dataset_query(
            dset._oid, condition, region(dset, selection), fields)
    rank = len(dset.shape)
    flat = np.frombuffer(coords, dtype="<u8").astype(np.int64)
    # (The engine holds a scalar as one element of a 1-D extent.)
    coords = flat.reshape(-1, max(rank, 1))[:, :rank]
    dset._last_query = {"chunks_read": read, "chunks_skipped": skipped}
    if fields is not None and not fields:
        return coords, None
    stored, want = dset._stored, dset.dtype
    if fields is not None:
        stored, want = _packed(stored, fields), _packed(want, fields)
    values = np.frombuffer(elems, dtype=stored)
    values = values.astype(want) if stored != want else values.copy()
    return coords, values


_LITERAL_NAMES = ("true", "false", "inf", "nan")


def _field_paths(dt, prefix=""):
    """Every member of ``dt`` by its dotted path (``pos``, ``pos.x``)."""
    out = set()
    for n in dt.names or ():
        out.add(prefix + n)
        out |= _field_paths(dt.fields[n][0], prefix + n + ".")
    return out


def _literal(name, value):
    """``value`` written as the query language reads it."""
    if isinstance(value, np.ndarray) and value.shape == ():
        value = value[()]
    if isinstance(value, (bool, np.bool_)):
        return "true" if value else "false"
    # (Negative numbers in parentheses: bound into `lim ** 2`, -3 must
    # stay one operand, not become -(3 ** 2).)
    if isinstance(value, (int, np.integer)):
        return str(int(value)) if value >= 0 else f"({int(value)})"
    if isinstance(value, (float, np.floating)):
        v = float(value)
        if math.isnan(v):
            return "nan"
        if math.isinf(v):
            return "inf" if v > 0 else "(-inf)"
        return repr(v) if math.copysign(1, v) > 0 else f"({v!r})"
    if isinstance(value, (bytes, np.bytes_)):
        # (Trailing NULs are padding, as NumPy compares byte strings; every
        # byte else goes as it is, escaped where it is not plain ASCII.)
        return "b'" + "".join(chr(c) if 0x20 <= c < 0x7f and c not in b"'\\" else f"\\x{c:02x}"
                              for c in bytes(value).rstrip(b"\0")) + "'"
    if isinstance(value, (str, np.str_)):
        return "'" + str(value).replace("\\", "\\\\").replace("'", "\\'") + "'"
    raise TypeError(f"{name!r} in a condition must be a number, a bool or a string, "
                    f"not {type(value).__name__}")


def bind(dset, condition, condvars=None, frame=None):
    """``condition`` with its names bound as PyTables binds them: a name in
    ``condvars`` is replaced by its value (even a field's name); other
    names of fields stay; the rest are replaced by values of the calling
    frame's local and global variables when ``condvars`` is not given.
    Names found nowhere are left for the parser to report."""
    if not isinstance(condition, str):
        return condition
    if condvars is not None and not isinstance(condvars, dict):
        raise TypeError(f"condvars maps names to values, not {type(condvars).__name__}")
    fields = _field_paths(dset.dtype) if dset.dtype.names else {"value"}
    out, i, n = [], 0, len(condition)
    while i < n:
        c = condition[i]
        if c in "'\"`" or (c == "b" and i + 1 < n and condition[i + 1] in "'\""):
            q = i + 1 if c == "b" else i
            # (Up to the closing quote; a backslash escapes the next
            # character in text, as the query language reads it.)
            end = q + 1
            while end < n and condition[end] != condition[q]:
                end += 2 if condition[end] == "\\" and condition[q] != "`" else 1
            end = min(n, end + 1)
            out.append(condition[i:end])
            i = end
            continue
        m = _NAME.match(condition, i)
        if m is None or (i > 0 and (condition[i - 1].isalnum() or condition[i - 1] in "._")):
            out.append(c)
            i += 1
            continue
        name, i = m.group(0), m.end()
        rest = condition[i:].lstrip()
        if rest.startswith("(") or (name.lower() in _LITERAL_NAMES and name not in (condvars or {})):
            out.append(name)
            continue
        # (condvars override fields of the same name, as in PyTables; the
        # caller's variables do not.)
        if name in fields and name not in (condvars or {}):
            out.append(name)
            continue
        scopes = [condvars] if condvars is not None else \
            ([frame.f_locals, frame.f_globals] if frame is not None else [])
        for scope in scopes:
            if name in scope:
                out.append(_literal(name, scope[name]))
                break
        else:
            out.append(name)
    return "".join(out)


_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*")


def rows_of(dset, selection, start, stop, step):
    """PyTables' ``start``/``stop``/``step`` (rows of a 1-D dataset) as a
    box selection and the step to keep matches at (None: every row)."""
    if start is None and stop is None and step is None:
        return selection, None
    if dset.ndim != 1:
        raise TypeError("start, stop and step count rows of a 1-D dataset; give sel= a box")
    if selection is not None:
        raise TypeError("give sel= or start/stop/step, not both")
    lo, hi, st = slice(start, stop, step).indices(dset.shape[0])
    if st < 1:
        raise ValueError("step must be positive")
    return np.s_[lo:max(lo, hi)], (lo, st) if st != 1 else None


def _stepped(found, keep):
    """Matches at rows ``lo + k*step`` only (``keep`` = (lo, step), or None
    for every match)."""
    coords, values = found
    if keep is None:
        return coords, values
    lo, st = keep
    mask = (coords[:, 0] - lo) % st == 0
    return coords[mask], None if values is None else values[mask]


def read_where(dset, condition, fields=None, selection=None, keep=None):
    if fields is None:
        return _stepped(_found(dset, condition, selection), keep)[1]
    names = [fields] if isinstance(fields, str) else list(fields)
    if dset.dtype.names is None:
        raise ValueError(f"{dset.name} has no fields")
    for n in names:
        if n not in dset.dtype.names:
            raise ValueError(f"no field {n!r}; the fields are {', '.join(dset.dtype.names)}")
    if len(set(names)) != len(names):
        raise ValueError(f"a field is named twice in {names}")
    values = _stepped(_found(dset, condition, selection, names), keep)[1]
    return values[fields].copy() if isinstance(fields, str) else values


def get_where_list(dset, condition, selection=None, keep=None):
    coords, _ = _stepped(_found(dset, condition, selection, [] if dset.dtype.names else None),
                         keep)
    return coords[:, 0].copy() if coords.shape[1] == 1 else coords


def where(dset, condition, selection=None, keep=None):
    _, values = _stepped(_found(dset, condition, selection), keep)
    return iter(values)
