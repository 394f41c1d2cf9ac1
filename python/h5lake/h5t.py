"""HDF5 datatypes as h5py's ``h5t`` module presents them: the class, string
and byte-order constants, the predefined types (``STD_I32LE``,
``IEEE_F64LE``, ``C_S1``, ...), ``py_create`` and type objects with the
methods code written for h5py calls (``get_class``, ``get_size``,
``get_cset``, ``is_variable_str``, ``get_member_name``, ...), and the
``*_dtype``/``check_*`` helpers.

A type object holds the type as h5lake stores it (HSDS's type JSON) and
gives its numpy dtype as ``.dtype``; ``py_create`` makes one from a numpy
dtype by h5py's rules. Setters (``set_cset``, ``set_size``, ...) change the
object they are called on, as they change an HDF5 type id; h5lake's
predefined types are locked, as HDF5's are, so ``copy()`` them first.
"""

import copy as _copy
import json as _json

import numpy as _np

from ._hl.h5t import (  # noqa: F401  (h5py's names, re-exported)
    Empty, Reference, check_dtype, check_enum_dtype, check_opaque_dtype, check_ref_dtype,
    check_string_dtype, check_vlen_dtype, enum_dtype, opaque_dtype, ref_dtype,
    special_dtype, string_dtype, string_info, vlen_dtype,
)
from ._hl.h5t import dtype_to_hsds as _dtype_to_hsds, hsds_to_dtype as _hsds_to_dtype

# Type classes (H5T_class_t).
NO_CLASS = -1
INTEGER = 0
FLOAT = 1
TIME = 2
STRING = 3
BITFIELD = 4
OPAQUE = 5
COMPOUND = 6
REFERENCE = 7
ENUM = 8
VLEN = 9
ARRAY = 10

# Character sets, string padding, byte orders, signs.
CSET_ASCII = 0
CSET_UTF8 = 1
STR_NULLTERM = 0
STR_NULLPAD = 1
STR_SPACEPAD = 2
ORDER_LE = 0
ORDER_BE = 1
ORDER_VAX = 2
ORDER_MIXED = 3
ORDER_NONE = 4
ORDER_NATIVE = ORDER_LE if _np.little_endian else ORDER_BE
# Padding of unused bits, mantissa normalisation, conversion direction and
# background buffer settings (HDF5's enums, as h5py names them).
PAD_ZERO, PAD_ONE, PAD_BACKGROUND = 0, 1, 2
NORM_IMPLIED, NORM_MSBSET, NORM_NONE = 0, 1, 2
DIR_DEFAULT, DIR_ASCEND, DIR_DESCEND = 0, 1, 2
BKG_NO, BKG_TEMP, BKG_YES = 0, 1, 2
SGN_NONE = 0
SGN_2 = 1

#: The size of a variable-length string type (HDF5's ``H5T_VARIABLE``).
VARIABLE = 2**64 - 1

_CLASS_OF_JSON = {
    "H5T_INTEGER": INTEGER, "H5T_FLOAT": FLOAT, "H5T_STRING": STRING,
    "H5T_OPAQUE": OPAQUE, "H5T_COMPOUND": COMPOUND, "H5T_REFERENCE": REFERENCE,
    "H5T_ENUM": ENUM, "H5T_VLEN": VLEN, "H5T_ARRAY": ARRAY,
}
_CSETS = {"H5T_CSET_ASCII": CSET_ASCII, "H5T_CSET_UTF8": CSET_UTF8}
_PADS = {"H5T_STR_NULLTERM": STR_NULLTERM, "H5T_STR_NULLPAD": STR_NULLPAD,
         "H5T_STR_SPACEPAD": STR_SPACEPAD}


def _as_json(t):
    # A bare predefined name ("H5T_STD_I32LE") as the object HSDS also writes.
    if isinstance(t, str):
        cls = "H5T_FLOAT" if "IEEE" in t else "H5T_INTEGER"
        return {"class": cls, "base": t}
    return t


class TypeID:
    """An HDF5 datatype (h5py's ``TypeID``)."""

    def __init__(self, json_type, locked=False):
        self._json = _as_json(json_type)
        self._locked = locked

    # What h5lake's layers use.
    @property
    def hsds_json(self):
        """The type as h5lake stores it (HSDS's type JSON)."""
        return _copy.deepcopy(self._json)

    @property
    def dtype(self):
        """The numpy dtype of this type's values."""
        return _hsds_to_dtype(self._json)

    def _check_unlocked(self):
        if self._locked:
            raise TypeError("Datatype is read-only (copy() a predefined type to change it)")

    def get_class(self):
        if (self._json.get("h5lake") or {}).get("class") == "H5T_BITFIELD":
            return BITFIELD
        return _CLASS_OF_JSON.get(self._json.get("class"), NO_CLASS)

    def get_size(self):
        return self.dtype.itemsize

    def copy(self):
        return type(self)(_copy.deepcopy(self._json))

    def committed(self):
        """Whether this is the type of a committed datatype (a dataset
        made with one names it in its type, as HDF5 links them)."""
        return str(self._json.get("id", "")).startswith("t-") if isinstance(self._json, dict) \
            else False

    def equal(self, other):
        committed_id = getattr(other, "_oid", None)
        if committed_id is not None and not isinstance(other, TypeID):
            # The id of a committed datatype: the type made with it.
            return self.committed() and self._json.get("id") == committed_id
        if not isinstance(other, TypeID):
            return False
        strip = (lambda t: {k: v for k, v in t.items() if k != "id"}
                 if isinstance(t, dict) else t)
        return strip(other._json) == strip(self._json)

    def __eq__(self, other):
        return self.equal(other)

    def __hash__(self):
        t = self._json
        if isinstance(t, dict):
            t = {k: v for k, v in t.items() if k != "id"}
        return hash(_json.dumps(t, sort_keys=True))

    def __repr__(self):
        return f"<h5lake {type(self).__name__} {_json.dumps(self._json)}>"


class TypeAtomicID(TypeID):
    """Integers, floats and bit fields (h5py keeps strings and references
    apart: they have no byte order)."""

    def get_order(self):
        base = self._json.get("base")
        if isinstance(base, str):
            return ORDER_BE if base.endswith("BE") else ORDER_LE
        return ORDER_BE if self.dtype.byteorder == ">" else ORDER_LE

    def get_precision(self):
        """Significant bits: all of the value's bytes (h5lake keeps no
        padding bits)."""
        return 8 * self.get_size()

    def get_offset(self):
        """The first significant bit: 0 (no padding bits)."""
        return 0


class TypeIntegerID(TypeAtomicID):
    def get_sign(self):
        return SGN_2 if "_I" in str(self._json.get("base", "")) else SGN_NONE


class TypeFloatID(TypeAtomicID):
    pass


class TypeBitfieldID(TypeAtomicID):
    pass


class TypeReferenceID(TypeID):
    pass


class TypeStringID(TypeID):
    """A fixed or variable-length string type."""

    def is_variable_str(self):
        return self._json.get("length") == "H5T_VARIABLE"

    def get_size(self):
        if self.is_variable_str():
            return _np.dtype(object).itemsize
        return int(self._json["length"])

    def set_size(self, size):
        self._check_unlocked()
        self._json["length"] = "H5T_VARIABLE" if size == VARIABLE else int(size)

    def get_cset(self):
        return _CSETS[self._json.get("charSet", "H5T_CSET_ASCII")]

    def set_cset(self, cset):
        self._check_unlocked()
        self._json["charSet"] = {v: k for k, v in _CSETS.items()}[cset]

    def get_strpad(self):
        return _PADS[self._json.get("strPad", "H5T_STR_NULLTERM")]

    def set_strpad(self, pad):
        self._check_unlocked()
        self._json["strPad"] = {v: k for k, v in _PADS.items()}[pad]


class TypeOpaqueID(TypeID):
    def get_tag(self):
        return (self._json.get("tag") or "").encode()


class TypeCompositeID(TypeID):
    """Compounds and enums: types with members."""

    def get_nmembers(self):
        return len(self._members())

    def get_member_name(self, index):
        return self._members()[index][0].encode()

    def get_member_index(self, name):
        if isinstance(name, bytes):
            name = name.decode()
        for i, (n, _) in enumerate(self._members()):
            if n == name:
                return i
        raise ValueError(f"no member {name!r}")


class TypeCompoundID(TypeCompositeID):
    def _members(self):
        return [(f["name"], f["type"]) for f in self._json["fields"]]

    def get_member_type(self, index):
        return _type_object(self._members()[index][1])

    def get_member_class(self, index):
        return self.get_member_type(index).get_class()

    def get_member_offset(self, index):
        dt = self.dtype
        return dt.fields[dt.names[index]][1]


class TypeEnumID(TypeCompositeID):
    def _members(self):
        return list(self._json["mapping"].items())

    def get_member_value(self, index):
        return self._members()[index][1]

    def get_super(self):
        return _type_object(self._json["base"])


class TypeArrayID(TypeID):
    def get_array_ndims(self):
        return len(self._json["dims"])

    def get_array_dims(self):
        return tuple(int(d) for d in self._json["dims"])

    def get_super(self):
        return _type_object(self._json["base"])


class TypeVlenID(TypeID):
    def get_super(self):
        return _type_object(self._json["base"])

    def get_size(self):
        # (HDF5's hvl_t in memory: a length and a pointer.)
        return 16


_CLASSES = {INTEGER: TypeIntegerID, FLOAT: TypeFloatID, STRING: TypeStringID,
            BITFIELD: TypeBitfieldID, OPAQUE: TypeOpaqueID, COMPOUND: TypeCompoundID,
            REFERENCE: TypeReferenceID, ENUM: TypeEnumID, VLEN: TypeVlenID,
            ARRAY: TypeArrayID}


def _type_object(json_type, locked=False):
    """The type object of the right class for HSDS type JSON."""
    t = _as_json(json_type)
    cls = TypeID(t).get_class()
    return _CLASSES.get(cls, TypeID)(_copy.deepcopy(t), locked)


def py_create(dtype_in, logical=False, aligned=False):
    """The HDF5 type for a numpy dtype (or a type object, as it is), by
    h5py's rules; TypeError where HDF5 has no equivalent."""
    if isinstance(dtype_in, TypeID):
        return dtype_in
    return _type_object(_dtype_to_hsds(_np.dtype(dtype_in)))


def _bitfield(bits, order):
    return {"class": "H5T_INTEGER", "base": f"H5T_STD_U{bits}{order}",
            "h5lake": {"class": "H5T_BITFIELD"}}


def _predefined():
    out = {}
    for bits in (8, 16, 32, 64):
        for order in ("LE", "BE"):
            out[f"STD_I{bits}{order}"] = {"class": "H5T_INTEGER", "base": f"H5T_STD_I{bits}{order}"}
            out[f"STD_U{bits}{order}"] = {"class": "H5T_INTEGER", "base": f"H5T_STD_U{bits}{order}"}
            out[f"STD_B{bits}{order}"] = _bitfield(bits, order)
    for bits in (16, 32, 64):
        for order in ("LE", "BE"):
            out[f"IEEE_F{bits}{order}"] = {"class": "H5T_FLOAT", "base": f"H5T_IEEE_F{bits}{order}"}
    native = "LE" if _np.little_endian else "BE"
    for name, bits in (("INT8", 8), ("INT16", 16), ("INT32", 32), ("INT64", 64)):
        out[f"NATIVE_{name}"] = out[f"STD_I{bits}{native}"]
        out[f"NATIVE_U{name}"] = out[f"STD_U{bits}{native}"]
    for bits in (8, 16, 32, 64):
        out[f"NATIVE_B{bits}"] = out[f"STD_B{bits}{native}"]
    out["NATIVE_FLOAT16"] = out[f"IEEE_F16{native}"]
    out["NATIVE_FLOAT"] = out[f"IEEE_F32{native}"]
    out["NATIVE_DOUBLE"] = out[f"IEEE_F64{native}"]
    out["C_S1"] = {"class": "H5T_STRING", "charSet": "H5T_CSET_ASCII",
                   "strPad": "H5T_STR_NULLTERM", "length": 1}
    out["FORTRAN_S1"] = {"class": "H5T_STRING", "charSet": "H5T_CSET_ASCII",
                         "strPad": "H5T_STR_SPACEPAD", "length": 1}
    out["STD_REF_OBJ"] = {"class": "H5T_REFERENCE", "base": "H5T_STD_REF_OBJ"}
    out["STD_REF_DSETREG"] = {"class": "H5T_REFERENCE", "base": "H5T_STD_REF_DSETREG"}
    return out


for _name, _t in _predefined().items():
    globals()[_name] = _type_object(_t, locked=True)
del _name, _t
