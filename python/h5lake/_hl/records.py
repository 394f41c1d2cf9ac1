"""Elements of compound and array types with variable-length parts
("records") in their stored form, HSDS's serialization: the parts one after
another in declaration order; a fixed-size part as its bytes; a
variable-length string as a 4-byte little-endian byte count and its bytes;
a variable-length sequence as a 4-byte byte count and its elements, each
serialized the same way.  (The engine's ``h5lake_types::record`` reads and
writes the same form.)

Values follow h5py: a variable-length string member reads as ``bytes``, a
sequence member as an ndarray of its base type.
"""

import struct

import numpy as np

from . import h5t

_COUNT = struct.Struct("<I")


def _counted(body):
    if len(body) > 0xFFFFFFFF:
        raise ValueError("a variable-length part above 4 GiB")
    return _COUNT.pack(len(body)) + body


def _encode(x, dt, out, nul_ok=False):
    if dt.names is not None:
        for n in dt.names:
            _encode(x[n], dt.fields[n][0], out, nul_ok)
        return
    if dt.subdtype is not None:
        base, shape = _array_parts(dt)
        arr = np.asarray(x, dtype=base)
        if arr.shape != shape:
            arr = np.broadcast_to(arr, shape)
        for e in arr.reshape(-1):
            _encode(e, base, out, nul_ok)
        return
    if dt.kind == "O":
        if h5t.is_ref(dt):
            # An object reference has a fixed size: its stored id, NUL-padded.
            if not isinstance(x, h5t.Reference):
                raise TypeError("Can't convert incompatible object to HDF5 object reference")
            out.append(x._stored().encode("ascii").ljust(h5t._REF_BYTES, b"\0"))
            return
        vlen = h5t.check_vlen_dtype(dt)
        if vlen is str or vlen is bytes:
            if isinstance(x, str):
                b = x.encode("utf-8", "surrogateescape")
            elif isinstance(x, (bytes, bytearray, np.bytes_)):
                b = bytes(x)
            elif isinstance(x, int) and x == 0:      # an object array's empty slot
                b = b""
            else:
                raise TypeError("Expected str or bytes for a vlen string, got %r" % (x,))
            if b"\0" in b and not nul_ok:
                raise ValueError("VLEN strings do not support embedded NULLs")
            out.append(_counted(b))
            return
        if vlen is not None:
            base = np.dtype(vlen)
            if isinstance(x, int) and x == 0:
                out.append(_counted(b""))
                return
            seq = np.asarray(x, dtype=base).reshape(-1)
            if h5t.has_vlen(base):
                body = []
                for e in seq:
                    _encode(e, base, body, nul_ok)
                out.append(_counted(b"".join(body)))
            else:
                out.append(_counted(np.ascontiguousarray(seq, dtype=h5t.packed_dtype(base)).tobytes()))
            return
        raise h5t._no_path(dt)
    out.append(np.asarray(x, dtype=dt).tobytes())


def encode(arr, dt, kept=()):
    """The stored records of the elements of ``arr`` (dtype ``dt``), C order.
    ``kept``: top-level members whose values were read from the dataset
    being written and go back as they are (a NUL in their text, which h5py
    refuses from a caller, can come from a Parquet file loaded)."""
    dt = np.dtype(dt)
    flat = np.asarray(arr, dtype=dt).reshape(-1)
    values = []
    for e in flat:
        parts = []
        if kept and dt.names is not None:
            for n in dt.names:
                _encode(e[n], dt.fields[n][0], parts, n in kept)
        else:
            _encode(e, dt, parts)
        values.append(b"".join(parts))
    return values


def _array_parts(dt):
    """The element type and whole shape of the array type ``dt`` (an array
    of arrays as one, its items in C order, as they are stored)."""
    base, shape = dt.subdtype
    while base.subdtype is not None:
        base, inner = base.subdtype
        shape = shape + inner
    return base, shape


def _count(buf, pos):
    if pos + 4 > len(buf):
        raise OSError("corrupt variable-length record (truncated)")
    n = _COUNT.unpack_from(buf, pos)[0]
    if pos + 4 + n > len(buf):
        raise OSError("corrupt variable-length record (truncated)")
    return n, pos + 4


def _decode(buf, pos, dt):
    """(value, next position) of the element of ``dt`` at ``buf[pos]``."""
    if dt.names is not None:
        vals = []
        for n in dt.names:
            v, pos = _decode(buf, pos, dt.fields[n][0])
            vals.append(v)
        return tuple(vals), pos
    if dt.subdtype is not None:
        base, shape = _array_parts(dt)
        out = np.empty(int(np.prod(shape)), dtype=base)
        for i in range(out.shape[0]):
            out[i], pos = _decode(buf, pos, base)
        return out.reshape(shape), pos
    if dt.kind == "O" and h5t.is_ref(dt):
        end = pos + h5t._REF_BYTES
        if end > len(buf):
            raise OSError("corrupt variable-length record (truncated)")
        return h5t.Reference._from_stored(bytes(buf[pos:end])), end
    if dt.kind == "O":
        vlen = h5t.check_vlen_dtype(dt)
        n, pos = _count(buf, pos)
        body = bytes(buf[pos:pos + n])
        if vlen is str or vlen is bytes:
            return body, pos + n
        base = np.dtype(vlen)
        if not h5t.has_vlen(base):
            packed = h5t.packed_dtype(base)
            seq = np.frombuffer(body, dtype=packed).astype(base) if body else np.zeros(0, dtype=base)
            return seq, pos + n
        items, at = [], 0
        while at < n:
            v, at = _decode(body, at, base)
            items.append(v)
        seq = np.empty(len(items), dtype=base)
        for i, v in enumerate(items):
            seq[i] = v
        return seq, pos + n
    size = dt.itemsize
    if pos + size > len(buf):
        raise OSError("corrupt variable-length record (truncated)")
    return np.frombuffer(buf, dtype=dt, count=1, offset=pos)[0], pos + size


def decode(values, dt, shape):
    """An array of ``dt`` and ``shape`` from stored records."""
    dt = np.dtype(dt)
    out = np.empty(len(values), dtype=dt)
    for i, rec in enumerate(values):
        v, end = _decode(rec, 0, dt)
        if end != len(rec):
            raise OSError("corrupt variable-length record (%d bytes left over)" % (len(rec) - end))
        out[i] = v
    return out.reshape(shape)
