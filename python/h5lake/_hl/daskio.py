"""dask arrays over h5lake datasets, and dask arrays written into them.

A dask graph holds the dataset object itself: it pickles as (store, object
id, mode) and each worker process reopens the store once (see
``HLObject.picklable``), so ``dask.distributed`` clusters read and write
without anything of ours in the scheduler. Reads and writes of h5lake are
thread- and process-safe (chunk writes are conditional puts), so no lock is
taken: concurrent writes of blocks that share a storage chunk lose nothing.
"""

import numpy as np


def _storage_chunks(dset):
    """The chunks a dask array of ``dset`` is cut into by default: the
    storage chunks, grown along the leading dimensions to about dask's own
    block size (its ``array.chunk-size``, 128 MiB unless configured) so
    that small chunks do not make a task each: each task costs a few
    milliseconds of dask's time, more than reading 16 MiB."""
    import dask
    from dask.utils import parse_bytes
    # (A virtual dataset's own chunks, which are not its `chunks`.)
    # (Extents of 0 count as 1: an empty dataset still has one block.)
    chunks = [max(1, c) for c in (dset._props['chunks'] or dset.shape)]
    target = parse_bytes(dask.config.get("array.chunk-size", "128MiB"))
    # (A variable-length element is a pointer in the array, and its bytes
    # beside it: counted as 64.)
    per = 64 if dset.dtype.hasobject else dset.dtype.itemsize
    size = max(1, int(np.prod(chunks)) * per)
    grown = list(chunks)
    for axis in range(len(grown)):
        if size >= target:
            break
        factor = max(1, min(target // size, -(-dset.shape[axis] // grown[axis])))
        grown[axis] *= int(factor)
        size *= int(factor)
    return tuple(min(g, n) if n else 1 for g, n in zip(grown, dset.shape))


def dask_token():
    """A token no other dask array has: what dask gets for an h5lake
    object (see ``Dataset.__dask_tokenize__``)."""
    import uuid
    return uuid.uuid4().hex


def to_dask(dset, chunks=None, name=None):
    """``dset`` as a ``dask.array.Array`` (lazy). ``chunks`` defaults to
    whole storage chunks (grouped up to dask's ``array.chunk-size`` per
    task, 128 MiB by default)."""
    import dask.array as da
    handle = dset if dset._fs.mode == "r" else dset.picklable()
    if chunks is None:
        chunks = _storage_chunks(dset)
    if name is None:
        # A new name every time, as dask gives h5py's datasets: a store's
        # values can change under the same path, object and extent, and a
        # name dask has seen before would bring back its old results.
        name = "h5lake-" + dask_token()
    return da.from_array(handle, chunks=chunks, name=name, lock=False, asarray=True,
                         fancy=False)


def store_dask(array, dset, compute=True):
    """Writes the dask array ``array`` into the h5lake dataset ``dset`` (of
    the same shape), block by block, from wherever the blocks are computed
    (threads, processes, a ``dask.distributed`` cluster). With
    ``compute=False``, returns the delayed write instead."""
    import dask.array as da
    if tuple(array.shape) != tuple(dset.shape):
        raise ValueError(f"a dask array of shape {array.shape} into {dset.name} of shape "
                         f"{dset.shape}")
    dset._fs.check_writable(ValueError, "Unable to write to the dataset")
    return da.store(array, dset.picklable(writable=True), lock=False, compute=compute)
