"""Versions, as h5py's ``version`` module reports them: h5lake's own, and
those of the HDF5 library h5lake reads and writes HDF5 files with and of
numpy."""

import sys
from collections import namedtuple

import numpy

from . import __version__, _core

_Version = namedtuple("_Version", "major minor bugfix pre post dev")


def _parse(text):
    parts = (text.split(".") + ["0", "0"])[:3]
    return _Version(*(int(p) for p in parts), None, None, None)


version = __version__
version_tuple = _parse(version)

hdf5_version_tuple = tuple(_core.hdf5_version())
hdf5_version = "%d.%d.%d" % hdf5_version_tuple
hdf5_built_version_tuple = hdf5_version_tuple

numpy_version = numpy.__version__

info = f"""\
Summary of the h5lake configuration
-----------------------------------

h5lake  {version}
HDF5    {hdf5_version}
Python  {sys.version}
sys.platform    {sys.platform}
sys.maxsize     {sys.maxsize}
numpy   {numpy_version}
"""
