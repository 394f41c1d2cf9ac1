//! The Blosc1 container (filter 32001, and what HSDS writes for every
//! compressed chunk via numcodecs), implemented over lz4_flex / libdeflater /
//! zstd so no C blosc is needed.
//!
//! Frame: 16-byte header `version, versionlz, flags, typesize` + LE u32
//! `nbytes, blocksize, cbytes`. Flags: 0x01 byte shuffle, 0x02 memcpyed (raw
//! data follows the header, unshuffled), 0x04 bitshuffle, 0x10 "don't split",
//! bits 5–7 the codec (0 blosclz, 1 lz4/lz4hc, 2 snappy, 3 zlib, 4 zstd).
//! Otherwise an LE i32 offset per block follows, and each block holds one
//! stream, or `typesize` streams (one per shuffled byte plane) when split; a
//! stream is an LE i32 size then data, stored raw when size == stream length.
//! c-blosc decides splitting from the 0x10 flag alone (and never splits the
//! last, partial block), so the reader does the same.

use crate::{alloc_zeroed, corrupt, deflate, shuffle, zstd_codec, CodecError, Result};

const HEADER: usize = 16;
const VERSION_FORMAT: u8 = 2;
const DOSHUFFLE: u8 = 0x01;
const MEMCPYED: u8 = 0x02;
const BITSHUFFLE: u8 = 0x04;
const DONT_SPLIT: u8 = 0x10;
/// c-blosc's forward-compatible split rule: split only small types in blocks
/// of at least 128 elements, which is what readers predating the 0x10 flag
/// assume; writing by this rule keeps our frames readable by them too.
const MAX_SPLITS: usize = 16;
const MIN_BUFFERSIZE: usize = 128;

/// The codec inside a Blosc frame, named as Blosc names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum BloscCompressor {
    BloscLz,
    Lz4,
    Lz4Hc,
    Snappy,
    Zlib,
    Zstd,
}

impl BloscCompressor {
    /// The `cname` Blosc and numcodecs use.
    pub fn name(self) -> &'static str {
        match self {
            Self::BloscLz => "blosclz",
            Self::Lz4 => "lz4",
            Self::Lz4Hc => "lz4hc",
            Self::Snappy => "snappy",
            Self::Zlib => "zlib",
            Self::Zstd => "zstd",
        }
    }

    /// Parses a `cname` (plus HSDS's "gzip"/"deflate" spellings for zlib).
    pub fn from_name(name: &str) -> Option<Self> {
        Some(match name.to_ascii_lowercase().as_str() {
            "blosclz" => Self::BloscLz,
            "lz4" => Self::Lz4,
            "lz4hc" => Self::Lz4Hc,
            "snappy" => Self::Snappy,
            "zlib" | "gzip" | "deflate" => Self::Zlib,
            "zstd" => Self::Zstd,
            _ => return None,
        })
    }

    /// The numeric compressor code of the HDF5 Blosc filter's cd_values.
    pub fn code(self) -> u32 {
        match self {
            Self::BloscLz => 0,
            Self::Lz4 => 1,
            Self::Lz4Hc => 2,
            Self::Snappy => 3,
            Self::Zlib => 4,
            Self::Zstd => 5,
        }
    }

    /// Parses the numeric compressor code of the HDF5 Blosc filter's cd_values.
    pub fn from_code(code: u64) -> Option<Self> {
        Some(match code {
            0 => Self::BloscLz,
            1 => Self::Lz4,
            2 => Self::Lz4Hc,
            3 => Self::Snappy,
            4 => Self::Zlib,
            5 => Self::Zstd,
            _ => return None,
        })
    }

    /// The code stored in the frame flags; blosclz/snappy are written as lz4
    /// because we only have encoders for lz4, zlib and zstd.
    fn write_format(self) -> u8 {
        match self {
            Self::Zlib => 3,
            Self::Zstd => 4,
            Self::BloscLz | Self::Lz4 | Self::Lz4Hc | Self::Snappy => 1,
        }
    }
}

/// Shuffle mode of a Blosc frame (`shuffle` parameter: 0, 1 or 2).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BloscShuffle {
    None,
    Byte,
    Bit,
}

impl BloscShuffle {
    pub fn code(self) -> u8 {
        match self {
            Self::None => 0,
            Self::Byte => 1,
            Self::Bit => 2,
        }
    }
}

fn le32(b: &[u8], at: usize) -> Option<u32> {
    b.get(at..at + 4)
        .map(|s| u32::from_le_bytes(s.try_into().expect("4 bytes")))
}

/// Header fields, enough to recognise a frame without decoding it.
#[derive(Clone, Copy, Debug)]
pub struct Header {
    pub flags: u8,
    pub typesize: usize,
    pub nbytes: usize,
    pub blocksize: usize,
    pub cbytes: usize,
}

/// Parses and sanity-checks a Blosc1 header; `None` if `data` is not one.
pub fn header(data: &[u8]) -> Option<Header> {
    if data.len() < HEADER || !(1..=VERSION_FORMAT).contains(&data[0]) {
        return None;
    }
    let h = Header {
        flags: data[2],
        typesize: usize::from(data[3]),
        nbytes: le32(data, 4)? as usize,
        blocksize: le32(data, 8)? as usize,
        cbytes: le32(data, 12)? as usize,
    };
    let ok = h.typesize > 0
        && h.cbytes >= HEADER
        && h.cbytes <= data.len()
        && h.nbytes <= i32::MAX as usize
        && (h.nbytes == 0 || h.blocksize > 0);
    ok.then_some(h)
}

/// Whether `data` is exactly one Blosc1 frame: how HSDS-written chunks are told
/// apart from HDF5 filter output (zlib, zstd and HDF5-LZ4 data never start
/// with a byte 1 or 2 followed by a self-consistent header of this length).
pub fn is_frame(data: &[u8]) -> bool {
    header(data).is_some_and(|h| {
        h.cbytes == data.len()
            && (h.flags & MEMCPYED == 0 || h.cbytes == h.nbytes + HEADER)
            && (h.flags >> 5) <= 4
    })
}

/// Decodes one Blosc1 frame.
pub fn decompress(data: &[u8]) -> Result<Vec<u8>> {
    let h = header(data).ok_or_else(|| corrupt("blosc", "not a Blosc1 frame"))?;
    let data = &data[..h.cbytes];
    if h.nbytes == 0 {
        return Ok(Vec::new());
    }
    if h.flags & MEMCPYED != 0 {
        let raw = data
            .get(HEADER..HEADER + h.nbytes)
            .ok_or_else(|| corrupt("blosc", "memcpyed frame shorter than nbytes"))?;
        return Ok(raw.to_vec());
    }
    let format = h.flags >> 5;
    match format {
        2 => {
            return Err(CodecError::Unsupported(
                "snappy (inside a Blosc frame)".into(),
            ))
        }
        0 | 1 | 3 | 4 => {}
        f => return Err(corrupt("blosc", format!("unknown codec format {f}"))),
    }
    let doshuffle = h.flags & DOSHUFFLE != 0 && h.typesize > 1;
    if h.flags & BITSHUFFLE != 0 && h.blocksize >= h.typesize && h.typesize > 1 {
        return Err(CodecError::Unsupported("blosc bitshuffle".into()));
    }
    let nblocks = h.nbytes.div_ceil(h.blocksize);
    let table_end = HEADER + 4 * nblocks;
    if table_end > data.len() {
        return Err(corrupt("blosc", "block offset table runs past the frame"));
    }
    // Allocate only once the header and offset table look sane.
    let mut out = alloc_zeroed(h.nbytes, "blosc")?;
    let mut tmp = if doshuffle {
        alloc_zeroed(h.blocksize.min(h.nbytes), "blosc")?
    } else {
        Vec::new()
    };
    for (j, dst) in out.chunks_mut(h.blocksize).enumerate() {
        let start = le32(data, HEADER + 4 * j).expect("inside table") as usize;
        if start < table_end || start >= data.len() {
            return Err(corrupt(
                "blosc",
                format!("block {j} starts outside the frame"),
            ));
        }
        let leftover = dst.len() < h.blocksize;
        let nsplits = if h.flags & DONT_SPLIT == 0 && !leftover {
            h.typesize
        } else {
            1
        };
        if dst.len() % nsplits != 0 {
            return Err(corrupt(
                "blosc",
                "split block is not a whole number of elements",
            ));
        }
        let target: &mut [u8] = if doshuffle {
            &mut tmp[..dst.len()]
        } else {
            dst
        };
        let neblock = target.len() / nsplits;
        let mut pos = start;
        for stream in target.chunks_mut(neblock) {
            let csize =
                le32(data, pos).ok_or_else(|| corrupt("blosc", "truncated stream header"))?;
            let csize = csize as i32;
            pos += 4;
            if csize <= 0 {
                return Err(corrupt("blosc", format!("stream size {csize}")));
            }
            let csize = csize as usize;
            let src = data
                .get(pos..pos + csize)
                .ok_or_else(|| corrupt("blosc", "stream runs past the frame"))?;
            pos += csize;
            if csize == neblock {
                stream.copy_from_slice(src);
                continue;
            }
            let n = match format {
                0 => blosclz_decompress(src, stream)?,
                1 => lz4_flex::block::decompress_into(src, stream)
                    .map_err(|e| corrupt("blosc/lz4", e.to_string()))?,
                3 => deflate::decompress_into(src, stream)
                    .map_err(|e| corrupt("blosc/zlib", e.to_string()))?,
                _ => zstd_codec::decompress_into(src, stream)?,
            };
            if n != neblock {
                return Err(corrupt(
                    "blosc",
                    format!("stream decoded to {n} bytes, expected {neblock}"),
                ));
            }
        }
        if doshuffle {
            shuffle::unshuffle_into(&tmp[..dst.len()], dst, h.typesize);
        }
    }
    Ok(out)
}

/// Decodes one blosclz stream into `out`, returning the bytes written.
///
/// blosclz, c-blosc's default codec (PyTables' and pandas' `complib="blosc"`),
/// keeps FastLZ's level-2 format: a control byte below 32 starts `ctrl + 1`
/// literal bytes; one above is a match whose top 3 bits are its length less
/// 2 (7: further length bytes follow, each added, while they are 255) and
/// whose low 5 bits with the next byte are its distance less 1; a distance
/// byte of 255 after 31 in those bits is followed by a 16-bit distance past
/// 8191. Matches may overlap what they write (runs).
fn blosclz_decompress(src: &[u8], out: &mut [u8]) -> Result<usize> {
    const MAX_DISTANCE: usize = 8191;
    let bad = |why: &str| corrupt("blosc/blosclz", why.to_string());
    let byte = |at: usize| {
        src.get(at)
            .map(|&b| usize::from(b))
            .ok_or_else(|| bad("truncated"))
    };
    let (mut ip, mut op) = (1usize, 0usize);
    let Some(&first) = src.first() else {
        return Ok(0);
    };
    let mut ctrl = usize::from(first & 31);
    loop {
        if ctrl < 32 {
            let n = ctrl + 1;
            let (Some(from), Some(to)) = (src.get(ip..ip + n), out.get_mut(op..op + n)) else {
                return Err(bad("literal run past its stream or the block"));
            };
            to.copy_from_slice(from);
            (ip, op) = (ip + n, op + n);
        } else {
            let mut len = (ctrl >> 5) - 1;
            let high = (ctrl & 31) << 8;
            if len == 6 {
                loop {
                    let more = byte(ip)?;
                    ip += 1;
                    len += more;
                    if more != 255 {
                        break;
                    }
                }
            }
            let code = byte(ip)?;
            ip += 1;
            len += 3;
            let mut distance = high + code + 1;
            if code == 255 && high == 31 << 8 {
                distance = (byte(ip)? << 8) + byte(ip + 1)? + MAX_DISTANCE + 1;
                ip += 2;
            }
            if distance > op || op + len > out.len() {
                return Err(bad("match reaching outside the block"));
            }
            let from = op - distance;
            if distance >= len {
                out.copy_within(from..from + len, op);
            } else {
                // (Overlapping: each byte copied may be one just written.)
                for k in 0..len {
                    out[op + k] = out[from + k];
                }
            }
            op += len;
        }
        if ip >= src.len() {
            return Ok(op);
        }
        ctrl = usize::from(src[ip]);
        ip += 1;
    }
}

/// Encodes one Blosc1 frame. `clevel` 0..=9 as in Blosc (0 = store).
pub fn compress(
    data: &[u8],
    typesize: usize,
    compressor: BloscCompressor,
    clevel: u8,
    shuffle_mode: BloscShuffle,
) -> Result<Vec<u8>> {
    if data.len() > i32::MAX as usize - HEADER {
        return Err(CodecError::Invalid(format!(
            "{} bytes is too large for a Blosc frame",
            data.len()
        )));
    }
    if shuffle_mode == BloscShuffle::Bit {
        return Err(CodecError::Unsupported("blosc bitshuffle".into()));
    }
    // Blosc stores typesize in one byte and treats larger types as bytes.
    let typesize = if (1..=255).contains(&typesize) {
        typesize
    } else {
        1
    };
    let clevel = clevel.min(9);
    let nbytes = data.len();
    let format = compressor.write_format();
    let mut flags = format << 5;
    if shuffle_mode == BloscShuffle::Byte {
        flags |= DOSHUFFLE;
    }
    let blocksize = block_size(nbytes, typesize, format);
    let split = typesize <= MAX_SPLITS && blocksize / typesize >= MIN_BUFFERSIZE;
    if !split {
        flags |= DONT_SPLIT;
    }
    let header = |flags: u8, blocksize: usize, cbytes: usize| {
        let mut h = Vec::with_capacity(cbytes.max(HEADER));
        h.extend_from_slice(&[VERSION_FORMAT, 1, flags, typesize as u8]);
        h.extend_from_slice(&(nbytes as u32).to_le_bytes());
        h.extend_from_slice(&(blocksize as u32).to_le_bytes());
        h.extend_from_slice(&(cbytes as u32).to_le_bytes());
        h
    };
    let memcpyed = || {
        let mut out = header(flags | MEMCPYED, blocksize, nbytes + HEADER);
        out.extend_from_slice(data);
        out
    };
    if clevel == 0 || nbytes < MIN_BUFFERSIZE {
        return Ok(memcpyed());
    }
    let nblocks = nbytes.div_ceil(blocksize);
    let mut out = header(flags, blocksize, 0);
    out.resize(HEADER + 4 * nblocks, 0);
    let doshuffle = shuffle_mode == BloscShuffle::Byte && typesize > 1;
    let mut tmp = if doshuffle {
        vec![0u8; blocksize]
    } else {
        Vec::new()
    };
    for (j, block) in data.chunks(blocksize).enumerate() {
        let off = out.len() as u32;
        out[HEADER + 4 * j..HEADER + 4 * j + 4].copy_from_slice(&off.to_le_bytes());
        let src: &[u8] = if doshuffle {
            shuffle::shuffle_into(block, &mut tmp[..block.len()], typesize);
            &tmp[..block.len()]
        } else {
            block
        };
        let nsplits = if split && block.len() == blocksize {
            typesize
        } else {
            1
        };
        for stream in src.chunks(block.len() / nsplits) {
            let at = out.len();
            out.extend_from_slice(&[0; 4]);
            let packed = compress_stream(stream, format, clevel)?;
            let stored = match packed {
                Some(p) if p.len() < stream.len() => {
                    out.extend_from_slice(&p);
                    p.len()
                }
                _ => {
                    out.extend_from_slice(stream);
                    stream.len()
                }
            };
            out[at..at + 4].copy_from_slice(&(stored as u32).to_le_bytes());
        }
        if out.len() >= nbytes + HEADER {
            return Ok(memcpyed());
        }
    }
    let cbytes = out.len() as u32;
    out[12..16].copy_from_slice(&cbytes.to_le_bytes());
    Ok(out)
}

/// Our block size: whole chunk up to 256 KiB (lz4: 64 KiB, where smaller
/// blocks stay in L2), a multiple of the type size like c-blosc's.
fn block_size(nbytes: usize, typesize: usize, format: u8) -> usize {
    let target = if format == 1 { 64 << 10 } else { 256 << 10 };
    let mut bs = nbytes.min(target);
    if bs > typesize {
        bs -= bs % typesize;
    }
    bs.max(1)
}

fn compress_stream(stream: &[u8], format: u8, clevel: u8) -> Result<Option<Vec<u8>>> {
    Ok(Some(match format {
        3 => deflate::compress(stream, u32::from(clevel)),
        // c-blosc maps clevel 1..8 to zstd 2*clevel-1 and 9 to zstd's max; we
        // stop at 19 because 20+ need huge windows for little gain.
        4 => zstd_codec::compress(
            stream,
            if clevel < 9 {
                2 * i32::from(clevel) - 1
            } else {
                19
            },
        )?,
        _ => lz4_flex::block::compress(stream),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roundtrips_every_writable_codec_and_size() {
        for comp in [
            BloscCompressor::Lz4,
            BloscCompressor::Zlib,
            BloscCompressor::Zstd,
        ] {
            for typesize in [1, 2, 3, 4, 8, 16, 24] {
                for len in [0, 1, 127, 128, 1000, 70_001, 300_000] {
                    let data: Vec<u8> = (0..len).map(|i| ((i / 3) % 251) as u8).collect();
                    for sh in [BloscShuffle::None, BloscShuffle::Byte] {
                        let f = compress(&data, typesize, comp, 5, sh).unwrap();
                        assert!(is_frame(&f), "{comp:?} {typesize} {len}");
                        assert_eq!(
                            decompress(&f).unwrap(),
                            data,
                            "{comp:?} {typesize} {len} {sh:?}"
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn incompressible_falls_back_to_memcpy() {
        let mut x: u32 = 1;
        let data: Vec<u8> = (0..5000)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 17;
                x ^= x << 5;
                x as u8
            })
            .collect();
        let f = compress(&data, 4, BloscCompressor::Lz4, 9, BloscShuffle::Byte).unwrap();
        assert_eq!(f[2] & MEMCPYED, MEMCPYED);
        assert_eq!(decompress(&f).unwrap(), data);
    }
}
