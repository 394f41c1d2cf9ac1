"""h5py's ``_objects`` module, for code written against h5py.

``phil`` is the lock h5py's own code holds around calls into the HDF5
library. h5lake's engine is thread-safe and needs no such lock; ``phil`` is
a plain re-entrant lock, so code that takes it (``with phil:``) still runs
and still excludes other code that takes it.
"""

import threading

phil = threading.RLock()
