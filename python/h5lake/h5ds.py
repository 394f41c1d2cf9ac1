"""Dimension scales through h5py's low-level ``h5ds`` module (HDF5's H5DS
calls), taking objects' ``.id``s; the same storage as ``dset.dims``."""

from ._hl import dims as _dims


def _dataset(dsid):
    from ._hl.base import BY_REFERENCE
    from ._hl.group import _make_object
    oid = getattr(dsid, "id", dsid)
    return _make_object(oid._fs, oid._oid, BY_REFERENCE)


def set_scale(dsid, dimname=b""):
    """Make the dataset a dimension scale named ``dimname``."""
    _dims.set_scale(_dataset(dsid), dimname)


def is_scale(dsid):
    return _dims.is_scale(_dataset(dsid))


def attach_scale(dsid, dscale_id, idx):
    _dims.attach_scale(_dataset(dsid), _dataset(dscale_id), idx)


def detach_scale(dsid, dscale_id, idx):
    _dims.detach_scale(_dataset(dsid), _dataset(dscale_id), idx)


def is_attached(dsid, dscale_id, idx):
    dset, scale = _dataset(dsid), _dataset(dscale_id)
    if _dims.num_scales(dset, idx) == 0:
        return False
    return any(s.id == scale.id for s in _dims.scales(dset, idx))


def get_num_scales(dsid, idx):
    return _dims.num_scales(_dataset(dsid), idx)


def get_scale_name(dscale_id):
    return _dims.scale_name(_dataset(dscale_id))


def set_label(dsid, idx, label):
    _dims.set_label(_dataset(dsid), idx, label)


def get_label(dsid, idx):
    return _dims.get_label(_dataset(dsid), idx)


def iterate(dsid, idx, func, startidx=0):
    """Calls ``func(scale_id)`` for the scales of dimension ``idx`` from
    ``startidx`` on, until it returns something other than None (returned)."""
    for scale in _dims.scales(_dataset(dsid), idx)[startidx:]:
        out = func(scale.id)
        if out is not None:
            return out
    return None
