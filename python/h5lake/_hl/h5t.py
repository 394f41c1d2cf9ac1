"""Datatypes: h5py's dtype helpers and the HSDS (schema v2) JSON forms.

Two jobs live here, both pure Python (numpy + stdlib only):

* h5py's "special dtype" helpers (``string_dtype``, ``vlen_dtype``, ...). They
  use *exactly* h5py's numpy-metadata conventions (``{'vlen': str}``,
  ``{'h5py_encoding': 'utf-8'}``, ``{'enum': {...}}``, ``{'h5py_opaque': True}``)
  so that dtypes flow freely between h5py and h5lake code:
  ``h5py.check_string_dtype(h5lake.string_dtype())`` works and vice versa.

* The mapping numpy dtype <-> HSDS type JSON, and numpy values <-> HSDS JSON
  values (attribute ``value``, ``fillValue``).

JSON-form decisions (the Rust side relies on them):

* Non-finite floats are the *strings* ``"NaN"``, ``"Infinity"``,
  ``"-Infinity"`` (serde_json rejects the bare literals that Python's json
  module, and therefore HSDS, writes).  Decoding accepts both forms.
* Fixed-length strings and opaque values are JSON strings when their bytes
  are valid UTF-8 (what HSDS writes: it decodes bytes as UTF-8).  Bytes that
  are not valid UTF-8 become ``{"base64": "<standard base64>"}``; a JSON object
  can never be confused with a string, and no other value form uses objects.
  Fixed strings lose trailing NULs (numpy/HDF5 NULLPAD semantics); opaque
  values keep all their bytes.
* ``bool`` is HSDS's/h5py's enum ``{"FALSE": 0, "TRUE": 1}`` over
  ``H5T_STD_I8LE``; its *values* are JSON ``true``/``false`` (what h5pyd sends
  and HSDS stores); decoding also accepts 0/1.
* Other enums are their integer values; complex numbers are ``[re, im]``;
  compound elements are lists of field values in field order.
"""

import base64
import binascii
import codecs
import collections
import json
import math
import sys

import numpy as np

__all__ = [
    "string_info", "Empty",
    "string_dtype", "vlen_dtype", "enum_dtype", "opaque_dtype", "special_dtype",
    "check_dtype", "check_string_dtype", "check_vlen_dtype", "check_enum_dtype",
    "check_opaque_dtype", "check_ref_dtype", "Reference", "ref_dtype",
    "RegionReference", "regionref_dtype",
    "dtype_to_hsds", "hsds_to_dtype", "packed_dtype", "is_vlen", "has_vlen",
    "value_to_json", "json_to_value", "attr_json", "attr_value_from_json",
    "shape_json",
]

# Same name and fields as h5py.h5t.string_info, so code that unpacks or
# compares it behaves the same with either library.
string_info = collections.namedtuple("string_info", ["encoding", "length"])


class Empty:
    """An empty (H5S_NULL) dataspace: a dtype but no shape and no data.

    Mirrors ``h5py.Empty`` (not the same thing as an array of shape (0,)).
    """

    shape = None
    size = None

    def __init__(self, dtype):
        self.dtype = np.dtype(dtype)

    def __eq__(self, other):
        # Duck-typed so that an h5py.Empty compares equal too.
        return (type(other).__name__ == "Empty"
                and getattr(other, "shape", 0) is None
                and self.dtype == getattr(other, "dtype", None))

    def __ne__(self, other):
        return not self == other

    __hash__ = None

    def __repr__(self):
        return "Empty(dtype={0!r})".format(self.dtype)


def _is_empty(obj):
    return isinstance(obj, Empty) or (
        type(obj).__name__ == "Empty" and getattr(obj, "shape", 0) is None
        and isinstance(getattr(obj, "dtype", None), np.dtype))


# --------------------------------------------------------------------------
# h5py's special-dtype helpers
# --------------------------------------------------------------------------

def string_dtype(encoding="utf-8", length=None):
    """A dtype for HDF5 strings: variable length (``length=None``, an object
    dtype) or fixed length (an ``S<length>`` dtype tagged with its encoding)."""
    try:
        encoding = codecs.lookup(encoding).name
    except LookupError:
        pass  # reported below with the name as given
    if encoding not in ("ascii", "utf-8"):
        raise ValueError("Invalid encoding (%r); 'utf-8' or 'ascii' allowed" % encoding)
    if length is None:
        return np.dtype("O", metadata={"vlen": str if encoding == "utf-8" else bytes})
    if isinstance(length, int):
        # bool is an int subclass; numpy rejects '|STrue', as it does for h5py
        return np.dtype("|S" + str(length), metadata={"h5py_encoding": encoding})
    raise TypeError("length must be integer or None (got %r)" % (length,))


def vlen_dtype(basetype):
    """A dtype for variable-length sequences of ``basetype`` (kept as given,
    like h5py: ``check_vlen_dtype`` returns exactly what was passed)."""
    return np.dtype("O", metadata={"vlen": basetype})


def enum_dtype(values_dict, basetype=np.uint8):
    """An integer dtype carrying an HDF5 enum's name -> value mapping."""
    dt = np.dtype(basetype)
    if dt.kind not in "iu":
        raise TypeError("Only integer types can be used as enums")
    return np.dtype(dt, metadata={"enum": values_dict})


def opaque_dtype(np_dtype):
    """Store ``np_dtype`` as HDF5 opaque bytes tagged with the numpy type, so
    that e.g. datetime64 arrays survive a round trip."""
    dt = np.dtype(np_dtype)
    if dt.hasobject:
        raise TypeError("Cannot store numpy object arrays as opaque data")
    if dt.names is not None:
        raise TypeError("Cannot store numpy structured arrays as opaque data")
    if dt.subdtype is not None:
        raise TypeError("Cannot store numpy sub-array dtype as opaque data")
    return np.dtype(dt, metadata={"h5py_opaque": True})


def _meta(dt):
    return dt.metadata or {}


def check_vlen_dtype(dt):
    """The vlen base type (``str``, ``bytes`` or a dtype-like), or None."""
    if dt.kind != "O":
        return None
    return _meta(dt).get("vlen", None)


def check_string_dtype(dt):
    """``string_info(encoding, length)`` for a string dtype, else None."""
    vlen = check_vlen_dtype(dt)
    if vlen is str:
        return string_info("utf-8", None)
    if vlen is bytes:
        return string_info("ascii", None)
    if dt.kind == "S":
        return string_info(_meta(dt).get("h5py_encoding", "ascii"), dt.itemsize)
    return None


def check_enum_dtype(dt):
    """The enum's name -> value dict, or None."""
    if dt.kind not in "iu":
        return None
    return _meta(dt).get("enum", None)


def check_opaque_dtype(dt):
    """True if ``dt`` was made by :func:`opaque_dtype`."""
    return bool(_meta(dt).get("h5py_opaque", False))


class Reference:
    """An HDF5 object reference (h5py's ``h5py.Reference``): names one group,
    dataset or committed datatype of a store by its id. Stored as HSDS
    stores them, ``groups/g-…``; the null reference (``bool(ref)`` False)
    names nothing. Dereference with ``f[ref]`` on any object of the store."""

    __slots__ = ("_id",)

    def __init__(self, oid=None):
        self._id = oid or None

    @property
    def typecode(self):
        return 0    # h5py's h5r.OBJECT

    def __bool__(self):
        return self._id is not None

    def __eq__(self, other):
        return isinstance(other, Reference) and self._id == other._id

    def __hash__(self):
        return hash(self._id)

    def __repr__(self):
        return "<HDF5 object reference%s>" % ("" if self else " (null)")

    def _stored(self):
        """HSDS's stored form: collection/id, empty for the null reference."""
        if self._id is None:
            return ""
        return {"g": "groups/", "d": "datasets/", "t": "datatypes/"}[self._id[0]] + self._id

    @classmethod
    def _from_stored(cls, text):
        if isinstance(text, bytes):
            text = text.split(b"\0", 1)[0].decode("ascii", "replace")
        if not isinstance(text, str):
            raise TypeError("Can't convert %r to an object reference" % (text,))
        oid = text.rsplit("/", 1)[-1]
        return cls(oid if oid else None)


#: h5py's ``ref_dtype``: object references, one per element.
ref_dtype = np.dtype("O", metadata={"ref": Reference})


class RegionReference:
    """A dataset region reference (h5py's ``h5py.RegionReference``): a
    dataset and a selection of its elements, made with
    ``dset.regionref[...]`` and read with ``dset[ref]``; ``f[ref]`` is the
    dataset. Stored as h5json (and HSDS) store them: the dataset's id and
    the selection spelled out (``select_type`` and ``selection``)."""

    __slots__ = ("_id", "_sel")

    def __init__(self, oid=None, selection=None):
        self._id = oid or None
        # {"select_type": ..., "selection": ...} or the regular hyperslab's
        # start/stride/count/block.
        self._sel = dict(selection or {"select_type": "H5S_SEL_ALL"})

    @property
    def typecode(self):
        return 1    # h5py's h5r.DATASET_REGION

    def __bool__(self):
        return self._id is not None

    def _key(self):
        return self._id, json.dumps(self._sel, sort_keys=True)

    def __eq__(self, other):
        return isinstance(other, RegionReference) and self._key() == other._key()

    def __hash__(self):
        return hash(self._key())

    def __repr__(self):
        return "<HDF5 region reference%s>" % ("" if self else " (null)")

    def _stored(self):
        """h5json's object (None for the null reference)."""
        if self._id is None:
            return None
        return {"id": self._id, **self._sel}

    @classmethod
    def _from_stored(cls, value):
        if isinstance(value, (bytes, str)):
            value = json.loads(value) if value else None
        if not value:
            return cls()
        if not isinstance(value, dict) or not str(value.get("id", "")).rsplit("/", 1)[-1].startswith("d-"):
            raise TypeError("Can't convert %r to a region reference" % (value,))
        sel = {k: v for k, v in value.items() if k != "id"}
        return cls(str(value["id"]).rsplit("/", 1)[-1], sel)


#: h5py's ``regionref_dtype``: region references, one per element.
regionref_dtype = np.dtype("O", metadata={"ref": RegionReference})

# HSDS stores an object reference as a NUL-padded id of this many bytes.
_REF_BYTES = 48


def check_ref_dtype(dt):
    """``Reference`` for the object-reference dtype, else None (h5py)."""
    return _meta(np.dtype(dt)).get("ref")


def is_ref(dt):
    return check_ref_dtype(dt) is Reference


def is_regionref(dt):
    return check_ref_dtype(dt) is RegionReference


def refs_to_stored(values):
    """Object array (or anything iterable) of References -> stored bytes."""
    arr = np.asarray(values, dtype=object)
    out = np.zeros(arr.shape, dtype="S%d" % _REF_BYTES)
    flat = out.reshape(-1)
    for i, r in enumerate(arr.reshape(-1)):
        if r is None:
            continue
        if not isinstance(r, Reference):
            raise TypeError("Can't convert incompatible object to HDF5 object reference")
        flat[i] = r._stored().encode("ascii")
    return out


def refs_from_stored(arr):
    """Stored bytes -> object array of References."""
    out = np.empty(arr.shape, dtype=ref_dtype)
    flat = out.reshape(-1)
    for i, b in enumerate(np.asarray(arr).reshape(-1)):
        flat[i] = Reference._from_stored(bytes(b))
    return out


def check_dtype(**kwds):
    """h5py's legacy single-keyword check: ``vlen=``, ``enum=`` or ``ref=``."""
    if len(kwds) != 1:
        raise TypeError("Exactly one keyword may be provided")
    name, dt = kwds.popitem()
    if name == "vlen":
        return check_vlen_dtype(dt)
    if name == "enum":
        return check_enum_dtype(dt)
    if name == "ref":
        return check_ref_dtype(dt)
    raise TypeError('Unknown special type "%s"' % name)


def special_dtype(**kwds):
    """h5py's legacy constructor: ``vlen=base``, ``enum=(base, mapping)`` or
    ``ref=Reference`` / ``ref=RegionReference``."""
    if len(kwds) != 1:
        raise TypeError("Exactly one keyword may be provided")
    name, val = kwds.popitem()
    if name == "vlen":
        return vlen_dtype(val)
    if name == "enum":
        try:
            dt, enum_vals = val
        except TypeError:
            raise TypeError("Enums must be created from a 2-tuple (basetype, values_dict)")
        return enum_dtype(enum_vals, dt)
    if name == "ref":
        if val is Reference:
            return ref_dtype
        if val is RegionReference:
            return regionref_dtype
        raise ValueError("Ref class must be Reference or RegionReference")
    raise TypeError('Unknown special type "%s"' % name)


# --------------------------------------------------------------------------
# numpy dtype <-> HSDS type JSON
# --------------------------------------------------------------------------

_NATIVE_BO = "LE" if sys.byteorder == "little" else "BE"
_INT_SIZES = (1, 2, 4, 8)
_FLOAT_SIZES = (2, 4, 8)
_BOOL_MAPPING = {"FALSE": 0, "TRUE": 1}

# x87 extended precision in 16 bytes: numpy's longdouble on x86-64 Linux.
# HSDS has no such type; h5lake keeps the layout in the type's JSON, as the
# VOL connector does for HDF5's NATIVE_LDOUBLE.
_X87 = {"precision": 80, "offset": 0, "sign": 79,
        "exponent": {"pos": 64, "size": 15, "bias": 16383},
        "mantissa": {"pos": 0, "size": 64, "norm": "H5T_NORM_NONE"},
        "pad": {"lsb": "H5T_PAD_ZERO", "msb": "H5T_PAD_ZERO", "internal": "H5T_PAD_ZERO"}}
_LONGDOUBLE_IS_X87 = (np.dtype(np.longdouble).itemsize == 16
                      and np.finfo(np.longdouble).nmant == 63)


def _is_long_double(dt):
    return dt.kind == "f" and dt.itemsize == 16 and _LONGDOUBLE_IS_X87


def _long_double_json(dt):
    return {"class": "H5T_FLOAT", "size": 16,
            "order": "H5T_ORDER_%s" % _order(dt), "h5lake": {"float": dict(_X87)}}


def _order(dt):
    """HSDS byte-order suffix of a scalar numeric dtype."""
    if dt.byteorder == ">":
        return "BE"
    if dt.byteorder == "<":
        return "LE"
    return _NATIVE_BO if dt.byteorder == "=" else "LE"  # '|' = single byte


def _int_base(dt):
    return "H5T_STD_%s%d%s" % ("I" if dt.kind == "i" else "U", dt.itemsize * 8, _order(dt))


def _no_path(dt):
    return TypeError("No conversion path for dtype: %r" % (dt,))


def dtype_to_hsds(dt):
    """HSDS type JSON for a numpy dtype (h5py's rules for which dtypes HDF5
    can hold; TypeError with h5py's message otherwise)."""
    dt = np.dtype(dt)
    meta = _meta(dt)

    if meta.get("h5py_opaque"):
        # h5py tags opaque data with "NUMPY:" + the numpy type string so a
        # reader can restore the dtype; HSDS keeps the tag.
        return {"class": "H5T_OPAQUE", "size": dt.itemsize, "tag": "NUMPY:" + dt.str}

    if dt.names is not None:
        if not dt.names:
            raise ValueError("Size must be positive (compound type has no fields)")
        out = {"class": "H5T_COMPOUND",
               "fields": [{"name": n, "type": dtype_to_hsds(dt.fields[n][0])}
                          for n in dt.names]}
        if has_vlen(dt):
            # read back in h5py's memory form, packed throughout
            for f in out["fields"]:
                _drop_layouts(f["type"])
        else:
            layout = _unpacked_layout(dt)
            if layout is not None:
                out["h5lake"] = layout
        return out

    if dt.subdtype is not None:
        base, shape = dt.subdtype
        # key order as HSDS writes it (see the fixture's compound member)
        return {"dims": list(shape), "class": "H5T_ARRAY", "base": dtype_to_hsds(base)}

    kind = dt.kind
    if kind == "O":
        vlen = meta.get("vlen")
        if vlen is str or vlen is bytes:
            return {"class": "H5T_STRING",
                    "charSet": "H5T_CSET_UTF8" if vlen is str else "H5T_CSET_ASCII",
                    "strPad": "H5T_STR_NULLTERM",
                    "length": "H5T_VARIABLE"}
        if vlen is not None:
            try:
                base = np.dtype(vlen)
            except TypeError:
                raise TypeError("Unknown vlen base type: %r" % (vlen,))
            return {"class": "H5T_VLEN", "base": dtype_to_hsds(base)}
        if meta.get("ref") is Reference:
            return {"class": "H5T_REFERENCE", "base": "H5T_STD_REF_OBJ"}
        if meta.get("ref") is RegionReference:
            return {"class": "H5T_REFERENCE", "base": "H5T_STD_REF_DSETREG"}
        raise TypeError("Object dtype %r has no native HDF5 equivalent" % (dt,))

    if kind == "S":
        utf8 = meta.get("h5py_encoding") == "utf-8"
        return {"class": "H5T_STRING",
                "charSet": "H5T_CSET_UTF8" if utf8 else "H5T_CSET_ASCII",
                "strPad": "H5T_STR_NULLPAD",
                "length": dt.itemsize}

    if kind == "V":
        return {"class": "H5T_OPAQUE", "size": dt.itemsize, "tag": ""}

    if kind == "b":
        # h5py's convention (and HSDS's): an int8 enum FALSE=0, TRUE=1
        return {"class": "H5T_ENUM",
                "base": {"class": "H5T_INTEGER", "base": "H5T_STD_I8LE"},
                "mapping": dict(_BOOL_MAPPING)}

    if kind in "iu" and dt.itemsize in _INT_SIZES:
        enum = meta.get("enum")
        base = {"class": "H5T_INTEGER", "base": _int_base(dt)}
        if enum is not None:
            return {"class": "H5T_ENUM", "base": base,
                    "mapping": {str(k): int(v) for k, v in enum.items()}}
        return base

    if kind == "f" and dt.itemsize in _FLOAT_SIZES:
        return {"class": "H5T_FLOAT", "base": "H5T_IEEE_F%d%s" % (dt.itemsize * 8, _order(dt))}

    if _is_long_double(dt):
        return _long_double_json(dt)

    if kind == "c" and (dt.itemsize in (8, 16) or (dt.itemsize == 32 and _LONGDOUBLE_IS_X87)):
        # h5py stores complex as a compound of two floats named r and i
        if dt.itemsize == 32:
            part = _long_double_json(dt)
        else:
            part = {"class": "H5T_FLOAT", "base": "H5T_IEEE_F%d%s" % (dt.itemsize * 4, _order(dt))}
        return {"class": "H5T_COMPOUND",
                "fields": [{"name": "r", "type": dict(part)},
                           {"name": "i", "type": dict(part)}]}

    # unicode 'U', datetime/timedelta, long double, complex256, ...
    raise _no_path(dt)


_PREDEF = {}
for _bits, _k in ((8, 1), (16, 2), (32, 4), (64, 8)):
    for _bo, _c in (("LE", "<"), ("BE", ">")):
        _PREDEF["H5T_STD_I%d%s" % (_bits, _bo)] = np.dtype(_c + "i%d" % _k)
        _PREDEF["H5T_STD_U%d%s" % (_bits, _bo)] = np.dtype(_c + "u%d" % _k)
for _bits, _k in ((16, 2), (32, 4), (64, 8)):
    for _bo, _c in (("LE", "<"), ("BE", ">")):
        # h5py reports floats with an explicit byte order (dtype('<f4'),
        # .byteorder '<'), integers in native order (dtype('int32'))
        _PREDEF["H5T_IEEE_F%d%s" % (_bits, _bo)] = np.dtype("f%d" % _k).newbyteorder(_c)


def _predefined(name, allowed):
    dt = _PREDEF.get(name)
    if dt is None or dt.kind not in allowed:
        raise TypeError("Unknown HDF5 predefined type: %r" % (name,))
    return dt


def _enum_mapping(t):
    if "mapping" in t:
        return {str(k): int(v) for k, v in t["mapping"].items()}
    if "members" in t:  # older hdf5-json form: [{"name":..,"value":..}]
        return {str(m["name"]): int(m["value"]) for m in t["members"]}
    raise TypeError("H5T_ENUM type without 'mapping'")


def hsds_to_dtype(t):
    """numpy dtype (h5py metadata restored) for HSDS type JSON: compounds
    packed, or at the member offsets recorded under the type's ``h5lake``
    key.

    Inverse of :func:`dtype_to_hsds`: vlen strings come back as
    ``string_dtype()``, enums as ``enum_dtype``, the FALSE/TRUE int8 enum as
    ``np.bool_``, an r/i compound of equal floats as complex.  One deliberate
    difference from h5py: a FALSE/TRUE enum over a *wider* integer stays an
    enum, because the returned dtype must describe the stored bytes exactly.
    """
    if isinstance(t, str):  # HSDS accepts a bare predefined type name
        return _predefined(t, "iuf")
    if not isinstance(t, dict) or "class" not in t:
        raise TypeError("Invalid HSDS type: %r" % (t,))
    cls = t["class"]

    if cls == "H5T_INTEGER":
        return _predefined(t["base"], "iu")
    if cls == "H5T_FLOAT":
        if "base" not in t:
            layout = (t.get("h5lake") or {}).get("float")
            if layout == _X87 and t.get("size") == 16 and _LONGDOUBLE_IS_X87:
                bo = ">" if t.get("order") == "H5T_ORDER_BE" else "<"
                return np.dtype(np.longdouble).newbyteorder(bo)
            raise TypeError("No numpy type for a float laid out as %r (size %r)"
                            % (layout, t.get("size")))
        return _predefined(t["base"], "f")

    if cls == "H5T_STRING":
        utf8 = t.get("charSet", "H5T_CSET_ASCII") == "H5T_CSET_UTF8"
        length = t.get("length")
        if length == "H5T_VARIABLE":
            return string_dtype("utf-8" if utf8 else "ascii")
        if not isinstance(length, int) or isinstance(length, bool) or length < 1:
            raise TypeError("Invalid string length: %r" % (length,))
        # strPad (NULLPAD/NULLTERM/SPACEPAD) is not representable in numpy;
        # values are read as NUL-padded bytes either way.
        return string_dtype("utf-8" if utf8 else "ascii", length)

    if cls == "H5T_VLEN":
        return vlen_dtype(hsds_to_dtype(t["base"]))

    if cls == "H5T_ARRAY":
        dims = tuple(int(d) for d in t["dims"])
        return np.dtype((hsds_to_dtype(t["base"]), dims))

    if cls == "H5T_ENUM":
        base = hsds_to_dtype(t["base"])
        if base.kind not in "iu":
            raise TypeError("Enum base must be an integer type")
        mapping = _enum_mapping(t)
        if mapping == _BOOL_MAPPING and base.itemsize == 1:
            return np.dtype(np.bool_)
        # HDF5 keeps a stored enum's members sorted by name, and h5py reads
        # them back in that order.
        return enum_dtype(dict(sorted(mapping.items())), base)

    if cls == "H5T_OPAQUE":
        size = int(t["size"])
        tag = t.get("tag") or ""
        if tag.startswith("NUMPY:"):
            try:
                inner = np.dtype(tag[len("NUMPY:"):])
            except TypeError:
                inner = None
            if inner is not None and inner.itemsize == size and not inner.hasobject:
                return opaque_dtype(inner)
        return np.dtype("V%d" % size)

    if cls == "H5T_COMPOUND":
        fields = t["fields"]
        if not fields:
            raise TypeError("Compound type without fields")
        members = [(f["name"], hsds_to_dtype(f["type"])) for f in fields]
        names = [m[0] for m in members]
        if names == ["r", "i"]:
            a, b = members[0][1], members[1][1]
            if (a == b and a.kind == "f" and (a.itemsize in (4, 8) or _is_long_double(a))
                    and not a.metadata and not b.metadata):
                return np.dtype(a.byteorder.replace("=", "<") + "c%d" % (2 * a.itemsize))
        laid = _laid_out(members, t.get("h5lake"))
        if laid is not None:
            return laid
        if any(has_vlen(m) for _, m in members):
            # h5py's memory form of the whole record: nested members packed too
            members = [(n, packed_dtype(m)) for n, m in members]
        return _packed_compound(members)

    if cls == "H5T_REFERENCE":
        if t.get("base") == "H5T_STD_REF_OBJ":
            return ref_dtype
        if t.get("base") == "H5T_STD_REF_DSETREG":
            return regionref_dtype
        raise TypeError("Unknown reference type %r" % (t.get("base"),))
    raise TypeError("Unknown HSDS type class: %r" % (cls,))


def _unpacked_layout(dt):
    """``{"offsets": [...], "size": n}`` for a compound of fixed-size members
    that is not packed in field order (padding, reordered offsets, a bigger
    itemsize: numpy's ``align=True``, C structs); None otherwise. Chunks are
    stored packed (HSDS's layout); this goes beside, under the type's
    ``h5lake`` key, so that the dtype written is the dtype read back, as
    h5py keeps HDF5's member offsets."""
    offsets = [dt.fields[n][1] for n in dt.names]
    packed, at = True, 0
    for n, off in zip(dt.names, offsets):
        packed &= off == at
        at += dt.fields[n][0].itemsize
    if packed and dt.itemsize == at:
        return None
    return {"offsets": offsets, "size": dt.itemsize}


def _drop_layouts(t):
    """Removes compound layouts from type JSON ``t`` and the types in it."""
    if not isinstance(t, dict):
        return
    if t.get("class") == "H5T_COMPOUND":
        t.pop("h5lake", None)
        for f in t.get("fields", ()):
            _drop_layouts(f.get("type"))
    elif isinstance(t.get("base"), dict):
        _drop_layouts(t["base"])


def _laid_out(members, layout):
    """The compound of ``members`` at the offsets and size ``layout`` records
    (see :func:`_unpacked_layout`); None when there is none or it does not
    fit the members (the layout is JSON any client may write)."""
    if not isinstance(layout, dict) or any(has_vlen(m) for _, m in members):
        return None
    offsets, size = layout.get("offsets"), layout.get("size")
    if not isinstance(offsets, list) or len(offsets) != len(members) or \
            not isinstance(size, int) or isinstance(size, bool):
        return None
    spans = []
    for off, (_, m) in zip(offsets, members):
        if not isinstance(off, int) or isinstance(off, bool) or off < 0 or off + m.itemsize > size:
            return None
        spans.append((off, off + m.itemsize))
    spans.sort()
    if any(a[1] > b[0] for a, b in zip(spans, spans[1:])):
        return None     # overlapping members
    try:
        return np.dtype({"names": [n for n, _ in members], "formats": [m for _, m in members],
                         "offsets": offsets, "itemsize": size})
    except (TypeError, ValueError):
        return None


def _packed_compound(members):
    """A compound of ``members`` back to back; with variable-length parts,
    laid out as h5py lays them out (HDF5's memory type: a vlen string a
    pointer, a sequence an hvl_t of 16 bytes)."""
    if not any(has_vlen(m) for _, m in members):
        return np.dtype(members)
    offsets, at = [], 0
    for _, m in members:
        offsets.append(at)
        at += _memory_size(m)
    return np.dtype({"names": [n for n, _ in members], "formats": [m for _, m in members],
                     "offsets": offsets, "itemsize": at})


def _memory_size(dt):
    """Bytes an element of ``dt`` takes in HDF5's memory form."""
    if is_vlen(dt):
        return 8 if check_vlen_dtype(dt) in (str, bytes) else 16
    if dt.names is not None:
        return sum(_memory_size(dt.fields[n][0]) for n in dt.names)
    if dt.subdtype is not None:
        base, shape = dt.subdtype
        return int(np.prod(shape)) * _memory_size(base)
    return dt.itemsize


def packed_dtype(dt):
    """The packed equivalent of ``dt``: compound fields back to back in field
    order, recursively (HSDS chunk bytes have no padding). Leaf dtypes keep
    their h5py metadata."""
    dt = np.dtype(dt)
    if dt.names is not None:
        return _packed_compound([(n, packed_dtype(dt.fields[n][0])) for n in dt.names])
    if dt.subdtype is not None:
        base, shape = dt.subdtype
        return np.dtype((packed_dtype(base), shape))
    return dt


def is_vlen(dt):
    """True for a top-level variable-length type (vlen string or sequence)."""
    dt = np.dtype(dt)
    return dt.kind == "O" and check_vlen_dtype(dt) is not None


def has_vlen(dt):
    """True if a variable-length type appears anywhere inside ``dt``."""
    dt = np.dtype(dt)
    if dt.names is not None:
        return any(has_vlen(dt.fields[n][0]) for n in dt.names)
    if dt.subdtype is not None:
        return has_vlen(dt.subdtype[0])
    return is_vlen(dt)


# --------------------------------------------------------------------------
# values <-> HSDS JSON
# --------------------------------------------------------------------------

def _float_to_json(x):
    x = float(x)
    if math.isfinite(x):
        return x
    if math.isnan(x):
        return "NaN"
    return "Infinity" if x > 0 else "-Infinity"


_NONFINITE = {"NaN": math.nan, "nan": math.nan, "Infinity": math.inf, "inf": math.inf,
              "-Infinity": -math.inf, "-inf": -math.inf}


def _float_from_json(v):
    if isinstance(v, str):
        try:
            return _NONFINITE[v]
        except KeyError:
            raise ValueError("Invalid float value in JSON: %r" % (v,))
    if v is None:
        raise ValueError("null is not a number")
    return float(v)


def _long_double_to_json(x, dt):
    """A number when a float64 holds the value exactly, else its bytes (as
    the VOL connector writes them)."""
    x = np.asarray(x, dtype=dt)
    if not np.isfinite(x) or np.longdouble(float(x)) == x:
        return _float_to_json(float(x))
    return {"base64": base64.b64encode(x.tobytes()).decode()}


def _long_double_from_json(v, dt):
    if isinstance(v, dict):
        raw = _bytes_from_json(v)
        if len(raw) != dt.itemsize:
            raise ValueError("Expected %d bytes for a long double, got %d" % (dt.itemsize, len(raw)))
        return np.frombuffer(raw, dtype=dt)[0]
    return dt.type(_float_from_json(v))


def _bytes_to_json(b):
    try:
        return b.decode("utf-8")
    except UnicodeDecodeError:
        return {"base64": base64.b64encode(b).decode("ascii")}


def _bytes_from_json(v):
    if isinstance(v, str):
        return v.encode("utf-8", "surrogateescape")
    if isinstance(v, dict) and "base64" in v:
        try:
            return base64.b64decode(v["base64"], validate=True)
        except binascii.Error as exc:
            raise ValueError("Invalid base64 value: %r" % (v,)) from exc
    if isinstance(v, (bytes, bytearray)):
        return bytes(v)
    raise ValueError("Expected a string value, got %r" % (v,))


def _str_to_json(s):
    try:
        s.encode("utf-8")
        return s
    except UnicodeEncodeError:
        # lone surrogates, e.g. from h5py's surrogateescape decoding
        return {"base64": base64.b64encode(s.encode("utf-8", "surrogateescape")).decode("ascii")}


def _elem_to_json(x, dt):
    """JSON for one element ``x`` of dtype ``dt``."""
    if dt.names is not None:
        return [_elem_to_json(x[n], dt.fields[n][0]) for n in dt.names]
    if dt.subdtype is not None:
        base, shape = dt.subdtype
        return _array_to_json(np.asarray(x, dtype=base).reshape(shape), base)
    if is_ref(dt):
        if x is not None and not isinstance(x, Reference):
            raise TypeError("Can't convert incompatible object to HDF5 object reference")
        return x._stored() if x is not None else ""
    if is_regionref(dt):
        if x is not None and not isinstance(x, RegionReference):
            raise TypeError("Can't convert incompatible object to HDF5 region reference")
        return x._stored() if x is not None else None
    if _meta(dt).get("h5py_opaque") or dt.kind == "V":
        return _bytes_to_json(np.asarray(x, dtype=dt).tobytes())
    kind = dt.kind
    if kind == "b":
        return bool(x)
    if kind in "iu":
        return int(x)
    if _is_long_double(dt):
        return _long_double_to_json(x, dt)
    if kind == "f":
        return _float_to_json(x)
    if kind == "c" and dt.itemsize == 32:
        part = np.dtype(np.longdouble).newbyteorder(dt.byteorder)
        c = np.asarray(x, dtype=dt)
        return [_long_double_to_json(c.real, part), _long_double_to_json(c.imag, part)]
    if kind == "c":
        c = complex(x)
        return [_float_to_json(c.real), _float_to_json(c.imag)]
    if kind == "S":
        return _bytes_to_json(bytes(x).rstrip(b"\0"))
    if kind == "O":
        vlen = check_vlen_dtype(dt)
        if vlen is str or vlen is bytes:
            if isinstance(x, (str, bytes)) and ("\0" if isinstance(x, str) else b"\0") in x:
                # HDF5 vlen strings are NUL-terminated in the C API; h5py refuses
                raise ValueError("VLEN strings do not support embedded NULLs")
            if isinstance(x, str):
                return _str_to_json(x)
            if isinstance(x, (bytes, bytearray, np.bytes_)):
                return _bytes_to_json(bytes(x))
            raise TypeError("Expected str or bytes for a vlen string, got %r" % (x,))
        if vlen is not None:
            base = np.dtype(vlen)
            seq = np.asarray(x, dtype=base).reshape(-1)
            return _array_to_json(seq, base)
    raise _no_path(dt)


def _array_to_json(arr, dt):
    if arr.ndim == 0:
        return _elem_to_json(arr[()], dt)
    if dt.kind in "iub" and dt.names is None and dt.subdtype is None:
        return arr.tolist()  # fast path; enums and bools included
    if (dt.kind == "f" and dt.subdtype is None and not _is_long_double(dt)
            and np.isfinite(arr).all()):
        return arr.astype(np.float64).tolist()
    if arr.ndim == 1:
        return [_elem_to_json(arr[i], dt) for i in range(arr.shape[0])]
    return [_array_to_json(arr[i], dt) for i in range(arr.shape[0])]


def value_to_json(arr):
    """HSDS JSON value for ``arr`` (already in the target dtype): a bare
    value for 0-d, nested lists otherwise."""
    arr = np.asarray(arr)
    return _array_to_json(arr, arr.dtype)


def _member_from_json(v, dt):
    """A compound member's value: vlen strings in members read as bytes in
    h5py (top-level ones as str)."""
    x = _elem_from_json(v, dt)
    if isinstance(x, str):
        return x.encode("utf-8", "surrogateescape")
    if isinstance(x, np.ndarray) and x.dtype.kind == "O":
        flat = x.reshape(-1)
        for i, e in enumerate(flat):
            if isinstance(e, str):
                flat[i] = e.encode("utf-8", "surrogateescape")
    return x


def _elem_from_json(v, dt):
    """Python object assignable to one element of dtype ``dt``."""
    if dt.names is not None:
        if not isinstance(v, (list, tuple)) or len(v) != len(dt.names):
            raise ValueError("Expected %d field values, got %r" % (len(dt.names), v))
        return tuple(_member_from_json(fv, dt.fields[n][0]) for fv, n in zip(v, dt.names))
    if dt.subdtype is not None:
        base, shape = dt.subdtype
        return json_to_value(v, base, shape)
    if is_ref(dt):
        return Reference._from_stored(v if v is not None else "")
    if is_regionref(dt):
        return RegionReference._from_stored(v)
    if _meta(dt).get("h5py_opaque") or dt.kind == "V":
        raw = _bytes_from_json(v).ljust(dt.itemsize, b"\0")[:dt.itemsize]
        return np.frombuffer(raw, dtype=dt)[0]
    kind = dt.kind
    if kind == "b":
        return bool(v)
    if kind in "iu":
        if isinstance(v, float) and not v.is_integer():
            raise ValueError("Expected an integer, got %r" % (v,))
        return int(v)
    if _is_long_double(dt):
        return _long_double_from_json(v, dt)
    if kind == "f":
        return _float_from_json(v)
    if kind == "c" and dt.itemsize == 32 and isinstance(v, (list, tuple)) and len(v) == 2:
        part = np.dtype(np.longdouble).newbyteorder(dt.byteorder)
        return _long_double_from_json(v[0], part) + 1j * _long_double_from_json(v[1], part)
    if kind == "c":
        if isinstance(v, (list, tuple)) and len(v) == 2:
            return complex(_float_from_json(v[0]), _float_from_json(v[1]))
        return complex(_float_from_json(v), 0.0)
    if kind == "S":
        return _bytes_from_json(v)
    if kind == "O":
        vlen = check_vlen_dtype(dt)
        if vlen is str:
            b = _bytes_from_json(v)
            return b.decode("utf-8", "surrogateescape")
        if vlen is bytes:
            return _bytes_from_json(v)
        if vlen is not None:
            if not isinstance(v, (list, tuple)):
                v = [v]
            return json_to_value(list(v), np.dtype(vlen), (len(v),))
    raise _no_path(dt)


def _never_written(dt, shape):
    """Elements of ``dt`` as HDF5 reads them where nothing was written."""
    dt = np.dtype(dt)
    out = np.zeros(shape, dtype=dt)
    if dt.kind == "O":
        kind = check_vlen_dtype(dt)
        empty = "" if kind is str else b"" if kind is bytes else \
            np.zeros(0, dtype=kind if kind is not None else "u1")
        flat = out.reshape(-1)
        for i in range(flat.size):
            flat[i] = empty
    return out


def json_to_value(value, dt, shape=None):
    """ndarray of dtype ``dt`` from an HSDS JSON value; ``shape=None`` (or
    ``()``) means a scalar, returned as a 0-d array."""
    dt = np.dtype(dt)
    shape = () if shape is None else tuple(int(s) for s in shape)
    if dt.subdtype is not None:
        # A top-level array type: numpy folds it into the shape.
        base, sub = dt.subdtype
        return json_to_value(value, base, shape + sub)
    out = np.empty(shape, dtype=dt)
    flat = out.reshape(-1)
    items = [value]
    for depth, n in enumerate(shape):
        nxt = []
        for it in items:
            if not isinstance(it, (list, tuple)) or len(it) != n:
                raise ValueError("JSON value does not match shape %r at depth %d" % (shape, depth))
            nxt.extend(it)
        items = nxt
    if dt.kind == "O":
        for i, it in enumerate(items):
            flat[i] = _elem_from_json(it, dt)
    elif dt.kind in "iub" and dt.names is None:
        flat[...] = [_elem_from_json(it, dt) for it in items]
    else:
        for i, it in enumerate(items):
            flat[i] = _elem_from_json(it, dt)
    return out


def shape_json(shape, maxshape=None):
    """HSDS shape JSON: None -> H5S_NULL, () -> H5S_SCALAR, else H5S_SIMPLE
    (``maxdims`` with "H5S_UNLIMITED" for None entries, if given)."""
    if shape is None:
        return {"class": "H5S_NULL"}
    shape = tuple(int(s) for s in shape)
    if shape == ():
        return {"class": "H5S_SCALAR"}
    doc = {"class": "H5S_SIMPLE", "dims": list(shape)}
    if maxshape is not None:
        doc["maxdims"] = ["H5S_UNLIMITED" if m is None else int(m) for m in maxshape]
    return doc


# --- attributes ------------------------------------------------------------

def _find_item_type(data):
    """The one Python type of the items of ``data`` (nested lists/tuples or an
    object array), or None when mixed/not applicable. Same rule as h5py uses
    to decide that a list of str is a vlen-string attribute."""
    if isinstance(data, np.ndarray):
        if data.dtype.kind != "O" or check_vlen_dtype(data.dtype) is not None:
            return None
        types = {type(e) for e in data.flat}
    elif isinstance(data, (list, tuple)):
        types = {_find_item_type(e) for e in data}
    else:
        return type(data)
    return types.pop() if len(types) == 1 else None


def _as_new_array(data, dtype):
    """Array for a new attribute/dataset: the given dtype, else h5py's guess
    (str -> vlen UTF-8, bytes -> vlen ASCII), else numpy's."""
    if dtype is not None:
        dtype = np.dtype(dtype)
    if dtype is not None and (dtype.kind == "f" and dtype.itemsize == 2
                              or not isinstance(data, np.ndarray)):
        as_dtype = dtype
    else:
        item = _find_item_type(data)
        as_dtype = (string_dtype() if item is str else
                    string_dtype("ascii") if item is bytes else
                    ref_dtype if item is Reference else
                    regionref_dtype if item is RegionReference else None)
    arr = np.asarray(data, order="C", dtype=as_dtype)
    if as_dtype is not None:
        arr = arr.view(dtype=as_dtype)  # re-tag dtype metadata numpy kept off
    return arr


def attr_json(value, dtype=None, shape=None):
    """The HSDS attribute document ``{"type", "shape", "value"}`` for
    ``attrs[name] = value`` / ``attrs.create(name, value, shape, dtype)``,
    choosing dtype and shape by h5py's rules."""
    if _is_empty(value):
        dt = np.dtype(dtype) if dtype is not None else value.dtype
        return {"type": dtype_to_hsds(dt), "shape": {"class": "H5S_NULL"}, "value": None}

    data = _as_new_array(value, dtype)
    if shape is None:
        shape = data.shape
    elif isinstance(shape, int):
        shape = (shape,)
    shape = tuple(shape)
    dt = data.dtype if dtype is None else np.dtype(dtype)

    if dt.subdtype is not None:
        # top-level array type: the trailing axes of the data become the type
        sub = dt.subdtype[1]
        if shape[len(shape) - len(sub):] != sub:
            raise ValueError("Array dtype shape %s is incompatible with data shape %s"
                             % (sub, shape))
        shape = shape[:len(shape) - len(sub)]
        data = data.reshape(shape + sub)
        type_doc = dtype_to_hsds(dt)
        value_doc = value_to_json(_convert(data, dt.subdtype[0]))
    else:
        if int(np.prod(shape, dtype=np.uint64)) != int(np.prod(data.shape, dtype=np.uint64)):
            raise ValueError("Shape of new attribute conflicts with shape of data")
        if shape != data.shape:
            data = data.reshape(shape)
        type_doc = dtype_to_hsds(dt)  # raises TypeError for U, M8, bare object...
        store = data if data.dtype == dt and data.dtype.metadata == dt.metadata \
            else _convert(data, dt)
        value_doc = value_to_json(store)
    return {"type": type_doc, "shape": shape_json(shape), "value": value_doc}


def _convert(data, dt):
    if dt.kind == "O":
        out = np.empty(data.shape, dtype=dt)
        out[...] = data
        return out
    if dt.kind == "S" and data.dtype.kind in "OU":
        # h5py encodes str into fixed-length strings
        enc = "utf-8" if _meta(dt).get("h5py_encoding") == "utf-8" else "ascii"
        flat = [e.encode(enc) if isinstance(e, str) else e for e in data.reshape(-1)]
        return np.array(flat, dtype=dt).reshape(data.shape)
    return np.asarray(data, dtype=dt)


def is_space_padded(t):
    """Whether the HSDS type ``t`` is a fixed-length string padded with
    spaces (H5T_STR_SPACEPAD: Fortran's strings)."""
    return isinstance(t, dict) and t.get("class") == "H5T_STRING" \
        and t.get("strPad") == "H5T_STR_SPACEPAD" and isinstance(t.get("length"), int)


def space_padded_parts(t):
    """Where the HSDS type ``t`` holds space-padded strings: ``[None]``
    when it is one, the names of a compound's members that are, or
    ``[]``."""
    if is_space_padded(t):
        return [None]
    if isinstance(t, dict) and t.get("class") == "H5T_COMPOUND":
        return [f.get("name") for f in t.get("fields") or () if is_space_padded(f.get("type"))]
    return []


def _unpadded(a):
    if a.dtype.kind != "S" or a.size == 0:
        return a
    return np.asarray(np.char.rstrip(a, b" "), dtype=a.dtype).reshape(a.shape)


def _padded(a):
    if a.dtype.kind != "S" or a.size == 0 or a.dtype.itemsize == 0:
        return a
    n = a.dtype.itemsize
    flat = np.ascontiguousarray(a).reshape(-1)
    lens = np.char.str_len(flat)
    raw = flat.view(np.uint8).reshape(-1, n).copy()
    raw[np.arange(n) >= lens[:, None]] = ord(" ")
    return raw.view(a.dtype).reshape(a.shape)


def _each_part(arr, parts, f):
    """``f`` applied to ``arr`` (``parts == [None]``) or to its members
    named in ``parts``."""
    if not parts:
        return arr
    if parts == [None]:
        return f(arr)
    names = [p for p in parts if arr.dtype.names and p in arr.dtype.names]
    if not names:
        return arr
    arr = arr.copy()
    for name in names:
        arr[name] = f(arr[name])
    return arr


def unpad_spaces(arr, parts):
    """Fixed strings read from a space-padded type (``parts``: see
    :func:`space_padded_parts`) as h5py reads them: libhdf5 converts to
    numpy's null padding, and the trailing spaces go."""
    return _each_part(arr, list(parts), _unpadded)


def pad_spaces(arr, parts):
    """Fixed strings to store in a space-padded type (``parts``: see
    :func:`space_padded_parts`), as libhdf5 stores them: the null padding
    numpy gives becomes spaces."""
    return _each_part(arr, list(parts), _padded)


def attr_value_from_json(doc):
    """What h5py's ``attrs[name]`` returns for an HSDS attribute document:
    a numpy scalar for scalar numerics, ``str`` for a scalar vlen string
    (ASCII or UTF-8, undecodable bytes surrogate-escaped like h5py),
    ``np.bytes_`` for a fixed-length string, ``Empty`` for H5S_NULL, an
    ndarray otherwise."""
    dt = hsds_to_dtype(doc["type"])
    sh = doc.get("shape", {"class": "H5S_SCALAR"})
    cls = sh.get("class") if isinstance(sh, dict) else "H5S_SIMPLE"
    if cls == "H5S_NULL":
        return Empty(dt)
    if cls == "H5S_SCALAR":
        shape = ()
    elif isinstance(sh, dict):
        shape = tuple(sh["dims"])
    else:
        shape = tuple(sh)
    if doc.get("value") is None:
        # Created and never written (a C program's H5Acreate without
        # H5Awrite, through the connector): HDF5 reads zeros, empty
        # strings and empty sequences.
        arr = _never_written(dt, shape)
    else:
        arr = json_to_value(doc.get("value"), dt, shape)
    arr = unpad_spaces(arr, space_padded_parts(doc["type"]))
    info = check_string_dtype(arr.dtype)
    if info is not None and info.length is None:
        strs = [e.decode("utf-8", "surrogateescape") if isinstance(e, bytes) else e
                for e in arr.reshape(-1)]
        out = np.empty(arr.shape, dtype=arr.dtype)
        out.reshape(-1)[...] = strs if strs else []
        arr = out
    if arr.ndim == 0:
        return arr[()]
    return arr
