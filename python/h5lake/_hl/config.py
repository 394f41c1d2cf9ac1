"""``h5lake.get_config()``: h5py's library-wide settings object."""


class H5LakeConfig:
    """What h5py's ``get_config()`` answers. ``track_order`` is the default
    of every ``track_order=`` argument (files, groups, datasets) left as
    None. The names h5py gives complex and boolean members are h5lake's
    fixed ones: setting them to anything else is refused rather than
    ignored."""

    _COMPLEX = ("r", "i")
    _BOOL = (b"FALSE", b"TRUE")

    def __init__(self):
        self.track_order = False
        # What this build has, as h5py reports its own.
        self.mpi = False
        self.ros3 = False
        self.direct_vfd = False
        self.vol = False
        self.swmr_min_hdf5_version = (1, 9, 178)
        self.vds_min_hdf5_version = (1, 9, 233)

    @property
    def complex_names(self):
        return self._COMPLEX

    @complex_names.setter
    def complex_names(self, value):
        if tuple(value) != self._COMPLEX:
            raise NotImplementedError(f"h5lake names complex members {self._COMPLEX}; "
                                      f"other names ({tuple(value)}) are not supported")

    @property
    def bool_names(self):
        return self._BOOL

    @bool_names.setter
    def bool_names(self, value):
        if tuple(value) != self._BOOL:
            raise NotImplementedError(f"h5lake names boolean values {self._BOOL}; "
                                      f"other names ({tuple(value)}) are not supported")


_CONFIG = H5LakeConfig()


def get_config():
    """The library-wide settings (one object, as h5py's)."""
    return _CONFIG


def default_track_order(track_order):
    """``track_order`` as given, or the configured default when None."""
    return _CONFIG.track_order if track_order is None else track_order
