"""The h5py-shaped high-level layer of h5lake (laid out like h5py's ``_hl``)."""
