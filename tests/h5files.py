"""Real HDF5 files, written by libhdf5 through h5py, with every kind of
object h5lake loads: types, layouts, filters, links, attributes."""

import numpy as np
import h5py


def write_everything(path):
    """One file with a bit of everything h5lake can hold; returns its path."""
    rng = np.random.default_rng(7)
    with h5py.File(path, "w") as f:
        f.attrs["title"] = "everything"
        f.attrs["int"] = np.int16(-3)
        f.attrs["floats"] = np.array([1.5, np.nan, -np.inf], dtype="f4")
        f.attrs["matrix"] = np.arange(6, dtype="<u8").reshape(2, 3)
        f.attrs["bytes"] = np.bytes_(b"fixed")
        f.attrs["vlen_strs"] = np.array(["a", "bé", ""], dtype=h5py.string_dtype())
        f.attrs["flag"] = np.bool_(True)
        f.attrs["empty"] = h5py.Empty("f8")
        f.attrs["compound"] = np.array((1, 2.5), dtype=[("a", "i4"), ("b", "f8")])
        f.attrs["big_endian"] = np.array([1, 2, 3], dtype=">i4")

        g = f.create_group("grp/sub")
        g.attrs["note"] = "nested"

        # layouts
        f.create_dataset("contig", data=np.arange(1000, dtype="f8").reshape(10, 100))
        dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
        dcpl.set_layout(h5py.h5d.COMPACT)
        space = h5py.h5s.create_simple((12,))
        h5py.h5d.create(f.id, b"compact", h5py.h5t.STD_I16LE, space, dcpl=dcpl)
        f["compact"][...] = np.arange(12, dtype="i2")
        f.create_dataset("scalar", data=np.float32(3.25))
        f.create_dataset("empty_contig", shape=(4, 4), dtype="i4")  # never written
        f.create_dataset("null", data=h5py.Empty("i8"))

        # chunked with filters, partial edge chunks, unlimited dims
        data = rng.integers(0, 1000, size=(37, 53)).astype("<i4")
        f.create_dataset("grp/gzip", data=data, chunks=(8, 16), compression="gzip",
                         compression_opts=6, shuffle=True)
        f.create_dataset("grp/fletcher", data=data.astype("f4"), chunks=(10, 10),
                         fletcher32=True)
        f.create_dataset("grp/plain_chunked", data=data.astype(">u2"), chunks=(5, 53),
                         maxshape=(None, 53))
        sparse = f.create_dataset("grp/sparse", shape=(100, 100), chunks=(10, 10),
                                  dtype="f8", fillvalue=-1.0)
        sparse[15:25, 33:48] = 2.0
        f.create_dataset("grp/f16", data=np.linspace(0, 1, 300).astype("f2"), chunks=(64,),
                         compression="gzip")
        f.create_dataset("grp/lzf", data=data.astype("f8") / 7, chunks=(16, 16),
                         compression="lzf", shuffle=True)

        # types
        cdt = np.dtype([("x", "f8"), ("y", "i1"), ("name", "S5"), ("v", "<u2", (3,))])
        comp = np.zeros(40, dtype=cdt)
        comp["x"] = np.arange(40) / 3
        comp["y"] = np.arange(40) - 20
        comp["name"] = [b"n%d" % i for i in range(40)]
        comp["v"] = np.arange(120).reshape(40, 3)
        f.create_dataset("types/compound", data=comp, chunks=(16,), compression="gzip")
        padded = np.dtype({"names": ["a", "b"], "formats": ["u1", "<f8"],
                           "offsets": [0, 8], "itemsize": 16})
        pad = np.zeros(10, dtype=padded)
        pad["a"] = np.arange(10)
        pad["b"] = np.arange(10) * 0.5
        f.create_dataset("types/padded_compound", data=pad, chunks=(4,))
        f.create_dataset("types/padded_contig", data=pad)
        f.create_dataset("types/complex", data=np.arange(8) * (1 + 2j))
        f.create_dataset("types/bool", data=np.array([True, False, True]))
        f.create_dataset("types/enum", data=np.array([0, 1, 2, 1], dtype="u1"),
                         dtype=h5py.enum_dtype({"RED": 0, "GREEN": 1, "BLUE": 2}, basetype="u1"))
        f.create_dataset("types/fixed_str", data=np.array([b"abc", b"de", b""], dtype="S4"))
        f.create_dataset("types/vlen_str", data=np.array(["one", "twö", "three"], dtype=object),
                         dtype=h5py.string_dtype())
        vl = f.create_dataset("types/vlen_int", shape=(3,), dtype=h5py.vlen_dtype("i4"),
                              chunks=(2,))
        vl[0] = [1, 2, 3]
        vl[1] = []
        vl[2] = [7]
        f.create_dataset("types/opaque", data=np.array([b"\x00\x01\xff\x02"], dtype="V4"))

        # committed datatype, links
        f["types/committed"] = np.dtype([("p", "i8"), ("q", "f4")])
        f["types/committed"].attrs["about"] = "a named type"
        f["soft"] = h5py.SoftLink("/grp/gzip")
        f["dangling"] = h5py.SoftLink("/nowhere")
        f["ext"] = h5py.ExternalLink("other.h5", "/some/path")
        f["grp/hard_again"] = f["grp/gzip"]     # second hard link to one dataset
        f["grp/sub/loop"] = f["grp"]            # a cycle
        f["grp/gzip"].attrs["units"] = "m/s"
    return path


def write_unsupported_filter(path):
    """A file with a bzip2-compressed dataset (an hdf5plugin filter h5lake
    has no codec for)."""
    import hdf5plugin
    with h5py.File(path, "w") as f:
        f.create_dataset("ok", data=np.arange(10))
        f.create_dataset("bzipped", data=np.arange(1000), chunks=(100,),
                         **hdf5plugin.BZip2())
    return path


def write_bitshuffled(path):
    """Datasets bit-shuffled by hdf5plugin's bitshuffle filter: LZ4, zstd
    and none; default and chosen block sizes; sizes with partial blocks and
    a tail of fewer than 8 elements; several element sizes and a compound.
    Returns the values by dataset name."""
    import hdf5plugin
    rng = np.random.default_rng(5)
    data = {}
    with h5py.File(path, "w") as f:
        for dtype in ("u1", "<i2", "<u4", ">i4", "<f8"):
            a = (rng.normal(size=(203, 77)) * 1000).astype(dtype)
            data[f"{dtype}_lz4"] = a
            f.create_dataset(f"{dtype}_lz4", data=a, chunks=(50, 77),
                             **hdf5plugin.Bitshuffle(cname="lz4"))
        a = np.arange(10_007, dtype="f4") / 3
        for cname in ("none", "lz4", "zstd"):
            for nelems in (0, 256):
                name = f"f4_{cname}_{nelems}"
                data[name] = a
                f.create_dataset(name, data=a, chunks=(3001,),
                                 **hdf5plugin.Bitshuffle(nelems=nelems, cname=cname))
        c = np.zeros(999, dtype=[("x", "<f4"), ("n", "<i2"), ("s", "S3")])
        c["x"] = np.arange(999) / 7
        c["n"] = np.arange(999)
        c["s"] = [str(i).encode() for i in range(999)]
        data["compound"] = c
        f.create_dataset("compound", data=c, chunks=(333,), **hdf5plugin.Bitshuffle())
    return data


def write_many_small_chunks(path, n_datasets=6, rows=200_000, chunk=10_000):
    """ICESat-2-like: many 1-D datasets of small gzip'd chunks."""
    rng = np.random.default_rng(1)
    with h5py.File(path, "w") as f:
        for i in range(n_datasets):
            f.create_dataset(f"gt{i % 3}/heights_{i}", data=rng.normal(size=rows).astype("f8"),
                             chunks=(chunk,), compression="gzip", compression_opts=4,
                             shuffle=True)
            f.create_dataset(f"gt{i % 3}/time_{i}", data=np.arange(rows, dtype="i8"),
                             chunks=(chunk,))
    return path


def write_variable_records(path):
    """Compounds holding variable-length members, as h5py writes them (its
    most common tables): strings of both character sets, sequences, nested
    compounds and arrays holding them; datasets of every layout and
    attributes."""
    utf8, ascii = h5py.string_dtype(), h5py.string_dtype("ascii")
    table = np.dtype([("a", "<i4"), ("s", utf8)])
    mixed = np.dtype([("id", "<u2"), ("name", ascii), ("seq", h5py.vlen_dtype("f8"))])
    inner = np.dtype([("tag", utf8), ("vals", h5py.vlen_dtype("<i2"))])
    nested = np.dtype([("x", "<f4"), ("inner", inner), ("pair", utf8, (2,))])
    # Members at offsets of the program's choosing (h5py takes these).
    spread = np.dtype({"names": ["a", "s", "v"], "formats": ["<i4", utf8, h5py.vlen_dtype("f8")],
                       "offsets": [0, 8, 24], "itemsize": 48})
    with h5py.File(path, "w") as f:
        rows = np.empty(250, dtype=table)
        rows["a"] = np.arange(250)
        rows["s"] = ["row %d é" % i if i % 7 else "" for i in range(250)]
        f.create_dataset("table", data=rows, chunks=(64,), compression="gzip", maxshape=(None,))
        part = f.create_dataset("partial", shape=(10,), dtype=table, chunks=(4,))
        part[5:7] = rows[5:7]               # the rest never written
        m = np.empty(5, dtype=mixed)
        m["id"] = np.arange(5)
        m["name"] = [b"n%d" % i for i in range(5)]
        m["seq"] = [np.arange(i, dtype="f8") / 3 for i in range(5)]
        f.create_dataset("mixed", data=m)
        n = np.empty((2, 3), dtype=nested)
        for i, e in enumerate(n.flat):
            e["x"] = i / 2
            e["inner"] = ("t%d" % i, np.arange(i, dtype="<i2") - 1)
            e["pair"] = ("p", "q" * i)
        f.create_dataset("nested", data=n)
        s = np.empty(3, dtype=spread)
        s["a"] = [1, 2, 3]
        s["s"] = ["x", "", "zz"]
        s["v"] = [np.ones(2), np.zeros(0), np.arange(3.0)]
        f.create_dataset("spread", data=s, chunks=(2,))
        f.create_dataset("scalar", data=np.array((7, "seven"), dtype=table))
        dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
        dcpl.set_layout(h5py.h5d.COMPACT)
        h5py.h5d.create(f.id, b"compact", h5py.h5t.py_create(table, logical=True),
                        h5py.h5s.create_simple((3,)), dcpl=dcpl)
        f["compact"][...] = rows[:3]
        f.attrs["rows"] = rows[:4]
        f.attrs["one"] = m[3]
        f["table"].attrs["nested"] = n[1]
        f["types/record"] = table           # a committed type
    return path


def write_padded_compounds(path):
    """Compounds laid out with padding (members at offsets of the program's
    choosing, a larger size, one nested in another), chunked with filters
    that work on the element size, contiguous, as an attribute and as a
    committed type."""
    padded = np.dtype({"names": ["a", "b"], "formats": ["<i2", "<f8"],
                       "offsets": [0, 8], "itemsize": 24})
    outer = np.dtype({"names": ["p", "c", "z"], "formats": [padded, "u1", ("<i4", (2,))],
                      "offsets": [4, 0, 32], "itemsize": 48})
    aligned = np.dtype([("x", "u1"), ("y", "<f8"), ("z", "<i2")], align=True)
    with h5py.File(path, "w") as f:
        p = np.zeros(100, dtype=padded)
        p["a"] = np.arange(100)
        p["b"] = np.arange(100) / 4
        f.create_dataset("padded", data=p, chunks=(16,), shuffle=True, compression="gzip",
                         fillvalue=np.array((-1, 0.5), dtype=padded))
        f.create_dataset("padded_contig", data=p[:10])
        o = np.zeros(6, dtype=outer)
        o["p"]["a"] = np.arange(6)
        o["p"]["b"] = -np.arange(6.0)
        o["c"] = 200
        o["z"] = np.arange(12).reshape(6, 2)
        f.create_dataset("nested", data=o, chunks=(4,))
        f.create_dataset("aligned", data=np.zeros(5, dtype=aligned), fletcher32=True, chunks=(5,))
        f.attrs["padded"] = p[:3]
        f["types/padded"] = padded
    return path


def write_long_floats(path):
    """numpy's longdouble (x87 80-bit in 16 bytes), as h5py writes it, in
    datasets, a compound, complex numbers and attributes; and an IEEE
    quad dataset, a float layout h5py only reads (converted by libhdf5)."""
    ld = np.arange(-5, 45, dtype=np.longdouble) / 3
    with h5py.File(path, "w") as f:
        f.create_dataset("ld", data=ld, chunks=(16,), compression="gzip")
        f.create_dataset("ld_contig", data=ld.reshape(5, 10))
        f.create_dataset("ld_scalar", data=np.longdouble(1) / 7)
        rec = np.zeros(3, dtype=[("t", "<f8"), ("v", np.longdouble)])
        rec["v"] = [1 / np.longdouble(3), -2, 1e300]
        f.create_dataset("ld_compound", data=rec)
        f.create_dataset("ld_complex", data=np.arange(4, dtype=np.clongdouble) * (1 + 2j))
        f.attrs["ld"] = ld[:4]
        quad = h5py.h5t.IEEE_F64LE.copy()
        quad.set_size(16)
        quad.set_precision(128)
        quad.set_fields(127, 112, 15, 0, 112)
        quad.set_ebias(16383)
        d = h5py.h5d.create(f.id, b"quad", quad, h5py.h5s.create_simple((6,)))
        d.write(h5py.h5s.ALL, h5py.h5s.ALL, np.arange(6, dtype=np.longdouble) / 4)
    return path


def write_time_types(path):
    """Data of HDF5's time class (H5T_TIME), which h5py creates only
    through its low-level API and cannot read as numpy values."""
    with h5py.File(path, "w") as f:
        for name, t, data in ((b"t32", h5py.h5t.UNIX_D32LE, np.arange(8, dtype="<i4")),
                              (b"t64be", h5py.h5t.UNIX_D64BE, np.arange(8, dtype=">i8") * 1000)):
            dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
            if name == b"t64be":
                dcpl.set_chunk((3,))
            d = h5py.h5d.create(f.id, name, t, h5py.h5s.create_simple((8,)), dcpl=dcpl)
            d.write(h5py.h5s.ALL, h5py.h5s.ALL, data, mtype=t)
        a = h5py.h5a.create(f.id, b"when", h5py.h5t.UNIX_D64LE, h5py.h5s.create(h5py.h5s.SCALAR))
        a.write(np.array(1_700_000_000, dtype="<i8"), mtype=h5py.h5t.UNIX_D64LE)
    return path


def write_references(path):
    """Object references in datasets and attributes (to groups, datasets,
    committed types, null ones, to objects later in name order) and the
    dimension scales libhdf5 makes of them."""
    with h5py.File(path, "w") as f:
        f["time"] = np.arange(10.0)
        f["temp"] = np.arange(50.0).reshape(10, 5)
        f["x"] = np.arange(5)
        f["time"].make_scale("time")
        f["x"].make_scale()
        f["temp"].dims[0].attach_scale(f["time"])
        f["temp"].dims[1].attach_scale(f["x"])
        f["temp"].dims[1].label = "x"
        f["grp/later"] = np.arange(3)
        f["types/t"] = np.dtype("<i2")
        f["a_ref"] = f["temp"].ref
        refs = f.create_dataset("refs", (5,), dtype=h5py.ref_dtype, chunks=(2,))
        refs[0] = f["grp"].ref
        refs[1] = f["grp/later"].ref
        refs[2] = f["types/t"].ref
        refs[3] = f.ref                      # refs[4] stays a null reference
        f.attrs["points_to"] = f["grp/later"].ref
        f["grp"].attrs["refs"] = np.array([f["x"].ref, f["temp"].ref], dtype=h5py.ref_dtype)
    return path


def write_partial_integers(path):
    """Integers kept in part of their bytes (libhdf5's precision and
    offset): 12-bit signed values in 16 bits, 20 bits at offset 4 of 32,
    contiguous, chunked with gzip, and as compound and array members."""
    with h5py.File(path, "w") as f:
        i12 = h5py.h5t.STD_I16LE.copy()
        i12.set_precision(12)
        u20 = h5py.h5t.STD_U32LE.copy()
        u20.set_precision(20)
        u20.set_offset(4)
        values = {"i12": np.array([-1, 5, -2048, 2047, 0, -7], "i2"),
                  "u20": np.array([1, 2, 1000, 2**20 - 1, 0, 77], "u4")}
        for name, t in (("i12", i12), ("u20", u20)):
            space = h5py.h5s.create_simple((6,))
            d = h5py.h5d.create(f.id, name.encode(), t, space)
            d.write(h5py.h5s.ALL, h5py.h5s.ALL, values[name])
            dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
            dcpl.set_chunk((4,))
            dcpl.set_deflate(4)
            d = h5py.h5d.create(f.id, (name + "_gzip").encode(), t, space, dcpl=dcpl)
            d.write(h5py.h5s.ALL, h5py.h5s.ALL, values[name])
        ct = h5py.h5t.create(h5py.h5t.COMPOUND, 8)
        ct.insert(b"a", 0, i12)
        ct.insert(b"b", 2, h5py.h5t.array_create(i12, (3,)))
        rec = np.array([(-3, [-1, 1, -2048])] * 6, [("a", "i2"), ("b", "i2", (3,))])
        d = h5py.h5d.create(f.id, b"rec", ct, h5py.h5s.create_simple((6,)))
        d.write(h5py.h5s.ALL, h5py.h5s.ALL, rec)
    return path
