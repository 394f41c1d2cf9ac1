"""Regenerates the golden chunk vectors used by tests/golden.rs.

Chunks come from the reference implementations themselves: libhdf5 (via h5py
`read_direct_chunk`), the hdf5plugin filters (LZ4, Zstd, Blosc), c-blosc (via
numcodecs) and a chunk that HSDS 1.0.2 wrote (copied from the shared fixture).
Run from this directory: `python3 make_golden.py` (needs h5py, numpy,
numcodecs, hdf5plugin).
"""
import json, os, tempfile
import numpy as np
import h5py
import numcodecs

try:
    import hdf5plugin
except ImportError:  # the plugin vectors are then skipped
    hdf5plugin = None

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "golden")
os.makedirs(OUT, exist_ok=True)
manifest = []


def save(name, stored, raw, filters, elem_size, fmt="hdf5", expect="ok"):
    with open(os.path.join(OUT, name + ".stored"), "wb") as f:
        f.write(stored)
    with open(os.path.join(OUT, name + ".raw"), "wb") as f:
        f.write(raw)
    manifest.append({"name": name, "filters": filters, "elem_size": elem_size,
                     "format": fmt, "expect": expect})


DEFLATE = lambda lvl: {"class": "H5Z_FILTER_DEFLATE", "id": 1, "name": "deflate", "level": lvl}
SHUFFLE = {"class": "H5Z_FILTER_SHUFFLE", "id": 2, "name": "shuffle"}
FLETCHER = {"class": "H5Z_FILTER_FLETCHER32", "id": 3, "name": "fletcher32"}


def h5_chunk(name, data, chunks, filters_json, **kw):
    """Write `data` with h5py and keep the first chunk exactly as libhdf5 stored it."""
    fd, path = tempfile.mkstemp(suffix=".h5")
    os.close(fd)
    with h5py.File(path, "w") as f:
        d = f.create_dataset("x", data=data, chunks=chunks, **kw)
        _, stored = d.id.read_direct_chunk((0,) * data.ndim)
        first = data[tuple(slice(0, c) for c in chunks)]
    os.remove(path)
    save(name, bytes(stored), np.ascontiguousarray(first).tobytes(), filters_json, data.dtype.itemsize)


rng = np.random.default_rng(42)
# libhdf5 built-in filters
h5_chunk("h5_gzip_shuffle_fletcher_i32", np.arange(4000, dtype="<i4") * 3 - 77, (1000,),
         [SHUFFLE, DEFLATE(6), FLETCHER], compression="gzip", compression_opts=6, shuffle=True, fletcher32=True)
h5_chunk("h5_gzip_shuffle_f64_2d", np.sin(np.arange(60 * 40, dtype="<f8")).reshape(60, 40), (30, 20),
         [SHUFFLE, DEFLATE(4)], compression="gzip", shuffle=True)
h5_chunk("h5_gzip9_u16", (rng.integers(0, 50, 3000)).astype("<u2"), (1500,),
         [DEFLATE(9)], compression="gzip", compression_opts=9)
h5_chunk("h5_gzip0_u8", rng.integers(0, 255, 300).astype("u1"), (300,),
         [DEFLATE(0)], compression="gzip", compression_opts=0)
h5_chunk("h5_fletcher_odd_u8", np.arange(7 * 3, dtype="u1") * 37, (7,), [FLETCHER], fletcher32=True)
h5_chunk("h5_fletcher_i16", (np.arange(500, dtype="<i2") * 1234), (250,), [FLETCHER], fletcher32=True)
h5_chunk("h5_shuffle_f64", rng.standard_normal(200).astype("<f8"), (100,), [SHUFFLE], shuffle=True)
h5_chunk("h5_shuffle_fletcher_s3", np.array([b"abc", b"de", b"fgh", b"ijk", b"l"] * 10, dtype="S3"), (25,),
         [SHUFFLE, FLETCHER], shuffle=True, fletcher32=True)
h5_chunk("h5_shuffle_gzip_fletcher_c16", (rng.standard_normal(300) + 1j).astype("<c16"), (150,),
         [SHUFFLE, DEFLATE(4), FLETCHER], compression="gzip", shuffle=True, fletcher32=True)

if hdf5plugin is not None:
    LZ4 = {"class": "H5Z_FILTER_LZ4", "id": 32004, "name": "lz4"}
    ZSTD = lambda lvl: {"class": "H5Z_FILTER_ZSTD", "id": 32015, "name": "zstd", "level": lvl}
    smooth = (np.arange(10000, dtype="<i4") // 7)
    h5_chunk("plugin_lz4_i32", smooth, (10000,), [LZ4], **hdf5plugin.LZ4())
    h5_chunk("plugin_lz4_blocks_i32", smooth, (10000,), [LZ4], **hdf5plugin.LZ4(nbytes=4096))
    h5_chunk("plugin_lz4_random_u8", rng.integers(0, 255, 5000).astype("u1"), (5000,), [LZ4],
             **hdf5plugin.LZ4(nbytes=1024))
    h5_chunk("plugin_shuffle_lz4_f32", np.linspace(0, 1, 5000, dtype="<f4"), (5000,), [SHUFFLE, LZ4],
             shuffle=True, **hdf5plugin.LZ4())
    h5_chunk("plugin_zstd_i32", smooth, (10000,), [ZSTD(5)], **hdf5plugin.Zstd(clevel=5))
    h5_chunk("plugin_shuffle_zstd_fletcher_f64", np.cos(np.arange(3000, dtype="<f8")), (3000,),
             [SHUFFLE, ZSTD(3), FLETCHER], shuffle=True, fletcher32=True, **hdf5plugin.Zstd())
    B = hdf5plugin.Blosc
    for cname in ("lz4", "zlib", "zstd", "lz4hc", "blosclz"):
        for sh, shname in ((B.NOSHUFFLE, "noshuf"), (B.SHUFFLE, "shuf")):
            filt = {"class": "H5Z_FILTER_BLOSC", "id": 32001, "name": "blosc", "compressor": cname,
                    "level": 5, "shuffle": int(sh)}
            expect = "ok"
            data = (np.arange(8000, dtype="<f8") * 0.25)
            fd, path = tempfile.mkstemp(suffix=".h5")
            os.close(fd)
            with h5py.File(path, "w") as f:
                d = f.create_dataset("x", data=data, chunks=(8000,), **B(cname=cname, clevel=5, shuffle=sh))
                _, stored = d.id.read_direct_chunk((0,))
            os.remove(path)
            m = save(f"plugin_blosc_{cname}_{shname}_f64", bytes(stored), data.tobytes(), [filt], 8, expect=expect)

# c-blosc frames via numcodecs (what HSDS writes): split/non-split, memcpy, leftover blocks
for cname in ("lz4", "zlib", "zstd", "blosclz"):
    for shuffle in (0, 1):
        for n, dt in ((20000, "<i4"), (33333, "<i2"), (10, "<f8"), (9001, "u1"), (700, "V24")):
            if dt == "V24":
                arr = np.frombuffer(rng.integers(0, 4, n * 24).astype("u1").tobytes(), dtype="V24")
            else:
                arr = (np.arange(n) % 1000).astype(dt)
            codec = numcodecs.Blosc(cname=cname, clevel=5, shuffle=shuffle, blocksize=0)
            stored = codec.encode(arr)
            filt = {"class": "H5Z_FILTER_BLOSC", "id": 32001, "name": "blosc", "compressor": cname,
                    "level": 5, "shuffle": shuffle}
            save(f"numcodecs_{cname}_s{shuffle}_{n}_{np.dtype(dt).itemsize}", bytes(stored), arr.tobytes(),
                 [filt], np.dtype(dt).itemsize)
# blosclz's every kind of match: long runs, repeats farther back than its
# 13-bit distances reach (a 16-bit distance follows), literals, at the
# lowest and highest levels
noise = rng.integers(0, 256, 12000).astype("u1")
for name, arr in (("repeats", np.concatenate([noise, noise, noise[:5000]])),
                  ("runs", np.repeat(rng.integers(0, 4, 300).astype("u1"), rng.integers(1, 600, 300))),
                  ("text", np.frombuffer(b"the quick brown fox jumps over the lazy dog " * 900, "u1"))):
    for clevel in (1, 9):
        stored = numcodecs.Blosc("blosclz", clevel, 0, blocksize=0).encode(arr)
        save(f"numcodecs_blosclz_{name}_c{clevel}", bytes(stored), arr.tobytes(),
             [{"class": "H5Z_FILTER_BLOSC", "id": 32001, "name": "blosc", "compressor": "blosclz",
               "level": clevel, "shuffle": 0}], 1)
# a forced small block size gives many blocks and a leftover block
arr = (np.arange(20003) % 977).astype("<i4")
save("numcodecs_lz4_s1_blocks", bytes(numcodecs.Blosc("lz4", 5, 1, blocksize=4096).encode(arr)), arr.tobytes(),
     [{"class": "H5Z_FILTER_BLOSC", "id": 32001, "name": "blosc", "compressor": "lz4", "shuffle": 1}], 4)

# a chunk HSDS 1.0.2 wrote for a gzip+shuffle uint16 dataset (blosc-zlib frame, typesize 1)
fixture = "/work/shared/fixtures/hsds-store/hsdstest/db/e5c9a50a-2435de48/d/61fa-880598-32c3b3/0_0_0"
if os.path.exists(fixture):
    frames = np.arange(64 * 48 * 5, dtype=np.uint16).reshape(5, 64, 48)
    save("hsds_gzip_shuffle_u16", open(fixture, "rb").read(), frames[0, 0:32, 0:24].tobytes(),
         [SHUFFLE, {"class": "H5Z_FILTER_DEFLATE", "id": 1, "name": "gzip", "level": 6}], 2, fmt="hsds")
    # the same chunk read as a plain pipeline (the format auto-detects HSDS's blosc frame)
    save("hsds_gzip_shuffle_u16_auto", open(fixture, "rb").read(), frames[0, 0:32, 0:24].tobytes(),
         [SHUFFLE, {"class": "H5Z_FILTER_DEFLATE", "id": 1, "name": "gzip", "level": 6}], 2, fmt="hdf5")

with open(os.path.join(OUT, "manifest.json"), "w") as f:
    json.dump(manifest, f, indent=1)
print(len(manifest), "vectors")
