"""h5py's ``selections2`` helpers for reads that name compound fields."""

import numpy as np


def read_dtypes(dataset_dtype, names):
    """``(out_dtype, format_dtype)`` of a read of the fields ``names`` (all,
    when empty) from elements of ``dataset_dtype``: what the caller gets,
    and the packed record of those fields read from storage."""
    names = tuple(names)
    if not names:
        return dataset_dtype, dataset_dtype
    if dataset_dtype.names is None:
        raise ValueError("Field names only allowed for compound types")
    for name in names:
        if name not in dataset_dtype.names:
            raise ValueError("Field %s does not appear in this type." % name)
    fmt = np.dtype([(n, dataset_dtype.fields[n][0]) for n in names])
    if len(names) == 1:
        # One field reads as that field's own type, not as a record.
        return fmt.fields[names[0]][0], fmt
    return fmt, fmt
