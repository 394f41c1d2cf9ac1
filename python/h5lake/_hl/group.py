"""Groups and links (h5py's ``_hl/group.py``).

Paths are resolved here, one link at a time: hard links name object ids,
soft links are resolved by path (relative ones from the group holding the
link), external links open another h5lake store (``h5domain`` relative to
the directory of the current store, or absolute) in the current file's mode.

Deleting the last link to an object does NOT free the object (h5py/HDF5
would); the engine has no reference counts and another path may still
reach it.  Unreachable objects stay in the store until a future "repack".
"""

from __future__ import annotations

import contextlib
import json
import os
import posixpath

import numpy as np

from . import h5t
from .base import (BY_REFERENCE, ClosedKeyError, ClosedRuntimeError, HLObject, MutableMappingHDF5,
                   join_name, to_str_name)

_MAX_LINK_DEPTH = 32


def _hard(oid):
    return json.dumps({"class": "H5L_TYPE_HARD", "id": oid})


def _clean_link(link):
    """A link document as create_link wants it (no engine-added keys)."""
    cls = link['class']
    if cls == 'H5L_TYPE_HARD':
        return {"class": cls, "id": link['id']}
    if cls == 'H5L_TYPE_SOFT':
        return {"class": cls, "h5path": link['h5path']}
    if cls == 'H5L_TYPE_EXTERNAL':
        return {"class": cls, "h5path": link['h5path'], "h5domain": link['h5domain']}
    return dict(link)


_ACCESS_KWDS = ('rdcc_nslots', 'rdcc_nbytes', 'rdcc_w0', 'virtual_prefix', 'efile_prefix', 'dapl')


def _note_access(dset, kwds):
    """Records the access list ``create_dataset``/``require_dataset``
    keywords give ``dset`` (``dset.id.get_access_plist()`` answers it),
    and returns ``dset``."""
    if dset is None or not any(kwds.get(k) is not None for k in _ACCESS_KWDS):
        return dset
    from ..h5p import PropDAID
    fs = dset._fs
    dapl = kwds.get('dapl')
    if dapl is not None:
        if not isinstance(dapl, PropDAID):
            raise TypeError("dapl must be a dataset access list (h5p.create(h5p.DATASET_ACCESS))")
        got = PropDAID(dapl.get_chunk_cache(), dapl.get_virtual_prefix(), dapl.get_efile_prefix())
    else:
        got = PropDAID(fs.chunk_cache)
    cache = list(got.get_chunk_cache())
    for i, k in enumerate(('rdcc_nslots', 'rdcc_nbytes', 'rdcc_w0')):
        if kwds.get(k) is not None:
            cache[i] = kwds[k]
    got.set_chunk_cache(*cache)
    if kwds.get('virtual_prefix') is not None:
        if getattr(dset, 'is_virtual', False):
            # (Its sources are found under $HDF5_VDS_PREFIX; a prefix of
            # the handle's own would be taken and not used.)
            raise NotImplementedError("virtual_prefix= for a virtual dataset is not supported; "
                                      "set HDF5_VDS_PREFIX instead")
        got.set_virtual_prefix(kwds['virtual_prefix'])
    if kwds.get('efile_prefix') is not None:
        got.set_efile_prefix(kwds['efile_prefix'])
    fs.dataset_access[dset._oid] = got
    return dset


def _make_object(fs, oid, name):
    from .dataset import Dataset
    from .datatype import Datatype
    if oid.startswith('g-'):
        return Group(fs, oid, name)
    if oid.startswith('d-'):
        return Dataset(fs, oid, name)
    if oid.startswith('t-'):
        return Datatype(fs, oid, name)
    raise TypeError("Unknown object type")


def path_to(fs, oid):
    """The first path from the root to object ``oid`` (depth first, by
    name), as HDF5 names a dereferenced object; None when no link leads
    to it."""
    root = Group(fs, fs.root_id, '/')
    return next(('/' + rel for rel, f2, o, _l in root._visit_walk(False)
                 if o == oid and f2 is fs), None)


def _class_of(oid):
    from .dataset import Dataset
    from .datatype import Datatype
    return {'g': Group, 'd': Dataset, 't': Datatype}[oid[0]]


class SoftLink:
    """A symbolic link by path within a file."""

    @property
    def path(self):
        """Soft link value.  Not guaranteed to be a valid path."""
        return self._path

    def __init__(self, path):
        self._path = str(path)

    def __repr__(self):
        return '<SoftLink to "%s">' % self.path


class ExternalLink:
    """A link to an object in another h5lake store."""

    @property
    def path(self):
        """Path of the object inside the external store."""
        return self._path

    @property
    def filename(self):
        """Path to the external store (relative to the linking store's directory)."""
        return self._filename

    def __init__(self, filename, path):
        if isinstance(filename, bytes):
            filename = filename.decode('utf-8')
        self._filename = os.fspath(filename)
        self._path = to_str_name(path)

    def __repr__(self):
        return '<ExternalLink to "%s" in file "%s"' % (self.path, self.filename)


class HardLink:
    """Represents a hard link (returned by ``Group.get(..., getlink=True)``)."""


class _CopySourceError(KeyError, RuntimeError):
    """Copy of a missing source (h5py raises KeyError or RuntimeError
    depending on the call form)."""

    def __str__(self):
        return RuntimeError.__str__(self)


class _CommitError(OSError, KeyError):
    """Committing a datatype where the name is taken: h5py raises KeyError
    (other link creations raise OSError)."""

    def __str__(self):
        return OSError.__str__(self)


def _dataset_parent_error(blocked, ppath):
    """create_dataset through a non-group: h5py's ``require_group(parent)``
    gives TypeError when the parent itself is not a group, and ValueError
    (from creating the parent) when a component above it is not."""
    if blocked == 'self':
        return TypeError("Incompatible object already exists (%r is not a group)" % ppath)
    if blocked == 'dangling':
        return KeyError("Unable to open object (component not found: %r)" % ppath)
    return ValueError("Unable to create group (message type not found: %r is not a group)" % ppath)


def _plain(name):
    """Whether a path names a member of the group itself (no walk needed)."""
    return bool(name) and '/' not in name and name not in ('.', '..')


class _TooManyLinks(KeyError, RuntimeError):
    """A chain of soft or external links longer than HDF5 follows (a loop):
    h5py's RuntimeError, and a KeyError to what asks whether a name exists."""

    def __str__(self):
        return str(self.args[0]) if self.args else ""


class Group(HLObject, MutableMappingHDF5):
    """An HDF5 group: a dictionary of named links."""

    _ID_KIND = 'g'

    # ------------------------------------------------------------------
    # path resolution
    # ------------------------------------------------------------------
    def _walk(self, path, follow_last=True, depth=0, elink_mode=None, elink_locking=None):
        """Resolve ``path`` from this group.

        Returns ``('obj', fs, oid, name)``; or, with ``follow_last=False``,
        ``('link', fs, group_id, link_name, link_doc, group_name)`` for the
        final link.  KeyError when something is missing.
        """
        path = to_str_name(path)
        fs = self._fs
        fs.check(ClosedKeyError)
        if path.startswith('/'):
            cur, curname = fs.root_id, '/'
        else:
            cur, curname = self._oid, self._name
        parts = [p for p in path.split('/') if p not in ('', '.')]
        if not parts:
            return ('obj', fs, cur, curname)
        n = len(parts)
        for i, part in enumerate(parts):
            last = (i == n - 1)
            if not cur.startswith('g-'):
                raise KeyError("Unable to open object (component not found)")
            try:
                link = json.loads(fs.raw.link_get(cur, part))
            except KeyError:
                if last:
                    raise KeyError("Unable to open object (object %r doesn't exist)" % part) from None
                raise KeyError("Unable to open object (component not found)") from None
            if last and not follow_last:
                return ('link', fs, cur, part, link, curname)
            fs, cur, curname = self._follow(fs, cur, curname, part, link, depth, elink_mode,
                                            elink_locking)
        return ('obj', fs, cur, curname)

    @staticmethod
    def _follow(fs, gid, gname, part, link, depth, elink_mode=None, elink_locking=None):
        cls = link.get('class')
        childname = None if gname is None else posixpath.join(gname, part)
        if cls == 'H5L_TYPE_HARD':
            return fs, link['id'], childname
        if depth >= _MAX_LINK_DEPTH:
            raise _TooManyLinks("Special link traversal failed (too many links)")
        if cls == 'H5L_TYPE_SOFT':
            try:
                _, fs2, oid, _n = Group(fs, gid, gname)._walk(link['h5path'], True, depth + 1,
                                                              elink_mode, elink_locking)
            except _TooManyLinks:
                raise
            except KeyError:
                raise KeyError("Unable to open object (component not found)") from None
            return fs2, oid, childname
        if cls == 'H5L_TYPE_EXTERNAL':
            efs = fs.open_external(link['h5domain'], elink_mode, elink_locking)
            _, fs2, oid, name = Group(efs, efs.root_id, '/')._walk(link['h5path'], True, depth + 1,
                                                                   elink_mode, elink_locking)
            return fs2, oid, name
        raise TypeError("Unknown link type")

    def _link_exists(self, fs, gid, name):
        try:
            fs.raw.link_get(gid, name)
            return True
        except KeyError:
            return False

    def _split_new(self, name):
        """(parent path or None, base name) of a path to create."""
        name = to_str_name(name)
        stripped = name.rstrip('/')
        if not stripped.strip('/'):
            raise ValueError("Unable to create link (name already exists)")
        if '/' in stripped.lstrip('/'):
            ppath, base = stripped.rsplit('/', 1)
            return (ppath or '/'), base
        if stripped.startswith('/'):
            return '/', stripped.lstrip('/')
        return None, stripped

    def _resolve_parent(self, ppath):
        """Where the parent path of a new link stands: ``(group, None)`` if it
        is an existing group, ``(None, None)`` if it is missing (it and any
        missing intermediate groups can be created), else ``(None, why)``:
        ``'self'`` if it names an object that is not a group, ``'dangling'``
        if it is a soft/external link leading nowhere, ``'path'`` if one of
        its components before the last is either."""
        if ppath is None:
            return self, None
        try:
            obj = self[ppath]
        except KeyError:
            parts = [p for p in ppath.split('/') if p not in ('', '.')]
            prefix = '/' if ppath.startswith('/') else ''
            for i in range(1, len(parts) + 1):
                sub = prefix + '/'.join(parts[:i])
                try:
                    o = self[sub]
                except KeyError:
                    try:
                        self._walk(sub, follow_last=False)
                    except KeyError:
                        return None, None           # really missing: can be created
                    return None, ('dangling' if i == len(parts) else 'path')
                if not isinstance(o, Group):
                    return None, 'path'
            return None, None
        if not isinstance(obj, Group):
            return None, 'self'
        return obj, None

    def _target_free(self, name, exc, msg, nongroup=None):
        """Check that ``name`` could be created; returns (ppath, base, parent-or-None).

        When the parent path goes through an object that is not a group,
        raises ``nongroup(blocked, ppath)`` if given (see :meth:`_resolve_parent`
        for ``blocked``), else ``exc`` (HDF5's "message type not found").
        """
        ppath, base = self._split_new(name)
        parent, blocked = self._resolve_parent(ppath)
        if blocked is not None:
            if nongroup is not None:
                raise nongroup(blocked, ppath)
            raise exc("%s (%s: %r)" % (
                msg.split(' (')[0],
                "message type not found" if blocked != 'dangling' else "component not found",
                ppath))
        if parent is not None and self._link_exists(parent._fs, parent._oid, base):
            raise exc(msg)
        return ppath, base, parent

    def _require_parent(self, ppath, parent, inherit_order=True):
        """The parent group, creating it (and missing intermediates) if needed.
        A group made on the way keeps its links in creation order when the
        group it is made in does, as HDF5 makes intermediate groups
        (``inherit_order``; h5py's ``create_dataset`` makes them plain)."""
        if parent is not None:
            return parent
        grp = Group(self._fs, self._fs.root_id, '/') if ppath.startswith('/') else self
        for part in [p for p in ppath.split('/') if p not in ('', '.')]:
            if part in grp:
                grp = grp.require_group(part)
            else:
                grp = grp.create_group(part, track_order=inherit_order and grp._track_order())
        return grp

    # ------------------------------------------------------------------
    # creation
    # ------------------------------------------------------------------
    def create_group(self, name, track_order=None):
        """Create and return a new subgroup (intermediate groups are created);
        ``name`` None makes an anonymous (unlinked) group, as in h5py."""
        self._fs.check_writable(ValueError, "Unable to create group")
        if track_order not in (None, True, False):
            raise TypeError("track_order must be either True or False")
        from .config import default_track_order
        props = {"CreateOrder": 1} if default_track_order(track_order) else {}
        if name is None:
            return Group(self._fs, self._fs.raw.create_group(json.dumps(props)), None)
        ppath, base, parent = self._target_free(
            name, ValueError, "Unable to create group (name already exists)")
        parent = self._require_parent(ppath, parent)
        raw = parent._fs.raw
        gid = raw.create_group(json.dumps(props))
        try:
            raw.link_create(parent._oid, base, _hard(gid))
        except BaseException:
            raw.delete_object(gid)
            raise
        return Group(parent._fs, gid, join_name(parent._name, base))

    def require_group(self, name):
        """Return a group, creating it if it doesn't exist (TypeError if
        something else is there)."""
        if name not in self:
            try:
                return self.create_group(name)
            except ValueError:
                # (Another writer made it between the look and the make:
                # theirs is the group asked for, as if it had been there.)
                if name not in self:
                    raise
        grp = self[name]
        if not isinstance(grp, Group):
            raise TypeError("Incompatible object (%s) already exists" % grp.__class__.__name__)
        return grp

    def to_arrow(self, sel=None, names=None):
        """The group as a table (the column-group pattern of AnnData and
        HDF5's column-oriented layouts): its 1-D datasets of equal length
        ``names`` (default: all of them, in the group's order; an AnnData
        frame's ``column-order`` after its index) are the columns, ``sel``
        (an index expression) the rows. AnnData's categorical and nullable
        column groups are columns too (a categorical as a dictionary
        column); other members are left out with a warning naming them. A
        ``pyarrow.Table``; ValueError for members of other shapes."""
        from . import table
        return table.group_to_arrow(self, sel, names)

    def to_pandas(self, sel=None, names=None):
        """:meth:`to_arrow` as a ``pandas.DataFrame`` (an AnnData frame's
        index column as its index)."""
        from . import table
        return table.group_to_pandas(self, sel, names)

    def to_polars(self, sel=None, names=None):
        """:meth:`to_arrow` as a ``polars.DataFrame``."""
        import polars
        return polars.from_arrow(self.to_arrow(sel, names))

    def create_dataset(self, name, shape=None, dtype=None, data=None, **kwds):
        """Create a new dataset (see h5py's Group.create_dataset).

        ``name`` None makes an anonymous (unlinked) dataset.
        """
        from . import dataset, table
        self._fs.check_writable(ValueError, "Unable to create dataset")
        if isinstance(name, (str, bytes)) and name.rstrip(b"/" if isinstance(name, bytes) else "/") \
                != name:
            # ("d/": the dataset's own name is empty, as in h5py.)
            raise ValueError("Unable to synchronously create dataset "
                             "(name parameter cannot be an empty string)")
        src = table.arrow_source(data) if data is not None else None
        if src is not None:
            # A table (pyarrow, pandas, Polars, any Arrow stream): columnar.
            return _note_access(table.create_table(self, name, src, shape=shape, dtype=dtype,
                                                   **kwds), kwds)
        return _note_access(self._create_planned(dataset.prepare_dset(
            shape=shape, dtype=dtype, data=data, **kwds), name), kwds)

    def _create_planned(self, plan, name):
        """Makes the dataset ``plan`` describes at ``name`` (None: anonymous)."""
        if name is None:
            return plan.create(self, None)
        ppath, base, parent = self._target_free(
            name, ValueError, "Unable to create dataset (name already exists)",
            nongroup=_dataset_parent_error)
        parent = self._require_parent(ppath, parent, inherit_order=False)
        return plan.create(parent, base)

    def create_virtual_dataset(self, name, layout, fillvalue=None):
        """Create a virtual dataset from a ``VirtualLayout`` (h5py's API):
        its elements are read from the mapped sources, in this store or in
        other h5lake stores; unmapped elements read as ``fillvalue``."""
        from . import vds
        return vds.create(self, name, layout, fillvalue)

    @contextlib.contextmanager
    def build_virtual_dataset(self, name, shape, dtype, maxshape=None, fillvalue=None):
        """Map sources into a new virtual dataset (h5py's API): yields a
        ``VirtualLayout`` to assign sources to (``layout[0:10] = vsource``);
        the dataset is made when the block ends without an error."""
        from .vds import VirtualLayout
        layout = VirtualLayout(shape, dtype, maxshape, self.file.filename)
        yield layout
        self.create_virtual_dataset(name, layout, fillvalue)

    def require_dataset(self, name, shape, dtype, exact=False, **kwds):
        """Open a dataset, creating it if it doesn't exist (h5py's rules)."""
        from .dataset import Dataset
        if name not in self:
            return self.create_dataset(name, *(shape, dtype), **kwds)
        return _note_access(self._require_existing(name, shape, dtype, exact, kwds), kwds)

    def _require_existing(self, name, shape, dtype, exact, kwds):
        from .dataset import Dataset
        if isinstance(shape, int):
            shape = (shape,)
        dset = self[name]
        if not isinstance(dset, Dataset):
            raise TypeError("Incompatible object (%s) already exists" % dset.__class__.__name__)
        if shape is not None:
            shape = tuple(shape)
        if shape != dset.shape:
            if "maxshape" not in kwds:
                raise TypeError("Shapes do not match (existing %s vs new %s)" % (dset.shape, shape))
            elif kwds["maxshape"] != dset.maxshape:
                raise TypeError("Max shapes do not match (existing %s vs new %s)" % (dset.maxshape, kwds["maxshape"]))
        if exact:
            if dtype != dset.dtype:
                raise TypeError("Datatypes do not exactly match (existing %s vs new %s)" % (dset.dtype, dtype))
        elif not np.can_cast(dtype, dset.dtype):
            raise TypeError("Datatypes cannot be safely cast (existing %s vs new %s)" % (dset.dtype, dtype))
        return dset

    def create_dataset_like(self, name, other, **kwupdate):
        """Create a dataset similar to ``other`` (no data or attributes copied)."""
        for k in ('shape', 'dtype', 'chunks', 'compression',
                  'compression_opts', 'scaleoffset', 'shuffle', 'fletcher32',
                  'fillvalue'):
            kwupdate.setdefault(k, getattr(other, k))
        kwupdate.setdefault('track_order', other._track_order())
        if other.maxshape != other.shape:
            kwupdate.setdefault('maxshape', other.maxshape)
        return self.create_dataset(name, **kwupdate)

    # ------------------------------------------------------------------
    # mapping protocol
    # ------------------------------------------------------------------
    def __getitem__(self, name):
        """Open an object by (absolute or relative) path, or by object
        reference."""
        from .h5t import Reference, RegionReference
        if isinstance(name, (Reference, RegionReference)):
            return self._deref(name)
        if not isinstance(name, (str, bytes)):
            raise TypeError("Accessing a group is done with bytes or str, not {}".format(type(name)))
        if name in ('', b''):
            raise KeyError("Unable to synchronously open object (name parameter cannot be an "
                           "empty string)")
        _, fs, oid, oname = self._walk(name)
        return _make_object(fs, oid, oname)

    def _deref(self, ref):
        """The object ``ref`` names; its name is a path that leads to it,
        found when first asked for (see :func:`path_to`)."""
        fs = self._fs
        fs.check()
        oid = ref._id
        if oid is None:
            raise ValueError("Invalid HDF5 object reference")
        try:
            fs.doc(oid)
        except KeyError:
            raise ValueError("Invalid HDF5 object reference (no such object in this file)") from None
        try:
            fs.raw.check_linked(oid)
        except KeyError as e:
            raise KeyError("Unable to open object by token (%s)" % (e.args[0] if e.args else e)) from None
        return _make_object(fs, oid, '/' if oid == fs.root_id else BY_REFERENCE)

    def get(self, name, default=None, getclass=False, getlink=False,
            elink_mode=None, elink_locking=None, elink_swmr=None):
        """Retrieve an item, its class, or the link itself (h5py's semantics).

        ``elink_mode`` ('r' or 'r+'; default this file's) is the mode the
        stores external links lead to are opened in. ``elink_locking`` is
        the locking they report (``f.id.get_access_plist()``: stores have
        no file locks); SWMR (``elink_swmr=True``) is not supported."""
        if elink_mode not in (None, 'r', 'r+'):
            raise ValueError("elink_mode must be 'r', 'r+' or None, not %r" % (elink_mode,))
        if elink_mode == 'r+' and self._fs.mode == 'r':
            raise ValueError("Unable to open external links read/write from a file opened "
                             "read-only")
        if elink_swmr:
            raise ValueError("SWMR is not supported: h5lake stores have no SWMR mode")
        from ..h5p import locking_props
        locking = None if elink_locking is None else locking_props(elink_locking)
        if not (getclass or getlink):
            if elink_mode is not None or locking is not None:
                try:
                    _, fs, oid, oname = self._walk(name, elink_mode=elink_mode,
                                                   elink_locking=locking)
                except _TooManyLinks:
                    raise           # (a loop of links is h5py's RuntimeError, not absence)
                except KeyError:
                    return default
                return _make_object(fs, oid, oname)
            try:
                return self[name]
            except _TooManyLinks:
                raise
            except KeyError:
                return default
        if name not in self:
            return default
        if getclass and not getlink:
            try:
                _, fs, oid, _n = self._walk(name)
            except KeyError as e:
                raise RuntimeError("Can't get info for object (%s)" % (e.args[0] if e.args else e)) from None
            return _class_of(oid)
        walked = self._walk(name, follow_last=False)
        if len(walked) != 6:
            # The group itself ('/', '.'): reached by no link of its own.
            raise RuntimeError("Unable to get link info (name doesn't exist)")
        _, fs, gid, lname, link, _g = walked
        cls = link.get('class')
        if cls == 'H5L_TYPE_SOFT':
            return SoftLink if getclass else SoftLink(link['h5path'])
        if cls == 'H5L_TYPE_EXTERNAL':
            return ExternalLink if getclass else ExternalLink(link['h5domain'], link['h5path'])
        if cls == 'H5L_TYPE_HARD':
            return HardLink if getclass else HardLink()
        raise TypeError("Unknown link type")

    def __setitem__(self, name, obj):
        """Add an object: hard link to an HLObject, SoftLink, ExternalLink,
        commit a numpy dtype, or create a dataset from array-like data."""
        from . import dataset
        from .datatype import Datatype

        self._fs.check_writable(ValueError, "Unable to create link")
        msg = "Unable to create link (name already exists)"
        if isinstance(obj, HLObject):
            obj._fs.check()
            ppath, base, parent = self._target_free(name, OSError, msg)
            target_fs = parent._fs if parent is not None else self._fs
            if obj._fs.abspath != target_fs.abspath:
                raise OSError("Unable to create link (interfile hard links are not allowed)")
            parent = self._require_parent(ppath, parent)
            parent._fs.raw.link_create(parent._oid, base, _hard(obj._oid))
            return
        if isinstance(obj, SoftLink):
            ppath, base, parent = self._target_free(name, OSError, msg)
            parent = self._require_parent(ppath, parent)
            parent._fs.raw.link_create(parent._oid, base, json.dumps(
                {"class": "H5L_TYPE_SOFT", "h5path": obj.path}))
            return
        if isinstance(obj, ExternalLink):
            ppath, base, parent = self._target_free(name, OSError, msg)
            parent = self._require_parent(ppath, parent)
            parent._fs.raw.link_create(parent._oid, base, json.dumps(
                {"class": "H5L_TYPE_EXTERNAL", "h5path": obj.path, "h5domain": obj.filename}))
            return
        if isinstance(obj, np.dtype):
            type_json = json.dumps(h5t.dtype_to_hsds(obj))   # validate first
            ppath, base, parent = self._target_free(
                name, _CommitError, "Unable to commit datatype (name already exists)")
            parent = self._require_parent(ppath, parent)
            raw = parent._fs.raw
            tid = raw.create_datatype(type_json)
            try:
                raw.link_create(parent._oid, base, _hard(tid))
            except BaseException:
                raw.delete_object(tid)
                raise
            return
        plan = dataset.prepare_dset(data=obj)
        ppath, base, parent = self._target_free(name, OSError, msg)
        parent = self._require_parent(ppath, parent)
        plan.create(parent, base)

    def __delitem__(self, name):
        """Delete (unlink) an item; the object itself is left in the store."""
        # A read-only file: KeyError, as h5py gives.
        self._fs.check_writable(KeyError, "Couldn't delete link")
        name = to_str_name(name)
        if name == "":
            raise ValueError("No name (no name)")
        if _plain(name):
            # A member of this group: one call, no walk.
            try:
                self._fs.raw.link_delete(self._oid, name)
            except KeyError:
                raise KeyError("Couldn't delete link (callback link pointer is NULL "
                               "(specified link may be '.' or not exist))") from None
            # (Handles opened by this path check where they are now.)
            self._moved(self._fs, name, name)
            return
        try:
            found = self._walk(name, follow_last=False)
        except KeyError:
            raise KeyError("Couldn't delete link (callback link pointer is NULL "
                           "(specified link may be '.' or not exist))") from None
        if found[0] != 'link':
            # A path to a group itself (`/`, `.`): no link to delete.
            raise KeyError("Couldn't delete link (group doesn't exist)")
        _, fs, gid, lname, _link, _g = found
        fs.check_writable(ValueError, "Unable to delete link")
        fs.raw.link_delete(gid, lname)
        self._moved(fs, name, name)

    def _link_names(self):
        names = self._raw.link_names(self._oid)
        if not self._track_order():
            names.sort()
        return names

    def __len__(self):
        return len(self._raw.link_names(self._oid))

    def _ipython_key_completions_(self):
        """Names for IPython's completion of ``obj[...]``, sorted."""
        return sorted(self.keys())

    def __iter__(self):
        yield from self._link_names()

    def __reversed__(self):
        self._fs.check(ClosedKeyError)
        yield from reversed(self._link_names())

    def __contains__(self, name):
        """Test if a member (link) exists; intermediate components must exist too."""
        if not isinstance(name, (str, bytes)):
            raise TypeError("A name should be string or bytes")     # (h5py's words)
        if not name:
            return False
        if not self._fs.valid:
            return False
        try:
            self._walk(name, follow_last=False)
            return True
        except (KeyError, TypeError, ValueError):
            return False

    # ------------------------------------------------------------------
    # move / copy
    # ------------------------------------------------------------------
    def move(self, source, dest):
        """Move a link to a new location in the same file."""
        self._fs.check_writable(ValueError, "Unable to move link")
        if source == dest:
            return
        source, dest = to_str_name(source), to_str_name(dest)
        if not source.strip("/") or not dest.strip("/"):
            raise ValueError("Unable to move link (the name of a link must be supplied to "
                             "move or copy)")
        if _plain(source) and _plain(dest):
            # Within this group: one call, no walk.
            try:
                self._fs.raw.link_rename(self._oid, source, dest)
            except KeyError:
                raise ValueError("Unable to move link (name doesn't exist)") from None
            except ValueError:
                raise ValueError("Unable to move link (an object with that name already exists)") from None
            self._moved(self._fs, source, dest)
            return
        try:
            _, sfs, sgid, sname, link, _g = self._walk(source, follow_last=False)
        except KeyError:
            raise ValueError("Unable to move link (name doesn't exist)") from None
        ppath, base, parent = self._target_free(
            dest, ValueError, "Unable to move link (an object with that name already exists)")
        if parent is not None and parent._fs is not sfs:
            raise ValueError("Unable to move link (moving links across files is not allowed)")
        # HDF5 (h5py's link-creation property list) creates missing intermediate groups
        parent = self._require_parent(ppath, parent)
        if parent._fs is not sfs:
            raise ValueError("Unable to move link (moving links across files is not allowed)")
        try:
            sfs.raw.link_move(sgid, sname, parent._oid, base)
        except KeyError:
            raise ValueError("Unable to move link (name doesn't exist)") from None
        self._moved(sfs, source, dest)

    def _moved(self, fs, source, dest):
        """Note the move of ``source`` to ``dest`` (paths from this group)
        in ``fs``, for the names of handles opened before it (a deletion is
        noted as a move to itself: the handles below it look again)."""
        here = self.name
        if fs is not self._fs or not isinstance(here, str):
            return
        fs.moves.append(tuple(posixpath.normpath(posixpath.join(here, p)) for p in (source, dest)))

    def copy(self, source, dest, name=None, shallow=False, expand_soft=False,
             expand_external=False, expand_refs=False, without_attrs=False):
        """Copy an object or group (within this file or into another)."""
        self._fs.check(ClosedRuntimeError)
        if isinstance(source, HLObject):
            src = source
            src._fs.check(ClosedRuntimeError)
        else:
            try:
                src = self[source]
            except KeyError as e:
                # h5py: RuntimeError from H5Ocopy, or KeyError when it opens
                # the source first to name the copy; this is both
                raise _CopySourceError("Unable to copy object (%s)" % (
                    e.args[0] if e.args else e)) from None
        if isinstance(dest, Group):
            if name is not None:
                dest_path = name
            else:
                if src.name is None:
                    raise ValueError("Anonymous objects need an explicit name to be copied")
                dest_path = posixpath.basename(posixpath.normpath(src.name))
            dgrp = dest
        elif isinstance(dest, HLObject):
            raise TypeError("Destination must be path or Group object")
        else:
            dest_path = dest
            dgrp = self
        dgrp._fs.check_writable(ValueError, "Unable to copy object", closed=ClosedRuntimeError)
        ppath, base, parent = dgrp._target_free(
            dest_path, RuntimeError, "Unable to copy object (destination object already exists)")
        parent = dgrp._require_parent(ppath, parent)
        _copy_object(src, parent, base, shallow=shallow, expand_soft=expand_soft,
                     expand_external=expand_external, expand_refs=expand_refs,
                     without_attrs=without_attrs)

    # ------------------------------------------------------------------
    # visiting
    # ------------------------------------------------------------------
    def _visit_walk(self, links_mode):
        """Generate (relative name, fs, oid-or-None, link) depth-first, by name,
        each object once (hard links only unless links_mode)."""
        visited = {self._oid}

        def children(fs, gid):
            items = list(fs.raw.links(gid))
            items.sort(key=lambda kv: kv[0])
            return items

        def rec(fs, gid, prefix):
            for lname, ljson in children(fs, gid):
                link = json.loads(ljson)
                rel = prefix + lname
                if link.get('class') == 'H5L_TYPE_HARD':
                    oid = link['id']
                    if oid in visited:
                        if links_mode:
                            yield rel, fs, oid, link
                        continue
                    visited.add(oid)
                    yield rel, fs, oid, link
                    if oid.startswith('g-'):
                        yield from rec(fs, oid, rel + '/')
                elif links_mode:
                    yield rel, fs, None, link

        yield from rec(self._fs, self._oid, '')

    def visit(self, func):
        """Call ``func(name)`` for every object below this group (each once,
        names relative, sorted); stop early if it returns non-None."""
        self._fs.check()
        for rel, _fs, _oid, _l in self._visit_walk(False):
            r = func(rel)
            if r is not None:
                return r
        return None

    def visititems(self, func):
        """Like visit, calling ``func(name, object)``."""
        self._fs.check()
        for rel, fs, oid, _l in self._visit_walk(False):
            r = func(rel, _make_object(fs, oid, join_name(self._name, rel)))
            if r is not None:
                return r
        return None

    def visit_links(self, func):
        """Call ``func(name)`` for every link below this group."""
        self._fs.check()
        for rel, _fs, _oid, _l in self._visit_walk(True):
            r = func(rel)
            if r is not None:
                return r
        return None

    def visititems_links(self, func):
        """Call ``func(name, link)`` for every link below this group."""
        self._fs.check()
        for rel, _fs, _oid, link in self._visit_walk(True):
            cls = link.get('class')
            if cls == 'H5L_TYPE_SOFT':
                lk = SoftLink(link['h5path'])
            elif cls == 'H5L_TYPE_EXTERNAL':
                lk = ExternalLink(link['h5domain'], link['h5path'])
            else:
                lk = HardLink()
            r = func(rel, lk)
            if r is not None:
                return r
        return None

    # ------------------------------------------------------------------
    def __eq__(self, other):
        return HLObject.__eq__(self, other)

    def __ne__(self, other):
        return HLObject.__ne__(self, other)

    __hash__ = HLObject.__hash__

    def __bool__(self):
        return self._fs.valid

    def __repr__(self):
        if not self._fs.valid:
            return "<Closed HDF5 group>"
        namestr = '"%s"' % self._name if self._name is not None else "(anonymous)"
        return '<HDF5 group %s (%d members)>' % (namestr, len(self))


# ---------------------------------------------------------------------------
# copying
# ---------------------------------------------------------------------------

def _copy_attrs(sfs, soid, dfs, doid, remap=None):
    for aname in sfs.raw.attr_names(soid):
        doc = json.loads(sfs.raw.attr_get(soid, aname))
        doc.pop('created', None)
        doc.pop('name', None)
        doc.pop('href', None)
        if remap is not None and 'value' in doc:
            shape = doc.get('shape') or {}
            depth = len(shape.get('dims') or ()) if shape.get('class') == 'H5S_SIMPLE' else 0
            doc['value'] = _remap_json_refs(doc['type'], doc['value'], depth, remap)
        dfs.raw.attr_create(doid, aname, json.dumps(doc), True)


def _remap_json_refs(t, value, depth, remap):
    """An attribute's JSON ``value`` (of type ``t``, ``depth`` dimensions
    of nesting) with each object and region reference leading to the id
    ``remap`` gives for the one it named."""
    if depth:
        return [_remap_json_refs(t, v, depth - 1, remap) for v in value]
    if not isinstance(t, dict):
        return value
    cls = t.get('class')
    if cls == 'H5T_REFERENCE':
        if isinstance(value, str) and value:
            collection, _, oid = value.rpartition('/')
            new = remap(oid)
            return '' if new is None else (collection + '/' if collection else '') + new
        if isinstance(value, dict) and value.get('id'):
            collection, _, oid = str(value['id']).rpartition('/')
            new = remap(oid)
            return {} if new is None else dict(value, id=(collection + '/' if collection else '') + new)
        return value
    if cls == 'H5T_COMPOUND' and isinstance(value, list):
        return [_remap_json_refs(f['type'], v, 0, remap) for f, v in zip(t['fields'], value)]
    if cls == 'H5T_ARRAY':
        return _remap_json_refs(t['base'], value, len(t.get('dims') or ()), remap)
    if cls == 'H5T_VLEN' and isinstance(value, list):
        return [_remap_json_refs(t['base'], v, 0, remap) for v in value]
    return value


def _check_expandable(doc):
    """Refuses, before anything is copied, a dataset whose references
    ``expand_refs`` cannot follow (sequences of references, say): they are
    never copied as if they had been expanded."""
    from .dataset import _holds_refs
    dtype = h5t.hsds_to_dtype(doc['type'])
    if _type_has_refs(doc['type']) and not (h5t.is_regionref(dtype) or _holds_refs(dtype)):
        raise NotImplementedError(
            f"copy(expand_refs=True) cannot follow the references inside the values of "
            f"type {json.dumps(doc['type'])}; copy without expand_refs")


def _type_has_refs(t):
    """Whether HSDS type JSON ``t`` holds a reference anywhere."""
    if not isinstance(t, dict):
        return False
    if t.get('class') == 'H5T_REFERENCE':
        return True
    return any(_type_has_refs(f.get('type')) for f in t.get('fields') or ()) or \
        _type_has_refs(t.get('base'))


def _remap_stored_refs(arr, dtype, remap):
    """Rewrites in place, in ``arr`` (the engine's bytes of ``dtype``), each
    object reference to lead to the id ``remap`` gives for the one it named."""
    if dtype.subdtype is not None:
        dtype = dtype.subdtype[0]           # numpy folds array members into the shape
    if dtype.names is not None:
        for n in dtype.names:
            _remap_stored_refs(arr[n], dtype.fields[n][0], remap)
    elif h5t.is_ref(dtype):
        for index in np.ndindex(arr.shape):
            ref = h5t.Reference._from_stored(bytes(arr[index]))
            if ref:
                new = remap(ref._id)
                arr[index] = h5t.refs_to_stored([None if new is None else h5t.Reference(new)])[0]


def _copy_dataset_values(sfs, soid, dfs, doid, doc, remap=None):
    """Copies a dataset's values; with ``remap``, the references among them
    lead to the ids it gives instead."""
    from .dataset import (_COPY_SLAB_BYTES, _engine_buffer, _holds_refs, _stored_dtype,
                          _uses_records, _vlen_kind)
    shp = doc['shape']
    cls = shp.get('class')
    if cls == 'H5S_NULL':
        return
    dims = [] if cls == 'H5S_SCALAR' else [int(x) for x in shp['dims']]
    if any(d == 0 for d in dims):
        return
    dtype = h5t.hsds_to_dtype(doc['type'])
    # (Compounds with variable-length members go as records, as they are
    # stored.)
    vlen = _vlen_kind(dtype) is not None or _uses_records(dtype)
    kind = _vlen_kind(dtype)
    ref_sequences = isinstance(kind, np.dtype) and h5t.is_ref(kind)
    if remap is not None and not (h5t.is_regionref(dtype) or _holds_refs(dtype)
                                  or ref_sequences):
        remap = None
    if remap is not None and ref_sequences:
        def read_vlen(selection):
            out = []
            for v in sfs.raw.dataset_read_vlen(soid, selection):
                refs = np.frombuffer(v, dtype="S%d" % h5t._REF_BYTES).copy()
                _remap_stored_refs(refs, h5t.ref_dtype, remap)
                out.append(refs.tobytes())
            return out
    elif remap is not None and vlen:
        region = {"class": "H5T_REFERENCE", "base": "H5T_STD_REF_DSETREG"}

        def read_vlen(selection):
            return [json.dumps(_remap_json_refs(region, json.loads(v), 0, remap)).encode()
                    if v else v for v in sfs.raw.dataset_read_vlen(soid, selection)]
    else:
        def read_vlen(selection):
            return sfs.raw.dataset_read_vlen(soid, selection)

    def read(selection, shape):
        st = _stored_dtype(dtype)
        arr = np.empty(shape, dtype=st)
        buf = _engine_buffer(arr, shape, st)
        sfs.raw.dataset_read(soid, selection, buf)
        if remap is not None:
            _remap_stored_refs(arr, dtype, remap)
        return buf

    if not dims:
        if vlen:
            dfs.raw.dataset_write_vlen(doid, [], read_vlen([]))
        else:
            dfs.raw.dataset_write(doid, [], read([], ()))
        return
    # slabs along axis 0, aligned to chunks when chunked
    row = max(1, int(np.prod(dims[1:], dtype=np.int64)) * max(1, dtype.itemsize))
    step = max(1, _COPY_SLAB_BYTES // row)
    layout = (doc.get('creationProperties') or {}).get('layout') or {}
    if layout.get('dims'):
        c0 = int(layout['dims'][0])
        step = max(c0, (step // c0) * c0)
    if (remap is None or not _type_has_refs(doc['type'])) and len(dims) == 1 and _columnar(doc) \
            and _columnar(json.loads(dfs.raw.get_doc(doid))):
        # A table goes as Arrow, so that its nulls stay nulls (HDF5-shaped
        # values would make them the fill value).
        from .. import _core
        from .table import _Stream
        for start in range(0, dims[0], step):
            stop = min(dims[0], start + step)
            _core.table_write(dfs.raw, doid, _Stream(_core.table_read(sfs.raw, soid, start, stop)),
                              start)
        return
    for start in range(0, dims[0], step):
        n = min(step, dims[0] - start)
        selection = [(start, n, 1)] + [(0, d, 1) for d in dims[1:]]
        if vlen:
            dfs.raw.dataset_write_vlen(doid, selection, read_vlen(selection))
        else:
            dfs.raw.dataset_write(doid, selection, read(selection, [n] + dims[1:]))


def _columnar(doc):
    """Whether the dataset document ``doc`` is of a columnar table."""
    return (doc.get('h5lake') or {}).get('chunkFormat') == 'parquet'


# h5lake's own settings of a dataset that a copy keeps: its chunk format
# (columnar), its statistics and chunk functions, the layout it reports and
# a virtual dataset's mappings (as H5Ocopy keeps them: the copy reads its
# sources as they are then, names of "this file" meaning the copy's). Not
# where its values came from (a linked source: the copy holds them) nor
# its chunks' statistics records (the copy's chunks get their own).
_COPIED_SETTINGS = ("chunkFormat", "stats", "layout", "virtual")


def _layout_of_copy(layout):
    """The layout a copy of a dataset gets. A dataset whose values another
    file holds (an HDF5 file's opened in place, or a linked store's) is
    copied into chunks of its own, of the shape it reports: a copy keeps no
    tie to that file, which may change or go."""
    cls = layout.get('class', '')
    if not (cls.endswith('_REF') or cls.endswith('_REF_INDIRECT')):
        return layout
    if cls.startswith('H5D_CHUNKED'):
        return {'class': 'H5D_CHUNKED',
                'dims': [int(d) for d in layout.get('hyper_dims') or layout['dims']]}
    return {'class': 'H5D_CONTIGUOUS'}


def _copy_tree(sfs, soid, dfs, memo, opts, depth=0):
    """Copy object ``soid`` of store ``sfs`` into ``dfs``; returns the new id
    (objects reached twice through hard links are copied once)."""
    key = (sfs.abspath, soid)
    if key in memo:
        return memo[key]
    doc = json.loads(sfs.raw.get_doc(soid))
    remap = None
    if opts['expand_refs']:
        # HDF5's expand_refs: what a reference names is copied too (once,
        # unlinked unless the copy reaches it by a link), and the copy's
        # references lead to the copies
        def remap(oid):
            new_id = _copy_tree(sfs, oid, dfs, memo, opts, depth + 1)
            opts['pointed'].setdefault(new_id, None)
            return new_id
    elif sfs.abspath != dfs.abspath:
        # Into another store, as HDF5 copies into another file: what a
        # reference named is not there, so the copy's references are null
        # (they would lead nowhere, or to another object of the same id).
        def remap(oid):
            return None
    if soid.startswith('d-'):
        if opts['expand_refs']:
            _check_expandable(doc)
        cprops = dict(doc.get('creationProperties') or {})
        if 'layout' in cprops:
            cprops['layout'] = _layout_of_copy(cprops['layout'])
        own = {k: v for k, v in (doc.get('h5lake') or {}).items() if k in _COPIED_SETTINGS}
        if own:
            cprops['h5lake'] = own
        new = dfs.raw.create_dataset(json.dumps(doc['type']), json.dumps(doc['shape']),
                                     json.dumps(cprops))
        memo[key] = new
        if 'virtual' not in own:
            _copy_dataset_values(sfs, soid, dfs, new, doc, remap)
    elif soid.startswith('t-'):
        new = dfs.raw.create_datatype(json.dumps(doc['type']))
        memo[key] = new
    else:
        new = dfs.raw.create_group(json.dumps(doc.get('creationProperties') or {}))
        memo[key] = new
        if not (opts['shallow'] and depth >= 1):
            for lname, ljson in sfs.raw.links(soid):
                link = json.loads(ljson)
                cls = link.get('class')
                if cls == 'H5L_TYPE_HARD':
                    child = _copy_tree(sfs, link['id'], dfs, memo, opts, depth + 1)
                    dfs.raw.link_create(new, lname, _hard(child))
                    opts['linked'].add(child)
                    continue
                target = None
                if (cls == 'H5L_TYPE_SOFT' and opts['expand_soft']) or \
                        (cls == 'H5L_TYPE_EXTERNAL' and opts['expand_external']):
                    try:
                        _, tfs, toid, _n = Group(sfs, soid, None)._walk(lname)
                        target = (tfs, toid)
                    except KeyError:
                        target = None
                if target is not None:
                    child = _copy_tree(target[0], target[1], dfs, memo, opts, depth + 1)
                    dfs.raw.link_create(new, lname, _hard(child))
                    opts['linked'].add(child)
                else:
                    dfs.raw.link_create(new, lname, json.dumps(_clean_link(link)))
    if not opts['without_attrs']:
        _copy_attrs(sfs, soid, dfs, new, remap)
    return new


def _copy_object(src, parent, base, shallow=False, expand_soft=False,
                 expand_external=False, expand_refs=False, without_attrs=False):
    opts = dict(shallow=shallow, expand_soft=expand_soft, expand_external=expand_external,
                expand_refs=expand_refs, without_attrs=without_attrs,
                pointed={}, linked=set())
    sfs, dfs = src._fs, parent._fs
    sfs.check()
    new = _copy_tree(sfs, src._oid, dfs, {}, opts)
    try:
        dfs.raw.link_create(parent._oid, base, _hard(new))
    except BaseException:
        dfs.raw.delete_object(new)
        raise
    # As HDF5 does, what was copied only because a reference names it is
    # linked at the destination's root, so the tree reaches it.
    for oid in opts['pointed']:
        if oid != new and oid not in opts['linked']:
            dfs.raw.link_create(dfs.root_id, '~obj_pointed_by_' + oid, _hard(oid))
