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
    """A file with a bitshuffle-compressed dataset (an hdf5plugin filter
    h5lake has no codec for)."""
    import hdf5plugin
    with h5py.File(path, "w") as f:
        f.create_dataset("ok", data=np.arange(10))
        f.create_dataset("bitshuffled", data=np.arange(1000), chunks=(100,),
                         **hdf5plugin.Bitshuffle())
    return path


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
