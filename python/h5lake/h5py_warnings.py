"""h5py's warning classes (``h5py.h5py_warnings``), for code that filters
them by class."""


class H5pyWarning(UserWarning):
    pass


class H5pyDeprecationWarning(H5pyWarning):
    pass
