"""The ``h5lake`` command line: ``ls``, ``info``, ``diff``, ``rm``, ``cp``,
``mv`` over stores and the objects in them, ``load`` (HDF5 file -> store),
``get`` (store -> HDF5 file, or a dataset -> Parquet file), ``stats`` and
``query`` (per-chunk statistics, and conditions answered with them) and
``serve`` (the HSDS REST API).

Exit status: 0 on success (and for ``diff``, when equal), 1 when ``diff``
finds differences, 2 on any error (h5diff's convention), 3 when ``load`` or
``get`` finished but could not carry everything (each object left out is
named; ``--skip-unsupported`` accepts that and exits 0).  Errors are one
line on stderr, ``h5lake <command>: error: <message>``; set H5LAKE_DEBUG=1
to get the traceback instead.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import threading
import sys

import numpy as np

import h5lake
from h5lake._hl import sizes

_ERRORS = (OSError, KeyError, ValueError, TypeError, RuntimeError)


def parse_size(text):
    """Bytes in ``"4M"``, ``"8MB"``, ``"512k"``, ``"1.5GiB"`` or ``"65536"``
    (K, M, G, T are powers of 1024)."""
    try:
        return sizes.parse_size(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def parse_size_or_zero(text):
    """As :func:`parse_size`, also taking 0 (for options where 0 means off)."""
    try:
        return sizes.parse_size(text, zero=True)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def _human(nbytes):
    """``1536`` -> ``1.5 KiB``."""
    size = float(nbytes)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if size < 1024:
            break
        size /= 1024
    else:
        unit = "TiB"
    return f"{nbytes} B" if unit == "B" else f"{size:.1f} {unit}"


def format_info(summary):
    """``h5lake.info``'s dict as aligned ``label  value`` lines."""
    links = summary["links"]
    ratio = summary["compression_ratio"]
    # (An HDF5 file read in place is a file, and its bytes are read there.)
    in_file = summary.get("chunk_bytes") is None and summary.get("metadata_bytes") is None
    rows = [("file" if in_file else "store", summary["store"])]
    rows += [(key, summary[key]) for key in ("groups", "datasets", "datatypes", "attributes")]
    rows += [(f"{kind} links", links[kind]) for kind in ("hard", "soft", "external")]
    rows += [(key.replace("_", " "), f"{summary[key]} ({_human(summary[key])})")
             for key in ("logical_bytes", "stored_logical_bytes", "linked_bytes", "stored_bytes",
                         "metadata_bytes", "chunk_bytes") if summary.get(key) is not None]
    if summary.get("chunks") is not None:
        rows.append(("chunks", summary["chunks"]))
    if ratio is not None:
        ratio = f"{ratio:.2f}"
    elif summary.get("chunk_bytes") is None:
        # (An HDF5 file: its bytes are the file's, not chunks h5lake counted.)
        ratio = "n/a (an HDF5 file; h5lake info of a store made by h5lake load counts chunks)"
    else:
        ratio = "n/a (no chunks stored)"
    rows.append(("compression ratio", ratio))
    rows += [("not readable", gap) for gap in summary.get("not_readable", [])]
    width = max(len(label) for label, _value in rows)
    return [f"{label.ljust(width)}  {value}" for label, value in rows]


# ---------------------------------------------------------------------------
# commands
# ---------------------------------------------------------------------------

def _ls(args):
    for line in h5lake.ls(args.path, recursive=args.recursive, verbose=args.verbose):
        print(line)
    return 0


def _info(args):
    summary = h5lake.info(args.path)
    print(json.dumps(summary, indent=2) if args.json else "\n".join(format_info(summary)))
    return 0


def _diff(args):
    lines = h5lake.diff(args.a, args.b, rtol=args.rtol, atol=args.atol, verbose=args.verbose)
    if not args.quiet:
        for line in lines:
            print(line)
    return 1 if lines else 0


def _rm(args):
    # As rm(1): every path is tried, and each that could not be removed is
    # named (a failure part way through no longer hides what was done).
    failed = 0
    for path in args.paths:
        try:
            h5lake.rm(path, recursive=args.recursive)
        except _ERRORS as error:
            if os.environ.get("H5LAKE_DEBUG") == "1":
                raise
            print(f"h5lake rm: error: {_message(error)}", file=sys.stderr)
            failed += 1
    if failed and len(args.paths) > 1:
        print(f"h5lake rm: {failed} of {len(args.paths)} paths were not removed",
              file=sys.stderr)
    return 2 if failed else 0


def _cp(args):
    h5lake.cp(args.src, args.dst, force=args.force)
    return 0


def _mv(args):
    h5lake.mv(args.src, args.dst)
    return 0


def _dataset_in(path, mode):
    """The store (open in ``mode``) and the dataset ``path`` names in it;
    read-only, in an HDF5 file too (opened in place, as ``h5lake.File``
    opens it)."""
    import warnings
    from ._hl.tools import _store_or_file, split_path
    if mode == "r":
        root, inner = split_path(path, _store_or_file, "an h5lake store or HDF5 file")
    else:
        root, inner = split_path(path)
    with warnings.catch_warnings():
        if os.path.isfile(root):
            # (An HDF5 file's objects h5lake cannot read fail by name when
            # used; its warning at opening would name them all.)
            warnings.simplefilter("ignore", UserWarning)
        f = h5lake.File(root, mode)
    if not inner:
        return f, None
    obj = f[inner]
    if not isinstance(obj, h5lake.Dataset):
        f.close()
        kind = "a group" if isinstance(obj, h5lake.Group) else type(obj).__name__
        raise TypeError(f"{path}: /{inner.strip('/')} is {kind}, not a dataset")
    return f, obj


def _numeric_datasets(f):
    found = []

    def visit(_name, obj):
        if isinstance(obj, h5lake.Dataset) and obj.dtype.kind in "biufV" and obj.shape:
            found.append(obj)
    f.visititems(visit)
    return found


def _stats(args):
    if args.build:
        return _build_stats(args)
    f, dset = _dataset_in(args.path, "r")
    with f:
        if dset is None:
            raise TypeError(f"{args.path}: name a dataset (store/path/to/dataset)")
        table = dset.stats()
        total = dset.stats(sel=Ellipsis)
        for name, s in total["fields"].items():
            if s.get("min") is None:
                # (Text, or nothing counted: no bounds, and no sum to show.)
                total["fields"][name] = {k: v for k, v in s.items()
                                         if k not in ("min", "max", "sum", "mean")}
        if args.json:
            print(json.dumps(_strict_json({"chunks": table.to_pylist(), "total": total}),
                             indent=2, default=str, allow_nan=False))
            return 0
        names = [c for c in table.column_names if c not in ("chunk",)]
        print("\t".join(["chunk"] + names))
        for row in table.to_pylist():
            print("\t".join(str(row[c]) for c in ["chunk"] + names))
        print()
        for name, s in total["fields"].items():
            print(f"{name}: " + ", ".join(f"{k} {v}" for k, v in s.items()))
        for name, v in total["functions"].items():
            print(f"{name}: {v}")
        print(f"({total['chunks_from_stats']} chunks answered from statistics, "
              f"{total['chunks_read']} read)", file=sys.stderr)
    return 0


def _strict_json(v):
    """``v`` with its non-finite floats as the strings ``"NaN"``,
    ``"Infinity"`` and ``"-Infinity"``: JSON has no such numbers, and
    strict parsers refuse Python's bare tokens; bytes (bounds of text) as
    text, bytes that are not UTF-8 as backslash escapes."""
    if isinstance(v, bytes):
        return v.decode("utf-8", "backslashreplace")
    if isinstance(v, float):
        from ._hl.h5t import _float_to_json
        return _float_to_json(v)
    if isinstance(v, dict):
        return {k: _strict_json(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_strict_json(x) for x in v]
    return v


def _build_stats(args):
    f, dset = _dataset_in(args.path, "r+")
    with f:
        if dset is not None:
            targets = [dset]
        else:
            targets, off = [], []
            for d in _numeric_datasets(f):
                (off if (d._doc.get("h5lake") or {}).get("stats") is False else targets).append(d)
            for d in off:
                print(f"h5lake stats: {d.name}: created with stats=False, left without "
                      "statistics", file=sys.stderr)
        from ._hl.base import ENGINE_ERRORS, named
        try:
            chunks, computed = f._fs.raw.dataset_build_stats([d._oid for d in targets],
                                                             not args.quiet)
        except ENGINE_ERRORS as e:
            for d in targets:       # (by path, not by the engine's ids)
                e = named(d, e)
            raise e from None
        if not args.quiet:
            print(f"h5lake stats: {len(targets)} dataset{'s' if len(targets) != 1 else ''}, "
                  f"{chunks} chunks: {computed} computed, {chunks - computed} already current",
                  file=sys.stderr)
    return 0


def _flat_for_csv(pa, t):
    """``t`` with the columns CSV cannot hold spread out: a nested compound
    member as one column per field (``pos.x``), an array member as one
    column per element (``v[0]``, ``v[1]``, …)."""
    while True:
        cols, names, changed = [], [], False
        for name, col in zip(t.column_names, t.columns):
            kind = col.type
            if pa.types.is_struct(kind):
                for i in range(kind.num_fields):
                    names.append(f"{name}.{kind.field(i).name}")
                    cols.append(pa.chunked_array([c.field(i) for c in col.chunks], kind.field(i).type))
                changed = True
            elif pa.types.is_fixed_size_list(kind):
                flat = pa.chunked_array([c.flatten() for c in col.chunks], kind.value_type)
                width = kind.list_size
                for i in range(width):
                    names.append(f"{name}[{i}]")
                    cols.append(flat.take(pa.array(range(i, len(flat), width), pa.int64())))
                changed = True
            elif pa.types.is_floating(kind):
                # As Python prints floats: a whole value keeps its ".0", so
                # readers do not take the column for integers (pyarrow's
                # writer prints 23.0 as 23); float16 at float32's shortest.
                names.append(name)
                vals = col.fill_null(0).to_numpy()
                if vals.dtype == np.float16:
                    vals = vals.astype(np.float32)
                mask = col.is_null().to_numpy(zero_copy_only=False)
                cols.append(pa.array(vals.astype(str), pa.string(),
                                     mask=mask if mask.any() else None))
            elif pa.types.is_binary(kind) or pa.types.is_fixed_size_binary(kind) \
                    or pa.types.is_large_binary(kind):
                # CSV is text: a column with bytes that are not UTF-8 is
                # written with Python's escapes (b'caf\xe9' as caf\xe9, a
                # backslash as two), never refused.
                names.append(name)
                vals = col.to_pylist()
                try:
                    text = [None if v is None else v.decode() for v in vals]
                except UnicodeDecodeError:
                    text = [None if v is None else
                            v.replace(b"\\", b"\\\\").decode("utf-8", "backslashreplace")
                            for v in vals]
                cols.append(pa.array(text, pa.string()))
            elif pa.types.is_list(kind) or pa.types.is_large_list(kind):
                # A sequence as JSON text ("[1, 2, 3]", as DuckDB writes
                # lists to CSV).
                names.append(name)
                cols.append(pa.array([None if v is None else json.dumps(v, default=_json_item)
                                      for v in col.to_pylist()], pa.string()))
            else:
                names.append(name)
                cols.append(col)
        t = pa.table(cols, names=names)
        if not changed:
            return t


def _json_item(v):
    """An item of a sequence JSON has no form for: bytes as text, other
    values as Python prints them."""
    if isinstance(v, bytes):
        return v.decode("utf-8", "backslashreplace")
    return str(v)


def _written_whole(out, write):
    """Runs ``write`` on a temporary file beside ``out`` and renames it to
    ``out`` once it is complete: a failed write leaves no file behind."""
    tmp = f"{out}.h5lake-tmp-{os.getpid()}"
    try:
        write(tmp)
        os.replace(tmp, out)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def _query(args):
    f, dset = _dataset_in(args.path, "r")
    with f:
        if dset is None:
            raise TypeError(f"{args.path}: name a dataset (store/path/to/dataset)")
        fields = args.fields.split(",") if args.fields else None
        from ._hl import query
        if fields is not None and dset.dtype.names is None:
            if fields != ["value"]:
                raise ValueError(f"{dset.name} has no fields (its elements are named value)")
            fields = None
        names = fields if fields is not None or dset.dtype.names is None else list(dset.dtype.names)
        import pyarrow as pa
        from ._hl import table
        # (A scalar's one element has no coordinates: no columns for them.)
        rank = len(dset.shape)
        if dset.ndim == 1 and dset.is_columnar:
            # The matching rows as the table holds them: nulls and the
            # columns' Arrow types (timestamps, decimals) kept.
            coords = np.asarray(query.get_where_list(dset, args.expression), np.uint64)
            t = table._take_rows(pa, dset, coords, names)
        else:
            # One query for the matches and their coordinates.
            coords, found = query._found(dset, args.expression, None, names)
            t = table._records_to_arrow(pa, dset, found.dtype, found)
    matched = t.num_rows
    if args.coords and rank:
        coords = np.asarray(coords).reshape(matched, rank)
        for i in reversed(range(rank)):
            # (dim0, dim1, …; with a leading _ where a field has the name.)
            name = f"dim{i}"
            while name in t.column_names:
                name = "_" + name
            t = t.add_column(0, name, table._column(pa, np.ascontiguousarray(coords[:, i])))
    out = args.output
    if out not in (None, "-") and os.path.exists(out) and not args.force:
        raise FileExistsError(17, f"{out} exists (pass --force to replace it)")
    if out is None or out == "-":
        import pyarrow.csv as pcsv
        pcsv.write_csv(_flat_for_csv(pa, t), sys.stdout.buffer)
    elif out.lower().endswith((".parquet", ".parq", ".pq")):
        import pyarrow.parquet as pq
        _written_whole(out, lambda tmp: pq.write_table(t, tmp))
    elif out.lower().endswith(".csv"):
        import pyarrow.csv as pcsv
        flat = _flat_for_csv(pa, t)
        _written_whole(out, lambda tmp: pcsv.write_csv(flat, tmp))
    else:
        raise ValueError(f"{out}: write .parquet or .csv (or - for CSV on stdout)")
    if not args.quiet:
        print(f"h5lake query: {matched} matching element{'s' if matched != 1 else ''}"
              + ("" if out in (None, "-") else f" written to {out}"), file=sys.stderr)
    return 0


# Exit status of a load or get that left something out (see the module doc).
EXIT_INCOMPLETE = 3


def _load(args):
    if args.concat is not None:
        return _load_concat(args)
    if args.axis is not None:
        raise ValueError("--axis goes with --concat")
    return _convert("load", args, lambda: h5lake.load(
        args.src, args.dest, link=args.link, hyperchunk=args.hyperchunk,
        keep_chunks=args.keep_chunks, force=args.force, progress=not args.quiet,
        skip_unsupported=True, name=args.name, chunks=args.chunks,
        compression=args.compression, columnar=args.columnar))


def _load_concat(args):
    """``load --link --concat PATH 'run-*.h5' STORE``: one virtual dataset
    over dataset PATH of every file, end to end."""
    if not args.link:
        raise ValueError("--concat links the files (values stay in them): add --link")
    others = [o for o, v in (("--columnar", args.columnar), ("--keep-chunks", args.keep_chunks),
                             ("--name", args.name), ("--chunks", args.chunks),
                             ("--compression", args.compression)) if v]
    if others:
        raise ValueError(f"{', '.join(others)} does not apply to --concat: drop it")
    if os.path.exists(args.dest):
        if not args.force:
            raise FileExistsError(17, f"{args.dest} exists (pass --force to replace it)")
        h5lake.rm(args.dest, recursive=True) if os.path.isdir(args.dest) else os.remove(args.dest)
    import warnings
    with warnings.catch_warnings():
        # (Named below, one line each.)
        warnings.simplefilter("ignore", h5lake.VirtualSourceWarning)
        report = h5lake.concat(args.src, args.dest, path=args.concat, axis=args.axis or 0,
                               progress=not args.quiet)
    for item in report["left_out"]:
        print(f"h5lake load: warning: left out: {item}", file=sys.stderr)
    for item in report["missing"]:
        print(f"h5lake load: warning: reads as fill: {item}", file=sys.stderr)
    if not args.quiet:
        print(f"h5lake load: {args.dest}{report['name']}: "
              f"{report['sources'] - len(report['left_out'])} files as one "
              f"virtual dataset of shape {report['shape']} ({report['dtype']})", file=sys.stderr)
    gaps = len(report["left_out"]) + len(report["missing"])
    if gaps and not args.skip_unsupported:
        print(f"h5lake load: incomplete: {gaps} source(s) left out or read as fill (listed "
              "above). Pass --skip-unsupported to accept that.", file=sys.stderr)
        return EXIT_INCOMPLETE
    return 0


def _get(args):
    fmt = {"format": args.format} if args.format else {}
    return _convert("get", args, lambda: h5lake.get(
        args.src, args.dest, force=args.force, progress=not args.quiet, skip_unsupported=True,
        **fmt))


def _convert(cmd, args, run):
    """Runs a load or get; names everything it left out, and says it was
    incomplete (exit 3) unless the user accepted that."""
    report = run()
    linked = report.get("linked_datasets")
    _summarize(cmd, args, report, f"linked {linked} datasets to {args.src}, " if linked else "")
    if report["skipped"] and not args.skip_unsupported:
        n = len(report["skipped"])
        print(f"h5lake {cmd}: incomplete: {n} object{'s' if n != 1 else ''} or "
              f"part{'s' if n != 1 else ''} not copied (listed above); {args.dest} holds the "
              "rest. Pass --skip-unsupported to accept that.", file=sys.stderr)
        return EXIT_INCOMPLETE
    return 0


def _serve(args):
    def ready(url):
        where = args.root if "://" in args.root else os.path.abspath(args.root)
        print(f"h5lake serve: serving {where} at {url} (Ctrl-C to stop)",
              flush=True)

    if args.allow_noauth and args.host not in ("127.0.0.1", "localhost", "::1"):
        print(f"h5lake serve: warning: anyone who can reach {args.host} may read what the "
              "'default' ACLs allow, without a password", file=sys.stderr)
    try:
        limits = {name: getattr(args, name) for name in _SERVER_LIMITS
                  if getattr(args, name) is not None}
        h5lake.serve(args.root, host=args.host, port=args.port, password_file=args.password_file,
                     allow_noauth=args.allow_noauth, on_ready=ready,
                     link_roots=args.link_root, link_buckets=args.link_bucket, **limits)
    except KeyboardInterrupt:
        print("h5lake serve: stopped", file=sys.stderr)
    return 0


class _Terminated(KeyboardInterrupt):
    """SIGTERM (``kill``, ``timeout``, a batch scheduler ending a job):
    handled as Ctrl-C is, so that nothing half-made is left behind."""


def _raise_terminated(_signum, _frame):
    raise _Terminated


def _summarize(cmd, args, report, extra):
    """One line of what was done, and a warning per object that was not
    (stderr, so that stdout stays clean for scripts)."""
    for item in report["skipped"]:
        print(f"h5lake {cmd}: warning: not copied: {item}", file=sys.stderr)
    for note in report.get("notes", ()):
        print(f"h5lake {cmd}: note: {note}", file=sys.stderr)
    if not args.quiet:
        print(f"h5lake {cmd}: {args.dest}: {report['groups']} groups, {report['datasets']} datasets, "
              f"{report['attributes']} attributes, {report['links']} links; {extra}"
              f"{report['bytes'] / 1e6:.1f} MB of data", file=sys.stderr)


# ---------------------------------------------------------------------------
# parser
# ---------------------------------------------------------------------------

def _command(commands, name, run, summary, example):
    parser = commands.add_parser(
        name, help=summary, description=summary + ".",
        epilog="example:\n  " + example,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.set_defaults(run=run, subparser=parser)
    return parser


def _force(parser, what):
    parser.add_argument("-f", "--force", action="store_true", help=f"replace an existing {what}")


def _quiet(parser):
    parser.add_argument("-q", "--quiet", action="store_true", help="no progress output")


def _skip_unsupported(parser):
    parser.add_argument("--skip-unsupported", action="store_true",
                        help="leave out what h5lake cannot convert (named on stderr) and exit 0; "
                             "without it such a run exits 3 (incomplete)")


def _local_links(parser):
    parser.add_argument("--allow-local-links", action="store_true",
                        help="let a store in a bucket (s3://) follow links to local files "
                             "(only for stores you trust: see the README's security section)")


def build_parser():
    parser = argparse.ArgumentParser(
        prog="h5lake",
        description="Work with h5lake stores: directories holding HDF5 data in the HSDS schema. "
                    "PATH is a store, or a store followed by a path inside it (run.h5l/group/data).")
    parser.add_argument("--version", action="version", version=f"h5lake {h5lake.__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    p = _command(commands, "ls", _ls, "list the members of a group, like h5ls",
                 "h5lake ls -r -v run.h5l/detector")
    p.add_argument("path", metavar="PATH", help="a store, or store/group or store/dataset")
    p.add_argument("-r", "--recursive", action="store_true", help="list everything below the group")
    p.add_argument("-v", "--verbose", action="store_true",
                   help="also show types, chunking, filters, fill values and attributes")
    _local_links(p)

    p = _command(commands, "info", _info,
                 "summarise a store or HDF5 file: object counts, logical and stored bytes",
                 "h5lake info --json run.h5l")
    p.add_argument("path", metavar="STORE", help="the store directory, or an HDF5 file")
    p.add_argument("--json", action="store_true", help="print the summary as JSON")
    _local_links(p)

    p = _command(commands, "diff", _diff,
                 "compare two stores, HDF5 files or objects in them (exit 0 equal, 1 different, 2 error)",
                 "h5lake diff --rtol 1e-6 run.h5l run.h5")
    p.add_argument("a", metavar="A", help="a store or HDF5 file, optionally followed by /path/inside")
    p.add_argument("b", metavar="B", help="the same for the other side")
    p.add_argument("--rtol", type=float, default=0.0, help="relative tolerance for numbers")
    p.add_argument("--atol", type=float, default=0.0, help="absolute tolerance for numbers")
    p.add_argument("-v", "--verbose", action="store_true", help="list up to 10 differing elements per dataset")
    p.add_argument("-q", "--quiet", action="store_true", help="print nothing; only the exit status tells")
    _local_links(p)

    p = _command(commands, "rm", _rm, "remove a store, or an object inside one",
                 "h5lake rm -r run.h5l/detector/frames")
    p.add_argument("paths", metavar="PATH", nargs="+", help="a store, or store/path/inside")
    p.add_argument("-r", "--recursive", action="store_true", help="remove non-empty groups too")

    p = _command(commands, "cp", _cp, "copy a store, or an object into a group of the same or another store",
                 "h5lake cp run.h5l/detector other.h5l/runs")
    p.add_argument("src", metavar="SRC", help="a store, or store/path/inside")
    p.add_argument("dst", metavar="DST", help="a new store path, or store/path (a group: copy into it)")
    _local_links(p)
    _force(p, "destination")

    p = _command(commands, "mv", _mv, "rename a store, or move an object within its store",
                 "h5lake mv run.h5l/detector/raw run.h5l/archive/raw")
    p.add_argument("src", metavar="SRC", help="a store, or store/path/inside")
    p.add_argument("dst", metavar="DST", help="a new store path, or path in the same store (a group: move into it)")

    p = _command(commands, "load", _load,
                 "load an HDF5 file, or Parquet files, into a new h5lake store",
                 "h5lake load --link --hyperchunk 4M run.h5 run.h5l\n"
                 "  h5lake load --link --concat /entry/data 'run-*.h5' runs.h5l\n"
                 "  h5lake load --name events --compression zstd 'part-*.parquet' events.h5l")
    p.add_argument("src", metavar="FILE",
                   help="the HDF5 file to read; or a .parquet file, a directory of them or a "
                        "quoted glob pattern (one columnar dataset, files in natural order)")
    p.add_argument("dest", metavar="STORE", help="the store directory to create")
    p.add_argument("--link", action="store_true",
                   help="refer to the file's data instead of copying it (the file must stay in "
                        "place); Parquet: the dataset reads the files' row groups where they lie "
                        "(local or s3://), read-only")
    p.add_argument("--hyperchunk", type=parse_size_or_zero, metavar="SIZE",
                   help="link mode: read adjacent chunks together, about SIZE bytes at a time "
                        "(default 4M; 0 = one chunk at a time)")
    p.add_argument("--columnar", action="store_true",
                   help="HDF5 file: store compound datasets columnar (each chunk one Parquet "
                        "object that DuckDB, Polars and pyarrow read; gzip, zstd and lz4 are kept "
                        "as Parquet's codecs, other filters are not carried over)")
    p.add_argument("--name", help="Parquet: the dataset's path in the store (default: the first "
                                  "file's name without its extension)")
    p.add_argument("--chunks", type=int, metavar="ROWS",
                   help="Parquet: rows per chunk (default: about 16 MiB of rows; with --link, "
                        "the first row group's rows)")
    p.add_argument("--compression", choices=["gzip", "zstd", "lz4", "snappy"],
                   help="Parquet: how the dataset's chunks are compressed (default: none)")
    p.add_argument("--keep-chunks", action="store_true",
                   help="copy chunk bytes as the file stores them (several times faster; "
                        "h5lake reads the store, a real HSDS server does not)")
    p.add_argument("--concat", metavar="PATH",
                   help="with --link and a quoted glob of HDF5 files (or stores): one virtual "
                        "dataset PATH over dataset PATH of every file, end to end in natural "
                        "order of the names")
    p.add_argument("--axis", type=int, help="--concat: the axis to lay the files along (default 0)")
    _force(p, "store")
    _quiet(p)
    _skip_unsupported(p)

    p = _command(commands, "get", _get,
                 "write an h5lake store out as an HDF5 file, or a dataset as a Parquet file",
                 "h5lake get run.h5l run.h5\n"
                 "  h5lake get events.h5l/events events.parquet\n"
                 "  h5lake get --format parquet events.h5l/events events.out")
    p.add_argument("src", metavar="STORE",
                   help="the store to read (Parquet: store/path/to/dataset, one dataset)")
    p.add_argument("dest", metavar="FILE",
                   help="the file to create: HDF5, or Parquet when named .parquet, .parq or .pq")
    p.add_argument("--format", type=str.lower, choices=["parquet", "hdf5", "h5"],
                   help="what to write (default: by FILE's extension, HDF5 unless .parquet, "
                        ".parq or .pq); it must not contradict the extension")
    _force(p, "file")
    _local_links(p)
    _skip_unsupported(p)
    _quiet(p)

    p = _command(commands, "stats", _stats,
                 "show a dataset's per-chunk statistics and totals, or build missing ones",
                 "h5lake stats run.h5l/events\n"
                 "  h5lake stats --build run.h5l")
    p.add_argument("path", metavar="PATH", help="store/path/to/dataset (with --build, a store too)")
    p.add_argument("--json", action="store_true", help="print the table and totals as JSON")
    p.add_argument("--build", action="store_true",
                   help="compute and keep the statistics of chunks that have none (data written "
                        "before statistics, by HSDS, or loaded with --link)")
    _quiet(p)

    p = _command(commands, "query", _query,
                 "print or save the elements of a dataset where a condition holds, reading only "
                 "the chunks whose statistics allow a match",
                 "h5lake query run.h5l/events '(t > 1000) & (sensor == 7)' --fields t,value -o hits.parquet")
    p.add_argument("path", metavar="PATH", help="store/path/to/dataset")
    p.add_argument("expression", metavar="EXPR",
                   help="a condition over the fields, e.g. '(x > 0.5) & (id < 100)' "
                        "(a non-compound dataset's elements are named value)")
    p.add_argument("--fields", metavar="A,B", help="only these fields (default: all)")
    p.add_argument("--coords", action="store_true",
                   help="also output each match's coordinates, as columns dim0, dim1, … "
                        "(_dim0 where a field is named dim0)")
    p.add_argument("-o", "--output", metavar="FILE",
                   help="write FILE.parquet or FILE.csv (default: CSV on stdout)")
    p.add_argument("--force", action="store_true", help="replace FILE if it exists")
    _quiet(p)

    p = _command(commands, "serve", _serve,
                 "serve a store over the HSDS REST API (for h5pyd and the hs* tools)",
                 "h5lake serve --root /data/bucket --port 5101 --password-file passwd.txt\n"
                 "  python -c \"import h5pyd; f = h5pyd.File('/home/u/f.h5', 'r', "
                 "endpoint='http://127.0.0.1:5101', username='u', password='pw')\"\n\n"
                 "The store directory is the HSDS bucket: domain /home/u/f.h5 lives in\n"
                 "DIR/home/u/f.h5. Top-level folders (/home/) are made by the admin user,\n"
                 "e.g. hstouch -u admin -p PW /home/ ; hstouch -u admin -p PW -o u /home/u/")
    p.add_argument("--root", default=".", metavar="DIR|s3://BUCKET[/PREFIX]",
                   help="the store (HSDS bucket) to serve: a directory or an S3 bucket "
                        "(default: current directory)")
    p.add_argument("--host", default="127.0.0.1",
                   help="interface to listen on (default 127.0.0.1; 0.0.0.0 exposes the store to the network)")
    p.add_argument("--port", type=int, default=5101, help="port to listen on (default 5101; 0 = any free port)")
    p.add_argument("--password-file", metavar="FILE",
                   help="HSDS-style password file of user:password lines (user 'admin' may do anything)")
    p.add_argument("--allow-noauth", action="store_true",
                   help="let requests without credentials act as the 'default' ACL user")
    p.add_argument("--link-root", action="append", default=[], metavar="DIR",
                   help="let linked datasets read files below DIR (repeatable; default: none, "
                        "the server opens no file a client names; never the store or password file)")
    p.add_argument("--link-bucket", action="append", default=[], metavar="s3://BUCKET[/PREFIX]",
                   help="let linked datasets name objects below this S3 location (repeatable)")
    limits = p.add_argument_group("limits (each request is held to them; see the README's security section)")
    limits.add_argument("--memory-budget", dest="memory_budget_bytes", type=parse_size, metavar="SIZE",
                        help="memory all requests may hold at once (default 1G)")
    limits.add_argument("--max-json-elements", type=int, metavar="N",
                        help="most values in one JSON body or answer (default 1048576)")
    limits.add_argument("--max-chunks-per-write", type=int, metavar="N",
                        help="most chunks one write may reach (default 10000): each is a stored object")
    limits.add_argument("--max-document-size", dest="max_document_bytes", type=parse_size,
                        metavar="SIZE",
                        help="memory one object's document (a group's links and attributes) may "
                             "take parsed; changes past it are refused (default 64M, at most an "
                             "eighth of the memory budget)")
    limits.add_argument("--max-request-size", dest="max_request_bytes", type=parse_size, metavar="SIZE",
                        help="largest body read whole (default 100M; binary values stream)")
    limits.add_argument("--header-timeout", type=float, metavar="SECONDS",
                        help="time a client has to send a request's headers (default 30)")
    limits.add_argument("--idle-timeout", type=float, metavar="SECONDS",
                        help="an idle keep-alive connection is closed after this (default 60)")
    limits.add_argument("--max-connections-per-client", type=int, metavar="N",
                        help="open connections one client address may hold (default 64)")
    limits.add_argument("--max-connections", type=int, metavar="N",
                        help="open connections in all (default 1024)")
    return parser


# The `h5lake serve` options that are resource limits, by their names in
# h5lake.serve().
_SERVER_LIMITS = ("memory_budget_bytes", "max_json_elements", "max_chunks_per_write",
                  "max_request_bytes", "max_document_bytes",
                  "header_timeout", "idle_timeout", "max_connections_per_client",
                  "max_connections")


def _message(error):
    # KeyError's str() is the repr of its message
    if isinstance(error, KeyError) and len(error.args) == 1:
        return str(error.args[0])
    # An OSError made with an errno prints it first ("[Errno 17] ..."):
    # the text alone says it here.
    if isinstance(error, OSError) and error.errno is not None and error.strerror \
            and error.filename is None:
        error = error.strerror
    text = str(error)
    if "(message type not found" in text:
        # (HDF5's words, which h5py users know, for a path through a
        # dataset or another object that is not a group.)
        text += "; a name on that path is not a group"
    # The engine speaks to Python callers of File()'s modes; here the way
    # to make a store is a command.
    return text.replace(
        "(use mode 'w' or 'a' to create one)",
        "(make one with h5lake load, or h5lake.File(path, 'w') in Python)")


def _stdout_gone():
    """Whether standard output is a pipe whose reader went away: the
    kernel flags its write end with an error."""
    import select
    try:
        poller = select.poll()
        poller.register(sys.stdout.fileno(), select.POLLOUT)
        return any(e & (select.POLLERR | select.POLLHUP) for _, e in poller.poll(0))
    except (OSError, ValueError, AttributeError):
        return False


def main(argv=None) -> int:
    """Run the command line; returns the exit status."""
    try:
        args, extra = build_parser().parse_known_args(argv)
        if extra:
            # (Said with the command's own usage, not the top level's.)
            hint = ("; quote the file pattern, as the shell expanded it into many files "
                    "(--concat takes one pattern: 'run-*.h5')"
                    if getattr(args, "concat", None) else "")
            args.subparser.error(f"unrecognized arguments: {' '.join(extra)}{hint}")
    except SystemExit as done:          # --help, --version, usage errors
        return int(done.code or 0)
    if getattr(args, "allow_local_links", False):
        # Every store the command opens (and the Rust engine under it)
        # reads the opt-in from here.
        os.environ["H5LAKE_ALLOW_LOCAL_LINKS"] = "1"
    # (Put back when the command ends: main() may run inside a program,
    # and a SIGTERM a caller ignores stays ignored.)
    previous = None
    if threading.current_thread() is threading.main_thread() and \
            signal.getsignal(signal.SIGTERM) is not signal.SIG_IGN:
        previous = signal.signal(signal.SIGTERM, _raise_terminated)
    try:
        return _run(args)
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)


def _run(args):
    """Runs the parsed command; returns the exit status."""
    try:
        return args.run(args)
    except BrokenPipeError as error:
        if not _stdout_gone():
            # (A connection to a server or S3 that broke: a failure.)
            print(f"h5lake {args.command}: error: {_message(error)}", file=sys.stderr)
            return 2
        # The reader of our output went away (`h5lake ls | head`): quiet, as
        # a tool killed by SIGPIPE is; what stays buffered goes nowhere.
        try:
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        except OSError:
            pass
        return 141
    except _ERRORS as error:
        if os.environ.get("H5LAKE_DEBUG") == "1":
            raise
        print(f"h5lake {args.command}: error: {_message(error)}", file=sys.stderr)
        return 2
    except _Terminated:
        print(f"h5lake {args.command}: terminated", file=sys.stderr)
        return 143
    except KeyboardInterrupt:
        print(f"h5lake {args.command}: interrupted", file=sys.stderr)
        return 130
