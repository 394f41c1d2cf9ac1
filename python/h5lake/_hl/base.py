"""Common machinery of the h5py-shaped layer: shared file state, the base
class of every named object, and small helpers (h5py's ``_hl/base.py``).

Every high-level object (File, Group, Dataset, Datatype) is a light handle:
``(file state, object id, path it was opened by)``.  All handles opened from
one ``File`` share one :class:`FileState`, which owns the ``_core.RawFile``;
closing the file invalidates every handle at once (``bool(obj)`` turns
False and operations raise :class:`ClosedObjectError`, a ``ValueError``;
where h5py raises another class for an operation on a closed file, the
subclasses below are that class as well).
"""

from __future__ import annotations

import contextlib
import json
import os
import posixpath
from collections.abc import ItemsView, KeysView, Mapping, MutableMapping, ValuesView
from functools import reduce
from operator import mul

import numpy as np

from . import h5t


def product(shape):
    """Product of a shape tuple (1 for ``()``)."""
    return reduce(mul, shape, 1)


# ---------------------------------------------------------------------------
# errors for operations on closed files
# ---------------------------------------------------------------------------

_CLOSED_MSG = "Not a location (invalid object ID; file is closed)"


class ClosedObjectError(ValueError):
    """An operation on an object whose file is closed (h5py raises
    ValueError for most of them)."""


class ClosedKeyError(ClosedObjectError, KeyError):
    """Closed file, where h5py raises KeyError (``group[name]``,
    ``attrs[name]``, ``File.attrs``)."""

    def __str__(self):          # KeyError would show the repr of the message
        return ValueError.__str__(self)


class ClosedRuntimeError(ClosedObjectError, RuntimeError):
    """Closed file, where h5py raises RuntimeError (dataset reads, shape,
    ``attrs`` create/contains, ``File.flush``, ``copy``)."""


# ---------------------------------------------------------------------------
# shared per-file state
# ---------------------------------------------------------------------------

class FileState:
    """What every handle of one opened store shares."""

    def __init__(self, raw, filename, abspath, mode, allow_local_links=False):
        self.raw = raw
        self.filename = filename          # as the user gave it (h5py's f.filename)
        self.abspath = abspath            # for resolving external links
        self.mode = mode                  # 'r' or 'r+' (as h5py reports)
        self.valid = True
        self.docs = {}                    # object id -> parsed document (datasets/types)
        self.ordered = {}                 # object id -> kept in creation order?
        self.externals = {}               # abspath -> FileState opened through external links
        # A store in a bucket may be someone else's: its external links may
        # lead to other stores in buckets, but to local paths only when the
        # user said so (see the README's security section).
        self.allow_local_links = allow_local_links
        # Temporary files this state reads and writes (the copy of a
        # file-like object), removed when it closes; another process cannot
        # reopen them.
        self.scratch = None
        # Run when the state closes, after what was pending is written and
        # before the scratch files go (a file-like object is written back).
        self.on_close = None
        # Open for SWMR reading, or switched to SWMR writing.
        self.swmr = False
        # h5py's name for how a file is held, when not as a store of its
        # own: 'fileobj' (a file-like object), 'core' (in memory).
        self.driver = None
        # What the file was opened with, for its access list (h5p.PropFAID):
        # chunk cache settings and file locking, as h5py reports them.
        from ..h5p import DEFAULT_CHUNK_CACHE
        self.chunk_cache = DEFAULT_CHUNK_CACHE
        self.locking = (1, 1)
        # Access lists datasets were opened or made with, by object id.
        self.dataset_access = {}
        # The moves made through this file, (old path, new path) in order:
        # handles opened before a move report their new path, as libhdf5
        # keeps an object's name current.
        self.moves = []

    @property
    def in_place(self):
        """An HDF5 file opened in place (not a store): its objects' ids are
        made anew each time it opens, so only their paths name them."""
        return not is_url(self.abspath) and os.path.isfile(self.abspath)

    # -- validity -----------------------------------------------------------
    def check(self, exc=ClosedObjectError):
        """Raise ``exc`` (a :class:`ClosedObjectError`) if the file is closed."""
        if not self.valid:
            raise exc(_CLOSED_MSG)

    def check_writable(self, exc=ValueError, what="Unable to modify file", closed=ClosedObjectError):
        self.check(closed)
        if self.mode == 'r':
            raise exc(f"{what} (no write intent on file)")

    @property
    def root_id(self):
        self.check()
        return self.raw.root_id

    # -- documents ------------------------------------------------------------
    def doc(self, oid):
        """The object's document (cached for datasets and datatypes, whose
        type/creation properties never change; shape is refreshed by
        :meth:`forget` after a resize)."""
        self.check()
        d = self.docs.get(oid)
        if d is None:
            d = json.loads(self.raw.get_doc(oid))
            if not oid.startswith('g-'):
                self.docs[oid] = d
        return d

    def tracks_order(self, oid):
        """Whether the object keeps its links/attributes in creation order.
        That is fixed when the object is made, so the answer is kept even
        for groups, whose documents change with every link and are read
        afresh each time."""
        kept = self.ordered.get(oid)
        if kept is None:
            cp = self.doc(oid).get('creationProperties') or {}
            kept = self.ordered[oid] = bool(cp.get('CreateOrder') or cp.get('track_order'))
        return kept

    def forget(self, oid):
        self.docs.pop(oid, None)

    # -- closing ------------------------------------------------------------------
    def close(self):
        if not self.valid:
            return
        self.valid = False
        for ext in list(self.externals.values()):
            ext.close()
        self.externals.clear()
        self.docs.clear()
        self.ordered.clear()
        try:
            # Writes what is pending; a failure is the caller's to know.
            self.raw.close()
            if self.on_close is not None:
                self.on_close()
        finally:
            self.on_close = None
            if self.scratch is not None:
                self.scratch.cleanup()
                self.scratch = None

    # -- external links -------------------------------------------------------
    def open_external(self, filename, mode=None, locking=None):
        """FileState of the store an external link points to (opened in
        ``mode``, by default this file's, reporting ``locking``, by default
        this file's; cached until this file closes). KeyError if missing."""
        from .. import _core

        self.check()
        mode = mode or self.mode
        locking = locking or self.locking
        path = resolve_location(self.abspath, filename)
        if path == self.abspath and mode == self.mode and locking == self.locking:
            return self
        try:
            self.raw.check_link_target(path)
        except PermissionError as e:
            raise KeyError(f"Unable to open object (external link to {filename!r}: {e})") from None
        st = self.externals.get((path, mode, locking))
        if st is not None and st.valid:
            return st
        try:
            if not is_url(path) and os.path.isfile(path) and _core.is_hdf5(path):
                st = _linked_hdf5(path, self.allow_local_links)
            else:
                raw = _core.RawFile(path, mode, "{}", None, self.allow_local_links)
                st = FileState(raw, path, path, mode,
                               allow_local_links=self.allow_local_links)
        except (OSError, ValueError, RuntimeError) as e:
            raise KeyError(f"Unable to open object (can't open file {filename!r}: {e})") from None
        st.locking = locking
        self.externals[(path, mode, locking)] = st
        return st


def _linked_hdf5(path, allow_local_links):
    """A read-only FileState over the HDF5 file ``path``, opened in place.
    What h5lake cannot read of the file is left out and read as missing."""
    from .. import _core

    raw = _core.RawFile(path, "r", "{}", None, allow_local_links)
    skipped = raw.skipped
    if skipped:
        import warnings
        warnings.warn(f"external link to {path}: h5lake cannot read part of the file, "
                      f"which reads as missing: {'; '.join(s[3] for s in skipped)}",
                      RuntimeWarning, stacklevel=4)
    return FileState(raw, path, path, 'r', allow_local_links=allow_local_links)


def is_url(location):
    """Whether a store location is a URL (``s3://bucket/path``) rather than
    a local path (path objects never are: they would have mangled the ``//``)."""
    return isinstance(location, str) and "://" in location


# Errors the engine may word with an object's internal id.
ENGINE_ERRORS = (ValueError, TypeError, OSError, KeyError, RuntimeError)


def named(obj, e):
    """``e`` (an engine error about ``obj``) naming ``obj`` by its path
    rather than by the internal id the engine knows it by: the same type,
    the message otherwise unchanged; ``e`` itself when it names no id."""
    oid, name = getattr(obj, "_oid", None), getattr(obj, "name", None)
    text = str(e.args[0]) if len(e.args) == 1 and isinstance(e.args[0], str) else None
    if not (oid and name and text and oid in text):
        return e
    try:
        return type(e)(text.replace(oid, name)).with_traceback(e.__traceback__)
    except Exception:
        return e


@contextlib.contextmanager
def named_in_errors(obj):
    """Errors raised inside name ``obj`` by its path (see :func:`named`)."""
    try:
        yield
    except ENGINE_ERRORS as e:
        raise named(obj, e) from None


class NewStoreOrNothing:
    """Context manager for work that may create the store at ``location``:
    when the work fails, a store that did not exist before it started is
    removed again, so that a failed command leaves nothing behind (and a
    retry does not meet a half-made store)."""

    def __init__(self, location):
        self.location = os.fspath(location)

    def _exists(self):
        from .. import _core
        if is_url(self.location):
            return _core.domain_exists(self.location)
        return os.path.lexists(self.location)

    def __enter__(self):
        self.existed = self._exists()
        return self

    def __exit__(self, kind, value, tb):
        if kind is None or self.existed or not self._exists():
            return False
        from .. import _core
        if is_url(self.location):
            _core.delete_domain(self.location)
        else:
            import shutil
            shutil.rmtree(self.location, ignore_errors=True)
        return False


def absolute_location(location):
    """``location`` made absolute: URLs are already; local paths via ``os.path.abspath``."""
    return location if is_url(location) else os.path.abspath(location)


def resolve_location(base, filename):
    """Where ``filename`` (an external link's file) is, for a link in the
    store at ``base``: URLs and absolute paths as they are, relative names
    beside ``base`` (inside its bucket for an ``s3://`` base)."""
    if is_url(filename) or os.path.isabs(filename):
        return filename if is_url(filename) else os.path.normpath(filename)
    if is_url(base):
        scheme, rest = base.split("://", 1)
        bucket, _, inner = rest.partition("/")
        joined = posixpath.normpath(posixpath.join(posixpath.dirname(inner), filename))
        return f"{scheme}://{bucket}/{joined.lstrip('/')}"
    return os.path.normpath(os.path.join(os.path.dirname(base), filename))


# ---------------------------------------------------------------------------
# names & links
# ---------------------------------------------------------------------------

def to_str_name(name):
    """h5py accepts str and bytes names."""
    if isinstance(name, bytes):
        return name.decode('utf-8')
    if isinstance(name, str):
        return name
    if isinstance(name, os.PathLike):
        return os.fspath(name)
    raise TypeError(f"A name should be string or bytes, not {type(name)}")


def join_name(base, name):
    """Path of ``name`` opened from an object whose path is ``base``."""
    if name.startswith('/'):
        return posixpath.normpath('/' + name.lstrip('/')) if name.strip('/') else '/'
    if base is None:
        return None
    parts = [p for p in name.split('/') if p not in ('', '.')]
    if not parts:
        return base
    return posixpath.join(base, *parts)


# ---------------------------------------------------------------------------
# object identity
# ---------------------------------------------------------------------------

# ---------------------------------------------------------------------------
# dictionary views of groups and attributes, as h5py's: names shown as a
# list, reversible, and a link that leads nowhere is None among the values
# (what ``get`` gives), not an error halfway through a loop.
# ---------------------------------------------------------------------------

class KeysViewHDF5(KeysView):
    def __str__(self):
        return f"<KeysViewHDF5 {list(self)}>"

    __repr__ = __str__

    def __reversed__(self):
        yield from reversed(self._mapping)


class ValuesViewHDF5(ValuesView):
    def __iter__(self):
        for name in self._mapping:
            yield self._mapping.get(name)

    def __reversed__(self):
        for name in reversed(self._mapping):
            yield self._mapping.get(name)

    def __contains__(self, value):
        return any(v == value for v in self)


class ItemsViewHDF5(ItemsView):
    def __iter__(self):
        for name in self._mapping:
            yield name, self._mapping.get(name)

    def __reversed__(self):
        for name in reversed(self._mapping):
            yield name, self._mapping.get(name)

    def __contains__(self, item):
        name, value = item
        return name in self._mapping and self._mapping.get(name) == value


class MappingHDF5(Mapping):
    """``keys()``, ``values()`` and ``items()`` as h5py gives them."""

    def keys(self):
        return KeysViewHDF5(self)

    def values(self):
        return ValuesViewHDF5(self)

    def items(self):
        return ItemsViewHDF5(self)


class MutableMappingHDF5(MappingHDF5, MutableMapping):
    pass


class ObjectID:
    """A stand-in for h5py's low-level ``ObjectID``: hashable, comparable,
    ``valid`` while the file is open.  ``str(oid)`` is the HSDS object id."""

    __slots__ = ('_fs', '_oid')

    def __init__(self, fs, oid):
        self._fs = fs
        self._oid = oid

    @property
    def valid(self):
        return self._fs.valid

    @property
    def uuid(self):
        return self._oid

    def __bool__(self):
        return self._fs.valid

    def __eq__(self, other):
        return isinstance(other, ObjectID) and other._oid == self._oid

    def __hash__(self):
        return hash(self._oid)

    def __str__(self):
        return self._oid

    def __repr__(self):
        return f"<h5lake ObjectID {self._oid}>"

    def get_type(self):
        """The type of a dataset, attribute or committed type, as h5py's
        type objects (see ``h5lake.h5t``)."""
        from .. import h5t as public_h5t
        t = self._fs.doc(self._oid)["type"]
        if self._oid.startswith("t-") and isinstance(t, dict):
            t = dict(t, id=self._oid)           # the committed datatype's own type
        return public_h5t._type_object(t)


class FileID(ObjectID):
    """A file's id (its root group's) with h5py's ``FileID.get_access_plist``."""

    __slots__ = ()

    def get_access_plist(self):
        """The file's access properties (``h5p.PropFAID``): the chunk cache
        and file locking it was opened with."""
        from ..h5p import PropFAID
        self._fs.check()
        return PropFAID(self._fs.chunk_cache, self._fs.locking)


class DatasetID(ObjectID):
    """A dataset's id with HDF5's chunk queries and direct chunk read, as
    h5py's ``DatasetID`` has them (what kerchunk and other indexers use).
    Each chunk is an object of its own in h5lake: its byte offset is 0,
    the start of that object, and its size the object's.
    ``read_direct_chunk`` gives the chunk as HDF5's filters make it: the
    object itself, or, for a compressed chunk kept in HSDS's layout (a
    Blosc frame), the chunk filtered again libhdf5's way."""

    __slots__ = ()

    def get_access_plist(self):
        """The dataset's access properties (``h5p.PropDAID``): the chunk
        cache and prefixes it was made or opened with (h5py's keywords
        ``rdcc_*``, ``virtual_prefix``, ``efile_prefix``, or ``dapl``),
        else the file's chunk cache."""
        from ..h5p import PropDAID
        self._fs.check()
        got = self._fs.dataset_access.get(self._oid)
        if got is None:
            return PropDAID(self._fs.chunk_cache)
        return PropDAID(got.get_chunk_cache(), got.get_virtual_prefix(), got.get_efile_prefix())

    def get_space(self):
        """The dataset's dataspace (``h5s.SpaceID``): its class, extent and
        maximum extent (``h5s.UNLIMITED`` where it has none)."""
        from .. import h5s
        from .dataset import Dataset
        d = Dataset(self)
        if d.shape is None:
            return h5s.create(h5s.NULL)
        if d.shape == ():
            return h5s.create(h5s.SCALAR)
        return h5s.create_simple(d.shape, d.maxshape)

    def get_create_plist(self):
        """The dataset's creation properties (``h5p.PropDCID``): layout,
        chunk shape, fill value and fill time."""
        from ..h5p import PropDCID
        from .dataset import Dataset
        return PropDCID(Dataset(self))

    def _chunk_shape(self, what="Can't get number of chunks"):
        from .dataset import Dataset
        chunks = Dataset(self).chunks
        if chunks is None:
            raise RuntimeError(f"{what} (not a chunked dataset)")
        return chunks

    def _stored(self):
        self._chunk_shape()
        return self._fs.raw.dataset_stored_chunks(self._oid)

    @staticmethod
    def _info(coords, size, offset, shape):
        """h5py's StoreInfo; the byte offset is 0 for a store's chunk (an
        object of its own), the chunk's own in an HDF5 file opened in place."""
        from ..h5d import StoreInfo
        return StoreInfo(tuple(int(c) * k for c, k in zip(coords, shape)), 0,
                         0 if offset is None else int(offset), int(size))

    def get_num_chunks(self, space=None):
        """How many chunks are stored (``space`` is not supported)."""
        if space is not None:
            raise NotImplementedError("counting the chunks of a selection is not supported")
        return len(self._stored())

    def get_chunk_info(self, index, space=None):
        """``StoreInfo`` of the ``index``-th stored chunk, in order of the
        chunks' coordinates."""
        if space is not None:
            raise NotImplementedError("chunk info within a selection is not supported")
        chunks = self._stored()
        if not 0 <= index < len(chunks):
            raise ValueError("Chunk index is out of range (chunk index is out of range)")
        return self._info(*chunks[index], self._chunk_shape())

    def get_chunk_info_by_coord(self, chunk_offset):
        """``StoreInfo`` of the chunk holding the element at
        ``chunk_offset``; offset None and size 0 when it was never written."""
        from ..h5d import StoreInfo
        coords = tuple(int(o) // k for o, k in zip(chunk_offset, self._chunk_shape()))
        for c, size, offset in self._stored():
            if tuple(c) == coords:
                return StoreInfo(tuple(int(o) for o in chunk_offset), 0,
                                 0 if offset is None else int(offset), int(size))
        return StoreInfo(None, 0, None, 0)

    def chunk_iter(self, callback):
        """Calls ``callback(StoreInfo)`` for every stored chunk, in order."""
        shape = self._chunk_shape()
        for coords, size, offset in self._stored():
            callback(self._info(coords, size, offset, shape))

    def get_storage_size(self):
        """Bytes the stored chunks take (of a dataset that is not chunked,
        the objects that hold its values); of a contiguous dataset of an
        HDF5 file opened in place, the bytes the file allocated to it (0 if
        none)."""
        contiguous = self._contiguous_in_file()
        if contiguous is not None:
            return contiguous[1]
        from .dataset import Dataset
        if Dataset(self).chunks is not None:
            return sum(int(size) for _, size, _ in self._stored())
        return self._fs.raw.dataset_storage_size(self._oid)

    def get_offset(self):
        """Byte offset of a contiguous dataset's values in the HDF5 file
        opened in place (what kerchunk indexes); None for a chunked,
        unallocated or compact dataset, and for any dataset of a store
        (whose values are objects of their own, not bytes of one file)."""
        contiguous = self._contiguous_in_file()
        return None if contiguous is None or contiguous[1] == 0 else contiguous[0]

    def _contiguous_in_file(self):
        """(offset, size) of a contiguous dataset's values in the HDF5 file
        opened in place ((None, 0) when the file allocated none); None for
        every other dataset."""
        from .dataset import Dataset
        self._fs.check()
        path = self._fs.raw.path
        if not os.path.isfile(path) or Dataset(self).chunks is not None:
            return None
        layout = (Dataset(self)._doc.get('creationProperties') or {}).get('layout') or {}
        if layout.get('class') == 'H5D_CONTIGUOUS_REF' and \
                layout.get('file_uri') == os.path.realpath(path):
            return int(layout['offset']), int(layout['size'])
        if layout.get('class') == 'H5D_CONTIGUOUS':
            return None, 0          # never written: the file holds no bytes of it
        return None

    def read_direct_chunk(self, offsets, dxpl=None, out=None):
        """``(filter_mask, bytes)``: the chunk starting at element
        ``offsets`` as stored, its filters' output (into ``out``, a
        writable buffer, when given: then a memoryview of it)."""
        shape = self._chunk_shape("Can't get storage size of chunk")
        offsets = tuple(int(o) for o in offsets)
        if len(offsets) != len(shape) or any(o % k for o, k in zip(offsets, shape)):
            raise OSError("Can't read unprocessed chunk data (offset doesn't fall on "
                          "chunks's boundary)")
        data = self._fs.raw.dataset_stored_chunk(self._oid, [o // k for o, k in zip(offsets, shape)])
        if data is None:
            raise RuntimeError("Can't get storage size of chunk (chunk storage is not allocated)")
        if out is None:
            return 0, data
        view = memoryview(out).cast("B")
        if len(view) < len(data):
            raise ValueError("Output buffer of %d bytes is too small for the chunk's %d"
                             % (len(view), len(data)))
        view[:len(data)] = data
        return 0, view[:len(data)]

    def write_direct_chunk(self, offsets, data, filter_mask=0x00000000, dxpl=None):
        """Writes the chunk starting at element ``offsets`` from ``data``:
        its bytes as the dataset's filters make them, all of them applied
        (``filter_mask`` 0). The bytes are decoded, so the chunk's
        statistics are kept, and stored as the dataset stores chunks."""
        shape = self._chunk_shape("Can't write unprocessed chunk data")
        offsets = tuple(int(o) for o in offsets)
        if len(offsets) != len(shape) or any(o % k for o, k in zip(offsets, shape)):
            raise OSError("Can't write unprocessed chunk data (offset doesn't fall on "
                          "chunks's boundary)")
        if filter_mask:
            raise ValueError("write_direct_chunk takes chunks with every filter applied "
                             f"(filter_mask 0), not filter_mask {filter_mask:#x}")
        self._fs.check_writable(OSError, "Can't write unprocessed chunk data")
        self._fs.raw.dataset_write_hdf5_chunk(self._oid, [o // k for o, k in zip(offsets, shape)],
                                              bytes(memoryview(data).cast("B")))


#: The name of an object opened by reference: found when first asked for
#: (a walk of the store), not on every dereference.
BY_REFERENCE = object()


class HLObject:
    """Base of the named objects (h5py's ``HLObject``)."""

    #: The kind of object ids this class binds ('g', 'd', 't'; None: any).
    _ID_KIND = None

    def __init__(self, fs, oid=None, name=None):
        if oid is None and isinstance(fs, ObjectID):
            # h5py's Group(gid) / Dataset(dsid): bind a low-level id.
            bind = fs
            if self._ID_KIND is not None and not bind._oid.startswith(self._ID_KIND + '-'):
                raise ValueError("%s cannot be bound to the identifier of another kind "
                                 "of object (%s)" % (type(self).__name__, bind._oid))
            fs, oid, name = bind._fs, bind._oid, BY_REFERENCE
        self._fs = fs
        self._oid = oid
        self._given_name = name
        self._moves_seen = len(getattr(fs, 'moves', ()))

    @property
    def _name(self):
        moves = getattr(self._fs, 'moves', ())
        if self._given_name is BY_REFERENCE:
            from .group import path_to
            self._given_name = path_to(self._fs, self._oid)
            self._moves_seen = len(moves)     # (found as the tree is now)
        seen = getattr(self, '_moves_seen', len(moves))
        if seen < len(moves) and isinstance(self._given_name, str):
            name = self._given_name
            for old, new in moves[seen:]:
                if name == old or name.startswith(old.rstrip('/') + '/'):
                    name = new + name[len(old):]
            if not self._leads_here(name):
                # Unlinked since, or moved in a way paths alone do not
                # follow: the path that leads to it now, if any (as libhdf5
                # names an object whose path went away).
                from .group import path_to
                name = path_to(self._fs, self._oid)
            self._given_name = name
        self._moves_seen = len(moves)
        return self._given_name

    def _leads_here(self, name):
        """Whether the path ``name`` leads to this object in its file."""
        from .group import Group
        try:
            _, fs, oid, _n = Group(self._fs, self._fs.root_id, '/')._walk(name)
        except (KeyError, ValueError, OSError):
            return False
        return fs is self._fs and oid == self._oid

    # -- identity -------------------------------------------------------------
    @property
    def id(self):
        return ObjectID(self._fs, self._oid)

    @property
    def _raw(self):
        self._fs.check()
        return self._fs.raw

    @property
    def file(self):
        """The File this object lives in."""
        from .files import File
        self._fs.check()
        return File._from_state(self._fs)

    @property
    def name(self):
        """Path by which this object was opened (None if closed, or anonymous
        and linked nowhere yet)."""
        if not self._fs.valid:
            return None
        if self._given_name is None:
            # An anonymous object is named once a group links it, as HDF5
            # looks a path up for it.
            from .group import path_to
            found = path_to(self._fs, self._oid)
            if found is not None:
                self._given_name = found
            return found
        return self._name

    @property
    def parent(self):
        """The group containing this object (by its opening path)."""
        self._fs.check()
        if self._name is None:
            raise ValueError("Parent of an anonymous object is undefined")
        ppath = posixpath.dirname(self._name) or '/'
        return self.file[ppath]

    @property
    def attrs(self):
        """Attributes of this object (h5py gives the manager even when the
        file is closed; using it then raises)."""
        from .attrs import AttributeManager
        return AttributeManager(self)

    @property
    def ref(self):
        """An object reference to this object (h5py's ``obj.ref``)."""
        from .h5t import Reference
        self._fs.check()
        return Reference(self._oid)

    def _track_order(self):
        """Whether attributes/links are kept in creation order."""
        try:
            return self._fs.tracks_order(self._oid)
        except KeyError:
            return False

    def __bool__(self):
        return self._fs.valid

    def __eq__(self, other):
        if isinstance(other, HLObject):
            return self._oid == other._oid
        return NotImplemented

    def __ne__(self, other):
        r = self.__eq__(other)
        return r if r is NotImplemented else not r

    def __hash__(self):
        return hash(self._oid)

    # -- pickling -------------------------------------------------------------
    # A handle pickles as where its object is: (store location, object id,
    # path, mode); unpickling opens the store afresh (each unpickled handle
    # has its own, closed when the last handle of it goes). A read-only
    # handle just pickles. A writable one refuses unless the user chose,
    # with picklable(), what the receiver gets: write access should not
    # reach another process by accident.

    #: None: the default rule; False/True: set by :meth:`picklable`.
    _pickle_writable = None

    def picklable(self, writable=False):
        """This object, as a handle that pickles (for ``multiprocessing``,
        ``concurrent.futures.ProcessPoolExecutor``, ``pickle.dumps``).

        Any h5lake object (File, Group, Dataset, Datatype) pickles as its
        store's location (absolute path or ``s3://`` URL), its object id and
        path; unpickling reopens the store in the receiving process, where
        reading gives the same data. S3 credentials come from the receiver's
        environment, as for any ``s3://`` open.

        An object of a read-only file pickles as it is, read-only. An object
        of a writable file (mode ``r+``, ``w``, ``a``, ...) refuses to pickle
        (``TypeError``) unless passed through this method:
        ``obj.picklable()`` pickles it read-only, and
        ``obj.picklable(writable=True)`` pickles it writable (reopened in mode
        ``r+`` -- never truncated). The handle returned is the same object
        (``==`` it, usable like it); only its pickling differs.
        """
        self._fs.check()
        _check_reopenable(self)
        if writable and self._fs.mode == 'r':
            raise ValueError(f"{_what(self)} is in a file opened read-only; it cannot be "
                             "pickled writable (open the file with mode 'r+' for that)")
        handle = object.__new__(type(self))
        handle.__dict__.update(self.__dict__)
        handle._pickle_writable = bool(writable)
        return handle

    def __reduce__(self):
        args = _pickle_args(self)
        # The receiver reopens the store: what this process has pending
        # must be in it.
        if self._fs.mode != 'r':
            self._fs.raw.flush()
        return _unpickle, args

    # copy.copy/deepcopy would otherwise reopen the store through
    # __reduce__; as in h5py, a handle is not copied.
    def __copy__(self):
        raise TypeError("h5lake objects cannot be copied (open the object again, "
                        "or pickle it to hand it to another process)")

    def __deepcopy__(self, memo):
        self.__copy__()


def _what(obj):
    """How an error names ``obj``: its class and path (a File: its store)."""
    from .files import File
    name = obj._fs.filename if isinstance(obj, File) else obj._given_name
    name = '' if name is BY_REFERENCE or name is None else f" {name!r}"
    return f"h5lake {type(obj).__name__}{name}"


def _check_reopenable(obj):
    if obj._fs.scratch is not None:
        # A file-like object's copy, which only this process has.
        raise TypeError(f"cannot pickle {_what(obj)}: it is in a file-like object, which "
                        "another process cannot reopen; pickle an object of a store or file")


def _pickle_args(obj):
    """What :func:`_unpickle` needs to open ``obj`` again (see HLObject.picklable)."""
    fs = obj._fs
    if not fs.valid:
        raise TypeError(f"cannot pickle a closed {_what(obj)} (its file is closed)")
    _check_reopenable(obj)
    writable = obj._pickle_writable
    if writable is None:
        if fs.mode != 'r':
            raise TypeError(
                f"cannot pickle {_what(obj)}: its file is open for writing, and the "
                f"receiving process would get write access to {fs.abspath}. Pickle "
                "obj.picklable() to send it read-only, or obj.picklable(writable=True) "
                "to send it writable")
        writable = False
    from .files import File
    name = obj._given_name
    by_reference = name is BY_REFERENCE
    oid = obj._oid
    if fs.in_place and not isinstance(obj, File):
        if by_reference or name is None:
            raise TypeError(f"cannot pickle {_what(obj)}: it has no path in the HDF5 file "
                            f"{fs.abspath}, which is opened in place (its objects are found "
                            "again by path); load the file into a store to pickle it")
        oid = None
    return (fs.abspath, oid, None if by_reference else name, 'r+' if writable else 'r',
            fs.allow_local_links, isinstance(obj, File), by_reference)


def _unpickle(location, oid, name, mode, allow_local_links, is_file, by_reference):
    """Reopen a pickled object: its store, then the object by id (ids
    survive renames, and anonymous objects have no path)."""
    from .files import File
    from .group import _make_object

    f = File(location, mode, allow_local_links=allow_local_links)
    obj = f
    if not is_file and oid is None:
        # An object of an HDF5 file opened in place, found by its path.
        try:
            obj = f[name]
        except KeyError:
            f.close()
            raise KeyError(f"Unable to unpickle object {name}: it is no longer in "
                           f"{location}") from None
    elif not is_file:
        fs = f._fs
        try:
            fs.doc(oid)
        except KeyError:
            f.close()
            raise KeyError(f"Unable to unpickle object {name or oid}: it is no longer in "
                           f"{location}") from None
        obj = _make_object(fs, oid, BY_REFERENCE if by_reference else name)
        if not by_reference and name is not None and not obj._leads_here(name):
            # Moved since it was pickled: named by where it is now.
            obj._given_name = BY_REFERENCE
    if mode != 'r':
        # Sent writable by choice: it may be passed on as it came (dask
        # rebuilds and re-sends the objects of its graphs).
        obj._pickle_writable = True
    return obj


# ---------------------------------------------------------------------------
# data preparation helpers (h5py's base.find_item_type / guess_dtype)
# ---------------------------------------------------------------------------

def find_item_type(data):
    """Common Python type of the items of a (nested) list/tuple or object
    array; None when mixed or when the array has a real dtype."""
    if isinstance(data, np.ndarray):
        if (data.dtype.kind == 'O'
                and not h5t.check_string_dtype(data.dtype)
                and not h5t.check_vlen_dtype(data.dtype)):
            item_types = {type(e) for e in data.flat}
        else:
            return None
    elif isinstance(data, (list, tuple)):
        item_types = {find_item_type(e) for e in data}
    else:
        return type(data)
    if len(item_types) != 1:
        return None
    return item_types.pop()


def guess_dtype(data):
    item_type = find_item_type(data)
    if item_type is bytes:
        return h5t.string_dtype(encoding='ascii')
    if item_type is str:
        return h5t.string_dtype()
    if item_type is h5t.Reference:
        return h5t.ref_dtype
    if item_type is h5t.RegionReference:
        return h5t.regionref_dtype
    return None


def array_for_new_object(data, specified_dtype=None):
    """Prepare an array from data used to create a new dataset or attribute."""
    if specified_dtype is not None:
        specified_dtype = np.dtype(specified_dtype)
    if isinstance(data, np.ndarray) and data.dtype.kind == 'T':
        # NumPy's variable-width strings (StringDType): variable-length
        # UTF-8 strings, as h5py stores them.
        data = data.astype(object)
        if specified_dtype is None or specified_dtype.kind == 'T':
            specified_dtype = h5t.string_dtype()
    if specified_dtype is not None and specified_dtype.kind == 'f' and specified_dtype.itemsize == 2:
        as_dtype = specified_dtype
    elif not isinstance(data, np.ndarray) and specified_dtype is not None:
        as_dtype = specified_dtype
    else:
        as_dtype = guess_dtype(data)
    data = np.asarray(data, order='C', dtype=as_dtype)
    if as_dtype is not None:
        data = data.view(dtype=as_dtype)
    return data


def is_empty(obj):
    return isinstance(obj, h5t.Empty)


#: h5py's name for it here.
Empty = h5t.Empty


def is_empty_dataspace(obj):
    """Whether a dataset or attribute (or its ``.id``) has a null dataspace:
    no shape and no values (h5py's ``Empty``)."""
    if isinstance(obj, ObjectID):
        doc = obj._fs.doc(obj._oid)
        return (doc.get("shape") or {}).get("class") == "H5S_NULL"
    return getattr(obj, "shape", ()) is None


def is_hdf5(fname):
    """Whether ``fname`` is an h5lake store or an HDF5 file (h5py's
    ``is_hdf5``: False for what does not exist)."""
    from .transfer import is_hdf5 as check
    return check(fname)
