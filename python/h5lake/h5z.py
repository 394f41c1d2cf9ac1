"""Filters as h5py's low-level ``h5z`` module names them: the filter ids,
flags and configuration bits, and ``filter_avail`` / ``get_filter_info``
answering for the filters h5lake itself reads and writes (it needs no
HDF5 plugin for them)."""

from ._hl.filters import _CLASS_BY_ID

CLASS_T_VERS = 1

FILTER_ERROR = -1
FILTER_NONE = 0
FILTER_ALL = 0
FILTER_DEFLATE = 1
FILTER_SHUFFLE = 2
FILTER_FLETCHER32 = 3
FILTER_SZIP = 4
FILTER_NBIT = 5
FILTER_SCALEOFFSET = 6
FILTER_RESERVED = 256
FILTER_MAX = 65535
FILTER_LZF = 32000

FLAG_DEFMASK = 0x00ff
FLAG_MANDATORY = 0x0000
FLAG_OPTIONAL = 0x0001
FLAG_INVMASK = 0xff00
FLAG_REVERSE = 0x0100
FLAG_SKIP_EDC = 0x0200

FILTER_CONFIG_ENCODE_ENABLED = 0x0001
FILTER_CONFIG_DECODE_ENABLED = 0x0002

ERROR_EDC = -1
DISABLE_EDC = 0
ENABLE_EDC = 1
NO_EDC = 2

SO_FLOAT_DSCALE = 0
SO_FLOAT_ESCALE = 1
SO_INT = 2
SO_INT_MINBITS_DEFAULT = 0

SZIP_ALLOW_K13_OPTION_MASK = 1
SZIP_CHIP_OPTION_MASK = 2
SZIP_EC_OPTION_MASK = 4
SZIP_NN_OPTION_MASK = 32
SZIP_MAX_PIXELS_PER_BLOCK = 32


# N-bit packing is named by h5lake (its datasets are refused by name), not
# decoded.
_AVAILABLE = frozenset(_CLASS_BY_ID) - {FILTER_NBIT}


def filter_avail(filter_code):
    """Whether h5lake reads and writes the filter ``filter_code``."""
    return int(filter_code) in _AVAILABLE


def get_filter_info(filter_code):
    """The filter's configuration bits (encode and decode enabled); an
    error for a filter h5lake does not have, as HDF5 gives."""
    if not filter_avail(filter_code):
        raise ValueError("Filter %d is not available (can't get filter info)" % int(filter_code))
    return FILTER_CONFIG_ENCODE_ENABLED | FILTER_CONFIG_DECODE_ENABLED
