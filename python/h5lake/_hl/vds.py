"""Virtual datasets, as h5py makes them: ``VirtualSource``,
``VirtualLayout`` and ``Group.create_virtual_dataset``.

A mapping pairs a regular hyperslab of the virtual dataset with one of the
same shape (dimensions of one index aside) in a source dataset — in the same
store or in another h5lake store (a path or an ``s3://`` URL). The engine
reads every source a selection touches at once; what no source covers, and
what a missing or too-small source cannot give, reads as the fill value (a
``VirtualSourceWarning`` names those sources).
"""

import itertools
import os
import sys
import warnings
from collections import namedtuple

import numpy as np

from .base import is_url, product
from .selections import MultiBlockSlice

#: h5py's record of one mapping (``Dataset.virtual_sources()``).
VDSmap = namedtuple("VDSmap", ("vspace", "file_name", "dset_name", "src_space"))

#: h5py's ``h5s.UNLIMITED``: a mapping's stop that follows the source's extent.
UNLIMITED = 2**64 - 1


class VirtualSourceWarning(UserWarning):
    """Some sources of a virtual dataset are missing or smaller than the
    part mapped from them: those elements read as the fill value."""


class Hyperslab:
    """A regular selection of a dataspace of ``shape``: per dimension
    ``count`` blocks of ``block`` indices, the first at ``start``, ``stride``
    apart (the part of h5py's ``SpaceID`` a virtual mapping's selections
    answer). ``runs`` holds ``[start, stride, count]`` or ``[start, stride,
    count, block]`` per dimension, as stored."""

    def __init__(self, shape, runs):
        self.shape = tuple(shape)
        self.runs = tuple((int(r[0]), int(r[1]), UNLIMITED if r[2] is None else int(r[2]),
                           int(r[3]) if len(r) > 3 else 1) for r in runs)

    def get_regular_hyperslab(self):
        """(start, stride, count, block), as h5py's ``SpaceID`` gives them:
        as libhdf5 keeps a selection, adjacent blocks are one block."""
        def normal(r):
            start, stride, count, block = r
            if count == 1:
                return start, 1, 1, block
            if count != UNLIMITED and stride == block:
                return start, 1, 1, count * block
            return r
        runs = [normal(r) for r in self.runs]
        return tuple(tuple(r[k] for r in runs) for k in range(4))

    def get_simple_extent_dims(self):
        """The dataspace's extent."""
        return self.shape

    def get_select_type(self):
        """``h5py.h5s.SEL_HYPERSLABS``: a mapping's selections are hyperslabs."""
        return 2

    def get_select_bounds(self):
        """The first and last selected index per dimension."""
        return (tuple(r[0] for r in self.runs),
                tuple(r[0] + (r[2] - 1) * r[1] + r[3] - 1 for r in self.runs))

    def get_select_npoints(self):
        return product(r[2] * r[3] for r in self.runs)

    def __repr__(self):
        return f"<Hyperslab {self.runs} of {self.shape}>"


def _is_h5py_dataset(obj):
    h5py = sys.modules.get("h5py")
    dataset = getattr(h5py, "Dataset", None) if h5py is not None else None
    return isinstance(dataset, type) and isinstance(obj, dataset)


def _selection(key, shape):
    """Per dimension of ``shape``, the segments ``[start, step, count]`` the
    index expression ``key`` selects, in order: one for an int or a slice
    with a positive step (``count`` None for h5py's unlimited stop), and for
    an increasing list of indices one per stretch of evenly spaced ones
    (HDF5's irregular hyperslab: a union of regular ones)."""
    key = key if isinstance(key, tuple) else (key,)
    if sum(k is Ellipsis for k in key) > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    # (By identity: `in` would compare arrays of indices with Ellipsis.)
    at = next((i for i, k in enumerate(key) if k is Ellipsis), None)
    if at is not None:
        key = key[:at] + (slice(None),) * (len(shape) - len(key) + 1) + key[at + 1:]
    if len(key) > len(shape):
        raise IndexError(f"{len(key)} indices for a dataspace of rank {len(shape)}")
    key = key + (slice(None),) * (len(shape) - len(key))
    out = []
    for k, n in zip(key, shape):
        if isinstance(k, (int, np.integer)) and not isinstance(k, bool):
            i = int(k) + n if k < 0 else int(k)
            if not 0 <= i < n:
                raise IndexError(f"index {int(k)} out of range for a dimension of {n}")
            out.append([[i, 1, 1]])
        elif isinstance(k, slice):
            if k.step is not None and k.step < 1:
                raise ValueError("virtual mappings take slices with a positive step")
            if k.stop is not None and k.stop >= UNLIMITED:
                # As h5py: start and step as given, blocks without end. (Not
                # clamped to the extent: a layout of extent 0 that grows
                # with its sources starts its mappings where they say; the
                # start was lost, and the values read at the wrong place.)
                start, step = k.start or 0, k.step or 1
                if start < 0:
                    start += n
                if start < 0:
                    raise ValueError(f"an unlimited selection ({k}) starts before the extent")
                out.append([[start, step, None]])
                continue
            start, stop, step = k.indices(n)
            count = len(range(start, stop, step))
            if count == 0:
                raise ValueError(f"an empty selection ({k}) cannot be mapped")
            out.append([[start, step, count]])
        elif isinstance(k, (list, np.ndarray)):
            out.append(_index_list(k, n))
        elif isinstance(k, MultiBlockSlice):
            # Its blocks, as the indices they select.
            out.append(_index_list(k.positions(n), n))
        else:
            raise TypeError(f"virtual mappings are selected with ints, slices and lists of "
                            f"indices, not {k!r}")
    return out


def _index_list(k, n):
    """The segments of the increasing index list (or boolean mask) ``k``
    into a dimension of ``n``: each stretch of evenly spaced indices one."""
    idx = np.asarray(k)
    if idx.dtype == np.bool_:
        if idx.shape != (n,):
            raise IndexError(f"a boolean mask of shape {idx.shape} for a dimension of {n}")
        idx = np.flatnonzero(idx)
    elif idx.size == 0:
        idx = idx.astype(np.int64)
    if idx.ndim != 1 or idx.dtype.kind not in "iu":
        raise TypeError(f"virtual mappings take one-dimensional lists of integer indices, not {k!r}")
    if idx.size == 0:
        raise ValueError("an empty selection ([]) cannot be mapped")
    idx = np.where(idx < 0, idx + n, idx).astype(np.int64)
    if idx.min() < 0 or idx.max() >= n:
        raise IndexError(f"index {int(idx.max() if idx.max() >= n else idx.min())} out of range "
                         f"for a dimension of {n}")
    if np.any(np.diff(idx) <= 0):
        # (As h5py's fancy selections.)
        raise TypeError("Indexing elements must be in increasing order")
    segments, at = [], 0
    while at < idx.size:
        if at + 1 == idx.size:
            segments.append([int(idx[at]), 1, 1])
            break
        step = int(idx[at + 1] - idx[at])
        end = at + 1
        while end + 1 < idx.size and idx[end + 1] - idx[end] == step:
            end += 1
        segments.append([int(idx[at]), step, end - at + 1])
        at = end + 1
    return segments


def _runs(key, shape):
    """``[start, step, count]`` per dimension of ``shape`` that the index
    expression ``key`` (ints, slices with positive steps, Ellipsis) selects:
    a regular hyperslab."""
    segments = _selection(key, shape)
    if any(len(segs) > 1 for segs in segments):
        raise TypeError("this selection must be a regular hyperslab (ints and slices)")
    return [segs[0] for segs in segments]


def _count(segs):
    """The indices a dimension's segments select (None: unlimited)."""
    return None if any(s[2] is None for s in segs) else sum(s[2] for s in segs)


def _pieces(dst, src):
    """Pairs of regular hyperslabs ``(dst runs, src runs)`` that map the
    selection ``dst`` onto ``src`` (segments per dimension, of the same
    shape with dimensions of one index left out) element by element in
    C order: each dimension's selected indices split wherever a segment of
    either side ends."""
    dd = [k for k, segs in enumerate(dst) if _count(segs) != 1]
    sd = [k for k, segs in enumerate(src) if _count(segs) != 1]
    per_dim = []          # per paired dimension: [(dst segment, src segment)]
    for a, b in zip(dd, sd):
        da, sb = dst[a], src[b]
        if len(da) == 1 and len(sb) == 1:
            per_dim.append([(da[0], sb[0])])
            continue
        if _count(da) is None or _count(sb) is None:
            raise ValueError("an unlimited selection cannot be paired with a list of indices")
        cuts = sorted(set(np.cumsum([0] + [s[2] for s in da]).tolist())
                      | set(np.cumsum([0] + [s[2] for s in sb]).tolist()))
        per_dim.append([(_part(da, lo, hi), _part(sb, lo, hi)) for lo, hi in zip(cuts, cuts[1:])])
    out = []
    for combo in itertools.product(*per_dim):
        d_runs = [segs[0] for segs in dst]
        s_runs = [segs[0] for segs in src]
        for (a, b), (dseg, sseg) in zip(zip(dd, sd), combo):
            d_runs[a], s_runs[b] = dseg, sseg
        out.append((d_runs, s_runs))
    return out


#: Most mappings one assignment of selections of different shapes makes.
MAX_PAIRED_ROWS = 100_000


def _paired_rows(dst, src):
    """Pairs of regular hyperslabs ``(dst runs, src runs)`` that map ``dst``
    onto ``src`` (segments per dimension, bounded, of the same number of
    elements but other shapes) element by element in C order, as HDF5 pairs
    them: each side cut into its rows (one index of every dimension but the
    last, a segment of the last), the rows cut wherever either side's ends."""
    def rows(segments):
        *lead, last = segments
        n = product(_count(segs) for segs in lead) * len(last)
        if n > MAX_PAIRED_ROWS:
            raise ValueError(f"selections of different shapes are mapped row by row: {n} rows "
                             f"is more than {MAX_PAIRED_ROWS} mappings; select the same shape "
                             f"on both sides")
        indices = [[s0 + j * st for s0, st, c in segs for j in range(c)] for segs in lead]
        for combo in itertools.product(*indices):
            for seg in last:
                yield [[i, 1, 1] for i in combo], seg

    out = []
    a, b = rows(dst), rows(src)
    (pa, sa), (pb, sb) = next(a), next(b)
    at_a = at_b = 0
    while True:
        n = min(sa[2] - at_a, sb[2] - at_b)
        out.append((pa + [[sa[0] + at_a * sa[1], sa[1], n]],
                    pb + [[sb[0] + at_b * sb[1], sb[1], n]]))
        at_a, at_b = at_a + n, at_b + n
        try:
            if at_a == sa[2]:
                (pa, sa), at_a = next(a), 0
            if at_b == sb[2]:
                (pb, sb), at_b = next(b), 0
        except StopIteration:
            # (Both end together: the counts were checked equal.)
            return out


def _part(segments, lo, hi):
    """The segment of selected indices ``lo..hi`` of a dimension, which lie
    within one of its ``segments``."""
    base = 0
    for start, step, count in segments:
        if lo < base + count:
            return [start + (lo - base) * step, step, hi - lo]
        base += count
    raise AssertionError("a part past the segments")


def _int_indexed(key, rank):
    """The dimensions the index expression ``key`` indexes by an integer."""
    key = key if isinstance(key, tuple) else (key,)
    at = next((i for i, k in enumerate(key) if k is Ellipsis), None)
    if at is not None:
        key = key[:at] + (slice(None),) * (rank - len(key) + 1) + key[at + 1:]
    return tuple(k for k, x in enumerate(key)
                 if isinstance(x, (int, np.integer)) and not isinstance(x, bool))


def _squeezed(segments):
    return tuple(c for c in map(_count, segments) if c != 1)


class VirtualSource:
    """A source dataset of a virtual dataset: an h5lake ``Dataset``, or a
    store (path or ``s3://`` URL; ``"."`` is the store of the virtual
    dataset itself) with the dataset's ``name``, ``shape`` and ``dtype``.
    Index it to map part of it (``vsource[0:50]``)."""

    def __init__(self, path_or_dataset, name=None, shape=None, dtype=None, maxshape=None):
        from .dataset import Dataset
        if isinstance(path_or_dataset, Dataset):
            d = path_or_dataset
            if any(x is not None for x in (name, shape, dtype, maxshape)):
                raise TypeError("name, shape, dtype and maxshape come from the dataset given")
            self.path = d.file.filename
            self._location = d._fs.abspath
            if d._fs.in_place:
                # A dataset of an HDF5 file opened in place: a source in
                # that file, as a path names it.
                self.path, self._location = d._fs.abspath, None
            self.name = d.name
            self._space = d.shape
            self.dtype = d.dtype
            self.maxshape = d.maxshape
        else:
            if _is_h5py_dataset(path_or_dataset):
                # An h5py dataset (code moving from h5py): its file and path.
                d = path_or_dataset
                if any(x is not None for x in (name, shape, dtype, maxshape)):
                    raise TypeError("name, shape, dtype and maxshape come from the dataset given")
                path_or_dataset, name, shape = d.file.filename, d.name, d.shape
                dtype, maxshape = d.dtype, d.maxshape
            if name is None:
                raise TypeError("the source dataset's name is required with a path (or pass "
                                "an h5lake Dataset)")
            if shape is None:
                raise TypeError("the source dataset's shape is required with a path")
            self.path = os.fspath(path_or_dataset)
            self._location = None
            self.name = name if name.startswith("/") else "/" + name
            self._given_name = name
            self._space = (shape,) if isinstance(shape, (int, np.integer)) else tuple(shape)
            # (Informational, as in h5py: a read takes the source's own type.)
            self.dtype = None if dtype is None else np.dtype(dtype)
            if isinstance(maxshape, (int, np.integer)):
                maxshape = (maxshape,)
            self.maxshape = self._space if maxshape is None else tuple(maxshape)
        # The whole source (empty ones too: h5py makes them, and concat
        # leaves them out).
        self._segments = [[[0, 1, n]] for n in self._space]
        self.sel = [segs[0] for segs in self._segments]
        self._dropped = ()
        self._sliced = False

    @property
    def shape(self):
        """The shape of the part selected, as h5py gives it: the source's
        shape, or after indexing the selection's (a dimension indexed by an
        integer dropped, as in NumPy)."""
        out = []
        for k, (segs, n) in enumerate(zip(self._segments, self._space)):
            if k in self._dropped:
                continue
            r = segs[0]
            out.append(len(range(r[0], n, r[1])) if r[2] is None else _count(segs))
        return tuple(out)

    def __getitem__(self, key):
        if self._sliced:
            # (As h5py: a part of a part would be relative to which?)
            raise RuntimeError("a VirtualSource that is already sliced cannot be sliced again: "
                               "index the whole source once")
        out = object.__new__(VirtualSource)
        out.__dict__.update(self.__dict__)
        out._segments = _selection(key, self._space)
        # (A regular hyperslab's runs; a list of indices is split into
        # several when mapped.)
        out.sel = [segs[0] for segs in out._segments]
        out._dropped = _int_indexed(key, len(self._space))
        out._sliced = True
        return out

    def __repr__(self):
        return f"<VirtualSource {self.name!r} in {self.path!r} {self.shape}>"


class VirtualLayout:
    """The shape, type and mappings of a virtual dataset to be made with
    ``Group.create_virtual_dataset``: ``layout[sel] = vsource``."""

    def __init__(self, shape, dtype, maxshape=None, filename=None):
        self.shape = (shape,) if isinstance(shape, (int, np.integer)) else tuple(int(s) for s in shape)
        self.dtype = np.dtype(dtype)
        self.maxshape = self.shape if maxshape is None else tuple(maxshape)
        self._filename = filename
        self.sources = []

    def __setitem__(self, key, source):
        if not isinstance(source, VirtualSource):
            raise TypeError(f"map a VirtualSource, not {type(source).__name__}")
        dst = _selection(key, self.shape)
        src = source._segments
        counts = [_count(segs) for segs in dst], [_count(segs) for segs in src]
        bounded = all(c is not None for side in counts for c in side)
        if bounded and product(counts[0]) != product(counts[1]):
            raise ValueError(f"the virtual selection and the source selection have a different "
                             f"number of elements ({product(counts[0])} and {product(counts[1])})")
        if _squeezed(dst) != _squeezed(src):
            if not bounded:
                raise ValueError(
                    f"the virtual selection {tuple(counts[0])} and the source selection "
                    f"{tuple(counts[1])} differ in shape (and one is unlimited)")
            # As HDF5 pairs them: element by element in C order, whatever
            # the shapes; one mapping per stretch of a row of either side.
            self._add_parts(_paired_rows(dst, src), source)
            return
        if all(len(segs) == 1 for side in (dst, src) for segs in side):
            self.sources.append(([segs[0] for segs in dst], source))
            return
        # An irregular selection on either side: one regular mapping per
        # part both sides select evenly.
        self._add_parts(_pieces(dst, src), source)

    def _add_parts(self, pieces, source):
        """Maps each ``(dst runs, src runs)`` of ``pieces`` from ``source``."""
        for d_runs, s_runs in pieces:
            part = object.__new__(VirtualSource)
            part.__dict__.update(source.__dict__)
            part.sel = s_runs
            part._segments = [[r] for r in s_runs]
            self.sources.append((d_runs, part))


#: Names a store is given (a source by such a name that does not exist yet
#: is a store to come).
_STORE_SUFFIXES = (".h5l",)


def _hdf5_file(source, here=None):
    """The absolute path of ``source``'s HDF5 file, when it names one
    (an existing HDF5 file, or a missing path not named as a store). A
    relative name is looked for as libhdf5 looks for a source file: under
    each directory of ``$HDF5_VDS_PREFIX`` (``${ORIGIN}`` standing for the
    directory of the virtual dataset's store, ``here``), then beside that
    store, then from the working directory."""
    from .transfer import is_hdf5
    if source._location is not None or source.path == "." or is_url(source.path):
        return None
    path = os.path.abspath(source.path)
    if not os.path.isabs(source.path) and here is not None and not is_url(here):
        origin = os.path.dirname(os.path.abspath(here))
        prefixes = [p.replace("${ORIGIN}", origin)
                    for p in os.environ.get("HDF5_VDS_PREFIX", "").split(":") if p]
        candidates = [os.path.join(p, source.path) for p in prefixes]
        candidates += [os.path.join(origin, source.path), path]
        found = [c for c in candidates if os.path.isfile(c)]
        # (None there: where it would be beside the store, to read as fill.)
        path = os.path.abspath(found[0] if found else candidates[-2])
    if os.path.isfile(path):
        return path if is_hdf5(path) else None
    # A source that does not exist yet is an HDF5 file to come, as in
    # libhdf5 (whatever its name: .nxs, .cxi, ...), unless named as a
    # store or a Parquet file.
    from .transfer import PARQUET_ENDINGS
    missing = not os.path.exists(path)
    return path if missing and not path.lower().endswith(_STORE_SUFFIXES + PARQUET_ENDINGS) \
        else None


def _parquet_file(source):
    """The absolute path (or URL) of ``source``'s Parquet file, when it
    names one by its ending."""
    from .transfer import PARQUET_ENDINGS
    if source._location is not None or not source.path.lower().endswith(PARQUET_ENDINGS):
        return None
    return source.path if is_url(source.path) else os.path.abspath(source.path)


def _link_file(group, path, name):
    """The id of the dataset ``name`` of the HDF5 file, or of the table of
    the Parquet file, at ``path``, linked into ``group``'s store as an
    anonymous dataset (values left in the file)."""
    from .transfer import PARQUET_ENDINGS
    if path.lower().endswith(PARQUET_ENDINGS):
        return group._fs.raw.link_parquet_dataset([path])
    return group._fs.raw.link_hdf5_dataset(path, name)


def _mapping(group, src, dst):
    """The stored form of one mapping of ``src`` (a VirtualSource) to the
    virtual selection ``dst``; an HDF5 file's dataset or a Parquet file's
    table is linked into the store first (metadata only)."""
    here = group._fs.abspath
    file = _hdf5_file(src, here) or _parquet_file(src)
    given = getattr(src, "_given_name", src.name)
    # (The name as given, when not absolute, is what virtual_sources() gives
    # back, as in h5py.)
    named = {} if given == src.name else {"name": given}
    if file is None:
        return {"store": _store_of(src, here), "path": src.name, "src": src.sel, "dst": dst,
                **named}
    did = getattr(src, "_linked", None)
    if did is None and (is_url(file) or os.path.isfile(file)):
        try:
            did = _link_file(group, file, src.name)
        except (KeyError, OSError, ValueError, NotImplementedError) as e:
            # No such dataset, or one that cannot be linked: it reads as
            # fill, as a missing source does, and the warning says why.
            did = None
            named["why"] = str(e)
    elif did is None:
        # (h5py would read it once it exists; h5lake links when the mapping
        # is made, so the warning says why this part stays fill.)
        named["why"] = "the file did not exist when the mapping was made"
    # (The file's name as given, when not absolute: what virtual_sources()
    # gives back and an HDF5 copy names, as h5py and HDF5 keep it.)
    if not is_url(src.path) and src.path != file:
        named["file_name"] = src.path
    return {"store": None, "file": file, "id": did, "path": src.name, "src": src.sel, "dst": dst,
            **named}


def _store_of(source, here):
    """The mapping's ``store``: None for the virtual dataset's own store,
    else a URL or a path — relative, as given, when it names a store beside
    this one or none yet (found when read, as libhdf5 finds a source file:
    under ``$HDF5_VDS_PREFIX``, else beside the store), else absolute."""
    loc = source._location
    if loc is None:
        if source.path == ".":
            return None
        if not is_url(source.path) and not os.path.isabs(source.path) and not is_url(here):
            beside = os.path.join(os.path.dirname(os.path.abspath(here)), source.path)
            if os.path.abspath(beside) == os.path.abspath(here):
                return None
            if os.path.exists(beside) or not os.path.exists(source.path):
                return source.path
        loc = source.path if is_url(source.path) else os.path.abspath(source.path)
    if is_url(loc):
        return None if loc == here else loc
    loc = os.path.abspath(loc)
    if not is_url(here) and os.path.abspath(here) == loc:
        return None
    return loc


def _numeric(dt):
    """Whether a source of type ``dt`` converts as HDF5 converts numbers."""
    return dt.kind in "iuf" and dt.names is None and dt.shape == ()


def create(group, name, layout, fillvalue=None):
    """``Group.create_virtual_dataset``."""
    from . import dataset
    if not isinstance(layout, VirtualLayout):
        raise TypeError(f"a virtual dataset is made from a VirtualLayout, not {type(layout).__name__}")
    group._fs.check_writable(ValueError, "Unable to create dataset")
    for dst, src in layout.sources:
        if src.dtype is not None and src.dtype != layout.dtype and not (
                _numeric(src.dtype) and _numeric(layout.dtype)):
            raise TypeError(f"source {src.name} in {src.path} holds {src.dtype}, the layout "
                            f"{layout.dtype} (h5lake converts sources between numeric types only)")
    mappings = [_mapping(group, src, dst) for dst, src in layout.sources]
    plan = dataset.prepare_dset(shape=layout.shape, dtype=layout.dtype, fillvalue=fillvalue)
    if tuple(layout.maxshape) != layout.shape:
        # (Kept as HDF5 keeps it; the mappings stay those given.)
        plan.maxshape = tuple(layout.maxshape)
    plan.dcpl.setdefault("h5lake", {})["virtual"] = mappings
    return group._create_planned(plan, name)


def mappings(dset):
    """The stored mappings of a virtual dataset (an empty list otherwise)."""
    return list((dset._doc.get("h5lake") or {}).get("virtual") or [])


def is_unlimited(dset):
    """Whether some mapping reaches as far as its source's extent (the
    extent then follows the sources')."""
    return any(r[2] is None for mp in mappings(dset) for r in mp["dst"])


def virtual_sources(dset):
    """``Dataset.virtual_sources()``: a ``VDSmap`` per mapping."""
    out = []
    for mp in mappings(dset):
        # (The source's extent is not kept with the mapping: the least one
        # that holds the selection.)
        src_shape = tuple(UNLIMITED if r[2] is None else
                          r[0] + (r[2] - 1) * r[1] + (r[3] if len(r) > 3 else 1)
                          for r in mp["src"])
        out.append(VDSmap(Hyperslab(dset.shape, mp["dst"]),
                          mp.get("file_name") or mp.get("file") or mp["store"] or ".",
                          mp.get("name") or mp["path"], Hyperslab(src_shape, mp["src"])))
    return out


def _problem_text(store, path, why):
    """One source's problem: ``store:path: why`` for a source in a store
    (``.``: the virtual dataset's own), ``path: why`` for one in a file
    (``why`` names the file)."""
    return f"{store}:{path}: {why}" if store else f"{path}: {why}"


def warn_problems(dset):
    """Warns (once per dataset object) which sources read as fill."""
    if getattr(dset, "_vds_checked", False):
        return
    dset._vds_checked = True
    try:
        problems = dset._fs.raw.dataset_virtual_problems(dset._oid)
    except TypeError as e:
        # A source of a type h5lake cannot convert: reads reaching it
        # fail with this error; the other sources are read.
        warnings.warn(f"{dset.name}: {e}", VirtualSourceWarning, stacklevel=3)
        return
    if problems:
        shown = "; ".join(_problem_text(store, path, why) for _, store, path, why in problems[:5])
        more = f" (and {len(problems) - 5} more)" if len(problems) > 5 else ""
        warnings.warn(f"{dset.name}: {len(problems)} of {len(mappings(dset))} virtual sources read "
                      f"(partly) as the fill value: {shown}{more}", VirtualSourceWarning, stacklevel=3)


def _natural_key(name):
    """Sort key that orders run-2 before run-10."""
    import re
    return [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", name)]


def expand_sources(sources):
    """A glob pattern (natural sort order of the names) or a list, as a list."""
    import glob
    if isinstance(sources, (str, os.PathLike)):
        pattern = os.fspath(sources)
        found = sorted(glob.glob(pattern), key=_natural_key)
        if not found:
            raise FileNotFoundError(2, f"no file matches {pattern}")
        return found
    return list(sources)


def concat(sources, dest, axis=0, *, path=None, name=None, fillvalue=None, progress=False):
    """One virtual dataset made of ``sources`` laid end to end along
    ``axis``: h5lake datasets, or files (HDF5 files, linked; h5lake stores)
    holding the dataset ``path``, or Parquet files (their tables, linked:
    one 1-D compound dataset), as a list in the order given or a glob
    pattern (natural sort order). ``dest`` is an open h5lake ``Group`` (the
    dataset is made there as ``name``, default ``path``; returned) or a
    store location (opened, or created; the report is returned). Every
    source must have the same type and extent off ``axis``."""
    from .base import HLObject
    from .dataset import Dataset
    from .files import File
    items = expand_sources(sources)
    if not items:
        raise ValueError("nothing to concatenate")
    # (A Parquet file holds one table: no path to name; the dataset is
    # named after the first file unless named.)
    parquet = all(isinstance(i, (str, os.PathLike)) and
                  os.fspath(i).lower().endswith(_parquet_endings()) for i in items)
    if parquet:
        path = path or "/"
    name = name or (None if parquet else path)
    if name is None:
        if isinstance(items[0], Dataset):
            name = items[0].name
        elif parquet:
            name = os.path.splitext(os.path.basename(os.fspath(items[0]).rstrip("/")))[0]
        else:
            raise TypeError("name the dataset in each file with path=")
    if isinstance(dest, HLObject):
        return _concat_into(dest, name, items, axis, path, fillvalue, progress)
    from .base import NewStoreOrNothing
    with NewStoreOrNothing(dest), File(os.fspath(dest), "a") as f:
        with warnings.catch_warnings():
            # (One warning below names every gap, left out or short.)
            warnings.simplefilter("ignore", VirtualSourceWarning)
            d = _concat_into(f, name, items, axis, path, fillvalue, progress)
        problems = f._fs.raw.dataset_virtual_problems(d._oid) if d.is_virtual else []
        missing = [_problem_text(store, p, why) for _, store, p, why in problems]
        if d._left_out:
            warnings.warn(f"{len(d._left_out)} of {len(items)} sources are left out of "
                          f"{os.fspath(dest)}{d.name} (they have no such dataset): "
                          f"{'; '.join(d._left_out[:5])}", VirtualSourceWarning, stacklevel=2)
        if missing:
            warnings.warn(f"{len(missing)} of {len(items)} sources of "
                          f"{os.fspath(dest)}{d.name} read (partly) as the fill value: "
                          f"{'; '.join(missing[:5])}", VirtualSourceWarning, stacklevel=2)
        return {"name": d.name, "shape": d.shape, "dtype": str(d.dtype), "sources": len(items),
                "left_out": list(d._left_out), "missing": missing}


def _linked_table(group, name, files, single_links):
    """One dataset ``name`` in ``group`` whose rows are those of the Parquet
    ``files``, in order; the one-file links made to learn their extents are
    dropped."""
    from .group import _hard
    raw = group._fs.raw
    for did in single_links:
        raw.delete_object(did)
    did = raw.link_parquet_dataset(list(files))
    ppath, base, parent = group._target_free(name, ValueError,
                                             "Unable to create dataset (name already exists)")
    parent = group._require_parent(ppath, parent, inherit_order=False)
    try:
        parent._fs.raw.link_create(parent._oid, base, _hard(did))
    except BaseException:
        raw.delete_object(did)
        raise
    return parent[base]


def _source_of(group, item, path):
    """(VirtualSource, shape, dtype) of one item to concatenate."""
    from .dataset import Dataset
    if isinstance(item, Dataset):
        return VirtualSource(item), item.shape, item.dtype
    if path is None:
        raise TypeError("name the dataset in each file with path=")
    loc = os.fspath(item)
    from .transfer import PARQUET_ENDINGS, is_hdf5
    parquet = loc.lower().endswith(PARQUET_ENDINGS)
    if parquet or (not is_url(loc) and os.path.isfile(loc)):
        if not parquet and not is_hdf5(loc):
            raise OSError(f"{loc} is neither an HDF5 file, a Parquet file nor an h5lake store")
        # Linked now, to learn its extent; the mapping then names the link.
        loc = loc if is_url(loc) else os.path.abspath(loc)
        try:
            did = _link_file(group, loc, path)
        except (KeyError, OSError, ValueError) as e:
            raise _Unusable(f"{loc}:{path}: {_reason(e)}") from None
        d = Dataset(group._fs, did, None)
        src = VirtualSource(loc, path, shape=d.shape, dtype=d.dtype)
        src._linked = did
        return src, d.shape, d.dtype
    from .group import Group
    try:
        st = group._fs.open_external(loc)
        d = Group(st, st.root_id, "/")[path]
    except (KeyError, OSError) as e:
        raise _Unusable(f"{loc}:{path}: {_reason(e)}") from None
    return VirtualSource(d), d.shape, d.dtype


def _reason(e):
    """What went wrong, as a sentence: without the ``[Errno 2]`` of an
    OSError or the quotes of a KeyError."""
    if isinstance(e, OSError) and e.strerror:
        return e.strerror
    if isinstance(e, KeyError) and e.args:
        return str(e.args[0])
    return str(e)


def _parquet_endings():
    from .transfer import PARQUET_ENDINGS
    return PARQUET_ENDINGS


class _Unusable(Exception):
    """A source to concatenate that has no such dataset (its extent is
    unknown, so it is left out)."""


def _concat_into(group, name, items, axis, path, fillvalue, progress):
    parts = []
    try:
        return _concat_parts(group, name, items, axis, path, fillvalue, progress, parts)
    except BaseException:
        # Nothing left behind: the files linked to learn their extents go.
        for src, _, _ in parts:
            did = getattr(src, "_linked", None)
            if did is not None:
                try:
                    group._fs.raw.delete_object(did)
                except (KeyError, OSError):
                    pass
        raise


def _concat_parts(group, name, items, axis, path, fillvalue, progress, parts):
    from .. import _core
    bar = _core.ProgressBar(len(items), "linking", "files") if progress else None
    used, left_out = [], []
    try:
        for item in items:
            try:
                parts.append(_source_of(group, item, path))
                used.append(item)
            except _Unusable as e:
                left_out.append(str(e))
            if bar is not None:
                bar.inc(1)
    finally:
        if bar is not None:
            bar.finish()
    if left_out:
        warnings.warn(f"{len(left_out)} of {len(items)} sources left out of the concatenation "
                      f"(no such dataset): {'; '.join(left_out[:5])}", VirtualSourceWarning,
                      stacklevel=3)
    if not parts:
        raise KeyError(f"no source holds {path}")
    items = used
    shape0, dtype = parts[0][1], parts[0][2]
    rank = len(shape0)
    if rank == 0:
        raise ValueError("scalar datasets cannot be concatenated")
    axis = axis + rank if axis < 0 else axis
    if not 0 <= axis < rank:
        raise ValueError(f"axis {axis} is out of range for datasets of rank {rank}")
    for (src, shape, dt), item in zip(parts, items):
        if dt != dtype:
            raise TypeError(f"{item}: type {dt}, the first source's {dtype}")
        if len(shape) != rank or any(a != b for k, (a, b) in enumerate(zip(shape, shape0)) if k != axis):
            raise ValueError(f"{item}: extent {shape} does not match {shape0} off axis {axis}")
    if axis == 0 and all(getattr(src, "_linked", None) and _parquet_file(src)
                         for src, _, _ in parts):
        # Parquet files become one table linked to all of them (rows in the
        # order given, values left in the files), as `load --link` makes it
        # of many files, not a virtual dataset: that keeps their nulls for
        # to_arrow() and parquet_files() for DuckDB.
        d = _linked_table(group, name, [_parquet_file(src) for src, _, _ in parts],
                          [src._linked for src, _, _ in parts])
        d._left_out = left_out
        return d
    total = sum(shape[axis] for _, shape, _ in parts)
    layout = VirtualLayout(tuple(total if k == axis else n for k, n in enumerate(shape0)), dtype)
    at = 0
    for src, shape, _ in parts:
        if shape[axis] == 0:
            continue
        key = tuple(slice(at, at + shape[axis]) if k == axis else slice(None) for k in range(rank))
        layout.sources.append((_runs(key, layout.shape), src))
        at += shape[axis]
    d = create(group, name, layout, fillvalue)
    d._left_out = left_out
    return d
