//! Bitshuffle (HDF5 filter 32008, the `bitshuffle` library's format; also
//! Blosc's bit-shuffle and what HSDS stores for its `bitshuffle` filter).
//!
//! Within a block of `n` elements (`n` a multiple of 8) of `es` bytes, the
//! output holds, for each bit `p` of an element (`p = 8 * byte + bit`,
//! bytes in memory order, bits from the least significant), one row of `n`
//! bits: bit `i` of row `p` is bit `p` of element `i`, rows packed least
//! significant bit first. Data is cut into blocks of `block` elements; of
//! the last, partial block the largest multiple of 8 is transposed the same
//! way, and the remaining `< 8` elements are copied as they are.
//!
//! The filter's client data: `[major, minor, elem_size, block, compression,
//! level]` (the first three filled in by the plugin). With compression (2:
//! LZ4, 3: zstd) the chunk is a 12-byte header (u64 BE decoded bytes, u32
//! BE block bytes) and then, per block, a u32 BE stored size and the
//! compressed transposed block; the copied tail follows as it is.

use crate::{alloc_zeroed, corrupt, CodecError, Result};

/// `compression` values of the client data.
pub const NONE: u32 = 0;
pub const LZ4: u32 = 2;
pub const ZSTD: u32 = 3;

/// The library's version this writes as (`cd[0..2]`).
pub const VERSION: (u32, u32) = (0, 5);

/// The library's default block: about 8 KiB of elements, a multiple of 8,
/// at least 128.
pub fn default_block(elem_size: usize) -> usize {
    ((8192 / elem_size.max(1)) / 8 * 8).max(128)
}

/// The transposition of an 8x8 bit matrix held one row per byte.
#[inline]
fn transpose8(mut x: u64) -> u64 {
    let mut t = (x ^ (x >> 7)) & 0x00AA_00AA_00AA_00AA;
    x ^= t ^ (t << 7);
    t = (x ^ (x >> 14)) & 0x0000_CCCC_0000_CCCC;
    x ^= t ^ (t << 14);
    t = (x ^ (x >> 28)) & 0x0000_0000_F0F0_F0F0;
    x ^ t ^ (t << 28)
}

/// Transposes `n` elements (`n % 8 == 0`) of `es` bytes from `src` to `dst`.
fn transpose_block(src: &[u8], dst: &mut [u8], n: usize, es: usize) {
    let row = n / 8;
    for g in 0..row {
        let base = g * 8 * es;
        for j in 0..es {
            let mut b = [0u8; 8];
            for (k, v) in b.iter_mut().enumerate() {
                *v = src[base + k * es + j];
            }
            let x = transpose8(u64::from_le_bytes(b)).to_le_bytes();
            for (bit, v) in x.iter().enumerate() {
                dst[(j * 8 + bit) * row + g] = *v;
            }
        }
    }
}

/// Reverses [`transpose_block`].
fn untranspose_block(src: &[u8], dst: &mut [u8], n: usize, es: usize) {
    let row = n / 8;
    for g in 0..row {
        let base = g * 8 * es;
        for j in 0..es {
            let mut b = [0u8; 8];
            for (bit, v) in b.iter_mut().enumerate() {
                *v = src[(j * 8 + bit) * row + g];
            }
            let x = transpose8(u64::from_le_bytes(b)).to_le_bytes();
            for (k, v) in x.iter().enumerate() {
                dst[base + k * es + j] = *v;
            }
        }
    }
}

/// The blocks of `elems` elements: `(first element, elements)` of each
/// transposed block, then where the copied tail starts.
fn blocks(elems: usize, block: usize) -> (Vec<(usize, usize)>, usize) {
    let mut out = Vec::with_capacity(elems / block.max(1) + 1);
    let mut at = 0;
    while elems - at >= block {
        out.push((at, block));
        at += block;
    }
    let last = (elems - at) / 8 * 8;
    if last > 0 {
        out.push((at, last));
        at += last;
    }
    (out, at)
}

fn check_block(block: usize) -> Result<usize> {
    if block == 0 || block % 8 != 0 {
        return Err(CodecError::Invalid(format!(
            "bitshuffle block size {block} must be a positive multiple of 8 elements"
        )));
    }
    Ok(block)
}

/// Bit-shuffles `data` (elements of `es` bytes) in blocks of `block`
/// elements, without compression.
pub fn shuffle(data: &[u8], es: usize, block: usize) -> Result<Vec<u8>> {
    by_blocks(data, es, block, transpose_block)
}

/// Reverses [`shuffle`].
pub fn unshuffle(data: &[u8], es: usize, block: usize) -> Result<Vec<u8>> {
    by_blocks(data, es, block, untranspose_block)
}

/// `each` on every transposed block of `data`, the tail copied.
fn by_blocks(
    data: &[u8],
    es: usize,
    block: usize,
    each: fn(&[u8], &mut [u8], usize, usize),
) -> Result<Vec<u8>> {
    let block = check_block(block)?;
    let es = es.max(1);
    let (bs, tail) = blocks(data.len() / es, block);
    let mut out = vec![0u8; data.len()];
    for (at, n) in bs {
        let r = at * es..(at + n) * es;
        each(&data[r.clone()], &mut out[r], n, es);
    }
    out[tail * es..].copy_from_slice(&data[tail * es..]);
    Ok(out)
}

/// Bit-shuffles `data` in blocks of `block` elements and compresses each
/// block (`LZ4`, or `ZSTD` at `level`), with the filter's header.
pub fn compress(
    data: &[u8],
    es: usize,
    block: usize,
    compression: u32,
    level: i32,
) -> Result<Vec<u8>> {
    let block = check_block(block)?;
    let es = es.max(1);
    let (bs, tail) = blocks(data.len() / es, block);
    let mut out = Vec::with_capacity(12 + data.len() / 2);
    out.extend_from_slice(&(data.len() as u64).to_be_bytes());
    let block_bytes = u32::try_from(block * es)
        .map_err(|_| CodecError::Invalid("bitshuffle block over 4 GiB".into()))?;
    out.extend_from_slice(&block_bytes.to_be_bytes());
    let mut tmp = vec![0u8; block * es];
    for (at, n) in bs {
        let t = &mut tmp[..n * es];
        transpose_block(&data[at * es..(at + n) * es], t, n, es);
        let start = out.len();
        out.extend_from_slice(&[0; 4]);
        match compression {
            LZ4 => {
                let bound = lz4_flex::block::get_maximum_output_size(t.len());
                out.resize(start + 4 + bound, 0);
                let k = lz4_flex::block::compress_into(t, &mut out[start + 4..])
                    .expect("output sized by get_maximum_output_size");
                out.truncate(start + 4 + k);
            }
            ZSTD => {
                let z = crate::zstd_codec::compress(t, level)?;
                out.extend_from_slice(&z);
            }
            other => return Err(unknown(other)),
        }
        let stored = (out.len() - start - 4) as u32;
        out[start..start + 4].copy_from_slice(&stored.to_be_bytes());
    }
    out.extend_from_slice(&data[tail * es..]);
    Ok(out)
}

fn unknown(c: u32) -> CodecError {
    CodecError::Unsupported(format!(
        "bitshuffle compression {c} (known: 0 none, 2 lz4, 3 zstd)"
    ))
}

fn be(b: &[u8], at: usize, n: usize) -> Option<u64> {
    let s = b.get(at..at + n)?;
    Some(s.iter().fold(0u64, |a, &x| a << 8 | u64::from(x)))
}

/// Reverses [`compress`].
pub fn decompress(data: &[u8], es: usize, compression: u32) -> Result<Vec<u8>> {
    let es = es.max(1);
    let short = || corrupt("bitshuffle", "shorter than the 12-byte header");
    let total = be(data, 0, 8).ok_or_else(short)?;
    let block_bytes = be(data, 8, 4).ok_or_else(short)? as usize;
    // (Compression cannot shrink data more than ~255:1.)
    if total > (data.len() as u64).saturating_mul(256) + 4096 {
        return Err(corrupt(
            "bitshuffle",
            format!("header claims {total} bytes from {} stored", data.len()),
        ));
    }
    let total = total as usize;
    if block_bytes % es != 0 || (block_bytes / es) % 8 != 0 || (block_bytes == 0 && total >= 8 * es)
    {
        return Err(corrupt(
            "bitshuffle",
            format!("block of {block_bytes} bytes for elements of {es}"),
        ));
    }
    let mut out = alloc_zeroed(total, "bitshuffle")?;
    let (bs, tail) = blocks(total / es, (block_bytes / es).max(8));
    let mut pos = 12;
    let mut tmp = Vec::new();
    for (at, n) in bs {
        let k = be(data, pos, 4).ok_or_else(|| corrupt("bitshuffle", "truncated block header"))?
            as usize;
        pos += 4;
        let src = data
            .get(pos..pos + k)
            .ok_or_else(|| corrupt("bitshuffle", "truncated block"))?;
        pos += k;
        tmp.resize(n * es, 0);
        match compression {
            LZ4 => {
                let got = lz4_flex::block::decompress_into(src, &mut tmp)
                    .map_err(|e| corrupt("bitshuffle", format!("lz4 block: {e}")))?;
                if got != tmp.len() {
                    return Err(corrupt("bitshuffle", "an lz4 block of the wrong size"));
                }
            }
            ZSTD => {
                let z = crate::zstd_codec::decompress(src, Some(tmp.len()))?;
                if z.len() != tmp.len() {
                    return Err(corrupt("bitshuffle", "a zstd block of the wrong size"));
                }
                tmp.copy_from_slice(&z);
            }
            other => return Err(unknown(other)),
        }
        untranspose_block(&tmp, &mut out[at * es..(at + n) * es], n, es);
    }
    let rest = total - tail * es;
    let src = data
        .get(pos..pos + rest)
        .ok_or_else(|| corrupt("bitshuffle", "truncated tail"))?;
    out[tail * es..].copy_from_slice(src);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The definition, one bit at a time.
    fn by_definition(data: &[u8], es: usize) -> Vec<u8> {
        let n = data.len() / es;
        let mut out = vec![0u8; data.len()];
        for i in 0..n {
            for p in 0..es * 8 {
                let bit = (data[i * es + p / 8] >> (p % 8)) & 1;
                let at = p * n + i;
                out[at / 8] |= bit << (at % 8);
            }
        }
        out
    }

    fn sample(len: usize) -> Vec<u8> {
        (0..len as u32)
            .map(|i| (i.wrapping_mul(2654435761) >> 13) as u8)
            .collect()
    }

    #[test]
    fn one_block_matches_the_definition() {
        for es in [1, 2, 4, 8, 3, 12] {
            let d = sample(64 * es);
            assert_eq!(
                shuffle(&d, es, 64).unwrap(),
                by_definition(&d, es),
                "es {es}"
            );
        }
    }

    #[test]
    fn round_trips_with_partial_blocks_and_tails() {
        for (es, elems, block) in [
            (4, 1000, 128),
            (2, 13, 8),
            (8, 7, 8),
            (1, 4099, 2048),
            (4, 0, 8),
        ] {
            let d = sample(elems * es);
            let s = shuffle(&d, es, block).unwrap();
            assert_eq!(unshuffle(&s, es, block).unwrap(), d);
            for c in [LZ4, ZSTD] {
                let z = compress(&d, es, block, c, 3).unwrap();
                assert_eq!(
                    decompress(&z, es, c).unwrap(),
                    d,
                    "{es} {elems} {block} {c}"
                );
            }
        }
        // The tail of fewer than 8 elements is copied as it is.
        let d = sample(4 * 11);
        let s = shuffle(&d, 4, 8).unwrap();
        assert_eq!(s[32..], d[32..]);
    }

    #[test]
    fn damaged_chunks_are_errors() {
        let d = sample(4 * 300);
        let z = compress(&d, 4, 128, LZ4, 0).unwrap();
        assert!(decompress(&z[..z.len() - 5], 4, LZ4).is_err());
        assert!(decompress(&z[..6], 4, LZ4).is_err());
        let mut bad = z.clone();
        bad[0] = 0xff;
        assert!(decompress(&bad, 4, LZ4).is_err());
        assert!(shuffle(&d, 4, 12).is_err());
    }
}
