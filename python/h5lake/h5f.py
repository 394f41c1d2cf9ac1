"""File constants of h5py's ``h5f`` module."""

# Access flags (H5F_ACC_*).
ACC_RDONLY = 0x0000
ACC_RDWR = 0x0001
ACC_TRUNC = 0x0002
ACC_EXCL = 0x0004
ACC_SWMR_WRITE = 0x0020
ACC_SWMR_READ = 0x0040

#: An unlimited size (HDF5's ``H5F_UNLIMITED``), as in the size of an
#: external storage file.
UNLIMITED = 2**64 - 1

# Object kinds (H5F_OBJ_*).
OBJ_FILE = 0x0001
OBJ_DATASET = 0x0002
OBJ_GROUP = 0x0004
OBJ_DATATYPE = 0x0008
OBJ_ATTR = 0x0010
OBJ_ALL = OBJ_FILE | OBJ_DATASET | OBJ_GROUP | OBJ_DATATYPE | OBJ_ATTR
OBJ_LOCAL = 0x0020

# Scopes of a flush (H5F_SCOPE_*).
SCOPE_LOCAL = 0
SCOPE_GLOBAL = 1
