"""h5lake: an h5py-compatible API over HDF5 data stored in the HSDS
object-store schema v2 — change ``import h5py`` to ``import h5lake``."""

__version__ = "0.1.0"

from ._hl.h5t import (
    Empty,
    string_dtype, vlen_dtype, enum_dtype, opaque_dtype, special_dtype,
    check_dtype, check_string_dtype, check_vlen_dtype, check_enum_dtype,
    check_opaque_dtype, check_ref_dtype, string_info, Reference, ref_dtype,
    RegionReference, regionref_dtype,
)
from ._hl.files import File
from ._hl.group import Group, SoftLink, ExternalLink, HardLink
from ._hl.dataset import Dataset
from ._hl.datatype import Datatype
from ._hl.attrs import AttributeManager
from ._hl.base import HLObject
from ._hl.tools import ls, info, diff, rm, cp, mv
from ._hl.transfer import load, get, is_hdf5, IncompleteConversion
from ._hl.serve import serve
from ._hl.vds import UNLIMITED, VirtualLayout, VirtualSource, VirtualSourceWarning, concat
from ._hl.daskio import store_dask
from ._hl.selections import MultiBlockSlice
from . import h5a, h5d, h5ds, h5f, h5p, h5r, h5s, h5t, h5z, version
from ._hl import filters
from ._hl.config import get_config


def to_h5lake(dataset, path, **kwargs):
    """Write an xarray Dataset or DataTree into an h5lake store as netCDF-4
    (see ``h5lake._hl.xarray_backend.to_h5lake``); imports xarray on use."""
    from ._hl.xarray_backend import to_h5lake as write
    return write(dataset, path, **kwargs)


__all__ = [
    "File", "Group", "Dataset", "Datatype", "AttributeManager", "HLObject",
    "SoftLink", "ExternalLink", "HardLink", "Empty",
    "string_dtype", "vlen_dtype", "enum_dtype", "opaque_dtype", "special_dtype",
    "check_dtype", "check_string_dtype", "check_vlen_dtype", "check_enum_dtype",
    "check_opaque_dtype", "check_ref_dtype", "string_info", "Reference", "ref_dtype",
    "RegionReference", "regionref_dtype",
    "ls", "info", "diff", "rm", "cp", "mv", "load", "get", "is_hdf5", "serve",
    "IncompleteConversion", "UNLIMITED", "VirtualLayout", "VirtualSource", "VirtualSourceWarning", "concat", "store_dask",
    "to_h5lake", "MultiBlockSlice", "h5t", "version", "get_config",
]
