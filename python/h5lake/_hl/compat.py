"""File name encoding, as h5py's ``_hl/compat.py`` has it."""

import os


def filename_encode(filename):
    """A file name as bytes (the file system's encoding)."""
    return os.fsencode(os.fspath(filename))


def filename_decode(filename):
    """A file name as text (the file system's encoding)."""
    if isinstance(filename, bytes):
        return os.fsdecode(filename)
    if isinstance(filename, str):
        return filename
    raise TypeError("expect bytes or str, not %s" % type(filename).__name__)
