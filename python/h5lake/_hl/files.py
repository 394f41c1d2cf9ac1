"""Files (h5py's ``_hl/files.py``): ``File`` opens an h5lake store — a
local directory holding one HSDS (schema v2) domain, or a domain in an S3
bucket (``s3://bucket/path/name.h5``) — through ``_core.RawFile`` and is the
root group of it."""

from __future__ import annotations

import atexit
import json
import operator
import os
import warnings
import weakref

try:
    from .. import _core
except ImportError as _e:  # extension not built: the pure-Python modules stay importable
    _core = None
    _core_error = _e
from .base import ClosedKeyError, ClosedRuntimeError, FileState, absolute_location, is_url

#: Whether HDF5's direct I/O file driver is available (h5py's flag): h5lake
#: stores are not files under a driver, and its HDF5 library is built
#: without it.
direct_vfd = False
from .group import Group

_MODES = ('r', 'r+', 'w', 'w-', 'x', 'a')

# h5py File() keywords that have no meaning for an h5lake store; accepted
# (so that code written for h5py runs) and ignored.
_ACCEPTED_KWDS = frozenset((
    'rdcc_nbytes',  # the decoded-chunk cache budget, as in h5py
    'allow_local_links',  # h5lake's: a store in a bucket may link to local files
    'durable',  # h5lake's: each change durable when its call returns
    'swmr',  # SWMR reading (mode 'r'): swmr_mode reports it
    'backing_store',  # with driver='core': False keeps the file in a scratch store
    'libver',  # checked and reported as h5py does; a store has no format versions
    'userblock_size',  # kept in the store, written by `h5lake get`
))
_IGNORED_KWDS = frozenset((
    'driver', 'block_size', 'rdcc_nslots',
    'rdcc_w0', 'track_times', 'fs_strategy', 'fs_persist', 'fs_threshold',
    'fs_page_size', 'page_buf_size', 'min_meta_keep', 'min_raw_keep', 'locking',
    'alignment_threshold', 'alignment_interval', 'meta_block_size',
))


class File(Group):
    """An h5lake store opened like an HDF5 file.

    An HDF5 file (``data.h5`` written by h5py or libhdf5) opens too, read-only
    and in place: its structure is read into memory when it opens and its
    values are read from the file when asked for. Writing modes are refused
    for an HDF5 file; ``h5lake load`` brings one into a store. A file-like
    object holding an HDF5 file works in every mode (h5py's ``fileobj``
    driver): it is copied to a temporary file as it opens, and what is
    written goes back into it as an HDF5 file at ``flush()``/``close()``.

    mode: ``r`` read-only, file must exist (default); ``r+`` read/write, must
    exist; ``w`` create, truncate if exists; ``w-``/``x`` create, fail if
    exists; ``a`` read/write if exists, create otherwise.

    Durability: changes to groups, attributes and small datasets are kept
    in memory and written to the store together at ``flush()``, ``close()``
    (also when the program exits or the handle is collected), or when
    pending changes pass 64 MiB or 50,000 objects -- as HDF5 keeps its
    metadata cache. A crash of the program (kill -9) loses what was not
    flushed and never leaves the store inconsistent (the README says what
    a power loss can do without fsync). ``durable=True`` (or
    ``H5LAKE_DURABLE=1``) makes each change durable before its call
    returns instead, at the cost of speed.

    Pickling (``multiprocessing``, ``ProcessPoolExecutor``): a File, Group or
    Dataset of a read-only file pickles as (store location, object, mode)
    and reopens read-only in the receiver. One of a writable file refuses
    (``TypeError``); ``obj.picklable()`` sends it read-only and
    ``obj.picklable(writable=True)`` writable (see ``HLObject.picklable``).
    """

    def __init__(self, name, mode='r', track_order=None, **kwds):
        unknown = set(kwds) - _IGNORED_KWDS - _ACCEPTED_KWDS
        if unknown:
            raise TypeError("File() got an unexpected keyword argument %r" % sorted(unknown)[0])
        if mode is None:
            mode = 'r'
        if mode not in _MODES:
            raise ValueError("Invalid mode; must be one of r, r+, w, w-, x, a")
        if track_order not in (None, True, False):
            raise TypeError("track_order must be either True or False")
        from .config import default_track_order
        track_order = default_track_order(track_order)
        if _core is None:
            raise ImportError("h5lake._core (the Rust extension) is not available: %s" % _core_error)
        libver = _libver_bounds(kwds.get('libver'))
        userblock = _userblock_size(kwds.get('userblock_size'), mode)
        from ..h5p import locking_props, DEFAULT_CHUNK_CACHE
        locking = locking_props(kwds.get('locking'))
        chunk_cache = tuple(d if kwds.get(k) is None else t(kwds[k]) for k, d, t in zip(
            ('rdcc_nslots', 'rdcc_nbytes', 'rdcc_w0'), DEFAULT_CHUNK_CACHE, (int, int, float)))
        if hasattr(name, 'read') and hasattr(name, 'seek'):
            fs = _fileobj_state(name, mode, track_order)
            fs.chunk_cache, fs.locking, fs.libver = chunk_cache, locking, libver
            _OPEN.add(fs)
            Group.__init__(self, fs, fs.raw.root_id, '/')
            return
        if isinstance(name, bytes):
            name = name.decode('utf-8')
        name = os.fspath(name)
        if kwds.get('driver') == 'core' and not kwds.get('backing_store', True):
            fs = _memory_state(name, mode, track_order)
            fs.chunk_cache, fs.locking, fs.libver = chunk_cache, locking, libver
            _OPEN.add(fs)
            Group.__init__(self, fs, fs.raw.root_id, '/')
            return
        if mode == 'w' and _is_open(name):
            # (As HDF5: truncating would pull the store from under the
            # other handle, whose pending changes would then be lost.)
            raise OSError("Unable to synchronously create file (unable to truncate a file "
                          "which is already open)")
        root_props = {'CreateOrder': 1} if track_order else {}
        if userblock:
            # (The user block itself: zeros, as HDF5 leaves it, until `get`
            # writes it into an HDF5 file.)
            root_props[_USERBLOCK_KEY] = '00' * userblock
        cache = kwds.get('rdcc_nbytes')
        allow_local = bool(kwds.get('allow_local_links',
                                    os.environ.get('H5LAKE_ALLOW_LOCAL_LINKS') == '1'))
        durable = kwds.get('durable')
        if durable is None:
            durable = os.environ.get('H5LAKE_DURABLE') == '1'
        if mode in ('w-', 'x') and not is_url(name) and os.path.lexists(name) \
                and not (os.path.isdir(name) and not os.listdir(name)):
            # (Anything there, a dangling symlink too, as libhdf5's O_EXCL
            # finds it; an empty directory is where a store may be made.)
            raise FileExistsError(17, "Unable to synchronously create file (file exists)", name)
        if mode not in ('r', 'r+') and not is_url(name) and not os.path.lexists(name):
            parent = os.path.dirname(os.path.abspath(os.fspath(name)))
            if not os.path.isdir(parent):
                # (As HDF5: a store is made in a directory that exists; a
                # typo in the path is not made into new directories.)
                raise FileNotFoundError(2, "Unable to synchronously create file (unable to "
                                        f"open file: no directory {parent!r})", name)
        creating = mode != 'a' or not is_url(name) and not _holds_store(name)
        try:
            raw = _core.RawFile(name, mode, json.dumps(root_props),
                                None if cache is None else int(cache), allow_local, bool(durable))
        except FileNotFoundError:
            if mode in ('r', 'r+') and os.path.isdir(name):
                raise IsADirectoryError(21, "Unable to synchronously open file (a directory "
                                        "that holds no h5lake store)", name) from None
            raise
        skipped = raw.skipped
        if skipped:
            # An HDF5 file opened in place: name what it holds that h5lake
            # could not open, rather than let it look absent.
            _warn_skipped(name, skipped, stacklevel=3)
        fs = FileState(raw, name, absolute_location(name), 'r' if raw.readonly else 'r+',
                       allow_local_links=allow_local)
        fs.libver = libver
        if userblock is not None and mode == 'a' and not creating:
            had = _userblock_of(fs, raw.root_id)
            if had != userblock:
                raw.close()
                raise ValueError(f"Requested userblock size ({userblock}) does not match that "
                                 f"of existing file ({had})")
        # SWMR: a store's writes already reach its readers whole; a reader
        # sees what a writer flushed once it refreshes its datasets.
        fs.swmr = bool(kwds.get('swmr')) and mode == 'r'
        fs.chunk_cache, fs.locking = chunk_cache, locking
        _OPEN.add(fs)
        Group.__init__(self, fs, raw.root_id, '/')

    @property
    def skipped_objects(self):
        """For an HDF5 file opened in place: what h5lake could not open, as
        ``{"path", "part", "reason"}`` dicts (``part`` None when the whole
        object is left out); empty for a store."""
        self._fs.check()
        return [{"path": p, "part": part, "reason": why} for p, part, why, _ in self._fs.raw.skipped]

    @classmethod
    def _from_state(cls, fs):
        self = cls.__new__(cls)
        Group.__init__(self, fs, fs.raw.root_id, '/')
        return self

    # -- properties -------------------------------------------------------------
    @property
    def file(self):
        return self

    @property
    def id(self):
        """The file's id (h5py's ``FileID``): ``get_access_plist()``."""
        from .base import FileID
        return FileID(self._fs, self._oid)

    @property
    def filename(self):
        """The store's path (or ``s3://`` URL) as given when opening it."""
        if not self._fs.valid:
            raise ValueError("Not a file or file object (not a file or file object)")
        return self._fs.filename

    @property
    def mode(self):
        """'r' (read-only) or 'r+' (read/write)."""
        if not self._fs.valid:
            raise ValueError("Invalid file identifier (identifier is not of specified type)")
        return self._fs.mode

    @property
    def attrs(self):
        """Attributes of the root group (KeyError once closed, as in h5py)."""
        from .attrs import AttributeManager
        self._fs.check(ClosedKeyError)
        return AttributeManager(self)

    @property
    def driver(self):
        self._fs.check()
        return self._fs.driver or 'h5lake'

    @property
    def libver(self):
        """The format version bounds the file was opened with, as h5py
        reports them (a store has no format versions: they change
        nothing)."""
        self._fs.check()
        return getattr(self._fs, 'libver', None) or _libver_bounds(None)

    @property
    def userblock_size(self):
        """The size of the user block: of an HDF5 file opened in place, of
        the one ``load`` kept or ``userblock_size=`` asked for in a store
        (``h5lake get`` writes it into the HDF5 file)."""
        self._fs.check()
        return _userblock_of(self._fs, self._oid)

    @property
    def swmr_mode(self):
        """Whether the file is open for SWMR reading (``swmr=True``) or a
        writer switched SWMR writing on."""
        self._fs.check()
        return self._fs.swmr

    @swmr_mode.setter
    def swmr_mode(self, value):
        """Switches SWMR writing on (h5py's ``f.swmr_mode = True``): what is
        pending is written, and from then on what the writer flushes
        (``dset.flush()``, ``f.flush()``) readers see after ``refresh()``."""
        self._fs.check()
        if not value:
            raise ValueError("It is not possible to forcibly switch SWMR mode off.")
        self._fs.check_writable(ValueError, "Unable to start swmr writing")
        self._fs.raw.flush()
        self._fs.swmr = True

    @property
    def meta_block_size(self):
        self._fs.check()
        return 2048

    # -- lifecycle -------------------------------------------------------------------
    def close(self):
        """Close the file; every object opened from it becomes invalid."""
        self._fs.close()

    @property
    def durable(self):
        """Whether each change is durable when its call returns (``durable=True``)
        rather than at ``flush()``/``close()``."""
        self._fs.check()
        return self._fs.raw.durable

    def flush(self):
        """Make all changes durable (write what is pending to the store; a
        file-like object gets the HDF5 file as it now is)."""
        self._fs.check(ClosedRuntimeError)
        self._fs.raw.flush()
        if self._fs.on_close is not None:
            self._fs.on_close()

    def __enter__(self):
        return self

    def __exit__(self, *args):
        if self._fs.valid:
            self.close()

    def __repr__(self):
        if not self._fs.valid:
            return '<Closed HDF5 file>'
        return '<HDF5 file "%s" (mode %s)>' % (os.path.basename(self.filename.rstrip('/')), self.mode)


def _fileobj_state(fileobj, mode, track_order):
    """FileState of a file-like object holding an HDF5 file (h5py's
    ``fileobj`` driver): its bytes are copied to a temporary file, read in
    place for mode ``r``, else brought into a temporary store whose HDF5
    export is written back to the object at ``flush()`` and ``close()``."""
    import shutil
    import tempfile

    from .transfer import get, load

    fileobj.seek(0)
    data = fileobj.read()
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise TypeError("a file-like object for File must be opened in binary mode")
    scratch = tempfile.TemporaryDirectory(prefix="h5lake-fileobj-")
    try:
        h5 = os.path.join(scratch.name, "file.h5")
        store = os.path.join(scratch.name, "store.h5l")
        if data:
            with open(h5, "wb") as out:
                out.write(data)
        exists = bool(data)
        if exists and mode in ('w-', 'x'):
            raise FileExistsError(17, "Unable to synchronously create file (file exists)")
        reads = mode in ('r', 'r+') or mode == 'a' and exists     # 'w' truncates
        if reads and not (exists and _core.is_hdf5(h5)):
            raise OSError("Unable to synchronously open file (file signature not found)")
        if mode == 'r':
            raw = _core.RawFile(h5, 'r')
            if raw.skipped:
                _warn_skipped(repr(fileobj), raw.skipped, stacklevel=4)
        else:
            # (load refuses, naming what, when the store cannot hold it all.)
            fill = (lambda st: load(h5, st)) if exists and mode in ('r+', 'a') else None
            raw = _scratch_raw(store, fill, track_order)
    except BaseException:
        scratch.cleanup()
        raise
    # named as h5py names it (the object's repr)
    fs = FileState(raw, repr(fileobj), h5 if raw.readonly else store,
                   'r' if raw.readonly else 'r+')
    fs.scratch = scratch
    fs.driver = 'fileobj'
    if not raw.readonly:
        def write_back():
            out = os.path.join(scratch.name, "out.h5")
            get(store, out, force=True)
            fileobj.seek(0)
            if hasattr(fileobj, 'truncate'):
                fileobj.truncate()
            with open(out, "rb") as src:
                shutil.copyfileobj(src, fileobj)
            if hasattr(fileobj, 'flush'):
                fileobj.flush()
        fs.on_close = write_back
    return fs


def _scratch_raw(store, fill, track_order):
    """The scratch store at ``store`` opened read/write: made by
    ``fill(store)`` when given, else new."""
    if fill is not None:
        fill(store)
        return _core.RawFile(store, 'r+')
    props = {'CreateOrder': 1} if track_order else {}
    return _core.RawFile(store, 'w', json.dumps(props))


def _is_open(name):
    """Whether this process has the store at ``name`` open."""
    loc = absolute_location(name)
    return any(fs.valid and fs.scratch is None and fs.abspath == loc for fs in list(_OPEN))


def _warn_skipped(name, skipped, stacklevel):
    """Says what of the HDF5 file ``name`` opened in place h5lake cannot
    open: whole objects (left out) and parts of objects (read as the
    sentence of each says)."""
    whole = [s[3] for s in skipped if s[1] is None]
    parts = [s[3] for s in skipped if s[1] is not None]
    said = []
    if whole:
        said.append("%d object(s) cannot be opened with h5lake and are left out:\n  %s"
                    % (len(whole), "\n  ".join(whole)))
    if parts:
        said.append("%d part(s) of objects cannot be read:\n  %s"
                    % (len(parts), "\n  ".join(parts)))
    warnings.warn("%s (an HDF5 file): %s" % (name, "\n".join(said)), UserWarning,
                  stacklevel=stacklevel)


def _memory_state(name, mode, track_order):
    """FileState of h5py's in-memory file (``driver='core',
    backing_store=False``): a scratch store, removed at ``close()``, that
    starts as a copy of what ``name`` holds when the mode reads it; nothing
    is ever written to ``name``."""
    import shutil
    import tempfile

    from .transfer import is_hdf5, load

    exists = os.path.exists(name)
    if mode == 'r':
        # Nothing is written: the file itself, read-only.
        fs = FileState(_core.RawFile(name, 'r'), name, absolute_location(name), 'r')
        fs.driver = 'core'
        return fs
    # ('w-' and 'x' make a new file in memory even where one exists: nothing
    # is written to its name, as with h5py.)
    if not exists and mode == 'r+':
        raise FileNotFoundError(2, "Unable to synchronously open file (no such file)", name)
    scratch = tempfile.TemporaryDirectory(prefix="h5lake-core-")
    try:
        store = os.path.join(scratch.name, "store.h5l")
        fill = None
        if exists and mode in ('r+', 'a'):
            if os.path.isdir(name):
                fill = lambda st: shutil.copytree(name, st)  # noqa: E731
            elif is_hdf5(name):
                fill = lambda st: load(name, st)  # noqa: E731
            else:
                raise OSError("Unable to synchronously open file (file signature not found)")
        raw = _scratch_raw(store, fill, track_order)
    except BaseException:
        scratch.cleanup()
        raise
    fs = FileState(raw, name, store, 'r+')
    fs.scratch = scratch
    fs.driver = 'core'
    return fs


#: Every open file's state, closed (so written) when the program exits, as
#: h5py closes its files.
_OPEN = weakref.WeakSet()


@atexit.register
def _close_all():
    for fs in list(_OPEN):
        try:
            fs.close()
        except Exception as e:  # noqa: BLE001 - nobody else is left to tell
            import sys
            print(f"h5lake: could not write pending changes to {fs.filename}: {e}", file=sys.stderr)


# The format versions h5py names, and what 'latest' is (HDF5 2.0's).
_LIBVERS = ('earliest', 'v108', 'v110', 'v112', 'v114', 'v200')


def _libver_bounds(libver):
    """``(low, high)`` as h5py's ``File.libver`` reports ``libver=``: a
    name is the low bound (the high one the latest), a pair both;
    'latest' is named as the version it is."""
    if libver is None:
        return ('earliest', _LIBVERS[-1])
    if isinstance(libver, str):
        low, high = libver, 'latest'
    else:
        try:
            low, high = libver
        except TypeError:
            raise TypeError(f"libver must be a version name or a (low, high) pair, "
                            f"not {libver!r}") from None
        except ValueError:
            raise ValueError(f"libver must be a version name or a (low, high) pair, "
                             f"not {libver!r}") from None
    names = {n: i for i, n in enumerate(_LIBVERS)}
    names['latest'] = len(_LIBVERS) - 1
    for v in (low, high):
        if v not in names:
            raise KeyError(f"{v!r} is not a library version; use one of "
                           f"{', '.join(_LIBVERS + ('latest',))}")
    if names[low] > names[high] or high == 'earliest':
        raise ValueError("Invalid (low,high) combination of library version bound")
    return (_LIBVERS[names[low]], _LIBVERS[names[high]])


# The root group's creation property a store keeps its user block in (as
# `h5lake load` keeps an HDF5 file's), as hex.
_USERBLOCK_KEY = 'h5lake_userblock'

# User blocks a store keeps at most (as `load` does: a document is no place
# for a big one).
_USERBLOCK_MAX = 64 << 10


def _holds_store(path):
    """Whether the local ``path`` holds something opening in mode 'a' opens
    rather than makes."""
    return os.path.lexists(path) and not (os.path.isdir(path) and not os.listdir(path))


def _userblock_size(size, mode):
    """``userblock_size=`` checked as HDF5 checks it (None: not given)."""
    if size is None:
        return None
    size = operator.index(size)
    if mode in ('r', 'r+'):
        raise ValueError("User block may only be specified when creating a file")
    if size < 0:
        raise OverflowError("can't convert negative value to hsize_t")
    if size and size & (size - 1):
        raise ValueError("Userblock size is non-zero and not a power of two")
    if size and size < 512:
        raise ValueError("Userblock size is non-zero and less than 512")
    if size > _USERBLOCK_MAX:
        raise ValueError(f"a store keeps a user block of at most {_USERBLOCK_MAX} bytes, "
                         f"not {size}")
    return size


# What starts HDF5's superblock: after the user block, at 0 or a power of
# two from 512 bytes.
_HDF5_SIGNATURE = b'\x89HDF\r\n\x1a\n'


def _userblock_bytes(fs, root_id):
    """The user block of the store or HDF5 file ``fs`` holds (its bytes)."""
    size = _userblock_of(fs, root_id)
    path = fs.raw.path
    if not is_url(path) and os.path.isfile(path):
        with open(path, 'rb') as f:
            return f.read(size)
    kept = (fs.doc(root_id).get('creationProperties') or {}).get(_USERBLOCK_KEY) or ''
    return bytes.fromhex(kept)


def _userblock_of(fs, root_id):
    """The user block size of the store or HDF5 file ``fs`` holds."""
    path = fs.raw.path
    if not is_url(path) and os.path.isfile(path):
        with open(path, 'rb') as f:
            at = 0
            while True:
                f.seek(at)
                head = f.read(len(_HDF5_SIGNATURE))
                if len(head) < len(_HDF5_SIGNATURE) or head == _HDF5_SIGNATURE:
                    return at
                at = 512 if at == 0 else at * 2
    kept = (fs.doc(root_id).get('creationProperties') or {}).get(_USERBLOCK_KEY) or ''
    return len(kept) // 2
