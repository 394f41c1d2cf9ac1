"""Type stubs of the private Rust extension ``h5lake._core``.

The extension is deliberately thin: one ``Raw*`` class per engine object,
JSON documents in the HSDS forms, and whole selections handed to Rust, which
releases the GIL while it plans, fetches, decodes and scatters chunks.

Selections
----------
A *selection* is a list with one entry per dataset dimension (empty for a
scalar dataset). Each entry is either

* a tuple ``(start, count, step)`` of non-negative ints (``step >= 1``), or
* a 1-D sequence / int64 ndarray of strictly increasing indices.

A scalar dataset takes the empty selection ``[]``.

The selected block has shape ``[count or len(indices) for each entry]`` and is
laid out C-order in the caller's buffer. Buffers hold elements in the
dataset's *stored* type (its HSDS ``type``), byte for byte: the caller does any
dtype conversion. Every index must lie inside the dataset's current shape
(the engine re-checks and raises ``ValueError`` otherwise).

Errors: ``KeyError`` (missing name/object), ``ValueError`` (existing name, bad
selection or shape), ``TypeError`` (wrong type, resize of a non-chunked
dataset), ``FileNotFoundError``/``FileExistsError``/``OSError`` (storage).
"""

from typing import Callable, Literal, Sequence, Union

import numpy as np

Selection = Sequence[Union[tuple[int, int, int], Sequence[int], np.ndarray]]

class RawFile:
    def __init__(
        self,
        path: str,
        mode: Literal["r", "r+", "w", "w-", "x", "a"],
        root_creation_props_json: str = "{}",
        chunk_cache_bytes: int | None = None,
        allow_local_links: bool = False,
        durable: bool = False,
    ) -> None:
        """Open or create the store (a domain) at ``path`` with h5py's mode semantics.

        Metadata changes and small chunks of new datasets are kept in memory
        until ``flush()``/``close()`` (shared with every other handle this
        process has on the same store); ``durable=True`` writes each change
        before its call returns.

        ``path`` is a local path or ``s3://bucket/path/name.h5`` (the HSDS
        domain ``path/name.h5`` in that bucket; S3 settings come from the
        ``AWS_*`` environment variables).

        ``root_creation_props_json`` becomes the root group's creation
        properties when the store is created (``{"CreateOrder": 1}`` for
        ``track_order``). ``chunk_cache_bytes`` sets the decoded-chunk cache
        budget (default 64 MiB; 0 disables it). Cached chunks are revalidated
        against the store on every use, so other writers are always seen.

        A local ``path`` that is an HDF5 file opens in place, read-only (any
        other mode raises OSError): its metadata is loaded into memory and
        its values are read from the file."""
    @property
    def skipped(self) -> list[tuple[str, str | None, str, str]]:
        """What opening an HDF5 file in place left out: ``(path, part, reason,
        sentence)`` for each object or part of one (``part`` None: the whole
        object)."""
    def check_link_target(self, location: str) -> None:
        """PermissionError unless this store's link policy lets its links lead
        to ``location`` (a store path or URL; see the README's security section)."""
    @property
    def path(self) -> str: ...
    @property
    def root_id(self) -> str: ...
    @property
    def readonly(self) -> bool: ...
    @property
    def closed(self) -> bool: ...
    def close(self) -> None:
        """Write what is pending and let go of the store (raises if the write fails)."""
    def flush(self) -> None:
        """Write what is pending to the store."""
    @property
    def durable(self) -> bool: ...
    def domain_json(self) -> str:
        """The ``.domain.json`` document."""

    # --- objects -----------------------------------------------------------
    def get_doc(self, obj_id: str) -> str:
        """JSON text of the object's document (.group/.dataset/.datatype.json). KeyError if missing."""
    def check_linked(self, obj_id: str) -> None:
        """KeyError if the object is gone or no link leads to it any more (a reference to it is dangling)."""
    def create_group(self, creation_props_json: str = "{}") -> str:
        """Create an unlinked group; returns its id."""
    def create_dataset(self, type_json: str, shape_json: str, creation_props_json: str) -> str:
        """Create an unlinked dataset; returns its id.

        ``shape_json`` is the HSDS shape object: ``{"class": "H5S_SCALAR"}``,
        ``{"class": "H5S_NULL"}`` or ``{"class": "H5S_SIMPLE", "dims": [...],
        "maxdims": [... int or "H5S_UNLIMITED" ...]}`` (maxdims optional).
        ``creation_props_json`` holds ``layout`` (``{"class": "H5D_CHUNKED",
        "dims": [...]}`` or ``{"class": "H5D_CONTIGUOUS"}``), ``filters`` (HSDS
        filter objects), ``fillValue`` (JSON value), ``fillTime`` …
        """
    def create_datatype(self, type_json: str) -> str:
        """Create an unlinked committed datatype; returns its id."""
    def delete_object(self, obj_id: str) -> None:
        """Remove the object's document and, for a dataset, all of its chunks."""

    # --- links (stored in the group's document) ----------------------------
    def link_create(self, group_id: str, name: str, link_json: str) -> None:
        """Add a link; ValueError if the name exists. Link JSON is HSDS's:
        ``{"class": "H5L_TYPE_HARD", "id": ...}``, ``{"class": "H5L_TYPE_SOFT",
        "h5path": ...}``, ``{"class": "H5L_TYPE_EXTERNAL", "h5path": ..., "h5domain": ...}``.
        The engine adds ``created``."""
    def link_get(self, group_id: str, name: str) -> str: ...
    def link_delete(self, group_id: str, name: str) -> None: ...
    def link_rename(self, group_id: str, old: str, new: str) -> None:
        """Renames a link within its group, in one document update."""
    def links(self, group_id: str) -> list[tuple[str, str]]:
        """(name, link JSON) pairs in creation order."""
    def link_names(self, group_id: str) -> list[str]:
        """Link names in creation order."""

    # --- attributes ----------------------------------------------------------
    def attr_create(self, obj_id: str, name: str, attr_json: str, overwrite: bool) -> None:
        """``attr_json`` = ``{"type": ..., "shape": ..., "value": ...}``; ValueError if the
        name exists and not ``overwrite``. The engine adds ``created``."""
    def attr_get(self, obj_id: str, name: str) -> str: ...
    def attr_delete(self, obj_id: str, name: str) -> None: ...
    def attr_names(self, obj_id: str) -> list[str]:
        """Names in creation order."""

    # --- dataset values ------------------------------------------------------
    def dataset_stored_chunks(self, dset_id: str) -> list[tuple[list[int], int, int | None]]:
        """HDF5's chunk queries: (chunk coordinates, stored size, byte offset)
        per stored chunk, in order of coordinates; the byte offset is the
        chunk's in an HDF5 file opened in place, None for a store's."""
    def dataset_storage_size(self, dset_id: str) -> int:
        """Bytes the dataset's own stored objects take (HDF5's storage size)."""
    def dataset_stored_chunk(self, dset_id: str, coords: Sequence[int]) -> bytes | None:
        """HDF5's direct chunk read: the chunk at chunk coordinates
        ``coords`` as its filters made it; None if never written."""
    def dataset_write_hdf5_chunk(self, dset_id: str, coords: Sequence[int], data: bytes) -> None:
        """HDF5's direct chunk write: the chunk at chunk coordinates
        ``coords`` from ``data``, as its filters (all of them) made it."""
    def dataset_read(
        self, dset_id: str, selection: Selection, out: np.ndarray, fields: Sequence[str] | None = None
    ) -> None:
        """Read into ``out``. With ``fields`` (compound types), each output
        element is the packed concatenation of those members, in that order."""
    def dataset_write(
        self, dset_id: str, selection: Selection, data: np.ndarray, fields: Sequence[str] | None = None
    ) -> None:
        """Writes whole elements, or only members ``fields`` of them."""
    def dataset_read_points(
        self, dset_id: str, points: np.ndarray, out: np.ndarray, fields: Sequence[str] | None = None
    ) -> None:
        """``points``: C-contiguous int64 array of shape (n, rank); ``out`` holds n elements
        (of the projected type when ``fields`` is given)."""
    def dataset_write_points(
        self, dset_id: str, points: np.ndarray, data: np.ndarray, fields: Sequence[str] | None = None
    ) -> None: ...
    def dataset_read_vlen(self, dset_id: str, selection: Selection) -> list[bytes]:
        """Variable-length elements (vlen strings as UTF-8/ASCII bytes, vlen
        sequences as the raw bytes of their base type), C-order."""
    def dataset_write_vlen(self, dset_id: str, selection: Selection, values: Sequence[bytes],
                           members: list[str] | None = None) -> None:
        """``members``: the compound members the values are meant to give
        (a columnar table's nulls of them are written, of others kept);
        None: not known (a member whose bytes did not change is taken as
        not written)."""
    def dataset_read_points_vlen(self, dset_id: str, points: np.ndarray) -> list[bytes]: ...
    def dataset_write_points_vlen(self, dset_id: str, points: np.ndarray, values: Sequence[bytes],
                                  members: list[str] | None = None) -> None: ...
    def dataset_resize(self, dset_id: str, dims: Sequence[int]) -> None:
        """TypeError if not chunked; ValueError if beyond maxdims. Chunks now
        outside the shape are deleted; partial edge chunks are cleared beyond
        the new extent so that a later grow shows the fill value."""
    def stored_sizes(self) -> list[tuple[str, int]]:
        """``(key, size)`` of every stored object of the domain (its
        ``.domain.json`` and everything under its ``db/`` prefix)."""
    def claim_numbers(self, name: str, at_least: int, n: int) -> int:
        """Claims ``n`` numbers of the store's counter ``name``, the first at
        least ``at_least``, that no other writer (thread, process, machine)
        gets; returns the first."""
    def dataset_extend_rows(self, dset_id: str, n: int) -> int:
        """Grows a 1-D dataset by ``n`` rows at once (concurrent callers get
        disjoint rows); returns the first new row."""
    def dataset_chunk_count(self, dset_id: str) -> int:
        """Number of stored chunk objects."""
    def dataset_chunk_objects(self, dset_id: str) -> list[str]:
        """Local paths or ``s3://`` URLs of the stored chunk objects, in
        chunk order (Parquet files for a columnar dataset)."""
    def dataset_query(
        self,
        dset_id: str,
        condition: str,
        region: list[tuple[int, int]] | None = None,
        fields: list[str] | None = None,
    ) -> tuple[bytes, bytes, int, int]:
        """Elements of ``region`` (``[lo, hi)`` per dimension) where
        ``condition`` holds, in C order: coordinates (little-endian u64,
        rank per match), element bytes (just ``fields``, packed, when
        given), chunks read, chunks skipped."""
    def link_hdf5_dataset(self, src: str, path: str) -> str:
        """Links the dataset ``path`` of the HDF5 file ``src`` into this
        store as an anonymous dataset (values left in the file); its id."""
    def link_parquet_dataset(self, srcs: list[str]) -> str:
        """Links the Parquet files ``srcs`` (one schema) into this store as
        one anonymous 1-D columnar dataset (rows left in the files); its id."""
    def dataset_dims(self, dset_id: str) -> list[int]: ...
    def dataset_virtual_problems(self, dset_id: str) -> list[tuple[int, str | None, str, str]]:
        """Why mappings of a virtual dataset read (partly) as fill: (mapping,
        store or None for this one, source path, problem) each."""
    def dataset_aggregate(self, dset_id: str, region: list[tuple[int, int]] | None = None) -> str:
        """Statistics over ``region`` as JSON: fields, functions, chunks read
        and answered from statistics."""
    def dataset_chunk_stats(self, dset_id: str) -> str:
        """Every stored chunk's statistics record, as JSON."""
    def dataset_build_stats(self, ids: list[str], progress: bool) -> tuple[int, int]:
        """Computes and keeps missing or stale statistics: (chunks, computed)."""

def is_hdf5(path: str) -> bool:
    """Whether the file at ``path`` carries the HDF5 signature."""

def hdf5_version() -> tuple[int, int, int]:
    """The version of the HDF5 library h5lake reads and writes files with."""

def domain_exists(url: str) -> bool:
    """Whether ``url`` (a local path or ``s3://bucket/path``) names an existing domain."""

def delete_domain(url: str) -> None:
    """Delete the domain at ``url`` with every object in it."""

def serve(
    root: str,
    host: str = "127.0.0.1",
    port: int = 5101,
    password_file: str | None = None,
    allow_noauth: bool = False,
    on_ready: "Callable[[str], object] | None" = None,
    options_json: str = "{}",
) -> None:
    """Serve the store directory ``root`` over the HSDS REST API until a
    signal handler raises (Ctrl-C). ``on_ready(url)`` is called once the port
    is bound; ``options_json`` holds the link policy and resource limits.
    OSError if the port cannot be bound or the files not read; ValueError
    for an unknown option."""

def load_parquet(
    srcs: list[str],
    dest: str,
    name: str,
    filters_json: str = "[]",
    chunk_rows: int | None = None,
    force: bool = False,
) -> str:
    """Load Parquet files (one schema, in order) into a new store ``dest`` as
    one 1-D columnar compound dataset ``name``; returns the report as JSON.
    ValueError (nothing written) for a column type with no HDF5 form or files
    of different schemas; OSError for unreadable files."""

def table_type(schema: object) -> tuple[str, str]:
    """The compound type (HSDS JSON) a table of the Arrow schema ``schema``
    (anything with ``__arrow_c_schema__``) is stored as, and the Arrow types
    of the columns kept as their integer storage (JSON). ValueError naming
    the column for a type with no HDF5 form."""

def table_read(
    file: RawFile, dset_id: str, start: int, stop: int, fields: list[str] | None = None,
    as_stored: list[str] = [],
) -> object:
    """Rows ``start:stop`` of the members ``fields`` of a 1-D columnar dataset
    as an ``arrow_array_stream`` PyCapsule (nulls kept; h5py's booleans as
    booleans, fixed-length strings without their padding)."""

def restore_arrow_types(data: object, types_json: str, dtype_json: str) -> object:
    """``data`` (anything with ``__arrow_c_stream__``; the columns of the
    members of the compound ``dtype_json``, HSDS JSON) with the columns
    ``types_json`` names (a dataset's ``arrow_types``) given those Arrow
    types back, as an ``arrow_array_stream`` PyCapsule. ValueError for an
    unknown type name, values that do not fit it, or a fixed size that is
    not its member's."""

def pooled_empty(shape: object, dtype: object) -> object:
    """``numpy.empty(shape, dtype)`` whose data comes from h5lake's pool of
    read buffers (pages already touched, reused once an array is freed);
    from ``malloc`` below 4 MiB or with ``$H5LAKE_READ_POOL=0``."""

POOLED_MIN_BYTES: int
"""Arrays of at least this many bytes come from the pool of read buffers."""

def pool_state() -> tuple[int, int, int]:
    """(bytes handed out, bytes kept for reuse, most bytes kept) of the pool."""

def release_mappings() -> None:
    """Drops the mappings of local chunk objects kept between reads (for up
    to 10 s, 2 GiB): their pages can then leave the page cache."""

def table_write(file: RawFile, dset_id: str, data: object, at: int | None = None) -> int:
    """Writes the record batches of ``data`` (anything with
    ``__arrow_c_stream__``) to a 1-D columnar dataset from row ``at`` on,
    or appends them (``at`` None; the dataset grows atomically by each group
    of rows). Columns must be the dataset's members by name and in order;
    nulls are kept. Returns the rows written."""


class ProgressBar:
    """A progress bar on stderr, drawn as the Rust side draws its own."""
    def __init__(self, total: int, label: str, unit: str) -> None: ...
    def inc(self, n: int) -> None: ...
    def finish(self) -> None: ...
