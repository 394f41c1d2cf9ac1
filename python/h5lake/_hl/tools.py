"""Store-level tools behind the ``h5lake`` command line: list (``ls``),
summarise (``info``), compare (``diff``), remove (``rm``), copy (``cp``) and
move (``mv``) stores and the objects inside them.

A PATH names a store (a directory holding ``.domain.json``) optionally
followed by a path inside it: ``run.h5l/detector/frames`` is the object
``/detector/frames`` of the store ``run.h5l``.  ``diff`` also takes real
HDF5 files (``file.h5`` or ``file.h5/group``).  A PATH may also be an S3
URL, ``s3://bucket/path/name.h5[/object]`` (a domain in the bucket); ``cp``
and ``mv`` of whole stores work on local directories only.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import posixpath
import shutil
import warnings

import numpy as np

from . import h5t
from .base import HLObject, is_url
from .dataset import Dataset
from .datatype import Datatype
from .files import File
from .group import ExternalLink, Group, HardLink, SoftLink
from .transfer import is_hdf5

try:
    from .. import _core
except ImportError:  # extension not built: File() says so when used
    _core = None

_DOMAIN_FILE = ".domain.json"
_METADATA_FILES = frozenset((".group.json", ".dataset.json", ".datatype.json"))
_SLAB_BYTES = 64 << 20
# Variable-length elements are read into Python objects whose size the
# dtype does not tell; budget this much per element when sizing a slab.
_VLEN_ELEMENT_BYTES = 256
_LISTED_DIFFERENCES = 10      # per dataset, in verbose diff output
_SHOWN_CHARS = 60             # longest value shown in a message


# ---------------------------------------------------------------------------
# locating stores, HDF5 files and the objects inside them
# ---------------------------------------------------------------------------

def is_store(path):
    """Whether ``path`` is an h5lake store (a directory holding .domain.json,
    or an ``s3://`` URL naming a domain)."""
    if is_url(path):
        return _core.domain_exists(path)
    return os.path.isfile(os.path.join(path, _DOMAIN_FILE))


def is_hdf5_file(path):
    """Whether ``path`` is an HDF5 file (its signature at offset 0 or, after
    a user block, at 512, 1024, 2048, ... bytes)."""
    return not is_url(path) and os.path.isfile(path) and is_hdf5(path)


def _split_url(url, accept, what):
    """:func:`split_path` for ``scheme://bucket/path`` URLs."""
    scheme, rest = url.split("://", 1)
    bucket, _, inner = rest.partition("/")
    parts = [p for p in inner.split("/") if p]
    for n in range(len(parts), -1, -1):            # longest first
        head = f"{scheme}://{bucket}" + "".join("/" + p for p in parts[:n])
        if accept(head):
            return head, "/".join(parts[n:])
    raise FileNotFoundError(f"{url}: not {what}, nor a path inside one")


def _same_store(a, b):
    if is_url(a) or is_url(b):
        return a.rstrip("/") == b.rstrip("/")
    return os.path.samefile(a, b)


def split_path(path, accept=is_store, what=f"an h5lake store (a directory holding {_DOMAIN_FILE})"):
    """``(root, inner)``: the longest leading part of ``path`` for which
    ``accept`` holds (``what`` says what that is, for the error), and the
    rest as a path inside it ('' for none)."""
    path = os.fspath(path)
    if is_url(path):
        return _split_url(path, accept, what)
    head, inner = os.path.normpath(path), ""
    while not accept(head):
        parent, name = os.path.split(head)
        if not name or not parent:
            if not os.path.exists(path):
                found = _existing_file_above(path)
                if found is not None:
                    raise FileNotFoundError(f"{path}: {found} is a file, not {what}"
                                            f"{_load_hint(found, accept)}")
                raise FileNotFoundError(f"{path}: no such file or directory")
            found = _existing_file_above(path)
            raise FileNotFoundError(f"{path}: not {what}, nor a path inside one"
                                    f"{_load_hint(found, accept)}")
        head, inner = parent, posixpath.join(name, inner) if inner else name
    return head, inner


def _load_hint(found, accept):
    """How to make a store of ``found``, an HDF5 file given where a store
    was wanted; '' otherwise."""
    if accept is is_store and found is not None and is_hdf5_file(found):
        return "; load an HDF5 file into a store with h5lake load"
    return ""


def _existing_file_above(path):
    """The file some leading part of ``path`` names (``data.h5`` of
    ``data.h5/grp/x``), if any: what the path fails on."""
    head = os.path.normpath(path)
    while True:
        if os.path.isfile(head):
            return head
        parent = os.path.dirname(head)
        if not parent or parent == head:
            return None
        head = parent


def _lookup(group, inner, path):
    """The object at ``inner`` below ``group`` (``group`` itself for '')."""
    if not inner:
        return group
    if not isinstance(group, Group):
        raise KeyError(f"{path}: {group.name} is not a group")
    try:
        return group[inner]
    except KeyError:
        where = posixpath.join(group.name, inner)
        # (An object of an HDF5 file that h5lake cannot read is there, and
        # said to be; not missing.)
        for gap in getattr(group.file, "skipped_objects", None) or ():
            if gap.get("path") == where and not gap.get("part"):
                raise KeyError(f"{path}: {where} in {group.file.filename} is "
                               f"{_gap_text(gap)}") from None
        raise KeyError(f"{path}: no object {where} in {group.file.filename}") from None


def _named_link(obj, inner):
    """The link ``inner`` names below ``obj`` (None for '' or a missing
    one), without following it."""
    if not inner or not isinstance(obj, Group):
        return None
    try:
        return obj.get(inner, getlink=True)
    except (KeyError, ValueError):
        return None


def _link(f, inner, path):
    """The link at ``inner`` in the open store ``f``."""
    link = f.get(inner, getlink=True)
    if link is None:
        raise KeyError(f"{path}: no object /{inner} in {f.filename}")
    return link


@contextlib.contextmanager
def _open_object(path):
    """The object ``path`` names (in a store or an HDF5 file), open
    read-only meanwhile, and what of the file h5lake could not read (see
    :func:`_open_in`)."""
    with contextlib.ExitStack() as stack:
        yield _open_in(path, stack)


def _store_or_file(path):
    return is_store(path) or is_hdf5_file(path)


def _open_in(path, stack):
    """The object ``path`` names, kept open by ``stack``: in a store, or in
    an HDF5 file opened in place; and the gaps of that file,
    ``{"path", "part", "reason"}`` for each object or part of one it holds
    and h5lake could not read (none for a store), so that no tool passes
    over them in silence."""
    root, inner = split_path(path, _store_or_file, "an h5lake store or HDF5 file")
    with warnings.catch_warnings():
        # what an HDF5 file opened in place leaves out is told as gaps
        warnings.simplefilter("ignore", UserWarning)
        f = stack.enter_context(File(root, "r"))
    return _lookup(f, inner, path), f.skipped_objects


def _shown(name):
    """``name`` as one line shows it: control characters escaped, as h5ls
    escapes them (a name holding a newline would read as two entries)."""
    if name.isprintable():
        return name
    escapes = {"\n": "\\n", "\t": "\\t", "\r": "\\r", "\\": "\\\\"}
    return "".join(escapes.get(c) or (c if c.isprintable() else f"\\x{ord(c):02x}")
                   for c in name)


def _below(gap_path, top, recursive):
    """Whether an object at ``gap_path`` is listed by ``ls`` of ``top``."""
    parent = posixpath.dirname(gap_path)
    if not recursive:
        return parent == top
    return gap_path.startswith(top.rstrip("/") + "/")


def _part_label(part):
    """How ``ls -v`` heads a part of an object h5lake cannot read: an
    attribute by its name, anything else (``values``) by what it is."""
    kind, _, name = part.partition(" ")
    if kind == "attribute" and name:
        return f"Attribute:  {name}"
    return f"{part[:1].upper()}{part[1:]}:"


def _gap_text(gap):
    return f"not readable by h5lake: {gap['reason']}"


def _refuse_inside_store(path):
    """Stores are never nested: refuse to put one at ``path`` inside another."""
    if is_url(path):
        raise ValueError(f"{path}: copying or moving whole stores works on local directories only; "
                         "copy objects into an S3 domain with cp STORE/PATH s3://bucket/domain/PATH")
    try:
        root, _inner = split_path(os.path.dirname(os.path.abspath(path)))
    except FileNotFoundError:
        return
    raise ValueError(f"{path} is inside the store {root}; give a path outside any store")


# ---------------------------------------------------------------------------
# describing objects and types
# ---------------------------------------------------------------------------

_KIND_NAMES = {"b": "boolean", "i": "integer", "u": "unsigned integer",
               "f": "float", "c": "complex"}
_BYTE_ORDERS = {"<": "little-endian ", ">": "big-endian ", "|": ""}


def hdf5_type_name(dt):
    """How HDF5 would describe numpy dtype ``dt`` (h5py's conventions for
    strings, variable-length, enum and opaque types)."""
    dt = np.dtype(dt)
    string = h5t.check_string_dtype(dt)
    if string is not None:
        length = "variable-length" if string.length is None else f"{string.length}-byte"
        return f"{length} {string.encoding} string"
    base = h5t.check_vlen_dtype(dt)
    if base is not None:
        return f"variable-length sequence of {hdf5_type_name(base)}"
    members = h5t.check_enum_dtype(dt)
    if members is not None:
        # (Members by value: what each value means is the type.)
        named = ", ".join(f"{k}={v}" for k, v in sorted(members.items(), key=lambda kv: kv[1]))
        return f"enum {{{named}}} of {hdf5_type_name(np.dtype(dt.str))}"
    if dt.subdtype is not None:
        base, shape = dt.subdtype
        return f"array {list(shape)} of {hdf5_type_name(base)}"
    if dt.names is not None:
        fields = ", ".join(f"{name}: {hdf5_type_name(dt.fields[name][0])}" for name in dt.names)
        return f"compound {{{fields}}}"
    if dt.kind in _KIND_NAMES:
        return f"{dt.itemsize * 8}-bit {_BYTE_ORDERS[dt.str[0]]}{_KIND_NAMES[dt.kind]}"
    if dt.kind == "V":
        return f"{dt.itemsize}-byte opaque"
    return str(dt)


def _type_label(dt):
    """numpy spelling and HDF5 name of ``dt``, e.g. ``<i4 (32-bit little-endian integer)``."""
    spelling = dt.str if dt.names is None and dt.subdtype is None else str(dt)
    return f"{spelling} ({hdf5_type_name(dt)})"


def _same_type(a, b):
    # numpy's dtype equality ignores the metadata that marks strings, enums...
    return a == b and hdf5_type_name(a) == hdf5_type_name(b)


def _string_pads(type_json):
    """The padding of each fixed-length string in an HSDS type (members and
    array items included), in order: part of the type, which numpy's
    ``S10`` does not tell."""
    out = []

    def walk(t):
        if not isinstance(t, dict):
            return
        if t.get("class") == "H5T_STRING" and t.get("length") != "H5T_VARIABLE":
            out.append(t.get("strPad", "H5T_STR_NULLTERM"))
        for f in t.get("fields") or ():
            walk(f.get("type"))
        walk(t.get("base"))

    walk(type_json)
    return tuple(out)


def _padding_difference(type_a, type_b):
    """How the string paddings of two stored types differ, or None (also
    when either is unknown)."""
    if type_a is None or type_b is None:
        return None
    pads_a, pads_b = _string_pads(type_a), _string_pads(type_b)
    if pads_a == pads_b:
        return None
    return f"string padding {', '.join(pads_a)} != {', '.join(pads_b)}"


def _shape_text(dset):
    """h5ls's ``{10/Inf, 20}``: current size, and the maximum where it differs."""
    shape = dset.shape
    if shape is None:
        return "{NULL}"
    if shape == ():
        return "{SCALAR}"
    dims = [str(n) if n == m else f"{n}/{'Inf' if m is None else m}"
            for n, m in zip(shape, dset.maxshape)]
    return "{" + ", ".join(dims) + "}"


def _plain(value):
    """``value`` as Python builtins (numpy's ``tolist`` leaves the array
    members of compound values and variable-length sequences as arrays)."""
    if isinstance(value, np.void) and value.dtype.names is not None:
        return tuple(_plain(value[name]) for name in value.dtype.names)
    if isinstance(value, np.ndarray):
        if value.ndim == 0:
            return _plain(value[()])
        if value.dtype.names is not None or value.dtype.hasobject:
            return [_plain(item) for item in value]
    if isinstance(value, (np.ndarray, np.generic)):
        return value.tolist()
    return value


def _show(value):
    """A value as short text for a message."""
    text = repr(_plain(value))
    return text if len(text) <= _SHOWN_CHARS else text[:_SHOWN_CHARS - 3] + "..."


def _link_text(link):
    if isinstance(link, SoftLink):
        return f"Soft Link {{{link.path}}}"
    if isinstance(link, ExternalLink):
        return f"External Link {{{link.filename}/{link.path}}}"    # h5ls's file//path
    return "Hard Link"


def _object_text(obj):
    if isinstance(obj, Dataset):
        return f"Dataset {_shape_text(obj)}"
    if isinstance(obj, Group):
        return "Group"
    return "Type"


_BITSHUFFLE_CODECS = {0: None, 2: "lz4", 3: "zstd"}


def _filters_text(dset):
    """Every filter of the dataset's pipeline, in order, with what sets it
    apart (level, scale-offset factor, inner codec): scale-offset, for one,
    drops precision and must not read as "none"."""
    entries = ((dset._doc.get("creationProperties") or {}).get("filters")) or []
    parts = []
    for e in entries:
        if not isinstance(e, dict):
            parts.append(str(e))
            continue
        name = e.get("name") or str(e.get("class", "")).replace("H5Z_FILTER_", "").lower() \
            or f"filter {e.get('id')}"
        detail = None
        if "level" in e and name not in ("shuffle", "fletcher32"):
            detail = e["level"]
        elif "scaleOffset" in e:
            detail = e["scaleOffset"]
        elif name == "bitshuffle":
            detail = _BITSHUFFLE_CODECS.get(e.get("compression"), e.get("compression"))
        elif e.get("compressor"):
            detail = e["compressor"]
        parts.append(name if detail is None else f"{name} ({detail})")
    return ", ".join(parts) or "none"


def _details(obj):
    """h5ls -v's extra lines for ``obj``: type, storage, attributes."""
    lines = []
    if isinstance(obj, (Dataset, Datatype)):
        lines.append(f"Type:       {_type_label(obj.dtype)}")
    if isinstance(obj, Dataset):
        chunks = obj.chunks
        if chunks is None:
            layout = ((obj._doc.get("creationProperties") or {}).get("layout") or {}).get("class")
            kind = ("virtual" if obj.is_virtual else
                    "compact" if layout == "H5D_COMPACT" else "contiguous")
            lines.append(f"Chunks:     none ({kind})")
        else:
            nbytes = math.prod(chunks) * obj.dtype.itemsize
            lines.append(f"Chunks:     {{{', '.join(map(str, chunks))}}} {nbytes} bytes")
        if obj.is_columnar:
            lines.append("Layout:     columnar (each chunk one Parquet object, one column per member)")
        lines.append(f"Filters:    {_filters_text(obj)}")
        lines.append(f"Fill value: {_show(obj.fillvalue)}")
    for name, value in obj.attrs.items():
        lines.append(f"Attribute:  {name} = {_show(value)}")
    return lines


def _members(group, recursive):
    """``(name, link)`` for the links of ``group`` (all of them below it,
    depth-first, each group entered once, when ``recursive``)."""
    if not recursive:
        return [(name, group.get(name, getlink=True)) for name in group]
    found = []
    group.visititems_links(lambda name, link: found.append(("/" + name, link)))
    return found


def ls(path, group="/", recursive=False, verbose=False):
    """Lines listing what PATH names, like h5ls: ``name  Group``,
    ``name  Dataset {10/Inf, 20}``, ``name  Soft Link {/target}``...

    ``group`` is a path below the object PATH names (a leading '/' is
    ignored).  A dataset or datatype is listed alone; a group by its members.
    """
    root, in_root = split_path(path, _store_or_file, "an h5lake store or HDF5 file")
    with _open_object(root) as (top, gaps):
        inner = posixpath.join(in_root, group.strip("/")).strip("/")
        named = posixpath.join(root, inner)
        link = _named_link(top, inner)
        if link is not None and not isinstance(link, HardLink):
            # A soft or external link (dangling or not) is shown as the link.
            return [f"{posixpath.basename(inner)}  {_link_text(link)}"]
        target = _lookup(top, inner, named)
        if isinstance(target, Group):
            entries = _members(target, recursive)
            first_seen = {target.id: target.name}
        else:
            entries = [(posixpath.basename(target.name), HardLink())]
            first_seen = {}
        width = max((len(_shown(name)) for name, _link in entries), default=0)
        lines = []
        if verbose and isinstance(target, Group) and len(target.attrs):
            # the listed group's own attributes (the root group's included)
            lines = [f"{target.name}  Group"] + ["    " + line for line in _details(target)]
        for name, link in entries:
            text, obj = _link_text(link), None
            if isinstance(link, HardLink):
                obj = target[name.lstrip("/")] if isinstance(target, Group) else target
                text = _object_text(obj)
                # (A dataset whose values h5lake cannot read says so on its line.)
                text += "".join(f"  (values {_gap_text(gap)})" for gap in gaps
                                if gap["path"] == obj.name and gap["part"] == "values")
                if obj.id in first_seen:
                    text += f", same as {first_seen[obj.id]}"
                    obj = None          # described where it was first seen
                else:
                    first_seen[obj.id] = obj.name
            lines.append(f"{_shown(name).ljust(width)}  {text}")
            if verbose and obj is not None:
                lines.extend("    " + line for line in _details(obj))
                lines.extend(f"    {_part_label(gap['part'])} ({_gap_text(gap)})"
                             for gap in gaps if gap["path"] == obj.name and gap["part"]
                             and gap["part"] != "values")     # (said on its line)
        # What the file holds and h5lake could not read is listed all the same.
        if isinstance(target, Group):
            for gap in gaps:
                if gap["part"] is None and _below(gap["path"], target.name, recursive):
                    name = gap["path"] if recursive else posixpath.basename(gap["path"])
                    lines.append(f"{name.ljust(width)}  ({_gap_text(gap)})")
        return lines


# ---------------------------------------------------------------------------
# info
# ---------------------------------------------------------------------------

# Where a dataset's per-chunk statistics records live, below its prefix
# (metadata, not chunks).
_STATS_DIR = "/.h5lake/"


def _chunk_bytes_of(f, datasets):
    """Bytes of the chunk objects of ``datasets`` (of the open store ``f``)."""
    if not datasets:
        return 0
    total, sizes = 0, None
    for d in datasets:
        for place in f._fs.raw.dataset_chunk_objects(d._oid):
            if not is_url(place):
                total += os.path.getsize(place) if os.path.exists(place) else 0
                continue
            if sizes is None:
                sizes = dict(f._fs.raw.stored_sizes())
            # (The store's keys are the end of the object's URL.)
            parts = place.split("/")[3:]
            total += next((sizes[k] for k in ("/".join(parts[i:]) for i in range(len(parts)))
                           if k in sizes), 0)
    return total


def _store_bytes(root, f):
    """Sizes of the store's files (of an S3 domain's objects, listed
    through the open file ``f``): metadata documents vs chunk objects."""
    sizes = {"stored_bytes": 0, "metadata_bytes": 0, "chunk_bytes": 0, "chunks": 0}
    if is_url(root):
        for key, size in f._fs.raw.stored_sizes():
            sizes["stored_bytes"] += size
            if key.startswith("db/") and posixpath.basename(key) not in _METADATA_FILES \
                    and _STATS_DIR not in key:
                sizes["chunk_bytes"] += size
                sizes["chunks"] += 1
            else:
                sizes["metadata_bytes"] += size
        return sizes
    db = os.path.join(root, "db")
    for dirpath, _dirs, files in os.walk(root):
        in_db = (dirpath == db or dirpath.startswith(db + os.sep)) and \
            _STATS_DIR not in dirpath.replace(os.sep, "/") + "/"
        for name in files:
            size = os.path.getsize(os.path.join(dirpath, name))
            sizes["stored_bytes"] += size
            if in_db and name not in _METADATA_FILES:
                sizes["chunk_bytes"] += size
                sizes["chunks"] += 1
            else:
                sizes["metadata_bytes"] += size
    return sizes


def info(path):
    """Summary of a store as a dict: object, attribute and link counts, and
    logical (uncompressed) vs stored bytes.

    Objects are counted once however many hard links reach them; the bytes
    are those of every file in the store, including objects no link reaches
    any more (deleting a link leaves its object in place).
    """
    if is_hdf5_file(path):
        with warnings.catch_warnings():
            # what the file holds that h5lake cannot open is listed below
            warnings.simplefilter("ignore", UserWarning)
            summary = _summary(os.fspath(path))
        # The file's own bytes; its data is not in any store.
        summary.update(store=os.path.abspath(path), stored_bytes=os.path.getsize(path),
                       metadata_bytes=None, chunk_bytes=None, chunks=None,
                       compression_ratio=None)
        return summary
    root, inner = split_path(path)
    if inner:
        raise ValueError(f"{path}: info describes a whole store; give the store path {root}")
    summary = _summary(root)
    chunk_bytes = summary["chunk_bytes"]
    # Only what the store holds compresses: data never written reads as the
    # fill value, and linked data stays in its file.
    stored = summary["stored_logical_bytes"]
    counted = chunk_bytes - summary.pop("uncounted_chunk_bytes", 0)
    summary["compression_ratio"] = stored / counted if stored and counted > 0 else None
    return summary


def gap_line(gap):
    """A gap of an HDF5 file (see :func:`_open_in`) as one line."""
    what = gap["path"] if gap["part"] is None else f"{gap['path']}: {gap['part']}"
    return f"{what}: {gap['reason']}"


def _summary(root):
    """Counts and sizes of the store at ``root`` (see :func:`info`)."""
    links = {"hard": 0, "soft": 0, "external": 0}
    with File(root, "r") as f:
        objects = {f.id: f}

        def count(name, link):
            if isinstance(link, SoftLink):
                links["soft"] += 1
            elif isinstance(link, ExternalLink):
                links["external"] += 1
            else:
                links["hard"] += 1
                obj = f[name]
                objects.setdefault(obj.id, obj)

        f.visititems_links(count)
        found = list(objects.values())
        datasets = [o for o in found if isinstance(o, Dataset)]
        summary = {
            "store": root if is_url(root) else os.path.abspath(root),
            "groups": sum(isinstance(o, Group) for o in found),
            "datasets": len(datasets),
            "datatypes": sum(isinstance(o, Datatype) for o in found),
            "attributes": sum(len(o.attrs) for o in found),
            "links": links,
            # variable-length data has no fixed size to count
            "logical_bytes": sum(_logical_bytes(d) for d in datasets),
            "stored_logical_bytes": 0,
            "linked_bytes": 0,
        }
        for d in datasets:
            stored, linked = _where_bytes_are(d)
            summary["stored_logical_bytes"] += stored
            summary["linked_bytes"] += linked
        summary.update(_store_bytes(root, f))
        # Chunks of datasets whose values have no size counted (variable-
        # length strings, references): left out of the compression ratio,
        # as their values are left out of the logical bytes.
        summary["uncounted_chunk_bytes"] = _chunk_bytes_of(
            f, [d for d in datasets if d.size and not _logical_bytes(d)])
        if f.skipped_objects:
            summary["not_readable"] = [gap_line(g) for g in f.skipped_objects]
    return summary


def _where_bytes_are(dset):
    """``(stored, linked)``: logical bytes of the chunks the store holds
    (at most the dataset's size), and of the data a linked dataset leaves
    in its source file."""
    total = _logical_bytes(dset)
    if not total:
        return 0, 0
    layout = (dset._fs.doc(dset._oid).get("creationProperties") or {}).get("layout") or {}
    cls = layout.get("class", "")
    if cls.endswith("_REF") or cls.endswith("_REF_INDIRECT"):
        return 0, total
    chunk = layout.get("dims") if cls == "H5D_CHUNKED" else None
    per_chunk = total if not chunk else math.prod(chunk) * (total // max(1, math.prod(dset.shape)))
    written = dset._fs.raw.dataset_chunk_count(dset._oid)
    return min(total, written * per_chunk), 0


# ---------------------------------------------------------------------------
# diff
# ---------------------------------------------------------------------------

def _slabs(shape, element_bytes, budget):
    """Index tuples (of slices) covering ``shape`` in C order, each block at
    most ``budget`` bytes unless a single element is larger."""
    if 0 in shape:
        return
    block = list(shape)
    for axis in range(len(shape)):
        inner = math.prod(block[axis + 1:]) * element_bytes
        block[axis] = max(1, min(shape[axis], budget // max(1, inner)))
        if inner <= budget:
            break
    counts = [-(-n // b) for n, b in zip(shape, block)]
    for corner in np.ndindex(*counts):
        yield tuple(slice(i * b, min((i + 1) * b, n)) for i, b, n in zip(corner, block, shape))


def _element_differs(p, q, rtol, atol):
    """For object arrays (variable-length strings and sequences)."""
    arrays = isinstance(p, np.ndarray), isinstance(q, np.ndarray)
    if any(arrays):
        return not all(arrays) or p.shape != q.shape or bool(_mismatch(p, q, rtol, atol).any())
    if isinstance(p, tuple) and isinstance(q, tuple):     # compound elements, member by member
        return len(p) != len(q) or any(_element_differs(u, v, rtol, atol) for u, v in zip(p, q))
    return bool(p != q)


def _mismatch(x, y, rtol, atol):
    """Boolean mask over ``x.shape``: where ``x`` and ``y`` differ.  NaN
    equals NaN; with a tolerance, numbers ``np.isclose`` calls close are equal."""
    if x.dtype.names is not None:
        mask = np.zeros(x.shape, dtype=bool)
        for name in x.dtype.names:
            field = _mismatch(x[name], y[name], rtol, atol)
            mask |= np.any(field, axis=tuple(range(x.ndim, field.ndim)))  # array members
        return mask
    if x.dtype.hasobject or y.dtype.hasobject:
        flags = [_element_differs(p, q, rtol, atol) for p, q in zip(x.flat, y.flat)]
        return np.array(flags, dtype=bool).reshape(x.shape)
    numeric = x.dtype.kind in "biufc" and y.dtype.kind in "biufc"
    if numeric and (rtol or atol) and x.dtype.kind in "iu" and y.dtype.kind in "iu":
        return _integers_apart(x, y, rtol, atol)
    if numeric and (rtol or atol):
        return ~np.isclose(x, y, rtol=rtol, atol=atol, equal_nan=True)
    differ = np.asarray(x != y)
    if x.dtype.kind in "fc" and y.dtype.kind in "fc":
        differ &= ~(np.isnan(x) & np.isnan(y))
    return differ


def _integers_apart(x, y, rtol, atol):
    """``np.isclose``'s test for integers, without its trip through float64
    (which makes 64-bit integers up to 2**11 apart equal): the distance is
    computed exactly, as an unsigned integer."""
    shape = np.broadcast_shapes(np.shape(x), np.shape(y))
    x, y = np.broadcast_arrays(np.atleast_1d(x), np.atleast_1d(y))
    if {x.dtype.kind, y.dtype.kind} == {"i", "u"}:
        # One signed, one not: where the signed one is negative, the
        # distance is the unsigned one plus its magnitude, exact as an
        # unsigned integer unless it passes 2**64 - 1 (then in float64).
        s, u = (x, y) if x.dtype.kind == "i" else (y, x)
        s64, u64 = s.astype(np.int64), u.astype(np.uint64)
        negative = s64 < 0
        far = np.zeros(x.shape, dtype=bool)
        keep = ~negative
        far[keep] = _integers_apart(s64[keep].astype(np.uint64), u64[keep], rtol, atol)
        with np.errstate(over="ignore"):
            magnitude = (~s64[negative].astype(np.uint64)) + np.uint64(1)
            distance = u64[negative] + magnitude
            wrapped = distance < u64[negative]
        yy = (y if y is u else y.astype(np.int64))[negative].astype(np.float64)
        allowed = atol + rtol * np.abs(yy)
        wide = u64[negative].astype(np.float64) + magnitude.astype(np.float64)
        far[negative] = np.where(wrapped, wide, distance.astype(np.float64)) > allowed
        return far.reshape(shape)
    kind = np.uint64 if x.dtype.kind == "u" else np.int64
    x, y = x.astype(kind), y.astype(kind)
    with np.errstate(over="ignore"):
        # Two's complement: the difference taken the right way round is
        # exact as an unsigned integer.
        distance = np.where(x >= y, x.astype(np.uint64) - y.astype(np.uint64),
                            y.astype(np.uint64) - x.astype(np.uint64))
    allowed = atol + rtol * np.abs(y.astype(np.float64))
    return ((distance != 0) & (distance.astype(np.float64) > allowed)).reshape(shape)


def _value_difference(a, b, rtol, atol):
    """Why attribute values ``a`` and ``b`` differ, or None if they are equal."""
    type_a, type_b = getattr(a, "dtype", None), getattr(b, "dtype", None)
    if type_a is None or type_b is None:            # Python str/bytes values
        if type(a) is not type(b):
            return f"{_show(a)} != {_show(b)}"
    elif not _same_type(type_a, type_b):
        return f"type {_type_label(type_a)} != {_type_label(type_b)}"
    if isinstance(a, h5t.Empty) or isinstance(b, h5t.Empty):
        same = isinstance(a, h5t.Empty) and isinstance(b, h5t.Empty)
        return None if same else f"{_show(a)} != {_show(b)}"
    x, y = np.asarray(a), np.asarray(b)
    if x.shape != y.shape:
        return f"shape {x.shape} != {y.shape}"
    return f"{_show(a)} != {_show(b)}" if _mismatch(x, y, rtol, atol).any() else None


def _may_lead_elsewhere(dt):
    """Whether values of ``dt`` can hold object or region references, also
    inside sequences (dataset's ``_holds_refs`` asks only of the object
    references in a type's fixed layout)."""
    if dt.names is not None:
        return any(_may_lead_elsewhere(dt.fields[n][0]) for n in dt.names)
    if dt.subdtype is not None:
        return _may_lead_elsewhere(dt.subdtype[0])
    if h5t.check_ref_dtype(dt) is not None:
        return True
    vlen = h5t.check_vlen_dtype(dt)
    return isinstance(vlen, np.dtype) and _may_lead_elsewhere(vlen)


def _where_refs_lead(obj, values):
    """``values`` with each object or region reference (also inside
    variable-length sequences, as in ``DIMENSION_LIST``) replaced by what it
    names in ``obj``'s file (the target's path, and a region's selection),
    so that two stores whose references lead to the same places compare
    equal although their object ids differ. Other values are returned as
    they are."""
    names = {}

    def target(ref):
        if not ref:
            return None
        if ref._id not in names:
            try:
                names[ref._id] = obj.file[ref].name or f"<anonymous {ref._id.split('-')[0]}>"
            except ValueError:
                names[ref._id] = f"<dangling reference to {ref._id}>"
        if isinstance(ref, h5t.RegionReference):
            return names[ref._id], json.dumps(ref._sel, sort_keys=True)
        return names[ref._id]

    def lead(v):
        if isinstance(v, (h5t.Reference, h5t.RegionReference)):
            return target(v)
        if isinstance(v, np.void) and v.dtype.names and v.dtype.hasobject:
            return tuple(lead(v[n]) for n in v.dtype.names)     # REFERENCE_LIST's rows
        if not isinstance(v, np.ndarray):
            return v
        if v.dtype.names is not None:
            if not _may_lead_elsewhere(v.dtype):
                return v
            out = np.empty(v.shape, dtype=object)
            for index, item in np.ndenumerate(v):
                out[index] = lead(item)
            return out
        vlen = h5t.check_vlen_dtype(v.dtype)
        if h5t.check_ref_dtype(v.dtype) is None and vlen in (None, str, bytes):
            return v
        out = np.empty(v.shape, dtype=object)
        for index, item in np.ndenumerate(v):
            out[index] = lead(item)
        return out

    return lead(values)


def _read(dset, selection):
    """``dset[selection]`` as an array of the dataset's dtype (a scalar
    dataset's element may itself be a sequence, so it is boxed explicitly)."""
    value = dset[selection]
    if dset.shape != ():
        return value
    box = np.empty((), dtype=dset.dtype)
    box[()] = value
    return box


def _index_text(index):
    return "(" + ", ".join(map(str, index)) + ")"


def _kind(obj):
    for cls, name in ((Group, "group"), (Dataset, "dataset"), (Datatype, "datatype")):
        if isinstance(obj, cls):
            return name
    raise TypeError(f"unknown kind of object: {obj!r}")


def _first_true(mask, limit):
    """Indices of up to ``limit`` True entries of ``mask``, in C order
    (without materialising all of them: a slab may differ everywhere)."""
    flat = mask.reshape(-1)
    found, start = [], 0
    while len(found) < limit and start < flat.size:
        pos = start + int(np.argmax(flat[start:]))
        if not flat[pos]:
            break
        found.append(tuple(int(i) for i in np.unravel_index(pos, mask.shape)))
        start = pos + 1
    return found


class _Differ:
    """Walks two object trees side by side and collects their differences."""

    def __init__(self, rtol, atol, verbose, gaps=((), ())):
        self.rtol, self.atol, self.verbose = rtol, atol, verbose
        # Datasets of each side whose values h5lake cannot read (a filter
        # it lacks): said once as not compared, with the other gaps.
        self.unreadable = tuple({g["path"] for g in side if g["part"] == "values"}
                                for side in gaps)
        self.out = []
        self.seen = set()       # (id in A, id in B) pairs compared, for cycles

    def objects(self, a, b, path):
        key = (a.id, b.id)
        if key in self.seen:
            return
        self.seen.add(key)
        kind_a, kind_b = _kind(a), _kind(b)
        if kind_a != kind_b:
            self.out.append(f"{path}: {kind_a} in A, {kind_b} in B")
            return
        self.attributes(a, b, path)
        getattr(self, kind_a)(a, b, path)

    def group(self, a, b, path):
        names_a, names_b = set(a), set(b)
        for name in sorted(names_a | names_b):
            child = posixpath.join(path, name)
            if name not in names_b:
                self.out.append(f"{child}: only in A")
            elif name not in names_a:
                self.out.append(f"{child}: only in B")
            else:
                link_a, link_b = a.get(name, getlink=True), b.get(name, getlink=True)
                text_a, text_b = _link_text(link_a), _link_text(link_b)
                if text_a != text_b:
                    self.out.append(f"{child}: {text_a} in A, {text_b} in B")
                elif isinstance(link_a, HardLink):
                    self.objects(a[name], b[name], child)

    def attributes(self, a, b, path):
        names_a, names_b = set(a.attrs), set(b.attrs)
        for name in sorted(names_a | names_b):
            where = f"attribute {name!r} of {path}"
            if name not in names_b:
                self.out.append(f"{where}: only in A")
            elif name not in names_a:
                self.out.append(f"{where}: only in B")
            else:
                type_a, type_b = _attribute_type(a, name), _attribute_type(b, name)
                if type_a is not None and type_b is not None and not _same_type(type_a, type_b):
                    self.out.append(f"{where}: type {_type_label(type_a)} != "
                                    f"{_type_label(type_b)}")
                    continue
                pads = _padding_difference(_attribute_stored_type(a, name),
                                           _attribute_stored_type(b, name))
                if pads is not None:
                    self.out.append(f"{where}: {pads}")
                    continue
                try:
                    va, vb = a.attrs[name], b.attrs[name]
                except TypeError:
                    # a type numpy has none for: compared as stored
                    why = None if _stored_attr(a, name) == _stored_attr(b, name) else \
                        "differs (as stored)"
                else:
                    why = _value_difference(va, vb, self.rtol, self.atol)
                    if why is not None or (type_a is not None and _may_lead_elsewhere(type_a)):
                        # References are equal where they lead to the same
                        # place, whatever their ids (the same ids may lead
                        # elsewhere in another file).
                        why = _value_difference(_where_refs_lead(a, va), _where_refs_lead(b, vb),
                                                self.rtol, self.atol)
                if why is not None:
                    self.out.append(f"{where}: {why}")

    def datatype(self, a, b, path):
        if not _same_type(a.dtype, b.dtype):
            self.out.append(f"datatype {path}: {_type_label(a.dtype)} != {_type_label(b.dtype)}")

    def dataset(self, a, b, path):
        where = f"dataset {path}"
        if _numpy_type(a) is None or _numpy_type(b) is None:
            return self._stored_dataset(a, b, where)
        same_type, same_shape = _same_type(a.dtype, b.dtype), a.shape == b.shape
        if not same_type:
            self.out.append(f"{where}: type {_type_label(a.dtype)} != {_type_label(b.dtype)}")
        elif (pads := _padding_difference(_stored_type(a), _stored_type(b))) is not None:
            # (The values are still compared: the padding is the type's.)
            self.out.append(f"{where}: {pads}")
        if not same_shape:
            self.out.append(f"{where}: shape {_shape_text(a)} != {_shape_text(b)}")
        if not (same_type and same_shape) or a.shape is None:
            return
        if a.name in self.unreadable[0] or b.name in self.unreadable[1]:
            return
        wanted = _LISTED_DIFFERENCES if self.verbose else 1
        element_bytes = _VLEN_ELEMENT_BYTES if a.dtype.hasobject else a.dtype.itemsize
        count, listed = 0, []
        for selection in _slabs(a.shape, element_bytes, _SLAB_BYTES):
            try:
                x = _where_refs_lead(a, _read(a, selection))
                y = _where_refs_lead(b, _read(b, selection))
            except (TypeError, ValueError) as e:
                # (A type h5lake cannot read yet, a virtual dataset whose
                # source it cannot map: this dataset is named as not
                # compared, and the others still are.)
                self.out.append(f"{where}: not compared (h5lake cannot read its values: {e})")
                return
            mask = _mismatch(x, y, self.rtol, self.atol)
            count += int(np.count_nonzero(mask))
            for local in _first_true(mask, wanted - len(listed)):
                index = tuple(s.start + i for s, i in zip(selection, local))
                listed.append(f"{_index_text(index)}: {_show(x[local])} != {_show(y[local])}")
        if count:
            plural = "" if count == 1 else "s"
            self.out.append(f"{where}: {count} difference{plural} (first at {listed[0]})")
            if self.verbose:
                self.out.extend(f"    at {line}" for line in listed)
                if count > len(listed):
                    self.out.append(f"    ... and {count - len(listed)} more")
        self._nulls(a, b, where)

    def _nulls(self, a, b, where):
        """Of two 1-D tables that can hold nulls (columnar), the rows whose
        nulls differ: values alone read a null as the fill value."""
        if not (getattr(a, "is_columnar", False) and getattr(b, "is_columnar", False)) \
                or len(a.shape) != 1:
            return
        count, first = 0, None
        for (rows,) in _slabs(a.shape, a.dtype.itemsize or 1, _SLAB_BYTES):
            ta, tb = a.to_arrow(rows), b.to_arrow(rows)
            for name in ta.column_names:
                x = np.asarray(ta.column(name).is_null())
                y = np.asarray(tb.column(name).is_null())
                differ = np.flatnonzero(x != y)
                count += differ.size
                if differ.size and first is None:
                    i = int(differ[0])
                    first = (f"[{rows.start + i}] {name}: "
                             f"{'null' if x[i] else 'a value'} != {'null' if y[i] else 'a value'}")
        if count:
            plural = "" if count == 1 else "s"
            self.out.append(f"{where}: {count} difference{plural} in nulls (first at {first})")


    def _stored_dataset(self, a, b, where):
        """Datasets of a type with no numpy equivalent (custom float
        layouts, region references): types compared as stored, values as
        stored elements."""
        ta, tb = _stored_type(a), _stored_type(b)
        if ta is None or tb is None or ta != tb:
            self.out.append(f"{where}: type {json.dumps(ta)} != {json.dumps(tb)}")
            return
        if a.shape != b.shape:
            self.out.append(f"{where}: shape {_shape_text(a)} != {_shape_text(b)}")
            return
        if a.shape is None:
            return
        count = 0
        for selection in _slabs(a.shape or (1,), _VLEN_ELEMENT_BYTES, _SLAB_BYTES):
            x, y = _stored_values(a, selection), _stored_values(b, selection)
            count += sum(1 for u, v in zip(x, y) if u != v)
        if count:
            plural = "" if count == 1 else "s"
            self.out.append(f"{where}: {count} difference{plural} (in the stored elements)")


def _attribute_type(obj, name):
    """The numpy type of attribute ``name`` (strings' encoding included,
    which a read of a scalar string loses); None when it has none."""
    try:
        return obj.attrs.get_id(name).dtype
    except (TypeError, AttributeError, KeyError):
        return None


def _attribute_stored_type(obj, name):
    """Attribute ``name``'s type as stored (HSDS JSON); None elsewhere."""
    try:
        return obj.attrs.get_id(name)._doc()["type"]
    except (TypeError, AttributeError, KeyError):
        return None


def _logical_bytes(dset):
    """Bytes of the dataset's values; 0 for variable-length types."""
    dt = _numpy_type(dset)
    if dt is not None:
        return 0 if dt.hasobject else dset.nbytes
    size = (_stored_type(dset) or {}).get("size")
    return size * math.prod(dset.shape or ()) if isinstance(size, int) and dset.shape is not None else 0


def _numpy_type(dset):
    """The dataset's numpy dtype; None when its type has none (h5lake reads
    such datasets only through the VOL connector)."""
    try:
        return dset.dtype
    except TypeError:
        return None


def _stored_type(obj):
    """The type of an h5lake dataset as stored (HSDS JSON); None elsewhere."""
    try:
        return obj._fs.doc(obj._oid)["type"]
    except (AttributeError, KeyError):
        return None


def _stored_attr(obj, name):
    """An h5lake object's attribute as stored (type, shape, value); None
    for objects of other libraries."""
    try:
        doc = json.loads(obj._fs.raw.attr_get(obj._oid, name))
    except AttributeError:
        return None
    return {k: doc.get(k) for k in ("type", "shape", "value")}


def _stored_values(dset, selection):
    """The stored bytes of each element of ``selection`` (a tuple of slices;
    a scalar dataset is one element)."""
    from . import selections as sel
    s = sel.select(dset.shape, selection if dset.shape != () else ())
    s.check_extent()
    raw = dset._fs.raw
    t = _stored_type(dset)
    if "size" not in t:   # variable-length (region references)
        return [bytes(v) for v in raw.dataset_read_vlen(dset._oid, s.engine_sel)]
    buf = np.empty(s.mshape, dtype="V%d" % t["size"])
    raw.dataset_read(dset._oid, s.engine_sel, buf)
    return [bytes(v) for v in buf.reshape(-1)]


def _diff_side(spec, stack):
    """The h5lake object ``spec`` names and the gaps of its file: an open
    object as is, else as :func:`_open_in` finds it."""
    if isinstance(spec, HLObject):
        return spec, []
    return _open_in(spec, stack)


def _not_compared(gaps, top, side):
    """A difference line for each gap of one side below ``top``: what
    could not be read was not compared, and is never reported as equal."""
    lines = []
    for gap in gaps:
        if gap["path"] != top and not _below(gap["path"], top, True):
            continue
        what = gap["path"] if gap["part"] is None else f"{gap['part']} of {gap['path']}"
        lines.append(f"{what}: not compared ({side} holds what h5lake cannot read: "
                     f"{gap['reason']})")
    return lines


def _userblock_difference(a, b):
    """A line when the files' user blocks (what `load` and `get` carry, a
    MATLAB file's header) differ; none when both are the same or absent."""
    from .files import _userblock_bytes
    block_a = _userblock_bytes(a._fs, a._fs.raw.root_id)
    block_b = _userblock_bytes(b._fs, b._fs.raw.root_id)
    if block_a == block_b:
        return []
    if len(block_a) != len(block_b):
        return [f"user block: {len(block_a)} bytes != {len(block_b)} bytes"]
    at = next(i for i, (x, y) in enumerate(zip(block_a, block_b)) if x != y)
    return [f"user block: differs from byte {at}"]


def _tolerance(name, value):
    """A tolerance as a float, refused unless finite and not negative (NaN
    made every difference of integers compare as close)."""
    try:
        value = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a number, not {value!r}") from None
    if not math.isfinite(value) or value < 0:
        raise ValueError(f"{name} must be a finite number >= 0, not {value}")
    return value


def diff(a, b, *, rtol=0.0, atol=0.0, verbose=False):
    """Differences between ``a`` and ``b`` as lines (empty when equal).

    Either side is an h5lake store, ``store/path``, an HDF5 file
    (``file.h5`` or ``file.h5/path``) or an open h5lake File/Group/Dataset.
    Compares link names, kinds and soft/external targets, object kinds,
    attributes, dataset types, shapes and values (NaN equals NaN; numbers
    within ``np.isclose(rtol, atol)`` are equal when a tolerance is given).
    Data is read in slabs of at most 64 MiB.  ``verbose`` lists up to 10
    differing elements per dataset.  Whatever h5lake cannot read in an HDF5
    file is never taken as equal: each such object is a difference line
    saying it was not compared.
    """
    rtol, atol = _tolerance("rtol", rtol), _tolerance("atol", atol)
    with contextlib.ExitStack() as stack:
        (obj_a, gaps_a), (obj_b, gaps_b) = _diff_side(a, stack), _diff_side(b, stack)
        differ = _Differ(rtol, atol, verbose, (gaps_a, gaps_b))
        if obj_a.name == "/" and obj_b.name == "/":
            differ.out += _userblock_difference(obj_a, obj_b)
        differ.objects(obj_a, obj_b, obj_a.name or "/")
        return (differ.out + _not_compared(gaps_a, obj_a.name or "/", "A")
                + _not_compared(gaps_b, obj_b.name or "/", "B"))


# ---------------------------------------------------------------------------
# rm, cp, mv
# ---------------------------------------------------------------------------

def rm(path, *, recursive=False):
    """Remove a whole store (directory), or the link ``store/inner/path``
    (like ``del f[path]``).  A whole store, or a non-empty group, needs
    ``recursive=True``.  A path ending in ``.`` or ``..`` is refused, as
    rm(1) refuses it (``store/group/..`` would name the whole store)."""
    last = os.fspath(path).rstrip("/").rsplit("/", 1)[-1]
    if last in (".", ".."):
        raise ValueError(f"{path}: refusing to remove '.' or '..'; name what to remove")
    root, inner = split_path(path)
    if not inner:
        # A store is removed with its contents, like a non-empty group:
        # only when asked to.
        if not recursive:
            raise ValueError(f"{path} is a whole store; use -r (recursive=True) to remove it "
                             "with its contents")
        if is_url(root):
            _core.delete_domain(root)
        else:
            shutil.rmtree(root)
        return
    with File(root, "r+") as f:
        if isinstance(_link(f, inner, path), HardLink) and not recursive:
            obj = f[inner]
            if isinstance(obj, Group) and len(obj):
                raise ValueError(f"{path}: group is not empty; use -r (recursive=True) "
                                 "to remove it with its contents")
        del f[inner]


def _destination(f, inner, source_inner):
    """Path in ``f`` where the object at ``source_inner`` goes when copied or
    moved to ``inner``: inside it (under its own name) when that is a group."""
    target = "/" + inner
    if isinstance(f.get(target), Group):
        target = posixpath.join(target, posixpath.basename(source_inner))
    return target


def _copy_store(src, dst, force):
    _refuse_inside_store(dst)
    if is_url(src):
        raise ValueError(f"{src}: copying whole stores works on local directories only")
    if os.path.lexists(dst):
        if os.path.exists(dst) and os.path.samefile(src, dst):
            raise ValueError(f"{src} and {dst} are the same store")
        if not force:
            raise FileExistsError(f"{dst} already exists; use -f (force=True) to replace it")
        if not is_store(dst):
            raise FileExistsError(f"{dst} exists and is not an h5lake store; refusing to replace it")
        shutil.rmtree(dst)
    shutil.copytree(src, dst)


def cp(src, dst, *, force=False):
    """Copy a whole store to a new directory ``dst``, or the object
    ``store/path`` to ``store2/path2`` (into it when it is a group), in the
    same store or another one.  ``force`` replaces what is at ``dst``."""
    src_root, src_inner = split_path(src)
    if not src_inner:
        _copy_store(src_root, dst, force)
        return
    dst_root, dst_inner = split_path(dst)
    with contextlib.ExitStack() as stack:
        dst_file = stack.enter_context(File(dst_root, "r+"))
        same = _same_store(src_root, dst_root)
        src_file = dst_file if same else stack.enter_context(File(src_root, "r"))
        obj = _lookup(src_file, src_inner, src)
        target = _destination(dst_file, dst_inner, src_inner)
        if same and isinstance(obj, Group) and \
                (target + "/").startswith(obj.name.rstrip("/") + "/"):
            # (As cp -r refuses a directory into itself: the copy would be
            # made while its own source grows.)
            raise ValueError(f"cannot copy {obj.name} into itself ({target})")
        if target in dst_file:
            if not force:
                raise FileExistsError(f"{dst}: {target} already exists; use -f (force=True) to replace it")
            del dst_file[target]
        dst_file.copy(obj, target)


def mv(src, dst):
    """Rename a store directory, or move the object ``store/path`` to
    ``store/path2`` (into it when it is a group) within the same store."""
    src_root, src_inner = split_path(src)
    if not src_inner:
        if is_url(src_root):
            raise ValueError(f"{src}: moving whole stores works on local directories only")
        _refuse_inside_store(dst)
        if os.path.lexists(dst):
            raise FileExistsError(f"{dst} already exists; remove it first (h5lake rm)")
        os.rename(src_root, dst)
        return
    dst_root, dst_inner = split_path(dst)
    if not _same_store(src_root, dst_root):
        raise ValueError(f"{src} and {dst} are in different stores; "
                         "use cp then rm to move an object between stores")
    with File(src_root, "r+") as f:
        _link(f, src_inner, src)       # a missing source is named before anything else
        target = _destination(f, dst_inner, src_inner)
        if target in f:
            raise FileExistsError(f"{dst}: {target} already exists; remove it first (h5lake rm)")
        if (target + "/").startswith("/" + src_inner + "/"):
            raise ValueError(f"cannot move /{src_inner} into itself ({target})")
        f.move(src_inner, target)
